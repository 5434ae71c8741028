/*
 * dnnl.c - oneDNN (v2.x C API) as a baseline for rltune's ops, timed the way
 * bench_sgemm times OpenBLAS, for side-by-side tables (issue 4).
 *
 * Usage: bench_dnnl OP_SPEC [--threads N] [--format preferred|plain] [--json]
 *
 * OP_SPEC is an rltune op spec (`rltune ops`): matmul, batch_matmul, dense,
 * conv2d, depthwise_conv2d. It is parsed by rltune's own parser, so shapes,
 * defaults and the flop count (rlt_op.flops) are exactly rltune's, and the
 * oneDNN primitive is set up from the parsed op (tensor shapes, and stride,
 * padding and dilation read off the input's index expressions):
 *   matmul / batch_matmul  dnnl matmul, A, B, C row-major ([B,]M,K / K,N / M,N)
 *   dense                  dnnl matmul of X (M,K) and W^T (W stored N,K) with
 *                          the bias and a relu post-op when the spec asks
 *   conv2d                 dnnl direct convolution, I NCHW, W OIHW (KCRS), O NKPQ
 *   depthwise_conv2d       grouped direct convolution, groups = C, W as GOIHW
 *
 * Layouts. --format plain (and always for matmul and batch_matmul, whose A
 * and B are activations) gives every tensor rltune's row-major layout.
 * --format preferred (the default) lets oneDNN choose (format_tag_any) for
 * conv2d and depthwise_conv2d: source, weights and destination; for dense
 * the weights only. The chosen layouts are printed (oneDNN's naming, with
 * rltune's letters: I nChw8c, W OIhw8i8o, ...).
 *
 * What is timed. Weights are reordered once, before timing, into the
 * primitive's layout: a framework pre-packs them once. Activations come in
 * and go out in rltune's layout, so where oneDNN chose another layout two
 * times are reported: the primitive alone (input already in oneDNN's layout,
 * output left in it: what a network of oneDNN layers pays per layer), and
 * the primitive plus the reorders of the input into, and of the output out
 * of, oneDNN's layout (what a single layer between NCHW tensors pays, like
 * rltune's kernel). With plain layouts there is nothing to reorder and both
 * numbers are the same measurement.
 *
 * Protocol (as bench_sgemm): pinned to the last N allowed CPUs, a warm-up
 * call, then 7 samples of `number` calls (number doubled until a sample
 * lasts >= 50 ms), the median sample; one call = the primitive(s) executed
 * and the stream waited on. oneDNN here uses libgomp, which reads its
 * settings when it loads (before main), so the program re-executes itself
 * once with the settings rltune's runner gives its kernels: OMP_NUM_THREADS=N
 * and, for N > 1, OMP_WAIT_POLICY=active, OMP_PROC_BIND=close,
 * OMP_PLACES=cores.
 *
 * Verification: before timing, one call of the primitive with the reorders
 * on rltune's seeded inputs (rlt_tensor_fill, seed 1 + tensor index) is
 * compared with rltune's reference interpreter (rlt_op_eval_reference),
 * tolerance as the runner's (RLT_TOLERANCE_FACTOR * sqrt(R + 1) * FLT_EPSILON
 * * magnitude + FLT_MIN). Outputs whose reference would take more than 2^27
 * multiply-adds are checked on a seeded sample of 4096 elements (the
 * interpreter would take minutes on matmul 2048^3), others whole. A mismatch
 * prints the first bad element and exits 1 without a timing.
 *
 * Exit status: 0 timed, 1 oneDNN failed or the answer was wrong, 2 bad usage.
 */
#include "ir/ir.h"
#include "measure/measure.h"

#include <dnnl.h>
#include <dnnl_debug.h>

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "timing.h"

#define N_SAMPLES 7
#define MIN_SAMPLE_S 0.05
#define INPUT_SEED 1
#define REEXEC_MARK "RLTUNE_BENCH_DNNL_OMP_SET" /* set once the OMP_* settings are in place */

/* ---- the problem: rltune's tensors as oneDNN arguments ------------------ */

/* One tensor of the rltune op, as the primitive sees it. */
typedef struct tensor_map {
    int arg;                     /* DNNL_ARG_SRC, _WEIGHTS, _BIAS or _DST */
    dnnl_memory_desc_t user_md;  /* rltune's layout of the tensor */
    bool is_any;                 /* the primitive picks this tensor's layout */
    const char *letters;         /* a name for each dim of user_md, for printing */
} tensor_map;

