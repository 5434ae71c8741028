/*
 * imitate.h - LoopTune policies learnt from search (`rltune gen-demos`,
 * `rltune imitate`): demonstrations, the traces of the best kernels search
 * finds, and behaviour cloning of them into a blind policy (algo bc,
 * policy.h). docs/policy.md, "Imitation", says why and how well it works.
 *
 *   imitate.c    the demonstrations file, making demonstrations, cloning
 *
 * Making demonstrations, two stages:
 *   1. Search. On each of the search shapes, every expert runs from the
 *      op's default nest: greedy search (lookahead 1) and, when a guide
 *      policy is given, the beam that policy guides. The trace of each
 *      result goes into a library of traces (each distinct one once).
 *   2. Label. On each of the label shapes, every trace of the library is
 *      walked in a blind env (a trace with an action illegal on that shape
 *      does not apply to it) and the nests where the traces end are
 *      measured in one batch (rlt_env_reset_batch). The shape's
 *      demonstration is the fastest trace, unless a trace within `tie` of
 *      it does better over all label shapes (the largest geometric mean of
 *      its GFLOP/s over each shape's best, a trace that does not apply or
 *      fails counting 1/100): near-ties go to the trace that serves most
 *      shapes, so that the policy is shown one consistent way and not the
 *      noise between equals. A shape where no trace beats the start
 *      nest gets the empty trace (stop at once).
 * A trace found on one shape is thus tried on all of them, so a shape is
 * labelled with the best of many searches' answers, not only its own.
 *
 * Cloning: every demonstration is replayed in a blind env; each state on
 * the way is one sample (its observation, GFLOP/s input zeroed, and the
 * trace's next action), the state at the end one more (stop). The network
 * is trained on them by masked softmax cross-entropy (Adam, minibatches,
 * seeded), and the policy is blind: rollouts need no measurement until the
 * end.
 */
#ifndef RLT_POLICY_IMITATE_H
#define RLT_POLICY_IMITATE_H

#include "policy/policy.h"

#include <signal.h>

/* ---- demonstrations ----------------------------------------------------- */

typedef struct rlt_demo {
    char *op_spec;       /* canonical op spec; owned */
    double gflops;       /* the end state's measured GFLOP/s (what it was chosen by) */
    double start_gflops; /* the op's default nest's */
    int n_trace;         /* 0: stop at once */
    int trace[RLT_OPTIMIZE_MAX_TRACE];
} rlt_demo;

typedef struct rlt_demo_set {
    int n;
    rlt_demo *demos; /* owned */
    char *about;     /* how they were made: one line, without "# "; owned, may be NULL */
} rlt_demo_set;

/* Frees what the set owns and zeroes it. NULL and a zeroed set are fine. */
void rlt_demo_set_free(rlt_demo_set *s);

/* A demonstrations file (docs/formats.md, "Demonstrations"):
 *     # rltune demos v1
 *     # ABOUT
 *     matmul:M=64,N=80,K=128<TAB>183.2<TAB>5.1<TAB>down unroll swap_down
 * one demonstration a line: op spec, GFLOP/s of the end state and of the
 * start, the actions by name separated by single spaces ("-" for none). '#'
 * lines after the header are comments; the first one is the about line.
 * Written atomically. Errors: IO_ERROR naming the file, INVALID_ARGUMENT
 * (an empty set, an about with a newline), OUT_OF_MEMORY. */
rlt_status rlt_demo_set_save(const rlt_demo_set *s, const char *path, rlt_diag *diag);

/* Reads a demonstrations file into *out (zeroed first). Errors: IO_ERROR,
 * PARSE_ERROR naming the file and line (no header, another version, a line
 * without four tab-separated fields, an op spec rlt_op_parse refuses, a
 * GFLOP/s that is not a finite number >= 0, an unknown action, more than
 * RLT_OPTIMIZE_MAX_TRACE actions, no demonstration at all), OUT_OF_MEMORY.
 * Whether a trace is legal on its op is the replay's to say. */
rlt_status rlt_demo_set_load(const char *path, rlt_demo_set *out, rlt_diag *diag);

/* Progress of long runs: one line of text (no newline) at each step. */
typedef void (*rlt_imitate_progress_fn)(void *ctx, const char *line);

