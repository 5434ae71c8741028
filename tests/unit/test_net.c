/*
 * test_net.c - compiled networks (src/net/net.c): every way a task's
 * tensors are bound to a fused kernel (Conv's own bias, BatchNormalization
 * folded, per-channel and scalar Adds as biases, residual Adds, relu and
 * relu6, Gemm with transB 0 / 1, alpha, beta, a per-column bias or a
 * full-shape addend, MatMul as dense / matmul / batch_matmul, 1-D operands,
 * depthwise convolutions), nodes left to rltune's own code (pools,
 * asymmetric pads, Sigmoid, Pad on activations), a network equal to its reference evaluation
 * (the unfused graph) within 1e-4 of its largest output at 1 and 2
 * threads; schedules taken from records (the fused op's, then the op's
 * without its epilogue) and seeds; the memory plan's peak; Concats and
 * Splits placed in place (their slices' offsets, nested chains) and those
 * that must copy; errors.
 * Models are built in C with tests/common/onnx_build.h, with seeded random
 * weights of modest size.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../common/onnx_build.h"
#include "../common/tmp.h"
#include "graph/graph.h"
#include "net/net.h"
#include "net/net_internal.h"
#include "rltune/records.h"
#include "rltune/session.h"

#define D(...) ((int64_t[]){__VA_ARGS__})

/* ---- helpers ----------------------------------------------------------------- */

static uint64_t rng_state;

static float rnd(void) { return ob_rand(&rng_state); }

static void init_rand(onnx_build *b, const char *name, int rank, const int64_t *dims, float scale)
{
    ob_init_rand(b, name, rank, dims, scale, &rng_state);
}

static Onnx__NodeProto *conv(onnx_build *b, const char *name, const char *in, const char *out, int64_t C, int64_t K,
                             int64_t R, int64_t stride, int64_t pad, int64_t group, bool has_bias)
{
    return ob_conv_rand(b, name, in, out, C, K, R, stride, pad, group, has_bias, &rng_state);
}

static void batchnorm(onnx_build *b, const char *name, const char *in, const char *out, int64_t C)
{
    ob_batchnorm_rand(b, name, in, out, C, &rng_state);
}

static rlt_graph *load_folded(onnx_build *b)
{
    rlt_graph *g = NULL;
    rlt_diag d = {0};
    cr_assert_eq(ob_load_folded(b, &g, &d), RLT_STATUS_OK, "load failed: %s", d.message);
    ob_free(b);
    return g;
}

static size_t bytes_of(const rlt_graph_tensor *t)
{
    return (size_t)rlt_graph_tensor_n_elems(t) * rlt_dtype_size(t->dtype);
}

static rlt_net *compile_blocked_ok(const rlt_graph *g, int n_threads, const char *db_path, int block)
{
    rlt_net_options o;
    rlt_net_options_init(&o);
    o.n_threads = n_threads;
    o.db_path = db_path;
    o.channel_block = block;
    rlt_net *n = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_net_compile(g, &o, &n, &d), RLT_STATUS_OK, "compile: %s", d.message);
    return n;
}

static rlt_net *compile_ok(const rlt_graph *g, int n_threads, const char *db_path)
{
    rlt_net_options o;
    rlt_net_options_init(&o);
    o.n_threads = n_threads;
    o.db_path = db_path;
    rlt_net *n = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_net_compile(g, &o, &n, &d), RLT_STATUS_OK, "compile: %s", d.message);
    return n;
}

/* Runs net n (twice: a second run must not depend on the first's leftovers)
 * and the reference on the same seeded inputs, and checks every output
 * within 1e-4 of its largest reference value. */
static void check_against_reference(rlt_net *n, const rlt_graph *g, uint64_t seed)
{
    void *in[8] = {0}, *out[8] = {0}, *ref[8] = {0};
    cr_assert(g->n_inputs <= 8 && g->n_outputs <= 8);
    rng_state = seed;
    for (int i = 0; i < g->n_inputs; i++) {
        const rlt_graph_tensor *t = &g->tensors[g->inputs[i]];
        cr_assert_eq(t->dtype, RLT_DTYPE_FLOAT32);
        float *x = malloc(bytes_of(t) + 1);
        for (int64_t k = 0; k < rlt_graph_tensor_n_elems(t); k++) x[k] = rnd();
        in[i] = x;
    }
    for (int i = 0; i < g->n_outputs; i++) {
        out[i] = malloc(bytes_of(&g->tensors[g->outputs[i]]) + 1);
        memset(out[i], 0xff, bytes_of(&g->tensors[g->outputs[i]])); /* NaN: every element must be written */
    }
    rlt_diag d = {0};
    cr_assert_eq(rlt_graph_eval(g, g->n_inputs, (const void *const *)in, g->n_outputs, ref, &d), RLT_STATUS_OK, "%s",
                 d.message);
    for (int run = 0; run < 2; run++) {
        cr_assert_eq(rlt_net_run_buffers(n, (const void *const *)in, out, &d), RLT_STATUS_OK, "%s", d.message);
        for (int i = 0; i < g->n_outputs; i++) {
            const rlt_graph_tensor *t = &g->tensors[g->outputs[i]];
            const float *o = out[i], *r = ref[i];
            double max_ref = 0, max_err = 0;
            int64_t worst = 0;
            for (int64_t k = 0; k < rlt_graph_tensor_n_elems(t); k++) {
                max_ref = fmax(max_ref, fabs(r[k]));
                double e = fabs((double)o[k] - r[k]);
                if (!(e <= max_err)) {
                    max_err = isnan(e) ? INFINITY : e;
                    worst = k;
                }
            }
            cr_expect_leq(max_err, 1e-4 * fmax(max_ref, 1e-3),
                          "output '%s' run %d: error %g at %lld (%g, reference %g); largest |reference| %g", t->name,
                          run, max_err, (long long)worst, o[worst], r[worst], max_ref);
        }
    }
    for (int i = 0; i < 8; i++) {
        free(in[i]);
        free(out[i]);
        rlt_free(ref[i]);
    }
}

