/*
 * cmd_experiment.c - `rltune experiment --config FILE.json`: runs every
 * tuner of the config on every workload with every seed
 * (rltune/experiment.h), live or replayed from datasets, and writes the
 * report into the output directory: report.html,
 * results.json, table.md and a plot per workload (SVG, and PNG through
 * gnuplot when it is installed). The workloads may be whole models: then
 * each run tunes a network, and its network is compiled and timed.
 * stdout gets the table (or one JSON object with --json).
 *
 * The config is checked whole (every key, every tuner's options on every
 * workload's space, every dataset opened) before anything runs or the
 * output directory is made. On a terminal, stderr shows the run in flight
 * and a line per finished run; elsewhere nothing (as `tune`). The first
 * Ctrl-C lets the run in flight finish, starts no other and still writes
 * the report of what finished; a second one ends the process at once.
 */
#include "cli/cli.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const rlt_cli_opt experiment_opts[] = {
    {"config", "FILE", "the experiment's JSON config (docs/experiment.md)"},
    {"out", "DIR", "output directory (default: the config's \"out\", else experiment-NAME)"},
    {"json", NULL, "print exactly one JSON object on stdout (results.json's, plus \"out\") instead of the table"},
};

typedef struct progress_state {
    bool is_tty;
    bool has_line; /* a line in progress is on the terminal */
} progress_state;

static void show_progress(const rlt_experiment_progress *p, void *ctx)
{
    progress_state *ps = ctx;
    if (!ps->is_tty) return;
    int n = p->is_run_done ? p->n_done : p->n_done + 1;
    /* a model experiment times each model untuned first, and a run's
     * network after its tuning: steps without trials */
    if (!p->is_run_done && p->n_trials_total == 0) {
        if (strcmp(p->label, "untuned") == 0)
            fprintf(stderr, "\r\033[K[experiment] %s, untuned: compiling, checking and timing the network", p->spec);
        else
            fprintf(stderr, "\r\033[K[experiment] run %d/%d: %s, seed %" PRIu64 ", %s: %d trials; compiling, checking "
                            "and timing the network",
                    n, p->n_total, p->label, p->seed, p->spec, p->n_trials_done);
        if (rlt_cli_stop_requested) fprintf(stderr, " (stopping after this run)");
        ps->has_line = true;
    } else if (p->is_run_done) {
        fprintf(stderr, "\r\033[K[experiment] run %d/%d: %s, seed %" PRIu64 ", %s: best %.2f GFLOP/s after %d trials, "
                        "%.2f s%s\n",
                n, p->n_total, p->label, p->seed, p->spec, p->best_gflops, p->n_trials_done, p->run_wall_s,
                rlt_cli_stop_requested ? " (stopping: no further run starts)" : "");
        ps->has_line = false;
    } else {
        fprintf(stderr, "\r\033[K[experiment] run %d/%d: %s, seed %" PRIu64 ", %s", n, p->n_total, p->label, p->seed,
                p->spec);
        if (p->n_trials_done > 0) fprintf(stderr, ": %d/%d trials", p->n_trials_done, p->n_trials_total);
        /* none yet: nothing measured OK (a model: a task without a time) */
        if (p->n_trials_done > 0 && p->best_gflops > 0) fprintf(stderr, ", best %.2f GFLOP/s", p->best_gflops);
        if (rlt_cli_stop_requested) fprintf(stderr, " (stopping after this run)");
        ps->has_line = true;
    }
    fflush(stderr);
}

/* The config's errors are the user's input (2), except memory (3). */
static int exit_for_config(rlt_status st)
{
    return st == RLT_STATUS_OUT_OF_MEMORY || st == RLT_STATUS_INTERNAL ? RLT_CLI_EXIT_INTERNAL : RLT_CLI_EXIT_USAGE;
}

/* results.json's object with "out" added last. Spliced into the text, not
 * parsed and printed again: cJSON's printer would round numbers that
 * results.json writes exactly. */
static int print_json(rlt_experiment *e, const char *dir)
{
    char *text = rlt_experiment_json(e);
    cJSON *out = cJSON_CreateString(dir);
    char *quoted = out ? cJSON_PrintUnformatted(out) : NULL;
    cJSON_Delete(out);
    size_t len = text ? strlen(text) : 0;
    bool is_object = len >= 2 && text[0] == '{' && text[len - 1] == '}';
    if (!quoted || !is_object) {
        rlt_free(text);
        cJSON_free(quoted);
        rlt_cli_error("out of memory formatting the result");
        return RLT_CLI_EXIT_INTERNAL;
    }
    printf("%.*s%s\"out\":%s}\n", (int)(len - 1), text, len > 2 ? "," : "", quoted);
    rlt_free(text);
    cJSON_free(quoted);
    return RLT_CLI_EXIT_OK;
}