/* Primitives run in order on the same stream: one call of a plan. */
typedef struct step {
    dnnl_primitive_t prim; /* borrowed from the bench */
    int n_args;
    dnnl_exec_arg_t args[RLT_MAX_TENSORS];
} step;

typedef struct bench {
    rlt_op *op; /* owned */
    tensor_map map[RLT_MAX_TENSORS];
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t prim;
    dnnl_memory_t user[RLT_MAX_TENSORS];        /* rltune's layout; inputs filled by rlt_tensor_fill */
    dnnl_memory_t mem[RLT_MAX_TENSORS];         /* the primitive's layout; user[t] itself when equal */
    dnnl_primitive_t reorder[RLT_MAX_TENSORS];  /* user <-> mem, NULL where the layouts agree */
    step compute;                               /* the primitive alone */
    step full[RLT_MAX_TENSORS + 1];             /* input reorders, the primitive, output reorder */
    int n_full;
    bool has_io_reorders;
    char impl[64];
    char layout[256];
} bench;

static bool dnnl_ok(dnnl_status_t st, const char *what)
{
    if (st == dnnl_success) return true;
    fprintf(stderr, "bench_dnnl: oneDNN %s failed: %s\n", what, dnnl_status2str(st));
    return false;
}

/* Row-major descriptor of dims (strides given, or dense row-major if NULL). */
static bool md_plain(dnnl_memory_desc_t *md, int n_dims, const int64_t *dims, const int64_t *strides)
{
    dnnl_dims_t d, s;
    int64_t stride = 1;
    for (int i = n_dims - 1; i >= 0; i--) {
        d[i] = dims[i];
        s[i] = strides ? strides[i] : stride;
        stride *= dims[i];
    }
    return dnnl_ok(dnnl_memory_desc_init_by_strides(md, n_dims, d, dnnl_f32, s), "memory_desc_init_by_strides");
}

static bool md_any(dnnl_memory_desc_t *md, const dnnl_memory_desc_t *like)
{
    return dnnl_ok(dnnl_memory_desc_init_by_tag(md, like->ndims, like->dims, dnnl_f32, dnnl_format_tag_any),
                   "memory_desc_init_by_tag(any)");
}

/* The descriptor the primitive uses for tensor t: format any, or rltune's. */
static bool md_for_primitive(const bench *b, int t, dnnl_memory_desc_t *md)
{
    if (b->map[t].is_any) return md_any(md, &b->map[t].user_md);
    *md = b->map[t].user_md;
    return true;
}

/* stride, padding and dilation of the conv: read off I's index along dim
 * 2 + d, which is p*stride + r*dilation - pad (q, s for d = 1). */
static bool conv_geometry(const rlt_op *op, int in, dnnl_dims_t strides, dnnl_dims_t dilates, dnnl_dims_t pad_l,
                          dnnl_dims_t pad_r)
{
    const rlt_expr *loads[RLT_MAX_TENSORS * 2];
    int n = rlt_op_loads(op, loads, (int)RLT_ARRAY_LEN(loads));
    const rlt_expr *load = NULL;
    for (int i = 0; i < n; i++)
        if (loads[i]->tensor == in) load = loads[i];
    const char *out_axes[2] = {"p", "q"}, *ker_axes[2] = {"r", "s"};
    for (int d = 0; d < 2 && load; d++) {
        int a_out = rlt_op_find_axis(op, out_axes[d]), a_ker = rlt_op_find_axis(op, ker_axes[d]);
        if (a_out < 0 || a_ker < 0) return false;
        const rlt_affine *idx = &load->index[2 + d];
        strides[d] = idx->coef[a_out];
        dilates[d] = idx->coef[a_ker] - 1; /* oneDNN counts the gaps: 0 = dense */
        pad_l[d] = -idx->offset;
        /* Symmetric, as rltune pads: oneDNN checks that
         * (H + pad_l + pad_r - (R-1)*dilation - 1) / stride + 1 is rltune's P. */
        pad_r[d] = -idx->offset;
    }
    return load != NULL;
}

