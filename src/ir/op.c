/*
 * op.c - the built-in op library and its spec parser, op queries, flops, and
 * the printers for ops, expressions and affine indices.
 *
 * Entry points: rlt_op_library (the table `rltune ops` lists), rlt_op_parse
 * ("matmul:M=512,N=512,K=512" -> rlt_op), rlt_op_destroy, rlt_op_print.
 * A built-in op is built directly as expression nodes in the op's arena; user
 * expressions go through expr_parse.c instead, and a spec of the form
 * "expr:EXPRESSION|SHAPE" (what rlt_op_from_expr stores as op->spec) is
 * handed to it, so every op's spec parses back to the same op.
 */
#include "ir/ir.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- the library -------------------------------------------------------- */

#define SIZE_PARAM(key, help) {key, help, 0, true, 1, RLT_MAX_EXTENT, false}

static const rlt_op_param matmul_params[] = {
    SIZE_PARAM("M", "rows of A and C"),
    SIZE_PARAM("N", "columns of B and C"),
    SIZE_PARAM("K", "reduction length: columns of A, rows of B"),
};

static const rlt_op_param batch_matmul_params[] = {
    SIZE_PARAM("B", "batch size"),
    SIZE_PARAM("M", "rows of A and C"),
    SIZE_PARAM("N", "columns of B and C"),
    SIZE_PARAM("K", "reduction length: columns of A, rows of B"),
};

static const rlt_op_param dense_params[] = {
    SIZE_PARAM("M", "rows of X and Y (the batch)"),
    SIZE_PARAM("N", "output features: rows of W, columns of Y"),
    SIZE_PARAM("K", "input features: columns of X and W"),
    {"bias", "1 adds bias[j] after the reduction", 0, false, 0, 1, false},
    {"relu", "1 applies relu last", 0, false, 0, 1, false},
};

static const rlt_op_param conv2d_params[] = {
    SIZE_PARAM("N", "batch size"),
    SIZE_PARAM("C", "input channels"),
    SIZE_PARAM("H", "input height"),
    SIZE_PARAM("W", "input width"),
    SIZE_PARAM("K", "output channels"),
    SIZE_PARAM("R", "kernel height"),
    SIZE_PARAM("S", "kernel width"),
    {"stride", "step of the window in both directions", 1, false, 1, RLT_MAX_EXTENT, false},
    {"pad", "zero rows / columns added on every side", 0, false, 0, RLT_MAX_EXTENT, false},
    {"dilation", "spacing of the kernel's taps", 1, false, 1, RLT_MAX_EXTENT, false},
    {"iblock", "input channels in blocks of this many, innermost: I[N,C/iblock,H,W,iblock] (0: NCHW)", 0, false, 0,
     RLT_MAX_EXTENT, true},
    {"oblock", "output channels in blocks of this many, innermost: O[N,K/oblock,P,Q,oblock] (0: NCHW)", 0, false,
     0, RLT_MAX_EXTENT, true},
};

static const rlt_op_param depthwise_conv2d_params[] = {
    SIZE_PARAM("N", "batch size"),
    SIZE_PARAM("C", "channels (one filter each)"),
    SIZE_PARAM("H", "input height"),
    SIZE_PARAM("W", "input width"),
    SIZE_PARAM("R", "kernel height"),
    SIZE_PARAM("S", "kernel width"),
    {"stride", "step of the window in both directions", 1, false, 1, RLT_MAX_EXTENT, false},
    {"pad", "zero rows / columns added on every side", 0, false, 0, RLT_MAX_EXTENT, false},
    {"dilation", "spacing of the kernel's taps", 1, false, 1, RLT_MAX_EXTENT, false},
    {"block", "channels in blocks of this many, innermost, input and output: I[N,C/block,H,W,block] (0: NCHW)", 0,
     false, 0, RLT_MAX_EXTENT, true},
};

#define INFO(name, summary, example, params) \
    {name, summary, example, (int)RLT_ARRAY_LEN(params), params}

static const rlt_op_info op_library[] = {
    INFO("matmul", "C[i,j] += A[i,k] * B[k,j]", "matmul:M=512,N=512,K=512", matmul_params),
    INFO("batch_matmul", "C[b,i,j] += A[b,i,k] * B[b,k,j]", "batch_matmul:B=8,M=128,N=128,K=64",
         batch_matmul_params),
    INFO("dense", "Y[i,j] = epilogue(sum_k X[i,k] * W[j,k]); epilogue: + bias[j], relu",
         "dense:M=64,N=1024,K=1024,bias=1,relu=1", dense_params),
    INFO("conv2d", "O[n,k,p,q] += I[n,c,p*stride+r*dilation-pad,q*stride+s*dilation-pad] * W[k,c,r,s]",
         "conv2d:N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,pad=1", conv2d_params),
    INFO("depthwise_conv2d",
         "O[n,c,p,q] += I[n,c,p*stride+r*dilation-pad,q*stride+s*dilation-pad] * W[c,0,r,s]",
         "depthwise_conv2d:N=1,C=128,H=56,W=56,R=3,S=3,stride=1,pad=1", depthwise_conv2d_params),
};

enum { OP_MATMUL, OP_BATCH_MATMUL, OP_DENSE, OP_CONV2D, OP_DEPTHWISE_CONV2D, N_BUILTIN_OPS };
_Static_assert(RLT_ARRAY_LEN(op_library) == N_BUILTIN_OPS, "one builder per library entry");

enum { MAX_PARAMS = 12 };

/* ---- epilogues on built-in ops ------------------------------------------- */

/* The steps an `epilogue=` key may list, applied in the order given to the
 * reduction's result: what a network fuses into the kernel producing it. */
typedef enum epi_step { EPI_BIAS, EPI_ADD, EPI_RELU, EPI_RELU6, N_EPI_STEPS } epi_step;

static const char *const epi_step_names[N_EPI_STEPS] = {"bias", "add", "relu", "relu6"};

typedef struct epi_steps {
    int n;
    epi_step step[N_EPI_STEPS]; /* each step at most once */
} epi_steps;

/* The output-channel axis of each built-in: the axis a bias runs along. */
static const int channel_axis_of[N_BUILTIN_OPS] = {
    [OP_MATMUL] = 1, [OP_BATCH_MATMUL] = 2, [OP_DENSE] = 1, [OP_CONV2D] = 1, [OP_DEPTHWISE_CONV2D] = 1,
};

const rlt_op_info *rlt_op_library(int *n_ops)
{
    if (n_ops) *n_ops = (int)RLT_ARRAY_LEN(op_library);
    return op_library;
}

/* ---- queries ------------------------------------------------------------ */

