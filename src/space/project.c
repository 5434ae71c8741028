/*
 * project.c - the configuration of a space nearest to a scheduled nest
 * (rlt_space_project): how `rltune tune --tuner policy` starts the knob
 * search from the nest a LoopTune policy found.
 *
 * The nest is read in the space's own terms (space.h: register tile,
 * middle tile, reduction block, vectorized axis, unrolling, parallel axis):
 *   - the register tile is the loops inside the nest's accumulator (its
 *     cache_write loop), or, without one, the unrolled and vectorized loops
 *     innermost; an axis's tile is the product of its loops' extents there
 *     (in vectors for the vectorized axis);
 *   - an axis's middle tile is the product of its loops outside the
 *     register tile but its outermost one (which is the outer tile), or,
 *     when it has one loop there, that loop's extent if a reduction loop is
 *     outside it;
 *   - a reduction axis's block is the product of its loops but the
 *     outermost one; when it is one loop, its extent if no spatial loop
 *     follows it before the tile, else 1 (the loop is the outer block);
 *   - vec is the vectorized loop's axis and extent, unroll whether a tile
 *     loop is unrolled, parallel the parallel loop's axis.
 * Each knob takes its choice nearest in log2 to that value (orders,
 * packing, padding and the compiler their first choice). A reading, not an
 * inverse: the register tile, vectorization and parallel axis of a space's
 * own configuration read back exactly; middle tiles and reduction blocks
 * are a best effort where loops of extent 1 were left out. When that
 * configuration is not valid, the valid one fewest knob steps away is
 * taken (breadth-first, up to two steps).
 */
#include "space/space.h"

#include <math.h>
#include <string.h>

/* The choice of knob k nearest in log2 to `value` (values <= 0 compare as
 * themselves: none, off). */
static int nearest_choice(const rlt_knob *k, int64_t value)
{
    int best = 0;
    double best_d = INFINITY;
    for (int c = 0; c < k->n_choices; c++) {
        int64_t v = k->values[c];
        double d = v > 0 && value > 0 ? fabs(log2((double)v) - log2((double)value)) : (v == value ? 0 : 1e9);
        if (d < best_d) {
            best_d = d;
            best = c;
        }
    }
    return best;
}

/* The first loop of the register tile: inside the accumulator's loop, or
 * the innermost run of unrolled / vectorized loops. */
static int tile_start(const rlt_nest *n)
{
    if (n->acc_var == RLT_ACC_ROOT) return 0;
    if (n->acc_var >= 0) {
        int p = rlt_nest_loop_of_var(n, n->acc_var);
        if (p >= 0) return p + 1;
    }
    int l = n->n_loops;
    while (l > 0 && (n->loops[l - 1].kind == RLT_LOOP_UNROLL || n->loops[l - 1].kind == RLT_LOOP_VECTORIZE)) l--;
    return l;
}

