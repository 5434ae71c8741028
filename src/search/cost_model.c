/*
 * cost_model.c - the learned cost model: gradient-boosted trees trained
 * through XGBoost's C API (libxgboost 1.7) on (features, score) rows.
 *
 * Entry points: rlt_cost_model_create / _destroy, _fit (from scratch, with
 * early stopping on a training-set metric and the best round kept),
 * _predict, _is_trained, and _save / _load (an "rltune-cost-model v1"
 * header in front of XGBoost's JSON model). docs/cost_model.md explains the
 * parameters (AutoTVM's XGB tuner's), the stopping metric and determinism.
 *
 * Every XGBoost call is checked; its message (XGBGetLastError) goes into
 * the diagnostics. XGBoost handles never outlive the function that made
 * them unless they are handed to the model.
 */
#include "search/cost_model.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xgboost/c_api.h>

#define COST_MODEL_MAGIC "rltune-cost-model v"
#define COST_MODEL_VERSION 1

/* Upper bounds on options: far above anything useful, low enough that a
 * garbled saved file cannot make fit run for hours. */
#define MAX_DEPTH_LIMIT 20
#define MAX_ROUNDS_LIMIT 100000

struct rlt_cost_model {
    rlt_cost_model_opts opts; /* defaults resolved: no zero fields left */
    int n_features;
    BoosterHandle booster; /* owned (XGBoosterFree); NULL while untrained */
};

/* ---- helpers ------------------------------------------------------------ */

static rlt_status xgb_fail(rlt_diag *diag, rlt_status status, const char *what)
{
    const char *msg = XGBGetLastError();
    return rlt_fail(diag, status, "xgboost: %s: %s", what, msg && *msg ? msg : "(no message)");
}

const char *const rlt_cost_loss_names[] = {[RLT_COST_RANK] = "rank",
                                           [RLT_COST_REG] = "reg",
                                           [RLT_COST_REG_WEIGHTED] = "reg-weighted",
                                           [RLT_COST_REG_WEIGHTED + 1] = NULL};
#define N_LOSSES (RLT_ARRAY_LEN(rlt_cost_loss_names) - 1)

const char *rlt_cost_loss_name(rlt_cost_loss loss)
{
    RLT_ASSERT((unsigned)loss < N_LOSSES);
    return rlt_cost_loss_names[loss];
}

bool rlt_cost_loss_parse(const char *name, rlt_cost_loss *out)
{
    for (size_t i = 0; i < N_LOSSES; i++)
        if (strcmp(name, rlt_cost_loss_names[i]) == 0) {
            *out = (rlt_cost_loss)i;
            return true;
        }
    return false;
}

static const char *loss_objective(rlt_cost_loss loss)
{
    return loss == RLT_COST_RANK ? "rank:pairwise" : "reg:squarederror";
}

/* Fills zero fields with AutoTVM's values and checks the rest. */
static rlt_status opts_resolve(const rlt_cost_model_opts *in, rlt_cost_model_opts *out, rlt_diag *diag)
{
    rlt_cost_model_opts o = {0};
    if (in) o = *in;
    if ((unsigned)o.loss >= N_LOSSES)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "cost model: unknown loss %d (accepted: RLT_COST_RANK, RLT_COST_REG, RLT_COST_REG_WEIGHTED)",
                        (int)o.loss);
    if (o.max_depth == 0) o.max_depth = 3;
    if (o.eta == 0) o.eta = 0.3;
    if (o.min_child_weight == 0) o.min_child_weight = 1;
    if (o.gamma == 0) o.gamma = 0.0001;
    if (o.max_rounds == 0) o.max_rounds = 400;
    if (o.early_stopping == 0) o.early_stopping = 25;
    if (o.max_depth < 1 || o.max_depth > MAX_DEPTH_LIMIT)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "cost model: max_depth %d is outside 1..%d",
                        o.max_depth, MAX_DEPTH_LIMIT);
    if (!(o.eta > 0 && o.eta <= 1))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "cost model: eta %g is outside (0, 1]", o.eta);
    if (!(o.min_child_weight >= 0 && isfinite(o.min_child_weight)))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "cost model: min_child_weight %g must be finite and >= 0", o.min_child_weight);
    if (!(o.gamma >= 0 && isfinite(o.gamma)))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "cost model: gamma %g must be finite and >= 0",
                        o.gamma);
    if (o.max_rounds < 1 || o.max_rounds > MAX_ROUNDS_LIMIT)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "cost model: max_rounds %d is outside 1..%d",
                        o.max_rounds, MAX_ROUNDS_LIMIT);
    if (o.early_stopping < 1)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "cost model: early_stopping %d must be >= 1",
                        o.early_stopping);
    *out = o;
    return RLT_STATUS_OK;
}

