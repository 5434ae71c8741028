/*
 * graph_opt.c - the public face of graph substitutions (rltune/graph_opt.h):
 * rule sets (rlt_rules over gopt's rlt_ruleset), the search over a model
 * costed by measured kernels (rlt_model_graph_opt: gopt's searches with
 * cost.h's model), and writing a model back as ONNX.
 */
#include "api/model_internal.h"
#include "gopt/cost.h"
#include "gopt/gopt.h"
#include "rltune/graph_opt.h"

#include <stdio.h>
#include <string.h>

struct rlt_rules {
    rlt_ruleset *set;
};

rlt_status rlt_rules_load(const char *path, rlt_rules **out, rlt_diag *diag)
{
    *out = NULL;
    rlt_rules *r = rlt_calloc(1, sizeof *r);
    if (!r) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading rules");
    rlt_status st = path ? rlt_ruleset_load(path, &r->set, diag) : rlt_ruleset_default(&r->set, diag);
    if (st != RLT_STATUS_OK) {
        rlt_free(r);
        return st;
    }
    *out = r;
    return RLT_STATUS_OK;
}

rlt_status rlt_rules_add(rlt_rules *r, const char *path, rlt_diag *diag)
{
    return rlt_ruleset_load(path, &r->set, diag);
}

void rlt_rules_destroy(rlt_rules *r)
{
    if (!r) return;
    rlt_ruleset_destroy(r->set);
    rlt_free(r);
}

rlt_status rlt_rules_verify(rlt_rules *r, uint64_t seed, rlt_diag *diag)
{
    return rlt_ruleset_verify(r->set, seed, diag);
}

int rlt_rules_count(const rlt_rules *r) { return r->set->n_rules; }

void rlt_rule_info_get(const rlt_rules *r, int i, rlt_rule_info *out)
{
    memset(out, 0, sizeof *out);
    const rlt_rule *rule = r->set->rules[i];
    snprintf(out->name, sizeof out->name, "%s", rule->name);
    snprintf(out->doc, sizeof out->doc, "%s", rule->doc);
    snprintf(out->file, sizeof out->file, "%s", rule->file);
    out->line = rule->line;
    out->n_src = rule->n_src;
    out->n_dst = rule->n_dst;
    out->n_checks = rule->n_checks;
    out->is_verified = rule->is_verified;
    out->is_exact = rule->is_exact;
    out->max_error = rule->max_error;
}

void rlt_graph_opt_options_init(rlt_graph_opt_options *o)
{
    memset(o, 0, sizeof *o);
    o->search = "greedy";
    o->alpha = 1.05;
    o->budget = 200;
    o->n_threads = 1;
    o->seed = 1;
}

/* The search's cost: the cost model's, in milliseconds. */
static rlt_status cost_graph(void *ctx, const rlt_graph *g, double *cost, double *per_node, rlt_diag *diag)
{
    return rlt_gcost_graph(ctx, g, cost, per_node, diag);
}

static int live_nodes(const rlt_graph *g)
{
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++) n += !g->nodes[i].is_removed;
    return n;
}

rlt_status rlt_model_graph_opt(rlt_model *m, const rlt_rules *rules, const rlt_graph_opt_options *o,
                               rlt_model **out, rlt_graph_opt_result *res, rlt_diag *diag)
{
    *out = NULL;
    memset(res, 0, sizeof *res);
    rlt_gopt_options go;
    rlt_gopt_options_init(&go);
    if (!o->search || !rlt_gopt_search_parse(o->search, &go.search))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "unknown search '%s'; expected greedy, taso or none",
                        o->search ? o->search : "(null)");
    if (o->alpha < 1.0 || o->budget < 0 || o->time_limit_s < 0)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "alpha must be >= 1, the budget and the time limit >= 0");
    for (int i = 0; i < rules->set->n_rules; i++)
        if (!rules->set->rules[i]->is_verified)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "rule %s is not verified; run rlt_rules_verify first",
                            rules->set->rules[i]->name);
    go.alpha = o->alpha;
    go.budget = o->budget;
    go.time_limit_s = o->time_limit_s;
    go.is_verbose = o->is_verbose;
    rlt_gcost_options co;
    rlt_gcost_options_init(&co);
    co.db_path = o->db_path;
    co.n_threads = o->n_threads;
    co.build = o->build;
    co.seed = o->seed;
    rlt_gcost *cost = NULL;
    rlt_gopt_result gr = {0};
    rlt_diag d = {0};
    const rlt_graph *g = rlt_model_graph(m);
    rlt_status st = rlt_gcost_create(&co, &cost, &d);
    if (st == RLT_STATUS_OK) st = rlt_gopt_search(rules->set, g, &go, cost_graph, cost, &gr, &d);
    if (st != RLT_STATUS_OK) goto cleanup;
    res->steps = rlt_calloc((size_t)gr.n_steps + 1, sizeof *res->steps);
    if (!res->steps) {
        st = rlt_fail(&d, RLT_STATUS_OUT_OF_MEMORY, "out of memory optimising the graph");
        goto cleanup;
    }
    res->n_steps = gr.n_steps;
    for (int i = 0; i < gr.n_steps; i++) {
        snprintf(res->steps[i].rule, sizeof res->steps[i].rule, "%s", rules->set->rules[gr.steps[i].rule]->name);
        snprintf(res->steps[i].where, sizeof res->steps[i].where, "%s", gr.steps[i].where);
        res->steps[i].cost_ms = gr.steps[i].cost_after;
    }
    res->cost_before_ms = gr.cost_before;
    res->cost_after_ms = gr.cost_after;
    res->n_nodes_before = live_nodes(g);
    res->n_nodes_after = live_nodes(gr.graph);
    res->n_cost_evals = gr.n_cost_evals;
    res->n_expanded = gr.n_expanded;
    res->n_candidates = gr.n_candidates;
    res->search_s = gr.search_s;
    rlt_gcost_stats stats;
    rlt_gcost_stats_get(cost, &stats);
    res->n_tasks_measured = stats.n_tasks_measured;
    res->n_tasks_from_records = stats.n_tasks_from_records;
    res->n_ops_measured = stats.n_ops_measured;
    res->measure_s = stats.measure_s;
    st = rlt_model_from_graph(gr.graph, out, &d);
    gr.graph = NULL;
cleanup:
    if (st != RLT_STATUS_OK) rlt_graph_opt_result_free(res);
    rlt_gopt_result_free(&gr);
    rlt_gcost_destroy(cost);
    return st == RLT_STATUS_OK ? st : rlt_model_noted(m, st, &d, diag);
}

void rlt_graph_opt_result_free(rlt_graph_opt_result *r)
{
    if (!r) return;
    rlt_free(r->steps);
    r->steps = NULL;
    r->n_steps = 0;
}

rlt_status rlt_model_save_onnx(const rlt_model *m, const char *path, rlt_diag *diag)
{
    return rlt_graph_write_onnx(rlt_model_graph(m), path, diag);
}
