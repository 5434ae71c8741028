/*
 * seeds.c - rule-built configurations of a space (rlt_space_seeds): the
 * register tiles a simple load/FMA count rates highest, each with the
 * other knobs set the way a person writing the kernel by hand would set
 * them. A tuner measures them first, so that a run starts from schedules
 * in the right class instead of finding them by chance; they are not
 * claimed to be the best, and the search goes on from there.
 *
 * The rating of a register tile, for one vectorized axis of width W, is
 * the op's useful vector FMAs per unit of an estimated cost, the sum of:
 *   - the loads of every pass of the tile over the op (passes: the tiles
 *     that cover each spatial axis, idle tail iterations included, times
 *     the steps of the reduction axes that are not unrolled). A pass loads,
 *     for each input access and each reduction point the space unrolls
 *     inside the accumulator (a 3x3 window), the distinct addresses it
 *     reads over the tile (a vector counted at its first lane; nothing is
 *     kept across reduction points, the accumulators leave no registers
 *     for it): 1 for a vector load or a broadcast (an access that does not
 *     depend on the vectorized axis), 2 for a strided vector (rlt_lds2 /
 *     rlt_lds4), W for a vector gathered lane by lane - unless the tensor
 *     can be packed into panels along the vectorized axis, which the seed
 *     then does, at 1. Twice that when the panel the access streams over
 *     the whole reduction does not fit in the L1, and 1.5 times the whole
 *     when a tile does not divide its axis (guarded tails: measured on
 *     depthwise 3x3 at 112x112, tiles of 3, 6 or 12 rows ran at 40-70% of
 *     tiles of 4, 7 or 8);
 *   - a pack's copy, 1 per element, when it is timed (not a weight);
 *   - the output's stores, 1 per vector when the vectorized axis is its
 *     innermost dimension, else 1 per element.
 * The rating is rough: it does not see register pressure, cache lines or
 * what the compiler makes of a tile (conv2d 256x14x14: a 1 x 7 tile of
 * 8-channel vectors measured 62-70 GFLOP/s, 2 x 2 of 16 channels 49-51,
 * which it rates higher), so the seeds spread over tile shapes.
 * Tiles need at least half the accumulators the space allows (fewer cannot
 * hide the FMA latency), unless none do.
 *
 * The other knobs of a seed: middle tiles 1; reduction axes whole; the
 * spatial axes in the op's order, the reduction axes by decreasing extent
 * (reduction_order_choice); unrolling on; a tensor packed along the
 * vectorized axis when its vectors would otherwise be gathered; a tensor
 * that can be padded is padded when the op does at least SEED_PAD_FLOPS
 * flops per element of it (the copy is timed: worth it for a convolution,
 * not for a depthwise one); with threads, the first axis in order whose outer loop has at
 * least two iterations per thread parallel (else the one with the most);
 * gcc. A second kind of seed ("blocked") takes a top tile and blocks the
 * largest reduction axis that is not unrolled so that the tile's input
 * panels fit in half the L1 cache, takes middle tiles along the vectorized
 * axis so that the reduction block's panel of it fits in half the L2, and
 * packs every input the vectorized axis indexes: the GotoBLAS shape of a
 * matmul. The caches are this machine's (rlt_space's l1d_bytes and
 * l2_bytes: Linux's description of cpu0's caches; 32 KiB and 512 KiB where
 * it has none).
 */
#include "space/space.h"

#include <stdlib.h>
#include <string.h>

#define SEED_PAD_FLOPS 64.0        /* pad a tensor when the op does at least this many flops per element */
#define SEED_L2_COST 2.0           /* a load whose panel does not fit in L1 costs this many */
#define SEED_TAIL_COST 1.5         /* the loads of a tile that does not divide its axis (guarded tails) cost this */
#define SEED_MAX_POINTS 4096       /* addresses enumerated per load and tile */
#define SEED_MAX_CANDIDATES 4096   /* register tiles rated */

typedef struct seed_tile {
    rlt_config config; /* vec and tile knobs set, the rest at the seed rules */
    double rating;
    int vec_axis;
    int64_t accumulators;
    int64_t tile[RLT_MAX_AXES]; /* elements per axis */
    double panel_floats;        /* floats of input panels per step of the axes not unrolled */
} seed_tile;