/* Every value must be finite: NaN would be read as "missing" by XGBoost and
 * Inf breaks both objectives. */
static rlt_status check_features(int n, int n_features, const float *features, rlt_diag *diag)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n_features; j++) {
            float v = features[(size_t)i * (size_t)n_features + (size_t)j];
            if (!isfinite(v))
                return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                                "cost model: feature %d of row %d is %g: features must be finite", j, i,
                                (double)v);
        }
    return RLT_STATUS_OK;
}

/* Options every booster gets, trained or loaded: one thread and no console
 * output (XGBoost logs warnings to stderr at its default verbosity). */
static rlt_status booster_set_runtime_params(BoosterHandle b, rlt_diag *diag)
{
    if (XGBoosterSetParam(b, "nthread", "1") != 0) return xgb_fail(diag, RLT_STATUS_INTERNAL, "setting nthread");
    if (XGBoosterSetParam(b, "verbosity", "0") != 0)
        return xgb_fail(diag, RLT_STATUS_INTERNAL, "setting verbosity");
    return RLT_STATUS_OK;
}

static rlt_status booster_set_train_params(BoosterHandle b, const rlt_cost_model_opts *o, rlt_diag *diag)
{
    char depth[32], eta[64], mcw[64], gamma[64], seed[32];
    snprintf(depth, sizeof depth, "%d", o->max_depth);
    snprintf(eta, sizeof eta, "%.17g", o->eta);
    snprintf(mcw, sizeof mcw, "%.17g", o->min_child_weight);
    snprintf(gamma, sizeof gamma, "%.17g", o->gamma);
    /* XGBoost's seed is an int64: fold the top bit away rather than fail. */
    snprintf(seed, sizeof seed, "%" PRIu64, o->seed & (uint64_t)INT64_MAX);
    /* hist, not exact (AutoTVM's choice in effect: tree_method "auto" picks
     * exact below millions of rows). The tuner refits after every batch and
     * hist fits 1000 x 50 rows about 3x faster with the same held-out
     * ranking quality; features with at most 256 distinct values (loop
     * extents, knob indices) get a bin per value, i.e. exact's candidate
     * splits. Both are deterministic with one thread; docs/cost_model.md
     * has the numbers. Sampling stays off (subsample and colsample 1), so
     * the seed changes nothing today; it is passed for when it will. */
    const char *params[][2] = {
        {"booster", "gbtree"},
        {"tree_method", "hist"},
        {"objective", loss_objective(o->loss)},
        {"max_depth", depth},
        {"gamma", gamma},
        {"min_child_weight", mcw},
        {"subsample", "1"},
        {"colsample_bytree", "1"},
        {"eta", eta},
        {"lambda", "1"},
        {"alpha", "0"},
        {"seed", seed},
    };
    rlt_status st = booster_set_runtime_params(b, diag);
    if (st != RLT_STATUS_OK) return st;
    for (size_t i = 0; i < RLT_ARRAY_LEN(params); i++)
        if (XGBoosterSetParam(b, params[i][0], params[i][1]) != 0) {
            char what[96];
            snprintf(what, sizeof what, "setting %s=%s", params[i][0], params[i][1]);
            return xgb_fail(diag, RLT_STATUS_INTERNAL, what);
        }
    return RLT_STATUS_OK;
}

/* A prediction (type 0: the objective's output; for both objectives here
 * that is the raw margin) over all trees of `b`. The result lives in the
 * booster until its next call: callers copy it out. */
