/*
 * test_graph_tasks.c - the tasks of a network (rlt_graph_tasks_extract,
 * src/graph/tasks.c) and the public model API over them (rltune/model.h,
 * src/api/model.c). Models are built in C with tests/common/onnx_build.h:
 * a ResNet-style block Conv-BN-Relu-Conv-BN-Add-Relu, blocks repeated (one
 * task per distinct kernel and epilogue, weighted), a Gemm head, depthwise
 * and grouped convolutions, a Conv with asymmetric pads (not tunable, with
 * its reason), MatMul with batch dimensions, where fusion must stop; the
 * model handle's load, text, counts and lists, its errors, and allocation
 * failures at every point of an extraction; every model of the ONNX fuzz
 * corpus that loads. Every extraction checks that each live node is
 * covered once, by a task or among the other kernels.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/leaks.h"
#include "../common/onnx_build.h"
#include "../common/tmp.h"
#include "graph/graph.h"
#include "rltune/model.h"

#define D(...) ((int64_t[]){__VA_ARGS__})
#define ONNX_CORPUS RLTUNE_SOURCE_DIR "/tests/fuzz/corpus/onnx"

/* ---- helpers ---------------------------------------------------------------- */

/* Loads the model as rltune_model_load does: imported, BatchNormalizations
 * folded, dead code removed; frees the builder. */
static rlt_graph *load_folded(onnx_build *b)
{
    rlt_graph *g = NULL;
    rlt_diag d = {0};
    cr_assert_eq(ob_load_folded(b, &g, &d), RLT_STATUS_OK, "load failed: %s", d.message);
    ob_free(b);
    return g;
}

/* Extracts the tasks and checks that every live node is covered exactly
 * once: by a task (kernel or fused) or among the other kernels. */
static void extract_ok(const rlt_graph *g, rlt_graph_tasks *t)
{
    rlt_diag d = {0};
    cr_assert_eq(rlt_graph_tasks_extract(g, t, &d), RLT_STATUS_OK, "%s", d.message);
    int *seen = calloc((size_t)g->n_nodes + 1, sizeof *seen);
    cr_assert_not_null(seen);
    int n_live = 0, n_covered = 0;
    for (int n = 0; n < g->n_nodes; n++) n_live += !g->nodes[n].is_removed;
    for (int i = 0; i < t->n_tasks; i++) {
        cr_expect_geq(t->tasks[i].weight, 1);
        cr_expect_geq(t->tasks[i].n_nodes, t->tasks[i].weight);
        for (int k = 0; k < t->tasks[i].n_nodes; k++) {
            int n = t->tasks[i].nodes[k];
            cr_assert(n >= 0 && n < g->n_nodes && !g->nodes[n].is_removed);
            cr_expect_eq(seen[n]++, 0, "node %d in two tasks", n);
        }
        n_covered += t->tasks[i].n_nodes;
    }
    for (int i = 0; i < t->n_others; i++) n_covered += t->others[i].count;
    cr_expect_eq(n_covered, n_live, "%d nodes covered, %d live", n_covered, n_live);
    free(seen);
}

/* The canonical spec of base op `spec` with epilogue `epi` ("bias,relu"),
 * as the op library writes it: what a task's spec must be. */
static void fused_spec(const char *spec, const char *epi, char *out, size_t cap)
{
    char text[600];
    size_t n = (size_t)snprintf(text, sizeof text, "%s%s", spec, epi[0] ? ",epilogue=" : "");
    for (const char *c = epi; *c && n + 1 < sizeof text; c++) text[n++] = *c == ',' ? '+' : *c;
    text[n] = '\0';
    rlt_op *op = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_op_parse(text, &op, &d), RLT_STATUS_OK, "%s: %s", text, d.message);
    snprintf(out, cap, "%s", rlt_op_spec(op));
    rlt_op_destroy(op);
}

/* The task of base op `spec` fused with epilogue `epi`, or NULL. */
static const rlt_graph_task *task_find(const rlt_graph_tasks *t, const char *spec, const char *epi)
{
    char fused[600];
    fused_spec(spec, epi, fused, sizeof fused);
    for (int i = 0; i < t->n_tasks; i++)
        if (strcmp(t->tasks[i].spec, fused) == 0 && strcmp(t->tasks[i].epilogue, epi) == 0) return &t->tasks[i];
    return NULL;
}

static const rlt_graph_task *task_expect(const rlt_graph_tasks *t, const char *spec, const char *epi, int weight)
{
    const rlt_graph_task *k = task_find(t, spec, epi);
    if (!k) {
        for (int i = 0; i < t->n_tasks; i++)
            fprintf(stderr, "  have: %s [%s] x%d\n", t->tasks[i].spec, t->tasks[i].epilogue, t->tasks[i].weight);
        cr_assert_fail("no task %s [%s]", spec, epi);
    }
    cr_expect_eq(k->weight, weight, "%s [%s]: weight %d, want %d", spec, epi, k->weight, weight);
    return k;
}

/* The other kernel of this op type (the first with a reason containing
 * `reason`; "" matches an empty reason only), or NULL. */
static const rlt_graph_other *other_find(const rlt_graph_tasks *t, const char *op_type, const char *reason)
{
    for (int i = 0; i < t->n_others; i++) {
        const rlt_graph_other *o = &t->others[i];
        if (strcmp(o->op_type, op_type) != 0) continue;
        if (reason[0] ? strstr(o->reason, reason) != NULL : o->reason[0] == '\0') return o;
    }
    return NULL;
}

