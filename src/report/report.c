/*
 * report.c - an experiment's outputs: the plot of each workload
 * (rlt_report_plot_make: the mean over seeds of the best-so-far curve and the
 * min-max band, per tuner), results.json (rlt_report_json, format in
 * docs/formats.md), table.md (rlt_report_table_md), and the writing of the
 * whole output directory (rlt_report_write; report.html is html.c's).
 *
 * Every file is written atomically (rlt_file_write). Nothing in results.json
 * depends on the clock but the times ("wall_s", "tuner_s"), so two runs of
 * one replayed experiment give the same file apart from those.
 */
#include "report/report.h"

#include "core/json_number.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define GNUPLOT_TIMEOUT_S 30.0

/* ---- plots ------------------------------------------------------------------- */

void rlt_report_plot_stem(const rlt_report *rep, int w, char *buf, size_t cap)
{
    char stem[96];
    int n = snprintf(stem, sizeof stem, "w%d-", w + 1);
    for (const char *p = rep->workloads[w].spec; *p && n < 80; p++) {
        unsigned char ch = (unsigned char)*p;
        bool is_ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
                     ch == '-' || ch == '_';
        stem[n++] = is_ok ? (char)ch : '_';
    }
    stem[n] = '\0';
    snprintf(buf, cap, "%s", stem);
}

rlt_status rlt_report_plot_make(const rlt_report *rep, int w, rlt_report_plot *out, rlt_diag *diag)
{
    memset(out, 0, sizeof *out);
    out->series = rlt_calloc((size_t)rep->n_tuners, sizeof *out->series);
    size_t n_values = 0;
    for (int t = 0; t < rep->n_tuners; t++) {
        int n = 0;
        for (int i = 0; i < rep->n_runs; i++)
            if (rep->runs[i].workload == w && rep->runs[i].tuner == t) n = RLT_MAX(n, rep->runs[i].n_trials);
        n_values += 3 * (size_t)n;
    }
    out->values = rlt_calloc(n_values ? n_values : 1, sizeof *out->values);
    if (!out->series || !out->values) {
        rlt_report_plot_free(out);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory drawing a plot");
    }
    double *v = out->values;
    int n_series = 0;
    for (int t = 0; t < rep->n_tuners; t++) {
        int n = 0, n_runs = 0;
        for (int i = 0; i < rep->n_runs; i++)
            if (rep->runs[i].workload == w && rep->runs[i].tuner == t) {
                n = RLT_MAX(n, rep->runs[i].n_trials);
                n_runs++;
            }
        if (n_runs == 0) continue;
        double *y = v, *lo = v + n, *hi = v + 2 * n;
        v += 3 * n;
        for (int k = 0; k < n; k++) {
            double sum = 0, min = INFINITY, max = -INFINITY;
            for (int i = 0; i < rep->n_runs; i++) {
                const rlt_report_run *run = &rep->runs[i];
                if (run->workload != w || run->tuner != t) continue;
                /* a run that ended early (early stopping, space exhausted)
                 * holds its last best */
                int m = run->n_trials;
                double b = m == 0 ? 0 : run->curve[RLT_MIN(k, m - 1)];
                sum += b;
                min = RLT_MIN(min, b);
                max = RLT_MAX(max, b);
            }
            y[k] = sum / n_runs;
            lo[k] = min;
            hi[k] = max;
        }
        out->series[n_series++] =
            (rlt_plot_series){.label = rep->tuners[t].label, .n = n, .y = y, .lo = lo, .hi = hi};
    }
    const rlt_report_workload *k = &rep->workloads[w];
    snprintf(out->title, sizeof out->title, "%s%s", k->spec, rep->is_replay ? " (replayed)" : "");
    snprintf(out->reference, sizeof out->reference, "best known: %.2f GFLOP/s", k->best_known_gflops);
    out->plot = (rlt_plot){
        .title = out->title,
        .x_label = "measurements",
        .y_label = "best GFLOP/s so far",
        .band_note = "line: mean over seeds; band: min to max",
        .n_series = n_series,
        .series = out->series,
        .reference_y = k->best_known_gflops,
        .reference_label = out->reference,
    };
    return RLT_STATUS_OK;
}

