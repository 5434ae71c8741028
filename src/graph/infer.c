/*
 * infer.c - shape and type inference for every op the graph IR supports,
 * with constant folding (rlt_graph_infer). One table, `ops`, names each
 * op, the attributes it accepts (with their kinds), how many inputs and
 * outputs it takes, and its inference function; the generic checks
 * (attribute names and kinds, input counts, required inputs) run before
 * the op's own. Folding turns a node whose inputs are all constants into
 * constant outputs (Shape folds whenever its input has a shape), which is
 * how shape subgraphs (Shape -> Gather -> Unsqueeze -> Concat -> Reshape)
 * become known Reshape targets: the shape and data-movement ops fold in
 * their own inference functions, every other op the evaluator runs by
 * rlt_graph_eval_node after its inference (fold_by_eval), within the size
 * limits of fold_small.
 *
 * Every message about a node starts "node I 'NAME' (OP, opset N): ".
 */
#include "graph/graph.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define TRY(expr)                                                                                            \
    do {                                                                                                     \
        rlt_status st_ = (expr);                                                                             \
        if (st_ != RLT_STATUS_OK) return st_;                                                                \
    } while (0)

/* Values in attributes and index inputs that stay far from overflow in
 * the shape arithmetic (dims are at most 2^40). */
#define SMALL_MAX ((int64_t)1 << 42)

typedef struct ictx {
    rlt_graph *g;
    rlt_graph_node *node;
    rlt_diag *diag;
} ictx;

static rlt_status nfail(const ictx *c, rlt_status status, const char *fmt, ...) RLT_PRINTF(3, 4);

static rlt_status nfail(const ictx *c, rlt_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rlt_status st = rlt_graph_node_vfail(c->g, c->node, c->diag, status, fmt, ap);
    va_end(ap);
    return st;
}

#define BAD(...) nfail(c, RLT_STATUS_INVALID_ARGUMENT, __VA_ARGS__)

/* ---- access ---------------------------------------------------------------- */

static rlt_graph_tensor *in_t(const ictx *c, int i)
{
    if (i >= c->node->n_inputs || c->node->inputs[i] < 0) return NULL;
    return &c->g->tensors[c->node->inputs[i]];
}

static rlt_graph_tensor *out_t(const ictx *c, int i)
{
    if (i >= c->node->n_outputs || c->node->outputs[i] < 0) return NULL;
    return &c->g->tensors[c->node->outputs[i]];
}

static rlt_status set_out(const ictx *c, int i, rlt_dtype dtype, int rank, const int64_t *dims)
{
    rlt_graph_tensor *t = out_t(c, i);
    if (!t) return RLT_STATUS_OK;
    if (rank > RLT_GRAPH_MAX_RANK) return BAD("output '%s' would have rank %d; at most %d is supported",
                                             t->name, rank, RLT_GRAPH_MAX_RANK);
    t->dtype = dtype;
    rlt_diag d = {0};
    if (rlt_graph_tensor_set_shape(c->g, c->node->outputs[i], rank, dims, &d) != RLT_STATUS_OK)
        return BAD("%s", d.message);
    return RLT_STATUS_OK;
}

static rlt_status set_out_like(const ictx *c, int i, const rlt_graph_tensor *x)
{
    return set_out(c, i, x->dtype, x->rank, x->dims);
}

static const rlt_graph_attr *attr(const ictx *c, const char *name) { return rlt_graph_node_attr(c->node, name); }

static int64_t attr_i(const ictx *c, const char *name, int64_t def)
{
    const rlt_graph_attr *a = attr(c, name);
    return a ? a->i : def;
}

static const char *attr_s(const ictx *c, const char *name, const char *def)
{
    const rlt_graph_attr *a = attr(c, name);
    return a ? a->s : def;
}

/* An INTS attribute's values (NULL and 0 when absent). */
static const int64_t *attr_ints(const ictx *c, const char *name, int *n)
{
    const rlt_graph_attr *a = attr(c, name);
    *n = a ? a->n_values : 0;
    return a ? a->ints : NULL;
}

/* Sets (or replaces) an attribute on the node being inferred. */
static rlt_status attr_put(const ictx *c, const rlt_graph_attr *value)
{
    rlt_graph_node *n = c->node;
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, value->name) == 0) {
            n->attrs[i] = *value;
            return RLT_STATUS_OK;
        }
    rlt_graph_attr *attrs = rlt_arena_alloc(c->g->arena, ((size_t)n->n_attrs + 1) * sizeof *attrs);
    if (!attrs) return nfail(c, RLT_STATUS_OUT_OF_MEMORY, "out of memory");
    if (n->n_attrs) memcpy(attrs, n->attrs, (size_t)n->n_attrs * sizeof *attrs);
    attrs[n->n_attrs] = *value;
    n->attrs = attrs;
    n->n_attrs++;
    return RLT_STATUS_OK;
}

static rlt_status attr_put_ints(const ictx *c, const char *name, int n, const int64_t *v)
{
    int64_t *copy = rlt_arena_alloc(c->g->arena, (size_t)n * sizeof *copy + 1);
    if (!copy) return nfail(c, RLT_STATUS_OUT_OF_MEMORY, "out of memory");
    if (n) memcpy(copy, v, (size_t)n * sizeof *copy);
    rlt_graph_attr a = {.name = name, .kind = RLT_GRAPH_ATTR_INTS, .n_values = n, .ints = copy};
    return attr_put(c, &a);
}

/* axis in [-rank, rank) (or [-rank, rank] when `inclusive`) -> [0, rank). */
static rlt_status axis_norm(const ictx *c, const char *what, int64_t axis, int rank, bool inclusive, int *out)
{
    int64_t hi = inclusive ? rank : rank - 1;
    if (axis < -(int64_t)rank || axis > hi)
        return BAD("%s %" PRId64 " is out of range for rank %d; expected %d to %" PRId64, what, axis, rank, -rank,
                   hi);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return RLT_STATUS_OK;
}

static bool is_int_dtype(rlt_dtype d) { return d == RLT_DTYPE_INT64 || d == RLT_DTYPE_INT32; }

static int64_t get_i64(const rlt_graph_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case RLT_DTYPE_INT64: return ((const int64_t *)t->data)[i];
    case RLT_DTYPE_INT32: return ((const int32_t *)t->data)[i];
    case RLT_DTYPE_BOOL: return ((const unsigned char *)t->data)[i] != 0;
    case RLT_DTYPE_FLOAT32: {
        float f = ((const float *)t->data)[i];
        return f >= -9.2e18f && f <= 9.2e18f ? (int64_t)f : 0;
    }
    default: return 0;
    }
}

static double get_f64(const rlt_graph_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case RLT_DTYPE_FLOAT32: return ((const float *)t->data)[i];
    default: return (double)get_i64(t, i);
    }
}

/* The values of constant 1-D (or scalar) integer input `i`, at most `cap`
 * of them. */
static rlt_status const_ints(const ictx *c, int i, const char *what, int cap, int *n, int64_t *vals)
{
    const rlt_graph_tensor *t = in_t(c, i);
    RLT_ASSERT(t);
    if (!t->data)
        return BAD("input %d ('%s', the %s) is not a constant: rltune needs static shapes", i, t->name, what);
    if (!is_int_dtype(t->dtype))
        return BAD("input %d ('%s', the %s) is %s; expected an int64 or int32 tensor", i, t->name, what,
                   rlt_dtype_str(t->dtype));
    if (t->rank > 1) return BAD("input %d ('%s', the %s) has rank %d; expected a 1-D tensor", i, t->name, what, t->rank);
    int64_t count = rlt_graph_tensor_n_elems(t);
    if (count > cap) return BAD("input %d ('%s', the %s) has %" PRId64 " values; at most %d", i, t->name, what, count, cap);
    *n = (int)count;
    for (int k = 0; k < *n; k++) vals[k] = get_i64(t, k);
    return RLT_STATUS_OK;
}

/* ---- folding helpers ------------------------------------------------------- */

static bool inputs_const(const ictx *c)
{
    for (int i = 0; i < c->node->n_inputs; i++) {
        const rlt_graph_tensor *t = in_t(c, i);
        if (t && !t->data) return false;
    }
    return true;
}

/* Allocates output i's data (NULL for an output left out); the caller has
 * checked fold_small. */
static rlt_status fold_alloc(const ictx *c, int i, void **out)
{
    *out = NULL;
    rlt_graph_tensor *t = out_t(c, i);
    if (!t) return RLT_STATUS_OK;
    int64_t n = rlt_graph_tensor_n_elems(t);
    void *p = rlt_arena_alloc(c->g->arena, (size_t)n * rlt_dtype_size(t->dtype) + 1);
    if (!p) return nfail(c, RLT_STATUS_OUT_OF_MEMORY, "out of memory folding a constant");
    *out = p;
    return RLT_STATUS_OK;
}

/* Marks the node folded once every present output holds data. */
static void fold_done(const ictx *c)
{
    for (int o = 0; o < c->node->n_outputs; o++) {
        rlt_graph_tensor *t = out_t(c, o);
        if (t && !t->data) return;
    }
    for (int o = 0; o < c->node->n_outputs; o++) {
        rlt_graph_tensor *t = out_t(c, o);
        if (t) t->producer = -1;
    }
    c->node->is_removed = true;
}

/* How many times the elements of its constant inputs a fold's result may
 * have and still be held to RLT_GRAPH_FOLD_WEIGHT_MAX_ELEMS only: twice
 * (Concat of two weights, the elementwise ops, the ops that move or crop
 * data); Pad makes a 3x3 kernel of a 1x1 one (9 times) when a rewrite
 * merges convolutions, up to 7x7 (49 times). */
#define FOLD_GROWTH 2
#define FOLD_GROWTH_PAD 64

/* Whether the node's result (all its outputs) is small enough to fold: at
 * most RLT_GRAPH_FOLD_MAX_ELEMS elements, or at most
 * RLT_GRAPH_FOLD_WEIGHT_MAX_ELEMS when it grows its constant inputs by at
 * most FOLD_GROWTH (FOLD_GROWTH_PAD for Pad). Expand and ConstantOfShape
 * of a small constant, or broadcasting that multiplies it, stay under the
 * first limit. */
