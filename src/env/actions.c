/*
 * actions.c - the environment's actions (docs/env.md, "Actions").
 *
 * Entry points: env_action_apply, the one definition of what an action does
 * and when it is legal (the mask is env_action_mask: each action tried on a
 * scratch state); env_schedule_build, the schedule that replays to a state's
 * nest, which merge also uses to undo a split; rlt_env_action_name /
 * rlt_env_action_from_name; env_tree_print.
 *
 * Every change to the nest is made by a schedule primitive (src/sched) and
 * so passes its legality check; the env adds only a few rules of its own,
 * checked here before the primitive runs: a split factor must be smaller
 * than the loop's extent, the nest keeps at most RLT_ENV_MAX_LOOPS loops, and
 * an annotation must change something.
 */
#include "env/env.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char *const action_names[RLT_ENV_N_ACTIONS] = {
    [RLT_ENV_ACTION_UP] = "up",
    [RLT_ENV_ACTION_DOWN] = "down",
    [RLT_ENV_ACTION_SWAP_UP] = "swap_up",
    [RLT_ENV_ACTION_SWAP_DOWN] = "swap_down",
    [RLT_ENV_ACTION_SPLIT_2] = "split_2",
    [RLT_ENV_ACTION_SPLIT_4] = "split_4",
    [RLT_ENV_ACTION_SPLIT_8] = "split_8",
    [RLT_ENV_ACTION_SPLIT_16] = "split_16",
    [RLT_ENV_ACTION_SPLIT_32] = "split_32",
    [RLT_ENV_ACTION_SPLIT_64] = "split_64",
    [RLT_ENV_ACTION_SPLIT_128] = "split_128",
    [RLT_ENV_ACTION_SPLIT_256] = "split_256",
    [RLT_ENV_ACTION_MERGE] = "merge",
    [RLT_ENV_ACTION_UNROLL] = "unroll",
    [RLT_ENV_ACTION_VECTORIZE] = "vectorize",
    [RLT_ENV_ACTION_PARALLEL] = "parallel",
    [RLT_ENV_ACTION_STOP] = "stop",
};

const char *rlt_env_action_name(int action)
{
    return action >= 0 && action < RLT_ENV_N_ACTIONS ? action_names[action] : "unknown";
}

int rlt_env_action_from_name(const char *name)
{
    for (int a = 0; name && a < RLT_ENV_N_ACTIONS; a++)
        if (strcmp(name, action_names[a]) == 0) return a;
    return -1;
}

static const char *loop_name(const rlt_nest *n, int pos) { return n->vars[n->loops[pos].var].name; }

static const char *const kind_words[] = {"serial", "unrolled", "vectorized", "parallel"};

/* Everything but the nest, which the primitives write. */
static void copy_meta(env_state *out, const env_state *in)
{
    out->hash = in->hash;
    out->cursor = in->cursor;
    out->n_steps = in->n_steps;
    memcpy(out->history, in->history, sizeof out->history);
    out->gflops = in->gflops;
    out->eval_status = in->eval_status;
    memcpy(out->eval_message, in->eval_message, sizeof out->eval_message);
    out->is_done = in->is_done;
    memcpy(out->mask, in->mask, sizeof out->mask);
}

/* ---- the schedule of a state -------------------------------------------- */

/* Where to send the steps of a schedule: appended to a schedule, or applied
 * to a nest as they come. */
typedef struct emit_target {
    rlt_sched *sched; /* non-NULL: append */
    rlt_nest *nest;   /* else: apply (starting from the op's default nest) */
} emit_target;

static rlt_status emit(emit_target *t, const rlt_step *step, rlt_diag *diag)
{
    if (t->sched) return rlt_sched_append(t->sched, step, diag);
    return rlt_step_apply(t->nest, step, t->nest, diag);
}

/* The loop that merging the two halves of a split makes: the annotation of
 * whichever half has one (split puts parallel on the outer half, unroll and
 * vectorize on the inner, so merge is split's inverse). False when both are
 * annotated. */
