/* Tests of src/search/dqn.c, the "dqn" tuner: on the synthetic problem it
 * beats random search; its Q-heads learn the move that always helps (and
 * the opposite one when the score is mirrored, from the same seed, so an
 * agent that does not learn cannot pass both); proposals are new, valid and
 * reproducible; a small space is enumerated exactly; configurations it did
 * not propose are never proposed; failures everywhere do not stop it; bad
 * options are refused; running out of memory is reported without leaks. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search/dqn.h"

#include "../common/fixtures.h"
#include "../common/tuners.h"
#include "../common/leaks.h"

Test(dqn, beats_random_on_a_known_optimum)
{
    rlt_op *op = fixture_op("matmul:M=512,N=512,K=512");
    rlt_space s;
    tuner_space(op, &s);
    rlt_config best;
    fixture_config(&s, FIXTURE_SYNTHETIC_BEST, &best);
    double dqn = 0, random = 0;
    for (uint64_t seed = 1; seed <= 5; seed++) {
        dqn += tuner_best_after("dqn", &s, &best, &(rlt_tuner_opts){.seed = seed}, 640) / 5;
        random += tuner_best_after("random", &s, &best, &(rlt_tuner_opts){.seed = seed}, 640) / 5;
    }
    cr_log_info("mean best after 640 trials: dqn %.1f, random %.1f (optimum 100)", dqn, random);
    cr_assert_gt(dqn, random + 25.0, "dqn %.1f vs random %.1f", dqn, random);
    cr_assert_gt(dqn, 70.0, "dqn %.1f", dqn);
    rlt_op_destroy(op);
    assert_no_leaks();
}

/* A score that doubles with each step up knob k (or down, when mirrored)
 * and ignores the other knobs. */
static double monotone_score(const rlt_space *s, const rlt_config *c, int k, bool is_mirrored)
{
    int v = is_mirrored ? s->knobs[k].n_choices - 1 - c->choice[k] : c->choice[k];
    return ldexp(1.0, v);
}

/* Trains a dqn tuner on monotone_score for 25 batches (the space is
 * measured out after a few; later batches are walks through known
 * configurations, answered from memory) and counts, over every valid
 * configuration where knob k can still move the helpful way and every
 * fourth step of an episode, how often k's greedy head takes that move. */
static void count_helpful_moves(const rlt_space *s, int k, bool is_mirrored, int *out_helpful, int *out_probes)
{
    rlt_tuner_opts o = {.seed = 11};
    rlt_tuner *t = tuner_make("dqn", s, &o);
    for (int round = 0; round < 25; round++) {
        rlt_config batch[16];
        double scores[16];
        int n = rlt_tuner_next_batch(t, 16, batch);
        for (int i = 0; i < n; i++) scores[i] = monotone_score(s, &batch[i], k, is_mirrored);
        cr_assert_eq(rlt_tuner_update(t, n, batch, scores, NULL), RLT_STATUS_OK);
    }
    int want = is_mirrored ? -1 : +1, end = is_mirrored ? 0 : s->knobs[k].n_choices - 1;
    *out_helpful = *out_probes = 0;
    for (uint64_t i = 0; i < rlt_space_size(s); i++) {
        rlt_config c;
        rlt_space_config_of(s, i, &c);
        if (!rlt_space_is_valid(s, &c) || c.choice[k] == end) continue;
        for (int step = 0; step < 20; step += 4) {
            int moves[RLT_SPACE_MAX_KNOBS];
            rlt_diag d = {0};
            cr_assert_eq(rlt_tuner_dqn_greedy(t, &c, step, moves, &d), RLT_STATUS_OK, "%s", d.message);
            *out_helpful += moves[k] == want;
            ++*out_probes;
        }
    }
    rlt_tuner_destroy(t);
}

/* A tiny space (5 knobs, 108 valid configurations) where a higher k.tile
 * always scores better, and no step along k.tile makes a valid
 * configuration invalid; then the same with the score mirrored, from the
 * same seed: an agent that does not learn keeps its initial greedy moves
 * and cannot pass both. */
