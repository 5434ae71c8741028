/*
 * model_report.c - the report of an experiment over whole models
 * (rlt_report.is_model): per (model, tuner) the latency figures over the
 * seeds (rlt_report_model_stats_compute: the estimate, the measured
 * latency, the speedup over the untuned network, trials, tuning time), the
 * plots of each model's latency estimate over tuning time and over trials
 * (rlt_report_model_plot_make), results.json (rlt_report_model_json) and
 * table.md (rlt_report_model_table_md). The HTML page is html.c's
 * (rlt_report_model_html); rlt_report_json, _table_md, _html and
 * rlt_report_write hand a model experiment's report here.
 */
#include "report/report.h"

#include "core/json_number.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PLOT_GRID 200 /* points of a plot's line: the runs' estimates sampled on a common grid */

/* ---- figures ----------------------------------------------------------------- */

void rlt_report_model_stats_compute(const rlt_report *rep, int w, int t, rlt_report_model_stats *out)
{
    *out = (rlt_report_model_stats){0};
    /* one experiment has at most RLT_REPORT_MAX_SEEDS runs of a pair */
    double estimates[RLT_REPORT_MAX_SEEDS], latencies[RLT_REPORT_MAX_SEEDS], speedups[RLT_REPORT_MAX_SEEDS],
        trials[RLT_REPORT_MAX_SEEDS], tuning[RLT_REPORT_MAX_SEEDS];
    const rlt_report_latency *untuned = &rep->workloads[w].untuned;
    int n = 0, n_speedups = 0;
    for (int i = 0; i < rep->n_runs && n < RLT_REPORT_MAX_SEEDS; i++) {
        const rlt_report_run *r = &rep->runs[i];
        if (r->workload != w || r->tuner != t) continue;
        estimates[n] = r->estimate_ms;
        trials[n] = r->n_model_trials;
        tuning[n] = r->tuning_s;
        out->tuning_total_s += r->tuning_s;
        if (r->latency.is_measured) {
            latencies[out->n_measured++] = r->latency.median_ms;
            out->n_correct += r->latency.is_checked && r->latency.is_correct;
            if (untuned->is_measured && r->latency.median_ms > 0)
                speedups[n_speedups++] = untuned->median_ms / r->latency.median_ms;
        }
        n++;
    }
    out->n_runs = n;
    if (n == 0) return;
    out->estimate_median_ms = rlt_report_median(estimates, n);
    out->trials_median = rlt_report_median(trials, n);
    out->tuning_median_s = rlt_report_median(tuning, n);
    if (out->n_measured > 0) {
        out->latency_median_ms = rlt_report_median(latencies, out->n_measured);
        out->latency_min_ms = latencies[0];
        out->latency_max_ms = latencies[out->n_measured - 1];
    }
    out->speedup_median = n_speedups > 0 ? rlt_report_median(speedups, n_speedups) : 0;
}

/* ---- plots ------------------------------------------------------------------------ */

static double point_x(const rlt_report_point *p, bool by_time) { return by_time ? p->wall_s : (double)p->n_trials; }

void rlt_report_model_plot_stem(const rlt_report *rep, int w, bool by_time, char *buf, size_t cap)
{
    char stem[96];
    int n = snprintf(stem, sizeof stem, "w%d-", w + 1);
    for (const char *p = rep->workloads[w].spec; *p && n < 72; p++) {
        unsigned char ch = (unsigned char)*p;
        bool is_ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
                     ch == '-' || ch == '_';
        stem[n++] = is_ok ? (char)ch : '_';
    }
    stem[n] = '\0';
    snprintf(buf, cap, "%s-%s", stem, by_time ? "time" : "trials");
}

