/*
 * measure.c - measuring a batch of scheduled nests: rlt_measure_nests (one
 * workload), rlt_measure_nests_cc (a compiler per nest) and
 * rlt_measure_nests_multi (nests of several workloads). They lower every
 * nest (a codegen failure becomes that nest's BUILD_ERROR), compile all
 * distinct kernels in one batch first, so nothing is timed while compilers
 * run, then run them one at a time. Nests that lower to the same code for
 * the same compiler share one compile and one run. The two halves are
 * rlt_batch_build and rlt_measure_run (rltune/measure.h), for a caller
 * that must do something between them (an executor that times one host's
 * kernels at a time).
 */
#include "measure/measure.h"

#include <stdio.h>
#include <string.h>

/* A batch compiled and not yet run. */
struct rlt_batch {
    int n;                         /* nests */
    const rlt_workload *w;         /* every nest's, or NULL when w_of */
    const rlt_workload **w_of;     /* per nest (copied), or NULL */
    rlt_run_result *lowered;       /* per nest: a codegen failure's BUILD_ERROR, else zero */
    int n_kernels;
    rlt_kernel_src *kernels;
    rlt_build_result *builds;      /* per kernel */
    int *kernel_of;                /* nest -> kernel, -1 if not lowered */
    const char **kernel_cc;        /* per kernel: the caller's cc_of entries, read by the build only */
};

rlt_status rlt_measure_nests(const rlt_workload *w, const rlt_build_opts *bopts, const rlt_run_opts *ropts, int n,
                             const rlt_nest *nests, rlt_run_result *results, rlt_diag *diag)
{
    return rlt_measure_nests_cc(w, bopts, NULL, ropts, n, nests, results, diag);
}

static bool same_cc(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

void rlt_batch_destroy(rlt_batch *b)
{
    if (!b) return;
    for (int j = 0; b->kernels && j < b->n_kernels; j++) rlt_kernel_src_free(&b->kernels[j]);
    rlt_free(b->w_of);
    rlt_free(b->lowered);
    rlt_free(b->kernel_cc);
    rlt_free(b->kernel_of);
    rlt_free(b->builds);
    rlt_free(b->kernels);
    rlt_free(b);
}

/* The first half behind every entry point: nest i is of workload w_of[i]
 * (or w for all when w_of is NULL), compiled by cc_of[i]. */
static rlt_status batch_build(const rlt_workload *w, const rlt_workload *const *w_of, const rlt_build_opts *bopts,
                              const char *const *cc_of, int n, const rlt_nest *nests, rlt_batch **out,
                              rlt_diag *diag)
{
    RLT_ASSERT((w || w_of) && n >= 0 && (n == 0 || nests));
    *out = NULL;
    rlt_batch *b = rlt_calloc(1, sizeof *b);
    size_t cap = (size_t)RLT_MAX(n, 1);
    if (b) {
        b->n = n;
        b->w = w;
        b->kernels = rlt_calloc(cap, sizeof *b->kernels);
        b->builds = rlt_calloc(cap, sizeof *b->builds);
        b->kernel_of = rlt_calloc(cap, sizeof *b->kernel_of);
        b->kernel_cc = rlt_calloc(cap, sizeof *b->kernel_cc);
        b->lowered = rlt_calloc(cap, sizeof *b->lowered);
        if (w_of && (b->w_of = rlt_calloc(cap, sizeof *b->w_of)))
            memcpy(b->w_of, w_of, sizeof *w_of * (size_t)n);
    }
    if (!b || !b->kernels || !b->builds || !b->kernel_of || !b->kernel_cc || !b->lowered || (w_of && !b->w_of)) {
        rlt_batch_destroy(b);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory measuring %d nests", n);
    }
    for (int i = 0; i < n; i++) {
        b->kernel_of[i] = -1;
        RLT_ASSERT(!w_of || w_of[i]);
        const rlt_op *op = rlt_workload_op(w_of ? w_of[i] : w);
        const rlt_op *nest_op = nests[i].op;
        if (nest_op != op && (!nest_op || strcmp(nest_op->spec, op->spec) != 0)) {
            rlt_batch_destroy(b);
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "nest %d is for op '%s' but the workload is for '%s'",
                            i, nest_op ? nest_op->spec : "(none)", op->spec);
        }
    }
    for (int i = 0; i < n; i++) {
        rlt_diag d = {0};
        rlt_kernel_src k = {0};
        if (rlt_codegen_kernel(&nests[i], &k, &d) != RLT_STATUS_OK) {
            rlt_kernel_src_free(&k);
            b->lowered[i].status = RLT_STATUS_BUILD_ERROR;
            rlt_run_result_set_message(&b->lowered[i], "code generation failed (%s): %s", rlt_status_str(d.status),
                                       d.message);
            continue;
        }
        const char *cc = cc_of ? cc_of[i] : NULL;
        for (int j = 0; j < b->n_kernels && b->kernel_of[i] < 0; j++)
            if (strcmp(b->kernels[j].symbol, k.symbol) == 0 && same_cc(b->kernel_cc[j], cc)) b->kernel_of[i] = j;
        if (b->kernel_of[i] >= 0) {
            rlt_kernel_src_free(&k);
            continue;
        }
        b->kernel_of[i] = b->n_kernels;
        b->kernel_cc[b->n_kernels] = cc;
        b->kernels[b->n_kernels++] = k;
    }
    /* Kernels the builder could not handle carry its message as their build
     * status, so the runs still give every nest a result. */
    rlt_status st = rlt_build_batch_cc(bopts, b->n_kernels, b->kernels, b->kernel_cc, b->builds, diag);
    *out = b;
    return st;
}

