/*
 * ops.c - plans the fast implementations of a compiled network's other
 * nodes (ops.h): rlt_fast_op_create reads a node's attributes, checks its
 * shapes and types, collapses its index spaces and picks its loops, once,
 * into a plan (ops_run.h) that ops_run.c runs with contiguous loops.
 *
 * The plans, one per kind of op:
 * - unary: n elements in, n out (the activations; Pow by a constant scalar);
 * - broadcast: elementwise binary ops, whose shapes collapse (dimensions of
 *   size 1 dropped, neighbours that walk both operands alike merged) to an
 *   odometer over outer dimensions and an inner loop in which each operand
 *   is either contiguous or one value;
 * - pool: MaxPool / AveragePool in 1-D or 2-D, output row by output row:
 *   the outputs whose windows lie inside the input's columns reduce the
 *   kernel rows into a row on the stack, then across the window, with no
 *   bounds checks; the edges run the evaluator's checked loop;
 * - rows: Softmax, LayerNormalization, ReduceMean and GlobalAveragePool,
 *   which reduce over a contiguous block (Softmax also over a strided axis);
 * - copy: Transpose and Slice as one strided copy, collapsed like the
 *   broadcast, whose inner loop is a memcpy (runs), a tiled transpose (the
 *   input's contiguous dimension is not the output's) or a gather;
 * - parts: Concat and Split, memcpy of chunks;
 * - bytes: the reshapes, Identity, Dropout, Cast to the same type.
 *
 * Everything an op needs lives in one allocation (the struct and its
 * tables, which the plan names by offsets), so create has one point of
 * failure and destroy one free, and the block can be written out as it is
 * (an exported network's weights file holds its fast ops).
 *
 * Create also picks the build of the compute loops (baseline, AVX2 or
 * AVX-512F) the CPU runs best, within the plan's own limit (isa_max) and
 * the test hook's.
 */
#include "net/ops.h"

#include "net/ops_run.h"

#include <float.h>
#include <math.h>
#include <string.h>

#define MAX_RANK RLT_GRAPH_MAX_RANK
_Static_assert(RLT_GRAPH_MAX_RANK == RLT_FAST_OP_MAX_RANK, "a plan holds any graph tensor's dimensions");

/* ---- graph access ---------------------------------------------------------------- */

static const rlt_graph_tensor *tin(const rlt_graph *g, const rlt_graph_node *n, int i)
{
    if (i >= n->n_inputs || n->inputs[i] < 0) return NULL;
    return &g->tensors[n->inputs[i]];
}

static const rlt_graph_tensor *tout(const rlt_graph *g, const rlt_graph_node *n, int i)
{
    if (i >= n->n_outputs || n->outputs[i] < 0) return NULL;
    return &g->tensors[n->outputs[i]];
}

static bool is_f32(const rlt_graph_tensor *t) { return t && t->dtype == RLT_DTYPE_FLOAT32; }

static int64_t n_elems(const rlt_graph_tensor *t) { return rlt_graph_tensor_n_elems(t); }

static bool axis_norm(int64_t axis, int rank, int *out)
{
    if (axis < -(int64_t)rank || axis >= rank) return false;
    *out = (int)(axis < 0 ? axis + rank : axis);
    return true;
}

static void strides_of(int rank, const int64_t *dims, int64_t *strides)
{
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= dims[i];
    }
}

/* Value i of a constant integer tensor. */
static int64_t const_int(const rlt_graph_tensor *t, int64_t i)
{
    return t->dtype == RLT_DTYPE_INT64 ? ((const int64_t *)t->data)[i] : ((const int32_t *)t->data)[i];
}

static bool is_const_ints(const rlt_graph_tensor *t)
{
    return t && t->data && (t->dtype == RLT_DTYPE_INT64 || t->dtype == RLT_DTYPE_INT32) && n_elems(t) <= MAX_RANK;
}

/* Every input and output present has a shape; no output is a constant
 * (folded) or missing its first. */
static bool io_ok(const rlt_graph *g, const rlt_graph_node *n)
{
    if (n->n_inputs < 1 || n->n_outputs < 1 || n->outputs[0] < 0 || n->inputs[0] < 0) return false;
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] >= 0 && !g->tensors[n->inputs[i]].has_shape) return false;
    for (int i = 0; i < n->n_outputs; i++) {
        const rlt_graph_tensor *t = tout(g, n, i);
        if (t && (!t->has_shape || t->data)) return false;
    }
    return true;
}

/* ---- building: one allocation per op ------------------------------------------------ */

static int isa_limit = FOP_ISA_COUNT - 1;

void rlt_fast_op_limit_isa(const char *isa)
{
    isa_limit = FOP_ISA_COUNT - 1;
    for (int i = 0; isa && i < FOP_ISA_COUNT; i++)
        if (strcmp(isa, rlt_fast_op_isa_name(i)) == 0) isa_limit = i;
}

const char *rlt_fast_op_isa(const rlt_fast_op *op) { return rlt_fast_op_isa_name(op->isa); }

/* A zeroed plan of `kind` for node n with extra_bytes of tables, running
 * the best build the CPU has within the test hook's limit (a planner may
 * lower isa_max, then isa). NULL when out of memory. */