/* The configuration the nest's schedule reads as (before validity). */
static void read_nest(const rlt_space *s, const rlt_nest *n, rlt_config *out)
{
    const rlt_op *op = s->op;
    int t0 = tile_start(n), first_red = n->n_loops;
    for (int l = 0; l < n->n_loops; l++)
        if (n->vars[n->loops[l].var].is_reduce) {
            first_red = l;
            break;
        }
    int64_t tile[RLT_MAX_AXES], mid[RLT_MAX_AXES], block[RLT_MAX_AXES];
    int n_red_loops[RLT_MAX_AXES] = {0}, vec_axis = -1, par_axis = -1;
    int64_t vec_width = 0, outer_red[RLT_MAX_AXES];
    int red_pos[RLT_MAX_AXES], n_outer[RLT_MAX_AXES] = {0};
    bool is_unrolled = false;
    for (int a = 0; a < op->n_axes; a++) tile[a] = mid[a] = block[a] = 1, outer_red[a] = 1;
    for (int l = 0; l < n->n_loops; l++) {
        const rlt_loop *loop = &n->loops[l];
        const rlt_var *v = &n->vars[loop->var];
        int a = rlt_nest_var_axis(n, loop->var);
        if (a < 0) continue;
        if (loop->kind == RLT_LOOP_VECTORIZE) {
            vec_axis = a;
            vec_width = v->extent;
        }
        if (loop->kind == RLT_LOOP_PARALLEL) par_axis = a;
        if (v->is_reduce) {
            if (n_red_loops[a]++ == 0) outer_red[a] = v->extent, red_pos[a] = l;
            block[a] *= v->extent;
        } else if (l >= t0) {
            tile[a] *= v->extent;
            is_unrolled |= loop->kind == RLT_LOOP_UNROLL;
        } else if (n_outer[a]++ > 0 || l > first_red) {
            mid[a] *= v->extent; /* not the axis's outermost loop, or inside a reduction loop */
        }
    }
    for (int a = 0; a < op->n_axes; a++) {
        if (n_red_loops[a] > 1) block[a] /= outer_red[a]; /* all but the outermost loop of the axis */
        if (n_red_loops[a] != 1) continue;
        /* One loop: the block when it sits among the tile's loops (r.1), a
         * block of one when middle-tile loops follow it (r.0 of L1). */
        for (int l = red_pos[a] + 1; l < t0; l++)
            if (!n->vars[n->loops[l].var].is_reduce) block[a] = 1;
    }
    if (vec_axis >= 0) tile[vec_axis] = tile[vec_axis] / vec_width > 0 ? tile[vec_axis] / vec_width : 1;

    memset(out, 0, sizeof *out);
    for (int k = 0; k < s->n_knobs; k++) {
        const rlt_knob *kn = &s->knobs[k];
        switch (kn->kind) {
        case RLT_KNOB_VEC: {
            int best = -1;
            double best_d = INFINITY;
            for (int c = 0; c < kn->n_choices; c++) {
                int64_t v = kn->values[c];
                double d = v < 0 ? (vec_axis < 0 ? 0 : 1e9)
                                 : v / 1000 == vec_axis ? fabs(log2((double)(v % 1000)) - log2((double)vec_width))
                                                        : 1e9;
                if (d < best_d) best_d = d, best = c;
            }
            out->choice[k] = (int16_t)(best < 0 ? 0 : best);
            break;
        }
        case RLT_KNOB_TILE: out->choice[k] = (int16_t)nearest_choice(kn, tile[kn->axis]); break;
        case RLT_KNOB_MID: out->choice[k] = (int16_t)nearest_choice(kn, mid[kn->axis]); break;
        case RLT_KNOB_RTILE: out->choice[k] = (int16_t)nearest_choice(kn, block[kn->axis]); break;
        case RLT_KNOB_UNROLL: out->choice[k] = (int16_t)nearest_choice(kn, is_unrolled ? 1 : 0); break;
        case RLT_KNOB_PARALLEL:
            for (int c = 0; c < kn->n_choices; c++)
                if (kn->values[c] == par_axis) out->choice[k] = (int16_t)c;
            break;
        default: out->choice[k] = 0; break;
        }
    }
}

rlt_status rlt_space_project(const rlt_space *s, const rlt_nest *nest, rlt_config *out, rlt_diag *diag)
{
    rlt_config c;
    read_nest(s, nest, &c);
    if (rlt_space_is_valid(s, &c)) {
        *out = c;
        return RLT_STATUS_OK;
    }
    /* breadth-first over one and two knob steps */
    for (int k = 0; k < s->n_knobs; k++)
        for (int d = -1; d <= 1; d += 2) {
            rlt_config n1;
            if (rlt_space_neighbour(s, &c, k, d, &n1) && rlt_space_is_valid(s, &n1)) {
                *out = n1;
                return RLT_STATUS_OK;
            }
        }
    for (int k = 0; k < s->n_knobs; k++)
        for (int d = -1; d <= 1; d += 2) {
            rlt_config n1;
            if (!rlt_space_neighbour(s, &c, k, d, &n1)) continue;
            for (int k2 = k + 1; k2 < s->n_knobs; k2++)
                for (int d2 = -1; d2 <= 1; d2 += 2) {
                    rlt_config n2;
                    if (rlt_space_neighbour(s, &n1, k2, d2, &n2) && rlt_space_is_valid(s, &n2)) {
                        *out = n2;
                        return RLT_STATUS_OK;
                    }
                }
        }
    return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                    "no valid configuration within two knob steps of the nest's reading");
}
