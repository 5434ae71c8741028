/*
 * test_net_ops.c - the fast implementations of a compiled network's other
 * nodes (rlt_fast_op_*, src/net/ops.c) against the reference evaluator
 * (rlt_graph_eval_node). Each case builds a small model with
 * tests/common/onnx_build.h, runs one node through both on the same
 * seeded inputs, the fast op's outputs first filled with garbage (NaN
 * bytes), and compares: copies, comparisons and + - x / exactly, the rest
 * within 1e-5 of the largest |value| of the output (non-finite values must
 * match); the fast op in every build of its loops the machine runs
 * (AVX-512, AVX2, baseline), which must agree bit for bit. Fixed cases for
 * every op and its attributes, then seeded random ones: elementwise
 * broadcasts, transposes, slices, pools, softmax axes. Also: what create
 * leaves to the evaluator (NULL), the views, the builds the test hook
 * selects, and allocation failures in create, which must leak nothing.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/leaks.h"
#include "../common/onnx_build.h"
#include "graph/graph.h"
#include "net/ops.h"
#include "net/ops_run.h"

#define D(...) ((int64_t[]){__VA_ARGS__})
#define EXACT 0.0
#define TOL 1e-5

/* ---- helpers ---------------------------------------------------------------- */

/* Loads the model built in b and frees the builder. */
static rlt_graph *load(onnx_build *b)
{
    rlt_graph *g = NULL;
    rlt_diag d = {0};
    rlt_status st = ob_load(b, &g, &d);
    ob_free(b);
    cr_assert_eq(st, RLT_STATUS_OK, "load failed: %s", d.message);
    return g;
}

/* The same, NULL when the importer refuses the model (random cases that
 * draw a window larger than the input). */
static rlt_graph *try_load(onnx_build *b)
{
    rlt_graph *g = NULL;
    rlt_diag d = {0};
    rlt_status st = ob_load(b, &g, &d);
    ob_free(b);
    return st == RLT_STATUS_OK ? g : NULL;
}

/* The first live node of op type `op`. */
static int node_of(const rlt_graph *g, const char *op)
{
    for (int n = 0; n < g->n_nodes; n++)
        if (!g->nodes[n].is_removed && strcmp(g->nodes[n].op_type, op) == 0) return n;
    cr_assert_fail("no %s node in the graph", op);
    return -1;
}

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 11;
}

/* Deterministic values in [lo, hi). */
static void fill(float *x, int64_t n, uint64_t seed, float lo, float hi)
{
    uint64_t s = seed * 2654435761ull + 1;
    for (int64_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * (float)((double)lcg(&s) / 9007199254740992.0);
}

static void fill_tensor(const rlt_graph_tensor *t, void *buf, uint64_t seed, float lo, float hi)
{
    int64_t n = rlt_graph_tensor_n_elems(t);
    uint64_t s = seed * 2654435761ull + 7;
    switch (t->dtype) {
    case RLT_DTYPE_FLOAT32: fill(buf, n, seed, lo, hi); break;
    case RLT_DTYPE_INT64:
        for (int64_t i = 0; i < n; i++) ((int64_t *)buf)[i] = (int64_t)(lcg(&s) % 101) - 50;
        break;
    case RLT_DTYPE_INT32:
        for (int64_t i = 0; i < n; i++) ((int32_t *)buf)[i] = (int32_t)(lcg(&s) % 101) - 50;
        break;
    default:
        for (int64_t i = 0; i < n; i++) ((unsigned char *)buf)[i] = (unsigned char)(lcg(&s) & 1);
        break;
    }
}

static size_t tensor_bytes(const rlt_graph_tensor *t)
{
    return (size_t)rlt_graph_tensor_n_elems(t) * rlt_dtype_size(t->dtype);
}

/* Output `what` of the fast op against the evaluator's: f32 within tol of
 * the largest finite |want| (tol 0: equal, NaN matching NaN), the same
 * non-finite values; other types byte for byte. */
static void compare(const rlt_graph_tensor *t, const void *got, const void *want, double tol, const char *what)
{
    int64_t n = rlt_graph_tensor_n_elems(t);
    if (t->dtype != RLT_DTYPE_FLOAT32) {
        cr_expect(memcmp(got, want, tensor_bytes(t)) == 0, "%s: output '%s' differs", what, t->name);
        return;
    }
    const float *g = got, *w = want;
    double mx = 0.0;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(w[i])) mx = fmax(mx, fabs((double)w[i]));
    int n_bad = 0;
    for (int64_t i = 0; i < n && n_bad < 5; i++) {
        bool ok;
        if (!isfinite(w[i])) ok = isnan(w[i]) ? isnan(g[i]) : g[i] == w[i];
        else if (tol == 0.0) ok = g[i] == w[i];
        else ok = isfinite(g[i]) && fabs((double)g[i] - (double)w[i]) <= tol * mx + 1e-30;
        if (!ok) {
            n_bad++;
            cr_expect(ok, "%s: '%s'[%ld] is %.9g; the evaluator says %.9g (largest %.9g)", what, t->name, (long)i,
                      (double)g[i], (double)w[i], mx);
        }
    }
}

/* Runs node `node` of g through the evaluator and its fast op on the same
 * inputs (f32 ones drawn from [lo, hi)), and compares the outputs; the
 * fast op in every build of its loops the CPU runs (baseline, AVX2,
 * AVX-512), which must all give the same bits. */
static void check_node(const rlt_graph *g, int node, uint64_t seed, float lo, float hi, double tol, const char *what)
{
    const rlt_graph_node *n = &g->nodes[node];
    int nt = g->n_tensors;
    void **ref = calloc((size_t)nt + 1, sizeof *ref), **fast = calloc((size_t)nt + 1, sizeof *fast);
    void **first = calloc((size_t)nt + 1, sizeof *first);
    bool *owned = calloc((size_t)nt + 1, sizeof *owned);
    cr_assert(ref && fast && first && owned);
    for (int i = 0; i < n->n_inputs; i++) {
        int t = n->inputs[i];
        if (t < 0 || ref[t]) continue;
        const rlt_graph_tensor *tt = &g->tensors[t];
        if (tt->data) {
            ref[t] = fast[t] = tt->data;
            continue;
        }
        ref[t] = fast[t] = calloc(tensor_bytes(tt) + 1, 1);
        owned[t] = true;
        fill_tensor(tt, ref[t], seed + 101 * (uint64_t)i, lo, hi);
    }
    for (int o = 0; o < n->n_outputs; o++) {
        int t = n->outputs[o];
        if (t < 0) continue;
        size_t bytes = tensor_bytes(&g->tensors[t]);
        ref[t] = calloc(bytes + 1, 1);
        fast[t] = malloc(bytes + 1);
        first[t] = malloc(bytes + 1);
        cr_assert(ref[t] && fast[t] && first[t]);
    }
    rlt_diag d = {0};
    cr_assert_eq(rlt_graph_eval_node(g, node, ref, &d), RLT_STATUS_OK, "%s: the evaluator failed: %s", what,
                 d.message);
    const char *isas[] = {"avx512f", "avx2", "baseline"};
    for (int isa = 0; isa < 3; isa++) {
        for (int o = 0; o < n->n_outputs; o++)
            if (n->outputs[o] >= 0) memset(fast[n->outputs[o]], 0xff, tensor_bytes(&g->tensors[n->outputs[o]]));
        rlt_fast_op_limit_isa(isas[isa]);
        rlt_fast_op *op = NULL;
        rlt_status st = rlt_fast_op_create(g, node, &op, &d);
        rlt_fast_op_limit_isa(NULL);
        cr_assert_eq(st, RLT_STATUS_OK, "%s: %s", what, d.message);
        cr_assert_not_null(op, "%s: no fast op for %s", what, n->op_type);
        rlt_fast_op_run(op, fast);
        char label[300];
        snprintf(label, sizeof label, "%s (%s build)", what, rlt_fast_op_isa(op));
        rlt_fast_op_destroy(op);
        for (int o = 0; o < n->n_outputs; o++) {
            int t = n->outputs[o];
            if (t < 0) continue;
            compare(&g->tensors[t], fast[t], ref[t], tol, label);
            if (isa == 0) memcpy(first[t], fast[t], tensor_bytes(&g->tensors[t]));
            else cr_expect(memcmp(first[t], fast[t], tensor_bytes(&g->tensors[t])) == 0,
                           "%s: the builds differ in '%s'", label, g->tensors[t].name);
        }
    }
    /* on 2 and 3 threads (an uneven split): the same bits as one thread */
    rlt_fast_op *op = NULL;
    cr_assert_eq(rlt_fast_op_create(g, node, &op, &d), RLT_STATUS_OK, "%s", d.message);
    for (int threads = 2; threads <= 3; threads++) {
        for (int o = 0; o < n->n_outputs; o++)
            if (n->outputs[o] >= 0) memset(fast[n->outputs[o]], 0xff, tensor_bytes(&g->tensors[n->outputs[o]]));
        rlt_fast_op_run_threads(op, fast, op->isa, threads);
        for (int o = 0; o < n->n_outputs; o++) {
            int t = n->outputs[o];
            if (t >= 0)
                cr_expect(memcmp(first[t], fast[t], tensor_bytes(&g->tensors[t])) == 0,
                          "%s: %d threads (%d used) differ from one in '%s'", what, threads,
                          rlt_fast_op_threads(op, threads), g->tensors[t].name);
        }
    }
    rlt_fast_op_destroy(op);
    for (int o = 0; o < n->n_outputs; o++) {
        int t = n->outputs[o];
        if (t < 0) continue;
        free(ref[t]);
        free(fast[t]);
        free(first[t]);
    }
    for (int t = 0; t < nt; t++)
        if (owned[t]) free(ref[t]);
    free(owned);
    free(first);
    free(fast);
    free(ref);
}