/* Fills b->map from the op, for the op kinds this baseline knows. */
static bool map_tensors(bench *b, bool wants_preferred)
{
    const rlt_op *op = b->op;
    const char *kind = op->kind;
    int out = op->n_tensors - 1;
    const rlt_tensor *T = op->tensors;
    bool ok = true;
    if (strcmp(kind, "matmul") == 0 || strcmp(kind, "batch_matmul") == 0) {
        bool is_batch = kind[0] == 'b';
        b->map[0] = (tensor_map){.arg = DNNL_ARG_SRC, .letters = is_batch ? "bik" : "ik"};
        b->map[1] = (tensor_map){.arg = DNNL_ARG_WEIGHTS, .letters = is_batch ? "bkj" : "kj"};
        b->map[2] = (tensor_map){.arg = DNNL_ARG_DST, .letters = is_batch ? "bij" : "ij"};
        for (int t = 0; t < 3; t++) ok = ok && md_plain(&b->map[t].user_md, T[t].n_dims, T[t].dims, NULL);
        return ok;
    }
    if (strcmp(kind, "dense") == 0) {
        /* W is stored [N,K]: the matmul's weights are its transpose, K x N
         * with strides (1, K). The bias is a 1 x N row. */
        int64_t M = T[0].dims[0], K = T[0].dims[1], N = T[1].dims[0];
        b->map[0] = (tensor_map){.arg = DNNL_ARG_SRC, .letters = "ik"};
        ok = md_plain(&b->map[0].user_md, 2, (int64_t[]){M, K}, NULL);
        b->map[1] = (tensor_map){.arg = DNNL_ARG_WEIGHTS, .letters = "kj", .is_any = wants_preferred};
        ok = ok && md_plain(&b->map[1].user_md, 2, (int64_t[]){K, N}, (int64_t[]){1, K});
        if (op->n_tensors == 4) {
            b->map[2] = (tensor_map){.arg = DNNL_ARG_BIAS, .letters = "1j"};
            ok = ok && md_plain(&b->map[2].user_md, 2, (int64_t[]){1, N}, NULL);
        }
        b->map[out] = (tensor_map){.arg = DNNL_ARG_DST, .letters = "ij"};
        return ok && md_plain(&b->map[out].user_md, 2, (int64_t[]){M, N}, NULL);
    }
    if (strcmp(kind, "conv2d") == 0 || strcmp(kind, "depthwise_conv2d") == 0) {
        bool is_depthwise = kind[0] == 'd';
        b->map[0] = (tensor_map){.arg = DNNL_ARG_SRC, .letters = "nchw", .is_any = wants_preferred};
        ok = md_plain(&b->map[0].user_md, 4, T[0].dims, NULL);
        b->map[1] = (tensor_map){.arg = DNNL_ARG_WEIGHTS, .is_any = wants_preferred};
        if (is_depthwise) {
            /* W[C,1,R,S] is the grouped GOIHW tensor with G = C, O = I = 1. */
            b->map[1].letters = "goihw";
            ok = ok && md_plain(&b->map[1].user_md, 5,
                                (int64_t[]){T[1].dims[0], 1, 1, T[1].dims[2], T[1].dims[3]}, NULL);
        } else {
            b->map[1].letters = "oihw";
            ok = ok && md_plain(&b->map[1].user_md, 4, T[1].dims, NULL);
        }
        b->map[2] = (tensor_map){.arg = DNNL_ARG_DST, .letters = "nchw", .is_any = wants_preferred};
        return ok && md_plain(&b->map[2].user_md, 4, T[2].dims, NULL);
    }
    fprintf(stderr,
            "bench_dnnl: op '%s' has no oneDNN baseline here; use matmul, batch_matmul, dense, conv2d or "
            "depthwise_conv2d\n",
            kind);
    return false;
}

