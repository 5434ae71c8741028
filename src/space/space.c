/*
 * space.c - the multi-level tiling space of an op (space.h says the rule):
 * knobs derived from the op's axes and tensors, configuration <-> index,
 * neighbours, validity, configuration keys, the schedule a configuration
 * stands for (rlt_space_schedule), and the restriction of a space to a
 * subset of its configurations (rlt_space_restrict, for replays).
 *
 * Knob values, by kind:
 *   VEC       -1 for none, else axis * 1000 + width
 *   TILE      the register tile in units (vectors on the vectorized axis)
 *   MID       the middle tile in register tiles
 *   RTILE     the inner block of a reduction axis
 *   ORDER_*   the rank of a permutation of the axes (see perm_of)
 *   UNROLL    0 / 1
 *   PACK      -1 for off, else the spatial axis the panels follow
 *   PAD       0 / 1
 *   PARALLEL  -1 for none, else the spatial axis
 *   CC        0 gcc, 1 clang
 */
#include "space/space.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ---- building the knobs ------------------------------------------------- */

static rlt_status add_knob(rlt_space *s, rlt_knob_kind kind, int axis, const char *name, int n,
                           const int64_t *values, rlt_diag *diag)
{
    if (n <= 1) return RLT_STATUS_OK; /* one choice is no choice */
    if (s->n_knobs >= RLT_SPACE_MAX_KNOBS)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "the op has too many knobs for a search space (at most %d)",
                        RLT_SPACE_MAX_KNOBS);
    size_t len = strlen(name);
    if (len >= sizeof s->knobs[0].name)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "knob name '%s' too long (at most %zu characters)", name,
                        sizeof s->knobs[0].name - 1);
    rlt_knob *k = &s->knobs[s->n_knobs++];
    memset(k, 0, sizeof *k);
    memcpy(k->name, name, len + 1);
    k->kind = kind;
    k->axis = axis;
    k->n_choices = n < RLT_SPACE_MAX_CHOICES ? n : RLT_SPACE_MAX_CHOICES;
    memcpy(k->values, values, sizeof(int64_t) * (size_t)k->n_choices);
    return RLT_STATUS_OK;
}

static int n_nontrivial(const rlt_op *op, bool is_reduce, int *axes)
{
    int n = 0;
    for (int a = 0; a < op->n_axes; a++)
        if (op->axes[a].is_reduce == is_reduce && op->axes[a].extent > 1) axes[n++] = a;
    return n;
}

static int64_t factorial(int n)
{
    int64_t f = 1;
    for (int i = 2; i <= n; i++) f *= i;
    return f;
}

/* The permutation of rank `rank` of n items (factorial number system):
 * rank 0 is the identity. */
static void perm_of(int64_t rank, int n, int *perm)
{
    int items[RLT_MAX_AXES];
    for (int i = 0; i < n; i++) items[i] = i;
    for (int i = 0; i < n; i++) {
        int64_t f = factorial(n - 1 - i);
        int pick = (int)(rank / f);
        rank %= f;
        perm[i] = items[pick];
        memmove(&items[pick], &items[pick + 1], sizeof(int) * (size_t)(n - 1 - i - pick));
    }
}

/* Permutations offered for n axes: all of them up to 4 axes (24), the n
 * rotations beyond (the search would drown in 5! orders). */
static int order_choices(int n, int64_t *values)
{
    if (n <= 4) {
        int64_t f = factorial(n);
        for (int64_t i = 0; i < f; i++) values[i] = i;
        return (int)f;
    }
    /* rotation r of (0..n-1) as a permutation rank */
    for (int r = 0; r < n; r++) {
        int perm[RLT_MAX_AXES];
        for (int i = 0; i < n; i++) perm[i] = (i + r) % n;
        int64_t rank = 0;
        bool used[RLT_MAX_AXES] = {false};
        for (int i = 0; i < n; i++) {
            int smaller = 0;
            for (int j = 0; j < perm[i]; j++) smaller += !used[j];
            rank += smaller * factorial(n - 1 - i);
            used[perm[i]] = true;
        }
        values[r] = rank;
    }
    return n;
}

/* The dim of tensor t that axis `axis` alone indexes in every load of t,
 * or -1. Packing follows such a dim. */
static int dim_indexed_by(const rlt_op *op, int t, int axis)
{
    const rlt_expr *loads[128];
    int n = rlt_op_loads(op, loads, 128), found = -1;
    for (int i = 0; i < n; i++) {
        if (loads[i]->tensor != t) continue;
        int here = rlt_load_dim_of_axis(op, loads[i], axis);
        if (here < 0 || (found >= 0 && found != here)) return -1;
        found = here;
    }
    return found;
}

/* Whether `clang --version` runs and succeeds. Spawned and waited for
 * here rather than through system(), which blocks SIGINT while it waits
 * and would lose a Ctrl-C that arrives meanwhile. */
