/* Unit tests of the cost model (src/search/cost_model.c): the three losses
 * learn a known function of a 16x16 grid (held-out rank correlation, the argmax),
 * the rank model finds the held-out top 10 where a model of shuffled labels
 * does not, one seed gives bit-identical predictions, save -> load keeps
 * them, damaged or foreign saved models are refused, bad input gets
 * INVALID_ARGUMENT naming the row, fewer than 2 rows leave the model
 * untrained, allocation failures are reported without leaks, XGBoost stays
 * quiet, reg-weighted weighs each row by its score. The fit time of 1000 x 50 rows is printed, not asserted. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/leaks.h"
#include "search/cost_model.h"

/* ---- data --------------------------------------------------------------- */

#define GRID 16
#define GRID_ROWS (GRID * GRID)
#define HALF (GRID_ROWS / 2)
#define N_GRID_FEATURES 3

/* The 16x16 grid: features (x0, x1, noise), score a bump at (11, 4). */
typedef struct grid_data {
    float features[GRID_ROWS * N_GRID_FEATURES];
    double scores[GRID_ROWS];
    /* a seeded random split: rows train[0..HALF) and test[0..HALF) */
    float train_x[HALF * N_GRID_FEATURES], test_x[HALF * N_GRID_FEATURES];
    double train_y[HALF], test_y[HALF];
} grid_data;

static double bump(int x0, int x1) { return exp(-((x0 - 11.0) * (x0 - 11.0) + (x1 - 4.0) * (x1 - 4.0)) / 20.0); }

static void shuffle_ints(rlt_rng *rng, int *a, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rlt_rng_below(rng, (uint64_t)i + 1);
        int t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

static void shuffle_doubles(rlt_rng *rng, double *a, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rlt_rng_below(rng, (uint64_t)i + 1);
        double t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

static void grid_make(grid_data *g, uint64_t seed)
{
    rlt_rng rng;
    rlt_rng_seed(&rng, seed);
    int perm[GRID_ROWS];
    for (int i = 0; i < GRID_ROWS; i++) {
        int x0 = i / GRID, x1 = i % GRID;
        g->features[i * 3 + 0] = (float)x0;
        g->features[i * 3 + 1] = (float)x1;
        g->features[i * 3 + 2] = (float)rlt_rng_uniform(&rng);
        g->scores[i] = bump(x0, x1);
        perm[i] = i;
    }
    shuffle_ints(&rng, perm, GRID_ROWS);
    for (int i = 0; i < HALF; i++) {
        memcpy(&g->train_x[i * 3], &g->features[perm[i] * 3], 3 * sizeof(float));
        memcpy(&g->test_x[i * 3], &g->features[perm[HALF + i] * 3], 3 * sizeof(float));
        g->train_y[i] = g->scores[perm[i]];
        g->test_y[i] = g->scores[perm[HALF + i]];
    }
}

/* ---- statistics --------------------------------------------------------- */

static const double *sort_keys;

static int by_key_desc(const void *pa, const void *pb)
{
    int a = *(const int *)pa, b = *(const int *)pb;
    if (sort_keys[a] != sort_keys[b]) return sort_keys[a] > sort_keys[b] ? -1 : 1;
    return a - b;
}

/* Row indices ordered by x, largest first. */
static void order_desc(const double *x, int n, int *idx)
{
    for (int i = 0; i < n; i++) idx[i] = i;
    sort_keys = x;
    qsort(idx, (size_t)n, sizeof idx[0], by_key_desc);
}

/* Ranks 1..n with ties sharing their mean rank. */
static void mean_ranks(const double *x, int n, double *rank)
{
    int idx[GRID_ROWS];
    cr_assert_leq(n, GRID_ROWS);
    order_desc(x, n, idx);
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && x[idx[j + 1]] == x[idx[i]]) j++;
        for (int q = i; q <= j; q++) rank[idx[q]] = (i + j) / 2.0 + 1;
        i = j + 1;
    }
}

