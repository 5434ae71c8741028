/*
 * env.c - the LoopTune environment's public API (include/rltune.h, design in
 * docs/env.md): create / clone / restore / destroy, reset, step, observe,
 * their batched forms, the mask and the state's accessors.
 *
 * An env is a state (env_state, a value) and a pointer to its family's
 * shared part: the op, the options, the workload (inputs and reference,
 * made at the first measurement), the peak, and the cache of evaluated
 * states keyed by the nest's structural hash. Clones share it (reference
 * counted), so states evaluated by any member are free to all.
 *
 * A step carries the action out (env_action_apply, actions.c), evaluates
 * the new nest unless the action left it as it was (cursor moves, stop):
 * from the cache, else through the evaluator (the caller's, a replayed state
 * dataset's table, or measurement: rlt_measure_nests, which builds, runs and
 * checks the kernel against the reference), then records the action and
 * computes the next mask (with a replay, without the actions that leave the
 * dataset).
 *
 * Batches: rlt_env_prefetch and rlt_env_reset_batch evaluate many states
 * together (measured ones built in one batch). rlt_env_step_batch checks
 * every env first, prefetches what measured families reach, then steps
 * the envs in order and in place (batch_take), each state moved through
 * two scratch states by copies of its part in use, the envs whose change
 * a later failure (an evaluator's, a measurement's, a reset's) would have
 * to undo packed aside first: a failed batch changes no env. Vector envs
 * (rlt_env_vec) turn a Gymnasium step's actions into such a batch (resets
 * where an autoreset is pending, no-ops for masked actions), and keep the
 * step counts, truncation and the outputs in C.
 */
#include "env/env.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define CACHE_MIN_SLOTS 256

typedef struct cache_entry {
    uint64_t hash;
    bool is_used;
    rlt_status status;
    double gflops;
    char message[256];
} cache_entry;

/* A replay's memo of masks: the mask of a nest and cursor (the mask
 * depends on nothing else before the episode ends), as bits. */
typedef struct mask_entry {
    uint64_t hash;
    int cursor; /* -1: empty slot */
    uint32_t bits;
} mask_entry;

typedef struct env_shared {
    int n_refs;
    rlt_op *op;          /* owned */
    char *cc, *cflags, *cache_dir, *replay_path; /* owned copies of the options' strings */
    rlt_env_opts opts;   /* strings pointing at the copies */
    int n_threads;       /* resolved: 1..256 */
    rlt_build_opts bopts;
    rlt_run_opts ropts;
    rlt_workload *workload; /* owned; made at the first measurement */
    env_dataset *replay; /* owned; NULL unless opts.replay_path */
    mask_entry *masks;   /* a replay's memo of masks (open addressing, at most half full); owned */
    size_t n_mask_slots, n_masks;
    double peak_gflops;  /* one core's; 0 until the first reset */
    uint64_t start_hash; /* rlt_nest_hash of the op's default nest, where a plain reset starts */
    cache_entry *slots;  /* open addressing, linear probing; owned */
    size_t n_slots, n_used;
    rlt_env_stats stats;
} env_shared;

struct rlt_env {
    env_shared *shared;
    bool is_reset;
    bool is_in_batch; /* set while rlt_env_step_batch checks that its envs are distinct */
    env_state state;
    char last_error[1024]; /* the last failed call's message; "" when none */
};

/* ---- the cache of evaluated states -------------------------------------- */

static cache_entry *cache_find(const env_shared *sh, uint64_t hash)
{
    if (!sh->n_slots) return NULL;
    for (size_t i = (size_t)hash & (sh->n_slots - 1);; i = (i + 1) & (sh->n_slots - 1)) {
        if (!sh->slots[i].is_used) return NULL;
        if (sh->slots[i].hash == hash) return &sh->slots[i];
    }
}

static void cache_put_slot(cache_entry *slots, size_t n_slots, const cache_entry *e)
{
    size_t i = (size_t)e->hash & (n_slots - 1);
    while (slots[i].is_used) i = (i + 1) & (n_slots - 1);
    slots[i] = *e;
}

/* Adds an entry; when the table cannot grow (out of memory) the state is
 * simply not cached: it would be evaluated again, nothing is wrong. */
static void cache_insert(env_shared *sh, const cache_entry *e)
{
    if (2 * (sh->n_used + 1) > sh->n_slots) {
        size_t n = sh->n_slots ? 2 * sh->n_slots : CACHE_MIN_SLOTS;
        cache_entry *slots = rlt_calloc(n, sizeof *slots);
        if (!slots) {
            rlt_log(RLT_LOG_DEBUG, "env: out of memory growing the cache of evaluated states");
            return;
        }
        for (size_t i = 0; i < sh->n_slots; i++)
            if (sh->slots[i].is_used) cache_put_slot(slots, n, &sh->slots[i]);
        rlt_free(sh->slots);
        sh->slots = slots;
        sh->n_slots = n;
    }
    cache_put_slot(sh->slots, sh->n_slots, e);
    sh->n_used++;
    sh->stats.n_cached = (int64_t)sh->n_used;
}

/* ---- evaluation --------------------------------------------------------- */

/* Makes the family's workload (inputs, reference output) at its first use. */
static rlt_status ensure_workload(env_shared *sh, rlt_diag *diag)
{
    if (sh->workload) return RLT_STATUS_OK;
    rlt_status st = rlt_workload_create(sh->op, &sh->bopts, sh->opts.seed, &sh->workload, diag);
    if (st != RLT_STATUS_OK) rlt_diag_prefix(diag, "cannot set up the workload of %s", sh->op->spec);
    return st;
}

/* A measurement as an evaluation; IO_ERROR (no child process) fails. */
static rlt_status eval_from_run(const rlt_run_result *r, rlt_env_eval_result *out, rlt_diag *diag)
{
    if (r->status == RLT_STATUS_IO_ERROR) return rlt_fail(diag, RLT_STATUS_IO_ERROR, "%s", r->message);
    out->status = r->status;
    out->gflops = r->status == RLT_STATUS_OK ? r->gflops : 0.0;
    snprintf(out->message, sizeof out->message, "%.255s", r->status == RLT_STATUS_OK ? "" : r->message);
    return RLT_STATUS_OK;
}

/* The default evaluator: build, run and verify the kernel. */
static rlt_status measure_nest(env_shared *sh, const rlt_nest *nest, rlt_env_eval_result *out, rlt_diag *diag)
{
    rlt_status st = ensure_workload(sh, diag);
    if (st != RLT_STATUS_OK) return st;
    rlt_run_result r;
    st = rlt_measure_nests(sh->workload, &sh->bopts, &sh->ropts, 1, nest, &r, diag);
    if (st != RLT_STATUS_OK) return st;
    return eval_from_run(&r, out, diag);
}

/* Puts an evaluation into the cache (and the state, when s is not NULL). */
static void cache_store(env_shared *sh, uint64_t hash, rlt_env_eval_result *r, env_state *s)
{
    if ((unsigned)r->status >= RLT_STATUS_COUNT) r->status = RLT_STATUS_INTERNAL;
    if (r->status != RLT_STATUS_OK || !isfinite(r->gflops) || r->gflops < 0) r->gflops = 0;
    r->message[sizeof r->message - 1] = '\0';
    sh->stats.n_evaluations++;
    cache_entry e = {.hash = hash, .is_used = true, .status = r->status, .gflops = r->gflops};
    memcpy(e.message, r->message, sizeof e.message);
    cache_insert(sh, &e);
    if (s) {
        s->eval_status = r->status;
        s->gflops = r->gflops;
        memcpy(s->eval_message, r->message, sizeof s->eval_message);
    }
}

/* The kernel schedule of a state on one line ("split j 8; vectorize j.i"),
 * for messages; "?" when out of memory. */
static void schedule_line(const rlt_nest *nest, char *out, size_t cap)
{
    rlt_sched *sched = NULL;
    rlt_str text;
    rlt_str_init(&text);
    snprintf(out, cap, "?");
    if (env_kernel_schedule_build(nest, &sched, NULL) != RLT_STATUS_OK) return;
    for (int i = 0; i < sched->n_steps; i++) {
        if (i) rlt_str_append(&text, "; ");
        rlt_step_print(&sched->steps[i], &text);
    }
    if (!text.has_failed) snprintf(out, cap, "%s", text.data && text.data[0] ? text.data : "(the default nest)");
    rlt_str_free(&text);
    rlt_sched_destroy(sched);
}

/* A replay's evaluation of s (hash set): the dataset's entry, cached. A
 * state the dataset lacks is refused (INVALID_ARGUMENT); steps never get
 * here with one (the mask leaves them out). */
