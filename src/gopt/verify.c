/*
 * verify.c - a rule is checked before it is used (rlt_rule_verify): on each
 * of its check lines the source pattern is built as a graph of those
 * shapes, the rule applied to it, and both graphs evaluated by the
 * reference evaluator on the same random inputs. Inputs are small integers
 * held in floats, so a rule whose ops are all exact on integers (sums and
 * products of a few hundred small integers stay below 2^24) must give the
 * same bits; one with Sqrt, Div, Softmax, ... must agree within 1e-5 of
 * the largest value. A failure names the check and shows a counterexample.
 */
#include "gopt/gopt_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define VERIFY_TOLERANCE 1e-5

/* Ops whose results on small integers are exact in f32. */
static bool is_exact_op(const char *op)
{
    static const char *const exact[] = {"Conv", "MatMul", "Gemm", "Add", "Sub", "Mul", "Concat", "Split",
                                        "Relu", "Pad", "Reshape", "Transpose", "Identity", "Dropout", "MaxPool",
                                        "Flatten", "Squeeze", "Unsqueeze", "Slice", "Gather", "Neg", "Clip"};
    for (size_t i = 0; i < RLT_ARRAY_LEN(exact); i++)
        if (strcmp(exact[i], op) == 0) return true;
    return false;
}

static rlt_status vfail(const rlt_rule *r, const rlt_rcheck *c, rlt_diag *diag, const char *fmt, ...)
    RLT_PRINTF(4, 5);

static rlt_status vfail(const rlt_rule *r, const rlt_rcheck *c, rlt_diag *diag, const char *fmt, ...)
{
    char msg[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s:%d: rule %s is refused: check at line %d: %s", r->file,
                    r->line, r->name, c->line, msg);
}

/* Random integer-valued data for a tensor of `n` elements. */
static void *random_data(rlt_arena *arena, rlt_dtype dtype, int64_t n, double lo, double hi, rlt_rng *rng)
{
    void *p = rlt_arena_alloc(arena, (size_t)n * rlt_dtype_size(dtype) + 1);
    if (!p) return NULL;
    int64_t span = (int64_t)(hi - lo) + 1;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = (int64_t)lo + (int64_t)(rlt_rng_u64(rng) % (uint64_t)span);
        switch (dtype) {
        case RLT_DTYPE_FLOAT32: ((float *)p)[i] = (float)v; break;
        case RLT_DTYPE_INT64: ((int64_t *)p)[i] = v; break;
        case RLT_DTYPE_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
        case RLT_DTYPE_BOOL: ((unsigned char *)p)[i] = (unsigned char)(v & 1); break;
        default: break;
        }
    }
    return p;
}

/* The source side of r as a graph for check c: inputs and constants of the
 * check's shapes, the source nodes, the replaced tensors as outputs. The
 * match binding it is filled in. */
