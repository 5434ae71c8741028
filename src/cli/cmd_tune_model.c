/*
 * cmd_tune_model.c - `rltune tune --model FILE`: a whole network's tasks
 * tuned from one budget of trials by the gradient-based task scheduler
 * (rlt_model_tuning_*), a line of progress per round, then the tasks and
 * the latency estimate; or one JSON object. cmd_tune.c parses the options
 * every session shares and hands over here.
 */
#include "cli/cli.h"
#include "rltune/model.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "45.210 ms", or "-" while unknown. */
static const char *ms_text(double ms, char *buf, size_t cap)
{
    if (isfinite(ms))
        snprintf(buf, cap, "%.4g ms", ms);
    else
        snprintf(buf, cap, "-");
    return buf;
}

static void print_round(const rlt_model_tuning *t)
{
    rlt_model_tuning_summary s;
    rlt_model_tuning_summary_get(t, &s);
    rlt_tuning_task k;
    rlt_model_tuning_task_get(t, s.last_task, &k);
    char best[32], lat[32];
    printf("[%7.1f s] round %3d  trials %4d/%d  task %2d/%d  best %-12s latency %-12s %s\n", s.wall_s,
           s.n_rounds, s.n_recorded + s.n_trials, s.n_budget, s.last_task + 1, s.n_tasks,
           ms_text(k.best_ms, best, sizeof best), ms_text(s.latency_ms, lat, sizeof lat), k.spec);
    fflush(stdout);
}

static void print_report(const rlt_model_tuning *t, const char *path, const char *db_path, const char *tuner,
                         const char *layout)
{
    rlt_model_tuning_summary s;
    rlt_model_tuning_summary_get(t, &s);
    char lat[32], lat0[32];
    printf("\nmodel:     %s: %d tasks, tuner %s\n", path, s.n_tasks, tuner);
    printf("trials:    %d of %d: %d from the records, %d new in %d rounds, %.1f s\n", s.n_recorded + s.n_trials,
           s.n_budget, s.n_recorded, s.n_trials, s.n_rounds, s.wall_s);
    printf("latency:   %s estimated (sum of weight x best time; %s from the records before)%s\n",
           ms_text(s.latency_ms, lat, sizeof lat), ms_text(s.latency_ms_at_open, lat0, sizeof lat0),
           s.was_stopped ? "; interrupted" : "");
    printf("\n  %6s %6s %6s %8s %12s %6s %9s  %s\n", "weight", "rounds", "trials", "sibling", "best", "share",
           "GFLOP/s", "task");
    for (int i = 0; i < s.n_tasks; i++) {
        rlt_tuning_task k;
        rlt_model_tuning_task_get(t, i, &k);
        char best[32], gf[32] = "-";
        if (isfinite(k.best_ms) && k.best_ms > 0) snprintf(gf, sizeof gf, "%.1f", k.flops / (k.best_ms * 1e6));
        double share = isfinite(s.latency_ms) && s.latency_ms > 0 ? 100.0 * k.weight * k.best_ms / s.latency_ms : 0;
        printf("  %6d %6d %6d %8d %12s %5.1f%% %9s  %s\n", k.weight, k.n_rounds, k.n_trials, k.n_from_siblings,
               ms_text(k.best_ms, best, sizeof best), share, gf, k.spec);
    }
    printf("\nrecords:   %s; run the network with 'rltune run --model %s --db %s%s%s'\n", db_path, path, db_path,
           layout ? " --layout " : "", layout ? layout : "");
}

static char *format_json(const rlt_model_tuning *t, const char *path, const char *db_path, const char *tuner,
                         bool is_cold)
{
    rlt_model_tuning_summary s;
    rlt_model_tuning_summary_get(t, &s);
    cJSON *o = cJSON_CreateObject(), *tasks = NULL, *curve = NULL;
    bool ok = o && cJSON_AddStringToObject(o, "model", path) && cJSON_AddStringToObject(o, "tuner", tuner) &&
              cJSON_AddStringToObject(o, "db", db_path) && rlt_cli_json_add_number(o, "trials", s.n_trials) &&
              rlt_cli_json_add_number(o, "budget", s.n_budget) && rlt_cli_json_add_number(o, "rounds", s.n_rounds) &&
              rlt_cli_json_add_number(o, "recorded", s.n_recorded) && rlt_cli_json_add_number(o, "wall_s", s.wall_s) &&
              rlt_cli_json_add_number(o, "latency_ms", s.latency_ms) &&
              rlt_cli_json_add_number(o, "latency_ms_at_open", s.latency_ms_at_open) &&
              cJSON_AddBoolToObject(o, "interrupted", s.was_stopped) &&
              cJSON_AddBoolToObject(o, "cold_weights", is_cold) && (tasks = cJSON_AddArrayToObject(o, "tasks"));
    for (int i = 0; ok && i < s.n_tasks; i++) {
        rlt_tuning_task k;
        rlt_model_tuning_task_get(t, i, &k);
        cJSON *e = cJSON_CreateObject();
        ok = e && cJSON_AddItemToArray(tasks, e) && cJSON_AddStringToObject(e, "spec", k.spec) &&
             rlt_cli_json_add_number(e, "weight", k.weight) && rlt_cli_json_add_number(e, "flops", k.flops) &&
             rlt_cli_json_add_number(e, "rounds", k.n_rounds) && rlt_cli_json_add_number(e, "trials", k.n_trials) &&
             rlt_cli_json_add_number(e, "from_siblings", k.n_from_siblings) &&
             rlt_cli_json_add_number(e, "recorded", k.n_recorded) &&
             rlt_cli_json_add_number(e, "best_ms", k.best_ms) && cJSON_AddBoolToObject(e, "done", k.is_done);
    }
    ok = ok && (curve = cJSON_AddArrayToObject(o, "curve"));
    for (int i = 0; ok && i < s.n_points; i++) {
        cJSON *e = cJSON_CreateObject();
        ok = e && cJSON_AddItemToArray(curve, e) && rlt_cli_json_add_number(e, "trials", s.curve[i].n_trials) &&
             rlt_cli_json_add_number(e, "wall_s", s.curve[i].wall_s) &&
             rlt_cli_json_add_number(e, "latency_ms", s.curve[i].latency_ms);
    }
    char *text = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return text;
}

