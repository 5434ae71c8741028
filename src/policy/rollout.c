/*
 * rollout.c - optimising an op with a trained policy (rlt_policy_rollout,
 * policy.h): a greedy rollout, or a policy-guided beam search.
 *
 * Greedy: at each step the policy's best legal action whose result is a
 * state (nest and cursor) not seen in this rollout; a cursor loop
 * (up, down, up, ...) would otherwise spend the steps on nothing. The
 * policy's second choice is tried when its first leads back, and so on.
 *
 * Beam: each of the W states on the beam proposes its W best actions by the
 * policy; their new states are measured in one batch (rlt_env_prefetch);
 * every candidate is ranked by its measured GFLOP/s over the peak (the
 * observation's GFLOP/s feature) plus the policy's value of the state (what
 * it expects still to gain), distinct states only, and the best W go on.
 *
 * Either way the result is the best state measured on the way.
 *
 * A blind policy (bc) reads no GFLOP/s, so its greedy walk needs none: it
 * goes through a blind env (rlt_policy_blind_env), and only the state it
 * ends at is measured, in the caller's family; the result is the faster of
 * that and the start. A rollout is then one compile and one run. Its beam
 * is a beam over its own likelihood (as a sequence model decodes): the W
 * paths of largest summed log-probability go on, each taking any legal
 * action or stop, until all W have stopped or max_steps; then the nests
 * where the W paths end are measured in one batch and the fastest (or the
 * start) is the result: W compiles in parallel, no more.
 */
#include "policy/policy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_STEPS 10
#define MAX_BEAM 64

/* A state of a rollout: an env (a clone of the caller's) and its trace. */
typedef struct walker {
    rlt_env *env;
    int n_trace;
    int trace[RLT_OPTIMIZE_MAX_TRACE];
} walker;

/* States seen in one rollout: (nest hash, cursor) pairs. */
typedef struct seen_set {
    uint64_t *keys;
    int n, cap;
} seen_set;

static uint64_t state_key(const rlt_env *env)
{
    return rlt_env_state_hash(env) ^ ((uint64_t)(rlt_env_cursor(env) + 1) * 0x9e3779b97f4a7c15ULL);
}

static bool seen_has(const seen_set *s, uint64_t key)
{
    for (int i = 0; i < s->n; i++)
        if (s->keys[i] == key) return true;
    return false;
}

static rlt_status seen_add(seen_set *s, uint64_t key, rlt_diag *diag)
{
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        uint64_t *keys = rlt_realloc(s->keys, (size_t)cap * sizeof *keys);
        if (!keys) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory in a rollout");
        s->keys = keys;
        s->cap = cap;
    }
    s->keys[s->n++] = key;
    return RLT_STATUS_OK;
}

/* The policy's scores of env's state. */
static rlt_status score_state(const rlt_policy *p, const rlt_env *env, float obs[RLT_ENV_OBS_LEN],
                              float scores[RLT_ENV_N_ACTIONS], rlt_diag *diag)
{
    rlt_status st = rlt_env_observe(env, obs, RLT_ENV_OBS_LEN, diag);
    if (st == RLT_STATUS_OK) st = rlt_policy_scores(p, 1, obs, scores, diag);
    return st;
}

