/*
 * ga_dqn.h - what the "ga-dqn" tuner (ga_dqn.c) offers beyond the tuner
 * interface: a look at its two agents, for tests and inspection. The tuner
 * itself is created through rlt_tuner_create("ga-dqn", ...)
 * (search/tuner.h); docs/tuners.md describes it.
 */
#ifndef RLT_GA_DQN_H
#define RLT_GA_DQN_H

#include "search/tuner.h"

/* What the agents chose for the children whose scores came in: by whether
 * the mutation DQN chose greedily or explored (epsilon), the children,
 * their rewards summed, new bests and "no mutation" choices; and how often
 * each greedy crossover point (point - 1) and greedy mutation (0: none,
 * k + 1: knob k) was chosen. */
enum { RLT_GA_DQN_GREEDY, RLT_GA_DQN_EXPLORED };
typedef struct rlt_ga_dqn_choices {
    int64_t n[2], n_new_best[2], n_no_mutation[2];
    double reward_sum[2];
    int64_t greedy_points[RLT_SPACE_MAX_KNOBS];
    int64_t greedy_knobs[RLT_SPACE_MAX_KNOBS + 1];
} rlt_ga_dqn_choices;

/* The agents' counters and learning progress. */
typedef struct rlt_ga_dqn_stats {
    int64_t n_transitions;     /* children bred by the agents whose score came in: one
                                  transition for each DQN */
    int64_t n_learn_steps;     /* minibatch steps, each DQN one per transition past learn_start */
    int64_t n_random_children; /* children the agents found nothing new for: drawn at random */
    double epsilon;            /* the exploration rate now (both DQNs share it) */
    double best_score;         /* the best score reported so far: the reward's scale */
    double crossover_loss;     /* TD loss (Huber) of the learning steps, a moving average */
    double mutation_loss;      /* (weight 0.05 on the newest); 0 before the first */
    rlt_ga_dqn_choices choices;
} rlt_ga_dqn_stats;

/* Fills *out. `t` is borrowed and not changed. Errors: INVALID_ARGUMENT
 * when t is not a ga-dqn tuner. */
rlt_status rlt_tuner_ga_dqn_stats(const rlt_tuner *t, rlt_ga_dqn_stats *out, rlt_diag *diag);

/* The crossover DQN's action values (its Q network's outputs, no
 * exploration) for parents p1 and p2: out_q[p - 1] for crossover point p,
 * 1 <= p <= max(1, n_knobs - 1), where the child takes knobs 0 .. p-1 from
 * p1 and the rest from p2. Its greedy choice is the largest. `t` is
 * borrowed and not changed. Errors: INVALID_ARGUMENT when t is not a
 * ga-dqn tuner; OUT_OF_MEMORY. */
rlt_status rlt_tuner_ga_dqn_point_values(const rlt_tuner *t, const rlt_config *p1, const rlt_config *p2,
                                         float *out_q, rlt_diag *diag);

/* The mutation DQN's action values for the crossed child c (as the child
 * of two parents equal to it): out_q[0] for no mutation, out_q[k + 1] for
 * mutating knob k (n_knobs + 1 values); -INFINITY for an action the agent
 * may not take (a knob with no other valid value; no mutation when c was
 * visited or is not valid).
 * Errors as rlt_tuner_ga_dqn_point_values. */
rlt_status rlt_tuner_ga_dqn_knob_values(const rlt_tuner *t, const rlt_config *c, float *out_q, rlt_diag *diag);

#endif /* RLT_GA_DQN_H */