static rlt_status replay_lookup(env_shared *sh, env_state *s, rlt_diag *diag)
{
    const env_dataset_entry *e = env_dataset_find(sh->replay, s->hash);
    if (!e) {
        char sched[1024];
        schedule_line(&s->nest, sched, sizeof sched);
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "the replay dataset %s does not hold this state (its kernel: %s); a replay starts and "
                        "steps only in the states it holds",
                        env_dataset_path(sh->replay), sched);
    }
    rlt_env_eval_result r = {.status = e->status, .gflops = e->gflops};
    snprintf(r.message, sizeof r.message, "%s", e->message);
    cache_store(sh, s->hash, &r, s);
    return RLT_STATUS_OK;
}

/* Fills s's evaluation (s->hash set: rlt_nest_hash of s->nest), from the
 * cache or the evaluator. */
static rlt_status evaluate_hashed(env_shared *sh, env_state *s, rlt_diag *diag)
{
    const cache_entry *hit = cache_find(sh, s->hash);
    if (hit) {
        sh->stats.n_cache_hits++;
        s->eval_status = hit->status;
        s->gflops = hit->gflops;
        memcpy(s->eval_message, hit->message, sizeof s->eval_message);
        return RLT_STATUS_OK;
    }
    if (sh->replay) return replay_lookup(sh, s, diag);
    rlt_env_eval_result r = {.status = RLT_STATUS_OK};
    rlt_status st;
    rlt_nest kernel;
    env_kernel_nest(&s->nest, &kernel);
    if (sh->opts.evaluate) {
        rlt_sched *sched = NULL;
        rlt_str text;
        rlt_str_init(&text);
        st = env_kernel_schedule_build(&s->nest, &sched, diag);
        if (st == RLT_STATUS_OK) rlt_sched_print(sched, &text);
        if (st == RLT_STATUS_OK && text.has_failed)
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory printing a schedule");
        if (st == RLT_STATUS_OK) {
            rlt_env_eval_request req = {
                .op_spec = sh->op->spec,
                .schedule = text.data,
                .nest = &kernel,
                .nest_hash = s->hash,
                .flops = sh->op->flops,
            };
            st = sh->opts.evaluate(sh->opts.evaluate_ctx, &req, &r, diag);
            if (st != RLT_STATUS_OK && diag && diag->status == RLT_STATUS_OK)
                rlt_fail(diag, st, "the evaluator failed (%s) without saying why", rlt_status_str(st));
        }
        rlt_str_free(&text);
        rlt_sched_destroy(sched);
    } else {
        st = measure_nest(sh, &kernel, &r, diag);
    }
    if (st != RLT_STATUS_OK) return st;
    cache_store(sh, s->hash, &r, s);
    return RLT_STATUS_OK;
}

/* Fills s->hash and s's evaluation. */
static rlt_status evaluate(env_shared *sh, env_state *s, rlt_diag *diag)
{
    s->hash = rlt_nest_hash(&s->nest);
    return evaluate_hashed(sh, s, diag);
}

static double peak_norm(const env_shared *sh) { return sh->peak_gflops * sh->n_threads; }

static mask_entry *mask_slot(mask_entry *slots, size_t n_slots, uint64_t hash, int cursor)
{
    size_t i = (size_t)(hash ^ (uint64_t)cursor * 0x9e3779b97f4a7c15ull) & (n_slots - 1);
    while (slots[i].cursor >= 0 && (slots[i].hash != hash || slots[i].cursor != cursor)) i = (i + 1) & (n_slots - 1);
    return &slots[i];
}

/* Remembers a replay's mask; when the memo cannot grow (out of memory) the
 * mask is simply computed again next time. */
static void mask_remember(env_shared *sh, uint64_t hash, int cursor, uint32_t bits)
{
    if (2 * (sh->n_masks + 1) > sh->n_mask_slots) {
        size_t n = sh->n_mask_slots ? 2 * sh->n_mask_slots : CACHE_MIN_SLOTS;
        mask_entry *slots = rlt_malloc(n * sizeof *slots);
        if (!slots) return;
        for (size_t i = 0; i < n; i++) slots[i].cursor = -1;
        for (size_t i = 0; i < sh->n_mask_slots; i++)
            if (sh->masks[i].cursor >= 0)
                *mask_slot(slots, n, sh->masks[i].hash, sh->masks[i].cursor) = sh->masks[i];
        rlt_free(sh->masks);
        sh->masks = slots;
        sh->n_mask_slots = n;
    }
    *mask_slot(sh->masks, sh->n_mask_slots, hash, cursor) = (mask_entry){.hash = hash, .cursor = cursor, .bits = bits};
    sh->n_masks++;
}

/* s's mask: the legal actions; with a replay, of those only the ones whose
 * next state the dataset holds. A replay's states are few and revisited
 * all the time, and finding which next states it holds takes a hash per
 * action, so its masks are remembered by nest and cursor. */
static void state_mask(env_shared *sh, env_state *s)
{
    if (!sh->replay || s->is_done) {
        env_action_mask(s, s->mask);
        return;
    }
    const mask_entry *e = sh->n_mask_slots ? mask_slot(sh->masks, sh->n_mask_slots, s->hash, s->cursor) : NULL;
    if (e && e->cursor >= 0) {
        for (int a = 0; a < RLT_ENV_N_ACTIONS; a++) s->mask[a] = (e->bits >> a) & 1u;
        return;
    }
    uint64_t next_hash[RLT_ENV_N_ACTIONS];
    uint32_t bits = 0;
    env_action_mask_hashes(s, s->mask, next_hash);
    for (int a = 0; a < RLT_ENV_N_ACTIONS; a++) {
        if (s->mask[a] && env_action_changes_nest(a)) s->mask[a] = env_dataset_find(sh->replay, next_hash[a]) != NULL;
        bits |= (uint32_t)s->mask[a] << a;
    }
    mask_remember(sh, s->hash, s->cursor, bits);
}

/* ---- lifetime ----------------------------------------------------------- */

static void shared_free(env_shared *sh)
{
    if (!sh) return;
    rlt_free(sh->slots);
    rlt_free(sh->masks);
    env_dataset_destroy(sh->replay);
    rlt_workload_destroy(sh->workload);
    rlt_op_destroy(sh->op);
    rlt_free(sh->replay_path);
    rlt_free(sh->cache_dir);
    rlt_free(sh->cflags);
    rlt_free(sh->cc);
    rlt_free(sh);
}

/* A copy of an optional string: *out NULL for NULL; false when out of memory. */
static bool dup_opt(const char *s, char **out)
{
    *out = s ? rlt_strdup(s) : NULL;
    return !s || *out;
}

/* A state at `nest` before any step; its hash is the caller's to set. */
static void state_init(env_state *s, const rlt_nest *nest)
{
    memset(s, 0, sizeof *s);
    s->nest = *nest;
    for (int k = 0; k < RLT_ENV_HISTORY; k++) s->history[k] = -1;
}

rlt_status rlt_env_create(const char *op_spec, const rlt_env_opts *opts, rlt_env **out, rlt_diag *diag)
{
    rlt_status st = RLT_STATUS_OK;
    env_shared *sh = NULL;
    rlt_env *env = NULL;
    rlt_env_opts o = opts ? *opts : (rlt_env_opts){0};
    *out = NULL;
    if (!op_spec) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "no op spec given");
    if (o.n_threads < 0 || o.n_threads > RLT_MAX_THREADS || o.repeat < 0 || !(o.min_repeat_ms >= 0) ||
        !(o.timeout_s >= 0) || !(o.peak_gflops >= 0) || !isfinite(o.peak_gflops) || o.max_steps < 0 ||
        !isfinite(o.min_repeat_ms) || !isfinite(o.timeout_s))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "env options out of range: n_threads %d (0..%d), repeat %d (>= 0), min_repeat_ms %g, "
                        "timeout_s %g, peak_gflops %g (finite, >= 0), max_steps %d (>= 0)",
                        o.n_threads, RLT_MAX_THREADS, o.repeat, o.min_repeat_ms, o.timeout_s, o.peak_gflops,
                        o.max_steps);
    if (o.evaluate && o.replay_path)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "env options: an evaluator and a replay dataset (%s) were both given; a replay answers "
                        "every evaluation itself: give one of them",
                        o.replay_path);
    if (!(sh = rlt_calloc(1, sizeof *sh)) || !(env = rlt_calloc(1, sizeof *env))) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating an env");
        goto cleanup;
    }
    sh->n_refs = 1;
    if ((st = rlt_op_parse(op_spec, &sh->op, diag)) != RLT_STATUS_OK) goto cleanup;
    if (!dup_opt(o.cc, &sh->cc) || !dup_opt(o.cflags, &sh->cflags) || !dup_opt(o.cache_dir, &sh->cache_dir) ||
        !dup_opt(o.replay_path, &sh->replay_path)) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating an env");
        goto cleanup;
    }
    o.cc = sh->cc;
    o.cflags = sh->cflags;
    o.cache_dir = sh->cache_dir;
    o.replay_path = sh->replay_path;
    sh->opts = o;
    sh->n_threads = o.n_threads > 0 ? o.n_threads : 1;
    if (o.replay_path) {
        if ((st = env_dataset_load(o.replay_path, sh->op, &sh->replay, diag)) != RLT_STATUS_OK) goto cleanup;
        int n = env_dataset_n_threads(sh->replay);
        if (o.n_threads > 0 && o.n_threads != n) {
            st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                          "the replay dataset %s was measured with %d thread%s, the env asks for %d (give %d, or "
                          "0 for the dataset's)",
                          o.replay_path, n, n == 1 ? "" : "s", o.n_threads, n);
            goto cleanup;
        }
        sh->n_threads = n;
    }
    sh->bopts = (rlt_build_opts){.cc = sh->cc, .cflags = sh->cflags, .cache_dir = sh->cache_dir};
    sh->ropts = (rlt_run_opts){
        .repeat = o.repeat > 0 ? o.repeat : 3,
        .min_repeat_ms = o.min_repeat_ms > 0 ? o.min_repeat_ms : 10.0,
        .timeout_s = o.timeout_s > 0 ? o.timeout_s : 10.0,
        .n_threads = sh->n_threads,
    };
    env->shared = sh;
    rlt_nest nest;
    rlt_nest_init(&nest, sh->op);
    state_init(&env->state, &nest);
    env->state.hash = sh->start_hash = rlt_nest_hash(&nest);
    *out = env;
    return RLT_STATUS_OK;

