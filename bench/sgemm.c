/*
 * sgemm.c - OpenBLAS sgemm timed the way rltune's runner times kernels, for
 * side-by-side tables (the main job, benchmarks): pinned to the last CPU
 * with one thread, a warm-up call, then 7 samples of `number` calls (number
 * doubled until a sample lasts >= 50 ms); prints the median.
 *
 * Usage: bench_sgemm M N K [THREADS] [--json]
 */
#include <cblas.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "timing.h"

typedef struct gemm {
    int m, n, k;
    const float *a, *b;
    float *c;
} gemm;

static bool run_sgemm(void *arg)
{
    const gemm *g = arg;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->m, g->n, g->k, 1.0f, g->a, g->k, g->b, g->n, 0.0f,
                g->c, g->n);
    return true;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: bench_sgemm M N K [THREADS] [--json]\n");
        return 2;
    }
    int m = atoi(argv[1]), n = atoi(argv[2]), k = atoi(argv[3]);
    int threads = argc > 4 && strcmp(argv[4], "--json") != 0 ? atoi(argv[4]) : 1;
    int is_json = strcmp(argv[argc - 1], "--json") == 0;
    if (m < 1 || n < 1 || k < 1 || threads < 1 || threads > 256) {
        fprintf(stderr, "bench_sgemm: sizes and threads must be positive\n");
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
    float *a = malloc(sizeof(float) * (size_t)m * (size_t)k), *b = malloc(sizeof(float) * (size_t)k * (size_t)n),
          *c = malloc(sizeof(float) * (size_t)m * (size_t)n);
    if (!a || !b || !c) {
        fprintf(stderr, "bench_sgemm: out of memory\n");
        return 3;
    }
    for (size_t i = 0; i < (size_t)m * (size_t)k; i++) a[i] = (float)(i % 7) * 0.1f;
    for (size_t i = 0; i < (size_t)k * (size_t)n; i++) b[i] = (float)(i % 5) * 0.2f;
    gemm g = {m, n, k, a, b, c};
    double time_s = bench_time_calls(run_sgemm, &g, 7, 0.05);
    double gflops = 2.0 * m * n * k / time_s * 1e-9;
    if (is_json)
        printf("{\"m\":%d,\"n\":%d,\"k\":%d,\"threads\":%d,\"time_ms\":%.6f,\"gflops\":%.3f}\n", m, n, k, threads,
               time_s * 1e3, gflops);
    else
        printf("OpenBLAS sgemm %dx%dx%d, %d thread%s: %.3f ms, %.2f GFLOP/s (median of 7)\n", m, n, k, threads,
               threads == 1 ? "" : "s", time_s * 1e3, gflops);
    free(a);
    free(b);
    free(c);
    return 0;
}
