/*
 * lowered.h - the lowered loop IR: the loop structure of a kernel between
 * the scheduled nest (rlt_nest) and its C text.
 *
 * Code generation runs in stages: nest -> lowered tree -> C.
 *  - lower_build.c (lower_build_plan) walks a plan of the nest's loops and
 *    decides, node by node, what the C will hold: loops (serial, parallel,
 *    rolled with or without "#pragma GCC unroll 1"), unrolled copies,
 *    derived symbols of fused loops, guards, versions (a fast copy and a
 *    guarded one, for guards or for the tile's load bounds), vector loops
 *    (whole vectors, a partial vector with its lane count, a lane loop), the
 *    accumulator tile with its reload and write-back, the transposed
 *    write-back, and the statements at the bottom;
 *  - lower_print.c (lower_print_tree) prints a tree as C, and lower_dump.c
 *    (lower_dump_tree) as an indented text, one node a line (`rltune show
 *    --stage lowered`).
 * Every node keeps the cursor (lower_cursor) that the walk had where it
 * stands, so the printer loads it instead of changing and restoring state.
 * Still printed directly from the nest: the statements' expressions,
 * loads and stores (lower_access.c) and the staging copies (lower.c).
 *
 * Ownership: nodes and their texts live in lower_gen.arena and go with it.
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
    LOWERED_PARTIAL,   /* a vector loop's tail in a partial vector of text lanes */
    LOWERED_LANES,     /* a vector loop's tail one lane at a time */
    LOWERED_ACC,       /* the accumulator tile of cache_write: declaration, body */
    LOWERED_PLAN,      /* a walk over some loops for body, behind a comment (text) */
    LOWERED_TRANSPOSE, /* a tile's write-back or reload transposed in registers */
    LOWERED_RUN,       /* one run of it: lanes value .. value + count - 1 at text */
    LOWERED_RUN_LANE,  /* one column of a run (its cursor fixes var) */
    LOWERED_STMT       /* the statement of kind body at this point */
} lowered_kind;

/* What distinguishes loops and versions of the same kind. */
typedef enum lowered_flavor {
    LOWERED_PLAIN,
    LOWERED_PARALLEL,    /* LOOP: "#pragma omp parallel for" (n_threads, 0: rlt_nthreads) */
    LOWERED_KEEP_ROLLED, /* LOOP, LANES: "#pragma GCC unroll 1" */
    LOWERED_BY_BOUNDS,   /* VERSION: the tile's loads in bounds, not the guards */
    LOWERED_NO_WHOLE,    /* VECTOR: no whole vector (wider than what is left of its axis) */
    LOWERED_SCALAR_ONLY  /* VECTOR: lanes only (a derived symbol at the vector loop) */
} lowered_flavor;

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

/* Prints the children of `root` as C, indented by `indent`. */
void lower_print_tree(lower_gen *g, const lowered_node *root, int indent);

/* Appends the tree under `root` as text, one node a line, to s. */
void lower_dump_tree(lower_gen *g, const lowered_node *root, rlt_str *s);

#endif
