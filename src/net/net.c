/*
 * net.c - compiles a graph into a program of fused kernels and evaluated
 * nodes, and runs it (net.h says what and why; docs/net.md the rules).
 *
 * Compiling, in order:
 *   1. the tasks (graph/tasks.c) and the steps: one per occurrence of a task
 *      (at its kernel node's place) and one per other live node, views,
 *      Concats and Splits placed in place running nothing;
 *   2. each occurrence's tensors bound to the fused op's: graph tensors, or
 *      buffers made here (a weight transposed to dense's [N,K] or scaled by
 *      Gemm's alpha; the bias: the kernel's own plus fused per-channel Adds);
 *   3. the memory plan over the activations' live ranges in steps;
 *   4. one schedule per task (record, base record or seed), all kernels
 *      built in one batch, loaded, and every occurrence's weights packed
 *      into its own workspace.
 */
#include "net/net_internal.h"

#include "codegen/codegen.h"
#include "graph/memplan.h"
#include "ir/ir.h"
#include "net/ops.h"
#include "net/ops_run.h"
#include "measure/measure.h"
#include "rltune/records.h"
#include "rltune/session.h"
#include "sched/sched.h"
#include "space/space.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN RLT_NET_ALIGN

/* ---- buffers ------------------------------------------------------------- */

/* A zeroed buffer of `bytes`, ALIGN-aligned, owned by the net; NULL when out
 * of memory. */
static void *net_alloc(rlt_net *n, int64_t bytes)
{
    if (n->n_allocs == n->cap_allocs) {
        int cap = n->cap_allocs ? 2 * n->cap_allocs : 16;
        void **grown = rlt_realloc(n->allocs, (size_t)cap * sizeof *grown);
        if (!grown) return NULL;
        n->allocs = grown;
        n->cap_allocs = cap;
    }
    void *raw = rlt_calloc((size_t)bytes + ALIGN, 1);
    if (!raw) return NULL;
    n->allocs[n->n_allocs++] = raw;
    n->extra_bytes += bytes;
    return (void *)(((uintptr_t)raw + ALIGN - 1) & ~(uintptr_t)(ALIGN - 1));
}

static size_t tensor_bytes(const rlt_graph_tensor *t)
{
    return (size_t)rlt_graph_tensor_n_elems(t) * rlt_dtype_size(t->dtype);
}

/* ---- binding an occurrence's tensors -------------------------------------- */

static int in_tensor(const rlt_graph_node *n, int i) { return i < n->n_inputs ? n->inputs[i] : -1; }

/* Constant t ([K,N], the last two dimensions) as a new [N,K] buffer, times
 * scale: dense's weight layout. */
static float *transposed(rlt_net *n, const rlt_graph_tensor *t, double scale)
{
    int64_t K = t->dims[t->rank - 2], N = t->dims[t->rank - 1];
    float *w = net_alloc(n, K * N * (int64_t)sizeof(float));
    if (!w) return NULL;
    const float *src = t->data;
    for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < N; j++) w[j * K + k] = (float)(src[k * N + j] * scale);
    return w;
}

/* A Conv's constant [K,C,R,S] weight w with its channels blocked,
 * [K/bo, C/bi, R, S, bi, bo] (bi or bo 1: that side not blocked), as a new
 * buffer: a blocked conv2d's weight, and with bi = 1 a blocked depthwise
 * one's ([C,1,R,S] into [C/bo, 1, R, S, 1, bo]). */
static float *blocked_weight(rlt_net *n, const rlt_op *op, int t_w, const rlt_graph_tensor *w, int64_t bi, int64_t bo)
{
    int64_t K = w->dims[0], C = w->dims[1], R = w->dims[2], S = w->dims[3];
    float *dst = net_alloc(n, rlt_op_tensor_size(op, t_w) * (int64_t)sizeof(float));
    if (!dst) return NULL;
    const float *src = w->data;
    for (int64_t k = 0; k < K; k++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t rs = 0; rs < R * S; rs++)
                dst[(((k / bo) * (C / bi) + c / bi) * R * S + rs) * bi * bo + (c % bi) * bo + k % bo] =
                    src[(k * C + c) * R * S + rs];
    return dst;
}

/* Constant t times scale, as a new buffer. */
static float *scaled(rlt_net *n, const rlt_graph_tensor *t, double scale)
{
    int64_t count = rlt_graph_tensor_n_elems(t);
    float *w = net_alloc(n, count * (int64_t)sizeof(float));
    if (!w) return NULL;
    const float *src = t->data;
    for (int64_t i = 0; i < count; i++) w[i] = (float)(src[i] * scale);
    return w;
}

/* Adds scale * (per-channel constant c) into bias[channels]. */
static void bias_add(float *bias, int64_t channels, const rlt_graph_tensor *c, double scale)
{
    const float *v = c->data;
    bool is_scalar = rlt_graph_tensor_n_elems(c) == 1;
    for (int64_t k = 0; k < channels; k++) bias[k] += (float)(scale * v[is_scalar ? 0 : k]);
}

static rlt_status bind_fail(const rlt_graph *g, int node, rlt_diag *diag, const char *what)
{
    return rlt_graph_node_fail(g, &g->nodes[node], diag, RLT_STATUS_INVALID_ARGUMENT,
                               "cannot bind the fused kernel's %s (a task the compiler does not know how to run)",
                               what);
}

/* Binds the op tensors of one occurrence (nodes[0] the kernel node, the
 * rest fused into it) and sets the step's output tensor. */
