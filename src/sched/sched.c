/*
 * sched.c - the schedule primitives with their legality checks, and
 * schedules: a list of steps with a text form that parses, prints and
 * replays (rlt_sched_parse / rlt_sched_print / rlt_sched_apply).
 *
 * Every primitive edits a copy of its input and runs rlt_nest_check on the
 * result before handing it out, so no sequence of accepted steps can build a
 * nest that codegen would have to refuse.
 */
#include "sched/sched.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- helpers ------------------------------------------------------------ */

static rlt_status find_loop(const rlt_nest *n, const char *name, int *out_pos, rlt_diag *diag)
{
    int pos = rlt_nest_find_loop(n, name);
    if (pos < 0) {
        char names[1024] = "";
        size_t used = 0;
        for (int l = 0; l < n->n_loops && used + 2 < sizeof names; l++) {
            int w = snprintf(names + used, sizeof names - used, "%s%s", l ? ", " : "",
                             n->vars[n->loops[l].var].name);
            if (w < 0) break;
            used += (size_t)w;
        }
        return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE, "no loop named '%s' (loops: %s)", name, names);
    }
    *out_pos = pos;
    return RLT_STATUS_OK;
}

static rlt_status new_var(rlt_nest *n, const char *name, rlt_diag *diag, int *out_var)
{
    if (n->n_vars >= RLT_MAX_VARS)
        return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE, "too many loop variables (at most %d)", RLT_MAX_VARS);
    if (strlen(name) >= RLT_LOOP_NAME_MAX)
        return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE, "loop name '%s' would be longer than %d characters",
                        name, RLT_LOOP_NAME_MAX - 1);
    int v = n->n_vars++;
    memset(&n->vars[v], 0, sizeof n->vars[v]);
    snprintf(n->vars[v].name, sizeof n->vars[v].name, "%s", name);
    n->vars[v].parent = n->vars[v].fused_outer = n->vars[v].fused_inner = -1;
    n->vars[v].axis = -1;
    *out_var = v;
    return RLT_STATUS_OK;
}

/* Checks the edited copy and publishes it. */
static rlt_status finish(rlt_nest *tmp, rlt_nest *out, rlt_diag *diag)
{
    rlt_status st = rlt_nest_check(tmp, diag);
    if (st != RLT_STATUS_OK) return st;
    *out = *tmp;
    return RLT_STATUS_OK;
}

/* ---- primitives --------------------------------------------------------- */

rlt_status rlt_sched_split(const rlt_nest *in, const char *loop, int64_t factor, rlt_nest *out, rlt_diag *diag)
{
    rlt_nest tmp = *in;
    int pos = -1;
    rlt_status st = find_loop(&tmp, loop, &pos, diag);
    if (st != RLT_STATUS_OK) return st;
    if (factor < 1)
        return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE, "split %s: factor %" PRId64 " must be at least 1",
                        loop, factor);
    if (tmp.n_loops >= RLT_MAX_LOOPS)
        return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE, "split %s: the nest already has %d loops, the most allowed",
                        loop, RLT_MAX_LOOPS);
    int parent = tmp.loops[pos].var;
    char name[2 * RLT_LOOP_NAME_MAX];
    int outer, inner;
    snprintf(name, sizeof name, "%s.o", loop);
    if ((st = new_var(&tmp, name, diag, &outer)) != RLT_STATUS_OK) return st;
    snprintf(name, sizeof name, "%s.i", loop);
    if ((st = new_var(&tmp, name, diag, &inner)) != RLT_STATUS_OK) return st;
    const rlt_var *p = &tmp.vars[parent];
    /* A factor past the extent but under twice it is kept: one outer
     * iteration and a tail, which is how a vector wider than its axis is
     * written (docs/schedule.md). A larger one would leave the inner loop
     * idle more than half the time: it is clamped to the extent. */
    int64_t f = factor < 2 * p->extent ? factor : p->extent;
    tmp.vars[outer].extent = (p->extent + f - 1) / f;
    tmp.vars[inner].extent = f;
    for (int v = outer; v <= inner; v++) {
        tmp.vars[v].is_reduce = p->is_reduce;
        tmp.vars[v].parent = parent;
        tmp.vars[v].factor = f;
    }
    tmp.vars[outer].origin = RLT_VAR_SPLIT_OUTER;
    tmp.vars[inner].origin = RLT_VAR_SPLIT_INNER;
    /* Annotations follow the half they describe: parallel the outer, unroll
     * and vectorize the inner; the accumulator keeps covering the same loops. */
    rlt_loop old = tmp.loops[pos];
    memmove(&tmp.loops[pos + 2], &tmp.loops[pos + 1], sizeof(rlt_loop) * (size_t)(tmp.n_loops - pos - 1));
    tmp.n_loops++;
    tmp.loops[pos] = (rlt_loop){.var = outer, .kind = RLT_LOOP_SERIAL};
    tmp.loops[pos + 1] = (rlt_loop){.var = inner, .kind = RLT_LOOP_SERIAL};
    if (old.kind == RLT_LOOP_PARALLEL) tmp.loops[pos] = (rlt_loop){outer, old.kind, old.n_threads};
    if (old.kind == RLT_LOOP_UNROLL || old.kind == RLT_LOOP_VECTORIZE) tmp.loops[pos + 1].kind = old.kind;
    if (tmp.acc_var == parent) tmp.acc_var = inner;
    st = finish(&tmp, out, diag);
    if (st != RLT_STATUS_OK) rlt_diag_prefix(diag, "split %s %" PRId64, loop, factor);
    return st;
}

