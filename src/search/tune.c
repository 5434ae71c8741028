/*
 * tune.c - a tuning session built from options (rlt_tune_start) and run to
 * its end (rlt_tune); the target key records are filed under; and what a
 * live run measures before its tuner's own proposals: the same op's best
 * configurations at other thread counts, the rule-built seeds, the
 * configuration it was told to start from (with its neighbours), all in
 * the session's queue.
 */
#include "search/tune.h"
#include "search/replay.h"
#include "search/transfer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rlt_tune_target_key(const rlt_build_opts *build, int n_threads, rlt_str *out)
{
    rlt_record_target t;
    if (rlt_session_target(build, n_threads, &t, NULL) != RLT_STATUS_OK) {
        out->has_failed = true;
        return;
    }
    rlt_record_target_key(&t, out);
}

/* ---- the same op at other thread counts --------------------------------- */

/* The space's parallel knob, or -1 (one thread). */
static int parallel_knob(const rlt_space *space)
{
    for (int k = 0; k < space->n_knobs; k++)
        if (space->knobs[k].kind == RLT_KNOB_PARALLEL) return k;
    return -1;
}

typedef struct other_record {
    int n_threads;         /* of its target */
    char *config;          /* owned */
    double gflops;         /* 0 unless OK */
    bool is_final;         /* a final pick's careful measurement */
    bool is_same_threads;  /* a warm record at a cold run's own thread count */
    int order;             /* position in the history, oldest first */
} other_record;

typedef struct other_walk {
    const rlt_record_target *own;
    other_record *records;
    int n, cap;
    bool has_failed;
} other_walk;

/* A record of the same op and target at another thread count; for a cold
 * run (rlt_run_opts.cold_weights), also a warm record at any thread count:
 * the schedules fastest with the weights in the caches are the first
 * candidates with them out. */
static bool collect_other_threads(const rlt_record *r, void *ctx)
{
    other_walk *w = ctx;
    rlt_record_target same_threads = r->target;
    same_threads.n_threads = w->own->n_threads;
    bool is_warm_of_cold = w->own->is_weights_cold && !r->target.is_weights_cold;
    if (is_warm_of_cold) same_threads.is_weights_cold = true;
    if (!r->config[0] || (r->target.n_threads == w->own->n_threads && !is_warm_of_cold) ||
        !rlt_record_target_equal(&same_threads, w->own))
        return true;
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
    o->n_threads = r->target.n_threads;
    o->config = rlt_strdup(r->config);
    if (!o->config) {
        w->has_failed = true;
        return false;
    }
    o->gflops = r->status == RLT_STATUS_OK ? r->gflops : 0.0;
    o->is_final = r->is_final;
    o->is_same_threads = r->target.n_threads == w->own->n_threads;
    o->order = w->n++;
    return true;
}

/* Groups a configuration's records, newest first. */
static int compare_by_config_newest_first(const void *a, const void *b)
{
    const other_record *x = a, *y = b;
    int c = (x->n_threads > y->n_threads) - (x->n_threads < y->n_threads);
    if (!c) c = strcmp(x->config, y->config);
    return c ? c : (y->order > x->order) - (y->order < x->order);
}

/* The run's own thread count first (a cold run's warm records), then final
 * picks, then the fastest. */
static int compare_by_rank(const void *a, const void *b)
{
    const other_record *x = a, *y = b;
    if (x->is_same_threads != y->is_same_threads) return x->is_same_threads ? -1 : 1;
    if (x->is_final != y->is_final) return x->is_final ? -1 : 1;
    return (y->gflops > x->gflops) - (y->gflops < x->gflops);
}

/* The same op's best configurations at other thread counts (and, in a cold
 * run, warm ones at this count), made to fit this run's space
 * (rlt_tune_opts.from_other_threads). *out (owned; NULL
 * when none) holds *out_n of them. */