static rlt_fast_op *op_new(int kind, const rlt_graph_node *n, size_t extra_bytes)
{
    rlt_fast_op *op = rlt_calloc(1, sizeof *op + extra_bytes);
    if (!op) return NULL;
    op->layout = RLT_FAST_OP_LAYOUT;
    op->bytes = (int64_t)(sizeof *op + extra_bytes);
    op->kind = kind;
    op->isa_max = FOP_ISA_COUNT - 1;
    op->isa = RLT_MIN(rlt_fast_op_cpu_isa(), isa_limit);
    op->x = n->inputs[0];
    op->x2 = n->n_inputs > 1 ? n->inputs[1] : -1;
    op->y = n->outputs[0];
    op->y2 = n->n_outputs > 1 ? n->outputs[1] : -1;
    return op;
}

/* What the planners return: OK with *out set or left NULL (not covered),
 * or OUT_OF_MEMORY. */
#define NEW_OP(op, kind, extra_bytes)                                                                        \
    do {                                                                                                     \
        (op) = op_new((kind), n, (extra_bytes));                                                             \
        if (!(op)) return RLT_STATUS_OUT_OF_MEMORY;                                                          \
    } while (0)

/* Drops dimensions of size 1 and merges neighbours i, i+1 whose strides in
 * every one of n_ops operands satisfy s[i] == s[i+1] * dims[i+1]. At least
 * one dimension is kept (of size 1 when all were). */
static int collapse(int rank, int64_t *dims, int n_ops, int64_t (*strides)[MAX_RANK])
{
    int r = 0;
    for (int j = 0; j < rank; j++) {
        if (dims[j] == 1) continue;
        bool merge = r > 0;
        for (int k = 0; k < n_ops && merge; k++) merge = strides[k][r - 1] == strides[k][j] * dims[j];
        if (merge) {
            dims[r - 1] *= dims[j];
            for (int k = 0; k < n_ops; k++) strides[k][r - 1] = strides[k][j];
            continue;
        }
        dims[r] = dims[j];
        for (int k = 0; k < n_ops; k++) strides[k][r] = strides[k][j];
        r++;
    }
    if (r == 0) {
        dims[0] = 1;
        for (int k = 0; k < n_ops; k++) strides[k][0] = 1;
        r = 1;
    }
    return r;
}

/* ---- unary ---------------------------------------------------------------------- */

static rlt_status plan_unary(const rlt_graph *g, const rlt_graph_node *n, rlt_fast_op **out)
{
    const char *t = n->op_type;
    const rlt_graph_tensor *x = tin(g, n, 0), *y = tout(g, n, 0);
    if (!is_f32(x) || !is_f32(y) || n_elems(x) != n_elems(y) || n->n_outputs != 1) return RLT_STATUS_OK;
    int fn;
    float p0 = 0.0f, p1 = 0.0f;
    if (strcmp(t, "Relu") == 0) {
        fn = FOP_UN_RELU;
    } else if (strcmp(t, "Clip") == 0) {
        fn = FOP_UN_CLIP;
        if (g->opset < 11) {
            p0 = (float)rlt_graph_attr_float(n, "min", -FLT_MAX);
            p1 = (float)rlt_graph_attr_float(n, "max", FLT_MAX);
        } else {
            p0 = -INFINITY;
            p1 = INFINITY;
            for (int k = 1; k <= 2; k++) {
                const rlt_graph_tensor *b = tin(g, n, k);
                if (!b) continue;
                if (!is_f32(b) || !b->data || n_elems(b) != 1) return RLT_STATUS_OK;
                if (k == 1) p0 = ((const float *)b->data)[0];
                else p1 = ((const float *)b->data)[0];
            }
        }
    } else if (strcmp(t, "LeakyRelu") == 0) {
        fn = FOP_UN_LEAKY_RELU;
        p0 = (float)rlt_graph_attr_float(n, "alpha", 0.01);
    } else if (strcmp(t, "Sigmoid") == 0) {
        fn = FOP_UN_SIGMOID;
    } else if (strcmp(t, "Tanh") == 0) {
        fn = FOP_UN_TANH;
    } else if (strcmp(t, "Erf") == 0) {
        fn = FOP_UN_ERF;
    } else if (strcmp(t, "Sqrt") == 0) {
        fn = FOP_UN_SQRT;
    } else if (strcmp(t, "Gelu") == 0) {
        const rlt_graph_attr *a = rlt_graph_node_attr(n, "approximate");
        fn = a && a->kind == RLT_GRAPH_ATTR_STRING && strcmp(a->s, "tanh") == 0 ? FOP_UN_GELU_TANH : FOP_UN_GELU;
    } else { /* Pow by a constant scalar */
        const rlt_graph_tensor *e = tin(g, n, 1);
        if (!is_f32(e) || !e->data || n_elems(e) != 1) return RLT_STATUS_OK;
        p0 = ((const float *)e->data)[0];
        fn = p0 == 2.0f ? FOP_UN_SQUARE : p0 == 3.0f ? FOP_UN_CUBE : FOP_UN_POW;
    }
    rlt_fast_op *op;
    NEW_OP(op, FOP_UNARY, 0);
    op->fn = fn;
    op->n = n_elems(y);
    op->p0 = p0;
    op->p1 = p1;
    *out = op;
    return RLT_STATUS_OK;
}

/* ---- binary with broadcasting ------------------------------------------------------ */

