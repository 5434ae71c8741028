/* Tests of src/search/ppo.c, the "ppo" tuner (Chameleon: PPO walkers over
 * the cost model, adaptive sampling): on the synthetic problem of
 * tests/common/fixtures.h it beats random search, and its proposals are
 * far better than those of the same tuner whose policy cannot learn;
 * proposals are valid, new and reproducible; adaptive sampling gives one
 * configuration per cluster, never a visited, invalid or repeated one;
 * transfer rows and records it did not propose train its model before its
 * first proposal; a small space is enumerated exactly, and scored whole
 * unless ppo_score_whole says to walk it; failures everywhere
 * do not stop it; bad options are refused; running out of memory is
 * reported without leaks.
 *
 * Most tests run with 32 walkers instead of 128, to keep the file short in
 * the sanitizer build. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search/ppo.h"

#include "../common/fixtures.h"
#include "../common/tuners.h"
#include "../common/leaks.h"

#define BATCH 16
#define FAST(s) ((rlt_tuner_opts){.seed = (s), .ppo_walkers = 32})

/* What one run on the synthetic problem did. */
typedef struct run_stats {
    double best;      /* the best score after the budget */
    double mean_last; /* the mean score of the last 4 batches' proposals */
} run_stats;

static run_stats run_synthetic(const char *name, const rlt_space *s, const rlt_config *best, const rlt_tuner_opts *o,
                               int trials)
{
    rlt_tuner *t = tuner_make(name, s, o);
    static rlt_config configs[1024];
    static double scores[1024];
    cr_assert_leq(trials, 1024);
    int n = tuner_drive(t, s, fixture_synthetic_score, best, trials, configs, scores, NULL);
    cr_assert_eq(n, trials, "%s ran dry after %d trials", name, n);
    run_stats r = {0};
    for (int i = 0; i < n; i++) {
        r.best = fmax(r.best, scores[i]);
        if (i >= n - 4 * BATCH) r.mean_last += scores[i] / (4 * BATCH);
    }
    rlt_tuner_destroy(t);
    return r;
}

Test(ppo, beats_random_on_a_known_optimum)
{
    rlt_op *op;
    rlt_space s;
    rlt_config best;
    tuner_synthetic_space(&op, &s, &best);
    double ppo = 0, random = 0;
    for (uint64_t seed = 1; seed <= 2; seed++) {
        ppo += run_synthetic("ppo", &s, &best, &FAST(seed), 160).best / 2;
        random += run_synthetic("random", &s, &best, &FAST(seed), 160).best / 2;
    }
    cr_log_info("mean best after 160 trials: ppo %.1f, random %.1f (optimum 100)", ppo, random);
    /* measured: ppo 95.3, random 4.6 */
    cr_assert_gt(ppo, random + 40.0, "ppo %.1f vs random %.1f", ppo, random);
    cr_assert_gt(ppo, 70.0, "ppo %.1f", ppo);
    rlt_op_destroy(op);
    assert_no_leaks();
}

/* The policy matters: the same tuner from the same seed whose updates
 * cannot move the policy (a learning rate of 1e-12: its walkers walk at
 * random) proposes far worse configurations by the end of the run. */
