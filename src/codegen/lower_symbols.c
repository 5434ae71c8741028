/*
 * lower_symbols.c - the symbols of a nest being lowered, and linear forms
 * over them.
 *
 * Entry points (lower_internal.h): lower_make_cnames (the C name of every
 * tensor and variable) and lower_analyse (each variable's and axis's value
 * as a linear form, the tails' guards and where to version them, the
 * vector loop, the accumulator tile, the staged tensors' workspace), then
 * the helpers every stage uses: lower_out (one line of the kernel),
 * lower_text_of / lower_note_failure (temporary strings), and folding,
 * printing and bounding linear forms (lower_lin_fold, lower_lin_print,
 * lower_lin_range).
 */
#include "codegen/lower_internal.h"

#include <inttypes.h>
#include <string.h>

/* ---- the kernel's text and C names -------------------------------------- */

void lower_out(lower_gen *g, int indent, const char *fmt, ...)
{
    rlt_str_indent(g->s, indent);
    va_list ap;
    va_start(ap, fmt);
    rlt_str_vprintf(g->s, fmt, ap);
    va_end(ap);
}

/* The text of a temporary string. If building it ran out of memory, the
 * kernel's text is marked failed too: rlt_codegen_kernel then reports
 * OUT_OF_MEMORY instead of handing out code with pieces missing. */
void lower_note_failure(const lower_gen *g, const rlt_str *t)
{
    if (t->has_failed) g->s->has_failed = true;
}

const char *lower_text_of(const lower_gen *g, const rlt_str *t)
{
    lower_note_failure(g, t);
    return t->data && !t->has_failed ? t->data : "";
}

/* C keywords, names the generated code uses, and macros that the preamble's
 * headers or the compiler define in gnu11 mode (`linux` and `unix` expand
 * to 1): an axis or tensor called like one of them gets a trailing
 * underscore. */
static bool is_reserved(const char *name)
{
    /* p0, p1, ..., c0, c1, ... and b0, b1, ... are the staging loops'. */
    if ((name[0] == 'p' || name[0] == 'c' || name[0] == 'b') && name[1] >= '0' && name[1] <= '9') {
        const char *d = name + 1;
        while (*d >= '0' && *d <= '9') d++;
        if (*d == '\0') return true;
    }
    static const char *const words[] = {
        "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
        "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return",
        "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void",
        "volatile", "while", "fabs", "memcpy", "memset", "size_t", "main", "abs", "NULL", "bool", "true",
        "false", "errno", "asm", "typeof", "alignof", "offsetof", "linux", "unix", "i386", "NAN", "INFINITY",
        "HUGE", "MAXFLOAT"};
    for (size_t i = 0; i < RLT_ARRAY_LEN(words); i++)
        if (strcmp(words[i], name) == 0) return true;
    return strncmp(name, "rlt_", 4) == 0 || strncmp(name, "RLT_", 4) == 0 || name[0] == '_';
}

void lower_make_cnames(lower_gen *g)
{
    for (int t = 0; t < g->op->n_tensors; t++)
        snprintf(g->tname[t], sizeof g->tname[t], "%s%s", g->op->tensors[t].name,
                 is_reserved(g->op->tensors[t].name) ? "_" : "");
    for (int v = 0; v < g->n->n_vars; v++) {
        char *c = g->cname[v];
        snprintf(c, sizeof g->cname[v], "%s", g->n->vars[v].name);
        for (char *p = c; *p; p++)
            if (*p == '.') *p = '_';
        bool clash = is_reserved(c);
        for (int u = 0; u < v && !clash; u++) clash = strcmp(g->cname[u], c) == 0;
        for (int t = 0; t < g->op->n_tensors && !clash; t++) clash = strcmp(g->tname[t], c) == 0;
        if (clash) {
            size_t len = strlen(c);
            snprintf(c + len, sizeof g->cname[v] - len, "_%d", v);
        }
    }
}

/* ---- analysis ----------------------------------------------------------- */

/* The outer loop of a split whose factor is past its extent (a vector
 * wider than its axis): one iteration, its counter always 0. Folded to that
 * constant, the tail's guard depends on the inner loop alone and is decided
 * there, where unrolled copies and vector lanes make it a constant, instead
 * of versioning a tile whose fast copy would never run. */