void rlt_report_plot_free(rlt_report_plot *p)
{
    rlt_free(p->series);
    rlt_free(p->values);
    p->series = NULL;
    p->values = NULL;
}

/* ---- results.json -------------------------------------------------------------- */

static cJSON *num_or_null(double v, bool is_known)
{
    return is_known && isfinite(v) ? rlt_json_number(v) : cJSON_CreateNull();
}

/* Adds item to obj under key; false when item is NULL (out of memory). */
static bool put(cJSON *obj, const char *key, cJSON *item)
{
    if (!item) return false;
    return cJSON_AddItemToObject(obj, key, item);
}

static bool push(cJSON *arr, cJSON *item) { return item && cJSON_AddItemToArray(arr, item); }

static cJSON *str_or_null(const char *s) { return s ? cJSON_CreateString(s) : cJSON_CreateNull(); }

static bool put_metrics(const rlt_report *rep, int w, cJSON *arr)
{
    bool is_ok = true;
    for (int t = 0; t < rep->n_tuners; t++) {
        const rlt_report_stats *s = &rep->stats[w * rep->n_tuners + t];
        cJSON *m = cJSON_CreateObject();
        if (!push(arr, m)) return false;
        bool has = s->n_runs > 0;
        is_ok &= put(m, "tuner", cJSON_CreateString(rep->tuners[t].label));
        is_ok &= put(m, "runs", rlt_json_number(s->n_runs));
        cJSON *best = cJSON_CreateObject();
        is_ok &= put(m, "best_gflops", best);
        if (best) {
            is_ok &= put(best, "median", num_or_null(s->best_median, has));
            is_ok &= put(best, "min", num_or_null(s->best_min, has));
            is_ok &= put(best, "max", num_or_null(s->best_max, has));
        }
        cJSON *reach = cJSON_CreateArray();
        is_ok &= put(m, "reach", reach);
        for (int f = 0; reach && f < RLT_REPORT_N_REACH; f++) {
            cJSON *x = cJSON_CreateObject();
            if (!push(reach, x)) return false;
            is_ok &= put(x, "fraction", rlt_json_number(rlt_report_reach_fractions[f]));
            is_ok &= put(x, "median_measurements", num_or_null(s->reach_median[f], has && s->is_reached[f]));
            is_ok &= put(x, "runs_reached", rlt_json_number(s->n_reached[f]));
        }
        cJSON *wall = cJSON_CreateObject();
        is_ok &= put(m, "wall_s", wall);
        if (wall) {
            is_ok &= put(wall, "median", num_or_null(s->wall_median_s, has));
            is_ok &= put(wall, "total", rlt_json_number(s->wall_total_s));
        }
        cJSON *tuner_time = cJSON_CreateObject();
        is_ok &= put(m, "tuner_s", tuner_time);
        if (tuner_time) {
            is_ok &= put(tuner_time, "median", num_or_null(s->tuner_median_s, has));
            is_ok &= put(tuner_time, "total", rlt_json_number(s->tuner_total_s));
        }
        is_ok &= put(m, "failed", rlt_json_number(s->n_failed));
        is_ok &= put(m, "n_absent", rlt_json_number(s->n_absent));
    }
    return is_ok;
}