Test(ppo, a_learning_policy_proposes_better_than_a_frozen_one)
{
    rlt_op *op;
    rlt_space s;
    rlt_config best;
    tuner_synthetic_space(&op, &s, &best);
    rlt_tuner_opts frozen = FAST(1);
    frozen.ppo_lr = 1e-12;
    run_stats learnt = run_synthetic("ppo", &s, &best, &FAST(1), 160);
    run_stats fixed = run_synthetic("ppo", &s, &best, &frozen, 160);
    cr_log_info("best / mean score of the last 64 proposals: learning %.1f / %.1f, frozen %.1f / %.1f", learnt.best,
                learnt.mean_last, fixed.best, fixed.mean_last);
    /* measured: 90.6 / 44.5 and 55.0 / 6.5 */
    cr_assert_gt(learnt.mean_last, 2 * fixed.mean_last + 10.0, "learning %.2f, frozen %.2f", learnt.mean_last,
                 fixed.mean_last);
    rlt_ppo_stats st;
    rlt_tuner *t = tuner_make("ppo", &s, &FAST(1));
    tuner_drive(t, &s, fixture_synthetic_score, &best, 64, NULL, NULL, NULL);
    cr_assert_eq(rlt_tuner_ppo_stats(t, &st, NULL), RLT_STATUS_OK);
    cr_log_info("after 64 trials: %lld fits, %lld explorations, %lld steps, %lld PPO updates, entropy %.2f nats",
                (long long)st.n_fits, (long long)st.n_explorations, (long long)st.n_steps,
                (long long)st.n_ppo_updates, st.last_entropy);
    cr_assert_eq(st.n_fits, 4);          /* one per measured batch */
    cr_assert_eq(st.n_explorations, 3); /* the first batch is random */
    cr_assert_gt(st.n_ppo_updates, 0);
    cr_assert_lt(st.last_entropy, 10 * log(3.0)); /* below uniform over 10 knobs */
    rlt_tuner_destroy(t);
    rlt_op_destroy(op);
}

/* Proposals are checked against everything proposed before over a whole
 * run in the large space. */
