/* test_round_window.c — the one rounding of exact mode from four digits (no GPU needed).
 *
 * The GPU's last block rounds a normalised magnitude from four digits only (exact.cu,
 * last_block_end): h - 3 .. h, h the top nonzero digit, with bit 0 of digit h - 3 set when any
 * digit below it is nonzero. It relies on the result's lsb and round bit lying within digits
 * h - 2 .. h for every format, so that the digits below only decide the sticky bit. This test
 * holds that window against the whole magnitude, both rounded by superacc.h's cr_sa_round (the
 * CPU's own rounding), for the SUM layout (70 digits above 2^-1074) and the float64 dot's (136
 * above 2^-2148), every result format (float64, float32, float16, bfloat16), both signs, on
 *   - random magnitudes of every length (random digits, or sparse ones far below the top),
 *   - magnitudes on a rounding tie of each format (the round bit set, the bits below it within
 *     the window clear), with and without one nonzero digit far below: round to even against
 *     round up, which only the sticky digit tells apart,
 *   - magnitudes at the subnormal and overflow ends of each format.
 * The window is built here as the kernel builds it, and rounded both by cr_sa_round and by
 * cr_sa_round4 (the kernel's straight-line rounding of four digits in registers). Planted bugs:
 * the window without its sticky bit fails about 37000 comparisons, a window of two digits
 * about 64000.
 *
 * COOPREDUCE_TEST_SEED=S replays a run (the seed is printed). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "check.h"
#include "core/superacc.h"
#include "util.h"

#define MAX_ND 136

static const int kFmts[4] = {CR_FMT_F64, CR_FMT_F32, CR_FMT_F16, CR_FMT_BF16};
static const char *const kFmtNames[4] = {"float64", "float32", "float16", "bfloat16"};
static const int kResultBytes[4] = {8, 4, 2, 2};

/* The rounding window of the normalised magnitude d (nd digits), as last_block_end builds it:
 * digits l .. h into win (l = max(h - 3, 0)), win[0]'s bit 0 set when a digit below l is
 * nonzero; returns the count of digits, *l the first. A zero magnitude: one zero digit. */
static int window_of(const int64_t *d, int nd, int64_t win[4], int *l)
{
    int h = nd - 1;
    while (h >= 0 && d[h] == 0) h--;
    *l = 0;
    if (h < 0) {
        win[0] = 0;
        return 1;
    }
    *l = h > 3 ? h - 3 : 0;
    int below = 0;
    for (int i = 0; i < *l; i++) below |= d[i] != 0;
    for (int i = *l; i <= h; i++) win[i - *l] = d[i];
    if (below) win[0] |= 1;
    return h - *l + 1;
}

static int checks_run;

/* The result bytes as hex, most significant first (8 bytes: the widest format). */
static void hex_of(const unsigned char r[8], char out[17])
{
    for (int i = 0; i < 8; i++) snprintf(out + 2 * i, 3, "%02x", r[7 - i]);
}

/* Whether `got` (a rounding from the window) equals `full` (from the whole magnitude); a
 * failure names the case and both results. */
static int same_result(const unsigned char full[8], const unsigned char got[8], const char *how,
                       const char *what, int f, int nd, int lsb, int neg, int l, int cnt)
{
    char a[17], b[17];
    hex_of(full, a);
    hex_of(got, b);
    return CHECK(memcmp(full, got, (size_t)kResultBytes[f]) == 0,
                 "%s: %s, %d digits above 2^%d, neg %d, window from digit %d of %d: whole %s, "
                 "%s %s",
                 what, kFmtNames[f], nd, lsb, neg, l, cnt, a, how, b);
}

/* d against its window, every format, both signs. */
static void compare(const char *what, const int64_t *d, int nd, int lsb)
{
    int64_t win[4];
    int l;
    const int cnt = window_of(d, nd, win, &l);
    const unsigned flags = CR_X_ANY | CR_X_NONNEGZ;
    for (int f = 0; f < 4; f++)
        for (int neg = 0; neg <= 1; neg++) {
            unsigned char full[8] = {0}, part[8] = {0}, four[8] = {0};
            cr_sa_round(d, nd, neg, lsb, flags, kFmts[f], full);
            cr_sa_round(win, cnt, neg, lsb + 32 * l, flags, kFmts[f], part);
            /* the GPU's straight-line rounding of the same four digits (zeros above the top) */
            uint64_t w[4] = {0, 0, 0, 0};
            for (int i = 0; i < cnt; i++) w[i] = (uint64_t)win[i];
            cr_sa_round4(w[0], w[1], w[2], w[3], neg, lsb + 32 * l, flags, kFmts[f], four);
            checks_run++;
            if (!same_result(full, four, "cr_sa_round4", what, f, nd, lsb, neg, l, cnt) ||
                !same_result(full, part, "window", what, f, nd, lsb, neg, l, cnt))
                return;
        }
}

