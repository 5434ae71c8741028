/*
 * lower_access.c - the addresses and output accesses of a nest being
 * lowered, as C text.
 *
 * Addresses (lower_load_addr, lower_out_addr: linear where they can be,
 * block / offset pieces in a packed copy) and how they vary across the
 * vector's lanes (lower_lanes_of); the vector variable fixed lane by lane
 * (lower_lanes_enter, lower_lanes_leave); and the output: how it is
 * accessed (lower_out_choose), its accumulator element (lower_acc_ref), its
 * value (lower_out_value) and stores (lower_store_out).
 */
#include "codegen/lowered.h"

#include <inttypes.h>
#include <string.h>

/* ---- addresses ---------------------------------------------------------- */

void lower_dims_strides(const int64_t *dims, int n, int64_t *strides)
{
    int64_t st = 1;
    for (int d = n - 1; d >= 0; d--) {
        strides[d] = st;
        st *= dims[d];
    }
}

/* Splits x into x / b and x % b; linear when the remainder's range stays in
 * [0, b) (it does when the loops were split to match the block). */
static void add_block_pieces(const lower_gen *g, const lower_lin *x_in, int64_t b, int64_t outer_stride,
                             int64_t inner_stride, lower_addr *a)
{
    lower_lin x;
    lower_lin_fold(g, x_in, &x);
    lower_lin q, r;
    lower_lin_zero(&q);
    lower_lin_zero(&r);
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
    lower_lin_range(g, &r, &lo, &hi);
    if (lo >= 0 && hi < b) {
        lower_lin_add_scaled(&a->l, &q, outer_stride);
        lower_lin_add_scaled(&a->l, &r, inner_stride);
        return;
    }
    RLT_ASSERT(a->n_nl + 2 <= (int)RLT_ARRAY_LEN(a->nl));
    a->nl[a->n_nl++] = (lower_nonlin){.x = x, .b = b, .is_div = true, .stride = outer_stride};
    a->nl[a->n_nl++] = (lower_nonlin){.x = x, .b = b, .is_div = false, .stride = inner_stride};
}

/* Address of a load of tensor t (its staged copy if it has one). */
void lower_load_addr(const lower_gen *g, const rlt_expr *e, lower_addr *a)
{
    const rlt_tensor *t = &g->op->tensors[e->tensor];
    memset(a, 0, sizeof *a);
    lower_lin idx[RLT_MAX_DIMS];
    for (int d = 0; d < t->n_dims; d++) lower_affine_to_lin(g, &e->index[d], &idx[d]);
    if (e->tensor == g->op->n_tensors - 1 || g->ws_offset[e->tensor] < 0) {
        int64_t strides[RLT_MAX_DIMS];
        lower_dims_strides(t->dims, t->n_dims, strides);
        for (int d = 0; d < t->n_dims; d++) lower_lin_add_scaled(&a->l, &idx[d], strides[d]);
        return;
    }
    const rlt_layout *l = &g->n->layouts[e->tensor];
    int64_t strides[2 * RLT_MAX_DIMS];
    lower_dims_strides(g->phys_dims[e->tensor], g->n_phys[e->tensor], strides);
    for (int d = 0; d < t->n_dims; d++) {
        idx[d].k += l->pad_lo[d];
        int64_t outer_stride = strides[g->outer_pos[e->tensor][d]];
        int inner = g->inner_pos[e->tensor][d];
        if (inner < 0) lower_lin_add_scaled(&a->l, &idx[d], outer_stride);
        else add_block_pieces(g, &idx[d], g->phys_dims[e->tensor][inner], outer_stride, strides[inner], a);
    }
}

/* Address of the output element at the current point. */
void lower_out_addr(const lower_gen *g, lower_addr *a)
{
    const rlt_tensor *t = &g->op->tensors[g->op->n_tensors - 1];
    memset(a, 0, sizeof *a);
    int64_t strides[RLT_MAX_DIMS];
    lower_dims_strides(t->dims, t->n_dims, strides);
    for (int d = 0; d < g->op->n_spatial; d++) lower_lin_add_scaled(&a->l, &g->axis[d], strides[d]);
}

