/*
 * rltune/env.h - the LoopTune environment (src/env, docs/env.md).
 */
#ifndef RLTUNE_ENV_H
#define RLTUNE_ENV_H

#include <signal.h>

#include "rltune/schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A reinforcement-learning environment over an op's loop nest. The state is
 * the scheduled nest (splits, loop order, annotations), a cursor on one of
 * its loops, the last five actions and the state's GFLOP/s. An action moves
 * the cursor, swaps the cursor's loop with a neighbour, splits it by a power
 * of two, merges it back with its split sibling, annotates it (unroll,
 * vectorize, parallel) or stops the episode. Every action is carried out by
 * the schedule primitives (src/sched) with their legality checks; an action
 * they would refuse is masked, and the mask is computed by trying the action
 * on a copy, so mask and step cannot disagree. The reward of a step is the
 * change in GFLOP/s divided by the machine's peak (one core's measured FP32
 * FMA peak times the run-time thread count). Evaluated states are cached by
 * the nest's structural hash: revisiting a state costs a table look-up.
 *
 * Worked example: a greedy rollout (every call returns an rlt_status and
 * fills `d` on failure; error handling left out):
 *
 *     rlt_diag d = {0};
 *     rlt_env *env = NULL;
 *     rlt_env_opts o = {.max_steps = 10};        // measure each new state
 *     rlt_env_create("matmul:M=128,N=128,K=128", &o, &env, &d);
 *     rlt_env_reset(env, &d);                     // measures the default nest
 *     bool done = false;
 *     while (!done) {
 *         bool mask[RLT_ENV_N_ACTIONS];
 *         rlt_env_action_mask(env, mask);
 *         int best = RLT_ENV_ACTION_STOP;         // always legal before done
 *         double best_gain = 0, r = 0;
 *         bool trial_done;
 *         for (int a = 0; a < RLT_ENV_N_ACTIONS; a++) {
 *             if (!mask[a] || a == RLT_ENV_ACTION_STOP) continue;
 *             rlt_env *trial = NULL;
 *             rlt_env_clone(env, &trial, &d);     // shares the cache
 *             rlt_env_step(trial, a, &r, &trial_done, &d);
 *             if (r > best_gain) { best_gain = r; best = a; }
 *             rlt_env_destroy(trial);
 *         }
 *         rlt_env_step(env, best, &r, &done, &d);
 *     }
 *     char *s = rlt_env_schedule(env);            // "# rltune schedule v1\nsplit j 8\n..."
 *     printf("%.1f GFLOP/s\n%s", rlt_env_gflops(env), s);
 *     rlt_free(s);
 *     rlt_env_destroy(env);
 *
 * For training, pass an evaluator (a cost model) in rlt_env_opts, or replay
 * a state dataset (replay_path, rlt_env_dataset_make): then no step
 * compiles anything. Beam search keeps
 * clones, or one scratch env per beam entry refreshed with rlt_env_restore
 * (a copy of about 10 KiB, no allocation).
 *
 * Threads: an env and all its clones share the op, the workload and the
 * cache of evaluated states: use one family from one thread at a time. */

typedef struct rlt_env rlt_env;

/* The actions, in the order of the action mask and the observation's
 * one-hot blocks. Names (rlt_env_action_name): "up", "down", "swap_up",
 * "swap_down", "split_2" ... "split_256", "merge", "unroll", "vectorize",
 * "parallel", "stop". */
typedef enum rlt_env_action {
    RLT_ENV_ACTION_UP,        /* cursor to the loop outside */
    RLT_ENV_ACTION_DOWN,      /* cursor to the loop inside */
    RLT_ENV_ACTION_SWAP_UP,   /* swap the cursor's loop with the loop outside it; the cursor follows */
    RLT_ENV_ACTION_SWAP_DOWN, /* swap it with the loop inside it; the cursor follows */
    RLT_ENV_ACTION_SPLIT_2,   /* split the cursor's loop by 2 (cursor on the outer half) */
    RLT_ENV_ACTION_SPLIT_4,
    RLT_ENV_ACTION_SPLIT_8,
    RLT_ENV_ACTION_SPLIT_16,
    RLT_ENV_ACTION_SPLIT_32,
    RLT_ENV_ACTION_SPLIT_64,
    RLT_ENV_ACTION_SPLIT_128,
    RLT_ENV_ACTION_SPLIT_256,
    RLT_ENV_ACTION_MERGE,     /* undo the split of the cursor's loop with its adjacent sibling */
    RLT_ENV_ACTION_UNROLL,
    RLT_ENV_ACTION_VECTORIZE,
    RLT_ENV_ACTION_PARALLEL,  /* threads: the run-time count (rlt_env_opts.n_threads) */
    RLT_ENV_ACTION_STOP,      /* ends the episode */
    RLT_ENV_N_ACTIONS
} rlt_env_action;

