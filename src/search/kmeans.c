/*
 * kmeans.c - k-means (k-means++ seeds from an rlt_rng, Lloyd iterations)
 * and Chameleon's elbow rule for choosing k. Contracts in kmeans.h; the
 * PPO tuner's adaptive sampling (ppo.c) is the user.
 *
 * Entry points: rlt_kmeans_fit, rlt_kmeans_elbow, rlt_kmeans_free.
 */
#include "search/kmeans.h"

#include <math.h>
#include <string.h>

#define KMEANS_DEFAULT_ITERATIONS 100

void rlt_kmeans_free(rlt_kmeans *km)
{
    rlt_free(km->centroids);
    rlt_free(km->assign);
    rlt_free(km->sizes);
    *km = (rlt_kmeans){0};
}

static double dist2(const double *a, const double *b, int dim)
{
    double s = 0;
    for (int j = 0; j < dim; j++) s += (a[j] - b[j]) * (a[j] - b[j]);
    return s;
}

/* The nearest centroid of point p (the lower index on ties), and its
 * squared distance. */
static int nearest(const rlt_kmeans *km, const double *p, double *out_d2)
{
    int best = 0;
    double best_d2 = INFINITY;
    for (int c = 0; c < km->k; c++) {
        double d2 = dist2(p, km->centroids + (size_t)c * (size_t)km->dim, km->dim);
        if (d2 < best_d2) {
            best = c;
            best_d2 = d2;
        }
    }
    if (out_d2) *out_d2 = best_d2;
    return best;
}

/* k-means++: the seeds become the first centroids; km->k is how many were
 * found (fewer than k when the points have fewer distinct values). d2 is
 * scratch [n]. */
static void seed_plus_plus(rlt_kmeans *km, const double *points, int k, rlt_rng *rng, double *d2)
{
    int n = km->n, dim = km->dim;
    size_t row = (size_t)dim;
    int first = (int)rlt_rng_below(rng, (uint64_t)n);
    memcpy(km->centroids, points + (size_t)first * row, sizeof(double) * row);
    km->k = 1;
    for (int i = 0; i < n; i++) d2[i] = dist2(points + (size_t)i * row, km->centroids, dim);
    while (km->k < k) {
        double total = 0;
        for (int i = 0; i < n; i++) total += d2[i];
        if (!(total > 0)) break; /* every point sits on a centre */
        double u = rlt_rng_uniform(rng) * total;
        int pick = -1;
        for (int i = 0; i < n; i++) {
            if (d2[i] <= 0) continue;
            pick = i; /* the last point with weight, should rounding leave u >= 0 */
            u -= d2[i];
            if (u < 0) break;
        }
        double *c = km->centroids + (size_t)km->k * row;
        memcpy(c, points + (size_t)pick * row, sizeof(double) * row);
        km->k++;
        for (int i = 0; i < n; i++) d2[i] = fmin(d2[i], dist2(points + (size_t)i * row, c, dim));
    }
}

/* Assigns every point to its nearest centroid; true if any assignment
 * changed. */
static bool assign_nearest(rlt_kmeans *km, const double *points)
{
    bool changed = false;
    for (int i = 0; i < km->n; i++) {
        int c = nearest(km, points + (size_t)i * (size_t)km->dim, NULL);
        changed |= c != km->assign[i];
        km->assign[i] = c;
    }
    return changed;
}

/* Centroids as the means of their points (summed in point order). */
static void compute_means(rlt_kmeans *km, const double *points)
{
    size_t row = (size_t)km->dim;
    memset(km->sizes, 0, sizeof(int) * (size_t)km->k);
    for (int i = 0; i < km->n; i++) km->sizes[km->assign[i]]++;
    for (int c = 0; c < km->k; c++)
        if (km->sizes[c] > 0) memset(km->centroids + (size_t)c * row, 0, sizeof(double) * row);
    for (int i = 0; i < km->n; i++) {
        double *c = km->centroids + (size_t)km->assign[i] * row;
        for (size_t j = 0; j < row; j++) c[j] += points[(size_t)i * row + j];
    }
    for (int c = 0; c < km->k; c++)
        if (km->sizes[c] > 0)
            for (size_t j = 0; j < row; j++) km->centroids[(size_t)c * row + j] /= km->sizes[c];
}

/* Means, where an empty cluster first takes the point farthest from its
 * centroid among clusters of two or more points. */
