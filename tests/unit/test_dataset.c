/* Tests of src/search/dataset.c and the space's restriction to a subset
 * (space.c): the plan of a dataset (every valid configuration of a small
 * space, shuffled and reproducible; a uniform sample when there are too
 * many; rejection sampling of a large space); a subset's indices, draws and
 * validity; replays of made-up datasets (the description written with
 * rlt_dataset_info_put, records appended directly): every tuner stays in
 * the dataset (no absent trial), finds its best when the trials cover it,
 * is reproducible per seed (its speed is logged; bench/RESULTS.md has it); the
 * refusals of rlt_replay_open; and a real measured dataset of a tiny op
 * stopped after its first batch, refused as unfinished, then resumed
 * without measuring anything twice. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "search/replay.h"
#include "search/tune.h"

#include "../common/fixtures.h"
#include "../common/tmp.h"
#include "../common/tuners.h"

static char tmp_dir[] = "/tmp/rlt_dataset_XXXXXX";

static void setup(void) { tmp_dir_use(tmp_dir); }

static void teardown(void) { tmp_remove_tree(tmp_dir); }

TestSuite(dataset, .init = setup, .fini = teardown, .timeout = 120);

/* ---- helpers ---------------------------------------------------------------- */

#define TINY_EXPR "B[i] = A[i] * 2"
#define TINY_SHAPE "i=2"
#define FAKE_TARGET "cpu=made up;vec=8;threads=1;cc=made up"

static uint64_t count_valid(const rlt_space *s)
{
    uint64_t n = 0;
    for (uint64_t i = 0; i < rlt_space_size(s); i++) {
        rlt_config c;
        rlt_space_config_of(s, i, &c);
        n += rlt_space_is_valid(s, &c);
    }
    return n;
}

/* A made-up measurement: every tenth configuration fails, the rest get a
 * score that depends on every knob. */
static double fake_gflops(const rlt_space *s, const rlt_config *c)
{
    uint64_t h = rlt_hash_bytes(7, c->choice, sizeof c->choice[0] * (size_t)s->n_knobs);
    return h % 10 == 0 ? 0.0 : 1.0 + (double)(h % 10007) / 100.0;
}

typedef struct fake_dataset {
    rlt_config *plan;
    int n;
    double best_gflops;
    rlt_dataset_info info;
} fake_dataset;

/* Writes a dataset of `op` with made-up measurements into `path`: the
 * plan of n_samples (seeded), its description, one record per planned
 * configuration (only the first n_written of them when that is >= 0). */
