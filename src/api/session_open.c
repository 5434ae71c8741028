/*
 * session_open.c - the public face of a tuning session (rltune/session.h):
 * options with their defaults, rlt_session_open (the files the options
 * name opened and checked, the tuner's hyper-parameters read, a LoopTune
 * policy rolled out first when asked, then the session tune.c builds), the
 * summary of where a session stands, and its JSON, which `rltune tune
 * --json` prints.
 */
#include "policy/policy.h"
#include "search/replay.h"
#include "search/tune.h"

#include "core/json_number.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

void rlt_session_options_init(rlt_session_options *o)
{
    memset(o, 0, sizeof *o);
    o->tuner = "xgb-rank";
    o->n_trials = 200;
    o->batch_size = 16;
    o->n_threads = 1;
    o->run = (rlt_run_opts){.repeat = 3, .min_repeat_ms = 10, .timeout_s = 10};
    o->from_other_threads = true;
    o->n_seeds = RLT_TUNE_SEEDS;
    o->n_final = 4;
}

/* ---- opening ------------------------------------------------------------------ */

/* What an open makes before the session owns it. */
typedef struct opening {
    rlt_db *db, *transfer_db;
    rlt_replay *replay;
    rlt_optimize_result policy;
    bool has_policy;
    rlt_nest start_nest;
    rlt_session_option bad; /* the option a failure is about */
} opening;

static rlt_status refuse(opening *x, rlt_session_option which, rlt_status st)
{
    x->bad = which;
    return st;
}

static rlt_status check_numbers(const rlt_session_options *o, rlt_diag *diag)
{
    struct {
        const char *name;
        double value, lo, hi;
    } checks[] = {
        {"n_trials", o->n_trials, 1, 1e6},      {"batch_size", o->batch_size, 1, 256},
        {"n_threads", o->n_threads, 1, 256},    {"early_stopping", o->early_stopping, 0, 1e6},
        {"n_seeds", o->n_seeds, 0, 64},         {"n_final", o->n_final, 0, 64},
        {"run.repeat", o->run.repeat, 0, 1000}, {"run.min_repeat_ms", o->run.min_repeat_ms, 0, 1e6},
        {"run.timeout_s", o->run.timeout_s, 0, 1e6},
    };
    for (size_t i = 0; i < RLT_ARRAY_LEN(checks); i++)
        if (!(checks[i].value >= checks[i].lo && checks[i].value <= checks[i].hi))
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s is %g: expected %g to %g", checks[i].name,
                            checks[i].value, checks[i].lo, checks[i].hi);
    return RLT_STATUS_OK;
}

/* The tuner's hyper-parameters: the file's JSON object, then the NAME=VALUE
 * list; every option must be one the tuner reads. */
static rlt_status tuner_options(const rlt_session_options *o, rlt_tuner_opts *out, opening *x, rlt_diag *diag)
{
    char *text = NULL, *list = NULL;
    cJSON *json = NULL;
    rlt_status st = RLT_STATUS_OK;
    if (o->tuner_config_path) {
        x->bad = RLT_OPTION_TUNER_CONFIG;
        if ((st = rlt_text_file_read(o->tuner_config_path, &text, diag)) != RLT_STATUS_OK) goto done;
        json = cJSON_Parse(text);
        if (!json || !cJSON_IsObject(json)) {
            st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s: not a JSON object of tuner options (NAME: value)",
                          o->tuner_config_path);
            goto done;
        }
        if ((st = rlt_tuner_opts_set_json(out, o->tuner, json, o->tuner_config_path, diag)) != RLT_STATUS_OK)
            goto done;
    }
    if (o->tuner_options) {
        x->bad = RLT_OPTION_TUNER_OPTIONS;
        if (!(list = rlt_strdup(o->tuner_options))) {
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading tuner options");
            goto done;
        }
        char *save = NULL;
        for (char *item = strtok_r(list, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
            char *eq = strchr(item, '=');
            if (!eq) {
                st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "'%s' is not NAME=VALUE", item);
                goto done;
            }
            *eq = '\0';
            const rlt_tuner_opt_info *info = rlt_tuner_opt_find(item);
            if (info && !rlt_tuner_opt_applies(info, o->tuner)) {
                st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s is an option of %s, not of %s", item,
                              info->tuners, o->tuner);
                goto done;
            }
            if ((st = rlt_tuner_opts_set(out, item, eq + 1, diag)) != RLT_STATUS_OK) goto done;
        }
    }
    x->bad = RLT_OPTION_NONE;