/* Appends a's address at the current point. */
void lower_addr_print(const lower_gen *g, const lower_addr *a, rlt_str *s)
{
    lower_lin_print(g, &a->l, s);
    for (int i = 0; i < a->n_nl; i++) {
        rlt_str_printf(s, " + %" PRId64 "*((", a->nl[i].stride);
        lower_lin_print(g, &a->nl[i].x, s);
        rlt_str_printf(s, ") %c %" PRId64 ")", a->nl[i].is_div ? '/' : '%', a->nl[i].b);
    }
}

lower_lane_state lower_lanes_enter(lower_gen *g)
{
    int v = g->vec_var;
    lower_lane_state was = {.is_fixed = g->at.is_fixed[v], .fixed = g->at.fixed[v], .in_vector = g->at.in_vector};
    g->at.is_fixed[v] = true;
    g->at.fixed[v] = 0;
    g->at.in_vector = false;
    return was;
}

void lower_lanes_leave(lower_gen *g, const lower_lane_state *was)
{
    int v = g->vec_var;
    g->at.is_fixed[v] = was->is_fixed;
    g->at.fixed[v] = was->fixed;
    g->at.in_vector = was->in_vector;
}

/* The address of lane 0: where a contiguous vector starts. */
void lower_addr_print_lane0(lower_gen *g, const lower_addr *a, rlt_str *s)
{
    lower_lane_state was = lower_lanes_enter(g);
    lower_addr_print(g, a, s);
    lower_lanes_leave(g, &was);
}

/* The pattern across the vector loop's lanes, wherever the code is. */
lower_lane_pattern lower_lanes_of(const lower_gen *g, const lower_addr *a)
{
    int v = g->vec_var;
    if (v < 0) return LOWER_LANES_UNIFORM;
    for (int i = 0; i < a->n_nl; i++)
        if (a->nl[i].x.c[v] != 0) return LOWER_LANES_GATHER;
    int64_t c = a->l.c[v];
    if (c == 0) return LOWER_LANES_UNIFORM;
    if (c == 1) return LOWER_LANES_CONTIGUOUS;
    bool has_strided = g->vec_width == 4 || g->vec_width == 8 || g->vec_width == 16;
    return has_strided && (c == 2 || c == 4) ? LOWER_LANES_STRIDED : LOWER_LANES_GATHER;
}

/* The pattern of an access in the code being emitted (uniform outside the vector path). */
lower_lane_pattern lower_addr_lanes(const lower_gen *g, const lower_addr *a)
{
    return g->at.in_vector ? lower_lanes_of(g, a) : LOWER_LANES_UNIFORM;
}

/* ---- the output --------------------------------------------------------- */

/* The accumulator element at the current point: "rlt_acc[i_i][j_o]" (the
 * vector lane loop excluded; in the scalar lane loop, "[lane]" added). */
void lower_acc_ref(const lower_gen *g, rlt_str *s)
{
    rlt_str_append(s, LOWER_ACC_NAME);
    bool any = false;
    for (int l = g->acc_depth; l < g->n->n_loops; l++) {
        int v = g->n->loops[l].var;
        if (g->n->vars[v].is_reduce || v == g->vec_var) continue;
        if (g->at.is_fixed[v]) rlt_str_printf(s, "[%" PRId64 "]", g->at.fixed[v]);
        else rlt_str_printf(s, "[%s]", g->cname[v]);
        any = true;
    }
    if (!any) rlt_str_append(s, "[0]");
    if (g->vec_var >= 0 && !g->at.in_vector) {
        if (g->at.is_fixed[g->vec_var]) rlt_str_printf(s, "[%" PRId64 "]", g->at.fixed[g->vec_var]);
        else rlt_str_printf(s, "[%s]", g->cname[g->vec_var]);
    }
}