static rlt_status plan_binary(const rlt_graph *g, const rlt_graph_node *n, rlt_fast_op **out)
{
    const rlt_graph_tensor *a = tin(g, n, 0), *b = tin(g, n, 1), *y = tout(g, n, 0);
    if (!is_f32(a) || !is_f32(b) || !is_f32(y) || n->n_outputs != 1) return RLT_STATUS_OK;
    const char *t = n->op_type;
    int fn = t[0] == 'A'   ? FOP_BIN_ADD
                   : t[0] == 'S' ? FOP_BIN_SUB
                   : t[0] == 'M' ? FOP_BIN_MUL
                   : t[0] == 'D' ? FOP_BIN_DIV
                                 : FOP_BIN_POW;
    if (fn == FOP_BIN_POW && b->data && n_elems(b) == 1 && n_elems(a) == n_elems(y)) return plan_unary(g, n, out);
    fop_bcast p = {.total = n_elems(y)};
    int64_t st[2][MAX_RANK] = {{0}};
    const rlt_graph_tensor *ops[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        const rlt_graph_tensor *o = ops[k];
        if (o->rank > y->rank) return RLT_STATUS_OK;
        int64_t s[MAX_RANK];
        strides_of(o->rank, o->dims, s);
        for (int i = 0; i < o->rank; i++) {
            int j = y->rank - o->rank + i;
            if (o->dims[i] != 1 && o->dims[i] != y->dims[j]) return RLT_STATUS_OK;
            st[k][j] = o->dims[i] == 1 ? 0 : s[i];
        }
    }
    memcpy(p.dims, y->dims, sizeof p.dims);
    p.rank = collapse(y->rank, p.dims, 2, st);
    memcpy(p.sa, st[0], sizeof p.sa);
    memcpy(p.sb, st[1], sizeof p.sb);
    /* After collapsing, an operand's inner stride is 1 (it spans the inner
     * dimension) or 0 (it is one value along it). */
    int in = p.rank - 1;
    if (p.sa[in] > 1 || p.sb[in] > 1) return RLT_STATUS_OK;
    rlt_fast_op *op;
    NEW_OP(op, FOP_BINARY, 0);
    op->fn = fn;
    op->u.bcast = p;
    *out = op;
    return RLT_STATUS_OK;
}

/* ---- pools ------------------------------------------------------------------------- */

/* The number of taps k in [0, K) with 0 <= start + k * d < in. */
static int64_t taps_inside(int64_t start, int64_t K, int64_t d, int64_t in)
{
    int64_t count = 0;
    for (int64_t k = 0; k < K; k++) {
        int64_t i = start + k * d;
        count += i >= 0 && i < in;
    }
    return count;
}

