/*
 * space.h - search spaces: the configurations a tuner chooses from, derived
 * from an op's loop nest by general rules, not templates per op.
 *
 * The rule is Ansor's multi-level tiling for CPUs ("SSRSRS"): every spatial
 * axis s is split into three levels s.0 (outer) / s.1 (middle) / s.2
 * (register tile), every reduction axis r into r.0 (cache block) / r.1; the
 * loops are ordered
 *
 *     L0: s.0 ...   L1: r.0 ...   L2: s.1 ...   L3: r.1 ...   L4: s.2 ...
 *
 * (a stride-2 window's unrolled column loop moves into L4, just outside the
 * vector, where codegen shares its taps' loads: is_window_axis in space.c)
 * with a cache_write accumulator around L3 + L4 (the register tile), the
 * register-tile loops unrolled, one spatial axis innermost and vectorized,
 * optionally one L0 loop parallel, inputs optionally packed into panels
 * matching the register tile or padded, and the compiler chosen. Each choice
 * is a knob with a list of values; a configuration is one index per knob.
 * Schedules for matmul, batch_matmul, dense, conv2d, depthwise conv2d and
 * user expressions all come from this one rule.
 *
 * Knobs (names as printed in config keys; which exist depends on the op):
 *   vec                 none, or the vectorized axis and width ("j*8"): half
 *                       and full vector width on axes at least that long,
 *                       then (last) the widths wider than an axis but less
 *                       than twice it: a row of 14 as one masked vector of
 *                       16, which is then the whole register tile and
 *                       leaves that axis a loop of one iteration, outermost
 *   <s>.tile            register tile of spatial axis s, in vectors for the
 *                       vectorized axis and in elements for the others; on
 *                       the vectorized axis its last vector may end past
 *                       the axis (masked), never a whole vector past it
 *   <s>.mid             middle tile of s, in register tiles
 *   <r>.tile            inner (cache) block of reduction axis r
 *   order.s / order.r   the order of the spatial / reduction axes in their levels
 *   unroll              0: no unrolling, 1: unroll the register tile, and the
 *                       reduction axes that lie whole inside the accumulator
 *                       while that makes at most 16 copies (a 3x3 window)
 *   pack.<T>            off, or the axis whose register tile T's panels follow
 *   pad.<T>             copy T with zero borders (only for padded accesses)
 *   parallel            none, or the spatial axis whose L0 loop is parallel;
 *                       that loop is the outermost of L0, whatever order.s
 *                       says of the others (only when tuning with more than
 *                       one thread)
 *   cc                  gcc, or clang when it is installed
 */
#ifndef RLT_SPACE_H
#define RLT_SPACE_H

#include "rltune/records.h" /* rlt_config_key_get */
#include "sched/sched.h"

#define RLT_SPACE_MAX_KNOBS 40
#define RLT_SPACE_MAX_CHOICES 64
#define RLT_SPACE_VERSION 1
#define RLT_SPACE_UNROLL_REDUCE_MAX 16 /* most copies of the body that unrolling whole reduction axes makes */

typedef enum rlt_knob_kind {
    RLT_KNOB_VEC,
    RLT_KNOB_TILE,
    RLT_KNOB_MID,
    RLT_KNOB_RTILE,
    RLT_KNOB_ORDER_S,
    RLT_KNOB_ORDER_R,
    RLT_KNOB_UNROLL,
    RLT_KNOB_PACK,
    RLT_KNOB_PAD,
    RLT_KNOB_PARALLEL,
    RLT_KNOB_CC
} rlt_knob_kind;

typedef struct rlt_knob {
    char name[RLT_LOOP_NAME_MAX];
    rlt_knob_kind kind;
    int axis;    /* TILE, MID, RTILE: the op axis; PACK, PAD: the tensor */
    int n_choices;
    int64_t values[RLT_SPACE_MAX_CHOICES]; /* meaning depends on kind (space.c says) */
} rlt_knob;

