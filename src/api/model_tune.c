/*
 * model_tune.c - a whole network tuned from one budget (rltune/model.h,
 * "tuning a whole network"): one tuning session per task, opened when the
 * task is first picked and stepped one batch (a round) at a time, the task
 * of each round chosen by Ansor's gradient-based scheduler
 * (search/task_sched.c) over the tasks' best times. The records database
 * is read at open, so a rerun starts from what earlier runs measured.
 */
#include "api/model_internal.h"
#include "ir/ir.h"
#include "net/net.h"
#include "rltune/records.h"
#include "search/session.h"
#include "search/task_sched.h"
#include "search/tuner.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct tuning_task {
    rlt_op *op;
    char spec[512];
    int weight;
    double flops;
    rlt_session *session; /* NULL until first picked */
    int n_rounds, cap_rounds;
    double *best_ms;      /* after each round */
    int n_recorded;
    double recorded_ms;   /* best in the records at open; INFINITY: none */
    int n_measured;       /* the session's new measurements so far */
    double gradient;
    bool is_done;
    /* Siblings: tasks of the same op with other epilogues (conv2d's
     * bias+relu, bias+add+relu and bias at one shape) share a space but for
     * a pack knob, and one's best is often another's (bench/RESULTS.md,
     * sixth round: ResNet-18's blocked 7x7 layers 42% faster on a sibling's
     * schedule). Each task's best so far is offered to its siblings'
     * sessions before their next round. */
    int family;           /* the index of the family's first task */
    char best_key[1024];  /* the best configuration so far (records or this run); "" none */
    double best_key_ms;
    int best_serial;      /* bumped when best_key changes */
    int *offered_serial;  /* [n_tasks]: the best_serial of each sibling last offered to this one */
} tuning_task;

struct rlt_model_tuning {
    rlt_model *model;
    rlt_model_tune_options o;
    char *db_path;        /* owned copies of the borrowed strings sessions open with */
    char *tuner;
    char *cc, *cflags, *cache_dir, *tuner_config_path, *tuner_options;
    int n_tasks;
    tuning_task *tasks;
    int n_trials, n_rounds, n_recorded, last_task;
    double latency_at_open;
    int n_points, cap_points;
    rlt_latency_point *curve;
    uint64_t t0_ns;
    rlt_rng rng;
    char last_error[1024];
};

void rlt_model_tune_options_init(rlt_model_tune_options *o)
{
    memset(o, 0, sizeof *o);
    rlt_session_options_init(&o->session);
    o->session.run.cold_weights = true; /* kernels timed as the network runs them */
    o->n_trials = 1000;
}

static rlt_status noted(rlt_model_tuning *t, rlt_status st, const rlt_diag *d, rlt_diag *diag)
{
    return rlt_diag_keep(t->last_error, sizeof t->last_error, st, d, diag);
}

const char *rlt_model_tuning_last_error(const rlt_model_tuning *t) { return t->last_error; }

/* What the records hold for a task on the target: count and best (of the
 * kernels the network can run: rlt_net_takes_record). */
typedef struct recorded {
    int n_threads;
    int n;
    double best_ms;
    char best_config[1024];
} recorded;

static bool count_record(const rlt_record *r, void *ctx)
{
    recorded *c = ctx;
    c->n++;
    if (r->status == RLT_STATUS_OK && r->time_median_ms > 0 && r->time_median_ms < c->best_ms &&
        rlt_net_takes_record(r->config, c->n_threads)) {
        c->best_ms = r->time_median_ms;
        snprintf(c->best_config, sizeof c->best_config, "%s", r->config);
    }
    return true;
}

/* *out = a copy of s (NULL stays NULL); false when out of memory. */
static bool copy_opt(char **out, const char *s)
{
    *out = s ? rlt_strdup(s) : NULL;
    return !s || *out;
}

static rlt_status check_options(const rlt_model_tune_options *o, rlt_diag *diag)
{
    const rlt_session_options *s = &o->session;
    /* the sessions open at their tasks' first rounds: what they would refuse
     * for every task is refused now */
    if (s->tuner && !rlt_tuner_summary(s->tuner)) {
        char names[256];
        rlt_tuner_names_with(0, names, sizeof names);
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "unknown tuner '%.64s'; tuners: %s", s->tuner, names);
    }
    if (s->batch_size < 1 || s->batch_size > 256 || s->n_threads < 1 || s->n_threads > RLT_MAX_THREADS)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "batch size %d (1 to 256) or thread count %d (1 to %d) out of range", s->batch_size,
                        s->n_threads, RLT_MAX_THREADS);
    if (o->n_trials < 1)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "the network's trials must be at least 1, got %d",
                        o->n_trials);
    rlt_status st = rlt_net_check_block(o->channel_block, false, diag);
    if (st != RLT_STATUS_OK) return st;
    if (!s->db_path || !s->db_path[0])
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "tuning a network needs a records database (db_path): its runs read it to continue");
    if (s->replay_path || s->transfer_path || s->agent_in || s->agent_out || s->start_key || s->policy_path)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "a network's tasks are tuned live from their own starts: replay, transfer (set by the "
                        "tuning), agent files, a start configuration and a policy are not taken");
    return RLT_STATUS_OK;
}

