/* protocol.c — the exchanges every distributed call begins with, and how ranks agree on a failure
 * (protocol.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "dist/protocol.h"

CR_EXPORT coopreduce_status cr_dist_fail(coopreduce_handle *h, coopreduce_status s,
                                         const char *fmt, ...)
{
    char msg[sizeof h->err];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return cr_fail(h, s, "%s", msg);
}

CR_EXPORT void cr_dist_cache_free(cr_dist_cache *c)
{
    if (!c) return;
    cr_gpu_release(c->device, c->dev);
    cr_gpu_mapped_free((void *)c->rec);
    cr_gpu_mapped_free(c->post);
    free(c->host);
    free(c->sizes);
    free(c);
}

coopreduce_status cr_dist_cache_get(coopreduce_handle *h, cr_dist_cache **cache)
{
    if (!*cache) {
        *cache = calloc(1, sizeof **cache);
        if (!*cache) return cr_fail(h, COOPREDUCE_ERROR_OUT_OF_MEMORY, "cannot allocate a cache");
        (*cache)->device = -1;
    }
    return COOPREDUCE_SUCCESS;
}

coopreduce_status cr_dist_device_buffer(coopreduce_handle *h, cr_dist_cache **cache, size_t bytes,
                                        void **p)
{
    coopreduce_status s = cr_dist_cache_get(h, cache);
    if (s) return s;
    cr_dist_cache *c = *cache;
    if (c->dev && c->device == h->device && c->dev_bytes >= bytes) {
        *p = c->dev;
        return COOPREDUCE_SUCCESS;
    }
    void *np = NULL;
    const size_t want = bytes < 4096 ? 4096 : bytes + bytes / 4;
    s = cr_gpu_alloc(h, want, &np);
    if (s) return s;
    cr_gpu_release(c->device, c->dev);
    c->dev = np;
    c->dev_bytes = want;
    c->device = h->device;
    *p = np;
    return COOPREDUCE_SUCCESS;
}

int cr_dist_gather_kib(void)
{
    const char *v = getenv("COOPREDUCE_DIST_GATHER_KIB");
    if (!v || !*v) return 1024;
    const long k = strtol(v, NULL, 10);
    return k < 0 ? 0 : k > (1 << 20) ? (1 << 20) : (int)k;
}

CR_EXPORT int cr_dist_pack_lead(int device, void *dst, const void *meta, const void *data,
                                size_t data_bytes, void *stream, char *err)
{
    const char *e = cr_gpu_pack_lead(device, dst, meta, data, data_bytes, stream);
    if (!e) return 0;
    snprintf(err, CR_DIST_ERR, "packing the first exchange: %s", e);
    return -1;
}

int cr_dist_full_protocol(void)
{
    const char *v = getenv("COOPREDUCE_DIST_FULL_PROTOCOL");
    return v && v[0] == '1';
}

coopreduce_status cr_dist_transport_fail(coopreduce_handle *h, const cr_dist_transport *t,
                                         const char *what, const char *err)
{
    return cr_fail(h, COOPREDUCE_ERROR_COMMUNICATION, "%s over %s failed: %s", what, t->name, err);
}

/* This thread's or handle's message. */
static const char *own_message(const coopreduce_handle *h)
{
    return h ? h->err : cr_thread_error();
}