static bool clang_is_installed(void)
{
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0) return false;
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    char *const argv[] = {"clang", "--version", NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, "clang", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return false;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return false;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static int detect_vector_floats(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return 16;
    if (__builtin_cpu_supports("avx")) return 8;
    return 4;
}

/* The size of this machine's cache of `level` that holds data (a data or
 * unified cache) as Linux describes cpu0's, in bytes; 0 when unknown. */
static int64_t detect_cache_bytes(int level)
{
    for (int i = 0; i < 8; i++) {
        char path[96], text[32] = "";
        int64_t found_level = 0, size = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        FILE *f = fopen(path, "r");
        if (!f) break;
        if (fscanf(f, "%" SCNd64, &found_level) != 1) found_level = 0;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        if ((f = fopen(path, "r"))) {
            if (fscanf(f, "%31s", text) != 1) text[0] = '\0';
            fclose(f);
        }
        if (found_level != level || strcmp(text, "Instruction") == 0) continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if ((f = fopen(path, "r"))) {
            char unit = 'B';
            int got = fscanf(f, "%" SCNd64 "%c", &size, &unit);
            fclose(f);
            if (got < 1 || size <= 0) return 0;
            return unit == 'K' ? size << 10 : unit == 'M' ? size << 20 : size;
        }
    }
    return 0;
}

rlt_status rlt_space_create(const rlt_op *op, const rlt_space_opts *opts, rlt_space *s, rlt_diag *diag)
{
    rlt_space_opts o = opts ? *opts : (rlt_space_opts){0};
    memset(s, 0, sizeof *s);
    s->op = op;
    s->n_threads = o.n_threads > 0 ? o.n_threads : 1;
    int vf = o.vector_floats > 0 ? o.vector_floats : detect_vector_floats();
    /* 16 vector registers with AVX2, 32 with AVX-512, and the inner step
     * needs a few beside the accumulators (the broadcast, the loaded
     * vectors). Measured on AVX2 (matmul 128^3 and 256^3, 895 configurations
     * of the search-efficiency runs): the best tile of 12 accumulators ran at
     * 89 GFLOP/s, every tile of 14 to 32 at 54 or less. Larger tiles spill
     * on every step and only make the generated code (and its compile
     * time) grow. */
    s->max_accumulators = (vf >= 16 ? 32 : 16) - 4;
    s->l1d_bytes = o.l1d_bytes > 0 ? o.l1d_bytes : detect_cache_bytes(1);
    s->l2_bytes = o.l2_bytes > 0 ? o.l2_bytes : detect_cache_bytes(2);
    if (s->l1d_bytes <= 0) s->l1d_bytes = 32 << 10;
    if (s->l2_bytes <= 0) s->l2_bytes = 512 << 10;
    int64_t v[RLT_SPACE_MAX_CHOICES];
    int n;
    rlt_status st = RLT_STATUS_OK;
    char name[RLT_LOOP_NAME_MAX + 16];

    /* vec: none, or a spatial axis at half and full vector width; then the
     * widths wider than their axis but less than twice it (a row of 14 in
     * one masked vector of 16: the lanes past the axis are neither read nor
     * written). Those come last so that adding them left the other choices'
     * positions, and the order of configurations, as they were. */
    n = 0;
    v[n++] = -1;
    for (int wide = 0; wide <= 1; wide++)
        for (int a = 0; a < op->n_spatial; a++)
            for (int w = vf / 2; w <= vf; w *= 2) {
                int64_t e = op->axes[a].extent;
                bool fits = wide ? e < w && 2 * e > w : e >= w;
                if (w >= 2 && fits && n < RLT_SPACE_MAX_CHOICES) v[n++] = (int64_t)a * 1000 + w;
            }
    if ((st = add_knob(s, RLT_KNOB_VEC, -1, "vec", n, v, diag))) return st;

    static const int64_t tiles[] = {1, 2, 3, 4, 5, 6, 7, 8, 12, 16};
    static const int64_t mids[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};
    for (int a = 0; a < op->n_spatial; a++) {
        int64_t e = op->axes[a].extent;
        if (e <= 1) continue;
        /* Tiles are counted in vectors on the vectorized axis, so the
         * choices stop where even one unit of the smallest width would
         * overrun the axis: `unit` is 1 here and checked per config. */
        n = 0;
        for (size_t i = 0; i < RLT_ARRAY_LEN(tiles); i++)
            if (tiles[i] <= e) v[n++] = tiles[i];
        snprintf(name, sizeof name, "%s.tile", op->axes[a].name);
        if ((st = add_knob(s, RLT_KNOB_TILE, a, name, n, v, diag))) return st;
        n = 0;
        for (size_t i = 0; i < RLT_ARRAY_LEN(mids); i++)
            if (mids[i] <= e) v[n++] = mids[i];
        snprintf(name, sizeof name, "%s.mid", op->axes[a].name);
        if ((st = add_knob(s, RLT_KNOB_MID, a, name, n, v, diag))) return st;
    }
    for (int a = op->n_spatial; a < op->n_axes; a++) {
        int64_t e = op->axes[a].extent;
        if (e <= 1) continue;
        n = 0;
        for (int64_t f = 1; f < e && n < RLT_SPACE_MAX_CHOICES - 1; f *= 2) v[n++] = f;
        v[n++] = e;
        snprintf(name, sizeof name, "%s.tile", op->axes[a].name);
        if ((st = add_knob(s, RLT_KNOB_RTILE, a, name, n, v, diag))) return st;
    }
    int axes[RLT_MAX_AXES];
    n = order_choices(n_nontrivial(op, false, axes), v);
    if ((st = add_knob(s, RLT_KNOB_ORDER_S, -1, "order.s", n, v, diag))) return st;
    n = order_choices(n_nontrivial(op, true, axes), v);
    if ((st = add_knob(s, RLT_KNOB_ORDER_R, -1, "order.r", n, v, diag))) return st;
    int64_t on_off[] = {0, 1};
    if ((st = add_knob(s, RLT_KNOB_UNROLL, -1, "unroll", 2, on_off, diag))) return st;

    for (int t = 0; t + 1 < op->n_tensors; t++) {
        n = 0;
        v[n++] = -1;
        for (int a = 0; a < op->n_spatial; a++)
            if (op->axes[a].extent > 1 && dim_indexed_by(op, t, a) >= 0) v[n++] = a;
        snprintf(name, sizeof name, "pack.%s", op->tensors[t].name);
        if ((st = add_knob(s, RLT_KNOB_PACK, t, name, n, v, diag))) return st;
    }
    for (int t = 0; t + 1 < op->n_tensors; t++) {
        bool may_overrun = false;
        const rlt_expr *loads[128];
        int n_loads = rlt_op_loads(op, loads, 128);
        for (int i = 0; i < n_loads; i++)
            if (loads[i]->tensor == t) may_overrun |= rlt_load_may_be_out_of_bounds(op, loads[i]);
        if (!may_overrun) continue;
        snprintf(name, sizeof name, "pad.%s", op->tensors[t].name);
        if ((st = add_knob(s, RLT_KNOB_PAD, t, name, 2, on_off, diag))) return st;
    }
    if (s->n_threads > 1) {
        n = 0;
        v[n++] = -1;
        for (int a = 0; a < op->n_spatial; a++)
            if (op->axes[a].extent > 1) v[n++] = a;
        if ((st = add_knob(s, RLT_KNOB_PARALLEL, -1, "parallel", n, v, diag))) return st;
    }
    if (!o.no_clang && (o.has_clang || clang_is_installed())) {
        if ((st = add_knob(s, RLT_KNOB_CC, -1, "cc", 2, on_off, diag))) return st;
    }
    return RLT_STATUS_OK;
}

/* ---- configurations ----------------------------------------------------- */

/* The restriction to a subset (space.h): members by unrestricted index,
 * ascending, and an open-addressing map from unrestricted index to
 * position. `shape` fingerprints the knobs it was made for. */
struct rlt_space_subset {
    int n;
    uint64_t *index;   /* n, ascending */
    uint64_t *slots;   /* cap; SUBSET_EMPTY = empty */
    int *slot_pos;     /* cap */
    size_t cap;        /* a power of two, at least 2n */
    uint64_t shape;
};

#define SUBSET_EMPTY UINT64_MAX

static uint64_t space_shape(const rlt_space *s)
{
    uint64_t h = (uint64_t)s->n_knobs;
    for (int k = 0; k < s->n_knobs; k++) h = rlt_hash_bytes(h, &s->knobs[k].n_choices, sizeof(int));
    return h;
}

static uint64_t subset_mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

/* Position of unrestricted index `full` among the members, or -1. */
static int subset_find(const rlt_space_subset *sub, uint64_t full)
{
    for (size_t i = subset_mix(full) & (sub->cap - 1);; i = (i + 1) & (sub->cap - 1)) {
        if (sub->slots[i] == full) return sub->slot_pos[i];
        if (sub->slots[i] == SUBSET_EMPTY) return -1;
    }
}

static uint64_t full_size(const rlt_space *s)
{
    uint64_t size = 1;
    for (int k = 0; k < s->n_knobs; k++) {
        uint64_t c = (uint64_t)s->knobs[k].n_choices;
        if (size > UINT64_MAX / c) return UINT64_MAX;
        size *= c;
    }
    return size;
}

static void full_config_of(const rlt_space *s, uint64_t index, rlt_config *out)
{
    memset(out, 0, sizeof *out);
    for (int k = 0; k < s->n_knobs; k++) {
        uint64_t c = (uint64_t)s->knobs[k].n_choices;
        out->choice[k] = (int16_t)(index % c);
        index /= c;
    }
}

static uint64_t full_index_of(const rlt_space *s, const rlt_config *c)
{
    uint64_t index = 0;
    for (int k = s->n_knobs - 1; k >= 0; k--) index = index * (uint64_t)s->knobs[k].n_choices + (uint64_t)c->choice[k];
    return index;
}

uint64_t rlt_space_size(const rlt_space *s)
{
    return s->subset ? (uint64_t)s->subset->n : full_size(s);
}

void rlt_space_config_of(const rlt_space *s, uint64_t index, rlt_config *out)
{
    const rlt_space_subset *sub = s->subset;
    if (!sub) full_config_of(s, index, out);
    else if (index < (uint64_t)sub->n) full_config_of(s, sub->index[index], out);
    else full_config_of(s, index - (uint64_t)sub->n, out);
}

uint64_t rlt_space_index_of(const rlt_space *s, const rlt_config *c)
{
    uint64_t full = full_index_of(s, c);
    const rlt_space_subset *sub = s->subset;
    if (!sub) return full;
    int pos = subset_find(sub, full);
    if (pos >= 0) return (uint64_t)pos;
    uint64_t n = (uint64_t)sub->n;
    return full < UINT64_MAX - 1 - n ? n + full : UINT64_MAX - 1;
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

rlt_status rlt_space_subset_create(const rlt_space *s, int n, const rlt_config *configs, rlt_space_subset **out,
                                   rlt_diag *diag)
{
    RLT_ASSERT(s && n >= 0 && (n == 0 || configs) && out);
    *out = NULL;
    if (s->subset)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "a subset is made from an unrestricted space");
    for (int i = 0; i < n; i++)
        for (int k = 0; k < s->n_knobs; k++)
            if (configs[i].choice[k] < 0 || configs[i].choice[k] >= s->knobs[k].n_choices)
                return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                                "configuration %d of a subset: choice %d of knob %s is out of its range 0..%d", i,
                                configs[i].choice[k], s->knobs[k].name, s->knobs[k].n_choices - 1);
    rlt_space_subset *sub = rlt_calloc(1, sizeof *sub);
    size_t cap = 16;
    while (cap < 2 * (size_t)n) cap *= 2;
    if (sub) {
        sub->index = rlt_calloc((size_t)(n > 0 ? n : 1), sizeof *sub->index);
        sub->slots = rlt_malloc(cap * sizeof *sub->slots);
        sub->slot_pos = rlt_calloc(cap, sizeof *sub->slot_pos);
    }
    if (!sub || !sub->index || !sub->slots || !sub->slot_pos) {
        rlt_space_subset_destroy(sub);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory restricting a space to %d configurations", n);
    }
    sub->cap = cap;
    sub->shape = space_shape(s);
    for (size_t i = 0; i < cap; i++) sub->slots[i] = SUBSET_EMPTY;
    for (int i = 0; i < n; i++) sub->index[i] = full_index_of(s, &configs[i]);
    qsort(sub->index, (size_t)n, sizeof *sub->index, compare_u64);
    for (int i = 0; i < n; i++) {
        if (sub->n > 0 && sub->index[sub->n - 1] == sub->index[i]) continue;
        uint64_t full = sub->index[i];
        sub->index[sub->n] = full;
        size_t j = subset_mix(full) & (cap - 1);
        while (sub->slots[j] != SUBSET_EMPTY) j = (j + 1) & (cap - 1);
        sub->slots[j] = full;
        sub->slot_pos[j] = sub->n++;
    }
    *out = sub;
    return RLT_STATUS_OK;
}

