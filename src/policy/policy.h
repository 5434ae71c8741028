/*
 * policy.h - LoopTune policies: a network that picks the env's next action
 * (src/env, docs/env.md), its file, and its use: a greedy rollout or a
 * policy-guided beam search that optimises an op's loop nest in seconds.
 * docs/policy.md describes the module; training is in train.h, the search
 * baselines the policy is measured against in search.h, the shape datasets
 * it trains on in shapes.h.
 *
 *   policy.c    the policy: networks, scores of the actions, the file
 *   rollout.c   rlt_policy_rollout: greedy and beam
 *
 * A policy is a network from the observation (RLT_ENV_OBS_LEN floats) to
 * one output per action (RLT_ENV_N_ACTIONS): Q-values for dqn, logits for
 * ppo, which also has a critic (the state's value), and logits for bc.
 * Either way the legal action with the largest output is the greedy choice.
 *
 * A bc policy is blind: it was trained on demonstrations replayed without
 * measuring, so it never reads the observation's GFLOP/s (rlt_policy_scores
 * zeroes that input for it). Its greedy rollout therefore needs no
 * measurement on the way: it walks the nest unmeasured and measures only
 * where the walk ends (rollout.c), which is what makes it take seconds. A
 * ppo policy fine-tuned from a blind one (`rltune train --init`) stays
 * blind: its actor is trained on blind observations, while its critic,
 * used only in training, sees them whole.
 *
 * A policy file is an agent file (src/nn/agent_file.h, docs/formats.md)
 * whose tuner is "policy", with sections "algo" ("dqn" or "ppo"),
 * "obs_version" (RLT_ENV_OBS_VERSION it was trained on), "net", "critic"
 * (ppo), "about" (how it was trained: free text) and "blind" (1 or 0, only
 * where it differs from the algorithm's default: blind for bc alone). A
 * training checkpoint is a policy file with more sections (the trainer's),
 * so it is a usable policy too.
 */
#ifndef RLT_POLICY_H
#define RLT_POLICY_H

#include "ir/ir.h"
#include "nn/agent_file.h"
#include "nn/nn.h"
#include "rltune/policy.h"

typedef enum rlt_policy_algo {
    RLT_POLICY_ALGO_DQN = 0,
    RLT_POLICY_ALGO_PPO = 1,
    RLT_POLICY_ALGO_BC = 2,  /* imitation of search demonstrations (imitate.h): logits, blind */
} rlt_policy_algo;

/* "dqn", "ppo", "bc"; "unknown" otherwise. */
const char *rlt_policy_algo_str(rlt_policy_algo algo);
/* false when the name is none of them. */
bool rlt_policy_algo_from_str(const char *name, rlt_policy_algo *out);

/* RLT_POLICY_MAX_HIDDEN and the default layer sizes: rltune/policy.h. */

typedef struct rlt_policy {
    rlt_policy_algo algo;
    rlt_mlp *net;         /* obs -> RLT_ENV_N_ACTIONS: Q-values (dqn) or logits (ppo); owned */
    rlt_mlp *critic;      /* ppo: obs -> 1, the state's value; NULL for dqn; owned */
    rlt_adam *net_adam;   /* optimiser states while training; NULL otherwise; owned */
    rlt_adam *critic_adam;
    bool is_blind;        /* the net never reads the observation's GFLOP/s (rlt_policy_blind_obs): bc
                             policies, and ppo fine-tuned from one (rltune train --init) */
    char *about;          /* how it was trained (text, saved with it); owned, may be NULL */
} rlt_policy;

/* A new policy: hidden layers of hidden[0 .. n_hidden-1] ReLU units
 * (n_hidden 0: the defaults, 256 and 128), weights from `seed`; no
 * optimiser. Errors: INVALID_ARGUMENT (n_hidden above
 * RLT_POLICY_MAX_HIDDEN, a size out of 1..4096), OUT_OF_MEMORY. */
rlt_status rlt_policy_create(rlt_policy_algo algo, int n_hidden, const int *hidden, uint64_t seed,
                             rlt_policy **out, rlt_diag *diag);

/* rlt_policy_set_about: rltune/policy.h. */

/* Zeroes the GFLOP/s input of n_rows observations: what a blind policy's
 * network sees. */
void rlt_policy_blind_obs(int n_rows, float *obs);

/* The network's outputs for n_rows observations obs [n_rows x
 * RLT_ENV_OBS_LEN] into out [n_rows x RLT_ENV_N_ACTIONS], with the actions
 * the observation's mask block forbids set to -INFINITY. Does not modify p
 * (rlt_mlp_predict). Errors: OUT_OF_MEMORY. */
rlt_status rlt_policy_scores(const rlt_policy *p, int n_rows, const float *obs, float *out, rlt_diag *diag);

/* The legal action with the largest score (ties: the lowest number), from
 * one row of rlt_policy_scores; RLT_ENV_ACTION_STOP when none is legal. */
int rlt_policy_best_action(const float scores[RLT_ENV_N_ACTIONS]);

/* What the policy expects is still to gain from a state, in the env's
 * reward units (GFLOP/s over the peak): the largest legal Q-value (dqn),
 * the critic's value (ppo), 0 for bc (it has no such estimate: a beam it
 * guides ranks by measured GFLOP/s alone). n_rows observations into out
 * [n_rows]. */
rlt_status rlt_policy_values(const rlt_policy *p, int n_rows, const float *obs, float *out, rlt_diag *diag);

/* Adds the policy's sections to an agent file (with its optimiser states
 * when with_optimiser and it has them). Errors: OUT_OF_MEMORY,
 * INVALID_ARGUMENT (a section already there). */
rlt_status rlt_policy_put(const rlt_policy *p, bool with_optimiser, rlt_agent_file *f, rlt_diag *diag);
/* A new policy from an agent file's sections (optimisers when
 * with_optimiser and saved). Errors: INVALID_ARGUMENT naming the file and
 * what is wrong: not a policy, another observation version, an unknown
 * algo, networks of the wrong shape; PARSE_ERROR, OUT_OF_MEMORY. */
rlt_status rlt_policy_get(const rlt_agent_file *f, bool with_optimiser, rlt_policy **out, rlt_diag *diag);

/* rlt_policy_save (a policy file: rlt_policy_put into a new agent file,
 * written atomically; rlt_policy_load reads it back): rltune/policy.h. */

/* A blind env for `op_spec`: an env (rltune.h) whose evaluator scores
 * every state 0 at once, building nothing, with a peak of 1: for walking a
 * nest without measuring it (blind rollouts, replaying demonstrations).
 * Free with rlt_env_destroy. Errors as rlt_env_create's. */
rlt_status rlt_policy_blind_env(const char *op_spec, rlt_env **out, rlt_diag *diag);

/* ---- optimising an op: rollout.c, and search.c's baselines -------------- */

/* rlt_optimize_result, rlt_optimize_result_free, rlt_rollout_opts and
 * rlt_policy_rollout (rollout.c) are declared in rltune/policy.h, as are
 * rlt_policy_load, rlt_policy_destroy and rlt_policy_is_blind. */

/* Fills the best-state fields of r from env (gflops, time_ms, schedule,
 * tree) with trace[0 .. n_trace-1]. OUT_OF_MEMORY. */
rlt_status rlt_optimize_result_take(rlt_optimize_result *r, const rlt_env *env, const int *trace, int n_trace,
                                    rlt_diag *diag);

#endif /* RLT_POLICY_H */
