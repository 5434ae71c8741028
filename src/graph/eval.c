/*
 * eval.c - the graph's own reference evaluation (rlt_graph_eval): every op
 * the importer supports, run node by node in topological order with plain
 * loops, what `rltune run` checks a compiled network against. Floats are
 * accumulated in double wherever a sum is long (Conv, Gemm, MatMul, the
 * pools, the reductions, Softmax, the normalisations); integer tensors
 * (shape subgraphs that were not folded, Gather indices, Where conditions,
 * Cast) are evaluated with numpy's wrapping arithmetic, as infer.c folds
 * them. Each intermediate buffer is freed after its last consumer.
 *
 * One function per op (ev_*), found by op type in `evals`; the driver
 * allocates every output of a node before calling its function, so the
 * functions only fail on bad data (a Gather index out of range, an integer
 * division by zero) or on a graph the importer would not have made.
 */
#include "graph/graph.h"

#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define TRY(expr)                                                                                            \
    do {                                                                                                     \
        rlt_status st_ = (expr);                                                                             \
        if (st_ != RLT_STATUS_OK) return st_;                                                                \
    } while (0)

typedef struct ectx {
    const rlt_graph *g;
    const rlt_graph_node *node;
    void **vals; /* per tensor: its values (borrowed constant / input, or owned when `owned`) */
    rlt_diag *diag;
} ectx;

static rlt_status efail(const ectx *c, rlt_status status, const char *fmt, ...) RLT_PRINTF(3, 4);

static rlt_status efail(const ectx *c, rlt_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rlt_status st = rlt_graph_node_vfail(c->g, c->node, c->diag, status, fmt, ap);
    va_end(ap);
    return st;
}

#define BAD(...) efail(c, RLT_STATUS_INVALID_ARGUMENT, __VA_ARGS__)

/* ---- access ---------------------------------------------------------------- */

static const rlt_graph_tensor *in_t(const ectx *c, int i)
{
    if (i >= c->node->n_inputs || c->node->inputs[i] < 0) return NULL;
    return &c->g->tensors[c->node->inputs[i]];
}

static const void *in_v(const ectx *c, int i) { return c->vals[c->node->inputs[i]]; }

static const rlt_graph_tensor *out_t(const ectx *c, int i)
{
    if (i >= c->node->n_outputs || c->node->outputs[i] < 0) return NULL;
    return &c->g->tensors[c->node->outputs[i]];
}

static void *out_v(const ectx *c, int i) { return c->vals[c->node->outputs[i]]; }

static int64_t n_elems(const rlt_graph_tensor *t) { return rlt_graph_tensor_n_elems(t); }

static int64_t attr_i(const ectx *c, const char *name, int64_t def) { return rlt_graph_attr_int(c->node, name, def); }

static double attr_f(const ectx *c, const char *name, double def) { return rlt_graph_attr_float(c->node, name, def); }

static const int64_t *attr_ints(const ectx *c, const char *name, int *n)
{
    return rlt_graph_attr_ints(c->node, name, n);
}

/* axis in [-rank, rank) -> [0, rank); `inclusive` allows rank itself. */
static rlt_status axis_get(const ectx *c, int64_t axis, int rank, bool inclusive, int *out)
{
    int64_t hi = inclusive ? rank : rank - 1;
    if (axis < -(int64_t)rank || axis > hi) return BAD("axis %" PRId64 " is out of range for rank %d", axis, rank);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return RLT_STATUS_OK;
}

static int64_t ld_i(rlt_dtype dt, const void *p, int64_t i)
{
    switch (dt) {
    case RLT_DTYPE_INT64: return ((const int64_t *)p)[i];
    case RLT_DTYPE_INT32: return ((const int32_t *)p)[i];
    case RLT_DTYPE_BOOL: return ((const unsigned char *)p)[i] != 0;
    case RLT_DTYPE_FLOAT32: {
        float f = ((const float *)p)[i];
        if (f != f) return 0;
        if (f >= 9.2e18f) return INT64_MAX;
        if (f <= -9.2e18f) return INT64_MIN;
        return (int64_t)f;
    }
    default: return 0;
    }
}

static double ld_f(rlt_dtype dt, const void *p, int64_t i)
{
    return dt == RLT_DTYPE_FLOAT32 ? (double)((const float *)p)[i] : (double)ld_i(dt, p, i);
}

/* Integers wrap (two's complement) like numpy's. */
static void st_i(rlt_dtype dt, void *p, int64_t i, int64_t v)
{
    switch (dt) {
    case RLT_DTYPE_INT64: ((int64_t *)p)[i] = v; break;
    case RLT_DTYPE_INT32: ((int32_t *)p)[i] = (int32_t)(uint32_t)(uint64_t)v; break;
    case RLT_DTYPE_BOOL: ((unsigned char *)p)[i] = v != 0; break;
    case RLT_DTYPE_FLOAT32: ((float *)p)[i] = (float)v; break;
    default: break;
    }
}

/* A double into an integer type, saturating (NaN becomes 0). */
static int64_t sat_i64(double v, rlt_dtype dt)
{
    double lo = dt == RLT_DTYPE_INT32 ? -2147483648.0 : -9223372036854775808.0;
    double hi = dt == RLT_DTYPE_INT32 ? 2147483647.0 : 9223372036854775807.0;
    if (v != v) return 0;
    if (v <= lo) return dt == RLT_DTYPE_INT32 ? INT32_MIN : INT64_MIN;
    if (v >= hi) return dt == RLT_DTYPE_INT32 ? INT32_MAX : INT64_MAX;
    return (int64_t)v;
}

static void st_f(rlt_dtype dt, void *p, int64_t i, double v)
{
    switch (dt) {
    case RLT_DTYPE_FLOAT32: ((float *)p)[i] = (float)v; break;
    case RLT_DTYPE_BOOL: ((unsigned char *)p)[i] = v != 0.0; break;
    default: st_i(dt, p, i, sat_i64(v, dt)); break;
    }
}

static void strides_of(int rank, const int64_t *dims, int64_t *strides)
{
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= dims[i];
    }
}

/* ---- broadcasting ------------------------------------------------------------ */

/* Walks an output shape in row-major order, keeping each operand's flat
 * offset under numpy broadcasting. */
typedef struct bcast {
    int rank, n_ops;
    int64_t dims[RLT_GRAPH_MAX_RANK], idx[RLT_GRAPH_MAX_RANK];
    int64_t strides[3][RLT_GRAPH_MAX_RANK];
    int64_t off[3];
} bcast;

static rlt_status bcast_init(const ectx *c, bcast *b, const rlt_graph_tensor *out, int n_ops,
                             const rlt_graph_tensor *const *ops)
{
    memset(b, 0, sizeof *b);
    b->rank = out->rank;
    b->n_ops = n_ops;
    memcpy(b->dims, out->dims, sizeof b->dims);
    for (int k = 0; k < n_ops; k++) {
        const rlt_graph_tensor *t = ops[k];
        if (t->rank > out->rank) return BAD("input '%s' has a higher rank than the output", t->name);
        int64_t s[RLT_GRAPH_MAX_RANK];
        strides_of(t->rank, t->dims, s);
        for (int i = 0; i < t->rank; i++) {
            int j = out->rank - t->rank + i;
            if (t->dims[i] != 1 && t->dims[i] != out->dims[j])
                return BAD("input '%s' does not broadcast to the output's shape", t->name);
            b->strides[k][j] = t->dims[i] == 1 ? 0 : s[i];
        }
    }
    return RLT_STATUS_OK;
}

static void bcast_next(bcast *b)
{
    for (int d = b->rank - 1; d >= 0; d--) {
        b->idx[d]++;
        for (int k = 0; k < b->n_ops; k++) b->off[k] += b->strides[k][d];
        if (b->idx[d] < b->dims[d]) return;
        for (int k = 0; k < b->n_ops; k++) b->off[k] -= b->strides[k][d] * b->dims[d];
        b->idx[d] = 0;
    }
}

/* ---- elementwise ----------------------------------------------------------------- */

static rlt_status need_f32(const ectx *c, const rlt_graph_tensor *t)
{
    if (t->dtype != RLT_DTYPE_FLOAT32) return BAD("input '%s' is %s; expected f32", t->name, rlt_dtype_str(t->dtype));
    return RLT_STATUS_OK;
}

/* Output 0 has as many elements as input 0 (the elementwise ops). */
static rlt_status same_elems(const ectx *c)
{
    const rlt_graph_tensor *xt = in_t(c, 0), *yt = out_t(c, 0);
    if (n_elems(xt) != n_elems(yt)) return BAD("output '%s' differs in size from input '%s'", yt->name, xt->name);
    return RLT_STATUS_OK;
}

