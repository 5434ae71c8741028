/*
 * cost.c - the cost model of graph-substitution search (cost.h): a graph
 * costs the sum of the times of the steps rlt_net_compile would make of
 * it, each step timed once per process (or once for good, in the records
 * database) and cached. docs/graph-opt.md, "Cost", says what is measured
 * and how.
 *
 * Entry points: rlt_gcost_create / rlt_gcost_destroy, rlt_gcost_graph (the
 * walk over a graph's nodes: the net compiler's own step rules from
 * net/net.h), rlt_gcost_measure (a whole compiled network timed).
 * Inside: task_times (records, else the seeds of every unknown task built
 * in one batch and then run one at a time, their records stored), op_time
 * (a fast op or the evaluator timed in this process), and a small map from
 * key text to milliseconds for each cache.
 */
#include "gopt/cost.h"

#include "api/model_internal.h"
#include "ir/ir.h"
#include "measure/measure.h"
#include "net/net.h"
#include "net/ops.h"
#include "net/ops_run.h"
#include "rltune/records.h"
#include "rltune/session.h"

#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OP_WARMUP 2           /* untimed runs of a fast op before the timed ones */
#define OP_KEY_MAX_VALUES 8   /* a constant input of at most this many elements keys by its values */
#define OP_ALIGN 64           /* bytes: a fast op's buffers, aligned as the net's arena places activations */
#define SEED_TUNER "gopt-seed" /* the tuner field of the seed records stored */

/* ---- a map from key text to milliseconds ----------------------------------- */

/* Open addressing with linear probing, at most half full. */
typedef struct time_map {
    int cap;     /* slots: 0, or a power of two */
    int n;
    char **keys; /* owned; NULL: an empty slot */
    double *ms;
} time_map;

static int map_find(const time_map *m, const char *key)
{
    int mask = m->cap - 1;
    for (int i = (int)(rlt_hash_str(RLT_HASH_SEED, key) & (uint64_t)mask);; i = (i + 1) & mask)
        if (!m->keys[i] || strcmp(m->keys[i], key) == 0) return i;
}

static bool map_get(const time_map *m, const char *key, double *out_ms)
{
    if (m->cap == 0) return false;
    int i = map_find(m, key);
    if (!m->keys[i]) return false;
    *out_ms = m->ms[i];
    return true;
}

/* Adds (or replaces) key's time; false when out of memory. */
static bool map_put(time_map *m, const char *key, double ms)
{
    if (2 * (m->n + 1) > m->cap) {
        time_map grown = {.cap = m->cap ? 2 * m->cap : 64};
        grown.keys = rlt_calloc((size_t)grown.cap, sizeof *grown.keys);
        grown.ms = rlt_calloc((size_t)grown.cap, sizeof *grown.ms);
        if (!grown.keys || !grown.ms) {
            rlt_free(grown.keys);
            rlt_free(grown.ms);
            return false;
        }
        for (int i = 0; i < m->cap; i++) {
            if (!m->keys[i]) continue;
            int j = map_find(&grown, m->keys[i]);
            grown.keys[j] = m->keys[i];
            grown.ms[j] = m->ms[i];
        }
        grown.n = m->n;
        rlt_free(m->keys);
        rlt_free(m->ms);
        *m = grown;
    }
    int i = map_find(m, key);
    if (!m->keys[i]) {
        if (!(m->keys[i] = rlt_strdup(key))) return false;
        m->n++;
    }
    m->ms[i] = ms;
    return true;
}

static void map_free(time_map *m)
{
    for (int i = 0; i < m->cap; i++) rlt_free(m->keys[i]);
    rlt_free(m->keys);
    rlt_free(m->ms);
    *m = (time_map){0};
}

/* ---- the cost model ----------------------------------------------------------- */

struct rlt_gcost {
    rlt_gcost_options o;  /* its strings point at the copies below */
    char *db_path, *cc, *cflags, *cache_dir; /* owned copies of the options' strings */
    rlt_db *db;           /* read-write; NULL without db_path */
    rlt_record_target target; /* what records are looked up and stored under (with a database) */
    char *target_key;     /* its key text (owned); NULL without a database */
    time_map tasks;       /* task spec -> ms */
    time_map ops;         /* fast-op key -> ms */
    rlt_gcost_stats stats;
};

