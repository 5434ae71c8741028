/*
 * tune.c - the tuning loop (rlt_tune): propose (a tuner, or a fixed plan),
 * read back or measure (live, or answered by a replay's dataset), store,
 * learn; and the target key that records are filed under.
 *
 * Order within a batch, and why:
 *   1. the tuner proposes up to batch_size configurations;
 *   2. those measured before for this workload and target are read back
 *      from the records (a resumed run measures nothing twice);
 *   3. the rest are lowered and built together (two compilers at once),
 *      then run one at a time: nothing is timed while compiling;
 *   4. the batch's records are appended in one transaction before the tuner
 *      hears the scores, so a kill -9 loses at most the batch in flight.
 * A replay replaces 2 to 4 by a lookup in the dataset (dataset.c), which
 * stores nothing.
 */
#include "search/tune.h"
#include "codegen/codegen.h"
#include "search/dataset.h"
#include "search/transfer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void rlt_tune_target_key(const rlt_build_opts *build, int n_threads, rlt_str *out)
{
    rlt_target t;
    rlt_target_detect(&t);
    rlt_str cc;
    rlt_str_init(&cc);
    rlt_build_describe(build, false, &cc);
    /* weights=prepacked: weights are staged once, untimed (codegen.h). Records
     * from before that (no such field) timed the staging on every call, so
     * they belong to another target. codegen=N: the version of the code a
     * configuration lowers to (RLT_CODEGEN_VERSION); older records measured
     * other code under the same keys. */
    rlt_str_printf(out, "cpu=%s;vec=%d;threads=%d;weights=prepacked;codegen=%d;cc=%s", t.cpu_model, t.vector_floats,
                   n_threads > 0 ? n_threads : 1, RLT_CODEGEN_VERSION, cc.data ? cc.data : "");
    if (cc.has_failed) out->has_failed = true;
    rlt_str_free(&cc);
}