static bool fold_small(const ictx *c)
{
    int64_t n_out = 0, n_in = 0;
    for (int o = 0; o < c->node->n_outputs; o++) {
        const rlt_graph_tensor *t = out_t(c, o);
        if (t) n_out += rlt_graph_tensor_n_elems(t);
        if (n_out > RLT_GRAPH_FOLD_WEIGHT_MAX_ELEMS) return false;
    }
    if (n_out <= RLT_GRAPH_FOLD_MAX_ELEMS) return true;
    for (int i = 0; i < c->node->n_inputs; i++) {
        const rlt_graph_tensor *t = in_t(c, i);
        if (t && t->data) n_in += rlt_graph_tensor_n_elems(t);
        if (n_in >= RLT_GRAPH_FOLD_WEIGHT_MAX_ELEMS) return true; /* and no overflow below */
    }
    int64_t growth = strcmp(c->node->op_type, "Pad") == 0 ? FOLD_GROWTH_PAD : FOLD_GROWTH;
    return n_out <= growth * n_in;
}

/* Output 0 gets input 0's bytes (the ops that only change the shape). */
static rlt_status fold_copy(const ictx *c)
{
    const rlt_graph_tensor *x = in_t(c, 0);
    if (!x->data || !fold_small(c)) return RLT_STATUS_OK;
    void *p;
    TRY(fold_alloc(c, 0, &p));
    memcpy(p, x->data, (size_t)rlt_graph_tensor_n_elems(x) * rlt_dtype_size(x->dtype));
    out_t(c, 0)->data = p;
    fold_done(c);
    return RLT_STATUS_OK;
}

static void strides_of(int rank, const int64_t *dims, int64_t *strides)
{
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= dims[i];
    }
}

static void idx_next(int rank, const int64_t *dims, int64_t *idx)
{
    for (int i = rank - 1; i >= 0; i--) {
        if (++idx[i] < dims[i]) return;
        idx[i] = 0;
    }
}

/* Flat offset in `t` of the output index `idx` (rank `out_rank`) under
 * numpy broadcasting. */
static int64_t bcast_offset(const rlt_graph_tensor *t, int out_rank, const int64_t *idx)
{
    int64_t strides[RLT_GRAPH_MAX_RANK];
    strides_of(t->rank, t->dims, strides);
    int64_t off = 0;
    for (int i = 0; i < t->rank; i++) {
        int j = out_rank - t->rank + i;
        if (t->dims[i] != 1) off += idx[j] * strides[i];
    }
    return off;
}

static void put_value(rlt_dtype dtype, void *data, int64_t i, double f, int64_t v, bool is_float)
{
    switch (dtype) {
    case RLT_DTYPE_FLOAT32: ((float *)data)[i] = is_float ? (float)f : (float)v; break;
    case RLT_DTYPE_INT64: ((int64_t *)data)[i] = v; break;
    case RLT_DTYPE_INT32: ((int32_t *)data)[i] = (int32_t)(uint32_t)(uint64_t)v; break;
    case RLT_DTYPE_BOOL: ((unsigned char *)data)[i] = is_float ? f != 0.0 : v != 0; break;
    default: break;
    }
}

/* ---- elementwise ------------------------------------------------------------ */

static rlt_status need_float(const ictx *c, int i)
{
    const rlt_graph_tensor *t = in_t(c, i);
    if (t && t->dtype != RLT_DTYPE_FLOAT32)
        return BAD("input %d ('%s') is %s; only f32 is supported", i, t->name, rlt_dtype_str(t->dtype));
    return RLT_STATUS_OK;
}

static rlt_status infer_unary_float(ictx *c)
{
    TRY(need_float(c, 0));
    return set_out_like(c, 0, in_t(c, 0));
}

static rlt_status infer_relu(ictx *c) { return set_out_like(c, 0, in_t(c, 0)); }

static rlt_status infer_gelu(ictx *c)
{
    const char *approx = attr_s(c, "approximate", "none");
    if (strcmp(approx, "none") != 0 && strcmp(approx, "tanh") != 0)
        return BAD("attribute approximate='%s' is not supported; expected 'none' or 'tanh'", approx);
    return infer_unary_float(c);
}

static rlt_status infer_identity(ictx *c)
{
    TRY(set_out_like(c, 0, in_t(c, 0)));
    return fold_copy(c);
}

static rlt_status infer_dropout(ictx *c)
{
    if (c->g->opset >= 12) {
        if (attr(c, "ratio")) return BAD("attribute 'ratio' is an input since opset 12");
        const rlt_graph_tensor *tm = in_t(c, 2);
        if (tm && (!tm->data || rlt_graph_tensor_n_elems(tm) != 1))
            return BAD("input 2 ('%s', training_mode) must be a constant scalar", tm->name);
        if (tm && get_i64(tm, 0) != 0) return BAD("training_mode=true is not supported: rltune runs inference only");
    } else if (c->node->n_inputs > 1) {
        return BAD("takes 1 input before opset 12, got %d", c->node->n_inputs);
    }
    const rlt_graph_tensor *x = in_t(c, 0);
    TRY(set_out_like(c, 0, x));
    /* The mask is bool from opset 10; before, of the input's type. */
    return set_out(c, 1, c->g->opset >= 10 ? RLT_DTYPE_BOOL : x->dtype, x->rank, x->dims);
}

static rlt_status infer_clip(ictx *c)
{
    if (c->g->opset < 11) {
        if (c->node->n_inputs > 1) return BAD("takes min and max as attributes before opset 11, got %d inputs",
                                               c->node->n_inputs);
    } else {
        if (attr(c, "min") || attr(c, "max")) return BAD("min and max are inputs since opset 11, not attributes");
        for (int i = 1; i <= 2; i++) {
            const rlt_graph_tensor *t = in_t(c, i);
            if (!t) continue;
            if (t->dtype != in_t(c, 0)->dtype || rlt_graph_tensor_n_elems(t) != 1)
                return BAD("input %d ('%s', %s) must be a scalar of the input's type", i, t->name,
                           i == 1 ? "min" : "max");
        }
    }
    return set_out_like(c, 0, in_t(c, 0));
}

/* Numpy broadcasting of the present inputs `first` .. `last`. */
static rlt_status bcast_shape(const ictx *c, int first, int last, int *rank, int64_t *dims)
{
    *rank = 0;
    for (int i = first; i <= last; i++) {
        const rlt_graph_tensor *t = in_t(c, i);
        if (t && t->rank > *rank) *rank = t->rank;
    }
    for (int d = 0; d < *rank; d++) dims[d] = 1;
    for (int i = first; i <= last; i++) {
        const rlt_graph_tensor *t = in_t(c, i);
        if (!t) continue;
        for (int k = 0; k < t->rank; k++) {
            int d = *rank - t->rank + k;
            int64_t v = t->dims[k];
            if (v == dims[d] || v == 1) continue;
            if (dims[d] == 1) {
                dims[d] = v;
                continue;
            }
            return BAD("shapes do not broadcast: input %d ('%s') has %" PRId64 " in dimension %d where %" PRId64
                       " is expected (numpy broadcasting: sizes must match or be 1)",
                       i, t->name, v, k, dims[d]);
        }
    }
    return RLT_STATUS_OK;
}

static rlt_status fold_binary(const ictx *c)
{
    const rlt_graph_tensor *a = in_t(c, 0), *b = in_t(c, 1);
    rlt_graph_tensor *y = out_t(c, 0);
    const char *op = c->node->op_type;
    if (!a->data || !b->data || !fold_small(c) || strcmp(op, "Pow") == 0) return RLT_STATUS_OK;
    void *p;
    TRY(fold_alloc(c, 0, &p));
    int64_t idx[RLT_GRAPH_MAX_RANK] = {0};
    int64_t n = rlt_graph_tensor_n_elems(y);
    for (int64_t e = 0; e < n; e++, idx_next(y->rank, y->dims, idx)) {
        int64_t ia = bcast_offset(a, y->rank, idx), ib = bcast_offset(b, y->rank, idx);
        if (y->dtype == RLT_DTYPE_FLOAT32) {
            double u = get_f64(a, ia), v = get_f64(b, ib), r;
            switch (op[0]) {
            case 'A': r = u + v; break;
            case 'S': r = u - v; break;
            case 'M': r = u * v; break;
            default: r = u / v; break;
            }
            put_value(y->dtype, p, e, r, 0, true);
        } else {
            /* Integer arithmetic wraps (two's complement), as numpy's does. */
            int64_t u = get_i64(a, ia), v = get_i64(b, ib), r;
            switch (op[0]) {
            case 'A': r = (int64_t)((uint64_t)u + (uint64_t)v); break;
            case 'S': r = (int64_t)((uint64_t)u - (uint64_t)v); break;
            case 'M': r = (int64_t)((uint64_t)u * (uint64_t)v); break;
            default:
                if (v == 0) return BAD("division by zero in a constant ('%s' / '%s')", a->name, b->name);
                r = (v == -1) ? (int64_t)(0 - (uint64_t)u) : u / v;
                break;
            }
            put_value(y->dtype, p, e, 0, r, false);
        }
    }
    y->data = p;
    fold_done(c);
    return RLT_STATUS_OK;
}

static rlt_status infer_binary(ictx *c)
{
    const rlt_graph_tensor *a = in_t(c, 0), *b = in_t(c, 1);
    if (strcmp(c->node->op_type, "Pow") != 0 && a->dtype != b->dtype)
        return BAD("inputs '%s' (%s) and '%s' (%s) have different types", a->name, rlt_dtype_str(a->dtype), b->name,
                   rlt_dtype_str(b->dtype));
    if (a->dtype == RLT_DTYPE_BOOL) return BAD("input '%s' is bool; expected a number type", a->name);
    int rank;
    int64_t dims[RLT_GRAPH_MAX_RANK];
    TRY(bcast_shape(c, 0, 1, &rank, dims));
    TRY(set_out(c, 0, a->dtype, rank, dims));
    return fold_binary(c);
}