void rlt_gcost_options_init(rlt_gcost_options *o)
{
    memset(o, 0, sizeof *o);
    o->n_threads = 1;
    o->repeat = 15;
    o->seed = 1;
    o->n_seeds = RLT_GCOST_SEEDS;
}

/* *copy = a copy of s (NULL stays NULL); false when out of memory. */
static bool copy_option(const char *s, char **copy)
{
    *copy = s ? rlt_strdup(s) : NULL;
    return !s || *copy;
}

rlt_status rlt_gcost_create(const rlt_gcost_options *o, rlt_gcost **out, rlt_diag *diag)
{
    *out = NULL;
    if (!o) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "a cost model needs its options (NULL given)");
    if (o->n_threads < 1 || o->n_threads > RLT_MAX_THREADS)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "the thread count must be from 1 to %d (got %d)",
                        RLT_MAX_THREADS, o->n_threads);
    if (o->repeat < 1 || o->repeat > 1000000)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "a fast op's timed runs (repeat) must be from 1 to 1000000 (got %d)", o->repeat);
    if (o->n_seeds < 1 || o->n_seeds > RLT_NET_MAX_SEEDS)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "the seeds measured per task must be from 1 to %d (got %d)",
                        RLT_NET_MAX_SEEDS, o->n_seeds);
    rlt_status st = RLT_STATUS_OK;
    rlt_gcost *c = rlt_calloc(1, sizeof *c);
    if (!c) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a cost model");
    c->o = *o;
    if (!copy_option(o->db_path, &c->db_path) || !copy_option(o->build.cc, &c->cc) ||
        !copy_option(o->build.cflags, &c->cflags) || !copy_option(o->build.cache_dir, &c->cache_dir)) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a cost model");
        goto cleanup;
    }
    c->o.db_path = c->db_path;
    c->o.build.cc = c->cc;
    c->o.build.cflags = c->cflags;
    c->o.build.cache_dir = c->cache_dir;
    if (c->db_path) {
        if ((st = rlt_db_open(c->db_path, NULL, &c->db, diag)) != RLT_STATUS_OK ||
            (st = rlt_session_target(&c->o.build, c->o.n_threads, &c->target, diag)) != RLT_STATUS_OK)
            goto cleanup;
        /* a cold network's costs are all cold times: no warm record stands in */
        c->target.is_weights_cold = c->o.cold_weights;
        if (!(c->target_key = rlt_record_target_text(&c->target))) {
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a cost model");
            goto cleanup;
        }
    }
    *out = c;
    c = NULL;
cleanup:
    rlt_gcost_destroy(c);
    return st;
}

void rlt_gcost_destroy(rlt_gcost *c)
{
    if (!c) return;
    map_free(&c->ops);
    map_free(&c->tasks);
    rlt_free(c->target_key);
    rlt_db_close(c->db);
    rlt_free(c->cache_dir);
    rlt_free(c->cflags);
    rlt_free(c->cc);
    rlt_free(c->db_path);
    rlt_free(c);
}

void rlt_gcost_stats_get(const rlt_gcost *c, rlt_gcost_stats *out) { *out = c->stats; }

static double seconds_since(uint64_t start_ns) { return (double)(rlt_time_ns() - start_ns) * 1e-9; }

static double wall_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- tasks ---------------------------------------------------------------------- */

/* The seeds of tasks not timed yet, measured as a batch: each task's
 * first n_seeds seeds, the task's time the best of them. Task arrays of
 * cap_tasks items (n_tasks in use; ops and workloads owned item by item),
 * seed arrays of cap_tasks x n_seeds (n in use). */
typedef struct seed_batch {
    int n_tasks;
    int *task;                 /* index in the graph's tasks */
    rlt_op **ops;              /* owned */
    rlt_workload **workloads;  /* owned: one reference per task, shared by its seeds */
    int n;
    int *task_of;              /* the seed's task, an index in the arrays above */
    const rlt_workload **workload_of;
    rlt_nest *nests;
    rlt_record *records;
    rlt_run_result *results;
    const rlt_run_opts **ropts_of;
} seed_batch;