/* A random digit of `bits` random bits (1 .. 32), its top bit set. */
static int64_t digit_of_length(int bits)
{
    const uint64_t top = 1ull << (bits - 1);
    return (int64_t)(top | (rnd() & (top - 1)));
}

/* The bit position (above the layout's lsb) of the lsb of `fmt`'s result for a magnitude whose
 * top bit is at t (cr_sa_round's rule: precision below the top bit, or the format's smallest
 * subnormal's position). */
static int result_lsb(int fmt, int t, int lsb)
{
    const int prec = fmt == CR_FMT_F64 ? 53 : fmt == CR_FMT_F32 ? 24 : fmt == CR_FMT_F16 ? 11 : 8;
    const int emin = fmt == CR_FMT_F64 ? -1022 : fmt == CR_FMT_F16 ? -14 : -126;
    const int e = t + lsb;
    return (e >= emin ? e : emin) - prec + 1 - lsb;
}

static void set_bit(int64_t *d, int b, int v)
{
    if (b < 0) return;
    if (v)
        d[b >> 5] |= (int64_t)(1ull << (b & 31));
    else
        d[b >> 5] &= ~(int64_t)(1ull << (b & 31));
}

static void layout(int nd, int lsb, int reps)
{
    int64_t d[MAX_ND];
    char what[64];
    for (int rep = 0; rep < reps; rep++) {
        /* random magnitudes: the top digit anywhere, random or sparse digits below it */
        memset(d, 0, sizeof d);
        const int h = (int)rnd_below((uint64_t)nd);
        d[h] = digit_of_length(1 + (int)rnd_below(32));
        const int sparse = (int)rnd_below(2);
        for (int i = 0; i < h; i++)
            d[i] = sparse ? (rnd_below(8) == 0 ? (int64_t)(rnd() & 0xffffffffu) : 0)
                          : (int64_t)(rnd() & 0xffffffffu);
        snprintf(what, sizeof what, "random%s", sparse ? " sparse" : "");
        compare(what, d, nd, lsb);

        /* a tie of each format: the round bit set, the bits under it within the window clear,
         * and (half the time) one nonzero digit below the window */
        for (int f = 0; f < 4; f++) {
            memset(d, 0, sizeof d);
            const int th = 3 + (int)rnd_below((uint64_t)(nd - 3));
            const int bits = 1 + (int)rnd_below(32);
            d[th] = digit_of_length(bits);
            d[th - 1] = (int64_t)(rnd() & 0xffffffffu);
            d[th - 2] = (int64_t)(rnd() & 0xffffffffu);
            const int t = 32 * th + bits - 1;
            const int q = result_lsb(kFmts[f], t, lsb);
            set_bit(d, q - 1, 1);
            for (int b = 32 * (th - 3); b < q - 1; b++) set_bit(d, b, 0);
            const int tail = (int)rnd_below(2);
            if (tail && th - 3 > 0) d[rnd_below((uint64_t)(th - 3))] = 1 + (int64_t)rnd_below(7);
            snprintf(what, sizeof what, "%s tie%s", kFmtNames[f], tail ? " + tail" : "");
            compare(what, d, nd, lsb);
        }
    }
    /* the ends of each format: around its smallest subnormal and its largest finite value */
    for (int f = 0; f < 4; f++) {
        static const int kSub[4] = {-1074, -149, -24, -133}, kTop[4] = {1024, 128, 16, 128};
        for (int end = 0; end < 2; end++)
            for (int k = -40; k <= 40; k++) {
                const int t = (end ? kTop[f] : kSub[f]) + k - lsb; /* the top bit's position */
                if (t < 0 || t >= 32 * (nd - 1)) continue;
                memset(d, 0, sizeof d);
                set_bit(d, t, 1);
                for (int b = t - 1; b >= 0 && b > t - 80; b--) set_bit(d, b, (int)(rnd() & 1));
                if (t > 200) d[rnd_below((uint64_t)((t - 100) >> 5))] |= 1;
                snprintf(what, sizeof what, "%s %s end", kFmtNames[f],
                         end ? "overflow" : "subnormal");
                compare(what, d, nd, lsb);
            }
    }
}

int main(void)
{
    test_seed_init("test_round_window");
    layout(CR_SA_SUM_DIGITS, CR_SA_SUM_LSB, 20000);
    layout(CR_SA_DOT64_DIGITS, CR_SA_DOT64_LSB, 20000);
    printf("test_round_window: %d comparisons\n", checks_run);
    return check_summary("test_round_window");
}
