/*
 * dnnl_net.c - a whole network as a chain of oneDNN (v2.x C API) primitives:
 * the baseline that `bench.py --onednn` sets beside ONNX Runtime and
 * `rltune run` (issue 27). Built as build/bench_dnnl_net when oneDNN is
 * found.
 *
 * Usage: bench_dnnl_net MODEL.onnx [--input X.npy] [--check Y.npy] [--threads N]
 *                       [--repeat R] [--warmup W] [--json] [--verbose]
 *
 * The model is read by rltune's own importer, as `rltune run` reads it
 * (rlt_graph_load_onnx: shapes inferred, constant subgraphs folded; then
 * rlt_graph_fold_batchnorm and rlt_graph_dce), and built the way a user of
 * oneDNN writes a network well:
 *   Conv               convolution (direct), source, weights and destination
 *                      with format_tag_any (oneDNN picks its blocked layouts);
 *                      grouped (depthwise) as GOIHW weights; the folded
 *                      BatchNormalization is its bias
 *   Relu, Clip         eltwise post-ops of the Conv / Gemm / Add before them
 *                      (relu, clip), else an eltwise primitive
 *   Add                a sum post-op of the Conv (or Gemm) that produces one
 *                      operand, computed in place in the other operand's
 *                      buffer when nothing reads that later (else into a copy);
 *                      else a binary add
 *   BatchNormalization folded into the Conv before it (rltune's folding);
 *                      else batch normalization with the running statistics
 *   MaxPool, AveragePool, GlobalAveragePool
 *                      pooling on the layout of their input (global: one
 *                      window over the whole plane)
 *   Concat             concat, each input in its layout, the output in the
 *                      layout oneDNN picks
 *   Flatten            nothing when a Gemm reads it: the inner product takes
 *                      the 4-D tensor in its layout and the weights as
 *                      [N,C,H,W]; else a reorder to row-major and a view
 *   Gemm               inner product (weights format_tag_any; alpha and beta
 *                      folded into the weights and bias)
 * Reorders run only where a primitive's layout differs from its input's:
 * the network's input, between primitives that chose different layouts,
 * and the output back to row-major. Weights are reordered into the
 * primitives' layouts once, before anything is timed. Activations live in
 * a pool of buffers reused after a tensor's last reader (best fit), as a
 * framework's memory planner would reuse them. Any other op, or an
 * attribute the chain does not build, is refused with a message that names
 * the node and its op type.
 *
 * Threads: this oneDNN runs on OpenMP (libgomp, loaded with libdnnl; rltune
 * links the same runtime, so the process has one): the thread count is set
 * with omp_set_num_threads before the first primitive is created (oneDNN
 * plans its blocking for it). Nothing is pinned: pin from outside
 * (taskset), as bench.py does for all three of ONNX Runtime, rltune and
 * this. A process that holds a second OpenMP runtime (LLVM's libomp,
 * Intel's libiomp5) is refused: two runtimes' spinning workers take turns
 * on the cores (bench/RESULTS.md, "What the two-thread gap was").
 *
 * What is timed: W warm-up runs (default 5), then R runs (default 20), each
 * the whole chain (input reorder to output reorder) and the stream waited
 * on, timed alone; the median and the minimum in ms.
 *
 * --input X.npy gives the input (float32, the model's input shape; default:
 * uniform [-1, 1) from a fixed seed); --check Y.npy compares the output
 * with a reference (ort_baseline.py --write-output): max |out - ref| /
 * max |ref|, which must be at most 1e-4.
 *
 * Exit status: 0 ran (and matched), 1 oneDNN failed or the check failed,
 * 2 bad usage, or a model or input the chain does not take.
 */
#include "core/core.h"
#include "graph/graph.h"
#include "rltune/npy.h"

#include <dnnl.h>
#include <dnnl_debug.h>

#include <ctype.h>
#include <dlfcn.h>
#include <float.h>
#include <limits.h>
#include <link.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../timing.h"

#define PROGRAM "bench_dnnl_net"
#define CHECK_MAX_REL_ERR 1e-4
#define MAX_STEP_ARGS 16 /* a Concat of up to 15 tensors */
#define MAX_POST_OPS 4
#define INPUT_SEED 1

/* ---- the chain ------------------------------------------------------------ */

/* One activation as oneDNN sees it: a layout over a buffer. A view reads
 * another value's buffer with another descriptor (a Flatten of a row-major
 * tensor); an external value is a buffer of the caller's (the input, the
 * output). */
typedef struct value {
    dnnl_memory_desc_t md;
    int tensor;        /* the graph tensor it holds now, for messages and the layout cache */
    int view_of;       /* -1, or the value whose buffer this one reads */
    bool has_views;    /* another value reads this one's buffer */
    void *external;    /* the caller's buffer, borrowed; NULL: from the pool */
    int last_step;     /* the last step using it (its views' uses included); INT_MAX: kept to the end */
    int buffer;        /* index into chain.buffers; -1: external or not yet placed */
    dnnl_memory_t mem; /* owned */
} value;

/* An argument of a step: a value, or a fixed memory (weights, bias). */
typedef struct step_arg {
    int arg;              /* DNNL_ARG_SRC, ... */
    int value;            /* index into chain.values, or -1 */
    dnnl_memory_t fixed;  /* borrowed from chain.weights when value is -1 */
} step_arg;

typedef struct step {
    dnnl_primitive_t prim; /* owned */
    int node;              /* the graph node it runs (the first of those fused); -1: the output's reorder */
    char what[32];         /* "convolution", "reorder", ... */
    char impl[48];         /* oneDNN's implementation name */
    char post_ops[64];     /* "sum,relu", or "" */
    int n_args;
    step_arg args[MAX_STEP_ARGS];
    dnnl_exec_arg_t exec[MAX_STEP_ARGS];
} step;

typedef struct chain {
    const rlt_graph *g;   /* borrowed */
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    value *values;        /* heap */
    int n_values, cap_values;
    step *steps;          /* heap */
    int n_steps, cap_steps;
    dnnl_memory_t *weights; /* heap; each owned: the prepared weights and biases */
    int n_weights, cap_weights;
    void **buffers;       /* heap; each owned (free) */
    size_t *buffer_bytes; /* heap */
    bool *buffer_is_free; /* heap */
    int n_buffers;
    /* per graph tensor */
    int *tensor_value;    /* the value holding it as its producer wrote it; -1: not computed */
    int *n_readers;       /* live nodes reading it (once per input slot) */
    int *reader;          /* the reader when there is one */
    bool *is_output;      /* a graph output */
    /* per graph node */
    bool *is_done;        /* run (or fused into a step run) already */
    bool *is_folded;      /* a Flatten that the inner product after it takes over */
    int input_value, output_value;
    int n_reorders;
} chain;

static bool dnnl_ok(dnnl_status_t st, const char *what, rlt_diag *diag)
{
    if (st == dnnl_success) return true;
    rlt_fail(diag, RLT_STATUS_INTERNAL, "oneDNN %s failed: %s", what, dnnl_status2str(st));
    return false;
}

/* The same, naming the node it was for. */
static bool node_dnnl_ok(const chain *c, int node, dnnl_status_t st, const char *what, rlt_diag *diag)
{
    if (st == dnnl_success) return true;
    rlt_graph_node_fail(c->g, &c->g->nodes[node], diag, RLT_STATUS_INTERNAL, "oneDNN %s failed: %s", what,
                        dnnl_status2str(st));
    return false;
}

static bool grow(void **p, int *cap, int need, size_t item_bytes, rlt_diag *diag)
{
    if (need <= *cap) return true;
    int n = *cap ? *cap * 2 : 16;
    while (n < need) n *= 2;
    void *q = rlt_realloc(*p, (size_t)n * item_bytes);
    if (!q) {
        rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory building the chain");
        return false;
    }
    *p = q;
    *cap = n;
    return true;
}

/* Adds a value with layout md; its index, or -1 when out of memory. */
static int value_add(chain *c, const dnnl_memory_desc_t *md, int tensor, rlt_diag *diag)
{
    if (!grow((void **)&c->values, &c->cap_values, c->n_values + 1, sizeof *c->values, diag)) return -1;
    c->values[c->n_values] = (value){.md = *md, .tensor = tensor, .view_of = -1, .last_step = -1, .buffer = -1};
    return c->n_values++;
}

static int value_root(const chain *c, int v)
{
    while (c->values[v].view_of >= 0) v = c->values[v].view_of;
    return v;
}

/* Row-major descriptor of a graph tensor's shape (rank 0 as [1]). */
static bool md_plain(dnnl_memory_desc_t *md, int rank, const int64_t *dims, rlt_diag *diag)
{
    dnnl_dims_t d, s;
    int64_t stride = 1;
    int n = rank > 0 ? rank : 1;
    for (int i = n - 1; i >= 0; i--) {
        d[i] = rank > 0 ? dims[i] : 1;
        s[i] = stride;
        stride *= d[i];
    }
    return dnnl_ok(dnnl_memory_desc_init_by_strides(md, n, d, dnnl_f32, s), "memory_desc_init_by_strides", diag);
}

static bool md_strided(dnnl_memory_desc_t *md, int n, const int64_t *dims, const int64_t *strides, rlt_diag *diag)
{
    dnnl_dims_t d, s;
    for (int i = 0; i < n; i++) {
        d[i] = dims[i];
        s[i] = strides[i];
    }
    return dnnl_ok(dnnl_memory_desc_init_by_strides(md, n, d, dnnl_f32, s), "memory_desc_init_by_strides", diag);
}

static bool md_any(dnnl_memory_desc_t *md, int n, const int64_t *dims, rlt_diag *diag)
{
    dnnl_dims_t d;
    for (int i = 0; i < n; i++) d[i] = dims[i];
    return dnnl_ok(dnnl_memory_desc_init_by_tag(md, n, d, dnnl_f32, dnnl_format_tag_any),
                   "memory_desc_init_by_tag(any)", diag);
}

