/*
 * graph_opt_internal.h - what the public graph-substitution files of
 * src/api/ share (graph_opt.c owns rule sets; graph_env.c the environment;
 * graph_policy.c the policy): a rule set's insides.
 */
#ifndef RLT_API_GRAPH_OPT_INTERNAL_H
#define RLT_API_GRAPH_OPT_INTERNAL_H

#include "gopt/cost.h"
#include "gopt/gopt.h"
#include "rltune/graph_opt.h"

struct rlt_rules {
    rlt_ruleset *set;
};

/* The environment's current graph (borrowed until its next step or
 * reset). (graph_env.c) */
const rlt_graph *rlt_graph_env_graph(const rlt_graph_env *e);

/* What the environment's cost model has measured so far. */
void rlt_graph_env_cost_stats(const rlt_graph_env *e, rlt_gcost_stats *out);

#endif /* RLT_API_GRAPH_OPT_INTERNAL_H */
