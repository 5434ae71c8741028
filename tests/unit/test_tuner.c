/* Tests of src/search/tuner.c and tune.c: proposals are new, valid and
 * reproducible; every tuner (agents included) enumerates a small space
 * exactly; on a synthetic score with a known optimum ga and the xgb tuners
 * beat random; the tuning loop on a tiny real op. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "search/tune.h"

#include "../common/fixtures.h"
#include "../common/tuners.h"

/* fewer annealing steps than AutoTVM's 500 keep the tests short */
#define FAST_ANNEALING(s) ((rlt_tuner_opts){.seed = (s), .sa_iterations = 100})

Test(tuner, unknown_tuner_is_refused_with_the_list)
{
    rlt_op *op = fixture_op("matmul:M=8,N=8,K=8");
    rlt_space s;
    tuner_space(op, &s);
    rlt_diag d = {0};
    rlt_tuner *t = NULL;
    cr_assert_eq(rlt_tuner_create("annealing", &s, NULL, &t, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "annealing") && strstr(d.message, "random") && strstr(d.message, "ga"), "%s",
              d.message);
    cr_assert_null(t);
    rlt_op_destroy(op);
}

static double index_mod_5(uint64_t index) { return (double)(index % 5); }

/* Every valid configuration of a small space exactly once, then nothing. */
Test(tuner, every_tuner_enumerates_a_small_space_exactly)
{
    rlt_op *op = fixture_op("matmul:M=3,N=2,K=2");
    rlt_space s;
    tuner_space(op, &s);
    for (const char *const *name = rlt_tuner_names(); *name; name++) {
        rlt_tuner *t = tuner_make(*name, &s, &FAST_ANNEALING(5));
        tuner_assert_enumerates(t, &s, 7, index_mod_5);
        rlt_tuner_destroy(t);
    }
    rlt_op_destroy(op);
}

Test(tuner, same_seed_same_proposals)
{
    rlt_op *op = fixture_op("conv2d:N=1,C=16,H=14,W=14,K=32,R=3,S=3,stride=1,pad=1");
    rlt_space s;
    tuner_space(op, &s);
    static const char *const names[] = {"random", "ga"};
    for (int k = 0; k < 2; k++) {
        rlt_tuner *a = tuner_make(names[k], &s, &FAST_ANNEALING(42));
        rlt_tuner *b = tuner_make(names[k], &s, &FAST_ANNEALING(42));
        rlt_tuner *c = tuner_make(names[k], &s, &FAST_ANNEALING(43));
        rlt_config ca[32], cb[32], cc[32];
        cr_assert_eq(rlt_tuner_next_batch(a, 32, ca), 32);
        cr_assert_eq(rlt_tuner_next_batch(b, 32, cb), 32);
        cr_assert_eq(rlt_tuner_next_batch(c, 32, cc), 32);
        cr_assert_eq(memcmp(ca, cb, sizeof ca), 0, "%s", names[k]);
        cr_assert_neq(memcmp(ca, cc, sizeof ca), 0, "%s: another seed, other proposals", names[k]);
        rlt_tuner_destroy(a);
        rlt_tuner_destroy(b);
        rlt_tuner_destroy(c);
    }
    rlt_op_destroy(op);
}

Test(tuner, ga_beats_random_on_a_known_optimum)
{
    rlt_op *op = fixture_op("matmul:M=512,N=512,K=512");
    rlt_space s;
    tuner_space(op, &s);
    rlt_config best;
    fixture_config(&s, FIXTURE_SYNTHETIC_BEST, &best);
    double ga = 0, random = 0;
    for (uint64_t seed = 1; seed <= 5; seed++) {
        ga += tuner_best_after("ga", &s, &best, &FAST_ANNEALING(seed), 640) / 5;
        random += tuner_best_after("random", &s, &best, &FAST_ANNEALING(seed), 640) / 5;
    }
    cr_log_info("mean best after 640 trials: ga %.1f, random %.1f (optimum 100)", ga, random);
    cr_assert_gt(ga, random + 5.0, "ga %.1f vs random %.1f", ga, random);
    cr_assert_gt(ga, 80.0, "ga %.1f", ga);
    rlt_op_destroy(op);
}