static bool put_workloads(const rlt_report *rep, cJSON *root)
{
    cJSON *arr = cJSON_CreateArray();
    if (!put(root, "workloads", arr)) return false;
    bool is_ok = true;
    for (int w = 0; w < rep->n_workloads; w++) {
        const rlt_report_workload *k = &rep->workloads[w];
        cJSON *o = cJSON_CreateObject();
        if (!push(arr, o)) return false;
        char stem[128], file[160];
        rlt_report_plot_stem(rep, w, stem, sizeof stem);
        snprintf(file, sizeof file, "%s.svg", stem);
        is_ok &= put(o, "op", cJSON_CreateString(k->spec));
        is_ok &= put(o, "dataset", str_or_null(k->dataset));
        is_ok &= put(o, "target", cJSON_CreateString(k->target));
        if (rep->is_replay) {
            cJSON *ds = cJSON_CreateObject();
            is_ok &= put(o, "dataset_info", ds);
            if (ds) {
                is_ok &= put(ds, "complete", cJSON_CreateBool(k->dataset_info.is_complete));
                is_ok &= put(ds, "n_configs", rlt_json_number(k->dataset_info.n_configs));
                is_ok &= put(ds, "fixed", cJSON_CreateString(k->dataset_info.fixed));
                is_ok &= put(ds, "n_threads", rlt_json_number(k->dataset_info.n_threads));
            }
        } else {
            is_ok &= put(o, "dataset_info", cJSON_CreateNull());
        }
        cJSON *best = cJSON_CreateObject();
        is_ok &= put(o, "best_known", best);
        if (best) {
            is_ok &= put(best, "gflops", rlt_json_number(k->best_known_gflops));
            is_ok &= put(best, "source", cJSON_CreateString(k->best_known_source));
        }
        is_ok &= put(o, "plot", cJSON_CreateString(file));
        cJSON *metrics = cJSON_CreateArray();
        is_ok &= put(o, "metrics", metrics) && put_metrics(rep, w, metrics);
    }
    return is_ok;
}

static bool put_runs(const rlt_report *rep, cJSON *root)
{
    cJSON *arr = cJSON_CreateArray();
    if (!put(root, "runs", arr)) return false;
    bool is_ok = true;
    for (int i = 0; i < rep->n_runs; i++) {
        const rlt_report_run *run = &rep->runs[i];
        double known = rep->workloads[run->workload].best_known_gflops;
        cJSON *o = cJSON_CreateObject();
        if (!push(arr, o)) return false;
        is_ok &= put(o, "workload", rlt_json_number(run->workload));
        is_ok &= put(o, "op", cJSON_CreateString(rep->workloads[run->workload].spec));
        is_ok &= put(o, "tuner", cJSON_CreateString(rep->tuners[run->tuner].label));
        is_ok &= put(o, "seed", rlt_json_number((double)run->seed));
        is_ok &= put(o, "carried_agent", cJSON_CreateBool(run->had_agent));
        is_ok &= put(o, "trials", rlt_json_number(run->n_trials));
        is_ok &= put(o, "best_gflops", rlt_json_number(run->best_gflops));
        is_ok &= put(o, "best_config",
                     run->best_gflops > 0 ? cJSON_CreateString(run->best_config) : cJSON_CreateNull());
        cJSON *reach = cJSON_CreateArray();
        is_ok &= put(o, "reach", reach);
        for (int f = 0; reach && f < RLT_REPORT_N_REACH; f++) {
            int at = rlt_report_reach(run->curve, run->n_trials, known, rlt_report_reach_fractions[f]);
            is_ok &= push(reach, num_or_null(at, at > 0));
        }
        is_ok &= put(o, "wall_s", rlt_json_number(run->wall_s));
        is_ok &= put(o, "tuner_s", rlt_json_number(run->tuner_s));
        is_ok &= put(o, "measured", rlt_json_number(run->n_measured));
        is_ok &= put(o, "from_records", rlt_json_number(run->n_from_db));
        is_ok &= put(o, "failed", rlt_json_number(run->n_failed));
        is_ok &= put(o, "n_absent", rlt_json_number(run->n_absent));
        is_ok &= put(o, "stopped_early", cJSON_CreateBool(run->was_stopped_early));
        is_ok &= put(o, "space_exhausted", cJSON_CreateBool(run->was_exhausted));
        cJSON *curve = cJSON_CreateArray();
        is_ok &= put(o, "curve", curve);
        for (int k = 0; curve && k < run->n_trials; k++) is_ok &= push(curve, rlt_json_number(run->curve[k]));
    }
    return is_ok;
}

