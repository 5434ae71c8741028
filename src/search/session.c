/*
 * session.c - the tuning session (session.h): the step (propose one batch,
 * measure it, let every proposer hear the scores, keep the curve and the
 * best), the end of the search (the final pick), and the proposers that
 * need no measurement machinery: a tuner, a fixed plan, a queue of seed
 * configurations.
 *
 * Order within a step, and why:
 *   1. the first proposer with something left proposes up to batch_size
 *      configurations (a queue of seed configurations drains before the
 *      tuner's own proposals start);
 *   2. the measurer answers them: a recorded layer reads back what was
 *      measured before, the live one builds the rest together and runs
 *      them one at a time, and the records of the batch are stored in one
 *      transaction before the step returns (a kill -9 loses at most the
 *      batch in flight);
 *   3. every proposer hears the scores (a tuner learns from the queue's
 *      configurations too);
 *   4. the curve, the best, the best few for the final pick.
 */
#include "search/session.h"
#include "codegen/codegen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void copy_text(char *dst, size_t cap, const char *src) { snprintf(dst, cap, "%s", src ? src : ""); }

static double seconds_since(uint64_t start_ns) { return (double)(rlt_time_ns() - start_ns) * 1e-9; }

/* ---- the target records are filed under ---------------------------------- */

rlt_status rlt_session_target(const rlt_build_opts *build, int n_threads, rlt_record_target *out, rlt_diag *diag)
{
    memset(out, 0, sizeof *out);
    rlt_target t;
    rlt_target_detect(&t);
    copy_text(out->cpu, sizeof out->cpu, t.cpu_model);
    for (char *p = out->cpu; *p; p++)
        if (*p == ';') *p = ','; /* the key's separator */
    out->vector_floats = t.vector_floats;
    out->n_threads = n_threads > 0 ? n_threads : 1;
    /* Weights are staged once, untimed (codegen.h): records from before
     * that timed the staging on every call, so they belong to another
     * target. codegen: the version of the code a configuration lowers to;
     * older records measured other code under the same keys. */
    out->is_weights_prepacked = true;
    out->codegen = RLT_CODEGEN_VERSION;
    rlt_str cc;
    rlt_str_init(&cc);
    rlt_build_describe(build, false, &cc);
    rlt_status st = RLT_STATUS_OK;
    if (cc.has_failed)
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory describing the compiler");
    else if (cc.len >= sizeof out->cc)
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "the compiler command line '%.60s...' is %zu bytes long; records hold at most %zu", cc.data,
                      cc.len, sizeof out->cc - 1);
    else
        copy_text(out->cc, sizeof out->cc, cc.data);
    rlt_str_free(&cc);
    return st;
}

/* ---- proposers ------------------------------------------------------------ */

void rlt_proposer_destroy(rlt_proposer *p)
{
    if (!p) return;
    if (p->ops->destroy) p->ops->destroy(p);
    rlt_free(p);
}

static rlt_status proposer_new(const rlt_proposer_ops *ops, void *state, rlt_proposer **out, rlt_diag *diag)
{
    rlt_proposer *p = rlt_calloc(1, sizeof *p);
    if (!p) {
        rlt_proposer tmp = {.ops = ops, .state = state};
        ops->destroy(&tmp);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a proposer");
    }
    p->ops = ops;
    p->state = state;
    *out = p;
    return RLT_STATUS_OK;
}

/* A tuner: its proposals, and every batch's scores for it to learn from. */
typedef struct tuner_state {
    rlt_tuner *tuner;
    rlt_config *configs; /* scratch of update, cap of them */
    double *scores;
    int cap;
} tuner_state;

static int tuner_next(rlt_proposer *p, int max, rlt_config *out)
{
    tuner_state *t = p->state;
    return rlt_tuner_next_batch(t->tuner, max, out);
}

