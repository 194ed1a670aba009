/* allreduce.c — the deterministic all-reduce: recv[i] on every rank is the reduction of the R
 * ranks' send[i] in rank order, i.e. coopreduce_reduce_axis(op, stacked, NULL, recv, 1, R,
 * count) of the stacked (R x count) array, whatever the transport, the message size or R.
 *
 * As a ring all-reduce moves its data: a reduce-scatter then an all-gather. The count is cut
 * into R slices of s = ceil(count / R) elements; an all-to-all gives rank q the R ranks' slice q,
 * i.e. the (R x s) block of the stacked array's columns q*s .. q*s+s-1; rank q reduces it along
 * axis 0 with coopreduce_reduce_axis on its own device (each column's result is the 1-D call's
 * bits on its R values: batch invariance, docs/DETERMINISM.md); an all-gather then gives every
 * rank every slice's results. Each rank sends and receives (R-1)/R of the data twice, as a ring
 * does; what is reduced where cannot change a bit. */
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "core/order.h"
#include "core/values.h"
#include "cpu/runtime.h"
#include "dist/protocol.h"

/* Memory on the data path: the handle's GPU (cache) or the host. */
typedef struct {
    void *send, *block, *out, *gathered; /* sendpad (or NULL), R x s, s results, R x s results */
    void *host;                          /* host staging (MPI with a GPU handle), or host buffers */
} bufs;

static size_t align256(size_t b) { return (b + 255) / 256 * 256; }

/* The CPU's reduction along axis 0 of an (R x s) block of float32 / float64 for the canonical
 * family (SUM, MEAN), R <= W (a chunk row's lanes), column by column as vectors: the canonical
 * order of R values is one chunk whose row 0 holds them, every other row -0.0 padding; each
 * lane's row tree is then its value (x + -0.0 == x), and the chunk's value is the lane tree, the
 * perfect pairwise tree over adjacent values padded with -0.0 to W lanes: level by level,
 * v[i] = v[2i] + v[2i+1], an odd last value carried as itself (+ -0.0, exact). The same bits as
 * coopreduce_reduce_axis (which calls the 1-D code once per column, too slow for millions of
 * columns of a few values), checked against it by tests/dist_check.c. The block is consumed. */
#define DEFINE_COLUMNS(NAME, T, QNAN, F64)                                                         \
    static void NAME(T *b, int R, uint64_t s, int mean, T *out)                                    \
    {                                                                                              \
        for (int m = R; m > 1; m = (m + 1) / 2)                                                    \
            for (int i = 0; i < m / 2; i++) {                                                      \
                T *a = b + (size_t)(2 * i) * s, *c = b + (size_t)(2 * i + 1) * s;                  \
                T *o = b + (size_t)i * s;                                                          \
                for (uint64_t j = 0; j < s; j++) o[j] = a[j] + c[j];                               \
                if (m % 2 && i == m / 2 - 1) {                                                     \
                    T *last = b + (size_t)(m - 1) * s, *to = b + (size_t)(i + 1) * s;              \
                    if (to != last) memmove(to, last, s * sizeof(T));                              \
                }                                                                                  \
            }                                                                                      \
        for (uint64_t j = 0; j < s; j++) {                                                         \
            double v = b[j];                                                                       \
            if (mean) v = cr_mean_of_float(v, (uint64_t)R, F64);                                   \
            T t = (T)v;                                                                            \
            if (t != t) memcpy(&t, &(QNAN), sizeof t);                                             \
            out[j] = t;                                                                            \
        }                                                                                          \
    }
static const uint32_t nan32 = CR_NAN_F32;
static const uint64_t nan64 = CR_NAN_F64;
DEFINE_COLUMNS(columns_f32, float, nan32, 0)
DEFINE_COLUMNS(columns_f64, double, nan64, 1)

/* Whether the GPU reduces the block by its columns kernel, which can read the rank's own row
 * where it lies (reduce_block's own). */
static int gpu_columns(const coopreduce_handle *h, const cr_plan *p, int R)
{
    const int lanes = p->acc == COOPREDUCE_FLOAT64 ? CR_LANES_F64 : CR_LANES_F32;
    return h->device >= 0 && (p->family == CR_FAMILY_CANONICAL || p->family == CR_FAMILY_ORDERED) &&
           R <= lanes;
}

