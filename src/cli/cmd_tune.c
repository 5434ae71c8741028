/*
 * cmd_tune.c - `rltune tune`: searches the op's space with a tuner
 * (rlt_tune), storing every measurement in the records database, and prints
 * the best configuration found (or one JSON object with --json).
 *
 * With --measure replay:FILE the measurements are answered from a dataset
 * (search/dataset.h) instead: nothing is compiled or run, no records are
 * written, and the tuners search only the dataset's configurations.
 *
 * On a terminal a progress line is redrawn after every batch; when stdout
 * is not a terminal nothing of it is printed. The first Ctrl-C asks the run
 * to stop after the batch in flight (everything measured is already stored
 * when it returns); a second one ends the process at once.
 *
 * Also what `rltune dataset` shares with it (cli.h): the measuring options
 * (rlt_cli_measure_opts_get), the progress line and the Ctrl-C handling.
 */
#include "cli/cli.h"
#include "policy/policy.h"
#include "search/dataset.h"
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
    {"tuner", "NAME", "random, grid, ga, xgb, xgb-rank (default), the learning agents ga-dqn, dqn, bandit, ppo, "
                      "or policy (--policy)"},
    {"trials", "N", "configurations to evaluate, at least 1 (default 200)"},
    {"seed", "S", "seed of the tuner, a whole number >= 0 (default 0)"},
    {"early-stopping", "N", "stop after N trials without a better configuration (default: never)"},
    {"final", "N", "at the end, measure the N best configurations again, 3 rounds of longer samples, and pick "
                   "the best of them (default 4; 0: off; live runs only)"},
    {"start", "KEY", "start the search from this configuration of the space (a config key, as 'rltune best' "
                     "prints it) and its neighbours"},
    {"no-other-threads", NULL, "do not start by measuring the op's best configurations recorded at other "
                               "thread counts (by default up to 3 of them, in the --db, come first)"},
    {"seeds", "N", "start by measuring N configurations built by rules, not search (default 8; 0: none; "
                   "live runs only)"},
    {"measure", "MODE", "live (default: build, run and time here) or replay:FILE (answer from a dataset)"},
    {"db", "FILE", "records database (default rltune.db in the working directory; none with a replay)"},
    {"transfer", "FILE", "warm-start xgb / xgb-rank / ppo from the records of other workloads of the op's kind "
                         "in FILE (may be the --db)"},
    {"tuner-config", "FILE", "the tuner's hyper-parameters from a JSON object of NAME: value ('rltune tuners')"},
    {"tuner-opt", "NAME=V,...", "hyper-parameters on the command line, applied after --tuner-config"},
    {"agent-in", "FILE", "start a learning tuner (ga-dqn, dqn, bandit, ppo) from the agent saved in FILE"},
    {"agent-out", "FILE", "save the learning tuner's agent to FILE when the run ends (may be --agent-in)"},
    {"policy", "FILE", "--tuner policy: the LoopTune policy whose result the search starts from"},
    {"policy-base", "NAME", "--tuner policy: the tuner that searches on from there (default xgb-rank)"},
    RLT_CLI_MEASURE_OPTS,
    {"json", NULL, "print exactly one JSON object on stdout instead of the report"},
};

/* ---- shared with `rltune dataset` (cli.h) -------------------------------- */

volatile sig_atomic_t rlt_cli_stop_requested;

static void on_interrupt(int sig)
{
    (void)sig;
    rlt_cli_stop_requested = 1;
}

void rlt_cli_interrupt_catch(void)
{
    struct sigaction sa = {0};
    sa.sa_handler = on_interrupt;
    sa.sa_flags = SA_RESETHAND; /* a second Ctrl-C ends the process */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
}

void rlt_cli_interrupt_release(void) { signal(SIGINT, SIG_DFL); }

