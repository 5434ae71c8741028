/*
 * match.c - where rules match in a graph (rlt_gopt_rule_matches: backtracking
 * over the source nodes), applying a match to a copy of the graph
 * (rlt_gopt_apply, with its cycle and shape checks), ONNX's attribute
 * defaults as matching sees them, and the structural graph hash.
 */
#include "gopt/gopt_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- attribute defaults --------------------------------------------------------- */

static void rv_int(rlt_rvalue *v, int64_t i)
{
    memset(v, 0, sizeof *v);
    v->kind = RLT_GRAPH_ATTR_INT;
    v->i = i;
}

static void rv_float(rlt_rvalue *v, double f)
{
    memset(v, 0, sizeof *v);
    v->kind = RLT_GRAPH_ATTR_FLOAT;
    v->f = f;
}

static void rv_ints(rlt_rvalue *v, int n, int64_t fill)
{
    memset(v, 0, sizeof *v);
    v->kind = RLT_GRAPH_ATTR_INTS;
    v->n = n < RLT_RVALUE_MAX ? n : RLT_RVALUE_MAX;
    for (int k = 0; k < v->n; k++) v->ints[k] = fill;
}

static void rv_string(rlt_rvalue *v, const char *s)
{
    memset(v, 0, sizeof *v);
    v->kind = RLT_GRAPH_ATTR_STRING;
    v->s = s;
}

static const rlt_graph_tensor *node_in(const rlt_graph *g, const rlt_graph_node *n, int i)
{
    return i < n->n_inputs && n->inputs[i] >= 0 ? &g->tensors[n->inputs[i]] : NULL;
}

/* Attributes ONNX moved to inputs in later opsets. Rules say them as
 * attributes; matching reads them from a constant input where the graph's
 * opset has one, and applying writes the graph's form. */
typedef struct input_attr {
    const char *op;
    int input;
    const char *attr;
    int since;       /* the opset from which it is an input */
    rlt_dtype dtype;
    bool is_scalar;
} input_attr;

static const input_attr input_attrs[] = {
    {"Split", 1, "split", 13, RLT_DTYPE_INT64, false},    {"Squeeze", 1, "axes", 13, RLT_DTYPE_INT64, false},
    {"Unsqueeze", 1, "axes", 13, RLT_DTYPE_INT64, false}, {"Pad", 1, "pads", 11, RLT_DTYPE_INT64, false},
    {"Pad", 2, "value", 11, RLT_DTYPE_FLOAT32, true},     {"Clip", 1, "min", 11, RLT_DTYPE_FLOAT32, true},
    {"Clip", 2, "max", 11, RLT_DTYPE_FLOAT32, true},      {"Dropout", 1, "ratio", 12, RLT_DTYPE_FLOAT32, true},
};

/* The first input of node n that stands for an attribute at g's opset,
 * or INT_MAX. */
static int first_attr_input(const rlt_graph *g, const rlt_graph_node *n)
{
    int first = 1 << 30;
    for (size_t k = 0; k < RLT_ARRAY_LEN(input_attrs); k++) {
        const input_attr *ia = &input_attrs[k];
        if (g->opset >= ia->since && strcmp(ia->op, n->op_type) == 0 && ia->input < first) first = ia->input;
    }
    return first;
}

static const input_attr *input_attr_of(const rlt_graph *g, const char *op, const char *attr)
{
    for (size_t k = 0; k < RLT_ARRAY_LEN(input_attrs); k++) {
        const input_attr *ia = &input_attrs[k];
        if (g->opset >= ia->since && strcmp(ia->op, op) == 0 && strcmp(ia->attr, attr) == 0) return ia;
    }
    return NULL;
}

/* The value of a constant input as an attribute would hold it; false when
 * the input is absent, not constant, or too long. */
static bool input_value(const rlt_graph *g, const rlt_graph_node *n, const input_attr *ia, rlt_rvalue *out)
{
    if (ia->input >= n->n_inputs || n->inputs[ia->input] < 0) return false;
    const rlt_graph_tensor *t = &g->tensors[n->inputs[ia->input]];
    int64_t count = rlt_graph_tensor_n_elems(t);
    if (!t->data || count > RLT_RVALUE_MAX || (ia->is_scalar && count != 1)) return false;
    memset(out, 0, sizeof *out);
    bool is_float = t->dtype == RLT_DTYPE_FLOAT32;
    out->kind = ia->is_scalar ? (is_float ? RLT_GRAPH_ATTR_FLOAT : RLT_GRAPH_ATTR_INT)
                              : (is_float ? RLT_GRAPH_ATTR_FLOATS : RLT_GRAPH_ATTR_INTS);
    out->n = ia->is_scalar ? 0 : (int)count;
    for (int64_t i = 0; i < count; i++) {
        double f = 0;
        int64_t v = 0;
        switch (t->dtype) {
        case RLT_DTYPE_FLOAT32: f = ((const float *)t->data)[i]; break;
        case RLT_DTYPE_INT64: v = ((const int64_t *)t->data)[i]; break;
        case RLT_DTYPE_INT32: v = ((const int32_t *)t->data)[i]; break;
        default: return false;
        }
        if (ia->is_scalar) {
            out->f = f;
            out->i = v;
        } else {
            out->floats[i] = f;
            out->ints[i] = v;
        }
    }
    return true;
}

