/*
 * lower.c - lowers a scheduled loop nest to C: rlt_codegen_kernel, which
 * analyses the nest (lower_symbols.c), builds the lowered trees (lowered.h:
 * the staged copies, lower_stage.c; the loops, lower_build.c; the
 * statements, lower_stmt.c), writes the kernel's frame (here) and prints
 * the trees inside it (lower_print.c) with their accesses
 * (lower_access.c, lower_load.c); rlt_codegen_lowered_text, which prints
 * the trees as text (lower_dump.c); and codegen_print_axis_affine, for the
 * reference kernel.
 *
 * How a nest becomes code:
 *  - Symbols. Every loop counter is a symbol; so is every variable that a
 *    fuse consumed (defined as fused / extent or fused % extent right where
 *    its inputs are known). Each variable's value, each op axis, and so every
 *    index, is a linear form over symbols (lower_lin).
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
#include "codegen/lowered.h"

#include <inttypes.h>
#include <string.h>

/* ---- the kernel --------------------------------------------------------- */

/* Whether the kernel uses OpenMP: some loop of the nest is parallel. */
static bool needs_openmp(const rlt_nest *nest)
{
    bool needs = false;
    for (int l = 0; l < nest->n_loops; l++) needs |= nest->loops[l].kind == RLT_LOOP_PARALLEL;
    return needs;
}

/* Starts a lowering of `nest` into the text s: checks the nest, analyses
 * it, and builds the lowered trees (in (*out_g)->arena): the weights'
 * staged copies that SYMBOL_prepare makes (*out_prep), and the kernel's
 * body (*out_root), the other staged copies and then the main plan. Free
 * *out_g with lower_end, also after a failure. */
static rlt_status lower_begin(const rlt_nest *nest, rlt_str *s, lower_gen **out_g, lowered_node **out_prep,
                              lowered_node **out_root, rlt_diag *diag)
{
    *out_g = NULL;
    rlt_status st = rlt_nest_check(nest, diag);
    if (st != RLT_STATUS_OK) return st;
    lower_gen *g = rlt_calloc(1, sizeof *g);
    if (!g) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory generating C");
    *out_g = g;
    g->n = nest;
    g->op = nest->op;
    g->s = s;
    g->arena = rlt_arena_create();
    g->sink = rlt_calloc(1, sizeof *g->sink);
    if (!g->arena || !g->sink) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory generating C");
    lower_make_cnames(g);
    lower_analyse(g);
    lower_plan main_plan = {.n = nest->n_loops, .kind = LOWER_BODY_MAIN};
    for (int l = 0; l < nest->n_loops; l++) main_plan.pos[l] = l;
    lower_cursor start = g->at;
    *out_prep = lowered_new(g, LOWERED_SEQ, &start);
    lower_build_stages(g, true, needs_openmp(nest), *out_prep);
    *out_root = lowered_new(g, LOWERED_SEQ, &start);
    lower_build_stages(g, false, needs_openmp(nest), *out_root);
    lower_build_plan(g, &main_plan, 0, &start, *out_root);
    if (g->is_oom) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory building the lowered loops");
    return RLT_STATUS_OK;
}

static void lower_end(lower_gen *g)
{
    if (!g) return;
    rlt_arena_destroy(g->arena);
    rlt_free(g->sink);
    rlt_free(g);
}

rlt_status rlt_codegen_kernel(const rlt_nest *nest, rlt_kernel_src *ksrc, rlt_diag *diag)
{
    rlt_str s;
    rlt_str_init(&s);
    lower_gen *g;
    lowered_node *prep, *root;
    rlt_status st = lower_begin(nest, &s, &g, &prep, &root, diag);
    if (st != RLT_STATUS_OK) {
        lower_end(g);
        rlt_str_free(&s);
        return st;
    }
    const rlt_op *op = g->op;

    rlt_str tree;
    rlt_str_init(&tree);
    rlt_nest_print(nest, &tree);
    lower_out(g, 0, "/* %s\n", op->spec);
    for (const char *line = lower_text_of(g, &tree); *line;) {
        const char *end = strchr(line, '\n');
        int len = end ? (int)(end - line) : (int)strlen(line);
        lower_out(g, 0, " *   %.*s\n", len, line);
        line = end ? end + 1 : line + len;
    }
    lower_out(g, 0, " */\n");
    rlt_str_free(&tree);
    lower_out(g, 0, "size_t %s_workspace_bytes(void) { return %" PRId64 "; }\n\n", CODEGEN_SYMBOL_PLACEHOLDER,
              g->ws_bytes);

    /* Weights' stages: once, before the calls (codegen.h). */
    lower_out(g, 0, "void %s_prepare(float *const *rlt_t, void *rlt_ws, int rlt_nthreads)\n{\n",
              CODEGEN_SYMBOL_PLACEHOLDER);
    for (int t = 0; t + 1 < op->n_tensors; t++) {
        if (!lower_is_prestaged(g, t)) continue;
        lower_out(g, 1, "const float *restrict %s = rlt_t[%d];\n", g->tname[t], t);
        lower_out(g, 1, "float *restrict %s_s = (float *)((char *)rlt_ws + %" PRId64 ");\n", g->tname[t],
                  g->ws_offset[t]);
    }
    bool any_prestaged = false;
    for (int t = 0; t + 1 < op->n_tensors; t++) any_prestaged |= lower_is_prestaged(g, t);
    if (!any_prestaged) lower_out(g, 1, "/* no weight is staged */\n");
    lower_out(g, 1, "(void)rlt_t;\n");
    lower_out(g, 1, "(void)rlt_ws;\n");
    lower_out(g, 1, "if (rlt_nthreads < 1) rlt_nthreads = 1;\n");
    lower_print_tree(g, prep, 1);
    lower_out(g, 0, "}\n\n");

    lower_out(g, 0, "void %s(float *const *rlt_t, void *rlt_ws, int rlt_nthreads)\n{\n", CODEGEN_SYMBOL_PLACEHOLDER);
    for (int t = 0; t < op->n_tensors; t++) {
        bool is_out = t == op->n_tensors - 1;
        lower_out(g, 1, "%sfloat *restrict %s = rlt_t[%d];\n", is_out ? "" : "const ", g->tname[t], t);
        if (!is_out && g->ws_offset[t] >= 0)
            lower_out(g, 1, "%sfloat *restrict %s_s = (float *)((char *)rlt_ws + %" PRId64 ");\n",
                lower_is_prestaged(g, t) ? "const " : "", g->tname[t], g->ws_offset[t]);
    }
    lower_out(g, 1, "(void)rlt_ws;\n");
    lower_out(g, 1, "if (rlt_nthreads < 1) rlt_nthreads = 1;\n");
    lower_print_tree(g, root, 1);
    lower_out(g, 0, "}\n");
    lower_end(g);
    return codegen_finish(&s, "rlt_k_", needs_openmp(nest), ksrc, diag);
}

rlt_status rlt_codegen_lowered_text(const rlt_nest *nest, rlt_str *out, rlt_diag *diag)
{
    lower_gen *g;
    lowered_node *prep, *root;
    rlt_status st = lower_begin(nest, out, &g, &prep, &root, diag);
    if (st == RLT_STATUS_OK) {
        if (prep->first) lower_dump_tree(g, prep, "prepare", out);
        lower_dump_tree(g, root, NULL, out);
        if (out->has_failed) st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory printing the lowered loops");
    }
    lower_end(g);
    return st;
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
    else if (a->offset)
        rlt_str_printf(s, " %c %" PRId64, a->offset < 0 ? '-' : '+', a->offset < 0 ? -a->offset : a->offset);
}
