/*
 * search.c - the search baselines over the LoopTune env (search.h):
 * rlt_env_search, greedy with lookahead, beam and random search, each on
 * the env's own measurements, new states batched with rlt_env_prefetch.
 *
 * Every search works on clones of the caller's env (sharing its cache):
 * a pool of scratch clones handed out in order and reused between rounds,
 * and one clone holding the best state evaluated so far with its trace.
 * At the end the caller's env is restored to the best state.
 */
#include "policy/search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_STEPS 10
#define DEFAULT_BEAM_WIDTH 2
#define RANDOM_BATCH 8

static const char *const kind_names[] = {"greedy", "beam", "random"};

const char *rlt_env_search_kind_str(rlt_env_search_kind kind)
{
    return (unsigned)kind < RLT_ARRAY_LEN(kind_names) ? kind_names[kind] : "unknown";
}

bool rlt_env_search_kind_from_str(const char *name, rlt_env_search_kind *out)
{
    for (size_t k = 0; name && k < RLT_ARRAY_LEN(kind_names); k++)
        if (strcmp(name, kind_names[k]) == 0) {
            *out = (rlt_env_search_kind)k;
            return true;
        }
    return false;
}

/* Up, down and stop leave the nest as it is; every other action transforms it. */
static bool is_transform(int action)
{
    return action != RLT_ENV_ACTION_UP && action != RLT_ENV_ACTION_DOWN && action != RLT_ENV_ACTION_STOP;
}

/* ---- what every search shares ------------------------------------------- */

typedef struct search {
    rlt_env *env;              /* the caller's; borrowed */
    rlt_env_search_opts o;     /* defaults resolved */
    uint64_t t0_ns;
    int64_t n_steps;
    rlt_env **pool;            /* scratch clones, owned; pool[0 .. n_used-1] handed out this round */
    int n_pool, cap_pool, n_used;
    rlt_env **batch_envs;      /* the pairs of the next rlt_env_prefetch */
    int *batch_actions;
    int n_batch, cap_batch;
    rlt_env *best;             /* the best state evaluated; owned clone */
    int n_best;
    int best_trace[RLT_OPTIMIZE_MAX_TRACE];
} search;

static bool budget_spent(const search *s)
{
    return s->o.time_budget_s > 0 && (double)(rlt_time_ns() - s->t0_ns) * 1e-9 >= s->o.time_budget_s;
}

/* The next scratch clone of the pool, in `from`'s state. */
static rlt_status pool_take(search *s, const rlt_env *from, rlt_env **out, rlt_diag *diag)
{
    if (s->n_used == s->n_pool) {
        if (s->n_pool == s->cap_pool) {
            int cap = s->cap_pool ? 2 * s->cap_pool : 32;
            rlt_env **p = rlt_realloc(s->pool, (size_t)cap * sizeof *p);
            if (!p) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory in a search");
            s->pool = p;
            s->cap_pool = cap;
        }
        rlt_status st = rlt_env_clone(from, &s->pool[s->n_pool], diag);
        if (st != RLT_STATUS_OK) return st;
        s->n_pool++;
    }
    *out = s->pool[s->n_used++];
    rlt_env_restore(*out, from);
    return RLT_STATUS_OK;
}

static rlt_status batch_add(search *s, rlt_env *env, int action, rlt_diag *diag)
{
    if (s->n_batch == s->cap_batch) {
        int cap = s->cap_batch ? 2 * s->cap_batch : 64;
        rlt_env **envs = rlt_realloc(s->batch_envs, (size_t)cap * sizeof *envs);
        if (envs) s->batch_envs = envs;
        int *actions = envs ? rlt_realloc(s->batch_actions, (size_t)cap * sizeof *actions) : NULL;
        if (!actions) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory in a search");
        s->batch_actions = actions;
        s->cap_batch = cap;
    }
    s->batch_envs[s->n_batch] = env;
    s->batch_actions[s->n_batch++] = action;
    return RLT_STATUS_OK;
}