static bool is_one_tail_iteration(const rlt_nest *n, int v, int pos)
{
    const rlt_var *var = &n->vars[v];
    return n->loops[pos].kind == RLT_LOOP_SERIAL && var->extent == 1 && var->origin == RLT_VAR_SPLIT_OUTER &&
           rlt_nest_var_has_tail(n, var->parent);
}

/* Value of variable v as a linear form; marks symbols as it goes. */
static void compute_value(lower_gen *g, int v)
{
    const rlt_nest *n = g->n;
    lower_lin *l = &g->value[v];
    lower_lin_zero(l);
    int pos = rlt_nest_loop_of_var(n, v);
    if (pos >= 0 && is_one_tail_iteration(n, v, pos)) return;
    if (pos >= 0) {
        l->c[v] = 1;
        g->is_symbol[v] = true;
        g->sym_depth[v] = pos;
        return;
    }
    int outer, inner, fused;
    rlt_nest_var_children(n, v, &outer, &inner, &fused);
    if (outer >= 0) {
        compute_value(g, outer);
        compute_value(g, inner);
        lower_lin_add_scaled(l, &g->value[outer], n->vars[outer].factor);
        lower_lin_add_scaled(l, &g->value[inner], 1);
        return;
    }
    RLT_ASSERT(fused >= 0);
    compute_value(g, fused);
    l->c[v] = 1;
    g->is_symbol[v] = true;
    g->derived_from[v] = fused;
    int depth = -1;
    for (int s = 0; s < n->n_vars; s++)
        if (g->value[fused].c[s] != 0 && g->sym_depth[s] > depth) depth = g->sym_depth[s];
    g->sym_depth[v] = depth;
}

static int lin_depth(const lower_gen *g, const lower_lin *l)
{
    int depth = -1;
    for (int s = 0; s < g->n->n_vars; s++)
        if (l->c[s] != 0 && g->sym_depth[s] > depth) depth = g->sym_depth[s];
    return depth;
}

void lower_affine_to_lin(const lower_gen *g, const rlt_affine *a, lower_lin *out_lin)
{
    lower_lin_zero(out_lin);
    for (int x = 0; x < g->op->n_axes; x++)
        if (a->coef[x]) lower_lin_add_scaled(out_lin, &g->axis[x], a->coef[x]);
    out_lin->k += a->offset;
}

void lower_analyse(lower_gen *g)
{
    const rlt_nest *n = g->n;
    for (int v = 0; v < n->n_vars; v++) {
        g->sym_depth[v] = -1;
        g->derived_from[v] = -1;
    }
    for (int a = 0; a < g->op->n_axes; a++) {
        compute_value(g, a);
        g->axis[a] = g->value[a];
    }
    for (int v = 0; v < n->n_vars; v++) {
        if (!rlt_nest_var_has_tail(n, v)) continue;
        int k = g->n_guards++;
        g->guard[k] = g->value[v];
        g->guard_bound[k] = n->vars[v].extent;
        g->guard_depth[k] = lin_depth(g, &g->value[v]);
        /* Version the guard just inside the deepest real loop it depends on
         * when unrolled or vector loops below decide the rest: one check per
         * tile instead of one per element inside the hot loop. */
        int real_depth = -1;
        bool is_versionable = true;
        for (int s = 0; s < n->n_vars; s++) {
            if (!g->value[v].c[s]) continue;
            if (g->derived_from[s] >= 0) is_versionable = false;
            int pos = rlt_nest_loop_of_var(n, s);
            if (pos >= 0 && (n->loops[pos].kind == RLT_LOOP_SERIAL || n->loops[pos].kind == RLT_LOOP_PARALLEL) &&
                pos > real_depth)
                real_depth = pos;
        }
        g->guard_vpoint[k] = is_versionable && real_depth >= 0 && real_depth < g->guard_depth[k] ? real_depth : -1;
    }
    g->vec_var = -1;
    for (int l = 0; l < n->n_loops; l++)
        if (n->loops[l].kind == RLT_LOOP_VECTORIZE) {
            g->vec_var = n->loops[l].var;
            g->vec_width = (int)n->vars[g->vec_var].extent;
        }
    /* A reduction loop of one iteration (a 1x1 window's r and s, a split
     * that left one block) adds no partial sums: only longer ones make the
     * output start at zero or an accumulator continue from memory. */
    g->r0 = n->n_loops;
    for (int l = n->n_loops - 1; l >= 0; l--)
        if (n->vars[n->loops[l].var].is_reduce && n->vars[n->loops[l].var].extent > 1) g->r0 = l;
    g->acc_depth = -1;
    if (n->acc_var == RLT_ACC_ROOT) g->acc_depth = 0;
    else if (n->acc_var >= 0) g->acc_depth = rlt_nest_loop_of_var(n, n->acc_var) + 1;
    g->acc_is_final = g->acc_depth >= 0 && g->r0 >= g->acc_depth;
    int64_t offset = 0;
    for (int t = 0; t + 1 < g->op->n_tensors; t++) {
        g->ws_offset[t] = -1;
        if (!rlt_layout_is_staged(&n->layouts[t])) continue;
        g->n_phys[t] = rlt_layout_physical_dims(n, t, g->phys_dims[t], g->outer_pos[t], g->inner_pos[t]);
        int64_t size = 1;
        for (int d = 0; d < g->n_phys[t]; d++) size *= g->phys_dims[t][d];
        g->ws_offset[t] = offset;
        offset += (size * 4 + 63) / 64 * 64;
    }
    g->ws_bytes = offset;
}

