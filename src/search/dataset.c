/*
 * dataset.c - datasets for replayed measurement (dataset.h): the plan of
 * what a dataset measures (rlt_dataset_plan: every valid configuration of
 * a small space, or a seeded uniform sample of a large one), measuring it
 * into a records database through a tuning session (rlt_dataset_build: a
 * plan proposing, measured live, the records read back and stored, so
 * building, measuring, storing and resuming are a tuning run's), and the
 * description kept in the file's rltune_meta table (format v1, written and
 * read here: docs/datasets.md). Replaying one is replay.c's.
 */
#include "search/dataset.h"

#include "core/json_number.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- the description (rltune_meta 'dataset', format v1) ------------------ */

static void copy_text(char *dst, size_t cap, const char *src) { snprintf(dst, cap, "%s", src ? src : ""); }

/* The description as one JSON object (free with cJSON_free); NULL when out
 * of memory. 64-bit numbers are strings of digits, as in the records'
 * JSON lines: JSON readers keep numbers as doubles. */
static char *info_to_json(const rlt_dataset_info *info)
{
    char size[24], seed[24];
    snprintf(size, sizeof size, "%" PRIu64, info->space_size);
    snprintf(seed, sizeof seed, "%" PRIu64, info->seed);
    cJSON *o = cJSON_CreateObject();
    bool is_ok = o != NULL;
    is_ok = is_ok && rlt_json_add_number(o, "v", RLT_DATASET_FORMAT_VERSION);
    is_ok = is_ok && cJSON_AddStringToObject(o, "spec", info->spec);
    is_ok = is_ok && cJSON_AddStringToObject(o, "target", info->target);
    is_ok = is_ok && rlt_json_add_number(o, "n_threads", info->n_threads);
    is_ok = is_ok && rlt_json_add_number(o, "vector_floats", info->vector_floats);
    is_ok = is_ok && cJSON_AddBoolToObject(o, "has_clang", info->has_clang);
    is_ok = is_ok && rlt_json_add_number(o, "space_version", RLT_SPACE_VERSION);
    is_ok = is_ok && cJSON_AddStringToObject(o, "space_size", size);
    is_ok = is_ok && cJSON_AddStringToObject(o, "fixed", info->fixed);
    if (info->n_valid >= 0)
        is_ok = is_ok && rlt_json_add_number(o, "n_valid", (double)info->n_valid);
    else
        is_ok = is_ok && cJSON_AddNullToObject(o, "n_valid");
    is_ok = is_ok && cJSON_AddBoolToObject(o, "is_complete", info->is_complete);
    is_ok = is_ok && rlt_json_add_number(o, "n_samples", info->n_samples);
    is_ok = is_ok && cJSON_AddStringToObject(o, "seed", seed);
    is_ok = is_ok && rlt_json_add_number(o, "n_configs", info->n_configs);
    char *text = is_ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return text;
}

static bool json_u64_text(const cJSON *item, uint64_t *out)
{
    if (!cJSON_IsString(item)) return false;
    return rlt_parse_u64(item->valuestring, out);
}

static bool json_int(const cJSON *item, double lo, double hi, double *out)
{
    if (!cJSON_IsNumber(item)) return false;
    double d = item->valuedouble;
    if (!(d >= lo && d <= hi) || d != (double)(int64_t)d) return false;
    *out = d;
    return true;
}

static bool json_text(const cJSON *item, char *dst, size_t cap)
{
    if (!cJSON_IsString(item) || strlen(item->valuestring) >= cap) return false;
    copy_text(dst, cap, item->valuestring);
    return true;
}

static rlt_status info_from_json(const char *text, const char *path, rlt_dataset_info *out, rlt_diag *diag)
{
    memset(out, 0, sizeof *out);
    rlt_status st = RLT_STATUS_OK;
    cJSON *o = cJSON_Parse(text);
    const char *bad = NULL;
    double d = 0;
    if (!cJSON_IsObject(o)) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                      "'%s': its dataset description is not a JSON object; rltune left the file as it is", path);
        goto cleanup;
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "v");
    if (!json_int(v, 1, 1e9, &d)) {
        bad = "v";
    } else if (d != RLT_DATASET_FORMAT_VERSION) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                      "'%s' is a dataset of format version %.0f; this rltune reads version %d: use a newer rltune",
                      path, d, RLT_DATASET_FORMAT_VERSION);
        goto cleanup;
    }
