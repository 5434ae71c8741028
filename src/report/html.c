/*
 * html.c - an experiment's report as one self-contained HTML page
 * (rlt_report_html): what was run and where, per workload its table and
 * its plot (inline SVG), every run, and the config as given. Styles are
 * inline; nothing is fetched from anywhere (no scripts, fonts, style
 * sheets or images), so the file can be mailed or archived on its own.
 * Every piece of text from the config or the machine is escaped. A model
 * experiment's page (rlt_report_model_html) has per model its latency
 * table and two plots, its estimate over tuning time and over trials.
 */
#include "report/report.h"

#include <math.h>
#include <string.h>

static const char style[] =
    "body{font-family:sans-serif;max-width:1060px;margin:1.5em auto;padding:0 1em;color:#222;line-height:1.4}\n"
    "table{border-collapse:collapse;margin:.6em 0}\n"
    "th,td{border:1px solid #ccc;padding:.2em .6em;text-align:right;vertical-align:top}\n"
    "th{background:#f2f2f2}\n"
    ".l{text-align:left}\n"
    "pre{background:#f6f6f6;padding:.8em;overflow-x:auto;font-size:90%}\n"
    ".note{color:#555}\n"
    "figure{margin:1em 0}\n"
    "figcaption{color:#555;font-size:90%}\n"
    "code{background:#f2f2f2;padding:0 .2em}\n";

static void esc(rlt_str *out, const char *text) { rlt_xml_escape(out, text ? text : ""); }

static void cell(rlt_str *out, bool is_left, const char *text)
{
    rlt_str_append(out, is_left ? "<td class=\"l\">" : "<td>");
    esc(out, text);
    rlt_str_append(out, "</td>");
}

static void header(const rlt_report *rep, rlt_str *out)
{
    rlt_str_append(out, "<h1>Experiment ");
    esc(out, rep->name);
    rlt_str_append(out, "</h1>\n");
    if (rep->description[0]) {
        rlt_str_append(out, "<p>");
        esc(out, rep->description);
        rlt_str_append(out, "</p>\n");
    }
    rlt_str_printf(out,
                   "<p>%s: %d workload%s &#215; %d tuner%s &#215; %d seed%s, %d trials a run (batches of %d",
                   rep->is_replay ? "Replayed from datasets (nothing compiled or run)" : "Measured live",
                   rep->n_workloads, rep->n_workloads == 1 ? "" : "s", rep->n_tuners, rep->n_tuners == 1 ? "" : "s",
                   rep->n_seeds, rep->n_seeds == 1 ? "" : "s", rep->n_trials, rep->batch_size);
    if (rep->early_stopping > 0)
        rlt_str_printf(out, ", early stopping after %d without a better one", rep->early_stopping);
    rlt_str_printf(out, "). %d of %d runs done%s.</p>\n", rep->n_runs, rep->n_runs_planned,
                   rep->was_stopped ? ": <strong>interrupted</strong>, the figures below are of the runs that finished"
                                  : "");

    rlt_str_append(out, "<h2>Machine and target</h2>\n<table>\n");
    rlt_str_append(out, "<tr><th class=\"l\">rltune ran on</th>");
    rlt_str str;
    rlt_str_init(&str);
    rlt_str_printf(&str, "%s, %d cores, %d-float vectors%s", rep->machine.cpu_model, rep->machine.n_cores,
                   rep->machine.vector_floats, rep->machine.has_fma ? ", FMA" : "");
    cell(out, true, str.data);
    rlt_str_append(out, "</tr>\n<tr><th class=\"l\">measurements</th>");
    rlt_str_clear(&str);
    if (rep->is_replay)
        rlt_str_append(&str, "answered by each workload's dataset, as measured on the machine of its target "
                             "(below)");
    else
        rlt_str_printf(&str, "built, run and timed here; records in %s (a configuration measured before is read "
                             "back, not measured again)",
                       rep->db);
    cell(out, true, str.data);
    rlt_str_append(out, "</tr>\n");
    for (int w = 0; w < rep->n_workloads; w++) {
        rlt_str_append(out, "<tr><th class=\"l\">target of ");
        esc(out, rep->workloads[w].spec);
        rlt_str_append(out, "</th>");
        cell(out, true, rep->workloads[w].target);
        rlt_str_append(out, "</tr>\n");
    }
    rlt_str_append(out, "</table>\n");
    if (str.has_failed) out->has_failed = true;
    rlt_str_free(&str);
}