static int count_steps(const rlt_net *n, bool kernels)
{
    int c = 0;
    for (int i = 0; i < rlt_net_n_steps(n); i++) {
        rlt_net_step s;
        rlt_net_step_get(n, i, &s);
        c += (s.task >= 0) == kernels;
    }
    return c;
}

/* The task with this spec, or -1. */
static int task_index(const rlt_net *n, const char *spec)
{
    for (int i = 0; i < rlt_net_n_tasks(n); i++) {
        rlt_net_task t;
        rlt_net_task_get(n, i, &t);
        if (strcmp(t.spec, spec) == 0) return i;
    }
    return -1;
}

/* ---- networks ---------------------------------------------------------------- */

/* A small ResNet: stem conv-bn-relu, max pool, a basic block (residual
 * add), a downsampling block with a 1x1 projection, global average pool,
 * flatten, Gemm head. */
static rlt_graph *small_resnet(void)
{
    onnx_build b;
    rng_state = 11;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 3, 20, 20));
    conv(&b, "stem", "x", "s0", 3, 8, 3, 1, 1, 1, false);
    batchnorm(&b, "stem_bn", "s0", "s1", 8);
    ob_node(&b, "Relu", "stem_relu", "s1", "s2");
    Onnx__NodeProto *mp = ob_node(&b, "MaxPool", "pool", "s2", "p");
    ob_attr_ints(&b, mp, "kernel_shape", 2, D(3, 3));
    ob_attr_ints(&b, mp, "strides", 2, D(2, 2));
    ob_attr_ints(&b, mp, "pads", 4, D(1, 1, 1, 1));
    /* block 1: [1,8,10,10] */
    conv(&b, "b1c1", "p", "b1a", 8, 8, 3, 1, 1, 1, false);
    batchnorm(&b, "b1bn1", "b1a", "b1b", 8);
    ob_node(&b, "Relu", "b1r1", "b1b", "b1c");
    conv(&b, "b1c2", "b1c", "b1d", 8, 8, 3, 1, 1, 1, false);
    batchnorm(&b, "b1bn2", "b1d", "b1e", 8);
    ob_node(&b, "Add", "b1add", "b1e,p", "b1f");
    ob_node(&b, "Relu", "b1r2", "b1f", "b1o");
    /* block 2: stride 2 to [1,16,5,5], projected shortcut */
    conv(&b, "b2c1", "b1o", "b2a", 8, 16, 3, 2, 1, 1, true);
    ob_node(&b, "Relu", "b2r1", "b2a", "b2b");
    conv(&b, "b2c2", "b2b", "b2c", 16, 16, 3, 1, 1, 1, true);
    conv(&b, "b2proj", "b1o", "b2s", 8, 16, 1, 2, 0, 1, true);
    ob_node(&b, "Add", "b2add", "b2c,b2s", "b2d");
    ob_node(&b, "Relu", "b2r2", "b2d", "b2o");
    ob_node(&b, "GlobalAveragePool", "gap", "b2o", "g");
    Onnx__NodeProto *fl = ob_node(&b, "Flatten", "flat", "g", "f");
    ob_attr_i(&b, fl, "axis", 1);
    init_rand(&b, "fc_w", 2, D(10, 16), 0.3f);
    init_rand(&b, "fc_b", 1, D(10), 0.3f);
    Onnx__NodeProto *fc = ob_node(&b, "Gemm", "fc", "f,fc_w,fc_b", "y");
    ob_attr_i(&b, fc, "transB", 1);
    ob_output(&b, "y");
    return load_folded(&b);
}

Test(net, small_resnet_equals_reference)
{
    rlt_graph *g = small_resnet();
    rlt_net *n = compile_ok(g, 1, NULL);
    check_against_reference(n, g, 1);
    check_against_reference(n, g, 2);
    /* stem, two block-1 convs, three block-2 convs, the head: 7 kernels;
     * MaxPool, GlobalAveragePool, Flatten are left to rltune's own code */
    cr_expect_eq(count_steps(n, true), 7);
    cr_expect_eq(count_steps(n, false), 3);
    for (int i = 0; i < rlt_net_n_tasks(n); i++) {
        rlt_net_task t;
        rlt_net_task_get(n, i, &t);
        cr_expect_eq(t.origin, RLT_NET_FROM_SEED, "%s", t.spec);
        cr_expect_eq(t.record_id, 0);
    }
    cr_expect_geq(task_index(n, "dense:M=1,N=10,K=16,bias=1,relu=0"), 0);
    /* the later of two kernels meeting in an Add takes it: the projection */
    cr_expect_geq(task_index(n, "conv2d:N=1,C=8,H=10,W=10,K=16,R=1,S=1,stride=2,pad=0,dilation=1,epilogue=bias+add+relu"),
                  0);
    cr_expect_geq(task_index(n, "conv2d:N=1,C=16,H=5,W=5,K=16,R=3,S=3,stride=1,pad=1,dilation=1,epilogue=bias"), 0);
    /* the plan reuses buffers: less than every activation at once */
    int64_t all = 0;
    for (int t = 0; t < g->n_tensors; t++)
        if (!g->tensors[t].data) all += (int64_t)bytes_of(&g->tensors[t]);
    cr_expect_gt(rlt_net_activation_bytes(n), 0);
    cr_expect_lt(rlt_net_activation_bytes(n), all, "plan %lld, all %lld", (long long)rlt_net_activation_bytes(n),
                 (long long)all);
    rlt_net_destroy(n);
    rlt_graph_destroy(g);
}

Test(net, two_threads)
{
    rlt_graph *g = small_resnet();
    rlt_net *n = compile_ok(g, 2, NULL);
    check_against_reference(n, g, 3);
    rlt_net_destroy(n);
    rlt_graph_destroy(g);
}

