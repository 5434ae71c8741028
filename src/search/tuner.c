/*
 * tuner.c - the tuner interface, the visited set, and the model-free
 * tuners: random (uniform without replacement), grid (index order) and ga
 * (AutoTVM's genetic algorithm: fitness-proportional parents, crossover,
 * mutation, elites kept across generations).
 *
 * Entry points: rlt_tuner_create, rlt_tuner_next_batch, rlt_tuner_update.
 */
#include "search/tuner.h"

#include <stdio.h>
#include <string.h>

/* ---- visited set -------------------------------------------------------- */

#define VISITED_EMPTY UINT64_MAX

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

bool rlt_visited_has(const rlt_visited *v, uint64_t index)
{
    if (v->cap == 0) return false;
    for (size_t i = mix(index) & (v->cap - 1);; i = (i + 1) & (v->cap - 1)) {
        if (v->slots[i] == index) return true;
        if (v->slots[i] == VISITED_EMPTY) return false;
    }
}

static bool visited_grow(rlt_visited *v)
{
    size_t cap = v->cap ? 2 * v->cap : 1024;
    uint64_t *slots = rlt_malloc(cap * sizeof *slots);
    if (!slots) return false;
    for (size_t i = 0; i < cap; i++) slots[i] = VISITED_EMPTY;
    for (size_t i = 0; i < v->cap; i++) {
        if (v->slots[i] == VISITED_EMPTY) continue;
        size_t j = mix(v->slots[i]) & (cap - 1);
        while (slots[j] != VISITED_EMPTY) j = (j + 1) & (cap - 1);
        slots[j] = v->slots[i];
    }
    rlt_free(v->slots);
    v->slots = slots;
    v->cap = cap;
    return true;
}

bool rlt_visited_add(rlt_visited *v, uint64_t index)
{
    RLT_ASSERT(index != VISITED_EMPTY);
    if ((v->n + 1) * 2 > v->cap && !visited_grow(v)) return false;
    size_t i = mix(index) & (v->cap - 1);
    while (v->slots[i] != VISITED_EMPTY) {
        if (v->slots[i] == index) return false;
        i = (i + 1) & (v->cap - 1);
    }
    v->slots[i] = index;
    v->n++;
    return true;
}

void rlt_visited_free(rlt_visited *v)
{
    rlt_free(v->slots);
    *v = (rlt_visited){0};
}

/* ---- scores by index ------------------------------------------------------ */

bool rlt_score_map_get(const rlt_score_map *m, uint64_t index, double *out)
{
    if (m->cap == 0) return false;
    for (size_t i = mix(index) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == index) {
            *out = m->values[i];
            return true;
        }
        if (m->keys[i] == VISITED_EMPTY) return false;
    }
}

static bool score_map_grow(rlt_score_map *m)
{
    size_t cap = m->cap ? 2 * m->cap : 1024;
    uint64_t *keys = rlt_malloc(cap * sizeof *keys);
    double *values = rlt_malloc(cap * sizeof *values);
    if (!keys || !values) {
        rlt_free(keys);
        rlt_free(values);
        return false;
    }
    for (size_t i = 0; i < cap; i++) keys[i] = VISITED_EMPTY;
    for (size_t i = 0; i < m->cap; i++) {
        if (m->keys[i] == VISITED_EMPTY) continue;
        size_t j = mix(m->keys[i]) & (cap - 1);
        while (keys[j] != VISITED_EMPTY) j = (j + 1) & (cap - 1);
        keys[j] = m->keys[i];
        values[j] = m->values[i];
    }
    rlt_free(m->keys);
    rlt_free(m->values);
    m->keys = keys;
    m->values = values;
    m->cap = cap;
    return true;
}

bool rlt_score_map_put(rlt_score_map *m, uint64_t index, double value)
{
    RLT_ASSERT(index != VISITED_EMPTY);
    if ((m->n + 1) * 2 > m->cap && !score_map_grow(m)) return false;
    size_t i = mix(index) & (m->cap - 1);
    while (m->keys[i] != VISITED_EMPTY && m->keys[i] != index) i = (i + 1) & (m->cap - 1);
    if (m->keys[i] == VISITED_EMPTY) m->n++;
    m->keys[i] = index;
    m->values[i] = value;
    return true;
}

void rlt_score_map_clear(rlt_score_map *m)
{
    for (size_t i = 0; i < m->cap; i++) m->keys[i] = VISITED_EMPTY;
    m->n = 0;
}

