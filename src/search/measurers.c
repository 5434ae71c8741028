/*
 * measurers.c - the session's measurers that build and run (session.h):
 * live (a batch lowered, built together with gcc and clang side by side,
 * then run one at a time, checked and timed; and the final pick's longer
 * re-measurement) and recorded (what was measured before read back from
 * the records database, the rest measured by the measurer it wraps and
 * stored, one transaction a batch).
 */
#include "search/session.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void copy_text(char *dst, size_t cap, const char *src) { snprintf(dst, cap, "%s", src ? src : ""); }

static double wall_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static rlt_status measurer_new(const rlt_measurer_ops *ops, void *state, rlt_measurer **out, rlt_diag *diag)
{
    rlt_measurer *m = rlt_calloc(1, sizeof *m);
    if (!m) {
        rlt_measurer tmp = {.ops = ops, .state = state};
        ops->destroy(&tmp);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a measurer");
    }
    m->ops = ops;
    m->state = state;
    *out = m;
    return RLT_STATUS_OK;
}

/* ---- live ----------------------------------------------------------------- */

typedef struct live_state {
    const rlt_op *op;
    const rlt_space *space;
    rlt_record_target target;
    rlt_build_opts build;
    rlt_run_opts run;
    char tuner[32];
    uint64_t seed;
    rlt_workload *workload;
    /* scratch of one batch, cap items */
    int cap;
    rlt_nest *nests;
    rlt_run_result *results;
    const char **cc_of; /* "clang", or NULL for the build options' compiler */
    int *slot;          /* measured item -> trial */
    /* Where the batches are built and run (NULL: here), and what it is
     * told: the records' target key (owned) and each item as a candidate. */
    const rlt_executor *executor;
    char *target_key;
    rlt_candidate *candidates;
} live_state;

static bool live_reserve(live_state *l, int n)
{
    if (n <= l->cap) return true;
    rlt_nest *nests = rlt_realloc(l->nests, sizeof *nests * (size_t)n);
    if (nests) l->nests = nests;
    rlt_run_result *results = rlt_realloc(l->results, sizeof *results * (size_t)n);
    if (results) l->results = results;
    const char **cc_of = rlt_realloc(l->cc_of, sizeof *cc_of * (size_t)n);
    if (cc_of) l->cc_of = cc_of;
    int *slot = rlt_realloc(l->slot, sizeof *slot * (size_t)n);
    if (slot) l->slot = slot;
    rlt_candidate *candidates = rlt_realloc(l->candidates, sizeof *candidates * (size_t)n);
    if (candidates) l->candidates = candidates;
    if (!nests || !results || !cc_of || !slot || !candidates) return false;
    l->cap = n;
    return true;
}

/* Lowers trial t's configuration into scratch item k: the nest to build,
 * its compiler, and the start of its record (op, target, configuration,
 * schedule, tuner; the measurement fills the rest). Tuners propose valid
 * configurations only: a failure here is a bug or out of memory. */
static rlt_status live_lower(live_state *l, rlt_trial *t, int k, rlt_diag *diag)
{
    const char *cc = "gcc";
    rlt_sched *sched = NULL;
    rlt_status st = rlt_space_schedule(l->space, &t->config, &sched, &cc, diag);
    if (st != RLT_STATUS_OK) return st;
    st = rlt_sched_apply(sched, l->op, &l->nests[k], diag);
    rlt_str schedule, key;
    rlt_str_init(&schedule);
    rlt_str_init(&key);
    rlt_sched_print(sched, &schedule);
    rlt_sched_destroy(sched);
    rlt_space_config_key(l->space, &t->config, &key);
    if (st == RLT_STATUS_OK && (schedule.has_failed || key.has_failed))
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory during tuning");
    if (st == RLT_STATUS_OK) {
        rlt_record *rec = &t->record;
        memset(rec, 0, sizeof *rec);
        copy_text(rec->spec, sizeof rec->spec, l->op->spec);
        rec->target = l->target;
        copy_text(rec->config, sizeof rec->config, key.data);
        copy_text(rec->schedule, sizeof rec->schedule, schedule.data);
        copy_text(rec->tuner, sizeof rec->tuner, l->tuner);
        rec->seed = l->seed;
        l->cc_of[k] = strcmp(cc, "clang") == 0 ? "clang" : NULL;
        l->candidates[k] = (rlt_candidate){.schedule = rec->schedule, .cc = l->cc_of[k]};
    }
    rlt_str_free(&schedule);
    rlt_str_free(&key);
    return st;
}