static bool merged_loop(const rlt_loop *outer, const rlt_loop *inner, int parent, rlt_loop *out)
{
    if (outer->kind != RLT_LOOP_SERIAL && inner->kind != RLT_LOOP_SERIAL) return false;
    *out = outer->kind != RLT_LOOP_SERIAL ? *outer : *inner;
    out->var = parent;
    return true;
}

/* Emits the schedule of `n` (or of `n` with merge_var's split undone). */
static rlt_status schedule_emit(const rlt_nest *n, int merge_var, emit_target *t, rlt_diag *diag)
{
    rlt_status st = RLT_STATUS_OK;
    rlt_step step;
    /* The loops wanted, outer to inner. */
    rlt_loop want[RLT_MAX_LOOPS];
    int n_want = 0;
    for (int l = 0; l < n->n_loops; l++) {
        const rlt_var *v = &n->vars[n->loops[l].var];
        if (merge_var >= 0 && v->origin == RLT_VAR_SPLIT_INNER && v->parent == merge_var) continue;
        if (merge_var >= 0 && v->origin == RLT_VAR_SPLIT_OUTER && v->parent == merge_var) {
            RLT_ASSERT(l + 1 < n->n_loops);
            bool is_ok = merged_loop(&n->loops[l], &n->loops[l + 1], merge_var, &want[n_want++]);
            RLT_ASSERT(is_ok);
            continue;
        }
        want[n_want++] = n->loops[l];
    }
    /* The splits, in the order their variables were made; `order` follows
     * the loops they leave (each split puts outer, inner where the loop was). */
    int order[RLT_MAX_LOOPS];
    int n_order = n->op->n_axes;
    for (int a = 0; a < n_order; a++) order[a] = a;
    for (int v = 0; v < n->n_vars && st == RLT_STATUS_OK; v++) {
        const rlt_var *x = &n->vars[v];
        RLT_ASSERT(x->origin != RLT_VAR_FUSED);
        if (x->origin != RLT_VAR_SPLIT_OUTER || x->parent == merge_var) continue;
        RLT_ASSERT(v + 1 < n->n_vars && n->vars[v + 1].origin == RLT_VAR_SPLIT_INNER && n_order < RLT_MAX_LOOPS);
        st = rlt_step_split(&step, n->vars[x->parent].name, x->factor, diag);
        if (st == RLT_STATUS_OK) st = emit(t, &step, diag);
        int pos = 0;
        while (pos < n_order && order[pos] != x->parent) pos++;
        RLT_ASSERT(pos < n_order);
        memmove(&order[pos + 2], &order[pos + 1], sizeof(int) * (size_t)(n_order - pos - 1));
        order[pos] = v;
        order[pos + 1] = v + 1;
        n_order++;
    }
    RLT_ASSERT(st != RLT_STATUS_OK || n_order == n_want);
    bool is_reordered = false;
    for (int l = 0; l < n_want && st == RLT_STATUS_OK; l++) is_reordered |= order[l] != want[l].var;
    if (is_reordered) {
        const char *names[RLT_MAX_LOOPS];
        for (int l = 0; l < n_want; l++) names[l] = n->vars[want[l].var].name;
        st = rlt_step_reorder(&step, n_want, names, diag);
        if (st == RLT_STATUS_OK) st = emit(t, &step, diag);
    }
    for (int l = 0; l < n_want && st == RLT_STATUS_OK; l++) {
        const rlt_loop *loop = &want[l];
        if (loop->kind == RLT_LOOP_SERIAL) continue;
        static const rlt_step_kind kinds[] = {RLT_STEP_KIND_COUNT, RLT_STEP_UNROLL, RLT_STEP_VECTORIZE,
                                              RLT_STEP_PARALLEL};
        st = rlt_step_annotate(&step, kinds[loop->kind], n->vars[loop->var].name,
                               loop->kind == RLT_LOOP_PARALLEL ? loop->n_threads : 0, diag);
        if (st == RLT_STATUS_OK) st = emit(t, &step, diag);
    }
    return st;
}

