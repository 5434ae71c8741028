/* Tests of src/search/kmeans.c: k-means finds well-separated clusters,
 * stops at the number of distinct points, keeps its invariants (no empty
 * cluster, centroids the means of their points, every point with its
 * nearest centroid) on random data, is deterministic for a seed; the elbow
 * rule takes k in steps while the loss falls by 2.5x; bad input and running
 * out of memory are reported. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search/kmeans.h"

#include "../common/leaks.h"

/* n_blobs blobs of per_blob points in 2-D: blob b centred at (10 b, 10 (b %
 * 3)), each coordinate within +-0.05 of it; point i belongs to blob i %
 * n_blobs. */
static double *make_blobs(int n_blobs, int per_blob, uint64_t seed)
{
    int n = n_blobs * per_blob;
    double *p = malloc(sizeof *p * 2 * (size_t)n);
    rlt_rng rng;
    rlt_rng_seed(&rng, seed);
    for (int i = 0; i < n; i++) {
        int b = i % n_blobs;
        p[2 * i] = 10.0 * b + 0.1 * (rlt_rng_uniform(&rng) - 0.5);
        p[2 * i + 1] = 10.0 * (b % 3) + 0.1 * (rlt_rng_uniform(&rng) - 0.5);
    }
    return p;
}

/* Every blob is one cluster and every cluster one blob. */
static void assert_blobs_found(const rlt_kmeans *km, int n_blobs)
{
    cr_assert_eq(km->k, n_blobs);
    int cluster_of_blob[64];
    for (int b = 0; b < n_blobs; b++) cluster_of_blob[b] = -1;
    for (int i = 0; i < km->n; i++) {
        int b = i % n_blobs;
        if (cluster_of_blob[b] < 0) cluster_of_blob[b] = km->assign[i];
        cr_assert_eq(km->assign[i], cluster_of_blob[b], "point %d of blob %d is in another cluster", i, b);
    }
    for (int b = 0; b < n_blobs; b++)
        for (int c = 0; c < b; c++)
            cr_assert_neq(cluster_of_blob[b], cluster_of_blob[c], "blobs %d and %d merged", b, c);
}

Test(kmeans, finds_well_separated_clusters)
{
    double *p = make_blobs(5, 20, 1);
    rlt_rng rng;
    rlt_rng_seed(&rng, 7);
    rlt_kmeans km;
    rlt_diag d = {0};
    cr_assert_eq(rlt_kmeans_fit(p, 100, 2, 5, 0, &rng, &km, &d), RLT_STATUS_OK, "%s", d.message);
    assert_blobs_found(&km, 5);
    for (int c = 0; c < 5; c++) {
        cr_assert_eq(km.sizes[c], 20);
        /* the centroid is at its blob's centre, within the blob's spread */
        double x = km.centroids[2 * c], y = km.centroids[2 * c + 1];
        int b = (int)lround(x / 10.0);
        cr_assert_lt(fabs(x - 10.0 * b), 0.05);
        cr_assert_lt(fabs(y - 10.0 * (b % 3)), 0.05);
    }
    /* 100 points within 0.05 of their centre in each coordinate */
    cr_assert_lt(km.loss, 100 * 2 * 0.05 * 0.05);
    rlt_kmeans_free(&km);
    free(p);
}

Test(kmeans, k_is_cut_to_the_distinct_points)
{
    const double p[] = {1, 1, 2, 2, 1, 1, 2, 2, 1, 1};
    rlt_rng rng;
    rlt_rng_seed(&rng, 3);
    rlt_kmeans km;
    cr_assert_eq(rlt_kmeans_fit(p, 5, 2, 4, 0, &rng, &km, NULL), RLT_STATUS_OK);
    cr_assert_eq(km.k, 2);
    cr_assert_eq(km.loss, 0.0);
    cr_assert_eq(km.sizes[0] + km.sizes[1], 5);
    for (int i = 0; i < 5; i++) cr_assert_eq(km.assign[i], km.assign[i % 2], "point %d", i);
    rlt_kmeans_free(&km);
}

/* On random data (uniform and clumpy, many k): no cluster is empty, the
 * sizes add up, each centroid is the mean of its points, and when Lloyd
 * converged every point is with its nearest centroid. */