/* Gemm in every form a task takes, MatMul as dense, matmul and batch_matmul. */
Test(net, gemm_and_matmul_bindings)
{
    onnx_build b;
    rng_state = 5;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(4, 16));
    /* transB=0 constant B [K,N]: transposed and scaled by alpha; C a per-column bias scaled by beta */
    init_rand(&b, "w1", 2, D(16, 24), 0.3f);
    init_rand(&b, "c1", 1, D(24), 0.5f);
    Onnx__NodeProto *g1 = ob_node(&b, "Gemm", "g1", "x,w1,c1", "h1");
    ob_attr_f(&b, g1, "alpha", 0.5f);
    ob_attr_f(&b, g1, "beta", 2.0f);
    ob_node(&b, "Relu", "g1r", "h1", "h1r");
    /* transB=1, no C; then a residual Add of a tensor computed before */
    init_rand(&b, "w2", 2, D(24, 24), 0.3f);
    Onnx__NodeProto *g2 = ob_node(&b, "Gemm", "g2", "h1r,w2", "h2");
    ob_attr_i(&b, g2, "transB", 1);
    ob_node(&b, "Add", "g2add", "h2,h1r", "h2a");
    /* computed B (transB=0): matmul, with C of the output's shape: add */
    ob_input(&b, "bm", OB_F32, 2, D(24, 8));
    ob_input(&b, "cm", OB_F32, 2, D(4, 8));
    ob_node(&b, "Gemm", "g3", "h2a,bm,cm", "h3");
    /* MatMul with a constant [K,N] B and batch dims in A: dense, A's rows folded; bias then relu6 */
    ob_input(&b, "a3", OB_F32, 3, D(2, 5, 8));
    init_rand(&b, "w4", 2, D(8, 12), 0.4f);
    init_rand(&b, "b4", 1, D(12), 0.5f);
    ob_node(&b, "MatMul", "mm4", "a3,w4", "m4");
    ob_node(&b, "Add", "mm4b", "b4,m4", "m4b"); /* the exporter's order: bias first */
    init_rand(&b, "lo", 0, NULL, 0.0f);
    float six = 6.0f;
    ob_init_f32(&b, "hi", 0, NULL, &six);
    ob_node(&b, "Clip", "mm4c", "m4b,lo,hi", "m4c");
    /* batch_matmul of two computed operands */
    ob_input(&b, "q", OB_F32, 4, D(1, 3, 5, 4));
    ob_input(&b, "k", OB_F32, 4, D(1, 3, 4, 6));
    ob_node(&b, "MatMul", "bmm", "q,k", "s");
    /* a 1-D constant B: dense with N=1 */
    init_rand(&b, "v", 1, D(8), 0.5f);
    ob_node(&b, "MatMul", "mv", "h3,v", "hv");
    ob_output(&b, "h3");
    ob_output(&b, "m4c");
    ob_output(&b, "s");
    ob_output(&b, "hv");
    rlt_graph *g = load_folded(&b);
    rlt_net *n = compile_ok(g, 1, NULL);
    check_against_reference(n, g, 7);
    cr_expect_eq(count_steps(n, false), 0, "everything here is a kernel");
    cr_expect_geq(task_index(n, "dense:M=4,N=24,K=16,bias=1,relu=1"), 0);
    cr_expect_geq(task_index(n, "dense:M=4,N=24,K=24,bias=0,relu=0,epilogue=add"), 0);
    cr_expect_geq(task_index(n, "matmul:M=4,N=8,K=24,epilogue=add"), 0);
    cr_expect_geq(task_index(n, "dense:M=10,N=12,K=8,bias=0,relu=0,epilogue=bias+relu6"), 0);
    cr_expect_geq(task_index(n, "batch_matmul:B=3,M=5,N=6,K=4"), 0);
    cr_expect_geq(task_index(n, "dense:M=4,N=1,K=8,bias=0,relu=0"), 0);
    rlt_net_destroy(n);
    rlt_graph_destroy(g);
}

/* Depthwise convolutions with relu6, a scalar Add as a bias, nodes that do
 * not fuse (Sigmoid) or do not fit (asymmetric pads), a graph output read
 * by another node too. */
Test(net, depthwise_and_fallbacks)
{
    onnx_build b;
    rng_state = 9;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 6, 9, 9));
    conv(&b, "dw", "x", "d0", 6, 6, 3, 2, 1, 6, true);
    init_rand(&b, "zero", 0, NULL, 0.0f);
    float six = 6.0f;
    ob_init_f32(&b, "six", 0, NULL, &six);
    ob_node(&b, "Clip", "dw6", "d0,zero,six", "d1");
    conv(&b, "pw", "d1", "e0", 6, 12, 1, 1, 0, 1, false);
    init_rand(&b, "sc", 0, NULL, 0.7f);
    ob_node(&b, "Add", "pwb", "e0,sc", "e1"); /* a scalar constant: a bias of one value */
    ob_node(&b, "Sigmoid", "sig", "e1", "e2");
    Onnx__NodeProto *asym = conv(&b, "asym", "e2", "f0", 12, 4, 3, 1, 0, 1, true);
    asym->attribute[0]->ints[2] = 2; /* pads [0,0,2,0]: not a task, evaluated */
    ob_node(&b, "Relu", "fr", "f0", "f1");
    ob_output(&b, "e2");
    ob_output(&b, "f1");
    rlt_graph *g = load_folded(&b);
    rlt_net *n = compile_ok(g, 1, NULL);
    check_against_reference(n, g, 4);
    cr_expect_geq(task_index(n, "depthwise_conv2d:N=1,C=6,H=9,W=9,R=3,S=3,stride=2,pad=1,dilation=1,"
                                "epilogue=bias+relu6"),
                  0);
    cr_expect_geq(task_index(n, "conv2d:N=1,C=6,H=1,W=25,K=12,R=1,S=1,stride=1,pad=0,dilation=1,epilogue=bias"), 0);
    cr_expect_eq(count_steps(n, false), 3, "Sigmoid, the asymmetric Conv and its Relu");
    rlt_net_destroy(n);
    rlt_graph_destroy(g);
}

/* The nodes of op_type whose step runs nothing (Concats with their parts
 * written in place, Splits whose outputs are views of their slices). */
static int in_place(const rlt_net *n, const char *op_type)
{
    int c = 0;
    for (int i = 0; i < n->n_steps; i++)
        c += n->steps[i].is_view && strcmp(n->g->nodes[n->steps[i].node].op_type, op_type) == 0;
    return c;
}

static int concats_in_place(const rlt_net *n) { return in_place(n, "Concat"); }

