/*
 * experiment.h - experiments (`rltune experiment`): tuners x workloads x
 * seeds run through rlt_tune, live or replayed from datasets; their report
 * is report/report.h's.
 *
 * An experiment is over ops (tuners x workloads x seeds, each run an
 * rlt_tune) or over whole models (models.c: each run a network's tasks
 * tuned from one budget, rltune/model.h, into a database of its own, then
 * the network compiled from it and timed; or, in benchmark mode, only
 * compiled and timed from the databases earlier runs left).
 *
 * The pieces, in the order a run uses them:
 *   rlt_exp_config_load / _parse   the JSON config (docs/experiment.md),
 *                                  checked whole before anything runs;
 *   rlt_exp_open                   opens the datasets or the records
 *                                  database and checks every tuner's
 *                                  options against every workload's space;
 *   rlt_exp_run_all                runs them, one rlt_tune per (workload,
 *                                  seed, tuner), in that order;
 *   rlt_exp_report_make            the results as the report's plain data,
 *                                  metrics included, for rlt_report_write
 *                                  and the other renderers.
 *
 * Threads: none are started; everything here belongs to one thread.
 */
#ifndef RLT_EXPERIMENT_H
#define RLT_EXPERIMENT_H

#include "core/core.h"
#include "measure/measure.h"
#include "rltune/model.h"
#include "report/report.h"
#include "search/replay.h"
#include "search/tune.h"
#include "search/tuner.h"

#include <signal.h>

#define RLT_EXP_MAX_WORKLOADS 64
#define RLT_EXP_MAX_TUNERS 32
#define RLT_EXP_MAX_SEEDS RLT_REPORT_MAX_SEEDS /* the metrics count as many runs of a pair */
#define RLT_EXP_MAX_RUNS 100000

/* ---- the config ---------------------------------------------------------- */

typedef struct rlt_exp_workload {
    char *op_text;      /* "op" as written, or NULL when given by expr / shape */
    char *expr, *shape; /* "expr" and "shape", or NULL */
    char *spec;         /* the op's canonical spec */
    char *dataset;      /* replay: the dataset's path, relative to the working directory */
    char *dataset_text; /* replay: "dataset" as written (relative to the config's directory) */
    /* a model workload ({"model": FILE}): spec is then "model" as written */
    char *model;        /* the ONNX file's path, relative to the working directory; NULL for an op */
    char *label;        /* its "label", else the file's name without ".onnx": names its outputs and its
                           runs' databases ([A-Za-z0-9._-], at most 64) */
} rlt_exp_workload;

typedef struct rlt_exp_tuner {
    char *name;          /* a name from rlt_tuner_names() */
    char *label;         /* unique in the experiment; default: the name */
    rlt_tuner_opts opts; /* from "options" (rlt_tuner_opts_set_json); seed set per run */
    char *options_json;  /* "options" as given, compact JSON ("{}" when none) */
    /* "carry_agent": a learning tuner's agent goes, seed by seed, from each
     * workload's run to the next one's (saved at the end of the run on
     * workload w, loaded at the start of the same seed's run on w + 1), as
     * an agent trained on earlier layers starts the next (ktune, GA-DQN) */
    bool carry_agent;
} rlt_exp_tuner;

/* A parsed config. Every string and array is owned (rlt_exp_config_destroy). */
typedef struct rlt_exp_config {
    char *path;        /* the config file, as named; prefixes every message */
    char *text;        /* its text */
    char *name;        /* [A-Za-z0-9._-], 1 to 64 characters */
    char *description; /* "" when not given */
    bool is_replay;    /* "measure": "replay" (else "live") */
    int n_trials;
    int n_seeds;
    uint64_t *seeds;
    int batch_size;
    int early_stopping; /* 0: never */
    char *db;           /* live: records database (relative to the working directory) */
    char *out;          /* the output directory, relative to the working directory; NULL: not given */
    /* live only (NULL / 0 = tune's defaults) */
    int n_threads;
    char *cc, *cflags;
    int repeat;
    double min_repeat_ms, timeout_s;
    int n_workloads;
    rlt_exp_workload *workloads;
    int n_tuners;
    rlt_exp_tuner *tuners;
    /* model experiments (the workloads are models) */
    bool is_model;
    bool is_benchmark;    /* "mode": "benchmark": compile and time from the runs' databases, no tuning */
    double time_budget_s; /* a run stops tuning past this much tuning time; 0: none */
    int run_repeat;       /* the network's timed runs (as `rltune run --repeat`) */
    int rule_seeds;       /* rule-built configurations each task's session measures first (0: none) */
    char *records_dir;    /* where the runs' databases go (relative to the working directory) */
} rlt_exp_config;

/* Tuning runs of a model experiment keep their records in databases of
 * their own: RECORDS_DIR/LABEL/TUNER-sSEED.db, TUNER the tuner's label with
 * every character outside [A-Za-z0-9._-] as '_'; beside it TUNER-sSEED.cache/,
 * the run's own kernel cache. Written into buf; false when it does not
 * fit. The database's rltune_meta entry RLT_EXP_RUN_META_KEY says whose
 * run it holds and its latency curve (docs/experiment.md). */