/* The node labels of a task, joined by commas. */
static void task_nodes(const rlt_graph *g, const rlt_graph_task *k, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < k->n_nodes && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? "," : "", rlt_graph_node_label(g, k->nodes[i]));
}

#define CONV16 "conv2d:N=1,C=16,H=8,W=8,K=16,R=3,S=3,stride=1,pad=1,dilation=1"
#define CONV16_FLOPS (2.0 * 16 * 8 * 8 * 16 * 3 * 3)

/* ---- convolutions ------------------------------------------------------------- */

Test(graph_tasks, resnet_block)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 16, 8, 8));
    ob_resnet_block(&b, "blk", "x", 16);
    ob_output(&b, "blk_out");
    rlt_graph *g = load_folded(&b);
    rlt_graph_tasks t;
    extract_ok(g, &t);
    cr_expect_eq(t.n_tasks, 2);
    cr_expect_eq(t.n_others, 0, "others: %d (%s)", t.n_others, t.n_others ? t.others[0].op_type : "");
    const rlt_graph_task *k1 = task_expect(&t, CONV16, "bias,relu", 1);
    const rlt_graph_task *k2 = task_expect(&t, CONV16, "bias,add,relu", 1);
    cr_expect_float_eq(k1->flops, CONV16_FLOPS + 2.0 * 16 * 8 * 8, 1e-9); /* + bias and relu per output */
    char names[256];
    task_nodes(g, k1, names, sizeof names);
    cr_expect_str_eq(names, "blk_conv1,blk_relu1");
    task_nodes(g, k2, names, sizeof names);
    cr_expect_str_eq(names, "blk_conv2,blk_add,blk_relu2");
    cr_expect_eq(&t.tasks[0], k1, "tasks come in graph order");
    rlt_graph_tasks_free(&t);
    rlt_graph_destroy(g);
    assert_no_leaks();
}

/* The block a blocked extraction gave tensor `name`. */
static int block_of(const rlt_graph *g, const rlt_graph_tasks *t, const char *name)
{
    int i = rlt_graph_tensor_find(g, name);
    cr_assert_geq(i, 0, "no tensor %s", name);
    cr_assert_not_null(t->tensor_block);
    return t->tensor_block[i];
}

/* Each of the n tensors named has channel block `block` in t's layouts. */
static void expect_blocks(const rlt_graph *g, const rlt_graph_tasks *t, const char *const *names, size_t n, int block)
{
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(block_of(g, t, names[i]), block, "%s: block %d expected", names[i], block);
}

/* Blocked layouts (block 8): the stem reads the NCHW input and writes
 * blocks; MaxPool, the residual block, a fire-style Concat and an unfused
 * Relu and Add keep them; GlobalAveragePool reads them; a conv whose K is
 * no multiple of 8, the graph's outputs and their kernels stay NCHW. */
Test(graph_tasks, blocked_layouts)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 3, 8, 8));
    ob_conv(&b, "stem", "x", "s0", 3, 16, 3, 1, 1, 1, true);
    ob_node(&b, "Relu", "stem_relu", "s0", "s");
    Onnx__NodeProto *mp = ob_node(&b, "MaxPool", "pool", "s", "p");
    ob_attr_ints(&b, mp, "kernel_shape", 2, D(3, 3));
    ob_attr_ints(&b, mp, "pads", 4, D(1, 1, 1, 1));
    ob_resnet_block(&b, "blk", "p", 16);
    ob_conv(&b, "fa", "blk_out", "a", 16, 8, 1, 1, 0, 1, true);
    ob_conv(&b, "fb", "blk_out", "c8", 16, 8, 3, 1, 1, 1, true);
    ob_node(&b, "Relu", "fb_relu", "c8", "bb"); /* fused into fb */
    ob_attr_i(&b, ob_node(&b, "Concat", "fire", "a,bb", "c"), "axis", 1);
    ob_node(&b, "Add", "sum", "c,blk_out", "e");      /* both computed before: an Add of its own */
    ob_node(&b, "Sigmoid", "sig", "e", "f");
    ob_conv(&b, "odd", "f", "o12", 16, 12, 1, 1, 0, 1, false);
    ob_conv(&b, "last", "f", "y", 16, 16, 3, 1, 1, 1, false);
    ob_node(&b, "GlobalAveragePool", "gap", "f", "g");
    ob_output(&b, "o12");
    ob_output(&b, "y");
    ob_output(&b, "g");
    rlt_graph *g = load_folded(&b);
    rlt_graph_tasks t;
    rlt_diag d = {0};
    cr_assert_eq(rlt_graph_tasks_extract_blocked(g, 8, &t, &d), RLT_STATUS_OK, "%s", d.message);
    cr_expect_eq(t.block, 8);
    const char *blocked[] = {"s", "p", "blk_out", "a", "bb", "c", "e", "f"};
    expect_blocks(g, &t, blocked, RLT_ARRAY_LEN(blocked), 8);
    const char *plain[] = {"x", "o12", "y", "g"};
    expect_blocks(g, &t, plain, RLT_ARRAY_LEN(plain), 0);
    task_expect(&t, "conv2d:N=1,C=3,H=8,W=8,K=16,R=3,S=3,pad=1,oblock=8", "bias,relu", 1);
    task_expect(&t, "conv2d:N=1,C=16,H=8,W=8,K=16,R=3,S=3,pad=1,iblock=8,oblock=8", "bias,relu", 1);
    task_expect(&t, "conv2d:N=1,C=16,H=8,W=8,K=16,R=3,S=3,pad=1,iblock=8,oblock=8", "bias,add,relu", 1);
    task_expect(&t, "conv2d:N=1,C=16,H=1,W=64,K=8,R=1,S=1,iblock=8,oblock=8", "bias", 1);
    task_expect(&t, "conv2d:N=1,C=16,H=1,W=64,K=12,R=1,S=1,iblock=8", "", 1);
    task_expect(&t, "conv2d:N=1,C=16,H=8,W=8,K=16,R=3,S=3,pad=1,iblock=8", "", 1);
    rlt_graph_tasks_free(&t);
    /* block 0: NCHW throughout, as rlt_graph_tasks_extract */
    cr_assert_eq(rlt_graph_tasks_extract_blocked(g, 0, &t, &d), RLT_STATUS_OK);
    cr_expect_null(t.tensor_block);
    task_expect(&t, "conv2d:N=1,C=3,H=8,W=8,K=16,R=3,S=3,pad=1", "bias,relu", 1);
    rlt_graph_tasks_free(&t);
    rlt_graph_destroy(g);
    assert_no_leaks();
}