/* Measures the batch's new states together and empties it. With out_n_done
 * (greedy's rounds, which can be long), in chunks of PREFETCH_CHUNK pairs
 * while the time budget lasts, the first chunk always: *out_n_done is how
 * many pairs, from the first, were measured. */
#define PREFETCH_CHUNK 32
static rlt_status batch_flush(search *s, int *out_n_done, rlt_diag *diag)
{
    rlt_status st = RLT_STATUS_OK;
    int n = s->n_batch, done = 0;
    if (!out_n_done) {
        st = rlt_env_prefetch(s->batch_envs, s->batch_actions, n, diag);
        done = n;
    }
    while (out_n_done && st == RLT_STATUS_OK && done < n && (done == 0 || !budget_spent(s))) {
        int k = n - done < PREFETCH_CHUNK ? n - done : PREFETCH_CHUNK;
        st = rlt_env_prefetch(s->batch_envs + done, s->batch_actions + done, k, diag);
        done += k;
    }
    if (out_n_done) *out_n_done = done;
    s->n_batch = 0;
    return st;
}

static rlt_status search_step(search *s, rlt_env *env, int action, rlt_diag *diag)
{
    s->n_steps++;
    return rlt_env_step(env, action, NULL, NULL, diag);
}

/* Whether env's state, n_trace actions from the start, beats the best so
 * far: more GFLOP/s, or as many by fewer actions. */
static bool beats_best(const search *s, const rlt_env *env, int n_trace)
{
    double g = rlt_env_gflops(env), best = rlt_env_gflops(s->best);
    return g > best || (g == best && n_trace < s->n_best);
}

static void best_set(search *s, const rlt_env *env, const int *trace, int n_trace)
{
    RLT_ASSERT(n_trace <= RLT_OPTIMIZE_MAX_TRACE);
    rlt_env_restore(s->best, env);
    s->n_best = n_trace;
    if (n_trace > 0) memcpy(s->best_trace, trace, (size_t)n_trace * sizeof *trace);
}

/* ---- greedy with lookahead ---------------------------------------------- */

/* A move of the lookahead: n_cursor cursor actions, then `action`. */
typedef struct move {
    rlt_env *at;    /* the state with the cursor moved (a pool clone) */
    int cursor_action, n_cursor;
    int action;
    int parent;     /* level 2: the level-1 move it follows; -1 at level 1 */
    rlt_env *after; /* level 1: the state the move reaches (a pool clone); NULL at level 2 */
    double score;   /* level 1: the best end state of the sequences it starts */
    int score_cost; /* and their actions */
} move;

typedef struct move_list {
    move *items;
    int n, cap;
} move_list;

static int move_cost(const move *m) { return m->n_cursor + 1; }

static rlt_status moves_push(move_list *l, const move *m, rlt_diag *diag)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        move *items = rlt_realloc(l->items, (size_t)cap * sizeof *items);
        if (!items) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory in a greedy search");
        l->items = items;
        l->cap = cap;
    }
    l->items[l->n++] = *m;
    return RLT_STATUS_OK;
}

static int trace_append_move(int *trace, int n, const move *m)
{
    for (int k = 0; k < m->n_cursor; k++) trace[n++] = m->cursor_action;
    trace[n++] = m->action;
    return n;
}

/* Adds the moves from `from` of at most `room` actions to l (and their
 * pairs to the batch): for each loop the cursor can reach, nearest first
 * (outer before inner at one distance), each legal transforming action. */
