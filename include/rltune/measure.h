/*
 * rltune/measure.h - measuring nests on this machine: each nest is lowered
 * to C, compiled by the system compiler (a batch together, two compiler
 * processes at once, a cache keyed by the source's hash), then run in a
 * child process, one at a time: one call checked against the op's
 * reference, warm-up, timed samples. A crash, a hang, a compiler error or
 * a wrong answer is that nest's status; the caller always carries on.
 *
 *     rlt_workload *w = NULL;
 *     rlt_workload_create(op, NULL, 0, &w, &d);   // inputs + reference output
 *     rlt_run_result r;
 *     rlt_measure(w, NULL, NULL, 1, &nest, &r, &d);
 *     printf("%s %.1f GFLOP/s\n", rlt_status_str(r.status), r.gflops);
 *     rlt_workload_destroy(w);
 */
#ifndef RLTUNE_MEASURE_H
#define RLTUNE_MEASURE_H

#include "rltune/schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How kernels are compiled. Zero fields take the defaults. */
typedef struct rlt_build_opts {
    const char *cc;        /* compiler command: NULL = $RLTUNE_CC or "gcc" ("clang" works) */
    const char *cflags;    /* NULL = RLT_DEFAULT_CFLAGS; split on spaces */
    const char *cache_dir; /* NULL = $RLTUNE_CACHE_DIR, else $XDG_CACHE_HOME/rltune or ~/.cache/rltune */
    double timeout_s;      /* per compiler process; 0 = 60 */
    int n_parallel;        /* compiler processes at once; 0 = 2 */
    int max_per_unit;      /* kernels per translation unit; 0 = 8 */
} rlt_build_opts;

#define RLT_DEFAULT_CFLAGS "-O3 -march=native -mprefer-vector-width=512 -ffp-contract=fast"

/* The whole compiler command line a kernel is built with, for display
 * ("gcc -O3 ... -shared -fPIC", with -fopenmp when with_openmp). Free with
 * rlt_free; NULL when out of memory. */
RLT_API char *rlt_build_command(const rlt_build_opts *opts, bool with_openmp);

/* The machine kernels run on, as rltune sees it. */
typedef struct rlt_machine {
    char cpu[128];     /* the CPU's model name (/proc/cpuinfo) */
    int n_cores;       /* online CPUs */
    int vector_floats; /* floats in the widest vector register: 16 (AVX-512), 8 (AVX2), 4 */
    bool has_fma;
    int64_t llc_bytes; /* the last-level cache (sysfs), 0 when unknown */
} rlt_machine;
RLT_API void rlt_machine_detect(rlt_machine *out);

/* How kernels are run and timed. Zero fields take the defaults. */
typedef struct rlt_run_opts {
    int number;           /* calls per timed sample; 0 = 1 (grown to meet min_repeat_ms) */
    int repeat;           /* timed samples; 0 = 5 */
    double min_repeat_ms; /* a sample lasts at least this long; 0 = 20 */
    int warmup;           /* untimed calls after the checked one; 0 = 1 */
    double timeout_s;     /* whole child run, load to last sample; 0 = 10 */
    int n_threads;        /* run-time threads for parallel loops; 0 = 1 */
    bool no_pin;          /* do not pin the child to CPUs */
    double slow_cutoff_ms; /* > 0: a kernel whose checked call and up to 4 calls
                              after it (warm: caches, pages, OpenMP threads) all take
                              longer is timed by the fastest of them, one sample:
                              tuning does not spend careful timing on clearly slow
                              candidates */
    bool cold_weights;    /* time the kernel cold, as a layer of a network
                             runs: before each timed call (each timed alone)
                             its weights (the op's is_weight tensors), the
                             workspace with their packed stages, and its
                             output are evicted from every cache level, so
                             that the weights come from memory and every
                             line written is read from memory first; the
                             other inputs stay in the caches, as the layer
                             before leaves them (AutoTVM's
                             enable_cpu_cache_flush evicts everything).
                             Times differ from warm ones: records keep the
                             two apart (rlt_record_target.is_weights_cold) */
} rlt_run_opts;

