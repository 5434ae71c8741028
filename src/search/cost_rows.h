/*
 * cost_rows.h - what the model-based tuners (xgb, xgb-rank: xgb_tuner.c;
 * ppo: ppo.c) share around the cost model (cost_model.h): the training rows
 * they keep, how those are normalised and fitted, and predictions for
 * configurations rather than feature rows.
 *
 * Rows are kept as AutoTVM's ModelBasedTuner keeps them: rows transferred
 * from other workloads (search/transfer.h) first, scored in [0, 1] by their
 * own workload's best; then the run's own rows with their raw scores
 * (GFLOP/s; failed measurements 0). A fit scores the own rows by the best
 * own score, so that both kinds are on one scale.
 */
#ifndef RLT_COST_ROWS_H
#define RLT_COST_ROWS_H

#include "search/cost_model.h"
#include "space/space.h"

/* Training rows. Zero-initialise, free with rlt_cost_rows_free. Every
 * array is owned. */
typedef struct rlt_cost_rows {
    int n_features; /* set before the first add */
    float *xs;      /* n x n_features: the transferred rows first */
    double *ys;     /* transferred rows: normalised scores; own rows: raw scores */
    int n, cap;
    int n_transfer; /* leading rows from other workloads */
    double best_y;  /* the best own score (0 while none is above 0) */
} rlt_cost_rows;

void rlt_cost_rows_free(rlt_cost_rows *r);

/* Appends n transferred rows (features n x n_features, scores in [0, 1]),
 * copied; only before any own row (asserted). Errors: OUT_OF_MEMORY. */
rlt_status rlt_cost_rows_add_transfer(rlt_cost_rows *r, int n, const float *xs, const double *ys, rlt_diag *diag);

/* Appends the measured configurations of space s with their scores. A score
 * that is not a finite number above 0 (a failure) is kept as 0. A
 * configuration that is not valid in s (a record read back from an older
 * space) has no features and is skipped. Errors: OUT_OF_MEMORY. */
rlt_status rlt_cost_rows_add(rlt_cost_rows *r, const rlt_space *s, int n, const rlt_config *configs,
                             const double *scores, rlt_diag *diag);

/* Fits m from scratch on every row: transferred rows as they are, own rows
 * divided by best_y (which must be above 0 when there are own rows;
 * asserted). Errors: OUT_OF_MEMORY, and those of rlt_cost_model_fit. */
rlt_status rlt_cost_rows_fit(const rlt_cost_rows *r, rlt_cost_model *m, rlt_diag *diag);

/* The loss a model tuner uses: `name` (the cost_loss option: "rank",
 * "reg", "reg-weighted") or, when it is NULL, the tuner's default. Errors:
 * INVALID_ARGUMENT for an unknown name, naming `tuner`. */
rlt_status rlt_cost_loss_choose(const char *tuner, const char *name, rlt_cost_loss def, rlt_cost_loss *out,
                                rlt_diag *diag);

/* Predicted scores of n configurations of s: out[i] = the model's score
 * (0 for all when the prediction fails), or -INFINITY for an invalid
 * configuration. `scratch` holds RLT_COST_ROWS_CHUNK x
 * rlt_space_n_features(s) floats; n may be any size (it is predicted in
 * chunks). Threads: m is only read. */
#define RLT_COST_ROWS_CHUNK 512
void rlt_cost_rows_predict(const rlt_cost_model *m, const rlt_space *s, int n, const rlt_config *configs,
                           float *scratch, double *out);

#endif /* RLT_COST_ROWS_H */