static void workload(const rlt_report *rep, int w, rlt_str *out)
{
    const rlt_report_workload *k = &rep->workloads[w];
    rlt_str_append(out, "<h3>");
    esc(out, k->spec);
    rlt_str_append(out, "</h3>\n<p>");
    if (k->best_known_gflops > 0) {
        rlt_str_printf(out, "Best known: <strong>%.2f GFLOP/s</strong>, ", k->best_known_gflops);
        esc(out, k->best_known_source);
        rlt_str_append(out, ".");
    } else {
        rlt_str_append(out, "Best known: none (nothing measured OK), so no level can be reached.");
    }
    if (rep->is_replay) {
        rlt_str_append(out, " Dataset: <code>");
        esc(out, k->dataset);
        rlt_str_printf(out, "</code> (%s, %d configurations", k->dataset_info.is_complete ? "complete" : "sampled",
                       k->dataset_info.n_configs);
        if (k->dataset_info.fixed[0]) {
            rlt_str_append(out, "; fixed knobs <code>");
            esc(out, k->dataset_info.fixed);
            rlt_str_append(out, "</code>");
        }
        rlt_str_append(out, ").");
    }
    rlt_str_append(out, "</p>\n<table>\n<tr><th class=\"l\">tuner</th><th>runs</th><th>best GFLOP/s: median "
                        "(min&#8211;max)</th><th>to 90%</th><th>to 95%</th><th>to 99%</th>");
    rlt_str_printf(out, "<th>%s</th><th>failed</th>%s</tr>\n",
                   rep->is_replay ? "tuner ms (median)" : "wall s (median)</th><th>tuner s (median)",
                   rep->is_replay ? "<th>absent</th>" : "");
    rlt_str text;
    rlt_str_init(&text);
    for (int t = 0; t < rep->n_tuners; t++) {
        const rlt_report_stats *s = &rep->stats[w * rep->n_tuners + t];
        rlt_str_append(out, "<tr>");
        cell(out, true, rep->tuners[t].label);
        rlt_str_printf(out, "<td>%d</td>", s->n_runs);
        rlt_str_clear(&text);
        if (s->n_runs > 0)
            rlt_str_printf(&text, "%.2f (%.2f-%.2f)", s->best_median, s->best_min, s->best_max);
        else
            rlt_str_append(&text, "-");
        cell(out, false, text.data);
        for (int f = 0; f < RLT_REPORT_N_REACH; f++) {
            rlt_str_clear(&text);
            rlt_report_reach_text(s, f, &text);
            cell(out, false, text.data);
        }
        if (s->n_runs > 0 && rep->is_replay)
            rlt_str_printf(out, "<td>%.3g</td>", s->tuner_median_s * 1e3);
        else if (s->n_runs > 0)
            rlt_str_printf(out, "<td>%.3g</td><td>%.3g</td>", s->wall_median_s, s->tuner_median_s);
        else
            rlt_str_append(out, rep->is_replay ? "<td>-</td>" : "<td>-</td><td>-</td>");
        rlt_str_printf(out, "<td>%d</td>", s->n_failed);
        if (rep->is_replay) rlt_str_printf(out, "<td>%d</td>", s->n_absent);
        rlt_str_append(out, "</tr>\n");
    }
    if (text.has_failed) out->has_failed = true;
    rlt_str_free(&text);
    rlt_str_append(out, "</table>\n");
    rlt_report_plot plot;
    if (rlt_report_plot_make(rep, w, &plot, NULL) != RLT_STATUS_OK) {
        out->has_failed = true;
        return;
    }
    char stem[128];
    rlt_report_plot_stem(rep, w, stem, sizeof stem);
    rlt_str_append(out, "<figure>\n");
    rlt_svg_plot(&plot.plot, false, out);
    rlt_str_append(out, "<figcaption>Best GFLOP/s found after each measurement: per tuner the mean over its seeds "
                        "(line) and the range from the worst to the best seed (band, min to max); a run that ended "
                        "early holds its last best. The dashed line is the best known. Also in <code>");
    esc(out, stem);
    rlt_str_append(out, ".svg</code>.</figcaption>\n</figure>\n");
    rlt_report_plot_free(&plot);
}

