/*
 * results.c - an experiment's results as the report's plain data
 * (rlt_exp_report_make, report/report.h): the config's settings, names and
 * text, every run's curve and counts, what is known of each workload, the
 * machine, and the metrics of every (workload, tuner). The renderers see
 * nothing of tuners, datasets or measurements but these numbers and names.
 */
#include "experiment/experiment.h"

#include <string.h>

rlt_status rlt_exp_report_make(const rlt_exp_config *c, const rlt_exp_result *r, rlt_exp_report *out,
                               rlt_diag *diag)
{
    memset(out, 0, sizeof *out);
    out->tuners = rlt_calloc((size_t)c->n_tuners, sizeof *out->tuners);
    out->workloads = rlt_calloc((size_t)c->n_workloads, sizeof *out->workloads);
    out->runs = rlt_calloc(r->n_runs > 0 ? (size_t)r->n_runs : 1, sizeof *out->runs);
    out->stats = rlt_calloc((size_t)c->n_workloads * (size_t)c->n_tuners, sizeof *out->stats);
    if (!out->tuners || !out->workloads || !out->runs || !out->stats) {
        rlt_exp_report_free(out);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory making the report of %s", c->path);
    }
    for (int t = 0; t < c->n_tuners; t++) {
        const rlt_exp_tuner *tu = &c->tuners[t];
        out->tuners[t] = (rlt_report_tuner){
            .label = tu->label, .name = tu->name, .options_json = tu->options_json, .carry_agent = tu->carry_agent};
    }
    for (int w = 0; w < c->n_workloads; w++) {
        const rlt_exp_workload_result *k = &r->workloads[w];
        out->workloads[w] = (rlt_report_workload){
            .spec = c->workloads[w].spec,
            .dataset = c->workloads[w].dataset,
            .dataset_info = {.is_complete = k->dataset.is_complete,
                             .n_configs = k->dataset.n_configs,
                             .fixed = k->dataset.fixed,
                             .n_threads = k->dataset.n_threads},
            .target = k->target,
            .best_known_gflops = k->best_known_gflops,
            .best_known_source = k->best_known_source,
        };
    }
    for (int i = 0; i < r->n_runs; i++) {
        const rlt_exp_run *run = &r->runs[i];
        const rlt_tune_result *t = &run->tune;
        out->runs[i] = (rlt_report_run){
            .workload = run->workload,
            .tuner = run->tuner,
            .seed = run->seed,
            .had_agent = run->had_agent,
            .n_trials = t->n_trials,
            .curve = t->curve,
            .best_gflops = t->best_gflops,
            .best_config = t->best_config,
            .wall_s = t->wall_s,
            .tuner_s = t->tuner_s,
            .n_measured = t->n_measured,
            .n_from_db = t->n_from_db,
            .n_failed = t->n_failed,
            .n_absent = t->n_absent,
            .was_stopped_early = t->was_stopped_early,
            .was_exhausted = t->was_exhausted,
        };
    }
    out->report = (rlt_report){
        .name = c->name,
        .description = c->description,
        .config_path = c->path,
        .config_text = c->text,
        .is_replay = c->is_replay,
        .db = c->db,
        .n_trials = c->n_trials,
        .batch_size = c->batch_size,
        .early_stopping = c->early_stopping,
        .n_seeds = c->n_seeds,
        .seeds = c->seeds,
        .machine = {.cpu_model = r->machine.cpu_model,
                    .n_cores = r->machine.n_cores,
                    .vector_floats = r->machine.vector_floats,
                    .has_fma = r->machine.has_fma},
        .n_workloads = c->n_workloads,
        .workloads = out->workloads,
        .n_tuners = c->n_tuners,
        .tuners = out->tuners,
        .n_runs_planned = r->n_runs_planned,
        .n_runs = r->n_runs,
        .runs = out->runs,
        .was_stopped = r->was_stopped,
        .stats = out->stats,
    };
    rlt_report_stats_fill(&out->report, out->stats);
    return RLT_STATUS_OK;
}

void rlt_exp_report_free(rlt_exp_report *rep)
{
    rlt_free(rep->tuners);
    rlt_free(rep->workloads);
    rlt_free(rep->runs);
    rlt_free(rep->stats);
    memset(rep, 0, sizeof *rep);
}