static int find_knob(const rlt_space *s, rlt_knob_kind kind, int axis)
{
    for (int k = 0; k < s->n_knobs; k++)
        if (s->knobs[k].kind == kind && (axis < 0 || s->knobs[k].axis == axis)) return k;
    return -1;
}

static int choice_of_value(const rlt_knob *k, int64_t value)
{
    for (int i = 0; i < k->n_choices; i++)
        if (k->values[i] == value) return i;
    return -1;
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static int compare_rating(const void *a, const void *b)
{
    double x = ((const seed_tile *)a)->rating, y = ((const seed_tile *)b)->rating;
    return (x < y) - (x > y); /* highest first */
}

/* The order.r choice of the seeds: the reduction axes by decreasing
 * extent, ties in the op's order, so that the small axes are innermost and
 * the window the space unrolls covers them (conv2d's stem, 3 channels under
 * a 7x7 window: c innermost, 3 copies unrolled, measured 250 GFLOP/s where
 * the op's order c,r,s unrolls s, 7 copies, at 177). Returns the choice
 * index, 0 (the op's order) when the space has no such order. */
static int reduction_order_choice(const rlt_space *s)
{
    int k = find_knob(s, RLT_KNOB_ORDER_R, -1);
    if (k < 0) return 0;
    rlt_config c = {0};
    for (int i = 0; i < s->knobs[k].n_choices; i++) {
        c.choice[k] = (int16_t)i;
        int order[RLT_MAX_AXES], n = rlt_space_axis_order(s, &c, true, order);
        bool is_sorted = true;
        for (int j = 1; j < n && is_sorted; j++) {
            int64_t prev = s->op->axes[order[j - 1]].extent, cur = s->op->axes[order[j]].extent;
            is_sorted = prev > cur || (prev == cur && order[j - 1] < order[j]);
        }
        if (is_sorted) return i;
    }
    return 0;
}

/* The reduction axes the space unrolls inside the accumulator when every
 * reduction axis is whole and the order is the seeds': innermost first
 * while the copies stay at most RLT_SPACE_UNROLL_REDUCE_MAX. */
static void unrolled_reduction(const rlt_space *s, bool *is_unrolled)
{
    const rlt_op *op = s->op;
    rlt_config c = {0};
    int k = find_knob(s, RLT_KNOB_ORDER_R, -1);
    if (k >= 0) c.choice[k] = (int16_t)reduction_order_choice(s);
    int order[RLT_MAX_AXES], n = rlt_space_axis_order(s, &c, true, order);
    int64_t copies = 1;
    for (int a = 0; a < op->n_axes; a++) is_unrolled[a] = false;
    for (int i = n - 1; i >= 0; i--) {
        int a = order[i];
        if (copies * op->axes[a].extent > RLT_SPACE_UNROLL_REDUCE_MAX) break;
        copies *= op->axes[a].extent;
        is_unrolled[a] = true;
    }
}

typedef enum load_kind { LOAD_BROADCAST, LOAD_VECTOR, LOAD_STRIDED, LOAD_GATHER } load_kind;

/* How a load reads along the vectorized axis. */
static load_kind classify_load(const rlt_op *op, const rlt_expr *load, int vec_axis)
{
    if (vec_axis < 0) return LOAD_BROADCAST;
    const rlt_tensor *t = &op->tensors[load->tensor];
    int dim = -1;
    for (int d = 0; d < t->n_dims; d++)
        if (load->index[d].coef[vec_axis] != 0) {
            if (dim >= 0) return LOAD_GATHER;
            dim = d;
        }
    if (dim < 0) return LOAD_BROADCAST;
    int64_t c = load->index[dim].coef[vec_axis];
    if (dim != t->n_dims - 1) return LOAD_GATHER;
    if (c == 1) return LOAD_VECTOR;
    if (c == 2 || c == 4) return LOAD_STRIDED;
    return LOAD_GATHER;
}

/* Whether the space can pack tensor t into panels along axis a. */
static bool can_pack_along(const rlt_space *s, int t, int a)
{
    int k = find_knob(s, RLT_KNOB_PACK, t);
    return k >= 0 && a >= 0 && choice_of_value(&s->knobs[k], a) >= 0;
}

/* Distinct addresses `load` reads over the box (0 .. box[a] - 1 on each
 * axis, the vectorized axis in steps of `w`). */
static int64_t distinct_addresses(const rlt_op *op, const rlt_expr *load, const int64_t *box, int vec_axis,
                                  int64_t w, uint64_t *scratch)
{
    int64_t n = 1;
    for (int a = 0; a < op->n_axes; a++) n *= box[a];
    if (n > SEED_MAX_POINTS) return n; /* too many to enumerate: no reuse assumed */
    const rlt_tensor *t = &op->tensors[load->tensor];
    int64_t pos[RLT_MAX_AXES] = {0};
    for (int64_t i = 0; i < n; i++) {
        int64_t rest = i;
        for (int a = 0; a < op->n_axes; a++) {
            pos[a] = rest % box[a];
            rest /= box[a];
            if (a == vec_axis) pos[a] *= w;
        }
        uint64_t h = 1469598103934665603ull;
        for (int d = 0; d < t->n_dims; d++) {
            int64_t v = load->index[d].offset;
            for (int a = 0; a < op->n_axes; a++) v += load->index[d].coef[a] * pos[a];
            h = (h ^ (uint64_t)v) * 1099511628211ull;
        }
        scratch[i] = h;
    }
    qsort(scratch, (size_t)n, sizeof *scratch, compare_u64);
    int64_t distinct = 0;
    for (int64_t i = 0; i < n; i++) distinct += i == 0 || scratch[i] != scratch[i - 1];
    return distinct;
}

/* The rating of a register tile (`tile` in elements per axis; the file's
 * comment says how), and through *panel_floats the floats its input panels
 * take per step of the reduction axes that are not unrolled. */
static double rate_tile(const rlt_space *s, const int64_t *tile, int vec_axis, int64_t w, const bool *is_unrolled,
                        uint64_t *scratch, double *panel_floats)
{
    const rlt_op *op = s->op;
    int64_t box[RLT_MAX_AXES];    /* the tile; 1 on the reduction axes */
    int64_t window[RLT_MAX_AXES]; /* the tile and the unrolled reduction points */
    double passes = 1;         /* register-tile passes over the whole op, idle tail iterations included */
    double tails = 1, unrolled_points = 1, steps = 1;
    for (int a = 0; a < op->n_axes; a++) {
        int64_t e = op->axes[a].extent;
        if (a < op->n_spatial) {
            box[a] = window[a] = a == vec_axis ? tile[a] / w : tile[a];
            passes *= (double)((e + tile[a] - 1) / tile[a]);
            if (e % tile[a] != 0) tails *= SEED_TAIL_COST;
        } else {
            box[a] = 1;
            window[a] = is_unrolled[a] ? e : 1;
            if (is_unrolled[a]) unrolled_points *= (double)e;
            else steps *= (double)e;
        }
    }
    passes *= steps;
    const rlt_expr *loads[128];
    int n_loads = rlt_op_loads(op, loads, 128);
    double cost = 0, floats = 0, copies = 0;
    for (int i = 0; i < n_loads; i++) {
        const rlt_expr *l = loads[i];
        const rlt_tensor *t = &op->tensors[l->tensor];
        if (t->is_output) continue;
        bool seen = false; /* the same access twice is one load after CSE */
        for (int j = 0; j < i && !seen; j++)
            seen = loads[j]->tensor == l->tensor && memcmp(loads[j]->index, l->index, sizeof l->index) == 0;
        if (seen) continue;
        load_kind kind = classify_load(op, l, vec_axis);
        if (kind == LOAD_GATHER && can_pack_along(s, l->tensor, vec_axis)) {
            kind = LOAD_VECTOR;
            if (!t->is_weight) copies += (double)rlt_op_tensor_size(op, l->tensor); /* a timed transposing copy */
        }
        /* loaded once per reduction point (the accumulators leave no
         * registers to keep loads across them); the panel it streams is
         * what the tile and the unrolled points read together */
        double n = (double)distinct_addresses(op, l, box, vec_axis, w, scratch) * unrolled_points;
        double unit = kind == LOAD_STRIDED ? 2 : kind == LOAD_GATHER ? (double)w : 1;
        double step_floats = (double)distinct_addresses(op, l, window, vec_axis, w, scratch) *
                             (kind == LOAD_BROADCAST ? 1 : (double)w);
        if (step_floats * steps * 4 > (double)s->l1d_bytes) unit *= SEED_L2_COST; /* its panel streams from L2 */
        cost += n * unit;
        floats += step_floats;
    }
    /* The output (indexed by the spatial axes in order): each element
     * written once, by vector stores when the vectorized axis is its
     * innermost dimension, else lane by lane. */
    bool is_contiguous = vec_axis < 0 || vec_axis == op->n_spatial - 1;
    double stores = (double)rlt_op_tensor_size(op, op->n_tensors - 1) / (is_contiguous ? (double)w : 1.0);
    *panel_floats = floats;
    double total = cost * passes * tails + copies + stores;
    return total > 0 ? op->flops / 2 / (double)w / total : 0; /* useful vector FMAs per unit of cost */
}

/* Sets the knobs a seed takes by rule (all but vec and the tiles). */
static void apply_rules(const rlt_space *s, const int64_t *tile, int vec_axis, rlt_config *c)
{
    const rlt_op *op = s->op;
    for (int k = 0; k < s->n_knobs; k++) {
        const rlt_knob *kn = &s->knobs[k];
        switch (kn->kind) {
        case RLT_KNOB_MID: c->choice[k] = 0; break;
        case RLT_KNOB_RTILE: c->choice[k] = (int16_t)(kn->n_choices - 1); break;
        case RLT_KNOB_ORDER_S: c->choice[k] = 0; break;
        case RLT_KNOB_ORDER_R: c->choice[k] = (int16_t)reduction_order_choice(s); break;
        case RLT_KNOB_UNROLL: c->choice[k] = (int16_t)RLT_MAX(choice_of_value(kn, 1), 0); break;
        case RLT_KNOB_PACK: {
            const rlt_expr *loads[128];
            int n_loads = rlt_op_loads(op, loads, 128);
            bool gathered = false;
            for (int i = 0; i < n_loads; i++)
                gathered |= loads[i]->tensor == kn->axis && classify_load(op, loads[i], vec_axis) == LOAD_GATHER;
            int pick = gathered && vec_axis >= 0 ? choice_of_value(kn, vec_axis) : -1;
            c->choice[k] = (int16_t)(pick >= 0 ? pick : choice_of_value(kn, -1));
            break;
        }
        case RLT_KNOB_PAD: {
            double per_element = op->flops / (double)rlt_op_tensor_size(op, kn->axis);
            c->choice[k] = (int16_t)(per_element >= SEED_PAD_FLOPS ? 1 : 0);
            break;
        }
        case RLT_KNOB_PARALLEL: {
            int pick = -1;
            int64_t most = 1;
            for (int a = 0; a < op->n_spatial && s->n_threads > 1; a++) {
                if (choice_of_value(kn, a) < 0) continue;
                int64_t outer = (op->axes[a].extent + tile[a] - 1) / tile[a];
                if (outer >= 2 * (int64_t)s->n_threads) {
                    pick = a;
                    break;
                }
                if (outer > most) {
                    most = outer;
                    pick = a;
                }
            }
            c->choice[k] = (int16_t)choice_of_value(kn, pick);
            break;
        }
        case RLT_KNOB_CC: c->choice[k] = 0; break;
        case RLT_KNOB_VEC:
        case RLT_KNOB_TILE: break;
        }
    }
}

/* The blocked variant of a seed (the file's comment says which knobs). */
static bool block_seed(const rlt_space *s, const seed_tile *t, const bool *is_unrolled, rlt_config *out)
{
    const rlt_op *op = s->op;
    const int64_t *tile = t->tile;
    double panel_floats = t->panel_floats;
    *out = t->config;
    int red = -1;
    for (int a = op->n_spatial; a < op->n_axes; a++)
        if (!is_unrolled[a] && op->axes[a].extent > 1 && (red < 0 || op->axes[a].extent > op->axes[red].extent))
            red = a;
    int rk = red >= 0 ? find_knob(s, RLT_KNOB_RTILE, red) : -1;
    if (rk < 0 || panel_floats <= 0) return false;
    int64_t block = (int64_t)((double)s->l1d_bytes / 2 / (4.0 * panel_floats)); /* panels in half the L1 */
    const rlt_knob *kn = &s->knobs[rk];
    int pick = -1;
    for (int i = 0; i < kn->n_choices; i++)
        if (kn->values[i] <= block && kn->values[i] < op->axes[red].extent) pick = i;
    if (pick < 0) return false;
    out->choice[rk] = (int16_t)pick;
    int v = t->vec_axis, mk = v >= 0 ? find_knob(s, RLT_KNOB_MID, v) : -1;
    if (mk >= 0) {
        const rlt_knob *m = &s->knobs[mk];
        int64_t panel_bytes = 4 * kn->values[pick] * tile[v];
        for (int i = 0; i < m->n_choices; i++) {
            if (m->values[i] * panel_bytes > s->l2_bytes / 2) break; /* in half the L2 */
            if (i > 0 && m->values[i - 1] * tile[v] >= op->axes[v].extent) break; /* redundant */
            out->choice[mk] = (int16_t)i;
        }
    }
    for (int k = 0; k < s->n_knobs; k++)
        if (s->knobs[k].kind == RLT_KNOB_PACK && v >= 0) {
            int pv = choice_of_value(&s->knobs[k], v);
            if (pv >= 0) out->choice[k] = (int16_t)pv;
        }
    return true;
}

/* Rates every register tile of vectorized choice `vc` (knob choice index,
 * -1 when the space has no vec knob) and appends the candidates. */
static void rate_tiles_of(const rlt_space *s, int vec_knob, int vc, int vec_axis, int64_t w, const bool *is_unrolled,
                          uint64_t *scratch, seed_tile *cands, int *n_cands, int min_acc)
{
    const rlt_op *op = s->op;
    int tk[RLT_MAX_AXES], n_tk = 0;
    for (int a = 0; a < op->n_spatial; a++) {
        int k = find_knob(s, RLT_KNOB_TILE, a);
        if (k >= 0) tk[n_tk++] = k;
    }
    int idx[RLT_MAX_AXES] = {0};
    for (;;) {
        int64_t tile[RLT_MAX_AXES];
        for (int a = 0; a < op->n_axes; a++) tile[a] = 1;
        bool ok = true;
        int64_t acc = 1;
        for (int i = 0; i < n_tk && ok; i++) {
            const rlt_knob *kn = &s->knobs[tk[i]];
            int a = kn->axis;
            int64_t unit = a == vec_axis ? w : 1, e = op->axes[a].extent;
            tile[a] = kn->values[idx[i]] * unit;
            /* the last vector may end past the axis (space.h) */
            ok = tile[a] - e < unit && !(idx[i] > 0 && kn->values[idx[i] - 1] * unit >= e);
            acc *= kn->values[idx[i]];
        }
        if (vec_axis >= 0 && find_knob(s, RLT_KNOB_TILE, vec_axis) < 0) tile[vec_axis] = w;
        if (ok && acc <= s->max_accumulators && acc >= min_acc && *n_cands < SEED_MAX_CANDIDATES) {
            seed_tile *c = &cands[*n_cands];
            memset(&c->config, 0, sizeof c->config);
            if (vec_knob >= 0) c->config.choice[vec_knob] = (int16_t)vc;
            for (int i = 0; i < n_tk; i++) c->config.choice[tk[i]] = (int16_t)idx[i];
            apply_rules(s, tile, vec_axis, &c->config);
            c->rating = rate_tile(s, tile, vec_axis, w, is_unrolled, scratch, &c->panel_floats);
            c->vec_axis = vec_axis;
            c->accumulators = acc;
            memcpy(c->tile, tile, sizeof c->tile);
            if (rlt_space_is_valid(s, &c->config)) (*n_cands)++;
        }
        int i = 0;
        while (i < n_tk && ++idx[i] >= s->knobs[tk[i]].n_choices) idx[i++] = 0;
        if (i == n_tk) break;
    }
}

static bool add_seed(const rlt_space *s, const rlt_config *c, rlt_config *out, int *n, int max)
{
    if (*n >= max || !rlt_space_is_valid(s, c)) return false;
    uint64_t index = rlt_space_index_of(s, c);
    for (int i = 0; i < *n; i++)
        if (rlt_space_index_of(s, &out[i]) == index) return false;
    out[(*n)++] = *c;
    return true;
}

int rlt_space_seeds(const rlt_space *s, int max, rlt_config *out)
{
    if (max <= 0) return 0;
    bool is_unrolled[RLT_MAX_AXES];
    unrolled_reduction(s, is_unrolled);
    seed_tile *cands = rlt_malloc(sizeof *cands * SEED_MAX_CANDIDATES);
    uint64_t *scratch = rlt_malloc(sizeof *scratch * SEED_MAX_POINTS);
    if (!cands || !scratch) {
        rlt_free(cands);
        rlt_free(scratch);
        return 0;
    }
    /* Vectorized at the full width the space offers (half width only where
     * no axis takes the full one); no vectorization only when it offers none. */
    int vk = find_knob(s, RLT_KNOB_VEC, -1);
    int64_t widest = 1;
    for (int i = 0; vk >= 0 && i < s->knobs[vk].n_choices; i++)
        if (s->knobs[vk].values[i] >= 0) widest = RLT_MAX(widest, s->knobs[vk].values[i] % 1000);
    int n_cands = 0;
    for (int min_acc = RLT_MAX(s->max_accumulators / 2, 1); n_cands == 0; min_acc = 1) {
        if (vk < 0) rate_tiles_of(s, -1, 0, -1, 1, is_unrolled, scratch, cands, &n_cands, min_acc);
        for (int i = 0; vk >= 0 && i < s->knobs[vk].n_choices; i++) {
            int64_t v = s->knobs[vk].values[i];
            if ((v < 0 && widest > 1) || (v >= 0 && v % 1000 != widest)) continue;
            rate_tiles_of(s, vk, i, v < 0 ? -1 : (int)(v / 1000), v < 0 ? 1 : v % 1000, is_unrolled, scratch, cands,
                          &n_cands, min_acc);
        }
        if (min_acc == 1) break;
    }
    qsort(cands, (size_t)n_cands, sizeof *cands, compare_rating);
    /* The best tile of each vectorized axis first (when it rates at least
     * half the best), then the best of each accumulator count of each
     * vectorized axis, then by rating: the rating is rough, so the seeds
     * spread over tile shapes. The last quarter are blocked variants of the
     * top tiles, where blocking applies. */
    int n = 0, n_plain = max - max / 4;
    bool axis_done[RLT_MAX_AXES + 1] = {false};
    for (int i = 0; i < n_cands && n < n_plain; i++) {
        int slot = cands[i].vec_axis + 1;
        if (axis_done[slot] || cands[i].rating < 0.5 * cands[0].rating) continue;
        axis_done[slot] = true;
        add_seed(s, &cands[i].config, out, &n, n_plain);
    }
    for (int i = 0; i < n_cands && n < n_plain; i++) {
        bool is_first = cands[i].rating >= 0.5 * cands[0].rating;
        for (int j = 0; j < i && is_first; j++)
            is_first = cands[j].vec_axis != cands[i].vec_axis || cands[j].accumulators != cands[i].accumulators;
        if (is_first) add_seed(s, &cands[i].config, out, &n, n_plain);
    }
    for (int i = 0; i < n_cands && n < n_plain; i++) add_seed(s, &cands[i].config, out, &n, n_plain);
    for (int i = 0; i < n_cands && n < max; i++) {
        rlt_config blocked;
        if (block_seed(s, &cands[i], is_unrolled, &blocked)) add_seed(s, &blocked, out, &n, max);
    }
    /* Where nothing blocks, plain tiles fill the rest. */
    for (int i = 0; i < n_cands && n < max; i++) add_seed(s, &cands[i].config, out, &n, max);
    rlt_free(cands);
    rlt_free(scratch);
    return n;
}
