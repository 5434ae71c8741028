/*
 * cmd_dataset.c - `rltune dataset`: measures an op's whole space (or a
 * large uniform sample of it) once into a dataset file
 * (rlt_dataset_measure, rltune/session.h), which `rltune tune --measure replay:FILE` answers
 * from. The measuring options, the progress line and Ctrl-C are tune's
 * (cmd_tune.c); so is resuming: running the same command again measures
 * only what the file lacks.
 */
#include "cli/cli.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const rlt_cli_opt dataset_opts[] = {
    {"op", "SPEC", "built-in op, e.g. matmul:M=64,N=64,K=64 (see 'rltune ops')"},
    {"expr", "EXPR", "a user expression instead, e.g. 'C[i,j] += A[i,k] * B[k,j]' (needs --shape)"},
    {"shape", "SHAPE", "extents of the expression's indices, e.g. i=64,j=64,k=64"},
    {"out", "FILE", "the dataset file: a new file, or this dataset's to resume it"},
    {"samples", "N", "measure every valid configuration if there are at most N, else a uniform sample of N, "
                     "1.." RLT_CLI_STR(RLT_DATASET_MAX_SAMPLES) " (default " RLT_CLI_STR(RLT_DATASET_DEFAULT_SAMPLES) ")"},
    {"seed", "S", "seed of the sample and of the measuring order, a whole number >= 0 (default 0)"},
    {"fix", "KNOBS", "measure only the sub-space with these knobs held, e.g. 'cc=gcc;vec=j*16;unroll=1' (knob=value "
                     "as in configuration keys, ';' between; default: none)"},
    RLT_CLI_MEASURE_OPTS,
    {"json", NULL, "print exactly one JSON object on stdout instead of the report"},
};

static char *format_json(const char *path, const rlt_dataset_info *info, const rlt_dataset_result *r)
{
    char *text = NULL;
    bool is_ok = true;
    char size[24];
    snprintf(size, sizeof size, "%" PRIu64, info->space_size);
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    is_ok &= cJSON_AddStringToObject(o, "dataset", path) != NULL;
    is_ok &= cJSON_AddStringToObject(o, "op", info->spec) != NULL;
    is_ok &= cJSON_AddStringToObject(o, "target", info->target) != NULL;
    is_ok &= cJSON_AddBoolToObject(o, "complete", info->is_complete) != NULL;
    is_ok &= cJSON_AddStringToObject(o, "space_size", size) != NULL;
    is_ok &= cJSON_AddStringToObject(o, "fixed", info->fixed) != NULL;
    if (info->n_valid >= 0)
        is_ok &= rlt_cli_json_add_number(o, "n_valid", (double)info->n_valid) != NULL;
    else
        is_ok &= cJSON_AddNullToObject(o, "n_valid") != NULL;
    is_ok &= rlt_cli_json_add_number(o, "samples", info->n_samples) != NULL;
    is_ok &= rlt_cli_json_add_number(o, "seed", (double)info->seed) != NULL;
    is_ok &= rlt_cli_json_add_number(o, "n_configs", info->n_configs) != NULL;
    is_ok &= rlt_cli_json_add_number(o, "measured", r->n_measured) != NULL;
    is_ok &= rlt_cli_json_add_number(o, "from_records", r->n_from_records) != NULL;
    is_ok &= rlt_cli_json_add_number(o, "failed", r->n_failed) != NULL;
    is_ok &= cJSON_AddBoolToObject(o, "finished", r->n_done == info->n_configs) != NULL;
    is_ok &= cJSON_AddBoolToObject(o, "interrupted", r->was_stopped) != NULL;
    cJSON *best = cJSON_AddObjectToObject(o, "best");
    if (!best) goto cleanup;
    is_ok &= rlt_cli_json_add_number(best, "gflops", r->best_gflops) != NULL;
    if (r->best_gflops > 0) {
        is_ok &= rlt_cli_json_add_number(best, "time_ms", r->best_time_ms) != NULL;
        is_ok &= cJSON_AddStringToObject(best, "config", r->best_config) != NULL;
    } else {
        is_ok &= cJSON_AddNullToObject(best, "time_ms") != NULL;
        is_ok &= cJSON_AddNullToObject(best, "config") != NULL;
    }
    is_ok &= rlt_cli_json_add_number(o, "wall_s", r->wall_s) != NULL;
    is_ok &= rlt_cli_json_add_number(o, "configs_per_s", r->measurements_per_s) != NULL;
    if (is_ok) text = cJSON_PrintUnformatted(o);
cleanup:
    cJSON_Delete(o);
    return text;
}

static void print_report(const char *path, const rlt_dataset_info *info, const rlt_dataset_result *r)
{
    printf("dataset:   %s\n", path);
    printf("op:        %s\n", info->spec);
    printf("target:    %s\n", info->target);
    if (info->fixed[0]) printf("fixed:     %s (the space measured is the sub-space of the other knobs)\n", info->fixed);
    if (info->is_complete)
        printf("space:     complete: every one of its %d valid configurations (of %" PRIu64 ")\n", info->n_configs,
               info->space_size);
    else if (info->n_valid >= 0)
        printf("space:     sampled: %d of its %" PRId64 " valid configurations (of %" PRIu64 "), seed %" PRIu64 "\n",
               info->n_configs, info->n_valid, info->space_size, info->seed);
    else
        printf("space:     sampled: %d valid configurations of %" PRIu64 " (valid ones not counted), seed %" PRIu64
               "\n",
               info->n_configs, info->space_size, info->seed);
    printf("configs:   %d of %d (%d measured now, %d before, %d failed)%s\n", r->n_done, info->n_configs,
           r->n_measured, r->n_from_records, r->n_failed,
           r->n_done == info->n_configs ? "" : ", interrupted: run the same command again to finish");
    printf("wall time: %.1f s (%.2f configs/s)\n", r->wall_s, r->measurements_per_s);
    if (r->best_gflops > 0) {
        printf("best:      %.2f GFLOP/s, %.4f ms (compiler %s)\n", r->best_gflops, r->best_time_ms, r->best_cc);
        printf("config:    %s\n", r->best_config);
    } else {
        printf("best:      none of the configurations measured OK\n");
    }
}

