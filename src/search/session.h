/*
 * session.h - one tuning session, stepped batch by batch: proposers say
 * which configurations of the op's space to try, a measurer says what each
 * scored, and the session keeps the best, the curve and the counts.
 *
 *   proposers (in turn: a queue of seed configurations, then a tuner; or a
 *   fixed plan)  --configs-->  measurer (live, or replayed from a dataset;
 *   records read back first and stored after when wrapped by
 *   rlt_measurer_recorded)  --scores-->  every proposer hears them
 *
 * A step proposes one batch from the first proposer that still has
 * something, measures it, and tells every proposer the scores. When the
 * search ends (trials spent, early stopping, proposers exhausted), finish
 * runs the final pick when the measurer can measure again (live) and saves
 * a learning tuner's agent. Nothing below the session knows about other
 * sessions: a task scheduler steps many of them from one budget.
 *
 * Typical use (rlt_tune, tune.h, builds and runs one from options):
 *     rlt_session_create(op, &space, &opts, &s, &d);
 *     rlt_proposer_tuner_create(rlt_session_space(s), "xgb", &topts, &p, &d);
 *     rlt_session_add_proposer(s, p);
 *     rlt_measurer_live_create(op, &target, &build, &run, "xgb", seed, &m, &d);
 *     rlt_measurer_recorded_create(db, op, &target, NULL, m, &m, &d);
 *     rlt_session_set_measurer(s, m);
 *     while (!rlt_session_is_done(s)) rlt_session_step(s, &d);
 *     rlt_session_finish(s, &d);
 *     rlt_session_result(s)->best_gflops ...
 *     rlt_session_destroy(s);
 */
#ifndef RLT_SESSION_H
#define RLT_SESSION_H

#include <signal.h>

#include "db/db.h"
#include "measure/measure.h"
#include "rltune/session.h"
#include "search/tuner.h"

/* ---- trials --------------------------------------------------------------- */

/* Where a trial's score came from. */
typedef enum rlt_trial_source {
    RLT_TRIAL_PENDING,  /* not answered yet (a measurer's input) */
    RLT_TRIAL_MEASURED, /* built, run and timed in this session */
    RLT_TRIAL_RECORDED, /* read back from the records, measured before */
    RLT_TRIAL_REPLAYED, /* answered by a dataset */
    RLT_TRIAL_ABSENT    /* the dataset of a replay lacks it: no score, not a failure */
} rlt_trial_source;

/* One configuration of a batch and what became of it. */
typedef struct rlt_trial {
    rlt_config config;
    rlt_trial_source source;
    rlt_status status;       /* of the measurement: OK, BUILD_ERROR, ..., WRONG_ANSWER */
    double score;            /* GFLOP/s; 0 unless status is OK (and for an absent one) */
    double time_ms;          /* the median, 0 unless OK */
    /* A live measurer's record of it (source MEASURED), for the recorded
     * layer to store: op, target, configuration key, schedule, tuner,
     * status, times, seed, build time, message. */
    rlt_record record;
} rlt_trial;

/* ---- proposers -------------------------------------------------------------- */

typedef struct rlt_proposer rlt_proposer;

typedef struct rlt_proposer_ops {
    const char *kind; /* "tuner", "plan", "queue" */
    /* Up to max new configurations into out; how many (0: nothing left,
     * and the session asks the next proposer). */
    int (*next)(rlt_proposer *p, int max, rlt_config *out);
    /* The scores of a batch, whoever proposed it (NULL: not listening). */
    rlt_status (*update)(rlt_proposer *p, int n, const rlt_trial *trials, rlt_diag *diag);
    void (*destroy)(rlt_proposer *p);
} rlt_proposer_ops;

struct rlt_proposer {
    const rlt_proposer_ops *ops;
    void *state;          /* the proposer's own, freed by destroy */
    rlt_tuner *tuner;     /* the tuner of a "tuner" proposer (borrowed from state), else NULL */
};

/* A tuner (tuner.h) over `space` (borrowed: the session's). Errors as
 * rlt_tuner_create's. */
rlt_status rlt_proposer_tuner_create(const rlt_space *space, const char *name, const rlt_tuner_opts *opts,
                                     rlt_proposer **out, rlt_diag *diag);