/* Observation layout, version 1 (docs/env.md has every feature): a fixed
 * number of floats, in blocks at these offsets. A change of layout bumps the
 * version. */
#define RLT_ENV_OBS_VERSION 1
#define RLT_ENV_MAX_LOOPS 16       /* loops described; a split past this many is masked */
#define RLT_ENV_OBS_TENSORS 4      /* access slots per loop: inputs 0..2, then the output */
#define RLT_ENV_LOOP_FEATURES 14   /* floats per loop (10 + one stride per access slot) */
#define RLT_ENV_STRIDE_BUCKETS 32  /* histogram of power-of-two access strides */
#define RLT_ENV_HISTORY 5          /* last actions, one-hot, most recent first */
#define RLT_ENV_OBS_LOOPS 0                                                              /* 224 floats */
#define RLT_ENV_OBS_STRIDES (RLT_ENV_OBS_LOOPS + RLT_ENV_MAX_LOOPS * RLT_ENV_LOOP_FEATURES) /* 224: 32 */
#define RLT_ENV_OBS_HISTORY (RLT_ENV_OBS_STRIDES + RLT_ENV_STRIDE_BUCKETS)                  /* 256: 85 */
#define RLT_ENV_OBS_GFLOPS (RLT_ENV_OBS_HISTORY + RLT_ENV_HISTORY * RLT_ENV_N_ACTIONS)      /* 341: 1 */
#define RLT_ENV_OBS_MASK (RLT_ENV_OBS_GFLOPS + 1)                                          /* 342: 17 */
#define RLT_ENV_OBS_LEN (RLT_ENV_OBS_MASK + RLT_ENV_N_ACTIONS)                             /* 359 */

/* The range of every observation feature (layout above), for declaring an
 * observation space (Gymnasium's Box): flags and one-hot blocks in [0, 1],
 * log2 features of extents, points and strides in [0, 64] (64-bit counts),
 * the stride histogram and the GFLOP/s over the peak in [0, FLT_MAX]. */
RLT_API void rlt_env_observation_bounds(float low[RLT_ENV_OBS_LEN], float high[RLT_ENV_OBS_LEN]);

/* What an evaluator is asked to score: one state the cache has not seen. */
typedef struct rlt_env_eval_request {
    const char *op_spec;          /* the op's canonical spec */
    const char *schedule;         /* the kernel's schedule, text form v1 (docs/schedule.md): the state's and
                                     the env's accumulator (docs/env.md, "Accumulation") */
    const rlt_nest *nest;         /* the kernel's nest (rltune/schedule.h), borrowed for the call */
    uint64_t nest_hash;           /* the state's rlt_nest_hash (without the accumulator): the cache key */
    double flops;                 /* floating-point operations of one call of the op */
} rlt_env_eval_request;

typedef struct rlt_env_eval_result {
    rlt_status status;  /* OK, or why the kernel failed (BUILD_ERROR ... WRONG_ANSWER) */
    double gflops;      /* >= 0; taken as 0 unless status is OK */
    char message[256];  /* why it failed, when it did */
} rlt_env_eval_result;

/* Scores one state. A kernel that fails is a result (out->status, cached
 * like any other); return non-OK (and fill diag) only when the evaluator
 * itself cannot work (no compiler process, out of memory): the step then
 * fails and leaves the env as it was. */
typedef rlt_status (*rlt_env_evaluate_fn)(void *ctx, const rlt_env_eval_request *req, rlt_env_eval_result *out,
                                          rlt_diag *diag);

