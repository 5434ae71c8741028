/* Unit tests of src/ir/reference.c: rlt_op_eval_reference against naive
 * loops written out by hand for every built-in op and for user expressions
 * (padding reads zero, epilogues apply), the magnitude bound, and the
 * seeded test data of rlt_tensor_fill. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

/* Inputs filled from seeds 1, 2, ... and the reference's output. */
typedef struct fixture {
    rlt_op *op;
    float *inputs[RLT_MAX_TENSORS];
    double *out, *magnitude;
    int64_t n_out;
} fixture;

static fixture setup(rlt_status (*make)(const char *, const char *, rlt_op **, rlt_diag *), const char *a,
                     const char *b)
{
    fixture f = {0};
    rlt_diag d = {0};
    cr_assert_eq(make(a, b, &f.op, &d), RLT_STATUS_OK, "%s", d.message);
    for (int t = 0; t < f.op->n_tensors - 1; t++) {
        int64_t n = rlt_op_tensor_size(f.op, t);
        f.inputs[t] = malloc((size_t)n * sizeof(float));
        rlt_tensor_fill(f.inputs[t], n, (uint64_t)t + 1);
    }
    f.n_out = rlt_op_tensor_size(f.op, f.op->n_tensors - 1);
    f.out = calloc((size_t)f.n_out, sizeof(double));
    f.magnitude = calloc((size_t)f.n_out, sizeof(double));
    cr_assert_eq(rlt_op_eval_reference(f.op, (const float *const *)f.inputs, f.out, f.magnitude, &d),
                 RLT_STATUS_OK, "%s", d.message);
    return f;
}

static rlt_status parse_spec(const char *spec, const char *unused, rlt_op **out, rlt_diag *d)
{
    (void)unused;
    return rlt_op_parse(spec, out, d);
}

static fixture setup_spec(const char *spec) { return setup(parse_spec, spec, NULL); }
static fixture setup_expr(const char *expr, const char *shape) { return setup(rlt_op_from_expr, expr, shape); }

static void teardown(fixture *f)
{
    for (int t = 0; t < RLT_MAX_TENSORS; t++) free(f->inputs[t]);
    free(f->out);
    free(f->magnitude);
    rlt_op_destroy(f->op);
}

static void check(const fixture *f, const double *want)
{
    for (int64_t i = 0; i < f->n_out; i++) {
        cr_assert(fabs(f->out[i] - want[i]) <= 1e-12 * (1 + fabs(want[i])), "element %lld: %.17g, want %.17g",
                  (long long)i, f->out[i], want[i]);
        cr_assert_geq(f->magnitude[i], fabs(f->out[i]) * (1 - 1e-15), "element %lld: magnitude %g < |%g|",
                      (long long)i, f->magnitude[i], f->out[i]);
    }
}

Test(reference, fill_is_seeded_and_in_range)
{
    float a[1000], b[1000], c[1000];
    rlt_tensor_fill(a, 1000, 7);
    rlt_tensor_fill(b, 1000, 7);
    rlt_tensor_fill(c, 1000, 8);
    cr_assert_eq(memcmp(a, b, sizeof a), 0);
    cr_assert_neq(memcmp(a, c, sizeof a), 0);
    double sum = 0;
    bool has_negative = false, has_positive = false;
    for (int i = 0; i < 1000; i++) {
        cr_assert(a[i] >= -1.0f && a[i] < 1.0f, "%g", a[i]);
        has_negative |= a[i] < 0;
        has_positive |= a[i] > 0;
        sum += a[i];
    }
    cr_assert(has_negative && has_positive);
    cr_assert_lt(fabs(sum / 1000), 0.1);
}

Test(reference, matmul)
{
    fixture f = setup_spec("matmul:M=5,N=7,K=3");
    const float *A = f.inputs[0], *B = f.inputs[1];
    double want[5 * 7];
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 7; j++) {
            double s = 0;
            for (int k = 0; k < 3; k++) s += (double)A[i * 3 + k] * B[k * 7 + j];
            want[i * 7 + j] = s;
        }
    check(&f, want);
    for (int i = 0; i < 5 * 7; i++) {
        double m = 0;
        for (int k = 0; k < 3; k++) m += fabs((double)A[(i / 7) * 3 + k] * B[k * 7 + i % 7]);
        cr_assert(fabs(f.magnitude[i] - m) < 1e-12, "magnitude of %d: %g, want %g", i, f.magnitude[i], m);
    }
    teardown(&f);
}