/* A new best for the task's siblings. */
static void note_best(tuning_task *k, const char *key, double ms)
{
    if (!key[0] || ms >= k->best_key_ms || strlen(key) >= sizeof k->best_key) return;
    k->best_key_ms = ms;
    if (strcmp(key, k->best_key) == 0) return;
    snprintf(k->best_key, sizeof k->best_key, "%s", key);
    k->best_serial++;
}

/* Whether two specs name the same op but for their epilogues. */
static bool is_sibling_spec(const char *a, const char *b)
{
    char x[512], y[512];
    rlt_net_base_spec(a, x, sizeof x);
    rlt_net_base_spec(b, y, sizeof y);
    return strcmp(x[0] ? x : a, y[0] ? y : b) == 0;
}

/* The families of siblings, and each task's memory of what it was offered. */
static rlt_status find_families(rlt_model_tuning *t, rlt_diag *diag)
{
    for (int i = 0; i < t->n_tasks; i++) {
        tuning_task *k = &t->tasks[i];
        k->family = i;
        for (int j = 0; j < i && k->family == i; j++)
            if (is_sibling_spec(k->spec, t->tasks[j].spec)) k->family = t->tasks[j].family;
        k->best_key_ms = INFINITY;
        if (!(k->offered_serial = rlt_calloc((size_t)t->n_tasks, sizeof *k->offered_serial)))
            return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory opening the network's tuning");
    }
    return RLT_STATUS_OK;
}

/* Offers task i's session its siblings' best configurations it has not
 * been offered yet. */
static rlt_status offer_siblings(rlt_model_tuning *t, int i, rlt_diag *diag)
{
    tuning_task *k = &t->tasks[i];
    for (int j = 0; j < t->n_tasks; j++) {
        const tuning_task *sib = &t->tasks[j];
        if (j == i || sib->family != k->family || sib->best_serial == k->offered_serial[j]) continue;
        k->offered_serial[j] = sib->best_serial;
        if (strcmp(sib->best_key, k->best_key) == 0) continue; /* measured here already */
        int n = 0;
        rlt_status st = rlt_session_offer(k->session, sib->best_key, &n, diag);
        if (st != RLT_STATUS_OK) return st;
    }
    return RLT_STATUS_OK;
}

static rlt_status read_records(rlt_model_tuning *t, rlt_diag *diag)
{
    rlt_db *db = NULL;
    char *target = NULL;
    rlt_record_target tt;
    rlt_status st = rlt_session_target(&t->o.session.build, t->o.session.n_threads, &tt, diag);
    if (st != RLT_STATUS_OK) return st;
    tt.is_weights_cold = t->o.session.run.cold_weights;
    if (!(target = rlt_record_target_text(&tt)))
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading the records");
    /* read-write: the database is created when absent, as the sessions would */
    if ((st = rlt_db_open(t->db_path, NULL, &db, diag)) != RLT_STATUS_OK) goto cleanup;
    for (int i = 0; i < t->n_tasks; i++) {
        recorded c = {.n_threads = t->o.session.n_threads, .best_ms = INFINITY};
        if ((st = rlt_db_history(db, t->tasks[i].spec, target, count_record, &c, diag)) != RLT_STATUS_OK)
            goto cleanup;
        t->tasks[i].n_recorded = c.n;
        t->tasks[i].recorded_ms = c.best_ms;
        t->n_recorded += c.n;
        if (isfinite(c.best_ms)) note_best(&t->tasks[i], c.best_config, c.best_ms);
    }
cleanup:
    rlt_db_close(db);
    rlt_free(target);
    return st;
}