static rlt_status other_threads_configs(rlt_db *db, const rlt_op *op, const rlt_space *space,
                                        const rlt_record_target *target, rlt_config **out, int *out_n, rlt_diag *diag)
{
    *out = NULL;
    *out_n = 0;
    other_walk w = {.own = target};
    rlt_status st = rlt_db_history(db, op->spec, NULL, collect_other_threads, &w, diag);
    if (st == RLT_STATUS_OK && w.has_failed)
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading other thread counts' records");
    /* each configuration by its latest record, then ranked */
    int n_latest = 0;
    if (st == RLT_STATUS_OK && w.n > 0) {
        qsort(w.records, (size_t)w.n, sizeof *w.records, compare_by_config_newest_first);
        for (int i = w.n - 1; i > 0; i--) /* an older record of the same configuration: out */
            if (w.records[i].n_threads == w.records[i - 1].n_threads &&
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
        int added = rlt_space_configs_adopt(space, w.records[i].config, configs, n, cap);
        n += added;
        taken += added > 0;
    }
    for (int i = 0; i < w.n; i++) rlt_free(w.records[i].config);
    rlt_free(w.records);
    if (st != RLT_STATUS_OK || n == 0) {
        rlt_free(configs);
        return st;
    }
    *out = configs;
    *out_n = n;
    return RLT_STATUS_OK;
}

/* ---- building the session ------------------------------------------------ */

/* The options with their defaults, and what the run's threads and seed
 * decide for the parts. */
static rlt_status normalise(const rlt_op *op, const rlt_tune_opts *opts, rlt_tune_opts *o, rlt_diag *diag)
{
    *o = *opts;
    if (o->plan) o->n_trials = o->n_plan;
    if (o->n_trials < 1)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "the number of trials must be at least 1 (got %d)",
                        o->n_trials);
    if (o->batch_size <= 0) o->batch_size = 16;
    if (o->n_threads <= 0) o->n_threads = 1;
    o->run.n_threads = o->n_threads;
    o->space.n_threads = o->n_threads;
    o->tuner_opts.seed = o->seed;
    if (!o->replay) return RLT_STATUS_OK;
    const rlt_dataset_info *info = rlt_replay_info(o->replay);
    if (o->db) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "a replay stores no records: give it no database");
    if (strcmp(info->spec, op->spec) != 0)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "the dataset is of op %s, not %s", info->spec, op->spec);
    if (info->n_threads != o->n_threads)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "the dataset was measured with %d thread%s, the replay asks for %d", info->n_threads,
                        info->n_threads == 1 ? "" : "s", o->n_threads);
    return RLT_STATUS_OK;
}

/* The space the run searches: the replay's, or the op's. */
static rlt_status run_space(const rlt_op *op, const rlt_tune_opts *o, rlt_space *out, rlt_diag *diag)
{
    if (o->replay) {
        *out = *rlt_replay_space(o->replay);
        return RLT_STATUS_OK;
    }
    return rlt_space_create(op, &o->space, out, diag);
}

rlt_status rlt_tune_start_key_check(const rlt_op *op, const rlt_tune_opts *opts, rlt_diag *diag)
{
    if (!opts->start_key) return RLT_STATUS_OK;
    rlt_tune_opts o;
    rlt_space space;
    rlt_config c;
    rlt_status st = normalise(op, opts, &o, diag);
    if (st == RLT_STATUS_OK) st = run_space(op, &o, &space, diag);
    if (st == RLT_STATUS_OK) st = rlt_space_config_parse(&space, o.start_key, &c, diag);
    return st;
}

/* The queue a live search starts with: the start configuration (start_key,
 * or the one nearest start_nest) with its neighbours, then the op's best
 * at other thread counts, then the rule-built seeds. NULL in *out when it
 * would be empty. */
