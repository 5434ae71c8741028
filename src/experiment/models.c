/*
 * models.c - experiments over whole models (docs/experiment.md, "Whole
 * models"): each (model, seed, tuner) run tunes the model's tasks from one
 * budget with Ansor's task scheduler (rlt_model_tuning_*, rltune/model.h)
 * into a records database of its own, then compiles the network from it
 * and times it (rlt_net_time, as `rltune run` does); each model is also
 * timed untuned (seed schedules) once. In benchmark mode nothing is tuned:
 * the networks are compiled from the databases the runs left and timed.
 *
 * Entry points: rlt_exp_models_open (every model loaded, every tuner
 * created on every task's space, the runs' databases read), and
 * rlt_exp_models_run.
 *
 * A run's database says whose run it holds in its rltune_meta entry
 * RLT_EXP_RUN_META_KEY, a JSON object rewritten after every round: the
 * tuner, its options, the seed, the target, the tuning time so far and the
 * latency estimate after every round. A rerun reads it: the tuning
 * continues from the records (the budget counts them) and the curve and
 * the time from the entry, so that a run interrupted or killed resumes,
 * and a finished one is only timed again.
 *
 * This file is a program on the public model API (rltune/model.h), as the
 * CLI is: tuning and compiling networks live in src/api/.
 */
#include "experiment/experiment.h"

#include "core/json_number.h"
#include "db/db.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define RUN_FORMAT "rltune-experiment-run"
#define RUN_FORMAT_VERSION 1

typedef struct model_entry {
    rlt_model *model;
    int n_tasks;
    double flops;        /* sum over the tasks of weight x FLOPs */
    /* made at the first timing: the reference evaluation takes a while */
    int n_inputs, n_outputs;
    rlt_array **inputs;  /* seeded random, as `rltune run` makes them */
    rlt_array **outputs;
    rlt_array **reference;
} model_entry;

struct rlt_exp_models {
    const rlt_exp_config *c;
    model_entry *entries; /* per workload */
    rlt_str target;       /* the target key the runs' records are filed under */
};

const char *rlt_exp_ending_name(rlt_exp_ending e)
{
    switch (e) {
    case RLT_EXP_ENDED_TRIALS: return "trials";
    case RLT_EXP_ENDED_TIME: return "time";
    case RLT_EXP_ENDED_TASKS: return "tasks";
    case RLT_EXP_ENDED_STOPPED: return "interrupted";
    case RLT_EXP_ENDED_BENCHMARK: return "benchmark";
    }
    return "?";
}

/* ---- the options every run shares ----------------------------------------- */

static int n_threads_of(const rlt_exp_config *c) { return c->n_threads > 0 ? c->n_threads : 1; }

static rlt_build_opts build_of(const rlt_exp_config *c, const char *cache_dir)
{
    return (rlt_build_opts){.cc = c->cc, .cflags = c->cflags, .cache_dir = cache_dir};
}

/* The tuner's options as a session takes them: "NAME=VALUE,...", owned
 * (rlt_free); NULL with *has_failed when out of memory, NULL alone when
 * there are none. */
static char *options_text(const rlt_exp_tuner *tu, bool *has_failed)
{
    cJSON *json = cJSON_Parse(tu->options_json);
    rlt_str s;
    rlt_str_init(&s);
    const cJSON *item;
    cJSON_ArrayForEach(item, json)
    {
        if (cJSON_IsString(item))
            rlt_str_printf(&s, "%s%s=%s", s.len ? "," : "", item->string, item->valuestring);
        else
            rlt_str_printf(&s, "%s%s=%.17g", s.len ? "," : "", item->string, item->valuedouble);
    }
    if (!json) s.has_failed = true;
    cJSON_Delete(json);
    bool is_empty = s.len == 0 && !s.has_failed;
    char *text = rlt_str_take(&s);
    if (!text && !is_empty) *has_failed = true;
    if (is_empty) {
        rlt_free(text);
        return NULL;
    }
    return text;
}

/* ---- a run's entry in its database ------------------------------------------ */

/* What a run's RLT_EXP_RUN_META_KEY entry says. */
typedef struct run_entry {
    char tuner[64];
    cJSON *options; /* owned */
    uint64_t seed;
    char target[512];
    double tuning_s;
    int n_points;
    rlt_report_point *points; /* owned */
} run_entry;

