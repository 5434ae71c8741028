/*
 * cmd_tune.c - `rltune tune`: searches the op's space with a tuner
 * (rlt_tune), storing every measurement in the records database, and prints
 * the best configuration found (or one JSON object with --json).
 *
 * On a terminal a progress line is redrawn after every batch; when stdout
 * is not a terminal nothing of it is printed. The first Ctrl-C asks the run
 * to stop after the batch in flight (everything measured is already stored
 * when it returns); a second one ends the process at once.
 */
#include "cli/cli.h"
#include "search/tune.h"

#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const rlt_cli_opt tune_opts[] = {
    {"op", "SPEC", "built-in op, e.g. matmul:M=512,N=512,K=512 (see 'rltune ops')"},
    {"expr", "EXPR", "a user expression instead, e.g. 'C[i,j] += A[i,k] * B[k,j]' (needs --shape)"},
    {"shape", "SHAPE", "extents of the expression's indices, e.g. i=64,j=64,k=64"},
    {"tuner", "NAME", "random, grid, ga, xgb or xgb-rank (default xgb-rank)"},
    {"trials", "N", "configurations to evaluate, at least 1 (default 200)"},
    {"seed", "S", "seed of the tuner, a whole number >= 0 (default 0)"},
    {"early-stopping", "N", "stop after N trials without a better configuration (default: never)"},
    {"batch", "N", "configurations built and measured together, 1..256 (default 16)"},
    {"threads", "N", "threads for parallel loops, 1..256 (default 1); above 1 the space gets a parallel knob"},
    {"db", "FILE", "records database (default rltune.db in the working directory)"},
    {"cc", "CMD", "base compiler (default $RLTUNE_CC, else gcc); the space may also try clang"},
    {"cflags", "FLAGS", "compiler flags, one argument (default \"" RLT_DEFAULT_CFLAGS "\")"},
    {"repeat", "N", "timed samples per candidate, at least 1 (default 3)"},
    {"min-repeat-ms", "X", "shortest timed sample in milliseconds, above 0 (default 10)"},
    {"timeout", "S", "time limit in seconds for one candidate's run, above 0 (default 10)"},
    {"json", NULL, "print exactly one JSON object on stdout instead of the report"},
};

static volatile sig_atomic_t stop_requested;

static void on_interrupt(int sig)
{
    (void)sig;
    stop_requested = 1;
}

typedef struct progress_ctx {
    bool is_tty;
} progress_ctx;

static void show_progress(const rlt_tune_progress *p, void *ctx)
{
    const progress_ctx *pc = ctx;
    if (!pc->is_tty) return;
    double eta = p->measurements_per_s > 0 ? (p->n_total - p->n_done) / p->measurements_per_s : 0;
    printf("\r\033[K[tune] %d/%d trials, best %.2f GFLOP/s, %.2f trials/s, ETA %.0f s%s", p->n_done, p->n_total,
           p->best_gflops, p->measurements_per_s, eta, stop_requested ? " (stopping)" : "");
    fflush(stdout);
}

