/*
 * graph_env.c - the graph-rewrite environment (rltune/graph_opt.h, "the
 * environment"): RLFlow's over rltune's verified rules. The state is a
 * graph; the actions are the (rule, location) candidates found in it, and
 * stop; a step applies one (rlt_gopt_apply), costs the new graph with the
 * measured-kernel cost model (cost.h) and rewards the relative cost drop,
 * X-RLflow's 100 x (c_prev - c_new) / c_0. The observation is built here:
 * node features (op type one-hot, time, size, share of the cost), edges
 * from producer to reader, each candidate's rule and matched nodes.
 */
#include "api/graph_opt_internal.h"
#include "api/model_internal.h"
#include "gopt/cost.h"

#include <math.h>
#include <string.h>

/* Op types with a feature of their own; the rest share "other". */
static const char *const op_vocab[] = {
    "Conv", "MatMul", "Gemm", "Add", "Mul", "Sub", "Div", "Relu", "Clip", "Sigmoid", "Tanh", "Erf", "Gelu",
    "Concat", "Split", "Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze", "MaxPool", "AveragePool",
    "GlobalAveragePool", "Softmax", "LayerNormalization", "ReduceMean", "Pow", "Sqrt", "BatchNormalization",
    "Identity", "Dropout", "Pad", "Slice", "Gather",
};
#define N_OPS ((int)RLT_ARRAY_LEN(op_vocab))
#define F_OTHER N_OPS
#define F_TIME (N_OPS + 1)      /* log1p(time in us) / 5 */
#define F_SIZE (N_OPS + 2)      /* log10(1 + output elements) / 7 */
#define F_SHARE (N_OPS + 3)     /* the node's share of the graph's cost */
#define F_WEIGHTS (N_OPS + 4)   /* 1 when the node reads a constant */
#define F_OUTPUT (N_OPS + 5)    /* 1 when it writes a graph output */
#define N_FEATURES (N_OPS + 6)

int rlt_graph_env_n_features(void) { return N_FEATURES; }

const char *rlt_graph_env_feature_name(int i)
{
    static const char *const extra[] = {"other", "time", "size", "share", "weights", "output"};
    if (i < 0 || i >= N_FEATURES) return "?";
    return i < N_OPS ? op_vocab[i] : extra[i - N_OPS];
}

struct rlt_graph_env {
    const rlt_ruleset *rs;
    rlt_graph_env_options o;
    rlt_gcost *cost;
    rlt_graph *g, *best;
    double cost_now, cost0, best_cost;
    double *per_node;
    rlt_gopt_match *cands;
    int n_cands;
    unsigned char *mask; /* max_candidates + 1 */
    int step;
    bool done, has_episode, is_refused;
    uint64_t *seen;      /* hashes of the episode's graphs: a rewrite back to one is refused */
    int n_seen, cap_seen;
    int n_cost_evals;
    /* the observation */
    float *features;
    int *edges, n_edges, cap_nodes, cap_edges;
    int *cand_rule, *cand_nodes;
};

void rlt_graph_env_options_init(rlt_graph_env_options *o)
{
    memset(o, 0, sizeof *o);
    o->horizon = 50;
    o->max_candidates = 256;
    o->n_threads = 1;
    o->seed = 1;
    o->cold_weights = true;
}

