/*
 * test_imitate.c - demonstrations and behaviour cloning
 * (src/policy/imitate.c), the blind rollout of a bc policy (rollout.c) and
 * the env's batched reset: the demonstrations file and its refusals,
 * demonstrations made on envs whose evaluator is a function of the nest (so
 * nothing is compiled), a policy that learns to repeat them, bit for bit
 * from a seed, and a rollout that measures only where it ends.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policy/imitate.h"
#include "policy/search.h"

#include "../common/fake_env.h"
#include "../common/leaks.h"
#include "../common/tmp.h"

#define MM1 "matmul:M=32,N=24,K=16"
#define MM2 "matmul:M=48,N=32,K=16"
#define MM3 "matmul:M=16,N=40,K=24"

static int act(const char *name)
{
    int a = rlt_env_action_from_name(name);
    cr_assert_geq(a, 0, "%s", name);
    return a;
}

/* A set of demonstrations, each op with the same trace. */
static void demos_of(rlt_demo_set *s, const char *const *specs, int n, const char *const *names, int n_trace)
{
    *s = (rlt_demo_set){.n = n, .demos = rlt_calloc((size_t)n, sizeof(rlt_demo))};
    cr_assert_not_null(s->demos);
    for (int i = 0; i < n; i++) {
        rlt_demo *d = &s->demos[i];
        d->op_spec = rlt_strdup(specs[i]);
        d->gflops = 10 + i;
        d->start_gflops = 1;
        d->n_trace = n_trace;
        for (int k = 0; k < n_trace; k++) d->trace[k] = act(names[k]);
    }
}

static const char *const trace_names[] = {"down", "split_4", "down", "unroll", "up", "swap_down"};
static const char *const three_ops[] = {MM1, MM2, MM3};

/* ---- the file ------------------------------------------------------------ */