static rlt_status booster_predict(BoosterHandle b, DMatrixHandle d, int n, const float **out, rlt_diag *diag)
{
    static const char config[] =
        "{\"type\": 0, \"training\": false, \"iteration_begin\": 0, \"iteration_end\": 0, "
        "\"strict_shape\": false}";
    const bst_ulong *shape = NULL;
    bst_ulong dim = 0;
    if (XGBoosterPredictFromDMatrix(b, d, config, &shape, &dim, out) != 0)
        return xgb_fail(diag, RLT_STATUS_INTERNAL, "predicting");
    if (dim != 1 || shape[0] != (bst_ulong)n)
        return rlt_fail(diag, RLT_STATUS_INTERNAL,
                        "xgboost: prediction has %llu dimensions (first %llu), expected one of %d rows",
                        (unsigned long long)dim, dim ? (unsigned long long)shape[0] : 0ull, n);
    return RLT_STATUS_OK;
}

/* ---- the training-set metric for early stopping ------------------------- */

/* One row in predicted order: by prediction, best first. Ties go the
 * pessimistic way (the truly worse row first) so that a model earns recall
 * only for what it tells apart; a constant model scores 0. */
typedef struct ranked_row {
    float pred;
    float label;
    int row;
} ranked_row;

static int ranked_row_cmp(const void *pa, const void *pb)
{
    const ranked_row *a = pa, *b = pb;
    if (a->pred != b->pred) return a->pred > b->pred ? -1 : 1;
    if (a->label != b->label) return a->label < b->label ? -1 : 1;
    return (a->row > b->row) - (a->row < b->row);
}

static int label_desc_cmp(const void *pa, const void *pb)
{
    const ranked_row *a = pa, *b = pb;
    if (a->label != b->label) return a->label > b->label ? -1 : 1;
    return (a->row > b->row) - (a->row < b->row);
}

/* Scratch for the metric, sized for n rows, allocated once per fit. */
typedef struct metric_ctx {
    int n;
    int k;              /* recall depth: max(1, n / 8) */
    const float *labels;
    int *true_rank;     /* 1 + rows with a strictly higher label (ties share) */
    int *rank_count;    /* [k + 2]: predicted-so-far rows per true rank */
    ranked_row *order;  /* [n] */
    const float *weights; /* [n] row weights of the regression, NULL: all 1 */
} metric_ctx;

/* AutoTVM's "a-recall@k": the mean over i = 1..k of recall@i, the share of
 * the predicted top-i rows that are among the true top-i (a row tied with
 * the i-th best label counts as in the true top-i). Higher is better, 1 at
 * most. O(n log n) for the sort, O(k) for the curve. */
static double metric_recall_curve(metric_ctx *c, const float *preds)
{
    for (int i = 0; i < c->n; i++) c->order[i] = (ranked_row){preds[i], c->labels[i], i};
    qsort(c->order, (size_t)c->n, sizeof c->order[0], ranked_row_cmp);
    memset(c->rank_count, 0, (size_t)(c->k + 2) * sizeof c->rank_count[0]);
    long hits = 0; /* predicted top-i rows whose true rank <= i */
    double sum = 0;
    for (int i = 1; i <= c->k; i++) {
        int r = c->true_rank[c->order[i - 1].row];
        /* rows taken earlier with true rank exactly i now count */
        hits += c->rank_count[i];
        if (r <= i)
            hits++;
        else if (r <= c->k)
            c->rank_count[r]++;
        sum += (double)hits / i;
    }
    return sum / c->k;
}

/* The root of the (row-weighted) mean squared error: the objective's own
 * measure. */
static double metric_rmse(const metric_ctx *c, const float *preds)
{
    double sum = 0, weight = 0;
    for (int i = 0; i < c->n; i++) {
        double e = (double)preds[i] - (double)c->labels[i], w = c->weights ? c->weights[i] : 1.0;
        sum += w * e * e;
        weight += w;
    }
    return sqrt(sum / weight);
}

/* ---- create / destroy --------------------------------------------------- */

rlt_status rlt_cost_model_create(const rlt_cost_model_opts *opts, int n_features, rlt_cost_model **out,
                                 rlt_diag *diag)
{
    RLT_ASSERT(out);
    *out = NULL;
    rlt_cost_model_opts o;
    rlt_status st = opts_resolve(opts, &o, diag);
    if (st != RLT_STATUS_OK) return st;
    if (n_features <= 0)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "cost model: n_features must be >= 1, got %d",
                        n_features);
    rlt_cost_model *m = rlt_calloc(1, sizeof *m);
    if (!m) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "cost model: out of memory");
    m->opts = o;
    m->n_features = n_features;
    *out = m;
    return RLT_STATUS_OK;
}