done:
    cJSON_Delete(json);
    rlt_free(text);
    rlt_free(list);
    return st;
}

/* The records database of a live run; a dataset is refused. */
static rlt_status open_db(const char *path, rlt_db **out, rlt_diag *diag)
{
    return rlt_dataset_refusing_open(path, "replay it (replay_path), or tune into another database", out, diag);
}

/* The policy rolled out on the op, every state measured with the run's
 * compiler, flags, threads and timing: the nest it found, for the search
 * to start from. A failure here is not the option's: the policy loaded. */
static rlt_status roll_out_policy(const rlt_policy *p, const rlt_op *op, const rlt_tune_opts *t, opening *x,
                                  rlt_diag *diag)
{
    rlt_env *env = NULL;
    rlt_sched *s = NULL;
    rlt_status st = RLT_STATUS_OK;
    rlt_env_opts eo = {
        .cc = t->build.cc,
        .cflags = t->build.cflags,
        .cache_dir = t->build.cache_dir,
        .n_threads = t->n_threads,
        .repeat = t->run.repeat,
        .min_repeat_ms = t->run.min_repeat_ms,
        .timeout_s = t->run.timeout_s,
    };
    rlt_rollout_opts ro = {.max_steps = RLT_POLICY_DEFAULT_STEPS};
    if ((st = rlt_env_create(op->spec, &eo, &env, diag)) == RLT_STATUS_OK &&
        (st = rlt_env_reset(env, diag)) == RLT_STATUS_OK &&
        (st = rlt_policy_rollout(p, env, &ro, &x->policy, diag)) == RLT_STATUS_OK &&
        (st = rlt_sched_parse(x->policy.schedule, "the policy's schedule", &s, diag)) == RLT_STATUS_OK)
        st = rlt_sched_apply(s, op, &x->start_nest, diag);
    if (st != RLT_STATUS_OK) rlt_diag_prefix(diag, "the policy's rollout failed");
    x->has_policy = st == RLT_STATUS_OK;
    rlt_sched_destroy(s);
    rlt_env_destroy(env);
    return st;
}

static void free_db(void *db) { rlt_db_close(db); }
static void free_replay(void *r) { rlt_replay_close(r); }

/* Copies the paths and the policy's result into the session's about. */
static rlt_status note_about(rlt_session *s, const rlt_session_options *o, opening *x, rlt_diag *diag)
{
    rlt_session_about *a = rlt_session_about_mutable(s);
    struct {
        char **dst;
        const char *src;
    } texts[] = {{&a->db_path, o->db_path}, {&a->replay_path, o->replay_path}, {&a->policy_path, o->policy_path}};
    for (size_t i = 0; i < RLT_ARRAY_LEN(texts); i++)
        if (texts[i].src && !(*texts[i].dst = rlt_strdup(texts[i].src)))
            return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory opening a tuning session");
    if (x->has_policy) {
        a->has_policy = true;
        a->policy_gflops = x->policy.gflops;
        a->policy_wall_s = x->policy.wall_s;
        a->policy_n_evaluations = x->policy.n_evaluations;
        a->policy_schedule = x->policy.schedule;
        x->policy.schedule = NULL;
    }
    return RLT_STATUS_OK;
}