/* Whether the step of the node named `name` runs nothing. */
static bool runs_nothing(const rlt_net *n, const char *name)
{
    for (int i = 0; i < n->n_steps; i++)
        if (strcmp(n->g->nodes[n->steps[i].node].name, name) == 0) return n->steps[i].task < 0 && n->steps[i].is_view;
    cr_assert_fail("no step of node '%s'", name);
    return false;
}

/* The byte offset of tensor `a` from tensor `b` in the arena. */
static int64_t offset_from(const rlt_net *n, const char *a, const char *b)
{
    int ta = rlt_graph_tensor_find(n->g, a), tb = rlt_graph_tensor_find(n->g, b);
    cr_assert(ta >= 0 && tb >= 0 && n->vals[ta] && n->vals[tb], "%s, %s", a, b);
    return (int64_t)((char *)n->vals[ta] - (char *)n->vals[tb]);
}

/* SqueezeNet's fire module: two expand convolutions write their halves of
 * the Concat in place, and a Concat of that Concat nests; Concats that
 * cannot (a graph input, a part already placed, the same input twice, an
 * axis with a dimension > 1 before it) copy. */
Test(net, concats_in_place)
{
    onnx_build b;
    rng_state = 17;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 4, 6, 6));
    conv(&b, "squeeze", "x", "s0", 4, 3, 1, 1, 0, 1, true);
    ob_node(&b, "Relu", "sr", "s0", "s1");
    conv(&b, "e1", "s1", "a0", 3, 4, 1, 1, 0, 1, true);
    ob_node(&b, "Relu", "ar", "a0", "a1");
    conv(&b, "e3", "s1", "b0", 3, 5, 3, 1, 1, 1, true);
    ob_node(&b, "Relu", "br", "b0", "b1");
    ob_attr_i(&b, ob_node(&b, "Concat", "fire", "a1,b1", "c"), "axis", 1);
    conv(&b, "next", "c", "d", 9, 4, 1, 1, 0, 1, false);
    ob_attr_i(&b, ob_node(&b, "Concat", "nest", "c,d", "f"), "axis", -3);
    ob_attr_i(&b, ob_node(&b, "Concat", "with_input", "x,a1", "e"), "axis", 1);
    ob_attr_i(&b, ob_node(&b, "Concat", "twice", "d,d", "g"), "axis", 1);
    conv(&b, "p", "s1", "p0", 3, 3, 1, 1, 0, 1, true);
    conv(&b, "q", "s1", "q0", 3, 3, 3, 1, 1, 1, true);
    ob_attr_i(&b, ob_node(&b, "Concat", "rows", "p0,q0", "h"), "axis", 2);
    ob_output(&b, "f");
    ob_output(&b, "e");
    ob_output(&b, "g");
    ob_output(&b, "h");
    rlt_graph *g = load_folded(&b);
    for (int threads = 1; threads <= 2; threads++) {
        rlt_net *n = compile_ok(g, threads, NULL);
        check_against_reference(n, g, 6);
        cr_expect_eq(concats_in_place(n), 2, "fire and nest; with_input, twice and rows copy");
        rlt_net_destroy(n);
    }
    rlt_graph_destroy(g);
}

/* The number of tasks whose spec contains `part`. */
static int tasks_with(const rlt_net *n, const char *part)
{
    int c = 0;
    for (int i = 0; i < rlt_net_n_tasks(n); i++) {
        rlt_net_task t;
        rlt_net_task_get(n, i, &t);
        c += strstr(t.spec, part) != NULL;
    }
    return c;
}

/* Blocked layouts: the small ResNet in blocks of 8 and of 4 channels (the
 * stem writes blocks from the NCHW input, MaxPool, the residuals and
 * GlobalAveragePool take them, the head reads NCHW), at 1 and 2 threads. */
Test(net, blocked_small_resnet_equals_reference)
{
    rlt_graph *g = small_resnet();
    for (int block = 4; block <= 8; block += 4)
        for (int threads = 1; threads <= 2; threads++) {
            rlt_net *n = compile_blocked_ok(g, threads, NULL, block);
            check_against_reference(n, g, 7);
            char part[32];
            snprintf(part, sizeof part, "oblock=%d", block);
            cr_expect_eq(tasks_with(n, part), 6, "every conv writes blocks (block %d)", block);
            snprintf(part, sizeof part, "iblock=%d", block);
            cr_expect_eq(tasks_with(n, part), 5, "every conv but the stem reads them (block %d)", block);
            cr_expect_eq(count_steps(n, false), 3, "MaxPool, GlobalAveragePool, Flatten");
            rlt_net_destroy(n);
        }
    rlt_graph_destroy(g);
}

/* Every node with a blocked form on blocked tensors: pools with pads,
 * strides, dilations and ceil_mode, AveragePool with and without the pads
 * counted, an in-place Concat and one that copies (a part read twice),
 * an unfused Add and Sigmoid, a Split on channels, GlobalAveragePool; a
 * conv whose output is no multiple of the block stays NCHW. */