typedef struct rlt_space_opts {
    int n_threads;      /* > 1 adds the parallel knob */
    int vector_floats;  /* the target's vector width (0 = detect) */
    int64_t l1d_bytes;  /* one core's L1 data cache (0 = detect; 32 KiB where unknown) */
    int64_t l2_bytes;   /* one core's L2 cache (0 = detect; 512 KiB where unknown) */
    bool has_clang;     /* add clang to the cc knob (false: detect with `clang --version`) */
    bool no_clang;      /* never offer clang */
} rlt_space_opts;

typedef struct rlt_space_subset rlt_space_subset;

typedef struct rlt_space {
    const rlt_op *op; /* borrowed */
    int n_knobs;
    rlt_knob knobs[RLT_SPACE_MAX_KNOBS];
    int n_threads;
    int max_accumulators; /* register tiles needing more accumulators (vectors, or
                             scalars when not vectorized) are invalid: the
                             target's vector registers less 4 (12 for AVX2, 28 for AVX-512) */
    int64_t l1d_bytes, l2_bytes; /* the caches the seeds block for (rlt_space_opts) */
    const rlt_space_subset *subset; /* borrowed; NULL: every configuration (rlt_space_restrict) */
} rlt_space;

/* A configuration: one choice index per knob. */
typedef struct rlt_config {
    int16_t choice[RLT_SPACE_MAX_KNOBS];
} rlt_config;

/* Derives the space of `op` (borrowed: it must outlive the space). */
rlt_status rlt_space_create(const rlt_op *op, const rlt_space_opts *opts, rlt_space *out, rlt_diag *diag);

/* Number of configurations (the product of the knobs' sizes), valid or not;
 * saturates at UINT64_MAX. */
uint64_t rlt_space_size(const rlt_space *s);

/* Index <-> configuration (mixed radix, first knob least significant). */
void rlt_space_config_of(const rlt_space *s, uint64_t index, rlt_config *out);
uint64_t rlt_space_index_of(const rlt_space *s, const rlt_config *c);

/* The neighbour one step along knob k (delta -1 or +1); false when it
 * would leave the knob's range. */
bool rlt_space_neighbour(const rlt_space *s, const rlt_config *c, int knob, int delta, rlt_config *out);

/* A uniformly random configuration (not necessarily valid). */
void rlt_space_random(const rlt_space *s, rlt_rng *rng, rlt_config *out);

/* The schedule a configuration stands for, and the compiler it asks for
 * ("gcc" / "clang"). Fails (ILLEGAL_SCHEDULE, with the reason) when the
 * configuration is not valid: a primitive refuses it, or it duplicates a
 * smaller configuration (a middle tile past the axis's end). */
rlt_status rlt_space_schedule(const rlt_space *s, const rlt_config *c, rlt_sched **out_sched, const char **out_cc,
                              rlt_diag *diag);

/* The schedule applied: the nest to measure. */
rlt_status rlt_space_nest(const rlt_space *s, const rlt_config *c, rlt_nest *out, const char **out_cc,
                          rlt_diag *diag);

bool rlt_space_is_valid(const rlt_space *s, const rlt_config *c);

/* The valid configuration nearest to a scheduled nest of the space's op
 * (project.c says how the nest is read: its register tile, middle tiles,
 * reduction blocks, vectorized axis, unrolling and parallel axis, each
 * knob at its nearest choice; then the valid configuration fewest knob
 * steps away). ILLEGAL_SCHEDULE when none is within two steps. */
rlt_status rlt_space_project(const rlt_space *s, const rlt_nest *nest, rlt_config *out, rlt_diag *diag);

/* "v1;vec=j*8;i.tile=6;..." : the configuration's key, stable across runs
 * (stored in tuning records), and back. Parsing checks every knob is known
 * and every value is one of its choices. */
