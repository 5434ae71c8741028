/*
 * test_graph_eval.c - the graph's reference evaluation (rlt_graph_eval,
 * src/graph/eval.c) and BatchNormalization folding (rlt_graph_fold_batchnorm,
 * src/graph/fold.c). Models are built in C with tests/common/onnx_build.h
 * and loaded through the importer; each op's result is compared with
 * values worked out by hand or with a plain loop written here (never with
 * the evaluator's own helpers). Folding is checked by evaluating a model
 * before and after, over fixed and seeded random Conv+BN+Relu+Add chains;
 * allocation failures at every point must leave nothing behind.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../common/leaks.h"
#include "../common/onnx_build.h"
#include "graph/graph.h"

#define D(...) ((int64_t[]){__VA_ARGS__})
#define F(...) ((const float[]){__VA_ARGS__})
#define ONNX_CORPUS RLTUNE_SOURCE_DIR "/tests/fuzz/corpus/onnx"

/* ---- helpers ---------------------------------------------------------------- */

static rlt_graph *load_ok(onnx_build *b)
{
    rlt_graph *g = NULL;
    rlt_diag d = {0};
    rlt_status st = ob_load(b, &g, &d);
    cr_assert_eq(st, RLT_STATUS_OK, "load failed: %s", d.message);
    return g;
}

/* Evaluates g; outs[i] owned by the caller (rlt_free). */
static void eval_ok(const rlt_graph *g, const void *const *in, void **outs)
{
    rlt_diag d = {0};
    rlt_status st = rlt_graph_eval(g, g->n_inputs, in, g->n_outputs, outs, &d);
    cr_assert_eq(st, RLT_STATUS_OK, "eval failed: %s", d.message);
    for (int i = 0; i < g->n_outputs; i++) cr_assert_not_null(outs[i]);
}

/* Loads the model, evaluates it, frees the model and the graph; returns
 * the outputs (at most 4) in outs. */
static void run_model(onnx_build *b, const void *const *in, void **outs)
{
    rlt_graph *g = load_ok(b);
    eval_ok(g, in, outs);
    rlt_graph_destroy(g);
    ob_free(b);
}

/* Runs a model with one output and returns it. */
static float *run1(onnx_build *b, const void *const *in)
{
    void *outs[4] = {NULL};
    run_model(b, in, outs);
    return outs[0];
}

static void expect_close(const float *got, const float *want, int64_t n, double tol, const char *what)
{
    for (int64_t i = 0; i < n; i++)
        cr_expect(fabs((double)got[i] - (double)want[i]) <= tol * (1.0 + fabs((double)want[i])),
                  "%s[%ld]: got %.9g, want %.9g", what, (long)i, got[i], want[i]);
}

/* Deterministic values in [-1, 1). */
static void fill(float *x, int64_t n, uint64_t seed)
{
    uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
    for (int64_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
}

static void fill_pos(float *x, int64_t n, uint64_t seed)
{
    fill(x, n, seed);
    for (int64_t i = 0; i < n; i++) x[i] = 0.5f + fabsf(x[i]);
}

/* ---- convolution ---------------------------------------------------------------- */

/* A plain 2-D convolution: x [N,C,H,W], w [M,C/G,KH,KW]. */
static void ref_conv2d(const float *x, int N, int C, int H, int W, const float *w, int M, int KH, int KW,
                       const float *bias, int G, const int s[2], const int dl[2], const int pads[4], float *y, int OH,
                       int OW)
{
    int cg = C / G, mg = M / G;
    for (int n = 0; n < N; n++)
        for (int m = 0; m < M; m++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++) {
                    double acc = bias ? bias[m] : 0.0;
                    int grp = m / mg;
                    for (int ci = 0; ci < cg; ci++)
                        for (int i = 0; i < KH; i++)
                            for (int j = 0; j < KW; j++) {
                                int ih = oh * s[0] - pads[0] + i * dl[0], iw = ow * s[1] - pads[1] + j * dl[1];
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                acc += (double)x[((n * C + grp * cg + ci) * H + ih) * W + iw] *
                                       w[((m * cg + ci) * KH + i) * KW + j];
                            }
                    y[((n * M + m) * OH + oh) * OW + ow] = (float)acc;
                }
}

Test(graph_eval, conv_groups_dilations_strides_pads)
{
    /* x [2,4,7,6], w [6,2,3,3], group 2, strides (2,1), dilations (1,2),
     * pads top 1 left 0 bottom 2 right 1: OH = (7+3-3)/2+1 = 4, OW = (6+1-5)/1+1 = 3 */
    float x[2 * 4 * 7 * 6], w[6 * 2 * 9], bias[6], want[2 * 6 * 4 * 3];
    fill(x, 336, 1);
    fill(w, 108, 2);
    fill(bias, 6, 3);
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(2, 4, 7, 6));
    ob_init_f32(&b, "w", 4, D(6, 2, 3, 3), w);
    ob_init_f32(&b, "bias", 1, D(6), bias);
    Onnx__NodeProto *n = ob_node(&b, "Conv", "c", "x,w,bias", "y");
    ob_attr_i(&b, n, "group", 2);
    ob_attr_ints(&b, n, "strides", 2, D(2, 1));
    ob_attr_ints(&b, n, "dilations", 2, D(1, 2));
    ob_attr_ints(&b, n, "pads", 4, D(1, 0, 2, 1));
    ob_output(&b, "y");
    float *y = run1(&b, (const void *[]){x});
    ref_conv2d(x, 2, 4, 7, 6, w, 6, 3, 3, bias, 2, (int[]){2, 1}, (int[]){1, 2}, (int[]){1, 0, 2, 1}, want, 4, 3);
    expect_close(y, want, 144, 1e-5, "y");
    rlt_free(y);
}

Test(graph_eval, conv_depthwise_and_auto_pad)
{
    /* depthwise 3x3, SAME_UPPER with stride 2: in 5 -> out 3, pads 1+1 */
    float x[3 * 25], w[3 * 9], want[3 * 9];
    fill(x, 75, 4);
    fill(w, 27, 5);
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 3, 5, 5));
    ob_init_f32(&b, "w", 4, D(3, 1, 3, 3), w);
    Onnx__NodeProto *n = ob_node(&b, "Conv", "dw", "x,w", "y");
    ob_attr_i(&b, n, "group", 3);
    ob_attr_s(&b, n, "auto_pad", "SAME_UPPER");
    ob_attr_ints(&b, n, "strides", 2, D(2, 2));
    ob_output(&b, "y");
    float *y = run1(&b, (const void *[]){x});
    ref_conv2d(x, 1, 3, 5, 5, w, 3, 3, 3, NULL, 3, (int[]){2, 2}, (int[]){1, 1}, (int[]){1, 1, 1, 1}, want, 3, 3);
    expect_close(y, want, 27, 1e-5, "y");
    rlt_free(y);
}

Test(graph_eval, conv_1d_and_3d_by_hand)
{
    /* 1-D: x = 1 2 3 4 5, w = [1, -1], pad left 1: y = 1, 1, 1, 1, 1 -> first is 0*1 - 1*1 = -1 */
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 3, D(1, 1, 5));
    ob_init_f32(&b, "w", 3, D(1, 1, 2), F(1, -1));
    Onnx__NodeProto *n = ob_node(&b, "Conv", "c", "x,w", "y");
    ob_attr_ints(&b, n, "pads", 2, D(1, 0));
    ob_output(&b, "y");
    float *y = run1(&b, (const void *[]){F(1, 2, 3, 4, 5)});
    expect_close(y, F(-1, -1, -1, -1, -1), 5, 0, "1d");
    rlt_free(y);

    /* 3-D: a 2x2x2 box sum over a 2x2x3 input of ones, stride 1: [1,1,1,1,2] of 8s */
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 5, D(1, 1, 2, 2, 3));
    ob_init_f32(&b, "w", 5, D(1, 1, 2, 2, 2), F(1, 1, 1, 1, 1, 1, 1, 1));
    ob_node(&b, "Conv", "c", "x,w", "y");
    ob_output(&b, "y");
    float ones[12];
    for (int i = 0; i < 12; i++) ones[i] = (float)i;
    y = run1(&b, (const void *[]){ones});
    /* window at ow: sum over d,h of x[d][h][ow] + x[d][h][ow+1], x = 6d + 3h + w */
    float want[2];
    for (int ow = 0; ow < 2; ow++) {
        want[ow] = 0;
        for (int d = 0; d < 2; d++)
            for (int h = 0; h < 2; h++) want[ow] += (float)(6 * d + 3 * h + ow) + (float)(6 * d + 3 * h + ow + 1);
    }
    expect_close(y, want, 2, 0, "3d");
    rlt_free(y);
}