void rlt_cli_progress_show(const rlt_tune_progress *p, void *ctx)
{
    const rlt_cli_progress *pc = ctx;
    if (!pc->is_tty) return;
    double eta = p->measurements_per_s > 0 ? (p->n_total - p->n_done) / p->measurements_per_s : 0;
    printf("\r\033[K[%s] %d/%d %s, best %.2f GFLOP/s, %.2f %s/s, ETA %.0f s%s", pc->what, p->n_done, p->n_total,
           pc->unit, p->best_gflops, p->measurements_per_s, pc->unit, eta,
           rlt_cli_stop_requested ? " (stopping)" : "");
    fflush(stdout);
}

int rlt_cli_measure_opts_get(const rlt_cli_args *args, rlt_tune_opts *o)
{
    rlt_diag d = {0};
    int64_t batch, threads, repeat;
    double min_repeat_ms, timeout_s;
    rlt_status st;
    if ((st = rlt_cli_args_int(args, "batch", 16, 1, 256, &batch, &d)) ||
        (st = rlt_cli_args_int(args, "threads", 1, 1, 256, &threads, &d)) ||
        (st = rlt_cli_args_int(args, "repeat", 3, 1, 1000, &repeat, &d)) ||
        (st = rlt_cli_args_double(args, "min-repeat-ms", 10, 0, true, 1e6, &min_repeat_ms, &d)) ||
        (st = rlt_cli_args_double(args, "timeout", 10, 0, true, 1e6, &timeout_s, &d))) {
        rlt_cli_error("%s", d.message);
        return RLT_CLI_EXIT_USAGE;
    }
    o->batch_size = (int)batch;
    o->n_threads = (int)threads;
    o->build = (rlt_build_opts){.cc = rlt_cli_args_get(args, "cc"), .cflags = rlt_cli_args_get(args, "cflags")};
    o->run = (rlt_run_opts){.repeat = (int)repeat, .min_repeat_ms = min_repeat_ms, .timeout_s = timeout_s};
    return RLT_CLI_EXIT_OK;
}

/* ---- tune ------------------------------------------------------------------ */

/* The tuner's hyper-parameters: --tuner-config's JSON object, then
 * --tuner-opt's NAME=VALUE list; every option must be one `tuner` reads. */
