/*
 * test_graph_pad.c - the ONNX Pad op in the graph IR (inference in
 * src/graph/infer.c, evaluation in src/graph/eval.c) and the constant
 * folding of any op the evaluator runs (rlt_graph_infer, with its two size
 * limits). Pad: each mode (constant, reflect, edge) in each data type (f32,
 * i64, i32, bool), in the attribute form (opset 10) and the input form
 * (opset 13), with negative pads (crops), reflect pads longer than the
 * dimension, each run both on a graph input (evaluated) and on a constant
 * (folded); every refusal with its message. Expected values are worked
 * out by hand: each case lists, per output element, the input element it
 * reads (numpy.pad's rules, crops first as onnxruntime does them). Folding:
 * Sqrt, Pow, Relu, Pad and Conv of constants become constants, a
 * BatchNormalization-style weight rewrite folds whole, a Concat of two
 * 4.7M-element weights folds under RLT_GRAPH_FOLD_WEIGHT_MAX_ELEMS and a
 * 1x1 kernel padded to 3x3 under Pad's growth, while an Expand or a
 * broadcast that blows a small constant up past RLT_GRAPH_FOLD_MAX_ELEMS
 * does not, nor a MatMul too long to evaluate at load; allocation failures
 * at every point of a load that folds leak nothing.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../common/leaks.h"
#include "../common/onnx_build.h"
#include "graph/graph.h"

#define D(...) ((int64_t[]){__VA_ARGS__})
#define F(...) ((const float[]){__VA_ARGS__})

/* ---- helpers ------------------------------------------------------------------ */

static rlt_graph *load_ok(onnx_build *b)
{
    rlt_graph *g = NULL;
    rlt_diag d = {0};
    rlt_status st = ob_load(b, &g, &d);
    cr_assert_eq(st, RLT_STATUS_OK, "load failed: %s", d.message);
    return g;
}

/* Loading fails with INVALID_ARGUMENT and a message holding each of the
 * NULL-terminated substrings. */
static void expect_refused_v(onnx_build *b, const char *const *subs)
{
    rlt_graph *g = NULL;
    rlt_diag d = {0};
    rlt_status st = ob_load(b, &g, &d);
    cr_assert_eq(st, RLT_STATUS_INVALID_ARGUMENT, "got %s: %s", rlt_status_str(st), d.message);
    cr_assert_null(g);
    for (int i = 0; subs[i]; i++) cr_expect(strstr(d.message, subs[i]), "'%s' not in: %s", subs[i], d.message);
    ob_free(b);
}
#define expect_refused(b, ...) expect_refused_v((b), (const char *const[]){__VA_ARGS__, NULL})

/* ---- Pad: one input x [2,3] in every type -------------------------------------- */

/* The element types, with x's values and the constant used to pad. */
typedef struct pad_type {
    int onnx;              /* OB_F32, ... */
    rlt_dtype dtype;
    const void *x;         /* 6 values, as the evaluator reads them */
    const void *x_init;    /* the same for ob_tensor (bool as int32) */
    const void *fill;      /* one value, as the evaluator reads it */
    const void *fill_init; /* the same for ob_tensor */
    float fill_attr;       /* the value attribute (opset 10) */
} pad_type;

static const float x_f32[6] = {1, 2, 3, 4, 5, 6}, fill_f32 = 9.5f;
static const int64_t x_i64[6] = {10, -20, 30, -40, 50, -60}, fill_i64 = -7;
static const int32_t x_i32[6] = {7, 8, 9, -1, -2, -3}, fill_i32 = 123;
static const unsigned char x_bool[6] = {1, 0, 0, 1, 0, 1}, fill_bool = 1;
static const int32_t x_bool_init[6] = {1, 0, 0, 1, 0, 1}, fill_bool_init = 1;

static const pad_type types[] = {
    {OB_F32, RLT_DTYPE_FLOAT32, x_f32, x_f32, &fill_f32, &fill_f32, 9.5f},
    {OB_I64, RLT_DTYPE_INT64, x_i64, x_i64, &fill_i64, &fill_i64, -7.0f},
    {OB_I32, RLT_DTYPE_INT32, x_i32, x_i32, &fill_i32, &fill_i32, 123.0f},
    {OB_BOOL, RLT_DTYPE_BOOL, x_bool, x_bool_init, &fill_bool, &fill_bool_init, 1.0f},
};

/* A Pad of x [2,3]: its mode and pads, the output's shape and, for each
 * output element in order, the element of x (row-major, 0..5) it reads, or
 * -1 for the constant. */
typedef struct pad_case {
    const char *name, *mode; /* mode NULL: left out (constant) */
    int64_t pads[4];         /* [begin 0, begin 1, end 0, end 1] */
    int64_t out[2];
    int src[32];
} pad_case;

