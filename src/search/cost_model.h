/*
 * cost_model.h - the learned cost model the xgb tuner (and later the PPO
 * agent) explores instead of the hardware: gradient-boosted trees from
 * XGBoost's C API, trained on (features, measured score) pairs.
 *
 * Scores are "higher is better" (the tuners pass GFLOP/s, normalised by the
 * best seen; failed measurements score 0). With RLT_COST_RANK the model
 * learns an order (objective rank:pairwise, as AutoTVM's default); with
 * RLT_COST_REG it regresses the score (reg:squarederror); with
 * RLT_COST_REG_WEIGHTED it regresses the score with each row's squared error
 * weighted by the row's score (Ansor's cost model), so that the fast
 * configurations are fitted closely and the slow ones loosely.
 */
#ifndef RLT_COST_MODEL_H
#define RLT_COST_MODEL_H

#include "core/core.h"

typedef enum rlt_cost_loss {
    RLT_COST_RANK,        /* rank:pairwise */
    RLT_COST_REG,         /* reg:squarederror */
    RLT_COST_REG_WEIGHTED /* reg:squarederror, row weights = score / mean score */
} rlt_cost_loss;

/* The losses' names in saved models and tuner options, indexed by
 * rlt_cost_loss and NULL-terminated: "rank", "reg", "reg-weighted". */
extern const char *const rlt_cost_loss_names[];

/* The loss's name, and back; false for an unknown name. */
const char *rlt_cost_loss_name(rlt_cost_loss loss);
bool rlt_cost_loss_parse(const char *name, rlt_cost_loss *out);

typedef struct rlt_cost_model_opts {
    rlt_cost_loss loss;
    int max_depth;        /* 0 = 3 (AutoTVM) */
    double eta;           /* 0 = 0.3 */
    double min_child_weight; /* 0 = 1 */
    double gamma;         /* 0 = 0.0001 */
    int max_rounds;       /* boosting rounds at most; 0 = 400 */
    int early_stopping;   /* stop when the training metric has not improved for this many rounds; 0 = 25 */
    uint64_t seed;
} rlt_cost_model_opts;

typedef struct rlt_cost_model rlt_cost_model;

/* A model over `n_features` features per row. Deterministic for a seed
 * (XGBoost runs with one thread). */
rlt_status rlt_cost_model_create(const rlt_cost_model_opts *opts, int n_features, rlt_cost_model **out,
                                 rlt_diag *diag);
void rlt_cost_model_destroy(rlt_cost_model *m); /* NULL ok */

/* Trains from scratch on n rows (features row-major, n x n_features;
 * scores[i] for row i). n >= 2 is needed to learn anything; with fewer
 * rows the model stays untrained and predicts 0. */
rlt_status rlt_cost_model_fit(rlt_cost_model *m, int n, const float *features, const double *scores,
                              rlt_diag *diag);

/* Predicts scores for n rows (higher = better; comparable within one
 * model only). */
rlt_status rlt_cost_model_predict(const rlt_cost_model *m, int n, const float *features, double *out_scores,
                                  rlt_diag *diag);

bool rlt_cost_model_is_trained(const rlt_cost_model *m);

/* Features per row the model was made for: a loaded model fits a space
 * only when this equals rlt_space_n_features of that space. */
int rlt_cost_model_n_features(const rlt_cost_model *m);

/* Serialises the trained model (XGBoost's own JSON, behind a small rltune
 * header with a version) and reads it back: transfer between workloads and
 * agents' saved state. Free *out_bytes with rlt_free. */
rlt_status rlt_cost_model_save(const rlt_cost_model *m, char **out_bytes, size_t *out_len, rlt_diag *diag);
rlt_status rlt_cost_model_load(const char *bytes, size_t len, rlt_cost_model **out, rlt_diag *diag);

#endif /* RLT_COST_MODEL_H */