rlt_status rlt_sched_reorder(const rlt_nest *in, int n, const char *const *loops, rlt_nest *out, rlt_diag *diag)
{
    rlt_nest tmp = *in;
    int pos[RLT_MAX_LOOPS], sorted[RLT_MAX_LOOPS];
    if (n < 2 || n > tmp.n_loops)
        return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE, "reorder needs 2 to %d distinct loops, got %d",
                        tmp.n_loops, n);
    for (int i = 0; i < n; i++) {
        rlt_status st = find_loop(&tmp, loops[i], &pos[i], diag);
        if (st != RLT_STATUS_OK) return st;
        for (int j = 0; j < i; j++)
            if (pos[j] == pos[i])
                return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE, "reorder names loop '%s' twice", loops[i]);
        sorted[i] = pos[i];
    }
    /* The named loops take the positions they hold together, in the order given. */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
            int t = sorted[j];
            sorted[j] = sorted[j - 1];
            sorted[j - 1] = t;
        }
    for (int i = 0; i < n; i++) tmp.loops[sorted[i]] = in->loops[pos[i]];
    rlt_status st = finish(&tmp, out, diag);
    if (st != RLT_STATUS_OK) rlt_diag_prefix(diag, "reorder");
    return st;
}

rlt_status rlt_sched_fuse(const rlt_nest *in, const char *outer, const char *inner, rlt_nest *out, rlt_diag *diag)
{
    rlt_nest tmp = *in;
    int po = -1, pi = -1;
    rlt_status st = find_loop(&tmp, outer, &po, diag);
    if (st == RLT_STATUS_OK) st = find_loop(&tmp, inner, &pi, diag);
    if (st != RLT_STATUS_OK) return st;
    if (po < 0 || pi != po + 1)
        return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                        "fuse %s %s: '%s' must be the loop directly inside '%s'", outer, inner, inner, outer);
    int vo = tmp.loops[po].var, vi = tmp.loops[pi].var;
    if (tmp.vars[vo].is_reduce != tmp.vars[vi].is_reduce)
        return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                        "fuse %s %s: cannot fuse a spatial loop with a reduction loop", outer, inner);
    if (tmp.loops[po].kind != RLT_LOOP_SERIAL || tmp.loops[pi].kind != RLT_LOOP_SERIAL)
        return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                        "fuse %s %s: both loops must be plain loops (fuse first, then annotate)", outer, inner);
    if (tmp.acc_var == vo)
        return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                        "fuse %s %s: the cache_write accumulator sits between these loops", outer, inner);
    char name[2 * RLT_LOOP_NAME_MAX + 2];
    snprintf(name, sizeof name, "%s_%s", outer, inner);
    int f;
    if ((st = new_var(&tmp, name, diag, &f)) != RLT_STATUS_OK) return st;
    tmp.vars[f].origin = RLT_VAR_FUSED;
    tmp.vars[f].fused_outer = vo;
    tmp.vars[f].fused_inner = vi;
    tmp.vars[f].extent = tmp.vars[vo].extent * tmp.vars[vi].extent;
    tmp.vars[f].is_reduce = tmp.vars[vo].is_reduce;
    tmp.loops[po] = (rlt_loop){.var = f, .kind = RLT_LOOP_SERIAL};
    memmove(&tmp.loops[pi], &tmp.loops[pi + 1], sizeof(rlt_loop) * (size_t)(tmp.n_loops - pi - 1));
    tmp.n_loops--;
    if (tmp.acc_var == vi) tmp.acc_var = f;
    st = finish(&tmp, out, diag);
    if (st != RLT_STATUS_OK) rlt_diag_prefix(diag, "fuse %s %s", outer, inner);
    return st;
}

rlt_status rlt_sched_annotate(const rlt_nest *in, const char *loop, rlt_loop_kind kind, int n_threads, rlt_nest *out,
                              rlt_diag *diag)
{
    static const char *const verbs[] = {"serial", "unroll", "vectorize", "parallel"};
    rlt_nest tmp = *in;
    int pos = -1;
    rlt_status st = find_loop(&tmp, loop, &pos, diag);
    if (st != RLT_STATUS_OK) return st;
    rlt_loop *l = &tmp.loops[pos];
    if (l->kind != RLT_LOOP_SERIAL && l->kind != kind)
        return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE, "%s %s: the loop is already marked %s", verbs[kind], loop,
                        verbs[l->kind]);
    if (kind == RLT_LOOP_PARALLEL && (n_threads < 0 || n_threads > RLT_MAX_THREADS))
        return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE, "parallel %s: thread count %d must be 0 to %d", loop,
                        n_threads, RLT_MAX_THREADS);
    l->kind = kind;
    l->n_threads = kind == RLT_LOOP_PARALLEL ? n_threads : 0;
    st = finish(&tmp, out, diag);
    if (st != RLT_STATUS_OK) rlt_diag_prefix(diag, "%s %s", verbs[kind], loop);
    return st;
}

