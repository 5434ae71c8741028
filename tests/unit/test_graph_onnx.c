/*
 * test_graph_onnx.c - the graph IR and the ONNX importer (src/graph/):
 * shape inference of every supported op (models built in C with
 * tests/common/onnx_build.h, packed to protobuf bytes and loaded back),
 * folding of shape subgraphs, dead-code elimination, the text form, and
 * the error paths: unsupported ops and attributes, bad data, truncated and
 * randomly damaged files (which must never crash), allocation failures,
 * and the replay of the fuzz corpus tests/fuzz/corpus/onnx/ (files named
 * valid_* must load, the others must be refused with a message).
 *
 * RLTUNE_ONNX_CORPUS_OUT=DIR makes the corpus_seeds test write the seed
 * models into DIR (how the committed corpus was made).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../common/leaks.h"
#include "../common/onnx_build.h"
#include "graph/graph.h"

#define D(...) ((int64_t[]){__VA_ARGS__})
#define ONNX_CORPUS RLTUNE_SOURCE_DIR "/tests/fuzz/corpus/onnx"

/* "f32[1,4,8,8]" of tensor `name`, or "missing". */
static const char *shape_of(const rlt_graph *g, const char *name)
{
    static char buf[128];
    int t = rlt_graph_tensor_find(g, name);
    if (t < 0) return "missing";
    const rlt_graph_tensor *x = &g->tensors[t];
    int len = snprintf(buf, sizeof buf, "%s[", rlt_dtype_str(x->dtype));
    for (int i = 0; i < x->rank; i++)
        len += snprintf(buf + len, sizeof buf - (size_t)len, "%s%" PRId64, i ? "," : "", x->dims[i]);
    snprintf(buf + len, sizeof buf - (size_t)len, "]");
    return buf;
}

static rlt_graph *load_ok(onnx_build *b)
{
    rlt_graph *g = NULL;
    rlt_diag d = {0};
    rlt_status st = ob_load(b, &g, &d);
    cr_assert_eq(st, RLT_STATUS_OK, "load failed: %s", d.message);
    cr_assert_not_null(g);
    return g;
}

/* Loads, checks the shape of `out`, frees everything. */
static void expect_shape(onnx_build *b, const char *out, const char *want)
{
    rlt_graph *g = load_ok(b);
    cr_expect_str_eq(shape_of(g, out), want, "%s", rlt_graph_print(g));
    rlt_graph_destroy(g);
    ob_free(b);
}

/* Loading fails with `status` and a message holding each of the
 * NULL-terminated substrings. */
static void expect_fail_v(onnx_build *b, rlt_status status, const char *const *subs)
{
    rlt_graph *g = NULL;
    rlt_diag d = {0};
    rlt_status st = ob_load(b, &g, &d);
    cr_assert_eq(st, status, "got %s, want %s: %s", rlt_status_str(st), rlt_status_str(status), d.message);
    cr_assert_null(g);
    cr_assert_eq(d.status, status);
    for (int i = 0; subs[i]; i++) cr_expect(strstr(d.message, subs[i]), "'%s' not in: %s", subs[i], d.message);
    ob_free(b);
}
#define expect_fail(b, status, ...) expect_fail_v((b), (status), (const char *const[]){__VA_ARGS__, NULL})

/* One op on input x (f32 of the given shape) -> y. */
static Onnx__NodeProto *unary_model(onnx_build *b, int opset, const char *op, int rank, const int64_t *dims)
{
    ob_init(b, opset);
    ob_input(b, "x", OB_F32, rank, dims);
    ob_output(b, "y");
    return ob_node(b, op, "n0", "x", "y");
}

/* ---- convolution and pooling -------------------------------------------------- */

Test(graph_onnx, conv_pads_strides_dilations_groups)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 3, 8, 8));
    ob_init_f32(&b, "w", 4, D(4, 3, 3, 3), NULL);
    ob_init_f32(&b, "bias", 1, D(4), NULL);
    Onnx__NodeProto *n = ob_node(&b, "Conv", "conv1", "x,w,bias", "y");
    ob_attr_ints(&b, n, "pads", 4, D(1, 1, 1, 1));
    ob_output(&b, "y");
    expect_shape(&b, "y", "f32[1,4,8,8]");

    /* stride 2, dilation 2, no pads: (8 - 5) / 2 + 1 = 2 */
    ob_init(&b, 11);
    ob_input(&b, "x", OB_F32, 4, D(2, 3, 8, 9));
    ob_init_f32(&b, "w", 4, D(6, 3, 3, 3), NULL);
    n = ob_node(&b, "Conv", "", "x,w", "y");
    ob_attr_ints(&b, n, "strides", 2, D(2, 2));
    ob_attr_ints(&b, n, "dilations", 2, D(2, 2));
    ob_output(&b, "y");
    expect_shape(&b, "y", "f32[2,6,2,3]");

    /* depthwise: group = channels */
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 8, 10, 10));
    ob_init_f32(&b, "w", 4, D(8, 1, 3, 3), NULL);
    n = ob_node(&b, "Conv", "dw", "x,w", "y");
    ob_attr_i(&b, n, "group", 8);
    ob_attr_ints(&b, n, "kernel_shape", 2, D(3, 3));
    ob_attr_ints(&b, n, "pads", 4, D(1, 1, 1, 1));
    ob_attr_ints(&b, n, "strides", 2, D(2, 2));
    ob_output(&b, "y");
    expect_shape(&b, "y", "f32[1,8,5,5]");

    /* 1-D convolution with asymmetric pads */
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 3, D(1, 2, 10));
    ob_init_f32(&b, "w", 3, D(4, 2, 3), NULL);
    n = ob_node(&b, "Conv", "c1d", "x,w", "y");
    ob_attr_ints(&b, n, "pads", 2, D(2, 0));
    ob_output(&b, "y");
    expect_shape(&b, "y", "f32[1,4,10]");
}

Test(graph_onnx, conv_auto_pad_becomes_explicit_pads)
{
    const char *modes[] = {"SAME_UPPER", "SAME_LOWER", "VALID"};
    const char *want[] = {"f32[1,2,4,4]", "f32[1,2,4,4]", "f32[1,2,3,3]"};
    const int64_t pads[3][4] = {{0, 0, 1, 1}, {1, 1, 0, 0}, {0, 0, 0, 0}};
    for (int m = 0; m < 3; m++) {
        onnx_build b;
        ob_init(&b, 13);
        ob_input(&b, "x", OB_F32, 4, D(1, 1, 7, 7));
        ob_init_f32(&b, "w", 4, D(2, 1, 2, 2), NULL);
        Onnx__NodeProto *n = ob_node(&b, "Conv", "c", "x,w", "y");
        ob_attr_s(&b, n, "auto_pad", modes[m]);
        ob_attr_ints(&b, n, "strides", 2, D(2, 2));
        ob_output(&b, "y");
        rlt_graph *g = load_ok(&b);
        cr_expect_str_eq(shape_of(g, "y"), want[m], "%s", modes[m]);
        const rlt_graph_attr *p = rlt_graph_node_attr(&g->nodes[0], "pads");
        cr_assert_not_null(p);
        cr_assert_eq(p->n_values, 4);
        for (int i = 0; i < 4; i++) cr_expect_eq(p->ints[i], pads[m][i], "%s pads[%d]", modes[m], i);
        cr_expect_str_eq(rlt_graph_node_attr(&g->nodes[0], "auto_pad")->s, "NOTSET");
        rlt_graph_destroy(g);
        ob_free(&b);
    }
}

