/* Unit tests of batched steps (rlt_env_step_batch, rlt_env_observe_batch,
 * rlt_env_vec_*; include/rltune/env.h):
 *  - a batch equals n single calls bit for bit (rewards, done flags,
 *    observations, masks, the states reached), over seeded random rollouts
 *    with RLT_ENV_ACTION_NONE and resets (RLT_ENV_ACTION_RESET in the
 *    batch, or rlt_env_reset_batch before it): replaying the examples' state
 *    dataset, and scored by an evaluator (several families, clones among
 *    them, a step limit), which is asked for the same states as single
 *    steps ask for;
 *  - a reset in the batch is rlt_env_reset, also of a never reset env;
 *  - what a batch refuses (a masked action, an action out of range, a done
 *    or unreset env, the same env twice, an evaluator's failure, also on a
 *    reset's start state) names the env's position, carries rlt_env_step's
 *    message, and changes no env and no output;
 *  - the batched observation equals rlt_env_observe and rlt_env_action_mask,
 *    the batched GFLOP/s rlt_env_gflops;
 *  - measured envs: the states a batch reaches are built together and
 *    measured once;
 *  - out of memory at every allocation of a batch;
 *  - vector envs (rlt_env_vec): each autoreset mode equals single calls
 *    doing Gymnasium's rules (resets, no-ops for masked actions, step
 *    limits), bit for bit, with the final rows of SAME_STEP; what they
 *    refuse (actions out of range, a masked action when strict, a
 *    terminated env when not autoresetting, an env never reset) names the
 *    env and changes nothing; an evaluator's failure puts every env back,
 *    a reset in the same step too; create and reset refuse what they
 *    cannot do; out of memory at every allocation.
 *
 * Only the test that says it measures compiles anything. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env/env.h"

#include "../common/leaks.h"

#define REPLAY RLTUNE_SOURCE_DIR "/examples/python/data/matmul32.states"
#define REPLAY_OP "matmul:M=32,N=32,K=32"
#define PEAK 100.0

/* ---- helpers ------------------------------------------------------------ */

typedef struct fake_eval {
    int n_calls;
    int fail_at_call; /* > 0: the evaluator itself fails (IO_ERROR) at this call and after */
} fake_eval;

static rlt_status fake_evaluate(void *ctx, const rlt_env_eval_request *req, rlt_env_eval_result *out,
                                rlt_diag *diag)
{
    fake_eval *f = ctx;
    if (f->fail_at_call > 0 && f->n_calls + 1 >= f->fail_at_call)
        return rlt_fail(diag, RLT_STATUS_IO_ERROR, "the fake evaluator is broken");
    f->n_calls++;
    out->status = req->nest_hash % 11 == 0 ? RLT_STATUS_RUN_ERROR : RLT_STATUS_OK;
    out->gflops = 1.0 + (double)(req->nest_hash % 1000) / 100.0;
    if (out->status != RLT_STATUS_OK) snprintf(out->message, sizeof out->message, "fake failure");
    return RLT_STATUS_OK;
}

static rlt_env *fake_env(const char *spec, fake_eval *f, int max_steps)
{
    rlt_env_opts o = {.peak_gflops = PEAK, .evaluate = fake_evaluate, .evaluate_ctx = f, .max_steps = max_steps};
    rlt_env *env = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_create(spec, &o, &env, &d), RLT_STATUS_OK, "%s: %s", spec, d.message);
    cr_assert_eq(rlt_env_reset(env, &d), RLT_STATUS_OK, "%s: %s", spec, d.message);
    return env;
}

static rlt_env *replay_env(void)
{
    rlt_env_opts o = {.replay_path = REPLAY};
    rlt_env *env = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_create(REPLAY_OP, &o, &env, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_env_reset(env, &d), RLT_STATUS_OK, "%s", d.message);
    return env;
}

static rlt_env *clone_of(const rlt_env *env)
{
    rlt_env *c = NULL;
    cr_assert_eq(rlt_env_clone(env, &c, NULL), RLT_STATUS_OK);
    return c;
}

/* A random legal action of env (stop one time in `stop_one_in`), or
 * RLT_ENV_ACTION_NONE one time in eight. */
static int random_action(const rlt_env *env, rlt_rng *rng, int stop_one_in)
{
    if (rlt_rng_below(rng, 8) == 0) return RLT_ENV_ACTION_NONE;
    bool mask[RLT_ENV_N_ACTIONS];
    rlt_env_action_mask(env, mask);
    if (mask[RLT_ENV_ACTION_STOP] && rlt_rng_below(rng, (uint64_t)stop_one_in) == 0) return RLT_ENV_ACTION_STOP;
    int legal[RLT_ENV_N_ACTIONS], n = 0;
    for (int a = 0; a < RLT_ENV_ACTION_STOP; a++)
        if (mask[a]) legal[n++] = a;
    cr_assert_gt(n, 0);
    return legal[rlt_rng_below(rng, (uint64_t)n)];
}

#define MAX_BATCH 16

/* Steps `batch` with rlt_env_step_batch and `single` (twins: the same
 * states, families alike) one env at a time, for n_rounds of seeded random
 * actions, resetting done envs (the batch's with rlt_env_reset_batch), and
 * checks that every output and state is the same, bit for bit. */
static void rollouts_agree(rlt_env **batch, rlt_env **single, int n, int n_rounds, uint64_t seed)
{
    cr_assert(n <= MAX_BATCH);
    rlt_rng rng;
    rlt_rng_seed(&rng, seed);
    int n_steps = 0, n_dones = 0, n_resets = 0;
    for (int round = 0; round < n_rounds; round++) {
        rlt_env *to_reset[MAX_BATCH];
        int actions[MAX_BATCH], n_reset = 0;
        rlt_diag d = {0};
        for (int i = 0; i < n; i++) {
            actions[i] = RLT_ENV_ACTION_NONE;
            if (!rlt_env_is_done(single[i])) continue;
            /* a done env starts again: in the batch (RESET) or before it */
            if (rlt_rng_below(&rng, 2)) {
                actions[i] = RLT_ENV_ACTION_RESET;
                n_resets++;
            } else {
                cr_assert_eq(rlt_env_reset(single[i], &d), RLT_STATUS_OK, "%s", d.message);
                to_reset[n_reset++] = batch[i];
            }
        }
        cr_assert_eq(rlt_env_reset_batch(to_reset, NULL, n_reset, &d), RLT_STATUS_OK, "%s", d.message);
        for (int i = 0; i < n; i++)
            if (actions[i] != RLT_ENV_ACTION_RESET) actions[i] = random_action(single[i], &rng, 6);

        double rewards[MAX_BATCH];
        bool dones[MAX_BATCH];
        static float obs[MAX_BATCH * RLT_ENV_OBS_LEN];
        unsigned char masks[MAX_BATCH * RLT_ENV_N_ACTIONS];
        cr_assert_eq(rlt_env_step_batch(batch, n, actions, rewards, dones, obs, masks, &d), RLT_STATUS_OK,
                     "round %d: %s", round, d.message);
        for (int i = 0; i < n; i++) {
            double reward = 0;
            bool done = rlt_env_is_done(single[i]);
            if (actions[i] == RLT_ENV_ACTION_RESET) {
                cr_assert_eq(rlt_env_reset(single[i], &d), RLT_STATUS_OK, "%s", d.message);
                done = false;
            } else if (actions[i] != RLT_ENV_ACTION_NONE) {
                cr_assert_eq(rlt_env_step(single[i], actions[i], &reward, &done, &d), RLT_STATUS_OK, "%s",
                             d.message);
                n_steps++;
                n_dones += done;
            }
            float want_obs[RLT_ENV_OBS_LEN];
            bool want_mask[RLT_ENV_N_ACTIONS];
            cr_assert_eq(rlt_env_observe(single[i], want_obs, RLT_ENV_OBS_LEN, &d), RLT_STATUS_OK);
            rlt_env_action_mask(single[i], want_mask);
            const char *what = actions[i] == RLT_ENV_ACTION_RESET ? "reset" : rlt_env_action_name(actions[i]);
            cr_assert_eq(memcmp(&rewards[i], &reward, sizeof reward), 0,
                         "round %d env %d (%s): reward %.17g, single %.17g", round, i, what, rewards[i], reward);
            cr_assert_eq(dones[i], done, "round %d env %d (%s): done", round, i, what);
            cr_assert_eq(memcmp(&obs[(size_t)i * RLT_ENV_OBS_LEN], want_obs, sizeof want_obs), 0,
                         "round %d env %d (%s): observation", round, i, what);
            for (int a = 0; a < RLT_ENV_N_ACTIONS; a++)
                cr_assert_eq(masks[i * RLT_ENV_N_ACTIONS + a], (unsigned char)want_mask[a],
                             "round %d env %d (%s): mask[%s]", round, i, what, rlt_env_action_name(a));
            cr_assert_eq(rlt_env_state_hash(batch[i]), rlt_env_state_hash(single[i]));
            cr_assert_eq(rlt_env_cursor(batch[i]), rlt_env_cursor(single[i]));
            cr_assert_eq(rlt_env_n_steps(batch[i]), rlt_env_n_steps(single[i]));
            cr_assert_eq(rlt_env_is_done(batch[i]), done);
        }
    }
    /* the rollouts did step, ended episodes, and reset in the batch */
    cr_assert_gt(n_steps, n_rounds * n / 2);
    cr_assert_gt(n_dones, 0);
    cr_assert_gt(n_resets, 0);
}