/* The primitive descriptor for the op (matmul, or direct convolution). */
static bool create_pd(bench *b)
{
    const rlt_op *op = b->op;
    dnnl_memory_desc_t md[RLT_MAX_TENSORS];
    for (int t = 0; t < op->n_tensors; t++)
        if (!md_for_primitive(b, t, &md[t])) return false;
    int out = op->n_tensors - 1;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t post_ops = NULL;
    bool ok = false;
    if (strcmp(op->kind, "conv2d") == 0 || strcmp(op->kind, "depthwise_conv2d") == 0) {
        dnnl_dims_t strides, dilates, pad_l, pad_r;
        if (!conv_geometry(op, 0, strides, dilates, pad_l, pad_r)) {
            fprintf(stderr, "bench_dnnl: cannot read stride / padding / dilation off %s\n", op->spec);
            return false;
        }
        dnnl_convolution_desc_t cd;
        ok = dnnl_ok(dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference,
                                                                dnnl_convolution_direct, &md[0], &md[1], NULL,
                                                                &md[2], strides, dilates, pad_l, pad_r),
                     "convolution_forward_desc_init") &&
             dnnl_ok(dnnl_primitive_desc_create(&b->pd, &cd, NULL, b->engine, NULL), "convolution primitive_desc");
        return ok;
    }
    bool has_bias = strcmp(op->kind, "dense") == 0 && op->n_tensors == 4;
    bool has_relu = op->epilogue && (op->epilogue->kind == RLT_EXPR_RELU);
    if (has_relu) {
        if (!dnnl_ok(dnnl_primitive_attr_create(&attr), "primitive_attr_create") ||
            !dnnl_ok(dnnl_post_ops_create(&post_ops), "post_ops_create") ||
            !dnnl_ok(dnnl_post_ops_append_eltwise(post_ops, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f),
                     "post_ops_append_eltwise(relu)") ||
            !dnnl_ok(dnnl_primitive_attr_set_post_ops(attr, post_ops), "primitive_attr_set_post_ops"))
            goto cleanup;
    }
    dnnl_matmul_desc_t mmd;
    ok = dnnl_ok(dnnl_matmul_desc_init(&mmd, &md[0], &md[1], has_bias ? &md[2] : NULL, &md[out]),
                 "matmul_desc_init") &&
         dnnl_ok(dnnl_primitive_desc_create(&b->pd, &mmd, attr, b->engine, NULL), "matmul primitive_desc");
cleanup:
    if (post_ops) dnnl_post_ops_destroy(post_ops);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return ok;
}

/* "nChw8c": the dims outer to inner (by stride), upper case where blocked,
 * then the inner blocks; letters name the dims in logical order. */