/* Options; zero means the default everywhere. Strings are copied. */
typedef struct rlt_env_opts {
    const char *cc;        /* compiler: NULL = $RLTUNE_CC or gcc */
    const char *cflags;    /* NULL = RLT_DEFAULT_CFLAGS (rltune/measure.h) */
    const char *cache_dir; /* compile cache, also holds the peak: NULL = as the builder's */
    int n_threads;         /* run-time threads of a parallel loop, 1..256; 0 = 1 */
    int repeat;            /* timed samples per measured state; 0 = 3 */
    double min_repeat_ms;  /* shortest sample; 0 = 10 */
    double timeout_s;      /* one kernel's run; 0 = 10 */
    uint64_t seed;         /* input data of the measured kernels */
    double peak_gflops;    /* > 0: one core's peak, taken as given; 0: measured (and cached) */
    int max_steps;         /* > 0: the episode ends after this many steps; 0: only stop ends it */
    rlt_env_evaluate_fn evaluate; /* NULL: build, run and verify each new state (rlt_measure_nests) */
    void *evaluate_ctx;    /* passed to evaluate; borrowed, must outlive the env and its clones */
    const char *replay_path; /* a state dataset (rlt_env_dataset_make): every state is looked up there and
                                nothing is built or run; actions to states it lacks are masked. n_threads 0
                                takes the dataset's, peak_gflops 0 its peak; cc, cflags, repeat,
                                min_repeat_ms, timeout_s and seed are not used. NULL: measure (or evaluate) */
} rlt_env_opts;

/* Counters of an env family (shared by clones). */
typedef struct rlt_env_stats {
    int64_t n_evaluations; /* states scored by the evaluator (cache misses) */
    int64_t n_cache_hits;  /* states found in the cache */
    int64_t n_cached;      /* states in the cache */
} rlt_env_stats;

/* The action's name ("split_8"), or "unknown" out of range. */
RLT_API const char *rlt_env_action_name(int action);
/* The action with this name, or -1. */
RLT_API int rlt_env_action_from_name(const char *name);

/* Creates an env for the op `op_spec` (a built-in spec or "expr:EXPR|SHAPE",
 * as rlt_op_parse takes). Compiles nothing: call rlt_env_reset before
 * anything else. `opts` may be NULL. With opts->replay_path the dataset is
 * read here (once per family; clones share it). Errors: the op spec's
 * (PARSE_ERROR, INVALID_ARGUMENT), an option out of range (INVALID_ARGUMENT;
 * also both evaluate and replay_path, or a dataset of another op or thread
 * count, naming both), the dataset's (IO_ERROR, PARSE_ERROR naming the file
 * and line: see rlt_env_dataset_make), OUT_OF_MEMORY. Free with
 * rlt_env_destroy. */
RLT_API rlt_status rlt_env_create(const char *op_spec, const rlt_env_opts *opts, rlt_env **out, rlt_diag *diag);

/* Frees the env; the shared part goes with the last clone. NULL is a no-op. */
RLT_API void rlt_env_destroy(rlt_env *env);

/* The message of the last failed reset, step, step_batch, prefetch or
 * reset_batch of env ("" when none). */
RLT_API const char *rlt_env_last_error(const rlt_env *env);

/* A new env in the same state, sharing the op, the workload and the cache
 * of evaluated states (and so the counters). Free it with rlt_env_destroy;
 * the family lives until its last member is destroyed. OUT_OF_MEMORY only. */
RLT_API rlt_status rlt_env_clone(const rlt_env *env, rlt_env **out, rlt_diag *diag);

/* Copies src's state into dst, without allocating: for beam search and
 * rollbacks. Both must be of one family (one made from the other by
 * rlt_env_clone): a bug otherwise (asserted). */
RLT_API void rlt_env_restore(rlt_env *dst, const rlt_env *src);

/* Starts an episode at the op's default nest, cursor on the outermost loop,
 * no actions taken, and evaluates it. The first reset of a family also
 * settles the peak (opts.peak_gflops, a replay's, or the measured one: see
 * docs/env.md), which may compile and run a small kernel once per target.
 * Errors: the evaluator's (IO_ERROR, BUILD_* when the reference cannot be
 * built, ...); with a replay, a start state the dataset lacks
 * (INVALID_ARGUMENT); the env then stays unreset. */
RLT_API rlt_status rlt_env_reset(rlt_env *env, rlt_diag *diag);