cleanup:
    shared_free(sh);
    rlt_free(env);
    return st;
}

void rlt_env_destroy(rlt_env *env)
{
    if (!env) return;
    if (--env->shared->n_refs == 0) shared_free(env->shared);
    rlt_free(env);
}

rlt_status rlt_env_clone(const rlt_env *env, rlt_env **out, rlt_diag *diag)
{
    *out = NULL;
    rlt_env *c = rlt_malloc(sizeof *c);
    if (!c) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory cloning an env");
    *c = *env;
    c->shared->n_refs++;
    *out = c;
    return RLT_STATUS_OK;
}

void rlt_env_restore(rlt_env *dst, const rlt_env *src)
{
    RLT_ASSERT(dst->shared == src->shared);
    if (dst == src) return;
    dst->is_reset = src->is_reset;
    dst->state = src->state;
}

/* The public calls that change envs keep a failure's message in each of
 * them (rlt_env_last_error) and hand it to the caller's diag once. */
static rlt_status noted(rlt_env *const *envs, int n, rlt_status st, const rlt_diag *d, rlt_diag *diag)
{
    for (int i = 0; envs && i < n; i++)
        if (envs[i]) rlt_diag_keep(envs[i]->last_error, sizeof envs[i]->last_error, st, d, NULL);
    if (st != RLT_STATUS_OK && diag && diag->status == RLT_STATUS_OK) *diag = *d;
    return st;
}

const char *rlt_env_last_error(const rlt_env *env) { return env->last_error; }

/* ---- episodes ----------------------------------------------------------- */

/* Settles the family's peak at its first reset (opts.peak_gflops, or the
 * measured one). */
static rlt_status settle_peak(env_shared *sh, rlt_diag *diag)
{
    if (sh->peak_gflops > 0) return RLT_STATUS_OK;
    double peak = sh->opts.peak_gflops;
    rlt_status st;
    if (peak <= 0 && sh->replay) peak = env_dataset_peak_gflops(sh->replay);
    if (peak <= 0 && (st = env_peak_get(&sh->bopts, &peak, NULL, diag)) != RLT_STATUS_OK) {
        rlt_diag_prefix(diag, "cannot settle the peak (pass rlt_env_opts.peak_gflops to skip measuring it)");
        return st;
    }
    sh->peak_gflops = peak;
    return RLT_STATUS_OK;
}

/* The first state of an episode of env at `nest`, whose rlt_nest_hash is
 * `hash`, into *out (evaluated, its mask made); env is left as it was (its
 * family's peak is settled, its cache may grow). */
static rlt_status start_state(const rlt_env *env, const rlt_nest *nest, uint64_t hash, env_state *out,
                              rlt_diag *diag)
{
    env_shared *sh = env->shared;
    rlt_status st = settle_peak(sh, diag);
    if (st != RLT_STATUS_OK) return st;
    state_init(out, nest);
    out->hash = hash;
    if ((st = evaluate_hashed(sh, out, diag)) != RLT_STATUS_OK) return st;
    state_mask(sh, out);
    return RLT_STATUS_OK;
}

/* start_state at the op's default nest, where a plain reset starts. */
static rlt_status default_start_state(const rlt_env *env, env_state *out, rlt_diag *diag)
{
    rlt_nest nest;
    rlt_nest_init(&nest, env->shared->op);
    return start_state(env, &nest, env->shared->start_hash, out, diag);
}

/* Starts env's episode at `nest`, whose rlt_nest_hash is `hash`. */
static rlt_status reset_to(rlt_env *env, const rlt_nest *nest, uint64_t hash, rlt_diag *diag)
{
    env_state s;
    rlt_status st = start_state(env, nest, hash, &s, diag);
    if (st != RLT_STATUS_OK) return st;
    env->state = s;
    env->is_reset = true;
    return RLT_STATUS_OK;
}

/* The nest a start schedule makes (NULL: the op's default nest), checked
 * to be one the env can express; the accumulator is the env's to place. */
static rlt_status start_nest(const env_shared *sh, const char *schedule, rlt_nest *out, rlt_diag *diag)
{
    if (!schedule) {
        rlt_nest_init(out, sh->op);
        return RLT_STATUS_OK;
    }
    rlt_sched *s = NULL;
    rlt_status st = rlt_sched_parse(schedule, "schedule", &s, diag);
    if (st == RLT_STATUS_OK) st = rlt_sched_apply(s, sh->op, out, diag);
    if (st == RLT_STATUS_OK) env_nest_drop_placed(out);
    if (st == RLT_STATUS_OK) st = env_nest_check_expressible(out, diag);
    rlt_sched_destroy(s);
    return st;
}

static rlt_status env_reset(rlt_env *env, rlt_diag *diag)
{
    rlt_nest nest;
    rlt_nest_init(&nest, env->shared->op);
    return reset_to(env, &nest, env->shared->start_hash, diag);
}

rlt_status rlt_env_reset(rlt_env *env, rlt_diag *diag)
{
    rlt_diag d;
    d.status = RLT_STATUS_OK;
    d.message[0] = '\0';
    return noted(&env, 1, env_reset(env, &d), &d, diag);
}

static rlt_status env_reset_schedule(rlt_env *env, const char *schedule, rlt_diag *diag)
{
    rlt_nest nest;
    rlt_status st = start_nest(env->shared, schedule ? schedule : "", &nest, diag);
    if (st != RLT_STATUS_OK) return st;
    return reset_to(env, &nest, rlt_nest_hash(&nest), diag);
}

rlt_status rlt_env_reset_schedule(rlt_env *env, const char *schedule, rlt_diag *diag)
{
    rlt_diag d;
    d.status = RLT_STATUS_OK;
    d.message[0] = '\0';
    return noted(&env, 1, env_reset_schedule(env, schedule, &d), &d, diag);
}

/* The state that `cur` (a state of family sh) reaches by `action`, into
 * *next; cur is left as it was (the family's cache and mask memo may
 * grow). The transition, the new nest's evaluation (the cache, else the
 * evaluator), the history and the next mask. Refusals and failures:
 * rlt_env_step's. */
static rlt_status state_step(env_shared *sh, const env_state *cur, int action, env_state *next, rlt_diag *diag)
{
    if (cur->is_done)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "the episode is over (stop, or max_steps reached): call rlt_env_reset to start another");
    rlt_status st = env_action_apply(cur, action, next, diag);
    if (st != RLT_STATUS_OK) return st;
    if (sh->replay && !cur->mask[action])
        return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                        "%s: the state it leads to is not in the replay dataset %s (the mask leaves it out)",
                        rlt_env_action_name(action), env_dataset_path(sh->replay));
    if (env_action_changes_nest(action) && (st = evaluate(sh, next, diag)) != RLT_STATUS_OK) return st;
    memmove(&next->history[1], &next->history[0], sizeof(int) * (RLT_ENV_HISTORY - 1));
    next->history[0] = action;
    next->n_steps++;
    if (sh->opts.max_steps > 0 && next->n_steps >= sh->opts.max_steps) next->is_done = true;
    state_mask(sh, next);
    return RLT_STATUS_OK;
}