rlt_status rlt_batch_build(const rlt_workload *w, const rlt_build_opts *bopts, const char *const *cc_of, int n,
                           const rlt_nest *nests, rlt_batch **out, rlt_diag *diag)
{
    return batch_build(w, NULL, bopts, cc_of, n, nests, out, diag);
}

/* The second half: nest i run with ropts_of[i] (or ropts), one at a time. */
static void batch_run(const rlt_batch *b, const rlt_run_opts *ropts, const rlt_run_opts *const *ropts_of,
                      rlt_run_result *results)
{
    int *run_by = rlt_calloc((size_t)RLT_MAX(b->n_kernels, 1), sizeof *run_by); /* kernel -> nest whose run it got */
    for (int j = 0; run_by && j < b->n_kernels; j++) run_by[j] = -1;
    for (int i = 0; i < b->n; i++) {
        int j = b->kernel_of[i];
        if (j < 0) {
            results[i] = b->lowered[i];
            continue;
        }
        const rlt_workload *wi = b->w_of ? b->w_of[i] : b->w;
        const rlt_run_opts *ri = ropts_of ? ropts_of[i] : ropts;
        int k = run_by ? run_by[j] : -1;
        if (k >= 0 && (b->w_of ? b->w_of[k] : b->w) == wi && (ropts_of ? ropts_of[k] : ropts) == ri) {
            results[i] = results[k];
            continue;
        }
        rlt_run_kernel(wi, &b->builds[j], ri, &results[i]);
        results[i].build_s = b->builds[j].build_s;
        if (run_by && k < 0) run_by[j] = i;
    }
    rlt_free(run_by);
}

void rlt_measure_run(const rlt_batch *b, const rlt_run_opts *ropts, rlt_run_result *out)
{
    batch_run(b, ropts, NULL, out);
}

static rlt_status measure_batch(const rlt_workload *w, const rlt_workload *const *w_of,
                                const rlt_build_opts *bopts, const char *const *cc_of, const rlt_run_opts *ropts,
                                const rlt_run_opts *const *ropts_of, int n, const rlt_nest *nests,
                                rlt_run_result *results, rlt_diag *diag)
{
    RLT_ASSERT(n == 0 || results);
    rlt_batch *b = NULL;
    rlt_status st = batch_build(w, w_of, bopts, cc_of, n, nests, &b, diag);
    if (b) batch_run(b, ropts, ropts_of, results);
    rlt_batch_destroy(b);
    return st;
}

rlt_status rlt_measure_nests_cc(const rlt_workload *w, const rlt_build_opts *bopts, const char *const *cc_of,
                                const rlt_run_opts *ropts, int n, const rlt_nest *nests,
                                rlt_run_result *results, rlt_diag *diag)
{
    return measure_batch(w, NULL, bopts, cc_of, ropts, NULL, n, nests, results, diag);
}

rlt_status rlt_measure_nests_multi(const rlt_workload *const *w_of, const rlt_build_opts *bopts,
                                   const rlt_run_opts *const *ropts_of, int n, const rlt_nest *nests,
                                   rlt_run_result *results, rlt_diag *diag)
{
    return measure_batch(NULL, w_of, bopts, NULL, NULL, ropts_of, n, nests, results, diag);
}