coopreduce_status cr_dist_agree(const cr_dist_transport *t, coopreduce_handle *h,
                                const int32_t *statuses, void *stream)
{
    const int R = t->size, me = t->rank;
    int first = -1;
    for (int r = 0; r < R && first < 0; r++)
        if (statuses[r] != COOPREDUCE_SUCCESS) first = r;
    if (first < 0) return COOPREDUCE_SUCCESS;
    if (t->deferred_errors) {
        /* No exchange of messages (a rank whose call deferred does not take part in one) */
        if (statuses[me] != COOPREDUCE_SUCCESS) return (coopreduce_status)statuses[me];
        return cr_fail(h, COOPREDUCE_ERROR_OTHER_RANK,
                       "rank %d of %d failed (%s); its message is on that rank (the communicator "
                       "defers errors, and exchanges no messages)",
                       first, R, coopreduce_status_string((coopreduce_status)statuses[first]));
    }
    /* Everyone knows someone failed: every rank joins the exchange of messages. */
    enum { MSG = 256 };
    char mine[MSG];
    memset(mine, 0, sizeof mine);
    if (statuses[me] != COOPREDUCE_SUCCESS) {
        const char *m = own_message(h);
        const size_t len = strlen(m) < MSG - 1 ? strlen(m) : MSG - 1;
        memcpy(mine, m, len);
    }
    char *all = malloc((size_t)R * MSG);
    char err[CR_DIST_ERR] = "";
    const int rc = all ? t->allgather_host(t->ctx, mine, all, MSG, stream, err) : -1;
    if (statuses[me] != COOPREDUCE_SUCCESS) {
        free(all);
        return (coopreduce_status)statuses[me]; /* its own message stands */
    }
    char msg[MSG] = "(its message could not be exchanged)";
    if (rc == 0) {
        memcpy(msg, all + (size_t)first * MSG, MSG);
        msg[MSG - 1] = 0;
    }
    free(all);
    return cr_fail(h, COOPREDUCE_ERROR_OTHER_RANK, "rank %d of %d failed (%s): %s", first, R,
                   coopreduce_status_string((coopreduce_status)statuses[first]), msg);
}

/* The message for rank r's call (b) differing from rank 0's (a): the first field that differs
 * (meta.h: cr_meta_disagreement) and both values. Returns that field (CR_FIELD_NONE, and no
 * message, when they agree). */
static int disagreement_message(const cr_meta *a, const cr_meta *b, int r, char *msg, size_t ms)
{
    const int field = cr_meta_disagreement(a, b);
    const char *what = "arguments";
    char va[64] = "", vb[64] = "";
    switch (field) {
    case CR_FIELD_NONE: return CR_FIELD_NONE;
    case CR_FIELD_OP:
        what = "operation";
        snprintf(va, sizeof va, "%s", coopreduce_op_name((coopreduce_op)a->op));
        snprintf(vb, sizeof vb, "%s", coopreduce_op_name((coopreduce_op)b->op));
        break;
    case CR_FIELD_DTYPE:
        what = "dtype";
        snprintf(va, sizeof va, "%s", coopreduce_dtype_name((coopreduce_dtype)a->dtype));
        snprintf(vb, sizeof vb, "%s", coopreduce_dtype_name((coopreduce_dtype)b->dtype));
        break;
    case CR_FIELD_MODE:
        what = "mode";
        snprintf(va, sizeof va, "%s", coopreduce_mode_name((coopreduce_mode)a->mode));
        snprintf(vb, sizeof vb, "%s", coopreduce_mode_name((coopreduce_mode)b->mode));
        break;
    case CR_FIELD_NARROW:
        what = "narrow-result setting";
        snprintf(va, sizeof va, "%d", a->narrow);
        snprintf(vb, sizeof vb, "%d", b->narrow);
        break;
    case CR_FIELD_METHOD:
        what = "method";
        snprintf(va, sizeof va, "%s", coopreduce_method_name((coopreduce_method)a->method));
        snprintf(vb, sizeof vb, "%s", coopreduce_method_name((coopreduce_method)b->method));
        break;
    case CR_FIELD_COUNT:
        what = "count";
        snprintf(va, sizeof va, "%llu", (unsigned long long)a->n);
        snprintf(vb, sizeof vb, "%llu", (unsigned long long)b->n);
        break;
    }
    snprintf(msg, ms,
             "the ranks disagree on the %s: rank 0 has %s, rank %d has %s (every rank must pass "
             "the same one)",
             what, va[0] ? va : "?", r, vb[0] ? vb : "?");
    return field;
}