/* Builds and runs scratch items 0..n (lowered by live_lower) here, or by
 * the executor. */
static rlt_status live_run_items(live_state *l, const rlt_run_opts *run, int n, rlt_diag *diag)
{
    if (!l->executor) return rlt_measure_nests_cc(l->workload, &l->build, l->cc_of, run, n, l->nests, l->results, diag);
    return l->executor->measure(l->executor->ctx, l->op, l->target_key, &l->build, run, n, l->candidates, l->results,
                                diag);
}

static rlt_status live_measure(rlt_measurer *m, int n, rlt_trial *trials, const rlt_measure_ctx *ctx, rlt_diag *diag)
{
    live_state *l = m->state;
    if (!live_reserve(l, n)) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory measuring a batch");
    int n_new = 0;
    for (int i = 0; i < n; i++) {
        if (trials[i].source != RLT_TRIAL_PENDING) continue;
        rlt_status st = live_lower(l, &trials[i], n_new, diag);
        if (st != RLT_STATUS_OK) return st;
        l->slot[n_new++] = i;
    }
    if (n_new == 0) return RLT_STATUS_OK;
    /* A candidate whose calls, warm, are 4x slower than the best so far is
     * far from mattering: a few calls time it. */
    rlt_run_opts run = l->run;
    if (ctx->best_gflops > 0 && l->run.slow_cutoff_ms <= 0)
        run.slow_cutoff_ms = 4.0 * l->op->flops / (ctx->best_gflops * 1e6);
    rlt_status st = live_run_items(l, &run, n_new, diag);
    if (st != RLT_STATUS_OK) return st;
    for (int k = 0; k < n_new; k++) {
        const rlt_run_result *r = &l->results[k];
        rlt_trial *t = &trials[l->slot[k]];
        rlt_record *rec = &t->record;
        bool is_ok = r->status == RLT_STATUS_OK;
        rec->status = r->status;
        rec->time_min_ms = is_ok ? r->time_min_ms : 0;
        rec->time_median_ms = is_ok ? r->time_median_ms : 0;
        rec->gflops = is_ok ? r->gflops : 0;
        rec->build_s = r->build_s;
        rec->created_s = wall_now_s();
        copy_text(rec->message, sizeof rec->message, r->message);
        t->source = RLT_TRIAL_MEASURED;
        t->status = r->status;
        t->score = rec->gflops;
        t->time_ms = rec->time_median_ms;
    }
    return RLT_STATUS_OK;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The final pick: all n built once, then measured `rounds` times in turn,
 * with RLT_TUNE_FINAL_REPEAT samples of at least RLT_TUNE_FINAL_MIN_MS and
 * no slow cutoff. A candidate that fails in any round gets that failure as
 * its record (flaky: it failed now where it passed before). */
static rlt_status live_remeasure(rlt_measurer *m, int n, rlt_trial *trials, int rounds, const rlt_measure_ctx *ctx,
                                 int *out_rounds, rlt_diag *diag)
{
    live_state *l = m->state;
    *out_rounds = 0;
    rlt_run_opts run = l->run;
    run.repeat = RLT_MAX(l->run.repeat, RLT_TUNE_FINAL_REPEAT);
    run.min_repeat_ms = RLT_MAX(l->run.min_repeat_ms, RLT_TUNE_FINAL_MIN_MS);
    run.slow_cutoff_ms = 0; /* every candidate is timed in full */
    double *times = rlt_calloc((size_t)(n * rounds), sizeof *times);
    double *mins = rlt_calloc((size_t)n, sizeof *mins);
    rlt_run_result *failure = rlt_calloc((size_t)n, sizeof *failure);
    double *tuning_scores = rlt_calloc((size_t)n, sizeof *tuning_scores);
    rlt_status st = RLT_STATUS_OK;
    if (!times || !mins || !failure || !tuning_scores || !live_reserve(l, n)) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory re-measuring the best candidates");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        tuning_scores[i] = trials[i].score;
        if ((st = live_lower(l, &trials[i], i, diag)) != RLT_STATUS_OK) goto done;
        mins[i] = INFINITY;
    }
    for (int r = 0; r < rounds; r++) {
        if (ctx->stop && *ctx->stop) break;
        if ((st = live_run_items(l, &run, n, diag)) != RLT_STATUS_OK) goto done;
        for (int i = 0; i < n; i++) {
            const rlt_run_result *res = &l->results[i];
            if (res->status != RLT_STATUS_OK) {
                if (failure[i].status == RLT_STATUS_OK) failure[i] = *res;
                continue;
            }
            times[i * rounds + r] = res->time_median_ms;
            mins[i] = RLT_MIN(mins[i], res->time_min_ms);
        }
        *out_rounds = r + 1;
    }
    int done_rounds = *out_rounds;
    for (int i = 0; i < n && done_rounds > 0; i++) {
        rlt_trial *t = &trials[i];
        rlt_record *rec = &t->record;
        rec->created_s = wall_now_s();
        rec->is_final = true;
        if (failure[i].status != RLT_STATUS_OK) {
            rec->status = failure[i].status;
            copy_text(rec->message, sizeof rec->message, failure[i].message);
            t->status = rec->status;
            t->score = t->time_ms = 0;
            continue;
        }
        double *tm = &times[i * rounds];
        qsort(tm, (size_t)done_rounds, sizeof *tm, compare_doubles);
        double median =
            done_rounds % 2 ? tm[done_rounds / 2] : 0.5 * (tm[done_rounds / 2 - 1] + tm[done_rounds / 2]);
        rec->status = RLT_STATUS_OK;
        rec->time_median_ms = median;
        rec->time_min_ms = mins[i];
        rec->gflops = l->op->flops / (median * 1e6);
        snprintf(rec->message, sizeof rec->message,
                 "the median of %d rounds of %d samples of >= %g ms (tuning had measured %.2f GFLOP/s)", done_rounds,
                 run.repeat, run.min_repeat_ms, tuning_scores[i]);
        t->status = RLT_STATUS_OK;
        t->score = rec->gflops;
        t->time_ms = median;
    }
done:
    rlt_free(times);
    rlt_free(mins);
    rlt_free(failure);
    rlt_free(tuning_scores);
    return st;
}