static void update_centroids(rlt_kmeans *km, const double *points)
{
    compute_means(km, points);
    bool is_fixed = false;
    for (int c = 0; c < km->k; c++) {
        if (km->sizes[c] > 0) continue;
        int far = -1;
        double far_d2 = -1;
        for (int i = 0; i < km->n; i++) {
            if (km->sizes[km->assign[i]] < 2) continue;
            double d2 = dist2(points + (size_t)i * (size_t)km->dim,
                              km->centroids + (size_t)km->assign[i] * (size_t)km->dim, km->dim);
            if (d2 > far_d2) {
                far = i;
                far_d2 = d2;
            }
        }
        RLT_ASSERT(far >= 0); /* k <= n: some cluster has two points */
        km->sizes[km->assign[far]]--;
        km->assign[far] = c;
        km->sizes[c] = 1;
        is_fixed = true;
    }
    if (is_fixed) compute_means(km, points);
}

rlt_status rlt_kmeans_fit(const double *points, int n, int dim, int k, int max_iterations, rlt_rng *rng,
                          rlt_kmeans *out, rlt_diag *diag)
{
    *out = (rlt_kmeans){0};
    if (!points || !rng || n < 1 || dim < 1 || k < 1 || k > n)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "k-means: %d points of dimension %d into %d clusters (accepted: n >= 1, dim >= 1, "
                        "1 <= k <= n, non-NULL points and rng)",
                        n, dim, k);
    for (size_t i = 0; i < (size_t)n * (size_t)dim; i++)
        if (!isfinite(points[i]))
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "k-means: coordinate %zu of point %zu is %g: coordinates must be finite", i % (size_t)dim,
                            i / (size_t)dim, points[i]);
    if (max_iterations <= 0) max_iterations = KMEANS_DEFAULT_ITERATIONS;
    rlt_kmeans km = {.dim = dim, .n = n};
    km.centroids = rlt_malloc(sizeof(double) * (size_t)k * (size_t)dim);
    km.assign = rlt_malloc(sizeof(int) * (size_t)n);
    km.sizes = rlt_malloc(sizeof(int) * (size_t)k);
    double *d2 = rlt_malloc(sizeof(double) * (size_t)n);
    if (!km.centroids || !km.assign || !km.sizes || !d2) {
        rlt_free(d2);
        rlt_kmeans_free(&km);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory clustering %d points", n);
    }
    seed_plus_plus(&km, points, k, rng, d2);
    rlt_free(d2);
    for (int i = 0; i < n; i++) km.assign[i] = -1;
    assign_nearest(&km, points);
    for (;;) {
        update_centroids(&km, points);
        if (km.n_iterations >= max_iterations) break;
        km.n_iterations++;
        if (!assign_nearest(&km, points)) break;
    }
    km.loss = 0;
    for (int i = 0; i < n; i++)
        km.loss += dist2(points + (size_t)i * (size_t)dim, km.centroids + (size_t)km.assign[i] * (size_t)dim, dim);
    *out = km;
    return RLT_STATUS_OK;
}

rlt_status rlt_kmeans_elbow(const double *points, int n, int dim, int k_step, int k_max, double ratio,
                            int max_iterations, rlt_rng *rng, rlt_kmeans *out, rlt_diag *diag)
{
    *out = (rlt_kmeans){0};
    if (k_step < 1 || k_max < 1 || !(ratio >= 1))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "k-means elbow: k_step %d, k_max %d, ratio %g (accepted: k_step >= 1, k_max >= 1, "
                        "ratio >= 1)",
                        k_step, k_max, ratio);
    int limit = RLT_MIN(k_max, n);
    rlt_status st = rlt_kmeans_fit(points, n, dim, RLT_MIN(k_step, limit), max_iterations, rng, out, diag);
    if (st != RLT_STATUS_OK) return st;
    int k = RLT_MIN(k_step, limit);
    while (k < limit && out->loss > 0) {
        int k_next = RLT_MIN(k + k_step, limit);
        rlt_kmeans next;
        if ((st = rlt_kmeans_fit(points, n, dim, k_next, max_iterations, rng, &next, diag)) != RLT_STATUS_OK) {
            rlt_kmeans_free(out);
            return st;
        }
        if (!(out->loss >= ratio * next.loss)) {
            rlt_kmeans_free(&next);
            break;
        }
        rlt_kmeans_free(out);
        *out = next;
        k = k_next;
    }
    return RLT_STATUS_OK;
}