static void runs(const rlt_report *rep, rlt_str *out)
{
    rlt_str_append(out, "<h2>Runs</h2>\n<p>In the order they ran (workloads, then seeds, then tuners). Every curve "
                        "is in <code>results.json</code>.</p>\n<table>\n<tr><th class=\"l\">workload</th>"
                        "<th class=\"l\">tuner</th><th>seed</th><th>trials</th><th>best GFLOP/s</th><th>to 90%</th>"
                        "<th>to 95%</th><th>to 99%</th>");
    rlt_str_append(out, rep->is_replay ? "<th>tuner ms</th><th>failed</th>"
                                       : "<th>wall s</th><th>tuner s</th><th>failed</th>");
    rlt_str_append(out, rep->is_replay ? "<th>absent</th>" : "<th>measured</th>");
    rlt_str_append(out, "<th class=\"l\">ended</th></tr>\n");
    for (int i = 0; i < rep->n_runs; i++) {
        const rlt_report_run *run = &rep->runs[i];
        double known = rep->workloads[run->workload].best_known_gflops;
        rlt_str_printf(out, "<tr><td class=\"l\">w%d</td>", run->workload + 1);
        cell(out, true, rep->tuners[run->tuner].label);
        rlt_str_printf(out, "<td>%llu</td><td>%d</td><td>%.2f</td>", (unsigned long long)run->seed, run->n_trials,
                       run->best_gflops);
        for (int f = 0; f < RLT_REPORT_N_REACH; f++) {
            int at = rlt_report_reach(run->curve, run->n_trials, known, rlt_report_reach_fractions[f]);
            if (at > 0)
                rlt_str_printf(out, "<td>%d</td>", at);
            else
                rlt_str_append(out, "<td>not reached</td>");
        }
        if (rep->is_replay)
            rlt_str_printf(out, "<td>%.3g</td>", run->tuner_s * 1e3);
        else
            rlt_str_printf(out, "<td>%.3g</td><td>%.3g</td>", run->wall_s, run->tuner_s);
        rlt_str_printf(out, "<td>%d</td><td>%d</td><td class=\"l\">%s</td></tr>\n", run->n_failed,
                       rep->is_replay ? run->n_absent : run->n_measured,
                       run->was_stopped_early ? "early stopping"
                       : run->was_exhausted   ? "space exhausted"
                                              : "trials done");
    }
    rlt_str_append(out, "</table>\n");
}

/* A note paragraph, when there is one. */
static void note(rlt_str *out, const char *text)
{
    if (!text) return;
    rlt_str_append(out, "<p class=\"note\">");
    esc(out, text);
    rlt_str_append(out, "</p>\n");
}

/* The config as given, and the end of the page. */
static void page_end(const rlt_report *rep, rlt_str *out)
{
    rlt_str_append(out, "<h2>Config</h2>\n<p><code>");
    esc(out, rep->config_path);
    rlt_str_append(out, "</code>, as given:</p>\n<pre>");
    esc(out, rep->config_text);
    rlt_str_append(out, "</pre>\n<p class=\"note\">Written by rltune " RLTUNE_VERSION
                        " (<code>rltune experiment</code>; formats in docs/experiment.md and docs/formats.md).</p>\n"
                        "</body>\n</html>\n");
}

void rlt_report_html(const rlt_report *rep, const char *png_note, rlt_str *out)
{
    if (rep->is_model) {
        rlt_report_model_html(rep, png_note, out);
        return;
    }
    rlt_str_append(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>rltune "
                        "experiment ");
    esc(out, rep->name);
    rlt_str_printf(out, "</title>\n<style>\n%s</style>\n</head>\n<body>\n", style);
    header(rep, out);
    rlt_str_append(out, "<h2>Results</h2>\n<p class=\"note\">To N%: measurements until the best found first reached "
                        "N% of the best known, the median over the seeds, with a seed that never reached it counted "
                        "as never (so the median is <em>not reached</em> when fewer than half the seeds reached it, "
                        "or a middle one of an even count did not), then (seeds that reached it / seeds).");
    rlt_str_append(out, rep->is_replay ? " Tuner ms: the time spent in the tuner (proposing and learning), in "
                                         "milliseconds; nothing is measured in a replay."
                                       : " Wall s: the run's wall time, building and measuring included; tuner s: "
                                         "the part of it spent in the tuner (proposing and learning).");
    rlt_str_append(out, "</p>\n");
    for (int w = 0; w < rep->n_workloads; w++) workload(rep, w, out);
    note(out, png_note);
    runs(rep, out);
    page_end(rep, out);
}