static rlt_status build_source(const rlt_rule *r, const rlt_rcheck *c, int opset, rlt_rng *rng, rlt_graph **out,
                               rlt_gopt_match *m, rlt_diag *diag)
{
    rlt_graph *g = NULL;
    rlt_status st = rlt_graph_create(opset, &g, diag);
    if (st != RLT_STATUS_OK) return st;
    rlt_rvalue attr_vals[RLT_RULE_MAX_VARS];
    for (int v = 0; v < r->n_vars; v++) {
        memset(&attr_vals[v], 0, sizeof attr_vals[v]);
        attr_vals[v].is_none = true;
        m->tensors[v] = -1;
    }
    int inputs[RLT_RULE_MAX_VARS], n_inputs = 0;
    for (int k = 0; k < c->n_values && st == RLT_STATUS_OK; k++) {
        const rlt_rcheck_value *cv = &c->values[k];
        const rlt_rvar *var = &r->vars[cv->var];
        if (var->kind == RLT_RVAR_ATTR) {
            st = rlt_rexpr_eval(cv->value, &(rlt_reval){.rule = r}, &attr_vals[cv->var], diag);
            continue;
        }
        int t;
        if ((st = rlt_graph_tensor_add(g, var->name, cv->dtype, &t, diag)) != RLT_STATUS_OK ||
            (st = rlt_graph_tensor_set_shape(g, t, cv->rank, cv->dims, diag)) != RLT_STATUS_OK)
            break;
        m->tensors[cv->var] = t;
        if (var->is_const) {
            g->tensors[t].data = random_data(g->arena, cv->dtype, rlt_graph_tensor_n_elems(&g->tensors[t]), cv->lo,
                                             cv->hi, rng);
            g->tensors[t].is_initializer = true;
            if (!g->tensors[t].data) st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory verifying rules");
        } else {
            inputs[n_inputs++] = t;
        }
    }
    for (int k = 0; k < r->n_src && st == RLT_STATUS_OK; k++) {
        const rlt_rnode *pn = &r->src[k];
        int ins[16], outs[16];
        for (int i = 0; i < pn->n_inputs; i++) ins[i] = m->tensors[pn->inputs[i].var];
        for (int o = 0; o < pn->n_outputs && st == RLT_STATUS_OK; o++)
            if ((st = rlt_graph_tensor_add(g, r->vars[pn->outputs[o]].name, RLT_DTYPE_FLOAT32, &outs[o], diag)) ==
                RLT_STATUS_OK)
                m->tensors[pn->outputs[o]] = outs[o];
        int node;
        if (st != RLT_STATUS_OK ||
            (st = rlt_graph_node_add(g, pn->op_type, "", pn->n_inputs, ins, pn->n_outputs, outs, &node, diag)) !=
                RLT_STATUS_OK)
            break;
        m->nodes[k] = node;
        rlt_graph_attr *attrs = rlt_arena_alloc(g->arena, (size_t)pn->n_attrs * sizeof *attrs + 1);
        int n_attrs = 0;
        if (!attrs) st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory verifying rules");
        for (int a = 0; a < pn->n_attrs && st == RLT_STATUS_OK; a++) {
            const rlt_rvalue *v = pn->attrs[a].var >= 0 ? &attr_vals[pn->attrs[a].var] : pn->attrs[a].literal;
            if (v->is_none) continue; /* not given: the op's default */
            if (!rlt_rvalue_to_attr(v, pn->attrs[a].name, g->arena, &attrs[n_attrs++]))
                st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory verifying rules");
        }
        g->nodes[node].attrs = attrs;
        g->nodes[node].n_attrs = n_attrs;
        if (st == RLT_STATUS_OK) st = gopt_opset_form(g, node, diag);
    }
    int outputs[RLT_RULE_MAX_NODES * 2];
    for (int k = 0; k < r->n_out; k++) outputs[k] = m->tensors[r->out_src[k]];
    if (st == RLT_STATUS_OK) {
        g->inputs = rlt_arena_alloc(g->arena, (size_t)n_inputs * sizeof *g->inputs + 1);
        g->outputs = rlt_arena_alloc(g->arena, (size_t)r->n_out * sizeof *g->outputs + 1);
        if (!g->inputs || !g->outputs) {
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory verifying rules");
        } else {
            memcpy(g->inputs, inputs, (size_t)n_inputs * sizeof *inputs);
            memcpy(g->outputs, outputs, (size_t)r->n_out * sizeof *outputs);
            g->n_inputs = n_inputs;
            g->n_outputs = r->n_out;
        }
    }
    if (st != RLT_STATUS_OK) {
        rlt_graph_destroy(g);
        return st;
    }
    *out = g;
    return RLT_STATUS_OK;
}