static bool seed_batch_init(seed_batch *b, int cap_tasks, int n_seeds)
{
    size_t nt = (size_t)cap_tasks + 1, ns = nt * (size_t)n_seeds;
    *b = (seed_batch){0};
    b->task = rlt_calloc(nt, sizeof *b->task);
    b->ops = rlt_calloc(nt, sizeof *b->ops);
    b->workloads = rlt_calloc(nt, sizeof *b->workloads);
    b->task_of = rlt_calloc(ns, sizeof *b->task_of);
    b->workload_of = rlt_calloc(ns, sizeof *b->workload_of);
    b->nests = rlt_calloc(ns, sizeof *b->nests);
    b->records = rlt_calloc(ns, sizeof *b->records);
    b->results = rlt_calloc(ns, sizeof *b->results);
    b->ropts_of = rlt_calloc(ns, sizeof *b->ropts_of);
    return b->task && b->ops && b->workloads && b->task_of && b->workload_of && b->nests && b->records &&
           b->results && b->ropts_of;
}

static void seed_batch_free(seed_batch *b)
{
    for (int i = 0; i < b->n_tasks; i++) {
        rlt_workload_destroy(b->workloads[i]);
        rlt_op_destroy(b->ops[i]);
    }
    rlt_free(b->ropts_of);
    rlt_free(b->results);
    rlt_free(b->records);
    rlt_free(b->nests);
    rlt_free(b->workload_of);
    rlt_free(b->task_of);
    rlt_free(b->workloads);
    rlt_free(b->ops);
    rlt_free(b->task);
}

/* Task t of the batch ready to measure: its workload (inputs and the
 * reference output), and for each of its first n_seeds seeds the nest and
 * the record it will be stored as, but for what the measurement says. */
static rlt_status seed_prepare(rlt_gcost *c, seed_batch *b, int t, const char *spec, const rlt_run_opts *run,
                               rlt_diag *diag)
{
    rlt_str keys[RLT_NET_MAX_SEEDS], schedules[RLT_NET_MAX_SEEDS];
    for (int j = 0; j < c->o.n_seeds; j++) {
        rlt_str_init(&keys[j]);
        rlt_str_init(&schedules[j]);
    }
    int first = b->n, n = 0; /* this task's seeds go to b->n onwards */
    rlt_status st = rlt_net_seed_nests(b->ops[t], c->o.n_threads, c->o.n_seeds, &b->nests[first], keys, schedules, &n,
                                       diag);
    if (st == RLT_STATUS_OK && n == 0) /* a space always has a first seed but when out of memory */
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory making the seed of %s", spec);
    for (int j = 0; j < n && st == RLT_STATUS_OK; j++) {
        int k = first + j;
        const rlt_str *key = &keys[j], *schedule = &schedules[j];
        if (key->has_failed || schedule->has_failed)
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory making the seeds of %s", spec);
        else if (key->len >= sizeof b->records[k].config || schedule->len >= sizeof b->records[k].schedule)
            st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                          "seed %d of %s does not fit a record: a configuration key of %zu bytes (at most %zu), a "
                          "schedule of %zu (at most %zu)",
                          j, spec, key->len, sizeof b->records[k].config - 1, schedule->len,
                          sizeof b->records[k].schedule - 1);
        if (st != RLT_STATUS_OK) break;
        rlt_record *r = &b->records[k];
        memset(r, 0, sizeof *r);
        snprintf(r->spec, sizeof r->spec, "%s", spec);
        r->target = c->target;
        snprintf(r->config, sizeof r->config, "%s", key->data);
        snprintf(r->schedule, sizeof r->schedule, "%s", schedule->data);
        snprintf(r->tuner, sizeof r->tuner, "%s", SEED_TUNER);
        r->seed = c->o.seed;
        b->task_of[k] = t;
        b->ropts_of[k] = run;
        b->n++;
    }
    for (int j = 0; j < c->o.n_seeds; j++) {
        rlt_str_free(&schedules[j]);
        rlt_str_free(&keys[j]);
    }
    if (st == RLT_STATUS_OK && (st = rlt_workload_create(b->ops[t], &c->o.build, c->o.seed, &b->workloads[t], diag)) !=
                                   RLT_STATUS_OK)
        rlt_diag_prefix(diag, "the reference of task %s", spec);
    for (int k = first; k < b->n; k++) b->workload_of[k] = b->workloads[t];
    return st;
}

/* Times every task of gt into task_ms[]: the cache, else the record the
 * network would take, else the best of its first n_seeds seeds, measured.
 * Every seed not timed yet is built in one batch, then run one at a time;
 * with a database their records are stored in one transaction before any
 * failure is reported (a task fails only when all its seeds do). */