static rlt_status bind_occurrence(rlt_net *n, const rlt_op *op, const int *nodes, int n_nodes, net_step *s,
                                  rlt_diag *diag)
{
    const rlt_graph *g = n->g;
    const rlt_graph_node *kn = &g->nodes[nodes[0]];
    const char *kind = rlt_op_kind(op);
    bool is_conv = strcmp(kn->op_type, "Conv") == 0, is_gemm = strcmp(kn->op_type, "Gemm") == 0;
    bool is_dense = strcmp(kind, "dense") == 0;
    for (int t = 0; t < op->n_tensors; t++) s->bind[t] = (net_bound){.tensor = -1};
    int t_in0 = 0, t_in1 = 1; /* I / A / X, then W / B */
    int t_bias = rlt_op_find_tensor(op, "bias"), t_res = rlt_op_find_tensor(op, "res");
    int t_out = op->n_tensors - 1;
    int64_t channels = 0;
    float *bias = NULL;
    if (t_bias >= 0) {
        channels = rlt_op_tensor_size(op, t_bias); /* [K], or [K/oblock, oblock] */
        if (!(bias = net_alloc(n, channels * (int64_t)sizeof(float))))
            return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory binding a kernel's bias");
        s->bind[t_bias].buf = bias;
    }
    int a = in_tensor(kn, 0), b = in_tensor(kn, 1), c = in_tensor(kn, 2);
    s->bind[t_in0].tensor = a;
    const rlt_graph_tensor *bt = &g->tensors[b];
    if (is_dense && bt->data) {
        double alpha = is_gemm ? rlt_graph_attr_float(kn, "alpha", 1.0) : 1.0;
        bool is_nk = (is_gemm && rlt_graph_attr_int(kn, "transB", 0)) || bt->rank == 1;
        if (is_nk && alpha == 1.0)
            s->bind[t_in1].tensor = b;
        else if (!(s->bind[t_in1].buf = is_nk ? scaled(n, bt, alpha) : transposed(n, bt, alpha)))
            return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory binding a kernel's weight");
    } else if (is_conv && (op->tensors[0].n_dims == 5 || op->tensors[op->n_tensors - 1].n_dims == 5)) {
        /* blocked channels: the KCRS (depthwise: [C,1,R,S]) weight reordered once */
        if (!bt->data || bt->rank != 4) return bind_fail(g, nodes[0], diag, "weight (a blocked layout needs a constant)");
        const rlt_tensor *ti = &op->tensors[0], *to = &op->tensors[op->n_tensors - 1];
        bool is_dw = strcmp(kind, "depthwise_conv2d") == 0; /* one block, on its output channels */
        int64_t bi = ti->n_dims == 5 && !is_dw ? ti->dims[4] : 1, bo = to->n_dims == 5 ? to->dims[4] : 1;
        if (!(s->bind[t_in1].buf = blocked_weight(n, op, t_in1, bt, bi, bo)))
            return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory binding a kernel's weight");
    } else {
        /* a computed operand, or a weight in the op's own layout (Conv's KCRS) */
        if (is_dense && !(is_gemm && rlt_graph_attr_int(kn, "transB", 0))) return bind_fail(g, nodes[0], diag, "weight");
        s->bind[t_in1].tensor = b;
    }
    if (op->tensors[t_in1].is_weight && !bt->data) s->is_prepared_each_run = true;
    if (c >= 0 && is_conv) {
        if (!bias || !g->tensors[c].data) return bind_fail(g, nodes[0], diag, "bias");
        bias_add(bias, channels, &g->tensors[c], 1.0);
    } else if (c >= 0 && is_gemm && rlt_graph_attr_float(kn, "beta", 1.0) != 0.0) {
        double beta = rlt_graph_attr_float(kn, "beta", 1.0);
        const rlt_graph_tensor *ct = &g->tensors[c];
        if (ct->data && bias && rlt_graph_is_per_channel(ct, &g->tensors[kn->outputs[0]], 1)) {
            bias_add(bias, channels, ct, beta);
        } else if (t_res >= 0) {
            if (beta == 1.0)
                s->bind[t_res].tensor = c;
            else if (!ct->data)
                return bind_fail(g, nodes[0], diag, "addend");
            else if (!(s->bind[t_res].buf = scaled(n, ct, beta)))
                return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory binding a kernel's addend");
        } else {
            return bind_fail(g, nodes[0], diag, "C input");
        }
    }
    /* the fused nodes: Adds give the bias or the residual */
    int t = kn->outputs[0];
    int channel_axis = is_conv || is_gemm ? 1 : g->tensors[t].rank - 1;
    for (int i = 1; i < n_nodes; i++) {
        const rlt_graph_node *fn = &g->nodes[nodes[i]];
        if (strcmp(fn->op_type, "Add") == 0) {
            int other = fn->inputs[0] == t ? fn->inputs[1] : fn->inputs[0];
            const rlt_graph_tensor *ot = &g->tensors[other];
            if (ot->data && bias && rlt_graph_is_per_channel(ot, &g->tensors[fn->outputs[0]], channel_axis))
                bias_add(bias, channels, ot, 1.0);
            else if (t_res >= 0 && s->bind[t_res].tensor < 0 && !s->bind[t_res].buf)
                s->bind[t_res].tensor = other;
            else
                return bind_fail(g, nodes[i], diag, "residual");
        }
        t = fn->outputs[0];
    }
    s->out = t;
    s->bind[t_out].tensor = t;
    /* every bound graph tensor must have the op tensor's size */
    for (int k = 0; k < op->n_tensors; k++) {
        if (s->bind[k].tensor < 0) {
            if (!s->bind[k].buf) return bind_fail(g, nodes[0], diag, op->tensors[k].name);
            continue;
        }
        const rlt_graph_tensor *gt = &g->tensors[s->bind[k].tensor];
        if (gt->dtype != RLT_DTYPE_FLOAT32 || rlt_graph_tensor_n_elems(gt) != rlt_op_tensor_size(op, k))
            return bind_fail(g, nodes[0], diag, op->tensors[k].name);
    }
    return RLT_STATUS_OK;
}

/* ---- schedules ------------------------------------------------------------ */

void rlt_net_base_spec(const char *spec, char *out, size_t cap)
{
    out[0] = '\0';
    const char *epi = strstr(spec, ",epilogue=");
    if (epi) {
        const char *rest = strchr(epi + 1, ','); /* the keys after it (a blocked conv's iblock, oblock) */
        snprintf(out, cap, "%.*s%s", (int)(epi - spec), spec, rest ? rest : "");
        return;
    }
    if (strncmp(spec, "dense:", 6) != 0) return;
    /* dense says bias and relu with keys of its own (the last two) */
    const char *keys = strstr(spec, ",bias=");
    if (!keys || strcmp(keys, ",bias=0,relu=0") == 0) return;
    snprintf(out, cap, "%.*s,bias=0,relu=0", (int)(keys - spec), spec);
}

/* The nest of a record's schedule applied to op; false when it does not
 * apply (then the next source is tried). */
static bool record_nest(const rlt_op *op, const rlt_record *r, rlt_nest *out)
{
    rlt_diag d = {0};
    rlt_sched *sched = NULL;
    bool ok = rlt_sched_parse(r->schedule, "a record", &sched, &d) == RLT_STATUS_OK &&
              rlt_sched_apply(sched, op, out, &d) == RLT_STATUS_OK;
    rlt_sched_destroy(sched);
    return ok;
}

bool rlt_net_takes_record(const char *config, int n_threads)
{
    return n_threads == 1 || !rlt_config_key_cc(config);
}

