/*
 * lower.c - lowers a scheduled loop nest to C: rlt_codegen_kernel, which
 * analyses the nest (lower_symbols.c), builds the lowered tree of its loops
 * (lower_build.c, lowered.h), copies the staged inputs into the workspace
 * (here) and prints the tree (lower_print.c) with its accesses
 * (lower_access.c); rlt_codegen_lowered_text, which prints the tree as text
 * (lower_dump.c); and codegen_print_axis_affine, for the reference kernel.
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

/* ---- staging ------------------------------------------------------------ */

/* A staged weight: staged once by SYMBOL_prepare, not on every call. */
static bool is_prestaged(const lower_gen *g, int t)
{
    return t + 1 < g->op->n_tensors && g->ws_offset[t] >= 0 && g->op->tensors[t].is_weight;
}

/* The tensor dim that the innermost physical dim of t's stage walks with
 * step 1 (its coordinate is base + p_last), or -1 when there is none: then
 * every element checks its own coordinates. */
static int staging_inner_dim(const lower_gen *g, int t)
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
static void emit_staging(lower_gen *g, int t, bool use_openmp)
{
    const rlt_tensor *tensor = &g->op->tensors[t];
    const rlt_layout *l = &g->n->layouts[t];
    int np = g->n_phys[t], last = np - 1;
    const int64_t *pd = g->phys_dims[t];
    rlt_str desc;
    rlt_str_init(&desc);
    for (int d = 0; d < np; d++) rlt_str_printf(&desc, "[%" PRId64 "]", pd[d]);
    lower_out(g, 1, "/* stage %s into %s_s%s%s%s */\n", tensor->name, g->tname[t], lower_text_of(g, &desc),
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
        if (d == par) lower_out(g, 1 + d, "#pragma omp parallel for schedule(static) num_threads(rlt_nthreads)\n");
        else lower_out(g, 1 + d, "#pragma GCC unroll 1\n");
        lower_out(g, 1 + d, "for (long p%d = 0; p%d < %" PRId64 "; p%d++)%s\n", d, d, pd[d], d,
                  d + 1 == n_outer ? " {" : "");
    }
    if (n_outer == 0) lower_out(g, 1, "{\n");
    int in = 1 + n_outer;
    rlt_str cond, src, dst;
    rlt_str_init(&cond);
    rlt_str_init(&src);
    rlt_str_init(&dst);
    int64_t strides[RLT_MAX_DIMS];
    lower_dims_strides(tensor->dims, tensor->n_dims, strides);
    for (int d = 0; d < tensor->n_dims; d++) {
        int outer = g->outer_pos[t][d], inner = g->inner_pos[t][d];
        const char *sep = cond.len ? " && " : "";
        if (d == walk) {
            /* the coordinate without p_last: base */
            if (inner >= 0)
                lower_out(g, in, "long b%d = p%d * %" PRId64 " - %" PRId64 ";\n", d, outer, pd[inner], l->pad_lo[d]);
            else
                lower_out(g, in, "long b%d = -%" PRId64 ";\n", d, l->pad_lo[d]);
            rlt_str_printf(&src, "%sb%d * %" PRId64, d ? " + " : "", d, strides[d]);
            continue;
        }
        if (inner >= 0)
            lower_out(g, in, "long c%d = p%d * %" PRId64 " + p%d - %" PRId64 ";\n", d, outer, pd[inner], inner,
                      l->pad_lo[d]);
        else
            lower_out(g, in, "long c%d = p%d - %" PRId64 ";\n", d, outer, l->pad_lo[d]);
        rlt_str_printf(&cond, "%sc%d >= 0 && c%d < %" PRId64, sep, d, d, tensor->dims[d]);
        rlt_str_printf(&src, "%sc%d * %" PRId64, d ? " + " : "", d, strides[d]);
    }
    int64_t pstrides[2 * RLT_MAX_DIMS];
    lower_dims_strides(pd, np, pstrides);
    for (int d = 0; d < n_outer; d++) rlt_str_printf(&dst, "%sp%d * %" PRId64, d ? " + " : "", d, pstrides[d]);
    if (!dst.len) rlt_str_append(&dst, "0");
    if (!src.len) rlt_str_append(&src, "0");
    if (walk < 0) {
        lower_out(g, in, "%s_s[%s] = (%s) ? %s[%s] : 0.0f;\n", g->tname[t], lower_text_of(g, &dst),
                  lower_text_of(g, &cond), g->tname[t], lower_text_of(g, &src));
    } else {
        /* p_last copies where 0 <= b + p_last < dim, and the other dims are in range */
        int64_t n_last = pd[last], dim = tensor->dims[walk];
        lower_out(g, in, "long rlt_lo = 0, rlt_hi = 0;\n");
        if (cond.len) lower_out(g, in, "if (%s) {\n", lower_text_of(g, &cond));
        else lower_out(g, in, "{\n");
        /* rlt_lo = clamp(-b, 0, n_last); rlt_hi = clamp(dim - b, rlt_lo, n_last) */
        char b[16], p[16];
        snprintf(b, sizeof b, "b%d", walk);
        snprintf(p, sizeof p, "p%d", last);
        lower_out(g, in + 1, "rlt_lo = -%s < 0 ? 0 : -%s > %" PRId64 " ? %" PRId64 " : -%s;\n", b, b, n_last,
                  n_last, b);
        lower_out(g, in + 1, "rlt_hi = %" PRId64 " - %s < rlt_lo ? rlt_lo : %" PRId64 " - %s > %" PRId64 " ? %" PRId64
            " : %" PRId64 " - %s;\n", dim, b, dim, b, n_last, n_last, dim, b);
        lower_out(g, in, "}\n");
        lower_out(g, in, "float *restrict rlt_dst = %s_s + %s;\n", g->tname[t], lower_text_of(g, &dst));
        lower_out(g, in, "long rlt_src = %s;\n", lower_text_of(g, &src));
        lower_out(g, in, "#pragma GCC unroll 1\n");
        lower_out(g, in, "for (long %s = 0; %s < rlt_lo; %s++) rlt_dst[%s] = 0.0f;\n", p, p, p, p);
        lower_out(g, in, "#pragma GCC unroll 1\n");
        lower_out(g, in, "for (long %s = rlt_lo; %s < rlt_hi; %s++) rlt_dst[%s] = %s[rlt_src + %s * %" PRId64 "];\n", p,
                  p, p, p, g->tname[t], p, strides[walk]);
        lower_out(g, in, "#pragma GCC unroll 1\n");
        lower_out(g, in, "for (long %s = rlt_hi; %s < %" PRId64 "; %s++) rlt_dst[%s] = 0.0f;\n", p, p, n_last, p, p);
    }
    lower_out(g, in - 1, "}\n");
    rlt_str_free(&cond);
    rlt_str_free(&src);
    rlt_str_free(&dst);
}