/* What keeps a tensor NCHW, and every tensor that must share its layout
 * with it: a reader with no blocked form (Transpose), a Concat part whose
 * channels are no multiple of the block, a residual that is a graph
 * input. */
Test(graph_tasks, blocked_layouts_stay_nchw)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 16, 4, 4));
    ob_conv(&b, "c1", "x", "t1", 16, 16, 1, 1, 0, 1, false);
    ob_attr_ints(&b, ob_node(&b, "Transpose", "tr", "t1", "t1t"), "perm", 4, D(0, 2, 3, 1));
    ob_conv(&b, "c2", "t1", "t2", 16, 16, 1, 1, 0, 1, false);
    ob_conv(&b, "c3", "t1", "t3", 16, 4, 1, 1, 0, 1, false);
    ob_attr_i(&b, ob_node(&b, "Concat", "cat", "t2,t3", "t4"), "axis", 1);
    ob_conv(&b, "c4", "t4", "t5", 20, 16, 1, 1, 0, 1, false);
    ob_conv(&b, "c5", "t5", "t6", 16, 16, 1, 1, 0, 1, false);
    ob_node(&b, "Add", "res", "t6,x", "t7");
    ob_node(&b, "Relu", "r", "t7", "t8");
    ob_conv(&b, "c6", "t8", "y", 16, 16, 1, 1, 0, 1, false);
    ob_output(&b, "t1t");
    ob_output(&b, "y");
    rlt_graph *g = load_folded(&b);
    rlt_graph_tasks t;
    rlt_diag d = {0};
    cr_assert_eq(rlt_graph_tasks_extract_blocked(g, 16, &t, &d), RLT_STATUS_OK, "%s", d.message);
    const char *plain[] = {"t1", "t2", "t3", "t4", "t8"};
    expect_blocks(g, &t, plain, RLT_ARRAY_LEN(plain), 0);
    cr_expect_eq(block_of(g, &t, "t5"), 16);
    task_expect(&t, "conv2d:N=1,C=20,H=1,W=16,K=16,R=1,S=1,oblock=16", "", 1);
    task_expect(&t, "conv2d:N=1,C=16,H=1,W=16,K=16,R=1,S=1,iblock=16", "add,relu", 1);
    rlt_graph_tasks_free(&t);
    rlt_graph_destroy(g);
    assert_no_leaks();
}

Test(graph_tasks, repeated_blocks_dedup_and_weights)
{
    /* stem 3 -> 16, three blocks, a strided conv 16 -> 32, one more block
     * at 32 channels (4x4): the three blocks share two tasks */
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 3, 8, 8));
    ob_conv(&b, "stem", "x", "s0", 3, 16, 3, 1, 1, 1, true);
    ob_node(&b, "Relu", "stem_relu", "s0", "s1");
    ob_resnet_block(&b, "a", "s1", 16);
    ob_resnet_block(&b, "b", "a_out", 16);
    ob_resnet_block(&b, "c", "b_out", 16);
    ob_conv(&b, "down", "c_out", "d0", 16, 32, 3, 2, 1, 1, false);
    ob_batchnorm(&b, "down_bn", "d0", "d1", 32);
    ob_node(&b, "Relu", "down_relu", "d1", "d2");
    ob_resnet_block(&b, "d", "d2", 32);
    ob_output(&b, "d_out");
    rlt_graph *g = load_folded(&b);
    rlt_graph_tasks t;
    extract_ok(g, &t);
    cr_expect_eq(t.n_tasks, 6);
    cr_expect_eq(t.n_others, 0);
    const rlt_graph_task *stem =
        task_expect(&t, "conv2d:N=1,C=3,H=8,W=8,K=16,R=3,S=3,stride=1,pad=1,dilation=1", "bias,relu", 1);
    cr_expect_float_eq(stem->flops, 2.0 * 16 * 8 * 8 * 3 * 9 + 2.0 * 16 * 8 * 8, 1e-9);
    const rlt_graph_task *k1 = task_expect(&t, CONV16, "bias,relu", 3);
    const rlt_graph_task *k2 = task_expect(&t, CONV16, "bias,add,relu", 3);
    task_expect(&t, "conv2d:N=1,C=16,H=8,W=8,K=32,R=3,S=3,stride=2,pad=1,dilation=1", "bias,relu", 1);
    const rlt_graph_task *k4 = task_expect(&t, "conv2d:N=1,C=32,H=4,W=4,K=32,R=3,S=3,stride=1,pad=1,dilation=1",
                                           "bias,relu", 1);
    cr_expect_float_eq(k4->flops, 2.0 * 32 * 4 * 4 * 32 * 9 + 2.0 * 32 * 4 * 4, 1e-9);
    char names[512];
    task_nodes(g, k1, names, sizeof names);
    cr_expect_str_eq(names, "a_conv1,a_relu1,b_conv1,b_relu1,c_conv1,c_relu1");
    task_nodes(g, k2, names, sizeof names);
    cr_expect_str_eq(names, "a_conv2,a_add,a_relu2,b_conv2,b_add,b_relu2,c_conv2,c_add,c_relu2");
    task_nodes(g, k4, names, sizeof names);
    cr_expect_str_eq(names, "d_conv1,d_relu1");
    /* the 32-channel block's second conv has its residual */
    task_expect(&t, "conv2d:N=1,C=32,H=4,W=4,K=32,R=3,S=3,stride=1,pad=1,dilation=1", "bias,add,relu", 1);
    rlt_graph_tasks_free(&t);
    rlt_graph_destroy(g);
}