bool rlt_gopt_attr_default(const rlt_graph *g, const rlt_graph_node *n, const char *name, rlt_rvalue *out)
{
    const char *op = n->op_type;
    const rlt_graph_tensor *x = node_in(g, n, 0);
    if (strcmp(op, "Conv") == 0 || strcmp(op, "MaxPool") == 0 || strcmp(op, "AveragePool") == 0) {
        bool is_conv = op[0] == 'C';
        const rlt_graph_tensor *w = node_in(g, n, 1);
        int n_sp = is_conv ? (w ? w->rank - 2 : -1) : (x ? x->rank - 2 : -1);
        if (n_sp < 0) return false;
        if (strcmp(name, "strides") == 0 || strcmp(name, "dilations") == 0) return rv_ints(out, n_sp, 1), true;
        if (strcmp(name, "pads") == 0) return rv_ints(out, 2 * n_sp, 0), true;
        if (strcmp(name, "auto_pad") == 0) return rv_string(out, "NOTSET"), true;
        if (is_conv && strcmp(name, "group") == 0) return rv_int(out, 1), true;
        if (is_conv && strcmp(name, "kernel_shape") == 0) {
            rv_ints(out, n_sp, 0);
            for (int k = 0; k < n_sp && k < RLT_RVALUE_MAX; k++) out->ints[k] = w->dims[2 + k];
            return true;
        }
        if (!is_conv && (strcmp(name, "ceil_mode") == 0 || strcmp(name, "storage_order") == 0 ||
                         strcmp(name, "count_include_pad") == 0))
            return rv_int(out, 0), true;
        return false;
    }
    if (strcmp(op, "Gemm") == 0) {
        if (strcmp(name, "alpha") == 0 || strcmp(name, "beta") == 0) return rv_float(out, 1.0), true;
        if (strcmp(name, "transA") == 0 || strcmp(name, "transB") == 0) return rv_int(out, 0), true;
        return false;
    }
    if (strcmp(op, "Split") == 0 && strcmp(name, "axis") == 0) return rv_int(out, 0), true;
    if (strcmp(op, "Softmax") == 0 && strcmp(name, "axis") == 0) return rv_int(out, g->opset < 13 ? 1 : -1), true;
    if (strcmp(op, "LeakyRelu") == 0 && strcmp(name, "alpha") == 0) return rv_float(out, 0.01), true;
    if (strcmp(op, "Flatten") == 0 && strcmp(name, "axis") == 0) return rv_int(out, 1), true;
    if (strcmp(op, "Gelu") == 0 && strcmp(name, "approximate") == 0) return rv_string(out, "none"), true;
    if (strcmp(op, "Reshape") == 0 && strcmp(name, "allowzero") == 0) return rv_int(out, 0), true;
    if (strcmp(op, "ReduceMean") == 0 && strcmp(name, "keepdims") == 0) return rv_int(out, 1), true;
    if (strcmp(op, "Pad") == 0) {
        if (strcmp(name, "mode") == 0) return rv_string(out, "constant"), true;
        if (strcmp(name, "value") == 0) return rv_float(out, 0.0), true;
        return false;
    }
    if (strcmp(op, "LayerNormalization") == 0) {
        if (strcmp(name, "axis") == 0) return rv_int(out, -1), true;
        if (strcmp(name, "epsilon") == 0) return rv_float(out, 1e-5), true;
        if (strcmp(name, "stash_type") == 0) return rv_int(out, 1), true;
        return false;
    }
    if (strcmp(op, "BatchNormalization") == 0) {
        if (strcmp(name, "epsilon") == 0) return rv_float(out, 1e-5), true;
        if (strcmp(name, "momentum") == 0) return rv_float(out, 0.9), true;
        if (strcmp(name, "training_mode") == 0) return rv_int(out, 0), true;
        if (strcmp(name, "spatial") == 0) return rv_int(out, 1), true;
        return false;
    }
    if (strcmp(op, "Transpose") == 0 && strcmp(name, "perm") == 0 && x) {
        rv_ints(out, x->rank, 0);
        for (int k = 0; k < x->rank; k++) out->ints[k] = x->rank - 1 - k;
        return true;
    }
    return false;
}

/* Node n's value of attribute `name`: its own, else the default; none when
 * it has neither. */
static void attr_value(const rlt_graph *g, const rlt_graph_node *n, const char *name, rlt_rvalue *out)
{
    const rlt_graph_attr *a = rlt_graph_node_attr(n, name);
    if (a) {
        rlt_rvalue_of_attr(a, out);
        return;
    }
    const input_attr *ia = input_attr_of(g, n->op_type, name);
    if (ia && input_value(g, n, ia, out)) return;
    if (!rlt_gopt_attr_default(g, n, name, out)) {
        memset(out, 0, sizeof *out);
        out->is_none = true;
    }
}

