/*
 * tuner.h - the tuner interface (AutoTVM's next_batch / update) and the
 * tuners that need no model: random, grid and ga.
 *
 * A tuner proposes configurations of a space in batches and learns from the
 * measured scores (GFLOP/s, 0 for a failed measurement). It never proposes
 * a configuration twice, and proposes only valid ones (rlt_space_is_valid).
 * Every random choice comes from the tuner's own RNG, seeded at creation:
 * the same seed and the same scores give the same proposals.
 */
#ifndef RLT_TUNER_H
#define RLT_TUNER_H

#include "space/space.h"

typedef struct rlt_tuner rlt_tuner;

typedef struct rlt_tuner_opts {
    uint64_t seed;
    /* ga */
    int population;       /* 0 = min(64, |space|) */
    int elite;            /* 0 = 3 */
    double mutation_prob; /* 0 = 0.1 */
    /* xgb, xgb-rank (AutoTVM's XGBTuner defaults) */
    int plan_size;        /* configurations planned per model fit; 0 = 64 */
    int sa_chains;        /* simulated-annealing walkers; 0 = 128 */
    int sa_iterations;    /* at most; 0 = 500 (stops after 50 without a new top plan) */
    /* xgb, xgb-rank: a warm start from other workloads (search/transfer.h):
     * n_transfer rows of the space's feature length and their scores in
     * [0, 1]; copied at create. The model is trained on them before the
     * first proposal and on them plus the run's own measurements after. */
    int n_transfer;
    const float *transfer_xs;
    const double *transfer_ys;
} rlt_tuner_opts;

/* Names of the tuners rlt_tuner_create knows, NULL-terminated. */
const char *const *rlt_tuner_names(void);

/* Creates tuner `name` over `space` (borrowed; must outlive the tuner).
 * Unknown names are INVALID_ARGUMENT listing the known ones. */
rlt_status rlt_tuner_create(const char *name, const rlt_space *space, const rlt_tuner_opts *opts, rlt_tuner **out,
                            rlt_diag *diag);
void rlt_tuner_destroy(rlt_tuner *t); /* NULL ok */

/* Proposes up to `max` new valid configurations; returns how many (0 when
 * the tuner has nothing left to propose). */
int rlt_tuner_next_batch(rlt_tuner *t, int max, rlt_config *out);

/* Reports measured scores (higher is better; 0 for failures). Configs may
 * include ones the tuner did not propose (records read back on resume):
 * they count as visited. */
rlt_status rlt_tuner_update(rlt_tuner *t, int n, const rlt_config *configs, const double *scores, rlt_diag *diag);

const char *rlt_tuner_name(const rlt_tuner *t);

/* ---- for tuner implementations (the files of src/search) -------------- */

/* A set of configuration indices: what has been proposed or measured. */
typedef struct rlt_visited {
    uint64_t *slots; /* open addressing; UINT64_MAX = empty */
    size_t cap, n;
} rlt_visited;

bool rlt_visited_has(const rlt_visited *v, uint64_t index);
/* Adds index; false if it was there already (or out of memory). */
bool rlt_visited_add(rlt_visited *v, uint64_t index);
void rlt_visited_free(rlt_visited *v);

typedef struct rlt_tuner_ops {
    const char *name;
    rlt_status (*init)(rlt_tuner *t, rlt_diag *diag);
    int (*next_batch)(rlt_tuner *t, int max, rlt_config *out);
    rlt_status (*update)(rlt_tuner *t, int n, const rlt_config *configs, const double *scores, rlt_diag *diag);
    void (*fini)(rlt_tuner *t);
} rlt_tuner_ops;

/* The model-based tuners (xgb_tuner.c). */
extern const rlt_tuner_ops rlt_tuner_xgb_ops;
extern const rlt_tuner_ops rlt_tuner_xgb_rank_ops;

struct rlt_tuner {
    const rlt_tuner_ops *ops;
    const rlt_space *space;
    rlt_tuner_opts opts;
    rlt_rng rng;
    rlt_visited visited; /* proposed or reported */
    void *state;         /* the tuner's own, freed by fini */
};

/* Draws a random valid configuration not yet visited (up to `tries`
 * attempts); false when none was found. Marks it visited. */
bool rlt_tuner_draw_new(rlt_tuner *t, int tries, rlt_config *out);

#endif /* RLT_TUNER_H */