/* The message for a rank whose meta is not of this call (meta.h: cr_meta_other_call). */
static void not_same_call(const cr_meta *me, const cr_meta *other, int r, char *msg, size_t ms)
{
    const char *kind = me->call == 1 ? "sharded reduction" : "all-reduce";
    if (other->magic == CR_META_MAGIC && other->call == me->call && other->serial != me->serial)
        snprintf(msg, ms,
                 "rank %d is at another call of the communicator (its call %u, this rank's %u, a "
                 "%s): every rank of the communicator must make the same distributed calls in "
                 "the same order",
                 r, (unsigned)other->serial, (unsigned)me->serial, kind);
    else
        snprintf(msg, ms,
                 "rank %d is not in the same call (a %s here): every rank of the communicator "
                 "must make the same distributed calls in the same order",
                 r, kind);
}

/* The checks every rank makes on the gathered metas, in order: a rank in another call (named,
 * no messages exchanged), then the ranks' own failures (cr_dist_agree). */
static coopreduce_status exchange_checks(const cr_dist_transport *t, coopreduce_handle *h,
                                         const cr_meta *me, const cr_meta *all, void *stream)
{
    const int R = t->size;
    int bad;
    const int kind = cr_meta_first_failure((const unsigned char *)all, sizeof *all, R, me, &bad);
    if (kind == CR_DEFER_NOT_SAME_CALL) {
        /* A rank in another collective call (or another library version): say so on every rank
         * (the exchange of messages would pair with that rank's other call, so none is made). */
        char msg[sizeof h->err];
        not_same_call(me, &all[bad], bad, msg, sizeof msg);
        return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT, "%s", msg);
    }
    if (kind != CR_DEFER_RANK_FAILED) return COOPREDUCE_SUCCESS; /* (disagreements: below) */
    int32_t *st = malloc((size_t)R * sizeof *st);
    if (!st) return cr_fail(h, COOPREDUCE_ERROR_OUT_OF_MEMORY, "cannot allocate %d statuses", R);
    for (int r = 0; r < R; r++) st[r] = all[r].status;
    const coopreduce_status s = cr_dist_agree(t, h, st, stream);
    free(st);
    return s;
}

/* The gathered metas at all (malloc'd) checked: *all_out = all where they pass, else all freed
 * and the agreed failure returned. */
static coopreduce_status checked(const cr_dist_transport *t, coopreduce_handle *h,
                                 const cr_meta *me, cr_meta *all, cr_meta **all_out, void *stream)
{
    const coopreduce_status s = exchange_checks(t, h, me, all, stream);
    if (s) {
        free(all);
        return s;
    }
    *all_out = all;
    return COOPREDUCE_SUCCESS;
}

static coopreduce_status metas_alloc(coopreduce_handle *h, int R, cr_meta **all)
{
    *all = calloc((size_t)R, sizeof **all);
    return *all ? COOPREDUCE_SUCCESS
                : cr_fail(h, COOPREDUCE_ERROR_OUT_OF_MEMORY, "cannot allocate %d ranks' metadata",
                          R);
}

/* Where cr_dist_post's tag lies after the cache's posted metas (host or device address). */
static volatile uint32_t *post_tag(void *base, int ranks)
{
    return (volatile uint32_t *)((char *)base + (size_t)ranks * sizeof(cr_meta));
}

coopreduce_status cr_dist_first_exchange(const cr_dist_transport *t, coopreduce_handle *h,
                                         const cr_meta *me, cr_meta **all_out, void *stream,
                                         const void *data, size_t data_bytes, void **data_all)
{
    *all_out = NULL;
    cr_meta *all;
    /* (without it this rank cannot take part: the others will wait; nothing better can be done
     * without memory) */
    coopreduce_status s = metas_alloc(h, t->size, &all);
    if (s) return s;
    char err[CR_DIST_ERR] = "";
    void *lead = NULL;
    if (data_all) *data_all = NULL;
    const int rc = t->allgather_lead
                       ? t->allgather_lead(t->ctx, me, data, data_bytes, &lead, all, stream, err)
                       : t->allgather_host(t->ctx, me, all, sizeof *me, stream, err);
    if (data_all) *data_all = lead;
    if (rc) {
        free(all);
        return cr_dist_transport_fail(h, t, "exchanging the call's arguments", err);
    }
    return checked(t, h, me, all, all_out, stream);
}