Test(graph_onnx, conv_errors)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 3, 8, 8));
    ob_init_f32(&b, "w", 4, D(4, 2, 3, 3), NULL);
    ob_node(&b, "Conv", "conv1", "x,w", "y");
    ob_output(&b, "y");
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "node 0 'conv1' (Conv, opset 13)", "input channels");

    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 3, 2, 2));
    ob_init_f32(&b, "w", 4, D(4, 3, 3, 3), NULL);
    ob_node(&b, "Conv", "conv1", "x,w", "y");
    ob_output(&b, "y");
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "larger than the padded input");

    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 3, 8, 8));
    ob_init_f32(&b, "w", 4, D(4, 3, 3, 3), NULL);
    Onnx__NodeProto *n = ob_node(&b, "Conv", "conv1", "x,w", "y");
    ob_attr_ints(&b, n, "strides", 1, D(0));
    ob_output(&b, "y");
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "strides has 1 values; expected 2");
}

Test(graph_onnx, pools)
{
    onnx_build b;
    /* floor: (6 - 3) / 2 + 1 = 2; ceil: 3 */
    for (int ceil_mode = 0; ceil_mode <= 1; ceil_mode++) {
        Onnx__NodeProto *n = unary_model(&b, 13, "MaxPool", 4, D(1, 2, 6, 6));
        ob_attr_ints(&b, n, "kernel_shape", 2, D(3, 3));
        ob_attr_ints(&b, n, "strides", 2, D(2, 2));
        ob_attr_i(&b, n, "ceil_mode", ceil_mode);
        expect_shape(&b, "y", ceil_mode ? "f32[1,2,3,3]" : "f32[1,2,2,2]");
    }
    /* ceil mode drops a window that would start in the end padding: in 5,
     * k 2, s 2, pads 1+1: ceil(5/2)+1 = 4 -> 3 */
    Onnx__NodeProto *n = unary_model(&b, 13, "MaxPool", 4, D(1, 1, 5, 5));
    ob_attr_ints(&b, n, "kernel_shape", 2, D(2, 2));
    ob_attr_ints(&b, n, "strides", 2, D(2, 2));
    ob_attr_ints(&b, n, "pads", 4, D(1, 1, 1, 1));
    ob_attr_i(&b, n, "ceil_mode", 1);
    expect_shape(&b, "y", "f32[1,1,3,3]");

    /* ResNet's stem pool */
    n = unary_model(&b, 13, "MaxPool", 4, D(1, 64, 112, 112));
    ob_attr_ints(&b, n, "kernel_shape", 2, D(3, 3));
    ob_attr_ints(&b, n, "strides", 2, D(2, 2));
    ob_attr_ints(&b, n, "pads", 4, D(1, 1, 1, 1));
    expect_shape(&b, "y", "f32[1,64,56,56]");

    n = unary_model(&b, 13, "AveragePool", 4, D(1, 3, 7, 7));
    ob_attr_ints(&b, n, "kernel_shape", 2, D(2, 2));
    ob_attr_s(&b, n, "auto_pad", "SAME_UPPER");
    expect_shape(&b, "y", "f32[1,3,7,7]");

    n = unary_model(&b, 9, "AveragePool", 4, D(1, 3, 7, 7));
    ob_attr_ints(&b, n, "kernel_shape", 2, D(3, 3));
    ob_attr_ints(&b, n, "strides", 2, D(2, 2));
    expect_shape(&b, "y", "f32[1,3,3,3]");

    unary_model(&b, 13, "GlobalAveragePool", 4, D(2, 16, 7, 5));
    expect_shape(&b, "y", "f32[2,16,1,1]");

    unary_model(&b, 13, "MaxPool", 4, D(1, 3, 7, 7));
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "kernel_shape is required");
}

/* ---- elementwise ------------------------------------------------------------- */

Test(graph_onnx, unary_ops)
{
    const char *ops[] = {"Relu", "Sigmoid", "Tanh", "Erf", "Sqrt", "LeakyRelu", "Gelu", "Identity", "Softmax"};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        onnx_build b;
        Onnx__NodeProto *n = unary_model(&b, 13, ops[i], 3, D(2, 3, 4));
        if (!strcmp(ops[i], "LeakyRelu")) ob_attr_f(&b, n, "alpha", 0.1f);
        if (!strcmp(ops[i], "Gelu")) ob_attr_s(&b, n, "approximate", "tanh");
        expect_shape(&b, "y", "f32[2,3,4]");
    }
    /* Gelu as exporters emit it, in Microsoft's domain */
    onnx_build b;
    Onnx__NodeProto *n = unary_model(&b, 13, "Gelu", 2, D(4, 8));
    n->domain = "com.microsoft";
    expect_shape(&b, "y", "f32[4,8]");
}

Test(graph_onnx, clip_attribute_and_input_forms)
{
    onnx_build b;
    Onnx__NodeProto *n = unary_model(&b, 9, "Clip", 2, D(2, 3));
    ob_attr_f(&b, n, "min", 0.0f);
    ob_attr_f(&b, n, "max", 6.0f);
    expect_shape(&b, "y", "f32[2,3]");

    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(2, 3));
    ob_init_f32(&b, "lo", 0, NULL, (float[]){0.0f});
    ob_init_f32(&b, "hi", 0, NULL, (float[]){6.0f});
    ob_node(&b, "Clip", "clip", "x,lo,hi", "y");
    ob_output(&b, "y");
    expect_shape(&b, "y", "f32[2,3]");

    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(2, 3));
    ob_init_f32(&b, "hi", 0, NULL, (float[]){6.0f});
    ob_node(&b, "Clip", "clip", "x,,hi", "y");
    ob_output(&b, "y");
    expect_shape(&b, "y", "f32[2,3]");

    n = unary_model(&b, 13, "Clip", 2, D(2, 3));
    ob_attr_f(&b, n, "min", 0.0f);
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "node 0 'n0' (Clip, opset 13)", "inputs since opset 11");
}

static void binary_case(const char *op, int ra, const int64_t *da, int rb, const int64_t *db, const char *want)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "a", OB_F32, ra, da);
    ob_input(&b, "b", OB_F32, rb, db);
    ob_node(&b, op, "bin", "a,b", "y");
    ob_output(&b, "y");
    if (want) {
        expect_shape(&b, "y", want);
    } else {
        expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "node 0 'bin'", "do not broadcast");
    }
}

Test(graph_onnx, binary_broadcasting)
{
    binary_case("Add", 3, D(2, 3, 4), 1, D(4), "f32[2,3,4]");
    binary_case("Mul", 3, D(2, 1, 4), 2, D(3, 1), "f32[2,3,4]");
    binary_case("Sub", 0, NULL, 2, D(5, 6), "f32[5,6]");
    binary_case("Div", 4, D(1, 8, 1, 1), 4, D(2, 8, 7, 7), "f32[2,8,7,7]");
    binary_case("Pow", 2, D(3, 4), 0, NULL, "f32[3,4]");
    binary_case("Add", 2, D(3, 4), 1, D(3), NULL);
    binary_case("Mul", 3, D(2, 3, 4), 3, D(2, 4, 4), NULL);

    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "a", OB_F32, 1, D(3));
    ob_input(&b, "b", OB_I64, 1, D(3));
    ob_node(&b, "Add", "mixed", "a,b", "y");
    ob_output(&b, "y");
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "different types");
}

Test(graph_onnx, where_and_expand)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "c", OB_BOOL, 2, D(1, 4));
    ob_input(&b, "x", OB_F32, 2, D(3, 1));
    ob_input(&b, "z", OB_F32, 0, NULL);
    ob_node(&b, "Where", "w", "c,x,z", "y");
    ob_output(&b, "y");
    expect_shape(&b, "y", "f32[3,4]");

    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(3, 1));
    ob_init_i64(&b, "shape", 3, D(2, 1, 6));
    ob_node(&b, "Expand", "e", "x,shape", "y");
    ob_output(&b, "y");
    expect_shape(&b, "y", "f32[2,3,6]");
}

/* ---- normalisation, dense, reductions ----------------------------------------- */