/* ---- a model experiment's page ------------------------------------------------------ */

static void model_header(const rlt_report *rep, rlt_str *out)
{
    rlt_str_append(out, "<h1>Experiment ");
    esc(out, rep->name);
    rlt_str_append(out, "</h1>\n");
    if (rep->description[0]) {
        rlt_str_append(out, "<p>");
        esc(out, rep->description);
        rlt_str_append(out, "</p>\n");
    }
    rlt_str str;
    rlt_str_init(&str);
    rlt_report_model_summary(rep, &str);
    rlt_str_append(out, "<p>");
    esc(out, str.data);
    if (rep->was_stopped)
        rlt_str_append(out, " <strong>Interrupted</strong>: the figures below are of the runs that finished.");
    rlt_str_append(out, "</p>\n<h2>Machine and target</h2>\n<table>\n<tr><th class=\"l\">rltune ran on</th>");
    rlt_str_clear(&str);
    rlt_str_printf(&str, "%s, %d cores, %d-float vectors%s", rep->machine.cpu_model, rep->machine.n_cores,
                   rep->machine.vector_floats, rep->machine.has_fma ? ", FMA" : "");
    cell(out, true, str.data);
    rlt_str_append(out, "</tr>\n<tr><th class=\"l\">measurements</th>");
    rlt_str_clear(&str);
    rlt_str_printf(&str, "built, run and timed here; each run's records in a database of its own under %s "
                         "(LABEL/TUNER-sSEED.db), which a rerun continues from",
                   rep->records_dir);
    cell(out, true, str.data);
    rlt_str_append(out, "</tr>\n<tr><th class=\"l\">target</th>");
    cell(out, true, rep->n_workloads > 0 ? rep->workloads[0].target : "");
    rlt_str_append(out, "</tr>\n</table>\n");
    if (str.has_failed) out->has_failed = true;
    rlt_str_free(&str);
}

static void model_plot(const rlt_report *rep, int w, bool by_time, rlt_str *out)
{
    rlt_report_plot plot;
    if (rlt_report_model_plot_make(rep, w, by_time, &plot, NULL) != RLT_STATUS_OK) {
        out->has_failed = true;
        return;
    }
    char stem[128];
    rlt_report_model_plot_stem(rep, w, by_time, stem, sizeof stem);
    rlt_str_append(out, "<figure>\n");
    rlt_svg_plot(&plot.plot, false, out);
    rlt_str_printf(out, "<figcaption>The network's latency estimate (the sum over its tasks of weight &#215; best "
                        "kernel time found) over %s: per tuner the mean over its seeds (line) and the range from the "
                        "worst to the best seed (band, min to max); a run holds its last estimate once it ended. A "
                        "line starts when every task of every seed's run has a time. Also in <code>",
                   by_time ? "the tuning time" : "the trials");
    esc(out, stem);
    rlt_str_append(out, ".svg</code>.</figcaption>\n</figure>\n");
    rlt_report_plot_free(&plot);
}