void rlt_cost_model_destroy(rlt_cost_model *m)
{
    if (!m) return;
    if (m->booster) XGBoosterFree(m->booster);
    rlt_free(m);
}

bool rlt_cost_model_is_trained(const rlt_cost_model *m) { return m && m->booster; }

int rlt_cost_model_n_features(const rlt_cost_model *m) { return m->n_features; }

/* ---- fit ---------------------------------------------------------------- */

rlt_status rlt_cost_model_fit(rlt_cost_model *m, int n, const float *features, const double *scores,
                              rlt_diag *diag)
{
    RLT_ASSERT(m);
    rlt_status st = RLT_STATUS_OK;
    float *labels = NULL;
    metric_ctx mc = {0};
    float *weights = NULL;
    DMatrixHandle dtrain = NULL;
    BoosterHandle b = NULL;

    if (n < 0) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "cost model: fit with %d rows", n);
        goto cleanup;
    }
    if (n > 0 && (!features || !scores)) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "cost model: fit with %d rows but no %s", n,
                      !features ? "features" : "scores");
        goto cleanup;
    }
    for (int i = 0; i < n; i++)
        if (!isfinite(scores[i]) || fabs(scores[i]) > FLT_MAX) {
            st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                          "cost model: score of row %d is %g: scores must be finite floats "
                          "(a failed measurement scores 0)",
                          i, scores[i]);
            goto cleanup;
        }
    st = check_features(n, m->n_features, features, diag);
    if (st != RLT_STATUS_OK) goto cleanup;

    if (n < 2) {
        /* Nothing to learn from: "from scratch" means the old model goes. */
        if (m->booster) XGBoosterFree(m->booster);
        m->booster = NULL;
        goto cleanup;
    }

    /* Labels are the scores as given. rank:pairwise in XGBoost 1.7 only
     * compares labels (pairs are drawn across distinct label values), so
     * real-valued, unscaled scores are valid relevance; reg:squarederror
     * regresses them directly. */
    labels = rlt_malloc((size_t)n * sizeof *labels);
    mc.n = n;
    mc.k = RLT_MAX(1, n / 8);
    mc.labels = labels;
    mc.true_rank = rlt_malloc((size_t)n * sizeof *mc.true_rank);
    mc.rank_count = rlt_malloc((size_t)(mc.k + 2) * sizeof *mc.rank_count);
    mc.order = rlt_malloc((size_t)n * sizeof *mc.order);
    if (!labels || !mc.true_rank || !mc.rank_count || !mc.order) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "cost model: out of memory for %d rows", n);
        goto cleanup;
    }
    for (int i = 0; i < n; i++) labels[i] = (float)scores[i];
    for (int i = 0; i < n; i++) mc.order[i] = (ranked_row){0, labels[i], i};
    qsort(mc.order, (size_t)n, sizeof mc.order[0], label_desc_cmp);
    for (int i = 0; i < n; i++)
        mc.true_rank[mc.order[i].row] =
            (i > 0 && mc.order[i].label == mc.order[i - 1].label) ? mc.true_rank[mc.order[i - 1].row] : i + 1;

    /* missing = NaN: no value is missing, all were checked finite */
    if (XGDMatrixCreateFromMat(features, (bst_ulong)n, (bst_ulong)m->n_features, NAN, &dtrain) != 0) {
        st = xgb_fail(diag, RLT_STATUS_INTERNAL, "creating the training matrix");
        goto cleanup;
    }
    if (XGDMatrixSetFloatInfo(dtrain, "label", labels, (bst_ulong)n) != 0) {
        st = xgb_fail(diag, RLT_STATUS_INTERNAL, "setting labels");
        goto cleanup;
    }
    if (m->opts.loss == RLT_COST_REG_WEIGHTED) {
        /* Ansor's weights, the score itself, scaled to a mean of 1 so that
         * min_child_weight (a sum of weights in a leaf) keeps its meaning;
         * a row scored 0 (failed) weighs nothing. All scores 0 or negative:
         * nothing to prefer, equal weights. */
        double sum = 0;
        for (int i = 0; i < n; i++) sum += fmax(labels[i], 0.0);
        weights = rlt_malloc((size_t)n * sizeof *weights);
        if (!weights) {
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "cost model: out of memory for %d rows", n);
            goto cleanup;
        }
        for (int i = 0; i < n; i++) weights[i] = sum > 0 ? (float)(fmax(labels[i], 0.0) * n / sum) : 1.0f;
        if (XGDMatrixSetFloatInfo(dtrain, "weight", weights, (bst_ulong)n) != 0) {
            st = xgb_fail(diag, RLT_STATUS_INTERNAL, "setting row weights");
            goto cleanup;
        }
        mc.weights = weights;
    }
    if (m->opts.loss == RLT_COST_RANK) {
        unsigned group = (unsigned)n; /* one query: every row is ranked against every other */
        if (XGDMatrixSetUIntInfo(dtrain, "group", &group, 1) != 0) {
            st = xgb_fail(diag, RLT_STATUS_INTERNAL, "setting the group");
            goto cleanup;
        }
    }
    if (XGBoosterCreate(&dtrain, 1, &b) != 0) {
        st = xgb_fail(diag, RLT_STATUS_INTERNAL, "creating the booster");
        goto cleanup;
    }
    st = booster_set_train_params(b, &m->opts, diag);
    if (st != RLT_STATUS_OK) goto cleanup;

    /* Boost until the training metric has not improved for early_stopping
     * rounds. Predicting on the training matrix is incremental: XGBoost
     * caches its predictions and adds only the newest tree. */
    bool is_rank = m->opts.loss == RLT_COST_RANK;
    double best = is_rank ? -1.0 : INFINITY;
    /* Once the trees fit noise, rmse can go on shrinking by rounding-sized
     * steps: a gain counts when it is over 1e-6 of the labels' scale. */
    double scale = 0;
    for (int i = 0; i < n; i++) scale = RLT_MAX(scale, fabs((double)labels[i]));
    double rmse_tol = 1e-6 * (scale > 0 ? scale : 1.0);
    int best_rounds = 0;
    for (int iter = 0; iter < m->opts.max_rounds; iter++) {
        if (XGBoosterUpdateOneIter(b, iter, dtrain) != 0) {
            st = xgb_fail(diag, RLT_STATUS_INTERNAL, "boosting");
            goto cleanup;
        }
        const float *preds = NULL;
        st = booster_predict(b, dtrain, n, &preds, diag);
        if (st != RLT_STATUS_OK) goto cleanup;
        if (is_rank) {
            double v = metric_recall_curve(&mc, preds);
            if (v > best) best = v, best_rounds = iter + 1;
        } else {
            double v = metric_rmse(&mc, preds);
            if (v < best - rmse_tol) best = v, best_rounds = iter + 1;
        }
        if (iter + 1 - best_rounds >= m->opts.early_stopping) break;
    }
    if (best_rounds == 0) {
        /* only a NaN or infinite metric never improves on the start */
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "cost model: the training %s was never finite: are the scores within float range?",
                      is_rank ? "recall" : "rmse");
        goto cleanup;
    }
    int n_rounds = 0;
    if (XGBoosterBoostedRounds(b, &n_rounds) != 0) {
        st = xgb_fail(diag, RLT_STATUS_INTERNAL, "counting rounds");
        goto cleanup;
    }
    if (best_rounds < n_rounds) {
        /* Keep the best round: the saved model then is exactly the one that
         * predicts, with no iteration limit to carry along. */
        BoosterHandle sliced = NULL;
        if (XGBoosterSlice(b, 0, best_rounds, 1, &sliced) != 0) {
            st = xgb_fail(diag, RLT_STATUS_INTERNAL, "keeping the best round");
            goto cleanup;
        }
        XGBoosterFree(b);
        b = sliced;
        st = booster_set_runtime_params(b, diag);
        if (st != RLT_STATUS_OK) goto cleanup;
    }
    if (m->booster) XGBoosterFree(m->booster);
    m->booster = b;
    b = NULL;