#define RLT_EXP_RUN_META_KEY "experiment_run"
bool rlt_exp_run_db_path(const rlt_exp_config *c, int workload, int tuner, uint64_t seed, char *buf, size_t cap);
bool rlt_exp_run_cache_path(const rlt_exp_config *c, int workload, int tuner, uint64_t seed, char *buf,
                            size_t cap);

/* Parses a config's text. `path` names it in messages and anchors its
 * relative paths (those are relative to the config file's directory).
 * Every error names the file and the key path ("exp.json:
 * tuners[2].options.dqn_horizon: ..."): malformed JSON (PARSE_ERROR, with
 * the line and column), an unknown or duplicated key, a missing required
 * key, a value of the wrong type or range, an unknown tuner or option, a
 * bad op spec, a repeated label or workload, a key of the other measuring
 * mode (INVALID_ARGUMENT). Nothing outside the text is read. */
rlt_status rlt_exp_config_parse(const char *path, const char *text, rlt_exp_config **out, rlt_diag *diag);
/* Reads `path` (IO_ERROR naming it when it cannot) and parses it. */
rlt_status rlt_exp_config_load(const char *path, rlt_exp_config **out, rlt_diag *diag);
void rlt_exp_config_destroy(rlt_exp_config *c); /* NULL ok */

/* The output directory: the config's "out", else "experiment-<name>".
 * Borrowed from c, or written into buf. */
const char *rlt_exp_config_out_dir(const rlt_exp_config *c, char *buf, size_t cap);

/* ---- results (experiment.c, results.c) ------------------------------------- */

/* A network compiled and timed (rlt_net_time). */
typedef struct rlt_exp_latency {
    bool is_measured;
    rlt_net_timing timing;
    int n_tasks, n_tasks_tuned; /* tasks, and those whose schedule came from a record */
    double compile_s;
} rlt_exp_latency;

/* How a model's tuning run ended. */
typedef enum rlt_exp_ending {
    RLT_EXP_ENDED_TRIALS = 0, /* the budget of trials is spent (records before it counted) */
    RLT_EXP_ENDED_TIME,       /* the time budget is spent */
    RLT_EXP_ENDED_TASKS,      /* every task's tuner had nothing left to propose */
    RLT_EXP_ENDED_STOPPED,    /* interrupted */
    RLT_EXP_ENDED_BENCHMARK   /* benchmark mode: nothing tuned */
} rlt_exp_ending;

const char *rlt_exp_ending_name(rlt_exp_ending e); /* "trials", "time", "tasks", "interrupted", "benchmark" */

/* A model experiment's run: the tuning and the network it gave. */
typedef struct rlt_exp_model_run {
    char db[1024];          /* its records database */
    int n_trials;           /* measurements of the model's tasks in it (the budget counts them) */
    int n_new_trials;       /* of them made by this process */
    int n_recorded;         /* of them there before (a resumed run) */
    double tuning_s;        /* tuning's wall time, earlier processes' included */
    double estimate_ms;     /* sum of weight x best time over the tasks; INFINITY while one has none */
    int n_points;
    rlt_report_point *points; /* the estimate after every round, earlier processes' rounds
                                 included (trials and time counted as above); owned */
    rlt_exp_ending ended;
    rlt_exp_latency latency;  /* the network compiled from db, timed */
} rlt_exp_model_run;

/* One tuning run. */
typedef struct rlt_exp_run {
    int workload, tuner;  /* indices into the config's lists */
    uint64_t seed;
    bool had_agent;       /* started from the agent carried from the workload before */
    /* its curve is owned. A model run's is NULL: n_trials, best_gflops (the
     * network's FLOPs over its measured latency) and wall_s (this
     * process's time on the run) are set for the progress; the rest is
     * in `model` */
    rlt_tune_result tune;
    rlt_exp_model_run model;
} rlt_exp_run;

/* What is known of one workload. */
typedef struct rlt_exp_workload_result {
    /* Replay: the dataset's best OK record. Live: the best of every run of
     * the workload and of the records database on the run's target.
     * 0 when nothing measured OK. */
    double best_known_gflops;
    char best_known_source[1200]; /* what it is the best of, in words */
    char target[512];            /* the target key its measurements are of */
    rlt_dataset_info dataset;    /* replay only */
    /* a model */
    int n_tasks;
    double flops;                /* of the tasks' kernels, sum of weight x FLOPs */
    rlt_exp_latency untuned;     /* compiled from seed schedules only, timed */
} rlt_exp_workload_result;

typedef struct rlt_exp_result {
    int n_runs_planned;
    int n_runs;                         /* finished, in running order */
    rlt_exp_run *runs;                  /* owned */
    rlt_exp_workload_result *workloads; /* the config's n_workloads; owned */
    bool was_stopped;                   /* by the run's stop flag */
    rlt_target machine;                 /* where rltune ran */
} rlt_exp_result;