static int tuner_opts_get(const rlt_cli_args *args, const char *tuner, rlt_tuner_opts *o)
{
    int rc = RLT_CLI_EXIT_USAGE;
    rlt_diag d = {0};
    char *text = NULL, *list = NULL;
    cJSON *json = NULL;
    const char *path = rlt_cli_args_get(args, "tuner-config");
    if (path) {
        if (rlt_text_file_read(path, &text, &d) != RLT_STATUS_OK) {
            rlt_cli_error("--tuner-config: %s", d.message);
            goto done;
        }
        json = cJSON_Parse(text);
        if (!json || !cJSON_IsObject(json)) {
            rlt_cli_error("--tuner-config: %s: not a JSON object of tuner options (NAME: value)", path);
            goto done;
        }
        if (rlt_tuner_opts_set_json(o, tuner, json, path, &d) != RLT_STATUS_OK) {
            rlt_cli_error("--tuner-config: %s", d.message);
            goto done;
        }
    }
    const char *given = rlt_cli_args_get(args, "tuner-opt");
    if (given) {
        if (!(list = rlt_strdup(given))) {
            rlt_cli_error("out of memory");
            rc = RLT_CLI_EXIT_INTERNAL;
            goto done;
        }
        char *save = NULL;
        for (char *item = strtok_r(list, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
            char *eq = strchr(item, '=');
            if (!eq) {
                rlt_cli_error("--tuner-opt: '%s' is not NAME=VALUE", item);
                goto done;
            }
            *eq = '\0';
            const rlt_tuner_opt_info *info = rlt_tuner_opt_find(item);
            if (info && !rlt_tuner_opt_applies(info, tuner)) {
                rlt_cli_error("--tuner-opt: %s is an option of %s, not of %s", item, info->tuners, tuner);
                goto done;
            }
            if (rlt_tuner_opts_set(o, item, eq + 1, &d) != RLT_STATUS_OK) {
                rlt_cli_error("--tuner-opt: %s", d.message);
                goto done;
            }
        }
    }
    rc = RLT_CLI_EXIT_OK;
done:
    cJSON_Delete(json);
    rlt_free(text);
    rlt_free(list);
    return rc;
}

/* A string member, or null when value is NULL. */
static bool add_string_or_null(cJSON *o, const char *name, const char *value)
{
    return (value ? cJSON_AddStringToObject(o, name, value) : cJSON_AddNullToObject(o, name)) != NULL;
}

static char *format_json(const rlt_op *op, const char *tuner, const char *db_path, const char *replay_path,
                         const rlt_tune_opts *opts, const rlt_tune_result *r, const rlt_optimize_result *start,
                         const char *policy_path)
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
    is_ok &= cJSON_AddStringToObject(o, "measure", replay_path ? "replay" : "live") != NULL;
    is_ok &= add_string_or_null(o, "dataset", replay_path);
    is_ok &= cJSON_AddNumberToObject(o, "replayed", r->n_replayed) != NULL;
    is_ok &= cJSON_AddNumberToObject(o, "n_absent", r->n_absent) != NULL;
    is_ok &= cJSON_AddNumberToObject(o, "transfer_rows", r->n_transfer_rows) != NULL;
    is_ok &= cJSON_AddNumberToObject(o, "transfer_workloads", r->n_transfer_workloads) != NULL;
    is_ok &= cJSON_AddNumberToObject(o, "other_threads", r->n_other_threads) != NULL;
    is_ok &= cJSON_AddNumberToObject(o, "seeds", r->n_seeds) != NULL;
    is_ok &= add_string_or_null(o, "agent_in", opts->agent_in);
    is_ok &= add_string_or_null(o, "agent_out", opts->agent_out);
    if (start) {
        cJSON *p = cJSON_AddObjectToObject(o, "policy");
        if (!p) goto cleanup;
        is_ok &= cJSON_AddStringToObject(p, "file", policy_path) != NULL;
        is_ok &= cJSON_AddNumberToObject(p, "gflops", start->gflops) != NULL;
        is_ok &= cJSON_AddNumberToObject(p, "wall_s", start->wall_s) != NULL;
        is_ok &= cJSON_AddStringToObject(p, "schedule", start->schedule) != NULL;
        is_ok &= add_string_or_null(p, "start_config", r->start_config[0] ? r->start_config : NULL);
    }
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
    cJSON *final = cJSON_AddObjectToObject(o, "final");
    if (!final) goto cleanup;
    is_ok &= cJSON_AddNumberToObject(final, "candidates", r->n_final) != NULL;
    is_ok &= cJSON_AddNumberToObject(final, "rounds", r->final_rounds) != NULL;
    is_ok &= cJSON_AddNumberToObject(final, "wall_s", r->final_s) != NULL;
    is_ok &= cJSON_AddNumberToObject(final, "tuning_best_gflops", r->tuning_best_gflops) != NULL;
    is_ok &= add_string_or_null(final, "tuning_best_config", r->tuning_best_config[0] ? r->tuning_best_config : NULL);
    cJSON *curve = cJSON_AddArrayToObject(o, "curve");
    if (!curve) goto cleanup;
    for (int i = 0; i < r->n_trials; i++) {
        cJSON *x = cJSON_CreateNumber(r->curve[i]);
        is_ok &= x && cJSON_AddItemToArray(curve, x);
    }
    is_ok &= cJSON_AddNumberToObject(o, "wall_s", r->wall_s) != NULL;
    is_ok &= cJSON_AddNumberToObject(o, "tuner_s", r->tuner_s) != NULL;
    is_ok &= cJSON_AddNumberToObject(o, "measurements_per_s", r->measurements_per_s) != NULL;
    is_ok &= add_string_or_null(o, "db", db_path);
    is_ok &= cJSON_AddBoolToObject(o, "interrupted", r->was_stopped) != NULL;
    is_ok &= cJSON_AddBoolToObject(o, "stopped_early", r->was_stopped_early) != NULL;
    is_ok &= cJSON_AddBoolToObject(o, "space_exhausted", r->was_exhausted) != NULL;
    if (is_ok) text = cJSON_PrintUnformatted(o);
cleanup:
    cJSON_Delete(o);
    return text;
}