/* ---- pooling ------------------------------------------------------------------------ */

Test(graph_eval, maxpool_ceil_mode_and_indices)
{
    float x[25];
    for (int i = 0; i < 25; i++) x[i] = (float)i;
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 1, 5, 5));
    Onnx__NodeProto *n = ob_node(&b, "MaxPool", "p", "x", "y,idx");
    ob_attr_ints(&b, n, "kernel_shape", 2, D(2, 2));
    ob_attr_ints(&b, n, "strides", 2, D(2, 2));
    ob_attr_i(&b, n, "ceil_mode", 1);
    ob_output(&b, "y");
    ob_output(&b, "idx");
    void *outs[2];
    run_model(&b, (const void *[]){x}, outs);
    /* rows {0,1} {2,3} {4}: the max is at the window's last row and column */
    expect_close(outs[0], F(6, 8, 9, 16, 18, 19, 21, 23, 24), 9, 0, "y");
    const int64_t want_idx[9] = {6, 8, 9, 16, 18, 19, 21, 23, 24};
    for (int i = 0; i < 9; i++) cr_expect_eq(((int64_t *)outs[1])[i], want_idx[i], "idx[%d]", i);
    rlt_free(outs[0]);
    rlt_free(outs[1]);

    /* pads and dilation, two channels: indices count across channels */
    float x2[2 * 16];
    fill(x2, 32, 9);
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 2, 4, 4));
    n = ob_node(&b, "MaxPool", "p", "x", "y,idx");
    ob_attr_ints(&b, n, "kernel_shape", 2, D(2, 2));
    ob_attr_ints(&b, n, "dilations", 2, D(2, 2));
    ob_attr_ints(&b, n, "pads", 4, D(1, 1, 1, 1));
    ob_output(&b, "y");
    ob_output(&b, "idx");
    run_model(&b, (const void *[]){x2}, outs);
    /* out = (4 + 2 - 3) + 1 = 4 */
    for (int c = 0; c < 2; c++)
        for (int oh = 0; oh < 4; oh++)
            for (int ow = 0; ow < 4; ow++) {
                float best = -INFINITY;
                int64_t at = -1;
                for (int i = 0; i < 2; i++)
                    for (int j = 0; j < 2; j++) {
                        int ih = oh - 1 + 2 * i, iw = ow - 1 + 2 * j;
                        if (ih < 0 || ih > 3 || iw < 0 || iw > 3) continue;
                        if (x2[c * 16 + ih * 4 + iw] > best) {
                            best = x2[c * 16 + ih * 4 + iw];
                            at = c * 16 + ih * 4 + iw;
                        }
                    }
                int e = c * 16 + oh * 4 + ow;
                cr_expect_eq(((float *)outs[0])[e], best, "y[%d]", e);
                cr_expect_eq(((int64_t *)outs[1])[e], at, "idx[%d]", e);
            }
    rlt_free(outs[0]);
    rlt_free(outs[1]);
}

Test(graph_eval, averagepool_pads_both_ways)
{
    float x[16];
    for (int i = 0; i < 16; i++) x[i] = (float)(i + 1);
    for (int include = 0; include <= 1; include++) {
        onnx_build b;
        ob_init(&b, 13);
        ob_input(&b, "x", OB_F32, 4, D(1, 1, 4, 4));
        Onnx__NodeProto *n = ob_node(&b, "AveragePool", "p", "x", "y");
        ob_attr_ints(&b, n, "kernel_shape", 2, D(3, 3));
        ob_attr_ints(&b, n, "pads", 4, D(1, 1, 1, 1));
        ob_attr_i(&b, n, "count_include_pad", include);
        ob_output(&b, "y");
        float *y = run1(&b, (const void *[]){x});
        float want[16];
        for (int oh = 0; oh < 4; oh++)
            for (int ow = 0; ow < 4; ow++) {
                double sum = 0;
                int cnt = 0;
                for (int ih = oh - 1; ih <= oh + 1; ih++)
                    for (int iw = ow - 1; iw <= ow + 1; iw++)
                        if (ih >= 0 && ih < 4 && iw >= 0 && iw < 4) {
                            sum += x[ih * 4 + iw];
                            cnt++;
                        }
                want[oh * 4 + ow] = (float)(sum / (include ? 9 : cnt));
            }
        /* by hand: the corner averages 1 2 5 6 */
        cr_expect_float_eq(y[0], include ? 14.0f / 9.0f : 3.5f, 1e-6);
        expect_close(y, want, 16, 1e-6, include ? "include" : "exclude");
        rlt_free(y);
    }
    /* ceil_mode with count_include_pad: in 5, k 2, s 2, pads 0: out 2 by floor, 3 by
     * ceil; the last window [4, 6) is clipped to the input (no end padding):
     * divisor 1 per dimension -> it is x itself at [4][4] */
    float x5[25];
    for (int i = 0; i < 25; i++) x5[i] = (float)i;
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 1, 5, 5));
    Onnx__NodeProto *n = ob_node(&b, "AveragePool", "p", "x", "y");
    ob_attr_ints(&b, n, "kernel_shape", 2, D(2, 2));
    ob_attr_ints(&b, n, "strides", 2, D(2, 2));
    ob_attr_i(&b, n, "ceil_mode", 1);
    ob_attr_i(&b, n, "count_include_pad", 1);
    ob_output(&b, "y");
    float *y = run1(&b, (const void *[]){x5});
    cr_expect_float_eq(y[0], 3.0f, 1e-6); /* (0 + 1 + 5 + 6) / 4 */
    cr_expect_float_eq(y[2], 6.5f, 1e-6); /* rows 0-1, col 4: (4 + 9) / 2 */
    cr_expect_float_eq(y[8], 24.0f, 1e-6);
    rlt_free(y);
}

Test(graph_eval, global_average_pool)
{
    float x[2 * 3 * 4];
    fill(x, 24, 11);
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 6, 2, 2));
    ob_node(&b, "GlobalAveragePool", "p", "x", "y");
    ob_output(&b, "y");
    float *y = run1(&b, (const void *[]){x});
    for (int c = 0; c < 6; c++) {
        float want = (x[4 * c] + x[4 * c + 1] + x[4 * c + 2] + x[4 * c + 3]) / 4;
        cr_expect_float_eq(y[c], want, 1e-6);
    }
    rlt_free(y);
}

/* ---- normalisation ----------------------------------------------------------------- */

Test(graph_eval, batchnorm)
{
    float x[2 * 3 * 4], sc[3], sh[3], mu[3], var[3];
    fill(x, 24, 12);
    fill(sc, 3, 13);
    fill(sh, 3, 14);
    fill(mu, 3, 15);
    fill_pos(var, 3, 16);
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 3, D(2, 3, 4));
    ob_init_f32(&b, "s", 1, D(3), sc);
    ob_init_f32(&b, "bb", 1, D(3), sh);
    ob_init_f32(&b, "m", 1, D(3), mu);
    ob_init_f32(&b, "v", 1, D(3), var);
    Onnx__NodeProto *n = ob_node(&b, "BatchNormalization", "bn", "x,s,bb,m,v", "y");
    ob_attr_f(&b, n, "epsilon", 1e-3f);
    ob_output(&b, "y");
    float *y = run1(&b, (const void *[]){x});
    float want[24];
    for (int i = 0; i < 24; i++) {
        int c = (i / 4) % 3;
        want[i] = (float)(((double)x[i] - mu[c]) / sqrt((double)var[c] + (double)1e-3f) * sc[c] + sh[c]);
    }
    expect_close(y, want, 24, 1e-6, "y");
    rlt_free(y);
}