Test(ppo, proposals_are_valid_and_new)
{
    rlt_op *op;
    rlt_space s;
    rlt_config best;
    tuner_synthetic_space(&op, &s, &best);
    rlt_tuner *t = tuner_make("ppo", &s, &FAST(7));
    rlt_visited seen = {0};
    for (int round = 0; round < 20; round++) {
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
    rlt_ppo_stats st;
    cr_assert_eq(rlt_tuner_ppo_stats(t, &st, NULL), RLT_STATUS_OK);
    cr_log_info("proposals: %lld from adaptive sampling, %lld from the model's ranking, %lld random; "
                "%lld steps in %lld episodes",
                (long long)st.n_sampled, (long long)st.n_ranked, (long long)st.n_random, (long long)st.n_steps,
                (long long)st.n_episodes);
    /* 19 explorations of 100 steps; a new episode every 500 steps */
    cr_assert_eq(st.n_steps, 1900);
    cr_assert_eq(st.n_episodes, 4);
    cr_assert_eq(st.n_sampled + st.n_ranked + st.n_random, 20 * BATCH);
    cr_assert_eq(st.n_random, BATCH, "only the first batch is random");
    cr_assert_geq(st.n_sampled, 19 * 8, "at least 8 clusters a batch");
    rlt_visited_free(&seen);
    rlt_tuner_destroy(t);
    rlt_op_destroy(op);
}

/* The same seed and scores give the same proposals, through several
 * updates; another seed gives others. */
Test(ppo, same_seed_same_proposals)
{
    rlt_op *op;
    rlt_space s;
    rlt_config best;
    tuner_synthetic_space(&op, &s, &best);
    enum { N_ROUNDS = 5 };
    static rlt_config proposals[3][N_ROUNDS * BATCH];
    static const uint64_t seeds[3] = {42, 42, 43};
    for (int r = 0; r < 3; r++) {
        rlt_tuner *t = tuner_make("ppo", &s, &FAST(seeds[r]));
        cr_assert_eq(tuner_drive(t, &s, fixture_synthetic_score, &best, N_ROUNDS * BATCH, proposals[r], NULL, NULL),
                     N_ROUNDS * BATCH);
        rlt_tuner_destroy(t);
    }
    for (int i = 0; i < N_ROUNDS * BATCH; i++)
        cr_assert_eq(memcmp(&proposals[0][i], &proposals[1][i], sizeof(rlt_config)), 0, "proposal %d differs", i);
    /* the last batch, from the model and the walkers, differs with the seed */
    cr_assert_neq(memcmp(&proposals[0][(N_ROUNDS - 1) * BATCH], &proposals[2][(N_ROUNDS - 1) * BATCH],
                         BATCH * sizeof(rlt_config)),
                  0);
    rlt_op_destroy(op);
}

/* Candidates in 8 clusters: members of a cluster share their knobs of
 * highest cardinality (vec, the tiles, the middle tiles) and differ in the
 * two-choice knobs. Adaptive sampling gives one configuration per cluster:
 * the shared knobs, and each other knob the value most of the members
 * have; when that one is visited, a member of the cluster instead. */
Test(ppo, adaptive_sampling_gives_one_config_per_cluster)
{
    rlt_op *op;
    rlt_space s;
    rlt_config best;
    tuner_synthetic_space(&op, &s, &best);
    int unroll = tuner_knob_named(&s, "unroll"), pack_b = tuner_knob_named(&s, "pack.B");
    enum { N_CLUSTERS = 8, PER = 3 };
    rlt_config cand[N_CLUSTERS * PER], mode[N_CLUSTERS];
    rlt_rng rng;
    rlt_rng_seed(&rng, 5);
    for (int c = 0; c < N_CLUSTERS; c++) {
        /* a base whose three variants are valid: the mode has unroll = 1
         * (2 of 3 members) and pack.B = the base's (2 of 3) */
        for (;;) {
            rlt_space_random(&s, &rng, &mode[c]);
            mode[c].choice[unroll] = 1;
            rlt_config v[PER] = {mode[c], mode[c], mode[c]};
            v[1].choice[pack_b] = (int16_t)(1 - mode[c].choice[pack_b]);
            v[2].choice[unroll] = 0;
            bool is_ok = true;
            for (int i = 0; i < PER; i++) is_ok &= rlt_space_is_valid(&s, &v[i]);
            for (int i = 0; i < c * PER && is_ok; i++)
                is_ok &= memcmp(&cand[i].choice[0], &mode[c].choice[0], 6 * sizeof(int16_t)) != 0;
            if (!is_ok) continue;
            for (int i = 0; i < PER; i++) cand[c * PER + i] = v[i]; /* v[0] is the mode itself */
            break;
        }
    }
    /* the members interleaved, as a ranking by the model would mix them */
    rlt_config mixed[N_CLUSTERS * PER];
    for (int i = 0; i < N_CLUSTERS * PER; i++) mixed[i] = cand[(i % N_CLUSTERS) * PER + i / N_CLUSTERS];
    rlt_config out[16];
    int n_out = 0, k = 0;
    rlt_diag d = {0};
    rlt_rng_seed(&rng, 1);
    cr_assert_eq(rlt_ppo_adaptive_sample(&s, NULL, N_CLUSTERS * PER, mixed, 16, &rng, out, &n_out, &k, &d),
                 RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(k, N_CLUSTERS, "8 distinct points on the clustered knobs: the elbow stops at 8");
    cr_assert_eq(n_out, N_CLUSTERS);
    for (int c = 0; c < N_CLUSTERS; c++) {
        int hits = 0;
        for (int i = 0; i < n_out; i++) hits += memcmp(&out[i], &mode[c], sizeof mode[c]) == 0;
        cr_assert_eq(hits, 1, "cluster %d: its mode configuration %d times", c, hits);
    }
    /* cluster 0's mode visited: one of its other members instead */
    rlt_visited visited = {0};
    rlt_visited_add(&visited, rlt_space_index_of(&s, &mode[0]));
    rlt_rng_seed(&rng, 1);
    cr_assert_eq(rlt_ppo_adaptive_sample(&s, &visited, N_CLUSTERS * PER, mixed, 16, &rng, out, &n_out, &k, NULL),
                 RLT_STATUS_OK);
    cr_assert_eq(n_out, N_CLUSTERS);
    int n_members = 0;
    for (int i = 0; i < n_out; i++) {
        cr_assert_not(rlt_visited_has(&visited, rlt_space_index_of(&s, &out[i])), "a visited configuration");
        n_members += memcmp(&out[i], &cand[1], sizeof cand[1]) == 0 || memcmp(&out[i], &cand[2], sizeof cand[2]) == 0;
    }
    cr_assert_eq(n_members, 1, "cluster 0 gives one of its other members");
    /* at most k_max */
    cr_assert_eq(rlt_ppo_adaptive_sample(&s, NULL, N_CLUSTERS * PER, mixed, 5, &rng, out, &n_out, &k, NULL),
                 RLT_STATUS_OK);
    cr_assert_eq(k, 5);
    cr_assert_eq(n_out, 5);
    rlt_visited_free(&visited);
    rlt_op_destroy(op);
}

/* On random candidates (many ties, rounding of centroids to choices that
 * may be invalid): what comes out is valid, unvisited, distinct, at most
 * one per cluster. */
Test(ppo, adaptive_sampling_never_repeats_or_gives_visited_or_invalid_configs)
{
    rlt_op *op;
    rlt_space s;
    rlt_config best;
    tuner_synthetic_space(&op, &s, &best);
    rlt_rng rng;
    rlt_rng_seed(&rng, 3);
    for (int trial = 0; trial < 20; trial++) {
        int n = 1 + (int)rlt_rng_below(&rng, 128);
        rlt_config cand[128];
        rlt_visited visited = {0};
        for (int i = 0; i < n; i++) {
            do rlt_space_random(&s, &rng, &cand[i]);
            while (!rlt_space_is_valid(&s, &cand[i]));
            /* some neighbours of candidates are visited */
            rlt_config nb;
            if (rlt_space_neighbour(&s, &cand[i], (int)rlt_rng_below(&rng, (uint64_t)s.n_knobs), 1, &nb))
                rlt_visited_add(&visited, rlt_space_index_of(&s, &nb));
        }
        for (int i = 0; i < n; i++) /* candidates are unvisited */
            if (rlt_visited_has(&visited, rlt_space_index_of(&s, &cand[i]))) cand[i] = cand[0];
        if (rlt_visited_has(&visited, rlt_space_index_of(&s, &cand[0]))) {
            rlt_visited_free(&visited);
            continue;
        }
        int k_max = 1 + (int)rlt_rng_below(&rng, 32), n_out = 0, k = 0;
        rlt_config out[32];
        cr_assert_eq(rlt_ppo_adaptive_sample(&s, &visited, n, cand, k_max, &rng, out, &n_out, &k, NULL),
                     RLT_STATUS_OK);
        cr_assert(k >= 1 && k <= k_max && n_out <= k, "trial %d: k %d, %d out", trial, k, n_out);
        cr_assert_geq(n_out, 1);
        for (int i = 0; i < n_out; i++) {
            cr_assert(rlt_space_is_valid(&s, &out[i]), "trial %d: invalid", trial);
            cr_assert_not(rlt_visited_has(&visited, rlt_space_index_of(&s, &out[i])), "trial %d: visited", trial);
            for (int j = 0; j < i; j++)
                cr_assert_neq(memcmp(&out[i], &out[j], sizeof out[i]), 0, "trial %d: repeated", trial);
        }
        rlt_visited_free(&visited);
    }
    rlt_diag d = {0};
    int n_out;
    cr_assert_eq(rlt_ppo_adaptive_sample(&s, NULL, 0, NULL, 8, &rng, NULL, &n_out, NULL, &d),
                 RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "candidates"), "%s", d.message);
    rlt_op_destroy(op);
}

/* Rows of another workload with the same optimum (the transfer of
 * search/transfer.h) train the model at create: the first batch comes from
 * the walkers and adaptive sampling and scores well above a cold start's
 * random first batch. */
Test(ppo, transfer_rows_train_the_model_before_the_first_batch)
{
    rlt_op *op;
    rlt_space s;
    rlt_config best;
    tuner_synthetic_space(&op, &s, &best);
    enum { N_ROWS = 400 };
    int nf = rlt_space_n_features(&s);
    float *xs = calloc((size_t)N_ROWS * (size_t)nf, sizeof *xs);
    double *ys = calloc(N_ROWS, sizeof *ys);
    rlt_rng rng;
    rlt_rng_seed(&rng, 99);
    for (int i = 0; i < N_ROWS; i++) {
        rlt_config c;
        do rlt_space_random(&s, &rng, &c);
        while (!rlt_space_is_valid(&s, &c));
        cr_assert_eq(rlt_space_features(&s, &c, xs + (size_t)i * (size_t)nf, NULL), RLT_STATUS_OK);
        ys[i] = fixture_synthetic_score(&s, &c, &best) / 100.0;
    }
    double warm = 0, cold = 0;
    for (uint64_t seed = 1; seed <= 2; seed++) {
        for (int w = 0; w < 2; w++) {
            rlt_tuner_opts o = FAST(seed);
            if (w) o.n_transfer = N_ROWS, o.transfer_xs = xs, o.transfer_ys = ys;
            rlt_tuner *t = tuner_make("ppo", &s, &o);
            rlt_ppo_stats st;
            cr_assert_eq(rlt_tuner_ppo_stats(t, &st, NULL), RLT_STATUS_OK);
            cr_assert_eq(st.n_fits, w, "the model is fitted at create with transfer rows only");
            rlt_config batch[BATCH];
            cr_assert_eq(rlt_tuner_next_batch(t, BATCH, batch), BATCH);
            double mean = 0;
            for (int i = 0; i < BATCH; i++) mean += fixture_synthetic_score(&s, &batch[i], &best) / BATCH / 2;
            *(w ? &warm : &cold) += mean;
            cr_assert_eq(rlt_tuner_ppo_stats(t, &st, NULL), RLT_STATUS_OK);
            cr_assert_eq(st.n_random, w ? 0 : BATCH);
            rlt_tuner_destroy(t);
        }
    }
    cr_log_info("mean score of the first batch: warm %.1f, cold %.1f (optimum 100)", warm, cold);
    cr_assert_gt(warm, 2 * cold + 5.0, "warm %.1f vs cold %.1f", warm, cold);
    /* rows announced but not given are refused */
    rlt_tuner *t = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_tuner_create("ppo", &s, &(rlt_tuner_opts){.n_transfer = 3}, &t, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "transferred rows"), "%s", d.message);
    free(xs);
    free(ys);
    rlt_op_destroy(op);
}