void rlt_score_map_free(rlt_score_map *m)
{
    rlt_free(m->keys);
    rlt_free(m->values);
    *m = (rlt_score_map){0};
}

/* ---- helpers shared by the tuners --------------------------------------- */

bool rlt_tuner_draw_new(rlt_tuner *t, int tries, rlt_config *out)
{
    for (int i = 0; i < tries; i++) {
        rlt_space_random(t->space, &t->rng, out);
        uint64_t index = rlt_space_index_of(t->space, out);
        if (rlt_visited_has(&t->visited, index)) continue;
        if (!rlt_space_is_valid(t->space, out)) {
            /* never valid: remember it so it is not drawn again */
            rlt_visited_add(&t->visited, index);
            continue;
        }
        rlt_visited_add(&t->visited, index);
        return true;
    }
    return false;
}

bool rlt_tuner_scan_new(rlt_tuner *t, uint64_t *cursor, rlt_config *out)
{
    uint64_t size = rlt_space_size(t->space);
    while (*cursor < size) {
        uint64_t index = (*cursor)++;
        if (rlt_visited_has(&t->visited, index)) continue;
        rlt_space_config_of(t->space, index, out);
        rlt_visited_add(&t->visited, index);
        if (rlt_space_is_valid(t->space, out)) return true;
    }
    return false;
}

/* ---- random ------------------------------------------------------------- */

typedef struct random_state {
    uint64_t cursor; /* scan position once random draws run dry */
} random_state;

static rlt_status random_init(rlt_tuner *t, rlt_diag *diag)
{
    t->state = rlt_calloc(1, sizeof(random_state));
    return t->state ? RLT_STATUS_OK : rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a tuner");
}

static int random_next(rlt_tuner *t, int max, rlt_config *out)
{
    random_state *st = t->state;
    int n = 0;
    while (n < max) {
        if (rlt_tuner_draw_new(t, 256, &out[n]) || rlt_tuner_scan_new(t, &st->cursor, &out[n])) n++;
        else break;
    }
    return n;
}

static rlt_status no_update(rlt_tuner *t, int n, const rlt_config *c, const double *s, rlt_diag *diag)
{
    (void)t, (void)n, (void)c, (void)s, (void)diag;
    return RLT_STATUS_OK;
}

static void free_state(rlt_tuner *t) { rlt_free(t->state); }

static const rlt_tuner_ops random_ops = {
    .name = "random", .init = random_init, .next_batch = random_next, .update = no_update, .fini = free_state};

/* ---- grid --------------------------------------------------------------- */

static int grid_next(rlt_tuner *t, int max, rlt_config *out)
{
    random_state *st = t->state;
    int n = 0;
    while (n < max && rlt_tuner_scan_new(t, &st->cursor, &out[n])) n++;
    return n;
}

static const rlt_tuner_ops grid_ops = {
    .name = "grid", .init = random_init, .next_batch = grid_next, .update = no_update, .fini = free_state};

/* ---- ga ----------------------------------------------------------------
 *
 * The population machinery (rlt_ga_*) is shared with ga-dqn (ga_dqn.c),
 * which breeds its children with two DQNs instead of ga_make_child. */

rlt_status rlt_ga_init(rlt_tuner *t, rlt_ga *g, rlt_diag *diag)
{
    *g = (rlt_ga){0};
    uint64_t size = rlt_space_size(t->space);
    g->pop = t->opts.population > 0 ? t->opts.population : 64;
    if (g->pop > 1000) g->pop = 1000; /* bounds the per-generation arrays and work */
    if ((uint64_t)g->pop > size) g->pop = (int)size;
    g->elite = t->opts.elite > 0 ? t->opts.elite : 3;
    if (g->elite > g->pop) g->elite = g->pop;
    size_t n_pool = (size_t)(g->pop + g->elite);
    g->gen = rlt_calloc((size_t)g->pop, sizeof *g->gen);
    g->gen_score = rlt_calloc((size_t)g->pop, sizeof *g->gen_score);
    g->elites = rlt_calloc((size_t)g->elite, sizeof *g->elites);
    g->elite_score = rlt_calloc((size_t)g->elite, sizeof *g->elite_score);
    g->pool = rlt_calloc(n_pool, sizeof *g->pool);
    g->pool_score = rlt_calloc(n_pool, sizeof *g->pool_score);
    g->pool_weight = rlt_calloc(n_pool, sizeof *g->pool_weight);
    g->pool_is_elite = rlt_calloc(n_pool, sizeof *g->pool_is_elite);
    if (!g->gen || !g->gen_score || !g->elites || !g->elite_score || !g->pool || !g->pool_score ||
        !g->pool_weight || !g->pool_is_elite)
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a tuner");
    /* the first generation is random */
    while (g->n_gen < g->pop && rlt_tuner_draw_new(t, 1024, &g->gen[g->n_gen])) g->gen_score[g->n_gen++] = -1.0;
    return RLT_STATUS_OK;
}