static rlt_status tuner_update(rlt_proposer *p, int n, const rlt_trial *trials, rlt_diag *diag)
{
    tuner_state *t = p->state;
    if (n > t->cap) {
        rlt_config *c = rlt_realloc(t->configs, sizeof *c * (size_t)n);
        if (c) t->configs = c;
        double *s = rlt_realloc(t->scores, sizeof *s * (size_t)n);
        if (s) t->scores = s;
        if (!c || !s) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory telling the tuner its scores");
        t->cap = n;
    }
    for (int i = 0; i < n; i++) {
        t->configs[i] = trials[i].config;
        t->scores[i] = trials[i].score;
    }
    return rlt_tuner_update(t->tuner, n, t->configs, t->scores, diag);
}

static void tuner_destroy(rlt_proposer *p)
{
    tuner_state *t = p->state;
    if (!t) return;
    rlt_tuner_destroy(t->tuner);
    rlt_free(t->configs);
    rlt_free(t->scores);
    rlt_free(t);
}

static const rlt_proposer_ops k_tuner_ops = {"tuner", tuner_next, tuner_update, tuner_destroy};

rlt_status rlt_proposer_tuner_create(const rlt_space *space, const char *name, const rlt_tuner_opts *opts,
                                     rlt_proposer **out, rlt_diag *diag)
{
    *out = NULL;
    tuner_state *t = rlt_calloc(1, sizeof *t);
    if (!t) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a tuner");
    rlt_status st = rlt_tuner_create(name, space, opts, &t->tuner, diag);
    if (st != RLT_STATUS_OK) {
        rlt_free(t);
        return st;
    }
    if ((st = proposer_new(&k_tuner_ops, t, out, diag)) == RLT_STATUS_OK) (*out)->tuner = t->tuner;
    return st;
}

/* A fixed list, proposed in order. */
typedef struct plan_state {
    rlt_config *configs;
    int n, next;
} plan_state;

static int plan_next(rlt_proposer *p, int max, rlt_config *out)
{
    plan_state *s = p->state;
    int n = RLT_MIN(max, s->n - s->next);
    memcpy(out, s->configs + s->next, sizeof *out * (size_t)RLT_MAX(n, 0));
    s->next += RLT_MAX(n, 0);
    return RLT_MAX(n, 0);
}

static void plan_destroy(rlt_proposer *p)
{
    plan_state *s = p->state;
    if (!s) return;
    rlt_free(s->configs);
    rlt_free(s);
}

static const rlt_proposer_ops k_plan_ops = {"plan", plan_next, NULL, plan_destroy};

rlt_status rlt_proposer_plan_create(int n, const rlt_config *configs, rlt_proposer **out, rlt_diag *diag)
{
    *out = NULL;
    plan_state *s = rlt_calloc(1, sizeof *s);
    if (s) s->configs = rlt_malloc(sizeof *configs * (size_t)RLT_MAX(n, 1));
    if (!s || !s->configs) {
        rlt_free(s);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory keeping a plan of %d configurations", n);
    }
    if (n > 0) memcpy(s->configs, configs, sizeof *configs * (size_t)n);
    s->n = RLT_MAX(n, 0);
    return proposer_new(&k_plan_ops, s, out, diag);
}

/* The queue is a plan whose configurations were chosen by rules: start
 * configurations with their neighbours, then the prior ones. */
static const rlt_proposer_ops k_queue_ops = {"queue", plan_next, NULL, plan_destroy};