Test(kmeans, invariants_hold_on_random_data)
{
    rlt_rng data;
    rlt_rng_seed(&data, 5);
    for (int trial = 0; trial < 40; trial++) {
        int n = 1 + (int)rlt_rng_below(&data, 80), dim = 1 + (int)rlt_rng_below(&data, 4);
        int k = 1 + (int)rlt_rng_below(&data, (uint64_t)n);
        double *p = malloc(sizeof *p * (size_t)n * (size_t)dim);
        for (int i = 0; i < n * dim; i++)
            p[i] = trial % 2 ? rlt_rng_uniform(&data) : (double)rlt_rng_below(&data, 3); /* clumpy: few values */
        rlt_rng rng;
        rlt_rng_seed(&rng, (uint64_t)trial);
        rlt_kmeans km;
        rlt_diag d = {0};
        cr_assert_eq(rlt_kmeans_fit(p, n, dim, k, 0, &rng, &km, &d), RLT_STATUS_OK, "%s", d.message);
        cr_assert(km.k >= 1 && km.k <= k);
        int total = 0;
        for (int c = 0; c < km.k; c++) {
            cr_assert_geq(km.sizes[c], 1, "trial %d: cluster %d is empty", trial, c);
            total += km.sizes[c];
            for (int j = 0; j < dim; j++) {
                double sum = 0;
                for (int i = 0; i < n; i++)
                    if (km.assign[i] == c) sum += p[i * dim + j];
                cr_assert_lt(fabs(sum / km.sizes[c] - km.centroids[c * dim + j]), 1e-9, "trial %d", trial);
            }
        }
        cr_assert_eq(total, n);
        double loss = 0;
        for (int i = 0; i < n; i++) {
            double own = 0;
            for (int j = 0; j < dim; j++) {
                double e = p[i * dim + j] - km.centroids[km.assign[i] * dim + j];
                own += e * e;
            }
            loss += own;
            if (km.n_iterations >= 100) continue; /* not converged: no claim */
            for (int c = 0; c < km.k; c++) {
                double other = 0;
                for (int j = 0; j < dim; j++) {
                    double e = p[i * dim + j] - km.centroids[c * dim + j];
                    other += e * e;
                }
                cr_assert_geq(other, own - 1e-12, "trial %d: point %d is nearer cluster %d", trial, i, c);
            }
        }
        cr_assert_lt(fabs(loss - km.loss), 1e-9 * (1 + loss));
        rlt_kmeans_free(&km);
        free(p);
    }
}

Test(kmeans, same_seed_same_clusters)
{
    rlt_rng data;
    rlt_rng_seed(&data, 11);
    enum { N = 200, DIM = 3 };
    static double p[N * DIM];
    for (int i = 0; i < N * DIM; i++) p[i] = rlt_rng_uniform(&data);
    rlt_kmeans a, b;
    rlt_rng ra, rb;
    rlt_rng_seed(&ra, 42);
    rlt_rng_seed(&rb, 42);
    cr_assert_eq(rlt_kmeans_elbow(p, N, DIM, 8, 64, 2.5, 0, &ra, &a, NULL), RLT_STATUS_OK);
    cr_assert_eq(rlt_kmeans_elbow(p, N, DIM, 8, 64, 2.5, 0, &rb, &b, NULL), RLT_STATUS_OK);
    cr_assert_eq(a.k, b.k);
    cr_assert_eq(memcmp(a.assign, b.assign, sizeof(int) * N), 0);
    cr_assert_eq(memcmp(a.centroids, b.centroids, sizeof(double) * (size_t)a.k * DIM), 0);
    cr_assert_eq(a.loss, b.loss);
    /* the callers' generators moved alike */
    cr_assert_eq(rlt_rng_u64(&ra), rlt_rng_u64(&rb));
    rlt_kmeans_free(&a);
    rlt_kmeans_free(&b);
}

/* 8 blobs: 16 clusters only split blobs (the loss falls by less than
 * 2.5x), so k stays 8. 16 blobs: 8 clusters merge blobs and 16 separate
 * them (a far larger fall), 24 only split: k = 16. */