static bool md_equal(const dnnl_memory_desc_t *a, const dnnl_memory_desc_t *b)
{
    return dnnl_memory_desc_equal(a, b) != 0;
}

/* "nChw16c": the dims outer to inner (by stride), upper case where blocked,
 * then the inner blocks (as bench/dnnl.c prints them; "abcd" letters). */
static void format_layout(const dnnl_memory_desc_t *md, char *buf, size_t cap)
{
    static const char letters[] = "abcdefgh";
    if (md->format_kind != dnnl_blocked || md->ndims > 8) {
        snprintf(buf, cap, "(format kind %s)", dnnl_fmt_kind2str(md->format_kind));
        return;
    }
    const dnnl_blocking_desc_t *blk = &md->format_desc.blocking;
    int order[DNNL_MAX_NDIMS];
    for (int i = 0; i < md->ndims; i++) order[i] = i;
    for (int i = 1; i < md->ndims; i++) /* insertion sort: stride descending, ties in dim order */
        for (int j = i; j > 0 && blk->strides[order[j]] > blk->strides[order[j - 1]]; j--) {
            int x = order[j];
            order[j] = order[j - 1];
            order[j - 1] = x;
        }
    size_t k = 0;
    for (int i = 0; i < md->ndims && k + 1 < cap; i++) {
        int d = order[i];
        bool is_blocked = false;
        for (int j = 0; j < blk->inner_nblks; j++) is_blocked |= blk->inner_idxs[j] == d;
        buf[k++] = is_blocked ? (char)toupper((unsigned char)letters[d]) : letters[d];
    }
    buf[k] = '\0';
    for (int j = 0; j < blk->inner_nblks && k < cap; j++)
        k += (size_t)snprintf(buf + k, cap - k, "%lld%c", (long long)blk->inner_blks[j], letters[blk->inner_idxs[j]]);
}

/* Appends a step running the primitive of pd (created here; pd stays the
 * caller's). */
static bool step_add(chain *c, const_dnnl_primitive_desc_t pd, int node, const char *what, const char *post_ops,
                     int n_args, const step_arg *args, rlt_diag *diag)
{
    RLT_ASSERT(n_args <= MAX_STEP_ARGS);
    if (!grow((void **)&c->steps, &c->cap_steps, c->n_steps + 1, sizeof *c->steps, diag)) return false;
    step *s = &c->steps[c->n_steps];
    *s = (step){.node = node, .n_args = n_args};
    snprintf(s->what, sizeof s->what, "%s", what);
    snprintf(s->post_ops, sizeof s->post_ops, "%s", post_ops ? post_ops : "");
    memcpy(s->args, args, sizeof *args * (size_t)n_args);
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl) impl = "?";
    snprintf(s->impl, sizeof s->impl, "%s", impl);
    dnnl_status_t st = dnnl_primitive_create(&s->prim, pd);
    if (st != dnnl_success) {
        if (node >= 0) return node_dnnl_ok(c, node, st, "primitive_create", diag);
        return dnnl_ok(st, "primitive_create", diag);
    }
    c->n_steps++;
    return true;
}

/* A step that reorders value `from` into value `to`. */
static bool reorder_add(chain *c, int from, int to, int node, rlt_diag *diag)
{
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_status_t st = dnnl_reorder_primitive_desc_create(&rpd, &c->values[from].md, c->engine, &c->values[to].md,
                                                          c->engine, NULL);
    bool ok = node >= 0 ? node_dnnl_ok(c, node, st, "reorder primitive_desc", diag)
                        : dnnl_ok(st, "reorder primitive_desc", diag);
    if (ok) {
        step_arg args[2] = {{DNNL_ARG_FROM, from, NULL}, {DNNL_ARG_TO, to, NULL}};
        ok = step_add(c, rpd, node, "reorder", NULL, 2, args, diag);
        if (ok) c->n_reorders++;
    }
    if (rpd) dnnl_primitive_desc_destroy(rpd);
    return ok;
}

/* The value holding tensor t in layout md: the producer's when the layouts
 * agree, else a reordered copy made before `node` (one per layout, which
 * later readers share). -1 on failure. */
static int value_in_layout(chain *c, int t, const dnnl_memory_desc_t *md, int node, rlt_diag *diag)
{
    int v = c->tensor_value[t];
    RLT_ASSERT(v >= 0);
    if (md_equal(&c->values[v].md, md)) return v;
    for (int i = 0; i < c->n_values; i++)
        if (c->values[i].tensor == t && md_equal(&c->values[i].md, md)) return i;
    int copy = value_add(c, md, t, diag);
    if (copy < 0 || !reorder_add(c, v, copy, node, diag)) return -1;
    return copy;
}

/* Weights or a bias in the primitive's layout `want`, from constant data
 * laid out as `user` (borrowed for the call): reordered once, here, outside
 * anything timed. NULL on failure. */
static dnnl_memory_t weights_prepare(chain *c, int node, const float *data, const dnnl_memory_desc_t *user,
                                     const dnnl_memory_desc_t *want, rlt_diag *diag)
{
    if (!grow((void **)&c->weights, &c->cap_weights, c->n_weights + 1, sizeof *c->weights, diag)) return NULL;
    dnnl_memory_t to = NULL, from = NULL;
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t reorder = NULL;
    bool ok = node_dnnl_ok(c, node, dnnl_memory_create(&to, want, c->engine, DNNL_MEMORY_ALLOCATE),
                           "memory_create (weights)", diag) &&
              node_dnnl_ok(c, node, dnnl_memory_create(&from, user, c->engine, (void *)data),
                           "memory_create (weights)", diag) &&
              node_dnnl_ok(c, node, dnnl_reorder_primitive_desc_create(&rpd, user, c->engine, want, c->engine, NULL),
                           "reorder primitive_desc (weights)", diag) &&
              node_dnnl_ok(c, node, dnnl_primitive_create(&reorder, rpd), "primitive_create (weights reorder)",
                           diag);
    if (ok) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
        ok = node_dnnl_ok(c, node, dnnl_primitive_execute(reorder, c->stream, 2, args), "weights reorder", diag) &&
             node_dnnl_ok(c, node, dnnl_stream_wait(c->stream), "stream_wait (weights reorder)", diag);
    }
    if (reorder) dnnl_primitive_destroy(reorder);
    if (rpd) dnnl_primitive_desc_destroy(rpd);
    if (from) dnnl_memory_destroy(from);
    if (!ok) {
        if (to) dnnl_memory_destroy(to);
        return NULL;
    }
    c->weights[c->n_weights++] = to;
    return to;
}

/* ---- what the chain takes -------------------------------------------------- */

static const char *const SUPPORTED_OPS[] = {"Conv",    "BatchNormalization", "Relu",   "Clip",
                                            "Add",     "MaxPool",            "AveragePool", "GlobalAveragePool",
                                            "Concat",  "Flatten",            "Gemm"};

static bool is_op(const rlt_graph_node *n, const char *op) { return strcmp(n->op_type, op) == 0; }

static const rlt_graph_tensor *tensor_of(const chain *c, int t) { return t >= 0 ? &c->g->tensors[t] : NULL; }

static bool is_const_f32(const rlt_graph_tensor *t) { return t && t->data && t->dtype == RLT_DTYPE_FLOAT32; }

/* An activation: computed, float32, not a constant. */
static bool is_activation(const rlt_graph_tensor *t) { return t && !t->data && t->dtype == RLT_DTYPE_FLOAT32; }

static bool same_shape(const rlt_graph_tensor *a, const rlt_graph_tensor *b)
{
    if (a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i]) return false;
    return true;
}

/* Clip's bounds: the min / max inputs (opset 11+) or attributes (before);
 * -FLT_MAX / FLT_MAX when absent. False when one is not a constant scalar. */
static bool clip_bounds(const chain *c, const rlt_graph_node *n, float *lo, float *hi)
{
    *lo = -FLT_MAX;
    *hi = FLT_MAX;
    if (c->g->opset < 11) {
        *lo = (float)rlt_graph_attr_float(n, "min", -FLT_MAX);
        *hi = (float)rlt_graph_attr_float(n, "max", FLT_MAX);
        return true;
    }
    for (int i = 1; i < n->n_inputs && i < 3; i++) {
        const rlt_graph_tensor *t = tensor_of(c, n->inputs[i]);
        if (!t) continue;
        if (!is_const_f32(t) || rlt_graph_tensor_n_elems(t) != 1) return false;
        *(i == 1 ? lo : hi) = *(const float *)t->data;
    }
    return true;
}

