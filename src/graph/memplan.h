/*
 * memplan.h - the static memory plan of a compiled network: the buffers
 * (activations) of one run placed in a single arena, a buffer reusing the
 * room of those whose lives have ended, and the peak it needs. Internal,
 * not public API. docs/graph.md, "Memory plan", describes the algorithm.
 *
 * Live ranges are in steps (the position of an op in the program order) and
 * inclusive at both ends: a buffer written by step `first` and last read by
 * step `last` occupies its room during both. Two buffers whose ranges only
 * touch (one's `first` equal to the other's `last`) therefore overlap in
 * time and never share memory: an op reads its inputs while it writes its
 * output. In-place reuse (an elementwise op writing over its input) is not
 * planned here; a caller that wants it merges the two buffers into one
 * block before planning.
 *
 * Threads: nothing is global; calls on different blocks may run at once.
 */
#ifndef RLT_GRAPH_MEMPLAN_H
#define RLT_GRAPH_MEMPLAN_H

#include "core/core.h"

/* One buffer to place: `bytes` long, live from step `first` (written) to
 * step `last` (last read), inclusive; first <= last. */
typedef struct rlt_mem_block {
    int64_t bytes;
    int first, last;
    int64_t offset; /* out: its place in the arena, a multiple of the alignment */
} rlt_mem_block;

/* Places n blocks in one arena so that two blocks whose live ranges overlap
 * never overlap in memory; blocks of 0 bytes get offset 0 and take no room.
 * Each block takes its size rounded up to `alignment` (a power of two >= 1).
 * *out_total is the arena's size, a multiple of alignment (0 when no block
 * takes room): the peak memory of the plan.
 *
 * The plan is greedy (largest block first, each at the lowest offset that
 * holds it among the placed blocks it meets in time) and deterministic:
 * the same blocks in the same order give the same offsets. It is not
 * always optimal; rlt_memplan_lower_bound is what no plan beats. Time
 * O(n^2), memory O(n).
 *
 * blocks: borrowed, n of them (NULL allowed when n == 0); only their
 * `offset` fields are written, and only on success: on failure the blocks
 * and *out_total are left as they were. out_total must not be NULL.
 * Errors: INVALID_ARGUMENT (n < 0, NULL blocks, negative bytes,
 * first > last, an alignment that is not a power of two >= 1, a size or
 * total overflowing int64), OUT_OF_MEMORY. */
rlt_status rlt_memplan(int n, rlt_mem_block *blocks, int64_t alignment, int64_t *out_total, rlt_diag *diag);

/* The lower bound no plan can beat: the largest, over steps, of the summed
 * sizes (each rounded up to alignment) of the blocks live at that step;
 * 0 when no block takes room. Saturates at INT64_MAX; -1 for input that
 * rlt_memplan refuses as INVALID_ARGUMENT (overflow aside). Allocates
 * nothing; time O(n^2). */
int64_t rlt_memplan_lower_bound(int n, const rlt_mem_block *blocks, int64_t alignment);

#endif /* RLT_GRAPH_MEMPLAN_H */