Test(graph_eval, layernorm_with_stats)
{
    /* axis -1 on [2,4] by hand: row 1 2 3 4: mean 2.5, var 1.25 */
    onnx_build b;
    ob_init(&b, 17);
    ob_input(&b, "x", OB_F32, 2, D(2, 4));
    ob_init_f32(&b, "s", 1, D(4), F(1, 2, 1, 1));
    ob_init_f32(&b, "bb", 1, D(4), F(0, 0, 0, 10));
    Onnx__NodeProto *n = ob_node(&b, "LayerNormalization", "ln", "x,s,bb", "y,mean,istd");
    ob_attr_f(&b, n, "epsilon", 0.0f);
    ob_output(&b, "y");
    ob_output(&b, "mean");
    ob_output(&b, "istd");
    void *outs[3];
    run_model(&b, (const void *[]){F(1, 2, 3, 4, 5, 5, 5, 7)}, outs);
    double r = 1 / sqrt(1.25);
    /* row 2: 5 5 5 7: mean 5.5, var (0.25*3 + 2.25)/4 = 0.75 */
    double r2 = 1 / sqrt(0.75);
    float want[8] = {(float)(-1.5 * r), (float)(-0.5 * r * 2), (float)(0.5 * r), (float)(1.5 * r + 10),
                     (float)(-0.5 * r2), (float)(-0.5 * r2 * 2), (float)(-0.5 * r2), (float)(1.5 * r2 + 10)};
    expect_close(outs[0], want, 8, 1e-6, "y");
    expect_close(outs[1], F(2.5, 5.5), 2, 1e-7, "mean");
    expect_close(outs[2], F((float)r, (float)r2), 2, 1e-6, "istd");
    for (int i = 0; i < 3; i++) rlt_free(outs[i]);

    /* axis 1 on [2,3,4] with scale [3,4] and no bias */
    float x[24], s[12];
    fill(x, 24, 20);
    fill(s, 12, 21);
    ob_init(&b, 17);
    ob_input(&b, "x", OB_F32, 3, D(2, 3, 4));
    ob_init_f32(&b, "s", 2, D(3, 4), s);
    n = ob_node(&b, "LayerNormalization", "ln", "x,s", "y");
    ob_attr_i(&b, n, "axis", 1);
    ob_output(&b, "y");
    float *y = run1(&b, (const void *[]){x});
    for (int o = 0; o < 2; o++) {
        double mean = 0, var = 0;
        for (int k = 0; k < 12; k++) mean += x[o * 12 + k] / 12.0;
        for (int k = 0; k < 12; k++) var += (x[o * 12 + k] - mean) * (x[o * 12 + k] - mean) / 12.0;
        for (int k = 0; k < 12; k++) {
            float want1 = (float)((x[o * 12 + k] - mean) / sqrt(var + (double)1e-5f) * s[k]);
            cr_expect(fabsf(y[o * 12 + k] - want1) < 1e-5f, "y[%d]: %g vs %g", o * 12 + k, y[o * 12 + k], want1);
        }
    }
    rlt_free(y);
}

Test(graph_eval, softmax_axes_and_opsets)
{
    float x[24];
    fill(x, 24, 30);
    /* opset 13, axis 1 of [2,3,4]: over the 3 */
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 3, D(2, 3, 4));
    Onnx__NodeProto *n = ob_node(&b, "Softmax", "sm", "x", "y");
    ob_attr_i(&b, n, "axis", 1);
    ob_output(&b, "y");
    float *y = run1(&b, (const void *[]){x});
    for (int a = 0; a < 2; a++)
        for (int k = 0; k < 4; k++) {
            double sum = 0;
            for (int j = 0; j < 3; j++) sum += exp(x[a * 12 + j * 4 + k]);
            for (int j = 0; j < 3; j++) {
                int e = a * 12 + j * 4 + k;
                cr_expect(fabs(y[e] - exp(x[e]) / sum) < 1e-6, "y[%d]", e);
            }
        }
    rlt_free(y);
    /* opset 11, axis 1: the input is flattened to [2, 12] */
    ob_init(&b, 11);
    ob_input(&b, "x", OB_F32, 3, D(2, 3, 4));
    ob_node(&b, "Softmax", "sm", "x", "y");
    ob_output(&b, "y");
    y = run1(&b, (const void *[]){x});
    for (int a = 0; a < 2; a++) {
        double sum = 0;
        for (int j = 0; j < 12; j++) sum += exp(x[a * 12 + j]);
        for (int j = 0; j < 12; j++) cr_expect(fabs(y[a * 12 + j] - exp(x[a * 12 + j]) / sum) < 1e-6);
    }
    rlt_free(y);
    /* large values do not overflow */
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 1, D(2));
    ob_node(&b, "Softmax", "sm", "x", "y");
    ob_output(&b, "y");
    y = run1(&b, (const void *[]){F(1000, 1000)});
    expect_close(y, F(0.5, 0.5), 2, 1e-7, "big");
    rlt_free(y);
}

Test(graph_eval, reduce_mean)
{
    float x[24];
    fill(x, 24, 40);
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 3, D(2, 3, 4));
    Onnx__NodeProto *n = ob_node(&b, "ReduceMean", "r", "x", "y");
    ob_attr_ints(&b, n, "axes", 2, D(-1, 0));
    ob_attr_i(&b, n, "keepdims", 0);
    ob_output(&b, "y");
    float *y = run1(&b, (const void *[]){x});
    for (int j = 0; j < 3; j++) {
        double s = 0;
        for (int a = 0; a < 2; a++)
            for (int k = 0; k < 4; k++) s += x[a * 12 + j * 4 + k];
        cr_expect(fabs(y[j] - s / 8) < 1e-6, "y[%d]", j);
    }
    rlt_free(y);
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 3, D(2, 3, 4));
    ob_node(&b, "ReduceMean", "r", "x", "y");
    ob_output(&b, "y");
    y = run1(&b, (const void *[]){x});
    double s = 0;
    for (int i = 0; i < 24; i++) s += x[i];
    cr_expect(fabs(y[0] - s / 24) < 1e-6);
    rlt_free(y);
}

/* ---- elementwise ------------------------------------------------------------------ */

Test(graph_eval, unary_ops)
{
    float x[12];
    fill(x, 12, 50);
    x[0] = -3.0f;
    x[1] = 0.0f;
    const char *ops[] = {"Relu", "Sigmoid", "Tanh", "Erf", "LeakyRelu", "Gelu", "GeluTanh", "Sqrt", "Identity"};
    for (size_t k = 0; k < RLT_ARRAY_LEN(ops); k++) {
        bool is_tanh = strcmp(ops[k], "GeluTanh") == 0;
        onnx_build b;
        ob_init(&b, 13);
        ob_input(&b, "x", OB_F32, 2, D(3, 4));
        Onnx__NodeProto *n = ob_node(&b, is_tanh ? "Gelu" : ops[k], "u", "x", "y");
        if (is_tanh) ob_attr_s(&b, n, "approximate", "tanh");
        if (strcmp(ops[k], "LeakyRelu") == 0) ob_attr_f(&b, n, "alpha", 0.25f);
        ob_output(&b, "y");
        float in[12];
        for (int i = 0; i < 12; i++) in[i] = strcmp(ops[k], "Sqrt") == 0 ? fabsf(x[i]) : x[i];
        float *y = run1(&b, (const void *[]){in});
        for (int i = 0; i < 12; i++) {
            double v = in[i], want;
            switch (k) {
            case 0: want = v > 0 ? v : 0; break;
            case 1: want = 1 / (1 + exp(-v)); break;
            case 2: want = tanh(v); break;
            case 3: want = erf(v); break;
            case 4: want = v > 0 ? v : 0.25 * v; break;
            case 5: want = 0.5 * v * (1 + erf(v / sqrt(2.0))); break;
            case 6: want = 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))); break;
            case 7: want = sqrt(v); break;
            default: want = v; break;
            }
            cr_expect(fabs(y[i] - want) <= 1e-6 * (1 + fabs(want)), "%s(%g): got %.9g, want %.9g", ops[k], v, y[i],
                      want);
        }
        rlt_free(y);
    }
}