rlt_status rlt_sched_cache_write(const rlt_nest *in, const char *loop, rlt_nest *out, rlt_diag *diag)
{
    rlt_nest tmp = *in;
    if (!loop || strcmp(loop, "root") == 0) {
        tmp.acc_var = RLT_ACC_ROOT;
    } else {
        int pos = -1;
        rlt_status st = find_loop(&tmp, loop, &pos, diag);
        if (st != RLT_STATUS_OK) return st;
        tmp.acc_var = tmp.loops[pos].var;
    }
    rlt_status st = finish(&tmp, out, diag);
    if (st != RLT_STATUS_OK) rlt_diag_prefix(diag, "cache_write %s", loop ? loop : "root");
    return st;
}

static rlt_status find_input(const rlt_nest *n, const char *tensor, const char *verb, int *out_t, rlt_diag *diag)
{
    const rlt_op *op = n->op;
    int t = rlt_op_find_tensor(op, tensor);
    if (t < 0) {
        char names[512] = "";
        size_t used = 0;
        for (int i = 0; i + 1 < op->n_tensors; i++) {
            int w = snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", op->tensors[i].name);
            if (w < 0 || (size_t)w >= sizeof names - used) break;
            used += (size_t)w;
        }
        return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE, "%s: no tensor named '%s' (inputs: %s)", verb, tensor,
                        names);
    }
    if (op->tensors[t].is_output)
        return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                        "%s %s: '%s' is the output; only inputs can be staged (use cache_write for the output)",
                        verb, tensor, tensor);
    *out_t = t;
    return RLT_STATUS_OK;
}

/* Largest staged copy allowed: keeps a typo in a block size from asking for
 * gigabytes of workspace. */
#define RLT_MAX_STAGED_FLOATS (INT64_C(1) << 28)

static rlt_status check_staged_size(const rlt_nest *n, int t, const char *verb, rlt_diag *diag)
{
    int64_t dims[2 * RLT_MAX_DIMS];
    int nd = rlt_layout_physical_dims(n, t, dims, NULL, NULL);
    int64_t total = 1;
    for (int d = 0; d < nd; d++) {
        total *= dims[d];
        if (total > RLT_MAX_STAGED_FLOATS)
            return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                            "%s %s: the staged copy would exceed %" PRId64 " floats", verb,
                            n->op->tensors[t].name, RLT_MAX_STAGED_FLOATS);
    }
    return RLT_STATUS_OK;
}

rlt_status rlt_sched_pack(const rlt_nest *in, const char *tensor, int n_blocks, const int *dims,
                          const int64_t *blocks, rlt_nest *out, rlt_diag *diag)
{
    rlt_nest tmp = *in;
    int t = -1;
    rlt_status st = find_input(&tmp, tensor, "pack", &t, diag);
    if (st != RLT_STATUS_OK) return st;
    const rlt_tensor *tensor_info = &tmp.op->tensors[t];
    rlt_layout *l = &tmp.layouts[t];
    if (n_blocks < 1)
        return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE, "pack %s: give at least one 'dim block' pair", tensor);
    if (l->n_blocks > 0)
        return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE, "pack %s: the tensor is already packed", tensor);
    for (int b = 0; b < n_blocks; b++) {
        if (dims[b] < 0 || dims[b] >= tensor_info->n_dims)
            return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE, "pack %s: dim %d out of range (the tensor has %d dims)",
                            tensor, dims[b], tensor_info->n_dims);
        /* The upper bound keeps the layout's sizes in int64 (rlt_layout_physical_dims
         * adds the block to the dim before dividing). */
        if (blocks[b] < 1 || blocks[b] > RLT_MAX_EXTENT)
            return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                            "pack %s: block %" PRId64 " must be from 1 to %" PRId64, tensor, blocks[b],
                            RLT_MAX_EXTENT);
        for (int c = 0; c < b; c++)
            if (dims[c] == dims[b])
                return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE, "pack %s: dim %d is blocked twice", tensor,
                                dims[b]);
        l->block_dim[b] = dims[b];
        l->block[b] = blocks[b];
    }
    l->n_blocks = n_blocks;
    if ((st = check_staged_size(&tmp, t, "pack", diag)) != RLT_STATUS_OK) return st;
    return finish(&tmp, out, diag);
}

