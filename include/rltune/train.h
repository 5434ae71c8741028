/*
 * rltune/train.h - training LoopTune policies (docs/training.md,
 * docs/policy.md): shape datasets split into training and test shapes
 * (`rltune gen-dataset`), demonstrations made by searching
 * (`rltune gen-demos`) and a policy cloned from them (`rltune imitate`),
 * and reinforcement learning, DQN or PPO, over the LoopTune env
 * (`rltune train`). File formats: docs/formats.md.
 */
#ifndef RLTUNE_TRAIN_H
#define RLTUNE_TRAIN_H

#include <signal.h>

#include "rltune/policy.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- shape datasets ------------------------------------------------------ */

/* The most shapes one set of ranges may give (before --max-shapes). */
#define RLT_SHAPES_MAX 1000000

typedef struct rlt_shape_set {
    int n;
    char **specs;   /* canonical op specs, n of them, each owned */
    bool *is_test;  /* split: true for the test part; n of them, owned */
    char *about;    /* the generator's comment line without "# " (kind, ranges, fraction, seed); owned, may be NULL */
} rlt_shape_set;

/* Frees the arrays and strings (rlt_free) and zeroes *s; the struct itself is
 * the caller's. NULL and a zeroed set are fine. */
RLT_API void rlt_shape_set_free(rlt_shape_set *s);

/* Counts of each part. */
RLT_API int rlt_shape_set_count(const rlt_shape_set *s, bool is_test);

/* What gen-dataset generates. A range is "LO:HI:STEP" (LO, LO+STEP, ...
 * up to HI) or a single value "N", or a list "A,B,C" (any order, each value
 * once; used ascending). Values are whole numbers from 1 to RLT_MAX_EXTENT.
 * The strings are borrowed for the call. */
typedef struct rlt_shape_gen_opts {
    const char *kind;       /* "mm" (matmul M, N, K each from dims), "mm-random" (max_shapes distinct
                               matmuls, M, N, K each drawn log-uniformly from dims' values),
                               "dense-random" (dense, the same, bias and relu each on or off at
                               random), "bmm-random" (batch_matmul, the same, the batch log-uniform
                               in 2..16) or "conv" (conv2d, docs/policy.md) */
    const char *dims;       /* mm: the range of M, N and K; conv: the range of C and K (channels) */
    const char *sizes;      /* conv: the range of H = W; NULL = "7,14,28,56"; mm: must be NULL */
    const char *kernels;    /* conv: R = S, odd only (pad R/2 keeps the size); NULL = "1,3"; mm: must be NULL */
    double test_fraction;   /* in [0, 1); shapes drawn for the test part */
    int max_shapes;         /* > 0: a random subset of this many shapes (before the split); 0: all */
    uint64_t seed;          /* the subset and the split */
} rlt_shape_gen_opts;

/* Generates the shapes of `opts` into *out (zeroed first; free with
 * rlt_shape_set_free): every combination of the ranges, in a fixed order
 * (mm: M, N, K; conv: C, H = W, K, R = S; the last fastest), a seeded
 * random subset when max_shapes is set, and a seeded split with
 * round(n * test_fraction) shapes (halves rounded up) in the test part.
 * The set lists the train part, then the test part, each in that order.
 * mm gives matmul:M=..,N=..,K=..; mm-random draws max_shapes (1..100000,
 * required) distinct matmuls by the seed, M, N and K each log-uniformly from
 * dims' values (sizes from 16 to 63 as likely as from 256 to 1023), in the
 * order drawn; dense-random and bmm-random draw dense and batch_matmul shapes
 * the same way (distinct in M, N, K), with bias and relu each on or off
 * (dense) or the batch log-uniform in 2..16 (batch_matmul); conv gives conv2d with N=1, stride 1 and
 * pad R/2 (output size = input size). Specs are canonical; `about` records
 * the options ("kind mm dims 64:256:16 test-fraction 0.2 seed 0"). The same
 * opts give the same set. Errors: INVALID_ARGUMENT naming the option as
 * gen-dataset spells it (--kind, --dims, ...) with the text and what is
 * wrong (an unknown kind, a malformed or empty range, a value below 1 or
 * above RLT_MAX_EXTENT, a value listed twice, an even kernel, --sizes or
 * --kernels for mm, a fraction outside [0, 1), more than RLT_SHAPES_MAX
 * shapes, a shape rlt_op_parse refuses), OUT_OF_MEMORY. */
RLT_API rlt_status rlt_shape_set_generate(const rlt_shape_gen_opts *opts, rlt_shape_set *out, rlt_diag *diag);

