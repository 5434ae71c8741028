/*
 * nest.c - the loop-nest IR: the default nest of an op, lookups, the
 * invariants every scheduled nest keeps (rlt_nest_check), the readable loop
 * tree (rlt_nest_print) and the structural hash.
 */
#include "ir/ir.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void rlt_nest_init(rlt_nest *nest, const rlt_op *op)
{
    memset(nest, 0, sizeof *nest);
    nest->op = op;
    nest->acc_var = RLT_ACC_NONE;
    for (int a = 0; a < op->n_axes; a++) {
        rlt_var *v = &nest->vars[a];
        snprintf(v->name, sizeof v->name, "%s", op->axes[a].name);
        v->extent = op->axes[a].extent;
        v->is_reduce = op->axes[a].is_reduce;
        v->origin = RLT_VAR_AXIS;
        v->axis = a;
        v->parent = v->fused_outer = v->fused_inner = -1;
        nest->loops[a] = (rlt_loop){.var = a, .kind = RLT_LOOP_SERIAL};
    }
    nest->n_vars = op->n_axes;
    nest->n_loops = op->n_axes;
}

int rlt_nest_find_loop(const rlt_nest *nest, const char *name)
{
    for (int l = 0; l < nest->n_loops; l++)
        if (strcmp(nest->vars[nest->loops[l].var].name, name) == 0) return l;
    return -1;
}

int rlt_nest_loop_of_var(const rlt_nest *nest, int var)
{
    for (int l = 0; l < nest->n_loops; l++)
        if (nest->loops[l].var == var) return l;
    return -1;
}

int rlt_nest_var_axis(const rlt_nest *nest, int var)
{
    while (nest->vars[var].origin == RLT_VAR_SPLIT_OUTER || nest->vars[var].origin == RLT_VAR_SPLIT_INNER)
        var = nest->vars[var].parent;
    return nest->vars[var].origin == RLT_VAR_AXIS ? nest->vars[var].axis : -1;
}

bool rlt_layout_is_staged(const rlt_layout *layout) { return layout->is_padded || layout->n_blocks > 0; }

void rlt_nest_var_children(const rlt_nest *nest, int var, int *split_outer, int *split_inner, int *fused)
{
    *split_outer = *split_inner = *fused = -1;
    for (int v = 0; v < nest->n_vars; v++) {
        const rlt_var *x = &nest->vars[v];
        if (x->origin == RLT_VAR_SPLIT_OUTER && x->parent == var) *split_outer = v;
        if (x->origin == RLT_VAR_SPLIT_INNER && x->parent == var) *split_inner = v;
        if (x->origin == RLT_VAR_FUSED && (x->fused_outer == var || x->fused_inner == var)) *fused = v;
    }
}

bool rlt_nest_var_has_tail(const rlt_nest *nest, int var)
{
    int outer, inner, fused;
    rlt_nest_var_children(nest, var, &outer, &inner, &fused);
    if (outer < 0) return false;
    return nest->vars[outer].extent * nest->vars[inner].extent != nest->vars[var].extent;
}

int rlt_layout_physical_dims(const rlt_nest *nest, int t, int64_t dims[2 * RLT_MAX_DIMS],
                             int outer_pos[RLT_MAX_DIMS], int inner_pos[RLT_MAX_DIMS])
{
    const rlt_tensor *tensor = &nest->op->tensors[t];
    const rlt_layout *l = &nest->layouts[t];
    int block_of[RLT_MAX_DIMS];
    for (int d = 0; d < RLT_MAX_DIMS; d++) block_of[d] = -1;
    for (int b = 0; b < l->n_blocks; b++) block_of[l->block_dim[b]] = b;
    int n = 0;
    for (int b = 0; b < l->n_blocks; b++) {
        int d = l->block_dim[b];
        int64_t padded = tensor->dims[d] + l->pad_lo[d] + l->pad_hi[d];
        if (outer_pos) outer_pos[d] = n;
        dims[n++] = (padded + l->block[b] - 1) / l->block[b];
    }
    for (int d = 0; d < tensor->n_dims; d++) {
        if (block_of[d] >= 0) continue;
        if (outer_pos) outer_pos[d] = n;
        if (inner_pos) inner_pos[d] = -1;
        dims[n++] = tensor->dims[d] + l->pad_lo[d] + l->pad_hi[d];
    }
    for (int b = 0; b < l->n_blocks; b++) {
        if (inner_pos) inner_pos[l->block_dim[b]] = n;
        dims[n++] = l->block[b];
    }
    return n;
}