/* Widens [lo, hi] padding of tensor t to cover every access in `e`. */
static void widen_padding(const rlt_op *op, const rlt_expr *e, int t, int64_t *lo, int64_t *hi)
{
    if (!e) return;
    if (e->kind == RLT_EXPR_LOAD && e->tensor == t) {
        for (int d = 0; d < op->tensors[t].n_dims; d++) {
            int64_t a, b;
            rlt_affine_range(op, &e->index[d], &a, &b);
            if (-a > lo[d]) lo[d] = -a;
            if (b - (op->tensors[t].dims[d] - 1) > hi[d]) hi[d] = b - (op->tensors[t].dims[d] - 1);
        }
    }
    widen_padding(op, e->a, t, lo, hi);
    widen_padding(op, e->b, t, lo, hi);
}

rlt_status rlt_sched_pad(const rlt_nest *in, const char *tensor, rlt_nest *out, rlt_diag *diag)
{
    rlt_nest tmp = *in;
    int t = -1;
    rlt_status st = find_input(&tmp, tensor, "pad", &t, diag);
    if (st != RLT_STATUS_OK) return st;
    rlt_layout *l = &tmp.layouts[t];
    if (l->is_padded) return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE, "pad %s: the tensor is already padded", tensor);
    int64_t lo[RLT_MAX_DIMS] = {0}, hi[RLT_MAX_DIMS] = {0};
    widen_padding(tmp.op, tmp.op->body, t, lo, hi);
    widen_padding(tmp.op, tmp.op->epilogue, t, lo, hi);
    bool any = false;
    for (int d = 0; d < tmp.op->tensors[t].n_dims; d++) any |= lo[d] > 0 || hi[d] > 0;
    if (!any)
        return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                        "pad %s: every access of %s is already in bounds; there is nothing to pad", tensor, tensor);
    l->is_padded = true;
    memcpy(l->pad_lo, lo, sizeof lo);
    memcpy(l->pad_hi, hi, sizeof hi);
    if ((st = check_staged_size(&tmp, t, "pad", diag)) != RLT_STATUS_OK) return st;
    return finish(&tmp, out, diag);
}

/* ---- steps -------------------------------------------------------------- */

static const char *const step_names[RLT_STEP_KIND_COUNT] = {
    "split", "reorder", "fuse", "unroll", "vectorize", "parallel", "cache_write", "pack", "pad",
};

/* Accepted argument counts, and a usage line for messages. */
static const struct {
    int min_args, max_args;
    const char *usage;
} step_forms[RLT_STEP_KIND_COUNT] = {
    [RLT_STEP_SPLIT] = {2, 2, "split LOOP FACTOR"},
    [RLT_STEP_REORDER] = {2, RLT_MAX_LOOPS, "reorder LOOP LOOP [LOOP ...]"},
    [RLT_STEP_FUSE] = {2, 2, "fuse OUTER INNER"},
    [RLT_STEP_UNROLL] = {1, 1, "unroll LOOP"},
    [RLT_STEP_VECTORIZE] = {1, 1, "vectorize LOOP"},
    [RLT_STEP_PARALLEL] = {1, 2, "parallel LOOP [THREADS]"},
    [RLT_STEP_CACHE_WRITE] = {1, 1, "cache_write LOOP|root"},
    [RLT_STEP_PACK] = {3, 1 + 2 * RLT_MAX_DIMS, "pack TENSOR DIM BLOCK [DIM BLOCK ...]"},
    [RLT_STEP_PAD] = {1, 1, "pad TENSOR"},
};

const char *rlt_step_kind_name(rlt_step_kind kind)
{
    return (unsigned)kind < RLT_STEP_KIND_COUNT ? step_names[kind] : "unknown";
}

static rlt_status parse_int_arg(const rlt_step *step, int i, const char *what, int64_t *out, rlt_diag *diag)
{
    if (!rlt_parse_i64(step->args[i], out))
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s: %s '%s' is not an integer (usage: %s)",
                        step_names[step->kind], what, step->args[i], step_forms[step->kind].usage);
    return RLT_STATUS_OK;
}

/* A pack dim is a dim index, or the name of the axis that alone indexes
 * that dim of the tensor ("pack B j 16" for B[k,j]). */
static rlt_status resolve_pack_dim(const rlt_op *op, const char *tensor, const char *arg, int *out, rlt_diag *diag)
{
    int64_t v;
    if (rlt_parse_i64(arg, &v)) {
        *out = (int)(v < -1 ? -1 : (v > RLT_MAX_DIMS ? RLT_MAX_DIMS : v));
        return RLT_STATUS_OK;
    }
    int t = rlt_op_find_tensor(op, tensor);
    int axis = rlt_op_find_axis(op, arg);
    if (t >= 0 && axis >= 0) {
        const rlt_expr *loads[64];
        int n = rlt_op_loads(op, loads, 64);
        for (int i = 0; i < n; i++) {
            int d = loads[i]->tensor == t ? rlt_load_dim_of_axis(op, loads[i], axis) : -1;
            if (d >= 0) {
                *out = d;
                return RLT_STATUS_OK;
            }
        }
    }
    return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                    "pack %s: '%s' is neither a dim index nor an axis that indexes a dim of %s", tensor, arg, tensor);
}

