/* Unit tests of the LoopTune environment (src/env, include/rltune.h's
 * rlt_env_*, docs/env.md):
 *  - every action on hand-built loop trees: the printed tree with the
 *    cursor after the action (golden, inline below), and every refusal with
 *    its message, the env left as it was;
 *  - the mask against legality over random states of five ops: an unmasked
 *    action is accepted, a masked one refused, and each state's schedule
 *    replays to its nest;
 *  - random action sequences give kernels that build, run and match the
 *    reference (measured in batches at -O1), also through the env's own
 *    measuring evaluator;
 *  - the observation: length, offsets and version as documented, the
 *    features of a known nest;
 *  - clones are independent and share the cache; cached states are not
 *    evaluated again; evaluator failures; the step limit; the API's errors;
 *  - the peak: measured, cached per target in its file and read back;
 *  - out of memory at every allocation of create / reset / step / clone.
 *
 * Most tests score states with a fake evaluator (a number from the nest's
 * hash), so only the tests that say so compile anything. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env/env.h"

#include "../common/leaks.h"
#include "../common/tmp.h"

/* ---- helpers ------------------------------------------------------------ */

typedef struct fake_eval {
    int n_calls;
    rlt_status fail_with;   /* non-OK: the evaluator itself fails */
    rlt_status kernel_status; /* the status of every kernel it scores */
} fake_eval;

static rlt_status fake_evaluate(void *ctx, const rlt_env_eval_request *req, rlt_env_eval_result *out,
                                rlt_diag *diag)
{
    fake_eval *f = ctx;
    f->n_calls++;
    cr_assert_not_null(req->schedule);
    /* the kernel is the state's nest and the env's accumulator */
    rlt_nest state = *req->nest, kernel;
    state.acc_var = RLT_ACC_NONE;
    cr_assert_eq(req->nest_hash, rlt_nest_hash(&state));
    env_kernel_nest(&state, &kernel);
    cr_assert_eq(rlt_nest_hash(&kernel), rlt_nest_hash(req->nest));
    if (f->fail_with != RLT_STATUS_OK) return rlt_fail(diag, f->fail_with, "the fake evaluator is broken");
    out->status = f->kernel_status;
    out->gflops = 1.0 + (double)(req->nest_hash % 1000) / 100.0;
    if (f->kernel_status != RLT_STATUS_OK) snprintf(out->message, sizeof out->message, "fake failure");
    return RLT_STATUS_OK;
}

#define FAKE_PEAK 100.0

static rlt_env *make_env(const char *spec, fake_eval *f)
{
    rlt_env_opts o = {.peak_gflops = FAKE_PEAK, .evaluate = fake_evaluate, .evaluate_ctx = f};
    rlt_env *env = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_create(spec, &o, &env, &d), RLT_STATUS_OK, "%s: %s", spec, d.message);
    return env;
}

static void step_ok(rlt_env *env, int action)
{
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_step(env, action, NULL, NULL, &d), RLT_STATUS_OK, "%s: %s", rlt_env_action_name(action),
                 d.message);
}

/* An env of `spec` at the nest `sched` makes, the cursor on loop `cursor`. */
static rlt_env *env_at(const char *spec, const char *sched, int cursor, fake_eval *f)
{
    rlt_env *env = make_env(spec, f);
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_reset_schedule(env, sched, &d), RLT_STATUS_OK, "%s: %s", sched, d.message);
    for (int i = 0; i < cursor; i++) step_ok(env, RLT_ENV_ACTION_DOWN);
    cr_assert_eq(rlt_env_cursor(env), cursor);
    return env;
}

static void assert_tree(const rlt_env *env, const char *want, const char *what)
{
    char *got = rlt_env_tree(env);
    cr_assert_not_null(got);
    cr_assert_str_eq(got, want, "%s: tree\n%s\nwanted\n%s", what, got, want);
    rlt_free(got);
}

/* The nest's schedule replays to the same nest. */
static void assert_schedule_replays(const rlt_env *env)
{
    char *text = rlt_env_schedule(env);
    cr_assert_not_null(text);
    const rlt_nest *nest = rlt_env_nest(env);
    rlt_sched *s = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_sched_parse(text, "env", &s, &d), RLT_STATUS_OK, "%s\n%s", d.message, text);
    rlt_nest replayed;
    cr_assert_eq(rlt_sched_apply(s, nest->op, &replayed, &d), RLT_STATUS_OK, "%s\n%s", d.message, text);
    rlt_nest kernel;
    env_kernel_nest(nest, &kernel);
    cr_assert_eq(rlt_nest_hash(&replayed), rlt_nest_hash(&kernel), "schedule does not replay to the kernel:\n%s", text);
    cr_assert_eq(rlt_env_state_hash(env), rlt_nest_hash(nest));
    rlt_sched_destroy(s);
    rlt_free(text);
}

/* ---- names -------------------------------------------------------------- */

Test(env, action_names_round_trip)
{
    static const char *const want[RLT_ENV_N_ACTIONS] = {
        "up",        "down",     "swap_up",   "swap_down", "split_2",  "split_4",  "split_8",   "split_16", "split_32",
        "split_64", "split_128", "split_256", "merge",     "unroll",   "vectorize", "parallel", "stop"};
    cr_assert_eq(RLT_ENV_N_ACTIONS, 17);
    for (int a = 0; a < RLT_ENV_N_ACTIONS; a++) {
        cr_assert_str_eq(rlt_env_action_name(a), want[a]);
        cr_assert_eq(rlt_env_action_from_name(want[a]), a);
    }
    cr_assert_str_eq(rlt_env_action_name(-1), "unknown");
    cr_assert_str_eq(rlt_env_action_name(RLT_ENV_N_ACTIONS), "unknown");
    cr_assert_eq(rlt_env_action_from_name("split_3"), -1);
    cr_assert_eq(rlt_env_action_from_name("Up"), -1);
    cr_assert_eq(rlt_env_action_from_name(NULL), -1);
}

/* ---- every action on hand-built trees ----------------------------------- */

typedef struct golden_case {
    const char *name;
    const char *op;
    const char *sched;  /* the hand-built tree */
    int cursor;
    int action;
    const char *tree;   /* expected tree after the action; NULL: refused */
    const char *error;  /* with this in the message */
} golden_case;

#define MM "matmul:M=8,N=6,K=4"
#define MM16 "matmul:M=8,N=16,K=4"
#define BODY "C[i,j] += A[i,k] * B[k,j]\n"

