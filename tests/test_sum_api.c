/* test_sum_api.c — argument errors of coopreduce_sum and coopreduce_sum_to_host, and the small
 * API functions, on a CPU handle.
 *
 *   - NULL handle, result or x (x NULL with n = 0 is fine), unknown dtypes, misaligned x and
 *     result: the documented status, a message, the result untouched; the handle still sums;
 *   - status strings (distinct, "unknown status" beyond the list), handle creation and the
 *     setters a CPU handle refuses or accepts, reserve, handle_device, destroy(NULL);
 *   - version and order version, dtype names and sizes, GPU queries that must answer the same
 *     on any machine.
 *
 * Seeds: a fresh seed per run, printed; COOPREDUCE_TEST_SEED=<seed> reproduces a run. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "canonical_ref.h"
#include "check.h"
#include "util.h"

typedef coopreduce_status (*sum_fn)(const void *, void *, uint64_t, coopreduce_dtype,
                                    coopreduce_handle *, void *);

static void test_errors(void)
{
    const sum_fn fns[2] = {coopreduce_sum, coopreduce_sum_to_host};
    const char *fn_names[2] = {"coopreduce_sum", "coopreduce_sum_to_host"};
    double data64[16];
    float data32[16];
    for (int i = 0; i < 16; i++) {
        data64[i] = i + 1;
        data32[i] = (float)(i + 1);
    }

    {
        coopreduce_handle *fresh = NULL;
        coopreduce_status s = coopreduce_create_cpu(&fresh, 2);
        if (CHECK(s == COOPREDUCE_SUCCESS && fresh, "create_cpu(2): %d", (int)s)) {
            CHECK(coopreduce_last_error(fresh) && coopreduce_last_error(fresh)[0] == '\0',
                  "fresh handle's last_error is not empty: '%s'", coopreduce_last_error(fresh));
            CHECK(coopreduce_handle_device(fresh) == -1, "handle_device(cpu) = %d",
                  coopreduce_handle_device(fresh));
            CHECK(coopreduce_destroy(fresh) == COOPREDUCE_SUCCESS, "destroy failed");
        }
    }

    for (int f = 0; f < 2; f++) {
        for (int di = 0; di < 2; di++) {
            coopreduce_dtype dt = di == 0 ? COOPREDUCE_FLOAT32 : COOPREDUCE_FLOAT64;
            const void *data = di == 0 ? (const void *)data32 : (const void *)data64;
            const char *fn = fn_names[f];
            union {
                uint64_t u64;
                uint32_t u32[2];
                double d;
            } res;
            coopreduce_status s;
#define POISON_RESULT() (res.u64 = POISON64)
#define UNTOUCHED()     (res.u64 == POISON64)

            POISON_RESULT();
            s = fns[f](data, &res, 4, dt, NULL, NULL);
            CHECK(s == COOPREDUCE_ERROR_INVALID_ARGUMENT, "%s NULL handle: %d", fn, (int)s);
            CHECK(UNTOUCHED(), "%s NULL handle wrote the result", fn);
            CHECK(coopreduce_last_error(NULL)[0] != '\0', "%s NULL handle: no thread message", fn);

            s = fns[f](data, NULL, 4, dt, g_cpu, NULL);
            CHECK(s == COOPREDUCE_ERROR_INVALID_ARGUMENT, "%s NULL result: %d", fn, (int)s);
            CHECK(coopreduce_last_error(g_cpu)[0] != '\0', "%s NULL result: no message", fn);

            POISON_RESULT();
            s = fns[f](NULL, &res, 5, dt, g_cpu, NULL);
            CHECK(s == COOPREDUCE_ERROR_INVALID_ARGUMENT, "%s NULL x, n = 5: %d", fn, (int)s);
            CHECK(UNTOUCHED(), "%s NULL x wrote the result", fn);
            CHECK(coopreduce_last_error(g_cpu)[0] != '\0', "%s NULL x: no message", fn);

            POISON_RESULT();
            s = fns[f](NULL, &res, 0, dt, g_cpu, NULL);
            CHECK(s == COOPREDUCE_SUCCESS, "%s NULL x, n = 0: %d (%s)", fn, (int)s,
                  coopreduce_last_error(g_cpu));
            if (dt == COOPREDUCE_FLOAT32)
                CHECK(res.u32[0] == 0 && res.u32[1] == (uint32_t)POISON64,
                      "%s NULL x, n = 0 (f32): result 0x%08" PRIx32 " (next word 0x%08" PRIx32 ")",
                      fn, res.u32[0], res.u32[1]);
            else
                CHECK(res.u64 == 0, "%s NULL x, n = 0 (f64): result 0x%016" PRIx64, fn, res.u64);

            POISON_RESULT();
            s = fns[f](data, &res, 4, (coopreduce_dtype)99, g_cpu, NULL);
            CHECK(s == COOPREDUCE_ERROR_UNSUPPORTED_DTYPE, "%s dtype 99: %d", fn, (int)s);
            CHECK(UNTOUCHED(), "%s dtype 99 wrote the result", fn);
            CHECK(coopreduce_last_error(g_cpu)[0] != '\0', "%s dtype 99: no message", fn);

            POISON_RESULT();
            s = fns[f](data, &res, 4, (coopreduce_dtype)-1, g_cpu, NULL);
            CHECK(s == COOPREDUCE_ERROR_UNSUPPORTED_DTYPE, "%s dtype -1: %d", fn, (int)s);
            CHECK(UNTOUCHED(), "%s dtype -1 wrote the result", fn);

            /* x misaligned by one byte (and, for f64, by 4 bytes). */
            const unsigned offs[] = {1, 2, 3, 4};
            for (size_t k = 0; k < 4; k++) {
                if (offs[k] % dt_size(dt) == 0) continue;
                POISON_RESULT();
                s = fns[f]((const unsigned char *)data + offs[k], &res, 4, dt, g_cpu, NULL);
                CHECK(s == COOPREDUCE_ERROR_MISALIGNED, "%s %s x + %u bytes: %d", fn, dt_code(dt),
                      offs[k], (int)s);
                CHECK(UNTOUCHED(), "%s misaligned x wrote the result", fn);
                CHECK(coopreduce_last_error(g_cpu)[0] != '\0', "%s misaligned x: no message", fn);
            }
            /* result misaligned by one byte: no byte of the buffer may change. */
            {
                unsigned char rb[32];
                uint64_t al8[4];
                unsigned char *base = (unsigned char *)al8;
                memset(base, 0x5a, sizeof al8);
                s = fns[f](data, base + 1, 4, dt, g_cpu, NULL);
                CHECK(s == COOPREDUCE_ERROR_MISALIGNED, "%s %s result + 1 byte: %d", fn,
                      dt_code(dt), (int)s);
                memset(rb, 0x5a, sizeof rb);
                CHECK(memcmp(base, rb, sizeof al8) == 0, "%s misaligned result was written", fn);
            }
            /* The handle still works after errors. */
            POISON_RESULT();
            s = fns[f](data, &res, 4, dt, g_cpu, NULL);
            CHECK(s == COOPREDUCE_SUCCESS, "%s after errors: %d", fn, (int)s);
            if (dt == COOPREDUCE_FLOAT32)
                CHECK(f32_from_bits(res.u32[0]) == 10.0f, "%s [1,2,3,4] (f32) = %a", fn,
                      (double)f32_from_bits(res.u32[0]));
            else
                CHECK(res.d == 10.0, "%s [1,2,3,4] (f64) = %a", fn, res.d);