static rlt_status moves_add(search *s, rlt_env *from, int room, int parent, move_list *l, rlt_diag *diag)
{
    rlt_env *here = NULL, *up = NULL, *down = NULL;
    if (room <= 0) return RLT_STATUS_OK;
    rlt_status st = pool_take(s, from, &here, diag);
    up = down = here;
    for (int d = 0; st == RLT_STATUS_OK && d < room; d++) {
        rlt_env *at[2] = {here, NULL};
        int dir[2] = {0, 0}, n_at = d == 0 ? 1 : 0;
        for (int side = 0; d > 0 && side < 2; side++) {
            rlt_env **walker = side == 0 ? &up : &down;
            int a = side == 0 ? RLT_ENV_ACTION_UP : RLT_ENV_ACTION_DOWN;
            bool mask[RLT_ENV_N_ACTIONS];
            if (!*walker) continue;
            rlt_env_action_mask(*walker, mask);
            if (!mask[a]) {
                *walker = NULL;
                continue;
            }
            rlt_env *next = NULL;
            if ((st = pool_take(s, *walker, &next, diag)) != RLT_STATUS_OK ||
                (st = search_step(s, next, a, diag)) != RLT_STATUS_OK)
                return st;
            *walker = next;
            at[n_at] = next;
            dir[n_at++] = a;
        }
        if (n_at == 0) break;
        for (int k = 0; k < n_at; k++) {
            bool mask[RLT_ENV_N_ACTIONS];
            rlt_env_action_mask(at[k], mask);
            for (int a = 0; a < RLT_ENV_N_ACTIONS && st == RLT_STATUS_OK; a++) {
                if (!mask[a] || !is_transform(a)) continue;
                move m = {.at = at[k], .cursor_action = dir[k], .n_cursor = d, .action = a, .parent = parent};
                if ((st = moves_push(l, &m, diag)) == RLT_STATUS_OK) st = batch_add(s, at[k], a, diag);
            }
        }
    }
    return st;
}

static rlt_status greedy(search *s, rlt_diag *diag)
{
    rlt_env *cur = NULL, *scratch = NULL;
    move_list l = {0};
    int trace[RLT_OPTIMIZE_MAX_TRACE], n_trace = 0, buf[RLT_OPTIMIZE_MAX_TRACE];
    rlt_status st = rlt_env_clone(s->env, &cur, diag);
    if (st == RLT_STATUS_OK) st = rlt_env_clone(s->env, &scratch, diag);
    for (int round = 0; st == RLT_STATUS_OK && n_trace < s->o.max_steps; round++) {
        if (round > 0 && budget_spent(s)) break;
        int room = s->o.max_steps - n_trace;
        s->n_used = 0;
        l.n = 0;
        /* Level 1: every move, measured in one batch. */
        if ((st = moves_add(s, cur, room, -1, &l, diag)) != RLT_STATUS_OK) break;
        int n1 = l.n, n_done = 0;
        if (n1 == 0) break;
        if ((st = batch_flush(s, &n_done, diag)) != RLT_STATUS_OK) break;
        bool is_cut = n_done < n1; /* the budget ran out: only the measured moves count */
        n1 = n_done;
        for (int i = 0; i < n1 && st == RLT_STATUS_OK; i++) {
            move *m = &l.items[i];
            if ((st = pool_take(s, m->at, &m->after, diag)) != RLT_STATUS_OK) break;
            if ((st = search_step(s, m->after, m->action, diag)) != RLT_STATUS_OK) break;
            m->score = rlt_env_gflops(m->after);
            m->score_cost = move_cost(m);
            if (beats_best(s, m->after, n_trace + move_cost(m))) {
                memcpy(buf, trace, (size_t)n_trace * sizeof *trace);
                best_set(s, m->after, buf, trace_append_move(buf, n_trace, m));
            }
        }
        if (st != RLT_STATUS_OK) break;
        /* Level 2: every move from each level-1 state, measured in one batch. */
        if (s->o.lookahead == 2 && round > 0 && budget_spent(s)) break;
        if (s->o.lookahead == 2 && !is_cut) {
            l.n = n1;
            for (int i = 0; i < n1 && st == RLT_STATUS_OK; i++) {
                rlt_env *after = l.items[i].after;
                st = moves_add(s, after, room - move_cost(&l.items[i]), i, &l, diag);
            }
            if (st == RLT_STATUS_OK) st = batch_flush(s, &n_done, diag);
            for (int j = n1; j < n1 + n_done && st == RLT_STATUS_OK; j++) {
                const move *m2 = &l.items[j];
                move *m1 = &l.items[m2->parent];
                rlt_env_restore(scratch, m2->at);
                if ((st = search_step(s, scratch, m2->action, diag)) != RLT_STATUS_OK) break;
                double g = rlt_env_gflops(scratch);
                int cost = move_cost(m1) + move_cost(m2);
                if (g > m1->score || (g == m1->score && cost < m1->score_cost)) {
                    m1->score = g;
                    m1->score_cost = cost;
                }
                if (beats_best(s, scratch, n_trace + cost)) {
                    memcpy(buf, trace, (size_t)n_trace * sizeof *trace);
                    int n = trace_append_move(buf, n_trace, m1);
                    best_set(s, scratch, buf, trace_append_move(buf, n, m2));
                }
            }
            if (st != RLT_STATUS_OK) break;
        }
        /* The best sequence's first move, if its end beats the current state. */
        int pick = 0;
        for (int i = 1; i < n1; i++) {
            const move *m = &l.items[i], *p = &l.items[pick];
            if (m->score > p->score || (m->score == p->score && m->score_cost < p->score_cost)) pick = i;
        }
        if (!(l.items[pick].score > rlt_env_gflops(cur))) break;
        n_trace = trace_append_move(trace, n_trace, &l.items[pick]);
        rlt_env_restore(cur, l.items[pick].after);
    }
    s->n_batch = 0;
    rlt_free(l.items);
    rlt_env_destroy(scratch);
    rlt_env_destroy(cur);
    return st;
}