static const golden_case golden_cases[] = {
    /* cursor moves */
    {"up", MM, "", 1, RLT_ENV_ACTION_UP,
     "> for i in 0..8\n"
     "    for j in 0..6\n"
     "      for k in 0..4  reduce\n"
     "        " BODY, NULL},
    {"down", MM, "", 1, RLT_ENV_ACTION_DOWN,
     "  for i in 0..8\n"
     "    for j in 0..6\n"
     ">     for k in 0..4  reduce\n"
     "        " BODY, NULL},
    {"up at the top", MM, "", 0, RLT_ENV_ACTION_UP, NULL, "up: the cursor is on the outermost loop 'i'"},
    {"down at the bottom", MM, "", 2, RLT_ENV_ACTION_DOWN, NULL, "down: the cursor is on the innermost loop 'k'"},
    /* swaps: the loops trade places, the cursor goes with its loop */
    {"swap_up", MM, "", 2, RLT_ENV_ACTION_SWAP_UP,
     "  for i in 0..8\n"
     ">   for k in 0..4  reduce\n"
     "      for j in 0..6\n"
     "        " BODY, NULL},
    {"swap_down", MM, "", 0, RLT_ENV_ACTION_SWAP_DOWN,
     "  for j in 0..6\n"
     ">   for i in 0..8\n"
     "      for k in 0..4  reduce\n"
     "        " BODY, NULL},
    {"swap_up at the top", MM, "", 0, RLT_ENV_ACTION_SWAP_UP, NULL, "swap_up: the cursor is on the outermost loop"},
    {"swap_down at the bottom", MM, "", 2, RLT_ENV_ACTION_SWAP_DOWN, NULL, "the cursor is on the innermost loop 'k'"},
    {"swap_down over a vectorized loop", MM16, "split j 8\nreorder i j.o k j.i\nvectorize j.i", 2,
     RLT_ENV_ACTION_SWAP_DOWN, NULL, "vectorized loop 'j.i' must be innermost, but 'k' is inside it"},
    {"swap_up of a parallel loop", MM, "parallel j", 1, RLT_ENV_ACTION_SWAP_UP,
     "> parallel j in 0..6 threads=run-time\n"
     "    for i in 0..8\n"
     "      for k in 0..4  reduce\n"
     "        " BODY, NULL},
    /* splits: the cursor stays on the outer half; tails are guarded */
    {"split_2", MM, "", 0, RLT_ENV_ACTION_SPLIT_2,
     "> for i.o in 0..4\n"
     "    for i.i in 0..2\n"
     "      for j in 0..6\n"
     "        for k in 0..4  reduce\n"
     "          " BODY, NULL},
    {"split_4 with a tail", MM, "", 1, RLT_ENV_ACTION_SPLIT_4,
     "  for i in 0..8\n"
     ">   for j.o in 0..2  (tail: j < 6)\n"
     "      for j.i in 0..4\n"
     "        for k in 0..4  reduce\n"
     "          " BODY, NULL},
    {"split_2 of a reduction", MM, "", 2, RLT_ENV_ACTION_SPLIT_2,
     "  for i in 0..8\n"
     "    for j in 0..6\n"
     ">     for k.o in 0..2  reduce\n"
     "        for k.i in 0..2  reduce\n"
     "          " BODY, NULL},
    {"split_2 of a vectorized loop keeps the inner half vectorized", MM16,
     "split j 8\nreorder i j.o k j.i\nvectorize j.i", 3, RLT_ENV_ACTION_SPLIT_2,
     "  for i in 0..8\n"
     "    for j.o in 0..2\n"
     "      for k in 0..4  reduce\n"
     ">       for j.i.o in 0..4\n"
     "          vectorize j.i.i in 0..2\n"
     "            " BODY, NULL},
    {"split_4 of a parallel loop keeps the outer half parallel", MM, "parallel i", 0, RLT_ENV_ACTION_SPLIT_4,
     "> parallel i.o in 0..2 threads=run-time\n"
     "    for i.i in 0..4\n"
     "      for j in 0..6\n"
     "        for k in 0..4  reduce\n"
     "          " BODY, NULL},
    {"split by the extent", MM, "", 0, RLT_ENV_ACTION_SPLIT_8, NULL,
     "split_8: loop 'i' has extent 8; the factor must be smaller"},
    {"split past the extent", MM, "", 2, RLT_ENV_ACTION_SPLIT_256, NULL,
     "split_256: loop 'k' has extent 4; the factor must be smaller"},
    /* merge: undoes a split of adjacent halves; the cursor on the merged loop */
    {"merge from the outer half of a tail split", MM, "split i 3", 0, RLT_ENV_ACTION_MERGE,
     "> for i in 0..8\n"
     "    for j in 0..6\n"
     "      for k in 0..4  reduce\n"
     "        " BODY, NULL},
    {"merge from the inner half", MM, "split i 3", 1, RLT_ENV_ACTION_MERGE,
     "> for i in 0..8\n"
     "    for j in 0..6\n"
     "      for k in 0..4  reduce\n"
     "        " BODY, NULL},
    {"merge keeps later splits and the order", MM, "split i 2\nsplit j 3\nreorder j.o i.o i.i j.i k\nunroll j.i", 2,
     RLT_ENV_ACTION_MERGE,
     "  for j.o in 0..2\n"
     ">   for i in 0..8\n"
     "      unroll j.i in 0..3\n"
     "        for k in 0..4  reduce\n"
     "          " BODY, NULL},
    {"merge of a parallel outer half", MM, "split i 4\nparallel i.o", 0, RLT_ENV_ACTION_MERGE,
     "> parallel i in 0..8 threads=run-time\n"
     "    for j in 0..6\n"
     "      for k in 0..4  reduce\n"
     "        " BODY, NULL},
    {"merge of an unrolled inner half", MM, "split k 2\nunroll k.i", 3, RLT_ENV_ACTION_MERGE,
     "  for i in 0..8\n"
     "    for j in 0..6\n"
     ">     unroll k in 0..4  reduce\n"
     "        " BODY, NULL},
    {"merge of an axis", MM, "", 1, RLT_ENV_ACTION_MERGE, NULL, "merge: loop 'j' is not a half of a split"},
    {"merge of halves apart", MM, "split i 2\nreorder i.o j i.i", 0, RLT_ENV_ACTION_MERGE, NULL,
     "merge: 'i.i' must be the loop directly inside 'i.o' to merge them back into 'i'"},
    {"merge of halves in the wrong order", MM, "split i 2\nreorder i.i i.o", 1, RLT_ENV_ACTION_MERGE, NULL,
     "'i.i' must be the loop directly inside 'i.o'"},
    {"merge with a half split again", MM, "split i 4\nsplit i.i 2", 0, RLT_ENV_ACTION_MERGE, NULL,
     "merge: 'i.i', the other half of i's split, was split again: merge its halves first"},
    {"merge of two annotated halves", MM, "split i 4\nparallel i.o\nunroll i.i", 0, RLT_ENV_ACTION_MERGE, NULL,
     "merge: both halves of 'i' are annotated (parallel, unrolled)"},
    {"merge the primitives refuse: too long to unroll", "matmul:M=512,N=4,K=4", "split i 256\nunroll i.i", 1,
     RLT_ENV_ACTION_MERGE, NULL, "unrolled loop 'i' has extent 512, more than 256: split it first"},
    /* annotations */
    {"unroll", MM, "", 2, RLT_ENV_ACTION_UNROLL,
     "  for i in 0..8\n"
     "    for j in 0..6\n"
     ">     unroll k in 0..4  reduce\n"
     "        " BODY, NULL},
    {"unroll twice", MM, "unroll k", 2, RLT_ENV_ACTION_UNROLL, NULL, "unroll: loop 'k' is already unrolled"},
    {"unroll a parallel loop", MM, "parallel i", 0, RLT_ENV_ACTION_UNROLL, NULL,
     "unroll i: the loop is already marked parallel"},
    {"unroll too long", "matmul:M=512,N=4,K=4", "", 0, RLT_ENV_ACTION_UNROLL, NULL,
     "would make 512 copies of the body, more than the env's 64"},
    {"unroll too many copies", "matmul:M=32,N=16,K=4", "unroll j", 0, RLT_ENV_ACTION_UNROLL, NULL,
     "would make 512 copies of the body, more than the env's 64"},
    /* a 256-long loop unrolled fully took seconds of gcc (issue 30) */
    {"unroll a 256-long loop", "matmul:M=4,N=256,K=4", "", 1, RLT_ENV_ACTION_UNROLL, NULL,
     "unroll: the unrolled loops would make 256 copies of the body, more than the env's 64"},
    {"unroll to 128 copies", "matmul:M=8,N=16,K=4", "unroll j", 0, RLT_ENV_ACTION_UNROLL, NULL,
     "would make 128 copies of the body, more than the env's 64"},
    {"unroll to 64 copies", "matmul:M=4,N=16,K=4", "unroll j", 0, RLT_ENV_ACTION_UNROLL,
     "> unroll i in 0..4\n"
     "    unroll j in 0..16\n"
     "      for k in 0..4  reduce\n"
     "        " BODY, NULL},
    {"merge into too many copies", "matmul:M=8,N=64,K=4", "split j 8\nunroll j.i\nunroll i", 2,
     RLT_ENV_ACTION_MERGE, NULL, "merge: the unrolled loops would make 512 copies"},
    {"vectorize", MM16, "split j 8\nreorder i j.o k j.i", 3, RLT_ENV_ACTION_VECTORIZE,
     "  for i in 0..8\n"
     "    for j.o in 0..2\n"
     "      for k in 0..4  reduce\n"
     ">       vectorize j.i in 0..8\n"
     "          " BODY, NULL},
    {"vectorize an outer loop", MM16, "", 0, RLT_ENV_ACTION_VECTORIZE, NULL,
     "vectorized loop 'i' must be innermost, but 'j' is inside it"},
    {"vectorize a reduction", MM16, "", 2, RLT_ENV_ACTION_VECTORIZE, NULL, "vectorized loop 'k' is a reduction"},
    {"vectorize 6 lanes", MM, "reorder i k j", 2, RLT_ENV_ACTION_VECTORIZE, NULL,
     "the vector width must be a power of two from 2 to 64"},
    {"vectorize twice", MM16, "reorder i k j\nvectorize j", 2, RLT_ENV_ACTION_VECTORIZE, NULL,
     "vectorize: loop 'j' is already vectorized"},
    {"parallel", MM, "", 0, RLT_ENV_ACTION_PARALLEL,
     "> parallel i in 0..8 threads=run-time\n"
     "    for j in 0..6\n"
     "      for k in 0..4  reduce\n"
     "        " BODY, NULL},
    {"parallel of a reduction", MM, "", 2, RLT_ENV_ACTION_PARALLEL, NULL, "parallel loop 'k' is a reduction"},
    {"a second parallel loop", MM, "parallel i", 1, RLT_ENV_ACTION_PARALLEL, NULL,
     "loops 'i' and 'j' are both parallel"},
    {"parallel twice", MM, "parallel i", 0, RLT_ENV_ACTION_PARALLEL, NULL, "parallel: loop 'i' is already parallel"},
    /* stop changes nothing but ends the episode */
    {"stop", MM, "unroll k", 1, RLT_ENV_ACTION_STOP,
     "  for i in 0..8\n"
     ">   for j in 0..6\n"
     "      unroll k in 0..4  reduce\n"
     "        " BODY, NULL},
};

