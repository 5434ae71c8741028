/*
 * tasks.c - the kernels rltune tunes in a whole network
 * (rlt_graph_tasks_extract): each Conv, Gemm and MatMul that fits a
 * built-in op becomes an op spec (conv2d, depthwise_conv2d, dense, matmul,
 * batch_matmul), with its epilogue, the elementwise nodes that directly
 * follow it and fuse into it (bias, residual add, relu, relu6): the
 * task's op is the fused one (",epilogue=..." in its spec). Kernels are
 * deduplicated by that spec into tasks weighted by their occurrences;
 * every other node is counted by op type, with the reason when it is a
 * Conv / Gemm / MatMul that does not fit the op library yet. Compiled
 * networks (src/net/) run each occurrence as one fused kernel. The rules
 * are in docs/graph.md, "Tasks".
 */
#include "graph/graph.h"
#include "ir/ir.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_EPILOGUE_STEPS 8 /* fused nodes after one kernel */

/* What one Conv / Gemm / MatMul node is, before its epilogue. */
typedef struct kernel {
    bool is_task;       /* false: `reason` says why not */
    char spec[512];     /* the op spec as built here (canonicalised by rlt_op_parse) */
    char reason[256];
    int channel_axis;   /* the axis of the output channels in the node's output; -1: none */
    const char *own;    /* the node's own epilogue: "bias" (Conv's B, Gemm's C), "add" (Gemm's C
                           of the output's shape) or "" */
} kernel;

/* Who reads each tensor: the number of reads by live nodes and graph
 * outputs, and the last node that read it. */
typedef struct readers {
    int *n_reads;
    int *reader;
} readers;

const char *rlt_graph_node_label(const rlt_graph *g, int node)
{
    const rlt_graph_node *n = &g->nodes[node];
    if (n->name && n->name[0]) return n->name;
    for (int o = 0; o < n->n_outputs; o++)
        if (n->outputs[o] >= 0) return g->tensors[n->outputs[o]].name;
    return n->op_type;
}

static void not_task(kernel *k, const char *fmt, ...) RLT_PRINTF(2, 3);
static void not_task(kernel *k, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k->reason, sizeof k->reason, fmt, ap);
    va_end(ap);
    k->is_task = false;
}

static const rlt_graph_tensor *input_of(const rlt_graph *g, const rlt_graph_node *n, int i)
{
    return i < n->n_inputs && n->inputs[i] >= 0 ? &g->tensors[n->inputs[i]] : NULL;
}

/* The two values of a 2-D attribute (strides, dilations), `def` when absent. */
static void attr_pair(const rlt_graph_node *n, const char *name, int64_t def, int64_t out[2])
{
    const rlt_graph_attr *a = rlt_graph_node_attr(n, name);
    bool has = a && a->kind == RLT_GRAPH_ATTR_INTS && a->n_values == 2;
    out[0] = has ? a->ints[0] : def;
    out[1] = has ? a->ints[1] : def;
}

/* "[1,2,3]" into buf. */
static const char *dims_text(int rank, const int64_t *dims, char *buf, size_t cap)
{
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < rank && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%" PRId64, i ? "," : "", dims[i]);
    if (used < cap) snprintf(buf + used, cap - used, "]");
    return buf;
}

static int64_t prod(int n, const int64_t *dims)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++) p *= dims[i];
    return p;
}