/* rlt_env_reset, but from a schedule (text form v1): the episode starts at
 * the nest it makes; a cache_write in it is dropped (the env places the
 * accumulator itself, so rlt_env_schedule's output is taken back). Refused
 * (INVALID_ARGUMENT) when the nest uses what the env cannot express (fuse,
 * pack, pad) or has more than
 * RLT_ENV_MAX_LOOPS loops; the schedule's own errors as rlt_sched_parse /
 * rlt_sched_apply give them. */
RLT_API rlt_status rlt_env_reset_schedule(rlt_env *env, const char *schedule, rlt_diag *diag);

/* Takes action `action`. On success *out_reward is the change in GFLOP/s
 * over the peak (0 for cursor moves and stop) and *out_done says whether
 * the episode ended (stop, or max_steps reached). An action masked in the
 * current state (with a replay, also one leading to a state the dataset
 * lacks) is refused with ILLEGAL_SCHEDULE and a message saying why,
 * leaving the env unchanged; so is any action after the episode ended
 * (INVALID_ARGUMENT) or before the first reset. The evaluator's own failure
 * (see rlt_env_evaluate_fn) also leaves the env unchanged. Either out
 * pointer may be NULL. */
RLT_API rlt_status rlt_env_step(rlt_env *env, int action, double *out_reward, bool *out_done, rlt_diag *diag);

/* Two requests rlt_env_step_batch takes in place of an action (never
 * actions rlt_env_step takes): NONE leaves the env as it is; RESET starts
 * a new episode in it at the op's default nest, as rlt_env_reset does. */
#define RLT_ENV_ACTION_NONE (-1)
#define RLT_ENV_ACTION_RESET (-2)

/* Steps n envs in one call, for vector envs (Python's LoopNestVectorEnv):
 * rlt_env_step(envs[i], actions[i]) for each i in order, then row i of the
 * outputs gets env i's reward and done flag (as rlt_env_step gives them)
 * and its new observation (rlt_env_observe) and mask (rlt_env_action_mask,
 * 1 legal, 0 not): the results are those of n single calls, bit for bit.
 * In place of an action, RLT_ENV_ACTION_NONE leaves env i as it is (reward
 * 0, its done flag, observation and mask as they are), and
 * RLT_ENV_ACTION_RESET resets it (rlt_env_reset: reward 0, not done, the
 * first observation and mask).
 *
 * envs[0 .. n-1] (borrowed) must be distinct: the same env twice is
 * refused; they may be of different families. actions: n of them. Outputs,
 * each may be NULL when not wanted: rewards[n], dones[n], obs[n *
 * RLT_ENV_OBS_LEN] (row i at obs + i * RLT_ENV_OBS_LEN), masks[n *
 * RLT_ENV_N_ACTIONS]. The states that measured families (no evaluator, no
 * replay) reach are built in one batch first, as rlt_env_prefetch does;
 * evaluators are asked one state at a time, in the order single steps
 * would ask.
 *
 * A done env is never reset unless asked: stepping it is refused as
 * rlt_env_step refuses it. When to reset (auto-reset, Gymnasium's
 * conventions) is the caller's to decide; RLT_ENV_ACTION_RESET does it in
 * the same call.
 *
 * Errors, the first env's that has one, its position in the message
 * ("envs[3] of 8: split_2: ..."): what rlt_env_step would refuse (an env
 * not reset or done, INVALID_ARGUMENT; an action out of range,
 * INVALID_ARGUMENT; a masked action, ILLEGAL_SCHEDULE with why), the same
 * env twice (INVALID_ARGUMENT, naming both positions), what rlt_env_reset
 * would fail with, the evaluator's or the measurement's failure,
 * OUT_OF_MEMORY. Every env is checked, and every next state whose
 * evaluation could fail is evaluated, before any env changes, so a failed
 * call leaves all of them as they were (what was evaluated stays cached)
 * and writes no output; the message is also each env's
 * rlt_env_last_error. Threads: as rlt_env_step, for every family in the
 * batch. */
RLT_API rlt_status rlt_env_step_batch(rlt_env *const *envs, int n, const int *actions, double *rewards,
                                      bool *dones, float *obs, unsigned char *masks, rlt_diag *diag);