static rlt_status step_apply(const rlt_nest *in, const rlt_step *step, rlt_nest *out, rlt_diag *diag)
{
    if ((unsigned)step->kind >= RLT_STEP_KIND_COUNT)
        return rlt_fail(diag, RLT_STATUS_INTERNAL, "step kind %d unknown", (int)step->kind);
    if (step->n_args < step_forms[step->kind].min_args || step->n_args > step_forms[step->kind].max_args)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s: wrong number of arguments (usage: %s)",
                        step_names[step->kind], step_forms[step->kind].usage);
    int64_t x;
    rlt_status st;
    switch (step->kind) {
    case RLT_STEP_SPLIT:
        if ((st = parse_int_arg(step, 1, "factor", &x, diag)) != RLT_STATUS_OK) return st;
        return rlt_sched_split(in, step->args[0], x, out, diag);
    case RLT_STEP_REORDER: {
        const char *names[RLT_STEP_MAX_ARGS];
        for (int i = 0; i < step->n_args; i++) names[i] = step->args[i];
        return rlt_sched_reorder(in, step->n_args, names, out, diag);
    }
    case RLT_STEP_FUSE:
        return rlt_sched_fuse(in, step->args[0], step->args[1], out, diag);
    case RLT_STEP_UNROLL:
        return rlt_sched_annotate(in, step->args[0], RLT_LOOP_UNROLL, 0, out, diag);
    case RLT_STEP_VECTORIZE:
        return rlt_sched_annotate(in, step->args[0], RLT_LOOP_VECTORIZE, 0, out, diag);
    case RLT_STEP_PARALLEL:
        x = 0;
        if (step->n_args == 2 && (st = parse_int_arg(step, 1, "thread count", &x, diag)) != RLT_STATUS_OK) return st;
        if (x < 0 || x > RLT_MAX_THREADS)
            return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE, "parallel %s: thread count %" PRId64 " must be 0 to %d",
                            step->args[0], x, RLT_MAX_THREADS);
        return rlt_sched_annotate(in, step->args[0], RLT_LOOP_PARALLEL, (int)x, out, diag);
    case RLT_STEP_CACHE_WRITE:
        return rlt_sched_cache_write(in, step->args[0], out, diag);
    case RLT_STEP_PACK: {
        if ((step->n_args - 1) % 2 != 0)
            return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "pack: dims and blocks come in pairs (usage: %s)",
                            step_forms[step->kind].usage);
        int n = (step->n_args - 1) / 2;
        int dims[RLT_MAX_DIMS];
        int64_t blocks[RLT_MAX_DIMS];
        for (int b = 0; b < n; b++) {
            if ((st = resolve_pack_dim(in->op, step->args[0], step->args[1 + 2 * b], &dims[b], diag)) != RLT_STATUS_OK)
                return st;
            if ((st = parse_int_arg(step, 2 + 2 * b, "block", &blocks[b], diag)) != RLT_STATUS_OK) return st;
        }
        return rlt_sched_pack(in, step->args[0], n, dims, blocks, out, diag);
    }
    case RLT_STEP_PAD:
        return rlt_sched_pad(in, step->args[0], out, diag);
    case RLT_STEP_KIND_COUNT:
        break;
    }
    return rlt_fail(diag, RLT_STATUS_INTERNAL, "step kind %d unhandled", (int)step->kind);
}

rlt_status rlt_step_apply(const rlt_nest *in, const rlt_step *step, rlt_nest *out, rlt_diag *diag)
{
    rlt_status st = step_apply(in, step, out, diag);
    /* Messages from the primitives mostly name their step already; add it
     * where they do not (an unknown loop, say). */
    if (st != RLT_STATUS_OK && diag && (unsigned)step->kind < RLT_STEP_KIND_COUNT &&
        strncmp(diag->message, step_names[step->kind], strlen(step_names[step->kind])) != 0) {
        rlt_str text;
        rlt_str_init(&text);
        rlt_step_print(step, &text);
        rlt_diag_prefix(diag, "%s", text.data ? text.data : step_names[step->kind]);
        rlt_str_free(&text);
    }
    return st;
}

/* ---- schedules ---------------------------------------------------------- */

rlt_sched *rlt_sched_create(void) { return rlt_calloc(1, sizeof(rlt_sched)); }

void rlt_sched_destroy(rlt_sched *s)
{
    if (!s) return;
    rlt_free(s->steps);
    rlt_free(s);
}

rlt_status rlt_sched_append(rlt_sched *s, const rlt_step *step, rlt_diag *diag)
{
    if (s->n_steps == s->cap) {
        int cap = s->cap ? 2 * s->cap : 16;
        rlt_step *steps = rlt_realloc(s->steps, sizeof(rlt_step) * (size_t)cap);
        if (!steps) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory growing a schedule");
        s->steps = steps;
        s->cap = cap;
    }
    s->steps[s->n_steps++] = *step;
    return RLT_STATUS_OK;
}

rlt_sched *rlt_sched_copy(const rlt_sched *s)
{
    rlt_sched *c = rlt_sched_create();
    if (!c) return NULL;
    for (int i = 0; i < s->n_steps; i++)
        if (rlt_sched_append(c, &s->steps[i], NULL) != RLT_STATUS_OK) {
            rlt_sched_destroy(c);
            return NULL;
        }
    return c;
}