/* Records it did not propose (a resumed run's) train the model: the next
 * batch is far better than a fresh tuner's, and none of them is proposed. */
Test(ppo, records_it_did_not_propose_train_the_model_and_are_never_proposed)
{
    rlt_op *op;
    rlt_space s;
    rlt_config best;
    tuner_synthetic_space(&op, &s, &best);
    enum { N_RECORDS = 192 };
    static rlt_config records[N_RECORDS];
    static double scores[N_RECORDS];
    rlt_rng rng;
    rlt_rng_seed(&rng, 11);
    rlt_visited recorded = {0};
    for (int i = 0; i < N_RECORDS; i++) {
        rlt_config c;
        do rlt_space_random(&s, &rng, &c);
        while (!rlt_space_is_valid(&s, &c) || !rlt_visited_add(&recorded, rlt_space_index_of(&s, &c)));
        records[i] = c;
        scores[i] = fixture_synthetic_score(&s, &c, &best);
    }
    rlt_tuner *fresh = tuner_make("ppo", &s, &FAST(2));
    rlt_tuner *taught = tuner_make("ppo", &s, &FAST(2));
    cr_assert_eq(rlt_tuner_update(taught, N_RECORDS, records, scores, NULL), RLT_STATUS_OK);
    double mean_fresh = 0, mean_taught = 0;
    for (int round = 0; round < 2; round++) {
        rlt_config batch[BATCH];
        cr_assert_eq(rlt_tuner_next_batch(fresh, BATCH, batch), BATCH);
        for (int i = 0; i < BATCH; i++) mean_fresh += fixture_synthetic_score(&s, &batch[i], &best) / (2 * BATCH);
        cr_assert_eq(rlt_tuner_next_batch(taught, BATCH, batch), BATCH);
        for (int i = 0; i < BATCH; i++) {
            mean_taught += fixture_synthetic_score(&s, &batch[i], &best) / (2 * BATCH);
            cr_assert_not(rlt_visited_has(&recorded, rlt_space_index_of(&s, &batch[i])), "a record was proposed");
        }
    }
    cr_log_info("mean score of the first 32 proposals: fresh %.2f, after %d records %.2f", mean_fresh, N_RECORDS,
                mean_taught);
    cr_assert_gt(mean_taught, 2 * mean_fresh + 5.0, "fresh %.2f, taught %.2f", mean_fresh, mean_taught);
    rlt_tuner_destroy(fresh);
    rlt_tuner_destroy(taught);
    rlt_visited_free(&recorded);
    rlt_op_destroy(op);
}

