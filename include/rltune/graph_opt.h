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
    const char *search;  /* "greedy" (default), "taso" or "none" */
    double alpha;        /* taso: graphs costing under alpha x the best are explored (default 1.05) */
    int budget;          /* taso: graphs expanded; greedy: rewrites applied (default 200) */
    double time_limit_s; /* stop searching after this many seconds, 0 = none (default) */
    const char *db_path; /* records: a kernel's time is its best record's (NULL: seeds measured); the
                            seeds measured are stored in it */
    int n_threads;       /* the network's threads (default 1) */
    rlt_build_opts build;
    uint64_t seed;       /* measurement inputs (default 1) */
    bool is_verbose;     /* a line per rewrite tried, on stderr */
} rlt_graph_opt_options;

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

#ifdef __cplusplus
}
#endif
#endif /* RLTUNE_GRAPH_OPT_H */
