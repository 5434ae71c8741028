/* Tests of src/search/ga_dqn.c, the ga-dqn tuner: proposals are new,
 * valid and reproducible, a small space is enumerated exactly, a
 * configuration it did not propose is accepted, options out of range are
 * refused by name, learning follows the published schedule, the mutation
 * DQN learns which mutation costs (a check that fails when learning is
 * broken), and on the synthetic problem ga-dqn beats random (and is
 * compared with ga). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search/ga_dqn.h"

#include "../common/fixtures.h"
#include "../common/tuners.h"
#include "../common/leaks.h"
#include "../common/tmp.h"
#include "nn/agent_file.h"

static rlt_ga_dqn_stats stats_of(const rlt_tuner *t)
{
    rlt_ga_dqn_stats st;
    rlt_diag d = {0};
    cr_assert_eq(rlt_tuner_ga_dqn_stats(t, &st, &d), RLT_STATUS_OK, "%s", d.message);
    return st;
}

Test(ga_dqn, is_registered_and_refuses_options_out_of_range_by_name)
{
    bool is_listed = false;
    for (const char *const *n = rlt_tuner_names(); *n; n++) is_listed |= strcmp(*n, "ga-dqn") == 0;
    cr_assert(is_listed, "ga-dqn is not in rlt_tuner_names()");
    rlt_op *op = fixture_op("matmul:M=64,N=64,K=64");
    rlt_space s;
    tuner_space(op, &s);
    static const struct {
        rlt_tuner_opts opts;
        const char *name;
    } cases[] = {
        {{.ga_dqn_gamma = 1.0}, "ga_dqn_gamma"},        {{.ga_dqn_gamma = -0.5}, "ga_dqn_gamma"},
        {{.ga_dqn_lr = NAN}, "ga_dqn_lr"},              {{.ga_dqn_eps_decay = 1.5}, "ga_dqn_eps_decay"},
        {{.ga_dqn_eps_min = 2}, "ga_dqn_eps_min"},      {{.ga_dqn_replay = -1}, "ga_dqn_replay"},
        {{.ga_dqn_minibatch = -64}, "ga_dqn_minibatch"}, {{.ga_dqn_grad_clip = -1}, "ga_dqn_grad_clip"},
    };
    for (size_t i = 0; i < RLT_ARRAY_LEN(cases); i++) {
        rlt_diag d = {0};
        rlt_tuner *t = NULL;
        cr_assert_eq(rlt_tuner_create("ga-dqn", &s, &cases[i].opts, &t, &d), RLT_STATUS_INVALID_ARGUMENT, "%s",
                     cases[i].name);
        cr_assert_null(t);
        cr_assert(strstr(d.message, cases[i].name), "%s", d.message);
    }
    /* the other tuners are not ga-dqn */
    rlt_tuner *ga = tuner_make("ga", &s, NULL);
    rlt_ga_dqn_stats st;
    rlt_diag d = {0};
    cr_assert_eq(rlt_tuner_ga_dqn_stats(ga, &st, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "not ga-dqn"), "%s", d.message);
    rlt_tuner_destroy(ga);
    rlt_op_destroy(op);
    assert_no_leaks();
}

/* Past the point where learning starts: the same seed and scores give the
 * same proposals, another seed others; all are valid and new. */