static const pad_case cases[] = {
    /* a row before, two columns after */
    {"constant", "constant", {1, 0, 0, 2}, {3, 5},
     {-1, -1, -1, -1, -1,
      0, 1, 2, -1, -1,
      3, 4, 5, -1, -1}},
    /* rows [1,0,1,0], columns [2,1,0,1,2,1,0]: the edge is not repeated */
    {"reflect", "reflect", {1, 2, 1, 2}, {4, 7},
     {5, 4, 3, 4, 5, 4, 3,
      2, 1, 0, 1, 2, 1, 0,
      5, 4, 3, 4, 5, 4, 3,
      2, 1, 0, 1, 2, 1, 0}},
    /* rows [0,1,1], columns [0,0,0,1,2,2] */
    {"edge", "edge", {0, 2, 1, 1}, {3, 6},
     {0, 0, 0, 1, 2, 2,
      3, 3, 3, 4, 5, 5,
      3, 3, 3, 4, 5, 5}},
    /* row 0 and the last column cropped, a column padded before */
    {"constant crop", NULL, {-1, 1, 0, -1}, {1, 3}, {-1, 3, 4}},
    /* the first column cropped; the two left ([1,2]) reflected twice after */
    {"reflect crop", "reflect", {0, -1, 0, 2}, {2, 4}, {1, 2, 1, 2, 4, 5, 4, 5}},
    /* row 0 and the last two columns cropped; the row left repeated */
    {"edge crop", "edge", {-1, 0, 1, -2}, {2, 1}, {3, 3}},
};

/* Builds the Pad model: x of the type (a graph input, or an initializer
 * when `is_const`), in opset 10's attribute form or opset 13's input form,
 * with the type's constant when `with_value`. */
static void pad_model(onnx_build *b, int opset, const pad_type *ty, bool is_const, const pad_case *pc,
                      bool with_value)
{
    ob_init(b, opset);
    if (is_const) ob_initializer(b, ob_tensor(b, "x", ty->onnx, 2, D(2, 3), ty->x_init));
    else ob_input(b, "x", ty->onnx, 2, D(2, 3));
    Onnx__NodeProto *n;
    if (opset < 11) {
        n = ob_node(b, "Pad", "p", "x", "y");
        ob_attr_ints(b, n, "pads", 4, pc->pads);
        if (with_value) ob_attr_f(b, n, "value", ty->fill_attr);
    } else {
        ob_init_i64(b, "pads", 4, pc->pads);
        if (with_value) ob_initializer(b, ob_tensor(b, "v", ty->onnx, 0, NULL, ty->fill_init));
        n = ob_node(b, "Pad", "p", with_value ? "x,pads,v" : "x,pads", "y");
    }
    if (pc->mode) ob_attr_s(b, n, "mode", pc->mode);
    ob_output(b, "y");
}

/* Runs one case in one form and type: shape, then every element. */
static void check_case(int opset, const pad_type *ty, bool is_const, const pad_case *pc, bool with_value)
{
    onnx_build b;
    pad_model(&b, opset, ty, is_const, pc, with_value);
    rlt_graph *g = load_ok(&b);
    ob_free(&b);
    char what[128];
    snprintf(what, sizeof what, "%s, opset %d, %s, %s%s", pc->name, opset, rlt_dtype_str(ty->dtype),
             is_const ? "folded" : "evaluated", with_value ? "" : ", no value");
    const rlt_graph_tensor *yt = &g->tensors[g->outputs[0]];
    cr_assert_eq(yt->dtype, ty->dtype, "%s", what);
    cr_assert_eq(yt->rank, 2, "%s", what);
    cr_assert(yt->dims[0] == pc->out[0] && yt->dims[1] == pc->out[1], "%s: shape [%ld,%ld]", what,
              (long)yt->dims[0], (long)yt->dims[1]);
    cr_expect_eq(g->n_nodes, is_const ? 0 : 1, "%s: the Pad of a constant folds", what);
    cr_expect_eq(yt->data != NULL, is_const, "%s", what);
    void *outs[1] = {NULL};
    rlt_diag d = {0};
    cr_assert_eq(rlt_graph_eval(g, is_const ? 0 : 1, (const void *[]){ty->x}, 1, outs, &d), RLT_STATUS_OK, "%s: %s",
                 what, d.message);
    size_t es = rlt_dtype_size(ty->dtype);
    unsigned char zero[8] = {0};
    const unsigned char *fill = with_value ? ty->fill : zero;
    for (int64_t k = 0; k < pc->out[0] * pc->out[1]; k++) {
        int s = pc->src[k];
        const unsigned char *want = s < 0 ? fill : (const unsigned char *)ty->x + (size_t)s * es;
        cr_expect(memcmp((const unsigned char *)outs[0] + (size_t)k * es, want, es) == 0,
                  "%s: element %ld differs (reads %d)", what, (long)k, s);
    }
    rlt_free(outs[0]);
    rlt_graph_destroy(g);
}