void rlt_ga_free(rlt_ga *g)
{
    rlt_free(g->gen);
    rlt_free(g->gen_score);
    rlt_free(g->elites);
    rlt_free(g->elite_score);
    rlt_free(g->pool);
    rlt_free(g->pool_score);
    rlt_free(g->pool_weight);
    rlt_free(g->pool_is_elite);
    *g = (rlt_ga){0};
}

int rlt_ga_pick_parent(rlt_tuner *t, const rlt_ga *g)
{
    double x = rlt_rng_uniform(&t->rng) * g->pool_weight_total;
    for (int i = 0; i < g->n_pool; i++) {
        x -= g->pool_weight[i];
        if (x < 0) return i;
    }
    return g->n_pool - 1;
}

bool rlt_ga_claim(rlt_tuner *t, const rlt_config *child)
{
    uint64_t index = rlt_space_index_of(t->space, child);
    if (rlt_visited_has(&t->visited, index)) return false;
    rlt_visited_add(&t->visited, index);
    return rlt_space_is_valid(t->space, child);
}

int rlt_ga_find(const rlt_ga *g, const rlt_space *s, const rlt_config *c)
{
    for (int j = 0; j < g->n_gen; j++)
        if (memcmp(g->gen[j].choice, c->choice, sizeof c->choice[0] * (size_t)s->n_knobs) == 0) return j;
    return -1;
}

/* Next generation from the measured one plus the elites: the best `elite`
 * of that pool stay elites; pop children are made by make_child from
 * parents drawn in proportion to their scores, or drawn at random (then
 * scanned for) when it finds no new valid one. */
static void ga_breed(rlt_tuner *t, rlt_ga *g, rlt_ga_child_fn make_child, void *ctx)
{
    int n = 0;
    for (int i = 0; i < g->n_gen; i++) {
        g->pool[n] = g->gen[i];
        g->pool_score[n++] = g->gen_score[i] > 0 ? g->gen_score[i] : 0.0;
    }
    for (int i = 0; i < g->n_elites; i++) {
        g->pool[n] = g->elites[i];
        g->pool_score[n++] = g->elite_score[i];
    }
    g->n_pool = n;
    /* elites: selection of the top `elite` scores */
    g->n_elites = 0;
    for (int i = 0; i < n; i++) g->pool_is_elite[i] = false;
    for (int e = 0; e < g->elite && e < n; e++) {
        int best = -1;
        for (int i = 0; i < n; i++)
            if (!g->pool_is_elite[i] && (best < 0 || g->pool_score[i] > g->pool_score[best])) best = i;
        if (best < 0) break;
        g->pool_is_elite[best] = true;
        g->elites[g->n_elites] = g->pool[best];
        g->elite_score[g->n_elites++] = g->pool_score[best];
    }
    double max = 0;
    for (int i = 0; i < n; i++) max = RLT_MAX(max, g->pool_score[i]);
    g->pool_weight_total = 0;
    for (int i = 0; i < n; i++) {
        g->pool_weight[i] = (max > 0 ? g->pool_score[i] / max : 0.0) + 1e-8; /* AutoTVM: scores + 1e-8, normalised */
        g->pool_weight_total += g->pool_weight[i];
    }
    g->n_gen = 0;
    g->n_proposed = 0;
    for (int c = 0; c < g->pop; c++) {
        rlt_config child = {0};
        bool is_new = make_child(t, g, ctx, c, &child);
        if (!is_new) is_new = rlt_tuner_draw_new(t, 1024, &child);
        /* where valid configurations are rare, random draws miss the last
         * few: a scan finds them, so that the whole space is proposed */
        if (!is_new) is_new = rlt_tuner_scan_new(t, &g->scan_cursor, &child);
        if (!is_new) break; /* the space is exhausted */
        g->gen[g->n_gen] = child;
        g->gen_score[g->n_gen++] = -1.0;
    }
}