rlt_status rlt_model_tuning_open(rlt_model *m, const rlt_model_tune_options *o, rlt_model_tuning **out,
                                 rlt_diag *diag)
{
    rlt_diag d = {0};
    rlt_graph_tasks gt = {0};
    *out = NULL;
    rlt_status st = check_options(o, &d);
    if (st != RLT_STATUS_OK) return rlt_model_noted(m, st, &d, diag);
    rlt_model_tuning *t = rlt_calloc(1, sizeof *t);
    if (!t || !(t->db_path = rlt_strdup(o->session.db_path)) ||
        !(t->tuner = rlt_strdup(o->session.tuner ? o->session.tuner : "xgb-rank")) ||
        !copy_opt(&t->cc, o->session.build.cc) || !copy_opt(&t->cflags, o->session.build.cflags) ||
        !copy_opt(&t->cache_dir, o->session.build.cache_dir) ||
        !copy_opt(&t->tuner_config_path, o->session.tuner_config_path) ||
        !copy_opt(&t->tuner_options, o->session.tuner_options)) {
        st = rlt_fail(&d, RLT_STATUS_OUT_OF_MEMORY, "out of memory opening the network's tuning");
        goto cleanup;
    }
    t->model = m;
    t->o = *o;
    /* the sessions open later: every string they read is the tuning's own copy */
    t->o.session.db_path = t->db_path;
    t->o.session.tuner = t->tuner;
    t->o.session.build.cc = t->cc;
    t->o.session.build.cflags = t->cflags;
    t->o.session.build.cache_dir = t->cache_dir;
    t->o.session.tuner_config_path = t->tuner_config_path;
    t->o.session.tuner_options = t->tuner_options;
    /* at several threads the network runs only its compiler's kernels */
    t->o.session.no_clang = o->session.n_threads > 1;
    t->last_task = -1;
    t->t0_ns = rlt_time_ns();
    rlt_rng_seed(&t->rng, o->session.seed);
    if ((st = rlt_graph_tasks_extract_blocked(rlt_model_graph(m), o->channel_block, &gt, &d)) != RLT_STATUS_OK)
        goto cleanup;
    if (!(t->tasks = rlt_calloc((size_t)gt.n_tasks + 1, sizeof *t->tasks))) {
        st = rlt_fail(&d, RLT_STATUS_OUT_OF_MEMORY, "out of memory opening the network's tuning");
        goto cleanup;
    }
    t->n_tasks = gt.n_tasks;
    for (int i = 0; i < gt.n_tasks; i++) {
        tuning_task *k = &t->tasks[i];
        snprintf(k->spec, sizeof k->spec, "%s", gt.tasks[i].spec);
        k->weight = gt.tasks[i].weight;
        k->flops = gt.tasks[i].flops;
        if ((st = rlt_op_parse(k->spec, &k->op, &d)) != RLT_STATUS_OK) goto cleanup;
    }
    if ((st = find_families(t, &d)) != RLT_STATUS_OK || (st = read_records(t, &d)) != RLT_STATUS_OK) goto cleanup;
    t->latency_at_open = 0;
    for (int i = 0; i < t->n_tasks; i++) t->latency_at_open += t->tasks[i].weight * t->tasks[i].recorded_ms;
    *out = t;
    t = NULL;
cleanup:
    rlt_graph_tasks_free(&gt);
    rlt_model_tuning_destroy(t);
    return st == RLT_STATUS_OK ? st : rlt_model_noted(m, st, &d, diag);
}

void rlt_model_tuning_destroy(rlt_model_tuning *t)
{
    if (!t) return;
    for (int i = 0; i < t->n_tasks; i++) {
        rlt_session_destroy(t->tasks[i].session);
        rlt_op_destroy(t->tasks[i].op);
        rlt_free(t->tasks[i].best_ms);
        rlt_free(t->tasks[i].offered_serial);
    }
    rlt_free(t->tasks);
    rlt_free(t->curve);
    rlt_free(t->tuner_options);
    rlt_free(t->tuner_config_path);
    rlt_free(t->cache_dir);
    rlt_free(t->cflags);
    rlt_free(t->cc);
    rlt_free(t->tuner);
    rlt_free(t->db_path);
    rlt_free(t);
}

/* The scheduler's view of the tasks (states[] of n_tasks, pointing into
 * the tasks' histories). Rounds before this run count: a task with records
 * starts as if it had had ceil(records / batch) rounds reaching its
 * recorded best (a flat history: no recent improvement). */
