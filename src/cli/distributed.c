/* distributed.c — `coopreduce sum --distributed mpi|nccl` and `coopreduce bench --distributed`,
 * run under mpirun, one process per rank.
 *
 * sum: each rank generates its own shard of the global --gen stream (the generator is counter-
 * based: element i depends on (kind, seed, i) alone, cr_gen_fill with the shard's first index),
 * the shards split evenly or as --split n0,n1,... says; coopreduce_reduce_sharded; rank 0 prints
 * the report of the single-process `coopreduce sum` (the same bits), with the ranks and the
 * backend. GPUs: rank r takes its node-local rank modulo the node's GPU count, or gpu:K.
 * bench: the sharded float32 sum against one device's sum of a shard of the same size, and the
 * all-reduce against MPI_Allreduce or ncclAllReduce, on rank 0's clock after a barrier, the
 * slowest rank's time.
 *
 * Every rank agrees over MPI that its setup worked before the library's collectives start, so a
 * rank that cannot open its device or allocate its shard makes every rank exit with an error
 * (rank 0 prints it) instead of leaving the others waiting. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/dtype.h"
#include "args.h"
#include "distributed.h"
#include "gpu_buffers.h"
#include "help.h"
#include "messages.h"
#include "sum.h"

int cli_parse_distributed(const char *text, int *backend)
{
    if (strcmp(text, "mpi") == 0) *backend = 1;
    else if (strcmp(text, "nccl") == 0) *backend = 2;
    else return -1;
    return 0;
}

#ifndef COOPREDUCE_CLI_DIST_MPI
int sum_distributed(const sum_options *o)
{
    (void)o;
    cli_error("--distributed needs a coopreduce built with MPI (Open MPI's libopenmpi-dev at "
              "configure time); this one was built without it");
    return EXIT_ERROR;
}

int bench_distributed(int argc, char **argv)
{
    (void)argc, (void)argv;
    cli_error("bench --distributed needs a coopreduce built with MPI (Open MPI's "
              "libopenmpi-dev at configure time); this one was built without it");
    return EXIT_ERROR;
}
#else
#include <mpi.h>
#ifdef COOPREDUCE_CLI_DIST_NCCL
#include <nccl.h>
#endif
#include "coopreduce_dist.h"

static int g_rank, g_size;

/* Every rank's ok, agreed: 1 when all are. */
static int all_ok(int ok)
{
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

/* The shard sizes: --split's list (size entries summing to n) or an even split. Prints on
 * rank 0 only. */
static int make_split(const char *text, uint64_t n, int size, uint64_t *out)
{
    if (!text) {
        for (int r = 0; r < size; r++)
            out[r] = n * (uint64_t)(r + 1) / (uint64_t)size - n * (uint64_t)r / (uint64_t)size;
        return 0;
    }
    int count = 0;
    uint64_t total = 0;
    const char *p = text;
    while (*p) {
        char item[64];
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof item) {
            if (g_rank == 0) cli_usage_error("--split '%s': expected counts separated by ','", text);
            return -1;
        }
        memcpy(item, p, len);
        item[len] = 0;
        uint64_t v = 0;
        if (cli_parse_count(item, &v) != 0) {
            if (g_rank == 0) cli_usage_error("--split: '%s' is not an element count", item);
            return -1;
        }
        if (count < size) out[count] = v;
        count++;
        total += v;
        p += len;
        if (*p == ',') p++;
    }
    if (count != size) {
        if (g_rank == 0)
            cli_usage_error("--split has %d shard sizes, and mpirun started %d ranks", count, size);
        return -1;
    }
    if (total != n) {
        if (g_rank == 0)
            cli_usage_error("--split's sizes add up to %llu, not --n %llu",
                            (unsigned long long)total, (unsigned long long)n);
        return -1;
    }
    return 0;
}

/* This process's rank among the ranks of its node. */
static int local_rank(void)
{
    MPI_Comm node;
    int r = 0;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
        MPI_Comm_rank(node, &r);
        MPI_Comm_free(&node);
    }
    return r;
}

/* The device of this rank: --device as given, a GPU picked by node-local rank for "gpu" and (with
 * GPUs) "auto". NCCL needs a GPU. */