/* Exactly these n configurations (copied), in order, then nothing. */
rlt_status rlt_proposer_plan_create(int n, const rlt_config *configs, rlt_proposer **out, rlt_diag *diag);

/* A queue of configurations to try before a search: each of the n_start
 * start configurations followed by its valid one-step neighbours, then the
 * n_prior prior ones as they are; each valid one once (copied). A batch
 * holds queue configurations only. rlt_proposer_queue_configs gives them,
 * for the tuner that follows to treat as visited from its start. */
rlt_status rlt_proposer_queue_create(const rlt_space *space, int n_start, const rlt_config *start, int n_prior,
                                     const rlt_config *prior, rlt_proposer **out, rlt_diag *diag);
const rlt_config *rlt_proposer_queue_configs(const rlt_proposer *queue, int *out_n);

void rlt_proposer_destroy(rlt_proposer *p); /* NULL ok */

/* ---- measurers -------------------------------------------------------------- */

typedef struct rlt_measurer rlt_measurer;

/* What a measurer is told of the session when it measures. */
typedef struct rlt_measure_ctx {
    double best_gflops;              /* the session's best so far (0: none) */
    const volatile sig_atomic_t *stop;
} rlt_measure_ctx;

typedef struct rlt_measurer_ops {
    const char *kind; /* "live", "replay", "recorded" */
    /* Answers every trial of trials[0..n) whose source is PENDING: sets
     * source, status, score and time (and record, when live). A kernel
     * that fails is a trial with its status; return non-OK only when the
     * measurer itself cannot work (the compiler cannot be started, the
     * records cannot be written, out of memory). */
    rlt_status (*measure)(rlt_measurer *m, int n, rlt_trial *trials, const rlt_measure_ctx *ctx, rlt_diag *diag);
    /* The final pick (NULL when the measurer cannot measure again): the n
     * trials measured `rounds` times each, in turn, with samples longer
     * than tuning's; trials[i].record becomes the re-measurement (is_final;
     * the median over the rounds, or the failure), its status and score
     * too. *out_rounds is the rounds done (fewer when stopped). */
    rlt_status (*remeasure)(rlt_measurer *m, int n, rlt_trial *trials, int rounds, const rlt_measure_ctx *ctx,
                            int *out_rounds, rlt_diag *diag);
    void (*destroy)(rlt_measurer *m);
} rlt_measurer_ops;

struct rlt_measurer {
    const rlt_measurer_ops *ops;
    void *state;
};

/* Builds, runs and times each configuration here (measure.h): a batch is
 * built together (gcc and clang side by side), then run one at a time.
 * `op` and `space` are borrowed; `target` is what the records are filed
 * under, `tuner` and `seed` what they say proposed them. A candidate more
 * than 4x behind the session's best is timed by a few calls (the slow
 * cutoff) unless run->slow_cutoff_ms says otherwise. Creating it builds
 * the op's reference (rlt_workload_create): its errors. */
rlt_status rlt_measurer_live_create(const rlt_op *op, const rlt_space *space, const rlt_record_target *target,
                                    const rlt_build_opts *build, const rlt_run_opts *run, const char *tuner,
                                    uint64_t seed, rlt_measurer **out, rlt_diag *diag);

/* Has a live measurer (rlt_measurer_live_create's) build and run its
 * batches, the final pick's too, by `executor` (borrowed; NULL: here)
 * rather than in this process. */
void rlt_measurer_live_set_executor(rlt_measurer *m, const rlt_executor *executor);

/* Wraps `inner` (owned from here on, also when this fails): a trial whose
 * configuration has a record in `db` (borrowed) for the op and target is
 * read back (rlt_db_lookup: what the search measured then), the others go
 * to `inner`, and what inner measured is appended to db in one
 * transaction before the step returns. With `only_tuner` set, records of
 * other proposers are not read back (a dataset's plan measures what it
 * lacks). Final picks are stored too. */
rlt_status rlt_measurer_recorded_create(rlt_db *db, const rlt_op *op, const rlt_space *space,
                                        const rlt_record_target *target, const char *only_tuner, rlt_measurer *inner,
                                        rlt_measurer **out, rlt_diag *diag);

