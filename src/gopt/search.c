/*
 * search.c - searches over rewrite sequences (rlt_gopt_search): greedy
 * (apply the rewrite that lowers the cost most, until none does) and
 * TASO's cost-based backtracking (a queue of graphs by cost; each graph
 * taken is expanded by every rewrite that applies; a new graph is queued
 * when it costs under alpha x the best so far; a hash set keeps any graph
 * from being costed twice; stops after `budget` graphs taken). The best
 * graph is kept with the rewrites that led to it.
 */
#include "gopt/gopt_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void rlt_gopt_options_init(rlt_gopt_options *o)
{
    memset(o, 0, sizeof *o);
    o->search = RLT_GOPT_SEARCH_GREEDY;
    o->alpha = 1.05;
    o->budget = 200;
}

static const char *const search_names[] = {"none", "greedy", "taso"};

bool rlt_gopt_search_parse(const char *name, rlt_gopt_search_kind *out)
{
    for (size_t i = 0; i < RLT_ARRAY_LEN(search_names); i++)
        if (strcmp(search_names[i], name) == 0) {
            *out = (rlt_gopt_search_kind)i;
            return true;
        }
    return false;
}

const char *rlt_gopt_search_str(rlt_gopt_search_kind k)
{
    return (unsigned)k < RLT_ARRAY_LEN(search_names) ? search_names[k] : "?";
}

/* ---- the graphs a search made ------------------------------------------------------ */

typedef struct snode {
    rlt_graph *g;       /* owned while queued or best; NULL once dropped */
    double cost;
    int n_nodes;        /* live nodes: of two graphs costing the same, the smaller is better */
    int parent;         /* index in the search's nodes, -1 for the start */
    int rule;
    char where[128];
} snode;

typedef struct search {
    const rlt_ruleset *rs;
    const rlt_gopt_options *o;
    rlt_gopt_cost_fn cost_fn;
    void *cost_ctx;
    snode *nodes;
    int n_nodes, cap_nodes;
    uint64_t *seen;     /* open addressing, 0 = empty */
    int cap_seen, n_seen;
    int *heap;          /* node indices, a min-heap by cost */
    int n_heap, cap_heap;
    int best;
    rlt_gopt_result *res;
    uint64_t t0;
    rlt_diag *diag;
} search;

