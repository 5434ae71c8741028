/*
 * lower_print.c - prints the lowered tree (lowered.h) as C.
 *
 * Entry point (lowered.h): lower_print_tree, which writes a tree's staged
 * copies, loops, guards, versions, vector loops, unrolled copies,
 * accumulator tiles and transposed write-backs to the kernel's text, and
 * the statements at its leaves: their expressions from their nodes, each
 * load and output access as its node says (lower_stmt.c chose them),
 * through the access layer (lower_load.c, lower_access.c).
 *
 * Before a node prints anything that depends on where it stands, the
 * printer loads the node's cursor (lower_cursor_load: g->at, which says
 * the lane count of the enclosing partial vector too, lower_mask_nv). What it declares, the
 * nodes say: the accumulator tile (its decl) and the temporaries (rlt_tN,
 * rlt_nvN), numbered by the passes.
 */
#include "codegen/lowered.h"

#include <inttypes.h>
#include <string.h>

/* ---- expressions -------------------------------------------------------- */

/* A float literal C accepts: "2.0f", "0.5f", "1e+30f". */
static void print_float(double x, rlt_str *s)
{
    char buf[48];
    snprintf(buf, sizeof buf, "%.9g", x);
    bool has_point = strpbrk(buf, ".eEn") != NULL; /* n: inf / nan cannot come from the parser */
    rlt_str_printf(s, "%s%sf", buf, has_point ? "" : ".0");
}

/* Appends the expression under e (an EXPR or LOAD node) as C: a scalar or,
 * in the vector path, a vector, each load as its node says; acc_text
 * stands for the reduction's value (ACC) in an epilogue. */
static void print_expr(lower_gen *g, const lowered_node *e, const char *acc_text, rlt_str *s)
{
    if (e->kind == LOWERED_LOAD) {
        lower_emit_load(g, e->expr, e->load, s);
        return;
    }
    int w = g->vec_width;
    bool vec = g->at.in_vector;
    const lowered_node *a = e->first, *b = a ? a->next : NULL;
    switch (e->op) {
    case RLT_EXPR_CONST:
        if (vec) rlt_str_printf(s, "rlt_splat%d(", w);
        print_float(e->constant, s);
        if (vec) rlt_str_append(s, ")");
        return;
    case RLT_EXPR_ACC:
        rlt_str_append(s, acc_text);
        return;
    case RLT_EXPR_LOAD:
        break;
    case RLT_EXPR_NEG:
        rlt_str_append(s, "(-");
        print_expr(g, a, acc_text, s);
        rlt_str_append(s, ")");
        return;
    case RLT_EXPR_RELU:
        if (vec) rlt_str_printf(s, "rlt_max%d(", w);
        else rlt_str_append(s, "rlt_maxf(");
        print_expr(g, a, acc_text, s);
        if (vec) rlt_str_printf(s, ", rlt_splat%d(0.0f))", w);
        else rlt_str_append(s, ", 0.0f)");
        return;
    case RLT_EXPR_MAX:
    case RLT_EXPR_MIN:
        if (vec) rlt_str_printf(s, "rlt_%s%d(", e->op == RLT_EXPR_MAX ? "max" : "min", w);
        else rlt_str_printf(s, "rlt_%sf(", e->op == RLT_EXPR_MAX ? "max" : "min");
        print_expr(g, a, acc_text, s);
        rlt_str_append(s, ", ");
        print_expr(g, b, acc_text, s);
        rlt_str_append(s, ")");
        return;
    case RLT_EXPR_ADD:
    case RLT_EXPR_SUB:
    case RLT_EXPR_MUL:
        rlt_str_append(s, "(");
        print_expr(g, a, acc_text, s);
        rlt_str_append(s, e->op == RLT_EXPR_ADD ? " + " : e->op == RLT_EXPR_SUB ? " - " : " * ");
        print_expr(g, b, acc_text, s);
        rlt_str_append(s, ")");
        return;
    }
    RLT_ASSERT(!"not an operation");
}

/* ---- statements --------------------------------------------------------- */

/* The statement at the bottom of a plan, of the given kind, at the current
 * point: lanes, unrolled copies and guards as the loops above left them;
 * its expressions, loads and output access as the statement pass built
 * them. */