/* ---- a batch is n single steps ------------------------------------------ */

Test(env_batch, replaying_equals_single_steps_bit_for_bit)
{
    enum { N = 8 };
    rlt_env *batch[N], *single[N];
    for (int i = 0; i < N; i++) {
        batch[i] = i < 4 ? replay_env() : clone_of(batch[0]); /* families of one env and a family of five */
        single[i] = i < 4 ? replay_env() : clone_of(single[0]);
    }
    rollouts_agree(batch, single, N, 300, 1);
    for (int i = 0; i < N; i++) {
        rlt_env_destroy(batch[i]);
        rlt_env_destroy(single[i]);
    }
}

Test(env_batch, evaluated_equals_single_steps_and_asks_for_the_same_states)
{
    enum { N = 6 };
    static const char *const specs[] = {"matmul:M=24,N=20,K=12", "conv2d:N=1,C=3,H=9,W=8,K=4,R=3,S=3,stride=2,pad=1"};
    fake_eval fb[2] = {{0}}, fs[2] = {{0}};
    rlt_env *batch[N], *single[N];
    for (int i = 0; i < N; i++) {
        /* two families of three, each of an env and two clones; a step limit of 7 */
        if (i % 3 == 0) {
            batch[i] = fake_env(specs[i / 3], &fb[i / 3], 7);
            single[i] = fake_env(specs[i / 3], &fs[i / 3], 7);
        } else {
            batch[i] = clone_of(batch[i - i % 3]);
            single[i] = clone_of(single[i - i % 3]);
        }
    }
    rollouts_agree(batch, single, N, 200, 2);
    for (int k = 0; k < 2; k++) {
        cr_assert_gt(fb[k].n_calls, 10);
        cr_assert_eq(fb[k].n_calls, fs[k].n_calls, "%s: the evaluator was asked %d times, single steps asked %d",
                     specs[k], fb[k].n_calls, fs[k].n_calls);
        rlt_env_stats b, s;
        rlt_env_stats_get(batch[3 * k], &b);
        rlt_env_stats_get(single[3 * k], &s);
        cr_assert(b.n_evaluations == s.n_evaluations && b.n_cache_hits == s.n_cache_hits && b.n_cached == s.n_cached);
    }
    for (int i = N - 1; i >= 0; i--) {
        rlt_env_destroy(batch[i]);
        rlt_env_destroy(single[i]);
    }
}

Test(env_batch, none_leaves_a_done_env_and_an_empty_batch_is_ok)
{
    fake_eval f = {0};
    rlt_env *env = fake_env("matmul:M=8,N=8,K=8", &f, 0);
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_step_batch(NULL, 0, NULL, NULL, NULL, NULL, NULL, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_env_step(env, RLT_ENV_ACTION_STOP, NULL, NULL, &d), RLT_STATUS_OK);
    int action = RLT_ENV_ACTION_NONE;
    double reward = -1;
    bool done = false;
    unsigned char mask[RLT_ENV_N_ACTIONS];
    memset(mask, 7, sizeof mask);
    cr_assert_eq(rlt_env_step_batch(&env, 1, &action, &reward, &done, NULL, mask, &d), RLT_STATUS_OK, "%s",
                 d.message);
    cr_assert(reward == 0.0 && done);
    for (int a = 0; a < RLT_ENV_N_ACTIONS; a++) cr_assert_eq(mask[a], 0, "a done env's mask is empty");
    rlt_env_destroy(env);
}

Test(env_batch, reset_in_a_batch_is_rlt_env_reset_and_its_failure_changes_nothing)
{
    fake_eval f = {0}, twin_f = {0};
    rlt_env *stepped = fake_env("matmul:M=24,N=20,K=12", &f, 0);
    rlt_env *fresh = NULL, *twin = NULL;
    rlt_env_opts o = {.peak_gflops = PEAK, .evaluate = fake_evaluate, .evaluate_ctx = &f};
    cr_assert_eq(rlt_env_create("conv2d:N=1,C=3,H=9,W=8,K=4,R=3,S=3,stride=2,pad=1", &o, &fresh, NULL),
                 RLT_STATUS_OK);
    o.evaluate_ctx = &twin_f;
    cr_assert_eq(rlt_env_create("conv2d:N=1,C=3,H=9,W=8,K=4,R=3,S=3,stride=2,pad=1", &o, &twin, NULL),
                 RLT_STATUS_OK);
    rlt_env *envs[2] = {stepped, fresh};
    int actions[2] = {RLT_ENV_ACTION_DOWN, RLT_ENV_ACTION_RESET};

    /* the start state of a never reset env cannot be scored: nothing changes */
    f.fail_at_call = f.n_calls + 1;
    double rewards[2] = {-7, -7};
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_step_batch(envs, 2, actions, rewards, NULL, NULL, NULL, &d), RLT_STATUS_IO_ERROR);
    cr_assert_not_null(strstr(d.message, "envs[1] of 2: "), "%s", d.message);
    cr_assert(!rlt_env_is_reset(fresh) && rlt_env_cursor(stepped) == 0 && rewards[0] == -7);

    /* mended: env 1 starts its first episode, as rlt_env_reset starts the twin's */
    f.fail_at_call = 0;
    bool dones[2] = {true, true};
    static float obs[2 * RLT_ENV_OBS_LEN];
    unsigned char masks[2 * RLT_ENV_N_ACTIONS];
    cr_assert_eq(rlt_env_step_batch(envs, 2, actions, rewards, dones, obs, masks, &d), RLT_STATUS_OK, "%s",
                 d.message);
    cr_assert_eq(rlt_env_reset(twin, &d), RLT_STATUS_OK);
    float want[RLT_ENV_OBS_LEN];
    cr_assert_eq(rlt_env_observe(twin, want, RLT_ENV_OBS_LEN, NULL), RLT_STATUS_OK);
    cr_assert(rlt_env_is_reset(fresh) && rewards[1] == 0.0 && !dones[1]);
    cr_assert_eq(memcmp(&obs[RLT_ENV_OBS_LEN], want, sizeof want), 0);
    cr_assert_eq(rlt_env_state_hash(fresh), rlt_env_state_hash(twin));
    cr_assert_eq(rlt_env_cursor(stepped), 1);

    /* a done env resets in the batch too; stepping it does not */
    cr_assert_eq(rlt_env_step(fresh, RLT_ENV_ACTION_STOP, NULL, NULL, NULL), RLT_STATUS_OK);
    actions[1] = RLT_ENV_ACTION_DOWN;
    cr_assert_eq(rlt_env_step_batch(envs, 2, actions, NULL, NULL, NULL, NULL, &d), RLT_STATUS_INVALID_ARGUMENT);
    actions[1] = RLT_ENV_ACTION_RESET;
    cr_assert_eq(rlt_env_step_batch(envs, 2, actions, NULL, dones, NULL, NULL, &d), RLT_STATUS_OK, "%s",
                 d.message);
    cr_assert(!rlt_env_is_done(fresh) && !dones[1] && rlt_env_n_steps(fresh) == 0);
    rlt_env_destroy(twin);
    rlt_env_destroy(fresh);
    rlt_env_destroy(stepped);
}