void rlt_space_subset_destroy(rlt_space_subset *sub)
{
    if (!sub) return;
    rlt_free(sub->index);
    rlt_free(sub->slots);
    rlt_free(sub->slot_pos);
    rlt_free(sub);
}

int rlt_space_subset_size(const rlt_space_subset *sub) { return sub->n; }

void rlt_space_restrict(rlt_space *s, const rlt_space_subset *sub)
{
    s->subset = NULL;
    RLT_ASSERT(!sub || sub->shape == space_shape(s)); /* a subset of another space */
    s->subset = sub;
}

bool rlt_space_neighbour(const rlt_space *s, const rlt_config *c, int knob, int delta, rlt_config *out)
{
    if (knob < 0 || knob >= s->n_knobs) return false;
    int next = c->choice[knob] + delta;
    if (next < 0 || next >= s->knobs[knob].n_choices) return false;
    *out = *c;
    out->choice[knob] = (int16_t)next;
    return true;
}

void rlt_space_random(const rlt_space *s, rlt_rng *rng, rlt_config *out)
{
    if (s->subset && s->subset->n > 0) {
        full_config_of(s, s->subset->index[rlt_rng_below(rng, (uint64_t)s->subset->n)], out);
        return;
    }
    memset(out, 0, sizeof *out);
    for (int k = 0; k < s->n_knobs; k++)
        out->choice[k] = (int16_t)rlt_rng_below(rng, (uint64_t)s->knobs[k].n_choices);
}

