/* test_sum_fpenv.c — the caller's floating-point environment and the CPU canonical sum.
 *
 * Another rounding mode, or flush-to-zero / denormals-are-zero (what -ffast-math code sets),
 * must not change the bits (the GPU computes in round-to-nearest with subnormals), and the
 * caller gets its environment back.
 *
 * Seeds: a fresh seed per run, printed; COOPREDUCE_TEST_SEED=<seed> reproduces a run. */
#include <fenv.h>
#include <stdint.h>
#include <stdlib.h>

#include "canonical_ref.h"
#include "check.h"
#include "util.h"
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_MXCSR 1
#endif

/* The caller's floating-point environment must not reach the result: another rounding mode, or
 * flush-to-zero / denormals-are-zero (what -ffast-math code sets), would otherwise change bits
 * the GPU computes in round-to-nearest with subnormals. And the caller gets its environment back. */
static void test_fp_environment(void)
{
    enum { N = 1000003 };
    float *x = malloc(N * sizeof *x);
    if (!CHECK(x != NULL, "malloc")) return;
    cr_gen_fill(x, 0, N, COOPREDUCE_FLOAT32, CR_GEN_SIGNED, rnd(), gen_threads());
    uint32_t ref = 0, got = 0;
    coopreduce_sum(x, &ref, N, COOPREDUCE_FLOAT32, g_cpu, NULL);

    static const int modes[] = {FE_DOWNWARD, FE_UPWARD, FE_TOWARDZERO};
    for (int i = 0; i < 3; i++) {
        float pz = 0.0f;
        uint32_t zero_bits = 0xA5A5A5A5u;
        fesetround(modes[i]);
        coopreduce_sum(&pz, &zero_bits, 1, COOPREDUCE_FLOAT32, g_cpu, NULL);
        got = 0;
        coopreduce_sum(x, &got, N, COOPREDUCE_FLOAT32, g_cpu, NULL);
        int mode_after = fegetround();
#ifdef HAVE_MXCSR
        /* fegetround() reads the x87 control word alone on glibc/x86-64: the SSE unit, which
         * the caller's float code runs on, has its own rounding bits (MXCSR 13-14). */
        const unsigned int sse_rc[] = {0x2000u, 0x4000u, 0x6000u}; /* down, up, toward zero */
        const unsigned int sse_after = _mm_getcsr() & 0x6000u;
#endif
        fesetround(FE_TONEAREST);
        CHECK(zero_bits == 0x00000000u, "rounding mode %d: sum of [+0.0] is 0x%08x", modes[i],
              zero_bits);
        CHECK(got == ref, "rounding mode %d: 0x%08x, round-to-nearest gives 0x%08x", modes[i], got,
              ref);
        CHECK(mode_after == modes[i], "rounding mode %d not restored (%d)", modes[i], mode_after);
#ifdef HAVE_MXCSR
        CHECK(sse_after == sse_rc[i],
              "rounding mode %d: MXCSR rounding bits 0x%x after the sum, "
              "want 0x%x",
              modes[i], sse_after, sse_rc[i]);
#endif
    }
#ifdef HAVE_MXCSR
    unsigned int csr = _mm_getcsr();
    _mm_setcsr(csr | 0x8040u); /* FTZ and DAZ on */
    float sub = 1e-40f;        /* subnormal: 0x000116c2 */
    uint32_t sub_bits = 0;
    coopreduce_sum(&sub, &sub_bits, 1, COOPREDUCE_FLOAT32, g_cpu, NULL);
    got = 0;
    coopreduce_sum(x, &got, N, COOPREDUCE_FLOAT32, g_cpu, NULL);
    unsigned int csr_after = _mm_getcsr();
    _mm_setcsr(csr);
    CHECK(sub_bits == f32_bits(1e-40f), "FTZ/DAZ: sum of [1e-40f] is 0x%08x", sub_bits);
    CHECK(got == ref, "FTZ/DAZ: 0x%08x, default environment gives 0x%08x", got, ref);
    CHECK((csr_after & 0x8040u) == 0x8040u, "FTZ/DAZ not restored (mxcsr 0x%x)", csr_after);
#endif
    free(x);
}

CPU_TEST_MAIN("test_sum_fpenv", {"floating-point environment", test_fp_environment})