Test(tuner, xgb_beats_random_on_a_known_optimum)
{
    rlt_op *op = fixture_op("matmul:M=512,N=512,K=512");
    rlt_space s;
    tuner_space(op, &s);
    rlt_config best;
    fixture_config(&s, FIXTURE_SYNTHETIC_BEST, &best);
    static const char *const names[] = {"xgb", "xgb-rank"};
    for (int k = 0; k < 2; k++) {
        double model = 0, random = 0;
        for (uint64_t seed = 1; seed <= 3; seed++) {
            model += tuner_best_after(names[k], &s, &best, &FAST_ANNEALING(seed), 320) / 3;
            random += tuner_best_after("random", &s, &best, &FAST_ANNEALING(seed), 320) / 3;
        }
        cr_log_info("mean best after 320 trials: %s %.1f, random %.1f (optimum 100)", names[k], model, random);
        cr_assert_gt(model, random + 10.0, "%s %.1f vs random %.1f", names[k], model, random);
    }
    rlt_op_destroy(op);
}

/* fit_every: the model is fitted, and the plan made, after that many
 * measurements instead of a whole plan's. With the default fit_every of
 * 16, proposals 16-63 come from models refitted after each batch (15 of
 * each 16; one is drawn at random); with AutoTVM's 64 they are all random,
 * as no model exists before 64 measurements. On the synthetic score the
 * planned ones are clearly better. More than plan_size is refused. */
Test(tuner, a_short_fit_window_plans_from_the_model_sooner)
{
    rlt_op *op = fixture_op("matmul:M=512,N=512,K=512");
    rlt_space s;
    tuner_space(op, &s);
    rlt_config best;
    fixture_config(&s, FIXTURE_SYNTHETIC_BEST, &best);
    double mean_before_64[2] = {0, 0};
    static const int fit_every[2] = {0 /* the default, 16 */, 64};
    for (int arm = 0; arm < 2; arm++)
        for (uint64_t seed = 1; seed <= 3; seed++) {
            rlt_tuner_opts o = FAST_ANNEALING(seed);
            o.fit_every = fit_every[arm];
            rlt_tuner *t = tuner_make("xgb-rank", &s, &o);
            double scores[64];
            cr_assert_eq(tuner_drive(t, &s, fixture_synthetic_score, &best, 64, NULL, scores, NULL), 64);
            for (int i = 16; i < 64; i++) mean_before_64[arm] += scores[i] / (48 * 3);
            rlt_tuner_destroy(t);
        }
    cr_log_info("mean score of proposals 16-63: fit_every 16 %.1f, 64 %.1f", mean_before_64[0],
                mean_before_64[1]);
    cr_assert_gt(mean_before_64[0], mean_before_64[1] + 5.0, "fit_every 16: %.1f, 64: %.1f",
                 mean_before_64[0], mean_before_64[1]);

    rlt_tuner_opts o = {.seed = 1, .plan_size = 32, .fit_every = 33};
    rlt_tuner *t = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_tuner_create("xgb", &s, &o, &t, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "fit_every (33)") && strstr(d.message, "plan_size (32)"), "%s", d.message);
    cr_assert_null(t);
    rlt_op_destroy(op);
}