/* The legal actions other than stop, best score first (ties: lower number). */
static int ranked_actions(const float scores[RLT_ENV_N_ACTIONS], int out[RLT_ENV_N_ACTIONS])
{
    int n = 0;
    for (int a = 0; a < RLT_ENV_N_ACTIONS; a++)
        if (a != RLT_ENV_ACTION_STOP && scores[a] != -INFINITY) out[n++] = a;
    for (int i = 1; i < n; i++) /* insertion sort: stable, so ties keep the lower number first */
        for (int j = i; j > 0 && scores[out[j]] > scores[out[j - 1]]; j--) {
            int t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return n;
}

/* keep_last: the result is the walk's last state, not its fastest (a blind
 * walk, whose states all score 0). */
static rlt_status greedy(const rlt_policy *p, rlt_env *env, int max_steps, bool keep_last, rlt_optimize_result *out,
                         rlt_diag *diag)
{
    rlt_env *best = NULL, *trial = NULL;
    seen_set seen = {0};
    int trace[RLT_OPTIMIZE_MAX_TRACE], n_trace = 0, best_n = 0;
    float obs[RLT_ENV_OBS_LEN], scores[RLT_ENV_N_ACTIONS];
    rlt_status st = rlt_env_clone(env, &best, diag);
    if (st == RLT_STATUS_OK) st = rlt_env_clone(env, &trial, diag);
    if (st == RLT_STATUS_OK) st = seen_add(&seen, state_key(env), diag);
    while (st == RLT_STATUS_OK && n_trace < max_steps && !rlt_env_is_done(env)) {
        if ((st = score_state(p, env, obs, scores, diag)) != RLT_STATUS_OK) break;
        if (rlt_policy_best_action(scores) == RLT_ENV_ACTION_STOP) break;
        int ranked[RLT_ENV_N_ACTIONS], n_ranked = ranked_actions(scores, ranked), taken = -1;
        for (int k = 0; k < n_ranked && st == RLT_STATUS_OK && taken < 0; k++) {
            rlt_env_restore(trial, env);
            out->n_steps++;
            if ((st = rlt_env_step(trial, ranked[k], NULL, NULL, diag)) != RLT_STATUS_OK) break;
            if (!seen_has(&seen, state_key(trial))) taken = ranked[k];
        }
        if (st != RLT_STATUS_OK || taken < 0) break;
        rlt_env_restore(env, trial);
        trace[n_trace++] = taken;
        if ((st = seen_add(&seen, state_key(env), diag)) != RLT_STATUS_OK) break;
        if (keep_last || rlt_env_gflops(env) > rlt_env_gflops(best)) {
            rlt_env_restore(best, env);
            best_n = n_trace;
        }
    }
    if (st == RLT_STATUS_OK) {
        rlt_env_restore(env, best);
        st = rlt_optimize_result_take(out, env, trace, best_n, diag);
    }
    rlt_free(seen.keys);
    rlt_env_destroy(trial);
    rlt_env_destroy(best);
    return st;
}

/* A candidate of a beam level: walker (or path) `from` taking `action` (a
 * blind beam: -1 for stop, the path as it is), ranked by `rank`. */
typedef struct candidate {
    int from, action;
    double rank;
    uint64_t key;
} candidate;

static int candidate_cmp(const void *pa, const void *pb)
{
    const candidate *a = pa, *b = pb;
    if (a->rank != b->rank) return a->rank > b->rank ? -1 : 1;
    if (a->from != b->from) return a->from < b->from ? -1 : 1;
    return (a->action > b->action) - (a->action < b->action);
}

/* ---- a blind policy's beam: over its own likelihood ------------------------ */

/* A path of the blind beam: where it is (a blind env), its log-probability
 * under the policy, and whether it chose stop. */
typedef struct hyp {
    rlt_env *env;
    double logp;
    bool is_final;
    int n_trace;
    int trace[RLT_OPTIMIZE_MAX_TRACE];
} hyp;

/* log-softmax of the legal scores (illegal ones -INFINITY stay so). */
static void log_softmax_legal(const float scores[RLT_ENV_N_ACTIONS], double out[RLT_ENV_N_ACTIONS])
{
    double mx = -INFINITY, sum = 0;
    for (int a = 0; a < RLT_ENV_N_ACTIONS; a++)
        if (scores[a] != -INFINITY) mx = fmax(mx, scores[a]);
    for (int a = 0; a < RLT_ENV_N_ACTIONS; a++)
        if (scores[a] != -INFINITY) sum += exp(scores[a] - mx);
    for (int a = 0; a < RLT_ENV_N_ACTIONS; a++)
        out[a] = scores[a] == -INFINITY ? -INFINITY : scores[a] - mx - log(sum);
}

static void hyps_free(hyp *h, int n)
{
    for (int i = 0; h && i < n; i++) rlt_env_destroy(h[i].env);
    rlt_free(h);
}

/* Measures the end states of paths[0 .. n-1] in env's family (one batch,
 * each distinct nest once) and leaves env at the fastest of them and the
 * start, with out's best-state fields filled. */
static rlt_status measure_ends(rlt_env *env, const hyp *paths, int n, rlt_optimize_result *out, rlt_diag *diag)
{
    rlt_env **ends = rlt_calloc((size_t)n, sizeof *ends);
    char **scheds = rlt_calloc((size_t)n, sizeof *scheds);
    int *of = rlt_calloc((size_t)n, sizeof *of), n_ends = 0;
    rlt_status st = ends && scheds && of ? RLT_STATUS_OK
                                         : rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory in a rollout");
    for (int i = 0; i < n && st == RLT_STATUS_OK; i++) {
        bool is_dup = false;
        for (int k = 0; k < n_ends && !is_dup; k++)
            is_dup = rlt_env_state_hash(paths[of[k]].env) == rlt_env_state_hash(paths[i].env);
        if (is_dup) continue;
        if (!(scheds[n_ends] = rlt_env_schedule(paths[i].env))) {
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory in a rollout");
            break;
        }
        of[n_ends] = i;
        st = rlt_env_clone(env, &ends[n_ends++], diag);
    }
    if (st == RLT_STATUS_OK) st = rlt_env_reset_batch(ends, (const char *const *)scheds, n_ends, diag);
    if (st == RLT_STATUS_OK) {
        int best = -1;
        for (int k = 0; k < n_ends; k++)
            if (rlt_env_gflops(ends[k]) > (best < 0 ? rlt_env_gflops(env) : rlt_env_gflops(ends[best]))) best = k;
        if (best >= 0) rlt_env_restore(env, ends[best]);
        const hyp *h = best >= 0 ? &paths[of[best]] : NULL;
        st = rlt_optimize_result_take(out, env, h ? h->trace : NULL, h ? h->n_trace : 0, diag);
    }
    for (int k = 0; k < n_ends; k++) {
        rlt_env_destroy(ends[k]);
        rlt_free(scheds[k]);
    }
    rlt_free(of);
    rlt_free(scheds);
    rlt_free(ends);
    return st;
}

/* A blind policy's greedy rollout: the walk in a blind env from env's nest,
 * then the walk's end measured in env's family. */
static rlt_status blind_greedy(const rlt_policy *p, rlt_env *env, int max_steps, rlt_optimize_result *out,
                               rlt_diag *diag)
{
    hyp walk = {0};
    char *start = rlt_env_schedule(env);
    rlt_status st = start ? RLT_STATUS_OK : rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory in a rollout");
    if (st == RLT_STATUS_OK) st = rlt_policy_blind_env(rlt_env_nest(env)->op->spec, &walk.env, diag);
    if (st == RLT_STATUS_OK) st = rlt_env_reset_schedule(walk.env, start, diag);
    if (st == RLT_STATUS_OK) st = greedy(p, walk.env, max_steps, true, out, diag);
    if (st == RLT_STATUS_OK) {
        walk.n_trace = out->n_trace;
        memcpy(walk.trace, out->trace, (size_t)out->n_trace * sizeof *walk.trace);
        st = measure_ends(env, &walk, 1, out, diag);
    }
    rlt_env_destroy(walk.env);
    rlt_free(start);
    return st;
}

static rlt_status blind_beam(const rlt_policy *p, rlt_env *env, int width, int max_steps, rlt_optimize_result *out,
                             rlt_diag *diag)
{
    int n_max = width * RLT_ENV_N_ACTIONS;
    hyp *cur = rlt_calloc((size_t)width, sizeof *cur), *next = rlt_calloc((size_t)width, sizeof *next);
    candidate *cands = rlt_calloc((size_t)n_max, sizeof *cands);
    rlt_env *blind = NULL, *trial = NULL;
    char *start = rlt_env_schedule(env);
    seen_set seen = {0};
    int n_cur = 1;
    rlt_status st = RLT_STATUS_OK;
    if (!cur || !next || !cands || !start) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory in a beam of width %d", width);
        goto cleanup;
    }
    if ((st = rlt_policy_blind_env(rlt_env_nest(env)->op->spec, &blind, diag)) != RLT_STATUS_OK ||
        (st = rlt_env_reset_schedule(blind, start, diag)) != RLT_STATUS_OK ||
        (st = rlt_env_clone(blind, &trial, diag)) != RLT_STATUS_OK ||
        (st = seen_add(&seen, state_key(blind), diag)) != RLT_STATUS_OK)
        goto cleanup;
    for (int i = 0; i < width; i++)
        if ((st = rlt_env_clone(blind, &cur[i].env, diag)) != RLT_STATUS_OK ||
            (st = rlt_env_clone(blind, &next[i].env, diag)) != RLT_STATUS_OK)
            goto cleanup;

    for (int level = 0; level < max_steps; level++) {
        /* Every path's legal continuations, stop included; final paths as they are. */
        int n_cand = 0;
        bool any_open = false;
        for (int i = 0; i < n_cur; i++) {
            if (cur[i].is_final || rlt_env_is_done(cur[i].env)) {
                cands[n_cand++] = (candidate){.from = i, .action = -1, .rank = cur[i].logp};
                continue;
            }
            any_open = true;
            float obs[RLT_ENV_OBS_LEN], scores[RLT_ENV_N_ACTIONS];
            double lp[RLT_ENV_N_ACTIONS];
            if ((st = score_state(p, cur[i].env, obs, scores, diag)) != RLT_STATUS_OK) goto cleanup;
            log_softmax_legal(scores, lp);
            for (int a = 0; a < RLT_ENV_N_ACTIONS; a++)
                if (lp[a] != -INFINITY)
                    cands[n_cand++] = (candidate){.from = i, .action = a == RLT_ENV_ACTION_STOP ? -1 : a,
                                                  .rank = cur[i].logp + lp[a]};
        }
        if (!any_open) break;
        qsort(cands, (size_t)n_cand, sizeof *cands, candidate_cmp);
        /* The `width` most likely distinct paths go on. */
        int n_next = 0;
        for (int c = 0; c < n_cand && n_next < width; c++) {
            const hyp *from = &cur[cands[c].from];
            hyp *h = &next[n_next];
            rlt_env_restore(trial, from->env);
            if (cands[c].action >= 0) {
                out->n_steps++;
                if ((st = rlt_env_step(trial, cands[c].action, NULL, NULL, diag)) != RLT_STATUS_OK) goto cleanup;
                if (seen_has(&seen, state_key(trial))) continue;
                if ((st = seen_add(&seen, state_key(trial), diag)) != RLT_STATUS_OK) goto cleanup;
            } else {
                bool is_dup = false;
                for (int k = 0; k < n_next && !is_dup; k++)
                    is_dup = next[k].is_final && state_key(next[k].env) == state_key(trial);
                if (is_dup) continue;
            }
            rlt_env_restore(h->env, trial);
            h->logp = cands[c].rank;
            h->is_final = cands[c].action < 0;
            h->n_trace = from->n_trace;
            memcpy(h->trace, from->trace, (size_t)from->n_trace * sizeof *h->trace);
            if (cands[c].action >= 0) h->trace[h->n_trace++] = cands[c].action;
            n_next++;
        }
        if (n_next == 0) break;
        hyp *t = cur;
        cur = next;
        next = t;
        n_cur = n_next;
    }
    st = measure_ends(env, cur, n_cur, out, diag);

cleanup:
    rlt_free(seen.keys);
    rlt_env_destroy(trial);
    rlt_env_destroy(blind);
    rlt_free(start);
    rlt_free(cands);
    hyps_free(next, next ? width : 0);
    hyps_free(cur, cur ? width : 0);
    return st;
}

