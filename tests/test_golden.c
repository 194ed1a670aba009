/* test_golden.c — replays sums that a GPU produced, on the CPU, and checks the bits.
 *
 *   test_golden PATH
 *
 * PATH is a text file of lines
 *
 *   dtype kind seed n bits        e.g.   f32 uniform 7 4097 0x4500a3b1
 *
 * dtype is f32 or f64; kind is anything cr_gen_parse() accepts; seed, n and bits are unsigned
 * integers (decimal, or hexadecimal with 0x). A line whose first non-blank character is '#' is a
 * comment, blank lines are ignored, and a '#' after the five fields starts a trailing comment.
 * Each case is regenerated with cr_gen_fill() and summed on a CPU handle (with coopreduce_sum
 * and coopreduce_sum_to_host); both must give exactly `bits`.
 *
 * Fails if the file cannot be read, a line is malformed, or the file holds no case.
 * Prints "test_golden: N passed, M failed". */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coopreduce.h"
#include "gen.h"
#include "check.h"
#include "util.h"

/* Parses an unsigned 64-bit integer that must span the whole token. */
static int parse_u64(const char *tok, uint64_t *out)
{
    if (!tok || !isdigit((unsigned char)tok[0])) return -1;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(tok, &end, 0);
    if (errno != 0 || end == tok || *end != '\0') return -1;
    *out = (uint64_t)v;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stdout, "usage: test_golden PATH\n");
        CHECK(0, "expected exactly one argument (the golden file)");
        return check_summary("test_golden");
    }
    FILE *f = fopen(argv[1], "r");
    if (!CHECK(f != NULL, "cannot open %s: %s", argv[1], strerror(errno)))
        return check_summary("test_golden");

    coopreduce_handle *h = NULL;
    coopreduce_status s = coopreduce_create_cpu(&h, 0);
    if (!CHECK(s == COOPREDUCE_SUCCESS && h, "create_cpu(0): %d (%s)", (int)s,
               coopreduce_last_error(NULL))) {
        fclose(f);
        return check_summary("test_golden");
    }

    char line[1024];
    unsigned long lineno = 0;
    unsigned long cases = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n' && !feof(f)) {
            CHECK(0, "%s:%lu: line too long", argv[1], lineno);
            int c;
            while ((c = fgetc(f)) != EOF && c != '\n')
                ;
            continue;
        }
        char *p = line;
        while (isspace((unsigned char)*p)) p++;
        if (*p == '\0' || *p == '#') continue;

        char *tok[6];
        int nt = 0;
        char *save = NULL;
        for (char *t = strtok_r(p, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
            if (t[0] == '#') break; /* trailing comment */
            if (nt < 6) tok[nt] = t;
            nt++;
        }
        if (!CHECK(nt == 5, "%s:%lu: expected 5 fields (dtype kind seed n bits), found %d", argv[1],
                   lineno, nt))
            continue;

        coopreduce_dtype dt;
        if (strcmp(tok[0], "f32") == 0)
            dt = COOPREDUCE_FLOAT32;
        else if (strcmp(tok[0], "f64") == 0)
            dt = COOPREDUCE_FLOAT64;
        else {
            CHECK(0, "%s:%lu: unknown dtype '%s' (f32 or f64)", argv[1], lineno, tok[0]);
            continue;
        }
        cr_gen_kind kind;
        if (!CHECK(cr_gen_parse(tok[1], &kind) == 0, "%s:%lu: unknown kind '%s'", argv[1], lineno,
                   tok[1]))
            continue;
        uint64_t seed, n, bits;
        if (!CHECK(parse_u64(tok[2], &seed) == 0, "%s:%lu: bad seed '%s'", argv[1], lineno, tok[2]))
            continue;
        if (!CHECK(parse_u64(tok[3], &n) == 0, "%s:%lu: bad n '%s'", argv[1], lineno, tok[3]))
            continue;
        if (!CHECK(parse_u64(tok[4], &bits) == 0 &&
                       (dt == COOPREDUCE_FLOAT64 || bits <= UINT64_C(0xffffffff)),
                   "%s:%lu: bad bits '%s' for %s", argv[1], lineno, tok[4], tok[0]))
            continue;
        cases++;

        size_t es = dt_size(dt);
        if (!CHECK(n <= (uint64_t)(SIZE_MAX / es), "%s:%lu: n too large", argv[1], lineno))
            continue;
        void *x = malloc(n ? (size_t)n * es : 1);
        if (!CHECK(x != NULL, "%s:%lu: cannot allocate %" PRIu64 " elements", argv[1], lineno, n))
            continue;
        if (!CHECK(cr_gen_fill(x, 0, n, dt, kind, seed, gen_threads()) == 0,
                   "%s:%lu: cr_gen_fill failed", argv[1], lineno)) {
            free(x);
            continue;
        }
        for (int to_host = 0; to_host < 2; to_host++) {
            union {
                float f;
                double d;
                uint64_t u;
            } r;
            r.u = UINT64_C(0x5a5a5a5a5a5a5a5a);
            s = to_host ? coopreduce_sum_to_host(x, &r, n, dt, h, NULL)
                        : coopreduce_sum(x, &r, n, dt, h, NULL);
            uint64_t got = dt == COOPREDUCE_FLOAT32 ? (uint64_t)f32_bits(r.f) : f64_bits(r.d);
            CHECK(s == COOPREDUCE_SUCCESS && got == bits,
                  "%s:%lu: %s %s seed=%" PRIu64 " n=%" PRIu64
                  " (%s): status %d, CPU bits 0x%0*" PRIx64 ", golden 0x%0*" PRIx64,
                  argv[1], lineno, tok[0], tok[1], seed, n, to_host ? "sum_to_host" : "sum", (int)s,
                  (int)(2 * es), got, (int)(2 * es), bits);
        }
        free(x);
    }
    if (ferror(f)) CHECK(0, "%s: read error", argv[1]);
    fclose(f);
    CHECK(cases > 0, "%s holds no case", argv[1]);
    fprintf(stdout, "golden cases: %lu from %s\n", cases, argv[1]);
    coopreduce_destroy(h);
    return check_summary("test_golden");
}