rlt_status rlt_proposer_queue_create(const rlt_space *space, int n_start, const rlt_config *start, int n_prior,
                                     const rlt_config *prior, rlt_proposer **out, rlt_diag *diag)
{
    *out = NULL;
    n_start = start ? RLT_MAX(n_start, 0) : 0;
    n_prior = prior ? RLT_MAX(n_prior, 0) : 0;
    int per = 1 + 2 * space->n_knobs;
    plan_state *s = rlt_calloc(1, sizeof *s);
    if (s) s->configs = rlt_malloc(sizeof *s->configs * (size_t)RLT_MAX(n_start * per + n_prior, 1));
    rlt_visited seen = {0};
    rlt_status st = RLT_STATUS_OK;
    if (!s || !s->configs) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory keeping %d start configurations",
                      n_start + n_prior);
        goto done;
    }
    for (int i = 0; i < n_start; i++) {
        s->configs[s->n++] = start[i];
        for (int k = 0; k < space->n_knobs; k++)
            for (int d = -1; d <= 1; d += 2)
                if (rlt_space_neighbour(space, &start[i], k, d, &s->configs[s->n])) s->n++;
    }
    for (int i = 0; i < n_prior; i++) s->configs[s->n++] = prior[i];
    /* the valid ones, each once */
    int kept = 0;
    for (int i = 0; i < s->n; i++) {
        uint64_t index = rlt_space_index_of(space, &s->configs[i]);
        if (rlt_visited_has(&seen, index) || !rlt_space_is_valid(space, &s->configs[i])) continue;
        if (!rlt_visited_add(&seen, index)) {
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory keeping start configurations");
            goto done;
        }
        s->configs[kept++] = s->configs[i];
    }
    s->n = kept;
done:
    rlt_visited_free(&seen);
    if (st != RLT_STATUS_OK) {
        if (s) rlt_free(s->configs);
        rlt_free(s);
        return st;
    }
    return proposer_new(&k_queue_ops, s, out, diag);
}

const rlt_config *rlt_proposer_queue_configs(const rlt_proposer *queue, int *out_n)
{
    RLT_ASSERT(queue->ops == &k_queue_ops);
    const plan_state *s = queue->state;
    *out_n = s->n;
    return s->configs;
}

/* ---- measurers ------------------------------------------------------------ */

void rlt_measurer_destroy(rlt_measurer *m)
{
    if (!m) return;
    if (m->ops->destroy) m->ops->destroy(m);
    rlt_free(m);
}

/* ---- the best few, for the final pick -------------------------------------- */

/* The best configurations of the session so far, best first (at most
 * cap; the arrays hold cap + 1, for the serial one). */
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
    int at = t->n < batch_size ? t->n++ : t->n - 1;
    t->configs[at] = *serial;
    t->indices[at] = index;
    t->scores[at] = score;
}

/* The space's parallel knob, or -1 (one thread). */
static int parallel_knob(const rlt_space *space)
{
    for (int k = 0; k < space->n_knobs; k++)
        if (space->knobs[k].kind == RLT_KNOB_PARALLEL) return k;
    return -1;
}

/* ---- the session ------------------------------------------------------------ */

/* Something the session frees when it is destroyed. */
typedef struct attachment {
    void *ptr;
    void (*free_fn)(void *);
} attachment;

struct rlt_session {
    const rlt_op *op;
    rlt_space space;
    rlt_session_opts opts;
    rlt_proposer **proposers; /* owned, asked in order */
    int n_proposers, current;
    rlt_measurer *measurer;   /* owned */
    rlt_trial *trials;        /* the batch, batch_size of them */
    int n_last;               /* trials of the last step */
    top_list top;
    int k_parallel;           /* the space's parallel knob when the final pick runs at several threads, else -1 */
    rlt_config serial;        /* the best configuration without a parallel loop */
    double serial_score;
    int since_best;
    bool is_done, is_finished;
    uint64_t start_ns;
    double search_s;          /* wall time of the search, without the final pick */
    rlt_tune_result result;
    rlt_session_about about;
    attachment *attached;     /* owned; freed last to first */
    int n_attached;
    rlt_config *offered;      /* rlt_session_offer's, owned: [next_offered, n_offered) not yet proposed */
    int n_offered, cap_offered, next_offered;
    rlt_visited offered_seen; /* every configuration offered, by index */
    char last_error[1024];    /* "" when no call failed */
};