Test(reference, batch_matmul)
{
    fixture f = setup_spec("batch_matmul:B=2,M=3,N=4,K=5");
    const float *A = f.inputs[0], *B = f.inputs[1];
    double want[2 * 3 * 4];
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++) {
                double s = 0;
                for (int k = 0; k < 5; k++) s += (double)A[(b * 3 + i) * 5 + k] * B[(b * 5 + k) * 4 + j];
                want[(b * 3 + i) * 4 + j] = s;
            }
    check(&f, want);
    teardown(&f);
}

Test(reference, dense_with_bias_and_relu)
{
    fixture f = setup_spec("dense:M=3,N=4,K=5,bias=1,relu=1");
    const float *X = f.inputs[0], *W = f.inputs[1], *bias = f.inputs[2];
    double want[3 * 4];
    int n_zero = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) {
            double s = 0;
            for (int k = 0; k < 5; k++) s += (double)X[i * 5 + k] * W[j * 5 + k];
            s += bias[j];
            want[i * 4 + j] = s > 0 ? s : 0;
            n_zero += s <= 0;
        }
    cr_assert_gt(n_zero, 0, "the data should exercise relu");
    check(&f, want);
    teardown(&f);
}

static void naive_conv(const float *I, const float *Wt, double *O, int N, int C, int H, int W, int K, int R,
                       int S, int stride, int pad, int dil, bool is_depthwise)
{
    int P = (H + 2 * pad - dil * (R - 1) - 1) / stride + 1;
    int Q = (W + 2 * pad - dil * (S - 1) - 1) / stride + 1;
    int n_out_channels = is_depthwise ? C : K;
    for (int n = 0; n < N; n++)
        for (int k = 0; k < n_out_channels; k++)
            for (int p = 0; p < P; p++)
                for (int q = 0; q < Q; q++) {
                    double s = 0;
                    for (int c = 0; c < C; c++) {
                        if (is_depthwise && c != k) continue;
                        for (int r = 0; r < R; r++)
                            for (int t = 0; t < S; t++) {
                                int h = p * stride + r * dil - pad, w = q * stride + t * dil - pad;
                                if (h < 0 || h >= H || w < 0 || w >= W) continue;
                                double x = I[((n * C + c) * H + h) * W + w];
                                double wt = is_depthwise ? Wt[(c * R + r) * S + t] : Wt[((k * C + c) * R + r) * S + t];
                                s += x * wt;
                            }
                    }
                    O[((n * n_out_channels + k) * P + p) * Q + q] = s;
                }
}

Test(reference, conv2d_stride_pad_dilation)
{
    fixture f = setup_spec("conv2d:N=2,C=3,H=9,W=8,K=4,R=3,S=2,stride=2,pad=1,dilation=2");
    cr_assert_eq(f.n_out, 2 * 4 * 4 * 4); /* P = (9+2-4-1)/2+1 = 4, Q = (8+2-2-1)/2+1 = 4 */
    double *want = calloc((size_t)f.n_out, sizeof(double));
    naive_conv(f.inputs[0], f.inputs[1], want, 2, 3, 9, 8, 4, 3, 2, 2, 1, 2, false);
    check(&f, want);
    free(want);
    teardown(&f);
}

/* conv2d with blocked channels (iblock, oblock) is the NCHW conv2d on the
 * same values relaid: I[n][c/bi][h][w][c%bi], W[k/bo][c/bi][r][s][c%bi][k%bo],
 * bias[k/bo][k%bo], res and O[n][k/bo][p][q][k%bo]; one side blocked alone too. */