/* Loads the model, checks node `op`, frees the graph. */
static void check_model(onnx_build *b, const char *op, uint64_t seed, float lo, float hi, double tol,
                        const char *what)
{
    rlt_graph *g = load(b);
    check_node(g, node_of(g, op), seed, lo, hi, tol, what);
    rlt_graph_destroy(g);
}

/* True when rlt_fast_op_create gives no fast op for node `op` of the model. */
static bool is_left_out(onnx_build *b, const char *op)
{
    rlt_graph *g = load(b);
    rlt_fast_op *fop = (rlt_fast_op *)1;
    rlt_diag d = {0};
    cr_assert_eq(rlt_fast_op_create(g, node_of(g, op), &fop, &d), RLT_STATUS_OK);
    bool left_out = fop == NULL;
    rlt_fast_op_destroy(fop);
    rlt_graph_destroy(g);
    return left_out;
}

/* A model with one node `op` of inputs "x" (f32, the given shape) and any
 * constants the caller adds, writing "y". */
static Onnx__NodeProto *unary_model(onnx_build *b, int opset, const char *op, const char *inputs, int rank,
                                    const int64_t *dims)
{
    ob_init(b, opset);
    ob_input(b, "x", OB_F32, rank, dims);
    Onnx__NodeProto *n = ob_node(b, op, "n", inputs, "y");
    ob_output(b, "y");
    return n;
}

/* ---- unary ------------------------------------------------------------------ */

Test(net_ops, activations)
{
    const char *ops[] = {"Relu", "Sigmoid", "Tanh", "Erf", "Gelu", "LeakyRelu"};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        /* [-6, 6) exercises every branch of the approximations, [-100, 100)
         * the saturation, [-1e-3, 1e-3) the small arguments. */
        float ranges[3][2] = {{-6, 6}, {-100, 100}, {-1e-3f, 1e-3f}};
        for (int r = 0; r < 3; r++) {
            onnx_build b;
            unary_model(&b, 13, ops[i], "x", 3, D(3, 5, 37));
            char what[64];
            snprintf(what, sizeof what, "%s on [%g, %g)", ops[i], ranges[r][0], ranges[r][1]);
            check_model(&b, ops[i], 1 + i, ranges[r][0], ranges[r][1], strcmp(ops[i], "Relu") ? TOL : EXACT, what);
        }
    }
    onnx_build b;
    Onnx__NodeProto *n = unary_model(&b, 13, "LeakyRelu", "x", 2, D(4, 9));
    ob_attr_f(&b, n, "alpha", 0.3f);
    check_model(&b, "LeakyRelu", 7, -3, 3, EXACT, "LeakyRelu alpha 0.3");
    n = unary_model(&b, 17, "Gelu", "x", 2, D(4, 33));
    ob_attr_s(&b, n, "approximate", "tanh");
    check_model(&b, "Gelu", 8, -6, 6, TOL, "Gelu tanh");
    n = unary_model(&b, 17, "Gelu", "x", 2, D(4, 33));
    ob_attr_s(&b, n, "approximate", "tanh");
    check_model(&b, "Gelu", 9, -60, 60, TOL, "Gelu tanh, saturated");
    unary_model(&b, 13, "Sqrt", "x", 1, D(101));
    check_model(&b, "Sqrt", 10, 0, 50, TOL, "Sqrt");
    unary_model(&b, 13, "Sqrt", "x", 1, D(101));
    check_model(&b, "Sqrt", 11, -1, 1, TOL, "Sqrt of negatives (NaN)");
}

/* Ops large enough to split over threads do (check_node compares 2 and 3
 * threads with one, bit for bit, for every case); small ones do not. */
Test(net_ops, large_ops_split_over_threads)
{
    onnx_build b;
    unary_model(&b, 13, "Relu", "x", 4, D(1, 64, 32, 33));
    rlt_graph *g = load(&b);
    rlt_fast_op *op = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_fast_op_create(g, node_of(g, "Relu"), &op, &d), RLT_STATUS_OK);
    cr_expect_eq(rlt_fast_op_threads(op, 2), 2);
    cr_expect_eq(rlt_fast_op_threads(op, 1), 1);
    rlt_fast_op_destroy(op);
    check_node(g, node_of(g, "Relu"), 3, -2, 2, EXACT, "Relu, split");
    rlt_graph_destroy(g);
    unary_model(&b, 13, "Relu", "x", 2, D(3, 5));
    g = load(&b);
    cr_assert_eq(rlt_fast_op_create(g, node_of(g, "Relu"), &op, &d), RLT_STATUS_OK);
    cr_expect_eq(rlt_fast_op_threads(op, 2), 1, "15 elements: not worth waking a thread");
    rlt_fast_op_destroy(op);
    rlt_graph_destroy(g);
    unary_model(&b, 17, "Gelu", "x", 2, D(129, 257));
    check_model(&b, "Gelu", 4, -6, 6, TOL, "Gelu, split");
    /* a broadcast Add of a per-channel vector and one with a scalar */
    ob_init(&b, 13);
    ob_input(&b, "a", OB_F32, 4, D(1, 64, 31, 17));
    ob_input(&b, "c", OB_F32, 3, D(64, 1, 1));
    ob_node(&b, "Add", "add", "a,c", "y");
    ob_output(&b, "y");
    g = load(&b);
    cr_assert_eq(rlt_fast_op_create(g, node_of(g, "Add"), &op, &d), RLT_STATUS_OK);
    cr_expect_eq(rlt_fast_op_threads(op, 3), 3);
    rlt_fast_op_destroy(op);
    check_node(g, node_of(g, "Add"), 5, -2, 2, EXACT, "Add per channel, split");
    rlt_graph_destroy(g);
    ob_init(&b, 13);
    ob_input(&b, "a", OB_F32, 3, D(7, 61, 41));
    ob_input(&b, "c", OB_F32, 2, D(61, 1));
    ob_node(&b, "Mul", "mul", "a,c", "y");
    ob_output(&b, "y");
    check_model(&b, "Mul", 6, -2, 2, EXACT, "Mul of rows, split");
}

/* Zeros of both signs, tiny, huge, infinite and NaN arguments. */
Test(net_ops, activations_special_values)
{
    const float v[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-6f, -1e-6f, 0.5f, -0.5f, 3.9f, -3.9f, 8.5f, -8.5f,
                       87.5f, -87.5f, 100.0f, -100.0f, 1e30f, -1e30f, INFINITY, -INFINITY, NAN};
    int64_t nv = sizeof v / sizeof *v;
    const char *ops[] = {"Relu", "Sigmoid", "Tanh", "Erf", "Gelu", "LeakyRelu", "Clip"};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        onnx_build b;
        unary_model(&b, 13, ops[i], "x", 1, D(nv));
        rlt_graph *g = load(&b);
        int node = node_of(g, ops[i]);
        const rlt_graph_node *nd = &g->nodes[node];
        float *in = malloc(sizeof v), *want = calloc(1, sizeof v), *got = malloc(sizeof v);
        memcpy(in, v, sizeof v);
        memset(got, 0xff, sizeof v);
        void **ref = calloc((size_t)g->n_tensors, sizeof *ref), **fast = calloc((size_t)g->n_tensors, sizeof *fast);
        ref[nd->inputs[0]] = fast[nd->inputs[0]] = in;
        ref[nd->outputs[0]] = want;
        fast[nd->outputs[0]] = got;
        rlt_diag d = {0};
        cr_assert_eq(rlt_graph_eval_node(g, node, ref, &d), RLT_STATUS_OK, "%s", d.message);
        const char *isas[] = {"avx512f", "avx2", "baseline"};
        for (int isa = 0; isa < 3; isa++) {
            rlt_fast_op_limit_isa(isas[isa]);
            rlt_fast_op *op = NULL;
            cr_assert_eq(rlt_fast_op_create(g, node, &op, &d), RLT_STATUS_OK);
            rlt_fast_op_limit_isa(NULL);
            cr_assert_not_null(op, "%s", ops[i]);
            rlt_fast_op_run(op, fast);
            /* within 4 ulp of the evaluator's value or of 1 (Gelu's tails:
             * 1 + erf cancels in both) */
            for (int64_t k = 0; k < nv; k++) {
                bool ok = isnan(want[k]) ? isnan(got[k])
                          : !isfinite(want[k]) ? got[k] == want[k]
                                               : fabs((double)got[k] - want[k]) <= 5e-7 * fmax(1.0, fabs(want[k]));
                cr_expect(ok, "%s(%g), %s build: got %.9g, the evaluator says %.9g", ops[i], (double)v[k],
                          rlt_fast_op_isa(op), (double)got[k], (double)want[k]);
            }
            rlt_fast_op_destroy(op);
        }
        free(ref);
        free(fast);
        free(in);
        free(want);
        free(got);
        rlt_graph_destroy(g);
    }
}