static rlt_status ev_unary_float(ectx *c)
{
    const rlt_graph_tensor *xt = in_t(c, 0);
    TRY(need_f32(c, xt));
    TRY(same_elems(c));
    const float *x = in_v(c, 0);
    float *y = out_v(c, 0);
    int64_t n = n_elems(xt);
    const char *op = c->node->op_type;
    if (strcmp(op, "Sigmoid") == 0) {
        for (int64_t i = 0; i < n; i++) y[i] = (float)(1.0 / (1.0 + exp(-(double)x[i])));
    } else if (strcmp(op, "Tanh") == 0) {
        for (int64_t i = 0; i < n; i++) y[i] = tanhf(x[i]);
    } else if (strcmp(op, "Erf") == 0) {
        for (int64_t i = 0; i < n; i++) y[i] = erff(x[i]);
    } else if (strcmp(op, "Sqrt") == 0) {
        for (int64_t i = 0; i < n; i++) y[i] = sqrtf(x[i]);
    } else if (strcmp(op, "LeakyRelu") == 0) {
        float alpha = (float)attr_f(c, "alpha", 0.01);
        for (int64_t i = 0; i < n; i++) y[i] = x[i] < 0.0f ? alpha * x[i] : x[i];
    } else { /* Gelu */
        const rlt_graph_attr *a = rlt_graph_node_attr(c->node, "approximate");
        bool is_tanh = a && a->kind == RLT_GRAPH_ATTR_STRING && strcmp(a->s, "tanh") == 0;
        if (is_tanh) {
            const double k = 0.7978845608028654; /* sqrt(2 / pi) */
            for (int64_t i = 0; i < n; i++) {
                double v = x[i];
                y[i] = (float)(0.5 * v * (1.0 + tanh(k * (v + 0.044715 * v * v * v))));
            }
        } else {
            for (int64_t i = 0; i < n; i++) y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
        }
    }
    return RLT_STATUS_OK;
}

static rlt_status ev_relu(ectx *c)
{
    const rlt_graph_tensor *xt = in_t(c, 0);
    TRY(same_elems(c));
    const void *x = in_v(c, 0);
    void *y = out_v(c, 0);
    int64_t n = n_elems(xt);
    if (xt->dtype == RLT_DTYPE_FLOAT32) {
        for (int64_t i = 0; i < n; i++) ((float *)y)[i] = ((const float *)x)[i] < 0.0f ? 0.0f : ((const float *)x)[i];
    } else {
        for (int64_t i = 0; i < n; i++) {
            int64_t v = ld_i(xt->dtype, x, i);
            st_i(xt->dtype, y, i, v < 0 ? 0 : v);
        }
    }
    return RLT_STATUS_OK;
}

static rlt_status ev_clip(ectx *c)
{
    const rlt_graph_tensor *xt = in_t(c, 0);
    TRY(same_elems(c));
    const void *x = in_v(c, 0);
    void *y = out_v(c, 0);
    int64_t n = n_elems(xt);
    bool is_float = xt->dtype == RLT_DTYPE_FLOAT32;
    double lo_f = -INFINITY, hi_f = INFINITY;
    int64_t lo_i = INT64_MIN, hi_i = INT64_MAX;
    if (c->g->opset < 11) {
        lo_f = attr_f(c, "min", -FLT_MAX);
        hi_f = attr_f(c, "max", FLT_MAX);
        lo_i = sat_i64(ceil(lo_f), RLT_DTYPE_INT64);
        hi_i = sat_i64(floor(hi_f), RLT_DTYPE_INT64);
    } else {
        for (int k = 1; k <= 2; k++) {
            const rlt_graph_tensor *t = in_t(c, k);
            if (!t) continue;
            if (n_elems(t) != 1 || t->dtype != xt->dtype) return BAD("input %d ('%s') must be a scalar of the input's type",
                                                                    k, t->name);
            double vf = ld_f(t->dtype, in_v(c, k), 0);
            int64_t vi = ld_i(t->dtype, in_v(c, k), 0);
            if (k == 1) lo_f = vf, lo_i = vi;
            else hi_f = vf, hi_i = vi;
        }
    }
    for (int64_t i = 0; i < n; i++) {
        if (is_float) {
            float v = ((const float *)x)[i];
            if (v < lo_f) v = (float)lo_f;
            if (v > hi_f) v = (float)hi_f;
            ((float *)y)[i] = v;
        } else {
            int64_t v = ld_i(xt->dtype, x, i);
            if (v < lo_i) v = lo_i;
            if (v > hi_i) v = hi_i;
            st_i(xt->dtype, y, i, v);
        }
    }
    return RLT_STATUS_OK;
}

static rlt_status ev_binary(ectx *c)
{
    const rlt_graph_tensor *at = in_t(c, 0), *bt = in_t(c, 1), *yt = out_t(c, 0);
    const void *a = in_v(c, 0), *b = in_v(c, 1);
    void *y = out_v(c, 0);
    char op = c->node->op_type[0]; /* Add, Sub, Mul, Div, Pow */
    bcast it;
    TRY(bcast_init(c, &it, yt, 2, (const rlt_graph_tensor *[]){at, bt}));
    int64_t n = n_elems(yt);
    for (int64_t e = 0; e < n; e++, bcast_next(&it)) {
        int64_t ia = it.off[0], ib = it.off[1];
        if (op == 'P') {
            double r = pow(ld_f(at->dtype, a, ia), ld_f(bt->dtype, b, ib));
            st_f(yt->dtype, y, e, r);
        } else if (yt->dtype == RLT_DTYPE_FLOAT32) {
            double u = ((const float *)a)[ia], v = ((const float *)b)[ib], r;
            switch (op) {
            case 'A': r = u + v; break;
            case 'S': r = u - v; break;
            case 'M': r = u * v; break;
            default: r = u / v; break;
            }
            ((float *)y)[e] = (float)r;
        } else {
            int64_t u = ld_i(at->dtype, a, ia), v = ld_i(bt->dtype, b, ib), r;
            switch (op) {
            case 'A': r = (int64_t)((uint64_t)u + (uint64_t)v); break;
            case 'S': r = (int64_t)((uint64_t)u - (uint64_t)v); break;
            case 'M': r = (int64_t)((uint64_t)u * (uint64_t)v); break;
            default:
                if (v == 0) return BAD("integer division by zero (element %" PRId64 " of '%s')", ib, bt->name);
                r = v == -1 ? (int64_t)(0 - (uint64_t)u) : u / v;
                break;
            }
            st_i(yt->dtype, y, e, r);
        }
    }
    return RLT_STATUS_OK;
}

static rlt_status ev_where(ectx *c)
{
    const rlt_graph_tensor *ct = in_t(c, 0), *xt = in_t(c, 1), *zt = in_t(c, 2), *yt = out_t(c, 0);
    if (ct->dtype != RLT_DTYPE_BOOL || xt->dtype != yt->dtype || zt->dtype != yt->dtype)
        return BAD("the condition must be bool and both branches of the output's type");
    const unsigned char *cond = in_v(c, 0);
    const char *x = in_v(c, 1), *z = in_v(c, 2);
    char *y = out_v(c, 0);
    size_t es = rlt_dtype_size(yt->dtype);
    bcast it;
    TRY(bcast_init(c, &it, yt, 3, (const rlt_graph_tensor *[]){ct, xt, zt}));
    int64_t n = n_elems(yt);
    for (int64_t e = 0; e < n; e++, bcast_next(&it)) {
        const char *src = cond[it.off[0]] ? x + it.off[1] * (int64_t)es : z + it.off[2] * (int64_t)es;
        memcpy(y + e * (int64_t)es, src, es);
    }
    return RLT_STATUS_OK;
}

static rlt_status ev_expand(ectx *c)
{
    const rlt_graph_tensor *xt = in_t(c, 0), *yt = out_t(c, 0);
    if (xt->dtype != yt->dtype) return BAD("the output's type differs from the input's");
    const char *x = in_v(c, 0);
    char *y = out_v(c, 0);
    size_t es = rlt_dtype_size(yt->dtype);
    bcast it;
    TRY(bcast_init(c, &it, yt, 1, (const rlt_graph_tensor *[]){xt}));
    int64_t n = n_elems(yt);
    for (int64_t e = 0; e < n; e++, bcast_next(&it)) memcpy(y + e * (int64_t)es, x + it.off[0] * (int64_t)es, es);
    return RLT_STATUS_OK;
}

/* Output 0 gets input 0's bytes (the ops that change only the shape). */
static rlt_status ev_copy(ectx *c)
{
    const rlt_graph_tensor *xt = in_t(c, 0), *yt = out_t(c, 0);
    if (xt->dtype != yt->dtype || n_elems(xt) != n_elems(yt))
        return BAD("output '%s' does not hold the input's elements", yt->name);
    memcpy(out_v(c, 0), in_v(c, 0), (size_t)n_elems(xt) * rlt_dtype_size(xt->dtype));
    return RLT_STATUS_OK;
}