/* The (R x s) block along axis 0 into out (s results), on the handle's device: the columns of
 * the canonical family by the CPU's vectors or the GPU's columns kernel, else
 * coopreduce_reduce_axis. Row me is read at own where own is not NULL (gpu_columns only). The
 * block may be consumed. */
static coopreduce_status reduce_block(coopreduce_handle *h, const cr_plan *p, coopreduce_op op,
                                      coopreduce_dtype dtype, char *block, const char *own,
                                      int me, int R, uint64_t s, char *out, void *stream)
{
    const int gpu = h->device >= 0;
    const int lanes = p->acc == COOPREDUCE_FLOAT64 ? CR_LANES_F64 : CR_LANES_F32;
    if (gpu_columns(h, p, R))
        return cr_gpu_allreduce_columns(h, p, block, own, me, R, s, 0, out, NULL, stream);
    if (!gpu && p->family == CR_FAMILY_CANONICAL && R <= lanes) {
        cr_fp_state fp;
        cr_fp_enter(&fp);
        if (dtype == COOPREDUCE_FLOAT64)
            columns_f64((double *)block, R, s, op == COOPREDUCE_OP_MEAN, (double *)out);
        else
            columns_f32((float *)block, R, s, op == COOPREDUCE_OP_MEAN, (float *)out);
        cr_fp_leave(&fp);
        return COOPREDUCE_SUCCESS;
    }
    return coopreduce_reduce_axis(op, block, NULL, out, 1, (uint64_t)R, s, dtype, h, stream);
}

/* The first exchange's slots as a block of R rows of CR_DIST_SLOT_BYTES / es elements (each
 * rank's meta, then its data), reduced whole along axis 0 into the cache (the metas' columns
 * give results nobody reads: one collective carries both); *wanted: the results of the data's
 * first column on. Nothing is reduced for count 0. */
static coopreduce_status reduce_slots(coopreduce_handle *h, cr_dist_cache **cache, const cr_plan *p,
                                      coopreduce_op op, coopreduce_dtype dtype, void *slots,
                                      int me, int R, uint64_t count, char **wanted, void *stream)
{
    const size_t es = cr_dtype_size(dtype);
    const uint64_t cols = CR_DIST_SLOT_BYTES / es;
    void *out = NULL;
    coopreduce_status s = cr_dist_device_buffer(h, cache, (size_t)cols * p->result_size, &out);
    if (s) return s;
    *wanted = (char *)out + CR_DIST_META_BYTES / es * p->result_size;
    if (count == 0) return COOPREDUCE_SUCCESS;
    s = reduce_block(h, p, op, dtype, slots, NULL, me, R, cols, out, stream);
    return s == COOPREDUCE_ERROR_OVERFLOW ? COOPREDUCE_SUCCESS : s; /* a GPU handle's rule */
}