Test(net_ops, clip_forms)
{
    onnx_build b;
    /* before opset 11: attributes, defaults -FLT_MAX / FLT_MAX */
    Onnx__NodeProto *n = unary_model(&b, 9, "Clip", "x", 2, D(5, 7));
    ob_attr_f(&b, n, "min", -0.25f);
    check_model(&b, "Clip", 1, -1, 1, EXACT, "Clip min only (opset 9)");
    n = unary_model(&b, 9, "Clip", "x", 2, D(5, 7));
    ob_attr_f(&b, n, "min", 0.0f);
    ob_attr_f(&b, n, "max", 6.0f);
    check_model(&b, "Clip", 2, -10, 10, EXACT, "Clip(0, 6) (opset 9)");
    unary_model(&b, 9, "Clip", "x", 2, D(5, 7));
    check_model(&b, "Clip", 3, -10, 10, EXACT, "Clip without bounds (opset 9)");
    /* from opset 11: constant scalar inputs, either left out */
    unary_model(&b, 13, "Clip", "x,lo,hi", 2, D(5, 7));
    ob_init_f32(&b, "lo", 0, NULL, (const float[]){0.0f});
    ob_init_f32(&b, "hi", 0, NULL, (const float[]){6.0f});
    check_model(&b, "Clip", 4, -10, 10, EXACT, "Clip(0, 6)");
    unary_model(&b, 13, "Clip", "x,,hi", 2, D(5, 7));
    ob_init_f32(&b, "hi", 0, NULL, (const float[]){0.5f});
    check_model(&b, "Clip", 5, -1, 1, EXACT, "Clip max only");
    unary_model(&b, 13, "Clip", "x,lo", 2, D(5, 7));
    ob_init_f32(&b, "lo", 0, NULL, (const float[]){-0.5f});
    check_model(&b, "Clip", 6, -1, 1, EXACT, "Clip min only");
}

Test(net_ops, pow_by_constants)
{
    const float exps[] = {2.0f, 3.0f, 0.5f, 1.0f, -1.5f, 1.7f};
    for (size_t i = 0; i < sizeof exps / sizeof *exps; i++) {
        onnx_build b;
        unary_model(&b, 13, "Pow", "x,e", 3, D(2, 3, 17));
        ob_init_f32(&b, "e", 0, NULL, &exps[i]);
        char what[64];
        snprintf(what, sizeof what, "Pow by %g", (double)exps[i]);
        check_model(&b, "Pow", 20 + i, 0.25f, 4.0f, exps[i] == 2.0f ? EXACT : TOL, what);
    }
    /* a negative base squared and cubed */
    onnx_build b;
    unary_model(&b, 13, "Pow", "x,e", 1, D(64));
    ob_init_f32(&b, "e", 1, D(1), (const float[]){3.0f});
    check_model(&b, "Pow", 30, -3, 3, TOL, "Pow of negatives by 3");
}

/* ---- binary with broadcasting -------------------------------------------------- */

static void check_binary(const char *op, int ra, const int64_t *da, int rb, const int64_t *db, bool b_const,
                         uint64_t seed, const char *what)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "a", OB_F32, ra, da);
    if (b_const) {
        int64_t nb = ob_n_elems(rb, db);
        float *v = malloc((size_t)nb * sizeof *v + 1);
        fill(v, nb, seed + 5, 0.5f, 1.5f);
        ob_init_f32(&b, "b", rb, db, v);
        free(v);
    } else {
        ob_input(&b, "b", OB_F32, rb, db);
    }
    ob_node(&b, op, "n", "a,b", "y");
    ob_output(&b, "y");
    /* Pow of positive bases; Div by values away from 0 */
    bool is_pow = strcmp(op, "Pow") == 0, is_div = strcmp(op, "Div") == 0;
    check_model(&b, op, seed, is_pow || is_div ? 0.5f : -2.0f, is_pow || is_div ? 1.5f : 2.0f, is_pow ? TOL : EXACT,
                what);
}

Test(net_ops, binary_fast_paths)
{
    const char *ops[] = {"Add", "Sub", "Mul", "Div", "Pow"};
    for (int i = 0; i < 5; i++) {
        char what[96];
        snprintf(what, sizeof what, "%s same shape", ops[i]);
        check_binary(ops[i], 3, D(2, 3, 50), 3, D(2, 3, 50), false, 1, what);
        snprintf(what, sizeof what, "%s by a scalar", ops[i]);
        check_binary(ops[i], 3, D(2, 3, 50), 0, NULL, false, 2, what);
        snprintf(what, sizeof what, "%s of a scalar", ops[i]);
        check_binary(ops[i], 0, NULL, 3, D(2, 3, 50), false, 3, what);
        snprintf(what, sizeof what, "%s [1,128,768] + [768]", ops[i]);
        check_binary(ops[i], 3, D(1, 128, 768), 1, D(768), true, 4, what);
        snprintf(what, sizeof what, "%s per channel", ops[i]);
        check_binary(ops[i], 4, D(1, 16, 7, 9), 4, D(1, 16, 1, 1), true, 5, what);
        snprintf(what, sizeof what, "%s per channel, swapped", ops[i]);
        check_binary(ops[i], 3, D(16, 1, 1), 4, D(2, 16, 7, 9), false, 6, what);
        snprintf(what, sizeof what, "%s attention mask", ops[i]);
        check_binary(ops[i], 4, D(1, 12, 16, 16), 4, D(1, 1, 1, 16), false, 7, what);
        snprintf(what, sizeof what, "%s outer", ops[i]);
        check_binary(ops[i], 2, D(9, 1), 2, D(1, 11), false, 8, what);
        snprintf(what, sizeof what, "%s [2,1,3] + [4,1]", ops[i]);
        check_binary(ops[i], 3, D(2, 1, 3), 2, D(4, 1), false, 9, what);
        snprintf(what, sizeof what, "%s scalars", ops[i]);
        check_binary(ops[i], 1, D(1), 0, NULL, false, 10, what);
        snprintf(what, sizeof what, "%s empty", ops[i]);
        check_binary(ops[i], 2, D(0, 3), 1, D(3), false, 11, what);
    }
}

/* Random numpy broadcasts: an output shape of rank 1 to 5 (dimensions 1
 * to 5), each operand a suffix of it with some dimensions 1. */
Test(net_ops, binary_random_broadcasts)
{
    rlt_rng rng;
    rlt_rng_seed(&rng, 2024);
    const char *ops[] = {"Add", "Sub", "Mul", "Div", "Pow"};
    for (int c = 0; c < 300; c++) {
        int r = 1 + (int)rlt_rng_below(&rng, 5);
        int64_t t[5], dims[2][5];
        int rank[2];
        for (int i = 0; i < r; i++) t[i] = 1 + (int64_t)rlt_rng_below(&rng, 5);
        for (int k = 0; k < 2; k++) {
            rank[k] = (int)rlt_rng_below(&rng, (uint64_t)r + 1);
            if (k == 1 && rank[0] < r) rank[1] = r; /* one of them spans the output's rank */
            for (int i = 0; i < rank[k]; i++)
                dims[k][i] = rlt_rng_below(&rng, 3) == 0 ? 1 : t[r - rank[k] + i];
        }
        const char *op = ops[rlt_rng_below(&rng, 5)];
        char what[160];
        int len = snprintf(what, sizeof what, "random %d: %s [", c, op);
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < rank[k]; i++)
                len += snprintf(what + len, sizeof what - (size_t)len, "%s%ld", i ? "," : k ? "] , [" : "",
                                (long)dims[k][i]);
        snprintf(what + len, sizeof what - (size_t)len, "]");
        check_binary(op, rank[0], dims[0], rank[1], dims[1], rlt_rng_below(&rng, 4) == 0, 100 + (uint64_t)c, what);
    }
}

/* ---- pools ----------------------------------------------------------------------- */

typedef struct pool_case {
    bool is_max, ceil_mode, include_pad;
    int n_sp;
    int64_t n, c, in[2], k[2], s[2], d[2], pads[4];
} pool_case;