static rlt_status ev_dropout(ectx *c)
{
    TRY(ev_copy(c));
    /* Inference keeps every element: the mask is all true (bool from
     * opset 10), or all 1.0 (of the input's type before). */
    const rlt_graph_tensor *mt = out_t(c, 1);
    if (mt)
        for (int64_t i = 0, n = n_elems(mt); i < n; i++) st_i(mt->dtype, out_v(c, 1), i, 1);
    return RLT_STATUS_OK;
}

static rlt_status ev_cast(ectx *c)
{
    const rlt_graph_tensor *xt = in_t(c, 0), *yt = out_t(c, 0);
    TRY(same_elems(c));
    const void *x = in_v(c, 0);
    void *y = out_v(c, 0);
    int64_t n = n_elems(xt);
    for (int64_t i = 0; i < n; i++) {
        if (xt->dtype == RLT_DTYPE_FLOAT32) st_f(yt->dtype, y, i, ((const float *)x)[i]);
        else st_i(yt->dtype, y, i, ld_i(xt->dtype, x, i));
    }
    return RLT_STATUS_OK;
}

/* ---- convolution and pooling -------------------------------------------------- */

/* A window op over 1 to 3 spatial dimensions, seen as 3 (leading ones of
 * size 1, kernel 1, stride 1, no pads). */
typedef struct window {
    int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
} window;

static rlt_status window_get(const ectx *c, const rlt_graph_tensor *x, const rlt_graph_tensor *y, const int64_t *kernel,
                             window *w)
{
    int n_sp = x->rank - 2;
    if (n_sp < 1 || n_sp > 3 || y->rank != x->rank) return BAD("input '%s' has rank %d; expected 3 to 5", x->name, x->rank);
    int n_s, n_d, n_p;
    const int64_t *s = attr_ints(c, "strides", &n_s), *d = attr_ints(c, "dilations", &n_d),
                  *p = attr_ints(c, "pads", &n_p);
    if ((s && n_s != n_sp) || (d && n_d != n_sp) || (p && n_p != 2 * n_sp))
        return BAD("strides, dilations or pads do not match %d spatial dimensions", n_sp);
    for (int i = 0; i < 3; i++) {
        w->in[i] = w->out[i] = w->k[i] = w->s[i] = w->d[i] = 1;
        w->pb[i] = w->pe[i] = 0;
    }
    for (int i = 0; i < n_sp; i++) {
        int j = 3 - n_sp + i;
        w->in[j] = x->dims[2 + i];
        w->out[j] = y->dims[2 + i];
        w->k[j] = kernel[i];
        w->s[j] = s ? s[i] : 1;
        w->d[j] = d ? d[i] : 1;
        w->pb[j] = p ? p[i] : 0;
        w->pe[j] = p ? p[n_sp + i] : 0;
        if (w->k[j] < 1 || w->s[j] < 1 || w->d[j] < 1 || w->pb[j] < 0 || w->pe[j] < 0)
            return BAD("kernel, strides, dilations or pads out of range in dimension %d", i);
    }
    return RLT_STATUS_OK;
}

static rlt_status ev_conv(ectx *c)
{
    const rlt_graph_tensor *xt = in_t(c, 0), *wt = in_t(c, 1), *bt = in_t(c, 2), *yt = out_t(c, 0);
    TRY(need_f32(c, xt));
    TRY(need_f32(c, wt));
    if (bt) TRY(need_f32(c, bt));
    if (wt->rank != xt->rank) return BAD("weight '%s' has rank %d; expected %d", wt->name, wt->rank, xt->rank);
    window w;
    TRY(window_get(c, xt, yt, wt->dims + 2, &w));
    int64_t N = xt->dims[0], C = xt->dims[1], M = wt->dims[0], Cg = wt->dims[1];
    int64_t G = attr_i(c, "group", 1);
    if (G < 1 || Cg * G != C || M % G != 0 || yt->dims[1] != M || yt->dims[0] != N || (bt && n_elems(bt) != M))
        return BAD("weight '%s' does not fit the input and group=%" PRId64, wt->name, G);
    int64_t Mg = M / G;
    const float *x = in_v(c, 0), *wv = in_v(c, 1), *b = bt ? in_v(c, 2) : NULL;
    float *y = out_v(c, 0);
    int64_t in_sp = w.in[0] * w.in[1] * w.in[2], k_sp = w.k[0] * w.k[1] * w.k[2];
    float *yp = y;
    for (int64_t n = 0; n < N; n++)
        for (int64_t m = 0; m < M; m++) {
            int64_t ic0 = (m / Mg) * Cg;
            const float *wm = wv + m * Cg * k_sp;
            for (int64_t o0 = 0; o0 < w.out[0]; o0++)
                for (int64_t o1 = 0; o1 < w.out[1]; o1++)
                    for (int64_t o2 = 0; o2 < w.out[2]; o2++) {
                        double acc = b ? b[m] : 0.0;
                        for (int64_t ic = 0; ic < Cg; ic++) {
                            const float *xc = x + (n * C + ic0 + ic) * in_sp;
                            const float *wc = wm + ic * k_sp;
                            for (int64_t k0 = 0; k0 < w.k[0]; k0++) {
                                int64_t i0 = o0 * w.s[0] - w.pb[0] + k0 * w.d[0];
                                if (i0 < 0 || i0 >= w.in[0]) continue;
                                for (int64_t k1 = 0; k1 < w.k[1]; k1++) {
                                    int64_t i1 = o1 * w.s[1] - w.pb[1] + k1 * w.d[1];
                                    if (i1 < 0 || i1 >= w.in[1]) continue;
                                    for (int64_t k2 = 0; k2 < w.k[2]; k2++) {
                                        int64_t i2 = o2 * w.s[2] - w.pb[2] + k2 * w.d[2];
                                        if (i2 < 0 || i2 >= w.in[2]) continue;
                                        acc += (double)xc[(i0 * w.in[1] + i1) * w.in[2] + i2] *
                                               (double)wc[(k0 * w.k[1] + k1) * w.k[2] + k2];
                                    }
                                }
                            }
                        }
                        *yp++ = (float)acc;
                    }
        }
    return RLT_STATUS_OK;
}

static rlt_status ev_pool(ectx *c)
{
    const rlt_graph_tensor *xt = in_t(c, 0), *yt = out_t(c, 0), *it = out_t(c, 1);
    TRY(need_f32(c, xt));
    int n_ks;
    const int64_t *ks = attr_ints(c, "kernel_shape", &n_ks);
    if (!ks || n_ks != xt->rank - 2) return BAD("attribute kernel_shape does not match the input");
    window w;
    TRY(window_get(c, xt, yt, ks, &w));
    if (yt->dims[0] != xt->dims[0] || yt->dims[1] != xt->dims[1]) return BAD("the output does not fit the input");
    bool is_max = strcmp(c->node->op_type, "MaxPool") == 0;
    bool include_pad = attr_i(c, "count_include_pad", 0) != 0;
    const float *x = in_v(c, 0);
    float *y = out_v(c, 0);
    int64_t *ind = it ? out_v(c, 1) : NULL;
    int64_t NC = xt->dims[0] * xt->dims[1], in_sp = w.in[0] * w.in[1] * w.in[2], e = 0;
    for (int64_t nc = 0; nc < NC; nc++) {
        const float *xc = x + nc * in_sp;
        for (int64_t o0 = 0; o0 < w.out[0]; o0++)
            for (int64_t o1 = 0; o1 < w.out[1]; o1++)
                for (int64_t o2 = 0; o2 < w.out[2]; o2++, e++) {
                    int64_t st[3] = {o0 * w.s[0] - w.pb[0], o1 * w.s[1] - w.pb[1], o2 * w.s[2] - w.pb[2]};
                    double sum = 0.0;
                    float best = -FLT_MAX;
                    int64_t best_at = -1, count = 0;
                    for (int64_t k0 = 0; k0 < w.k[0]; k0++) {
                        int64_t i0 = st[0] + k0 * w.d[0];
                        if (i0 < 0 || i0 >= w.in[0]) continue;
                        for (int64_t k1 = 0; k1 < w.k[1]; k1++) {
                            int64_t i1 = st[1] + k1 * w.d[1];
                            if (i1 < 0 || i1 >= w.in[1]) continue;
                            for (int64_t k2 = 0; k2 < w.k[2]; k2++) {
                                int64_t i2 = st[2] + k2 * w.d[2];
                                if (i2 < 0 || i2 >= w.in[2]) continue;
                                int64_t at = (i0 * w.in[1] + i1) * w.in[2] + i2;
                                float v = xc[at];
                                if (best_at < 0 || v > best) {
                                    best = v;
                                    best_at = at;
                                }
                                sum += v;
                                count++;
                            }
                        }
                    }
                    if (is_max) {
                        y[e] = best;
                        if (ind) ind[e] = best_at < 0 ? -1 : nc * in_sp + best_at;
                        continue;
                    }
                    if (include_pad) {
                        /* PyTorch's divisor: the window clipped to the
                         * padded input (a ceil_mode overhang past the end
                         * padding does not count). */
                        count = 1;
                        for (int i = 0; i < 3; i++) {
                            int64_t end = RLT_MIN(st[i] + w.k[i], w.in[i] + w.pe[i]);
                            count *= end - st[i];
                        }
                    }
                    y[e] = count > 0 ? (float)(sum / (double)count) : 0.0f;
                }
    }
    return RLT_STATUS_OK;
}