static rlt_status session_open(const rlt_op *op, const rlt_session_options *o, rlt_session **out,
                               rlt_session_option *out_bad_option, rlt_diag *diag)
{
    *out = NULL;
    opening x = {0};
    rlt_session *s = NULL;
    rlt_policy *policy = NULL;
    rlt_tune_opts t = {0};
    rlt_str target;
    rlt_str_init(&target);
    rlt_status st = RLT_STATUS_OK;
    const char *tuner = o->tuner ? o->tuner : "xgb-rank";
    if (!rlt_tuner_is_known(tuner)) {
        rlt_str known;
        rlt_str_init(&known);
        for (const char *const *n = rlt_tuner_names(); *n; n++) rlt_str_printf(&known, "%s%s", *n, n[1] ? ", " : "");
        st = refuse(&x, RLT_OPTION_TUNER,
                    rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "unknown tuner '%s' (tuners: %s)", tuner,
                             known.data ? known.data : ""));
        rlt_str_free(&known);
        goto done;
    }
    if ((st = check_numbers(o, diag)) != RLT_STATUS_OK) {
        x.bad = RLT_OPTION_NUMBERS;
        goto done;
    }
    t = (rlt_tune_opts){.tuner = tuner,
                        .n_trials = o->n_trials,
                        .batch_size = o->batch_size,
                        .early_stopping = o->early_stopping,
                        .seed = o->seed,
                        .n_threads = o->n_threads,
                        .build = o->build,
                        .run = o->run,
                        .executor = o->executor,
                        .agent_in = o->agent_in,
                        .agent_out = o->agent_out,
                        .start_key = o->start_key,
                        .from_other_threads = o->from_other_threads,
                        .space = {.no_clang = o->no_clang},
                        .n_seeds = o->replay_path ? 0 : o->n_seeds,
                        .n_final = o->replay_path ? 0 : o->n_final,
                        .stop = o->stop,
                        .progress = o->progress,
                        .progress_ctx = o->progress_ctx};
    if ((st = tuner_options(o, &t.tuner_opts, &x, diag)) != RLT_STATUS_OK) goto done;
    /* what needs no file first, so that a refused session makes none */
    if (o->replay_path && o->db_path) {
        st = refuse(&x, RLT_OPTION_DB,
                    rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "a replay stores no records: no db_path with it"));
        goto done;
    }
    if (o->replay_path && o->policy_path) {
        st = refuse(&x, RLT_OPTION_POLICY,
                    rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                             "a policy's rollout is measured live: it does not go with a replay"));
        goto done;
    }
    if (o->replay_path && o->executor) {
        st = refuse(&x, RLT_OPTION_REPLAY,
                    rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                             "a replay builds and runs nothing: no executor goes with it"));
        goto done;
    }
    if (o->transfer_path && !(rlt_tuner_flags(tuner) & RLT_TUNER_USES_TRANSFER)) {
        char names[128];
        rlt_tuner_names_with(RLT_TUNER_USES_TRANSFER, names, sizeof names);
        st = refuse(&x, RLT_OPTION_TRANSFER,
                    rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                             "transfer warm-starts a cost model: it needs a tuner with one (%s), not %s", names,
                             tuner));
        goto done;
    }
    if ((o->agent_in || o->agent_out) && !(rlt_tuner_flags(tuner) & RLT_TUNER_HAS_AGENT)) {
        char names[128];
        rlt_tuner_names_with(RLT_TUNER_HAS_AGENT, names, sizeof names);
        st = refuse(&x, RLT_OPTION_AGENT,
                    rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                             "tuner %s has no agent to load or save (the learning tuners are %s)", tuner, names));
        goto done;
    }
    if (o->start_key && o->policy_path) {
        st = refuse(&x, RLT_OPTION_START,
                    rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                             "a start configuration and a policy both choose where the search starts: give one"));
        goto done;
    }
    if (o->replay_path) {
        rlt_tune_target_key(&t.build, t.n_threads, &target);
        if (target.has_failed) {
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory computing the target key");
            goto done;
        }
        if ((st = rlt_replay_open(o->replay_path, op, target.data, &x.replay, diag)) != RLT_STATUS_OK) {
            x.bad = RLT_OPTION_REPLAY;
            goto done;
        }
        t.replay = x.replay;
    }
    if (o->start_key && (st = rlt_tune_start_key_check(op, &t, diag)) != RLT_STATUS_OK) {
        x.bad = RLT_OPTION_START;
        goto done;
    }
    if (o->policy_path && (st = rlt_policy_load(o->policy_path, &policy, diag)) != RLT_STATUS_OK) {
        x.bad = RLT_OPTION_POLICY;
        goto done;
    }
    if (o->transfer_path) {
        if ((st = rlt_db_open(o->transfer_path, &(rlt_db_opts){.is_read_only = true}, &x.transfer_db, diag)) !=
            RLT_STATUS_OK) {
            x.bad = RLT_OPTION_TRANSFER;
            goto done;
        }
        t.transfer_db = x.transfer_db;
    }
    if (!o->replay_path && o->db_path && (st = open_db(o->db_path, &x.db, diag)) != RLT_STATUS_OK) {
        x.bad = RLT_OPTION_DB;
        goto done;
    }
    t.db = x.db;
    if (policy) {
        fflush(stdout); /* the runner forks */
        if ((st = roll_out_policy(policy, op, &t, &x, diag)) != RLT_STATUS_OK) goto done;
        t.start_nest = &x.start_nest;
    }
    if ((st = rlt_tune_start(op, &t, &s, diag)) != RLT_STATUS_OK) {
        /* the agent file is the one input read only now */
        if (o->agent_in && (st == RLT_STATUS_IO_ERROR || st == RLT_STATUS_PARSE_ERROR)) x.bad = RLT_OPTION_AGENT;
        goto done;
    }
    if ((st = note_about(s, o, &x, diag)) != RLT_STATUS_OK) goto done;
    /* the session closes what it reads from, after its measurer (an attach
     * takes its resource, failing or not) */
    struct {
        void *ptr;
        void (*free_fn)(void *);
    } owned[] = {{x.db, free_db}, {x.transfer_db, free_db}, {x.replay, free_replay}};
    x.db = x.transfer_db = NULL;
    x.replay = NULL;
    for (size_t i = 0; i < RLT_ARRAY_LEN(owned); i++) {
        if (!owned[i].ptr) continue;
        if (st == RLT_STATUS_OK) st = rlt_session_attach(s, owned[i].ptr, owned[i].free_fn, diag);
        else owned[i].free_fn(owned[i].ptr);
    }
    if (st != RLT_STATUS_OK) goto done;
    *out = s;
    s = NULL;