static rlt_status make_queue(rlt_session *s, const rlt_op *op, const rlt_tune_opts *o,
                             const rlt_record_target *target, rlt_proposer **out, rlt_diag *diag)
{
    *out = NULL;
    const rlt_space *space = rlt_session_space(s);
    rlt_tune_result *r = rlt_session_result_mutable(s);
    rlt_config start;
    int n_start = 0;
    rlt_status st = RLT_STATUS_OK;
    if (o->start_key) {
        if ((st = rlt_space_config_parse(space, o->start_key, &start, diag)) != RLT_STATUS_OK) {
            rlt_diag_prefix(diag, "the start configuration");
            return st;
        }
        n_start = 1;
        snprintf(r->start_config, sizeof r->start_config, "%s", o->start_key);
    } else if (o->start_nest) {
        rlt_diag pd = {0};
        if (rlt_space_project(space, o->start_nest, &start, &pd) == RLT_STATUS_OK) {
            n_start = 1;
            rlt_str key;
            rlt_str_init(&key);
            rlt_space_config_key(space, &start, &key);
            snprintf(r->start_config, sizeof r->start_config, "%s", key.data ? key.data : "");
            rlt_str_free(&key);
        } else {
            rlt_log(RLT_LOG_WARN, "the start nest has no valid configuration near it (%s): tuning from scratch",
                    pd.message);
        }
    }
    rlt_config *priors = NULL; /* other thread counts' configurations, then the seeds: owned */
    bool is_live = !o->replay;
    if (o->from_other_threads && o->db && is_live &&
        (st = other_threads_configs(o->db, op, space, target, &priors, &r->n_other_threads, diag)) != RLT_STATUS_OK)
        return st;
    if (o->n_seeds > 0 && is_live) {
        rlt_config *grown = rlt_realloc(priors, sizeof *priors * (size_t)(r->n_other_threads + o->n_seeds));
        if (!grown) {
            rlt_free(priors);
            return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory building seed configurations");
        }
        priors = grown;
        r->n_seeds = rlt_space_seeds(space, o->n_seeds, priors + r->n_other_threads);
    }
    int n_prior = r->n_other_threads + r->n_seeds;
    if (n_start + n_prior > 0)
        st = rlt_proposer_queue_create(space, n_start, &start, n_prior, priors, out, diag);
    rlt_free(priors);
    return st;
}

/* The tuner that follows the queue (whose configurations it treats as
 * visited from its start), warm-started from the transfer rows and loaded
 * from agent_in as the options say. */
static rlt_status make_tuner(rlt_session *s, const rlt_op *op, const rlt_tune_opts *o, const char *target_key,
                             const rlt_proposer *queue, rlt_proposer **out, rlt_diag *diag)
{
    *out = NULL;
    rlt_tuner_opts topts = o->tuner_opts;
    rlt_tune_result *r = rlt_session_result_mutable(s);
    rlt_transfer transfer = {0};
    unsigned flags = rlt_tuner_flags(o->tuner);
    rlt_status st = RLT_STATUS_OK;
    char names[128];
    if (o->transfer_db) {
        if (!(flags & RLT_TUNER_USES_TRANSFER)) {
            rlt_tuner_names_with(RLT_TUNER_USES_TRANSFER, names, sizeof names);
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "transfer from other workloads' records needs a tuner with a cost model (%s), not %s",
                            names, o->tuner);
        }
        if ((st = rlt_transfer_collect(o->transfer_db, op, rlt_session_space(s), &o->space, target_key, 0, &transfer,
                                       diag)) != RLT_STATUS_OK) {
            rlt_diag_prefix(diag, "transfer");
            return st;
        }
        topts.n_transfer = transfer.n_rows;
        topts.transfer_xs = transfer.xs;
        topts.transfer_ys = transfer.ys;
        r->n_transfer_rows = transfer.n_rows;
        r->n_transfer_workloads = transfer.n_workloads;
    }
    if (queue) topts.claimed_configs = rlt_proposer_queue_configs(queue, &topts.n_claimed);
    uint64_t t0 = rlt_time_ns();
    rlt_proposer *tuner = NULL;
    st = rlt_proposer_tuner_create(rlt_session_space(s), o->tuner, &topts, &tuner, diag);
    rlt_transfer_free(&transfer); /* the tuner copied the rows */
    if (st == RLT_STATUS_OK && !(flags & RLT_TUNER_HAS_AGENT) && (o->agent_in || o->agent_out)) {
        rlt_tuner_names_with(RLT_TUNER_HAS_AGENT, names, sizeof names);
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "tuner %s has no agent to load or save (the learning tuners are %s)", o->tuner, names);
    }
    if (st == RLT_STATUS_OK && o->agent_in) st = rlt_tuner_load(tuner->tuner, o->agent_in, diag);
    rlt_session_add_tuner_time(s, (double)(rlt_time_ns() - t0) * 1e-9);
    if (st != RLT_STATUS_OK) {
        rlt_proposer_destroy(tuner);
        return st;
    }
    *out = tuner;
    return RLT_STATUS_OK;
}