/* lanes > 0: the input and output in blocks of lanes channels (NCHWc). */
static rlt_status plan_pool_lanes(const rlt_graph *g, const rlt_graph_node *n, int64_t lanes, rlt_fast_op **out)
{
    const rlt_graph_tensor *x = tin(g, n, 0), *y = tout(g, n, 0);
    bool is_max = strcmp(n->op_type, "MaxPool") == 0;
    if (!is_f32(x) || !is_f32(y) || (x->rank != 3 && x->rank != 4) || y->rank != x->rank) return RLT_STATUS_OK;
    if (lanes && (x->rank != 4 || lanes > RLT_FAST_OP_MAX_LANES || x->dims[1] % lanes != 0)) return RLT_STATUS_OK;
    if (tout(g, n, 1)) return RLT_STATUS_OK; /* Indices */
    if (y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1]) return RLT_STATUS_OK;
    int n_sp = x->rank - 2, n_k, n_s, n_d, n_p;
    const int64_t *ks = rlt_graph_attr_ints(n, "kernel_shape", &n_k), *s = rlt_graph_attr_ints(n, "strides", &n_s),
                  *d = rlt_graph_attr_ints(n, "dilations", &n_d), *pads = rlt_graph_attr_ints(n, "pads", &n_p);
    if (!ks || n_k != n_sp || (s && n_s != n_sp) || (d && n_d != n_sp) || (pads && n_p != 2 * n_sp))
        return RLT_STATUS_OK;
    /* Seen as 2-D: a 1-D pool has a height of 1. */
    int64_t k2[2] = {1, 1}, s2[2] = {1, 1}, d2[2] = {1, 1}, pb[2] = {0, 0}, pe[2] = {0, 0}, in2[2] = {1, 1},
            out2[2] = {1, 1};
    for (int i = 0; i < n_sp; i++) {
        int j = 2 - n_sp + i;
        k2[j] = ks[i];
        s2[j] = s ? s[i] : 1;
        d2[j] = d ? d[i] : 1;
        pb[j] = pads ? pads[i] : 0;
        pe[j] = pads ? pads[n_sp + i] : 0;
        in2[j] = x->dims[2 + i];
        out2[j] = y->dims[2 + i];
        if (k2[j] < 1 || s2[j] < 1 || d2[j] < 1 || pb[j] < 0 || pe[j] < 0) return RLT_STATUS_OK;
        if (!is_max && d2[j] != 1) return RLT_STATUS_OK;
    }
    bool include_pad = rlt_graph_attr_int(n, "count_include_pad", 0) != 0;
    size_t extra = is_max ? 0 : (size_t)(out2[0] + out2[1]) * sizeof(float);
    rlt_fast_op *op;
    NEW_OP(op, FOP_POOL, extra);
    /* Pools run rows of a few dozen outputs, where 16 lanes spend their
     * time in the tails: AVX2 measured 10% faster than AVX-512 on
     * ResNet's and SqueezeNet's MaxPools (but see padded_row below). */
    op->isa_max = FOP_ISA_AVX2;
    fop_pool *p = &op->u.pool;
    *p = (fop_pool){.is_max = is_max,
                     .planes = x->dims[0] * x->dims[1] / (lanes ? lanes : 1),
                     .lanes = lanes,
                     .ih = in2[0], .iw = in2[1], .oh = out2[0], .ow = out2[1],
                     .kh = k2[0], .kw = k2[1], .sh = s2[0], .sw = s2[1], .dh = d2[0], .dw = d2[1],
                     .ph = pb[0], .pw = pb[1], .div_h = -1, .div_w = -1};
    /* Outputs ow whose taps ow*sw - pw + k*dw all lie in [0, iw). */
    p->ow_lo = RLT_MIN((p->pw + p->sw - 1) / p->sw, p->ow);
    int64_t last = p->iw - 1 - (p->kw - 1) * p->dw + p->pw; /* ow*sw <= last */
    p->ow_hi = last < 0 ? 0 : RLT_MIN(last / p->sw + 1, p->ow);
    if (p->ow_hi < p->ow_lo) p->ow_hi = p->ow_lo;
    int64_t reach = (p->kw - 1) * p->dw + 1;
    p->chunk = reach <= RLT_FAST_OP_POOL_TMP ? (RLT_FAST_OP_POOL_TMP - reach) / p->sw + 1 : 0;
    /* A row's windows side by side on the stack with its pads, when
     * every window holds a column of the input: the first ends at or after
     * column 0 and the last starts at or before column iw - 1. */
    p->padded_row = p->dw == 1 && p->pw <= p->kw - 1 && (p->ow - 1) * p->sw - p->pw <= p->iw - 1 &&
                    (p->ow - 1) * p->sw + p->kw <= RLT_FAST_OP_POOL_TMP;
    /* AVX-512 for a MaxPool 3 wide with stride 2 and at most one pad on
     * the left by padded rows: its way there has no tails (ops_run.c,
     * pool_row_3s2_avx512, which run_pool_padded takes on the same terms). */
    if (is_max && p->padded_row && p->kw == 3 && p->sw == 2 && p->pw <= 1) op->isa_max = FOP_ISA_AVX512F;
    /* blocked: every output a vector of lanes, no rows and no tails */
    if (lanes) {
        p->padded_row = false;
        op->isa_max = FOP_ISA_AVX512F;
    }
    op->isa = RLT_MIN(op->isa, op->isa_max);
    if (!is_max) {
        float *div = (float *)op->extra;
        for (int dim = 0; dim < 2; dim++) {
            float *dv = dim == 0 ? div : div + out2[0];
            for (int64_t o = 0; o < out2[dim]; o++) {
                int64_t start = o * s2[dim] - pb[dim];
                /* With the pads counted, PyTorch's divisor: the window
                 * clipped to the padded input (a ceil_mode overhang past
                 * the end padding does not count), as the evaluator. */
                int64_t c = include_pad ? RLT_MIN(start + k2[dim], in2[dim] + pe[dim]) - start
                                        : taps_inside(start, k2[dim], 1, in2[dim]);
                dv[o] = (float)c;
            }
        }
        p->div_h = 0;
        p->div_w = out2[0] * (int64_t)sizeof(float);
    }
    *out = op;
    return RLT_STATUS_OK;
}

static rlt_status plan_pool(const rlt_graph *g, const rlt_graph_node *n, rlt_fast_op **out)
{
    return plan_pool_lanes(g, n, 0, out);
}

/* ---- rows: Softmax, LayerNormalization, ReduceMean, GlobalAveragePool ----------- */

/* lanes > 0: the input in blocks of lanes channels (NCHWc); the output,
 * [N, C, 1, ...], is the same floats in either layout. */
static rlt_status plan_global_pool_lanes(const rlt_graph *g, const rlt_graph_node *n, int64_t lanes,
                                         rlt_fast_op **out)
{
    const rlt_graph_tensor *x = tin(g, n, 0), *y = tout(g, n, 0);
    if (!is_f32(x) || !is_f32(y) || x->rank < 3) return RLT_STATUS_OK;
    if (lanes && (lanes > RLT_FAST_OP_MAX_LANES || x->dims[1] % lanes != 0)) return RLT_STATUS_OK;
    int64_t inner = lanes ? lanes : 1, planes = x->dims[0] * x->dims[1];
    if (n_elems(y) != planes) return RLT_STATUS_OK;
    rlt_fast_op *op;
    NEW_OP(op, FOP_GLOBAL_POOL, 0);
    op->u.rows = (fop_rows){.outer = planes / inner, .len = planes ? n_elems(x) / planes : 0, .inner = inner};
    *out = op;
    return RLT_STATUS_OK;
}

static rlt_status plan_global_pool(const rlt_graph *g, const rlt_graph_node *n, rlt_fast_op **out)
{
    return plan_global_pool_lanes(g, n, 0, out);
}