/* Keeps a failure's message for rlt_session_last_error; passes st on. */
static rlt_status noted(rlt_session *s, rlt_status st, const rlt_diag *diag)
{
    return rlt_diag_keep(s->last_error, sizeof s->last_error, st, diag, NULL);
}

rlt_status rlt_session_create(const rlt_op *op, const rlt_space *space, const rlt_session_opts *opts,
                              rlt_session **out, rlt_diag *diag)
{
    *out = NULL;
    rlt_session_opts o = *opts;
    if (o.n_trials < 1)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "the number of trials must be at least 1 (got %d)",
                        o.n_trials);
    if (o.batch_size <= 0) o.batch_size = 16;
    if (o.final_rounds <= 0) o.final_rounds = 3;
    if (o.n_threads <= 0) o.n_threads = 1;
    rlt_session *s = rlt_calloc(1, sizeof *s);
    if (!s) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory starting a tuning session");
    s->op = op;
    s->space = *space;
    s->opts = o;
    s->k_parallel = -1;
    s->start_ns = rlt_time_ns();
    s->trials = rlt_calloc((size_t)o.batch_size, sizeof *s->trials);
    s->result.curve = rlt_calloc((size_t)o.n_trials, sizeof *s->result.curve);
    int cap = RLT_MAX(0, RLT_MIN(o.n_final, o.batch_size));
    s->top.configs = rlt_calloc((size_t)cap + 1, sizeof *s->top.configs);
    s->top.indices = rlt_calloc((size_t)cap + 1, sizeof *s->top.indices);
    s->top.scores = rlt_calloc((size_t)cap + 1, sizeof *s->top.scores);
    if (!s->trials || !s->result.curve || !s->top.configs || !s->top.indices || !s->top.scores) {
        rlt_session_destroy(s);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory starting a tuning session");
    }
    *out = s;
    return RLT_STATUS_OK;
}

void rlt_session_destroy(rlt_session *s)
{
    if (!s) return;
    for (int i = 0; i < s->n_proposers; i++) rlt_proposer_destroy(s->proposers[i]);
    rlt_free(s->proposers);
    rlt_measurer_destroy(s->measurer);
    for (int i = s->n_attached - 1; i >= 0; i--) s->attached[i].free_fn(s->attached[i].ptr);
    rlt_free(s->attached);
    char **texts[] = {&s->about.db_path, &s->about.replay_path, &s->about.agent_in, &s->about.agent_out,
                      &s->about.policy_path, &s->about.policy_schedule};
    for (size_t i = 0; i < RLT_ARRAY_LEN(texts); i++) rlt_free(*texts[i]);
    rlt_free(s->trials);
    rlt_free(s->top.configs);
    rlt_free(s->top.indices);
    rlt_free(s->top.scores);
    rlt_free(s->offered);
    rlt_visited_free(&s->offered_seen);
    rlt_tune_result_free(&s->result);
    rlt_free(s);
}

const rlt_space *rlt_session_space(const rlt_session *s) { return &s->space; }

const rlt_op *rlt_session_op(const rlt_session *s) { return s->op; }

int rlt_session_n_total(const rlt_session *s) { return s->opts.n_trials; }