static void run_entry_free(run_entry *e)
{
    cJSON_Delete(e->options);
    rlt_free(e->points);
    memset(e, 0, sizeof *e);
}

static rlt_status push_point(rlt_report_point **points, int *n, rlt_report_point p, rlt_diag *diag)
{
    /* the capacity follows from the count: 16, then doubled whenever the
     * count reaches a power of two (every array of points grows here) */
    int n_now = *n;
    if (n_now == 0 || (n_now >= 16 && (n_now & (n_now - 1)) == 0)) {
        int cap = n_now ? 2 * n_now : 16;
        rlt_report_point *grown = rlt_realloc(*points, (size_t)cap * sizeof *grown);
        if (!grown) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory keeping a latency curve");
        *points = grown;
    }
    (*points)[(*n)++] = p;
    return RLT_STATUS_OK;
}

/* Reads the entry of db (*found false when it has none). Errors: the
 * database's, and INVALID_ARGUMENT for an entry rltune did not write. */
static rlt_status run_entry_read(rlt_db *db, const char *path, run_entry *out, bool *found, rlt_diag *diag)
{
    memset(out, 0, sizeof *out);
    rlt_str text;
    rlt_str_init(&text);
    rlt_status st = rlt_db_meta_get(db, RLT_EXP_RUN_META_KEY, &text, found, diag);
    if (st != RLT_STATUS_OK || !*found) {
        rlt_str_free(&text);
        return st;
    }
    cJSON *j = text.data ? cJSON_Parse(text.data) : NULL;
    rlt_str_free(&text);
    const cJSON *format = cJSON_GetObjectItemCaseSensitive(j, "format");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "v");
    const cJSON *tuner = cJSON_GetObjectItemCaseSensitive(j, "tuner");
    const cJSON *options = cJSON_GetObjectItemCaseSensitive(j, "options");
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(j, "seed");
    const cJSON *target = cJSON_GetObjectItemCaseSensitive(j, "target");
    const cJSON *tuning = cJSON_GetObjectItemCaseSensitive(j, "tuning_s");
    const cJSON *curve = cJSON_GetObjectItemCaseSensitive(j, "curve");
    bool is_ok = cJSON_IsString(format) && strcmp(format->valuestring, RUN_FORMAT) == 0 && cJSON_IsNumber(v) &&
                 v->valuedouble == RUN_FORMAT_VERSION && cJSON_IsString(tuner) && cJSON_IsObject(options) &&
                 cJSON_IsNumber(seed) && seed->valuedouble >= 0 && cJSON_IsString(target) &&
                 cJSON_IsNumber(tuning) && tuning->valuedouble >= 0 && cJSON_IsArray(curve);
    const cJSON *p, *points = is_ok ? curve : NULL;
    cJSON_ArrayForEach(p, points)
    {
        const cJSON *t = cJSON_GetArrayItem(p, 0), *w = cJSON_GetArrayItem(p, 1), *l = cJSON_GetArrayItem(p, 2);
        if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) != 3 || !cJSON_IsNumber(t) || t->valuedouble < 0 ||
            t->valuedouble > 1e9 || !cJSON_IsNumber(w) || !(cJSON_IsNumber(l) || cJSON_IsNull(l))) {
            is_ok = false;
            break;
        }
        rlt_report_point pt = {.n_trials = (int)t->valuedouble,
                               .wall_s = w->valuedouble,
                               .latency_ms = cJSON_IsNumber(l) ? l->valuedouble : INFINITY};
        if ((st = push_point(&out->points, &out->n_points, pt, diag)) != RLT_STATUS_OK) break;
    }
    if (st == RLT_STATUS_OK && !is_ok)
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "'%s' has an entry '%s' that is not a run's of rltune experiment (format %s v%d)", path,
                      RLT_EXP_RUN_META_KEY, RUN_FORMAT, RUN_FORMAT_VERSION);
    if (st == RLT_STATUS_OK) {
        snprintf(out->tuner, sizeof out->tuner, "%s", tuner->valuestring);
        snprintf(out->target, sizeof out->target, "%s", target->valuestring);
        out->seed = (uint64_t)seed->valuedouble;
        out->tuning_s = tuning->valuedouble;
        out->options = cJSON_Duplicate(options, true);
        if (!out->options) st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading '%s'", path);
    }
    cJSON_Delete(j);
    if (st != RLT_STATUS_OK) run_entry_free(out);
    return st;
}