void rlt_gopt_match_attrs(const rlt_rule *r, const rlt_graph *g, const rlt_gopt_match *m, rlt_rvalue *vals)
{
    for (int v = 0; v < r->n_vars; v++) {
        memset(&vals[v], 0, sizeof vals[v]);
        vals[v].is_none = true;
    }
    for (int k = 0; k < r->n_src; k++) {
        const rlt_rnode *pn = &r->src[k];
        for (int a = 0; a < pn->n_attrs; a++)
            if (pn->attrs[a].var >= 0) attr_value(g, &g->nodes[m->nodes[k]], pn->attrs[a].name, &vals[pn->attrs[a].var]);
    }
}

/* ---- matching ------------------------------------------------------------------ */

typedef struct mctx {
    const rlt_rule *r;
    int rule;
    const rlt_graph *g;
    const gopt_readers *rd;
    rlt_gopt_match m;
    rlt_rvalue vals[RLT_RULE_MAX_VARS];
    bool is_bound[RLT_RULE_MAX_VARS]; /* attribute variables */
    rlt_gopt_match_fn fn;
    void *fn_ctx;
    bool is_stopped;
    rlt_diag *diag;
    rlt_status st;
} mctx;

rlt_status gopt_readers_build(const rlt_graph *g, gopt_readers *rd, rlt_diag *diag)
{
    memset(rd, 0, sizeof *rd);
    rd->start = rlt_calloc((size_t)g->n_tensors + 2, sizeof *rd->start);
    rd->is_output = rlt_calloc((size_t)g->n_tensors + 1, sizeof *rd->is_output);
    int total = 0;
    for (int i = 0; i < g->n_nodes; i++)
        if (!g->nodes[i].is_removed) total += g->nodes[i].n_inputs;
    rd->nodes = rlt_malloc(((size_t)total + 1) * sizeof *rd->nodes);
    if (!rd->start || !rd->is_output || !rd->nodes) {
        gopt_readers_free(rd);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory indexing a graph");
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const rlt_graph_node *n = &g->nodes[i];
        if (n->is_removed) continue;
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0) rd->start[n->inputs[k] + 1]++;
    }
    for (int t = 0; t < g->n_tensors; t++) rd->start[t + 1] += rd->start[t];
    int *fill = rlt_calloc((size_t)g->n_tensors + 1, sizeof *fill);
    if (!fill) {
        gopt_readers_free(rd);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory indexing a graph");
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const rlt_graph_node *n = &g->nodes[i];
        if (n->is_removed) continue;
        for (int k = 0; k < n->n_inputs; k++) {
            int t = n->inputs[k];
            if (t < 0) continue;
            /* a node reading a tensor twice is listed once */
            bool seen = false;
            for (int j = rd->start[t]; j < rd->start[t] + fill[t]; j++) seen |= rd->nodes[j] == i;
            if (!seen) rd->nodes[rd->start[t] + fill[t]++] = i;
        }
    }
    rd->fill = fill;
    for (int i = 0; i < g->n_outputs; i++) rd->is_output[g->outputs[i]] = true;
    return RLT_STATUS_OK;
}

void gopt_readers_free(gopt_readers *rd)
{
    rlt_free(rd->start);
    rlt_free(rd->nodes);
    rlt_free(rd->fill);
    rlt_free(rd->is_output);
    memset(rd, 0, sizeof *rd);
}

/* Node inputs that are data: without the optional ones left out at the
 * end and those standing for attributes. */
static int n_inputs_used(const rlt_graph *g, const rlt_graph_node *n)
{
    int k = n->n_inputs, first = first_attr_input(g, n);
    if (k > first) k = first;
    while (k > 0 && n->inputs[k - 1] < 0) k--;
    return k;
}

static bool is_commutative(const char *op) { return strcmp(op, "Add") == 0 || strcmp(op, "Mul") == 0; }

/* Whether attributes of graph node n fit pattern node pn, binding
 * attribute variables (the caller undoes them from `was_bound`). */
static bool attrs_fit(mctx *c, const rlt_rnode *pn, const rlt_graph_node *n)
{
    for (int a = 0; a < pn->n_attrs; a++) {
        const rlt_rattr *pa = &pn->attrs[a];
        rlt_rvalue v;
        attr_value(c->g, n, pa->name, &v);
        if (pa->var < 0) {
            if (!rlt_rvalue_equal(&v, pa->literal)) return false;
        } else if (c->is_bound[pa->var]) {
            if (!rlt_rvalue_equal(&v, &c->vals[pa->var])) return false;
        } else {
            c->vals[pa->var] = v;
            c->is_bound[pa->var] = true;
        }
    }
    /* an attribute the pattern does not name must be at its default */
    for (int i = 0; i < n->n_attrs; i++) {
        const char *name = n->attrs[i].name;
        bool named = false;
        for (int a = 0; a < pn->n_attrs && !named; a++) named = strcmp(pn->attrs[a].name, name) == 0;
        if (named) continue;
        rlt_rvalue have, def;
        rlt_rvalue_of_attr(&n->attrs[i], &have);
        if (!rlt_gopt_attr_default(c->g, n, name, &def) || !rlt_rvalue_equal(&have, &def)) return false;
    }
    /* so must an input standing for an attribute; and it must be a constant */
    for (size_t k = 0; k < RLT_ARRAY_LEN(input_attrs); k++) {
        const input_attr *ia = &input_attrs[k];
        if (c->g->opset < ia->since || strcmp(ia->op, n->op_type) != 0 || ia->input >= n->n_inputs ||
            n->inputs[ia->input] < 0)
            continue;
        rlt_rvalue have, def;
        if (!input_value(c->g, n, ia, &have)) return false;
        bool named = false;
        for (int a = 0; a < pn->n_attrs && !named; a++) named = strcmp(pn->attrs[a].name, ia->attr) == 0;
        if (!named && (!rlt_gopt_attr_default(c->g, n, ia->attr, &def) || !rlt_rvalue_equal(&have, &def)))
            return false;
    }
    return true;
}