static void check_blocked_conv(int bi, int bo)
{
    enum { N = 2, C = 4, H = 5, W = 6, K = 8, R = 3, S = 3, P = 5, Q = 6 };
    char spec[200];
    snprintf(spec, sizeof spec,
             "conv2d:N=2,C=4,H=5,W=6,K=8,R=3,S=3,pad=1,iblock=%d,oblock=%d,epilogue=bias+add+relu", bi, bo);
    fixture f = setup_spec(spec);
    cr_assert_eq(f.n_out, N * K * P * Q);
    int ib = bi ? bi : 1, ob = bo ? bo : 1;
    float *I = malloc(sizeof(float) * N * C * H * W), *Wt = malloc(sizeof(float) * K * C * R * S);
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            for (int hw = 0; hw < H * W; hw++)
                I[(n * C + c) * H * W + hw] = f.inputs[0][((n * (C / ib) + c / ib) * H * W + hw) * ib + c % ib];
    for (int k = 0; k < K; k++)
        for (int c = 0; c < C; c++)
            for (int rs = 0; rs < R * S; rs++)
                Wt[(k * C + c) * R * S + rs] =
                    f.inputs[1][(((k / ob) * (C / ib) + c / ib) * R * S + rs) * ib * ob + (c % ib) * ob + k % ob];
    double *plain = calloc((size_t)f.n_out, sizeof(double)), *want = calloc((size_t)f.n_out, sizeof(double));
    naive_conv(I, Wt, plain, N, C, H, W, K, R, S, 1, 1, 1, false);
    const float *bias = f.inputs[2], *res = f.inputs[3];
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++)
            for (int pq = 0; pq < P * Q; pq++) {
                int64_t at = ((n * (K / ob) + k / ob) * P * Q + pq) * ob + k % ob; /* the blocked place */
                double v = plain[(n * K + k) * P * Q + pq] + bias[k] + res[at];
                want[at] = v > 0 ? v : 0;
            }
    check(&f, want);
    free(I);
    free(Wt);
    free(plain);
    free(want);
    teardown(&f);
}

Test(reference, conv2d_blocked_channels)
{
    check_blocked_conv(2, 4);
    check_blocked_conv(0, 4);
    check_blocked_conv(4, 0);
    check_blocked_conv(1, 8);
}

/* depthwise_conv2d with block=4: the NCHW one on the same values relaid
 * (I, O [n][c/4][h][w][c%4], W [c/4][r][s][c%4]). */
Test(reference, depthwise_conv2d_blocked)
{
    enum { N = 2, C = 8, H = 6, W = 5, R = 3, S = 3, B = 4 };
    fixture f = setup_spec("depthwise_conv2d:N=2,C=8,H=6,W=5,R=3,S=3,stride=1,pad=1,block=4");
    cr_assert_eq(f.n_out, N * C * H * W);
    float *I = malloc(sizeof(float) * N * C * H * W), *Wt = malloc(sizeof(float) * C * R * S);
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            for (int hw = 0; hw < H * W; hw++)
                I[(n * C + c) * H * W + hw] = f.inputs[0][((n * (C / B) + c / B) * H * W + hw) * B + c % B];
    for (int c = 0; c < C; c++)
        for (int rs = 0; rs < R * S; rs++) Wt[c * R * S + rs] = f.inputs[1][((c / B) * R * S + rs) * B + c % B];
    double *plain = calloc((size_t)f.n_out, sizeof(double)), *want = calloc((size_t)f.n_out, sizeof(double));
    naive_conv(I, Wt, plain, N, C, H, W, 0, R, S, 1, 1, 1, true);
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            for (int hw = 0; hw < H * W; hw++)
                want[((n * (C / B) + c / B) * H * W + hw) * B + c % B] = plain[(n * C + c) * H * W + hw];
    check(&f, want);
    free(I);
    free(Wt);
    free(plain);
    free(want);
    teardown(&f);
}

Test(reference, depthwise_conv2d)
{
    fixture f = setup_spec("depthwise_conv2d:N=2,C=3,H=6,W=7,R=3,S=3,stride=1,pad=1");
    cr_assert_eq(f.n_out, 2 * 3 * 6 * 7);
    double *want = calloc((size_t)f.n_out, sizeof(double));
    naive_conv(f.inputs[0], f.inputs[1], want, 2, 3, 6, 7, 0, 3, 3, 1, 1, 1, true);
    check(&f, want);
    free(want);
    teardown(&f);
}

Test(reference, user_expression_with_epilogue)
{
    fixture f = setup_expr("C[i,j] += A[i,k] * B[k,j] - 0.5 * A[i,k]; "
                           "C[i,j] = max(C[i,j], -0.25) * bias[j] + min(-C[i,j], relu(bias[j]))",
                           "i=4,j=3,k=6");
    const float *A = f.inputs[0], *B = f.inputs[1], *bias = f.inputs[2];
    double want[4 * 3];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) {
            double s = 0;
            for (int k = 0; k < 6; k++) s += (double)A[i * 6 + k] * B[k * 3 + j] - 0.5 * A[i * 6 + k];
            double r = bias[j] > 0 ? bias[j] : 0;
            want[i * 3 + j] = fmax(s, -0.25) * bias[j] + fmin(-s, r);
        }
    check(&f, want);
    teardown(&f);
}