static void print_stmt(lower_gen *g, const lowered_node *n, int indent)
{
    lower_body_kind kind = n->body;
    lower_out_kind out = LOWER_OUT_SCALAR;
    int out_temp = -1;
    const lowered_node *body = NULL, *epi = NULL; /* the value's expression, the epilogue's */
    for (const lowered_node *c = n->first; c; c = c->next) {
        if (c->kind == LOWERED_OUTPUT) {
            out = c->out;
            out_temp = c->temp;
        } else if (kind == LOWER_BODY_MAIN && !body) {
            body = c;
        } else {
            epi = c;
        }
    }
    lower_stmt_enter(g, n);
    rlt_str value, ref;
    rlt_str_init(&value);
    rlt_str_init(&ref);
    bool has_reduction = g->r0 < g->n->n_loops;
    bool has_guard = n->text && n->text[0];
    switch (kind) {
    case LOWER_BODY_MAIN:
        if (n->flavor == LOWERED_OMITTED) break; /* a zero term */
        if (has_guard) lower_out(g, indent++, "if (%s) {\n", n->text);
        print_expr(g, body, "", &value);
        if (g->acc_depth >= 0) {
            lower_acc_ref(g, &ref);
            lower_out(g, indent, "%s %s= %s;\n", lower_text_of(g, &ref), has_reduction ? "+" : "",
                      lower_text_of(g, &value));
        } else if (has_reduction) {
            lower_out_value(g, out, &ref);
            rlt_str sum;
            rlt_str_init(&sum);
            rlt_str_printf(&sum, "%s + %s", lower_text_of(g, &ref), lower_text_of(g, &value));
            lower_store_out(g, indent, out, out_temp, lower_text_of(g, &sum));
            rlt_str_free(&sum);
        } else if (epi) {
            char name[32];
            snprintf(name, sizeof name, "rlt_t%d", n->temp);
            lower_out(g, indent, "{\n");
            if (g->at.in_vector)
                lower_out(g, indent + 1, "rlt_v%d %s = %s;\n", g->vec_width, name, lower_text_of(g, &value));
            else lower_out(g, indent + 1, "float %s = %s;\n", name, lower_text_of(g, &value));
            rlt_str_clear(&value);
            print_expr(g, epi, name, &value);
            lower_store_out(g, indent + 1, out, out_temp, lower_text_of(g, &value));
            lower_out(g, indent, "}\n");
        } else {
            lower_store_out(g, indent, out, out_temp, lower_text_of(g, &value));
        }
        if (has_guard) lower_out(g, --indent, "}\n");
        break;
    case LOWER_BODY_OUT_ZERO:
        if (g->at.in_vector) rlt_str_printf(&value, "rlt_splat%d(0.0f)", g->vec_width);
        else rlt_str_append(&value, "0.0f");
        lower_store_out(g, indent, out, out_temp, lower_text_of(g, &value));
        break;
    case LOWER_BODY_EPILOGUE:
        lower_out_value(g, out, &ref);
        print_expr(g, epi, lower_text_of(g, &ref), &value);
        lower_store_out(g, indent, out, out_temp, lower_text_of(g, &value));
        break;
    case LOWER_BODY_ACC_LOAD:
        lower_acc_ref(g, &ref);
        lower_out_value(g, out, &value);
        lower_out(g, indent, "%s = %s;\n", lower_text_of(g, &ref), lower_text_of(g, &value));
        break;
    case LOWER_BODY_WRITEBACK:
        lower_acc_ref(g, &ref);
        if (epi) print_expr(g, epi, lower_text_of(g, &ref), &value);
        else rlt_str_append(&value, lower_text_of(g, &ref));
        lower_store_out(g, indent, out, out_temp, lower_text_of(g, &value));
        break;
    }
    lower_stmt_leave(g);
    rlt_str_free(&value);
    rlt_str_free(&ref);
}

/* The accumulator tile's declaration, as its node says. */
static void print_acc_decl(lower_gen *g, const lowered_decl *d, int indent)
{
    rlt_str text;
    rlt_str_init(&text);
    lowered_decl_print(d, &text);
    lower_out(g, indent, "%s;\n", lower_text_of(g, &text));
    rlt_str_free(&text);
}

/* ---- nodes -------------------------------------------------------------- */

static void print_node(lower_gen *g, const lowered_node *n, int indent);

static void print_children(lower_gen *g, const lowered_node *n, int indent)
{
    for (const lowered_node *c = n->first; c; c = c->next) print_node(g, c, indent);
}

