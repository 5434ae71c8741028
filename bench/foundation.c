/*
 * foundation.c - benchmark of the compiler core: for matmul 512^3 and the
 * ResNet-18 conv2d layer C=K=128, 28x28, 3x3, it measures the default
 * (unscheduled) nest and a hand-written schedule (bench/schedules/), next to
 * OpenBLAS measured in the same run, and prints a markdown table of GFLOP/s
 * and ratios.
 *
 * Protocol: every number is the median of `--rounds` rounds (default 5); in
 * each round every contender is measured once, in turn, so slow drifts of the
 * machine hit them alike. One measurement = warm-up, then `repeat` samples of
 * `number` calls (number grown until a sample lasts >= 50 ms), median sample.
 * rltune kernels run in the runner's child process pinned to the last CPU;
 * OpenBLAS runs in this process pinned to the same CPU (1 thread) or to all
 * CPUs (2 threads). For conv2d, OpenBLAS gets two rows: sgemm on the
 * equivalent GEMM shape alone (K x C*R*S times C*R*S x P*Q, no im2col: a
 * bound no real conv reaches), and im2col + sgemm timed together.
 *
 * Usage: bench_foundation [--rounds N] [--quick]
 */
#include "measure/measure.h"
#include "sched/sched.h"

#include <cblas.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "timing.h"

#ifndef RLTUNE_SOURCE_DIR
#define RLTUNE_SOURCE_DIR "."
#endif

typedef struct workload_spec {
    const char *name;
    const char *spec;
    const char *schedule; /* file under bench/schedules/ */
    int n_threads;
} workload_spec;

static const workload_spec WORKLOADS[] = {
    {"matmul 512^3", "matmul:M=512,N=512,K=512", "matmul_512.sched", 1},
    {"matmul 512^3", "matmul:M=512,N=512,K=512", "matmul_512_parallel.sched", 2},
    {"conv2d resnet18 C=K=128 28x28 3x3",
     "conv2d:N=1,C=128,H=28,W=28,K=128,R=3,S=3,stride=1,pad=1", "conv2d_128_28.sched", 1},
};

/* Pins this process to the last allowed CPU (as the runner pins its child),
 * or to all of them; returns the previous mask through `saved`. */
static void pin(int n_threads, cpu_set_t *saved)
{
    sched_getaffinity(0, sizeof *saved, saved);
    if (n_threads > 1) return;
    int last = -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, saved)) last = c;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(last, &one);
    sched_setaffinity(0, sizeof one, &one);
}

typedef bool (*baseline_fn)(void *ctx);

/* Times fn the way the runner times kernels (bench/timing.h), pinned as
 * the runner pins, with OpenBLAS on n_threads threads. */
static double time_baseline(baseline_fn fn, void *ctx, int n_threads, int repeat, double min_s)
{
    cpu_set_t saved;
    pin(n_threads, &saved);
    openblas_set_num_threads(n_threads);
    double t = bench_time_calls(fn, ctx, repeat, min_s);
    sched_setaffinity(0, sizeof saved, &saved);
    return t;
}

/* ---- OpenBLAS baselines ------------------------------------------------- */

typedef struct gemm_ctx {
    int m, n, k;
    float *a, *b, *c;
} gemm_ctx;

static bool run_sgemm(void *p)
{
    gemm_ctx *g = p;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->m, g->n, g->k, 1.0f, g->a, g->k, g->b, g->n, 0.0f,
                g->c, g->n);
    return true;
}

typedef struct conv_ctx {
    int c, h, w, k, r, s, p, q, pad;
    float *input, *weight, *col, *out;
} conv_ctx;

/* im2col for stride 1 (the benchmarked layer), then one sgemm. */
static bool run_im2col_sgemm(void *arg)
{
    conv_ctx *x = arg;
    long row = 0;
    for (int c = 0; c < x->c; c++)
        for (int r = 0; r < x->r; r++)
            for (int s = 0; s < x->s; s++, row++) {
                float *dst = x->col + row * x->p * x->q;
                for (int p = 0; p < x->p; p++) {
                    int h = p + r - x->pad;
                    for (int q = 0; q < x->q; q++) {
                        int w = q + s - x->pad;
                        dst[p * x->q + q] =
                            (h >= 0 && h < x->h && w >= 0 && w < x->w) ? x->input[(c * x->h + h) * x->w + w] : 0.0f;
                    }
                }
            }
    int kk = x->c * x->r * x->s, pq = x->p * x->q;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, x->k, pq, kk, 1.0f, x->weight, kk, x->col, pq, 0.0f,
                x->out, pq);
    return true;
}

static float *filled(long n, uint64_t seed)
{
    float *p = aligned_alloc(64, (size_t)((n * 4 + 63) / 64 * 64));
    if (!p) {
        fprintf(stderr, "bench: out of memory\n");
        exit(3);
    }
    rlt_tensor_fill(p, n, seed);
    return p;
}

/* ---- rltune contenders -------------------------------------------------- */

static double measure_rltune(const rlt_workload *w, const rlt_nest *nest, int n_threads, int repeat,
                             const char *what)
{
    rlt_build_opts bopts = {0};
    rlt_run_opts ropts = {.repeat = repeat, .min_repeat_ms = 50, .timeout_s = 120, .n_threads = n_threads};
    rlt_run_result r;
    rlt_diag d = {0};
    if (rlt_measure_nests(w, &bopts, &ropts, 1, nest, &r, &d) != RLT_STATUS_OK) {
        fprintf(stderr, "bench: %s: %s\n", what, d.message);
        exit(3);
    }
    if (r.status != RLT_STATUS_OK) {
        fprintf(stderr, "bench: %s: %s: %s\n", what, rlt_status_str(r.status), r.message);
        exit(1);
    }
    return r.time_median_ms * 1e-3;
}