rlt_status env_schedule_build(const rlt_nest *nest, int merge_var, rlt_sched **out, rlt_diag *diag)
{
    *out = NULL;
    rlt_sched *s = rlt_sched_create();
    if (!s) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory building a schedule");
    emit_target t = {.sched = s};
    rlt_status st = schedule_emit(nest, merge_var, &t, diag);
    if (st != RLT_STATUS_OK) {
        rlt_sched_destroy(s);
        return st;
    }
    *out = s;
    return RLT_STATUS_OK;
}

/* ---- the kernel of a state: automatic accumulation ---------------------- */

/* The accumulator's loop (as env_accumulator_loop) and the kernel with it
 * in *kernel (the nest itself when there is none): each candidate loop is
 * tried once, by the primitive that makes the kernel. */
static int place_accumulator(const rlt_nest *nest, rlt_nest *kernel)
{
    /* p = -1 is the root (a tile around the whole nest); loop p's tile holds
     * the spatial loops inside it. */
    for (int p = -1; p < nest->n_loops - 1; p++) {
        bool has_reduction = false, is_register_tile = true;
        int64_t tile = 1;
        for (int l = p + 1; l < nest->n_loops && is_register_tile; l++) {
            const rlt_loop *loop = &nest->loops[l];
            const rlt_var *v = &nest->vars[loop->var];
            if (v->is_reduce) {
                has_reduction = true;
                continue;
            }
            is_register_tile = loop->kind == RLT_LOOP_UNROLL || loop->kind == RLT_LOOP_VECTORIZE;
            tile *= v->extent;
            if (tile > ENV_MAX_TILE_FLOATS) is_register_tile = false;
        }
        if (!has_reduction || !is_register_tile) continue;
        if (rlt_sched_cache_write(nest, p < 0 ? "root" : loop_name(nest, p), kernel, NULL) == RLT_STATUS_OK) return p;
    }
    *kernel = *nest;
    return ENV_NO_ACCUMULATOR;
}

/* ---- the kernel of a state: automatic packing --------------------------- */

/* Whether every loop variable v is made of sits at a position after p
 * (inside the accumulator's loop); the env has no fuse. */
static bool var_inside(const rlt_nest *n, int v, int p)
{
    int pos = rlt_nest_loop_of_var(n, v);
    if (pos >= 0) return pos > p;
    int outer, inner, fused;
    rlt_nest_var_children(n, v, &outer, &inner, &fused);
    return outer >= 0 && var_inside(n, outer, p) && var_inside(n, inner, p);
}

/* The block the tile covers along the vectorized loop's axis: the extent of
 * the outermost variable w on the chain of inner halves from the vectorized
 * variable up (a.i, a.i.i, ...) whose loops are all inside the tile, so that
 * the axis index modulo the block is w's. 0 when the vectorized variable is
 * not on such a chain, or the whole axis is in the tile (nothing to block). */
static int64_t tile_block(const rlt_nest *n, int vec_var, int p)
{
    for (int v = vec_var; n->vars[v].origin != RLT_VAR_AXIS; v = n->vars[v].parent)
        if (n->vars[v].origin != RLT_VAR_SPLIT_INNER) return 0;
    int w = vec_var;
    while (n->vars[w].origin == RLT_VAR_SPLIT_INNER) {
        int parent = n->vars[w].parent;
        if (n->vars[parent].origin == RLT_VAR_AXIS || !var_inside(n, parent, p)) break;
        w = parent;
    }
    return n->vars[w].origin == RLT_VAR_SPLIT_INNER ? n->vars[w].extent : 0;
}