rlt_status rlt_report_model_plot_make(const rlt_report *rep, int w, bool by_time, rlt_report_plot *out,
                                      rlt_diag *diag)
{
    memset(out, 0, sizeof *out);
    double x_max = 0;
    for (int i = 0; i < rep->n_runs; i++) {
        const rlt_report_run *r = &rep->runs[i];
        if (r->workload == w && r->n_points > 0) x_max = RLT_MAX(x_max, point_x(&r->points[r->n_points - 1], by_time));
    }
    int n_grid = x_max > 0 ? PLOT_GRID : 0;
    out->series = rlt_calloc((size_t)rep->n_tuners + 1, sizeof *out->series);
    out->values = rlt_calloc((size_t)rep->n_tuners * 4 * (size_t)n_grid + 1, sizeof *out->values);
    int *cursor = rlt_calloc((size_t)rep->n_runs + 1, sizeof *cursor);
    if (!out->series || !out->values || !cursor) {
        rlt_free(cursor);
        rlt_report_plot_free(out);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory drawing a plot");
    }
    double *v = out->values;
    int n_series = 0;
    for (int t = 0; t < rep->n_tuners && n_grid > 0; t++) {
        int n_runs = 0;
        for (int i = 0; i < rep->n_runs; i++) {
            const rlt_report_run *r = &rep->runs[i];
            cursor[i] = -1; /* the index of the run's last point at or before x */
            n_runs += r->workload == w && r->tuner == t && r->n_points > 0;
        }
        if (n_runs == 0) continue;
        double *x = v, *y = v + n_grid, *lo = v + 2 * n_grid, *hi = v + 3 * n_grid;
        v += 4 * n_grid;
        int n = 0;
        for (int k = 0; k < n_grid; k++) {
            double at = x_max * (k + 1) / n_grid, sum = 0, min = INFINITY, max = -INFINITY;
            bool is_known = true;
            for (int i = 0; i < rep->n_runs; i++) {
                const rlt_report_run *r = &rep->runs[i];
                if (r->workload != w || r->tuner != t || r->n_points == 0) continue;
                /* a run holds its last estimate once its points end */
                while (cursor[i] + 1 < r->n_points && point_x(&r->points[cursor[i] + 1], by_time) <= at) cursor[i]++;
                double e = cursor[i] >= 0 ? r->points[cursor[i]].latency_ms : INFINITY;
                if (!isfinite(e)) is_known = false;
                sum += e;
                min = RLT_MIN(min, e);
                max = RLT_MAX(max, e);
            }
            /* drawn from where every run of the tuner has an estimate */
            if (!is_known) continue;
            x[n] = at;
            y[n] = sum / n_runs;
            lo[n] = min;
            hi[n] = max;
            n++;
        }
        /* a tuner none of whose points is known (a budget below a round of
         * every task) has no line, and is not in the legend either */
        if (n > 0)
            out->series[n_series++] =
                (rlt_plot_series){.label = rep->tuners[t].label, .n = n, .x = x, .y = y, .lo = lo, .hi = hi};
    }
    rlt_free(cursor);
    const rlt_report_workload *k = &rep->workloads[w];
    snprintf(out->title, sizeof out->title, "%s: latency estimate over %s", k->spec,
             by_time ? "tuning time" : "trials");
    out->plot = (rlt_plot){
        .title = out->title,
        .x_label = by_time ? "tuning time (s)" : "trials (measurements of the model's tasks)",
        .y_label = "latency estimate (ms): sum of weight x best kernel time",
        .band_note = "line: mean over seeds; band: min to max",
        .n_series = n_series,
        .series = out->series,
        .is_legend_top = true,
    };
    return RLT_STATUS_OK;
}

/* ---- results.json ---------------------------------------------------------------- */

static bool put(cJSON *obj, const char *key, cJSON *item)
{
    if (!item) return false;
    return cJSON_AddItemToObject(obj, key, item);
}

static bool push(cJSON *arr, cJSON *item) { return item && cJSON_AddItemToArray(arr, item); }

/* v, or null when it is not a number (an unknown estimate, a median of
 * nothing) or !is_known */
static cJSON *num_or_null(double v, bool is_known)
{
    return is_known && isfinite(v) ? rlt_json_number(v) : cJSON_CreateNull();
}

