/* Tests of src/search/transfer.c and the xgb tuners' warm start: rows come
 * only from other workloads of the op's kind on the target, scored by each
 * workload's best, with the features of their own spaces; a tuner given
 * rows that know where the good configurations are proposes good ones from
 * its first batch on, where the same tuner without them starts at random. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "search/transfer.h"
#include "search/tuner.h"

#include "../common/fixtures.h"
#include "../common/tuners.h"
#include "../common/tmp.h"

static char *dir;

static void remove_dir(void)
{
    if (dir) tmp_remove_tree(dir);
    free(dir);
    dir = NULL;
}

TestSuite(transfer, .fini = remove_dir);

static const rlt_space_opts SPACE_OPTS = {.n_threads = 1, .vector_floats = 8, .no_clang = true};

static void random_valid(const rlt_space *s, rlt_rng *rng, rlt_config *c)
{
    do rlt_space_random(s, rng, c);
    while (!rlt_space_is_valid(s, c));
}

/* Appends n records of random configs of `spec` with GFLOP/s from score(). */
/* Target keys (rlt_record_target_key): the run's, another machine's, and
 * one without records. */
#define T_TARGET "cpu=t;vec=8;threads=1;cc=gcc"
#define OTHER_TARGET "cpu=other;vec=8;threads=1;cc=gcc"
#define NONE_TARGET "cpu=none;vec=8;threads=1;cc=gcc"

static void add_records(rlt_db *db, const char *spec, const char *target, int n, uint64_t seed,
                        double (*score)(int i))
{
    rlt_op *op = fixture_op(spec);
    rlt_space s;
    tuner_space(op, &s);
    rlt_rng rng;
    rlt_rng_seed(&rng, seed);
    rlt_record *recs = calloc((size_t)n, sizeof *recs);
    cr_assert_not_null(recs);
    for (int i = 0; i < n; i++) {
        rlt_config c;
        random_valid(&s, &rng, &c);
        rlt_str key;
        rlt_str_init(&key);
        rlt_space_config_key(&s, &c, &key);
        snprintf(recs[i].spec, sizeof recs[i].spec, "%s", op->spec);
        rlt_diag td = {0};
        cr_assert_eq(rlt_record_target_parse(target, &recs[i].target, &td), RLT_STATUS_OK, "%s", td.message);
        snprintf(recs[i].config, sizeof recs[i].config, "%s", key.data);
        snprintf(recs[i].tuner, sizeof recs[i].tuner, "random");
        double g = score(i);
        recs[i].status = g > 0 ? RLT_STATUS_OK : RLT_STATUS_RUN_ERROR;
        recs[i].gflops = g;
        recs[i].time_median_ms = recs[i].time_min_ms = g > 0 ? op->flops / (g * 1e6) : 0;
        recs[i].created_s = 1e9 + i;
        rlt_str_free(&key);
    }
    rlt_diag d = {0};
    cr_assert_eq(rlt_db_append(db, n, recs, &d), RLT_STATUS_OK, "%s", d.message);
    free(recs);
    rlt_op_destroy(op);
}

static double score_ramp(int i) { return i % 5 == 4 ? 0 : 10.0 + i; } /* every fifth failed */
static double score_const(int i) { return 5.0 + 0 * i; }

static rlt_db *open_db(void)
{
    dir = tmp_dir_make("/tmp/rlt_transfer_XXXXXX");
    char path[256];
    snprintf(path, sizeof path, "%s/r.db", dir);
    rlt_db *db = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_db_open(path, NULL, &db, &d), RLT_STATUS_OK, "%s", d.message);
    return db;
}