/* The --measure argument: NULL for live, else the dataset of replay:FILE.
 * Prints the error and returns the exit code on bad input. */
static int measure_mode_get(const rlt_cli_args *args, const char **out_replay_path)
{
    const char *mode = rlt_cli_args_get(args, "measure");
    *out_replay_path = NULL;
    if (!mode || strcmp(mode, "live") == 0) return RLT_CLI_EXIT_OK;
    if (strncmp(mode, "replay:", 7) != 0 || mode[7] == '\0') {
        rlt_cli_error("--measure: unknown mode '%.200s': expected live or replay:FILE (a dataset made by "
                      "'rltune dataset')",
                      mode);
        return RLT_CLI_EXIT_USAGE;
    }
    /* nothing is run in a replay: options about running would be ignored */
    static const char *const live_only[] = {"db", "repeat", "min-repeat-ms", "timeout"};
    for (size_t i = 0; i < RLT_ARRAY_LEN(live_only); i++)
        if (rlt_cli_args_has(args, live_only[i])) {
            rlt_cli_error("--%s cannot be combined with --measure replay: a replay %s", live_only[i],
                          i == 0 ? "stores no records" : "runs nothing");
            return RLT_CLI_EXIT_USAGE;
        }
    *out_replay_path = mode + 7;
    return RLT_CLI_EXIT_OK;
}

/* Opens --db for a live run; a dataset is refused (it holds only its own
 * measurements: replay it instead). */
static int db_open_for_tune(const char *db_path, rlt_db **out)
{
    rlt_diag d = {0};
    rlt_str value;
    rlt_str_init(&value);
    bool is_dataset = false;
    int rc = RLT_CLI_EXIT_OK;
    rlt_status st = rlt_db_open(db_path, &(rlt_db_opts){0}, out, &d);
    if (st == RLT_STATUS_OK) st = rlt_db_meta_get(*out, RLT_DATASET_META_KEY, &value, &is_dataset, &d);
    if (st != RLT_STATUS_OK) {
        rlt_cli_error("--db: %s", d.message);
        rc = st == RLT_STATUS_OUT_OF_MEMORY ? RLT_CLI_EXIT_INTERNAL : RLT_CLI_EXIT_USAGE;
    } else if (is_dataset) {
        rlt_cli_error("--db: '%s' is a dataset (made by 'rltune dataset'), which holds only its own measurements: "
                      "replay it with --measure replay:%s, or tune into another database",
                      db_path, db_path);
        rc = RLT_CLI_EXIT_USAGE;
    }
    if (rc != RLT_CLI_EXIT_OK) {
        rlt_db_close(*out);
        *out = NULL;
    }
    rlt_str_free(&value);
    return rc;
}

/* --tuner policy: rolls the policy out on the op (every state measured, with
 * the tuning run's compiler, flags, threads and timing) and gives the nest
 * it found, for the search to start from. Prints the error and returns the
 * exit code when it cannot. */
