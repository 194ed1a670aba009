/* sharded.c — a reduction of one array whose contiguous shards lie on the ranks of a
 * communicator, in rank order: every rank gets the bits of the 1-D call on the whole array
 * (docs/DETERMINISM.md, "Sharded reductions").
 *
 * Two exchanges, whatever the number of ranks, levels or the split:
 *  1. the call's arguments (protocol.c): every rank learns every shard's size, hence the global
 *     offsets, and the ranks check that they agree;
 *  2. each rank's contribution, from which every rank computes the same result:
 *     - order-independent operations (the scan family): the shard's own result (and, for
 *       ARGMIN / ARGMAX, the value at its index), combined in rank order by the 1-D rules;
 *     - EXACT mode: the shard's superaccumulator, unrounded; the digits add as integers, the
 *       sum is rounded once;
 *     - the canonical-order operations: the values of the canonical tree a rank cannot finish
 *       alone. At level k (level 1: the array's leaves; level k+1: the chunk values of level k)
 *       a rank holds a contiguous range of values (level 1: its shard). The chunks of C values
 *       wholly inside it are computed locally, on the rank's device, with the 1-D code's chunk
 *       tree, and form its range at level k+1. What is left is a head (below its first chunk
 *       boundary) and a tail (after its last whole chunk), fewer than C values each. Those, at
 *       every level, and the whole range at the top level (the one that is a single chunk), are
 *       the contribution: O(C * levels) values, never the data. Every rank then rebuilds the
 *       chunks that straddle rank boundaries, level by level (a straddling chunk's value is a
 *       value of the level above that no rank holds), on the host with the CPU's chunk tree,
 *       and the top chunk. Each chunk's tree is fixed by its position in the global array, so
 *       the result cannot depend on the split.
 * A GPU handle computes its shard's chunks on the GPU (gpu/partials.cu, the kernels' level-1
 * code) and sends what it cannot finish through the host; the CPU's chunk tree gives the GPU's
 * bits by the contract of canonical order v1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "core/superacc.h"
#include "core/values.h"
#include "cpu/runtime.h"
#include "dist/protocol.h"

typedef struct {
    uint64_t lo, hi; /* [lo, hi); empty when lo >= hi */
} range;

