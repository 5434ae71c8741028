/*
 * lower_build.c - the pass from a scheduled nest to the lowered tree
 * (lowered.h): it decides the loop structure that lower_print.c prints.
 *
 * Entry points (lowered.h): lower_build_plan, which walks a plan of loops
 * and builds, loop by loop, the derived symbols of fused loops, the tails'
 * guards, versioned tiles (a fast copy without guards or bounds checks, a
 * guarded one), vector loops (whole vectors, a partial vector with masks
 * and the temporary that counts its lanes, or lanes one at a time),
 * unrolled copies, a vector tile's write-back transposed in registers (a
 * reload's temporary), and the accumulator tile of cache_write with its
 * declaration, reload and write-back; then the statement at the bottom
 * (the computation, zeroing, epilogue, reload or write-back), which
 * lower_stmt.c fills. lowered_new, lowered_add and lowered_keep_text make
 * nodes and keep their texts, lowered_decl_print writes a declaration;
 * lower_cursor_load makes a cursor current.
 *
 * Each build function takes the cursor it stands at (const: a child's
 * cursor is a changed copy) and loads it into g->at right before calling
 * the analysis helpers that read it (folding, addresses).
 */
#include "codegen/lowered.h"

#include <inttypes.h>
#include <string.h>

/* ---- nodes -------------------------------------------------------------- */

lowered_node *lowered_new(lower_gen *g, lowered_kind kind, const lower_cursor *at)
{
    lowered_node *n = g->is_oom ? NULL : rlt_arena_alloc(g->arena, sizeof *n);
    if (!n) {
        g->is_oom = true;
        n = g->sink;
        memset(n, 0, sizeof *n);
    }
    n->kind = kind;
    n->var = -1;
    n->temp = -1;
    n->at = *at;
    return n;
}

lowered_node *lowered_add(lower_gen *g, lowered_node *parent, lowered_kind kind, const lower_cursor *at)
{
    lowered_node *n = lowered_new(g, kind, at);
    if (parent->last) parent->last->next = n;
    else parent->first = n;
    parent->last = n;
    return n;
}

/* The arena's copy of t's text ("" when out of memory). */
const char *lowered_keep_text(lower_gen *g, const rlt_str *t)
{
    const char *s = g->is_oom ? NULL : rlt_arena_strdup(g->arena, lower_text_of(g, t));
    if (!s) g->is_oom = true;
    return s ? s : "";
}

void lower_cursor_load(lower_gen *g, const lower_cursor *at)
{
    g->at = *at;
}

/* ---- plans -------------------------------------------------------------- */

/* A tile's write-back (or reload) whose vector runs across the output's
 * rows is transposed in registers when the unrolled loop directly outside
 * the vector walks the output's unit-stride dim (build_transposed_tile).
 * The elements are independent, so when another unrolled loop sits there (a
 * register tile of 7 columns by 2 vectors of output channels, in that
 * order), the loop that walks that dim moves in next to the vector: only
 * among a fully unrolled tile's loops, none of them under a guard. */