Test(graph_onnx, batchnorm_gemm_matmul)
{
    onnx_build b;
    ob_init(&b, 9);
    ob_input(&b, "x", OB_F32, 4, D(1, 4, 5, 5));
    const char *p[] = {"s", "bb", "m", "v"};
    for (int i = 0; i < 4; i++) ob_init_f32(&b, p[i], 1, D(4), NULL);
    Onnx__NodeProto *n = ob_node(&b, "BatchNormalization", "bn", "x,s,bb,m,v", "y");
    ob_attr_f(&b, n, "epsilon", 1e-5f);
    ob_output(&b, "y");
    expect_shape(&b, "y", "f32[1,4,5,5]");

    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(2, 512));
    ob_init_f32(&b, "w", 2, D(10, 512), NULL);
    ob_init_f32(&b, "c", 1, D(10), NULL);
    n = ob_node(&b, "Gemm", "fc", "x,w,c", "y");
    ob_attr_i(&b, n, "transB", 1);
    ob_attr_f(&b, n, "alpha", 1.0f);
    ob_output(&b, "y");
    expect_shape(&b, "y", "f32[2,10]");

    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(2, 512));
    ob_init_f32(&b, "w", 2, D(10, 512), NULL);
    ob_node(&b, "Gemm", "fc", "x,w", "y");
    ob_output(&b, "y");
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "K=512", "K=10");

    ob_init(&b, 13);
    ob_input(&b, "a", OB_F32, 4, D(2, 1, 128, 64));
    ob_input(&b, "b", OB_F32, 3, D(12, 64, 32));
    ob_node(&b, "MatMul", "mm", "a,b", "y");
    ob_output(&b, "y");
    expect_shape(&b, "y", "f32[2,12,128,32]");

    ob_init(&b, 13);
    ob_input(&b, "a", OB_F32, 1, D(64));
    ob_input(&b, "b", OB_F32, 2, D(64, 32));
    ob_node(&b, "MatMul", "mv", "a,b", "y");
    ob_output(&b, "y");
    expect_shape(&b, "y", "f32[32]");

    ob_init(&b, 13);
    ob_input(&b, "a", OB_F32, 3, D(4, 8, 64));
    ob_input(&b, "b", OB_F32, 1, D(64));
    ob_node(&b, "MatMul", "mv", "a,b", "y");
    ob_output(&b, "y");
    expect_shape(&b, "y", "f32[4,8]");
}

Test(graph_onnx, layernorm_softmax_reducemean_dropout)
{
    onnx_build b;
    ob_init(&b, 17);
    ob_input(&b, "x", OB_F32, 3, D(1, 128, 768));
    ob_init_f32(&b, "g", 1, D(768), NULL);
    ob_init_f32(&b, "bb", 1, D(768), NULL);
    Onnx__NodeProto *n = ob_node(&b, "LayerNormalization", "ln", "x,g,bb", "y,mean");
    ob_attr_i(&b, n, "axis", -1);
    ob_attr_f(&b, n, "epsilon", 1e-12f);
    ob_output(&b, "y");
    ob_output(&b, "mean");
    rlt_graph *g = load_ok(&b);
    cr_expect_str_eq(shape_of(g, "y"), "f32[1,128,768]");
    cr_expect_str_eq(shape_of(g, "mean"), "f32[1,128,1]");
    rlt_graph_destroy(g);
    ob_free(&b);

    unary_model(&b, 13, "LayerNormalization", 2, D(4, 8));
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "LayerNormalization needs opset 17", "opset 13");

    n = unary_model(&b, 11, "Softmax", 3, D(2, 3, 4));
    ob_attr_i(&b, n, "axis", 3);
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "axis 3 is out of range for rank 3");

    n = unary_model(&b, 13, "ReduceMean", 4, D(2, 3, 4, 5));
    ob_attr_ints(&b, n, "axes", 2, D(2, -1));
    expect_shape(&b, "y", "f32[2,3,1,1]");
    n = unary_model(&b, 13, "ReduceMean", 4, D(2, 3, 4, 5));
    ob_attr_ints(&b, n, "axes", 1, D(1));
    ob_attr_i(&b, n, "keepdims", 0);
    expect_shape(&b, "y", "f32[2,4,5]");

    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(3, 4));
    ob_node(&b, "Dropout", "drop", "x", "y,mask");
    ob_output(&b, "y");
    ob_output(&b, "mask");
    g = load_ok(&b);
    cr_expect_str_eq(shape_of(g, "y"), "f32[3,4]");
    cr_expect_str_eq(shape_of(g, "mask"), "bool[3,4]");
    rlt_graph_destroy(g);
    ob_free(&b);

    n = unary_model(&b, 10, "Dropout", 2, D(3, 4));
    ob_attr_f(&b, n, "ratio", 0.1f);
    expect_shape(&b, "y", "f32[3,4]");

    /* Before opset 10 the mask has the input's type (Dropout-7). */
    ob_init(&b, 9);
    ob_input(&b, "x", OB_F32, 2, D(3, 4));
    ob_node(&b, "Dropout", "drop", "x", "y,mask");
    ob_output(&b, "y");
    ob_output(&b, "mask");
    expect_shape(&b, "mask", "f32[3,4]");
    ob_init(&b, 10);
    ob_input(&b, "x", OB_F32, 2, D(3, 4));
    ob_node(&b, "Dropout", "drop", "x", "y,mask");
    ob_output(&b, "y");
    ob_output(&b, "mask");
    expect_shape(&b, "mask", "bool[3,4]");
}

/* ---- shape ops ---------------------------------------------------------------- */

/* x (f32) -> op(x, the int64 constant `vals`) -> y */
static void with_const_input(onnx_build *b, int opset, const char *op, int rank, const int64_t *dims, int n,
                             const int64_t *vals)
{
    ob_init(b, opset);
    ob_input(b, "x", OB_F32, rank, dims);
    ob_init_i64(b, "k", n, vals);
    ob_node(b, op, "n0", "x,k", "y");
    ob_output(b, "y");
}

Test(graph_onnx, flatten_reshape_transpose)
{
    onnx_build b;
    Onnx__NodeProto *n = unary_model(&b, 13, "Flatten", 4, D(2, 3, 4, 5));
    ob_attr_i(&b, n, "axis", 2);
    expect_shape(&b, "y", "f32[6,20]");
    unary_model(&b, 13, "Flatten", 4, D(2, 3, 4, 5));
    expect_shape(&b, "y", "f32[2,60]");

    with_const_input(&b, 13, "Reshape", 4, D(2, 3, 4, 5), 3, D(0, -1, 5));
    expect_shape(&b, "y", "f32[2,12,5]");
    with_const_input(&b, 13, "Reshape", 2, D(6, 4), 2, D(-1, 3));
    expect_shape(&b, "y", "f32[8,3]");
    with_const_input(&b, 13, "Reshape", 2, D(6, 4), 2, D(5, -1));
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "cannot infer the -1");
    with_const_input(&b, 13, "Reshape", 2, D(6, 4), 2, D(-1, -1));
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "more than one -1");
    with_const_input(&b, 13, "Reshape", 2, D(6, 4), 2, D(5, 5));
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "holds 25 elements");

    /* a shape that is not a constant */
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(6, 4));
    ob_input(&b, "s", OB_I64, 1, D(2));
    ob_node(&b, "Reshape", "r", "x,s", "y");
    ob_output(&b, "y");
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "node 0 'r' (Reshape, opset 13)", "not a constant");

    n = unary_model(&b, 13, "Transpose", 4, D(1, 2, 3, 4));
    ob_attr_ints(&b, n, "perm", 4, D(0, 2, 3, 1));
    expect_shape(&b, "y", "f32[1,3,4,2]");
    unary_model(&b, 13, "Transpose", 3, D(2, 3, 4));
    expect_shape(&b, "y", "f32[4,3,2]");
    n = unary_model(&b, 13, "Transpose", 3, D(2, 3, 4));
    ob_attr_ints(&b, n, "perm", 3, D(0, 0, 1));
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "not a permutation");
}