/* One nest's measurement. */
typedef struct rlt_run_result {
    rlt_status status;    /* OK, BUILD_ERROR, BUILD_TIMEOUT, RUN_ERROR, RUN_TIMEOUT or WRONG_ANSWER
                             (IO_ERROR when no child process could be started) */
    bool is_correct;      /* output within tolerance of the reference */
    double time_min_ms;
    double time_median_ms;
    double gflops;        /* the op's flops / median time; 0 unless OK */
    int n_samples;
    int number;           /* calls per sample actually used */
    double max_error;     /* largest |out - ref| / tolerance seen (<= 1 passes) */
    char message[512];    /* why it failed: the signal, the first wrong element, ... */
    double build_s;       /* compile wall time of the kernel (0 if cached) */
} rlt_run_result;

/* An op's inputs (filled from `seed`) and reference output, shared with
 * every run of its kernels. */
typedef struct rlt_workload rlt_workload;

/* Fills the inputs, builds the op's reference kernel (double precision,
 * no contraction) and runs it in a child process. `op` is borrowed and
 * must outlive the workload; `opts` may be NULL. Errors: the reference's
 * build or run (BUILD_*, RUN_*, IO_ERROR), OUT_OF_MEMORY. Free with
 * rlt_workload_destroy. */
RLT_API rlt_status rlt_workload_create(const rlt_op *op, const rlt_build_opts *opts, uint64_t seed,
                                       rlt_workload **out, rlt_diag *diag);
RLT_API void rlt_workload_destroy(rlt_workload *w); /* NULL ok */

/* Measures n nests of the workload's op: all built first (nothing is timed
 * while compiling), then run one at a time; out[i] is nests[i]'s result.
 * bopts and ropts may be NULL. Returns non-OK only when measuring itself
 * cannot work (the compiler cannot be started, the cache directory cannot
 * be made, out of memory): a failing kernel is its out[i].status. Threads:
 * one measurement at a time per process (the child pins itself to a CPU). */
RLT_API rlt_status rlt_measure(const rlt_workload *w, const rlt_build_opts *bopts, const rlt_run_opts *ropts, int n,
                               const rlt_nest *const *nests, rlt_run_result *out, rlt_diag *diag);

/* The two halves of rlt_measure, for an executor that chooses when a
 * machine compiles and when it times (rltune's MPI executor builds on
 * every rank, then times one host's kernels at a time): rlt_measure_build
 * lowers and compiles the n nests, nest i with compiler cc_of[i] ("clang";
 * NULL entries, or cc_of NULL: bopts's), into a batch that borrows the
 * workload; rlt_measure_run then runs it, one kernel at a time, as many
 * times as asked: out[i] is nest i's result, a failed build or code
 * generation its BUILD_ERROR. Errors of the build: as rlt_measure's (the
 * batch is made anyway, its kernels carrying the builder's message), an
 * invalid argument (no batch). */
typedef struct rlt_batch rlt_batch;
RLT_API rlt_status rlt_measure_build(const rlt_workload *w, const rlt_build_opts *bopts, int n,
                                     const rlt_nest *const *nests, const char *const *cc_of, rlt_batch **out,
                                     rlt_diag *diag);
RLT_API void rlt_measure_run(const rlt_batch *b, const rlt_run_opts *ropts, rlt_run_result *out);
RLT_API void rlt_batch_destroy(rlt_batch *b); /* NULL ok */

/* ---- executors -------------------------------------------------------------
 * Where a session's or a dataset's candidates are built and timed: NULL
 * (the default) here, in this process, as rlt_measure does; the rltune
 * command's `--executor mpi` over the ranks of an MPI job
 * (docs/distributed.md). */

/* One candidate, as data: an executor's machines compile what they make of
 * it themselves, never code they are sent. */
typedef struct rlt_candidate {
    const char *schedule; /* rlt_sched_text's form, of the op measured */
    const char *cc;       /* the compiler, "clang"; NULL: the build options' */
} rlt_candidate;

typedef struct rlt_executor {
    /* Measures n candidates of `op` as rlt_measure does (all built, then
     * run one at a time, checked against the op's reference computed with
     * seed 0): out[i] is candidate i's result, a kernel that fails its
     * status. `target` is the key the results are filed under
     * (rlt_record_target_text): a machine that would measure for another
     * target must be refused (INVALID_ARGUMENT), never mixed in. Non-OK
     * only when measuring itself cannot go on; the session then ends with
     * that error, what was stored before it kept. */
    rlt_status (*measure)(void *ctx, const rlt_op *op, const char *target, const rlt_build_opts *build,
                          const rlt_run_opts *run, int n, const rlt_candidate *candidates, rlt_run_result *out,
                          rlt_diag *diag);
    void *ctx;
} rlt_executor;

#ifdef __cplusplus
}
#endif
#endif /* RLTUNE_MEASURE_H */