/* Whether axis `axis` appears in any index of tensor t's loads. */
static bool tensor_uses_axis(const rlt_op *op, const rlt_expr *const *loads, int n_loads, int t, int axis)
{
    for (int i = 0; i < n_loads; i++)
        if (loads[i]->tensor == t)
            for (int d = 0; d < op->tensors[t].n_dims; d++)
                if (loads[i]->index[d].coef[axis] != 0) return true;
    return false;
}

/* Packs, in the kernel (accumulator at loop p), each input that the tile
 * reads along its vectorized axis; see env.h. */
static void place_packs(rlt_nest *kernel, int p)
{
    const rlt_nest *n = kernel;
    const rlt_op *op = n->op;
    int vec = -1;
    for (int l = p + 1; l < n->n_loops; l++)
        if (n->loops[l].kind == RLT_LOOP_VECTORIZE) vec = n->loops[l].var;
    int64_t block = vec >= 0 ? tile_block(n, vec, p) : 0;
    if (block < 2) return;
    int axis = rlt_nest_var_axis(n, vec);
    const rlt_expr *loads[64];
    int n_loads = rlt_op_loads(op, loads, 64);
    for (int t = 0; t < op->n_tensors - 1; t++) {
        int dim = -1;
        for (int i = 0; i < n_loads && dim < 0; i++)
            if (loads[i]->tensor == t) dim = rlt_load_dim_of_axis(op, loads[i], axis);
        bool is_swept = false; /* a reduction loop of the tile walks another of its dims */
        int64_t reuse = 1;     /* how often the loops outside the tile read it again */
        for (int l = 0; l < n->n_loops; l++) {
            const rlt_var *v = &n->vars[n->loops[l].var];
            bool uses = tensor_uses_axis(op, loads, n_loads, t, rlt_nest_var_axis(n, n->loops[l].var));
            if (l > p && v->is_reduce && uses) is_swept = true;
            if (l <= p && !uses && reuse < INT64_MAX / v->extent) reuse *= v->extent;
        }
        if (dim < 0 || !is_swept) continue;
        if (!op->tensors[t].is_weight &&
            (reuse < ENV_PACK_MIN_REUSE || rlt_op_tensor_size(op, t) < ENV_PACK_MIN_FLOATS))
            continue;
        rlt_sched_pack(kernel, op->tensors[t].name, 1, &dim, &block, kernel, NULL); /* a refusal packs nothing */
    }
}

void env_nest_drop_placed(rlt_nest *nest)
{
    nest->acc_var = RLT_ACC_NONE;
    for (int t = 0; t < nest->op->n_tensors; t++) nest->layouts[t].n_blocks = 0;
}

int env_accumulator_loop(const rlt_nest *nest)
{
    rlt_nest scratch;
    return place_accumulator(nest, &scratch);
}

/* The kernel of a state in *kernel, and the accumulator's loop (as
 * env_accumulator_loop). */
static int place_kernel(const rlt_nest *nest, rlt_nest *kernel)
{
    int p = place_accumulator(nest, kernel);
    if (p != ENV_NO_ACCUMULATOR) place_packs(kernel, p);
    return p;
}

void env_kernel_nest(const rlt_nest *nest, rlt_nest *out) { place_kernel(nest, out); }

rlt_status env_kernel_schedule_build(const rlt_nest *nest, rlt_sched **out, rlt_diag *diag)
{
    rlt_status st = env_schedule_build(nest, -1, out, diag);
    rlt_nest kernel;
    int p = place_kernel(nest, &kernel);
    if (st != RLT_STATUS_OK || p == ENV_NO_ACCUMULATOR) return st;
    st = rlt_sched_add_cache_write(*out, p < 0 ? NULL : loop_name(nest, p), diag);
    for (int t = 0; t < nest->op->n_tensors && st == RLT_STATUS_OK; t++) {
        const rlt_layout *l = &kernel.layouts[t];
        if (l->n_blocks > 0)
            st = rlt_sched_add_pack(*out, nest->op->tensors[t].name, l->n_blocks, l->block_dim, l->block, diag);
    }
    if (st != RLT_STATUS_OK) {
        rlt_sched_destroy(*out);
        *out = NULL;
    }
    return st;
}

