/* Tests of src/search/bandit.c, the one-step contextual bandit: on the
 * synthetic problem of tests/common/fixtures.h it beats random search and
 * its proposals get better as it learns (and stay flat when it cannot
 * learn); proposals are valid, new and reproducible; records it did not
 * propose are learnt from; allocation failures are reported without leaks. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search/tuner.h"

#include "../common/fixtures.h"
#include "../common/tuners.h"
#include "../common/leaks.h"

#define BATCH 16

/* What one run on the synthetic problem did. */
typedef struct run_stats {
    double best;       /* the best score after the budget */
    double mean_first; /* mean score of the first 4 batches' proposals */
    double mean_last;  /* ... and of the last 4 batches' */
} run_stats;

static run_stats run_synthetic(const char *name, const rlt_space *s, const rlt_config *best, const rlt_tuner_opts *o,
                               int trials)
{
    rlt_tuner *t = tuner_make(name, s, o);
    run_stats r = {0};
    int n_window = 4 * BATCH;
    for (int done = 0; done < trials;) {
        rlt_config batch[BATCH];
        double scores[BATCH];
        int n = rlt_tuner_next_batch(t, BATCH, batch);
        cr_assert_eq(n, BATCH, "%s ran dry after %d trials", name, done);
        for (int i = 0; i < n; i++) {
            scores[i] = fixture_synthetic_score(s, &batch[i], best);
            r.best = fmax(r.best, scores[i]);
            if (done + i < n_window) r.mean_first += scores[i] / n_window;
            if (done + i >= trials - n_window) r.mean_last += scores[i] / n_window;
        }
        rlt_diag d = {0};
        cr_assert_eq(rlt_tuner_update(t, n, batch, scores, &d), RLT_STATUS_OK, "%s", d.message);
        done += n;
    }
    rlt_tuner_destroy(t);
    return r;
}

/* The means over seeds 1..5 of 640 trials each. */
static run_stats mean_over_seeds(const char *name, const rlt_space *s, const rlt_config *best, rlt_tuner_opts o)
{
    run_stats mean = {0};
    for (uint64_t seed = 1; seed <= 5; seed++) {
        o.seed = seed;
        run_stats r = run_synthetic(name, s, best, &o, 640);
        mean.best += r.best / 5;
        mean.mean_first += r.mean_first / 5;
        mean.mean_last += r.mean_last / 5;
    }
    return mean;
}

Test(bandit, beats_random_on_a_known_optimum)
{
    rlt_op *op = fixture_op("matmul:M=512,N=512,K=512");
    rlt_space s;
    tuner_space(op, &s);
    rlt_config best;
    fixture_config(&s, FIXTURE_SYNTHETIC_BEST, &best);
    double bandit = mean_over_seeds("bandit", &s, &best, (rlt_tuner_opts){0}).best;
    double random = mean_over_seeds("random", &s, &best, (rlt_tuner_opts){0}).best;
    cr_log_info("mean best after 640 trials: bandit %.1f, random %.1f (optimum 100)", bandit, random);
    /* measured: bandit 98.5, random 30.6 */
    cr_assert_gt(bandit, random + 30.0, "bandit %.1f vs random %.1f", bandit, random);
    cr_assert_gt(bandit, 80.0, "bandit %.1f", bandit);
    rlt_op_destroy(op);
}

/* The policy moves towards the optimum: its last proposals score far above
 * its first. A bandit whose updates cannot move it (a learning rate of
 * 1e-12) stays where it started, so the measure tells learning apart. */
Test(bandit, proposals_improve_as_the_policy_learns)
{
    rlt_op *op = fixture_op("matmul:M=512,N=512,K=512");
    rlt_space s;
    tuner_space(op, &s);
    rlt_config best;
    fixture_config(&s, FIXTURE_SYNTHETIC_BEST, &best);
    run_stats learnt = mean_over_seeds("bandit", &s, &best, (rlt_tuner_opts){0});
    run_stats frozen = mean_over_seeds("bandit", &s, &best, (rlt_tuner_opts){.bandit_lr = 1e-12});
    cr_log_info("mean score of the first / last 64 proposals: %.2f / %.2f (frozen policy: %.2f / %.2f)",
                learnt.mean_first, learnt.mean_last, frozen.mean_first, frozen.mean_last);
    /* measured: 0.31 -> 52.1; frozen 0.31 -> 0.10 */
    cr_assert_gt(learnt.mean_last, learnt.mean_first + 25.0, "first %.2f, last %.2f", learnt.mean_first,
                 learnt.mean_last);
    cr_assert_lt(frozen.mean_last, frozen.mean_first + 5.0, "frozen: first %.2f, last %.2f", frozen.mean_first,
                 frozen.mean_last);
    rlt_op_destroy(op);
}