Test(graph_pad, can_eval) { cr_expect(rlt_graph_can_eval("Pad")); }

Test(graph_pad, every_mode_type_and_form)
{
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (size_t t = 0; t < sizeof types / sizeof *types; t++)
            for (int is_const = 0; is_const < 2; is_const++) {
                check_case(13, &types[t], is_const, &cases[c], true);
                check_case(10, &types[t], is_const, &cases[c], true);
                check_case(13, &types[t], is_const, &cases[c], false);
                check_case(11, &types[t], is_const, &cases[c], false);
            }
    assert_no_leaks();
}

/* The first case written out in f32, and numpy's reflect with pads longer
 * than the dimension: np.pad([1,2,3], (5,2), 'reflect'). */
Test(graph_pad, values_by_hand)
{
    onnx_build b;
    pad_model(&b, 13, &types[0], false, &cases[0], true);
    rlt_graph *g = load_ok(&b);
    ob_free(&b);
    void *outs[1];
    rlt_diag d = {0};
    cr_assert_eq(rlt_graph_eval(g, 1, (const void *[]){x_f32}, 1, outs, &d), RLT_STATUS_OK, "%s", d.message);
    const float want[15] = {9.5f, 9.5f, 9.5f, 9.5f, 9.5f, 1, 2, 3, 9.5f, 9.5f, 4, 5, 6, 9.5f, 9.5f};
    cr_expect_arr_eq(outs[0], want, sizeof want);
    rlt_free(outs[0]);
    rlt_graph_destroy(g);

    ob_init(&b, 17);
    ob_input(&b, "x", OB_F32, 1, D(3));
    ob_init_i64(&b, "pads", 2, D(5, 2));
    ob_attr_s(&b, ob_node(&b, "Pad", "p", "x,pads", "y"), "mode", "reflect");
    ob_output(&b, "y");
    g = load_ok(&b);
    ob_free(&b);
    cr_assert_eq(rlt_graph_eval(g, 1, (const void *[]){F(1, 2, 3)}, 1, outs, &d), RLT_STATUS_OK, "%s", d.message);
    const float want_r[10] = {2, 1, 2, 3, 2, 1, 2, 3, 2, 1};
    cr_expect_arr_eq(outs[0], want_r, sizeof want_r);
    rlt_free(outs[0]);
    rlt_graph_destroy(g);

    /* rank 4, pads on the spatial dimensions only (a Conv's padding), the
     * constant_value given as [1] rather than a scalar */
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 1, 2, 2));
    ob_init_i64(&b, "pads", 8, D(0, 0, 1, 0, 0, 0, 0, 1));
    ob_init_f32(&b, "v", 1, D(1), F(-1));
    ob_node(&b, "Pad", "p", "x,pads,v", "y");
    ob_output(&b, "y");
    g = load_ok(&b);
    ob_free(&b);
    cr_assert_eq(rlt_graph_eval(g, 1, (const void *[]){F(1, 2, 3, 4)}, 1, outs, &d), RLT_STATUS_OK, "%s", d.message);
    const float want_4d[9] = {-1, -1, -1, 1, 2, -1, 3, 4, -1};
    cr_expect_arr_eq(outs[0], want_4d, sizeof want_4d);
    rlt_free(outs[0]);
    rlt_graph_destroy(g);

    /* an empty input padded with the constant; rank 0 passes through */
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(0, 2));
    ob_init_i64(&b, "pads", 4, D(1, 0, 1, 0));
    ob_node(&b, "Pad", "p", "x,pads", "y");
    ob_input(&b, "s", OB_F32, 0, NULL);
    ob_init_i64(&b, "none", 0, NULL);
    ob_node(&b, "Pad", "p0", "s,none", "z");
    ob_output(&b, "y");
    ob_output(&b, "z");
    g = load_ok(&b);
    ob_free(&b);
    void *two[2];
    cr_assert_eq(rlt_graph_eval(g, 2, (const void *[]){F(0), F(4.5f)}, 2, two, &d), RLT_STATUS_OK, "%s", d.message);
    cr_expect_arr_eq(two[0], F(0, 0, 0, 0), 4 * sizeof(float));
    cr_expect_eq(*(const float *)two[1], 4.5f);
    rlt_free(two[0]);
    rlt_free(two[1]);
    rlt_graph_destroy(g);
    assert_no_leaks();
}