/* The value a configuration gives knob kind `kind` (for `axis`), or `dflt`
 * when the space has no such knob. */
static int64_t knob_value(const rlt_space *s, const rlt_config *c, rlt_knob_kind kind, int axis, int64_t dflt,
                          int *out_knob)
{
    for (int k = 0; k < s->n_knobs; k++)
        if (s->knobs[k].kind == kind && s->knobs[k].axis == axis) {
            if (out_knob) *out_knob = k;
            return s->knobs[k].values[c->choice[k]];
        }
    if (out_knob) *out_knob = -1;
    return dflt;
}

int rlt_space_axis_order(const rlt_space *s, const rlt_config *c, bool is_reduce, int *out)
{
    int axes[RLT_MAX_AXES], perm[RLT_MAX_AXES];
    int n = n_nontrivial(s->op, is_reduce, axes);
    perm_of(knob_value(s, c, is_reduce ? RLT_KNOB_ORDER_R : RLT_KNOB_ORDER_S, -1, 0, NULL), n, perm);
    for (int i = 0; i < n; i++) out[i] = axes[perm[i]];
    return n;
}

/* ---- the schedule of a configuration ------------------------------------ */

typedef struct plan_loops {
    char names[RLT_MAX_LOOPS][RLT_LOOP_NAME_MAX];
    int n;
} plan_loops;

static void push(plan_loops *p, const char *name)
{
    if (p->n < RLT_MAX_LOOPS) snprintf(p->names[p->n++], RLT_LOOP_NAME_MAX, "%.*s", RLT_LOOP_NAME_MAX - 1, name);
}

/* A middle tile or register tile past the end of its axis repeats a smaller
 * choice (the same loops with more idle iterations): such configurations
 * are refused so that every valid configuration is a distinct schedule. */
static bool is_redundant_choice(const rlt_knob *k, int choice, int64_t unit, int64_t extent)
{
    return choice > 0 && k->values[choice - 1] * unit >= extent;
}

/* Whether reduction axis r moves a window along the vector's stride-2 reads:
 * an input's last dim read as 2 * v + c * r + ... (vector axis v of 16 lanes,
 * 0 < c, the window's taps c * r at most 31 floats apart), r in no other dim
 * of that input. Such taps read one window of the row, which codegen loads
 * once for all of them (rlt_ldw2_16, codegen/lower_load.c). Depthwise 3x3 stride 2,
 * 144 channels at 56x56: 65 -> 87 GFLOP/s with the column loop inside a 2 x
 * 2-vector tile. */
static bool is_window_axis(const rlt_op *op, int v, int64_t vec_w, int r)
{
    const rlt_expr *loads[RLT_MAX_TENSORS * 4];
    int n = rlt_op_loads(op, loads, (int)RLT_ARRAY_LEN(loads));
    if (v < 0 || vec_w != 16) return false;
    for (int i = 0; i < n; i++) {
        const rlt_tensor *t = &op->tensors[loads[i]->tensor];
        const rlt_affine *x = &loads[i]->index[t->n_dims - 1];
        int64_t c = x->coef[r];
        if (x->coef[v] != 2 || c <= 0 || c * (op->axes[r].extent - 1) > 31) continue;
        bool is_only_last = true;
        for (int d = 0; d + 1 < t->n_dims; d++)
            if (loads[i]->index[d].coef[r] || loads[i]->index[d].coef[v]) is_only_last = false;
        if (is_only_last) return true;
    }
    return false;
}