static void walkers_free(walker *w, int n)
{
    for (int i = 0; w && i < n; i++) rlt_env_destroy(w[i].env);
    rlt_free(w);
}

static rlt_status beam(const rlt_policy *p, rlt_env *env, int width, int max_steps, rlt_optimize_result *out,
                       rlt_diag *diag)
{
    int n_max = width * width;
    walker *cur = rlt_calloc((size_t)width, sizeof *cur), *next = rlt_calloc((size_t)n_max, sizeof *next);
    candidate *cands = rlt_calloc((size_t)n_max, sizeof *cands);
    rlt_env **envs = rlt_calloc((size_t)n_max, sizeof *envs);
    int *acts = rlt_calloc((size_t)n_max, sizeof *acts);
    float *obs = rlt_malloc((size_t)n_max * RLT_ENV_OBS_LEN * sizeof *obs);
    float *values = rlt_malloc((size_t)n_max * sizeof *values);
    rlt_env *best = NULL;
    int best_trace[RLT_OPTIMIZE_MAX_TRACE], best_n = 0, n_cur = 1;
    seen_set seen = {0};
    rlt_status st = RLT_STATUS_OK;
    if (!cur || !next || !cands || !envs || !acts || !obs || !values) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory in a beam search of width %d", width);
        goto cleanup;
    }
    if ((st = rlt_env_clone(env, &best, diag)) != RLT_STATUS_OK ||
        (st = rlt_env_clone(env, &cur[0].env, diag)) != RLT_STATUS_OK ||
        (st = seen_add(&seen, state_key(env), diag)) != RLT_STATUS_OK)
        goto cleanup;
    for (int i = 0; i < n_max; i++)
        if ((st = rlt_env_clone(env, &next[i].env, diag)) != RLT_STATUS_OK) goto cleanup;

    for (int level = 0; level < max_steps && n_cur > 0; level++) {
        /* Each walker's W best actions by the policy. */
        int n_cand = 0;
        for (int i = 0; i < n_cur; i++) {
            float o[RLT_ENV_OBS_LEN], scores[RLT_ENV_N_ACTIONS];
            int ranked[RLT_ENV_N_ACTIONS];
            if (rlt_env_is_done(cur[i].env)) continue;
            if ((st = score_state(p, cur[i].env, o, scores, diag)) != RLT_STATUS_OK) goto cleanup;
            int n_ranked = ranked_actions(scores, ranked);
            for (int k = 0; k < n_ranked && k < width; k++) {
                cands[n_cand] = (candidate){.from = i, .action = ranked[k]};
                envs[n_cand] = cur[i].env;
                acts[n_cand++] = ranked[k];
            }
        }
        if (n_cand == 0) break;
        if ((st = rlt_env_prefetch(envs, acts, n_cand, diag)) != RLT_STATUS_OK) goto cleanup;
        /* Step them all (look-ups now), observe, value. */
        for (int c = 0; c < n_cand; c++) {
            walker *w = &next[c];
            rlt_env_restore(w->env, cur[cands[c].from].env);
            out->n_steps++;
            if ((st = rlt_env_step(w->env, cands[c].action, NULL, NULL, diag)) != RLT_STATUS_OK) goto cleanup;
            w->n_trace = cur[cands[c].from].n_trace;
            memcpy(w->trace, cur[cands[c].from].trace, (size_t)w->n_trace * sizeof *w->trace);
            w->trace[w->n_trace++] = cands[c].action;
            cands[c].key = state_key(w->env);
            if ((st = rlt_env_observe(w->env, obs + (size_t)c * RLT_ENV_OBS_LEN, RLT_ENV_OBS_LEN, diag)) !=
                RLT_STATUS_OK)
                goto cleanup;
            if (rlt_env_gflops(w->env) > rlt_env_gflops(best)) {
                rlt_env_restore(best, w->env);
                best_n = w->n_trace;
                memcpy(best_trace, w->trace, (size_t)best_n * sizeof *best_trace);
            }
        }
        if ((st = rlt_policy_values(p, n_cand, obs, values, diag)) != RLT_STATUS_OK) goto cleanup;
        for (int c = 0; c < n_cand; c++) {
            cands[c].rank = (double)obs[(size_t)c * RLT_ENV_OBS_LEN + RLT_ENV_OBS_GFLOPS] + values[c];
            cands[c].from = c; /* from here on: the index into next[] */
        }
        qsort(cands, (size_t)n_cand, sizeof *cands, candidate_cmp);
        /* The best W distinct states not seen at an earlier level go on. */
        int n_kept = 0;
        for (int c = 0; c < n_cand && n_kept < width; c++) {
            if (seen_has(&seen, cands[c].key)) continue;
            if ((st = seen_add(&seen, cands[c].key, diag)) != RLT_STATUS_OK) goto cleanup;
            walker *w = &next[cands[c].from], *k = &cur[n_kept];
            if (!k->env && (st = rlt_env_clone(env, &k->env, diag)) != RLT_STATUS_OK) goto cleanup;
            rlt_env_restore(k->env, w->env);
            k->n_trace = w->n_trace;
            memcpy(k->trace, w->trace, (size_t)w->n_trace * sizeof *w->trace);
            n_kept++;
        }
        n_cur = n_kept;
    }
    rlt_env_restore(env, best);
    st = rlt_optimize_result_take(out, env, best_trace, best_n, diag);