void rlt_space_config_key(const rlt_space *s, const rlt_config *c, rlt_str *out);
rlt_status rlt_space_config_parse(const rlt_space *s, const char *key, rlt_config *out, rlt_diag *diag);

/* Appends to configs[n..cap) the valid configurations of this space that
 * `key`, a configuration of a kindred space, stands for: the same op at
 * another thread count (with or without a parallel knob), or the op with
 * another epilogue (with or without a pack knob for the bias or the
 * residual). Each knob both spaces have takes the key's value; a knob the
 * key lacks is tried at each of its choices, one such knob at a time, the
 * others at their first; the key's knobs this space lacks are dropped.
 * Configurations already in configs[0..n) are skipped. Returns how many it
 * added: 0 when the key is not of this space's version or a shared knob's
 * value is not one of this space's choices. */
int rlt_space_configs_adopt(const rlt_space *s, const char *key, rlt_config *configs, int n, int cap);

/* A key's fields read as text, without its space (what stored records
 * need: the compiler a configuration chose, a key with a knob left out).
 * rlt_config_key_get (rltune/records.h) reads one field. without: the key
 * with field `name` left out, appended to out. */
void rlt_config_key_without(const char *key, const char *name, rlt_str *out);

/* ---- fixings: a sub-space with some knobs held at one choice ------------
 *
 * A dataset may measure only the configurations whose fixed knobs have
 * their fixed choices (rltune dataset --fix): a sub-space small enough to
 * measure completely, which tuners of its replay search with every step
 * along a free knob landing on a measured configuration. Written as in
 * configuration keys, without the version: "cc=gcc;vec=j*16;order.s=i,j". */
typedef struct rlt_space_fixing {
    int16_t choice[RLT_SPACE_MAX_KNOBS]; /* -1: free */
    int n_fixed;
} rlt_space_fixing;

/* The fixing that fixes nothing (the whole space). */
void rlt_space_fixing_none(rlt_space_fixing *out);
/* Parses "knob=value;..." ("" fixes nothing). PARSE_ERROR naming an
 * unknown knob (and the space's knobs), a value that is not a choice (and
 * the knob's choices), or a knob given twice. */
rlt_status rlt_space_fixing_parse(const rlt_space *s, const char *text, rlt_space_fixing *out, rlt_diag *diag);
/* The fixing as text, knobs in the space's order (what parse reads back). */
void rlt_space_fixing_text(const rlt_space *s, const rlt_space_fixing *f, rlt_str *out);
/* Configurations of the sub-space (the free knobs' sizes multiplied;
 * saturates at UINT64_MAX), and its index-th one (mixed radix over the
 * free knobs, first knob least significant). */
uint64_t rlt_space_fixing_size(const rlt_space *s, const rlt_space_fixing *f);
void rlt_space_fixing_config_of(const rlt_space *s, const rlt_space_fixing *f, uint64_t index, rlt_config *out);
/* Sets the fixed knobs of c to their fixed choices. */
void rlt_space_fixing_apply(const rlt_space_fixing *f, rlt_config *c);

/* The value of a knob's choice as text ("8", "j*8", "gcc", "k,c,r,s"). */
void rlt_knob_value_text(const rlt_space *s, const rlt_knob *k, int choice, rlt_str *out);

/* The op's spatial (is_reduce false) or reduction axes of extent > 1 in the
 * order configuration c gives their outer loops, outermost first, into out
 * (RLT_MAX_AXES); returns how many. */
int rlt_space_axis_order(const rlt_space *s, const rlt_config *c, bool is_reduce, int *out);

/* Prints the knobs and their choices. */
void rlt_space_print(const rlt_space *s, rlt_str *out);

/* ---- seeds (seeds.c) ------------------------------------------------------
 *
 * Up to `max` distinct valid configurations built by rules, not search: the
 * register tiles with the most FMAs per load (a count over the tile's
 * loads, seeds.c says how), each with the other knobs set by fixed rules
 * (whole reduction axes, packing where vectors would be gathered, padding
 * where the op reuses a tensor enough, a parallel outer axis), and a
 * quarter of them blocked for the caches. Best-rated first; deterministic.
 * Returns how many were written (0 when out of memory). */