static double spearman(const double *a, const double *b, int n)
{
    double ra[GRID_ROWS], rb[GRID_ROWS];
    mean_ranks(a, n, ra);
    mean_ranks(b, n, rb);
    double ma = 0, mb = 0;
    for (int i = 0; i < n; i++) ma += ra[i], mb += rb[i];
    ma /= n;
    mb /= n;
    double sab = 0, saa = 0, sbb = 0;
    for (int i = 0; i < n; i++) {
        sab += (ra[i] - ma) * (rb[i] - mb);
        saa += (ra[i] - ma) * (ra[i] - ma);
        sbb += (rb[i] - mb) * (rb[i] - mb);
    }
    return sab / sqrt(saa * sbb);
}

/* How many of the 10 rows predicted best are in the true top 10; a row
 * tied with the 10th best true score counts (the bump has rings of equal
 * scores). */
static int top10_hits(const double *pred, const double *truth, int n)
{
    int ip[GRID_ROWS], it[GRID_ROWS];
    order_desc(pred, n, ip);
    order_desc(truth, n, it);
    double threshold = truth[it[9]];
    int hits = 0;
    for (int i = 0; i < 10; i++) hits += truth[ip[i]] >= threshold;
    return hits;
}

/* ---- helpers ------------------------------------------------------------ */

static rlt_cost_model *model_new(rlt_cost_loss loss, int n_features, uint64_t seed)
{
    rlt_cost_model_opts o = {.loss = loss, .seed = seed};
    rlt_cost_model *m = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_cost_model_create(&o, n_features, &m, &d), RLT_STATUS_OK, "%s", d.message);
    return m;
}

static void model_fit(rlt_cost_model *m, int n, const float *x, const double *y)
{
    rlt_diag d = {0};
    cr_assert_eq(rlt_cost_model_fit(m, n, x, y, &d), RLT_STATUS_OK, "%s", d.message);
}

static void model_predict(const rlt_cost_model *m, int n, const float *x, double *out)
{
    rlt_diag d = {0};
    cr_assert_eq(rlt_cost_model_predict(m, n, x, out, &d), RLT_STATUS_OK, "%s", d.message);
}

static rlt_cost_model *model_trained_on_grid(rlt_cost_loss loss, const grid_data *g)
{
    rlt_cost_model *m = model_new(loss, N_GRID_FEATURES, 42);
    model_fit(m, HALF, g->train_x, g->train_y);
    cr_assert(rlt_cost_model_is_trained(m));
    return m;
}

static char *model_save(const rlt_cost_model *m, size_t *len)
{
    char *bytes = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_cost_model_save(m, &bytes, len, &d), RLT_STATUS_OK, "%s", d.message);
    return bytes;
}

/* Loading must fail with `status` and a message containing `needle`. */
static void assert_load_fails(const char *bytes, size_t len, rlt_status status, const char *needle)
{
    rlt_cost_model *m = NULL;
    rlt_diag d = {0};
    rlt_status st = rlt_cost_model_load(bytes, len, &m, &d);
    cr_assert_eq(st, status, "got %s (%s), expected %s", rlt_status_str(st), d.message, rlt_status_str(status));
    cr_assert_null(m);
    cr_assert(strstr(d.message, needle), "message '%s' lacks '%s'", d.message, needle);
}

/* `bytes` with the first `from` replaced by `to` (free with free). */
static char *replace_once(const char *bytes, size_t len, const char *from, const char *to, size_t *out_len)
{
    const char *at = memmem(bytes, len, from, strlen(from));
    cr_assert_not_null(at, "'%s' not in the saved model", from);
    size_t head = (size_t)(at - bytes), tail = len - head - strlen(from);
    *out_len = head + strlen(to) + tail;
    char *out = malloc(*out_len + 1);
    cr_assert_not_null(out);
    memcpy(out, bytes, head);
    memcpy(out + head, to, strlen(to));
    memcpy(out + head + strlen(to), at + strlen(from), tail);
    return out;
}

/* ---- learning ----------------------------------------------------------- */

