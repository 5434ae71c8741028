/* timing.h - how every benchmark program times a baseline, so that their
 * numbers compare: one warm-up call, then `n_samples` samples of `number`
 * calls each (number doubled until a sample lasts at least min_sample_s),
 * and the median seconds per call. rltune's runner times kernels the same
 * way. Header-only: each bench/ program is its own executable, some of
 * them without librltune. Used by bench/sgemm.c, dnnl.c, foundation.c and
 * tuning.c. */
#ifndef RLT_BENCH_TIMING_H
#define RLT_BENCH_TIMING_H

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

enum { BENCH_MAX_SAMPLES = 64 };

static inline double bench_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n) (sorts v); 0 when n is 0. */
static inline double bench_median(double *v, int n)
{
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Geometric mean of the positive entries of v (others are unknowns, left
 * out); 0 when there are none. */
static inline double bench_geomean(const double *v, int n)
{
    double log_sum = 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (v[i] > 0) {
            log_sum += log(v[i]);
            k++;
        }
    return k ? exp(log_sum / k) : 0;
}

/* Times fn(ctx) as above; n_samples is 1..BENCH_MAX_SAMPLES. Returns the
 * median seconds per call, or -1 as soon as a call returns false. */
static inline double bench_time_calls(bool (*fn)(void *ctx), void *ctx, int n_samples, double min_sample_s)
{
    double samples[BENCH_MAX_SAMPLES];
    if (n_samples < 1 || n_samples > BENCH_MAX_SAMPLES || !fn(ctx)) return -1;
    int number = 1;
    for (int r = 0; r < n_samples; r++) {
        for (;;) {
            double t0 = bench_now_s();
            bool is_ok = true;
            for (int i = 0; i < number; i++) is_ok &= fn(ctx);
            double dt = bench_now_s() - t0;
            if (!is_ok) return -1;
            if (dt >= min_sample_s || number >= (1 << 20)) {
                samples[r] = dt / number;
                break;
            }
            number *= 2;
        }
    }
    return bench_median(samples, n_samples);
}

#endif /* RLT_BENCH_TIMING_H */
