/*
 * sched.h - schedule primitives and schedules.
 *
 * A primitive takes a nest (const) and writes a new one, after checking that
 * the step is legal; an illegal step leaves `out` untouched and says why. A
 * schedule is a list of steps with a text form, one step a line:
 *
 *     # rltune schedule v1
 *     split i 12               -> loops i.o (outer) and i.i (inner)
 *     reorder j.o i.o k i.i    -> these loops take the positions they hold, in this order
 *     fuse i.o j.o             -> loop i.o_j.o (adjacent loops, outer first)
 *     unroll i.i
 *     vectorize j.i            -> innermost, spatial, power-of-two extent
 *     parallel i.o_j.o [N]     -> N threads; 0 or absent: the run-time thread count
 *     cache_write i.o | root   -> accumulate the output tile inside i.o in registers
 *     pack B 1 16 [dim block ...] -> copy B into a blocked layout: dim (index or axis
 *                                 name) split by block, blocks innermost
 *     pad I                    -> copy I with zero borders: no bounds checks on it
 *
 * Full rules in docs/schedule.md.
 */
#ifndef RLT_SCHED_H
#define RLT_SCHED_H

#include "ir/ir.h"

#define RLT_SCHED_HEADER "# rltune schedule v1"
#define RLT_STEP_MAX_ARGS (RLT_MAX_LOOPS + 1)

typedef enum rlt_step_kind {
    RLT_STEP_SPLIT,
    RLT_STEP_REORDER,
    RLT_STEP_FUSE,
    RLT_STEP_UNROLL,
    RLT_STEP_VECTORIZE,
    RLT_STEP_PARALLEL,
    RLT_STEP_CACHE_WRITE,
    RLT_STEP_PACK,
    RLT_STEP_PAD,
    RLT_STEP_KIND_COUNT
} rlt_step_kind;

/* One step: its kind and its arguments as written (loop, tensor and dim
 * names, numbers). `line` is where it came from in a file (0 if built). */
typedef struct rlt_step {
    rlt_step_kind kind;
    int n_args;
    char args[RLT_STEP_MAX_ARGS][RLT_LOOP_NAME_MAX];
    int line;
} rlt_step;

typedef struct rlt_sched {
    int n_steps;
    int cap;
    rlt_step *steps; /* owned */
} rlt_sched;

const char *rlt_step_kind_name(rlt_step_kind kind); /* "split", ... */

/* rlt_sched_create, rlt_sched_destroy, rlt_sched_parse, rlt_sched_load,
 * rlt_sched_text and the typed steps rlt_sched_add_* are declared in
 * rltune/schedule.h. */
rlt_status rlt_sched_append(rlt_sched *s, const rlt_step *step, rlt_diag *diag);
/* Typed steps: what rlt_sched_add_* append (rltune/schedule.h), for code
 * that builds steps without a schedule (the env applies them to a nest as
 * it goes). Each checks its arguments' form: names that fit and hold no
 * space, numbers in range (INVALID_ARGUMENT); legality is the primitive's,
 * when the step is applied. kind of annotate: UNROLL, VECTORIZE or
 * PARALLEL (n_threads 0: the run-time count). */
rlt_status rlt_step_split(rlt_step *out, const char *loop, int64_t factor, rlt_diag *diag);
rlt_status rlt_step_reorder(rlt_step *out, int n_loops, const char *const *loops, rlt_diag *diag);
rlt_status rlt_step_fuse(rlt_step *out, const char *outer, const char *inner, rlt_diag *diag);
rlt_status rlt_step_annotate(rlt_step *out, rlt_step_kind kind, const char *loop, int n_threads, rlt_diag *diag);
rlt_status rlt_step_cache_write(rlt_step *out, const char *loop, rlt_diag *diag);
rlt_status rlt_step_pack(rlt_step *out, const char *tensor, int n_blocks, const int *dims, const int64_t *blocks,
                         rlt_diag *diag);
rlt_status rlt_step_pad(rlt_step *out, const char *tensor, rlt_diag *diag);

/* Parses one step line ("split i 16") and appends it. */
rlt_status rlt_sched_add(rlt_sched *s, const char *line, rlt_diag *diag);
/* Copies a schedule (NULL when out of memory). */
rlt_sched *rlt_sched_copy(const rlt_sched *s);

/* Appends the text form, header first, one step a line. */
void rlt_sched_print(const rlt_sched *s, rlt_str *out);
void rlt_step_print(const rlt_step *step, rlt_str *out);

/* Applies one step. On failure `out` is unchanged and diag says why. */
rlt_status rlt_step_apply(const rlt_nest *in, const rlt_step *step, rlt_nest *out, rlt_diag *diag);
/* Replays a schedule on the op's default nest. Errors name the step. */
rlt_status rlt_sched_apply(const rlt_sched *s, const rlt_op *op, rlt_nest *out, rlt_diag *diag);

/* The primitives, for callers that build nests directly. `in` and `out`
 * may be the same object. */
rlt_status rlt_sched_split(const rlt_nest *in, const char *loop, int64_t factor, rlt_nest *out, rlt_diag *diag);
rlt_status rlt_sched_reorder(const rlt_nest *in, int n, const char *const *loops, rlt_nest *out,
                             rlt_diag *diag);
rlt_status rlt_sched_fuse(const rlt_nest *in, const char *outer, const char *inner, rlt_nest *out,
                          rlt_diag *diag);
rlt_status rlt_sched_annotate(const rlt_nest *in, const char *loop, rlt_loop_kind kind, int n_threads,
                              rlt_nest *out, rlt_diag *diag);
/* loop == NULL or "root": around the whole nest. */
rlt_status rlt_sched_cache_write(const rlt_nest *in, const char *loop, rlt_nest *out, rlt_diag *diag);
rlt_status rlt_sched_pack(const rlt_nest *in, const char *tensor, int n_blocks, const int *dims,
                          const int64_t *blocks, rlt_nest *out, rlt_diag *diag);
rlt_status rlt_sched_pad(const rlt_nest *in, const char *tensor, rlt_nest *out, rlt_diag *diag);

/* Options for random schedules (property tests, random search). */
typedef struct rlt_random_sched_opts {
    int n_steps;            /* steps to try to add; 0 = 8 */
    int64_t max_unroll;     /* largest extent it unrolls; 0 = 8 */
    int max_unrolled_loops; /* 0 = 2 */
    int max_threads;        /* thread counts it writes for parallel loops: 0..max; 0 = 2 */
} rlt_random_sched_opts;

/* Builds a random legal schedule for `op` from `rng`: each step is drawn at
 * random (kind, loops, factors) and kept only if the primitive accepts it,
 * so every result replays. Same seed, same schedule. */
rlt_status rlt_sched_random(const rlt_op *op, rlt_rng *rng, const rlt_random_sched_opts *opts, rlt_sched **out,
                            rlt_diag *diag);

#endif /* RLT_SCHED_H */
