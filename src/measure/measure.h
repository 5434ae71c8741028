/*
 * measure.h - builds kernels and runs them safely: the builder compiles
 * generated C into shared objects (several kernels a translation unit, two
 * compiler processes at once, a cache keyed by the source's hash); the runner
 * loads each kernel in a child process, checks its output against the op's
 * reference, and times it. A crash, a hang, a compiler error or a wrong
 * answer becomes a status on that candidate; the caller always carries on.
 *
 * Typical use:
 *     rlt_workload *w;  rlt_workload_create(op, &bopts, seed, &w, &diag);
 *     rlt_build_batch(&bopts, n, kernels, builds, &diag);      // all compiled first
 *     for each i: rlt_run_kernel(w, &builds[i], &ropts, &runs[i]);  // then timed, one by one
 *     rlt_workload_destroy(w);
 * rlt_measure_nests does all of that for a batch of scheduled nests.
 */
#ifndef RLT_MEASURE_H
#define RLT_MEASURE_H

#include "codegen/codegen.h"
#include "rltune/measure.h"

#include <limits.h>

/* ---- builder ------------------------------------------------------------ */

/* The op's reference is compiled with these whatever cflags say: it must be
 * right (no contraction, no fast-math), not fast. */
#define RLT_REFERENCE_CFLAGS "-O2 -ffp-contract=off"

typedef struct rlt_build_result {
    rlt_status status;          /* OK, BUILD_ERROR or BUILD_TIMEOUT */
    char so_path[PATH_MAX];     /* the shared object holding the kernel */
    char symbol[RLT_SYMBOL_MAX];
    double build_s;             /* wall time of the compile that produced it (0 if cached) */
    bool was_cached;
    char log[2048];             /* the compiler's messages for this kernel, if it failed */
} rlt_build_result;

/* Compiles n kernels. Per-kernel failures land in results[i].status; the
 * return value is non-OK only when the builder itself cannot work (no cache
 * directory, cannot start processes); then the unbuilt kernels say so in
 * their log. A translation unit that fails to compile (or times out) is
 * retried one kernel at a time, so one bad kernel does not fail its
 * neighbours. Kernels with equal symbols are compiled once. `opts` may be
 * NULL (all defaults). Every compiler started has been reaped on return.
 * Several processes may share one cache directory. */
rlt_status rlt_build_batch(const rlt_build_opts *opts, int n, const rlt_kernel_src *kernels,
                           rlt_build_result *results, rlt_diag *diag);

/* rlt_build_batch where each kernel may name its own compiler command:
 * cc_of[i] (NULL: opts's) for kernel i; cc_of itself may be NULL. All the
 * compilers share the n_parallel processes, so a batch mixing gcc and clang
 * keeps every process busy; everything else in `opts` applies to all. */
rlt_status rlt_build_batch_cc(const rlt_build_opts *opts, int n, const rlt_kernel_src *kernels,
                              const char *const *cc_of, rlt_build_result *results, rlt_diag *diag);

/* The compiler's full command line for display: "gcc -O3 ... -shared -fPIC". */
void rlt_build_describe(const rlt_build_opts *opts, bool needs_openmp, rlt_str *out);

/* ---- workload: inputs and reference output shared with child runs ------- */

/* rlt_workload_create and rlt_workload_destroy are declared in
 * rltune/measure.h. */

/* The op the workload was made for (borrowed). */
const rlt_op *rlt_workload_op(const rlt_workload *w);

/* ---- runner ------------------------------------------------------------- */

/* Runs one built kernel in a child process: load, one call checked against
 * the reference, warm-up, then repeat samples of `number` calls, and a final
 * check of the output. Never returns early for a crash or hang of the
 * kernel: it is in `out->status`. A kernel too slow for `repeat` samples
 * within timeout_s gets fewer (n_samples says how many) rather than a
 * timeout. `opts` may be NULL (all defaults).
 * Threads: one run at a time (the child pins itself to a CPU). The child is
 * forked without exec and loads the kernel, so no other thread of the caller
 * should be inside dlopen or hold a lock the child needs while it forks. */
void rlt_run_kernel(const rlt_workload *w, const rlt_build_result *build, const rlt_run_opts *opts,
                    rlt_run_result *out);

/* Writes a result's message; long texts (paths, dlerror) are cut to fit. */
void rlt_run_result_set_message(rlt_run_result *r, const char *fmt, ...) RLT_PRINTF(2, 3);

/* Tolerance: an output element passes when
 *   |out - ref| <= RLT_TOLERANCE_FACTOR * sqrt(R + 1) * FLT_EPSILON * magnitude + FLT_MIN
 * where R is the reduction size and magnitude the reference's sum of |terms|. */
#define RLT_TOLERANCE_FACTOR 16.0

/* ---- all of it for a batch of nests ------------------------------------- */

/* Lowers, builds (in parallel) and then runs (one at a time) n nests of the
 * workload's op. Results in order; failures are results, not errors. */
rlt_status rlt_measure_nests(const rlt_workload *w, const rlt_build_opts *bopts,
                             const rlt_run_opts *ropts, int n, const rlt_nest *nests,
                             rlt_run_result *results, rlt_diag *diag);

/* rlt_measure_nests where nest i is compiled by cc_of[i] (NULL entries, or
 * cc_of NULL: bopts's compiler); all of them built together, then run. */
rlt_status rlt_measure_nests_cc(const rlt_workload *w, const rlt_build_opts *bopts, const char *const *cc_of,
                                const rlt_run_opts *ropts, int n, const rlt_nest *nests,
                                rlt_run_result *results, rlt_diag *diag);

/* rlt_measure_nests where nest i is of workload w_of[i], run with
 * ropts_of[i] (NULL entries: defaults): nests of several ops built in one
 * batch, then run one at a time. Nests that lower to the same code share a
 * run only when their workloads and run options are the same too. Used by
 * the env to evaluate the next states of many episodes at once. */
rlt_status rlt_measure_nests_multi(const rlt_workload *const *w_of, const rlt_build_opts *bopts,
                                   const rlt_run_opts *const *ropts_of, int n, const rlt_nest *nests,
                                   rlt_run_result *results, rlt_diag *diag);

/* The first half of rlt_measure_nests_cc, for a caller that chooses when a
 * machine compiles and when it times (an executor, rltune/measure.h):
 * lowers and compiles the n nests (cc_of as there: read during the build
 * only) into a batch that borrows the workload (set also when the builder
 * itself failed, the error returned, so that every nest still gets a
 * result). rlt_measure_run runs it and rlt_batch_destroy frees it
 * (rltune/measure.h). */
rlt_status rlt_batch_build(const rlt_workload *w, const rlt_build_opts *bopts, const char *const *cc_of, int n,
                           const rlt_nest *nests, rlt_batch **out, rlt_diag *diag);

/* ---- target ------------------------------------------------------------- */

typedef struct rlt_target {
    char cpu_model[128];  /* from /proc/cpuinfo */
    int n_cores;
    int vector_floats;    /* floats in the widest vector register: 16 (AVX-512), 8 (AVX2), 4 */
    bool has_fma;
    int64_t llc_bytes;    /* the largest cache of CPU 0's (sysfs), 0 when unknown */
} rlt_target;

void rlt_target_detect(rlt_target *t);

#endif /* RLT_MEASURE_H */