Test(graph_eval, clip_inputs_and_attributes)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 1, D(5));
    ob_initializer(&b, ob_tensor(&b, "lo", OB_F32, 0, NULL, F(-1)));
    ob_initializer(&b, ob_tensor(&b, "hi", OB_F32, 0, NULL, F(6)));
    ob_node(&b, "Clip", "c", "x,lo,hi", "y");
    ob_output(&b, "y");
    float *y = run1(&b, (const void *[]){F(-5, -0.5, 3, 6.5, 100)});
    expect_close(y, F(-1, -0.5, 3, 6, 6), 5, 0, "opset 13");
    rlt_free(y);
    /* only max, min left out */
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 1, D(3));
    ob_initializer(&b, ob_tensor(&b, "hi", OB_F32, 0, NULL, F(1)));
    ob_node(&b, "Clip", "c", "x,,hi", "y");
    ob_output(&b, "y");
    y = run1(&b, (const void *[]){F(-50, 0.5, 2)});
    expect_close(y, F(-50, 0.5, 1), 3, 0, "max only");
    rlt_free(y);
    ob_init(&b, 9);
    ob_input(&b, "x", OB_F32, 1, D(3));
    Onnx__NodeProto *n = ob_node(&b, "Clip", "c", "x", "y");
    ob_attr_f(&b, n, "min", 0.0f);
    ob_output(&b, "y");
    y = run1(&b, (const void *[]){F(-2, 0.5, 1e30f)});
    expect_close(y, F(0, 0.5, 1e30f), 3, 0, "opset 9");
    rlt_free(y);
}

Test(graph_eval, binary_broadcasting)
{
    /* [2,1,3] + [4,1] -> [2,4,3] */
    float a[6], c[4];
    fill(a, 6, 60);
    fill(c, 4, 61);
    const char *ops[] = {"Add", "Sub", "Mul", "Div"};
    for (int k = 0; k < 4; k++) {
        onnx_build b;
        ob_init(&b, 13);
        ob_input(&b, "a", OB_F32, 3, D(2, 1, 3));
        ob_input(&b, "b", OB_F32, 2, D(4, 1));
        ob_node(&b, ops[k], "n", "a,b", "y");
        ob_output(&b, "y");
        float *y = run1(&b, (const void *[]){a, c});
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 4; j++)
                for (int l = 0; l < 3; l++) {
                    float u = a[i * 3 + l], v = c[j], want = k == 0 ? u + v : k == 1 ? u - v : k == 2 ? u * v : u / v;
                    cr_expect_float_eq(y[(i * 4 + j) * 3 + l], want, 1e-6 * (1 + fabsf(want)), "%s [%d,%d,%d]", ops[k],
                                       i, j, l);
                }
        rlt_free(y);
    }
    /* Pow with a scalar exponent */
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "a", OB_F32, 1, D(3));
    ob_initializer(&b, ob_tensor(&b, "e", OB_F32, 0, NULL, F(3)));
    ob_node(&b, "Pow", "n", "a,e", "y");
    ob_output(&b, "y");
    float *y = run1(&b, (const void *[]){F(2, -1.5, 0.5)});
    expect_close(y, F(8, -3.375, 0.125), 3, 1e-7, "pow");
    rlt_free(y);
}