/* ---- invariants --------------------------------------------------------- */

static const char *loop_name(const rlt_nest *nest, int l) { return nest->vars[nest->loops[l].var].name; }

/* Loop position where the accumulator is declared: loops at this position
 * and below form its tile. -1 when there is no cache_write. */
static int acc_depth(const rlt_nest *nest)
{
    if (nest->acc_var == RLT_ACC_NONE) return -1;
    if (nest->acc_var == RLT_ACC_ROOT) return 0;
    int l = rlt_nest_loop_of_var(nest, nest->acc_var);
    return l < 0 ? -1 : l + 1;
}

rlt_status rlt_nest_check(const rlt_nest *nest, rlt_diag *diag)
{
    int parallel_at = -1;
    int64_t unroll_product = 1;
    for (int l = 0; l < nest->n_loops; l++) {
        const rlt_loop *loop = &nest->loops[l];
        const rlt_var *v = &nest->vars[loop->var];
        switch (loop->kind) {
        case RLT_LOOP_SERIAL:
            break;
        case RLT_LOOP_PARALLEL:
            if (v->is_reduce)
                return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                                "parallel loop '%s' is a reduction: its iterations would race on the "
                                "same output elements; make a spatial loop parallel",
                                v->name);
            if (parallel_at >= 0)
                return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                                "loops '%s' and '%s' are both parallel: only one loop may be "
                                "(fuse them first to parallelise both)",
                                loop_name(nest, parallel_at), v->name);
            parallel_at = l;
            break;
        case RLT_LOOP_UNROLL:
            if (v->extent > RLT_MAX_UNROLL_EXTENT)
                return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                                "unrolled loop '%s' has extent %" PRId64 ", more than %d: split it first",
                                v->name, v->extent, RLT_MAX_UNROLL_EXTENT);
            unroll_product *= v->extent;
            if (unroll_product > RLT_MAX_UNROLL_PRODUCT)
                return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                                "unrolling '%s' makes %" PRId64 " copies of the loop body, more than %d",
                                v->name, unroll_product, RLT_MAX_UNROLL_PRODUCT);
            break;
        case RLT_LOOP_VECTORIZE:
            if (v->is_reduce)
                return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                                "vectorized loop '%s' is a reduction: vectorize a spatial loop", v->name);
            if (l != nest->n_loops - 1)
                return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                                "vectorized loop '%s' must be innermost, but '%s' is inside it", v->name,
                                loop_name(nest, l + 1));
            if (v->extent < 2 || v->extent > RLT_MAX_VECTOR_FLOATS || (v->extent & (v->extent - 1)) != 0)
                return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                                "vectorized loop '%s' has extent %" PRId64
                                ": the vector width must be a power of two from 2 to %d (split it first)",
                                v->name, v->extent, RLT_MAX_VECTOR_FLOATS);
            break;
        }
        if (loop->n_threads < 0 || loop->n_threads > RLT_MAX_THREADS)
            return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE, "loop '%s': thread count %d outside 0..%d",
                            v->name, loop->n_threads, RLT_MAX_THREADS);
    }
    if (nest->acc_var != RLT_ACC_NONE) {
        int depth = acc_depth(nest);
        if (depth < 0)
            return rlt_fail(diag, RLT_STATUS_INTERNAL, "cache_write refers to variable %d, which is not a loop",
                            nest->acc_var);
        int64_t tile = 1;
        for (int l = depth; l < nest->n_loops; l++)
            if (!nest->vars[nest->loops[l].var].is_reduce) tile *= nest->vars[nest->loops[l].var].extent;
        if (tile > RLT_MAX_ACC_FLOATS)
            return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                            "the cache_write accumulator at '%s' would hold %" PRId64
                            " floats, more than %d: move it inward or tile the spatial loops inside it",
                            depth == 0 ? "root" : loop_name(nest, depth - 1), tile, RLT_MAX_ACC_FLOATS);
        int last = nest->n_loops - 1;
        if (last >= 0 && last < depth && nest->loops[last].kind == RLT_LOOP_VECTORIZE)
            return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                            "the cache_write accumulator at '%s' would sit inside the vectorized loop '%s': "
                            "put it at an outer loop so the vector lanes form part of the tile",
                            loop_name(nest, depth - 1), loop_name(nest, last));
        if (parallel_at >= depth)
            return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                            "parallel loop '%s' is inside the cache_write accumulator at '%s': the threads "
                            "would share it; put the accumulator inside the parallel loop",
                            loop_name(nest, parallel_at), depth == 0 ? "root" : loop_name(nest, depth - 1));
    }
    return RLT_STATUS_OK;
}

