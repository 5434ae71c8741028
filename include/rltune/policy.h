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

/* Whether the policy was trained to act without measuring (behaviour
 * cloning: its rollout measures only the state it ends at). */
RLT_API bool rlt_policy_is_blind(const rlt_policy *p);

#define RLT_OPTIMIZE_MAX_TRACE 256
/* The rollout length `rltune optimize` and `rltune tune --policy` use by
 * default: the shipped policy's training episodes are this long. */
#define RLT_POLICY_DEFAULT_STEPS 16

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

#ifdef __cplusplus
}
#endif
#endif /* RLTUNE_POLICY_H */
