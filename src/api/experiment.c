/*
 * experiment.c - the public face of experiments (rltune/experiment.h): a
 * handle holding the parsed config, its opened resources, the results of
 * the runs and their report (experiment/experiment.h and report/report.h
 * do the work).
 */
#include "experiment/experiment.h"
#include "rltune/experiment.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct rlt_experiment {
    rlt_exp_config *config;
    rlt_exp *exp;
    bool has_run;
    rlt_exp_result result;
    bool has_report;
    rlt_exp_report report; /* made from result on first use */
    char out_dir[512];
    /* the caller's progress, while a run is in flight */
    rlt_experiment_progress_fn progress;
    void *progress_ctx;
    char last_error[1024]; /* the last failed call's message; "" when none */
};

/* Keeps a failed call's message in the handle (rlt_experiment_last_error)
 * and hands it to the caller's diag. */
static rlt_status noted(rlt_experiment *e, rlt_status st, const rlt_diag *d, rlt_diag *diag)
{
    return rlt_diag_keep(e->last_error, sizeof e->last_error, st, d, diag);
}

const char *rlt_experiment_last_error(const rlt_experiment *e) { return e->last_error; }

rlt_status rlt_experiment_open(const char *path, rlt_experiment **out, rlt_diag *diag)
{
    *out = NULL;
    rlt_experiment *e = rlt_calloc(1, sizeof *e);
    if (!e) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory opening an experiment");
    rlt_status st = rlt_exp_config_load(path, &e->config, diag);
    if (st == RLT_STATUS_OK) st = rlt_exp_open(e->config, &e->exp, diag);
    if (st != RLT_STATUS_OK) {
        rlt_experiment_destroy(e);
        return st;
    }
    const char *dir = rlt_exp_config_out_dir(e->config, e->out_dir, sizeof e->out_dir);
    if (dir != e->out_dir) snprintf(e->out_dir, sizeof e->out_dir, "%s", dir);
    *out = e;
    return RLT_STATUS_OK;
}

void rlt_experiment_destroy(rlt_experiment *e)
{
    if (!e) return;
    if (e->has_report) rlt_exp_report_free(&e->report);
    rlt_exp_result_free(&e->result);
    rlt_exp_close(e->exp);
    rlt_exp_config_destroy(e->config);
    rlt_free(e);
}

const char *rlt_experiment_out_dir(const rlt_experiment *e) { return e->out_dir; }

rlt_status rlt_experiment_check_out_dir(const char *dir, rlt_diag *diag)
{
    rlt_status st = rlt_mkdir_p(dir, diag);
    if (st != RLT_STATUS_OK) return st;
    /* found now, not after the runs: a file in the way, a directory we may not write */
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode) || access(dir, W_OK | X_OK) != 0)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "'%s' is not a directory this process can write into",
                        dir);
    return RLT_STATUS_OK;
}

/* The runner's progress, told in the public terms. */
static void tell_progress(const rlt_exp_progress *p, void *ctx)
{
    const rlt_experiment *e = ctx;
    rlt_experiment_progress q = {
        .n_done = p->n_done,
        .n_total = p->n_total,
        .is_run_done = p->run != NULL,
        .spec = p->spec,
        .label = p->label,
        .seed = p->seed,
        .n_trials_total = e->config->n_trials,
    };
    if (p->run) {
        q.n_trials_done = p->run->tune.n_trials;
        q.best_gflops = p->run->tune.best_gflops;
        q.run_wall_s = p->run->tune.wall_s;
    } else if (p->tune) {
        q.n_trials_done = p->tune->n_done;
        q.n_trials_total = p->tune->n_total;
        q.best_gflops = p->tune->best_gflops;
    }
    e->progress(&q, e->progress_ctx);
}

static rlt_status experiment_run(rlt_experiment *e, const rlt_experiment_run_opts *opts, rlt_diag *diag)
{
    if (e->has_run) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "an experiment runs once");
    e->has_run = true;
    rlt_experiment_run_opts o = opts ? *opts : (rlt_experiment_run_opts){0};
    e->progress = o.progress;
    e->progress_ctx = o.progress_ctx;
    rlt_exp_run_opts ro = {.stop = o.stop, .progress = o.progress ? tell_progress : NULL, .progress_ctx = e};
    rlt_status st = rlt_exp_run_all(e->exp, &ro, &e->result, diag);
    e->progress = NULL;
    return st;
}

rlt_status rlt_experiment_run(rlt_experiment *e, const rlt_experiment_run_opts *opts, rlt_diag *diag)
{
    rlt_diag d = {0};
    return noted(e, experiment_run(e, opts, &d), &d, diag);
}

int rlt_experiment_n_runs_done(const rlt_experiment *e) { return e->result.n_runs; }

/* The report of the finished runs, made once. */
static rlt_status report_of(rlt_experiment *e, rlt_diag *diag)
{
    if (e->has_report) return RLT_STATUS_OK;
    if (!e->has_run) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "no report before the experiment has run");
    if (!e->result.runs || !e->result.workloads) /* the run ran out of memory before any run */
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory: the experiment has no results to report");
    rlt_status st = rlt_exp_report_make(e->config, &e->result, &e->report, diag);
    e->has_report = st == RLT_STATUS_OK;
    return st;
}

static rlt_status write_report(rlt_experiment *e, const char *dir, rlt_experiment_files *out, rlt_diag *diag)
{
    if (out) *out = (rlt_experiment_files){0};
    rlt_status st = report_of(e, diag);
    if (st != RLT_STATUS_OK) return st;
    rlt_report_files files = {0};
    st = rlt_report_write(&e->report.report, dir, &files, diag);
    if (out) {
        out->has_png = files.has_png;
        out->is_gnuplot_absent = files.is_gnuplot_absent;
        snprintf(out->png_problem, sizeof out->png_problem, "%s", files.png_problem);
    }
    return st;
}

rlt_status rlt_experiment_write_report(rlt_experiment *e, const char *dir, rlt_experiment_files *out,
                                       rlt_diag *diag)
{
    rlt_diag d = {0};
    return noted(e, write_report(e, dir, out, &d), &d, diag);
}

char *rlt_experiment_json(rlt_experiment *e)
{
    return report_of(e, NULL) == RLT_STATUS_OK ? rlt_report_json(&e->report.report) : NULL;
}

char *rlt_experiment_table_md(rlt_experiment *e)
{
    if (report_of(e, NULL) != RLT_STATUS_OK) return NULL;
    rlt_str s;
    rlt_str_init(&s);
    rlt_report_table_md(&e->report.report, &s);
    return rlt_str_take(&s); /* NULL when a write failed */
}