CR_EXPORT coopreduce_status cr_dist_allreduce(const cr_dist_transport *t, cr_dist_cache **cache,
                                              const void *send, void *recv, uint64_t count,
                                              coopreduce_dtype dtype, coopreduce_op op,
                                              coopreduce_handle *h, void *stream)
{
    const int R = t->size, me = t->rank;
    cr_plan p;
    const coopreduce_status own =
        op == COOPREDUCE_OP_DOT
            ? cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT,
                      "dot reduces two arrays; the all-reduce reduces one per rank")
            : cr_dist_local_checks(h, op, dtype, send, NULL, recv, count, &p);
    cr_meta mine = cr_dist_meta(t, cache, h, 2, count, op, dtype, own);
    if (!mine.status && !recv && count > 0)
        mine.status = cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT, "recv is NULL");
    if (R == 1 && !cr_dist_full_protocol()) {
        /* One rank: recv is the reduction of its one row (no exchange). */
        if (mine.status) return (coopreduce_status)mine.status;
        /* (count rows of one value: the same results as one row of count columns, and the
         * layout the GPU's kernels for many rows take in one launch) */
        return coopreduce_reduce_axis(op, send, NULL, recv, count, 1, 1, dtype, h, stream);
    }
    /* A small all-reduce travels whole in the first exchange where the transport can carry it
     * (every rank knows the same count after it, so every rank takes the same path). */
    const size_t lead_bytes = !mine.status && h->device >= 0 &&
                                      count <= CR_DIST_LEAD_BYTES / cr_dtype_size(dtype)
                                  ? (size_t)count * cr_dtype_size(dtype)
                                  : 0;
    coopreduce_status s;
    void *lead = NULL;
    char *wanted = NULL;
    cr_meta_post post = {NULL, NULL, 0};
    const int small = t->allgather_lead && (mine.status || lead_bytes || count == 0);
    if (small && !t->deferred_errors && !mine.status)
        mine.status = cr_dist_post(h, cache, R, &post); /* a failure travels in the exchange */
    if (small && (t->deferred_errors || !mine.status)) {
        /* No wait for the exchange before the work: the slots are reduced by a kernel that
         * first checks every rank's meta (its gate: gpu/kernel/gate.cuh) and writes the results
         * only if every check passes (the columns kernel, straight into recv; else a last
         * kernel copies them). Deferred: the call returns; a failure is recorded for
         * coopreduce_comm_deferred_error (a rank whose own checks failed makes the exchange, so
         * that none waits, and reports its own failure now). Otherwise the gate posts the metas,
         * and the host waits for them alone and makes the same checks, failing as the waiting
         * path does. */
        s = cr_dist_first_exchange_deferred(t, h, &mine, send, lead_bytes, &lead, stream);
        if (s || mine.status) return s ? s : (coopreduce_status)mine.status;
        cr_dist_cache *c = *cache;
        if (t->deferred_errors && !c->rec &&
            (s = cr_gpu_mapped_alloc(h, sizeof *c->rec, (void **)&c->rec, &c->rec_dev)))
            return s;
        cr_gate g = cr_dist_gate(lead, R, &mine);
        g.rec = t->deferred_errors ? c->rec_dev : NULL;
        g.post = post;
        if (gpu_columns(h, &p, R)) {
            s = cr_gpu_allreduce_columns(h, &p, (char *)lead + CR_DIST_META_BYTES, NULL, me, R,
                                         count, CR_DIST_SLOT_BYTES, recv, &g, stream);
        } else {
            s = reduce_slots(h, cache, &p, op, dtype, lead, me, R, count, &wanted, stream);
            if (!s) s = cr_gpu_commit(h, &g, wanted, recv, (size_t)count * p.result_size, stream);
        }
        if (t->deferred_errors) return s;
        /* A failure of this rank's device after the exchange is its own, but it still makes the
         * checks (they exchange messages where some rank failed its own: none may wait); a
         * failure they agree on is what every rank reports. */
        cr_meta *all = NULL;
        coopreduce_status w = !s ? cr_dist_first_exchange_posted(t, h, c, &mine, &g.post, &all, stream)
                                 : cr_dist_first_exchange_fetched(t, h, &mine, lead, &all, stream);
        if (!w) w = cr_dist_check_agreement(t, h, all);
        free(all);
        return w ? w : s;
    }
    cr_meta *all = NULL;
    s = cr_dist_first_exchange(t, h, &mine, &all, stream, send, lead_bytes, &lead);
    if (s) return s;
    s = cr_dist_check_agreement(t, h, all);
    free(all);
    if (s || count == 0) return s;

    const uint64_t sl = (count + (uint64_t)R - 1) / (uint64_t)R; /* slice */
    const size_t es = cr_dtype_size(dtype), rs = p.result_size;
    const size_t in_bytes = (size_t)sl * es, out_bytes = (size_t)sl * rs;
    const int gpu = h->device >= 0, on_device = gpu && t->device_data;
    const int padded = sl * (uint64_t)R != count;
    char err[CR_DIST_ERR] = "";
    /* Buffers: [sendpad][block][out][gathered] in one allocation. */
    const size_t b_send = padded ? align256(in_bytes * (size_t)R) : 0;
    const size_t b_block = align256(in_bytes * (size_t)R), b_out = align256(out_bytes);
    const size_t b_gath = align256(out_bytes * (size_t)R);
    const size_t total = b_send + b_block + b_out + b_gath;
    char *mem = NULL, *host = NULL;
    if (gpu) {
        void *d = NULL;
        if ((s = cr_dist_device_buffer(h, cache, total, &d))) goto done;
        mem = d;
    }
    if (!on_device && !(host = malloc(total))) {
        s = cr_fail(h, COOPREDUCE_ERROR_OUT_OF_MEMORY, "cannot allocate %zu bytes", total);
        goto done;
    }
    /* dev: where the local reduction runs; net: what the transport takes */
    char *dev = gpu ? mem : host, *net = on_device ? mem : host;
    const char *src = send, *own_row = NULL;
    if (padded) {
        s = gpu ? cr_gpu_copy(h, dev, send, (size_t)count * es, stream)
                : (memcpy(dev, send, (size_t)count * es), COOPREDUCE_SUCCESS);
        if (s) goto done;
        if (!gpu) memset(dev + (size_t)count * es, 0, (size_t)R * in_bytes - (size_t)count * es);
        src = dev;
    }
    /* reduce-scatter: the all-to-all */
    if (gpu && !on_device) { /* stage through the host */
        if ((s = cr_gpu_copy(h, net + b_block, src, (size_t)R * in_bytes, stream)) ||
            (s = cr_gpu_wait(h, stream)))
            goto done;
        src = net + b_block;
        /* the all-to-all may not read and write one buffer: receive into the send slot */
        if (t->alltoall(t->ctx, src, net, in_bytes, 1, stream, err)) goto comm_fail;
        if ((s = cr_gpu_copy(h, dev + b_send, net, (size_t)R * in_bytes, stream))) goto done;
    } else {
        /* the GPU's columns kernel reads this rank's own slice where it lies: no copy of it */
        own_row = gpu_columns(h, &p, R) ? src + (size_t)me * in_bytes : NULL;
        if (t->alltoall(t->ctx, src, net + b_send, in_bytes, own_row == NULL, stream, err))
            goto comm_fail;
    }
    /* the local reduction of the (R x s) block along axis 0: where every slice is whole and the
     * transport gathers from memory the reduction can write, straight into this rank's slice of
     * recv, for an all-gather in place (out of place, ncclAllGather also copies the rank's own
     * slice: 552 against 526 us in place for 128 MB a rank on two H100s) */
    const int in_place = !padded && (on_device || !gpu);
    char *res = in_place ? (char *)recv + (size_t)me * out_bytes : dev + b_send + b_block;
    s = reduce_block(h, &p, op, dtype, dev + b_send, own_row, me, R, sl, res, stream);
    if (s == COOPREDUCE_ERROR_OVERFLOW) s = COOPREDUCE_SUCCESS; /* checked on the whole below */
    if (s) goto done; /* (the other ranks' collectives below then fail or wait: see the header) */
    /* all-gather */
    if (gpu && !on_device) {
        if ((s = cr_gpu_copy(h, net, res, out_bytes, stream)) || (s = cr_gpu_wait(h, stream)))
            goto done;
        if (t->allgather(t->ctx, net, net + b_send + b_block + b_out, out_bytes, stream, err))
            goto comm_fail;
        s = cr_gpu_copy(h, recv, net + b_send + b_block + b_out, (size_t)count * rs, stream);
        if (!s) s = cr_gpu_wait(h, stream);
        goto done;
    }
    if (!padded) {
        if (t->allgather(t->ctx, res, recv, out_bytes, stream, err)) goto comm_fail;
    } else {
        char *g = net + b_send + b_block + b_out;
        if (t->allgather(t->ctx, res, g, out_bytes, stream, err)) goto comm_fail;
        if (gpu)
            s = cr_gpu_copy(h, recv, g, (size_t)count * rs, stream);
        else
            memcpy(recv, g, (size_t)count * rs);
    }
    if (!s && !gpu && p.check_overflow) {
        for (uint64_t i = 0; i < count; i++) {
            uint64_t w[2];
            memcpy(w, (char *)recv + i * 16, 16);
            const int fits =
                dtype == COOPREDUCE_UINT64 ? w[1] == 0 : w[1] == ((w[0] >> 63) ? UINT64_MAX : 0);
            if (!fits) {
                s = cr_fail(h, COOPREDUCE_ERROR_OVERFLOW,
                            "element %llu: the exact %s sum does not fit in 64 bits (the 128-bit "
                            "sum is in recv)",
                            (unsigned long long)i, cr_dtype(dtype)->name);
                break;
            }
        }
    }
    goto done;
comm_fail:
    s = cr_dist_transport_fail(h, t, "the all-reduce's data exchange", err);
done:
    free(host);
    return s;
}