Test(graph_tasks, depthwise_and_grouped)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 8, 10, 10));
    ob_conv(&b, "dw", "x", "y0", 8, 8, 3, 2, 1, 8, true);
    ob_init_f32(&b, "lo", 0, NULL, (const float[]){0.0f});
    ob_init_f32(&b, "hi", 0, NULL, (const float[]){6.0f});
    ob_node(&b, "Clip", "dw_clip", "y0,lo,hi", "y1");
    ob_conv(&b, "dw2", "y1", "y2", 8, 8, 3, 1, 1, 8, false);  /* no bias: "relu6" alone */
    ob_node(&b, "Clip", "dw2_clip", "y2,lo,hi", "y3");
    ob_conv(&b, "grp", "y3", "y4", 8, 8, 3, 1, 1, 2, false);   /* group 2 of 8: not tunable */
    ob_conv(&b, "mult", "y4", "y5", 8, 16, 3, 1, 1, 8, false); /* channel multiplier 2: not tunable */
    ob_node(&b, "Relu", "mult_relu", "y5", "y6");
    ob_output(&b, "y6");
    rlt_graph *g = load_folded(&b);
    rlt_graph_tasks t;
    extract_ok(g, &t);
    cr_expect_eq(t.n_tasks, 2);
    const rlt_graph_task *dw =
        task_expect(&t, "depthwise_conv2d:N=1,C=8,H=10,W=10,R=3,S=3,stride=2,pad=1,dilation=1", "bias,relu6", 1);
    cr_expect_float_eq(dw->flops, 2.0 * 8 * 5 * 5 * 9 + 3.0 * 8 * 5 * 5, 1e-9); /* bias, relu, min */
    task_expect(&t, "depthwise_conv2d:N=1,C=8,H=5,W=5,R=3,S=3,stride=1,pad=1,dilation=1", "relu6", 1);
    const rlt_graph_other *grp = other_find(&t, "Conv", "grouped convolution (group=2, 8 to 8 channels)");
    cr_assert_not_null(grp);
    cr_expect_eq(grp->count, 1);
    cr_expect_str_eq(rlt_graph_node_label(g, grp->first_node), "grp");
    const rlt_graph_other *mult = other_find(&t, "Conv", "group=8, 8 to 16 channels");
    cr_assert_not_null(mult);
    cr_expect_not_null(other_find(&t, "Relu", ""), "the Relu after an untuned Conv is another kernel");
    cr_expect_eq(t.n_others, 3);
    rlt_graph_tasks_free(&t);
    rlt_graph_destroy(g);
}

