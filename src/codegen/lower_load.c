/*
 * lower_load.c - the loads of a nest being lowered: how each is emitted,
 * and its C text.
 *
 * lower_load_choose picks a load's kind for the statement pass
 * (lower_stmt.c): scalar, broadcast, contiguous or strided vector, a
 * stride-2 window of a convolution's unrolled taps, masked at the borders
 * and in partial vectors, or lane by lane; lower_emit_load writes it as its
 * LOAD node says (lower_print.c calls it for each load of an expression).
 * A tensor without a padded copy needs bounds checks: a load's condition,
 * the lanes a masked load reads (lower_load_lanes, lower_narrow_lanes), and
 * the checks a reduction's statement takes over from its factors
 * (lower_hoist_factor_checks). lower_emit_lanes builds a vector lane by
 * lane, for loads and the output's gather.
 */
#include "codegen/lowered.h"

#include <inttypes.h>
#include <string.h>

/* ---- bounds checks ------------------------------------------------------ */

/* Appends "(x) >= 0 && (x) < n" to a condition (after " && " when it has
 * a clause already). */
static void append_range_check(const lower_gen *g, rlt_str *cond, const lower_lin *x, int64_t n)
{
    if (cond->len) rlt_str_append(cond, " && ");
    rlt_str_append(cond, "(");
    lower_lin_print(g, x, cond);
    rlt_str_printf(cond, ") >= 0 && (");
    lower_lin_print(g, x, cond);
    rlt_str_printf(cond, ") < %" PRId64, n);
}

unsigned lower_hoisted_dims(const lower_gen *g, const rlt_expr *e)
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

static dim_reach load_dim_reach(const lower_gen *g, const rlt_expr *e, int d, lower_lin *x, lower_lin *f)
{
    const rlt_tensor *t = &g->op->tensors[e->tensor];
    int64_t lo, hi;
    rlt_affine_range(g->op, &e->index[d], &lo, &hi);
    if (lo >= 0 && hi < t->dims[d]) return DIM_IN;
    lower_affine_to_lin(g, &e->index[d], x);
    lower_lin_fold(g, x, f);
    if (!lower_lin_is_const(g, f)) return DIM_CHECKED;
    return f->k >= 0 && f->k < t->dims[d] ? DIM_IN : DIM_OUT;
}