/* ---- printing ----------------------------------------------------------- */

static void print_layout(const rlt_nest *nest, int t, rlt_str *out)
{
    const rlt_tensor *tensor = &nest->op->tensors[t];
    const rlt_layout *l = &nest->layouts[t];
    int64_t dims[2 * RLT_MAX_DIMS];
    int n = rlt_layout_physical_dims(nest, t, dims, NULL, NULL);
    rlt_str_printf(out, "stage %s -> %s_s[", tensor->name, tensor->name);
    for (int d = 0; d < n; d++) rlt_str_printf(out, "%s%" PRId64, d ? "][" : "", dims[d]);
    rlt_str_append(out, "]");
    if (l->is_padded) {
        rlt_str_append(out, "  pad");
        for (int d = 0; d < tensor->n_dims; d++)
            rlt_str_printf(out, " %" PRId64 "/%" PRId64, l->pad_lo[d], l->pad_hi[d]);
    }
    if (l->n_blocks) {
        rlt_str_append(out, "  pack");
        for (int b = 0; b < l->n_blocks; b++)
            rlt_str_printf(out, " dim%d/%" PRId64, l->block_dim[b], l->block[b]);
    }
    rlt_str_append(out, "\n");
}

static void print_acc(const rlt_nest *nest, int depth, int indent, rlt_str *out)
{
    rlt_str_indent(out, indent);
    rlt_str_printf(out, "acc %s[", nest->op->tensors[nest->op->n_tensors - 1].name);
    bool first = true;
    for (int l = depth; l < nest->n_loops; l++) {
        const rlt_var *v = &nest->vars[nest->loops[l].var];
        if (v->is_reduce) continue;
        rlt_str_printf(out, "%s%s=%" PRId64, first ? "" : ", ", v->name, v->extent);
        first = false;
    }
    rlt_str_append(out, "]   (cache_write)\n");
}

/* The loop variable that carries variable v's range: v while it is a loop,
 * else (followed down) the outer half of its split or the variable it was
 * fused into. -1 if there is none (cannot happen in a valid nest). */
static int loop_var_of(const rlt_nest *nest, int v)
{
    while (v >= 0 && rlt_nest_loop_of_var(nest, v) < 0) {
        int outer, inner, fused;
        rlt_nest_var_children(nest, v, &outer, &inner, &fused);
        v = outer >= 0 ? outer : fused;
    }
    return v;
}

