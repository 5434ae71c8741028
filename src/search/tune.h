/*
 * tune.h - the tuning loop: a tuner proposes batches of configurations of
 * the op's space; each batch is read back from the records where it was
 * measured before, and the rest is built (in parallel) and then measured
 * (one at a time); every measurement is stored, failures included, before
 * the tuner hears the scores.
 *
 * Measurements come from one of two sources: live (built, run and timed
 * here) or a replay of a dataset (search/dataset.h: answered from what a
 * dataset recorded, nothing compiled or run). Proposals come from a tuner,
 * or from a fixed plan (what `rltune dataset` measures).
 */
#ifndef RLT_TUNE_H
#define RLT_TUNE_H

#include <signal.h>

#include "db/db.h"
#include "measure/measure.h"
#include "search/tuner.h"

typedef struct rlt_replay rlt_replay; /* search/dataset.h */

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
    /* NULL: measure live. Else measurements are answered from this dataset
     * (borrowed; rlt_replay_open with the same op): nothing is compiled or
     * run, db must be NULL, the space is the dataset's, restricted to its
     * configurations (`space` is ignored), and n_threads must be the
     * dataset's. A configuration the dataset lacks is counted in n_absent,
     * never given a time; the tuner hears 0 for it, as for a failure. */
    const rlt_replay *replay;
    /* NULL: a tuner proposes. Else exactly these n_plan configurations of
     * the op's space (borrowed) are evaluated, in order: n_trials is taken
     * to be n_plan, `tuner` only names the proposer in the records, and
     * only records of that proposer are read back from db. */
    const rlt_config *plan;
    int n_plan;
    /* NULL: none. Else the records of other workloads of the op's kind on
     * this target (search/transfer.h) warm-start a model-based tuner
     * (xgb, xgb-rank; INVALID_ARGUMENT for the others). Borrowed; may be
     * `db` itself. */
    rlt_db *transfer_db;
    /* NULL: none. Else a learning tuner (rlt_tuner_has_agent; others are
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
    char start_config[1024];  /* start_key, or start_nest's configuration key ("" without one, or when
                                 none was near) */
    int n_other_threads;      /* configurations proposed from other thread counts' records (from_other_threads) */
    int n_seeds;              /* rule-built configurations proposed (n_seeds) */
    double *curve;            /* best GFLOP/s after each trial (n_trials of them); owned */
    double wall_s;            /* the whole run, the final pick included */
    double tuner_s;           /* of which in the tuner: creating (and loading) it, proposing, learning */
    double measurements_per_s; /* trials per second of the search (wall_s without the final pick) */
    bool was_stopped;         /* by *stop */
    bool was_stopped_early;   /* by early_stopping */
    bool was_exhausted;       /* the tuner had nothing left to propose */
    /* The final pick (n_final): the candidates measured again (0 when it did
     * not run), the rounds, and the best as tuning had measured it. */
    int n_final;
    int final_rounds;
    double final_s;           /* its wall time */
    double tuning_best_gflops;
    char tuning_best_config[1024];
} rlt_tune_result;

#define RLT_TUNE_OTHER_THREADS 3 /* best configurations taken from other thread counts */
#define RLT_TUNE_SEEDS 8         /* rule-built configurations `rltune tune` measures first */
#define RLT_TUNE_FINAL_REPEAT 5
#define RLT_TUNE_FINAL_MIN_MS 25.0

/* The target part of a workload's key: CPU, vector width, compiler and
 * flags, threads. Records of one key are comparable. */
void rlt_tune_target_key(const rlt_build_opts *build, int n_threads, rlt_str *out);

rlt_status rlt_tune(const rlt_op *op, const rlt_tune_opts *opts, rlt_tune_result *out, rlt_diag *diag);
void rlt_tune_result_free(rlt_tune_result *r);

#endif /* RLT_TUNE_H */