Test(graph_tasks, not_tunable_convs_with_reasons)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 4, 9, 9));
    Onnx__NodeProto *n = ob_node(&b, "Conv", "asym", "x,w", "y0");
    ob_init_f32(&b, "w", 4, D(4, 4, 3, 3), NULL);
    ob_attr_ints(&b, n, "pads", 4, D(0, 0, 1, 1));
    ob_node(&b, "Relu", "asym_relu", "y0", "y1");
    n = ob_node(&b, "Conv", "asym2", "y1,w", "y2");
    ob_attr_ints(&b, n, "pads", 4, D(0, 0, 1, 1));
    n = ob_node(&b, "Conv", "strided", "y2,w", "y3");
    ob_attr_ints(&b, n, "strides", 2, D(1, 2));
    n = ob_node(&b, "Conv", "same", "y3,w", "y4"); /* SAME_UPPER, stride 1, odd kernel: symmetric */
    ob_attr_s(&b, n, "auto_pad", "SAME_UPPER");
    ob_output(&b, "y4");
    rlt_graph *g = load_folded(&b);
    rlt_graph_tasks t;
    extract_ok(g, &t);
    cr_expect_eq(t.n_tasks, 1);
    task_expect(&t, "conv2d:N=1,C=4,H=5,W=3,K=4,R=3,S=3,stride=1,pad=1,dilation=1", "", 1);
    const rlt_graph_other *asym = other_find(&t, "Conv", "asymmetric pads [0,0,1,1]");
    cr_assert_not_null(asym);
    cr_expect_eq(asym->count, 2, "two Convs, one reason: one entry");
    cr_expect_str_eq(rlt_graph_node_label(g, asym->first_node), "asym");
    cr_expect_not_null(other_find(&t, "Conv", "unequal strides [1,2]"));
    cr_expect_not_null(other_find(&t, "Relu", ""));
    cr_expect_eq(t.n_others, 3);
    rlt_graph_tasks_free(&t);
    rlt_graph_destroy(g);

    /* a 1-D convolution */
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 3, D(1, 4, 9));
    ob_init_f32(&b, "w", 3, D(4, 4, 3), NULL);
    ob_node(&b, "Conv", "c1d", "x,w", "y");
    ob_output(&b, "y");
    g = load_folded(&b);
    extract_ok(g, &t);
    cr_expect_eq(t.n_tasks, 0);
    cr_expect_eq(t.n_others, 1);
    cr_expect_not_null(other_find(&t, "Conv", "1-D convolution"));
    rlt_graph_tasks_free(&t);
    rlt_graph_destroy(g);
}

/* ---- Gemm and MatMul -------------------------------------------------------------- */

Test(graph_tasks, gemm_head)
{
    /* conv, global pool, flatten, Gemm (transB) + Relu, Gemm (B as [K,N]), softmax */
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(2, 8, 4, 4));
    ob_conv(&b, "conv", "x", "c", 8, 16, 1, 1, 0, 1, true);
    ob_node(&b, "GlobalAveragePool", "gap", "c", "p");
    ob_node(&b, "Flatten", "flat", "p", "f");
    ob_init_f32(&b, "fc1_w", 2, D(32, 16), NULL);
    ob_init_f32(&b, "fc1_b", 1, D(32), NULL);
    Onnx__NodeProto *n = ob_node(&b, "Gemm", "fc1", "f,fc1_w,fc1_b", "h0");
    ob_attr_i(&b, n, "transB", 1);
    ob_node(&b, "Relu", "fc1_relu", "h0", "h1");
    ob_init_f32(&b, "fc2_w", 2, D(32, 10), NULL);
    ob_init_f32(&b, "fc2_b", 2, D(1, 10), NULL);
    ob_node(&b, "Gemm", "fc2", "h1,fc2_w,fc2_b", "z");
    ob_node(&b, "Softmax", "sm", "z", "prob");
    ob_output(&b, "prob");
    rlt_graph *g = load_folded(&b);
    rlt_graph_tasks t;
    extract_ok(g, &t);
    cr_expect_eq(t.n_tasks, 3);
    task_expect(&t, "conv2d:N=2,C=8,H=1,W=16,K=16,R=1,S=1,stride=1,pad=0,dilation=1", "bias", 1);
    const rlt_graph_task *fc1 = task_expect(&t, "dense:M=2,N=32,K=16,bias=0,relu=0", "bias,relu", 1);
    cr_expect_float_eq(fc1->flops, 2.0 * 2 * 32 * 16 + 2.0 * 2 * 32, 1e-9);
    task_expect(&t, "dense:M=2,N=10,K=32,bias=0,relu=0", "bias", 1);
    cr_expect_eq(t.n_others, 3);
    cr_expect_not_null(other_find(&t, "GlobalAveragePool", ""));
    cr_expect_not_null(other_find(&t, "Flatten", ""));
    cr_expect_not_null(other_find(&t, "Softmax", ""));
    rlt_graph_tasks_free(&t);
    rlt_graph_destroy(g);
}

Test(graph_tasks, gemm_variants)
{
    /* computed B: matmul; transA: not tunable; a full-shaped C: add */
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "a", OB_F32, 2, D(4, 6));
    ob_input(&b, "bm", OB_F32, 2, D(6, 5));
    ob_input(&b, "r", OB_F32, 2, D(4, 5));
    ob_node(&b, "Gemm", "g1", "a,bm,r", "y1");
    ob_init_f32(&b, "w", 2, D(4, 5), NULL);
    Onnx__NodeProto *n = ob_node(&b, "Gemm", "g2", "a,w", "y2");
    ob_attr_i(&b, n, "transA", 1);
    ob_attr_f(&b, n, "alpha", 0.5f);
    ob_output(&b, "y1");
    ob_output(&b, "y2");
    rlt_graph *g = load_folded(&b);
    rlt_graph_tasks t;
    extract_ok(g, &t);
    cr_expect_eq(t.n_tasks, 1);
    task_expect(&t, "matmul:M=4,N=5,K=6", "add", 1);
    cr_expect_not_null(other_find(&t, "Gemm", "transA=1"));
    rlt_graph_tasks_free(&t);
    rlt_graph_destroy(g);
}