static rlt_status infer_where(ictx *c)
{
    const rlt_graph_tensor *cond = in_t(c, 0), *x = in_t(c, 1), *y = in_t(c, 2);
    if (cond->dtype != RLT_DTYPE_BOOL) return BAD("input 0 ('%s', the condition) is %s; expected bool", cond->name,
                                                  rlt_dtype_str(cond->dtype));
    if (x->dtype != y->dtype) return BAD("inputs '%s' (%s) and '%s' (%s) have different types", x->name,
                                         rlt_dtype_str(x->dtype), y->name, rlt_dtype_str(y->dtype));
    int rank;
    int64_t dims[RLT_GRAPH_MAX_RANK];
    TRY(bcast_shape(c, 0, 2, &rank, dims));
    TRY(set_out(c, 0, x->dtype, rank, dims));
    if (!inputs_const(c) || !fold_small(c)) return RLT_STATUS_OK;
    rlt_graph_tensor *o = out_t(c, 0);
    void *p;
    TRY(fold_alloc(c, 0, &p));
    size_t es = rlt_dtype_size(o->dtype);
    int64_t idx[RLT_GRAPH_MAX_RANK] = {0};
    int64_t n = rlt_graph_tensor_n_elems(o);
    for (int64_t e = 0; e < n; e++, idx_next(o->rank, o->dims, idx)) {
        const rlt_graph_tensor *src = get_i64(cond, bcast_offset(cond, rank, idx)) ? x : y;
        memcpy((char *)p + e * (int64_t)es, (const char *)src->data + bcast_offset(src, rank, idx) * (int64_t)es, es);
    }
    o->data = p;
    fold_done(c);
    return RLT_STATUS_OK;
}

static rlt_status infer_expand(ictx *c)
{
    const rlt_graph_tensor *x = in_t(c, 0);
    int n;
    int64_t shape[RLT_GRAPH_MAX_RANK];
    TRY(const_ints(c, 1, "shape", RLT_GRAPH_MAX_RANK, &n, shape));
    int rank = RLT_MAX(n, x->rank);
    int64_t dims[RLT_GRAPH_MAX_RANK];
    for (int d = 0; d < rank; d++) dims[d] = 1;
    for (int k = 0; k < n; k++) {
        if (shape[k] < 0 || shape[k] > SMALL_MAX) return BAD("shape value %" PRId64 " is out of range", shape[k]);
        dims[rank - n + k] = shape[k];
    }
    for (int k = 0; k < x->rank; k++) {
        int d = rank - x->rank + k;
        if (x->dims[k] == dims[d] || x->dims[k] == 1) continue;
        if (dims[d] == 1) {
            dims[d] = x->dims[k];
            continue;
        }
        return BAD("input '%s' of dimension %" PRId64 " (axis %d) does not broadcast to %" PRId64, x->name,
                   x->dims[k], k, dims[d]);
    }
    TRY(set_out(c, 0, x->dtype, rank, dims));
    rlt_graph_tensor *o = out_t(c, 0);
    if (!x->data || !fold_small(c)) return RLT_STATUS_OK;
    void *p;
    TRY(fold_alloc(c, 0, &p));
    size_t es = rlt_dtype_size(o->dtype);
    int64_t idx[RLT_GRAPH_MAX_RANK] = {0};
    int64_t total = rlt_graph_tensor_n_elems(o);
    for (int64_t e = 0; e < total; e++, idx_next(o->rank, o->dims, idx))
        memcpy((char *)p + e * (int64_t)es, (const char *)x->data + bcast_offset(x, rank, idx) * (int64_t)es, es);
    o->data = p;
    fold_done(c);
    return RLT_STATUS_OK;
}

/* ---- convolution and pooling ------------------------------------------------- */

/* The spatial output sizes of Conv / MaxPool / AveragePool over input `x`
 * with kernel `kernel` (n_sp spatial dimensions); auto_pad becomes explicit
 * pads on the node. */
static rlt_status window_out(ictx *c, const rlt_graph_tensor *x, int n_sp, const int64_t *kernel, bool has_ceil,
                             int64_t *out)
{
    int n_strides, n_dil, n_pads;
    const int64_t *strides = attr_ints(c, "strides", &n_strides);
    const int64_t *dil = attr_ints(c, "dilations", &n_dil);
    const int64_t *pads_attr = attr_ints(c, "pads", &n_pads);
    if (strides && n_strides != n_sp) return BAD("strides has %d values; expected %d", n_strides, n_sp);
    if (dil && n_dil != n_sp) return BAD("dilations has %d values; expected %d", n_dil, n_sp);
    if (pads_attr && n_pads != 2 * n_sp) return BAD("pads has %d values; expected %d", n_pads, 2 * n_sp);
    const char *auto_pad = attr_s(c, "auto_pad", "NOTSET");
    bool is_same = strcmp(auto_pad, "SAME_UPPER") == 0 || strcmp(auto_pad, "SAME_LOWER") == 0;
    bool is_valid = strcmp(auto_pad, "VALID") == 0;
    if (!is_same && !is_valid && strcmp(auto_pad, "NOTSET") != 0)
        return BAD("attribute auto_pad='%s' is not supported; expected NOTSET, SAME_UPPER, SAME_LOWER or VALID",
                   auto_pad);
    bool ceil_mode = has_ceil && attr_i(c, "ceil_mode", 0) != 0;
    int64_t pads[2 * RLT_GRAPH_MAX_RANK];
    for (int i = 0; i < n_sp; i++) {
        int64_t k = kernel[i], s = strides ? strides[i] : 1, d = dil ? dil[i] : 1;
        if (k < 1 || k > SMALL_MAX) return BAD("kernel size %" PRId64 " (dimension %d) is out of range", k, i);
        if (s < 1 || s > SMALL_MAX) return BAD("stride %" PRId64 " (dimension %d) must be >= 1", s, i);
        if (d < 1 || d > SMALL_MAX / k) return BAD("dilation %" PRId64 " (dimension %d) must be >= 1", d, i);
        int64_t in = x->dims[2 + i], ek = (k - 1) * d + 1;
        int64_t pb = pads_attr ? pads_attr[i] : 0, pe = pads_attr ? pads_attr[n_sp + i] : 0;
        if (pb < 0 || pe < 0 || pb > SMALL_MAX || pe > SMALL_MAX)
            return BAD("pads (dimension %d) must be >= 0, got %" PRId64 " and %" PRId64, i, pb, pe);
        if (is_same) {
            if (pads_attr && (pb || pe)) return BAD("both pads and auto_pad='%s' given; give one", auto_pad);
            int64_t o = (in + s - 1) / s;
            int64_t total = (o - 1) * s + ek - in;
            if (total < 0) total = 0;
            if (strcmp(auto_pad, "SAME_UPPER") == 0) {
                pb = total / 2;
                pe = total - pb;
            } else {
                pe = total / 2;
                pb = total - pe;
            }
            out[i] = o;
        } else {
            if (is_valid) pb = pe = 0;
            int64_t span = in + pb + pe - ek;
            if (span < 0)
                return BAD("the window (%" PRId64 " with dilation %" PRId64 ") is larger than the padded input (%" PRId64
                           ") in dimension %d", k, d, in + pb + pe, i);
            int64_t o = ceil_mode ? (span + s - 1) / s + 1 : span / s + 1;
            /* A window that would start in the end padding is dropped
             * (ONNX, PyTorch). */
            if (ceil_mode && (o - 1) * s >= in + pb) o--;
            out[i] = o;
        }
        pads[i] = pb;
        pads[n_sp + i] = pe;
    }
    if (!strcmp(auto_pad, "NOTSET") && pads_attr) return RLT_STATUS_OK;
    TRY(attr_put_ints(c, "pads", 2 * n_sp, pads));
    if (attr(c, "auto_pad")) {
        rlt_graph_attr a = {.name = "auto_pad", .kind = RLT_GRAPH_ATTR_STRING, .s = "NOTSET"};
        TRY(attr_put(c, &a));
    }
    return RLT_STATUS_OK;
}

static rlt_status infer_conv(ictx *c)
{
    const rlt_graph_tensor *x = in_t(c, 0), *w = in_t(c, 1), *b = in_t(c, 2);
    TRY(need_float(c, 0));
    TRY(need_float(c, 1));
    TRY(need_float(c, 2));
    if (x->rank < 3 || x->rank > 5) return BAD("input '%s' has rank %d; expected 3 to 5 (N, C, 1 to 3 spatial dims)",
                                               x->name, x->rank);
    if (w->rank != x->rank) return BAD("weight '%s' has rank %d; expected %d like the input", w->name, w->rank, x->rank);
    int n_sp = x->rank - 2;
    int64_t group = attr_i(c, "group", 1);
    if (group < 1 || group > x->dims[1]) return BAD("group=%" PRId64 " is out of range: 1 to the channels (%" PRId64 ")",
                                                    group, x->dims[1]);
    if (w->dims[1] * group != x->dims[1])
        return BAD("weight '%s' has %" PRId64 " input channels per group; the input has %" PRId64
                   " channels in %" PRId64 " groups", w->name, w->dims[1], x->dims[1], group);
    if (w->dims[0] % group != 0 || w->dims[0] == 0)
        return BAD("weight '%s' has %" PRId64 " output channels, not a positive multiple of group=%" PRId64, w->name,
                   w->dims[0], group);
    int n_ks;
    const int64_t *ks = attr_ints(c, "kernel_shape", &n_ks);
    if (ks) {
        if (n_ks != n_sp) return BAD("kernel_shape has %d values; expected %d", n_ks, n_sp);
        for (int i = 0; i < n_sp; i++)
            if (ks[i] != w->dims[2 + i])
                return BAD("kernel_shape[%d]=%" PRId64 " differs from the weight's %" PRId64, i, ks[i], w->dims[2 + i]);
    }
    if (b && (b->rank != 1 || b->dims[0] != w->dims[0]))
        return BAD("bias '%s' must have shape [%" PRId64 "]", b->name, w->dims[0]);
    int64_t dims[RLT_GRAPH_MAX_RANK] = {x->dims[0], w->dims[0]};
    TRY(window_out(c, x, n_sp, w->dims + 2, false, dims + 2));
    return set_out(c, 0, RLT_DTYPE_FLOAT32, x->rank, dims);
}