coopreduce_status cr_dist_post(coopreduce_handle *h, cr_dist_cache **cache, int R,
                               cr_meta_post *post)
{
    coopreduce_status s = cr_dist_cache_get(h, cache);
    if (s) return s;
    cr_dist_cache *c = *cache;
    if (c->post_ranks < R) {
        void *hp = NULL, *dp = NULL;
        if ((s = cr_gpu_mapped_alloc(h, (size_t)R * sizeof(cr_meta) + 64, &hp, &dp))) /* + tag */
            return s;
        cr_gpu_mapped_free(c->post);
        c->post = hp;
        c->post_dev = dp;
        c->post_ranks = R;
    }
    if (++c->post_seq == 0) c->post_seq = 1;
    post->metas = c->post_dev;
    post->tag = post_tag(c->post_dev, c->post_ranks);
    post->seq = c->post_seq;
    return COOPREDUCE_SUCCESS;
}

cr_gate cr_dist_gate(const void *slots, int R, const cr_meta *mine)
{
    cr_gate g;
    memset(&g, 0, sizeof g);
    g.metas = slots;
    g.stride = CR_DIST_SLOT_BYTES;
    g.R = R;
    g.mine = *mine;
    return g;
}

coopreduce_status cr_dist_first_exchange_posted(const cr_dist_transport *t, coopreduce_handle *h,
                                                cr_dist_cache *c, const cr_meta *me,
                                                const cr_meta_post *post, cr_meta **all_out,
                                                void *stream)
{
    *all_out = NULL;
    coopreduce_status s = cr_gpu_wait_posted(h, post_tag(c->post, c->post_ranks), post->seq, stream);
    cr_meta *all;
    if (s || (s = metas_alloc(h, t->size, &all))) return s;
    memcpy(all, c->post, (size_t)t->size * sizeof *all);
    return checked(t, h, me, all, all_out, stream);
}

coopreduce_status cr_dist_first_exchange_fetched(const cr_dist_transport *t, coopreduce_handle *h,
                                                 const cr_meta *me, const void *slots,
                                                 cr_meta **all_out, void *stream)
{
    *all_out = NULL;
    cr_meta *all;
    coopreduce_status s = metas_alloc(h, t->size, &all);
    if (s) return s;
    for (int r = 0; r < t->size && !s; r++)
        s = cr_gpu_copy(h, &all[r], (const char *)slots + (size_t)r * CR_DIST_SLOT_BYTES,
                        sizeof *all, stream);
    if (!s) s = cr_gpu_wait(h, stream);
    if (s) {
        free(all);
        return s;
    }
    return checked(t, h, me, all, all_out, stream);
}

coopreduce_status cr_dist_check_agreement(const cr_dist_transport *t, coopreduce_handle *h,
                                          const cr_meta *all)
{
    for (int r = 1; r < t->size; r++) {
        char msg[sizeof h->err];
        if (disagreement_message(&all[0], &all[r], r, msg, sizeof msg))
            return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT, "%s", msg);
    }
    return COOPREDUCE_SUCCESS;
}

coopreduce_status cr_dist_first_exchange_deferred(const cr_dist_transport *t, coopreduce_handle *h,
                                                  const cr_meta *me, const void *data,
                                                  size_t data_bytes, void **slots,
                                                  void *stream)
{
    char err[CR_DIST_ERR] = "";
    if (t->allgather_lead(t->ctx, me, data, data_bytes, slots, NULL, stream, err))
        return cr_dist_transport_fail(h, t, "exchanging the call's arguments", err);
    return COOPREDUCE_SUCCESS;
}

