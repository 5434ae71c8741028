/*
 * lower_stage.c - the pass that builds the staged copies of a kernel's
 * inputs (pack, pad) as lowered nodes (lowered.h): the copy into the
 * workspace that runs before the nest, and, for weights, once in
 * SYMBOL_prepare.
 *
 * Entry points (lowered.h): lower_build_stages, which appends one STAGE
 * node a staged input: its loops over the copy's dims (the outermost of
 * more than one iteration parallel, the others kept rolled), the source
 * coordinates, and the copy, element by element under a bounds condition
 * or a row at a time (zeros, a plain copy, zeros); lower_is_prestaged.
 * lower_print.c prints these nodes, lower_dump.c shows them.
 */
#include "codegen/lowered.h"

#include <inttypes.h>

bool lower_is_prestaged(const lower_gen *g, int t)
{
    return t + 1 < g->op->n_tensors && g->ws_offset[t] >= 0 && g->op->tensors[t].is_weight;
}

/* The tensor dim that the innermost physical dim of t's stage walks with
 * step 1 (its coordinate is base + p_last), or -1 when there is none: then
 * every element checks its own coordinates. */
static int staging_inner_dim(const lower_gen *g, int t)
{
    int last = g->n_phys[t] - 1, found = -1;
    for (int d = 0; d < g->op->tensors[t].n_dims; d++) {
        int outer = g->outer_pos[t][d], inner = g->inner_pos[t][d];
        bool walks = inner == last || (outer == last && inner < 0);
        if (outer == last && inner >= 0) return -1; /* p_last steps by a whole block */
        if (!walks) continue;
        if (found >= 0) return -1;
        found = d;
    }
    return found;
}

/* A coordinate of the source, as C text: base (walked dim, flavor BASE) or
 * the whole coordinate, from the copy's loop counters. */
static void add_coord(lower_gen *g, lowered_node *body, int t, int d, bool is_base)
{
    const rlt_layout *l = &g->n->layouts[t];
    int outer = g->outer_pos[t][d], inner = g->inner_pos[t][d];
    rlt_str x;
    rlt_str_init(&x);
    if (is_base && inner >= 0)
        rlt_str_printf(&x, "p%d * %" PRId64 " - %" PRId64, outer, g->phys_dims[t][inner], l->pad_lo[d]);
    else if (is_base)
        rlt_str_printf(&x, "-%" PRId64, l->pad_lo[d]);
    else if (inner >= 0)
        rlt_str_printf(&x, "p%d * %" PRId64 " + p%d - %" PRId64, outer, g->phys_dims[t][inner], inner, l->pad_lo[d]);
    else
        rlt_str_printf(&x, "p%d - %" PRId64, outer, l->pad_lo[d]);
    lowered_node *c = lowered_add(g, body, LOWERED_STAGE_COORD, &g->at);
    c->var = d;
    c->flavor = is_base ? LOWERED_BASE : LOWERED_PLAIN;
    c->text = lowered_keep_text(g, &x);
    rlt_str_free(&x);
}

/* Copies t into its stage (padding zeros, blocks). The innermost loop is
 * split where the source coordinate enters and leaves the tensor: zeros,
 * a plain copy without checks, zeros. */
static void build_stage(lower_gen *g, int t, bool use_openmp, lowered_node *parent)
{
    const rlt_tensor *tensor = &g->op->tensors[t];
    const rlt_layout *l = &g->n->layouts[t];
    int np = g->n_phys[t], last = np - 1;
    const int64_t *pd = g->phys_dims[t];
    lowered_node *stage = lowered_add(g, parent, LOWERED_STAGE, &g->at);
    stage->tensor = t;
    rlt_str desc;
    rlt_str_init(&desc);
    for (int d = 0; d < np; d++) rlt_str_printf(&desc, "[%" PRId64 "]", pd[d]);
    rlt_str_printf(&desc, "%s%s", l->is_padded ? " padded" : "", l->n_blocks ? " packed" : "");
    stage->text = lowered_keep_text(g, &desc);
    rlt_str_free(&desc);
    int walk = staging_inner_dim(g, t);
    int n_outer = walk >= 0 ? last : np; /* loops around the body */
    /* The threads split the outermost loop of more than one iteration: a
     * convolution's input stages over its channels, not over a batch of 1
     * (one thread copying a 64x57x57 input while the other waited held
     * conv2d 64->128 s2 at 320 GFLOP/s on two threads, 1.4x one thread). */
    int par = -1;
    for (int d = 0; d < n_outer && use_openmp && par < 0; d++)
        if (pd[d] > 1) par = d;
    /* No unrolling of the copy: clang would unroll these short constant
     * loops whole, around vectorized inner loops, and take seconds (a 7x7
     * conv2d's weights: 17 s instead of 1). */
    lowered_node *body = stage;
    for (int d = 0; d < n_outer; d++) {
        body = lowered_add(g, body, LOWERED_STAGE_LOOP, &g->at);
        body->var = d;
        body->value = pd[d];
        body->flavor = d == par ? LOWERED_PARALLEL : LOWERED_KEEP_ROLLED;
    }
    rlt_str cond, src, dst;
    rlt_str_init(&cond);
    rlt_str_init(&src);
    rlt_str_init(&dst);
    int64_t strides[RLT_MAX_DIMS];
    lower_dims_strides(tensor->dims, tensor->n_dims, strides);
    for (int d = 0; d < tensor->n_dims; d++) {
        add_coord(g, body, t, d, d == walk);
        rlt_str_printf(&src, "%s%c%d * %" PRId64, d ? " + " : "", d == walk ? 'b' : 'c', d, strides[d]);
        if (d == walk) continue;
        rlt_str_printf(&cond, "%sc%d >= 0 && c%d < %" PRId64, cond.len ? " && " : "", d, d, tensor->dims[d]);
    }
    int64_t pstrides[2 * RLT_MAX_DIMS];
    lower_dims_strides(pd, np, pstrides);
    for (int d = 0; d < n_outer; d++) rlt_str_printf(&dst, "%sp%d * %" PRId64, d ? " + " : "", d, pstrides[d]);
    if (!dst.len) rlt_str_append(&dst, "0");
    if (!src.len) rlt_str_append(&src, "0");
    lowered_node *copy = lowered_add(g, body, walk < 0 ? LOWERED_STAGE_ELEMS : LOWERED_STAGE_ROW, &g->at);
    copy->tensor = t;
    copy->text = lowered_keep_text(g, &cond);
    copy->src = lowered_keep_text(g, &src);
    copy->dst = lowered_keep_text(g, &dst);
    if (walk >= 0) {
        copy->var = walk;
        copy->value = pd[last];
        copy->count = tensor->dims[walk];
        copy->stride = strides[walk];
    }
    rlt_str_free(&cond);
    rlt_str_free(&src);
    rlt_str_free(&dst);
}

void lower_build_stages(lower_gen *g, bool is_prestaged, bool use_openmp, lowered_node *parent)
{
    for (int t = 0; t + 1 < g->op->n_tensors; t++)
        if (g->ws_offset[t] >= 0 && lower_is_prestaged(g, t) == is_prestaged) build_stage(g, t, use_openmp, parent);
}