int rlt_space_seeds(const rlt_space *s, int max, rlt_config *out);

/* ---- restriction to a subset (replays of a dataset) ---------------------
 *
 * A replay (search/dataset.h) can answer only the configurations its
 * dataset measured, so its tuners work on the space restricted to them:
 * with rlt_space_restrict(s, sub),
 *   - rlt_space_size is the number of members, and indices 0 .. size-1 are
 *     the members in the order of their unrestricted indices (grid order);
 *   - rlt_space_index_of of a configuration that is not a member is
 *     size + its unrestricted index (saturating at UINT64_MAX - 1): never a
 *     member's index, so tuners can mark it visited; rlt_space_config_of
 *     maps such an index back;
 *   - rlt_space_random draws a member uniformly;
 *   - a configuration that is not a member is invalid: rlt_space_schedule,
 *     rlt_space_nest and rlt_space_features fail for it (ILLEGAL_SCHEDULE),
 *     rlt_space_is_valid is false. A member is valid when it would be
 *     without the restriction.
 * Knobs, keys, neighbours and features are unchanged. */

/* Makes the subset of `s` (an unrestricted space) holding `configs`
 * (copied; a configuration given twice is one member). On success *out is
 * owned: free it with rlt_space_subset_destroy after the last use of any
 * space restricted to it. OUT_OF_MEMORY, or INVALID_ARGUMENT when `s` is
 * itself restricted or a choice is out of its knob's range. */
rlt_status rlt_space_subset_create(const rlt_space *s, int n, const rlt_config *configs, rlt_space_subset **out,
                                   rlt_diag *diag);
void rlt_space_subset_destroy(rlt_space_subset *sub); /* NULL ok */

/* Number of members. */
int rlt_space_subset_size(const rlt_space_subset *sub);

/* Restricts `s` to `sub` (borrowed), which must have been made from a space
 * with the same knobs (asserted); NULL lifts the restriction. */
void rlt_space_restrict(rlt_space *s, const rlt_space_subset *sub);

/* ---- features for learning (features.c, docs/features.md) -------------- */

#define RLT_FEATURE_LOOPS 16    /* loops described, outer first (padded with zeros) */
#define RLT_FEATURE_TENSORS 4   /* tensors described per loop: inputs in order, then the output */
#define RLT_FEATURE_PER_LOOP 6  /* log2 extent, depth, unroll, vectorize, parallel, reduce */
#define RLT_FEATURE_PER_ACCESS 4 /* log2 stride, log2 touched bytes, log2 reuse, staged */
#define RLT_FEATURE_LOOP_PART (RLT_FEATURE_LOOPS * (RLT_FEATURE_PER_LOOP + RLT_FEATURE_TENSORS * RLT_FEATURE_PER_ACCESS))
#define RLT_FEATURE_SUMMARY 12  /* the whole nest's: register tile, vector strides, cache traffic, parallel extent */

/* Length of a configuration's feature vector in this space: 2 per knob,
 * then RLT_FEATURE_LOOP_PART (RLT_FEATURE_LOOPS x (RLT_FEATURE_PER_LOOP +
 * RLT_FEATURE_TENSORS x RLT_FEATURE_PER_ACCESS)), then RLT_FEATURE_SUMMARY.
 * The same for every configuration of the space. */
int rlt_space_n_features(const rlt_space *s);

/* Fills `out` (rlt_space_n_features floats) for a valid configuration:
 * knob features (the choice's position in [0, 1] and log2 of its value) and
 * loop features of the nest it stands for. Fails for an invalid one. */
rlt_status rlt_space_features(const rlt_space *s, const rlt_config *c, float *out, rlt_diag *diag);

#endif /* RLT_SPACE_H */