void rlt_measurer_destroy(rlt_measurer *m); /* NULL ok */

/* rlt_session_target (rltune/session.h): the target a session records under. */

/* ---- the session ------------------------------------------------------------- */

/* rlt_session, rlt_tune_progress and the public face of a session (its
 * options, rlt_session_open, the summary, the JSON) are rltune/session.h;
 * rlt_session_step, _is_done, _finish and _destroy are the same functions
 * as declared here. */

/* What a session has done so far, and at its end the run's result. */
typedef struct rlt_tune_result {
    int n_trials;             /* configurations evaluated */
    int n_measured;           /* of which measured in this run */
    int n_from_db;            /* of which read back from the records */
    int n_failed;             /* of which not OK (build, run, wrong answer) */
    int n_replayed;           /* of which answered from the replay's dataset */
    int n_absent;             /* of which the replay's dataset does not have (not failures) */
    int n_transfer_rows;      /* rows the tuner was warm-started with (transfer_db) */
    int n_transfer_workloads; /* other workloads they came from */
    double best_gflops;       /* 0 when nothing measured OK */
    double best_time_ms;
    char best_config[1024];   /* the best configuration's key ("" if none) */
    char best_schedule[4096]; /* its schedule */
    char best_cc[16];
    char start_config[1024];  /* the configuration the search started from ("" without one, or when
                                 none was near) */
    int n_other_threads;      /* configurations proposed from other thread counts' records */
    int n_seeds;              /* rule-built configurations proposed */
    int n_offered;            /* configurations offered from outside the proposers (rlt_session_offer) */
    double *curve;            /* best GFLOP/s after each trial (n_trials of them); owned */
    double wall_s;            /* the whole run, the final pick included */
    double tuner_s;           /* of which in the proposers: creating (and loading) them, proposing, learning */
    double measurements_per_s; /* trials per second of the search (wall_s without the final pick) */
    bool was_stopped;         /* by *stop */
    bool was_stopped_early;   /* by early_stopping */
    bool was_exhausted;       /* the proposers had nothing left to propose */
    /* The final pick: the candidates measured again (0 when it did not
     * run), the rounds, its wall time, and the best as tuning had measured
     * it. */
    int n_final;
    int final_rounds;
    double final_s;
    double tuning_best_gflops;
    char tuning_best_config[1024];
} rlt_tune_result;

void rlt_tune_result_free(rlt_tune_result *r);

typedef struct rlt_session_opts {
    int n_trials;             /* configurations to evaluate, >= 1 */
    int batch_size;           /* configurations measured together; 0 = 16 */
    int early_stopping;       /* stop after this many trials without a better one; 0 = never */
    /* The final pick, when the search measured something new and the
     * measurer can measure again: the n_final best configurations of the
     * session (at most batch_size; at several threads with the best one
     * without a parallel loop among them) measured final_rounds times each
     * (0 = 3), and the best median is the session's best. 0 = none. */
    int n_final;
    int final_rounds;
    int n_threads;            /* the run's threads (> 1: the pick also re-measures the best serial one) */
    const volatile sig_atomic_t *stop; /* when it becomes non-zero, stop after the batch in flight */
    rlt_tune_progress_fn progress;     /* called after every step (may be NULL) */
    void *progress_ctx;
} rlt_session_opts;

#define RLT_TUNE_FINAL_REPEAT 5
#define RLT_TUNE_FINAL_MIN_MS 25.0

/* A session over `space` (copied: proposers are made over
 * rlt_session_space(s)) of `op` (borrowed). Add its proposers and set its
 * measurer before the first step. Errors: INVALID_ARGUMENT (n_trials < 1),
 * OUT_OF_MEMORY. */
rlt_status rlt_session_create(const rlt_op *op, const rlt_space *space, const rlt_session_opts *opts,
                              rlt_session **out, rlt_diag *diag);
void rlt_session_destroy(rlt_session *s); /* NULL ok; destroys its proposers and measurer */

