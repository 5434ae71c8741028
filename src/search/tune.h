/*
 * tune.h - a tuning session built from options and run to its end:
 * rlt_tune_start turns rlt_tune_opts into a session (session.h) with its
 * proposers (a queue of seed configurations, then a tuner; or a fixed
 * plan) and its measurer (live, with the records read back and stored when
 * there is a database; or a replay of a dataset), and rlt_tune steps it
 * batch by batch, saves a learning tuner's agent and makes the final pick.
 *
 * Measurements come from one of two sources: live (built, run and timed
 * here) or a replay of a dataset (replay.h: answered from what a dataset
 * recorded, nothing compiled or run). Proposals come from a tuner, or from
 * a fixed plan (what `rltune dataset` measures).
 */
#ifndef RLT_TUNE_H
#define RLT_TUNE_H

#include "search/session.h"

typedef struct rlt_replay rlt_replay; /* search/replay.h */

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
    /* NULL: measure live. Else measurements are answered from this dataset
     * (borrowed; rlt_replay_open with the same op, replay.h): nothing is compiled or
     * run, db must be NULL, the space is the dataset's, restricted to its
     * configurations (`space` is ignored), and n_threads must be the
     * dataset's. A configuration the dataset lacks is counted in n_absent,
     * never given a time; the tuner hears 0 for it, as for a failure. */
    const rlt_replay *replay;
    /* Where a live run's batches are built and run (borrowed; NULL: here). */
    const rlt_executor *executor;
    /* NULL: a tuner proposes. Else exactly these n_plan configurations of
     * the op's space (borrowed) are evaluated, in order: n_trials is taken
     * to be n_plan, `tuner` only names the proposer in the records, and
     * only records of that proposer are read back from db. */
    const rlt_config *plan;
    int n_plan;
    /* NULL: none. Else the records of other workloads of the op's kind on
     * this target (search/transfer.h) warm-start a tuner whose cost model
     * takes them (RLT_TUNER_USES_TRANSFER: xgb, xgb-rank, ppo;
     * INVALID_ARGUMENT for the others). Borrowed; may be `db` itself. */
    rlt_db *transfer_db;
    /* NULL: none. Else a learning tuner (RLT_TUNER_HAS_AGENT; others are
     * INVALID_ARGUMENT) starts from the agent saved in agent_in
     * (rlt_tuner_load) and, when the run ends without an error (stopped,
     * early or not, included), saves its agent to agent_out
     * (rlt_tuner_save). They may name the same file. */
    const char *agent_in;
    const char *agent_out;
    /* NULL: none. Else a scheduled nest of the op (borrowed) the search
     * starts from: its nearest valid configuration (rlt_space_project) and
     * that configuration's neighbours are proposed first, then the tuner's
     * own (`rltune tune --tuner policy` passes the LoopTune policy's nest). */
    const rlt_nest *start_nest;
    /* NULL: none. Else a configuration key of the op's space ("v1;vec=...",
     * every knob named; PARSE_ERROR otherwise) the search starts from, like
     * start_nest (which it replaces): a run at another thread count starts
     * from the best of the last one this way (bench/vs_vendor.c). */
    const char *start_key;
    /* false: off. Else a live run with a db first measures the same op's
     * best configurations recorded at other thread counts (targets that
     * differ from this run's in threads= alone), as they are: up to
     * RLT_TUNE_OTHER_THREADS of them, final picks first, then by GFLOP/s,
     * each by its latest record. A parallel knob this space lacks is
     * dropped; one that it has and they lack is tried at each of its
     * values. They come after start_key's (or start_nest's) queue. `rltune
     * tune` turns this on unless --no-other-threads. */
    bool from_other_threads;
    /* 0: none. Else a live run first measures up to n_seeds configurations
     * built by rules (rlt_space_seeds: the register tiles with the most
     * FMAs per load, the other knobs set as by hand), as they are, after
     * from_other_threads' ones. `rltune tune` asks for RLT_TUNE_SEEDS
     * unless --seeds says otherwise; experiments and replays use none, so
     * that they compare the tuners alone. */
    int n_seeds;
    /* 0: none. Else, when a live search that measured something ends
     * (early or not, but not stopped), the n_final best configurations of
     * the run (at most batch_size; at several threads, with the best
     * configuration without a parallel loop added when they lack one,
     * taking the last place at batch_size) are measured again, final_rounds times
     * each, in turn, with more and longer samples than tuning takes
     * (RLT_TUNE_FINAL_REPEAT samples of at least RLT_TUNE_FINAL_MIN_MS),
     * and the best median over the rounds is the run's best. A tuning-time
     * measurement is a few short samples and can be lucky, most of all at
     * several threads. Each candidate's re-measurement is stored as one
     * record (median and minimum over the rounds), which is then its
     * configuration's latest: what rltune best and a resumed run read. */
    int n_final;
    int final_rounds; /* 0: 3 */
    const volatile sig_atomic_t *stop; /* when it becomes non-zero, stop after the batch in flight */
    rlt_tune_progress_fn progress;     /* called after every batch (may be NULL) */
    void *progress_ctx;
} rlt_tune_opts;

#define RLT_TUNE_OTHER_THREADS 3 /* best configurations taken from other thread counts */
#define RLT_TUNE_SEEDS 8         /* rule-built configurations `rltune tune` measures first */

/* That target's key text (rlt_record_target_key), appended to out;
 * out->has_failed when rlt_session_target fails. */
void rlt_tune_target_key(const rlt_build_opts *build, int n_threads, rlt_str *out);

/* The session `opts` describe, ready for its first step (session.h): the
 * space (or the replay's), the transfer rows, the start configuration,
 * the other thread counts' best and the rule-built seeds in a queue, the
 * tuner (its agent loaded from agent_in) or the plan, the measurer. The
 * options' borrowed pointers (db, replay, transfer_db, plan, start_nest)
 * must outlive the session; agent_out is copied (rlt_session_finish saves
 * the agent there). Errors: bad options (INVALID_ARGUMENT, PARSE_ERROR for a start
 * key that is not the space's, prefixed "the start configuration"), the
 * transfer's, the agent file's, the reference's build, OUT_OF_MEMORY. */
rlt_status rlt_tune_start(const rlt_op *op, const rlt_tune_opts *opts, rlt_session **out, rlt_diag *diag);

/* Checks opts->start_key against the space the run would search (the op's,
 * or the replay's) without starting anything: PARSE_ERROR naming what is
 * wrong with it, OK when it is a configuration of that space (or there is
 * none). */
rlt_status rlt_tune_start_key_check(const rlt_op *op, const rlt_tune_opts *opts, rlt_diag *diag);

/* rlt_tune_start, every step, the agent saved to agent_out (when the run
 * ends without an error, stopped or not), the final pick. *out holds the
 * result, also on failure (what was done until then; free it with
 * rlt_tune_result_free). */
rlt_status rlt_tune(const rlt_op *op, const rlt_tune_opts *opts, rlt_tune_result *out, rlt_diag *diag);

#endif /* RLT_TUNE_H */