/* The one-pool graph of pc, or NULL when the importer refuses it. */
static rlt_graph *pool_model(const pool_case *pc)
{
    onnx_build b;
    ob_init(&b, 13);
    int64_t dims[4] = {pc->n, pc->c, pc->in[0], pc->in[1]};
    ob_input(&b, "x", OB_F32, 2 + pc->n_sp, dims);
    const char *op = pc->is_max ? "MaxPool" : "AveragePool";
    Onnx__NodeProto *nd = ob_node(&b, op, "p", "x", "y");
    ob_attr_ints(&b, nd, "kernel_shape", pc->n_sp, pc->k);
    ob_attr_ints(&b, nd, "strides", pc->n_sp, pc->s);
    int64_t pads[4];
    for (int i = 0; i < pc->n_sp; i++) {
        pads[i] = pc->pads[i];
        pads[pc->n_sp + i] = pc->pads[2 + i];
    }
    ob_attr_ints(&b, nd, "pads", 2 * pc->n_sp, pads);
    if (pc->is_max) ob_attr_ints(&b, nd, "dilations", pc->n_sp, pc->d);
    if (pc->ceil_mode) ob_attr_i(&b, nd, "ceil_mode", 1);
    if (!pc->is_max) ob_attr_i(&b, nd, "count_include_pad", pc->include_pad);
    ob_output(&b, "y");
    return try_load(&b);
}

/* Builds and checks one pool; false when the importer refuses it. */
static bool check_pool(const pool_case *pc, uint64_t seed, const char *what)
{
    rlt_graph *g = pool_model(pc);
    if (!g) return false;
    check_node(g, node_of(g, pc->is_max ? "MaxPool" : "AveragePool"), seed, -2, 2, pc->is_max ? EXACT : TOL, what);
    rlt_graph_destroy(g);
    return true;
}

/* Random windows for both dimensions of pc: inputs 1-13, kernels 1-4,
 * strides 1-3, dilations 1-2 (MaxPool), pads below the kernel. */
static void pool_windows_random(rlt_rng *rng, pool_case *pc)
{
    for (int i = 0; i < 2; i++) {
        pc->in[i] = 1 + (int64_t)rlt_rng_below(rng, 13);
        pc->k[i] = 1 + (int64_t)rlt_rng_below(rng, 4);
        pc->s[i] = 1 + (int64_t)rlt_rng_below(rng, 3);
        pc->d[i] = pc->is_max ? 1 + (int64_t)rlt_rng_below(rng, 2) : 1;
        pc->pads[i] = (int64_t)rlt_rng_below(rng, (uint64_t)pc->k[i]);
        pc->pads[2 + i] = (int64_t)rlt_rng_below(rng, (uint64_t)pc->k[i]);
    }
}

Test(net_ops, pools_of_networks)
{
    /* SqueezeNet 1.1: 3x3 stride 2 ceil_mode on [1,64,111,111] */
    pool_case sq = {.is_max = true, .ceil_mode = true, .n_sp = 2, .n = 1, .c = 64, .in = {111, 111}, .k = {3, 3},
                    .s = {2, 2}, .d = {1, 1}};
    cr_expect(check_pool(&sq, 1, "SqueezeNet MaxPool"));
    /* ResNet-18: 3x3 stride 2 pad 1 on [1,64,112,112] */
    pool_case rn = {.is_max = true, .n_sp = 2, .n = 1, .c = 64, .in = {112, 112}, .k = {3, 3}, .s = {2, 2},
                    .d = {1, 1}, .pads = {1, 1, 1, 1}};
    cr_expect(check_pool(&rn, 2, "ResNet MaxPool"));
    pool_case m2 = {.is_max = true, .n_sp = 2, .n = 2, .c = 3, .in = {9, 10}, .k = {2, 2}, .s = {2, 2}, .d = {1, 1}};
    cr_expect(check_pool(&m2, 3, "MaxPool 2x2/2"));
    pool_case m1 = {.is_max = true, .n_sp = 2, .n = 1, .c = 3, .in = {9, 10}, .k = {3, 3}, .s = {1, 1}, .d = {1, 1},
                    .pads = {1, 1, 1, 1}};
    cr_expect(check_pool(&m1, 4, "MaxPool 3x3/1 pad 1"));
    for (int inc = 0; inc < 2; inc++)
        for (int cm = 0; cm < 2; cm++) {
            pool_case a = {.ceil_mode = cm, .include_pad = inc, .n_sp = 2, .n = 1, .c = 4, .in = {14, 13},
                           .k = {3, 3}, .s = {2, 2}, .d = {1, 1}, .pads = {1, 1, 1, 1}};
            char what[96];
            snprintf(what, sizeof what, "AveragePool 3x3/2 pad 1 count_include_pad %d ceil_mode %d", inc, cm);
            cr_expect(check_pool(&a, 5 + (uint64_t)(2 * inc + cm), what));
        }
    /* 1-D: the first entries (pads: begin in [0], end in [2]) */
    pool_case a1 = {.n_sp = 1, .n = 2, .c = 3, .in = {20}, .k = {4}, .s = {3}, .d = {1}, .pads = {2, 0, 1, 0}};
    cr_expect(check_pool(&a1, 9, "AveragePool 1-D"));
    pool_case mx1 = {.is_max = true, .n_sp = 1, .n = 2, .c = 3, .in = {20}, .k = {3}, .s = {2}, .d = {2},
                     .pads = {1, 0, 1, 0}};
    cr_expect(check_pool(&mx1, 10, "MaxPool 1-D dilated"));
    /* rows wider than the stack row (chunks), and a window wider than it */
    pool_case wide = {.is_max = true, .n_sp = 2, .n = 1, .c = 2, .in = {4, 3000}, .k = {3, 3}, .s = {1, 1},
                      .d = {1, 1}, .pads = {1, 1, 1, 1}};
    cr_expect(check_pool(&wide, 14, "MaxPool of 3000 columns"));
    pool_case wide_avg = {.include_pad = true, .n_sp = 2, .n = 1, .c = 2, .in = {3, 2500}, .k = {2, 2},
                          .s = {2, 2}, .d = {1, 1}, .pads = {0, 1, 1, 0}};
    cr_expect(check_pool(&wide_avg, 15, "AveragePool of 2500 columns"));
    pool_case wide_k = {.is_max = true, .n_sp = 2, .n = 1, .c = 1, .in = {3, 1300}, .k = {2, 600}, .s = {1, 7},
                        .d = {1, 2}, .pads = {0, 5, 1, 5}};
    cr_expect(check_pool(&wide_k, 16, "MaxPool window of 1199 columns"));
    /* pads of a whole kernel: windows entirely in the padding */
    pool_case pw = {.is_max = true, .n_sp = 2, .n = 1, .c = 2, .in = {5, 5}, .k = {2, 2}, .s = {1, 1}, .d = {1, 1},
                    .pads = {2, 2, 2, 2}};
    cr_expect(check_pool(&pw, 11, "MaxPool windows in the padding"));
    pw.is_max = false;
    cr_expect(check_pool(&pw, 12, "AveragePool windows in the padding"));
    pw.include_pad = true;
    cr_expect(check_pool(&pw, 13, "AveragePool windows in the padding, counted"));
}

Test(net_ops, pools_random)
{
    rlt_rng rng;
    rlt_rng_seed(&rng, 77);
    int n_checked = 0;
    for (int c = 0; c < 300; c++) {
        pool_case pc = {.is_max = rlt_rng_below(&rng, 2) == 0, .ceil_mode = rlt_rng_below(&rng, 2) == 0,
                        .include_pad = rlt_rng_below(&rng, 2) == 0, .n_sp = rlt_rng_below(&rng, 4) == 0 ? 1 : 2,
                        .n = 1 + (int64_t)rlt_rng_below(&rng, 2), .c = 1 + (int64_t)rlt_rng_below(&rng, 3)};
        pool_windows_random(&rng, &pc);
        if (pc.n_sp == 1) { /* the second dimension is the one */
            pc.in[0] = pc.in[1];
            pc.k[0] = pc.k[1];
            pc.s[0] = pc.s[1];
            pc.d[0] = pc.d[1];
            pc.pads[0] = pc.pads[1];
            pc.pads[2] = pc.pads[3];
        }
        char what[200];
        snprintf(what, sizeof what,
                 "random %d: %s %d-D in %ldx%ld k %ldx%ld s %ldx%ld d %ldx%ld pads %ld,%ld,%ld,%ld ceil %d inc %d", c,
                 pc.is_max ? "MaxPool" : "AveragePool", pc.n_sp, (long)pc.in[0], (long)pc.in[1], (long)pc.k[0],
                 (long)pc.k[1], (long)pc.s[0], (long)pc.s[1], (long)pc.d[0], (long)pc.d[1], (long)pc.pads[0],
                 (long)pc.pads[1], (long)pc.pads[2], (long)pc.pads[3], pc.ceil_mode, pc.include_pad);
        n_checked += check_pool(&pc, 500 + (uint64_t)c, what);
    }
    cr_expect_geq(n_checked, 150, "only %d random pools loaded", n_checked);
}