/* The state env reaches by `action`, into *next; env is left as it was. */
static rlt_status step_to(const rlt_env *env, int action, env_state *next, rlt_diag *diag)
{
    if (!env->is_reset) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "call rlt_env_reset before stepping");
    return state_step(env->shared, &env->state, action, next, diag);
}

/* The reward of going from env's state to `next`. */
static double step_reward(const rlt_env *env, const env_state *next)
{
    return (next->gflops - env->state.gflops) / peak_norm(env->shared);
}

static rlt_status env_step(rlt_env *env, int action, double *out_reward, bool *out_done, rlt_diag *diag)
{
    if (out_reward) *out_reward = 0;
    if (out_done) *out_done = env->state.is_done;
    env_state next;
    rlt_status st = step_to(env, action, &next, diag);
    if (st != RLT_STATUS_OK) return st;
    if (out_reward) *out_reward = step_reward(env, &next);
    if (out_done) *out_done = next.is_done;
    env->state = next;
    return RLT_STATUS_OK;
}

rlt_status rlt_env_step(rlt_env *env, int action, double *out_reward, bool *out_done, rlt_diag *diag)
{
    rlt_diag d;
    d.status = RLT_STATUS_OK;
    d.message[0] = '\0';
    return noted(&env, 1, env_step(env, action, out_reward, out_done, &d), &d, diag);
}

static bool same_opt(const char *a, const char *b) { return a == b || (a && b && strcmp(a, b) == 0); }

static bool same_build_opts(const rlt_build_opts *a, const rlt_build_opts *b)
{
    return same_opt(a->cc, b->cc) && same_opt(a->cflags, b->cflags) && same_opt(a->cache_dir, b->cache_dir);
}

/* Measures the pending states pend[0 .. n-1] (next[pend[k]] of envs[pend[k]]),
 * all of one build configuration, in one batch, and caches the results. */
static rlt_status measure_pending(rlt_env *const *envs, const env_state *next, const int *pend, int n,
                                  rlt_diag *diag)
{
    rlt_status st = RLT_STATUS_OK;
    rlt_nest *nests = rlt_malloc((size_t)n * sizeof *nests);
    const rlt_workload **w_of = rlt_malloc((size_t)n * sizeof *w_of);
    const rlt_run_opts **ropts_of = rlt_malloc((size_t)n * sizeof *ropts_of);
    rlt_run_result *runs = rlt_malloc((size_t)n * sizeof *runs);
    if (!nests || !w_of || !ropts_of || !runs) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory measuring %d states", n);
        goto cleanup;
    }
    for (int k = 0; k < n; k++) {
        env_shared *sh = envs[pend[k]]->shared;
        env_kernel_nest(&next[pend[k]].nest, &nests[k]);
        w_of[k] = sh->workload;
        ropts_of[k] = &sh->ropts;
    }
    st = rlt_measure_nests_multi(w_of, &envs[pend[0]]->shared->bopts, ropts_of, n, nests, runs, diag);
    for (int k = 0; k < n && st == RLT_STATUS_OK; k++) {
        rlt_env_eval_result r = {.status = RLT_STATUS_OK};
        if ((st = eval_from_run(&runs[k], &r, diag)) == RLT_STATUS_OK)
            cache_store(envs[pend[k]]->shared, next[pend[k]].hash, &r, NULL);
    }

cleanup:
    rlt_free(runs);
    rlt_free(ropts_of);
    rlt_free(w_of);
    rlt_free(nests);
    return st;
}

/* Evaluates the states next[i] (of envs[i], their hash set) for which
 * want[i] holds and that no cache holds yet, each once: a caller's
 * evaluator is asked at once, measured states are built in one batch per
 * build configuration (compiler, flags, cache) and run one at a time. The
 * results go into the families' caches. */
static rlt_status evaluate_new_states(rlt_env *const *envs, env_state *next, const bool *want, int n,
                                      rlt_diag *diag)
{
    rlt_status st = RLT_STATUS_OK;
    int *pend = rlt_malloc((size_t)n * sizeof *pend);
    int *group = rlt_malloc((size_t)n * sizeof *group);
    int n_pend = 0;
    if (!pend || !group) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory evaluating %d states", n);
        goto cleanup;
    }
    for (int i = 0; i < n; i++) {
        env_shared *sh = envs[i]->shared;
        if (!want[i] || cache_find(sh, next[i].hash)) continue;
        bool is_pending = false;
        for (int k = 0; k < n_pend && !is_pending; k++)
            is_pending = envs[pend[k]]->shared == sh && next[pend[k]].hash == next[i].hash;
        if (is_pending) continue;
        if (sh->opts.evaluate || sh->replay) {
            if ((st = evaluate_hashed(sh, &next[i], diag)) != RLT_STATUS_OK) goto cleanup;
            continue;
        }
        if ((st = ensure_workload(sh, diag)) != RLT_STATUS_OK) goto cleanup;
        pend[n_pend++] = i;
    }
    while (n_pend > 0) {
        int n_group = 0, n_rest = 0;
        const rlt_build_opts *b = &envs[pend[0]]->shared->bopts;
        for (int k = 0; k < n_pend; k++) {
            if (same_build_opts(&envs[pend[k]]->shared->bopts, b))
                group[n_group++] = pend[k];
            else
                pend[n_rest++] = pend[k];
        }
        n_pend = n_rest;
        if ((st = measure_pending(envs, next, group, n_group, diag)) != RLT_STATUS_OK) goto cleanup;
    }

cleanup:
    rlt_free(group);
    rlt_free(pend);
    return st;
}

static rlt_status env_prefetch(rlt_env *const *envs, const int *actions, int n, rlt_diag *diag)
{
    RLT_ASSERT(n >= 0 && (n == 0 || (envs && actions)));
    if (n == 0) return RLT_STATUS_OK;
    env_state *next = rlt_malloc((size_t)n * sizeof *next);
    bool *want = rlt_calloc((size_t)n, sizeof *want);
    if (!next || !want) {
        rlt_free(want);
        rlt_free(next);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory prefetching %d steps", n);
    }
    for (int i = 0; i < n; i++) {
        const rlt_env *e = envs[i];
        if (!e->is_reset || e->state.is_done || !env_action_changes_nest(actions[i])) continue;
        if (e->shared->replay && (actions[i] < 0 || actions[i] >= RLT_ENV_N_ACTIONS || !e->state.mask[actions[i]]))
            continue; /* a state the dataset lacks: not a step that can be taken */
        if (env_action_apply(&e->state, actions[i], &next[i], NULL) != RLT_STATUS_OK) continue;
        next[i].hash = rlt_nest_hash(&next[i].nest);
        want[i] = true;
    }
    rlt_status st = evaluate_new_states(envs, next, want, n, diag);
    rlt_free(want);
    rlt_free(next);
    return st;
}

rlt_status rlt_env_prefetch(rlt_env *const *envs, const int *actions, int n, rlt_diag *diag)
{
    rlt_diag d;
    d.status = RLT_STATUS_OK;
    d.message[0] = '\0';
    return noted(envs, n, env_prefetch(envs, actions, n, &d), &d, diag);
}

static rlt_status env_reset_batch(rlt_env *const *envs, const char *const *schedules, int n, rlt_diag *diag)
{
    RLT_ASSERT(n >= 0 && (n == 0 || envs));
    if (n == 0) return RLT_STATUS_OK;
    rlt_status st = RLT_STATUS_OK;
    env_state *next = rlt_malloc((size_t)n * sizeof *next);
    bool *want = rlt_malloc((size_t)n * sizeof *want);
    if (!next || !want) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory resetting %d envs", n);
        goto cleanup;
    }
    for (int i = 0; i < n; i++) {
        const char *sched = schedules ? schedules[i] : NULL;
        if ((st = start_nest(envs[i]->shared, sched, &next[i].nest, diag)) != RLT_STATUS_OK) {
            rlt_diag_prefix(diag, "start schedule %d of %d", i + 1, n);
            goto cleanup;
        }
        next[i].hash = rlt_nest_hash(&next[i].nest);
        want[i] = true;
    }
    for (int i = 0; i < n; i++)
        if ((st = settle_peak(envs[i]->shared, diag)) != RLT_STATUS_OK) goto cleanup;
    if ((st = evaluate_new_states(envs, next, want, n, diag)) != RLT_STATUS_OK) goto cleanup;
    for (int i = 0; i < n; i++)
        if ((st = reset_to(envs[i], &next[i].nest, next[i].hash, diag)) != RLT_STATUS_OK) goto cleanup;