static rlt_status plan_reduce_mean(const rlt_graph *g, const rlt_graph_node *n, rlt_fast_op **out)
{
    const rlt_graph_tensor *x = tin(g, n, 0), *y = tout(g, n, 0);
    if (!is_f32(x) || !is_f32(y) || n->n_inputs != 1) return RLT_STATUS_OK;
    int n_axes;
    const int64_t *axes = rlt_graph_attr_ints(n, "axes", &n_axes);
    bool reduce[MAX_RANK] = {false};
    for (int d = 0; d < x->rank; d++) reduce[d] = axes == NULL;
    for (int i = 0; i < n_axes; i++) {
        int a;
        if (!axis_norm(axes[i], x->rank, &a)) return RLT_STATUS_OK;
        reduce[a] = true;
    }
    /* Covered: the reduced dimensions (of size > 1) come after every kept
     * one, so that each output is the mean of a contiguous block. */
    int64_t rows = 1, len = 1;
    bool reducing = false;
    for (int d = 0; d < x->rank; d++) {
        if (reduce[d]) {
            len *= x->dims[d];
            reducing = reducing || x->dims[d] != 1;
        } else {
            if (reducing && x->dims[d] != 1) return RLT_STATUS_OK;
            rows *= x->dims[d];
        }
    }
    if (n_elems(y) != rows) return RLT_STATUS_OK;
    rlt_fast_op *op;
    NEW_OP(op, FOP_REDUCE_MEAN, 0);
    op->u.rows = (fop_rows){.outer = rows, .len = len, .inner = 1};
    *out = op;
    return RLT_STATUS_OK;
}

static rlt_status plan_softmax(const rlt_graph *g, const rlt_graph_node *n, rlt_fast_op **out)
{
    const rlt_graph_tensor *x = tin(g, n, 0), *y = tout(g, n, 0);
    if (!is_f32(x) || !is_f32(y) || n_elems(x) != n_elems(y)) return RLT_STATUS_OK;
    int axis;
    if (!axis_norm(rlt_graph_attr_int(n, "axis", g->opset >= 13 ? -1 : 1), x->rank, &axis)) return RLT_STATUS_OK;
    fop_rows p = {.outer = 1, .len = 1, .inner = 1, .scale = -1, .bias = -1, .scale_c = -1, .bias_c = -1};
    for (int d = 0; d < axis; d++) p.outer *= x->dims[d];
    if (g->opset >= 13) {
        p.len = x->dims[axis];
        for (int d = axis + 1; d < x->rank; d++) p.inner *= x->dims[d];
    } else { /* before opset 13: the input flattened to [outer, rest] */
        for (int d = axis; d < x->rank; d++) p.len *= x->dims[d];
    }
    rlt_fast_op *op;
    NEW_OP(op, FOP_SOFTMAX, 0);
    op->u.rows = p;
    *out = op;
    return RLT_STATUS_OK;
}

static bool ln_param(const rlt_graph_tensor *t, const rlt_graph_tensor *x, int axis, int64_t len, float *dst,
                     bool *need)
{
    int r = x->rank - axis;
    if (!is_f32(t) || t->rank > r) return false;
    for (int k = 0; k < t->rank; k++)
        if (t->dims[k] != 1 && t->dims[k] != x->dims[x->rank - t->rank + k]) return false;
    *need = false;
    if (n_elems(t) == len) return true;
    if (!t->data) return false;
    *need = true;
    if (!dst) return true;
    /* Expand: walk the normalised dims, t's stride 0 where it has 1. */
    int64_t ts[MAX_RANK] = {0}, s[MAX_RANK], idx[MAX_RANK] = {0}, off = 0;
    strides_of(t->rank, t->dims, s);
    for (int k = 0; k < t->rank; k++) ts[r - t->rank + k] = t->dims[k] == 1 ? 0 : s[k];
    const float *v = t->data;
    for (int64_t e = 0; e < len; e++) {
        dst[e] = v[off];
        for (int d = r - 1; d >= 0; d--) {
            off += ts[d];
            if (++idx[d] < x->dims[axis + d]) break;
            off -= ts[d] * x->dims[axis + d];
            idx[d] = 0;
        }
    }
    return true;
}

static rlt_status plan_layernorm(const rlt_graph *g, const rlt_graph_node *n, rlt_fast_op **out)
{
    const rlt_graph_tensor *x = tin(g, n, 0), *y = tout(g, n, 0), *sc = tin(g, n, 1), *bi = tin(g, n, 2);
    if (!is_f32(x) || !is_f32(y) || n_elems(x) != n_elems(y)) return RLT_STATUS_OK;
    if (tout(g, n, 1) || tout(g, n, 2)) return RLT_STATUS_OK; /* Mean, InvStdDev */
    int axis;
    if (!axis_norm(rlt_graph_attr_int(n, "axis", -1), x->rank, &axis)) return RLT_STATUS_OK;
    fop_rows p = {.outer = 1, .len = 1, .inner = 1, .eps = rlt_graph_attr_float(n, "epsilon", 1e-5), .scale = -1,
                  .bias = -1, .scale_c = -1, .bias_c = -1};
    for (int d = 0; d < axis; d++) p.outer *= x->dims[d];
    for (int d = axis; d < x->rank; d++) p.len *= x->dims[d];
    bool need_s = false, need_b = false;
    if (sc && !ln_param(sc, x, axis, p.len, NULL, &need_s)) return RLT_STATUS_OK;
    if (bi && !ln_param(bi, x, axis, p.len, NULL, &need_b)) return RLT_STATUS_OK;
    size_t extra = (size_t)((need_s ? p.len : 0) + (need_b ? p.len : 0)) * sizeof(float);
    rlt_fast_op *op;
    NEW_OP(op, FOP_LAYERNORM, extra);
    float *dst = (float *)op->extra;
    if (sc) {
        p.scale = n->inputs[1];
        if (need_s) {
            ln_param(sc, x, axis, p.len, dst, &need_s);
            p.scale_c = (char *)dst - (char *)op->extra;
            dst += p.len;
        }
    }
    if (bi) {
        p.bias = n->inputs[2];
        if (need_b) {
            ln_param(bi, x, axis, p.len, dst, &need_b);
            p.bias_c = (char *)dst - (char *)op->extra;
        }
    }
    op->u.rows = p;
    *out = op;
    return RLT_STATUS_OK;
}

