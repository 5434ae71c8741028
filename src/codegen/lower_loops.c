/*
 * lower_loops.c - the loops and statements of a nest being lowered.
 *
 * Entry point (lower_internal.h): lower_emit_plan, which walks a plan of
 * loops and emits, loop by loop, the derived symbols of fused loops, the
 * tails' guards, versioned tiles (a fast copy without guards or bounds
 * checks, a guarded one), vector loops (whole vectors, a partial vector
 * with masks, or lanes one at a time), unrolled copies, a vector tile's
 * write-back transposed in registers, and the accumulator tile of
 * cache_write with its reload and write-back; then the statement at the
 * bottom (the computation, zeroing, epilogue, reload or write-back).
 */
#include "codegen/lower_internal.h"

#include <inttypes.h>
#include <string.h>

/* ---- statements --------------------------------------------------------- */

/* The statement at the bottom of a plan, of the given kind, at the current
 * point: lanes, unrolled copies and guards as the loops above left them. */
static void emit_body(lower_gen *g, lower_body_kind kind, int indent)
{
    rlt_str value, ref;
    rlt_str_init(&value);
    rlt_str_init(&ref);
    bool has_reduction = g->r0 < g->n->n_loops;
    const rlt_expr *epi = g->op->epilogue;
    rlt_str guard;
    rlt_str_init(&guard);
    switch (kind) {
    case LOWER_BODY_MAIN:
        if (has_reduction && !lower_hoist_factor_checks(g, g->op->body, &guard)) break; /* a zero term */
        if (guard.len) lower_out(g, indent++, "if (%s) {\n", lower_text_of(g, &guard));
        lower_emit_expr(g, g->op->body, "", &value);
        if (g->acc_depth >= 0) {
            lower_acc_ref(g, &ref);
            lower_out(g, indent, "%s %s= %s;\n", lower_text_of(g, &ref), has_reduction ? "+" : "",
                      lower_text_of(g, &value));
        } else if (has_reduction) {
            lower_out_value(g, &ref);
            rlt_str sum;
            rlt_str_init(&sum);
            rlt_str_printf(&sum, "%s + %s", lower_text_of(g, &ref), lower_text_of(g, &value));
            lower_store_out(g, indent, lower_text_of(g, &sum));
            rlt_str_free(&sum);
        } else if (epi) {
            int tmp = g->n_temps++;
            char name[32];
            snprintf(name, sizeof name, "rlt_t%d", tmp);
            lower_out(g, indent, "{\n");
            if (g->in_vector)
                lower_out(g, indent + 1, "rlt_v%d %s = %s;\n", g->vec_width, name, lower_text_of(g, &value));
            else lower_out(g, indent + 1, "float %s = %s;\n", name, lower_text_of(g, &value));
            rlt_str_clear(&value);
            lower_emit_expr(g, epi, name, &value);
            lower_store_out(g, indent + 1, lower_text_of(g, &value));
            lower_out(g, indent, "}\n");
        } else {
            lower_store_out(g, indent, lower_text_of(g, &value));
        }
        if (guard.len) lower_out(g, --indent, "}\n");
        break;
    case LOWER_BODY_OUT_ZERO:
        if (g->in_vector) rlt_str_printf(&value, "rlt_splat%d(0.0f)", g->vec_width);
        else rlt_str_append(&value, "0.0f");
        lower_store_out(g, indent, lower_text_of(g, &value));
        break;
    case LOWER_BODY_EPILOGUE:
        lower_out_value(g, &ref);
        lower_emit_expr(g, epi, lower_text_of(g, &ref), &value);
        lower_store_out(g, indent, lower_text_of(g, &value));
        break;
    case LOWER_BODY_ACC_LOAD:
        lower_acc_ref(g, &ref);
        lower_out_value(g, &value);
        lower_out(g, indent, "%s = %s;\n", lower_text_of(g, &ref), lower_text_of(g, &value));
        break;
    case LOWER_BODY_WRITEBACK:
        lower_acc_ref(g, &ref);
        if (epi && g->acc_is_final) lower_emit_expr(g, epi, lower_text_of(g, &ref), &value);
        else rlt_str_append(&value, lower_text_of(g, &ref));
        lower_store_out(g, indent, lower_text_of(g, &value));
        break;
    }
    g->n_hoisted = 0;
    rlt_str_free(&guard);
    rlt_str_free(&value);
    rlt_str_free(&ref);
}