cleanup:
    rlt_env_destroy(best);
    rlt_free(seen.keys);
    rlt_free(values);
    rlt_free(obs);
    rlt_free(acts);
    rlt_free(envs);
    rlt_free(cands);
    walkers_free(next, next ? n_max : 0);
    walkers_free(cur, cur ? width : 0);
    return st;
}

rlt_status rlt_policy_rollout(const rlt_policy *p, rlt_env *env, const rlt_rollout_opts *opts,
                              rlt_optimize_result *out, rlt_diag *diag)
{
    rlt_rollout_opts o = opts ? *opts : (rlt_rollout_opts){0};
    memset(out, 0, sizeof *out);
    if (o.max_steps == 0) o.max_steps = DEFAULT_MAX_STEPS;
    if (o.max_steps < 1 || o.max_steps > RLT_OPTIMIZE_MAX_TRACE || o.beam_width < 0 || o.beam_width > MAX_BEAM)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "rollout: max_steps %d (1..%d), beam width %d (0..%d)",
                        o.max_steps, RLT_OPTIMIZE_MAX_TRACE, o.beam_width, MAX_BEAM);
    if (!rlt_env_is_reset(env))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "rollout: reset the env first");
    uint64_t t0 = rlt_time_ns();
    rlt_env_stats s0, s1;
    rlt_env_stats_get(env, &s0);
    out->start_gflops = rlt_env_gflops(env);
    bool is_blind = rlt_policy_is_blind(p);
    rlt_status st;
    if (o.beam_width > 1)
        st = is_blind ? blind_beam(p, env, o.beam_width, o.max_steps, out, diag)
                      : beam(p, env, o.beam_width, o.max_steps, out, diag);
    else
        st = is_blind ? blind_greedy(p, env, o.max_steps, out, diag) : greedy(p, env, o.max_steps, false, out, diag);
    rlt_env_stats_get(env, &s1);
    out->n_evaluations = s1.n_evaluations - s0.n_evaluations;
    out->wall_s = (double)(rlt_time_ns() - t0) * 1e-9;
    if (st != RLT_STATUS_OK) rlt_optimize_result_free(out);
    return st;
}