/* INVALID_ARGUMENT naming the node when the chain cannot build it. */
static rlt_status node_check(const chain *c, int node, rlt_diag *diag)
{
    const rlt_graph *g = c->g;
    const rlt_graph_node *n = &g->nodes[node];
    bool is_known = false;
    for (size_t i = 0; i < RLT_ARRAY_LEN(SUPPORTED_OPS); i++) is_known |= is_op(n, SUPPORTED_OPS[i]);
    if (!is_known)
        return rlt_graph_node_fail(g, n, diag, RLT_STATUS_INVALID_ARGUMENT,
                                   "the oneDNN chain has no primitive for %s; it builds Conv, BatchNormalization, "
                                   "Relu, Clip, Add, MaxPool, AveragePool, GlobalAveragePool, Concat, Flatten and "
                                   "Gemm",
                                   n->op_type);
    const rlt_graph_tensor *x = tensor_of(c, n->n_inputs > 0 ? n->inputs[0] : -1);
    const rlt_graph_tensor *y = tensor_of(c, n->n_outputs > 0 ? n->outputs[0] : -1);
    if (!is_activation(x) || !y || y->dtype != RLT_DTYPE_FLOAT32)
        return rlt_graph_node_fail(g, n, diag, RLT_STATUS_INVALID_ARGUMENT,
                                   "its first input must be a float32 activation (not a constant) and its output "
                                   "float32");
    if (rlt_graph_tensor_n_elems(x) == 0 || rlt_graph_tensor_n_elems(y) == 0)
        return rlt_graph_node_fail(g, n, diag, RLT_STATUS_INVALID_ARGUMENT,
                                   "an empty tensor (a dimension of 0); the oneDNN chain runs none");
    for (int i = 1; i < n->n_outputs; i++)
        if (n->outputs[i] >= 0 && c->n_readers[n->outputs[i]] + c->is_output[n->outputs[i]] > 0)
            return rlt_graph_node_fail(g, n, diag, RLT_STATUS_INVALID_ARGUMENT,
                                       "output %d is read; the oneDNN chain computes only the first output", i);
    bool is_pool = is_op(n, "MaxPool") || is_op(n, "AveragePool") || is_op(n, "GlobalAveragePool");
    if ((is_op(n, "Conv") || is_op(n, "BatchNormalization") || is_pool) && x->rank != 4)
        return rlt_graph_node_fail(g, n, diag, RLT_STATUS_INVALID_ARGUMENT,
                                   "input of rank %d; the oneDNN chain builds 2-D %s only (rank 4, NCHW)", x->rank,
                                   n->op_type);
    if (is_op(n, "Conv")) {
        const rlt_graph_tensor *w = tensor_of(c, n->inputs[1]);
        const rlt_graph_tensor *b = tensor_of(c, n->n_inputs > 2 ? n->inputs[2] : -1);
        if (!is_const_f32(w) || w->rank != 4)
            return rlt_graph_node_fail(g, n, diag, RLT_STATUS_INVALID_ARGUMENT,
                                       "the weights must be a float32 constant of rank 4");
        if (b && (!is_const_f32(b) || rlt_graph_tensor_n_elems(b) != w->dims[0]))
            return rlt_graph_node_fail(g, n, diag, RLT_STATUS_INVALID_ARGUMENT,
                                       "the bias must be a float32 constant of %lld values",
                                       (long long)w->dims[0]);
    } else if (is_op(n, "BatchNormalization")) {
        for (int i = 1; i < 5; i++) {
            const rlt_graph_tensor *t = tensor_of(c, i < n->n_inputs ? n->inputs[i] : -1);
            if (!is_const_f32(t) || rlt_graph_tensor_n_elems(t) != x->dims[1])
                return rlt_graph_node_fail(g, n, diag, RLT_STATUS_INVALID_ARGUMENT,
                                           "scale, B, mean and var must be float32 constants of %lld values",
                                           (long long)x->dims[1]);
        }
    } else if (is_op(n, "Clip")) {
        float lo, hi;
        if (!clip_bounds(c, n, &lo, &hi))
            return rlt_graph_node_fail(g, n, diag, RLT_STATUS_INVALID_ARGUMENT,
                                       "min and max must be float32 constant scalars");
    } else if (is_op(n, "Add")) {
        const rlt_graph_tensor *x1 = tensor_of(c, n->inputs[1]);
        if (!is_activation(x1) || !same_shape(x, x1))
            return rlt_graph_node_fail(g, n, diag, RLT_STATUS_INVALID_ARGUMENT,
                                       "the oneDNN chain adds two float32 activations of the same shape only "
                                       "(no constant, no broadcast)");
    } else if (is_op(n, "Concat")) {
        if (n->n_inputs > MAX_STEP_ARGS - 1)
            return rlt_graph_node_fail(g, n, diag, RLT_STATUS_INVALID_ARGUMENT,
                                       "%d inputs; the oneDNN chain concatenates at most %d", n->n_inputs,
                                       MAX_STEP_ARGS - 1);
        for (int i = 1; i < n->n_inputs; i++)
            if (!is_activation(tensor_of(c, n->inputs[i])) || tensor_of(c, n->inputs[i])->rank != x->rank)
                return rlt_graph_node_fail(g, n, diag, RLT_STATUS_INVALID_ARGUMENT,
                                           "input %d must be a float32 activation (not a constant) of rank %d", i,
                                           x->rank);
    } else if (is_op(n, "MaxPool") && rlt_graph_attr_int(n, "storage_order", 0) != 0) {
        return rlt_graph_node_fail(g, n, diag, RLT_STATUS_INVALID_ARGUMENT, "storage_order 1 is not built");
    } else if (is_op(n, "Gemm")) {
        const rlt_graph_tensor *w = tensor_of(c, n->inputs[1]);
        const rlt_graph_tensor *b = tensor_of(c, n->n_inputs > 2 ? n->inputs[2] : -1);
        if (rlt_graph_attr_int(n, "transA", 0) != 0 || x->rank != 2)
            return rlt_graph_node_fail(g, n, diag, RLT_STATUS_INVALID_ARGUMENT,
                                       "A must be a [M,K] activation and transA 0");
        if (!is_const_f32(w) || w->rank != 2)
            return rlt_graph_node_fail(g, n, diag, RLT_STATUS_INVALID_ARGUMENT,
                                       "B must be a float32 constant of rank 2");
        int64_t n_out = y->dims[1];
        bool is_per_output = b && is_const_f32(b) && rlt_graph_tensor_n_elems(b) == n_out &&
                             (b->rank == 1 || (b->rank == 2 && b->dims[0] == 1));
        if (b && !is_per_output)
            return rlt_graph_node_fail(g, n, diag, RLT_STATUS_INVALID_ARGUMENT,
                                       "C must be a float32 constant of shape [%lld] or [1,%lld]",
                                       (long long)n_out, (long long)n_out);
    }
    return RLT_STATUS_OK;
}

/* ---- post-ops: what fuses into a primitive --------------------------------- */

typedef struct fusion {
    int out;           /* the tensor the fused primitive writes */
    int sum_tensor;    /* the operand a sum post-op adds (the first post-op), -1: none */
    int add_node;      /* the Add fused as the sum, -1: none */
    int n_eltwise;
    dnnl_alg_kind_t alg[MAX_POST_OPS];
    float alpha[MAX_POST_OPS], beta[MAX_POST_OPS];
    int n_nodes;
    int nodes[MAX_POST_OPS + 1]; /* the fused nodes after the primitive's own */
    char names[64];              /* "sum,relu" */
} fusion;

/* The nodes after `node` that fuse into its primitive: while the current
 * tensor has exactly one reader and is no graph output, an Add of an
 * operand already computed (first only, when allowed: a sum post-op), then
 * Relus and Clips (eltwise post-ops). */
static void fusion_find(const chain *c, int node, bool allows_sum, fusion *f)
{
    const rlt_graph *g = c->g;
    *f = (fusion){.out = g->nodes[node].outputs[0], .sum_tensor = -1, .add_node = -1};
    size_t k = 0;
    while (f->n_nodes < (int)RLT_ARRAY_LEN(f->nodes) && f->n_eltwise < MAX_POST_OPS) {
        int cur = f->out;
        if (c->is_output[cur] || c->n_readers[cur] != 1) break;
        int r = c->reader[cur];
        const rlt_graph_node *rn = &g->nodes[r];
        const char *name = NULL;
        if (is_op(rn, "Add") && allows_sum && f->n_nodes == 0) {
            if (rn->inputs[0] == rn->inputs[1]) break;
            int other = rn->inputs[0] == cur ? rn->inputs[1] : rn->inputs[0];
            if (!is_activation(tensor_of(c, other)) || c->tensor_value[other] < 0 ||
                !same_shape(&g->tensors[other], &g->tensors[cur]))
                break;
            f->sum_tensor = other;
            f->add_node = r;
            name = "sum";
        } else if (is_op(rn, "Relu") || is_op(rn, "Clip")) {
            float lo = 0, hi = 0;
            if (is_op(rn, "Clip") && !clip_bounds(c, rn, &lo, &hi)) break;
            f->alg[f->n_eltwise] = is_op(rn, "Relu") ? dnnl_eltwise_relu : dnnl_eltwise_clip;
            f->alpha[f->n_eltwise] = lo;
            f->beta[f->n_eltwise] = hi;
            f->n_eltwise++;
            name = is_op(rn, "Relu") ? "relu" : "clip";
        } else {
            break;
        }
        k += (size_t)snprintf(f->names + k, sizeof f->names - k, "%s%s", k ? "," : "", name);
        if (k >= sizeof f->names) k = sizeof f->names - 1;
        f->nodes[f->n_nodes++] = r;
        f->out = rn->outputs[0];
    }
}

/* The primitive attributes for f's post-ops (*attr NULL when there are
 * none; destroy with dnnl_primitive_attr_destroy). */
static bool fusion_attr(const chain *c, int node, const fusion *f, dnnl_primitive_attr_t *attr, rlt_diag *diag)
{
    *attr = NULL;
    if (f->sum_tensor < 0 && f->n_eltwise == 0) return true;
    dnnl_post_ops_t po = NULL;
    bool ok = node_dnnl_ok(c, node, dnnl_post_ops_create(&po), "post_ops_create", diag);
    if (ok && f->sum_tensor >= 0) ok = node_dnnl_ok(c, node, dnnl_post_ops_append_sum(po, 1.0f), "post-op sum", diag);
    for (int i = 0; ok && i < f->n_eltwise; i++)
        ok = node_dnnl_ok(c, node, dnnl_post_ops_append_eltwise(po, 1.0f, f->alg[i], f->alpha[i], f->beta[i]),
                          "post-op eltwise", diag);
    ok = ok && node_dnnl_ok(c, node, dnnl_primitive_attr_create(attr), "primitive_attr_create", diag) &&
         node_dnnl_ok(c, node, dnnl_primitive_attr_set_post_ops(*attr, po), "primitive_attr_set_post_ops", diag);
    if (po) dnnl_post_ops_destroy(po);
    if (!ok && *attr) {
        dnnl_primitive_attr_destroy(*attr);
        *attr = NULL;
    }
    return ok;
}