/* One run of a transposed write-back (rlt_tstoreWxN) or reload
 * (rlt_tloadWxN): a vector a column, the last N - count of them zeros. */
static void print_run(lower_gen *g, const lowered_node *tile, const lowered_node *r, int indent)
{
    bool is_load = tile->body == LOWER_BODY_ACC_LOAD;
    int w = g->vec_width;
    const char *o = g->tname[g->op->n_tensors - 1];
    char n_arg[32] = "";
    if (r->count != r->n_vecs) snprintf(n_arg, sizeof n_arg, ", %" PRId64, r->count);
    lower_out(g, indent, "/* %s = %" PRId64 "..%" PRId64 ", transposed */\n", g->n->vars[r->var].name, r->value,
              r->value + r->count - 1);
    int tmp = r->temp;
    if (is_load) {
        lower_out(g, indent, "{\n");
        lower_out(g, indent + 1, "rlt_v%dx%d rlt_t%d = rlt_tload%dx%d%s(&%s[%s], %" PRId64 "%s);\n", w, r->n_vecs,
                  tmp, w, r->n_vecs, n_arg[0] ? "n" : "", o, r->text, tile->value, n_arg);
    } else {
        lower_out(g, indent, "rlt_tstore%dx%d%s(&%s[%s], %" PRId64 "%s", w, r->n_vecs, n_arg[0] ? "n" : "", o,
                  r->text, tile->value, n_arg);
    }
    rlt_str ref, value;
    rlt_str_init(&ref);
    rlt_str_init(&value);
    for (const lowered_node *c = r->first; c; c = c->next) {
        lower_cursor_load(g, &c->at);
        lower_stmt_enter(g, c);
        rlt_str_clear(&ref);
        rlt_str_clear(&value);
        lower_acc_ref(g, &ref);
        if (is_load) {
            lower_out(g, indent + 1, "%s = rlt_t%d.v[%" PRId64 "];\n", lower_text_of(g, &ref), tmp,
                      c->at.fixed[c->var] - r->value);
            lower_stmt_leave(g);
            continue;
        }
        if (c->first) print_expr(g, c->first, lower_text_of(g, &ref), &value); /* the epilogue */
        else rlt_str_append(&value, lower_text_of(g, &ref));
        lower_out(g, 0, ", %s", lower_text_of(g, &value));
        lower_stmt_leave(g);
    }
    for (int64_t e = r->count; e < r->n_vecs && !is_load; e++) lower_out(g, 0, ", rlt_splat%d(0.0f)", w);
    lower_out(g, is_load ? indent : 0, is_load ? "}\n" : ");\n");
    lower_note_failure(g, &ref);
    lower_note_failure(g, &value);
    rlt_str_free(&ref);
    rlt_str_free(&value);
}

/* ---- staged copies ------------------------------------------------------ */

/* The copy of a stage's body: element by element under its condition, or a
 * row split where the source enters and leaves the tensor. */
static void print_stage_copy(lower_gen *g, const lowered_node *c, int in)
{
    const char *t = g->tname[c->tensor];
    if (c->kind == LOWERED_STAGE_ELEMS) {
        lower_out(g, in, "%s_s[%s] = (%s) ? %s[%s] : 0.0f;\n", t, c->dst, c->text, t, c->src);
        return;
    }
    /* p_last copies where 0 <= b + p_last < dim, and the other dims are in range */
    int64_t n_last = c->value, dim = c->count;
    lower_out(g, in, "long rlt_lo = 0, rlt_hi = 0;\n");
    if (c->text[0]) lower_out(g, in, "if (%s) {\n", c->text);
    else lower_out(g, in, "{\n");
    /* rlt_lo = clamp(-b, 0, n_last); rlt_hi = clamp(dim - b, rlt_lo, n_last) */
    char b[16], p[16];
    snprintf(b, sizeof b, "b%d", c->var);
    snprintf(p, sizeof p, "p%d", g->n_phys[c->tensor] - 1);
    lower_out(g, in + 1, "rlt_lo = -%s < 0 ? 0 : -%s > %" PRId64 " ? %" PRId64 " : -%s;\n", b, b, n_last, n_last, b);
    lower_out(g, in + 1, "rlt_hi = %" PRId64 " - %s < rlt_lo ? rlt_lo : %" PRId64 " - %s > %" PRId64 " ? %" PRId64
        " : %" PRId64 " - %s;\n", dim, b, dim, b, n_last, n_last, dim, b);
    lower_out(g, in, "}\n");
    lower_out(g, in, "float *restrict rlt_dst = %s_s + %s;\n", t, c->dst);
    lower_out(g, in, "long rlt_src = %s;\n", c->src);
    lower_out(g, in, "#pragma GCC unroll 1\n");
    lower_out(g, in, "for (long %s = 0; %s < rlt_lo; %s++) rlt_dst[%s] = 0.0f;\n", p, p, p, p);
    lower_out(g, in, "#pragma GCC unroll 1\n");
    lower_out(g, in, "for (long %s = rlt_lo; %s < rlt_hi; %s++) rlt_dst[%s] = %s[rlt_src + %s * %" PRId64 "];\n", p, p,
              p, p, t, p, c->stride);
    lower_out(g, in, "#pragma GCC unroll 1\n");
    lower_out(g, in, "for (long %s = rlt_hi; %s < %" PRId64 "; %s++) rlt_dst[%s] = 0.0f;\n", p, p, n_last, p, p);
}