/* ---- beam --------------------------------------------------------------- */

/* A state on the beam. */
typedef struct beam_entry {
    rlt_env *env; /* owned clone */
    int n_trace;
    int trace[RLT_OPTIMIZE_MAX_TRACE];
} beam_entry;

/* A new state of a level: `from` taking `action`, reaching `after`. */
typedef struct beam_cand {
    const beam_entry *from;
    int action;
    rlt_env *after; /* a pool clone */
    double gflops;
    uint64_t key;
} beam_cand;

/* Best GFLOP/s first; ties: the smaller trace, action by action (all of one length). */
static int beam_cand_cmp(const void *pa, const void *pb)
{
    const beam_cand *a = pa, *b = pb;
    if (a->gflops != b->gflops) return a->gflops > b->gflops ? -1 : 1;
    for (int k = 0; k < a->from->n_trace; k++)
        if (a->from->trace[k] != b->from->trace[k]) return a->from->trace[k] < b->from->trace[k] ? -1 : 1;
    return (a->action > b->action) - (a->action < b->action);
}

static uint64_t state_key(const rlt_env *env)
{
    return rlt_env_state_hash(env) ^ ((uint64_t)(rlt_env_cursor(env) + 1) * 0x9e3779b97f4a7c15ULL);
}

/* The (nest hash, cursor) keys of the states that have been on the beam:
 * open addressing, at most half full. */
typedef struct key_set {
    uint64_t *keys;
    bool *is_used;
    size_t n, cap;
} key_set;

static size_t key_slot(const key_set *ks, uint64_t key)
{
    size_t i = (size_t)(key * 0xff51afd7ed558ccdULL >> 17) & (ks->cap - 1);
    while (ks->is_used[i] && ks->keys[i] != key) i = (i + 1) & (ks->cap - 1);
    return i;
}

static bool key_set_has(const key_set *ks, uint64_t key) { return ks->cap && ks->is_used[key_slot(ks, key)]; }

static rlt_status key_set_add(key_set *ks, uint64_t key, rlt_diag *diag)
{
    if (2 * (ks->n + 1) > ks->cap) {
        key_set grown = {.cap = ks->cap ? 2 * ks->cap : 256};
        grown.keys = rlt_calloc(grown.cap, sizeof *grown.keys);
        grown.is_used = rlt_calloc(grown.cap, sizeof *grown.is_used);
        if (!grown.keys || !grown.is_used) {
            rlt_free(grown.keys);
            rlt_free(grown.is_used);
            return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory in a beam search");
        }
        for (size_t i = 0; i < ks->cap; i++)
            if (ks->is_used[i]) {
                size_t j = key_slot(&grown, ks->keys[i]);
                grown.keys[j] = ks->keys[i];
                grown.is_used[j] = true;
            }
        grown.n = ks->n;
        rlt_free(ks->keys);
        rlt_free(ks->is_used);
        *ks = grown;
    }
    size_t i = key_slot(ks, key);
    if (!ks->is_used[i]) {
        ks->keys[i] = key;
        ks->is_used[i] = true;
        ks->n++;
    }
    return RLT_STATUS_OK;
}