static bool node_used(const mctx *c, int k, int node)
{
    for (int j = 0; j < k; j++)
        if (c->m.nodes[j] == node) return true;
    return false;
}

/* Whether tensor t is read by a node outside the match (or is a graph output). */
static bool read_outside(const mctx *c, int t)
{
    if (c->rd->is_output[t]) return true;
    for (int j = c->rd->start[t]; j < c->rd->start[t] + c->rd->fill[t]; j++)
        if (!node_used(c, c->r->n_src, c->rd->nodes[j])) return true;
    return false;
}

static bool final_checks(mctx *c)
{
    const rlt_rule *r = c->r;
    for (int v = 0; v < r->n_vars; v++) {
        if (r->vars[v].kind != RLT_RVAR_SRC) continue;
        int mapped = -1;
        for (int k = 0; k < r->n_out; k++)
            if (r->out_src[k] == v) mapped = r->out_dst[k];
        int t = c->m.tensors[v];
        if (t < 0) continue;
        if (mapped < 0 && read_outside(c, t)) return false;
        if (mapped >= 0 && r->vars[mapped].kind == RLT_RVAR_INPUT && c->rd->is_output[t]) return false;
    }
    rlt_reval ev = {.rule = r, .g = c->g, .tensors = c->m.tensors, .attrs = c->vals};
    for (int w = 0; w < r->n_where; w++) {
        rlt_rvalue v;
        rlt_diag d = {0};
        if (rlt_rexpr_eval(r->where[w], &ev, &v, &d) != RLT_STATUS_OK) return false;
        if (v.is_none || v.kind != RLT_GRAPH_ATTR_INT || v.i == 0) return false;
    }
    return true;
}

static void match_from(mctx *c, int k);

/* Tries source node k on graph node `node` with the given input order. */
static void try_node(mctx *c, int k, int node, const int *order)
{
    const rlt_rnode *pn = &c->r->src[k];
    const rlt_graph_node *n = &c->g->nodes[node];
    int saved[RLT_RULE_MAX_VARS];
    bool saved_bound[RLT_RULE_MAX_VARS];
    memcpy(saved, c->m.tensors, sizeof saved);
    memcpy(saved_bound, c->is_bound, sizeof saved_bound);
    bool ok = true;
    for (int i = 0; i < pn->n_inputs && ok; i++) {
        int v = pn->inputs[i].var, t = n->inputs[order[i]];
        if (t < 0) ok = false;
        else if (c->m.tensors[v] >= 0) ok = c->m.tensors[v] == t;
        else c->m.tensors[v] = t;
    }
    for (int o = 0; o < n->n_outputs && ok; o++) {
        int t = n->outputs[o];
        if (o < pn->n_outputs) {
            int v = pn->outputs[o];
            if (t < 0 || (c->m.tensors[v] >= 0 && c->m.tensors[v] != t)) ok = false;
            else c->m.tensors[v] = t;
        } else if (t >= 0 && (c->rd->is_output[t] || c->rd->fill[t] > 0)) {
            ok = false; /* an output the pattern does not know is read */
        }
    }
    if (ok && pn->n_outputs > n->n_outputs) ok = false;
    if (ok) ok = attrs_fit(c, pn, n);
    if (ok) {
        c->m.nodes[k] = node;
        match_from(c, k + 1);
    }
    memcpy(c->m.tensors, saved, sizeof saved);
    memcpy(c->is_bound, saved_bound, sizeof saved_bound);
}

static void try_candidate(mctx *c, int k, int node)
{
    const rlt_rnode *pn = &c->r->src[k];
    const rlt_graph_node *n = &c->g->nodes[node];
    if (c->is_stopped || n->is_removed || strcmp(n->op_type, pn->op_type) != 0 || node_used(c, k, node)) return;
    if (n_inputs_used(c->g, n) != pn->n_inputs) return;
    int order[16];
    for (int i = 0; i < pn->n_inputs; i++) order[i] = i;
    try_node(c, k, node, order);
    if (pn->n_inputs == 2 && is_commutative(pn->op_type) && !c->is_stopped) {
        order[0] = 1;
        order[1] = 0;
        try_node(c, k, node, order);
    }
}