void rlt_op_destroy(rlt_op *op)
{
    if (!op) return;
    rlt_arena_destroy(op->arena);
    rlt_free(op);
}

int rlt_op_find_tensor(const rlt_op *op, const char *name)
{
    if (!op || !name) return -1;
    for (int t = 0; t < op->n_tensors; t++)
        if (strcmp(op->tensors[t].name, name) == 0) return t;
    return -1;
}

int rlt_op_find_axis(const rlt_op *op, const char *name)
{
    if (!op || !name) return -1;
    for (int a = 0; a < op->n_axes; a++)
        if (strcmp(op->axes[a].name, name) == 0) return a;
    return -1;
}

int64_t rlt_op_tensor_size(const rlt_op *op, int t)
{
    RLT_ASSERT(op && t >= 0 && t < op->n_tensors);
    int64_t n = 1;
    for (int d = 0; d < op->tensors[t].n_dims; d++) n *= op->tensors[t].dims[d];
    return n;
}

int64_t rlt_op_reduce_size(const rlt_op *op)
{
    int64_t n = 1;
    for (int a = op->n_spatial; a < op->n_axes; a++) n *= op->axes[a].extent;
    return n;
}

static int count_ops(const rlt_expr *e)
{
    if (!e) return 0;
    switch (e->kind) {
    case RLT_EXPR_CONST:
    case RLT_EXPR_LOAD:
    case RLT_EXPR_ACC: return 0;
    case RLT_EXPR_NEG:
    case RLT_EXPR_RELU: return 1 + count_ops(e->a);
    case RLT_EXPR_ADD:
    case RLT_EXPR_SUB:
    case RLT_EXPR_MUL:
    case RLT_EXPR_MAX:
    case RLT_EXPR_MIN: return 1 + count_ops(e->a) + count_ops(e->b);
    }
    return 0;
}

double rlt_op_count_flops(const rlt_op *op)
{
    double spatial = 1, reduce = 1;
    for (int a = 0; a < op->n_axes; a++) {
        if (a < op->n_spatial) spatial *= (double)op->axes[a].extent;
        else reduce *= (double)op->axes[a].extent;
    }
    bool has_reduction = op->n_axes > op->n_spatial;
    double body_ops = count_ops(op->body) + (has_reduction ? 1 : 0);
    return spatial * reduce * body_ops + spatial * count_ops(op->epilogue);
}

/* Saturating int64 arithmetic: ranges of hand-built affines must not wrap. */
static int64_t sat_add(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b) return INT64_MAX;
    if (b < 0 && a < INT64_MIN - b) return INT64_MIN;
    return a + b;
}

static int64_t sat_mul(int64_t a, int64_t b)
{
    if (a == 0 || b == 0) return 0;
    bool is_negative = (a < 0) != (b < 0);
    uint64_t ua = a < 0 ? (uint64_t)0 - (uint64_t)a : (uint64_t)a;
    uint64_t ub = b < 0 ? (uint64_t)0 - (uint64_t)b : (uint64_t)b;
    if (ua > (uint64_t)INT64_MAX / ub) return is_negative ? INT64_MIN : INT64_MAX;
    int64_t p = (int64_t)(ua * ub);
    return is_negative ? -p : p;
}

void rlt_affine_range(const rlt_op *op, const rlt_affine *a, int64_t *lo, int64_t *hi)
{
    int64_t l = a->offset, h = a->offset;
    for (int x = 0; x < op->n_axes; x++) {
        int64_t span = sat_mul(a->coef[x], op->axes[x].extent - 1);
        if (span > 0) h = sat_add(h, span);
        else l = sat_add(l, span);
    }
    if (lo) *lo = l;
    if (hi) *hi = h;
}

bool rlt_load_may_be_out_of_bounds(const rlt_op *op, const rlt_expr *load)
{
    RLT_ASSERT(load->kind == RLT_EXPR_LOAD && load->tensor >= 0 && load->tensor < op->n_tensors);
    const rlt_tensor *t = &op->tensors[load->tensor];
    for (int d = 0; d < t->n_dims; d++) {
        int64_t lo, hi;
        rlt_affine_range(op, &load->index[d], &lo, &hi);
        if (lo < 0 || hi > t->dims[d] - 1) return true;
    }
    return false;
}

/* ---- printing ----------------------------------------------------------- */

static void print_magnitude(rlt_str *out, int64_t v)
{
    uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    rlt_str_printf(out, "%" PRIu64, m);
}

void rlt_affine_print(const rlt_op *op, const rlt_affine *a, rlt_str *out)
{
    bool is_first = true;
    for (int x = 0; x < op->n_axes; x++) {
        int64_t c = a->coef[x];
        if (c == 0) continue;
        if (c < 0) rlt_str_append(out, "-");
        else if (!is_first) rlt_str_append(out, "+");
        if (c != 1 && c != -1) {
            print_magnitude(out, c);
            rlt_str_append(out, "*");
        }
        rlt_str_append(out, op->axes[x].name);
        is_first = false;
    }
    if (is_first) {
        rlt_str_printf(out, "%" PRId64, a->offset);
    } else if (a->offset != 0) {
        rlt_str_append(out, a->offset < 0 ? "-" : "+");
        print_magnitude(out, a->offset);
    }
}

/* Precedence as the expression grammar parses it; a negative constant
 * prints with a leading '-' and so binds like unary minus. */
static int expr_precedence(const rlt_expr *e)
{
    switch (e->kind) {
    case RLT_EXPR_ADD:
    case RLT_EXPR_SUB: return 1;
    case RLT_EXPR_MUL: return 2;
    case RLT_EXPR_NEG: return 3;
    case RLT_EXPR_CONST: return signbit(e->value) ? 3 : 4;
    default: return 4;
    }
}

/* The shortest decimal text that reads back as exactly `v`. */
static void print_constant(rlt_str *out, double v)
{
    char buf[40];
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, v);
        if (strtod(buf, NULL) == v) break;
    }
    rlt_str_append(out, buf);
}

static void print_operand(const rlt_op *op, const rlt_expr *e, bool needs_parens, rlt_str *out)
{
    if (needs_parens) rlt_str_append(out, "(");
    rlt_expr_print(op, e, out);
    if (needs_parens) rlt_str_append(out, ")");
}

static void print_output_element(const rlt_op *op, rlt_str *out)
{
    rlt_str_append(out, op->tensors[op->n_tensors - 1].name);
    rlt_str_append(out, "[");
    for (int a = 0; a < op->n_spatial; a++) {
        if (a > 0) rlt_str_append(out, ",");
        rlt_str_append(out, op->axes[a].name);
    }
    rlt_str_append(out, "]");
}