Test(env, every_action_on_hand_built_trees)
{
    for (size_t i = 0; i < RLT_ARRAY_LEN(golden_cases); i++) {
        const golden_case *g = &golden_cases[i];
        fake_eval f = {0};
        rlt_env *env = env_at(g->op, g->sched, g->cursor, &f);
        char *before = rlt_env_tree(env);
        uint64_t hash_before = rlt_env_state_hash(env);
        bool mask[RLT_ENV_N_ACTIONS];
        rlt_env_action_mask(env, mask);
        rlt_diag d = {0};
        double reward = -1;
        bool is_done = true;
        rlt_status st = rlt_env_step(env, g->action, &reward, &is_done, &d);
        if (g->tree) {
            cr_assert_eq(st, RLT_STATUS_OK, "%s: %s", g->name, d.message);
            cr_assert(mask[g->action], "%s: legal but masked", g->name);
            assert_tree(env, g->tree, g->name);
            cr_assert_eq(is_done, g->action == RLT_ENV_ACTION_STOP, "%s", g->name);
            cr_assert_eq(rlt_env_n_steps(env), g->cursor + 1, "%s", g->name);
            if (!is_done) assert_schedule_replays(env);
        } else {
            cr_assert_eq(st, RLT_STATUS_ILLEGAL_SCHEDULE, "%s: got %s", g->name, rlt_status_str(st));
            cr_assert(!mask[g->action], "%s: illegal but not masked", g->name);
            cr_assert_not_null(strstr(d.message, g->error), "%s: message '%s' lacks '%s'", g->name, d.message,
                               g->error);
            cr_assert_eq(reward, 0.0, "%s", g->name);
            cr_assert(!is_done, "%s", g->name);
            assert_tree(env, before, g->name);
            cr_assert_eq(rlt_env_state_hash(env), hash_before, "%s", g->name);
            cr_assert_eq(rlt_env_n_steps(env), g->cursor, "%s", g->name);
        }
        rlt_free(before);
        rlt_env_destroy(env);
    }
}

Test(env, split_then_merge_is_the_state_it_started_from)
{
    fake_eval f = {0};
    rlt_env *env = env_at("matmul:M=13,N=17,K=9", "", 0, &f);
    uint64_t start = rlt_env_state_hash(env);
    double g0 = rlt_env_gflops(env);
    for (int a = RLT_ENV_ACTION_SPLIT_2; a <= RLT_ENV_ACTION_SPLIT_8; a++) {
        double r1 = 0, r2 = 0;
        cr_assert_eq(rlt_env_step(env, a, &r1, NULL, NULL), RLT_STATUS_OK);
        cr_assert_neq(rlt_env_state_hash(env), start);
        cr_assert_eq(rlt_env_step(env, RLT_ENV_ACTION_MERGE, &r2, NULL, NULL), RLT_STATUS_OK);
        cr_assert_eq(rlt_env_state_hash(env), start, "%s then merge", rlt_env_action_name(a));
        cr_assert_float_eq(r1 + r2, 0.0, 1e-12);
        cr_assert_eq(rlt_env_gflops(env), g0);
    }
    rlt_env_destroy(env);
}

Test(env, split_past_the_loop_limit_is_masked)
{
    /* 13 splits of i's outer half: 3 + 13 = 16 loops, the most described */
    char sched[1024] = "split i 2\n";
    char name[64] = "i";
    for (int s = 1; s < 13; s++) {
        strcat(name, ".o");
        snprintf(sched + strlen(sched), sizeof sched - strlen(sched), "split %s 2\n", name);
    }
    fake_eval f = {0};
    rlt_env *env = env_at("matmul:M=65536,N=8,K=8", sched, 0, &f);
    cr_assert_eq(rlt_env_nest(env)->n_loops, RLT_ENV_MAX_LOOPS);
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_step(env, RLT_ENV_ACTION_SPLIT_2, NULL, NULL, &d), RLT_STATUS_ILLEGAL_SCHEDULE);
    cr_assert_not_null(strstr(d.message, "the nest has 16 loops already"), "%s", d.message);
    bool mask[RLT_ENV_N_ACTIONS];
    rlt_env_action_mask(env, mask);
    for (int a = RLT_ENV_ACTION_SPLIT_2; a <= RLT_ENV_ACTION_SPLIT_256; a++) cr_assert(!mask[a]);
    cr_assert(mask[RLT_ENV_ACTION_MERGE]);
    rlt_env_destroy(env);
}

/* ---- masks against legality, over random states ------------------------- */

static const char *const walk_ops[] = {
    "matmul:M=24,N=20,K=12",
    "batch_matmul:B=2,M=5,N=9,K=7",
    "dense:M=6,N=20,K=10,bias=1,relu=1",
    "conv2d:N=1,C=3,H=9,W=8,K=4,R=3,S=3,stride=2,pad=1",
    "expr:Y[i,j] = max(X[i,j] * 2.5 - 1, min(X[i-1,j], Z[j,i])) + 0.25|i=6,j=21",
};

/* Checks every action of env's state against the mask (on a scratch clone)
 * and the observation's mask block. */
static void check_mask(const rlt_env *env, rlt_env *scratch)
{
    bool mask[RLT_ENV_N_ACTIONS];
    rlt_env_action_mask(env, mask);
    float obs[RLT_ENV_OBS_LEN];
    cr_assert_eq(rlt_env_observe(env, obs, RLT_ENV_OBS_LEN, NULL), RLT_STATUS_OK);
    for (int k = 0; k < RLT_ENV_OBS_LEN; k++) cr_assert(isfinite(obs[k]), "observation[%d] = %g", k, obs[k]);
    for (int a = 0; a < RLT_ENV_N_ACTIONS; a++) {
        cr_assert_eq(obs[RLT_ENV_OBS_MASK + a], mask[a] ? 1.0f : 0.0f);
        rlt_env_restore(scratch, env);
        rlt_diag d = {0};
        rlt_status st = rlt_env_step(scratch, a, NULL, NULL, &d);
        if (mask[a]) {
            cr_assert_eq(st, RLT_STATUS_OK, "%s unmasked but refused: %s", rlt_env_action_name(a), d.message);
        } else {
            cr_assert_eq(st, RLT_STATUS_ILLEGAL_SCHEDULE, "%s masked but %s", rlt_env_action_name(a),
                         rlt_status_str(st));
            cr_assert(d.message[0], "%s refused without a message", rlt_env_action_name(a));
        }
    }
}

/* A random legal action other than stop (there always is one: a nest has a
 * loop to split, annotate or move to). */