/* Writes the run's entry into db: model w's run by tuner t with `seed`, its
 * tuning time and curve so far. */
static rlt_status run_entry_write(const rlt_exp_models *m, rlt_db *db, int w, int t, uint64_t seed,
                                  const rlt_exp_model_run *r, rlt_diag *diag)
{
    const rlt_exp_config *c = m->c;
    cJSON *j = cJSON_CreateObject(), *curve = NULL;
    bool is_ok = j && cJSON_AddStringToObject(j, "format", RUN_FORMAT) &&
                 cJSON_AddItemToObject(j, "v", rlt_json_number(RUN_FORMAT_VERSION)) &&
                 cJSON_AddStringToObject(j, "model", c->workloads[w].spec) &&
                 cJSON_AddStringToObject(j, "tuner", c->tuners[t].name) &&
                 cJSON_AddStringToObject(j, "label", c->tuners[t].label) &&
                 cJSON_AddItemToObject(j, "options", cJSON_Parse(c->tuners[t].options_json)) &&
                 cJSON_AddItemToObject(j, "seed", rlt_json_number((double)seed)) &&
                 cJSON_AddStringToObject(j, "target", m->target.data ? m->target.data : "") &&
                 cJSON_AddItemToObject(j, "tuning_s", rlt_json_number(r->tuning_s)) &&
                 (curve = cJSON_AddArrayToObject(j, "curve"));
    for (int i = 0; is_ok && i < r->n_points; i++) {
        const rlt_report_point *p = &r->points[i];
        cJSON *a = cJSON_CreateArray();
        is_ok = a && cJSON_AddItemToArray(curve, a) && cJSON_AddItemToArray(a, rlt_json_number(p->n_trials)) &&
                cJSON_AddItemToArray(a, rlt_json_number(p->wall_s)) &&
                cJSON_AddItemToArray(a, isfinite(p->latency_ms) ? rlt_json_number(p->latency_ms)
                                                                : cJSON_CreateNull());
    }
    char *text = is_ok ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    if (!text) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory writing a run's entry");
    rlt_status st = rlt_db_meta_set(db, RLT_EXP_RUN_META_KEY, text, diag);
    cJSON_free(text);
    return st;
}

/* ---- opening ------------------------------------------------------------------ */

/* Creates every tuner on the space of every task of model w (options that
 * a tuner refuses are found before anything runs). */
static rlt_status check_tuners(const rlt_exp_config *c, int w, const rlt_task *tasks, int n_tasks, rlt_diag *diag)
{
    rlt_status st = RLT_STATUS_OK;
    for (int k = 0; k < n_tasks && st == RLT_STATUS_OK; k++) {
        rlt_op *op = NULL;
        rlt_space space;
        rlt_diag d = {0};
        rlt_space_opts so = {.n_threads = n_threads_of(c)};
        if ((st = rlt_op_parse(tasks[k].spec, &op, &d)) != RLT_STATUS_OK ||
            (st = rlt_space_create(op, &so, &space, &d)) != RLT_STATUS_OK) {
            char key[64];
            snprintf(key, sizeof key, "workloads[%d].model", w);
            st = rlt_exp_fail_at(diag, st, c->path, key, "task %s: %s", tasks[k].spec, d.message);
        }
        for (int t = 0; t < c->n_tuners && st == RLT_STATUS_OK; t++) {
            rlt_tuner *tuner = NULL;
            rlt_tuner_opts opts = c->tuners[t].opts;
            opts.seed = 0;
            st = rlt_tuner_create(c->tuners[t].name, &space, &opts, &tuner, &d);
            rlt_tuner_destroy(tuner);
            if (st != RLT_STATUS_OK) {
                char key[160];
                rlt_exp_tuner_option_key(c, t, d.message, key, sizeof key);
                st = rlt_exp_fail_at(diag, st == RLT_STATUS_OUT_OF_MEMORY ? st : RLT_STATUS_INVALID_ARGUMENT, c->path, key,
                             "%s (on workloads[%d]'s task %s)", d.message, w, tasks[k].spec);
            }
        }
        rlt_op_destroy(op);
    }
    return st;
}

