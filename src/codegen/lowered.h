/*
 * lowered.h - the lowered loop IR: a kernel between the scheduled nest
 * (rlt_nest) and its C text.
 *
 * Code generation runs in stages: nest -> lowered tree -> C. Three passes
 * build the tree:
 *  - lower_stage.c (lower_build_stages): the staged copies of the inputs
 *    (pack, pad) into the workspace: their loops (the outermost of more
 *    than one iteration parallel, the others kept rolled), the source's
 *    coordinates, and the copy, element by element under a bounds
 *    condition or a row at a time (zeros, a plain copy, zeros);
 *  - lower_build.c (lower_build_plan) walks a plan of the nest's loops and
 *    decides, node by node, what the C will hold: loops (serial, parallel,
 *    rolled with or without "#pragma GCC unroll 1"), unrolled copies,
 *    derived symbols of fused loops, guards, versions (a fast copy and a
 *    guarded one, for guards or for the tile's load bounds), vector loops
 *    (whole vectors, a partial vector with its lane count, a lane loop), the
 *    accumulator tile with its declaration, reload and write-back, the
 *    transposed write-back, and the statements at the bottom;
 *  - lower_stmt.c (lower_build_stmt) makes each statement explicit: the
 *    bounds guard it takes over from its factors (or that it adds nothing),
 *    its expressions as trees of nodes (operations, constants, the
 *    accumulator's value, loads, each load with the kind it is emitted as:
 *    scalar, broadcast, vector, strided, stride-2 window, masked to its
 *    lanes, lane by lane), and how it reads and writes the output (scalar,
 *    vector, masked, lane by lane); also the epilogue in a transposed
 *    write-back.
 * The passes number the temporaries (rlt_tN, rlt_nvN) as they build the
 * nodes that declare them, in the order the printer prints those.
 * lower_print.c (lower_print_tree) prints a tree as C, and lower_dump.c
 * (lower_dump_tree) as an indented text, one node a line (`rltune show
 * --stage lowered`).
 * Every node keeps the cursor (lower_cursor) that the walk had where it
 * stands, so the printer loads it instead of changing and restoring state.
 * Still printed directly: the text of addresses, loads and bounds
 * conditions (lower_access.c, lower_load.c, as the nodes' kinds say),
 * conditions that the passes hold as C text, and the kernel's frame:
 * comment, workspace size, signatures, tensor pointers (lower.c).
 *
 * Ownership: nodes and their texts live in lower_gen.arena and go with it;
 * a LOAD's expr is borrowed from the op.
 */
#ifndef RLT_LOWERED_H
#define RLT_LOWERED_H

#include "codegen/lower_internal.h"

