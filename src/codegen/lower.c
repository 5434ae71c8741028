/*
 * lower.c - lowers a scheduled loop nest to C (rlt_codegen_kernel).
 *
 * How a nest becomes code:
 *  - Symbols. Every loop counter is a symbol; so is every variable that a
 *    fuse consumed (defined as fused / extent or fused % extent right where
 *    its inputs are known). Each variable's value, each op axis, and so every
 *    index, is a linear form over symbols (struct lin).
 *  - Guards. A variable split by a factor that does not divide its extent
 *    runs past its end; the code guards it (value < extent) at the innermost
 *    loop its value depends on. Unrolled copies fold guards to constants and
 *    drop copies that are out of range; a vectorized loop takes the vector
 *    path when all lanes pass and a scalar lane loop otherwise.
 *  - The output. Without cache_write the output is zeroed just outside the
 *    outermost reduction loop, accumulated in place, and the epilogue runs
 *    over it after the reductions. With cache_write the accumulator tile (one
 *    element per point of the spatial loops inside it; a vector per lane
 *    group when the innermost loop is vectorized) lives in a local array that
 *    unrolled loops index with constants, so the compiler keeps it in
 *    registers; it is written back (with the epilogue when every reduction is
 *    inside it) when its loop ends.
 *  - Staged inputs (pack, pad) are copied into the workspace before the nest;
 *    loads from them decompose indices into block / offset pairs, using the
 *    ranges of the loop counters to keep the address linear where it can.
 */
#include "codegen/codegen_internal.h"

#include <inttypes.h>
#include <string.h>

/* ---- linear forms over symbols ----------------------------------------- */

typedef struct lin {
    int64_t c[RLT_MAX_VARS];
    int64_t k;
} lin;

static void lin_zero(lin *l) { memset(l, 0, sizeof *l); }

static void lin_add_scaled(lin *dst, const lin *src, int64_t scale)
{
    for (int s = 0; s < RLT_MAX_VARS; s++) dst->c[s] += src->c[s] * scale;
    dst->k += src->k * scale;
}

/* One nonlinear piece of an address: stride * (x / b) or stride * (x % b). */
typedef struct nonlin {
    lin x;
    int64_t b;
    bool is_div;
    int64_t stride;
} nonlin;

typedef struct addr {
    lin l;
    int n_nl;
    nonlin nl[RLT_MAX_DIMS * 2];
} addr;

/* ---- generator state ----------------------------------------------------- */

typedef enum body_kind {
    BODY_MAIN,      /* the computation */
    BODY_OUT_ZERO,  /* output = 0 before an in-place reduction */
    BODY_EPILOGUE,  /* output = epilogue(output) after it */
    BODY_ACC_LOAD,  /* acc = output (a reduction loop is outside the accumulator) */
    BODY_WRITEBACK  /* output = acc (or epilogue(acc) when the value is final) */
} body_kind;

typedef struct gen {
    const rlt_nest *n;
    const rlt_op *op;
    rlt_str *s;
    char cname[RLT_MAX_VARS][RLT_LOOP_NAME_MAX + 8];
    char tname[RLT_MAX_TENSORS][RLT_NAME_MAX + 8];
    bool is_symbol[RLT_MAX_VARS];
    int sym_depth[RLT_MAX_VARS];   /* loop position whose body first sees the symbol */
    int derived_from[RLT_MAX_VARS]; /* fused variable a derived symbol comes from */
    lin value[RLT_MAX_VARS];
    lin axis[RLT_MAX_AXES];
    int n_guards;
    lin guard[RLT_MAX_VARS]; /* guard g: guard[g] < guard_bound[g] */
    int64_t guard_bound[RLT_MAX_VARS];
    int guard_depth[RLT_MAX_VARS];
    int guard_vpoint[RLT_MAX_VARS]; /* loop position to version the guard at, or -1 */
    bool is_guard_known[RLT_MAX_VARS]; /* inside the fast path: the guard holds */
    bool is_bounds_known; /* inside a tile whose loads were all checked in bounds at its start */
    /* Inside a guarded accumulation (hoist_factor_checks): these loads' dims were
     * checked by the statement's guard, not by the load. */
    int n_hoisted;
    const rlt_expr *hoisted_load[RLT_MAX_TENSORS];
    unsigned hoisted_dims[RLT_MAX_TENSORS];
    int slow_depth;       /* > 0 inside the guarded (tail) copy of a versioned subtree */
    bool is_acc_in_slow;  /* the accumulator was declared inside that copy */
    bool is_fixed[RLT_MAX_VARS];
    int64_t fixed[RLT_MAX_VARS];
    int vec_var;        /* the vectorized loop's variable, or -1 */
    int vec_width;
    bool in_vector;     /* emitting the vector path (vec_var spans lanes) */
    int mask_nv;        /* in a partial vector: its lanes are 0 .. rlt_nv<mask_nv> - 1; else -1 */
    int r0;             /* position of the outermost reduction loop of more than one iteration (n_loops if none) */
    int acc_depth;      /* loops at and after this position form the tile; -1: none */
    bool acc_is_final;  /* every reduction loop is inside the accumulator */
    int64_t ws_offset[RLT_MAX_TENSORS];
    int64_t ws_bytes;
    int64_t phys_dims[RLT_MAX_TENSORS][2 * RLT_MAX_DIMS];
    int n_phys[RLT_MAX_TENSORS];
    int outer_pos[RLT_MAX_TENSORS][RLT_MAX_DIMS]; /* where each original dim went */
    int inner_pos[RLT_MAX_TENSORS][RLT_MAX_DIMS];
    int n_temps;        /* unique suffix for temporaries */
} gen;

static void out(gen *g, int indent, const char *fmt, ...) RLT_PRINTF(3, 4);
static void out(gen *g, int indent, const char *fmt, ...)
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
static void note_failure(const gen *g, const rlt_str *t)
{
    if (t->has_failed) g->s->has_failed = true;
}