Test(imitate, demonstrations_file_round_trip)
{
    char *dir = tmp_dir_make("/tmp/rlt_demos_XXXXXX");
    const char *path = tmp_path_in(dir, "x.demos");
    rlt_demo_set s, back;
    demos_of(&s, three_ops, 3, trace_names, 6);
    s.demos[2].n_trace = 0; /* stop at once: written "-" */
    s.about = rlt_strdup("made by a test");
    rlt_diag d = {0};
    cr_assert_eq(rlt_demo_set_save(&s, path, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_demo_set_load(path, &back, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(back.n, 3);
    cr_assert_str_eq(back.about, "made by a test");
    for (int i = 0; i < 3; i++) {
        cr_assert_str_eq(back.demos[i].op_spec, s.demos[i].op_spec);
        cr_assert_float_eq(back.demos[i].gflops, s.demos[i].gflops, 1e-3);
        cr_assert_eq(back.demos[i].n_trace, s.demos[i].n_trace);
        for (int k = 0; k < s.demos[i].n_trace; k++) cr_assert_eq(back.demos[i].trace[k], s.demos[i].trace[k]);
    }
    rlt_demo_set_free(&back);
    rlt_demo_set_free(&s);
    tmp_remove_tree(dir);
    free(dir);
    assert_no_leaks();
}

Test(imitate, malformed_demonstrations_files_are_refused_with_their_line)
{
    static const struct {
        const char *text, *says;
    } cases[] = {
        {"# rltune shapes v1\n", ":1: not a demonstrations file"},
        {"# rltune demos v2\n", "version '2'"},
        {"# rltune demos v1\n", "no demonstration"},
        {"# rltune demos v1\n" MM1 "\t1\tdown\n", ":2: expected four tab-separated fields"},
        {"# rltune demos v1\n# about\n" MM1 "\t1\t1\tdown jump\n", ":3: unknown action 'jump'"},
        {"# rltune demos v1\n" MM1 "\tfast\t1\tdown\n", ":2: GFLOP/s 'fast'"},
        {"# rltune demos v1\n" MM1 "\t-3\t1\tdown\n", ":2: GFLOP/s '-3'"},
        {"# rltune demos v1\nmatmul:M=0\t1\t1\tdown\n", ":2: op spec"},
    };
    char *dir = tmp_dir_make("/tmp/rlt_demos_XXXXXX");
    const char *path = tmp_path_in(dir, "bad.demos");
    for (size_t i = 0; i < RLT_ARRAY_LEN(cases); i++) {
        tmp_file_write_text(path, cases[i].text);
        rlt_demo_set s;
        rlt_diag d = {0};
        cr_assert_eq(rlt_demo_set_load(path, &s, &d), RLT_STATUS_PARSE_ERROR, "case %zu", i);
        cr_assert(strstr(d.message, cases[i].says), "case %zu: %s", i, d.message);
        cr_assert_eq(s.n, 0);
    }
    rlt_diag d = {0};
    rlt_demo_set s;
    cr_assert_eq(rlt_demo_set_load(tmp_path_in(dir, "missing"), &s, &d), RLT_STATUS_IO_ERROR);
    tmp_remove_tree(dir);
    free(dir);
    assert_no_leaks();
}

/* ---- cloning ------------------------------------------------------------- */

static rlt_policy *imitate(const rlt_demo_set *s, uint64_t seed, rlt_imitate_report *rep)
{
    static const int hidden[] = {64, 32};
    rlt_imitate_opts o = {.n_hidden = 2, .hidden = hidden, .epochs = 150, .seed = seed};
    rlt_policy *p = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_policy_imitate(s, &o, &p, rep, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(p->algo, RLT_POLICY_ALGO_BC);
    cr_assert(rlt_policy_is_blind(p));
    return p;
}

Test(imitate, a_cloned_policy_repeats_its_demonstrations)
{
    rlt_demo_set s;
    demos_of(&s, three_ops, 3, trace_names, 6);
    rlt_imitate_report rep;
    rlt_policy *p = imitate(&s, 1, &rep);
    cr_assert_eq(rep.n_demos, 3);
    cr_assert_eq(rep.n_samples, 3 * 7, "six actions and a stop each");
    cr_assert_lt(rep.loss_last, rep.loss_first / 10, "%g -> %g", rep.loss_first, rep.loss_last);
    cr_assert_float_eq(rep.accuracy, 1.0, 1e-12);
    cr_assert_eq(rep.n_reproduced, 3);

    /* Its greedy rollout walks the trace blind and measures where it ends:
     * one state. */
    fake_eval f = {0};
    rlt_env *env = fake_env_make(MM2, &f);
    cr_assert_eq(f.n_calls, 1, "the reset measured the start");
    rlt_optimize_result r;
    rlt_diag d = {0};
    cr_assert_eq(rlt_policy_rollout(p, env, &(rlt_rollout_opts){.max_steps = 16}, &r, &d), RLT_STATUS_OK, "%s",
                 d.message);
    cr_assert_eq(f.n_calls, 2, "only the end was measured");
    cr_assert_eq(r.n_evaluations, 1);

    /* The end state is the trace's, whatever the rollout kept. */
    rlt_env *walk = fake_env_make(MM2, &f);
    for (int k = 0; k < 6; k++) cr_assert_eq(rlt_env_step(walk, act(trace_names[k]), NULL, NULL, NULL), RLT_STATUS_OK);
    double end = rlt_env_gflops(walk);
    if (end > r.start_gflops) {
        cr_assert_eq(r.n_trace, 6);
        for (int k = 0; k < 6; k++) cr_assert_eq(r.trace[k], act(trace_names[k]));
        cr_assert_float_eq(r.gflops, end, 1e-12);
        cr_assert_eq(rlt_env_state_hash(env), rlt_env_state_hash(walk), "the env is left at the end state");
    } else {
        cr_assert_eq(r.n_trace, 0, "the start was faster: nothing to take");
        cr_assert_float_eq(r.gflops, r.start_gflops, 1e-12);
    }
    rlt_optimize_result_free(&r);
    rlt_env_destroy(walk);
    rlt_env_destroy(env);
    rlt_policy_destroy(p);
    rlt_demo_set_free(&s);
    assert_no_leaks();
}

Test(imitate, a_blind_beam_measures_only_where_its_paths_end)
{
    rlt_demo_set s;
    demos_of(&s, three_ops, 3, trace_names, 6);
    rlt_policy *p = imitate(&s, 2, NULL);
    for (int width = 2; width <= 5; width += 3) {
        fake_eval f = {0};
        rlt_env *env = fake_env_make(MM2, &f);
        rlt_optimize_result r;
        rlt_diag d = {0};
        cr_assert_eq(rlt_policy_rollout(p, env, &(rlt_rollout_opts){.max_steps = 10, .beam_width = width}, &r, &d),
                     RLT_STATUS_OK, "%s", d.message);
        cr_assert_leq(r.n_evaluations, width, "width %d: %lld states measured", width, (long long)r.n_evaluations);
        cr_assert_geq(r.n_evaluations, 1);
        cr_assert_eq(f.n_calls, 1 + r.n_evaluations);
        cr_assert_geq(r.gflops, r.start_gflops);
        cr_assert_float_eq(rlt_env_gflops(env), r.gflops, 1e-12, "the env is left at the result");
        /* the trace replays to the result */
        rlt_env *walk = fake_env_make(MM2, &f);
        for (int k = 0; k < r.n_trace; k++)
            cr_assert_eq(rlt_env_step(walk, r.trace[k], NULL, NULL, &d), RLT_STATUS_OK, "%s", d.message);
        cr_assert_eq(rlt_env_state_hash(walk), rlt_env_state_hash(env));
        rlt_env_destroy(walk);
        rlt_optimize_result_free(&r);
        rlt_env_destroy(env);
    }
    rlt_policy_destroy(p);
    rlt_demo_set_free(&s);
    assert_no_leaks();
}

Test(imitate, the_same_seed_gives_the_same_policy_bit_for_bit)
{
    rlt_demo_set s;
    demos_of(&s, three_ops, 3, trace_names, 6);
    rlt_policy *a = imitate(&s, 7, NULL), *b = imitate(&s, 7, NULL), *c = imitate(&s, 8, NULL);
    int n = rlt_mlp_n_params(a->net);
    cr_assert_eq(memcmp(rlt_mlp_params(a->net), rlt_mlp_params(b->net), (size_t)n * sizeof(float)), 0);
    cr_assert_neq(memcmp(rlt_mlp_params(a->net), rlt_mlp_params(c->net), (size_t)n * sizeof(float)), 0);
    rlt_policy_destroy(a);
    rlt_policy_destroy(b);
    rlt_policy_destroy(c);
    rlt_demo_set_free(&s);
}

Test(imitate, the_gflops_input_is_ignored_by_a_blind_policy)
{
    rlt_demo_set s;
    demos_of(&s, three_ops, 1, trace_names, 6);
    rlt_policy *p = imitate(&s, 3, NULL);
    fake_eval f = {0};
    rlt_env *env = fake_env_make(MM1, &f);
    float obs[RLT_ENV_OBS_LEN], s1[RLT_ENV_N_ACTIONS], s2[RLT_ENV_N_ACTIONS];
    cr_assert_eq(rlt_env_observe(env, obs, RLT_ENV_OBS_LEN, NULL), RLT_STATUS_OK);
    cr_assert_eq(rlt_policy_scores(p, 1, obs, s1, NULL), RLT_STATUS_OK);
    obs[RLT_ENV_OBS_GFLOPS] = 0.9f;
    cr_assert_eq(rlt_policy_scores(p, 1, obs, s2, NULL), RLT_STATUS_OK);
    cr_assert_eq(memcmp(s1, s2, sizeof s1), 0);
    rlt_env_destroy(env);
    rlt_policy_destroy(p);
    rlt_demo_set_free(&s);
}

Test(imitate, demonstrations_that_cannot_be_replayed_are_refused)
{
    static const char *const illegal[] = {"swap_up"}; /* the cursor starts on the outermost loop */
    rlt_demo_set s;
    demos_of(&s, three_ops, 2, illegal, 1);
    rlt_policy *p = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_policy_imitate(&s, NULL, &p, NULL, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "demonstration 1") && strstr(d.message, "swap_up"), "%s", d.message);
    cr_assert_null(p);
    rlt_demo_set_free(&s);
    demos_of(&s, three_ops, 1, trace_names, 6);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_policy_imitate(&s, &(rlt_imitate_opts){.max_steps = 5}, &p, NULL, &d),
                 RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "more than 5 steps"), "%s", d.message);
    cr_assert_eq(rlt_policy_imitate(&s, &(rlt_imitate_opts){.lr = 2}, &p, NULL, &d), RLT_STATUS_INVALID_ARGUMENT);
    rlt_demo_set_free(&s);
    assert_no_leaks();
}

/* ---- making demonstrations ---------------------------------------------- */

Test(imitate, every_shape_is_labelled_with_the_best_trace_of_the_library)
{
    fake_eval f = {0};
    const char *search[] = {MM1, MM2};
    rlt_demo_gen_opts o = {.budget_s = 30, .max_steps = 6, .tie = -1, .env = fake_env_opts(&f)};
    rlt_demo_set s;
    rlt_diag d = {0};
    cr_assert_eq(rlt_demos_make(search, 2, three_ops, 3, &o, &s, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(s.n, 3);
    cr_assert(s.about && strstr(s.about, "greedy"), "%s", s.about);
    for (int i = 0; i < 3; i++) {
        const rlt_demo *dm = &s.demos[i];
        cr_assert_str_eq(dm->op_spec, three_ops[i]);
        /* the trace replays to the GFLOP/s it was chosen by */
        rlt_env *env = fake_env_make(dm->op_spec, &f);
        cr_assert_float_eq(rlt_env_gflops(env), dm->start_gflops, 1e-9);
        for (int k = 0; k < dm->n_trace; k++)
            cr_assert_eq(rlt_env_step(env, dm->trace[k], NULL, NULL, &d), RLT_STATUS_OK, "%s", d.message);
        cr_assert_float_eq(rlt_env_gflops(env), dm->gflops, 1e-3);
        cr_assert_geq(dm->gflops, dm->start_gflops);
        if (i < 2) {
            /* no worse than the greedy search on its own shape (no tie rule) */
            rlt_env *g = fake_env_make(dm->op_spec, &f);
            rlt_optimize_result r;
            rlt_env_search_opts so = {.kind = RLT_ENV_SEARCH_GREEDY, .max_steps = 6, .time_budget_s = 30};
            cr_assert_eq(rlt_env_search(g, &so, &r, &d), RLT_STATUS_OK, "%s", d.message);
            cr_assert_geq(dm->gflops + 1e-3, r.gflops, "%s: %g < %g", dm->op_spec, dm->gflops, r.gflops);
            rlt_optimize_result_free(&r);
            rlt_env_destroy(g);
        }
        rlt_env_destroy(env);
    }
    rlt_demo_set_free(&s);
    assert_no_leaks();
}

/* Given traces alone are the library: no search, each shape labelled with
 * the best of those that apply (one never does: swap_up from the outermost
 * loop), nothing measured but the labelling. */
Test(imitate, given_traces_are_the_library_without_a_search)
{
    fake_eval f = {0};
    rlt_demo_set given;
    demos_of(&given, three_ops, 3, trace_names, 6);
    given.demos[1].n_trace = 3; /* a prefix of the first: a second trace */
    given.demos[2].n_trace = 1;
    given.demos[2].trace[0] = act("swap_up");
    rlt_demo_gen_opts o = {.no_greedy = true, .tie = -1, .traces = &given, .env = fake_env_opts(&f)};
    rlt_demo_set s;
    rlt_diag d = {0};
    cr_assert_eq(rlt_demos_make(NULL, 0, three_ops, 3, &o, &s, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(s.n, 3);
    cr_assert(s.about && strstr(s.about, "3 traces given") && !strstr(s.about, "greedy"), "%s", s.about);
    for (int i = 0; i < 3; i++) {
        const rlt_demo *dm = &s.demos[i];
        cr_assert(dm->n_trace == 0 || dm->n_trace == 6 || dm->n_trace == 3, "%s: %d", dm->op_spec, dm->n_trace);
        if (dm->n_trace > 0) cr_assert_eq(dm->trace[0], act("down"));
        rlt_env *env = fake_env_make(dm->op_spec, &f);
        for (int k = 0; k < dm->n_trace; k++)
            cr_assert_eq(rlt_env_step(env, dm->trace[k], NULL, NULL, &d), RLT_STATUS_OK, "%s", d.message);
        cr_assert_float_eq(rlt_env_gflops(env), dm->gflops, 1e-3);
        rlt_env_destroy(env);
    }
    rlt_demo_set_free(&s);
    rlt_demo_set_free(&given);
    assert_no_leaks();
}

Test(imitate, making_demonstrations_refuses_bad_options)
{
    fake_eval f = {0};
    const char *search[] = {MM1};
    rlt_demo_set s;
    rlt_diag d = {0};
    rlt_demo_gen_opts o = {.no_greedy = true, .env = fake_env_opts(&f)};
    cr_assert_eq(rlt_demos_make(search, 1, search, 1, &o, &s, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "expert"), "%s", d.message);
    o = (rlt_demo_gen_opts){.budget_s = -1, .env = fake_env_opts(&f)};
    cr_assert_eq(rlt_demos_make(search, 1, search, 1, &o, &s, &d), RLT_STATUS_INVALID_ARGUMENT);
    o = (rlt_demo_gen_opts){.env = fake_env_opts(&f)};
    cr_assert_eq(rlt_demos_make(search, 0, search, 1, &o, &s, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert_eq(f.n_calls, 0, "nothing measured");
}

/* ---- the env's batched reset --------------------------------------------- */

Test(imitate, a_batched_reset_equals_resets_one_by_one)
{
    static const char *const scheds[] = {
        "# rltune schedule v1\nsplit i 4\n",
        NULL,
        "# rltune schedule v1\nsplit j 8\nreorder i j.o k j.i\n",
        "# rltune schedule v1\nsplit i 4\n", /* the same state again: evaluated once */
    };
    fake_eval f = {0}, g = {0};
    rlt_env *base = fake_env_make(MM1, &f), *envs[4];
    for (int i = 0; i < 4; i++) cr_assert_eq(rlt_env_clone(base, &envs[i], NULL), RLT_STATUS_OK);
    int before = f.n_calls;
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_reset_batch(envs, scheds, 4, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(f.n_calls - before, 2, "two new states (the default nest was cached)");
    for (int i = 0; i < 4; i++) {
        rlt_env *one = fake_env_make(MM1, &g);
        if (scheds[i]) cr_assert_eq(rlt_env_reset_schedule(one, scheds[i], &d), RLT_STATUS_OK, "%s", d.message);
        cr_assert_eq(rlt_env_state_hash(envs[i]), rlt_env_state_hash(one), "env %d", i);
        cr_assert_float_eq(rlt_env_gflops(envs[i]), rlt_env_gflops(one), 1e-12);
        cr_assert_eq(rlt_env_n_steps(envs[i]), 0);
        rlt_env_destroy(one);
    }
    /* A bad schedule fails the call before anything is measured. */
    const char *bad[] = {"# rltune schedule v1\nsplit j 2\n", "# rltune schedule v1\nsplit q 2\n"};
    before = f.n_calls;
    cr_assert_neq(rlt_env_reset_batch(envs, bad, 2, &d), RLT_STATUS_OK);
    cr_assert(strstr(d.message, "start schedule 2 of 2"), "%s", d.message);
    cr_assert_eq(f.n_calls, before);
    for (int i = 0; i < 4; i++) rlt_env_destroy(envs[i]);
    rlt_env_destroy(base);
    assert_no_leaks();
}