static rlt_status infer_pool(ictx *c)
{
    const rlt_graph_tensor *x = in_t(c, 0);
    TRY(need_float(c, 0));
    if (x->rank < 3 || x->rank > 5) return BAD("input '%s' has rank %d; expected 3 to 5", x->name, x->rank);
    int n_sp = x->rank - 2, n_ks;
    const int64_t *ks = attr_ints(c, "kernel_shape", &n_ks);
    if (!ks) return BAD("attribute kernel_shape is required");
    if (n_ks != n_sp) return BAD("kernel_shape has %d values; expected %d", n_ks, n_sp);
    bool is_max = strcmp(c->node->op_type, "MaxPool") == 0;
    if (is_max && attr_i(c, "storage_order", 0) != 0) return BAD("storage_order=1 is not supported");
    if (!is_max && attr(c, "dilations")) {
        int n;
        const int64_t *d = attr_ints(c, "dilations", &n);
        for (int i = 0; i < n; i++)
            if (d[i] != 1) return BAD("dilations other than 1 are not supported for AveragePool");
    }
    int64_t dims[RLT_GRAPH_MAX_RANK] = {x->dims[0], x->dims[1]};
    TRY(window_out(c, x, n_sp, ks, c->g->opset >= 10, dims + 2));
    TRY(set_out(c, 0, RLT_DTYPE_FLOAT32, x->rank, dims));
    return set_out(c, 1, RLT_DTYPE_INT64, x->rank, dims);
}

static rlt_status infer_global_pool(ictx *c)
{
    const rlt_graph_tensor *x = in_t(c, 0);
    TRY(need_float(c, 0));
    if (x->rank < 3) return BAD("input '%s' has rank %d; expected at least 3", x->name, x->rank);
    int64_t dims[RLT_GRAPH_MAX_RANK];
    for (int i = 0; i < x->rank; i++) dims[i] = i < 2 ? x->dims[i] : 1;
    return set_out(c, 0, x->dtype, x->rank, dims);
}

static rlt_status infer_batchnorm(ictx *c)
{
    const rlt_graph_tensor *x = in_t(c, 0);
    for (int i = 0; i < 5; i++) TRY(need_float(c, i));
    if (x->rank < 2) return BAD("input '%s' has rank %d; expected at least 2", x->name, x->rank);
    if (attr_i(c, "training_mode", 0) != 0) return BAD("training_mode=1 is not supported: rltune runs inference only");
    if (attr_i(c, "spatial", 1) != 1) return BAD("spatial=0 is not supported");
    static const char *const roles[] = {"", "scale", "B", "mean", "var"};
    for (int i = 1; i < 5; i++) {
        const rlt_graph_tensor *p = in_t(c, i);
        if (p->rank != 1 || p->dims[0] != x->dims[1])
            return BAD("input %d ('%s', %s) must have shape [%" PRId64 "]", i, p->name, roles[i], x->dims[1]);
    }
    TRY(set_out_like(c, 0, x));
    for (int o = 1; o < c->node->n_outputs; o++) TRY(set_out(c, o, RLT_DTYPE_FLOAT32, 1, x->dims + 1));
    return RLT_STATUS_OK;
}

/* ---- shape ops ------------------------------------------------------------- */

static rlt_status infer_flatten(ictx *c)
{
    const rlt_graph_tensor *x = in_t(c, 0);
    int axis = 0;
    TRY(axis_norm(c, "axis", attr_i(c, "axis", 1), x->rank, true, &axis));
    int64_t dims[2] = {1, 1};
    for (int i = 0; i < x->rank; i++) dims[i >= axis] *= x->dims[i];
    TRY(set_out(c, 0, x->dtype, 2, dims));
    return fold_copy(c);
}

static rlt_status infer_reshape(ictx *c)
{
    const rlt_graph_tensor *x = in_t(c, 0);
    int n;
    int64_t shape[RLT_GRAPH_MAX_RANK];
    TRY(const_ints(c, 1, "shape", RLT_GRAPH_MAX_RANK, &n, shape));
    bool allow_zero = attr_i(c, "allowzero", 0) != 0;
    int infer_at = -1;
    int64_t known = 1;
    for (int i = 0; i < n; i++) {
        if (shape[i] == 0 && !allow_zero) {
            if (i >= x->rank) return BAD("shape[%d]=0 copies a dimension the input ('%s', rank %d) lacks", i, x->name,
                                         x->rank);
            shape[i] = x->dims[i];
        }
        if (shape[i] == -1) {
            if (infer_at >= 0) return BAD("shape has more than one -1");
            infer_at = i;
            continue;
        }
        if (shape[i] < 0 || shape[i] > SMALL_MAX) return BAD("shape[%d]=%" PRId64 " is out of range", i, shape[i]);
        if (shape[i] > 0 && known > RLT_GRAPH_MAX_ELEMS / shape[i]) return BAD("shape has too many elements");
        known *= shape[i];
    }
    int64_t total = rlt_graph_tensor_n_elems(x);
    if (infer_at >= 0) {
        if (known == 0 || total % known != 0)
            return BAD("cannot infer the -1 in the shape: %" PRId64 " elements do not divide into %" PRId64, total,
                       known);
        shape[infer_at] = total / known;
    } else if (known != total) {
        return BAD("the shape holds %" PRId64 " elements; the input '%s' has %" PRId64, known, x->name, total);
    }
    TRY(set_out(c, 0, x->dtype, n, shape));
    return fold_copy(c);
}

static rlt_status infer_transpose(ictx *c)
{
    const rlt_graph_tensor *x = in_t(c, 0);
    int n;
    const int64_t *perm_attr = attr_ints(c, "perm", &n);
    int perm[RLT_GRAPH_MAX_RANK];
    if (perm_attr) {
        if (n != x->rank) return BAD("perm has %d values; the input has rank %d", n, x->rank);
        bool seen[RLT_GRAPH_MAX_RANK] = {false};
        for (int i = 0; i < n; i++) {
            if (perm_attr[i] < 0 || perm_attr[i] >= n || seen[perm_attr[i]])
                return BAD("perm is not a permutation of 0..%d", n - 1);
            seen[perm_attr[i]] = true;
            perm[i] = (int)perm_attr[i];
        }
    } else {
        for (int i = 0; i < x->rank; i++) perm[i] = x->rank - 1 - i;
    }
    int64_t dims[RLT_GRAPH_MAX_RANK];
    for (int i = 0; i < x->rank; i++) dims[i] = x->dims[perm[i]];
    TRY(set_out(c, 0, x->dtype, x->rank, dims));
    rlt_graph_tensor *o = out_t(c, 0);
    if (!x->data || !fold_small(c)) return RLT_STATUS_OK;
    void *p;
    TRY(fold_alloc(c, 0, &p));
    int64_t xs[RLT_GRAPH_MAX_RANK], idx[RLT_GRAPH_MAX_RANK] = {0};
    strides_of(x->rank, x->dims, xs);
    size_t es = rlt_dtype_size(x->dtype);
    int64_t total = rlt_graph_tensor_n_elems(o);
    for (int64_t e = 0; e < total; e++, idx_next(o->rank, o->dims, idx)) {
        int64_t off = 0;
        for (int i = 0; i < x->rank; i++) off += idx[i] * xs[perm[i]];
        memcpy((char *)p + e * (int64_t)es, (const char *)x->data + off * (int64_t)es, es);
    }
    o->data = p;
    fold_done(c);
    return RLT_STATUS_OK;
}

static rlt_status infer_concat(ictx *c)
{
    const rlt_graph_tensor *x = in_t(c, 0);
    if (!attr(c, "axis")) return BAD("attribute axis is required");
    if (x->rank == 0) return BAD("input 0 ('%s') is a scalar; Concat needs rank >= 1", x->name);
    int axis = 0;
    TRY(axis_norm(c, "axis", attr_i(c, "axis", 0), x->rank, false, &axis));
    int64_t dims[RLT_GRAPH_MAX_RANK];
    memcpy(dims, x->dims, sizeof dims);
    dims[axis] = 0;
    for (int i = 0; i < c->node->n_inputs; i++) {
        const rlt_graph_tensor *t = in_t(c, i);
        if (!t) return BAD("input %d is left out; Concat needs all of them", i);
        if (t->dtype != x->dtype || t->rank != x->rank)
            return BAD("input %d ('%s', %s rank %d) differs in type or rank from input 0 (%s rank %d)", i, t->name,
                       rlt_dtype_str(t->dtype), t->rank, rlt_dtype_str(x->dtype), x->rank);
        for (int d = 0; d < x->rank; d++)
            if (d != axis && t->dims[d] != x->dims[d])
                return BAD("input %d ('%s') has %" PRId64 " in dimension %d; input 0 has %" PRId64, i, t->name,
                           t->dims[d], d, x->dims[d]);
        dims[axis] += t->dims[axis];
    }
    TRY(set_out(c, 0, x->dtype, x->rank, dims));
    if (!inputs_const(c) || !fold_small(c)) return RLT_STATUS_OK;
    rlt_graph_tensor *o = out_t(c, 0);
    void *p;
    TRY(fold_alloc(c, 0, &p));
    size_t es = rlt_dtype_size(x->dtype);
    int64_t outer = 1, inner = (int64_t)es;
    for (int d = 0; d < axis; d++) outer *= x->dims[d];
    for (int d = axis + 1; d < x->rank; d++) inner *= x->dims[d];
    char *dst = p;
    for (int64_t b = 0; b < outer; b++)
        for (int i = 0; i < c->node->n_inputs; i++) {
            const rlt_graph_tensor *t = in_t(c, i);
            int64_t chunk = t->dims[axis] * inner;
            memcpy(dst, (const char *)t->data + b * chunk, (size_t)chunk);
            dst += chunk;
        }
    o->data = p;
    fold_done(c);
    return RLT_STATUS_OK;
}