/* ---- strided copies: Transpose, Slice --------------------------------------------- */

/* Plans y = x viewed through (dims, element strides xs, base offset):
 * collapses the dimensions, then picks the inner loop. */
static void copy_plan_make(fop_copy *p, size_t es, int rank, const int64_t *out_dims, const int64_t *xs_in,
                           int64_t base)
{
    int64_t dims[MAX_RANK], st[1][MAX_RANK];
    memcpy(dims, out_dims, (size_t)rank * sizeof *dims);
    memcpy(st[0], xs_in, (size_t)rank * sizeof *xs_in);
    int r = collapse(rank, dims, 1, st);
    const int64_t *xs = st[0];
    int64_t ys[MAX_RANK];
    strides_of(r, dims, ys);
    memset(p, 0, sizeof *p);
    p->es = (int64_t)es;
    p->base = base;
    p->n_inner = dims[r - 1];
    p->inner_xs = xs[r - 1];
    int tile = -1;
    if (xs[r - 1] == 1) {
        p->mode = FOP_COPY_RUNS;
    } else {
        for (int d = 0; d < r - 1; d++)
            if (xs[d] == 1) tile = d;
        p->mode = tile >= 0 ? FOP_COPY_TILE : FOP_COPY_GATHER;
    }
    if (tile >= 0) {
        p->n_tile = dims[tile];
        p->tile_ys = ys[tile];
    }
    fop_odo *od = &p->outer;
    od->count = 1;
    for (int d = 0; d < r - 1; d++) {
        if (d == tile) continue;
        od->dims[od->rank] = dims[d];
        od->xs[od->rank] = xs[d];
        od->ys[od->rank] = ys[d];
        od->count *= dims[d];
        od->rank++;
    }
    for (int d = 0; d < r; d++)
        if (dims[d] == 0) od->count = 0;
}

static rlt_status plan_transpose(const rlt_graph *g, const rlt_graph_node *n, rlt_fast_op **out)
{
    const rlt_graph_tensor *x = tin(g, n, 0), *y = tout(g, n, 0);
    size_t es = rlt_dtype_size(x->dtype);
    if (x->dtype != y->dtype || y->rank != x->rank || es == 0) return RLT_STATUS_OK;
    int n_perm;
    const int64_t *pa = rlt_graph_attr_ints(n, "perm", &n_perm);
    if (pa && n_perm != x->rank) return RLT_STATUS_OK;
    int64_t s[MAX_RANK], xs[MAX_RANK];
    strides_of(x->rank, x->dims, s);
    bool used[MAX_RANK] = {false};
    for (int i = 0; i < x->rank; i++) {
        int64_t pi = pa ? pa[i] : x->rank - 1 - i;
        if (pi < 0 || pi >= x->rank || used[pi] || y->dims[i] != x->dims[pi]) return RLT_STATUS_OK;
        used[pi] = true;
        xs[i] = s[pi];
    }
    rlt_fast_op *op;
    NEW_OP(op, FOP_COPY, 0);
    copy_plan_make(&op->u.copy, es, y->rank, y->dims, xs, 0);
    *out = op;
    return RLT_STATUS_OK;
}

