/*
 * gopt.h - graph substitutions: rewrite rules read from text, verified on
 * random inputs, matched in a graph by backtracking and applied to a copy
 * of it; a structural graph hash; the searches over rewrite sequences
 * (greedy, TASO's cost-based backtracking) with a cost given by the caller
 * (cost.h: measured kernels). docs/graph-opt.md describes the rule format,
 * the checks and the searches.
 *
 *     rlt_ruleset *rs;  rlt_ruleset_parse(text, "rules/default.rules", &rs, &diag);
 *     rlt_ruleset_verify(rs, seed, &report, &diag);     // refuses a rule that is wrong
 *     rlt_gopt_match *m;  int n;  rlt_gopt_find(rs, g, &m, &n, &diag);
 *     rlt_graph *g2;  rlt_gopt_apply(rs, g, &m[0], &g2, &diag);
 *
 * Files: rules.c (the parser and expressions), match.c (matching,
 * applying, hashing), verify.c (the rules' checks), search.c (the
 * searches).
 *
 * Ownership: a ruleset owns its rules (one arena); a match refers to the
 * graph it was found in by index and is plain data; applying makes a new
 * graph (rlt_graph_clone of the old, so it shares the old one's weights).
 * Threads: a ruleset is read-only after parsing and may be shared.
 */
#ifndef RLT_GOPT_H
#define RLT_GOPT_H

#include "graph/graph.h"

#define RLT_RULE_MAX_VARS 48   /* tensor and attribute variables of one rule */
#define RLT_RULE_MAX_NODES 12  /* nodes of one side of a rule */
#define RLT_RULE_MAX_CHECKS 8  /* check lines of one rule */
#define RLT_RULE_MAX_VALUE 1000000 /* the integers a check's random values are drawn from lie within +-this */

/* ---- rules (rules.c) ---------------------------------------------------- */

typedef struct rlt_rexpr rlt_rexpr; /* an expression of the rule language (rules.c) */

#define RLT_RVALUE_MAX 32 /* elements of a list value */

/* A value of the rule language: what an expression evaluates to, and an
 * attribute's value. Kinds as the graph's attributes (INT, FLOAT, STRING,
 * INTS, FLOATS); is_none for an absent attribute. */
typedef struct rlt_rvalue {
    bool is_none;
    rlt_graph_attr_kind kind;
    int64_t i;
    double f;
    const char *s;       /* borrowed */
    int n;
    int64_t ints[RLT_RVALUE_MAX];
    double floats[RLT_RVALUE_MAX];
} rlt_rvalue;

typedef enum rlt_rvar_kind {
    RLT_RVAR_INPUT = 0, /* a tensor the source pattern reads but does not write */
    RLT_RVAR_SRC,       /* a tensor a source node writes */
    RLT_RVAR_DST,       /* a tensor a target node writes */
    RLT_RVAR_ATTR,      /* an attribute value (upper-case name) */
} rlt_rvar_kind;

typedef struct rlt_rvar {
    const char *name;   /* arena-owned */
    rlt_rvar_kind kind;
    bool is_const;      /* INPUT: a top-level `const(v)` condition: a constant in checks */
} rlt_rvar;

/* One input of a pattern node: a tensor variable, or (target side only) a
 * literal constant `f32(EXPR)` / `i64(EXPR)` (a scalar or a 1-D list). */
typedef struct rlt_roperand {
    int var;            /* tensor variable, or -1 for a literal */
    rlt_dtype dtype;    /* literal: its type */
    const rlt_rexpr *literal;
} rlt_roperand;

typedef struct rlt_rattr {
    const char *name;   /* arena-owned */
    const rlt_rexpr *value; /* source: a literal or one attribute variable; target: any expression */
    int var;            /* source: the attribute variable it binds, or -1 for a literal ... */
    const rlt_rvalue *literal; /* ... of this value (arena-owned) */
} rlt_rattr;