static void format_layout(const dnnl_memory_desc_t *md, const char *letters, char *buf, size_t cap)
{
    if (md->format_kind != dnnl_blocked) {
        snprintf(buf, cap, "(non-blocked format kind %d)", (int)md->format_kind);
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
        k += (size_t)snprintf(buf + k, cap - k, "%lld%c", (long long)blk->inner_blks[j],
                              letters[blk->inner_idxs[j]]);
}

static void add_arg(step *s, int arg, dnnl_memory_t mem)
{
    RLT_ASSERT(s->n_args < (int)RLT_ARRAY_LEN(s->args));
    s->args[s->n_args++] = (dnnl_exec_arg_t){arg, mem};
}

/* Memories in both layouts, the reorders between them, the weights reordered
 * once, and the two plans. */
static bool create_memories(bench *b)
{
    const rlt_op *op = b->op;
    int out = op->n_tensors - 1;
    size_t k = 0;
    b->compute.prim = b->prim;
    for (int t = 0; t < op->n_tensors; t++) {
        tensor_map *m = &b->map[t];
        if (!dnnl_ok(dnnl_memory_create(&b->user[t], &m->user_md, b->engine, DNNL_MEMORY_ALLOCATE),
                     "memory_create"))
            return false;
        const dnnl_memory_desc_t *want = dnnl_primitive_desc_query_md(b->pd, dnnl_query_exec_arg_md, m->arg);
        if (!want) return dnnl_ok(dnnl_runtime_error, "primitive_desc_query_md");
        char fmt[64];
        format_layout(want, m->letters, fmt, sizeof fmt);
        k += (size_t)snprintf(b->layout + k, sizeof b->layout - k, "%s%s %s", t ? ", " : "", op->tensors[t].name,
                              fmt);
        RLT_ASSERT(k < sizeof b->layout);
        if (dnnl_memory_desc_equal(want, &m->user_md)) {
            b->mem[t] = b->user[t];
        } else {
            dnnl_primitive_desc_t rpd = NULL;
            bool is_input = t != out;
            const dnnl_memory_desc_t *from = is_input ? &m->user_md : want, *to = is_input ? want : &m->user_md;
            bool ok = dnnl_ok(dnnl_memory_create(&b->mem[t], want, b->engine, DNNL_MEMORY_ALLOCATE),
                              "memory_create") &&
                      dnnl_ok(dnnl_reorder_primitive_desc_create(&rpd, from, b->engine, to, b->engine, NULL),
                              "reorder primitive_desc") &&
                      dnnl_ok(dnnl_primitive_create(&b->reorder[t], rpd), "reorder primitive_create");
            if (rpd) dnnl_primitive_desc_destroy(rpd);
            if (!ok) return false;
        }
        add_arg(&b->compute, m->arg, b->mem[t]);
    }
    /* The plan with reorders: weights are pre-packed (by prepare_weights),
     * activations are reordered on every call. */
    for (int t = 0; t < out; t++) {
        if (!b->reorder[t] || op->tensors[t].is_weight) continue;
        step *s = &b->full[b->n_full++];
        *s = (step){.prim = b->reorder[t]};
        add_arg(s, DNNL_ARG_FROM, b->user[t]);
        add_arg(s, DNNL_ARG_TO, b->mem[t]);
        b->has_io_reorders = true;
    }
    b->full[b->n_full++] = b->compute;
    if (b->reorder[out]) {
        step *s = &b->full[b->n_full++];
        *s = (step){.prim = b->reorder[out]};
        add_arg(s, DNNL_ARG_FROM, b->mem[out]);
        add_arg(s, DNNL_ARG_TO, b->user[out]);
        b->has_io_reorders = true;
    }
    return true;
}

static bool run_steps(const bench *b, const step *steps, int n_steps)
{
    for (int i = 0; i < n_steps; i++)
        if (dnnl_primitive_execute(steps[i].prim, b->stream, steps[i].n_args, steps[i].args) != dnnl_success)
            return false;
    return dnnl_stream_wait(b->stream) == dnnl_success;
}

static float *memory_data(dnnl_memory_t mem)
{
    void *p = NULL;
    return dnnl_memory_get_data_handle(mem, &p) == dnnl_success ? p : NULL;
}

/* Inputs in rltune's layout from rltune's seeds; weights reordered once. */
static bool fill_inputs(bench *b)
{
    const rlt_op *op = b->op;
    for (int t = 0; t < op->n_tensors - 1; t++) {
        float *p = memory_data(b->user[t]);
        if (!p) return dnnl_ok(dnnl_runtime_error, "memory_get_data_handle");
        rlt_tensor_fill(p, rlt_op_tensor_size(op, t), INPUT_SEED + (uint64_t)t);
        if (!b->reorder[t] || !op->tensors[t].is_weight) continue;
        step s = {.prim = b->reorder[t]};
        add_arg(&s, DNNL_ARG_FROM, b->user[t]);
        add_arg(&s, DNNL_ARG_TO, b->mem[t]);
        if (!run_steps(b, &s, 1)) return dnnl_ok(dnnl_runtime_error, "weights reorder");
    }
    return true;
}

/* Outputs whose reference takes more multiply-adds than this are checked on
 * a sample of VERIFY_SAMPLE elements (seeded; the first and the last
 * included), not whole: the interpreter runs at some tens of millions of
 * terms a second, and matmul 2048^3 has 8.6 billion. */
#define VERIFY_FULL_MAX_TERMS (1LL << 27)
#define VERIFY_SAMPLE 4096

/* One call with the reorders, on the seeded inputs, against the reference;
 * *max_ratio receives the largest |error| / tolerance, *n_checked the
 * elements compared. */
static bool verify(bench *b, double *max_ratio, int64_t *n_checked)
{
    const rlt_op *op = b->op;
    int out = op->n_tensors - 1;
    int64_t n_out = rlt_op_tensor_size(op, out);
    bool is_sampled = (double)n_out * (double)rlt_op_reduce_size(op) > (double)VERIFY_FULL_MAX_TERMS &&
                      n_out > VERIFY_SAMPLE;
    int64_t n_check = is_sampled ? VERIFY_SAMPLE : n_out;
    const float *inputs[RLT_MAX_TENSORS];
    double *ref = malloc(sizeof(double) * (size_t)n_check * 2);
    int64_t *where = malloc(sizeof(int64_t) * (size_t)n_check);
    float *got = memory_data(b->user[out]);
    bool ok = false;
    if (!ref || !where || !got) {
        fprintf(stderr, "bench_dnnl: out of memory for the verification of %s\n", op->spec);
        goto cleanup;
    }
    double *magnitude = ref + n_check;
    for (int t = 0; t < out; t++) inputs[t] = memory_data(b->user[t]);
    for (int64_t i = 0; i < n_out; i++) got[i] = NAN;
    if (!run_steps(b, b->full, b->n_full)) {
        dnnl_ok(dnnl_runtime_error, "execute (verification call)");
        goto cleanup;
    }
    rlt_diag diag = {0};
    rlt_status st = RLT_STATUS_OK;
    if (!is_sampled) {
        for (int64_t i = 0; i < n_out; i++) where[i] = i;
        st = rlt_op_eval_reference(op, inputs, ref, magnitude, &diag);
    } else {
        rlt_rng rng;
        rlt_rng_seed(&rng, 1);
        where[0] = 0;
        where[1] = n_out - 1;
        for (int64_t i = 2; i < n_check; i++) where[i] = (int64_t)rlt_rng_below(&rng, (uint64_t)n_out);
        for (int64_t i = 0; i < n_check && st == RLT_STATUS_OK; i++)
            st = rlt_op_eval_reference_at(op, inputs, where[i], &ref[i], &magnitude[i], &diag);
    }
    if (st != RLT_STATUS_OK) {
        fprintf(stderr, "bench_dnnl: reference of %s failed: %s\n", op->spec, diag.message);
        goto cleanup;
    }
    double scale = RLT_TOLERANCE_FACTOR * sqrt((double)rlt_op_reduce_size(op) + 1.0) * FLT_EPSILON;
    int64_t n_bad = 0, first = -1;
    *max_ratio = 0;
    for (int64_t i = 0; i < n_check; i++) {
        double tol = scale * magnitude[i] + FLT_MIN;
        float g = got[where[i]];
        double err = isfinite(g) ? fabs(g - ref[i]) : INFINITY;
        if (err / tol > *max_ratio) *max_ratio = err / tol;
        if (!(err <= tol) && n_bad++ == 0) first = i;
    }
    if (n_bad > 0) {
        fprintf(stderr,
                "bench_dnnl: WRONG ANSWER for %s: %s element %lld is %.9g, rltune's reference says %.9g "
                "(tolerance %.3g); %lld of %lld elements checked wrong. No timing printed.\n",
                op->spec, op->tensors[out].name, (long long)where[first], (double)got[where[first]], ref[first],
                scale * magnitude[first] + FLT_MIN, (long long)n_bad, (long long)n_check);
        goto cleanup;
    }
    *n_checked = n_check;
    ok = true;
cleanup:
    free(ref);
    free(where);
    return ok;
}

/* ---- timing, as bench_sgemm --------------------------------------------- */

typedef struct steps_call {
    const bench *b;
    const step *steps;
    int n_steps;
} steps_call;

static bool run_steps_call(void *arg)
{
    const steps_call *c = arg;
    return run_steps(c->b, c->steps, c->n_steps);
}

/* The median seconds per call of the steps (bench/timing.h). */
static bool time_steps(const bench *b, const step *steps, int n_steps, double *median_s)
{
    steps_call c = {b, steps, n_steps};
    *median_s = bench_time_calls(run_steps_call, &c, N_SAMPLES, MIN_SAMPLE_S);
    return *median_s >= 0 || dnnl_ok(dnnl_runtime_error, "execute");
}

/* ---- threads ------------------------------------------------------------ */

/* Pins to the last n allowed CPUs (all threads share the mask; one thread
 * gets one CPU, as bench_sgemm and the runner pin). False if there are fewer. */
static bool pin_last_cpus(int n, int *n_allowed)
{
    cpu_set_t set, pinned;
    CPU_ZERO(&set);
    CPU_ZERO(&pinned);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return false;
    *n_allowed = CPU_COUNT(&set);
    int left = n;
    for (int c = CPU_SETSIZE - 1; c >= 0 && left > 0; c--)
        if (CPU_ISSET(c, &set)) {
            CPU_SET(c, &pinned);
            left--;
        }
    return left == 0 && sched_setaffinity(0, sizeof pinned, &pinned) == 0;
}

/* libgomp (loaded with libdnnl) reads OMP_* at load time: set them and run
 * this program again, once (REEXEC_MARK says it was). Returns only if the
 * exec failed. */
static void reexec_with_omp_env(int n_threads, char **argv)
{
    char n[16];
    snprintf(n, sizeof n, "%d", n_threads);
    setenv("OMP_NUM_THREADS", n, 1);
    if (n_threads > 1) {
        setenv("OMP_WAIT_POLICY", "active", 1);
        setenv("OMP_PROC_BIND", "close", 1);
        setenv("OMP_PLACES", "cores", 1);
    } else {
        unsetenv("OMP_PROC_BIND");
        unsetenv("OMP_PLACES");
    }
    setenv(REEXEC_MARK, "1", 1);
    execv("/proc/self/exe", argv);
    fprintf(stderr, "bench_dnnl: warning: could not re-execute with the OMP_* settings (%s); binding and wait "
                    "policy are libgomp's defaults\n", strerror(errno));
}

/* The thread count through the API too (it must hold before the first
 * primitive descriptor: oneDNN plans its blocking for it). */
static bool set_omp_threads(int n_threads)
{
    void (*set_threads)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "omp_set_num_threads");
    int (*max_threads)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "omp_get_max_threads");
    if (!set_threads || !max_threads) {
        fprintf(stderr, "bench_dnnl: libgomp's omp_set_num_threads not found (is this oneDNN built with OpenMP?)\n");
        return false;
    }
    set_threads(n_threads);
    if (max_threads() != n_threads) {
        fprintf(stderr, "bench_dnnl: asked for %d OpenMP threads, libgomp gives %d\n", n_threads, max_threads());
        return false;
    }
    return true;
}