rlt_status rlt_graph_env_create(const rlt_rules *rules, const rlt_graph_env_options *o, rlt_graph_env **out,
                                rlt_diag *diag)
{
    *out = NULL;
    if (o->horizon < 1 || o->horizon > 100000 || o->max_candidates < 1 || o->max_candidates > 65536 ||
        (o->reward != RLT_GRAPH_REWARD_STEP && o->reward != RLT_GRAPH_REWARD_BEST) || !(o->step_penalty >= 0) ||
        o->step_penalty > 100)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "graph env: the horizon must be 1..100000, max_candidates 1..65536, the reward step or best "
                        "and the step penalty 0..100");
    for (int i = 0; i < rules->set->n_rules; i++)
        if (!rules->set->rules[i]->is_verified)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "graph env: rule %s is not verified",
                            rules->set->rules[i]->name);
    rlt_graph_env *e = rlt_calloc(1, sizeof *e);
    if (!e) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory making a graph environment");
    e->rs = rules->set;
    e->o = *o;
    e->mask = rlt_calloc((size_t)o->max_candidates + 1, 1);
    e->cand_rule = rlt_calloc((size_t)o->max_candidates + 1, sizeof *e->cand_rule);
    e->cand_nodes = rlt_calloc(((size_t)o->max_candidates + 1) * RLT_GRAPH_ENV_MAX_ANCHORS, sizeof *e->cand_nodes);
    rlt_gcost_options co;
    rlt_gcost_options_init(&co);
    co.db_path = o->db_path;
    co.n_threads = o->n_threads;
    co.build = o->build;
    co.seed = o->seed;
    co.cold_weights = o->cold_weights;
    co.n_seeds = rlt_graph_cost_seeds(o->n_seeds, o->db_path);
    rlt_status st = RLT_STATUS_OK;
    if (!e->mask || !e->cand_rule || !e->cand_nodes)
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory making a graph environment");
    else
        st = rlt_gcost_create(&co, &e->cost, diag);
    if (st != RLT_STATUS_OK) {
        rlt_graph_env_destroy(e);
        return st;
    }
    e->o.db_path = NULL; /* the cost model keeps its own copy */
    *out = e;
    return RLT_STATUS_OK;
}

void rlt_graph_env_destroy(rlt_graph_env *e)
{
    if (!e) return;
    rlt_gcost_destroy(e->cost);
    rlt_graph_destroy(e->g);
    rlt_graph_destroy(e->best);
    rlt_free(e->per_node);
    rlt_free(e->cands);
    rlt_free(e->mask);
    rlt_free(e->features);
    rlt_free(e->edges);
    rlt_free(e->cand_rule);
    rlt_free(e->cand_nodes);
    rlt_free(e->seen);
    rlt_free(e);
}

/* Adds h to the episode's graphs; false when it was there already. */
static bool seen_add(rlt_graph_env *e, uint64_t h, bool *has_failed)
{
    for (int i = 0; i < e->n_seen; i++)
        if (e->seen[i] == h) return false;
    if (e->n_seen == e->cap_seen) {
        int cap = e->cap_seen ? 2 * e->cap_seen : 64;
        uint64_t *t = rlt_realloc(e->seen, (size_t)cap * sizeof *t);
        if (!t) {
            *has_failed = true;
            return false;
        }
        e->seen = t;
        e->cap_seen = cap;
    }
    e->seen[e->n_seen++] = h;
    return true;
}

/* Costs graph g into *cost and e->per_node (sized for g). */
static rlt_status cost_graph(rlt_graph_env *e, const rlt_graph *g, double *cost, rlt_diag *diag)
{
    double *per = rlt_realloc(e->per_node, ((size_t)g->n_nodes + 1) * sizeof *per);
    if (!per) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory costing a graph");
    e->per_node = per;
    rlt_status st = rlt_gcost_graph(e->cost, g, cost, per, diag);
    if (st == RLT_STATUS_OK) e->n_cost_evals++;
    return st;
}