static bool put_tuners(const rlt_report *rep, cJSON *root)
{
    cJSON *arr = cJSON_CreateArray();
    if (!put(root, "tuners", arr)) return false;
    bool is_ok = true;
    for (int t = 0; t < rep->n_tuners; t++) {
        const rlt_report_tuner *tu = &rep->tuners[t];
        cJSON *o = cJSON_CreateObject();
        if (!push(arr, o)) return false;
        is_ok &= put(o, "label", cJSON_CreateString(tu->label));
        is_ok &= put(o, "name", cJSON_CreateString(tu->name));
        is_ok &= put(o, "options", cJSON_Parse(tu->options_json));
        is_ok &= put(o, "carry_agent", cJSON_CreateBool(tu->carry_agent));
    }
    return is_ok;
}


char *rlt_report_json_text(cJSON *root, bool is_ok)
{
    char *text = NULL;
    if (is_ok) {
        char *printed = cJSON_PrintUnformatted(root);
        if (printed) {
            text = rlt_strdup(printed);
            cJSON_free(printed);
        }
    }
    cJSON_Delete(root);
    return text;
}

char *rlt_report_json(const rlt_report *rep)
{
    if (rep->is_model) return rlt_report_model_json(rep);
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    bool is_ok = true;
    is_ok &= put(root, "format", cJSON_CreateString("rltune-experiment-results"));
    is_ok &= put(root, "v", rlt_json_number(RLT_REPORT_FORMAT_VERSION));
    is_ok &= put(root, "name", cJSON_CreateString(rep->name));
    is_ok &= put(root, "description", cJSON_CreateString(rep->description));
    is_ok &= put(root, "config_file", cJSON_CreateString(rep->config_path));
    is_ok &= put(root, "measure", cJSON_CreateString(rep->is_replay ? "replay" : "live"));
    is_ok &= put(root, "db", str_or_null(rep->db));
    is_ok &= put(root, "trials", rlt_json_number(rep->n_trials));
    is_ok &= put(root, "batch", rlt_json_number(rep->batch_size));
    is_ok &= put(root, "early_stopping", num_or_null(rep->early_stopping, rep->early_stopping > 0));
    cJSON *seeds = cJSON_CreateArray();
    is_ok &= put(root, "seeds", seeds);
    for (int s = 0; seeds && s < rep->n_seeds; s++)
        is_ok &= push(seeds, rlt_json_number((double)rep->seeds[s]));
    cJSON *machine = cJSON_CreateObject();
    is_ok &= put(root, "machine", machine);
    if (machine) {
        is_ok &= put(machine, "cpu", cJSON_CreateString(rep->machine.cpu_model));
        is_ok &= put(machine, "cores", rlt_json_number(rep->machine.n_cores));
        is_ok &= put(machine, "vector_floats", rlt_json_number(rep->machine.vector_floats));
        is_ok &= put(machine, "fma", cJSON_CreateBool(rep->machine.has_fma));
    }
    cJSON *fractions = cJSON_CreateArray();
    is_ok &= put(root, "reach_fractions", fractions);
    for (int f = 0; fractions && f < RLT_REPORT_N_REACH; f++)
        is_ok &= push(fractions, rlt_json_number(rlt_report_reach_fractions[f]));
    is_ok &= put(root, "runs_planned", rlt_json_number(rep->n_runs_planned));
    is_ok &= put(root, "runs_done", rlt_json_number(rep->n_runs));
    is_ok &= put(root, "interrupted", cJSON_CreateBool(rep->was_stopped));
    is_ok &= put_tuners(rep, root) && put_workloads(rep, root) && put_runs(rep, root);
    return rlt_report_json_text(root, is_ok);
}

/* ---- table.md ---------------------------------------------------------------------- */