Test(graph_pad, refusals)
{
    onnx_build b;
    /* input form: the pads count, a computed pads, its type, the value */
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(2, 3));
    ob_init_i64(&b, "pads", 3, D(0, 1, 0));
    ob_node(&b, "Pad", "p", "x,pads", "y");
    ob_output(&b, "y");
    expect_refused(&b, "test.onnx: node 0 'p' (Pad, opset 13): ",
                   "input 1 ('pads', the pads) has 3 values; expected 4 (2 * the rank of input 'x')");
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(2, 3));
    ob_input(&b, "pads", OB_I64, 1, D(4));
    ob_node(&b, "Pad", "p", "x,pads", "y");
    ob_output(&b, "y");
    expect_refused(&b, "node 0 'p' (Pad, opset 13)", "input 1 ('pads', the pads) is not a constant");
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(2, 3));
    ob_init_f32(&b, "pads", 1, D(4), F(0, 1, 0, 1));
    ob_node(&b, "Pad", "p", "x,pads", "y");
    ob_output(&b, "y");
    expect_refused(&b, "input 1 ('pads', the pads) is f32; expected an int64 or int32 tensor");
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(2, 3));
    ob_init_i64(&b, "pads", 4, D(0, 1, 0, 1));
    ob_init_i64(&b, "v", 1, D(3));
    ob_node(&b, "Pad", "p", "x,pads,v", "y");
    ob_output(&b, "y");
    expect_refused(&b, "input 2 ('v', the constant_value) must be one value of the input's type (f32); it holds 1 "
                       "of type i64");
    ob_init(&b, 11);
    ob_input(&b, "x", OB_F32, 2, D(2, 3));
    ob_attr_ints(&b, ob_node(&b, "Pad", "p", "x", "y"), "pads", 4, D(0, 1, 0, 1));
    ob_output(&b, "y");
    expect_refused(&b, "(Pad, opset 11)", "pads and value are inputs since opset 11");
    ob_init(&b, 12);
    ob_input(&b, "x", OB_F32, 2, D(2, 3));
    ob_node(&b, "Pad", "p", "x", "y");
    ob_output(&b, "y");
    expect_refused(&b, "input 1 (pads) is required since opset 11");

    /* attribute form */
    ob_init(&b, 10);
    ob_input(&b, "x", OB_F32, 2, D(2, 3));
    ob_attr_ints(&b, ob_node(&b, "Pad", "p", "x", "y"), "pads", 2, D(1, 1));
    ob_output(&b, "y");
    expect_refused(&b, "node 0 'p' (Pad, opset 10)",
                   "attribute pads has 2 values; expected 4 (2 * the rank of input 'x')");
    ob_init(&b, 9);
    ob_input(&b, "x", OB_F32, 2, D(2, 3));
    ob_node(&b, "Pad", "p", "x", "y");
    ob_output(&b, "y");
    expect_refused(&b, "(Pad, opset 9)", "attribute pads is required");
    ob_init(&b, 10);
    ob_input(&b, "x", OB_F32, 2, D(2, 3));
    ob_init_i64(&b, "pads", 4, D(0, 1, 0, 1));
    ob_node(&b, "Pad", "p", "x,pads", "y");
    ob_output(&b, "y");
    expect_refused(&b, "takes pads and value as attributes before opset 11, got 2 inputs");

    /* modes, crops */
    static const struct {
        const char *mode;
        int64_t pads[4];
        const char *message;
    } bad[] = {
        {"symmetric", {0, 1, 0, 1},
         "attribute mode='symmetric' is not supported; expected 'constant', 'reflect' or 'edge'"},
        {"wrap", {0, 1, 0, 1}, "'wrap' needs opset 19; rltune reads opsets 9 to 17"},
        {"constant", {0, -2, 0, -2}, "the pads of dimension 1 (-2 and -2) crop 4 elements; input 'x' has 3 there"},
        {"reflect", {0, -3, 0, 1}, "mode 'reflect' cannot pad dimension 1 of input 'x': it is empty after the crop"},
        {"edge", {1, 0, 0, 0}, "mode 'edge' cannot pad dimension 0 of input 'x': it is empty; only mode 'constant'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        for (int opset = 10; opset <= 13; opset += 3) {
            ob_init(&b, opset);
            ob_input(&b, "x", OB_F32, 2, i == 4 ? D(0, 3) : D(2, 3));
            Onnx__NodeProto *n;
            if (opset < 11) {
                n = ob_node(&b, "Pad", "p", "x", "y");
                ob_attr_ints(&b, n, "pads", 4, bad[i].pads);
            } else {
                ob_init_i64(&b, "pads", 4, bad[i].pads);
                n = ob_node(&b, "Pad", "p", "x,pads", "y");
            }
            ob_attr_s(&b, n, "mode", bad[i].mode);
            ob_output(&b, "y");
            expect_refused(&b, "node 0 'p' (Pad, opset", bad[i].message);
        }
}