/* The features, edges and candidates of the current graph. */
static rlt_status observe(rlt_graph_env *e, rlt_diag *diag)
{
    const rlt_graph *g = e->g;
    int n_edges = 0;
    for (int i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < g->nodes[i].n_inputs; k++) {
            int t = g->nodes[i].inputs[k];
            n_edges += t >= 0 && g->tensors[t].producer >= 0;
        }
    if (g->n_nodes > e->cap_nodes) {
        rlt_free(e->features);
        if (!(e->features = rlt_malloc((size_t)g->n_nodes * N_FEATURES * sizeof *e->features)))
            return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory observing a graph");
        e->cap_nodes = g->n_nodes;
    }
    if (n_edges > e->cap_edges) {
        rlt_free(e->edges);
        if (!(e->edges = rlt_malloc((size_t)n_edges * 2 * sizeof *e->edges)))
            return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory observing a graph");
        e->cap_edges = n_edges;
    }
    bool *is_output = rlt_calloc((size_t)g->n_tensors + 1, sizeof *is_output);
    if (!is_output) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory observing a graph");
    for (int i = 0; i < g->n_outputs; i++) is_output[g->outputs[i]] = true;
    e->n_edges = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const rlt_graph_node *n = &g->nodes[i];
        float *f = e->features + (size_t)i * N_FEATURES;
        memset(f, 0, N_FEATURES * sizeof *f);
        int op = 0;
        while (op < N_OPS && strcmp(op_vocab[op], n->op_type) != 0) op++;
        f[op] = 1; /* F_OTHER when not in the list */
        double t_ms = n->is_removed ? 0 : e->per_node[i];
        f[F_TIME] = (float)(log1p(t_ms * 1e3) / 5.0);
        f[F_SHARE] = e->cost_now > 0 ? (float)(t_ms / e->cost_now) : 0;
        for (int k = 0; k < n->n_inputs; k++) {
            int t = n->inputs[k];
            if (t < 0) continue;
            if (g->tensors[t].data) f[F_WEIGHTS] = 1;
            if (g->tensors[t].producer >= 0) {
                e->edges[2 * e->n_edges] = g->tensors[t].producer;
                e->edges[2 * e->n_edges + 1] = i;
                e->n_edges++;
            }
        }
        for (int k = 0; k < n->n_outputs; k++) {
            int t = n->outputs[k];
            if (t < 0) continue;
            if (is_output[t]) f[F_OUTPUT] = 1;
            if (k == 0) f[F_SIZE] = (float)(log10(1.0 + (double)rlt_graph_tensor_n_elems(&g->tensors[t])) / 7.0);
        }
    }
    rlt_free(is_output);
    /* the candidates: the first max_candidates matches */
    rlt_free(e->cands);
    e->cands = NULL;
    e->n_cands = 0;
    rlt_status st = rlt_gopt_find(e->rs, g, &e->cands, &e->n_cands, diag);
    if (st != RLT_STATUS_OK) return st;
    if (e->n_cands > e->o.max_candidates) e->n_cands = e->o.max_candidates;
    memset(e->mask, 0, (size_t)e->o.max_candidates + 1);
    for (int k = 0; k < e->n_cands; k++) {
        const rlt_gopt_match *m = &e->cands[k];
        const rlt_rule *r = e->rs->rules[m->rule];
        e->cand_rule[k] = m->rule;
        for (int j = 0; j < RLT_GRAPH_ENV_MAX_ANCHORS; j++)
            e->cand_nodes[k * RLT_GRAPH_ENV_MAX_ANCHORS + j] = j < r->n_src ? m->nodes[j] : -1;
        e->mask[k] = 1;
    }
    e->mask[e->o.max_candidates] = 1;
    return RLT_STATUS_OK;
}

static bool any_candidate(const rlt_graph_env *e)
{
    for (int k = 0; k < e->n_cands; k++)
        if (e->mask[k]) return true;
    return false;
}

rlt_status rlt_graph_env_reset(rlt_graph_env *e, const rlt_model *m, rlt_diag *diag)
{
    rlt_graph_destroy(e->g);
    rlt_graph_destroy(e->best);
    e->g = e->best = NULL;
    e->has_episode = false;
    rlt_status st = rlt_graph_clone(rlt_model_graph(m), &e->g, diag);
    if (st == RLT_STATUS_OK) st = rlt_graph_clone(e->g, &e->best, diag);
    if (st == RLT_STATUS_OK) st = cost_graph(e, e->g, &e->cost0, diag);
    if (st != RLT_STATUS_OK) return st;
    e->cost_now = e->best_cost = e->cost0;
    e->step = 0;
    e->is_refused = false;
    e->n_seen = 0;
    bool has_failed = false;
    seen_add(e, rlt_gopt_graph_hash(e->g), &has_failed);
    if (has_failed) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory starting an episode");
    if ((st = observe(e, diag)) != RLT_STATUS_OK) return st;
    e->done = !any_candidate(e);
    e->has_episode = true;
    return RLT_STATUS_OK;
}