lower_out_kind lower_out_choose(const lower_gen *g)
{
    if (!g->at.in_vector) return LOWER_OUT_SCALAR;
    lower_addr a;
    lower_out_addr(g, &a);
    if (lower_addr_lanes(g, &a) != LOWER_LANES_CONTIGUOUS) return LOWER_OUT_LANES;
    return lower_mask_nv(g) >= 0 ? LOWER_OUT_MASKED : LOWER_OUT_VECTOR;
}

/* One lane of the output at address *arg. */
static void lane_out(lower_gen *g, const void *arg, rlt_str *s)
{
    rlt_str_printf(s, "%s[", g->tname[g->op->n_tensors - 1]);
    lower_addr_print(g, arg, s);
    rlt_str_append(s, "]");
}

/* The output element (scalar) or vector at the current point, as a value. */
void lower_out_value(lower_gen *g, lower_out_kind kind, rlt_str *s)
{
    lower_addr a;
    lower_out_addr(g, &a);
    const char *o = g->tname[g->op->n_tensors - 1];
    if (kind == LOWER_OUT_SCALAR) {
        rlt_str_printf(s, "%s[", o);
        lower_addr_print(g, &a, s);
        rlt_str_append(s, "]");
    } else if (kind == LOWER_OUT_MASKED) {
        rlt_str_printf(s, "rlt_ldm%d(&%s[", g->vec_width, o);
        lower_addr_print_lane0(g, &a, s);
        rlt_str_printf(s, "], 0, rlt_nv%d)", lower_mask_nv(g));
    } else if (kind == LOWER_OUT_VECTOR) {
        rlt_str_printf(s, "rlt_load%d(&%s[", g->vec_width, o);
        lower_addr_print_lane0(g, &a, s);
        rlt_str_append(s, "])");
    } else {
        /* The output is indexed by spatial axes only: a vector over a spatial
         * loop either moves along it contiguously or strides (gather). */
        lower_emit_lanes(g, lane_out, &a, s);
    }
}

/* Stores `value_text` (scalar or vector) to the output at the current point. */
void lower_store_out(lower_gen *g, int indent, lower_out_kind kind, int temp, const char *value_text)
{
    lower_addr a;
    lower_out_addr(g, &a);
    const char *o = g->tname[g->op->n_tensors - 1];
    rlt_str s;
    rlt_str_init(&s);
    if (kind == LOWER_OUT_SCALAR) {
        rlt_str_printf(&s, "%s[", o);
        lower_addr_print(g, &a, &s);
        lower_out(g, indent, "%s] = %s;\n", lower_text_of(g, &s), value_text);
    } else if (kind == LOWER_OUT_MASKED) {
        lower_addr_print_lane0(g, &a, &s);
        lower_out(g, indent, "rlt_stm%d(&%s[%s], %s, 0, rlt_nv%d);\n", g->vec_width, o, lower_text_of(g, &s),
                  value_text, lower_mask_nv(g));
    } else if (kind == LOWER_OUT_VECTOR) {
        lower_addr_print_lane0(g, &a, &s);
        lower_out(g, indent, "rlt_store%d(&%s[%s], %s);\n", g->vec_width, o, lower_text_of(g, &s), value_text);
    } else {
        RLT_ASSERT(temp >= 0);
        lower_out(g, indent, "{\n");
        lower_out(g, indent + 1, "rlt_v%d rlt_t%d = %s;\n", g->vec_width, temp, value_text);
        lower_lane_state was = lower_lanes_enter(g);
        for (int lane = 0; lane < g->vec_width; lane++) {
            g->at.fixed[g->vec_var] = lane;
            rlt_str_clear(&s);
            lower_addr_print(g, &a, &s);
            if (lower_mask_nv(g) >= 0)
                lower_out(g, indent + 1, "if (%d < rlt_nv%d) %s[%s] = rlt_t%d[%d];\n", lane, lower_mask_nv(g), o,
                          lower_text_of(g, &s), temp, lane);
            else
                lower_out(g, indent + 1, "%s[%s] = rlt_t%d[%d];\n", o, lower_text_of(g, &s), temp, lane);
        }
        lower_lanes_leave(g, &was);
        lower_out(g, indent, "}\n");
    }
    rlt_str_free(&s);
}