#undef POISON_RESULT
#undef UNTOUCHED
        }
    }

    /* Status strings. */
    for (int i = 0; i <= 15; i++) {
        const char *si = coopreduce_status_string((coopreduce_status)i);
        CHECK(si && si[0] && strcmp(si, "unknown status") != 0, "status_string(%d) = '%s'", i,
              si ? si : "(null)");
        for (int j = 0; j < i; j++) {
            const char *sj = coopreduce_status_string((coopreduce_status)j);
            CHECK(si && sj && strcmp(si, sj) != 0, "status_string(%d) == status_string(%d)", i, j);
        }
    }
    CHECK(strcmp(coopreduce_status_string((coopreduce_status)999), "unknown status") == 0,
          "status_string(999) = '%s'", coopreduce_status_string((coopreduce_status)999));
    CHECK(strcmp(coopreduce_status_string((coopreduce_status)16), "unknown status") == 0,
          "status_string(16) = '%s'", coopreduce_status_string((coopreduce_status)16));
    CHECK(strcmp(coopreduce_status_string((coopreduce_status)-1), "unknown status") == 0,
          "status_string(-1) = '%s'", coopreduce_status_string((coopreduce_status)-1));

    /* Handles. */
    {
        coopreduce_handle *h = NULL;
        coopreduce_status s = coopreduce_create_cpu(&h, -1);
        CHECK(s != COOPREDUCE_SUCCESS, "create_cpu(threads = -1) succeeded");
        if (s != COOPREDUCE_SUCCESS)
            CHECK(coopreduce_last_error(NULL)[0] != '\0', "create_cpu(-1): no thread message");
        else
            coopreduce_destroy(h);
        s = coopreduce_create_cpu(NULL, 0);
        CHECK(s == COOPREDUCE_ERROR_INVALID_ARGUMENT, "create_cpu(NULL, 0): %d", (int)s);
    }
    CHECK(coopreduce_set_grid_blocks(g_cpu, 4) == COOPREDUCE_ERROR_WRONG_DEVICE,
          "set_grid_blocks on a CPU handle");
    CHECK(coopreduce_last_error(g_cpu)[0] != '\0', "set_grid_blocks: no message");
    CHECK(coopreduce_set_grid_blocks(g_cpu, 0) == COOPREDUCE_ERROR_WRONG_DEVICE,
          "set_grid_blocks(0) on a CPU handle");
    CHECK(coopreduce_set_grid_blocks(NULL, 1) == COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "set_grid_blocks(NULL)");
    CHECK(coopreduce_set_threads(NULL, 1) == COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "set_threads(NULL)");
    CHECK(coopreduce_set_threads(g_cpu, -1) != COOPREDUCE_SUCCESS, "set_threads(-1) succeeded");
    CHECK(coopreduce_set_threads(g_cpu, 0) == COOPREDUCE_SUCCESS, "set_threads(0)");
    CHECK(coopreduce_reserve(g_cpu, UINT64_C(1) << 30, COOPREDUCE_FLOAT32) == COOPREDUCE_SUCCESS,
          "reserve on a CPU handle is not a no-op success");
    CHECK(coopreduce_reserve(NULL, 10, COOPREDUCE_FLOAT32) == COOPREDUCE_ERROR_INVALID_ARGUMENT,
          "reserve(NULL)");
    CHECK(coopreduce_handle_device(NULL) == -2, "handle_device(NULL) = %d",
          coopreduce_handle_device(NULL));
    CHECK(coopreduce_handle_device(g_cpu) == -1, "handle_device(cpu) = %d",
          coopreduce_handle_device(g_cpu));
    CHECK(coopreduce_destroy(NULL) == COOPREDUCE_SUCCESS, "destroy(NULL)");

    /* Library information. */
    CHECK(coopreduce_order_version() == 1, "order_version = %d", coopreduce_order_version());
    CHECK(COOPREDUCE_ORDER_VERSION == 1, "header order version");
    {
        char v[32];
        snprintf(v, sizeof v, "%d.%d.%d", COOPREDUCE_VERSION_MAJOR, COOPREDUCE_VERSION_MINOR,
                 COOPREDUCE_VERSION_PATCH);
        CHECK(coopreduce_version_string() && strcmp(coopreduce_version_string(), v) == 0,
              "version_string '%s' vs header %s", coopreduce_version_string(), v);
    }
    CHECK(coopreduce_dtype_size(COOPREDUCE_FLOAT32) == 4, "dtype_size(f32)");
    CHECK(coopreduce_dtype_size(COOPREDUCE_FLOAT64) == 8, "dtype_size(f64)");
    CHECK(coopreduce_dtype_size((coopreduce_dtype)99) == 0, "dtype_size(99)");
    CHECK(coopreduce_dtype_name(COOPREDUCE_FLOAT32) &&
              strcmp(coopreduce_dtype_name(COOPREDUCE_FLOAT32), "float32") == 0,
          "dtype_name(f32)");
    CHECK(coopreduce_dtype_name(COOPREDUCE_FLOAT64) &&
              strcmp(coopreduce_dtype_name(COOPREDUCE_FLOAT64), "float64") == 0,
          "dtype_name(f64)");
    CHECK(coopreduce_dtype_name((coopreduce_dtype)99) == NULL, "dtype_name(99)");

    /* GPU queries that must fail or succeed whatever the machine. */
    {
        int count = -1;
        CHECK(coopreduce_gpu_count(NULL) == COOPREDUCE_ERROR_INVALID_ARGUMENT, "gpu_count(NULL)");
        CHECK(coopreduce_gpu_count(&count) == COOPREDUCE_SUCCESS && count >= 0,
              "gpu_count: count %d", count);
        if (count >= 0) {
            coopreduce_gpu_props props;
            coopreduce_handle *gh = NULL;
            CHECK(coopreduce_gpu_props_get(count, &props) == COOPREDUCE_ERROR_NO_GPU,
                  "gpu_props_get(%d) of a GPU that does not exist", count);
            coopreduce_status s = coopreduce_create_gpu(&gh, count);
            CHECK(s == COOPREDUCE_ERROR_NO_GPU, "create_gpu(%d) of a GPU that does not exist: %d",
                  count, (int)s);
            if (s == COOPREDUCE_SUCCESS)
                coopreduce_destroy(gh);
            else
                CHECK(coopreduce_last_error(NULL)[0] != '\0', "create_gpu: no thread message");
        }
    }
}

CPU_TEST_MAIN("test_sum_api", {"errors and API", test_errors})