#define FIELD(name) cJSON_GetObjectItemCaseSensitive(o, name)
    if (!bad && !json_text(FIELD("spec"), out->spec, sizeof out->spec)) bad = "spec";
    if (!bad && !json_text(FIELD("target"), out->target, sizeof out->target)) bad = "target";
    if (!bad && !json_int(FIELD("n_threads"), 1, 256, &d)) bad = "n_threads";
    out->n_threads = (int)d;
    if (!bad && !json_int(FIELD("vector_floats"), 2, 64, &d)) bad = "vector_floats";
    out->vector_floats = (int)d;
    if (!bad && !cJSON_IsBool(FIELD("has_clang"))) bad = "has_clang";
    out->has_clang = cJSON_IsTrue(FIELD("has_clang"));
    if (!bad && !json_int(FIELD("space_version"), 0, 1e9, &d)) bad = "space_version";
    if (!bad && d != RLT_SPACE_VERSION) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "'%s' is a dataset of search space version %.0f; this rltune's space is version %d: its "
                      "configurations cannot be replayed here",
                      path, d, RLT_SPACE_VERSION);
        goto cleanup;
    }
    if (!bad && !json_u64_text(FIELD("space_size"), &out->space_size)) bad = "space_size";
    /* "fixed" came after the first datasets: absent means no knob fixed */
    if (!bad && FIELD("fixed") && !json_text(FIELD("fixed"), out->fixed, sizeof out->fixed)) bad = "fixed";
    out->n_valid = -1;
    if (!bad && !cJSON_IsNull(FIELD("n_valid"))) {
        if (!json_int(FIELD("n_valid"), 0, 9007199254740992.0, &d)) bad = "n_valid";
        out->n_valid = (int64_t)d;
    }
    if (!bad && !cJSON_IsBool(FIELD("is_complete"))) bad = "is_complete";
    out->is_complete = cJSON_IsTrue(FIELD("is_complete"));
    if (!bad && !json_int(FIELD("n_samples"), 1, RLT_DATASET_MAX_SAMPLES, &d)) bad = "n_samples";
    out->n_samples = (int)d;
    if (!bad && !json_u64_text(FIELD("seed"), &out->seed)) bad = "seed";
    if (!bad && !json_int(FIELD("n_configs"), 0, RLT_DATASET_MAX_SAMPLES, &d)) bad = "n_configs";
    out->n_configs = (int)d;
#undef FIELD
    if (bad)
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                      "'%s': its dataset description has a missing or malformed \"%s\" (format v%d, "
                      "docs/datasets.md); rltune left the file as it is",
                      path, bad, RLT_DATASET_FORMAT_VERSION);
cleanup:
    cJSON_Delete(o);
    return st;
}

rlt_status rlt_dataset_info_get(rlt_db *db, const char *path, rlt_dataset_info *out, bool *out_is_dataset,
                                rlt_diag *diag)
{
    rlt_str text;
    rlt_str_init(&text);
    *out_is_dataset = false;
    rlt_status st = rlt_db_meta_get(db, RLT_DATASET_META_KEY, &text, out_is_dataset, diag);
    if (st == RLT_STATUS_OK && *out_is_dataset) st = info_from_json(text.data ? text.data : "", path, out, diag);
    rlt_str_free(&text);
    return st;
}

rlt_status rlt_dataset_info_put(rlt_db *db, const rlt_dataset_info *info, rlt_diag *diag)
{
    char *text = info_to_json(info);
    if (!text) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory describing a dataset");
    rlt_status st = rlt_db_meta_set(db, RLT_DATASET_META_KEY, text, diag);
    cJSON_free(text);
    return st;
}

/* ---- the plan ------------------------------------------------------------- */