static void check_learns_bump(rlt_cost_loss loss)
{
    grid_data g;
    grid_make(&g, 1);
    rlt_cost_model *m = model_trained_on_grid(loss, &g);
    double pred[GRID_ROWS];
    model_predict(m, HALF, g.test_x, pred);
    double rho = spearman(pred, g.test_y, HALF);
    cr_expect_gt(rho, 0.9, "held-out Spearman %.3f", rho);

    model_predict(m, GRID_ROWS, g.features, pred);
    int best = 0;
    for (int i = 1; i < GRID_ROWS; i++)
        if (pred[i] > pred[best]) best = i;
    double dist = hypot(best / GRID - 11, best % GRID - 4);
    cr_expect_leq(dist, 2.0, "argmax of the predictions at (%d, %d), %.2f from (11, 4)", best / GRID, best % GRID,
                  dist);
    rlt_cost_model_destroy(m);
}

Test(cost_model, rank_learns_known_function) { check_learns_bump(RLT_COST_RANK); }
Test(cost_model, reg_learns_known_function) { check_learns_bump(RLT_COST_REG); }
Test(cost_model, reg_weighted_learns_known_function) { check_learns_bump(RLT_COST_REG_WEIGHTED); }

/* Rows that no split can tell apart (one constant feature) are predicted
 * at their mean score: the plain mean for reg, the mean weighted by score
 * for reg-weighted, where the failures (0) weigh nothing. Five failures,
 * nine rows at 0.1, one at 1.0: plain 1.9 / 15 = 0.127, weighted
 * (9 x 0.01 + 1) / (9 x 0.1 + 1) = 0.574. */
Test(cost_model, reg_weighted_weighs_rows_by_score)
{
    enum { N = 15 };
    float x[N];
    double y[N];
    for (int i = 0; i < N; i++) {
        x[i] = 1;
        y[i] = i < 5 ? 0.0 : i < 14 ? 0.1 : 1.0;
    }
    const double expected[] = {[RLT_COST_REG] = 1.9 / 15, [RLT_COST_REG_WEIGHTED] = 1.09 / 1.9};
    for (int loss = RLT_COST_REG; loss <= RLT_COST_REG_WEIGHTED; loss++) {
        rlt_cost_model *m = model_new((rlt_cost_loss)loss, 1, 5);
        model_fit(m, N, x, y);
        double pred = 0;
        model_predict(m, 1, x, &pred);
        cr_expect(fabs(pred - expected[loss]) < 0.01, "loss %s: predicts %.4f, expected %.4f",
                  rlt_cost_loss_name((rlt_cost_loss)loss), pred, expected[loss]);
        rlt_cost_model_destroy(m);
    }
    /* the names round-trip, and an unknown one is refused */
    for (int loss = RLT_COST_RANK; loss <= RLT_COST_REG_WEIGHTED; loss++) {
        rlt_cost_loss back = RLT_COST_RANK;
        cr_assert(rlt_cost_loss_parse(rlt_cost_loss_name((rlt_cost_loss)loss), &back));
        cr_assert_eq((int)back, loss);
    }
    rlt_cost_loss unused;
    cr_assert_not(rlt_cost_loss_parse("weighted", &unused));
    assert_no_leaks();
}

/* Over five splits the rank model's predicted top 10 of the held-out half
 * hold at least 7 true top-10 rows on average, and a model of the same rows
 * with shuffled scores (what chance gives: about 1 in 10) clearly fewer. */
Test(cost_model, rank_finds_top10)
{
    int hits = 0, shuffled_hits = 0;
    for (uint64_t seed = 1; seed <= 5; seed++) {
        grid_data g;
        grid_make(&g, seed);
        double pred[HALF];
        rlt_cost_model *m = model_new(RLT_COST_RANK, N_GRID_FEATURES, seed);
        model_fit(m, HALF, g.train_x, g.train_y);
        model_predict(m, HALF, g.test_x, pred);
        int h = top10_hits(pred, g.test_y, HALF);

        rlt_rng rng;
        rlt_rng_seed(&rng, 100 + seed);
        double shuffled[HALF];
        memcpy(shuffled, g.train_y, sizeof shuffled);
        shuffle_doubles(&rng, shuffled, HALF);
        model_fit(m, HALF, g.train_x, shuffled);
        model_predict(m, HALF, g.test_x, pred);
        int sh = top10_hits(pred, g.test_y, HALF);
        printf("split %d: top-10 hits %d, with shuffled scores %d\n", (int)seed, h, sh);
        hits += h;
        shuffled_hits += sh;
        rlt_cost_model_destroy(m);
    }
    fflush(stdout);
    cr_expect_geq(hits, 35, "top-10 hits %d of 50", hits);
    cr_expect_leq(shuffled_hits, 20, "shuffled top-10 hits %d of 50", shuffled_hits);
    cr_expect_geq(hits - shuffled_hits, 20, "trained %d vs shuffled %d of 50", hits, shuffled_hits);
}