typedef struct rlt_rnode {
    const char *op_type; /* arena-owned */
    int n_inputs;
    rlt_roperand *inputs;
    int n_outputs;
    int *outputs;        /* tensor variables */
    int n_attrs;
    rlt_rattr *attrs;
    int line;            /* in the rule file */
} rlt_rnode;

/* A value an attribute variable or an input takes in one check. */
typedef struct rlt_rcheck_value {
    int var;
    rlt_dtype dtype;     /* tensor inputs */
    int rank;
    int64_t dims[RLT_GRAPH_MAX_RANK];
    double lo, hi;       /* tensor inputs: the integers their random values are drawn from ({lo..hi};
                            default -3..3) */
    const rlt_rexpr *value; /* attribute variables: a literal */
} rlt_rcheck_value;

typedef struct rlt_rcheck {
    int n_values;
    rlt_rcheck_value *values;
    int line;
} rlt_rcheck;

typedef struct rlt_rule {
    const char *name;    /* arena-owned, unique in the set */
    const char *doc;     /* the comment lines just above it, joined; "" when none */
    const char *file;    /* where it was read, for messages (arena-owned) */
    int line;
    int n_vars;
    rlt_rvar vars[RLT_RULE_MAX_VARS];
    int n_src, n_dst;
    rlt_rnode src[RLT_RULE_MAX_NODES], dst[RLT_RULE_MAX_NODES];
    int n_where;
    const rlt_rexpr **where; /* conditions, each must hold (nonzero) */
    int n_out;
    int out_src[RLT_RULE_MAX_NODES * 2]; /* source tensor variable ... */
    int out_dst[RLT_RULE_MAX_NODES * 2]; /* ... replaced by this target or input variable */
    int n_checks;
    rlt_rcheck checks[RLT_RULE_MAX_CHECKS];
    bool is_verified;    /* by rlt_ruleset_verify, with what it saw: */
    bool is_exact;       /* compared bit for bit */
    double max_error;    /* the largest relative difference */
} rlt_rule;

typedef struct rlt_ruleset {
    rlt_arena *arena;
    int n_rules, cap_rules;
    rlt_rule **rules;    /* heap array of arena-owned rules */
} rlt_ruleset;

/* Parses rules from text (docs/graph-opt.md, "Rules") and adds them to *rs,
 * creating the set when *rs is NULL (free with rlt_ruleset_destroy). `file`
 * names the text in messages. The rules are not verified yet. Errors:
 * PARSE_ERROR naming the file, line and what was expected (the set is
 * unchanged then), OUT_OF_MEMORY. */
rlt_status rlt_ruleset_parse(const char *text, const char *file, rlt_ruleset **rs, rlt_diag *diag);
/* The same for a file; IO_ERROR when it cannot be read. */
rlt_status rlt_ruleset_load(const char *path, rlt_ruleset **rs, rlt_diag *diag);
/* The rules shipped with rltune (rules/default.rules, built into the
 * library). */
rlt_status rlt_ruleset_default(rlt_ruleset **rs, rlt_diag *diag);
const char *rlt_ruleset_default_text(void);
void rlt_ruleset_destroy(rlt_ruleset *rs); /* NULL ok */
/* The rule of that name, or NULL. */
const rlt_rule *rlt_ruleset_find(const rlt_ruleset *rs, const char *name);

/* What an expression sees: the graph and the match's bindings (tensors
 * and attrs indexed by variable; NULL arrays: no bindings). */
typedef struct rlt_reval {
    const rlt_rule *rule;
    const rlt_graph *g;
    const int *tensors;       /* graph tensor of each tensor variable, -1: unbound */
    const rlt_rvalue *attrs;  /* value of each attribute variable */
} rlt_reval;

/* Evaluates an expression. INVALID_ARGUMENT naming the rule's line for a
 * type error (a list added to a number, dim() past the rank, ...). */
rlt_status rlt_rexpr_eval(const rlt_rexpr *e, const rlt_reval *ctx, rlt_rvalue *out, rlt_diag *diag);
/* An attribute's value (NULL: none). */
void rlt_rvalue_of_attr(const rlt_graph_attr *a, rlt_rvalue *out);
/* The attribute `name` holding v, its name and arrays copied into `arena`
 * (so that a graph keeps nothing of the rules); false when out of memory
 * or v is none. */