static void match_from(mctx *c, int k)
{
    if (c->is_stopped) return;
    const rlt_rule *r = c->r;
    if (k == r->n_src) {
        if (final_checks(c)) {
            c->m.rule = c->rule;
            if (!c->fn(c->fn_ctx, &c->m)) c->is_stopped = true;
        }
        return;
    }
    const rlt_rnode *pn = &r->src[k];
    /* an input already bound narrows the candidates to its readers */
    for (int i = 0; i < pn->n_inputs; i++) {
        int t = c->m.tensors[pn->inputs[i].var];
        if (t < 0) continue;
        int n_readers = c->rd->fill[t];
        int readers[64];
        if (n_readers > 64) n_readers = 64;
        memcpy(readers, c->rd->nodes + c->rd->start[t], (size_t)n_readers * sizeof *readers);
        for (int j = 0; j < n_readers; j++) try_candidate(c, k, readers[j]);
        return;
    }
    for (int i = 0; i < c->g->n_nodes; i++) try_candidate(c, k, i);
}

rlt_status rlt_gopt_rule_matches(const rlt_ruleset *rs, int rule, const rlt_graph *g, rlt_gopt_match_fn fn,
                                 void *ctx, rlt_diag *diag)
{
    gopt_readers rd;
    rlt_status st = gopt_readers_build(g, &rd, diag);
    if (st != RLT_STATUS_OK) return st;
    st = gopt_rule_matches_with(rs, rule, g, &rd, fn, ctx, diag);
    gopt_readers_free(&rd);
    return st;
}

rlt_status gopt_rule_matches_with(const rlt_ruleset *rs, int rule, const rlt_graph *g, const gopt_readers *rd,
                                  rlt_gopt_match_fn fn, void *ctx, rlt_diag *diag)
{
    mctx *c = rlt_calloc(1, sizeof *c);
    if (!c) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory matching rules");
    c->r = rs->rules[rule];
    c->rule = rule;
    c->g = g;
    c->rd = rd;
    c->fn = fn;
    c->fn_ctx = ctx;
    c->diag = diag;
    for (int v = 0; v < RLT_RULE_MAX_VARS; v++) c->m.tensors[v] = -1;
    for (int k = 0; k < RLT_RULE_MAX_NODES; k++) c->m.nodes[k] = -1;
    match_from(c, 0);
    rlt_status st = c->st;
    rlt_free(c);
    return st;
}

typedef struct collect {
    rlt_gopt_match *items;
    int n, cap;
    bool has_failed;
} collect;

static bool collect_one(void *ctx, const rlt_gopt_match *m)
{
    collect *c = ctx;
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 16;
        rlt_gopt_match *items = rlt_realloc(c->items, (size_t)cap * sizeof *items);
        if (!items) {
            c->has_failed = true;
            return false;
        }
        c->items = items;
        c->cap = cap;
    }
    c->items[c->n++] = *m;
    return true;
}

rlt_status rlt_gopt_find(const rlt_ruleset *rs, const rlt_graph *g, rlt_gopt_match **out, int *n_out,
                         rlt_diag *diag)
{
    *out = NULL;
    *n_out = 0;
    gopt_readers rd;
    rlt_status st = gopt_readers_build(g, &rd, diag);
    if (st != RLT_STATUS_OK) return st;
    collect c = {0};
    for (int r = 0; r < rs->n_rules && st == RLT_STATUS_OK; r++) {
        st = gopt_rule_matches_with(rs, r, g, &rd, collect_one, &c, diag);
        if (st == RLT_STATUS_OK && c.has_failed)
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory listing matches");
    }
    gopt_readers_free(&rd);
    if (st != RLT_STATUS_OK) {
        rlt_free(c.items);
        return st;
    }
    *out = c.items;
    *n_out = c.n;
    return RLT_STATUS_OK;
}

/* ---- applying ------------------------------------------------------------------- */

/* A tensor name not in g: "BASE_K" for the first free K. */
static rlt_status fresh_tensor(rlt_graph *g, const char *base, rlt_dtype dtype, int *out, rlt_diag *diag)
{
    char name[160];
    for (int k = g->n_tensors;; k++) {
        snprintf(name, sizeof name, "%s_%d", base, k);
        if (rlt_graph_tensor_find(g, name) < 0) break;
    }
    return rlt_graph_tensor_add(g, name, dtype, out, diag);
}

/* A node name no node of g has: "BASE_K" for the first free K from
 * g->n_nodes. (n_nodes alone repeats: a graph cleaned of dead nodes has
 * fewer, and its rewrites' nodes keep their names; ONNX Runtime refuses
 * a model with two nodes of one name.) */
static void fresh_node_name(const rlt_graph *g, const char *base, char *name, size_t size)
{
    for (int k = g->n_nodes;; k++) {
        snprintf(name, size, "%.80s_%d", base, k); /* never truncated: K always shows */
        bool is_taken = false;
        for (int i = 0; i < g->n_nodes && !is_taken; i++)
            is_taken = g->nodes[i].name && strcmp(g->nodes[i].name, name) == 0;
        if (!is_taken) return;
    }
}