/* ---- loops -------------------------------------------------------------- */

/* A tile's write-back (or reload) whose vector runs across the output's
 * rows is transposed in registers when the unrolled loop directly outside
 * the vector walks the output's unit-stride dim (emit_transposed_tile). The
 * elements are independent, so when another unrolled loop sits there (a
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

/* Defines the derived symbols (parts of fused loops) visible from `pos` on. */
static void emit_derived(lower_gen *g, int pos, int indent)
{
    for (int v = g->n->n_vars - 1; v >= 0; v--) {
        if (!g->is_symbol[v] || g->derived_from[v] < 0 || g->sym_depth[v] != pos) continue;
        int f = g->derived_from[v];
        const rlt_var *fv = &g->n->vars[f];
        rlt_str s;
        rlt_str_init(&s);
        lower_lin_print(g, &g->value[f], &s);
        lower_out(g, indent, "const long %s = (%s) %c %" PRId64 ";\n", g->cname[v], lower_text_of(g, &s),
            fv->fused_outer == v ? '/' : '%', g->n->vars[fv->fused_inner].extent);
        rlt_str_free(&s);
    }
}

/* Opens `if` blocks for the guards placed at `pos`; returns how many were
 * opened, or -1 when one of them is known false (the code is dead). */
static int open_guards(lower_gen *g, int pos, int indent)
{
    int opened = 0;
    for (int k = 0; k < g->n_guards; k++) {
        if (g->guard_depth[k] != pos || g->is_guard_known[k]) continue;
        lower_lin f;
        lower_lin_fold(g, &g->guard[k], &f);
        if (lower_lin_is_const(g, &f)) {
            if (f.k < g->guard_bound[k]) continue;
            for (int i = 0; i < opened; i++) lower_out(g, indent + opened - 1 - i, "}\n");
            return -1;
        }
        rlt_str s;
        rlt_str_init(&s);
        lower_lin_print(g, &f, &s);
        lower_out(g, indent + opened, "if (%s < %" PRId64 ") {\n", lower_text_of(g, &s), g->guard_bound[k]);
        rlt_str_free(&s);
        opened++;
    }
    return opened;
}

static void close_blocks(lower_gen *g, int n, int indent)
{
    for (int i = n - 1; i >= 0; i--) lower_out(g, indent + i, "}\n");
}

/* The condition that guards versioned at `pos` hold for the whole subtree:
 * each at its largest value over the unrolled and vector loops inside. */
