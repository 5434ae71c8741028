/*
 * rltune/session.h - a tuning session, stepped batch by batch: a tuner
 * proposes configurations of the op's search space (multi-level tiling,
 * loop order, unrolling, vectorisation, packing, padding, parallelism,
 * the compiler), each batch is built in parallel and then run, checked and
 * timed one at a time (or answered by a dataset's replay), every
 * measurement is stored in the records database before the tuner hears
 * it, and a configuration measured before is read back instead of measured
 * again: a finished run, run again, measures nothing.
 *
 *     rlt_session_options o;
 *     rlt_session_options_init(&o);             // xgb-rank, 200 trials, ...
 *     o.tuner = "xgb"; o.n_trials = 32; o.batch_size = 8; o.db_path = "rltune.db";
 *     rlt_session *s = NULL;
 *     if (rlt_session_open(op, &o, &s, NULL, &d) != RLT_STATUS_OK) { ... d.message ... }
 *     while (!rlt_session_is_done(s)) {
 *         if (rlt_session_step(s, &d) != RLT_STATUS_OK) break;
 *         rlt_session_summary sum;
 *         rlt_session_summary_get(s, &sum);
 *         printf("%d trials, best %.1f GFLOP/s\n", sum.n_trials, sum.best_gflops);
 *     }
 *     rlt_session_finish(s, &d);                // the final pick; the agent saved
 *     rlt_session_destroy(s);
 *
 * A task scheduler steps many sessions from one budget: nothing in a
 * session knows of the others.
 */
#ifndef RLTUNE_SESSION_H
#define RLTUNE_SESSION_H

#include <signal.h>

#include "rltune/measure.h"
#include "rltune/records.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlt_session rlt_session;

/* Progress after every step (rlt_session_options.progress). */
typedef struct rlt_tune_progress {
    int n_done;                /* trials so far */
    int n_total;
    double best_gflops;        /* 0 until something measured OK */
    double elapsed_s;
    double measurements_per_s; /* trials per second of wall time */
} rlt_tune_progress;

typedef void (*rlt_tune_progress_fn)(const rlt_tune_progress *p, void *ctx);

/* What a session does. rlt_session_options_init sets the defaults named
 * here; strings are borrowed for rlt_session_open only. */
typedef struct rlt_session_options {
    const char *tuner;          /* random, grid, ga, xgb, xgb-rank, ga-dqn, dqn, bandit, ppo; default xgb-rank */
    int n_trials;               /* configurations to evaluate, >= 1; default 200 */
    int batch_size;             /* configurations built and measured together, 1..256; default 16 */
    int early_stopping;         /* stop after this many trials without a better one; 0 (default) = never */
    uint64_t seed;              /* the tuner's; default 0 */
    int n_threads;              /* run-time threads, 1..256 (> 1 offers the parallel knob); default 1 */
    rlt_build_opts build;       /* the compiler and its flags (the space may also try clang) */
    rlt_run_opts run;           /* tuning's timing; default 3 samples of >= 10 ms, 10 s timeout */
    const rlt_executor *executor; /* where batches are built and run (borrowed); NULL (default): here */
    const char *db_path;        /* records database, created if absent; NULL (default): none */
    /* A dataset to answer from instead of measuring ('rltune dataset'):
     * nothing compiled or run, nothing stored (db_path must be NULL). */
    const char *replay_path;
    /* Other workloads' records of the op's kind warm-start a tuner with a
     * cost model (xgb, xgb-rank, ppo); may be db_path. */
    const char *transfer_path;
    const char *agent_in;       /* a learning tuner starts from the agent saved here */
    const char *agent_out;      /* and saves its agent here when the run ends */
    const char *start_key;      /* start from this configuration of the space and its neighbours */
    /* A LoopTune policy ('rltune train', models/looptune.rlp) rolled out on
     * the op first, every state measured; the search starts from the
     * configuration nearest its result. */
    const char *policy_path;
    bool from_other_threads;    /* first measure the op's best recorded at other thread counts; default true */
    /* Search only kernels of build.cc: no cc knob offering clang. A network
     * at several threads sets it (its kernels must share one OpenMP
     * runtime: docs/net.md); default false. */
    bool no_clang;
    int n_seeds;                /* rule-built configurations measured first (live); default 8 */
    int n_final;                /* the best this many measured again at the end (live); default 4, 0: off */
    const char *tuner_config_path; /* hyper-parameters: a JSON object of NAME: value ('rltune tuners') */
    const char *tuner_options;  /* hyper-parameters "NAME=VALUE,...", applied after the file's */
    const volatile sig_atomic_t *stop; /* when it becomes non-zero, stop after the batch in flight */
    rlt_tune_progress_fn progress;     /* called after every step; may be NULL */
    void *progress_ctx;
} rlt_session_options;

RLT_API void rlt_session_options_init(rlt_session_options *o);

/* Which option rlt_session_open refused (RLT_OPTION_NONE when it was
 * something else: a bad op or out of memory). */
