/*
 * sgemm.c - OpenBLAS sgemm timed the way rltune's runner times kernels, for
 * side-by-side tables (the main job, benchmarks): pinned to the last CPU
 * with one thread, a warm-up call, then 7 samples of `number` calls (number
 * doubled until a sample lasts >= 50 ms); prints the median.
 *
 * Usage: bench_sgemm M N K [THREADS] [--batch B] [--trans-b] [--json]
 *
 * --batch B times B independent products of the shape per call (rltune's
 * batch_matmul: A, B and C each B matrices back to back); --trans-b reads B
 * stored N x K (rltune's dense: W[j,k]), as cblas' CblasTrans.
 */
#include <cblas.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "timing.h"

typedef struct gemm {
    int m, n, k, batch;
    bool trans_b;
    const float *a, *b;
    float *c;
} gemm;

static bool run_sgemm(void *arg)
{
    const gemm *g = arg;
    size_t sa = (size_t)g->m * (size_t)g->k, sb = (size_t)g->k * (size_t)g->n, sc = (size_t)g->m * (size_t)g->n;
    for (int i = 0; i < g->batch; i++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, g->trans_b ? CblasTrans : CblasNoTrans, g->m, g->n, g->k, 1.0f,
                    g->a + i * sa, g->k, g->b + i * sb, g->trans_b ? g->k : g->n, 0.0f, g->c + i * sc, g->n);
    return true;
}

static int usage(void)
{
    fprintf(stderr, "usage: bench_sgemm M N K [THREADS] [--batch B] [--trans-b] [--json]\n");
    return 2;
}

int main(int argc, char **argv)
{
    int pos[4] = {0, 0, 0, 1}, n_pos = 0, batch = 1, is_json = 0;
    bool trans_b = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) is_json = 1;
        else if (strcmp(argv[i], "--trans-b") == 0) trans_b = true;
        else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc) batch = atoi(argv[++i]);
        else if (argv[i][0] != '-' && n_pos < 4) pos[n_pos++] = atoi(argv[i]);
        else return usage();
    }
    int m = pos[0], n = pos[1], k = pos[2], threads = pos[3];
    if (n_pos < 3) return usage();
    if (m < 1 || n < 1 || k < 1 || batch < 1 || threads < 1 || threads > 256) {
        fprintf(stderr, "bench_sgemm: sizes, batch and threads must be positive\n");
        return 2;
    }
    if (threads == 1) {
        cpu_set_t set;
        sched_getaffinity(0, sizeof set, &set);
        int last = -1;
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &set)) last = c;
        CPU_ZERO(&set);
        CPU_SET(last, &set);
        sched_setaffinity(0, sizeof set, &set);
    }
    openblas_set_num_threads(threads);
    size_t nb = (size_t)batch;
    float *a = malloc(sizeof(float) * nb * (size_t)m * (size_t)k), *b = malloc(sizeof(float) * nb * (size_t)k * (size_t)n),
          *c = malloc(sizeof(float) * nb * (size_t)m * (size_t)n);
    if (!a || !b || !c) {
        fprintf(stderr, "bench_sgemm: out of memory\n");
        return 3;
    }
    for (size_t i = 0; i < nb * (size_t)m * (size_t)k; i++) a[i] = (float)(i % 7) * 0.1f;
    for (size_t i = 0; i < nb * (size_t)k * (size_t)n; i++) b[i] = (float)(i % 5) * 0.2f;
    gemm g = {m, n, k, batch, trans_b, a, b, c};
    double time_s = bench_time_calls(run_sgemm, &g, 7, 0.05);
    double gflops = 2.0 * batch * (double)m * n * k / time_s * 1e-9;
    if (is_json)
        printf("{\"m\":%d,\"n\":%d,\"k\":%d,\"batch\":%d,\"trans_b\":%s,\"threads\":%d,\"time_ms\":%.6f,"
               "\"gflops\":%.3f}\n",
               m, n, k, batch, trans_b ? "true" : "false", threads, time_s * 1e3, gflops);
    else
        printf("OpenBLAS sgemm %d x %dx%dx%d%s, %d thread%s: %.3f ms, %.2f GFLOP/s (median of 7)\n", batch, m, n, k, trans_b ? " (B transposed)" : "", threads,
               threads == 1 ? "" : "s", time_s * 1e3, gflops);
    free(a);
    free(b);
    free(c);
    return 0;
}