Test(graph_tasks, matmul_batch_dims)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "q", OB_F32, 4, D(2, 3, 4, 5));
    ob_input(&b, "k", OB_F32, 4, D(2, 3, 5, 6));
    ob_node(&b, "MatMul", "bmm", "q,k", "s");                /* batch_matmul B=6 */
    ob_input(&b, "x", OB_F32, 3, D(1, 8, 16));
    ob_init_f32(&b, "w", 2, D(16, 32), NULL);
    ob_init_f32(&b, "bias", 1, D(32), NULL);
    ob_node(&b, "MatMul", "proj", "x,w", "p0");              /* dense, A's batch folded into M */
    ob_node(&b, "Add", "proj_bias", "p0,bias", "p1");
    ob_node(&b, "Sigmoid", "proj_act", "p1", "p2");
    ob_input(&b, "u", OB_F32, 3, D(1, 4, 5));
    ob_input(&b, "v", OB_F32, 3, D(3, 5, 6));
    ob_node(&b, "MatMul", "bcast", "u,v", "uv");             /* A broadcast over the batch */
    ob_input(&b, "e", OB_F32, 3, D(1, 4, 5));
    ob_input(&b, "f", OB_F32, 3, D(1, 5, 6));
    ob_node(&b, "MatMul", "one", "e,f", "ef");               /* a batch of one: matmul */
    ob_input(&b, "vec", OB_F32, 1, D(5));
    ob_node(&b, "MatMul", "vecmat", "vec,f", "vf");          /* 1-D A promoted, batch 1 */
    ob_output(&b, "s");
    ob_output(&b, "p2");
    ob_output(&b, "uv");
    ob_output(&b, "ef");
    ob_output(&b, "vf");
    rlt_graph *g = load_folded(&b);
    rlt_graph_tasks t;
    extract_ok(g, &t);
    const rlt_graph_task *bmm = task_expect(&t, "batch_matmul:B=6,M=4,N=6,K=5", "", 1);
    cr_expect_float_eq(bmm->flops, 2.0 * 6 * 4 * 6 * 5, 1e-9);
    /* sigmoid does not fuse (the kernel IR has no exp): the chain ends before it */
    const rlt_graph_task *proj = task_expect(&t, "dense:M=8,N=32,K=16,bias=0,relu=0", "bias", 1);
    cr_expect_str_eq(proj->spec, "dense:M=8,N=32,K=16,bias=1,relu=0"); /* dense says bias with its own key */
    char names[256];
    task_nodes(g, proj, names, sizeof names);
    cr_expect_str_eq(names, "proj,proj_bias");
    task_expect(&t, "matmul:M=4,N=6,K=5", "", 1);
    task_expect(&t, "matmul:M=1,N=6,K=5", "", 1);
    cr_expect_eq(t.n_tasks, 4);
    cr_expect_eq(other_find(&t, "Sigmoid", "")->count, 1);
    const rlt_graph_other *bc = other_find(&t, "MatMul", "batch dimensions [1] of A and [3] of B broadcast");
    cr_expect_not_null(bc);
    cr_expect_eq(t.n_others, 2);
    rlt_graph_tasks_free(&t);
    rlt_graph_destroy(g);
}

/* ---- where fusion stops --------------------------------------------------------- */

Test(graph_tasks, fusion_stops)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 4, 6, 6));
    /* c1's output is read twice: nothing fuses into it */
    ob_conv(&b, "c1", "x", "a", 4, 4, 3, 1, 1, 1, false);
    ob_node(&b, "Relu", "r1", "a", "a1");
    ob_node(&b, "Sigmoid", "s1", "a", "a2");
    /* two parallel convs meet in an Add: the later one takes it */
    ob_conv(&b, "c2", "a1", "b2", 4, 4, 1, 1, 0, 1, false);
    ob_conv(&b, "c3", "a2", "b3", 4, 4, 1, 1, 0, 1, false);
    ob_node(&b, "Add", "join", "b2,b3", "j");
    /* a relu then a constant per-channel Add: the Add is no bias after relu */
    ob_node(&b, "Relu", "jr", "j", "j1");
    ob_init_f32(&b, "pc", 3, D(4, 1, 1), NULL);
    ob_node(&b, "Add", "late_bias", "j1,pc", "j2");
    /* Clip(0, 1) does not fuse; a graph output stops the chain */
    ob_conv(&b, "c4", "j2", "k", 4, 4, 1, 1, 0, 1, false);
    ob_init_f32(&b, "lo", 0, NULL, (const float[]){0.0f});
    ob_init_f32(&b, "one", 0, NULL, (const float[]){1.0f});
    ob_node(&b, "Clip", "clip01", "k,lo,one", "k1");
    ob_conv(&b, "c5", "k1", "m", 4, 4, 1, 1, 0, 1, false);
    ob_node(&b, "Relu", "m_relu", "m", "m1");
    ob_output(&b, "m");
    ob_output(&b, "m1");
    rlt_graph *g = load_folded(&b);
    rlt_graph_tasks t;
    extract_ok(g, &t);
    const char *c3x3 = "conv2d:N=1,C=4,H=6,W=6,K=4,R=3,S=3,stride=1,pad=1,dilation=1";
    const char *c1x1 = "conv2d:N=1,C=4,H=1,W=36,K=4,R=1,S=1,stride=1,pad=0,dilation=1";
    task_expect(&t, c3x3, "", 1);
    const rlt_graph_task *plain = task_expect(&t, c1x1, "", 3); /* c2, c4, c5 */
    const rlt_graph_task *joined = task_expect(&t, c1x1, "add,relu", 1);
    char names[256];
    task_nodes(g, joined, names, sizeof names);
    cr_expect_str_eq(names, "c3,join,jr");
    task_nodes(g, plain, names, sizeof names);
    cr_expect_str_eq(names, "c2,c4,c5");
    cr_expect_eq(t.n_tasks, 3);
    cr_expect_eq(other_find(&t, "Relu", "")->count, 2); /* r1, m_relu */
    cr_expect_eq(other_find(&t, "Sigmoid", "")->count, 1);
    cr_expect_eq(other_find(&t, "Add", "")->count, 1);  /* late_bias */
    cr_expect_eq(other_find(&t, "Clip", "")->count, 1);
    rlt_graph_tasks_free(&t);
    rlt_graph_destroy(g);
}