/* rlt_env_observe and rlt_env_action_mask for n envs (borrowed, not
 * changed; they may repeat): row i of obs (n * RLT_ENV_OBS_LEN floats) and
 * of masks (n * RLT_ENV_N_ACTIONS, 1 legal) is env i's; either may be
 * NULL. INVALID_ARGUMENT, naming the first, when an env was never reset;
 * nothing is written then. */
RLT_API rlt_status rlt_env_observe_batch(rlt_env *const *envs, int n, float *obs, unsigned char *masks,
                                         rlt_diag *diag);

/* out[i] = rlt_env_gflops(envs[i]) for n envs (borrowed, not changed). */
RLT_API void rlt_env_gflops_batch(rlt_env *const *envs, int n, double *out);

/* Evaluates together the states that rlt_env_step(envs[i], actions[i])
 * would reach and that no cache holds yet: every such kernel is built in
 * one batch (compilers in parallel), then each is run, one at a time, and
 * the results go into each env's family cache, so the steps that follow
 * are look-ups. The envs may be of different families (ops) and may repeat
 * (one env with each of its legal actions: a lookahead). States of a
 * family with its own evaluator are passed to it one by one. Changes no
 * env's state; pairs that could not step (not reset, done, an illegal
 * action) or that leave the nest as it is are skipped. Errors: the
 * evaluator's (as rlt_env_step's), OUT_OF_MEMORY; what was evaluated
 * before stays cached. */
RLT_API rlt_status rlt_env_prefetch(rlt_env *const *envs, const int *actions, int n, rlt_diag *diag);

/* rlt_env_reset_schedule for n envs at once: env i starts an episode at
 * the nest of schedules[i] (a NULL entry, or schedules NULL: the op's
 * default nest, as rlt_env_reset), and the start states no cache holds are
 * evaluated together, built in one batch and run one at a time as
 * rlt_env_prefetch does. The envs may be of different families and the
 * same env may appear twice (the later schedule wins). Every schedule is
 * checked before anything is measured: one that cannot be parsed, applied
 * or expressed fails the call with its error, prefixed by which schedule it
 * was, and resets no env. Other errors as rlt_env_reset's; what was
 * evaluated stays cached, and envs may then be left partly reset. */
RLT_API rlt_status rlt_env_reset_batch(rlt_env *const *envs, const char *const *schedules, int n, rlt_diag *diag);

/* ---- vector envs: Gymnasium's vector API in one call a step -------------- */

/* A vector env steps n envs the way a Gymnasium 1.x vector env does, in
 * one call a step: it keeps each episode's step count, truncates episodes
 * at a step limit, resets the envs whose episode ended (autoreset), treats
 * masked actions as no-ops (or refuses them), and writes every output
 * (observations, masks, rewards, terminated and truncated flags, which
 * actions were legal, GFLOP/s, step counts) into the caller's arrays. It
 * is what Python's LoopNestVectorEnv calls, so that what Python does per
 * step does not grow with n. The envs' states are stepped in place: a
 * step touches little more of each env's state than what it reads (a few
 * hundred bytes of its ~9 KiB), so large batches stay fast out of cache. */
typedef struct rlt_env_vec rlt_env_vec;

/* What a vector env does with an env whose episode ended (terminated or
 * truncated): Gymnasium's autoreset modes. */
typedef enum rlt_env_autoreset {
    RLT_ENV_AUTORESET_NEXT_STEP, /* the next step resets it, its action ignored: reward 0, not terminated or
                                    truncated, the first observation, step count 0 */
    RLT_ENV_AUTORESET_SAME_STEP, /* the step that ended it resets it: its rows are the new episode's first
                                    state's (reward, terminated and truncated are the step's); the ended
                                    state's go to the step's `final` rows */
    RLT_ENV_AUTORESET_DISABLED,  /* the caller resets it (rlt_env_vec_reset); stepping a terminated env is
                                    refused, a truncated one steps on */
    RLT_ENV_AUTORESET_COUNT
} rlt_env_autoreset;

/* What a vector env does with an action the env's mask leaves out. */
typedef enum rlt_env_masked_action {
    RLT_ENV_MASKED_NOOP,   /* the env stays as it is: reward 0, not legal; it counts as a step */
    RLT_ENV_MASKED_REFUSE, /* the step is refused with rlt_env_step's error (ILLEGAL_SCHEDULE) */
    RLT_ENV_MASKED_COUNT
} rlt_env_masked_action;