void rlt_expr_print(const rlt_op *op, const rlt_expr *e, rlt_str *out)
{
    static const char *const binary_ops[] = {
        [RLT_EXPR_ADD] = " + ", [RLT_EXPR_SUB] = " - ", [RLT_EXPR_MUL] = " * "};
    switch (e->kind) {
    case RLT_EXPR_CONST: print_constant(out, e->value); break;
    case RLT_EXPR_LOAD: {
        const rlt_tensor *t = &op->tensors[e->tensor];
        rlt_str_append(out, t->name);
        rlt_str_append(out, "[");
        for (int d = 0; d < t->n_dims; d++) {
            if (d > 0) rlt_str_append(out, ",");
            rlt_affine_print(op, &e->index[d], out);
        }
        rlt_str_append(out, "]");
        break;
    }
    case RLT_EXPR_ACC: print_output_element(op, out); break;
    case RLT_EXPR_NEG:
        /* "-(2)" keeps NEG of a constant apart from the constant -2, while
         * "--2" and "--x" read back as NEG(-2) and NEG(NEG(x)); parentheses
         * only where needed keep the text no deeper than the parser allows. */
        rlt_str_append(out, "-");
        print_operand(op, e->a, (e->a->kind == RLT_EXPR_CONST && !signbit(e->a->value)) ||
                                    expr_precedence(e->a) < 3,
                      out);
        break;
    case RLT_EXPR_RELU:
        rlt_str_append(out, "relu(");
        rlt_expr_print(op, e->a, out);
        rlt_str_append(out, ")");
        break;
    case RLT_EXPR_MAX:
    case RLT_EXPR_MIN:
        rlt_str_append(out, e->kind == RLT_EXPR_MAX ? "max(" : "min(");
        rlt_expr_print(op, e->a, out);
        rlt_str_append(out, ", ");
        rlt_expr_print(op, e->b, out);
        rlt_str_append(out, ")");
        break;
    case RLT_EXPR_ADD:
    case RLT_EXPR_SUB:
    case RLT_EXPR_MUL: {
        /* Left-associative: a right operand of equal precedence keeps its
         * parentheses so the printed text parses back to the same tree. */
        int prec = expr_precedence(e);
        print_operand(op, e->a, expr_precedence(e->a) < prec, out);
        rlt_str_append(out, binary_ops[e->kind]);
        print_operand(op, e->b, expr_precedence(e->b) <= prec, out);
        break;
    }
    }
}

void rlt_op_print_statement(const rlt_op *op, rlt_str *out)
{
    print_output_element(op, out);
    rlt_str_append(out, op->n_axes > op->n_spatial ? " += " : " = ");
    rlt_expr_print(op, op->body, out);
    if (op->epilogue) {
        rlt_str_append(out, "; ");
        print_output_element(op, out);
        rlt_str_append(out, " = ");
        rlt_expr_print(op, op->epilogue, out);
    }
}

const char *rlt_op_spec(const rlt_op *op) { return op->spec; }

const char *rlt_op_kind(const rlt_op *op) { return op->kind; }

double rlt_op_flops(const rlt_op *op) { return op->flops; }

char *rlt_op_text(const rlt_op *op)
{
    rlt_str s;
    rlt_str_init(&s);
    rlt_op_print(op, &s);
    return rlt_str_take(&s); /* NULL when a write failed */
}

void rlt_op_print(const rlt_op *op, rlt_str *out)
{
    rlt_op_print_statement(op, out);
    rlt_str_append(out, "   with");
    for (int a = 0; a < op->n_axes; a++)
        rlt_str_printf(out, " %s=%" PRId64, op->axes[a].name, op->axes[a].extent);
    rlt_str_append(out, "\n  tensors");
    for (int t = 0; t < op->n_tensors; t++) {
        const rlt_tensor *tensor = &op->tensors[t];
        rlt_str_printf(out, " %s[", tensor->name);
        for (int d = 0; d < tensor->n_dims; d++)
            rlt_str_printf(out, "%s%" PRId64, d > 0 ? "," : "", tensor->dims[d]);
        rlt_str_append(out, "]");
        if (tensor->is_output) rlt_str_append(out, " (output)");
        if (tensor->is_weight) rlt_str_append(out, " (weight)");
    }
    rlt_str_append(out, "\n");
}

/* ---- building built-in ops ---------------------------------------------- */

static void add_axis(rlt_op *op, const char *name, int64_t extent, bool is_reduce)
{
    RLT_ASSERT(op->n_axes < RLT_MAX_AXES);
    rlt_axis *a = &op->axes[op->n_axes++];
    snprintf(a->name, sizeof a->name, "%s", name);
    a->extent = extent;
    a->is_reduce = is_reduce;
    if (!is_reduce) op->n_spatial = op->n_axes;
}

static int add_tensor(rlt_op *op, const char *name, int n_dims, const int64_t *dims, bool is_weight)
{
    RLT_ASSERT(op->n_tensors < RLT_MAX_TENSORS && n_dims <= RLT_MAX_DIMS);
    rlt_tensor *t = &op->tensors[op->n_tensors];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->n_dims = n_dims;
    for (int d = 0; d < n_dims; d++) t->dims[d] = dims[d];
    t->is_weight = is_weight;
    return op->n_tensors++;
}

rlt_expr *rlt_expr_new(rlt_arena *arena, rlt_expr_kind kind, const rlt_expr *a, const rlt_expr *b)
{
    rlt_expr *e = rlt_arena_alloc(arena, sizeof *e);
    if (!e) return NULL;
    e->kind = kind;
    e->a = a;
    e->b = b;
    return e;
}

/* A load whose dimension d is indexed by axis axes[d] (or 0 where -1). */
static rlt_expr *new_load(rlt_op *op, int tensor, const int *axes)
{
    rlt_expr *e = rlt_expr_new(op->arena, RLT_EXPR_LOAD, NULL, NULL);
    if (!e) return NULL;
    e->tensor = tensor;
    for (int d = 0; d < op->tensors[tensor].n_dims; d++)
        if (axes[d] >= 0) e->index[d].coef[axes[d]] = 1;
    return e;
}

/* body = a * b; NULL when a node could not be allocated. */
static const rlt_expr *product(rlt_op *op, const rlt_expr *a, const rlt_expr *b)
{
    if (!a || !b) return NULL;
    return rlt_expr_new(op->arena, RLT_EXPR_MUL, a, b);
}

static void mark_output(rlt_op *op, int t) { op->tensors[t].is_output = true; }