static bool takes_record(const rlt_record *r, void *ctx)
{
    return rlt_net_takes_record(r->config, *(const int *)ctx);
}

rlt_status rlt_net_task_record(rlt_db *db, const char *target, const char *spec, const rlt_op *op, int n_threads,
                               rlt_record *out, rlt_nest *nest, rlt_net_origin *out_origin, bool *out_found,
                               rlt_diag *diag)
{
    *out_found = false;
    char base[512];
    rlt_net_base_spec(spec, base, sizeof base);
    const char *specs[2] = {spec, base};
    for (int s = 0; s < 2; s++) {
        if (!specs[s][0]) continue;
        bool has = false;
        rlt_status st = rlt_db_best_where(db, specs[s], target, takes_record, &n_threads, out, &has, diag);
        if (st != RLT_STATUS_OK) return st;
        if (has && record_nest(op, out, nest)) {
            *out_found = true;
            *out_origin = s == 0 ? RLT_NET_FROM_RECORD : RLT_NET_FROM_BASE_RECORD;
            return RLT_STATUS_OK;
        }
    }
    return RLT_STATUS_OK;
}

rlt_status rlt_net_seed_nest(const rlt_op *op, int n_threads, rlt_nest *out, rlt_str *key, rlt_str *schedule,
                             rlt_diag *diag)
{
    int n = 0;
    rlt_status st = rlt_net_seed_nests(op, n_threads, 1, out, key, schedule, &n, diag);
    if (st == RLT_STATUS_OK && n != 1)
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory making the seed of %s", op->spec);
    return st;
}

rlt_status rlt_net_seed_nests(const rlt_op *op, int n_threads, int count, rlt_nest *out, rlt_str *keys,
                              rlt_str *schedules, int *n_out, rlt_diag *diag)
{
    *n_out = 0;
    if (count < 1 || count > RLT_NET_MAX_SEEDS)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "seeds: from 1 to %d (got %d)", RLT_NET_MAX_SEEDS, count);
    rlt_space space;
    rlt_config seeds[RLT_NET_MAX_SEEDS];
    rlt_space_opts so = {.n_threads = n_threads, .no_clang = true};
    rlt_status st = rlt_space_create(op, &so, &space, diag);
    if (st != RLT_STATUS_OK) return st;
    int n = rlt_space_seeds(&space, count, seeds);
    for (int i = 0; i < n; i++) {
        const char *cc = NULL;
        if ((st = rlt_space_nest(&space, &seeds[i], &out[i], &cc, diag)) != RLT_STATUS_OK) return st;
        if (keys) rlt_space_config_key(&space, &seeds[i], &keys[i]);
        if (schedules) {
            rlt_sched *sched = NULL;
            if ((st = rlt_space_schedule(&space, &seeds[i], &sched, &cc, diag)) != RLT_STATUS_OK) return st;
            rlt_sched_print(sched, &schedules[i]);
            rlt_sched_destroy(sched);
        }
    }
    *n_out = n;
    return RLT_STATUS_OK;
}

/* The best record of a task under the first of `targets` (NULL-ended, at
 * most two) that has one that applies (rlt_net_task_record); *found false
 * without a database. */
static rlt_status task_record_first(rlt_db *db, const char *const *targets, const char *spec, const rlt_op *op,
                                    int n_threads, rlt_record *r, rlt_nest *nest, rlt_net_origin *origin,
                                    bool *found, rlt_diag *diag)
{
    *found = false;
    for (int j = 0; db && !*found && j < 2 && targets[j]; j++) {
        rlt_status st = rlt_net_task_record(db, targets[j], spec, op, n_threads, r, nest, origin, found, diag);
        if (st != RLT_STATUS_OK) return st;
    }
    return RLT_STATUS_OK;
}

/* Chooses kernel i's schedule (the record of the first of `targets`,
 * NULL-ended, at most two, that has one, else the seed) and lowers it to
 * the kernel's source. */
static rlt_status kernel_source(rlt_net *n, rlt_db *db, const char *const *targets, int i, rlt_diag *diag)
{
    net_kernel *k = &n->kernels[i];
    rlt_net_task *t = &n->tasks[i];
    rlt_nest *nest = rlt_calloc(1, sizeof *nest);
    rlt_record *r = rlt_calloc(1, sizeof *r);
    rlt_status st = RLT_STATUS_OK;
    if (!nest || !r) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory choosing a schedule");
        goto cleanup;
    }
    bool is_found = false;
    rlt_net_origin origin = RLT_NET_FROM_SEED;
    if ((st = task_record_first(db, targets, t->spec, k->op, n->n_threads, r, nest, &origin, &is_found, diag)) !=
        RLT_STATUS_OK)
        goto cleanup;
    if (is_found) {
        t->origin = origin;
        t->record_id = r->id;
        t->record_ms = r->time_median_ms;
        k->cc = rlt_config_key_cc(r->config);
    } else {
        if ((st = rlt_net_seed_nest(k->op, n->n_threads, nest, NULL, NULL, diag)) != RLT_STATUS_OK) goto cleanup;
        t->origin = RLT_NET_FROM_SEED;
    }
    st = rlt_codegen_kernel(nest, &k->src, diag);
cleanup:
    rlt_free(r);
    rlt_free(nest);
    return st;
}

/* Loads kernel i from its shared object. */
static rlt_status kernel_load(rlt_net *n, int i, const rlt_build_result *b, rlt_diag *diag)
{
    net_kernel *k = &n->kernels[i];
    if (b->status != RLT_STATUS_OK)
        return rlt_fail(diag, RLT_STATUS_BUILD_ERROR, "the kernel of task %d (%s) did not compile: %s", i + 1,
                        n->tasks[i].spec, b->log);
    if (!(k->lib = dlopen(b->so_path, RTLD_NOW | RTLD_LOCAL)))
        return rlt_fail(diag, RLT_STATUS_BUILD_ERROR, "cannot load the kernel of task %d (%s): %s", i + 1,
                        n->tasks[i].spec, dlerror());
    char sym[RLT_SYMBOL_MAX + 32];
    snprintf(sym, sizeof sym, "%s_workspace_bytes", b->symbol);
    rlt_net_workspace_fn ws = (rlt_net_workspace_fn)dlsym(k->lib, sym);
    snprintf(sym, sizeof sym, "%s_prepare", b->symbol);
    k->prepare = (rlt_net_kernel_fn)dlsym(k->lib, sym);
    k->run = (rlt_net_kernel_fn)dlsym(k->lib, b->symbol);
    if (!ws || !k->prepare || !k->run)
        return rlt_fail(diag, RLT_STATUS_BUILD_ERROR, "the kernel of task %d (%s) lacks its functions in %s", i + 1,
                        n->tasks[i].spec, b->so_path);
    k->workspace_bytes = ws();
    return RLT_STATUS_OK;
}