rlt_status rlt_graph_env_step(rlt_graph_env *e, int a, double *reward, bool *done, rlt_diag *diag)
{
    *reward = 0;
    *done = e->done;
    if (!e->has_episode || e->done)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "graph env: step after the episode's end (reset first)");
    if (a < 0 || a > e->o.max_candidates || !e->mask[a])
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "graph env: action %d is masked (%d candidates offered)", a,
                        e->n_cands);
    if (a == e->o.max_candidates) {
        e->done = *done = true;
        return RLT_STATUS_OK;
    }
    e->step++;
    e->is_refused = false;
    rlt_graph *g2 = NULL;
    rlt_status st = rlt_gopt_apply(e->rs, e->g, &e->cands[a], &g2, NULL, diag);
    if (st != RLT_STATUS_OK) return st;
    if (g2) { /* back to a graph of this episode (a move and its inverse): refused, nothing costed */
        bool has_failed = false;
        if (!seen_add(e, rlt_gopt_graph_hash(g2), &has_failed)) {
            rlt_graph_destroy(g2);
            g2 = NULL;
            if (has_failed) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory stepping");
        }
    }
    if (!g2) {
        e->mask[a] = 0; /* refused: the graph stays, the candidate goes */
        e->is_refused = true;
    } else {
        double c;
        if ((st = cost_graph(e, g2, &c, diag)) != RLT_STATUS_OK) {
            rlt_graph_destroy(g2);
            return st;
        }
        double best_before = e->best_cost;
        if (e->o.reward == RLT_GRAPH_REWARD_STEP) *reward = 100.0 * (e->cost_now - c) / e->cost0;
        rlt_graph_destroy(e->g);
        e->g = g2;
        e->cost_now = c;
        if (rlt_gopt_is_better(c, rlt_graph_n_live_nodes(g2), e->best_cost, rlt_graph_n_live_nodes(e->best))) {
            rlt_graph *copy = NULL;
            if ((st = rlt_graph_clone(g2, &copy, diag)) != RLT_STATUS_OK) return st;
            rlt_graph_destroy(e->best);
            e->best = copy;
            e->best_cost = c;
        }
        if (e->o.reward == RLT_GRAPH_REWARD_BEST) *reward = 100.0 * (best_before - e->best_cost) / e->cost0;
        if ((st = observe(e, diag)) != RLT_STATUS_OK) return st;
    }
    *reward -= e->o.step_penalty;
    e->done = *done = e->step >= e->o.horizon || !any_candidate(e);
    return RLT_STATUS_OK;
}

void rlt_graph_env_observe(const rlt_graph_env *e, rlt_graph_env_obs *out)
{
    memset(out, 0, sizeof *out);
    out->n_features = N_FEATURES;
    out->n_actions = e->o.max_candidates + 1;
    out->mask = e->mask;
    out->horizon = e->o.horizon;
    if (!e->has_episode) {
        out->done = true;
        return;
    }
    out->n_nodes = e->g->n_nodes;
    out->features = e->features;
    out->n_edges = e->n_edges;
    out->edges = e->edges;
    out->n_candidates = e->n_cands;
    out->cand_rule = e->cand_rule;
    out->cand_nodes = e->cand_nodes;
    out->cost_ms = e->cost_now;
    out->cost0_ms = e->cost0;
    out->best_cost_ms = e->best_cost;
    out->step = e->step;
    out->done = e->done;
    out->is_refused = e->is_refused;
}

rlt_status rlt_graph_env_best_model(const rlt_graph_env *e, rlt_model **out, rlt_diag *diag)
{
    *out = NULL;
    if (!e->best) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "graph env: no episode yet");
    rlt_graph *copy = NULL;
    rlt_status st = rlt_graph_clone(e->best, &copy, diag);
    if (st != RLT_STATUS_OK) return st;
    return rlt_model_from_graph(copy, out, diag);
}

int rlt_graph_env_n_cost_evals(const rlt_graph_env *e) { return e->n_cost_evals; }

const rlt_graph *rlt_graph_env_graph(const rlt_graph_env *e) { return e->g; }

void rlt_graph_env_cost_stats(const rlt_graph_env *e, rlt_gcost_stats *out) { rlt_gcost_stats_get(e->cost, out); }