/* ---- refusals: named, and nothing changes -------------------------------- */

#define N_REF 4

/* Fresh fake-scored envs of one op (a family each), each moved by a split:
 * the cursor is on the outermost loop. */
static void refusal_envs(fake_eval *f, rlt_env *envs[N_REF])
{
    for (int i = 0; i < N_REF; i++) {
        envs[i] = fake_env("matmul:M=24,N=20,K=12", f, 0);
        rlt_diag d = {0};
        cr_assert_eq(rlt_env_step(envs[i], RLT_ENV_ACTION_SPLIT_2, NULL, NULL, &d), RLT_STATUS_OK, "%s", d.message);
    }
}

static void destroy_all(rlt_env *envs[N_REF])
{
    for (int i = 0; i < N_REF; i++) rlt_env_destroy(envs[i]);
}

/* Runs the batch, which must fail with `status` and a message that starts
 * with `prefix` and holds `words`, leaving every env and output as it was. */
static void assert_refused(rlt_env *envs[N_REF], const int *actions, rlt_status status, const char *prefix,
                           const char *words)
{
    uint64_t hashes[N_REF];
    int n_steps[N_REF];
    for (int i = 0; i < N_REF; i++) {
        hashes[i] = rlt_env_state_hash(envs[i]);
        n_steps[i] = rlt_env_n_steps(envs[i]);
    }
    double rewards[N_REF] = {-7, -7, -7, -7};
    bool dones[N_REF] = {true, true, true, true};
    static float obs[N_REF * RLT_ENV_OBS_LEN];
    unsigned char masks[N_REF * RLT_ENV_N_ACTIONS];
    for (size_t k = 0; k < RLT_ARRAY_LEN(obs); k++) obs[k] = -7;
    memset(masks, 7, sizeof masks);
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_step_batch(envs, N_REF, actions, rewards, dones, obs, masks, &d), status, "%s: %s",
                 rlt_status_str(status), d.message);
    cr_assert_eq(strncmp(d.message, prefix, strlen(prefix)), 0, "message '%s', wanted it to start '%s'", d.message,
                 prefix);
    cr_assert_not_null(strstr(d.message, words), "message '%s' lacks '%s'", d.message, words);
    for (int i = 0; i < N_REF; i++) {
        cr_assert_eq(rlt_env_state_hash(envs[i]), hashes[i], "env %d changed", i);
        cr_assert_eq(rlt_env_n_steps(envs[i]), n_steps[i], "env %d changed", i);
        cr_assert(rewards[i] == -7 && dones[i], "output %d written", i);
        cr_assert_str_eq(rlt_env_last_error(envs[i]), d.message);
    }
    for (size_t k = 0; k < RLT_ARRAY_LEN(obs); k++) cr_assert_eq(obs[k], -7.0f, "observation written");
    for (size_t k = 0; k < sizeof masks; k++) cr_assert_eq(masks[k], 7, "mask written");
}

Test(env_batch, a_masked_action_is_refused_naming_the_env_with_rlt_env_steps_message)
{
    fake_eval f = {0};
    rlt_env *envs[N_REF];
    refusal_envs(&f, envs);
    /* the cursors are on the outermost loop: up is masked */
    int actions[N_REF] = {RLT_ENV_ACTION_DOWN, RLT_ENV_ACTION_SPLIT_4, RLT_ENV_ACTION_UP, RLT_ENV_ACTION_NONE};
    rlt_env *scratch = clone_of(envs[2]);
    rlt_diag single = {0};
    cr_assert_eq(rlt_env_step(scratch, RLT_ENV_ACTION_UP, NULL, NULL, &single), RLT_STATUS_ILLEGAL_SCHEDULE);
    rlt_env_destroy(scratch);
    int n_calls = f.n_calls;
    assert_refused(envs, actions, RLT_STATUS_ILLEGAL_SCHEDULE, "envs[2] of 4: ", single.message);
    cr_assert_eq(f.n_calls, n_calls, "a refused batch evaluated states");
    destroy_all(envs);
}

Test(env_batch, actions_out_of_range_done_and_unreset_envs_are_refused)
{
    fake_eval f = {0};
    rlt_env *envs[N_REF];
    refusal_envs(&f, envs);
    int actions[N_REF] = {RLT_ENV_ACTION_DOWN, RLT_ENV_N_ACTIONS, RLT_ENV_ACTION_DOWN, RLT_ENV_ACTION_DOWN};
    assert_refused(envs, actions, RLT_STATUS_INVALID_ARGUMENT, "envs[1] of 4: ", "action 17 is out of range");
    actions[1] = -3;
    assert_refused(envs, actions, RLT_STATUS_INVALID_ARGUMENT, "envs[1] of 4: ", "action -3 is out of range");
    actions[1] = RLT_ENV_ACTION_DOWN;

    /* a done env: stepping it is refused, as rlt_env_step refuses it (the caller resets it) */
    cr_assert_eq(rlt_env_step(envs[3], RLT_ENV_ACTION_STOP, NULL, NULL, NULL), RLT_STATUS_OK);
    assert_refused(envs, actions, RLT_STATUS_INVALID_ARGUMENT, "envs[3] of 4: ", "the episode is over");
    actions[3] = RLT_ENV_ACTION_NONE; /* but it can be observed */
    cr_assert_eq(rlt_env_step_batch(envs, N_REF, actions, NULL, NULL, NULL, NULL, NULL), RLT_STATUS_OK);

    /* an env never reset: refused, NONE too (there is nothing to observe) */
    rlt_env *fresh = NULL;
    rlt_env_opts o = {.peak_gflops = PEAK, .evaluate = fake_evaluate, .evaluate_ctx = &f};
    cr_assert_eq(rlt_env_create("matmul:M=8,N=8,K=8", &o, &fresh, NULL), RLT_STATUS_OK);
    rlt_env *with_fresh[N_REF] = {envs[0], envs[1], fresh, envs[3]};
    assert_refused(with_fresh, actions, RLT_STATUS_INVALID_ARGUMENT, "envs[2] of 4: ",
                   "call rlt_env_reset before stepping");
    actions[2] = RLT_ENV_ACTION_NONE;
    assert_refused(with_fresh, actions, RLT_STATUS_INVALID_ARGUMENT, "envs[2] of 4: ",
                   "call rlt_env_reset before observing");
    rlt_env_destroy(fresh);
    destroy_all(envs);
}