static rlt_status plan_slice(const rlt_graph *g, const rlt_graph_node *n, rlt_fast_op **out)
{
    const rlt_graph_tensor *x = tin(g, n, 0), *y = tout(g, n, 0);
    size_t es = rlt_dtype_size(x->dtype);
    int r = x->rank;
    if (x->dtype != y->dtype || y->rank != r || es == 0) return RLT_STATUS_OK;
    int64_t starts[MAX_RANK], ends[MAX_RANK], axes[MAX_RANK], steps[MAX_RANK];
    int n_starts = 0, n_ends = 0, n_axes = -1, n_steps = -1;
    if (g->opset < 10) {
        int na;
        const int64_t *sa = rlt_graph_attr_ints(n, "starts", &n_starts), *ea = rlt_graph_attr_ints(n, "ends", &n_ends),
                      *aa = rlt_graph_attr_ints(n, "axes", &na);
        if (!sa || !ea || n_starts > r || n_ends > r || (aa && na > r)) return RLT_STATUS_OK;
        memcpy(starts, sa, (size_t)n_starts * sizeof *sa);
        memcpy(ends, ea, (size_t)n_ends * sizeof *ea);
        if (aa) {
            n_axes = na;
            memcpy(axes, aa, (size_t)na * sizeof *aa);
        }
    } else {
        const rlt_graph_tensor *ts[4] = {tin(g, n, 1), tin(g, n, 2), tin(g, n, 3), tin(g, n, 4)};
        int64_t *dst[4] = {starts, ends, axes, steps};
        int *cnt[4] = {&n_starts, &n_ends, &n_axes, &n_steps};
        if (!ts[0] || !ts[1]) return RLT_STATUS_OK;
        for (int k = 0; k < 4; k++) {
            if (!ts[k]) continue;
            if (!is_const_ints(ts[k])) return RLT_STATUS_OK;
            *cnt[k] = (int)n_elems(ts[k]);
            for (int i = 0; i < *cnt[k]; i++) dst[k][i] = const_int(ts[k], i);
        }
    }
    if (n_ends != n_starts || (n_axes >= 0 && n_axes != n_starts) || (n_steps >= 0 && n_steps != n_starts))
        return RLT_STATUS_OK;
    int64_t o_start[MAX_RANK], o_step[MAX_RANK];
    for (int d = 0; d < r; d++) {
        o_start[d] = 0;
        o_step[d] = 1;
    }
    for (int i = 0; i < n_starts; i++) {
        int axis;
        if (!axis_norm(n_axes >= 0 ? axes[i] : i, r, &axis)) return RLT_STATUS_OK;
        int64_t dim = x->dims[axis], step = n_steps >= 0 ? steps[i] : 1, st = starts[i];
        if (step == 0) return RLT_STATUS_OK;
        if (st < 0) st += dim;
        if (step > 0) st = st < 0 ? 0 : (st > dim ? dim : st);
        else st = st < 0 ? -1 : (st > dim - 1 ? dim - 1 : st);
        o_start[axis] = st;
        o_step[axis] = step;
    }
    /* The output's shape holds the lengths; every index must land inside. */
    int64_t s[MAX_RANK], xs[MAX_RANK], base = 0;
    strides_of(r, x->dims, s);
    for (int d = 0; d < r; d++) {
        if (y->dims[d] == 0) continue;
        int64_t last = o_start[d] + (y->dims[d] - 1) * o_step[d];
        if (o_start[d] < 0 || o_start[d] >= x->dims[d] || last < 0 || last >= x->dims[d]) return RLT_STATUS_OK;
        xs[d] = o_step[d] * s[d];
        base += o_start[d] * s[d];
    }
    for (int d = 0; d < r; d++)
        if (y->dims[d] == 0) xs[d] = 0, base = 0;
    rlt_fast_op *op;
    NEW_OP(op, FOP_COPY, 0);
    copy_plan_make(&op->u.copy, es, r, y->dims, xs, base);
    *out = op;
    return RLT_STATUS_OK;
}

/* ---- Concat, Split ------------------------------------------------------------------ */

/* Concat (is_split false: the inputs are the parts, output 0 the whole) or
 * Split (input 0 the whole, the outputs the parts). */
static rlt_status plan_parts(const rlt_graph *g, const rlt_graph_node *n, bool is_split, rlt_fast_op **out)
{
    const rlt_graph_tensor *whole = is_split ? tin(g, n, 0) : tout(g, n, 0);
    int n_parts = is_split ? n->n_outputs : n->n_inputs;
    size_t es = rlt_dtype_size(whole->dtype);
    if (es == 0 || (!is_split && n->n_outputs != 1)) return RLT_STATUS_OK;
    int axis;
    if (!axis_norm(rlt_graph_attr_int(n, "axis", 0), whole->rank, &axis)) return RLT_STATUS_OK;
    int64_t outer = 1, inner = (int64_t)es, sum = 0;
    for (int d = 0; d < axis; d++) outer *= whole->dims[d];
    for (int d = axis + 1; d < whole->rank; d++) inner *= whole->dims[d];
    for (int i = 0; i < n_parts; i++) {
        const rlt_graph_tensor *t = is_split ? tout(g, n, i) : tin(g, n, i);
        if (!t || t->dtype != whole->dtype || t->rank != whole->rank) return RLT_STATUS_OK;
        for (int d = 0; d < whole->rank; d++)
            if (d != axis && t->dims[d] != whole->dims[d]) return RLT_STATUS_OK;
        sum += t->dims[axis];
    }
    if (sum != whole->dims[axis]) return RLT_STATUS_OK;
    rlt_fast_op *op;
    NEW_OP(op, is_split ? FOP_SPLIT : FOP_CONCAT, (size_t)n_parts * sizeof(fop_part));
    fop_part *parts = (fop_part *)(void *)op->extra;
    for (int i = 0; i < n_parts; i++) {
        const rlt_graph_tensor *t = is_split ? tout(g, n, i) : tin(g, n, i);
        parts[i] = (fop_part){.tensor = is_split ? n->outputs[i] : n->inputs[i], .chunk_bytes = t->dims[axis] * inner};
    }
    op->u.parts = (fop_parts){.outer = outer, .n_parts = n_parts, .parts = 0};
    *out = op;
    return RLT_STATUS_OK;
}

/* ---- views and copies --------------------------------------------------------------- */

static bool is_view_op(const char *t)
{
    return strcmp(t, "Reshape") == 0 || strcmp(t, "Flatten") == 0 || strcmp(t, "Squeeze") == 0 ||
           strcmp(t, "Unsqueeze") == 0 || strcmp(t, "Identity") == 0;
}

/* Output 0 holds input 0's bytes. */
static bool same_bytes(const rlt_graph *g, const rlt_graph_node *n)
{
    const rlt_graph_tensor *x = tin(g, n, 0), *y = tout(g, n, 0);
    return x && y && x->dtype == y->dtype && n_elems(x) == n_elems(y) && rlt_dtype_size(x->dtype) > 0;
}