/* Writes the set (format above) atomically (rlt_file_write), in the set's
 * order. Errors: IO_ERROR naming the file; INVALID_ARGUMENT for a set the
 * reader would refuse (no shape, an empty spec or one with blanks, an about
 * of more than one line); OUT_OF_MEMORY. */
RLT_API rlt_status rlt_shape_set_save(const rlt_shape_set *s, const char *path, rlt_diag *diag);

/* Reads a dataset file into *out (zeroed first; free with
 * rlt_shape_set_free), the shapes in the file's order, each spec made
 * canonical. Errors: IO_ERROR (unreadable), PARSE_ERROR naming the file
 * and line (no header, another version, a NUL byte, a line that is not
 * "train SPEC" or "test SPEC", a spec rlt_op_parse refuses, a shape twice,
 * no shape at all), OUT_OF_MEMORY. A save then load gives an equal set. */
RLT_API rlt_status rlt_shape_set_load(const char *path, rlt_shape_set *out, rlt_diag *diag);

/* ---- demonstrations ----------------------------------------------------- */

typedef struct rlt_demo {
    char *op_spec;       /* canonical op spec; owned */
    double gflops;       /* the end state's measured GFLOP/s (what it was chosen by) */
    double start_gflops; /* the op's default nest's */
    int n_trace;         /* 0: stop at once */
    int trace[RLT_OPTIMIZE_MAX_TRACE];
} rlt_demo;

typedef struct rlt_demo_set {
    int n;
    rlt_demo *demos; /* owned */
    char *about;     /* how they were made: one line, without "# "; owned, may be NULL */
} rlt_demo_set;

/* Frees what the set owns and zeroes it. NULL and a zeroed set are fine. */
RLT_API void rlt_demo_set_free(rlt_demo_set *s);

/* A demonstrations file (docs/formats.md, "Demonstrations"):
 *     # rltune demos v1
 *     # ABOUT
 *     matmul:M=64,N=80,K=128<TAB>183.2<TAB>5.1<TAB>down unroll swap_down
 * one demonstration a line: op spec, GFLOP/s of the end state and of the
 * start, the actions by name separated by single spaces ("-" for none). '#'
 * lines after the header are comments; the first one is the about line.
 * Written atomically. Errors: IO_ERROR naming the file, INVALID_ARGUMENT
 * (an empty set, an about with a newline), OUT_OF_MEMORY. */
RLT_API rlt_status rlt_demo_set_save(const rlt_demo_set *s, const char *path, rlt_diag *diag);

/* Reads a demonstrations file into *out (zeroed first). Errors: IO_ERROR,
 * PARSE_ERROR naming the file and line (no header, another version, a line
 * without four tab-separated fields, an op spec rlt_op_parse refuses, a
 * GFLOP/s that is not a finite number >= 0, an unknown action, more than
 * RLT_OPTIMIZE_MAX_TRACE actions, no demonstration at all), OUT_OF_MEMORY.
 * Whether a trace is legal on its op is the replay's to say. */
RLT_API rlt_status rlt_demo_set_load(const char *path, rlt_demo_set *out, rlt_diag *diag);

/* Moves every demonstration of *src to the end of *dst (src is left empty,
 * its about kept); dst's about becomes "DST_ABOUT | SRC_NAME: SRC_ABOUT"
 * (src_name names src, e.g. its file; "no about line" for a set without
 * one). Errors: OUT_OF_MEMORY (nothing moved). */
RLT_API rlt_status rlt_demo_set_append(rlt_demo_set *dst, rlt_demo_set *src, const char *src_name, rlt_diag *diag);

/* Progress of long runs: one line of text (no newline) at each step. */
typedef void (*rlt_imitate_progress_fn)(void *ctx, const char *line);

#define RLT_DEMOS_DEFAULT_STEPS 24
#define RLT_DEMOS_DEFAULT_BUDGET_S 60.0
#define RLT_DEMOS_DEFAULT_GUIDE_BEAM 2
#define RLT_DEMOS_DEFAULT_TIE 0.02

