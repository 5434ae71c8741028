/*
 * lower_internal.h - what the files that lower a scheduled nest to C share,
 * and nobody else needs.
 *
 * One lowering is one generator (lower_gen), filled in stages:
 *  - lower_symbols.c names the C variables and analyses the nest: symbols,
 *    each variable's value as a linear form over them, guards, the vector
 *    loop, the accumulator tile, the workspace; it also holds the helpers
 *    for linear forms and for writing the kernel's text;
 *  - lower_load.c chooses how each load is emitted and writes it as C
 *    text, with the bounds checks a tensor without a padded copy needs;
 *    lower_access.c does the same for addresses and the output's
 *    accesses;
 *  - lower_stage.c, lower_build.c and lower_stmt.c build the lowered tree
 *    (lowered.h): the staged copies, then the loops, guards, versions,
 *    vectors, unrolled copies and the accumulator tile down to the
 *    statements, with their expressions (operations, constants, loads)
 *    and output accesses; lower_print.c prints it as C (and lower_dump.c
 *    as text);
 *  - lower.c writes the kernel's frame around the trees
 *    (rlt_codegen_kernel), and explains the whole scheme.
 * All of it runs on one thread; the generator borrows the nest and its op.
 */
#ifndef RLT_LOWER_INTERNAL_H
#define RLT_LOWER_INTERNAL_H

#include "codegen/codegen_internal.h"

/* ---- linear forms and addresses ----------------------------------------- */

/* A linear form over symbols: sum of c[s] * symbol s, plus k. */
typedef struct lower_lin {
    int64_t c[RLT_MAX_VARS];
    int64_t k;
} lower_lin;

/* One nonlinear piece of an address: stride * (x / b) or stride * (x % b). */
typedef struct lower_nonlin {
    lower_lin x;
    int64_t b;
    bool is_div;
    int64_t stride;
} lower_nonlin;

/* An element's offset in its tensor (or staged copy): a linear part and the
 * nonlinear pieces of blocked dims that do not stay linear. */
typedef struct lower_addr {
    lower_lin l;
    int n_nl;
    lower_nonlin nl[RLT_MAX_DIMS * 2];
} lower_addr;

/* How an address varies across the lanes of the vector loop: not at all,
 * one float a lane, 2 or 4 floats a lane at a width the preamble has a
 * strided load for (rlt_lds2_W, rlt_lds4_W: a stride-2 convolution's input
 * along its width), or otherwise (lane by lane). */
typedef enum lower_lane_pattern {
    LOWER_LANES_UNIFORM,
    LOWER_LANES_CONTIGUOUS,
    LOWER_LANES_STRIDED,
    LOWER_LANES_GATHER
} lower_lane_pattern;

/* How a load is emitted, as the statement pass chose it (lower_load_choose):
 * one element (under its bounds condition); one element broadcast to every
 * lane; a contiguous vector; a strided vector (rlt_ldsS_W); a stride-2
 * window of a convolution's unrolled taps (rlt_ldw2); a vector masked to
 * the lanes inside the tensor and the partial vector (rlt_ldm); or lane by
 * lane. */
typedef enum lower_load_kind {
    LOWER_LOAD_SCALAR,
    LOWER_LOAD_BROADCAST,
    LOWER_LOAD_VECTOR,
    LOWER_LOAD_STRIDED,
    LOWER_LOAD_WINDOW,
    LOWER_LOAD_MASKED,
    LOWER_LOAD_LANES
} lower_load_kind;

/* How the output is read and written at a point (lower_out_choose): one
 * element, a contiguous vector, one masked to a partial vector's lanes, or
 * lane by lane. */
typedef enum lower_out_kind {
    LOWER_OUT_SCALAR,
    LOWER_OUT_VECTOR,
    LOWER_OUT_MASKED,
    LOWER_OUT_LANES
} lower_out_kind;

/* ---- generator state ---------------------------------------------------- */

typedef struct lowered_node lowered_node; /* lowered.h */

/* The statement at the bottom of a walk over the loops (lower_plan). */
typedef enum lower_body_kind {
    LOWER_BODY_MAIN,     /* the computation */
    LOWER_BODY_OUT_ZERO, /* output = 0 before an in-place reduction */
    LOWER_BODY_EPILOGUE, /* output = epilogue(output) after it */
    LOWER_BODY_ACC_LOAD, /* acc = output (a reduction loop is outside the accumulator) */
    LOWER_BODY_WRITEBACK /* output = acc (or epilogue(acc) when the value is final) */
} lower_body_kind;

/* Where a walk over the loops is (lowered.h: every node of the lowered tree
 * keeps the cursor it is printed at): which variables an unrolled copy or a
 * lane fixed to a constant, whether the vector path (and a partial vector's
 * mask) is on, which guards and bounds are known to hold, and whether this
 * is the guarded copy of a versioned subtree. */