/* ---- folding -------------------------------------------------------------------- */

/* Graphs built with the graph API, so that folded nodes stay in place
 * (marked removed) for the test to look at. */

/* A constant f32 tensor of that shape: `v`, or 0, 1, 2, ... when NULL. */
static int add_const(rlt_graph *g, const char *name, rlt_dtype dtype, int rank, const int64_t *dims, const void *v)
{
    int t;
    rlt_diag d = {0};
    cr_assert_eq(rlt_graph_tensor_add(g, name, dtype, &t, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_graph_tensor_set_shape(g, t, rank, dims, &d), RLT_STATUS_OK, "%s", d.message);
    int64_t n = rlt_graph_tensor_n_elems(&g->tensors[t]);
    size_t es = rlt_dtype_size(dtype);
    void *p = rlt_arena_alloc(g->arena, (size_t)n * es + 1);
    cr_assert_not_null(p);
    if (v) memcpy(p, v, (size_t)n * es);
    else if (dtype == RLT_DTYPE_FLOAT32)
        for (int64_t i = 0; i < n; i++) ((float *)p)[i] = (float)i;
    g->tensors[t].data = p;
    g->tensors[t].is_initializer = true;
    return t;
}

static int add_input(rlt_graph *g, const char *name, int rank, const int64_t *dims)
{
    int t;
    rlt_diag d = {0};
    cr_assert_eq(rlt_graph_tensor_add(g, name, RLT_DTYPE_FLOAT32, &t, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_graph_tensor_set_shape(g, t, rank, dims, &d), RLT_STATUS_OK, "%s", d.message);
    return t;
}

/* A node writing a new tensor `out`; its index. */
static int add_node(rlt_graph *g, const char *op, int n_in, const int *in, const char *out)
{
    int t, node;
    rlt_diag d = {0};
    cr_assert_eq(rlt_graph_tensor_add(g, out, RLT_DTYPE_FLOAT32, &t, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_graph_node_add(g, op, out, n_in, in, 1, &t, &node, &d), RLT_STATUS_OK, "%s", d.message);
    return node;
}

/* Sets a string attribute (the graph API adds nodes without any). */
static void set_mode(rlt_graph *g, int node, const char *mode)
{
    rlt_graph_attr *a = rlt_arena_alloc(g->arena, sizeof *a);
    cr_assert_not_null(a);
    *a = (rlt_graph_attr){.name = "mode", .kind = RLT_GRAPH_ATTR_STRING, .s = mode};
    g->nodes[node].attrs = a;
    g->nodes[node].n_attrs = 1;
}

static void infer_ok(rlt_graph *g)
{
    rlt_diag d = {0};
    cr_assert_eq(rlt_graph_infer(g, &d), RLT_STATUS_OK, "%s", d.message);
}

static const rlt_graph_tensor *out_of(const rlt_graph *g, int node) { return &g->tensors[g->nodes[node].outputs[0]]; }

/* The node is folded: marked removed, its output a constant nothing
 * produces, holding `want`. */
static void expect_folded(const rlt_graph *g, int node, const float *want, int n)
{
    const rlt_graph_tensor *t = out_of(g, node);
    cr_expect(g->nodes[node].is_removed, "%s is not folded", g->nodes[node].op_type);
    cr_assert_not_null(t->data, "%s has no values", g->nodes[node].op_type);
    cr_expect_eq(t->producer, -1);
    cr_assert_eq(rlt_graph_tensor_n_elems(t), n, "%s", g->nodes[node].op_type);
    for (int i = 0; i < n; i++)
        cr_expect_eq(((const float *)t->data)[i], want[i], "%s[%d]: %g, want %g", g->nodes[node].op_type, i,
                     ((const float *)t->data)[i], want[i]);
}

static void expect_not_folded(const rlt_graph *g, int node)
{
    cr_expect(!g->nodes[node].is_removed, "%s folded", g->nodes[node].op_type);
    cr_expect_null(out_of(g, node)->data, "%s folded", g->nodes[node].op_type);
}

Test(graph_pad, fold_any_op_the_evaluator_runs)
{
    rlt_graph *g = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_graph_create(13, &g, &d), RLT_STATUS_OK);
    int sq = add_const(g, "sq", RLT_DTYPE_FLOAT32, 2, D(2, 2), F(1, 4, 9, 16));
    int n_sqrt = add_node(g, "Sqrt", 1, (int[]){sq}, "sqrt");
    int two = add_const(g, "two", RLT_DTYPE_INT64, 0, NULL, D(2));
    int n_pow = add_node(g, "Pow", 2, (int[]){g->nodes[n_sqrt].outputs[0], two}, "pow"); /* f32 ^ i64 */
    int neg = add_const(g, "neg", RLT_DTYPE_FLOAT32, 1, D(4), F(-1, 2, -3, 4));
    int n_relu = add_node(g, "Relu", 1, (int[]){neg}, "relu");
    /* Pad edge of the Sqrt's folded output: [[1,2],[3,4]] -> [[1,1,2,2],[3,3,4,4]] */
    int pads = add_const(g, "pads", RLT_DTYPE_INT64, 1, D(4), D(0, 1, 0, 1));
    int n_pad = add_node(g, "Pad", 2, (int[]){g->nodes[n_sqrt].outputs[0], pads}, "pad");
    set_mode(g, n_pad, "edge");
    /* Conv [1,1,3,3] 1..9 by [[1,0],[0,1]] + 0.5: x[i,j] + x[i+1,j+1] + 0.5 */
    int cx = add_const(g, "cx", RLT_DTYPE_FLOAT32, 4, D(1, 1, 3, 3), F(1, 2, 3, 4, 5, 6, 7, 8, 9));
    int cw = add_const(g, "cw", RLT_DTYPE_FLOAT32, 4, D(1, 1, 2, 2), F(1, 0, 0, 1));
    int cb = add_const(g, "cb", RLT_DTYPE_FLOAT32, 1, D(1), F(0.5f));
    int n_conv = add_node(g, "Conv", 3, (int[]){cx, cw, cb}, "conv");
    int ma = add_const(g, "ma", RLT_DTYPE_FLOAT32, 2, D(2, 3), F(1, 2, 3, 4, 5, 6));
    int mb = add_const(g, "mb", RLT_DTYPE_FLOAT32, 2, D(3, 1), F(1, 10, 100));
    int n_mm = add_node(g, "MatMul", 2, (int[]){ma, mb}, "mm");
    /* the same ops on a graph input stay */
    int x = add_input(g, "x", 1, D(4));
    int n_live = add_node(g, "Relu", 1, (int[]){x}, "live");
    infer_ok(g);
    expect_folded(g, n_sqrt, F(1, 2, 3, 4), 4);
    expect_folded(g, n_pow, F(1, 4, 9, 16), 4);
    expect_folded(g, n_relu, F(0, 2, 0, 4), 4);
    expect_folded(g, n_pad, F(1, 1, 2, 2, 3, 3, 4, 4), 8);
    expect_folded(g, n_conv, F(6.5f, 8.5f, 12.5f, 14.5f), 4);
    expect_folded(g, n_mm, F(321, 654), 2);
    expect_not_folded(g, n_live);
    rlt_graph_destroy(g);
    assert_no_leaks();
}

/* BatchNormalization's scale folded into a conv weight as a rewrite writes
 * it: W * Reshape(scale / Sqrt(var + eps), [-1,1,1,1]): every node folds,
 * and the model is left with a Conv of one constant weight. */
Test(graph_pad, fold_a_weight_rewrite)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 2, 3, 3));
    float w[2 * 2 * 3 * 3];
    for (int i = 0; i < 36; i++) w[i] = (float)(i % 7) - 3.0f;
    ob_init_f32(&b, "w", 4, D(2, 2, 3, 3), w);
    ob_init_f32(&b, "scale", 1, D(2), F(2, 6));
    ob_init_f32(&b, "var", 1, D(2), F(3.75f, 8.75f));
    ob_init_f32(&b, "eps", 0, NULL, F(0.25f));
    ob_init_i64(&b, "shape", 4, D(-1, 1, 1, 1));
    ob_node(&b, "Add", "a", "var,eps", "ve");
    ob_node(&b, "Sqrt", "s", "ve", "sd");
    ob_node(&b, "Div", "dv", "scale,sd", "k");
    ob_node(&b, "Reshape", "r", "k,shape", "k4");
    ob_node(&b, "Mul", "m", "w,k4", "w2");
    ob_node(&b, "Conv", "c", "x,w2", "y");
    ob_output(&b, "y");
    rlt_graph *g = load_ok(&b);
    ob_free(&b);
    cr_assert_eq(g->n_nodes, 1, "%s", rlt_graph_print(g));
    cr_expect_str_eq(g->nodes[0].op_type, "Conv");
    const rlt_graph_tensor *wt = &g->tensors[g->nodes[0].inputs[1]];
    cr_assert_not_null(wt->data);
    /* 2 / sqrt(4) = 1, 6 / sqrt(9) = 2: output channel 1 doubled */
    for (int i = 0; i < 36; i++)
        cr_expect_eq(((const float *)wt->data)[i], w[i] * (i < 18 ? 1.0f : 2.0f), "w2[%d]", i);
    rlt_graph_destroy(g);
    assert_no_leaks();
}