rlt_status rlt_session_offer(rlt_session *s, const char *key, int *out_n, rlt_diag *diag)
{
    *out_n = 0;
    if (s->next_offered > 0 && s->n_offered + RLT_SESSION_OFFER_MAX > s->cap_offered) {
        /* what was proposed already is dropped first */
        size_t n_left = (size_t)(s->n_offered - s->next_offered);
        memmove(s->offered, s->offered + s->next_offered, sizeof *s->offered * n_left);
        s->n_offered -= s->next_offered;
        s->next_offered = 0;
    }
    if (s->n_offered + RLT_SESSION_OFFER_MAX > s->cap_offered) {
        int cap = RLT_MAX(2 * s->cap_offered, s->n_offered + RLT_SESSION_OFFER_MAX);
        rlt_config *grown = rlt_realloc(s->offered, sizeof *grown * (size_t)cap);
        if (!grown) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory keeping offered configurations");
        s->offered = grown;
        s->cap_offered = cap;
    }
    rlt_config adopted[RLT_SESSION_OFFER_MAX];
    int n = rlt_space_configs_adopt(&s->space, key, adopted, 0, RLT_SESSION_OFFER_MAX);
    for (int i = 0; i < n; i++) {
        uint64_t index = rlt_space_index_of(&s->space, &adopted[i]);
        if (rlt_visited_has(&s->offered_seen, index)) continue;
        if (!rlt_visited_add(&s->offered_seen, index))
            return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory keeping offered configurations");
        s->offered[s->n_offered++] = adopted[i];
        ++*out_n;
    }
    return RLT_STATUS_OK;
}

rlt_status rlt_session_add_proposer(rlt_session *s, rlt_proposer *p, rlt_diag *diag)
{
    rlt_proposer **grown = rlt_realloc(s->proposers, sizeof *grown * (size_t)(s->n_proposers + 1));
    if (!grown) {
        rlt_proposer_destroy(p);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory adding a proposer");
    }
    s->proposers = grown;
    s->proposers[s->n_proposers++] = p;
    return RLT_STATUS_OK;
}

void rlt_session_set_measurer(rlt_session *s, rlt_measurer *m)
{
    rlt_measurer_destroy(s->measurer);
    s->measurer = m;
    /* the final pick needs a measurer that measures again */
    s->top.cap = m && m->ops->remeasure ? RLT_MAX(0, RLT_MIN(s->opts.n_final, s->opts.batch_size)) : 0;
    s->k_parallel = s->top.cap > 0 ? parallel_knob(&s->space) : -1;
}

rlt_session_about *rlt_session_about_mutable(rlt_session *s) { return &s->about; }

const rlt_session_about *rlt_session_about_get(const rlt_session *s) { return &s->about; }

rlt_status rlt_session_attach(rlt_session *s, void *ptr, void (*free_fn)(void *), rlt_diag *diag)
{
    attachment *grown = rlt_realloc(s->attached, sizeof *grown * (size_t)(s->n_attached + 1));
    if (!grown) {
        free_fn(ptr);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory keeping what a session opened");
    }
    s->attached = grown;
    s->attached[s->n_attached++] = (attachment){ptr, free_fn};
    return RLT_STATUS_OK;
}

const char *rlt_session_last_error(const rlt_session *s) { return s->last_error; }

rlt_tuner *rlt_session_tuner(const rlt_session *s)
{
    for (int i = 0; i < s->n_proposers; i++)
        if (s->proposers[i]->tuner) return s->proposers[i]->tuner;
    return NULL;
}

bool rlt_session_is_done(const rlt_session *s) { return s->is_done; }

const rlt_trial *rlt_session_last_batch(const rlt_session *s, int *out_n)
{
    *out_n = s->n_last;
    return s->trials;
}

const rlt_tune_result *rlt_session_result(const rlt_session *s) { return &s->result; }

void rlt_session_add_tuner_time(rlt_session *s, double seconds) { s->result.tuner_s += seconds; }

void rlt_session_take_result(rlt_session *s, rlt_tune_result *out)
{
    *out = s->result;
    memset(&s->result, 0, sizeof s->result);
}

