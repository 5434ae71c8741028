/*
 * cmd_measure.c - `rltune measure`: builds the workload of an op
 * (rlt_workload_create), applies a schedule, and builds, runs, verifies and
 * times the kernel with rlt_measure. Prints a short report, or with
 * --json exactly one JSON object on stdout.
 *
 * A kernel that fails (build error, crash, timeout, wrong answer) is still a
 * result: it is printed and the exit code is 1. Only bad input (2) and an
 * environment that cannot build or run anything (3) print nothing on stdout.
 */
#include "cli/cli.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const rlt_cli_opt measure_opts[] = {
    RLT_CLI_OP_OPTS,
    {"threads", "N", "threads for parallel loops, 1..256 (default 1)"},
    {"seed", "S", "seed of the input data, a whole number >= 0 (default 0)"},
    {"cc", "CMD", "compiler command (default $RLTUNE_CC, else gcc)"},
    {"cflags", "FLAGS", "compiler flags, one argument (default \"" RLT_DEFAULT_CFLAGS "\")"},
    {"number", "N", "calls per timed sample; 0 = grow until a sample lasts --min-repeat-ms (default 0)"},
    {"repeat", "N", "timed samples, at least 1 (default 5)"},
    {"min-repeat-ms", "X", "shortest sample in milliseconds when --number is 0, above 0 (default 20)"},
    {"timeout", "S", "time limit in seconds for the whole kernel run, above 0 (default 10)"},
    {"no-pin", NULL, "do not pin the measuring process to one CPU"},
    {"cold", NULL, "evict the kernel's weights, workspace and output from the caches before each timed call (one call "
                   "a sample): the time a layer of a network takes, its weights and output buffer out of the caches"},
    {"best", NULL, "measure the op's best recorded kernel ('rltune best') with its compiler, not a --schedule"},
    {"db", "FILE", "with --best: the records database (default rltune.db in the working directory)"},
    {"all-targets", NULL, "with --best: search the records of every target, not only this machine's"},
    {"json", NULL, "print exactly one JSON object on stdout instead of the report"},
};

/* Everything the report needs besides the result. */
typedef struct report {
    const rlt_cli_input *in;
    const rlt_run_result *r;
    const rlt_machine *machine;
    const char *compiler;
    char *sched_text; /* owned; NULL with the default schedule */
    const rlt_record *record; /* with --best: the record measured (borrowed), else NULL */
    const char *db_path;      /* with --best: its database */
    int n_threads;
    uint64_t seed;
} report;

static bool was_timed(const rlt_run_result *r) { return r->status == RLT_STATUS_OK && r->n_samples > 0; }

/* A number, or null where JSON has no number for it (inf, nan). */
static cJSON *add_number(cJSON *o, const char *key, double v, bool is_known)
{
    return is_known && isfinite(v) ? rlt_cli_json_add_number(o, key, v) : cJSON_AddNullToObject(o, key);
}