typedef enum rlt_session_option {
    RLT_OPTION_NONE = 0,
    RLT_OPTION_TUNER,
    RLT_OPTION_NUMBERS,         /* n_trials, batch_size, n_threads, seeds, final, run or build values */
    RLT_OPTION_DB,
    RLT_OPTION_REPLAY,
    RLT_OPTION_TRANSFER,
    RLT_OPTION_AGENT,
    RLT_OPTION_START,
    RLT_OPTION_POLICY,
    RLT_OPTION_TUNER_CONFIG,
    RLT_OPTION_TUNER_OPTIONS
} rlt_session_option;

/* Opens the databases, the dataset and the policy the options name, runs
 * the policy's rollout when there is one, and makes the session ready for
 * its first step. `op` is borrowed and must outlive the session. On
 * failure *out_bad_option (may be NULL) says which option was refused.
 * Errors: an option out of range or that does not go with another
 * (INVALID_ARGUMENT), a file that cannot be opened or is not what it
 * should be (INVALID_ARGUMENT, IO_ERROR, PARSE_ERROR), the policy's
 * rollout, the op's reference build, OUT_OF_MEMORY. */
RLT_API rlt_status rlt_session_open(const rlt_op *op, const rlt_session_options *o, rlt_session **out,
                                    rlt_session_option *out_bad_option, rlt_diag *diag);

/* One batch: proposed, measured (or read back, or replayed), stored,
 * heard by the tuner. Errors: the measurer's (the compiler cannot be
 * started, the records cannot be written: what was stored stays), the
 * tuner's; a step after the end is INVALID_ARGUMENT. */
RLT_API rlt_status rlt_session_step(rlt_session *s, rlt_diag *diag);

/* Whether the search has ended: trials spent, stopped, stopped early, or
 * nothing left to propose. */
RLT_API bool rlt_session_is_done(const rlt_session *s);

/* Ends the search (call once, after the last step): a learning tuner's
 * agent saved to agent_out, then the final pick, unless nothing new was
 * measured or the session was stopped. */
RLT_API rlt_status rlt_session_finish(rlt_session *s, rlt_diag *diag);

/* Where a session stands. Pointers are borrowed from the session, valid
 * until its next step, finish or destroy. */
typedef struct rlt_session_summary {
    int n_trials;                 /* configurations evaluated so far */
    int n_total;                  /* the trials asked for */
    int n_measured;               /* of them measured in this session */
    int n_from_records;           /* read back from the records */
    int n_failed;                 /* not OK (build, run, wrong answer) */
    int n_replayed;               /* answered by the dataset of a replay */
    int n_absent;                 /* the dataset lacks (not failures) */
    double best_gflops;           /* 0 while nothing measured OK */
    double best_time_ms;
    const char *best_config;      /* the best configuration's key ("" none) */
    const char *best_schedule;    /* its schedule, text form */
    const char *best_cc;          /* its compiler ("gcc", "clang") */
    const double *curve;          /* best GFLOP/s after each trial, n_trials of them */
    double wall_s;
    double tuner_s;               /* of which in the tuner */
    double measurements_per_s;
    bool is_done, was_stopped, was_stopped_early, was_exhausted;
    int n_seeds;                  /* rule-built configurations measured first */
    int n_other_threads;          /* configurations from other thread counts' records */
    int n_transfer_rows, n_transfer_workloads;
    const char *start_config;     /* where the search started ("" none) */
    int n_final, final_rounds;    /* the final pick: candidates measured again (0: none), rounds */
    int final_repeat;             /* of final_min_repeat_ms-long samples per candidate and round */
    double final_min_repeat_ms;
    double final_s;
    double tuning_best_gflops;    /* the best as tuning had measured it */
    const char *tuning_best_config;
    bool has_policy;              /* a policy's rollout came first: */
    double policy_gflops, policy_wall_s;
    int64_t policy_n_evaluations;
    const char *policy_schedule;
} rlt_session_summary;

RLT_API void rlt_session_summary_get(const rlt_session *s, rlt_session_summary *out);

/* The session as one JSON object, as `rltune tune --json` prints it
 * (docs/cli.md): op, tuner, counts, best, final pick, curve, times, files.
 * Free with rlt_free; NULL when out of memory. */
RLT_API char *rlt_session_json(const rlt_session *s);

/* The message of the session's last failed call ("" when none). */
RLT_API const char *rlt_session_last_error(const rlt_session *s);

/* Frees the session and closes what it opened; NULL ok. */
RLT_API void rlt_session_destroy(rlt_session *s);

/* The target a session with these build options and thread count records
 * its measurements under: this machine, the thread count, the compiler's
 * command line (its key text, rlt_record_target_text, is what
 * rlt_db_best and rlt_db_history take). Errors: a compiler command that
 * does not fit a record (INVALID_ARGUMENT). */