typedef struct rlt_demo_gen_opts {
    const rlt_policy *guide; /* may be NULL: no guided beam */
    int guide_beam;          /* its width, 2..RLT_ENV_SEARCH_MAX_BEAM; 0 = 2 */
    bool no_greedy;          /* leave greedy search out (then a guide is required) */
    int max_steps;           /* a trace's actions, 1..RLT_OPTIMIZE_MAX_TRACE; 0 = 16 */
    double budget_s;         /* each search's time budget, > 0; 0 = 60 */
    double tie;              /* in [0, 1); 0 = 0.02; negative: none (the fastest trace always) */
    rlt_env_opts env;        /* how states are measured (one env family per shape) */
    const rlt_demo_set *traces; /* may be NULL: demonstrations whose traces (not their shapes) join the
                                   library before any search, e.g. traces made by hand or found on other
                                   shapes; borrowed for the call */
    rlt_imitate_progress_fn progress; /* may be NULL */
    void *progress_ctx;
    volatile const sig_atomic_t *stop; /* may be NULL; non-zero: stop after the shape in flight (below) */
} rlt_demo_gen_opts;

/* Makes demonstrations (stages above): searches on search[0 .. n_search-1],
 * labels label[0 .. n_label-1] (op specs; a shape may be in both), into
 * *out (zeroed first), one demonstration per label shape in their order,
 * and `about` saying how. With opts->traces, n_search may be 0 (no search:
 * the library is those traces). When *stop becomes non-zero the stage in flight
 * ends after its current shape: stopped while searching, no shape is
 * labelled; while labelling, the shapes labelled so far are the set (so
 * out->n may be below n_label, even 0; about says how many). Errors:
 * INVALID_ARGUMENT (an option out of range, no shape, no expert, no
 * search that beat its start), the op specs' errors, the env's
 * (measurement that cannot work at all; a kernel that fails is a result,
 * not an error), OUT_OF_MEMORY. */
RLT_API rlt_status rlt_demos_make(const char *const *search, int n_search, const char *const *label, int n_label,
                          const rlt_demo_gen_opts *opts, rlt_demo_set *out, rlt_diag *diag);

/* ---- behaviour cloning -------------------------------------------------- */

#define RLT_IMITATE_DEFAULT_EPOCHS 200
#define RLT_IMITATE_DEFAULT_BATCH 64
#define RLT_IMITATE_DEFAULT_LR 1e-3

typedef struct rlt_imitate_opts {
    int n_hidden;       /* 0: the policy defaults (256, 128) */
    const int *hidden;
    int epochs;         /* passes over the samples, 1..100000; 0 = 200 */
    int batch;          /* minibatch rows, 1..4096; 0 = 64 */
    double lr;          /* Adam's, in (0, 1]; 0 = 1e-3 */
    uint64_t seed;      /* the network's weights and the minibatches */
    int max_steps;      /* the rollout length the policy is for: a demonstration longer is refused; 0 = 16 */
    rlt_imitate_progress_fn progress; /* may be NULL: called after each tenth of the epochs */
    void *progress_ctx;
} rlt_imitate_opts;

typedef struct rlt_imitate_report {
    int n_demos;
    int n_samples;       /* states the demonstrations pass through, stops included */
    double loss_first;   /* mean cross-entropy over the samples, before training */
    double loss_last;    /* and after */
    double accuracy;     /* samples whose demonstrated action is the policy's greedy choice */
    int n_reproduced;    /* demonstrations the policy's blind greedy walk repeats action for action */
} rlt_imitate_report;

/* Trains a new bc policy on the demonstrations. Every trace is replayed
 * from its op's default nest; one that is illegal there, or longer than
 * max_steps, fails the call (INVALID_ARGUMENT naming the demonstration and
 * the action). Errors also: INVALID_ARGUMENT (an option out of range),
 * OUT_OF_MEMORY. The same demonstrations and options give bit-identical
 * networks (OpenBLAS set to one thread). `report` may be NULL. */
RLT_API rlt_status rlt_policy_imitate(const rlt_demo_set *demos, const rlt_imitate_opts *opts, rlt_policy **out,
                              rlt_imitate_report *report, rlt_diag *diag);

/* ---- reinforcement learning ---------------------------------------------- */

/* Defaults (docs/training.md says why). */
#define RLT_TRAIN_DEFAULT_ENVS 8
#define RLT_TRAIN_DEFAULT_EPISODE_STEPS 10 /* LoopTune's rollout length */
#define RLT_TRAIN_DEFAULT_GAMMA 0.9
#define RLT_TRAIN_DEFAULT_CHECKPOINT_EVERY 500
#define RLT_TRAIN_DEFAULT_DQN_LR 5e-4
#define RLT_TRAIN_DEFAULT_DQN_BATCH 64
#define RLT_TRAIN_DEFAULT_DQN_BUFFER 20000
#define RLT_TRAIN_DEFAULT_DQN_LEARN_START 200
#define RLT_TRAIN_DEFAULT_DQN_UPDATES_PER_STEP 1.0
#define RLT_TRAIN_DEFAULT_DQN_TARGET_EVERY 200
#define RLT_TRAIN_DEFAULT_DQN_EPS_END 0.05
#define RLT_TRAIN_DEFAULT_DQN_EPS_FRACTION 0.5
#define RLT_TRAIN_DEFAULT_PPO_LR 3e-4
#define RLT_TRAIN_DEFAULT_PPO_ROLLOUT_STEPS 16
#define RLT_TRAIN_DEFAULT_PPO_EPOCHS 4
#define RLT_TRAIN_DEFAULT_PPO_MINIBATCH 64
#define RLT_TRAIN_DEFAULT_PPO_LAMBDA 0.95
#define RLT_TRAIN_DEFAULT_PPO_CLIP 0.2
#define RLT_TRAIN_DEFAULT_PPO_ENTROPY_COEF 0.01