/* The result as one JSON object; NULL when out of memory. */
static char *format_json(const report *rep)
{
    const rlt_run_result *r = rep->r;
    char *text = NULL;
    bool is_ok = true;
    cJSON *o = cJSON_CreateObject();
    if (!o) goto cleanup;
    is_ok &= cJSON_AddStringToObject(o, "op", rlt_op_spec(rep->in->op)) != NULL;
    is_ok &= cJSON_AddStringToObject(o, "status", rlt_status_str(r->status)) != NULL;
    is_ok &= cJSON_AddBoolToObject(o, "correct", r->is_correct) != NULL;
    cJSON *t = cJSON_AddObjectToObject(o, "time_ms");
    if (!t) goto cleanup;
    is_ok &= add_number(t, "min", r->time_min_ms, was_timed(r)) != NULL;
    is_ok &= add_number(t, "median", r->time_median_ms, was_timed(r)) != NULL;
    is_ok &= add_number(o, "gflops", r->status == RLT_STATUS_OK ? r->gflops : 0.0, true) != NULL;
    if (rep->sched_text)
        is_ok &= cJSON_AddStringToObject(o, "schedule", rep->sched_text) != NULL;
    else
        is_ok &= cJSON_AddNullToObject(o, "schedule") != NULL;
    if (rep->in->sched_source)
        is_ok &= cJSON_AddStringToObject(o, "schedule_file", rep->in->sched_source) != NULL;
    else
        is_ok &= cJSON_AddNullToObject(o, "schedule_file") != NULL;
    if (rep->record) {
        cJSON *rec = cJSON_AddObjectToObject(o, "record");
        if (!rec) goto cleanup;
        is_ok &= rlt_cli_json_add_number(rec, "id", (double)rep->record->id) != NULL;
        is_ok &= cJSON_AddStringToObject(rec, "db", rep->db_path) != NULL;
        is_ok &= cJSON_AddStringToObject(rec, "config", rep->record->config) != NULL;
        is_ok &= rlt_cli_json_add_number(rec, "gflops", rep->record->gflops) != NULL;
    } else {
        is_ok &= cJSON_AddNullToObject(o, "record") != NULL;
    }
    is_ok &= rlt_cli_json_add_number(o, "threads", rep->n_threads) != NULL;
    is_ok &= rlt_cli_json_add_number(o, "seed", (double)rep->seed) != NULL;
    is_ok &= rlt_cli_json_add_number(o, "number", r->number) != NULL;
    is_ok &= rlt_cli_json_add_number(o, "n_samples", r->n_samples) != NULL;
    is_ok &= add_number(o, "max_error", r->max_error, true) != NULL;
    is_ok &= cJSON_AddStringToObject(o, "message", r->status == RLT_STATUS_OK ? "" : r->message) != NULL;
    is_ok &= rlt_cli_json_add_number(o, "flops", rlt_op_flops(rep->in->op)) != NULL;
    cJSON *tg = cJSON_AddObjectToObject(o, "target");
    if (!tg) goto cleanup;
    is_ok &= cJSON_AddStringToObject(tg, "cpu", rep->machine->cpu) != NULL;
    is_ok &= rlt_cli_json_add_number(tg, "cores", rep->machine->n_cores) != NULL;
    is_ok &= rlt_cli_json_add_number(tg, "vector_floats", rep->machine->vector_floats) != NULL;
    is_ok &= cJSON_AddBoolToObject(tg, "fma", rep->machine->has_fma) != NULL;
    is_ok &= cJSON_AddStringToObject(o, "compiler", rep->compiler) != NULL;
    is_ok &= add_number(o, "build_s", r->build_s, true) != NULL;
    if (is_ok) text = cJSON_PrintUnformatted(o);

cleanup:
    cJSON_Delete(o);
    return text;
}

static void print_text(const report *rep)
{
    const rlt_run_result *r = rep->r;
    printf("op:        %s\n", rlt_op_spec(rep->in->op));
    if (rep->record)
        printf("schedule:  record %" PRId64 " of %s (%.2f GFLOP/s when tuned)\n", rep->record->id, rep->db_path,
               rep->record->gflops);
    else
        printf("schedule:  %s\n", rep->in->sched_source ? rep->in->sched_source : "(default schedule)");
    printf("status:    %s\n", rlt_status_str(r->status));
    printf("correct:   %s", r->is_correct ? "yes" : "no");
    if (r->status == RLT_STATUS_OK || r->status == RLT_STATUS_WRONG_ANSWER)
        printf(" (max error %.3g of the tolerance)", r->max_error);
    printf("\n");
    if (was_timed(r)) {
        printf("time:      min %.4f ms, median %.4f ms\n", r->time_min_ms, r->time_median_ms);
        printf("GFLOP/s:   %.2f (%.4g flops a call)\n", r->gflops, rlt_op_flops(rep->in->op));
        printf("samples:   %d x %d call%s\n", r->n_samples, r->number, r->number == 1 ? "" : "s");
    }
    if (r->status != RLT_STATUS_OK) printf("message:   %s\n", r->message);
    printf("threads:   %d\n", rep->n_threads);
    printf("compiler:  %s\n", rep->compiler);
    if (r->build_s > 0)
        printf("build:     %.2f s\n", r->build_s);
    else if (r->status != RLT_STATUS_BUILD_ERROR && r->status != RLT_STATUS_BUILD_TIMEOUT)
        printf("build:     from the compile cache\n");
    printf("CPU:       %s (%d core%s, %d-float vectors%s)\n", rep->machine->cpu, rep->machine->n_cores,
           rep->machine->n_cores == 1 ? "" : "s", rep->machine->vector_floats, rep->machine->has_fma ? ", FMA" : "");
}