rlt_status rlt_dataset_plan(const rlt_space *space, const rlt_space_fixing *fixing, int n_samples, uint64_t seed,
                            rlt_config **out_configs, int *out_n, rlt_dataset_info *info, rlt_diag *diag)
{
    RLT_ASSERT(space && !space->subset && out_configs && out_n && info);
    *out_configs = NULL;
    *out_n = 0;
    if (n_samples < 1 || n_samples > RLT_DATASET_MAX_SAMPLES)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "a dataset samples 1 to %d configurations, not %d",
                        RLT_DATASET_MAX_SAMPLES, n_samples);
    rlt_space_fixing none;
    if (!fixing) {
        rlt_space_fixing_none(&none);
        fixing = &none;
    }
    uint64_t size = rlt_space_fixing_size(space, fixing);
    rlt_rng rng;
    /* Hashed, so that a dataset and a tuner given the same seed do not
     * draw the same numbers. */
    rlt_rng_seed(&rng, rlt_hash_str(seed, "rltune dataset"));
    rlt_config *configs = rlt_calloc((size_t)n_samples, sizeof *configs);
    uint64_t *valid = NULL;
    rlt_visited seen = {0};
    rlt_status st = RLT_STATUS_OK;
    int n = 0;
    if (!configs) goto oom;
    info->space_size = size;
    info->n_samples = n_samples;
    info->seed = seed;
    if (size <= RLT_DATASET_ENUMERATE_MAX) {
        size_t n_valid = 0, cap = 1024;
        valid = rlt_malloc(cap * sizeof *valid);
        if (!valid) goto oom;
        for (uint64_t i = 0; i < size; i++) {
            rlt_config c;
            rlt_space_fixing_config_of(space, fixing, i, &c);
            if (!rlt_space_is_valid(space, &c)) continue;
            if (n_valid == cap) {
                uint64_t *grown = rlt_realloc(valid, 2 * cap * sizeof *valid);
                if (!grown) goto oom;
                valid = grown;
                cap *= 2;
            }
            valid[n_valid++] = i;
        }
        /* A partial Fisher-Yates shuffle: the first n are a uniform sample
         * in a uniform order (all of them, shuffled, when they fit). */
        n = (int)RLT_MIN(n_valid, (size_t)n_samples);
        for (int j = 0; j < n; j++) {
            size_t r = (size_t)j + (size_t)rlt_rng_below(&rng, (uint64_t)(n_valid - (size_t)j));
            uint64_t x = valid[j];
            valid[j] = valid[r];
            valid[r] = x;
            rlt_space_fixing_config_of(space, fixing, valid[j], &configs[j]);
        }
        info->n_valid = (int64_t)n_valid;
        info->is_complete = n_valid <= (size_t)n_samples;
    } else {
        /* Rejection: uniform draws of the (sub-)space, the valid ones new
         * so far kept, in the order drawn. */
        uint64_t max_draws = 64 * (uint64_t)n_samples + 65536;
        for (uint64_t draw = 0; draw < max_draws && n < n_samples; draw++) {
            rlt_space_random(space, &rng, &configs[n]);
            rlt_space_fixing_apply(fixing, &configs[n]);
            uint64_t index = rlt_space_index_of(space, &configs[n]);
            if (rlt_visited_has(&seen, index)) continue;
            if (!rlt_visited_add(&seen, index)) goto oom;
            if (rlt_space_is_valid(space, &configs[n])) n++;
        }
        if (n < n_samples)
            rlt_log(RLT_LOG_WARN, "dataset of %s: found %d distinct valid configurations of the %d asked for",
                    space->op->spec, n, n_samples);
        info->n_valid = -1;
        info->is_complete = false;
    }
    info->n_configs = n;
    *out_configs = configs;
    *out_n = n;
    configs = NULL;
    goto cleanup;
oom:
    st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory planning a dataset of %s", space->op->spec);
cleanup:
    rlt_free(configs);
    rlt_free(valid);
    rlt_visited_free(&seen);
    return st;
}

/* ---- measuring ------------------------------------------------------------ */

static bool has_cc_knob(const rlt_space *s)
{
    for (int k = 0; k < s->n_knobs; k++)
        if (s->knobs[k].kind == RLT_KNOB_CC) return true;
    return false;
}

/* Says how a resumed dataset's description differs from this run's. */
static rlt_status check_resume(const char *path, const rlt_dataset_info *old, const rlt_dataset_info *now,
                               rlt_diag *diag)
{
    if (strcmp(old->spec, now->spec) != 0)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "'%s' is a dataset of %s, not %s: name a new file for this op's dataset", path, old->spec,
                        now->spec);
    if (strcmp(old->target, now->target) != 0)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "'%s' is a dataset for target %s; this run's target is %s: resume it with the --threads, "
                        "--cc and --cflags it was started with, on the same machine, or name a new file",
                        path, old->target, now->target);
    if (strcmp(old->fixed, now->fixed) != 0)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "'%s' is a dataset with fixed knobs '%s'; this run fixes '%s': resume it with its own --fix, "
                        "or name a new file",
                        path, old->fixed, now->fixed);
    if (old->n_samples != now->n_samples || old->seed != now->seed)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "'%s' is a dataset of --samples %d --seed %" PRIu64 "; this run asks for --samples %d --seed "
                        "%" PRIu64 ": resume it with its own, or name a new file",
                        path, old->n_samples, old->seed, now->n_samples, now->seed);
    return RLT_STATUS_OK;
}