static rlt_status task_times(rlt_gcost *c, const rlt_graph_tasks *gt, double *task_ms, rlt_diag *diag)
{
    seed_batch b;
    rlt_record *found = rlt_calloc(1, sizeof *found);
    rlt_nest *nest = rlt_calloc(1, sizeof *nest);
    rlt_status st = RLT_STATUS_OK;
    uint64_t t0 = 0;
    if (!seed_batch_init(&b, gt->n_tasks, c->o.n_seeds) || !found || !nest) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory timing the tasks of a graph");
        goto cleanup;
    }
    rlt_run_opts run = {.repeat = 3, .min_repeat_ms = 10, .timeout_s = 10, .n_threads = c->o.n_threads,
                        .cold_weights = c->o.cold_weights};
    for (int i = 0; i < gt->n_tasks; i++) {
        const char *spec = gt->tasks[i].spec;
        if (map_get(&c->tasks, spec, &task_ms[i])) continue;
        rlt_op *op = NULL;
        if ((st = rlt_op_parse(spec, &op, diag)) != RLT_STATUS_OK) goto cleanup;
        bool is_found = false;
        rlt_net_origin origin = RLT_NET_FROM_SEED;
        if (c->db && (st = rlt_net_task_record(c->db, c->target_key, spec, op, c->o.n_threads, found, nest, &origin,
                                               &is_found, diag)) != RLT_STATUS_OK) {
            rlt_op_destroy(op);
            goto cleanup;
        }
        if (is_found) {
            rlt_op_destroy(op);
            task_ms[i] = found->time_median_ms;
            if (!map_put(&c->tasks, spec, task_ms[i])) {
                st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory caching a task's time");
                goto cleanup;
            }
            c->stats.n_tasks_from_records++;
            continue;
        }
        b.task[b.n_tasks] = i;
        b.ops[b.n_tasks] = op;
        b.n_tasks++;
    }
    if (b.n_tasks == 0) goto cleanup;
    t0 = rlt_time_ns();
    for (int t = 0; t < b.n_tasks; t++)
        if ((st = seed_prepare(c, &b, t, gt->tasks[b.task[t]].spec, &run, diag)) != RLT_STATUS_OK) goto cleanup;
    if ((st = rlt_measure_nests_multi(b.workload_of, &c->o.build, b.ropts_of, b.n, b.nests, b.results, diag)) !=
        RLT_STATUS_OK)
        goto cleanup;
    for (int k = 0; k < b.n; k++) {
        const rlt_run_result *res = &b.results[k];
        rlt_record *r = &b.records[k];
        bool is_ok = res->status == RLT_STATUS_OK;
        r->status = res->status;
        r->time_min_ms = is_ok ? res->time_min_ms : 0;
        r->time_median_ms = is_ok ? res->time_median_ms : 0;
        r->gflops = is_ok ? res->gflops : 0;
        r->build_s = res->build_s;
        r->created_s = wall_now_s();
        snprintf(r->message, sizeof r->message, "%s", res->message);
    }
    if (c->db && (st = rlt_db_append(c->db, b.n, b.records, diag)) != RLT_STATUS_OK) goto cleanup;
    c->stats.n_seeds_measured += b.n;
    for (int t = 0; t < b.n_tasks; t++) {
        const char *spec = gt->tasks[b.task[t]].spec;
        int best = -1, first = -1;
        for (int k = 0; k < b.n; k++) {
            if (b.task_of[k] != t) continue;
            if (first < 0) first = k;
            if (b.results[k].status == RLT_STATUS_OK &&
                (best < 0 || b.results[k].time_median_ms < b.results[best].time_median_ms))
                best = k;
        }
        if (best < 0) {
            if (st == RLT_STATUS_OK)
                st = rlt_fail(diag, RLT_STATUS_BUILD_ERROR, "the seed schedules of task %s failed (the first: %s: %s)",
                              spec, rlt_status_str(b.results[first].status), b.results[first].message);
            continue;
        }
        task_ms[b.task[t]] = b.results[best].time_median_ms;
        if (!map_put(&c->tasks, spec, task_ms[b.task[t]])) {
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory caching a task's time");
            goto cleanup;
        }
        c->stats.n_tasks_measured++;
    }
cleanup:
    if (t0) c->stats.measure_s += seconds_since(t0);
    seed_batch_free(&b);
    rlt_free(nest);
    rlt_free(found);
    return st;
}