bool rlt_fast_op_is_view(const rlt_graph *g, int node)
{
    if (node < 0 || node >= g->n_nodes) return false;
    const rlt_graph_node *n = &g->nodes[node];
    if (n->is_removed || !io_ok(g, n) || !same_bytes(g, n)) return false;
    if (is_view_op(n->op_type)) return true;
    return strcmp(n->op_type, "Dropout") == 0 && !tout(g, n, 1);
}

static rlt_status plan_bytes(const rlt_graph *g, const rlt_graph_node *n, rlt_fast_op **out)
{
    if (!same_bytes(g, n)) return RLT_STATUS_OK;
    const rlt_graph_tensor *x = tin(g, n, 0), *mask = tout(g, n, 1);
    if (mask && strcmp(n->op_type, "Dropout") != 0) return RLT_STATUS_OK;
    rlt_fast_op *op;
    NEW_OP(op, FOP_BYTES, 0);
    op->n = n_elems(x) * (int64_t)rlt_dtype_size(x->dtype);
    op->n2 = mask ? n_elems(mask) : 0;
    op->fn = !mask ? 0
             : mask->dtype == RLT_DTYPE_FLOAT32 ? FOP_FILL_F32
             : mask->dtype == RLT_DTYPE_INT64   ? FOP_FILL_I64
             : mask->dtype == RLT_DTYPE_INT32   ? FOP_FILL_I32
                                                : FOP_FILL_BYTE;
    if (!mask) op->y2 = -1;
    *out = op;
    return RLT_STATUS_OK;
}

/* ---- the entry points ------------------------------------------------------------- */

typedef rlt_status (*plan_fn)(const rlt_graph *g, const rlt_graph_node *n, rlt_fast_op **out);

static rlt_status plan_concat(const rlt_graph *g, const rlt_graph_node *n, rlt_fast_op **out)
{
    return plan_parts(g, n, false, out);
}

static rlt_status plan_split(const rlt_graph *g, const rlt_graph_node *n, rlt_fast_op **out)
{
    return plan_parts(g, n, true, out);
}

/* Cast to the input's own type: a copy; the conversions are the
 * evaluator's. */
static rlt_status plan_cast(const rlt_graph *g, const rlt_graph_node *n, rlt_fast_op **out)
{
    return plan_bytes(g, n, out);
}

static const struct {
    const char *op_type;
    plan_fn plan;
} plans[] = {
    {"Add", plan_binary},
    {"AveragePool", plan_pool},
    {"Cast", plan_cast},
    {"Clip", plan_unary},
    {"Concat", plan_concat},
    {"Div", plan_binary},
    {"Dropout", plan_bytes},
    {"Erf", plan_unary},
    {"Flatten", plan_bytes},
    {"Gelu", plan_unary},
    {"GlobalAveragePool", plan_global_pool},
    {"Identity", plan_bytes},
    {"LayerNormalization", plan_layernorm},
    {"LeakyRelu", plan_unary},
    {"MaxPool", plan_pool},
    {"Mul", plan_binary},
    {"Pow", plan_binary},
    {"ReduceMean", plan_reduce_mean},
    {"Relu", plan_unary},
    {"Reshape", plan_bytes},
    {"Sigmoid", plan_unary},
    {"Slice", plan_slice},
    {"Softmax", plan_softmax},
    {"Split", plan_split},
    {"Sqrt", plan_unary},
    {"Squeeze", plan_bytes},
    {"Sub", plan_binary},
    {"Tanh", plan_unary},
    {"Transpose", plan_transpose},
    {"Unsqueeze", plan_bytes},
};

rlt_status rlt_fast_op_create(const rlt_graph *g, int node, rlt_fast_op **out, rlt_diag *diag)
{
    *out = NULL;
    RLT_ASSERT(node >= 0 && node < g->n_nodes);
    const rlt_graph_node *n = &g->nodes[node];
    if (n->is_removed || !io_ok(g, n)) return RLT_STATUS_OK;
    for (size_t i = 0; i < RLT_ARRAY_LEN(plans); i++) {
        if (strcmp(plans[i].op_type, n->op_type) != 0) continue;
        rlt_status st = plans[i].plan(g, n, out);
        if (st != RLT_STATUS_OK)
            return rlt_graph_node_fail(g, n, diag, st, "out of memory planning its fast implementation");
        return RLT_STATUS_OK;
    }
    return RLT_STATUS_OK;
}

rlt_status rlt_fast_op_create_blocked(const rlt_graph *g, int node, int lanes, rlt_fast_op **out, rlt_diag *diag)
{
    *out = NULL;
    RLT_ASSERT(node >= 0 && node < g->n_nodes && lanes >= 0);
    const rlt_graph_node *n = &g->nodes[node];
    const char *t = n->op_type;
    bool is_pool = strcmp(t, "MaxPool") == 0 || strcmp(t, "AveragePool") == 0;
    bool is_global = strcmp(t, "GlobalAveragePool") == 0;
    if (!lanes || (!is_pool && !is_global)) return rlt_fast_op_create(g, node, out, diag);
    if (n->is_removed || !io_ok(g, n)) return RLT_STATUS_OK;
    rlt_status st = is_pool ? plan_pool_lanes(g, n, lanes, out) : plan_global_pool_lanes(g, n, lanes, out);
    if (st != RLT_STATUS_OK) return rlt_graph_node_fail(g, n, diag, st, "out of memory planning its fast implementation");
    return RLT_STATUS_OK;
}

void rlt_fast_op_destroy(rlt_fast_op *op) { rlt_free(op); }