Test(dqn, the_head_of_a_knob_that_always_helps_learns_its_direction)
{
    rlt_op *op = fixture_op("matmul:M=2,N=1,K=256");
    rlt_space s;
    tuner_space(op, &s);
    int k = tuner_knob_named(&s, "k.tile");
    int up = 0, down = 0, n_up = 0, n_down = 0;
    count_helpful_moves(&s, k, false, &up, &n_up);
    count_helpful_moves(&s, k, true, &down, &n_down);
    cr_log_info("greedy k.tile moves that help: %d / %d (score up with k.tile), %d / %d (score down)", up, n_up,
                down, n_down);
    cr_assert_gt(n_up, 100);
    cr_assert_geq(up, 0.9 * n_up, "+1 chosen at %d of %d probes", up, n_up);
    cr_assert_geq(down, 0.9 * n_down, "-1 chosen at %d of %d probes", down, n_down);
    rlt_op_destroy(op);
    assert_no_leaks();
}

Test(dqn, same_seed_same_proposals)
{
    rlt_op *op = fixture_op("conv2d:N=1,C=16,H=14,W=14,K=32,R=3,S=3,stride=1,pad=1");
    rlt_space s;
    tuner_space(op, &s);
    rlt_config best;
    rlt_rng rng;
    rlt_rng_seed(&rng, 3);
    do rlt_space_random(&s, &rng, &best);
    while (!rlt_space_is_valid(&s, &best));
    rlt_tuner_opts oa = {.seed = 42}, oc = {.seed = 43};
    rlt_tuner *a = tuner_make("dqn", &s, &oa), *b = tuner_make("dqn", &s, &oa), *c = tuner_make("dqn", &s, &oc);
    bool is_other = false;
    for (int round = 0; round < 8; round++) {
        rlt_config ca[16], cb[16], cc[16];
        double sa[16], sc[16];
        int n = rlt_tuner_next_batch(a, 16, ca);
        cr_assert_eq(n, 16);
        cr_assert_eq(rlt_tuner_next_batch(b, 16, cb), 16);
        cr_assert_eq(rlt_tuner_next_batch(c, 16, cc), 16);
        cr_assert_eq(memcmp(ca, cb, sizeof ca), 0, "round %d: one seed, other proposals", round);
        is_other |= memcmp(ca, cc, sizeof ca) != 0;
        for (int i = 0; i < 16; i++) {
            sa[i] = fixture_synthetic_score(&s, &ca[i], &best);
            sc[i] = fixture_synthetic_score(&s, &cc[i], &best);
        }
        cr_assert_eq(rlt_tuner_update(a, 16, ca, sa, NULL), RLT_STATUS_OK);
        cr_assert_eq(rlt_tuner_update(b, 16, cb, sa, NULL), RLT_STATUS_OK);
        cr_assert_eq(rlt_tuner_update(c, 16, cc, sc, NULL), RLT_STATUS_OK);
    }
    cr_assert(is_other, "another seed, the same proposals");
    rlt_tuner_destroy(a);
    rlt_tuner_destroy(b);
    rlt_tuner_destroy(c);
    rlt_op_destroy(op);
    assert_no_leaks();
}

/* Records read back on resume arrive in update before any proposal: they
 * are never proposed. Here they are every valid configuration but one. */
Test(dqn, configs_reported_without_a_proposal_are_never_proposed)
{
    rlt_op *op = fixture_op("matmul:M=3,N=2,K=2");
    rlt_space s;
    tuner_space(op, &s);
    uint64_t size = rlt_space_size(&s);
    rlt_config *known = calloc(size, sizeof *known);
    double *scores = calloc(size, sizeof *scores);
    rlt_config left = {0};
    int n_known = 0;
    bool has_left = false;
    for (uint64_t i = 0; i < size; i++) {
        rlt_config c;
        rlt_space_config_of(&s, i, &c);
        if (!rlt_space_is_valid(&s, &c)) continue;
        if (!has_left && i > size / 2) {
            left = c;
            has_left = true;
            continue;
        }
        known[n_known] = c;
        scores[n_known++] = 1.0 + (double)(i % 7);
    }
    cr_assert(has_left);
    rlt_tuner_opts o = {.seed = 1};
    rlt_tuner *t = tuner_make("dqn", &s, &o);
    cr_assert_eq(rlt_tuner_update(t, n_known, known, scores, NULL), RLT_STATUS_OK);
    rlt_config batch[8];
    int n = rlt_tuner_next_batch(t, 8, batch);
    cr_assert_eq(n, 1, "%d proposals with one configuration left", n);
    cr_assert_eq(memcmp(&batch[0], &left, sizeof left), 0);
    double score = 2.0;
    cr_assert_eq(rlt_tuner_update(t, 1, batch, &score, NULL), RLT_STATUS_OK);
    cr_assert_eq(rlt_tuner_next_batch(t, 8, batch), 0);
    rlt_tuner_destroy(t);
    free(known);
    free(scores);
    rlt_op_destroy(op);
    assert_no_leaks();
}