static double wall_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void copy_text(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

/* Everything one batch needs, allocated once for the largest batch. */
typedef struct batch {
    rlt_config *configs;
    double *scores;
    rlt_nest *nests;
    rlt_run_result *results;
    rlt_record *records;
    int *slot;        /* measured item i -> position in configs */
    char (*cc)[16];
} batch;

static void batch_free(batch *b)
{
    rlt_free(b->configs);
    rlt_free(b->scores);
    rlt_free(b->nests);
    rlt_free(b->results);
    rlt_free(b->records);
    rlt_free(b->slot);
    rlt_free(b->cc);
}

static bool batch_alloc(batch *b, int n)
{
    size_t un = (size_t)n;
    b->configs = rlt_calloc(un, sizeof *b->configs);
    b->scores = rlt_calloc(un, sizeof *b->scores);
    b->nests = rlt_calloc(un, sizeof *b->nests);
    b->results = rlt_calloc(un, sizeof *b->results);
    b->records = rlt_calloc(un, sizeof *b->records);
    b->slot = rlt_calloc(un, sizeof *b->slot);
    b->cc = rlt_calloc(un, sizeof *b->cc);
    return b->configs && b->scores && b->nests && b->results && b->records && b->slot && b->cc;
}

/* Measures the nests b->nests[0..n): all built together (gcc and clang
 * side by side), then run one by one. */
static rlt_status measure_batch(const rlt_workload *w, const rlt_tune_opts *o, batch *b, int n, rlt_diag *diag)
{
    /* The cc knob decides only when the space offers a choice: "gcc" is the
     * build options' compiler, "clang" is clang. Both compile side by side. */
    const char **cc_of = rlt_calloc((size_t)n, sizeof *cc_of);
    if (!cc_of) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory measuring a batch");
    for (int i = 0; i < n; i++) cc_of[i] = strcmp(b->cc[i], "clang") == 0 ? "clang" : NULL;
    rlt_status st = rlt_measure_nests_cc(w, &o->build, cc_of, &o->run, n, b->nests, b->results, diag);
    rlt_free(cc_of);
    return st;
}

/* Answers the batch's configurations from the replay's dataset: scores,
 * failures and absences counted, nothing built or run. */
static void replay_batch(const rlt_tune_opts *o, const batch *b, int n, double *scores, rlt_tune_result *out)
{
    for (int i = 0; i < n; i++) {
        const rlt_replay_entry *e = rlt_replay_find(o->replay, &b->configs[i]);
        if (!e) {
            scores[i] = 0.0;
            out->n_absent++;
            continue;
        }
        bool is_ok = strcmp(e->status, "OK") == 0;
        scores[i] = is_ok ? e->gflops : 0.0;
        out->n_replayed++;
        if (!is_ok) out->n_failed++;
    }
}

/* Lowers configuration c (its key: `key`) into b's slot: the nest to build
 * and its compiler, and the start of its record (op, target, configuration,
 * schedule, tuner; the measurement fills the rest). */
static rlt_status lower_candidate(const rlt_op *op, const rlt_space *space, const rlt_tune_opts *o, const char *target,
                                  const rlt_config *c, const char *key, batch *b, int slot, rlt_diag *diag)
{
    const char *cc = "gcc";
    rlt_sched *sched = NULL;
    rlt_status st = rlt_space_schedule(space, c, &sched, &cc, diag);
    if (st != RLT_STATUS_OK) return st;
    st = rlt_sched_apply(sched, op, &b->nests[slot], diag);
    rlt_str text;
    rlt_str_init(&text);
    rlt_sched_print(sched, &text);
    rlt_sched_destroy(sched);
    if (st == RLT_STATUS_OK && text.has_failed)
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory during tuning");
    if (st == RLT_STATUS_OK) {
        rlt_record *rec = &b->records[slot];
        memset(rec, 0, sizeof *rec);
        copy_text(rec->spec, sizeof rec->spec, op->spec);
        copy_text(rec->target, sizeof rec->target, target);
        copy_text(rec->config, sizeof rec->config, key);
        copy_text(rec->schedule, sizeof rec->schedule, text.data);
        copy_text(rec->tuner, sizeof rec->tuner, o->tuner);
        copy_text(b->cc[slot], sizeof b->cc[slot], cc);
    }
    rlt_str_free(&text);
    return st;
}

/* Reads back the batch's configurations measured before (those of the
 * plan's proposer only, with a plan) and lowers the rest for measuring:
 * b->slot[0..*out_n_new) are their positions. */
static rlt_status prepare_batch(const rlt_op *op, const rlt_space *space, const rlt_tune_opts *o, const char *target,
                                batch *b, int n, int *out_n_new, rlt_tune_result *out, rlt_diag *diag)
{
    rlt_str key;
    rlt_str_init(&key);
    rlt_status st = RLT_STATUS_OK;
    int n_new = 0;
    for (int i = 0; i < n; i++) {
        rlt_str_clear(&key);
        rlt_space_config_key(space, &b->configs[i], &key);
        bool found = false;
        rlt_record *rec = &b->records[n_new];
        if (o->db && (st = rlt_db_lookup(o->db, op->spec, target, key.data ? key.data : "", rec, &found, diag)) !=
                         RLT_STATUS_OK)
            goto done;
        if (found && o->plan && strcmp(rec->tuner, o->tuner) != 0) found = false;
        if (found) {
            b->scores[i] = strcmp(rec->status, "OK") == 0 ? rec->gflops : 0.0;
            out->n_from_db++;
            if (strcmp(rec->status, "OK") != 0) out->n_failed++;
            continue;
        }
        /* tuners propose valid configurations only: a failure here is a bug or out of memory */
        if ((st = lower_candidate(op, space, o, target, &b->configs[i], key.data ? key.data : "", b, n_new, diag)) !=
            RLT_STATUS_OK)
            goto done;
        b->slot[n_new++] = i;
    }
    if (key.has_failed) st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory during tuning");
done:
    *out_n_new = n_new;
    rlt_str_free(&key);
    return st;
}

/* Fills the records of the measured items from their results; scores and
 * failures counted. */
static void record_results(const rlt_tune_opts *o, batch *b, int n_new, rlt_tune_result *out)
{
    for (int k = 0; k < n_new; k++) {
        const rlt_run_result *r = &b->results[k];
        rlt_record *rec = &b->records[k];
        copy_text(rec->status, sizeof rec->status, rlt_status_str(r->status));
        rec->time_min_ms = r->status == RLT_STATUS_OK ? r->time_min_ms : 0;
        rec->time_median_ms = r->status == RLT_STATUS_OK ? r->time_median_ms : 0;
        rec->gflops = r->status == RLT_STATUS_OK ? r->gflops : 0;
        rec->n_threads = o->n_threads;
        rec->seed = o->seed;
        rec->build_s = r->build_s;
        rec->created_s = wall_now_s();
        copy_text(rec->message, sizeof rec->message, r->message);
        b->scores[b->slot[k]] = rec->gflops;
        if (r->status != RLT_STATUS_OK) out->n_failed++;
    }
}

/* Keeps the best configuration's key, schedule and compiler. */
static void note_best(const rlt_space *space, const rlt_config *c, rlt_tune_result *out)
{
    rlt_str text;
    rlt_str_init(&text);
    rlt_space_config_key(space, c, &text);
    copy_text(out->best_config, sizeof out->best_config, text.data);
    rlt_sched *sched = NULL;
    const char *cc = "gcc";
    if (rlt_space_schedule(space, c, &sched, &cc, NULL) == RLT_STATUS_OK) {
        rlt_str_clear(&text);
        rlt_sched_print(sched, &text);
        copy_text(out->best_schedule, sizeof out->best_schedule, text.data);
        copy_text(out->best_cc, sizeof out->best_cc, cc);
        rlt_sched_destroy(sched);
    }
    rlt_str_free(&text);
}

/* ---- the same op at other thread counts --------------------------------- */

/* `key` (a target or configuration key) without its `field` (";threads=",
 * ";parallel="; not the last field, cc=, whose flags may hold ';'). */
static void key_without_field(const char *key, const char *field, char *out, size_t cap)
{
    const char *f = strstr(key, field);
    const char *end = f ? strchr(f + 1, ';') : NULL;
    if (!f) snprintf(out, cap, "%s", key);
    else snprintf(out, cap, "%.*s%s", (int)(f - key), key, end ? end : "");
}

/* The space's parallel knob, or -1 (one thread). */
static int parallel_knob(const rlt_space *space)
{
    for (int k = 0; k < space->n_knobs; k++)
        if (space->knobs[k].kind == RLT_KNOB_PARALLEL) return k;
    return -1;
}

typedef struct other_record {
    char *target, *config; /* owned */
    double gflops;         /* 0 unless OK */
    bool is_final;         /* a final pick's careful measurement */
    int order;             /* position in the history, oldest first */
} other_record;

typedef struct other_walk {
    const char *own_target;
    char own_part[sizeof ((rlt_record *)0)->target];
    other_record *records;
    int n, cap;
    bool has_failed;
} other_walk;

static bool collect_other_threads(const rlt_record *r, void *ctx)
{
    other_walk *w = ctx;
    if (!r->config[0] || strcmp(r->target, w->own_target) == 0) return true;
    char part[sizeof r->target];
    key_without_field(r->target, ";threads=", part, sizeof part);
    if (strcmp(part, w->own_part) != 0) return true;
    if (w->n == w->cap) {
        int cap = w->cap ? 2 * w->cap : 64;
        other_record *grown = rlt_realloc(w->records, sizeof *grown * (size_t)cap);
        if (!grown) {
            w->has_failed = true;
            return false;
        }
        w->records = grown;
        w->cap = cap;
    }
    other_record *o = &w->records[w->n];
    o->target = rlt_strdup(r->target);
    o->config = rlt_strdup(r->config);
    if (!o->target || !o->config) {
        rlt_free(o->target);
        rlt_free(o->config);
        w->has_failed = true;
        return false;
    }
    o->gflops = strcmp(r->status, "OK") == 0 ? r->gflops : 0.0;
    o->is_final = strncmp(r->message, RLT_DB_FINAL_PREFIX, strlen(RLT_DB_FINAL_PREFIX)) == 0;
    o->order = w->n++;
    return true;
}

/* Groups a configuration's records, newest first. */
static int compare_by_config_newest_first(const void *a, const void *b)
{
    const other_record *x = a, *y = b;
    int c = strcmp(x->target, y->target);
    if (!c) c = strcmp(x->config, y->config);
    return c ? c : (y->order > x->order) - (y->order < x->order);
}

/* Final picks first, then the fastest. */
static int compare_by_rank(const void *a, const void *b)
{
    const other_record *x = a, *y = b;
    if (x->is_final != y->is_final) return x->is_final ? -1 : 1;
    return (y->gflops > x->gflops) - (y->gflops < x->gflops);
}

/* Appends to configs (up to cap) the valid configurations of `space` that
 * `key` (from another thread count's space) becomes: a parallel= knob this
 * space lacks dropped, a parallel knob it has and key lacks tried at each
 * of its values. Returns how many it added. */
static int adapt_other_threads_key(const rlt_space *space, const char *key, rlt_config *configs, int n, int cap)
{
    int par = parallel_knob(space);
    char base[sizeof ((rlt_record *)0)->config];
    const char *p = strstr(key, ";parallel=");
    if (p && par < 0) key_without_field(key, ";parallel=", base, sizeof base);
    else snprintf(base, sizeof base, "%s", key);
    int n_choices = par >= 0 && !p ? space->knobs[par].n_choices : 1, added = 0;
    rlt_str text, value;
    rlt_str_init(&text);
    rlt_str_init(&value);
    for (int ch = 0; ch < n_choices && n + added < cap; ch++) {
        rlt_str_clear(&text);
        rlt_str_append(&text, base);
        if (par >= 0 && !p) {
            rlt_str_clear(&value);
            rlt_knob_value_text(space, &space->knobs[par], ch, &value);
            rlt_str_printf(&text, ";parallel=%s", value.data ? value.data : "");
        }
        rlt_config c;
        if (text.has_failed || value.has_failed || rlt_space_config_parse(space, text.data, &c, NULL) != RLT_STATUS_OK ||
            !rlt_space_is_valid(space, &c))
            continue;
        uint64_t index = rlt_space_index_of(space, &c);
        bool is_new = true;
        for (int i = 0; i < n + added; i++) is_new &= rlt_space_index_of(space, &configs[i]) != index;
        if (is_new) configs[n + added++] = c;
    }
    rlt_str_free(&text);
    rlt_str_free(&value);
    return added;
}

/* The same op's best configurations at other thread counts, made to fit
 * this run's space (rlt_tune_opts.from_other_threads). *out (owned; NULL
 * when none) holds *out_n of them. */
static rlt_status other_threads_configs(rlt_db *db, const rlt_op *op, const rlt_space *space, const char *target,
                                        rlt_config **out, int *out_n, rlt_diag *diag)
{
    *out = NULL;
    *out_n = 0;
    other_walk w = {.own_target = target};
    key_without_field(target, ";threads=", w.own_part, sizeof w.own_part);
    rlt_status st = rlt_db_history(db, op->spec, NULL, collect_other_threads, &w, diag);
    if (st == RLT_STATUS_OK && w.has_failed)
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading other thread counts' records");
    /* each configuration by its latest record, then ranked */
    int n_latest = 0;
    if (st == RLT_STATUS_OK && w.n > 0) {
        qsort(w.records, (size_t)w.n, sizeof *w.records, compare_by_config_newest_first);
        for (int i = w.n - 1; i > 0; i--) /* an older record of the same configuration: out */
            if (strcmp(w.records[i].target, w.records[i - 1].target) == 0 &&
                strcmp(w.records[i].config, w.records[i - 1].config) == 0)
                w.records[i].gflops = 0;
        for (int i = 0; i < w.n; i++) {
            if (w.records[i].gflops <= 0) continue; /* older, or its latest failed */
            other_record keep = w.records[n_latest];
            w.records[n_latest++] = w.records[i];
            w.records[i] = keep;
        }
        qsort(w.records, (size_t)n_latest, sizeof *w.records, compare_by_rank);
    }
    int par = parallel_knob(space);
    int cap = RLT_TUNE_OTHER_THREADS * (par >= 0 ? space->knobs[par].n_choices : 1);
    rlt_config *configs = st == RLT_STATUS_OK && n_latest > 0 ? rlt_calloc((size_t)cap, sizeof *configs) : NULL;
    if (st == RLT_STATUS_OK && n_latest > 0 && !configs)
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading other thread counts' records");
    int n = 0;
    for (int i = 0, taken = 0; configs && i < n_latest && taken < RLT_TUNE_OTHER_THREADS; i++) {
        int added = adapt_other_threads_key(space, w.records[i].config, configs, n, cap);
        n += added;
        taken += added > 0;
    }
    for (int i = 0; i < w.n; i++) {
        rlt_free(w.records[i].target);
        rlt_free(w.records[i].config);
    }
    rlt_free(w.records);
    if (st != RLT_STATUS_OK || n == 0) {
        rlt_free(configs);
        return st;
    }
    *out = configs;
    *out_n = n;
    return RLT_STATUS_OK;
}

/* ---- the final pick --------------------------------------------------- */

/* The best configurations of the run so far, best first (at most cap). */
typedef struct top_list {
    int n, cap;
    rlt_config *configs;
    uint64_t *indices;
    double *scores;
} top_list;

static void top_offer(top_list *t, const rlt_space *space, const rlt_config *c, double score)
{
    if (score <= 0 || t->cap == 0) return;
    uint64_t index = rlt_space_index_of(space, c);
    for (int i = 0; i < t->n; i++)
        if (t->indices[i] == index) return; /* read back again: the same score */
    int pos = t->n;
    while (pos > 0 && score > t->scores[pos - 1]) pos--;
    if (pos >= t->cap) return;
    int n_move = (t->n < t->cap ? t->n : t->cap - 1) - pos;
    memmove(&t->configs[pos + 1], &t->configs[pos], sizeof *t->configs * (size_t)n_move);
    memmove(&t->indices[pos + 1], &t->indices[pos], sizeof *t->indices * (size_t)n_move);
    memmove(&t->scores[pos + 1], &t->scores[pos], sizeof *t->scores * (size_t)n_move);
    t->configs[pos] = *c;
    t->indices[pos] = index;
    t->scores[pos] = score;
    if (t->n < t->cap) t->n++;
}

/* At several threads, the final pick also re-measures the best
 * configuration without a parallel loop when the top list lacks one: on a
 * product of microseconds, parallel kernels that tuning put ahead (351
 * GFLOP/s on matmul 64^3) came out behind the serial kernel when measured
 * again (220 against 265; 357-362 in another run: bench/RESULTS.md, eighth
 * round), and the pick only compares what it re-measures. It takes the
 * list's last place when the list is as long as a batch. */
static void top_add_serial(top_list *t, const rlt_space *space, const rlt_config *serial, double score,
                           int batch_size)
{
    if (score <= 0) return;
    uint64_t index = rlt_space_index_of(space, serial);
    for (int i = 0; i < t->n; i++)
        if (t->indices[i] == index) return;
    int at = t->n < batch_size ? t->n++ : t->n - 1; /* the arrays hold cap + 1 */
    t->configs[at] = *serial;
    t->indices[at] = index;
    t->scores[at] = score;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Measures the top candidates again, rounds times each in turn, stores one
 * record each (the median over the rounds), and makes the best of them the
 * run's best (rlt_tune_opts.n_final). */
static rlt_status final_pick(const rlt_op *op, const rlt_space *space, const rlt_workload *w, const rlt_tune_opts *o,
                             const char *target, const top_list *top, batch *b, rlt_tune_result *out, rlt_diag *diag)
{
    int n = top->n, rounds = o->final_rounds > 0 ? o->final_rounds : 3;
    rlt_tune_opts fo = *o;
    fo.run.repeat = RLT_MAX(o->run.repeat, RLT_TUNE_FINAL_REPEAT);
    fo.run.min_repeat_ms = RLT_MAX(o->run.min_repeat_ms, RLT_TUNE_FINAL_MIN_MS);
    fo.run.slow_cutoff_ms = 0; /* every candidate is timed in full */
    double *times = rlt_calloc((size_t)(n * rounds), sizeof *times);
    double *mins = rlt_calloc((size_t)n, sizeof *mins);
    rlt_run_result *failure = rlt_calloc((size_t)n, sizeof *failure);
    rlt_str key;
    rlt_str_init(&key);
    rlt_status st = RLT_STATUS_OK;
    if (!times || !mins || !failure) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory re-measuring the best candidates");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        rlt_str_clear(&key);
        rlt_space_config_key(space, &top->configs[i], &key);
        if (key.has_failed) {
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory re-measuring the best candidates");
            goto done;
        }
        if ((st = lower_candidate(op, space, o, target, &top->configs[i], key.data, b, i, diag)) != RLT_STATUS_OK)
            goto done;
        mins[i] = INFINITY;
    }
    for (int r = 0; r < rounds; r++) {
        if (o->stop && *o->stop) break;
        if ((st = measure_batch(w, &fo, b, n, diag)) != RLT_STATUS_OK) goto done;
        for (int i = 0; i < n; i++) {
            const rlt_run_result *res = &b->results[i];
            if (res->status != RLT_STATUS_OK) {
                if (failure[i].status == RLT_STATUS_OK) failure[i] = *res;
                continue;
            }
            times[i * rounds + r] = res->time_median_ms;
            mins[i] = RLT_MIN(mins[i], res->time_min_ms);
        }
        out->final_rounds = r + 1;
    }
    int done_rounds = out->final_rounds, pick = -1;
    double pick_gflops = 0.0;
    for (int i = 0; i < n && done_rounds > 0; i++) {
        rlt_record *rec = &b->records[i];
        rec->n_threads = o->n_threads;
        rec->seed = o->seed;
        rec->created_s = wall_now_s();
        if (failure[i].status != RLT_STATUS_OK) {
            /* flaky: it failed now where it passed before; that is its record */
            copy_text(rec->status, sizeof rec->status, rlt_status_str(failure[i].status));
            copy_text(rec->message, sizeof rec->message, failure[i].message);
            continue;
        }
        double *t = &times[i * rounds];
        qsort(t, (size_t)done_rounds, sizeof *t, compare_doubles);
        double median = done_rounds % 2 ? t[done_rounds / 2] : 0.5 * (t[done_rounds / 2 - 1] + t[done_rounds / 2]);
        copy_text(rec->status, sizeof rec->status, "OK");
        rec->time_median_ms = median;
        rec->time_min_ms = mins[i];
        rec->gflops = op->flops / (median * 1e6);
        snprintf(rec->message, sizeof rec->message,
                 RLT_DB_FINAL_PREFIX " the median of %d rounds of %d samples of >= %g ms (tuning had measured %.2f "
                 "GFLOP/s)",
                 done_rounds, fo.run.repeat, fo.run.min_repeat_ms, top->scores[i]);
        if (rec->gflops > pick_gflops) {
            pick_gflops = rec->gflops;
            pick = i;
        }
    }
    if (done_rounds > 0 && o->db && (st = rlt_db_append(o->db, n, b->records, diag)) != RLT_STATUS_OK) goto done;
    out->n_final = done_rounds > 0 ? n : 0;
    if (pick >= 0) {
        out->best_gflops = pick_gflops;
        out->best_time_ms = b->records[pick].time_median_ms;
        note_best(space, &top->configs[pick], out);
    }
done:
    rlt_free(times);
    rlt_free(mins);
    rlt_free(failure);
    rlt_str_free(&key);
    return st;
}

/* ---- the tuning loop ---------------------------------------------------- */

rlt_status rlt_tune(const rlt_op *op, const rlt_tune_opts *opts, rlt_tune_result *out, rlt_diag *diag)
{
    memset(out, 0, sizeof *out);
    rlt_tune_opts o = *opts;
    if (o.plan) o.n_trials = o.n_plan;
    if (o.n_trials < 1)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "the number of trials must be at least 1 (got %d)",
                        o.n_trials);
    if (o.batch_size <= 0) o.batch_size = 16;
    if (o.n_threads <= 0) o.n_threads = 1;
    o.run.n_threads = o.n_threads;
    o.space.n_threads = o.n_threads;
    o.tuner_opts.seed = o.seed;
    if (o.replay) {
        const rlt_dataset_info *info = rlt_replay_info(o.replay);
        if (o.db)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "a replay stores no records: give it no database");
        if (strcmp(info->spec, op->spec) != 0)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "the dataset is of op %s, not %s", info->spec,
                            op->spec);
        if (info->n_threads != o.n_threads)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "the dataset was measured with %d thread%s, the replay asks for %d", info->n_threads,
                            info->n_threads == 1 ? "" : "s", o.n_threads);
    }

    rlt_space space;
    rlt_tuner *tuner = NULL;
    rlt_workload *w = NULL;
    batch b = {0};
    rlt_str target;
    rlt_str_init(&target);
    rlt_transfer transfer = {0};
    rlt_config *priors = NULL; /* o.from_other_threads' configurations, then o.n_seeds': owned */
    top_list top = {0};
    rlt_config serial = {0}; /* the best configuration without a parallel loop (top_add_serial) */
    double serial_score = 0;
    uint64_t start_ns = rlt_time_ns();
    double search_s = 0; /* wall time of the search, without the final pick */
    int since_best = 0, n_planned = 0;
    rlt_status st = RLT_STATUS_OK;
    if (o.replay) {
        space = *rlt_replay_space(o.replay);
    } else if ((st = rlt_space_create(op, &o.space, &space, diag)) != RLT_STATUS_OK) {
        goto done;
    }
    rlt_tune_target_key(&o.build, o.n_threads, &target);
    if (o.transfer_db && !o.plan) {
        if (strncmp(o.tuner, "xgb", 3) != 0 && strcmp(o.tuner, "ppo") != 0) {
            st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                          "transfer from other workloads' records needs a model-based tuner (xgb, xgb-rank, ppo), "
                          "not %s", o.tuner);
            goto done;
        }
        if (target.has_failed) {
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory starting a tuning run");
            goto done;
        }
        if ((st = rlt_transfer_collect(o.transfer_db, op, &space, &o.space, target.data, 0, &transfer, diag)) !=
            RLT_STATUS_OK) {
            rlt_diag_prefix(diag, "transfer");
            goto done;
        }
        o.tuner_opts.n_transfer = transfer.n_rows;
        o.tuner_opts.transfer_xs = transfer.xs;
        o.tuner_opts.transfer_ys = transfer.ys;
        out->n_transfer_rows = transfer.n_rows;
        out->n_transfer_workloads = transfer.n_workloads;
    }
    rlt_config start_config;
    if (o.start_key && !o.plan) {
        if ((st = rlt_space_config_parse(&space, o.start_key, &start_config, diag)) != RLT_STATUS_OK) {
            rlt_diag_prefix(diag, "the start configuration");
            goto done;
        }
        o.tuner_opts.n_start = 1;
        o.tuner_opts.start_configs = &start_config;
        snprintf(out->start_config, sizeof out->start_config, "%s", o.start_key);
    } else if (o.start_nest && !o.plan) {
        rlt_diag pd = {0};
        if (rlt_space_project(&space, o.start_nest, &start_config, &pd) == RLT_STATUS_OK) {
            o.tuner_opts.n_start = 1;
            o.tuner_opts.start_configs = &start_config;
            rlt_str key;
            rlt_str_init(&key);
            rlt_space_config_key(&space, &start_config, &key);
            snprintf(out->start_config, sizeof out->start_config, "%s", key.data ? key.data : "");
            rlt_str_free(&key);
        } else {
            rlt_log(RLT_LOG_WARN, "the start nest has no valid configuration near it (%s): tuning from scratch",
                    pd.message);
        }
    }
    if (o.from_other_threads && o.db && !o.plan && !o.replay) {
        if (target.has_failed) {
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory starting a tuning run");
            goto done;
        }
        if ((st = other_threads_configs(o.db, op, &space, target.data, &priors, &out->n_other_threads, diag)) !=
            RLT_STATUS_OK)
            goto done;
    }
    if (o.n_seeds > 0 && !o.plan && !o.replay) {
        int n_other = out->n_other_threads;
        rlt_config *grown = rlt_realloc(priors, sizeof *priors * (size_t)(n_other + o.n_seeds));
        if (!grown) {
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory building seed configurations");
            goto done;
        }
        priors = grown;
        out->n_seeds = rlt_space_seeds(&space, o.n_seeds, priors + n_other);
    }
    o.tuner_opts.n_prior = out->n_other_threads + out->n_seeds;
    o.tuner_opts.prior_configs = o.tuner_opts.n_prior > 0 ? priors : NULL;
    uint64_t tuner_start_ns = rlt_time_ns();
    if (!o.plan && (st = rlt_tuner_create(o.tuner, &space, &o.tuner_opts, &tuner, diag)) != RLT_STATUS_OK) goto done;
    if ((o.agent_in || o.agent_out) && (!tuner || !rlt_tuner_has_agent(tuner))) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "tuner %s has no agent to load or save (the learning tuners are ga-dqn, dqn, bandit and ppo)",
                      o.tuner);
        goto done;
    }
    if (o.agent_in && (st = rlt_tuner_load(tuner, o.agent_in, diag)) != RLT_STATUS_OK) goto done;
    out->tuner_s += (double)(rlt_time_ns() - tuner_start_ns) * 1e-9;
    if (!o.replay && (st = rlt_workload_create(op, &o.build, 0, &w, diag)) != RLT_STATUS_OK) goto done;
    out->curve = rlt_calloc((size_t)o.n_trials, sizeof *out->curve);
    top.cap = o.replay || o.plan ? 0 : RLT_MAX(0, RLT_MIN(o.n_final, o.batch_size));
    int k_parallel = top.cap > 0 ? parallel_knob(&space) : -1;
    top.configs = rlt_calloc((size_t)top.cap + 1, sizeof *top.configs);
    top.indices = rlt_calloc((size_t)top.cap + 1, sizeof *top.indices);
    top.scores = rlt_calloc((size_t)top.cap + 1, sizeof *top.scores);
    if (!batch_alloc(&b, o.batch_size) || !out->curve || target.has_failed || !top.configs || !top.indices ||
        !top.scores) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory starting a tuning run");
        goto done;
    }
    while (out->n_trials < o.n_trials) {
        if (o.stop && *o.stop) {
            out->was_stopped = true;
            break;
        }
        int want = RLT_MIN(o.batch_size, o.n_trials - out->n_trials);
        int n = 0;
        if (o.plan) {
            n = RLT_MIN(want, o.n_plan - n_planned);
            memcpy(b.configs, o.plan + n_planned, sizeof *b.configs * (size_t)n);
            n_planned += n;
        } else {
            uint64_t t0 = rlt_time_ns();
            n = rlt_tuner_next_batch(tuner, want, b.configs);
            out->tuner_s += (double)(rlt_time_ns() - t0) * 1e-9;
        }
        if (n == 0) {
            out->was_exhausted = true;
            break;
        }
        if (o.replay) {
            replay_batch(&o, &b, n, b.scores, out);
        } else {
            int n_new = 0;
            if ((st = prepare_batch(op, &space, &o, target.data ? target.data : "", &b, n, &n_new, out, diag)) !=
                RLT_STATUS_OK)
                goto done;
            if (n_new > 0) {
                /* A candidate whose calls, warm, are 4x slower than the
                 * best so far is far from mattering: a few calls time it. */
                if (out->best_gflops > 0 && opts->run.slow_cutoff_ms <= 0)
                    o.run.slow_cutoff_ms = 4.0 * op->flops / (out->best_gflops * 1e6);
                if ((st = measure_batch(w, &o, &b, n_new, diag)) != RLT_STATUS_OK) goto done;
                record_results(&o, &b, n_new, out);
                if (o.db && (st = rlt_db_append(o.db, n_new, b.records, diag)) != RLT_STATUS_OK) goto done;
                out->n_measured += n_new;
            }
        }
        if (tuner) {
            uint64_t t0 = rlt_time_ns();
            st = rlt_tuner_update(tuner, n, b.configs, b.scores, diag);
            out->tuner_s += (double)(rlt_time_ns() - t0) * 1e-9;
            if (st != RLT_STATUS_OK) goto done;
        }
        /* the curve, the best, early stopping */
        for (int i = 0; i < n; i++) {
            top_offer(&top, &space, &b.configs[i], b.scores[i]);
            if (k_parallel >= 0 && b.configs[i].choice[k_parallel] == 0 && b.scores[i] > serial_score) {
                serial = b.configs[i];
                serial_score = b.scores[i];
            }
            if (b.scores[i] > out->best_gflops) {
                out->best_gflops = b.scores[i];
                out->best_time_ms = op->flops / (b.scores[i] * 1e6);
                note_best(&space, &b.configs[i], out);
                since_best = 0;
            } else {
                since_best++;
            }
            out->curve[out->n_trials++] = out->best_gflops;
        }
        out->wall_s = (double)(rlt_time_ns() - start_ns) * 1e-9;
        out->measurements_per_s = out->wall_s > 0 ? out->n_trials / out->wall_s : 0;
        if (o.progress) {
            rlt_tune_progress p = {out->n_trials, o.n_trials, out->best_gflops, out->wall_s, out->measurements_per_s};
            o.progress(&p, o.progress_ctx);
        }
        if (o.early_stopping > 0 && since_best >= o.early_stopping) {
            out->was_stopped_early = true;
            break;
        }
    }
    /* the agent as it stands after the last batch (also when stopped) */
    if (o.agent_out && (st = rlt_tuner_save(tuner, o.agent_out, diag)) != RLT_STATUS_OK) goto done;
    out->tuning_best_gflops = out->best_gflops;
    copy_text(out->tuning_best_config, sizeof out->tuning_best_config, out->best_config);
    search_s = (double)(rlt_time_ns() - start_ns) * 1e-9;
    top_add_serial(&top, &space, &serial, serial_score, o.batch_size);
    /* Nothing new measured (a resumed run): the records already say what
     * they said; re-measuring would only add rows. */
    if (top.n >= 2 && !out->was_stopped && out->n_measured > 0 &&
        (st = final_pick(op, &space, w, &o, target.data ? target.data : "", &top, &b, out, diag)) != RLT_STATUS_OK)
        goto done;
done:
    out->wall_s = (double)(rlt_time_ns() - start_ns) * 1e-9;
    if (search_s <= 0) search_s = out->wall_s;
    out->final_s = out->n_final > 0 ? out->wall_s - search_s : 0;
    out->measurements_per_s = search_s > 0 ? out->n_trials / search_s : 0;
    batch_free(&b);
    rlt_free(top.configs);
    rlt_free(top.indices);
    rlt_free(top.scores);
    rlt_str_free(&target);
    rlt_workload_destroy(w);
    rlt_tuner_destroy(tuner);
    rlt_transfer_free(&transfer);
    rlt_free(priors);
    return st;
}

void rlt_tune_result_free(rlt_tune_result *r)
{
    rlt_free(r->curve);
    r->curve = NULL;
}