static int random_action(const rlt_env *env, rlt_rng *rng)
{
    bool mask[RLT_ENV_N_ACTIONS];
    rlt_env_action_mask(env, mask);
    int legal[RLT_ENV_N_ACTIONS], n = 0;
    for (int a = 0; a < RLT_ENV_ACTION_STOP; a++)
        if (mask[a]) legal[n++] = a;
    cr_assert_gt(n, 0);
    return legal[rlt_rng_below(rng, (uint64_t)n)];
}

/* Runs `n_walks` random walks of `n_steps` on `spec`, checking the mask at
 * every state; the nests the walks end at go to out_nests (may be NULL). */
static void random_walks(const char *spec, int n_walks, int n_steps, uint64_t seed, bool is_checked,
                         rlt_nest *out_nests)
{
    fake_eval f = {0};
    rlt_env *env = make_env(spec, &f);
    rlt_env *scratch = NULL;
    cr_assert_eq(rlt_env_clone(env, &scratch, NULL), RLT_STATUS_OK);
    rlt_rng rng;
    rlt_rng_seed(&rng, seed);
    for (int w = 0; w < n_walks; w++) {
        cr_assert_eq(rlt_env_reset(env, NULL), RLT_STATUS_OK);
        for (int s = 0; s < n_steps; s++) {
            if (is_checked) {
                check_mask(env, scratch);
                assert_schedule_replays(env);
            }
            step_ok(env, random_action(env, &rng));
        }
        if (is_checked) assert_schedule_replays(env);
        if (out_nests) out_nests[w] = *rlt_env_nest(env);
    }
    rlt_env_destroy(scratch);
    rlt_env_destroy(env);
}

Test(env, masks_agree_with_legality_over_random_states)
{
    for (size_t i = 0; i < RLT_ARRAY_LEN(walk_ops); i++) random_walks(walk_ops[i], 6, 30, 1000 + i, true, NULL);
}

/* ---- random action sequences give correct kernels ----------------------- */

Test(env, random_action_sequences_give_correct_kernels, .timeout = 600)
{
    enum { N_WALKS = 6 };
    rlt_build_opts bopts = {.cflags = "-O1 -march=native", .n_parallel = 2};
    rlt_run_opts ropts = {.repeat = 1, .min_repeat_ms = 1, .number = 1};
    for (size_t i = 0; i < RLT_ARRAY_LEN(walk_ops); i++) {
        rlt_nest nests[N_WALKS];
        random_walks(walk_ops[i], N_WALKS, 12, 2000 + i, false, nests);
        rlt_op *op = NULL;
        rlt_diag d = {0};
        cr_assert_eq(rlt_op_parse(walk_ops[i], &op, &d), RLT_STATUS_OK, "%s", d.message);
        for (int w = 0; w < N_WALKS; w++) nests[w].op = op; /* the same op, parsed here */
        rlt_workload *wl = NULL;
        cr_assert_eq(rlt_workload_create(op, &bopts, 7, &wl, &d), RLT_STATUS_OK, "%s", d.message);
        rlt_run_result r[N_WALKS];
        cr_assert_eq(rlt_measure_nests(wl, &bopts, &ropts, N_WALKS, nests, r, &d), RLT_STATUS_OK, "%s", d.message);
        for (int w = 0; w < N_WALKS; w++) {
            rlt_str tree;
            rlt_str_init(&tree);
            rlt_nest_print(&nests[w], &tree);
            cr_assert(r[w].status == RLT_STATUS_OK && r[w].is_correct, "%s, walk %d: %s (%s)\n%s", walk_ops[i], w,
                      rlt_status_str(r[w].status), r[w].message, tree.data);
            rlt_str_free(&tree);
        }
        rlt_workload_destroy(wl);
        rlt_op_destroy(op);
    }
}