static rlt_status infer_split(ictx *c)
{
    const rlt_graph_tensor *x = in_t(c, 0);
    if (x->rank == 0) return BAD("input '%s' is a scalar; Split needs rank >= 1", x->name);
    int axis = 0;
    TRY(axis_norm(c, "axis", attr_i(c, "axis", 0), x->rank, false, &axis));
    int n_out = c->node->n_outputs, n = 0;
    int64_t sizes[64];
    if (n_out > 64) return BAD("%d outputs; at most 64 are supported", n_out);
    if (c->g->opset >= 13) {
        if (attr(c, "split")) return BAD("split is an input since opset 13, not an attribute");
        if (in_t(c, 1)) TRY(const_ints(c, 1, "split", 64, &n, sizes));
    } else {
        if (c->node->n_inputs > 1) return BAD("takes split as an attribute before opset 13, got %d inputs",
                                               c->node->n_inputs);
        const int64_t *s = attr_ints(c, "split", &n);
        if (n > 64) return BAD("split has %d values; at most 64", n);
        for (int i = 0; i < n; i++) sizes[i] = s[i];
    }
    if (n == 0) {
        if (x->dims[axis] % n_out != 0)
            return BAD("dimension %d of '%s' (%" PRId64 ") does not split evenly into %d outputs", axis, x->name,
                       x->dims[axis], n_out);
        n = n_out;
        for (int i = 0; i < n; i++) sizes[i] = x->dims[axis] / n_out;
    }
    if (n != n_out) return BAD("split has %d sizes for %d outputs", n, n_out);
    int64_t sum = 0;
    for (int i = 0; i < n; i++) {
        if (sizes[i] < 0 || sizes[i] > SMALL_MAX) return BAD("split size %" PRId64 " is out of range", sizes[i]);
        sum += sizes[i];
    }
    if (sum != x->dims[axis])
        return BAD("split sizes add up to %" PRId64 "; dimension %d of '%s' is %" PRId64, sum, axis, x->name,
                   x->dims[axis]);
    for (int o = 0; o < n_out; o++) {
        int64_t dims[RLT_GRAPH_MAX_RANK];
        memcpy(dims, x->dims, sizeof dims);
        dims[axis] = sizes[o];
        TRY(set_out(c, o, x->dtype, x->rank, dims));
    }
    return RLT_STATUS_OK;
}

static rlt_status infer_slice(ictx *c)
{
    const rlt_graph_tensor *x = in_t(c, 0);
    int r = x->rank;
    int64_t starts[RLT_GRAPH_MAX_RANK], ends[RLT_GRAPH_MAX_RANK], axes[RLT_GRAPH_MAX_RANK], steps[RLT_GRAPH_MAX_RANK];
    int n_starts, n_ends, n_axes = -1, n_steps = -1;
    if (c->g->opset < 10) {
        if (c->node->n_inputs > 1) return BAD("takes starts and ends as attributes before opset 10");
        const int64_t *s = attr_ints(c, "starts", &n_starts), *e = attr_ints(c, "ends", &n_ends), *a;
        if (!s || !e) return BAD("attributes starts and ends are required");
        if (n_starts > r || n_ends > r) return BAD("starts / ends have more values than the input's rank %d", r);
        memcpy(starts, s, (size_t)n_starts * sizeof *s);
        memcpy(ends, e, (size_t)n_ends * sizeof *e);
        if ((a = attr_ints(c, "axes", &n_axes)) != NULL) {
            if (n_axes > r) return BAD("axes has more values than the input's rank %d", r);
            memcpy(axes, a, (size_t)n_axes * sizeof *a);
        } else {
            n_axes = -1;
        }
    } else {
        if (attr(c, "starts") || attr(c, "ends") || attr(c, "axes"))
            return BAD("starts, ends and axes are inputs since opset 10, not attributes");
        if (!in_t(c, 1) || !in_t(c, 2)) return BAD("inputs 1 (starts) and 2 (ends) are required since opset 10");
        TRY(const_ints(c, 1, "starts", r, &n_starts, starts));
        TRY(const_ints(c, 2, "ends", r, &n_ends, ends));
        if (in_t(c, 3)) TRY(const_ints(c, 3, "axes", r, &n_axes, axes));
        if (in_t(c, 4)) TRY(const_ints(c, 4, "steps", r, &n_steps, steps));
    }
    if (n_ends != n_starts) return BAD("starts has %d values and ends %d", n_starts, n_ends);
    if (n_axes >= 0 && n_axes != n_starts) return BAD("axes has %d values; starts has %d", n_axes, n_starts);
    if (n_steps >= 0 && n_steps != n_starts) return BAD("steps has %d values; starts has %d", n_steps, n_starts);
    int64_t o_start[RLT_GRAPH_MAX_RANK], o_step[RLT_GRAPH_MAX_RANK], dims[RLT_GRAPH_MAX_RANK];
    bool seen[RLT_GRAPH_MAX_RANK] = {false};
    for (int d = 0; d < r; d++) {
        o_start[d] = 0;
        o_step[d] = 1;
        dims[d] = x->dims[d];
    }
    for (int i = 0; i < n_starts; i++) {
        int axis = 0;
        TRY(axis_norm(c, "axes value", n_axes >= 0 ? axes[i] : i, r, false, &axis));
        if (seen[axis]) return BAD("axis %d is sliced twice", axis);
        seen[axis] = true;
        int64_t dim = x->dims[axis], step = n_steps >= 0 ? steps[i] : 1, s = starts[i], e = ends[i];
        if (step == 0) return BAD("steps[%d] is 0", i);
        if (step < -SMALL_MAX || step > SMALL_MAX) return BAD("steps[%d]=%" PRId64 " is out of range", i, step);
        if (s < 0) s += dim;
        if (e < 0) e += dim;
        int64_t len;
        if (step > 0) {
            s = s < 0 ? 0 : (s > dim ? dim : s);
            e = e < 0 ? 0 : (e > dim ? dim : e);
            len = e > s ? (e - s + step - 1) / step : 0;
        } else {
            s = s < 0 ? -1 : (s > dim - 1 ? dim - 1 : s);
            e = e < -1 ? -1 : (e > dim - 1 ? dim - 1 : e);
            len = s > e ? (s - e + (-step) - 1) / (-step) : 0;
        }
        o_start[axis] = s;
        o_step[axis] = step;
        dims[axis] = len;
    }
    TRY(set_out(c, 0, x->dtype, r, dims));
    rlt_graph_tensor *o = out_t(c, 0);
    if (!x->data || !fold_small(c)) return RLT_STATUS_OK;
    void *p;
    TRY(fold_alloc(c, 0, &p));
    int64_t xs[RLT_GRAPH_MAX_RANK], idx[RLT_GRAPH_MAX_RANK] = {0};
    strides_of(r, x->dims, xs);
    size_t es = rlt_dtype_size(x->dtype);
    int64_t total = rlt_graph_tensor_n_elems(o);
    for (int64_t e = 0; e < total; e++, idx_next(r, o->dims, idx)) {
        int64_t off = 0;
        for (int d = 0; d < r; d++) off += (o_start[d] + idx[d] * o_step[d]) * xs[d];
        memcpy((char *)p + e * (int64_t)es, (const char *)x->data + off * (int64_t)es, es);
    }
    o->data = p;
    fold_done(c);
    return RLT_STATUS_OK;
}

/* Pad: pads (and the constant value) as attributes before opset 11, as
 * inputs from 11 (pads constant, constant_value any scalar of the input's
 * type). A negative pad crops: the crop comes first, and reflect / edge
 * pad what is left, as onnxruntime reads it. */
static rlt_status infer_pad(ictx *c)
{
    const rlt_graph_tensor *x = in_t(c, 0);
    int r = x->rank, n = 0;
    const char *mode = attr_s(c, "mode", "constant");
    bool is_constant = strcmp(mode, "constant") == 0;
    if (!is_constant && strcmp(mode, "reflect") != 0 && strcmp(mode, "edge") != 0)
        return BAD("attribute mode='%s' is not supported; expected 'constant', 'reflect' or 'edge'%s", mode,
                   strcmp(mode, "wrap") == 0 ? " ('wrap' needs opset 19; rltune reads opsets 9 to 17)" : "");
    int64_t pads[2 * RLT_GRAPH_MAX_RANK];
    if (c->g->opset < 11) {
        if (c->node->n_inputs > 1)
            return BAD("takes pads and value as attributes before opset 11, got %d inputs", c->node->n_inputs);
        const int64_t *p = attr_ints(c, "pads", &n);
        if (!p) return BAD("attribute pads is required");
        if (n != 2 * r)
            return BAD("attribute pads has %d values; expected %d (2 * the rank of input '%s')", n, 2 * r, x->name);
        memcpy(pads, p, (size_t)n * sizeof *p);
    } else {
        if (attr(c, "pads") || attr(c, "value"))
            return BAD("pads and value are inputs since opset 11 (pads, constant_value), not attributes");
        const rlt_graph_tensor *pt = in_t(c, 1), *vt = in_t(c, 2);
        if (!pt) return BAD("input 1 (pads) is required since opset 11");
        int64_t count = rlt_graph_tensor_n_elems(pt);
        if (pt->data && is_int_dtype(pt->dtype) && pt->rank <= 1 && count != 2 * r)
            return BAD("input 1 ('%s', the pads) has %" PRId64 " values; expected %d (2 * the rank of input '%s')",
                       pt->name, count, 2 * r, x->name);
        TRY(const_ints(c, 1, "pads", 2 * RLT_GRAPH_MAX_RANK, &n, pads));
        if (vt && (vt->dtype != x->dtype || vt->rank > 1 || rlt_graph_tensor_n_elems(vt) != 1))
            return BAD("input 2 ('%s', the constant_value) must be one value of the input's type (%s); it holds %" PRId64
                       " of type %s", vt->name, rlt_dtype_str(x->dtype), rlt_graph_tensor_n_elems(vt),
                       rlt_dtype_str(vt->dtype));
    }
    int64_t dims[RLT_GRAPH_MAX_RANK];
    for (int d = 0; d < r; d++) {
        int64_t pb = pads[d], pe = pads[r + d], in = x->dims[d];
        if (pb < -SMALL_MAX || pb > SMALL_MAX || pe < -SMALL_MAX || pe > SMALL_MAX)
            return BAD("the pads of dimension %d (%" PRId64 " and %" PRId64 ") are out of range", d, pb, pe);
        int64_t crop = -(RLT_MIN(pb, 0) + RLT_MIN(pe, 0)), kept = in - crop;
        if (kept < 0)
            return BAD("the pads of dimension %d (%" PRId64 " and %" PRId64 ") crop %" PRId64
                       " elements; input '%s' has %" PRId64 " there", d, pb, pe, crop, x->name, in);
        if (!is_constant && kept == 0 && (pb > 0 || pe > 0))
            return BAD("mode '%s' cannot pad dimension %d of input '%s': it is empty%s; only mode 'constant' can",
                       mode, d, x->name, in ? " after the crop" : "");
        dims[d] = kept + RLT_MAX(pb, 0) + RLT_MAX(pe, 0);
    }
    return set_out(c, 0, x->dtype, r, dims);
}