static double two_of_three_fail(uint64_t index) { return index % 3 ? 0.0 : (double)index; }

/* Every valid configuration of a small space exactly once, then nothing
 * (test_tuner.c checks this for every tuner with the defaults; here with
 * batches that do not divide the space and a model that scores all the
 * failures alike). */
Test(ppo, enumerates_a_small_space_exactly)
{
    rlt_op *op = fixture_op("matmul:M=3,N=2,K=2");
    rlt_space s;
    tuner_space(op, &s);
    rlt_tuner *t = tuner_make("ppo", &s, &FAST(5));
    tuner_assert_enumerates(t, &s, 11, two_of_three_fail);
    rlt_tuner_destroy(t);
    rlt_op_destroy(op);
}

static double by_index(const rlt_space *s, const rlt_config *c, const rlt_config *best)
{
    (void)best;
    return 1.0 + (double)(rlt_space_index_of(s, c) % 7);
}

/* A space of at most ppo_score_whole configurations (default 4096) is
 * scored whole, so the walkers never step; with ppo_score_whole 1 the same
 * space is walked (the ablation of bench/search_efficiency). The default
 * cost model follows: score-weighted regression scored whole, rank walked;
 * cost_loss overrides it. */
Test(ppo, a_small_space_is_scored_whole_unless_told_to_walk)
{
    rlt_op *op = fixture_op("matmul:M=3,N=2,K=2");
    rlt_space s;
    tuner_space(op, &s);
    cr_assert_leq(rlt_space_size(&s), 4096);
    for (int walk = 0; walk < 2; walk++) {
        rlt_tuner_opts o = FAST(6);
        o.ppo_score_whole = walk ? 1 : 0;
        rlt_tuner *t = tuner_make("ppo", &s, &o);
        cr_assert_eq(tuner_drive(t, &s, by_index, NULL, 64, NULL, NULL, NULL), 64);
        rlt_ppo_stats st;
        cr_assert_eq(rlt_tuner_ppo_stats(t, &st, NULL), RLT_STATUS_OK);
        cr_assert_geq(st.n_explorations, 1);
        if (walk)
            cr_assert_gt(st.n_steps, 0, "told to walk, it did not");
        else
            cr_assert_eq(st.n_steps, 0, "a space this small is scored whole, not walked");
        cr_assert_eq(st.cost_loss, walk ? RLT_COST_RANK : RLT_COST_REG_WEIGHTED);
        rlt_tuner_destroy(t);
    }
    rlt_tuner_opts o = FAST(6);
    o.cost_loss = "reg";
    rlt_tuner *t = tuner_make("ppo", &s, &o);
    rlt_ppo_stats st;
    cr_assert_eq(rlt_tuner_ppo_stats(t, &st, NULL), RLT_STATUS_OK);
    cr_assert_eq(st.cost_loss, RLT_COST_REG);
    rlt_tuner_destroy(t);
    rlt_op_destroy(op);
}