bool rlt_rvalue_to_attr(const rlt_rvalue *v, const char *name, rlt_arena *arena, rlt_graph_attr *out);
/* Same kind and values (an INT equals a FLOAT of the same value; none
 * equals none). */
bool rlt_rvalue_equal(const rlt_rvalue *a, const rlt_rvalue *b);
/* v as text ("3", "[1,1]", "\"NOTSET\""), into buf of cap bytes. */
void rlt_rvalue_format(const rlt_rvalue *v, char *buf, size_t cap);

/* ---- verification (verify.c) -------------------------------------------- */

typedef struct rlt_rule_check_result {
    int n_checks;        /* check lines evaluated */
    bool is_exact;       /* compared bit for bit (integer-valued inputs, exact ops) */
    double max_error;    /* largest |target - source| relative to the largest |source| */
} rlt_rule_check_result;

/* Checks one rule on each of its check lines: builds the source pattern
 * as a graph with those shapes (constants for `const` inputs), integer-
 * valued random inputs from `seed`, applies the rule to it and evaluates
 * both graphs with the reference evaluator; each replaced tensor must
 * match: exactly when every op of both sides is exact on integers (no
 * Sqrt, Div, Softmax, ...), else within 1e-5 relative. INVALID_ARGUMENT
 * naming the rule, the check line and the counterexample (the first
 * differing element, its index and both values), or a check that does not
 * satisfy the rule's conditions or does not infer. */
rlt_status rlt_rule_verify(const rlt_rule *r, int opset, uint64_t seed, rlt_rule_check_result *out, rlt_diag *diag);

/* Verifies every rule of the set (at opsets 11 and 13); the first failure
 * is returned. Marks each rule verified. */
rlt_status rlt_ruleset_verify(rlt_ruleset *rs, uint64_t seed, rlt_diag *diag);

/* ---- matching and applying (match.c) ------------------------------------ */

/* Where a rule matches in a graph. */
typedef struct rlt_gopt_match {
    int rule;                          /* index in the ruleset */
    int nodes[RLT_RULE_MAX_NODES];     /* graph node of each source node */
    int tensors[RLT_RULE_MAX_VARS];    /* graph tensor of each tensor variable of the source side, or -1
                                          (attribute values are read again from the nodes) */
} rlt_gopt_match;

/* The value of each attribute variable of rule r in match m of graph g
 * (vals: r->n_vars entries; tensor variables' entries are none). */
void rlt_gopt_match_attrs(const rlt_rule *r, const rlt_graph *g, const rlt_gopt_match *m, rlt_rvalue *vals);

/* The value attribute `name` of node n takes when the node leaves it out
 * (ONNX's default; Conv's kernel_shape from its weight), into *out; false
 * when rltune knows no default for it. */
bool rlt_gopt_attr_default(const rlt_graph *g, const rlt_graph_node *n, const char *name, rlt_rvalue *out);

/* Every place where rule `rule` of rs matches g (sorted, inferred): each
 * source node bound to a distinct live node of its op type (Add and Mul
 * either way round), attributes equal to the pattern's literals and
 * consistent bindings (an attribute the pattern does not name must have
 * its default), the conditions true, and every source tensor the rule
 * does not replace read by nothing outside the match. Calls fn for each
 * match (stop when it returns false). OUT_OF_MEMORY only. */
typedef bool (*rlt_gopt_match_fn)(void *ctx, const rlt_gopt_match *m);
rlt_status rlt_gopt_rule_matches(const rlt_ruleset *rs, int rule, const rlt_graph *g, rlt_gopt_match_fn fn,
                                 void *ctx, rlt_diag *diag);

/* All matches of all rules, in rule order (a heap array: free with rlt_free). */
rlt_status rlt_gopt_find(const rlt_ruleset *rs, const rlt_graph *g, rlt_gopt_match **out, int *n_out,
                         rlt_diag *diag);