void rlt_tune_result_free(rlt_tune_result *r)
{
    rlt_free(r->curve);
    r->curve = NULL;
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

/* A batch: the configurations offered from outside first, then the first
 * proposer with something left fills the rest. (One the proposer proposes
 * again is read back from the records, not measured twice, when the
 * session has them.) */
static int propose(rlt_session *s, int want)
{
    rlt_config *configs = rlt_malloc(sizeof *configs * (size_t)want);
    int n = 0;
    if (!configs) return -1;
    while (n < want && s->next_offered < s->n_offered) configs[n++] = s->offered[s->next_offered++];
    s->result.n_offered += n;
    uint64_t t0 = rlt_time_ns();
    while (n < want && s->current < s->n_proposers) {
        int got = s->proposers[s->current]->ops->next(s->proposers[s->current], want - n, configs + n);
        n += got;
        if (got > 0) break;
        s->current++;
    }
    s->result.tuner_s += seconds_since(t0);
    for (int i = 0; i < n; i++) {
        memset(&s->trials[i], 0, sizeof s->trials[i]);
        s->trials[i].config = configs[i];
    }
    rlt_free(configs);
    return n;
}

/* The batch's scores into the counts, the curve, the best. */
static void account(rlt_session *s, int n)
{
    rlt_tune_result *r = &s->result;
    for (int i = 0; i < n; i++) {
        const rlt_trial *t = &s->trials[i];
        switch (t->source) {
        case RLT_TRIAL_MEASURED: r->n_measured++; break;
        case RLT_TRIAL_RECORDED: r->n_from_db++; break;
        case RLT_TRIAL_REPLAYED: r->n_replayed++; break;
        case RLT_TRIAL_ABSENT: r->n_absent++; break;
        case RLT_TRIAL_PENDING: RLT_ASSERT(!"a measurer left a trial unanswered"); break;
        }
        if (t->source != RLT_TRIAL_ABSENT && t->status != RLT_STATUS_OK) r->n_failed++;
        top_offer(&s->top, &s->space, &t->config, t->score);
        if (s->k_parallel >= 0 && t->config.choice[s->k_parallel] == 0 && t->score > s->serial_score) {
            s->serial = t->config;
            s->serial_score = t->score;
        }
        if (t->score > r->best_gflops) {
            r->best_gflops = t->score;
            r->best_time_ms = s->op->flops / (t->score * 1e6);
            note_best(&s->space, &t->config, r);
            s->since_best = 0;
        } else {
            s->since_best++;
        }
        r->curve[r->n_trials++] = r->best_gflops;
    }
}

static rlt_status step(rlt_session *s, rlt_diag *diag)
{
    RLT_ASSERT(s->measurer);
    if (s->is_done)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "the tuning session has ended: no step to take");
    rlt_tune_result *r = &s->result;
    s->n_last = 0;
    if (s->opts.stop && *s->opts.stop) {
        r->was_stopped = true;
        s->is_done = true;
        return RLT_STATUS_OK;
    }
    int n = propose(s, RLT_MIN(s->opts.batch_size, s->opts.n_trials - r->n_trials));
    if (n < 0) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory proposing a batch");
    if (n == 0) {
        r->was_exhausted = true;
        s->is_done = true;
        return RLT_STATUS_OK;
    }
    rlt_measure_ctx ctx = {.best_gflops = r->best_gflops, .stop = s->opts.stop};
    rlt_status st = s->measurer->ops->measure(s->measurer, n, s->trials, &ctx, diag);
    if (st != RLT_STATUS_OK) return st;
    uint64_t t0 = rlt_time_ns();
    for (int i = 0; i < s->n_proposers && st == RLT_STATUS_OK; i++)
        if (s->proposers[i]->ops->update) st = s->proposers[i]->ops->update(s->proposers[i], n, s->trials, diag);
    r->tuner_s += seconds_since(t0);
    if (st != RLT_STATUS_OK) return st;
    s->n_last = n;
    account(s, n);
    r->wall_s = seconds_since(s->start_ns);
    s->search_s = r->wall_s;
    r->measurements_per_s = r->wall_s > 0 ? r->n_trials / r->wall_s : 0;
    if (s->opts.progress) {
        rlt_tune_progress p = {r->n_trials, s->opts.n_trials, r->best_gflops, r->wall_s, r->measurements_per_s};
        s->opts.progress(&p, s->opts.progress_ctx);
    }
    if (r->n_trials >= s->opts.n_trials) s->is_done = true;
    if (s->opts.early_stopping > 0 && s->since_best >= s->opts.early_stopping) {
        r->was_stopped_early = true;
        s->is_done = true;
    }
    return RLT_STATUS_OK;
}