rlt_status rlt_space_schedule(const rlt_space *s, const rlt_config *c, rlt_sched **out_sched, const char **out_cc,
                              rlt_diag *diag)
{
    const rlt_op *op = s->op;
    *out_sched = NULL;
    if (s->subset && subset_find(s->subset, full_index_of(s, c)) < 0)
        return rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                        "the configuration is not one of the %d this space is restricted to", s->subset->n);
    rlt_sched *sched = rlt_sched_create();
    if (!sched) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory building a schedule");
    rlt_status st = RLT_STATUS_OK;
    int64_t vec = knob_value(s, c, RLT_KNOB_VEC, -1, -1, NULL);
    int vec_axis = vec < 0 ? -1 : (int)(vec / 1000);
    int64_t vec_w = vec < 0 ? 1 : vec % 1000;
    bool is_unrolled = knob_value(s, c, RLT_KNOB_UNROLL, -1, 0, NULL) != 0;
    int64_t tile_elems[RLT_MAX_AXES];
    for (int a = 0; a < RLT_MAX_AXES; a++) tile_elems[a] = 1;
    /* loop names per level and axis ("" when the level has no loop) */
    char l_outer[RLT_MAX_AXES][RLT_LOOP_NAME_MAX] = {{0}};  /* L0 / L1 */
    char l_mid[RLT_MAX_AXES][RLT_LOOP_NAME_MAX] = {{0}};    /* L2 / L3 */
    char l_tile[RLT_MAX_AXES][RLT_LOOP_NAME_MAX] = {{0}};   /* L4 (register tile; unrolled count on the vec axis) */
    char l_vec[RLT_LOOP_NAME_MAX] = "";
    char l_single[RLT_MAX_AXES][RLT_LOOP_NAME_MAX] = {{0}}; /* one iteration: a wide vector's outer loop */

    for (int a = 0; a < op->n_axes && st == RLT_STATUS_OK; a++) {
        const rlt_axis *ax = &op->axes[a];
        if (ax->is_reduce) {
            int64_t t = knob_value(s, c, RLT_KNOB_RTILE, a, ax->extent, NULL);
            if (t >= ax->extent) {
                snprintf(l_mid[a], RLT_LOOP_NAME_MAX, "%s", ax->name);
            } else if (t <= 1) {
                snprintf(l_outer[a], RLT_LOOP_NAME_MAX, "%s", ax->name);
            } else {
                st = rlt_sched_add_split(sched, ax->name, t, diag);
                snprintf(l_outer[a], RLT_LOOP_NAME_MAX, "%s.o", ax->name);
                snprintf(l_mid[a], RLT_LOOP_NAME_MAX, "%s.i", ax->name);
            }
            continue;
        }
        int tile_knob, mid_knob;
        int64_t tile = knob_value(s, c, RLT_KNOB_TILE, a, 1, &tile_knob);
        int64_t unit = a == vec_axis ? vec_w : 1;
        tile_elems[a] = tile * unit;
        if (tile_knob >= 0 && is_redundant_choice(&s->knobs[tile_knob], c->choice[tile_knob], unit, ax->extent)) {
            st = rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                          "%s.tile=%" PRId64 " repeats a smaller tile: the axis has only %" PRId64 " elements",
                          ax->name, tile, ax->extent);
            break;
        }
        /* On the vectorized axis the tile's last vector may end past the
         * axis, masked (a row of 28 in two vectors of 16); a vector wider
         * than the whole axis is the register tile alone (tiles of more are
         * refused as repeats above). */
        bool is_wide = a == vec_axis && ax->extent < vec_w;
        if (tile_elems[a] - ax->extent >= unit) {
            st = rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                          "%s.tile=%" PRId64 " x %" PRId64 " overruns the axis (%" PRId64 " elements)", ax->name,
                          tile, unit, ax->extent);
            break;
        }
        char rest[RLT_LOOP_NAME_MAX];
        snprintf(rest, sizeof rest, "%s", ax->name);
        if (is_wide) {
            /* split past the extent: an outer loop of one iteration, kept
             * outermost, and the vector loop with a tail (docs/schedule.md) */
            st = rlt_sched_add_split(sched, ax->name, vec_w, diag);
            snprintf(l_single[a], RLT_LOOP_NAME_MAX, "%.60s.o", ax->name);
            snprintf(l_vec, sizeof l_vec, "%.60s.i", ax->name);
            rest[0] = '\0';
        } else if (tile_elems[a] > 1 || a == vec_axis) {
            if (tile_elems[a] < ax->extent) {
                st = rlt_sched_add_split(sched, ax->name, tile_elems[a], diag);
                snprintf(rest, sizeof rest, "%s.o", ax->name);
                snprintf(l_tile[a], RLT_LOOP_NAME_MAX, "%s.i", ax->name);
            } else {
                /* the tile is the whole axis: no outer loop is left */
                rest[0] = '\0';
                snprintf(l_tile[a], RLT_LOOP_NAME_MAX, "%s", ax->name);
            }
            if (st == RLT_STATUS_OK && a == vec_axis) {
                if (tile > 1) {
                    char inner[RLT_LOOP_NAME_MAX];
                    snprintf(inner, sizeof inner, "%.60s", l_tile[a]);
                    st = rlt_sched_add_split(sched, inner, vec_w, diag);
                    snprintf(l_tile[a], RLT_LOOP_NAME_MAX, "%.60s.o", inner);
                    snprintf(l_vec, sizeof l_vec, "%.60s.i", inner);
                } else {
                    snprintf(l_vec, sizeof l_vec, "%.60s", l_tile[a]);
                    l_tile[a][0] = '\0';
                }
            }
        }
        int64_t mid = knob_value(s, c, RLT_KNOB_MID, a, 1, &mid_knob);
        if (mid_knob >= 0 && is_redundant_choice(&s->knobs[mid_knob], c->choice[mid_knob], tile_elems[a], ax->extent)) {
            st = rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                          "%s.mid=%" PRId64 " repeats a smaller middle tile: %" PRId64 " register tiles cover the axis",
                          ax->name, mid, (ax->extent + tile_elems[a] - 1) / tile_elems[a]);
            break;
        }
        if (st != RLT_STATUS_OK || !rest[0]) continue;
        /* a middle tile past what is left of the axis covers all of it */
        int64_t rest_extent = (ax->extent + tile_elems[a] - 1) / tile_elems[a];
        if (mid > rest_extent) mid = rest_extent;
        if (mid > 1) {
            st = rlt_sched_add_split(sched, rest, mid, diag);
            snprintf(l_outer[a], RLT_LOOP_NAME_MAX, "%.60s.o", rest);
            snprintf(l_mid[a], RLT_LOOP_NAME_MAX, "%.60s.i", rest);
        } else {
            snprintf(l_outer[a], RLT_LOOP_NAME_MAX, "%s", rest);
        }
    }
    if (st != RLT_STATUS_OK) goto done;
    int64_t accumulators = 1;
    for (int a = 0; a < op->n_spatial; a++)
        if (op->axes[a].extent > 1) accumulators *= a == vec_axis ? tile_elems[a] / vec_w : tile_elems[a];
    if (accumulators > s->max_accumulators) {
        st = rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                      "the register tile needs %" PRId64 " accumulators, more than %d (the vector registers less 4)",
                      accumulators, s->max_accumulators);
        goto done;
    }

    /* The loop order: L0 spatial, L1 reduce, L2 spatial, L3 reduce, L4 the
     * register tile with the vectorized axis innermost. */
    int sp_order[RLT_MAX_AXES], rd_order[RLT_MAX_AXES];
    int n_sp = rlt_space_axis_order(s, c, false, sp_order), n_rd = rlt_space_axis_order(s, c, true, rd_order);
    /* Axes of extent 1 keep their single loop outermost. The parallel L0
     * loop comes first among the others: one parallel region a call, each
     * thread a contiguous share of that axis. Nested in another L0 loop it
     * would fork and join on every iteration of that loop, which at 2
     * threads left depthwise layers of 30-45 us a call slower than on one
     * (bench/RESULTS.md, sixth round). */
    int64_t par = knob_value(s, c, RLT_KNOB_PARALLEL, -1, -1, NULL);
    /* With unroll, also the L3 loops of reduction axes that lie whole inside
     * the accumulator (a 3x3 window's r and s), innermost first, while the
     * copies stay at most RLT_SPACE_UNROLL_REDUCE_MAX. Depthwise 3x3 at 112x112:
     * 24 GFLOP/s with the window loops rolled, 36 unrolled. */
    bool is_whole_unrolled[RLT_MAX_AXES] = {false};
    int64_t copies = 1;
    for (int i = n_rd - 1; i >= 0 && is_unrolled; i--) {
        int a = rd_order[i];
        if (l_outer[a][0] || !l_mid[a][0]) continue; /* blocked: the block loop stays a loop */
        if (copies * op->axes[a].extent > RLT_SPACE_UNROLL_REDUCE_MAX) break;
        copies *= op->axes[a].extent;
        is_whole_unrolled[a] = true;
    }
    /* A stride-2 window's unrolled column loop runs inside the register
     * tile, just outside the vector: its taps, next to each other, share the
     * loads of one window of the row (is_window_axis). */
    int window_axis = -1;
    for (int i = 0; i < n_rd && l_vec[0]; i++)
        if (is_whole_unrolled[rd_order[i]] && is_window_axis(op, vec_axis, vec_w, rd_order[i])) window_axis = rd_order[i];
    plan_loops order = {0};
    for (int a = 0; a < op->n_axes; a++) {
        if (op->axes[a].extent <= 1) push(&order, op->axes[a].name);
        if (l_single[a][0]) push(&order, l_single[a]);
    }
    if (par >= 0 && l_outer[par][0]) push(&order, l_outer[par]);
    for (int i = 0; i < n_sp; i++)
        if (l_outer[sp_order[i]][0] && sp_order[i] != par) push(&order, l_outer[sp_order[i]]);
    for (int i = 0; i < n_rd; i++)
        if (l_outer[rd_order[i]][0]) push(&order, l_outer[rd_order[i]]);
    for (int i = 0; i < n_sp; i++)
        if (l_mid[sp_order[i]][0]) push(&order, l_mid[sp_order[i]]);
    int acc_after = order.n; /* the accumulator lives inside loop order.names[acc_after - 1] */
    for (int i = 0; i < n_rd; i++)
        if (l_mid[rd_order[i]][0] && rd_order[i] != window_axis) push(&order, l_mid[rd_order[i]]);
    for (int i = 0; i < n_sp; i++)
        if (l_tile[sp_order[i]][0]) push(&order, l_tile[sp_order[i]]);
    if (window_axis >= 0) push(&order, l_mid[window_axis]);
    if (l_vec[0]) push(&order, l_vec);

    if (order.n >= 2) {
        const char *names[RLT_MAX_LOOPS];
        for (int i = 0; i < order.n; i++) names[i] = order.names[i];
        if ((st = rlt_sched_add_reorder(sched, order.n, names, diag)) != RLT_STATUS_OK) goto done;
    }
    st = rlt_sched_add_cache_write(sched, acc_after > 0 ? order.names[acc_after - 1] : NULL, diag);
    for (int i = 0; i < n_sp && st == RLT_STATUS_OK && is_unrolled; i++)
        if (l_tile[sp_order[i]][0]) st = rlt_sched_add_unroll(sched, l_tile[sp_order[i]], diag);
    for (int i = n_rd - 1; i >= 0 && st == RLT_STATUS_OK; i--)
        if (is_whole_unrolled[rd_order[i]]) st = rlt_sched_add_unroll(sched, l_mid[rd_order[i]], diag);
    if (st == RLT_STATUS_OK && l_vec[0]) st = rlt_sched_add_vectorize(sched, l_vec, diag);
    if (st != RLT_STATUS_OK) goto done;

    if (par >= 0) {
        if (!l_outer[par][0]) {
            st = rlt_fail(diag, RLT_STATUS_ILLEGAL_SCHEDULE,
                          "parallel=%s: the register tile covers the whole axis, no outer loop is left",
                          op->axes[par].name);
            goto done;
        }
        if ((st = rlt_sched_add_parallel(sched, l_outer[par], 0, diag)) != RLT_STATUS_OK) goto done;
    }
    for (int k = 0; k < s->n_knobs && st == RLT_STATUS_OK; k++) {
        const rlt_knob *kn = &s->knobs[k];
        int64_t val = kn->values[c->choice[k]];
        if (kn->kind == RLT_KNOB_PACK && val >= 0) {
            int d = dim_indexed_by(op, kn->axis, (int)val);
            st = rlt_sched_add_pack(sched, op->tensors[kn->axis].name, 1, &d, &tile_elems[val], diag);
        } else if (kn->kind == RLT_KNOB_PAD && val) {
            st = rlt_sched_add_pad(sched, op->tensors[kn->axis].name, diag);
        }
    }