static const rlt_expr *build_matmul(rlt_op *op, const int64_t *v)
{
    int64_t M = v[0], N = v[1], K = v[2];
    add_axis(op, "i", M, false);
    add_axis(op, "j", N, false);
    add_axis(op, "k", K, true);
    int a = add_tensor(op, "A", 2, (int64_t[]){M, K}, false);
    int b = add_tensor(op, "B", 2, (int64_t[]){K, N}, false);
    mark_output(op, add_tensor(op, "C", 2, (int64_t[]){M, N}, false));
    return product(op, new_load(op, a, (int[]){0, 2}), new_load(op, b, (int[]){2, 1}));
}

static const rlt_expr *build_batch_matmul(rlt_op *op, const int64_t *v)
{
    int64_t B = v[0], M = v[1], N = v[2], K = v[3];
    add_axis(op, "b", B, false);
    add_axis(op, "i", M, false);
    add_axis(op, "j", N, false);
    add_axis(op, "k", K, true);
    int a = add_tensor(op, "A", 3, (int64_t[]){B, M, K}, false);
    int b = add_tensor(op, "B", 3, (int64_t[]){B, K, N}, false);
    mark_output(op, add_tensor(op, "C", 3, (int64_t[]){B, M, N}, false));
    return product(op, new_load(op, a, (int[]){0, 1, 3}), new_load(op, b, (int[]){0, 3, 2}));
}

/* Also builds the epilogue (bias add, then relu) when asked for. */
static const rlt_expr *build_dense(rlt_op *op, const int64_t *v)
{
    int64_t M = v[0], N = v[1], K = v[2];
    bool has_bias = v[3] != 0, has_relu = v[4] != 0;
    add_axis(op, "i", M, false);
    add_axis(op, "j", N, false);
    add_axis(op, "k", K, true);
    int x = add_tensor(op, "X", 2, (int64_t[]){M, K}, false);
    int w = add_tensor(op, "W", 2, (int64_t[]){N, K}, true);
    int bias = has_bias ? add_tensor(op, "bias", 1, (int64_t[]){N}, true) : -1;
    mark_output(op, add_tensor(op, "Y", 2, (int64_t[]){M, N}, false));
    const rlt_expr *body = product(op, new_load(op, x, (int[]){0, 2}), new_load(op, w, (int[]){1, 2}));
    if (!body || (!has_bias && !has_relu)) return body;
    const rlt_expr *epi = rlt_expr_new(op->arena, RLT_EXPR_ACC, NULL, NULL);
    if (epi && has_bias) {
        const rlt_expr *b = new_load(op, bias, (int[]){1});
        epi = b ? rlt_expr_new(op->arena, RLT_EXPR_ADD, epi, b) : NULL;
    }
    if (epi && has_relu) epi = rlt_expr_new(op->arena, RLT_EXPR_RELU, epi, NULL);
    op->epilogue = epi;
    return epi ? body : NULL;
}

/* Output size of a convolution along one spatial dimension, or < 1 when the
 * (dilated) kernel does not fit in the padded input. */
static int64_t conv_out_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation)
{
    /* Parameters are at most 2^31, so no term here overflows int64; a
     * negative numerator must not be rounded toward zero into a size of 1. */
    int64_t num = in + 2 * pad - dilation * (kernel - 1) - 1;
    return num < 0 ? 0 : num / stride + 1;
}

/* I[n, c, p*stride + r*dilation - pad, q*stride + s*dilation - pad], with
 * the axes named by the caller's axis indices. */
static rlt_expr *conv_input_load(rlt_op *op, int tensor, const int ax[6], const int64_t geo[3])
{
    int64_t stride = geo[0], pad = geo[1], dilation = geo[2];
    rlt_expr *e = new_load(op, tensor, (int[]){ax[0], ax[1], -1, -1, -1, -1});
    if (!e) return NULL;
    for (int d = 0; d < 2; d++) {
        rlt_affine *aff = &e->index[2 + d];
        aff->coef[ax[2 + d]] = stride;  /* p or q */
        aff->coef[ax[4 + d]] = dilation; /* r or s */
        aff->offset = -pad;
    }
    return e;
}

/* NCHW, or with iblock / oblock channels in blocks (the NCHWc layouts of
 * oneDNN and ONNX Runtime): a blocked tensor's channel c is dimension 1 at
 * c / block and the last dimension at c % block, each its own axis (ko and
 * ki, co and ci), so that every index stays one axis and the space tiles
 * and vectorises the block like any other axis. The weight is blocked the
 * same way on both channel dimensions, W[K/oblock, C/iblock, R, S, iblock,
 * oblock] (a framework's KCRS weight is reordered into it once). */
static const rlt_expr *build_conv2d(rlt_op *op, const int64_t *v)
{
    int64_t N = v[0], C = v[1], H = v[2], W = v[3], K = v[4], R = v[5], S = v[6];
    const int64_t geo[3] = {v[7], v[8], v[9]};
    int64_t bi = v[10], bo = v[11];
    int64_t P = conv_out_size(H, R, geo[0], geo[1], geo[2]);
    int64_t Q = conv_out_size(W, S, geo[0], geo[1], geo[2]);
    if (bi == 0 && bo == 0) {
        enum { n, k, p, q, c, r, s };
        add_axis(op, "n", N, false);
        add_axis(op, "k", K, false);
        add_axis(op, "p", P, false);
        add_axis(op, "q", Q, false);
        add_axis(op, "c", C, true);
        add_axis(op, "r", R, true);
        add_axis(op, "s", S, true);
        int in = add_tensor(op, "I", 4, (int64_t[]){N, C, H, W}, false);
        int w = add_tensor(op, "W", 4, (int64_t[]){K, C, R, S}, true);
        mark_output(op, add_tensor(op, "O", 4, (int64_t[]){N, K, P, Q}, false));
        return product(op, conv_input_load(op, in, (int[]){n, c, p, q, r, s}, geo),
                       new_load(op, w, (int[]){k, c, r, s}));
    }
    /* Axes: n, k or ko, p, q, [ki] / c or co, r, s, [ci]. */
    int n = 0, ko = 1, p = 2, q = 3, ki = bo ? 4 : -1;
    int co = bo ? 5 : 4, r = co + 1, s = co + 2, ci = bi ? co + 3 : -1;
    add_axis(op, "n", N, false);
    add_axis(op, bo ? "ko" : "k", bo ? K / bo : K, false);
    add_axis(op, "p", P, false);
    add_axis(op, "q", Q, false);
    if (bo) add_axis(op, "ki", bo, false);
    add_axis(op, bi ? "co" : "c", bi ? C / bi : C, true);
    add_axis(op, "r", R, true);
    add_axis(op, "s", S, true);
    if (bi) add_axis(op, "ci", bi, true);
    int in = bi ? add_tensor(op, "I", 5, (int64_t[]){N, C / bi, H, W, bi}, false)
                : add_tensor(op, "I", 4, (int64_t[]){N, C, H, W}, false);
    int64_t wdims[6] = {bo ? K / bo : K, bi ? C / bi : C, R, S, 0, 0};
    int wax[6] = {ko, co, r, s, -1, -1}, nw = 4;
    if (bi) wdims[nw] = bi, wax[nw++] = ci;
    if (bo) wdims[nw] = bo, wax[nw++] = ki;
    int w = add_tensor(op, "W", nw, wdims, true);
    if (bo) mark_output(op, add_tensor(op, "O", 5, (int64_t[]){N, K / bo, P, Q, bo}, false));
    else mark_output(op, add_tensor(op, "O", 4, (int64_t[]){N, K, P, Q}, false));
    rlt_expr *x = conv_input_load(op, in, (int[]){n, co, p, q, r, s}, geo);
    if (x && bi) x->index[4].coef[ci] = 1;
    return product(op, x, new_load(op, w, wax));
}