/* ---- the steps ------------------------------------------------------------- */

bool rlt_net_node_is_folded(const rlt_graph *g, int node)
{
    const rlt_graph_node *n = &g->nodes[node];
    for (int o = 0; o < n->n_outputs; o++)
        if (n->outputs[o] >= 0 && !g->tensors[n->outputs[o]].data) return false;
    return true;
}

bool rlt_net_node_is_view(const rlt_graph *g, int node)
{
    const rlt_graph_node *n = &g->nodes[node];
    int in = n->n_inputs > 0 ? n->inputs[0] : -1;
    return rlt_fast_op_is_view(g, node) && in >= 0 && !g->tensors[in].data;
}

void rlt_net_node_tasks(const rlt_graph *g, const rlt_graph_tasks *gt, int *task_of, int *occ_of)
{
    for (int i = 0; i < g->n_nodes; i++) {
        task_of[i] = -1;
        if (occ_of) occ_of[i] = -1;
    }
    for (int t = 0; t < gt->n_tasks; t++) {
        const rlt_graph_task *task = &gt->tasks[t];
        for (int o = 0; o < task->weight; o++) {
            int end = o + 1 < task->weight ? task->starts[o + 1] : task->n_nodes;
            for (int k = task->starts[o]; k < end; k++) task_of[task->nodes[k]] = RLT_NET_FUSED;
            task_of[task->nodes[task->starts[o]]] = t;
            if (occ_of) occ_of[task->nodes[task->starts[o]]] = o;
        }
    }
}

/* A Concat whose parts are contiguous in its output (every output
 * dimension before the axis is 1: NCHW channels at batch 1) needs no copy
 * when its producers write their parts in place: each input becomes a
 * slice of the output's block (alias, alias_off) and the step runs
 * nothing. Only inputs written by a step of this network and in no other
 * block yet qualify (not a graph input, not a view, not a part of another
 * Concat, not an output of a Split placed in place, not twice in this
 * one); when one does not, the Concat copies as before. */
bool rlt_net_concat_fits_in_place(const rlt_graph *g, int node, const int *alias)
{
    const rlt_graph_node *c = &g->nodes[node];
    if (strcmp(c->op_type, "Concat") != 0 || c->n_outputs != 1 || c->outputs[0] < 0 || c->n_inputs < 1) return false;
    const rlt_graph_tensor *out = &g->tensors[c->outputs[0]];
    int64_t axis = rlt_graph_attr_int(c, "axis", 0);
    if (axis < 0) axis += out->rank;
    if (axis < 0 || axis >= out->rank || out->data) return false;
    for (int d = 0; d < axis; d++)
        if (out->dims[d] != 1) return false;
    for (int i = 0; i < c->n_inputs; i++) {
        int t = c->inputs[i];
        if (t < 0 || g->tensors[t].data || g->tensors[t].dtype != out->dtype || alias[t] != t) return false;
        for (int k = 0; k < g->n_inputs; k++)
            if (g->inputs[k] == t) return false;
        for (int j = 0; j < i; j++)
            if (c->inputs[j] == t) return false;
    }
    return true;
}

/* Places Concat `node` in place when it fits (rlt_net_concat_fits_in_place):
 * each input becomes a slice of the output's block. Returns whether it was
 * placed. */
static bool concat_in_place(rlt_net *n, int node)
{
    const rlt_graph *g = n->g;
    const rlt_graph_node *c = &g->nodes[node];
    if (!rlt_net_concat_fits_in_place(g, node, n->alias)) return false;
    int64_t off = 0;
    for (int i = 0; i < c->n_inputs; i++) {
        int t = c->inputs[i];
        n->alias[t] = c->outputs[0];
        n->alias_off[t] = off;
        off += (int64_t)tensor_bytes(&g->tensors[t]);
    }
    return true;
}

/* A Split whose parts are contiguous in its input (every input dimension
 * before the axis is 1: NCHW channels at batch 1, or the last axis of a
 * [1, ..., N] tensor) needs no copy: each output becomes a view of its
 * slice of the input's block (alias, alias_off) and the step runs nothing.
 * The input may itself be a view or a part of a Concat or of another Split
 * (plan_memory adds the offsets up the chain), but its block must be an
 * activation a step writes: not a graph input nor a view of one (the
 * caller's data stays the caller's), not a constant. Its outputs, placed
 * in another block, are unfit for a Concat in place after it
 * (rlt_net_concat_fits_in_place asks alias[t] == t), which then copies. A
 * graph output among them is fine: the outputs are copied out of vals[]
 * at the end, as a view's are. */
bool rlt_net_split_fits_in_place(const rlt_graph *g, int node, const int *alias)
{
    const rlt_graph_node *s = &g->nodes[node];
    if (strcmp(s->op_type, "Split") != 0 || s->n_inputs < 1 || s->inputs[0] < 0 || s->n_outputs < 1) return false;
    int in = s->inputs[0];
    const rlt_graph_tensor *x = &g->tensors[in];
    int64_t axis = rlt_graph_attr_int(s, "axis", 0);
    if (axis < 0) axis += x->rank;
    if (axis < 0 || axis >= x->rank || x->data) return false;
    for (int d = 0; d < axis; d++)
        if (x->dims[d] != 1) return false;
    int root = in;
    while (alias[root] != root) root = alias[root];
    for (int k = 0; k < g->n_inputs; k++)
        if (g->inputs[k] == root) return false;
    int64_t sum = 0;
    for (int o = 0; o < s->n_outputs; o++) {
        int t = s->outputs[o];
        if (t < 0) return false;
        const rlt_graph_tensor *y = &g->tensors[t];
        if (y->data || y->dtype != x->dtype || y->rank != x->rank) return false;
        for (int d = 0; d < x->rank; d++)
            if (d != axis && y->dims[d] != x->dims[d]) return false;
        sum += y->dims[axis];
    }
    return sum == x->dims[axis];
}

/* Places Split `node` in place when it fits (rlt_net_split_fits_in_place):
 * each output becomes a view of its slice of the input. Returns whether it
 * was placed. */
