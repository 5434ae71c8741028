/*
 * rltune/policy.h - LoopTune policies (docs/policy.md): a network trained
 * on the environment (rltune/env.h) that optimises an op it has never seen
 * by rolling out its best actions, in about a second. models/looptune.rlp
 * is the shipped one.
 *
 *     rlt_policy *p = NULL;
 *     rlt_policy_load("models/looptune.rlp", &p, &d);
 *     rlt_env *env = NULL;
 *     rlt_env_create("matmul:M=200,N=152,K=176", NULL, &env, &d);
 *     rlt_env_reset(env, &d);
 *     rlt_optimize_result r = {0};
 *     rlt_policy_rollout(p, env, &(rlt_rollout_opts){.max_steps = 16}, &r, &d);
 *     printf("%.1f GFLOP/s\n%s", r.gflops, r.schedule);
 *     rlt_optimize_result_free(&r);
 */
#ifndef RLTUNE_POLICY_H
#define RLTUNE_POLICY_H

#include "rltune/env.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlt_policy rlt_policy;

/* Loads a policy file ('rltune train' or 'rltune imitate' wrote it).
 * Errors: IO_ERROR, PARSE_ERROR for a file that is not a policy or is
 * damaged (the message names it), OUT_OF_MEMORY. Free with
 * rlt_policy_destroy. */
RLT_API rlt_status rlt_policy_load(const char *path, rlt_policy **out, rlt_diag *diag);
RLT_API void rlt_policy_destroy(rlt_policy *p); /* NULL ok */

/* Writes the policy file atomically (without the optimiser states a
 * training run keeps). Errors: IO_ERROR naming the file, OUT_OF_MEMORY. */
RLT_API rlt_status rlt_policy_save(const rlt_policy *p, const char *path, rlt_diag *diag);

/* Replaces the policy's description, saved with it (how it was trained;
 * NULL clears it). OUT_OF_MEMORY. */
RLT_API rlt_status rlt_policy_set_about(rlt_policy *p, const char *text, rlt_diag *diag);

/* The policy networks' hidden layers: at most this many; by default two of
 * these sizes. */
#define RLT_POLICY_MAX_HIDDEN 4
#define RLT_POLICY_DEFAULT_HIDDEN_1 256
#define RLT_POLICY_DEFAULT_HIDDEN_2 128

/* Whether the policy acts without measuring (behaviour cloning, and PPO
 * fine-tuned from it by `rltune train --init`): its rollout measures only
 * the state it ends at. */
RLT_API bool rlt_policy_is_blind(const rlt_policy *p);

#define RLT_OPTIMIZE_MAX_TRACE 256
/* The rollout length `rltune optimize` and `rltune tune --policy` use by
 * default: the shipped policy's training episodes are this long. */
#define RLT_POLICY_DEFAULT_STEPS 24

/* What an optimisation found: the best state it evaluated. */
typedef struct rlt_optimize_result {
    double gflops;        /* the best state's measured GFLOP/s */
    double time_ms;       /* one call of the op at that speed */
    double start_gflops;  /* the start state's */
    int n_trace;
    int trace[RLT_OPTIMIZE_MAX_TRACE]; /* actions from the start to the best state */
    char *schedule;       /* the best state's schedule (text form); owned */
    char *tree;           /* its loop tree; owned */
    double wall_s;        /* the whole optimisation, measurement included */
    int64_t n_evaluations; /* states measured (cache misses) */
    int64_t n_steps;      /* env steps taken, lookaheads and rollbacks included */
} rlt_optimize_result;

/* Frees the strings (the struct stays); NULL ok. */
RLT_API void rlt_optimize_result_free(rlt_optimize_result *r);

typedef struct rlt_rollout_opts {
    int max_steps;   /* actions per rollout; 0 = 10 (LoopTune's) */
    int beam_width;  /* 0 or 1: greedy; W > 1: a beam search of width W guided by the policy */
} rlt_rollout_opts;

/* Optimises the op of `env` (reset by the caller: the rollout starts at its
 * state) with the policy: greedily, or by a beam search the policy guides.
 * The result is the best state on the way, and env is left at it. Errors:
 * the env's (a failed evaluator), OUT_OF_MEMORY; INVALID_ARGUMENT when the
 * env was not reset. */
RLT_API rlt_status rlt_policy_rollout(const rlt_policy *p, rlt_env *env, const rlt_rollout_opts *opts,
                                      rlt_optimize_result *out, rlt_diag *diag);

/* The algorithm that trained the policy: "dqn", "ppo", "bc" (behaviour
 * cloning, 'rltune imitate'). */
RLT_API const char *rlt_policy_algo_name(const rlt_policy *p);

/* ---- the search baselines: the same actions, no policy ----------------- */

typedef enum rlt_env_search_kind {
    RLT_ENV_SEARCH_GREEDY = 0, /* lookahead: the best first move of the best path of `lookahead` moves */
    RLT_ENV_SEARCH_BEAM = 1,   /* breadth-first beam of beam_width states, ranked by measured GFLOP/s */
    RLT_ENV_SEARCH_RANDOM = 2, /* random legal walks from the start, until time_budget_s */
} rlt_env_search_kind;

/* "greedy", "beam", "random"; "unknown" otherwise. */
RLT_API const char *rlt_env_search_kind_str(rlt_env_search_kind kind);
/* false when the name is none of them. */
RLT_API bool rlt_env_search_kind_from_str(const char *name, rlt_env_search_kind *out);

#define RLT_ENV_SEARCH_MAX_BEAM 64 /* the largest beam_width */

/* Options; zero means the default. Every field is checked whatever the kind. */
typedef struct rlt_env_search_opts {
    rlt_env_search_kind kind;
    int max_steps;        /* actions from the start, 0..RLT_OPTIMIZE_MAX_TRACE; 0 = 10. greedy and beam: the
                             depth; random: a walk's length */
    int lookahead;        /* greedy: moves looked ahead, 1 or 2; 0 = 1 */
    int beam_width;       /* beam: 1..RLT_ENV_SEARCH_MAX_BEAM; 0 = 2 */
    double time_budget_s; /* random: > 0, required; greedy and beam: 0 = none, else they stop when it is spent */
    int max_walks;        /* random: >= 0; > 0 stops after this many walks even within the budget */
    uint64_t seed;        /* random: the walks */
} rlt_env_search_opts;

/* Searches from env's current state (reset by the caller, episode not
 * over). Every new state is measured by the env, batched with
 * rlt_env_prefetch; the steps that follow are cache look-ups. The searches
 * step clones of env (destroyed before returning), so the states they
 * evaluate stay in env's family cache.
 *
 * `out` is overwritten (zeroed first: free an earlier result before
 * passing it again): the best state evaluated (rlt_optimize_result_take,
 * with the actions from the start to it), start_gflops, wall_s,
 * n_evaluations (states the family evaluated during the search) and
 * n_steps (every rlt_env_step, lookaheads and cursor moves included); free
 * with rlt_optimize_result_free. On success env is left at the best state
 * (rlt_env_restore: its step count and history are those of that state's
 * path).
 *
 * Errors: INVALID_ARGUMENT naming the option out of range, or when env was
 * not reset or its episode is over; the env's (a failed evaluator: what it
 * had evaluated stays cached), OUT_OF_MEMORY. On error env is left at its
 * start state and out holds nothing to free. Threads: as the env's family. */
RLT_API rlt_status rlt_env_search(rlt_env *env, const rlt_env_search_opts *opts, rlt_optimize_result *out,
                                  rlt_diag *diag);


#ifdef __cplusplus
}
#endif
#endif /* RLTUNE_POLICY_H */
