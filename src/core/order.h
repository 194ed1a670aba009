/* order.h — the constants and level arithmetic of canonical order v1 (docs/DETERMINISM.md).
 * Frozen: changing any of them changes result bits. C11 and CUDA C++. */
#ifndef COOPREDUCE_ORDER_H
#define COOPREDUCE_ORDER_H

#include <stdint.h>
#include "coopreduce.h"

#define CR_ROWS      32  /* rows per chunk, for every dtype */
#define CR_LANES_F32 128 /* lanes: one 512-byte row */
#define CR_LANES_F64 64
#define CR_CHUNK_F32 (CR_ROWS * CR_LANES_F32) /* 4096 */
#define CR_CHUNK_F64 (CR_ROWS * CR_LANES_F64) /* 2048 */
/* Levels needed for N up to 2^64 with C >= 2048 = 2^11: ceil(64/11) = 6. */
#define CR_MAX_LEVELS 8

/* Elements per chunk of a tree that adds in `acc` (float32 or float64). */
static inline uint64_t cr_chunk_elems(coopreduce_dtype acc)
{
    return acc == COOPREDUCE_FLOAT64 ? (uint64_t)CR_CHUNK_F64 : (uint64_t)CR_CHUNK_F32;
}

/* The node counts of every level for n >= 1 elements: count[0] = n,
 * count[k] = ceil(count[k-1] / C), until count[L] == 1. Returns L (>= 1). */
static inline int cr_level_counts(uint64_t n, uint64_t chunk, uint64_t count[CR_MAX_LEVELS + 1])
{
    int levels = 0;
    count[0] = n;
    do {
        count[levels + 1] = (count[levels] + chunk - 1) / chunk;
        ++levels;
    } while (count[levels] > 1);
    return levels;
}

#endif