/* A vector env's options; all zero: no step limit, NEXT_STEP, NOOP. */
typedef struct rlt_env_vec_opts {
    int max_steps; /* > 0: an episode is truncated after this many steps (no-ops count); 0: only stop (or the
                      envs' own rlt_env_opts.max_steps, which terminates) ends it */
    rlt_env_autoreset autoreset;
    rlt_env_masked_action masked_action;
} rlt_env_vec_opts;

/* Where a vector env's reset and step write, row i env i's; each array
 * may be NULL when not wanted. */
typedef struct rlt_env_vec_out {
    float *obs;           /* n * RLT_ENV_OBS_LEN floats, row i at obs + i * RLT_ENV_OBS_LEN: rlt_env_observe */
    unsigned char *masks; /* n * RLT_ENV_N_ACTIONS, 1 legal: rlt_env_action_mask */
    double *rewards;      /* n: rlt_env_step's reward; 0 for a reset or a no-op */
    bool *terminated;     /* n: the episode ended (stop, or the env's own max_steps) */
    bool *truncated;      /* n: the episode reached opts.max_steps without terminating */
    bool *is_legal;       /* n: false where a masked action was a no-op */
    double *gflops;       /* n: rlt_env_gflops */
    int64_t *n_steps;     /* n: steps of the episode so far, no-ops included */
} rlt_env_vec_out;

/* Makes a vector env of envs[0 .. n-1] (borrowed: they must outlive it;
 * distinct; of any families). Step them only through it while it lives
 * (it keeps their step counts), and reset them with rlt_env_vec_reset
 * before the first step. `opts` may be NULL (all zero). Errors:
 * INVALID_ARGUMENT (n < 1, an env twice, naming both positions, an option
 * out of range), OUT_OF_MEMORY. Free with rlt_env_vec_destroy. */
RLT_API rlt_status rlt_env_vec_create(rlt_env *const *envs, int n, const rlt_env_vec_opts *opts, rlt_env_vec **out,
                                      rlt_diag *diag);

/* Frees the vector env (not its envs). NULL is a no-op. */
RLT_API void rlt_env_vec_destroy(rlt_env_vec *vec);

/* Starts an episode in every env i with which[i] (which NULL: every env),
 * as rlt_env_reset_batch does: at the nest of schedules[i] (schedules NULL,
 * or a NULL entry: the op's default nest; entries of the envs not reset are
 * not read); their step counts start again and no autoreset is pending.
 * Then writes every row of `out` (may be NULL): each env's state as it now
 * stands, reward 0, legal, terminated and truncated as its episode is.
 * Errors: an env that would be left never reset (INVALID_ARGUMENT, naming
 * it: the first reset must reset them all), and rlt_env_reset_batch's,
 * after which envs may be left partly reset; nothing is written then. */
RLT_API rlt_status rlt_env_vec_reset(rlt_env_vec *vec, const bool *which, const char *const *schedules,
                                     const rlt_env_vec_out *out, rlt_diag *diag);

/* One step of every env: actions[i] (0 .. RLT_ENV_N_ACTIONS-1) in env i,
 * as n rlt_env_step calls would take them, in order, with Gymnasium's
 * rules (opts): an env whose autoreset is pending resets (its action is
 * not read); a masked action is a no-op (or refused); an episode at
 * max_steps steps is truncated. Row i of `out` (may be NULL) gets env i's
 * results, bit for bit those of the single calls (rlt_env_step's reward,
 * rlt_env_observe, rlt_env_action_mask, rlt_env_gflops). With
 * RLT_ENV_AUTORESET_SAME_STEP, row i of `final` (may be NULL) gets the
 * state env i's episode ended in when it ended, and zeros when it did not
 * (final->obs of an env whose episode ended is that state's observation,
 * and so on).
 *
 * Errors, before any env changes (the first env's that has one, its
 * position in the message): an action out of range (INVALID_ARGUMENT,
 * "actions[3] = 17 is out of range: 0..16 (up, down, ...)"), an env never
 * reset, a masked action with RLT_ENV_MASKED_REFUSE or a terminated env
 * stepped with RLT_ENV_AUTORESET_DISABLED (rlt_env_step's refusal,
 * "envs[3] of 8: up: the cursor is on the outermost loop 'i'"); then the
 * evaluator's or a measurement's failure, or a reset's, which puts every
 * env back as it was (what was evaluated stays cached); OUT_OF_MEMORY.
 * (SAME_STEP's resets after the step are made sure of before: their start
 * states are evaluated first, so they are cache look-ups; only a cache
 * that could not grow for want of memory could make one fail, the step
 * then taken.) On failure the rows may have been partly written, and the
 * message is also each env's rlt_env_last_error. States measured families reach are built
 * in one batch first (rlt_env_prefetch). Threads: one call at a time per
 * vector env, and as rlt_env_step for every family in it. */