/* Compares the outputs of the source (a) and target (b) graphs. */
static rlt_status compare(const rlt_rule *r, const rlt_rcheck *c, const rlt_graph *ga, void **a, void **b,
                          bool is_exact, double *max_error, rlt_diag *diag)
{
    for (int o = 0; o < ga->n_outputs; o++) {
        const rlt_graph_tensor *t = &ga->tensors[ga->outputs[o]];
        int64_t n = rlt_graph_tensor_n_elems(t);
        if (t->dtype != RLT_DTYPE_FLOAT32) {
            if (memcmp(a[o], b[o], (size_t)n * rlt_dtype_size(t->dtype)) != 0)
                return vfail(r, c, diag, "'%s' differs", t->name);
            continue;
        }
        const float *x = a[o], *y = b[o];
        double scale = 0;
        for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(x[i]));
        if (scale == 0) scale = 1;
        for (int64_t i = 0; i < n; i++) {
            bool both_nan = isnan(x[i]) && isnan(y[i]);
            bool same = both_nan || (is_exact ? x[i] == y[i] : fabs((double)x[i] - y[i]) <= VERIFY_TOLERANCE * scale);
            double err = both_nan ? 0 : fabs((double)x[i] - y[i]) / scale;
            if (!same)
                return vfail(r, c, diag,
                             "'%s' differs at element %" PRId64 ": source %.9g, target %.9g (%s comparison)",
                             t->name, i, x[i], y[i], is_exact ? "exact" : "1e-5 relative");
            if (err > *max_error) *max_error = err;
        }
    }
    return RLT_STATUS_OK;
}

/* A check's graphs are evaluated whole: none of their tensors may hold
 * more than VERIFY_MAX_ELEMS elements (a broadcast or a Pad of a fuzzed or
 * careless rule could ask for terabytes). */
#define VERIFY_MAX_ELEMS ((int64_t)1 << 22)

static rlt_status check_small(const rlt_rule *r, const rlt_rcheck *c, const rlt_graph *g, rlt_diag *diag)
{
    for (int t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].has_shape && rlt_graph_tensor_n_elems(&g->tensors[t]) > VERIFY_MAX_ELEMS)
            return vfail(r, c, diag, "tensor '%s' would hold %" PRId64 " elements; a check's tensors hold at most %" PRId64,
                         g->tensors[t].name, rlt_graph_tensor_n_elems(&g->tensors[t]), VERIFY_MAX_ELEMS);
    return RLT_STATUS_OK;
}

static rlt_status verify_check(const rlt_rule *r, const rlt_rcheck *c, int opset, uint64_t seed, bool is_exact,
                               double *max_error, rlt_diag *diag)
{
    rlt_rng rng;
    rlt_rng_seed(&rng, seed);
    rlt_graph *src = NULL, *dst = NULL;
    void **in = NULL, **out_a = NULL, **out_b = NULL;
    rlt_gopt_match m;
    memset(&m, 0, sizeof m);
    rlt_rule *rp = (rlt_rule *)r;
    rlt_ruleset one = {.n_rules = 1, .rules = &rp};
    rlt_status st = build_source(r, c, opset, &rng, &src, &m, diag);
    if (st != RLT_STATUS_OK) return st;
    rlt_diag d = {0};
    if (rlt_graph_sort(src, &d) != RLT_STATUS_OK || rlt_graph_infer(src, &d) != RLT_STATUS_OK) {
        st = vfail(r, c, diag, "the source does not infer: %s", d.message);
        goto cleanup;
    }
    if ((st = check_small(r, c, src, diag)) != RLT_STATUS_OK) goto cleanup;
    /* the conditions must hold on the check's shapes */
    rlt_rvalue vals[RLT_RULE_MAX_VARS];
    rlt_gopt_match_attrs(r, src, &m, vals);
    rlt_reval ev = {.rule = r, .g = src, .tensors = m.tensors, .attrs = vals};
    for (int w = 0; w < r->n_where; w++) {
        rlt_rvalue v;
        if ((st = rlt_rexpr_eval(r->where[w], &ev, &v, diag)) != RLT_STATUS_OK) goto cleanup;
        if (v.is_none || v.kind != RLT_GRAPH_ATTR_INT || v.i == 0) {
            st = vfail(r, c, diag, "condition %d of the rule does not hold for these shapes", w + 1);
            goto cleanup;
        }
    }
    m.rule = 0;
    char reason[256];
    if ((st = gopt_apply(&one, src, &m, true, &dst, reason, diag)) != RLT_STATUS_OK) goto cleanup;
    if (!dst) {
        st = vfail(r, c, diag, "the rule does not apply: %s", reason);
        goto cleanup;
    }
    if ((st = check_small(r, c, dst, diag)) != RLT_STATUS_OK) goto cleanup;
    in = rlt_calloc((size_t)src->n_inputs + 1, sizeof *in);
    out_a = rlt_calloc((size_t)src->n_outputs + 1, sizeof *out_a);
    out_b = rlt_calloc((size_t)src->n_outputs + 1, sizeof *out_b);
    if (!in || !out_a || !out_b) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory verifying rules");
        goto cleanup;
    }
    for (int i = 0; i < src->n_inputs; i++) {
        const rlt_graph_tensor *t = &src->tensors[src->inputs[i]];
        double lo = -3, hi = 3;
        for (int k = 0; k < c->n_values; k++)
            if (strcmp(r->vars[c->values[k].var].name, t->name) == 0) lo = c->values[k].lo, hi = c->values[k].hi;
        if (!(in[i] = random_data(src->arena, t->dtype, rlt_graph_tensor_n_elems(t), lo, hi, &rng))) {
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory verifying rules");
            goto cleanup;
        }
    }
    if (dst->n_inputs != src->n_inputs || dst->n_outputs != src->n_outputs) {
        st = vfail(r, c, diag, "the target changed the graph's inputs or outputs");
        goto cleanup;
    }
    if ((st = rlt_graph_eval(src, src->n_inputs, (const void *const *)in, src->n_outputs, out_a, diag)) !=
        RLT_STATUS_OK)
        goto cleanup;
    /* the target's inputs are the same tensors; a dead one may have gone */
    if ((st = rlt_graph_eval(dst, dst->n_inputs, (const void *const *)in, dst->n_outputs, out_b, diag)) !=
        RLT_STATUS_OK)
        goto cleanup;
    st = compare(r, c, src, out_a, out_b, is_exact, max_error, diag);