typedef struct lower_cursor {
    bool is_fixed[RLT_MAX_VARS];
    int64_t fixed[RLT_MAX_VARS];
    bool is_guard_known[RLT_MAX_VARS]; /* inside the fast path: the guard holds */
    bool is_bounds_known; /* inside a tile whose loads were all checked in bounds at its start */
    bool in_vector;       /* the vector path (vec_var spans lanes) */
    bool is_masked;       /* in a partial vector */
    int mask_temp;        /* is_masked: the temporary that holds its lane count (rlt_nv<mask_temp>) */
    int slow_depth;       /* > 0 inside the guarded (tail) copy of a versioned subtree */
    bool is_acc_in_slow;  /* the accumulator was declared inside that copy */
} lower_cursor;

/* The state of one lowering: what the analysis found (set once), and the
 * cursor that the access layer reads (`at`), loaded from the node being
 * built or printed. n and op are borrowed; s is the kernel's text,
 * borrowed from rlt_codegen_kernel; arena holds the lowered tree. */
typedef struct lower_gen {
    const rlt_nest *n;
    const rlt_op *op;
    rlt_str *s;
    char cname[RLT_MAX_VARS][RLT_LOOP_NAME_MAX + 8];
    char tname[RLT_MAX_TENSORS][RLT_NAME_MAX + 8];
    bool is_symbol[RLT_MAX_VARS];
    int sym_depth[RLT_MAX_VARS];   /* loop position whose body first sees the symbol */
    int derived_from[RLT_MAX_VARS]; /* fused variable a derived symbol comes from */
    lower_lin value[RLT_MAX_VARS];
    lower_lin axis[RLT_MAX_AXES];
    int n_guards;
    lower_lin guard[RLT_MAX_VARS]; /* guard g: guard[g] < guard_bound[g] */
    int64_t guard_bound[RLT_MAX_VARS];
    int guard_depth[RLT_MAX_VARS];
    int guard_vpoint[RLT_MAX_VARS]; /* loop position to version the guard at, or -1 */
    /* Inside a guarded accumulation (lower_hoist_factor_checks): these loads'
     * dims were checked by the statement's guard, not by the load. */
    int n_hoisted;
    const rlt_expr *hoisted_load[RLT_MAX_TENSORS];
    unsigned hoisted_dims[RLT_MAX_TENSORS];
    int vec_var;        /* the vectorized loop's variable, or -1 */
    int vec_width;
    int r0;             /* position of the outermost reduction loop of more than one iteration (n_loops if none) */
    int acc_depth;      /* loops at and after this position form the tile; -1: none */
    bool acc_is_final;  /* every reduction loop is inside the accumulator */
    int64_t ws_offset[RLT_MAX_TENSORS];
    int64_t ws_bytes;
    int64_t phys_dims[RLT_MAX_TENSORS][2 * RLT_MAX_DIMS];
    int n_phys[RLT_MAX_TENSORS];
    int outer_pos[RLT_MAX_TENSORS][RLT_MAX_DIMS]; /* where each original dim went */
    int inner_pos[RLT_MAX_TENSORS][RLT_MAX_DIMS];
    int n_temps;        /* temporaries numbered so far (rlt_tN, rlt_nvN): the passes number them as they
                           build the nodes, which is the order the printer prints them in */
    lower_cursor at;    /* the walk's position (see lower_cursor) */
    rlt_arena *arena;   /* the lowered tree's nodes and texts (owned by rlt_codegen_kernel) */
    bool is_oom;        /* building the tree ran out of memory */
    lowered_node *sink; /* what lowered_new returns then (owned, rlt_free) */
} lower_gen;

/* Makes `at` the current cursor (g->at). */
void lower_cursor_load(lower_gen *g, const lower_cursor *at);

/* In a partial vector, the temporary that holds its lane count (its lanes
 * are 0 .. rlt_nv<N> - 1); else -1. */
static inline int lower_mask_nv(const lower_gen *g) { return g->at.is_masked ? g->at.mask_temp : -1; }

/* The accumulator tile's C name (lowered.h: an ACC node declares it). */
#define LOWER_ACC_NAME "rlt_acc"

/* A walk over some of the nest's loops: all of them for the computation, the
 * spatial ones for zeroing, epilogue, accumulator load and write-back. */
typedef struct lower_plan {
    int n;
    int pos[RLT_MAX_LOOPS];
    lower_body_kind kind;
} lower_plan;

/* ---- lower_symbols.c: symbols, analysis, linear forms, text ------------- */

/* Appends a line (or a piece of one) to the kernel, indented by `indent`. */
void lower_out(lower_gen *g, int indent, const char *fmt, ...) RLT_PRINTF(3, 4);

/* Marks the kernel's text failed when the temporary string t ran out of
 * memory; lower_text_of does it too, and returns t's text ("" if failed). */
void lower_note_failure(const lower_gen *g, const rlt_str *t);
const char *lower_text_of(const lower_gen *g, const rlt_str *t);

/* The C names of the tensors and variables (g->tname, g->cname). */
void lower_make_cnames(lower_gen *g);

/* Fills the analysis part of g from g->n: symbols, values, guards, the
 * vector loop, the reductions, the accumulator, the staged tensors. */
void lower_analyse(lower_gen *g);