static int policy_start(const char *path, const rlt_op *op, const rlt_tune_opts *o, rlt_nest *out_nest,
                        rlt_optimize_result *out)
{
    rlt_diag d = {0};
    rlt_policy *p = NULL;
    rlt_env *env = NULL;
    rlt_sched *s = NULL;
    int rc = RLT_CLI_EXIT_OK;
    rlt_status st = rlt_policy_load(path, &p, &d);
    if (st != RLT_STATUS_OK) {
        rlt_cli_error("--policy: %s", d.message);
        return st == RLT_STATUS_OUT_OF_MEMORY ? RLT_CLI_EXIT_INTERNAL : RLT_CLI_EXIT_USAGE;
    }
    rlt_env_opts eo = {
        .cc = o->build.cc,
        .cflags = o->build.cflags,
        .cache_dir = o->build.cache_dir,
        .n_threads = o->n_threads,
        .repeat = o->run.repeat,
        .min_repeat_ms = o->run.min_repeat_ms,
        .timeout_s = o->run.timeout_s,
    };
    rlt_rollout_opts ro = {.max_steps = RLT_POLICY_DEFAULT_STEPS};
    fflush(stdout); /* the runner forks */
    if ((st = rlt_env_create(op->spec, &eo, &env, &d)) == RLT_STATUS_OK &&
        (st = rlt_env_reset(env, &d)) == RLT_STATUS_OK &&
        (st = rlt_policy_rollout(p, env, &ro, out, &d)) == RLT_STATUS_OK &&
        (st = rlt_sched_parse(out->schedule, "the policy's schedule", &s, &d)) == RLT_STATUS_OK)
        st = rlt_sched_apply(s, op, out_nest, &d);
    if (st != RLT_STATUS_OK) {
        rlt_cli_error("--tuner policy: the policy's rollout failed: %s", d.message);
        rc = rlt_cli_exit_for(st) == RLT_CLI_EXIT_USAGE ? RLT_CLI_EXIT_INTERNAL : rlt_cli_exit_for(st);
    }
    rlt_sched_destroy(s);
    rlt_env_destroy(env);
    rlt_policy_destroy(p);
    return rc;
}