Test(reference, user_expression_reads_zero_outside)
{
    /* 1-D convolution with one zero on each side. */
    fixture f = setup_expr("Y[i] += X[i+k-1] * W[k]", "i=6,k=3");
    cr_assert_eq(f.op->tensors[0].dims[0], 7); /* largest index 5 + 2 - 1 = 6 */
    const float *X = f.inputs[0], *W = f.inputs[1];
    double want[6];
    for (int i = 0; i < 6; i++) {
        double s = 0;
        for (int k = 0; k < 3; k++)
            if (i + k - 1 >= 0) s += (double)X[i + k - 1] * W[k];
        want[i] = s;
    }
    check(&f, want);
    teardown(&f);
}

Test(reference, no_reduction_and_negation)
{
    fixture f = setup_expr("C[i,j] = -(A[i,j] - B[j]) * 3 + 1", "i=3,j=5");
    const float *A = f.inputs[0], *B = f.inputs[1];
    double want[15];
    for (int i = 0; i < 15; i++) want[i] = -((double)A[i] - B[i % 5]) * 3 + 1;
    check(&f, want);
    for (int i = 0; i < 15; i++)
        cr_assert(fabs(f.magnitude[i] - ((fabs(A[i]) + fabs(B[i % 5])) * 3 + 1)) < 1e-12);
    teardown(&f);
}

Test(reference, magnitude_may_be_null_and_bad_arguments_fail)
{
    rlt_op *op = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_op_parse("matmul:M=2,N=2,K=2", &op, &d), RLT_STATUS_OK);
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1};
    const float *inputs[2] = {a, b};
    double out[4];
    cr_assert_eq(rlt_op_eval_reference(op, inputs, out, NULL, &d), RLT_STATUS_OK);
    cr_assert_eq(out[0], 1);
    cr_assert_eq(out[3], 4);
    const float *missing[2] = {a, NULL};
    cr_assert_eq(rlt_op_eval_reference(op, missing, out, NULL, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "input 1 (B) is NULL"), "%s", d.message);
    cr_assert_eq(rlt_op_eval_reference(op, inputs, NULL, NULL, NULL), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert_eq(rlt_op_eval_reference(NULL, inputs, out, NULL, NULL), RLT_STATUS_INVALID_ARGUMENT);
    rlt_op_destroy(op);
}

/* One element at a time (what bench_dnnl checks a large output's sample
 * with) gives exactly the whole evaluation's values and magnitudes. */
static void expect_elements_agree(const fixture *f)
{
    rlt_diag d = {0};
    for (int64_t i = 0; i < f->n_out; i++) {
        double v = -1, m = -1;
        cr_assert_eq(rlt_op_eval_reference_at(f->op, (const float *const *)f->inputs, i, &v, &m, &d),
                     RLT_STATUS_OK, "%s", d.message);
        cr_assert_eq(v, f->out[i], "%s element %lld: %.17g, whole %.17g", f->op->spec, (long long)i, v, f->out[i]);
        cr_assert_eq(m, f->magnitude[i], "%s element %lld: magnitude differs", f->op->spec, (long long)i);
    }
}

Test(reference, one_element_at_a_time_agrees_with_the_whole)
{
    const char *specs[] = {"conv2d:N=2,C=3,H=5,W=6,K=4,R=3,S=2,stride=2,pad=1,dilation=1",
                           "dense:M=3,N=5,K=7,bias=1,relu=1", "batch_matmul:B=2,M=3,N=4,K=5"};
    for (size_t s = 0; s < sizeof specs / sizeof *specs; s++) {
        fixture f = setup_spec(specs[s]);
        expect_elements_agree(&f);
        teardown(&f);
    }
    fixture f = setup_expr("Y[i,j] += X[i,k] * W[j,k]; Y[i,j] = relu(Y[i,j] - b[j])", "i=3,j=4,k=5");
    expect_elements_agree(&f);
    rlt_diag d = {0};
    double v, m;
    cr_assert_eq(rlt_op_eval_reference_at(f.op, (const float *const *)f.inputs, f.n_out, &v, &m, &d),
                 RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "outside the output"), "%s", d.message);
    cr_assert_eq(rlt_op_eval_reference_at(f.op, (const float *const *)f.inputs, -1, &v, &m, &d),
                 RLT_STATUS_INVALID_ARGUMENT);
    cr_assert_eq(rlt_op_eval_reference_at(f.op, (const float *const *)f.inputs, 0, NULL, &m, &d),
                 RLT_STATUS_INVALID_ARGUMENT);
    teardown(&f);
}