static void beam_free(beam_entry *b, int n)
{
    for (int i = 0; b && i < n; i++) rlt_env_destroy(b[i].env);
    rlt_free(b);
}

static rlt_status beam(search *s, rlt_diag *diag)
{
    int width = s->o.beam_width, n_cand_max = width * RLT_ENV_N_ACTIONS, n_cur = 1;
    beam_entry *cur = rlt_calloc((size_t)width, sizeof *cur), *next = rlt_calloc((size_t)width, sizeof *next);
    beam_cand *cands = rlt_calloc((size_t)n_cand_max, sizeof *cands);
    key_set seen = {0};
    rlt_status st = RLT_STATUS_OK;
    if (!cur || !next || !cands) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory in a beam search of width %d", width);
        goto cleanup;
    }
    for (int i = 0; i < width; i++)
        if ((st = rlt_env_clone(s->env, &cur[i].env, diag)) != RLT_STATUS_OK ||
            (st = rlt_env_clone(s->env, &next[i].env, diag)) != RLT_STATUS_OK)
            goto cleanup;
    if ((st = key_set_add(&seen, state_key(s->env), diag)) != RLT_STATUS_OK) goto cleanup;

    for (int level = 0; level < s->o.max_steps && n_cur > 0; level++) {
        if (level > 0 && budget_spent(s)) break;
        /* Every legal action of every state on the beam, measured in one batch. */
        int n_cand = 0;
        s->n_used = 0;
        for (int i = 0; i < n_cur; i++) {
            bool mask[RLT_ENV_N_ACTIONS];
            rlt_env_action_mask(cur[i].env, mask);
            for (int a = 0; a < RLT_ENV_N_ACTIONS; a++) {
                if (!mask[a] || a == RLT_ENV_ACTION_STOP) continue;
                cands[n_cand++] = (beam_cand){.from = &cur[i], .action = a};
                if ((st = batch_add(s, cur[i].env, a, diag)) != RLT_STATUS_OK) goto cleanup;
            }
        }
        if (n_cand == 0) break;
        if ((st = batch_flush(s, NULL, diag)) != RLT_STATUS_OK) goto cleanup;
        for (int c = 0; c < n_cand; c++) {
            beam_cand *k = &cands[c];
            if ((st = pool_take(s, k->from->env, &k->after, diag)) != RLT_STATUS_OK ||
                (st = search_step(s, k->after, k->action, diag)) != RLT_STATUS_OK)
                goto cleanup;
            k->gflops = rlt_env_gflops(k->after);
            k->key = state_key(k->after);
        }
        qsort(cands, (size_t)n_cand, sizeof *cands, beam_cand_cmp);
        /* The best state of the level (first in the order: the level's ties are broken there). */
        if (beats_best(s, cands[0].after, cands[0].from->n_trace + 1)) {
            int trace[RLT_OPTIMIZE_MAX_TRACE], n = cands[0].from->n_trace;
            memcpy(trace, cands[0].from->trace, (size_t)n * sizeof *trace);
            trace[n++] = cands[0].action;
            best_set(s, cands[0].after, trace, n);
        }
        /* The W best distinct states that were never on the beam go on. */
        int n_next = 0;
        for (int c = 0; c < n_cand && n_next < width; c++) {
            const beam_cand *k = &cands[c];
            if (key_set_has(&seen, k->key)) continue;
            if ((st = key_set_add(&seen, k->key, diag)) != RLT_STATUS_OK) goto cleanup;
            beam_entry *e = &next[n_next++];
            rlt_env_restore(e->env, k->after);
            e->n_trace = k->from->n_trace;
            memcpy(e->trace, k->from->trace, (size_t)e->n_trace * sizeof *e->trace);
            e->trace[e->n_trace++] = k->action;
        }
        beam_entry *t = cur;
        cur = next;
        next = t;
        n_cur = n_next;
    }