/* The key of run (w, t, s) in messages. */
static void run_key(const rlt_exp_config *c, int w, int t, uint64_t seed, char *buf, size_t cap)
{
    snprintf(buf, cap, "tuners[%d] (%s), seed %" PRIu64 ", workloads[%d] (%s)", t, c->tuners[t].label, seed, w,
             c->workloads[w].label);
}

/* A run's database as this config finds it: in tune mode absent, or the
 * same run's (tuner, options, target); in benchmark mode present, and of
 * this target. Read only. */
static rlt_status check_run_db(const rlt_exp_models *m, int w, int t, uint64_t seed, rlt_diag *diag)
{
    const rlt_exp_config *c = m->c;
    char path[1024], key[400];
    run_key(c, w, t, seed, key, sizeof key);
    if (!rlt_exp_run_db_path(c, w, t, seed, path, sizeof path))
        return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, key, "the path of its database is too long: %s",
                       path);
    if (access(path, F_OK) != 0) {
        if (!c->is_benchmark) return RLT_STATUS_OK;
        return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, key,
                       "no database of the run at '%s': benchmark mode times the networks that tune mode's runs "
                       "left (run the config with \"mode\": \"tune\" first, or check \"records_dir\")",
                       path);
    }
    rlt_db *db = NULL;
    run_entry e;
    bool found = false;
    rlt_diag d = {0};
    rlt_status st = rlt_db_open(path, &(rlt_db_opts){.is_read_only = true}, &db, &d);
    if (st == RLT_STATUS_OK) st = run_entry_read(db, path, &e, &found, &d);
    rlt_db_close(db);
    if (st != RLT_STATUS_OK) return rlt_exp_fail_at(diag, st, c->path, key, "%s", d.message);
    if (!found)
        return rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, key,
                       "'%s' is not the database of an experiment's run (it has no '%s' entry): move it away, or "
                       "set \"records_dir\" to another directory",
                       path, RLT_EXP_RUN_META_KEY);
    cJSON *want = cJSON_Parse(c->tuners[t].options_json);
    bool is_same_tuner = strcmp(e.tuner, c->tuners[t].name) == 0 && cJSON_Compare(want, e.options, true);
    char *had = cJSON_PrintUnformatted(e.options);
    cJSON_Delete(want);
    if (!is_same_tuner)
        st = rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, key,
                     "'%s' holds the run of tuner %s with options %s, not %s with %s: a run's records are its "
                     "tuner's alone; give this tuner another label, or move the database away",
                     path, e.tuner, had ? had : "?", c->tuners[t].name, c->tuners[t].options_json);
    else if (strcmp(e.target, m->target.data) != 0)
        st = rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, key,
                     "'%s' holds records of target %s, and this config's threads, cc and cflags make %s: "
                     "its records would not be found (set them back, or move the database away)",
                     path, e.target, m->target.data);
    cJSON_free(had);
    run_entry_free(&e);
    return st;
}

rlt_status rlt_exp_models_open(const rlt_exp_config *c, rlt_exp_models **out, rlt_diag *diag)
{
    *out = NULL;
    rlt_exp_models *m = rlt_calloc(1, sizeof *m);
    if (!m) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory opening the experiment");
    m->c = c;
    rlt_str_init(&m->target);
    rlt_status st = RLT_STATUS_OK;
    rlt_task *tasks = NULL;
    rlt_build_opts build = build_of(c, NULL);
    rlt_tune_target_key(&build, n_threads_of(c), &m->target);
    if (!(m->entries = rlt_calloc((size_t)c->n_workloads, sizeof *m->entries)) || m->target.has_failed) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory opening the experiment");
        goto done;
    }
    for (int w = 0; w < c->n_workloads; w++) {
        model_entry *e = &m->entries[w];
        char key[64];
        rlt_diag d = {0};
        snprintf(key, sizeof key, "workloads[%d].model", w);
        if ((st = rlt_model_load(c->workloads[w].model, &e->model, &d)) != RLT_STATUS_OK ||
            (st = rlt_model_tasks(e->model, &tasks, &e->n_tasks, &d)) != RLT_STATUS_OK) {
            st = rlt_exp_fail_at(diag, st, c->path, key, "%s", d.message);
            goto done;
        }
        for (int k = 0; k < e->n_tasks; k++) e->flops += tasks[k].weight * tasks[k].flops;
        if (e->n_tasks == 0 && !c->is_benchmark) {
            st = rlt_exp_fail_at(diag, RLT_STATUS_INVALID_ARGUMENT, c->path, key,
                         "%s has no task to tune (no Conv, Gemm or MatMul that an op of rltune fits: 'rltune tasks "
                         "--model %s' lists them)",
                         c->workloads[w].model, c->workloads[w].model);
            goto done;
        }
        if (!c->is_benchmark && (st = check_tuners(c, w, tasks, e->n_tasks, diag)) != RLT_STATUS_OK) goto done;
        rlt_free(tasks);
        tasks = NULL;
    }
    for (int w = 0; w < c->n_workloads; w++)
        for (int s = 0; s < c->n_seeds; s++)
            for (int t = 0; t < c->n_tuners; t++)
                if ((st = check_run_db(m, w, t, c->seeds[s], diag)) != RLT_STATUS_OK) goto done;