static void live_destroy(rlt_measurer *m)
{
    live_state *l = m->state;
    if (!l) return;
    rlt_workload_destroy(l->workload);
    rlt_free(l->nests);
    rlt_free(l->results);
    rlt_free(l->cc_of);
    rlt_free(l->slot);
    rlt_free(l->candidates);
    rlt_free(l->target_key);
    rlt_free(l);
}

static const rlt_measurer_ops k_live_ops = {"live", live_measure, live_remeasure, live_destroy};

rlt_status rlt_measurer_live_create(const rlt_op *op, const rlt_space *space, const rlt_record_target *target,
                                    const rlt_build_opts *build, const rlt_run_opts *run, const char *tuner,
                                    uint64_t seed, rlt_measurer **out, rlt_diag *diag)
{
    *out = NULL;
    live_state *l = rlt_calloc(1, sizeof *l);
    if (!l) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a measurer");
    l->op = op;
    l->space = space;
    l->target = *target;
    l->build = *build;
    l->run = *run;
    l->run.n_threads = target->n_threads;
    copy_text(l->tuner, sizeof l->tuner, tuner);
    l->seed = seed;
    if (!(l->target_key = rlt_record_target_text(target))) {
        rlt_free(l);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a measurer");
    }
    rlt_status st = rlt_workload_create(op, &l->build, 0, &l->workload, diag);
    if (st != RLT_STATUS_OK) {
        rlt_free(l->target_key);
        rlt_free(l);
        return st;
    }
    return measurer_new(&k_live_ops, l, out, diag);
}

void rlt_measurer_live_set_executor(rlt_measurer *m, const rlt_executor *executor)
{
    RLT_ASSERT(m->ops == &k_live_ops);
    ((live_state *)m->state)->executor = executor;
}

/* ---- recorded ----------------------------------------------------------- */

typedef struct recorded_state {
    rlt_db *db;
    const rlt_op *op;
    const rlt_space *space;
    char *target_key;     /* owned */
    char only_tuner[32];  /* "" = any */
    rlt_measurer *inner;  /* owned */
    /* scratch, cap items */
    int cap;
    rlt_record *records;
    bool *was_pending;
} recorded_state;

static bool recorded_reserve(recorded_state *r, int n)
{
    if (n <= r->cap) return true;
    rlt_record *records = rlt_realloc(r->records, sizeof *records * (size_t)n);
    if (records) r->records = records;
    bool *was_pending = rlt_realloc(r->was_pending, sizeof *was_pending * (size_t)n);
    if (was_pending) r->was_pending = was_pending;
    if (!records || !was_pending) return false;
    r->cap = n;
    return true;
}