CR_EXPORT coopreduce_status cr_dist_deferred_error(cr_dist_cache *c, coopreduce_handle *h)
{
    if (!c || !c->rec || !c->rec->set) return COOPREDUCE_SUCCESS;
    cr_deferred d;
    memcpy(&d, (const void *)c->rec, sizeof d);
    char msg[sizeof h->err];
    coopreduce_status s = COOPREDUCE_ERROR_INVALID_ARGUMENT;
    switch (d.kind) {
    case CR_DEFER_RANK_FAILED:
        s = COOPREDUCE_ERROR_OTHER_RANK;
        snprintf(msg, sizeof msg, "rank %d failed (%s); its message is on that rank", d.rank,
                 coopreduce_status_string((coopreduce_status)d.bad.status));
        break;
    case CR_DEFER_DISAGREE: disagreement_message(&d.first, &d.bad, d.rank, msg, sizeof msg); break;
    default: {
        cr_meta me = d.first;
        me.call = 2;
        me.serial = d.serial;
        me.magic = CR_META_MAGIC;
        not_same_call(&me, &d.bad, d.rank, msg, sizeof msg);
    }
    }
    c->rec->set = 0;
    return cr_fail(h, s,
                   "a deferred all-reduce (call %u of the communicator) failed, its results not "
                   "written: %s",
                   (unsigned)d.serial, msg);
}

cr_meta cr_dist_meta(const cr_dist_transport *t, cr_dist_cache **cache, coopreduce_handle *h,
                     int call, uint64_t n, coopreduce_op op, coopreduce_dtype dtype,
                     coopreduce_status status)
{
    cr_meta m;
    memset(&m, 0, sizeof m);
    m.magic = CR_META_MAGIC;
    m.call = call;
    /* every call counts, whatever its own checks say: the ranks' serials stay in step */
    const coopreduce_status cs = cr_dist_cache_get(h, cache);
    if (!cs) m.serial = ++(*cache)->serial;
    if (!status) status = cs;
    m.n = n;
    m.op = (int32_t)op;
    m.dtype = (int32_t)dtype;
    m.status = status;
    if (h) {
        m.mode = (int32_t)h->mode;
        m.narrow = h->narrow;
        m.method = (int32_t)h->method;
        m.device = h->device;
    }
    if (!m.status && t->gpu_only && h->device < 0)
        m.status = cr_fail(h, COOPREDUCE_ERROR_WRONG_DEVICE,
                           "the %s communicator takes GPU handles only (use MPI for CPU "
                           "handles)", t->name);
    return m;
}

coopreduce_status cr_dist_local_checks(coopreduce_handle *h, coopreduce_op op,
                                       coopreduce_dtype dtype, const void *x, const void *y,
                                       const void *result, uint64_t n, cr_plan *p)
{
    memset(p, 0, sizeof *p);
    if (!h) return cr_fail(NULL, COOPREDUCE_ERROR_INVALID_ARGUMENT, "handle is NULL");
    coopreduce_status s =
        cr_plan_make(h, op, dtype, h->mode, h->method, h->device, h->narrow, p);
    if (s) return s;
    if (p->family == CR_FAMILY_METHOD)
        return cr_fail(h, COOPREDUCE_ERROR_NOT_SUPPORTED,
                       "method \"%s\" is not deterministic across devices; distributed "
                       "reductions need the canonical method",
                       cr_method_name(h->method));
    if ((s = cr_check_pointers(h, p, x, y, result, n))) return s;
    /* memory the handle's GPU can read, as every GPU call checks (here before the exchanges,
     * which may read it before any kernel would fail) */
    if (h->device >= 0 && (s = cr_gpu_check_inputs(h, p->inputs, x, y, result, n))) return s;
    if (n > p->max_n)
        return cr_fail(h, COOPREDUCE_ERROR_INVALID_ARGUMENT,
                       "%llu elements are more than %s of %s takes",
                       (unsigned long long)n, cr_op_name(op), cr_dtype(dtype)->name);
    return COOPREDUCE_SUCCESS;
}
