/*
 * lower_dump.c - the lowered tree (lowered.h) as text, one node a line,
 * indented by its depth: what `rltune show --stage lowered` prints.
 *
 * Entry point (lowered.h): lower_dump_tree. A line names the node and what
 * the C printer needs of it (variable, bound, condition); a statement also
 * says where it stands (vector path, masked lanes, unrolled copies and
 * lanes fixed, bounds or guards known to hold). Temporaries are left out:
 * lower_print.c numbers them as it prints.
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
    rlt_str_indent(s, depth);
    if (n->kind == LOWERED_SEQ) rlt_str_printf(s, "%s:", label ? label : "block");
    else if (label) rlt_str_printf(s, "%s: ", label);
    const char *name = n->var >= 0 ? g->cname[n->var] : "";
    g->at = n->at;
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
        rlt_str_printf(s, "partial vector of %s lanes", n->text);
        break;
    case LOWERED_LANES:
        rlt_str_printf(s, "lanes %s < %d%s", name, g->vec_width, n->flavor == LOWERED_KEEP_ROLLED ? " kept rolled" : "");
        break;
    case LOWERED_ACC:
        rlt_str_append(s, "accumulator tile");
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
        break;
    case LOWERED_RUN_LANE:
        rlt_str_printf(s, "column %s = %" PRId64, name, n->at.fixed[n->var]);
        break;
    case LOWERED_STMT:
        rlt_str_printf(s, "%s", body_name(n->body));
        dump_where(g, &n->at, s);
        break;
    }
    rlt_str_append(s, "\n");
    int i = 0;
    for (const lowered_node *c = n->first; c; c = c->next, i++) {
        const char *sub = NULL;
        if (n->kind == LOWERED_VERSION && n->flavor == LOWERED_BY_BOUNDS) sub = i == 0 ? "in bounds" : "at the border";
        else if (n->kind == LOWERED_VERSION) sub = i == 0 ? "fast copy" : "guarded copy";
        else if (n->kind == LOWERED_VECTOR && c->kind == LOWERED_SEQ) sub = "whole vectors";
        dump_node(g, c, depth + 1, sub, s);
    }
}

void lower_dump_tree(lower_gen *g, const lowered_node *root, rlt_str *s)
{
    for (const lowered_node *c = root->first; c; c = c->next) dump_node(g, c, 0, NULL, s);
}
