/*
 * results.c - an experiment's results as the report's plain data
 * (rlt_exp_report_make, report/report.h): the config's settings, names and
 * text, every run's curve and counts, what is known of each workload, the
 * machine, and the metrics of every (workload, tuner). The renderers see
 * nothing of tuners, datasets or measurements but these numbers and names.
 */
#include "experiment/experiment.h"

#include <string.h>

static rlt_report_latency latency_of(const rlt_exp_latency *l)
{
    return (rlt_report_latency){.is_measured = l->is_measured,
                                .median_ms = l->timing.median_ms,
                                .min_ms = l->timing.min_ms,
                                .repeat = l->timing.repeat,
                                .is_checked = l->timing.is_checked,
                                .is_correct = l->timing.is_correct,
                                .max_error = l->timing.max_error,
                                .max_reference = l->timing.max_reference,
                                .n_tasks = l->n_tasks,
                                .n_tasks_tuned = l->n_tasks_tuned,
                                .compile_s = l->compile_s};
}

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
        if (c->is_model) {
            rlt_report_workload *rw = &out->workloads[w];
            rw->spec = c->workloads[w].label;
            rw->model = c->workloads[w].model;
            rw->n_tasks = k->n_tasks;
            rw->flops = k->flops;
            rw->untuned = latency_of(&k->untuned);
        }
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
        if (c->is_model) {
            const rlt_exp_model_run *m = &run->model;
            rlt_report_run *rr = &out->runs[i];
            rr->n_trials = 0; /* the op curve's: a model's run has points instead */
            rr->curve = NULL;
            rr->db = m->db;
            rr->n_model_trials = m->n_trials;
            rr->n_new_trials = m->n_new_trials;
            rr->tuning_s = m->tuning_s;
            rr->estimate_ms = m->estimate_ms;
            rr->n_points = m->n_points;
            rr->points = m->points;
            rr->ended = rlt_exp_ending_name(m->ended);
            rr->latency = latency_of(&m->latency);
        }
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
        .is_model = c->is_model,
        .is_benchmark = c->is_benchmark,
        .time_budget_s = c->time_budget_s,
        .run_repeat = c->run_repeat,
        .rule_seeds = c->rule_seeds,
        .n_threads = c->n_threads > 0 ? c->n_threads : 1,
        .records_dir = c->records_dir,
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