static rlt_status infer_gather(ictx *c)
{
    const rlt_graph_tensor *x = in_t(c, 0), *ind = in_t(c, 1);
    if (x->rank == 0) return BAD("input '%s' is a scalar; Gather needs rank >= 1", x->name);
    if (!is_int_dtype(ind->dtype)) return BAD("indices '%s' are %s; expected int64 or int32", ind->name,
                                              rlt_dtype_str(ind->dtype));
    int axis = 0;
    TRY(axis_norm(c, "axis", attr_i(c, "axis", 0), x->rank, false, &axis));
    int rank = x->rank - 1 + ind->rank;
    if (rank > RLT_GRAPH_MAX_RANK) return BAD("the output would have rank %d; at most %d", rank, RLT_GRAPH_MAX_RANK);
    int64_t dims[RLT_GRAPH_MAX_RANK];
    int k = 0;
    for (int d = 0; d < axis; d++) dims[k++] = x->dims[d];
    for (int d = 0; d < ind->rank; d++) dims[k++] = ind->dims[d];
    for (int d = axis + 1; d < x->rank; d++) dims[k++] = x->dims[d];
    if (ind->data) {
        int64_t n = rlt_graph_tensor_n_elems(ind);
        for (int64_t i = 0; i < n; i++) {
            int64_t v = get_i64(ind, i);
            if (v < -x->dims[axis] || v >= x->dims[axis])
                return BAD("index %" PRId64 " is out of range for dimension %d of '%s' (size %" PRId64 ")", v, axis,
                           x->name, x->dims[axis]);
        }
    }
    TRY(set_out(c, 0, x->dtype, rank, dims));
    rlt_graph_tensor *o = out_t(c, 0);
    if (!inputs_const(c) || !fold_small(c)) return RLT_STATUS_OK;
    void *p;
    TRY(fold_alloc(c, 0, &p));
    size_t es = rlt_dtype_size(x->dtype);
    int64_t outer = 1, inner = (int64_t)es, n_ind = rlt_graph_tensor_n_elems(ind);
    for (int d = 0; d < axis; d++) outer *= x->dims[d];
    for (int d = axis + 1; d < x->rank; d++) inner *= x->dims[d];
    char *dst = p;
    for (int64_t b = 0; b < outer; b++)
        for (int64_t i = 0; i < n_ind; i++) {
            int64_t v = get_i64(ind, i);
            if (v < 0) v += x->dims[axis];
            memcpy(dst, (const char *)x->data + (b * x->dims[axis] + v) * inner, (size_t)inner);
            dst += inner;
        }
    o->data = p;
    fold_done(c);
    return RLT_STATUS_OK;
}

/* The axes of Squeeze / Unsqueeze: an attribute before opset 13, input 1
 * from then on. */
static rlt_status squeeze_axes(const ictx *c, int *n, int64_t *axes)
{
    *n = -1;
    if (c->g->opset >= 13) {
        if (attr(c, "axes")) return BAD("axes is an input since opset 13, not an attribute");
        if (in_t(c, 1)) TRY(const_ints(c, 1, "axes", RLT_GRAPH_MAX_RANK, n, axes));
        return RLT_STATUS_OK;
    }
    if (c->node->n_inputs > 1) return BAD("takes axes as an attribute before opset 13, got %d inputs",
                                           c->node->n_inputs);
    const int64_t *a = attr_ints(c, "axes", n);
    if (!a) {
        *n = -1;
        return RLT_STATUS_OK;
    }
    if (*n > RLT_GRAPH_MAX_RANK) return BAD("axes has %d values; at most %d", *n, RLT_GRAPH_MAX_RANK);
    memcpy(axes, a, (size_t)*n * sizeof *a);
    return RLT_STATUS_OK;
}

static rlt_status infer_squeeze(ictx *c)
{
    const rlt_graph_tensor *x = in_t(c, 0);
    int n;
    int64_t axes[RLT_GRAPH_MAX_RANK];
    TRY(squeeze_axes(c, &n, axes));
    bool drop[RLT_GRAPH_MAX_RANK] = {false};
    if (n < 0) {
        for (int d = 0; d < x->rank; d++) drop[d] = x->dims[d] == 1;
    } else {
        for (int i = 0; i < n; i++) {
            int a = 0;
            TRY(axis_norm(c, "axes value", axes[i], x->rank, false, &a));
            if (x->dims[a] != 1) return BAD("cannot squeeze dimension %d of '%s': its size is %" PRId64 ", not 1", a,
                                            x->name, x->dims[a]);
            drop[a] = true;
        }
    }
    int64_t dims[RLT_GRAPH_MAX_RANK];
    int k = 0;
    for (int d = 0; d < x->rank; d++)
        if (!drop[d]) dims[k++] = x->dims[d];
    TRY(set_out(c, 0, x->dtype, k, dims));
    return fold_copy(c);
}

static rlt_status infer_unsqueeze(ictx *c)
{
    const rlt_graph_tensor *x = in_t(c, 0);
    int n;
    int64_t axes[RLT_GRAPH_MAX_RANK];
    TRY(squeeze_axes(c, &n, axes));
    if (n < 0) return BAD("axes are required");
    int rank = x->rank + n;
    if (rank > RLT_GRAPH_MAX_RANK) return BAD("the output would have rank %d; at most %d", rank, RLT_GRAPH_MAX_RANK);
    bool is_new[RLT_GRAPH_MAX_RANK] = {false};
    for (int i = 0; i < n; i++) {
        int a = 0;
        TRY(axis_norm(c, "axes value", axes[i], rank, false, &a));
        if (is_new[a]) return BAD("axis %d is given twice", a);
        is_new[a] = true;
    }
    int64_t dims[RLT_GRAPH_MAX_RANK];
    for (int d = 0, k = 0; d < rank; d++) dims[d] = is_new[d] ? 1 : x->dims[k++];
    TRY(set_out(c, 0, x->dtype, rank, dims));
    return fold_copy(c);
}

static rlt_status infer_shape(ictx *c)
{
    const rlt_graph_tensor *x = in_t(c, 0);
    int64_t start = attr_i(c, "start", 0), end = attr_i(c, "end", x->rank), r = x->rank;
    if ((attr(c, "start") || attr(c, "end")) && c->g->opset < 15)
        return BAD("attributes start and end need opset 15 or later");
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = start < 0 ? 0 : (start > r ? r : start);
    end = end < 0 ? 0 : (end > r ? r : end);
    int64_t n = end > start ? end - start : 0;
    TRY(set_out(c, 0, RLT_DTYPE_INT64, 1, &n));
    void *p;
    TRY(fold_alloc(c, 0, &p));
    for (int64_t i = 0; i < n; i++) ((int64_t *)p)[i] = x->dims[start + i];
    out_t(c, 0)->data = p;
    fold_done(c);
    return RLT_STATUS_OK;
}

static rlt_status infer_cast(ictx *c)
{
    const rlt_graph_tensor *x = in_t(c, 0);
    if (!attr(c, "to")) return BAD("attribute 'to' is required");
    rlt_dtype to;
    if (!rlt_dtype_from_onnx(attr_i(c, "to", 0), &to))
        return BAD("cast to ONNX data type %" PRId64 " (%s) is not supported; supported: 1 (FLOAT), 6 (INT32), "
                   "7 (INT64), 9 (BOOL)", attr_i(c, "to", 0), rlt_dtype_onnx_name(attr_i(c, "to", 0)));
    TRY(set_out(c, 0, to, x->rank, x->dims));
    if (!x->data || !fold_small(c)) return RLT_STATUS_OK;
    void *p;
    TRY(fold_alloc(c, 0, &p));
    int64_t n = rlt_graph_tensor_n_elems(x);
    for (int64_t i = 0; i < n; i++) {
        if (x->dtype == RLT_DTYPE_FLOAT32) {
            double v = get_f64(x, i);
            if (to == RLT_DTYPE_FLOAT32 || to == RLT_DTYPE_BOOL) {
                put_value(to, p, i, v, 0, true);
                continue;
            }
            double lim = to == RLT_DTYPE_INT32 ? 2147483648.0 : 9223372036854775808.0;
            if (!(v > -lim - 1.0 && v < lim))
                return BAD("a constant value (%g) of '%s' is out of the range of %s", v, x->name, rlt_dtype_str(to));
            put_value(to, p, i, 0, (int64_t)v, false);
        } else {
            put_value(to, p, i, 0, get_i64(x, i), false);
        }
    }
    out_t(c, 0)->data = p;
    fold_done(c);
    return RLT_STATUS_OK;
}

static rlt_status infer_constant(ictx *c)
{
    if (c->node->n_attrs != 1) return BAD("needs exactly one of value, value_float, value_floats, value_int, value_ints");
    const rlt_graph_attr *a = &c->node->attrs[0];
    rlt_graph_tensor *o = out_t(c, 0);
    void *p;
    if (a->kind == RLT_GRAPH_ATTR_TENSOR) {
        const rlt_graph_tensor *t = a->tensor;
        TRY(set_out(c, 0, t->dtype, t->rank, t->dims));
        o->data = t->data;
    } else {
        bool is_list = a->kind == RLT_GRAPH_ATTR_INTS || a->kind == RLT_GRAPH_ATTR_FLOATS;
        bool is_float = a->kind == RLT_GRAPH_ATTR_FLOAT || a->kind == RLT_GRAPH_ATTR_FLOATS;
        if (is_list && c->g->opset < 12) return BAD("attribute '%s' needs opset 12 or later", a->name);
        int64_t n = is_list ? a->n_values : 1;
        TRY(set_out(c, 0, is_float ? RLT_DTYPE_FLOAT32 : RLT_DTYPE_INT64, is_list ? 1 : 0, &n));
        p = rlt_arena_alloc(c->g->arena, (size_t)n * 8 + 1);
        if (!p) return nfail(c, RLT_STATUS_OUT_OF_MEMORY, "out of memory");
        for (int64_t i = 0; i < n; i++) {
            if (a->kind == RLT_GRAPH_ATTR_FLOAT) ((float *)p)[i] = a->f;
            else if (a->kind == RLT_GRAPH_ATTR_FLOATS) ((float *)p)[i] = a->floats[i];
            else if (a->kind == RLT_GRAPH_ATTR_INT) ((int64_t *)p)[i] = a->i;
            else ((int64_t *)p)[i] = a->ints[i];
        }
        o->data = p;
    }
    fold_done(c);
    return RLT_STATUS_OK;
}