rlt_status env_nest_check_expressible(const rlt_nest *nest, rlt_diag *diag)
{
    for (int v = 0; v < nest->n_vars; v++)
        if (nest->vars[v].origin == RLT_VAR_FUSED)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "loop '%s' comes from fuse, which the env cannot express (it splits, reorders, "
                            "unrolls, vectorizes and parallelises)",
                            nest->vars[v].name);
    if (nest->acc_var != RLT_ACC_NONE)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "the nest has a cache_write accumulator, which the env cannot express");
    for (int t = 0; t < nest->op->n_tensors; t++)
        if (rlt_layout_is_staged(&nest->layouts[t]))
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "input %s is packed or padded, which the env cannot express", nest->op->tensors[t].name);
    if (nest->n_loops > RLT_ENV_MAX_LOOPS)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "the nest has %d loops, more than the %d the env describes", nest->n_loops,
                        RLT_ENV_MAX_LOOPS);
    return RLT_STATUS_OK;
}

/* ---- the actions -------------------------------------------------------- */

static rlt_status act_split(const env_state *in, int64_t factor, env_state *out, rlt_diag *diag)
{
    const rlt_nest *n = &in->nest;
    const char *name = loop_name(n, in->cursor);
    int64_t extent = n->vars[n->loops[in->cursor].var].extent;
    if (factor >= extent)
        return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                        "split_%" PRId64 ": loop '%s' has extent %" PRId64 "; the factor must be smaller", factor,
                        name, extent);
    if (n->n_loops >= RLT_ENV_MAX_LOOPS)
        return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                        "split_%" PRId64 ": the nest has %d loops already, the most the env describes", factor,
                        n->n_loops);
    rlt_status st = rlt_sched_split(n, name, factor, &out->nest, diag);
    if (st != RLT_STATUS_OK) return st;
    copy_meta(out, in); /* the cursor stays on the outer half */
    return RLT_STATUS_OK;
}

/* Swaps the loops at positions c and c + 1; the cursor follows its loop. */
static rlt_status act_swap(const env_state *in, int c, int cursor_after, env_state *out, rlt_diag *diag)
{
    const rlt_nest *n = &in->nest;
    const char *names[2] = {loop_name(n, c + 1), loop_name(n, c)};
    rlt_status st = rlt_sched_reorder(n, 2, names, &out->nest, diag);
    if (st != RLT_STATUS_OK) return st;
    copy_meta(out, in);
    out->cursor = cursor_after;
    return RLT_STATUS_OK;
}

static rlt_status act_merge(const env_state *in, env_state *out, rlt_diag *diag)
{
    const rlt_nest *n = &in->nest;
    int c = in->cursor;
    const rlt_var *x = &n->vars[n->loops[c].var];
    if (x->origin != RLT_VAR_SPLIT_OUTER && x->origin != RLT_VAR_SPLIT_INNER)
        return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE, "merge: loop '%s' is not a half of a split", x->name);
    int parent = x->parent;
    int v_outer, v_inner, v_fused;
    rlt_nest_var_children(n, parent, &v_outer, &v_inner, &v_fused);
    int outer = rlt_nest_loop_of_var(n, v_outer), inner = rlt_nest_loop_of_var(n, v_inner);
    const char *sibling = n->vars[x->origin == RLT_VAR_SPLIT_OUTER ? v_inner : v_outer].name;
    if (outer < 0 || inner < 0)
        return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                        "merge: '%s', the other half of %s's split, was split again: merge its halves first",
                        sibling, n->vars[parent].name);
    if (inner != outer + 1)
        return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                        "merge: '%s' must be the loop directly inside '%s' to merge them back into '%s'",
                        n->vars[v_inner].name, n->vars[v_outer].name, n->vars[parent].name);
    rlt_loop merged;
    if (!merged_loop(&n->loops[outer], &n->loops[inner], parent, &merged))
        return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE, "merge: both halves of '%s' are annotated (%s, %s)",
                        n->vars[parent].name, kind_words[n->loops[outer].kind], kind_words[n->loops[inner].kind]);
    /* Replay the state's schedule without that split: the primitives check
     * the result (an unrolled loop of the merged extent, say). */
    rlt_nest tmp;
    rlt_nest_init(&tmp, n->op);
    emit_target t = {.nest = &tmp};
    rlt_status st = schedule_emit(n, parent, &t, diag);
    if (st != RLT_STATUS_OK) {
        if (diag) rlt_diag_prefix(diag, "merge %s %s", n->vars[v_outer].name, n->vars[v_inner].name);
        return st;
    }
    out->nest = tmp;
    copy_meta(out, in);
    out->cursor = outer;
    return RLT_STATUS_OK;
}