int rlt_ga_next(rlt_tuner *t, rlt_ga *g, rlt_ga_child_fn make_child, void *ctx, int max, rlt_config *out)
{
    int n = 0;
    while (n < max) {
        if (g->n_proposed < g->n_gen) {
            out[n++] = g->gen[g->n_proposed++];
            continue;
        }
        /* wait for the scores of the whole generation before breeding */
        bool is_measured = g->n_gen > 0;
        for (int i = 0; i < g->n_gen; i++) is_measured &= g->gen_score[i] >= 0;
        if (!is_measured || n > 0) break;
        ga_breed(t, g, make_child, ctx);
        if (g->n_gen == 0) break;
    }
    return n;
}

void rlt_ga_update(rlt_ga *g, const rlt_space *s, int n, const rlt_config *configs, const double *scores)
{
    for (int i = 0; i < n; i++) {
        int j = rlt_ga_find(g, s, &configs[i]);
        if (j >= 0) g->gen_score[j] = scores[i];
    }
}

/* ga's breeding (AutoTVM's GATuner): two-point crossover of two parents,
 * then each gene mutated to a random choice with probability
 * mutation_prob; up to 64 attempts at a new valid child. */
static bool ga_make_child(rlt_tuner *t, rlt_ga *g, void *ctx, int slot, rlt_config *out)
{
    (void)ctx, (void)slot;
    const rlt_space *s = t->space;
    double mutation = t->opts.mutation_prob > 0 ? t->opts.mutation_prob : 0.1;
    for (int attempt = 0; attempt < 64; attempt++) {
        const rlt_config *p1 = &g->pool[rlt_ga_pick_parent(t, g)];
        const rlt_config *p2 = &g->pool[rlt_ga_pick_parent(t, g)];
        int a = (int)rlt_rng_below(&t->rng, (uint64_t)s->n_knobs + 1);
        int b = (int)rlt_rng_below(&t->rng, (uint64_t)s->n_knobs + 1);
        if (a > b) {
            int x = a;
            a = b;
            b = x;
        }
        for (int k = 0; k < s->n_knobs; k++) out->choice[k] = (k >= a && k < b ? p2 : p1)->choice[k];
        for (int k = 0; k < s->n_knobs; k++)
            if (rlt_rng_uniform(&t->rng) < mutation)
                out->choice[k] = (int16_t)rlt_rng_below(&t->rng, (uint64_t)s->knobs[k].n_choices);
        if (rlt_ga_claim(t, out)) return true;
    }
    return false;
}

static rlt_status ga_init(rlt_tuner *t, rlt_diag *diag)
{
    rlt_ga *g = rlt_calloc(1, sizeof *g);
    if (!g) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a tuner");
    t->state = g;
    return rlt_ga_init(t, g, diag);
}

static void ga_fini(rlt_tuner *t)
{
    rlt_ga *g = t->state;
    if (!g) return;
    rlt_ga_free(g);
    rlt_free(g);
}

static int ga_next(rlt_tuner *t, int max, rlt_config *out)
{
    return rlt_ga_next(t, t->state, ga_make_child, NULL, max, out);
}

static rlt_status ga_update(rlt_tuner *t, int n, const rlt_config *configs, const double *scores, rlt_diag *diag)
{
    (void)diag;
    rlt_ga_update(t->state, t->space, n, configs, scores);
    return RLT_STATUS_OK;
}

static const rlt_tuner_ops ga_ops = {
    .name = "ga", .init = ga_init, .next_batch = ga_next, .update = ga_update, .fini = ga_fini};

/* ---- the interface ------------------------------------------------------ */

static const rlt_tuner_ops *const all_ops[] = {&random_ops, &grid_ops, &ga_ops, &rlt_tuner_xgb_ops,
                                              &rlt_tuner_xgb_rank_ops, &rlt_tuner_bandit_ops, &rlt_tuner_dqn_ops,
                                              &rlt_tuner_ga_dqn_ops, &rlt_tuner_ppo_ops};

const char *const *rlt_tuner_names(void)
{
    static const char *const names[] = {"random",  "grid", "ga",     "xgb", "xgb-rank",
                                        "bandit", "dqn",  "ga-dqn", "ppo", NULL};
    return names;
}