done:
    if (out_bad_option) *out_bad_option = st == RLT_STATUS_OK ? RLT_OPTION_NONE : x.bad;
    /* the session goes before what its measurer reads from */
    rlt_session_destroy(s);
    rlt_db_close(x.db);
    rlt_db_close(x.transfer_db);
    rlt_replay_close(x.replay);
    rlt_optimize_result_free(&x.policy);
    rlt_policy_destroy(policy);
    rlt_str_free(&target);
    return st;
}

/* The options' strings are the caller's for the call only, and a session
 * keeps some of them (the compiler, its flags and cache directory in its
 * measurer, where to save the agent): the session opens from copies, held
 * in one block that it frees. */
rlt_status rlt_session_open(const rlt_op *op, const rlt_session_options *o, rlt_session **out,
                            rlt_session_option *out_bad_option, rlt_diag *diag)
{
    *out = NULL;
    rlt_session_options c = *o;
    const char **fields[] = {&c.tuner,         &c.build.cc,  &c.build.cflags, &c.build.cache_dir, &c.db_path,
                             &c.replay_path,   &c.transfer_path, &c.agent_in, &c.agent_out,      &c.start_key,
                             &c.policy_path,   &c.tuner_config_path, &c.tuner_options};
    size_t len = 1;
    for (size_t i = 0; i < RLT_ARRAY_LEN(fields); i++)
        if (*fields[i]) len += strlen(*fields[i]) + 1;
    char *block = rlt_malloc(len), *next = block;
    if (!block) {
        if (out_bad_option) *out_bad_option = RLT_OPTION_NONE;
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory opening a session");
    }
    for (size_t i = 0; i < RLT_ARRAY_LEN(fields); i++) {
        if (!*fields[i]) continue;
        size_t n = strlen(*fields[i]) + 1;
        memcpy(next, *fields[i], n);
        *fields[i] = next;
        next += n;
    }
    rlt_status st = session_open(op, &c, out, out_bad_option, diag);
    if (st != RLT_STATUS_OK) {
        rlt_free(block);
        return st;
    }
    if ((st = rlt_session_attach(*out, block, rlt_free, diag)) != RLT_STATUS_OK) { /* it freed the block */
        rlt_session_destroy(*out);
        *out = NULL;
        if (out_bad_option) *out_bad_option = RLT_OPTION_NONE;
    }
    return st;
}