void rlt_report_table_md(const rlt_report *rep, rlt_str *out)
{
    if (rep->is_model) {
        rlt_report_model_table_md(rep, out);
        return;
    }
    bool is_replay = rep->is_replay;
    rlt_str_printf(out, "# Experiment %s\n\n", rep->name);
    if (rep->description[0]) rlt_str_printf(out, "%s\n\n", rep->description);
    rlt_str_printf(out, "%s; %d workload%s x %d tuner%s x %d seed%s, %d trials a run; %d of %d runs done%s.\n",
                   is_replay ? "Replayed from datasets" : "Measured live", rep->n_workloads,
                   rep->n_workloads == 1 ? "" : "s", rep->n_tuners, rep->n_tuners == 1 ? "" : "s", rep->n_seeds,
                   rep->n_seeds == 1 ? "" : "s", rep->n_trials, rep->n_runs, rep->n_runs_planned,
                   rep->was_stopped ? " (interrupted)" : "");
    for (int w = 0; w < rep->n_workloads; w++) {
        const rlt_report_workload *k = &rep->workloads[w];
        rlt_str_printf(out, "\n## %s\n\n", k->spec);
        if (k->best_known_gflops > 0)
            rlt_str_printf(out, "Best known: %.2f GFLOP/s, %s.\n\n", k->best_known_gflops, k->best_known_source);
        else
            rlt_str_printf(out, "Best known: none (nothing measured OK): no level can be reached.\n\n");
        rlt_str_printf(out, "| tuner | runs | best GFLOP/s: median (min-max) | to 90%% | to 95%% | to 99%% | %s |%s\n",
                       is_replay ? "tuner ms (median)" : "wall s (median) | tuner s (median)",
                       is_replay ? " absent |" : "");
        rlt_str_printf(out, "|---|---:|---|---:|---:|---:|---:|%s\n", is_replay ? "---:|" : "---:|");
        for (int t = 0; t < rep->n_tuners; t++) {
            const rlt_report_stats *s = &rep->stats[w * rep->n_tuners + t];
            rlt_str_append(out, "| ");
            for (const char *p = rep->tuners[t].label; *p; p++) { /* a | would end the cell */
                if (*p == '|') rlt_str_append(out, "\\");
                rlt_str_appendn(out, p, 1);
            }
            rlt_str_printf(out, " | %d | ", s->n_runs);
            if (s->n_runs > 0)
                rlt_str_printf(out, "%.2f (%.2f-%.2f)", s->best_median, s->best_min, s->best_max);
            else
                rlt_str_append(out, "-");
            for (int f = 0; f < RLT_REPORT_N_REACH; f++) {
                rlt_str_append(out, " | ");
                rlt_report_reach_text(s, f, out);
            }
            if (s->n_runs > 0 && is_replay)
                rlt_str_printf(out, " | %.3g |", s->tuner_median_s * 1e3);
            else if (s->n_runs > 0)
                rlt_str_printf(out, " | %.3g | %.3g |", s->wall_median_s, s->tuner_median_s);
            else
                rlt_str_append(out, is_replay ? " | - |" : " | - | - |");
            if (is_replay) rlt_str_printf(out, " %d |", s->n_absent);
            rlt_str_append(out, "\n");
        }
    }
    rlt_str_printf(out, "\nto N%%: measurements until the best found first reached N%% of the best known; the median "
                        "over the seeds (a seed that never reached it counts as never), then (runs that reached it / "
                        "runs). %s\n",
                   is_replay ? "tuner ms: the time spent in the tuner (proposing and learning), in milliseconds; "
                                  "nothing is measured in a replay."
                                : "wall s: the run's wall time, building and measuring included; tuner s: the part "
                                  "of it spent in the tuner (proposing and learning).");
}

/* ---- the directory ---------------------------------------------------------------------- */

static rlt_status write_file(const char *dir, const char *name, const char *data, size_t len, rlt_diag *diag)
{
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= sizeof path)
        return rlt_fail(diag, RLT_STATUS_IO_ERROR, "path too long: %s/%s", dir, name);
    return rlt_file_write(path, data, len, diag);
}

static rlt_status write_str(const char *dir, const char *name, rlt_str *s, rlt_diag *diag)
{
    if (s->has_failed) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory writing %s/%s", dir, name);
    return write_file(dir, name, s->data ? s->data : "", s->len, diag);
}

/* Writes STEM.svg and through gnuplot STEM.png (with STEM.dat and
 * STEM.gp) unless *is_png_off; counts the PNGs drawn in *n_png. */