static rlt_status act_annotate(const env_state *in, rlt_loop_kind kind, const char *verb, env_state *out,
                               rlt_diag *diag)
{
    const rlt_nest *n = &in->nest;
    const char *name = loop_name(n, in->cursor);
    if (n->loops[in->cursor].kind == kind)
        return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE, "%s: loop '%s' is already %s", verb, name,
                        kind_words[kind]);
    rlt_status st = rlt_sched_annotate(n, name, kind, 0, &out->nest, diag);
    if (st != RLT_STATUS_OK) return st;
    copy_meta(out, in);
    return RLT_STATUS_OK;
}

/* Copies of the body the nest's unrolled loops make. */
static int64_t unrolled_copies(const rlt_nest *n)
{
    int64_t copies = 1;
    for (int l = 0; l < n->n_loops; l++)
        if (n->loops[l].kind == RLT_LOOP_UNROLL) copies *= n->vars[n->loops[l].var].extent;
    return copies;
}

static rlt_status refuse_copies(const char *verb, int64_t copies, rlt_diag *diag)
{
    return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                    "%s: the unrolled loops would make %" PRId64 " copies of the body, more than the env's %d "
                    "(larger bodies take seconds to compile and run no faster)",
                    verb, copies, ENV_MAX_UNROLL_COPIES);
}