Test(kmeans, the_elbow_takes_steps_of_8_while_the_loss_falls_by_2_5x)
{
    static const int blobs[] = {8, 16};
    for (int t = 0; t < 2; t++) {
        int n_blobs = blobs[t], n = n_blobs * 12;
        double *p = make_blobs(n_blobs, 12, 2);
        rlt_rng rng;
        rlt_rng_seed(&rng, 9);
        rlt_kmeans km;
        rlt_diag d = {0};
        cr_assert_eq(rlt_kmeans_elbow(p, n, 2, 8, 64, 2.5, 0, &rng, &km, &d), RLT_STATUS_OK, "%s", d.message);
        assert_blobs_found(&km, n_blobs);
        rlt_kmeans_free(&km);
        /* the rule's steps, checked by hand */
        rlt_kmeans k8, k_next;
        rlt_rng_seed(&rng, 9);
        cr_assert_eq(rlt_kmeans_fit(p, n, 2, 8, 0, &rng, &k8, NULL), RLT_STATUS_OK);
        cr_assert_eq(rlt_kmeans_fit(p, n, 2, 16, 0, &rng, &k_next, NULL), RLT_STATUS_OK);
        if (n_blobs == 8) cr_assert_lt(k8.loss, 2.5 * k_next.loss, "8 -> 16: %g -> %g", k8.loss, k_next.loss);
        else cr_assert_geq(k8.loss, 2.5 * k_next.loss, "8 -> 16: %g -> %g", k8.loss, k_next.loss);
        rlt_kmeans_free(&k8);
        rlt_kmeans_free(&k_next);
        free(p);
    }
}

/* k_max bounds k (not a multiple of the step: the last step is shorter),
 * and so does the number of points. */
Test(kmeans, the_elbow_stops_at_k_max_and_at_n)
{
    double *p = make_blobs(16, 4, 3);
    rlt_rng rng;
    rlt_rng_seed(&rng, 1);
    rlt_kmeans km;
    cr_assert_eq(rlt_kmeans_elbow(p, 64, 2, 8, 12, 2.5, 0, &rng, &km, NULL), RLT_STATUS_OK);
    cr_assert_eq(km.k, 12);
    rlt_kmeans_free(&km);
    cr_assert_eq(rlt_kmeans_elbow(p, 5, 2, 8, 64, 2.5, 0, &rng, &km, NULL), RLT_STATUS_OK);
    cr_assert_eq(km.k, 5);
    cr_assert_eq(km.loss, 0.0);
    rlt_kmeans_free(&km);
    free(p);
}

Test(kmeans, bad_input_is_refused)
{
    const double p[] = {0, 1, 2, 3};
    const double bad[] = {0, NAN, 2, 3};
    rlt_rng rng;
    rlt_rng_seed(&rng, 1);
    rlt_kmeans km;
    rlt_diag d = {0};
    cr_assert_eq(rlt_kmeans_fit(p, 4, 1, 5, 0, &rng, &km, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "1 <= k <= n"), "%s", d.message);
    cr_assert_eq(rlt_kmeans_fit(p, 4, 0, 1, 0, &rng, &km, NULL), RLT_STATUS_INVALID_ARGUMENT);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_kmeans_fit(bad, 4, 1, 2, 0, &rng, &km, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "point 1") && strstr(d.message, "finite"), "%s", d.message);
    cr_assert_eq(rlt_kmeans_elbow(p, 4, 1, 0, 8, 2.5, 0, &rng, &km, NULL), RLT_STATUS_INVALID_ARGUMENT);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_kmeans_elbow(p, 4, 1, 8, 8, 0.5, 0, &rng, &km, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "ratio"), "%s", d.message);
    cr_assert_null(km.centroids);
    rlt_kmeans_free(&km);
}

Test(kmeans, out_of_memory_is_reported_without_leaks)
{
    double *p = make_blobs(16, 4, 4);
    int n_failures = 0;
    for (long k = 1;; k++) {
        rlt_rng rng;
        rlt_rng_seed(&rng, 1);
        rlt_kmeans km;
        rlt_diag d = {0};
        rlt_alloc_fail_after(k);
        rlt_status st = rlt_kmeans_elbow(p, 64, 2, 8, 64, 2.5, 0, &rng, &km, &d);
        rlt_alloc_fail_after(0);
        rlt_kmeans_free(&km);
        if (st == RLT_STATUS_OK) break;
        cr_assert_eq(st, RLT_STATUS_OUT_OF_MEMORY, "allocation %ld: %s", k, d.message);
        cr_assert(strstr(d.message, "out of memory"), "%s", d.message);
        n_failures++;
        cr_assert_lt(k, 1000);
    }
    cr_assert_geq(n_failures, 4);
    free(p);
    assert_no_leaks();
}
