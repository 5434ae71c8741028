/*
 * rltune/experiment.h - experiments: tuners x workloads x seeds, each run a
 * tuning session, live or replayed from datasets, and their report
 * (report.html, results.json, table.md, a plot per workload), as
 * `rltune experiment` runs them. The config is a JSON file
 * (docs/experiment.md), checked whole before anything runs.
 *
 *     rlt_experiment *e = NULL;
 *     if (rlt_experiment_open("exp.json", &e, &d) != RLT_STATUS_OK) { ... d.message ... }
 *     const char *dir = rlt_experiment_out_dir(e);
 *     rlt_experiment_check_out_dir(dir, &d);          // before hours of runs
 *     rlt_experiment_run(e, NULL, &d);
 *     rlt_experiment_write_report(e, dir, NULL, &d);
 *     rlt_experiment_destroy(e);
 */
#ifndef RLTUNE_EXPERIMENT_H
#define RLTUNE_EXPERIMENT_H

#include <signal.h>

#include "rltune/base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlt_experiment rlt_experiment;

/* Reads and checks the config at `path`, then opens what its runs need:
 * each workload's op and its dataset (replay) or the records database
 * (live), and every tuner over every workload's space once, so that a bad
 * option is refused before anything runs. Every error names the file and
 * the key ("exp.json: tuners[2].options.dqn_horizon: ..."):
 * INVALID_ARGUMENT, PARSE_ERROR (with line and column), IO_ERROR for a file
 * that cannot be read, OUT_OF_MEMORY. Free with rlt_experiment_destroy. */
RLT_API rlt_status rlt_experiment_open(const char *path, rlt_experiment **out, rlt_diag *diag);
RLT_API void rlt_experiment_destroy(rlt_experiment *e); /* NULL ok */

/* The message of the last failed call on e ("" when none). */
RLT_API const char *rlt_experiment_last_error(const rlt_experiment *e);

/* The output directory the config names: its "out", else
 * "experiment-NAME". Borrowed from e. */
RLT_API const char *rlt_experiment_out_dir(const rlt_experiment *e);

/* Makes `dir` (with its parents) and checks this process can write into
 * it: IO_ERROR when it cannot be made, INVALID_ARGUMENT when something
 * else is in the way or it is not writable. */
RLT_API rlt_status rlt_experiment_check_out_dir(const char *dir, rlt_diag *diag);

/* Where the experiment stands, after every step of a run and at its end. */
typedef struct rlt_experiment_progress {
    int n_done, n_total;   /* runs finished, planned */
    bool is_run_done;      /* the run below just finished; else it is in flight */
    const char *spec;      /* its workload */
    const char *label;     /* its tuner */
    uint64_t seed;
    int n_trials_done, n_trials_total;
    double best_gflops;
    double run_wall_s;     /* the finished run's wall time (is_run_done) */
} rlt_experiment_progress;

typedef void (*rlt_experiment_progress_fn)(const rlt_experiment_progress *p, void *ctx);

typedef struct rlt_experiment_run_opts {
    const volatile sig_atomic_t *stop; /* non-zero: no further run starts (the one in flight finishes) */
    rlt_experiment_progress_fn progress; /* may be NULL */
    void *progress_ctx;
} rlt_experiment_run_opts;

/* Runs every (workload, seed, tuner), workloads outermost and tuners
 * innermost, so that an interrupted experiment has about as many seeds of
 * each tuner; opts may be NULL. The finished runs are kept also when a run
 * fails (its error is returned) or the experiment is stopped: the report
 * covers them. Call once. */
RLT_API rlt_status rlt_experiment_run(rlt_experiment *e, const rlt_experiment_run_opts *opts, rlt_diag *diag);

/* Runs finished so far. */
RLT_API int rlt_experiment_n_runs_done(const rlt_experiment *e);

/* What rlt_experiment_write_report could not draw (not an error). */
typedef struct rlt_experiment_files {
    bool has_png;          /* PNG plots were drawn (by gnuplot) */
    bool is_gnuplot_absent;
    char png_problem[600]; /* why PNGs are missing when gnuplot failed; "" otherwise */
} rlt_experiment_files;

/* Writes the report of the finished runs into the existing directory
 * `dir`, each file atomically: report.html, results.json, table.md and per
 * workload an SVG plot (and a PNG through gnuplot when it is installed).
 * out may be NULL. Errors: IO_ERROR naming the file, OUT_OF_MEMORY,
 * INVALID_ARGUMENT before rlt_experiment_run. */
RLT_API rlt_status rlt_experiment_write_report(rlt_experiment *e, const char *dir, rlt_experiment_files *out,
                                               rlt_diag *diag);

/* The report's results.json and table.md as text (after
 * rlt_experiment_run). Free with rlt_free; NULL when out of memory or
 * before the run. */
RLT_API char *rlt_experiment_json(rlt_experiment *e);
RLT_API char *rlt_experiment_table_md(rlt_experiment *e);

#ifdef __cplusplus
}
#endif
#endif /* RLTUNE_EXPERIMENT_H */