void rlt_exp_result_free(rlt_exp_result *r); /* frees the arrays; the struct stays */

/* The report of an experiment's results: r's runs, workloads and machine
 * with c's settings, names and text, and the metrics of every (workload,
 * tuner) computed from them. report's strings and curves are borrowed from
 * c and r, which must outlive it and stay unchanged; its arrays are owned
 * (rlt_exp_report_free). */
typedef struct rlt_exp_report {
    rlt_report report;
    rlt_report_tuner *tuners;
    rlt_report_workload *workloads;
    rlt_report_run *runs;
    rlt_report_stats *stats;
} rlt_exp_report;

/* Fills *out (rlt_exp_report_free; on error it holds nothing). Errors:
 * OUT_OF_MEMORY. */
rlt_status rlt_exp_report_make(const rlt_exp_config *c, const rlt_exp_result *r, rlt_exp_report *out,
                               rlt_diag *diag);
void rlt_exp_report_free(rlt_exp_report *rep); /* frees the arrays; the struct stays */

/* ---- running (experiment.c) ------------------------------------------------ */

typedef struct rlt_exp rlt_exp; /* the config's resources, opened */

/* Opens what the runs need: each workload's op, and its dataset (replay,
 * read-only) or the records database (live: created if absent; a dataset
 * is refused); then creates every tuner over every workload's space once,
 * so that a bad option value is refused before anything runs. Errors name
 * the config file and the key (INVALID_ARGUMENT, PARSE_ERROR, IO_ERROR for
 * a dataset that cannot be read; OUT_OF_MEMORY). `c` is borrowed and must
 * outlive the handle. */
rlt_status rlt_exp_open(const rlt_exp_config *c, rlt_exp **out, rlt_diag *diag);
void rlt_exp_close(rlt_exp *e); /* NULL ok */

typedef struct rlt_exp_progress {
    int n_done, n_total;       /* runs */
    const rlt_exp_run *run;    /* the run that just finished, or NULL while one runs */
    const char *spec;          /* the current run's workload */
    const char *label;         /* and tuner */
    uint64_t seed;
    const rlt_tune_progress *tune; /* within the current run (NULL when run is set) */
} rlt_exp_progress;

typedef void (*rlt_exp_progress_fn)(const rlt_exp_progress *p, void *ctx);

typedef struct rlt_exp_run_opts {
    /* when it becomes non-zero, no further run starts (the one in flight
     * finishes) */
    const volatile sig_atomic_t *stop;
    rlt_exp_progress_fn progress; /* may be NULL */
    void *progress_ctx;
} rlt_exp_run_opts;

/* Runs every (workload, seed, tuner), workloads outermost and tuners
 * innermost, so that an interrupted experiment has about as many seeds of
 * each tuner. Fills *out (free with rlt_exp_result_free) with the finished
 * runs and the best known of each workload, also when a run fails: then
 * the failed run is not in it and its error is returned. A model
 * experiment first times each model untuned (progress with the label
 * "untuned" and no trials), then its runs. */
rlt_status rlt_exp_run_all(rlt_exp *e, const rlt_exp_run_opts *o, rlt_exp_result *out, rlt_diag *diag);

/* ---- shared by experiment.c and models.c ------------------------------------- */

/* Fails with "PATH: KEY: message" ("PATH: message" when key is NULL or ""). */
rlt_status rlt_exp_fail_at(rlt_diag *diag, rlt_status st, const char *path, const char *key, const char *fmt, ...)
    RLT_PRINTF(5, 6);

/* The config key to blame for tuner t refusing its options with `message`:
 * "tuners[T].options.NAME" when the message names exactly one of the
 * options given, else "tuners[T].options" (or "tuners[T]" without any). */
void rlt_exp_tuner_option_key(const rlt_exp_config *c, int t, const char *message, char *key, size_t cap);

/* ---- model experiments (models.c) ------------------------------------------- */

typedef struct rlt_exp_models rlt_exp_models;

/* Loads every model of a model experiment and lists its tasks; in tune
 * mode creates every tuner on every task's space (a value a tuner refuses
 * is found now) and reads the runs' databases already there, refusing one
 * that holds another tuner's run; in benchmark mode, refuses a run whose
 * database is missing. Nothing is created. Errors name the config file and
 * the key. */
rlt_status rlt_exp_models_open(const rlt_exp_config *c, rlt_exp_models **out, rlt_diag *diag);
void rlt_exp_models_close(rlt_exp_models *m); /* NULL ok */

/* rlt_exp_run_all of a model experiment: out is allocated by the caller
 * (runs and workloads), machine set. */
rlt_status rlt_exp_models_run(rlt_exp_models *m, const rlt_exp_run_opts *o, rlt_exp_result *out, rlt_diag *diag);

#endif /* RLT_EXPERIMENT_H */