/* ---- fast ops -------------------------------------------------------------------- */

/* Appends n values of a constant (data of dtype). */
static void key_values(rlt_str *s, rlt_dtype dtype, const void *data, int64_t n)
{
    rlt_str_append(s, "{");
    for (int64_t i = 0; i < n; i++) {
        if (i) rlt_str_append(s, ",");
        switch (dtype) {
        case RLT_DTYPE_FLOAT32: rlt_str_printf(s, "%.9g", (double)((const float *)data)[i]); break;
        case RLT_DTYPE_INT64: rlt_str_printf(s, "%" PRId64, ((const int64_t *)data)[i]); break;
        case RLT_DTYPE_INT32: rlt_str_printf(s, "%" PRId32, ((const int32_t *)data)[i]); break;
        case RLT_DTYPE_BOOL: rlt_str_printf(s, "%d", ((const unsigned char *)data)[i]); break;
        default: rlt_str_append(s, "?"); break;
        }
    }
    rlt_str_append(s, "}");
}

/* Appends a tensor's type and shape: "f32[1,8,4,4]". */
static void key_shape(rlt_str *s, const rlt_graph_tensor *t)
{
    rlt_str_printf(s, "%s[", rlt_dtype_str(t->dtype));
    for (int d = 0; d < t->rank; d++) rlt_str_printf(s, "%s%" PRId64, d ? "," : "", t->dims[d]);
    rlt_str_append(s, "]");
}

/* Appends a constant: its values when it has at most OP_KEY_MAX_VALUES
 * elements, else the hash of its bytes (a TENSOR attribute) or nothing (an
 * input: "const" says enough). */
static void key_const(rlt_str *s, const rlt_graph_tensor *t, bool hash_large)
{
    int64_t n = rlt_graph_tensor_n_elems(t);
    if (n <= OP_KEY_MAX_VALUES)
        key_values(s, t->dtype, t->data, n);
    else if (hash_large)
        rlt_str_printf(s, "#%016" PRIx64, rlt_hash_bytes(RLT_HASH_SEED, t->data, (size_t)n * rlt_dtype_size(t->dtype)));
}

static void key_attr(rlt_str *s, const rlt_graph_attr *a)
{
    rlt_str_printf(s, " %s=", a->name);
    switch (a->kind) {
    case RLT_GRAPH_ATTR_INT: rlt_str_printf(s, "%" PRId64, a->i); break;
    case RLT_GRAPH_ATTR_FLOAT: rlt_str_printf(s, "%.9g", (double)a->f); break;
    case RLT_GRAPH_ATTR_STRING: rlt_str_printf(s, "\"%s\"", a->s); break;
    case RLT_GRAPH_ATTR_INTS: key_values(s, RLT_DTYPE_INT64, a->ints, a->n_values); break;
    case RLT_GRAPH_ATTR_FLOATS: key_values(s, RLT_DTYPE_FLOAT32, a->floats, a->n_values); break;
    case RLT_GRAPH_ATTR_TENSOR:
        key_shape(s, a->tensor);
        if (a->tensor->data) key_const(s, a->tensor, true);
        break;
    default: rlt_str_append(s, "?"); break;
    }
}

/* The key a node's fast-op time is cached under: its op type, its
 * attributes in name order, then each input's and output's type and shape,
 * a constant input marked (and keyed by its values when it is small: what
 * picks a fast op's loop, as Pow's exponent does), e.g.
 *   "Relu | x f32[1,8,4,4] | y f32[1,8,4,4]"
 *   "Pow | x f32[64] c f32[]{2} | y f32[64]" */
static void op_key(const rlt_graph *g, int node, rlt_str *s)
{
    const rlt_graph_node *n = &g->nodes[node];
    rlt_str_append(s, n->op_type);
    /* attributes in name order, whatever order the model gave them in */
    const char *last = NULL;
    for (int k = 0; k < n->n_attrs; k++) {
        const rlt_graph_attr *next = NULL;
        for (int a = 0; a < n->n_attrs; a++) {
            const char *name = n->attrs[a].name;
            if ((!last || strcmp(name, last) > 0) && (!next || strcmp(name, next->name) < 0)) next = &n->attrs[a];
        }
        if (!next) break;
        key_attr(s, next);
        last = next->name;
    }
    rlt_str_append(s, " |");
    for (int i = 0; i < n->n_inputs; i++) {
        int t = n->inputs[i];
        if (t < 0) {
            rlt_str_append(s, " -");
            continue;
        }
        const rlt_graph_tensor *gt = &g->tensors[t];
        rlt_str_append(s, gt->data ? " c " : " x ");
        key_shape(s, gt);
        if (gt->data) key_const(s, gt, false);
    }
    rlt_str_append(s, " |");
    for (int o = 0; o < n->n_outputs; o++) {
        int t = n->outputs[o];
        rlt_str_append(s, t < 0 ? " -" : " y ");
        if (t >= 0) key_shape(s, &g->tensors[t]);
    }
}