Test(tuner, features_have_the_space_length_and_differ_between_configs)
{
    rlt_op *op = fixture_op("conv2d:N=1,C=16,H=14,W=14,K=32,R=3,S=3,stride=1,pad=1");
    rlt_space s;
    tuner_space(op, &s);
    int n = rlt_space_n_features(&s);
    cr_assert_gt(n, 2 * s.n_knobs);
    float *a = calloc((size_t)n, sizeof *a), *b = calloc((size_t)n, sizeof *b);
    rlt_rng rng;
    rlt_rng_seed(&rng, 9);
    rlt_config ca, cb;
    do rlt_space_random(&s, &rng, &ca);
    while (!rlt_space_is_valid(&s, &ca));
    do rlt_space_random(&s, &rng, &cb);
    while (!rlt_space_is_valid(&s, &cb) || memcmp(&ca, &cb, sizeof ca) == 0);
    cr_assert_eq(rlt_space_features(&s, &ca, a, NULL), RLT_STATUS_OK);
    cr_assert_eq(rlt_space_features(&s, &cb, b, NULL), RLT_STATUS_OK);
    cr_assert_neq(memcmp(a, b, sizeof(float) * (size_t)n), 0);
    for (int i = 0; i < n; i++) cr_assert(isfinite(a[i]) && a[i] >= 0, "feature %d = %f", i, a[i]);
    free(a);
    free(b);
    rlt_op_destroy(op);
}

/* The summary features of a known matmul configuration (8-float vectors):
 * a register tile of 6 rows x 2 vectors of B's and C's columns, inside the
 * k loop. */
Test(tuner, summary_features_describe_the_register_tile)
{
    rlt_op *op = fixture_op("matmul:M=512,N=512,K=512");
    rlt_space s;
    tuner_space(op, &s);
    int n = rlt_space_n_features(&s);
    cr_assert_eq(n, 2 * s.n_knobs + RLT_FEATURE_LOOP_PART + RLT_FEATURE_SUMMARY);
    float *x = calloc((size_t)n, sizeof *x), *y = calloc((size_t)n, sizeof *y);
    rlt_config c;
    fixture_config(&s, FIXTURE_SYNTHETIC_BEST, &c);
    cr_assert_eq(rlt_space_features(&s, &c, x, NULL), RLT_STATUS_OK);
    const float *sum = x + 2 * s.n_knobs + RLT_FEATURE_LOOP_PART;
    cr_assert_float_eq(sum[0], log2(1 + 12), 1e-5, "vector accumulators: %f", (double)sum[0]);
    cr_assert_float_eq(sum[2], log2(1 + 8), 1e-5, "vector width: %f", (double)sum[2]);
    cr_assert_eq(sum[4], 1.0f, "the k loop runs around the tile");
    /* along the vector (columns j): A[i][k] does not move, B[k][j] and
     * C[i][j] move by one element; no fourth tensor */
    cr_assert_eq(sum[5], 0.0f);
    cr_assert_float_eq(sum[6], 1.0f, 1e-6);
    cr_assert_float_eq(sum[7], 1.0f, 1e-6);
    cr_assert_eq(sum[8], 0.0f);
    cr_assert_eq(sum[11], 0.0f, "one thread: no parallel loop");
    for (int i = 0; i < RLT_FEATURE_SUMMARY; i++)
        cr_assert(isfinite(sum[i]) && sum[i] >= 0, "summary feature %d = %f", i, (double)sum[i]);
    /* a tile of 2 rows: a third of the accumulators, fewer multiply-adds
     * per element loaded */
    rlt_config c2;
    fixture_config(&s,
                   "v1;vec=j*8;i.tile=2;i.mid=1;j.tile=2;j.mid=1;k.tile=256;order.s=j,i;unroll=1;pack.A=off;"
                   "pack.B=j",
                   &c2);
    cr_assert_eq(rlt_space_features(&s, &c2, y, NULL), RLT_STATUS_OK);
    const float *sum2 = y + 2 * s.n_knobs + RLT_FEATURE_LOOP_PART;
    cr_assert_float_eq(sum2[0], log2(1 + 4), 1e-5, "%f", (double)sum2[0]);
    cr_assert_lt(sum2[3], sum[3], "multiply-adds per element: %f against %f", (double)sum2[3], (double)sum[3]);
    free(x);
    free(y);
    rlt_op_destroy(op);
}