Test(graph_onnx, concat_and_split)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "a", OB_F32, 4, D(1, 3, 4, 4));
    ob_input(&b, "b", OB_F32, 4, D(1, 5, 4, 4));
    Onnx__NodeProto *n = ob_node(&b, "Concat", "cat", "a,b", "y");
    ob_attr_i(&b, n, "axis", 1);
    ob_output(&b, "y");
    expect_shape(&b, "y", "f32[1,8,4,4]");

    ob_init(&b, 13);
    ob_input(&b, "a", OB_F32, 2, D(1, 3));
    ob_input(&b, "b", OB_F32, 2, D(2, 4));
    n = ob_node(&b, "Concat", "cat", "a,b", "y");
    ob_attr_i(&b, n, "axis", 0);
    ob_output(&b, "y");
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "input 1 ('b') has 4 in dimension 1");

    /* Split: sizes as an attribute (opset 11), as an input (13), equal */
    ob_init(&b, 11);
    ob_input(&b, "x", OB_F32, 2, D(4, 10));
    n = ob_node(&b, "Split", "sp", "x", "p,q");
    ob_attr_i(&b, n, "axis", 1);
    ob_attr_ints(&b, n, "split", 2, D(3, 7));
    ob_output(&b, "p");
    ob_output(&b, "q");
    rlt_graph *g = load_ok(&b);
    cr_expect_str_eq(shape_of(g, "p"), "f32[4,3]");
    cr_expect_str_eq(shape_of(g, "q"), "f32[4,7]");
    rlt_graph_destroy(g);
    ob_free(&b);

    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(4, 10));
    ob_init_i64(&b, "sizes", 3, D(2, 2, 6));
    n = ob_node(&b, "Split", "sp", "x,sizes", "p,q,r");
    ob_attr_i(&b, n, "axis", -1);
    ob_output(&b, "r");
    expect_shape(&b, "r", "f32[4,6]");

    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(6, 10));
    ob_node(&b, "Split", "sp", "x", "p,q,r");
    ob_output(&b, "q");
    expect_shape(&b, "q", "f32[2,10]");

    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(4, 10));
    ob_init_i64(&b, "sizes", 2, D(2, 3));
    ob_node(&b, "Split", "sp", "x,sizes", "p,q");
    ob_output(&b, "q");
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "add up to 5");
}

Test(graph_onnx, slice_forms_and_clamping)
{
    onnx_build b;
    /* opset 9: attributes */
    Onnx__NodeProto *n = unary_model(&b, 9, "Slice", 3, D(4, 10, 6));
    ob_attr_ints(&b, n, "starts", 2, D(1, 2));
    ob_attr_ints(&b, n, "ends", 2, D(1000, -1));
    ob_attr_ints(&b, n, "axes", 2, D(1, 2));
    expect_shape(&b, "y", "f32[4,9,3]");

    /* opset 13: inputs, a negative step, clamped ends */
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(5, 10));
    ob_init_i64(&b, "st", 2, D(-1, 0));
    ob_init_i64(&b, "en", 2, D(INT64_MIN, 10));
    ob_init_i64(&b, "ax", 2, D(0, 1));
    ob_init_i64(&b, "sp", 2, D(-2, 3));
    ob_node(&b, "Slice", "sl", "x,st,en,ax,sp", "y");
    ob_output(&b, "y");
    expect_shape(&b, "y", "f32[3,4]");

    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 1, D(10));
    ob_init_i64(&b, "st", 1, D(8));
    ob_init_i64(&b, "en", 1, D(2));
    ob_node(&b, "Slice", "sl", "x,st,en", "y");
    ob_output(&b, "y");
    expect_shape(&b, "y", "f32[0]");

    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 1, D(10));
    ob_init_i64(&b, "st", 1, D(0));
    ob_init_i64(&b, "en", 1, D(4));
    ob_init_i64(&b, "ax", 1, D(0));
    ob_init_i64(&b, "sp", 1, D(0));
    ob_node(&b, "Slice", "sl", "x,st,en,ax,sp", "y");
    ob_output(&b, "y");
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "steps[0] is 0");
}

Test(graph_onnx, gather_squeeze_unsqueeze)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(1000, 64));
    ob_input(&b, "ids", OB_I64, 2, D(2, 7));
    ob_node(&b, "Gather", "emb", "x,ids", "y");
    ob_output(&b, "y");
    expect_shape(&b, "y", "f32[2,7,64]");

    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 3, D(2, 3, 4));
    ob_initializer(&b, ob_tensor(&b, "i", OB_I64, 0, NULL, (int64_t[]){-1}));
    Onnx__NodeProto *n = ob_node(&b, "Gather", "g", "x,i", "y");
    ob_attr_i(&b, n, "axis", 1);
    ob_output(&b, "y");
    expect_shape(&b, "y", "f32[2,4]");

    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 3, D(2, 3, 4));
    ob_init_i64(&b, "i", 1, D(3));
    n = ob_node(&b, "Gather", "g", "x,i", "y");
    ob_attr_i(&b, n, "axis", 1);
    ob_output(&b, "y");
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "index 3 is out of range");

    n = unary_model(&b, 11, "Squeeze", 4, D(1, 3, 1, 5));
    ob_attr_ints(&b, n, "axes", 1, D(2));
    expect_shape(&b, "y", "f32[1,3,5]");
    unary_model(&b, 11, "Squeeze", 4, D(1, 3, 1, 5));
    expect_shape(&b, "y", "f32[3,5]");
    with_const_input(&b, 13, "Squeeze", 4, D(1, 3, 1, 5), 2, D(0, -2));
    expect_shape(&b, "y", "f32[3,5]");
    with_const_input(&b, 13, "Squeeze", 2, D(2, 3), 1, D(0));
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "size is 2, not 1");

    n = unary_model(&b, 11, "Unsqueeze", 2, D(3, 4));
    ob_attr_ints(&b, n, "axes", 2, D(0, 3));
    expect_shape(&b, "y", "f32[1,3,4,1]");
    with_const_input(&b, 13, "Unsqueeze", 2, D(3, 4), 1, D(-1));
    expect_shape(&b, "y", "f32[3,4,1]");
    /* the attribute form at opset 13 is refused */
    n = unary_model(&b, 13, "Unsqueeze", 2, D(3, 4));
    ob_attr_ints(&b, n, "axes", 1, D(0));
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "node 0 'n0' (Unsqueeze, opset 13)", "axes is an input since opset 13");
}

Test(graph_onnx, cast_constant_constantofshape_shape)
{
    onnx_build b;
    Onnx__NodeProto *n = unary_model(&b, 13, "Cast", 2, D(2, 3));
    ob_attr_i(&b, n, "to", OB_I64);
    expect_shape(&b, "y", "i64[2,3]");
    n = unary_model(&b, 13, "Cast", 2, D(2, 3));
    ob_attr_i(&b, n, "to", OB_F64);
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "cast to ONNX data type 11 (DOUBLE) is not supported");
    n = unary_model(&b, 17, "Cast", 2, D(2, 3));
    ob_attr_i(&b, n, "to", 16);
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "cast to ONNX data type 16 (BFLOAT16) is not supported");

    ob_init(&b, 13);
    n = ob_node(&b, "Constant", "c", "", "y");
    ob_attr_t(&b, n, "value", ob_tensor(&b, "", OB_F32, 2, D(2, 2), NULL));
    ob_output(&b, "y");
    expect_shape(&b, "y", "f32[2,2]");

    ob_init(&b, 13);
    n = ob_node(&b, "Constant", "c", "", "y");
    ob_attr_ints(&b, n, "value_ints", 3, D(1, 2, 3));
    ob_output(&b, "y");
    expect_shape(&b, "y", "i64[3]");

    ob_init(&b, 13);
    ob_init_i64(&b, "s", 3, D(2, 1, 4));
    n = ob_node(&b, "ConstantOfShape", "cs", "s", "y");
    ob_attr_t(&b, n, "value", ob_tensor(&b, "", OB_I64, 1, D(1), (int64_t[]){7}));
    ob_output(&b, "y");
    rlt_graph *g = load_ok(&b);
    cr_expect_str_eq(shape_of(g, "y"), "i64[2,1,4]");
    const rlt_graph_tensor *y = &g->tensors[rlt_graph_tensor_find(g, "y")];
    cr_assert_not_null(y->data);
    for (int i = 0; i < 8; i++) cr_expect_eq(((const int64_t *)y->data)[i], 7);
    rlt_graph_destroy(g);
    ob_free(&b);

    unary_model(&b, 13, "Shape", 3, D(2, 3, 4));
    expect_shape(&b, "y", "i64[3]");
    n = unary_model(&b, 15, "Shape", 3, D(2, 3, 4));
    ob_attr_i(&b, n, "start", -2);
    g = load_ok(&b);
    y = &g->tensors[rlt_graph_tensor_find(g, "y")];
    cr_expect_str_eq(shape_of(g, "y"), "i64[2]");
    cr_expect_eq(((const int64_t *)y->data)[0], 3);
    cr_expect_eq(((const int64_t *)y->data)[1], 4);
    rlt_graph_destroy(g);
    ob_free(&b);
}

