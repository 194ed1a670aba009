/* reduce.c — the CPU backend's entry: runs a plan's family (cpu.h). */
#include "core/status.h"
#include "cpu/cpu.h"
#include "cpu/runtime.h"

coopreduce_status cr_cpu_reduce(coopreduce_handle *h, const cr_plan *p, const void *x,
                                const void *y, uint64_t n, void *result)
{
    if (p->shape.kind != CR_SHAPE_FLAT) return cr_cpu_shaped(h, p, x, y, result);
    cr_fp_state st;
    cr_fp_enter(&st);
    coopreduce_status s;
    switch (p->family) {
    case CR_FAMILY_CANONICAL: s = cr_cpu_canonical(h, p, x, n, result); break;
    case CR_FAMILY_ORDERED: s = cr_cpu_ordered(h, p, x, y, n, result); break;
    case CR_FAMILY_SCAN: s = cr_cpu_scan(h, p, x, n, result); break;
    case CR_FAMILY_EXACT: s = cr_cpu_exact(h, p, x, y, n, result); break;
    default:
        s = cr_fail(h, COOPREDUCE_ERROR_INTERNAL, "the CPU has no code for family %d of %s",
                    (int)p->family, cr_op_name(p->op));
        break;
    }
    cr_fp_leave(&st);
    return s;
}

coopreduce_status cr_cpu_reserve(coopreduce_handle *h, const cr_plan *p, uint64_t n)
{
    /* Only the canonical trees keep partials between calls; the other families' per-call
     * state lives on the stack. */
    return p->trees ? cr_cpu_tree_reserve(h, n, p->acc) : COOPREDUCE_SUCCESS;
}