done:
    if (st != RLT_STATUS_OK) {
        rlt_sched_destroy(sched);
        return st;
    }
    if (out_cc) *out_cc = knob_value(s, c, RLT_KNOB_CC, -1, 0, NULL) ? "clang" : "gcc";
    *out_sched = sched;
    return RLT_STATUS_OK;
}

rlt_status rlt_space_nest(const rlt_space *s, const rlt_config *c, rlt_nest *out, const char **out_cc,
                          rlt_diag *diag)
{
    rlt_sched *sched = NULL;
    rlt_status st = rlt_space_schedule(s, c, &sched, out_cc, diag);
    if (st != RLT_STATUS_OK) return st;
    st = rlt_sched_apply(sched, s->op, out, diag);
    rlt_sched_destroy(sched);
    return st;
}

bool rlt_space_is_valid(const rlt_space *s, const rlt_config *c)
{
    rlt_nest n;
    return rlt_space_nest(s, c, &n, NULL, NULL) == RLT_STATUS_OK;
}

/* ---- keys and printing -------------------------------------------------- */

void rlt_knob_value_text(const rlt_space *s, const rlt_knob *k, int choice, rlt_str *out)
{
    const rlt_op *op = s->op;
    int64_t v = k->values[choice];
    switch (k->kind) {
    case RLT_KNOB_VEC:
        if (v < 0) rlt_str_append(out, "none");
        else rlt_str_printf(out, "%s*%" PRId64, op->axes[v / 1000].name, v % 1000);
        return;
    case RLT_KNOB_ORDER_S:
    case RLT_KNOB_ORDER_R: {
        int axes[RLT_MAX_AXES], perm[RLT_MAX_AXES];
        int n = n_nontrivial(op, k->kind == RLT_KNOB_ORDER_R, axes);
        perm_of(v, n, perm);
        for (int i = 0; i < n; i++) rlt_str_printf(out, "%s%s", i ? "," : "", op->axes[axes[perm[i]]].name);
        return;
    }
    case RLT_KNOB_PACK:
    case RLT_KNOB_PARALLEL:
        if (v < 0) rlt_str_append(out, k->kind == RLT_KNOB_PACK ? "off" : "none");
        else rlt_str_append(out, op->axes[v].name);
        return;
    case RLT_KNOB_CC:
        rlt_str_append(out, v ? "clang" : "gcc");
        return;
    default:
        rlt_str_printf(out, "%" PRId64, v);
        return;
    }
}

