/*
 * graph_opt.c - the public face of graph substitutions (rltune/graph_opt.h):
 * rule sets (rlt_rules over gopt's rlt_ruleset), the search over a model
 * costed by measured kernels (rlt_model_graph_opt: gopt's searches with
 * cost.h's model), and writing a model back as ONNX.
 */
#include "api/graph_opt_internal.h"
#include "api/model_internal.h"
#include "gopt/cost.h"

#include <stdio.h>
#include <string.h>

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
    o->cold_weights = true;
}

/* The search's cost: the cost model's, in milliseconds. */
static rlt_status cost_graph(void *ctx, const rlt_graph *g, double *cost, double *per_node, rlt_diag *diag)
{
    return rlt_gcost_graph(ctx, g, cost, per_node, diag);
}

/* What a search's cost model measured, into its result. */
static void result_take_stats(rlt_graph_opt_result *res, const rlt_gcost_stats *s)
{
    res->n_tasks_measured = s->n_tasks_measured;
    res->n_tasks_from_records = s->n_tasks_from_records;
    res->n_ops_measured = s->n_ops_measured;
    res->measure_s = s->measure_s;
}

/* Search "rl": the policy rolled out greedily in the environment until it
 * stops, nothing is left, the horizon, or a rewrite leaves the graph
 * costing over alpha x the best so far (TASO's bound); the best graph of
 * the episode, with the rewrites up to it. */
static rlt_status graph_opt_rl(rlt_model *m, const rlt_rules *rules, const rlt_graph_opt_options *o, rlt_model **out,
                               rlt_graph_opt_result *res, rlt_diag *diag)
{
    if (!o->policy) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "search rl needs a policy");
    if (!(o->alpha >= 1.0)) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "alpha must be >= 1");
    uint64_t t0 = rlt_time_ns();
    rlt_graph_env_options eo;
    rlt_graph_env_options_init(&eo);
    eo.horizon = o->horizon > 0 ? o->horizon : 20;
    eo.db_path = o->db_path;
    eo.n_threads = o->n_threads;
    eo.build = o->build;
    eo.seed = o->seed;
    eo.cold_weights = o->cold_weights;
    eo.n_seeds = o->n_seeds;
    rlt_graph_env *env = NULL;
    rlt_diag d = {0};
    rlt_status st = rlt_graph_env_create(rules, &eo, &env, &d);
    if (st == RLT_STATUS_OK) st = rlt_graph_env_reset(env, m, &d);
    if (st == RLT_STATUS_OK && !(res->steps = rlt_calloc((size_t)eo.horizon + 1, sizeof *res->steps)))
        st = rlt_fail(&d, RLT_STATUS_OUT_OF_MEMORY, "out of memory optimising the graph");
    rlt_graph_env_obs obs;
    int n_to_best = 0;
    uint64_t rng = o->seed;
    res->n_nodes_before = rlt_graph_n_live_nodes(rlt_model_graph(m));
    while (st == RLT_STATUS_OK) {
        rlt_graph_env_observe(env, &obs);
        if (obs.done) break;
        int a;
        if ((st = rlt_graph_policy_act(o->policy, rules, &obs, true, &rng, &a, &d)) != RLT_STATUS_OK) break;
        if (a == obs.n_actions - 1) break; /* stop */
        rlt_graph_opt_step step = {0};
        snprintf(step.rule, sizeof step.rule, "%s", rules->set->rules[obs.cand_rule[a]]->name);
        snprintf(step.where, sizeof step.where, "%s",
                 rlt_graph_node_label(rlt_graph_env_graph(env), obs.cand_nodes[a * RLT_GRAPH_ENV_MAX_ANCHORS]));
        double reward;
        bool done;
        if ((st = rlt_graph_env_step(env, a, &reward, &done, &d)) != RLT_STATUS_OK) break;
        rlt_graph_env_observe(env, &obs);
        if (obs.is_refused) continue; /* nothing changed */
        step.cost_ms = obs.cost_ms;
        if (o->is_verbose)
            fprintf(stderr, "graph-opt: %s at %s: cost %.4f\n", step.rule, step.where, step.cost_ms);
        res->steps[res->n_steps++] = step;
        if (obs.cost_ms <= obs.best_cost_ms) n_to_best = res->n_steps;
        res->n_expanded++;
        /* TASO's bound: a graph costing over alpha x the best is not
         * explored further */
        if (obs.cost_ms > o->alpha * obs.best_cost_ms) break;
    }
    if (st == RLT_STATUS_OK) st = rlt_graph_env_best_model(env, out, &d);
    if (st == RLT_STATUS_OK) {
        res->n_steps = n_to_best;
        res->cost_before_ms = obs.cost0_ms;
        res->cost_after_ms = obs.best_cost_ms;
        res->n_nodes_after = rlt_graph_n_live_nodes(rlt_model_graph(*out));
        res->n_cost_evals = rlt_graph_env_n_cost_evals(env);
        res->n_candidates = res->n_expanded;
        res->search_s = (double)(rlt_time_ns() - t0) * 1e-9;
        rlt_gcost_stats stats;
        rlt_graph_env_cost_stats(env, &stats);
        result_take_stats(res, &stats);
    } else {
        rlt_graph_opt_result_free(res);
    }
    rlt_graph_env_destroy(env);
    return st == RLT_STATUS_OK ? st : rlt_model_noted(m, st, &d, diag);
}

rlt_status rlt_model_graph_opt(rlt_model *m, const rlt_rules *rules, const rlt_graph_opt_options *o,
                               rlt_model **out, rlt_graph_opt_result *res, rlt_diag *diag)
{
    *out = NULL;
    memset(res, 0, sizeof *res);
    rlt_gopt_options go;
    rlt_gopt_options_init(&go);
    if (o->search && strcmp(o->search, "rl") == 0) return graph_opt_rl(m, rules, o, out, res, diag);
    if (!o->search || !rlt_gopt_search_parse(o->search, &go.search))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "unknown search '%s'; expected greedy, taso, rl or none",
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
    co.cold_weights = o->cold_weights;
    co.n_seeds = rlt_graph_cost_seeds(o->n_seeds, o->db_path);
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
    res->n_nodes_before = rlt_graph_n_live_nodes(g);
    res->n_nodes_after = rlt_graph_n_live_nodes(gr.graph);
    res->n_cost_evals = gr.n_cost_evals;
    res->n_expanded = gr.n_expanded;
    res->n_candidates = gr.n_candidates;
    res->search_s = gr.search_s;
    rlt_gcost_stats stats;
    rlt_gcost_stats_get(cost, &stats);
    result_take_stats(res, &stats);
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