cleanup:
    for (int o = 0; src && o < src->n_outputs && out_a; o++) rlt_free(out_a[o]);
    for (int o = 0; src && o < src->n_outputs && out_b; o++) rlt_free(out_b[o]);
    rlt_free(out_b);
    rlt_free(out_a);
    rlt_free(in);
    rlt_graph_destroy(dst);
    rlt_graph_destroy(src);
    return st;
}

rlt_status rlt_rule_verify(const rlt_rule *r, int opset, uint64_t seed, rlt_rule_check_result *out, rlt_diag *diag)
{
    memset(out, 0, sizeof *out);
    bool is_exact = true;
    for (int k = 0; k < r->n_src; k++) is_exact &= is_exact_op(r->src[k].op_type);
    for (int k = 0; k < r->n_dst; k++) is_exact &= is_exact_op(r->dst[k].op_type);
    out->is_exact = is_exact;
    for (int k = 0; k < r->n_checks; k++) {
        rlt_status st = verify_check(r, &r->checks[k], opset, seed + (uint64_t)k, is_exact, &out->max_error, diag);
        if (st != RLT_STATUS_OK) return st;
        out->n_checks++;
    }
    return RLT_STATUS_OK;
}

rlt_status rlt_ruleset_verify(rlt_ruleset *rs, uint64_t seed, rlt_diag *diag)
{
    static const int opsets[] = {11, 13};
    for (int i = 0; i < rs->n_rules; i++) {
        rlt_rule *r = rs->rules[i];
        if (r->is_verified) continue;
        r->max_error = 0;
        for (size_t k = 0; k < RLT_ARRAY_LEN(opsets); k++) {
            rlt_rule_check_result res;
            rlt_status st = rlt_rule_verify(r, opsets[k], seed, &res, diag);
            if (st != RLT_STATUS_OK) return st;
            r->is_exact = res.is_exact;
            if (res.max_error > r->max_error) r->max_error = res.max_error;
        }
        r->is_verified = true;
    }
    return RLT_STATUS_OK;
}
