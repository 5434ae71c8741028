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

/* The tuners and their flags, for listing: names NULL-terminated. */
RLT_API const char *const *rlt_tuner_names(void);

#ifdef __cplusplus
}
#endif
#endif /* RLTUNE_SESSION_H */