Test(env_batch, the_same_env_twice_is_refused_naming_both)
{
    fake_eval f = {0};
    rlt_env *envs[N_REF];
    refusal_envs(&f, envs);
    rlt_env *twice[N_REF] = {envs[0], envs[1], envs[0], envs[3]};
    int actions[N_REF] = {RLT_ENV_ACTION_DOWN, RLT_ENV_ACTION_DOWN, RLT_ENV_ACTION_DOWN, RLT_ENV_ACTION_DOWN};
    assert_refused(twice, actions, RLT_STATUS_INVALID_ARGUMENT, "envs[0] and envs[2] of 4 are the same env", "");
    /* the marks were cleared: each env steps again */
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_step_batch(envs, N_REF, actions, NULL, NULL, NULL, NULL, &d), RLT_STATUS_OK, "%s",
                 d.message);
    destroy_all(envs);
}

Test(env_batch, an_evaluators_failure_in_one_env_changes_no_env)
{
    fake_eval f = {0};
    rlt_env *envs[N_REF];
    refusal_envs(&f, envs);
    /* a new state for each env (a family each); the evaluator breaks at the third it is asked for */
    int actions[N_REF] = {RLT_ENV_ACTION_SPLIT_4, RLT_ENV_ACTION_SPLIT_4, RLT_ENV_ACTION_SPLIT_4,
                          RLT_ENV_ACTION_SPLIT_4};
    f.fail_at_call = f.n_calls + 3;
    assert_refused(envs, actions, RLT_STATUS_IO_ERROR, "envs[2] of 4: ", "the fake evaluator is broken");
    /* what was evaluated stays cached: mended, the batch asks only for the rest */
    f.fail_at_call = 0;
    int n_calls = f.n_calls;
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_step_batch(envs, N_REF, actions, NULL, NULL, NULL, NULL, &d), RLT_STATUS_OK, "%s",
                 d.message);
    cr_assert_eq(f.n_calls - n_calls, 2);
    destroy_all(envs);
}

/* ---- the batched observation -------------------------------------------- */

Test(env_batch, observe_and_gflops_batches_equal_their_single_calls)
{
    fake_eval f = {0};
    rlt_env *envs[3];
    envs[0] = fake_env("matmul:M=24,N=20,K=12", &f, 0);
    envs[1] = clone_of(envs[0]);
    cr_assert_eq(rlt_env_step(envs[1], RLT_ENV_ACTION_SPLIT_4, NULL, NULL, NULL), RLT_STATUS_OK);
    envs[2] = envs[0]; /* observing the same env twice is fine */
    static float obs[3 * RLT_ENV_OBS_LEN];
    unsigned char masks[3 * RLT_ENV_N_ACTIONS];
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_observe_batch(envs, 3, obs, masks, &d), RLT_STATUS_OK, "%s", d.message);
    for (int i = 0; i < 3; i++) {
        float want[RLT_ENV_OBS_LEN];
        bool mask[RLT_ENV_N_ACTIONS];
        cr_assert_eq(rlt_env_observe(envs[i], want, RLT_ENV_OBS_LEN, NULL), RLT_STATUS_OK);
        rlt_env_action_mask(envs[i], mask);
        cr_assert_eq(memcmp(&obs[i * RLT_ENV_OBS_LEN], want, sizeof want), 0, "env %d", i);
        for (int a = 0; a < RLT_ENV_N_ACTIONS; a++) cr_assert_eq(masks[i * RLT_ENV_N_ACTIONS + a], mask[a]);
    }
    cr_assert_eq(rlt_env_observe_batch(envs, 3, NULL, NULL, &d), RLT_STATUS_OK);
    double gflops[3];
    rlt_env_gflops_batch(envs, 3, gflops);
    for (int i = 0; i < 3; i++) cr_assert(gflops[i] == rlt_env_gflops(envs[i]) && gflops[i] > 0);
    rlt_env *fresh = NULL;
    rlt_env_opts o = {.peak_gflops = PEAK, .evaluate = fake_evaluate, .evaluate_ctx = &f};
    cr_assert_eq(rlt_env_create("matmul:M=8,N=8,K=8", &o, &fresh, NULL), RLT_STATUS_OK);
    envs[2] = fresh;
    obs[0] = -7;
    cr_assert_eq(rlt_env_observe_batch(envs, 3, obs, masks, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(d.message, "envs[2] of 3: call rlt_env_reset"), "%s", d.message);
    cr_assert_eq(obs[0], -7.0f, "written before the refusal");
    rlt_env_destroy(fresh);
    rlt_env_destroy(envs[1]);
    rlt_env_destroy(envs[0]);
}

/* ---- measured envs ------------------------------------------------------ */

Test(env_batch, measured_states_are_built_together_and_measured_once, .timeout = 600)
{
    rlt_env_opts o = {.cflags = "-O1", .repeat = 1, .min_repeat_ms = 1, .peak_gflops = PEAK};
    const char *specs[] = {"matmul:M=20,N=24,K=12", "matmul:M=8,N=16,K=4"};
    fake_eval f = {0};
    rlt_env *envs[3];
    rlt_diag d = {0};
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(rlt_env_create(specs[i], &o, &envs[i], &d), RLT_STATUS_OK, "%s", d.message);
        cr_assert_eq(rlt_env_reset(envs[i], &d), RLT_STATUS_OK, "%s", d.message);
    }
    envs[2] = fake_env("matmul:M=8,N=8,K=8", &f, 0); /* an evaluator's env beside them */
    int actions[] = {RLT_ENV_ACTION_SPLIT_4, RLT_ENV_ACTION_SPLIT_2, RLT_ENV_ACTION_SPLIT_2};
    double rewards[3];
    cr_assert_eq(rlt_env_step_batch(envs, 3, actions, rewards, NULL, NULL, NULL, &d), RLT_STATUS_OK, "%s",
                 d.message);
    for (int i = 0; i < 2; i++) {
        rlt_env_stats s;
        rlt_env_stats_get(envs[i], &s);
        cr_assert_eq(s.n_evaluations, 2, "%s: the start and the state the batch reached", specs[i]);
        cr_assert_eq(s.n_cache_hits, 1, "%s: the step found the prefetched state", specs[i]);
        const char *message = NULL;
        cr_assert_eq(rlt_env_eval_status(envs[i], &message), RLT_STATUS_OK, "%s: %s", specs[i], message);
        cr_assert_gt(rlt_env_gflops(envs[i]), 0.0);
        cr_assert(isfinite(rewards[i]));
    }
    cr_assert_eq(f.n_calls, 2, "the evaluator's env: its start and its step");
    for (int i = 0; i < 3; i++) rlt_env_destroy(envs[i]);
}

/* ---- out of memory ------------------------------------------------------ */