/* True when value v (holding tensor t) may be overwritten by `node`'s
 * primitive: a pool buffer that nothing else reads through a view, and
 * every reader of t but `except` already run. */
static bool may_overwrite(const chain *c, int v, int t, int except)
{
    const value *val = &c->values[v];
    if (val->external || val->view_of >= 0 || val->has_views || c->is_output[t]) return false;
    const rlt_graph *g = c->g;
    for (int i = 0; i < g->n_nodes; i++) {
        const rlt_graph_node *n = &g->nodes[i];
        if (n->is_removed || i == except || c->is_done[i]) continue;
        for (int j = 0; j < n->n_inputs; j++)
            if (n->inputs[j] == t) return false;
    }
    return true;
}

/* The destination value of a primitive that chose layout dst_md and runs
 * the fusion f: where a sum post-op adds an operand, that operand's buffer
 * when it may be overwritten and has the layout, else a copy of it in the
 * layout (made by a reorder before the primitive); otherwise a new value.
 * Records it as the value of f->out. -1 on failure. */
static int fusion_dst(chain *c, int node, const fusion *f, const dnnl_memory_desc_t *dst_md, rlt_diag *diag)
{
    int v;
    if (f->sum_tensor >= 0) {
        int sv = c->tensor_value[f->sum_tensor];
        if (md_equal(&c->values[sv].md, dst_md) && may_overwrite(c, sv, f->sum_tensor, f->add_node)) {
            v = sv;
            c->values[v].tensor = f->out;
        } else if ((v = value_add(c, dst_md, f->out, diag)) < 0 || !reorder_add(c, sv, v, node, diag)) {
            return -1;
        }
    } else if ((v = value_add(c, dst_md, f->out, diag)) < 0) {
        return -1;
    }
    c->tensor_value[f->out] = v;
    return v;
}

static void fusion_done(chain *c, const fusion *f)
{
    for (int i = 0; i < f->n_nodes; i++) c->is_done[f->nodes[i]] = true;
}

/* ---- the nodes -------------------------------------------------------------- */

/* An INTS attribute of n values, or `def` for each when absent. */
static bool attr_ints(const rlt_graph_node *node, const char *name, int n, int64_t def, int64_t *out)
{
    int k = 0;
    const int64_t *v = rlt_graph_attr_ints(node, name, &k);
    if (!v) {
        for (int i = 0; i < n; i++) out[i] = def;
        return true;
    }
    if (k != n) return false;
    memcpy(out, v, sizeof *v * (size_t)n);
    return true;
}

static rlt_status build_conv(chain *c, int node, rlt_diag *diag)
{
    const rlt_graph *g = c->g;
    const rlt_graph_node *n = &g->nodes[node];
    const rlt_graph_tensor *x = &g->tensors[n->inputs[0]], *w = &g->tensors[n->inputs[1]];
    const rlt_graph_tensor *b = tensor_of(c, n->n_inputs > 2 ? n->inputs[2] : -1);
    const rlt_graph_tensor *y = &g->tensors[n->outputs[0]];
    int64_t group = rlt_graph_attr_int(n, "group", 1);
    int64_t strides[2], dil[2], pads[4];
    if (!attr_ints(n, "strides", 2, 1, strides) || !attr_ints(n, "dilations", 2, 1, dil) ||
        !attr_ints(n, "pads", 4, 0, pads) || group < 1 || x->dims[1] % group || w->dims[0] % group)
        return rlt_graph_node_fail(g, n, diag, RLT_STATUS_INVALID_ARGUMENT,
                                   "strides, dilations (2 each), pads (4) or group (%lld) that do not fit",
                                   (long long)group);
    dnnl_dims_t d_strides = {strides[0], strides[1]}, d_dil = {dil[0] - 1, dil[1] - 1};
    dnnl_dims_t pad_l = {pads[0], pads[1]}, pad_r = {pads[2], pads[3]};
    /* the weights: OIHW, or GOIHW [G, O/G, I/G, R, S] when grouped */
    int w_ndims = group > 1 ? 5 : 4;
    int64_t w_dims[5];
    if (group > 1) {
        int64_t gd[5] = {group, w->dims[0] / group, w->dims[1], w->dims[2], w->dims[3]};
        memcpy(w_dims, gd, sizeof gd);
    } else {
        memcpy(w_dims, w->dims, sizeof *w_dims * 4);
    }
    dnnl_memory_desc_t src_any, w_any, w_user, b_md, dst_any;
    if (!md_any(&src_any, 4, x->dims, diag) || !md_any(&w_any, w_ndims, w_dims, diag) ||
        !md_plain(&w_user, w_ndims, w_dims, diag) || !md_plain(&b_md, 1, &w->dims[0], diag) ||
        !md_any(&dst_any, 4, y->dims, diag))
        return diag->status;

    fusion f;
    fusion_find(c, node, true, &f);
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_convolution_desc_t cd;
    rlt_status st = RLT_STATUS_INTERNAL;
    if (!fusion_attr(c, node, &f, &attr, diag) ||
        !node_dnnl_ok(c, node,
                      dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct,
                                                                 &src_any, &w_any, b ? &b_md : NULL, &dst_any,
                                                                 d_strides, d_dil, pad_l, pad_r),
                      "convolution_forward_desc_init", diag) ||
        !node_dnnl_ok(c, node, dnnl_primitive_desc_create(&pd, &cd, attr, c->engine, NULL),
                      "convolution primitive_desc", diag))
        goto cleanup;
    dnnl_memory_desc_t src_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    dnnl_memory_desc_t w_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_memory_desc_t dst_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    int src = value_in_layout(c, n->inputs[0], &src_md, node, diag);
    dnnl_memory_t wm = src >= 0 ? weights_prepare(c, node, w->data, &w_user, &w_md, diag) : NULL;
    dnnl_memory_t bm = wm && b ? weights_prepare(c, node, b->data, &b_md, &b_md, diag) : NULL;
    if (!wm || (b && !bm)) goto cleanup;
    int dst = fusion_dst(c, node, &f, &dst_md, diag);
    if (dst < 0) goto cleanup;
    step_arg args[4] = {{DNNL_ARG_SRC, src, NULL}, {DNNL_ARG_WEIGHTS, -1, wm}, {DNNL_ARG_DST, dst, NULL},
                        {DNNL_ARG_BIAS, -1, bm}};
    if (!step_add(c, pd, node, group > 1 ? "convolution (grouped)" : "convolution", f.names, b ? 4 : 3, args, diag))
        goto cleanup;
    fusion_done(c, &f);
    st = RLT_STATUS_OK;
cleanup:
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return st;
}

/* Pooling in the layout of its input. Where ceil_mode keeps a last window
 * that reaches past the padding, the right padding grows to hold it, which
 * only a max pool may take (its padding is never the maximum). */