/* A staged copy: its loops, without braces but the innermost's, then the
 * source's coordinates and the copy. */
static void print_stage(lower_gen *g, const lowered_node *n, int indent)
{
    const rlt_tensor *tensor = &g->op->tensors[n->tensor];
    lower_out(g, indent, "/* stage %s into %s_s%s */\n", tensor->name, g->tname[n->tensor], n->text);
    const lowered_node *body = n;
    int depth = 0;
    for (; body->first && body->first->kind == LOWERED_STAGE_LOOP; depth++) {
        const lowered_node *l = body->first;
        if (l->flavor == LOWERED_PARALLEL)
            lower_out(g, indent + depth, "#pragma omp parallel for schedule(static) num_threads(rlt_nthreads)\n");
        else lower_out(g, indent + depth, "#pragma GCC unroll 1\n");
        bool is_innermost = !l->first || l->first->kind != LOWERED_STAGE_LOOP;
        lower_out(g, indent + depth, "for (long p%d = 0; p%d < %" PRId64 "; p%d++)%s\n", l->var, l->var, l->value,
                  l->var, is_innermost ? " {" : "");
        body = l;
    }
    if (depth == 0) lower_out(g, indent, "{\n");
    int in = indent + depth;
    for (const lowered_node *c = body->first; c; c = c->next) {
        if (c->kind == LOWERED_STAGE_COORD)
            lower_out(g, in, "long %c%d = %s;\n", c->flavor == LOWERED_BASE ? 'b' : 'c', c->var, c->text);
        else print_stage_copy(g, c, in);
    }
    lower_out(g, in - 1, "}\n");
}

/* A vector loop: its first child is the whole vectors (unless the flavor
 * says there are none), then its tail, a partial vector or a lane loop. */
static void print_vector(lower_gen *g, const lowered_node *n, int indent)
{
    bool is_vector_ok = n->flavor != LOWERED_SCALAR_ONLY;
    bool has_cond = n->text[0] != '\0';
    const lowered_node *tail = n->first;
    if (is_vector_ok && n->flavor != LOWERED_NO_WHOLE) {
        if (has_cond) lower_out(g, indent, "if (%s) {\n", n->text);
        print_children(g, n->first, has_cond ? indent + 1 : indent);
        if (has_cond) lower_out(g, indent, "} else {\n");
        tail = n->first->next;
    } else if (is_vector_ok) {
        lower_out(g, indent, "{\n"); /* wider than what is left of its axis: no whole vector */
    }
    if (!tail) return;
    if (tail->kind == LOWERED_PARTIAL) {
        /* Its first lanes pass the guards: masked loads and stores for
         * those, the others neither read nor written. */
        lower_out(g, indent + 1, "const long rlt_nv%d = %s;\n", tail->temp, tail->text);
        print_children(g, tail, indent + 1);
        lower_out(g, indent, "}\n");
        return;
    }
    /* Lanes one at a time, each under its guards: the tail. */
    int inner = is_vector_ok ? indent + 1 : indent;
    const char *name = g->cname[tail->var];
    if (tail->flavor == LOWERED_KEEP_ROLLED) lower_out(g, inner, "#pragma GCC unroll 1\n");
    lower_out(g, inner, "for (long %s = 0; %s < %d; %s++) {\n", name, name, g->vec_width, name);
    print_children(g, tail, inner + 1);
    lower_out(g, inner, "}\n");
    if (is_vector_ok) lower_out(g, indent, "}\n");
}

