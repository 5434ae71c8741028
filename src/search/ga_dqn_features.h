/*
 * ga_dqn_features.h - what ga-dqn's two DQNs see (ga_dqn_features.c;
 * internal to src/search).
 *
 * Published GA-DQN feeds each DQN the genes themselves (one input per knob)
 * and has one output per crossover point or knob, so an agent fits only
 * the knob layout it learned on. rltune's DQNs instead score one action at
 * a time from a row of features that mean the same on every space
 * (docs/tuners.md, "GA-DQN's state"): the knob's kind, how its value stands
 * in the run's history (the best and mean scores of the configurations
 * measured with that value and with the others), how earlier mutations of
 * the knob paid, whether the parents agree on it. One Q network of
 * RLT_GA_DQN_*_FEATURES inputs and one output then ranks the actions of any
 * space, and an agent trained on many workloads carries to any other.
 *
 * The history is the workload's own: it restarts with every run.
 */
#ifndef RLT_GA_DQN_FEATURES_H
#define RLT_GA_DQN_FEATURES_H

#include "search/tuner.h"

/* Features of one action, and the run-wide ones appended to every row. */
enum {
    GA_DQN_GLOBAL_FEATURES = 4,
    GA_DQN_MUTATION_FEATURES = 17 + GA_DQN_GLOBAL_FEATURES,
    GA_DQN_CROSSOVER_FEATURES = 16 + GA_DQN_GLOBAL_FEATURES
};

/* What the run has measured, by knob value, and how mutations paid. */
typedef struct ga_dqn_history {
    int64_t n_scored;                 /* configurations scored (failures too) */
    int64_t n_since_best;             /* scored since the best last rose */
    double best, sum;                 /* the best score and the scores' sum */
    rlt_config best_config;           /* valid when best > 0 */
    /* per knob k and choice v, at [k * RLT_SPACE_MAX_CHOICES + v] */
    int32_t value_count[RLT_SPACE_MAX_KNOBS * RLT_SPACE_MAX_CHOICES];
    float value_sum[RLT_SPACE_MAX_KNOBS * RLT_SPACE_MAX_CHOICES];
    float value_best[RLT_SPACE_MAX_KNOBS * RLT_SPACE_MAX_CHOICES];
    /* per knob: the agents' mutations of it whose children were scored */
    int32_t mutation_count[RLT_SPACE_MAX_KNOBS];
    double mutation_reward[RLT_SPACE_MAX_KNOBS];
} ga_dqn_history;

/* A scored configuration into the history (score cleaned: >= 0). */
void ga_dqn_history_add(ga_dqn_history *h, const rlt_space *s, const rlt_config *c, double score);

/* A scored child whose knob k the mutation DQN moved earned `reward`. */
void ga_dqn_history_add_mutation(ga_dqn_history *h, int k, double reward);

/* The choices of knob k other than c's that leave c valid, in order, into
 * out (RLT_SPACE_MAX_CHOICES); returns how many. */
int ga_dqn_other_valid_choices(const rlt_space *s, const rlt_config *c, int k, int16_t *out);

/* The crossover DQN's rows for parents p1, p2 (scores s1, s2): row p - 1
 * for crossover point p, 1 <= p <= n_points, GA_DQN_CROSSOVER_FEATURES
 * floats each, into out. */
void ga_dqn_crossover_rows(const rlt_tuner *t, const ga_dqn_history *h, const rlt_config *p1, const rlt_config *p2,
                           double s1, double s2, int n_points, float *out);

/* The mutation DQN's rows for the crossed child c of parents p1, p2 whose
 * scores averaged parent_mean: row 0 for no mutation, row k + 1 for knob k
 * (n_knobs + 1 rows of GA_DQN_MUTATION_FEATURES floats), into out; and
 * which actions may be taken (out_allowed, n_knobs + 1): a knob with no
 * other valid value may not be mutated, and "no mutation" may not be
 * chosen when c itself was visited or is not valid. */
void ga_dqn_mutation_rows(const rlt_tuner *t, const ga_dqn_history *h, const rlt_config *p1, const rlt_config *p2,
                          const rlt_config *c, double parent_mean, float *out, bool *out_allowed);

#endif /* RLT_GA_DQN_FEATURES_H */
