/*
 * cmd_graph_opt.c - `rltune graph-opt`: loads an ONNX model, verifies the
 * rules (shipped, plus --rules FILE), searches rewrites of the graph
 * (rlt_model_graph_opt: greedy or TASO's backtracking, costed by measured
 * kernels), prints the rewrites applied and the cost before and after;
 * then compiles both graphs, checks the optimised one's outputs against
 * the original graph's reference evaluation, times both (the measured
 * latency), and writes the optimised graph as ONNX with --out.
 */
#include "cli/cli.h"
#include "rltune/graph_opt.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_IO 16

static const rlt_cli_opt graph_opt_opts[] = {
    {"model", "FILE", "the ONNX model (.onnx) to optimise"},
    {"search", "S", "greedy (default), taso, rl (a trained policy, --policy), or none (the graph as it is)"},
    {"policy", "FILE", "rl: a policy of rltune graph-train (default: the one shipped with rltune)"},
    {"horizon", "N", "rl: rewrites at most (default 20)"},
    {"rules", "FILE", "rules of your own, added to the shipped set (verified first)"},
    {"alpha", "A", "taso: explore graphs costing under A x the best; rl: stop at a graph costing over A x the best (default 1.05)"},
    {"budget", "N", "taso: graphs expanded; greedy: rewrites applied (default 200)"},
    {"time-limit", "S", "stop searching after S seconds (default: none)"},
    {"db", "FILE", "records database: kernels' times from their best records; measured seeds stored"},
    {"warm", NULL, "cost and run kernels warm: warm records, seeds timed warm (default: cold, as tune --model)"},
    {"cost-seeds", "N", "a kernel without a record costs the best of its first N seeds, 1..8 (default 3 with --db, else 1)"},
    {"threads", "N", "the network's threads (default 1)"},
    {"out", "FILE", "write the optimised graph here as ONNX"},
    {"repeat", "R", "timed runs of each network (default 10)"},
    {"no-measure", NULL, "do not compile and time the networks (costs only)"},
    {"seed", "N", "inputs of the measurements and the rules' checks (default 1)"},
    {"verbose", NULL, "a line on stderr per rewrite tried"},
    {"json", NULL, "print exactly one JSON object on stdout"},
};

typedef struct gopt_view {
    const char *path;
    const char *search;
    rlt_graph_opt_options o;
    rlt_graph_opt_result res;
    int n_rules;
    bool is_measured;
    double before_ms, after_ms; /* measured medians */
    double max_error, max_ref;
    bool is_correct;
    int repeat;
    const char *out_path;
} gopt_view;