RLT_API rlt_status rlt_session_target(const rlt_build_opts *build, int n_threads, rlt_record_target *out,
                                      rlt_diag *diag);

/* ---- datasets ------------------------------------------------------------
 * An op's whole space, or a large uniform sample of it, measured once into
 * a records file (a dataset) that sessions then replay
 * (rlt_session_options.replay_path): tuners compared over many seeds in
 * seconds, on the same measurements. Format: docs/datasets.md. */

/* Default sample size: enough that runs of a few hundred to a thousand
 * trials explore a small part of it (a tuner that exhausts the sample
 * only finds the sample's best), and about 15 to 30 minutes of measuring
 * for a small op on two cores (docs/datasets.md). */
#define RLT_DATASET_DEFAULT_SAMPLES 4096
#define RLT_DATASET_MAX_SAMPLES 1000000
/* What the "dataset" meta value says. */
typedef struct rlt_dataset_info {
    char spec[512];       /* canonical op spec */
    char target[512];     /* the target key its records are filed under */
    int n_threads;        /* of the space and the measurements */
    int vector_floats;    /* of the space: the measuring machine's vector width */
    bool has_clang;       /* whether the space had the cc knob */
    char fixed[512];      /* the knobs held at one choice ("cc=gcc;vec=j*16", space.h's fixings); "" none */
    uint64_t space_size;  /* configurations of the space (of its sub-space when knobs are fixed), valid or not */
    int64_t n_valid;      /* valid configurations; -1 when the space was too large to count */
    bool is_complete;     /* the dataset is every valid configuration */
    int n_samples;        /* the sample size asked for */
    uint64_t seed;        /* of the sample and of the measuring order */
    int n_configs;        /* configurations the dataset holds once finished */
} rlt_dataset_info;

typedef struct rlt_dataset_opts {
    int n_samples;            /* 0 = RLT_DATASET_DEFAULT_SAMPLES */
    const char *fix;          /* knobs to hold at one choice ("knob=value;..."; NULL or "": none) */
    uint64_t seed;
    int batch_size;           /* as a session's */
    int n_threads;
    rlt_build_opts build;
    rlt_run_opts run;
    const rlt_executor *executor; /* where batches are built and run (borrowed); NULL: here */
    const volatile sig_atomic_t *stop; /* stop after the batch in flight; run again to go on */
    rlt_tune_progress_fn progress;
    void *progress_ctx;
} rlt_dataset_opts;

/* What a rlt_dataset_measure run did. */
typedef struct rlt_dataset_result {
    int n_done;               /* configurations the file holds now */
    int n_measured;           /* of them measured by this run */
    int n_from_records;       /* measured by an earlier run */
    int n_failed;             /* not OK (build, run, wrong answer) */
    bool was_stopped;         /* by opts->stop: run it again to go on */
    double best_gflops;       /* 0 when nothing measured OK */
    double best_time_ms;
    char best_config[1024];   /* the best configuration's key ("" none) */
    char best_cc[16];         /* its compiler */
    double wall_s;
    double measurements_per_s;
} rlt_dataset_result;

/* Measures the dataset of `op` into the file `path` (created; or resumed
 * when it holds this dataset: same op, target, fixed knobs, samples and
 * seed, and only what it lacks is measured), exactly as a session measures:
 * batches built together, then run one at a time, each batch stored before
 * the next; opts->stop stops after the batch in flight. *out_info describes
 * the dataset. Refused (INVALID_ARGUMENT, nothing written): a records file
 * that is not a dataset and holds records, a dataset of other options or
 * of a space that has changed since, fixed knobs that are not knobs of the
 * space. Errors after measuring began leave what was stored (the message
 * says how much). */
RLT_API rlt_status rlt_dataset_measure(const rlt_op *op, const char *path, const rlt_dataset_opts *opts,
                                       rlt_dataset_info *out_info, rlt_dataset_result *out, rlt_diag *diag);

/* The tuners rlt_session_options.tuner takes, NULL-terminated. */
RLT_API const char *const *rlt_tuner_names(void);

/* One line on what a tuner does ("" for an unknown name). */
RLT_API const char *rlt_tuner_summary(const char *tuner);

/* The tuners' hyper-parameters (rlt_session_options.tuner_options and
 * tuner_config_path set them), for listing. */
typedef struct rlt_tuner_param {
    const char *name;   /* "dqn_horizon" */
    const char *tuners; /* the tuners that read it, space-separated: "ga ga-dqn" */
    const char *def;    /* its default, as text */
    const char *help;   /* one line */
} rlt_tuner_param;
RLT_API int rlt_tuner_param_count(void);
/* The i-th, 0 <= i < rlt_tuner_param_count(); all NULL out of range. */
RLT_API rlt_tuner_param rlt_tuner_param_at(int i);
/* Whether `tuner` reads the parameter `name`. */
RLT_API bool rlt_tuner_reads_param(const char *tuner, const char *name);

#ifdef __cplusplus
}
#endif
#endif /* RLTUNE_SESSION_H */