/* Reads and range-checks every numeric option. */
static rlt_status read_numbers(const rlt_cli_args *args, rlt_run_opts *ropts, uint64_t *seed, rlt_diag *diag)
{
    int64_t threads = 0, number = 0, repeat = 0, seed_value = 0;
    double min_repeat_ms = 0, timeout_s = 0;
    rlt_status st = rlt_cli_args_int(args, "threads", 1, 1, RLT_MAX_THREADS, &threads, diag);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_int(args, "seed", 0, 0, INT64_MAX, &seed_value, diag);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_int(args, "number", 0, 0, 1 << 30, &number, diag);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_int(args, "repeat", 5, 1, 100000, &repeat, diag);
    if (st == RLT_STATUS_OK)
        st = rlt_cli_args_double(args, "min-repeat-ms", 20.0, 0.0, true, 600000.0, &min_repeat_ms, diag);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_double(args, "timeout", 10.0, 0.0, true, 86400.0, &timeout_s, diag);
    if (st != RLT_STATUS_OK) return st;
    *ropts = (rlt_run_opts){
        .number = (int)number,
        .repeat = (int)repeat,
        .min_repeat_ms = min_repeat_ms,
        .timeout_s = timeout_s,
        .n_threads = (int)threads,
        .no_pin = rlt_cli_args_has(args, "no-pin"),
        .cold_weights = rlt_cli_args_has(args, "cold"),
    };
    *seed = (uint64_t)seed_value;
    return RLT_STATUS_OK;
}