Test(env_batch, out_of_memory_at_every_allocation)
{
    bool has_succeeded = false;
    for (long n = 1; n < 100 && !has_succeeded; n++) {
        fake_eval f = {0};
        rlt_env *envs[2] = {fake_env("matmul:M=24,N=20,K=12", &f, 0), NULL};
        envs[1] = clone_of(envs[0]);
        uint64_t hashes[2] = {rlt_env_state_hash(envs[0]), rlt_env_state_hash(envs[1])};
        int actions[2] = {RLT_ENV_ACTION_SPLIT_2, RLT_ENV_ACTION_SPLIT_4};
        rlt_alloc_fail_after(n);
        rlt_status st = rlt_env_step_batch(envs, 2, actions, NULL, NULL, NULL, NULL, NULL);
        rlt_alloc_fail_after(0);
        cr_assert(st == RLT_STATUS_OK || st == RLT_STATUS_OUT_OF_MEMORY, "allocation %ld: %s", n,
                  rlt_status_str(st));
        has_succeeded = st == RLT_STATUS_OK;
        for (int i = 0; i < 2; i++)
            cr_assert_eq(rlt_env_state_hash(envs[i]) != hashes[i], has_succeeded, "allocation %ld: env %d", n, i);
        rlt_env_destroy(envs[1]);
        rlt_env_destroy(envs[0]);
    }
    cr_assert(has_succeeded);
    assert_no_leaks();
}

/* ---- vector envs (rlt_env_vec) -------------------------------------------- */

#define MAX_VEC 12

/* Every output of a vector env's call, and a row's view of them. */
typedef struct vec_rows {
    float obs[MAX_VEC * RLT_ENV_OBS_LEN];
    unsigned char masks[MAX_VEC * RLT_ENV_N_ACTIONS];
    double rewards[MAX_VEC];
    bool terminated[MAX_VEC], truncated[MAX_VEC], is_legal[MAX_VEC];
    double gflops[MAX_VEC];
    int64_t n_steps[MAX_VEC];
} vec_rows;

static rlt_env_vec_out out_of(vec_rows *r)
{
    return (rlt_env_vec_out){r->obs,     r->masks,  r->rewards, r->terminated, r->truncated,
                             r->is_legal, r->gflops, r->n_steps};
}

/* Fills every output with a byte that no result has: rows written are told apart. */
static void rows_poison(vec_rows *r) { memset(r, 0xa5, sizeof *r); }

/* Row i of `got` against what the single env `twin` gives now, with the
 * reward, flags and count the test kept for it. */
static void assert_row(const vec_rows *got, int i, const rlt_env *twin, double reward, bool is_terminated,
                       bool is_truncated, bool is_legal, int64_t n_steps, const char *what)
{
    float want_obs[RLT_ENV_OBS_LEN];
    bool want_mask[RLT_ENV_N_ACTIONS];
    cr_assert_eq(rlt_env_observe(twin, want_obs, RLT_ENV_OBS_LEN, NULL), RLT_STATUS_OK);
    rlt_env_action_mask(twin, want_mask);
    cr_assert_eq(memcmp(&got->obs[(size_t)i * RLT_ENV_OBS_LEN], want_obs, sizeof want_obs), 0, "%s: observation",
                 what);
    for (int a = 0; a < RLT_ENV_N_ACTIONS; a++)
        cr_assert_eq(got->masks[i * RLT_ENV_N_ACTIONS + a], (unsigned char)want_mask[a], "%s: mask[%s]", what,
                     rlt_env_action_name(a));
    cr_assert_eq(memcmp(&got->rewards[i], &reward, sizeof reward), 0, "%s: reward %.17g, want %.17g", what,
                 got->rewards[i], reward);
    cr_assert_eq(got->terminated[i], is_terminated, "%s: terminated", what);
    cr_assert_eq(got->truncated[i], is_truncated, "%s: truncated", what);
    cr_assert_eq(got->is_legal[i], is_legal, "%s: is_legal", what);
    double gflops = rlt_env_gflops(twin);
    cr_assert_eq(memcmp(&got->gflops[i], &gflops, sizeof gflops), 0, "%s: gflops", what);
    cr_assert_eq(got->n_steps[i], n_steps, "%s: n_steps %lld, want %lld", what, (long long)got->n_steps[i],
                 (long long)n_steps);
}

/* Row i of `got` is all zeros (a final row of an env whose episode did not end). */
static void assert_row_zero(const vec_rows *got, int i, const char *what)
{
    for (int k = 0; k < RLT_ENV_OBS_LEN; k++) cr_assert_eq(got->obs[(size_t)i * RLT_ENV_OBS_LEN + k], 0.0f, "%s", what);
    for (int a = 0; a < RLT_ENV_N_ACTIONS; a++) cr_assert_eq(got->masks[i * RLT_ENV_N_ACTIONS + a], 0, "%s", what);
    cr_assert(!got->terminated[i] && !got->truncated[i] && !got->is_legal[i] && got->gflops[i] == 0.0 &&
                  got->n_steps[i] == 0,
              "%s", what);
}

/* A random action for env: mostly a legal one (stop one time in six), one
 * time in eight any action, legal or not. */
static int64_t random_vec_action(const rlt_env *env, rlt_rng *rng)
{
    bool mask[RLT_ENV_N_ACTIONS];
    rlt_env_action_mask(env, mask);
    int legal[RLT_ENV_N_ACTIONS], n = 0;
    for (int a = 0; a < RLT_ENV_ACTION_STOP; a++)
        if (mask[a]) legal[n++] = a;
    if (n == 0 || rlt_rng_below(rng, 8) == 0) return (int64_t)rlt_rng_below(rng, RLT_ENV_N_ACTIONS);
    if (mask[RLT_ENV_ACTION_STOP] && rlt_rng_below(rng, 6) == 0) return RLT_ENV_ACTION_STOP;
    return legal[rlt_rng_below(rng, (uint64_t)n)];
}

/* Steps `envs` through a vector env (opts) and `twins` (the same states)
 * one by one with single calls, doing what Gymnasium's rules say (the
 * test's own reading of them), for n_rounds of seeded random actions, and
 * checks every output row and state bit for bit. */