cleanup:
    s->n_batch = 0;
    rlt_free(seen.keys);
    rlt_free(seen.is_used);
    rlt_free(cands);
    beam_free(next, next ? width : 0);
    beam_free(cur, cur ? width : 0);
    return st;
}

/* ---- random ------------------------------------------------------------- */

typedef struct random_walk {
    rlt_env *env; /* owned clone */
    rlt_rng rng;
    bool is_live;
    int n_trace;
    int trace[RLT_OPTIMIZE_MAX_TRACE];
} random_walk;

static rlt_status random_search(search *s, rlt_diag *diag)
{
    random_walk *w = rlt_calloc(RANDOM_BATCH, sizeof *w);
    rlt_status st = RLT_STATUS_OK;
    if (!w) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory in a random search");
    for (int i = 0; i < RANDOM_BATCH && st == RLT_STATUS_OK; i++) st = rlt_env_clone(s->env, &w[i].env, diag);
    bool is_over = false;
    for (int64_t n_walks = 0; st == RLT_STATUS_OK && !is_over;) {
        int n_batch = RANDOM_BATCH;
        if (s->o.max_walks > 0 && s->o.max_walks - n_walks < n_batch) n_batch = (int)(s->o.max_walks - n_walks);
        for (int i = 0; i < n_batch; i++) {
            uint64_t walk = (uint64_t)(n_walks + i);
            rlt_env_restore(w[i].env, s->env);
            rlt_rng_seed(&w[i].rng, rlt_hash_bytes(rlt_hash_bytes(RLT_HASH_SEED, &s->o.seed, sizeof s->o.seed),
                                                   &walk, sizeof walk));
            w[i].is_live = true;
            w[i].n_trace = 0;
        }
        for (int level = 0; level < s->o.max_steps && st == RLT_STATUS_OK; level++) {
            if (n_walks > 0 && budget_spent(s)) {
                is_over = true;
                break;
            }
            for (int i = 0; i < n_batch && st == RLT_STATUS_OK; i++) {
                if (!w[i].is_live) continue;
                bool mask[RLT_ENV_N_ACTIONS];
                int legal[RLT_ENV_N_ACTIONS], n_legal = 0;
                rlt_env_action_mask(w[i].env, mask);
                for (int a = 0; a < RLT_ENV_N_ACTIONS; a++)
                    if (mask[a] && a != RLT_ENV_ACTION_STOP) legal[n_legal++] = a;
                if (n_legal == 0) {
                    w[i].is_live = false;
                    continue;
                }
                int a = legal[rlt_rng_below(&w[i].rng, (uint64_t)n_legal)];
                w[i].trace[w[i].n_trace++] = a;
                st = batch_add(s, w[i].env, a, diag);
            }
            if (st != RLT_STATUS_OK || s->n_batch == 0) break;
            if ((st = batch_flush(s, NULL, diag)) != RLT_STATUS_OK) break;
            for (int i = 0; i < n_batch && st == RLT_STATUS_OK; i++) {
                if (!w[i].is_live) continue;
                if ((st = search_step(s, w[i].env, w[i].trace[w[i].n_trace - 1], diag)) != RLT_STATUS_OK) break;
                if (beats_best(s, w[i].env, w[i].n_trace)) best_set(s, w[i].env, w[i].trace, w[i].n_trace);
            }
        }
        n_walks += n_batch;
        if ((s->o.max_walks > 0 && n_walks >= s->o.max_walks) || budget_spent(s)) is_over = true;
    }
    s->n_batch = 0;
    for (int i = 0; i < RANDOM_BATCH; i++) rlt_env_destroy(w[i].env);
    rlt_free(w);
    return st;
}

/* ---- the entry point ---------------------------------------------------- */