/* ---- main --------------------------------------------------------------- */

static void bench_destroy(bench *b)
{
    for (int t = RLT_MAX_TENSORS - 1; t >= 0; t--) {
        if (b->reorder[t]) dnnl_primitive_destroy(b->reorder[t]);
        if (b->mem[t] && b->mem[t] != b->user[t]) dnnl_memory_destroy(b->mem[t]);
        if (b->user[t]) dnnl_memory_destroy(b->user[t]);
    }
    if (b->prim) dnnl_primitive_destroy(b->prim);
    if (b->pd) dnnl_primitive_desc_destroy(b->pd);
    if (b->stream) dnnl_stream_destroy(b->stream);
    if (b->engine) dnnl_engine_destroy(b->engine);
    rlt_op_destroy(b->op);
}

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
    if (why) fprintf(stderr, "bench_dnnl: %s\n", why);
    fprintf(stderr,
            "usage: bench_dnnl OP_SPEC [--threads N] [--format preferred|plain] [--json]\n"
            "  OP_SPEC  an rltune op spec: matmul, batch_matmul, dense, conv2d or depthwise_conv2d,\n"
            "           e.g. conv2d:N=1,C=128,H=28,W=28,K=128,R=3,S=3,stride=1,pad=1 (see `rltune ops`)\n"
            "  --threads N  OpenMP threads, pinned to the last N CPUs (default 1)\n"
            "  --format F   preferred: oneDNN picks the conv layouts and dense's weight layout (default);\n"
            "               plain: rltune's row-major / NCHW / OIHW layouts throughout\n"
            "  --json       one JSON object: op, threads, format, layout, impl, time_ms, gflops,\n"
            "               time_ms_with_reorders, gflops_with_reorders\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *spec = NULL;
    int n_threads = 1;
    bool is_json = false, wants_preferred = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--json") == 0) {
            is_json = true;
        } else if (strcmp(a, "--threads") == 0 && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || end == argv[i] || v < 1 || v > RLT_MAX_THREADS)
                return usage("--threads takes a whole number from 1 to 256");
            n_threads = (int)v;
        } else if (strcmp(a, "--format") == 0 && i + 1 < argc) {
            const char *f = argv[++i];
            if (strcmp(f, "preferred") != 0 && strcmp(f, "plain") != 0)
                return usage("--format takes 'preferred' or 'plain'");
            wants_preferred = f[1] == 'r';
        } else if (strcmp(a, "--threads") == 0 || strcmp(a, "--format") == 0) {
            fprintf(stderr, "bench_dnnl: %s needs a value\n", a);
            return usage(NULL);
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            return usage(NULL);
        } else if (a[0] == '-' || spec) {
            fprintf(stderr, "bench_dnnl: unexpected argument '%s'\n", a);
            return usage(NULL);
        } else {
            spec = a;
        }
    }
    if (!spec) return usage("no op spec given");

    /* Pinned before the re-execution, which keeps the mask: after it,
     * libgomp has already bound this thread to the first of the places. */
    if (!getenv(REEXEC_MARK)) {
        int n_allowed = 0;
        if (!pin_last_cpus(n_threads, &n_allowed)) {
            fprintf(stderr, "bench_dnnl: cannot pin %d thread%s: this process may use %d CPU%s\n", n_threads,
                    n_threads == 1 ? "" : "s", n_allowed, n_allowed == 1 ? "" : "s");
            return 2;
        }
        reexec_with_omp_env(n_threads, argv);
    }

    int rc = 1;
    bench b = {0};
    rlt_diag diag = {0};
    if (rlt_op_parse(spec, &b.op, &diag) != RLT_STATUS_OK) {
        fprintf(stderr, "bench_dnnl: %s\n", diag.message);
        rc = 2;
        goto cleanup;
    }
    const rlt_op *op = b.op;
    if (!map_tensors(&b, wants_preferred)) {
        rc = 2;
        goto cleanup;
    }
    bool has_any = false;
    for (int t = 0; t < op->n_tensors; t++) has_any |= b.map[t].is_any;
    const char *format = has_any ? "preferred" : "plain";
    if (!set_omp_threads(n_threads) || !dnnl_ok(dnnl_engine_create(&b.engine, dnnl_cpu, 0), "engine_create") ||
        !dnnl_ok(dnnl_stream_create(&b.stream, b.engine, dnnl_stream_default_flags), "stream_create") ||
        !create_pd(&b) || !dnnl_ok(dnnl_primitive_create(&b.prim, b.pd), "primitive_create"))
        goto cleanup;
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(b.pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl) impl = "?";
    snprintf(b.impl, sizeof b.impl, "%s", impl);
    if (!create_memories(&b) || !fill_inputs(&b)) goto cleanup;

    double max_ratio = 0;
    int64_t n_checked = 0;
    if (!verify(&b, &max_ratio, &n_checked)) goto cleanup;

    double time_s = 0, time_full_s = 0;
    if (!time_steps(&b, &b.compute, 1, &time_s)) goto cleanup;
    time_full_s = time_s;
    if (b.has_io_reorders && !time_steps(&b, b.full, b.n_full, &time_full_s)) goto cleanup;
    double gflops = op->flops / time_s * 1e-9, gflops_full = op->flops / time_full_s * 1e-9;

    if (is_json) {
        printf("{\"op\":");
        print_json_string(op->spec);
        printf(",\"threads\":%d,\"format\":\"%s\",\"layout\":", n_threads, format);
        print_json_string(b.layout);
        printf(",\"impl\":");
        print_json_string(b.impl);
        printf(",\"time_ms\":%.6f,\"gflops\":%.3f,\"time_ms_with_reorders\":%.6f,\"gflops_with_reorders\":%.3f}\n",
               time_s * 1e3, gflops, time_full_s * 1e3, gflops_full);
    } else {
        bool has_weight_reorder = false;
        for (int t = 0; t < op->n_tensors - 1; t++) has_weight_reorder |= b.reorder[t] && op->tensors[t].is_weight;
        const dnnl_version_t *v = dnnl_version();
        printf("oneDNN %d.%d.%d %s, %d thread%s, format %s%s\n", v->major, v->minor, v->patch, op->spec,
               n_threads, n_threads == 1 ? "" : "s", format,
               !has_any && wants_preferred ? " (no weights to pre-pack: --format has no effect)" : "");
        printf("  implementation %s; layout %s\n", b.impl, b.layout);
        printf("  verified against rltune's reference (%lld of %lld elements): largest error %.3f of the "
               "tolerance\n",
               (long long)n_checked, (long long)rlt_op_tensor_size(op, op->n_tensors - 1), max_ratio);
        printf("  primitive alone:         %.3f ms, %.2f GFLOP/s (median of 7%s)\n", time_s * 1e3, gflops,
               has_weight_reorder ? "; weights reordered once before, not timed" : "");
        if (b.has_io_reorders)
            printf("  primitive + reorders:    %.3f ms, %.2f GFLOP/s (median of 7; input from and output to "
                   "rltune's layout)\n", time_full_s * 1e3, gflops_full);
        else
            printf("  primitive + reorders:    the same (activations already in rltune's layout)\n");
    }
    rc = 0;
cleanup:
    bench_destroy(&b);
    return rc;
}