static int run_tune(const rlt_cli_args *args)
{
    int rc = RLT_CLI_EXIT_USAGE;
    rlt_optimize_result start = {0};
    rlt_nest start_nest;
    rlt_diag d = {0};
    rlt_op *op = NULL;
    rlt_db *db = NULL, *transfer_db = NULL;
    rlt_replay *replay = NULL;
    rlt_tune_result r = {0};
    rlt_str target;
    rlt_str_init(&target);
    char *json = NULL;
    int64_t trials, seed, early, n_final, n_seeds;
    const char *replay_path = NULL, *db_path = NULL;
    rlt_tune_opts o = {0};
    rlt_status st;
    if ((st = rlt_cli_args_int(args, "trials", 200, 1, 1000000, &trials, &d)) ||
        (st = rlt_cli_args_int(args, "seed", 0, 0, INT64_MAX, &seed, &d)) ||
        (st = rlt_cli_args_int(args, "early-stopping", 0, 1, 1000000, &early, &d)) ||
        (st = rlt_cli_args_int(args, "final", 4, 0, 64, &n_final, &d)) ||
        (st = rlt_cli_args_int(args, "seeds", RLT_TUNE_SEEDS, 0, 64, &n_seeds, &d))) {
        rlt_cli_error("%s", d.message);
        goto cleanup;
    }
    if ((rc = rlt_cli_measure_opts_get(args, &o)) != RLT_CLI_EXIT_OK) goto cleanup;
    rc = RLT_CLI_EXIT_USAGE;
    if (!rlt_cli_args_has(args, "early-stopping")) early = 0;
    const char *tuner = rlt_cli_args_get(args, "tuner");
    if (!tuner) tuner = "xgb-rank";
    const char *policy_path = rlt_cli_args_get(args, "policy");
    bool is_policy = strcmp(tuner, "policy") == 0;
    if (is_policy != (policy_path != NULL) || (!is_policy && rlt_cli_args_has(args, "policy-base"))) {
        rlt_cli_error(is_policy ? "--tuner policy needs --policy FILE (a policy 'rltune train' wrote)"
                                : "--policy and --policy-base go with --tuner policy");
        goto cleanup;
    }
    if (is_policy) {
        tuner = rlt_cli_args_get(args, "policy-base");
        if (!tuner) tuner = "xgb-rank";
        if (strcmp(tuner, "policy") == 0) {
            rlt_cli_error("--policy-base: a tuner of the knob space, not policy");
            goto cleanup;
        }
    }
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
    if ((rc = measure_mode_get(args, &replay_path)) != RLT_CLI_EXIT_OK) goto cleanup;
    if ((rc = tuner_opts_get(args, tuner, &o.tuner_opts)) != RLT_CLI_EXIT_OK) goto cleanup;
    rc = RLT_CLI_EXIT_USAGE;
    if ((st = rlt_cli_op_load(args, &op, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    if (replay_path) {
        rlt_tune_target_key(&o.build, o.n_threads, &target);
        if (target.has_failed) {
            rlt_cli_error("out of memory computing the target key");
            rc = RLT_CLI_EXIT_INTERNAL;
            goto cleanup;
        }
        if ((st = rlt_replay_open(replay_path, op, target.data, &replay, &d)) != RLT_STATUS_OK) {
            /* the dataset is the user's argument, as a --db file is */
            rlt_cli_error("--measure: %s", d.message);
            rc = st == RLT_STATUS_OUT_OF_MEMORY ? RLT_CLI_EXIT_INTERNAL : RLT_CLI_EXIT_USAGE;
            goto cleanup;
        }
    } else {
        db_path = rlt_cli_args_get(args, "db");
        if (!db_path) db_path = "rltune.db";
        if ((rc = db_open_for_tune(db_path, &db)) != RLT_CLI_EXIT_OK) goto cleanup;
        rc = RLT_CLI_EXIT_USAGE;
    }
    const char *transfer_path = rlt_cli_args_get(args, "transfer");
    if (transfer_path) {
        if (strncmp(tuner, "xgb", 3) != 0 && strcmp(tuner, "ppo") != 0) {
            rlt_cli_error("--transfer warm-starts a cost model: it needs --tuner xgb, xgb-rank or ppo, not %s",
                          tuner);
            goto cleanup;
        }
        rlt_status ts = rlt_db_open(transfer_path, &(rlt_db_opts){.is_read_only = true}, &transfer_db, &d);
        if (ts != RLT_STATUS_OK) {
            rlt_cli_error("--transfer: %s", d.message);
            rc = ts == RLT_STATUS_OUT_OF_MEMORY ? RLT_CLI_EXIT_INTERNAL : RLT_CLI_EXIT_USAGE;
            goto cleanup;
        }
    }
    if (is_policy) {
        if (replay) {
            rlt_cli_error("--tuner policy measures its rollout live: it does not go with --measure replay");
            goto cleanup;
        }
        if ((rc = policy_start(policy_path, op, &o, &start_nest, &start)) != RLT_CLI_EXIT_OK) goto cleanup;
        rc = RLT_CLI_EXIT_USAGE;
        o.start_nest = &start_nest;
    }
    rlt_cli_progress pc = {.is_tty = isatty(STDOUT_FILENO) && !rlt_cli_args_has(args, "json"),
                           .what = "tune",
                           .unit = "trials"};
    o.tuner = tuner;
    o.n_trials = (int)trials;
    o.early_stopping = (int)early;
    o.n_final = (int)n_final;
    o.n_seeds = (int)n_seeds;
    if (rlt_cli_args_has(args, "start")) {
        if (is_policy) {
            rlt_cli_error("--start and --tuner policy both choose where the search starts: give one");
            goto cleanup;
        }
        o.start_key = rlt_cli_args_get(args, "start");
    }
    o.from_other_threads = !rlt_cli_args_has(args, "no-other-threads");
    o.seed = (uint64_t)seed;
    o.db = db;
    o.replay = replay;
    o.transfer_db = transfer_db;
    o.agent_in = rlt_cli_args_get(args, "agent-in");
    o.agent_out = rlt_cli_args_get(args, "agent-out");
    o.stop = &rlt_cli_stop_requested;
    o.progress = rlt_cli_progress_show;
    o.progress_ctx = &pc;
    rlt_cli_interrupt_catch();
    st = rlt_tune(op, &o, &r, &d);
    rlt_cli_interrupt_release();
    if (pc.is_tty) printf("\n");
    if (st != RLT_STATUS_OK) {
        if (o.start_key && strncmp(d.message, "the start configuration", 23) == 0)
            rlt_cli_error("--start: %s", d.message); /* nothing was measured */
        else if (replay)
            rlt_cli_error("tuning stopped (%s): %s", rlt_status_str(st), d.message);
        else
            rlt_cli_error("tuning stopped (%s): %s (%d trials stored in %s)", rlt_status_str(st), d.message,
                          r.n_measured, db_path);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    if (rlt_cli_args_has(args, "json")) {
        json = format_json(op, tuner, db_path, replay_path, &o, &r, is_policy ? &start : NULL, policy_path);
        if (!json) {
            rlt_cli_error("out of memory formatting the result");
            rc = RLT_CLI_EXIT_INTERNAL;
            goto cleanup;
        }
        printf("%s\n", json);
    } else {
        const char *ending = r.was_stopped ? ", interrupted" : r.was_stopped_early ? ", stopped early" :
                             r.was_exhausted ? ", space exhausted" : "";
        printf("op:        %s\n", op->spec);
        printf("tuner:     %s%s, seed %llu\n", is_policy ? "policy, then " : "", tuner, (unsigned long long)seed);
        if (replay) {
            const rlt_dataset_info *info = rlt_replay_info(replay);
            printf("measure:   replay of %s (%s: %d configurations%s%s)\n", replay_path,
                   info->is_complete ? "complete" : "sampled", info->n_configs, info->fixed[0] ? ", fixed " : "",
                   info->fixed);
            printf("trials:    %d (%d answered by the dataset, %d absent from it, %d failed)%s\n", r.n_trials,
                   r.n_replayed, r.n_absent, r.n_failed, ending);
        } else {
            printf("trials:    %d (%d measured, %d read back from %s, %d failed)%s\n", r.n_trials, r.n_measured,
                   r.n_from_db, db_path, r.n_failed, ending);
        }
        if (is_policy) {
            printf("policy:    %s: %.2f GFLOP/s in %.1f s (%lld states measured); the search started from\n",
                   policy_path, start.gflops, start.wall_s, (long long)start.n_evaluations);
            printf("           %s\n", r.start_config[0] ? r.start_config : "(no valid configuration near it)");
        }
        if (transfer_path)
            printf("transfer:  %d rows from %d other workload%s in %s\n", r.n_transfer_rows, r.n_transfer_workloads,
                   r.n_transfer_workloads == 1 ? "" : "s", transfer_path);
        if (r.n_other_threads > 0)
            printf("started:   with %d configuration%s from the op's best at other thread counts\n",
                   r.n_other_threads, r.n_other_threads == 1 ? "" : "s");
        if (r.n_seeds > 0)
            printf("seeds:     %d configuration%s built by rules, measured first\n", r.n_seeds,
                   r.n_seeds == 1 ? "" : "s");
        if (r.n_final > 0)
            printf("wall time: %.1f s (%.2f trials/s, then %.1f s for the final pick)\n", r.wall_s,
                   r.measurements_per_s, r.final_s);
        else
            printf("wall time: %.1f s (%.2f trials/s)\n", r.wall_s, r.measurements_per_s);
        if (r.n_final > 0) {
            bool is_same = strcmp(r.best_config, r.tuning_best_config) == 0;
            printf("final:     the %d best measured again, %d round%s of %d samples of >= %g ms each: %s\n",
                   r.n_final, r.final_rounds, r.final_rounds == 1 ? "" : "s", RLT_TUNE_FINAL_REPEAT,
                   RLT_TUNE_FINAL_MIN_MS, is_same ? "tuning's best stays" : "another one is faster");
            if (!is_same)
                printf("           (tuning's best had measured %.2f GFLOP/s: %s)\n", r.tuning_best_gflops,
                       r.tuning_best_config);
        }
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
    rlt_optimize_result_free(&start);
    rlt_tune_result_free(&r);
    rlt_replay_close(replay);
    rlt_db_close(transfer_db);
    rlt_db_close(db);
    rlt_op_destroy(op);
    rlt_str_free(&target);
    return rc;
}

const rlt_cli_cmd rlt_cli_cmd_tune = {
    .name = "tune",
    .brief = "search an op's schedule space for its fastest kernel, recording every measurement",
    .synopsis = "(--op SPEC | --expr EXPR --shape SHAPE) [--tuner NAME] [--trials N] [options]",
    .summary = "Searches the op's space (multi-level tiling, vectorisation, unrolling, packing, ...) with\n"
               "a tuner: each batch is built in parallel, then run, verified and timed one at a time,\n"
               "and stored in the records database before the tuner sees it. A configuration measured\n"
               "before for the same op and target is read back, not measured again.\n"
               "With --measure replay:FILE the measurements come from a dataset ('rltune dataset'):\n"
               "nothing is compiled or run, no records are written, and the tuner searches only the\n"
               "dataset's configurations; its op and its --threads, --cc and --cflags must be this\n"
               "run's (the CPU may differ: a replay answers for the machine that measured it).\n"
               "With --transfer FILE, xgb, xgb-rank and ppo first learn from FILE's records of other\n"
               "workloads of the same op kind on this target (AutoTVM's transfer learning), so even\n"
               "the first batch comes from the model instead of at random.",
    .details = "Ctrl-C stops after the batch in flight, with everything measured stored; a second\n"
               "Ctrl-C ends at once (committed batches are kept).\n"
               "Tuning times each candidate with a few short samples, which can flatter one; with\n"
               "--final N (default 4) the N best are then measured again, in turn, 3 rounds of 5\n"
               "samples of >= 25 ms, and the best median is the run's best. Each is stored as one\n"
               "more record, its configuration's newest, which 'rltune best' goes by. It is skipped\n"
               "when the run measured nothing new, was interrupted, or replays a dataset.\n"
               "With --json, stdout holds exactly one JSON object: op, tuner, trials, measured,\n"
               "from_records, failed, best {gflops, time_ms, config, schedule, cc}, final\n"
               "{candidates, rounds, wall_s, tuning_best_gflops, tuning_best_config} (the --final pick;\n"
               "candidates 0 when it did not run), curve (best GFLOP/s after each trial, as tuning\n"
               "measured it), wall_s, tuner_s (the part of it in the tuner),\n"
               "measurements_per_s, db (null in a replay), interrupted, stopped_early,\n"
               "space_exhausted, measure (live or replay), dataset (its file, or null), replayed\n"
               "(trials answered by it), n_absent (trials it lacks), transfer_rows and\n"
               "transfer_workloads (the --transfer warm start; 0 without), other_threads (the\n"
               "configurations taken from other thread counts), seeds (the rule-built ones),\n"
               "agent_in and agent_out (the files, or null).\n"
               "A live run first measures the op's best configurations recorded in the --db at other\n"
               "thread counts (up to 3, final picks first, each by its latest record; a parallel knob\n"
               "one space lacks is dropped, one it has is tried at each value), so a run at 2 threads\n"
               "after one at 1 starts from what that one found; --no-other-threads turns it off.\n"
               "Then it measures --seeds configurations built by rules (default 8): the register\n"
               "tiles with the most FMAs per load, the reduction axes whole, inputs packed where\n"
               "their vectors would be gathered, padded where the op reuses them enough, an outer\n"
               "axis parallel; a quarter of them blocked for this machine's caches (docs/cli.md,\n"
               "\"Seeds\"). The tuner's own proposals follow.\n"
               "A learning tuner's agent (networks, optimiser state, exploration counters) is saved\n"
               "with --agent-out when the run ends, interrupted or not, and loaded with --agent-in\n"
               "before its first proposal: on the same workload, or on another of the same op kind\n"
               "(ktune's transfer between layers; bandit needs the same knob choices).\n"
               "Hyper-parameters: 'rltune tuners' lists them with their defaults.",
    .n_opts = (int)RLT_ARRAY_LEN(tune_opts),
    .opts = tune_opts,
    .run = run_tune,
};