static void scheduler_view(const rlt_model_tuning *t, rlt_task_state *states, double *const *hist)
{
    int batch = t->o.session.batch_size > 0 ? t->o.session.batch_size : 16;
    for (int i = 0; i < t->n_tasks; i++) {
        const tuning_task *k = &t->tasks[i];
        const char *colon = strchr(k->spec, ':');
        uint64_t kind = rlt_hash_bytes(RLT_HASH_SEED, k->spec, colon ? (size_t)(colon - k->spec) : strlen(k->spec));
        int prior = k->n_recorded > 0 ? (k->n_recorded + batch - 1) / batch : 0;
        for (int r = 0; r < prior; r++) hist[i][r] = k->recorded_ms;
        for (int r = 0; r < k->n_rounds; r++) hist[i][prior + r] = fmin(k->best_ms[r], k->recorded_ms);
        states[i] = (rlt_task_state){.weight = k->weight,
                                     .flops = k->flops,
                                     .group = (int)(kind & 0x7fffffff),
                                     .n_rounds = prior + k->n_rounds,
                                     .best_ms = hist[i],
                                     .is_done = k->is_done};
    }
}

static rlt_status open_session(rlt_model_tuning *t, tuning_task *k, rlt_diag *diag)
{
    rlt_session_options so = t->o.session;
    so.n_trials = k->n_recorded + t->o.n_trials; /* the network's budget bounds it, not this */
    if (so.n_trials > 1000000) so.n_trials = 1000000;
    so.progress = NULL;
    if (!t->o.no_transfer && (rlt_tuner_flags(t->tuner) & RLT_TUNER_USES_TRANSFER)) so.transfer_path = t->db_path;
    rlt_status st = rlt_session_open(k->op, &so, &k->session, NULL, diag);
    if (st != RLT_STATUS_OK) rlt_diag_prefix(diag, "task %s", k->spec);
    return st;
}

static rlt_status push_point(rlt_model_tuning *t, double latency)
{
    if (t->n_points == t->cap_points) {
        int cap = t->cap_points ? 2 * t->cap_points : 64;
        rlt_latency_point *grown = rlt_realloc(t->curve, (size_t)cap * sizeof *grown);
        if (!grown) return RLT_STATUS_OUT_OF_MEMORY;
        t->curve = grown;
        t->cap_points = cap;
    }
    t->curve[t->n_points++] = (rlt_latency_point){
        .n_trials = t->n_trials, .wall_s = (double)(rlt_time_ns() - t->t0_ns) * 1e-9, .latency_ms = latency};
    return RLT_STATUS_OK;
}

bool rlt_model_tuning_is_done(const rlt_model_tuning *t)
{
    if (t->n_recorded + t->n_trials >= t->o.n_trials) return true; /* records count: a rerun continues */
    if (t->o.session.stop && *t->o.session.stop) return true;
    for (int i = 0; i < t->n_tasks; i++)
        if (!t->tasks[i].is_done) return false;
    return true;
}

/* The scheduler's pick, with every task's gradient noted for the report. */
static rlt_status pick(rlt_model_tuning *t, int *out, rlt_diag *diag)
{
    int batch = t->o.session.batch_size > 0 ? t->o.session.batch_size : 16;
    rlt_task_state *states = rlt_calloc((size_t)t->n_tasks + 1, sizeof *states);
    double **hist = rlt_calloc((size_t)t->n_tasks + 1, sizeof *hist);
    rlt_status st = RLT_STATUS_OK;
    if (!states || !hist) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory scheduling the tasks");
        goto cleanup;
    }
    for (int i = 0; i < t->n_tasks; i++) {
        int n = (t->tasks[i].n_recorded + batch - 1) / batch + t->tasks[i].n_rounds + 1;
        if (!(hist[i] = rlt_calloc((size_t)n, sizeof *hist[i]))) {
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory scheduling the tasks");
            goto cleanup;
        }
    }
    scheduler_view(t, states, hist);
    for (int i = 0; i < t->n_tasks; i++) t->tasks[i].gradient = rlt_task_sched_gradient(t->n_tasks, states, i);
    *out = rlt_task_sched_pick(t->n_tasks, states, &t->rng);
cleanup:
    if (hist)
        for (int i = 0; i < t->n_tasks; i++) rlt_free(hist[i]);
    rlt_free(hist);
    rlt_free(states);
    return st;
}

static double current_latency(const rlt_model_tuning *t)
{
    double sum = 0;
    for (int i = 0; i < t->n_tasks; i++) {
        const tuning_task *k = &t->tasks[i];
        double g = k->recorded_ms;
        if (k->n_rounds > 0) g = fmin(g, k->best_ms[k->n_rounds - 1]);
        sum += k->weight * g;
    }
    return sum;
}