static void order_for_transposing(const lower_gen *g, lower_plan *p)
{
    if ((p->kind != LOWER_BODY_WRITEBACK && p->kind != LOWER_BODY_ACC_LOAD) || p->n < 3) return;
    const rlt_loop *vl = &g->n->loops[p->pos[p->n - 1]];
    if (vl->kind != RLT_LOOP_VECTORIZE || vl->var != g->vec_var) return;
    lower_addr a;
    lower_out_addr(g, &a);
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

static void make_sub_plan(const lower_gen *g, int from, lower_body_kind kind, lower_plan *p)
{
    p->n = 0;
    p->kind = kind;
    for (int l = from; l < g->n->n_loops; l++)
        if (!g->n->vars[g->n->loops[l].var].is_reduce) p->pos[p->n++] = l;
    order_for_transposing(g, p);
}

/* ---- guards and versions ------------------------------------------------ */

/* The condition that guards versioned at `pos` hold for the whole subtree:
 * each at its largest value over the unrolled and vector loops inside. */
static bool version_condition(lower_gen *g, int pos, rlt_str *cond, bool *chosen)
{
    bool any = false;
    for (int k = 0; k < g->n_guards; k++) {
        chosen[k] = false;
        if (g->guard_vpoint[k] != pos || g->at.is_guard_known[k]) continue;
        lower_lin f;
        lower_lin_fold(g, &g->guard[k], &f);
        int64_t extra = 0;
        for (int s = 0; s < g->n->n_vars; s++) {
            int at = f.c[s] ? rlt_nest_loop_of_var(g->n, s) : -1;
            if (at <= pos) continue;
            if (f.c[s] > 0) extra += f.c[s] * (g->n->vars[s].extent - 1);
            f.c[s] = 0;
        }
        f.k += extra;
        chosen[k] = true;
        if (lower_lin_is_const(g, &f) && f.k < g->guard_bound[k]) continue;
        if (cond->len) rlt_str_append(cond, " && ");
        lower_lin_print(g, &f, cond);
        rlt_str_printf(cond, " < %" PRId64, g->guard_bound[k]);
        any = true;
    }
    return any;
}

/* What comes inside the loop at plan index idx: derived symbols, guards
 * (an empty guard where one is known false: the code is dead), then the
 * next loop (in two copies when a fast path without guards is split off). */
static void build_inside(lower_gen *g, const lower_plan *p, int idx, const lower_cursor *at, lowered_node *parent)
{
    int pos = p->pos[idx];
    for (int v = g->n->n_vars - 1; v >= 0; v--) {
        if (!g->is_symbol[v] || g->derived_from[v] < 0 || g->sym_depth[v] != pos) continue;
        lowered_add(g, parent, LOWERED_DERIVED, at)->var = v;
    }
    rlt_str text;
    rlt_str_init(&text);
    for (int k = 0; k < g->n_guards; k++) {
        if (g->guard_depth[k] != pos || at->is_guard_known[k]) continue;
        g->at = *at;
        lower_lin f;
        lower_lin_fold(g, &g->guard[k], &f);
        if (lower_lin_is_const(g, &f)) {
            if (f.k < g->guard_bound[k]) continue;
            rlt_str_free(&text);
            return;
        }
        rlt_str_clear(&text);
        lower_lin_print(g, &f, &text);
        lowered_node *guard = lowered_add(g, parent, LOWERED_GUARD, at);
        guard->text = lowered_keep_text(g, &text);
        guard->value = g->guard_bound[k];
        parent = guard;
    }
    rlt_str_clear(&text);
    g->at = *at;
    bool chosen[RLT_MAX_VARS];
    bool has_version = version_condition(g, pos, &text, chosen);
    lower_cursor fast = *at;
    for (int k = 0; k < g->n_guards; k++) fast.is_guard_known[k] |= chosen[k];
    if (has_version) {
        lowered_node *version = lowered_add(g, parent, LOWERED_VERSION, at);
        version->text = lowered_keep_text(g, &text);
        lower_build_plan(g, p, idx + 1, &fast, lowered_add(g, version, LOWERED_SEQ, &fast));
        lower_cursor slow = *at;
        slow.slow_depth++;
        lower_build_plan(g, p, idx + 1, &slow, lowered_add(g, version, LOWERED_SEQ, &slow));
    } else {
        lower_build_plan(g, p, idx + 1, &fast, parent); /* the chosen guards always hold */
    }
    rlt_str_free(&text);
}

/* ---- vector loops ------------------------------------------------------- */

/* The condition under which every lane of the vector loop passes its
 * guards ("" when there are none), and whether lanes can be vectors at all.
 * *out_is_never says the condition is a constant that fails: no whole
 * vector (one wider than its axis). */
static bool vector_condition(lower_gen *g, int pos, rlt_str *cond, bool *out_is_never)
{
    *out_is_never = false;
    int v = g->vec_var;
    for (int s = 0; s < g->n->n_vars; s++)
        if (g->is_symbol[s] && g->derived_from[s] >= 0 && g->sym_depth[s] == pos) return false;
    for (int k = 0; k < g->n_guards; k++) {
        if (g->guard_depth[k] != pos || g->at.is_guard_known[k]) continue;
        /* Linear in the lane: the lane where the guarded value is largest
         * decides for all of them. */
        bool was_fixed = g->at.is_fixed[v];
        g->at.is_fixed[v] = true;
        g->at.fixed[v] = g->guard[k].c[v] > 0 ? g->vec_width - 1 : 0;
        lower_lin f;
        lower_lin_fold(g, &g->guard[k], &f);
        g->at.is_fixed[v] = was_fixed;
        if (lower_lin_is_const(g, &f) && f.k < g->guard_bound[k]) continue;
        if (lower_lin_is_const(g, &f)) *out_is_never = true;
        if (cond->len) rlt_str_append(cond, " && ");
        lower_lin_print(g, &f, cond);
        rlt_str_printf(cond, " < %" PRId64, g->guard_bound[k]);
    }
    return true;
}

/* The tail copy of a versioned tile runs rarely, so its loops stay rolled:
 * "#pragma GCC unroll 1" keeps gcc -O3 from unrolling them again (compile
 * time). Not a loop that indexes an accumulator tile, though: unrolled by
 * the compiler, the tile lives in registers; rolled, in memory, which made a
 * conv2d whose tail is a sixth of the work 40% slower. */
static lowered_flavor rolled_flavor(const lower_gen *g, const lower_plan *p, int pos, const lower_cursor *at)
{
    bool uses_acc =
        p->kind != LOWER_BODY_OUT_ZERO && p->kind != LOWER_BODY_EPILOGUE && g->acc_depth >= 0 && pos >= g->acc_depth;
    return at->slow_depth > 0 && !uses_acc ? LOWERED_KEEP_ROLLED : LOWERED_PLAIN;
}

/* The number of lanes of a partial vector at plan position pos that pass
 * their guards, as a C expression: each guard is linear in the lane with a
 * positive coefficient, so the lanes that pass are a prefix. False when
 * there are no masked lanes at this width. */
static bool partial_lanes(lower_gen *g, int pos, rlt_str *nv)
{
    int v = g->vec_var;
    if (!lower_has_masked_lanes(g->vec_width) || g->at.is_masked) return false;
    rlt_str_printf(nv, "%d", g->vec_width);
    rlt_str x0;
    rlt_str_init(&x0);
    bool ok = true;
    for (int k = 0; k < g->n_guards && ok; k++) {
        if (g->guard_depth[k] != pos || g->at.is_guard_known[k]) continue;
        lower_lin f;
        lower_lin_fold(g, &g->guard[k], &f);
        int64_t c = f.c[v];
        f.c[v] = 0;
        if (c <= 0) {
            ok = false;
            break;
        }
        rlt_str_clear(&x0);
        lower_lin_print(g, &f, &x0);
        lower_narrow_lanes(g, nv, false, lower_text_of(g, &x0), c, g->guard_bound[k]);
    }
    lower_note_failure(g, &x0);
    lower_note_failure(g, nv);
    rlt_str_free(&x0);
    return ok;
}

/* A vector loop: whole vectors where every lane passes its guards (its
 * children start with a SEQ of them), then the tail: a partial vector with
 * masked loads and stores for the lanes that pass, or the lanes one at a
 * time, each under its guards. */
static void build_vector_loop(lower_gen *g, const lower_plan *p, int idx, const lower_cursor *at,
                              lowered_node *parent)
{
    int pos = p->pos[idx];
    rlt_str cond, nv;
    rlt_str_init(&cond);
    rlt_str_init(&nv);
    bool is_never_whole;
    g->at = *at;
    bool is_vector_ok = vector_condition(g, pos, &cond, &is_never_whole);
    lower_note_failure(g, &cond);
    lowered_node *vec = lowered_add(g, parent, LOWERED_VECTOR, at);
    vec->var = g->n->loops[pos].var;
    vec->text = lowered_keep_text(g, &cond);
    vec->flavor = !is_vector_ok ? LOWERED_SCALAR_ONLY : is_never_whole ? LOWERED_NO_WHOLE : LOWERED_PLAIN;
    lower_cursor inv = *at;
    inv.in_vector = true;
    if (is_vector_ok && !is_never_whole) lower_build_plan(g, p, idx + 1, &inv, lowered_add(g, vec, LOWERED_SEQ, &inv));
    g->at = *at;
    if (is_vector_ok && cond.len && partial_lanes(g, pos, &nv)) {
        inv.is_masked = true;
        inv.mask_temp = g->n_temps++;
        lowered_node *partial = lowered_add(g, vec, LOWERED_PARTIAL, &inv);
        partial->text = lowered_keep_text(g, &nv);
        partial->temp = inv.mask_temp;
        lower_build_plan(g, p, idx + 1, &inv, partial);
    } else if (!is_vector_ok || cond.len) {
        lowered_node *lanes = lowered_add(g, vec, LOWERED_LANES, at);
        lanes->var = vec->var;
        lanes->flavor = rolled_flavor(g, p, pos, at);
        build_inside(g, p, idx, at, lanes);
    }
    rlt_str_free(&cond);
    rlt_str_free(&nv);
}

/* ---- unrolled loops ----------------------------------------------------- */

/* The write-back (or the reload of partial sums) of a vector tile whose
 * vector runs across the output's rows (conv2d's output channels in NCHW: a
 * scalar store or load per lane) when the unrolled loop at plan index idx,
 * directly outside the vector loop, walks the output's unit-stride dim: its
 * vectors (of 8 or 16 lanes) are transposed in registers in runs of 8, 4
 * or 2, and each lane's run stored or loaded at once (rlt_tstoreWxN,
 * rlt_tloadWxN in the preamble); a last single one goes lane by lane as
 * before. Returns false, having built nothing, where that does not apply. */
static bool build_transposed_tile(lower_gen *g, const lower_plan *p, int idx, const lower_cursor *at,
                                  lowered_node *parent)
{
    int pos = p->pos[idx], v = g->n->loops[pos].var;
    bool is_load = p->kind == LOWER_BODY_ACC_LOAD;
    int w = g->vec_width;
    if ((p->kind != LOWER_BODY_WRITEBACK && !is_load) || (w != 8 && w != 16) || idx + 2 != p->n) return false;
    int vpos = p->pos[idx + 1];
    if (g->n->loops[vpos].kind != RLT_LOOP_VECTORIZE || g->n->loops[vpos].var != g->vec_var) return false;
    g->at = *at;
    lower_addr a;
    lower_out_addr(g, &a);
    int64_t ls = a.l.c[g->vec_var];
    if (a.n_nl > 0 || a.l.c[v] != 1 || ls <= 1) return false;
    for (int k = 0; k < g->n_guards; k++)
        if (!at->is_guard_known[k] && (g->guard_depth[k] == pos || g->guard_depth[k] == vpos ||
                                       g->guard_vpoint[k] == pos || g->guard_vpoint[k] == vpos))
            return false;
    for (int s = 0; s < g->n->n_vars; s++)
        if (g->is_symbol[s] && g->derived_from[s] >= 0 && (g->sym_depth[s] == pos || g->sym_depth[s] == vpos))
            return false;
    lowered_node *tile = lowered_add(g, parent, LOWERED_TRANSPOSE, at);
    tile->var = v;
    tile->body = p->kind;
    tile->value = ls;
    int64_t ext = g->n->vars[v].extent;
    rlt_str text;
    rlt_str_init(&text);
    for (int64_t e0 = 0; e0 < ext;) {
        /* a run of n floats a lane goes as N = 2, 4 or 8 vectors, the last
         * N - n of them zeros, storing (loading) n floats a lane */
        int64_t run = ext - e0 >= 8 ? 8 : ext - e0;
        lower_cursor fixed = *at;
        fixed.is_fixed[v] = true;
        fixed.fixed[v] = e0;
        if (run == 1) {
            lowered_node *copy = lowered_add(g, tile, LOWERED_COPY, &fixed);
            copy->var = v;
            copy->value = e0;
            build_inside(g, p, idx, &fixed, copy);
            break;
        }
        lowered_node *r = lowered_add(g, tile, LOWERED_RUN, &fixed);
        r->var = v;
        r->value = e0;
        r->count = run;
        r->n_vecs = run <= 2 ? 2 : run <= 4 ? 4 : 8;
        if (is_load) r->temp = g->n_temps++;
        rlt_str_clear(&text);
        g->at = fixed;
        lower_addr_print_lane0(g, &a, &text);
        r->text = lowered_keep_text(g, &text);
        fixed.in_vector = true;
        for (int64_t e = e0; e < e0 + run; e++) {
            fixed.fixed[v] = e;
            lowered_node *column = lowered_add(g, r, LOWERED_RUN_LANE, &fixed);
            column->var = v;
            if (p->kind == LOWER_BODY_WRITEBACK && g->acc_is_final && g->op->epilogue)
                lower_build_expr(g, column, g->op->epilogue);
        }
        e0 += run;
    }
    rlt_str_free(&text);
    return true;
}

static void build_loop(lower_gen *g, const lower_plan *p, int idx, const lower_cursor *at, lowered_node *parent)
{
    int pos = p->pos[idx];
    const rlt_loop *loop = &g->n->loops[pos];
    int v = loop->var;
    lowered_node *l;
    switch (loop->kind) {
    case RLT_LOOP_PARALLEL:
    case RLT_LOOP_SERIAL:
        l = lowered_add(g, parent, LOWERED_LOOP, at);
        l->var = v;
        l->flavor = loop->kind == RLT_LOOP_PARALLEL ? LOWERED_PARALLEL : LOWERED_PLAIN;
        l->n_threads = loop->n_threads;
        build_inside(g, p, idx, at, l);
        return;
    case RLT_LOOP_UNROLL:
        /* Zeroing the output and a separate epilogue are a small part of the
         * work and use no accumulator: loops keep their code (and compile
         * time) small, and the compiler unrolls what pays. So does the tail
         * copy of a versioned tile, which runs rarely; not inside an
         * accumulator declared outside that copy, though: indexing it with a
         * variable anywhere would keep the compiler from holding it in
         * registers everywhere. */
        if (p->kind == LOWER_BODY_OUT_ZERO || p->kind == LOWER_BODY_EPILOGUE ||
            (at->slow_depth > 0 && (g->acc_depth < 0 || pos < g->acc_depth || at->is_acc_in_slow))) {
            l = lowered_add(g, parent, LOWERED_LOOP, at);
            l->var = v;
            l->flavor = rolled_flavor(g, p, pos, at);
            build_inside(g, p, idx, at, l);
            return;
        }
        if (build_transposed_tile(g, p, idx, at, parent)) return;
        for (int64_t c = 0; c < g->n->vars[v].extent; c++) {
            lower_cursor fixed = *at;
            fixed.is_fixed[v] = true;
            fixed.fixed[v] = c;
            l = lowered_add(g, parent, LOWERED_COPY, &fixed);
            l->var = v;
            l->value = c;
            build_inside(g, p, idx, &fixed, l);
        }
        return;
    case RLT_LOOP_VECTORIZE:
        build_vector_loop(g, p, idx, at, parent);
        return;
    }
}

/* ---- the tile ----------------------------------------------------------- */

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
static bool bounds_condition(lower_gen *g, int pos, rlt_str *cond)
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
                lower_addr a;
                lower_load_addr(g, e, &a);
                lower_lane_pattern lp = lower_lanes_of(g, &a);
                is_vector_gain = lp == LOWER_LANES_CONTIGUOUS || lp == LOWER_LANES_STRIDED;
            }
            lower_lin x, f;
            lower_affine_to_lin(g, &e->index[d], &x);
            lower_lin_fold(g, &x, &f);
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
            lower_lin f_lo = f, f_hi = f;
            f_lo.k += lo_extra;
            f_hi.k += hi_extra;
            if (lower_lin_is_const(g, &f_lo) ? f_lo.k < 0 : lo < 0) {
                if (lower_lin_is_const(g, &f_lo)) is_possible = false;
                rlt_str_clear(&clause);
                lower_lin_print(g, &f_lo, &clause);
                rlt_str_append(&clause, " >= 0");
                if (cond->len) rlt_str_append(cond, " && ");
                rlt_str_append(cond, lower_text_of(g, &clause));
            }
            if (lower_lin_is_const(g, &f_hi) ? f_hi.k >= t->dims[d] : hi >= t->dims[d]) {
                if (lower_lin_is_const(g, &f_hi)) is_possible = false;
                rlt_str_clear(&clause);
                lower_lin_print(g, &f_hi, &clause);
                rlt_str_printf(&clause, " < %" PRId64, t->dims[d]);
                if (cond->len) rlt_str_append(cond, " && ");
                rlt_str_append(cond, lower_text_of(g, &clause));
            }
        }
    }
    rlt_str_free(&clause);
    lower_note_failure(g, cond);
    return is_possible && is_vector_gain && cond->len > 0;
}

