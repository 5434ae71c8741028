/* Unit tests of the tensor-expression front end (src/ir/op.c, expr_parse.c):
 * the op library, canonical specs, shapes, axes, flops, printing, every kind
 * of bad spec and bad expression with its status and message, round trips
 * through the spec, and the out-of-memory loops. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "ir/ir.h"

static rlt_op *parse_ok(const char *spec)
{
    rlt_diag d = {0};
    rlt_op *op = NULL;
    rlt_status st = rlt_op_parse(spec, &op, &d);
    cr_assert_eq(st, RLT_STATUS_OK, "'%s' failed: %s", spec, d.message);
    cr_assert_not_null(op);
    return op;
}

static rlt_op *expr_ok(const char *expr, const char *shape)
{
    rlt_diag d = {0};
    rlt_op *op = NULL;
    rlt_status st = rlt_op_from_expr(expr, shape, &op, &d);
    cr_assert_eq(st, RLT_STATUS_OK, "'%s' | '%s' failed: %s", expr, shape, d.message);
    cr_assert_not_null(op);
    return op;
}

static void spec_fails(const char *spec, rlt_status want, const char *substr)
{
    rlt_diag d = {0};
    rlt_op *op = (rlt_op *)1;
    rlt_status st = rlt_op_parse(spec, &op, &d);
    cr_assert_eq(st, want, "'%s': got %s (%s), want %s", spec, rlt_status_str(st), d.message, rlt_status_str(want));
    cr_assert_null(op, "'%s': *out must be NULL on failure", spec);
    cr_assert_eq(d.status, want);
    cr_assert(strstr(d.message, substr), "'%s': message '%s' lacks '%s'", spec, d.message, substr);
}

static void expr_fails(const char *expr, const char *shape, rlt_status want, const char *substr)
{
    rlt_diag d = {0};
    rlt_op *op = (rlt_op *)1;
    rlt_status st = rlt_op_from_expr(expr, shape, &op, &d);
    cr_assert_eq(st, want, "'%s' | '%s': got %s (%s), want %s", expr, shape, rlt_status_str(st), d.message,
                 rlt_status_str(want));
    cr_assert_null(op);
    cr_assert(strstr(d.message, substr), "'%s': message '%s' lacks '%s'", expr, d.message, substr);
}

static char *print_statement(const rlt_op *op)
{
    rlt_str s;
    rlt_str_init(&s);
    rlt_op_print_statement(op, &s);
    return rlt_str_take(&s);
}

static void assert_dims(const rlt_op *op, const char *name, int n_dims, const int64_t *dims)
{
    int t = rlt_op_find_tensor(op, name);
    cr_assert_geq(t, 0, "no tensor %s", name);
    cr_assert_eq(op->tensors[t].n_dims, n_dims, "%s has %d dims", name, op->tensors[t].n_dims);
    for (int d = 0; d < n_dims; d++)
        cr_assert_eq(op->tensors[t].dims[d], dims[d], "%s dim %d is %lld, want %lld", name, d,
                     (long long)op->tensors[t].dims[d], (long long)dims[d]);
}

static void assert_axes(const rlt_op *op, const char *names, int n_spatial)
{
    char buf[128] = "";
    for (int a = 0; a < op->n_axes; a++) strcat(buf, op->axes[a].name);
    cr_assert_str_eq(buf, names);
    cr_assert_eq(op->n_spatial, n_spatial);
    for (int a = 0; a < op->n_axes; a++) cr_assert_eq(op->axes[a].is_reduce, a >= n_spatial);
}

static bool same_expr(const rlt_expr *a, const rlt_expr *b)
{
    if (!a || !b) return a == b;
    if (a->kind != b->kind) return false;
    if (a->kind == RLT_EXPR_CONST && a->value != b->value) return false;
    if (a->kind == RLT_EXPR_LOAD &&
        (a->tensor != b->tensor || memcmp(a->index, b->index, sizeof a->index) != 0))
        return false;
    return same_expr(a->a, b->a) && same_expr(a->b, b->b);
}

/* ---- the library -------------------------------------------------------- */

Test(op, library_lists_every_builtin_and_its_example_parses)
{
    int n = 0;
    const rlt_op_info *lib = rlt_op_library(&n);
    cr_assert_eq(n, 5);
    const char *names[] = {"matmul", "batch_matmul", "dense", "conv2d", "depthwise_conv2d"};
    for (int i = 0; i < n; i++) {
        cr_assert_str_eq(lib[i].name, names[i]);
        cr_assert(lib[i].summary && lib[i].summary[0]);
        rlt_op *op = parse_ok(lib[i].example);
        cr_assert_str_eq(op->kind, names[i]);
        for (int p = 0; p < lib[i].n_params; p++) {
            const rlt_op_param *param = &lib[i].params[p];
            cr_assert(param->help && param->help[0]);
            cr_assert_leq(param->min_value, param->max_value);
            cr_assert(param->is_omitted_at_default || strstr(op->spec, param->key), "canonical spec %s lacks %s",
                      op->spec, param->key);
        }
        rlt_op_destroy(op);
    }
}

Test(op, matmul_shapes_axes_flops_and_print)
{
    rlt_op *op = parse_ok("matmul:M=512,N=256,K=128");
    cr_assert_str_eq(op->kind, "matmul");
    cr_assert_str_eq(op->spec, "matmul:M=512,N=256,K=128");
    assert_axes(op, "ijk", 2);
    cr_assert_eq(op->axes[0].extent, 512);
    cr_assert_eq(op->axes[1].extent, 256);
    cr_assert_eq(op->axes[2].extent, 128);
    cr_assert_eq(op->n_tensors, 3);
    assert_dims(op, "A", 2, (int64_t[]){512, 128});
    assert_dims(op, "B", 2, (int64_t[]){128, 256});
    assert_dims(op, "C", 2, (int64_t[]){512, 256});
    cr_assert(op->tensors[2].is_output);
    cr_assert(!op->tensors[0].is_output && !op->tensors[0].is_weight);
    cr_assert_eq(op->flops, 2.0 * 512 * 256 * 128);
    cr_assert_eq(rlt_op_reduce_size(op), 128);
    cr_assert_eq(rlt_op_tensor_size(op, 0), 512 * 128);
    cr_assert_null(op->epilogue);
    cr_assert_eq(rlt_op_find_axis(op, "k"), 2);
    cr_assert_eq(rlt_op_find_axis(op, "x"), -1);
    cr_assert_eq(rlt_op_find_tensor(op, "Z"), -1);

    rlt_str s;
    rlt_str_init(&s);
    rlt_op_print(op, &s);
    cr_assert_str_eq(s.data, "C[i,j] += A[i,k] * B[k,j]   with i=512 j=256 k=128\n"
                             "  tensors A[512,128] B[128,256] C[512,256] (output)\n");
    rlt_str_free(&s);
    rlt_op_destroy(op);
}