/* With the entropy bonus at Chameleon's 0.3 the policy stays near uniform
 * (what docs/tuners.md gives as the reason for the default of 0.01). */
Test(bandit, a_large_entropy_bonus_holds_the_policy_back)
{
    rlt_op *op = fixture_op("matmul:M=512,N=512,K=512");
    rlt_space s;
    tuner_space(op, &s);
    rlt_config best;
    fixture_config(&s, FIXTURE_SYNTHETIC_BEST, &best);
    double fine = mean_over_seeds("bandit", &s, &best, (rlt_tuner_opts){0}).mean_last;
    double held = mean_over_seeds("bandit", &s, &best, (rlt_tuner_opts){.bandit_entropy_coef = 0.3}).mean_last;
    cr_log_info("mean score of the last 64 proposals: entropy coefficient 0.01: %.2f, 0.3: %.2f", fine, held);
    /* measured: 52.1 and 7.9 */
    cr_assert_gt(fine, 2 * held, "0.01: %.2f, 0.3: %.2f", fine, held);
    rlt_op_destroy(op);
}

/* Proposals are checked against everything proposed before over a whole
 * run in the large space (a small space enumerated exactly: test_tuner.c,
 * for every tuner). */
Test(bandit, proposals_are_valid_and_new)
{
    rlt_op *op = fixture_op("matmul:M=512,N=512,K=512");
    rlt_space s;
    tuner_space(op, &s);
    rlt_config best;
    fixture_config(&s, FIXTURE_SYNTHETIC_BEST, &best);
    rlt_tuner *t = tuner_make("bandit", &s, &(rlt_tuner_opts){.seed = 7});
    rlt_visited seen = {0};
    for (int round = 0; round < 60; round++) {
        rlt_config batch[BATCH];
        double scores[BATCH];
        int n = rlt_tuner_next_batch(t, BATCH, batch);
        cr_assert_eq(n, BATCH);
        for (int i = 0; i < n; i++) {
            cr_assert(rlt_space_is_valid(&s, &batch[i]), "round %d: an invalid proposal", round);
            cr_assert(rlt_visited_add(&seen, rlt_space_index_of(&s, &batch[i])), "round %d: a repeated proposal",
                      round);
            scores[i] = fixture_synthetic_score(&s, &batch[i], &best);
        }
        cr_assert_eq(rlt_tuner_update(t, n, batch, scores, NULL), RLT_STATUS_OK);
    }
    rlt_visited_free(&seen);
    rlt_tuner_destroy(t);
    rlt_op_destroy(op);
}

/* The same seed and scores give the same proposals, through several
 * updates; another seed gives others. */
Test(bandit, same_seed_same_proposals)
{
    rlt_op *op = fixture_op("matmul:M=512,N=512,K=512");
    rlt_space s;
    tuner_space(op, &s);
    rlt_config best;
    fixture_config(&s, FIXTURE_SYNTHETIC_BEST, &best);
    enum { N_ROUNDS = 8 };
    static rlt_config proposals[3][N_ROUNDS * BATCH];
    static const uint64_t seeds[3] = {42, 42, 43};
    for (int r = 0; r < 3; r++) {
        rlt_tuner *t = tuner_make("bandit", &s, &(rlt_tuner_opts){.seed = seeds[r]});
        for (int round = 0; round < N_ROUNDS; round++) {
            rlt_config *batch = &proposals[r][round * BATCH];
            double scores[BATCH];
            cr_assert_eq(rlt_tuner_next_batch(t, BATCH, batch), BATCH);
            for (int i = 0; i < BATCH; i++) scores[i] = fixture_synthetic_score(&s, &batch[i], &best);
            cr_assert_eq(rlt_tuner_update(t, BATCH, batch, scores, NULL), RLT_STATUS_OK);
        }
        rlt_tuner_destroy(t);
    }
    for (int i = 0; i < N_ROUNDS * BATCH; i++)
        cr_assert_eq(memcmp(&proposals[0][i], &proposals[1][i], sizeof(rlt_config)), 0, "proposal %d differs", i);
    cr_assert_neq(memcmp(proposals[0], proposals[2], sizeof proposals[0]), 0, "another seed, other proposals");
    /* the last batches, after the updates, differ too */
    cr_assert_neq(memcmp(&proposals[0][(N_ROUNDS - 1) * BATCH], &proposals[2][(N_ROUNDS - 1) * BATCH],
                         BATCH * sizeof(rlt_config)),
                  0);
    rlt_op_destroy(op);
}