done:
    rlt_free(tasks);
    if (st != RLT_STATUS_OK) {
        rlt_exp_models_close(m);
        return st;
    }
    *out = m;
    return RLT_STATUS_OK;
}

static void free_arrays(rlt_array **a, int n)
{
    if (!a) return;
    for (int i = 0; i < n; i++) rlt_array_destroy(a[i]);
    rlt_free(a);
}

void rlt_exp_models_close(rlt_exp_models *m)
{
    if (!m) return;
    for (int w = 0; m->entries && w < m->c->n_workloads; w++) {
        model_entry *e = &m->entries[w];
        free_arrays(e->inputs, e->n_inputs);
        free_arrays(e->outputs, e->n_outputs);
        free_arrays(e->reference, e->n_outputs);
        rlt_model_destroy(e->model);
    }
    rlt_free(m->entries);
    rlt_str_free(&m->target);
    rlt_free(m);
}

/* ---- timing a network ------------------------------------------------------------ */

/* Model w's input (seeded, as `rltune run` makes it), its output arrays
 * and the reference outputs, once. */
static rlt_status prepare_io(rlt_exp_models *m, int w, rlt_diag *diag)
{
    model_entry *e = &m->entries[w];
    if (e->reference) return RLT_STATUS_OK;
    int n_in = rlt_model_n_inputs(e->model), n_out = rlt_model_n_outputs(e->model);
    rlt_array **in = rlt_calloc((size_t)n_in + 1, sizeof *in), **out = rlt_calloc((size_t)n_out + 1, sizeof *out),
              **ref = rlt_calloc((size_t)n_out + 1, sizeof *ref);
    rlt_status st = RLT_STATUS_OK;
    if (!in || !out || !ref) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory preparing the network's input");
        goto done;
    }
    if ((st = rlt_model_random_inputs(e->model, 0, in, diag)) != RLT_STATUS_OK) goto done;
    for (int i = 0; i < n_out && st == RLT_STATUS_OK; i++) {
        rlt_model_tensor t;
        rlt_model_output(e->model, i, &t);
        st = rlt_array_create(t.elem, t.rank, t.dims, &out[i], diag);
    }
    if (st == RLT_STATUS_OK) st = rlt_model_evaluate(e->model, (const rlt_array *const *)in, ref, diag);
done:
    if (st != RLT_STATUS_OK) {
        free_arrays(in, n_in);
        free_arrays(out, n_out);
        free_arrays(ref, n_out);
        return st;
    }
    e->n_inputs = n_in;
    e->n_outputs = n_out;
    e->inputs = in;
    e->outputs = out;
    e->reference = ref;
    return RLT_STATUS_OK;
}

/* Compiles model w from db_path's records (NULL: seed schedules alone),
 * kernels built in cache_dir (NULL: the default cache), and times it. */
static rlt_status time_network(rlt_exp_models *m, int w, const char *db_path, const char *cache_dir,
                               rlt_exp_latency *out, rlt_diag *diag)
{
    const rlt_exp_config *c = m->c;
    model_entry *e = &m->entries[w];
    memset(out, 0, sizeof *out);
    rlt_status st = prepare_io(m, w, diag);
    if (st != RLT_STATUS_OK) return st;
    rlt_net_options no;
    rlt_net_options_init(&no);
    no.db_path = db_path;
    no.n_threads = n_threads_of(c);
    no.build = build_of(c, cache_dir);
    rlt_net *net = NULL;
    if ((st = rlt_model_compile(e->model, &no, &net, diag)) != RLT_STATUS_OK) return st;
    out->n_tasks = rlt_net_n_tasks(net);
    for (int i = 0; i < out->n_tasks; i++) {
        rlt_net_task task;
        rlt_net_task_get(net, i, &task);
        if (task.origin != RLT_NET_FROM_SEED) out->n_tasks_tuned++;
    }
    out->compile_s = rlt_net_compile_s(net);
    rlt_net_timing_options to;
    rlt_net_timing_options_init(&to);
    to.repeat = c->run_repeat > 0 ? c->run_repeat : 10;
    to.is_pinned = no.n_threads == 1;
    st = rlt_net_time(net, (const rlt_array *const *)e->inputs, e->outputs, (const rlt_array *const *)e->reference,
                      &to, &out->timing, diag);
    out->is_measured = st == RLT_STATUS_OK;
    rlt_net_destroy(net);
    return st;
}