Test(net, blocked_fast_ops_equal_reference)
{
    onnx_build b;
    rng_state = 23;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 3, 11, 11));
    conv(&b, "stem", "x", "s0", 3, 16, 3, 1, 1, 1, true);
    ob_node(&b, "Relu", "sr", "s0", "s");
    Onnx__NodeProto *mp = ob_node(&b, "MaxPool", "mp", "s", "m");
    ob_attr_ints(&b, mp, "kernel_shape", 2, D(3, 3));
    ob_attr_ints(&b, mp, "strides", 2, D(2, 2));
    ob_attr_i(&b, mp, "ceil_mode", 1);
    Onnx__NodeProto *md = ob_node(&b, "MaxPool", "md", "s", "md_out");
    ob_attr_ints(&b, md, "kernel_shape", 2, D(2, 3));
    ob_attr_ints(&b, md, "dilations", 2, D(2, 1));
    ob_attr_ints(&b, md, "pads", 4, D(1, 0, 0, 1));
    Onnx__NodeProto *ap = ob_node(&b, "AveragePool", "ap", "m", "a1");
    ob_attr_ints(&b, ap, "kernel_shape", 2, D(3, 3));
    ob_attr_ints(&b, ap, "pads", 4, D(1, 1, 1, 1));
    Onnx__NodeProto *ai = ob_node(&b, "AveragePool", "ai", "m", "a2");
    ob_attr_ints(&b, ai, "kernel_shape", 2, D(3, 3));
    ob_attr_ints(&b, ai, "pads", 4, D(1, 1, 1, 1));
    ob_attr_i(&b, ai, "count_include_pad", 1);
    conv(&b, "e1", "m", "e1o", 16, 8, 1, 1, 0, 1, true);
    conv(&b, "e3", "m", "e3o", 16, 8, 3, 1, 1, 1, true);
    ob_attr_i(&b, ob_node(&b, "Concat", "fire", "e1o,e3o", "c"), "axis", 1);
    ob_attr_i(&b, ob_node(&b, "Concat", "copy", "a1,a2,a1", "cc"), "axis", 1);
    ob_node(&b, "Add", "sum", "c,a1", "sm");
    ob_node(&b, "Sigmoid", "sig", "sm", "sg");
    Onnx__NodeProto *sp = ob_node(&b, "Split", "split", "cc", "h1,h2");
    ob_attr_i(&b, sp, "axis", 1);
    conv(&b, "k1", "sg", "k1o", 16, 16, 3, 1, 1, 1, true);
    conv(&b, "k2", "h1", "k2o", 24, 16, 1, 1, 0, 1, false);
    ob_node(&b, "Add", "res", "k2o,k1o", "r");
    conv(&b, "odd", "r", "o6", 16, 6, 1, 1, 0, 1, true);
    ob_node(&b, "GlobalAveragePool", "gap", "r", "g");
    ob_node(&b, "GlobalAveragePool", "gap2", "h2", "g2");
    ob_node(&b, "GlobalAveragePool", "gap3", "md_out", "g3");
    ob_output(&b, "g");
    ob_output(&b, "g2");
    ob_output(&b, "g3");
    ob_output(&b, "o6");
    rlt_graph *g = load_folded(&b);
    for (int threads = 1; threads <= 2; threads++) {
        rlt_net *n = compile_blocked_ok(g, threads, NULL, 8);
        check_against_reference(n, g, 9);
        cr_expect_eq(tasks_with(n, "oblock=8"), 5, "stem, e1, e3, k1, k2 write blocks");
        cr_expect_eq(concats_in_place(n), 1, "fire in place; copy copies");
        rlt_net_destroy(n);
    }
    rlt_graph_destroy(g);
}

/* MobileNet-V2's inverted residual in blocks of 8: the 1x1 expansion,
 * the depthwise conv (Clip 0..6 fused) and the projection with its
 * residual all stay blocked, at 1 and 2 threads. */
Test(net, blocked_depthwise_block_equals_reference)
{
    onnx_build b;
    rng_state = 31;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 3, 10, 10));
    conv(&b, "stem", "x", "s", 3, 16, 3, 1, 1, 1, true);
    conv(&b, "expand", "s", "e0", 16, 32, 1, 1, 0, 1, true);
    ob_node(&b, "Relu", "er", "e0", "e");
    conv(&b, "dw", "e", "d0", 32, 32, 3, 1, 1, 32, true);
    ob_init_f32(&b, "lo", 0, NULL, (const float[]){0.0f});
    ob_init_f32(&b, "hi", 0, NULL, (const float[]){6.0f});
    ob_node(&b, "Clip", "clip", "d0,lo,hi", "d");
    conv(&b, "project", "d", "p0", 32, 16, 1, 1, 0, 1, true);
    ob_node(&b, "Add", "res", "p0,s", "p");
    conv(&b, "dw2", "p", "y0", 16, 16, 3, 2, 1, 16, false);
    ob_node(&b, "GlobalAveragePool", "gap", "y0", "y");
    ob_output(&b, "y");
    rlt_graph *g = load_folded(&b);
    for (int threads = 1; threads <= 2; threads++) {
        rlt_net *n = compile_blocked_ok(g, threads, NULL, 8);
        check_against_reference(n, g, 13);
        cr_expect_eq(tasks_with(n, "depthwise_conv2d:"), 2);
        cr_expect_eq(tasks_with(n, ",block=8"), 2, "both depthwise convs blocked");
        rlt_net_destroy(n);
    }
    rlt_graph_destroy(g);
}

/* Merged sibling convolutions, as graph substitutions leave them: a conv's
 * output Split on channels at batch 1 runs nothing (each output a view of
 * its slice), its outputs read by kernels (at offset 0 and past it), a
 * fast op and a nested Split; a Split of one part of an in-place Concat
 * and a Split of the Concat's output (chains of slices whose offsets add
 * up); a Concat of a Split's output copies (the part lives in another
 * block); Split outputs that are graph outputs. The input's block lives
 * until the last reader of any output: two runs against the reference at
 * 1 and 2 threads, with convolutions after the Split that reuse freed
 * blocks. */