/* Splits one line into a step. `line_no` only labels messages. */
static rlt_status parse_step(const char *line, int line_no, rlt_step *step, rlt_diag *diag)
{
    memset(step, 0, sizeof *step);
    step->line = line_no;
    char tokens[RLT_STEP_MAX_ARGS + 1][RLT_LOOP_NAME_MAX];
    int n = 0;
    const char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\r') p++;
        if (!*p || *p == '#' || *p == '\n') break;
        const char *start = p;
        while (*p && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n' && *p != '#') p++;
        size_t len = (size_t)(p - start);
        if (n > RLT_STEP_MAX_ARGS)
            return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "too many words (at most %d)", RLT_STEP_MAX_ARGS + 1);
        if (len >= RLT_LOOP_NAME_MAX)
            return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "word '%.20s...' is longer than %d characters", start,
                            RLT_LOOP_NAME_MAX - 1);
        memcpy(tokens[n], start, len);
        tokens[n][len] = '\0';
        for (size_t i = 0; i < len; i++) {
            unsigned char c = (unsigned char)tokens[n][i];
            if (c < 0x20 || c >= 0x7f)
                return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "unexpected character 0x%02x in '%s'", c, tokens[n]);
        }
        n++;
    }
    if (n == 0) return RLT_STATUS_OK; /* blank: caller skips */
    int kind = -1;
    for (int k = 0; k < RLT_STEP_KIND_COUNT; k++)
        if (strcmp(tokens[0], step_names[k]) == 0) kind = k;
    if (kind < 0)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                        "unknown step '%s' (steps: split, reorder, fuse, unroll, vectorize, parallel, "
                        "cache_write, pack, pad)",
                        tokens[0]);
    step->kind = (rlt_step_kind)kind;
    step->n_args = n - 1;
    if (step->n_args < step_forms[kind].min_args || step->n_args > step_forms[kind].max_args)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s takes %d..%d arguments, got %d (usage: %s)", tokens[0],
                        step_forms[kind].min_args, step_forms[kind].max_args, step->n_args, step_forms[kind].usage);
    for (int i = 1; i < n; i++) memcpy(step->args[i - 1], tokens[i], RLT_LOOP_NAME_MAX);
    /* Numbers are checked now so a typo is reported at parse time. */
    rlt_status st = RLT_STATUS_OK;
    int64_t x;
    if (kind == RLT_STEP_SPLIT) st = parse_int_arg(step, 1, "factor", &x, diag);
    if (kind == RLT_STEP_PARALLEL && step->n_args == 2) st = parse_int_arg(step, 1, "thread count", &x, diag);
    if (kind == RLT_STEP_PACK) {
        if ((step->n_args - 1) % 2 != 0)
            return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "pack: dims and blocks come in pairs (usage: %s)",
                            step_forms[kind].usage);
        for (int i = 2; i < step->n_args && st == RLT_STATUS_OK; i += 2) st = parse_int_arg(step, i, "block", &x, diag);
    }
    return st;
}

rlt_status rlt_sched_add(rlt_sched *s, const char *line, rlt_diag *diag)
{
    rlt_step step;
    rlt_status st = parse_step(line, 0, &step, diag);
    if (st != RLT_STATUS_OK) return st;
    if (step.kind == RLT_STEP_SPLIT && step.n_args == 0)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "empty step: write e.g. 'split i 16'");
    return rlt_sched_append(s, &step, diag);
}

/* ---- typed steps ---------------------------------------------------------- */

static void step_begin(rlt_step *out, rlt_step_kind kind)
{
    memset(out, 0, sizeof *out);
    out->kind = kind;
}

/* Appends one word (a name) to the step: it must fit and be printable
 * without spaces, so that the step's text form reads back as the step. */
static rlt_status step_word(rlt_step *out, const char *what, const char *word, rlt_diag *diag)
{
    if (!word || !word[0])
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s: the %s is empty", step_names[out->kind], what);
    size_t len = strlen(word);
    if (len >= RLT_LOOP_NAME_MAX)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s: the %s '%.20s...' is longer than %d characters",
                        step_names[out->kind], what, word, RLT_LOOP_NAME_MAX - 1);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)word[i];
        if (c <= 0x20 || c >= 0x7f || c == '#')
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s: the %s '%s' holds character 0x%02x",
                            step_names[out->kind], what, word, c);
    }
    if (out->n_args >= RLT_STEP_MAX_ARGS)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s: more than %d arguments", step_names[out->kind],
                        RLT_STEP_MAX_ARGS);
    memcpy(out->args[out->n_args++], word, len + 1);
    return RLT_STATUS_OK;
}

static rlt_status step_number(rlt_step *out, const char *what, int64_t v, int64_t lo, int64_t hi, rlt_diag *diag)
{
    if (v < lo || v > hi)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s: %s %" PRId64 " is out of range (%" PRId64 "..%" PRId64 ")",
                        step_names[out->kind], what, v, lo, hi);
    char text[24];
    snprintf(text, sizeof text, "%" PRId64, v);
    return step_word(out, what, text, diag);
}