/* Limits of the options. */
#define RLT_TRAIN_MAX_ENVS 256
#define RLT_TRAIN_MAX_EPISODE_STEPS 256
#define RLT_TRAIN_MAX_STEPS 1000000000LL
#define RLT_TRAIN_MAX_DQN_BUFFER 200000
#define RLT_TRAIN_RETURN_WINDOW 50 /* episodes in the progress's and the curve's moving average */

/* What the progress callback sees after every batched step. */
typedef struct rlt_train_progress {
    int64_t n_steps_done;     /* env steps, those before a resume included */
    int64_t n_steps_total;    /* the run's target (rlt_train_opts.n_steps) */
    int64_t n_episodes;       /* finished episodes */
    double mean_return;       /* over the last RLT_TRAIN_RETURN_WINDOW episodes; 0 before the first */
    int64_t n_evaluations;    /* states measured (evaluator calls), resumed runs included */
    int64_t n_cache_hits;     /* states found in the env caches */
    double states_per_s;      /* measured states per second of this process's run */
    double steps_per_s;       /* env steps per second of this process's run */
    double eta_s;             /* what is left at steps_per_s */
    bool is_checkpoint;       /* a checkpoint was written after this step */
} rlt_train_progress;

typedef void (*rlt_train_progress_fn)(const rlt_train_progress *p, void *ctx);

/* Options; zero fields take the defaults above. On a resume (resume_path
 * set) a zero field takes the checkpoint's value instead, and a non-zero one
 * must equal it (INVALID_ARGUMENT otherwise): algo, seed, the network, the
 * dataset's training shapes and every hyper-parameter below. Measurement
 * options (env), n_steps and the paths may change. Strings are borrowed for
 * the call. */
typedef struct rlt_train_opts {
    const char *algo;               /* "dqn" or "ppo"; NULL = dqn (or the checkpoint's) */
    const rlt_shape_set *shapes;    /* required; its training part (is_test false) is trained on */
    const char *dataset_name;       /* names it (the file) in messages, the checkpoint and `about`; may be NULL */
    int64_t n_steps;                /* total env steps, 1..RLT_TRAIN_MAX_STEPS; a resume continues to it */
    uint64_t seed;                  /* networks, shapes drawn, exploration; 0 on a resume: the checkpoint's */
    int n_envs;                     /* slots stepping together, 1..RLT_TRAIN_MAX_ENVS */
    int episode_steps;              /* actions per episode, 1..RLT_TRAIN_MAX_EPISODE_STEPS */
    int n_hidden;                   /* 0: 256,128 (RLT_POLICY_DEFAULT_HIDDEN_*) */
    int hidden[RLT_POLICY_MAX_HIDDEN];
    double lr;                      /* Adam's learning rate; dqn 5e-4, ppo 3e-4 */
    double gamma;                   /* discount, in (0, 1) */
    /* dqn */
    int dqn_batch;                  /* minibatch of replayed transitions, 1..4096 */
    int dqn_buffer;                 /* replay capacity in transitions, 1..RLT_TRAIN_MAX_DQN_BUFFER */
    int dqn_learn_start;            /* env steps before the first gradient update */
    double dqn_updates_per_step;    /* gradient updates per env step, (0, 64] */
    int dqn_target_every;           /* gradient updates between target-network copies */
    double dqn_eps_end;             /* epsilon's final value, (0, 1] */
    double dqn_eps_fraction;        /* of n_steps over which epsilon falls from 1 to eps_end, (0, 1] */
    /* ppo */
    int ppo_rollout_steps;          /* steps of every slot per update (T), 1..1024 */
    int ppo_epochs;                 /* passes over a rollout, 1..100 */
    int ppo_minibatch;              /* rows per gradient step, 1..4096 */
    double ppo_lambda;              /* GAE's lambda, (0, 1] */
    double ppo_clip;                /* the surrogate's clip, (0, 1) */
    double ppo_entropy_coef;        /* entropy bonus, >= 0 (a negative value asks for 0) */
    int ppo_critic_warmup;          /* env steps at the start in which the actor is held and only the critic
                                       learns, 0..RLT_TRAIN_MAX_STEPS; default 0 (a negative value asks for 0);
                                       for a fresh critic beside a trained actor (init) */
    /* fine-tuning: ppo only, a new run only */
    const rlt_policy *init;         /* NULL: networks from the seed; else the actor starts as this bc or ppo
                                       policy's network (and the critic as a ppo policy's), with its hidden
                                       layers, and stays blind if it is (rlt_policy_is_blind); borrowed */
    const char *init_name;          /* names it (the file) in messages, the checkpoint and `about` */
    /* measurement: cc, cflags, repeat, min_repeat_ms, timeout_s, n_threads,
     * peak_gflops, seed (input data), evaluate (tests, cost models);
     * max_steps is ignored (episodes are the trainer's). Copied per env. */
    rlt_env_opts env;
    /* checkpoints and outputs */
    const char *checkpoint_path;    /* NULL: none written */
    int64_t checkpoint_every;       /* env steps between checkpoints; 0 = 500 */
    const char *resume_path;        /* NULL: a new run; else continue from this checkpoint */
    const char *curve_path;         /* NULL: none; else the reward curve (SVG), with every checkpoint and at the end */
    const char *command_line;       /* for `about`; may be NULL */
    volatile sig_atomic_t *stop;    /* may be NULL; when it becomes non-zero the run checkpoints and returns */
    rlt_train_progress_fn progress; /* may be NULL */
    void *progress_ctx;
} rlt_train_opts;

