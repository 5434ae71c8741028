/*
 * measure.c - measures a batch of scheduled nests end to end.
 *
 * Entry points: rlt_measure_nests, rlt_measure_nests_cc and
 * rlt_measure_nests_multi (nests of several workloads). They lower every
 * nest (a codegen failure becomes that nest's BUILD_ERROR), compile all
 * distinct kernels in one batch first, so nothing is timed while compilers
 * run, then run them one at a time. Nests that lower to the same code for
 * the same compiler share one compile and one run.
 */
#include "measure/measure.h"

#include <stdio.h>
#include <string.h>

rlt_status rlt_measure_nests(const rlt_workload *w, const rlt_build_opts *bopts, const rlt_run_opts *ropts, int n,
                             const rlt_nest *nests, rlt_run_result *results, rlt_diag *diag)
{
    return rlt_measure_nests_cc(w, bopts, NULL, ropts, n, nests, results, diag);
}

static bool same_cc(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

/* The batch behind every entry point: nest i is of workload w_of[i] (or w
 * for all when w_of is NULL), compiled by cc_of[i] and run with
 * ropts_of[i] (or ropts). */
static rlt_status measure_batch(const rlt_workload *w, const rlt_workload *const *w_of,
                                const rlt_build_opts *bopts, const char *const *cc_of, const rlt_run_opts *ropts,
                                const rlt_run_opts *const *ropts_of, int n, const rlt_nest *nests,
                                rlt_run_result *results, rlt_diag *diag)
{
    RLT_ASSERT((w || w_of) && n >= 0 && (n == 0 || (nests && results)));
    rlt_status st = RLT_STATUS_OK;
    int n_kernels = 0;
    rlt_kernel_src *kernels = rlt_calloc((size_t)n, sizeof *kernels);
    rlt_build_result *builds = rlt_calloc((size_t)n, sizeof *builds);
    int *kernel_of = rlt_calloc((size_t)n, sizeof *kernel_of); /* nest -> kernel, -1 if not lowered */
    int *run_by = rlt_calloc((size_t)n, sizeof *run_by);       /* kernel -> nest whose run it got */
    const char **kernel_cc = rlt_calloc((size_t)n, sizeof *kernel_cc);
    if (!kernels || !builds || !kernel_of || !run_by || !kernel_cc) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory measuring %d nests", n);
        goto cleanup;
    }

    for (int i = 0; i < n; i++) {
        memset(&results[i], 0, sizeof results[i]);
        kernel_of[i] = -1;
        RLT_ASSERT(!w_of || w_of[i]);
        const rlt_op *op = rlt_workload_op(w_of ? w_of[i] : w);
        const rlt_op *nest_op = nests[i].op;
        if (nest_op != op && (!nest_op || strcmp(nest_op->spec, op->spec) != 0)) {
            st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "nest %d is for op '%s' but the workload is for '%s'",
                          i, nest_op ? nest_op->spec : "(none)", op->spec);
            goto cleanup;
        }
    }
    for (int i = 0; i < n; i++) {
        rlt_diag d = {0};
        rlt_kernel_src k = {0};
        if (rlt_codegen_kernel(&nests[i], &k, &d) != RLT_STATUS_OK) {
            rlt_kernel_src_free(&k);
            results[i].status = RLT_STATUS_BUILD_ERROR;
            rlt_run_result_set_message(&results[i], "code generation failed (%s): %s", rlt_status_str(d.status), d.message);
            continue;
        }
        const char *cc = cc_of ? cc_of[i] : NULL;
        for (int j = 0; j < n_kernels && kernel_of[i] < 0; j++)
            if (strcmp(kernels[j].symbol, k.symbol) == 0 && same_cc(kernel_cc[j], cc)) kernel_of[i] = j;
        if (kernel_of[i] >= 0) {
            rlt_kernel_src_free(&k);
            continue;
        }
        kernel_of[i] = n_kernels;
        run_by[n_kernels] = -1;
        kernel_cc[n_kernels] = cc;
        kernels[n_kernels++] = k;
    }

    /* Kernels the builder could not handle carry its message as their build
     * status, so the runs below still give every nest a result. */
    st = rlt_build_batch_cc(bopts, n_kernels, kernels, kernel_cc, builds, diag);

    for (int i = 0; i < n; i++) {
        int j = kernel_of[i];
        if (j < 0) continue;
        const rlt_workload *wi = w_of ? w_of[i] : w;
        const rlt_run_opts *ri = ropts_of ? ropts_of[i] : ropts;
        int k = run_by[j];
        if (k >= 0 && (w_of ? w_of[k] : w) == wi && (ropts_of ? ropts_of[k] : ropts) == ri) {
            results[i] = results[k];
            continue;
        }
        rlt_run_kernel(wi, &builds[j], ri, &results[i]);
        results[i].build_s = builds[j].build_s;
        if (k < 0) run_by[j] = i;
    }

cleanup:
    for (int j = 0; kernels && j < n_kernels; j++) rlt_kernel_src_free(&kernels[j]);
    rlt_free(kernel_cc);
    rlt_free(run_by);
    rlt_free(kernel_of);
    rlt_free(builds);
    rlt_free(kernels);
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