static int run_measure(const rlt_cli_args *args)
{
    int rc = RLT_CLI_EXIT_OK;
    rlt_diag d = {0};
    rlt_cli_input in = {0};
    rlt_workload *w = NULL;
    char *compiler = NULL, *sched_text = NULL, *json = NULL;
    rlt_run_opts ropts;
    uint64_t seed = 0;
    rlt_record *record = NULL;
    const char *db_path = NULL, *record_cc = NULL;
    bool is_best = rlt_cli_args_has(args, "best");

    rlt_status st = read_numbers(args, &ropts, &seed, &d);
    const char *cc = rlt_cli_args_get(args, "cc");
    if (st == RLT_STATUS_OK && cc && cc[strspn(cc, " \t")] == '\0')
        st = rlt_fail(&d, RLT_STATUS_INVALID_ARGUMENT, "--cc must name a compiler, got an empty value");
    if (st == RLT_STATUS_OK && is_best && rlt_cli_args_has(args, "schedule"))
        st = rlt_fail(&d, RLT_STATUS_INVALID_ARGUMENT,
                      "--best measures the best record's schedule: it cannot be combined with --schedule");
    if (st == RLT_STATUS_OK && !is_best && (rlt_cli_args_has(args, "db") || rlt_cli_args_has(args, "all-targets")))
        st = rlt_fail(&d, RLT_STATUS_INVALID_ARGUMENT, "--db and --all-targets choose a record: they need --best");
    if (st == RLT_STATUS_OK) st = is_best ? rlt_cli_op_load(args, &in.op, &d) : rlt_cli_input_load(args, &in, &d);
    if (st != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    if (is_best) {
        if (!(record = calloc(1, sizeof *record))) {
            rlt_cli_error("out of memory");
            rc = RLT_CLI_EXIT_INTERNAL;
            goto cleanup;
        }
        if ((rc = rlt_cli_best_input(args, &in, record, &db_path, &record_cc)) != RLT_CLI_EXIT_OK) goto cleanup;
        /* the record's threads, unless --threads says otherwise */
        if (!rlt_cli_args_has(args, "threads")) ropts.n_threads = record->target.n_threads;
    }
    rlt_build_opts bopts = {.cc = record_cc ? record_cc : cc, .cflags = rlt_cli_args_get(args, "cflags")};

    st = rlt_workload_create(in.op, &bopts, seed, &w, &d);
    if (st != RLT_STATUS_OK) {
        rlt_cli_error("cannot set up the workload (%s): %s", rlt_status_str(st), d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    rlt_run_result r;
    const rlt_nest *nest = in.nest;
    st = rlt_measure(w, &bopts, &ropts, 1, &nest, &r, &d);
    if (st == RLT_STATUS_OK && r.status == RLT_STATUS_IO_ERROR)
        st = rlt_fail(&d, RLT_STATUS_IO_ERROR, "%s", r.message);
    if (st != RLT_STATUS_OK) {
        rlt_cli_error("cannot measure (%s): %s", rlt_status_str(st), d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }

    rlt_machine machine;
    rlt_machine_detect(&machine);
    compiler = rlt_build_command(&bopts, rlt_nest_is_parallel(in.nest));
    if (in.sched) sched_text = rlt_sched_text(in.sched);
    report rep = {
        .in = &in,
        .r = &r,
        .machine = &machine,
        .compiler = compiler,
        .sched_text = sched_text,
        .n_threads = ropts.n_threads,
        .seed = seed,
        .record = record,
        .db_path = db_path,
    };
    if (!compiler || (in.sched && !sched_text)) {
        rlt_cli_error("out of memory formatting the result");
        rc = RLT_CLI_EXIT_INTERNAL;
        goto cleanup;
    }
    if (rlt_cli_args_has(args, "json")) {
        json = format_json(&rep);
        if (!json) {
            rlt_cli_error("out of memory formatting the result");
            rc = RLT_CLI_EXIT_INTERNAL;
            goto cleanup;
        }
        printf("%s\n", json);
    } else {
        print_text(&rep);
    }
    rc = r.status == RLT_STATUS_OK ? RLT_CLI_EXIT_OK : RLT_CLI_EXIT_KERNEL_FAILED;

cleanup:
    free(record);
    cJSON_free(json);
    rlt_free(sched_text);
    rlt_free(compiler);
    rlt_workload_destroy(w);
    rlt_cli_input_free(&in);
    return rc;
}

const rlt_cli_cmd rlt_cli_cmd_measure = {
    .name = "measure",
    .brief = "build, run, verify and time an op's kernel under a schedule",
    .synopsis = "(--op SPEC | --expr EXPR --shape SHAPE) [--schedule FILE | --best [--db FILE]] [options]",
    .summary = "Builds the kernel of an op under a schedule (the default schedule when none), runs it\n"
               "in a child process, checks it against the op's reference and times it. With --best,\n"
               "the schedule and compiler of the op's best record on this target ('rltune best', with\n"
               "the same --threads, --cc and --cflags): tuning times each candidate briefly, this\n"
               "measures the winner again, as carefully as asked.",
    .details = "Exit status: 0 the kernel is correct and timed; 1 it was measured but failed\n"
               "(BUILD_ERROR, BUILD_TIMEOUT, RUN_ERROR, RUN_TIMEOUT or WRONG_ANSWER; the result is\n"
               "still printed); 2 bad input; 3 environment or internal error.\n"
               "With --json, stdout holds exactly one JSON object: op, status, correct,\n"
               "time_ms {min, median}, gflops, schedule, schedule_file, record {id, db, config,\n"
               "gflops} (null without --best), threads, seed, number, n_samples, max_error, message,\n"
               "flops, target {cpu, cores, vector_floats, fma}, compiler, build_s (docs/cli.md).",
    .n_opts = (int)RLT_CLI_ARRAY_LEN(measure_opts),
    .opts = measure_opts,
    .run = run_measure,
};