static rlt_status ev_global_pool(ectx *c)
{
    const rlt_graph_tensor *xt = in_t(c, 0);
    TRY(need_f32(c, xt));
    if (xt->rank < 3) return BAD("input '%s' has rank %d; expected at least 3", xt->name, xt->rank);
    int64_t NC = xt->dims[0] * xt->dims[1], inner = n_elems(xt) / (NC ? NC : 1);
    if (NC == 0) return RLT_STATUS_OK;
    const float *x = in_v(c, 0);
    float *y = out_v(c, 0);
    for (int64_t i = 0; i < NC; i++) {
        double sum = 0.0;
        for (int64_t k = 0; k < inner; k++) sum += x[i * inner + k];
        y[i] = inner ? (float)(sum / (double)inner) : NAN;
    }
    return RLT_STATUS_OK;
}

/* ---- normalisation -------------------------------------------------------------- */

static rlt_status ev_batchnorm(ectx *c)
{
    const rlt_graph_tensor *xt = in_t(c, 0);
    for (int i = 0; i < 5; i++) TRY(need_f32(c, in_t(c, i)));
    TRY(same_elems(c));
    if (xt->rank < 2) return BAD("input '%s' has rank %d; expected at least 2", xt->name, xt->rank);
    int64_t N = xt->dims[0], C = xt->dims[1], inner = 1;
    for (int i = 1; i < 5; i++)
        if (n_elems(in_t(c, i)) != C) return BAD("input %d ('%s') must hold %" PRId64 " values", i, in_t(c, i)->name, C);
    for (int d = 2; d < xt->rank; d++) inner *= xt->dims[d];
    double eps = attr_f(c, "epsilon", 1e-5);
    const float *x = in_v(c, 0), *scale = in_v(c, 1), *bias = in_v(c, 2), *mean = in_v(c, 3), *var = in_v(c, 4);
    float *y = out_v(c, 0);
    for (int64_t n = 0; n < N; n++)
        for (int64_t ch = 0; ch < C; ch++) {
            double a = (double)scale[ch] / sqrt((double)var[ch] + eps);
            double b = (double)bias[ch] - (double)mean[ch] * a;
            const float *xp = x + (n * C + ch) * inner;
            float *yp = y + (n * C + ch) * inner;
            for (int64_t k = 0; k < inner; k++) yp[k] = (float)((double)xp[k] * a + b);
        }
    /* The optional outputs (training statistics) are the running mean and
     * variance in inference. */
    for (int o = 1; o < c->node->n_outputs; o++) {
        const rlt_graph_tensor *t = out_t(c, o);
        if (t && n_elems(t) == C) memcpy(out_v(c, o), o % 2 ? mean : var, (size_t)C * sizeof(float));
    }
    return RLT_STATUS_OK;
}

static rlt_status ev_softmax(ectx *c)
{
    const rlt_graph_tensor *xt = in_t(c, 0);
    TRY(need_f32(c, xt));
    int axis = 0;
    TRY(same_elems(c));
    TRY(axis_get(c, attr_i(c, "axis", c->g->opset >= 13 ? -1 : 1), xt->rank, false, &axis));
    int64_t outer = 1, len = 1, inner = 1;
    for (int d = 0; d < axis; d++) outer *= xt->dims[d];
    if (c->g->opset >= 13) {
        len = xt->dims[axis];
        for (int d = axis + 1; d < xt->rank; d++) inner *= xt->dims[d];
    } else { /* before opset 13: the input flattened to [outer, rest] */
        for (int d = axis; d < xt->rank; d++) len *= xt->dims[d];
    }
    const float *x = in_v(c, 0);
    float *y = out_v(c, 0);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            const float *xp = x + o * len * inner + i;
            float *yp = y + o * len * inner + i;
            double mx = -INFINITY, sum = 0.0;
            for (int64_t k = 0; k < len; k++) mx = fmax(mx, xp[k * inner]);
            for (int64_t k = 0; k < len; k++) sum += exp((double)xp[k * inner] - mx);
            for (int64_t k = 0; k < len; k++) yp[k * inner] = (float)(exp((double)xp[k * inner] - mx) / sum);
        }
    return RLT_STATUS_OK;
}

/* Writes the values of `p` (broadcast to the trailing dims `dims` of rank
 * `rank`) into `dst` (their product of floats). */
static rlt_status expand_trailing(const ectx *c, const rlt_graph_tensor *p, const float *pv, int rank,
                                  const int64_t *dims, float *dst)
{
    rlt_graph_tensor shape = {.rank = rank};
    memcpy(shape.dims, dims, (size_t)rank * sizeof *dims);
    bcast it;
    TRY(bcast_init(c, &it, &shape, 1, (const rlt_graph_tensor *[]){p}));
    int64_t n = n_elems(&shape);
    for (int64_t e = 0; e < n; e++, bcast_next(&it)) dst[e] = pv[it.off[0]];
    return RLT_STATUS_OK;
}

static rlt_status ev_layernorm(ectx *c)
{
    const rlt_graph_tensor *xt = in_t(c, 0), *st = in_t(c, 1), *bt = in_t(c, 2);
    for (int i = 0; i < 3; i++)
        if (in_t(c, i)) TRY(need_f32(c, in_t(c, i)));
    int axis = 0;
    TRY(same_elems(c));
    TRY(axis_get(c, attr_i(c, "axis", -1), xt->rank, false, &axis));
    double eps = attr_f(c, "epsilon", 1e-5);
    int64_t outer = 1, len = 1;
    for (int d = 0; d < axis; d++) outer *= xt->dims[d];
    for (int d = axis; d < xt->rank; d++) len *= xt->dims[d];
    rlt_status st_ = RLT_STATUS_OK;
    float *scale = rlt_malloc((size_t)len * sizeof(float) + 1), *bias = rlt_malloc((size_t)len * sizeof(float) + 1);
    if (!scale || !bias) {
        st_ = efail(c, RLT_STATUS_OUT_OF_MEMORY, "out of memory");
        goto cleanup;
    }
    for (int64_t k = 0; k < len; k++) {
        scale[k] = 1.0f;
        bias[k] = 0.0f;
    }
    if (st && (st_ = expand_trailing(c, st, in_v(c, 1), xt->rank - axis, xt->dims + axis, scale)) != RLT_STATUS_OK)
        goto cleanup;
    if (bt && (st_ = expand_trailing(c, bt, in_v(c, 2), xt->rank - axis, xt->dims + axis, bias)) != RLT_STATUS_OK)
        goto cleanup;
    const float *x = in_v(c, 0);
    float *y = out_v(c, 0);
    float *mean_out = out_t(c, 1) ? out_v(c, 1) : NULL, *istd_out = out_t(c, 2) ? out_v(c, 2) : NULL;
    for (int64_t o = 0; o < outer; o++) {
        const float *xp = x + o * len;
        double mean = 0.0, var = 0.0;
        for (int64_t k = 0; k < len; k++) mean += xp[k];
        mean /= (double)len;
        for (int64_t k = 0; k < len; k++) var += ((double)xp[k] - mean) * ((double)xp[k] - mean);
        var /= (double)len;
        double istd = 1.0 / sqrt(var + eps);
        for (int64_t k = 0; k < len; k++) y[o * len + k] = (float)(((double)xp[k] - mean) * istd * scale[k] + bias[k]);
        if (mean_out) mean_out[o] = (float)mean;
        if (istd_out) istd_out[o] = (float)istd;
    }
cleanup:
    rlt_free(bias);
    rlt_free(scale);
    return st_;
}