Test(graph_eval, integer_arithmetic_and_errors)
{
    /* int64 inputs: wrapping add, truncating division */
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "a", OB_I64, 1, D(3));
    ob_input(&b, "b", OB_I64, 1, D(3));
    ob_node(&b, "Div", "d", "a,b", "q");
    ob_node(&b, "Add", "s", "a,b", "y");
    ob_output(&b, "q");
    ob_output(&b, "y");
    const int64_t a[3] = {7, -7, INT64_MAX}, bb[3] = {2, 2, 1};
    void *outs[2];
    rlt_graph *g = load_ok(&b);
    eval_ok(g, (const void *[]){a, bb}, outs);
    const int64_t *q = outs[0], *y = outs[1];
    cr_expect_eq(q[0], 3);
    cr_expect_eq(q[1], -3);
    cr_expect_eq(q[2], INT64_MAX);
    cr_expect_eq(y[0], 9);
    cr_expect_eq(y[2], INT64_MIN);
    rlt_free(outs[0]);
    rlt_free(outs[1]);
    /* division by zero is an error naming the node, and nothing is handed out */
    const int64_t zero[3] = {1, 0, 1};
    rlt_diag d = {0};
    outs[0] = outs[1] = (void *)1;
    cr_expect_eq(rlt_graph_eval(g, 2, (const void *[]){a, zero}, 2, outs, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_expect(strstr(d.message, "node 0 'd' (Div"), "%s", d.message);
    cr_expect(strstr(d.message, "division by zero"), "%s", d.message);
    cr_expect_null(outs[0]);
    cr_expect_null(outs[1]);
    /* wrong input and output counts, a NULL input */
    d = (rlt_diag){0};
    cr_expect_eq(rlt_graph_eval(g, 1, (const void *[]){a}, 2, outs, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_expect(strstr(d.message, "2 inputs; 1 were given"), "%s", d.message);
    d = (rlt_diag){0};
    cr_expect_eq(rlt_graph_eval(g, 2, (const void *[]){a, bb}, 1, outs, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_expect(strstr(d.message, "2 outputs"), "%s", d.message);
    d = (rlt_diag){0};
    cr_expect_eq(rlt_graph_eval(g, 2, (const void *[]){a, NULL}, 2, outs, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_expect(strstr(d.message, "input 1 ('b') is NULL"), "%s", d.message);
    rlt_graph_destroy(g);
    ob_free(&b);
}

Test(graph_eval, where_expand_cast)
{
    /* Where(c [2,3] bool, x [3], y scalar) */
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "c", OB_BOOL, 2, D(2, 3));
    ob_input(&b, "x", OB_F32, 1, D(3));
    ob_initializer(&b, ob_tensor(&b, "z", OB_F32, 0, NULL, F(-1)));
    ob_node(&b, "Where", "w", "c,x,z", "y");
    ob_output(&b, "y");
    const unsigned char cond[6] = {1, 0, 1, 0, 0, 1};
    float *y = run1(&b, (const void *[]){cond, F(10, 20, 30)});
    expect_close(y, F(10, -1, 30, -1, -1, 30), 6, 0, "where");
    rlt_free(y);
    /* Expand [3,1] to [2,3,4] */
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(3, 1));
    ob_init_i64(&b, "shape", 3, D(2, 1, 4));
    ob_node(&b, "Expand", "e", "x,shape", "y");
    ob_output(&b, "y");
    y = run1(&b, (const void *[]){F(1, 2, 3)});
    for (int i = 0; i < 24; i++) cr_expect_eq(y[i], (float)((i / 4) % 3 + 1), "expand[%d]", i);
    rlt_free(y);
    /* Cast f32 -> i64 (truncation), -> bool; i64 -> f32; the bool condition of a Where */
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 1, D(4));
    ob_input(&b, "i", OB_I64, 1, D(4));
    Onnx__NodeProto *n = ob_node(&b, "Cast", "c1", "x", "xi");
    ob_attr_i(&b, n, "to", OB_I64);
    n = ob_node(&b, "Cast", "c2", "x", "xb");
    ob_attr_i(&b, n, "to", OB_BOOL);
    n = ob_node(&b, "Cast", "c3", "i", "if");
    ob_attr_i(&b, n, "to", OB_F32);
    n = ob_node(&b, "Cast", "c4", "i", "i32");
    ob_attr_i(&b, n, "to", OB_I32);
    ob_output(&b, "xi");
    ob_output(&b, "xb");
    ob_output(&b, "if");
    ob_output(&b, "i32");
    void *outs[4];
    const int64_t iv[4] = {-3, 0, 5, ((int64_t)1 << 32) + 7};
    run_model(&b, (const void *[]){F(-2.7f, 0, 0.5f, 3.9f), iv}, outs);
    const int64_t want_i[4] = {-2, 0, 0, 3};
    const unsigned char want_b[4] = {1, 0, 1, 1};
    for (int i = 0; i < 4; i++) {
        cr_expect_eq(((int64_t *)outs[0])[i], want_i[i]);
        cr_expect_eq(((unsigned char *)outs[1])[i], want_b[i]);
        cr_expect_eq(((float *)outs[2])[i], (float)iv[i]);
    }
    cr_expect_eq(((int32_t *)outs[3])[3], 7, "int32 wraps");
    for (int i = 0; i < 4; i++) rlt_free(outs[i]);
}

/* ---- shapes and data movement ----------------------------------------------------- */

Test(graph_eval, reshape_flatten_squeeze_unsqueeze_dropout_identity)
{
    float x[24];
    fill(x, 24, 70);
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 3, D(2, 3, 4));
    ob_init_i64(&b, "shape", 3, D(0, -1, 2));
    ob_node(&b, "Reshape", "r", "x,shape", "r1");
    Onnx__NodeProto *n = ob_node(&b, "Flatten", "f", "r1", "f1");
    ob_attr_i(&b, n, "axis", 2);
    ob_init_i64(&b, "ax", 1, D(0));
    ob_node(&b, "Unsqueeze", "u", "f1,ax", "u1");
    ob_node(&b, "Squeeze", "s", "u1,ax", "s1");
    ob_node(&b, "Dropout", "d", "s1", "d1,mask");
    ob_node(&b, "Identity", "i", "d1", "y");
    ob_output(&b, "r1");
    ob_output(&b, "y");
    ob_output(&b, "mask");
    rlt_graph *g = load_ok(&b);
    int r1 = rlt_graph_tensor_find(g, "r1"), yt = rlt_graph_tensor_find(g, "y");
    cr_assert_eq(g->tensors[r1].rank, 3);
    cr_expect_eq(g->tensors[r1].dims[1], 6); /* [2, 6, 2] */
    cr_expect_eq(g->tensors[yt].dims[0], 12); /* [12, 2] */
    void *outs[3];
    eval_ok(g, (const void *[]){x}, outs);
    expect_close(outs[0], x, 24, 0, "reshape");
    expect_close(outs[1], x, 24, 0, "chain");
    for (int i = 0; i < 24; i++) cr_expect_eq(((unsigned char *)outs[2])[i], 1, "mask");
    for (int i = 0; i < 3; i++) rlt_free(outs[i]);
    rlt_graph_destroy(g);
    ob_free(&b);
}

/* Dropout before opset 10 writes its mask in the input's type: all 1.0
 * in inference (ONNX's reference keeps every element), not bool bytes. */
Test(graph_eval, dropout_mask_type_by_opset)
{
    float x[6] = {1, -2, 3, -4, 5, -6};
    for (int opset = 9; opset <= 10; opset++) {
        onnx_build b;
        ob_init(&b, opset);
        ob_input(&b, "x", OB_F32, 2, D(2, 3));
        Onnx__NodeProto *n = ob_node(&b, "Dropout", "d", "x", "y,mask");
        ob_attr_f(&b, n, "ratio", 0.25f);
        ob_output(&b, "y");
        ob_output(&b, "mask");
        rlt_graph *g = load_ok(&b);
        const rlt_graph_tensor *mt = &g->tensors[rlt_graph_tensor_find(g, "mask")];
        cr_assert_eq(mt->dtype, opset < 10 ? RLT_DTYPE_FLOAT32 : RLT_DTYPE_BOOL, "opset %d", opset);
        void *outs[2];
        eval_ok(g, (const void *[]){x}, outs);
        expect_close(outs[0], x, 6, 0, "y");
        for (int i = 0; i < 6; i++) {
            if (opset < 10) cr_expect_eq(((float *)outs[1])[i], 1.0f, "mask[%d] at opset 9", i);
            else cr_expect_eq(((unsigned char *)outs[1])[i], 1, "mask[%d] at opset 10", i);
        }
        for (int i = 0; i < 2; i++) rlt_free(outs[i]);
        rlt_graph_destroy(g);
        ob_free(&b);
    }
}

Test(graph_eval, transpose_perm_and_default)
{
    float x[24];
    for (int i = 0; i < 24; i++) x[i] = (float)i;
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 3, D(2, 3, 4));
    Onnx__NodeProto *n = ob_node(&b, "Transpose", "t", "x", "y");
    ob_attr_ints(&b, n, "perm", 3, D(2, 0, 1));
    ob_node(&b, "Transpose", "t2", "x", "z");
    ob_output(&b, "y");
    ob_output(&b, "z");
    void *outs[2];
    run_model(&b, (const void *[]){x}, outs);
    const float *y = outs[0], *z = outs[1];
    /* y [4,2,3]: y[k][i][j] = x[i][j][k]; z [4,3,2]: z[k][j][i] = x[i][j][k] */
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) {
                cr_expect_eq(y[(k * 2 + i) * 3 + j], x[(i * 3 + j) * 4 + k]);
                cr_expect_eq(z[(k * 3 + j) * 2 + i], x[(i * 3 + j) * 4 + k]);
            }
    rlt_free(outs[0]);
    rlt_free(outs[1]);
}

Test(graph_eval, concat_and_split)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "a", OB_F32, 3, D(2, 1, 2));
    ob_input(&b, "c", OB_F32, 3, D(2, 2, 2));
    Onnx__NodeProto *n = ob_node(&b, "Concat", "cat", "a,c", "y");
    ob_attr_i(&b, n, "axis", -2);
    ob_init_i64(&b, "sizes", 2, D(2, 1));
    n = ob_node(&b, "Split", "sp", "y,sizes", "p,q");
    ob_attr_i(&b, n, "axis", 1);
    n = ob_node(&b, "Split", "sp2", "y", "e0,e1");
    ob_attr_i(&b, n, "axis", 2);
    ob_output(&b, "y");
    ob_output(&b, "p");
    ob_output(&b, "q");
    ob_output(&b, "e1");
    void *outs[4];
    run_model(&b, (const void *[]){F(1, 2, 3, 4), F(10, 11, 12, 13, 14, 15, 16, 17)}, outs);
    expect_close(outs[0], F(1, 2, 10, 11, 12, 13, 3, 4, 14, 15, 16, 17), 12, 0, "concat");
    expect_close(outs[1], F(1, 2, 10, 11, 3, 4, 14, 15), 8, 0, "p");
    expect_close(outs[2], F(12, 13, 16, 17), 4, 0, "q");
    expect_close(outs[3], F(2, 11, 13, 4, 15, 17), 6, 0, "e1");
    for (int i = 0; i < 4; i++) rlt_free(outs[i]);
}

Test(graph_eval, slice_negative_steps)
{
    float x[15];
    for (int i = 0; i < 15; i++) x[i] = (float)i; /* [3,5]: x[r][c] = 5r + c */
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(3, 5));
    ob_init_i64(&b, "st", 2, D(-1, 100));
    ob_init_i64(&b, "en", 2, D(-100, 0));
    ob_init_i64(&b, "ax", 2, D(0, 1));
    ob_init_i64(&b, "sp", 2, D(-1, -2));
    ob_node(&b, "Slice", "s", "x,st,en,ax,sp", "y");
    ob_output(&b, "y");
    float *y = run1(&b, (const void *[]){x});
    /* rows 2 1 0, columns 4 2 */
    expect_close(y, F(14, 12, 9, 7, 4, 2), 6, 0, "y");
    rlt_free(y);
    /* opset 9 attributes, axis 1 only */
    ob_init(&b, 9);
    ob_input(&b, "x", OB_F32, 2, D(3, 5));
    Onnx__NodeProto *n = ob_node(&b, "Slice", "s", "x", "y");
    ob_attr_ints(&b, n, "starts", 1, D(1));
    ob_attr_ints(&b, n, "ends", 1, D(-1));
    ob_attr_ints(&b, n, "axes", 1, D(1));
    ob_output(&b, "y");
    y = run1(&b, (const void *[]){x});
    expect_close(y, F(1, 2, 3, 6, 7, 8, 11, 12, 13), 9, 0, "opset 9");
    rlt_free(y);
}