void rlt_nest_print(const rlt_nest *nest, rlt_str *out)
{
    const rlt_op *op = nest->op;
    for (int t = 0; t + 1 < op->n_tensors; t++)
        if (rlt_layout_is_staged(&nest->layouts[t])) print_layout(nest, t, out);
    int acc_at = acc_depth(nest);
    int indent = 0;
    for (int l = 0; l < nest->n_loops; l++, indent++) {
        if (l == acc_at) print_acc(nest, l, indent, out);
        const rlt_loop *loop = &nest->loops[l];
        const rlt_var *v = &nest->vars[loop->var];
        static const char *const kinds[] = {"for", "unroll", "vectorize", "parallel"};
        rlt_str_indent(out, indent);
        rlt_str_printf(out, "%s %s in 0..%" PRId64, kinds[loop->kind], v->name, v->extent);
        if (loop->kind == RLT_LOOP_PARALLEL) {
            if (loop->n_threads)
                rlt_str_printf(out, " threads=%d", loop->n_threads);
            else
                rlt_str_append(out, " threads=run-time");
        }
        /* Say which variables this loop's range overruns and so guards: the
         * outer half of a split with a tail, or what that half became after
         * further splits and fuses. */
        for (int p = 0; p < nest->n_vars; p++) {
            int o, i, f;
            rlt_nest_var_children(nest, p, &o, &i, &f);
            if (o >= 0 && rlt_nest_var_has_tail(nest, p) && loop_var_of(nest, o) == loop->var)
                rlt_str_printf(out, "  (tail: %s < %" PRId64 ")", nest->vars[p].name, nest->vars[p].extent);
        }
        if (v->is_reduce) rlt_str_append(out, "  reduce");
        rlt_str_append(out, "\n");
    }
    if (acc_at == nest->n_loops) print_acc(nest, acc_at, indent, out);
    rlt_str_indent(out, indent);
    const rlt_tensor *o = &op->tensors[op->n_tensors - 1];
    rlt_str_printf(out, "%s[", o->name);
    for (int a = 0; a < op->n_spatial; a++) rlt_str_printf(out, "%s%s", a ? "," : "", op->axes[a].name);
    rlt_str_append(out, op->n_spatial < op->n_axes ? "] += " : "] = ");
    rlt_expr_print(op, op->body, out);
    rlt_str_append(out, "\n");
    if (op->epilogue) {
        rlt_str_printf(out, "then %s[...] = ", o->name);
        rlt_expr_print(op, op->epilogue, out);
        rlt_str_append(out, "\n");
    }
}

/* ---- structural hash ---------------------------------------------------- */

uint64_t rlt_nest_hash(const rlt_nest *nest)
{
    uint64_t h = rlt_hash_str(RLT_HASH_SEED, nest->op->spec);
    for (int v = 0; v < nest->n_vars; v++) {
        const rlt_var *x = &nest->vars[v];
        int64_t fields[] = {x->extent, x->is_reduce, x->origin, x->axis, x->parent, x->factor,
                            x->fused_outer, x->fused_inner};
        h = rlt_hash_bytes(h, fields, sizeof fields);
    }
    for (int l = 0; l < nest->n_loops; l++) {
        int64_t fields[] = {nest->loops[l].var, nest->loops[l].kind, nest->loops[l].n_threads};
        h = rlt_hash_bytes(h, fields, sizeof fields);
    }
    int64_t acc = nest->acc_var;
    h = rlt_hash_bytes(h, &acc, sizeof acc);
    for (int t = 0; t < nest->op->n_tensors; t++) {
        const rlt_layout *l = &nest->layouts[t];
        int64_t fields[2 + 4 * RLT_MAX_DIMS] = {l->is_padded, l->n_blocks};
        for (int d = 0; d < RLT_MAX_DIMS; d++) {
            fields[2 + 4 * d] = l->pad_lo[d];
            fields[3 + 4 * d] = l->pad_hi[d];
            fields[4 + 4 * d] = d < l->n_blocks ? l->block_dim[d] : -1;
            fields[5 + 4 * d] = d < l->n_blocks ? l->block[d] : 0;
        }
        h = rlt_hash_bytes(h, fields, sizeof fields);
    }
    return h;
}