void rlt_space_config_key(const rlt_space *s, const rlt_config *c, rlt_str *out)
{
    rlt_str_printf(out, "v%d", RLT_SPACE_VERSION);
    for (int k = 0; k < s->n_knobs; k++) {
        rlt_str_printf(out, ";%s=", s->knobs[k].name);
        rlt_knob_value_text(s, &s->knobs[k], c->choice[k], out);
    }
}

/* The choice of knob k whose text is value[0..len), or -1 (also when out
 * of memory). */
static int choice_of_text(const rlt_space *s, int k, const char *value, size_t len)
{
    int choice = -1;
    rlt_str text;
    rlt_str_init(&text);
    for (int ch = 0; ch < s->knobs[k].n_choices && choice < 0; ch++) {
        rlt_str_clear(&text);
        rlt_knob_value_text(s, &s->knobs[k], ch, &text);
        if (text.data && strlen(text.data) == len && strncmp(text.data, value, len) == 0) choice = ch;
    }
    rlt_str_free(&text);
    return choice;
}

/* Parses one "knob=value" of a key or a fixing, [p, end): the knob's index
 * and the choice whose text is value. Messages start with "<what>: ". */
static rlt_status parse_assignment(const rlt_space *s, const char *what, const char *p, const char *end, int *out_knob,
                                   int *out_choice, rlt_diag *diag)
{
    const char *eq = memchr(p, '=', (size_t)(end - p));
    if (!eq) return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s: '%.*s' is not knob=value", what, (int)(end - p), p);
    int k = -1;
    for (int i = 0; i < s->n_knobs; i++)
        if (strlen(s->knobs[i].name) == (size_t)(eq - p) && strncmp(s->knobs[i].name, p, (size_t)(eq - p)) == 0)
            k = i;
    if (k < 0) {
        rlt_str names;
        rlt_str_init(&names);
        for (int i = 0; i < s->n_knobs; i++) rlt_str_printf(&names, "%s%s", i ? ", " : "", s->knobs[i].name);
        rlt_status st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s: unknown knob '%.*s' (the space of %s has %s)",
                                 what, (int)(eq - p), p, s->op->spec, names.data ? names.data : "no knobs");
        rlt_str_free(&names);
        return st;
    }
    int choice = choice_of_text(s, k, eq + 1, (size_t)(end - eq - 1));
    if (choice < 0) {
        rlt_str choices;
        rlt_str_init(&choices);
        for (int ch = 0; ch < s->knobs[k].n_choices; ch++) {
            if (ch) rlt_str_append(&choices, " ");
            rlt_knob_value_text(s, &s->knobs[k], ch, &choices);
        }
        rlt_status st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s: '%.*s' is not a choice of knob %s (its choices: %s)",
                                 what, (int)(end - eq - 1), eq + 1, s->knobs[k].name,
                                 choices.data ? choices.data : "");
        rlt_str_free(&choices);
        return st;
    }
    *out_knob = k;
    *out_choice = choice;
    return RLT_STATUS_OK;
}

/* ---- configuration keys as text ----------------------------------------- */

/* Where the field starting at p ends: at the next ';' or at the end. Keys
 * and fixings are read field by field with it, here and nowhere else. */
static const char *field_end(const char *p)
{
    const char *end = strchr(p, ';');
    return end ? end : p + strlen(p);
}

/* True when the field [p, end) is "name=...". */
static bool field_is(const char *p, const char *end, const char *name)
{
    size_t n = strlen(name);
    return (size_t)(end - p) > n && strncmp(p, name, n) == 0 && p[n] == '=';
}

const char *rlt_config_key_cc(const char *key)
{
    char cc[16];
    return rlt_config_key_get(key, "cc", cc, sizeof cc) && strcmp(cc, "clang") == 0 ? "clang" : NULL;
}

bool rlt_config_key_get(const char *key, const char *name, char *buf, size_t cap)
{
    size_t n = strlen(name);
    for (const char *p = key; *p;) {
        const char *end = field_end(p);
        if (field_is(p, end, name)) {
            size_t len = (size_t)(end - p) - n - 1;
            if (len >= cap) return false;
            memcpy(buf, p + n + 1, len);
            buf[len] = '\0';
            return true;
        }
        p = *end ? end + 1 : end;
    }
    return false;
}

void rlt_config_key_without(const char *key, const char *name, rlt_str *out)
{
    bool is_first = true;
    for (const char *p = key; *p;) {
        const char *end = field_end(p);
        if (!field_is(p, end, name)) {
            if (!is_first) rlt_str_append(out, ";");
            rlt_str_appendn(out, p, (size_t)(end - p));
            is_first = false;
        }
        p = *end ? end + 1 : end;
    }
}

/* Where a key's fields start: past its "v<RLT_SPACE_VERSION>"; NULL when
 * it is of another version. */