cleanup:
    rlt_free(want);
    rlt_free(next);
    return st;
}

rlt_status env_states_evaluate(rlt_env *env, env_state *states, int n, rlt_diag *diag)
{
    RLT_ASSERT(env->is_reset && n >= 0);
    rlt_status st = RLT_STATUS_OK;
    rlt_env **envs = rlt_malloc((size_t)n * sizeof *envs);
    bool *want = rlt_malloc((size_t)n * sizeof *want);
    if (!envs || !want) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory evaluating %d states", n);
        goto cleanup;
    }
    for (int i = 0; i < n; i++) {
        envs[i] = env;
        want[i] = true;
        states[i].hash = rlt_nest_hash(&states[i].nest);
    }
    if ((st = evaluate_new_states(envs, states, want, n, diag)) != RLT_STATUS_OK) goto cleanup;
    /* each is in the cache now, unless it could not grow: evaluate() then
     * measures that one again, alone */
    for (int i = 0; i < n && st == RLT_STATUS_OK; i++) st = evaluate(env->shared, &states[i], diag);

cleanup:
    rlt_free(want);
    rlt_free(envs);
    return st;
}

rlt_status rlt_env_reset_batch(rlt_env *const *envs, const char *const *schedules, int n, rlt_diag *diag)
{
    rlt_diag d;
    d.status = RLT_STATUS_OK;
    d.message[0] = '\0';
    return noted(envs, n, env_reset_batch(envs, schedules, n, &d), &d, diag);
}

/* ---- batches of steps: one call for many envs --------------------------- */

/* Fails when an env appears twice in envs[0 .. n-1], naming both positions.
 * Marks each env while looking (no allocation) and clears the marks. */
static rlt_status batch_envs_distinct(rlt_env *const *envs, int n, rlt_diag *diag)
{
    rlt_status st = RLT_STATUS_OK;
    int i = 0;
    for (; i < n; i++) {
        RLT_ASSERT(envs[i]);
        if (envs[i]->is_in_batch) break;
        envs[i]->is_in_batch = true;
    }
    if (i < n) {
        int first = 0;
        while (envs[first] != envs[i]) first++;
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "envs[%d] and envs[%d] of %d are the same env: a batch steps each env once (step it again in "
                      "another call)",
                      first, i, n);
    }
    for (int k = 0; k < i; k++) envs[k]->is_in_batch = false;
    return st;
}

/* What rlt_env_step(env, action) would refuse, without taking the step:
 * OK when it would be taken. RLT_ENV_ACTION_NONE asks only for a state to
 * observe; RLT_ENV_ACTION_RESET is refused nothing here. A legal action is
 * told by the mask; any other goes through step_to on a scratch state for
 * its error and message. */
static rlt_status step_refusal(const rlt_env *env, int action, rlt_diag *diag)
{
    if (action == RLT_ENV_ACTION_RESET) return RLT_STATUS_OK; /* its errors come with its start state */
    if (action == RLT_ENV_ACTION_NONE)
        return env->is_reset ? RLT_STATUS_OK
                             : rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "call rlt_env_reset before observing");
    const env_state *cur = &env->state;
    if (env->is_reset && !cur->is_done && action >= 0 && action < RLT_ENV_N_ACTIONS && cur->mask[action])
        return RLT_STATUS_OK;
    env_state scratch;
    return step_to(env, action, &scratch, diag);
}

/* Whether env's step by `request` (an action that step_refusal let
 * through, NONE or RESET) may still fail: a reset whose start state no
 * cache holds yet (it is evaluated, and the peak settled, as rlt_env_reset
 * does), or a step to a new nest that an evaluator scores or a measurement
 * times (a measured family's were prefetched, but a cache that could not
 * grow measures again). A replay's steps cannot (the mask keeps them
 * inside the dataset), nor can the steps that keep the nest (cursor moves,
 * stop). */
static bool step_may_fail(const rlt_env *env, int request)
{
    const env_shared *sh = env->shared;
    if (request == RLT_ENV_ACTION_RESET) return !(sh->peak_gflops > 0 && cache_find(sh, sh->start_hash));
    return request >= 0 && env_action_changes_nest(request) && !sh->replay;
}

/* A step the batch may give to rlt_env_prefetch: an action (not NONE or
 * RESET) to a new nest, in a family that measures its states. */
static bool step_is_measured(const rlt_env *env, int action)
{
    return action >= 0 && env_action_changes_nest(action) && !env->shared->opts.evaluate && !env->shared->replay;
}

/* rlt_env_prefetch of the pairs whose family measures its states and whose
 * action makes a new nest: their kernels are built in one batch. Pairs of
 * an evaluator's or a replay's family are left to their steps, which ask
 * the evaluator in the order single steps would. */
static rlt_status prefetch_measured(rlt_env *const *envs, const int *actions, int n, rlt_diag *diag)
{
    int n_measured = 0;
    for (int i = 0; i < n; i++) n_measured += step_is_measured(envs[i], actions[i]);
    if (n_measured == 0) return RLT_STATUS_OK;
    if (n_measured == n) return env_prefetch(envs, actions, n, diag);
    rlt_status st;
    rlt_env **sub_envs = rlt_malloc((size_t)n_measured * sizeof *sub_envs);
    int *sub_actions = rlt_malloc((size_t)n_measured * sizeof *sub_actions);
    if (!sub_envs || !sub_actions) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory stepping %d envs", n);
        goto cleanup;
    }
    for (int i = 0, k = 0; i < n; i++) {
        if (!step_is_measured(envs[i], actions[i])) continue;
        sub_envs[k] = envs[i];
        sub_actions[k++] = actions[i];
    }
    st = env_prefetch(sub_envs, sub_actions, n_measured, diag);

cleanup:
    rlt_free(sub_actions);
    rlt_free(sub_envs);
    return st;
}

/* Writes env's observation and mask as row i of obs and masks (either may
 * be NULL). The env must have been reset. */
static void observe_row(const rlt_env *env, int i, float *obs, unsigned char *masks)
{
    if (obs) env_observe(&env->state, peak_norm(env->shared), obs + (size_t)i * RLT_ENV_OBS_LEN);
    if (masks)
        for (int a = 0; a < RLT_ENV_N_ACTIONS; a++) masks[(size_t)i * RLT_ENV_N_ACTIONS + a] = env->state.mask[a];
}

/* The part of a state that is read, in runs of bytes: the nest's head and
 * variables in use, its loops in use, its accumulator, the rest of the
 * state up to the evaluation's message, the message up to its end, and
 * the rest. Not the nest's layouts: an env's nests never stage a tensor
 * (env_nest_check_expressible refuses it at a start, no action stages
 * one), so every state of every env, and a batch's zeroed scratch states,
 * have rlt_nest_init's. A batch moves states in and out of its scratch
 * states by these runs, a KiB or less rather than the ~9 KiB of an
 * assignment: what a step costs a batch whose states are out of cache. */
typedef struct state_runs {
    const char *at[6];
    size_t len[6];
} state_runs;

static state_runs state_runs_of(const env_state *s)
{
    const rlt_nest *n = &s->nest;
    size_t len = strnlen(s->eval_message, sizeof s->eval_message - 1) + 1;
    return (state_runs){
        .at = {(const char *)n, (const char *)&n->n_loops, (const char *)&n->acc_var, (const char *)&s->hash,
               s->eval_message, (const char *)&s->is_done},
        .len = {offsetof(rlt_nest, vars) + sizeof n->vars[0] * (size_t)n->n_vars,
                sizeof n->n_loops + sizeof n->loops[0] * (size_t)n->n_loops, sizeof n->acc_var,
                offsetof(env_state, eval_message) - offsetof(env_state, hash), len,
                sizeof *s - offsetof(env_state, is_done)},
    };
}

/* Copies the part of src that is read (state_runs_of) into dst; what lies
 * past it in dst is left as it was. */
static void state_copy_live(env_state *dst, const env_state *src)
{
    state_runs r = state_runs_of(src);
    for (int k = 0; k < 6; k++) memcpy((char *)dst + (r.at[k] - (const char *)src), r.at[k], r.len[k]);
}

/* Where a batch of steps writes: row i is env i's; each may be NULL. */
typedef struct batch_rows {
    double *rewards;
    bool *dones;
    float *obs;
    unsigned char *masks;
    double *gflops;
} batch_rows;

/* Writes row i: `reward`, and the done flag, observation, mask and GFLOP/s
 * of s, a state of family sh that an episode is in. */