static int run_dataset(const rlt_cli_args *args)
{
    int rc = RLT_CLI_EXIT_USAGE;
    rlt_diag d = {0};
    rlt_op *op = NULL;
    rlt_dataset_result r = {0};
    rlt_dataset_info info = {0};
    char *json = NULL;
    int64_t samples, seed;
    rlt_session_options measure;
    rlt_session_options_init(&measure);
    rlt_status st;
    if ((st = rlt_cli_args_int(args, "samples", RLT_DATASET_DEFAULT_SAMPLES, 1, RLT_DATASET_MAX_SAMPLES, &samples,
                               &d)) ||
        (st = rlt_cli_args_int(args, "seed", 0, 0, INT64_MAX, &seed, &d))) {
        rlt_cli_error("%s", d.message);
        goto cleanup;
    }
    if ((rc = rlt_cli_measure_opts_get(args, &measure)) != RLT_CLI_EXIT_OK) goto cleanup;
    rc = RLT_CLI_EXIT_USAGE;
    const char *path = rlt_cli_args_get(args, "out");
    if (!path) {
        rlt_cli_error("no --out given: name the dataset file, e.g. --out matmul.db (a new file, or the "
                      "dataset to resume)");
        goto cleanup;
    }
    if ((st = rlt_cli_op_load(args, &op, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    rlt_cli_progress pc = {.is_tty = isatty(STDOUT_FILENO) && !rlt_cli_args_has(args, "json"),
                           .what = "dataset",
                           .unit = "configs"};
    rlt_dataset_opts o = {
        .n_samples = (int)samples,
        .fix = rlt_cli_args_get(args, "fix"),
        .seed = (uint64_t)seed,
        .batch_size = measure.batch_size,
        .n_threads = measure.n_threads,
        .build = measure.build,
        .run = measure.run,
        .executor = measure.executor,
        .stop = &rlt_cli_stop_requested,
        .progress = rlt_cli_progress_show,
        .progress_ctx = &pc,
    };
    rlt_cli_interrupt_catch();
    st = rlt_dataset_measure(op, path, &o, &info, &r, &d);
    rlt_cli_interrupt_release();
    if (pc.is_tty && r.n_done > 0) printf("\n");
    if (st != RLT_STATUS_OK) {
        /* the library's messages name the file or the knobs */
        if (r.n_measured > 0)
            rlt_cli_error("dataset stopped (%s): %s (%d configurations stored in %s)", rlt_status_str(st), d.message,
                          r.n_measured, path);
        else
            rlt_cli_error("%s", d.message);
        /* the file is the user's argument: one that cannot be opened is bad input */
        rc = st == RLT_STATUS_IO_ERROR && r.n_measured == 0 ? RLT_CLI_EXIT_USAGE : rlt_cli_exit_for(st);
        goto cleanup;
    }
    if (rlt_cli_args_has(args, "json")) {
        json = format_json(path, &info, &r);
        if (!json) {
            rlt_cli_error("out of memory formatting the result");
            rc = RLT_CLI_EXIT_INTERNAL;
            goto cleanup;
        }
        printf("%s\n", json);
    } else {
        print_report(path, &info, &r);
    }
    rc = RLT_CLI_EXIT_OK;
cleanup:
    cJSON_free(json);
    rlt_op_destroy(op);
    return rc;
}

const rlt_cli_cmd rlt_cli_cmd_dataset = {
    .name = "dataset",
    .brief = "measure an op's whole space, or a large sample of it, once, for replayed tuning",
    .synopsis = "(--op SPEC | --expr EXPR --shape SHAPE) --out FILE [--samples N] [--seed S] [options]",
    .summary = "Measures every valid configuration of the op's space when there are at most --samples of\n"
               "them, else a seeded uniform sample of --samples distinct valid ones, as 'rltune tune'\n"
               "measures (each batch built in parallel, then run, verified and timed one at a time, and\n"
               "stored before the next). The file is a records database ('rltune best' and 'history'\n"
               "read it) that 'rltune tune --measure replay:FILE' answers from, compiling and running\n"
               "nothing: tuners compared over many seeds in seconds, on the same measurements.",
    .details = "Resumable: Ctrl-C stops after the batch in flight (a second Ctrl-C at once); running the\n"
               "same command again measures only what the file lacks. --out must be a new file or this\n"
               "dataset's (same op, --samples, --seed, --threads, --cc, --cflags); a records database\n"
               "with other records is refused. The file's format: docs/datasets.md.\n"
               "With --json, stdout holds exactly one JSON object: dataset, op, target, complete,\n"
               "space_size, n_valid (null when not counted), samples, seed, n_configs, measured,\n"
               "from_records, failed, finished, interrupted, best {gflops, time_ms, config}, wall_s,\n"
               "configs_per_s.",
    .n_opts = (int)RLT_CLI_ARRAY_LEN(dataset_opts),
    .opts = dataset_opts,
    .run = run_dataset,
};