/* A constant tensor holding v as dtype: a scalar for a number, 1-D for a
 * list. */
static rlt_status literal_tensor(rlt_graph *g, const char *base, rlt_dtype dtype, const rlt_rvalue *v, int *out,
                                 rlt_diag *diag)
{
    bool is_list = v->kind == RLT_GRAPH_ATTR_INTS || v->kind == RLT_GRAPH_ATTR_FLOATS;
    if (v->is_none || (!is_list && v->kind != RLT_GRAPH_ATTR_INT && v->kind != RLT_GRAPH_ATTR_FLOAT))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "a literal tensor holds a number or a list");
    if (dtype != RLT_DTYPE_FLOAT32 && dtype != RLT_DTYPE_INT64 && dtype != RLT_DTYPE_INT32)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "a literal tensor is f32, i64 or i32");
    int n = is_list ? v->n : 1;
    rlt_status st = fresh_tensor(g, base, dtype, out, diag);
    if (st != RLT_STATUS_OK) return st;
    int64_t dims[1] = {n};
    if ((st = rlt_graph_tensor_set_shape(g, *out, is_list ? 1 : 0, dims, diag)) != RLT_STATUS_OK) return st;
    void *data = rlt_arena_alloc(g->arena, (size_t)n * rlt_dtype_size(dtype) + 1);
    if (!data) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory making a constant");
    for (int k = 0; k < n; k++) {
        double x = !is_list ? (v->kind == RLT_GRAPH_ATTR_INT ? (double)v->i : v->f)
                            : (v->kind == RLT_GRAPH_ATTR_INTS ? (double)v->ints[k] : v->floats[k]);
        bool is_int = is_list ? v->kind == RLT_GRAPH_ATTR_INTS : v->kind == RLT_GRAPH_ATTR_INT;
        int64_t xi = 0;
        if (dtype != RLT_DTYPE_FLOAT32) {
            /* a float into an integer tensor must fit it (inf and NaN do not) */
            if (!is_int && !(x > -9.2e18 && x < 9.2e18))
                return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                                "a literal integer tensor's value %g does not fit a 64-bit integer", x);
            xi = !is_int ? (int64_t)x : is_list ? v->ints[k] : v->i;
            if (dtype == RLT_DTYPE_INT32 && (xi < INT32_MIN || xi > INT32_MAX))
                return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                                "a literal i32 tensor's value %" PRId64 " does not fit 32 bits", xi);
        }
        if (dtype == RLT_DTYPE_FLOAT32) ((float *)data)[k] = (float)x;
        else if (dtype == RLT_DTYPE_INT64) ((int64_t *)data)[k] = xi;
        else ((int32_t *)data)[k] = (int32_t)xi;
    }
    g->tensors[*out].data = data;
    return RLT_STATUS_OK;
}

/* A node a rule wrote with attributes gets the form of the graph's
 * opset: each attribute ONNX made an input becomes a constant input. */
rlt_status gopt_opset_form(rlt_graph *g, int node, rlt_diag *diag)
{
    int ins[16], n_ins = g->nodes[node].n_inputs;
    bool is_moved = false;
    if (n_ins > 16) return RLT_STATUS_OK;
    memcpy(ins, g->nodes[node].inputs, (size_t)n_ins * sizeof *ins);
    for (size_t k = 0; k < RLT_ARRAY_LEN(input_attrs); k++) {
        const input_attr *ia = &input_attrs[k];
        const rlt_graph_node *n = &g->nodes[node];
        if (g->opset < ia->since || strcmp(ia->op, n->op_type) != 0 || ia->input >= 16) continue;
        const rlt_graph_attr *a = rlt_graph_node_attr(n, ia->attr);
        if (!a) continue;
        rlt_rvalue v;
        rlt_rvalue_of_attr(a, &v);
        int t;
        rlt_status st = literal_tensor(g, ia->attr, ia->dtype, &v, &t, diag);
        if (st != RLT_STATUS_OK) return st;
        while (n_ins <= ia->input) ins[n_ins++] = -1;
        ins[ia->input] = t;
        is_moved = true;
    }
    if (!is_moved) return RLT_STATUS_OK;
    rlt_graph_node *n = &g->nodes[node];
    int *inputs = rlt_arena_alloc(g->arena, (size_t)n_ins * sizeof *inputs);
    rlt_graph_attr *attrs = rlt_arena_alloc(g->arena, (size_t)n->n_attrs * sizeof *attrs + 1);
    if (!inputs || !attrs) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory");
    memcpy(inputs, ins, (size_t)n_ins * sizeof *ins);
    int n_attrs = 0;
    for (int i = 0; i < n->n_attrs; i++)
        if (!input_attr_of(g, n->op_type, n->attrs[i].name)) attrs[n_attrs++] = n->attrs[i];
    n->inputs = inputs;
    n->n_inputs = n_ins;
    n->attrs = attrs;
    n->n_attrs = n_attrs;
    return RLT_STATUS_OK;
}