static char *format_json(const rlt_op *op, const char *tuner, const char *db_path, const rlt_tune_result *r)
{
    char *text = NULL;
    bool is_ok = true;
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    is_ok &= cJSON_AddStringToObject(o, "op", op->spec) != NULL;
    is_ok &= cJSON_AddStringToObject(o, "tuner", tuner) != NULL;
    is_ok &= cJSON_AddNumberToObject(o, "trials", r->n_trials) != NULL;
    is_ok &= cJSON_AddNumberToObject(o, "measured", r->n_measured) != NULL;
    is_ok &= cJSON_AddNumberToObject(o, "from_records", r->n_from_db) != NULL;
    is_ok &= cJSON_AddNumberToObject(o, "failed", r->n_failed) != NULL;
    cJSON *best = cJSON_AddObjectToObject(o, "best");
    if (!best) goto cleanup;
    is_ok &= cJSON_AddNumberToObject(best, "gflops", r->best_gflops) != NULL;
    if (r->best_gflops > 0) {
        is_ok &= cJSON_AddNumberToObject(best, "time_ms", r->best_time_ms) != NULL;
        is_ok &= cJSON_AddStringToObject(best, "config", r->best_config) != NULL;
        is_ok &= cJSON_AddStringToObject(best, "schedule", r->best_schedule) != NULL;
        is_ok &= cJSON_AddStringToObject(best, "cc", r->best_cc) != NULL;
    } else {
        is_ok &= cJSON_AddNullToObject(best, "time_ms") != NULL;
        is_ok &= cJSON_AddNullToObject(best, "config") != NULL;
    }
    cJSON *curve = cJSON_AddArrayToObject(o, "curve");
    if (!curve) goto cleanup;
    for (int i = 0; i < r->n_trials; i++) {
        cJSON *x = cJSON_CreateNumber(r->curve[i]);
        is_ok &= x && cJSON_AddItemToArray(curve, x);
    }
    is_ok &= cJSON_AddNumberToObject(o, "wall_s", r->wall_s) != NULL;
    is_ok &= cJSON_AddNumberToObject(o, "measurements_per_s", r->measurements_per_s) != NULL;
    is_ok &= cJSON_AddStringToObject(o, "db", db_path) != NULL;
    is_ok &= cJSON_AddBoolToObject(o, "interrupted", r->was_stopped) != NULL;
    is_ok &= cJSON_AddBoolToObject(o, "stopped_early", r->was_stopped_early) != NULL;
    is_ok &= cJSON_AddBoolToObject(o, "space_exhausted", r->was_exhausted) != NULL;
    if (is_ok) text = cJSON_PrintUnformatted(o);
cleanup:
    cJSON_Delete(o);
    return text;
}