Test(op, spaces_around_keys_and_values_are_accepted)
{
    rlt_op *op = parse_ok("  matmul : K=3 , N = 2,M=1 ");
    cr_assert_str_eq(op->spec, "matmul:M=1,N=2,K=3");
    rlt_op_destroy(op);
}

Test(op, batch_matmul)
{
    rlt_op *op = parse_ok("batch_matmul:B=4,M=8,N=16,K=32");
    assert_axes(op, "bijk", 3);
    assert_dims(op, "A", 3, (int64_t[]){4, 8, 32});
    assert_dims(op, "B", 3, (int64_t[]){4, 32, 16});
    assert_dims(op, "C", 3, (int64_t[]){4, 8, 16});
    cr_assert_eq(op->flops, 2.0 * 4 * 8 * 16 * 32);
    char *text = print_statement(op);
    cr_assert_str_eq(text, "C[b,i,j] += A[b,i,k] * B[b,k,j]");
    rlt_free(text);
    rlt_op_destroy(op);
}

Test(op, dense_defaults_and_epilogues)
{
    rlt_op *op = parse_ok("dense:M=2,N=3,K=4");
    cr_assert_str_eq(op->spec, "dense:M=2,N=3,K=4,bias=0,relu=0");
    cr_assert_null(op->epilogue);
    cr_assert_eq(op->n_tensors, 3);
    assert_dims(op, "W", 2, (int64_t[]){3, 4});
    cr_assert(op->tensors[rlt_op_find_tensor(op, "W")].is_weight);
    cr_assert_eq(op->flops, 2.0 * 2 * 3 * 4);
    rlt_op_destroy(op);

    op = parse_ok("dense:relu=1,bias=1,K=4,N=3,M=2");
    cr_assert_str_eq(op->spec, "dense:M=2,N=3,K=4,bias=1,relu=1");
    cr_assert_eq(op->n_tensors, 4);
    assert_dims(op, "bias", 1, (int64_t[]){3});
    cr_assert(op->tensors[rlt_op_find_tensor(op, "bias")].is_weight);
    cr_assert_eq(rlt_op_find_tensor(op, "Y"), 3);
    cr_assert(op->tensors[3].is_output);
    cr_assert_eq(op->flops, 2.0 * 2 * 3 * 4 + 2.0 * 2 * 3);
    char *text = print_statement(op);
    cr_assert_str_eq(text, "Y[i,j] += X[i,k] * W[j,k]; Y[i,j] = relu(Y[i,j] + bias[j])");
    rlt_free(text);
    rlt_op_destroy(op);

    op = parse_ok("dense:M=2,N=3,K=4,relu=1");
    text = print_statement(op);
    cr_assert_str_eq(text, "Y[i,j] += X[i,k] * W[j,k]; Y[i,j] = relu(Y[i,j])");
    cr_assert_eq(op->flops, 2.0 * 2 * 3 * 4 + 2 * 3);
    rlt_free(text);
    rlt_op_destroy(op);
}

Test(op, epilogue_key_on_every_builtin)
{
    /* conv2d: bias over k, the residual of the output's shape, before the output */
    rlt_op *op = parse_ok("conv2d:N=1,C=4,H=6,W=6,K=8,R=3,S=3,pad=1,epilogue=bias+add+relu6");
    cr_assert_str_eq(op->spec, "conv2d:N=1,C=4,H=6,W=6,K=8,R=3,S=3,stride=1,pad=1,dilation=1,epilogue=bias+add+relu6");
    cr_assert_eq(op->n_tensors, 5);
    cr_assert_eq(rlt_op_find_tensor(op, "bias"), 2);
    cr_assert_eq(rlt_op_find_tensor(op, "res"), 3);
    cr_assert_eq(rlt_op_find_tensor(op, "O"), 4);
    assert_dims(op, "bias", 1, (int64_t[]){8});
    assert_dims(op, "res", 4, (int64_t[]){1, 8, 6, 6});
    cr_assert(op->tensors[2].is_weight && !op->tensors[2].is_output);
    cr_assert(!op->tensors[3].is_weight && !op->tensors[3].is_output);
    cr_assert(op->tensors[4].is_output && !op->tensors[4].is_weight);
    char *text = print_statement(op);
    cr_assert_str_eq(text, "O[n,k,p,q] += I[n,c,p+r-1,q+s-1] * W[k,c,r,s]; "
                           "O[n,k,p,q] = min(relu(O[n,k,p,q] + bias[k] + res[n,k,p,q]), 6)");
    rlt_free(text);
    cr_assert_eq(op->flops, 2.0 * 8 * 36 * 4 * 9 + 4.0 * 8 * 36, "sum, then add, add, relu, min per output");
    rlt_op_destroy(op);
    /* the order given is the order applied */
    op = parse_ok("matmul:M=2,N=3,K=4,epilogue=relu+add");
    text = print_statement(op);
    cr_assert_str_eq(text, "C[i,j] += A[i,k] * B[k,j]; C[i,j] = relu(C[i,j]) + res[i,j]");
    rlt_free(text);
    rlt_op_destroy(op);
    /* the channel axis of each op */
    op = parse_ok("batch_matmul:B=2,M=3,N=5,K=4,epilogue=bias");
    assert_dims(op, "bias", 1, (int64_t[]){5});
    rlt_op_destroy(op);
    op = parse_ok("depthwise_conv2d:N=1,C=6,H=5,W=5,R=3,S=3,epilogue=bias+relu6");
    assert_dims(op, "bias", 1, (int64_t[]){6});
    text = print_statement(op);
    cr_assert_str_eq(text, "O[n,c,p,q] += I[n,c,p+r,q+s] * W[c,0,r,s]; O[n,c,p,q] = min(relu(O[n,c,p,q] + bias[c]), 6)");
    rlt_free(text);
    rlt_op_destroy(op);
    /* dense says bias and relu with its own keys; other epilogues keep the key */
    op = parse_ok("dense:M=2,N=3,K=4,epilogue=bias+relu");
    cr_assert_str_eq(op->spec, "dense:M=2,N=3,K=4,bias=1,relu=1");
    rlt_op_destroy(op);
    op = parse_ok("dense:M=2,N=3,K=4,epilogue=relu");
    cr_assert_str_eq(op->spec, "dense:M=2,N=3,K=4,bias=0,relu=1");
    rlt_op_destroy(op);
    op = parse_ok("dense:M=2,N=3,K=4,epilogue=bias+add");
    cr_assert_str_eq(op->spec, "dense:M=2,N=3,K=4,bias=0,relu=0,epilogue=bias+add");
    assert_dims(op, "bias", 1, (int64_t[]){3});
    rlt_op_destroy(op);
    /* every fused spec parses back to itself */
    const char *specs[] = {"conv2d:N=1,C=4,H=6,W=6,K=8,R=3,S=3,stride=1,pad=1,dilation=1,epilogue=relu6",
                           "matmul:M=2,N=3,K=4,epilogue=add+relu", "dense:M=2,N=3,K=4,bias=0,relu=0,epilogue=relu+bias"};
    for (size_t i = 0; i < RLT_ARRAY_LEN(specs); i++) {
        op = parse_ok(specs[i]);
        cr_assert_str_eq(op->spec, specs[i]);
        rlt_op_destroy(op);
    }
}