Test(transfer, rows_come_from_other_workloads_of_the_kind_and_target_normalised_by_their_best)
{
    rlt_db *db = open_db();
    add_records(db, "matmul:M=64,N=64,K=64", T_TARGET, 20, 1, score_ramp);
    add_records(db, "matmul:M=32,N=64,K=128", T_TARGET, 10, 2, score_const);
    add_records(db, "matmul:M=64,N=96,K=64", T_TARGET, 7, 3, score_const);      /* the op itself */
    add_records(db, "matmul:M=64,N=64,K=64", OTHER_TARGET, 9, 4, score_const);
    add_records(db, "conv2d:N=1,C=8,H=8,W=8,K=8,R=3,S=3,stride=1,pad=1", T_TARGET, 6, 5, score_const);

    rlt_op *op = fixture_op("matmul:M=64,N=96,K=64");
    rlt_space s;
    tuner_space(op, &s);
    rlt_transfer t;
    rlt_diag d = {0};
    cr_assert_eq(rlt_transfer_collect(db, op, &s, &SPACE_OPTS, T_TARGET, 0, &t, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(t.n_workloads, 2);
    cr_assert_eq(t.n_rows, 30, "rows %d", t.n_rows);
    cr_assert_eq(t.n_skipped, 6, "the conv2d's records are skipped (got %d)", t.n_skipped);
    cr_assert_eq(t.n_features, rlt_space_n_features(&s));
    /* first workload: its best is 10 + 18 = 28; failures score 0 */
    double top = 0;
    int n_zero = 0;
    for (int i = 0; i < t.n_rows; i++) {
        cr_assert(t.ys[i] >= 0 && t.ys[i] <= 1.0, "row %d score %g", i, t.ys[i]);
        top = fmax(top, t.ys[i]);
        n_zero += t.ys[i] == 0;
    }
    cr_assert_float_eq(top, 1.0, 1e-12);
    cr_assert_eq(n_zero, 4);
    cr_assert_float_eq(t.ys[0], 10.0 / 28.0, 1e-12);

    /* the rows are the features of each config in its own workload's space */
    rlt_op *first = fixture_op("matmul:M=64,N=64,K=64");
    rlt_space fs;
    tuner_space(first, &fs);
    rlt_rng rng;
    rlt_rng_seed(&rng, 1);
    rlt_config c;
    random_valid(&fs, &rng, &c);
    float *row = calloc((size_t)t.n_features, sizeof *row);
    cr_assert_eq(rlt_space_features(&fs, &c, row, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(memcmp(row, t.xs, sizeof *row * (size_t)t.n_features), 0);
    free(row);

    /* at most max_rows, the newest kept */
    rlt_transfer_free(&t);
    cr_assert_eq(rlt_transfer_collect(db, op, &s, &SPACE_OPTS, T_TARGET, 12, &t, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_leq(t.n_rows, 12);
    rlt_transfer_free(&t);

    /* nothing of the kind on another target */
    cr_assert_eq(rlt_transfer_collect(db, op, &s, &SPACE_OPTS, NONE_TARGET, 0, &t, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(t.n_rows, 0);
    cr_assert_eq(t.n_workloads, 0);
    rlt_transfer_free(&t);

    rlt_op_destroy(first);
    rlt_op_destroy(op);
    rlt_db_close(db);
}

/* Mean score of the tuner's first batch of 16. */
static double first_batch(const rlt_space *s, const rlt_config *best, uint64_t seed, const rlt_tuner_opts *base)
{
    rlt_tuner_opts o = *base;
    o.seed = seed;
    o.sa_iterations = 100;
    rlt_tuner *t = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_tuner_create("xgb-rank", s, &o, &t, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_config batch[16];
    int n = rlt_tuner_next_batch(t, 16, batch);
    cr_assert_eq(n, 16);
    double sum = 0;
    for (int i = 0; i < n; i++) sum += fixture_synthetic_score(s, &batch[i], best) / n;
    rlt_tuner_destroy(t);
    return sum;
}

Test(transfer, a_warm_started_tuner_proposes_good_configs_from_its_first_batch)
{
    rlt_op *op = fixture_op("matmul:M=512,N=512,K=512");
    rlt_space s;
    tuner_space(op, &s);
    rlt_config best;
    rlt_diag d = {0};
    fixture_config(&s, FIXTURE_SYNTHETIC_BEST, &best);
    /* 600 rows of random configs scored by the synthetic function, as if
     * another workload with the same optimum had been tuned */
    enum { N_ROWS = 600 };
    int nf = rlt_space_n_features(&s);
    float *xs = calloc((size_t)N_ROWS * (size_t)nf, sizeof *xs);
    double *ys = calloc(N_ROWS, sizeof *ys);
    rlt_rng rng;
    rlt_rng_seed(&rng, 99);
    for (int i = 0; i < N_ROWS; i++) {
        rlt_config c;
        random_valid(&s, &rng, &c);
        cr_assert_eq(rlt_space_features(&s, &c, xs + (size_t)i * (size_t)nf, &d), RLT_STATUS_OK, "%s", d.message);
        ys[i] = fixture_synthetic_score(&s, &c, &best) / 100.0;
    }
    rlt_tuner_opts cold = {0};
    rlt_tuner_opts warm = {.n_transfer = N_ROWS, .transfer_xs = xs, .transfer_ys = ys};
    double with = 0, without = 0;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        with += first_batch(&s, &best, seed, &warm) / 3;
        without += first_batch(&s, &best, seed, &cold) / 3;
    }
    cr_log_info("mean score of the first batch: warm %.1f, cold %.1f (optimum 100)", with, without);
    cr_assert_gt(with, 2 * without + 5.0, "warm %.1f vs cold %.1f", with, without);
    free(xs);
    free(ys);
    rlt_op_destroy(op);
}