static void vec_agrees_with_single_calls(rlt_env **envs, rlt_env **twins, int n, const rlt_env_vec_opts *opts,
                                         int n_rounds, uint64_t seed)
{
    cr_assert(n <= MAX_VEC);
    rlt_env_vec *vec = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_vec_create(envs, n, opts, &vec, &d), RLT_STATUS_OK, "%s", d.message);
    static vec_rows got, final;
    rlt_env_vec_out out = out_of(&got), fin = out_of(&final);
    rows_poison(&got);
    cr_assert_eq(rlt_env_vec_reset(vec, NULL, NULL, &out, &d), RLT_STATUS_OK, "%s", d.message);
    int64_t n_steps[MAX_VEC] = {0};
    bool needs_reset[MAX_VEC] = {false};
    for (int i = 0; i < n; i++) {
        cr_assert_eq(rlt_env_reset(twins[i], &d), RLT_STATUS_OK, "%s", d.message);
        assert_row(&got, i, twins[i], 0.0, false, false, true, 0, "reset");
    }
    rlt_rng rng;
    rlt_rng_seed(&rng, seed);
    int n_ended = 0, n_noops = 0, n_autoresets = 0;
    for (int round = 0; round < n_rounds; round++) {
        char what[64];
        /* DISABLED: the caller resets the envs whose episode ended, some of them */
        if (opts->autoreset == RLT_ENV_AUTORESET_DISABLED) {
            bool which[MAX_VEC];
            bool has_any = false;
            for (int i = 0; i < n; i++) {
                bool has_ended = rlt_env_is_done(twins[i]) ||
                                 (opts->max_steps > 0 && n_steps[i] >= opts->max_steps);
                which[i] = has_ended && (rlt_env_is_done(twins[i]) || rlt_rng_below(&rng, 2));
                has_any |= which[i];
            }
            if (has_any) {
                rows_poison(&got);
                cr_assert_eq(rlt_env_vec_reset(vec, which, NULL, &out, &d), RLT_STATUS_OK, "%s", d.message);
                for (int i = 0; i < n; i++) {
                    if (which[i]) {
                        cr_assert_eq(rlt_env_reset(twins[i], &d), RLT_STATUS_OK, "%s", d.message);
                        n_steps[i] = 0;
                    }
                    snprintf(what, sizeof what, "round %d env %d: reset", round, i);
                    bool is_trunc = opts->max_steps > 0 && n_steps[i] >= opts->max_steps;
                    assert_row(&got, i, twins[i], 0.0, rlt_env_is_done(twins[i]), is_trunc, true, n_steps[i],
                               what);
                }
            }
        }
        int64_t actions[MAX_VEC];
        for (int i = 0; i < n; i++) actions[i] = needs_reset[i] ? 1000 + i : random_vec_action(twins[i], &rng);
        rows_poison(&got);
        rows_poison(&final);
        cr_assert_eq(rlt_env_vec_step(vec, actions, &out, &fin, &d), RLT_STATUS_OK, "round %d: %s", round,
                     d.message);
        for (int i = 0; i < n; i++) {
            rlt_env *twin = twins[i];
            double reward = 0;
            bool is_legal = true;
            if (needs_reset[i]) {
                cr_assert_eq(rlt_env_reset(twin, &d), RLT_STATUS_OK, "%s", d.message);
                n_steps[i] = 0;
                n_autoresets++;
            } else {
                bool mask[RLT_ENV_N_ACTIONS];
                rlt_env_action_mask(twin, mask);
                if (mask[actions[i]]) {
                    cr_assert_eq(rlt_env_step(twin, (int)actions[i], &reward, NULL, &d), RLT_STATUS_OK, "%s",
                                 d.message);
                } else {
                    is_legal = false; /* a no-op */
                    n_noops++;
                }
                n_steps[i]++;
            }
            bool is_term = rlt_env_is_done(twin);
            bool is_trunc = opts->max_steps > 0 && n_steps[i] >= opts->max_steps && !is_term;
            bool has_ended = is_term || is_trunc;
            n_ended += has_ended;
            needs_reset[i] = has_ended && opts->autoreset == RLT_ENV_AUTORESET_NEXT_STEP;
            snprintf(what, sizeof what, "round %d env %d (%s)", round, i,
                     actions[i] >= 1000 ? "autoreset" : rlt_env_action_name((int)actions[i]));
            if (opts->autoreset == RLT_ENV_AUTORESET_SAME_STEP) {
                if (has_ended) {
                    assert_row(&final, i, twin, reward, is_term, is_trunc, is_legal, n_steps[i], what);
                    cr_assert_eq(rlt_env_reset(twin, &d), RLT_STATUS_OK, "%s", d.message);
                    n_steps[i] = 0;
                    is_legal = true;
                } else {
                    assert_row_zero(&final, i, what);
                }
            }
            assert_row(&got, i, twin, reward, is_term, is_trunc, is_legal, n_steps[i], what);
            cr_assert_eq(rlt_env_state_hash(envs[i]), rlt_env_state_hash(twin), "%s", what);
            cr_assert_eq(rlt_env_cursor(envs[i]), rlt_env_cursor(twin), "%s", what);
            cr_assert_eq(rlt_env_n_steps(envs[i]), rlt_env_n_steps(twin), "%s", what);
        }
    }
    cr_assert_gt(n_ended, n_rounds / 4);
    cr_assert_gt(n_noops, 0);
    cr_assert(opts->autoreset != RLT_ENV_AUTORESET_NEXT_STEP || n_autoresets > 0);
    rlt_env_vec_destroy(vec);
}

static void vec_replay_and_evaluated_agree(rlt_env_autoreset autoreset)
{
    enum { N = 9 };
    static const char *const spec = "conv2d:N=1,C=3,H=9,W=8,K=4,R=3,S=3,stride=2,pad=1";
    fake_eval fv = {0}, ft = {0};
    rlt_env *envs[N], *twins[N];
    for (int i = 0; i < N; i++) {
        /* a replay family of four, a family of one evaluated env and two clones, two replays alone */
        if (i == 0 || i >= 7) {
            envs[i] = replay_env();
            twins[i] = replay_env();
        } else if (i < 4) {
            envs[i] = clone_of(envs[0]);
            twins[i] = clone_of(twins[0]);
        } else if (i == 4) {
            envs[i] = fake_env(spec, &fv, 0);
            twins[i] = fake_env(spec, &ft, 0);
        } else {
            envs[i] = clone_of(envs[4]);
            twins[i] = clone_of(twins[4]);
        }
    }
    rlt_env_vec_opts opts = {.max_steps = 6, .autoreset = autoreset};
    vec_agrees_with_single_calls(envs, twins, N, &opts, 150, 3 + (uint64_t)autoreset);
    cr_assert_eq(fv.n_calls, ft.n_calls, "the evaluator was asked %d times, single steps asked %d", fv.n_calls,
                 ft.n_calls);
    for (int i = N - 1; i >= 0; i--) {
        rlt_env_destroy(envs[i]);
        rlt_env_destroy(twins[i]);
    }
}

Test(env_vec, next_step_autoreset_equals_single_calls_bit_for_bit)
{
    vec_replay_and_evaluated_agree(RLT_ENV_AUTORESET_NEXT_STEP);
}

Test(env_vec, same_step_autoreset_equals_single_calls_with_the_final_rows)
{
    vec_replay_and_evaluated_agree(RLT_ENV_AUTORESET_SAME_STEP);
}

Test(env_vec, disabled_autoreset_equals_single_calls_and_the_callers_resets)
{
    vec_replay_and_evaluated_agree(RLT_ENV_AUTORESET_DISABLED);
}

Test(env_vec, a_step_limit_of_the_envs_own_terminates)
{
    fake_eval f = {0}, ft = {0};
    rlt_env *envs[3], *twins[3];
    envs[0] = fake_env("matmul:M=24,N=20,K=12", &f, 3);
    twins[0] = fake_env("matmul:M=24,N=20,K=12", &ft, 3);
    for (int i = 1; i < 3; i++) {
        envs[i] = clone_of(envs[0]);
        twins[i] = clone_of(twins[0]);
    }
    rlt_env_vec_opts opts = {.max_steps = 5};
    vec_agrees_with_single_calls(envs, twins, 3, &opts, 60, 9);
    for (int i = 2; i >= 0; i--) {
        rlt_env_destroy(envs[i]);
        rlt_env_destroy(twins[i]);
    }
}

/* The state of each env, to tell that nothing changed. */
typedef struct vec_snapshot {
    uint64_t hash[N_REF];
    int cursor[N_REF], n_steps[N_REF];
    bool is_done[N_REF], is_reset[N_REF];
} vec_snapshot;