/* ---- determinism and save / load ---------------------------------------- */

Test(cost_model, same_seed_same_predictions)
{
    grid_data g;
    grid_make(&g, 3);
    for (int loss = RLT_COST_RANK; loss <= RLT_COST_REG_WEIGHTED; loss++) {
        double a[GRID_ROWS], b[GRID_ROWS], c[GRID_ROWS];
        rlt_cost_model *m1 = model_trained_on_grid((rlt_cost_loss)loss, &g);
        rlt_cost_model *m2 = model_trained_on_grid((rlt_cost_loss)loss, &g);
        model_predict(m1, GRID_ROWS, g.features, a);
        model_predict(m2, GRID_ROWS, g.features, b);
        cr_assert(memcmp(a, b, sizeof a) == 0, "loss %d: two fits of one seed differ", loss);
        /* refitting a model from scratch gives the same model again */
        model_fit(m1, HALF, g.train_x, g.train_y);
        model_predict(m1, GRID_ROWS, g.features, c);
        cr_assert(memcmp(a, c, sizeof a) == 0, "loss %d: a refit differs", loss);
        rlt_cost_model_destroy(m1);
        rlt_cost_model_destroy(m2);
    }
    assert_no_leaks();
}

Test(cost_model, save_load_round_trip)
{
    grid_data g;
    grid_make(&g, 4);
    for (int loss = RLT_COST_RANK; loss <= RLT_COST_REG_WEIGHTED; loss++) {
        rlt_cost_model *m = model_trained_on_grid((rlt_cost_loss)loss, &g);
        size_t len = 0;
        char *bytes = model_save(m, &len);
        char header[96];
        snprintf(header, sizeof header, "rltune-cost-model v1\nloss %s\nn_features 3\n",
                 rlt_cost_loss_name((rlt_cost_loss)loss));
        cr_assert(strncmp(bytes, header, strlen(header)) == 0, "header: %.60s", bytes);

        rlt_cost_model *m2 = NULL;
        rlt_diag d = {0};
        cr_assert_eq(rlt_cost_model_load(bytes, len, &m2, &d), RLT_STATUS_OK, "%s", d.message);
        cr_assert(rlt_cost_model_is_trained(m2));
        cr_assert_eq(rlt_cost_model_n_features(m2), 3);
        double a[GRID_ROWS], b[GRID_ROWS];
        model_predict(m, GRID_ROWS, g.features, a);
        model_predict(m2, GRID_ROWS, g.features, b);
        cr_assert(memcmp(a, b, sizeof a) == 0, "loss %d: loaded model predicts differently", loss);

        /* the loaded model saves to the same bytes, and refits to the same
         * model: its options came back too */
        size_t len2 = 0;
        char *bytes2 = model_save(m2, &len2);
        cr_assert_eq(len2, len);
        cr_assert(memcmp(bytes, bytes2, len) == 0, "loss %d: save of the loaded model differs", loss);
        model_fit(m2, HALF, g.train_x, g.train_y);
        model_predict(m2, GRID_ROWS, g.features, b);
        cr_assert(memcmp(a, b, sizeof a) == 0, "loss %d: refit of the loaded model differs", loss);

        rlt_free(bytes2);
        rlt_free(bytes);
        rlt_cost_model_destroy(m2);
        rlt_cost_model_destroy(m);
    }
    assert_no_leaks();
}