/* Pins the calling thread to the CPU it is on, for steadier timings (as
 * rlt_net_time does); *saved gets its affinity before. False when it
 * cannot (then nothing changed). */
static bool pin_here(cpu_set_t *saved)
{
    int cpu = sched_getcpu();
    if (cpu < 0 || sched_getaffinity(0, sizeof *saved, saved) != 0) return false;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return sched_setaffinity(0, sizeof one, &one) == 0;
}

static int compare_doubles(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* The timed runs of one node: what the thread that times them needs and
 * gives back. */
typedef struct op_timing {
    const rlt_graph *g;
    int node;
    const rlt_fast_op *fast; /* NULL: the evaluator */
    void **vals;
    int n_threads, repeat;
    double *times;           /* repeat entries, ms */
    rlt_status st;
    rlt_diag *diag;
} op_timing;

/* OP_WARMUP runs, then `repeat` timed ones; pinned to its CPU at one
 * thread. */
static void *op_timing_run(void *arg)
{
    op_timing *t = arg;
    cpu_set_t saved;
    bool is_pinned = t->n_threads == 1 && pin_here(&saved);
    t->st = RLT_STATUS_OK;
    for (int r = -OP_WARMUP; r < t->repeat && t->st == RLT_STATUS_OK; r++) {
        uint64_t t0 = rlt_time_ns();
        if (t->fast)
            rlt_fast_op_run_threads(t->fast, t->vals, t->fast->isa, t->n_threads);
        else
            t->st = rlt_graph_eval_node(t->g, t->node, t->vals, t->diag);
        if (r >= 0) t->times[r] = (double)(rlt_time_ns() - t0) * 1e-6;
    }
    if (is_pinned) (void)sched_setaffinity(0, sizeof saved, &saved);
    return NULL;
}

/* Times node `node` as a network step runs it: its fast op (over the
 * options' threads, as the net splits it), else the evaluator; inputs
 * seeded random floats (integer and bool inputs zero: valid indices),
 * constants their data. OP_WARMUP runs, then the median of `repeat`. */
static rlt_status op_measure(rlt_gcost *c, const rlt_graph *g, int node, double *out_ms, rlt_diag *diag)
{
    const rlt_graph_node *n = &g->nodes[node];
    rlt_fast_op *fast = NULL;
    void **vals = rlt_calloc((size_t)g->n_tensors + 1, sizeof *vals);
    void **raw = rlt_calloc((size_t)(n->n_inputs + n->n_outputs) + 1, sizeof *raw);
    double *times = rlt_calloc((size_t)c->o.repeat, sizeof *times);
    int n_raw = 0;
    rlt_status st = RLT_STATUS_OK;
    if (!vals || !raw || !times) {
        st = rlt_graph_node_fail(g, n, diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory timing the node");
        goto cleanup;
    }
    if ((st = rlt_fast_op_create(g, node, &fast, diag)) != RLT_STATUS_OK) goto cleanup;
    for (int k = 0; k < n->n_inputs + n->n_outputs; k++) {
        bool is_input = k < n->n_inputs;
        int t = is_input ? n->inputs[k] : n->outputs[k - n->n_inputs];
        if (t < 0 || vals[t]) continue;
        const rlt_graph_tensor *gt = &g->tensors[t];
        if (gt->data) {
            vals[t] = gt->data;
            continue;
        }
        int64_t count = rlt_graph_tensor_n_elems(gt);
        if (!(raw[n_raw] = rlt_calloc((size_t)count * rlt_dtype_size(gt->dtype) + OP_ALIGN, 1))) {
            st = rlt_graph_node_fail(g, n, diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory timing the node");
            goto cleanup;
        }
        vals[t] = (void *)(((uintptr_t)raw[n_raw++] + OP_ALIGN - 1) & ~(uintptr_t)(OP_ALIGN - 1));
        if (is_input && gt->dtype == RLT_DTYPE_FLOAT32)
            rlt_tensor_fill(vals[t], count, c->o.seed + 0x9e3779b97f4a7c15ULL * (uint64_t)(k + 1));
    }
    op_timing timing = {.g = g, .node = node, .fast = fast, .vals = vals, .n_threads = c->o.n_threads,
                        .repeat = c->o.repeat, .times = times, .diag = diag};
    if ((st = rlt_net_contained(c->o.n_threads, op_timing_run, &timing, diag)) != RLT_STATUS_OK ||
        (st = timing.st) != RLT_STATUS_OK)
        goto cleanup;
    qsort(times, (size_t)c->o.repeat, sizeof *times, compare_doubles);
    int r = c->o.repeat;
    *out_ms = r % 2 ? times[r / 2] : 0.5 * (times[r / 2 - 1] + times[r / 2]);
cleanup:
    for (int k = 0; k < n_raw; k++) rlt_free(raw[k]);
    rlt_fast_op_destroy(fast);
    rlt_free(times);
    rlt_free(raw);
    rlt_free(vals);
    return st;
}

/* A node's time as a step of its own: cached by op_key. */
static rlt_status op_time(rlt_gcost *c, const rlt_graph *g, int node, double *out_ms, rlt_diag *diag)
{
    rlt_str key;
    rlt_str_init(&key);
    op_key(g, node, &key);
    rlt_status st = RLT_STATUS_OK;
    if (key.has_failed) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory keying a node's time");
        goto cleanup;
    }
    if (map_get(&c->ops, key.data, out_ms)) goto cleanup;
    uint64_t t0 = rlt_time_ns();
    st = op_measure(c, g, node, out_ms, diag);
    c->stats.measure_s += seconds_since(t0);
    if (st != RLT_STATUS_OK) goto cleanup;
    if (!map_put(&c->ops, key.data, *out_ms)) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory caching a node's time");
        goto cleanup;
    }
    c->stats.n_ops_measured++;
cleanup:
    rlt_str_free(&key);
    return st;
}

/* ---- a graph's cost ------------------------------------------------------------- */

rlt_status rlt_gcost_graph(rlt_gcost *c, const rlt_graph *g, double *total_ms, double *per_node_ms, rlt_diag *diag)
{
    *total_ms = 0;
    if (per_node_ms)
        for (int i = 0; i < g->n_nodes; i++) per_node_ms[i] = 0;
    for (int i = 0; i < g->n_inputs; i++)
        if (g->tensors[g->inputs[i]].data)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "graph input '%s' is a constant",
                            g->tensors[g->inputs[i]].name);
    rlt_graph_tasks gt = {0};
    double *task_ms = NULL;
    int *task_of = rlt_malloc(((size_t)g->n_nodes + 1) * sizeof *task_of);
    int *alias = rlt_malloc(((size_t)g->n_tensors + 1) * sizeof *alias);
    rlt_status st = RLT_STATUS_OK;
    if (!task_of || !alias) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory costing a graph");
        goto cleanup;
    }
    if ((st = rlt_graph_tasks_extract(g, &gt, diag)) != RLT_STATUS_OK) goto cleanup;
    if (!(task_ms = rlt_calloc((size_t)gt.n_tasks + 1, sizeof *task_ms))) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory costing a graph");
        goto cleanup;
    }
    if ((st = task_times(c, &gt, task_ms, diag)) != RLT_STATUS_OK) goto cleanup;
    /* the steps, as rlt_net_compile plans them (net.h, "the steps") */
    rlt_net_node_tasks(g, &gt, task_of, NULL);
    for (int t = 0; t < g->n_tensors; t++) alias[t] = t;
    double total = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const rlt_graph_node *node = &g->nodes[i];
        if (node->is_removed || task_of[i] == RLT_NET_FUSED || (task_of[i] < 0 && rlt_net_node_is_folded(g, i)))
            continue;
        double ms = 0;
        if (task_of[i] >= 0) {
            ms = task_ms[task_of[i]];
        } else if (!rlt_graph_can_eval(node->op_type)) {
            st = rlt_graph_node_fail(g, node, diag, RLT_STATUS_INVALID_ARGUMENT, "op %s cannot be run",
                                     node->op_type);
            goto cleanup;
        } else if (rlt_net_node_is_view(g, i)) {
            alias[node->outputs[0]] = node->inputs[0];
        } else if (rlt_net_concat_fits_in_place(g, i, alias)) {
            for (int k = 0; k < node->n_inputs; k++) alias[node->inputs[k]] = node->outputs[0];
        } else if (rlt_net_split_fits_in_place(g, i, alias)) {
            for (int k = 0; k < node->n_outputs; k++) alias[node->outputs[k]] = node->inputs[0];
        } else if ((st = op_time(c, g, i, &ms, diag)) != RLT_STATUS_OK) {
            goto cleanup;
        }
        if (per_node_ms) per_node_ms[i] = ms;
        total += ms;
    }
    *total_ms = total;
    c->stats.n_graphs++;