Test(net, splits_in_place)
{
    onnx_build b;
    rng_state = 19;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 4, 6, 6));
    conv(&b, "stem", "x", "s0", 4, 8, 1, 1, 0, 1, true);
    ob_node(&b, "Relu", "sr", "s0", "s1");
    ob_init_i64(&b, "sizes_sp", 3, D(3, 3, 2));
    ob_attr_i(&b, ob_node(&b, "Split", "sp", "s1,sizes_sp", "a,b,c"), "axis", 1);
    conv(&b, "ka", "a", "ka0", 3, 4, 3, 1, 1, 1, true);
    ob_node(&b, "Relu", "kar", "ka0", "ka1");
    conv(&b, "kb", "b", "kb0", 3, 4, 1, 1, 0, 1, true);
    ob_node(&b, "Sigmoid", "fc", "c", "c1");
    ob_init_i64(&b, "sizes_sub", 2, D(1, 2));
    ob_attr_i(&b, ob_node(&b, "Split", "sub", "b,sizes_sub", "b0,b1"), "axis", -3);
    ob_node(&b, "Relu", "rb", "b1", "b2");
    ob_init_i64(&b, "sizes_part", 2, D(2, 2));
    ob_attr_i(&b, ob_node(&b, "Split", "part", "ka1,sizes_part", "k0,k1"), "axis", 1);
    conv(&b, "kk", "k1", "kk0", 2, 3, 3, 1, 1, 1, true);
    ob_attr_i(&b, ob_node(&b, "Concat", "fire", "ka1,kb0", "f"), "axis", 1);
    ob_init_i64(&b, "sizes_back", 2, D(5, 3));
    ob_attr_i(&b, ob_node(&b, "Split", "back", "f,sizes_back", "f0,f1"), "axis", 1);
    conv(&b, "kf", "f0", "kf0", 5, 4, 3, 1, 1, 1, false);
    ob_attr_i(&b, ob_node(&b, "Concat", "mix", "a,c1", "m"), "axis", 1);
    ob_node(&b, "Add", "sum", "kf0,kb0", "y");
    ob_output(&b, "y");
    ob_output(&b, "f1");
    ob_output(&b, "k0");
    ob_output(&b, "kk0");
    ob_output(&b, "b0");
    ob_output(&b, "b2");
    ob_output(&b, "m");
    rlt_graph *g = load_folded(&b);
    for (int threads = 1; threads <= 2; threads++) {
        rlt_net *n = compile_ok(g, threads, NULL);
        check_against_reference(n, g, 7);
        cr_expect_eq(in_place(n, "Split"), 4, "sp, sub, part and back");
        cr_expect(runs_nothing(n, "sp") && runs_nothing(n, "sub") && runs_nothing(n, "part") &&
                  runs_nothing(n, "back"));
        cr_expect(runs_nothing(n, "fire"), "its parts are kernels' outputs, in no other block");
        cr_expect_not(runs_nothing(n, "mix"), "a Split's output is a slice of another block: copied");
        const int64_t plane = 6 * 6 * (int64_t)sizeof(float);
        cr_expect_eq(offset_from(n, "a", "s1"), 0);
        cr_expect_eq(offset_from(n, "b", "s1"), 3 * plane);
        cr_expect_eq(offset_from(n, "c", "s1"), 6 * plane);
        cr_expect_eq(offset_from(n, "b1", "s1"), 4 * plane, "nested: b's offset plus b1's in b");
        cr_expect_eq(offset_from(n, "kb0", "f"), 4 * plane);
        cr_expect_eq(offset_from(n, "k1", "f"), 2 * plane, "a Split of a Concat's part");
        cr_expect_eq(offset_from(n, "f1", "f"), 5 * plane);
        rlt_net_destroy(n);
    }
    rlt_graph_destroy(g);
}

/* Splits that must copy: at batch 2, on an axis with a dimension > 1
 * before it, of a graph input and of a view of one, and a MatMul's
 * [4, N] on its last axis; a [1, N] MatMul output on its last axis and a
 * Flatten of a conv's output (a view: the Split's input is a slice of its
 * block) run nothing. */
Test(net, splits_that_copy)
{
    onnx_build b;
    rng_state = 23;
    ob_init(&b, 13);
    ob_input(&b, "x2", OB_F32, 4, D(2, 8, 4, 4));
    ob_input(&b, "x1", OB_F32, 4, D(1, 8, 4, 4));
    ob_input(&b, "v1", OB_F32, 2, D(1, 16));
    ob_input(&b, "v4", OB_F32, 2, D(4, 16));
    conv(&b, "c2", "x2", "y2", 8, 8, 1, 1, 0, 1, true);
    ob_attr_i(&b, ob_node(&b, "Split", "batch2", "y2", "p2,q2"), "axis", 1);
    ob_node(&b, "Add", "o_batch2", "p2,q2", "o1");
    ob_attr_i(&b, ob_node(&b, "Split", "of_input", "x1", "pi,qi"), "axis", 1);
    ob_node(&b, "Add", "o_of_input", "pi,qi", "o2");
    conv(&b, "c1", "x1", "y1", 8, 8, 3, 1, 1, 1, true);
    ob_attr_i(&b, ob_node(&b, "Split", "rows", "y1", "pr,qr"), "axis", 2);
    ob_node(&b, "Add", "o_rows", "pr,qr", "o3");
    ob_attr_i(&b, ob_node(&b, "Flatten", "fl", "y1", "yf"), "axis", 1);
    ob_attr_i(&b, ob_node(&b, "Split", "flat", "yf", "pf,qf"), "axis", 1);
    ob_node(&b, "Add", "o_flat", "pf,qf", "o4");
    init_rand(&b, "w", 2, D(16, 24), 0.3f);
    ob_node(&b, "MatMul", "m1", "v1,w", "z1");
    ob_attr_i(&b, ob_node(&b, "Split", "cols", "z1", "pc,qc"), "axis", -1);
    ob_node(&b, "Add", "o_cols", "pc,qc", "o5");
    ob_node(&b, "MatMul", "m4", "v4,w", "z4");
    ob_attr_i(&b, ob_node(&b, "Split", "cols4", "z4", "pc4,qc4"), "axis", 1);
    ob_node(&b, "Add", "o_cols4", "pc4,qc4", "o6");
    ob_attr_i(&b, ob_node(&b, "Flatten", "fi", "x1", "xf"), "axis", 1);
    ob_attr_i(&b, ob_node(&b, "Split", "of_input_view", "xf", "pv,qv"), "axis", 1);
    ob_node(&b, "Add", "o_of_input_view", "pv,qv", "o7");
    for (int i = 1; i <= 7; i++) {
        char name[8];
        snprintf(name, sizeof name, "o%d", i);
        ob_output(&b, name);
    }
    rlt_graph *g = load_folded(&b);
    for (int threads = 1; threads <= 2; threads++) {
        rlt_net *n = compile_ok(g, threads, NULL);
        check_against_reference(n, g, 9);
        cr_expect_eq(in_place(n, "Split"), 2, "flat and cols");
        cr_expect(runs_nothing(n, "flat") && runs_nothing(n, "cols"));
        const char *copies[] = {"batch2", "of_input", "rows", "cols4", "of_input_view"};
        for (size_t i = 0; i < sizeof copies / sizeof copies[0]; i++)
            cr_expect_not(runs_nothing(n, copies[i]), "%s copies", copies[i]);
        cr_expect_eq(offset_from(n, "qf", "y1"), 64 * (int64_t)sizeof(float));
        cr_expect_eq(offset_from(n, "qc", "z1"), 12 * (int64_t)sizeof(float));
        rlt_net_destroy(n);
    }
    rlt_graph_destroy(g);
}