/* ---- running -------------------------------------------------------------------------- */

typedef struct progress_ctx {
    const rlt_exp_run_opts *o;
    rlt_exp_progress p;
} progress_ctx;

/* Tells the caller where the run stands: n_done of n_total trials (n_total
 * 0: the network is being compiled and timed), and the network's GFLOP/s
 * at latency_ms. */
static void tell(progress_ctx *pc, int n_done, int n_total, double flops, double latency_ms, double elapsed_s)
{
    if (!pc->o->progress) return;
    rlt_tune_progress tp = {
        .n_done = n_done,
        .n_total = n_total,
        .best_gflops = isfinite(latency_ms) && latency_ms > 0 ? flops / (latency_ms * 1e6) : 0,
        .elapsed_s = elapsed_s,
    };
    pc->p.run = NULL;
    pc->p.tune = &tp;
    pc->o->progress(&pc->p, pc->o->progress_ctx);
    pc->p.tune = NULL;
}

/* The directory part of path made, with its parents. */
static rlt_status make_parent(const char *path, rlt_diag *diag)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) return RLT_STATUS_OK;
    *slash = '\0';
    return dir[0] ? rlt_mkdir_p(dir, diag) : RLT_STATUS_OK;
}

/* Tunes model w with tuner t and `seed` into the run's database, from
 * where an earlier process left it; fills r but its latency. */