rlt_status rlt_dataset_build(const rlt_op *op, rlt_db *db, const char *path, const rlt_dataset_opts *opts,
                             rlt_dataset_info *out_info, rlt_tune_result *out, rlt_diag *diag)
{
    RLT_ASSERT(op && db && path && opts && out_info && out);
    memset(out, 0, sizeof *out);
    memset(out_info, 0, sizeof *out_info);
    rlt_dataset_opts o = *opts;
    if (o.n_samples == 0) o.n_samples = RLT_DATASET_DEFAULT_SAMPLES;
    if (o.n_threads <= 0) o.n_threads = 1;
    rlt_config *plan = NULL;
    int n_plan = 0;
    rlt_dataset_info info = {0}, old = {0};
    bool is_resumed = false;
    rlt_record_target target;
    rlt_str target_key;
    rlt_str_init(&target_key);
    rlt_session *session = NULL;
    rlt_status st = RLT_STATUS_OK;
    if (o.n_samples < 1 || o.n_samples > RLT_DATASET_MAX_SAMPLES) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "a dataset samples 1 to %d configurations, not %d",
                      RLT_DATASET_MAX_SAMPLES, o.n_samples);
        goto cleanup;
    }
    if ((st = rlt_session_target(&o.build, o.n_threads, &target, diag)) != RLT_STATUS_OK) goto cleanup;
    target.is_weights_cold = o.run.cold_weights;
    rlt_record_target_key(&target, &target_key);
    if (target_key.has_failed || target_key.len >= sizeof info.target) {
        st = rlt_fail(diag, target_key.has_failed ? RLT_STATUS_OUT_OF_MEMORY : RLT_STATUS_INVALID_ARGUMENT,
                      "the target key of a dataset: %s", target_key.has_failed ? "out of memory" : "too long");
        goto cleanup;
    }
    copy_text(info.spec, sizeof info.spec, op->spec);
    copy_text(info.target, sizeof info.target, target_key.data);
    info.n_threads = o.n_threads;
    info.n_samples = o.n_samples;
    info.seed = o.seed;
    if ((st = rlt_dataset_info_get(db, path, &old, &is_resumed, diag)) != RLT_STATUS_OK) goto cleanup;
    if (is_resumed) {
        info.vector_floats = old.vector_floats;
        info.has_clang = old.has_clang;
    } else {
        int64_t n_records = 0;
        if ((st = rlt_db_count(db, NULL, &n_records, diag)) != RLT_STATUS_OK) goto cleanup;
        if (n_records > 0) {
            st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                          "'%s' is a records database with %" PRId64 " record%s, not a dataset: name a new file "
                          "(a dataset holds only its own measurements)",
                          path, n_records, n_records == 1 ? "" : "s");
            goto cleanup;
        }
        rlt_target t;
        rlt_target_detect(&t);
        info.vector_floats = t.vector_floats;
    }
    /* The space: the machine's vector width and whether clang is offered
     * are fixed when the dataset starts, so a resumed run plans the same. */
    rlt_space_opts sopts = {.n_threads = o.n_threads, .vector_floats = info.vector_floats};
    if (is_resumed) {
        sopts.has_clang = info.has_clang;
        sopts.no_clang = !info.has_clang;
    }
    rlt_space space;
    if ((st = rlt_space_create(op, &sopts, &space, diag)) != RLT_STATUS_OK) goto cleanup;
    info.has_clang = has_cc_knob(&space);
    sopts.has_clang = info.has_clang;
    sopts.no_clang = !info.has_clang;
    rlt_space_fixing fixing;
    if ((st = rlt_space_fixing_parse(&space, o.fix ? o.fix : "", &fixing, diag)) != RLT_STATUS_OK) goto cleanup;
    rlt_str fixed;
    rlt_str_init(&fixed);
    rlt_space_fixing_text(&space, &fixing, &fixed);
    bool is_fixed_ok = !fixed.has_failed && (!fixed.data || strlen(fixed.data) < sizeof info.fixed);
    copy_text(info.fixed, sizeof info.fixed, fixed.data);
    rlt_str_free(&fixed);
    if (!is_fixed_ok) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "fixed knobs: too many to describe (at most %zu characters)",
                      sizeof info.fixed - 1);
        goto cleanup;
    }
    if (is_resumed && (st = check_resume(path, &old, &info, diag)) != RLT_STATUS_OK) goto cleanup;
    if ((st = rlt_dataset_plan(&space, &fixing, o.n_samples, o.seed, &plan, &n_plan, &info, diag)) != RLT_STATUS_OK)
        goto cleanup;
    if (is_resumed && (old.space_size != info.space_size || old.n_valid != info.n_valid ||
                       old.n_configs != info.n_configs || old.is_complete != info.is_complete)) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "'%s' was started on a space of %" PRIu64 " configurations planning %d; this rltune plans %d "
                      "of %" PRIu64 ": the space has changed since, name a new file",
                      path, old.space_size, old.n_configs, info.n_configs, info.space_size);
        goto cleanup;
    }
    if (n_plan == 0) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "the space of %s has no valid configuration to measure",
                      op->spec);
        goto cleanup;
    }
    if (!is_resumed && (st = rlt_dataset_info_put(db, &info, diag)) != RLT_STATUS_OK) goto cleanup;
    /* measured as a tuning run measures, the plan proposing, the records
     * of an earlier run of it read back */
    rlt_session_opts so = {.n_trials = n_plan,
                           .batch_size = o.batch_size,
                           .n_threads = o.n_threads,
                           .stop = o.stop,
                           .progress = o.progress,
                           .progress_ctx = o.progress_ctx};
    rlt_proposer *proposer = NULL;
    rlt_measurer *m = NULL;
    if ((st = rlt_session_create(op, &space, &so, &session, diag)) != RLT_STATUS_OK ||
        (st = rlt_proposer_plan_create(n_plan, plan, &proposer, diag)) != RLT_STATUS_OK ||
        (st = rlt_session_add_proposer(session, proposer, diag)) != RLT_STATUS_OK ||
        (st = rlt_measurer_live_create(op, rlt_session_space(session), &target, &o.build, &o.run,
                                       RLT_DATASET_PROPOSER, o.seed, &m, diag)) != RLT_STATUS_OK)
        goto cleanup;
    rlt_measurer_live_set_executor(m, o.executor);
    if ((st = rlt_measurer_recorded_create(db, op, rlt_session_space(session), &target, RLT_DATASET_PROPOSER, m, &m,
                                           diag)) != RLT_STATUS_OK)
        goto cleanup;
    rlt_session_set_measurer(session, m);
    while (st == RLT_STATUS_OK && !rlt_session_is_done(session)) st = rlt_session_step(session, diag);
    if (st == RLT_STATUS_OK) st = rlt_session_finish(session, diag);