/* The limits: RLT_GRAPH_FOLD_WEIGHT_MAX_ELEMS for a result at most twice
 * its constant inputs (64 times for Pad), RLT_GRAPH_FOLD_MAX_ELEMS for the
 * rest; a MatMul of 2^32 multiply-adds is left to run time. */
Test(graph_pad, fold_size_limits, .timeout = 120)
{
    rlt_graph *g = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_graph_create(13, &g, &d), RLT_STATUS_OK);
    /* two 1024x512x3x3 weights (4.7M elements each) concatenated: 9.4M */
    int wa = add_const(g, "wa", RLT_DTYPE_FLOAT32, 4, D(1024, 512, 3, 3), NULL);
    int wb = add_const(g, "wb", RLT_DTYPE_FLOAT32, 4, D(1024, 512, 3, 3), NULL);
    int64_t n_w = 1024 * 512 * 9;
    for (int64_t i = 0; i < n_w; i++) ((float *)g->tensors[wb].data)[i] = -(float)i;
    int n_cat = add_node(g, "Concat", 2, (int[]){wa, wb}, "cat");
    rlt_graph_attr *axis = rlt_arena_alloc(g->arena, sizeof *axis);
    *axis = (rlt_graph_attr){.name = "axis", .kind = RLT_GRAPH_ATTR_INT, .i = 0};
    g->nodes[n_cat].attrs = axis;
    g->nodes[n_cat].n_attrs = 1;
    /* a 512x512 1x1 kernel padded to 3x3: 9 times its elements, 2.4M */
    int k1 = add_const(g, "k1", RLT_DTYPE_FLOAT32, 4, D(512, 512, 1, 1), NULL);
    int kp = add_const(g, "kp", RLT_DTYPE_INT64, 1, D(8), D(0, 0, 1, 1, 0, 0, 1, 1));
    int n_k3 = add_node(g, "Pad", 2, (int[]){k1, kp}, "k3");
    /* 1024 values padded to 1.1M (1089 times) does not fold */
    int small = add_const(g, "small", RLT_DTYPE_FLOAT32, 4, D(1024, 1, 1, 1), NULL);
    int sp = add_const(g, "sp", RLT_DTYPE_INT64, 1, D(8), D(0, 0, 16, 16, 0, 0, 16, 16));
    int n_big_pad = add_node(g, "Pad", 2, (int[]){small, sp}, "bigpad");
    /* Expand of one value to 2^21 elements, a broadcast Mul of 3072 values
     * to 2^21: neither folds; Expand of a 2^20 constant to 2^21 (twice) does */
    int one = add_const(g, "one", RLT_DTYPE_FLOAT32, 1, D(1), F(1.5f));
    int shape = add_const(g, "shape", RLT_DTYPE_INT64, 1, D(2), D(2, (int64_t)1 << 20));
    int n_expand = add_node(g, "Expand", 2, (int[]){one, shape}, "expand");
    int col = add_const(g, "col", RLT_DTYPE_FLOAT32, 2, D(2048, 1), NULL);
    int row = add_const(g, "row", RLT_DTYPE_FLOAT32, 2, D(1, 1024), NULL);
    int n_outer = add_node(g, "Mul", 2, (int[]){col, row}, "outer");
    int big = add_const(g, "big", RLT_DTYPE_FLOAT32, 2, D(1, (int64_t)1 << 20), NULL);
    int n_expand2 = add_node(g, "Expand", 2, (int[]){big, shape}, "expand2");
    int mma = add_const(g, "mma", RLT_DTYPE_FLOAT32, 2, D(1024, 4096), NULL);
    int mmb = add_const(g, "mmb", RLT_DTYPE_FLOAT32, 2, D(4096, 1024), NULL);
    int n_slow = add_node(g, "MatMul", 2, (int[]){mma, mmb}, "slow");
    infer_ok(g);

    const rlt_graph_tensor *cat = out_of(g, n_cat);
    cr_expect(g->nodes[n_cat].is_removed);
    cr_assert_not_null(cat->data);
    cr_expect_gt(rlt_graph_tensor_n_elems(cat), RLT_GRAPH_FOLD_MAX_ELEMS);
    cr_expect_eq(rlt_graph_tensor_n_elems(cat), 2 * n_w);
    const float *cv = cat->data;
    cr_expect(cv[0] == 0.0f && cv[n_w - 1] == (float)(n_w - 1) && cv[n_w] == 0.0f && cv[n_w + 7] == -7.0f &&
              cv[2 * n_w - 1] == -(float)(n_w - 1));

    const rlt_graph_tensor *k3 = out_of(g, n_k3);
    cr_expect(g->nodes[n_k3].is_removed);
    cr_assert_not_null(k3->data);
    cr_expect_eq(rlt_graph_tensor_n_elems(k3), 512 * 512 * 9);
    bool ok = true;
    for (int64_t i = 0; i < 512 * 512; i++)
        for (int k = 0; k < 9; k++) ok &= ((const float *)k3->data)[i * 9 + k] == (k == 4 ? (float)i : 0.0f);
    cr_expect(ok, "the padded kernel holds the 1x1 one at its centre, zeros around");

    expect_not_folded(g, n_big_pad);
    expect_not_folded(g, n_expand);
    expect_not_folded(g, n_outer);
    expect_not_folded(g, n_slow);
    const rlt_graph_tensor *e2 = out_of(g, n_expand2);
    cr_expect(g->nodes[n_expand2].is_removed);
    cr_assert_not_null(e2->data);
    cr_expect(((const float *)e2->data)[5] == 5.0f && ((const float *)e2->data)[(1 << 20) + 5] == 5.0f);
    rlt_graph_destroy(g);
    assert_no_leaks();
}