/* Compiles m, runs it on `in` checked against `ref`, and times it. */
static int time_model(rlt_model *m, const gopt_view *v, rlt_array **in, rlt_array **ref, rlt_net_timing *out)
{
    rlt_diag d = {0};
    rlt_net *net = NULL;
    rlt_array *outs[MAX_IO] = {0};
    int rc = RLT_CLI_EXIT_INTERNAL;
    for (int i = 0; i < rlt_model_n_outputs(m); i++) {
        rlt_model_tensor t;
        rlt_model_output(m, i, &t);
        if (rlt_array_create(t.elem, t.rank, t.dims, &outs[i], &d) != RLT_STATUS_OK) {
            rlt_cli_error("%s", d.message);
            goto cleanup;
        }
    }
    rlt_net_options o;
    rlt_net_options_init(&o);
    o.db_path = v->o.db_path;
    o.n_threads = v->o.n_threads;
    o.cold_weights = v->o.cold_weights;
    rlt_status st = rlt_model_compile(m, &o, &net, &d);
    if (st == RLT_STATUS_OK) {
        rlt_net_timing_options to;
        rlt_net_timing_options_init(&to);
        to.repeat = v->repeat;
        to.is_pinned = v->o.n_threads == 1;
        st = rlt_net_time(net, (const rlt_array *const *)in, outs, (const rlt_array *const *)ref, &to, out, &d);
    }
    if (st != RLT_STATUS_OK) {
        rlt_cli_error("%s: %s", v->path, d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    rc = RLT_CLI_EXIT_OK;
cleanup:
    for (int i = 0; i < MAX_IO; i++) rlt_array_destroy(outs[i]);
    rlt_net_destroy(net);
    return rc;
}

/* Both networks timed alternately (before, after, before, after) so that
 * a drift of the machine falls on both; the medians of the two runs each. */
static int measure(rlt_model *before, rlt_model *after, gopt_view *v)
{
    rlt_diag d = {0};
    rlt_array *in[MAX_IO] = {0}, *ref[MAX_IO] = {0};
    int rc = RLT_CLI_EXIT_INTERNAL;
    int n_in = rlt_model_n_inputs(before), n_out = rlt_model_n_outputs(before);
    if (n_in > MAX_IO || n_out > MAX_IO) {
        rlt_cli_error("%s: at most %d inputs and outputs are measured", v->path, MAX_IO);
        return RLT_CLI_EXIT_USAGE;
    }
    rlt_status st = rlt_model_random_inputs(before, v->o.seed, in, &d);
    if (st == RLT_STATUS_OK) st = rlt_model_evaluate(before, (const rlt_array *const *)in, ref, &d);
    if (st != RLT_STATUS_OK) {
        rlt_cli_error("%s: %s", v->path, d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    double b[2], a[2];
    v->is_correct = true;
    for (int round = 0; round < 2; round++) {
        rlt_net_timing tb, ta;
        if ((rc = time_model(before, v, in, ref, &tb)) != RLT_CLI_EXIT_OK ||
            (rc = time_model(after, v, in, ref, &ta)) != RLT_CLI_EXIT_OK)
            goto cleanup;
        b[round] = tb.median_ms;
        a[round] = ta.median_ms;
        if (ta.max_error > v->max_error) v->max_error = ta.max_error;
        v->max_ref = ta.max_reference;
        v->is_correct &= ta.is_correct && tb.is_correct;
    }
    v->before_ms = b[0] < b[1] ? b[0] : b[1];
    v->after_ms = a[0] < a[1] ? a[0] : a[1];
    v->is_measured = true;
    rc = RLT_CLI_EXIT_OK;
cleanup:
    for (int i = 0; i < MAX_IO; i++) {
        rlt_array_destroy(in[i]);
        rlt_array_destroy(ref[i]);
    }
    return rc;
}

static void print_text(const gopt_view *v)
{
    const rlt_graph_opt_result *r = &v->res;
    printf("model: %s: %d nodes\n", v->path, r->n_nodes_before);
    printf("rules: %d, verified\n", v->n_rules);
    printf("search: %s: %d graph%s expanded, %d rewrites applied, %d graphs costed, %.1f s "
           "(measured: %d kernel%s by %s seeds, %d ops; %d kernels from records)\n",
           v->search, r->n_expanded, r->n_expanded == 1 ? "" : "s", r->n_candidates, r->n_cost_evals, r->search_s,
           r->n_tasks_measured, r->n_tasks_measured == 1 ? "" : "s", r->n_tasks_measured == 1 ? "its" : "their",
           r->n_ops_measured, r->n_tasks_from_records);
    if (r->n_steps == 0) {
        printf("rewrites: none lowers the cost\n");
    } else {
        printf("rewrites (%d):\n", r->n_steps);
        for (int i = 0; i < r->n_steps; i++)
            printf("  %2d. %-30s at %-40s cost %.4f ms\n", i + 1, r->steps[i].rule, r->steps[i].where,
                   r->steps[i].cost_ms);
    }
    printf("nodes: %d -> %d\n", r->n_nodes_before, r->n_nodes_after);
    printf("cost: %.4f ms -> %.4f ms (%.3fx)\n", r->cost_before_ms, r->cost_after_ms,
           r->cost_before_ms > 0 ? r->cost_after_ms / r->cost_before_ms : 1.0);
    if (v->is_measured)
        printf("latency: %.4f ms -> %.4f ms (%.3fx), best of two medians of %d runs; outputs %s: max error "
               "%.3g (reference max %.3g)\n",
               v->before_ms, v->after_ms, v->before_ms > 0 ? v->after_ms / v->before_ms : 1.0, v->repeat,
               v->is_correct ? "match the original's" : "DIFFER from the original's", v->max_error, v->max_ref);
    if (v->out_path) printf("wrote %s\n", v->out_path);
}

static char *format_json(const gopt_view *v)
{
    const rlt_graph_opt_result *r = &v->res;
    char *text = NULL;
    cJSON *root = cJSON_CreateObject(), *steps = NULL;
    if (!root || !cJSON_AddStringToObject(root, "model", v->path) ||
        !cJSON_AddStringToObject(root, "search", v->search) || !rlt_cli_json_add_number(root, "rules", v->n_rules) ||
        !rlt_cli_json_add_number(root, "cost_before_ms", r->cost_before_ms) ||
        !rlt_cli_json_add_number(root, "cost_after_ms", r->cost_after_ms) ||
        !rlt_cli_json_add_number(root, "nodes_before", r->n_nodes_before) ||
        !rlt_cli_json_add_number(root, "nodes_after", r->n_nodes_after) ||
        !rlt_cli_json_add_number(root, "cost_evals", r->n_cost_evals) ||
        !rlt_cli_json_add_number(root, "expanded", r->n_expanded) ||
        !rlt_cli_json_add_number(root, "candidates", r->n_candidates) ||
        !rlt_cli_json_add_number(root, "search_s", r->search_s) ||
        !rlt_cli_json_add_number(root, "measure_s", r->measure_s) ||
        !rlt_cli_json_add_number(root, "tasks_measured", r->n_tasks_measured) ||
        !rlt_cli_json_add_number(root, "tasks_from_records", r->n_tasks_from_records) ||
        !rlt_cli_json_add_number(root, "ops_measured", r->n_ops_measured) ||
        !(steps = cJSON_AddArrayToObject(root, "rewrites")))
        goto cleanup;
    for (int i = 0; i < r->n_steps; i++) {
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(steps, o)) {
            cJSON_Delete(o);
            goto cleanup;
        }
        if (!cJSON_AddStringToObject(o, "rule", r->steps[i].rule) ||
            !cJSON_AddStringToObject(o, "where", r->steps[i].where) ||
            !rlt_cli_json_add_number(o, "cost_ms", r->steps[i].cost_ms))
            goto cleanup;
    }
    if (v->is_measured) {
        cJSON *lat = cJSON_AddObjectToObject(root, "latency_ms");
        if (!lat || !rlt_cli_json_add_number(lat, "before", v->before_ms) ||
            !rlt_cli_json_add_number(lat, "after", v->after_ms) || !rlt_cli_json_add_number(root, "repeat", v->repeat) ||
            !rlt_cli_json_add_number(root, "max_error", v->max_error) ||
            !cJSON_AddBoolToObject(root, "correct", v->is_correct))
            goto cleanup;
    }
    if (v->out_path && !cJSON_AddStringToObject(root, "out", v->out_path)) goto cleanup;
    text = cJSON_PrintUnformatted(root);
cleanup:
    cJSON_Delete(root);
    return text;
}

static int read_options(const rlt_cli_args *args, gopt_view *v)
{
    rlt_diag d = {0};
    int64_t budget, threads, repeat, seed, cost_seeds;
    double alpha, limit;
    rlt_graph_opt_options_init(&v->o);
    v->search = rlt_cli_args_get(args, "search");
    if (!v->search) v->search = "greedy";
    if (strcmp(v->search, "greedy") != 0 && strcmp(v->search, "taso") != 0 && strcmp(v->search, "none") != 0 &&
        strcmp(v->search, "rl") != 0) {
        rlt_cli_error("--search: '%s' is not a search; expected greedy, taso, rl or none", v->search);
        return RLT_CLI_EXIT_USAGE;
    }
    if (strcmp(v->search, "rl") != 0 && rlt_cli_args_has(args, "policy")) {
        rlt_cli_error("--policy goes with --search rl");
        return RLT_CLI_EXIT_USAGE;
    }
    int64_t horizon;
    if (rlt_cli_args_int(args, "horizon", 20, 1, 100000, &horizon, &d) != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        return RLT_CLI_EXIT_USAGE;
    }
    v->o.horizon = (int)horizon;
    if (rlt_cli_args_int(args, "budget", 200, 0, 1000000, &budget, &d) != RLT_STATUS_OK ||
        rlt_cli_args_int(args, "threads", 1, 1, RLT_MAX_THREADS, &threads, &d) != RLT_STATUS_OK ||
        rlt_cli_args_int(args, "repeat", 10, 1, 100000, &repeat, &d) != RLT_STATUS_OK ||
        rlt_cli_args_int(args, "seed", 1, 0, INT64_MAX, &seed, &d) != RLT_STATUS_OK ||
        rlt_cli_args_int(args, "cost-seeds", 0, 1, 8, &cost_seeds, &d) != RLT_STATUS_OK ||
        rlt_cli_args_double(args, "alpha", 1.05, 1.0, false, 10.0, &alpha, &d) != RLT_STATUS_OK ||
        rlt_cli_args_double(args, "time-limit", 0, 0, false, 1e7, &limit, &d) != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        return RLT_CLI_EXIT_USAGE;
    }
    v->o.search = v->search;
    v->o.alpha = alpha;
    v->o.budget = (int)budget;
    v->o.time_limit_s = limit;
    v->o.n_threads = (int)threads;
    v->o.seed = (uint64_t)seed;
    v->o.is_verbose = rlt_cli_args_has(args, "verbose");
    v->o.db_path = rlt_cli_args_get(args, "db");
    v->o.cold_weights = !rlt_cli_args_has(args, "warm");
    v->o.n_seeds = (int)cost_seeds;
    v->repeat = (int)repeat;
    v->out_path = rlt_cli_args_get(args, "out");
    return RLT_CLI_EXIT_OK;
}

int rlt_cli_graph_opt_apply(const char *search, const char *path, const char *db_path, int n_threads, bool is_cold,
                            bool is_quiet, rlt_model **model_io)
{
    rlt_diag d = {0};
    rlt_rules *rules = NULL;
    rlt_model *better = NULL;
    rlt_graph_opt_result res = {0};
    int rc = RLT_CLI_EXIT_OK;
    if (strcmp(search, "greedy") != 0 && strcmp(search, "taso") != 0 && strcmp(search, "rl") != 0 &&
        strcmp(search, "none") != 0) {
        rlt_cli_error("--graph-opt: '%s' is not a search; expected greedy, taso, rl or none", search);
        return RLT_CLI_EXIT_USAGE;
    }
    rlt_graph_opt_options o;
    rlt_graph_opt_options_init(&o);
    o.search = search;
    o.db_path = db_path;
    o.n_threads = n_threads;
    o.cold_weights = is_cold;
    rlt_graph_policy *policy = NULL;
    rlt_status st = rlt_rules_load(NULL, &rules, &d);
    if (st == RLT_STATUS_OK) st = rlt_rules_verify(rules, o.seed, &d);
    if (st == RLT_STATUS_OK && strcmp(search, "rl") == 0) st = rlt_graph_policy_default(&policy, &d);
    o.policy = policy;
    if (st == RLT_STATUS_OK) st = rlt_model_graph_opt(*model_io, rules, &o, &better, &res, &d);
    if (st != RLT_STATUS_OK) {
        rlt_cli_error("%s: --graph-opt: %s", path, d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    if (!is_quiet) {
        printf("graph-opt: %s: ", search);
        if (res.n_steps == 0) printf("no rewrite lowers the cost");
        for (int i = 0; i < res.n_steps; i++) printf("%s%s", i ? ", " : "", res.steps[i].rule);
        printf("; cost %.4f -> %.4f ms, %d graphs costed in %.1f s\n", res.cost_before_ms, res.cost_after_ms,
               res.n_cost_evals, res.search_s);
    }
    rlt_model_destroy(*model_io);
    *model_io = better;
    better = NULL;
cleanup:
    rlt_graph_opt_result_free(&res);
    rlt_model_destroy(better);
    rlt_graph_policy_destroy(policy);
    rlt_rules_destroy(rules);
    return rc;
}

static int run_graph_opt(const rlt_cli_args *args)
{
    gopt_view v = {.path = rlt_cli_args_get(args, "model")};
    rlt_diag d = {0};
    rlt_model *model = NULL, *better = NULL;
    rlt_rules *rules = NULL;
    rlt_graph_policy *policy = NULL;
    char *json = NULL;
    int rc;
    if (!v.path || !v.path[0]) {
        rlt_cli_error("--model FILE is required: the ONNX model to optimise");
        return RLT_CLI_EXIT_USAGE;
    }
    if ((rc = read_options(args, &v)) != RLT_CLI_EXIT_OK) return rc;
    if ((rc = rlt_cli_model_load(v.path, &model)) != RLT_CLI_EXIT_OK) return rc;
    rlt_status st = RLT_STATUS_OK;
    if (strcmp(v.search, "rl") == 0 &&
        (st = rlt_cli_args_has(args, "policy") ? rlt_graph_policy_load(rlt_cli_args_get(args, "policy"), &policy, &d)
                                               : rlt_graph_policy_default(&policy, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("--policy: %s", d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    v.o.policy = policy;
    st = rlt_rules_load(NULL, &rules, &d);
    if (st == RLT_STATUS_OK && rlt_cli_args_get(args, "rules"))
        st = rlt_rules_add(rules, rlt_cli_args_get(args, "rules"), &d);
    if (st == RLT_STATUS_OK) st = rlt_rules_verify(rules, v.o.seed, &d);
    if (st != RLT_STATUS_OK) {
        rlt_cli_error("--rules: %s", d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    v.n_rules = rlt_rules_count(rules);
    if ((st = rlt_model_graph_opt(model, rules, &v.o, &better, &v.res, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("%s: %s", v.path, d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    if (!rlt_cli_args_has(args, "no-measure") && (rc = measure(model, better, &v)) != RLT_CLI_EXIT_OK) goto cleanup;
    if (v.out_path && (st = rlt_model_save_onnx(better, v.out_path, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("--out: %s", d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    if (rlt_cli_args_has(args, "json")) {
        if (!(json = format_json(&v))) {
            rlt_cli_error("out of memory formatting the result");
            rc = RLT_CLI_EXIT_INTERNAL;
            goto cleanup;
        }
        printf("%s\n", json);
    } else {
        print_text(&v);
    }
    rc = !v.is_measured || v.is_correct ? RLT_CLI_EXIT_OK : RLT_CLI_EXIT_KERNEL_FAILED;
cleanup:
    cJSON_free(json);
    rlt_graph_opt_result_free(&v.res);
    rlt_rules_destroy(rules);
    rlt_graph_policy_destroy(policy);
    rlt_model_destroy(better);
    rlt_model_destroy(model);
    return rc;
}

const rlt_cli_cmd rlt_cli_cmd_graph_opt = {
    .name = "graph-opt",
    .brief = "search graph substitutions of an ONNX model; print the rewrites, cost and latency",
    .synopsis = "--model FILE [--search greedy|taso|rl|none] [--policy FILE] [--horizon N] [--rules FILE]\n"
                "                  [--alpha A] [--budget N]\n"
                "                  [--time-limit S] [--db FILE] [--cost-seeds N] [--threads N] [--out OPT.onnx]\n"
                "                  [--repeat R] [--no-measure] [--seed N] [--verbose] [--json]",
    .summary = "Verifies the rules (shipped with rltune, plus --rules), then searches rewrites of the\n"
               "model's graph: greedy applies the rewrite that lowers the cost most until none does;\n"
               "taso is TASO's backtracking (graphs costing under alpha x the best are expanded, each\n"
               "graph costed once, --budget graphs expanded); rl rolls out a trained policy (rltune\n"
               "graph-train) for up to --horizon rewrites, one cost evaluation a rewrite, stopping at\n"
               "a graph costing over alpha x the best so far. A graph's\n"
               "cost is the sum of its kernels' times as rltune would run it: tasks from --db's best\n"
               "records, else the best of their first --cost-seeds seed schedules, each measured once\n"
               "and stored in --db (without --db, the first seed: what a network compiled without\n"
               "records runs); other ops measured once per shape. Prints the rewrites of the best\n"
               "graph and its cost; then compiles the original and the optimised network, checks the\n"
               "optimised outputs against the original graph's reference evaluation and times both.",
    .details = "--out writes the optimised graph as ONNX (it runs in ONNX Runtime with the same\n"
               "outputs). With --json, stdout holds one JSON object: model, search, rules, cost_before_ms,\n"
               "cost_after_ms, nodes_before, nodes_after, cost_evals, expanded, candidates, search_s,\n"
               "measure_s, tasks_measured, tasks_from_records, ops_measured, rewrites (rule, where,\n"
               "cost_ms), and when measured latency_ms (before, after), repeat, max_error, correct.\n"
               "Exit 1 when the optimised network's outputs differ from the original's.\n"
               "Rules, searches and costs: docs/graph-opt.md.",
    .n_opts = (int)RLT_CLI_ARRAY_LEN(graph_opt_opts),
    .opts = graph_opt_opts,
    .run = run_graph_opt,
};