/* NCHW, or with block channels in blocks (NCHWc) on both sides, the
 * channel split into co (c / block) and ci (c % block):
 * O[n,co,p,q,ci] += I[n,co,...,...,ci] * W[co,r,s,ci], the weight
 * [C/block, R, S, block] (the framework's [C,1,R,S] reordered once). */
static const rlt_expr *build_depthwise_conv2d(rlt_op *op, const int64_t *v)
{
    int64_t N = v[0], C = v[1], H = v[2], W = v[3], R = v[4], S = v[5];
    const int64_t geo[3] = {v[6], v[7], v[8]};
    int64_t P = conv_out_size(H, R, geo[0], geo[1], geo[2]);
    int64_t Q = conv_out_size(W, S, geo[0], geo[1], geo[2]);
    int64_t B = v[9];
    if (B) {
        enum { n, co, p, q, ci, r, s };
        add_axis(op, "n", N, false);
        add_axis(op, "co", C / B, false);
        add_axis(op, "p", P, false);
        add_axis(op, "q", Q, false);
        add_axis(op, "ci", B, false);
        add_axis(op, "r", R, true);
        add_axis(op, "s", S, true);
        int in = add_tensor(op, "I", 5, (int64_t[]){N, C / B, H, W, B}, false);
        int w = add_tensor(op, "W", 4, (int64_t[]){C / B, R, S, B}, true);
        mark_output(op, add_tensor(op, "O", 5, (int64_t[]){N, C / B, P, Q, B}, false));
        rlt_expr *x = conv_input_load(op, in, (int[]){n, co, p, q, r, s}, geo);
        if (x) x->index[4].coef[ci] = 1;
        return product(op, x, new_load(op, w, (int[]){co, r, s, ci}));
    }
    enum { n, c, p, q, r, s };
    add_axis(op, "n", N, false);
    add_axis(op, "c", C, false);
    add_axis(op, "p", P, false);
    add_axis(op, "q", Q, false);
    add_axis(op, "r", R, true);
    add_axis(op, "s", S, true);
    int in = add_tensor(op, "I", 4, (int64_t[]){N, C, H, W}, false);
    int w = add_tensor(op, "W", 4, (int64_t[]){C, 1, R, S}, true);
    mark_output(op, add_tensor(op, "O", 4, (int64_t[]){N, C, P, Q}, false));
    return product(op, conv_input_load(op, in, (int[]){n, c, p, q, r, s}, geo),
                   new_load(op, w, (int[]){c, -1, r, s}));
}

/* Appends the steps' epilogue to a built op: bias[channels] (a weight) for
 * `bias`, res[the output's shape] for `add`, the tensors placed before the
 * output, which stays last. False when out of memory. */
static bool attach_epilogue(rlt_op *op, int kind, const epi_steps *steps)
{
    if (steps->n == 0) return true;
    rlt_tensor out = op->tensors[op->n_tensors - 1];
    op->n_tensors--;
    int channel = channel_axis_of[kind];
    int spatial[RLT_MAX_DIMS];
    for (int d = 0; d < op->n_spatial; d++) spatial[d] = d;
    const rlt_expr *e = op->epilogue ? op->epilogue : rlt_expr_new(op->arena, RLT_EXPR_ACC, NULL, NULL);
    for (int i = 0; i < steps->n && e; i++) {
        switch (steps->step[i]) {
        case EPI_BIAS: {
            /* A blocked output's channels are two axes (ko, ki): its bias is
             * [K/oblock, oblock], the same floats as bias[K]. */
            bool is_blocked = (kind == OP_CONV2D || kind == OP_DEPTHWISE_CONV2D) && out.n_dims == 5;
            int t = is_blocked ? add_tensor(op, "bias", 2, (int64_t[]){op->axes[channel].extent, out.dims[4]}, true)
                               : add_tensor(op, "bias", 1, (int64_t[]){op->axes[channel].extent}, true);
            const rlt_expr *b = new_load(op, t, is_blocked ? (int[]){channel, 4} : (int[]){channel});
            e = b ? rlt_expr_new(op->arena, RLT_EXPR_ADD, e, b) : NULL;
            break;
        }
        case EPI_ADD: {
            int t = add_tensor(op, "res", out.n_dims, out.dims, false);
            const rlt_expr *r = new_load(op, t, spatial);
            e = r ? rlt_expr_new(op->arena, RLT_EXPR_ADD, e, r) : NULL;
            break;
        }
        case EPI_RELU: e = rlt_expr_new(op->arena, RLT_EXPR_RELU, e, NULL); break;
        case EPI_RELU6: {
            rlt_expr *six = rlt_expr_new(op->arena, RLT_EXPR_CONST, NULL, NULL);
            if (six) six->value = 6.0;
            const rlt_expr *r = six ? rlt_expr_new(op->arena, RLT_EXPR_RELU, e, NULL) : NULL;
            e = r ? rlt_expr_new(op->arena, RLT_EXPR_MIN, r, six) : NULL;
            break;
        }
        case N_EPI_STEPS: RLT_ASSERT(false);
        }
    }
    op->tensors[op->n_tensors++] = out;
    op->epilogue = e;
    return e != NULL;
}

typedef const rlt_expr *(*op_builder)(rlt_op *op, const int64_t *values);

static const op_builder op_builders[N_BUILTIN_OPS] = {
    [OP_MATMUL] = build_matmul,
    [OP_BATCH_MATMUL] = build_batch_matmul,
    [OP_DENSE] = build_dense,
    [OP_CONV2D] = build_conv2d,
    [OP_DEPTHWISE_CONV2D] = build_depthwise_conv2d,
};