static rlt_status ev_reduce_mean(ectx *c)
{
    const rlt_graph_tensor *xt = in_t(c, 0), *yt = out_t(c, 0);
    TRY(need_f32(c, xt));
    int n;
    const int64_t *axes = attr_ints(c, "axes", &n);
    bool reduce[RLT_GRAPH_MAX_RANK] = {false};
    if (!axes) {
        for (int d = 0; d < xt->rank; d++) reduce[d] = true;
    } else {
        for (int i = 0; i < n; i++) {
            int a = 0;
            TRY(axis_get(c, axes[i], xt->rank, false, &a));
            reduce[a] = true;
        }
    }
    /* The output's strides in the input's dimensions, 0 where reduced. */
    int64_t kept[RLT_GRAPH_MAX_RANK], ostr[RLT_GRAPH_MAX_RANK], str[RLT_GRAPH_MAX_RANK] = {0};
    int k = 0;
    int64_t count = 1;
    for (int d = 0; d < xt->rank; d++)
        if (!reduce[d]) kept[k++] = xt->dims[d];
        else count *= xt->dims[d];
    strides_of(k, kept, ostr);
    int64_t n_kept = 1;
    for (int j = 0; j < k; j++) n_kept *= kept[j];
    if (n_elems(yt) != n_kept) return BAD("the output does not fit the axes");
    for (int d = 0, j = 0; d < xt->rank; d++)
        if (!reduce[d]) str[d] = ostr[j++];
    int64_t n_out = n_elems(yt);
    double *acc = rlt_calloc((size_t)n_out + 1, sizeof *acc);
    if (!acc) return efail(c, RLT_STATUS_OUT_OF_MEMORY, "out of memory");
    bcast it = {.rank = xt->rank, .n_ops = 1};
    memcpy(it.dims, xt->dims, sizeof it.dims);
    memcpy(it.strides[0], str, sizeof str);
    const float *x = in_v(c, 0);
    int64_t total = n_elems(xt);
    for (int64_t e = 0; e < total; e++, bcast_next(&it)) acc[it.off[0]] += x[e];
    float *y = out_v(c, 0);
    for (int64_t i = 0; i < n_out; i++) y[i] = (float)(acc[i] / (double)count);
    rlt_free(acc);
    return RLT_STATUS_OK;
}

/* ---- dense ---------------------------------------------------------------------- */

static rlt_status ev_gemm(ectx *c)
{
    const rlt_graph_tensor *at = in_t(c, 0), *bt = in_t(c, 1), *ct = in_t(c, 2), *yt = out_t(c, 0);
    for (int i = 0; i < 3; i++)
        if (in_t(c, i)) TRY(need_f32(c, in_t(c, i)));
    if (at->rank != 2 || bt->rank != 2 || yt->rank != 2) return BAD("A and B must be matrices");
    bool ta = attr_i(c, "transA", 0) != 0, tb = attr_i(c, "transB", 0) != 0;
    double alpha = attr_f(c, "alpha", 1.0), beta = attr_f(c, "beta", 1.0);
    int64_t M = at->dims[ta ? 1 : 0], K = at->dims[ta ? 0 : 1], N = bt->dims[tb ? 0 : 1];
    if (bt->dims[tb ? 1 : 0] != K || yt->dims[0] != M || yt->dims[1] != N) return BAD("A and B do not fit");
    const float *a = in_v(c, 0), *b = in_v(c, 1), *cv = ct ? in_v(c, 2) : NULL;
    int64_t c0 = 0, c1 = 0; /* C's strides over [M, N] (0: broadcast) */
    if (ct) {
        if (ct->rank > 2) return BAD("C has rank %d", ct->rank);
        int64_t d0 = ct->rank == 2 ? ct->dims[0] : 1, d1 = ct->rank >= 1 ? ct->dims[ct->rank - 1] : 1;
        if ((d0 != 1 && d0 != M) || (d1 != 1 && d1 != N)) return BAD("C does not broadcast to [M, N]");
        c0 = d0 == 1 ? 0 : d1;
        c1 = d1 == 1 ? 0 : 1;
    }
    float *y = out_v(c, 0);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double acc = 0.0;
            for (int64_t k = 0; k < K; k++)
                acc += (double)a[ta ? k * M + i : i * K + k] * (double)b[tb ? j * K + k : k * N + j];
            double r = alpha * acc;
            if (cv) r += beta * (double)cv[i * c0 + j * c1];
            y[i * N + j] = (float)r;
        }
    return RLT_STATUS_OK;
}

static rlt_status ev_matmul(ectx *c)
{
    const rlt_graph_tensor *at = in_t(c, 0), *bt = in_t(c, 1), *yt = out_t(c, 0);
    TRY(need_f32(c, at));
    TRY(need_f32(c, bt));
    if (at->rank < 1 || bt->rank < 1) return BAD("inputs must have rank >= 1");
    /* 1-D operands promoted: A [K] -> [1, K], B [K] -> [K, 1]. */
    int64_t ad[RLT_GRAPH_MAX_RANK + 1], bd[RLT_GRAPH_MAX_RANK + 1];
    int ar = at->rank, br = bt->rank;
    memcpy(ad, at->dims, sizeof at->dims);
    memcpy(bd, bt->dims, sizeof bt->dims);
    if (ar == 1) {
        ad[1] = ad[0];
        ad[0] = 1;
        ar = 2;
    }
    if (br == 1) {
        bd[1] = 1;
        br = 2;
    }
    int64_t M = ad[ar - 2], K = ad[ar - 1], N = bd[br - 1];
    if (bd[br - 2] != K) return BAD("A and B do not fit");
    int nb = RLT_MAX(ar, br) - 2;
    if (nb > RLT_GRAPH_MAX_RANK) return BAD("too many batch dimensions");
    /* The batch dimensions as a broadcast over A's and B's matrices. */
    rlt_graph_tensor bshape = {.rank = nb}, abatch = {.rank = ar - 2}, bbatch = {.rank = br - 2};
    for (int i = 0; i < nb; i++) {
        int ia = i - (nb - (ar - 2)), ib = i - (nb - (br - 2));
        int64_t da = ia >= 0 ? ad[ia] : 1, db = ib >= 0 ? bd[ib] : 1;
        if (da != db && da != 1 && db != 1) return BAD("batch dimensions do not broadcast");
        bshape.dims[i] = da == 1 ? db : da;
    }
    memcpy(abatch.dims, ad, (size_t)(ar - 2) * sizeof *ad);
    memcpy(bbatch.dims, bd, (size_t)(br - 2) * sizeof *bd);
    int64_t n_batch = n_elems(&bshape);
    if (n_elems(yt) != n_batch * M * N) return BAD("the output does not fit the inputs");
    bcast it;
    TRY(bcast_init(c, &it, &bshape, 2, (const rlt_graph_tensor *[]){&abatch, &bbatch}));
    const float *a = in_v(c, 0), *b = in_v(c, 1);
    float *y = out_v(c, 0);
    for (int64_t p = 0; p < n_batch; p++, bcast_next(&it)) {
        const float *ap = a + it.off[0] * M * K, *bp = b + it.off[1] * K * N;
        float *yp = y + p * M * N;
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double acc = 0.0;
                for (int64_t k = 0; k < K; k++) acc += (double)ap[i * K + k] * (double)bp[k * N + j];
                yp[i * N + j] = (float)acc;
            }
    }
    return RLT_STATUS_OK;
}

/* ---- data movement ----------------------------------------------------------------- */

static rlt_status ev_transpose(ectx *c)
{
    const rlt_graph_tensor *xt = in_t(c, 0), *yt = out_t(c, 0);
    int n;
    const int64_t *pa = attr_ints(c, "perm", &n);
    int perm[RLT_GRAPH_MAX_RANK];
    if (pa && n != xt->rank) return BAD("perm has %d values; the input has rank %d", n, xt->rank);
    for (int i = 0; i < xt->rank; i++) {
        perm[i] = pa ? (int)pa[i] : xt->rank - 1 - i;
        if (perm[i] < 0 || perm[i] >= xt->rank || yt->dims[i] != xt->dims[perm[i]]) return BAD("perm does not fit");
    }
    int64_t xs[RLT_GRAPH_MAX_RANK];
    strides_of(xt->rank, xt->dims, xs);
    bcast it = {.rank = yt->rank, .n_ops = 1};
    memcpy(it.dims, yt->dims, sizeof it.dims);
    for (int i = 0; i < yt->rank; i++) it.strides[0][i] = xs[perm[i]];
    size_t es = rlt_dtype_size(xt->dtype);
    const char *x = in_v(c, 0);
    char *y = out_v(c, 0);
    int64_t total = n_elems(yt);
    for (int64_t e = 0; e < total; e++, bcast_next(&it)) memcpy(y + e * (int64_t)es, x + it.off[0] * (int64_t)es, es);
    return RLT_STATUS_OK;
}

static rlt_status ev_concat(ectx *c)
{
    const rlt_graph_tensor *yt = out_t(c, 0);
    int axis = 0;
    TRY(axis_get(c, attr_i(c, "axis", 0), yt->rank, false, &axis));
    size_t es = rlt_dtype_size(yt->dtype);
    int64_t outer = 1, inner = (int64_t)es;
    for (int d = 0; d < axis; d++) outer *= yt->dims[d];
    for (int d = axis + 1; d < yt->rank; d++) inner *= yt->dims[d];
    int64_t sum = 0;
    for (int i = 0; i < c->node->n_inputs; i++) {
        const rlt_graph_tensor *t = in_t(c, i);
        if (!t || t->dtype != yt->dtype || t->rank != yt->rank) return BAD("input %d does not fit the output", i);
        sum += t->dims[axis];
    }
    if (sum != yt->dims[axis]) return BAD("the inputs do not add up to the output");
    char *dst = out_v(c, 0);
    for (int64_t b = 0; b < outer; b++)
        for (int i = 0; i < c->node->n_inputs; i++) {
            int64_t chunk = in_t(c, i)->dims[axis] * inner;
            memcpy(dst, (const char *)in_v(c, i) + b * chunk, (size_t)chunk);
            dst += chunk;
        }
    return RLT_STATUS_OK;
}