static bool split_in_place(rlt_net *n, int node)
{
    const rlt_graph *g = n->g;
    const rlt_graph_node *s = &g->nodes[node];
    if (!rlt_net_split_fits_in_place(g, node, n->alias)) return false;
    int64_t off = 0;
    for (int o = 0; o < s->n_outputs; o++) {
        int t = s->outputs[o];
        n->alias[t] = s->inputs[0];
        n->alias_off[t] = off;
        off += (int64_t)tensor_bytes(&g->tensors[t]);
    }
    return true;
}

/* Whether a node reads or writes a tensor in blocked channels. */
static bool touches_blocked(const rlt_net *n, const rlt_graph_node *node)
{
    if (!n->tensor_block) return false;
    for (int i = 0; i < node->n_inputs; i++)
        if (node->inputs[i] >= 0 && n->tensor_block[node->inputs[i]]) return true;
    for (int o = 0; o < node->n_outputs; o++)
        if (node->outputs[o] >= 0 && n->tensor_block[node->outputs[o]]) return true;
    return false;
}

/* The steps in graph order: a kernel step at each occurrence's kernel node,
 * an evaluated step for every other live node that is not fused. */
static rlt_status plan_steps(rlt_net *n, const rlt_graph_tasks *gt, rlt_diag *diag)
{
    const rlt_graph *g = n->g;
    int *task_of = rlt_malloc(((size_t)g->n_nodes + 1) * sizeof *task_of);
    int *occ_of = rlt_malloc(((size_t)g->n_nodes + 1) * sizeof *occ_of);
    rlt_status st = RLT_STATUS_OK;
    if (!task_of || !occ_of || !(n->steps = rlt_calloc((size_t)g->n_nodes + 1, sizeof *n->steps))) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory planning the network");
        goto cleanup;
    }
    if (!(n->alias = rlt_malloc(((size_t)g->n_tensors + 1) * sizeof *n->alias))) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory planning the network");
        goto cleanup;
    }
    if (!(n->alias_off = rlt_calloc((size_t)g->n_tensors + 1, sizeof *n->alias_off))) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory planning the network");
        goto cleanup;
    }
    for (int t = 0; t < g->n_tensors; t++) n->alias[t] = t;
    rlt_net_node_tasks(g, gt, task_of, occ_of);
    for (int i = 0; i < g->n_nodes; i++) {
        const rlt_graph_node *node = &g->nodes[i];
        if (node->is_removed || task_of[i] == RLT_NET_FUSED || (task_of[i] < 0 && rlt_net_node_is_folded(g, i)))
            continue;
        net_step *s = &n->steps[n->n_steps++];
        s->node = i;
        s->task = task_of[i];
        if (s->task < 0) {
            s->n_nodes = 1;
            if (!rlt_graph_can_eval(node->op_type)) {
                st = rlt_graph_node_fail(g, node, diag, RLT_STATUS_INVALID_ARGUMENT, "op %s cannot be run",
                                         node->op_type);
                goto cleanup;
            }
            int lanes = n->tensor_block && node->n_inputs > 0 && node->inputs[0] >= 0
                            ? n->tensor_block[node->inputs[0]] : 0;
            if ((st = rlt_fast_op_create_blocked(g, i, lanes, &s->fast, diag)) != RLT_STATUS_OK) goto cleanup;
            if (!s->fast && !rlt_net_node_is_view(g, i) && touches_blocked(n, node)) {
                st = rlt_graph_node_fail(g, node, diag, RLT_STATUS_INVALID_ARGUMENT,
                                         "op %s has blocked (NCHWc) tensors but no fast form to run them",
                                         node->op_type);
                goto cleanup;
            }
            /* a view of an activation shares its buffer: nothing is copied */
            if (rlt_net_node_is_view(g, i)) {
                s->is_view = true;
                n->alias[node->outputs[0]] = node->inputs[0];
            } else if (concat_in_place(n, i) || split_in_place(n, i)) {
                s->is_view = true;
            }
            continue;
        }
        const rlt_graph_task *task = &gt->tasks[s->task];
        int o = occ_of[i];
        int start = task->starts[o], end = o + 1 < task->weight ? task->starts[o + 1] : task->n_nodes;
        s->n_nodes = end - start;
        if ((st = bind_occurrence(n, n->kernels[s->task].op, task->nodes + start, end - start, s, diag)) !=
            RLT_STATUS_OK)
            goto cleanup;
    }
cleanup:
    rlt_free(occ_of);
    rlt_free(task_of);
    return st;
}

/* The graph tensors step s reads (into reads[], at most cap) and writes. */
static int step_reads(const rlt_net *n, const net_step *s, int *reads, int cap)
{
    int k = 0;
    if (s->task < 0) {
        const rlt_graph_node *node = &n->g->nodes[s->node];
        for (int i = 0; i < node->n_inputs && k < cap; i++)
            if (node->inputs[i] >= 0) reads[k++] = node->inputs[i];
        return k;
    }
    const rlt_op *op = n->kernels[s->task].op;
    for (int t = 0; t + 1 < op->n_tensors && k < cap; t++)
        if (s->bind[t].tensor >= 0) reads[k++] = s->bind[t].tensor;
    return k;
}

/* Places every activation (non-constant tensor a step or the caller writes)
 * in the arena. Step i runs at time i + 1; inputs are written at 0, outputs
 * read at n_steps + 1. A view's output is its input's block, which lives
 * until the last read of either; likewise a block and its slices (a
 * Concat's parts, a Split's outputs): every read or write of one is the
 * block's. */
