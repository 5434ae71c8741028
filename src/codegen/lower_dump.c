/*
 * lower_dump.c - the lowered tree (lowered.h) as text, one node a line,
 * indented by its depth: what `rltune show --stage lowered` prints.
 *
 * Entry point (lowered.h): lower_dump_tree. A line names the node and what
 * the C printer needs of it (variable, bound, condition, a staged copy's
 * coordinates and offsets); a statement also shows its expression, its
 * guard and where it stands (vector path, masked lanes, unrolled copies
 * and lanes fixed, bounds or guards known to hold), and under it each load
 * of its expressions with its kind (a masked one with its lanes), in the
 * order they are read, and the output's access.
 * Declarations show as the C will have them: the accumulator tile's, and
 * the temporaries the passes numbered (rlt_tN, rlt_nvN).
 */
#include "codegen/lowered.h"

#include <inttypes.h>

static const char *body_name(lower_body_kind kind)
{
    switch (kind) {
    case LOWER_BODY_MAIN: return "compute";
    case LOWER_BODY_OUT_ZERO: return "zero output";
    case LOWER_BODY_EPILOGUE: return "epilogue";
    case LOWER_BODY_ACC_LOAD: return "reload accumulator";
    case LOWER_BODY_WRITEBACK: return "write back accumulator";
    }
    return "?";
}

static const char *load_name(lower_load_kind kind)
{
    switch (kind) {
    case LOWER_LOAD_SCALAR: return "scalar";
    case LOWER_LOAD_BROADCAST: return "broadcast";
    case LOWER_LOAD_VECTOR: return "vector";
    case LOWER_LOAD_STRIDED: return "strided vector";
    case LOWER_LOAD_WINDOW: return "stride-2 window";
    case LOWER_LOAD_MASKED: return "masked vector";
    case LOWER_LOAD_LANES: return "lane by lane";
    }
    return "?";
}

static const char *out_name(lower_out_kind kind)
{
    switch (kind) {
    case LOWER_OUT_SCALAR: return "scalar";
    case LOWER_OUT_VECTOR: return "vector";
    case LOWER_OUT_MASKED: return "masked vector";
    case LOWER_OUT_LANES: return "lane by lane";
    }
    return "?";
}

/* A statement: its kind, its expression, where it goes, its guard. */
static void dump_stmt(lower_gen *g, const lowered_node *n, rlt_str *s)
{
    const rlt_expr *epi = g->op->epilogue;
    rlt_str_printf(s, "%s", body_name(n->body));
    if (n->body == LOWER_BODY_MAIN && g->acc_depth >= 0) rlt_str_append(s, " into the accumulator");
    if (n->flavor == LOWERED_OMITTED) {
        rlt_str_append(s, ": none, a factor reads outside its tensor");
        return;
    }
    const rlt_expr *e = n->body == LOWER_BODY_MAIN                                   ? g->op->body
                        : n->body == LOWER_BODY_EPILOGUE                             ? epi
                        : n->body == LOWER_BODY_WRITEBACK && g->acc_is_final ? epi
                                                                                     : NULL;
    if (e) {
        rlt_str_append(s, ": ");
        rlt_expr_print(g->op, e, s);
    }
    if (n->temp >= 0) {
        rlt_str_printf(s, " as rlt_t%d, then epilogue: ", n->temp);
        rlt_expr_print(g->op, epi, s);
    }
    if (n->text && n->text[0]) rlt_str_printf(s, " if %s", n->text);
}

/* A load and how it is emitted; a masked one also says its lanes. */
static void dump_load(lower_gen *g, const lowered_node *n, rlt_str *s)
{
    rlt_str_append(s, "load ");
    rlt_expr_print(g->op, n->expr, s);
    rlt_str_printf(s, ": %s", load_name(n->load));
    if (n->load == LOWER_LOAD_MASKED) {
        rlt_str cond, lo, hi;
        rlt_str_init(&cond);
        rlt_str_init(&lo);
        rlt_str_init(&hi);
        lower_load_lanes(g, n->expr, &cond, &lo, &hi);
        rlt_str_printf(s, ", lanes [%s, %s)", lower_text_of(g, &lo), lower_text_of(g, &hi));
        if (cond.len) rlt_str_printf(s, " if %s", lower_text_of(g, &cond));
        lower_note_failure(g, &cond);
        rlt_str_free(&cond);
        rlt_str_free(&lo);
        rlt_str_free(&hi);
    }
    if (n->hoisted) rlt_str_append(s, ", bounds checked by the statement");
}

