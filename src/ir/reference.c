/*
 * reference.c - the slow, obviously-correct meaning of an op: a
 * double-precision interpreter of its expression trees over every point of
 * the domain (rlt_op_eval_reference), and the seeded test data every
 * candidate kernel is checked with (rlt_tensor_fill).
 *
 * Out-of-bounds loads read zero, as the IR defines. Beside each output value
 * the interpreter computes a magnitude: the same expression evaluated on
 * absolute values with every operation taken at its worst (|a|+|b| for a
 * sum, max for relu/max/min), so that |value| <= magnitude and rounding
 * error in any float evaluation order is bounded by a multiple of it.
 */
#include "ir/ir.h"

#include <math.h>
#include <string.h>

void rlt_tensor_fill(float *data, int64_t n, uint64_t seed)
{
    rlt_rng rng;
    rlt_rng_seed(&rng, seed);
    /* 24 random bits on a 2^-23 grid: exact in a float and never 1.0, which
     * rounding a double from [0, 1) to float could give. */
    for (int64_t i = 0; i < n; i++) {
        int64_t k = (int64_t)(rlt_rng_u64(&rng) >> 40) - ((int64_t)1 << 23);
        data[i] = (float)k * 0x1p-23f;
    }
}

typedef struct eval_state {
    const rlt_op *op;
    const float *const *inputs;
    int64_t strides[RLT_MAX_TENSORS][RLT_MAX_DIMS];
    int64_t point[RLT_MAX_AXES]; /* the current value of every axis */
    double acc, acc_magnitude;   /* the reduction's result, for ACC */
} eval_state;

static double load(const eval_state *s, const rlt_expr *e)
{
    const rlt_tensor *t = &s->op->tensors[e->tensor];
    int64_t offset = 0;
    for (int d = 0; d < t->n_dims; d++) {
        const rlt_affine *a = &e->index[d];
        int64_t idx = a->offset;
        for (int x = 0; x < s->op->n_axes; x++) idx += a->coef[x] * s->point[x];
        if (idx < 0 || idx >= t->dims[d]) return 0.0;
        offset += idx * s->strides[e->tensor][d];
    }
    return s->inputs[e->tensor][offset];
}

static void eval(const eval_state *s, const rlt_expr *e, double *value, double *magnitude)
{
    double a = 0, am = 0, b = 0, bm = 0;
    if (e->a) eval(s, e->a, &a, &am);
    if (e->b) eval(s, e->b, &b, &bm);
    switch (e->kind) {
    case RLT_EXPR_CONST:
        *value = e->value;
        *magnitude = fabs(e->value);
        return;
    case RLT_EXPR_LOAD:
        *value = load(s, e);
        *magnitude = fabs(*value);
        return;
    case RLT_EXPR_ACC:
        *value = s->acc;
        *magnitude = s->acc_magnitude;
        return;
    case RLT_EXPR_NEG: *value = -a; *magnitude = am; return;
    case RLT_EXPR_RELU: *value = a > 0 ? a : 0; *magnitude = am; return;
    case RLT_EXPR_ADD: *value = a + b; *magnitude = am + bm; return;
    case RLT_EXPR_SUB: *value = a - b; *magnitude = am + bm; return;
    case RLT_EXPR_MUL: *value = a * b; *magnitude = am * bm; return;
    case RLT_EXPR_MAX: *value = a > b ? a : b; *magnitude = am > bm ? am : bm; return;
    case RLT_EXPR_MIN: *value = a < b ? a : b; *magnitude = am > bm ? am : bm; return;
    }
    RLT_ASSERT(!"unknown expression kind");
}

/* Every load reads an input (the output is never loaded, only ACC'd), and
 * ACC appears only in the epilogue. */
static bool is_well_formed(const rlt_op *op, const rlt_expr *e, bool is_epilogue)
{
    if (!e) return true;
    if (e->kind == RLT_EXPR_LOAD && (e->tensor < 0 || e->tensor >= op->n_tensors - 1)) return false;
    if (e->kind == RLT_EXPR_ACC && !is_epilogue) return false;
    return is_well_formed(op, e->a, is_epilogue) && is_well_formed(op, e->b, is_epilogue);
}