static rlt_status plan_memory(rlt_net *n, rlt_diag *diag)
{
    const rlt_graph *g = n->g;
    int nt = g->n_tensors;
    /* a view and its input are one block, the input's; a Concat's parts
     * are slices of its output's, a Split's outputs slices of its input's:
     * follow the chains to the block's owner, adding up the offsets */
    for (int t = 0; t < nt; t++) {
        int r = t;
        int64_t off = 0;
        while (n->alias[r] != r) {
            off += n->alias_off[r];
            r = n->alias[r];
        }
        n->alias[t] = r;
        n->alias_off[t] = off;
    }
    const int *root = n->alias;
    rlt_mem_block *blocks = rlt_calloc((size_t)nt + 1, sizeof *blocks);
    bool *is_live = rlt_calloc((size_t)nt + 1, sizeof *is_live);
    rlt_status st = RLT_STATUS_OK;
    if (!blocks || !is_live || !(n->vals = rlt_calloc((size_t)nt + 1, sizeof *n->vals))) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory planning the network's memory");
        goto cleanup;
    }
    for (int t = 0; t < nt; t++) blocks[t].first = blocks[t].last = -1;
    for (int i = 0; i < g->n_inputs; i++) {
        blocks[g->inputs[i]].first = blocks[g->inputs[i]].last = 0;
        is_live[g->inputs[i]] = true;
    }
    for (int i = 0; i < n->n_steps; i++) {
        const net_step *s = &n->steps[i];
        int time = i + 1;
        int reads[64];
        int n_reads = step_reads(n, s, reads, 64);
        for (int r = 0; r < n_reads; r++)
            if (!g->tensors[reads[r]].data && blocks[root[reads[r]]].last < time) blocks[root[reads[r]]].last = time;
        const rlt_graph_node *node = &g->nodes[s->node];
        int n_writes = s->task < 0 ? node->n_outputs : 1;
        for (int w = 0; w < n_writes && !s->is_view; w++) {
            int t = s->task < 0 ? node->outputs[w] : s->out;
            if (t < 0 || g->tensors[t].data) continue;
            int r = root[t]; /* t itself, or the owner of the block it is a slice of */
            if (blocks[r].first < 0 || blocks[r].first > time) blocks[r].first = time;
            if (blocks[r].last < time) blocks[r].last = time;
            is_live[r] = true;
        }
    }
    for (int i = 0; i < g->n_outputs; i++) blocks[root[g->outputs[i]]].last = n->n_steps + 1;
    for (int t = 0; t < nt; t++) {
        if (!is_live[t] || root[t] != t) {
            blocks[t] = (rlt_mem_block){.bytes = 0, .first = 0, .last = 0};
            continue;
        }
        blocks[t].bytes = (int64_t)tensor_bytes(&g->tensors[t]);
    }
    if ((st = rlt_memplan(nt, blocks, ALIGN, &n->arena_bytes, diag)) != RLT_STATUS_OK) goto cleanup;
    if (!(n->arena_raw = rlt_calloc((size_t)n->arena_bytes + ALIGN, 1))) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory for the network's activations (%" PRId64 " bytes)",
                      n->arena_bytes);
        goto cleanup;
    }
    char *arena = (char *)(((uintptr_t)n->arena_raw + ALIGN - 1) & ~(uintptr_t)(ALIGN - 1));
    n->arena = arena;
    for (int t = 0; t < nt; t++)
        n->vals[t] = g->tensors[t].data       ? g->tensors[t].data
                     : is_live[root[t]] ? arena + blocks[root[t]].offset + n->alias_off[t]
                                        : NULL;
cleanup:
    rlt_free(is_live);
    rlt_free(blocks);
    return st;
}

/* Points every kernel step's tensors at their buffers and packs its weights. */
typedef struct prepare_job {
    rlt_net *n;
    rlt_diag *diag;
    rlt_status st;
} prepare_job;

static rlt_status prepare_steps(rlt_net *n, rlt_diag *diag);

static void *prepare_job_run(void *arg)
{
    prepare_job *j = arg;
    j->st = prepare_steps(j->n, j->diag);
    return NULL;
}

/* prepare_steps where the kernels' packing (parallel at several threads)
 * leaves no OpenMP threads behind in the calling thread (rlt_net_contained). */
static rlt_status prepare_steps_contained(rlt_net *n, rlt_diag *diag)
{
    prepare_job job = {n, diag, RLT_STATUS_OK};
    rlt_status st = rlt_net_contained(n->n_threads, prepare_job_run, &job, diag);
    return st != RLT_STATUS_OK ? st : job.st;
}

static rlt_status prepare_steps(rlt_net *n, rlt_diag *diag)
{
    for (int i = 0; i < n->n_steps; i++) {
        net_step *s = &n->steps[i];
        if (s->task < 0) continue;
        const net_kernel *k = &n->kernels[s->task];
        for (int t = 0; t < k->op->n_tensors; t++)
            s->tensors[t] = s->bind[t].tensor >= 0 ? n->vals[s->bind[t].tensor] : s->bind[t].buf;
        if (k->workspace_bytes && !(s->workspace = net_alloc(n, (int64_t)k->workspace_bytes)))
            return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory for a kernel's workspace (%zu bytes)",
                            k->workspace_bytes);
        if (!s->is_prepared_each_run) k->prepare(s->tensors, s->workspace, n->n_threads);
    }
    return RLT_STATUS_OK;
}

/* ---- compile ---------------------------------------------------------------- */

/* Opens opts' records database (read-only) and the targets a task's
 * record is looked up under, in order: the cold one first with
 * cold_weights, then the warm one (targets[] NULL-ended, owned by the
 * caller: rlt_free each). Nothing when opts has no database. */
static rlt_status records_open(const rlt_net_options *opts, rlt_db **db, char *targets[3], rlt_diag *diag)
{
    rlt_status st;
    rlt_record_target tt;
    if (!opts->db_path) return RLT_STATUS_OK;
    if ((st = rlt_db_open(opts->db_path, &(rlt_db_opts){.is_read_only = true}, db, diag)) != RLT_STATUS_OK ||
        (st = rlt_session_target(&opts->build, opts->n_threads, &tt, diag)) != RLT_STATUS_OK)
        return st;
    if (!(targets[0] = rlt_record_target_text(&tt)))
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory compiling the network");
    if (opts->cold_weights) { /* cold records first, the warm ones where a task has none */
        targets[1] = targets[0];
        tt.is_weights_cold = true;
        if (!(targets[0] = rlt_record_target_text(&tt)))
            return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory compiling the network");
    }
    return RLT_STATUS_OK;
}

static rlt_status compile_kernels(rlt_net *n, const rlt_net_options *opts, rlt_diag *diag)
{
    rlt_status st = RLT_STATUS_OK;
    rlt_db *db = NULL;
    char *targets[3] = {NULL, NULL, NULL};
    rlt_kernel_src *srcs = rlt_calloc((size_t)n->n_tasks + 1, sizeof *srcs);
    const char **cc_of = rlt_calloc((size_t)n->n_tasks + 1, sizeof *cc_of);
    rlt_build_result *builds = rlt_calloc((size_t)n->n_tasks + 1, sizeof *builds);
    if (!srcs || !cc_of || !builds) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory compiling the network");
        goto cleanup;
    }
    if ((st = records_open(opts, &db, targets, diag)) != RLT_STATUS_OK) goto cleanup;
    for (int i = 0; i < n->n_tasks; i++) {
        if ((st = kernel_source(n, db, (const char *const *)targets, i, diag)) != RLT_STATUS_OK) goto cleanup;
        srcs[i] = n->kernels[i].src;
        cc_of[i] = n->kernels[i].cc;
    }
    if ((st = rlt_build_batch_cc(&opts->build, n->n_tasks, srcs, cc_of, builds, diag)) != RLT_STATUS_OK) goto cleanup;
    for (int i = 0; i < n->n_tasks; i++)
        if ((st = kernel_load(n, i, &builds[i], diag)) != RLT_STATUS_OK) goto cleanup;