/* The accumulator tile's declaration: an element (a vector when the vector
 * loop is inside the tile) for each point of the tile's spatial loops but
 * the vector loop, zeroed. NULL when out of memory. */
static const lowered_decl *acc_decl(lower_gen *g)
{
    lowered_decl *d = g->is_oom ? NULL : rlt_arena_alloc(g->arena, sizeof *d);
    if (!d) {
        g->is_oom = true;
        return NULL;
    }
    d->name = LOWER_ACC_NAME;
    d->init = "{0}";
    d->lanes = g->vec_var >= 0 && g->acc_depth <= rlt_nest_loop_of_var(g->n, g->vec_var) ? g->vec_width : 1;
    for (int l = g->acc_depth; l < g->n->n_loops; l++) {
        int v = g->n->loops[l].var;
        if (g->n->vars[v].is_reduce || v == g->vec_var) continue;
        d->dims[d->n_dims++] = g->n->vars[v].extent;
    }
    return d;
}

void lowered_decl_print(const lowered_decl *d, rlt_str *s)
{
    if (d->lanes > 1) rlt_str_printf(s, "rlt_v%d ", d->lanes);
    else rlt_str_append(s, "float ");
    rlt_str_append(s, d->name);
    for (int i = 0; i < d->n_dims; i++) rlt_str_printf(s, "[%" PRId64 "]", d->dims[i]);
    rlt_str_printf(s, "%s = %s", d->n_dims ? "" : "[1]", d->init);
}