#define RLT_DEMOS_DEFAULT_STEPS 16
#define RLT_DEMOS_DEFAULT_BUDGET_S 60.0
#define RLT_DEMOS_DEFAULT_GUIDE_BEAM 2
#define RLT_DEMOS_DEFAULT_TIE 0.02

typedef struct rlt_demo_gen_opts {
    const rlt_policy *guide; /* may be NULL: no guided beam */
    int guide_beam;          /* its width, 2..RLT_ENV_SEARCH_MAX_BEAM; 0 = 2 */
    bool no_greedy;          /* leave greedy search out (then a guide is required) */
    int max_steps;           /* a trace's actions, 1..RLT_OPTIMIZE_MAX_TRACE; 0 = 16 */
    double budget_s;         /* each search's time budget, > 0; 0 = 60 */
    double tie;              /* in [0, 1); 0 = 0.02; negative: none (the fastest trace always) */
    rlt_env_opts env;        /* how states are measured (one env family per shape) */
    rlt_imitate_progress_fn progress; /* may be NULL */
    void *progress_ctx;
    volatile const sig_atomic_t *stop; /* may be NULL; non-zero: stop after the shape in flight (below) */
} rlt_demo_gen_opts;

/* Makes demonstrations (stages above): searches on search[0 .. n_search-1],
 * labels label[0 .. n_label-1] (op specs; a shape may be in both), into
 * *out (zeroed first), one demonstration per label shape in their order,
 * and `about` saying how. When *stop becomes non-zero the stage in flight
 * ends after its current shape: stopped while searching, no shape is
 * labelled; while labelling, the shapes labelled so far are the set (so
 * out->n may be below n_label, even 0; about says how many). Errors:
 * INVALID_ARGUMENT (an option out of range, no shape, no expert, no
 * search that beat its start), the op specs' errors, the env's
 * (measurement that cannot work at all; a kernel that fails is a result,
 * not an error), OUT_OF_MEMORY. */
rlt_status rlt_demos_make(const char *const *search, int n_search, const char *const *label, int n_label,
                          const rlt_demo_gen_opts *opts, rlt_demo_set *out, rlt_diag *diag);

/* ---- behaviour cloning -------------------------------------------------- */

#define RLT_IMITATE_DEFAULT_EPOCHS 200
#define RLT_IMITATE_DEFAULT_BATCH 64
#define RLT_IMITATE_DEFAULT_LR 1e-3

typedef struct rlt_imitate_opts {
    int n_hidden;       /* 0: the policy defaults (256, 128) */
    const int *hidden;
    int epochs;         /* passes over the samples, 1..100000; 0 = 200 */
    int batch;          /* minibatch rows, 1..4096; 0 = 64 */
    double lr;          /* Adam's, in (0, 1]; 0 = 1e-3 */
    uint64_t seed;      /* the network's weights and the minibatches */
    int max_steps;      /* the rollout length the policy is for: a demonstration longer is refused; 0 = 16 */
    rlt_imitate_progress_fn progress; /* may be NULL: called after each tenth of the epochs */
    void *progress_ctx;
} rlt_imitate_opts;

typedef struct rlt_imitate_report {
    int n_demos;
    int n_samples;       /* states the demonstrations pass through, stops included */
    double loss_first;   /* mean cross-entropy over the samples, before training */
    double loss_last;    /* and after */
    double accuracy;     /* samples whose demonstrated action is the policy's greedy choice */
    int n_reproduced;    /* demonstrations the policy's blind greedy walk repeats action for action */
} rlt_imitate_report;

/* Trains a new bc policy on the demonstrations. Every trace is replayed
 * from its op's default nest; one that is illegal there, or longer than
 * max_steps, fails the call (INVALID_ARGUMENT naming the demonstration and
 * the action). Errors also: INVALID_ARGUMENT (an option out of range),
 * OUT_OF_MEMORY. The same demonstrations and options give bit-identical
 * networks (OpenBLAS set to one thread). `report` may be NULL. */
rlt_status rlt_policy_imitate(const rlt_demo_set *demos, const rlt_imitate_opts *opts, rlt_policy **out,
                              rlt_imitate_report *report, rlt_diag *diag);

#endif /* RLT_POLICY_IMITATE_H */