/* ---- the spec parser ---------------------------------------------------- */

/* Copies text for a message: printable ASCII kept, other bytes as '?',
 * long text cut with "...", so a message never carries control bytes. */
static const char *quoted(char *buf, size_t cap, const char *s, size_t n)
{
    size_t limit = cap - 4, k = 0;
    for (size_t i = 0; i < n && s[i]; i++) {
        if (k == limit) {
            memcpy(buf + k, "...", 3);
            k += 3;
            break;
        }
        unsigned char ch = (unsigned char)s[i];
        buf[k++] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : '?';
    }
    buf[k] = '\0';
    return buf;
}

static void trim(const char **s, size_t *n)
{
    while (*n > 0 && isspace((unsigned char)**s)) {
        (*s)++;
        (*n)--;
    }
    while (*n > 0 && isspace((unsigned char)(*s)[*n - 1])) (*n)--;
}

static void list_keys(const rlt_op_info *info, char *buf, size_t cap)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < info->n_params && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%s%s", i > 0 ? ", " : "", info->params[i].key,
                              info->params[i].is_required ? "" : " (optional)");
    if (k < cap) snprintf(buf + k, cap - k, ", epilogue (optional)");
}

static void list_ops(char *buf, size_t cap)
{
    size_t k = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < RLT_ARRAY_LEN(op_library) && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s, ", op_library[i].name);
    if (k < cap) snprintf(buf + k, cap - k, "expr (expr:EXPRESSION|SHAPE)");
}

/* Parses one value: a whole decimal number within the parameter's range. */
static rlt_status parse_value(const char *spec_q, const rlt_op_param *param, const char *text, size_t n,
                              int64_t *out, rlt_diag *diag)
{
    char vq[48];
    bool is_flag = param->min_value == 0 && param->max_value == 1;
    char accepted[96];
    if (is_flag) snprintf(accepted, sizeof accepted, "0 or 1");
    else
        snprintf(accepted, sizeof accepted, "a whole number from %" PRId64 " to %" PRId64, param->min_value,
                 param->max_value);
    if (n == 0)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "op spec '%s': key %s has no value; expected %s",
                        spec_q, param->key, accepted);
    size_t i = 0;
    bool is_negative = false;
    if (text[0] == '+' || text[0] == '-') {
        is_negative = text[0] == '-';
        i = 1;
    }
    if (i == n)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "op spec '%s': value '%s' of %s is not a number; expected %s",
                        spec_q, quoted(vq, sizeof vq, text, n), param->key, accepted);
    /* Accumulate with saturation: the range check below names the limit,
     * which is more useful than "does not fit in 64 bits". */
    int64_t v = 0;
    bool is_huge = false;
    for (; i < n; i++) {
        if (!isdigit((unsigned char)text[i]))
            return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                            "op spec '%s': value '%s' of %s is not a whole number; expected %s", spec_q,
                            quoted(vq, sizeof vq, text, n), param->key, accepted);
        int digit = text[i] - '0';
        if (v > (INT64_MAX - digit) / 10) is_huge = true;
        else v = v * 10 + digit;
    }
    if (is_flag && !is_huge && (is_negative || v > 1))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "op spec '%s': %s must be 0 or 1, got %s", spec_q,
                        param->key, quoted(vq, sizeof vq, text, n));
    if (is_huge || v > param->max_value) {
        if (is_negative)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "op spec '%s': %s=%s is out of range; expected %s",
                            spec_q, param->key, quoted(vq, sizeof vq, text, n), accepted);
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "op spec '%s': %s=%s is too large; expected %s",
                        spec_q, param->key, quoted(vq, sizeof vq, text, n), accepted);
    }
    if (is_negative) v = -v;
    if (v < param->min_value)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "op spec '%s': %s must be at least %" PRId64 ", got %" PRId64 "; expected %s", spec_q,
                        param->key, param->min_value, v, accepted);
    *out = v;
    return RLT_STATUS_OK;
}

/* Splits "KEY=VALUE,..." into the parameter values, defaults filled in. */
/* Parses the value of `epilogue=`: steps joined by '+', each at most once. */
static rlt_status parse_epilogue(const char *spec_q, const char *text, size_t n, epi_steps *out, rlt_diag *diag)
{
    char vq[48];
    memset(out, 0, sizeof *out);
    size_t at = 0;
    while (at <= n) {
        size_t len = 0;
        while (at + len < n && text[at + len] != '+') len++;
        const char *word = text + at;
        size_t wn = len;
        trim(&word, &wn);
        int found = -1;
        for (int i = 0; i < N_EPI_STEPS; i++)
            if (strlen(epi_step_names[i]) == wn && strncmp(epi_step_names[i], word, wn) == 0) found = i;
        if (found < 0)
            return rlt_fail(diag, wn == 0 ? RLT_STATUS_PARSE_ERROR : RLT_STATUS_INVALID_ARGUMENT,
                            "op spec '%s': %s epilogue step '%s'; expected steps from bias, add, relu, relu6 "
                            "joined by '+', e.g. epilogue=bias+add+relu",
                            spec_q, wn == 0 ? "empty" : "unknown", quoted(vq, sizeof vq, word, wn));
        for (int i = 0; i < out->n; i++)
            if ((int)out->step[i] == found)
                return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                                "op spec '%s': epilogue step %s is given twice; each step may appear once", spec_q,
                                epi_step_names[found]);
        out->step[out->n++] = (epi_step)found;
        at += len + 1;
    }
    return RLT_STATUS_OK;
}