/* A sub-plan over the spatial loops from position `from` on, behind a
 * comment: zeroing, epilogue, the tile's reload and write-back. */
static void build_sub_plan(lower_gen *g, int from, lower_body_kind kind, const lower_cursor *at,
                           lowered_node *parent, const char *comment)
{
    lower_plan sub;
    g->at = *at;
    make_sub_plan(g, from, kind, &sub);
    lowered_node *plan = lowered_add(g, parent, LOWERED_PLAN, at);
    plan->body = kind;
    plan->text = comment;
    lower_build_plan(g, &sub, 0, at, plan);
}

static void build_plan_here(lower_gen *g, const lower_plan *p, int idx, const lower_cursor *at,
                            lowered_node *parent)
{
    bool is_main = p->kind == LOWER_BODY_MAIN;
    int pos = idx < p->n ? p->pos[idx] : g->n->n_loops;
    bool has_reduction = g->r0 < g->n->n_loops;
    bool zero_output = is_main && pos == g->r0 && has_reduction && !g->acc_is_final;
    bool separate_epilogue = zero_output && g->op->epilogue;
    bool acc_here = is_main && pos == g->acc_depth;
    if (zero_output)
        build_sub_plan(g, g->r0, LOWER_BODY_OUT_ZERO, at, parent, "zero the output before accumulating");
    lower_cursor in = *at;
    lowered_node *body = parent;
    if (acc_here) {
        if (in.slow_depth > 0) in.is_acc_in_slow = true;
        body = lowered_add(g, parent, LOWERED_ACC, &in);
        body->decl = acc_decl(g);
        if (!g->acc_is_final && has_reduction)
            build_sub_plan(g, g->acc_depth, LOWER_BODY_ACC_LOAD, &in, body, "continue the partial sums");
    }
    if (idx < p->n) build_loop(g, p, idx, &in, body);
    else {
        lowered_node *stmt = lowered_add(g, body, LOWERED_STMT, &in);
        stmt->body = p->kind;
        lower_build_stmt(g, stmt);
    }
    if (acc_here) build_sub_plan(g, g->acc_depth, LOWER_BODY_WRITEBACK, &in, body, "write the tile back");
    if (separate_epilogue) build_sub_plan(g, g->r0, LOWER_BODY_EPILOGUE, &in, parent, "epilogue");
}