rlt_status rlt_step_split(rlt_step *out, const char *loop, int64_t factor, rlt_diag *diag)
{
    step_begin(out, RLT_STEP_SPLIT);
    rlt_status st = step_word(out, "loop", loop, diag);
    return st == RLT_STATUS_OK ? step_number(out, "factor", factor, 1, INT64_MAX, diag) : st;
}

rlt_status rlt_step_reorder(rlt_step *out, int n_loops, const char *const *loops, rlt_diag *diag)
{
    step_begin(out, RLT_STEP_REORDER);
    if (n_loops < 2 || n_loops > RLT_MAX_LOOPS)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "reorder: %d loops (give 2 to %d)", n_loops,
                        RLT_MAX_LOOPS);
    rlt_status st = RLT_STATUS_OK;
    for (int i = 0; i < n_loops && st == RLT_STATUS_OK; i++) st = step_word(out, "loop", loops[i], diag);
    return st;
}

rlt_status rlt_step_fuse(rlt_step *out, const char *outer, const char *inner, rlt_diag *diag)
{
    step_begin(out, RLT_STEP_FUSE);
    rlt_status st = step_word(out, "outer loop", outer, diag);
    return st == RLT_STATUS_OK ? step_word(out, "inner loop", inner, diag) : st;
}

rlt_status rlt_step_annotate(rlt_step *out, rlt_step_kind kind, const char *loop, int n_threads, rlt_diag *diag)
{
    RLT_ASSERT(kind == RLT_STEP_UNROLL || kind == RLT_STEP_VECTORIZE || kind == RLT_STEP_PARALLEL);
    step_begin(out, kind);
    rlt_status st = step_word(out, "loop", loop, diag);
    if (st == RLT_STATUS_OK && kind == RLT_STEP_PARALLEL && n_threads != 0)
        st = step_number(out, "thread count", n_threads, 1, 256, diag);
    return st;
}

rlt_status rlt_step_cache_write(rlt_step *out, const char *loop, rlt_diag *diag)
{
    step_begin(out, RLT_STEP_CACHE_WRITE);
    return step_word(out, "loop", loop ? loop : "root", diag);
}

rlt_status rlt_step_pack(rlt_step *out, const char *tensor, int n_blocks, const int *dims, const int64_t *blocks,
                         rlt_diag *diag)
{
    step_begin(out, RLT_STEP_PACK);
    if (n_blocks < 1 || 1 + 2 * n_blocks > RLT_STEP_MAX_ARGS)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "pack: %d blocks (give 1 to %d)", n_blocks,
                        (RLT_STEP_MAX_ARGS - 1) / 2);
    rlt_status st = step_word(out, "tensor", tensor, diag);
    for (int b = 0; b < n_blocks && st == RLT_STATUS_OK; b++) {
        st = step_number(out, "dim", dims[b], 0, RLT_MAX_DIMS - 1, diag);
        if (st == RLT_STATUS_OK) st = step_number(out, "block", blocks[b], 1, INT64_MAX, diag);
    }
    return st;
}

rlt_status rlt_step_pad(rlt_step *out, const char *tensor, rlt_diag *diag)
{
    step_begin(out, RLT_STEP_PAD);
    return step_word(out, "tensor", tensor, diag);
}

/* A built step appended to s; s unchanged when the step is refused. */
static rlt_status add_built(rlt_sched *s, rlt_status st, const rlt_step *step, rlt_diag *diag)
{
    return st == RLT_STATUS_OK ? rlt_sched_append(s, step, diag) : st;
}

rlt_status rlt_sched_add_split(rlt_sched *s, const char *loop, int64_t factor, rlt_diag *diag)
{
    rlt_step step;
    return add_built(s, rlt_step_split(&step, loop, factor, diag), &step, diag);
}

rlt_status rlt_sched_add_reorder(rlt_sched *s, int n_loops, const char *const *loops, rlt_diag *diag)
{
    rlt_step step;
    return add_built(s, rlt_step_reorder(&step, n_loops, loops, diag), &step, diag);
}

rlt_status rlt_sched_add_fuse(rlt_sched *s, const char *outer, const char *inner, rlt_diag *diag)
{
    rlt_step step;
    return add_built(s, rlt_step_fuse(&step, outer, inner, diag), &step, diag);
}

rlt_status rlt_sched_add_unroll(rlt_sched *s, const char *loop, rlt_diag *diag)
{
    rlt_step step;
    return add_built(s, rlt_step_annotate(&step, RLT_STEP_UNROLL, loop, 0, diag), &step, diag);
}

rlt_status rlt_sched_add_vectorize(rlt_sched *s, const char *loop, rlt_diag *diag)
{
    rlt_step step;
    return add_built(s, rlt_step_annotate(&step, RLT_STEP_VECTORIZE, loop, 0, diag), &step, diag);
}