static int open_rank_device(cli_device *dev, cli_device_kind kind, int ordinal, const char *text,
                            int threads, int nccl)
{
    int gpus = 0;
    coopreduce_gpu_count(&gpus);
    const int explicit_ordinal = text && strncmp(text, "gpu:", 4) == 0;
    if (nccl && kind == CLI_DEVICE_CPU) {
        cli_error("--distributed nccl computes on GPUs: drop --device cpu (or use mpi)");
        return EXIT_ERROR;
    }
    if (kind == CLI_DEVICE_AUTO) kind = gpus > 0 ? CLI_DEVICE_GPU : CLI_DEVICE_CPU;
    if (kind == CLI_DEVICE_GPU && !explicit_ordinal && gpus > 0) ordinal = local_rank() % gpus;
    if (nccl && kind != CLI_DEVICE_GPU) {
        cli_error("--distributed nccl needs a GPU, and this rank has none");
        return EXIT_ERROR;
    }
    return cli_open_device(dev, kind, ordinal, threads, text);
}

static int make_comm(int backend, const cli_device *dev, coopreduce_comm **comm)
{
    coopreduce_status st;
    if (backend == 1) {
        st = coopreduce_comm_from_mpi(MPI_COMM_WORLD, comm);
    } else {
#ifdef COOPREDUCE_CLI_DIST_NCCL
        st = coopreduce_comm_init_nccl_from_mpi(MPI_COMM_WORLD, dev->ordinal, comm);
#else
        (void)dev;
        cli_error("--distributed nccl: this coopreduce was built without NCCL");
        return EXIT_ERROR;
#endif
    }
    if (st != COOPREDUCE_SUCCESS) {
        cli_error("making the %s communicator failed: %s", backend == 1 ? "MPI" : "NCCL",
                  cli_library_message(NULL, st));
        return EXIT_ERROR;
    }
    return EXIT_OK;
}

/* A shard in the device's memory (a GPU copy, or the host buffer itself). */
static void *to_device(const cli_device *dev, void *host, size_t bytes, int *ok)
{
    if (!dev->is_gpu || !host) return host;
    void *d = NULL;
    char err[256];
    if (cli_gpu_malloc(&d, bytes ? bytes : 16, err, sizeof err) != 0 ||
        cli_gpu_memcpy_h2d(d, host, bytes, err, sizeof err) != 0) {
        cli_error("rank %d: %s", g_rank, err);
        *ok = 0;
        return NULL;
    }
    return d;
}

/* The end of a distributed command on every rank: frees the communicator and the handle, then
 * exits with the worst exit status of any rank (the library failed on all of them or none, but
 * a rank's own output may have failed), after MPI_Finalize. */
static int finish_rank(int rc, coopreduce_comm *comm, coopreduce_handle *handle)
{
    coopreduce_comm_destroy(comm);
    coopreduce_destroy(handle);
    int worst = rc;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return worst;
}