static int empty(range r) { return r.lo >= r.hi; }
static uint64_t rlen(range r) { return empty(r) ? 0 : r.hi - r.lo; }
static uint64_t umin(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* ---- The tree family's layout, the same on every rank ------------------------------------ */
typedef struct {
    int R, T;    /* ranks; levels (level T is one chunk) */
    uint64_t C;  /* elements per chunk */
    uint64_t n[CR_MAX_LEVELS + 2]; /* values at level k = 1 .. T */
    range *known; /* known[r * (T + 1) + k]: rank r's values at level k */
    int planes1;  /* level 1: the input arrays (2 for DOT) */
    size_t eb1;   /* level 1: bytes per input element */
    int trees;    /* levels above 1: the trees (3 for NORM2) */
    size_t as;    /* levels above 1: bytes per accumulation value */
} tree_layout;

static range known_at(const tree_layout *L, int r, int k) { return L->known[r * (L->T + 1) + k]; }

/* The values of rank r's level k that it sends (k < T): its head and its tail. */
static void head_tail(const tree_layout *L, int r, int k, range *head, range *tail)
{
    const range cur = known_at(L, r, k), next = known_at(L, r, k + 1);
    *head = *tail = (range){0, 0};
    if (empty(cur)) return;
    if (empty(next)) {
        *head = cur;
        return;
    }
    *head = (range){cur.lo, next.lo * L->C};
    *tail = (range){umin(next.hi * L->C, L->n[k]), cur.hi};
}

static int planes(const tree_layout *L, int k) { return k == 1 ? L->planes1 : L->trees; }
static size_t elem_bytes(const tree_layout *L, int k) { return k == 1 ? L->eb1 : L->as; }

/* Bytes of rank r's level-k part of its contribution. */
static size_t level_bytes(const tree_layout *L, int r, int k)
{
    uint64_t cnt;
    if (k == L->T) {
        cnt = rlen(known_at(L, r, k));
    } else {
        range h, t;
        head_tail(L, r, k, &h, &t);
        cnt = rlen(h) + rlen(t);
    }
    return (size_t)cnt * elem_bytes(L, k) * (size_t)planes(L, k);
}

#define HEADER 16 /* a contribution starts with the rank's status */

static size_t contribution_bytes(const tree_layout *L, int r)
{
    size_t b = HEADER;
    for (int k = 1; k <= L->T; k++) b += level_bytes(L, r, k);
    return b;
}

static coopreduce_status make_layout(coopreduce_handle *h, tree_layout *L, const cr_plan *p,
                                     const cr_meta *all, int R, uint64_t N)
{
    memset(L, 0, sizeof *L);
    L->R = R;
    L->C = cr_chunk_elems(p->acc);
    L->planes1 = p->inputs;
    L->eb1 = cr_dtype_size(p->dtype);
    L->trees = p->trees;
    L->as = cr_dtype_size(p->acc);
    uint64_t count[CR_MAX_LEVELS + 1];
    L->T = cr_level_counts(N, L->C, count);
    for (int k = 1; k <= L->T; k++) L->n[k] = count[k - 1];
    L->known = calloc((size_t)R * (size_t)(L->T + 1), sizeof *L->known);
    if (!L->known) return cr_fail(h, COOPREDUCE_ERROR_OUT_OF_MEMORY, "cannot allocate the layout");
    uint64_t off = 0;
    for (int r = 0; r < R; r++) {
        range cur = {off, off + all[r].n};
        off += all[r].n;
        for (int k = 1; k <= L->T; k++) {
            L->known[r * (L->T + 1) + k] = cur;
            if (k == L->T) break;
            range next = {0, 0};
            if (!empty(cur)) {
                const uint64_t lo = (cur.lo + L->C - 1) / L->C;
                const uint64_t hi = cur.hi == L->n[k] ? L->n[k + 1] : cur.hi / L->C;
                if (lo < hi) next = (range){lo, hi};
            }
            cur = next;
        }
    }
    return COOPREDUCE_SUCCESS;
}

/* ---- Leaves and chunks on the host (the CPU's code: the bits of every device) ------------- */

/* The leaves of raw input elements rx[0..m) (and ry, for DOT) for the plan, into out[tree]. */
static void host_leaves(const cr_plan *p, const void *rx, const void *ry, uint64_t m,
                        void *const out[3])
{
    const coopreduce_dtype dt = p->dtype;
    const int f64 = dt == COOPREDUCE_FLOAT64;
    const coopreduce_op op = p->op;
    for (uint64_t i = 0; i < m; i++) {
        double a, b = 0;
        switch (dt) {
        case COOPREDUCE_FLOAT64:
            a = ((const double *)rx)[i];
            if (ry) b = ((const double *)ry)[i];
            break;
        case COOPREDUCE_FLOAT32:
            a = ((const float *)rx)[i];
            if (ry) b = ((const float *)ry)[i];
            break;
        case COOPREDUCE_FLOAT16:
            a = cr_f16_to_f32(((const uint16_t *)rx)[i]);
            if (ry) b = cr_f16_to_f32(((const uint16_t *)ry)[i]);
            break;
        default:
            a = cr_bf16_to_f32(((const uint16_t *)rx)[i]);
            if (ry) b = cr_bf16_to_f32(((const uint16_t *)ry)[i]);
            break;
        }
        if (f64) {
            double *o0 = out[0];
            if (p->family == CR_FAMILY_CANONICAL || p->leaf == CR_LEAF_VALUE)
                o0[i] = a;
            else if (p->leaf == CR_LEAF_SQUARE)
                o0[i] = a * a;
            else if (p->leaf == CR_LEAF_PRODUCT)
                o0[i] = a * b;
            else
                cr_norm2_leaf_F64(a, &o0[i], &((double *)out[1])[i], &((double *)out[2])[i]);
        } else {
            const float fa = (float)a, fb = (float)b; /* exact: float values */
            float *o0 = out[0];
            if (p->family == CR_FAMILY_CANONICAL || p->leaf == CR_LEAF_VALUE)
                o0[i] = fa;
            else if (p->leaf == CR_LEAF_SQUARE)
                o0[i] = fa * fa;
            else if (p->leaf == CR_LEAF_PRODUCT)
                o0[i] = fa * fb;
            else
                cr_norm2_leaf_F32(fa, &o0[i], &((float *)out[1])[i], &((float *)out[2])[i]);
        }
    }
    (void)op;
}

/* A piece of a level: the values [start, start + len), plane j at data + j * stride bytes
 * (raw input elements at level 1, accumulation values above). */
typedef struct {
    uint64_t start, len;
    const char *data;
    size_t stride;
} piece;

typedef struct {
    piece *v;
    size_t n, cap;
} pieces;

static int push(pieces *ps, piece pc)
{
    if (pc.len == 0) return 0;
    if (ps->n == ps->cap) {
        size_t cap = ps->cap ? 2 * ps->cap : 64;
        piece *nv = realloc(ps->v, cap * sizeof *nv);
        if (!nv) return -1;
        ps->v = nv;
        ps->cap = cap;
    }
    ps->v[ps->n++] = pc;
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Chunk g of level k from the pieces: its values per tree into buf[tree] (C accumulation values
 * each), returns the number of values (the chunk's length) or 0 when some value is missing. */
static uint64_t assemble(const tree_layout *L, const cr_plan *p, int k, const pieces *ps,
                         uint64_t g, void *const buf[3], void *const raw[2])
{
    const uint64_t c0 = g * L->C, m = umin(L->C, L->n[k] - c0);
    uint64_t covered = 0;
    for (size_t i = 0; i < ps->n; i++) {
        const piece *pc = &ps->v[i];
        const uint64_t a = pc->start > c0 ? pc->start : c0;
        const uint64_t b = umin(pc->start + pc->len, c0 + m);
        if (a >= b) continue;
        covered += b - a;
        if (k == 1) {
            /* raw elements: copy, then turn into leaves at their place in the chunk */
            const size_t es = L->eb1;
            for (int j = 0; j < L->planes1; j++)
                memcpy(raw[j], pc->data + j * pc->stride + (a - pc->start) * es, (b - a) * es);
            void *dst[3];
            for (int t = 0; t < 3; t++)
                dst[t] = buf[t] ? (char *)buf[t] + (a - c0) * L->as : NULL;
            host_leaves(p, raw[0], L->planes1 == 2 ? raw[1] : NULL, b - a, dst);
        } else {
            for (int t = 0; t < L->trees; t++)
                memcpy((char *)buf[t] + (a - c0) * L->as,
                       pc->data + t * pc->stride + (a - pc->start) * L->as, (b - a) * L->as);
        }
    }
    return covered == m ? m : 0;
}

static double chunk_value(const tree_layout *L, const void *v, uint64_t m)
{
    return L->as == 8 ? cr_cpu_chunk_f64(v, m) : (double)cr_cpu_chunk_f32(v, m);
}

/* The result of the tree family from every rank's contribution (gathered, slot bytes each). */
static coopreduce_status tree_combine(coopreduce_handle *h, const tree_layout *L, const cr_plan *p,
                                      const char *gathered, size_t slot, uint64_t N,
                                      void *result_host)
{
    coopreduce_status s = COOPREDUCE_SUCCESS;
    const uint64_t C = L->C;
    double top[3] = {0, 0, 0};
    pieces ps = {0};
    uint64_t *gidx = NULL, ngap = 0; /* the previous level's straddling chunks */
    char *gval = NULL;               /* their values: tree t of gap i at gval + (t*ngap + i)*as */
    char *buf = malloc(3 * C * L->as + 2 * C * 8);
    if (!buf) return cr_fail(h, COOPREDUCE_ERROR_OUT_OF_MEMORY, "cannot allocate a chunk");
    void *bufs[3] = {buf, L->trees == 3 ? buf + C * L->as : NULL,
                     L->trees == 3 ? buf + 2 * C * L->as : NULL};
    void *raw[2] = {buf + 3 * C * L->as, buf + 3 * C * L->as + C * 8};
    if (N == 0) goto final;
    for (int k = 1; k <= L->T; k++) {
        ps.n = 0;
        /* the ranks' values of level k */
        for (int r = 0; r < L->R; r++) {
            const char *base = gathered + (size_t)r * slot + HEADER;
            for (int j = 1; j < k; j++) base += level_bytes(L, r, j);
            const size_t eb = elem_bytes(L, k);
            if (k == L->T) {
                const range cur = known_at(L, r, k);
                if (push(&ps, (piece){cur.lo, rlen(cur), base, (size_t)rlen(cur) * eb})) goto oom;
            } else {
                range hd, tl;
                head_tail(L, r, k, &hd, &tl);
                const size_t stride = (size_t)(rlen(hd) + rlen(tl)) * eb;
                if (push(&ps, (piece){hd.lo, rlen(hd), base, stride}) ||
                    push(&ps, (piece){tl.lo, rlen(tl), base + rlen(hd) * eb, stride}))
                    goto oom;
            }
        }
        /* and the values no rank holds: the straddling chunks of the level below */
        for (uint64_t i = 0; i < ngap; i++)
            if (push(&ps, (piece){gidx[i], 1, gval + i * L->as, (size_t)ngap * L->as})) goto oom;
        if (k == L->T) {
            const uint64_t m = assemble(L, p, k, &ps, 0, bufs, raw);
            if (m != L->n[k]) goto missing;
            for (int t = 0; t < L->trees; t++) top[t] = chunk_value(L, bufs[t], m);
            break;
        }
        /* the straddling chunks of level k: those the pieces touch */
        uint64_t *cand = malloc(2 * (ps.n + 1) * sizeof *cand), nc = 0;
        if (!cand) goto oom;
        for (size_t i = 0; i < ps.n; i++) {
            const uint64_t g0 = ps.v[i].start / C, g1 = (ps.v[i].start + ps.v[i].len - 1) / C;
            for (uint64_t g = g0; g <= g1 && g <= g0 + 1; g++) cand[nc++] = g;
            if (g1 > g0 + 1) { /* a piece spans at most two chunks (a head or tail < 2C) */
                free(cand);
                goto missing;
            }
        }
        qsort(cand, nc, sizeof *cand, cmp_u64);
        uint64_t u = 0;
        for (uint64_t i = 0; i < nc; i++)
            if (u == 0 || cand[i] != cand[u - 1]) cand[u++] = cand[i];
        char *nval = malloc((size_t)(u ? u : 1) * L->as * (size_t)L->trees);
        if (!nval) {
            free(cand);
            goto oom;
        }
        for (uint64_t i = 0; i < u; i++) {
            const uint64_t m = assemble(L, p, k, &ps, cand[i], bufs, raw);
            if (!m) {
                free(cand);
                free(nval);
                goto missing;
            }
            for (int t = 0; t < L->trees; t++) {
                char *dst = nval + ((size_t)t * u + i) * L->as;
                if (L->as == 8) {
                    const double v = cr_cpu_chunk_f64(bufs[t], m);
                    memcpy(dst, &v, 8);
                } else {
                    const float v = cr_cpu_chunk_f32(bufs[t], m);
                    memcpy(dst, &v, 4);
                }
            }
        }
        free(gidx);
        free(gval);
        gidx = cand;
        gval = nval;
        ngap = u;
    }
final:;
    /* The final rule, as the 1-D families apply it (ordered.c, canonical.c). */
    const int f64 = p->acc == COOPREDUCE_FLOAT64;
    for (int t = 0; t < 3; t++)
        if (top[t] != top[t]) top[t] = f64 ? cr_f64_from(CR_NAN_F64) : (double)cr_f32_from(CR_NAN_F32);
    double v = top[0];
    if (p->op == COOPREDUCE_OP_MEAN) v = cr_mean_of_float(top[0], N, f64);
    if (p->op == COOPREDUCE_OP_NORM2)
        v = f64 ? cr_norm2_combine_F64(top[0], top[1], top[2])
                : (double)cr_norm2_combine_F32((float)top[0], (float)top[1], (float)top[2]);
    cr_cpu_write_float(v, p->dtype, p->narrow, result_host);
    goto done;
oom:
    s = cr_fail(h, COOPREDUCE_ERROR_OUT_OF_MEMORY, "cannot allocate the boundary chunks");
    goto done;
missing:
    s = cr_fail(h, COOPREDUCE_ERROR_INTERNAL, "a chunk at a shard boundary has missing values");
done:
    free(ps.v);
    free(gidx);
    free(gval);
    free(buf);
    return s;
}

/* This rank's contribution to the tree family: its chunks computed up the levels (on its
 * device), its heads and tails and its top-level values copied into contrib (host memory, at
 * HEADER). */
static coopreduce_status tree_local(coopreduce_handle *h, cr_dist_cache **cache,
                                    const tree_layout *L, const cr_plan *p, int me, const void *x,
                                    const void *y, char *contrib, size_t dev_slot, int R,
                                    char **dslot, void *stream)
{
    const int gpu = h->device >= 0, T = L->T, trees = L->trees;
    const uint64_t C = L->C;
    const size_t as = L->as;
    coopreduce_status s = COOPREDUCE_SUCCESS;
    /* level k >= 2 values: tree t of level k at lv[k][t], each 256-byte aligned */
    char *lv[CR_MAX_LEVELS + 2][3];
    memset(lv, 0, sizeof lv);
    size_t total = 0;
    for (int k = 2; k <= T; k++)
        total += (size_t)trees * ((rlen(known_at(L, me, k)) * as + 255) / 256 * 256);
    /* GPU: the contribution is packed on the device (copies in the stream), then comes to the
     * host in one copy; or, with dev_slot (a transport whose collectives take device memory),
     * it stays there: packed into a slot of dev_slot bytes at *dslot, followed by room for the
     * R ranks' slots, for the caller's exchange */
    const size_t payload = contribution_bytes(L, me) - HEADER, levels_bytes = total;
    if (gpu) total += dev_slot ? dev_slot * (size_t)(R + 1) : payload;
    if (dslot) *dslot = NULL;
    char *mem = NULL;
    if (total) {
        if (gpu) {
            void *d = NULL;
            if ((s = cr_dist_device_buffer(h, cache, total, &d))) return s;
            mem = d;
        } else if (!(mem = malloc(total))) {
            return cr_fail(h, COOPREDUCE_ERROR_OUT_OF_MEMORY, "cannot allocate %zu bytes of chunks",
                           total);
        }
    }
    size_t off = 0;
    for (int k = 2; k <= T && mem; k++)
        for (int t = 0; t < trees; t++) {
            lv[k][t] = mem + off;
            off += (rlen(known_at(L, me, k)) * as + 255) / 256 * 256;
        }
    /* up the levels */
    const range r1 = known_at(L, me, 1);
    const int shift_ok = gpu && (uintptr_t)x % 16 == 0 && (p->inputs < 2 || (uintptr_t)y % 16 == 0);
    for (int k = 1; k < T && !s; k++) {
        const range cur = known_at(L, me, k), next = known_at(L, me, k + 1);
        if (empty(next)) break;
        const uint64_t first = next.lo * C, count = umin(next.hi * C, L->n[k]) - first;
        void *out[3] = {lv[k + 1][0], lv[k + 1][1], lv[k + 1][2]};
        if (k == 1) {
            const size_t es = L->eb1;
            const char *sx = (const char *)x + (first - r1.lo) * es;
            const char *sy = p->inputs == 2 ? (const char *)y + (first - r1.lo) * es : NULL;
            if (gpu) {
                const cr_leaf leaf = p->family == CR_FAMILY_CANONICAL ? CR_LEAF_VALUE : p->leaf;
                s = cr_gpu_shard_partials(h, p->dtype, leaf, sx, sy, count, out, shift_ok, stream);
            } else {
                s = cr_cpu_partials(h, p, sx, sy, count, out);
            }
        } else {
            for (int t = 0; t < trees && !s; t++) {
                const char *src = lv[k][t] + (first - cur.lo) * as;
                void *o[3] = {out[t], NULL, NULL};
                if (gpu)
                    s = cr_gpu_shard_partials(h, p->acc, CR_LEAF_VALUE, src, NULL, count, o, 1,
                                              stream);
                else
                    cr_cpu_level(h, p->acc, src, count, out[t]);
            }
        }
    }
    /* the contribution: heads and tails, then the top level */
    char *const packed = !gpu ? contrib + HEADER
                         : !mem   ? NULL
                         : dev_slot ? mem + levels_bytes + HEADER
                                  : mem + levels_bytes;
    char *dst = packed;
    for (int k = 1; k <= T && !s; k++) {
        const range cur = known_at(L, me, k);
        range parts[2] = {cur, {0, 0}};
        if (k < T) head_tail(L, me, k, &parts[0], &parts[1]);
        const size_t eb = elem_bytes(L, k);
        for (int j = 0; j < planes(L, k) && !s; j++) {
            const char *src = k == 1 ? (const char *)(j ? y : x) : lv[k][j];
            for (int q = 0; q < 2 && !s; q++) {
                const uint64_t cnt = rlen(parts[q]);
                if (!cnt) continue;
                const char *from = src + (parts[q].lo - cur.lo) * eb; /* cnt > 0: packed set */
                if (gpu)
                    s = cr_gpu_copy(h, dst, from, (size_t)cnt * eb, stream);
                else
                    memcpy(dst, from, (size_t)cnt * eb);
                dst += (size_t)cnt * eb;
            }
        }
    }
    if (gpu && dev_slot) {
        if (mem) *dslot = mem + levels_bytes; /* the header is the caller's */
        return s;
    }
    if (!s && gpu && payload) s = cr_gpu_copy(h, contrib + HEADER, packed, payload, stream);
    if (!s && gpu) s = cr_gpu_wait(h, stream);
    if (!gpu) free(mem);
    return s;
}

/* ---- The scan family: a shard's result, combined in rank order ----------------------------- */
typedef struct {
    int32_t status, have;
    uint64_t idx;   /* ARGMIN / ARGMAX: the global index */
    uint8_t r[16];  /* the shard's result (SUM and MEAN of integers: the exact sum) */
    uint8_t v[8];   /* ARGMIN / ARGMAX: the value at the index */
} scan_part;

static coopreduce_status scan_local(coopreduce_handle *h, const cr_plan *p, const void *x,
                                    uint64_t n, uint64_t offset, scan_part *out, void *stream)
{
    memset(out, 0, sizeof *out);
    if (n == 0) return COOPREDUCE_SUCCESS;
    const int sum = p->op == COOPREDUCE_OP_SUM || p->op == COOPREDUCE_OP_MEAN;
    const coopreduce_op op = sum ? COOPREDUCE_OP_SUM : p->op;
    coopreduce_status s = coopreduce_reduce_to_host(op, x, NULL, out->r, n, p->dtype, h, stream);
    if (s == COOPREDUCE_ERROR_OVERFLOW) s = COOPREDUCE_SUCCESS; /* the 128-bit sum is written */
    if (s) return s;
    out->have = 1;
    if (p->op == COOPREDUCE_OP_ARGMIN || p->op == COOPREDUCE_OP_ARGMAX) {
        uint64_t i;
        memcpy(&i, out->r, 8);
        const size_t es = cr_dtype_size(p->dtype);
        const char *at = (const char *)x + i * es;
        if (h->device >= 0) {
            if ((s = cr_gpu_copy(h, out->v, at, es, stream)) || (s = cr_gpu_wait(h, stream)))
                return s;
        } else {
            memcpy(out->v, at, es);
        }
        out->idx = offset + i;
    }
    return COOPREDUCE_SUCCESS;
}

/* A float element's value (exact in a double) and whether it is NaN. */
static double float_value(const uint8_t *b, coopreduce_dtype dt)
{
    switch (dt) {
    case COOPREDUCE_FLOAT64: {
        double d;
        memcpy(&d, b, 8);
        return d;
    }
    case COOPREDUCE_FLOAT32: {
        float f;
        memcpy(&f, b, 4);
        return f;
    }
    case COOPREDUCE_FLOAT16: {
        uint16_t u;
        memcpy(&u, b, 2);
        return cr_f16_to_f32(u);
    }
    default: {
        uint16_t u;
        memcpy(&u, b, 2);
        return cr_bf16_to_f32(u);
    }
    }
}

static __int128 int_value(const uint8_t *b, coopreduce_dtype dt, int as_unsigned)
{
    switch (cr_dtype_size(dt)) {
    case 4: {
        if (as_unsigned || dt == COOPREDUCE_UINT32) {
            uint32_t u;
            memcpy(&u, b, 4);
            return u;
        }
        int32_t v;
        memcpy(&v, b, 4);
        return v;
    }
    default: {
        if (as_unsigned || dt == COOPREDUCE_UINT64) {
            uint64_t u;
            memcpy(&u, b, 8);
            return u;
        }
        int64_t v;
        memcpy(&v, b, 8);
        return v;
    }
    }
}

static uint64_t nan_bits(coopreduce_dtype dt)
{
    switch (dt) {
    case COOPREDUCE_FLOAT64: return CR_NAN_F64;
    case COOPREDUCE_FLOAT32: return CR_NAN_F32;
    case COOPREDUCE_FLOAT16: return CR_NAN_F16;
    default: return CR_NAN_BF16;
    }
}

/* The combined result of the shards' results, in rank order, by the 1-D rules. */
static coopreduce_status scan_combine(coopreduce_handle *h, const cr_plan *p, const scan_part *parts,
                                      int R, uint64_t N, void *res)
{
    const coopreduce_op op = p->op;
    const coopreduce_dtype dt = p->dtype;
    const size_t es = cr_dtype_size(dt);
    const int fl = cr_dtype_is_float(dt);
    if (op == COOPREDUCE_OP_SUM || op == COOPREDUCE_OP_MEAN) {
        __int128 total = 0;
        for (int r = 0; r < R; r++) {
            if (!parts[r].have) continue;
            __int128 v;
            if (es == 4) { /* a 64-bit exact sum: int64 (INT32) or uint64 (UINT32) */
                if (dt == COOPREDUCE_UINT32) {
                    uint64_t u;
                    memcpy(&u, parts[r].r, 8);
                    v = u;
                } else {
                    int64_t i;
                    memcpy(&i, parts[r].r, 8);
                    v = i;
                }
            } else {
                memcpy(&v, parts[r].r, 16);
            }
            total += v; /* 128-bit: exact (modulo 2^128 for UINT64, as the 1-D call) */
        }
        if (op == COOPREDUCE_OP_MEAN) {
            const double m = N == 0 ? cr_f64_from(CR_NAN_F64)
                                    : cr_round_div(total < 0, (cr_u128)(total < 0 ? -total : total),
                                                   0, N, 53, -1022);
            memcpy(res, &m, 8);
        } else if (es == 4) {
            const int64_t v = (int64_t)total;
            memcpy(res, &v, 8);
        } else {
            memcpy(res, &total, 16);
        }
        return COOPREDUCE_SUCCESS;
    }
    int best = -1;
    for (int r = 0; r < R; r++) {
        if (!parts[r].have) continue;
        if (best < 0) {
            best = r;
            continue;
        }
        const scan_part *a = &parts[best], *b = &parts[r];
        int better;
        if (op == COOPREDUCE_OP_ARGMIN || op == COOPREDUCE_OP_ARGMAX) {
            if (fl) {
                const double va = float_value(a->v, dt), vb = float_value(b->v, dt);
                if (va != va) continue; /* the first NaN wins */
                better = vb != vb || (op == COOPREDUCE_OP_ARGMIN ? vb < va : vb > va);
            } else {
                const __int128 va = int_value(a->v, dt, 0), vb = int_value(b->v, dt, 0);
                better = op == COOPREDUCE_OP_ARGMIN ? vb < va : vb > va;
            }
        } else if (fl) {
            const double va = float_value(a->r, dt), vb = float_value(b->r, dt);
            if (va != va) continue; /* NaN: the result is the canonical NaN */
            if (vb != vb)
                better = 1;
            else if (op == COOPREDUCE_OP_MIN)
                better = cr_less_f64(vb, va);
            else if (op == COOPREDUCE_OP_MAX)
                better = cr_less_f64(va, vb);
            else
                better = vb > va; /* ABSMAX: magnitudes */
        } else {
            const int uns = op == COOPREDUCE_OP_ABSMAX; /* the unsigned type of the width */
            const __int128 va = int_value(a->r, dt, uns), vb = int_value(b->r, dt, uns);
            better = op == COOPREDUCE_OP_MIN ? vb < va : vb > va;
        }
        if (better) best = r;
    }
    if (best < 0) return cr_fail(h, COOPREDUCE_ERROR_INTERNAL, "no shard had an element");
    if (op == COOPREDUCE_OP_ARGMIN || op == COOPREDUCE_OP_ARGMAX) {
        memcpy(res, &parts[best].idx, 8);
        return COOPREDUCE_SUCCESS;
    }
    if (fl && float_value(parts[best].r, dt) != float_value(parts[best].r, dt)) {
        const uint64_t b = nan_bits(dt);
        memcpy(res, &b, es);
        return COOPREDUCE_SUCCESS;
    }
    memcpy(res, parts[best].r, es);
    return COOPREDUCE_SUCCESS;
}

/* ---- EXACT: superaccumulators ------------------------------------------------------------- */
static int exact_digits(const cr_plan *p, int *lsb)
{
    const int dot64 = p->op == COOPREDUCE_OP_DOT && p->dtype == COOPREDUCE_FLOAT64;
    *lsb = dot64 ? CR_SA_DOT64_LSB : CR_SA_SUM_LSB;
    return dot64 ? CR_SA_DOT64_DIGITS : CR_SA_SUM_DIGITS;
}

static coopreduce_status exact_local(coopreduce_handle *h, cr_dist_cache **cache, const cr_plan *p,
                                     const void *x, const void *y, uint64_t n, int64_t *words,
                                     void *stream)
{
    int lsb;
    const int nd = exact_digits(p, &lsb);
    memset(words, 0, (size_t)(nd + 1) * 8);
    if (n == 0) return COOPREDUCE_SUCCESS;
    if (h->device < 0) {
        unsigned flags = 0;
        coopreduce_status s = cr_cpu_exact_acc(h, p, x, y, n, words, nd, &flags);
        words[nd] = flags;
        return s;
    }
    void *d = NULL;
    coopreduce_status s = cr_dist_device_buffer(h, cache, (size_t)(nd + 1) * 8, &d);
    if (!s) s = cr_gpu_shard_exact(h, p, x, y, n, d, stream);
    if (!s) s = cr_gpu_copy(h, words, d, (size_t)(nd + 1) * 8, stream);
    if (!s) s = cr_gpu_wait(h, stream);
    return s;
}

static void exact_combine(const cr_plan *p, const char *gathered, size_t slot, int R, uint64_t N,
                          void *res)
{
    int lsb;
    const int nd = exact_digits(p, &lsb);
    int64_t d[CR_SA_MAX_DIGITS];
    memset(d, 0, sizeof d);
    unsigned flags = N ? CR_X_ANY : 0;
    for (int r = 0; r < R; r++) {
        const int64_t *w = (const int64_t *)(gathered + (size_t)r * slot + HEADER);
        for (int i = 0; i < nd; i++) d[i] += w[i]; /* carried digits: no overflow */
        flags |= (unsigned)w[nd];
        if (r % 1024 == 1023) cr_sa_carry(d, nd);
    }
    const coopreduce_dtype dt = p->dtype;
    const int fmt = dt == COOPREDUCE_FLOAT64                  ? CR_FMT_F64
                    : p->narrow && dt == COOPREDUCE_FLOAT16  ? CR_FMT_F16
                    : p->narrow && dt == COOPREDUCE_BFLOAT16 ? CR_FMT_BF16
                                                             : CR_FMT_F32;
    cr_sa_finish(d, nd, lsb, flags, fmt, res);
}

/* ---- A small array gathered whole ----------------------------------------------------------- */
/* Whether every rank gathers the whole array and makes the 1-D call on it: the same answer on
 * every rank (from what the first exchange told all of them). Over a transport of device memory
 * (NCCL: every handle a GPU's) or when every rank's handle is a CPU's (over MPI). */
static int gather_whole_ok(const cr_dist_transport *t, const cr_meta *all, int R, uint64_t N,
                           const cr_plan *p)
{
    if (!t->allgatherv) return 0;
    int kib = all[0].gather_kib; /* the smallest limit: every rank has reserved for its own */
    for (int r = 0; r < R; r++) {
        if (!t->device_data && all[r].device >= 0) return 0;
        if (all[r].gather_kib < kib) kib = all[r].gather_kib;
    }
    if (kib <= 0) return 0;
    const uint64_t limit = (uint64_t)kib * 1024;
    const uint64_t es = cr_dtype_size(p->dtype);
    return N <= limit / es / (uint64_t)p->inputs;
}

/* Whether every rank's shard came in the first exchange (sent where it fits: one array, a GPU
 * handle over a transport with allgather_lead) and the array is gathered whole: the same answer
 * on every rank, and the device's (cr_meta_lead_whole, which gpu/lead.cu asks too). */
static int lead_whole(const cr_dist_transport *t, const cr_meta *all, int R, const cr_plan *p)
{
    uint64_t total;
    const uint64_t es = cr_dtype_size(p->dtype);
    return t->allgather_lead && t->allgatherv && t->device_data && p->inputs == 1 &&
           cr_meta_lead_whole((const unsigned char *)all, sizeof *all, R, es,
                              CR_DIST_LEAD_BYTES / es, &total);
}

/* The memory a gather of up to kib KiB needs (two planes rounded up, and alignment), made before
 * the first exchange so that a rank that cannot have it fails there, with every rank told:
 * device memory of the cache for a GPU handle, host memory otherwise, at *room (NULL for kib
 * 0, when this rank gathers nothing). */
static coopreduce_status reserve_gather(coopreduce_handle *h, cr_dist_cache **cache, int R, int kib,
                                        char **room)
{
    *room = NULL;
    if (kib <= 0) return COOPREDUCE_SUCCESS;
    const size_t bytes = (size_t)kib * 1024 + 1024;
    coopreduce_status s = cr_dist_cache_get(h, cache);
    if (s) return s;
    cr_dist_cache *c = *cache;
    if (c->nsizes < R) {
        free(c->sizes);
        c->nsizes = 0;
        if (!(c->sizes = malloc((size_t)R * 2 * sizeof *c->sizes)))
            return cr_fail(h, COOPREDUCE_ERROR_OUT_OF_MEMORY, "cannot allocate %d sizes", R);
        c->nsizes = R;
    }
    if (h->device >= 0) {
        void *d = NULL;
        s = cr_dist_device_buffer(h, cache, bytes, &d);
        *room = d;
        return s;
    }
    if (c->host_bytes < bytes) {
        free(c->host);
        c->host_bytes = 0;
        if (!(c->host = malloc(bytes)))
            return cr_fail(h, COOPREDUCE_ERROR_OUT_OF_MEMORY, "cannot allocate %zu bytes", bytes);
        c->host_bytes = bytes;
    }
    *room = c->host;
    return COOPREDUCE_SUCCESS;
}

/* The whole array (and y's, for DOT) on every rank, in rank order, then the 1-D call on it: the
 * definition of the result, so its bits and status are the 1-D call's by construction. buf is
 * reserve_gather's room (no allocation that could fail between collectives). */
static coopreduce_status gather_whole(const cr_dist_transport *t, cr_dist_cache *cache,
                                      coopreduce_handle *h, const cr_plan *p, coopreduce_op op,
                                      coopreduce_dtype dtype, const void *x, const void *y,
                                      void *result, const cr_meta *all, int R, uint64_t N,
                                      char *buf, void *stream)
{
    const size_t es = cr_dtype_size(dtype);
    const size_t plane = ((size_t)N * es + 255) / 256 * 256;
    const int planes = p->inputs;
    size_t *bytes = cache->sizes, *displ = bytes + R, off = 0;
    for (int r = 0; r < R; r++) {
        bytes[r] = (size_t)all[r].n * es;
        displ[r] = off;
        off += bytes[r];
    }
    coopreduce_status s = COOPREDUCE_SUCCESS;
    char err[CR_DIST_ERR] = "";
    for (int q = 0; q < planes && !s; q++)
        if (t->allgatherv(t->ctx, q ? y : x, buf + (size_t)q * plane, bytes, displ, stream, err))
            s = cr_dist_transport_fail(h, t, "gathering the array", err);
    if (!s) s = coopreduce_reduce(op, buf, planes == 2 ? buf + plane : NULL, result, N, dtype, h, stream);
    return s;
}

/* ---- The call ------------------------------------------------------------------------------ */
CR_EXPORT coopreduce_status cr_dist_reduce_sharded(const cr_dist_transport *t,
                                                   cr_dist_cache **cache, coopreduce_op op,
                                                   const void *x, const void *y, void *result,
                                                   uint64_t n_local, coopreduce_dtype dtype,
                                                   coopreduce_handle *h, void *stream)
{
    const int R = t->size, me = t->rank;
    cr_plan p;
    const int kib = cr_dist_gather_kib();
    char *room = NULL;
    coopreduce_status own = cr_dist_local_checks(h, op, dtype, x, y, result, n_local, &p);
    if (!own && (R > 1 || cr_dist_full_protocol())) own = reserve_gather(h, cache, R, kib, &room);
    cr_meta mine = cr_dist_meta(t, cache, h, 1, n_local, op, dtype, own);
    mine.gather_kib = kib;
    if (R == 1 && !cr_dist_full_protocol()) {
        /* One rank: its shard is the array; the 1-D call is the definition (no exchange). */
        if (mine.status) return (coopreduce_status)mine.status;
        return coopreduce_reduce(op, x, y, result, n_local, dtype, h, stream);
    }
    /* A shard of up to CR_DIST_LEAD_BYTES travels in the first exchange: if every rank's does,
     * that exchange gathers the whole array (lead_whole). Where this rank's shard travels so and
     * the others' may too, it does not wait for the exchange before its work (spec): a kernel
     * puts the array together where it was gathered whole and posts the metas to the host; the
     * canonical-order operations, whose segments the GPU checks itself, are reduced behind it as
     * one segment of the array's length, read from the device (a segment's bits are the 1-D
     * call's: docs/DETERMINISM.md, "Axis and segments"), and a last kernel makes the host's
     * checks and writes the result if they pass. The host waits for the posted metas alone and
     * makes the same checks. */
    const size_t es = cr_dtype_size(dtype);
    const int fits = h->device >= 0 && t->allgather_lead && p.inputs == 1 &&
                     n_local <= CR_DIST_LEAD_BYTES / es;
    int spec = fits && !mine.status && room && t->allgatherv && t->device_data;
    cr_meta_post post = {NULL, NULL, 0};
    if (spec && (mine.status = cr_dist_post(h, cache, R, &post)))
        spec = 0; /* this rank's failure travels in the first exchange, as any other */
    const int spec_reduce = spec && cr_gpu_segments_checked(&p) && !p.needs_element;
    const size_t lead_bytes = fits && !mine.status ? (size_t)n_local * es : 0;
    cr_meta *all = NULL;
    void *slots = NULL;
    coopreduce_status s, spec_err = COOPREDUCE_SUCCESS;
    if (spec) {
        /* room: the array, then (past this rank's gather limit) the offsets and the result */
        const uint64_t cap = (uint64_t)kib * 1024 / es;
        int64_t *offsets = (int64_t *)(room + (size_t)kib * 1024);
        char *scratch = (char *)offsets + 64;
        if ((s = cr_dist_first_exchange_deferred(t, h, &mine, x, lead_bytes, &slots, stream)))
            return s;
        spec_err = cr_gpu_lead_whole(h, slots, R, CR_DIST_SLOT_BYTES, es, CR_DIST_LEAD_BYTES / es,
                                     room, offsets, &post, stream);
        const int posted = !spec_err;
        if (!spec_err && spec_reduce) {
            spec_err = coopreduce_reduce_segments(op, room, NULL, scratch, cap, offsets, 1, dtype, h,
                                                  stream);
            if (!spec_err) {
                cr_gate g = cr_dist_gate(slots, R, &mine);
                g.es = es;
                g.lead_elems = CR_DIST_LEAD_BYTES / es; /* and the array gathered whole */
                spec_err = cr_gpu_commit(h, &g, scratch, result, p.result_size, stream);
            }
        }
        /* A failure of this rank's device after the exchange is its own (see the header); it
         * still takes part in what follows, so that no other rank waits for it. */
        s = posted ? cr_dist_first_exchange_posted(t, h, *cache, &mine, &post, &all, stream)
                   : cr_dist_first_exchange_fetched(t, h, &mine, slots, &all, stream);
    } else {
        s = cr_dist_first_exchange(t, h, &mine, &all, stream, x, lead_bytes, &slots);
    }
    if (s) return s;
    if ((s = cr_dist_check_agreement(t, h, all))) goto out;
    /* The global array. */
    uint64_t N = 0, offset = 0;
    for (int r = 0; r < R; r++) {
        if (r == me) offset = N;
        if (__builtin_add_overflow(N, all[r].n, &N)) {
            s = cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT,
                        "the shards' sizes add up to more than 2^64 elements");
            goto out;
        }
    }
    if (N > p.max_n) {
        s = cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT,
                    "%s of %s takes at most %llu elements; the shards hold %llu", cr_op_name(op),
                    cr_dtype(dtype)->name, (unsigned long long)p.max_n, (unsigned long long)N);
        goto out;
    }
    if (N == 0 && p.needs_element) {
        s = cr_fail(h, COOPREDUCE_ERROR_EMPTY,
                    "%s of an empty array is undefined (every rank's shard is empty)",
                    cr_op_name(op));
        goto out;
    }
    if (gather_whole_ok(t, all, R, N, &p)) {
        if (lead_whole(t, all, R, &p)) {
            /* put together by cr_gpu_lead_whole (every rank's shard traveling in the first
             * exchange, every rank took the path above); reduced and committed there too for
             * the operations spec_reduce takes */
            if (spec_err)
                s = spec_err;
            else if (!spec_reduce)
                s = coopreduce_reduce(op, room, NULL, result, N, dtype, h, stream);
        } else {
            s = gather_whole(t, *cache, h, &p, op, dtype, x, y, result, all, R, N, room, stream);
            if (!s) s = spec_err;
        }
        goto out;
    }
    cr_fp_state fp;
    cr_fp_enter(&fp); /* the host's arithmetic below, as the CPU path's */
    uint8_t res[16];
    memset(res, 0, sizeof res);
    char err[CR_DIST_ERR] = "";
    int32_t *st = malloc((size_t)R * sizeof *st);
    char *mine_c = NULL, *gathered = NULL;
    size_t slot = 0;
    tree_layout L;
    memset(&L, 0, sizeof L);
    coopreduce_status local = COOPREDUCE_SUCCESS;
    if (!st) {
        s = cr_fail(h, COOPREDUCE_ERROR_OUT_OF_MEMORY, "cannot allocate %d statuses", R);
        goto leave; /* cannot take part: nothing sensible remains */
    }
    const int tree = p.family == CR_FAMILY_CANONICAL || p.family == CR_FAMILY_ORDERED;
    if (tree) {
        if ((s = make_layout(h, &L, &p, all, R, N))) goto leave;
        for (int r = 0; r < R; r++) {
            const size_t b = contribution_bytes(&L, r);
            if (b > slot) slot = b;
        }
    } else if (p.family == CR_FAMILY_EXACT) {
        int lsb;
        slot = HEADER + (size_t)(exact_digits(&p, &lsb) + 1) * 8;
    } else {
        slot = HEADER + sizeof(scan_part);
    }
    slot = (slot + 15) / 16 * 16;
    mine_c = calloc(1, slot);
    gathered = malloc(slot * (size_t)R);
    if (!mine_c || !gathered) {
        s = cr_fail(h, COOPREDUCE_ERROR_OUT_OF_MEMORY, "cannot allocate %zu bytes of boundaries",
                    slot * (size_t)R);
        goto leave;
    }
    /* Over a transport whose collectives take device memory, a GPU's tree contribution is
     * exchanged from the device (no copy to the host and wait before the exchange). */
    const int dev_x = tree && h->device >= 0 && t->device_data;
    char *dslot = NULL;
    if (tree)
        local = tree_local(h, cache, &L, &p, me, x, y, mine_c, dev_x ? slot : 0, R, &dslot, stream);
    else if (p.family == CR_FAMILY_EXACT)
        local = exact_local(h, cache, &p, x, y, n_local, (int64_t *)(mine_c + HEADER), stream);
    else
        local = scan_local(h, &p, x, n_local, offset, (scan_part *)(mine_c + HEADER), stream);
    if (!local && spec_err) local = spec_err; /* this rank's device failed after the exchange */
    memcpy(mine_c, &(int32_t){(int32_t)local}, 4);
    /* (allgather and allgather_host are the same collective: a rank whose device slot could not
     * be made or written takes the host one, and the ranks still match) */
    int rc = 0;
    const coopreduce_status hs = dslot ? cr_gpu_store(h, dslot, mine_c, HEADER, stream) : 0;
    if (dslot && !hs) {
        rc = t->allgather(t->ctx, dslot, dslot + slot, slot, stream, err);
        if (!rc && (cr_gpu_copy(h, gathered, dslot + slot, slot * (size_t)R, stream) ||
                    cr_gpu_wait(h, stream))) {
            rc = 1;
            snprintf(err, sizeof err, "%.200s", h->err);
        }
    } else {
        /* the host slot holds no payload when the device one was in use: this rank failed */
        if (dslot && !local) local = hs;
        memcpy(mine_c, &(int32_t){(int32_t)local}, 4);
        rc = t->allgather_host(t->ctx, mine_c, gathered, slot, stream, err);
    }
    if (rc) {
        s = cr_dist_transport_fail(h, t, "exchanging the shards' boundaries", err);
        goto leave;
    }
    for (int r = 0; r < R; r++) memcpy(&st[r], gathered + (size_t)r * slot, 4);
    if ((s = cr_dist_agree(t, h, st, stream))) goto leave;
    if (tree) {
        s = tree_combine(h, &L, &p, gathered, slot, N, res);
    } else if (p.family == CR_FAMILY_EXACT) {
        exact_combine(&p, gathered, slot, R, N, res);
    } else {
        scan_part *parts = malloc((size_t)R * sizeof *parts);
        if (!parts) {
            s = cr_fail(h, COOPREDUCE_ERROR_OUT_OF_MEMORY, "cannot allocate %d results", R);
            goto leave;
        }
        for (int r = 0; r < R; r++) memcpy(&parts[r], gathered + (size_t)r * slot + HEADER, sizeof *parts);
        s = scan_combine(h, &p, parts, R, N, res);
        free(parts);
    }
    if (!s) {
        if (h->device >= 0) {
            s = cr_gpu_store(h, result, res, p.result_size, stream); /* in stream order */
        } else {
            memcpy(result, res, p.result_size);
            if (p.check_overflow) {
                uint64_t w[2];
                memcpy(w, res, 16);
                const int fits = dtype == COOPREDUCE_UINT64 ? w[1] == 0
                                                            : w[1] == ((w[0] >> 63) ? UINT64_MAX : 0);
                if (!fits)
                    s = cr_fail(h, COOPREDUCE_ERROR_OVERFLOW,
                                "the exact %s sum does not fit in 64 bits (the 128-bit sum is in "
                                "the result: high word 0x%016llx, low word 0x%016llx)",
                                cr_dtype(dtype)->name, (unsigned long long)w[1],
                                (unsigned long long)w[0]);
            }
        }
    }
leave:
    cr_fp_leave(&fp);
    free(L.known);
    free(st);
    free(mine_c);
    free(gathered);
out:
    free(all);
    return s;
}
