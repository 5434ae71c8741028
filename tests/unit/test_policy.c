/*
 * test_policy.c - LoopTune policies (src/policy/policy.c, rollout.c): the
 * file round trip and its refusals, masked scores, and rollouts (greedy and
 * beam) on an env whose evaluator is a function of the nest, so nothing is
 * compiled.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

#include "../common/fake_env.h"
#include "../common/leaks.h"
#include "../common/tmp.h"

#define MM "matmul:M=32,N=24,K=16"

static rlt_env *make_env(fake_eval *f) { return fake_env_make(MM, f); }

static rlt_policy *make_policy(rlt_policy_algo algo, uint64_t seed)
{
    static const int hidden[] = {32, 16};
    rlt_policy *p = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_policy_create(algo, 2, hidden, seed, &p, &d), RLT_STATUS_OK, "%s", d.message);
    return p;
}

/* Random observations with random masks (every row with a legal action). */
static void random_obs(int n_rows, float *obs, uint64_t seed)
{
    rlt_rng rng;
    rlt_rng_seed(&rng, seed);
    for (int i = 0; i < n_rows; i++) {
        float *row = obs + (size_t)i * RLT_ENV_OBS_LEN;
        for (int k = 0; k < RLT_ENV_OBS_LEN; k++) row[k] = (float)rlt_rng_uniform(&rng);
        for (int a = 0; a < RLT_ENV_N_ACTIONS; a++) row[RLT_ENV_OBS_MASK + a] = rlt_rng_below(&rng, 2) ? 1.0f : 0.0f;
        row[RLT_ENV_OBS_MASK + RLT_ENV_ACTION_STOP] = 1.0f;
    }
}

/* ---- scores and files --------------------------------------------------- */

Test(policy, scores_mask_illegal_actions)
{
    rlt_policy *p = make_policy(RLT_POLICY_ALGO_DQN, 1);
    float obs[8 * RLT_ENV_OBS_LEN], scores[8 * RLT_ENV_N_ACTIONS];
    random_obs(8, obs, 2);
    cr_assert_eq(rlt_policy_scores(p, 8, obs, scores, NULL), RLT_STATUS_OK);
    for (int i = 0; i < 8; i++) {
        const float *mask = obs + (size_t)i * RLT_ENV_OBS_LEN + RLT_ENV_OBS_MASK, *row = scores + i * RLT_ENV_N_ACTIONS;
        for (int a = 0; a < RLT_ENV_N_ACTIONS; a++)
            cr_assert_eq(mask[a] > 0.5f, row[a] != -INFINITY, "row %d action %d", i, a);
        int best = rlt_policy_best_action(row);
        cr_assert(mask[best] > 0.5f);
        for (int a = 0; a < RLT_ENV_N_ACTIONS; a++) cr_assert_leq(row[a], row[best]);
    }
    float none[RLT_ENV_N_ACTIONS];
    for (int a = 0; a < RLT_ENV_N_ACTIONS; a++) none[a] = -INFINITY;
    cr_assert_eq(rlt_policy_best_action(none), RLT_ENV_ACTION_STOP);
    rlt_policy_destroy(p);
}

Test(policy, file_round_trip_keeps_every_output)
{
    rlt_policy_algo algos[] = {RLT_POLICY_ALGO_DQN, RLT_POLICY_ALGO_PPO};
    char *dir = tmp_dir_make("/tmp/rlt_policy_XXXXXX");
    char path[4096];
    snprintf(path, sizeof path, "%s/p.rlp", dir);
    for (int k = 0; k < 2; k++) {
        rlt_policy *p = make_policy(algos[k], 7), *q = NULL;
        rlt_diag d = {0};
        cr_assert_eq(rlt_policy_set_about(p, "trained by a test", &d), RLT_STATUS_OK);
        cr_assert_eq(rlt_policy_save(p, path, &d), RLT_STATUS_OK, "%s", d.message);
        cr_assert_eq(rlt_policy_load(path, &q, &d), RLT_STATUS_OK, "%s", d.message);
        cr_assert_eq(q->algo, algos[k]);
        cr_assert_str_eq(q->about, "trained by a test");
        cr_assert_eq(q->critic != NULL, algos[k] == RLT_POLICY_ALGO_PPO);
        float obs[4 * RLT_ENV_OBS_LEN], a[4 * RLT_ENV_N_ACTIONS], b[4 * RLT_ENV_N_ACTIONS], va[4], vb[4];
        random_obs(4, obs, 3);
        cr_assert_eq(rlt_policy_scores(p, 4, obs, a, NULL), RLT_STATUS_OK);
        cr_assert_eq(rlt_policy_scores(q, 4, obs, b, NULL), RLT_STATUS_OK);
        cr_assert_arr_eq(a, b, sizeof a, "%s: scores differ after a load", rlt_policy_algo_str(algos[k]));
        cr_assert_eq(rlt_policy_values(p, 4, obs, va, NULL), RLT_STATUS_OK);
        cr_assert_eq(rlt_policy_values(q, 4, obs, vb, NULL), RLT_STATUS_OK);
        cr_assert_arr_eq(va, vb, sizeof va);
        rlt_policy_destroy(q);
        rlt_policy_destroy(p);
    }
    tmp_remove_tree(dir);
    free(dir);
    assert_no_leaks();
}