Test(op, epilogue_key_errors)
{
    spec_fails("matmul:M=2,N=3,K=4,epilogue=sigmoid", RLT_STATUS_INVALID_ARGUMENT,
               "unknown epilogue step 'sigmoid'; expected steps from bias, add, relu, relu6");
    spec_fails("matmul:M=2,N=3,K=4,epilogue=", RLT_STATUS_PARSE_ERROR, "empty epilogue step");
    spec_fails("matmul:M=2,N=3,K=4,epilogue=relu++add", RLT_STATUS_PARSE_ERROR, "empty epilogue step");
    spec_fails("matmul:M=2,N=3,K=4,epilogue=relu+relu", RLT_STATUS_INVALID_ARGUMENT, "epilogue step relu is given twice");
    spec_fails("matmul:M=2,N=3,K=4,epilogue=relu,epilogue=add", RLT_STATUS_INVALID_ARGUMENT,
               "key epilogue is given twice");
    spec_fails("dense:M=2,N=3,K=4,bias=1,epilogue=add", RLT_STATUS_INVALID_ARGUMENT, "not both");
    spec_fails("matmul:M=2,N=3,K=4,Epilogue=relu", RLT_STATUS_INVALID_ARGUMENT, "unknown key 'Epilogue'");
}

Test(op, conv2d_output_sizes)
{
    rlt_op *op = parse_ok("conv2d:N=2,C=3,H=32,W=30,K=8,R=3,S=5");
    cr_assert_str_eq(op->spec, "conv2d:N=2,C=3,H=32,W=30,K=8,R=3,S=5,stride=1,pad=0,dilation=1");
    assert_axes(op, "nkpqcrs", 4);
    assert_dims(op, "I", 4, (int64_t[]){2, 3, 32, 30});
    assert_dims(op, "W", 4, (int64_t[]){8, 3, 3, 5});
    assert_dims(op, "O", 4, (int64_t[]){2, 8, 30, 26});
    cr_assert(op->tensors[1].is_weight);
    cr_assert_eq(op->flops, 2.0 * 2 * 8 * 30 * 26 * 3 * 3 * 5);
    cr_assert_eq(rlt_op_reduce_size(op), 3 * 3 * 5);
    rlt_op_destroy(op);

    /* P = (H + 2*pad - dilation*(R-1) - 1)/stride + 1 = (32 + 2 - 4 - 1)/2 + 1 = 15 */
    op = parse_ok("conv2d:N=1,C=3,H=32,W=31,K=8,R=3,S=3,stride=2,pad=1,dilation=2");
    assert_dims(op, "O", 4, (int64_t[]){1, 8, 15, 15});
    char *text = print_statement(op);
    cr_assert_str_eq(text, "O[n,k,p,q] += I[n,c,2*p+2*r-1,2*q+2*s-1] * W[k,c,r,s]");
    rlt_free(text);
    rlt_op_destroy(op);

    op = parse_ok("conv2d:N=1,C=1,H=7,W=7,K=1,R=3,S=3,stride=2,pad=1");
    assert_dims(op, "O", 4, (int64_t[]){1, 1, 4, 4}); /* (7+2-2-1)/2+1 */
    rlt_op_destroy(op);

    op = parse_ok("conv2d:N=1,C=1,H=5,W=5,K=1,R=5,S=5"); /* the kernel exactly fits */
    assert_dims(op, "O", 4, (int64_t[]){1, 1, 1, 1});
    rlt_op_destroy(op);
}