static bool same_shape(const rlt_graph_tensor *a, const rlt_graph_tensor *b)
{
    if (a->dtype != b->dtype || a->rank != b->rank || !a->has_shape || !b->has_shape) return false;
    for (int k = 0; k < a->rank; k++)
        if (a->dims[k] != b->dims[k]) return false;
    return true;
}

rlt_status gopt_apply(const rlt_ruleset *rs, const rlt_graph *g, const rlt_gopt_match *m, bool may_map_outputs,
                      rlt_graph **out, char *reason, rlt_diag *diag)
{
    *out = NULL;
    char scratch[256];
    if (!reason) reason = scratch;
    reason[0] = 0;
    const rlt_rule *r = rs->rules[m->rule];
    rlt_rvalue vals[RLT_RULE_MAX_VARS];
    rlt_gopt_match_attrs(r, g, m, vals);
    rlt_graph *c = NULL;
    rlt_status st = rlt_graph_clone(g, &c, diag);
    if (st != RLT_STATUS_OK) return st;
    int tensor_of[RLT_RULE_MAX_VARS];
    for (int v = 0; v < r->n_vars; v++) tensor_of[v] = r->vars[v].kind == RLT_RVAR_INPUT ? m->tensors[v] : -1;
    for (int k = 0; k < r->n_src; k++) {
        rlt_graph_node *n = &c->nodes[m->nodes[k]];
        n->is_removed = true;
        for (int o = 0; o < n->n_outputs; o++)
            if (n->outputs[o] >= 0) c->tensors[n->outputs[o]].producer = -1;
    }
    for (int k = 0; k < r->n_out; k++)
        if (r->vars[r->out_dst[k]].kind == RLT_RVAR_DST) tensor_of[r->out_dst[k]] = m->tensors[r->out_src[k]];
    rlt_reval ev = {.rule = r, .g = g, .tensors = m->tensors, .attrs = vals};
    for (int k = 0; k < r->n_dst && st == RLT_STATUS_OK; k++) {
        const rlt_rnode *pn = &r->dst[k];
        int ins[16], outs[16];
        for (int i = 0; i < pn->n_inputs && st == RLT_STATUS_OK; i++) {
            const rlt_roperand *o = &pn->inputs[i];
            if (o->var >= 0) {
                ins[i] = tensor_of[o->var];
                continue;
            }
            rlt_rvalue lit;
            if ((st = rlt_rexpr_eval(o->literal, &ev, &lit, diag)) == RLT_STATUS_OK)
                st = literal_tensor(c, r->name, o->dtype, &lit, &ins[i], diag);
        }
        for (int i = 0; i < pn->n_outputs && st == RLT_STATUS_OK; i++) {
            int v = pn->outputs[i];
            if (tensor_of[v] < 0) st = fresh_tensor(c, r->vars[v].name, RLT_DTYPE_FLOAT32, &tensor_of[v], diag);
            outs[i] = tensor_of[v];
        }
        if (st != RLT_STATUS_OK) break;
        char name[96];
        fresh_node_name(c, r->name, name, sizeof name);
        int node;
        if ((st = rlt_graph_node_add(c, pn->op_type, name, pn->n_inputs, ins, pn->n_outputs, outs, &node, diag)) !=
            RLT_STATUS_OK)
            break;
        if (pn->n_attrs) {
            rlt_graph_attr *attrs = rlt_arena_alloc(c->arena, (size_t)pn->n_attrs * sizeof *attrs);
            if (!attrs) {
                st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory applying rule %s", r->name);
                break;
            }
            int n_attrs = 0;
            for (int a = 0; a < pn->n_attrs && st == RLT_STATUS_OK; a++) {
                rlt_rvalue v;
                if ((st = rlt_rexpr_eval(pn->attrs[a].value, &ev, &v, diag)) != RLT_STATUS_OK) break;
                if (v.is_none) continue; /* bound to an absent attribute: left out */
                if (!rlt_rvalue_to_attr(&v, pn->attrs[a].name, c->arena, &attrs[n_attrs++]))
                    st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory applying rule %s", r->name);
            }
            c->nodes[node].attrs = attrs;
            c->nodes[node].n_attrs = n_attrs;
        }
        if (st == RLT_STATUS_OK) st = gopt_opset_form(c, node, diag);
    }
    if (st != RLT_STATUS_OK) goto fail;
    /* readers of a tensor replaced by a pattern input read the input */
    for (int k = 0; k < r->n_out; k++) {
        if (r->vars[r->out_dst[k]].kind != RLT_RVAR_INPUT) continue;
        int from = m->tensors[r->out_src[k]], to = m->tensors[r->out_dst[k]];
        for (int i = 0; i < c->n_nodes; i++) {
            rlt_graph_node *n = &c->nodes[i];
            if (n->is_removed) continue;
            for (int j = 0; j < n->n_inputs; j++)
                if (n->inputs[j] == from) n->inputs[j] = to;
        }
        for (int i = 0; i < c->n_outputs; i++) {
            if (c->outputs[i] != from) continue;
            if (!may_map_outputs) {
                snprintf(reason, 128, "graph output '%s' would become an input", c->tensors[from].name);
                goto refuse;
            }
            c->outputs[i] = to;
        }
    }
    rlt_diag d = {0};
    if (rlt_graph_sort(c, &d) != RLT_STATUS_OK) {
        snprintf(reason, 128, "it would make a cycle");
        goto refuse;
    }
    for (int k = 0; k < r->n_out; k++)
        if (r->vars[r->out_dst[k]].kind == RLT_RVAR_DST) c->tensors[m->tensors[r->out_src[k]]].has_shape = false;
    d = (rlt_diag){0};
    if (rlt_graph_infer(c, &d) != RLT_STATUS_OK) {
        snprintf(reason, 128, "the target does not infer: %.90s", d.message);
        goto refuse;
    }
    for (int k = 0; k < r->n_out; k++) {
        const rlt_graph_tensor *before = &g->tensors[m->tensors[r->out_src[k]]];
        int t = r->vars[r->out_dst[k]].kind == RLT_RVAR_DST ? m->tensors[r->out_src[k]] : m->tensors[r->out_dst[k]];
        if (!same_shape(before, &c->tensors[t])) {
            snprintf(reason, 128, "'%s' would change its type or shape", before->name);
            goto refuse;
        }
    }
    if (rlt_graph_dce(c) < 0) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory applying rule %s", r->name);
        goto fail;
    }
    *out = c;
    return RLT_STATUS_OK;