/* The plan from index idx on. Where the main plan's tile starts, a tile
 * inside the tensors (most of them) reads without the padding checks, in
 * vectors, and one at the border keeps them; both copies are unrolled alike.
 * Depthwise 3x3 at 112x112, a 4 x 16 tile without a padded copy: 29 -> 41
 * GFLOP/s. */
void lower_build_plan(lower_gen *g, const lower_plan *p, int idx, const lower_cursor *at, lowered_node *parent)
{
    int pos = idx < p->n ? p->pos[idx] : g->n->n_loops;
    rlt_str cond;
    rlt_str_init(&cond);
    g->at = *at;
    if (p->kind == LOWER_BODY_MAIN && pos == g->acc_depth && bounds_condition(g, pos, &cond)) {
        lowered_node *version = lowered_add(g, parent, LOWERED_VERSION, at);
        version->flavor = LOWERED_BY_BOUNDS;
        version->text = lowered_keep_text(g, &cond);
        lower_cursor fast = *at;
        fast.is_bounds_known = true;
        build_plan_here(g, p, idx, &fast, lowered_add(g, version, LOWERED_SEQ, &fast));
        build_plan_here(g, p, idx, at, lowered_add(g, version, LOWERED_SEQ, at));
    } else {
        build_plan_here(g, p, idx, at, parent);
    }
    rlt_str_free(&cond);
}