static int run_tune(const rlt_cli_args *args)
{
    int rc = RLT_CLI_EXIT_USAGE;
    rlt_diag d = {0};
    rlt_op *op = NULL;
    rlt_db *db = NULL;
    rlt_tune_result r = {0};
    char *json = NULL;
    int64_t trials, seed, early, batch, threads, repeat;
    double min_repeat_ms, timeout_s;
    rlt_status st;
    if ((st = rlt_cli_args_int(args, "trials", 200, 1, 1000000, &trials, &d)) ||
        (st = rlt_cli_args_int(args, "seed", 0, 0, INT64_MAX, &seed, &d)) ||
        (st = rlt_cli_args_int(args, "early-stopping", 0, 1, 1000000, &early, &d)) ||
        (st = rlt_cli_args_int(args, "batch", 16, 1, 256, &batch, &d)) ||
        (st = rlt_cli_args_int(args, "threads", 1, 1, 256, &threads, &d)) ||
        (st = rlt_cli_args_int(args, "repeat", 3, 1, 1000, &repeat, &d)) ||
        (st = rlt_cli_args_double(args, "min-repeat-ms", 10, 0, true, 1e6, &min_repeat_ms, &d)) ||
        (st = rlt_cli_args_double(args, "timeout", 10, 0, true, 1e6, &timeout_s, &d))) {
        rlt_cli_error("%s", d.message);
        goto cleanup;
    }
    if (!rlt_cli_args_has(args, "early-stopping")) early = 0;
    const char *tuner = rlt_cli_args_get(args, "tuner");
    if (!tuner) tuner = "xgb-rank";
    bool is_known = false;
    for (const char *const *n = rlt_tuner_names(); *n; n++) is_known |= strcmp(*n, tuner) == 0;
    if (!is_known) {
        rlt_str known;
        rlt_str_init(&known);
        for (const char *const *n = rlt_tuner_names(); *n; n++) rlt_str_printf(&known, "%s%s", *n, n[1] ? ", " : "");
        rlt_cli_error("--tuner: unknown tuner '%s' (tuners: %s)", tuner, known.data ? known.data : "");
        rlt_str_free(&known);
        goto cleanup;
    }
    if ((st = rlt_cli_op_load(args, &op, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    const char *db_path = rlt_cli_args_get(args, "db");
    if (!db_path) db_path = "rltune.db";
    if ((st = rlt_db_open(db_path, &(rlt_db_opts){0}, &db, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("--db: %s", d.message);
        rc = st == RLT_STATUS_OUT_OF_MEMORY ? RLT_CLI_EXIT_INTERNAL : RLT_CLI_EXIT_USAGE;
        goto cleanup;
    }
    progress_ctx pc = {.is_tty = isatty(STDOUT_FILENO) && !rlt_cli_args_has(args, "json")};
    rlt_tune_opts o = {
        .tuner = tuner,
        .n_trials = (int)trials,
        .batch_size = (int)batch,
        .early_stopping = (int)early,
        .seed = (uint64_t)seed,
        .n_threads = (int)threads,
        .build = {.cc = rlt_cli_args_get(args, "cc"), .cflags = rlt_cli_args_get(args, "cflags")},
        .run = {.repeat = (int)repeat, .min_repeat_ms = min_repeat_ms, .timeout_s = timeout_s},
        .db = db,
        .stop = &stop_requested,
        .progress = show_progress,
        .progress_ctx = &pc,
    };
    struct sigaction sa = {0};
    sa.sa_handler = on_interrupt;
    sa.sa_flags = SA_RESETHAND; /* a second Ctrl-C ends the process */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    st = rlt_tune(op, &o, &r, &d);
    signal(SIGINT, SIG_DFL);
    if (pc.is_tty) printf("\n");
    if (st != RLT_STATUS_OK) {
        rlt_cli_error("tuning stopped (%s): %s (%d trials stored in %s)", rlt_status_str(st), d.message,
                      r.n_measured, db_path);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    if (rlt_cli_args_has(args, "json")) {
        json = format_json(op, tuner, db_path, &r);
        if (!json) {
            rlt_cli_error("out of memory formatting the result");
            rc = RLT_CLI_EXIT_INTERNAL;
            goto cleanup;
        }
        printf("%s\n", json);
    } else {
        printf("op:        %s\n", op->spec);
        printf("tuner:     %s, seed %llu\n", tuner, (unsigned long long)seed);
        printf("trials:    %d (%d measured, %d read back from %s, %d failed)%s\n", r.n_trials, r.n_measured,
               r.n_from_db, db_path, r.n_failed,
               r.was_stopped ? ", interrupted" : r.was_stopped_early ? ", stopped early" :
               r.was_exhausted ? ", space exhausted" : "");
        printf("wall time: %.1f s (%.2f trials/s)\n", r.wall_s, r.measurements_per_s);
        if (r.best_gflops > 0) {
            printf("best:      %.2f GFLOP/s, %.4f ms (compiler %s)\n", r.best_gflops, r.best_time_ms, r.best_cc);
            printf("config:    %s\n", r.best_config);
            printf("schedule:\n%s", r.best_schedule);
        } else {
            printf("best:      none of the trials measured OK\n");
        }
    }
    rc = RLT_CLI_EXIT_OK;
cleanup:
    cJSON_free(json);
    rlt_tune_result_free(&r);
    rlt_db_close(db);
    rlt_op_destroy(op);
    return rc;
}

const rlt_cli_cmd rlt_cli_cmd_tune = {
    .name = "tune",
    .brief = "search an op's schedule space for its fastest kernel, recording every measurement",
    .synopsis = "(--op SPEC | --expr EXPR --shape SHAPE) [--tuner NAME] [--trials N] [options]",
    .summary = "Searches the op's space (multi-level tiling, vectorisation, unrolling, packing, ...) with\n"
               "a tuner: each batch is built in parallel, then run, verified and timed one at a time,\n"
               "and stored in the records database before the tuner sees it. A configuration measured\n"
               "before for the same op and target is read back, not measured again.",
    .details = "Ctrl-C stops after the batch in flight, with everything measured stored; a second\n"
               "Ctrl-C ends at once (committed batches are kept).\n"
               "With --json, stdout holds exactly one JSON object: op, tuner, trials, measured,\n"
               "from_records, failed, best {gflops, time_ms, config, schedule, cc}, curve (best\n"
               "GFLOP/s after each trial), wall_s, measurements_per_s, db, interrupted,\n"
               "stopped_early, space_exhausted.",
    .n_opts = (int)RLT_ARRAY_LEN(tune_opts),
    .opts = tune_opts,
    .run = run_tune,
};