rlt_status rlt_session_step(rlt_session *s, rlt_diag *diag)
{
    rlt_diag own = {0};
    rlt_diag *d = diag ? diag : &own;
    return noted(s, step(s, d), d);
}

/* The final pick: the best few measured again, in turn, with longer
 * samples; each one's re-measurement is stored by the measurer (one record
 * each, its configuration's latest), and the best median is the run's
 * best. */
static rlt_status final_pick(rlt_session *s, rlt_diag *diag)
{
    rlt_tune_result *r = &s->result;
    int n = s->top.n;
    for (int i = 0; i < n; i++) {
        memset(&s->trials[i], 0, sizeof s->trials[i]);
        s->trials[i].config = s->top.configs[i];
        s->trials[i].score = s->top.scores[i];
        s->trials[i].source = RLT_TRIAL_MEASURED;
    }
    rlt_measure_ctx ctx = {.best_gflops = r->best_gflops, .stop = s->opts.stop};
    int rounds = 0;
    rlt_status st = s->measurer->ops->remeasure(s->measurer, n, s->trials, s->opts.final_rounds, &ctx, &rounds, diag);
    if (st != RLT_STATUS_OK) return st;
    r->final_rounds = rounds;
    r->n_final = rounds > 0 ? n : 0;
    int pick = -1;
    for (int i = 0; i < n && rounds > 0; i++)
        if (s->trials[i].status == RLT_STATUS_OK && (pick < 0 || s->trials[i].score > s->trials[pick].score)) pick = i;
    if (pick >= 0) {
        r->best_gflops = s->trials[pick].score;
        r->best_time_ms = s->trials[pick].time_ms;
        note_best(&s->space, &s->trials[pick].config, r);
    }
    return RLT_STATUS_OK;
}

rlt_status rlt_session_finish(rlt_session *s, rlt_diag *diag)
{
    rlt_diag own = {0};
    rlt_diag *d = diag ? diag : &own;
    if (s->is_finished)
        return noted(s, rlt_fail(d, RLT_STATUS_INVALID_ARGUMENT, "the tuning session was finished already"), d);
    s->is_finished = true;
    s->is_done = true;
    rlt_tune_result *r = &s->result;
    r->tuning_best_gflops = r->best_gflops;
    copy_text(r->tuning_best_config, sizeof r->tuning_best_config, r->best_config);
    if (s->search_s <= 0) s->search_s = seconds_since(s->start_ns);
    rlt_status st = RLT_STATUS_OK;
    /* the agent as it stands after the last batch (also when stopped) */
    rlt_tuner *tuner = rlt_session_tuner(s);
    if (s->about.agent_out && tuner) st = rlt_tuner_save(tuner, s->about.agent_out, d);
    if (s->top.cap > 0) top_add_serial(&s->top, &s->space, &s->serial, s->serial_score, s->opts.batch_size);
    /* Nothing new measured (a rerun): the records already say what they
     * said; measuring again would only add rows. */
    if (st == RLT_STATUS_OK && s->top.n >= 2 && !r->was_stopped && r->n_measured > 0) st = final_pick(s, d);
    r->wall_s = seconds_since(s->start_ns);
    r->final_s = r->n_final > 0 ? r->wall_s - s->search_s : 0;
    r->measurements_per_s = s->search_s > 0 ? r->n_trials / s->search_s : 0;
    return noted(s, st, d);
}

rlt_tune_result *rlt_session_result_mutable(rlt_session *s) { return &s->result; }