static rlt_status infer_constant_of_shape(ictx *c)
{
    int n = 0; /* gcc -O3 (Release) cannot see that const_ints sets it */
    int64_t shape[RLT_GRAPH_MAX_RANK];
    TRY(const_ints(c, 0, "shape", RLT_GRAPH_MAX_RANK, &n, shape));
    const rlt_graph_attr *a = attr(c, "value");
    if (a && rlt_graph_tensor_n_elems(a->tensor) != 1) return BAD("attribute value must hold one element");
    rlt_dtype dtype = a ? a->tensor->dtype : RLT_DTYPE_FLOAT32;
    TRY(set_out(c, 0, dtype, n, shape));
    if (!fold_small(c)) return RLT_STATUS_OK;
    void *p;
    TRY(fold_alloc(c, 0, &p));
    rlt_graph_tensor *o = out_t(c, 0);
    int64_t total = rlt_graph_tensor_n_elems(o);
    size_t es = rlt_dtype_size(dtype);
    if (a)
        for (int64_t i = 0; i < total; i++) memcpy((char *)p + i * (int64_t)es, a->tensor->data, es);
    o->data = p;
    fold_done(c);
    return RLT_STATUS_OK;
}

/* ---- dense and normalisation ---------------------------------------------- */

static rlt_status infer_gemm(ictx *c)
{
    const rlt_graph_tensor *a = in_t(c, 0), *b = in_t(c, 1), *cc = in_t(c, 2);
    for (int i = 0; i < 3; i++) TRY(need_float(c, i));
    if (a->rank != 2 || b->rank != 2) return BAD("inputs A ('%s', rank %d) and B ('%s', rank %d) must be matrices",
                                                 a->name, a->rank, b->name, b->rank);
    bool ta = attr_i(c, "transA", 0) != 0, tb = attr_i(c, "transB", 0) != 0;
    int64_t m = a->dims[ta ? 1 : 0], k = a->dims[ta ? 0 : 1], kb = b->dims[tb ? 1 : 0], n = b->dims[tb ? 0 : 1];
    if (k != kb) return BAD("A ('%s') has K=%" PRId64 " but B ('%s') has K=%" PRId64 " (transA=%d, transB=%d)", a->name,
                            k, b->name, kb, ta, tb);
    int64_t dims[2] = {m, n};
    if (cc) {
        if (cc->rank > 2) return BAD("C ('%s') has rank %d; expected at most 2", cc->name, cc->rank);
        for (int i = 0; i < cc->rank; i++) {
            int64_t want = dims[2 - cc->rank + i];
            if (cc->dims[i] != 1 && cc->dims[i] != want)
                return BAD("C ('%s') does not broadcast to [%" PRId64 ",%" PRId64 "]", cc->name, m, n);
        }
    }
    return set_out(c, 0, RLT_DTYPE_FLOAT32, 2, dims);
}

static rlt_status infer_matmul(ictx *c)
{
    const rlt_graph_tensor *a = in_t(c, 0), *b = in_t(c, 1);
    TRY(need_float(c, 0));
    TRY(need_float(c, 1));
    if (a->rank < 1 || b->rank < 1) return BAD("inputs must have rank >= 1");
    int64_t ad[RLT_GRAPH_MAX_RANK + 1], bd[RLT_GRAPH_MAX_RANK + 1];
    int ar = a->rank, br = b->rank;
    memcpy(ad, a->dims, sizeof a->dims);
    memcpy(bd, b->dims, sizeof b->dims);
    if (ar == 1) {
        ad[1] = ad[0];
        ad[0] = 1;
        ar = 2;
    }
    if (br == 1) {
        bd[1] = 1;
        br = 2;
    }
    if (ad[ar - 1] != bd[br - 2])
        return BAD("A ('%s') has K=%" PRId64 " but B ('%s') has K=%" PRId64, a->name, ad[ar - 1], b->name, bd[br - 2]);
    int batch = RLT_MAX(ar, br) - 2;
    int64_t dims[RLT_GRAPH_MAX_RANK + 2];
    for (int i = 0; i < batch; i++) {
        int ia = i - (batch - (ar - 2)), ib = i - (batch - (br - 2));
        int64_t da = ia >= 0 ? ad[ia] : 1, db = ib >= 0 ? bd[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return BAD("batch dimensions do not broadcast: %" PRId64 " and %" PRId64, da, db);
        dims[i] = da == 1 ? db : da;
    }
    int rank = batch;
    if (a->rank > 1) dims[rank++] = ad[ar - 2];
    if (b->rank > 1) dims[rank++] = bd[br - 1];
    return set_out(c, 0, RLT_DTYPE_FLOAT32, rank, dims);
}

static rlt_status infer_softmax(ictx *c)
{
    const rlt_graph_tensor *x = in_t(c, 0);
    TRY(need_float(c, 0));
    int axis = 0;
    TRY(axis_norm(c, "axis", attr_i(c, "axis", c->g->opset >= 13 ? -1 : 1), x->rank, false, &axis));
    return set_out_like(c, 0, x);
}

static rlt_status infer_layernorm(ictx *c)
{
    const rlt_graph_tensor *x = in_t(c, 0);
    for (int i = 0; i < 3; i++) TRY(need_float(c, i));
    int axis = 0;
    TRY(axis_norm(c, "axis", attr_i(c, "axis", -1), x->rank, false, &axis));
    for (int i = 1; i <= 2; i++) {
        const rlt_graph_tensor *p = in_t(c, i);
        if (!p) continue;
        if (p->rank > x->rank - axis)
            return BAD("input %d ('%s') has rank %d; the normalized part of the input has rank %d", i, p->name, p->rank,
                       x->rank - axis);
        for (int k = 0; k < p->rank; k++)
            if (p->dims[k] != 1 && p->dims[k] != x->dims[x->rank - p->rank + k])
                return BAD("input %d ('%s') does not broadcast to the normalized dimensions", i, p->name);
    }
    TRY(set_out_like(c, 0, x));
    int64_t dims[RLT_GRAPH_MAX_RANK];
    for (int d = 0; d < x->rank; d++) dims[d] = d < axis ? x->dims[d] : 1;
    TRY(set_out(c, 1, RLT_DTYPE_FLOAT32, x->rank, dims));
    return set_out(c, 2, RLT_DTYPE_FLOAT32, x->rank, dims);
}

static rlt_status infer_reduce_mean(ictx *c)
{
    const rlt_graph_tensor *x = in_t(c, 0);
    TRY(need_float(c, 0));
    int n;
    const int64_t *axes = attr_ints(c, "axes", &n);
    bool keep = attr_i(c, "keepdims", 1) != 0;
    bool reduce[RLT_GRAPH_MAX_RANK] = {false};
    if (!axes) {
        for (int d = 0; d < x->rank; d++) reduce[d] = true;
    } else {
        for (int i = 0; i < n; i++) {
            int a = 0;
            TRY(axis_norm(c, "axes value", axes[i], x->rank, false, &a));
            reduce[a] = true;
        }
    }
    int64_t dims[RLT_GRAPH_MAX_RANK];
    int k = 0;
    for (int d = 0; d < x->rank; d++) {
        if (!reduce[d]) dims[k++] = x->dims[d];
        else if (keep) dims[k++] = 1;
    }
    return set_out(c, 0, x->dtype, k, dims);
}

/* ---- the op table ------------------------------------------------------------ */

typedef rlt_status (*infer_fn)(ictx *c);

/* attrs: "name:K ..." with K one of i (int), f (float), s (string),
 * I (ints), F (floats), t (tensor). */
typedef struct op_def {
    const char *op_type;
    const char *attrs;
    int min_inputs, max_inputs, min_outputs, max_outputs;
    int since; /* first default-domain opset that has the op */
    infer_fn infer;
} op_def;

static const op_def ops[] = {
    {"Add", "", 2, 2, 1, 1, 1, infer_binary},
    {"AveragePool", "auto_pad:s ceil_mode:i count_include_pad:i dilations:I kernel_shape:I pads:I strides:I", 1, 1, 1,
     1, 1, infer_pool},
    {"BatchNormalization", "epsilon:f momentum:f training_mode:i spatial:i", 5, 5, 1, 5, 1, infer_batchnorm},
    {"Cast", "to:i", 1, 1, 1, 1, 1, infer_cast},
    {"Clip", "min:f max:f", 1, 3, 1, 1, 1, infer_clip},
    {"Concat", "axis:i", 1, 1 << 20, 1, 1, 1, infer_concat},
    {"Constant", "value:t value_float:f value_floats:F value_int:i value_ints:I", 0, 0, 1, 1, 1, infer_constant},
    {"ConstantOfShape", "value:t", 1, 1, 1, 1, 9, infer_constant_of_shape},
    {"Conv", "auto_pad:s dilations:I group:i kernel_shape:I pads:I strides:I", 2, 3, 1, 1, 1, infer_conv},
    {"Div", "", 2, 2, 1, 1, 1, infer_binary},
    {"Dropout", "ratio:f seed:i", 1, 3, 1, 2, 1, infer_dropout},
    {"Erf", "", 1, 1, 1, 1, 9, infer_unary_float},
    {"Expand", "", 2, 2, 1, 1, 8, infer_expand},
    {"Flatten", "axis:i", 1, 1, 1, 1, 1, infer_flatten},
    {"Gather", "axis:i", 2, 2, 1, 1, 1, infer_gather},
    {"Gelu", "approximate:s", 1, 1, 1, 1, 1, infer_gelu},
    {"Gemm", "alpha:f beta:f transA:i transB:i", 2, 3, 1, 1, 1, infer_gemm},
    {"GlobalAveragePool", "", 1, 1, 1, 1, 1, infer_global_pool},
    {"Identity", "", 1, 1, 1, 1, 1, infer_identity},
    {"LayerNormalization", "axis:i epsilon:f stash_type:i", 1, 3, 1, 3, 17, infer_layernorm},
    {"LeakyRelu", "alpha:f", 1, 1, 1, 1, 1, infer_unary_float},
    {"MatMul", "", 2, 2, 1, 1, 1, infer_matmul},
    {"MaxPool", "auto_pad:s ceil_mode:i dilations:I kernel_shape:I pads:I storage_order:i strides:I", 1, 1, 1, 2, 1,
     infer_pool},
    {"Mul", "", 2, 2, 1, 1, 1, infer_binary},
    {"Pad", "mode:s pads:I value:f", 1, 3, 1, 1, 1, infer_pad},
    {"Pow", "", 2, 2, 1, 1, 1, infer_binary},
    {"ReduceMean", "axes:I keepdims:i", 1, 1, 1, 1, 1, infer_reduce_mean},
    {"Relu", "", 1, 1, 1, 1, 1, infer_relu},
    {"Reshape", "allowzero:i", 2, 2, 1, 1, 5, infer_reshape},
    {"Shape", "start:i end:i", 1, 1, 1, 1, 1, infer_shape},
    {"Sigmoid", "", 1, 1, 1, 1, 1, infer_unary_float},
    {"Slice", "starts:I ends:I axes:I", 1, 5, 1, 1, 1, infer_slice},
    {"Softmax", "axis:i", 1, 1, 1, 1, 1, infer_softmax},
    {"Split", "axis:i split:I", 1, 2, 1, 64, 1, infer_split},
    {"Sqrt", "", 1, 1, 1, 1, 1, infer_unary_float},
    {"Squeeze", "axes:I", 1, 2, 1, 1, 1, infer_squeeze},
    {"Sub", "", 2, 2, 1, 1, 1, infer_binary},
    {"Tanh", "", 1, 1, 1, 1, 1, infer_unary_float},
    {"Transpose", "perm:I", 1, 1, 1, 1, 1, infer_transpose},
    {"Unsqueeze", "axes:I", 1, 2, 1, 1, 1, infer_unsqueeze},
    {"Where", "", 3, 3, 1, 1, 9, infer_where},
};

static const op_def *op_find(const char *op_type)
{
    for (size_t i = 0; i < RLT_ARRAY_LEN(ops); i++)
        if (strcmp(ops[i].op_type, op_type) == 0) return &ops[i];
    return NULL;
}

/* The kind letter of attribute `name` in an op's spec, or 0. */
static char attr_spec_kind(const char *spec, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = spec; *p;) {
        while (*p == ' ') p++;
        const char *colon = strchr(p, ':');
        if (!colon) break;
        if ((size_t)(colon - p) == len && strncmp(p, name, len) == 0) return colon[1];
        p = colon + 2;
    }
    return 0;
}

