/* test_ops_values.c — the helpers of src/core/values.h that the CPU and GPU operations share,
 * against independent computations: the mean's estimate-and-correct quotient against 128-bit
 * division, NORM2's class tests on bits against the float tests (every 16-bit pattern, the
 * float32 and float64 constants), and the branch-free binary16 widening against the reference
 * one for all 65536 patterns.
 *
 * No GPU needed. Seeds are fresh each run (printed); COOPREDUCE_TEST_SEED=S replays a run. */
#include <math.h>

#include "check.h"
#include "coopreduce.h"
#include "util.h"
#include "core/values.h"

/* ---- The mean's division: values.h's estimate-and-correct quotient against the compiler's
 * 128-bit division, on the shapes cr_round_div gives it (quotients of prec + 2 to prec + 4 bits,
 * every divisor length) and on exact multiples, where the remainder is zero. ---------------- */
static void quotient_helper(void)
{
    const int rounds = test_quick ? 200000 : 2000000;
    for (int b = 0; b <= 64; b++) {
        const uint64_t w = b == 0    ? 0
                           : b == 64 ? ~0ull
                                     : (1ull << (b - 1)) | (rnd() & ((1ull << (b - 1)) - 1));
        CHECK(cr_bitlen64(w) == b, "bitlen64(%llx) = %d, want %d", (unsigned long long)w,
              cr_bitlen64(w), b);
        const cr_u128 v = (cr_u128)w << 64 | rnd();
        CHECK(cr_bitlen128(v) == (b ? 64 + b : cr_bitlen64((uint64_t)v)),
              "bitlen128 of hi length %d", b);
    }
    for (int r = 0; r < rounds; r++) {
        const int bn = 1 + (int)(rnd() % 64), qbits = 25 + (int)(rnd() % 33); /* q of 25..57 bits */
        uint64_t n = bn == 64 ? rnd() | 1ull << 63
                              : ((1ull << (bn - 1)) | (rnd() & ((1ull << (bn - 1)) - 1)));
        if (r % 7 == 0) n = bn == 64 ? ~0ull : (1ull << bn) - 1; /* all ones */
        const uint64_t qt = (1ull << (qbits - 1)) | (rnd() & ((1ull << (qbits - 1)) - 1));
        cr_u128 num = (cr_u128)qt * n;
        const int kind = r % 4; /* exact multiple, +1, + n - 1, random remainder */
        if (kind == 1) num += 1;
        if (kind == 2) num += n - 1;
        if (kind == 3) num += rnd() % n;
        int inexact = -1;
        const uint64_t q = cr_div_small_quotient(num, n, &inexact);
        const int ok = (cr_u128)q == num / n && inexact == (num % n != 0);
        CHECK(ok, "quotient of (%llx:%016llx) / %llx: %llx inexact %d, want %llx inexact %d",
              (unsigned long long)(uint64_t)(num >> 64), (unsigned long long)(uint64_t)num,
              (unsigned long long)n, (unsigned long long)q, inexact,
              (unsigned long long)(uint64_t)(num / n), (int)(num % n != 0));
    }
}

/* ---- NORM2's class tests on bits (values.h, used by the GPU's medium pass) against the float
 * tests of cr_norm2_leaf: every 16-bit pattern, and the float32 / float64 constants. ------- */
static void norm2_class_bits(void)
{
    for (uint32_t b = 0; b < 0x8000u; b++) {
        const float fb = cr_bf16_to_f32((uint16_t)b), fh = cr_f16_to_f32((uint16_t)b);
        if (fb == fb) {
            CHECK((fb > CR_TBIG_F32) == (b > CR_NORM2_BIG_BITS_BF16), "bf16 0x%04x big test", b);
            CHECK((fb != 0 && fb < CR_TSML_F32) == ((uint16_t)(b - 1) < CR_NORM2_SML_BITS_BF16 - 1),
                  "bf16 0x%04x small test", b);
        } else {
            CHECK(b > CR_NORM2_BIG_BITS_BF16, "bf16 NaN 0x%04x tests as big", b);
        }
        if (fh == fh) {
            CHECK((fh > CR_TBIG_F32) == (b > CR_NORM2_BIG_BITS_F16), "f16 0x%04x big test", b);
            CHECK((fh != 0 && fh < CR_TSML_F32) == ((uint16_t)(b - 1) < CR_NORM2_SML_BITS_F16 - 1),
                  "f16 0x%04x small test", b);
        } else {
            CHECK(b > CR_NORM2_BIG_BITS_F16, "f16 NaN 0x%04x tests as big", b);
        }
    }
    CHECK(cr_f32_from(CR_NORM2_BIG_BITS_F32) == CR_TBIG_F32 &&
              cr_f32_from(CR_NORM2_SML_BITS_F32) == CR_TSML_F32,
          "float32 class bits are TBIG's and TSML's");
    CHECK(cr_f64_from((uint64_t)CR_NORM2_BIG_HI_F64 << 32) == CR_TBIG_F64 &&
              cr_f64_from((uint64_t)CR_NORM2_SML_HI_F64 << 32) == CR_TSML_F64,
          "float64 class high words are TBIG's and TSML's (low words zero)");
}

static void f16_widening(void)
{
    for (uint32_t b = 0; b < 0x10000u; b++)
        CHECK(cr_f32_bits(cr_f16_to_f32_nobranch((uint16_t)b)) ==
                  cr_f32_bits(cr_f16_to_f32((uint16_t)b)),
              "f16 0x%04x widens to 0x%08x, want 0x%08x", b,
              cr_f32_bits(cr_f16_to_f32_nobranch((uint16_t)b)),
              cr_f32_bits(cr_f16_to_f32((uint16_t)b)));
}

CPU_TEST_MAIN("test_ops_values", {"quotient helper", quotient_helper},
              {"norm2 class bits", norm2_class_bits}, {"f16 widening", f16_widening})