rlt_status rlt_model_tuning_step(rlt_model_tuning *t, rlt_diag *diag)
{
    rlt_diag d = {0};
    rlt_status st;
    if (rlt_model_tuning_is_done(t)) {
        st = rlt_fail(&d, RLT_STATUS_INVALID_ARGUMENT, "the network's tuning is done: no step is left");
        return noted(t, st, &d, diag);
    }
    int i = -1;
    if ((st = pick(t, &i, &d)) != RLT_STATUS_OK) return noted(t, st, &d, diag);
    RLT_ASSERT(i >= 0); /* not done: some task is not */
    tuning_task *k = &t->tasks[i];
    if (!k->session && (st = open_session(t, k, &d)) != RLT_STATUS_OK) return noted(t, st, &d, diag);
    if ((st = offer_siblings(t, i, &d)) != RLT_STATUS_OK) return noted(t, st, &d, diag);
    if (k->n_rounds == k->cap_rounds) {
        int cap = k->cap_rounds ? 2 * k->cap_rounds : 16;
        double *grown = rlt_realloc(k->best_ms, (size_t)cap * sizeof *grown);
        if (!grown) {
            st = rlt_fail(&d, RLT_STATUS_OUT_OF_MEMORY, "out of memory tuning the network");
            return noted(t, st, &d, diag);
        }
        k->best_ms = grown;
        k->cap_rounds = cap;
    }
    st = rlt_session_step(k->session, &d);
    rlt_session_summary sum;
    rlt_session_summary_get(k->session, &sum);
    t->n_trials += sum.n_measured - k->n_measured;
    k->n_measured = sum.n_measured;
    k->best_ms[k->n_rounds++] = sum.best_gflops > 0 ? sum.best_time_ms : INFINITY;
    if (sum.best_gflops > 0 && rlt_net_takes_record(sum.best_config, t->o.session.n_threads))
        note_best(k, sum.best_config, sum.best_time_ms);
    k->is_done = rlt_session_is_done(k->session);
    t->n_rounds++;
    t->last_task = i;
    /* a point every round, a failed one too: what it measured is stored */
    if (push_point(t, current_latency(t)) != RLT_STATUS_OK && st == RLT_STATUS_OK)
        st = rlt_fail(&d, RLT_STATUS_OUT_OF_MEMORY, "out of memory tuning the network");
    else if (st != RLT_STATUS_OK)
        rlt_diag_prefix(&d, "task %s", k->spec);
    return st == RLT_STATUS_OK ? st : noted(t, st, &d, diag);
}

rlt_status rlt_model_tuning_finish(rlt_model_tuning *t, rlt_diag *diag)
{
    rlt_diag d = {0};
    for (int i = 0; i < t->n_tasks; i++) {
        tuning_task *k = &t->tasks[i];
        if (!k->session) continue;
        rlt_status st = rlt_session_finish(k->session, &d);
        if (st != RLT_STATUS_OK) {
            rlt_diag_prefix(&d, "task %s", k->spec);
            return noted(t, st, &d, diag);
        }
        rlt_session_summary sum;
        rlt_session_summary_get(k->session, &sum);
        if (sum.best_gflops > 0 && k->n_rounds > 0)
            k->best_ms[k->n_rounds - 1] = fmin(k->best_ms[k->n_rounds - 1], sum.best_time_ms);
    }
    return RLT_STATUS_OK;
}

void rlt_model_tuning_summary_get(const rlt_model_tuning *t, rlt_model_tuning_summary *out)
{
    memset(out, 0, sizeof *out);
    out->n_tasks = t->n_tasks;
    out->n_trials = t->n_trials;
    out->n_budget = t->o.n_trials;
    out->n_rounds = t->n_rounds;
    out->n_recorded = t->n_recorded;
    out->last_task = t->last_task;
    out->wall_s = (double)(rlt_time_ns() - t->t0_ns) * 1e-9;
    out->latency_ms = current_latency(t);
    out->latency_ms_at_open = t->latency_at_open;
    out->n_points = t->n_points;
    out->curve = t->curve;
    out->was_stopped = t->o.session.stop && *t->o.session.stop;
}

void rlt_model_tuning_task_get(const rlt_model_tuning *t, int i, rlt_tuning_task *out)
{
    RLT_ASSERT(i >= 0 && i < t->n_tasks);
    const tuning_task *k = &t->tasks[i];
    memset(out, 0, sizeof *out);
    snprintf(out->spec, sizeof out->spec, "%s", k->spec);
    out->weight = k->weight;
    out->flops = k->flops;
    out->n_rounds = k->n_rounds;
    out->n_trials = k->n_measured;
    out->n_from_siblings = k->session ? rlt_session_result(k->session)->n_offered : 0;
    out->n_recorded = k->n_recorded;
    out->best_ms = k->n_rounds > 0 ? fmin(k->recorded_ms, k->best_ms[k->n_rounds - 1]) : k->recorded_ms;
    out->gradient = isfinite(k->gradient) ? k->gradient : 0;
    out->is_done = k->is_done;
}