static rlt_status ev_split(ectx *c)
{
    const rlt_graph_tensor *xt = in_t(c, 0);
    int axis = 0;
    TRY(axis_get(c, attr_i(c, "axis", 0), xt->rank, false, &axis));
    size_t es = rlt_dtype_size(xt->dtype);
    int64_t outer = 1, inner = (int64_t)es, sum = 0;
    for (int d = 0; d < axis; d++) outer *= xt->dims[d];
    for (int d = axis + 1; d < xt->rank; d++) inner *= xt->dims[d];
    /* The outputs' shapes hold the sizes (inference worked them out). */
    for (int o = 0; o < c->node->n_outputs; o++) {
        const rlt_graph_tensor *t = out_t(c, o);
        if (!t || t->rank != xt->rank) return BAD("output %d is left out or does not fit", o);
        sum += t->dims[axis];
    }
    if (sum != xt->dims[axis]) return BAD("the outputs do not add up to the input");
    const char *x = in_v(c, 0);
    for (int64_t b = 0; b < outer; b++)
        for (int o = 0; o < c->node->n_outputs; o++) {
            int64_t chunk = out_t(c, o)->dims[axis] * inner;
            memcpy((char *)out_v(c, o) + b * chunk, x, (size_t)chunk);
            x += chunk;
        }
    return RLT_STATUS_OK;
}

/* The constant 1-D integer input `i` (at most RLT_GRAPH_MAX_RANK values). */
static rlt_status const_ints(const ectx *c, int i, int *n, int64_t *vals)
{
    const rlt_graph_tensor *t = in_t(c, i);
    const void *v = in_v(c, i);
    if (!t->data) return BAD("input %d ('%s') is not a constant", i, t->name);
    if (t->dtype != RLT_DTYPE_INT64 && t->dtype != RLT_DTYPE_INT32) return BAD("input %d ('%s') is not integer", i, t->name);
    int64_t count = n_elems(t);
    if (count > RLT_GRAPH_MAX_RANK) return BAD("input %d ('%s') has too many values", i, t->name);
    *n = (int)count;
    for (int k = 0; k < *n; k++) vals[k] = ld_i(t->dtype, v, k);
    return RLT_STATUS_OK;
}

static rlt_status ev_slice(ectx *c)
{
    const rlt_graph_tensor *xt = in_t(c, 0), *yt = out_t(c, 0);
    int r = xt->rank;
    int64_t starts[RLT_GRAPH_MAX_RANK], ends[RLT_GRAPH_MAX_RANK], axes[RLT_GRAPH_MAX_RANK], steps[RLT_GRAPH_MAX_RANK];
    int n_starts = 0, n_ends = 0, n_axes = -1, n_steps = -1;
    if (c->g->opset < 10) {
        const int64_t *s = attr_ints(c, "starts", &n_starts), *e = attr_ints(c, "ends", &n_ends), *a;
        if (!s || !e || n_starts > r || n_ends > r) return BAD("attributes starts and ends do not fit");
        memcpy(starts, s, (size_t)n_starts * sizeof *s);
        memcpy(ends, e, (size_t)n_ends * sizeof *e);
        if ((a = attr_ints(c, "axes", &n_axes)) != NULL) {
            if (n_axes > r) return BAD("attribute axes does not fit");
            memcpy(axes, a, (size_t)n_axes * sizeof *a);
        } else {
            n_axes = -1;
        }
    } else {
        if (!in_t(c, 1) || !in_t(c, 2)) return BAD("inputs starts and ends are required");
        TRY(const_ints(c, 1, &n_starts, starts));
        TRY(const_ints(c, 2, &n_ends, ends));
        if (in_t(c, 3)) TRY(const_ints(c, 3, &n_axes, axes));
        if (in_t(c, 4)) TRY(const_ints(c, 4, &n_steps, steps));
    }
    if (n_ends != n_starts || (n_axes >= 0 && n_axes != n_starts) || (n_steps >= 0 && n_steps != n_starts))
        return BAD("starts, ends, axes and steps differ in length");
    int64_t o_start[RLT_GRAPH_MAX_RANK], o_step[RLT_GRAPH_MAX_RANK];
    for (int d = 0; d < r; d++) {
        o_start[d] = 0;
        o_step[d] = 1;
    }
    for (int i = 0; i < n_starts; i++) {
        int axis = 0;
        TRY(axis_get(c, n_axes >= 0 ? axes[i] : i, r, false, &axis));
        int64_t dim = xt->dims[axis], step = n_steps >= 0 ? steps[i] : 1, s = starts[i];
        if (step == 0) return BAD("a step is 0");
        if (s < 0) s += dim;
        if (step > 0) s = s < 0 ? 0 : (s > dim ? dim : s);
        else s = s < 0 ? -1 : (s > dim - 1 ? dim - 1 : s);
        o_start[axis] = s;
        o_step[axis] = step;
    }
    /* The output's shape holds the lengths; check every index lands inside. */
    if (yt->rank != r) return BAD("the output does not fit the input");
    for (int d = 0; d < r; d++) {
        if (yt->dims[d] == 0) continue;
        int64_t last = o_start[d] + (yt->dims[d] - 1) * o_step[d];
        if (o_start[d] < 0 || o_start[d] >= xt->dims[d] || last < 0 || last >= xt->dims[d])
            return BAD("the slice of dimension %d leaves the input", d);
    }
    int64_t xs[RLT_GRAPH_MAX_RANK];
    strides_of(r, xt->dims, xs);
    bcast it = {.rank = r, .n_ops = 1};
    memcpy(it.dims, yt->dims, sizeof it.dims);
    int64_t base = 0;
    for (int d = 0; d < r; d++) {
        it.strides[0][d] = o_step[d] * xs[d];
        base += o_start[d] * xs[d];
    }
    size_t es = rlt_dtype_size(xt->dtype);
    const char *x = in_v(c, 0);
    char *y = out_v(c, 0);
    int64_t total = n_elems(yt);
    for (int64_t e = 0; e < total; e++, bcast_next(&it))
        memcpy(y + e * (int64_t)es, x + (base + it.off[0]) * (int64_t)es, es);
    return RLT_STATUS_OK;
}

/* ---- Pad ----------------------------------------------------------------------------- */

typedef enum pad_mode { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE } pad_mode;

/* The input index that output index `o` of one dimension reads, or -1 for
 * the constant: the dimension keeps the input's [lo, lo + kept) (negative
 * pads crop the rest) after `before` padded ones. Reflect is numpy.pad's
 * (the edge not repeated; pads longer than the dimension reflect again,
 * with period 2 (kept - 1)). */
static int64_t pad_source(pad_mode mode, int64_t o, int64_t before, int64_t lo, int64_t kept)
{
    int64_t i = o - before;
    if (i >= 0 && i < kept) return lo + i;
    if (mode == PAD_CONSTANT || kept == 0) return -1;
    if (mode == PAD_EDGE || kept == 1) return lo + (i < 0 ? 0 : kept - 1);
    int64_t period = 2 * (kept - 1), m = i % period;
    if (m < 0) m += period;
    return lo + (m < kept ? m : period - m);
}