/* A load that folds (by the ops' own code and by the evaluator) under
 * allocation failures at every point: a failure (OUT_OF_MEMORY, or
 * PARSE_ERROR while protobuf-c reads the file) or success, nothing left
 * behind; some failures hit the folds, which name their node. */
Test(graph_pad, allocation_failures_leak_nothing)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 2, 4, 4));
    ob_init_f32(&b, "w1", 4, D(2, 2, 1, 1), F(1, 2, 3, 4));
    ob_init_i64(&b, "kp", 8, D(0, 0, 1, 1, 0, 0, 1, 1));
    ob_node(&b, "Sqrt", "s", "w1", "ws");
    ob_node(&b, "Pad", "p", "ws,kp", "w3");
    ob_node(&b, "Conv", "c", "x,w3", "y");
    ob_init_i64(&b, "ap", 8, D(0, 0, 1, 0, 0, 0, 0, 1));
    ob_attr_s(&b, ob_node(&b, "Pad", "pa", "y,ap", "z"), "mode", "reflect");
    ob_output(&b, "z");
    size_t len;
    uint8_t *buf = ob_pack(&b, &len);
    float x[32];
    for (int i = 0; i < 32; i++) x[i] = (float)(i % 5);
    bool done = false;
    int n_in_folds = 0;
    for (long k = 1; k < 400 && !done; k++) {
        rlt_graph *g = NULL;
        rlt_diag d = {0};
        rlt_alloc_fail_after(k);
        rlt_status st = rlt_graph_load_onnx_bytes(buf, len, "oom", &g, &d);
        rlt_alloc_fail_after(0);
        if (st != RLT_STATUS_OK) {
            cr_expect(st == RLT_STATUS_OUT_OF_MEMORY || st == RLT_STATUS_PARSE_ERROR, "%s", d.message);
            cr_expect_null(g);
            n_in_folds += st == RLT_STATUS_OUT_OF_MEMORY &&
                          (strstr(d.message, "(Sqrt, ") || strstr(d.message, "(Pad, ") || strstr(d.message, "(Conv, "));
            continue;
        }
        done = true;
        cr_expect_eq(g->n_nodes, 2, "%s", rlt_graph_print(g));
        void *outs[1];
        cr_assert_eq(rlt_graph_eval(g, 1, (const void *[]){x}, 1, outs, &d), RLT_STATUS_OK, "%s", d.message);
        /* y [1,2,2,2] (the 3x3 kernel is the 1x1 one at its centre): y[0,0,0,0] =
         * sqrt(1) x[0,0,1,1] + sqrt(2) x[0,1,1,1] = 0 + sqrt(2); z [1,2,3,3] has
         * it at [0,0,1,0] (a row padded before, a column after) */
        cr_expect_eq(rlt_graph_tensor_n_elems(&g->tensors[g->outputs[0]]), 18);
        cr_expect_lt(fabsf(((const float *)outs[0])[3] - sqrtf(2.0f)), 1e-6f);
        rlt_free(outs[0]);
        rlt_graph_destroy(g);
    }
    cr_expect(done, "never loaded with enough allocations");
    cr_expect_geq(n_in_folds, 2, "only %d failures in the folds", n_in_folds);
    ob_free(&b);
    assert_no_leaks();
}