RLT_API rlt_status rlt_env_vec_step(rlt_env_vec *vec, const int64_t *actions, const rlt_env_vec_out *out,
                                    const rlt_env_vec_out *final, rlt_diag *diag);

/* Writes the observation (RLT_ENV_OBS_LEN floats, layout above and in
 * docs/env.md) to out[0 .. RLT_ENV_OBS_LEN-1]. INVALID_ARGUMENT when
 * n_floats is smaller or the env was never reset. */
RLT_API rlt_status rlt_env_observe(const rlt_env *env, float *out, size_t n_floats, rlt_diag *diag);

/* mask[a] is true when action a is legal now (rlt_env_step would accept
 * it). All false after the episode ended or before the first reset. */
RLT_API void rlt_env_action_mask(const rlt_env *env, bool mask[RLT_ENV_N_ACTIONS]);

/* Whether the episode has ended (stop, max_steps). */
RLT_API bool rlt_env_is_done(const rlt_env *env);
/* Whether the env has been reset (it has a state to step from). */
RLT_API bool rlt_env_is_reset(const rlt_env *env);

/* The current state's GFLOP/s (0 when its kernel failed or before reset),
 * the status of its evaluation (INVALID_ARGUMENT before the first reset)
 * and the failure's message ("" when OK; borrowed, valid until the env
 * changes; out_message may be NULL). */
RLT_API double rlt_env_gflops(const rlt_env *env);
RLT_API rlt_status rlt_env_eval_status(const rlt_env *env, const char **out_message);

/* One core's FP32 FMA peak in GFLOP/s the rewards are normalised by (times
 * n_threads); 0 before the first reset. */
RLT_API double rlt_env_peak_gflops(const rlt_env *env);

/* Cursor position (0 = outermost loop), steps taken in this episode, and
 * the current nest's structural hash (the cache key). */
RLT_API int rlt_env_cursor(const rlt_env *env);
RLT_API int rlt_env_n_steps(const rlt_env *env);
RLT_API uint64_t rlt_env_state_hash(const rlt_env *env);

/* The current state's nest (without the accumulator the kernel adds),
 * borrowed: valid until the env changes. */
RLT_API const rlt_nest *rlt_env_nest(const rlt_env *env);

/* Where the kernel of the current state accumulates the output
 * (docs/env.md, "Accumulation"): the loop holding the local tile ("j.o"),
 * "root" for a tile around the whole nest, or NULL when it accumulates in
 * place. Borrowed: valid until the env changes. */
RLT_API const char *rlt_env_accumulator(const rlt_env *env);

/* The loop tree as rlt_nest_print writes it, each line prefixed by two
 * characters: "> " on the cursor's loop, "  " elsewhere. Free with
 * rlt_free; NULL when out of memory. */
RLT_API char *rlt_env_tree(const rlt_env *env);

/* The schedule of the kernel the current state measures, text form v1
 * (rlt_sched_print): splits in the order they were made, one reorder, the
 * annotations, and the env's accumulator (a last cache_write line, when it
 * places one: docs/env.md, "Accumulation"). `rltune measure --schedule`
 * replays it to that kernel. Free with rlt_free; NULL when out of memory. */
RLT_API char *rlt_env_schedule(const rlt_env *env);

RLT_API void rlt_env_stats_get(const rlt_env *env, rlt_env_stats *out);

/* ---- state datasets: replayed, noise-free evaluation --------------------- */