/* The classic exporter pattern: x.view(x.size(0), -1), as Shape -> Gather ->
 * Unsqueeze -> Concat -> Reshape; it folds to a Reshape by a constant. */
Test(graph_onnx, shape_subgraph_folds_to_a_constant)
{
    for (int opset = 11; opset <= 13; opset += 2) {
        onnx_build b;
        ob_init(&b, opset);
        ob_input(&b, "x", OB_F32, 4, D(2, 3, 4, 5));
        ob_node(&b, "Shape", "shape", "x", "s");
        ob_initializer(&b, ob_tensor(&b, "zero", OB_I64, 0, NULL, (int64_t[]){0}));
        ob_node(&b, "Gather", "gather", "s,zero", "n");
        Onnx__NodeProto *u;
        if (opset >= 13) {
            ob_init_i64(&b, "ax0", 1, D(0));
            u = ob_node(&b, "Unsqueeze", "unsq", "n,ax0", "n1");
        } else {
            u = ob_node(&b, "Unsqueeze", "unsq", "n", "n1");
            ob_attr_ints(&b, u, "axes", 1, D(0));
        }
        ob_init_i64(&b, "minus1", 1, D(-1));
        Onnx__NodeProto *cat = ob_node(&b, "Concat", "concat", "n1,minus1", "target");
        ob_attr_i(&b, cat, "axis", 0);
        Onnx__NodeProto *cast = ob_node(&b, "Cast", "cast", "target", "target64");
        ob_attr_i(&b, cast, "to", OB_I64);
        ob_node(&b, "Reshape", "reshape", "x,target64", "y");
        ob_output(&b, "y");
        rlt_graph *g = load_ok(&b);
        cr_expect_str_eq(shape_of(g, "y"), "f32[2,60]");
        cr_assert_eq(g->n_nodes, 1, "%s", rlt_graph_print(g));
        cr_expect_str_eq(g->nodes[0].op_type, "Reshape");
        const rlt_graph_tensor *t = &g->tensors[g->nodes[0].inputs[1]];
        cr_assert_not_null(t->data);
        cr_expect_eq(((const int64_t *)t->data)[0], 2);
        cr_expect_eq(((const int64_t *)t->data)[1], -1);
        /* the folded tensors are gone */
        cr_expect_lt(rlt_graph_tensor_find(g, "s"), 0);
        cr_expect_lt(rlt_graph_tensor_find(g, "zero"), 0);
        rlt_graph_destroy(g);
        ob_free(&b);
    }
}

Test(graph_onnx, arithmetic_on_constants_folds)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 3, D(2, 3, 4));
    ob_node(&b, "Shape", "shape", "x", "s");
    ob_init_i64(&b, "two", 1, D(2));
    ob_node(&b, "Div", "half", "s,two", "h");          /* {1, 1, 2} */
    ob_node(&b, "Mul", "back", "h,two", "m");          /* {2, 2, 4} */
    ob_init_i64(&b, "one", 1, D(1));
    ob_node(&b, "Sub", "less", "m,one", "l");          /* {1, 1, 3} */
    ob_node(&b, "Add", "more", "l,one", "target");     /* {2, 2, 4} */
    ob_node(&b, "ConstantOfShape", "zeros", "target", "z");
    ob_output(&b, "z");
    rlt_graph *g = load_ok(&b);
    cr_expect_str_eq(shape_of(g, "z"), "f32[2,2,4]");
    cr_expect_eq(g->n_nodes, 0, "%s", rlt_graph_print(g));
    rlt_graph_destroy(g);
    ob_free(&b);
}

/* ---- dead code, printing ------------------------------------------------------ */

Test(graph_onnx, dead_code_is_removed)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(2, 3));
    ob_node(&b, "Relu", "live", "x", "y");
    ob_node(&b, "Sigmoid", "dead1", "x", "d1");
    ob_node(&b, "Tanh", "dead2", "d1", "d2");
    ob_init_f32(&b, "unused_weight", 1, D(3), NULL);
    ob_output(&b, "y");
    rlt_graph *g = load_ok(&b);
    cr_expect_eq(g->n_nodes, 1);
    cr_expect_str_eq(g->nodes[0].name, "live");
    cr_expect_lt(rlt_graph_tensor_find(g, "d1"), 0);
    cr_expect_lt(rlt_graph_tensor_find(g, "unused_weight"), 0);
    cr_expect_eq(g->n_tensors, 2);
    cr_expect_eq(rlt_graph_dce(g), 0);
    rlt_graph_destroy(g);
    ob_free(&b);
}

Test(graph_onnx, unsorted_nodes_are_sorted_and_printed)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 3, 8, 8));
    ob_init_f32(&b, "w", 4, D(4, 3, 3, 3), NULL);
    ob_node(&b, "Relu", "act", "c", "y");
    Onnx__NodeProto *n = ob_node(&b, "Conv", "conv1", "x,w", "c");
    ob_attr_ints(&b, n, "pads", 4, D(1, 1, 1, 1));
    ob_output(&b, "y");
    rlt_graph *g = load_ok(&b);
    char *text = rlt_graph_print(g);
    cr_assert_not_null(text);
    const char *want = "graph opset 13: 1 input, 1 output, 2 nodes, 1 constant\n"
                       "input x f32[1,3,8,8]\n"
                       "const w f32[4,3,3,3]\n"
                       "node conv1 Conv(x, w) -> c f32[1,4,8,8] pads=[1,1,1,1]\n"
                       "node act Relu(c) -> y f32[1,4,8,8]\n"
                       "output y f32[1,4,8,8]\n";
    cr_expect_str_eq(text, want);
    rlt_free(text);
    rlt_graph_destroy(g);
    ob_free(&b);

    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 1, D(3));
    ob_node(&b, "Relu", "a", "x,q", "p");
    ob_node(&b, "Add", "b", "p,x", "q");
    ob_output(&b, "q");
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "cycle");
}

/* ---- refusals ----------------------------------------------------------------- */

Test(graph_onnx, unsupported_op_names_node_op_and_opset)
{
    onnx_build b;
    ob_init(&b, 12);
    ob_input(&b, "x", OB_F32, 2, D(2, 3));
    ob_node(&b, "Relu", "r", "x", "h");
    ob_node(&b, "NonMaxSuppression", "nms", "h", "y");
    ob_output(&b, "y");
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "node 1 'nms' (NonMaxSuppression, opset 12)",
                "op NonMaxSuppression is not supported", "supported ops: Add");

    /* unnamed node: its index */
    ob_init(&b, 12);
    ob_input(&b, "x", OB_F32, 2, D(2, 3));
    ob_node(&b, "Upsample", "", "x", "y");
    ob_output(&b, "y");
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "node 0 (Upsample, opset 12)");

    Onnx__NodeProto *n = unary_model(&b, 13, "Relu", 1, D(3));
    n->domain = "com.example";
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "node 0 'n0' (Relu, opset 13)", "domain 'com.example'");
}