void lower_lin_zero(lower_lin *l);
/* dst += scale * src. */
void lower_lin_add_scaled(lower_lin *dst, const lower_lin *src, int64_t scale);
/* An affine index over the op's axes as a linear form over symbols. */
void lower_affine_to_lin(const lower_gen *g, const rlt_affine *a, lower_lin *out_lin);
/* l with the fixed symbols (unrolled copies, lanes) folded into k. */
void lower_lin_fold(const lower_gen *g, const lower_lin *l, lower_lin *folded);
bool lower_lin_is_const(const lower_gen *g, const lower_lin *l);
/* Appends l, folded, as C: "i_o*6144 + k + 3". */
void lower_lin_print(const lower_gen *g, const lower_lin *l, rlt_str *s);
/* The range of l over its symbols' loop ranges. */
void lower_lin_range(const lower_gen *g, const lower_lin *l, int64_t *lo, int64_t *hi);

/* ---- lower_access.c: addresses, the output ------------------------------ */

/* Row-major strides of dims[0..n). */
void lower_dims_strides(const int64_t *dims, int n, int64_t *strides);
/* The address a load reads (in its staged copy if it has one). */
void lower_load_addr(const lower_gen *g, const rlt_expr *e, lower_addr *a);
/* The address of the output element at the current point. */
void lower_out_addr(const lower_gen *g, lower_addr *a);
/* Appends a's address at the current point, and at lane 0 of the vector
 * loop (where a contiguous vector starts). */
void lower_addr_print(const lower_gen *g, const lower_addr *a, rlt_str *s);
void lower_addr_print_lane0(lower_gen *g, const lower_addr *a, rlt_str *s);
/* How a varies across the vector loop's lanes (uniform when there is none);
 * lower_addr_lanes: in the code being emitted (uniform outside the vector
 * path). */
lower_lane_pattern lower_lanes_of(const lower_gen *g, const lower_addr *a);
lower_lane_pattern lower_addr_lanes(const lower_gen *g, const lower_addr *a);

/* The vector variable's state while lanes are emitted one by one:
 * lower_lanes_enter fixes it (to lane 0: set g->at.fixed[g->vec_var] to
 * each lane), out of the vector path, and returns what it was;
 * lower_lanes_leave restores that. */
typedef struct lower_lane_state {
    bool is_fixed;
    int64_t fixed;
    bool in_vector;
} lower_lane_state;
lower_lane_state lower_lanes_enter(lower_gen *g);
void lower_lanes_leave(lower_gen *g, const lower_lane_state *was);

/* Appends the accumulator element at the current point ("rlt_acc[i_i][0]"). */
void lower_acc_ref(const lower_gen *g, rlt_str *s);
/* How the output is accessed at the current point. */
lower_out_kind lower_out_choose(const lower_gen *g);
/* Appends the output's value at the current point, read as `kind`. */
void lower_out_value(lower_gen *g, lower_out_kind kind, rlt_str *s);
/* Emits the store of value_text to the output at the current point, as
 * `kind`; lane by lane, through the temporary rlt_t<temp>. */
void lower_store_out(lower_gen *g, int indent, lower_out_kind kind, int temp, const char *value_text);

/* ---- lower_load.c: loads and their bounds checks ------------------------ */

/* Whether the preamble has masked loads and stores at this vector width. */
bool lower_has_masked_lanes(int width);
/* Narrows a lane range's bound, held as C text, to where x0 + c * lane
 * stays inside [0, n). */
void lower_narrow_lanes(lower_gen *g, rlt_str *bound, bool is_lower, const char *x0, int64_t c, int64_t n);

/* How load e is emitted at the current point (lower_mask_nv >= 0 in a
 * partial vector); the printer then emits it so (lower_emit_load). */
lower_load_kind lower_load_choose(lower_gen *g, const rlt_expr *e);
/* Appends load e as C, emitted as `kind` (its LOAD node's). */
void lower_emit_load(lower_gen *g, const rlt_expr *e, lower_load_kind kind, rlt_str *s);
/* The lanes [lo, hi) of a masked load of e that read inside its tensor and
 * the partial vector, as C text, and the part of its bounds condition that
 * does not depend on the lane (cond, "" when none); false when an index
 * falls as the lane grows (no masked load then). */
bool lower_load_lanes(lower_gen *g, const rlt_expr *e, rlt_str *cond, rlt_str *lo, rlt_str *hi);
/* The dims of load e that the statement's guard checks (bit d). */
unsigned lower_hoisted_dims(const lower_gen *g, const rlt_expr *e);
/* Appends to `guard` the bounds checks of e's factors that hold for the
 * whole statement and marks them done for the loads; false when a factor
 * is out of bounds for certain (the statement adds nothing). */
bool lower_hoist_factor_checks(lower_gen *g, const rlt_expr *e, rlt_str *guard);

/* Appends a vector built lane by lane: fn(g, arg, s) appends each lane's
 * scalar, with the vector variable fixed to it (lower_lanes_enter); in a
 * partial vector the lanes past it are 0. */
typedef void (*lower_lane_fn)(lower_gen *g, const void *arg, rlt_str *s);
void lower_emit_lanes(lower_gen *g, lower_lane_fn fn, const void *arg, rlt_str *s);

#endif