/* Bounds condition of a load whose tensor is not padded: "" when always in. */
static void load_condition(const lower_gen *g, const rlt_expr *e, rlt_str *cond)
{
    const rlt_tensor *t = &g->op->tensors[e->tensor];
    if (g->n->layouts[e->tensor].is_padded || g->at.is_bounds_known) return;
    unsigned hoisted = lower_hoisted_dims(g, e);
    for (int d = 0; d < t->n_dims; d++) {
        lower_lin x, f;
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

/* The address load e reads and its bounds condition (load_condition), into
 * an initialized, empty cond. */
static void load_addr_condition(const lower_gen *g, const rlt_expr *e, lower_addr *a, rlt_str *cond)
{
    lower_load_addr(g, e, a);
    load_condition(g, e, cond);
    lower_note_failure(g, cond);
}

/* Masked lanes exist for these widths (the preamble's rlt_ldmW, rlt_stmW). */
bool lower_has_masked_lanes(int width) { return width == 4 || width == 8 || width == 16; }

/* Narrows a bound of a lane range, held as C text, by an index x0 + c *
 * lane (c > 0) that must stay inside [0, n): a lower bound to the first
 * lane where it is >= 0, an upper one to the end of the lanes where it is
 * below n. */
void lower_narrow_lanes(lower_gen *g, rlt_str *bound, bool is_lower, const char *x0, int64_t c, int64_t n)
{
    rlt_str old;
    rlt_str_init(&old);
    rlt_str_append(&old, lower_text_of(g, bound));
    rlt_str_clear(bound);
    if (is_lower) rlt_str_printf(bound, "rlt_lmax(%s, rlt_lane_from(%s, %" PRId64 "))", lower_text_of(g, &old), x0, c);
    else
        rlt_str_printf(bound, "rlt_lmin(%s, rlt_lane_to(%s, %" PRId64 ", %" PRId64 "))", lower_text_of(g, &old),
                       x0, c, n);
    lower_note_failure(g, &old);
    rlt_str_free(&old);
}

/* An index linear in the lane, x0 + c * lane with c > 0, is inside [0, n)
 * on a range of lanes. In a partial vector, hi is at most the vector's end. */
bool lower_load_lanes(lower_gen *g, const rlt_expr *e, rlt_str *cond, rlt_str *lo, rlt_str *hi)
{
    const rlt_tensor *t = &g->op->tensors[e->tensor];
    int v = g->vec_var;
    rlt_str_printf(lo, "0");
    if (lower_mask_nv(g) >= 0) rlt_str_printf(hi, "rlt_nv%d", lower_mask_nv(g));
    else rlt_str_printf(hi, "%d", g->vec_width);
    if (g->n->layouts[e->tensor].is_padded || g->at.is_bounds_known) return true;
    unsigned hoisted = lower_hoisted_dims(g, e);
    bool ok = true;
    for (int d = 0; d < t->n_dims && ok; d++) {
        if (hoisted >> d & 1u) continue;
        int64_t rlo, rhi;
        rlt_affine_range(g->op, &e->index[d], &rlo, &rhi);
        if (rlo >= 0 && rhi < t->dims[d]) continue;
        lower_lin x, f;
        lower_affine_to_lin(g, &e->index[d], &x);
        lower_lin_fold(g, &x, &f); /* the vector variable is free here: its coefficient is the lane's */
        int64_t c = f.c[v];
        f.c[v] = 0;          /* the index at lane 0 */
        if (c < 0) {
            ok = false;
        } else if (c == 0) {
            if (lower_lin_is_const(g, &f) && f.k >= 0 && f.k < t->dims[d]) continue;
            append_range_check(g, cond, &f, t->dims[d]);
        } else {
            rlt_str x0;
            rlt_str_init(&x0);
            lower_lin_print(g, &f, &x0);
            if (rlo < 0) lower_narrow_lanes(g, lo, true, lower_text_of(g, &x0), c, 0);
            if (rhi >= t->dims[d]) lower_narrow_lanes(g, hi, false, lower_text_of(g, &x0), c, t->dims[d]);
            lower_note_failure(g, &x0);
            rlt_str_free(&x0);
        }
    }
    lower_note_failure(g, cond);
    lower_note_failure(g, lo);
    lower_note_failure(g, hi);
    return ok;
}

/* ---- loads ------------------------------------------------------------- */

static const char *load_base(const lower_gen *g, int t, char *buf, size_t n)
{
    if (t != g->op->n_tensors - 1 && g->ws_offset[t] >= 0) snprintf(buf, n, "%s_s", g->tname[t]);
    else snprintf(buf, n, "%s", g->tname[t]);
    return buf;
}

/* A scalar load (lanes fixed or not vectorizing). */
static void emit_scalar_load(lower_gen *g, const rlt_expr *e, rlt_str *s)
{
    lower_addr a;
    rlt_str cond;
    rlt_str_init(&cond);
    load_addr_condition(g, e, &a, &cond);
    char base[RLT_NAME_MAX + 8];
    load_base(g, e->tensor, base, sizeof base);
    if (cond.len && strcmp(lower_text_of(g, &cond), "0") == 0) {
        rlt_str_append(s, "0.0f");
    } else if (cond.len) {
        rlt_str_printf(s, "((%s) ? %s[", lower_text_of(g, &cond), base);
        lower_addr_print(g, &a, s);
        rlt_str_append(s, "] : 0.0f)");
    } else {
        rlt_str_printf(s, "%s[", base);
        lower_addr_print(g, &a, s);
        rlt_str_append(s, "]");
    }
    rlt_str_free(&cond);
}

void lower_emit_lanes(lower_gen *g, lower_lane_fn fn, const void *arg, rlt_str *s)
{
    rlt_str_printf(s, "(rlt_v%d){", g->vec_width);
    lower_lane_state was = lower_lanes_enter(g);
    for (int lane = 0; lane < g->vec_width; lane++) {
        g->at.fixed[g->vec_var] = lane;
        if (lane) rlt_str_append(s, ", ");
        if (lower_mask_nv(g) >= 0) rlt_str_printf(s, "(%d < rlt_nv%d ? ", lane, lower_mask_nv(g));
        fn(g, arg, s);
        if (lower_mask_nv(g) >= 0) rlt_str_append(s, " : 0.0f)");
    }
    lower_lanes_leave(g, &was);
    rlt_str_append(s, "}");
}

static void lane_load(lower_gen *g, const void *arg, rlt_str *s) { emit_scalar_load(g, arg, s); }

/* A contiguous or strided vector load (address a, from base) of the lanes
 * inside the tensor and the partial vector, in one masked load; false, with
 * nothing emitted, when its lanes cannot be bounded (load_lanes). */
static bool emit_masked_load(lower_gen *g, const rlt_expr *e, const lower_addr *a, const char *base, rlt_str *s)
{
    rlt_str cond, lo, hi;
    rlt_str_init(&cond);
    rlt_str_init(&lo);
    rlt_str_init(&hi);
    bool ok = lower_load_lanes(g, e, &cond, &lo, &hi);
    if (ok) {
        if (cond.len) rlt_str_printf(s, "((%s) ? ", lower_text_of(g, &cond));
        if (lower_lanes_of(g, a) == LOWER_LANES_STRIDED)
            rlt_str_printf(s, "rlt_ldm%" PRId64 "_%d(&%s[", a->l.c[g->vec_var], g->vec_width, base);
        else
            rlt_str_printf(s, "rlt_ldm%d(&%s[", g->vec_width, base);
        lower_addr_print_lane0(g, a, s);
        rlt_str_printf(s, "], %s, %s)", lower_text_of(g, &lo), lower_text_of(g, &hi));
        if (cond.len) rlt_str_printf(s, " : rlt_splat%d(0.0f))", g->vec_width);
    }
    rlt_str_free(&cond);
    rlt_str_free(&lo);
    rlt_str_free(&hi);
    return ok;
}

/* Memory stride of dim d of the tensor a load of t reads (its staged copy if
 * it has one), or 0 when that copy splits d into blocks. */
static int64_t dim_stride(const lower_gen *g, int t, int d)
{
    const rlt_tensor *tensor = &g->op->tensors[t];
    if (t == g->op->n_tensors - 1 || g->ws_offset[t] < 0) {
        int64_t strides[RLT_MAX_DIMS];
        lower_dims_strides(tensor->dims, tensor->n_dims, strides);
        return strides[d];
    }
    if (g->inner_pos[t][d] >= 0) return 0;
    int64_t strides[2 * RLT_MAX_DIMS];
    lower_dims_strides(g->phys_dims[t], g->n_phys[t], strides);
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
 * 2-vector tile: 6 loads and 3 shuffles a row and vector -> 3 and 3.
 *
 * window_taps says whether load e (address a) is of that kind, and finds
 * its indices (idx), the row's dim (dw), the tap symbols, the taps' offset
 * here and the last tap's. */
static bool window_taps(const lower_gen *g, const rlt_expr *e, const lower_addr *a, lower_lin *idx, int *out_dw,
                        bool *is_tap, int64_t *out_tap, int64_t *out_last_tap)
{
    const rlt_tensor *t = &g->op->tensors[e->tensor];
    int v = g->vec_var;
    if (g->vec_width != 16 || a->l.c[v] != 2 || a->n_nl) return false;
    if (lower_mask_nv(g) >= 0 && g->n->vars[v].is_reduce) return false;
    int dw = -1;
    for (int d = 0; d < t->n_dims; d++) {
        lower_affine_to_lin(g, &e->index[d], &idx[d]);
        if (!idx[d].c[v]) continue;
        if (dw >= 0) return false;
        dw = d;
    }
    if (dw < 0 || idx[dw].c[v] != 2 || dim_stride(g, e->tensor, dw) != 1) return false;
    int64_t tap = 0, last_tap = 0;
    for (int f = 0; f < g->n->n_vars; f++) {
        int64_t c = idx[dw].c[f];
        if (f == v || !g->at.is_fixed[f] || c <= 0 || c >= 32) continue;
        bool is_only_here = true;
        for (int d = 0; d < t->n_dims; d++)
            if (d != dw && idx[d].c[f]) is_only_here = false;
        for (int k = 0; k < g->n_guards; k++)
            if (g->guard[k].c[f]) is_only_here = false; /* a tail's guard: not every tap is there */
        if (!is_only_here) continue;
        is_tap[f] = true;
        tap += c * g->at.fixed[f];
        last_tap += c * (g->n->vars[f].extent - 1);
    }
    *out_dw = dw;
    *out_tap = tap;
    *out_last_tap = last_tap;
    return last_tap >= 1 && last_tap <= 31;
}

/* Emits the window load of e (address a, from base), or returns false. */
static bool emit_window_load(lower_gen *g, const rlt_expr *e, const lower_addr *a, const char *base, rlt_str *s)
{
    const rlt_tensor *t = &g->op->tensors[e->tensor];
    int v = g->vec_var;
    lower_lin idx[RLT_MAX_DIMS];
    bool is_tap[RLT_MAX_VARS] = {false};
    int dw;
    int64_t tap, last_tap;
    if (!window_taps(g, e, a, idx, &dw, is_tap, &tap, &last_tap)) return false;
    int64_t nw = last_tap + 31;

    /* the window's start: lane 0 with every tap symbol at 0 */
    bool was_fixed[RLT_MAX_VARS];
    int64_t old_fixed[RLT_MAX_VARS];
    for (int f = 0; f < g->n->n_vars; f++) {
        was_fixed[f] = g->at.is_fixed[f];
        old_fixed[f] = g->at.fixed[f];
        if (f == v || is_tap[f]) {
            g->at.is_fixed[f] = true;
            g->at.fixed[f] = 0;
        }
    }
    lower_lin x0;
    lower_lin_fold(g, &idx[dw], &x0);
    rlt_str start, first;
    rlt_str_init(&start);
    rlt_str_init(&first);
    lower_addr_print(g, a, &start);
    lower_lin_print(g, &x0, &first);
    for (int f = 0; f < g->n->n_vars; f++) {
        g->at.is_fixed[f] = was_fixed[f];
        g->at.fixed[f] = old_fixed[f];
    }

    /* the other dims' bounds do not depend on the lane: one condition */
    bool is_checked = !g->n->layouts[e->tensor].is_padded && !g->at.is_bounds_known;
    bool is_zero = false;
    rlt_str cond;
    rlt_str_init(&cond);
    unsigned hoisted = lower_hoisted_dims(g, e);
    for (int d = 0; d < t->n_dims && is_checked && !is_zero; d++) {
        lower_lin x, f;
        if (d == dw || hoisted >> d & 1u) continue;
        dim_reach reach = load_dim_reach(g, e, d, &x, &f);
        if (reach == DIM_OUT) is_zero = true;
        else if (reach == DIM_CHECKED) append_range_check(g, &cond, &f, t->dims[d]);
    }
    int64_t lo = 0, hi = 0;
    lower_lin_range(g, &x0, &lo, &hi);
    bool is_lo_in = !is_checked || lo >= 0, is_hi_in = !is_checked || hi + nw <= t->dims[dw];
    if (is_zero) {
        rlt_str_printf(s, "rlt_splat16(0.0f)");
    } else {
        if (cond.len) rlt_str_printf(s, "((%s) ? ", lower_text_of(g, &cond));
        if (is_lo_in && is_hi_in && lower_mask_nv(g) < 0) {
            rlt_str_printf(s, "rlt_ldw2u_16(&%s[%s], %" PRId64 ", %" PRId64 ")", base,
                           lower_text_of(g, &start), tap, nw);
        } else {
            rlt_str_printf(s, "rlt_ldw2_16(&%s[%s], %" PRId64 ", %" PRId64 ", ", base,
                           lower_text_of(g, &start), tap, nw);
            /* the window's elements inside the row: e0 = -first, e1 = width - first */
            bool is_const = lower_lin_is_const(g, &x0);
            if (is_lo_in) rlt_str_append(s, "0, ");
            else if (is_const) rlt_str_printf(s, "%" PRId64 ", ", -x0.k);
            else rlt_str_printf(s, "-(%s), ", lower_text_of(g, &first));
            if (lower_mask_nv(g) >= 0) rlt_str_append(s, "rlt_lmin(");
            if (is_hi_in) rlt_str_printf(s, "%" PRId64, nw);
            else if (is_const) rlt_str_printf(s, "%" PRId64, t->dims[dw] - x0.k);
            else rlt_str_printf(s, "%" PRId64 " - (%s)", t->dims[dw], lower_text_of(g, &first));
            /* past the partial vector's last lane, no tap reads */
            if (lower_mask_nv(g) >= 0) rlt_str_printf(s, ", %" PRId64 " + 2 * rlt_nv%d - 1)", last_tap, lower_mask_nv(g));
            rlt_str_append(s, ")");
        }
        if (cond.len) rlt_str_append(s, " : rlt_splat16(0.0f))");
    }
    lower_note_failure(g, &cond);
    lower_note_failure(g, &start);
    lower_note_failure(g, &first);
    rlt_str_free(&cond);
    rlt_str_free(&start);
    rlt_str_free(&first);
    return true;
}

lower_load_kind lower_load_choose(lower_gen *g, const rlt_expr *e)
{
    if (!g->at.in_vector) return LOWER_LOAD_SCALAR;
    lower_addr a;
    rlt_str cond, lo, hi;
    rlt_str_init(&cond);
    rlt_str_init(&lo);
    rlt_str_init(&hi);
    load_addr_condition(g, e, &a, &cond);
    bool is_guarded = cond.len > 0;
    rlt_str_clear(&cond);
    lower_lane_pattern p = lower_addr_lanes(g, &a);
    lower_lin idx[RLT_MAX_DIMS];
    bool is_tap[RLT_MAX_VARS] = {false};
    int dw;
    int64_t tap, last_tap;
    bool is_window = p == LOWER_LANES_STRIDED && window_taps(g, e, &a, idx, &dw, is_tap, &tap, &last_tap);
    bool wants_mask = !is_window && (is_guarded || lower_mask_nv(g) >= 0) &&
                      (p == LOWER_LANES_CONTIGUOUS || p == LOWER_LANES_STRIDED) && lower_has_masked_lanes(g->vec_width);
    bool is_masked = wants_mask && lower_load_lanes(g, e, &cond, &lo, &hi);
    rlt_str_free(&cond);
    rlt_str_free(&lo);
    rlt_str_free(&hi);
    if (is_window) return LOWER_LOAD_WINDOW;
    if (is_masked) return LOWER_LOAD_MASKED;
    if (p == LOWER_LANES_GATHER || (is_guarded && p != LOWER_LANES_UNIFORM) ||
        (lower_mask_nv(g) >= 0 && p != LOWER_LANES_UNIFORM))
        return LOWER_LOAD_LANES;
    if (p == LOWER_LANES_STRIDED) return LOWER_LOAD_STRIDED;
    return p == LOWER_LANES_UNIFORM ? LOWER_LOAD_BROADCAST : LOWER_LOAD_VECTOR;
}

void lower_emit_load(lower_gen *g, const rlt_expr *e, lower_load_kind kind, rlt_str *s)
{
    lower_addr a;
    lower_load_addr(g, e, &a);
    char base[RLT_NAME_MAX + 8];
    load_base(g, e->tensor, base, sizeof base);
    if (kind == LOWER_LOAD_SCALAR) {
        emit_scalar_load(g, e, s);
    } else if (kind == LOWER_LOAD_WINDOW || kind == LOWER_LOAD_MASKED) {
        bool is_done = kind == LOWER_LOAD_WINDOW ? emit_window_load(g, e, &a, base, s)
                                                 : emit_masked_load(g, e, &a, base, s);
        RLT_ASSERT(is_done);
    } else if (kind == LOWER_LOAD_LANES) {
        lower_emit_lanes(g, lane_load, e, s);
    } else if (kind == LOWER_LOAD_BROADCAST) {
        rlt_str_printf(s, "rlt_splat%d(", g->vec_width);
        g->at.in_vector = false;
        emit_scalar_load(g, e, s);
        g->at.in_vector = true;
        rlt_str_append(s, ")");
    } else {
        if (kind == LOWER_LOAD_STRIDED) rlt_str_printf(s, "rlt_lds%" PRId64 "_", a.l.c[g->vec_var]);
        else rlt_str_append(s, "rlt_load");
        rlt_str_printf(s, "%d(&%s[", g->vec_width, base);
        lower_addr_print_lane0(g, &a, s);
        rlt_str_append(s, "])");
    }
}

/* ---- the checks a statement takes over --------------------------------- */

/* Whether a linear index takes a different value in each lane of the vector
 * being emitted. */
static bool varies_by_lane(const lower_gen *g, const lower_lin *x)
{
    if (!g->at.in_vector || g->vec_var < 0) return false;
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
bool lower_hoist_factor_checks(lower_gen *g, const rlt_expr *e, rlt_str *guard)
{
    if (e->kind == RLT_EXPR_MUL)
        return lower_hoist_factor_checks(g, e->a, guard) && lower_hoist_factor_checks(g, e->b, guard);
    if (e->kind == RLT_EXPR_NEG) return lower_hoist_factor_checks(g, e->a, guard);
    if (e->kind != RLT_EXPR_LOAD || g->n->layouts[e->tensor].is_padded || g->at.is_bounds_known ||
        g->n_hoisted == RLT_MAX_TENSORS)
        return true;
    const rlt_tensor *t = &g->op->tensors[e->tensor];
    unsigned dims = 0;
    for (int d = 0; d < t->n_dims; d++) {
        lower_lin x, f;
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