Test(graph_eval, gather_axis_1_runtime_indices)
{
    float x[8];
    for (int i = 0; i < 8; i++) x[i] = (float)i; /* [2,4] */
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(2, 4));
    ob_input(&b, "i", OB_I64, 2, D(1, 3));
    Onnx__NodeProto *n = ob_node(&b, "Gather", "g", "x,i", "y");
    ob_attr_i(&b, n, "axis", 1);
    ob_output(&b, "y");
    rlt_graph *g = load_ok(&b);
    void *outs[1];
    const int64_t idx[3] = {3, -4, 1};
    eval_ok(g, (const void *[]){x, idx}, outs);
    /* y [2,1,3] */
    expect_close(outs[0], F(3, 0, 1, 7, 4, 5), 6, 0, "y");
    rlt_free(outs[0]);
    const int64_t bad[3] = {0, 4, 1};
    rlt_diag d = {0};
    cr_expect_eq(rlt_graph_eval(g, 2, (const void *[]){x, bad}, 1, outs, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_expect(strstr(d.message, "index 4"), "%s", d.message);
    cr_expect_null(outs[0]);
    rlt_graph_destroy(g);
    ob_free(&b);
    /* constant indices on axis 0 of an embedding table: [3,2] gathered by [2] */
    ob_init(&b, 13);
    ob_init_f32(&b, "emb", 2, D(3, 2), F(0, 1, 10, 11, 20, 21));
    ob_input(&b, "i", OB_I32, 1, D(2));
    ob_node(&b, "Gather", "g", "emb,i", "y");
    ob_output(&b, "y");
    const int32_t i32[2] = {2, 0};
    float *y = run1(&b, (const void *[]){i32});
    expect_close(y, F(20, 21, 0, 1), 4, 0, "emb");
    rlt_free(y);
}

Test(graph_eval, constants_shape_and_large_constant_of_shape)
{
    /* an output that is a folded constant (Shape of x) is copied out */
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(3, 5));
    ob_node(&b, "Shape", "s", "x", "shp");
    ob_node(&b, "Relu", "r", "x", "y");
    ob_output(&b, "shp");
    ob_output(&b, "y");
    void *outs[2];
    float x[15] = {0};
    run_model(&b, (const void *[]){x}, outs);
    cr_expect_eq(((int64_t *)outs[0])[0], 3);
    cr_expect_eq(((int64_t *)outs[0])[1], 5);
    rlt_free(outs[0]);
    rlt_free(outs[1]);
    /* ConstantOfShape over 2^20 elements is not folded: the evaluator fills it */
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(1, 1));
    ob_init_i64(&b, "shape", 2, D(2, 600000));
    Onnx__NodeProto *n = ob_node(&b, "ConstantOfShape", "c", "shape", "big");
    ob_attr_t(&b, n, "value", ob_tensor(&b, "v", OB_F32, 1, D(1), F(2.5)));
    ob_node(&b, "Mul", "m", "big,x", "y");
    ob_output(&b, "y");
    rlt_graph *g = load_ok(&b);
    cr_expect_eq(g->n_nodes, 2, "%s", rlt_graph_print(g));
    eval_ok(g, (const void *[]){F(2)}, outs);
    const float *y = outs[0];
    bool all = true;
    for (int i = 0; i < 1200000; i++) all &= y[i] == 5.0f;
    cr_expect(all);
    rlt_free(outs[0]);
    rlt_graph_destroy(g);
    ob_free(&b);
}

/* ---- dense ------------------------------------------------------------------------- */

Test(graph_eval, gemm_trans_alpha_beta_bias)
{
    float a[3 * 4], w[5 * 4], cb[5];
    fill(a, 12, 80);
    fill(w, 20, 81);
    fill(cb, 5, 82);
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "a", OB_F32, 2, D(4, 3)); /* A^T */
    ob_init_f32(&b, "w", 2, D(5, 4), w);
    ob_init_f32(&b, "c", 1, D(5), cb);
    Onnx__NodeProto *n = ob_node(&b, "Gemm", "g", "a,w,c", "y");
    ob_attr_i(&b, n, "transA", 1);
    ob_attr_i(&b, n, "transB", 1);
    ob_attr_f(&b, n, "alpha", 0.5f);
    ob_attr_f(&b, n, "beta", 2.0f);
    ob_output(&b, "y");
    float *y = run1(&b, (const void *[]){a});
    /* a as given is [4,3]: A = a^T [3,4]; B = w^T [4,5] */
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 5; j++) {
            double s = 0;
            for (int k = 0; k < 4; k++) s += (double)a[k * 3 + i] * w[j * 4 + k];
            float want = (float)(0.5 * s + 2.0 * cb[j]);
            cr_expect_float_eq(y[i * 5 + j], want, 1e-6, "y[%d,%d]", i, j);
        }
    rlt_free(y);
}

Test(graph_eval, matmul_batch_broadcast_and_vectors)
{
    /* [2,1,3,4] x [5,4,2] -> [2,5,3,2] */
    float a[24], w[40];
    fill(a, 24, 90);
    fill(w, 40, 91);
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "a", OB_F32, 4, D(2, 1, 3, 4));
    ob_input(&b, "w", OB_F32, 3, D(5, 4, 2));
    ob_node(&b, "MatMul", "m", "a,w", "y");
    ob_output(&b, "y");
    float *y = run1(&b, (const void *[]){a, w});
    for (int p = 0; p < 2; p++)
        for (int q = 0; q < 5; q++)
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 2; j++) {
                    double s = 0;
                    for (int k = 0; k < 4; k++) s += (double)a[(p * 3 + i) * 4 + k] * w[(q * 4 + k) * 2 + j];
                    cr_expect_float_eq(y[((p * 5 + q) * 3 + i) * 2 + j], (float)s, 1e-6);
                }
    rlt_free(y);
    /* 1-D x 2-D and 2-D x 1-D */
    ob_init(&b, 13);
    ob_input(&b, "v", OB_F32, 1, D(2));
    ob_init_f32(&b, "m", 2, D(2, 3), F(1, 2, 3, 4, 5, 6));
    ob_init_f32(&b, "u", 1, D(3), F(1, 0, -1));
    ob_node(&b, "MatMul", "m1", "v,m", "vm");
    ob_node(&b, "MatMul", "m2", "m,u", "mu");
    ob_output(&b, "vm");
    ob_output(&b, "mu");
    void *outs[2];
    run_model(&b, (const void *[]){F(1, 10)}, outs);
    expect_close(outs[0], F(41, 52, 63), 3, 0, "vm");
    expect_close(outs[1], F(-2, -2), 2, 0, "mu");
    rlt_free(outs[0]);
    rlt_free(outs[1]);
}

/* ---- BatchNormalization folding ----------------------------------------------------- */

/* Evaluates g with one input, returning its one output. */
static float *eval1(const rlt_graph *g, const float *x)
{
    void *out[1] = {NULL};
    eval_ok(g, (const void *[]){x}, out);
    return out[0];
}

/* max |a - b| <= tol * max |a| */
static void expect_rel_close(const float *a, const float *b, int64_t n, double tol, const char *what)
{
    double mx = 0, err = 0;
    for (int64_t i = 0; i < n; i++) {
        mx = fmax(mx, fabs(a[i]));
        err = fmax(err, fabs((double)a[i] - b[i]));
    }
    cr_expect(err <= tol * mx, "%s: max error %g over max %g", what, err, mx);
}

static int count_op(const rlt_graph *g, const char *op)
{
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++) n += !g->nodes[i].is_removed && strcmp(g->nodes[i].op_type, op) == 0;
    return n;
}