cleanup:
    if (b) XGBoosterFree(b);
    if (dtrain) XGDMatrixFree(dtrain);
    rlt_free(mc.order);
    rlt_free(mc.rank_count);
    rlt_free(mc.true_rank);
    rlt_free(weights);
    rlt_free(labels);
    return st;
}

/* ---- predict ------------------------------------------------------------ */

rlt_status rlt_cost_model_predict(const rlt_cost_model *m, int n, const float *features, double *out_scores,
                                  rlt_diag *diag)
{
    RLT_ASSERT(m);
    rlt_status st = RLT_STATUS_OK;
    DMatrixHandle d = NULL;

    if (n < 0) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "cost model: predict for %d rows", n);
        goto cleanup;
    }
    if (n > 0 && (!features || !out_scores)) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "cost model: predict for %d rows but no %s", n,
                      !features ? "features" : "output array");
        goto cleanup;
    }
    st = check_features(n, m->n_features, features, diag);
    if (st != RLT_STATUS_OK || n == 0) goto cleanup;
    if (!m->booster) {
        for (int i = 0; i < n; i++) out_scores[i] = 0;
        goto cleanup;
    }
    if (XGDMatrixCreateFromMat(features, (bst_ulong)n, (bst_ulong)m->n_features, NAN, &d) != 0) {
        st = xgb_fail(diag, RLT_STATUS_INTERNAL, "creating the prediction matrix");
        goto cleanup;
    }
    const float *preds = NULL;
    st = booster_predict(m->booster, d, n, &preds, diag);
    if (st != RLT_STATUS_OK) goto cleanup;
    for (int i = 0; i < n; i++) out_scores[i] = preds[i];