Test(ga_dqn, proposals_are_valid_new_and_reproducible)
{
    rlt_op *op = fixture_op("matmul:M=512,N=512,K=512");
    rlt_space s;
    tuner_space(op, &s);
    rlt_config best;
    fixture_config(&s, FIXTURE_SYNTHETIC_BEST, &best);
    enum { TRIALS = 320 };
    rlt_config *a = calloc(TRIALS, sizeof *a), *b = calloc(TRIALS, sizeof *b), *c = calloc(TRIALS, sizeof *c);
    rlt_tuner *ta = tuner_make("ga-dqn", &s, &(rlt_tuner_opts){.seed = 42});
    rlt_tuner *tb = tuner_make("ga-dqn", &s, &(rlt_tuner_opts){.seed = 42});
    rlt_tuner *tc = tuner_make("ga-dqn", &s, &(rlt_tuner_opts){.seed = 43});
    tuner_drive(ta, &s, fixture_synthetic_score, &best, TRIALS, a, NULL, NULL);
    tuner_drive(tb, &s, fixture_synthetic_score, &best, TRIALS, b, NULL, NULL);
    tuner_drive(tc, &s, fixture_synthetic_score, &best, TRIALS, c, NULL, NULL);
    cr_assert_gt(stats_of(ta).n_learn_steps, 100, "learning had started");
    for (int i = 0; i < TRIALS; i++) {
        cr_assert_eq(memcmp(a[i].choice, b[i].choice, sizeof a[i].choice), 0, "proposal %d differs", i);
        cr_assert(rlt_space_is_valid(&s, &a[i]), "proposal %d is invalid", i);
        uint64_t idx = rlt_space_index_of(&s, &a[i]);
        for (int j = 0; j < i; j++) cr_assert_neq(rlt_space_index_of(&s, &a[j]), idx, "proposals %d and %d", j, i);
    }
    cr_assert_neq(memcmp(a, c, sizeof *a * TRIALS), 0, "another seed, other proposals");
    rlt_ga_dqn_stats sa = stats_of(ta), sb = stats_of(tb);
    cr_assert_eq(sa.crossover_loss, sb.crossover_loss, "the same learning");
    rlt_tuner_destroy(ta);
    rlt_tuner_destroy(tb);
    rlt_tuner_destroy(tc);
    free(a);
    free(b);
    free(c);
    rlt_op_destroy(op);
    assert_no_leaks();
}

/* A record read back on resume: accepted, counted toward the best (the
 * reward's scale), never proposed, and no transition for the agents. */