/* Nothing but failures (score 0, or not even a number): no model to
 * explore, so proposals stay random, new and valid; the first success
 * brings the model in. */
Test(ppo, failures_everywhere_leave_it_proposing)
{
    rlt_op *op;
    rlt_space s;
    rlt_config best;
    tuner_synthetic_space(&op, &s, &best);
    rlt_tuner *t = tuner_make("ppo", &s, &FAST(4));
    rlt_visited seen = {0};
    for (int round = 0; round < 4; round++) {
        rlt_config batch[BATCH];
        double scores[BATCH];
        cr_assert_eq(rlt_tuner_next_batch(t, BATCH, batch), BATCH);
        for (int i = 0; i < BATCH; i++) {
            cr_assert(rlt_visited_add(&seen, rlt_space_index_of(&s, &batch[i])));
            scores[i] = round == 3 && i == 0 ? 5.0 : i % 2 ? NAN : 0.0;
        }
        rlt_diag d = {0};
        cr_assert_eq(rlt_tuner_update(t, BATCH, batch, scores, &d), RLT_STATUS_OK, "%s", d.message);
    }
    rlt_ppo_stats st;
    cr_assert_eq(rlt_tuner_ppo_stats(t, &st, NULL), RLT_STATUS_OK);
    cr_assert_eq(st.n_random, 4 * BATCH);
    cr_assert_eq(st.n_fits, 1, "fitted once something scored above 0");
    rlt_config batch[BATCH];
    cr_assert_eq(rlt_tuner_next_batch(t, BATCH, batch), BATCH);
    cr_assert_eq(rlt_tuner_ppo_stats(t, &st, NULL), RLT_STATUS_OK);
    cr_assert_eq(st.n_explorations, 1);
    rlt_visited_free(&seen);
    rlt_tuner_destroy(t);
    rlt_op_destroy(op);
}