Test(policy, files_that_are_not_policies_are_refused)
{
    char *dir = tmp_dir_make("/tmp/rlt_policy_XXXXXX");
    char path[4096];
    rlt_diag d = {0};
    rlt_policy *p = NULL;
    /* another tuner's agent */
    snprintf(path, sizeof path, "%s/agent", dir);
    rlt_agent_file *f = NULL;
    cr_assert_eq(rlt_agent_file_create("dqn", NULL, &f, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_agent_file_save(f, path, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_agent_file_destroy(f);
    cr_assert_eq(rlt_policy_load(path, &p, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "not a policy"), "%s", d.message);
    cr_assert_null(p);
    /* a policy of another observation layout */
    rlt_policy *good = make_policy(RLT_POLICY_ALGO_DQN, 1);
    cr_assert_eq(rlt_agent_file_create("policy", NULL, &f, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_agent_file_put_bytes(f, "algo", "dqn", 3, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_agent_file_put_real(f, "obs_version", RLT_ENV_OBS_VERSION + 1, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_agent_file_put_mlp(f, "net", good->net, NULL, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_agent_file_put_bytes(f, "about", "", 0, &d), RLT_STATUS_OK);
    snprintf(path, sizeof path, "%s/old.rlp", dir);
    cr_assert_eq(rlt_agent_file_save(f, path, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_agent_file_destroy(f);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_policy_load(path, &p, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "observation layout"), "%s", d.message);
    /* not a file of ours; no file */
    snprintf(path, sizeof path, "%s/junk", dir);
    cr_assert_eq(rlt_file_write(path, "hello", 5, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_policy_load(path, &p, &d), RLT_STATUS_PARSE_ERROR);
    snprintf(path, sizeof path, "%s/missing", dir);
    cr_assert_eq(rlt_policy_load(path, &p, &d), RLT_STATUS_IO_ERROR);
    rlt_policy_destroy(good);
    tmp_remove_tree(dir);
    free(dir);
}

/* ---- rollouts ----------------------------------------------------------- */

/* The trace replays from a fresh start to the result's nest and GFLOP/s. */
static void assert_trace_replays(const rlt_optimize_result *r, rlt_env *at_result)
{
    fake_eval f = {0};
    rlt_env *env = make_env(&f);
    rlt_diag d = {0};
    for (int i = 0; i < r->n_trace; i++)
        cr_assert_eq(rlt_env_step(env, r->trace[i], NULL, NULL, &d), RLT_STATUS_OK, "step %d: %s", i, d.message);
    cr_assert_eq(rlt_env_state_hash(env), rlt_env_state_hash(at_result));
    cr_assert_float_eq(rlt_env_gflops(env), r->gflops, 1e-12);
    char *s = rlt_env_schedule(env);
    cr_assert_str_eq(s, r->schedule);
    rlt_free(s);
    rlt_env_destroy(env);
}

/* A policy preferring `first`, then `second`, whatever it sees: the last
 * layer's weights zero, its biases the preference. */
static rlt_policy *preferring(rlt_policy_algo algo, int first, int second)
{
    rlt_policy *p = make_policy(algo, 3);
    const rlt_mlp_spec *spec = rlt_mlp_get_spec(p->net);
    float *w = NULL, *b = NULL;
    rlt_mlp_layer_params(p->net, spec->n_layers - 1, &w, &b);
    memset(w, 0, (size_t)RLT_ENV_N_ACTIONS * (size_t)spec->layers[spec->n_layers - 2].n_units * sizeof *w);
    for (int a = 0; a < RLT_ENV_N_ACTIONS; a++) b[a] = a == first ? 2.0f : a == second ? 1.0f : 0.0f;
    return p;
}

Test(policy, greedy_rollout_follows_the_policy_and_keeps_the_best_state)
{
    fake_eval f = {0};
    rlt_env *env = make_env(&f);
    rlt_policy *p = preferring(RLT_POLICY_ALGO_DQN, RLT_ENV_ACTION_SPLIT_2, RLT_ENV_ACTION_DOWN);
    rlt_optimize_result r;
    rlt_diag d = {0};
    double start = rlt_env_gflops(env);
    cr_assert_eq(rlt_policy_rollout(p, env, &(rlt_rollout_opts){.max_steps = 12}, &r, &d), RLT_STATUS_OK, "%s",
                 d.message);
    cr_assert_float_eq(r.start_gflops, start, 1e-12);
    cr_assert_geq(r.gflops, start);
    cr_assert_float_eq(rlt_env_gflops(env), r.gflops, 1e-12, "the env is left at the result");
    cr_assert_leq(r.n_trace, 12);
    cr_assert_gt(r.n_evaluations, 0);
    cr_assert_eq(r.n_evaluations, f.n_calls - 1, "the start was measured at the reset");
    if (r.n_trace > 0) cr_assert_eq(r.trace[0], RLT_ENV_ACTION_SPLIT_2, "the policy's first choice");
    cr_assert(r.wall_s >= 0 && r.time_ms > 0);
    assert_trace_replays(&r, env);
    rlt_optimize_result_free(&r);
    rlt_policy_destroy(p);
    rlt_env_destroy(env);
}

Test(policy, greedy_rollout_never_revisits_a_state)
{
    /* up and down alone would shuttle the cursor for ever */
    fake_eval f = {0};
    rlt_env *env = make_env(&f);
    rlt_policy *p = preferring(RLT_POLICY_ALGO_PPO, RLT_ENV_ACTION_DOWN, RLT_ENV_ACTION_UP);
    rlt_optimize_result r;
    cr_assert_eq(rlt_policy_rollout(p, env, &(rlt_rollout_opts){.max_steps = 8}, &r, NULL), RLT_STATUS_OK);
    /* down, down (innermost), then up would go back: the third choice is taken */
    rlt_env_stats s;
    rlt_env_stats_get(env, &s);
    cr_assert_gt(s.n_evaluations, 1, "the rollout got past the cursor moves");
    rlt_optimize_result_free(&r);
    rlt_policy_destroy(p);
    rlt_env_destroy(env);
}

Test(policy, beam_rollout_returns_the_best_state_it_measured)
{
    for (int width = 2; width <= 4; width += 2) {
        fake_eval f = {0};
        rlt_env *env = make_env(&f);
        rlt_policy *p = make_policy(RLT_POLICY_ALGO_PPO, 5);
        rlt_optimize_result r;
        rlt_diag d = {0};
        rlt_rollout_opts o = {.max_steps = 6, .beam_width = width};
        cr_assert_eq(rlt_policy_rollout(p, env, &o, &r, &d), RLT_STATUS_OK, "%s", d.message);
        cr_assert_geq(r.gflops, r.start_gflops);
        cr_assert_eq(r.n_evaluations, f.n_calls - 1);
        cr_assert_geq(r.n_steps, width, "width %d: a level expands several states", width);
        cr_assert_float_eq(rlt_env_gflops(env), r.gflops, 1e-12);
        assert_trace_replays(&r, env);
        rlt_optimize_result_free(&r);
        rlt_policy_destroy(p);
        rlt_env_destroy(env);
    }
    assert_no_leaks();
}

Test(policy, rollout_refuses_bad_options_and_an_env_not_reset)
{
    fake_eval f = {0};
    rlt_env_opts o = fake_env_opts(&f);
    rlt_env *env = NULL;
    cr_assert_eq(rlt_env_create(MM, &o, &env, NULL), RLT_STATUS_OK);
    rlt_policy *p = make_policy(RLT_POLICY_ALGO_DQN, 1);
    rlt_optimize_result r;
    rlt_diag d = {0};
    cr_assert_eq(rlt_policy_rollout(p, env, NULL, &r, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "reset"), "%s", d.message);
    cr_assert_eq(rlt_env_reset(env, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_policy_rollout(p, env, &(rlt_rollout_opts){.max_steps = -1}, &r, &d),
                 RLT_STATUS_INVALID_ARGUMENT);
    cr_assert_eq(rlt_policy_rollout(p, env, &(rlt_rollout_opts){.beam_width = 1000}, &r, &d),
                 RLT_STATUS_INVALID_ARGUMENT);
    rlt_policy_destroy(p);
    rlt_env_destroy(env);
}

Test(policy, bad_network_sizes_are_refused)
{
    rlt_policy *p = NULL;
    rlt_diag d = {0};
    int big[] = {5000};
    cr_assert_eq(rlt_policy_create(RLT_POLICY_ALGO_DQN, 1, big, 1, &p, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "5000"), "%s", d.message);
    int many[5] = {8, 8, 8, 8, 8};
    cr_assert_eq(rlt_policy_create(RLT_POLICY_ALGO_PPO, 5, many, 1, &p, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert_null(p);
    rlt_policy_algo a;
    cr_assert(rlt_policy_algo_from_str("ppo", &a) && a == RLT_POLICY_ALGO_PPO);
    cr_assert(!rlt_policy_algo_from_str("a2c", &a));
}