cleanup:
    if (session) rlt_session_take_result(session, out);
    rlt_session_destroy(session);
    *out_info = info;
    rlt_free(plan);
    rlt_str_free(&target_key);
    return st;
}

rlt_status rlt_dataset_measure(const rlt_op *op, const char *path, const rlt_dataset_opts *opts,
                               rlt_dataset_info *out_info, rlt_dataset_result *out, rlt_diag *diag)
{
    memset(out, 0, sizeof *out);
    memset(out_info, 0, sizeof *out_info);
    rlt_db *db = NULL;
    rlt_tune_result r = {0};
    rlt_status st = rlt_db_open(path, &(rlt_db_opts){0}, &db, diag);
    if (st == RLT_STATUS_OK) st = rlt_dataset_build(op, db, path, opts, out_info, &r, diag);
    *out = (rlt_dataset_result){
        .n_done = r.n_trials,
        .n_measured = r.n_measured,
        .n_from_records = r.n_from_db,
        .n_failed = r.n_failed,
        .was_stopped = r.was_stopped,
        .best_gflops = r.best_gflops,
        .best_time_ms = r.best_time_ms,
        .wall_s = r.wall_s,
        .measurements_per_s = r.measurements_per_s,
    };
    copy_text(out->best_config, sizeof out->best_config, r.best_config);
    copy_text(out->best_cc, sizeof out->best_cc, r.best_cc);
    rlt_tune_result_free(&r);
    rlt_db_close(db);
    return st;
}

rlt_status rlt_dataset_refusing_open(const char *path, const char *instead, rlt_db **out, rlt_diag *diag)
{
    rlt_str value;
    rlt_str_init(&value);
    bool is_dataset = false;
    rlt_status st = rlt_db_open(path, NULL, out, diag);
    if (st == RLT_STATUS_OK) st = rlt_db_meta_get(*out, RLT_DATASET_META_KEY, &value, &is_dataset, diag);
    if (st == RLT_STATUS_OK && is_dataset)
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "'%s' is a dataset (made by 'rltune dataset'), which holds only its own measurements: %s", path,
                      instead);
    if (st != RLT_STATUS_OK) {
        rlt_db_close(*out);
        *out = NULL;
    }
    rlt_str_free(&value);
    return st;
}