/* Records the tuner did not propose (a resumed run's) are training data:
 * after learning only from them, the first proposals score well above a
 * fresh bandit's; and they are never proposed. */
Test(bandit, records_it_did_not_propose_are_learnt_from)
{
    rlt_op *op = fixture_op("matmul:M=512,N=512,K=512");
    rlt_space s;
    tuner_space(op, &s);
    rlt_config best;
    fixture_config(&s, FIXTURE_SYNTHETIC_BEST, &best);
    /* records: the optimum with two knobs changed at random, and random
     * valid configurations, half and half */
    enum { N_RECORDS = 320 };
    static rlt_config records[N_RECORDS];
    static double scores[N_RECORDS];
    rlt_rng rng;
    rlt_rng_seed(&rng, 11);
    rlt_visited recorded = {0};
    for (int i = 0; i < N_RECORDS; i++) {
        rlt_config c;
        do {
            if (i % 2 == 0) {
                c = best;
                for (int j = 0; j < 2; j++) {
                    int k = (int)rlt_rng_below(&rng, (uint64_t)s.n_knobs);
                    c.choice[k] = (int16_t)rlt_rng_below(&rng, (uint64_t)s.knobs[k].n_choices);
                }
            } else {
                rlt_space_random(&s, &rng, &c);
            }
        } while (!rlt_space_is_valid(&s, &c) || !rlt_visited_add(&recorded, rlt_space_index_of(&s, &c)));
        records[i] = c;
        scores[i] = fixture_synthetic_score(&s, &c, &best);
    }
    double mean_fresh = 0, mean_taught = 0;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        rlt_tuner *fresh = tuner_make("bandit", &s, &(rlt_tuner_opts){.seed = seed});
        rlt_tuner *taught = tuner_make("bandit", &s, &(rlt_tuner_opts){.seed = seed});
        for (int i = 0; i < N_RECORDS; i += BATCH) {
            rlt_diag d = {0};
            cr_assert_eq(rlt_tuner_update(taught, BATCH, &records[i], &scores[i], &d), RLT_STATUS_OK, "%s",
                         d.message);
        }
        rlt_config batch[64];
        cr_assert_eq(rlt_tuner_next_batch(fresh, 64, batch), 64);
        for (int i = 0; i < 64; i++) mean_fresh += fixture_synthetic_score(&s, &batch[i], &best) / (3 * 64);
        cr_assert_eq(rlt_tuner_next_batch(taught, 64, batch), 64);
        for (int i = 0; i < 64; i++) {
            mean_taught += fixture_synthetic_score(&s, &batch[i], &best) / (3 * 64);
            cr_assert_not(rlt_visited_has(&recorded, rlt_space_index_of(&s, &batch[i])), "a record was proposed");
        }
        rlt_tuner_destroy(fresh);
        rlt_tuner_destroy(taught);
    }
    cr_log_info("mean score of the first 64 proposals: fresh %.2f, after %d records %.2f", mean_fresh, N_RECORDS,
                mean_taught);
    cr_assert_gt(mean_taught, mean_fresh + 5.0, "fresh %.2f, taught %.2f", mean_fresh, mean_taught);
    rlt_visited_free(&recorded);
    rlt_op_destroy(op);
}

/* Every allocation of create, proposing and two updates, failed in turn:
 * create and update report OUT_OF_MEMORY, nothing crashes or leaks. */
Test(bandit, out_of_memory_is_reported_without_leaks)
{
    rlt_op *op = fixture_op("matmul:M=64,N=64,K=64");
    rlt_space s;
    tuner_space(op, &s);
    int n_failures = tuner_out_of_memory_runs("bandit", &s, &(rlt_tuner_opts){.seed = 3}, 2, BATCH, 1, false, 1000);
    cr_assert_geq(n_failures, 8, "only %d allocations were tried", n_failures);
    rlt_op_destroy(op);
    assert_no_leaks();
}