/* ---- linear forms over symbols ------------------------------------------ */

void lower_lin_zero(lower_lin *l) { memset(l, 0, sizeof *l); }

void lower_lin_add_scaled(lower_lin *dst, const lower_lin *src, int64_t scale)
{
    for (int s = 0; s < RLT_MAX_VARS; s++) dst->c[s] += src->c[s] * scale;
    dst->k += src->k * scale;
}

/* Folds fixed symbols (unrolled copies, lanes) into the constant. */
void lower_lin_fold(const lower_gen *g, const lower_lin *l, lower_lin *folded)
{
    *folded = *l;
    for (int s = 0; s < g->n->n_vars; s++)
        if (folded->c[s] && g->at.is_fixed[s]) {
            folded->k += folded->c[s] * g->at.fixed[s];
            folded->c[s] = 0;
        }
}

bool lower_lin_is_const(const lower_gen *g, const lower_lin *l)
{
    for (int s = 0; s < g->n->n_vars; s++)
        if (l->c[s]) return false;
    return true;
}

/* Terms outer loop first, constant last: "i_o*6144 + k + 3". */
void lower_lin_print(const lower_gen *g, const lower_lin *l, rlt_str *s)
{
    lower_lin f;
    lower_lin_fold(g, l, &f);
    bool any = false;
    for (int depth = -1; depth < g->n->n_loops; depth++)
        for (int v = 0; v < g->n->n_vars; v++) {
            if (!f.c[v] || g->sym_depth[v] != depth) continue;
            int64_t c = f.c[v];
            if (any) rlt_str_append(s, c < 0 ? " - " : " + ");
            else if (c < 0) rlt_str_append(s, "-");
            int64_t m = c < 0 ? -c : c;
            if (m == 1) rlt_str_append(s, g->cname[v]);
            else rlt_str_printf(s, "%s*%" PRId64, g->cname[v], m);
            any = true;
        }
    if (!any) rlt_str_printf(s, "%" PRId64, f.k);
    else if (f.k) rlt_str_printf(s, " %c %" PRId64, f.k < 0 ? '-' : '+', f.k < 0 ? -f.k : f.k);
}

/* Range of a folded form over its free symbols' loop ranges. */
void lower_lin_range(const lower_gen *g, const lower_lin *l, int64_t *lo, int64_t *hi)
{
    *lo = *hi = l->k;
    for (int s = 0; s < g->n->n_vars; s++) {
        if (!l->c[s]) continue;
        int64_t span = l->c[s] * (g->n->vars[s].extent - 1);
        if (span > 0) *hi += span;
        else *lo += span;
    }
}
