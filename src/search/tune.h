/*
 * tune.h - the tuning loop: a tuner proposes batches of configurations of
 * the op's space; each batch is read back from the records where it was
 * measured before, and the rest is built (in parallel) and then measured
 * (one at a time); every measurement is stored, failures included, before
 * the tuner hears the scores.
 */
#ifndef RLT_TUNE_H
#define RLT_TUNE_H

#include <signal.h>

#include "db/db.h"
#include "measure/measure.h"
#include "search/tuner.h"

typedef struct rlt_tune_progress {
    int n_done;               /* trials so far */
    int n_total;
    double best_gflops;       /* 0 until something measured OK */
    double elapsed_s;
    double measurements_per_s; /* trials per second of wall time */
} rlt_tune_progress;

typedef void (*rlt_tune_progress_fn)(const rlt_tune_progress *p, void *ctx);

typedef struct rlt_tune_opts {
    const char *tuner;        /* "random", "grid", "ga", ... */
    int n_trials;             /* configurations to evaluate (>= 1) */
    int batch_size;           /* configurations built and measured together; 0 = 16 */
    int early_stopping;       /* stop after this many trials without a better one; 0 = never */
    uint64_t seed;            /* the tuner's RNG (inputs are always filled from seed 0) */
    int n_threads;            /* run-time threads; > 1 offers the parallel knob */
    rlt_build_opts build;     /* the cc knob, when the space has one, overrides build.cc */
    rlt_run_opts run;
    rlt_space_opts space;     /* n_threads is taken from above */
    rlt_tuner_opts tuner_opts;/* seed is taken from above */
    rlt_db *db;               /* NULL: nothing stored, nothing read back */
    const volatile sig_atomic_t *stop; /* when it becomes non-zero, stop after the batch in flight */
    rlt_tune_progress_fn progress;     /* called after every batch (may be NULL) */
    void *progress_ctx;
} rlt_tune_opts;

typedef struct rlt_tune_result {
    int n_trials;             /* configurations evaluated */
    int n_measured;           /* of which measured in this run */
    int n_from_db;            /* of which read back from the records */
    int n_failed;             /* of which not OK (build, run, wrong answer) */
    double best_gflops;       /* 0 when nothing measured OK */
    double best_time_ms;
    char best_config[1024];   /* the best configuration's key ("" if none) */
    char best_schedule[4096]; /* its schedule */
    char best_cc[16];
    double *curve;            /* best GFLOP/s after each trial (n_trials of them); owned */
    double wall_s;
    double measurements_per_s;
    bool was_stopped;         /* by *stop */
    bool was_stopped_early;   /* by early_stopping */
    bool was_exhausted;       /* the tuner had nothing left to propose */
} rlt_tune_result;

/* The target part of a workload's key: CPU, vector width, compiler and
 * flags, threads. Records of one key are comparable. */
void rlt_tune_target_key(const rlt_build_opts *build, int n_threads, rlt_str *out);

rlt_status rlt_tune(const rlt_op *op, const rlt_tune_opts *opts, rlt_tune_result *out, rlt_diag *diag);
void rlt_tune_result_free(rlt_tune_result *r);

#endif /* RLT_TUNE_H */