cleanup:
    rlt_free(builds);
    rlt_free(cc_of);
    rlt_free(srcs);
    rlt_free(targets[0]);
    rlt_free(targets[1]);
    rlt_db_close(db);
    return st;
}

/* The network's latency estimate in the layout of channel block `block`
 * from the records alone: the sum over tasks of weight x the best record's
 * time (as compile_kernels finds it); INFINITY when a task has none. And
 * the share of the network's FLOPs whose tasks have a record. */
static rlt_status records_estimate(const rlt_graph *g, const rlt_net_options *opts, rlt_db *db,
                                   const char *const *targets, int block, double *out, double *tuned_share,
                                   rlt_diag *diag)
{
    double flops = 0, tuned_flops = 0;
    rlt_graph_tasks gt = {0};
    rlt_record *r = rlt_calloc(1, sizeof *r);
    rlt_nest *nest = rlt_calloc(1, sizeof *nest);
    rlt_status st = RLT_STATUS_OK;
    *out = 0;
    if (!r || !nest) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory choosing the layout");
        goto cleanup;
    }
    if ((st = rlt_graph_tasks_extract_blocked(g, block, &gt, diag)) != RLT_STATUS_OK) goto cleanup;
    for (int i = 0; i < gt.n_tasks; i++) {
        rlt_op *op = NULL;
        if ((st = rlt_op_parse(gt.tasks[i].spec, &op, diag)) != RLT_STATUS_OK) goto cleanup;
        bool is_found = false;
        rlt_net_origin origin;
        st = task_record_first(db, targets, gt.tasks[i].spec, op, opts->n_threads, r, nest, &origin, &is_found, diag);
        rlt_op_destroy(op);
        if (st != RLT_STATUS_OK) goto cleanup;
        *out = is_found ? *out + gt.tasks[i].weight * r->time_median_ms : INFINITY;
        flops += gt.tasks[i].weight * gt.tasks[i].flops;
        if (is_found) tuned_flops += gt.tasks[i].weight * gt.tasks[i].flops;
    }
    *tuned_share = flops > 0 ? tuned_flops / flops : 0;
cleanup:
    rlt_graph_tasks_free(&gt);
    rlt_free(nest);
    rlt_free(r);
    return st;
}

rlt_status rlt_net_choose_block(const rlt_graph *g, const rlt_net_options *opts, int *out_block, double est_ms[2],
                                rlt_diag *diag)
{
    rlt_db *db = NULL;
    char *targets[3] = {NULL, NULL, NULL};
    int blocks[2] = {0, rlt_net_machine_block()};
    double share[2] = {0, 0};
    est_ms[0] = est_ms[1] = INFINITY;
    *out_block = 0;
    rlt_status st = records_open(opts, &db, targets, diag);
    for (int k = 0; k < 2 && st == RLT_STATUS_OK && db; k++)
        st = records_estimate(g, opts, db, (const char *const *)targets, blocks[k], &est_ms[k], &share[k], diag);
    /* Both fully tuned: the lower estimate. Otherwise the layout tuned
     * further (by the share of FLOPs with records: a partly tuned layout
     * over an untuned one), NCHW on a tie (its seeds, and the records of
     * runs before layouts existed). */
    bool is_blocked = isfinite(est_ms[0]) && isfinite(est_ms[1]) ? est_ms[1] < est_ms[0] : share[1] > share[0];
    if (st == RLT_STATUS_OK && is_blocked) *out_block = blocks[1];
    rlt_free(targets[0]);
    rlt_free(targets[1]);
    rlt_db_close(db);
    return st;
}

rlt_status rlt_net_check_block(int block, bool is_auto_allowed, rlt_diag *diag)
{
    if ((block >= 0 && block <= RLT_NET_MAX_BLOCK) || (is_auto_allowed && block == RLT_NET_BLOCK_AUTO))
        return RLT_STATUS_OK;
    return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "the channel block must be from 0 (NCHW) to %d%s, not %d",
                    RLT_NET_MAX_BLOCK, is_auto_allowed ? ", or -1 (chosen from the records)" : "", block);
}

int rlt_net_machine_block(void)
{
    rlt_target t;
    rlt_target_detect(&t);
    return t.vector_floats > 0 ? t.vector_floats : 4;
}

rlt_status rlt_net_compile(const rlt_graph *g, const rlt_net_options *opts, rlt_net **out, rlt_diag *diag)
{
    uint64_t t0 = rlt_time_ns();
    *out = NULL;
    if (!opts || opts->n_threads < 1 || opts->n_threads > RLT_MAX_THREADS)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "the thread count must be from 1 to %d", RLT_MAX_THREADS);
    for (int i = 0; i < g->n_inputs; i++)
        if (g->tensors[g->inputs[i]].data)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "graph input '%s' is a constant",
                            g->tensors[g->inputs[i]].name);
    rlt_graph_tasks gt = {0};
    rlt_net *n = rlt_calloc(1, sizeof *n);
    if (!n) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory compiling the network");
    n->g = g;
    n->n_threads = opts->n_threads;
    /* the compiler and flags as the builder resolves them: what an export compiles with */
    const char *cc = opts->build.cc && opts->build.cc[0] ? opts->build.cc : getenv("RLTUNE_CC");
    n->cc = rlt_strdup(cc && cc[0] ? cc : "gcc");
    n->cflags = rlt_strdup(opts->build.cflags ? opts->build.cflags : RLT_DEFAULT_CFLAGS);
    rlt_status st = RLT_STATUS_OK;
    if (!n->cc || !n->cflags) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory compiling the network");
        goto cleanup;
    }
    if ((st = rlt_net_check_block(opts->channel_block, true, diag)) != RLT_STATUS_OK) goto cleanup;
    int block = opts->channel_block;
    n->layout_est_ms[0] = n->layout_est_ms[1] = NAN;
    if (block == RLT_NET_BLOCK_AUTO && (st = rlt_net_choose_block(g, opts, &block, n->layout_est_ms, diag)) != RLT_STATUS_OK)
        goto cleanup;
    n->channel_block = block;
    if ((st = rlt_graph_tasks_extract_blocked(g, block, &gt, diag)) != RLT_STATUS_OK) goto cleanup;
    n->tensor_block = gt.tensor_block;
    gt.tensor_block = NULL;
    n->tasks = rlt_calloc((size_t)gt.n_tasks + 1, sizeof *n->tasks);
    n->kernels = rlt_calloc((size_t)gt.n_tasks + 1, sizeof *n->kernels);
    if (!n->tasks || !n->kernels) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory compiling the network");
        goto cleanup;
    }
    n->n_tasks = gt.n_tasks;
    for (int i = 0; i < gt.n_tasks; i++) {
        rlt_net_task *t = &n->tasks[i];
        snprintf(t->spec, sizeof t->spec, "%s", gt.tasks[i].spec);
        t->weight = gt.tasks[i].weight;
        t->flops = gt.tasks[i].flops;
        if ((st = rlt_op_parse(t->spec, &n->kernels[i].op, diag)) != RLT_STATUS_OK) goto cleanup;
    }
    if ((st = plan_steps(n, &gt, diag)) != RLT_STATUS_OK || (st = plan_memory(n, diag)) != RLT_STATUS_OK ||
        (st = compile_kernels(n, opts, diag)) != RLT_STATUS_OK || (st = prepare_steps_contained(n, diag)) != RLT_STATUS_OK)
        goto cleanup;
    n->compile_s = (double)(rlt_time_ns() - t0) * 1e-9;
    *out = n;
    n = NULL;