Test(graph_tasks, allocation_failures)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 16, 8, 8));
    ob_resnet_block(&b, "a", "x", 16);
    ob_resnet_block(&b, "b", "a_out", 16);
    ob_node(&b, "GlobalAveragePool", "gap", "b_out", "p");
    ob_output(&b, "p");
    rlt_graph *g = load_folded(&b);
    rlt_graph_tasks want;
    extract_ok(g, &want);
    bool done = false;
    for (long k = 1; k < 400 && !done; k++) {
        rlt_graph_tasks t = {.n_tasks = -7};
        rlt_diag d = {0};
        rlt_alloc_fail_after(k);
        rlt_status st = rlt_graph_tasks_extract(g, &t, &d);
        rlt_alloc_fail_after(0);
        if (st == RLT_STATUS_OK) {
            done = true;
            cr_expect_eq(t.n_tasks, want.n_tasks);
            cr_expect_eq(t.n_others, want.n_others);
            rlt_graph_tasks_free(&t);
        } else {
            cr_expect_eq(st, RLT_STATUS_OUT_OF_MEMORY, "%s", d.message);
            cr_expect_eq(t.n_tasks, -7, "out is untouched on failure");
        }
    }
    cr_expect(done, "never extracted with enough allocations");
    rlt_graph_tasks_free(&want);
    rlt_graph_destroy(g);
    assert_no_leaks();
}