static rlt_status oom(search *s) { return rlt_fail(s->diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory searching"); }

/* Adds h to the seen set; false when it was there. */
static bool seen_add(search *s, uint64_t h, bool *has_failed)
{
    if (h == 0) h = 1;
    if (2 * (s->n_seen + 1) > s->cap_seen) {
        int cap = s->cap_seen ? 2 * s->cap_seen : 1024;
        uint64_t *t = rlt_calloc((size_t)cap, sizeof *t);
        if (!t) {
            *has_failed = true;
            return false;
        }
        for (int i = 0; i < s->cap_seen; i++) {
            if (!s->seen[i]) continue;
            int j = (int)(s->seen[i] & (uint64_t)(cap - 1));
            while (t[j]) j = (j + 1) & (cap - 1);
            t[j] = s->seen[i];
        }
        rlt_free(s->seen);
        s->seen = t;
        s->cap_seen = cap;
    }
    int j = (int)(h & (uint64_t)(s->cap_seen - 1));
    while (s->seen[j]) {
        if (s->seen[j] == h) return false;
        j = (j + 1) & (s->cap_seen - 1);
    }
    s->seen[j] = h;
    s->n_seen++;
    return true;
}

static int node_add(search *s, rlt_graph *g, double cost, int parent, int rule, const char *where)
{
    if (s->n_nodes == s->cap_nodes) {
        int cap = s->cap_nodes ? 2 * s->cap_nodes : 64;
        snode *n = rlt_realloc(s->nodes, (size_t)cap * sizeof *n);
        if (!n) return -1;
        s->nodes = n;
        s->cap_nodes = cap;
    }
    snode *n = &s->nodes[s->n_nodes];
    *n = (snode){.g = g, .cost = cost, .n_nodes = rlt_graph_n_live_nodes(g), .parent = parent, .rule = rule};
    snprintf(n->where, sizeof n->where, "%s", where ? where : "");
    return s->n_nodes++;
}

bool rlt_gopt_is_better(double cost_a, int n_a, double cost_b, int n_b)
{
    double tie = 1e-9 * fmax(fabs(cost_a), fabs(cost_b));
    if (fabs(cost_a - cost_b) <= tie) return n_a < n_b; /* removing an Identity costs nothing, still simplifies */
    return cost_a < cost_b;
}

static bool better(const search *s, int a, int b)
{
    const snode *x = &s->nodes[a], *y = &s->nodes[b];
    return rlt_gopt_is_better(x->cost, x->n_nodes, y->cost, y->n_nodes);
}

static bool heap_less(const search *s, int a, int b) { return better(s, a, b); }

static bool heap_push(search *s, int node)
{
    if (s->n_heap == s->cap_heap) {
        int cap = s->cap_heap ? 2 * s->cap_heap : 64;
        int *h = rlt_realloc(s->heap, (size_t)cap * sizeof *h);
        if (!h) return false;
        s->heap = h;
        s->cap_heap = cap;
    }
    int i = s->n_heap++;
    s->heap[i] = node;
    while (i > 0 && heap_less(s, s->heap[i], s->heap[(i - 1) / 2])) {
        int p = (i - 1) / 2, t = s->heap[p];
        s->heap[p] = s->heap[i];
        s->heap[i] = t;
        i = p;
    }
    return true;
}

static int heap_pop(search *s)
{
    int top = s->heap[0];
    s->heap[0] = s->heap[--s->n_heap];
    for (int i = 0;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < s->n_heap && heap_less(s, s->heap[l], s->heap[m])) m = l;
        if (r < s->n_heap && heap_less(s, s->heap[r], s->heap[m])) m = r;
        if (m == i) break;
        int t = s->heap[m];
        s->heap[m] = s->heap[i];
        s->heap[i] = t;
        i = m;
    }
    return top;
}

static rlt_status cost_of(search *s, const rlt_graph *g, double *cost)
{
    rlt_status st = s->cost_fn(s->cost_ctx, g, cost, NULL, s->diag);
    if (st == RLT_STATUS_OK) s->res->n_cost_evals++;
    return st;
}

static bool out_of_time(const search *s)
{
    return s->o->time_limit_s > 0 && (double)(rlt_time_ns() - s->t0) * 1e-9 > s->o->time_limit_s;
}

/* Every new graph one rewrite away from node `from`: costed, then given to
 * `keep` (which returns whether the graph was taken; if not, it is
 * destroyed). */
typedef bool (*keep_fn)(search *s, int child);

static rlt_status expand(search *s, int from, keep_fn keep)
{
    const rlt_graph *g = s->nodes[from].g;
    rlt_gopt_match *ms = NULL;
    int n_ms = 0;
    rlt_status st = rlt_gopt_find(s->rs, g, &ms, &n_ms, s->diag);
    for (int i = 0; i < n_ms && st == RLT_STATUS_OK && !out_of_time(s); i++) {
        rlt_graph *g2 = NULL;
        if ((st = rlt_gopt_apply(s->rs, g, &ms[i], &g2, NULL, s->diag)) != RLT_STATUS_OK || !g2) continue;
        s->res->n_candidates++;
        bool has_failed = false;
        if (!seen_add(s, rlt_gopt_graph_hash(g2), &has_failed)) {
            rlt_graph_destroy(g2);
            if (has_failed) st = oom(s);
            continue;
        }
        double cost;
        if ((st = cost_of(s, g2, &cost)) != RLT_STATUS_OK) {
            rlt_graph_destroy(g2);
            break;
        }
        int child = node_add(s, g2, cost, from, ms[i].rule, rlt_graph_node_label(g, ms[i].nodes[0]));
        if (child < 0) {
            rlt_graph_destroy(g2);
            st = oom(s);
            break;
        }
        if (s->o->is_verbose)
            fprintf(stderr, "graph-opt: %s at %s: cost %.4f\n", s->rs->rules[ms[i].rule]->name,
                    s->nodes[child].where, cost);
        if (!keep(s, child)) {
            rlt_graph_destroy(s->nodes[child].g);
            s->nodes[child].g = NULL;
        }
    }
    rlt_free(ms);
    return st;
}

/* ---- greedy ----------------------------------------------------------------------- */

/* s->best is the round's start or the best child of it so far. */
static bool keep_greedy(search *s, int child)
{
    if (!better(s, child, s->best)) return false;
    if (s->nodes[s->best].parent == s->nodes[child].parent) { /* a sibling beaten */
        rlt_graph_destroy(s->nodes[s->best].g);
        s->nodes[s->best].g = NULL;
    }
    s->best = child;
    return true;
}

static rlt_status run_greedy(search *s, int start)
{
    int cur = start;
    for (int step = 0; step < s->o->budget && !out_of_time(s); step++) {
        s->best = cur;
        rlt_status st = expand(s, cur, keep_greedy);
        s->res->n_expanded++;
        if (st != RLT_STATUS_OK) return st;
        if (s->best == cur) break;
        if (cur != start) {
            rlt_graph_destroy(s->nodes[cur].g); /* its child keeps what it borrows */
            s->nodes[cur].g = NULL;
        }
        cur = s->best;
    }
    s->best = cur;
    return RLT_STATUS_OK;
}

/* ---- TASO's backtracking ---------------------------------------------------------- */

static bool keep_taso(search *s, int child)
{
    double c = s->nodes[child].cost;
    if (c >= s->o->alpha * s->nodes[s->best].cost && !better(s, child, s->best)) return false;
    if (!heap_push(s, child)) return false;
    if (better(s, child, s->best)) s->best = child;
    return true;
}

static rlt_status run_taso(search *s, int start)
{
    s->best = start;
    if (!heap_push(s, start)) return oom(s);
    while (s->n_heap > 0 && s->res->n_expanded < s->o->budget && !out_of_time(s)) {
        int cur = heap_pop(s);
        rlt_status st = expand(s, cur, keep_taso);
        s->res->n_expanded++;
        if (st != RLT_STATUS_OK) return st;
        if (cur != s->best && cur != start) {
            rlt_graph_destroy(s->nodes[cur].g); /* expanded: its children keep what they borrow */
            s->nodes[cur].g = NULL;
        }
    }
    return RLT_STATUS_OK;
}

/* ---- the search ------------------------------------------------------------------- */

rlt_status rlt_gopt_search(const rlt_ruleset *rs, const rlt_graph *g, const rlt_gopt_options *o,
                           rlt_gopt_cost_fn cost_fn, void *cost_ctx, rlt_gopt_result *out, rlt_diag *diag)
{
    memset(out, 0, sizeof *out);
    if (o->alpha < 1.0 || o->budget < 0)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "alpha must be >= 1 and the budget >= 0");
    search s = {.rs = rs, .o = o, .cost_fn = cost_fn, .cost_ctx = cost_ctx, .res = out, .diag = diag,
                .t0 = rlt_time_ns()};
    rlt_graph *start_g = NULL;
    rlt_status st = rlt_graph_clone(g, &start_g, diag);
    if (st != RLT_STATUS_OK) return st;
    double cost0;
    if ((st = cost_of(&s, start_g, &cost0)) != RLT_STATUS_OK) {
        rlt_graph_destroy(start_g);
        return st;
    }
    int start = node_add(&s, start_g, cost0, -1, -1, NULL);
    bool has_failed = false;
    if (start < 0) {
        rlt_graph_destroy(start_g);
        return oom(&s);
    }
    seen_add(&s, rlt_gopt_graph_hash(start_g), &has_failed);
    s.best = start;
    if (has_failed) st = oom(&s);
    else if (o->search == RLT_GOPT_SEARCH_GREEDY) st = run_greedy(&s, start);
    else if (o->search == RLT_GOPT_SEARCH_TASO) st = run_taso(&s, start);
    if (st == RLT_STATUS_OK) {
        /* the rewrites that led to the best graph, first to last */
        int n = 0;
        for (int k = s.best; s.nodes[k].parent >= 0; k = s.nodes[k].parent) n++;
        out->steps = rlt_calloc((size_t)n + 1, sizeof *out->steps);
        if (!out->steps) {
            st = oom(&s);
        } else {
            out->n_steps = n;
            int i = n;
            for (int k = s.best; s.nodes[k].parent >= 0; k = s.nodes[k].parent) {
                rlt_gopt_step *step = &out->steps[--i];
                step->rule = s.nodes[k].rule;
                snprintf(step->where, sizeof step->where, "%s", s.nodes[k].where);
                step->cost_after = s.nodes[k].cost;
            }
            out->graph = s.nodes[s.best].g;
            s.nodes[s.best].g = NULL;
            out->cost_before = cost0;
            out->cost_after = s.nodes[s.best].cost;
        }
    }
    for (int i = 0; i < s.n_nodes; i++) rlt_graph_destroy(s.nodes[i].g);
    rlt_free(s.nodes);
    rlt_free(s.seen);
    rlt_free(s.heap);
    out->search_s = (double)(rlt_time_ns() - s.t0) * 1e-9;
    if (st != RLT_STATUS_OK) rlt_gopt_result_free(out);
    return st;
}

void rlt_gopt_result_free(rlt_gopt_result *r)
{
    if (!r) return;
    rlt_graph_destroy(r->graph);
    rlt_free(r->steps);
    r->graph = NULL;
    r->steps = NULL;
    r->n_steps = 0;
}