Test(ga_dqn, accepts_a_config_it_did_not_propose)
{
    rlt_op *op = fixture_op("matmul:M=512,N=512,K=512");
    rlt_space s;
    tuner_space(op, &s);
    rlt_config best;
    fixture_config(&s, FIXTURE_SYNTHETIC_BEST, &best);
    rlt_tuner *t = tuner_make("ga-dqn", &s, &(rlt_tuner_opts){.seed = 7});
    enum { TRIALS = 200 };
    rlt_config *proposed = calloc(TRIALS, sizeof *proposed);
    tuner_drive(t, &s, fixture_synthetic_score, &best, 96, proposed, NULL, NULL);
    /* a valid configuration it has not proposed, next to one it has */
    rlt_config foreign[2];
    rlt_rng rng;
    rlt_rng_seed(&rng, 99);
    bool is_new = false;
    while (!is_new) {
        do rlt_space_random(&s, &rng, &foreign[0]);
        while (!rlt_space_is_valid(&s, &foreign[0]));
        is_new = true;
        uint64_t idx = rlt_space_index_of(&s, &foreign[0]);
        for (int i = 0; i < 96; i++) is_new &= rlt_space_index_of(&s, &proposed[i]) != idx;
    }
    foreign[1] = proposed[70]; /* bred, and already scored */
    rlt_ga_dqn_stats before = stats_of(t);
    double scores[2] = {1000.0, 5.0};
    rlt_diag d = {0};
    cr_assert_eq(rlt_tuner_update(t, 2, foreign, scores, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_ga_dqn_stats after = stats_of(t);
    cr_assert_eq(after.best_score, 1000.0);
    cr_assert_eq(after.n_transitions, before.n_transitions, "neither is a new transition");
    uint64_t foreign_idx = rlt_space_index_of(&s, &foreign[0]);
    tuner_drive(t, &s, fixture_synthetic_score, &best, TRIALS - 96, proposed + 96, NULL, NULL);
    for (int i = 96; i < TRIALS; i++) cr_assert_neq(rlt_space_index_of(&s, &proposed[i]), foreign_idx);
    cr_assert_gt(stats_of(t).n_transitions, before.n_transitions, "breeding went on");
    free(proposed);
    rlt_tuner_destroy(t);
    rlt_op_destroy(op);
    assert_no_leaks();
}

/* One transition per bred child; learning starts after learn_start of
 * them, one step each after that, epsilon decays per step to its floor. */
Test(ga_dqn, learning_follows_the_published_schedule)
{
    rlt_op *op = fixture_op("matmul:M=512,N=512,K=512");
    rlt_space s;
    tuner_space(op, &s);
    rlt_config best;
    fixture_config(&s, FIXTURE_SYNTHETIC_BEST, &best);
    /* 4 generations of 64: the first random, 192 children bred; untrained
     * agents, as published */
    rlt_tuner *t = tuner_make("ga-dqn", &s, &(rlt_tuner_opts){.seed = 3, .ga_dqn_fresh = 1});
    tuner_drive(t, &s, fixture_synthetic_score, &best, 256, NULL, NULL, NULL);
    rlt_ga_dqn_stats st = stats_of(t);
    cr_assert_eq(st.n_transitions + st.n_random_children, 192, "%lld + %lld", (long long)st.n_transitions,
                 (long long)st.n_random_children);
    cr_assert_eq(st.n_learn_steps, st.n_transitions - 100);
    cr_assert_float_eq(st.epsilon, fmax(0.1, pow(0.99, (double)st.n_learn_steps)), 1e-9);
    cr_assert(st.crossover_loss > 0 && isfinite(st.crossover_loss), "%g", st.crossover_loss);
    cr_assert(st.mutation_loss > 0 && isfinite(st.mutation_loss), "%g", st.mutation_loss);
    /* every scored child counted once; none chosen greedily while epsilon
     * was 1 (before learning started), some after */
    const rlt_ga_dqn_choices *c = &st.choices;
    cr_assert_eq(c->n[RLT_GA_DQN_GREEDY] + c->n[RLT_GA_DQN_EXPLORED], st.n_transitions);
    cr_assert_leq(c->n[RLT_GA_DQN_GREEDY], st.n_learn_steps);
    cr_assert_gt(c->n[RLT_GA_DQN_GREEDY], 0);
    int64_t n_knobs_greedy = 0;
    for (int k = 0; k <= s.n_knobs; k++) n_knobs_greedy += c->greedy_knobs[k];
    cr_assert_eq(n_knobs_greedy, c->n[RLT_GA_DQN_GREEDY]);
    cr_assert_leq(c->n_no_mutation[RLT_GA_DQN_GREEDY], c->n[RLT_GA_DQN_GREEDY]);
    cr_assert_leq(c->n_new_best[RLT_GA_DQN_EXPLORED], c->n[RLT_GA_DQN_EXPLORED]);
    rlt_tuner_destroy(t);
    /* options move it */
    t = tuner_make("ga-dqn", &s,
                   &(rlt_tuner_opts){.seed = 3, .ga_dqn_learn_start = 150, .ga_dqn_eps_min = 0.9, .ga_dqn_fresh = 1});
    tuner_drive(t, &s, fixture_synthetic_score, &best, 256, NULL, NULL, NULL);
    st = stats_of(t);
    cr_assert_eq(st.n_learn_steps, st.n_transitions - 150);
    cr_assert_float_eq(st.epsilon, 0.9, 1e-9); /* 0.99^42 is below it */
    rlt_tuner_destroy(t);
    rlt_op_destroy(op);
    assert_no_leaks();
}

/* The contrived problem: a configuration scores 100 with pack.A = i and
 * 50 without, nothing else matters. The population soon holds pack.A = i,
 * and from there mutating pack.A (two choices: it always flips) costs
 * (reward -0.5) while every other mutation, or none, costs nothing. */
static int contrived_knob;
static double contrived_score(const rlt_space *s, const rlt_config *c, const rlt_config *best)
{
    (void)s, (void)best;
    return c->choice[contrived_knob] == 1 ? 100.0 : 50.0;
}

/* The share of states with pack.A = i in which mutating pack.A has the
 * lowest action value among the mutation DQN's knob actions (mutations it
 * may take; "no mutation" aside: it is rarely open once the population
 * holds copies of one configuration, so little is learnt of it). */
static double share_ranking_the_costly_mutation_last(const rlt_tuner *t, const rlt_space *s)
{
    rlt_rng rng;
    rlt_rng_seed(&rng, 77);
    int n_last = 0, n_states = 100;
    for (int i = 0; i < n_states; i++) {
        rlt_config c;
        do {
            rlt_space_random(s, &rng, &c);
            c.choice[contrived_knob] = 1;
        } while (!rlt_space_is_valid(s, &c));
        float q[RLT_SPACE_MAX_KNOBS + 1];
        rlt_diag d = {0};
        cr_assert_eq(rlt_tuner_ga_dqn_knob_values(t, &c, q, &d), RLT_STATUS_OK, "%s", d.message);
        int lowest = -1;
        for (int a = 1; a <= s->n_knobs; a++)
            if (isfinite(q[a]) && (lowest < 0 || q[a] < q[lowest])) lowest = a;
        n_last += lowest == contrived_knob + 1;
    }
    return (double)n_last / n_states;
}

/* The check that fails when learning is broken: with learning the mutation
 * DQN ranks the costly mutation last in most states; the same runs without
 * learning (learn_start past the run) rank it last about as often as
 * chance (1 in 10 knobs). */
Test(ga_dqn, mutation_dqn_learns_which_mutation_costs)
{
    rlt_op *op = fixture_op("matmul:M=512,N=512,K=512");
    rlt_space s;
    tuner_space(op, &s);
    contrived_knob = tuner_knob_named(&s, "pack.A");
    cr_assert_eq(s.knobs[contrived_knob].n_choices, 2);
    double learned = 0, frozen = 0;
    enum { SEEDS = 3 };
    for (uint64_t seed = 1; seed <= SEEDS; seed++) {
        rlt_tuner *t = tuner_make("ga-dqn", &s, &(rlt_tuner_opts){.seed = seed, .ga_dqn_fresh = 1});
        tuner_drive(t, &s, contrived_score, NULL, 640, NULL, NULL, NULL);
        double share = share_ranking_the_costly_mutation_last(t, &s);
        cr_log_info("seed %llu: mutating pack.A ranked last in %.0f%% of states (learned)", (unsigned long long)seed,
                    100 * share);
        learned += share / SEEDS;
        rlt_tuner_destroy(t);
        t = tuner_make("ga-dqn", &s, &(rlt_tuner_opts){.seed = seed, .ga_dqn_learn_start = 1 << 30, .ga_dqn_fresh = 1});
        tuner_drive(t, &s, contrived_score, NULL, 640, NULL, NULL, NULL);
        cr_assert_eq(stats_of(t).n_learn_steps, 0);
        frozen += share_ranking_the_costly_mutation_last(t, &s) / SEEDS;
        rlt_tuner_destroy(t);
    }
    cr_log_info("mutating pack.A ranked last: %.0f%% of states learned, %.0f%% without learning", 100 * learned,
                100 * frozen);
    cr_assert_gt(learned, 0.7, "learned %.2f", learned);
    cr_assert_gt(learned, frozen + 0.4, "learned %.2f vs without learning %.2f", learned, frozen);
    rlt_op_destroy(op);
}

Test(ga_dqn, beats_random_on_a_known_optimum)
{
    rlt_op *op = fixture_op("matmul:M=512,N=512,K=512");
    rlt_space s;
    tuner_space(op, &s);
    rlt_config best;
    fixture_config(&s, FIXTURE_SYNTHETIC_BEST, &best);
    double ga_dqn = 0, ga = 0, random = 0;
    for (uint64_t seed = 1; seed <= 5; seed++) {
        ga_dqn += tuner_best_after("ga-dqn", &s, &best, &(rlt_tuner_opts){.seed = seed}, 640) / 5;
        ga += tuner_best_after("ga", &s, &best, &(rlt_tuner_opts){.seed = seed}, 640) / 5;
        random += tuner_best_after("random", &s, &best, &(rlt_tuner_opts){.seed = seed}, 640) / 5;
    }
    cr_log_info("mean best after 640 trials: ga-dqn %.1f, ga %.1f, random %.1f (optimum 100)", ga_dqn, ga, random);
    cr_assert_gt(ga_dqn, random + 20.0, "ga-dqn %.1f vs random %.1f", ga_dqn, random);
    cr_assert_gt(ga_dqn, 80.0, "ga-dqn %.1f", ga_dqn);
    rlt_op_destroy(op);
}

/* The mutation DQN's values of one state: c as its own parents. */
static void knob_values_of(const rlt_tuner *t, const rlt_config *c, float *q)
{
    rlt_diag d = {0};
    cr_assert_eq(rlt_tuner_ga_dqn_knob_values(t, c, q, &d), RLT_STATUS_OK, "%s", d.message);
}

/* A ga-dqn tuner starts from the agents built into the library (trained
 * over many workloads): their exploration rate and learning clocks, not a
 * fresh agent's; ga_dqn_fresh = 1 gives the untrained ones. */
Test(ga_dqn, starts_from_the_built_in_agents)
{
    rlt_op *op = fixture_op("matmul:M=96,N=160,K=200");
    rlt_space s;
    tuner_space(op, &s);
    rlt_tuner *built_in = tuner_make("ga-dqn", &s, &(rlt_tuner_opts){.seed = 5});
    rlt_tuner *fresh = tuner_make("ga-dqn", &s, &(rlt_tuner_opts){.seed = 5, .ga_dqn_fresh = 1});
    rlt_ga_dqn_stats a = stats_of(built_in), b = stats_of(fresh);
    cr_assert_gt(a.n_learn_steps, 1000, "the built-in agents have learnt: %lld steps", (long long)a.n_learn_steps);
    cr_assert_lt(a.epsilon, 0.5, "%g", a.epsilon);
    cr_assert_eq(b.n_learn_steps, 0);
    cr_assert_eq(b.epsilon, 1.0);
    rlt_config c;
    cr_assert_eq(rlt_tuner_next_batch(built_in, 1, &c), 1);
    float qa[RLT_SPACE_MAX_KNOBS + 1], qb[RLT_SPACE_MAX_KNOBS + 1];
    knob_values_of(built_in, &c, qa);
    knob_values_of(fresh, &c, qb);
    cr_assert_neq(memcmp(qa, qb, sizeof(float) * (size_t)(s.n_knobs + 1)), 0);
    rlt_tuner_destroy(built_in);
    rlt_tuner_destroy(fresh);
    rlt_op_destroy(op);
    assert_no_leaks();
}

/* What part 2 of GA-DQN's pretraining needs: an agent that learnt on one
 * knob layout (a matmul's) loads on another (a 3x3 convolution's, with
 * more knobs and other kinds) and acts there as saved; a file of the
 * earlier state (DQNs over genes, no state_version) is refused, saying
 * why. */
Test(ga_dqn, an_agent_moves_between_knob_layouts)
{
    char templ[] = "/tmp/rlt_ga_dqn_XXXXXX";
    const char *dir = tmp_dir_make_in(templ);
    rlt_op *mm = fixture_op("matmul:M=512,N=512,K=512");
    rlt_op *conv = fixture_op("conv2d:N=1,C=32,H=14,W=14,K=64,R=3,S=3,stride=1,pad=1");
    rlt_space sm, sc;
    tuner_space(mm, &sm);
    tuner_space(conv, &sc);
    cr_assert_neq(sm.n_knobs, sc.n_knobs);
    rlt_config best;
    fixture_config(&sm, FIXTURE_SYNTHETIC_BEST, &best);
    rlt_tuner *trained = tuner_make("ga-dqn", &sm, &(rlt_tuner_opts){.seed = 2, .ga_dqn_fresh = 1});
    tuner_drive(trained, &sm, fixture_synthetic_score, &best, 320, NULL, NULL, NULL);
    const char *path = tmp_path_in(dir, "mm.rla");
    rlt_diag d = {0};
    cr_assert_eq(rlt_tuner_save(trained, path, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_tuner *a = tuner_make("ga-dqn", &sc, &(rlt_tuner_opts){.seed = 8});
    rlt_tuner *b = tuner_make("ga-dqn", &sc, &(rlt_tuner_opts){.seed = 9});
    cr_assert_eq(rlt_tuner_load(a, path, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_tuner_load(b, path, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(stats_of(a).n_learn_steps, stats_of(trained).n_learn_steps);
    rlt_config c;
    cr_assert_eq(rlt_tuner_next_batch(a, 1, &c), 1);
    float qa[RLT_SPACE_MAX_KNOBS + 1], qb[RLT_SPACE_MAX_KNOBS + 1];
    knob_values_of(a, &c, qa);
    knob_values_of(b, &c, qb);
    /* (only a has proposed c: "no mutation" of it is closed there, not in b) */
    cr_assert_eq(memcmp(qa + 1, qb + 1, sizeof(float) * (size_t)sc.n_knobs), 0, "one agent, the same values");

    rlt_agent_file *f = NULL;
    cr_assert_eq(rlt_agent_file_create("ga-dqn", "vec 3\n", &f, &d), RLT_STATUS_OK, "%s", d.message);
    const char *old = tmp_path_in(dir, "old.rla");
    cr_assert_eq(rlt_agent_file_put_real(f, "epsilon", 0.1, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_agent_file_save(f, old, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_agent_file_destroy(f);
    cr_assert_eq(rlt_tuner_load(b, old, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "state version") && strstr(d.message, "old.rla"), "%s", d.message);
    rlt_tuner_destroy(trained);
    rlt_tuner_destroy(a);
    rlt_tuner_destroy(b);
    rlt_op_destroy(mm);
    rlt_op_destroy(conv);
    tmp_remove_tree(dir);
    assert_no_leaks();
}
