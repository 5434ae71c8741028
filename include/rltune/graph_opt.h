/*
 * rltune/graph_opt.h - graph substitutions over a loaded model: rewrite
 * rules (the set shipped with rltune, or a user's file; docs/graph-opt.md
 * gives the format), each verified on random inputs before use, and the
 * searches that apply them to a model to lower its cost (the sum of its
 * kernels' measured times), as `rltune rules` and `rltune graph-opt` do.
 *
 *     rlt_rules *rules = NULL;
 *     rlt_rules_load(NULL, &rules, &d);              // the shipped set
 *     rlt_rules_verify(rules, 1, &d);                // refuses a wrong rule
 *     rlt_graph_opt_options o;
 *     rlt_graph_opt_options_init(&o);
 *     o.search = "taso";
 *     rlt_model *better = NULL;
 *     rlt_graph_opt_result res;
 *     rlt_model_graph_opt(model, rules, &o, &better, &res, &d);
 *     rlt_model_save_onnx(better, "better.onnx", &d);
 *     rlt_graph_opt_result_free(&res);
 */
#ifndef RLTUNE_GRAPH_OPT_H
#define RLTUNE_GRAPH_OPT_H

#include "rltune/base.h"
#include "rltune/measure.h"
#include "rltune/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- rules ----------------------------------------------------------------- */

typedef struct rlt_rules rlt_rules;

/* Reads rules from the file at `path`, or the set shipped with rltune when
 * path is NULL (free with rlt_rules_destroy); a second file may be added
 * to a set with rlt_rules_add. Rules are parsed, not verified yet. Errors:
 * IO_ERROR (the file cannot be read), PARSE_ERROR (file:line and what was
 * expected), OUT_OF_MEMORY. */
RLT_API rlt_status rlt_rules_load(const char *path, rlt_rules **out, rlt_diag *diag);
/* Adds the rules of the file at `path` to r (names must stay unique). */
RLT_API rlt_status rlt_rules_add(rlt_rules *r, const char *path, rlt_diag *diag);
RLT_API void rlt_rules_destroy(rlt_rules *r); /* NULL ok */

/* Verifies every rule (docs/graph-opt.md, "Verification"): on each of its
 * check lines, at opsets 11 and 13, the source and target patterns are
 * evaluated on the same random integer-valued inputs and must agree,
 * exactly when all their ops are exact on integers, else within 1e-5.
 * INVALID_ARGUMENT naming the first rule that fails, its check line and a
 * counterexample. */
RLT_API rlt_status rlt_rules_verify(rlt_rules *r, uint64_t seed, rlt_diag *diag);

RLT_API int rlt_rules_count(const rlt_rules *r);

typedef struct rlt_rule_info {
    char name[64];
    char doc[512];      /* the comment above the rule */
    char file[256];
    int line;
    int n_src, n_dst;   /* nodes of the pattern and of its replacement */
    int n_checks;       /* check lines */
    bool is_verified;   /* by rlt_rules_verify */
    bool is_exact;      /* compared bit for bit when verified */
    double max_error;   /* the largest relative difference seen when verified */
} rlt_rule_info;

/* Rule i (0 <= i < rlt_rules_count). */
RLT_API void rlt_rule_info_get(const rlt_rules *r, int i, rlt_rule_info *out);

/* ---- searches ---------------------------------------------------------------- */

typedef struct rlt_graph_opt_options {
    const char *search;  /* "greedy" (default), "taso", "rl" (needs policy) or "none" */
    double alpha;        /* taso: graphs costing under alpha x the best are explored; rl: the rollout
                            stops at a graph costing over alpha x the best so far (default 1.05) */
    int budget;          /* taso: graphs expanded; greedy: rewrites applied (default 200) */
    double time_limit_s; /* stop searching after this many seconds, 0 = none (default) */
    const char *db_path; /* records: a kernel's time is its best record's (NULL: seeds measured); the
                            seeds measured are stored in it */
    int n_threads;       /* the network's threads (default 1) */
    rlt_build_opts build;
    uint64_t seed;       /* measurement inputs (default 1) */
    bool is_verbose;     /* a line per rewrite tried, on stderr */
    struct rlt_graph_policy *policy; /* search "rl": the policy rolled out (borrowed) */
    int horizon;         /* search "rl": steps at most (default 20, 0 = that) */
    bool cold_weights;   /* kernels costed as tune --model times them (rlt_run_opts.cold_weights): the
                            cold records, seeds measured cold (default); false: warm */
    int n_seeds;         /* a kernel without a record costs the best of its first n_seeds rule-built
                            seeds, each measured once and stored as a record (1 .. 8). 0 = the
                            default: RLT_GRAPH_COST_SEEDS with a database (a network compiled with
                            it runs the best of them), 1 without (one compiled without records
                            runs the first seed) */
} rlt_graph_opt_options;