Test(op, conv2d_blocked_layouts)
{
    rlt_diag d = {0};
    rlt_op *op = NULL;
    /* both sides blocked: channels as two axes each, the weight blocked on both */
    cr_assert_eq(rlt_op_parse("conv2d:N=1,C=32,H=8,W=8,K=48,R=3,S=3,pad=1,oblock=16,iblock=8,epilogue=bias+add", &op,
                              &d),
                 RLT_STATUS_OK, "%s", d.message);
    cr_expect_str_eq(rlt_op_spec(op),
                     "conv2d:N=1,C=32,H=8,W=8,K=48,R=3,S=3,stride=1,pad=1,dilation=1,iblock=8,oblock=16,epilogue=bias+add");
    cr_expect_eq(op->n_axes, 9);
    cr_expect_eq(op->n_spatial, 5);
    const char *names[] = {"n", "ko", "p", "q", "ki", "co", "r", "s", "ci"};
    int64_t extents[] = {1, 3, 8, 8, 16, 4, 3, 3, 8};
    for (int a = 0; a < 9; a++) {
        cr_expect_str_eq(op->axes[a].name, names[a]);
        cr_expect_eq(op->axes[a].extent, extents[a], "axis %s", names[a]);
    }
    int64_t w[] = {3, 4, 3, 3, 8, 16}, bias[] = {3, 16}, out[] = {1, 3, 8, 8, 16};
    int t = rlt_op_find_tensor(op, "W");
    cr_assert_eq(op->tensors[t].n_dims, 6);
    for (int i = 0; i < 6; i++) cr_expect_eq(op->tensors[t].dims[i], w[i]);
    t = rlt_op_find_tensor(op, "bias");
    cr_assert_eq(op->tensors[t].n_dims, 2);
    for (int i = 0; i < 2; i++) cr_expect_eq(op->tensors[t].dims[i], bias[i]);
    for (int name = 0; name < 2; name++) {
        t = rlt_op_find_tensor(op, name ? "O" : "res");
        cr_assert_eq(op->tensors[t].n_dims, 5);
        for (int i = 0; i < 5; i++) cr_expect_eq(op->tensors[t].dims[i], out[i]);
    }
    /* the same FLOPs as NCHW: blocks move data, not work */
    rlt_op *plain = NULL;
    cr_assert_eq(rlt_op_parse("conv2d:N=1,C=32,H=8,W=8,K=48,R=3,S=3,pad=1,epilogue=bias+add", &plain, &d),
                 RLT_STATUS_OK);
    cr_expect_eq(op->flops, plain->flops);
    /* a block of 0 is NCHW, and a spec never names it */
    rlt_op *zero = NULL;
    cr_assert_eq(rlt_op_parse("conv2d:N=1,C=32,H=8,W=8,K=48,R=3,S=3,pad=1,iblock=0,oblock=0,epilogue=bias+add", &zero,
                              &d),
                 RLT_STATUS_OK);
    cr_expect_str_eq(rlt_op_spec(zero), rlt_op_spec(plain));
    rlt_op_destroy(zero);
    rlt_op_destroy(plain);
    rlt_op_destroy(op);
    /* one side alone: the stem's NCHW input, a blocked output */
    cr_assert_eq(rlt_op_parse("conv2d:N=1,C=3,H=16,W=16,K=32,R=3,S=3,stride=2,oblock=16", &op, &d), RLT_STATUS_OK);
    cr_expect_eq(op->tensors[0].n_dims, 4);
    cr_expect_eq(op->tensors[1].n_dims, 5); /* W[ko][c][r][s][ki] */
    cr_expect_eq(op->tensors[op->n_tensors - 1].n_dims, 5);
    rlt_op_destroy(op);
    /* a block must divide its channels */
    op = NULL;
    cr_expect_eq(rlt_op_parse("conv2d:N=1,C=24,H=8,W=8,K=48,R=3,S=3,iblock=16", &op, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_expect(strstr(d.message, "iblock=16 does not divide C=24"), "%s", d.message);
    d = (rlt_diag){0};
    cr_expect_eq(rlt_op_parse("conv2d:N=1,C=16,H=8,W=8,K=40,R=3,S=3,oblock=16", &op, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_expect(strstr(d.message, "oblock=16 does not divide K=40"), "%s", d.message);
    cr_expect_null(op);
    /* depthwise: one block for both sides */
    cr_assert_eq(rlt_op_parse("depthwise_conv2d:N=1,C=32,H=8,W=8,R=3,S=3,pad=1,block=16,epilogue=bias+relu6", &op, &d),
                 RLT_STATUS_OK);
    cr_expect_str_eq(rlt_op_spec(op),
                     "depthwise_conv2d:N=1,C=32,H=8,W=8,R=3,S=3,stride=1,pad=1,dilation=1,block=16,epilogue=bias+relu6");
    int64_t dw[] = {2, 3, 3, 16};
    cr_assert_eq(op->tensors[1].n_dims, 4);
    for (int i = 0; i < 4; i++) cr_expect_eq(op->tensors[1].dims[i], dw[i]);
    cr_expect_eq(op->tensors[op->n_tensors - 1].n_dims, 5);
    rlt_op_destroy(op);
    op = NULL;
    d = (rlt_diag){0};
    cr_expect_eq(rlt_op_parse("depthwise_conv2d:N=1,C=24,H=8,W=8,R=3,S=3,block=16", &op, &d),
                 RLT_STATUS_INVALID_ARGUMENT);
    cr_expect(strstr(d.message, "block=16 does not divide C=24"), "%s", d.message);
}

Test(op, depthwise_conv2d)
{
    rlt_op *op = parse_ok("depthwise_conv2d:N=1,C=16,H=10,W=10,R=3,S=3,stride=1,pad=1");
    cr_assert_str_eq(op->spec, "depthwise_conv2d:N=1,C=16,H=10,W=10,R=3,S=3,stride=1,pad=1,dilation=1");
    assert_axes(op, "ncpqrs", 4);
    assert_dims(op, "W", 4, (int64_t[]){16, 1, 3, 3});
    assert_dims(op, "O", 4, (int64_t[]){1, 16, 10, 10});
    cr_assert_eq(op->flops, 2.0 * 16 * 10 * 10 * 9);
    char *text = print_statement(op);
    cr_assert_str_eq(text, "O[n,c,p,q] += I[n,c,p+r-1,q+s-1] * W[c,0,r,s]");
    rlt_free(text);
    rlt_op_destroy(op);
}

Test(op, ranges_and_bounds)
{
    rlt_op *op = parse_ok("conv2d:N=1,C=2,H=8,W=8,K=1,R=3,S=3,pad=1");
    const rlt_expr *in = op->body->a, *w = op->body->b;
    cr_assert_eq(in->kind, RLT_EXPR_LOAD);
    int64_t lo, hi;
    rlt_affine_range(op, &in->index[2], &lo, &hi); /* p + r - 1, p in 0..7, r in 0..2 */
    cr_assert_eq(lo, -1);
    cr_assert_eq(hi, 8);
    cr_assert(rlt_load_may_be_out_of_bounds(op, in));
    cr_assert(!rlt_load_may_be_out_of_bounds(op, w));
    rlt_str s;
    rlt_str_init(&s);
    rlt_affine_print(op, &in->index[2], &s);
    cr_assert_str_eq(s.data, "p+r-1");
    rlt_str_free(&s);
    rlt_op_destroy(op);

    op = parse_ok("conv2d:N=1,C=2,H=8,W=8,K=1,R=3,S=3");
    cr_assert(!rlt_load_may_be_out_of_bounds(op, op->body->a));
    rlt_op_destroy(op);
}

Test(op, affine_print_forms)
{
    rlt_op *op = parse_ok("matmul:M=4,N=4,K=4");
    rlt_affine a = {{0}, 0};
    rlt_str s;
    rlt_str_init(&s);
    rlt_affine_print(op, &a, &s);
    cr_assert_str_eq(s.data, "0");
    rlt_str_clear(&s);
    a.offset = -3;
    rlt_affine_print(op, &a, &s);
    cr_assert_str_eq(s.data, "-3");
    rlt_str_clear(&s);
    a.coef[0] = -1;
    a.coef[2] = 3;
    a.offset = 2;
    rlt_affine_print(op, &a, &s);
    cr_assert_str_eq(s.data, "-i+3*k+2");
    rlt_str_clear(&s);
    a.coef[0] = 2;
    a.coef[2] = -2;
    a.offset = -1;
    rlt_affine_print(op, &a, &s);
    cr_assert_str_eq(s.data, "2*i-2*k-1");
    int64_t lo, hi;
    rlt_affine_range(op, &a, &lo, &hi);
    cr_assert_eq(lo, -7);
    cr_assert_eq(hi, 5);
    rlt_str_free(&s);
    rlt_op_destroy(op);
}

Test(op, largest_accepted_sizes)
{
    rlt_op *op = parse_ok("matmul:M=2147483648,N=1,K=1");
    cr_assert_eq(rlt_op_tensor_size(op, 2), 2147483648LL);
    rlt_op_destroy(op);
}

/* ---- bad specs ---------------------------------------------------------- */

Test(op, spec_errors_name_what_where_and_what_is_accepted)
{
    spec_fails("matmull:M=1,N=1,K=1", RLT_STATUS_INVALID_ARGUMENT, "unknown op 'matmull'");
    spec_fails("conv3d:N=1", RLT_STATUS_INVALID_ARGUMENT, "known ops: matmul, batch_matmul, dense, conv2d");
    spec_fails("", RLT_STATUS_PARSE_ERROR, "empty op spec");
    spec_fails("   ", RLT_STATUS_PARSE_ERROR, "empty op spec");
    spec_fails(":M=1", RLT_STATUS_PARSE_ERROR, "no op name");
    spec_fails("matmul", RLT_STATUS_PARSE_ERROR, "no ':'");
    spec_fails("matmul M=1", RLT_STATUS_INVALID_ARGUMENT, "unknown op");
    spec_fails("matmul:M=1,,N=1,K=1", RLT_STATUS_PARSE_ERROR, "empty parameter at column 12");
    spec_fails("matmul:M=1,N=1,K=1,", RLT_STATUS_PARSE_ERROR, "empty parameter at column 20");
    spec_fails("matmul:M1,N=1,K=1", RLT_STATUS_PARSE_ERROR, "'M1' at column 8 has no '='");
    spec_fails("matmul:=1,N=1,K=1", RLT_STATUS_PARSE_ERROR, "no key before '='");
    spec_fails("matmul:M=,N=1,K=1", RLT_STATUS_PARSE_ERROR, "key M has no value");
    spec_fails("matmul:X=1,N=1,K=1", RLT_STATUS_INVALID_ARGUMENT, "unknown key 'X' for matmul; accepted keys: M, N, K");
    spec_fails("matmul:m=1,N=1,K=1", RLT_STATUS_INVALID_ARGUMENT, "did you mean 'M'");
    spec_fails("conv2d:N=1,C=1,H=3,W=3,K=1,R=1,S=1,strides=2", RLT_STATUS_INVALID_ARGUMENT,
               "stride (optional), pad (optional), dilation (optional)");
    spec_fails("matmul:M=1,N=1,K=1,M=2", RLT_STATUS_INVALID_ARGUMENT, "key M is given twice");
    spec_fails("matmul:M=1,N=1", RLT_STATUS_INVALID_ARGUMENT, "needs key K");
    spec_fails("conv2d:N=1,C=1,H=3,W=3,K=1,R=1", RLT_STATUS_INVALID_ARGUMENT, "needs key S");
    spec_fails("matmul:M=0,N=1,K=1", RLT_STATUS_INVALID_ARGUMENT, "M must be at least 1, got 0");
    spec_fails("matmul:M=-4,N=1,K=1", RLT_STATUS_INVALID_ARGUMENT, "M must be at least 1, got -4");
    spec_fails("conv2d:N=1,C=1,H=3,W=3,K=1,R=1,S=1,pad=-1", RLT_STATUS_INVALID_ARGUMENT,
               "pad must be at least 0, got -1");
    spec_fails("conv2d:N=1,C=1,H=3,W=3,K=1,R=1,S=1,stride=0", RLT_STATUS_INVALID_ARGUMENT, "stride must be at least 1");
    spec_fails("matmul:M=1.5,N=1,K=1", RLT_STATUS_PARSE_ERROR, "value '1.5' of M is not a whole number");
    spec_fails("matmul:M=abc,N=1,K=1", RLT_STATUS_PARSE_ERROR, "expected a whole number from 1 to 2147483648");
    spec_fails("matmul:M=0x10,N=1,K=1", RLT_STATUS_PARSE_ERROR, "not a whole number");
    spec_fails("matmul:M=-,N=1,K=1", RLT_STATUS_PARSE_ERROR, "not a number");
    spec_fails("matmul:M=99999999999999999999999999,N=1,K=1", RLT_STATUS_INVALID_ARGUMENT, "too large");
    spec_fails("matmul:M=-99999999999999999999999999,N=1,K=1", RLT_STATUS_INVALID_ARGUMENT, "out of range");
    spec_fails("matmul:M=2147483649,N=1,K=1", RLT_STATUS_INVALID_ARGUMENT, "M=2147483649 is too large");
    spec_fails("dense:M=1,N=1,K=1,bias=2", RLT_STATUS_INVALID_ARGUMENT, "bias must be 0 or 1, got 2");
    spec_fails("dense:M=1,N=1,K=1,relu=-1", RLT_STATUS_INVALID_ARGUMENT, "relu must be 0 or 1, got -1");
    spec_fails("dense:M=1,N=1,K=1,relu=yes", RLT_STATUS_PARSE_ERROR, "expected 0 or 1");
    spec_fails("matmul:M=65536,N=65536,K=1", RLT_STATUS_INVALID_ARGUMENT,
               "tensor C would have 65536 x 65536 elements, more than the 2147483648 (2^31)");
    spec_fails("conv2d:N=1,C=1,H=3,W=8,K=1,R=5,S=1", RLT_STATUS_INVALID_ARGUMENT,
               "output size P = (H + 2*pad - dilation*(R-1) - 1)/stride + 1 = (3 + 0 - 4 - 1)/1 + 1 is below 1");
    spec_fails("conv2d:N=1,C=1,H=8,W=8,K=1,R=3,S=3,dilation=4", RLT_STATUS_INVALID_ARGUMENT,
               "output size P");
    spec_fails("depthwise_conv2d:N=1,C=1,H=8,W=2,R=1,S=3", RLT_STATUS_INVALID_ARGUMENT,
               "output size Q = (W + 2*pad - dilation*(S-1) - 1)/stride + 1");
    spec_fails("expr:C[i] = A[i]", RLT_STATUS_PARSE_ERROR, "needs '|'");
    spec_fails("expr", RLT_STATUS_PARSE_ERROR, "expected expr:EXPRESSION|SHAPE");
}

Test(op, bad_arguments_are_reported)
{
    rlt_diag d = {0};
    rlt_op *op = NULL;
    cr_assert_eq(rlt_op_parse(NULL, &op, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert_neq(d.message[0], '\0');
    cr_assert_eq(rlt_op_parse("matmul:M=1,N=1,K=1", NULL, NULL), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert_eq(rlt_op_from_expr(NULL, "i=1", &op, NULL), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert_eq(rlt_op_from_expr("C[i] = A[i]", NULL, &op, NULL), RLT_STATUS_INVALID_ARGUMENT);
    rlt_op_destroy(NULL);
}

Test(op, messages_never_carry_control_bytes)
{
    rlt_diag d = {0};
    rlt_op *op = NULL;
    cr_assert_neq(rlt_op_parse("mat\x01mul\x7f:M=1", &op, &d), RLT_STATUS_OK);
    for (const char *c = d.message; *c; c++) cr_assert((unsigned char)*c >= 0x20 && (unsigned char)*c < 0x7f);
    rlt_diag d2 = {0};
    cr_assert_neq(rlt_op_from_expr("C[i] += A[i] \x02", "i=1", &op, &d2), RLT_STATUS_OK);
    cr_assert(strstr(d2.message, "byte 0x02"), "%s", d2.message);
}

/* ---- user expressions --------------------------------------------------- */

Test(op, expression_matmul_matches_the_builtin)
{
    rlt_op *op = expr_ok("C[i,j] += A[i,k] * B[k,j]", "i=64,j=32,k=16");
    cr_assert_str_eq(op->kind, "expr");
    cr_assert_str_eq(op->spec, "expr:C[i,j] += A[i,k] * B[k,j]|i=64,j=32,k=16");
    assert_axes(op, "ijk", 2);
    assert_dims(op, "A", 2, (int64_t[]){64, 16});
    assert_dims(op, "B", 2, (int64_t[]){16, 32});
    assert_dims(op, "C", 2, (int64_t[]){64, 32});
    cr_assert_eq(rlt_op_find_tensor(op, "C"), 2);
    cr_assert_eq(op->flops, 2.0 * 64 * 32 * 16);
    rlt_op *builtin = parse_ok("matmul:M=64,N=32,K=16");
    cr_assert(same_expr(op->body, builtin->body));
    rlt_op_destroy(builtin);
    rlt_op_destroy(op);
}

Test(op, expression_spec_is_normalised_and_parses_back)
{
    rlt_op *op = expr_ok("  C[i , j]+=A[ i,k ]*B[k,j]  ", " k=4 ,j=3, i=2 ");
    cr_assert_str_eq(op->spec, "expr:C[i,j] += A[i,k] * B[k,j]|i=2,j=3,k=4");
    rlt_op *again = parse_ok(op->spec);
    cr_assert_str_eq(again->spec, op->spec);
    cr_assert(same_expr(op->body, again->body));
    rlt_op_destroy(again);
    rlt_op_destroy(op);
}

Test(op, builtins_round_trip_through_their_statement)
{
    int n = 0;
    const rlt_op_info *lib = rlt_op_library(&n);
    const char *extra[] = {"dense:M=3,N=5,K=7,bias=1,relu=1", "dense:M=3,N=5,K=7,relu=1",
                           "conv2d:N=1,C=2,H=9,W=9,K=3,R=3,S=3,stride=2,pad=1,dilation=2"};
    for (int i = 0; i < n + (int)RLT_ARRAY_LEN(extra); i++) {
        rlt_op *op = parse_ok(i < n ? lib[i].example : extra[i - n]);
        char *text = print_statement(op);
        char shape[256] = "";
        for (int a = 0; a < op->n_axes; a++)
            snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%s=%lld", a ? "," : "",
                     op->axes[a].name, (long long)op->axes[a].extent);
        rlt_op *re = expr_ok(text, shape);
        cr_assert(same_expr(op->body, re->body), "%s", text);
        cr_assert(same_expr(op->epilogue, re->epilogue), "%s", text);
        cr_assert_eq(op->flops, re->flops, "%s", text);
        for (int t = 0; t < op->n_tensors; t++)
            cr_assert_str_eq(op->tensors[t].name, re->tensors[t].name);
        rlt_free(text);
        rlt_op_destroy(re);
        rlt_op_destroy(op);
    }
}

Test(op, expression_epilogue)
{
    rlt_op *op = expr_ok("C[i,j] += A[i,k]*B[k,j]; C[i,j] = relu(C[i,j] + bias[j])", "i=4,j=5,k=6");
    cr_assert_str_eq(op->spec, "expr:C[i,j] += A[i,k] * B[k,j]; C[i,j] = relu(C[i,j] + bias[j])|i=4,j=5,k=6");
    cr_assert_eq(op->n_tensors, 4);
    cr_assert_eq(rlt_op_find_tensor(op, "bias"), 2);
    assert_dims(op, "bias", 1, (int64_t[]){5});
    cr_assert_not_null(op->epilogue);
    cr_assert_eq(op->epilogue->kind, RLT_EXPR_RELU);
    cr_assert_eq(op->epilogue->a->kind, RLT_EXPR_ADD);
    cr_assert_eq(op->epilogue->a->a->kind, RLT_EXPR_ACC);
    cr_assert_eq(op->flops, 2.0 * 4 * 5 * 6 + 2.0 * 4 * 5);
    rlt_op_destroy(op);

    op = expr_ok("C[i] += A[i,k]; C[i] = C[i];", "i=3,k=2"); /* a trailing ';' is fine */
    cr_assert_eq(op->epilogue->kind, RLT_EXPR_ACC);
    rlt_op_destroy(op);
}

Test(op, expression_conv_with_padding_infers_input_dims)
{
    rlt_op *op = expr_ok("O[n,k,p,q] += I[n,c,p*2+r-1,q*2+s-1] * W[k,c,r,s]", "n=1,k=2,p=3,q=3,c=2,r=3,s=3");
    cr_assert_str_eq(op->spec,
                     "expr:O[n,k,p,q] += I[n,c,2*p+r-1,2*q+s-1] * W[k,c,r,s]|n=1,k=2,p=3,q=3,c=2,r=3,s=3");
    assert_axes(op, "nkpqcrs", 4);
    /* largest index 2*2 + 2 - 1 = 5, so dim 6; the -1 reads zero (padding) */
    assert_dims(op, "I", 4, (int64_t[]){1, 2, 6, 6});
    assert_dims(op, "W", 4, (int64_t[]){2, 2, 3, 3});
    assert_dims(op, "O", 4, (int64_t[]){1, 2, 3, 3});
    cr_assert(rlt_load_may_be_out_of_bounds(op, op->body->a));
    rlt_op_destroy(op);
}

Test(op, expression_reduce_axes_in_order_of_first_appearance)
{
    rlt_op *op = expr_ok("Y[b] += X[b,z,a] * V[a,y]", "a=2,b=3,y=4,z=5");
    assert_axes(op, "bzay", 1);
    cr_assert_str_eq(op->spec, "expr:Y[b] += X[b,z,a] * V[a,y]|b=3,z=5,a=2,y=4");
    cr_assert_eq(rlt_op_reduce_size(op), 5 * 2 * 4);
    rlt_op_destroy(op);
}

Test(op, expression_forms_print_back_exactly)
{
    const char *cases[][3] = {
        {"C[i] = -2 * A[i] - -3 + -(4) - (x[i] - y[i])", "C[i] = -2 * A[i] - -3 + -(4) - (x[i] - y[i])", "i=3"},
        {"C[i] = A[i] + (B[i] + A[i])", "C[i] = A[i] + (B[i] + A[i])", "i=3"},
        {"C[i] = (A[i] + B[i]) * (A[i] - B[i])", "C[i] = (A[i] + B[i]) * (A[i] - B[i])", "i=3"},
        {"C[i] = -(A[i] * B[i])", "C[i] = -(A[i] * B[i])", "i=3"},
        {"C[i] = -(-A[i])", "C[i] = --A[i]", "i=3"},
        {"C[i] = --A[i] - -(2) + -(-2) - -(-(3))", "C[i] = --A[i] - -(2) + --2 - --(3)", "i=3"},
        {"C[i] = max(A[i],0.5)*min(1e-7,3)", "C[i] = max(A[i], 0.5) * min(1e-07, 3)", "i=3"},
        {"C[i] = 0.1 + A[i+i+1-3]", "C[i] = 0.1 + A[2*i-2]", "i=3"},
        {"C[i] += A[i] * B[i]", "C[i] = A[i] * B[i]", "i=3"}, /* nothing to sum: '=' */
        {"C[i,j] = A[j*3, 2, -i + 7]", "C[i,j] = A[3*j,2,-i+7]", "i=3,j=2"},
    };
    for (size_t k = 0; k < RLT_ARRAY_LEN(cases); k++) {
        rlt_op *op = expr_ok(cases[k][0], cases[k][2]);
        char *text = print_statement(op);
        cr_assert_str_eq(text, cases[k][1]);
        rlt_op *again = expr_ok(text, cases[k][2]);
        cr_assert(same_expr(op->body, again->body), "%s", text);
        rlt_free(text);
        rlt_op_destroy(again);
        rlt_op_destroy(op);
    }
}

Test(op, expression_flops_convention)
{
    rlt_op *op = expr_ok("C[i] = A[i] * B[i] + 1", "i=10"); /* no reduction: no +1 */
    cr_assert_eq(op->flops, 20);
    rlt_op_destroy(op);
    op = expr_ok("C[i] += A[i,k] * B[k] + A[i,k]", "i=10,k=3"); /* 2 ops + 1 accumulation */
    cr_assert_eq(op->flops, 10 * 3 * 3);
    rlt_op_destroy(op);
    op = expr_ok("C[i] = A[i]", "i=10");
    cr_assert_eq(op->flops, 0);
    rlt_op_destroy(op);
}

Test(op, expression_errors_name_the_column)
{
    expr_fails("C[i,j] += A[i+,k]", "i=1,j=1,k=1", RLT_STATUS_PARSE_ERROR,
               "expression, column 15: expected an index term");
    expr_fails("C[i,j] += A[i k]", "i=1,j=1,k=1", RLT_STATUS_PARSE_ERROR,
               "expression, column 15: expected ',' or ']' after an index, found 'k'");
    expr_fails("C[i,j] += A[i,k", "i=1,j=1,k=1", RLT_STATUS_PARSE_ERROR,
               "column 16: expected ',' or ']' after an index, found the end of the expression");
    expr_fails("C[i+1,j] += A[i,j]", "i=1,j=1", RLT_STATUS_PARSE_ERROR,
               "column 4: expected ',' or ']' after output index 'i', found '+'");
    expr_fails("C[i,i] += A[i]", "i=1", RLT_STATUS_INVALID_ARGUMENT, "column 5: index 'i' appears twice");
    expr_fails("C[] += A[i]", "i=1", RLT_STATUS_PARSE_ERROR, "column 3: expected an index name");
    expr_fails("C[i] A[i]", "i=1", RLT_STATUS_PARSE_ERROR, "column 6: expected '+=' or '=' after C[i], found 'A'");
    expr_fails("[i] = A[i]", "i=1", RLT_STATUS_PARSE_ERROR, "column 1: expected the output tensor's name");
    expr_fails("", "i=1", RLT_STATUS_PARSE_ERROR, "found the end of the expression");
    expr_fails("C[i] = A[i] / 2", "i=1", RLT_STATUS_PARSE_ERROR, "column 13: expected an operator, ';' or the end");
    expr_fails("C[i] = A[i] +", "i=1", RLT_STATUS_PARSE_ERROR, "column 14: expected a value");
    expr_fails("C[i] = (A[i] + 1", "i=1", RLT_STATUS_PARSE_ERROR, "expected ')' to close the '(' at column 8");
    expr_fails("C[i] = foo(A[i])", "i=1", RLT_STATUS_PARSE_ERROR, "column 8: unknown function 'foo'");
    expr_fails("C[i] = max(A[i] B[i])", "i=1", RLT_STATUS_PARSE_ERROR, "expected ',' between max's two arguments");
    expr_fails("C[i] = relu(A[i], B[i])", "i=1", RLT_STATUS_PARSE_ERROR, "expected ')' to close the call");
    expr_fails("C[i] = A[1.5]", "i=1", RLT_STATUS_PARSE_ERROR, "column 10: expected a whole number in an index term");
    expr_fails("C[i] = A[i*j]", "i=1", RLT_STATUS_PARSE_ERROR, "column 12: expected a whole number");
    expr_fails("C[i] = A[2*3]", "i=1", RLT_STATUS_PARSE_ERROR, "expected an index name after '*'");
    expr_fails("C[i] = A * 2", "i=1", RLT_STATUS_PARSE_ERROR, "expected '[' after tensor name 'A'");
    expr_fails("C[i] = A[i] * i", "i=1", RLT_STATUS_INVALID_ARGUMENT, "column 15: index 'i' cannot be used as a value");
    expr_fails("C[i] = A[i]; x", "i=1", RLT_STATUS_PARSE_ERROR, "column 14: an epilogue after ';' must assign C[i]");
}

Test(op, expression_semantic_errors)
{
    expr_fails("C[i,j] = A[i,k] * B[k,j]", "i=1,j=1,k=1", RLT_STATUS_INVALID_ARGUMENT,
               "column 14: index 'k' is not an index of the output C[i,j], and '=' does not sum; use '+='");
    expr_fails("C[i] += C[i] * A[i]", "i=1", RLT_STATUS_INVALID_ARGUMENT,
               "column 9: the output C cannot be read in its own statement");
    expr_fails("C[i] += A[i] * A[i,i]", "i=1", RLT_STATUS_INVALID_ARGUMENT,
               "column 16: tensor A has 2 indices here but 1 where it first appears");
    expr_fails("C[i] += i[i]", "i=1", RLT_STATUS_INVALID_ARGUMENT, "'i' is used both as an index and as a tensor");
    expr_fails("C[i] += A[k] * k[i]", "i=1,k=1", RLT_STATUS_INVALID_ARGUMENT,
               "column 16: 'k' is used both as an index and as a tensor");
    expr_fails("C[i] += k[i] * A[k]", "i=1,k=1", RLT_STATUS_INVALID_ARGUMENT,
               "column 18: 'k' is used both as a tensor and as an index");
    expr_fails("C[C] += A[C]", "C=1", RLT_STATUS_INVALID_ARGUMENT, "'C' is used both as a tensor and as an index");
    expr_fails("C[i] += A[i,k]; C[i] = C[i] + B[k]", "i=1,k=1", RLT_STATUS_INVALID_ARGUMENT,
               "column 33: index 'k' is summed over by the statement");
    expr_fails("C[i] += A[i,k]; C[i] = C[i] + B[z]", "i=1,k=1", RLT_STATUS_INVALID_ARGUMENT,
               "index 'z' is not an index of C[i]");
    expr_fails("C[i] += A[i,k]; C[i] = B[i]", "i=1,k=1", RLT_STATUS_INVALID_ARGUMENT,
               "column 17: the epilogue never reads C[i]");
    expr_fails("C[i] += A[i,k]; C[i] = C[i+1]", "i=1,k=1", RLT_STATUS_INVALID_ARGUMENT,
               "the epilogue may read the output only as C[i]");
    expr_fails("C[i] += A[i,k]; C[i] += C[i]", "i=1,k=1", RLT_STATUS_PARSE_ERROR, "expected '=' in the epilogue");
    expr_fails("C[i] = A[i-5]", "i=3", RLT_STATUS_INVALID_ARGUMENT,
               "index 1 of A is negative at every point (at most -3)");
    expr_fails("C[i] = A[2147483648*i]", "i=3", RLT_STATUS_INVALID_ARGUMENT, "ranges over [0, 4294967296]");
    expr_fails("C[i] = A[9999999999999]", "i=3", RLT_STATUS_INVALID_ARGUMENT, "index number '9999999999999' is too large");
    expr_fails("C[i] += A[i+0*k]", "i=1,k=2", RLT_STATUS_INVALID_ARGUMENT,
               "column 15: index 'k' has coefficient 0 in this index");
    expr_fails("C[i] = A[i-i]", "i=1", RLT_STATUS_INVALID_ARGUMENT, "index 'i' has coefficient 0");
    expr_fails("C[i] = A[i] * 1e999", "i=1", RLT_STATUS_INVALID_ARGUMENT, "number '1e999' is too large");
    expr_fails("abcdefghijabcdefghijabcdefghijabc[i] = A[i]", "i=1", RLT_STATUS_INVALID_ARGUMENT,
               "is 33 characters long; at most 31");
    expr_fails("C[i] = A[i,i,i,i,i,i,i]", "i=1", RLT_STATUS_INVALID_ARGUMENT, "more than 6 indices");
    expr_fails("C[a,b,c,d,e,f,g] = A[a]", "a=1", RLT_STATUS_INVALID_ARGUMENT, "the output C has more than 6 indices");
    expr_fails("C[i] += A[i,a,b,c,d,e] * B[f,g,h,l,m,n] * D[o]", "i=1", RLT_STATUS_INVALID_ARGUMENT,
               "index 'o' is one more than the 12");
    expr_fails("C[i] = A[i]+B[i]+D[i]+E[i]+F[i]+G[i]+H[i]+J[i]", "i=1", RLT_STATUS_INVALID_ARGUMENT,
               "tensor J is one more than the 7 inputs");
    expr_fails("C[i,j] = A[i] * B[j]", "i=65536,j=65536", RLT_STATUS_INVALID_ARGUMENT,
               "the output C would have more than 2147483648");
    expr_fails("C[i] += A[i,j]", "i=65536,j=65536", RLT_STATUS_INVALID_ARGUMENT,
               "input A would have more than 2147483648");
}

Test(op, expression_nesting_is_bounded)
{
    char deep[400] = "C[i] = ";
    for (int k = 0; k < 100; k++) strcat(deep, "(");
    strcat(deep, "A[i]");
    for (int k = 0; k < 100; k++) strcat(deep, ")");
    expr_fails(deep, "i=1", RLT_STATUS_INVALID_ARGUMENT, "nested more than 64 levels deep");
    char negs[300] = "C[i] = ";
    for (int k = 0; k < 200; k++) strcat(negs, "-");
    strcat(negs, "A[i]");
    expr_fails(negs, "i=1", RLT_STATUS_INVALID_ARGUMENT, "nested more than 64 levels deep");
    rlt_op_destroy(expr_ok("C[i] = ((((((((((A[i]))))))))))", "i=1"));
}

Test(op, expression_too_long_for_a_spec)
{
    char text[2048] = "C[i] = A[i]";
    while (strlen(text) < 600) strcat(text, " + A[i]");
    expr_fails(text, "i=1", RLT_STATUS_INVALID_ARGUMENT, "expression too long");
    char huge[5000];
    memset(huge, 'x', sizeof huge - 1);
    huge[sizeof huge - 1] = '\0';
    expr_fails(huge, "i=1", RLT_STATUS_INVALID_ARGUMENT, "longer than 4096 characters");
}

Test(op, shape_errors)
{
    const char *e = "C[i,j] += A[i,k] * B[k,j]";
    expr_fails(e, "i=64,j=64", RLT_STATUS_INVALID_ARGUMENT, "index 'k' has no extent; add k=N");
    expr_fails(e, "", RLT_STATUS_INVALID_ARGUMENT, "index 'i' has no extent");
    expr_fails(e, "i=1,j=1,k=1,z=3", RLT_STATUS_INVALID_ARGUMENT,
               "shape, column 13: the expression has no index 'z'; its indices are i, j, k");
    expr_fails(e, "i=1,j=1,k=1,i=3", RLT_STATUS_INVALID_ARGUMENT, "shape, column 13: index 'i' is given twice");
    expr_fails(e, "i=1,j=1,k=0", RLT_STATUS_INVALID_ARGUMENT, "shape, column 11: the extent of 'k' is 0");
    expr_fails(e, "i=1,j=1,k=-4", RLT_STATUS_INVALID_ARGUMENT, "the extent of 'k' is -4");
    expr_fails(e, "i=1,j=1,k=2147483649", RLT_STATUS_INVALID_ARGUMENT, "from 1 to 2147483648");
    expr_fails(e, "i=1,j=1,k=x", RLT_STATUS_PARSE_ERROR, "the extent of 'k' is not a whole number");
    expr_fails(e, "i=1,j=1,k=1.5", RLT_STATUS_PARSE_ERROR, "column 12: expected ',' or the end after k's extent");
    expr_fails(e, "i=1 j=1,k=1", RLT_STATUS_PARSE_ERROR, "shape, column 5: expected ',' or the end");
    expr_fails(e, "i=1,,j=1,k=1", RLT_STATUS_PARSE_ERROR, "shape, column 5: expected NAME=EXTENT");
    expr_fails(e, "i:1,j=1,k=1", RLT_STATUS_PARSE_ERROR, "found ':'");
}

/* ---- out of memory ------------------------------------------------------ */

typedef rlt_status (*build_fn)(rlt_op **out, rlt_diag *diag);

static rlt_status build_conv(rlt_op **out, rlt_diag *diag)
{
    return rlt_op_parse("conv2d:N=1,C=3,H=8,W=8,K=4,R=3,S=3,stride=2,pad=1", out, diag);
}

static rlt_status build_dense(rlt_op **out, rlt_diag *diag)
{
    return rlt_op_parse("dense:M=3,N=4,K=5,bias=1,relu=1", out, diag);
}

static rlt_status build_expr(rlt_op **out, rlt_diag *diag)
{
    return rlt_op_from_expr("C[i,j] += A[i,k]*B[k,j] + 2; C[i,j] = relu(C[i,j] + bias[j]) * max(C[i,j], 0.5)",
                            "i=4,j=5,k=6", out, diag);
}

static rlt_status build_expr_spec(rlt_op **out, rlt_diag *diag)
{
    return rlt_op_parse("expr:C[i] += A[i,k]|i=2,k=3", out, diag);
}

static void oom_loop(build_fn build)
{
    for (long n = 1;; n++) {
        rlt_diag d = {0};
        rlt_op *op = NULL;
        rlt_alloc_fail_after(n);
        rlt_status st = build(&op, &d);
        rlt_alloc_fail_after(0);
        if (st == RLT_STATUS_OK) {
            cr_assert_not_null(op);
            cr_assert_gt(n, 1, "the first allocation failing must not succeed");
            rlt_op_destroy(op);
            return;
        }
        cr_assert_eq(st, RLT_STATUS_OUT_OF_MEMORY, "n=%ld: %s (%s)", n, rlt_status_str(st), d.message);
        cr_assert_null(op);
        cr_assert_neq(d.message[0], '\0');
        cr_assert_lt(n, 1000, "no success after 1000 failing allocations");
    }
}

Test(op, out_of_memory_at_every_allocation)
{
    oom_loop(build_conv);
    oom_loop(build_dense);
    oom_loop(build_expr);
    oom_loop(build_expr_spec);
}