/* A small attention block (opset 17): views (Reshape) sharing their input's
 * buffer, Transposes, Softmax, Div, a residual Add and LayerNormalization
 * on the fast ops, batch_matmuls of computed operands, dense Q/K/V. */
Test(net, attention_block_views_and_fast_ops)
{
    onnx_build b;
    rng_state = 21;
    ob_init(&b, 17);
    ob_input(&b, "x", OB_F32, 3, D(1, 8, 16));
    const char *qkv[3] = {"q", "k", "v"};
    for (int i = 0; i < 3; i++) {
        char w[16], bias[16], m[16], a[16], r[16], t[16], in[64];
        snprintf(w, sizeof w, "w%s", qkv[i]);
        snprintf(bias, sizeof bias, "b%s", qkv[i]);
        snprintf(m, sizeof m, "%s0", qkv[i]);
        snprintf(a, sizeof a, "%s1", qkv[i]);
        snprintf(r, sizeof r, "%s2", qkv[i]);
        snprintf(t, sizeof t, "%s3", qkv[i]);
        init_rand(&b, w, 2, D(16, 16), 0.4f);
        init_rand(&b, bias, 1, D(16), 0.2f);
        snprintf(in, sizeof in, "x,%s", w);
        ob_node(&b, "MatMul", m, in, m);
        snprintf(in, sizeof in, "%s,%s", bias, m);
        ob_node(&b, "Add", a, in, a);
        char shape[16];
        snprintf(shape, sizeof shape, "shape_%s", qkv[i]);
        ob_init_i64(&b, shape, 4, (const int64_t[]){1, 8, 2, 8});
        snprintf(in, sizeof in, "%s,%s", a, shape);
        ob_node(&b, "Reshape", r, in, r);
        Onnx__NodeProto *tr = ob_node(&b, "Transpose", t, r, t);
        ob_attr_ints(&b, tr, "perm", 4, i == 1 ? D(0, 2, 3, 1) : D(0, 2, 1, 3));
    }
    ob_node(&b, "MatMul", "scores", "q3,k3", "s0");
    float eight = 2.8284271f;
    ob_init_f32(&b, "scale", 0, NULL, &eight);
    ob_node(&b, "Div", "scaled", "s0,scale", "s1");
    Onnx__NodeProto *sm = ob_node(&b, "Softmax", "softmax", "s1", "p");
    ob_attr_i(&b, sm, "axis", -1);
    ob_node(&b, "MatMul", "context", "p,v3", "c0");
    Onnx__NodeProto *ct = ob_node(&b, "Transpose", "ctx_t", "c0", "c1");
    ob_attr_ints(&b, ct, "perm", 4, D(0, 2, 1, 3));
    ob_init_i64(&b, "shape_c", 3, (const int64_t[]){1, 8, 16});
    ob_node(&b, "Reshape", "ctx_r", "c1,shape_c", "c2");
    ob_node(&b, "Add", "residual", "c2,x", "h");
    init_rand(&b, "ln_s", 1, D(16), 1.0f);
    init_rand(&b, "ln_b", 1, D(16), 0.3f);
    Onnx__NodeProto *ln = ob_node(&b, "LayerNormalization", "ln", "h,ln_s,ln_b", "y");
    ob_attr_i(&b, ln, "axis", -1);
    ob_output(&b, "y");
    rlt_graph *g = load_folded(&b);
    rlt_net *n = compile_ok(g, 1, NULL);
    check_against_reference(n, g, 8);
    cr_expect_geq(task_index(n, "dense:M=8,N=16,K=16,bias=1,relu=0"), 0, "Q, K, V with the bias-first Add");
    cr_expect_geq(task_index(n, "batch_matmul:B=2,M=8,N=8,K=8"), 0);
    /* the views take no room: four Reshapes less than a copy each would */
    int64_t all = 0;
    for (int t = 0; t < g->n_tensors; t++)
        if (!g->tensors[t].data) all += (int64_t)bytes_of(&g->tensors[t]);
    cr_expect_lt(rlt_net_activation_bytes(n), all);
    rlt_net_destroy(n);
    rlt_graph_destroy(g);
}

/* ---- records --------------------------------------------------------------- */

static char db_dir[] = "/tmp/rlt_net_XXXXXX";

static void db_fini(void) { tmp_remove_tree(db_dir); }

/* Appends an OK record of `spec` on this machine's n_threads target with
 * schedule text `schedule` and configuration key `config`. */
static void record_add_at(rlt_db *db, int n_threads, const char *config, const char *spec, const char *schedule,
                          double ms)
{
    rlt_record r;
    memset(&r, 0, sizeof r);
    rlt_diag d = {0};
    rlt_build_opts build = {0};
    cr_assert_eq(rlt_session_target(&build, n_threads, &r.target, &d), RLT_STATUS_OK, "%s", d.message);
    snprintf(r.config, sizeof r.config, "%s", config);
    snprintf(r.spec, sizeof r.spec, "%s", spec);
    snprintf(r.schedule, sizeof r.schedule, "%s", schedule);
    snprintf(r.tuner, sizeof r.tuner, "test");
    r.status = RLT_STATUS_OK;
    r.time_min_ms = r.time_median_ms = ms;
    r.gflops = 1;
    cr_assert_eq(rlt_db_append(db, 1, &r, &d), RLT_STATUS_OK, "%s", d.message);
}

static void record_add(rlt_db *db, const char *spec, const char *schedule, double ms)
{
    record_add_at(db, 1, "", spec, schedule, ms);
}