typedef enum lowered_kind {
    LOWERED_SEQ,       /* its children in order: a version's copy, a vector loop's whole vectors */
    LOWERED_LOOP,      /* for (var = 0; var < extent; var++) */
    LOWERED_COPY,      /* one unrolled copy, var = value */
    LOWERED_DERIVED,   /* const long var = (fused) / or % extent */
    LOWERED_GUARD,     /* if (text < value): a tail's guard */
    LOWERED_VERSION,   /* if (text) first child else second: fast and guarded copies */
    LOWERED_VECTOR,    /* a vector loop: whole vectors where text holds, then a tail */
    LOWERED_PARTIAL,   /* a vector loop's tail in a partial vector of text lanes (rlt_nv<temp>) */
    LOWERED_LANES,     /* a vector loop's tail one lane at a time */
    LOWERED_ACC,       /* the accumulator tile of cache_write: declaration (decl), body */
    LOWERED_PLAN,      /* a walk over some loops for body, behind a comment (text) */
    LOWERED_TRANSPOSE, /* a tile's write-back or reload transposed in registers */
    LOWERED_RUN,       /* one run of it: lanes value .. value + count - 1 at text */
    LOWERED_RUN_LANE,  /* one column of a run (its cursor fixes var); child: the epilogue's
                          expression when the write-back applies it */
    LOWERED_STMT,      /* the statement of kind body at this point, under the guard text ("" or NULL: none);
                          children: the value's expression (MAIN), then the epilogue's (when the
                          statement applies it: EPILOGUE, a final WRITEBACK, MAIN with a temp),
                          then OUTPUT */
    LOWERED_EXPR,      /* an operation of an expression (op), its operands its children; CONST:
                          `constant`, ACC: the reduction's value (what the statement says) */
    LOWERED_LOAD,      /* a load of an expression (expr), emitted as `load` */
    LOWERED_OUTPUT,    /* the statement's access to the output, as `out` */
    LOWERED_STAGE,     /* tensor's staged copy (pack, pad) into the workspace, text: its dims */
    LOWERED_STAGE_LOOP, /* for (p<var> = 0; p<var> < value; ...) over a dim of the copy */
    LOWERED_STAGE_COORD, /* long c<var> (or b<var>, flavor BASE) = text: a source coordinate */
    LOWERED_STAGE_ELEMS, /* tensor_s[dst] = (text) ? tensor[src] : 0.0f, element by element */
    LOWERED_STAGE_ROW  /* a row of value elements: zeros, a plain copy where 0 <= b<var> + p < count, zeros */
} lowered_kind;

/* What distinguishes loops and versions of the same kind. */
typedef enum lowered_flavor {
    LOWERED_PLAIN,
    LOWERED_PARALLEL,    /* LOOP: "#pragma omp parallel for" (n_threads, 0: rlt_nthreads) */
    LOWERED_KEEP_ROLLED, /* LOOP, LANES: "#pragma GCC unroll 1" */
    LOWERED_BY_BOUNDS,   /* VERSION: the tile's loads in bounds, not the guards */
    LOWERED_NO_WHOLE,    /* VECTOR: no whole vector (wider than what is left of its axis) */
    LOWERED_SCALAR_ONLY, /* VECTOR: lanes only (a derived symbol at the vector loop) */
    LOWERED_BASE,        /* STAGE_COORD: the walked dim's base, without the row's position */
    LOWERED_OMITTED      /* STMT: a factor reads outside its tensor for certain: no term to add */
} lowered_flavor;

/* The accumulator tile's declaration: "<type> <name>[dims[0]]... = <init>;",
 * its elements floats or vectors of `lanes` floats (rlt_v<lanes>); one
 * element ("[1]") when it has no dim. */
typedef struct lowered_decl {
    const char *name;            /* LOWER_ACC_NAME */
    int lanes;                   /* 1: floats */
    int n_dims;
    int64_t dims[RLT_MAX_LOOPS]; /* the extents of the spatial, unvectorized loops of the tile */
    const char *init;            /* the initializer: "{0}" */
} lowered_decl;

typedef struct lowered_node lowered_node;
struct lowered_node {
    lowered_kind kind;
    lowered_flavor flavor;
    lower_body_kind body;  /* STMT, PLAN, TRANSPOSE: which statement */
    int var;               /* LOOP, COPY, DERIVED, LANES, TRANSPOSE: the variable; else -1 */
    int n_threads;         /* LOOP, PARALLEL */
    int n_vecs;            /* RUN: vectors transposed (2, 4 or 8) */
    int64_t value;         /* COPY: the copy; GUARD: the bound; RUN: the first column;
                              TRANSPOSE: the output's stride along the lanes */
    int64_t count;         /* RUN: its columns */
    const char *text;      /* a condition, lane count, address or label (arena-owned); or NULL */
    int tensor;            /* STAGE, STAGE_ELEMS, STAGE_ROW: the staged tensor */
    const rlt_expr *expr;  /* LOAD: the load (borrowed from the op) */
    rlt_expr_kind op;      /* EXPR: the operation */
    double constant;       /* EXPR, RLT_EXPR_CONST: the value */
    lower_load_kind load;  /* LOAD: how it is emitted */
    unsigned hoisted;      /* LOAD: its dims that the statement's guard checks (bit d) */
    lower_out_kind out;    /* OUTPUT: how the output is read and written */
    int temp;              /* the temporary the node declares, or -1: STMT, the value an
                              epilogue reads (rlt_t<temp>); OUTPUT, a lane-by-lane
                              store's vector (rlt_t<temp>); RUN of a reload, its
                              vectors (rlt_t<temp>); PARTIAL, its lane count
                              (rlt_nv<temp>) */
    const lowered_decl *decl; /* ACC: the accumulator's declaration (arena-owned) */
    int64_t stride;        /* STAGE_ROW: the source's stride along the row */
    const char *src, *dst; /* STAGE_ELEMS, STAGE_ROW: source and stage offsets (arena-owned) */
    lower_cursor at;       /* the walk's state where the node stands */
    lowered_node *first, *last, *next; /* children in order, and the next sibling */
};