Test(net_ops, global_average_pool)
{
    const int64_t shapes[][5] = {{1, 512, 7, 7}, {2, 3, 5, 4}, {1, 4, 10}, {1, 2, 3, 3, 3}, {1, 3, 1, 1}};
    const int ranks[] = {4, 4, 3, 5, 4};
    for (int i = 0; i < 5; i++) {
        onnx_build b;
        unary_model(&b, 13, "GlobalAveragePool", "x", ranks[i], shapes[i]);
        check_model(&b, "GlobalAveragePool", 40 + (uint64_t)i, -3, 5, TOL, "GlobalAveragePool");
    }
}

/* ---- pools on blocked channels (NCHWc) --------------------------------------------- */

/* [n][c][hw] <-> [n][c/L][hw][c%L]. */
static void relayout(const float *src, float *dst, int64_t n, int64_t c, int64_t hw, int64_t L, bool to_blocked)
{
    for (int64_t b = 0; b < n; b++)
        for (int64_t k = 0; k < c; k++)
            for (int64_t i = 0; i < hw; i++) {
                int64_t plain = (b * c + k) * hw + i, blocked = ((b * (c / L) + k / L) * hw + i) * L + k % L;
                if (to_blocked) dst[blocked] = src[plain];
                else dst[plain] = src[blocked];
            }
}

/* Node `node` (MaxPool, AveragePool or GlobalAveragePool on x, rank 4)
 * with x and y in blocks of `lanes` channels: every build and 1-3 threads
 * against the evaluator's NCHW result, relaid (GlobalAveragePool's output
 * is the same floats in both layouts). */
static void check_blocked_node(const rlt_graph *g, int node, int64_t lanes, uint64_t seed, double tol, const char *what)
{
    const rlt_graph_node *n = &g->nodes[node];
    const rlt_graph_tensor *xt = &g->tensors[n->inputs[0]], *yt = &g->tensors[n->outputs[0]];
    int64_t nx = rlt_graph_tensor_n_elems(xt), ny = rlt_graph_tensor_n_elems(yt);
    int64_t N = xt->dims[0], C = xt->dims[1], hw_y = ny / (N * C);
    bool is_global = strcmp(n->op_type, "GlobalAveragePool") == 0;
    void **ref = calloc((size_t)g->n_tensors + 1, sizeof *ref), **fast = calloc((size_t)g->n_tensors + 1, sizeof *fast);
    float *x = malloc((size_t)nx * 4), *xb = malloc((size_t)nx * 4), *y = calloc((size_t)ny, 4),
          *yb = malloc((size_t)ny * 4), *got = malloc((size_t)ny * 4), *first = malloc((size_t)ny * 4);
    cr_assert(ref && fast && x && xb && y && yb && got && first);
    fill(x, nx, seed, -2, 2);
    relayout(x, xb, N, C, nx / (N * C), lanes, true);
    ref[n->inputs[0]] = x;
    ref[n->outputs[0]] = y;
    fast[n->inputs[0]] = xb;
    fast[n->outputs[0]] = yb;
    rlt_diag d = {0};
    cr_assert_eq(rlt_graph_eval_node(g, node, ref, &d), RLT_STATUS_OK, "%s: %s", what, d.message);
    const char *isas[] = {"avx512f", "avx2", "baseline"};
    for (int run = 0; run < 5; run++) {
        int isa = run < 3 ? run : 0, threads = run < 3 ? 1 : run - 1;
        rlt_fast_op *op = NULL;
        rlt_fast_op_limit_isa(isas[isa]);
        cr_assert_eq(rlt_fast_op_create_blocked(g, node, (int)lanes, &op, &d), RLT_STATUS_OK, "%s", d.message);
        rlt_fast_op_limit_isa(NULL);
        cr_assert_not_null(op, "%s: no blocked plan", what);
        memset(yb, 0xff, (size_t)ny * 4);
        rlt_fast_op_run_threads(op, fast, op->isa, threads);
        if (is_global) memcpy(got, yb, (size_t)ny * 4);
        else relayout(yb, got, N, C, hw_y, lanes, false);
        char label[300];
        snprintf(label, sizeof label, "%s, lanes %ld (%s build, %d threads)", what, (long)lanes, rlt_fast_op_isa(op),
                 threads);
        rlt_fast_op_destroy(op);
        compare(yt, got, y, tol, label);
        if (run == 0) memcpy(first, got, (size_t)ny * 4);
        else cr_expect(memcmp(first, got, (size_t)ny * 4) == 0, "%s: differs from the first build", label);
    }
    free(x), free(xb), free(y), free(yb), free(got), free(first), free(ref), free(fast);
}

Test(net_ops, pools_on_blocked_channels)
{
    rlt_rng rng;
    rlt_rng_seed(&rng, 91);
    int n_checked = 0;
    for (int c = 0; c < 120; c++) {
        int64_t lanes = rlt_rng_below(&rng, 2) ? 16 : 8;
        pool_case pc = {.is_max = rlt_rng_below(&rng, 2) == 0, .ceil_mode = rlt_rng_below(&rng, 2) == 0,
                        .include_pad = rlt_rng_below(&rng, 2) == 0, .n_sp = 2,
                        .n = 1 + (int64_t)rlt_rng_below(&rng, 2), .c = lanes * (1 + (int64_t)rlt_rng_below(&rng, 2))};
        pool_windows_random(&rng, &pc);
        rlt_graph *g = pool_model(&pc);
        if (!g) continue;
        const char *opt = pc.is_max ? "MaxPool" : "AveragePool";
        char what[200];
        snprintf(what, sizeof what, "blocked %d: %s in %ldx%ld k %ldx%ld s %ldx%ld d %ldx%ld", c, opt, (long)pc.in[0],
                 (long)pc.in[1], (long)pc.k[0], (long)pc.k[1], (long)pc.s[0], (long)pc.s[1], (long)pc.d[0],
                 (long)pc.d[1]);
        check_blocked_node(g, node_of(g, opt), lanes, 700 + (uint64_t)c, pc.is_max ? EXACT : TOL, what);
        rlt_graph_destroy(g);
        n_checked++;
    }
    cr_expect_geq(n_checked, 60, "only %d blocked pools loaded", n_checked);
    /* ResNet's and SqueezeNet's MaxPools, GlobalAveragePool */
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, (int64_t[]){1, 32, 23, 23});
    Onnx__NodeProto *mp = ob_node(&b, "MaxPool", "p", "x", "y");
    ob_attr_ints(&b, mp, "kernel_shape", 2, (int64_t[]){3, 3});
    ob_attr_ints(&b, mp, "strides", 2, (int64_t[]){2, 2});
    ob_attr_i(&b, mp, "ceil_mode", 1);
    ob_output(&b, "y");
    rlt_graph *g = load(&b);
    check_blocked_node(g, node_of(g, "MaxPool"), 16, 9, EXACT, "SqueezeNet's MaxPool");
    rlt_graph_destroy(g);
    for (int i = 0; i < 2; i++) {
        unary_model(&b, 13, "GlobalAveragePool", "x", 4, i ? (int64_t[]){2, 16, 5, 3} : (int64_t[]){1, 64, 7, 7});
        g = load(&b);
        check_blocked_node(g, node_of(g, "GlobalAveragePool"), i ? 8 : 16, 11 + (uint64_t)i, TOL, "GlobalAveragePool");
        rlt_graph_destroy(g);
    }
}

/* ---- Softmax, LayerNormalization, ReduceMean ------------------------------------------ */

Test(net_ops, softmax_axes_and_opsets)
{
    onnx_build b;
    unary_model(&b, 13, "Softmax", "x", 4, D(1, 12, 128, 128));
    check_model(&b, "Softmax", 1, -8, 8, TOL, "Softmax BERT scores");
    rlt_rng rng;
    rlt_rng_seed(&rng, 5);
    for (int c = 0; c < 80; c++) {
        int r = 1 + (int)rlt_rng_below(&rng, 4), opset = rlt_rng_below(&rng, 2) ? 13 : 11;
        int64_t dims[4];
        for (int i = 0; i < r; i++) dims[i] = 1 + (int64_t)rlt_rng_below(&rng, 9);
        int64_t axis = (int64_t)rlt_rng_below(&rng, (uint64_t)(2 * r)) - r;
        Onnx__NodeProto *n = unary_model(&b, opset, "Softmax", "x", r, dims);
        ob_attr_i(&b, n, "axis", axis);
        char what[96];
        snprintf(what, sizeof what, "random %d: Softmax rank %d axis %ld opset %d", c, r, (long)axis, opset);
        check_model(&b, "Softmax", 100 + (uint64_t)c, -20, 20, TOL, what);
    }
    /* a strided axis with more columns than one block */
    Onnx__NodeProto *n = unary_model(&b, 13, "Softmax", "x", 3, D(2, 5, 300));
    ob_attr_i(&b, n, "axis", 1);
    check_model(&b, "Softmax", 2, -5, 5, TOL, "Softmax axis 1 of [2,5,300]");
    /* the default axis: 1 before opset 13 (flattened), -1 from 13 */
    unary_model(&b, 11, "Softmax", "x", 3, D(2, 5, 7));
    check_model(&b, "Softmax", 3, -5, 5, TOL, "Softmax default axis, opset 11");
    unary_model(&b, 13, "Softmax", "x", 3, D(2, 5, 7));
    check_model(&b, "Softmax", 4, -5, 5, TOL, "Softmax default axis, opset 13");
    unary_model(&b, 13, "Softmax", "x", 2, D(3, 1000));
    check_model(&b, "Softmax", 5, -100, 100, TOL, "Softmax of large values");
}