static rlt_status build_pool(chain *c, int node, rlt_diag *diag)
{
    const rlt_graph *g = c->g;
    const rlt_graph_node *n = &g->nodes[node];
    const rlt_graph_tensor *x = &g->tensors[n->inputs[0]], *y = &g->tensors[n->outputs[0]];
    bool is_global = is_op(n, "GlobalAveragePool");
    bool is_max = is_op(n, "MaxPool");
    int64_t kernel[2] = {x->dims[2], x->dims[3]}, strides[2] = {1, 1}, dil[2] = {1, 1}, pads[4] = {0, 0, 0, 0};
    if (!is_global && (!attr_ints(n, "kernel_shape", 2, 0, kernel) || !attr_ints(n, "strides", 2, 1, strides) ||
                       !attr_ints(n, "dilations", 2, 1, dil) || !attr_ints(n, "pads", 4, 0, pads)))
        return rlt_graph_node_fail(g, n, diag, RLT_STATUS_INVALID_ARGUMENT,
                                   "kernel_shape, strides, dilations (2 each) or pads (4) that do not fit");
    dnnl_dims_t d_kernel = {kernel[0], kernel[1]}, d_strides = {strides[0], strides[1]};
    dnnl_dims_t d_dil = {dil[0] - 1, dil[1] - 1}, pad_l = {pads[0], pads[1]}, pad_r = {pads[2], pads[3]};
    for (int i = 0; i < 2 && rlt_graph_attr_int(n, "ceil_mode", 0); i++) {
        /* the last window, which ceil_mode keeps, may reach past the padding */
        int64_t need = (y->dims[2 + i] - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - x->dims[2 + i] - pads[i];
        if (need <= pad_r[i]) continue;
        if (!is_max)
            return rlt_graph_node_fail(g, n, diag, RLT_STATUS_INVALID_ARGUMENT,
                                       "ceil_mode 1 makes a window reach past the padding; the oneDNN chain builds "
                                       "that for max pooling only");
        pad_r[i] = need;
    }
    dnnl_alg_kind_t alg = is_max ? dnnl_pooling_max
                          : rlt_graph_attr_int(n, "count_include_pad", 0) ? dnnl_pooling_avg_include_padding
                                                                          : dnnl_pooling_avg_exclude_padding;
    int src = c->tensor_value[n->inputs[0]];
    dnnl_memory_desc_t dst_any;
    if (!md_any(&dst_any, 4, y->dims, diag)) return diag->status;
    dnnl_pooling_v2_desc_t pdesc;
    dnnl_primitive_desc_t pd = NULL;
    rlt_status st = RLT_STATUS_INTERNAL;
    if (!node_dnnl_ok(c, node,
                      dnnl_pooling_v2_forward_desc_init(&pdesc, dnnl_forward_inference, alg, &c->values[src].md,
                                                        &dst_any, d_strides, d_kernel, d_dil, pad_l, pad_r),
                      "pooling_v2_forward_desc_init", diag) ||
        !node_dnnl_ok(c, node, dnnl_primitive_desc_create(&pd, &pdesc, NULL, c->engine, NULL),
                      "pooling primitive_desc", diag))
        goto cleanup;
    dnnl_memory_desc_t dst_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    int dst = value_add(c, &dst_md, n->outputs[0], diag);
    if (dst < 0) goto cleanup;
    c->tensor_value[n->outputs[0]] = dst;
    step_arg args[2] = {{DNNL_ARG_SRC, src, NULL}, {DNNL_ARG_DST, dst, NULL}};
    if (!step_add(c, pd, node, is_max ? "pooling max" : "pooling avg", NULL, 2, args, diag)) goto cleanup;
    st = RLT_STATUS_OK;
cleanup:
    if (pd) dnnl_primitive_desc_destroy(pd);
    return st;
}

/* A BatchNormalization that folded into no Conv: batch normalization with
 * the running statistics (global stats), scale and shift, in the layout of
 * its input. */
static rlt_status build_batchnorm(chain *c, int node, rlt_diag *diag)
{
    const rlt_graph_node *n = &c->g->nodes[node];
    int64_t n_channels = c->g->tensors[n->inputs[0]].dims[1];
    float epsilon = (float)rlt_graph_attr_float(n, "epsilon", 1e-5);
    int src = c->tensor_value[n->inputs[0]];
    dnnl_batch_normalization_desc_t bd;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_memory_desc_t vec;
    rlt_status st = RLT_STATUS_INTERNAL;
    if (!md_plain(&vec, 1, &n_channels, diag)) return diag->status;
    if (!node_dnnl_ok(c, node,
                      dnnl_batch_normalization_forward_desc_init(&bd, dnnl_forward_inference, &c->values[src].md,
                                                                 epsilon,
                                                                 dnnl_use_global_stats | dnnl_use_scale |
                                                                     dnnl_use_shift),
                      "batch_normalization_forward_desc_init", diag) ||
        !node_dnnl_ok(c, node, dnnl_primitive_desc_create(&pd, &bd, NULL, c->engine, NULL),
                      "batch normalization primitive_desc", diag))
        goto cleanup;
    /* ONNX's inputs: X, scale, B, mean, var */
    static const int args_of[5] = {0, DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE};
    step_arg args[6];
    args[0] = (step_arg){DNNL_ARG_SRC, src, NULL};
    for (int i = 1; i < 5; i++) {
        dnnl_memory_t m = weights_prepare(c, node, c->g->tensors[n->inputs[i]].data, &vec, &vec, diag);
        if (!m) goto cleanup;
        args[i] = (step_arg){args_of[i], -1, m};
    }
    int dst = value_add(c, &c->values[src].md, n->outputs[0], diag);
    if (dst < 0) goto cleanup;
    c->tensor_value[n->outputs[0]] = dst;
    args[5] = (step_arg){DNNL_ARG_DST, dst, NULL};
    if (!step_add(c, pd, node, "batch normalization", NULL, 6, args, diag)) goto cleanup;
    st = RLT_STATUS_OK;
cleanup:
    if (pd) dnnl_primitive_desc_destroy(pd);
    return st;
}

/* An eltwise primitive (a Relu or Clip that followed nothing it fuses
 * into), in the layout of its input. */
static rlt_status build_eltwise(chain *c, int node, rlt_diag *diag)
{
    const rlt_graph_node *n = &c->g->nodes[node];
    float lo = 0, hi = 0;
    if (is_op(n, "Clip")) clip_bounds(c, n, &lo, &hi);
    int src = c->tensor_value[n->inputs[0]];
    dnnl_eltwise_desc_t ed;
    dnnl_primitive_desc_t pd = NULL;
    rlt_status st = RLT_STATUS_INTERNAL;
    if (!node_dnnl_ok(c, node,
                      dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference,
                                                     is_op(n, "Relu") ? dnnl_eltwise_relu : dnnl_eltwise_clip,
                                                     &c->values[src].md, lo, hi),
                      "eltwise_forward_desc_init", diag) ||
        !node_dnnl_ok(c, node, dnnl_primitive_desc_create(&pd, &ed, NULL, c->engine, NULL), "eltwise primitive_desc",
                      diag))
        goto cleanup;
    int dst = value_add(c, &c->values[src].md, n->outputs[0], diag);
    if (dst < 0) goto cleanup;
    c->tensor_value[n->outputs[0]] = dst;
    step_arg args[2] = {{DNNL_ARG_SRC, src, NULL}, {DNNL_ARG_DST, dst, NULL}};
    if (!step_add(c, pd, node, is_op(n, "Relu") ? "eltwise relu" : "eltwise clip", NULL, 2, args, diag))
        goto cleanup;
    st = RLT_STATUS_OK;
cleanup:
    if (pd) dnnl_primitive_desc_destroy(pd);
    return st;
}

/* An Add that no Conv or Gemm took as a sum post-op: a binary add in the
 * layout of the first operand, the second reordered to it if need be, with
 * the Relus and Clips after it as post-ops. */
static rlt_status build_add(chain *c, int node, rlt_diag *diag)
{
    const rlt_graph_node *n = &c->g->nodes[node];
    int src0 = c->tensor_value[n->inputs[0]];
    int src1 = value_in_layout(c, n->inputs[1], &c->values[src0].md, node, diag);
    if (src1 < 0) return diag->status;
    fusion f;
    fusion_find(c, node, false, &f);
    dnnl_primitive_attr_t attr = NULL;
    dnnl_binary_desc_t bd;
    dnnl_primitive_desc_t pd = NULL;
    rlt_status st = RLT_STATUS_INTERNAL;
    const dnnl_memory_desc_t *md = &c->values[src0].md;
    if (!fusion_attr(c, node, &f, &attr, diag) ||
        !node_dnnl_ok(c, node, dnnl_binary_desc_init(&bd, dnnl_binary_add, md, md, md), "binary_desc_init", diag) ||
        !node_dnnl_ok(c, node, dnnl_primitive_desc_create(&pd, &bd, attr, c->engine, NULL), "binary primitive_desc",
                      diag))
        goto cleanup;
    int dst = fusion_dst(c, node, &f, md, diag);
    if (dst < 0) goto cleanup;
    step_arg args[3] = {{DNNL_ARG_SRC_0, src0, NULL}, {DNNL_ARG_SRC_1, src1, NULL}, {DNNL_ARG_DST, dst, NULL}};
    if (!step_add(c, pd, node, "binary add", f.names, 3, args, diag)) goto cleanup;
    fusion_done(c, &f);
    st = RLT_STATUS_OK;
cleanup:
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return st;
}

/* Concat: each input in the layout it has, the destination in the layout
 * oneDNN picks. */
static rlt_status build_concat(chain *c, int node, rlt_diag *diag)
{
    const rlt_graph_node *n = &c->g->nodes[node];
    const rlt_graph_tensor *y = &c->g->tensors[n->outputs[0]];
    int64_t axis = rlt_graph_attr_int(n, "axis", 0);
    if (axis < 0) axis += y->rank;
    dnnl_memory_desc_t srcs[MAX_STEP_ARGS], dst_any;
    step_arg args[MAX_STEP_ARGS];
    for (int i = 0; i < n->n_inputs; i++) {
        int v = c->tensor_value[n->inputs[i]];
        srcs[i] = c->values[v].md;
        args[i] = (step_arg){DNNL_ARG_MULTIPLE_SRC + i, v, NULL};
    }
    if (!md_any(&dst_any, y->rank, y->dims, diag)) return diag->status;
    dnnl_primitive_desc_t pd = NULL;
    rlt_status st = RLT_STATUS_INTERNAL;
    if (!node_dnnl_ok(c, node,
                      dnnl_concat_primitive_desc_create(&pd, &dst_any, n->n_inputs, (int)axis, srcs, NULL, c->engine),
                      "concat primitive_desc", diag))
        goto cleanup;
    dnnl_memory_desc_t dst_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    int dst = value_add(c, &dst_md, n->outputs[0], diag);
    if (dst < 0) goto cleanup;
    c->tensor_value[n->outputs[0]] = dst;
    args[n->n_inputs] = (step_arg){DNNL_ARG_DST, dst, NULL};
    if (!step_add(c, pd, node, "concat", NULL, n->n_inputs + 1, args, diag)) goto cleanup;
    st = RLT_STATUS_OK;
cleanup:
    if (pd) dnnl_primitive_desc_destroy(pd);
    return st;
}

/* True when the Flatten's only reader is a Gemm that takes its input as
 * it is (an inner product over the [N, C, H, W] tensor). */
static bool flatten_folds(const chain *c, int node)
{
    const rlt_graph_node *n = &c->g->nodes[node];
    int out = n->outputs[0];
    const rlt_graph_tensor *x = &c->g->tensors[n->inputs[0]];
    if (c->is_output[out] || c->n_readers[out] != 1 || rlt_graph_attr_int(n, "axis", 1) != 1) return false;
    const rlt_graph_node *r = &c->g->nodes[c->reader[out]];
    return is_op(r, "Gemm") && r->inputs[0] == out && x->rank >= 2 && x->rank <= 5;
}

/* A Flatten nothing folds: its input reordered to row-major (if it is not),
 * and a view of that with the output's shape. */
static rlt_status build_flatten(chain *c, int node, rlt_diag *diag)
{
    const rlt_graph *g = c->g;
    const rlt_graph_node *n = &g->nodes[node];
    if (flatten_folds(c, node)) {
        c->is_folded[node] = true;
        return RLT_STATUS_OK;
    }
    const rlt_graph_tensor *x = &g->tensors[n->inputs[0]], *y = &g->tensors[n->outputs[0]];
    dnnl_memory_desc_t x_plain, y_plain;
    if (!md_plain(&x_plain, x->rank, x->dims, diag) || !md_plain(&y_plain, y->rank, y->dims, diag))
        return diag->status;
    int src = value_in_layout(c, n->inputs[0], &x_plain, node, diag);
    int v = src >= 0 ? value_add(c, &y_plain, n->outputs[0], diag) : -1;
    if (v < 0) return diag->status;
    c->values[v].view_of = src;
    c->values[src].has_views = true;
    c->tensor_value[n->outputs[0]] = v;
    return RLT_STATUS_OK;
}