Test(cost_model, untrained_save_load)
{
    rlt_cost_model *m = model_new(RLT_COST_REG, 7, 9);
    size_t len = 0;
    char *bytes = model_save(m, &len);
    cr_assert(strstr(bytes, "model_bytes 0\n"));
    rlt_cost_model *m2 = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_cost_model_load(bytes, len, &m2, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_not(rlt_cost_model_is_trained(m2));
    float x[7] = {1, 2, 3, 4, 5, 6, 7};
    double y = -1;
    model_predict(m2, 1, x, &y);
    cr_assert_eq(y, 0.0);
    rlt_free(bytes);
    rlt_cost_model_destroy(m2);
    rlt_cost_model_destroy(m);
}

Test(cost_model, load_refuses_damaged_models)
{
    grid_data g;
    grid_make(&g, 5);
    rlt_cost_model *m = model_trained_on_grid(RLT_COST_RANK, &g);
    size_t len = 0, n = 0;
    char *bytes = model_save(m, &len);
    char *bad = NULL;

    assert_load_fails("", 0, RLT_STATUS_PARSE_ERROR, "not an rltune cost model");
    assert_load_fails(NULL, 0, RLT_STATUS_PARSE_ERROR, "not an rltune cost model");
    assert_load_fails("{\"learner\": {}}", 15, RLT_STATUS_PARSE_ERROR, "not an rltune cost model");

    bad = replace_once(bytes, len, "rltune-cost-model v1", "rltune-cost-model v2", &n);
    assert_load_fails(bad, n, RLT_STATUS_PARSE_ERROR, "unsupported version 'v2'");
    free(bad);
    bad = replace_once(bytes, len, "rltune-cost-model v1", "rltune-cost-model vX", &n);
    assert_load_fails(bad, n, RLT_STATUS_PARSE_ERROR, "unsupported version 'vX'");
    free(bad);

    /* the header's n_features and loss must be the XGBoost model's */
    bad = replace_once(bytes, len, "n_features 3\n", "n_features 5\n", &n);
    assert_load_fails(bad, n, RLT_STATUS_PARSE_ERROR, "header says n_features 5 but the XGBoost model has 3");
    free(bad);
    bad = replace_once(bytes, len, "loss rank\n", "loss reg\n", &n);
    assert_load_fails(bad, n, RLT_STATUS_PARSE_ERROR, "objective is not reg:squarederror");
    free(bad);
    bad = replace_once(bytes, len, "loss rank\n", "loss lambdamart\n", &n);
    assert_load_fails(bad, n, RLT_STATUS_PARSE_ERROR, "unknown loss 'lambdamart'");
    free(bad);

    /* header fields: missing, out of range, in the wrong order */
    bad = replace_once(bytes, len, "eta 0.29999999999999999\n", "", &n);
    assert_load_fails(bad, n, RLT_STATUS_PARSE_ERROR, "expected 'eta <value>'");
    free(bad);
    bad = replace_once(bytes, len, "eta 0.29999999999999999\n", "eta 7\n", &n);
    assert_load_fails(bad, n, RLT_STATUS_PARSE_ERROR, "saved options: cost model: eta 7 is outside (0, 1]");
    free(bad);
    bad = replace_once(bytes, len, "max_depth 3\n", "max_depth -3\n", &n);
    assert_load_fails(bad, n, RLT_STATUS_PARSE_ERROR, "max_depth '-3' is not an integer in 1..20");
    free(bad);
    bad = replace_once(bytes, len, "seed 42\n", "seed -1\n", &n);
    assert_load_fails(bad, n, RLT_STATUS_PARSE_ERROR, "seed '-1'");
    free(bad);

    /* the model's length must match; its text must be XGBoost's */
    assert_load_fails(bytes, len - 1, RLT_STATUS_PARSE_ERROR, "bytes follow it");
    char *header_end = strstr(bytes, "model_bytes ");
    cr_assert_not_null(header_end);
    assert_load_fails(bytes, (size_t)(header_end - bytes) + 5, RLT_STATUS_PARSE_ERROR, "missing 'model_bytes'");
    bad = replace_once(bytes, len, "{", "[", &n);
    assert_load_fails(bad, n, RLT_STATUS_PARSE_ERROR, "not XGBoost JSON");
    free(bad);
    bad = replace_once(bytes, len, "\"learner\"", "\"lerner!\"", &n);
    assert_load_fails(bad, n, RLT_STATUS_PARSE_ERROR, "xgboost: loading the model");
    free(bad);

    rlt_free(bytes);
    rlt_cost_model_destroy(m);
    assert_no_leaks();
}

/* ---- errors and small inputs -------------------------------------------- */

Test(cost_model, bad_options_and_sizes)
{
    rlt_cost_model *m = NULL;
    rlt_diag d = {0};
    rlt_cost_model_opts o = {0};
    cr_assert_eq(rlt_cost_model_create(&o, 0, &m, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "n_features must be >= 1, got 0"), "%s", d.message);
    cr_assert_null(m);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_cost_model_create(&o, -4, &m, &d), RLT_STATUS_INVALID_ARGUMENT);

    struct {
        rlt_cost_model_opts opts;
        const char *needle;
    } cases[] = {
        {{.loss = (rlt_cost_loss)7}, "unknown loss 7"},
        {{.eta = 1.5}, "eta 1.5"},
        {{.eta = NAN}, "eta nan"},
        {{.max_depth = -1}, "max_depth -1"},
        {{.gamma = -1}, "gamma -1"},
        {{.min_child_weight = INFINITY}, "min_child_weight inf"},
        {{.max_rounds = -5}, "max_rounds -5"},
        {{.early_stopping = -2}, "early_stopping -2"},
    };
    for (size_t i = 0; i < RLT_ARRAY_LEN(cases); i++) {
        d = (rlt_diag){0};
        cr_assert_eq(rlt_cost_model_create(&cases[i].opts, 3, &m, &d), RLT_STATUS_INVALID_ARGUMENT, "case %zu",
                     i);
        cr_assert(strstr(d.message, cases[i].needle), "case %zu: '%s' lacks '%s'", i, d.message,
                  cases[i].needle);
        cr_assert_null(m);
    }
    /* NULL options are the defaults */
    d = (rlt_diag){0};
    cr_assert_eq(rlt_cost_model_create(NULL, 3, &m, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_cost_model_destroy(m);
}

Test(cost_model, non_finite_input_names_the_row)
{
    grid_data g;
    grid_make(&g, 6);
    rlt_cost_model *m = model_trained_on_grid(RLT_COST_REG, &g);
    double before[GRID_ROWS], after[GRID_ROWS];
    model_predict(m, GRID_ROWS, g.features, before);

    rlt_diag d = {0};
    double y[HALF];
    memcpy(y, g.train_y, sizeof y);
    y[3] = NAN;
    cr_assert_eq(rlt_cost_model_fit(m, HALF, g.train_x, y, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "score of row 3 is nan"), "%s", d.message);
    y[3] = 0;
    y[9] = -INFINITY;
    d = (rlt_diag){0};
    cr_assert_eq(rlt_cost_model_fit(m, HALF, g.train_x, y, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "score of row 9 is -inf"), "%s", d.message);
    y[9] = 1e300; /* finite, but not as a float */
    d = (rlt_diag){0};
    cr_assert_eq(rlt_cost_model_fit(m, HALF, g.train_x, y, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "score of row 9"), "%s", d.message);

    float x[HALF * N_GRID_FEATURES];
    memcpy(x, g.train_x, sizeof x);
    x[2 * 3 + 1] = NAN;
    d = (rlt_diag){0};
    cr_assert_eq(rlt_cost_model_fit(m, HALF, x, g.train_y, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "feature 1 of row 2 is nan"), "%s", d.message);
    d = (rlt_diag){0};
    double out[HALF];
    cr_assert_eq(rlt_cost_model_predict(m, HALF, x, out, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "feature 1 of row 2 is nan"), "%s", d.message);
    x[2 * 3 + 1] = INFINITY;
    d = (rlt_diag){0};
    cr_assert_eq(rlt_cost_model_predict(m, HALF, x, out, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "feature 1 of row 2 is inf"), "%s", d.message);

    d = (rlt_diag){0};
    cr_assert_eq(rlt_cost_model_fit(m, -1, g.train_x, g.train_y, &d), RLT_STATUS_INVALID_ARGUMENT);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_cost_model_fit(m, 4, NULL, g.train_y, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "no features"), "%s", d.message);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_cost_model_predict(m, 4, g.train_x, NULL, &d), RLT_STATUS_INVALID_ARGUMENT);

    /* a refused fit leaves the previous model in place */
    cr_assert(rlt_cost_model_is_trained(m));
    model_predict(m, GRID_ROWS, g.features, after);
    cr_assert(memcmp(before, after, sizeof before) == 0);
    rlt_cost_model_destroy(m);
}