/* Reads back the trials measured before. */
static rlt_status recorded_read_back(recorded_state *r, int n, rlt_trial *trials, rlt_diag *diag)
{
    rlt_str key;
    rlt_str_init(&key);
    rlt_status st = RLT_STATUS_OK;
    for (int i = 0; i < n && st == RLT_STATUS_OK; i++) {
        rlt_trial *t = &trials[i];
        r->was_pending[i] = false;
        if (t->source != RLT_TRIAL_PENDING) continue;
        rlt_str_clear(&key);
        rlt_space_config_key(r->space, &t->config, &key);
        if (key.has_failed) {
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading records back");
            break;
        }
        bool found = false;
        rlt_record *rec = &r->records[i];
        if ((st = rlt_db_lookup(r->db, r->op->spec, r->target_key, key.data, rec, &found, diag)) != RLT_STATUS_OK)
            break;
        if (found && r->only_tuner[0] && strcmp(rec->tuner, r->only_tuner) != 0) found = false;
        if (!found) {
            r->was_pending[i] = true;
            continue;
        }
        t->source = RLT_TRIAL_RECORDED;
        t->status = rec->status;
        t->score = rec->status == RLT_STATUS_OK ? rec->gflops : 0.0;
        t->time_ms = rec->status == RLT_STATUS_OK ? rec->time_median_ms : 0.0;
    }
    rlt_str_free(&key);
    return st;
}

/* Stores the records of the trials `inner` answered, in one transaction. */
static rlt_status recorded_store(recorded_state *r, int n, const rlt_trial *trials, const bool *pick, rlt_diag *diag)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        if (pick[i] && trials[i].source == RLT_TRIAL_MEASURED) r->records[k++] = trials[i].record;
    return rlt_db_append(r->db, k, r->records, diag);
}

static rlt_status recorded_measure(rlt_measurer *m, int n, rlt_trial *trials, const rlt_measure_ctx *ctx,
                                   rlt_diag *diag)
{
    recorded_state *r = m->state;
    if (!recorded_reserve(r, n)) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory measuring a batch");
    rlt_status st = recorded_read_back(r, n, trials, diag);
    if (st == RLT_STATUS_OK) st = r->inner->ops->measure(r->inner, n, trials, ctx, diag);
    if (st == RLT_STATUS_OK) st = recorded_store(r, n, trials, r->was_pending, diag);
    return st;
}

static rlt_status recorded_remeasure(rlt_measurer *m, int n, rlt_trial *trials, int rounds,
                                     const rlt_measure_ctx *ctx, int *out_rounds, rlt_diag *diag)
{
    recorded_state *r = m->state;
    *out_rounds = 0;
    if (!r->inner->ops->remeasure) return RLT_STATUS_OK;
    if (!recorded_reserve(r, n)) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory re-measuring");
    rlt_status st = r->inner->ops->remeasure(r->inner, n, trials, rounds, ctx, out_rounds, diag);
    if (st != RLT_STATUS_OK || *out_rounds == 0) return st;
    for (int i = 0; i < n; i++) r->was_pending[i] = true;
    return recorded_store(r, n, trials, r->was_pending, diag);
}

static void recorded_destroy(rlt_measurer *m)
{
    recorded_state *r = m->state;
    if (!r) return;
    rlt_measurer_destroy(r->inner);
    rlt_free(r->target_key);
    rlt_free(r->records);
    rlt_free(r->was_pending);
    rlt_free(r);
}

static const rlt_measurer_ops k_recorded_ops = {"recorded", recorded_measure, recorded_remeasure, recorded_destroy};

rlt_status rlt_measurer_recorded_create(rlt_db *db, const rlt_op *op, const rlt_space *space,
                                        const rlt_record_target *target, const char *only_tuner, rlt_measurer *inner,
                                        rlt_measurer **out, rlt_diag *diag)
{
    *out = NULL;
    recorded_state *r = rlt_calloc(1, sizeof *r);
    rlt_str key;
    rlt_str_init(&key);
    rlt_record_target_key(target, &key);
    if (!r || key.has_failed) {
        rlt_free(r);
        rlt_str_free(&key);
        rlt_measurer_destroy(inner);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a measurer");
    }
    r->db = db;
    r->op = op;
    r->space = space;
    r->target_key = rlt_str_take(&key);
    copy_text(r->only_tuner, sizeof r->only_tuner, only_tuner);
    r->inner = inner;
    return measurer_new(&k_recorded_ops, r, out, diag);
}