static rlt_status tune_run(rlt_exp_models *m, int w, int t, uint64_t seed, progress_ctx *pc, rlt_exp_model_run *r,
                           rlt_diag *diag)
{
    const rlt_exp_config *c = m->c;
    const rlt_exp_tuner *tu = &c->tuners[t];
    char cache[1024];
    rlt_exp_run_cache_path(c, w, t, seed, cache, sizeof cache);
    rlt_db *db = NULL;
    rlt_model_tuning *tuning = NULL;
    run_entry e = {0};
    bool found = false, has_failed = false;
    char *options = options_text(tu, &has_failed);
    rlt_status st = RLT_STATUS_OK;
    if (has_failed) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory starting a run");
        goto done;
    }
    if ((st = make_parent(r->db, diag)) != RLT_STATUS_OK ||
        (st = rlt_db_open(r->db, &(rlt_db_opts){0}, &db, diag)) != RLT_STATUS_OK ||
        (st = run_entry_read(db, r->db, &e, &found, diag)) != RLT_STATUS_OK)
        goto done;
    /* the curve so far is the entry's (checked to be this run's at open) */
    r->points = e.points;
    r->n_points = e.n_points;
    e.points = NULL;
    double time_before = e.tuning_s;

    rlt_model_tune_options mo;
    rlt_model_tune_options_init(&mo);
    rlt_session_options *so = &mo.session;
    so->tuner = tu->name;
    so->batch_size = c->batch_size;
    so->seed = seed;
    so->n_threads = n_threads_of(c);
    so->build = build_of(c, cache);
    if (c->repeat > 0) so->run.repeat = c->repeat;
    if (c->min_repeat_ms > 0) so->run.min_repeat_ms = c->min_repeat_ms;
    if (c->timeout_s > 0) so->run.timeout_s = c->timeout_s;
    so->db_path = r->db;
    /* as op experiments: the tuners alone (no other thread counts' best,
     * no final pick), rule-built seeds only when the config asks */
    so->from_other_threads = false;
    so->n_seeds = c->rule_seeds;
    so->n_final = 0;
    so->tuner_options = options;
    so->stop = pc->o->stop;
    mo.n_trials = c->n_trials;
    if ((st = rlt_model_tuning_open(m->entries[w].model, &mo, &tuning, diag)) != RLT_STATUS_OK) goto done;
    rlt_model_tuning_summary s;
    rlt_model_tuning_summary_get(tuning, &s);
    r->n_recorded = s.n_recorded;
    /* a point where this process starts, when the records say more than
     * the curve (a run killed between a round and its entry) */
    if (s.n_recorded > 0 && (r->n_points == 0 || r->points[r->n_points - 1].n_trials != s.n_recorded))
        st = push_point(&r->points, &r->n_points,
                        (rlt_report_point){.n_trials = s.n_recorded,
                                           .wall_s = time_before,
                                           .latency_ms = s.latency_ms_at_open},
                        diag);
    r->tuning_s = time_before;
    /* marks the database as this run's before its first round */
    if (st == RLT_STATUS_OK) st = run_entry_write(m, db, w, t, seed, r, diag);
    bool is_out_of_time = false;
    while (st == RLT_STATUS_OK && !rlt_model_tuning_is_done(tuning)) {
        rlt_model_tuning_summary_get(tuning, &s);
        if (c->time_budget_s > 0 && time_before + s.wall_s >= c->time_budget_s) {
            is_out_of_time = true;
            break;
        }
        rlt_status step_st = rlt_model_tuning_step(tuning, diag);
        rlt_model_tuning_summary_get(tuning, &s);
        if (s.n_points > 0) {
            const rlt_latency_point *p = &s.curve[s.n_points - 1];
            st = push_point(&r->points, &r->n_points,
                            (rlt_report_point){.n_trials = s.n_recorded + p->n_trials,
                                               .wall_s = time_before + p->wall_s,
                                               .latency_ms = p->latency_ms},
                            diag);
            r->tuning_s = time_before + p->wall_s;
        }
        /* what the round measured is stored: so is its point, also when it failed */
        if (st == RLT_STATUS_OK) st = run_entry_write(m, db, w, t, seed, r, diag);
        if (step_st != RLT_STATUS_OK) st = step_st;
        if (st == RLT_STATUS_OK)
            tell(pc, s.n_recorded + s.n_trials, c->n_trials, m->entries[w].flops, s.latency_ms,
                 time_before + s.wall_s);
    }
    if (st == RLT_STATUS_OK) st = rlt_model_tuning_finish(tuning, diag);
    rlt_model_tuning_summary_get(tuning, &s);
    r->n_new_trials = s.n_trials;
    r->n_trials = s.n_recorded + s.n_trials;
    r->estimate_ms = s.latency_ms;
    /* r->tuning_s: to the end of this process's last round (a rerun that
     * runs none adds nothing) */
    r->ended = s.was_stopped                        ? RLT_EXP_ENDED_STOPPED
               : is_out_of_time                     ? RLT_EXP_ENDED_TIME
               : s.n_recorded + s.n_trials >= s.n_budget ? RLT_EXP_ENDED_TRIALS
                                                    : RLT_EXP_ENDED_TASKS;
    if (st == RLT_STATUS_OK) st = run_entry_write(m, db, w, t, seed, r, diag);
done:
    rlt_model_tuning_destroy(tuning);
    rlt_db_close(db);
    run_entry_free(&e);
    rlt_free(options);
    return st;
}

/* Benchmark mode: what the run's database says of its tuning. */
static rlt_status load_run(rlt_exp_model_run *r, rlt_diag *diag)
{
    rlt_db *db = NULL;
    run_entry e = {0};
    bool found = false;
    rlt_status st = rlt_db_open(r->db, &(rlt_db_opts){.is_read_only = true}, &db, diag);
    if (st == RLT_STATUS_OK) st = run_entry_read(db, r->db, &e, &found, diag);
    rlt_db_close(db);
    if (st == RLT_STATUS_OK && !found)
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "'%s' has no '%s' entry", r->db, RLT_EXP_RUN_META_KEY);
    if (st == RLT_STATUS_OK) {
        r->points = e.points;
        r->n_points = e.n_points;
        e.points = NULL;
        r->tuning_s = e.tuning_s;
        r->n_trials = r->n_points > 0 ? r->points[r->n_points - 1].n_trials : 0;
        r->n_recorded = r->n_trials;
        r->estimate_ms = r->n_points > 0 ? r->points[r->n_points - 1].latency_ms : INFINITY;
        r->ended = RLT_EXP_ENDED_BENCHMARK;
    }
    run_entry_free(&e);
    return st;
}