rlt_status env_action_apply(const env_state *in, int action, env_state *out, rlt_diag *diag)
{
    RLT_ASSERT(in != out);
    if (action < 0 || action >= RLT_ENV_N_ACTIONS)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "action %d is out of range (0 to %d)", action,
                        RLT_ENV_N_ACTIONS - 1);
    if (in->is_done) return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE, "the episode is over");
    const rlt_nest *n = &in->nest;
    int c = in->cursor;
    RLT_ASSERT(c >= 0 && c < n->n_loops);
    switch ((rlt_env_action)action) {
    case RLT_ENV_ACTION_UP:
    case RLT_ENV_ACTION_SWAP_UP:
        if (c == 0)
            return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE, "%s: the cursor is on the outermost loop '%s'",
                            action_names[action], loop_name(n, c));
        if (action == RLT_ENV_ACTION_SWAP_UP) return act_swap(in, c - 1, c - 1, out, diag);
        out->nest = *n;
        copy_meta(out, in);
        out->cursor = c - 1;
        return RLT_STATUS_OK;
    case RLT_ENV_ACTION_DOWN:
    case RLT_ENV_ACTION_SWAP_DOWN:
        if (c == n->n_loops - 1)
            return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE, "%s: the cursor is on the innermost loop '%s'",
                            action_names[action], loop_name(n, c));
        if (action == RLT_ENV_ACTION_SWAP_DOWN) return act_swap(in, c, c + 1, out, diag);
        out->nest = *n;
        copy_meta(out, in);
        out->cursor = c + 1;
        return RLT_STATUS_OK;
    case RLT_ENV_ACTION_SPLIT_2:
    case RLT_ENV_ACTION_SPLIT_4:
    case RLT_ENV_ACTION_SPLIT_8:
    case RLT_ENV_ACTION_SPLIT_16:
    case RLT_ENV_ACTION_SPLIT_32:
    case RLT_ENV_ACTION_SPLIT_64:
    case RLT_ENV_ACTION_SPLIT_128:
    case RLT_ENV_ACTION_SPLIT_256:
        return act_split(in, (int64_t)2 << (action - RLT_ENV_ACTION_SPLIT_2), out, diag);
    case RLT_ENV_ACTION_MERGE: {
        env_state merged;
        rlt_status st = act_merge(in, &merged, diag);
        if (st != RLT_STATUS_OK) return st;
        int64_t copies = unrolled_copies(&merged.nest);
        if (copies > ENV_MAX_UNROLL_COPIES && copies > unrolled_copies(n)) return refuse_copies("merge", copies, diag);
        *out = merged;
        return RLT_STATUS_OK;
    }
    case RLT_ENV_ACTION_UNROLL: {
        int64_t copies = unrolled_copies(n) * n->vars[n->loops[c].var].extent;
        if (n->loops[c].kind != RLT_LOOP_UNROLL && copies > ENV_MAX_UNROLL_COPIES)
            return refuse_copies("unroll", copies, diag);
        return act_annotate(in, RLT_LOOP_UNROLL, "unroll", out, diag);
    }
    case RLT_ENV_ACTION_VECTORIZE:
        return act_annotate(in, RLT_LOOP_VECTORIZE, "vectorize", out, diag);
    case RLT_ENV_ACTION_PARALLEL:
        return act_annotate(in, RLT_LOOP_PARALLEL, "parallel", out, diag);
    case RLT_ENV_ACTION_STOP:
        out->nest = *n;
        copy_meta(out, in);
        out->is_done = true;
        return RLT_STATUS_OK;
    case RLT_ENV_N_ACTIONS:
        break;
    }
    return rlt_fail(diag, RLT_STATUS_INTERNAL, "action %d unhandled", action);
}

void env_action_mask(const env_state *state, bool mask[RLT_ENV_N_ACTIONS])
{
    env_state scratch; /* 10 KiB, on the stack: families may live in different threads */
    for (int a = 0; a < RLT_ENV_N_ACTIONS; a++)
        mask[a] = !state->is_done && env_action_apply(state, a, &scratch, NULL) == RLT_STATUS_OK;
}

void env_action_mask_hashes(const env_state *state, bool mask[RLT_ENV_N_ACTIONS],
                            uint64_t next_hash[RLT_ENV_N_ACTIONS])
{
    env_state scratch;
    for (int a = 0; a < RLT_ENV_N_ACTIONS; a++) {
        mask[a] = !state->is_done && env_action_apply(state, a, &scratch, NULL) == RLT_STATUS_OK;
        next_hash[a] = !mask[a] ? 0 : env_action_changes_nest(a) ? rlt_nest_hash(&scratch.nest) : state->hash;
    }
}

bool env_action_changes_nest(int action)
{
    return action != RLT_ENV_ACTION_UP && action != RLT_ENV_ACTION_DOWN && action != RLT_ENV_ACTION_STOP;
}

/* ---- printing ----------------------------------------------------------- */

void env_tree_print(const rlt_nest *nest, int cursor, rlt_str *out)
{
    rlt_str tree;
    rlt_str_init(&tree);
    rlt_nest_print(nest, &tree);
    if (tree.has_failed || !tree.data) {
        out->has_failed = true;
        rlt_str_free(&tree);
        return;
    }
    /* A state's nest has no staged inputs and no accumulator, so line l of
     * the tree is loop l. */
    const char *p = tree.data;
    for (int line = 0; *p; line++) {
        size_t len = strcspn(p, "\n");
        rlt_str_append(out, line == cursor ? "> " : "  ");
        rlt_str_appendn(out, p, len);
        rlt_str_append(out, "\n");
        p += len;
        if (*p == '\n') p++;
    }
    rlt_str_free(&tree);
}