static rlt_status opts_check(const rlt_env_search_opts *o, rlt_diag *diag)
{
    const char *what = "search: ";
    if ((unsigned)o->kind >= RLT_ARRAY_LEN(kind_names))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%skind %d is none of greedy (0), beam (1), random (2)",
                        what, (int)o->kind);
    if (o->max_steps < 0 || o->max_steps > RLT_OPTIMIZE_MAX_TRACE)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%smax_steps %d out of range (0..%d; 0 = %d)", what,
                        o->max_steps, RLT_OPTIMIZE_MAX_TRACE, DEFAULT_MAX_STEPS);
    if (o->lookahead < 0 || o->lookahead > 2)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%slookahead %d out of range (1 or 2; 0 = 1)", what,
                        o->lookahead);
    if (o->beam_width < 0 || o->beam_width > RLT_ENV_SEARCH_MAX_BEAM)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%sbeam_width %d out of range (1..%d; 0 = %d)", what,
                        o->beam_width, RLT_ENV_SEARCH_MAX_BEAM, DEFAULT_BEAM_WIDTH);
    if (!(o->time_budget_s >= 0) || !isfinite(o->time_budget_s))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%stime_budget_s %g must be finite and >= 0", what,
                        o->time_budget_s);
    if (o->kind == RLT_ENV_SEARCH_RANDOM && o->time_budget_s <= 0)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%srandom search needs a time_budget_s > 0 (seconds)",
                        what);
    if (o->max_walks < 0)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%smax_walks %d must be >= 0 (0 = until the budget)",
                        what, o->max_walks);
    return RLT_STATUS_OK;
}

rlt_status rlt_env_search(rlt_env *env, const rlt_env_search_opts *opts, rlt_optimize_result *out,
                          rlt_diag *diag)
{
    RLT_ASSERT(env && out);
    memset(out, 0, sizeof *out);
    search s = {.env = env, .o = opts ? *opts : (rlt_env_search_opts){0}};
    rlt_status st = opts_check(&s.o, diag);
    if (st != RLT_STATUS_OK) return st;
    if (s.o.max_steps == 0) s.o.max_steps = DEFAULT_MAX_STEPS;
    if (s.o.lookahead == 0) s.o.lookahead = 1;
    if (s.o.beam_width == 0) s.o.beam_width = DEFAULT_BEAM_WIDTH;
    bool mask[RLT_ENV_N_ACTIONS];
    rlt_env_action_mask(env, mask);
    if (!mask[RLT_ENV_ACTION_STOP]) /* stop is legal in every state of a live episode */
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "search: %s: reset it first",
                        rlt_env_is_done(env) ? "the env's episode is over" : "the env was never reset");

    s.t0_ns = rlt_time_ns();
    rlt_env_stats s0, s1;
    rlt_env_stats_get(env, &s0);
    rlt_env *start = NULL;
    if ((st = rlt_env_clone(env, &start, diag)) != RLT_STATUS_OK ||
        (st = rlt_env_clone(env, &s.best, diag)) != RLT_STATUS_OK)
        goto cleanup;
    switch (s.o.kind) {
    case RLT_ENV_SEARCH_GREEDY: st = greedy(&s, diag); break;
    case RLT_ENV_SEARCH_BEAM: st = beam(&s, diag); break;
    case RLT_ENV_SEARCH_RANDOM: st = random_search(&s, diag); break;
    }
    if (st != RLT_STATUS_OK) goto cleanup;
    rlt_env_restore(env, s.best);
    if ((st = rlt_optimize_result_take(out, env, s.best_trace, s.n_best, diag)) != RLT_STATUS_OK) goto cleanup;
    out->start_gflops = rlt_env_gflops(start);
    rlt_env_stats_get(env, &s1);
    out->n_evaluations = s1.n_evaluations - s0.n_evaluations;
    out->n_steps = s.n_steps;
    out->wall_s = (double)(rlt_time_ns() - s.t0_ns) * 1e-9;

cleanup:
    if (st != RLT_STATUS_OK) {
        if (start) rlt_env_restore(env, start);
        rlt_optimize_result_free(out);
        memset(out, 0, sizeof *out);
    }
    for (int i = 0; i < s.n_pool; i++) rlt_env_destroy(s.pool[i]);
    rlt_free(s.pool);
    rlt_free(s.batch_actions);
    rlt_free(s.batch_envs);
    rlt_env_destroy(s.best);
    rlt_env_destroy(start);
    return st;
}