/* LayerNormalization over x [2,3,4,6] from `axis`, with a scale (and bias)
 * of the given shape, as constants or graph inputs. */
static void check_layernorm(int64_t axis, int rs, const int64_t *ds, bool has_bias, bool is_const, float lo, float hi,
                            const char *what)
{
    onnx_build b;
    ob_init(&b, 17);
    ob_input(&b, "x", OB_F32, 4, D(2, 3, 4, 6));
    int64_t n = ob_n_elems(rs, ds);
    float *v = malloc((size_t)n * sizeof *v + 1);
    const char *names[2] = {"scale", "bias"};
    for (int k = 0; k < 1 + has_bias; k++) {
        if (is_const) {
            fill(v, n, 9 + (uint64_t)k, -2, 2);
            ob_init_f32(&b, names[k], rs, ds, v);
        } else {
            ob_input(&b, names[k], OB_F32, rs, ds);
        }
    }
    free(v);
    Onnx__NodeProto *nd = ob_node(&b, "LayerNormalization", "ln", has_bias ? "x,scale,bias" : "x,scale", "y");
    ob_attr_i(&b, nd, "axis", axis);
    ob_attr_f(&b, nd, "epsilon", 1e-3f);
    ob_output(&b, "y");
    check_model(&b, "LayerNormalization", 60 + (uint64_t)axis, lo, hi, TOL, what);
}

Test(net_ops, layernorm)
{
    onnx_build b;
    ob_init(&b, 17);
    ob_input(&b, "x", OB_F32, 3, D(1, 128, 768));
    ob_init_f32(&b, "s", 1, D(768), NULL);
    ob_init_f32(&b, "bb", 1, D(768), NULL);
    ob_node(&b, "LayerNormalization", "ln", "x,s,bb", "y");
    ob_output(&b, "y");
    check_model(&b, "LayerNormalization", 1, -4, 4, TOL, "LayerNormalization BERT");
    for (int64_t axis = -4; axis < 4; axis++) {
        int r = axis < 0 ? (int)-axis : 4 - (int)axis;
        int64_t full[4];
        for (int i = 0; i < r; i++) full[i] = D(2, 3, 4, 6)[4 - r + i];
        check_layernorm(axis, r, full, true, true, -3, 3, "LayerNormalization, full scale and bias");
        check_layernorm(axis, r, full, false, false, -3, 3, "LayerNormalization, scale as an input, no bias");
        check_layernorm(axis, 1, D(1), true, true, -3, 3, "LayerNormalization, scalar scale and bias");
    }
    check_layernorm(2, 2, D(1, 6), true, true, -3, 3, "LayerNormalization, scale [1,6] over [4,6]");
    check_layernorm(1, 2, D(4, 1), true, true, -3, 3, "LayerNormalization, scale [4,1] over [3,4,6]");
    check_layernorm(-1, 1, D(6), true, false, -3, 3, "LayerNormalization, both as inputs");
    /* a large mean over a small spread */
    check_layernorm(-1, 1, D(6), true, true, 1000.0f, 1000.01f, "LayerNormalization of 1000 +- 0.01");
}

Test(net_ops, reduce_mean)
{
    struct {
        int rank;
        int64_t dims[4];
        int n_axes;
        int64_t axes[4];
        int keepdims;
    } cases[] = {
        {3, {1, 128, 768}, 1, {-1}, 1}, {3, {2, 5, 7}, 1, {2}, 0},        {4, {2, 3, 5, 5}, 2, {2, 3}, 1},
        {4, {2, 3, 5, 5}, 2, {-1, -2}, 0}, {3, {2, 5, 7}, 0, {0}, 1},      {3, {1, 4, 6}, 2, {0, 2}, 1},
        {3, {4, 1, 6}, 2, {1, 2}, 0},      {4, {3, 4, 1, 1}, 1, {1}, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        onnx_build b;
        Onnx__NodeProto *n = unary_model(&b, 13, "ReduceMean", "x", cases[i].rank, cases[i].dims);
        if (cases[i].n_axes) ob_attr_ints(&b, n, "axes", cases[i].n_axes, cases[i].axes);
        ob_attr_i(&b, n, "keepdims", cases[i].keepdims);
        char what[64];
        snprintf(what, sizeof what, "ReduceMean case %zu", i);
        check_model(&b, "ReduceMean", 70 + i, -3, 5, TOL, what);
    }
}

/* ---- data movement --------------------------------------------------------------------- */

static void check_transpose(int elem_type, int rank, const int64_t *dims, const int64_t *perm, uint64_t seed,
                            const char *what)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", elem_type, rank, dims);
    Onnx__NodeProto *n = ob_node(&b, "Transpose", "t", "x", "y");
    if (perm) ob_attr_ints(&b, n, "perm", rank, perm);
    ob_output(&b, "y");
    check_model(&b, "Transpose", seed, -5, 5, EXACT, what);
}

Test(net_ops, transpose)
{
    check_transpose(OB_F32, 4, D(1, 128, 12, 64), D(0, 2, 1, 3), 1, "BERT [0,2,1,3]");
    check_transpose(OB_F32, 4, D(1, 128, 12, 64), D(0, 2, 3, 1), 2, "BERT [0,2,3,1]");
    check_transpose(OB_F32, 4, D(1, 12, 128, 64), D(0, 2, 1, 3), 3, "BERT back");
    check_transpose(OB_F32, 2, D(37, 53), NULL, 4, "matrix, default perm");
    check_transpose(OB_I64, 3, D(5, 17, 19), D(2, 0, 1), 5, "i64");
    check_transpose(OB_BOOL, 3, D(5, 17, 19), D(1, 2, 0), 6, "bool");
    check_transpose(OB_F32, 0, NULL, NULL, 7, "scalar");
    check_transpose(OB_F32, 3, D(4, 0, 3), D(2, 1, 0), 8, "empty");
    rlt_rng rng;
    rlt_rng_seed(&rng, 11);
    const int types[] = {OB_F32, OB_I64, OB_BOOL, OB_I32};
    for (int c = 0; c < 150; c++) {
        int r = 1 + (int)rlt_rng_below(&rng, 6);
        int64_t dims[6], perm[6];
        for (int i = 0; i < r; i++) {
            dims[i] = 1 + (int64_t)rlt_rng_below(&rng, rlt_rng_below(&rng, 4) == 0 ? 40 : 5);
            perm[i] = i;
        }
        for (int i = r - 1; i > 0; i--) {
            int j = (int)rlt_rng_below(&rng, (uint64_t)i + 1);
            int64_t t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        char what[64];
        snprintf(what, sizeof what, "random %d: rank %d", c, r);
        check_transpose(types[rlt_rng_below(&rng, 4)], r, dims, perm, 200 + (uint64_t)c, what);
    }
}

/* Slice of x (f32 or i64) by constant inputs (opset 13): n values each of
 * starts, ends, and axes and steps when given. */
static void check_slice(int elem_type, int rank, const int64_t *dims, int n, const int64_t *starts,
                        const int64_t *ends, const int64_t *axes, const int64_t *steps, uint64_t seed,
                        const char *what)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", elem_type, rank, dims);
    ob_init_i64(&b, "st", n, starts);
    ob_init_i64(&b, "en", n, ends);
    if (axes) ob_init_i64(&b, "ax", n, axes);
    if (steps) ob_init_i64(&b, "sp", n, steps);
    ob_node(&b, "Slice", "s", steps ? (axes ? "x,st,en,ax,sp" : "x,st,en,,sp") : axes ? "x,st,en,ax" : "x,st,en", "y");
    ob_output(&b, "y");
    check_model(&b, "Slice", seed, -5, 5, EXACT, what);
}