static rlt_status ev_pad(ectx *c)
{
    const rlt_graph_tensor *xt = in_t(c, 0), *yt = out_t(c, 0);
    int r = xt->rank, n = 0;
    const rlt_graph_attr *ma = rlt_graph_node_attr(c->node, "mode");
    const char *mode_s = ma && ma->kind == RLT_GRAPH_ATTR_STRING ? ma->s : "constant";
    pad_mode mode;
    if (strcmp(mode_s, "constant") == 0) mode = PAD_CONSTANT;
    else if (strcmp(mode_s, "reflect") == 0) mode = PAD_REFLECT;
    else if (strcmp(mode_s, "edge") == 0) mode = PAD_EDGE;
    else return BAD("mode '%s' is not one of constant, reflect, edge", mode_s);
    /* The pads, and the constant as bytes of the input's type. */
    int64_t pads[2 * RLT_GRAPH_MAX_RANK];
    unsigned char fill[8] = {0};
    size_t es = rlt_dtype_size(xt->dtype);
    if (c->g->opset < 11) {
        const int64_t *p = attr_ints(c, "pads", &n);
        if (!p || n != 2 * r) return BAD("attribute pads does not fit input '%s'", xt->name);
        memcpy(pads, p, (size_t)n * sizeof *p);
        st_f(xt->dtype, fill, 0, attr_f(c, "value", 0.0));
    } else {
        const rlt_graph_tensor *pt = in_t(c, 1), *vt = in_t(c, 2);
        if (!pt || (pt->dtype != RLT_DTYPE_INT64 && pt->dtype != RLT_DTYPE_INT32) || n_elems(pt) != 2 * r)
            return BAD("input 1 (the pads) does not fit input '%s'", xt->name);
        n = 2 * r;
        for (int k = 0; k < n; k++) pads[k] = ld_i(pt->dtype, in_v(c, 1), k);
        if (vt) {
            if (vt->dtype != xt->dtype || n_elems(vt) != 1)
                return BAD("input 2 ('%s', the constant_value) must be a scalar of the input's type", vt->name);
            memcpy(fill, in_v(c, 2), es);
        }
    }
    if (yt->dtype != xt->dtype || yt->rank != r) return BAD("the output does not fit input '%s'", xt->name);
    if (r == 0) {
        memcpy(out_v(c, 0), in_v(c, 0), es);
        return RLT_STATUS_OK;
    }
    /* Per output dimension, where each index reads (pad_source). */
    int64_t n_map = 0, before[RLT_GRAPH_MAX_RANK], lo[RLT_GRAPH_MAX_RANK], kept[RLT_GRAPH_MAX_RANK];
    for (int d = 0; d < r; d++) {
        int64_t pb = pads[d], pe = pads[r + d];
        before[d] = RLT_MAX(pb, 0);
        lo[d] = RLT_MAX(-pb, 0);
        kept[d] = xt->dims[d] - lo[d] - RLT_MAX(-pe, 0);
        if (kept[d] < 0 || yt->dims[d] != before[d] + kept[d] + RLT_MAX(pe, 0) ||
            (mode != PAD_CONSTANT && kept[d] == 0 && yt->dims[d] > 0))
            return BAD("the pads of dimension %d (%" PRId64 " and %" PRId64 ") do not fit input '%s'", d, pb, pe,
                       xt->name);
        n_map += yt->dims[d];
    }
    int64_t *map = rlt_malloc((size_t)n_map * sizeof *map + 1), *maps[RLT_GRAPH_MAX_RANK];
    if (!map) return efail(c, RLT_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int d = 0; d < r; d++) {
        maps[d] = d ? maps[d - 1] + yt->dims[d - 1] : map;
        for (int64_t o = 0; o < yt->dims[d]; o++) maps[d][o] = pad_source(mode, o, before[d], lo[d], kept[d]);
    }
    /* Row by row over the last dimension: the kept run is one copy. */
    int64_t xs[RLT_GRAPH_MAX_RANK], idx[RLT_GRAPH_MAX_RANK] = {0};
    strides_of(r, xt->dims, xs);
    int64_t len = yt->dims[r - 1], n_rows = len > 0 ? n_elems(yt) / len : 0;
    const char *x = in_v(c, 0);
    char *y = out_v(c, 0);
    const int64_t *last = maps[r - 1];
    for (int64_t row = 0; row < n_rows; row++) {
        char *yr = y + row * len * (int64_t)es;
        int64_t base = 0;
        bool is_fill = false;
        for (int d = 0; d < r - 1; d++) {
            if (maps[d][idx[d]] < 0) is_fill = true;
            else base += maps[d][idx[d]] * xs[d];
        }
        /* Output [run0, run1) of the row is the input's kept run. */
        int64_t run0 = is_fill ? len : before[r - 1], run1 = is_fill ? len : before[r - 1] + kept[r - 1];
        if (run1 > run0)
            memcpy(yr + run0 * (int64_t)es, x + (base + lo[r - 1]) * (int64_t)es, (size_t)(run1 - run0) * es);
        for (int64_t o = 0; o < len; o++) {
            if (o >= run0 && o < run1) continue;
            const void *src = is_fill || last[o] < 0 ? (const void *)fill : x + (base + last[o]) * (int64_t)es;
            memcpy(yr + o * (int64_t)es, src, es);
        }
        for (int d = r - 2; d >= 0; d--) {
            if (++idx[d] < yt->dims[d]) break;
            idx[d] = 0;
        }
    }
    rlt_free(map);
    return RLT_STATUS_OK;
}

static rlt_status ev_gather(ectx *c)
{
    const rlt_graph_tensor *xt = in_t(c, 0), *itt = in_t(c, 1), *yt = out_t(c, 0);
    if (itt->dtype != RLT_DTYPE_INT64 && itt->dtype != RLT_DTYPE_INT32) return BAD("indices must be int64 or int32");
    int axis = 0;
    TRY(axis_get(c, attr_i(c, "axis", 0), xt->rank, false, &axis));
    size_t es = rlt_dtype_size(xt->dtype);
    int64_t outer = 1, inner = (int64_t)es, n_ind = n_elems(itt), dim = xt->dims[axis];
    for (int d = 0; d < axis; d++) outer *= xt->dims[d];
    for (int d = axis + 1; d < xt->rank; d++) inner *= xt->dims[d];
    if (n_elems(yt) * (int64_t)es != outer * n_ind * inner) return BAD("the output does not fit");
    const void *ind = in_v(c, 1);
    for (int64_t i = 0; i < n_ind; i++) {
        int64_t v = ld_i(itt->dtype, ind, i);
        if (v < -dim || v >= dim)
            return BAD("index %" PRId64 " (element %" PRId64 " of '%s') is out of range for dimension %d of '%s' (size %" PRId64
                       ")", v, i, itt->name, axis, xt->name, dim);
    }
    const char *x = in_v(c, 0);
    char *dst = out_v(c, 0);
    for (int64_t b = 0; b < outer; b++)
        for (int64_t i = 0; i < n_ind; i++) {
            int64_t v = ld_i(itt->dtype, ind, i);
            if (v < 0) v += dim;
            memcpy(dst, x + (b * dim + v) * inner, (size_t)inner);
            dst += inner;
        }
    return RLT_STATUS_OK;
}

/* ---- constants ------------------------------------------------------------------- */

static rlt_status ev_constant(ectx *c)
{
    const rlt_graph_tensor *yt = out_t(c, 0);
    if (c->node->n_attrs != 1) return BAD("needs exactly one value attribute");
    const rlt_graph_attr *a = &c->node->attrs[0];
    void *y = out_v(c, 0);
    int64_t n = n_elems(yt);
    if (a->kind == RLT_GRAPH_ATTR_TENSOR) {
        if (a->tensor->dtype != yt->dtype || n_elems(a->tensor) != n) return BAD("the value does not fit the output");
        memcpy(y, a->tensor->data, (size_t)n * rlt_dtype_size(yt->dtype));
        return RLT_STATUS_OK;
    }
    bool is_list = a->kind == RLT_GRAPH_ATTR_INTS || a->kind == RLT_GRAPH_ATTR_FLOATS;
    if ((is_list ? a->n_values : 1) != n) return BAD("the value does not fit the output");
    for (int64_t i = 0; i < n; i++) {
        if (a->kind == RLT_GRAPH_ATTR_FLOAT) st_f(yt->dtype, y, i, a->f);
        else if (a->kind == RLT_GRAPH_ATTR_FLOATS) st_f(yt->dtype, y, i, a->floats[i]);
        else if (a->kind == RLT_GRAPH_ATTR_INT) st_i(yt->dtype, y, i, a->i);
        else st_i(yt->dtype, y, i, a->ints[i]);
    }
    return RLT_STATUS_OK;
}

static rlt_status ev_constant_of_shape(ectx *c)
{
    const rlt_graph_tensor *yt = out_t(c, 0);
    const rlt_graph_attr *a = rlt_graph_node_attr(c->node, "value");
    if (!a) return RLT_STATUS_OK; /* zeros: outputs start zeroed */
    if (a->kind != RLT_GRAPH_ATTR_TENSOR || a->tensor->dtype != yt->dtype || n_elems(a->tensor) != 1)
        return BAD("attribute value must hold one element of the output's type");
    size_t es = rlt_dtype_size(yt->dtype);
    int64_t n = n_elems(yt);
    char *y = out_v(c, 0);
    for (int64_t i = 0; i < n; i++) memcpy(y + i * (int64_t)es, a->tensor->data, es);
    return RLT_STATUS_OK;
}

