/*
 * memplan.c - the static memory plan (rlt_memplan): buffers with inclusive
 * live ranges placed in one arena, greedy by size, each at the lowest
 * offset that holds it (first fit), as TFLite Micro's greedy planner does;
 * and the lower bound
 * that no plan can beat (rlt_memplan_lower_bound). docs/graph.md, "Memory
 * plan", states the algorithm and what it guarantees.
 */
#include "graph/memplan.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* A block with room to take, as the planner sees it. */
typedef struct slot {
    int64_t size;   /* bytes rounded up to the alignment, > 0 */
    int64_t offset; /* once placed */
    int first, last;
    int index;      /* in the caller's array */
} slot;

/* Largest first; ties: the earlier live range first, then the caller's
 * order, so that the plan does not depend on qsort's (unstable) order. */
static int slot_cmp_size_desc(const void *pa, const void *pb)
{
    const slot *a = pa, *b = pb;
    if (a->size != b->size) return a->size > b->size ? -1 : 1;
    if (a->first != b->first) return a->first < b->first ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

static bool alignment_ok(int64_t alignment)
{
    return alignment >= 1 && (alignment & (alignment - 1)) == 0;
}

/* bytes rounded up to alignment, or -1 when that overflows int64. */
static int64_t round_up(int64_t bytes, int64_t alignment)
{
    if (bytes > INT64_MAX - (alignment - 1)) return -1;
    return (bytes + alignment - 1) & ~(alignment - 1);
}

static bool live_overlap(int first_a, int last_a, int first_b, int last_b)
{
    return first_a <= last_b && first_b <= last_a;
}

/* The offset for `s` among `placed` (n_placed of them, by offset
 * ascending): the lowest that holds it between the placed blocks it meets
 * in time (first fit), else the top of the highest of them. -1 when that
 * top overflows int64. */
static int64_t first_fit(const slot *s, const slot *placed, int n_placed)
{
    int64_t top = 0; /* the highest end among the conflicting blocks seen so far */
    for (int i = 0; i < n_placed; i++) {
        const slot *p = &placed[i];
        if (!live_overlap(s->first, s->last, p->first, p->last)) continue;
        if (p->offset >= top && p->offset - top >= s->size) return top;
        if (p->offset + p->size > top) top = p->offset + p->size;
    }
    return top > INT64_MAX - s->size ? -1 : top;
}

/* Inserts s into placed (n_placed of them, by offset ascending, room for
 * one more), keeping the order. */
static void placed_insert(slot *placed, int n_placed, const slot *s)
{
    int lo = 0, hi = n_placed; /* the first with a larger offset */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (placed[mid].offset <= s->offset) lo = mid + 1;
        else hi = mid;
    }
    memmove(&placed[lo + 1], &placed[lo], (size_t)(n_placed - lo) * sizeof *placed);
    placed[lo] = *s;
}

rlt_status rlt_memplan(int n, rlt_mem_block *blocks, int64_t alignment, int64_t *out_total, rlt_diag *diag)
{
    RLT_ASSERT(out_total);
    if (n < 0) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "memory plan: %d blocks: must be >= 0", n);
    if (n > 0 && !blocks)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "memory plan: %d blocks but no array of them", n);
    if (!alignment_ok(alignment))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "memory plan: alignment %" PRId64 ": must be a power of two >= 1", alignment);
    int n_slots = 0;
    for (int i = 0; i < n; i++) {
        const rlt_mem_block *b = &blocks[i];
        if (b->bytes < 0)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "memory plan: block %d: %" PRId64 " bytes: must be >= 0", i, b->bytes);
        if (b->first > b->last)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "memory plan: block %d: live range [%d, %d]: first must be <= last", i, b->first,
                            b->last);
        if (round_up(b->bytes, alignment) < 0)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "memory plan: block %d: %" PRId64 " bytes rounded up to alignment %" PRId64
                            " overflow int64",
                            i, b->bytes, alignment);
        n_slots += b->bytes > 0;
    }

    rlt_status st = RLT_STATUS_OK;
    slot *by_size = NULL, *placed = NULL;
    int64_t total = 0;
    if (n_slots > 0) {
        by_size = rlt_malloc((size_t)n_slots * sizeof *by_size);
        placed = rlt_malloc((size_t)n_slots * sizeof *placed);
        if (!by_size || !placed) {
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "memory plan: out of memory (%d blocks)", n);
            goto cleanup;
        }
    }
    int k = 0;
    for (int i = 0; i < n; i++)
        if (blocks[i].bytes > 0)
            by_size[k++] = (slot){.size = round_up(blocks[i].bytes, alignment), .offset = 0,
                                  .first = blocks[i].first, .last = blocks[i].last, .index = i};
    if (n_slots > 1) qsort(by_size, (size_t)n_slots, sizeof *by_size, slot_cmp_size_desc);

    for (int i = 0; i < n_slots; i++) {
        slot *s = &by_size[i];
        s->offset = first_fit(s, placed, i);
        if (s->offset < 0) {
            st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                          "memory plan: block %d (%" PRId64 " bytes): the arena would pass INT64_MAX bytes",
                          s->index, blocks[s->index].bytes);
            goto cleanup;
        }
        placed_insert(placed, i, s);
        if (s->offset + s->size > total) total = s->offset + s->size;
    }

    for (int i = 0; i < n; i++) blocks[i].offset = 0;
    for (int i = 0; i < n_slots; i++) blocks[by_size[i].index].offset = by_size[i].offset;
    *out_total = total;

cleanup:
    rlt_free(placed);
    rlt_free(by_size);
    return st;
}

int64_t rlt_memplan_lower_bound(int n, const rlt_mem_block *blocks, int64_t alignment)
{
    if (n < 0 || (n > 0 && !blocks) || !alignment_ok(alignment)) return -1;
    for (int i = 0; i < n; i++)
        if (blocks[i].bytes < 0 || blocks[i].first > blocks[i].last) return -1;
    /* The live set only grows at a block's first step, so the peak is at
     * one of them. */
    int64_t peak = 0;
    for (int i = 0; i < n; i++) {
        if (blocks[i].bytes == 0) continue;
        int step = blocks[i].first;
        int64_t live = 0;
        for (int j = 0; j < n; j++) {
            const rlt_mem_block *b = &blocks[j];
            if (b->bytes == 0 || b->first > step || b->last < step) continue;
            int64_t size = round_up(b->bytes, alignment);
            if (size < 0 || live > INT64_MAX - size) return INT64_MAX;
            live += size;
        }
        if (live > peak) peak = live;
    }
    return peak;
}