/* Where a statement stands: " (vector, masked, i_i=1, loads in bounds)". */
static void dump_where(const lower_gen *g, const lower_cursor *at, rlt_str *s)
{
    rlt_str w;
    rlt_str_init(&w);
    if (at->in_vector) rlt_str_append(&w, ", vector");
    if (at->is_masked) rlt_str_append(&w, ", masked");
    for (int v = 0; v < g->n->n_vars; v++)
        if (at->is_fixed[v]) rlt_str_printf(&w, ", %s=%" PRId64, g->cname[v], at->fixed[v]);
    if (at->is_bounds_known) rlt_str_append(&w, ", loads in bounds");
    bool any_known = false;
    for (int k = 0; k < g->n_guards; k++) any_known |= at->is_guard_known[k];
    if (any_known) rlt_str_append(&w, ", guards known");
    if (at->slow_depth > 0) rlt_str_append(&w, ", guarded copy");
    if (w.has_failed) s->has_failed = true;
    else if (w.len) rlt_str_printf(s, " (%s)", w.data + 2);
    rlt_str_free(&w);
}

static void dump_node(lower_gen *g, const lowered_node *n, int depth, const char *label, rlt_str *s)
{
    if (n->kind == LOWERED_EXPR) {
        /* an operation: the statement's line shows the expression, and the
         * loads under it list at its depth */
        for (const lowered_node *c = n->first; c; c = c->next) dump_node(g, c, depth, NULL, s);
        return;
    }
    rlt_str_indent(s, depth);
    if (n->kind == LOWERED_SEQ) rlt_str_printf(s, "%s:", label ? label : "block");
    else if (label) rlt_str_printf(s, "%s: ", label);
    const char *name = n->var >= 0 ? g->cname[n->var] : "";
    lower_cursor_load(g, &n->at);
    switch (n->kind) {
    case LOWERED_SEQ:
        break;
    case LOWERED_LOOP:
        rlt_str_printf(s, "for %s < %" PRId64, name, g->n->vars[n->var].extent);
        if (n->flavor == LOWERED_PARALLEL && n->n_threads > 0) rlt_str_printf(s, " parallel, %d threads", n->n_threads);
        else if (n->flavor == LOWERED_PARALLEL) rlt_str_append(s, " parallel");
        else if (n->flavor == LOWERED_KEEP_ROLLED) rlt_str_append(s, " kept rolled");
        break;
    case LOWERED_COPY:
        rlt_str_printf(s, "copy %s = %" PRId64, name, n->value);
        break;
    case LOWERED_DERIVED: {
        int f = g->derived_from[n->var];
        const rlt_var *fv = &g->n->vars[f];
        rlt_str_printf(s, "derive %s = (", name);
        lower_lin_print(g, &g->value[f], s);
        rlt_str_printf(s, ") %c %" PRId64, fv->fused_outer == n->var ? '/' : '%', g->n->vars[fv->fused_inner].extent);
        break;
    }
    case LOWERED_GUARD:
        rlt_str_printf(s, "guard %s < %" PRId64, n->text, n->value);
        break;
    case LOWERED_VERSION:
        rlt_str_printf(s, "version on %s: %s", n->flavor == LOWERED_BY_BOUNDS ? "load bounds" : "guards", n->text);
        break;
    case LOWERED_VECTOR:
        rlt_str_printf(s, "vector %s x%d", name, g->vec_width);
        if (n->flavor == LOWERED_SCALAR_ONLY) rlt_str_append(s, ", lanes only");
        else if (n->flavor == LOWERED_NO_WHOLE) rlt_str_append(s, ", no whole vector");
        if (n->text[0]) rlt_str_printf(s, ", whole where %s", n->text);
        break;
    case LOWERED_PARTIAL:
        rlt_str_printf(s, "partial vector of rlt_nv%d = %s lanes", n->temp, n->text);
        break;
    case LOWERED_LANES:
        rlt_str_printf(s, "lanes %s < %d%s", name, g->vec_width, n->flavor == LOWERED_KEEP_ROLLED ? " kept rolled" : "");
        break;
    case LOWERED_ACC:
        rlt_str_append(s, "accumulator tile: ");
        lowered_decl_print(n->decl, s);
        break;
    case LOWERED_PLAN:
        rlt_str_printf(s, "plan: %s", n->text);
        break;
    case LOWERED_TRANSPOSE:
        rlt_str_printf(s, "transposed %s along %s, output stride %" PRId64, body_name(n->body), name, n->value);
        break;
    case LOWERED_RUN:
        rlt_str_printf(s, "run %s = %" PRId64 "..%" PRId64 " in %d vectors at [%s]", name, n->value,
                       n->value + n->count - 1, n->n_vecs, n->text);
        if (n->temp >= 0) rlt_str_printf(s, " through rlt_t%d", n->temp);
        break;
    case LOWERED_RUN_LANE:
        rlt_str_printf(s, "column %s = %" PRId64, name, n->at.fixed[n->var]);
        break;
    case LOWERED_STMT:
        dump_stmt(g, n, s);
        dump_where(g, &n->at, s);
        break;
    case LOWERED_EXPR: /* listed as its loads (above) */
        break;
    case LOWERED_LOAD:
        dump_load(g, n, s);
        break;
    case LOWERED_OUTPUT:
        rlt_str_printf(s, "output %s: %s", g->op->tensors[g->op->n_tensors - 1].name, out_name(n->out));
        if (n->temp >= 0) rlt_str_printf(s, " through rlt_t%d", n->temp);
        break;
    case LOWERED_STAGE:
        rlt_str_printf(s, "stage %s into %s_s%s", g->op->tensors[n->tensor].name, g->tname[n->tensor], n->text);
        break;
    case LOWERED_STAGE_LOOP:
        rlt_str_printf(s, "for p%d < %" PRId64 "%s", n->var, n->value,
                       n->flavor == LOWERED_PARALLEL ? " parallel" : " kept rolled");
        break;
    case LOWERED_STAGE_COORD:
        rlt_str_printf(s, "%s %c%d = %s", n->flavor == LOWERED_BASE ? "row base" : "coordinate",
                       n->flavor == LOWERED_BASE ? 'b' : 'c', n->var, n->text);
        break;
    case LOWERED_STAGE_ELEMS:
        rlt_str_printf(s, "copy %s_s[%s] = %s[%s] where %s, else 0", g->tname[n->tensor], n->dst, g->tname[n->tensor],
                       n->src, n->text);
        break;
    case LOWERED_STAGE_ROW: {
        int p = g->n_phys[n->tensor] - 1;
        rlt_str_printf(s, "copy row %s_s[%s + p%d] = %s[%s + p%d * %" PRId64 "], p%d < %" PRId64
                       ", where 0 <= b%d + p%d < %" PRId64 "%s%s, else 0", g->tname[n->tensor], n->dst, p,
                       g->tname[n->tensor], n->src, p, n->stride, p, n->value, n->var, p, n->count,
                       n->text[0] ? " and " : "", n->text);
        break;
    }
    }
    rlt_str_append(s, "\n");
    bool has_loads = n->kind == LOWERED_STMT || n->kind == LOWERED_RUN_LANE;
    if (has_loads) lower_stmt_enter(g, n);
    int i = 0;
    for (const lowered_node *c = n->first; c; c = c->next, i++) {
        const char *sub = NULL;
        if (n->kind == LOWERED_VERSION && n->flavor == LOWERED_BY_BOUNDS) sub = i == 0 ? "in bounds" : "at the border";
        else if (n->kind == LOWERED_VERSION) sub = i == 0 ? "fast copy" : "guarded copy";
        else if (n->kind == LOWERED_VECTOR && c->kind == LOWERED_SEQ) sub = "whole vectors";
        dump_node(g, c, depth + 1, sub, s);
    }
    if (has_loads) lower_stmt_leave(g);
}

void lower_dump_tree(lower_gen *g, const lowered_node *root, const char *label, rlt_str *s)
{
    if (label) {
        dump_node(g, root, 0, label, s);
        return;
    }
    for (const lowered_node *c = root->first; c; c = c->next) dump_node(g, c, 0, NULL, s);
}