cleanup:
    if (d) XGDMatrixFree(d);
    return st;
}

/* ---- save / load -------------------------------------------------------- */

/* The header: one "key value" a line, in this order, then the XGBoost JSON
 * model of exactly model_bytes bytes (0 for an untrained model). */
rlt_status rlt_cost_model_save(const rlt_cost_model *m, char **out_bytes, size_t *out_len, rlt_diag *diag)
{
    RLT_ASSERT(m && out_bytes && out_len);
    *out_bytes = NULL;
    *out_len = 0;
    rlt_status st = RLT_STATUS_OK;
    rlt_str s;
    rlt_str_init(&s);
    const char *json = NULL;
    bst_ulong json_len = 0;
    if (m->booster && XGBoosterSaveModelToBuffer(m->booster, "{\"format\": \"json\"}", &json_len, &json) != 0) {
        st = xgb_fail(diag, RLT_STATUS_INTERNAL, "saving the model");
        goto cleanup;
    }
    const rlt_cost_model_opts *o = &m->opts;
    rlt_str_printf(&s, "%s%d\n", COST_MODEL_MAGIC, COST_MODEL_VERSION);
    rlt_str_printf(&s, "loss %s\n", rlt_cost_loss_name(o->loss));
    rlt_str_printf(&s, "n_features %d\n", m->n_features);
    rlt_str_printf(&s, "max_depth %d\n", o->max_depth);
    rlt_str_printf(&s, "eta %.17g\n", o->eta);
    rlt_str_printf(&s, "min_child_weight %.17g\n", o->min_child_weight);
    rlt_str_printf(&s, "gamma %.17g\n", o->gamma);
    rlt_str_printf(&s, "max_rounds %d\n", o->max_rounds);
    rlt_str_printf(&s, "early_stopping %d\n", o->early_stopping);
    rlt_str_printf(&s, "seed %" PRIu64 "\n", o->seed);
    rlt_str_printf(&s, "model_bytes %llu\n", (unsigned long long)json_len);
    if (json_len) rlt_str_appendn(&s, json, (size_t)json_len);
    if (s.has_failed) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "cost model: out of memory saving the model");
        goto cleanup;
    }
    *out_len = s.len;
    *out_bytes = rlt_str_take(&s);

cleanup:
    rlt_str_free(&s);
    return st;
}

/* A cursor over the saved bytes, which need not be NUL-terminated. */
typedef struct reader {
    const char *p;
    const char *end;
    int line;
} reader;

/* Reads the next header line "<key> <value>\n" into `value` (NUL-terminated),
 * checking the key. */
static rlt_status read_field(reader *r, const char *key, char *value, size_t value_cap, rlt_diag *diag)
{
    r->line++;
    const char *nl = memchr(r->p, '\n', (size_t)(r->end - r->p));
    size_t key_len = strlen(key);
    if (!nl)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "cost model: line %d: missing '%s' line", r->line, key);
    size_t line_len = (size_t)(nl - r->p);
    if (line_len <= key_len + 1 || memcmp(r->p, key, key_len) != 0 || r->p[key_len] != ' ')
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "cost model: line %d: expected '%s <value>', got '%.*s'",
                        r->line, key, (int)RLT_MIN(line_len, 80), r->p);
    size_t value_len = line_len - key_len - 1;
    if (value_len >= value_cap)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "cost model: line %d: value of '%s' is too long",
                        r->line, key);
    memcpy(value, r->p + key_len + 1, value_len);
    value[value_len] = '\0';
    r->p = nl + 1;
    return RLT_STATUS_OK;
}