static vec_snapshot snapshot(rlt_env *const *envs)
{
    vec_snapshot s;
    for (int i = 0; i < N_REF; i++) {
        s.hash[i] = rlt_env_state_hash(envs[i]);
        s.cursor[i] = rlt_env_cursor(envs[i]);
        s.n_steps[i] = rlt_env_n_steps(envs[i]);
        s.is_done[i] = rlt_env_is_done(envs[i]);
        s.is_reset[i] = rlt_env_is_reset(envs[i]);
    }
    return s;
}

static void assert_unchanged(rlt_env *const *envs, const vec_snapshot *before, const char *what)
{
    vec_snapshot now = snapshot(envs);
    cr_assert_eq(memcmp(&now, before, sizeof now), 0, "%s: an env changed", what);
}

/* The vector env's step fails with `status`, a message starting with
 * `prefix` and holding `words`, and no env changes. */
static void assert_vec_refused(rlt_env_vec *vec, rlt_env *const *envs, const int64_t *actions, rlt_status status,
                               const char *prefix, const char *words)
{
    vec_snapshot before = snapshot(envs);
    static vec_rows got;
    rlt_env_vec_out out = out_of(&got);
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_vec_step(vec, actions, &out, NULL, &d), status, "%s: %s", rlt_status_str(status),
                 d.message);
    cr_assert_eq(strncmp(d.message, prefix, strlen(prefix)), 0, "message '%s', wanted it to start '%s'", d.message,
                 prefix);
    cr_assert_not_null(strstr(d.message, words), "message '%s' lacks '%s'", d.message, words);
    for (int i = 0; i < N_REF; i++) cr_assert_str_eq(rlt_env_last_error(envs[i]), d.message);
    assert_unchanged(envs, &before, d.message);
}