Test(graph_onnx, bad_attributes)
{
    onnx_build b;
    Onnx__NodeProto *n = unary_model(&b, 13, "Relu", 1, D(3));
    ob_attr_i(&b, n, "foo", 1);
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "node 0 'n0' (Relu, opset 13)", "attribute 'foo' is not supported");

    n = unary_model(&b, 13, "Flatten", 2, D(3, 4));
    ob_attr_f(&b, n, "axis", 1.0f);
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "(Flatten, opset 13)", "attribute 'axis' is a float; expected a int");

    n = unary_model(&b, 13, "MaxPool", 4, D(1, 1, 4, 4));
    ob_attr_ints(&b, n, "kernel_shape", 2, D(2, 2));
    ob_attr_s(&b, n, "auto_pad", "SAME_MIDDLE");
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "auto_pad='SAME_MIDDLE' is not supported");

    n = unary_model(&b, 13, "Relu", 1, D(3));
    ob_attr(&b, n, "body", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "attribute 'body' has type GRAPH");

    n = unary_model(&b, 13, "Gelu", 1, D(3));
    ob_attr_s(&b, n, "approximate", "erf");
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "approximate='erf' is not supported");
}

Test(graph_onnx, bad_models)
{
    onnx_build b;
    /* opset out of range */
    unary_model(&b, 8, "Relu", 1, D(3));
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "opset 8", "opsets 9 to 17");
    unary_model(&b, 18, "Relu", 1, D(3));
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "opset 18");

    /* symbolic batch */
    unary_model(&b, 13, "Relu", 2, D(-1, 3));
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "dimension 0 of graph input 'x' is symbolic ('N')");

    /* unsupported data type */
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F64, 1, D(3));
    ob_node(&b, "Relu", "r", "x", "y");
    ob_output(&b, "y");
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "graph input 'x' has ONNX data type 11 (DOUBLE)");
    /* the newer types have names too (ONNX's node tests have them) */
    ob_init(&b, 13);
    ob_input(&b, "x", 17, 1, D(3));
    ob_node(&b, "Relu", "r", "x", "y");
    ob_output(&b, "y");
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "graph input 'x' has ONNX data type 17 (FLOAT8E4M3FN)");
    ob_init(&b, 13);
    ob_input(&b, "x", 26, 1, D(3));
    ob_node(&b, "Relu", "r", "x", "y");
    ob_output(&b, "y");
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "graph input 'x' has ONNX data type 26 (INT2)");

    /* data shorter than the shape */
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 1, D(3));
    Onnx__TensorProto *t = ob_tensor(&b, "w", OB_F32, 1, D(3), NULL);
    t->n_float_data = 0;
    t->has_raw_data = 1;
    t->raw_data.len = 8;
    t->raw_data.data = ob_zalloc(&b, 8);
    ob_initializer(&b, t);
    ob_node(&b, "Add", "a", "x,w", "y");
    ob_output(&b, "y");
    expect_fail(&b, RLT_STATUS_PARSE_ERROR, "initializer 'w'", "raw_data holds 8 bytes", "need 12");

    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 1, D(3));
    t = ob_tensor(&b, "w", OB_F32, 1, D(3), NULL);
    t->n_float_data = 2;
    ob_initializer(&b, t);
    ob_node(&b, "Add", "a", "x,w", "y");
    ob_output(&b, "y");
    expect_fail(&b, RLT_STATUS_PARSE_ERROR, "initializer 'w'", "float_data");

    /* external data */
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 1, D(3));
    t = ob_tensor(&b, "w", OB_F32, 1, D(3), NULL);
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    ob_initializer(&b, t);
    ob_node(&b, "Add", "a", "x,w", "y");
    ob_output(&b, "y");
    expect_fail(&b, RLT_STATUS_INVALID_ARGUMENT, "initializer 'w' keeps its data in an external file");

    /* an input nobody makes */
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 1, D(3));
    ob_node(&b, "Add", "a", "x,ghost", "y");
    ob_output(&b, "y");
    expect_fail(&b, RLT_STATUS_PARSE_ERROR, "input 'ghost' is not produced");

    /* two writers */
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 1, D(3));
    ob_node(&b, "Relu", "a", "x", "y");
    ob_node(&b, "Relu", "b", "x", "y");
    ob_output(&b, "y");
    expect_fail(&b, RLT_STATUS_PARSE_ERROR, "output 'y' is already defined");

    /* no graph */
    ob_init(&b, 13);
    b.model.graph = NULL;
    expect_fail(&b, RLT_STATUS_PARSE_ERROR, "has no graph");

    /* not protobuf at all, empty */
    rlt_graph *g = NULL;
    rlt_diag d = {0};
    const char junk[] = "\xff\xff\xff\xff garbage";
    cr_expect_eq(rlt_graph_load_onnx_bytes(junk, sizeof junk, "junk.onnx", &g, &d), RLT_STATUS_PARSE_ERROR);
    cr_expect(strstr(d.message, "junk.onnx: not an ONNX model"), "%s", d.message);
    d = (rlt_diag){0};
    cr_expect_eq(rlt_graph_load_onnx_bytes("", 0, NULL, &g, &d), RLT_STATUS_PARSE_ERROR);
    d = (rlt_diag){0};
    cr_expect_eq(rlt_graph_load_onnx("/nonexistent/model.onnx", &g, &d), RLT_STATUS_IO_ERROR);
    cr_expect_null(g);
}

/* ---- damaged files -------------------------------------------------------------- */

/* A model touching many ops and every tensor field kind: the base for the
 * truncation and mutation tests and a seed of the fuzz corpus. */
static void mixed_model(onnx_build *b)
{
    ob_init(b, 13);
    ob_input(b, "x", OB_F32, 4, D(1, 3, 8, 8));
    ob_init_f32(b, "w", 4, D(4, 3, 3, 3), NULL);
    Onnx__TensorProto *bias = ob_tensor(b, "bias", OB_F32, 1, D(4), NULL);
    bias->n_float_data = 0;
    bias->has_raw_data = 1;
    bias->raw_data.len = 16;
    bias->raw_data.data = ob_zalloc(b, 16);
    ob_initializer(b, bias);
    Onnx__NodeProto *n = ob_node(b, "Conv", "conv", "x,w,bias", "c");
    ob_attr_ints(b, n, "pads", 4, D(1, 1, 1, 1));
    ob_attr_ints(b, n, "strides", 2, D(1, 1));
    ob_node(b, "Relu", "relu", "c", "r");
    n = ob_node(b, "MaxPool", "pool", "r", "p");
    ob_attr_ints(b, n, "kernel_shape", 2, D(2, 2));
    ob_attr_ints(b, n, "strides", 2, D(2, 2));
    ob_node(b, "Shape", "shape", "p", "s");
    ob_initializer(b, ob_tensor(b, "zero", OB_I64, 0, NULL, (int64_t[]){0}));
    ob_node(b, "Gather", "gather", "s,zero", "bs");
    ob_init_i64(b, "ax", 1, D(0));
    ob_node(b, "Unsqueeze", "unsq", "bs,ax", "bs1");
    ob_init_i64(b, "m1", 1, D(-1));
    n = ob_node(b, "Concat", "cat", "bs1,m1", "shp");
    ob_attr_i(b, n, "axis", 0);
    ob_node(b, "Reshape", "flat", "p,shp", "f");
    ob_init_f32(b, "fc", 2, D(10, 64), NULL);
    n = ob_node(b, "Gemm", "dense", "f,fc", "g");
    ob_attr_i(b, n, "transB", 1);
    ob_attr_f(b, n, "alpha", 1.0f);
    n = ob_node(b, "Softmax", "softmax", "g", "y");
    ob_attr_i(b, n, "axis", -1);
    ob_output(b, "y");
}

/* Loads bytes that may be anything: success gives a printable graph, a
 * failure a status with a message; nothing crashes or leaks. */