const rlt_space *rlt_session_space(const rlt_session *s);
const rlt_op *rlt_session_op(const rlt_session *s);   /* borrowed */
int rlt_session_n_total(const rlt_session *s);        /* the trials asked for */

/* Takes ownership of p (also on failure): proposers are asked in the
 * order they were added. OUT_OF_MEMORY only. */
rlt_status rlt_session_add_proposer(rlt_session *s, rlt_proposer *p, rlt_diag *diag);
/* Takes ownership of m, replacing (and destroying) any earlier one. */
void rlt_session_set_measurer(rlt_session *s, rlt_measurer *m);

/* Offers the session a configuration from outside its proposers: `key`, a
 * configuration of a kindred space (a network's tuning offers a task the
 * best of its siblings, the same op with another epilogue), adopted as
 * rlt_space_configs_adopt says (up to RLT_SESSION_OFFER_MAX
 * configurations). The next steps measure what was offered first, the
 * proposers filling the rest of the batch, and every proposer hears the
 * scores. A configuration is taken once per session; *out_n says how many
 * were new. OUT_OF_MEMORY only. */
#define RLT_SESSION_OFFER_MAX 8
rlt_status rlt_session_offer(rlt_session *s, const char *key, int *out_n, rlt_diag *diag);

/* The tuner of the session's "tuner" proposer, or NULL (borrowed). */
rlt_tuner *rlt_session_tuner(const rlt_session *s);

/* One batch: proposed, measured, heard by every proposer, added to the
 * curve and the best. After it, rlt_session_is_done says whether the
 * search has ended (trials spent, stopped, stopped early, nothing left to
 * propose). Errors: the measurer's and the proposers' (the batch is then
 * lost: nothing of it enters the curve); a step after the search ended is
 * INVALID_ARGUMENT. */
rlt_status rlt_session_step(rlt_session *s, rlt_diag *diag);
bool rlt_session_is_done(const rlt_session *s);

/* The trials of the last step (borrowed until the next step). */
const rlt_trial *rlt_session_last_batch(const rlt_session *s, int *out_n);

/* Ends the search: the tuner's agent saved to about.agent_out, then the
 * final pick (rlt_session_opts.n_final), unless nothing new was measured
 * or the session was stopped. Call once, after the last step. Errors: the
 * agent file's, the measurer's. */
rlt_status rlt_session_finish(rlt_session *s, rlt_diag *diag);

/* Best, curve and counts so far (borrowed; valid until the next call that
 * changes the session). */
const rlt_tune_result *rlt_session_result(const rlt_session *s);

/* Adds seconds spent on the proposers outside the session (creating and
 * loading a tuner) to result.tuner_s. */
void rlt_session_add_tuner_time(rlt_session *s, double seconds);

/* The result for the code that builds a session from options (tune.c) to
 * note what it started from: transfer rows, start configuration, seeds. */
rlt_tune_result *rlt_session_result_mutable(rlt_session *s);

/* What a session says of itself beyond its result (rlt_session_json,
 * rlt_session_summary_get): set by whoever builds it. Strings owned by
 * the session (copies; NULL: none). */
typedef struct rlt_session_about {
    char tuner[32];
    char *db_path;
    char *replay_path;
    char *agent_in;
    char *agent_out;          /* finish saves the tuner's agent here */
    char *policy_path;
    bool has_policy;          /* a policy's rollout came first */
    double policy_gflops;
    double policy_wall_s;
    int64_t policy_n_evaluations;
    char *policy_schedule;
} rlt_session_about;

rlt_session_about *rlt_session_about_mutable(rlt_session *s);
const rlt_session_about *rlt_session_about_get(const rlt_session *s);

/* Hands the session something to free when it is destroyed (a database
 * it reads, a replay), after its measurer and proposers, the last handed
 * first. free_fn(ptr) on failure too. OUT_OF_MEMORY only. */
rlt_status rlt_session_attach(rlt_session *s, void *ptr, void (*free_fn)(void *), rlt_diag *diag);

/* Moves the result out (the curve's ownership with it; free with
 * rlt_tune_result_free); the session's own result is left empty. */
void rlt_session_take_result(rlt_session *s, rlt_tune_result *out);

#endif /* RLT_SESSION_H */