Test(net_ops, slice)
{
    check_slice(OB_F32, 3, D(4, 6, 8), 1, D(1), D(3), D(1), NULL, 1, "one axis");
    check_slice(OB_F32, 3, D(4, 6, 8), 3, D(0, 1, 2), D(4, 5, 7), NULL, NULL, 2, "all axes");
    check_slice(OB_F32, 3, D(4, 6, 8), 2, D(-1, 7), D(-100, 0), D(0, 2), D(-1, -2), 3, "negative steps");
    check_slice(OB_I64, 2, D(10, 9), 2, D(1, 0), D(1000, 9), D(0, 1), D(3, 4), 4, "steps, i64, ends clamped");
    check_slice(OB_F32, 2, D(3, 4), 1, D(2), D(2), D(0), NULL, 5, "empty");
    check_slice(OB_F32, 4, D(1, 128, 2, 768), 1, D(0), D(1), D(2), NULL, 6, "one of two");
    /* opset 9: attributes */
    onnx_build b;
    ob_init(&b, 9);
    ob_input(&b, "x", OB_F32, 2, D(5, 7));
    Onnx__NodeProto *n = ob_node(&b, "Slice", "s", "x", "y");
    ob_attr_ints(&b, n, "starts", 2, D(1, -3));
    ob_attr_ints(&b, n, "ends", 2, D(4, 100));
    ob_attr_ints(&b, n, "axes", 2, D(0, 1));
    ob_output(&b, "y");
    check_model(&b, "Slice", 7, -5, 5, EXACT, "opset 9 attributes");
    rlt_rng rng;
    rlt_rng_seed(&rng, 13);
    for (int c = 0; c < 150; c++) {
        int r = 1 + (int)rlt_rng_below(&rng, 4);
        int64_t dims[4], starts[4], ends[4], axes[4], steps[4];
        for (int i = 0; i < r; i++) dims[i] = 1 + (int64_t)rlt_rng_below(&rng, 7);
        int k = 0;
        for (int i = 0; i < r; i++) {
            if (rlt_rng_below(&rng, 3) == 0) continue;
            axes[k] = rlt_rng_below(&rng, 2) ? i : i - r;
            starts[k] = (int64_t)rlt_rng_below(&rng, 2 * (uint64_t)dims[i] + 3) - dims[i] - 1;
            ends[k] = (int64_t)rlt_rng_below(&rng, 2 * (uint64_t)dims[i] + 3) - dims[i] - 1;
            steps[k] = ((int64_t)rlt_rng_below(&rng, 3) + 1) * (rlt_rng_below(&rng, 2) ? 1 : -1);
            k++;
        }
        if (k == 0) continue;
        char what[64];
        snprintf(what, sizeof what, "random %d: rank %d, %d axes", c, r, k);
        check_slice(rlt_rng_below(&rng, 2) ? OB_F32 : OB_I64, r, dims, k, starts, ends, axes, steps,
                    300 + (uint64_t)c, what);
    }
}

Test(net_ops, concat_and_split)
{
    for (int axis = -3; axis < 3; axis++) {
        const int types[] = {OB_F32, OB_I64, OB_BOOL};
        for (int ty = 0; ty < 3; ty++) {
            onnx_build b;
            ob_init(&b, 13);
            int a = axis < 0 ? axis + 3 : axis;
            int64_t d0[3] = {2, 3, 4}, d1[3] = {2, 3, 4}, d2[3] = {2, 3, 4};
            d1[a] = 1;
            d2[a] = 5;
            ob_input(&b, "x0", types[ty], 3, d0);
            ob_input(&b, "x1", types[ty], 3, d1);
            ob_input(&b, "x2", types[ty], 3, d2);
            Onnx__NodeProto *n = ob_node(&b, "Concat", "c", "x0,x1,x2,x0", "y");
            ob_attr_i(&b, n, "axis", axis);
            ob_output(&b, "y");
            char what[64];
            snprintf(what, sizeof what, "Concat axis %d type %d", axis, types[ty]);
            check_model(&b, "Concat", 10 + (uint64_t)(axis + 3), -5, 5, EXACT, what);
        }
    }
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x0", OB_F32, 2, D(3, 4));
    ob_input(&b, "x1", OB_F32, 2, D(3, 0));
    Onnx__NodeProto *n = ob_node(&b, "Concat", "c", "x0,x1", "y");
    ob_attr_i(&b, n, "axis", 1);
    ob_output(&b, "y");
    check_model(&b, "Concat", 20, -5, 5, EXACT, "Concat with an empty part");

    /* Split: sizes as an input (13), an attribute (11), equal parts */
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 3, D(2, 9, 4));
    ob_init_i64(&b, "sizes", 3, D(2, 3, 4));
    n = ob_node(&b, "Split", "s", "x,sizes", "y0,y1,y2");
    ob_attr_i(&b, n, "axis", 1);
    ob_output(&b, "y0");
    ob_output(&b, "y1");
    ob_output(&b, "y2");
    check_model(&b, "Split", 21, -5, 5, EXACT, "Split by an input");
    ob_init(&b, 11);
    ob_input(&b, "x", OB_I64, 3, D(2, 9, 4));
    n = ob_node(&b, "Split", "s", "x", "y0,y1");
    ob_attr_i(&b, n, "axis", -1);
    ob_attr_ints(&b, n, "split", 2, D(1, 3));
    ob_output(&b, "y0");
    ob_output(&b, "y1");
    check_model(&b, "Split", 22, -5, 5, EXACT, "Split by an attribute, i64");
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(6, 5));
    n = ob_node(&b, "Split", "s", "x", "y0,y1,y2");
    ob_output(&b, "y0");
    ob_output(&b, "y1");
    ob_output(&b, "y2");
    check_model(&b, "Split", 23, -5, 5, EXACT, "Split in equal parts");
}

/* The reshapes, Identity, Dropout and Cast to the same type: copies,
 * and views except Dropout with a mask and Cast. */