/* Conv (bias or not) -> BN -> Relu on x [1,3,6,6] */
static void conv_bn_model(onnx_build *b, bool with_bias, uint64_t seed)
{
    float w[4 * 3 * 9], cb[4], s[4], sh[4], mu[4], var[4];
    fill(w, 108, seed);
    fill(cb, 4, seed + 1);
    fill(s, 4, seed + 2);
    fill(sh, 4, seed + 3);
    fill(mu, 4, seed + 4);
    fill_pos(var, 4, seed + 5);
    ob_init(b, 13);
    ob_input(b, "x", OB_F32, 4, D(1, 3, 6, 6));
    ob_init_f32(b, "w", 4, D(4, 3, 3, 3), w);
    if (with_bias) ob_init_f32(b, "cb", 1, D(4), cb);
    ob_init_f32(b, "s", 1, D(4), s);
    ob_init_f32(b, "sh", 1, D(4), sh);
    ob_init_f32(b, "mu", 1, D(4), mu);
    ob_init_f32(b, "var", 1, D(4), var);
    Onnx__NodeProto *n = ob_node(b, "Conv", "conv", with_bias ? "x,w,cb" : "x,w", "c");
    ob_attr_ints(b, n, "pads", 4, D(1, 1, 1, 1));
    ob_node(b, "BatchNormalization", "bn", "c,s,sh,mu,var", "n");
    ob_node(b, "Relu", "relu", "n", "y");
    ob_output(b, "y");
}

Test(graph_eval, fold_batchnorm_conv_relu)
{
    float x[108];
    fill(x, 108, 100);
    for (int with_bias = 0; with_bias <= 1; with_bias++) {
        onnx_build b;
        conv_bn_model(&b, with_bias, 200 + (uint64_t)with_bias);
        rlt_graph *g = load_ok(&b);
        float *before = eval1(g, x);
        rlt_diag d = {0};
        cr_assert_eq(rlt_graph_fold_batchnorm(g, &d), 1, "%s", d.message);
        /* evaluates correctly before dead-code elimination too */
        float *mid = eval1(g, x);
        cr_assert_geq(rlt_graph_dce(g), 1);
        cr_expect_eq(count_op(g, "BatchNormalization"), 0);
        cr_expect_eq(g->n_nodes, 2, "%s", rlt_graph_print(g));
        cr_expect_eq(g->nodes[0].n_inputs, 3, "the conv has a bias");
        cr_expect_eq(rlt_graph_tensor_find(g, "c"), -1, "the conv's old output is gone");
        cr_expect_eq(rlt_graph_tensor_find(g, "var"), -1, "the BN's constants are gone");
        float *after = eval1(g, x);
        expect_rel_close(before, mid, 4 * 36, 1e-5, "before dce");
        expect_rel_close(before, after, 4 * 36, 1e-5, "after dce");
        /* nothing left to fold */
        cr_expect_eq(rlt_graph_fold_batchnorm(g, &d), 0);
        rlt_free(before);
        rlt_free(mid);
        rlt_free(after);
        rlt_graph_destroy(g);
        ob_free(&b);
    }
}

Test(graph_eval, fold_batchnorm_leaves_what_does_not_qualify)
{
    /* the conv's output is also a graph output */
    onnx_build b;
    conv_bn_model(&b, true, 300);
    ob_output(&b, "c");
    rlt_graph *g = load_ok(&b);
    rlt_diag d = {0};
    cr_expect_eq(rlt_graph_fold_batchnorm(g, &d), 0);
    rlt_graph_destroy(g);
    ob_free(&b);
    /* the conv's output has a second reader */
    conv_bn_model(&b, true, 301);
    ob_node(&b, "Add", "add", "c,c", "c2");
    ob_output(&b, "c2");
    g = load_ok(&b);
    cr_expect_eq(rlt_graph_fold_batchnorm(g, &d), 0);
    rlt_graph_destroy(g);
    ob_free(&b);
    /* the BN follows a Relu, not a Conv; its input is a graph input */
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 2, 3, 3));
    const char *p[] = {"s", "sh", "mu", "var"};
    for (int i = 0; i < 4; i++) ob_init_f32(&b, p[i], 1, D(2), F(1, 2));
    ob_node(&b, "BatchNormalization", "bn0", "x,s,sh,mu,var", "n0");
    ob_node(&b, "Relu", "r", "n0", "r0");
    ob_node(&b, "BatchNormalization", "bn1", "r0,s,sh,mu,var", "y");
    ob_output(&b, "y");
    g = load_ok(&b);
    cr_expect_eq(rlt_graph_fold_batchnorm(g, &d), 0);
    rlt_graph_destroy(g);
    ob_free(&b);
    /* a weight shared by two convs: both fold, each into its own copy */
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 2, 4, 4));
    float w[2 * 2 * 9];
    fill(w, 36, 302);
    ob_init_f32(&b, "w", 4, D(2, 2, 3, 3), w);
    ob_init_f32(&b, "s", 1, D(2), F(2, 0.5));
    ob_init_f32(&b, "sh", 1, D(2), F(1, -1));
    ob_init_f32(&b, "mu", 1, D(2), F(0.1f, 0.2f));
    ob_init_f32(&b, "var", 1, D(2), F(4, 0.25));
    ob_init_f32(&b, "s2", 1, D(2), F(-1, 3));
    Onnx__NodeProto *n = ob_node(&b, "Conv", "c1", "x,w", "a");
    ob_attr_ints(&b, n, "pads", 4, D(1, 1, 1, 1));
    ob_node(&b, "BatchNormalization", "bn1", "a,s,sh,mu,var", "an");
    n = ob_node(&b, "Conv", "c2", "an,w", "bq");
    ob_attr_ints(&b, n, "pads", 4, D(1, 1, 1, 1));
    ob_node(&b, "BatchNormalization", "bn2", "bq,s2,sh,mu,var", "y");
    ob_output(&b, "y");
    g = load_ok(&b);
    float x[32];
    fill(x, 32, 303);
    float *before = eval1(g, x);
    cr_expect_eq(rlt_graph_fold_batchnorm(g, &d), 2);
    cr_assert_geq(rlt_graph_dce(g), 2);
    float *after = eval1(g, x);
    expect_rel_close(before, after, 32, 1e-5, "shared weight");
    cr_expect_eq(rlt_graph_tensor_find(g, "w"), -1, "the old weight is read by nothing");
    rlt_free(before);
    rlt_free(after);
    rlt_graph_destroy(g);
    ob_free(&b);
}

/* A random chain on x [1,C,H,W]: blocks of Conv (random kernel 1 or 3,
 * depthwise or not, bias or not) + BN + Relu, sometimes + Add of the
 * block's input. */
static int rnd(uint64_t *s, int n)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (int)((*s >> 33) % (uint64_t)n);
}

static void random_chain(onnx_build *b, uint64_t seed, int *C_out, int *HW)
{
    uint64_t s = seed * 2654435761u + 17;
#define RND(n) rnd(&s, (n))
    int C = 2 + RND(3), H = 3 + RND(4);
    ob_init(b, 13);
    ob_input(b, "x", OB_F32, 4, D(1, C, H, H));
    int n_blocks = 1 + RND(4);
    char prev[32] = "x";
    for (int k = 0; k < n_blocks; k++) {
        char nm[12][32];
        for (int i = 0; i < 12; i++) snprintf(nm[i], sizeof nm[i], "b%d_%d", k, i);
        bool dw = RND(3) == 0, has_bias = RND(2), three = RND(2), add = RND(2);
        int cg = dw ? 1 : C, ks = three ? 3 : 1;
        int64_t nw = (int64_t)C * cg * ks * ks;
        float *w = ob_zalloc(b, (size_t)nw * sizeof(float));
        float p[5][8];
        fill(w, nw, seed * 100 + (uint64_t)k);
        for (int i = 0; i < 5; i++) fill(p[i], C, seed * 100 + (uint64_t)k * 7 + (uint64_t)i + 1);
        for (int i = 0; i < C; i++) p[4][i] = 0.1f + fabsf(p[4][i]) * 3.0f; /* var */
        ob_init_f32(b, nm[0], 4, D(C, cg, ks, ks), w);
        ob_init_f32(b, nm[1], 1, D(C), p[0]);
        for (int i = 1; i < 5; i++) ob_init_f32(b, nm[1 + i], 1, D(C), p[i]);
        char ins[200];
        snprintf(ins, sizeof ins, has_bias ? "%s,%s,%s" : "%s,%s", prev, nm[0], nm[1]);
        Onnx__NodeProto *n = ob_node(b, "Conv", nm[6], ins, nm[7]);
        if (dw) ob_attr_i(b, n, "group", C);
        if (three) ob_attr_ints(b, n, "pads", 4, D(1, 1, 1, 1));
        snprintf(ins, sizeof ins, "%s,%s,%s,%s,%s", nm[7], nm[2], nm[3], nm[4], nm[5]);
        n = ob_node(b, "BatchNormalization", nm[8], ins, nm[9]);
        ob_attr_f(b, n, "epsilon", 1e-3f);
        ob_node(b, "Relu", nm[10], nm[9], nm[11]);
        if (add) {
            char out[32];
            snprintf(ins, sizeof ins, "%s,%s", nm[11], prev);
            snprintf(out, sizeof out, "b%d_add", k);
            ob_node(b, "Add", out, ins, out);
            snprintf(prev, sizeof prev, "%s", out);
        } else {
            snprintf(prev, sizeof prev, "%s", nm[11]);
        }
    }
    ob_output(b, prev);
#undef RND
    *C_out = C;
    *HW = H * H;
}