Test(ppo, bad_options_are_refused)
{
    rlt_op *op = fixture_op("matmul:M=64,N=64,K=64");
    rlt_space s;
    tuner_space(op, &s);
    static const struct {
        rlt_tuner_opts o;
        const char *what;
    } cases[] = {
        {{.ppo_gamma = 1.0}, "ppo_gamma"},         {{.ppo_lambda = 1.5}, "ppo_lambda"},
        {{.ppo_clip = -0.1}, "ppo_clip"},          {{.ppo_lr = 2.0}, "ppo_lr"},
        {{.ppo_epochs = -1}, "ppo_epochs"},        {{.ppo_minibatch = 100000}, "ppo_minibatch"},
        {{.ppo_walkers = -3}, "ppo_walkers"},      {{.ppo_explore_steps = -1}, "ppo_explore_steps"},
        {{.ppo_episode_steps = -1}, "ppo_episode_steps"}, {{.ppo_stall_steps = -1}, "ppo_stall_steps"},
        {{.ppo_score_whole = -1}, "ppo_score_whole"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rlt_tuner *t = NULL;
        rlt_diag d = {0};
        cr_assert_eq(rlt_tuner_create("ppo", &s, &cases[i].o, &t, &d), RLT_STATUS_INVALID_ARGUMENT, "%s",
                     cases[i].what);
        cr_assert(strstr(d.message, cases[i].what), "%s: %s", cases[i].what, d.message);
        cr_assert_null(t);
    }
    rlt_diag d = {0};
    rlt_ppo_stats st;
    rlt_tuner *t = tuner_make("random", &s, NULL);
    cr_assert_eq(rlt_tuner_ppo_stats(t, &st, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "not a ppo tuner"), "%s", d.message);
    rlt_tuner_destroy(t);
    rlt_op_destroy(op);
}

/* Every allocation of create, proposing and three updates (the second and
 * third proposals explore a model), failed in turn: create and update
 * report OUT_OF_MEMORY, proposing goes on without the model, nothing
 * crashes or leaks. */
Test(ppo, out_of_memory_is_reported_without_leaks)
{
    rlt_op *op = fixture_op("matmul:M=64,N=64,K=64");
    rlt_space s;
    tuner_space(op, &s);
    rlt_tuner_opts o = {
        .seed = 3, .ppo_walkers = 4, .ppo_explore_steps = 3, .ppo_episode_steps = 2, .ppo_minibatch = 4};
    int n_failures = tuner_out_of_memory_runs("ppo", &s, &o, 3, 8, 1, false, 5000);
    cr_assert_geq(n_failures, 20, "only %d allocations were tried", n_failures);
    rlt_op_destroy(op);
    assert_no_leaks();
}