static rlt_status parse_params(const char *spec_q, const rlt_op_info *info, const char *text, size_t text_col,
                               int64_t *values, epi_steps *epilogue, bool *has_epilogue, rlt_diag *diag)
{
    bool is_set[MAX_PARAMS] = {false};
    char keys[256], kq[48];
    list_keys(info, keys, sizeof keys);
    const char *p = text;
    bool is_empty_list = true;
    for (size_t k = 0; p[k]; k++)
        if (!isspace((unsigned char)p[k])) is_empty_list = false;
    while (!is_empty_list) {
        const char *item = p;
        size_t item_len = strcspn(item, ",");
        size_t col = text_col + (size_t)(item - text);
        const char *eq = memchr(item, '=', item_len);
        if (!eq) {
            const char *t = item;
            size_t tn = item_len;
            trim(&t, &tn);
            if (tn == 0)
                return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                                "op spec '%s': empty parameter at column %zu; expected KEY=VALUE items "
                                "separated by ','",
                                spec_q, col);
            return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                            "op spec '%s': parameter '%s' at column %zu has no '='; expected KEY=VALUE", spec_q,
                            quoted(kq, sizeof kq, t, tn), col);
        }
        const char *key = item, *val = eq + 1;
        size_t key_len = (size_t)(eq - item), val_len = item_len - key_len - 1;
        trim(&key, &key_len);
        trim(&val, &val_len);
        if (key_len == 0)
            return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                            "op spec '%s': parameter at column %zu has no key before '='; %s accepts %s", spec_q,
                            col, info->name, keys);
        if (key_len == 8 && strncmp(key, "epilogue", 8) == 0) {
            if (*has_epilogue)
                return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                                "op spec '%s': key epilogue is given twice (again at column %zu); give each key once",
                                spec_q, col);
            rlt_status st = parse_epilogue(spec_q, val, val_len, epilogue, diag);
            if (st != RLT_STATUS_OK) return st;
            *has_epilogue = true;
            if (item[item_len] == '\0') break;
            p = item + item_len + 1;
            continue;
        }
        int found = -1, found_nocase = -1;
        for (int i = 0; i < info->n_params; i++) {
            const char *pk = info->params[i].key;
            if (strlen(pk) != key_len) continue;
            if (strncmp(pk, key, key_len) == 0) found = i;
            else if (strncasecmp(pk, key, key_len) == 0) found_nocase = i;
        }
        if (found < 0) {
            if (found_nocase >= 0)
                return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                                "op spec '%s': unknown key '%s' for %s (keys are case-sensitive: did you mean "
                                "'%s'?); accepted keys: %s",
                                spec_q, quoted(kq, sizeof kq, key, key_len), info->name,
                                info->params[found_nocase].key, keys);
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "op spec '%s': unknown key '%s' for %s; accepted keys: %s",
                            spec_q, quoted(kq, sizeof kq, key, key_len), info->name, keys);
        }
        if (is_set[found])
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "op spec '%s': key %s is given twice (again at column %zu); give each key once",
                            spec_q, info->params[found].key, col);
        rlt_status st = parse_value(spec_q, &info->params[found], val, val_len, &values[found], diag);
        if (st != RLT_STATUS_OK) return st;
        is_set[found] = true;
        if (item[item_len] == '\0') break;
        p = item + item_len + 1;
    }
    for (int i = 0; i < info->n_params; i++) {
        if (is_set[i]) continue;
        if (info->params[i].is_required)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "op spec '%s': %s needs key %s (%s); accepted keys: %s; e.g. %s", spec_q, info->name,
                            info->params[i].key, info->params[i].help, keys, info->example);
        values[i] = info->params[i].default_value;
    }
    return RLT_STATUS_OK;
}

/* Limits the built-ins' parameters cannot express alone: a conv's output
 * size must be positive and no tensor may exceed RLT_MAX_TENSOR_ELEMS. */
static rlt_status check_shapes(const char *spec_q, int kind, const int64_t *v, rlt_diag *diag)
{
    if (kind == OP_CONV2D || kind == OP_DEPTHWISE_CONV2D) {
        int g = kind == OP_CONV2D ? 7 : 6; /* stride, pad, dilation follow the sizes */
        int64_t H = v[2], W = v[3];
        int64_t R = v[kind == OP_CONV2D ? 5 : 4], S = v[kind == OP_CONV2D ? 6 : 5];
        int64_t stride = v[g], pad = v[g + 1], dilation = v[g + 2];
        const char *names[2][2] = {{"P", "H"}, {"Q", "W"}};
        const char *knames[2] = {"R", "S"};
        int64_t in[2] = {H, W}, ker[2] = {R, S};
        for (int d = 0; d < 2; d++) {
            if (conv_out_size(in[d], ker[d], stride, pad, dilation) >= 1) continue;
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "op spec '%s': output size %s = (%s + 2*pad - dilation*(%s-1) - 1)/stride + 1 = "
                            "(%" PRId64 " + %" PRId64 " - %" PRId64 " - 1)/%" PRId64 " + 1 is below 1: the "
                            "kernel spans %" PRId64 " but the padded input is only %" PRId64
                            " wide; lower %s or dilation, or raise %s or pad",
                            spec_q, names[d][0], names[d][1], knames[d], in[d], 2 * pad,
                            dilation * (ker[d] - 1), stride, dilation * (ker[d] - 1) + 1, in[d] + 2 * pad,
                            knames[d], names[d][1]);
        }
    }
    if (kind == OP_DEPTHWISE_CONV2D && v[9] && v[1] % v[9] != 0)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "op spec '%s': block=%" PRId64 " does not divide C=%" PRId64
                        "; a blocked layout needs whole blocks of channels (or block=0 for NCHW)",
                        spec_q, v[9], v[1]);
    if (kind == OP_CONV2D) {
        const char *keys[2] = {"iblock", "oblock"}, *sizes[2] = {"C", "K"};
        int64_t channels[2] = {v[1], v[4]};
        for (int i = 0; i < 2; i++) {
            int64_t b = v[10 + i];
            if (b == 0 || channels[i] % b == 0) continue;
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "op spec '%s': %s=%" PRId64 " does not divide %s=%" PRId64
                            "; a blocked layout needs whole blocks of channels (or %s=0 for NCHW)",
                            spec_q, keys[i], b, sizes[i], channels[i], keys[i]);
        }
    }
    return RLT_STATUS_OK;
}

static rlt_status check_tensor_sizes(const char *spec_q, const rlt_op *op, rlt_diag *diag)
{
    for (int t = 0; t < op->n_tensors; t++) {
        const rlt_tensor *tensor = &op->tensors[t];
        int64_t n = 1;
        bool is_over = false;
        for (int d = 0; d < tensor->n_dims && !is_over; d++) {
            if (n > RLT_MAX_TENSOR_ELEMS / tensor->dims[d]) is_over = true;
            else n *= tensor->dims[d];
        }
        if (!is_over && n <= RLT_MAX_TENSOR_ELEMS) continue;
        char dims[160];
        size_t k = 0;
        for (int d = 0; d < tensor->n_dims && k < sizeof dims; d++)
            k += (size_t)snprintf(dims + k, sizeof dims - k, "%s%" PRId64, d > 0 ? " x " : "", tensor->dims[d]);
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "op spec '%s': tensor %s would have %s elements, more than the %" PRId64
                        " (2^31) supported; use smaller sizes",
                        spec_q, tensor->name, dims, RLT_MAX_TENSOR_ELEMS);
    }
    return RLT_STATUS_OK;
}