int sum_distributed(const sum_options *o_in)
{
    sum_options o = *o_in;
    int provided = 0;
    MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    const int R = g_size, me = g_rank;
    uint64_t *split = calloc((size_t)R, sizeof *split);
    int ok = split != NULL && make_split(o.split_text, o.n, R, split) == 0;
    if (!all_ok(ok)) {
        free(split);
        MPI_Finalize();
        return EXIT_USAGE;
    }
    uint64_t first = 0;
    for (int r = 0; r < me; r++) first += split[r];
    const uint64_t nl = split[me];
    const coopreduce_dtype dt = o.dtype;
    const size_t es = coopreduce_dtype_size(dt);
    const int is_dot = o.op == COOPREDUCE_OP_DOT;
    result_kind rk = {o.op, dt, dt, 0};
    rk.rsize = coopreduce_op_result_size(o.op, dt, o.narrow, &rk.rdtype);
    /* What the library refuses is left to it: every rank then reports the same error. */
    if (o.narrow && !cr_dtype_is_half(dt)) {
        if (me == 0)
            cli_error("--narrow applies to float16 and bfloat16 input only (this is %s)",
                      coopreduce_dtype_name(dt));
        free(split);
        MPI_Finalize();
        return EXIT_USAGE;
    }
    cli_device dev;
    memset(&dev, 0, sizeof dev);
    ok = open_rank_device(&dev, o.device, o.ordinal, o.device_text, o.threads,
                          o.distributed == 2) == EXIT_OK;
    if (ok) ok = sum_configure_handle(&dev, &o) == EXIT_OK;
    coopreduce_comm *comm = NULL;
    /* the NCCL communicator is made collectively: only once every rank has its device */
    if (all_ok(ok)) ok = make_comm(o.distributed, &dev, &comm) == EXIT_OK;
    void *hx = NULL, *hy = NULL, *dx = NULL, *dy = NULL, *dres = NULL;
    if (ok) {
        hx = malloc(nl * es + 16);
        hy = is_dot ? malloc(nl * es + 16) : NULL;
        ok = hx && (!is_dot || hy);
        if (!ok) cli_error("rank %d: cannot allocate its shard of %llu elements", me,
                           (unsigned long long)nl);
    }
    if (ok) {
        const int threads = dev.is_gpu ? 0 : dev.threads;
        ok = cr_gen_fill(hx, first, nl, dt, o.gen_kind, o.seed, threads) == 0 &&
             (!is_dot || cr_gen_fill(hy, first, nl, dt, o.gen_kind, o.seed + 1, threads) == 0);
        dx = to_device(&dev, hx, nl * es, &ok);
        if (is_dot) dy = to_device(&dev, hy, nl * es, &ok);
        unsigned char zero[16] = {0};
        dres = dev.is_gpu ? to_device(&dev, zero, 16, &ok) : NULL;
    }
    double *times = ok ? calloc((size_t)o.repeat + 1, sizeof *times) : NULL;
    if (ok && !times) {
        cli_error("rank %d: cannot allocate %d timings", me, o.repeat + 1);
        ok = 0;
    }
    if (!all_ok(ok)) {
        if (me == 0) cli_error("a rank could not set up its shard (its error is above)");
        coopreduce_comm_destroy(comm);
        coopreduce_destroy(dev.handle);
        free(hx);
        free(hy);
        free(split);
        free(times);
        MPI_Finalize();
        return EXIT_ERROR;
    }
    sum_result res;
    memset(&res, 0, sizeof res);
    res.deterministic = 1;
    coopreduce_status st = COOPREDUCE_SUCCESS;
    for (int k = 0; k <= o.repeat && st == COOPREDUCE_SUCCESS; k++) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = sum_clock_us();
        st = coopreduce_reduce_sharded(o.op, dx, dy, dev.is_gpu ? dres : (void *)res.bits, nl, dt,
                                       dev.handle, comm, NULL);
        char serr[256];
        /* the result is written in stream order: wait for it (and for any failure of the GPU) */
        if (dev.is_gpu && st == COOPREDUCE_SUCCESS && cli_gpu_sync(serr, sizeof serr) != 0) {
            cli_error("rank %d: %s", me, serr);
            st = COOPREDUCE_ERROR_CUDA;
        }
        const double t = sum_clock_us() - t0;
        double tmax = t;
        MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (k > 0) times[k - 1] = tmax; /* the first run warms up */
        res.runs++;
    }
    int rc = EXIT_OK;
    if (st != COOPREDUCE_SUCCESS && st != COOPREDUCE_ERROR_OVERFLOW) {
        if (me == 0) cli_error("%s", cli_library_message(dev.handle, st));
        rc = EXIT_ERROR;
    } else {
        if (dev.is_gpu) {
            char err[256];
            if (cli_gpu_memcpy_d2h(res.bits, dres, 16, err, sizeof err) != 0) {
                cli_error("rank %d: %s", me, err);
                rc = EXIT_ERROR;
            }
        }
        res.time_us = sum_median(times, o.repeat);
        res.distinct = 1;
        if (me == 0 && rc == EXIT_OK) {
            sum_input in;
            memset(&in, 0, sizeof in);
            snprintf(in.description, sizeof in.description,
                     "gen %s, seed %llu (each rank generates its shard)", cr_gen_name(o.gen_kind),
                     (unsigned long long)o.seed);
            sum_input yin = in;
            snprintf(yin.description, sizeof yin.description, "gen %s, seed %llu (--seed + 1)",
                     cr_gen_name(o.gen_kind), (unsigned long long)(o.seed + 1));
            o.dist_ranks = R;
            o.dist_backend = o.distributed == 1 ? "mpi" : "nccl";
            sum_print_report(&o, &dev, &in, is_dot ? &yin : NULL, &rk, o.n, &res);
            rc = cli_finish_stdout();
            if (rc == EXIT_OK && !sum_result_fits(&rk, res.bits)) {
                cli_error("the exact %s sum does not fit in 64 bits: the value printed is the "
                          "exact 128-bit sum",
                          coopreduce_dtype_name(rk.dtype));
                rc = EXIT_ERROR;
            }
        }
    }
    free(times);
    if (dev.is_gpu) {
        cli_gpu_free(dx);
        cli_gpu_free(dy);
        cli_gpu_free(dres);
    }
    free(hx);
    free(hy);
    free(split);
    return finish_rank(rc, comm, dev.handle);
}