static rlt_graph_attr_kind kind_of_letter(char k)
{
    switch (k) {
    case 'i': return RLT_GRAPH_ATTR_INT;
    case 'f': return RLT_GRAPH_ATTR_FLOAT;
    case 's': return RLT_GRAPH_ATTR_STRING;
    case 'I': return RLT_GRAPH_ATTR_INTS;
    case 'F': return RLT_GRAPH_ATTR_FLOATS;
    default: return RLT_GRAPH_ATTR_TENSOR;
    }
}

static void append_supported_ops(char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < RLT_ARRAY_LEN(ops) && len + 1 < cap; i++) {
        int w = snprintf(buf + len, cap - len, "%s%s", i ? " " : "", ops[i].op_type);
        if (w < 0) break;
        len += (size_t)w;
    }
}

static rlt_status op_check(ictx *c, const op_def **out)
{
    const rlt_graph_node *n = c->node;
    const op_def *def = op_find(n->op_type);
    if (!def) {
        char list[400];
        append_supported_ops(list, sizeof list);
        return BAD("op %s is not supported; supported ops: %s", n->op_type, list);
    }
    if (c->g->opset < def->since) return BAD("op %s needs opset %d or later", n->op_type, def->since);
    *out = def;
    return RLT_STATUS_OK;
}

rlt_status rlt_graph_op_check(rlt_graph *g, int node, rlt_diag *diag)
{
    RLT_ASSERT(node >= 0 && node < g->n_nodes);
    ictx c = {.g = g, .node = &g->nodes[node], .diag = diag};
    const op_def *def = NULL;
    return op_check(&c, &def);
}

static rlt_status node_check(ictx *c, const op_def **out)
{
    const rlt_graph_node *n = c->node;
    const op_def *def = NULL;
    TRY(op_check(c, &def));
    for (int i = 0; i < n->n_attrs; i++) {
        const rlt_graph_attr *a = &n->attrs[i];
        char k = attr_spec_kind(def->attrs, a->name);
        if (!k) return BAD("attribute '%s' is not supported%s%s", a->name, def->attrs[0] ? "; supported: " : "",
                           def->attrs);
        if (kind_of_letter(k) != a->kind)
            return BAD("attribute '%s' is a %s; expected a %s", a->name, rlt_graph_attr_kind_str(a->kind),
                       rlt_graph_attr_kind_str(kind_of_letter(k)));
    }
    int n_in = n->n_inputs;
    while (n_in > 0 && n->inputs[n_in - 1] < 0) n_in--; /* trailing inputs left out */
    if (n_in < def->min_inputs || n_in > def->max_inputs) {
        if (def->min_inputs == def->max_inputs) return BAD("takes %d inputs, got %d", def->min_inputs, n_in);
        return BAD("takes %d to %d inputs, got %d", def->min_inputs, def->max_inputs, n_in);
    }
    for (int i = 0; i < def->min_inputs; i++)
        if (n->inputs[i] < 0) return BAD("input %d is required but left out", i);
    for (int i = 0; i < n->n_inputs; i++) {
        const rlt_graph_tensor *t = in_t(c, i);
        if (t && !t->has_shape) return BAD("input %d ('%s') has no shape", i, t->name);
    }
    if (n->n_outputs < def->min_outputs || n->n_outputs > def->max_outputs)
        return BAD("has %d outputs; expected %d to %d", n->n_outputs, def->min_outputs, def->max_outputs);
    if (n->outputs[0] < 0) return BAD("output 0 is left out");
    *out = def;
    return RLT_STATUS_OK;
}

/* Multiply-adds past which a fold is left to run time: a few seconds of
 * the evaluator's plain loops, so that a small file of constants cannot
 * stall the importer. */
#define FOLD_MAX_MACS ((int64_t)1 << 31)

/* Whether evaluating the node takes at most FOLD_MAX_MACS multiply-adds,
 * for the ops whose work grows faster than their inputs and outputs: each
 * output element of a Conv reads a filter (its weight over the output
 * channels), of MatMul and Gemm K pairs, of a pool its window. The others
 * do a few operations per element. */
static bool fold_cheap(const ictx *c)
{
    const char *op = c->node->op_type;
    const rlt_graph_tensor *a = in_t(c, 0), *b = in_t(c, 1);
    int64_t per = 1;
    if (strcmp(op, "Conv") == 0) {
        per = b->dims[0] ? rlt_graph_tensor_n_elems(b) / b->dims[0] : 0;
    } else if (strcmp(op, "MatMul") == 0) {
        per = a->dims[a->rank - 1];
    } else if (strcmp(op, "Gemm") == 0) {
        per = a->dims[attr_i(c, "transA", 0) ? 0 : 1];
    } else if (strcmp(op, "MaxPool") == 0 || strcmp(op, "AveragePool") == 0) {
        int n;
        const int64_t *ks = attr_ints(c, "kernel_shape", &n);
        for (int i = 0; i < n; i++) {
            if (ks[i] > FOLD_MAX_MACS / per) return false;
            per *= ks[i];
        }
    }
    return per == 0 || rlt_graph_tensor_n_elems(out_t(c, 0)) <= FOLD_MAX_MACS / per;
}

/* Folds a node whose present inputs are all constants and which its op's
 * own code left alone (Sqrt, Pow, Relu, Pad, Conv, MatMul, ... of
 * constants) by evaluating it with rlt_graph_eval_node into new constants.
 * Every op the evaluator runs is deterministic and keeps no state (Dropout
 * only in its inference form: training_mode is refused), so any of them
 * folds. `*vals` is the per-tensor table the evaluator reads, allocated at
 * the first such fold (free with rlt_free); the node's entries are cleared
 * again afterwards. */
static rlt_status fold_by_eval(const ictx *c, void ***vals)
{
    const rlt_graph_node *n = c->node;
    if (n->is_removed || !inputs_const(c) || !rlt_graph_can_eval(n->op_type) || !fold_small(c) || !fold_cheap(c))
        return RLT_STATUS_OK;
    for (int o = 0; o < n->n_outputs; o++) {
        const rlt_graph_tensor *t = out_t(c, o);
        if (t && t->data) return RLT_STATUS_OK; /* its own code folded part of it */
    }
    if (!*vals) {
        *vals = rlt_calloc((size_t)c->g->n_tensors + 1, sizeof **vals);
        if (!*vals) return nfail(c, RLT_STATUS_OUT_OF_MEMORY, "out of memory folding a constant");
    }
    void **v = *vals;
    rlt_status st = RLT_STATUS_OK;
    for (int o = 0; o < n->n_outputs && st == RLT_STATUS_OK; o++)
        if (n->outputs[o] >= 0) st = fold_alloc(c, o, &v[n->outputs[o]]);
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] >= 0) v[n->inputs[i]] = c->g->tensors[n->inputs[i]].data;
    if (st == RLT_STATUS_OK) st = rlt_graph_eval_node(c->g, (int)(n - c->g->nodes), v, c->diag);
    for (int o = 0; o < n->n_outputs; o++) {
        int t = n->outputs[o];
        if (t < 0) continue;
        if (st == RLT_STATUS_OK) c->g->tensors[t].data = v[t];
        v[t] = NULL;
    }
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] >= 0) v[n->inputs[i]] = NULL;
    if (st == RLT_STATUS_OK) fold_done(c);
    return st;
}

rlt_status rlt_graph_infer(rlt_graph *g, rlt_diag *diag)
{
    rlt_status st = RLT_STATUS_OK;
    void **vals = NULL; /* fold_by_eval's table */
    for (int i = 0; i < g->n_nodes; i++) {
        ictx c = {.g = g, .node = &g->nodes[i], .diag = diag};
        if (c.node->is_removed) continue;
        const op_def *def = NULL;
        if ((st = node_check(&c, &def)) != RLT_STATUS_OK) goto cleanup;
        if ((st = def->infer(&c)) != RLT_STATUS_OK) goto cleanup;
        for (int o = 0; o < c.node->n_outputs; o++) {
            const rlt_graph_tensor *t = out_t(&c, o);
            if (t && !t->has_shape) RLT_ASSERT(!"an inference function left an output without a shape");
        }
        if ((st = fold_by_eval(&c, &vals)) != RLT_STATUS_OK) goto cleanup;
    }
cleanup:
    rlt_free(vals);
    return st;
}