Test(net, schedules_from_records, .fini = db_fini)
{
    rlt_graph *g = small_resnet();
    tmp_dir_make_in(db_dir);
    char path[256];
    snprintf(path, sizeof path, "%s/r.db", db_dir);
    rlt_db *db = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_db_open(path, NULL, &db, &d), RLT_STATUS_OK, "%s", d.message);
    const char *fused = "conv2d:N=1,C=8,H=10,W=10,K=8,R=3,S=3,stride=1,pad=1,dilation=1,epilogue=bias+relu";
    const char *base = "conv2d:N=1,C=16,H=5,W=5,K=16,R=3,S=3,stride=1,pad=1,dilation=1";
    record_add(db, fused, "# rltune schedule v1\nsplit k 4\nvectorize q\n", 0.5);
    record_add(db, fused, "# rltune schedule v1\nsplit k 2\n", 0.25); /* the best: taken */
    record_add(db, base, "# rltune schedule v1\nsplit k 8\nreorder n k.o p q c r s k.i\nvectorize k.i\n", 0.125);
    /* a record whose schedule does not apply (no loop z) is passed over */
    record_add(db, "dense:M=1,N=10,K=16,bias=1,relu=0", "# rltune schedule v1\nsplit z 2\n", 0.01);
    rlt_db_close(db);
    rlt_net *n = compile_ok(g, 1, path);
    check_against_reference(n, g, 5);
    rlt_net_task t;
    int i = task_index(n, fused);
    cr_assert_geq(i, 0);
    rlt_net_task_get(n, i, &t);
    cr_expect_eq(t.origin, RLT_NET_FROM_RECORD);
    cr_expect_eq(t.record_id, 2);
    cr_expect_float_eq(t.record_ms, 0.25, 1e-12);
    i = task_index(n, "conv2d:N=1,C=16,H=5,W=5,K=16,R=3,S=3,stride=1,pad=1,dilation=1,epilogue=bias");
    cr_assert_geq(i, 0);
    rlt_net_task_get(n, i, &t);
    cr_expect_eq(t.origin, RLT_NET_FROM_BASE_RECORD, "the op without its epilogue has the same loops");
    cr_expect_eq(t.record_id, 3, "record %lld", (long long)t.record_id);
    rlt_net_task_get(n, task_index(n, "dense:M=1,N=10,K=16,bias=1,relu=0"), &t);
    cr_expect_eq(t.origin, RLT_NET_FROM_SEED);
    rlt_net_destroy(n);

    /* another thread count is another target: the records are not used */
    n = compile_ok(g, 2, path);
    rlt_net_task_get(n, task_index(n, fused), &t);
    cr_expect_eq(t.origin, RLT_NET_FROM_SEED);
    rlt_net_destroy(n);

    /* at several threads a kernel clang built is passed over for the best
     * of the network's own compiler: one OpenMP runtime */
    cr_assert_eq(rlt_db_open(path, NULL, &db, &d), RLT_STATUS_OK, "%s", d.message);
    record_add_at(db, 2, "v1;vec=k*8;cc=clang", fused, "# rltune schedule v1\nsplit k 4\n", 0.1);
    record_add_at(db, 2, "v1;vec=k*8;cc=gcc", fused, "# rltune schedule v1\nsplit k 2\n", 0.2);
    rlt_db_close(db);
    cr_expect(rlt_net_takes_record("v1;vec=k*8;cc=clang", 1));
    cr_expect_not(rlt_net_takes_record("v1;vec=k*8;cc=clang", 2));
    cr_expect(rlt_net_takes_record("v1;vec=k*8;cc=gcc", 2));
    n = compile_ok(g, 2, path);
    check_against_reference(n, g, 5);
    rlt_net_task_get(n, task_index(n, fused), &t);
    cr_expect_eq(t.origin, RLT_NET_FROM_RECORD);
    cr_expect_eq(t.record_id, 6, "record %lld", (long long)t.record_id);
    rlt_net_destroy(n);
    rlt_graph_destroy(g);
}

/* Pads on activations (no fast op: the reference evaluator runs them),
 * reflect before a Conv and constant with a value on a graph output. */
Test(net, pad_on_activations)
{
    onnx_build b;
    rng_state = 13;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 3, 8, 8));
    conv(&b, "c1", "x", "a", 3, 4, 3, 1, 1, 1, true);
    ob_node(&b, "Relu", "r1", "a", "ar");
    ob_init_i64(&b, "pads", 8, D(0, 0, 1, 1, 0, 0, 1, 1));
    ob_attr_s(&b, ob_node(&b, "Pad", "pad", "ar,pads", "ap"), "mode", "reflect");
    conv(&b, "c2", "ap", "y", 4, 4, 3, 1, 0, 1, false);
    ob_init_i64(&b, "pads2", 8, D(0, 0, 0, 1, 0, 0, 2, 0));
    ob_init_f32(&b, "v", 0, NULL, (const float[]){0.25f});
    ob_node(&b, "Pad", "pad2", "y,pads2,v", "z");
    ob_output(&b, "z");
    rlt_graph *g = load_folded(&b);
    cr_expect(rlt_graph_can_eval("Pad"));
    rlt_net *n = compile_ok(g, 1, NULL);
    check_against_reference(n, g, 5);
    cr_expect_eq(count_steps(n, true), 2, "the Convs");
    cr_expect_eq(count_steps(n, false), 2, "the Pads");
    rlt_net_destroy(n);
    rlt_graph_destroy(g);
}

/* ---- errors ------------------------------------------------------------------ */

Test(net, errors)
{
    rlt_graph *g = small_resnet();
    rlt_net_options o;
    rlt_net_options_init(&o);
    rlt_net *n = NULL;
    rlt_diag d = {0};
    o.n_threads = 0;
    cr_expect_eq(rlt_net_compile(g, &o, &n, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_expect_not_null(strstr(d.message, "thread count"), "%s", d.message);
    cr_expect_null(n);
    o.n_threads = 1;
    o.db_path = "/nonexistent/dir/r.db";
    d = (rlt_diag){0};
    cr_expect_neq(rlt_net_compile(g, &o, &n, &d), RLT_STATUS_OK);
    cr_expect_not_null(strstr(d.message, "/nonexistent/dir/r.db"), "%s", d.message);
    cr_expect_null(n);
    n = compile_ok(g, 1, NULL);
    d = (rlt_diag){0};
    cr_expect_eq(rlt_net_run_buffers(n, NULL, NULL, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_expect_not_null(strstr(d.message, "input 0 ('x') is NULL"), "%s", d.message);
    rlt_net_destroy(n);
    rlt_graph_destroy(g);
}