/* The seeds a graph search measures per kernel by default, with a records
 * database (docs/graph-opt.md, "Cost"). */
#define RLT_GRAPH_COST_SEEDS 3

RLT_API void rlt_graph_opt_options_init(rlt_graph_opt_options *o);

typedef struct rlt_graph_opt_step {
    char rule[64];
    char where[128];     /* the node the rewrite's pattern started at */
    double cost_ms;      /* the graph's cost after it */
} rlt_graph_opt_step;

typedef struct rlt_graph_opt_result {
    double cost_before_ms, cost_after_ms; /* the sum of the steps' measured times */
    int n_nodes_before, n_nodes_after;
    int n_steps;
    rlt_graph_opt_step *steps; /* the rewrites of the best graph, in order (owned) */
    int n_cost_evals;    /* graphs costed */
    int n_expanded;      /* graphs whose rewrites were all tried */
    int n_candidates;    /* rewrites applied, duplicates included */
    int n_tasks_measured, n_tasks_from_records, n_ops_measured; /* what costing measured */
    double search_s, measure_s;
} rlt_graph_opt_result;

/* Searches rewrites of m's graph with the (verified) rules and returns the
 * best graph as a new model (*out, free with rlt_model_destroy; m is not
 * changed and may be destroyed first). Errors: INVALID_ARGUMENT (options;
 * rules not verified), BUILD_ERROR (a kernel measured for the cost failed),
 * IO_ERROR (the database), OUT_OF_MEMORY. *out and *res are filled on
 * success only. */
RLT_API rlt_status rlt_model_graph_opt(rlt_model *m, const rlt_rules *rules, const rlt_graph_opt_options *o,
                                       rlt_model **out, rlt_graph_opt_result *res, rlt_diag *diag);
RLT_API void rlt_graph_opt_result_free(rlt_graph_opt_result *r); /* NULL ok */

/* Writes m's graph as an ONNX model file (opset and names kept; written
 * whole or not at all). Errors: IO_ERROR naming the path, INVALID_ARGUMENT,
 * OUT_OF_MEMORY. */
RLT_API rlt_status rlt_model_save_onnx(const rlt_model *m, const char *path, rlt_diag *diag);

/* ---- the environment (RLFlow's, over these rules) ------------------------------ */

/* An episode rewrites one graph: each step applies one (rule, location)
 * candidate, or stops. The observation is the graph (node features and
 * edges) and the candidates (each a rule and the nodes its pattern
 * matched); the reward of a step is X-RLflow's 100 x (c_prev - c_new) / c_0
 * with c the graph's cost (measured kernels, as rlt_model_graph_opt), or
 * the drop of the best cost so far (rlt_graph_reward). An
 * episode ends on the stop action, when no candidate is left, or after
 * `horizon` steps. docs/graph-opt.md, "The environment". */
typedef struct rlt_graph_env rlt_graph_env;

#define RLT_GRAPH_ENV_MAX_ANCHORS 12 /* nodes a candidate names */

/* What a step is rewarded for. */
typedef enum rlt_graph_reward {
    RLT_GRAPH_REWARD_STEP = 0, /* X-RLflow's: 100 x (c_prev - c_new) / c_0 (default) */
    RLT_GRAPH_REWARD_BEST,     /* the drop of the episode's best cost: 100 x (best_prev - best_new) / c_0,
                                  never negative: what a rollout that keeps its best graph gains */
} rlt_graph_reward;