/* Every measurement failing (score 0) or never reported: the tuner keeps
 * proposing new valid configurations and its updates succeed. */
Test(dqn, failures_and_unreported_proposals_do_not_stop_it)
{
    rlt_op *op = fixture_op("matmul:M=64,N=64,K=64");
    rlt_space s;
    tuner_space(op, &s);
    rlt_tuner_opts o = {.seed = 2, .dqn_reset = "zeros"};
    rlt_tuner *t = tuner_make("dqn", &s, &o);
    for (int round = 0; round < 20; round++) {
        rlt_config batch[16];
        double scores[16] = {0};
        int n = rlt_tuner_next_batch(t, 16, batch);
        cr_assert_eq(n, 16, "round %d: %d proposals", round, n);
        for (int i = 0; i < n; i++) cr_assert(rlt_space_is_valid(&s, &batch[i]));
        if (round % 3 != 2) cr_assert_eq(rlt_tuner_update(t, n, batch, scores, NULL), RLT_STATUS_OK);
    }
    rlt_tuner_destroy(t);
    rlt_op_destroy(op);
    assert_no_leaks();
}

Test(dqn, bad_options_are_refused_with_what_is_accepted)
{
    rlt_op *op = fixture_op("matmul:M=8,N=8,K=8");
    rlt_space s;
    tuner_space(op, &s);
    rlt_tuner *t = NULL;
    rlt_diag d = {0};
    rlt_tuner_opts o = {.dqn_reset = "middle"};
    cr_assert_eq(rlt_tuner_create("dqn", &s, &o, &t, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "middle") && strstr(d.message, "median"), "%s", d.message);
    cr_assert_null(t);
    d = (rlt_diag){0};
    o = (rlt_tuner_opts){.dqn_gamma = 1.5};
    cr_assert_eq(rlt_tuner_create("dqn", &s, &o, &t, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "gamma") != NULL, "%s", d.message);
    cr_assert_null(t);
    /* the greedy look is for dqn tuners only */
    o = (rlt_tuner_opts){0};
    t = tuner_make("random", &s, &o);
    int moves[RLT_SPACE_MAX_KNOBS];
    rlt_config c = {0};
    d = (rlt_diag){0};
    cr_assert_eq(rlt_tuner_dqn_greedy(t, &c, 0, moves, &d), RLT_STATUS_INVALID_ARGUMENT);
    rlt_tuner_destroy(t);
    rlt_op_destroy(op);
    assert_no_leaks();
}

/* Allocations failed from the Nth on (every N up to 64, then every 13th),
 * through create, four batches and their updates with training, until a
 * run gets through whole: create and update report OUT_OF_MEMORY (or
 * succeed while next_batch, which cannot report, proposes less), nothing
 * crashes or leaks. */
Test(dqn, out_of_memory_is_reported_without_leaks)
{
    /* small (6912 configurations): with allocations failing every
     * configuration looks invalid, and the random filler's last resort
     * scans the whole space */
    rlt_op *op = fixture_op("matmul:M=3,N=4,K=4");
    rlt_space s;
    tuner_space(op, &s);
    rlt_tuner_opts o = {.seed = 3, .dqn_minibatch = 8};
    int n_failures = tuner_out_of_memory_runs("dqn", &s, &o, 4, 16, 13, true, 20000);
    cr_assert_geq(n_failures, 100, "only %d allocations were tried", n_failures);
    rlt_op_destroy(op);
    assert_no_leaks();
}