static rlt_status read_int(reader *r, const char *key, int64_t lo, int64_t hi, int64_t *out, rlt_diag *diag)
{
    char v[64];
    rlt_status st = read_field(r, key, v, sizeof v, diag);
    if (st != RLT_STATUS_OK) return st;
    if (!rlt_parse_i64(v, out) || *out < lo || *out > hi)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                        "cost model: line %d: %s '%s' is not an integer in %" PRId64 "..%" PRId64, r->line, key,
                        v, lo, hi);
    return RLT_STATUS_OK;
}

static rlt_status read_double(reader *r, const char *key, double *out, rlt_diag *diag)
{
    char v[64];
    rlt_status st = read_field(r, key, v, sizeof v, diag);
    if (st != RLT_STATUS_OK) return st;
    char *end = NULL;
    *out = strtod(v, &end);
    if (end == v || *end != '\0' || !isfinite(*out))
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "cost model: line %d: %s '%s' is not a finite number",
                        r->line, key, v);
    return RLT_STATUS_OK;
}

/* Reads the XGBoost JSON model after the header into a booster and checks
 * that it is the model the header describes. */
static rlt_status load_booster(const char *json, size_t len, rlt_cost_loss loss, int64_t n_features,
                               BoosterHandle *out, rlt_diag *diag)
{
    rlt_status st = RLT_STATUS_OK;
    BoosterHandle b = NULL;
    *out = NULL;
    if (json[0] != '{') {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "cost model: the model after the header is not XGBoost JSON");
        goto cleanup;
    }
    if (XGBoosterCreate(NULL, 0, &b) != 0) {
        st = xgb_fail(diag, RLT_STATUS_INTERNAL, "creating the booster");
        goto cleanup;
    }
    /* quiet before loading: loading can warn about old formats */
    st = booster_set_runtime_params(b, diag);
    if (st != RLT_STATUS_OK) goto cleanup;
    if (XGBoosterLoadModelFromBuffer(b, json, (bst_ulong)len) != 0) {
        st = xgb_fail(diag, RLT_STATUS_PARSE_ERROR, "loading the model");
        goto cleanup;
    }
    bst_ulong booster_features = 0;
    if (XGBoosterGetNumFeature(b, &booster_features) != 0) {
        st = xgb_fail(diag, RLT_STATUS_PARSE_ERROR, "reading the model's feature count");
        goto cleanup;
    }
    if (booster_features != (bst_ulong)n_features) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                      "cost model: header says n_features %" PRId64 " but the XGBoost model has %llu", n_features,
                      (unsigned long long)booster_features);
        goto cleanup;
    }
    /* The objective decides what the predictions mean: it must be the
     * header's. XGBoost's configuration holds "objective":{"name":"..."}. */
    char want[64];
    snprintf(want, sizeof want, "\"name\":\"%s\"", loss_objective(loss));
    bst_ulong config_len = 0;
    const char *config = NULL;
    if (XGBoosterSaveJsonConfig(b, &config_len, &config) != 0) {
        st = xgb_fail(diag, RLT_STATUS_PARSE_ERROR, "reading the model's configuration");
        goto cleanup;
    }
    const char *obj = strstr(config, "\"objective\":");
    if (!obj || !strstr(obj, want)) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                      "cost model: header says loss %s but the XGBoost model's objective is not %s",
                      rlt_cost_loss_name(loss), loss_objective(loss));
        goto cleanup;
    }
    *out = b;
    b = NULL;

cleanup:
    if (b) XGBoosterFree(b);
    return st;
}

