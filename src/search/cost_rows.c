/*
 * cost_rows.c - the training rows of the model-based tuners (xgb, xgb-rank,
 * ppo) and predictions for configurations: what xgb_tuner.c and ppo.c share
 * around the cost model. Contracts in cost_rows.h.
 */
#include "search/cost_rows.h"

#include <math.h>
#include <string.h>

void rlt_cost_rows_free(rlt_cost_rows *r)
{
    rlt_free(r->xs);
    rlt_free(r->ys);
    *r = (rlt_cost_rows){.n_features = r->n_features};
}

/* Room for `more` rows. */
static rlt_status reserve_rows(rlt_cost_rows *r, int more, rlt_diag *diag)
{
    if (r->n + more <= r->cap) return RLT_STATUS_OK;
    int cap = r->cap ? r->cap : 256;
    while (cap < r->n + more) cap *= 2;
    float *xs = rlt_realloc(r->xs, sizeof *xs * (size_t)cap * (size_t)r->n_features);
    if (xs) r->xs = xs;
    double *ys = rlt_realloc(r->ys, sizeof *ys * (size_t)cap);
    if (ys) r->ys = ys;
    if (!xs || !ys) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory keeping training data");
    r->cap = cap;
    return RLT_STATUS_OK;
}

rlt_status rlt_cost_rows_add_transfer(rlt_cost_rows *r, int n, const float *xs, const double *ys, rlt_diag *diag)
{
    RLT_ASSERT(r->n == r->n_transfer);
    if (n <= 0) return RLT_STATUS_OK;
    rlt_status st = reserve_rows(r, n, diag);
    if (st != RLT_STATUS_OK) return st;
    memcpy(r->xs + (size_t)r->n * (size_t)r->n_features, xs, sizeof *r->xs * (size_t)n * (size_t)r->n_features);
    memcpy(r->ys + r->n, ys, sizeof *r->ys * (size_t)n);
    r->n += n;
    r->n_transfer = r->n;
    return RLT_STATUS_OK;
}

rlt_status rlt_cost_rows_add(rlt_cost_rows *r, const rlt_space *s, int n, const rlt_config *configs,
                             const double *scores, rlt_diag *diag)
{
    rlt_status st = reserve_rows(r, n, diag);
    if (st != RLT_STATUS_OK) return st;
    for (int i = 0; i < n; i++) {
        if (rlt_space_features(s, &configs[i], r->xs + (size_t)r->n * (size_t)r->n_features, NULL) !=
            RLT_STATUS_OK)
            continue;
        double y = isfinite(scores[i]) && scores[i] > 0 ? scores[i] : 0.0;
        r->ys[r->n++] = y;
        r->best_y = fmax(r->best_y, y);
    }
    return RLT_STATUS_OK;
}

rlt_status rlt_cost_rows_fit(const rlt_cost_rows *r, rlt_cost_model *m, rlt_diag *diag)
{
    RLT_ASSERT(r->n == r->n_transfer || r->best_y > 0);
    double *norm = rlt_malloc(sizeof *norm * (size_t)RLT_MAX(r->n, 1));
    if (!norm) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory fitting the cost model");
    for (int i = 0; i < r->n; i++) norm[i] = i < r->n_transfer ? r->ys[i] : r->ys[i] / r->best_y;
    rlt_status st = rlt_cost_model_fit(m, r->n, r->xs, norm, diag);
    rlt_free(norm);
    return st;
}

rlt_status rlt_cost_loss_choose(const char *tuner, const char *name, rlt_cost_loss def, rlt_cost_loss *out,
                                rlt_diag *diag)
{
    *out = def;
    if (name && !rlt_cost_loss_parse(name, out))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "%s tuner: unknown cost_loss '%s' (accepted: rank, reg, reg-weighted)", tuner, name);
    return RLT_STATUS_OK;
}

void rlt_cost_rows_predict(const rlt_cost_model *m, const rlt_space *s, int n, const rlt_config *configs,
                           float *scratch, double *out)
{
    size_t n_features = (size_t)rlt_space_n_features(s);
    for (int start = 0; start < n; start += RLT_COST_ROWS_CHUNK) {
        int chunk = RLT_MIN(RLT_COST_ROWS_CHUNK, n - start);
        bool is_valid[RLT_COST_ROWS_CHUNK];
        for (int i = 0; i < chunk; i++) {
            float *row = scratch + (size_t)i * n_features;
            is_valid[i] = rlt_space_features(s, &configs[start + i], row, NULL) == RLT_STATUS_OK;
            if (!is_valid[i]) memset(row, 0, sizeof(float) * n_features);
        }
        double *o = out + start;
        if (rlt_cost_model_predict(m, chunk, scratch, o, NULL) != RLT_STATUS_OK)
            for (int i = 0; i < chunk; i++) o[i] = 0;
        for (int i = 0; i < chunk; i++)
            if (!is_valid[i]) o[i] = -INFINITY;
    }
}