typedef struct rlt_graph_env_options {
    int horizon;         /* steps of an episode (default 50) */
    rlt_graph_reward reward;
    double step_penalty; /* subtracted from every rewrite's reward (default 0): the price of a cost
                            evaluation, which teaches stopping under RLT_GRAPH_REWARD_BEST */
    int max_candidates;  /* candidates offered at once, the first ones found (default 256); the stop
                            action is index max_candidates */
    const char *db_path; /* as rlt_graph_opt_options */
    int n_threads;
    rlt_build_opts build;
    uint64_t seed;
    bool cold_weights;   /* kernels costed cold, as rlt_graph_opt_options.cold_weights (default true):
                            the costs the greedy and TASO searches see */
    int n_seeds;         /* as rlt_graph_opt_options (0: its default) */
} rlt_graph_env_options;

RLT_API void rlt_graph_env_options_init(rlt_graph_env_options *o);

/* An environment over verified rules (borrowed: they must outlive it).
 * Errors: INVALID_ARGUMENT (options; rules not verified), IO_ERROR (the
 * database), OUT_OF_MEMORY. */
RLT_API rlt_status rlt_graph_env_create(const rlt_rules *rules, const rlt_graph_env_options *o, rlt_graph_env **out,
                                        rlt_diag *diag);
RLT_API void rlt_graph_env_destroy(rlt_graph_env *e); /* NULL ok */

/* Starts an episode on m's graph (copied; m may go after). Errors: the
 * cost's (BUILD_ERROR, INVALID_ARGUMENT naming a node rltune cannot run),
 * OUT_OF_MEMORY. */
RLT_API rlt_status rlt_graph_env_reset(rlt_graph_env *e, const rlt_model *m, rlt_diag *diag);

/* Takes action a: 0 <= a < the candidates offered applies that candidate,
 * a == max_candidates stops. A candidate whose rewrite is refused when
 * applied (a cycle, a shape that would change, or a graph the episode has
 * already been in: a move and its inverse) costs the step but no cost
 * evaluation and is masked from then on; the graph stays. *reward and *done are set.
 * Errors: INVALID_ARGUMENT (a masked action, a step after the end),
 * the cost's, OUT_OF_MEMORY. */
RLT_API rlt_status rlt_graph_env_step(rlt_graph_env *e, int a, double *reward, bool *done, rlt_diag *diag);

/* What the agent sees, borrowed from e until its next reset or step. */
typedef struct rlt_graph_env_obs {
    int n_nodes;
    int n_features;            /* per node: rlt_graph_env_feature_names */
    const float *features;     /* [n_nodes x n_features] */
    int n_edges;
    const int *edges;          /* [n_edges x 2]: producer node, reader node */
    int n_candidates;          /* offered: actions 0 .. n_candidates - 1 */
    const int *cand_rule;      /* [n_candidates]: index in the rules */
    const int *cand_nodes;     /* [n_candidates x RLT_GRAPH_ENV_MAX_ANCHORS]: the nodes the pattern matched,
                                  -1 after the last */
    const unsigned char *mask; /* [max_candidates + 1]: 1 where the action may be taken (stop always) */
    int n_actions;             /* max_candidates + 1 */
    double cost_ms, cost0_ms, best_cost_ms;
    int step, horizon;
    bool done;
    bool is_refused;           /* the last step's rewrite was refused: the graph did not change */
} rlt_graph_env_obs;

RLT_API void rlt_graph_env_observe(const rlt_graph_env *e, rlt_graph_env_obs *out);

/* The names of the node features, one per column (static strings). */
RLT_API int rlt_graph_env_n_features(void);
RLT_API const char *rlt_graph_env_feature_name(int i);

/* The episode's best graph so far, as a new model (free with
 * rlt_model_destroy). OUT_OF_MEMORY. */
RLT_API rlt_status rlt_graph_env_best_model(const rlt_graph_env *e, rlt_model **out, rlt_diag *diag);
/* Graphs costed since the environment was made. */
RLT_API int rlt_graph_env_n_cost_evals(const rlt_graph_env *e);

/* ---- the policy (RLFlow's agent) ---------------------------------------------- */

/* A policy scores each candidate of an observation from graph features
 * built by message passing (3 rounds over the graph's edges, rltune's nn
 * graph layer), the candidate's rule and the nodes it matched, and scores
 * stopping from the whole graph; trained by PPO over a set of graphs.
 * docs/graph-opt.md, "Reinforcement learning". models/graph_rewrite.rlp
 * ships with rltune. */