static void print_node(lower_gen *g, const lowered_node *n, int indent)
{
    lower_cursor_load(g, &n->at);
    const char *name = n->var >= 0 ? g->cname[n->var] : "";
    switch (n->kind) {
    case LOWERED_SEQ:
        print_children(g, n, indent);
        return;
    case LOWERED_LOOP:
        if (n->flavor == LOWERED_PARALLEL && n->n_threads > 0)
            lower_out(g, indent, "#pragma omp parallel for schedule(static) num_threads(%d)\n", n->n_threads);
        else if (n->flavor == LOWERED_PARALLEL)
            lower_out(g, indent, "#pragma omp parallel for schedule(static) num_threads(rlt_nthreads)\n");
        else if (n->flavor == LOWERED_KEEP_ROLLED)
            lower_out(g, indent, "#pragma GCC unroll 1\n");
        lower_out(g, indent, "for (long %s = 0; %s < %" PRId64 "; %s++) {\n", name, name,
                  g->n->vars[n->var].extent, name);
        print_children(g, n, indent + 1);
        lower_out(g, indent, "}\n");
        return;
    case LOWERED_COPY:
        lower_out(g, indent, "{ /* %s = %" PRId64 " */\n", g->n->vars[n->var].name, n->value);
        print_children(g, n, indent + 1);
        lower_out(g, indent, "}\n");
        return;
    case LOWERED_DERIVED: {
        int f = g->derived_from[n->var];
        const rlt_var *fv = &g->n->vars[f];
        rlt_str s;
        rlt_str_init(&s);
        lower_lin_print(g, &g->value[f], &s);
        lower_out(g, indent, "const long %s = (%s) %c %" PRId64 ";\n", name, lower_text_of(g, &s),
                  fv->fused_outer == n->var ? '/' : '%', g->n->vars[fv->fused_inner].extent);
        rlt_str_free(&s);
        return;
    }
    case LOWERED_GUARD:
        lower_out(g, indent, "if (%s < %" PRId64 ") {\n", n->text, n->value);
        print_children(g, n, indent + 1);
        lower_out(g, indent, "}\n");
        return;
    case LOWERED_VERSION: {
        bool by_bounds = n->flavor == LOWERED_BY_BOUNDS;
        lower_out(g, indent, "if (%s) { /* %s */\n", n->text,
                  by_bounds ? "the tile's loads are in bounds: no checks" : "whole tile in range: no guards");
        print_node(g, n->first, indent + 1);
        lower_out(g, indent, "} else { /* %s */\n",
                  by_bounds ? "at the border: loads checked" : "the tail: guarded, and loops instead of unrolled copies");
        print_node(g, n->first->next, indent + 1);
        lower_out(g, indent, "}\n");
        return;
    }
    case LOWERED_VECTOR:
        print_vector(g, n, indent);
        return;
    case LOWERED_ACC:
        lower_out(g, indent, "{ /* cache_write: accumulator tile */\n");
        print_acc_decl(g, n->decl, indent + 1);
        print_children(g, n, indent + 1);
        lower_out(g, indent, "}\n");
        return;
    case LOWERED_PLAN:
        lower_out(g, indent, "/* %s */\n", n->text);
        print_children(g, n, indent);
        return;
    case LOWERED_TRANSPOSE:
        for (const lowered_node *c = n->first; c; c = c->next) {
            if (c->kind == LOWERED_RUN) print_run(g, n, c, indent);
            else print_node(g, c, indent);
        }
        return;
    case LOWERED_STMT:
        print_stmt(g, n, indent);
        return;
    case LOWERED_STAGE:
        print_stage(g, n, indent);
        return;
    case LOWERED_EXPR:
    case LOWERED_LOAD:
    case LOWERED_OUTPUT:
    case LOWERED_STAGE_LOOP:
    case LOWERED_STAGE_COORD:
    case LOWERED_STAGE_ELEMS:
    case LOWERED_STAGE_ROW:
    case LOWERED_PARTIAL:
    case LOWERED_LANES:
    case LOWERED_RUN:
    case LOWERED_RUN_LANE:
        RLT_ASSERT(!"printed by its parent");
        return;
    }
}

void lower_print_tree(lower_gen *g, const lowered_node *root, int indent) { print_children(g, root, indent); }