cleanup:
    rlt_free(task_ms);
    rlt_graph_tasks_free(&gt);
    rlt_free(alias);
    rlt_free(task_of);
    if (st != RLT_STATUS_OK && per_node_ms)
        for (int i = 0; i < g->n_nodes; i++) per_node_ms[i] = 0;
    return st;
}

/* ---- a graph's measured latency ------------------------------------------------- */

/* What rlt_gcost_measure does, on the thread rlt_net_contained gives it. */
typedef struct net_timing_job {
    const rlt_gcost_options *o;
    const rlt_graph *g;
    const rlt_net_timing_options *t;
    rlt_net_timing *out;
    rlt_diag *diag;
    rlt_status st;
} net_timing_job;

static void *net_timing_run(void *arg)
{
    net_timing_job *job = arg;
    const rlt_graph *g = job->g;
    rlt_diag *diag = job->diag;
    rlt_net_options no;
    rlt_net_options_init(&no);
    no.db_path = job->o->db_path;
    no.n_threads = job->o->n_threads;
    no.build = job->o->build;
    rlt_net *net = NULL;
    rlt_array **in = rlt_calloc((size_t)g->n_inputs + 1, sizeof *in);
    rlt_array **res = rlt_calloc((size_t)g->n_outputs + 1, sizeof *res);
    rlt_status st = RLT_STATUS_OK;
    if (!in || !res) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory timing a graph");
        goto cleanup;
    }
    if ((st = rlt_net_compile(g, &no, &net, diag)) != RLT_STATUS_OK ||
        (st = rlt_graph_random_inputs(g, job->o->seed, in, diag)) != RLT_STATUS_OK)
        goto cleanup;
    for (int i = 0; i < g->n_outputs; i++) {
        const rlt_graph_tensor *gt = &g->tensors[g->outputs[i]];
        if ((st = rlt_array_create((rlt_elem)gt->dtype, gt->rank, gt->dims, &res[i], diag)) != RLT_STATUS_OK)
            goto cleanup;
    }
    st = rlt_net_time(net, (const rlt_array *const *)in, res, NULL, job->t, job->out, diag);