/* Builds the tree of plan p from index idx on, at cursor `at`, as children
 * of `parent`. On out of memory it sets g->is_oom (the tree is then
 * incomplete and must not be printed). */
void lower_build_plan(lower_gen *g, const lower_plan *p, int idx, const lower_cursor *at, lowered_node *parent);

/* A new node of `kind` at cursor `at` (a sink node that nothing reads when
 * out of memory, with g->is_oom set). */
lowered_node *lowered_new(lower_gen *g, lowered_kind kind, const lower_cursor *at);

/* A new node of `kind` at cursor `at`, appended to parent's children. */
lowered_node *lowered_add(lower_gen *g, lowered_node *parent, lowered_kind kind, const lower_cursor *at);

/* Appends d as C, without the semicolon: "rlt_v8 rlt_acc[2][3] = {0}". */
void lowered_decl_print(const lowered_decl *d, rlt_str *s);

/* The arena's copy of t's text ("" when out of memory, with g->is_oom set). */
const char *lowered_keep_text(lower_gen *g, const rlt_str *t);

/* Appends to `parent` the staged copies (STAGE nodes) of the inputs that
 * have a stage: the weights' (is_prestaged: SYMBOL_prepare copies them
 * once) or the others' (the kernel copies them on every call); their
 * outermost loop of more than one iteration runs in parallel when
 * use_openmp. Out of memory as lower_build_plan. */
void lower_build_stages(lower_gen *g, bool is_prestaged, bool use_openmp, lowered_node *parent);

/* Fills statement node `stmt` (a STMT, at its cursor): the guard that
 * checks its factors' bounds once, or LOWERED_OMITTED; a LOAD child for
 * each load with the kind it is emitted as; an OUTPUT child when it reads
 * or writes the output. */
void lower_build_stmt(lower_gen *g, lowered_node *stmt);

/* Appends to `parent` the tree of e (EXPR and LOAD nodes), at parent's
 * cursor. */
void lower_build_expr(lower_gen *g, lowered_node *parent, const rlt_expr *e);

/* Hands the dims that the guard of `stmt` (a STMT or RUN_LANE) checks for
 * its loads to the access layer (g->hoisted_load); lower_stmt_leave
 * forgets them. */
void lower_stmt_enter(lower_gen *g, const lowered_node *stmt);
void lower_stmt_leave(lower_gen *g);

/* Whether input t is a staged weight (copied once, by SYMBOL_prepare). */
bool lower_is_prestaged(const lower_gen *g, int t);

/* Prints the children of `root` as C, indented by `indent`. */
void lower_print_tree(lower_gen *g, const lowered_node *root, int indent);

/* Appends the tree under `root` as text, one node a line, to s: its
 * children at the top level, or, with a label, root as a block so named. */
void lower_dump_tree(lower_gen *g, const lowered_node *root, const char *label, rlt_str *s);

#endif
