/* reduce.c — the CPU backend's entry: runs a plan (cpu.h), flat (family.c) or shaped (axis.c). */
#include "cpu/cpu.h"
#include "cpu/runtime.h"

coopreduce_status cr_cpu_reduce(coopreduce_handle *h, const cr_plan *p, const void *x,
                                const void *y, uint64_t n, void *result)
{
    /* The IEEE environment once per call, whatever the number of rows; worker threads inherit
     * it from this thread. */
    cr_fp_state st;
    cr_fp_enter(&st);
    const coopreduce_status s = p->shape.kind != CR_SHAPE_FLAT
                                    ? cr_cpu_shaped(h, p, x, y, result)
                                    : cr_cpu_run_plan(h, p, x, y, n, result);
    cr_fp_leave(&st);
    return s;
}

coopreduce_status cr_cpu_reserve(coopreduce_handle *h, const cr_plan *p, uint64_t n)
{
    /* Only the canonical trees keep partials between calls; the other families' per-call
     * state lives on the stack. */
    return p->trees ? cr_cpu_tree_reserve(h, n, p->acc) : COOPREDUCE_SUCCESS;
}