Test(cost_model, fewer_than_two_rows_is_untrained)
{
    rlt_cost_model *m = model_new(RLT_COST_RANK, 2, 1);
    float x[4] = {1, 2, 3, 4};
    double y[2] = {0.5, 1.0}, out[2] = {7, 7};
    cr_assert_not(rlt_cost_model_is_trained(m));
    model_predict(m, 2, x, out);
    cr_assert(out[0] == 0 && out[1] == 0);

    model_fit(m, 0, NULL, NULL);
    cr_assert_not(rlt_cost_model_is_trained(m));
    model_fit(m, 1, x, y);
    cr_assert_not(rlt_cost_model_is_trained(m));
    out[0] = out[1] = 7;
    model_predict(m, 2, x, out);
    cr_assert(out[0] == 0 && out[1] == 0);

    /* two rows train; one row again drops the model: fit is from scratch */
    model_fit(m, 2, x, y);
    cr_assert(rlt_cost_model_is_trained(m));
    model_predict(m, 2, x, out);
    cr_assert_gt(out[1], out[0], "two rows, order not learnt: %g %g", out[0], out[1]);
    model_fit(m, 1, x, y);
    cr_assert_not(rlt_cost_model_is_trained(m));
    model_predict(m, 0, NULL, NULL);
    rlt_cost_model_destroy(m);
}