Test(graph_tasks, fuzz_corpus)
{
    /* every corpus model that loads gives its tasks, every node counted once */
    DIR *dp = opendir(ONNX_CORPUS);
    cr_assert_not_null(dp, "cannot open %s", ONNX_CORPUS);
    int n_models = 0;
    struct dirent *e;
    while ((e = readdir(dp)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", ONNX_CORPUS, e->d_name);
        rlt_graph *g = NULL;
        rlt_diag d = {0};
        if (rlt_graph_load_onnx(path, &g, &d) != RLT_STATUS_OK) continue;
        cr_assert_geq(rlt_graph_fold_batchnorm(g, &d), 0, "%s: %s", e->d_name, d.message);
        cr_assert_geq(rlt_graph_dce(g), 0);
        rlt_graph_tasks t;
        extract_ok(g, &t);
        rlt_graph_tasks_free(&t);
        rlt_graph_destroy(g);
        n_models++;
    }
    closedir(dp);
    cr_expect_gt(n_models, 0);
}

/* ---- the public model API ------------------------------------------------------- */

static char model_dir_templ[] = "/tmp/rlt_tasks_XXXXXX";

/* Writes the builder's model to DIR/name and frees the builder. */
static const char *model_write(onnx_build *b, const char *name)
{
    size_t len;
    uint8_t *buf = ob_pack(b, &len);
    const char *path = tmp_path_in(tmp_dir_use(model_dir_templ), name);
    tmp_file_write(path, buf, len);
    ob_free(b);
    return path;
}

Test(model_api, load_tasks_and_others, .fini = tmp_dir_remove_used)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 16, 8, 8));
    ob_resnet_block(&b, "a", "x", 16);
    ob_resnet_block(&b, "b", "a_out", 16);
    ob_node(&b, "MaxPool", "pool", "b_out", "p");
    ob_attr_ints(&b, b.graph.node[b.graph.n_node - 1], "kernel_shape", 2, D(2, 2));
    ob_output(&b, "p");
    char path[512];
    snprintf(path, sizeof path, "%s", model_write(&b, "m.onnx"));

    rlt_model *m = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_model_load(path, &m, &d), RLT_STATUS_OK, "%s", d.message);
    cr_expect_eq(rlt_model_opset(m), 13);
    cr_expect_eq(rlt_model_n_inputs(m), 1);
    cr_expect_eq(rlt_model_n_outputs(m), 1);
    cr_expect_eq(rlt_model_n_nodes(m), 11, "BatchNormalizations folded: 4 Conv, 4 Relu, 2 Add, 1 MaxPool");
    cr_expect_str_empty(rlt_model_last_error(m));
    char *text = rlt_model_text(m);
    cr_assert_not_null(text);
    cr_expect_not_null(strstr(text, "graph opset 13: 1 input, 1 output, 11 nodes"), "%s", text);
    cr_expect_null(strstr(text, "BatchNormalization"), "%s", text);
    rlt_free(text);

    rlt_task *tasks = NULL;
    int n = 0;
    cr_assert_eq(rlt_model_tasks(m, &tasks, &n, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(n, 2);
    cr_expect_str_eq(tasks[0].spec, CONV16 ",epilogue=bias+relu");
    cr_expect_str_eq(tasks[0].epilogue, "bias,relu");
    cr_expect_eq(tasks[0].weight, 2);
    cr_expect_float_eq(tasks[0].flops, CONV16_FLOPS + 2.0 * 16 * 8 * 8, 1e-9, "the epilogue's add and relu count");
    cr_assert_eq(tasks[0].n_nodes, 4);
    cr_expect_str_eq(tasks[0].nodes[0], "a_conv1");
    cr_expect_str_eq(tasks[0].nodes[3], "b_relu1");
    cr_expect_str_eq(tasks[1].epilogue, "bias,add,relu");
    cr_assert_eq(tasks[1].n_nodes, 6);
    cr_expect_str_eq(tasks[1].nodes[5], "b_relu2");
    rlt_free(tasks);

    rlt_other_kernel *others = NULL;
    cr_assert_eq(rlt_model_other_kernels(m, &others, &n, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(n, 1);
    cr_expect_str_eq(others[0].op_type, "MaxPool");
    cr_expect_eq(others[0].count, 1);
    cr_expect_str_empty(others[0].reason);
    cr_expect_str_eq(others[0].first_node, "pool");
    rlt_free(others);
    rlt_model_destroy(m);
    rlt_model_destroy(NULL);
    assert_no_leaks();
}

Test(model_api, empty_lists_and_unnamed_nodes, .fini = tmp_dir_remove_used)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(3, 4));
    ob_node(&b, "Relu", "", "x", "y");
    ob_output(&b, "y");
    char path[512];
    snprintf(path, sizeof path, "%s", model_write(&b, "relu.onnx"));
    rlt_model *m = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_model_load(path, &m, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_task *tasks = (rlt_task *)1;
    int n = -1;
    cr_assert_eq(rlt_model_tasks(m, &tasks, &n, &d), RLT_STATUS_OK);
    cr_expect_eq(n, 0);
    cr_expect_null(tasks);
    rlt_other_kernel *others = NULL;
    cr_assert_eq(rlt_model_other_kernels(m, &others, &n, &d), RLT_STATUS_OK);
    cr_assert_eq(n, 1);
    cr_expect_str_eq(others[0].first_node, "y", "an unnamed node goes by its output");
    rlt_free(others);
    rlt_model_destroy(m);
}

Test(model_api, load_errors, .fini = tmp_dir_remove_used)
{
    rlt_model *m = (rlt_model *)1;
    rlt_diag d = {0};
    cr_expect_eq(rlt_model_load("/nonexistent/m.onnx", &m, &d), RLT_STATUS_IO_ERROR);
    cr_expect_not_null(strstr(d.message, "/nonexistent/m.onnx"), "%s", d.message);
    cr_expect_eq(m, (rlt_model *)1, "*out untouched on failure");

    const char *path = tmp_path_in(tmp_dir_use(model_dir_templ), "text.onnx");
    tmp_file_write_text(path, "this is not a protobuf model\n");
    d = (rlt_diag){0};
    cr_expect_eq(rlt_model_load(path, &m, &d), RLT_STATUS_PARSE_ERROR, "%s", d.message);
    cr_expect_not_null(strstr(d.message, "text.onnx"), "%s", d.message);

    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(3, 4));
    ob_node(&b, "NonMaxSuppression", "nms", "x", "y");
    ob_output(&b, "y");
    path = model_write(&b, "nms.onnx");
    d = (rlt_diag){0};
    cr_expect_eq(rlt_model_load(path, &m, &d), RLT_STATUS_INVALID_ARGUMENT, "%s", d.message);
    cr_expect_not_null(strstr(d.message, "NonMaxSuppression"), "%s", d.message);
    assert_no_leaks();
}

Test(model_api, allocation_failures, .fini = tmp_dir_remove_used)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 16, 8, 8));
    ob_resnet_block(&b, "a", "x", 16);
    ob_output(&b, "a_out");
    char path[512];
    snprintf(path, sizeof path, "%s", model_write(&b, "m.onnx"));
    bool is_loaded = false, is_listed = false;
    for (long k = 1; k < 2000 && !is_listed; k++) {
        rlt_model *m = NULL;
        rlt_diag d = {0};
        rlt_alloc_fail_after(k);
        rlt_status st = rlt_model_load(path, &m, &d);
        rlt_task *tasks = NULL;
        rlt_other_kernel *others = NULL;
        int n_tasks = 0, n_others = 0;
        if (st != RLT_STATUS_OK) {
            /* the importer may see protobuf-c's failed allocation as a
             * truncated message: any status, with a message, nothing made */
            rlt_alloc_fail_after(0);
            cr_expect_null(m);
            cr_expect_neq(d.message[0], '\0');
            continue;
        }
        is_loaded = true;
        st = rlt_model_tasks(m, &tasks, &n_tasks, &d);
        if (st == RLT_STATUS_OK) st = rlt_model_other_kernels(m, &others, &n_others, &d);
        rlt_alloc_fail_after(0);
        if (st == RLT_STATUS_OK) {
            is_listed = true;
            cr_expect_eq(n_tasks, 2);
            cr_expect_eq(n_others, 0);
        } else {
            cr_expect_eq(st, RLT_STATUS_OUT_OF_MEMORY, "%s", d.message);
            cr_expect_str_eq(rlt_model_last_error(m), d.message);
        }
        rlt_free(tasks);
        rlt_free(others);
        rlt_model_destroy(m);
    }
    cr_expect(is_loaded && is_listed, "never listed with enough allocations");
    assert_no_leaks();
}