rlt_status rlt_sched_add_parallel(rlt_sched *s, const char *loop, int n_threads, rlt_diag *diag)
{
    rlt_step step;
    return add_built(s, rlt_step_annotate(&step, RLT_STEP_PARALLEL, loop, n_threads, diag), &step, diag);
}

rlt_status rlt_sched_add_cache_write(rlt_sched *s, const char *loop, rlt_diag *diag)
{
    rlt_step step;
    return add_built(s, rlt_step_cache_write(&step, loop, diag), &step, diag);
}

rlt_status rlt_sched_add_pack(rlt_sched *s, const char *tensor, int n_blocks, const int *dims, const int64_t *blocks,
                              rlt_diag *diag)
{
    rlt_step step;
    return add_built(s, rlt_step_pack(&step, tensor, n_blocks, dims, blocks, diag), &step, diag);
}

rlt_status rlt_sched_add_pad(rlt_sched *s, const char *tensor, rlt_diag *diag)
{
    rlt_step step;
    return add_built(s, rlt_step_pad(&step, tensor, diag), &step, diag);
}

int rlt_sched_n_steps(const rlt_sched *s) { return s->n_steps; }

char *rlt_sched_text(const rlt_sched *s)
{
    rlt_str text;
    rlt_str_init(&text);
    rlt_sched_print(s, &text);
    return rlt_str_take(&text); /* NULL when a write failed */
}

rlt_status rlt_sched_parse(const char *text, const char *source, rlt_sched **out, rlt_diag *diag)
{
    *out = NULL;
    rlt_sched *s = rlt_sched_create();
    if (!s) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading schedule %s", source);
    rlt_status st = RLT_STATUS_OK;
    int line_no = 0;
    const char *p = text;
    while (*p) {
        line_no++;
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char line[4096];
        if (len >= sizeof line) {
            st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s:%d: line longer than %zu characters", source, line_no,
                          sizeof line - 1);
            goto done;
        }
        memcpy(line, p, len);
        line[len] = '\0';
        p = end ? end + 1 : p + len;
        /* A version header other than v1 is refused. The digits are read as
         * text: sscanf's %d on a number past INT_MAX is undefined. */
        int digits_at = -1;
        sscanf(line, "# rltune schedule v%n", &digits_at);
        if (digits_at >= 0) {
            const char *v = line + digits_at;
            size_t n_digits = strspn(v, "0123456789");
            size_t n_zeros = strspn(v, "0");
            bool is_v1 = n_digits == n_zeros + 1 && v[n_zeros] == '1';
            if (n_digits > 0 && !is_v1) {
                st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                              "%s:%d: schedule format v%.*s is not supported (this rltune reads v1)", source,
                              line_no, (int)(n_digits < 20 ? n_digits : 20), v);
                goto done;
            }
        }
        rlt_step step;
        st = parse_step(line, line_no, &step, diag);
        if (st != RLT_STATUS_OK) {
            rlt_diag_prefix(diag, "%s:%d", source, line_no);
            goto done;
        }
        bool blank = true;
        for (const char *c = line; *c && *c != '#'; c++) blank &= (*c == ' ' || *c == '\t' || *c == '\r');
        if (blank) continue;
        if ((st = rlt_sched_append(s, &step, diag)) != RLT_STATUS_OK) goto done;
    }
done:
    if (st != RLT_STATUS_OK) {
        rlt_sched_destroy(s);
        return st;
    }
    *out = s;
    return RLT_STATUS_OK;
}

rlt_status rlt_sched_load(const char *path, rlt_sched **out, rlt_diag *diag)
{
    char *text = NULL;
    *out = NULL;
    rlt_status st = rlt_text_file_read(path, &text, diag);
    if (st != RLT_STATUS_OK) return st;
    st = rlt_sched_parse(text, path, out, diag);
    rlt_free(text);
    return st;
}

void rlt_step_print(const rlt_step *step, rlt_str *out)
{
    rlt_str_append(out, rlt_step_kind_name(step->kind));
    for (int i = 0; i < step->n_args; i++) rlt_str_printf(out, " %s", step->args[i]);
}

void rlt_sched_print(const rlt_sched *s, rlt_str *out)
{
    rlt_str_append(out, RLT_SCHED_HEADER "\n");
    for (int i = 0; i < s->n_steps; i++) {
        rlt_step_print(&s->steps[i], out);
        rlt_str_append(out, "\n");
    }
}

rlt_status rlt_sched_apply(const rlt_sched *s, const rlt_op *op, rlt_nest *out, rlt_diag *diag)
{
    rlt_nest cur;
    rlt_nest_init(&cur, op);
    for (int i = 0; i < s->n_steps; i++) {
        rlt_status st = rlt_step_apply(&cur, &s->steps[i], &cur, diag);
        if (st != RLT_STATUS_OK) {
            if (s->steps[i].line > 0)
                rlt_diag_prefix(diag, "schedule line %d", s->steps[i].line);
            else
                rlt_diag_prefix(diag, "schedule step %d", i + 1);
            return st;
        }
    }
    *out = cur;
    return RLT_STATUS_OK;
}