rlt_status rlt_tune_start(const rlt_op *op, const rlt_tune_opts *opts, rlt_session **out, rlt_diag *diag)
{
    *out = NULL;
    rlt_tune_opts o;
    rlt_space space;
    rlt_session *s = NULL;
    rlt_proposer *queue = NULL;
    rlt_measurer *m = NULL;
    rlt_record_target target;
    rlt_str target_key;
    rlt_str_init(&target_key);
    rlt_status st = normalise(op, opts, &o, diag);
    if (st == RLT_STATUS_OK) st = run_space(op, &o, &space, diag);
    if (st == RLT_STATUS_OK) st = rlt_session_target(&o.build, o.n_threads, &target, diag);
    if (st != RLT_STATUS_OK) goto done;
    target.is_weights_cold = o.run.cold_weights;
    rlt_record_target_key(&target, &target_key);
    if (target_key.has_failed) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory starting a tuning run");
        goto done;
    }
    rlt_session_opts so = {.n_trials = o.n_trials,
                           .batch_size = o.batch_size,
                           .early_stopping = o.early_stopping,
                           .n_final = o.plan ? 0 : o.n_final,
                           .final_rounds = o.final_rounds,
                           .n_threads = o.n_threads,
                           .stop = o.stop,
                           .progress = o.progress,
                           .progress_ctx = o.progress_ctx};
    if ((st = rlt_session_create(op, &space, &so, &s, diag)) != RLT_STATUS_OK) goto done;
    rlt_session_about *about = rlt_session_about_mutable(s);
    snprintf(about->tuner, sizeof about->tuner, "%s", o.tuner ? o.tuner : "");
    if ((o.agent_in && !(about->agent_in = rlt_strdup(o.agent_in))) ||
        (o.agent_out && !(about->agent_out = rlt_strdup(o.agent_out)))) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory starting a tuning run");
        goto done;
    }
    /* the proposers: the plan; or the queue, then the tuner */
    if (o.plan) {
        rlt_proposer *plan = NULL;
        if ((st = rlt_proposer_plan_create(o.n_plan, o.plan, &plan, diag)) != RLT_STATUS_OK ||
            (st = rlt_session_add_proposer(s, plan, diag)) != RLT_STATUS_OK)
            goto done;
    } else {
        rlt_proposer *tuner = NULL;
        if ((st = make_queue(s, op, &o, &target, &queue, diag)) != RLT_STATUS_OK ||
            (st = make_tuner(s, op, &o, target_key.data, queue, &tuner, diag)) != RLT_STATUS_OK)
            goto done;
        rlt_proposer *q = queue;
        queue = NULL; /* the session's from here on, as the tuner is */
        if (q && (st = rlt_session_add_proposer(s, q, diag)) != RLT_STATUS_OK) {
            rlt_proposer_destroy(tuner);
            goto done;
        }
        if ((st = rlt_session_add_proposer(s, tuner, diag)) != RLT_STATUS_OK) goto done;
    }
    /* the measurer: a replay; or live, with the records read back and stored */
    if (o.replay) {
        st = rlt_measurer_replay_create(o.replay, &m, diag);
    } else {
        st = rlt_measurer_live_create(op, rlt_session_space(s), &target, &o.build, &o.run, o.tuner, o.seed, &m, diag);
        if (st == RLT_STATUS_OK) rlt_measurer_live_set_executor(m, o.executor);
        if (st == RLT_STATUS_OK && o.db)
            st = rlt_measurer_recorded_create(o.db, op, rlt_session_space(s), &target, o.plan ? o.tuner : NULL, m,
                                              &m, diag);
    }
    if (st != RLT_STATUS_OK) goto done;
    rlt_session_set_measurer(s, m);
    *out = s;
    s = NULL;
done:
    rlt_proposer_destroy(queue);
    rlt_session_destroy(s);
    rlt_str_free(&target_key);
    return st;
}

/* ---- the whole run ------------------------------------------------------- */

rlt_status rlt_tune(const rlt_op *op, const rlt_tune_opts *opts, rlt_tune_result *out, rlt_diag *diag)
{
    memset(out, 0, sizeof *out);
    rlt_session *s = NULL;
    rlt_status st = rlt_tune_start(op, opts, &s, diag);
    if (st != RLT_STATUS_OK) return st;
    while (st == RLT_STATUS_OK && !rlt_session_is_done(s)) st = rlt_session_step(s, diag);
    if (st == RLT_STATUS_OK) st = rlt_session_finish(s, diag); /* saves the agent, makes the final pick */
    rlt_session_take_result(s, out);
    rlt_session_destroy(s);
    return st;
}
