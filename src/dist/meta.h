/* meta.h — what every rank tells the others at the start of a distributed call (the first
 * exchange, protocol.c), and what a deferred call records when the ranks' calls do not match:
 * plain structs with the same layout on every rank, on the host and on the device (gpu/lead.cu
 * checks a deferred call's metas there). */
#ifndef COOPREDUCE_DIST_META_H
#define COOPREDUCE_DIST_META_H

#include <stddef.h>
#include <stdint.h>

#define CR_META_MAGIC 0x32445243u /* "CRD2" */

/* One rank's call (64 bytes). */
typedef struct {
    uint32_t magic;
    int32_t status; /* the rank's own checks: COOPREDUCE_SUCCESS or the failure */
    uint64_t n;     /* elements of its shard (sharded) or count (all-reduce) */
    int32_t call;   /* 1: sharded reduction, 2: all-reduce */
    int32_t op, dtype, mode, narrow, method;
    int32_t device;     /* -1: a CPU handle */
    uint32_t serial;    /* the communicator's count of its calls: the same on every rank */
    int32_t gather_kib; /* sharded: the largest array gathered whole, KiB (the smallest decides) */
    int32_t pad[3];
} cr_meta;

#ifdef __CUDACC__
#define CR_META_FN static inline __host__ __device__
#else
#define CR_META_FN static inline
#endif

/* Whether m is not of the same call as me: another kind of call, another of the communicator's
 * calls (its serial), or another library version (its magic). */
CR_META_FN int cr_meta_other_call(const cr_meta *me, const cr_meta *m)
{
    return m->magic != CR_META_MAGIC || m->call != me->call || m->serial != me->serial;
}

/* What every rank must pass alike, in the order the checks name it. */
enum {
    CR_FIELD_NONE = 0,
    CR_FIELD_OP,
    CR_FIELD_DTYPE,
    CR_FIELD_MODE,
    CR_FIELD_NARROW,
    CR_FIELD_METHOD,
    CR_FIELD_COUNT /* an all-reduce's count */
};

/* The first field in which rank b's call differs from rank a's, or CR_FIELD_NONE: the host's
 * check (protocol.c) and the device's gates (gpu/kernel/gate.cuh) alike. */
CR_META_FN int cr_meta_disagreement(const cr_meta *a, const cr_meta *b)
{
    if (a->op != b->op) return CR_FIELD_OP;
    if (a->dtype != b->dtype) return CR_FIELD_DTYPE;
    if (a->mode != b->mode) return CR_FIELD_MODE;
    if (a->narrow != b->narrow) return CR_FIELD_NARROW;
    if (a->method != b->method) return CR_FIELD_METHOD;
    if (a->call == 2 && a->n != b->n) return CR_FIELD_COUNT;
    return CR_FIELD_NONE;
}

/* What the ranks' calls have wrong (also why a deferred call failed: cr_deferred.kind). */
enum {
    CR_DEFER_NONE = 0,
    CR_DEFER_NOT_SAME_CALL = 1, /* a rank's meta is of another call (kind, serial, version) */
    CR_DEFER_RANK_FAILED = 2,   /* a rank's own checks failed */
    CR_DEFER_DISAGREE = 3       /* a rank's arguments differ from rank 0's */
};

/* The first thing wrong with the R gathered metas (`stride` bytes apart) seen from this rank's
 * own (me), in the order the host's checks report them (protocol.c: cr_dist_first_exchange's,
 * then cr_dist_check_agreement's): a rank in another call, then a rank whose own checks failed,
 * then a rank whose arguments differ from rank 0's; *rank names it. CR_DEFER_NONE when the calls
 * agree. The host and the device's gates (gpu/kernel/gate.cuh) alike. */
CR_META_FN int cr_meta_first_failure(const unsigned char *metas, size_t stride, int R,
                                     const cr_meta *me, int *rank)
{
#define CR_META_AT(r) ((const cr_meta *)(metas + (size_t)(r) * stride))
    for (int r = 0; r < R; r++)
        if (cr_meta_other_call(me, CR_META_AT(r))) return *rank = r, CR_DEFER_NOT_SAME_CALL;
    for (int r = 0; r < R; r++)
        if (CR_META_AT(r)->status != 0) return *rank = r, CR_DEFER_RANK_FAILED;
    for (int r = 1; r < R; r++)
        if (cr_meta_disagreement(CR_META_AT(0), CR_META_AT(r))) return *rank = r, CR_DEFER_DISAGREE;
#undef CR_META_AT
    *rank = -1;
    return CR_DEFER_NONE;
}

/* Whether a sharded call's array is gathered whole from the first exchange's slots (R metas,
 * `stride` bytes apart): every rank on a GPU, every shard of at most lead_elems elements, and
 * the whole array within the smallest rank's gather limit (gather_kib KiB, 0: never; es: the
 * element's bytes). *total receives the array's elements when it is. The host's choice
 * (dist/sharded.c) and the device's (gpu/lead.cu, gpu/kernel/gate.cuh) alike. */
CR_META_FN int cr_meta_lead_whole(const unsigned char *metas, size_t stride, int R, uint64_t es,
                                  uint64_t lead_elems, uint64_t *total)
{
    uint64_t n = 0;
    int32_t kib = 0;
    for (int r = 0; r < R; r++) {
        const cr_meta *m = (const cr_meta *)(metas + (size_t)r * stride);
        if (m->device < 0 || m->n > lead_elems) return 0;
        n += m->n; /* (no overflow: R shards of at most lead_elems) */
        if (r == 0 || m->gather_kib < kib) kib = m->gather_kib;
    }
    if (kib <= 0 || n > (uint64_t)kib * 1024 / es) return 0;
    *total = n;
    return 1;
}

/* Where a kernel of the first exchange hands the gathered metas to the waiting host: mapped host
 * memory (device addresses), the R metas, then the tag, set to seq once they are all there (the
 * host spins on it). */
typedef struct {
    cr_meta *metas;
    volatile uint32_t *tag;
    uint32_t seq;
} cr_meta_post;

/* A deferred call's failure, written by the device into mapped host memory: every field first,
 * `set` last; the first failure stays until it is read. */
typedef struct {
    volatile uint32_t set;
    int32_t kind;
    int32_t rank;    /* the rank it names */
    uint32_t serial; /* the failed call's serial */
    cr_meta first;   /* rank 0's meta */
    cr_meta bad;     /* the named rank's */
} cr_deferred;

/* A small call's gate (gpu/kernel/gate.cuh): the kernel that writes its results checks the
 * gathered metas first as the host's first exchange does, and writes nothing if they fail. */
typedef struct {
    const unsigned char *metas; /* R gathered metas, stride bytes apart (device memory); NULL: no
                                   gate */
    size_t stride;
    int R;
    cr_meta mine;             /* this rank's own */
    uint64_t es, lead_elems;  /* lead_elems > 0: a sharded call, its array gathered whole too
                                 (cr_meta_lead_whole, elements of es bytes) */
    cr_deferred *rec;         /* a deferred call's failure record (mapped host memory), or NULL */
    cr_meta_post post;        /* where block 0 posts the metas (post.tag NULL: nowhere) */
} cr_gate;

#endif