static bool version_condition(lower_gen *g, int pos, rlt_str *cond, bool *chosen)
{
    bool any = false;
    for (int k = 0; k < g->n_guards; k++) {
        chosen[k] = false;
        if (g->guard_vpoint[k] != pos || g->is_guard_known[k]) continue;
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

/* What comes inside the loop at plan index idx: derived symbols, guards,
 * then the next loop (twice when a fast path without guards is split off). */
static void emit_inside(lower_gen *g, const lower_plan *p, int idx, int indent)
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
        lower_out(g, in, "if (%s) { /* whole tile in range: no guards */\n", lower_text_of(g, &cond));
        for (int k = 0; k < g->n_guards; k++) g->is_guard_known[k] |= chosen[k];
        lower_emit_plan(g, p, idx + 1, in + 1);
        for (int k = 0; k < g->n_guards; k++)
            if (chosen[k]) g->is_guard_known[k] = false;
        lower_out(g, in, "} else { /* the tail: guarded, and loops instead of unrolled copies */\n");
        bool was_acc_in_slow = g->is_acc_in_slow;
        g->slow_depth++;
        lower_emit_plan(g, p, idx + 1, in + 1);
        g->slow_depth--;
        g->is_acc_in_slow = was_acc_in_slow;
        lower_out(g, in, "}\n");
    } else {
        for (int k = 0; k < g->n_guards; k++)
            if (chosen[k]) g->is_guard_known[k] = true; /* always in range */
        lower_emit_plan(g, p, idx + 1, in);
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
static bool vector_condition(lower_gen *g, int pos, rlt_str *cond, bool *out_is_never)
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
        lower_lin f;
        lower_lin_fold(g, &g->guard[k], &f);
        g->is_fixed[v] = false;
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
static void emit_keep_rolled(lower_gen *g, const lower_plan *p, int pos, int indent)
{
    bool uses_acc =
        p->kind != LOWER_BODY_OUT_ZERO && p->kind != LOWER_BODY_EPILOGUE && g->acc_depth >= 0 && pos >= g->acc_depth;
    if (g->slow_depth > 0 && !uses_acc) lower_out(g, indent, "#pragma GCC unroll 1\n");
}

/* The number of lanes of a partial vector at plan position pos that pass
 * their guards, as a C expression: each guard is linear in the lane with a
 * positive coefficient, so the lanes that pass are a prefix. False when
 * there are no masked lanes at this width. */
static bool partial_lanes(lower_gen *g, int pos, rlt_str *nv)
{
    int v = g->vec_var;
    if (!lower_has_masked_lanes(g->vec_width) || g->mask_nv >= 0) return false;
    rlt_str_printf(nv, "%d", g->vec_width);
    rlt_str x0;
    rlt_str_init(&x0);
    bool ok = true;
    for (int k = 0; k < g->n_guards && ok; k++) {
        if (g->guard_depth[k] != pos || g->is_guard_known[k]) continue;
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

/* The partial vector: its first lanes (nv, partial_lanes) pass the guards;
 * masked loads and stores for those, the others neither read nor written.
 * The block closes the caller's "{" or "else {". */
static void emit_partial_vector(lower_gen *g, const lower_plan *p, int idx, int indent, const rlt_str *nv)
{
    int k = g->n_temps++;
    lower_out(g, indent + 1, "const long rlt_nv%d = %s;\n", k, lower_text_of(g, nv));
    g->in_vector = true;
    g->mask_nv = k;
    lower_emit_plan(g, p, idx + 1, indent + 1);
    g->mask_nv = -1;
    g->in_vector = false;
    lower_out(g, indent, "}\n");
}

static void emit_vector_loop(lower_gen *g, const lower_plan *p, int idx, int indent)
{
    int pos = p->pos[idx];
    int v = g->n->loops[pos].var;
    rlt_str cond, nv;
    rlt_str_init(&cond);
    rlt_str_init(&nv);
    bool is_never_whole;
    bool is_vector_ok = vector_condition(g, pos, &cond, &is_never_whole);
    lower_note_failure(g, &cond);
    if (is_vector_ok && !is_never_whole) {
        int inner = indent;
        if (cond.len) {
            lower_out(g, indent, "if (%s) {\n", lower_text_of(g, &cond));
            inner++;
        }
        g->in_vector = true;
        lower_emit_plan(g, p, idx + 1, inner);
        g->in_vector = false;
        if (cond.len) lower_out(g, indent, "} else {\n");
    } else if (is_vector_ok) {
        lower_out(g, indent, "{\n"); /* wider than what is left of its axis: no whole vector */
    }
    if (is_vector_ok && cond.len && partial_lanes(g, pos, &nv)) {
        emit_partial_vector(g, p, idx, indent, &nv);
    } else if (!is_vector_ok || cond.len) {
        /* Lanes one at a time, each under its guards: the tail. */
        int inner = is_vector_ok ? indent + 1 : indent;
        emit_keep_rolled(g, p, pos, inner);
        lower_out(g, inner, "for (long %s = 0; %s < %d; %s++) {\n", g->cname[v], g->cname[v], g->vec_width,
                  g->cname[v]);
        emit_inside(g, p, idx, inner + 1);
        lower_out(g, inner, "}\n");
        if (is_vector_ok) lower_out(g, indent, "}\n");
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
static bool emit_transposed_tile(lower_gen *g, const lower_plan *p, int idx, int indent)
{
    int pos = p->pos[idx], v = g->n->loops[pos].var;
    bool is_load = p->kind == LOWER_BODY_ACC_LOAD;
    int w = g->vec_width;
    if ((p->kind != LOWER_BODY_WRITEBACK && !is_load) || (w != 8 && w != 16) || idx + 2 != p->n) return false;
    int vpos = p->pos[idx + 1];
    if (g->n->loops[vpos].kind != RLT_LOOP_VECTORIZE || g->n->loops[vpos].var != g->vec_var) return false;
    lower_addr a;
    lower_out_addr(g, &a);
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
            lower_out(g, indent, "{ /* %s = %" PRId64 " */\n", g->n->vars[v].name, e0);
            emit_inside(g, p, idx, indent + 1);
            lower_out(g, indent, "}\n");
            break;
        }
        rlt_str_clear(&text);
        g->fixed[v] = e0;
        lower_addr_print_lane0(g, &a, &text);
        lower_out(g, indent, "/* %s = %" PRId64 "..%" PRId64 ", transposed */\n", g->n->vars[v].name, e0, e0 + run - 1);
        int tmp = is_load ? g->n_temps++ : -1;
        if (is_load) {
            lower_out(g, indent, "{\n");
            lower_out(g, indent + 1,
                      "rlt_v%dx%" PRId64 " rlt_t%d = rlt_tload%dx%" PRId64 "%s(&%s[%s], %" PRId64 "%s);\n", w, n_vecs,
                      tmp, w, n_vecs, n_arg[0] ? "n" : "", o, lower_text_of(g, &text), ls, n_arg);
        } else
            lower_out(g, indent, "rlt_tstore%dx%" PRId64 "%s(&%s[%s], %" PRId64 "%s", w, n_vecs, n_arg[0] ? "n" : "", o,
                lower_text_of(g, &text), ls, n_arg);
        g->in_vector = true;
        for (int64_t e = e0; e < e0 + run; e++) {
            g->fixed[v] = e;
            rlt_str_clear(&ref);
            rlt_str_clear(&value);
            lower_acc_ref(g, &ref);
            if (is_load) {
                lower_out(g, indent + 1, "%s = rlt_t%d.v[%" PRId64 "];\n", lower_text_of(g, &ref), tmp, e - e0);
                continue;
            }
            if (epi && g->acc_is_final) lower_emit_expr(g, epi, lower_text_of(g, &ref), &value);
            else rlt_str_append(&value, lower_text_of(g, &ref));
            lower_out(g, 0, ", %s", lower_text_of(g, &value));
        }
        for (int64_t e = run; e < n_vecs && !is_load; e++) lower_out(g, 0, ", rlt_splat%d(0.0f)", w);
        g->in_vector = false;
        lower_out(g, is_load ? indent : 0, is_load ? "}\n" : ");\n");
        e0 += run;
    }
    g->is_fixed[v] = false;
    lower_note_failure(g, &text);
    lower_note_failure(g, &ref);
    lower_note_failure(g, &value);
    rlt_str_free(&text);
    rlt_str_free(&ref);
    rlt_str_free(&value);
    return true;
}

static void emit_loop(lower_gen *g, const lower_plan *p, int idx, int indent)
{
    int pos = p->pos[idx];
    const rlt_loop *loop = &g->n->loops[pos];
    int v = loop->var;
    int64_t ext = g->n->vars[v].extent;
    const char *name = g->cname[v];
    switch (loop->kind) {
    case RLT_LOOP_PARALLEL:
        if (loop->n_threads > 0)
            lower_out(g, indent, "#pragma omp parallel for schedule(static) num_threads(%d)\n", loop->n_threads);
        else
            lower_out(g, indent, "#pragma omp parallel for schedule(static) num_threads(rlt_nthreads)\n");
        /* fall through */
    case RLT_LOOP_SERIAL:
        lower_out(g, indent, "for (long %s = 0; %s < %" PRId64 "; %s++) {\n", name, name, ext, name);
        emit_inside(g, p, idx, indent + 1);
        lower_out(g, indent, "}\n");
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
            (g->slow_depth > 0 && (g->acc_depth < 0 || pos < g->acc_depth || g->is_acc_in_slow))) {
            emit_keep_rolled(g, p, pos, indent);
            lower_out(g, indent, "for (long %s = 0; %s < %" PRId64 "; %s++) {\n", name, name, ext, name);
            emit_inside(g, p, idx, indent + 1);
            lower_out(g, indent, "}\n");
            return;
        }
        if (emit_transposed_tile(g, p, idx, indent)) return;
        for (int64_t c = 0; c < ext; c++) {
            g->is_fixed[v] = true;
            g->fixed[v] = c;
            lower_out(g, indent, "{ /* %s = %" PRId64 " */\n", g->n->vars[v].name, c);
            emit_inside(g, p, idx, indent + 1);
            lower_out(g, indent, "}\n");
        }
        g->is_fixed[v] = false;
        return;
    case RLT_LOOP_VECTORIZE:
        emit_vector_loop(g, p, idx, indent);
        return;
    }
}

/* Accumulator declaration: one element (or vector) per tile point. */
static void emit_acc_decl(lower_gen *g, int indent)
{
    rlt_str dims;
    rlt_str_init(&dims);
    for (int l = g->acc_depth; l < g->n->n_loops; l++) {
        int v = g->n->loops[l].var;
        if (g->n->vars[v].is_reduce || v == g->vec_var) continue;
        rlt_str_printf(&dims, "[%" PRId64 "]", g->n->vars[v].extent);
    }
    lower_note_failure(g, &dims);
    if (g->vec_var >= 0 && g->acc_depth <= rlt_nest_loop_of_var(g->n, g->vec_var))
        lower_out(g, indent, "rlt_v%d rlt_acc%s = {0};\n", g->vec_width, dims.len ? lower_text_of(g, &dims) : "[1]");
    else
        lower_out(g, indent, "float rlt_acc%s = {0};\n", dims.len ? lower_text_of(g, &dims) : "[1]");
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

static void emit_sub_plan(lower_gen *g, int from, lower_body_kind kind, int indent, const char *comment)
{
    lower_plan sub;
    make_sub_plan(g, from, kind, &sub);
    lower_out(g, indent, "/* %s */\n", comment);
    lower_emit_plan(g, &sub, 0, indent);
}

static void emit_plan_here(lower_gen *g, const lower_plan *p, int idx, int indent)
{
    bool is_main = p->kind == LOWER_BODY_MAIN;
    int pos = idx < p->n ? p->pos[idx] : g->n->n_loops;
    bool has_reduction = g->r0 < g->n->n_loops;
    bool zero_output = is_main && pos == g->r0 && has_reduction && !g->acc_is_final;
    bool separate_epilogue = zero_output && g->op->epilogue;
    bool acc_here = is_main && pos == g->acc_depth;
    if (zero_output) emit_sub_plan(g, g->r0, LOWER_BODY_OUT_ZERO, indent, "zero the output before accumulating");
    if (acc_here) {
        if (g->slow_depth > 0) g->is_acc_in_slow = true;
        lower_out(g, indent, "{ /* cache_write: accumulator tile */\n");
        indent++;
        emit_acc_decl(g, indent);
        if (!g->acc_is_final && has_reduction)
            emit_sub_plan(g, g->acc_depth, LOWER_BODY_ACC_LOAD, indent, "continue the partial sums");
    }
    if (idx < p->n) emit_loop(g, p, idx, indent);
    else emit_body(g, p->kind, indent);
    if (acc_here) {
        emit_sub_plan(g, g->acc_depth, LOWER_BODY_WRITEBACK, indent, "write the tile back");
        indent--;
        lower_out(g, indent, "}\n");
    }
    if (separate_epilogue) emit_sub_plan(g, g->r0, LOWER_BODY_EPILOGUE, indent, "epilogue");
}

/* The plan from index idx on. Where the main plan's tile starts, a tile
 * inside the tensors (most of them) reads without the padding checks, in
 * vectors, and one at the border keeps them; both copies are unrolled alike.
 * Depthwise 3x3 at 112x112, a 4 x 16 tile without a padded copy: 29 -> 41
 * GFLOP/s. */
void lower_emit_plan(lower_gen *g, const lower_plan *p, int idx, int indent)
{
    int pos = idx < p->n ? p->pos[idx] : g->n->n_loops;
    rlt_str cond;
    rlt_str_init(&cond);
    if (p->kind == LOWER_BODY_MAIN && pos == g->acc_depth && bounds_condition(g, pos, &cond)) {
        lower_out(g, indent, "if (%s) { /* the tile's loads are in bounds: no checks */\n", lower_text_of(g, &cond));
        g->is_bounds_known = true;
        emit_plan_here(g, p, idx, indent + 1);
        g->is_bounds_known = false;
        lower_out(g, indent, "} else { /* at the border: loads checked */\n");
        emit_plan_here(g, p, idx, indent + 1);
        lower_out(g, indent, "}\n");
    } else {
        emit_plan_here(g, p, idx, indent);
    }
    rlt_str_free(&cond);
}
