/*
 * kmeans.h - k-means clustering of points in a few dimensions: seeded
 * k-means++ initialisation and Lloyd iterations, and the elbow rule that
 * Chameleon's adaptive sampling uses to choose k (ppo.c; docs/tuners.md,
 * "ppo").
 *
 * Deterministic: every random choice comes from the caller's rlt_rng, ties
 * go to the lower index, and sums run in a fixed order, so one seed and one
 * input give the same clusters on every run.
 */
#ifndef RLT_KMEANS_H
#define RLT_KMEANS_H

#include "core/core.h"

/* A clustering of n points of `dim` coordinates. Arrays are owned: free
 * with rlt_kmeans_free (a zeroed struct is empty and may be freed). */
typedef struct rlt_kmeans {
    int k;             /* clusters: the k asked for, or fewer when the points have fewer distinct values */
    int dim, n;
    double *centroids; /* k x dim: the mean of each cluster's points */
    int *assign;       /* n: the cluster of each point, 0 .. k-1 */
    int *sizes;        /* k: points per cluster, each >= 1 */
    double loss;       /* the sum over points of the squared distance to their centroid */
    int n_iterations;  /* Lloyd iterations run */
} rlt_kmeans;

void rlt_kmeans_free(rlt_kmeans *km);

/* Clusters points [n x dim] (row-major, borrowed) into k clusters:
 * k-means++ seeds (the first centre a uniformly drawn point, each next one
 * a point drawn with probability proportional to its squared distance to
 * the nearest centre so far), then Lloyd iterations (assign each point to
 * its nearest centroid, move each centroid to its points' mean) until no
 * assignment changes or after max_iterations (<= 0: 100). When fewer than k
 * distinct points exist, out->k is their number (every squared distance
 * is then 0 and seeding stops). A cluster that loses all its points takes
 * the point farthest from its centroid (lowest index on ties), so none is
 * empty. *out is overwritten (free it first if it held a clustering).
 * Errors: INVALID_ARGUMENT for n < 1, dim < 1, k < 1 or k > n, a NULL
 * array or a coordinate that is not finite; OUT_OF_MEMORY. On error *out is
 * empty. */
rlt_status rlt_kmeans_fit(const double *points, int n, int dim, int k, int max_iterations, rlt_rng *rng,
                          rlt_kmeans *out, rlt_diag *diag);

/* Chameleon's elbow rule: k grows in steps of k_step while each step
 * divides the loss by at least `ratio`, and the clustering at the last k
 * accepted is the result. Exactly: fit k = min(k_step, k_max, n); then
 * while k < min(k_max, n) and the loss is above 0, fit k' = min(k +
 * k_step, k_max, n); if loss(k) >= ratio * loss(k'), k' is accepted and
 * the rule goes on from it; otherwise k stays and the rule stops. Every
 * fit draws from `rng` in turn (rlt_kmeans_fit with max_iterations).
 * Chameleon: k_step 8, ratio 2.5. Errors: those of rlt_kmeans_fit, and
 * INVALID_ARGUMENT for k_step < 1, k_max < 1 or ratio < 1. */
rlt_status rlt_kmeans_elbow(const double *points, int n, int dim, int k_step, int k_max, double ratio,
                            int max_iterations, rlt_rng *rng, rlt_kmeans *out, rlt_diag *diag);

#endif /* RLT_KMEANS_H */
