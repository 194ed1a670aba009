/* ops_data.c — data for the CPU operation tests (ops_data.h). */
#include "ops_data.h"

#include <math.h>
#include <string.h>

#include "util.h"

void fill_values(void *x, uint64_t n, coopreduce_dtype dt, int kind)
{
    for (uint64_t i = 0; i < n; i++) {
        double v;
        switch (kind) {
        case 0: v = unif(); break;                                              /* [0, 1) */
        case 1: v = (unif() * 2 - 1) * ldexp(1, (int)(rnd() % 21) - 10); break; /* wide */
        default: v = (double)((int)(rnd() % 7) - 3) * 0.5; break;               /* ties, zeros */
        }
        if (kind == 2 && (rnd() & 15) == 0) v = -0.0;
        switch (dt) {
        case COOPREDUCE_FLOAT32: ((float *)x)[i] = (float)v; break;
        case COOPREDUCE_FLOAT64: ((double *)x)[i] = v; break;
        case COOPREDUCE_FLOAT16: {
            /* a random finite bit pattern in a moderate range, or the value's nearest */
            uint16_t b = (uint16_t)(rnd() & 0xffff);
            if (((b >> 10) & 31) >= 26 || kind == 2)
                b = (uint16_t)((rnd() & 0x8000) | ((13 + rnd() % 5) << 10) | (rnd() % 4 << 8));
            ((uint16_t *)x)[i] = b;
            break;
        }
        case COOPREDUCE_BFLOAT16: {
            float f = (float)v;
            uint32_t u;
            memcpy(&u, &f, 4);
            ((uint16_t *)x)[i] = (uint16_t)(u >> 16); /* truncation: any bf16 is fine */
            break;
        }
        case COOPREDUCE_INT32:
            ((int32_t *)x)[i] = kind == 2 ? (int32_t)(rnd() % 5) - 2 : (int32_t)rnd();
            break;
        case COOPREDUCE_UINT32:
            ((uint32_t *)x)[i] = kind == 2 ? (uint32_t)(rnd() % 5) : (uint32_t)rnd();
            break;
        case COOPREDUCE_INT64:
            ((int64_t *)x)[i] = kind == 2 ? (int64_t)(rnd() % 5) - 2 : (int64_t)rnd();
            break;
        default: ((uint64_t *)x)[i] = kind == 2 ? rnd() % 5 : rnd(); break;
        }
    }
}