/* ---- bench --distributed ------------------------------------------------------------------- */
/* Median seconds of `reps` runs of body, each the slowest rank's time after a barrier (NaN on a
 * rank that cannot allocate the timings: the runs and their collectives still take place). */
#define TIMED(out, reps, body)                                                                     \
    do {                                                                                           \
        double *ts_ = calloc((size_t)(reps), sizeof(double));                                      \
        for (int k_ = 0; k_ < (reps); k_++) {                                                      \
            MPI_Barrier(MPI_COMM_WORLD);                                                           \
            const double t0_ = sum_clock_us();                                                     \
            body;                                                                                  \
            if (gpu) cli_gpu_sync(err, sizeof err);                                                \
            double t_ = sum_clock_us() - t0_, m_ = t_;                                             \
            MPI_Allreduce(&t_, &m_, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);                       \
            if (ts_) ts_[k_] = m_;                                                                 \
        }                                                                                          \
        (out) = ts_ ? sum_median(ts_, (reps)) * 1e-6 : NAN;                                        \
        free(ts_);                                                                                 \
    } while (0)

int bench_distributed(int argc, char **argv)
{
    static const cli_option specs[] = {{"distributed", 1}, {"n", 1}, {"device", 1},
                                       {"repeat", 1},      {"json", 0}, {"threads", 1},
                                       {NULL, 0}};
    int backend = 0, reps = 10, json = 0, threads = 0, have_n = 0, ordinal = 0;
    uint64_t n = 0;
    cli_device_kind kind = CLI_DEVICE_AUTO;
    const char *device_text = "auto";
    cli_args args;
    cli_args_init(&args, argc, argv, specs);
    const cli_option *spec;
    const char *value;
    int k;
    while ((k = cli_args_next(&args, &spec, &value)) != CLI_ARG_END) {
        if (k == CLI_ARG_ERROR) return EXIT_USAGE;
        if (k == CLI_ARG_POSITIONAL) return cli_usage_error("bench takes no input file");
        if (!strcmp(spec->name, "distributed") && cli_parse_distributed(value, &backend))
            return cli_usage_error("--distributed '%s': expected mpi or nccl", value);
        if (!strcmp(spec->name, "n")) {
            if (cli_parse_count(value, &n) || n == 0)
                return cli_usage_error("--n '%s': not an element count", value);
            have_n = 1;
        }
        if (!strcmp(spec->name, "device")) {
            if (cli_parse_device(value, &kind, &ordinal))
                return cli_usage_error("--device '%s': expected auto, cpu, gpu or gpu:K", value);
            device_text = value;
        }
        if (!strcmp(spec->name, "repeat") && cli_parse_int(value, 1, 100000, &reps))
            return cli_usage_error("--repeat '%s': expected 1 .. 100000", value);
        if (!strcmp(spec->name, "threads") && cli_parse_int(value, 0, 1 << 16, &threads))
            return cli_usage_error("--threads '%s': expected 0 .. 65536", value);
        if (!strcmp(spec->name, "json")) json = 1;
    }
    int provided = 0;
    MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    const int R = g_size, me = g_rank;
    cli_device dev;
    memset(&dev, 0, sizeof dev);
    int ok = open_rank_device(&dev, kind, ordinal, device_text, threads, backend == 2) == EXIT_OK;
    coopreduce_comm *comm = NULL;
    if (all_ok(ok)) ok = make_comm(backend, &dev, &comm) == EXIT_OK;
    const int gpu = dev.is_gpu;
    if (!have_n) n = gpu ? (uint64_t)1 << 28 : (uint64_t)1 << 24;
    float *hx = NULL, *x = NULL, *res = NULL;
    char err[256] = "";
    if (ok) {
        hx = malloc(n * 4);
        ok = hx != NULL && cr_gen_fill(hx, (uint64_t)me * n, n, COOPREDUCE_FLOAT32, CR_GEN_UNIFORM, 1,
                                       gpu ? 0 : dev.threads) == 0;
        x = to_device(&dev, hx, n * 4, &ok);
        float zero[4] = {0};
        res = gpu ? to_device(&dev, zero, 16, &ok) : malloc(16);
        ok = ok && res != NULL;
    }
    if (!all_ok(ok)) {
        if (me == 0) cli_error("a rank could not set up (its error is above)");
        MPI_Finalize();
        return EXIT_ERROR;
    }
    const size_t ar_bytes[3] = {8, (size_t)1 << 20, gpu ? (size_t)256 << 20 : (size_t)16 << 20};
    double t_local, t_sharded, t_ar[3], t_base[3], t_deferred = 0;
    coopreduce_status st = COOPREDUCE_SUCCESS;
    TIMED(t_local, reps,
          coopreduce_reduce(COOPREDUCE_OP_SUM, x, NULL, res, n, COOPREDUCE_FLOAT32, dev.handle, NULL));
    TIMED(t_sharded, reps,
          st = coopreduce_reduce_sharded(COOPREDUCE_OP_SUM, x, NULL, res, n, COOPREDUCE_FLOAT32,
                                         dev.handle, comm, NULL));
    const char *base_name = backend == 1 ? "MPI_Allreduce" : "ncclAllReduce";
    int buffers_failed = 0;
    for (int s = 0; s < 3 && st == COOPREDUCE_SUCCESS && !buffers_failed; s++) {
        const size_t bytes = ar_bytes[s];
        const uint64_t cnt = bytes / 4;
        float *hs = calloc(cnt, 4), *send = NULL, *recv = NULL;
        int ok2 = hs != NULL;
        send = to_device(&dev, hs, bytes, &ok2);
        recv = gpu ? to_device(&dev, hs, bytes, &ok2) : calloc(cnt, 4);
        /* (MPI's baseline on host memory: a GPU handle's results land in a host buffer) */
        float *hrecv = backend == 1 && gpu ? calloc(cnt, 4) : recv;
        ok2 = ok2 && send && recv && hrecv;
        if (!ok2)
            cli_error("rank %d: cannot allocate the buffers of an all-reduce of %zu bytes", me,
                      bytes);
        if (!all_ok(ok2)) {
            buffers_failed = 1;
        } else {
            const int reps2 = bytes > ((size_t)1 << 24) ? (reps < 5 ? reps : 5) : reps * 5;
            TIMED(t_ar[s], reps2,
                  st = coopreduce_allreduce(send, recv, cnt, COOPREDUCE_FLOAT32, COOPREDUCE_OP_SUM,
                                            dev.handle, comm, NULL));
            if (s == 0 && st == COOPREDUCE_SUCCESS) {
                /* the same on a communicator that defers errors (the call does not wait) */
                coopreduce_comm_config cfg = COOPREDUCE_COMM_CONFIG_INIT;
                cfg.deferred_errors = 1;
                st = coopreduce_comm_set_config(comm, &cfg, NULL);
                if (st == COOPREDUCE_SUCCESS)
                    TIMED(t_deferred, reps2,
                          st = coopreduce_allreduce(send, recv, cnt, COOPREDUCE_FLOAT32,
                                                    COOPREDUCE_OP_SUM, dev.handle, comm, NULL));
                if (st == COOPREDUCE_SUCCESS) st = coopreduce_comm_deferred_error(comm, dev.handle);
                cfg.deferred_errors = 0;
                const coopreduce_status off = coopreduce_comm_set_config(comm, &cfg, NULL);
                if (st == COOPREDUCE_SUCCESS) st = off;
            }
            if (backend == 1) {
                float *hsend = gpu ? hs : send;
                /* MPI on host memory (what MPI moves for a GPU handle here too) */
                TIMED(t_base[s], reps2,
                      MPI_Allreduce(hsend, hrecv, (int)cnt, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
            } else {
#ifdef COOPREDUCE_CLI_DIST_NCCL
                ncclComm_t nc = NULL;
                coopreduce_comm_nccl(comm, &nc);
                TIMED(t_base[s], reps2,
                      ncclAllReduce(send, recv, cnt, ncclFloat32, ncclSum, nc, NULL));
#else
                t_base[s] = 0;
#endif
            }
        }
        if (hrecv != recv) free(hrecv);
        if (gpu) {
            cli_gpu_free(send);
            cli_gpu_free(recv);
        } else {
            free(recv);
        }
        free(hs);
    }
    int rc = EXIT_OK;
    if (buffers_failed) {
        if (me == 0) cli_error("a rank could not allocate an all-reduce's buffers (its error is above)");
        rc = EXIT_ERROR;
    } else if (st != COOPREDUCE_SUCCESS) {
        if (me == 0) cli_error("%s", cli_library_message(dev.handle, st));
        rc = EXIT_ERROR;
    } else if (me == 0) {
        const double gb = (double)n * 4 * 1e-9;
        const double bus = R > 1 ? 2.0 * (R - 1) / R : 1.0;
        const char *bname = backend == 1 ? "mpi" : "nccl";
        if (json) {
            printf("{\"backend\": \"%s\", \"ranks\": %d, \"device\": \"%s\", \"n_per_rank\": %llu, "
                   "\"local_sum_s\": %.9f, \"sharded_sum_s\": %.9f, \"sharded_gbps\": %.3f, "
                   "\"one_device_gbps\": %.3f, \"allreduce_8b_deferred_s\": %.9f, "
                   "\"allreduce\": [",
                   bname, R, gpu ? "gpu" : "cpu", (unsigned long long)n, t_local, t_sharded,
                   R * gb / t_sharded, gb / t_local, t_deferred);
            for (int s = 0; s < 3; s++)
                printf("%s{\"bytes\": %zu, \"coopreduce_s\": %.9f, \"baseline_s\": %.9f, "
                       "\"baseline\": \"%s\", \"coopreduce_busbw_gbps\": %.3f, "
                       "\"baseline_busbw_gbps\": %.3f}",
                       s ? ", " : "", ar_bytes[s], t_ar[s], t_base[s], base_name,
                       ar_bytes[s] * bus / t_ar[s] * 1e-9, ar_bytes[s] * bus / t_base[s] * 1e-9);
            printf("]}\n");
        } else {
            printf("distributed benchmark: %d rank(s) over %s, %s handles (rank 0: %s)\n", R, bname,
                   gpu ? "GPU" : "CPU", dev.name);
            printf("| measurement | coopreduce | baseline | ratio |\n|---|---|---|---|\n");
            printf("| sharded float32 sum, %llu per rank | %.3f ms, %.1f GB/s | one device, %llu: "
                   "%.3f ms, %.1f GB/s | %.2f x one device (R = %d) |\n",
                   (unsigned long long)n, t_sharded * 1e3, R * gb / t_sharded,
                   (unsigned long long)n, t_local * 1e3, gb / t_local,
                   (R * gb / t_sharded) / (gb / t_local), R);
            for (int s = 0; s < 3; s++) {
                printf("| all-reduce, %zu bytes float32 | %.1f us, busbw %.2f GB/s | %s %.1f us, "
                       "busbw %.2f GB/s | %.2f x |\n",
                       ar_bytes[s], t_ar[s] * 1e6, ar_bytes[s] * bus / t_ar[s] * 1e-9, base_name,
                       t_base[s] * 1e6, ar_bytes[s] * bus / t_base[s] * 1e-9, t_base[s] / t_ar[s]);
                if (s == 0)
                    printf("| all-reduce, 8 bytes float32, deferred errors | %.1f us | %s %.1f us "
                           "| %.2f x |\n",
                           t_deferred * 1e6, base_name, t_base[0] * 1e6, t_base[0] / t_deferred);
            }
        }
        rc = cli_finish_stdout();
    }
    if (gpu) {
        cli_gpu_free(x);
        cli_gpu_free(res);
    } else {
        free(res);
    }
    free(hx);
    return finish_rank(rc, comm, dev.handle);
}
#endif
