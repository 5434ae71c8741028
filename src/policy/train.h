/*
 * train.h - training LoopTune policies (`rltune train`): DQN or PPO over
 * the LoopTune env (src/env, docs/env.md) on the training part of a shape
 * dataset (shapes.h), with checkpoints, resume, a reward curve and a
 * progress callback. docs/training.md describes the algorithms and why
 * each default is what it is; docs/formats.md the checkpoint's sections.
 *
 *   train.c      the run: options, episodes over the env slots, batched
 *                measurement, progress, checkpoints and resume, the curve
 *   train_dqn.c  double DQN: replay buffer, target network, epsilon-greedy
 *   train_ppo.c  PPO: masked actor, critic, GAE, clipped surrogate
 *
 * One run: n_envs slots each play episodes of episode_steps actions on a
 * shape drawn (seeded) from the dataset's training part, from the op's
 * default nest. At every step the actions of all slots are chosen, their new
 * states measured together (rlt_env_prefetch: compiled in parallel, run one
 * at a time), then each slot steps. Every env step counts toward n_steps.
 * One env family per shape lives for the whole run, so a state reached
 * twice is measured once.
 *
 * Determinism: one seed and one sequence of measurements give the same
 * actions and bit-identical networks (OpenBLAS is set to one thread).
 */
#ifndef RLT_POLICY_TRAIN_H
#define RLT_POLICY_TRAIN_H

#include "policy/policy.h"
#include "policy/shapes.h"

#include <signal.h>

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
rlt_status rlt_train(const rlt_train_opts *opts, rlt_policy **out, rlt_train_stats *stats, rlt_diag *diag);

#endif /* RLT_POLICY_TRAIN_H */