/* Rows whose scores are all equal (every measurement failed) train a model
 * with nothing to rank; it predicts one value everywhere. */
Test(cost_model, all_scores_equal)
{
    grid_data g;
    grid_make(&g, 7);
    double zeros[HALF] = {0};
    for (int loss = RLT_COST_RANK; loss <= RLT_COST_REG_WEIGHTED; loss++) {
        rlt_cost_model *m = model_new((rlt_cost_loss)loss, N_GRID_FEATURES, 1);
        model_fit(m, HALF, g.train_x, zeros);
        double out[HALF];
        model_predict(m, HALF, g.test_x, out);
        for (int i = 1; i < HALF; i++) cr_assert_eq(out[i], out[0], "loss %d row %d", loss, i);
        rlt_cost_model_destroy(m);
    }
}

/* Every allocation of fit, save and load can fail: each failure is
 * OUT_OF_MEMORY and leaves nothing behind. */
Test(cost_model, allocation_failures)
{
    grid_data g;
    grid_make(&g, 8);
    rlt_cost_model *trained = model_trained_on_grid(RLT_COST_RANK, &g);
    size_t len = 0;
    char *bytes = model_save(trained, &len);
    int n_failures = 0;
    for (long k = 1;; k++) {
        rlt_diag d = {0};
        rlt_cost_model *m = NULL, *loaded = NULL;
        char *saved = NULL;
        size_t saved_len = 0;
        rlt_alloc_fail_after(k);
        rlt_cost_model_opts o = {.loss = RLT_COST_RANK, .seed = 42};
        rlt_status st = rlt_cost_model_create(&o, N_GRID_FEATURES, &m, &d);
        if (st == RLT_STATUS_OK) st = rlt_cost_model_fit(m, HALF, g.train_x, g.train_y, &d);
        if (st == RLT_STATUS_OK) st = rlt_cost_model_save(m, &saved, &saved_len, &d);
        if (st == RLT_STATUS_OK) st = rlt_cost_model_load(bytes, len, &loaded, &d);
        rlt_alloc_fail_after(0);
        rlt_free(saved);
        rlt_cost_model_destroy(loaded);
        rlt_cost_model_destroy(m);
        if (st == RLT_STATUS_OK) break;
        cr_assert_eq(st, RLT_STATUS_OUT_OF_MEMORY, "failing allocation %ld: %s (%s)", k, rlt_status_str(st),
                     d.message);
        cr_assert(strstr(d.message, "out of memory"), "%s", d.message);
        n_failures++;
        cr_assert_lt(k, 1000, "allocations never stop failing");
    }
    cr_assert_gt(n_failures, 3);
    rlt_free(bytes);
    rlt_cost_model_destroy(trained);
    assert_no_leaks();
}