static bool load_any(const uint8_t *data, size_t len)
{
    rlt_graph *g = NULL;
    rlt_diag d = {0};
    rlt_status st = rlt_graph_load_onnx_bytes(data, len, "mutant", &g, &d);
    if (st != RLT_STATUS_OK) {
        cr_assert_null(g);
        cr_assert_eq(d.status, st);
        cr_assert_neq(d.message[0], '\0', "status %s without a message", rlt_status_str(st));
        return false;
    }
    char *text = rlt_graph_print(g);
    cr_assert_not_null(text);
    rlt_free(text);
    rlt_graph_destroy(g);
    return true;
}

Test(graph_onnx, truncated_files_are_refused)
{
    onnx_build b;
    mixed_model(&b);
    size_t len;
    uint8_t *buf = ob_pack(&b, &len);
    cr_assert(load_any(buf, len), "the whole model must load");
    int n_ok = 0;
    for (size_t cut = 0; cut < len; cut++) n_ok += load_any(buf, cut);
    cr_expect_lt(n_ok, (int)len / 4, "%d of %zu prefixes loaded", n_ok, len);
    rlt_graph *g = NULL;
    rlt_diag d = {0};
    cr_expect_eq(rlt_graph_load_onnx_bytes(buf, len - 3, "cut.onnx", &g, &d), RLT_STATUS_PARSE_ERROR);
    cr_expect(strstr(d.message, "malformed or truncated"), "%s", d.message);
    ob_free(&b);
    assert_no_leaks();
}

Test(graph_onnx, random_mutations_never_crash)
{
    onnx_build b;
    mixed_model(&b);
    size_t len;
    uint8_t *orig = ob_pack(&b, &len);
    uint8_t *buf = malloc(len);
    cr_assert_not_null(buf);
    rlt_rng rng;
    rlt_rng_seed(&rng, 27);
    int n_ok = 0;
    for (int iter = 0; iter < 4000; iter++) {
        memcpy(buf, orig, len);
        int n_flips = 1 + (int)rlt_rng_below(&rng, 4);
        for (int f = 0; f < n_flips; f++) {
            size_t at = (size_t)rlt_rng_below(&rng, len);
            switch (rlt_rng_below(&rng, 3)) {
            case 0: buf[at] ^= (uint8_t)(1u << rlt_rng_below(&rng, 8)); break;
            case 1: buf[at] = (uint8_t)rlt_rng_u64(&rng); break;
            default: buf[at] = (uint8_t)(rlt_rng_below(&rng, 2) ? 0xff : 0x00); break;
            }
        }
        n_ok += load_any(buf, len);
    }
    cr_expect_gt(n_ok, 0, "no mutant loaded at all");
    free(buf);
    ob_free(&b);
    assert_no_leaks();
}

Test(graph_onnx, allocation_failures_are_reported)
{
    onnx_build b;
    mixed_model(&b);
    size_t len;
    uint8_t *buf = ob_pack(&b, &len);
    bool loaded = false;
    for (long n = 1; n < 5000 && !loaded; n++) {
        rlt_graph *g = NULL;
        rlt_diag d = {0};
        rlt_alloc_fail_after(n);
        rlt_status st = rlt_graph_load_onnx_bytes(buf, len, "oom", &g, &d);
        rlt_alloc_fail_after(0);
        if (st == RLT_STATUS_OK) {
            loaded = true;
            rlt_graph_destroy(g);
        } else {
            cr_assert_null(g);
            cr_assert_neq(d.message[0], '\0');
        }
    }
    cr_expect(loaded, "never loaded with enough allocations");
    ob_free(&b);
    assert_no_leaks();
}

/* ---- TensorProto files (ONNX's backend test data) ------------------------------- */