/* A state dataset (docs/env.md, "State datasets"; a text file, format v1)
 * holds the evaluation (status, GFLOP/s) of the env states within `depth`
 * steps of a start state, or of max_states of them, each keyed by its
 * kernel's schedule, with the peak the rewards were normalised by. An env
 * created with rlt_env_opts.replay_path answers every evaluation from it:
 * nothing is built or run, the same actions give the same rewards, and a
 * step costs microseconds. Actions that would reach a state the dataset
 * lacks are masked, so an agent that follows the mask never leaves it. */
#define RLT_ENV_DATASET_VERSION 1
#define RLT_ENV_DATASET_DEFAULT_DEPTH 4
#define RLT_ENV_DATASET_MAX_DEPTH 64
#define RLT_ENV_DATASET_DEFAULT_MAX_STATES 1000
#define RLT_ENV_DATASET_MAX_STATES 100000 /* a state is about 10 KiB while the dataset is made */
#define RLT_ENV_DATASET_DEFAULT_BATCH 16
#define RLT_ENV_DATASET_MAX_BATCH 256

/* Progress of rlt_env_dataset_make: after each batch, n_done of n_states
 * evaluated. */
typedef void (*rlt_env_dataset_progress_fn)(void *ctx, int n_done, int n_states);

/* Options; zero means the default. Strings are borrowed for the call. */
typedef struct rlt_env_dataset_opts {
    int depth;                  /* steps from the start, 1..RLT_ENV_DATASET_MAX_DEPTH; 0 = 4 */
    int max_states;             /* states at most, 1..RLT_ENV_DATASET_MAX_STATES; 0 = 1000 */
    uint64_t seed;              /* which states of the level max_states cuts are kept */
    const char *start_schedule; /* text form v1, as rlt_env_reset_schedule takes; NULL: the op's default nest */
    int batch_size;             /* states built together, 1..RLT_ENV_DATASET_MAX_BATCH; 0 = 16 */
    rlt_env_opts env;           /* how states are measured (or an evaluator's); max_steps and replay_path
                                   must be 0 and NULL */
    const volatile sig_atomic_t *stop;    /* may be NULL; non-zero: stop after the batch in flight and write
                                             the states evaluated so far */
    rlt_env_dataset_progress_fn progress; /* may be NULL */
    void *progress_ctx;
} rlt_env_dataset_opts;

/* What rlt_env_dataset_make wrote. */
typedef struct rlt_env_dataset_result {
    int n_states;         /* states in the file */
    int n_found;          /* distinct states the walk found (more than n_states when max_states cut a level) */
    int depth_complete;   /* every state within this many steps of the start is in the file */
    int n_failed;         /* states whose kernel failed (build, run, wrong answer): 0 GFLOP/s */
    double peak_gflops;   /* one core's, as the file records it */
    double start_gflops;  /* the start state's */
    double best_gflops;   /* the best state's */
    bool was_stopped;     /* by opts.stop: the file holds the states evaluated before */
    double wall_s;
} rlt_env_dataset_result;

/* Makes a state dataset of the op `op_spec` in the file `path` (written
 * atomically at the end; replaced): walks the states reachable from the
 * start (opts.start_schedule's nest, or the op's default nest) breadth
 * first, every action from every cursor position, up to opts.depth steps;
 * when a level would take the states past max_states, a seeded random
 * subset of its new states fills the rest and the walk ends there. Then
 * evaluates every state found, in the walk's order, batch_size kernels
 * built together, through an env with opts.env (live measurement, or
 * opts.env.evaluate), and writes them with the peak. The same options on
 * the same machine give the same states; their GFLOP/s are measurements.
 * *out (may be NULL) says what was written. Errors: INVALID_ARGUMENT (an
 * option out of range, a start schedule the env refuses), the op spec's,
 * the env's (measurement that cannot work at all; a kernel that fails is a
 * state with its status, not an error), IO_ERROR (the file), OUT_OF_MEMORY;
 * nothing is written then. Threads: the calling thread (and the compiler
 * processes). */
RLT_API rlt_status rlt_env_dataset_make(const char *op_spec, const char *path, const rlt_env_dataset_opts *opts,
                                        rlt_env_dataset_result *out, rlt_diag *diag);

#ifdef __cplusplus
}
#endif
#endif /* RLTUNE_ENV_H */
