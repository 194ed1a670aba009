/* family.c — a flat plan's family on the CPU: the plan's CR_FAMILY_* to the file of its name
 * (cpu.h). reduce.c and axis.c both run plans through it. */
#include "core/status.h"
#include "cpu/cpu.h"

coopreduce_status cr_cpu_run_plan(coopreduce_handle *h, const cr_plan *p, const void *x,
                                  const void *y, uint64_t n, void *result)
{
    switch (p->family) {
    case CR_FAMILY_CANONICAL: return cr_cpu_canonical(h, p, x, n, result);
    case CR_FAMILY_ORDERED: return cr_cpu_ordered(h, p, x, y, n, result);
    case CR_FAMILY_SCAN: return cr_cpu_scan(h, p, x, n, result);
    case CR_FAMILY_EXACT: return cr_cpu_exact(h, p, x, y, n, result);
    default:
        return cr_fail(h, COOPREDUCE_ERROR_INTERNAL, "the CPU has no code for family %d of %s",
                       (int)p->family, cr_op_name(p->op));
    }
}