static uint8_t *pack_tensor(const Onnx__TensorProto *t, size_t *len)
{
    *len = onnx__tensor_proto__get_packed_size(t);
    uint8_t *buf = malloc(*len + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(onnx__tensor_proto__pack(t, buf), *len);
    return buf;
}

/* Decodes t's bytes; expects `status` and, on failure, `sub` in the message. */
static rlt_status decode_tensor(const Onnx__TensorProto *t, rlt_graph_tensor *out, rlt_status status, const char *sub)
{
    size_t len;
    uint8_t *buf = pack_tensor(t, &len);
    rlt_diag d = {0};
    rlt_status st = rlt_graph_tensor_decode_onnx(buf, len, "in.pb", out, &d);
    free(buf);
    cr_expect_eq(st, status, "got %s: %s", rlt_status_str(st), d.message);
    if (sub) cr_expect(strstr(d.message, sub), "'%s' not in: %s", sub, d.message);
    return st;
}

Test(graph_onnx, tensor_files_decode)
{
    onnx_build b;
    ob_init(&b, 13);
    rlt_graph_tensor t;
    /* f32 in float_data */
    decode_tensor(ob_tensor(&b, "x", OB_F32, 2, D(2, 3), NULL), &t, RLT_STATUS_OK, NULL);
    cr_expect_eq(t.dtype, RLT_DTYPE_FLOAT32);
    cr_expect_eq(t.rank, 2);
    cr_expect(t.dims[0] == 2 && t.dims[1] == 3);
    cr_expect_null(t.name);
    cr_expect_float_eq(((float *)t.data)[5], 5.5f, 0.0f);
    rlt_free(t.data);
    /* i64 in raw_data, a scalar */
    Onnx__TensorProto *tp = ob_tensor(&b, "s", OB_I64, 0, NULL, NULL);
    int64_t v = -42;
    tp->n_int64_data = 0;
    tp->has_raw_data = 1;
    tp->raw_data.len = 8;
    tp->raw_data.data = ob_zalloc(&b, 8);
    memcpy(tp->raw_data.data, &v, 8);
    decode_tensor(tp, &t, RLT_STATUS_OK, NULL);
    cr_expect(t.dtype == RLT_DTYPE_INT64 && t.rank == 0 && ((int64_t *)t.data)[0] == -42);
    rlt_free(t.data);
    /* bool in int32_data becomes bytes 0 / 1 */
    decode_tensor(ob_tensor(&b, "m", OB_BOOL, 1, D(3), (const int32_t[]){0, 7, 1}), &t, RLT_STATUS_OK, NULL);
    cr_expect(t.dtype == RLT_DTYPE_BOOL && !((uint8_t *)t.data)[0] && ((uint8_t *)t.data)[1] == 1);
    rlt_free(t.data);
    /* refused: a type rltune does not read, data that does not fit, junk */
    memset(&t, 0x5a, sizeof t);
    decode_tensor(ob_tensor(&b, "d", OB_F64, 1, D(2), NULL), &t, RLT_STATUS_INVALID_ARGUMENT,
                  "in.pb: tensor 'd' has ONNX data type 11 (DOUBLE)");
    cr_expect_eq(t.rank, 0x5a5a5a5a, "*out changed on failure");
    tp = ob_tensor(&b, "short", OB_F32, 1, D(3), NULL);
    tp->n_float_data = 2;
    decode_tensor(tp, &t, RLT_STATUS_PARSE_ERROR, "need 12");
    rlt_diag d = {0};
    cr_expect_eq(rlt_graph_tensor_decode_onnx("\xff\xff\xff", 3, "junk.pb", &t, &d), RLT_STATUS_PARSE_ERROR);
    cr_expect(strstr(d.message, "junk.pb: not an ONNX TensorProto"), "%s", d.message);
    /* allocation failures at every point leak nothing */
    size_t len;
    uint8_t *buf = pack_tensor(ob_tensor(&b, "x", OB_F32, 2, D(4, 4), NULL), &len);
    bool decoded = false;
    for (long n = 1; n < 100 && !decoded; n++) {
        rlt_alloc_fail_after(n);
        rlt_status st = rlt_graph_tensor_decode_onnx(buf, len, "oom.pb", &t, &d);
        rlt_alloc_fail_after(0);
        if (st == RLT_STATUS_OK) {
            decoded = true;
            rlt_free(t.data);
        } else {
            cr_expect(st == RLT_STATUS_OUT_OF_MEMORY || st == RLT_STATUS_PARSE_ERROR, "%s", d.message);
        }
    }
    cr_expect(decoded);
    free(buf);
    ob_free(&b);
    assert_no_leaks();
}

/* ---- the fuzz corpus --------------------------------------------------------- */

/* Opset 9 forms: attributes where later opsets take inputs. */
static void opset9_model(onnx_build *b)
{
    ob_init(b, 9);
    ob_input(b, "x", OB_F32, 4, D(1, 2, 6, 6));
    const char *p[] = {"s", "bb", "m", "v"};
    for (int i = 0; i < 4; i++) ob_init_f32(b, p[i], 1, D(2), NULL);
    ob_node(b, "BatchNormalization", "bn", "x,s,bb,m,v", "n");
    Onnx__NodeProto *n = ob_node(b, "Clip", "clip", "n", "c");
    ob_attr_f(b, n, "min", 0.0f);
    ob_attr_f(b, n, "max", 6.0f);
    n = ob_node(b, "AveragePool", "pool", "c", "a");
    ob_attr_ints(b, n, "kernel_shape", 2, D(2, 2));
    ob_attr_ints(b, n, "strides", 2, D(2, 2));
    n = ob_node(b, "Slice", "slice", "a", "sl");
    ob_attr_ints(b, n, "starts", 1, D(1));
    ob_attr_ints(b, n, "ends", 1, D(3));
    ob_attr_ints(b, n, "axes", 1, D(2));
    n = ob_node(b, "Unsqueeze", "unsq", "sl", "u");
    ob_attr_ints(b, n, "axes", 1, D(0));
    n = ob_node(b, "Squeeze", "sq", "u", "q");
    ob_attr_ints(b, n, "axes", 1, D(0));
    ob_node(b, "Flatten", "flat", "q", "f");
    n = ob_node(b, "LeakyRelu", "leaky", "f", "y");
    ob_attr_f(b, n, "alpha", 0.01f);
    ob_output(b, "y");
}

/* A small attention block at opset 17. */
static void attention_model(onnx_build *b)
{
    ob_init(b, 17);
    ob_input(b, "x", OB_F32, 3, D(1, 4, 8));
    ob_init_f32(b, "wqkv", 2, D(8, 24), NULL);
    ob_node(b, "MatMul", "qkv", "x,wqkv", "qkv");
    ob_init_i64(b, "sizes", 3, D(8, 8, 8));
    Onnx__NodeProto *n = ob_node(b, "Split", "split", "qkv,sizes", "q,k,v");
    ob_attr_i(b, n, "axis", 2);
    n = ob_node(b, "Transpose", "kt", "k", "kT");
    ob_attr_ints(b, n, "perm", 3, D(0, 2, 1));
    ob_node(b, "MatMul", "scores", "q,kT", "sc");
    ob_initializer(b, ob_tensor(b, "scale", OB_F32, 0, NULL, (float[]){8.0f}));
    ob_node(b, "Sqrt", "sqrt", "scale", "rs");
    ob_node(b, "Div", "div", "sc,rs", "scd");
    ob_initializer(b, ob_tensor(b, "mask", OB_I32, 2, D(4, 4), NULL));
    n = ob_node(b, "Cast", "cast", "mask", "maskb");
    ob_attr_i(b, n, "to", OB_BOOL);
    ob_initializer(b, ob_tensor(b, "neg", OB_F32, 0, NULL, (float[]){-1e9f}));
    ob_node(b, "Where", "where", "maskb,scd,neg", "masked");
    n = ob_node(b, "Softmax", "softmax", "masked", "att");
    ob_attr_i(b, n, "axis", -1);
    ob_node(b, "Dropout", "drop", "att", "attd");
    ob_node(b, "MatMul", "ctx", "attd,v", "ctx");
    ob_init_f32(b, "g", 1, D(8), NULL);
    n = ob_node(b, "LayerNormalization", "ln", "ctx,g", "ln");
    ob_attr_f(b, n, "epsilon", 1e-5f);
    ob_node(b, "Erf", "erf", "ln", "e");
    ob_initializer(b, ob_tensor(b, "two", OB_F32, 0, NULL, (float[]){2.0f}));
    ob_node(b, "Pow", "pow", "e,two", "p");
    ob_init_i64(b, "ax", 1, D(-1));
    n = ob_node(b, "ReduceMean", "mean", "p", "y");
    ob_attr_ints(b, n, "axes", 1, D(-1));
    ob_output(b, "y");
}

static void refused_op_model(onnx_build *b)
{
    ob_init(b, 13);
    ob_input(b, "x", OB_F32, 2, D(2, 3));
    ob_node(b, "Relu", "r", "x", "h");
    ob_node(b, "TopK", "topk", "h", "y");
    ob_output(b, "y");
}

static void refused_symbolic_model(onnx_build *b) { unary_model(b, 13, "Relu", 2, D(-1, 3)); }

static void refused_short_data_model(onnx_build *b)
{
    ob_init(b, 13);
    ob_input(b, "x", OB_F32, 1, D(3));
    Onnx__TensorProto *t = ob_tensor(b, "w", OB_F32, 1, D(3), NULL);
    t->n_float_data = 2;
    ob_initializer(b, t);
    ob_node(b, "Add", "a", "x,w", "y");
    ob_output(b, "y");
}

static void refused_cycle_model(onnx_build *b)
{
    ob_init(b, 13);
    ob_input(b, "x", OB_F32, 1, D(3));
    ob_node(b, "Add", "a", "x,q", "p");
    ob_node(b, "Relu", "b", "p", "q");
    ob_output(b, "q");
}

/* The seed models of tests/fuzz/corpus/onnx/ (valid_*), written when
 * RLTUNE_ONNX_CORPUS_OUT names a directory. */
Test(graph_onnx, corpus_seeds)
{
    const char *dir = getenv("RLTUNE_ONNX_CORPUS_OUT");
    if (!dir) return;
    struct {
        const char *name;
        void (*build)(onnx_build *);
    } seeds[] = {{"valid_mixed", mixed_model},
                 {"valid_opset9", opset9_model},
                 {"valid_attention", attention_model},
                 {"refused_op", refused_op_model},
                 {"refused_symbolic_dim", refused_symbolic_model},
                 {"refused_short_data", refused_short_data_model},
                 {"refused_cycle", refused_cycle_model}};
    for (size_t i = 0; i < sizeof seeds / sizeof *seeds; i++) {
        onnx_build b;
        seeds[i].build(&b);
        size_t len;
        uint8_t *buf = ob_pack(&b, &len);
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, seeds[i].name);
        FILE *f = fopen(path, "wb");
        cr_assert_not_null(f, "cannot write %s", path);
        cr_assert_eq(fwrite(buf, 1, len, f), len);
        fclose(f);
        ob_free(&b);
    }
}

Test(graph_onnx, fuzz_corpus_replays)
{
    DIR *dp = opendir(ONNX_CORPUS);
    cr_assert_not_null(dp, "cannot open %s", ONNX_CORPUS);
    int n_files = 0;
    struct dirent *e;
    while ((e = readdir(dp)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", ONNX_CORPUS, e->d_name);
        rlt_graph *g = NULL;
        rlt_diag d = {0};
        rlt_status st = rlt_graph_load_onnx(path, &g, &d);
        if (strncmp(e->d_name, "valid_", 6) == 0) {
            cr_expect_eq(st, RLT_STATUS_OK, "%s: %s", e->d_name, d.message);
        } else {
            cr_expect_neq(st, RLT_STATUS_OK, "%s loaded but should be refused", e->d_name);
            cr_expect_neq(d.message[0], '\0', "%s: no message", e->d_name);
        }
        rlt_graph_destroy(g);
        n_files++;
    }
    closedir(dp);
    cr_expect_geq(n_files, 8, "the corpus has only %d files", n_files);
}