static rlt_status write_plot(const rlt_plot *plot, const char *dir, const char *stem, rlt_str *text,
                             bool *is_png_off, int *n_png, rlt_report_files *out, rlt_diag *diag)
{
    char name[160], data[160], script[160], png[160];
    snprintf(name, sizeof name, "%s.svg", stem);
    rlt_str_clear(text);
    rlt_svg_plot(plot, true, text);
    rlt_status st = write_str(dir, name, text, diag);
    if (st != RLT_STATUS_OK || *is_png_off) return st;
    snprintf(data, sizeof data, "%s.dat", stem);
    snprintf(script, sizeof script, "%s.gp", stem);
    snprintf(png, sizeof png, "%s.png", stem);
    rlt_diag d = {0};
    bool is_absent = false;
    rlt_status gs = rlt_gnuplot_png(plot, dir, data, script, png, GNUPLOT_TIMEOUT_S, &is_absent, &d);
    if (gs == RLT_STATUS_OUT_OF_MEMORY) {
        st = rlt_fail(diag, gs, "%s", d.message);
    } else if (is_absent) {
        out->is_gnuplot_absent = true;
        *is_png_off = true;
    } else if (gs != RLT_STATUS_OK) {
        /* one failure is enough: the next would most likely fail the
         * same way, perhaps after the same time limit */
        snprintf(out->png_problem, sizeof out->png_problem, "%.500s", d.message);
        *is_png_off = true;
    } else {
        (*n_png)++;
    }
    return st;
}

rlt_status rlt_report_write(const rlt_report *rep, const char *dir, rlt_report_files *out, rlt_diag *diag)
{
    memset(out, 0, sizeof *out);
    rlt_status st = RLT_STATUS_OK;
    rlt_str text;
    rlt_str_init(&text);
    bool is_png_off = false;
    int n_png = 0, n_plots = 0;
    for (int w = 0; w < rep->n_workloads && st == RLT_STATUS_OK; w++) {
        /* a model has two plots: its estimate over tuning time, over trials */
        for (int k = 0; k < (rep->is_model ? 2 : 1) && st == RLT_STATUS_OK; k++) {
            rlt_report_plot plot;
            char stem[128];
            if (rep->is_model) {
                st = rlt_report_model_plot_make(rep, w, k == 0, &plot, diag);
                rlt_report_model_plot_stem(rep, w, k == 0, stem, sizeof stem);
            } else {
                st = rlt_report_plot_make(rep, w, &plot, diag);
                rlt_report_plot_stem(rep, w, stem, sizeof stem);
            }
            if (st != RLT_STATUS_OK) break;
            st = write_plot(&plot.plot, dir, stem, &text, &is_png_off, &n_png, out, diag);
            n_plots++;
            rlt_report_plot_free(&plot);
        }
    }
    out->has_png = n_png == n_plots && !is_png_off;
    if (st == RLT_STATUS_OK) {
        char *json = rlt_report_json(rep);
        if (!json) st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory writing %s/results.json", dir);
        if (json) {
            rlt_str_clear(&text);
            rlt_str_append(&text, json);
            rlt_str_append(&text, "\n");
            rlt_free(json);
            st = write_str(dir, "results.json", &text, diag);
        }
    }
    if (st == RLT_STATUS_OK) {
        rlt_str_clear(&text);
        rlt_report_table_md(rep, &text);
        st = write_str(dir, "table.md", &text, diag);
    }
    if (st == RLT_STATUS_OK) {
        char note[800];
        if (out->has_png)
            snprintf(note, sizeof note, "PNG copies of the plots (drawn by gnuplot) are beside this file.");
        else if (out->is_gnuplot_absent)
            snprintf(note, sizeof note, "No PNG copies of the plots: gnuplot was not found (scripts/install-deps.sh "
                                        "installs gnuplot-nox).");
        else
            snprintf(note, sizeof note, "No PNG copies of the plots: %.600s", out->png_problem);
        rlt_str_clear(&text);
        rlt_report_html(rep, note, &text);
        st = write_str(dir, "report.html", &text, diag);
    }
    rlt_str_free(&text);
    return st;
}