Test(env_vec, refusals_name_the_env_and_change_nothing)
{
    fake_eval f = {0};
    rlt_env *envs[N_REF];
    refusal_envs(&f, envs);
    rlt_env_vec *vec = NULL, *strict = NULL, *disabled = NULL;
    rlt_diag d = {0};
    rlt_env_vec_opts o = {.max_steps = 0};
    cr_assert_eq(rlt_env_vec_create(envs, N_REF, &o, &vec, &d), RLT_STATUS_OK, "%s", d.message);
    o.masked_action = RLT_ENV_MASKED_REFUSE;
    cr_assert_eq(rlt_env_vec_create(envs, N_REF, &o, &strict, &d), RLT_STATUS_OK, "%s", d.message);
    o = (rlt_env_vec_opts){.autoreset = RLT_ENV_AUTORESET_DISABLED};
    cr_assert_eq(rlt_env_vec_create(envs, N_REF, &o, &disabled, &d), RLT_STATUS_OK, "%s", d.message);

    /* out of range, whatever else: the first one, named with its value and the actions */
    int64_t actions[N_REF] = {RLT_ENV_ACTION_DOWN, RLT_ENV_ACTION_UP, 17, -1};
    assert_vec_refused(vec, envs, actions, RLT_STATUS_INVALID_ARGUMENT, "actions[2] = 17 is out of range: 0..16 (",
                       "up, down, swap_up");
    actions[2] = INT64_MIN;
    assert_vec_refused(vec, envs, actions, RLT_STATUS_INVALID_ARGUMENT, "actions[2] = -9223372036854775808 is",
                       "split_256, merge, unroll, vectorize, parallel, stop)");
    actions[2] = RLT_ENV_ACTION_DOWN;
    actions[3] = RLT_ENV_ACTION_UP;

    /* a masked action (the cursors are on the outermost loop: up): refused by a strict vector env, with
       rlt_env_step's message */
    rlt_env *scratch = clone_of(envs[1]);
    rlt_diag single = {0};
    cr_assert_eq(rlt_env_step(scratch, RLT_ENV_ACTION_UP, NULL, NULL, &single), RLT_STATUS_ILLEGAL_SCHEDULE);
    rlt_env_destroy(scratch);
    assert_vec_refused(strict, envs, actions, RLT_STATUS_ILLEGAL_SCHEDULE, "envs[1] of 4: ", single.message);

    /* a terminated env is refused where no autoreset starts it again */
    cr_assert_eq(rlt_env_step(envs[2], RLT_ENV_ACTION_STOP, NULL, NULL, NULL), RLT_STATUS_OK);
    actions[1] = RLT_ENV_ACTION_DOWN;
    assert_vec_refused(disabled, envs, actions, RLT_STATUS_INVALID_ARGUMENT, "envs[2] of 4: ", "the episode is over");

    /* ... by the others too (it ended outside them: no autoreset is pending) */
    assert_vec_refused(vec, envs, actions, RLT_STATUS_INVALID_ARGUMENT, "envs[2] of 4: ", "the episode is over");

    /* reset, the vector env that takes masked actions as no-ops takes them: up in envs 2 and 3 */
    bool which[N_REF] = {false, false, true, false};
    cr_assert_eq(rlt_env_vec_reset(vec, which, NULL, NULL, &d), RLT_STATUS_OK, "%s", d.message);
    actions[2] = RLT_ENV_ACTION_UP;
    static vec_rows got;
    rlt_env_vec_out out = out_of(&got);
    cr_assert_eq(rlt_env_vec_step(vec, actions, &out, NULL, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert(got.is_legal[0] && got.is_legal[1] && !got.is_legal[2] && !got.is_legal[3]);
    cr_assert(got.rewards[3] == 0.0 && got.n_steps[3] == 1 && rlt_env_cursor(envs[3]) == 0);
    cr_assert(rlt_env_cursor(envs[0]) == 1 && rlt_env_cursor(envs[2]) == 0 && got.n_steps[2] == 1);

    rlt_env_vec_destroy(disabled);
    rlt_env_vec_destroy(strict);
    rlt_env_vec_destroy(vec);
    destroy_all(envs);
}

Test(env_vec, a_failure_in_a_step_puts_every_env_back_resets_included)
{
    fake_eval f = {0};
    rlt_env *envs[N_REF];
    refusal_envs(&f, envs);
    rlt_env_vec *vec = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_vec_create(envs, N_REF, NULL, &vec, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_env_vec_reset(vec, NULL, NULL, NULL, &d), RLT_STATUS_OK, "%s", d.message);
    /* env 0 stops: its autoreset is pending; envs 1 and 2 step to states of their own */
    int64_t actions[N_REF] = {RLT_ENV_ACTION_STOP, RLT_ENV_ACTION_SPLIT_2, RLT_ENV_ACTION_DOWN, RLT_ENV_ACTION_DOWN};
    cr_assert_eq(rlt_env_vec_step(vec, actions, NULL, NULL, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert(rlt_env_is_done(envs[0]));
    /* then: env 0 resets, envs 1 and 2 reach new states, env 3 a state the evaluator cannot score */
    int64_t next[N_REF] = {RLT_ENV_ACTION_SPLIT_4, RLT_ENV_ACTION_SPLIT_4, RLT_ENV_ACTION_SPLIT_8,
                           RLT_ENV_ACTION_SPLIT_8};
    f.fail_at_call = f.n_calls + 3;
    assert_vec_refused(vec, envs, next, RLT_STATUS_IO_ERROR, "envs[3] of 4: ", "the fake evaluator is broken");
    cr_assert(rlt_env_is_done(envs[0]), "env 0's reset was undone");
    /* mended: the step is taken, the reset with it, the states evaluated before not asked for again */
    f.fail_at_call = 0;
    int n_calls = f.n_calls;
    static vec_rows got;
    rlt_env_vec_out out = out_of(&got);
    cr_assert_eq(rlt_env_vec_step(vec, next, &out, NULL, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(f.n_calls - n_calls, 1);
    cr_assert(!rlt_env_is_done(envs[0]) && got.n_steps[0] == 0 && got.rewards[0] == 0.0 && got.n_steps[1] == 2);
    rlt_env_vec_destroy(vec);
    destroy_all(envs);
}

Test(env_vec, create_and_reset_refuse_what_they_cannot_do)
{
    fake_eval f = {0};
    rlt_env *envs[N_REF];
    refusal_envs(&f, envs);
    rlt_env_vec *vec = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_vec_create(envs, 0, NULL, &vec, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert_null(vec);
    rlt_env *twice[N_REF] = {envs[0], envs[1], envs[2], envs[1]};
    d = (rlt_diag){0};
    cr_assert_eq(rlt_env_vec_create(twice, N_REF, NULL, &vec, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(d.message, "envs[1] and envs[3] of 4 are the same env"), "%s", d.message);
    rlt_env_vec_opts bad[] = {{.max_steps = -1}, {.autoreset = RLT_ENV_AUTORESET_COUNT},
                              {.masked_action = RLT_ENV_MASKED_COUNT}};
    for (size_t k = 0; k < RLT_ARRAY_LEN(bad); k++) {
        d = (rlt_diag){0};
        cr_assert_eq(rlt_env_vec_create(envs, N_REF, &bad[k], &vec, &d), RLT_STATUS_INVALID_ARGUMENT);
        cr_assert_not_null(strstr(d.message, "vector env options out of range"), "%s", d.message);
    }

    /* a fresh env must be reset by the first reset, and stepping it before is refused */
    rlt_env *fresh = NULL;
    rlt_env_opts o = {.peak_gflops = PEAK, .evaluate = fake_evaluate, .evaluate_ctx = &f};
    cr_assert_eq(rlt_env_create("matmul:M=8,N=8,K=8", &o, &fresh, NULL), RLT_STATUS_OK);
    rlt_env *with_fresh[N_REF] = {envs[0], fresh, envs[2], envs[3]};
    cr_assert_eq(rlt_env_vec_create(with_fresh, N_REF, NULL, &vec, &d), RLT_STATUS_OK, "%s", d.message);
    int64_t actions[N_REF] = {RLT_ENV_ACTION_DOWN, RLT_ENV_ACTION_DOWN, RLT_ENV_ACTION_DOWN, RLT_ENV_ACTION_DOWN};
    assert_vec_refused(vec, with_fresh, actions, RLT_STATUS_INVALID_ARGUMENT, "envs[1] of 4: ",
                       "call rlt_env_vec_reset before stepping");
    bool which[N_REF] = {true, false, true, true};
    d = (rlt_diag){0};
    cr_assert_eq(rlt_env_vec_reset(vec, which, NULL, NULL, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert_not_null(strstr(d.message, "envs[1] of 4 was never reset"), "%s", d.message);
    cr_assert(!rlt_env_is_reset(fresh) && rlt_env_cursor(envs[0]) == 0);

    /* a schedule that cannot start an episode resets no env */
    const char *schedules[N_REF] = {NULL, "split i 2", "tile i 2", NULL};
    d = (rlt_diag){0};
    cr_assert_eq(rlt_env_vec_reset(vec, NULL, schedules, NULL, &d), RLT_STATUS_PARSE_ERROR);
    cr_assert_not_null(strstr(d.message, "unknown step 'tile'"), "%s", d.message);
    cr_assert(!rlt_env_is_reset(fresh));

    /* from schedules (a NULL one: the default nest), and a subset: every row is written */
    schedules[2] = "split i 4";
    cr_assert_eq(rlt_env_vec_reset(vec, NULL, schedules, NULL, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_env_vec_step(vec, actions, NULL, NULL, &d), RLT_STATUS_OK, "%s", d.message);
    static vec_rows got;
    rlt_env_vec_out out = out_of(&got);
    rows_poison(&got);
    which[1] = false;
    cr_assert_eq(rlt_env_vec_reset(vec, which, schedules, &out, &d), RLT_STATUS_OK, "%s", d.message);
    for (int i = 0; i < N_REF; i++) {
        char what[32];
        snprintf(what, sizeof what, "env %d", i);
        assert_row(&got, i, with_fresh[i], 0.0, false, false, true, which[i] ? 0 : 1, what);
    }
    cr_assert(rlt_env_cursor(fresh) == 1 && rlt_env_cursor(envs[2]) == 0);
    rlt_env *twin = fake_env("matmul:M=24,N=20,K=12", &f, 0);
    cr_assert_eq(rlt_env_reset_schedule(twin, "split i 4", NULL), RLT_STATUS_OK);
    cr_assert_eq(rlt_env_state_hash(envs[2]), rlt_env_state_hash(twin));
    rlt_env_destroy(twin);
    rlt_env_vec_destroy(vec);
    rlt_env_vec_destroy(NULL);
    rlt_env_destroy(fresh);
    destroy_all(envs);
}

Test(env_vec, out_of_memory_at_every_allocation)
{
    bool has_succeeded = false;
    for (long n = 1; n < 200 && !has_succeeded; n++) {
        fake_eval f = {0};
        rlt_env *envs[3] = {fake_env("matmul:M=24,N=20,K=12", &f, 0), NULL, NULL};
        envs[1] = clone_of(envs[0]);
        envs[2] = clone_of(envs[0]);
        int64_t actions[3] = {RLT_ENV_ACTION_SPLIT_2, RLT_ENV_ACTION_SPLIT_4, RLT_ENV_ACTION_STOP};
        rlt_env_vec *vec = NULL;
        rlt_env_vec_opts o = {.autoreset = RLT_ENV_AUTORESET_SAME_STEP};
        static vec_rows got, final;
        rlt_env_vec_out out = out_of(&got), fin = out_of(&final);
        rlt_alloc_fail_after(n);
        rlt_status st = rlt_env_vec_create(envs, 3, &o, &vec, NULL);
        if (st == RLT_STATUS_OK) st = rlt_env_vec_reset(vec, NULL, NULL, &out, NULL);
        uint64_t hashes[3] = {rlt_env_state_hash(envs[0]), rlt_env_state_hash(envs[1]), rlt_env_state_hash(envs[2])};
        if (st == RLT_STATUS_OK) {
            st = rlt_env_vec_step(vec, actions, &out, &fin, NULL);
            for (int i = 0; i < 2; i++)
                cr_assert_eq(rlt_env_state_hash(envs[i]) != hashes[i], st == RLT_STATUS_OK, "allocation %ld: env %d",
                             n, i);
        }
        rlt_alloc_fail_after(0);
        cr_assert(st == RLT_STATUS_OK || st == RLT_STATUS_OUT_OF_MEMORY, "allocation %ld: %s", n,
                  rlt_status_str(st));
        has_succeeded = st == RLT_STATUS_OK;
        if (has_succeeded) /* env 2 stopped, and started again in the same step */
            cr_assert(final.terminated[2] && final.n_steps[2] == 1 && got.terminated[2] && got.n_steps[2] == 0 &&
                      !rlt_env_is_done(envs[2]));
        rlt_env_vec_destroy(vec);
        for (int i = 2; i >= 0; i--) rlt_env_destroy(envs[i]);
    }
    cr_assert(has_succeeded);
    assert_no_leaks();
}