rlt_status rlt_cost_model_load(const char *bytes, size_t len, rlt_cost_model **out, rlt_diag *diag)
{
    RLT_ASSERT(out);
    *out = NULL;
    rlt_status st = RLT_STATUS_OK;
    rlt_cost_model *m = NULL;
    if (!bytes) len = 0;
    reader r = {bytes, bytes + len, 1};

    /* magic and version first, so that a future version gets its own
     * message rather than a complaint about some later line */
    size_t magic_len = strlen(COST_MODEL_MAGIC);
    const char *nl = len ? memchr(bytes, '\n', len) : NULL;
    if (!nl || (size_t)(nl - bytes) < magic_len || memcmp(bytes, COST_MODEL_MAGIC, magic_len) != 0) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                      "cost model: not an rltune cost model (expected '%s%d' on the first line)", COST_MODEL_MAGIC,
                      COST_MODEL_VERSION);
        goto cleanup;
    }
    char version[32];
    size_t version_len = (size_t)(nl - bytes) - magic_len;
    snprintf(version, sizeof version, "%.*s", (int)RLT_MIN(version_len, sizeof version - 1), bytes + magic_len);
    int64_t v = 0;
    if (version_len >= sizeof version || !rlt_parse_i64(version, &v) || v != COST_MODEL_VERSION) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "cost model: unsupported version 'v%s' (this build reads v%d)",
                      version, COST_MODEL_VERSION);
        goto cleanup;
    }
    r.p = nl + 1;

    char loss[16];
    st = read_field(&r, "loss", loss, sizeof loss, diag);
    if (st != RLT_STATUS_OK) goto cleanup;
    rlt_cost_model_opts o = {0};
    if (!rlt_cost_loss_parse(loss, &o.loss)) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                      "cost model: line %d: unknown loss '%s' (rank, reg or reg-weighted)", r.line, loss);
        goto cleanup;
    }
    int64_t n_features = 0, max_depth = 0, max_rounds = 0, early_stopping = 0, model_bytes = 0;
    char seed[32];
    if ((st = read_int(&r, "n_features", 1, INT32_MAX, &n_features, diag)) != RLT_STATUS_OK ||
        (st = read_int(&r, "max_depth", 1, MAX_DEPTH_LIMIT, &max_depth, diag)) != RLT_STATUS_OK ||
        (st = read_double(&r, "eta", &o.eta, diag)) != RLT_STATUS_OK ||
        (st = read_double(&r, "min_child_weight", &o.min_child_weight, diag)) != RLT_STATUS_OK ||
        (st = read_double(&r, "gamma", &o.gamma, diag)) != RLT_STATUS_OK ||
        (st = read_int(&r, "max_rounds", 1, MAX_ROUNDS_LIMIT, &max_rounds, diag)) != RLT_STATUS_OK ||
        (st = read_int(&r, "early_stopping", 1, INT32_MAX, &early_stopping, diag)) != RLT_STATUS_OK ||
        (st = read_field(&r, "seed", seed, sizeof seed, diag)) != RLT_STATUS_OK)
        goto cleanup;
    char *seed_end = NULL;
    errno = 0;
    o.seed = strtoull(seed, &seed_end, 10);
    if (seed[0] < '0' || seed[0] > '9' || *seed_end != '\0' || errno == ERANGE) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "cost model: line %d: seed '%s' is not a 64-bit unsigned integer",
                      r.line, seed);
        goto cleanup;
    }
    if ((st = read_int(&r, "model_bytes", 0, INT64_MAX, &model_bytes, diag)) != RLT_STATUS_OK) goto cleanup;
    size_t rest = (size_t)(r.end - r.p);
    if ((uint64_t)model_bytes != rest) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                      "cost model: header says model_bytes %" PRId64 " but %zu bytes follow it", model_bytes, rest);
        goto cleanup;
    }
    o.max_depth = (int)max_depth;
    o.max_rounds = (int)max_rounds;
    o.early_stopping = (int)early_stopping;
    /* the saved options go through the same checks as a caller's */
    st = rlt_cost_model_create(&o, (int)n_features, &m, diag);
    if (st != RLT_STATUS_OK) {
        /* a value out of range in a file is a parse error of that file */
        rlt_diag_prefix(diag, "saved options");
        if (diag && st == RLT_STATUS_INVALID_ARGUMENT) diag->status = RLT_STATUS_PARSE_ERROR;
        st = st == RLT_STATUS_INVALID_ARGUMENT ? RLT_STATUS_PARSE_ERROR : st;
        goto cleanup;
    }
    if (model_bytes > 0) { /* 0: saved untrained */
        st = load_booster(r.p, rest, o.loss, n_features, &m->booster, diag);
        if (st != RLT_STATUS_OK) goto cleanup;
    }
    *out = m;
    m = NULL;

cleanup:
    rlt_cost_model_destroy(m);
    return st;
}