const char *rlt_tuner_summary(const char *tuner)
{
    static const struct {
        const char *name, *summary;
    } summaries[] = {
        {"random", "uniformly random configurations, never one twice"},
        {"grid", "every configuration in index order"},
        {"ga", "AutoTVM's genetic algorithm: elitism, two-point crossover, mutation"},
        {"xgb", "AutoTVM's XGBoost tuner, regression objective, simulated annealing over the model"},
        {"xgb-rank", "the same with the pairwise rank objective (the default tuner)"},
        {"ga-dqn", "ga with a DQN choosing the crossover point and one choosing the mutation"},
        {"dqn", "ktune's multi-step DQN: -1/0/+1 per knob over episodes"},
        {"bandit", "ktune's one-step contextual bandit (PPO-clip over whole configurations)"},
        {"ppo", "Chameleon: PPO walkers over the XGBoost model, k-means adaptive sampling"},
    };
    for (size_t i = 0; i < RLT_ARRAY_LEN(summaries); i++)
        if (strcmp(summaries[i].name, tuner) == 0) return summaries[i].summary;
    return "";
}

bool rlt_tuner_is_known(const char *name)
{
    for (size_t i = 0; i < RLT_ARRAY_LEN(all_ops); i++)
        if (strcmp(all_ops[i]->name, name) == 0) return true;
    return false;
}

unsigned rlt_tuner_flags(const char *name)
{
    for (size_t i = 0; i < RLT_ARRAY_LEN(all_ops); i++)
        if (strcmp(all_ops[i]->name, name) == 0) return all_ops[i]->flags;
    return 0;
}

void rlt_tuner_names_with(unsigned flags, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < RLT_ARRAY_LEN(all_ops) && used < cap; i++)
        if ((all_ops[i]->flags & flags) == flags)
            used += (size_t)snprintf(buf + used, cap - used, "%s%s", used ? ", " : "", all_ops[i]->name);
}

/* Marks the configurations another proposer offers first as visited,
 * before the tuner's init, so that its own first draws avoid them. */
static rlt_status claim(rlt_tuner *t, rlt_diag *diag)
{
    int n = t->opts.claimed_configs ? RLT_MAX(t->opts.n_claimed, 0) : 0;
    for (int i = 0; i < n; i++) {
        uint64_t index = rlt_space_index_of(t->space, &t->opts.claimed_configs[i]);
        if (!rlt_visited_has(&t->visited, index) && !rlt_visited_add(&t->visited, index))
            return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory keeping start configurations");
    }
    return RLT_STATUS_OK;
}

rlt_status rlt_tuner_create(const char *name, const rlt_space *space, const rlt_tuner_opts *opts, rlt_tuner **out,
                            rlt_diag *diag)
{
    *out = NULL;
    const rlt_tuner_ops *ops = NULL;
    for (size_t i = 0; i < RLT_ARRAY_LEN(all_ops); i++)
        if (strcmp(all_ops[i]->name, name) == 0) ops = all_ops[i];
    if (!ops) {
        char known[256] = "";
        for (const char *const *n = rlt_tuner_names(); *n; n++) {
            strncat(known, *n, sizeof known - strlen(known) - 1);
            if (n[1]) strncat(known, ", ", sizeof known - strlen(known) - 1);
        }
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "unknown tuner '%s' (tuners: %s)", name, known);
    }
    rlt_tuner *t = rlt_calloc(1, sizeof *t);
    if (!t) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a tuner");
    t->ops = ops;
    t->space = space;
    t->opts = opts ? *opts : (rlt_tuner_opts){0};
    rlt_rng_seed(&t->rng, t->opts.seed);
    RLT_ASSERT(((ops->flags & RLT_TUNER_HAS_AGENT) != 0) == (ops->save && ops->load));
    rlt_status st = claim(t, diag);
    t->opts.claimed_configs = NULL; /* the caller's */
    if (st == RLT_STATUS_OK) st = ops->init(t, diag);
    if (st != RLT_STATUS_OK) {
        rlt_tuner_destroy(t);
        return st;
    }
    *out = t;
    return RLT_STATUS_OK;
}

void rlt_tuner_destroy(rlt_tuner *t)
{
    if (!t) return;
    if (t->ops && t->ops->fini) t->ops->fini(t);
    rlt_visited_free(&t->visited);
    rlt_free(t);
}

int rlt_tuner_next_batch(rlt_tuner *t, int max, rlt_config *out)
{
    return max > 0 ? t->ops->next_batch(t, max, out) : 0;
}

rlt_status rlt_tuner_update(rlt_tuner *t, int n, const rlt_config *configs, const double *scores, rlt_diag *diag)
{
    for (int i = 0; i < n; i++) rlt_visited_add(&t->visited, rlt_space_index_of(t->space, &configs[i]));
    return t->ops->update(t, n, configs, scores, diag);
}

const char *rlt_tuner_name(const rlt_tuner *t) { return t->ops->name; }