/* ---- where a session stands --------------------------------------------------- */

void rlt_session_summary_get(const rlt_session *s, rlt_session_summary *out)
{
    const rlt_tune_result *r = rlt_session_result(s);
    const rlt_session_about *a = rlt_session_about_get(s);
    *out = (rlt_session_summary){
        .n_trials = r->n_trials,
        .n_total = rlt_session_n_total(s),
        .n_measured = r->n_measured,
        .n_from_records = r->n_from_db,
        .n_failed = r->n_failed,
        .n_replayed = r->n_replayed,
        .n_absent = r->n_absent,
        .best_gflops = r->best_gflops,
        .best_time_ms = r->best_time_ms,
        .best_config = r->best_config,
        .best_schedule = r->best_schedule,
        .best_cc = r->best_cc,
        .curve = r->curve,
        .wall_s = r->wall_s,
        .tuner_s = r->tuner_s,
        .measurements_per_s = r->measurements_per_s,
        .is_done = rlt_session_is_done(s),
        .was_stopped = r->was_stopped,
        .was_stopped_early = r->was_stopped_early,
        .was_exhausted = r->was_exhausted,
        .n_seeds = r->n_seeds,
        .n_other_threads = r->n_other_threads,
        .n_transfer_rows = r->n_transfer_rows,
        .n_transfer_workloads = r->n_transfer_workloads,
        .start_config = r->start_config,
        .n_final = r->n_final,
        .final_rounds = r->final_rounds,
        .final_repeat = RLT_TUNE_FINAL_REPEAT,
        .final_min_repeat_ms = RLT_TUNE_FINAL_MIN_MS,
        .final_s = r->final_s,
        .tuning_best_gflops = r->tuning_best_gflops,
        .tuning_best_config = r->tuning_best_config,
        .has_policy = a->has_policy,
        .policy_gflops = a->policy_gflops,
        .policy_wall_s = a->policy_wall_s,
        .policy_n_evaluations = a->policy_n_evaluations,
        .policy_schedule = a->policy_schedule ? a->policy_schedule : "",
    };
}

/* ---- the JSON of `rltune tune --json` ----------------------------------------- */

/* A string member, or null when value is NULL. */
static bool add_string_or_null(cJSON *o, const char *name, const char *value)
{
    return (value ? cJSON_AddStringToObject(o, name, value) : cJSON_AddNullToObject(o, name)) != NULL;
}