static fake_dataset make_fake_dataset(const char *path, const rlt_op *op, int n_samples, uint64_t seed, int n_written)
{
    rlt_space s;
    tuner_space(op, &s);
    rlt_diag d = {0};
    fake_dataset f = {0};
    snprintf(f.info.spec, sizeof f.info.spec, "%s", op->spec);
    snprintf(f.info.target, sizeof f.info.target, FAKE_TARGET);
    f.info.n_threads = 1;
    f.info.vector_floats = 8;
    f.info.has_clang = false;
    cr_assert_eq(rlt_dataset_plan(&s, NULL, n_samples, seed, &f.plan, &f.n, &f.info, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_db *db = NULL;
    cr_assert_eq(rlt_db_open(path, NULL, &db, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_dataset_info_put(db, &f.info, &d), RLT_STATUS_OK, "%s", d.message);
    int n = n_written >= 0 ? n_written : f.n;
    rlt_record *recs = calloc((size_t)n, sizeof *recs);
    cr_assert_not_null(recs);
    rlt_str key;
    rlt_str_init(&key);
    for (int i = 0; i < n; i++) {
        rlt_record *r = &recs[i];
        rlt_str_clear(&key);
        rlt_space_config_key(&s, &f.plan[i], &key);
        snprintf(r->spec, sizeof r->spec, "%s", op->spec);
        cr_assert_eq(rlt_record_target_parse(FAKE_TARGET, &r->target, &d), RLT_STATUS_OK, "%s", d.message);
        snprintf(r->config, sizeof r->config, "%s", key.data);
        snprintf(r->tuner, sizeof r->tuner, RLT_DATASET_PROPOSER);
        double g = fake_gflops(&s, &f.plan[i]);
        r->status = g > 0 ? RLT_STATUS_OK : RLT_STATUS_WRONG_ANSWER;
        r->gflops = g;
        r->time_min_ms = r->time_median_ms = g > 0 ? op->flops / (g * 1e6) : 0;
        r->created_s = 1e9 + i;
        if (g > f.best_gflops) f.best_gflops = g;
    }
    cr_assert_eq(rlt_db_append(db, n, recs, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_str_free(&key);
    free(recs);
    rlt_db_close(db);
    return f;
}

static rlt_replay *open_replay(const char *path, const rlt_op *op)
{
    rlt_diag d = {0};
    rlt_replay *rp = NULL;
    cr_assert_eq(rlt_replay_open(path, op, FAKE_TARGET, &rp, &d), RLT_STATUS_OK, "%s", d.message);
    return rp;
}

static rlt_tune_result replay_tune(const rlt_op *op, const rlt_replay *rp, const char *tuner, int trials,
                                   uint64_t seed)
{
    rlt_diag d = {0};
    rlt_tune_result r;
    rlt_tune_opts o = {.tuner = tuner, .n_trials = trials, .seed = seed, .replay = rp,
                       .tuner_opts = {.sa_iterations = 100}};
    cr_assert_eq(rlt_tune(op, &o, &r, &d), RLT_STATUS_OK, "%s: %s", tuner, d.message);
    return r;
}

/* ---- plans ------------------------------------------------------------------ */

Test(dataset, plan_of_a_small_space_is_every_valid_configuration_shuffled)
{
    rlt_op *op = fixture_expr_op(TINY_EXPR, TINY_SHAPE);
    rlt_space s;
    tuner_space(op, &s);
    rlt_diag d = {0};
    rlt_dataset_info a = {0}, b = {0}, c = {0};
    rlt_config *pa, *pb, *pc;
    int na, nb, nc;
    cr_assert_eq(rlt_dataset_plan(&s, NULL, 4096, 1, &pa, &na, &a, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_dataset_plan(&s, NULL, 4096, 1, &pb, &nb, &b, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_dataset_plan(&s, NULL, 4096, 2, &pc, &nc, &c, &d), RLT_STATUS_OK);
    cr_assert(a.is_complete);
    cr_assert_eq((uint64_t)na, count_valid(&s));
    cr_assert_eq(a.n_valid, na);
    cr_assert_eq(a.n_configs, na);
    cr_assert_eq(a.space_size, rlt_space_size(&s));
    cr_assert_eq(na, nb);
    cr_assert_eq(memcmp(pa, pb, sizeof *pa * (size_t)na), 0, "the same seed gives the same plan");
    cr_assert_eq(nc, na);
    cr_assert_neq(memcmp(pa, pc, sizeof *pa * (size_t)na), 0, "another seed, another order");
    bool is_sorted = true;
    for (int i = 0; i < na; i++) {
        cr_assert(rlt_space_is_valid(&s, &pa[i]));
        for (int j = 0; j < i; j++) cr_assert_neq(memcmp(&pa[i], &pa[j], sizeof pa[i]), 0, "a repeat");
        if (i > 0 && rlt_space_index_of(&s, &pa[i]) < rlt_space_index_of(&s, &pa[i - 1])) is_sorted = false;
    }
    cr_assert(!is_sorted, "the measuring order is shuffled");
    free(pa);
    free(pb);
    free(pc);
    rlt_op_destroy(op);
}

Test(dataset, plan_samples_when_the_space_has_more_valid_configurations)
{
    rlt_op *op = fixture_expr_op(TINY_EXPR, TINY_SHAPE);
    rlt_space s;
    tuner_space(op, &s);
    rlt_diag d = {0};
    rlt_dataset_info info = {0};
    rlt_config *p;
    int n;
    cr_assert_eq(rlt_dataset_plan(&s, NULL, 5, 3, &p, &n, &info, &d), RLT_STATUS_OK);
    cr_assert_eq(n, 5);
    cr_assert(!info.is_complete);
    cr_assert_eq((uint64_t)info.n_valid, count_valid(&s));
    for (int i = 0; i < n; i++) {
        cr_assert(rlt_space_is_valid(&s, &p[i]));
        for (int j = 0; j < i; j++) cr_assert_neq(memcmp(&p[i], &p[j], sizeof p[i]), 0);
    }
    free(p);
    cr_assert_eq(rlt_dataset_plan(&s, NULL, 0, 3, &p, &n, &info, &d), RLT_STATUS_INVALID_ARGUMENT);
    rlt_op_destroy(op);
}

Test(dataset, plan_of_a_large_space_is_a_rejection_sample)
{
    rlt_op *op = fixture_op("matmul:M=64,N=64,K=64");
    rlt_space s;
    tuner_space(op, &s);
    cr_assert_gt(rlt_space_size(&s), RLT_DATASET_ENUMERATE_MAX);
    rlt_diag d = {0};
    rlt_dataset_info info = {0};
    rlt_config *p;
    int n;
    cr_assert_eq(rlt_dataset_plan(&s, NULL, 300, 9, &p, &n, &info, &d), RLT_STATUS_OK);
    cr_assert_eq(n, 300);
    cr_assert(!info.is_complete);
    cr_assert_eq(info.n_valid, -1, "too large to count");
    rlt_space_subset *sub = NULL;
    cr_assert_eq(rlt_space_subset_create(&s, n, p, &sub, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_space_subset_size(sub), 300, "distinct");
    for (int i = 0; i < n; i++) cr_assert(rlt_space_is_valid(&s, &p[i]));
    rlt_space_subset_destroy(sub);
    free(p);
    rlt_op_destroy(op);
}

/* ---- fixed knobs: datasets of a sub-space ------------------------------------ */

Test(dataset, a_fixing_parses_prints_back_and_refuses_what_is_not_a_choice)
{
    rlt_op *op = fixture_op("matmul:M=64,N=64,K=64");
    rlt_space s;
    tuner_space(op, &s);
    rlt_diag d = {0};
    rlt_space_fixing f;
    cr_assert_eq(rlt_space_fixing_parse(&s, "unroll=1;vec=j*8;order.s=j,i", &f, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(f.n_fixed, 3);
    rlt_str text;
    rlt_str_init(&text);
    rlt_space_fixing_text(&s, &f, &text);
    cr_assert_str_eq(text.data, "vec=j*8;order.s=j,i;unroll=1", "printed in the space's knob order");
    rlt_str_free(&text);
    uint64_t free_size = 1;
    for (int k = 0; k < s.n_knobs; k++)
        if (f.choice[k] < 0) free_size *= (uint64_t)s.knobs[k].n_choices;
    cr_assert_eq(rlt_space_fixing_size(&s, &f), free_size);
    cr_assert_eq(rlt_space_fixing_parse(&s, "", &f, &d), RLT_STATUS_OK);
    cr_assert_eq(f.n_fixed, 0);
    cr_assert_eq(rlt_space_fixing_size(&s, &f), rlt_space_size(&s));

    cr_assert_eq(rlt_space_fixing_parse(&s, "colour=red", &f, &d), RLT_STATUS_PARSE_ERROR);
    cr_assert(strstr(d.message, "unknown knob 'colour'") && strstr(d.message, "i.tile"), "%s", d.message);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_space_fixing_parse(&s, "vec=j*7", &f, &d), RLT_STATUS_PARSE_ERROR);
    cr_assert(strstr(d.message, "'j*7' is not a choice of knob vec") && strstr(d.message, "j*8"), "%s", d.message);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_space_fixing_parse(&s, "unroll=1;unroll=0", &f, &d), RLT_STATUS_PARSE_ERROR);
    cr_assert(strstr(d.message, "fixed twice"), "%s", d.message);
    cr_assert_eq(rlt_space_fixing_parse(&s, "unroll", &f, &d), RLT_STATUS_PARSE_ERROR);
    cr_assert_eq(rlt_space_fixing_parse(&s, "unroll=1;;vec=none", &f, &d), RLT_STATUS_PARSE_ERROR);
    rlt_op_destroy(op);
}

Test(dataset, a_fixed_plan_is_every_valid_configuration_of_the_sub_space)
{
    rlt_op *op = fixture_op("matmul:M=64,N=64,K=64");
    rlt_space s;
    tuner_space(op, &s);
    rlt_diag d = {0};
    rlt_space_fixing f;
    cr_assert_eq(rlt_space_fixing_parse(&s, "vec=j*8;order.s=i,j;unroll=1;pack.A=off;pack.B=off;k.tile=8", &f, &d),
                 RLT_STATUS_OK, "%s", d.message);
    /* count the sub-space's valid configurations with an odometer over the
     * free knobs, the fixed ones held */
    uint64_t n_valid = 0;
    rlt_config c;
    memset(&c, 0, sizeof c);
    for (int k = 0; k < s.n_knobs; k++)
        if (f.choice[k] >= 0) c.choice[k] = f.choice[k];
    for (;;) {
        n_valid += rlt_space_is_valid(&s, &c);
        int k = 0;
        for (; k < s.n_knobs; k++) {
            if (f.choice[k] >= 0) continue;
            if (++c.choice[k] < s.knobs[k].n_choices) break;
            c.choice[k] = 0;
        }
        if (k == s.n_knobs) break;
    }
    cr_assert_gt(n_valid, 10);
    rlt_dataset_info info = {0};
    rlt_config *p;
    int n;
    cr_assert_eq(rlt_dataset_plan(&s, &f, 100000, 4, &p, &n, &info, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert(info.is_complete);
    cr_assert_eq((uint64_t)n, n_valid);
    cr_assert_eq(info.n_valid, n);
    cr_assert_eq(info.space_size, rlt_space_fixing_size(&s, &f));
    rlt_space_subset *sub = NULL;
    cr_assert_eq(rlt_space_subset_create(&s, n, p, &sub, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_space_subset_size(sub), n, "distinct");
    for (int i = 0; i < n; i++) {
        cr_assert(rlt_space_is_valid(&s, &p[i]));
        for (int k = 0; k < s.n_knobs; k++)
            if (f.choice[k] >= 0) cr_assert_eq(p[i].choice[k], f.choice[k], "fixed knob %s moved", s.knobs[k].name);
    }
    /* the replay's walkers: a step along a free knob from a member lands on
     * a member whenever it is valid */
    rlt_space r = s;
    rlt_space_restrict(&r, sub);
    int n_steps = 0;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < s.n_knobs; k++) {
            rlt_config nb;
            if (f.choice[k] >= 0 || !rlt_space_neighbour(&s, &p[i], k, +1, &nb) || !rlt_space_is_valid(&s, &nb))
                continue;
            cr_assert(rlt_space_is_valid(&r, &nb), "a valid step along free knob %s left the dataset", s.knobs[k].name);
            n_steps++;
        }
    cr_assert_gt(n_steps, n);
    rlt_space_subset_destroy(sub);
    free(p);
    rlt_op_destroy(op);
    /* a sample of a sub-space too large to enumerate keeps its fixed knobs too */
    op = fixture_op("matmul:M=256,N=256,K=256");
    tuner_space(op, &s);
    cr_assert_eq(rlt_space_fixing_parse(&s, "unroll=1", &f, &d), RLT_STATUS_OK);
    cr_assert_gt(rlt_space_fixing_size(&s, &f), RLT_DATASET_ENUMERATE_MAX);
    cr_assert_eq(rlt_dataset_plan(&s, &f, 200, 4, &p, &n, &info, &d), RLT_STATUS_OK);
    cr_assert_eq(n, 200);
    cr_assert(!info.is_complete);
    for (int i = 0; i < n; i++) {
        cr_assert(rlt_space_is_valid(&s, &p[i]));
        for (int k = 0; k < s.n_knobs; k++)
            if (f.choice[k] >= 0) cr_assert_eq(p[i].choice[k], f.choice[k]);
    }
    free(p);
    rlt_op_destroy(op);
}

/* ---- the restriction of a space ------------------------------------------- */

Test(dataset, a_restricted_space_is_its_members)
{
    rlt_op *op = fixture_op("matmul:M=4,N=2,K=2");
    rlt_space s;
    tuner_space(op, &s);
    rlt_diag d = {0};
    rlt_dataset_info info = {0};
    rlt_config *p;
    int n;
    cr_assert_eq(rlt_dataset_plan(&s, NULL, 50, 1, &p, &n, &info, &d), RLT_STATUS_OK);
    rlt_space_subset *sub = NULL;
    /* a member given twice is one member */
    p[1] = p[0];
    cr_assert_eq(rlt_space_subset_create(&s, n, p, &sub, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_space_subset_size(sub), 49);
    rlt_space r = s;
    rlt_space_restrict(&r, sub);
    cr_assert_eq(rlt_space_size(&r), 49);
    uint64_t last_full = 0;
    for (uint64_t i = 0; i < 49; i++) {
        rlt_config c;
        rlt_space_config_of(&r, i, &c);
        cr_assert_eq(rlt_space_index_of(&r, &c), i);
        cr_assert(rlt_space_is_valid(&r, &c));
        uint64_t full = rlt_space_index_of(&s, &c);
        cr_assert(i == 0 || full > last_full, "members in the order of their unrestricted indices");
        last_full = full;
    }
    rlt_rng rng;
    rlt_rng_seed(&rng, 4);
    for (int i = 0; i < 200; i++) {
        rlt_config c;
        rlt_space_random(&r, &rng, &c);
        cr_assert_lt(rlt_space_index_of(&r, &c), 49, "draws are members");
    }
    /* a valid configuration that is not a member */
    rlt_config outside;
    bool is_found = false;
    for (uint64_t i = 0; i < rlt_space_size(&s) && !is_found; i++) {
        rlt_space_config_of(&s, i, &outside);
        is_found = rlt_space_is_valid(&s, &outside) && rlt_space_index_of(&r, &outside) >= 49;
    }
    cr_assert(is_found);
    uint64_t index = rlt_space_index_of(&r, &outside);
    cr_assert_eq(index, 49 + rlt_space_index_of(&s, &outside));
    rlt_config back;
    rlt_space_config_of(&r, index, &back);
    cr_assert_eq(memcmp(&back, &outside, sizeof back), 0);
    cr_assert(!rlt_space_is_valid(&r, &outside));
    rlt_sched *sched = NULL;
    const char *cc = NULL;
    cr_assert_eq(rlt_space_schedule(&r, &outside, &sched, &cc, &d), RLT_STATUS_ILLEGAL_SCHEDULE);
    cr_assert(strstr(d.message, "restricted"), "%s", d.message);
    float features[4096];
    cr_assert_leq(rlt_space_n_features(&r), 4096);
    cr_assert_neq(rlt_space_features(&r, &outside, features, NULL), RLT_STATUS_OK);
    rlt_space_restrict(&r, NULL);
    cr_assert(rlt_space_is_valid(&r, &outside), "lifted");
    rlt_space_subset_destroy(sub);
    free(p);
    rlt_op_destroy(op);
}

/* ---- replays of made-up datasets ------------------------------------------ */

/* A sample of 2048 of a large space: every tuner proposes only the
 * sample's configurations; random and ga, given as many trials as the
 * sample has, find its best; each curve is the same for the same seed.
 * The trials per second are logged, not asserted. */
Test(dataset, replay_of_a_sample_keeps_tuners_inside_it, .timeout = 300)
{
    rlt_op *op = fixture_op("matmul:M=64,N=64,K=64");
    const char *path = tmp_path("fake.db");
    fake_dataset f = make_fake_dataset(path, op, 2048, 11, -1);
    cr_assert_eq(f.n, 2048);
    rlt_replay *rp = open_replay(path, op);
    cr_assert_eq(rlt_space_size(rlt_replay_space(rp)), 2048);
    cr_assert_eq(rlt_replay_info(rp)->n_configs, 2048);
    cr_assert(!rlt_replay_info(rp)->is_complete);
    /* every planned configuration is answered as recorded */
    rlt_space full;
    tuner_space(op, &full);
    for (int i = 0; i < f.n; i++) {
        const rlt_replay_entry *e = rlt_replay_find(rp, &f.plan[i]);
        cr_assert_not_null(e);
        cr_assert_eq(e->gflops, fake_gflops(&full, &f.plan[i]));
        cr_assert_eq(e->status, e->gflops > 0 ? RLT_STATUS_OK : RLT_STATUS_WRONG_ANSWER);
    }
    static const char *const names[] = {"random", "grid", "ga"};
    for (size_t k = 0; k < RLT_ARRAY_LEN(names); k++) {
        rlt_tune_result a = replay_tune(op, rp, names[k], 2048, 3);
        rlt_tune_result b = replay_tune(op, rp, names[k], 2048, 3);
        cr_assert_eq(a.n_absent, 0, "%s proposed %d configurations outside the dataset", names[k], a.n_absent);
        cr_assert_eq(a.n_replayed, a.n_trials);
        cr_assert_eq(a.n_measured + a.n_from_db, 0, "a replay measures nothing");
        cr_assert_eq(a.n_trials, b.n_trials);
        cr_assert_eq(memcmp(a.curve, b.curve, sizeof *a.curve * (size_t)a.n_trials), 0, "%s: not reproducible",
                     names[k]);
        cr_assert_leq(a.best_gflops, f.best_gflops);
        /* random and grid enumerate what they are given; ga may stop short
         * of the last few (its fallback draws give up near exhaustion) */
        if (strcmp(names[k], "ga") != 0) {
            cr_assert_eq(a.n_trials, 2048, "%s: %d trials", names[k], a.n_trials);
            cr_assert_eq(a.best_gflops, f.best_gflops, "%s: best %g, the dataset's %g", names[k], a.best_gflops,
                         f.best_gflops);
        } else {
            cr_assert_gt(a.n_trials, 1900, "ga: %d trials", a.n_trials);
        }
        /* speed is the benchmark's business (bench/RESULTS.md), not a test's */
        cr_log_info("%s: %d trials, %.0f trials/s", names[k], a.n_trials, a.measurements_per_s);
        rlt_tune_result_free(&a);
        rlt_tune_result_free(&b);
    }
    /* xgb-rank: a shorter run (its cost is the model's), still inside */
    rlt_tune_result x = replay_tune(op, rp, "xgb-rank", 100, 3);
    rlt_tune_result y = replay_tune(op, rp, "xgb-rank", 100, 3);
    cr_assert_eq(x.n_trials, 100);
    cr_assert_eq(x.n_absent, 0);
    cr_assert_eq(memcmp(x.curve, y.curve, sizeof *x.curve * 100), 0, "xgb-rank: not reproducible");
    cr_log_info("xgb-rank: %.0f trials/s", x.measurements_per_s);
    rlt_tune_result_free(&x);
    rlt_tune_result_free(&y);
    rlt_replay_close(rp);
    free(f.plan);
    rlt_op_destroy(op);
}

/* A complete dataset: nothing is absent and every tuner that covers it
 * finds its best; a seed changes the curve. */
Test(dataset, replay_of_a_complete_dataset_finds_its_best)
{
    rlt_op *op = fixture_op("matmul:M=2,N=2,K=2");
    const char *path = tmp_path("complete.db");
    fake_dataset f = make_fake_dataset(path, op, 4096, 0, -1);
    cr_assert(f.info.is_complete);
    rlt_replay *rp = open_replay(path, op);
    static const char *const names[] = {"random", "ga", "xgb-rank"};
    for (size_t k = 0; k < RLT_ARRAY_LEN(names); k++) {
        rlt_tune_result r = replay_tune(op, rp, names[k], f.n + 10, 1);
        cr_assert_eq(r.n_trials, f.n, "%s", names[k]);
        cr_assert(r.was_exhausted);
        cr_assert_eq(r.n_absent, 0);
        cr_assert_eq(r.best_gflops, f.best_gflops, "%s", names[k]);
        rlt_tune_result_free(&r);
    }
    rlt_tune_result a = replay_tune(op, rp, "random", 40, 1);
    rlt_tune_result b = replay_tune(op, rp, "random", 40, 2);
    cr_assert_neq(memcmp(a.curve, b.curve, sizeof *a.curve * 40), 0, "seeds 1 and 2 gave the same curve");
    rlt_tune_result_free(&a);
    rlt_tune_result_free(&b);
    rlt_replay_close(rp);
    free(f.plan);
    rlt_op_destroy(op);
}

/* A dataset measured before the space ruled some configurations out (as
 * when register tiles were limited to the vector registers): the replay
 * leaves those out and answers for the rest. */
Test(dataset, replay_leaves_out_configurations_the_space_no_longer_allows)
{
    rlt_op *op = fixture_op("matmul:M=16,N=16,K=16");
    const char *path = tmp_path("older.db");
    fake_dataset f = make_fake_dataset(path, op, 64, 0, -1);
    rlt_space s;
    tuner_space(op, &s);
    rlt_config ruled_out;
    bool found = false;
    for (uint64_t i = 0; i < rlt_space_size(&s) && !found; i++) {
        rlt_space_config_of(&s, i, &ruled_out);
        found = !rlt_space_is_valid(&s, &ruled_out);
    }
    cr_assert(found, "the space has no invalid configuration to stand for a ruled-out one");
    /* its record, the fastest of all, and one more configuration planned */
    rlt_str key;
    rlt_str_init(&key);
    rlt_space_config_key(&s, &ruled_out, &key);
    rlt_record rec = {.gflops = 1e6, .time_min_ms = 1e-6, .time_median_ms = 1e-6, .created_s = 2e9};
    rlt_diag d = {0};
    snprintf(rec.spec, sizeof rec.spec, "%s", op->spec);
    cr_assert_eq(rlt_record_target_parse(FAKE_TARGET, &rec.target, &d), RLT_STATUS_OK, "%s", d.message);
    snprintf(rec.config, sizeof rec.config, "%s", key.data);
    snprintf(rec.tuner, sizeof rec.tuner, RLT_DATASET_PROPOSER);
    rec.status = RLT_STATUS_OK;
    rlt_str_free(&key);
    rlt_db *db = NULL;
    cr_assert_eq(rlt_db_open(path, NULL, &db, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_db_append(db, 1, &rec, &d), RLT_STATUS_OK, "%s", d.message);
    f.info.n_configs++;
    cr_assert_eq(rlt_dataset_info_put(db, &f.info, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_db_close(db);

    rlt_replay *rp = open_replay(path, op);
    cr_assert_null(rlt_replay_find(rp, &ruled_out));
    rlt_tune_result r = replay_tune(op, rp, "random", f.n + 10, 1);
    cr_assert_eq(r.n_trials, f.n);
    cr_assert_eq(r.best_gflops, f.best_gflops);
    rlt_tune_result_free(&r);
    rlt_replay_close(rp);
    free(f.plan);
    rlt_op_destroy(op);
}

/* start_key (a run at another thread count starts from the best of the
 * last one): the key's configuration is the first one evaluated, and a key
 * that is not a configuration of the space is refused. */
Test(dataset, a_start_key_is_evaluated_first)
{
    rlt_op *op = fixture_op("matmul:M=2,N=2,K=2");
    const char *path = tmp_path("start.db");
    fake_dataset f = make_fake_dataset(path, op, 4096, 0, -1);
    rlt_space s;
    tuner_space(op, &s);
    int best = 0;
    for (int i = 1; i < f.n; i++)
        if (fake_gflops(&s, &f.plan[i]) > fake_gflops(&s, &f.plan[best])) best = i;
    rlt_str key;
    rlt_str_init(&key);
    rlt_space_config_key(&s, &f.plan[best], &key);
    rlt_replay *rp = open_replay(path, op);
    rlt_diag d = {0};
    rlt_tune_result r;
    rlt_tune_opts o = {.tuner = "random", .n_trials = 1, .seed = 3, .replay = rp, .start_key = key.data};
    cr_assert_eq(rlt_tune(op, &o, &r, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(r.best_gflops, f.best_gflops);
    cr_assert_str_eq(r.start_config, key.data);
    rlt_tune_result_free(&r);

    o.start_key = "v1;bogus=3";
    cr_assert_eq(rlt_tune(op, &o, &r, &d), RLT_STATUS_PARSE_ERROR);
    cr_assert(strstr(d.message, "start configuration") && strstr(d.message, "bogus"), "%s", d.message);
    rlt_str_free(&key);
    rlt_replay_close(rp);
    free(f.plan);
    rlt_op_destroy(op);
}

/* ---- refusals ----------------------------------------------------------------- */

static void expect_refused(const char *path, const rlt_op *op, const char *target, rlt_status status,
                           const char *needle)
{
    rlt_diag d = {0}; /* the first failure is the one a diag keeps */
    rlt_replay *rp = (rlt_replay *)1;
    cr_assert_eq(rlt_replay_open(path, op, target, &rp, &d), status, "%s", d.message);
    cr_assert_null(rp);
    cr_assert(strstr(d.message, needle), "message lacks \"%s\": %s", needle, d.message);
}

Test(dataset, replay_refuses_what_it_cannot_answer_for)
{
    rlt_op *op = fixture_expr_op(TINY_EXPR, TINY_SHAPE);
    rlt_op *other = fixture_expr_op(TINY_EXPR, "i=3");
    const char *done = tmp_path("done.db");
    const char *half = tmp_path("half.db");
    fake_dataset f = make_fake_dataset(done, op, 4096, 0, -1);
    fake_dataset g = make_fake_dataset(half, op, 4096, 0, 5);
    expect_refused(done, other, NULL, RLT_STATUS_INVALID_ARGUMENT, "is of op");
    expect_refused(done, op, "cpu=made up;vec=8;threads=2;cc=made up", RLT_STATUS_INVALID_ARGUMENT, "threads=2");
    expect_refused(half, op, NULL, RLT_STATUS_INVALID_ARGUMENT, "unfinished: 5 of its");
    expect_refused(tmp_path("absent.db"), op, NULL, RLT_STATUS_IO_ERROR, "absent.db");
    /* the CPU part of the target may differ: a replay answers for the machine that measured */
    rlt_diag d = {0};
    rlt_replay *rp = NULL;
    cr_assert_eq(rlt_replay_open(done, op, "cpu=another;vec=16;threads=1;cc=made up", &rp, &d), RLT_STATUS_OK, "%s",
                 d.message);
    rlt_replay_close(rp);
    /* and so may what the timings include and the code's version: the
     * dataset has no weights= or codegen= (it is older than those fields),
     * this run's target has */
    cr_assert_eq(rlt_replay_open(done, op, "cpu=made up;vec=8;threads=1;weights=prepacked;codegen=7;cc=made up", &rp,
                                 &d),
                 RLT_STATUS_OK, "%s", d.message);
    rlt_replay_close(rp);
    expect_refused(done, op, "cpu=made up;vec=8;threads=1;weights=prepacked;codegen=7;cc=other",
                   RLT_STATUS_INVALID_ARGUMENT, "cc=other");
    expect_refused(done, op, "cpu=made up;vec=8;threads=2;codegen=7;cc=made up", RLT_STATUS_INVALID_ARGUMENT,
                   "threads=2");
    /* a records database without a description is not a dataset */
    const char *plain = tmp_path("plain.db");
    rlt_db *db = NULL;
    cr_assert_eq(rlt_db_open(plain, NULL, &db, &d), RLT_STATUS_OK);
    rlt_db_close(db);
    expect_refused(plain, op, NULL, RLT_STATUS_INVALID_ARGUMENT, "not a dataset");
    /* a malformed or newer description */
    cr_assert_eq(rlt_db_open(plain, NULL, &db, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_db_meta_set(db, RLT_DATASET_META_KEY, "{\"v\":1,\"spec\":3}", &d), RLT_STATUS_OK);
    rlt_db_close(db);
    expect_refused(plain, op, NULL, RLT_STATUS_PARSE_ERROR, "\"spec\"");
    cr_assert_eq(rlt_db_open(plain, NULL, &db, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_db_meta_set(db, RLT_DATASET_META_KEY, "{\"v\":2}", &d), RLT_STATUS_OK);
    /* the database's own meta keys are not for others */
    cr_assert_eq(rlt_db_meta_set(db, "schema_version", "7", &d), RLT_STATUS_INVALID_ARGUMENT);
    d = (rlt_diag){0};
    rlt_db_close(db);
    expect_refused(plain, op, NULL, RLT_STATUS_PARSE_ERROR, "version 2");
    /* a tuning run given a replay and a database is refused */
    rp = open_replay(done, op);
    cr_assert_eq(rlt_db_open(tmp_path("x.db"), NULL, &db, &d), RLT_STATUS_OK);
    rlt_tune_result r;
    rlt_tune_opts o = {.tuner = "random", .n_trials = 3, .replay = rp, .db = db};
    cr_assert_eq(rlt_tune(op, &o, &r, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "no records"), "%s", d.message);
    rlt_tune_result_free(&r);
    d = (rlt_diag){0};
    o.db = NULL;
    o.n_threads = 2;
    cr_assert_eq(rlt_tune(op, &o, &r, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "thread"), "%s", d.message);
    rlt_tune_result_free(&r);
    rlt_db_close(db);
    rlt_replay_close(rp);
    free(f.plan);
    free(g.plan);
    rlt_op_destroy(other);
    rlt_op_destroy(op);
}

/* ---- a real dataset, stopped and resumed ---------------------------------- */

static volatile sig_atomic_t stop_flag;

static void stop_after_first_batch(const rlt_tune_progress *p, void *ctx)
{
    (void)p, (void)ctx;
    stop_flag = 1;
}

Test(dataset, a_stopped_dataset_resumes_without_measuring_twice)
{
    rlt_op *op = fixture_expr_op(TINY_EXPR, TINY_SHAPE);
    const char *path = tmp_path("real.db");
    rlt_diag d = {0};
    rlt_db *db = NULL;
    rlt_dataset_info info;
    rlt_tune_result r;
    rlt_dataset_opts o = {.batch_size = 8,
                          .build = {.cflags = "-O1 -march=native"},
                          .run = {.repeat = 1, .min_repeat_ms = 0.5},
                          .stop = &stop_flag,
                          .progress = stop_after_first_batch};
    cr_assert_eq(rlt_db_open(path, NULL, &db, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_dataset_build(op, db, path, &o, &info, &r, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert(r.was_stopped);
    cr_assert_eq(r.n_measured, 8);
    cr_assert(info.is_complete);
    int n_configs = info.n_configs;
    cr_assert_gt(n_configs, 8);
    rlt_tune_result_free(&r);
    rlt_db_close(db);
    expect_refused(path, op, NULL, RLT_STATUS_INVALID_ARGUMENT, "unfinished: 8 of its");

    stop_flag = 0;
    o.progress = NULL;
    cr_assert_eq(rlt_db_open(path, NULL, &db, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_dataset_build(op, db, path, &o, &info, &r, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(r.n_from_db, 8, "the first run's measurements are kept");
    cr_assert_eq(r.n_measured, n_configs - 8);
    cr_assert(!r.was_stopped);
    rlt_tune_result_free(&r);
    int64_t n_records = 0;
    cr_assert_eq(rlt_db_count(db, NULL, &n_records, &d), RLT_STATUS_OK);
    cr_assert_eq(n_records, n_configs, "one record per configuration");
    /* the same again measures nothing; other options are refused */
    cr_assert_eq(rlt_dataset_build(op, db, path, &o, &info, &r, &d), RLT_STATUS_OK);
    cr_assert_eq(r.n_measured, 0);
    rlt_tune_result_free(&r);
    o.n_samples = 5;
    cr_assert_eq(rlt_dataset_build(op, db, path, &o, &info, &r, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "--samples 4096"), "%s", d.message);
    rlt_tune_result_free(&r);
    rlt_db_close(db);

    rlt_replay *rp = NULL;
    cr_assert_eq(rlt_replay_open(path, op, NULL, &rp, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_space_size(rlt_replay_space(rp)), (uint64_t)n_configs);
    rlt_replay_close(rp);
    rlt_op_destroy(op);
}