/* XGBoost logs to the console by default; the model must not. */
Test(cost_model, xgboost_is_quiet, .init = cr_redirect_stdout)
{
    cr_redirect_stderr();
    grid_data g;
    grid_make(&g, 9);
    for (int loss = RLT_COST_RANK; loss <= RLT_COST_REG_WEIGHTED; loss++) {
        rlt_cost_model *m = model_trained_on_grid((rlt_cost_loss)loss, &g);
        size_t len = 0;
        char *bytes = model_save(m, &len);
        rlt_cost_model *m2 = NULL;
        rlt_diag d = {0};
        cr_assert_eq(rlt_cost_model_load(bytes, len, &m2, &d), RLT_STATUS_OK, "%s", d.message);
        double out[HALF];
        model_predict(m2, HALF, g.test_x, out);
        /* an error path, which is where XGBoost is most talkative */
        size_t bad_len = 0;
        char *bad = replace_once(bytes, len, "\"learner\"", "\"lerner!\"", &bad_len);
        d = (rlt_diag){0};
        rlt_cost_model *m3 = NULL;
        cr_assert_neq(rlt_cost_model_load(bad, bad_len, &m3, &d), RLT_STATUS_OK);
        free(bad);
        rlt_free(bytes);
        rlt_cost_model_destroy(m2);
        rlt_cost_model_destroy(m);
    }
    fflush(stdout);
    fflush(stderr);
    cr_assert_stdout_eq_str("");
    cr_assert_stderr_eq_str("");
}

/* ---- timing ------------------------------------------------------------- */

/* The tuner refits after every batch: print what a fit of 1000 rows of 50
 * features costs (not asserted; docs/cost_model.md records the numbers). */
Test(cost_model, fit_time_1000x50)
{
    enum { N = 1000, F = 50 };
    float *x = malloc(sizeof(float) * N * F);
    double *y = malloc(sizeof(double) * N);
    cr_assert(x && y);
    rlt_rng rng;
    rlt_rng_seed(&rng, 11);
    for (int i = 0; i < N; i++) {
        for (int j = 0; j < F; j++) x[i * F + j] = (float)rlt_rng_uniform(&rng);
        y[i] = sin(3 * x[i * F]) + x[i * F + 1] * x[i * F + 2] + 0.1 * rlt_rng_uniform(&rng);
    }
    for (int loss = RLT_COST_RANK; loss <= RLT_COST_REG_WEIGHTED; loss++) {
        rlt_cost_model *m = model_new((rlt_cost_loss)loss, F, 1);
        uint64_t t0 = rlt_time_ns();
        model_fit(m, N, x, y);
        double fit_ms = (double)(rlt_time_ns() - t0) * 1e-6;
        double *out = malloc(sizeof(double) * N);
        cr_assert_not_null(out);
        t0 = rlt_time_ns();
        model_predict(m, N, x, out);
        double predict_ms = (double)(rlt_time_ns() - t0) * 1e-6;
        printf("cost model %s: fit %d x %d rows in %.0f ms, predict in %.1f ms\n",
               rlt_cost_loss_name((rlt_cost_loss)loss), N, F, fit_ms, predict_ms);
        free(out);
        rlt_cost_model_destroy(m);
    }
    fflush(stdout);
    free(x);
    free(y);
}