Test(env, measured_episode_every_state_correct_and_cached, .timeout = 600)
{
    rlt_env_opts o = {.cflags = "-O1 -march=native", .repeat = 1, .min_repeat_ms = 1, .peak_gflops = FAKE_PEAK};
    rlt_env *env = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_create("matmul:M=20,N=24,K=12", &o, &env, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_env_reset(env, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_rng rng;
    rlt_rng_seed(&rng, 42);
    const char *message = NULL;
    for (int s = 0; s < 8; s++) {
        int a = random_action(env, &rng);
        cr_assert_eq(rlt_env_step(env, a, NULL, NULL, &d), RLT_STATUS_OK, "%s", d.message);
        cr_assert_eq(rlt_env_eval_status(env, &message), RLT_STATUS_OK, "after %s: %s", rlt_env_action_name(a),
                     message);
        cr_assert_gt(rlt_env_gflops(env), 0.0);
    }
    rlt_env_stats st;
    rlt_env_stats_get(env, &st);
    cr_assert_leq(st.n_evaluations, 9);
    cr_assert_eq(st.n_evaluations, st.n_cached);
    /* back to the start: a cache hit, nothing measured */
    int64_t n_evals = st.n_evaluations;
    cr_assert_eq(rlt_env_reset(env, &d), RLT_STATUS_OK, "%s", d.message);
    step_ok(env, RLT_ENV_ACTION_SWAP_DOWN);
    step_ok(env, RLT_ENV_ACTION_SWAP_UP);
    rlt_env_stats_get(env, &st);
    cr_assert_leq(st.n_evaluations, n_evals + 1); /* only the swapped nest may be new */
    cr_assert_geq(st.n_cache_hits, 2);
    rlt_env_destroy(env);
}

/* ---- the observation ---------------------------------------------------- */

Test(env, observation_layout_is_stable)
{
    cr_assert_eq(RLT_ENV_OBS_VERSION, 1);
    cr_assert_eq(RLT_ENV_MAX_LOOPS, 16);
    cr_assert_eq(RLT_ENV_LOOP_FEATURES, 14);
    cr_assert_eq(RLT_ENV_OBS_LOOPS, 0);
    cr_assert_eq(RLT_ENV_OBS_STRIDES, 224);
    cr_assert_eq(RLT_ENV_OBS_HISTORY, 256);
    cr_assert_eq(RLT_ENV_OBS_GFLOPS, 341);
    cr_assert_eq(RLT_ENV_OBS_MASK, 342);
    cr_assert_eq(RLT_ENV_OBS_LEN, 359);
    /* docs/env.md states the same layout */
    char *doc = NULL;
    size_t len = 0;
    cr_assert_eq(rlt_file_read(RLTUNE_SOURCE_DIR "/docs/env.md", &doc, &len, NULL), RLT_STATUS_OK);
    static const char *const rows[] = {"layout version 1", "| 0 | 224 |", "| 224 | 32 |", "| 256 | 85 |",
                                       "| 341 | 1 |",       "| 342 | 17 |", "359 floats"};
    for (size_t i = 0; i < RLT_ARRAY_LEN(rows); i++)
        cr_assert_not_null(strstr(doc, rows[i]), "docs/env.md lacks '%s'", rows[i]);
    rlt_free(doc);
}

static float loop_feature(const float *obs, int loop, int feature)
{
    return obs[RLT_ENV_OBS_LOOPS + loop * RLT_ENV_LOOP_FEATURES + feature];
}

Test(env, observation_of_a_known_nest)
{
    /* C[i,j] += A[i,k] * B[k,j] with i=8, j=16, k=4: A is [8][4], B [4][16], C [8][16] */
    fake_eval f = {0};
    rlt_env *env = env_at("matmul:M=8,N=16,K=4", "", 1, &f);
    float obs[RLT_ENV_OBS_LEN + 1];
    obs[RLT_ENV_OBS_LEN] = 12345.0f; /* not written past the end */
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_observe(env, obs, RLT_ENV_OBS_LEN + 1, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(obs[RLT_ENV_OBS_LEN], 12345.0f);
    /* per loop: present, log2 extent, tail, depth, reduce, unroll, vectorize, parallel, cursor, log2 inner,
     * log2(1+|stride|) in A, B, (no third input), C */
    const float want[3][RLT_ENV_LOOP_FEATURES] = {
        {1, 3, 0, 0.0f / 16, 0, 0, 0, 0, 0, 6, log2f(5), 0, 0, log2f(17)},
        {1, 4, 0, 1.0f / 16, 0, 0, 0, 0, 1, 2, 0, 1, 0, 1},
        {1, 2, 0, 2.0f / 16, 1, 0, 0, 0, 0, 0, 1, log2f(17), 0, 0},
    };
    for (int l = 0; l < RLT_ENV_MAX_LOOPS; l++)
        for (int k = 0; k < RLT_ENV_LOOP_FEATURES; k++)
            cr_assert_float_eq(loop_feature(obs, l, k), l < 3 ? want[l][k] : 0.0f, 1e-6, "loop %d feature %d: %g", l,
                               k, loop_feature(obs, l, k));
    /* strides: k steps at every point (A by 1, B by 16), j every 4 (B, C by 1), i every 64 (A by 4, C by 16) */
    for (int b = 0; b < RLT_ENV_STRIDE_BUCKETS; b++) {
        float w = b == 0 ? 1.5f : b == 2 ? 1.0f / 64 : b == 4 ? 1.0f + 1.0f / 64 : 0.0f;
        cr_assert_float_eq(obs[RLT_ENV_OBS_STRIDES + b], w, 1e-6, "bucket %d: %g", b, obs[RLT_ENV_OBS_STRIDES + b]);
    }
    /* one action so far: down */
    for (int k = 0; k < RLT_ENV_HISTORY * RLT_ENV_N_ACTIONS; k++)
        cr_assert_eq(obs[RLT_ENV_OBS_HISTORY + k], k == RLT_ENV_ACTION_DOWN ? 1.0f : 0.0f, "history %d", k);
    cr_assert_float_eq(obs[RLT_ENV_OBS_GFLOPS], (float)(rlt_env_gflops(env) / FAKE_PEAK), 1e-7);
    /* five more actions: the oldest (down) drops out, the most recent comes first */
    step_ok(env, RLT_ENV_ACTION_SPLIT_4); /* j.o (4) j.i (4) */
    step_ok(env, RLT_ENV_ACTION_DOWN);
    step_ok(env, RLT_ENV_ACTION_UNROLL);
    step_ok(env, RLT_ENV_ACTION_UP);
    step_ok(env, RLT_ENV_ACTION_SPLIT_2);
    cr_assert_eq(rlt_env_observe(env, obs, RLT_ENV_OBS_LEN, &d), RLT_STATUS_OK, "%s", d.message);
    const int history[RLT_ENV_HISTORY] = {RLT_ENV_ACTION_SPLIT_2, RLT_ENV_ACTION_UP, RLT_ENV_ACTION_UNROLL,
                                          RLT_ENV_ACTION_DOWN, RLT_ENV_ACTION_SPLIT_4};
    for (int h = 0; h < RLT_ENV_HISTORY; h++)
        for (int a = 0; a < RLT_ENV_N_ACTIONS; a++)
            cr_assert_eq(obs[RLT_ENV_OBS_HISTORY + h * RLT_ENV_N_ACTIONS + a], a == history[h] ? 1.0f : 0.0f,
                         "history slot %d action %d", h, a);
    /* loops i j.o.o j.o.i j.i k: j.i unrolled, cursor on j.o.o */
    cr_assert_eq(loop_feature(obs, 1, 8), 1.0f);
    cr_assert_eq(loop_feature(obs, 3, 5), 1.0f);
    cr_assert_eq(loop_feature(obs, 4, 0), 1.0f);
    cr_assert_eq(loop_feature(obs, 5, 0), 0.0f);
    cr_assert_float_eq(loop_feature(obs, 1, 13), log2f(1 + 8), 1e-6); /* j.o.o steps C by 2 * 4 */
    rlt_env_destroy(env);
}

Test(env, observation_marks_tails)
{
    fake_eval f = {0};
    rlt_env *env = env_at("matmul:M=5,N=8,K=4", "split i 2\nsplit i.i 2", 0, &f);
    float obs[RLT_ENV_OBS_LEN];
    cr_assert_eq(rlt_env_observe(env, obs, RLT_ENV_OBS_LEN, NULL), RLT_STATUS_OK);
    /* i.o overruns i (3 * 2 > 5); i.i was split by its extent: no tail */
    const float tails[] = {1, 0, 0, 0, 0};
    for (int l = 0; l < 5; l++) cr_assert_eq(loop_feature(obs, l, 2), tails[l], "loop %d", l);
    rlt_env_destroy(env);
}

/* ---- clones, the cache, evaluators -------------------------------------- */

Test(env, clones_are_independent_and_share_the_cache)
{
    fake_eval f = {0};
    rlt_env *env = env_at(MM, "", 0, &f);
    step_ok(env, RLT_ENV_ACTION_SPLIT_2);
    char *tree = rlt_env_tree(env);
    uint64_t hash = rlt_env_state_hash(env);
    rlt_env *c = NULL;
    cr_assert_eq(rlt_env_clone(env, &c, NULL), RLT_STATUS_OK);
    assert_tree(c, tree, "clone");
    cr_assert_eq(rlt_env_n_steps(c), 1);
    step_ok(c, RLT_ENV_ACTION_DOWN);
    step_ok(c, RLT_ENV_ACTION_UNROLL);
    step_ok(c, RLT_ENV_ACTION_STOP);
    cr_assert(rlt_env_is_done(c));
    /* the original is where it was */
    assert_tree(env, tree, "original after the clone moved");
    cr_assert_eq(rlt_env_state_hash(env), hash);
    cr_assert_eq(rlt_env_cursor(env), 0);
    cr_assert(!rlt_env_is_done(env));
    /* the clone's states are in the shared cache: the original finds them */
    int n_calls = f.n_calls;
    step_ok(env, RLT_ENV_ACTION_DOWN);
    step_ok(env, RLT_ENV_ACTION_UNROLL);
    cr_assert_eq(f.n_calls, n_calls);
    cr_assert_eq(rlt_env_state_hash(env), rlt_env_state_hash(c));
    /* restore: back to the clone's state, done included */
    rlt_env *other = NULL;
    cr_assert_eq(rlt_env_clone(env, &other, NULL), RLT_STATUS_OK);
    rlt_env_restore(other, c);
    cr_assert(rlt_env_is_done(other));
    rlt_env_destroy(env); /* the family lives on in the others */
    cr_assert_eq(rlt_env_step(other, RLT_ENV_ACTION_UP, NULL, NULL, NULL), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert_eq(rlt_env_reset(other, NULL), RLT_STATUS_OK);
    rlt_env_stats st;
    rlt_env_stats_get(other, &st);
    cr_assert_eq(st.n_evaluations, f.n_calls);
    rlt_env_destroy(other);
    rlt_env_destroy(c);
    rlt_free(tree);
    assert_no_leaks();
}

Test(env, cached_states_are_not_evaluated_again)
{
    fake_eval f = {0};
    rlt_env *env = env_at(MM, "", 0, &f);
    cr_assert_eq(f.n_calls, 1);
    step_ok(env, RLT_ENV_ACTION_SPLIT_2); /* new */
    step_ok(env, RLT_ENV_ACTION_MERGE);   /* the start again */
    step_ok(env, RLT_ENV_ACTION_SPLIT_2); /* seen */
    step_ok(env, RLT_ENV_ACTION_DOWN);    /* the nest unchanged: no look-up */
    step_ok(env, RLT_ENV_ACTION_UP);
    step_ok(env, RLT_ENV_ACTION_SWAP_DOWN); /* new */
    step_ok(env, RLT_ENV_ACTION_SWAP_UP);   /* seen */
    cr_assert_eq(f.n_calls, 3);
    rlt_env_stats st;
    rlt_env_stats_get(env, &st);
    cr_assert_eq(st.n_evaluations, 3);
    cr_assert_eq(st.n_cache_hits, 3);
    cr_assert_eq(st.n_cached, 3);
    /* many states: the table grows and keeps every one */
    rlt_rng rng;
    rlt_rng_seed(&rng, 5);
    for (int s = 0; s < 2000; s++) {
        if (s % 25 == 0) cr_assert_eq(rlt_env_reset(env, NULL), RLT_STATUS_OK);
        step_ok(env, random_action(env, &rng));
    }
    rlt_env_stats_get(env, &st);
    cr_assert_eq(st.n_cached, st.n_evaluations);
    cr_assert_eq(st.n_evaluations, f.n_calls);
    cr_assert_gt(st.n_cached, 300);
    rlt_env_destroy(env);
}

Test(env, rewards_are_gflops_gains_over_the_peak)
{
    fake_eval f = {0};
    rlt_env_opts o = {.peak_gflops = 50, .n_threads = 2, .evaluate = fake_evaluate, .evaluate_ctx = &f};
    rlt_env *env = NULL;
    cr_assert_eq(rlt_env_create(MM, &o, &env, NULL), RLT_STATUS_OK);
    cr_assert_eq(rlt_env_reset(env, NULL), RLT_STATUS_OK);
    cr_assert_eq(rlt_env_peak_gflops(env), 50.0);
    double g0 = rlt_env_gflops(env), r = 0;
    cr_assert_gt(g0, 0.0);
    cr_assert_eq(rlt_env_step(env, RLT_ENV_ACTION_SPLIT_2, &r, NULL, NULL), RLT_STATUS_OK);
    cr_assert_float_eq(r, (rlt_env_gflops(env) - g0) / (50.0 * 2), 1e-12);
    float obs[RLT_ENV_OBS_LEN];
    cr_assert_eq(rlt_env_observe(env, obs, RLT_ENV_OBS_LEN, NULL), RLT_STATUS_OK);
    cr_assert_float_eq(obs[RLT_ENV_OBS_GFLOPS], (float)(rlt_env_gflops(env) / 100.0), 1e-6);
    cr_assert_eq(rlt_env_step(env, RLT_ENV_ACTION_DOWN, &r, NULL, NULL), RLT_STATUS_OK);
    cr_assert_eq(r, 0.0);
    rlt_env_destroy(env);
}

Test(env, failed_kernels_score_zero_and_are_cached)
{
    fake_eval f = {.kernel_status = RLT_STATUS_WRONG_ANSWER};
    rlt_env *env = env_at(MM, "", 0, &f);
    const char *message = NULL;
    cr_assert_eq(rlt_env_eval_status(env, &message), RLT_STATUS_WRONG_ANSWER);
    cr_assert_str_eq(message, "fake failure");
    cr_assert_eq(rlt_env_gflops(env), 0.0);
    step_ok(env, RLT_ENV_ACTION_SPLIT_2);
    step_ok(env, RLT_ENV_ACTION_MERGE);
    cr_assert_eq(f.n_calls, 2);
    cr_assert_eq(rlt_env_eval_status(env, NULL), RLT_STATUS_WRONG_ANSWER);
    rlt_env_destroy(env);
}

Test(env, a_broken_evaluator_fails_the_step_and_changes_nothing)
{
    fake_eval f = {0};
    rlt_env *env = env_at(MM, "", 0, &f);
    char *tree = rlt_env_tree(env);
    f.fail_with = RLT_STATUS_IO_ERROR;
    rlt_diag d = {0};
    double r = 1;
    cr_assert_eq(rlt_env_step(env, RLT_ENV_ACTION_SPLIT_2, &r, NULL, &d), RLT_STATUS_IO_ERROR);
    cr_assert_str_eq(d.message, "the fake evaluator is broken");
    cr_assert_eq(r, 0.0);
    assert_tree(env, tree, "after the failed step");
    cr_assert_eq(rlt_env_n_steps(env), 0);
    /* not cached: once the evaluator works, the state is scored */
    f.fail_with = RLT_STATUS_OK;
    step_ok(env, RLT_ENV_ACTION_SPLIT_2);
    cr_assert_eq(rlt_env_eval_status(env, NULL), RLT_STATUS_OK);
    /* a failing reset leaves the env unreset */
    rlt_env *fresh = make_env(MM, &f);
    f.fail_with = RLT_STATUS_IO_ERROR;
    cr_assert_eq(rlt_env_reset(fresh, NULL), RLT_STATUS_IO_ERROR);
    cr_assert_eq(rlt_env_step(fresh, RLT_ENV_ACTION_DOWN, NULL, NULL, NULL), RLT_STATUS_INVALID_ARGUMENT);
    rlt_env_destroy(fresh);
    rlt_free(tree);
    rlt_env_destroy(env);
}

Test(env, the_step_limit_ends_the_episode)
{
    fake_eval f = {0};
    rlt_env_opts o = {.peak_gflops = FAKE_PEAK, .max_steps = 3, .evaluate = fake_evaluate, .evaluate_ctx = &f};
    rlt_env *env = NULL;
    cr_assert_eq(rlt_env_create(MM, &o, &env, NULL), RLT_STATUS_OK);
    cr_assert_eq(rlt_env_reset(env, NULL), RLT_STATUS_OK);
    bool is_done = true;
    cr_assert_eq(rlt_env_step(env, RLT_ENV_ACTION_DOWN, NULL, &is_done, NULL), RLT_STATUS_OK);
    cr_assert(!is_done);
    cr_assert_eq(rlt_env_step(env, RLT_ENV_ACTION_DOWN, NULL, &is_done, NULL), RLT_STATUS_OK);
    cr_assert(!is_done);
    cr_assert_eq(rlt_env_step(env, RLT_ENV_ACTION_UNROLL, NULL, &is_done, NULL), RLT_STATUS_OK);
    cr_assert(is_done);
    bool mask[RLT_ENV_N_ACTIONS];
    rlt_env_action_mask(env, mask);
    for (int a = 0; a < RLT_ENV_N_ACTIONS; a++) cr_assert(!mask[a]);
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_step(env, RLT_ENV_ACTION_STOP, NULL, &is_done, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(d.message, "the episode is over"), "%s", d.message);
    cr_assert_eq(rlt_env_reset(env, NULL), RLT_STATUS_OK);
    cr_assert(!rlt_env_is_done(env));
    cr_assert_eq(rlt_env_n_steps(env), 0);
    rlt_env_destroy(env);
}

/* ---- errors ------------------------------------------------------------- */

Test(env, api_errors)
{
    rlt_env *env = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_create("matmull:M=1", NULL, &env, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert_null(env);
    cr_assert_not_null(strstr(d.message, "unknown op 'matmull'"), "%s", d.message);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_env_create(MM, &(rlt_env_opts){.n_threads = 300}, &env, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(d.message, "n_threads 300"), "%s", d.message);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_env_create(MM, &(rlt_env_opts){.peak_gflops = -1}, &env, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert_eq(rlt_env_create(MM, &(rlt_env_opts){.peak_gflops = NAN}, &env, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert_eq(rlt_env_create(MM, &(rlt_env_opts){.max_steps = -2}, &env, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert_null(env);

    /* before the first reset: no steps, no observation, an empty mask; the tree and schedule are there */
    fake_eval f = {0};
    env = make_env(MM, &f);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_env_step(env, RLT_ENV_ACTION_DOWN, NULL, NULL, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(d.message, "call rlt_env_reset"), "%s", d.message);
    float obs[RLT_ENV_OBS_LEN];
    cr_assert_eq(rlt_env_observe(env, obs, RLT_ENV_OBS_LEN, NULL), RLT_STATUS_INVALID_ARGUMENT);
    bool mask[RLT_ENV_N_ACTIONS];
    rlt_env_action_mask(env, mask);
    for (int a = 0; a < RLT_ENV_N_ACTIONS; a++) cr_assert(!mask[a]);
    cr_assert_eq(rlt_env_gflops(env), 0.0);
    cr_assert_eq(rlt_env_peak_gflops(env), 0.0);
    char *text = rlt_env_schedule(env);
    cr_assert_str_eq(text, "# rltune schedule v1\ncache_write j\n", "the default nest's kernel sums in a register");
    rlt_free(text);
    cr_assert_eq(f.n_calls, 0);

    cr_assert_eq(rlt_env_reset(env, NULL), RLT_STATUS_OK);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_env_observe(env, obs, RLT_ENV_OBS_LEN - 1, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(d.message, "needs 359 floats"), "%s", d.message);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_env_step(env, RLT_ENV_N_ACTIONS, NULL, NULL, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(d.message, "out of range"), "%s", d.message);
    cr_assert_eq(rlt_env_step(env, -1, NULL, NULL, NULL), RLT_STATUS_INVALID_ARGUMENT);

    /* schedules the env cannot start from */
    static const struct {
        const char *sched;
        rlt_status status;
        const char *message;
    } bad[] = {
        {"fuse i j", RLT_STATUS_INVALID_ARGUMENT, "comes from fuse"},
        {"split i 3\nvectorize i.o", RLT_STATUS_ILLEGAL_SCHEDULE, "must be innermost"},
        {"tile i 3", RLT_STATUS_PARSE_ERROR, "unknown step 'tile'"},
    };
    for (size_t i = 0; i < RLT_ARRAY_LEN(bad); i++) {
        d = (rlt_diag){0};
        uint64_t hash = rlt_env_state_hash(env);
        cr_assert_eq(rlt_env_reset_schedule(env, bad[i].sched, &d), bad[i].status, "%s: %s", bad[i].sched,
                     d.message);
        cr_assert_not_null(strstr(d.message, bad[i].message), "%s: %s", bad[i].sched, d.message);
        cr_assert_eq(rlt_env_state_hash(env), hash);
    }
    rlt_env_destroy(env);
    rlt_env_destroy(NULL);
}

/* ---- the peak ----------------------------------------------------------- */

Test(env, peak_is_measured_cached_and_read_back, .timeout = 300)
{
    char *dir = tmp_dir_make("/tmp/rlt_env_peak_XXXXXX");
    rlt_build_opts bopts = {.cache_dir = dir};
    char path[PATH_MAX];
    rlt_diag d = {0};
    cr_assert_eq(env_peak_cache_path(&bopts, path, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(strncmp(path, dir, strlen(dir)), 0);
    cr_assert_not_null(strstr(path, "/peak/"));
    double peak = 0, again = 0;
    bool was_cached = true;
    cr_assert_eq(env_peak_get(&bopts, &peak, &was_cached, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert(!was_cached);
    cr_log_info("measured peak: %.2f GFLOP/s", peak);
    /* one core does at least a few GFLOP/s and no machine 10 TFLOP/s */
    cr_assert(peak > 1.0 && peak < 10000.0, "peak %g", peak);
    cr_assert_eq(env_peak_get(&bopts, &again, &was_cached, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert(was_cached);
    cr_assert_float_eq(again, peak, peak * 1e-5);
    /* the file's format, and a damaged file is measured again */
    char *text = NULL;
    size_t len = 0;
    cr_assert_eq(rlt_file_read(path, &text, &len, NULL), RLT_STATUS_OK);
    cr_assert_eq(strncmp(text, "# rltune peak v1\ngflops ", 24), 0, "%s", text);
    rlt_free(text);
    cr_assert_eq(rlt_file_write(path, "# rltune peak v2\ngflops 5\n", 26, NULL), RLT_STATUS_OK);
    cr_assert_eq(env_peak_get(&bopts, &again, &was_cached, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert(!was_cached);
    /* an env takes it from the cache file */
    rlt_env_opts o = {.cache_dir = dir, .evaluate = fake_evaluate, .evaluate_ctx = &(fake_eval){0}};
    rlt_env *env = NULL;
    cr_assert_eq(rlt_env_create(MM, &o, &env, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_env_reset(env, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_float_eq(rlt_env_peak_gflops(env), again, again * 1e-5);
    rlt_env_destroy(env);
    tmp_remove_tree(dir);
    free(dir);
}

/* ---- out of memory ------------------------------------------------------ */

Test(env, out_of_memory_at_every_allocation)
{
    bool has_succeeded = false;
    for (long n = 1; n < 200 && !has_succeeded; n++) {
        fake_eval f = {0};
        rlt_env_opts o = {.peak_gflops = FAKE_PEAK, .evaluate = fake_evaluate, .evaluate_ctx = &f};
        rlt_env *env = NULL, *c = NULL;
        char *tree = NULL, *sched = NULL;
        rlt_alloc_fail_after(n);
        rlt_status st = rlt_env_create(MM, &o, &env, NULL);
        if (st == RLT_STATUS_OK) st = rlt_env_reset(env, NULL);
        if (st == RLT_STATUS_OK) st = rlt_env_step(env, RLT_ENV_ACTION_SPLIT_2, NULL, NULL, NULL);
        if (st == RLT_STATUS_OK) st = rlt_env_step(env, RLT_ENV_ACTION_MERGE, NULL, NULL, NULL);
        if (st == RLT_STATUS_OK) st = rlt_env_clone(env, &c, NULL);
        if (st == RLT_STATUS_OK) st = rlt_env_reset_schedule(c, "split j 2\nparallel j.o", NULL);
        if (st == RLT_STATUS_OK && !(tree = rlt_env_tree(c))) st = RLT_STATUS_OUT_OF_MEMORY;
        if (st == RLT_STATUS_OK && !(sched = rlt_env_schedule(c))) st = RLT_STATUS_OUT_OF_MEMORY;
        rlt_alloc_fail_after(0);
        cr_assert(st == RLT_STATUS_OK || st == RLT_STATUS_OUT_OF_MEMORY, "allocation %ld: %s", n,
                  rlt_status_str(st));
        has_succeeded = st == RLT_STATUS_OK;
        rlt_free(sched);
        rlt_free(tree);
        rlt_env_destroy(c);
        rlt_env_destroy(env);
    }
    cr_assert(has_succeeded);
    assert_no_leaks();
}

/* ---- prefetch: the next states of many steps in one batch --------------- */

Test(env, prefetch_evaluates_each_new_state_once_and_steps_hit_the_cache)
{
    fake_eval f = {0};
    rlt_env *env = env_at(MM, "split j 4", 1, &f);
    int n_before = f.n_calls, n_steps = rlt_env_n_steps(env);
    uint64_t hash = rlt_env_state_hash(env);
    bool mask[RLT_ENV_N_ACTIONS];
    rlt_env_action_mask(env, mask);
    /* every action, each twice, illegal ones included: they are skipped */
    rlt_env *envs[2 * RLT_ENV_N_ACTIONS];
    int actions[2 * RLT_ENV_N_ACTIONS], n_new = 0;
    for (int a = 0; a < RLT_ENV_N_ACTIONS; a++) {
        envs[2 * a] = envs[2 * a + 1] = env;
        actions[2 * a] = actions[2 * a + 1] = a;
        bool is_move = a == RLT_ENV_ACTION_UP || a == RLT_ENV_ACTION_DOWN || a == RLT_ENV_ACTION_STOP;
        n_new += mask[a] && !is_move;
    }
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_prefetch(envs, actions, 2 * RLT_ENV_N_ACTIONS, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert(rlt_env_n_steps(env) == n_steps && rlt_env_state_hash(env) == hash, "prefetch changed the env");
    /* each pair listed twice, yet each new state evaluated at most once */
    cr_assert(f.n_calls - n_before > 0 && f.n_calls - n_before <= n_new, "%d evaluations for %d new states",
              f.n_calls - n_before, n_new);
    int n_after = f.n_calls;
    for (int a = 0; a < RLT_ENV_N_ACTIONS; a++) {
        if (!mask[a]) continue;
        rlt_env *c = NULL;
        cr_assert_eq(rlt_env_clone(env, &c, &d), RLT_STATUS_OK);
        step_ok(c, a);
        rlt_env_destroy(c);
    }
    cr_assert_eq(f.n_calls, n_after, "a prefetched state was evaluated again");
    rlt_env_destroy(env);
}

Test(env, prefetch_passes_on_an_evaluator_failure)
{
    fake_eval f = {0};
    rlt_env *env = env_at(MM, "", 0, &f);
    f.fail_with = RLT_STATUS_IO_ERROR;
    rlt_env *envs[] = {env};
    int actions[] = {RLT_ENV_ACTION_SPLIT_2};
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_prefetch(envs, actions, 1, &d), RLT_STATUS_IO_ERROR);
    cr_assert(strstr(d.message, "broken"), "%s", d.message);
    cr_assert_eq(rlt_env_n_steps(env), 0);
    rlt_env_destroy(env);
}

Test(env, prefetch_measures_states_of_two_ops_in_one_batch, .timeout = 600)
{
    rlt_env_opts o = {.cflags = "-O1 -march=native", .repeat = 1, .min_repeat_ms = 1, .peak_gflops = FAKE_PEAK};
    const char *specs[] = {"matmul:M=20,N=24,K=12", "matmul:M=8,N=16,K=4"};
    rlt_env *envs[2];
    rlt_diag d = {0};
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(rlt_env_create(specs[i], &o, &envs[i], &d), RLT_STATUS_OK, "%s", d.message);
        cr_assert_eq(rlt_env_reset(envs[i], &d), RLT_STATUS_OK, "%s", d.message);
    }
    int actions[] = {RLT_ENV_ACTION_SPLIT_4, RLT_ENV_ACTION_SPLIT_2};
    cr_assert_eq(rlt_env_prefetch(envs, actions, 2, &d), RLT_STATUS_OK, "%s", d.message);
    for (int i = 0; i < 2; i++) {
        rlt_env_stats before, after;
        rlt_env_stats_get(envs[i], &before);
        cr_assert_eq(before.n_evaluations, 2, "%s: the start and the prefetched state", specs[i]);
        step_ok(envs[i], actions[i]);
        rlt_env_stats_get(envs[i], &after);
        cr_assert_eq(after.n_evaluations, 2, "%s: the step measured again", specs[i]);
        const char *message = NULL;
        cr_assert_eq(rlt_env_eval_status(envs[i], &message), RLT_STATUS_OK, "%s: %s", specs[i], message);
        cr_assert_gt(rlt_env_gflops(envs[i]), 0.0);
        rlt_env_destroy(envs[i]);
    }
}

/* ---- accumulation: the kernel of a state -------------------------------- */

/* The loop env_accumulator_loop picks for the nest `sched` makes of `spec`
 * ("root", a loop name, or "" for none). */
static void assert_accumulator(const char *spec, const char *sched, const char *want)
{
    rlt_op *op = NULL;
    rlt_sched *s = NULL;
    rlt_nest nest;
    rlt_diag d = {0};
    cr_assert_eq(rlt_op_parse(spec, &op, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_sched_parse(sched, "test", &s, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_sched_apply(s, op, &nest, &d), RLT_STATUS_OK, "%s: %s", sched, d.message);
    int p = env_accumulator_loop(&nest);
    const char *got = p == ENV_NO_ACCUMULATOR ? "" : p < 0 ? "root" : nest.vars[nest.loops[p].var].name;
    cr_assert_str_eq(got, want, "%s / %s", spec, sched);
    rlt_nest kernel;
    env_kernel_nest(&nest, &kernel);
    cr_assert_eq(kernel.acc_var == RLT_ACC_NONE, want[0] == '\0');
    rlt_sched_destroy(s);
    rlt_op_destroy(op);
}

Test(env, the_accumulator_goes_where_the_tile_fits_in_registers)
{
    const char *mm = "matmul:M=64,N=64,K=64";
    assert_accumulator(mm, "", "j");                                /* a scalar sum */
    assert_accumulator(mm, "reorder i k j", "");                    /* no reduction inside a spatial loop */
    assert_accumulator(mm, "split j 8\nsplit i 4\nreorder i.o j.o k i.i j.i\nunroll i.i\nvectorize j.i",
                       "j.o");                                      /* the 4 x 8 register tile */
    assert_accumulator(mm, "split j 8\nsplit i 4\nreorder i.o j.o k i.i j.i\nvectorize j.i",
                       "");                                         /* i.i serial: no tile across k */
    assert_accumulator(mm, "split j 32\nsplit i 16\nreorder i.o j.o k i.i j.i\nunroll i.i\nvectorize j.i",
                       "");                                         /* 512 floats: too large */
    assert_accumulator("matmul:M=4,N=8,K=64", "reorder k i j\nunroll i\nvectorize j", "root");
}

/* ---- packing: the kernel of a state -------------------------------------- */

/* The kernel schedule's pack lines for the nest `sched` makes of `spec`, one
 * line each ("" for none). */
static void assert_packs(const char *spec, const char *sched, const char *want)
{
    rlt_op *op = NULL;
    rlt_sched *s = NULL, *kernel = NULL;
    rlt_nest nest;
    rlt_diag d = {0};
    cr_assert_eq(rlt_op_parse(spec, &op, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_sched_parse(sched, "test", &s, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_sched_apply(s, op, &nest, &d), RLT_STATUS_OK, "%s: %s", sched, d.message);
    cr_assert_eq(env_kernel_schedule_build(&nest, &kernel, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_str got;
    rlt_str_init(&got);
    for (int i = 0; i < kernel->n_steps; i++) {
        if (kernel->steps[i].kind != RLT_STEP_PACK) continue;
        rlt_step_print(&kernel->steps[i], &got);
        rlt_str_append(&got, "\n");
    }
    cr_assert_str_eq(got.data ? got.data : "", want, "%s / %s", spec, sched);
    /* the kernel nest is what its schedule replays to */
    rlt_nest from_nest, replayed;
    env_kernel_nest(&nest, &from_nest);
    cr_assert_eq(rlt_sched_apply(kernel, op, &replayed, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_nest_hash(&from_nest), rlt_nest_hash(&replayed), "%s / %s", spec, sched);
    rlt_str_free(&got);
    rlt_sched_destroy(kernel);
    rlt_sched_destroy(s);
    rlt_op_destroy(op);
}

#define TILE_8X8 "split j 8\nsplit i 8\nreorder i.o j.o k i.i j.i\nunroll i.i\nvectorize j.i"

Test(env, the_tile_packs_what_it_sweeps_when_the_copy_pays)
{
    /* B: 128 x 256 floats, read again by each of i.o's 16 iterations */
    assert_packs("matmul:M=128,N=256,K=128", TILE_8X8, "pack B 1 8\n");
    /* two vectors wide: blocks of the whole tile's 16 columns */
    assert_packs("matmul:M=128,N=256,K=128",
                 "split j 16\nsplit j.i 8\nsplit i 4\nreorder i.o j.o k i.i j.i.o j.i.i\nunroll i.i\nunroll "
                 "j.i.o\nvectorize j.i.i",
                 "pack B 1 16\n");
    /* i.o reads B 4 times only: the copy would cost more than it saves */
    assert_packs("matmul:M=32,N=256,K=128", TILE_8X8, "");
    /* B of 64 x 64 floats stays in the L1 cache as it is */
    assert_packs("matmul:M=128,N=64,K=64", TILE_8X8, "");
    /* no tile, nothing to pack for */
    assert_packs("matmul:M=128,N=256,K=128", "split j 8\nreorder k i j.o j.i\nvectorize j.i", "");
    /* the whole row in the tile: the copy would be the same layout */
    assert_packs("matmul:M=128,N=8,K=1024", "split i 8\nreorder i.o k i.i j\nunroll i.i\nvectorize j", "");
    /* a weight is packed once, before the timed calls: whatever the reuse */
    assert_packs("dense:M=8,N=64,K=32", TILE_8X8, "pack W 0 8\n");
}

/* A start schedule's cache_write and pack lines are dropped: the env
 * places both itself, so a schedule it printed starts the same state. */
Test(env, a_schedule_with_cache_write_or_packs_starts_at_the_state_without_them)
{
    static const char *const scheds[] = {"cache_write root", "pack B j 2", "cache_write root\npack A i 4"};
    fake_eval f = {0};
    rlt_env *a = make_env(MM, &f);
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_reset(a, &d), RLT_STATUS_OK);
    for (size_t i = 0; i < RLT_ARRAY_LEN(scheds); i++) {
        rlt_env *b = make_env(MM, &f);
        cr_assert_eq(rlt_env_reset_schedule(b, scheds[i], &d), RLT_STATUS_OK, "%s: %s", scheds[i], d.message);
        cr_assert_eq(rlt_env_state_hash(a), rlt_env_state_hash(b), "%s", scheds[i]);
        char *text = rlt_env_schedule(b);
        cr_assert_str_eq(text, "# rltune schedule v1\ncache_write j\n", "%s", scheds[i]);
        rlt_free(text);
        rlt_env_destroy(b);
    }
    rlt_env_destroy(a);
}