static int run_experiment(const rlt_cli_args *args)
{
    int rc = RLT_CLI_EXIT_USAGE;
    rlt_diag d = {0};
    rlt_experiment *e = NULL;
    char *table = NULL;
    rlt_status st;
    const char *path = rlt_cli_args_get(args, "config");
    if (!path) {
        rlt_cli_error("no --config given: name the experiment's JSON config, e.g. --config "
                      "examples/experiment_replay.json (its keys: docs/experiment.md)");
        goto cleanup;
    }
    if ((st = rlt_experiment_open(path, &e, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("--config: %s", d.message);
        rc = exit_for_config(st);
        goto cleanup;
    }
    const char *dir = rlt_cli_args_get(args, "out");
    if (!dir) dir = rlt_experiment_out_dir(e);
    if ((st = rlt_experiment_check_out_dir(dir, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("--out: %s", d.message);
        rc = st == RLT_STATUS_INVALID_ARGUMENT ? RLT_CLI_EXIT_USAGE : RLT_CLI_EXIT_INTERNAL;
        goto cleanup;
    }
    progress_state ps = {.is_tty = isatty(STDERR_FILENO)};
    rlt_experiment_run_opts ro = {.stop = &rlt_cli_stop_requested, .progress = show_progress, .progress_ctx = &ps};
    rlt_cli_interrupt_catch();
    rlt_status run_st = rlt_experiment_run(e, &ro, &d);
    rlt_cli_interrupt_release();
    if (ps.has_line) fprintf(stderr, "\n");
    rlt_diag wd = {0};
    rlt_experiment_files files;
    rlt_status write_st = rlt_experiment_write_report(e, dir, &files, &wd);
    if (run_st != RLT_STATUS_OK) {
        if (write_st == RLT_STATUS_OK)
            rlt_cli_error("experiment stopped (%s): %s; the report of the %d runs that finished is in %s",
                          rlt_status_str(run_st), d.message, rlt_experiment_n_runs_done(e), dir);
        else
            rlt_cli_error("experiment stopped (%s): %s", rlt_status_str(run_st), d.message);
        rc = rlt_cli_exit_for(run_st);
        goto cleanup;
    }
    if (write_st != RLT_STATUS_OK) {
        rlt_cli_error("--out: %s", wd.message);
        rc = write_st == RLT_STATUS_INVALID_ARGUMENT ? RLT_CLI_EXIT_USAGE : RLT_CLI_EXIT_INTERNAL;
        goto cleanup;
    }
    if (files.is_gnuplot_absent)
        fprintf(stderr, "rltune: note: gnuplot not found: PNG plots skipped (the SVG plots and report.html have "
                        "them; scripts/install-deps.sh installs gnuplot-nox)\n");
    else if (files.png_problem[0])
        fprintf(stderr, "rltune: note: PNG plots skipped: %s\n", files.png_problem);
    if (rlt_cli_args_has(args, "json")) {
        rc = print_json(e, dir);
        goto cleanup;
    }
    if (!(table = rlt_experiment_table_md(e))) {
        rlt_cli_error("out of memory formatting the table");
        rc = RLT_CLI_EXIT_INTERNAL;
        goto cleanup;
    }
    printf("%s\nreport: %s/report.html (results.json, table.md and the plots beside it)\n", table, dir);
    rc = RLT_CLI_EXIT_OK;
cleanup:
    rlt_free(table);
    rlt_experiment_destroy(e);
    return rc;
}

const rlt_cli_cmd rlt_cli_cmd_experiment = {
    .name = "experiment",
    .brief = "compare tuners on workloads over seeds, live or replayed, and write a report",
    .synopsis = "--config FILE.json [--out DIR] [--json]",
    .summary = "Runs every tuner of the config on every workload with every seed, each run an\n"
               "'rltune tune' (live: built, run, timed and recorded in the config's database; replay:\n"
               "answered by each workload's dataset from 'rltune dataset'), and writes into the\n"
               "output directory report.html (self-contained: tables, plots, the config),\n"
               "results.json (every run's curve and the metrics), table.md and a plot per workload\n"
               "(SVG; PNG too when gnuplot is installed). Per workload and tuner: the best GFLOP/s\n"
               "over the seeds, the measurements needed to reach 90, 95 and 99% of the best known,\n"
               "the wall time. Workloads may be whole models ({\"model\": \"net.onnx\"}): each run is\n"
               "then a 'tune --model' into a database of its own, its network compiled and timed as\n"
               "'rltune run' does, and the report has per model a latency table and plots of the\n"
               "latency estimate over tuning time and over trials; \"mode\": \"benchmark\" only times\n"
               "the networks of the runs' databases. The config's keys: docs/experiment.md.",
    .details = "The whole config is checked before anything runs: an unknown key, a bad value, an\n"
               "unknown tuner or tuner option, a dataset that cannot be replayed are errors naming\n"
               "the file and the key (exit 2), and no output directory is made.\n"
               "On a terminal, stderr shows the run in flight and a line per finished run. Ctrl-C\n"
               "lets the run in flight finish (a model's run stops tuning after its round, then its\n"
               "network is timed), starts no other and writes the report of the runs that finished;\n"
               "a second Ctrl-C ends at once. A model's run resumes from its database when run again.\n"
               "stdout: the table (as table.md), or with --json one JSON object: results.json's\n"
               "fields (docs/formats.md) plus \"out\", the output directory.",
    .n_opts = (int)RLT_CLI_ARRAY_LEN(experiment_opts),
    .opts = experiment_opts,
    .run = run_experiment,
};