Test(net_ops, copies_and_views)
{
    struct {
        const char *op;
        int opset;
        const char *inputs, *outputs;
        bool is_view;
    } cases[] = {
        {"Reshape", 13, "x,shape", "y", true},   {"Flatten", 13, "x", "y", true},
        {"Squeeze", 13, "x,axes", "y", true},    {"Unsqueeze", 13, "x,axes", "y", true},
        {"Identity", 13, "x", "y", true},        {"Dropout", 13, "x", "y", true},
        {"Dropout", 13, "x", "y,mask", false},   {"Dropout", 9, "x", "y,mask", false},
        {"Cast", 13, "x", "y", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        onnx_build b;
        ob_init(&b, cases[i].opset);
        ob_input(&b, "x", OB_F32, 4, D(2, 1, 3, 5));
        ob_init_i64(&b, "shape", 2, D(6, -1));
        ob_init_i64(&b, "axes", 1, D(1));
        Onnx__NodeProto *n = ob_node(&b, cases[i].op, "n", cases[i].inputs, cases[i].outputs);
        if (strcmp(cases[i].op, "Cast") == 0) ob_attr_i(&b, n, "to", OB_F32);
        ob_output(&b, "y");
        if (strchr(cases[i].outputs, ',')) ob_output(&b, "mask");
        rlt_graph *g = load(&b);
        int node = node_of(g, cases[i].op);
        cr_expect_eq(rlt_fast_op_is_view(g, node), cases[i].is_view, "%s with outputs %s", cases[i].op,
                     cases[i].outputs);
        check_node(g, node, 80 + i, -5, 5, EXACT, cases[i].op);
        /* run as a view: the output is the input's buffer */
        const rlt_graph_node *nd = &g->nodes[node];
        float x[30], keep[30];
        fill(x, 30, 3, -1, 1);
        memcpy(keep, x, sizeof x);
        void **vals = calloc((size_t)g->n_tensors, sizeof *vals);
        unsigned char mask[30 * 4];
        for (int k = 0; k < nd->n_inputs; k++) vals[nd->inputs[k]] = g->tensors[nd->inputs[k]].data;
        vals[nd->inputs[0]] = x;
        vals[nd->outputs[0]] = x;
        if (nd->n_outputs > 1) vals[nd->outputs[1]] = mask;
        rlt_fast_op *op = NULL;
        rlt_diag d = {0};
        cr_assert_eq(rlt_fast_op_create(g, node, &op, &d), RLT_STATUS_OK);
        cr_assert_not_null(op);
        rlt_fast_op_run(op, vals);
        rlt_fast_op_destroy(op);
        cr_expect(memcmp(x, keep, sizeof x) == 0, "%s changed its shared buffer", cases[i].op);
        free(vals);
        rlt_graph_destroy(g);
    }
    /* not views */
    onnx_build b;
    unary_model(&b, 13, "Relu", "x", 1, D(4));
    rlt_graph *g = load(&b);
    cr_expect_not(rlt_fast_op_is_view(g, node_of(g, "Relu")));
    rlt_graph_destroy(g);
    Onnx__NodeProto *n = unary_model(&b, 13, "Cast", "x", 1, D(4));
    ob_attr_i(&b, n, "to", OB_I64);
    g = load(&b);
    cr_expect_not(rlt_fast_op_is_view(g, node_of(g, "Cast")));
    rlt_graph_destroy(g);
}

/* ---- what is left to the evaluator ------------------------------------------------------ */

Test(net_ops, left_to_the_evaluator)
{
    onnx_build b;
    /* MaxPool's Indices */
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 2, 6, 6));
    Onnx__NodeProto *n = ob_node(&b, "MaxPool", "p", "x", "y,ind");
    ob_attr_ints(&b, n, "kernel_shape", 2, D(2, 2));
    ob_output(&b, "y");
    ob_output(&b, "ind");
    cr_expect(is_left_out(&b, "MaxPool"), "MaxPool with Indices");
    /* 3-D pools */
    n = unary_model(&b, 13, "MaxPool", "x", 5, D(1, 2, 4, 4, 4));
    ob_attr_ints(&b, n, "kernel_shape", 3, D(2, 2, 2));
    cr_expect(is_left_out(&b, "MaxPool"), "3-D MaxPool");
    /* LayerNormalization's statistics */
    ob_init(&b, 17);
    ob_input(&b, "x", OB_F32, 2, D(3, 8));
    ob_init_f32(&b, "s", 1, D(8), NULL);
    ob_node(&b, "LayerNormalization", "ln", "x,s", "y,mean");
    ob_output(&b, "y");
    ob_output(&b, "mean");
    cr_expect(is_left_out(&b, "LayerNormalization"), "LayerNormalization with Mean");
    /* LayerNormalization with a computed scale that broadcasts */
    ob_init(&b, 17);
    ob_input(&b, "x", OB_F32, 2, D(3, 8));
    ob_input(&b, "s", OB_F32, 1, D(1));
    ob_node(&b, "LayerNormalization", "ln", "x,s", "y");
    ob_output(&b, "y");
    cr_expect(is_left_out(&b, "LayerNormalization"), "LayerNormalization with a broadcast input scale");
    /* integer arithmetic and activations */
    ob_init(&b, 13);
    ob_input(&b, "a", OB_I64, 1, D(4));
    ob_input(&b, "c", OB_I64, 1, D(4));
    ob_node(&b, "Add", "n", "a,c", "y");
    ob_output(&b, "y");
    cr_expect(is_left_out(&b, "Add"), "i64 Add");
    ob_init(&b, 13);
    ob_input(&b, "a", OB_I32, 1, D(4));
    ob_node(&b, "Relu", "n", "a", "y");
    ob_output(&b, "y");
    cr_expect(is_left_out(&b, "Relu"), "i32 Relu");
    /* Pow by an integer exponent */
    ob_init(&b, 13);
    ob_input(&b, "a", OB_F32, 1, D(4));
    ob_input(&b, "e", OB_I64, 1, D(4));
    ob_node(&b, "Pow", "n", "a,e", "y");
    ob_output(&b, "y");
    cr_expect(is_left_out(&b, "Pow"), "Pow by i64");
    /* Clip by a computed bound */
    unary_model(&b, 13, "Clip", "x,lo", 1, D(4));
    ob_input(&b, "lo", OB_F32, 0, NULL);
    cr_expect(is_left_out(&b, "Clip"), "Clip by an input");
    /* ReduceMean over a leading axis */
    n = unary_model(&b, 13, "ReduceMean", "x", 2, D(3, 4));
    ob_attr_ints(&b, n, "axes", 1, D(0));
    cr_expect(is_left_out(&b, "ReduceMean"), "ReduceMean axis 0");
    /* Casts between types */
    n = unary_model(&b, 13, "Cast", "x", 1, D(4));
    ob_attr_i(&b, n, "to", OB_I64);
    cr_expect(is_left_out(&b, "Cast"), "Cast to i64");
    /* ops without a fast form */
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 2, 5, 5));
    ob_init_f32(&b, "w", 4, D(3, 2, 3, 3), NULL);
    ob_node(&b, "Conv", "c", "x,w", "y");
    ob_output(&b, "y");
    cr_expect(is_left_out(&b, "Conv"), "Conv");
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(5, 3));
    ob_input(&b, "i", OB_I64, 1, D(2));
    ob_node(&b, "Gather", "g", "x,i", "y");
    ob_output(&b, "y");
    cr_expect(is_left_out(&b, "Gather"), "Gather");
    /* a node whose output is a constant (folded) */
    unary_model(&b, 13, "Relu", "x", 1, D(4));
    rlt_graph *g = load(&b);
    int node = node_of(g, "Relu");
    g->tensors[g->nodes[node].outputs[0]].data = rlt_arena_alloc(g->arena, 4 * sizeof(float));
    rlt_fast_op *op = (rlt_fast_op *)1;
    rlt_diag d = {0};
    cr_expect_eq(rlt_fast_op_create(g, node, &op, &d), RLT_STATUS_OK);
    cr_expect_null(op, "a node with a constant output");
    rlt_graph_destroy(g);
    /* a node marked removed */
    unary_model(&b, 13, "Relu", "x", 1, D(4));
    g = load(&b);
    node = node_of(g, "Relu");
    g->nodes[node].is_removed = true;
    op = (rlt_fast_op *)1;
    cr_expect_eq(rlt_fast_op_create(g, node, &op, &d), RLT_STATUS_OK);
    cr_expect_null(op, "a removed node");
    cr_expect_not(rlt_fast_op_is_view(g, node));
    rlt_graph_destroy(g);
}

/* ---- builds ------------------------------------------------------------------------------- */

/* The test hook limits the build; without it create picks the best. */
Test(net_ops, isa_builds)
{
    onnx_build b;
    unary_model(&b, 13, "Tanh", "x", 1, D(9));
    rlt_graph *g = load(&b);
    int node = node_of(g, "Tanh");
    const char *names[] = {"baseline", "avx2", "avx512f"};
    const char *best = NULL;
    for (int i = 0; i < 4; i++) {
        rlt_fast_op_limit_isa(i < 3 ? names[i] : NULL);
        rlt_fast_op *op = NULL;
        rlt_diag d = {0};
        cr_assert_eq(rlt_fast_op_create(g, node, &op, &d), RLT_STATUS_OK);
        rlt_fast_op_limit_isa(NULL);
        cr_assert_not_null(op);
        const char *isa = rlt_fast_op_isa(op);
        if (i == 0) cr_expect_str_eq(isa, "baseline");
        if (i == 1) cr_expect(strcmp(isa, "avx2") == 0 || strcmp(isa, "baseline") == 0, "%s", isa);
        if (i < 3) best = isa;
        else cr_expect_str_eq(isa, best, "no limit gives %s; the highest limit gave %s", isa, best);
        rlt_fast_op_destroy(op);
    }
    rlt_graph_destroy(g);
}

/* ---- allocation failures --------------------------------------------------------------- */

/* Creates the fast op of node `op` with the Nth allocation failing, for
 * every N until it succeeds: OUT_OF_MEMORY with a message and no op
 * before, a working op after. */
static void check_oom(onnx_build *b, const char *op_type)
{
    rlt_graph *g = load(b);
    int node = node_of(g, op_type);
    bool done = false;
    for (long k = 1; k < 50 && !done; k++) {
        rlt_fast_op *op = (rlt_fast_op *)1;
        rlt_diag d = {0};
        rlt_alloc_fail_after(k);
        rlt_status st = rlt_fast_op_create(g, node, &op, &d);
        rlt_alloc_fail_after(0);
        if (st == RLT_STATUS_OK) {
            cr_expect_not_null(op, "%s", op_type);
            done = true;
            rlt_fast_op_destroy(op);
        } else {
            cr_expect_eq(st, RLT_STATUS_OUT_OF_MEMORY);
            cr_expect_null(op);
            cr_expect(strstr(d.message, "out of memory") != NULL, "%s", d.message);
        }
    }
    cr_expect(done, "%s: never created with enough allocations", op_type);
    check_node(g, node, 1, -2, 2, TOL, op_type);
    rlt_graph_destroy(g);
}

Test(net_ops, allocation_failures)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(3, 4));
    ob_node(&b, "Concat", "c", "x,x,x", "y");
    ob_attr_i(&b, b.graph.node[0], "axis", 1);
    ob_output(&b, "y");
    check_oom(&b, "Concat");
    Onnx__NodeProto *n = unary_model(&b, 13, "AveragePool", "x", 4, D(1, 2, 7, 7));
    ob_attr_ints(&b, n, "kernel_shape", 2, D(3, 3));
    ob_attr_ints(&b, n, "pads", 4, D(1, 1, 1, 1));
    check_oom(&b, "AveragePool");
    ob_init(&b, 17);
    ob_input(&b, "x", OB_F32, 3, D(2, 3, 8));
    ob_init_f32(&b, "s", 1, D(1), NULL);
    ob_init_f32(&b, "bb", 2, D(1, 8), NULL);
    n = ob_node(&b, "LayerNormalization", "ln", "x,s,bb", "y");
    ob_attr_i(&b, n, "axis", 1);
    ob_output(&b, "y");
    check_oom(&b, "LayerNormalization");
    ob_init(&b, 13);
    ob_input(&b, "a", OB_F32, 3, D(2, 3, 4));
    ob_input(&b, "c", OB_F32, 1, D(4));
    ob_node(&b, "Mul", "m", "a,c", "y");
    ob_output(&b, "y");
    check_oom(&b, "Mul");
    n = unary_model(&b, 13, "Transpose", "x", 3, D(2, 3, 4));
    ob_attr_ints(&b, n, "perm", 3, D(2, 0, 1));
    check_oom(&b, "Transpose");
    unary_model(&b, 13, "Tanh", "x", 1, D(9));
    check_oom(&b, "Tanh");
    assert_no_leaks();
}