static void load_nest(const rlt_op *op, const char *file, rlt_nest *nest)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/bench/schedules/%s", RLTUNE_SOURCE_DIR, file);
    rlt_diag d = {0};
    rlt_sched *s = NULL;
    if (rlt_sched_load(path, &s, &d) != RLT_STATUS_OK || rlt_sched_apply(s, op, nest, &d) != RLT_STATUS_OK) {
        fprintf(stderr, "bench: %s\n", d.message);
        exit(2);
    }
    rlt_sched_destroy(s);
}

int main(int argc, char **argv)
{
    int rounds = 5, repeat = 7;
    bool is_quick = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--quick") == 0) is_quick = true;
        else {
            fprintf(stderr, "usage: bench_foundation [--rounds N] [--quick]\n");
            return 2;
        }
    }
    if (is_quick) {
        rounds = 1;
        repeat = 3;
    }
    if (rounds < 1 || rounds > 64) rounds = 5;
    rlt_target target;
    rlt_target_detect(&target);
    time_t t = time(NULL);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%d", gmtime(&t));
    printf("Machine: %s, %d cores, %d-float vectors%s; %s; median of %d rounds\n\n", target.cpu_model,
           target.n_cores, target.vector_floats, target.has_fma ? ", FMA" : "", date, rounds);
    printf("| workload | threads | rltune default | rltune hand-written | OpenBLAS | hand-written / OpenBLAS |\n");
    printf("|---|---|---|---|---|---|\n");
    for (size_t wi = 0; wi < RLT_ARRAY_LEN(WORKLOADS); wi++) {
        const workload_spec *ws = &WORKLOADS[wi];
        rlt_diag d = {0};
        rlt_op *op = NULL;
        if (rlt_op_parse(ws->spec, &op, &d) != RLT_STATUS_OK) {
            fprintf(stderr, "bench: %s\n", d.message);
            return 2;
        }
        rlt_workload *w = NULL;
        rlt_build_opts bopts = {0};
        if (rlt_workload_create(op, &bopts, 1, &w, &d) != RLT_STATUS_OK) {
            fprintf(stderr, "bench: %s\n", d.message);
            return 3;
        }
        rlt_nest def, hand;
        rlt_nest_init(&def, op);
        load_nest(op, ws->schedule, &hand);
        bool is_conv = strncmp(ws->spec, "conv2d", 6) == 0;
        gemm_ctx gemm = {0};
        conv_ctx conv = {0};
        if (is_conv) {
            const rlt_tensor *in = &op->tensors[0], *wt = &op->tensors[1], *o = &op->tensors[2];
            conv = (conv_ctx){.c = (int)in->dims[1], .h = (int)in->dims[2], .w = (int)in->dims[3],
                              .k = (int)wt->dims[0], .r = (int)wt->dims[2], .s = (int)wt->dims[3],
                              .p = (int)o->dims[2], .q = (int)o->dims[3], .pad = 1};
            long kk = (long)conv.c * conv.r * conv.s, pq = (long)conv.p * conv.q;
            conv.input = filled((long)conv.c * conv.h * conv.w, 1);
            conv.weight = filled(conv.k * kk, 2);
            conv.col = filled(kk * pq, 3);
            conv.out = filled(conv.k * pq, 4);
            gemm = (gemm_ctx){.m = conv.k, .n = (int)pq, .k = (int)kk, .a = conv.weight, .b = conv.col,
                              .c = conv.out};
        } else {
            gemm.m = (int)op->axes[0].extent;
            gemm.n = (int)op->axes[1].extent;
            gemm.k = (int)op->axes[2].extent;
            gemm.a = filled((long)gemm.m * gemm.k, 1);
            gemm.b = filled((long)gemm.k * gemm.n, 2);
            gemm.c = filled((long)gemm.m * gemm.n, 3);
        }
        double t_def[64], t_hand[64], t_blas[64], t_im2col[64];
        for (int r = 0; r < rounds; r++) {
            /* The default nest is slow (~0.5 s a call at these sizes): one
             * sample a round is plenty. */
            t_def[r] = measure_rltune(w, &def, ws->n_threads, 1, "default schedule");
            t_hand[r] = measure_rltune(w, &hand, ws->n_threads, repeat, ws->schedule);
            t_blas[r] = time_baseline(run_sgemm, &gemm, ws->n_threads, repeat, 0.05);
            if (is_conv) t_im2col[r] = time_baseline(run_im2col_sgemm, &conv, ws->n_threads, repeat, 0.05);
        }
        double f = op->flops * 1e-9;
        double g_def = f / bench_median(t_def, rounds), g_hand = f / bench_median(t_hand, rounds);
        double g_blas = f / bench_median(t_blas, rounds);
        printf("| %s | %d | %.1f | %.1f | %.1f%s | %.2fx |\n", ws->name, ws->n_threads, g_def, g_hand, g_blas,
               is_conv ? " (sgemm on the im2col shape, im2col not counted)" : " (sgemm)", g_hand / g_blas);
        if (is_conv) {
            double g_im2col = f / bench_median(t_im2col, rounds);
            printf("| %s | %d | %.1f | %.1f | %.1f (im2col + sgemm) | %.2fx |\n", ws->name, ws->n_threads, g_def,
                   g_hand, g_im2col, g_hand / g_im2col);
        }
        fflush(stdout);
        rlt_workload_destroy(w);
        rlt_op_destroy(op);
        if (is_conv) {
            free(conv.input);
            free(conv.weight);
            free(conv.col);
            free(conv.out);
        } else {
            free(gemm.a);
            free(gemm.b);
            free(gemm.c);
        }
    }
    printf("\nGFLOP/s from the median time; schedules in bench/schedules/.\n");
    return 0;
}