static void write_row(const env_shared *sh, const env_state *s, double reward, int i, const batch_rows *rows)
{
    if (rows->rewards) rows->rewards[i] = reward;
    if (rows->dones) rows->dones[i] = s->is_done;
    if (rows->obs) env_observe(s, peak_norm(sh), rows->obs + (size_t)i * RLT_ENV_OBS_LEN);
    if (rows->masks)
        for (int a = 0; a < RLT_ENV_N_ACTIONS; a++) rows->masks[(size_t)i * RLT_ENV_N_ACTIONS + a] = s->mask[a];
    if (rows->gflops) rows->gflops[i] = s->gflops;
}

/* What state_pack writes at most. */
#define STATE_PACKED_MAX (sizeof(env_state) + 12 * sizeof(size_t))

/* The part of s that is read, packed into out: each run of state_runs_of
 * after its offset and length (two size_t); returns the bytes written, at
 * most STATE_PACKED_MAX. A batch keeps the states it may have to put back
 * this way, densely, so that they stay in cache. */
static size_t state_pack(const env_state *s, unsigned char *out)
{
    state_runs r = state_runs_of(s);
    size_t k = 0;
    for (int i = 0; i < 6; i++) {
        size_t offset = (size_t)(r.at[i] - (const char *)s);
        memcpy(out + k, &offset, sizeof offset);
        memcpy(out + k + sizeof offset, &r.len[i], sizeof r.len[i]);
        memcpy(out + k + 2 * sizeof offset, r.at[i], r.len[i]);
        k += 2 * sizeof offset + r.len[i];
    }
    return k;
}

/* Unpacks what state_pack wrote into s, as state_copy_live would copy it. */
static void state_unpack(env_state *s, const unsigned char *in)
{
    size_t k = 0;
    for (int i = 0; i < 6; i++) {
        size_t offset, len;
        memcpy(&offset, in + k, sizeof offset);
        memcpy(&len, in + k + sizeof offset, sizeof len);
        memcpy((char *)s + offset, in + k + 2 * sizeof offset, len);
        k += 2 * sizeof offset + len;
    }
}

/* What a batch works in: two scratch states each step goes through, and
 * what it keeps to put its envs back when a step fails: the state
 * (state_pack) and reset flag each changed env had, for the envs before
 * the last step that may fail (`bytes` holds up to STATE_PACKED_MAX a
 * state). NULL: batch_take makes its own. */
typedef struct batch_work {
    env_state *scratch; /* 2, zeroed once: what live copies leave alone is defined */
    unsigned char *bytes;
    size_t *offsets;    /* where each env's packed state starts in bytes */
    bool *was_reset;
} batch_work;

/* Takes requests[i] in envs[i] (distinct), in order: an action that
 * step_refusal let through, RLT_ENV_ACTION_NONE or RLT_ENV_ACTION_RESET.
 * Each env's state is copied into a scratch state (state_copy_live), the
 * step taken there, and the new state copied back: the batch touches of
 * each env's state little more than its part in use. Before an env
 * changes whose step comes before one that may fail (step_may_fail), its
 * state is packed into `work`; a failure (its env's position prefixed)
 * puts every changed env back, and what was evaluated stays cached. Rows:
 * written as each env steps when `is_rows_early` or when no step may
 * fail; otherwise once every step has been taken, so that a failed call
 * writes none. `work`'s NULL arrays are allocated here, for the call. */
static rlt_status batch_take(rlt_env *const *envs, int n, const int *requests, const batch_rows *rows,
                             bool is_rows_early, batch_work work, rlt_diag *diag)
{
    rlt_status st = RLT_STATUS_OK;
    int last_risky = -1;
    for (int i = n - 1; i >= 0 && last_risky < 0; i--)
        if (step_may_fail(envs[i], requests[i])) last_risky = i;
    bool is_late = last_risky >= 0 && !is_rows_early;
    unsigned char *own_bytes = NULL;
    size_t *own_offsets = NULL, n_undo_bytes = 0;
    bool *own_was_reset = NULL;
    double *late_rewards = NULL;
    env_state *own_scratch = NULL;
    if (!work.scratch) work.scratch = own_scratch = rlt_calloc(2, sizeof *own_scratch);
    if (last_risky > 0 && !work.bytes) {
        work.bytes = own_bytes = rlt_malloc((size_t)last_risky * STATE_PACKED_MAX);
        work.offsets = own_offsets = rlt_malloc((size_t)last_risky * sizeof *own_offsets);
        work.was_reset = own_was_reset = rlt_malloc((size_t)last_risky * sizeof *own_was_reset);
    }
    if (is_late) late_rewards = rlt_malloc((size_t)n * sizeof *late_rewards);
    if (!work.scratch || (last_risky > 0 && (!work.bytes || !work.offsets || !work.was_reset)) ||
        (is_late && !late_rewards)) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory stepping %d envs", n);
        goto cleanup;
    }
    env_state *cur = &work.scratch[0], *next = &work.scratch[1];
    for (int i = 0; i < n; i++) {
        rlt_env *env = envs[i];
        int r = requests[i];
        const env_state *now = &env->state;
        double reward = 0;
        if (r != RLT_ENV_ACTION_NONE) {
            if (r == RLT_ENV_ACTION_RESET) {
                st = default_start_state(env, next, diag);
            } else {
                state_copy_live(cur, &env->state);
                st = state_step(env->shared, cur, r, next, diag);
            }
            if (st != RLT_STATUS_OK) {
                RLT_ASSERT(i <= last_risky); /* the others were checked and evaluate nothing new */
                rlt_diag_prefix(diag, "envs[%d] of %d", i, n);
                for (int k = i - 1; k >= 0; k--) {
                    if (requests[k] == RLT_ENV_ACTION_NONE) continue;
                    state_unpack(&envs[k]->state, work.bytes + work.offsets[k]);
                    envs[k]->is_reset = work.was_reset[k];
                }
                goto cleanup;
            }
            if (i < last_risky) {
                work.offsets[i] = n_undo_bytes;
                n_undo_bytes += state_pack(r == RLT_ENV_ACTION_RESET ? &env->state : cur, work.bytes + n_undo_bytes);
                work.was_reset[i] = env->is_reset;
            }
            if (r != RLT_ENV_ACTION_RESET) reward = step_reward(env, next);
            state_copy_live(&env->state, next);
            env->is_reset = true;
            now = next;
        }
        if (is_late)
            late_rewards[i] = reward;
        else
            write_row(env->shared, now, reward, i, rows);
    }
    for (int i = 0; is_late && i < n; i++) write_row(envs[i]->shared, &envs[i]->state, late_rewards[i], i, rows);

cleanup:
    rlt_free(late_rewards);
    rlt_free(own_was_reset);
    rlt_free(own_offsets);
    rlt_free(own_bytes);
    rlt_free(own_scratch);
    return st;
}

static rlt_status env_step_batch(rlt_env *const *envs, int n, const int *actions, double *rewards, bool *dones,
                                 float *obs, unsigned char *masks, rlt_diag *diag)
{
    RLT_ASSERT(n >= 0 && (n == 0 || (envs && actions)));
    if (n == 0) return RLT_STATUS_OK;
    rlt_status st = batch_envs_distinct(envs, n, diag);
    if (st != RLT_STATUS_OK) return st;
    /* every refusal before any work, so that a refused batch changes nothing */
    for (int i = 0; i < n; i++) {
        if ((st = step_refusal(envs[i], actions[i], diag)) != RLT_STATUS_OK) {
            rlt_diag_prefix(diag, "envs[%d] of %d", i, n);
            return st;
        }
    }
    if ((st = prefetch_measured(envs, actions, n, diag)) != RLT_STATUS_OK) return st;
    batch_rows rows = {.rewards = rewards, .dones = dones, .obs = obs, .masks = masks};
    return batch_take(envs, n, actions, &rows, false, (batch_work){0}, diag);
}

rlt_status rlt_env_step_batch(rlt_env *const *envs, int n, const int *actions, double *rewards, bool *dones,
                              float *obs, unsigned char *masks, rlt_diag *diag)
{
    rlt_diag d;
    d.status = RLT_STATUS_OK;
    d.message[0] = '\0';
    return noted(envs, n, env_step_batch(envs, n, actions, rewards, dones, obs, masks, &d), &d, diag);
}

rlt_status rlt_env_observe_batch(rlt_env *const *envs, int n, float *obs, unsigned char *masks, rlt_diag *diag)
{
    RLT_ASSERT(n >= 0 && (n == 0 || envs));
    for (int i = 0; i < n; i++)
        if (!envs[i]->is_reset)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "envs[%d] of %d: call rlt_env_reset before observing",
                            i, n);
    for (int i = 0; i < n; i++) observe_row(envs[i], i, obs, masks);
    return RLT_STATUS_OK;
}