int rlt_cli_tune_model(const rlt_cli_args *args, const rlt_session_options *so, int64_t n_trials)
{
    static const char *const per_op[] = {"op", "expr", "shape", "start", "policy", "policy-base", "agent-in",
                                         "agent-out", "transfer", "measure", "early-stopping"};
    for (size_t i = 0; i < RLT_CLI_ARRAY_LEN(per_op); i++)
        if (rlt_cli_args_has(args, per_op[i])) {
            rlt_cli_error("--%s cannot be combined with --model: a network's tasks are tuned live, each from "
                          "its own start%s",
                          per_op[i], strcmp(per_op[i], "transfer") == 0 ? " (transfer between its tasks is on "
                                                                          "by default; --no-transfer turns it off)"
                                                                        : "");
            return RLT_CLI_EXIT_USAGE;
        }
    int rc = RLT_CLI_EXIT_USAGE;
    rlt_diag d = {0};
    rlt_status st;
    const char *path = rlt_cli_args_get(args, "model");
    rlt_model *m = NULL;
    rlt_model_tuning *t = NULL;
    char *json = NULL;
    bool is_json = rlt_cli_args_has(args, "json");
    if (!path || !path[0]) {
        rlt_cli_error("--model FILE: the ONNX model whose tasks to tune");
        return RLT_CLI_EXIT_USAGE;
    }
    int block = 0;
    if ((rc = rlt_cli_model_layout(args, false, &block)) != RLT_CLI_EXIT_OK) return rc;
    if ((rc = rlt_cli_model_load(path, &m)) != RLT_CLI_EXIT_OK) return rc;
    if (rlt_cli_args_has(args, "graph-opt") &&
        (rc = rlt_cli_graph_opt_apply(rlt_cli_args_get(args, "graph-opt"), path, so->db_path, so->n_threads,
                                      rlt_cli_model_cold(args, m, true), is_json, &m)) != RLT_CLI_EXIT_OK)
        goto cleanup;
    rc = RLT_CLI_EXIT_USAGE;
    rlt_model_tune_options o;
    rlt_model_tune_options_init(&o);
    o.session = *so;
    o.session.n_trials = 0;
    o.session.progress = NULL;
    o.session.run.cold_weights = rlt_cli_model_cold(args, m, is_json);
    o.n_trials = (int)n_trials;
    o.no_transfer = rlt_cli_args_has(args, "no-transfer");
    o.channel_block = block;
    if ((st = rlt_model_tuning_open(m, &o, &t, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("%s: %s", path, d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    rlt_cli_interrupt_catch();
    while (st == RLT_STATUS_OK && !rlt_model_tuning_is_done(t)) {
        st = rlt_model_tuning_step(t, &d);
        if (st == RLT_STATUS_OK && !is_json) print_round(t);
    }
    if (st == RLT_STATUS_OK) st = rlt_model_tuning_finish(t, &d);
    rlt_cli_interrupt_release();
    if (st != RLT_STATUS_OK) {
        rlt_model_tuning_summary s;
        rlt_model_tuning_summary_get(t, &s);
        rlt_cli_error("tuning stopped (%s): %s (%d trials stored in %s)", rlt_status_str(st), d.message, s.n_trials,
                      so->db_path);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    if (is_json) {
        if (!(json = format_json(t, path, so->db_path, so->tuner, o.session.run.cold_weights))) {
            rlt_cli_error("out of memory formatting the result");
            rc = RLT_CLI_EXIT_INTERNAL;
            goto cleanup;
        }
        printf("%s\n", json);
    } else {
        print_report(t, path, so->db_path, so->tuner, rlt_cli_args_get(args, "layout"));
    }
    rc = RLT_CLI_EXIT_OK;
cleanup:
    cJSON_free(json);
    rlt_model_tuning_destroy(t);
    rlt_model_destroy(m);
    return rc;
}