static const char *text_of(const gen *g, const rlt_str *t)
{
    note_failure(g, t);
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

static void make_cnames(gen *g)
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
static void compute_value(gen *g, int v)
{
    const rlt_nest *n = g->n;
    lin *l = &g->value[v];
    lin_zero(l);
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
        lin_add_scaled(l, &g->value[outer], n->vars[outer].factor);
        lin_add_scaled(l, &g->value[inner], 1);
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

static int lin_depth(const gen *g, const lin *l)
{
    int depth = -1;
    for (int s = 0; s < g->n->n_vars; s++)
        if (l->c[s] != 0 && g->sym_depth[s] > depth) depth = g->sym_depth[s];
    return depth;
}

static void affine_to_lin(const gen *g, const rlt_affine *a, lin *out_lin)
{
    lin_zero(out_lin);
    for (int x = 0; x < g->op->n_axes; x++)
        if (a->coef[x]) lin_add_scaled(out_lin, &g->axis[x], a->coef[x]);
    out_lin->k += a->offset;
}

static void analyse(gen *g)
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
    g->mask_nv = -1;
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

/* ---- printing linear forms ---------------------------------------------- */

/* Folds fixed symbols (unrolled copies, lanes) into the constant. */
static void lin_fold(const gen *g, const lin *l, lin *folded)
{
    *folded = *l;
    for (int s = 0; s < g->n->n_vars; s++)
        if (folded->c[s] && g->is_fixed[s]) {
            folded->k += folded->c[s] * g->fixed[s];
            folded->c[s] = 0;
        }
}

static bool lin_is_const(const gen *g, const lin *l)
{
    for (int s = 0; s < g->n->n_vars; s++)
        if (l->c[s]) return false;
    return true;
}

/* Terms outer loop first, constant last: "i_o*6144 + k + 3". */
static void print_lin(const gen *g, const lin *l, rlt_str *s)
{
    lin f;
    lin_fold(g, l, &f);
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
static void lin_range(const gen *g, const lin *l, int64_t *lo, int64_t *hi)
{
    *lo = *hi = l->k;
    for (int s = 0; s < g->n->n_vars; s++) {
        if (!l->c[s]) continue;
        int64_t span = l->c[s] * (g->n->vars[s].extent - 1);
        if (span > 0) *hi += span;
        else *lo += span;
    }
}

/* ---- addresses ---------------------------------------------------------- */

static void dims_strides(const int64_t *dims, int n, int64_t *strides)
{
    int64_t st = 1;
    for (int d = n - 1; d >= 0; d--) {
        strides[d] = st;
        st *= dims[d];
    }
}

/* Splits x into x / b and x % b; linear when the remainder's range stays in
 * [0, b) (it does when the loops were split to match the block). */
static void add_block_pieces(const gen *g, const lin *x_in, int64_t b, int64_t outer_stride, int64_t inner_stride,
                             addr *a)
{
    lin x;
    lin_fold(g, x_in, &x);
    lin q, r;
    lin_zero(&q);
    lin_zero(&r);
    for (int s = 0; s < g->n->n_vars; s++) {
        if (!x.c[s]) continue;
        if (x.c[s] % b == 0) q.c[s] = x.c[s] / b;
        else r.c[s] = x.c[s];
    }
    int64_t kq = x.k / b, kr = x.k % b;
    if (kr < 0) {
        kr += b;
        kq -= 1;
    }
    q.k = kq;
    r.k = kr;
    int64_t lo, hi;
    lin_range(g, &r, &lo, &hi);
    if (lo >= 0 && hi < b) {
        lin_add_scaled(&a->l, &q, outer_stride);
        lin_add_scaled(&a->l, &r, inner_stride);
        return;
    }
    RLT_ASSERT(a->n_nl + 2 <= (int)RLT_ARRAY_LEN(a->nl));
    a->nl[a->n_nl++] = (nonlin){.x = x, .b = b, .is_div = true, .stride = outer_stride};
    a->nl[a->n_nl++] = (nonlin){.x = x, .b = b, .is_div = false, .stride = inner_stride};
}

/* Address of a load of tensor t (its staged copy if it has one). */
static void load_addr(const gen *g, const rlt_expr *e, addr *a)
{
    const rlt_tensor *t = &g->op->tensors[e->tensor];
    memset(a, 0, sizeof *a);
    lin idx[RLT_MAX_DIMS];
    for (int d = 0; d < t->n_dims; d++) affine_to_lin(g, &e->index[d], &idx[d]);
    if (e->tensor == g->op->n_tensors - 1 || g->ws_offset[e->tensor] < 0) {
        int64_t strides[RLT_MAX_DIMS];
        dims_strides(t->dims, t->n_dims, strides);
        for (int d = 0; d < t->n_dims; d++) lin_add_scaled(&a->l, &idx[d], strides[d]);
        return;
    }
    const rlt_layout *l = &g->n->layouts[e->tensor];
    int64_t strides[2 * RLT_MAX_DIMS];
    dims_strides(g->phys_dims[e->tensor], g->n_phys[e->tensor], strides);
    for (int d = 0; d < t->n_dims; d++) {
        idx[d].k += l->pad_lo[d];
        int64_t outer_stride = strides[g->outer_pos[e->tensor][d]];
        int inner = g->inner_pos[e->tensor][d];
        if (inner < 0) lin_add_scaled(&a->l, &idx[d], outer_stride);
        else add_block_pieces(g, &idx[d], g->phys_dims[e->tensor][inner], outer_stride, strides[inner], a);
    }
}

/* Address of the output element at the current point. */
static void out_addr(const gen *g, addr *a)
{
    const rlt_tensor *t = &g->op->tensors[g->op->n_tensors - 1];
    memset(a, 0, sizeof *a);
    int64_t strides[RLT_MAX_DIMS];
    dims_strides(t->dims, t->n_dims, strides);
    for (int d = 0; d < g->op->n_spatial; d++) lin_add_scaled(&a->l, &g->axis[d], strides[d]);
}

static void print_addr(const gen *g, const addr *a, rlt_str *s)
{
    print_lin(g, &a->l, s);
    for (int i = 0; i < a->n_nl; i++) {
        rlt_str_printf(s, " + %" PRId64 "*((", a->nl[i].stride);
        print_lin(g, &a->nl[i].x, s);
        rlt_str_printf(s, ") %c %" PRId64 ")", a->nl[i].is_div ? '/' : '%', a->nl[i].b);
    }
}

/* The address of lane 0: where a contiguous vector starts. */
static void print_addr_lane0(gen *g, const addr *a, rlt_str *s)
{
    int v = g->vec_var;
    bool was_fixed = g->is_fixed[v];
    g->is_fixed[v] = true;
    g->fixed[v] = 0;
    print_addr(g, a, s);
    g->is_fixed[v] = was_fixed;
}

/* How an address varies across the lanes of the vector loop: not at all,
 * one float a lane, 2 or 4 floats a lane at a width the preamble has a
 * strided load for (rlt_lds2_W, rlt_lds4_W: a stride-2 convolution's input
 * along its width), or otherwise (lane by lane). */
typedef enum lane_pattern { LANES_UNIFORM, LANES_CONTIGUOUS, LANES_STRIDED, LANES_GATHER } lane_pattern;

/* The pattern across the vector loop's lanes, wherever the code is. */
static lane_pattern lanes_of(const gen *g, const addr *a)
{
    int v = g->vec_var;
    if (v < 0) return LANES_UNIFORM;
    for (int i = 0; i < a->n_nl; i++)
        if (a->nl[i].x.c[v] != 0) return LANES_GATHER;
    int64_t c = a->l.c[v];
    if (c == 0) return LANES_UNIFORM;
    if (c == 1) return LANES_CONTIGUOUS;
    bool has_strided = g->vec_width == 4 || g->vec_width == 8 || g->vec_width == 16;
    return has_strided && (c == 2 || c == 4) ? LANES_STRIDED : LANES_GATHER;
}

/* The pattern of an access in the code being emitted (uniform outside the vector path). */
static lane_pattern addr_lanes(const gen *g, const addr *a)
{
    return g->in_vector ? lanes_of(g, a) : LANES_UNIFORM;
}

/* ---- expressions -------------------------------------------------------- */

/* Appends "(x) >= 0 && (x) < n" to a condition (after " && " when it has
 * a clause already). */
static void append_range_check(const gen *g, rlt_str *cond, const lin *x, int64_t n)
{
    if (cond->len) rlt_str_append(cond, " && ");
    rlt_str_append(cond, "(");
    print_lin(g, x, cond);
    rlt_str_printf(cond, ") >= 0 && (");
    print_lin(g, x, cond);
    rlt_str_printf(cond, ") < %" PRId64, n);
}

/* The dims of a load whose bounds the statement's guard checks (bit d). */
static unsigned hoisted_dims(const gen *g, const rlt_expr *e)
{
    for (int i = 0; i < g->n_hoisted; i++)
        if (g->hoisted_load[i] == e) return g->hoisted_dims[i];
    return 0;
}

/* Where dim d of load e can reach, without a padded copy: inside the
 * tensor always (DIM_IN), outside for certain (DIM_OUT: an index that is a
 * constant here, outside), or depending on the loops (DIM_CHECKED). x gets
 * the index as written, f folded with the loops fixed here (unrolled). */
typedef enum dim_reach { DIM_IN, DIM_OUT, DIM_CHECKED } dim_reach;

static dim_reach load_dim_reach(const gen *g, const rlt_expr *e, int d, lin *x, lin *f)
{
    const rlt_tensor *t = &g->op->tensors[e->tensor];
    int64_t lo, hi;
    rlt_affine_range(g->op, &e->index[d], &lo, &hi);
    if (lo >= 0 && hi < t->dims[d]) return DIM_IN;
    affine_to_lin(g, &e->index[d], x);
    lin_fold(g, x, f);
    if (!lin_is_const(g, f)) return DIM_CHECKED;
    return f->k >= 0 && f->k < t->dims[d] ? DIM_IN : DIM_OUT;
}

/* Bounds condition of a load whose tensor is not padded: "" when always in. */
static void load_condition(const gen *g, const rlt_expr *e, rlt_str *cond)
{
    const rlt_tensor *t = &g->op->tensors[e->tensor];
    if (g->n->layouts[e->tensor].is_padded || g->is_bounds_known) return;
    unsigned hoisted = hoisted_dims(g, e);
    for (int d = 0; d < t->n_dims; d++) {
        lin x, f;
        if (hoisted >> d & 1u) continue;
        dim_reach reach = load_dim_reach(g, e, d, &x, &f);
        if (reach == DIM_OUT) {
            rlt_str_clear(cond);
            rlt_str_append(cond, "0");
            return;
        }
        if (reach == DIM_CHECKED) append_range_check(g, cond, &f, t->dims[d]);
    }
}

/* Masked lanes exist for these widths (the preamble's rlt_ldmW, rlt_stmW). */
static bool has_masked_lanes(int width) { return width == 4 || width == 8 || width == 16; }

/* Narrows a bound of a lane range, held as C text, by an index x0 + c *
 * lane (c > 0) that must stay inside [0, n): a lower bound to the first
 * lane where it is >= 0, an upper one to the end of the lanes where it is
 * below n. */
static void narrow_lanes(gen *g, rlt_str *bound, bool is_lower, const char *x0, int64_t c, int64_t n)
{
    rlt_str old;
    rlt_str_init(&old);
    rlt_str_append(&old, text_of(g, bound));
    rlt_str_clear(bound);
    if (is_lower) rlt_str_printf(bound, "rlt_lmax(%s, rlt_lane_from(%s, %" PRId64 "))", text_of(g, &old), x0, c);
    else
        rlt_str_printf(bound, "rlt_lmin(%s, rlt_lane_to(%s, %" PRId64 ", %" PRId64 "))", text_of(g, &old), x0, c, n);
    note_failure(g, &old);
    rlt_str_free(&old);
}

/* The lanes of a vector load of e that read inside its tensor, as C
 * expressions [lo, hi), and the part of its bounds condition that does not
 * depend on the lane (cond, "" when none): an index linear in the lane, x0 +
 * c * lane with c > 0, is inside [0, n) on a range of lanes. In a partial
 * vector, hi is at most the vector's end. False (nothing usable) when an
 * index falls as the lane grows. */
static bool load_lanes(gen *g, const rlt_expr *e, rlt_str *cond, rlt_str *lo, rlt_str *hi)
{
    const rlt_tensor *t = &g->op->tensors[e->tensor];
    int v = g->vec_var;
    rlt_str_printf(lo, "0");
    if (g->mask_nv >= 0) rlt_str_printf(hi, "rlt_nv%d", g->mask_nv);
    else rlt_str_printf(hi, "%d", g->vec_width);
    if (g->n->layouts[e->tensor].is_padded || g->is_bounds_known) return true;
    unsigned hoisted = hoisted_dims(g, e);
    bool ok = true;
    for (int d = 0; d < t->n_dims && ok; d++) {
        if (hoisted >> d & 1u) continue;
        int64_t rlo, rhi;
        rlt_affine_range(g->op, &e->index[d], &rlo, &rhi);
        if (rlo >= 0 && rhi < t->dims[d]) continue;
        lin x, f;
        affine_to_lin(g, &e->index[d], &x);
        lin_fold(g, &x, &f); /* the vector variable is free here: its coefficient is the lane's */
        int64_t c = f.c[v];
        f.c[v] = 0;          /* the index at lane 0 */
        if (c < 0) {
            ok = false;
        } else if (c == 0) {
            if (lin_is_const(g, &f) && f.k >= 0 && f.k < t->dims[d]) continue;
            append_range_check(g, cond, &f, t->dims[d]);
        } else {
            rlt_str x0;
            rlt_str_init(&x0);
            print_lin(g, &f, &x0);
            if (rlo < 0) narrow_lanes(g, lo, true, text_of(g, &x0), c, 0);
            if (rhi >= t->dims[d]) narrow_lanes(g, hi, false, text_of(g, &x0), c, t->dims[d]);
            note_failure(g, &x0);
            rlt_str_free(&x0);
        }
    }
    note_failure(g, cond);
    note_failure(g, lo);
    note_failure(g, hi);
    return ok;
}

static const char *load_base(const gen *g, int t, char *buf, size_t n)
{
    if (t != g->op->n_tensors - 1 && g->ws_offset[t] >= 0) snprintf(buf, n, "%s_s", g->tname[t]);
    else snprintf(buf, n, "%s", g->tname[t]);
    return buf;
}

/* A scalar load (lanes fixed or not vectorizing). */
static void emit_scalar_load(gen *g, const rlt_expr *e, rlt_str *s)
{
    addr a;
    load_addr(g, e, &a);
    rlt_str cond;
    rlt_str_init(&cond);
    load_condition(g, e, &cond);
    note_failure(g, &cond);
    char base[RLT_NAME_MAX + 8];
    load_base(g, e->tensor, base, sizeof base);
    if (cond.len && strcmp(text_of(g, &cond), "0") == 0) {
        rlt_str_append(s, "0.0f");
    } else if (cond.len) {
        rlt_str_printf(s, "((%s) ? %s[", text_of(g, &cond), base);
        print_addr(g, &a, s);
        rlt_str_append(s, "] : 0.0f)");
    } else {
        rlt_str_printf(s, "%s[", base);
        print_addr(g, &a, s);
        rlt_str_append(s, "]");
    }
    rlt_str_free(&cond);
}

/* Emits each lane of a vector value with the vector variable fixed. */
typedef void (*lane_fn)(gen *g, const void *arg, rlt_str *s);

static void emit_lanes(gen *g, lane_fn fn, const void *arg, rlt_str *s)
{
    int v = g->vec_var;
    rlt_str_printf(s, "(rlt_v%d){", g->vec_width);
    bool was_fixed = g->is_fixed[v];
    bool was_vector = g->in_vector;
    g->is_fixed[v] = true;
    g->in_vector = false;
    for (int lane = 0; lane < g->vec_width; lane++) {
        g->fixed[v] = lane;
        if (lane) rlt_str_append(s, ", ");
        if (g->mask_nv >= 0) rlt_str_printf(s, "(%d < rlt_nv%d ? ", lane, g->mask_nv);
        fn(g, arg, s);
        if (g->mask_nv >= 0) rlt_str_append(s, " : 0.0f)");
    }
    g->is_fixed[v] = was_fixed;
    g->in_vector = was_vector;
    rlt_str_append(s, "}");
}

static void lane_load(gen *g, const void *arg, rlt_str *s) { emit_scalar_load(g, arg, s); }

/* A contiguous or strided vector load (address a, from base) of the lanes
 * inside the tensor and the partial vector, in one masked load; false, with
 * nothing emitted, when its lanes cannot be bounded (load_lanes). */
static bool emit_masked_load(gen *g, const rlt_expr *e, const addr *a, const char *base, rlt_str *s)
{
    rlt_str cond, lo, hi;
    rlt_str_init(&cond);
    rlt_str_init(&lo);
    rlt_str_init(&hi);
    bool ok = load_lanes(g, e, &cond, &lo, &hi);
    if (ok) {
        if (cond.len) rlt_str_printf(s, "((%s) ? ", text_of(g, &cond));
        if (lanes_of(g, a) == LANES_STRIDED)
            rlt_str_printf(s, "rlt_ldm%" PRId64 "_%d(&%s[", a->l.c[g->vec_var], g->vec_width, base);
        else
            rlt_str_printf(s, "rlt_ldm%d(&%s[", g->vec_width, base);
        print_addr_lane0(g, a, s);
        rlt_str_printf(s, "], %s, %s)", text_of(g, &lo), text_of(g, &hi));
        if (cond.len) rlt_str_printf(s, " : rlt_splat%d(0.0f))", g->vec_width);
    }
    rlt_str_free(&cond);
    rlt_str_free(&lo);
    rlt_str_free(&hi);
    return ok;
}

/* Memory stride of dim d of the tensor a load of t reads (its staged copy if
 * it has one), or 0 when that copy splits d into blocks. */
static int64_t dim_stride(const gen *g, int t, int d)
{
    const rlt_tensor *tensor = &g->op->tensors[t];
    if (t == g->op->n_tensors - 1 || g->ws_offset[t] < 0) {
        int64_t strides[RLT_MAX_DIMS];
        dims_strides(tensor->dims, tensor->n_dims, strides);
        return strides[d];
    }
    if (g->inner_pos[t][d] >= 0) return 0;
    int64_t strides[2 * RLT_MAX_DIMS];
    dims_strides(g->phys_dims[t], g->n_phys[t], strides);
    return strides[g->outer_pos[t][d]];
}

/* A stride-2 load of 16 lanes inside an unrolled filter window: the taps of
 * a stride-2 convolution's columns (unrolled symbols that move the lane's
 * index forward by less than two vectors, and nothing else) read one window
 * of the row, rlt_ldw2_16 (see the preamble), which the compiler loads once
 * for all of them. Its elements outside the tensor read 0; lanes past a
 * partial vector read what the window holds there, so a vector over a
 * reduction axis keeps rlt_ldm2. False, with nothing emitted, when the load
 * is not of that kind. Depthwise 3x3 stride 2, 144 channels at 56x56, a 4 x
 * 2-vector tile: 6 loads and 3 shuffles a row and vector -> 3 and 3. */
static bool emit_window_load(gen *g, const rlt_expr *e, const addr *a, const char *base, rlt_str *s)
{
    const rlt_tensor *t = &g->op->tensors[e->tensor];
    int v = g->vec_var;
    if (g->vec_width != 16 || a->l.c[v] != 2 || a->n_nl) return false;
    if (g->mask_nv >= 0 && g->n->vars[v].is_reduce) return false;
    lin idx[RLT_MAX_DIMS];
    int dw = -1;
    for (int d = 0; d < t->n_dims; d++) {
        affine_to_lin(g, &e->index[d], &idx[d]);
        if (!idx[d].c[v]) continue;
        if (dw >= 0) return false;
        dw = d;
    }
    if (dw < 0 || idx[dw].c[v] != 2 || dim_stride(g, e->tensor, dw) != 1) return false;
    bool is_tap[RLT_MAX_VARS] = {false};
    int64_t tap = 0, last_tap = 0;
    for (int f = 0; f < g->n->n_vars; f++) {
        int64_t c = idx[dw].c[f];
        if (f == v || !g->is_fixed[f] || c <= 0 || c >= 32) continue;
        bool is_only_here = true;
        for (int d = 0; d < t->n_dims; d++)
            if (d != dw && idx[d].c[f]) is_only_here = false;
        for (int k = 0; k < g->n_guards; k++)
            if (g->guard[k].c[f]) is_only_here = false; /* a tail's guard: not every tap is there */
        if (!is_only_here) continue;
        is_tap[f] = true;
        tap += c * g->fixed[f];
        last_tap += c * (g->n->vars[f].extent - 1);
    }
    if (last_tap < 1 || last_tap > 31) return false;
    int64_t nw = last_tap + 31;

    /* the window's start: lane 0 with every tap symbol at 0 */
    bool was_fixed[RLT_MAX_VARS];
    int64_t old_fixed[RLT_MAX_VARS];
    for (int f = 0; f < g->n->n_vars; f++) {
        was_fixed[f] = g->is_fixed[f];
        old_fixed[f] = g->fixed[f];
        if (f == v || is_tap[f]) {
            g->is_fixed[f] = true;
            g->fixed[f] = 0;
        }
    }
    lin x0;
    lin_fold(g, &idx[dw], &x0);
    rlt_str start, first;
    rlt_str_init(&start);
    rlt_str_init(&first);
    print_addr(g, a, &start);
    print_lin(g, &x0, &first);
    for (int f = 0; f < g->n->n_vars; f++) {
        g->is_fixed[f] = was_fixed[f];
        g->fixed[f] = old_fixed[f];
    }

    /* the other dims' bounds do not depend on the lane: one condition */
    bool is_checked = !g->n->layouts[e->tensor].is_padded && !g->is_bounds_known;
    bool is_zero = false;
    rlt_str cond;
    rlt_str_init(&cond);
    unsigned hoisted = hoisted_dims(g, e);
    for (int d = 0; d < t->n_dims && is_checked && !is_zero; d++) {
        lin x, f;
        if (d == dw || hoisted >> d & 1u) continue;
        dim_reach reach = load_dim_reach(g, e, d, &x, &f);
        if (reach == DIM_OUT) is_zero = true;
        else if (reach == DIM_CHECKED) append_range_check(g, &cond, &f, t->dims[d]);
    }
    int64_t lo = 0, hi = 0;
    lin_range(g, &x0, &lo, &hi);
    bool is_lo_in = !is_checked || lo >= 0, is_hi_in = !is_checked || hi + nw <= t->dims[dw];
    if (is_zero) {
        rlt_str_printf(s, "rlt_splat16(0.0f)");
    } else {
        if (cond.len) rlt_str_printf(s, "((%s) ? ", text_of(g, &cond));
        if (is_lo_in && is_hi_in && g->mask_nv < 0) {
            rlt_str_printf(s, "rlt_ldw2u_16(&%s[%s], %" PRId64 ", %" PRId64 ")", base, text_of(g, &start), tap, nw);
        } else {
            rlt_str_printf(s, "rlt_ldw2_16(&%s[%s], %" PRId64 ", %" PRId64 ", ", base, text_of(g, &start), tap, nw);
            /* the window's elements inside the row: e0 = -first, e1 = width - first */
            bool is_const = lin_is_const(g, &x0);
            if (is_lo_in) rlt_str_append(s, "0, ");
            else if (is_const) rlt_str_printf(s, "%" PRId64 ", ", -x0.k);
            else rlt_str_printf(s, "-(%s), ", text_of(g, &first));
            if (g->mask_nv >= 0) rlt_str_append(s, "rlt_lmin(");
            if (is_hi_in) rlt_str_printf(s, "%" PRId64, nw);
            else if (is_const) rlt_str_printf(s, "%" PRId64, t->dims[dw] - x0.k);
            else rlt_str_printf(s, "%" PRId64 " - (%s)", t->dims[dw], text_of(g, &first));
            /* past the partial vector's last lane, no tap reads */
            if (g->mask_nv >= 0) rlt_str_printf(s, ", %" PRId64 " + 2 * rlt_nv%d - 1)", last_tap, g->mask_nv);
            rlt_str_append(s, ")");
        }
        if (cond.len) rlt_str_append(s, " : rlt_splat16(0.0f))");
    }
    note_failure(g, &cond);
    note_failure(g, &start);
    note_failure(g, &first);
    rlt_str_free(&cond);
    rlt_str_free(&start);
    rlt_str_free(&first);
    return true;
}

static void emit_load(gen *g, const rlt_expr *e, rlt_str *s)
{
    if (!g->in_vector) {
        emit_scalar_load(g, e, s);
        return;
    }
    addr a;
    load_addr(g, e, &a);
    rlt_str cond;
    rlt_str_init(&cond);
    load_condition(g, e, &cond);
    note_failure(g, &cond);
    bool is_guarded = cond.len > 0;
    rlt_str_free(&cond);
    lane_pattern p = addr_lanes(g, &a);
    char base[RLT_NAME_MAX + 8];
    load_base(g, e->tensor, base, sizeof base);
    if (p == LANES_STRIDED && emit_window_load(g, e, &a, base, s)) return;
    bool wants_mask = (is_guarded || g->mask_nv >= 0) && (p == LANES_CONTIGUOUS || p == LANES_STRIDED) &&
                      has_masked_lanes(g->vec_width);
    if (wants_mask && emit_masked_load(g, e, &a, base, s)) return;
    if (p == LANES_GATHER || (is_guarded && p != LANES_UNIFORM) || (g->mask_nv >= 0 && p != LANES_UNIFORM)) {
        emit_lanes(g, lane_load, e, s);
    } else if (p == LANES_STRIDED) {
        rlt_str_printf(s, "rlt_lds%" PRId64 "_%d(&%s[", a.l.c[g->vec_var], g->vec_width, base);
        print_addr_lane0(g, &a, s);
        rlt_str_append(s, "])");
    } else if (p == LANES_UNIFORM) {
        rlt_str_printf(s, "rlt_splat%d(", g->vec_width);
        g->in_vector = false;
        emit_scalar_load(g, e, s);
        g->in_vector = true;
        rlt_str_append(s, ")");
    } else {
        rlt_str_printf(s, "rlt_load%d(&%s[", g->vec_width, base);
        print_addr_lane0(g, &a, s);
        rlt_str_append(s, "])");
    }
}

/* A float literal C accepts: "2.0f", "0.5f", "1e+30f". */
static void print_float(double x, rlt_str *s)
{
    char buf[48];
    snprintf(buf, sizeof buf, "%.9g", x);
    bool has_point = strpbrk(buf, ".eEn") != NULL; /* n: inf / nan cannot come from the parser */
    rlt_str_printf(s, "%s%sf", buf, has_point ? "" : ".0");
}

/* `acc_text` stands for ACC (the reduction's value) in an epilogue. */
static void emit_expr(gen *g, const rlt_expr *e, const char *acc_text, rlt_str *s)
{
    int w = g->vec_width;
    bool vec = g->in_vector;
    switch (e->kind) {
    case RLT_EXPR_CONST:
        if (vec) rlt_str_printf(s, "rlt_splat%d(", w);
        print_float(e->value, s);
        if (vec) rlt_str_append(s, ")");
        return;
    case RLT_EXPR_ACC:
        rlt_str_append(s, acc_text);
        return;
    case RLT_EXPR_LOAD:
        emit_load(g, e, s);
        return;
    case RLT_EXPR_NEG:
        rlt_str_append(s, "(-");
        emit_expr(g, e->a, acc_text, s);
        rlt_str_append(s, ")");
        return;
    case RLT_EXPR_RELU:
        if (vec) rlt_str_printf(s, "rlt_max%d(", w);
        else rlt_str_append(s, "rlt_maxf(");
        emit_expr(g, e->a, acc_text, s);
        if (vec) rlt_str_printf(s, ", rlt_splat%d(0.0f))", w);
        else rlt_str_append(s, ", 0.0f)");
        return;
    case RLT_EXPR_MAX:
    case RLT_EXPR_MIN:
        if (vec) rlt_str_printf(s, "rlt_%s%d(", e->kind == RLT_EXPR_MAX ? "max" : "min", w);
        else rlt_str_printf(s, "rlt_%sf(", e->kind == RLT_EXPR_MAX ? "max" : "min");
        emit_expr(g, e->a, acc_text, s);
        rlt_str_append(s, ", ");
        emit_expr(g, e->b, acc_text, s);
        rlt_str_append(s, ")");
        return;
    case RLT_EXPR_ADD:
    case RLT_EXPR_SUB:
    case RLT_EXPR_MUL:
        rlt_str_append(s, "(");
        emit_expr(g, e->a, acc_text, s);
        rlt_str_append(s, e->kind == RLT_EXPR_ADD ? " + " : e->kind == RLT_EXPR_SUB ? " - " : " * ");
        emit_expr(g, e->b, acc_text, s);
        rlt_str_append(s, ")");
        return;
    }
    RLT_ASSERT(!"unknown expression kind");
}

/* ---- statements --------------------------------------------------------- */

/* Whether a linear index takes a different value in each lane of the vector
 * being emitted. */
static bool varies_by_lane(const gen *g, const lin *x)
{
    if (!g->in_vector || g->vec_var < 0) return false;
    for (int v = 0; v < g->n->n_vars; v++)
        if (x->c[v] && (v == g->vec_var || g->derived_from[v] == g->vec_var)) return true;
    return false;
}

/* A reduction sums products: where a factor reads the zero border of a
 * tensor without a padded copy, the term is zero and adds nothing. This
 * makes the bounds checks of e's factors that are the same in every lane
 * once for the statement, appended to `guard` ("if (guard) acc += ..."),
 * and marks them done for the loads (hoisted_dims). False when a factor is
 * out of bounds for certain: the statement is left out. So a convolution
 * tile at the border neither multiplies by zeros nor checks each load
 * (conv2d 512@7 3x3, a 7-row tile: 2 of its 21 row terms are zero).
 * Leaving out a zero term differs from adding 0 * w only where w is
 * infinite or NaN. */
static bool hoist_factor_checks(gen *g, const rlt_expr *e, rlt_str *guard)
{
    if (e->kind == RLT_EXPR_MUL) return hoist_factor_checks(g, e->a, guard) && hoist_factor_checks(g, e->b, guard);
    if (e->kind == RLT_EXPR_NEG) return hoist_factor_checks(g, e->a, guard);
    if (e->kind != RLT_EXPR_LOAD || g->n->layouts[e->tensor].is_padded || g->is_bounds_known ||
        g->n_hoisted == RLT_MAX_TENSORS)
        return true;
    const rlt_tensor *t = &g->op->tensors[e->tensor];
    unsigned dims = 0;
    for (int d = 0; d < t->n_dims; d++) {
        lin x, f;
        dim_reach reach = load_dim_reach(g, e, d, &x, &f);
        if (reach == DIM_IN || varies_by_lane(g, &x)) continue; /* the load masks varying lanes */
        if (reach == DIM_OUT) return false;
        append_range_check(g, guard, &f, t->dims[d]);
        dims |= 1u << d;
    }
    if (dims) {
        g->hoisted_load[g->n_hoisted] = e;
        g->hoisted_dims[g->n_hoisted++] = dims;
    }
    return true;
}

/* The accumulator element at the current point: "rlt_acc[i_i][j_o]" (the
 * vector lane loop excluded; in the scalar lane loop, "[lane]" added). */
static void acc_ref(const gen *g, rlt_str *s)
{
    rlt_str_append(s, "rlt_acc");
    bool any = false;
    for (int l = g->acc_depth; l < g->n->n_loops; l++) {
        int v = g->n->loops[l].var;
        if (g->n->vars[v].is_reduce || v == g->vec_var) continue;
        if (g->is_fixed[v]) rlt_str_printf(s, "[%" PRId64 "]", g->fixed[v]);
        else rlt_str_printf(s, "[%s]", g->cname[v]);
        any = true;
    }
    if (!any) rlt_str_append(s, "[0]");
    if (g->vec_var >= 0 && !g->in_vector) {
        if (g->is_fixed[g->vec_var]) rlt_str_printf(s, "[%" PRId64 "]", g->fixed[g->vec_var]);
        else rlt_str_printf(s, "[%s]", g->cname[g->vec_var]);
    }
}

/* The output element (scalar) or vector at the current point, as a value. */
static void out_value(gen *g, rlt_str *s)
{
    addr a;
    out_addr(g, &a);
    const char *o = g->tname[g->op->n_tensors - 1];
    lane_pattern p = addr_lanes(g, &a);
    if (!g->in_vector) {
        rlt_str_printf(s, "%s[", o);
        print_addr(g, &a, s);
        rlt_str_append(s, "]");
    } else if (p == LANES_CONTIGUOUS && g->mask_nv >= 0) {
        rlt_str_printf(s, "rlt_ldm%d(&%s[", g->vec_width, o);
        print_addr_lane0(g, &a, s);
        rlt_str_printf(s, "], 0, rlt_nv%d)", g->mask_nv);
    } else if (p == LANES_CONTIGUOUS) {
        rlt_str_printf(s, "rlt_load%d(&%s[", g->vec_width, o);
        print_addr_lane0(g, &a, s);
        rlt_str_append(s, "])");
    } else {
        /* The output is indexed by spatial axes only: a vector over a spatial
         * loop either moves along it contiguously or strides (gather). */
        rlt_str_printf(s, "(rlt_v%d){", g->vec_width);
        int v = g->vec_var;
        g->is_fixed[v] = true;
        for (int lane = 0; lane < g->vec_width; lane++) {
            g->fixed[v] = lane;
            rlt_str_append(s, lane ? ", " : "");
            if (g->mask_nv >= 0) rlt_str_printf(s, "(%d < rlt_nv%d ? ", lane, g->mask_nv);
            rlt_str_printf(s, "%s[", o);
            print_addr(g, &a, s);
            rlt_str_append(s, "]");
            if (g->mask_nv >= 0) rlt_str_append(s, " : 0.0f)");
        }
        g->is_fixed[v] = false;
        rlt_str_append(s, "}");
    }
}

/* Stores `value_text` (scalar or vector) to the output at the current point. */
static void store_out(gen *g, int indent, const char *value_text)
{
    addr a;
    out_addr(g, &a);
    const char *o = g->tname[g->op->n_tensors - 1];
    rlt_str s;
    rlt_str_init(&s);
    if (!g->in_vector) {
        rlt_str_printf(&s, "%s[", o);
        print_addr(g, &a, &s);
        out(g, indent, "%s] = %s;\n", text_of(g, &s), value_text);
    } else if (addr_lanes(g, &a) == LANES_CONTIGUOUS && g->mask_nv >= 0) {
        print_addr_lane0(g, &a, &s);
        out(g, indent, "rlt_stm%d(&%s[%s], %s, 0, rlt_nv%d);\n", g->vec_width, o, text_of(g, &s), value_text,
            g->mask_nv);
    } else if (addr_lanes(g, &a) == LANES_CONTIGUOUS) {
        print_addr_lane0(g, &a, &s);
        out(g, indent, "rlt_store%d(&%s[%s], %s);\n", g->vec_width, o, text_of(g, &s), value_text);
    } else {
        int tmp = g->n_temps++;
        out(g, indent, "{\n");
        out(g, indent + 1, "rlt_v%d rlt_t%d = %s;\n", g->vec_width, tmp, value_text);
        int v = g->vec_var;
        g->is_fixed[v] = true;
        for (int lane = 0; lane < g->vec_width; lane++) {
            g->fixed[v] = lane;
            rlt_str_clear(&s);
            print_addr(g, &a, &s);
            if (g->mask_nv >= 0)
                out(g, indent + 1, "if (%d < rlt_nv%d) %s[%s] = rlt_t%d[%d];\n", lane, g->mask_nv, o, text_of(g, &s),
                    tmp, lane);
            else
                out(g, indent + 1, "%s[%s] = rlt_t%d[%d];\n", o, text_of(g, &s), tmp, lane);
        }
        g->is_fixed[v] = false;
        out(g, indent, "}\n");
    }
    rlt_str_free(&s);
}

static void emit_body(gen *g, body_kind kind, int indent)
{
    rlt_str value, ref;
    rlt_str_init(&value);
    rlt_str_init(&ref);
    bool has_reduction = g->r0 < g->n->n_loops;
    const rlt_expr *epi = g->op->epilogue;
    rlt_str guard;
    rlt_str_init(&guard);
    switch (kind) {
    case BODY_MAIN:
        if (has_reduction && !hoist_factor_checks(g, g->op->body, &guard)) break; /* a zero term */
        if (guard.len) out(g, indent++, "if (%s) {\n", text_of(g, &guard));
        emit_expr(g, g->op->body, "", &value);
        if (g->acc_depth >= 0) {
            acc_ref(g, &ref);
            out(g, indent, "%s %s= %s;\n", text_of(g, &ref), has_reduction ? "+" : "", text_of(g, &value));
        } else if (has_reduction) {
            out_value(g, &ref);
            rlt_str sum;
            rlt_str_init(&sum);
            rlt_str_printf(&sum, "%s + %s", text_of(g, &ref), text_of(g, &value));
            store_out(g, indent, text_of(g, &sum));
            rlt_str_free(&sum);
        } else if (epi) {
            int tmp = g->n_temps++;
            char name[32];
            snprintf(name, sizeof name, "rlt_t%d", tmp);
            out(g, indent, "{\n");
            if (g->in_vector) out(g, indent + 1, "rlt_v%d %s = %s;\n", g->vec_width, name, text_of(g, &value));
            else out(g, indent + 1, "float %s = %s;\n", name, text_of(g, &value));
            rlt_str_clear(&value);
            emit_expr(g, epi, name, &value);
            store_out(g, indent + 1, text_of(g, &value));
            out(g, indent, "}\n");
        } else {
            store_out(g, indent, text_of(g, &value));
        }
        if (guard.len) out(g, --indent, "}\n");
        break;
    case BODY_OUT_ZERO:
        if (g->in_vector) rlt_str_printf(&value, "rlt_splat%d(0.0f)", g->vec_width);
        else rlt_str_append(&value, "0.0f");
        store_out(g, indent, text_of(g, &value));
        break;
    case BODY_EPILOGUE:
        out_value(g, &ref);
        emit_expr(g, epi, text_of(g, &ref), &value);
        store_out(g, indent, text_of(g, &value));
        break;
    case BODY_ACC_LOAD:
        acc_ref(g, &ref);
        out_value(g, &value);
        out(g, indent, "%s = %s;\n", text_of(g, &ref), text_of(g, &value));
        break;
    case BODY_WRITEBACK:
        acc_ref(g, &ref);
        if (epi && g->acc_is_final) emit_expr(g, epi, text_of(g, &ref), &value);
        else rlt_str_append(&value, text_of(g, &ref));
        store_out(g, indent, text_of(g, &value));
        break;
    }
    g->n_hoisted = 0;
    rlt_str_free(&guard);
    rlt_str_free(&value);
    rlt_str_free(&ref);
}

/* ---- loops -------------------------------------------------------------- */

/* A walk over some of the nest's loops: all of them for the computation, the
 * spatial ones for zeroing, epilogue, accumulator load and write-back. */
typedef struct plan {
    int n;
    int pos[RLT_MAX_LOOPS];
    body_kind kind;
} plan;

/* A tile's write-back (or reload) whose vector runs across the output's
 * rows is transposed in registers when the unrolled loop directly outside
 * the vector walks the output's unit-stride dim (emit_transposed_tile). The
 * elements are independent, so when another unrolled loop sits there (a
 * register tile of 7 columns by 2 vectors of output channels, in that
 * order), the loop that walks that dim moves in next to the vector: only
 * among a fully unrolled tile's loops, none of them under a guard. */
static void order_for_transposing(const gen *g, plan *p)
{
    if ((p->kind != BODY_WRITEBACK && p->kind != BODY_ACC_LOAD) || p->n < 3) return;
    const rlt_loop *vl = &g->n->loops[p->pos[p->n - 1]];
    if (vl->kind != RLT_LOOP_VECTORIZE || vl->var != g->vec_var) return;
    addr a;
    out_addr(g, &a);
    if (a.n_nl > 0 || a.l.c[g->vec_var] <= 1 || a.l.c[g->n->loops[p->pos[p->n - 2]].var] == 1) return;
    int walk = -1;
    for (int i = p->n - 2; i >= 0; i--) {
        const rlt_loop *l = &g->n->loops[p->pos[i]];
        if (l->kind != RLT_LOOP_UNROLL) return;
        for (int k = 0; k < g->n_guards; k++)
            if (g->guard[k].c[l->var]) return;
        for (int s = 0; s < g->n->n_vars; s++)
            if (g->is_symbol[s] && g->derived_from[s] >= 0 && g->sym_depth[s] == p->pos[i]) return;
        if (a.l.c[l->var] == 1) {
            walk = i;
            break;
        }
    }
    if (walk < 0) return;
    int moved = p->pos[walk];
    for (int i = walk; i < p->n - 2; i++) p->pos[i] = p->pos[i + 1];
    p->pos[p->n - 2] = moved;
}

static void make_sub_plan(const gen *g, int from, body_kind kind, plan *p)
{
    p->n = 0;
    p->kind = kind;
    for (int l = from; l < g->n->n_loops; l++)
        if (!g->n->vars[g->n->loops[l].var].is_reduce) p->pos[p->n++] = l;
    order_for_transposing(g, p);
}

static void emit_plan(gen *g, const plan *p, int idx, int indent);

/* Defines the derived symbols (parts of fused loops) visible from `pos` on. */
static void emit_derived(gen *g, int pos, int indent)
{
    for (int v = g->n->n_vars - 1; v >= 0; v--) {
        if (!g->is_symbol[v] || g->derived_from[v] < 0 || g->sym_depth[v] != pos) continue;
        int f = g->derived_from[v];
        const rlt_var *fv = &g->n->vars[f];
        rlt_str s;
        rlt_str_init(&s);
        print_lin(g, &g->value[f], &s);
        out(g, indent, "const long %s = (%s) %c %" PRId64 ";\n", g->cname[v], text_of(g, &s),
            fv->fused_outer == v ? '/' : '%', g->n->vars[fv->fused_inner].extent);
        rlt_str_free(&s);
    }
}

/* Opens `if` blocks for the guards placed at `pos`; returns how many were
 * opened, or -1 when one of them is known false (the code is dead). */
static int open_guards(gen *g, int pos, int indent)
{
    int opened = 0;
    for (int k = 0; k < g->n_guards; k++) {
        if (g->guard_depth[k] != pos || g->is_guard_known[k]) continue;
        lin f;
        lin_fold(g, &g->guard[k], &f);
        if (lin_is_const(g, &f)) {
            if (f.k < g->guard_bound[k]) continue;
            for (int i = 0; i < opened; i++) out(g, indent + opened - 1 - i, "}\n");
            return -1;
        }
        rlt_str s;
        rlt_str_init(&s);
        print_lin(g, &f, &s);
        out(g, indent + opened, "if (%s < %" PRId64 ") {\n", text_of(g, &s), g->guard_bound[k]);
        rlt_str_free(&s);
        opened++;
    }
    return opened;
}

static void close_blocks(gen *g, int n, int indent)
{
    for (int i = n - 1; i >= 0; i--) out(g, indent + i, "}\n");
}

/* The condition that guards versioned at `pos` hold for the whole subtree:
 * each at its largest value over the unrolled and vector loops inside. */
static bool version_condition(gen *g, int pos, rlt_str *cond, bool *chosen)
{
    bool any = false;
    for (int k = 0; k < g->n_guards; k++) {
        chosen[k] = false;
        if (g->guard_vpoint[k] != pos || g->is_guard_known[k]) continue;
        lin f;
        lin_fold(g, &g->guard[k], &f);
        int64_t extra = 0;
        for (int s = 0; s < g->n->n_vars; s++) {
            int at = f.c[s] ? rlt_nest_loop_of_var(g->n, s) : -1;
            if (at <= pos) continue;
            if (f.c[s] > 0) extra += f.c[s] * (g->n->vars[s].extent - 1);
            f.c[s] = 0;
        }
        f.k += extra;
        chosen[k] = true;
        if (lin_is_const(g, &f) && f.k < g->guard_bound[k]) continue;
        if (cond->len) rlt_str_append(cond, " && ");
        print_lin(g, &f, cond);
        rlt_str_printf(cond, " < %" PRId64, g->guard_bound[k]);
        any = true;
    }
    return any;
}

/* What comes inside the loop at plan index idx: derived symbols, guards,
 * then the next loop (twice when a fast path without guards is split off). */
static void emit_inside(gen *g, const plan *p, int idx, int indent)
{
    int pos = p->pos[idx];
    emit_derived(g, pos, indent);
    int opened = open_guards(g, pos, indent);
    if (opened < 0) return;
    rlt_str cond;
    rlt_str_init(&cond);
    bool chosen[RLT_MAX_VARS];
    bool has_version = version_condition(g, pos, &cond, chosen);
    int in = indent + opened;
    if (has_version) {
        out(g, in, "if (%s) { /* whole tile in range: no guards */\n", text_of(g, &cond));
        for (int k = 0; k < g->n_guards; k++) g->is_guard_known[k] |= chosen[k];
        emit_plan(g, p, idx + 1, in + 1);
        for (int k = 0; k < g->n_guards; k++)
            if (chosen[k]) g->is_guard_known[k] = false;
        out(g, in, "} else { /* the tail: guarded, and loops instead of unrolled copies */\n");
        bool was_acc_in_slow = g->is_acc_in_slow;
        g->slow_depth++;
        emit_plan(g, p, idx + 1, in + 1);
        g->slow_depth--;
        g->is_acc_in_slow = was_acc_in_slow;
        out(g, in, "}\n");
    } else {
        for (int k = 0; k < g->n_guards; k++)
            if (chosen[k]) g->is_guard_known[k] = true; /* always in range */
        emit_plan(g, p, idx + 1, in);
        for (int k = 0; k < g->n_guards; k++)
            if (chosen[k]) g->is_guard_known[k] = false;
    }
    rlt_str_free(&cond);
    close_blocks(g, opened, indent);
}

/* The condition under which every lane of the vector loop passes its
 * guards ("" when there are none), and whether lanes can be vectors at all.
 * *out_is_never says the condition is a constant that fails: no whole
 * vector (one wider than its axis). */
static bool vector_condition(gen *g, int pos, rlt_str *cond, bool *out_is_never)
{
    *out_is_never = false;
    int v = g->vec_var;
    for (int s = 0; s < g->n->n_vars; s++)
        if (g->is_symbol[s] && g->derived_from[s] >= 0 && g->sym_depth[s] == pos) return false;
    for (int k = 0; k < g->n_guards; k++) {
        if (g->guard_depth[k] != pos || g->is_guard_known[k]) continue;
        /* Linear in the lane: the lane where the guarded value is largest
         * decides for all of them. */
        g->is_fixed[v] = true;
        g->fixed[v] = g->guard[k].c[v] > 0 ? g->vec_width - 1 : 0;
        lin f;
        lin_fold(g, &g->guard[k], &f);
        g->is_fixed[v] = false;
        if (lin_is_const(g, &f) && f.k < g->guard_bound[k]) continue;
        if (lin_is_const(g, &f)) *out_is_never = true;
        if (cond->len) rlt_str_append(cond, " && ");
        print_lin(g, &f, cond);
        rlt_str_printf(cond, " < %" PRId64, g->guard_bound[k]);
    }
    return true;
}

/* The tail copy of a versioned tile runs rarely, so its loops stay rolled:
 * "#pragma GCC unroll 1" keeps gcc -O3 from unrolling them again (compile
 * time). Not a loop that indexes an accumulator tile, though: unrolled by
 * the compiler, the tile lives in registers; rolled, in memory, which made a
 * conv2d whose tail is a sixth of the work 40% slower. */
static void emit_keep_rolled(gen *g, const plan *p, int pos, int indent)
{
    bool uses_acc = p->kind != BODY_OUT_ZERO && p->kind != BODY_EPILOGUE && g->acc_depth >= 0 && pos >= g->acc_depth;
    if (g->slow_depth > 0 && !uses_acc) out(g, indent, "#pragma GCC unroll 1\n");
}

/* The number of lanes of a partial vector at plan position pos that pass
 * their guards, as a C expression: each guard is linear in the lane with a
 * positive coefficient, so the lanes that pass are a prefix. False when
 * there are no masked lanes at this width. */
static bool partial_lanes(gen *g, int pos, rlt_str *nv)
{
    int v = g->vec_var;
    if (!has_masked_lanes(g->vec_width) || g->mask_nv >= 0) return false;
    rlt_str_printf(nv, "%d", g->vec_width);
    rlt_str x0;
    rlt_str_init(&x0);
    bool ok = true;
    for (int k = 0; k < g->n_guards && ok; k++) {
        if (g->guard_depth[k] != pos || g->is_guard_known[k]) continue;
        lin f;
        lin_fold(g, &g->guard[k], &f);
        int64_t c = f.c[v];
        f.c[v] = 0;
        if (c <= 0) {
            ok = false;
            break;
        }
        rlt_str_clear(&x0);
        print_lin(g, &f, &x0);
        narrow_lanes(g, nv, false, text_of(g, &x0), c, g->guard_bound[k]);
    }
    note_failure(g, &x0);
    note_failure(g, nv);
    rlt_str_free(&x0);
    return ok;
}

/* The partial vector: its first lanes (nv, partial_lanes) pass the guards;
 * masked loads and stores for those, the others neither read nor written.
 * The block closes the caller's "{" or "else {". */
static void emit_partial_vector(gen *g, const plan *p, int idx, int indent, const rlt_str *nv)
{
    int k = g->n_temps++;
    out(g, indent + 1, "const long rlt_nv%d = %s;\n", k, text_of(g, nv));
    g->in_vector = true;
    g->mask_nv = k;
    emit_plan(g, p, idx + 1, indent + 1);
    g->mask_nv = -1;
    g->in_vector = false;
    out(g, indent, "}\n");
}

static void emit_vector_loop(gen *g, const plan *p, int idx, int indent)
{
    int pos = p->pos[idx];
    int v = g->n->loops[pos].var;
    rlt_str cond, nv;
    rlt_str_init(&cond);
    rlt_str_init(&nv);
    bool is_never_whole;
    bool is_vector_ok = vector_condition(g, pos, &cond, &is_never_whole);
    note_failure(g, &cond);
    if (is_vector_ok && !is_never_whole) {
        int inner = indent;
        if (cond.len) {
            out(g, indent, "if (%s) {\n", text_of(g, &cond));
            inner++;
        }
        g->in_vector = true;
        emit_plan(g, p, idx + 1, inner);
        g->in_vector = false;
        if (cond.len) out(g, indent, "} else {\n");
    } else if (is_vector_ok) {
        out(g, indent, "{\n"); /* wider than what is left of its axis: no whole vector */
    }
    if (is_vector_ok && cond.len && partial_lanes(g, pos, &nv)) {
        emit_partial_vector(g, p, idx, indent, &nv);
    } else if (!is_vector_ok || cond.len) {
        /* Lanes one at a time, each under its guards: the tail. */
        int inner = is_vector_ok ? indent + 1 : indent;
        emit_keep_rolled(g, p, pos, inner);
        out(g, inner, "for (long %s = 0; %s < %d; %s++) {\n", g->cname[v], g->cname[v], g->vec_width, g->cname[v]);
        emit_inside(g, p, idx, inner + 1);
        out(g, inner, "}\n");
        if (is_vector_ok) out(g, indent, "}\n");
    }
    rlt_str_free(&cond);
    rlt_str_free(&nv);
}

/* The write-back (or the reload of partial sums) of a vector tile whose
 * vector runs across the output's rows (conv2d's output channels in NCHW: a
 * scalar store or load per lane) when the unrolled loop at plan index idx,
 * directly outside the vector loop, walks the output's unit-stride dim: its
 * vectors (of 8 or 16 lanes) are transposed in registers in runs of 8, 4
 * or 2, and each lane's run stored or loaded at once (rlt_tstoreWxN,
 * rlt_tloadWxN in the preamble); a last single one goes lane by lane as
 * before. Returns false,
 * having emitted nothing, where that does not apply. */
static bool emit_transposed_tile(gen *g, const plan *p, int idx, int indent)
{
    int pos = p->pos[idx], v = g->n->loops[pos].var;
    bool is_load = p->kind == BODY_ACC_LOAD;
    int w = g->vec_width;
    if ((p->kind != BODY_WRITEBACK && !is_load) || (w != 8 && w != 16) || idx + 2 != p->n) return false;
    int vpos = p->pos[idx + 1];
    if (g->n->loops[vpos].kind != RLT_LOOP_VECTORIZE || g->n->loops[vpos].var != g->vec_var) return false;
    addr a;
    out_addr(g, &a);
    int64_t ls = a.l.c[g->vec_var];
    if (a.n_nl > 0 || a.l.c[v] != 1 || ls <= 1) return false;
    for (int k = 0; k < g->n_guards; k++)
        if (!g->is_guard_known[k] && (g->guard_depth[k] == pos || g->guard_depth[k] == vpos ||
                                      g->guard_vpoint[k] == pos || g->guard_vpoint[k] == vpos))
            return false;
    for (int s = 0; s < g->n->n_vars; s++)
        if (g->is_symbol[s] && g->derived_from[s] >= 0 && (g->sym_depth[s] == pos || g->sym_depth[s] == vpos))
            return false;
    const rlt_expr *epi = g->op->epilogue;
    const char *o = g->tname[g->op->n_tensors - 1];
    int64_t ext = g->n->vars[v].extent;
    rlt_str text, ref, value;
    rlt_str_init(&text);
    rlt_str_init(&ref);
    rlt_str_init(&value);
    g->is_fixed[v] = true;
    for (int64_t e0 = 0; e0 < ext;) {
        /* a run of n floats a lane goes as N = 2, 4 or 8 vectors, the last
         * N - n of them zeros, storing (loading) n floats a lane */
        int64_t run = ext - e0 >= 8 ? 8 : ext - e0;
        int64_t n_vecs = run <= 2 ? 2 : run <= 4 ? 4 : 8;
        char n_arg[32] = "";
        if (run != n_vecs) snprintf(n_arg, sizeof n_arg, ", %" PRId64, run);
        if (run == 1) {
            g->fixed[v] = e0;
            out(g, indent, "{ /* %s = %" PRId64 " */\n", g->n->vars[v].name, e0);
            emit_inside(g, p, idx, indent + 1);
            out(g, indent, "}\n");
            break;
        }
        rlt_str_clear(&text);
        g->fixed[v] = e0;
        print_addr_lane0(g, &a, &text);
        out(g, indent, "/* %s = %" PRId64 "..%" PRId64 ", transposed */\n", g->n->vars[v].name, e0, e0 + run - 1);
        int tmp = is_load ? g->n_temps++ : -1;
        if (is_load) {
            out(g, indent, "{\n");
            out(g, indent + 1, "rlt_v%dx%" PRId64 " rlt_t%d = rlt_tload%dx%" PRId64 "%s(&%s[%s], %" PRId64 "%s);\n", w,
                n_vecs, tmp, w, n_vecs, n_arg[0] ? "n" : "", o, text_of(g, &text), ls, n_arg);
        } else
            out(g, indent, "rlt_tstore%dx%" PRId64 "%s(&%s[%s], %" PRId64 "%s", w, n_vecs, n_arg[0] ? "n" : "", o,
                text_of(g, &text), ls, n_arg);
        g->in_vector = true;
        for (int64_t e = e0; e < e0 + run; e++) {
            g->fixed[v] = e;
            rlt_str_clear(&ref);
            rlt_str_clear(&value);
            acc_ref(g, &ref);
            if (is_load) {
                out(g, indent + 1, "%s = rlt_t%d.v[%" PRId64 "];\n", text_of(g, &ref), tmp, e - e0);
                continue;
            }
            if (epi && g->acc_is_final) emit_expr(g, epi, text_of(g, &ref), &value);
            else rlt_str_append(&value, text_of(g, &ref));
            out(g, 0, ", %s", text_of(g, &value));
        }
        for (int64_t e = run; e < n_vecs && !is_load; e++) out(g, 0, ", rlt_splat%d(0.0f)", w);
        g->in_vector = false;
        out(g, is_load ? indent : 0, is_load ? "}\n" : ");\n");
        e0 += run;
    }
    g->is_fixed[v] = false;
    note_failure(g, &text);
    note_failure(g, &ref);
    note_failure(g, &value);
    rlt_str_free(&text);
    rlt_str_free(&ref);
    rlt_str_free(&value);
    return true;
}

static void emit_loop(gen *g, const plan *p, int idx, int indent)
{
    int pos = p->pos[idx];
    const rlt_loop *loop = &g->n->loops[pos];
    int v = loop->var;
    int64_t ext = g->n->vars[v].extent;
    const char *name = g->cname[v];
    switch (loop->kind) {
    case RLT_LOOP_PARALLEL:
        if (loop->n_threads > 0)
            out(g, indent, "#pragma omp parallel for schedule(static) num_threads(%d)\n", loop->n_threads);
        else
            out(g, indent, "#pragma omp parallel for schedule(static) num_threads(rlt_nthreads)\n");
        /* fall through */
    case RLT_LOOP_SERIAL:
        out(g, indent, "for (long %s = 0; %s < %" PRId64 "; %s++) {\n", name, name, ext, name);
        emit_inside(g, p, idx, indent + 1);
        out(g, indent, "}\n");
        return;
    case RLT_LOOP_UNROLL:
        /* Zeroing the output and a separate epilogue are a small part of the
         * work and use no accumulator: loops keep their code (and compile
         * time) small, and the compiler unrolls what pays. So does the tail
         * copy of a versioned tile, which runs rarely; not inside an
         * accumulator declared outside that copy, though: indexing it with a
         * variable anywhere would keep the compiler from holding it in
         * registers everywhere. */
        if (p->kind == BODY_OUT_ZERO || p->kind == BODY_EPILOGUE ||
            (g->slow_depth > 0 && (g->acc_depth < 0 || pos < g->acc_depth || g->is_acc_in_slow))) {
            emit_keep_rolled(g, p, pos, indent);
            out(g, indent, "for (long %s = 0; %s < %" PRId64 "; %s++) {\n", name, name, ext, name);
            emit_inside(g, p, idx, indent + 1);
            out(g, indent, "}\n");
            return;
        }
        if (emit_transposed_tile(g, p, idx, indent)) return;
        for (int64_t c = 0; c < ext; c++) {
            g->is_fixed[v] = true;
            g->fixed[v] = c;
            out(g, indent, "{ /* %s = %" PRId64 " */\n", g->n->vars[v].name, c);
            emit_inside(g, p, idx, indent + 1);
            out(g, indent, "}\n");
        }
        g->is_fixed[v] = false;
        return;
    case RLT_LOOP_VECTORIZE:
        emit_vector_loop(g, p, idx, indent);
        return;
    }
}

/* Accumulator declaration: one element (or vector) per tile point. */
static void emit_acc_decl(gen *g, int indent)
{
    rlt_str dims;
    rlt_str_init(&dims);
    for (int l = g->acc_depth; l < g->n->n_loops; l++) {
        int v = g->n->loops[l].var;
        if (g->n->vars[v].is_reduce || v == g->vec_var) continue;
        rlt_str_printf(&dims, "[%" PRId64 "]", g->n->vars[v].extent);
    }
    note_failure(g, &dims);
    if (g->vec_var >= 0 && g->acc_depth <= rlt_nest_loop_of_var(g->n, g->vec_var))
        out(g, indent, "rlt_v%d rlt_acc%s = {0};\n", g->vec_width, dims.len ? text_of(g, &dims) : "[1]");
    else
        out(g, indent, "float rlt_acc%s = {0};\n", dims.len ? text_of(g, &dims) : "[1]");
    rlt_str_free(&dims);
}

/* The condition, checked once where the tile at loop position `pos` starts,
 * that every load of the op which can leave its tensor (convolution padding,
 * no `pad`) stays inside it for the whole tile: each such index at its
 * smallest and largest over the loops inside (register tile, reduction
 * window, vector lanes). False when there is no such load, when one indexes
 * a part of a fused loop, when some index leaves its tensor in every tile (a
 * tile spanning the whole padded width), or when no such load would become
 * a vector load without its checks (it would still be gathered lane by lane:
 * then the second copy only costs compile time, and gcc made such kernels
 * slower, depthwise 3x3 stride 2 at 4 floats: 13.9 -> 11.3 GFLOP/s). */
static bool bounds_condition(gen *g, int pos, rlt_str *cond)
{
    const rlt_expr *loads[128];
    int n_loads = rlt_op_loads(g->op, loads, 128);
    rlt_str clause;
    rlt_str_init(&clause);
    bool is_possible = true, is_vector_gain = false;
    for (int i = 0; i < n_loads && is_possible; i++) {
        const rlt_expr *e = loads[i];
        const rlt_tensor *t = &g->op->tensors[e->tensor];
        if (g->n->layouts[e->tensor].is_padded) continue;
        for (int d = 0; d < t->n_dims && is_possible; d++) {
            int64_t lo, hi;
            rlt_affine_range(g->op, &e->index[d], &lo, &hi);
            if (lo >= 0 && hi < t->dims[d]) continue;
            if (!is_vector_gain) {
                addr a;
                load_addr(g, e, &a);
                lane_pattern lp = lanes_of(g, &a);
                is_vector_gain = lp == LANES_CONTIGUOUS || lp == LANES_STRIDED;
            }
            lin x, f;
            affine_to_lin(g, &e->index[d], &x);
            lin_fold(g, &x, &f);
            int64_t lo_extra = 0, hi_extra = 0;
            for (int v = 0; v < g->n->n_vars && is_possible; v++) {
                if (!f.c[v]) continue;
                if (g->derived_from[v] >= 0) is_possible = false;
                if (rlt_nest_loop_of_var(g->n, v) < pos) continue; /* outside the tile: its value is known */
                int64_t span = f.c[v] * (g->n->vars[v].extent - 1);
                if (span > 0) hi_extra += span;
                else lo_extra += span;
                f.c[v] = 0;
            }
            lin f_lo = f, f_hi = f;
            f_lo.k += lo_extra;
            f_hi.k += hi_extra;
            if (lin_is_const(g, &f_lo) ? f_lo.k < 0 : lo < 0) {
                if (lin_is_const(g, &f_lo)) is_possible = false;
                rlt_str_clear(&clause);
                print_lin(g, &f_lo, &clause);
                rlt_str_append(&clause, " >= 0");
                if (cond->len) rlt_str_append(cond, " && ");
                rlt_str_append(cond, text_of(g, &clause));
            }
            if (lin_is_const(g, &f_hi) ? f_hi.k >= t->dims[d] : hi >= t->dims[d]) {
                if (lin_is_const(g, &f_hi)) is_possible = false;
                rlt_str_clear(&clause);
                print_lin(g, &f_hi, &clause);
                rlt_str_printf(&clause, " < %" PRId64, t->dims[d]);
                if (cond->len) rlt_str_append(cond, " && ");
                rlt_str_append(cond, text_of(g, &clause));
            }
        }
    }
    rlt_str_free(&clause);
    note_failure(g, cond);
    return is_possible && is_vector_gain && cond->len > 0;
}

static void emit_sub_plan(gen *g, int from, body_kind kind, int indent, const char *comment)
{
    plan sub;
    make_sub_plan(g, from, kind, &sub);
    out(g, indent, "/* %s */\n", comment);
    emit_plan(g, &sub, 0, indent);
}

static void emit_plan_here(gen *g, const plan *p, int idx, int indent)
{
    bool is_main = p->kind == BODY_MAIN;
    int pos = idx < p->n ? p->pos[idx] : g->n->n_loops;
    bool has_reduction = g->r0 < g->n->n_loops;
    bool zero_output = is_main && pos == g->r0 && has_reduction && !g->acc_is_final;
    bool separate_epilogue = zero_output && g->op->epilogue;
    bool acc_here = is_main && pos == g->acc_depth;
    if (zero_output) emit_sub_plan(g, g->r0, BODY_OUT_ZERO, indent, "zero the output before accumulating");
    if (acc_here) {
        if (g->slow_depth > 0) g->is_acc_in_slow = true;
        out(g, indent, "{ /* cache_write: accumulator tile */\n");
        indent++;
        emit_acc_decl(g, indent);
        if (!g->acc_is_final && has_reduction)
            emit_sub_plan(g, g->acc_depth, BODY_ACC_LOAD, indent, "continue the partial sums");
    }
    if (idx < p->n) emit_loop(g, p, idx, indent);
    else emit_body(g, p->kind, indent);
    if (acc_here) {
        emit_sub_plan(g, g->acc_depth, BODY_WRITEBACK, indent, "write the tile back");
        indent--;
        out(g, indent, "}\n");
    }
    if (separate_epilogue) emit_sub_plan(g, g->r0, BODY_EPILOGUE, indent, "epilogue");
}

/* The plan from index idx on. Where the main plan's tile starts, a tile
 * inside the tensors (most of them) reads without the padding checks, in
 * vectors, and one at the border keeps them; both copies are unrolled alike.
 * Depthwise 3x3 at 112x112, a 4 x 16 tile without a padded copy: 29 -> 41
 * GFLOP/s. */
static void emit_plan(gen *g, const plan *p, int idx, int indent)
{
    int pos = idx < p->n ? p->pos[idx] : g->n->n_loops;
    rlt_str cond;
    rlt_str_init(&cond);
    if (p->kind == BODY_MAIN && pos == g->acc_depth && bounds_condition(g, pos, &cond)) {
        out(g, indent, "if (%s) { /* the tile's loads are in bounds: no checks */\n", text_of(g, &cond));
        g->is_bounds_known = true;
        emit_plan_here(g, p, idx, indent + 1);
        g->is_bounds_known = false;
        out(g, indent, "} else { /* at the border: loads checked */\n");
        emit_plan_here(g, p, idx, indent + 1);
        out(g, indent, "}\n");
    } else {
        emit_plan_here(g, p, idx, indent);
    }
    rlt_str_free(&cond);
}

/* ---- staging ------------------------------------------------------------ */

/* A staged weight: staged once by SYMBOL_prepare, not on every call. */
static bool is_prestaged(const gen *g, int t)
{
    return t + 1 < g->op->n_tensors && g->ws_offset[t] >= 0 && g->op->tensors[t].is_weight;
}

/* The tensor dim that the innermost physical dim of t's stage walks with
 * step 1 (its coordinate is base + p_last), or -1 when there is none: then
 * every element checks its own coordinates. */
static int staging_inner_dim(const gen *g, int t)
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

/* Copies t into its stage (padding zeros, blocks). The innermost loop is
 * split where the source coordinate enters and leaves the tensor: zeros,
 * a plain copy without checks, zeros. */
static void emit_staging(gen *g, int t, bool use_openmp)
{
    const rlt_tensor *tensor = &g->op->tensors[t];
    const rlt_layout *l = &g->n->layouts[t];
    int np = g->n_phys[t], last = np - 1;
    const int64_t *pd = g->phys_dims[t];
    rlt_str desc;
    rlt_str_init(&desc);
    for (int d = 0; d < np; d++) rlt_str_printf(&desc, "[%" PRId64 "]", pd[d]);
    out(g, 1, "/* stage %s into %s_s%s%s%s */\n", tensor->name, g->tname[t], text_of(g, &desc),
        l->is_padded ? " padded" : "", l->n_blocks ? " packed" : "");
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
    for (int d = 0; d < n_outer; d++) {
        if (d == par) out(g, 1 + d, "#pragma omp parallel for schedule(static) num_threads(rlt_nthreads)\n");
        else out(g, 1 + d, "#pragma GCC unroll 1\n");
        out(g, 1 + d, "for (long p%d = 0; p%d < %" PRId64 "; p%d++)%s\n", d, d, pd[d], d, d + 1 == n_outer ? " {" : "");
    }
    if (n_outer == 0) out(g, 1, "{\n");
    int in = 1 + n_outer;
    rlt_str cond, src, dst;
    rlt_str_init(&cond);
    rlt_str_init(&src);
    rlt_str_init(&dst);
    int64_t strides[RLT_MAX_DIMS];
    dims_strides(tensor->dims, tensor->n_dims, strides);
    for (int d = 0; d < tensor->n_dims; d++) {
        int outer = g->outer_pos[t][d], inner = g->inner_pos[t][d];
        const char *sep = cond.len ? " && " : "";
        if (d == walk) {
            /* the coordinate without p_last: base */
            if (inner >= 0)
                out(g, in, "long b%d = p%d * %" PRId64 " - %" PRId64 ";\n", d, outer, pd[inner], l->pad_lo[d]);
            else
                out(g, in, "long b%d = -%" PRId64 ";\n", d, l->pad_lo[d]);
            rlt_str_printf(&src, "%sb%d * %" PRId64, d ? " + " : "", d, strides[d]);
            continue;
        }
        if (inner >= 0)
            out(g, in, "long c%d = p%d * %" PRId64 " + p%d - %" PRId64 ";\n", d, outer, pd[inner], inner, l->pad_lo[d]);
        else
            out(g, in, "long c%d = p%d - %" PRId64 ";\n", d, outer, l->pad_lo[d]);
        rlt_str_printf(&cond, "%sc%d >= 0 && c%d < %" PRId64, sep, d, d, tensor->dims[d]);
        rlt_str_printf(&src, "%sc%d * %" PRId64, d ? " + " : "", d, strides[d]);
    }
    int64_t pstrides[2 * RLT_MAX_DIMS];
    dims_strides(pd, np, pstrides);
    for (int d = 0; d < n_outer; d++) rlt_str_printf(&dst, "%sp%d * %" PRId64, d ? " + " : "", d, pstrides[d]);
    if (!dst.len) rlt_str_append(&dst, "0");
    if (!src.len) rlt_str_append(&src, "0");
    if (walk < 0) {
        out(g, in, "%s_s[%s] = (%s) ? %s[%s] : 0.0f;\n", g->tname[t], text_of(g, &dst), text_of(g, &cond),
            g->tname[t], text_of(g, &src));
    } else {
        /* p_last copies where 0 <= b + p_last < dim, and the other dims are in range */
        int64_t n_last = pd[last], dim = tensor->dims[walk];
        out(g, in, "long rlt_lo = 0, rlt_hi = 0;\n");
        if (cond.len) out(g, in, "if (%s) {\n", text_of(g, &cond));
        else out(g, in, "{\n");
        /* rlt_lo = clamp(-b, 0, n_last); rlt_hi = clamp(dim - b, rlt_lo, n_last) */
        char b[16], p[16];
        snprintf(b, sizeof b, "b%d", walk);
        snprintf(p, sizeof p, "p%d", last);
        out(g, in + 1, "rlt_lo = -%s < 0 ? 0 : -%s > %" PRId64 " ? %" PRId64 " : -%s;\n", b, b, n_last, n_last, b);
        out(g, in + 1, "rlt_hi = %" PRId64 " - %s < rlt_lo ? rlt_lo : %" PRId64 " - %s > %" PRId64 " ? %" PRId64
            " : %" PRId64 " - %s;\n", dim, b, dim, b, n_last, n_last, dim, b);
        out(g, in, "}\n");
        out(g, in, "float *restrict rlt_dst = %s_s + %s;\n", g->tname[t], text_of(g, &dst));
        out(g, in, "long rlt_src = %s;\n", text_of(g, &src));
        out(g, in, "#pragma GCC unroll 1\n");
        out(g, in, "for (long %s = 0; %s < rlt_lo; %s++) rlt_dst[%s] = 0.0f;\n", p, p, p, p);
        out(g, in, "#pragma GCC unroll 1\n");
        out(g, in, "for (long %s = rlt_lo; %s < rlt_hi; %s++) rlt_dst[%s] = %s[rlt_src + %s * %" PRId64 "];\n", p, p,
            p, p, g->tname[t], p, strides[walk]);
        out(g, in, "#pragma GCC unroll 1\n");
        out(g, in, "for (long %s = rlt_hi; %s < %" PRId64 "; %s++) rlt_dst[%s] = 0.0f;\n", p, p, n_last, p, p);
    }
    out(g, in - 1, "}\n");
    rlt_str_free(&cond);
    rlt_str_free(&src);
    rlt_str_free(&dst);
}

/* ---- the kernel --------------------------------------------------------- */

rlt_status rlt_codegen_kernel(const rlt_nest *nest, rlt_kernel_src *ksrc, rlt_diag *diag)
{
    rlt_status st = rlt_nest_check(nest, diag);
    if (st != RLT_STATUS_OK) return st;
    gen *g = rlt_calloc(1, sizeof *g);
    if (!g) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory generating C");
    rlt_str s;
    rlt_str_init(&s);
    g->n = nest;
    g->op = nest->op;
    g->s = &s;
    make_cnames(g);
    analyse(g);
    const rlt_op *op = g->op;
    bool needs_openmp = false;
    for (int l = 0; l < nest->n_loops; l++) needs_openmp |= nest->loops[l].kind == RLT_LOOP_PARALLEL;

    rlt_str tree;
    rlt_str_init(&tree);
    rlt_nest_print(nest, &tree);
    out(g, 0, "/* %s\n", op->spec);
    for (const char *line = text_of(g, &tree); *line;) {
        const char *end = strchr(line, '\n');
        int len = end ? (int)(end - line) : (int)strlen(line);
        out(g, 0, " *   %.*s\n", len, line);
        line = end ? end + 1 : line + len;
    }
    out(g, 0, " */\n");
    rlt_str_free(&tree);
    out(g, 0, "size_t %s_workspace_bytes(void) { return %" PRId64 "; }\n\n", CODEGEN_SYMBOL_PLACEHOLDER, g->ws_bytes);

    /* Weights' stages: once, before the calls (codegen.h). */
    out(g, 0, "void %s_prepare(float *const *rlt_t, void *rlt_ws, int rlt_nthreads)\n{\n", CODEGEN_SYMBOL_PLACEHOLDER);
    for (int t = 0; t + 1 < op->n_tensors; t++) {
        if (!is_prestaged(g, t)) continue;
        out(g, 1, "const float *restrict %s = rlt_t[%d];\n", g->tname[t], t);
        out(g, 1, "float *restrict %s_s = (float *)((char *)rlt_ws + %" PRId64 ");\n", g->tname[t], g->ws_offset[t]);
    }
    bool any_prestaged = false;
    for (int t = 0; t + 1 < op->n_tensors; t++) any_prestaged |= is_prestaged(g, t);
    if (!any_prestaged) out(g, 1, "/* no weight is staged */\n");
    out(g, 1, "(void)rlt_t;\n");
    out(g, 1, "(void)rlt_ws;\n");
    out(g, 1, "if (rlt_nthreads < 1) rlt_nthreads = 1;\n");
    for (int t = 0; t + 1 < op->n_tensors; t++)
        if (is_prestaged(g, t)) emit_staging(g, t, needs_openmp);
    out(g, 0, "}\n\n");

    out(g, 0, "void %s(float *const *rlt_t, void *rlt_ws, int rlt_nthreads)\n{\n", CODEGEN_SYMBOL_PLACEHOLDER);
    for (int t = 0; t < op->n_tensors; t++) {
        bool is_out = t == op->n_tensors - 1;
        out(g, 1, "%sfloat *restrict %s = rlt_t[%d];\n", is_out ? "" : "const ", g->tname[t], t);
        if (!is_out && g->ws_offset[t] >= 0)
            out(g, 1, "%sfloat *restrict %s_s = (float *)((char *)rlt_ws + %" PRId64 ");\n",
                is_prestaged(g, t) ? "const " : "", g->tname[t], g->ws_offset[t]);
    }
    out(g, 1, "(void)rlt_ws;\n");
    out(g, 1, "if (rlt_nthreads < 1) rlt_nthreads = 1;\n");
    for (int t = 0; t + 1 < op->n_tensors; t++)
        if (g->ws_offset[t] >= 0 && !is_prestaged(g, t)) emit_staging(g, t, needs_openmp);
    plan main_plan = {.n = nest->n_loops, .kind = BODY_MAIN};
    for (int l = 0; l < nest->n_loops; l++) main_plan.pos[l] = l;
    emit_plan(g, &main_plan, 0, 1);
    out(g, 0, "}\n");
    rlt_free(g);
    return codegen_finish(&s, "rlt_k_", needs_openmp, ksrc, diag);
}

void codegen_print_axis_affine(const rlt_op *op, const rlt_affine *a, const char *prefix, rlt_str *s)
{
    bool any = false;
    for (int x = 0; x < op->n_axes; x++) {
        int64_t c = a->coef[x];
        if (!c) continue;
        if (any) rlt_str_append(s, c < 0 ? " - " : " + ");
        else if (c < 0) rlt_str_append(s, "-");
        int64_t m = c < 0 ? -c : c;
        if (m == 1) rlt_str_printf(s, "%s%s", prefix, op->axes[x].name);
        else rlt_str_printf(s, "%s%s*%" PRId64, prefix, op->axes[x].name, m);
        any = true;
    }
    if (!any) rlt_str_printf(s, "%" PRId64, a->offset);
    else if (a->offset) rlt_str_printf(s, " %c %" PRId64, a->offset < 0 ? '-' : '+', a->offset < 0 ? -a->offset : a->offset);
}