/* Gemm as an inner product: B (and C) are constants, scaled by alpha (and
 * beta) here; a folded Flatten's input is the source as it is. */
static rlt_status build_gemm(chain *c, int node, rlt_diag *diag)
{
    const rlt_graph *g = c->g;
    const rlt_graph_node *n = &g->nodes[node];
    int a = n->inputs[0];
    int p = g->tensors[a].producer;
    if (p >= 0 && c->is_folded[p]) a = g->nodes[p].inputs[0];
    const rlt_graph_tensor *x = &g->tensors[a], *w = &g->tensors[n->inputs[1]];
    const rlt_graph_tensor *b = tensor_of(c, n->n_inputs > 2 ? n->inputs[2] : -1);
    const rlt_graph_tensor *y = &g->tensors[n->outputs[0]];
    bool is_trans_b = rlt_graph_attr_int(n, "transB", 0) != 0;
    double alpha = rlt_graph_attr_float(n, "alpha", 1.0), beta = rlt_graph_attr_float(n, "beta", 1.0);
    int64_t n_out = y->dims[1], k = rlt_graph_tensor_n_elems(x) / x->dims[0];
    if (w->dims[is_trans_b ? 1 : 0] != k || w->dims[is_trans_b ? 0 : 1] != n_out)
        return rlt_graph_node_fail(g, n, diag, RLT_STATUS_INVALID_ARGUMENT,
                                   "B of shape [%lld,%lld] does not fit K %lld and N %lld", (long long)w->dims[0],
                                   (long long)w->dims[1], (long long)k, (long long)n_out);
    /* The weights as [N, x's dims after the first]: row k of the (transposed) B,
     * k running over those dims row-major. */
    int nd = x->rank;
    int64_t w_dims[DNNL_MAX_NDIMS], w_strides[DNNL_MAX_NDIMS], inner = 1;
    w_dims[0] = n_out;
    for (int i = nd - 1; i >= 1; i--) {
        w_dims[i] = x->dims[i];
        w_strides[i] = inner * (is_trans_b ? 1 : n_out);
        inner *= x->dims[i];
    }
    w_strides[0] = is_trans_b ? k : 1;
    int64_t y_dims[2] = {y->dims[0], n_out};
    dnnl_memory_desc_t src_any, w_any, w_user, b_md, dst_any;
    if (!md_any(&src_any, nd, x->dims, diag) || !md_any(&w_any, nd, w_dims, diag) ||
        !md_strided(&w_user, nd, w_dims, w_strides, diag) || !md_plain(&b_md, 1, &n_out, diag) ||
        !md_any(&dst_any, 2, y_dims, diag))
        return diag->status;
    float *w_scaled = NULL, *b_scaled = NULL;
    const float *w_data = w->data, *b_data = b ? b->data : NULL;
    if (alpha != 1.0) {
        if (!(w_scaled = rlt_malloc(sizeof(float) * (size_t)(k * n_out))))
            return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory scaling Gemm weights");
        for (int64_t i = 0; i < k * n_out; i++) w_scaled[i] = (float)(alpha * w_data[i]);
        w_data = w_scaled;
    }
    if (b && beta != 1.0) {
        if (!(b_scaled = rlt_malloc(sizeof(float) * (size_t)n_out))) {
            rlt_free(w_scaled);
            return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory scaling the Gemm bias");
        }
        for (int64_t i = 0; i < n_out; i++) b_scaled[i] = (float)(beta * b_data[i]);
        b_data = b_scaled;
    }

    fusion f;
    fusion_find(c, node, true, &f);
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_inner_product_desc_t ipd;
    rlt_status st = RLT_STATUS_INTERNAL;
    if (!fusion_attr(c, node, &f, &attr, diag)) goto cleanup;
    /* The source in the layout it has, which spares a reorder when an
     * implementation takes it; else the layout oneDNN prefers. */
    const dnnl_memory_desc_t *have = &c->values[c->tensor_value[a]].md;
    if (dnnl_inner_product_forward_desc_init(&ipd, dnnl_forward_inference, have, &w_any, b ? &b_md : NULL,
                                             &dst_any) != dnnl_success ||
        dnnl_primitive_desc_create(&pd, &ipd, attr, c->engine, NULL) != dnnl_success) {
        pd = NULL;
        if (!node_dnnl_ok(c, node,
                          dnnl_inner_product_forward_desc_init(&ipd, dnnl_forward_inference, &src_any, &w_any,
                                                               b ? &b_md : NULL, &dst_any),
                          "inner_product_forward_desc_init", diag) ||
            !node_dnnl_ok(c, node, dnnl_primitive_desc_create(&pd, &ipd, attr, c->engine, NULL),
                          "inner product primitive_desc", diag))
            goto cleanup;
    }
    dnnl_memory_desc_t src_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
    dnnl_memory_desc_t w_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_memory_desc_t dst_md = *dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
    int src = value_in_layout(c, a, &src_md, node, diag);
    dnnl_memory_t wm = src >= 0 ? weights_prepare(c, node, w_data, &w_user, &w_md, diag) : NULL;
    dnnl_memory_t bm = wm && b ? weights_prepare(c, node, b_data, &b_md, &b_md, diag) : NULL;
    if (!wm || (b && !bm)) goto cleanup;
    int dst = fusion_dst(c, node, &f, &dst_md, diag);
    if (dst < 0) goto cleanup;
    step_arg args[4] = {{DNNL_ARG_SRC, src, NULL}, {DNNL_ARG_WEIGHTS, -1, wm}, {DNNL_ARG_DST, dst, NULL},
                        {DNNL_ARG_BIAS, -1, bm}};
    if (!step_add(c, pd, node, "inner product", f.names, b ? 4 : 3, args, diag)) goto cleanup;
    fusion_done(c, &f);
    st = RLT_STATUS_OK;
cleanup:
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (attr) dnnl_primitive_attr_destroy(attr);
    rlt_free(b_scaled);
    rlt_free(w_scaled);
    return st;
}

/* ---- building and placing the chain ----------------------------------------- */

/* Reader counts, then every node checked before anything is built. */
static rlt_status chain_scan(chain *c, rlt_diag *diag)
{
    const rlt_graph *g = c->g;
    int nt = g->n_tensors, nn = g->n_nodes;
    c->tensor_value = rlt_malloc(sizeof(int) * (size_t)nt);
    c->n_readers = rlt_calloc((size_t)nt, sizeof(int));
    c->reader = rlt_malloc(sizeof(int) * (size_t)nt);
    c->is_output = rlt_calloc((size_t)nt, sizeof(bool));
    c->is_done = rlt_calloc((size_t)nn + 1, sizeof(bool));
    c->is_folded = rlt_calloc((size_t)nn + 1, sizeof(bool));
    if (!c->tensor_value || !c->n_readers || !c->reader || !c->is_output || !c->is_done || !c->is_folded)
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory scanning the graph");
    for (int t = 0; t < nt; t++) c->tensor_value[t] = c->reader[t] = -1;
    for (int i = 0; i < g->n_outputs; i++) c->is_output[g->outputs[i]] = true;
    for (int i = 0; i < nn; i++) {
        const rlt_graph_node *n = &g->nodes[i];
        if (n->is_removed) continue;
        for (int j = 0; j < n->n_inputs; j++)
            if (n->inputs[j] >= 0) {
                c->n_readers[n->inputs[j]]++;
                c->reader[n->inputs[j]] = i;
            }
    }
    RLT_ASSERT(g->n_inputs == 1 && g->n_outputs == 1); /* main checked */
    const rlt_graph_tensor *in = &g->tensors[g->inputs[0]], *out = &g->tensors[g->outputs[0]];
    if (in->dtype != RLT_DTYPE_FLOAT32 || out->dtype != RLT_DTYPE_FLOAT32)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "input '%s' is %s and output '%s' %s; the oneDNN chain takes float32 only", in->name,
                        rlt_dtype_str(in->dtype), out->name, rlt_dtype_str(out->dtype));
    if (out->data)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "output '%s' is a constant: nothing to run", out->name);
    for (int i = 0; i < nn; i++) {
        if (g->nodes[i].is_removed) continue;
        rlt_status st = node_check(c, i, diag);
        if (st != RLT_STATUS_OK) return st;
    }
    return RLT_STATUS_OK;
}

/* The steps of the whole network: the input's value (the caller's buffer,
 * row-major), every node, the output reordered to row-major when its
 * producer left it in another layout (into out_buf), else kept. */
static rlt_status chain_build(chain *c, void *in_buf, void *out_buf, rlt_diag *diag)
{
    const rlt_graph *g = c->g;
    rlt_status st = chain_scan(c, diag);
    if (st != RLT_STATUS_OK) return st;
    const rlt_graph_tensor *in = &g->tensors[g->inputs[0]], *out = &g->tensors[g->outputs[0]];
    dnnl_memory_desc_t md;
    if (!md_plain(&md, in->rank, in->dims, diag) || (c->input_value = value_add(c, &md, g->inputs[0], diag)) < 0)
        return diag->status;
    c->values[c->input_value].external = in_buf;
    c->tensor_value[g->inputs[0]] = c->input_value;
    for (int i = 0; i < g->n_nodes; i++) {
        const rlt_graph_node *n = &g->nodes[i];
        if (n->is_removed || c->is_done[i]) continue;
        if (is_op(n, "Conv")) st = build_conv(c, i, diag);
        else if (is_op(n, "Gemm")) st = build_gemm(c, i, diag);
        else if (is_op(n, "Add")) st = build_add(c, i, diag);
        else if (is_op(n, "Flatten")) st = build_flatten(c, i, diag);
        else if (is_op(n, "Concat")) st = build_concat(c, i, diag);
        else if (is_op(n, "BatchNormalization")) st = build_batchnorm(c, i, diag);
        else if (is_op(n, "Relu") || is_op(n, "Clip")) st = build_eltwise(c, i, diag);
        else st = build_pool(c, i, diag);
        if (st != RLT_STATUS_OK) return st;
        c->is_done[i] = true;
    }
    int v = c->tensor_value[g->outputs[0]];
    RLT_ASSERT(v >= 0);
    if (!md_plain(&md, out->rank, out->dims, diag)) return diag->status;
    if (md_equal(&c->values[v].md, &md) && !c->values[v].external) {
        c->output_value = v;
    } else {
        if ((c->output_value = value_add(c, &md, g->outputs[0], diag)) < 0) return diag->status;
        c->values[c->output_value].external = out_buf;
        if (!reorder_add(c, v, c->output_value, -1, diag)) return diag->status;
    }
    return RLT_STATUS_OK;
}