char *rlt_session_json(const rlt_session *s)
{
    const rlt_tune_result *r = rlt_session_result(s);
    const rlt_session_about *a = rlt_session_about_get(s);
    char *text = NULL, *out = NULL;
    bool is_ok = true;
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    is_ok &= cJSON_AddStringToObject(o, "op", rlt_session_op(s)->spec) != NULL;
    is_ok &= cJSON_AddStringToObject(o, "tuner", a->tuner) != NULL;
    is_ok &= rlt_json_add_number(o, "trials", r->n_trials) != NULL;
    is_ok &= rlt_json_add_number(o, "measured", r->n_measured) != NULL;
    is_ok &= rlt_json_add_number(o, "from_records", r->n_from_db) != NULL;
    is_ok &= rlt_json_add_number(o, "failed", r->n_failed) != NULL;
    is_ok &= cJSON_AddStringToObject(o, "measure", a->replay_path ? "replay" : "live") != NULL;
    is_ok &= add_string_or_null(o, "dataset", a->replay_path);
    is_ok &= rlt_json_add_number(o, "replayed", r->n_replayed) != NULL;
    is_ok &= rlt_json_add_number(o, "n_absent", r->n_absent) != NULL;
    is_ok &= rlt_json_add_number(o, "transfer_rows", r->n_transfer_rows) != NULL;
    is_ok &= rlt_json_add_number(o, "transfer_workloads", r->n_transfer_workloads) != NULL;
    is_ok &= rlt_json_add_number(o, "other_threads", r->n_other_threads) != NULL;
    is_ok &= rlt_json_add_number(o, "seeds", r->n_seeds) != NULL;
    is_ok &= add_string_or_null(o, "agent_in", a->agent_in);
    is_ok &= add_string_or_null(o, "agent_out", a->agent_out);
    if (a->has_policy) {
        cJSON *p = cJSON_AddObjectToObject(o, "policy");
        if (!p) goto cleanup;
        is_ok &= cJSON_AddStringToObject(p, "file", a->policy_path ? a->policy_path : "") != NULL;
        is_ok &= rlt_json_add_number(p, "gflops", a->policy_gflops) != NULL;
        is_ok &= rlt_json_add_number(p, "wall_s", a->policy_wall_s) != NULL;
        is_ok &= cJSON_AddStringToObject(p, "schedule", a->policy_schedule ? a->policy_schedule : "") != NULL;
        is_ok &= add_string_or_null(p, "start_config", r->start_config[0] ? r->start_config : NULL);
    }
    cJSON *best = cJSON_AddObjectToObject(o, "best");
    if (!best) goto cleanup;
    is_ok &= rlt_json_add_number(best, "gflops", r->best_gflops) != NULL;
    if (r->best_gflops > 0) {
        is_ok &= rlt_json_add_number(best, "time_ms", r->best_time_ms) != NULL;
        is_ok &= cJSON_AddStringToObject(best, "config", r->best_config) != NULL;
        is_ok &= cJSON_AddStringToObject(best, "schedule", r->best_schedule) != NULL;
        is_ok &= cJSON_AddStringToObject(best, "cc", r->best_cc) != NULL;
    } else {
        is_ok &= cJSON_AddNullToObject(best, "time_ms") != NULL;
        is_ok &= cJSON_AddNullToObject(best, "config") != NULL;
    }
    cJSON *final = cJSON_AddObjectToObject(o, "final");
    if (!final) goto cleanup;
    is_ok &= rlt_json_add_number(final, "candidates", r->n_final) != NULL;
    is_ok &= rlt_json_add_number(final, "rounds", r->final_rounds) != NULL;
    is_ok &= rlt_json_add_number(final, "wall_s", r->final_s) != NULL;
    is_ok &= rlt_json_add_number(final, "tuning_best_gflops", r->tuning_best_gflops) != NULL;
    is_ok &= add_string_or_null(final, "tuning_best_config", r->tuning_best_config[0] ? r->tuning_best_config : NULL);
    cJSON *curve = cJSON_AddArrayToObject(o, "curve");
    if (!curve) goto cleanup;
    for (int i = 0; i < r->n_trials; i++) {
        cJSON *x = rlt_json_number(r->curve[i]);
        is_ok &= x && cJSON_AddItemToArray(curve, x);
    }
    is_ok &= rlt_json_add_number(o, "wall_s", r->wall_s) != NULL;
    is_ok &= rlt_json_add_number(o, "tuner_s", r->tuner_s) != NULL;
    is_ok &= rlt_json_add_number(o, "measurements_per_s", r->measurements_per_s) != NULL;
    is_ok &= add_string_or_null(o, "db", a->db_path);
    is_ok &= cJSON_AddBoolToObject(o, "interrupted", r->was_stopped) != NULL;
    is_ok &= cJSON_AddBoolToObject(o, "stopped_early", r->was_stopped_early) != NULL;
    is_ok &= cJSON_AddBoolToObject(o, "space_exhausted", r->was_exhausted) != NULL;
    if (is_ok) text = cJSON_PrintUnformatted(o);
    if (text) out = rlt_strdup(text);
cleanup:
    cJSON_free(text);
    cJSON_Delete(o);
    return out;
}