void rlt_env_gflops_batch(rlt_env *const *envs, int n, double *out)
{
    RLT_ASSERT(n >= 0 && (n == 0 || (envs && out)));
    for (int i = 0; i < n; i++) out[i] = rlt_env_gflops(envs[i]);
}

/* ---- vector envs ---------------------------------------------------------- */

struct rlt_env_vec {
    int n;
    rlt_env_vec_opts opts;
    rlt_env **envs;      /* borrowed */
    int64_t *n_steps;    /* steps of each episode, no-ops included */
    bool *needs_reset;   /* NEXT_STEP: the episode ended, the next step resets the env */
    int *requests;       /* a step's: the action, NONE (a no-op) or RESET per env */
    bool *is_legal;      /* a step's */
    double *rewards;     /* a step's */
    bool *dones;         /* a step's: each env's done flag after it (dense: read without the envs' states) */
    batch_work work;     /* batch_take's: 2 scratch states, n packed states, offsets and flags */
};

rlt_status rlt_env_vec_create(rlt_env *const *envs, int n, const rlt_env_vec_opts *opts, rlt_env_vec **out,
                              rlt_diag *diag)
{
    rlt_env_vec_opts o = opts ? *opts : (rlt_env_vec_opts){0};
    *out = NULL;
    if (n < 1 || !envs)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "a vector env needs 1 env or more, got %d", n);
    if (o.max_steps < 0 || (unsigned)o.autoreset >= RLT_ENV_AUTORESET_COUNT ||
        (unsigned)o.masked_action >= RLT_ENV_MASKED_COUNT)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "vector env options out of range: max_steps %d (>= 0), autoreset %d (0..%d), masked_action %d "
                        "(0..%d)",
                        o.max_steps, (int)o.autoreset, RLT_ENV_AUTORESET_COUNT - 1, (int)o.masked_action,
                        RLT_ENV_MASKED_COUNT - 1);
    rlt_status st = batch_envs_distinct(envs, n, diag);
    if (st != RLT_STATUS_OK) return st;
    rlt_env_vec *v = rlt_calloc(1, sizeof *v);
    if (!v) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory making a vector env of %d envs", n);
    v->n = n;
    v->opts = o;
    v->envs = rlt_malloc((size_t)n * sizeof *v->envs);
    v->n_steps = rlt_calloc((size_t)n, sizeof *v->n_steps);
    v->needs_reset = rlt_calloc((size_t)n, sizeof *v->needs_reset);
    v->requests = rlt_malloc((size_t)n * sizeof *v->requests);
    v->is_legal = rlt_malloc((size_t)n * sizeof *v->is_legal);
    v->rewards = rlt_malloc((size_t)n * sizeof *v->rewards);
    v->dones = rlt_malloc((size_t)n * sizeof *v->dones);
    v->work.scratch = rlt_calloc(2, sizeof *v->work.scratch);
    v->work.bytes = rlt_malloc((size_t)n * STATE_PACKED_MAX);
    v->work.offsets = rlt_malloc((size_t)n * sizeof *v->work.offsets);
    v->work.was_reset = rlt_malloc((size_t)n * sizeof *v->work.was_reset);
    if (!v->envs || !v->n_steps || !v->needs_reset || !v->requests || !v->is_legal || !v->rewards || !v->dones ||
        !v->work.scratch || !v->work.bytes || !v->work.offsets || !v->work.was_reset) {
        rlt_env_vec_destroy(v);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory making a vector env of %d envs", n);
    }
    memcpy(v->envs, envs, (size_t)n * sizeof *v->envs);
    *out = v;
    return RLT_STATUS_OK;
}

void rlt_env_vec_destroy(rlt_env_vec *vec)
{
    if (!vec) return;
    rlt_free(vec->work.was_reset);
    rlt_free(vec->work.offsets);
    rlt_free(vec->work.bytes);
    rlt_free(vec->work.scratch);
    rlt_free(vec->dones);
    rlt_free(vec->rewards);
    rlt_free(vec->is_legal);
    rlt_free(vec->requests);
    rlt_free(vec->needs_reset);
    rlt_free(vec->n_steps);
    rlt_free(vec->envs);
    rlt_free(vec);
}

/* Writes row i of `out` for env i as it stands (reset), with the flags and
 * counts given; terminated is the env's done flag. */
static void vec_write_row(const rlt_env_vec *v, int i, double reward, bool is_truncated, bool is_legal,
                          const rlt_env_vec_out *out)
{
    const rlt_env *env = v->envs[i];
    batch_rows rows = {.rewards = out->rewards, .dones = out->terminated, .obs = out->obs, .masks = out->masks,
                       .gflops = out->gflops};
    write_row(env->shared, &env->state, reward, i, &rows);
    if (out->truncated) out->truncated[i] = is_truncated;
    if (out->is_legal) out->is_legal[i] = is_legal;
    if (out->n_steps) out->n_steps[i] = v->n_steps[i];
}

/* Whether env i's episode is truncated: max_steps steps, not terminated. */
static bool vec_is_truncated(const rlt_env_vec *v, int i)
{
    return v->opts.max_steps > 0 && v->n_steps[i] >= v->opts.max_steps && !v->envs[i]->state.is_done;
}

static rlt_status vec_reset(rlt_env_vec *v, const bool *which, const char *const *schedules,
                            const rlt_env_vec_out *out, rlt_diag *diag)
{
    rlt_status st = RLT_STATUS_OK;
    int n = v->n, n_reset = 0;
    for (int i = 0; i < n; i++) {
        if (!which || which[i]) {
            n_reset++;
        } else if (!v->envs[i]->is_reset) {
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "envs[%d] of %d was never reset: the first reset of a vector env must reset every env", i,
                            n);
        }
    }
    rlt_env **envs = rlt_malloc((size_t)(n_reset ? n_reset : 1) * sizeof *envs);
    const char **scheds = rlt_malloc((size_t)(n_reset ? n_reset : 1) * sizeof *scheds);
    if (!envs || !scheds) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory resetting %d envs", n_reset);
        goto cleanup;
    }
    for (int i = 0, k = 0; i < n; i++) {
        if (which && !which[i]) continue;
        envs[k] = v->envs[i];
        scheds[k++] = schedules ? schedules[i] : NULL;
    }
    if ((st = env_reset_batch(envs, scheds, n_reset, diag)) != RLT_STATUS_OK) goto cleanup;
    for (int i = 0; i < n; i++) {
        if (which && !which[i]) continue;
        v->n_steps[i] = 0;
        v->needs_reset[i] = false;
    }
    for (int i = 0; out && i < n; i++) vec_write_row(v, i, 0, vec_is_truncated(v, i), true, out);

cleanup:
    rlt_free(scheds);
    rlt_free(envs);
    return st;
}

rlt_status rlt_env_vec_reset(rlt_env_vec *vec, const bool *which, const char *const *schedules,
                             const rlt_env_vec_out *out, rlt_diag *diag)
{
    rlt_diag d;
    d.status = RLT_STATUS_OK;
    d.message[0] = '\0';
    return noted(vec->envs, vec->n, vec_reset(vec, which, schedules, out, &d), &d, diag);
}

/* The list of action names, for messages: "up, down, ..., stop". */
static void action_names_list(char *out, size_t cap)
{
    size_t len = 0;
    out[0] = '\0';
    for (int a = 0; a < RLT_ENV_N_ACTIONS && len < cap; a++)
        len += (size_t)snprintf(out + len, cap - len, "%s%s", a ? ", " : "", rlt_env_action_name(a));
}

/* Turns the step's actions into batch_take's requests (RESET where an
 * autoreset is pending, NONE for a masked action's no-op), refusing what
 * the options refuse; nothing changes. */
static rlt_status vec_requests(rlt_env_vec *v, const int64_t *actions, rlt_diag *diag)
{
    int n = v->n;
    for (int i = 0; i < n; i++) {
        if (v->needs_reset[i] || (actions[i] >= 0 && actions[i] < RLT_ENV_N_ACTIONS)) continue;
        char names[256];
        action_names_list(names, sizeof names);
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "actions[%d] = %" PRId64 " is out of range: 0..%d (%s)", i,
                        actions[i], RLT_ENV_N_ACTIONS - 1, names);
    }
    for (int i = 0; i < n; i++) {
        const rlt_env *env = v->envs[i];
        v->is_legal[i] = true;
        if (v->needs_reset[i]) {
            v->requests[i] = RLT_ENV_ACTION_RESET;
            continue;
        }
        int a = (int)actions[i];
        if (env->is_reset && !env->state.is_done && env->state.mask[a]) {
            v->requests[i] = a;
        } else if (env->is_reset && !env->state.is_done && v->opts.masked_action == RLT_ENV_MASKED_NOOP) {
            v->requests[i] = RLT_ENV_ACTION_NONE;
            v->is_legal[i] = false;
        } else {
            rlt_status st = env->is_reset ? step_refusal(env, a, diag)
                                          : rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                                                     "call rlt_env_vec_reset before stepping");
            RLT_ASSERT(st != RLT_STATUS_OK); /* the mask is what rlt_env_step takes */
            rlt_diag_prefix(diag, "envs[%d] of %d", i, n);
            return st;
        }
    }
    return RLT_STATUS_OK;
}