static rlt_status ev_shape(ectx *c)
{
    const rlt_graph_tensor *xt = in_t(c, 0), *yt = out_t(c, 0);
    int64_t r = xt->rank, start = attr_i(c, "start", 0), end = attr_i(c, "end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = start < 0 ? 0 : (start > r ? r : start);
    end = end < 0 ? 0 : (end > r ? r : end);
    int64_t n = end > start ? end - start : 0;
    if (yt->dtype != RLT_DTYPE_INT64 || n_elems(yt) != n) return BAD("the output does not fit");
    for (int64_t i = 0; i < n; i++) ((int64_t *)out_v(c, 0))[i] = xt->dims[start + i];
    return RLT_STATUS_OK;
}

/* ---- the driver -------------------------------------------------------------------- */

typedef rlt_status (*eval_fn)(ectx *c);

static const struct {
    const char *op_type;
    eval_fn fn;
} evals[] = {
    {"Add", ev_binary},
    {"AveragePool", ev_pool},
    {"BatchNormalization", ev_batchnorm},
    {"Cast", ev_cast},
    {"Clip", ev_clip},
    {"Concat", ev_concat},
    {"Constant", ev_constant},
    {"ConstantOfShape", ev_constant_of_shape},
    {"Conv", ev_conv},
    {"Div", ev_binary},
    {"Dropout", ev_dropout},
    {"Erf", ev_unary_float},
    {"Expand", ev_expand},
    {"Flatten", ev_copy},
    {"Gather", ev_gather},
    {"Gelu", ev_unary_float},
    {"Gemm", ev_gemm},
    {"GlobalAveragePool", ev_global_pool},
    {"Identity", ev_copy},
    {"LayerNormalization", ev_layernorm},
    {"LeakyRelu", ev_unary_float},
    {"MatMul", ev_matmul},
    {"MaxPool", ev_pool},
    {"Mul", ev_binary},
    {"Pad", ev_pad},
    {"Pow", ev_binary},
    {"ReduceMean", ev_reduce_mean},
    {"Relu", ev_relu},
    {"Reshape", ev_copy},
    {"Shape", ev_shape},
    {"Sigmoid", ev_unary_float},
    {"Slice", ev_slice},
    {"Softmax", ev_softmax},
    {"Split", ev_split},
    {"Sqrt", ev_unary_float},
    {"Squeeze", ev_copy},
    {"Sub", ev_binary},
    {"Tanh", ev_unary_float},
    {"Transpose", ev_transpose},
    {"Unsqueeze", ev_copy},
    {"Where", ev_where},
};

static eval_fn eval_find(const char *op_type)
{
    for (size_t i = 0; i < RLT_ARRAY_LEN(evals); i++)
        if (strcmp(evals[i].op_type, op_type) == 0) return evals[i].fn;
    return NULL;
}

static size_t tensor_bytes(const rlt_graph_tensor *t) { return (size_t)n_elems(t) * rlt_dtype_size(t->dtype); }

bool rlt_graph_can_eval(const char *op_type) { return eval_find(op_type) != NULL; }

rlt_status rlt_graph_eval_node(const rlt_graph *g, int node, void **vals, rlt_diag *diag)
{
    const rlt_graph_node *n = &g->nodes[node];
    eval_fn fn = eval_find(n->op_type);
    if (!fn)
        return rlt_graph_node_fail(g, n, diag, RLT_STATUS_INVALID_ARGUMENT, "op %s cannot be evaluated", n->op_type);
    for (int o = 0; o < n->n_outputs; o++) {
        int t = n->outputs[o];
        if (t >= 0) memset(vals[t], 0, tensor_bytes(&g->tensors[t]));
    }
    ectx c = {.g = g, .node = n, .vals = vals, .diag = diag};
    return fn(&c);
}

rlt_status rlt_graph_eval(const rlt_graph *g, int n_inputs, const void *const *inputs, int n_outputs, void **outputs,
                          rlt_diag *diag)
{
    if (n_outputs > 0 && !outputs) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "no output array given");
    for (int i = 0; i < n_outputs; i++) outputs[i] = NULL;
    if (n_inputs != g->n_inputs)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "the graph has %d inputs; %d were given", g->n_inputs,
                        n_inputs);
    if (n_outputs != g->n_outputs)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "the graph has %d outputs; room for %d was given",
                        g->n_outputs, n_outputs);
    for (int i = 0; i < n_inputs; i++)
        if (!inputs || !inputs[i])
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "input %d ('%s') is NULL", i,
                            g->tensors[g->inputs[i]].name);
    rlt_status st = RLT_STATUS_OK;
    int nt = g->n_tensors;
    void **vals = rlt_calloc((size_t)nt + 1, sizeof *vals);
    bool *owned = rlt_calloc((size_t)nt + 1, sizeof *owned);
    int *last_use = rlt_malloc(((size_t)nt + 1) * sizeof *last_use);
    if (!vals || !owned || !last_use) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory evaluating the graph");
        goto cleanup;
    }
    for (int t = 0; t < nt; t++) {
        last_use[t] = -1;
        vals[t] = g->tensors[t].data;
    }
    for (int i = 0; i < n_inputs; i++) vals[g->inputs[i]] = (void *)inputs[i];
    for (int n = 0; n < g->n_nodes; n++) {
        const rlt_graph_node *node = &g->nodes[n];
        if (node->is_removed) continue;
        for (int i = 0; i < node->n_inputs; i++)
            if (node->inputs[i] >= 0) last_use[node->inputs[i]] = n;
    }
    for (int i = 0; i < g->n_outputs; i++) last_use[g->outputs[i]] = INT_MAX;

    for (int n = 0; n < g->n_nodes; n++) {
        const rlt_graph_node *node = &g->nodes[n];
        if (node->is_removed) continue;
        ectx c = {.g = g, .node = node, .vals = vals, .diag = diag};
        eval_fn fn = eval_find(node->op_type);
        if (!fn) {
            st = rlt_graph_node_fail(g, node, diag, RLT_STATUS_INVALID_ARGUMENT, "op %s cannot be evaluated",
                                     node->op_type);
            goto cleanup;
        }
        bool all_const = true;
        for (int o = 0; o < node->n_outputs; o++)
            if (node->outputs[o] >= 0 && !g->tensors[node->outputs[o]].data) all_const = false;
        if (all_const) continue; /* folded already */
        for (int i = 0; i < node->n_inputs; i++) {
            int t = node->inputs[i];
            if (t < 0) continue;
            if (!g->tensors[t].has_shape || !vals[t]) {
                st = rlt_graph_node_fail(g, node, diag, RLT_STATUS_INVALID_ARGUMENT,
                                         "input %d ('%s') has no value yet: the graph is not sorted or not inferred",
                                         i, g->tensors[t].name);
                goto cleanup;
            }
        }
        if (node->n_outputs < 1 || node->outputs[0] < 0) {
            st = rlt_graph_node_fail(g, node, diag, RLT_STATUS_INVALID_ARGUMENT, "output 0 is left out");
            goto cleanup;
        }
        for (int o = 0; o < node->n_outputs; o++) {
            int t = node->outputs[o];
            if (t < 0) continue;
            if (!g->tensors[t].has_shape || vals[t]) {
                st = rlt_graph_node_fail(g, node, diag, RLT_STATUS_INVALID_ARGUMENT,
                                         "output %d ('%s') has no shape or is written twice", o, g->tensors[t].name);
                goto cleanup;
            }
            vals[t] = rlt_calloc(tensor_bytes(&g->tensors[t]) + 1, 1);
            if (!vals[t]) {
                st = rlt_graph_node_fail(g, node, diag, RLT_STATUS_OUT_OF_MEMORY,
                                         "out of memory for output '%s' (%zu bytes)", g->tensors[t].name,
                                         tensor_bytes(&g->tensors[t]));
                goto cleanup;
            }
            owned[t] = true;
        }
        if ((st = fn(&c)) != RLT_STATUS_OK) goto cleanup;
        /* Free what no later node reads: inputs read for the last time,
         * and outputs nothing reads (a Dropout's mask). */
        for (int k = 0; k < node->n_inputs + node->n_outputs; k++) {
            int t = k < node->n_inputs ? node->inputs[k] : node->outputs[k - node->n_inputs];
            if (t >= 0 && owned[t] && last_use[t] <= n) {
                rlt_free(vals[t]);
                vals[t] = NULL;
                owned[t] = false;
            }
        }
    }

    for (int i = 0; i < n_outputs; i++) {
        int t = g->outputs[i];
        if (!vals[t]) {
            st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "output %d ('%s') is computed by no node", i,
                          g->tensors[t].name);
            goto cleanup;
        }
        if (owned[t]) { /* hand the buffer over */
            outputs[i] = vals[t];
            owned[t] = false;
            continue;
        }
        size_t bytes = tensor_bytes(&g->tensors[t]);
        outputs[i] = rlt_malloc(bytes + 1);
        if (!outputs[i]) {
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory copying output '%s'", g->tensors[t].name);
            goto cleanup;
        }
        memcpy(outputs[i], vals[t], bytes);
    }

cleanup:
    if (vals)
        for (int t = 0; t < nt; t++)
            if (owned && owned[t]) rlt_free(vals[t]);
    if (st != RLT_STATUS_OK)
        for (int i = 0; i < n_outputs; i++) {
            /* An output handed over twice (the same tensor listed twice) is
             * freed once. */
            for (int j = i + 1; j < n_outputs; j++)
                if (outputs[j] == outputs[i]) outputs[j] = NULL;
            rlt_free(outputs[i]);
            outputs[i] = NULL;
        }
    rlt_free(last_use);
    rlt_free(owned);
    rlt_free(vals);
    return st;
}