Test(graph_eval, fold_batchnorm_random_chains)
{
    for (uint64_t seed = 1; seed <= 60; seed++) {
        onnx_build b;
        int C, HW;
        random_chain(&b, seed, &C, &HW);
        rlt_graph *g = load_ok(&b);
        int n_bn = count_op(g, "BatchNormalization");
        float x[4 * 36];
        fill(x, C * HW, seed + 1000);
        float *before = eval1(g, x);
        rlt_diag d = {0};
        cr_assert_eq(rlt_graph_fold_batchnorm(g, &d), n_bn, "seed %lu: %s", (unsigned long)seed, d.message);
        cr_assert_geq(rlt_graph_dce(g), n_bn);
        cr_expect_eq(count_op(g, "BatchNormalization"), 0);
        float *after = eval1(g, x);
        char what[32];
        snprintf(what, sizeof what, "seed %lu", (unsigned long)seed);
        expect_rel_close(before, after, C * HW, 1e-5, what);
        rlt_free(before);
        rlt_free(after);
        rlt_graph_destroy(g);
        ob_free(&b);
    }
}

/* ---- allocation failures --------------------------------------------------------------- */

Test(graph_eval, allocation_failures_leak_nothing)
{
    /* conv + bn + relu (output y) + add, then a layernorm, softmax, reduce
     * and gather (outputs m and gg) */
    onnx_build b;
    conv_bn_model(&b, false, 400);
    ob_node(&b, "Add", "add", "y,y", "a");
    ob_init_i64(&b, "shape", 3, D(1, 4, -1));
    ob_node(&b, "Reshape", "rs", "a,shape", "r");
    ob_init_f32(&b, "lns", 1, D(36), NULL);
    ob_node(&b, "LayerNormalization", "ln", "r,lns", "l");
    ob_node(&b, "Softmax", "sm", "l", "sm1");
    Onnx__NodeProto *n = ob_node(&b, "ReduceMean", "rm", "sm1", "m");
    ob_attr_ints(&b, n, "axes", 1, D(1));
    ob_init_i64(&b, "gi", 2, D(0, 3));
    n = ob_node(&b, "Gather", "ga", "sm1,gi", "gg");
    ob_attr_i(&b, n, "axis", 1);
    ob_output(&b, "m");
    ob_output(&b, "gg");
    b.opset.version = 17;
    float x[108];
    fill(x, 108, 401);
    size_t len;
    uint8_t *buf = ob_pack(&b, &len);

    rlt_graph *g = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_graph_load_onnx_bytes(buf, len, "oom", &g, &d), RLT_STATUS_OK, "%s", d.message);
    void *want[3];
    eval_ok(g, (const void *[]){x}, want);
    bool done = false;
    for (long k = 1; k < 200 && !done; k++) {
        void *outs[3] = {(void *)1, (void *)1, (void *)1};
        d = (rlt_diag){0};
        rlt_alloc_fail_after(k);
        rlt_status st = rlt_graph_eval(g, 1, (const void *[]){x}, 3, outs, &d);
        rlt_alloc_fail_after(0);
        if (st == RLT_STATUS_OK) {
            done = true;
            expect_close(outs[2], want[2], 72, 0, "gg");
            for (int i = 0; i < 3; i++) rlt_free(outs[i]);
        } else {
            cr_expect_eq(st, RLT_STATUS_OUT_OF_MEMORY, "%s", d.message);
            for (int i = 0; i < 3; i++) cr_expect_null(outs[i]);
        }
    }
    cr_expect(done, "never evaluated with enough allocations");
    rlt_graph_destroy(g);

    /* folding under failures: the graph stays valid and evaluates right */
    done = false;
    for (long k = 1; k < 200 && !done; k++) {
        cr_assert_eq(rlt_graph_load_onnx_bytes(buf, len, "oom", &g, &d), RLT_STATUS_OK);
        rlt_alloc_fail_after(k);
        int r = rlt_graph_fold_batchnorm(g, &d);
        rlt_alloc_fail_after(0);
        if (r == 1) done = true;
        else cr_expect_eq(r, -1);
        void *outs[3];
        eval_ok(g, (const void *[]){x}, outs);
        expect_rel_close(want[2], outs[2], 72, 1e-5, "after a failed fold");
        for (int i = 0; i < 3; i++) rlt_free(outs[i]);
        rlt_graph_destroy(g);
    }
    cr_expect(done, "never folded with enough allocations");
    for (int i = 0; i < 3; i++) rlt_free(want[i]);
    ob_free(&b);
    assert_no_leaks();
}

/* ---- the fuzz corpus's valid models ------------------------------------------------------ */

/* Every model the importer accepts in tests/fuzz/corpus/onnx/ evaluates on
 * seeded inputs (small integers for integer inputs, so that Gather indices
 * stay in range), deterministically. */
Test(graph_eval, corpus_valid_models_evaluate)
{
    DIR *dp = opendir(ONNX_CORPUS);
    cr_assert_not_null(dp, "cannot open %s", ONNX_CORPUS);
    int n_models = 0;
    struct dirent *e;
    while ((e = readdir(dp)) != NULL) {
        if (strncmp(e->d_name, "valid_", 6) != 0) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", ONNX_CORPUS, e->d_name);
        rlt_graph *g = NULL;
        rlt_diag d = {0};
        cr_assert_eq(rlt_graph_load_onnx(path, &g, &d), RLT_STATUS_OK, "%s: %s", e->d_name, d.message);
        void *in[8] = {NULL}, *out[2][8] = {{NULL}};
        cr_assert_leq(g->n_inputs, 8);
        cr_assert_leq(g->n_outputs, 8);
        for (int i = 0; i < g->n_inputs; i++) {
            const rlt_graph_tensor *t = &g->tensors[g->inputs[i]];
            int64_t n = rlt_graph_tensor_n_elems(t);
            in[i] = calloc((size_t)n * rlt_dtype_size(t->dtype) + 1, 1);
            if (t->dtype == RLT_DTYPE_FLOAT32) fill(in[i], n, 500 + (uint64_t)i);
        }
        for (int run = 0; run < 2; run++) {
            d = (rlt_diag){0};
            cr_assert_eq(rlt_graph_eval(g, g->n_inputs, (const void *const *)in, g->n_outputs, out[run], &d),
                         RLT_STATUS_OK, "%s: %s", e->d_name, d.message);
        }
        for (int o = 0; o < g->n_outputs; o++) {
            const rlt_graph_tensor *t = &g->tensors[g->outputs[o]];
            size_t bytes = (size_t)rlt_graph_tensor_n_elems(t) * rlt_dtype_size(t->dtype);
            cr_expect(memcmp(out[0][o], out[1][o], bytes) == 0, "%s: output %d differs between runs", e->d_name, o);
            rlt_free(out[0][o]);
            rlt_free(out[1][o]);
        }
        for (int i = 0; i < g->n_inputs; i++) free(in[i]);
        rlt_graph_destroy(g);
        n_models++;
    }
    closedir(dp);
    cr_expect_geq(n_models, 3);
    assert_no_leaks();
}