cleanup:
    for (int i = 0; res && i < g->n_outputs; i++) rlt_array_destroy(res[i]);
    for (int i = 0; in && i < g->n_inputs; i++) rlt_array_destroy(in[i]);
    rlt_free(res);
    rlt_free(in);
    rlt_net_destroy(net);
    job->st = st;
    return NULL;
}

rlt_status rlt_gcost_measure(const rlt_gcost_options *o, const rlt_graph *g, const rlt_net_timing_options *t,
                             rlt_net_timing *out, rlt_diag *diag)
{
    memset(out, 0, sizeof *out);
    if (!o || o->n_threads < 1 || o->n_threads > RLT_MAX_THREADS)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "the thread count must be from 1 to %d (got %d)",
                        RLT_MAX_THREADS, o ? o->n_threads : 0);
    /* the network's kernels and fast ops run their parallel loops on a
     * thread that ends, so that measurements forked later still work */
    rlt_net_timing_options timing;
    if (t)
        timing = *t;
    else
        rlt_net_timing_options_init(&timing);
    timing.is_pinned = timing.is_pinned && o->n_threads == 1; /* as `rltune run` times: one CPU for one thread */
    net_timing_job job = {.o = o, .g = g, .t = &timing, .out = out, .diag = diag};
    rlt_status st = rlt_net_contained(o->n_threads, net_timing_run, &job, diag);
    return st != RLT_STATUS_OK ? st : job.st;
}