cleanup:
    rlt_graph_tasks_free(&gt);
    rlt_net_destroy(n);
    return st;
}

void rlt_net_destroy(rlt_net *n)
{
    if (!n) return;
    for (int i = 0; i < n->n_tasks; i++) {
        rlt_op_destroy(n->kernels[i].op);
        rlt_kernel_src_free(&n->kernels[i].src);
        if (n->kernels[i].lib) dlclose(n->kernels[i].lib);
    }
    for (int i = 0; n->steps && i < n->n_steps; i++) rlt_fast_op_destroy(n->steps[i].fast);
    for (int i = 0; i < n->n_allocs; i++) rlt_free(n->allocs[i]);
    rlt_free(n->allocs);
    rlt_free(n->arena_raw);
    rlt_free(n->vals);
    rlt_free(n->alias);
    rlt_free(n->alias_off);
    rlt_free(n->tensor_block);
    rlt_free(n->steps);
    rlt_free(n->kernels);
    rlt_free(n->tasks);
    rlt_free(n->cflags);
    rlt_free(n->cc);
    rlt_free(n);
}

/* ---- run -------------------------------------------------------------------- */

rlt_status rlt_net_run_buffers(rlt_net *n, const void *const *inputs, void *const *outputs, rlt_diag *diag)
{
    const rlt_graph *g = n->g;
    for (int i = 0; i < g->n_inputs; i++) {
        if (!inputs || !inputs[i])
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "input %d ('%s') is NULL", i,
                            g->tensors[g->inputs[i]].name);
        memcpy(n->vals[g->inputs[i]], inputs[i], tensor_bytes(&g->tensors[g->inputs[i]]));
    }
    for (int i = 0; i < n->n_steps; i++) {
        net_step *s = &n->steps[i];
        uint64_t t0 = n->is_profiling ? rlt_time_ns() : 0;
        if (s->task >= 0) {
            const net_kernel *k = &n->kernels[s->task];
            if (s->is_prepared_each_run) k->prepare(s->tensors, s->workspace, n->n_threads);
            k->run(s->tensors, s->workspace, n->n_threads);
        } else if (s->fast && !s->is_view) {
            rlt_fast_op_run_threads(s->fast, n->vals, s->fast->isa, n->n_threads);
        } else if (!s->is_view) {
            rlt_status st = rlt_graph_eval_node(g, s->node, n->vals, diag);
            if (st != RLT_STATUS_OK) return st;
        }
        if (n->is_profiling) s->total_ns += (double)(rlt_time_ns() - t0);
    }
    for (int i = 0; i < g->n_outputs; i++) {
        if (!outputs || !outputs[i])
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "output %d ('%s') has no buffer", i,
                            g->tensors[g->outputs[i]].name);
        memcpy(outputs[i], n->vals[g->outputs[i]], tensor_bytes(&g->tensors[g->outputs[i]]));
    }
    return RLT_STATUS_OK;
}

void rlt_net_profile(rlt_net *n, bool on)
{
    n->is_profiling = on;
    if (on)
        for (int i = 0; i < n->n_steps; i++) n->steps[i].total_ns = 0;
}

const rlt_graph *rlt_net_graph(const rlt_net *n) { return n->g; }

int rlt_net_threads(const rlt_net *n) { return n->n_threads; }

rlt_status rlt_net_contained(int n_threads, void *(*fn)(void *), void *arg, rlt_diag *diag)
{
    if (n_threads <= 1) {
        fn(arg);
        return RLT_STATUS_OK;
    }
    pthread_t thread;
    int rc = pthread_create(&thread, NULL, fn, arg);
    if (rc != 0)
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "cannot start a thread to run the network on: %s",
                        strerror(rc));
    pthread_join(thread, NULL);
    return RLT_STATUS_OK;
}

int rlt_net_n_tasks(const rlt_net *n) { return n->n_tasks; }

void rlt_net_task_get(const rlt_net *n, int i, rlt_net_task *out) { *out = n->tasks[i]; }

int rlt_net_n_steps(const rlt_net *n) { return n->n_steps; }

void rlt_net_step_get(const rlt_net *n, int i, rlt_net_step *out)
{
    const net_step *s = &n->steps[i];
    out->name = rlt_graph_node_label(n->g, s->node);
    out->what = s->task >= 0 ? n->tasks[s->task].spec : n->g->nodes[s->node].op_type;
    out->task = s->task;
    out->n_nodes = s->n_nodes;
    out->flops = s->task >= 0 ? n->tasks[s->task].flops : 0;
    out->total_ms = s->total_ns * 1e-6;
}

int64_t rlt_net_activation_bytes(const rlt_net *n) { return n->arena_bytes; }

int rlt_net_channel_block(const rlt_net *n) { return n->channel_block; }

void rlt_net_layout_estimates(const rlt_net *n, double est_ms[2])
{
    est_ms[0] = n->layout_est_ms[0];
    est_ms[1] = n->layout_est_ms[1];
}

int64_t rlt_net_extra_bytes(const rlt_net *n) { return n->extra_bytes; }

double rlt_net_compile_s(const rlt_net *n) { return n->compile_s; }