static bool same_shape(const rlt_graph_tensor *a, const rlt_graph_tensor *b)
{
    if (!a->has_shape || !b->has_shape || a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

bool rlt_graph_is_per_channel(const rlt_graph_tensor *c, const rlt_graph_tensor *out, int channel_axis)
{
    if (channel_axis < 0 || !c->has_shape || c->rank > out->rank) return false;
    for (int i = 0; i < c->rank; i++) {
        int axis = out->rank - c->rank + i;
        if (c->dims[i] != 1 && !(axis == channel_axis && c->dims[i] == out->dims[axis])) return false;
    }
    return true;
}

/* ---- classifying a kernel node ------------------------------------------------- */

static void classify_conv(const rlt_graph *g, const rlt_graph_node *n, kernel *k)
{
    const rlt_graph_tensor *x = input_of(g, n, 0), *w = input_of(g, n, 1);
    char buf[96];
    if (x->rank != 4) {
        not_task(k, "%d-D convolution: conv2d and depthwise_conv2d are 2-D", x->rank - 2);
        return;
    }
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    int64_t K = w->dims[0], R = w->dims[2], S = w->dims[3];
    int64_t group = rlt_graph_attr_int(n, "group", 1), strides[2], dil[2], pads[4] = {0, 0, 0, 0};
    attr_pair(n, "strides", 1, strides);
    attr_pair(n, "dilations", 1, dil);
    const rlt_graph_attr *pa = rlt_graph_node_attr(n, "pads");
    if (pa && pa->kind == RLT_GRAPH_ATTR_INTS && pa->n_values == 4) memcpy(pads, pa->ints, sizeof pads);
    bool is_depthwise = group > 1 && group == C && K == C;
    if (group != 1 && !is_depthwise) {
        not_task(k, "grouped convolution (group=%" PRId64 ", %" PRId64 " to %" PRId64
                    " channels): the op library has conv2d (group 1) and depthwise_conv2d (group = input "
                    "channels = output channels)", group, C, K);
        return;
    }
    if (strides[0] != strides[1]) {
        not_task(k, "unequal strides %s: the op's one stride applies to both dimensions",
                 dims_text(2, strides, buf, sizeof buf));
        return;
    }
    if (dil[0] != dil[1]) {
        not_task(k, "unequal dilations %s: the op's one dilation applies to both dimensions",
                 dims_text(2, dil, buf, sizeof buf));
        return;
    }
    if (pads[1] != pads[0] || pads[2] != pads[0] || pads[3] != pads[0]) {
        not_task(k, "asymmetric pads %s: the op pads every side alike", dims_text(4, pads, buf, sizeof buf));
        return;
    }
    /* A 1x1 window with stride 1 and no pads reads each output position's
     * own input position: its H x W plane is one row of H * W (the same
     * bytes, NCHW). Its kernels then vectorise and tile along the whole
     * plane, not a row of it: a row of 13 or 7 filled 13 or 7 of a vector's
     * 16 lanes (SqueezeNet's 512 -> 1000 classifier on 13 x 13, 1.84 ms as
     * 13 x 13 after 584 trials, 1.60 ms as 1 x 169 after 160). */
    if (!is_depthwise && R == 1 && S == 1 && strides[0] == 1 && pads[0] == 0 && H > 1) {
        W *= H;
        H = 1;
    }
    if (is_depthwise)
        snprintf(k->spec, sizeof k->spec,
                 "depthwise_conv2d:N=%" PRId64 ",C=%" PRId64 ",H=%" PRId64 ",W=%" PRId64 ",R=%" PRId64 ",S=%" PRId64
                 ",stride=%" PRId64 ",pad=%" PRId64 ",dilation=%" PRId64,
                 N, C, H, W, R, S, strides[0], pads[0], dil[0]);
    else
        snprintf(k->spec, sizeof k->spec,
                 "conv2d:N=%" PRId64 ",C=%" PRId64 ",H=%" PRId64 ",W=%" PRId64 ",K=%" PRId64 ",R=%" PRId64
                 ",S=%" PRId64 ",stride=%" PRId64 ",pad=%" PRId64 ",dilation=%" PRId64,
                 N, C, H, W, K, R, S, strides[0], pads[0], dil[0]);
    k->is_task = true;
    k->channel_axis = 1;
    if (input_of(g, n, 2)) k->own = "bias";
}

/* Y = alpha * A' B' + beta * C. A constant B is a weight: dense, whose
 * [N,K] weight is B itself (transB=1) or B transposed once when the network
 * is compiled; a computed B with transB=0 is a matmul. */
static void classify_gemm(const rlt_graph *g, const rlt_graph_node *n, kernel *k)
{
    const rlt_graph_tensor *a = input_of(g, n, 0), *b = input_of(g, n, 1), *c = input_of(g, n, 2);
    const rlt_graph_tensor *y = &g->tensors[n->outputs[0]];
    char buf[96];
    int64_t trans_a = rlt_graph_attr_int(n, "transA", 0), trans_b = rlt_graph_attr_int(n, "transB", 0);
    double alpha = rlt_graph_attr_float(n, "alpha", 1.0), beta = rlt_graph_attr_float(n, "beta", 1.0);
    bool is_weight = b->data != NULL;
    if (trans_a) {
        not_task(k, "transA=1 (a transposed left operand): dense and matmul take A as [M,K]");
        return;
    }
    if (alpha != 1.0 && !is_weight) {
        not_task(k, "alpha=%g with a computed B: only a constant B can absorb the scale", alpha);
        return;
    }
    int64_t M = a->dims[0], K = a->dims[1], N = trans_b ? b->dims[0] : b->dims[1];
    if (c && beta != 0.0) {
        if (c->data && rlt_graph_is_per_channel(c, y, 1))
            k->own = "bias";
        else if (same_shape(c, y) && (beta == 1.0 || c->data))
            k->own = "add";
        else {
            not_task(k, "C of shape %s with beta=%g is neither a per-column bias nor an addend of the output's "
                        "shape [%" PRId64 ",%" PRId64 "]", dims_text(c->rank, c->dims, buf, sizeof buf), beta, M, N);
            return;
        }
    }
    if (trans_b || is_weight)
        snprintf(k->spec, sizeof k->spec, "dense:M=%" PRId64 ",N=%" PRId64 ",K=%" PRId64, M, N, K);
    else
        snprintf(k->spec, sizeof k->spec, "matmul:M=%" PRId64 ",N=%" PRId64 ",K=%" PRId64, M, N, K);
    k->is_task = true;
    k->channel_axis = 1;
}

/* numpy matmul: 1-D operands promoted; a 2-D B folds A's batch dimensions
 * into M; batch dimensions of A and B must be equal (no broadcasting) for a
 * batch_matmul, and a batch of one is a plain matmul. */
static void classify_matmul(const rlt_graph *g, const rlt_graph_node *n, kernel *k)
{
    const rlt_graph_tensor *a = input_of(g, n, 0), *b = input_of(g, n, 1);
    char ba[96], bb[96];
    bool is_weight = b->data != NULL;
    int64_t M = a->rank == 1 ? 1 : prod(a->rank - 1, a->dims), K = a->dims[a->rank - 1];
    int64_t N = b->rank == 1 ? 1 : b->dims[b->rank - 1];
    k->channel_axis = b->rank == 1 ? -1 : g->tensors[n->outputs[0]].rank - 1;
    if (b->rank <= 2) {
        if (is_weight)
            snprintf(k->spec, sizeof k->spec, "dense:M=%" PRId64 ",N=%" PRId64 ",K=%" PRId64, M, N, K);
        else
            snprintf(k->spec, sizeof k->spec, "matmul:M=%" PRId64 ",N=%" PRId64 ",K=%" PRId64, M, N, K);
        k->is_task = true;
        return;
    }
    /* B has batch dimensions: A's (left-padded with ones) must equal them */
    int nb = b->rank - 2, na = a->rank >= 2 ? a->rank - 2 : 0;
    int64_t a_batch[RLT_GRAPH_MAX_RANK], b_batch[RLT_GRAPH_MAX_RANK];
    int n_batch = nb > na ? nb : na;
    for (int i = 0; i < n_batch; i++) {
        int ia = i - (n_batch - na), ib = i - (n_batch - nb);
        a_batch[i] = ia >= 0 ? a->dims[ia] : 1;
        b_batch[i] = ib >= 0 ? b->dims[ib] : 1;
    }
    M = a->rank == 1 ? 1 : a->dims[a->rank - 2];
    for (int i = 0; i < n_batch; i++) {
        if (a_batch[i] != b_batch[i]) {
            not_task(k, "batch dimensions %s of A and %s of B broadcast: batch_matmul takes equal ones",
                     dims_text(n_batch, a_batch, ba, sizeof ba), dims_text(n_batch, b_batch, bb, sizeof bb));
            return;
        }
    }
    int64_t batch = prod(n_batch, b_batch);
    if (batch == 1)
        snprintf(k->spec, sizeof k->spec, "%s:M=%" PRId64 ",N=%" PRId64 ",K=%" PRId64,
                 is_weight ? "dense" : "matmul", M, N, K);
    else
        snprintf(k->spec, sizeof k->spec, "batch_matmul:B=%" PRId64 ",M=%" PRId64 ",N=%" PRId64 ",K=%" PRId64,
                 batch, M, N, K);
    k->is_task = true;
}

/* Classifies node n: false when it is not a kind rltune tunes. */
static bool classify(const rlt_graph *g, int node, kernel *k)
{
    const rlt_graph_node *n = &g->nodes[node];
    memset(k, 0, sizeof *k);
    k->own = "";
    k->channel_axis = -1;
    bool is_conv = strcmp(n->op_type, "Conv") == 0, is_gemm = strcmp(n->op_type, "Gemm") == 0;
    bool is_matmul = strcmp(n->op_type, "MatMul") == 0;
    if (!is_conv && !is_gemm && !is_matmul) return false;
    for (int i = 0; i < n->n_inputs; i++) {
        const rlt_graph_tensor *t = input_of(g, n, i);
        if (t && (t->dtype != RLT_DTYPE_FLOAT32 || !t->has_shape)) {
            not_task(k, "input '%s' is not an f32 tensor of known shape", t->name);
            return true;
        }
    }
    if (is_conv)
        classify_conv(g, n, k);
    else if (is_gemm)
        classify_gemm(g, n, k);
    else
        classify_matmul(g, n, k);
    return true;
}

/* ---- epilogues ------------------------------------------------------------------ */

/* The value of Clip's bound `which` (0 min, 1 max): false when it is given
 * but not a constant; *is_set false when absent. */
static bool clip_bound(const rlt_graph *g, const rlt_graph_node *n, int which, bool *is_set, double *v)
{
    *is_set = false;
    if (g->opset < 11) {
        const rlt_graph_attr *a = rlt_graph_node_attr(n, which ? "max" : "min");
        if (a && a->kind == RLT_GRAPH_ATTR_FLOAT) {
            *is_set = true;
            *v = (double)a->f;
        }
        return true;
    }
    const rlt_graph_tensor *t = input_of(g, n, 1 + which);
    if (!t) return true;
    if (!t->data || t->dtype != RLT_DTYPE_FLOAT32 || rlt_graph_tensor_n_elems(t) != 1) return false;
    *is_set = true;
    *v = (double)((const float *)t->data)[0];
    return true;
}

/* The epilogue step of Clip: "relu" for min 0 without max, "relu6" for
 * (0, 6); NULL otherwise. */
static const char *clip_step(const rlt_graph *g, const rlt_graph_node *n)
{
    bool has_min, has_max;
    double lo = 0, hi = 0;
    if (!clip_bound(g, n, 0, &has_min, &lo) || !clip_bound(g, n, 1, &has_max, &hi)) return NULL;
    if (!has_min || lo != 0.0) return NULL;
    if (!has_max) return "relu";
    return hi == 6.0 ? "relu6" : NULL;
}

static bool has_step(const char *epi, const char *step)
{
    size_t n = strlen(step);
    for (const char *p = epi; *p; p += strcspn(p, ","), p += *p == ',') {
        if (strncmp(p, step, n) == 0 && (p[n] == ',' || p[n] == '\0')) return true;
    }
    return false;
}

static void epilogue_append(char *epi, size_t cap, const char *step)
{
    size_t len = strlen(epi);
    snprintf(epi + len, cap - len, "%s%s", len ? "," : "", step);
}

/* Follows the output of kernel node `node` through the elementwise nodes
 * that would fuse into it, appending their steps to `epi` and their indices
 * to fused[] (at most MAX_EPILOGUE_STEPS), marking them claimed. A node
 * fuses when it is the only reader of the tensor so far (which is no graph
 * output) and writes a tensor of the same shape: Relu, Clip(0, 6)
 * or Clip(0, inf), Add of a per-channel constant right after the kernel
 * (bias), Add of a same-shaped tensor computed before the kernel (add). */
static int epilogue_walk(const rlt_graph *g, const readers *rd, bool *claimed, int node, int channel_axis, char *epi,
                         size_t cap, int *fused)
{
    int n_fused = 0;
    int t = g->nodes[node].outputs[0];
    while (n_fused < MAX_EPILOGUE_STEPS && rd->n_reads[t] == 1 && rd->reader[t] >= 0) {
        int r = rd->reader[t];
        const rlt_graph_node *rn = &g->nodes[r];
        if (claimed[r] || rn->n_outputs < 1 || rn->outputs[0] < 0) break;
        const rlt_graph_tensor *x = &g->tensors[t], *y = &g->tensors[rn->outputs[0]];
        if (y->dtype != RLT_DTYPE_FLOAT32 || !same_shape(x, y)) break;
        bool is_extra_output = false;
        for (int o = 1; o < rn->n_outputs; o++) is_extra_output |= rn->outputs[o] >= 0;
        if (is_extra_output) break;
        const char *step = NULL;
        bool is_merged = false; /* a second bias joins the first */
        if (strcmp(rn->op_type, "Relu") == 0)
            step = "relu";
        else if (strcmp(rn->op_type, "Clip") == 0)
            step = clip_step(g, rn);
        else if (strcmp(rn->op_type, "Add") == 0 && rn->n_inputs == 2) {
            int other = rn->inputs[0] == t ? rn->inputs[1] : rn->inputs[0];
            const rlt_graph_tensor *o = &g->tensors[other];
            if (o->data && rlt_graph_is_per_channel(o, y, channel_axis) && (!epi[0] || strcmp(epi, "bias") == 0)) {
                step = "bias";
                is_merged = epi[0] != 0;
            } else if (same_shape(o, y) && o->producer < node) {
                step = "add";
            }
        }
        if (!step || (!is_merged && has_step(epi, step))) break; /* a fused op has each step once */
        if (!is_merged) epilogue_append(epi, cap, step);
        claimed[r] = true;
        fused[n_fused++] = r;
        t = rn->outputs[0];
    }
    return n_fused;
}

/* ---- extraction ---------------------------------------------------------------- */

static rlt_status readers_count(const rlt_graph *g, readers *rd, rlt_diag *diag)
{
    rd->n_reads = rlt_calloc((size_t)g->n_tensors + 1, sizeof *rd->n_reads);
    rd->reader = rlt_calloc((size_t)g->n_tensors + 1, sizeof *rd->reader);
    if (!rd->n_reads || !rd->reader) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory listing tasks");
    for (int t = 0; t < g->n_tensors; t++) rd->reader[t] = -1;
    for (int n = 0; n < g->n_nodes; n++) {
        const rlt_graph_node *node = &g->nodes[n];
        if (node->is_removed) continue;
        for (int i = 0; i < node->n_inputs; i++) {
            int t = node->inputs[i];
            if (t < 0) continue;
            rd->n_reads[t]++;
            rd->reader[t] = n;
        }
    }
    for (int i = 0; i < g->n_outputs; i++) {
        rd->n_reads[g->outputs[i]]++;
        rd->reader[g->outputs[i]] = -1; /* a graph output is written out: nothing fuses past it */
    }
    return RLT_STATUS_OK;
}

/* Adds one occurrence (kernel node + fused nodes) of the fused op `spec`. */
static rlt_status task_add(rlt_graph_tasks *out, const char *spec, const char *epi, double flops, int node,
                           const int *fused, int n_fused, rlt_diag *diag)
{
    int i = 0;
    while (i < out->n_tasks && strcmp(out->tasks[i].spec, spec) != 0) i++;
    if (i == out->n_tasks) {
        rlt_graph_task *grown = rlt_realloc(out->tasks, ((size_t)out->n_tasks + 1) * sizeof *grown);
        if (!grown) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory listing tasks");
        out->tasks = grown;
        rlt_graph_task *t = &out->tasks[out->n_tasks++];
        memset(t, 0, sizeof *t);
        snprintf(t->spec, sizeof t->spec, "%s", spec);
        snprintf(t->epilogue, sizeof t->epilogue, "%s", epi);
        t->flops = flops;
    }
    rlt_graph_task *t = &out->tasks[i];
    int *nodes = rlt_realloc(t->nodes, ((size_t)t->n_nodes + 1 + (size_t)n_fused) * sizeof *nodes);
    if (!nodes) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory listing tasks");
    t->nodes = nodes;
    int *starts = rlt_realloc(t->starts, ((size_t)t->weight + 1) * sizeof *starts);
    if (!starts) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory listing tasks");
    t->starts = starts;
    t->starts[t->weight] = t->n_nodes;
    t->nodes[t->n_nodes++] = node;
    for (int f = 0; f < n_fused; f++) t->nodes[t->n_nodes++] = fused[f];
    t->weight++;
    return RLT_STATUS_OK;
}

static rlt_status other_add(rlt_graph_tasks *out, const rlt_graph *g, int node, const char *reason, rlt_diag *diag)
{
    const char *op_type = g->nodes[node].op_type;
    for (int i = 0; i < out->n_others; i++) {
        if (strcmp(out->others[i].op_type, op_type) == 0 && strcmp(out->others[i].reason, reason) == 0) {
            out->others[i].count++;
            return RLT_STATUS_OK;
        }
    }
    rlt_graph_other *grown = rlt_realloc(out->others, ((size_t)out->n_others + 1) * sizeof *grown);
    if (!grown) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory listing tasks");
    out->others = grown;
    rlt_graph_other *o = &out->others[out->n_others++];
    memset(o, 0, sizeof *o);
    o->op_type = op_type;
    snprintf(o->reason, sizeof o->reason, "%s", reason);
    o->count = 1;
    o->first_node = node;
    return RLT_STATUS_OK;
}

/* The canonical spec and FLOPs of k's spec, with epilogue `epi` (NULL:
 * none yet); a spec the op library refuses (a size past its range) makes
 * the node no task, with the library's message as the reason. Only running
 * out of memory fails. */
static rlt_status kernel_finish(kernel *k, const char *epi, double *flops, rlt_diag *diag)
{
    rlt_diag d = {0};
    rlt_op *op = NULL;
    if (epi && epi[0]) {
        size_t len = strlen(k->spec);
        snprintf(k->spec + len, sizeof k->spec - len, ",epilogue=%s", epi);
        for (char *c = k->spec + len + 10; *c; c++)
            if (*c == ',') *c = '+';
    }
    rlt_status st = rlt_op_parse(k->spec, &op, &d);
    if (st == RLT_STATUS_OUT_OF_MEMORY) return rlt_fail(diag, st, "%s", d.message);
    if (st != RLT_STATUS_OK) {
        not_task(k, "does not fit the op library: %s", d.message);
        return RLT_STATUS_OK;
    }
    snprintf(k->spec, sizeof k->spec, "%s", rlt_op_spec(op));
    *flops = rlt_op_flops(op);
    rlt_op_destroy(op);
    return RLT_STATUS_OK;
}

void rlt_graph_tasks_free(rlt_graph_tasks *t)
{
    if (!t) return;
    for (int i = 0; i < t->n_tasks; i++) {
        rlt_free(t->tasks[i].nodes);
        rlt_free(t->tasks[i].starts);
    }
    rlt_free(t->tasks);
    rlt_free(t->others);
    rlt_free(t->tensor_block);
    memset(t, 0, sizeof *t);
}

/* ---- blocked layouts ------------------------------------------------------------ */

/* One occurrence of a task, before its layouts are known. */
typedef struct occurrence {
    kernel k;           /* the kernel's op spec without its epilogue (canonical) */
    char epi[128];
    int node, n_fused;
    int fused[MAX_EPILOGUE_STEPS];
    int out;            /* the tensor the fused kernel writes */
    int res;            /* the fused residual's tensor, or -1 */
} occurrence;

/* Tensors that must share a layout, joined (union-find over tensors), and
 * those that must stay NCHW. */
typedef struct layouts {
    int *parent;
    bool *is_plain;
} layouts;

static int lay_find(layouts *l, int t)
{
    while (l->parent[t] != t) {
        l->parent[t] = l->parent[l->parent[t]];
        t = l->parent[t];
    }
    return t;
}

static void lay_join(layouts *l, int a, int b)
{
    if (a < 0 || b < 0) return;
    a = lay_find(l, a);
    b = lay_find(l, b);
    if (a != b) l->parent[a] = b;
}

static void lay_plain(layouts *l, int t)
{
    if (t >= 0) l->is_plain[t] = true;
}

static void lay_plain_node(layouts *l, const rlt_graph_node *n)
{
    for (int i = 0; i < n->n_inputs; i++) lay_plain(l, n->inputs[i]);
    for (int o = 0; o < n->n_outputs; o++) lay_plain(l, n->outputs[o]);
}

static bool is_activation(const rlt_graph *g, int t)
{
    return t >= 0 && !g->tensors[t].data;
}

/* The constraints node n (no task's) puts on its tensors' layouts: the
 * nodes whose fast forms run on blocked tensors keep their input's layout
 * (the same loops over the same element count, or a pool's blocked loops);
 * every other node reads and writes NCHW. */
static void lay_node(const rlt_graph *g, layouts *l, int node)
{
    const rlt_graph_node *n = &g->nodes[node];
    const char *t = n->op_type;
    int x = n->n_inputs > 0 ? n->inputs[0] : -1, y = n->n_outputs > 0 ? n->outputs[0] : -1;
    bool is_one_output = n->n_outputs == 1 && y >= 0;
    if (x >= 0 && is_activation(g, x) && is_one_output &&
        (strcmp(t, "Relu") == 0 || strcmp(t, "Sigmoid") == 0 || strcmp(t, "Tanh") == 0 ||
         strcmp(t, "LeakyRelu") == 0 || strcmp(t, "Identity") == 0 ||
         (strcmp(t, "Clip") == 0 && clip_step(g, n) != NULL) ||
         ((strcmp(t, "MaxPool") == 0 || strcmp(t, "AveragePool") == 0) && g->tensors[x].rank == 4))) {
        for (int i = 1; i < n->n_inputs; i++) lay_plain(l, n->inputs[i]);
        lay_join(l, x, y);
        return;
    }
    if (strcmp(t, "GlobalAveragePool") == 0 && is_one_output) {
        lay_plain(l, y); /* [N, C, 1, 1]: the same floats in either layout */
        return;
    }
    bool is_binary = strcmp(t, "Add") == 0 || strcmp(t, "Sub") == 0 || strcmp(t, "Mul") == 0 ||
                     strcmp(t, "Div") == 0;
    if (is_binary && n->n_inputs == 2 && is_one_output && is_activation(g, n->inputs[0]) &&
        is_activation(g, n->inputs[1]) && same_shape(&g->tensors[n->inputs[0]], &g->tensors[y]) &&
        same_shape(&g->tensors[n->inputs[1]], &g->tensors[y])) {
        lay_join(l, n->inputs[0], y);
        lay_join(l, n->inputs[1], y);
        return;
    }
    bool is_concat = strcmp(t, "Concat") == 0, is_split = strcmp(t, "Split") == 0;
    if ((is_concat || is_split) && x >= 0 && g->tensors[x].rank == 4) {
        int64_t axis = rlt_graph_attr_int(n, "axis", is_split ? 0 : 1);
        if (axis == 1 || axis == -3) {
            /* whole blocks of channels: the same bytes per batch item as NCHW */
            int n_data = is_split ? 1 : n->n_inputs;
            for (int i = 0; i < n->n_inputs; i++) {
                if (i < n_data && is_activation(g, n->inputs[i])) lay_join(l, n->inputs[i], y);
                else lay_plain(l, n->inputs[i]);
            }
            for (int o = 0; o < n->n_outputs; o++) lay_join(l, n->outputs[o], is_split ? x : y);
            return;
        }
    }
    lay_plain_node(l, n);
}

/* Which activations are blocked: out->tensor_block. */
static rlt_status choose_layouts(const rlt_graph *g, int block, const occurrence *occ, int n_occ, const bool *claimed,
                                 int *tensor_block, rlt_diag *diag)
{
    layouts l = {rlt_calloc((size_t)g->n_tensors + 1, sizeof *l.parent),
                 rlt_calloc((size_t)g->n_tensors + 1, sizeof *l.is_plain)};
    if (!l.parent || !l.is_plain) {
        rlt_free(l.parent);
        rlt_free(l.is_plain);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory choosing layouts");
    }
    for (int t = 0; t < g->n_tensors; t++) {
        const rlt_graph_tensor *gt = &g->tensors[t];
        l.parent[t] = t;
        l.is_plain[t] = gt->data || !gt->has_shape || gt->dtype != RLT_DTYPE_FLOAT32 || gt->rank != 4 ||
                        gt->dims[1] % block != 0;
    }
    for (int i = 0; i < g->n_inputs; i++) lay_plain(&l, g->inputs[i]);
    for (int i = 0; i < g->n_outputs; i++) lay_plain(&l, g->outputs[i]);
    bool *is_kernel = rlt_calloc((size_t)g->n_nodes + 1, sizeof *is_kernel);
    if (!is_kernel) {
        rlt_free(l.parent);
        rlt_free(l.is_plain);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory choosing layouts");
    }
    for (int i = 0; i < n_occ; i++) {
        const occurrence *o = &occ[i];
        const rlt_graph_node *kn = &g->nodes[o->node];
        is_kernel[o->node] = true;
        if (strncmp(o->k.spec, "conv2d:", 7) == 0) {
            lay_join(&l, o->res, o->out); /* the residual is read in the output's layout */
            for (int j = 1; j < kn->n_inputs; j++) lay_plain(&l, kn->inputs[j]);
        } else if (strncmp(o->k.spec, "depthwise_conv2d:", 17) == 0) {
            lay_join(&l, kn->inputs[0], o->out); /* one block for both: a channel maps to itself */
            lay_join(&l, o->res, o->out);
            for (int j = 1; j < kn->n_inputs; j++) lay_plain(&l, kn->inputs[j]);
        } else {
            lay_plain_node(&l, kn);
            lay_plain(&l, o->out);
            lay_plain(&l, o->res);
        }
    }
    for (int n = 0; n < g->n_nodes; n++)
        if (!g->nodes[n].is_removed && !claimed[n] && !is_kernel[n]) lay_node(g, &l, n);
    for (int t = 0; t < g->n_tensors; t++)
        if (l.is_plain[t]) l.is_plain[lay_find(&l, t)] = true;
    for (int t = 0; t < g->n_tensors; t++) tensor_block[t] = l.is_plain[lay_find(&l, t)] ? 0 : block;
    rlt_free(is_kernel);
    rlt_free(l.parent);
    rlt_free(l.is_plain);
    return RLT_STATUS_OK;
}

/* ---- extraction ------------------------------------------------------------------ */

rlt_status rlt_graph_tasks_extract(const rlt_graph *g, rlt_graph_tasks *out, rlt_diag *diag)
{
    return rlt_graph_tasks_extract_blocked(g, 0, out, diag);
}

rlt_status rlt_graph_tasks_extract_blocked(const rlt_graph *g, int block, rlt_graph_tasks *out, rlt_diag *diag)
{
    rlt_graph_tasks res = {0};
    readers rd = {0};
    bool *claimed = NULL;
    occurrence *occ = NULL;
    int n_occ = 0;
    rlt_status st = RLT_STATUS_OK;
    RLT_ASSERT(block >= 0);
    for (int n = 0; n < g->n_nodes; n++) {
        const rlt_graph_node *node = &g->nodes[n];
        if (node->is_removed) continue;
        for (int o = 0; o < node->n_outputs; o++) {
            if (node->outputs[o] >= 0 && !g->tensors[node->outputs[o]].has_shape) {
                st = rlt_graph_node_fail(g, node, diag, RLT_STATUS_INVALID_ARGUMENT,
                                         "output '%s' has no shape: the graph is not inferred",
                                         g->tensors[node->outputs[o]].name);
                goto cleanup;
            }
        }
    }
    if ((st = readers_count(g, &rd, diag)) != RLT_STATUS_OK) goto cleanup;
    if (!(claimed = rlt_calloc((size_t)g->n_nodes + 1, sizeof *claimed)) ||
        !(occ = rlt_calloc((size_t)g->n_nodes + 1, sizeof *occ))) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory listing tasks");
        goto cleanup;
    }
    /* the occurrences, and every other node */
    for (int n = 0; n < g->n_nodes; n++) {
        if (g->nodes[n].is_removed || claimed[n]) continue;
        kernel k;
        double flops = 0;
        if (!classify(g, n, &k)) {
            st = other_add(&res, g, n, "", diag);
        } else {
            if (k.is_task && (st = kernel_finish(&k, NULL, &flops, diag)) != RLT_STATUS_OK) goto cleanup;
            if (!k.is_task) {
                st = other_add(&res, g, n, k.reason, diag);
            } else {
                occurrence *o = &occ[n_occ++];
                o->k = k;
                o->node = n;
                snprintf(o->epi, sizeof o->epi, "%s", k.own);
                o->n_fused = epilogue_walk(g, &rd, claimed, n, k.channel_axis, o->epi, sizeof o->epi, o->fused);
                o->out = o->n_fused ? g->nodes[o->fused[o->n_fused - 1]].outputs[0] : g->nodes[n].outputs[0];
                o->res = -1;
                int t = g->nodes[n].outputs[0];
                for (int f = 0; f < o->n_fused; f++) {
                    const rlt_graph_node *fn = &g->nodes[o->fused[f]];
                    if (strcmp(fn->op_type, "Add") == 0) {
                        int other = fn->inputs[0] == t ? fn->inputs[1] : fn->inputs[0];
                        if (!g->tensors[other].data) o->res = other;
                    }
                    t = fn->outputs[0];
                }
            }
        }
        if (st != RLT_STATUS_OK) goto cleanup;
    }
    if (block > 0) {
        if (!(res.tensor_block = rlt_calloc((size_t)g->n_tensors + 1, sizeof *res.tensor_block))) {
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory listing tasks");
            goto cleanup;
        }
        res.block = block;
        if ((st = choose_layouts(g, block, occ, n_occ, claimed, res.tensor_block, diag)) != RLT_STATUS_OK)
            goto cleanup;
    }
    /* the tasks: each occurrence's op, in its tensors' layouts */
    for (int i = 0; i < n_occ; i++) {
        occurrence *o = &occ[i];
        double flops = 0;
        if (res.tensor_block && strncmp(o->k.spec, "conv2d:", 7) == 0) {
            int bi = res.tensor_block[g->nodes[o->node].inputs[0]], bo = res.tensor_block[o->out];
            size_t len = strlen(o->k.spec);
            if (bi) len += (size_t)snprintf(o->k.spec + len, sizeof o->k.spec - len, ",iblock=%d", bi);
            if (bo) snprintf(o->k.spec + len, sizeof o->k.spec - len, ",oblock=%d", bo);
        } else if (res.tensor_block && strncmp(o->k.spec, "depthwise_conv2d:", 17) == 0 && res.tensor_block[o->out]) {
            size_t len = strlen(o->k.spec);
            snprintf(o->k.spec + len, sizeof o->k.spec - len, ",block=%d", res.tensor_block[o->out]);
        }
        if ((st = kernel_finish(&o->k, o->epi, &flops, diag)) != RLT_STATUS_OK) goto cleanup;
        RLT_ASSERT(o->k.is_task); /* the base op parsed; an epilogue and whole blocks add no size */
        if ((st = task_add(&res, o->k.spec, o->epi, flops, o->node, o->fused, o->n_fused, diag)) != RLT_STATUS_OK)
            goto cleanup;
    }
    *out = res;
    memset(&res, 0, sizeof res);
cleanup:
    rlt_graph_tasks_free(&res);
    rlt_free(occ);
    rlt_free(claimed);
    rlt_free(rd.reader);
    rlt_free(rd.n_reads);
    return st;
}