static const char *after_version(const char *key)
{
    char version[16];
    snprintf(version, sizeof version, "v%d", RLT_SPACE_VERSION);
    size_t vlen = strlen(version);
    return strncmp(key, version, vlen) == 0 && (key[vlen] == ';' || key[vlen] == '\0') ? key + vlen : NULL;
}

rlt_status rlt_space_config_parse(const rlt_space *s, const char *key, rlt_config *out, rlt_diag *diag)
{
    const char *p = after_version(key);
    if (!p)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "configuration '%.80s': expected it to start with 'v%d'", key,
                        RLT_SPACE_VERSION);
    bool seen[RLT_SPACE_MAX_KNOBS] = {false};
    memset(out, 0, sizeof *out);
    while (*p == ';') {
        p++;
        const char *end = field_end(p);
        int k, choice;
        rlt_status st = parse_assignment(s, "configuration", p, end, &k, &choice, diag);
        if (st != RLT_STATUS_OK) return st;
        out->choice[k] = (int16_t)choice;
        seen[k] = true;
        p = end;
    }
    if (*p) return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "configuration: unexpected '%.20s'", p);
    for (int k = 0; k < s->n_knobs; k++)
        if (!seen[k]) return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "configuration: knob %s is missing", s->knobs[k].name);
    return RLT_STATUS_OK;
}

/* Appends c to configs[0..*n) when it is valid and not there yet (and
 * *n < cap). */
static void add_new_valid(const rlt_space *s, const rlt_config *c, rlt_config *configs, int *n, int cap)
{
    if (*n >= cap || !rlt_space_is_valid(s, c)) return;
    uint64_t index = rlt_space_index_of(s, c);
    for (int i = 0; i < *n; i++)
        if (rlt_space_index_of(s, &configs[i]) == index) return;
    configs[(*n)++] = *c;
}

int rlt_space_configs_adopt(const rlt_space *s, const char *key, rlt_config *configs, int n, int cap)
{
    if (!after_version(key)) return 0;
    rlt_config base = {0};
    bool is_missing[RLT_SPACE_MAX_KNOBS] = {false};
    char value[1024]; /* a record's key is shorter */
    for (int k = 0; k < s->n_knobs; k++) {
        if (!rlt_config_key_get(key, s->knobs[k].name, value, sizeof value)) {
            is_missing[k] = true;
            continue;
        }
        int ch = choice_of_text(s, k, value, strlen(value));
        if (ch < 0) return 0;
        base.choice[k] = (int16_t)ch;
    }
    /* the base, then each missing knob at each of its other choices */
    int end = n;
    add_new_valid(s, &base, configs, &end, cap);
    for (int k = 0; k < s->n_knobs; k++)
        for (int ch = 1; is_missing[k] && ch < s->knobs[k].n_choices; ch++) {
            rlt_config c = base;
            c.choice[k] = (int16_t)ch;
            add_new_valid(s, &c, configs, &end, cap);
        }
    return end - n;
}

/* ---- fixings -------------------------------------------------------------- */

void rlt_space_fixing_none(rlt_space_fixing *out)
{
    memset(out, 0, sizeof *out);
    for (int k = 0; k < RLT_SPACE_MAX_KNOBS; k++) out->choice[k] = -1;
}

rlt_status rlt_space_fixing_parse(const rlt_space *s, const char *text, rlt_space_fixing *out, rlt_diag *diag)
{
    RLT_ASSERT(s && text && out);
    rlt_space_fixing_none(out);
    const char *p = text;
    while (*p) {
        const char *end = field_end(p);
        if (end == p) return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "fixed knobs '%.80s': an empty knob=value", text);
        int k, choice;
        rlt_status st = parse_assignment(s, "fixed knobs", p, end, &k, &choice, diag);
        if (st != RLT_STATUS_OK) return st;
        if (out->choice[k] >= 0)
            return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "fixed knobs: knob %s is fixed twice", s->knobs[k].name);
        out->choice[k] = (int16_t)choice;
        out->n_fixed++;
        p = *end ? end + 1 : end;
    }
    return RLT_STATUS_OK;
}

void rlt_space_fixing_text(const rlt_space *s, const rlt_space_fixing *f, rlt_str *out)
{
    bool is_first = true;
    for (int k = 0; k < s->n_knobs; k++) {
        if (f->choice[k] < 0) continue;
        rlt_str_printf(out, "%s%s=", is_first ? "" : ";", s->knobs[k].name);
        rlt_knob_value_text(s, &s->knobs[k], f->choice[k], out);
        is_first = false;
    }
}

uint64_t rlt_space_fixing_size(const rlt_space *s, const rlt_space_fixing *f)
{
    uint64_t n = 1;
    for (int k = 0; k < s->n_knobs; k++) {
        if (f->choice[k] >= 0) continue;
        uint64_t m = (uint64_t)s->knobs[k].n_choices;
        n = n > UINT64_MAX / m ? UINT64_MAX : n * m;
    }
    return n;
}

void rlt_space_fixing_config_of(const rlt_space *s, const rlt_space_fixing *f, uint64_t index, rlt_config *out)
{
    memset(out, 0, sizeof *out);
    for (int k = 0; k < s->n_knobs; k++) {
        if (f->choice[k] >= 0) {
            out->choice[k] = f->choice[k];
            continue;
        }
        uint64_t m = (uint64_t)s->knobs[k].n_choices;
        out->choice[k] = (int16_t)(index % m);
        index /= m;
    }
}

void rlt_space_fixing_apply(const rlt_space_fixing *f, rlt_config *c)
{
    for (int k = 0; k < RLT_SPACE_MAX_KNOBS; k++)
        if (f->choice[k] >= 0) c->choice[k] = f->choice[k];
}

void rlt_space_print(const rlt_space *s, rlt_str *out)
{
    rlt_str_printf(out, "space of %s: %d knobs, %" PRIu64 " configurations\n", s->op->spec, s->n_knobs,
                   rlt_space_size(s));
    for (int k = 0; k < s->n_knobs; k++) {
        rlt_str_printf(out, "  %-12s", s->knobs[k].name);
        for (int ch = 0; ch < s->knobs[k].n_choices; ch++) {
            rlt_str_append(out, ch ? " " : " ");
            rlt_knob_value_text(s, &s->knobs[k], ch, out);
        }
        rlt_str_append(out, "\n");
    }
}