/* SAME_STEP: makes sure that every env's reset after the step is a cache
 * look-up (the start state evaluated, the peak settled), so that it cannot
 * fail once envs have stepped; nothing changes. */
static rlt_status vec_starts_ready(const rlt_env_vec *v, rlt_diag *diag)
{
    for (int i = 0; i < v->n; i++) {
        const rlt_env *env = v->envs[i];
        if (!step_may_fail(env, RLT_ENV_ACTION_RESET)) continue;
        env_state scratch;
        rlt_status st = default_start_state(env, &scratch, diag);
        if (st != RLT_STATUS_OK) {
            rlt_diag_prefix(diag, "envs[%d] of %d: the start state its reset would reach", i, v->n);
            return st;
        }
    }
    return RLT_STATUS_OK;
}

/* SAME_STEP: env i's episode ended in this step: its rows go to `final`,
 * it starts again, and its rows of `out` become the new start's (reward,
 * terminated and truncated stay the step's). */
static rlt_status vec_restart(rlt_env_vec *v, int i, const rlt_env_vec_out *out, const rlt_env_vec_out *final,
                              rlt_diag *diag)
{
    rlt_env *env = v->envs[i];
    bool is_terminated = env->state.is_done, is_truncated = vec_is_truncated(v, i);
    if (final) vec_write_row(v, i, v->rewards[i], is_truncated, v->is_legal[i], final);
    env_state next;
    rlt_status st = default_start_state(env, &next, diag);
    if (st != RLT_STATUS_OK) {
        rlt_diag_prefix(diag, "envs[%d] of %d: its reset after the step", i, v->n);
        return st;
    }
    state_copy_live(&env->state, &next);
    v->n_steps[i] = 0;
    vec_write_row(v, i, v->rewards[i], is_truncated, true, out);
    if (out->terminated) out->terminated[i] = is_terminated;
    return RLT_STATUS_OK;
}

/* Zeros in every row of `out`. */
static void vec_out_zero(const rlt_env_vec_out *out, int n)
{
    size_t k = (size_t)n;
    if (out->obs) memset(out->obs, 0, k * RLT_ENV_OBS_LEN * sizeof *out->obs);
    if (out->masks) memset(out->masks, 0, k * RLT_ENV_N_ACTIONS);
    if (out->rewards) memset(out->rewards, 0, k * sizeof *out->rewards);
    if (out->terminated) memset(out->terminated, 0, k * sizeof *out->terminated);
    if (out->truncated) memset(out->truncated, 0, k * sizeof *out->truncated);
    if (out->is_legal) memset(out->is_legal, 0, k * sizeof *out->is_legal);
    if (out->gflops) memset(out->gflops, 0, k * sizeof *out->gflops);
    if (out->n_steps) memset(out->n_steps, 0, k * sizeof *out->n_steps);
}

static rlt_status vec_step(rlt_env_vec *v, const int64_t *actions, const rlt_env_vec_out *out,
                           const rlt_env_vec_out *final, rlt_diag *diag)
{
    RLT_ASSERT(actions);
    static const rlt_env_vec_out none = {0};
    if (!out) out = &none;
    int n = v->n;
    bool is_same_step = v->opts.autoreset == RLT_ENV_AUTORESET_SAME_STEP;
    rlt_status st = vec_requests(v, actions, diag);
    if (st == RLT_STATUS_OK && is_same_step) st = vec_starts_ready(v, diag);
    if (st == RLT_STATUS_OK) st = prefetch_measured(v->envs, v->requests, n, diag);
    batch_rows rows = {
        .rewards = v->rewards, .dones = v->dones, .obs = out->obs, .masks = out->masks, .gflops = out->gflops};
    if (st == RLT_STATUS_OK) st = batch_take(v->envs, n, v->requests, &rows, true, v->work, diag);
    if (st != RLT_STATUS_OK) return st;
    if (is_same_step && final) vec_out_zero(final, n);
    for (int i = 0; i < n; i++) {
        v->n_steps[i] = v->requests[i] == RLT_ENV_ACTION_RESET ? 0 : v->n_steps[i] + 1;
        bool is_terminated = v->dones[i];
        bool is_truncated = v->opts.max_steps > 0 && v->n_steps[i] >= v->opts.max_steps && !is_terminated;
        if (out->rewards) out->rewards[i] = v->rewards[i];
        if (out->terminated) out->terminated[i] = is_terminated;
        if (out->truncated) out->truncated[i] = is_truncated;
        if (out->is_legal) out->is_legal[i] = v->is_legal[i];
        if (out->n_steps) out->n_steps[i] = v->n_steps[i];
        bool has_ended = is_terminated || is_truncated;
        v->needs_reset[i] = has_ended && v->opts.autoreset == RLT_ENV_AUTORESET_NEXT_STEP;
        if (has_ended && is_same_step && (st = vec_restart(v, i, out, final, diag)) != RLT_STATUS_OK) return st;
    }
    return RLT_STATUS_OK;
}

rlt_status rlt_env_vec_step(rlt_env_vec *vec, const int64_t *actions, const rlt_env_vec_out *out,
                            const rlt_env_vec_out *final, rlt_diag *diag)
{
    rlt_diag d;
    d.status = RLT_STATUS_OK;
    d.message[0] = '\0';
    return noted(vec->envs, vec->n, vec_step(vec, actions, out, final, &d), &d, diag);
}

rlt_status rlt_env_observe(const rlt_env *env, float *out, size_t n_floats, rlt_diag *diag)
{
    if (!env->is_reset) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "call rlt_env_reset before observing");
    if (n_floats < RLT_ENV_OBS_LEN)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "the observation needs %d floats, got room for %zu",
                        RLT_ENV_OBS_LEN, n_floats);
    env_observe(&env->state, peak_norm(env->shared), out);
    return RLT_STATUS_OK;
}

void rlt_env_action_mask(const rlt_env *env, bool mask[RLT_ENV_N_ACTIONS])
{
    for (int a = 0; a < RLT_ENV_N_ACTIONS; a++) mask[a] = env->is_reset && env->state.mask[a];
}

/* ---- accessors ---------------------------------------------------------- */

bool rlt_env_is_done(const rlt_env *env) { return env->state.is_done; }

bool rlt_env_is_reset(const rlt_env *env) { return env->is_reset; }

double rlt_env_gflops(const rlt_env *env) { return env->is_reset ? env->state.gflops : 0.0; }

rlt_status rlt_env_eval_status(const rlt_env *env, const char **out_message)
{
    if (out_message) *out_message = env->is_reset ? env->state.eval_message : "not evaluated: call rlt_env_reset";
    return env->is_reset ? env->state.eval_status : RLT_STATUS_INVALID_ARGUMENT;
}

double rlt_env_peak_gflops(const rlt_env *env) { return env->shared->peak_gflops; }

int rlt_env_cursor(const rlt_env *env) { return env->state.cursor; }

int rlt_env_n_steps(const rlt_env *env) { return env->state.n_steps; }

uint64_t rlt_env_state_hash(const rlt_env *env) { return env->state.hash; }

const struct rlt_nest *rlt_env_nest(const rlt_env *env) { return &env->state.nest; }

char *rlt_env_tree(const rlt_env *env)
{
    rlt_str s;
    rlt_str_init(&s);
    env_tree_print(&env->state.nest, env->state.cursor, &s);
    return rlt_str_take(&s);
}

const char *rlt_env_accumulator(const rlt_env *env)
{
    const rlt_nest *n = &env->state.nest;
    int p = env->is_reset ? env_accumulator_loop(n) : ENV_NO_ACCUMULATOR;
    return p == ENV_NO_ACCUMULATOR ? NULL : p < 0 ? "root" : n->vars[n->loops[p].var].name;
}

char *rlt_env_schedule(const rlt_env *env)
{
    rlt_sched *sched = NULL;
    if (env_kernel_schedule_build(&env->state.nest, &sched, NULL) != RLT_STATUS_OK) return NULL;
    rlt_str s;
    rlt_str_init(&s);
    rlt_sched_print(sched, &s);
    rlt_sched_destroy(sched);
    return rlt_str_take(&s);
}

void rlt_env_stats_get(const rlt_env *env, rlt_env_stats *out) { *out = env->shared->stats; }