static cJSON *latency_json(const rlt_report_latency *l)
{
    cJSON *o = cJSON_CreateObject();
    bool m = l->is_measured;
    bool is_ok = o && put(o, "measured", cJSON_CreateBool(m)) && put(o, "median_ms", num_or_null(l->median_ms, m)) &&
                 put(o, "min_ms", num_or_null(l->min_ms, m)) && put(o, "repeat", rlt_json_number(m ? l->repeat : 0)) &&
                 put(o, "checked", cJSON_CreateBool(m && l->is_checked)) &&
                 put(o, "correct", cJSON_CreateBool(m && l->is_checked && l->is_correct)) &&
                 put(o, "max_error", num_or_null(l->max_error, m && l->is_checked)) &&
                 put(o, "max_reference", num_or_null(l->max_reference, m && l->is_checked)) &&
                 put(o, "tasks", rlt_json_number(l->n_tasks)) &&
                 put(o, "tasks_tuned", rlt_json_number(l->n_tasks_tuned)) &&
                 put(o, "compile_s", rlt_json_number(l->compile_s));
    if (!is_ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static bool put_metrics(const rlt_report *rep, int w, cJSON *arr)
{
    bool is_ok = true;
    for (int t = 0; t < rep->n_tuners && is_ok; t++) {
        rlt_report_model_stats s;
        rlt_report_model_stats_compute(rep, w, t, &s);
        cJSON *m = cJSON_CreateObject(), *lat = NULL, *tuning = NULL;
        bool has = s.n_runs > 0, has_lat = s.n_measured > 0;
        is_ok = push(arr, m) && put(m, "tuner", cJSON_CreateString(rep->tuners[t].label)) &&
                put(m, "runs", rlt_json_number(s.n_runs)) && put(m, "measured", rlt_json_number(s.n_measured)) &&
                put(m, "correct", rlt_json_number(s.n_correct)) &&
                put(m, "estimate_ms", num_or_null(s.estimate_median_ms, has)) &&
                put(m, "latency_ms", lat = cJSON_CreateObject()) &&
                put(lat, "median", num_or_null(s.latency_median_ms, has_lat)) &&
                put(lat, "min", num_or_null(s.latency_min_ms, has_lat)) &&
                put(lat, "max", num_or_null(s.latency_max_ms, has_lat)) &&
                put(m, "speedup", num_or_null(s.speedup_median, s.speedup_median > 0)) &&
                put(m, "trials", num_or_null(s.trials_median, has)) &&
                put(m, "tuning_s", tuning = cJSON_CreateObject()) &&
                put(tuning, "median", num_or_null(s.tuning_median_s, has)) &&
                put(tuning, "total", rlt_json_number(s.tuning_total_s));
    }
    return is_ok;
}

static bool put_workloads(const rlt_report *rep, cJSON *root)
{
    cJSON *arr = cJSON_CreateArray();
    bool is_ok = put(root, "workloads", arr);
    for (int w = 0; w < rep->n_workloads && is_ok; w++) {
        const rlt_report_workload *k = &rep->workloads[w];
        char time_stem[128], trials_stem[128], file[160];
        rlt_report_model_plot_stem(rep, w, true, time_stem, sizeof time_stem);
        rlt_report_model_plot_stem(rep, w, false, trials_stem, sizeof trials_stem);
        cJSON *o = cJSON_CreateObject(), *plots = NULL, *metrics = NULL;
        is_ok = push(arr, o) && put(o, "model", cJSON_CreateString(k->model ? k->model : "")) &&
                put(o, "label", cJSON_CreateString(k->spec)) && put(o, "target", cJSON_CreateString(k->target)) &&
                put(o, "tasks", rlt_json_number(k->n_tasks)) && put(o, "flops", rlt_json_number(k->flops)) &&
                put(o, "untuned", latency_json(&k->untuned)) && put(o, "plots", plots = cJSON_CreateObject());
        snprintf(file, sizeof file, "%s.svg", time_stem);
        is_ok = is_ok && put(plots, "time", cJSON_CreateString(file));
        snprintf(file, sizeof file, "%s.svg", trials_stem);
        is_ok = is_ok && put(plots, "trials", cJSON_CreateString(file)) &&
                put(o, "metrics", metrics = cJSON_CreateArray()) && put_metrics(rep, w, metrics);
    }
    return is_ok;
}

static bool put_runs(const rlt_report *rep, cJSON *root)
{
    cJSON *arr = cJSON_CreateArray();
    bool is_ok = put(root, "runs", arr);
    for (int i = 0; i < rep->n_runs && is_ok; i++) {
        const rlt_report_run *r = &rep->runs[i];
        cJSON *o = cJSON_CreateObject(), *curve = NULL;
        is_ok = push(arr, o) && put(o, "workload", rlt_json_number(r->workload)) &&
                put(o, "model", cJSON_CreateString(rep->workloads[r->workload].spec)) &&
                put(o, "tuner", cJSON_CreateString(rep->tuners[r->tuner].label)) &&
                put(o, "seed", rlt_json_number((double)r->seed)) &&
                put(o, "db", cJSON_CreateString(r->db ? r->db : "")) &&
                put(o, "trials", rlt_json_number(r->n_model_trials)) &&
                put(o, "new_trials", rlt_json_number(r->n_new_trials)) &&
                put(o, "tuning_s", rlt_json_number(r->tuning_s)) &&
                put(o, "estimate_ms", num_or_null(r->estimate_ms, true)) &&
                put(o, "ended", cJSON_CreateString(r->ended ? r->ended : "")) &&
                put(o, "latency", latency_json(&r->latency)) && put(o, "curve", curve = cJSON_CreateArray());
        for (int k = 0; k < r->n_points && is_ok; k++) {
            const rlt_report_point *p = &r->points[k];
            cJSON *a = cJSON_CreateArray();
            is_ok = push(curve, a) && push(a, rlt_json_number(p->n_trials)) && push(a, rlt_json_number(p->wall_s)) &&
                    push(a, num_or_null(p->latency_ms, true));
        }
    }
    return is_ok;
}

static bool put_tuners(const rlt_report *rep, cJSON *root)
{
    cJSON *arr = cJSON_CreateArray();
    bool is_ok = put(root, "tuners", arr);
    for (int t = 0; t < rep->n_tuners && is_ok; t++) {
        const rlt_report_tuner *tu = &rep->tuners[t];
        cJSON *o = cJSON_CreateObject();
        is_ok = push(arr, o) && put(o, "label", cJSON_CreateString(tu->label)) &&
                put(o, "name", cJSON_CreateString(tu->name)) && put(o, "options", cJSON_Parse(tu->options_json));
    }
    return is_ok;
}

char *rlt_report_model_json(const rlt_report *rep)
{
    cJSON *root = cJSON_CreateObject(), *seeds = NULL, *machine = NULL;
    bool is_ok = root && put(root, "format", cJSON_CreateString("rltune-experiment-results")) &&
                 put(root, "v", rlt_json_number(RLT_REPORT_FORMAT_VERSION)) &&
                 put(root, "kind", cJSON_CreateString("models")) && put(root, "name", cJSON_CreateString(rep->name)) &&
                 put(root, "description", cJSON_CreateString(rep->description)) &&
                 put(root, "config_file", cJSON_CreateString(rep->config_path)) &&
                 put(root, "measure", cJSON_CreateString("live")) &&
                 put(root, "mode", cJSON_CreateString(rep->is_benchmark ? "benchmark" : "tune")) &&
                 put(root, "trials", num_or_null(rep->n_trials, rep->n_trials > 0)) &&
                 put(root, "batch", rlt_json_number(rep->batch_size)) &&
                 put(root, "time_budget_s", num_or_null(rep->time_budget_s, rep->time_budget_s > 0)) &&
                 put(root, "run_repeat", rlt_json_number(rep->run_repeat)) &&
                 put(root, "rule_seeds", rlt_json_number(rep->rule_seeds)) &&
                 put(root, "threads", rlt_json_number(rep->n_threads)) &&
                 put(root, "records_dir", cJSON_CreateString(rep->records_dir ? rep->records_dir : "")) &&
                 put(root, "seeds", seeds = cJSON_CreateArray());
    for (int s = 0; s < rep->n_seeds && is_ok; s++) is_ok = push(seeds, rlt_json_number((double)rep->seeds[s]));
    is_ok = is_ok && put(root, "machine", machine = cJSON_CreateObject()) &&
            put(machine, "cpu", cJSON_CreateString(rep->machine.cpu_model)) &&
            put(machine, "cores", rlt_json_number(rep->machine.n_cores)) &&
            put(machine, "vector_floats", rlt_json_number(rep->machine.vector_floats)) &&
            put(machine, "fma", cJSON_CreateBool(rep->machine.has_fma)) &&
            put(root, "runs_planned", rlt_json_number(rep->n_runs_planned)) &&
            put(root, "runs_done", rlt_json_number(rep->n_runs)) &&
            put(root, "interrupted", cJSON_CreateBool(rep->was_stopped)) && put_tuners(rep, root) &&
            put_workloads(rep, root) && put_runs(rep, root);
    return rlt_report_json_text(root, is_ok);
}

/* ---- table.md ---------------------------------------------------------------------- */

/* A latency in ms, "-" when not a number. */
static void ms_text(double ms, bool is_known, rlt_str *out)
{
    if (is_known && isfinite(ms))
        rlt_str_printf(out, "%.4g", ms);
    else
        rlt_str_append(out, "-");
}

void rlt_report_model_row_cells(const rlt_report *rep, int w, int t, rlt_str cells[RLT_REPORT_MODEL_N_CELLS])
{
    rlt_report_model_stats s;
    rlt_report_model_stats_compute(rep, w, t, &s);
    const rlt_report_latency *u = &rep->workloads[w].untuned;
    rlt_str_printf(&cells[0], "%d", s.n_runs);
    ms_text(u->median_ms, u->is_measured, &cells[1]);
    ms_text(s.estimate_median_ms, s.n_runs > 0, &cells[2]);
    ms_text(s.latency_median_ms, s.n_measured > 0, &cells[3]);
    if (s.n_measured > 1) {
        rlt_str_printf(&cells[3], " (%.4g-%.4g)", s.latency_min_ms, s.latency_max_ms);
    }
    if (s.speedup_median > 0)
        rlt_str_printf(&cells[4], "%.2fx", s.speedup_median);
    else
        rlt_str_append(&cells[4], "-");
    if (s.n_runs > 0) {
        rlt_str_printf(&cells[5], "%g", s.trials_median);
        rlt_str_printf(&cells[6], s.tuning_median_s >= 100 ? "%.0f" : "%.3g", s.tuning_median_s);
    } else {
        rlt_str_append(&cells[5], "-");
        rlt_str_append(&cells[6], "-");
    }
    rlt_str_printf(&cells[7], "%d/%d", s.n_correct, s.n_measured);
}

void rlt_report_model_summary(const rlt_report *rep, rlt_str *out)
{
    rlt_str_printf(out, "%s: %d model%s x %d tuner%s x %d seed%s", rep->is_benchmark ? "Benchmark mode" : "Tune mode",
                   rep->n_workloads, rep->n_workloads == 1 ? "" : "s", rep->n_tuners, rep->n_tuners == 1 ? "" : "s",
                   rep->n_seeds, rep->n_seeds == 1 ? "" : "s");
    if (rep->is_benchmark) {
        rlt_str_printf(out, ", each run's network compiled from its database in %s and timed, nothing tuned",
                       rep->records_dir);
    } else {
        rlt_str_printf(out, "; a run's budget: %d trials shared by the model's tasks (rounds of %d)", rep->n_trials,
                       rep->batch_size);
        if (rep->time_budget_s > 0) rlt_str_printf(out, " and %g s of tuning", rep->time_budget_s);
        if (rep->rule_seeds > 0)
            rlt_str_printf(out, ", each task's tuning starting from %d rule-built configurations", rep->rule_seeds);
    }
    rlt_str_printf(out, "; networks timed over %d runs at %d thread%s; %d of %d runs done%s.", rep->run_repeat,
                   rep->n_threads, rep->n_threads == 1 ? "" : "s", rep->n_runs, rep->n_runs_planned,
                   rep->was_stopped ? " (interrupted)" : "");
}

void rlt_report_model_about(const rlt_report *rep, int w, rlt_str *out)
{
    const rlt_report_workload *k = &rep->workloads[w];
    const rlt_report_latency *u = &k->untuned;
    rlt_str_printf(out, "%s: %d task%s, %.3g GFLOP in their kernels; untuned (seed schedules): ", k->model,
                   k->n_tasks, k->n_tasks == 1 ? "" : "s", k->flops * 1e-9);
    if (u->is_measured)
        rlt_str_printf(out, "%.4g ms (median of %d runs; min %.4g ms), output %s.", u->median_ms, u->repeat,
                       u->min_ms, !u->is_checked ? "not checked" : u->is_correct ? "correct" : "WRONG");
    else
        rlt_str_append(out, "not timed.");
}

const char *const rlt_report_model_columns_note =
    "untuned ms: the network compiled from seed schedules; estimate ms: the sum over the model's tasks of weight x "
    "best kernel time found (kernels alone), the median over the seeds; measured ms: the network compiled from the "
    "run's records and timed (every node included, the median of its timed runs), the median over the seeds (min-max "
    "with several); speedup: untuned / measured, the median over the seeds; trials: measurements of the model's "
    "tasks in the run's database; tuning s: the tuning's wall time (earlier processes' included, compiling and timing "
    "the network not); correct: runs whose output matched the reference / runs timed.";

void rlt_report_model_table_md(const rlt_report *rep, rlt_str *out)
{
    rlt_str_printf(out, "# Experiment %s\n\n", rep->name);
    if (rep->description[0]) rlt_str_printf(out, "%s\n\n", rep->description);
    rlt_report_model_summary(rep, out);
    rlt_str_append(out, "\n");
    rlt_str cells[RLT_REPORT_MODEL_N_CELLS];
    for (int i = 0; i < RLT_REPORT_MODEL_N_CELLS; i++) rlt_str_init(&cells[i]);
    for (int w = 0; w < rep->n_workloads; w++) {
        rlt_str_printf(out, "\n## %s\n\n", rep->workloads[w].spec);
        rlt_report_model_about(rep, w, out);
        rlt_str_append(out, "\n\n| tuner | runs | untuned ms | estimate ms | measured ms | speedup | trials | "
                            "tuning s | correct |\n|---|---:|---:|---:|---|---:|---:|---:|---:|\n");
        for (int t = 0; t < rep->n_tuners; t++) {
            for (int i = 0; i < RLT_REPORT_MODEL_N_CELLS; i++) rlt_str_clear(&cells[i]);
            rlt_report_model_row_cells(rep, w, t, cells);
            rlt_str_append(out, "| ");
            for (const char *p = rep->tuners[t].label; *p; p++) { /* a | would end the cell */
                if (*p == '|') rlt_str_append(out, "\\");
                rlt_str_appendn(out, p, 1);
            }
            for (int i = 0; i < RLT_REPORT_MODEL_N_CELLS; i++) {
                rlt_str_append(out, " | ");
                if (cells[i].has_failed) out->has_failed = true;
                rlt_str_append(out, cells[i].data ? cells[i].data : "");
            }
            rlt_str_append(out, " |\n");
        }
    }
    for (int i = 0; i < RLT_REPORT_MODEL_N_CELLS; i++) rlt_str_free(&cells[i]);
    rlt_str_printf(out, "\n%s\n", rlt_report_model_columns_note);
}