/* Gives every pool value a buffer: walking the steps in order, a value gets
 * the smallest free buffer that holds it (or a new one) at its first use
 * and gives it back after its last; a view shares its root's buffer. Then
 * the memories and each step's arguments. */
static rlt_status chain_place(chain *c, rlt_diag *diag)
{
    for (int s = 0; s < c->n_steps; s++)
        for (int a = 0; a < c->steps[s].n_args; a++) {
            int v = c->steps[s].args[a].value;
            if (v < 0) continue;
            c->values[v].last_step = s;
            c->values[value_root(c, v)].last_step = RLT_MAX(c->values[value_root(c, v)].last_step, s);
        }
    c->values[value_root(c, c->output_value)].last_step = INT_MAX;
    int cap = c->n_values + 1;
    c->buffers = rlt_calloc((size_t)cap, sizeof *c->buffers);
    c->buffer_bytes = rlt_calloc((size_t)cap, sizeof *c->buffer_bytes);
    c->buffer_is_free = rlt_calloc((size_t)cap, sizeof *c->buffer_is_free);
    if (!c->buffers || !c->buffer_bytes || !c->buffer_is_free)
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory placing the activations");
    for (int s = 0; s < c->n_steps; s++) {
        step *st = &c->steps[s];
        for (int a = 0; a < st->n_args; a++) {
            if (st->args[a].value < 0) continue;
            value *r = &c->values[value_root(c, st->args[a].value)];
            if (r->external || r->buffer >= 0) continue;
            size_t need = dnnl_memory_desc_get_size(&r->md);
            int best = -1;
            for (int b = 0; b < c->n_buffers; b++)
                if (c->buffer_is_free[b] && c->buffer_bytes[b] >= need &&
                    (best < 0 || c->buffer_bytes[b] < c->buffer_bytes[best]))
                    best = b;
            if (best < 0) {
                size_t bytes = (need + 63) / 64 * 64;
                best = c->n_buffers;
                if (!(c->buffers[best] = aligned_alloc(64, bytes ? bytes : 64)))
                    return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory for %zu bytes of activations",
                                    need);
                c->buffer_bytes[best] = bytes;
                c->n_buffers++;
            }
            c->buffer_is_free[best] = false;
            r->buffer = best;
        }
        for (int a = 0; a < st->n_args; a++) {
            if (st->args[a].value < 0) continue;
            value *r = &c->values[value_root(c, st->args[a].value)];
            if (!r->external && r->last_step == s) c->buffer_is_free[r->buffer] = true;
        }
    }
    for (int v = 0; v < c->n_values; v++) {
        value *val = &c->values[v];
        const value *r = &c->values[value_root(c, v)];
        void *handle = r->external ? r->external : r->buffer >= 0 ? c->buffers[r->buffer] : NULL;
        if (!handle) continue; /* used by no step: an input nothing reads */
        if (!dnnl_ok(dnnl_memory_create(&val->mem, &val->md, c->engine, handle), "memory_create", diag))
            return diag->status;
    }
    for (int s = 0; s < c->n_steps; s++) {
        step *st = &c->steps[s];
        for (int a = 0; a < st->n_args; a++) {
            const step_arg *arg = &st->args[a];
            st->exec[a] = (dnnl_exec_arg_t){arg->arg, arg->value >= 0 ? c->values[arg->value].mem : arg->fixed};
            RLT_ASSERT(st->exec[a].memory);
        }
    }
    return RLT_STATUS_OK;
}

static bool chain_run(const chain *c)
{
    for (int s = 0; s < c->n_steps; s++)
        if (dnnl_primitive_execute(c->steps[s].prim, c->stream, c->steps[s].n_args, c->steps[s].exec) !=
            dnnl_success)
            return false;
    return dnnl_stream_wait(c->stream) == dnnl_success;
}

/* Where the output lies after a run, row-major. */
static const float *chain_output(const chain *c)
{
    const value *r = &c->values[value_root(c, c->output_value)];
    return r->external ? r->external : c->buffers[r->buffer];
}

static void chain_free(chain *c)
{
    for (int s = c->n_steps - 1; s >= 0; s--) dnnl_primitive_destroy(c->steps[s].prim);
    for (int v = c->n_values - 1; v >= 0; v--)
        if (c->values[v].mem) dnnl_memory_destroy(c->values[v].mem);
    for (int w = c->n_weights - 1; w >= 0; w--) dnnl_memory_destroy(c->weights[w]);
    for (int b = c->n_buffers - 1; b >= 0; b--) free(c->buffers[b]);
    if (c->stream) dnnl_stream_destroy(c->stream);
    if (c->engine) dnnl_engine_destroy(c->engine);
    rlt_free(c->buffer_is_free);
    rlt_free(c->buffer_bytes);
    rlt_free(c->buffers);
    rlt_free(c->is_folded);
    rlt_free(c->is_done);
    rlt_free(c->is_output);
    rlt_free(c->reader);
    rlt_free(c->n_readers);
    rlt_free(c->tensor_value);
    rlt_free(c->weights);
    rlt_free(c->steps);
    rlt_free(c->values);
}

/* ---- threads ---------------------------------------------------------------- */

/* Counts the OpenMP runtimes mapped into the process (dl_iterate_phdr). */
static int omp_runtime_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    const char *name = strrchr(info->dlpi_name, '/');
    name = name ? name + 1 : info->dlpi_name;
    static const char *const runtimes[] = {"libgomp.so", "libomp.so", "libiomp5.so"};
    for (size_t i = 0; i < RLT_ARRAY_LEN(runtimes); i++)
        if (strncmp(name, runtimes[i], strlen(runtimes[i])) == 0) {
            char *list = arg;
            size_t k = strlen(list);
            snprintf(list + k, 256 - k, "%s%s", k ? ", " : "", name);
        }
    return 0;
}

static rlt_status threads_set(int n_threads, rlt_diag *diag)
{
    char runtimes[256] = "";
    dl_iterate_phdr(omp_runtime_cb, runtimes);
    if (strchr(runtimes, ','))
        return rlt_fail(diag, RLT_STATUS_INTERNAL,
                        "two OpenMP runtimes are loaded (%s): their workers would take turns on the cores; link "
                        "one (bench/RESULTS.md, \"What the two-thread gap was\")",
                        runtimes);
    void (*set_threads)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "omp_set_num_threads");
    int (*max_threads)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "omp_get_max_threads");
    if (!set_threads || !max_threads)
        return rlt_fail(diag, RLT_STATUS_INTERNAL,
                        "omp_set_num_threads not found (is this oneDNN built with OpenMP? it says runtime %s)",
                        dnnl_runtime2str(dnnl_version()->cpu_runtime));
    set_threads(n_threads);
    if (max_threads() != n_threads)
        return rlt_fail(diag, RLT_STATUS_INTERNAL, "asked for %d OpenMP threads, the runtime gives %d", n_threads,
                        max_threads());
    return RLT_STATUS_OK;
}

/* ---- main ------------------------------------------------------------------- */

static void print_json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20) printf("\\u%04x", (unsigned)*s);
        else putchar(*s);
    }
    putchar('"');
}

static int usage(const char *why)
{
    if (why) fprintf(stderr, PROGRAM ": %s\n", why);
    fprintf(stderr,
            "usage: " PROGRAM " MODEL.onnx [--input X.npy] [--check Y.npy] [--threads N] [--repeat R]\n"
            "                      [--warmup W] [--json] [--verbose]\n"
            "  MODEL.onnx    a network of Conv, BatchNormalization, Relu, Clip, Add, MaxPool, AveragePool,\n"
            "                GlobalAveragePool, Concat, Flatten and Gemm\n"
            "  --input X     the input, float32 of the model's input shape (default: uniform [-1, 1), seeded)\n"
            "  --check Y     the reference output; fails when max |out - Y| / max |Y| > 1e-4\n"
            "  --threads N   OpenMP threads (default 1); pin the process from outside (taskset)\n"
            "  --repeat R    timed runs (default 20); --warmup W runs before them (default 5)\n"
            "  --json        one JSON object: model, threads, median_ms, min_ms, runs, primitives,\n"
            "                reorders[, max_rel_err]\n"
            "  --verbose     list the primitives, their implementations and layouts\n");
    return 2;
}

/* "[1,3,224,224]" */
static void dims_str(const int64_t *dims, int rank, char *buf, size_t cap)
{
    size_t k = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < rank && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? "," : "", (long long)dims[i]);
    if (k < cap) snprintf(buf + k, cap - k, "]");
}

static bool parse_count(const char *s, long lo, long hi, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || end == s || v < lo || v > hi) return false;
    *out = (int)v;
    return true;
}

/* max |got - ref| / max |ref| over n values (NaN anywhere: infinity). */
static double max_rel_err(const float *got, const float *ref, int64_t n)
{
    double max_diff = 0, max_ref = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)ref[i]);
        if (!(d == d)) return INFINITY;
        max_diff = RLT_MAX(max_diff, d);
        max_ref = RLT_MAX(max_ref, fabs((double)ref[i]));
    }
    return max_ref > 0 ? max_diff / max_ref : max_diff;
}

