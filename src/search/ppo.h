/*
 * ppo.h - what the "ppo" tuner (ppo.c, Chameleon's design) offers beyond
 * the tuner interface: its adaptive sampling on its own, and counters of
 * what it did, for tests and inspection. The tuner itself is created
 * through rlt_tuner_create("ppo", ...) (search/tuner.h); docs/tuners.md,
 * "ppo", describes it.
 */
#ifndef RLT_PPO_H
#define RLT_PPO_H

#include "search/cost_model.h"
#include "search/tuner.h"

/* Chameleon's adaptive sampling: n candidate configurations of s
 * (borrowed; the best first) are clustered by k-means on their knobs of
 * highest cardinality (every knob with at least half as many choices as
 * the knob with the most, and at least 2), each knob as its choice's
 * position in [0, 1]; k is chosen by the elbow rule (search/kmeans.h:
 * steps of 8 while the loss falls by 2.5x or more), at most k_max. One
 * configuration per cluster goes to out (room for k_max): the centroid's
 * knobs rounded to the nearest choice, the other knobs each the choice
 * most frequent among the cluster's members (the lowest on ties); when
 * that configuration is invalid, visited (in `visited`, may be NULL) or
 * already in out, the cluster's member nearest the centroid that is none of
 * these (the earlier candidate on ties), or nothing when no member is left.
 * *out_n gets how many were written, *out_k (may be NULL) the number of
 * clusters. The k-means draws come from rng. Errors: INVALID_ARGUMENT for
 * n < 1 or k_max < 1; OUT_OF_MEMORY. */
rlt_status rlt_ppo_adaptive_sample(const rlt_space *s, const rlt_visited *visited, int n, const rlt_config *candidates,
                                   int k_max, rlt_rng *rng, rlt_config *out, int *out_n, int *out_k, rlt_diag *diag);

/* What a ppo tuner has done so far. */
typedef struct rlt_ppo_stats {
    int64_t n_fits;         /* cost-model fits (transfer rows included) */
    int64_t n_explorations; /* walks of the walkers over a newly fitted model */
    int64_t n_episodes;     /* episodes begun (every walker at a random start) */
    int64_t n_steps;        /* walker steps (all walkers move at each) */
    int64_t n_ppo_updates;  /* PPO updates (one per segment of steps) */
    int64_t n_sampled;      /* proposals from adaptive sampling (one per cluster) */
    int64_t n_ranked;       /* proposals from the model's ranking of the candidates */
    int64_t n_random;       /* random proposals (no model yet, or nothing else left) */
    int last_steps;         /* steps of the last exploration */
    int last_candidates;    /* distinct new candidates it kept */
    int last_k;             /* clusters of its adaptive sampling */
    double last_entropy;    /* the policy's mean summed entropy over the knobs (nats) in its last update */
    rlt_cost_loss cost_loss; /* the cost model's loss (option cost_loss, or the default for the space) */
} rlt_ppo_stats;

/* Copies t's counters into *out. Errors: INVALID_ARGUMENT when t is not a
 * ppo tuner. */
rlt_status rlt_tuner_ppo_stats(const rlt_tuner *t, rlt_ppo_stats *out, rlt_diag *diag);

#endif /* RLT_PPO_H */
