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
 *   dataset.c   state datasets: the walk that makes one, the file (format
 *               v1: write, read), the replay table an env looks states up in
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
 * the body than this. Bodies of hundreds of copies take seconds to compile,
 * which is what measuring a state and `rltune optimize` cost, and run no
 * faster: a register tile (rows x vectors x a few k) fits in 64, while the
 * 256 before let a policy unroll a 256-long j fully (3.8 s of gcc for
 * matmul 256^3, issue 30). */
#define ENV_MAX_UNROLL_COPIES 64

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

/* env_action_mask, also writing next_hash[a] = rlt_nest_hash of the nest
 * legal action a leads to (the state's own hash for actions that keep the
 * nest: cursor moves, stop); 0 for masked actions. */
void env_action_mask_hashes(const env_state *state, bool mask[RLT_ENV_N_ACTIONS],
                            uint64_t next_hash[RLT_ENV_N_ACTIONS]);

/* Cursor moves and stop leave the nest as it was: nothing to evaluate. */
bool env_action_changes_nest(int action);

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
/* Automatic packing (docs/env.md, "Packing"): with an accumulator tile that
 * holds a vectorized loop, each input that the tile's reduction loops sweep
 * and whose dim the vectorized axis alone indexes is packed along that dim
 * in blocks of the tile's width on that axis (`pack B j 16`: each k of the
 * tile reads 16 contiguous floats). A weight is packed once, untimed, so
 * always; another input is copied on every call, so only when the loops
 * outside the tile read it at least ENV_PACK_MIN_REUSE times and it holds
 * at least ENV_PACK_MIN_FLOATS floats (an L1 cache's worth: a smaller one
 * stays in cache strided). env_kernel_nest and env_kernel_schedule_build
 * include the packs; a state's nest never has them. */
#define ENV_PACK_MIN_REUSE 8
#define ENV_PACK_MIN_FLOATS 8192
int env_accumulator_loop(const rlt_nest *nest);
/* Takes out of a nest what the env places itself (the accumulator, the
 * packs), so that a kernel schedule the env printed starts its state. */
void env_nest_drop_placed(rlt_nest *nest);
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

/* ---- dataset.c: state datasets (docs/env.md, "State datasets") ----------- */

/* A state dataset read into memory: its header and a table of the states'
 * evaluations keyed by their state hash (rlt_nest_hash of the state's nest,
 * computed here when the file is read, so the file does not depend on the
 * hash function). Immutable once read; an env family owns one. */
typedef struct env_dataset env_dataset;

typedef struct env_dataset_entry {
    uint64_t hash;          /* the state's rlt_nest_hash */
    rlt_status status;      /* of its kernel: OK, BUILD_ERROR, ... */
    double gflops;          /* 0 unless OK */
    const char *message;    /* why it failed; "" when OK; owned by the dataset */
} env_dataset_entry;

/* Reads the dataset at `path` for the op `op` (borrowed; it must outlive
 * the dataset): every state's schedule is applied to the op and must give a
 * state the env can reach, whose kernel schedule is the one written (a file
 * of another rltune, whose env places accumulators otherwise, is refused).
 * Errors: IO_ERROR (unreadable), PARSE_ERROR naming the file and line (not
 * a state dataset, another version, a malformed line, a state twice, a
 * count that does not match), INVALID_ARGUMENT (a dataset of another op,
 * naming both), OUT_OF_MEMORY. Free with env_dataset_destroy. */
rlt_status env_dataset_load(const char *path, const rlt_op *op, env_dataset **out, rlt_diag *diag);
void env_dataset_destroy(env_dataset *ds); /* NULL ok */

/* The entry of the state with this hash, or NULL. */
const env_dataset_entry *env_dataset_find(const env_dataset *ds, uint64_t hash);

/* The header: the file's path as given, the thread count and one core's
 * peak the dataset was measured with, its number of states. */
const char *env_dataset_path(const env_dataset *ds);
int env_dataset_n_threads(const env_dataset *ds);
double env_dataset_peak_gflops(const env_dataset *ds);
int env_dataset_n_states(const env_dataset *ds);

/* ---- env.c, for dataset.c ------------------------------------------------ */

/* Evaluates the states `states[0 .. n-1]` (nests of env's op that the env
 * can express; their hash fields are set here) that env's family cache does
 * not hold, in one batch as rlt_env_prefetch does, and fills each state's
 * evaluation (gflops, eval_status, eval_message). The env must have been
 * reset (the peak settled). Errors: as rlt_env_prefetch's. */
rlt_status env_states_evaluate(rlt_env *env, env_state *states, int n, rlt_diag *diag);

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