/* ---- the kernel --------------------------------------------------------- */

/* Starts a lowering of `nest` into the text s: checks the nest, analyses
 * it, and builds the lowered tree of its main plan (*out_root, in
 * (*out_g)->arena). Free *out_g with lower_end, also after a failure. */
static rlt_status lower_begin(const rlt_nest *nest, rlt_str *s, lower_gen **out_g, lowered_node **out_root,
                              rlt_diag *diag)
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
    *out_root = lowered_new(g, LOWERED_SEQ, &start);
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
    lowered_node *root;
    rlt_status st = lower_begin(nest, &s, &g, &root, diag);
    if (st != RLT_STATUS_OK) {
        lower_end(g);
        rlt_str_free(&s);
        return st;
    }
    const rlt_op *op = g->op;
    bool needs_openmp = false;
    for (int l = 0; l < nest->n_loops; l++) needs_openmp |= nest->loops[l].kind == RLT_LOOP_PARALLEL;

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
        if (!is_prestaged(g, t)) continue;
        lower_out(g, 1, "const float *restrict %s = rlt_t[%d];\n", g->tname[t], t);
        lower_out(g, 1, "float *restrict %s_s = (float *)((char *)rlt_ws + %" PRId64 ");\n", g->tname[t],
                  g->ws_offset[t]);
    }
    bool any_prestaged = false;
    for (int t = 0; t + 1 < op->n_tensors; t++) any_prestaged |= is_prestaged(g, t);
    if (!any_prestaged) lower_out(g, 1, "/* no weight is staged */\n");
    lower_out(g, 1, "(void)rlt_t;\n");
    lower_out(g, 1, "(void)rlt_ws;\n");
    lower_out(g, 1, "if (rlt_nthreads < 1) rlt_nthreads = 1;\n");
    for (int t = 0; t + 1 < op->n_tensors; t++)
        if (is_prestaged(g, t)) emit_staging(g, t, needs_openmp);
    lower_out(g, 0, "}\n\n");

    lower_out(g, 0, "void %s(float *const *rlt_t, void *rlt_ws, int rlt_nthreads)\n{\n", CODEGEN_SYMBOL_PLACEHOLDER);
    for (int t = 0; t < op->n_tensors; t++) {
        bool is_out = t == op->n_tensors - 1;
        lower_out(g, 1, "%sfloat *restrict %s = rlt_t[%d];\n", is_out ? "" : "const ", g->tname[t], t);
        if (!is_out && g->ws_offset[t] >= 0)
            lower_out(g, 1, "%sfloat *restrict %s_s = (float *)((char *)rlt_ws + %" PRId64 ");\n",
                is_prestaged(g, t) ? "const " : "", g->tname[t], g->ws_offset[t]);
    }
    lower_out(g, 1, "(void)rlt_ws;\n");
    lower_out(g, 1, "if (rlt_nthreads < 1) rlt_nthreads = 1;\n");
    for (int t = 0; t + 1 < op->n_tensors; t++)
        if (g->ws_offset[t] >= 0 && !is_prestaged(g, t)) emit_staging(g, t, needs_openmp);
    lower_print_tree(g, root, 1);
    lower_out(g, 0, "}\n");
    lower_end(g);
    return codegen_finish(&s, "rlt_k_", needs_openmp, ksrc, diag);
}

rlt_status rlt_codegen_lowered_text(const rlt_nest *nest, rlt_str *out, rlt_diag *diag)
{
    lower_gen *g;
    lowered_node *root;
    rlt_status st = lower_begin(nest, out, &g, &root, diag);
    if (st == RLT_STATUS_OK) {
        lower_dump_tree(g, root, out);
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