static void print_chain(const chain *c)
{
    for (int s = 0; s < c->n_steps; s++) {
        const step *st = &c->steps[s];
        char layout[64] = "";
        for (int a = 0; a < st->n_args; a++)
            if (st->args[a].arg == DNNL_ARG_DST || st->args[a].arg == DNNL_ARG_TO)
                format_layout(&c->values[st->args[a].value].md, layout, sizeof layout);
        printf("  %3d  %-22s %-26s %-14s -> %-10s %s\n", s,
               st->node >= 0 ? rlt_graph_node_label(c->g, st->node) : "(output)", st->what,
               st->post_ops[0] ? st->post_ops : "-", layout, st->impl);
    }
}

int main(int argc, char **argv)
{
    const char *model_path = NULL, *input_path = NULL, *check_path = NULL;
    int n_threads = 1, repeat = 20, warmup = 5;
    bool is_json = false, is_verbose = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_value = i + 1 < argc;
        if (strcmp(a, "--json") == 0) {
            is_json = true;
        } else if (strcmp(a, "--verbose") == 0) {
            is_verbose = true;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            return usage(NULL);
        } else if (strcmp(a, "--threads") == 0 && has_value) {
            if (!parse_count(argv[++i], 1, 256, &n_threads))
                return usage("--threads takes a whole number from 1 to 256");
        } else if (strcmp(a, "--repeat") == 0 && has_value) {
            if (!parse_count(argv[++i], 1, BENCH_MAX_SAMPLES * 1000, &repeat))
                return usage("--repeat takes a whole number from 1 to 64000");
        } else if (strcmp(a, "--warmup") == 0 && has_value) {
            if (!parse_count(argv[++i], 0, 100000, &warmup))
                return usage("--warmup takes a whole number from 0 to 100000");
        } else if (strcmp(a, "--input") == 0 && has_value) {
            input_path = argv[++i];
        } else if (strcmp(a, "--check") == 0 && has_value) {
            check_path = argv[++i];
        } else if (strcmp(a, "--threads") == 0 || strcmp(a, "--repeat") == 0 || strcmp(a, "--warmup") == 0 ||
                   strcmp(a, "--input") == 0 || strcmp(a, "--check") == 0) {
            fprintf(stderr, PROGRAM ": %s needs a value\n", a);
            return usage(NULL);
        } else if (a[0] == '-' || model_path) {
            fprintf(stderr, PROGRAM ": unexpected argument '%s'\n", a);
            return usage(NULL);
        } else {
            model_path = a;
        }
    }
    if (!model_path) return usage("no model given");
    if (check_path && !input_path) return usage("--check needs --input: the input its reference was computed from");

    int rc = 2;
    rlt_diag diag = {0};
    rlt_graph *g = NULL;
    rlt_array *x = NULL, *y = NULL, *ref = NULL;
    chain c = {.input_value = -1, .output_value = -1};
    double *times_ms = NULL;
    /* as `rltune run` loads a model (rlt_model_load) */
    if (rlt_graph_load_onnx(model_path, &g, &diag) != RLT_STATUS_OK) goto fail;
    if (rlt_graph_fold_batchnorm(g, &diag) < 0 || rlt_graph_dce(g) < 0) {
        rlt_fail(&diag, RLT_STATUS_OUT_OF_MEMORY, "%s: out of memory folding the graph", model_path);
        goto fail;
    }
    c.g = g;
    if (g->n_inputs != 1 || g->n_outputs != 1) {
        rlt_fail(&diag, RLT_STATUS_INVALID_ARGUMENT,
                 "%s has %d inputs and %d outputs; the oneDNN chain takes one of each", model_path, g->n_inputs,
                 g->n_outputs);
        goto fail;
    }
    const rlt_graph_tensor *in = &g->tensors[g->inputs[0]], *out = &g->tensors[g->outputs[0]];
    if (input_path) {
        if (rlt_npy_load(input_path, &x, &diag) != RLT_STATUS_OK) goto fail;
        bool fits = x->elem == RLT_ELEM_F32 && x->rank == in->rank;
        for (int i = 0; fits && i < in->rank; i++) fits = x->dims[i] == in->dims[i];
        if (!fits) {
            char have[160], want[160];
            dims_str(x->dims, x->rank, have, sizeof have);
            dims_str(in->dims, in->rank, want, sizeof want);
            rlt_fail(&diag, RLT_STATUS_INVALID_ARGUMENT, "%s: a %s array %s; the model's input '%s' is f32 %s",
                     input_path, rlt_elem_name(x->elem), have, in->name, want);
            goto fail;
        }
    } else {
        if (rlt_array_create(RLT_ELEM_F32, in->rank, in->dims, &x, &diag) != RLT_STATUS_OK) goto fail;
        rlt_rng rng;
        rlt_rng_seed(&rng, INPUT_SEED);
        float *v = x->data;
        for (int64_t i = 0; i < rlt_array_n_elems(x); i++) v[i] = (float)(rlt_rng_uniform(&rng) * 2.0 - 1.0);
    }
    if (check_path) {
        if (rlt_npy_load(check_path, &ref, &diag) != RLT_STATUS_OK) goto fail;
        if (ref->elem != RLT_ELEM_F32 || rlt_array_n_elems(ref) != rlt_graph_tensor_n_elems(out)) {
            char have[160], want[160];
            dims_str(ref->dims, ref->rank, have, sizeof have);
            dims_str(out->dims, out->rank, want, sizeof want);
            rlt_fail(&diag, RLT_STATUS_INVALID_ARGUMENT, "%s: a %s array %s; the model's output '%s' is f32 %s",
                     check_path, rlt_elem_name(ref->elem), have, out->name, want);
            goto fail;
        }
    }
    if (rlt_array_create(RLT_ELEM_F32, out->rank, out->dims, &y, &diag) != RLT_STATUS_OK) goto fail;

    /* the threads before the first primitive: oneDNN plans for them */
    if (threads_set(n_threads, &diag) != RLT_STATUS_OK) goto fail_run;
    if (!dnnl_ok(dnnl_engine_create(&c.engine, dnnl_cpu, 0), "engine_create", &diag) ||
        !dnnl_ok(dnnl_stream_create(&c.stream, c.engine, dnnl_stream_default_flags), "stream_create", &diag))
        goto fail_run;
    rlt_status st = chain_build(&c, x->data, y->data, &diag);
    if (st == RLT_STATUS_INVALID_ARGUMENT) {
        rlt_diag_prefix(&diag, "%s", model_path);
        goto fail;
    }
    if (st != RLT_STATUS_OK || chain_place(&c, &diag) != RLT_STATUS_OK) goto fail_run;

    if (!(times_ms = rlt_malloc(sizeof(double) * (size_t)repeat))) {
        rlt_fail(&diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory for %d timings", repeat);
        goto fail_run;
    }
    for (int i = 0; i < warmup + repeat; i++) {
        double t0 = bench_now_s();
        if (!chain_run(&c)) {
            rlt_fail(&diag, RLT_STATUS_INTERNAL, "oneDNN failed running the chain (run %d)", i + 1);
            goto fail_run;
        }
        if (i >= warmup) times_ms[i - warmup] = (bench_now_s() - t0) * 1e3;
    }
    const float *result = chain_output(&c);
    if (result != y->data) memcpy(y->data, result, sizeof(float) * (size_t)rlt_array_n_elems(y));
    double min_ms = times_ms[0];
    for (int i = 1; i < repeat; i++) min_ms = RLT_MIN(min_ms, times_ms[i]);
    double median_ms = bench_median(times_ms, repeat);
    double err = check_path ? max_rel_err(y->data, ref->data, rlt_array_n_elems(y)) : 0;
    bool is_wrong = check_path && !(err <= CHECK_MAX_REL_ERR);

    if (is_json) {
        printf("{\"model\":");
        print_json_string(model_path);
        printf(",\"threads\":%d,\"median_ms\":%.6f,\"min_ms\":%.6f,\"runs\":%d,\"warmup\":%d,\"primitives\":%d,"
               "\"reorders\":%d",
               n_threads, median_ms, min_ms, repeat, warmup, c.n_steps, c.n_reorders);
        if (check_path) printf(",\"max_rel_err\":%.6g", err);
        printf("}\n");
    } else {
        const dnnl_version_t *v = dnnl_version();
        printf("oneDNN %d.%d.%d (%s), %s, %d thread%s: %d primitives (%d reorders), %zu activation buffers\n",
               v->major, v->minor, v->patch, dnnl_runtime2str(v->cpu_runtime), model_path, n_threads,
               n_threads == 1 ? "" : "s", c.n_steps, c.n_reorders, (size_t)c.n_buffers);
        if (is_verbose) print_chain(&c);
        printf("  latency: median %.3f ms, min %.3f ms (%d runs after %d warm-up)\n", median_ms, min_ms, repeat,
               warmup);
        if (check_path)
            printf("  output vs %s: max |diff| / max |ref| = %.3g (bar %.0e)\n", check_path, err, CHECK_MAX_REL_ERR);
    }
    if (is_wrong) {
        fprintf(stderr, PROGRAM ": WRONG ANSWER: the output differs from %s by %.3g of its largest value (bar %.0e)\n",
                check_path, err, CHECK_MAX_REL_ERR);
        rc = 1;
    } else {
        rc = 0;
    }
    goto cleanup;
fail_run:
    rc = 1;
fail:
    fprintf(stderr, PROGRAM ": %s\n", diag.message);
cleanup:
    rlt_free(times_ms);
    chain_free(&c);
    rlt_array_destroy(ref);
    rlt_array_destroy(y);
    rlt_array_destroy(x);
    rlt_graph_destroy(g);
    return rc;
}