static void model_section(const rlt_report *rep, int w, rlt_str *out)
{
    rlt_str_append(out, "<h3>");
    esc(out, rep->workloads[w].spec);
    rlt_str_append(out, "</h3>\n<p>");
    rlt_str text;
    rlt_str_init(&text);
    rlt_report_model_about(rep, w, &text);
    esc(out, text.data);
    rlt_str_append(out, "</p>\n<table>\n<tr><th class=\"l\">tuner</th><th>runs</th><th>untuned ms</th>"
                        "<th>estimate ms</th><th>measured ms</th><th>speedup</th><th>trials</th><th>tuning s</th>"
                        "<th>correct</th></tr>\n");
    rlt_str cells[RLT_REPORT_MODEL_N_CELLS];
    for (int i = 0; i < RLT_REPORT_MODEL_N_CELLS; i++) rlt_str_init(&cells[i]);
    for (int t = 0; t < rep->n_tuners; t++) {
        for (int i = 0; i < RLT_REPORT_MODEL_N_CELLS; i++) rlt_str_clear(&cells[i]);
        rlt_report_model_row_cells(rep, w, t, cells);
        rlt_str_append(out, "<tr>");
        cell(out, true, rep->tuners[t].label);
        for (int i = 0; i < RLT_REPORT_MODEL_N_CELLS; i++) {
            if (cells[i].has_failed) out->has_failed = true;
            cell(out, false, cells[i].data);
        }
        rlt_str_append(out, "</tr>\n");
    }
    for (int i = 0; i < RLT_REPORT_MODEL_N_CELLS; i++) rlt_str_free(&cells[i]);
    rlt_str_append(out, "</table>\n");
    if (text.has_failed) out->has_failed = true;
    rlt_str_free(&text);
    model_plot(rep, w, true, out);
    model_plot(rep, w, false, out);
}

static void model_runs(const rlt_report *rep, rlt_str *out)
{
    rlt_str_append(out, "<h2>Runs</h2>\n<p>In the order they ran (models, then seeds, then tuners). Every curve is "
                        "in <code>results.json</code>.</p>\n<table>\n<tr><th class=\"l\">model</th>"
                        "<th class=\"l\">tuner</th><th>seed</th><th>trials</th><th>new</th><th>tuning s</th>"
                        "<th class=\"l\">ended</th><th>estimate ms</th><th>measured ms (min)</th><th>tasks tuned</th>"
                        "<th>output</th><th class=\"l\">database</th></tr>\n");
    rlt_str text;
    rlt_str_init(&text);
    for (int i = 0; i < rep->n_runs; i++) {
        const rlt_report_run *r = &rep->runs[i];
        const rlt_report_latency *l = &r->latency;
        rlt_str_append(out, "<tr>");
        cell(out, true, rep->workloads[r->workload].spec);
        cell(out, true, rep->tuners[r->tuner].label);
        rlt_str_printf(out, r->tuning_s >= 100 ? "<td>%llu</td><td>%d</td><td>%d</td><td>%.0f</td>"
                                               : "<td>%llu</td><td>%d</td><td>%d</td><td>%.3g</td>",
                       (unsigned long long)r->seed, r->n_model_trials, r->n_new_trials, r->tuning_s);
        cell(out, true, r->ended);
        rlt_str_clear(&text);
        if (isfinite(r->estimate_ms))
            rlt_str_printf(&text, "%.4g", r->estimate_ms);
        else
            rlt_str_append(&text, "-");
        cell(out, false, text.data);
        rlt_str_clear(&text);
        if (l->is_measured)
            rlt_str_printf(&text, "%.4g (%.4g)", l->median_ms, l->min_ms);
        else
            rlt_str_append(&text, "-");
        cell(out, false, text.data);
        rlt_str_printf(out, "<td>%d/%d</td>", l->n_tasks_tuned, l->n_tasks);
        cell(out, false, !l->is_measured ? "-" : !l->is_checked ? "not checked" : l->is_correct ? "correct" : "WRONG");
        cell(out, true, r->db);
        rlt_str_append(out, "</tr>\n");
    }
    if (text.has_failed) out->has_failed = true;
    rlt_str_free(&text);
    rlt_str_append(out, "</table>\n");
}

void rlt_report_model_html(const rlt_report *rep, const char *png_note, rlt_str *out)
{
    rlt_str_append(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>rltune "
                        "experiment ");
    esc(out, rep->name);
    rlt_str_printf(out, "</title>\n<style>\n%s</style>\n</head>\n<body>\n", style);
    model_header(rep, out);
    rlt_str_append(out, "<h2>Results</h2>\n<p class=\"note\">");
    esc(out, rlt_report_model_columns_note);
    rlt_str_append(out, "</p>\n");
    for (int w = 0; w < rep->n_workloads; w++) model_section(rep, w, out);
    note(out, png_note);
    model_runs(rep, out);
    page_end(rep, out);
}
