/*
 * env.h - the LoopTune environment's internals (the public API is in
 * include/rltune.h, the design in docs/env.md).
 *
 *   actions.c   the actions: names, the transition (env_action_apply), which
 *               the mask also uses, and the state's canonical schedule
 *   observe.c   the observation vector
 *   peak.c      one core's FP32 FMA peak: measured by a generated kernel
 *               through the builder and runner, cached per target
 *   env.c       the public API: families of envs sharing the op, workload
 *               and the cache of evaluated states; reset, step, observe
 *
 * A state is a value (env_state, about 10 KiB): the nest, the cursor, the
 * last actions and the evaluation of the nest. Every nest a state holds was
 * made by the schedule primitives (src/sched) from the op's default nest,
 * and uses only splits, reorders and the unroll / vectorize / parallel
 * annotations, so env_schedule_build can write it as a schedule that
 * replays to it exactly.
 */
#ifndef RLT_ENV_H
#define RLT_ENV_H

#include "measure/measure.h"
#include "rltune/env.h"
#include "sched/sched.h"

/* One state of an episode. Plain data: copied by assignment. */
typedef struct env_state {
    rlt_nest nest;
    uint64_t hash;                  /* rlt_nest_hash(&nest) */
    int cursor;                     /* loop position, 0 .. nest.n_loops-1 */
    int n_steps;                    /* steps taken this episode */
    int history[RLT_ENV_HISTORY];   /* last actions, most recent first; -1 = none */
    double gflops;                  /* of the nest; 0 unless eval_status is OK */
    rlt_status eval_status;
    char eval_message[256];
    bool is_done;
    bool mask[RLT_ENV_N_ACTIONS];   /* env_action_mask of this state */
} env_state;

/* ---- actions.c ---------------------------------------------------------- */

/* The env's own limit on unrolling (on top of the primitives' 4096): unroll
 * and merge are refused when the unrolled loops would make more copies of
 * the body than this. Bodies of thousands of copies take seconds to
 * compile, which is what measuring a state costs, and run no faster. */
#define ENV_MAX_UNROLL_COPIES 256

/* Carries out `action` on `in` (which must not be done): writes the next
 * state's nest, cursor and is_done into *out (everything else copied from
 * in; history, n_steps, hash and the evaluation are the caller's). Legal
 * actions return OK; an illegal one returns ILLEGAL_SCHEDULE with why (diag
 * may be NULL: no message is formatted then) and leaves *out as it was.
 * This is the one definition of legality: the mask calls it too. `in` and
 * `out` may not alias. */
rlt_status env_action_apply(const env_state *in, int action, env_state *out, rlt_diag *diag);

/* mask[a] = env_action_apply(state, a) succeeds; all false when done. */
void env_action_mask(const env_state *state, bool mask[RLT_ENV_N_ACTIONS]);

/* Automatic accumulation (docs/env.md, "Accumulation"): the env measures a
 * state's nest with the output accumulated in a local tile, where the
 * outermost loop whose inner spatial loops are all unrolled or vectorized
 * (at most ENV_MAX_TILE_FLOATS points) with a reduction loop inside it
 * holds the tile. env_accumulator_loop gives that loop's position, -1 for
 * the root (around the whole nest), or ENV_NO_ACCUMULATOR when no loop
 * qualifies (or cache_write refuses it); env_kernel_nest the nest measured
 * (`nest` plus the accumulator); env_kernel_schedule_build its schedule:
 * the state's schedule and a last `cache_write` line. */
#define ENV_MAX_TILE_FLOATS 256
#define ENV_NO_ACCUMULATOR (-2)
int env_accumulator_loop(const rlt_nest *nest);
void env_kernel_nest(const rlt_nest *nest, rlt_nest *out);
rlt_status env_kernel_schedule_build(const rlt_nest *nest, rlt_sched **out, rlt_diag *diag);

/* Whether the nest uses only what the env can express (splits, reorders,
 * unroll / vectorize / parallel; no fuse, cache_write, pack or pad) and has
 * at most RLT_ENV_MAX_LOOPS loops; if not, diag says what. */
rlt_status env_nest_check_expressible(const rlt_nest *nest, rlt_diag *diag);

/* The schedule that makes `nest` from the op's default nest: its splits in
 * the order the variables were made, one reorder (when the order differs),
 * then the annotations outer to inner. With merge_var >= 0, the schedule of
 * the nest where that variable's split is undone: its two halves, which
 * must be adjacent loops (outer first) and not both annotated, become one
 * loop with the annotation of the half that has one (merge, docs/env.md).
 * With merge_var < 0 the schedule replays to `nest` exactly (equal
 * rlt_nest_hash). The nest must be expressible. OUT_OF_MEMORY only. */
rlt_status env_schedule_build(const rlt_nest *nest, int merge_var, rlt_sched **out, rlt_diag *diag);

/* The loop tree with the cursor marked (rlt_env_tree's format). */
void env_tree_print(const rlt_nest *nest, int cursor, rlt_str *out);

/* ---- observe.c ---------------------------------------------------------- */

/* Writes RLT_ENV_OBS_LEN floats for `state`; gflops are divided by
 * peak_norm (> 0). */
void env_observe(const env_state *state, double peak_norm, float *out);

/* ---- peak.c ------------------------------------------------------------- */

/* One core's FP32 FMA peak in GFLOP/s for the compiler and flags of
 * `bopts`: read from the peak cache file in the compile cache directory
 * when there is one for this target, else measured (a generated kernel of
 * independent vector FMA chains, built and run by the builder and runner)
 * and written there. *out_was_cached (may be NULL) says which. Errors: the
 * builder's and runner's (BUILD_ERROR, RUN_ERROR, IO_ERROR, ...). */
rlt_status env_peak_get(const rlt_build_opts *bopts, double *out_gflops, bool *out_was_cached, rlt_diag *diag);

/* The same, always measured; nothing is read or written. */
rlt_status env_peak_measure(const rlt_build_opts *bopts, double *out_gflops, rlt_diag *diag);

/* The path of the peak cache file for `bopts` on this machine, into out
 * (PATH_MAX bytes). INVALID_ARGUMENT when no cache directory can be named. */
rlt_status env_peak_cache_path(const rlt_build_opts *bopts, char *out, rlt_diag *diag);

#endif /* RLT_ENV_H */