Test(tuner, tuning_a_tiny_op_end_to_end)
{
    rlt_op *op = fixture_op("matmul:M=24,N=32,K=16");
    rlt_tune_opts o = {
        .tuner = "random",
        .n_trials = 12,
        .batch_size = 6,
        .seed = 3,
        .build = {.cflags = "-O1 -march=native"},
        .run = {.repeat = 2, .min_repeat_ms = 1, .timeout_s = 10},
        .space = {.no_clang = true, .vector_floats = 8},
    };
    rlt_tune_result r;
    rlt_diag d = {0};
    cr_assert_eq(rlt_tune(op, &o, &r, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(r.n_trials, 12);
    cr_assert_eq(r.n_measured, 12);
    cr_assert_eq(r.n_failed, 0);
    cr_assert_gt(r.best_gflops, 0);
    cr_assert_neq(r.best_config[0], '\0');
    cr_assert(strstr(r.best_schedule, "# rltune schedule v1") != NULL);
    for (int i = 1; i < r.n_trials; i++) cr_assert_geq(r.curve[i], r.curve[i - 1], "the curve never falls");
    cr_assert_float_eq(r.curve[r.n_trials - 1], r.best_gflops, 1e-9);
    rlt_tune_result_free(&r);
    o.n_trials = 0;
    d = (rlt_diag){0};
    cr_assert_eq(rlt_tune(op, &o, &r, &d), RLT_STATUS_INVALID_ARGUMENT);
    rlt_op_destroy(op);
}

/* cost_loss: an unknown loss is refused by the setter (listing the
 * accepted ones) and, set in code, by the model tuners at create. */
Test(tuner, cost_loss_names_are_checked)
{
    rlt_op *op = fixture_op("matmul:M=64,N=64,K=64");
    rlt_space s;
    tuner_space(op, &s);
    rlt_tuner_opts o = {.seed = 1};
    rlt_diag d = {0};
    cr_assert_eq(rlt_tuner_opts_set(&o, "cost_loss", "ranked", &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "'ranked' is not one of rank, reg, reg-weighted"), "%s", d.message);
    o.cost_loss = "weighted";
    const char *model_tuners[] = {"xgb", "xgb-rank", "ppo"};
    for (size_t i = 0; i < RLT_ARRAY_LEN(model_tuners); i++) {
        rlt_tuner *t = NULL;
        d = (rlt_diag){0};
        cr_assert_eq(rlt_tuner_create(model_tuners[i], &s, &o, &t, &d), RLT_STATUS_INVALID_ARGUMENT, "%s",
                     model_tuners[i]);
        cr_assert_null(t);
        cr_assert(strstr(d.message, "unknown cost_loss 'weighted'"), "%s", d.message);
    }
    rlt_op_destroy(op);
}

/* The table of hyper-parameters (tuner_opts.c): every option names only
 * known tuners, takes a value of its own kind and stores it in its field,
 * and each tuner that reads it is created with that value set; values of
 * the wrong form are refused, leaving the options as they were. */
Test(tuner, every_hyper_parameter_is_settable_by_name)
{
    rlt_op *op = fixture_op("matmul:M=64,N=64,K=64");
    rlt_space s;
    tuner_space(op, &s);
    cr_assert_gt(rlt_tuner_opt_count(), 40);
    for (int i = 0; i < rlt_tuner_opt_count(); i++) {
        const rlt_tuner_opt_info *info = rlt_tuner_opt_at(i);
        cr_assert_eq(rlt_tuner_opt_find(info->name), info);
        rlt_tuner_opts o = {.seed = 1};
        const char *last_choice = NULL;
        for (const char *const *c = info->choices; c && *c; c++) last_choice = *c;
        cr_assert_eq(info->type == RLT_TUNER_OPT_CHOICE, last_choice != NULL, "%s: choices", info->name);
        const char *value = info->type == RLT_TUNER_OPT_CHOICE ? last_choice
                            : info->type == RLT_TUNER_OPT_INT  ? "7"
                                                               : "0.5";
        rlt_diag d = {0};
        cr_assert_eq(rlt_tuner_opts_set(&o, info->name, value, &d), RLT_STATUS_OK, "%s: %s", info->name, d.message);
        const char *field = (const char *)&o + info->offset;
        if (info->type == RLT_TUNER_OPT_INT) cr_assert_eq(*(const int *)field, 7, "%s", info->name);
        if (info->type == RLT_TUNER_OPT_REAL || info->type == RLT_TUNER_OPT_REAL_OR_NONE)
            cr_assert_eq(*(const double *)field, 0.5, "%s", info->name);
        if (info->type == RLT_TUNER_OPT_CHOICE) cr_assert_str_eq(*(const char *const *)field, value);
        int n_tuners = 0;
        for (const char *const *name = rlt_tuner_names(); *name; name++) {
            if (!rlt_tuner_opt_applies(info, *name)) continue;
            n_tuners++;
            rlt_tuner *t = NULL;
            cr_assert_eq(rlt_tuner_create(*name, &s, &o, &t, &d), RLT_STATUS_OK, "%s with %s=%s: %s", *name,
                         info->name, value, d.message);
            rlt_tuner_destroy(t);
        }
        cr_assert_gt(n_tuners, 0, "%s names no known tuner (%s)", info->name, info->tuners);
        /* the wrong form: refused, nothing changed */
        rlt_tuner_opts before = o;
        const char *bad[] = {"", "x", "-1", "0", "1e999", "nan"};
        for (size_t b = 0; b < RLT_ARRAY_LEN(bad); b++) {
            if (info->type == RLT_TUNER_OPT_REAL_OR_NONE && strcmp(bad[b], "0") == 0) continue; /* 0 = none */
            d = (rlt_diag){0};
            cr_assert_eq(rlt_tuner_opts_set(&o, info->name, bad[b], &d), RLT_STATUS_INVALID_ARGUMENT, "%s='%s'",
                         info->name, bad[b]);
            cr_assert(strstr(d.message, info->name), "%s", d.message);
            cr_assert_eq(memcmp(&o, &before, sizeof o), 0, "%s='%s' changed the options", info->name, bad[b]);
        }
    }
    rlt_tuner_opts o = {0};
    rlt_diag d = {0};
    cr_assert_eq(rlt_tuner_opts_set(&o, "no_such_option", "1", &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "unknown tuner option 'no_such_option'"), "%s", d.message);
    /* an entropy coefficient of 0 means none, stored as -1 (0 is the default) */
    d = (rlt_diag){0};
    cr_assert_eq(rlt_tuner_opts_set(&o, "bandit_entropy_coef", "0", &d), RLT_STATUS_OK);
    cr_assert_eq(o.bandit_entropy_coef, -1.0);
    rlt_op_destroy(op);
}

/* Start configurations (`tune --tuner policy`): a session's queue
 * (session.h) proposes each with its valid neighbours, alone, each once;
 * the tuner that follows treats them as visited from its start and
 * proposes the rest of the space, each once. Every tuner. */
Test(tuner, a_queue_comes_first_and_the_tuner_never_proposes_its_configurations)
{
    rlt_op *op = fixture_op("matmul:M=3,N=2,K=2");
    rlt_space s;
    tuner_space(op, &s);
    rlt_config start;
    uint64_t index = 0;
    do rlt_space_config_of(&s, index++, &start);
    while (!rlt_space_is_valid(&s, &start) || rlt_space_index_of(&s, &start) < 3);
    int n_valid_neighbours = 0;
    for (int k = 0; k < s.n_knobs; k++)
        for (int dd = -1; dd <= 1; dd += 2) {
            rlt_config n;
            n_valid_neighbours += rlt_space_neighbour(&s, &start, k, dd, &n) && rlt_space_is_valid(&s, &n);
        }
    rlt_proposer *queue = NULL;
    rlt_diag d = {0};
    /* the start twice, as a prior too: kept once */
    cr_assert_eq(rlt_proposer_queue_create(&s, 1, &start, 1, &start, &queue, &d), RLT_STATUS_OK, "%s", d.message);
    int n_queued = 0;
    const rlt_config *queued = rlt_proposer_queue_configs(queue, &n_queued);
    cr_assert_eq(n_queued, 1 + n_valid_neighbours, "the start and its valid neighbours");
    cr_assert_eq(rlt_space_index_of(&s, &queued[0]), rlt_space_index_of(&s, &start));
    for (int i = 1; i < n_queued; i++) {
        int n_diff = 0;
        for (int k = 0; k < s.n_knobs; k++) n_diff += queued[i].choice[k] != start.choice[k];
        cr_assert_eq(n_diff, 1, "queued %d is not a neighbour of the start", i);
    }
    rlt_config batch[64];
    cr_assert_eq(queue->ops->next(queue, 64, batch), n_queued);
    cr_assert_eq(queue->ops->next(queue, 64, batch), 0, "the queue proposes each once");
    uint64_t size = rlt_space_size(&s);
    int n_valid = 0;
    for (uint64_t i = 0; i < size; i++) {
        rlt_config c;
        rlt_space_config_of(&s, i, &c);
        n_valid += rlt_space_is_valid(&s, &c);
    }
    for (const char *const *name = rlt_tuner_names(); *name; name++) {
        rlt_tuner_opts o = FAST_ANNEALING(5);
        o.n_claimed = n_queued;
        o.claimed_configs = queued;
        rlt_tuner *t = tuner_make(*name, &s, &o);
        bool *seen = calloc(size, 1);
        for (int i = 0; i < n_queued; i++) seen[rlt_space_index_of(&s, &queued[i])] = true;
        int total = 0;
        for (int round = 0; round < 10000; round++) {
            double scores[7];
            int n = rlt_tuner_next_batch(t, 7, batch);
            if (n == 0) break;
            for (int i = 0; i < n; i++) {
                uint64_t idx = rlt_space_index_of(&s, &batch[i]);
                cr_assert_not(seen[idx], "%s proposed %llu, queued or proposed before", *name,
                              (unsigned long long)idx);
                seen[idx] = true;
                scores[i] = index_mod_5(idx);
            }
            total += n;
            cr_assert_eq(rlt_tuner_update(t, n, batch, scores, NULL), RLT_STATUS_OK);
        }
        cr_assert_eq(total, n_valid - n_queued, "%s proposed %d of the %d others", *name, total, n_valid - n_queued);
        free(seen);
        rlt_tuner_destroy(t);
    }
    rlt_proposer_destroy(queue);
    rlt_op_destroy(op);
}

/* The tuner table's flags: an agent exactly where save and load are, and
 * the cost-model tuners take transfer rows. */
Test(tuner, capabilities_are_flags_in_the_tuner_table)
{
    cr_assert_eq(rlt_tuner_flags("xgb"), RLT_TUNER_USES_TRANSFER);
    cr_assert_eq(rlt_tuner_flags("ppo"), RLT_TUNER_USES_TRANSFER | RLT_TUNER_HAS_AGENT);
    cr_assert_eq(rlt_tuner_flags("ga"), 0);
    cr_assert_eq(rlt_tuner_flags("no such tuner"), 0);
    char names[128];
    rlt_tuner_names_with(RLT_TUNER_HAS_AGENT, names, sizeof names);
    cr_assert_str_eq(names, "bandit, dqn, ga-dqn, ppo");
    rlt_op *op = fixture_op("matmul:M=8,N=8,K=8");
    rlt_space s;
    tuner_space(op, &s);
    for (const char *const *name = rlt_tuner_names(); *name; name++) {
        rlt_tuner_opts o = FAST_ANNEALING(5);
        rlt_tuner *t = tuner_make(*name, &s, &o);
        cr_assert_eq(rlt_tuner_has_agent(t), (rlt_tuner_flags(*name) & RLT_TUNER_HAS_AGENT) != 0, "%s", *name);
        rlt_tuner_destroy(t);
    }
    rlt_op_destroy(op);
}