/* Advances axes [first, last) like an odometer, innermost last; false once
 * every point has been visited. */
static bool next_point(const rlt_op *op, int64_t *point, int first, int last)
{
    for (int x = last - 1; x >= first; x--) {
        if (++point[x] < op->axes[x].extent) return true;
        point[x] = 0;
    }
    return false;
}

/* Checks the op and its inputs and fills s (strides per tensor). */
static rlt_status eval_setup(const rlt_op *op, const float *const *inputs, eval_state *s, const char *who,
                             rlt_diag *diag)
{
    if (!op || (op->n_tensors > 1 && !inputs))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s: missing op, inputs or output", who);
    if (!op->body || !is_well_formed(op, op->body, false) || !is_well_formed(op, op->epilogue, true))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "%s: op '%s' has a malformed expression (a load of the output or an "
                        "ACC outside the epilogue)",
                        who, op->spec);
    memset(s, 0, sizeof *s);
    s->op = op;
    s->inputs = inputs;
    for (int t = 0; t < op->n_tensors; t++) {
        if (t < op->n_tensors - 1 && !inputs[t])
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s: input %d (%s) is NULL", who, t,
                            op->tensors[t].name);
        int64_t stride = 1;
        for (int d = op->tensors[t].n_dims - 1; d >= 0; d--) {
            s->strides[t][d] = stride;
            stride *= op->tensors[t].dims[d];
        }
    }
    return RLT_STATUS_OK;
}

/* The output element at the spatial point in s->point: the reduction over
 * every reduce axis, then the epilogue. */
static void eval_element(eval_state *s, double *value, double *magnitude)
{
    const rlt_op *op = s->op;
    for (int x = op->n_spatial; x < op->n_axes; x++) s->point[x] = 0;
    s->acc = 0;
    s->acc_magnitude = 0;
    do {
        double v, m;
        eval(s, op->body, &v, &m);
        s->acc += v;
        s->acc_magnitude += m;
    } while (next_point(op, s->point, op->n_spatial, op->n_axes));
    *value = s->acc;
    *magnitude = s->acc_magnitude;
    if (op->epilogue) eval(s, op->epilogue, value, magnitude);
}

rlt_status rlt_op_eval_reference(const rlt_op *op, const float *const *inputs, double *out,
                                 double *out_magnitude, rlt_diag *diag)
{
    eval_state s;
    rlt_status st = eval_setup(op, inputs, &s, "rlt_op_eval_reference", diag);
    if (st != RLT_STATUS_OK) return st;
    if (!out) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "rlt_op_eval_reference: missing output");
    int64_t o = 0; /* the output is indexed by the spatial axes in order */
    do {
        double value, magnitude;
        eval_element(&s, &value, &magnitude);
        out[o] = value;
        if (out_magnitude) out_magnitude[o] = magnitude;
        o++;
    } while (next_point(op, s.point, 0, op->n_spatial));
    return RLT_STATUS_OK;
}

rlt_status rlt_op_eval_reference_at(const rlt_op *op, const float *const *inputs, int64_t index, double *value,
                                    double *magnitude, rlt_diag *diag)
{
    eval_state s;
    rlt_status st = eval_setup(op, inputs, &s, "rlt_op_eval_reference_at", diag);
    if (st != RLT_STATUS_OK) return st;
    if (!value || !magnitude)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "rlt_op_eval_reference_at: missing output");
    if (index < 0 || index >= rlt_op_tensor_size(op, op->n_tensors - 1))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "rlt_op_eval_reference_at: element %lld is outside the output of %s", (long long)index,
                        op->spec);
    for (int x = op->n_spatial - 1; x >= 0; x--) {
        s.point[x] = index % op->axes[x].extent;
        index /= op->axes[x].extent;
    }
    eval_element(&s, value, magnitude);
    return RLT_STATUS_OK;
}