/* Applies a match of rs in g and returns the new graph (a clone of g:
 * sorted, inferred, dead code removed). The tensors the rule replaces keep
 * their names (target nodes write them); their readers move to an input
 * variable's tensor when the rule maps them to one. *out is NULL, and the
 * status OK, when the rewrite is refused: it would make a cycle, change a
 * replaced tensor's type or shape, or replace a graph output by an input
 * (reason, when not NULL, says which; at least 128 bytes). Errors:
 * INVALID_ARGUMENT (the target does not infer: names the rule),
 * OUT_OF_MEMORY. */
rlt_status rlt_gopt_apply(const rlt_ruleset *rs, const rlt_graph *g, const rlt_gopt_match *m, rlt_graph **out,
                          char *reason, rlt_diag *diag);

/* A structural hash of g: equal for graphs that compute the same nodes
 * from the same inputs and constants, whatever their node order and
 * intermediate names. */
uint64_t rlt_gopt_graph_hash(const rlt_graph *g);

/* ---- searches (search.c) ------------------------------------------------ */

/* Whether a graph of cost_a and n_a live nodes is better than one of
 * cost_b and n_b: cheaper, or as cheap (within 1e-9 relative: sums of the
 * same times in another order) with fewer nodes. What every search and the
 * environment's best graph go by. */
bool rlt_gopt_is_better(double cost_a, int n_a, double cost_b, int n_b);

/* The cost of a graph (lower is better), and per node when per_node is not
 * NULL (g->n_nodes entries). */
typedef rlt_status (*rlt_gopt_cost_fn)(void *ctx, const rlt_graph *g, double *cost, double *per_node,
                                       rlt_diag *diag);

typedef enum rlt_gopt_search_kind {
    RLT_GOPT_SEARCH_NONE = 0, /* the graph as it is */
    RLT_GOPT_SEARCH_GREEDY,   /* apply the best-cost rewrite while one lowers the cost */
    RLT_GOPT_SEARCH_TASO,     /* TASO's cost-based backtracking */
} rlt_gopt_search_kind;

/* "none", "greedy", "taso"; false for another name. */
bool rlt_gopt_search_parse(const char *name, rlt_gopt_search_kind *out);
const char *rlt_gopt_search_str(rlt_gopt_search_kind k);

typedef struct rlt_gopt_options {
    rlt_gopt_search_kind search;
    double alpha;        /* taso: keep graphs costing under alpha x the best (default 1.05) */
    int budget;          /* taso: graphs taken from the queue, at most (default 200); greedy: steps */
    double time_limit_s; /* stop searching after this, 0 = none */
    bool is_verbose;     /* a line per step on stderr */
} rlt_gopt_options;

void rlt_gopt_options_init(rlt_gopt_options *o);

/* One rewrite of the best sequence found. */
typedef struct rlt_gopt_step {
    int rule;            /* index in the ruleset */
    char where[128];     /* the first source node's label in the graph it applied to */
    double cost_after;
} rlt_gopt_step;

typedef struct rlt_gopt_result {
    rlt_graph *graph;    /* the best graph (owned: rlt_graph_destroy), a clone of the input when
                            nothing helped */
    double cost_before, cost_after;
    int n_steps;
    rlt_gopt_step *steps; /* heap */
    int n_cost_evals;    /* graphs whose cost was asked for */
    int n_expanded;      /* graphs whose rewrites were all tried */
    int n_candidates;    /* rewrites applied (graphs made), duplicates included */
    double search_s;
} rlt_gopt_result;

/* Searches rewrite sequences of g with rs (verified), costed by cost_fn.
 * The input graph is not changed. Errors: the cost function's, and
 * rlt_gopt_apply's. */
rlt_status rlt_gopt_search(const rlt_ruleset *rs, const rlt_graph *g, const rlt_gopt_options *o,
                           rlt_gopt_cost_fn cost_fn, void *cost_ctx, rlt_gopt_result *out, rlt_diag *diag);
void rlt_gopt_result_free(rlt_gopt_result *r); /* NULL ok */

#endif /* RLT_GOPT_H */