refuse:
    rlt_graph_destroy(c);
    return RLT_STATUS_OK;
fail:
    rlt_graph_destroy(c);
    return st;
}

rlt_status rlt_gopt_apply(const rlt_ruleset *rs, const rlt_graph *g, const rlt_gopt_match *m, rlt_graph **out,
                          char *reason, rlt_diag *diag)
{
    return gopt_apply(rs, g, m, false, out, reason, diag);
}

/* ---- hashing ---------------------------------------------------------------------- */

static uint64_t mix(uint64_t h, uint64_t v) { return rlt_hash_bytes(h, &v, sizeof v); }

/* A constant's hash: type, shape and up to 4096 of its elements, evenly
 * spread (equal weights hash equal; different ones almost surely differ
 * somewhere in the sample). */
static uint64_t constant_hash(const rlt_graph_tensor *t)
{
    uint64_t h = mix(RLT_HASH_SEED, 0xc0257);
    h = mix(h, (uint64_t)t->dtype);
    h = rlt_hash_bytes(h, t->dims, (size_t)t->rank * sizeof t->dims[0]);
    int64_t n = rlt_graph_tensor_n_elems(t);
    size_t es = rlt_dtype_size(t->dtype);
    int64_t step = n > 4096 ? n / 4096 : 1;
    for (int64_t i = 0; i < n; i += step) h = rlt_hash_bytes(h, (const char *)t->data + (size_t)i * es, es);
    return h;
}

static uint64_t attr_hash(const rlt_graph_attr *a)
{
    rlt_rvalue v;
    rlt_rvalue_of_attr(a, &v);
    char buf[512];
    rlt_rvalue_format(&v, buf, sizeof buf);
    return rlt_hash_str(rlt_hash_str(RLT_HASH_SEED, a->name), buf);
}

uint64_t rlt_gopt_graph_hash(const rlt_graph *g)
{
    uint64_t *th = rlt_calloc((size_t)g->n_tensors + 1, sizeof *th);
    if (!th) return 0;
    for (int i = 0; i < g->n_inputs; i++) th[g->inputs[i]] = mix(mix(RLT_HASH_SEED, 0x1a7), (uint64_t)i);
    for (int t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].data) th[t] = constant_hash(&g->tensors[t]);
    for (int i = 0; i < g->n_nodes; i++) {
        const rlt_graph_node *n = &g->nodes[i];
        if (n->is_removed) continue;
        uint64_t h = rlt_hash_str(RLT_HASH_SEED, n->op_type);
        uint64_t attrs = 0; /* order-free */
        for (int a = 0; a < n->n_attrs; a++) attrs += attr_hash(&n->attrs[a]);
        h = mix(h, attrs);
        if (n->n_inputs == 2 && is_commutative(n->op_type)) {
            uint64_t a = n->inputs[0] >= 0 ? th[n->inputs[0]] : 0, b = n->inputs[1] >= 0 ? th[n->inputs[1]] : 0;
            h = mix(mix(h, a < b ? a : b), a < b ? b : a);
        } else {
            for (int k = 0; k < n->n_inputs; k++) h = mix(h, n->inputs[k] >= 0 ? th[n->inputs[k]] : 0x5eed);
        }
        for (int o = 0; o < n->n_outputs; o++)
            if (n->outputs[o] >= 0 && !g->tensors[n->outputs[o]].data) th[n->outputs[o]] = mix(h, (uint64_t)o);
    }
    uint64_t h = mix(RLT_HASH_SEED, (uint64_t)g->n_outputs);
    for (int i = 0; i < g->n_outputs; i++) h = mix(h, th[g->outputs[i]]);
    rlt_free(th);
    return h;
}