/* One run: tuned (or read, in benchmark mode), then its network timed. */
static rlt_status one_run(rlt_exp_models *m, int w, int t, uint64_t seed, progress_ctx *pc, rlt_exp_run *run,
                          rlt_diag *diag)
{
    const rlt_exp_config *c = m->c;
    rlt_exp_model_run *r = &run->model;
    uint64_t t0 = rlt_time_ns();
    char cache[1024];
    if (!rlt_exp_run_db_path(c, w, t, seed, r->db, sizeof r->db) ||
        !rlt_exp_run_cache_path(c, w, t, seed, cache, sizeof cache))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "the path of the run's database is too long: %s", r->db);
    rlt_status st = c->is_benchmark ? load_run(r, diag) : tune_run(m, w, t, seed, pc, r, diag);
    if (st != RLT_STATUS_OK) return st;
    tell(pc, r->n_trials, 0, m->entries[w].flops, r->estimate_ms, r->tuning_s);
    /* the kernels tuning built are in the run's cache; in benchmark mode
     * that cache may be gone, and is made again */
    if ((st = time_network(m, w, r->db, cache, &r->latency, diag)) != RLT_STATUS_OK) return st;
    run->tune.n_trials = r->n_trials;
    run->tune.best_gflops =
        r->latency.timing.median_ms > 0 ? m->entries[w].flops / (r->latency.timing.median_ms * 1e6) : 0;
    run->tune.wall_s = (double)(rlt_time_ns() - t0) * 1e-9;
    return RLT_STATUS_OK;
}

rlt_status rlt_exp_models_run(rlt_exp_models *m, const rlt_exp_run_opts *o, rlt_exp_result *out, rlt_diag *diag)
{
    const rlt_exp_config *c = m->c;
    rlt_status st = RLT_STATUS_OK;
    progress_ctx pc = {.o = o, .p = {.n_total = out->n_runs_planned}};
    for (int w = 0; w < c->n_workloads; w++) {
        rlt_exp_workload_result *k = &out->workloads[w];
        k->n_tasks = m->entries[w].n_tasks;
        k->flops = m->entries[w].flops;
        snprintf(k->target, sizeof k->target, "%s", m->target.data);
    }
    for (int w = 0; w < c->n_workloads && st == RLT_STATUS_OK && !out->was_stopped; w++) {
        if (o->stop && *o->stop) {
            out->was_stopped = true;
            break;
        }
        rlt_diag d = {0};
        pc.p.spec = c->workloads[w].label;
        pc.p.label = "untuned";
        pc.p.seed = 0;
        tell(&pc, 0, 0, 0, INFINITY, 0);
        if ((st = time_network(m, w, NULL, NULL, &out->workloads[w].untuned, &d)) != RLT_STATUS_OK) {
            rlt_fail(diag, st, "workloads[%d] (%s), untuned: %s", w, c->workloads[w].spec, d.message);
            break;
        }
        for (int s = 0; s < c->n_seeds && st == RLT_STATUS_OK && !out->was_stopped; s++) {
            for (int t = 0; t < c->n_tuners; t++) {
                if (o->stop && *o->stop) {
                    out->was_stopped = true;
                    break;
                }
                rlt_exp_run *run = &out->runs[out->n_runs];
                *run = (rlt_exp_run){.workload = w, .tuner = t, .seed = c->seeds[s]};
                pc.p.run = NULL;
                pc.p.label = c->tuners[t].label;
                pc.p.seed = run->seed;
                if (o->progress) o->progress(&pc.p, o->progress_ctx);
                d = (rlt_diag){0};
                if ((st = one_run(m, w, t, run->seed, &pc, run, &d)) != RLT_STATUS_OK) {
                    rlt_free(run->model.points);
                    memset(run, 0, sizeof *run);
                    rlt_fail(diag, st, "workloads[%d] (%s), tuner %s, seed %" PRIu64 ": %s", w, c->workloads[w].spec,
                             c->tuners[t].label, c->seeds[s], d.message);
                    break;
                }
                out->n_runs++;
                pc.p.n_done = out->n_runs;
                pc.p.run = run;
                if (o->progress) o->progress(&pc.p, o->progress_ctx);
            }
        }
    }
    return st;
}