typedef struct rlt_graph_policy rlt_graph_policy;

/* Reads a policy file (an agent file of tuner "graph-policy"). Errors:
 * IO_ERROR, PARSE_ERROR (not a graph policy: names what is wrong),
 * OUT_OF_MEMORY. */
RLT_API rlt_status rlt_graph_policy_load(const char *path, rlt_graph_policy **out, rlt_diag *diag);
/* The policy shipped with rltune (models/graph_rewrite.rlp, built into the
 * library). Errors: OUT_OF_MEMORY. */
RLT_API rlt_status rlt_graph_policy_default(rlt_graph_policy **out, rlt_diag *diag);
/* Writes it (with its optimiser state, so training can go on). */
RLT_API rlt_status rlt_graph_policy_save(const rlt_graph_policy *p, const char *path, rlt_diag *diag);
RLT_API void rlt_graph_policy_destroy(rlt_graph_policy *p); /* NULL ok */

/* The action p takes in observation obs of an environment over `rules`:
 * the most probable one when is_greedy, else one drawn with *rng_state
 * (advanced). Rules the policy was not trained with score as a rule it
 * has never seen. Errors: INVALID_ARGUMENT (an observation of an ended
 * episode), OUT_OF_MEMORY. */
RLT_API rlt_status rlt_graph_policy_act(rlt_graph_policy *p, const rlt_rules *rules, const rlt_graph_env_obs *obs,
                                        bool is_greedy, uint64_t *rng_state, int *action, rlt_diag *diag);

typedef struct rlt_graph_train_progress {
    int iteration, n_iterations;
    int n_episodes, n_steps;  /* of this iteration */
    double mean_return;       /* sum of rewards of an episode, averaged */
    double mean_best_ratio;   /* best cost / first cost of an episode, averaged */
    double entropy;           /* of the policy at the rollouts' states, averaged */
    double elapsed_s;
    int n_cost_evals;         /* since training began */
} rlt_graph_train_progress;

typedef struct rlt_graph_train_options {
    int n_iterations;     /* rollouts then updates (default 60) */
    int episodes_per_model; /* episodes of each model per iteration (default 2) */
    int horizon;          /* steps of an episode (default 20) */
    int ppo_epochs;       /* passes over an iteration's steps (default 4) */
    int minibatch;        /* steps per update (default 32) */
    double lr;            /* Adam (default 3e-4) */
    double gamma, lambda; /* GAE (default 0.99, 0.95) */
    double clip;          /* PPO's ratio clip (default 0.2) */
    double ent_coef, vf_coef; /* default 0.01, 0.5 */
    rlt_graph_reward reward;  /* the environment's (default RLT_GRAPH_REWARD_STEP) */
    double step_penalty;      /* the environment's (default 0) */
    int hidden;           /* units of the graph layers and heads (default 64) */
    int gnn_layers;       /* message-passing rounds (default 3) */
    uint64_t seed;        /* weights, sampling, order (default 1) */
    const char *db_path;  /* as the environment's */
    int n_threads;
    rlt_build_opts build;
    const rlt_graph_policy *init; /* go on training this one (copied), or NULL: a new policy */
    void (*progress)(void *ctx, const rlt_graph_train_progress *p); /* after each iteration, or NULL */
    void *progress_ctx;
    bool cold_weights;    /* the environment's (default true) */
    int n_seeds;          /* the environment's (0: its default) */
} rlt_graph_train_options;

RLT_API void rlt_graph_train_options_init(rlt_graph_train_options *o);

/* Trains a policy by PPO on episodes of the given models (borrowed) with
 * the verified rules. *out is set on success (free with
 * rlt_graph_policy_destroy). Errors: INVALID_ARGUMENT (options, no models,
 * rules not verified, an init policy of another shape), the environment's,
 * OUT_OF_MEMORY. */
RLT_API rlt_status rlt_graph_policy_train(const rlt_rules *rules, rlt_model *const *models, int n_models,
                                          const rlt_graph_train_options *o, rlt_graph_policy **out,
                                          rlt_diag *diag);

#ifdef __cplusplus
}
#endif
#endif /* RLTUNE_GRAPH_OPT_H */