/* What a run did. */
typedef struct rlt_train_stats {
    int64_t n_steps;              /* env steps done in all, those before a resume included */
    int64_t n_steps_resumed;      /* of them, those the checkpoint had done (0 for a new run) */
    int64_t n_episodes;           /* finished episodes in all */
    int64_t n_updates;            /* gradient steps (dqn: minibatches; ppo: minibatches of all epochs) */
    int64_t n_evaluations;        /* states measured, resumed runs included */
    int64_t n_cache_hits;
    double wall_s;                /* in all, the checkpoint's time included */
    double mean_return_first;     /* mean return of the first 10% of episodes (at least one); 0 without episodes */
    double mean_return_last;      /* of the last 10% */
    double mean_return_recent;    /* of the last RLT_TRAIN_RETURN_WINDOW */
    int n_train_shapes;           /* shapes trained on */
    int n_checkpoints;            /* checkpoints written by this call */
    bool is_interrupted;          /* stopped by opts.stop before n_steps */
    char algo[8];                 /* "dqn" or "ppo", as resolved */
    uint64_t seed;                /* as resolved */
} rlt_train_stats;

/* Trains a policy. On success *out is the policy (free with
 * rlt_policy_destroy) with its optimiser states and p->about set to how it
 * was trained (the command line, dataset, algo, steps, seed, wall time,
 * final mean return); save it with rlt_policy_save (which leaves the
 * optimisers out). With checkpoint_path a checkpoint is written atomically
 * at the start of a new run (so that a path that cannot be written fails at
 * once), every checkpoint_every steps, at the end and when *stop is set;
 * with curve_path the curve is written with them (or only at the end
 * without checkpoints). A run whose *stop becomes non-zero finishes the
 * batched step in flight and returns OK with stats->is_interrupted. A
 * resume takes n_steps as the run's total: fewer than the checkpoint has
 * done is INVALID_ARGUMENT. *stats (may be NULL) is filled on success and,
 * as far as the run got, on failure.
 * Errors: INVALID_ARGUMENT for options out of range, a dataset without
 * training shapes, a shape the env refuses, and a checkpoint that does not
 * match the options (the message names the first difference); PARSE_ERROR
 * for a damaged checkpoint; IO_ERROR for a checkpoint or curve that cannot
 * be written; the env's errors (a failed measurement machinery: the
 * message names the shape and step); OUT_OF_MEMORY.
 * Threads: uses the calling thread (and the env's compiler processes);
 * sets OpenBLAS to one thread for the process. */
RLT_API rlt_status rlt_train(const rlt_train_opts *opts, rlt_policy **out, rlt_train_stats *stats, rlt_diag *diag);

#ifdef __cplusplus
}
#endif
#endif /* RLTUNE_TRAIN_H */