/* "expr:EXPRESSION|SHAPE", the spec rlt_op_from_expr gives its ops. */
static rlt_status parse_expr_spec(const char *spec, const char *body, rlt_op **out, rlt_diag *diag)
{
    char sq[80];
    const char *bar = strchr(body, '|');
    if (!bar)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                        "op spec '%s': an expr spec needs '|' between the expression and the shape, e.g. "
                        "expr:C[i,j] += A[i,k] * B[k,j]|i=64,j=64,k=64",
                        quoted(sq, sizeof sq, spec, strlen(spec)));
    char *expr = rlt_strndup(body, (size_t)(bar - body));
    if (!expr) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory parsing an op spec");
    rlt_status st = rlt_op_from_expr(expr, bar + 1, out, diag);
    rlt_free(expr);
    return st;
}

/* dense has its own bias and relu keys: an epilogue they can say (bias,
 * relu, or bias then relu) becomes them, so that one op has one spec; any
 * other epilogue needs both keys 0. */
static rlt_status dense_epilogue(const char *spec_q, int kind, int64_t *values, epi_steps *e, rlt_diag *diag)
{
    if (kind != OP_DENSE || e->n == 0) return RLT_STATUS_OK;
    if (values[3] || values[4])
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "op spec '%s': dense takes its epilogue either as bias=/relu= or as epilogue=, not both",
                        spec_q);
    int i = 0;
    bool bias = i < e->n && e->step[i] == EPI_BIAS;
    if (bias) i++;
    bool relu = i < e->n && e->step[i] == EPI_RELU;
    if (relu) i++;
    if (i < e->n) return RLT_STATUS_OK;
    values[3] = bias;
    values[4] = relu;
    e->n = 0;
    return RLT_STATUS_OK;
}

rlt_status rlt_op_parse(const char *spec, rlt_op **out, rlt_diag *diag)
{
    rlt_status st = RLT_STATUS_OK;
    rlt_op *op = NULL;
    char sq[80], nq[48], ops[200];
    if (!out) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "rlt_op_parse: no place for the result");
    *out = NULL;
    if (!spec) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "no op spec given");
    quoted(sq, sizeof sq, spec, strlen(spec));
    list_ops(ops, sizeof ops);

    const char *name = spec;
    size_t name_len = strcspn(spec, ":");
    bool has_colon = spec[name_len] == ':';
    trim(&name, &name_len);
    if (name_len == 0 && !has_colon)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                        "empty op spec; expected NAME:KEY=VALUE,..., e.g. matmul:M=512,N=512,K=512; ops: %s", ops);
    if (name_len == 4 && strncmp(name, "expr", 4) == 0) {
        if (has_colon) return parse_expr_spec(spec, spec + strcspn(spec, ":") + 1, out, diag);
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                        "op spec '%s' has no ':'; expected expr:EXPRESSION|SHAPE, e.g. "
                        "expr:C[i,j] += A[i,k] * B[k,j]|i=64,j=64,k=64",
                        sq);
    }
    int kind = -1;
    for (int i = 0; i < N_BUILTIN_OPS; i++)
        if (strlen(op_library[i].name) == name_len && strncmp(op_library[i].name, name, name_len) == 0) kind = i;
    if (kind < 0) {
        if (name_len == 0)
            return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "op spec '%s' has no op name before ':'; ops: %s", sq,
                            ops);
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "unknown op '%s' in op spec '%s'; known ops: %s",
                        quoted(nq, sizeof nq, name, name_len), sq, ops);
    }
    const rlt_op_info *info = &op_library[kind];
    if (!has_colon)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                        "op spec '%s' has no ':' before its parameters; expected e.g. %s", sq, info->example);

    size_t params_at = strcspn(spec, ":") + 1;
    int64_t values[MAX_PARAMS] = {0};
    epi_steps epilogue = {0};
    bool has_epilogue = false;
    st = parse_params(sq, info, spec + params_at, params_at + 1, values, &epilogue, &has_epilogue, diag);
    if (st != RLT_STATUS_OK) goto cleanup;
    if ((st = dense_epilogue(sq, kind, values, &epilogue, diag)) != RLT_STATUS_OK) goto cleanup;
    st = check_shapes(sq, kind, values, diag);
    if (st != RLT_STATUS_OK) goto cleanup;

    op = rlt_calloc(1, sizeof *op);
    if (!op || !(op->arena = rlt_arena_create())) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory building op '%s'", sq);
        goto cleanup;
    }
    snprintf(op->kind, sizeof op->kind, "%s", info->name);
    op->body = op_builders[kind](op, values);
    if (!op->body || !attach_epilogue(op, kind, &epilogue)) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory building op '%s'", sq);
        goto cleanup;
    }
    st = check_tensor_sizes(sq, op, diag);
    if (st != RLT_STATUS_OK) goto cleanup;
    op->flops = rlt_op_count_flops(op);

    size_t k = (size_t)snprintf(op->spec, sizeof op->spec, "%s:", info->name);
    for (int i = 0; i < info->n_params; i++) {
        if (info->params[i].is_omitted_at_default && values[i] == info->params[i].default_value) continue;
        k += (size_t)snprintf(op->spec + k, sizeof op->spec - k, "%s%s=%" PRId64, i > 0 ? "," : "",
                              info->params[i].key, values[i]);
    }
    for (int i = 0; i < epilogue.n; i++)
        k += (size_t)snprintf(op->spec + k, sizeof op->spec - k, "%s%s", i == 0 ? ",epilogue=" : "+",
                              epi_step_names[epilogue.step[i]]);
    RLT_ASSERT(k < sizeof op->spec);
    *out = op;
    op = NULL;

cleanup:
    rlt_op_destroy(op);
    return st;
}

/* ---- walking the loads -------------------------------------------------- */

static void collect_loads(const rlt_expr *e, const rlt_expr **out, int max, int *n)
{
    if (!e) return;
    if (e->kind == RLT_EXPR_LOAD && *n < max) out[(*n)++] = e;
    collect_loads(e->a, out, max, n);
    collect_loads(e->b, out, max, n);
}

int rlt_op_loads(const rlt_op *op, const rlt_expr **out, int max)
{
    int n = 0;
    collect_loads(op->body, out, max, &n);
    collect_loads(op->epilogue, out, max, &n);
    return n;
}

int rlt_load_dim_of_axis(const rlt_op *op, const rlt_expr *load, int axis)
{
    for (int d = 0; d < op->tensors[load->tensor].n_dims; d++) {
        const rlt_affine *a = &load->index[d];
        bool is_only = a->coef[axis] == 1 && a->offset == 0;
        for (int x = 0; x < op->n_axes && is_only; x++) is_only = x == axis || a->coef[x] == 0;
        if (is_only) return d;
    }
    return -1;
}
