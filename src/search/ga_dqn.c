/*
 * ga_dqn.c - the ga-dqn tuner (GA-DQN; docs/tuners.md): ga's generations,
 * elites and fitness-proportional parents (tuner.c's rlt_ga), where two
 * DQNs breed each child:
 *   - the crossover DQN sees both parents' genes and picks the crossover
 *     point p: the child takes knobs 0 .. p-1 from the first parent and the
 *     rest from the second;
 *   - the mutation DQN sees that child's gene and picks one knob to move to
 *     a random other valid choice, or none.
 * Each child the agents breed is one transition of each DQN; its reward is
 * computed when the child's score arrives in update() (reward(), below).
 * Each DQN learns from a replay buffer (uniform minibatches, Huber loss on
 * the TD error against a target network copied every target_every
 * transitions, Adam, gradient clipping) once learn_start transitions are
 * in, one minibatch step per transition, and explores epsilon-greedily with
 * epsilon decaying from 1 by a factor per learning step.
 *
 * Everything the agents learn is in ga_dqn_agent, so that it can be saved
 * and restored as one. Every random choice comes from the tuner's RNG, and
 * the networks' initial weights from seeds drawn from it.
 *
 * Entry points: rlt_tuner_ga_dqn_ops (rlt_tuner_create("ga-dqn")) and the
 * look at the agents in ga_dqn.h.
 */
#include "search/ga_dqn.h"
#include "nn/agent_file.h"
#include "search/default_ga_dqn_bytes.h"
#include "search/ga_dqn_features.h"

#include "nn/nn.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

/* The hyper-parameters, defaults resolved (rlt_tuner_opts' ga_dqn_*). */
typedef struct ga_dqn_params {
    double lr, gamma, eps_decay, eps_min, grad_clip, best_bonus;
    int replay, minibatch, learn_start, target_every;
} ga_dqn_params;

/* One DQN over rows of action features (ga_dqn_features.h): the Q network
 * scores one action's row; a state is the rows of all its n_actions
 * actions. Its target copy, Adam's state, the replay buffer (a ring of the
 * last `replay` transitions, grown as they come: the chosen action's row,
 * the reward, the next state's rows and which of its actions may be taken)
 * and minibatch scratch. n_actions belongs to the space, the networks to
 * any space. */
typedef struct dqn {
    int n_features, n_actions;
    rlt_mlp *q, *q_target;
    rlt_adam *adam;
    float *replay_rows;          /* [alloc x n_features] */
    float *replay_next;          /* [alloc x n_actions x n_features] */
    bool *replay_next_allowed;   /* [alloc x n_actions] */
    float *replay_rewards;       /* [alloc] */
    int n_replay, replay_head, replay_alloc;
    double loss_avg; /* moving average of the learning steps' TD loss */
    float *mb_rows, *mb_next, *mb_q, *mb_next_q, *mb_dq, *mb_targets;
    bool *mb_next_allowed;
} dqn;

/* All that the agents learn and count. */
typedef struct ga_dqn_agent {
    ga_dqn_params params;
    dqn crossover; /* rows: one per crossover point (action point - 1) */
    dqn mutation;  /* rows: no mutation (action 0), then one per knob (action k + 1) */
    double epsilon;
    int64_t n_transitions, n_learn_steps, n_random_children;
    double best_score; /* the best score reported so far */
    rlt_ga_dqn_choices choices; /* what the agents chose this run (not saved) */
} ga_dqn_agent;

/* A child the agents bred, waiting for its score. */
typedef struct ga_dqn_pending {
    bool is_open;
    rlt_config parents[2];
    rlt_config crossed; /* after crossover, before mutation */
    rlt_config child;
    int point_action, knob_action;
    bool is_point_greedy, is_knob_greedy;
    double parent_score[2]; /* failures 0 */
    float *point_row, *knob_row; /* the chosen actions' rows (in pending_rows) */
} ga_dqn_pending;

typedef struct ga_dqn_state {
    rlt_ga ga;
    ga_dqn_agent agent;
    ga_dqn_history history;
    ga_dqn_pending *pending; /* [ga.pop], by generation slot */
    float *pending_rows;     /* [ga.pop x (crossover + mutation features)] */
    float *rows, *next_rows; /* scratch: the rows of a state (the larger DQN's) */
    bool *allowed, *next_allowed; /* scratch: n_knobs + 1 */
    float *q_row;            /* scratch: n_knobs + 1 action values */
} ga_dqn_state;

#define LOSS_AVG_WEIGHT 0.05
#define HUBER_DELTA 1.0
#define MAX_ATTEMPTS 64

/* ---- options ------------------------------------------------------------- */

/* v if in range (0 = dflt), else an error naming the option: (0, max], or
 * (0, max) when is_max_open; max = INFINITY for any finite v > 0. */
static rlt_status opt_real(double v, double dflt, double max, bool is_max_open, const char *name, double *out,
                           rlt_diag *diag)
{
    if (v == 0) {
        *out = dflt;
        return RLT_STATUS_OK;
    }
    if (v > 0 && isfinite(v) && (is_max_open ? v < max : v <= max)) {
        *out = v;
        return RLT_STATUS_OK;
    }
    if (isinf(max))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "ga-dqn: %s is %g; it takes a finite number > 0 (0 = %g)",
                        name, v, dflt);
    return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "ga-dqn: %s is %g; it takes a number in (0, %g%s (0 = %g)", name,
                    v, max, is_max_open ? ")" : "]", dflt);
}

static rlt_status opt_count(int v, int dflt, const char *name, int *out, rlt_diag *diag)
{
    if (v < 0)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "ga-dqn: %s is %d; it takes a count >= 0 (0 = %d)", name,
                        v, dflt);
    *out = v > 0 ? v : dflt;
    return RLT_STATUS_OK;
}

static rlt_status params_resolve(const rlt_tuner_opts *o, ga_dqn_params *p, rlt_diag *diag)
{
    rlt_status st;
    if ((st = opt_real(o->ga_dqn_lr, 1e-3, 1.0, false, "ga_dqn_lr", &p->lr, diag)) ||
        (st = opt_real(o->ga_dqn_gamma, 0.95, 1.0, true, "ga_dqn_gamma", &p->gamma, diag)) ||
        (st = opt_real(o->ga_dqn_eps_decay, 0.99, 1.0, false, "ga_dqn_eps_decay", &p->eps_decay, diag)) ||
        (st = opt_real(o->ga_dqn_eps_min, 0.1, 1.0, false, "ga_dqn_eps_min", &p->eps_min, diag)) ||
        (st = opt_real(o->ga_dqn_grad_clip, 10.0, INFINITY, false, "ga_dqn_grad_clip", &p->grad_clip, diag)) ||
        (st = opt_real(o->ga_dqn_best_bonus, 5.0, INFINITY, false, "ga_dqn_best_bonus", &p->best_bonus, diag)) ||
        (st = opt_count(o->ga_dqn_replay, 10000, "ga_dqn_replay", &p->replay, diag)) ||
        (st = opt_count(o->ga_dqn_minibatch, 64, "ga_dqn_minibatch", &p->minibatch, diag)) ||
        (st = opt_count(o->ga_dqn_learn_start, 100, "ga_dqn_learn_start", &p->learn_start, diag)) ||
        (st = opt_count(o->ga_dqn_target_every, 200, "ga_dqn_target_every", &p->target_every, diag)))
        return st;
    return RLT_STATUS_OK;
}

/* ---- one DQN ------------------------------------------------------------- */

#define REPLAY_FIRST_ALLOC 512

static rlt_status dqn_create(dqn *d, int n_features, int n_actions, const ga_dqn_params *p, uint64_t seed,
                             rlt_diag *diag)
{
    d->n_features = n_features;
    d->n_actions = n_actions;
    /* GA-DQN's Q network: MLP (256, 64), ReLU, here of one output (the
     * value of the action whose row it reads); the target starts as a copy
     * (one spec, one seed: the same weights) */
    rlt_mlp_spec spec = {.n_inputs = n_features,
                         .n_layers = 3,
                         .layers = {{256, RLT_NN_ACT_RELU}, {64, RLT_NN_ACT_RELU}, {1, RLT_NN_ACT_NONE}}};
    rlt_status st;
    if ((st = rlt_mlp_create(&spec, seed, &d->q, diag)) != RLT_STATUS_OK) return st;
    if ((st = rlt_mlp_create(&spec, seed, &d->q_target, diag)) != RLT_STATUS_OK) return st;
    if ((st = rlt_adam_create(&(rlt_adam_opts){.lr = p->lr}, d->q, &d->adam, diag)) != RLT_STATUS_OK) return st;
    size_t mb = (size_t)p->minibatch, na = (size_t)n_actions, nf = (size_t)n_features;
    d->mb_rows = rlt_malloc(mb * nf * sizeof(float));
    d->mb_next = rlt_malloc(mb * na * nf * sizeof(float));
    d->mb_next_allowed = rlt_malloc(mb * na * sizeof(bool));
    d->mb_q = rlt_malloc(mb * sizeof(float));
    d->mb_next_q = rlt_malloc(mb * na * sizeof(float));
    d->mb_dq = rlt_malloc(mb * sizeof(float));
    d->mb_targets = rlt_malloc(mb * sizeof(float));
    if (!d->mb_rows || !d->mb_next || !d->mb_next_allowed || !d->mb_q || !d->mb_next_q || !d->mb_dq ||
        !d->mb_targets)
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating ga-dqn's agents");
    return RLT_STATUS_OK;
}

static void dqn_free(dqn *d)
{
    rlt_mlp_destroy(d->q);
    rlt_mlp_destroy(d->q_target);
    rlt_adam_destroy(d->adam);
    rlt_free(d->replay_rows);
    rlt_free(d->replay_next);
    rlt_free(d->replay_next_allowed);
    rlt_free(d->replay_rewards);
    rlt_free(d->mb_rows);
    rlt_free(d->mb_next);
    rlt_free(d->mb_next_allowed);
    rlt_free(d->mb_q);
    rlt_free(d->mb_next_q);
    rlt_free(d->mb_dq);
    rlt_free(d->mb_targets);
    *d = (dqn){0};
}

/* The action of highest Q-value (the first of equals) among the allowed
 * ones (allowed NULL: all; none allowed: action 0) of one state's rows;
 * q_row holds n_actions floats. */
static rlt_status dqn_greedy(const dqn *d, const float *rows, const bool *allowed, float *q_row, int *out_action,
                             rlt_diag *diag)
{
    rlt_status st = rlt_mlp_predict(d->q, d->n_actions, rows, q_row, diag);
    if (st != RLT_STATUS_OK) return st;
    int best = -1;
    for (int a = 0; a < d->n_actions; a++)
        if ((!allowed || allowed[a]) && (best < 0 || q_row[a] > q_row[best])) best = a;
    *out_action = best < 0 ? 0 : best;
    return RLT_STATUS_OK;
}

/* Room for one more transition in the replay ring (grown by doubling up
 * to `cap`); false when out of memory. */
static bool dqn_reserve(dqn *d, int cap)
{
    if (d->n_replay < d->replay_alloc || d->replay_alloc == cap) return true;
    int alloc = RLT_MIN(cap, d->replay_alloc ? 2 * d->replay_alloc : REPLAY_FIRST_ALLOC);
    size_t nf = (size_t)d->n_features, na = (size_t)d->n_actions, n = (size_t)alloc;
    float *rows = rlt_realloc(d->replay_rows, n * nf * sizeof(float));
    if (rows) d->replay_rows = rows;
    float *next = rlt_realloc(d->replay_next, n * na * nf * sizeof(float));
    if (next) d->replay_next = next;
    bool *allowed = rlt_realloc(d->replay_next_allowed, n * na * sizeof(bool));
    if (allowed) d->replay_next_allowed = allowed;
    float *rewards = rlt_realloc(d->replay_rewards, n * sizeof(float));
    if (rewards) d->replay_rewards = rewards;
    if (!rows || !next || !allowed || !rewards) return false;
    d->replay_alloc = alloc;
    return true;
}

/* A transition into the replay ring: the chosen action's row, its reward,
 * the next state's rows and allowed actions (NULL: all). The ring is
 * filled while it grows, so the head only wraps once it is full. */
static rlt_status dqn_push(dqn *d, int cap, const float *row, double reward, const float *next,
                           const bool *next_allowed, rlt_diag *diag)
{
    if (!dqn_reserve(d, cap))
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory growing ga-dqn's replay buffer past %d",
                        d->replay_alloc);
    size_t nf = (size_t)d->n_features, na = (size_t)d->n_actions, i = (size_t)d->replay_head;
    memcpy(d->replay_rows + i * nf, row, nf * sizeof(float));
    memcpy(d->replay_next + i * na * nf, next, na * nf * sizeof(float));
    for (size_t a = 0; a < na; a++) d->replay_next_allowed[i * na + a] = !next_allowed || next_allowed[a];
    d->replay_rewards[i] = (float)reward;
    d->replay_head = (d->replay_head + 1) % cap;
    if (d->n_replay < cap) d->n_replay++;
    return RLT_STATUS_OK;
}

/* One minibatch step: transitions drawn uniformly (with replacement) from
 * the replay buffer, targets r + gamma max_a' Q_target(s', a') over the
 * next state's allowed actions, the Huber loss of Q(s, a) against them,
 * Adam on the clipped gradients. */
static rlt_status dqn_learn(dqn *d, const ga_dqn_params *p, rlt_rng *rng, rlt_diag *diag)
{
    int b = p->minibatch;
    size_t nf = (size_t)d->n_features, na = (size_t)d->n_actions;
    for (int i = 0; i < b; i++) {
        size_t j = (size_t)rlt_rng_below(rng, (uint64_t)d->n_replay);
        memcpy(d->mb_rows + (size_t)i * nf, d->replay_rows + j * nf, nf * sizeof(float));
        memcpy(d->mb_next + (size_t)i * na * nf, d->replay_next + j * na * nf, na * nf * sizeof(float));
        memcpy(d->mb_next_allowed + (size_t)i * na, d->replay_next_allowed + j * na, na * sizeof(bool));
        d->mb_targets[i] = d->replay_rewards[j];
    }
    rlt_status st;
    if ((st = rlt_mlp_predict(d->q_target, b * d->n_actions, d->mb_next, d->mb_next_q, diag)) != RLT_STATUS_OK)
        return st;
    for (int i = 0; i < b; i++) {
        const float *next_q = d->mb_next_q + (size_t)i * na;
        const bool *allowed = d->mb_next_allowed + (size_t)i * na;
        bool any = false;
        float max = 0;
        for (size_t a = 0; a < na; a++)
            if (allowed[a] && (!any || next_q[a] > max)) max = next_q[a], any = true;
        d->mb_targets[i] += (float)p->gamma * max;
    }
    double loss = 0;
    if ((st = rlt_mlp_forward(d->q, b, d->mb_rows, d->mb_q, diag)) != RLT_STATUS_OK ||
        (st = rlt_nn_loss_huber(b, d->mb_q, d->mb_targets, HUBER_DELTA, &loss, d->mb_dq, diag)) != RLT_STATUS_OK)
        return st;
    rlt_mlp_zero_grad(d->q);
    if ((st = rlt_mlp_backward(d->q, b, d->mb_dq, NULL, diag)) != RLT_STATUS_OK ||
        (st = rlt_mlp_grad_clip(d->q, p->grad_clip, NULL, diag)) != RLT_STATUS_OK ||
        (st = rlt_adam_step(d->adam, d->q, diag)) != RLT_STATUS_OK)
        return st;
    d->loss_avg = d->loss_avg == 0 ? loss : (1 - LOSS_AVG_WEIGHT) * d->loss_avg + LOSS_AVG_WEIGHT * loss;
    return RLT_STATUS_OK;
}

/* ---- rewards ------------------------------------------------------------- */

static int n_point_actions(const rlt_space *s) { return RLT_MAX(1, s->n_knobs - 1); }

/* The reward of a child of score `score` whose parents averaged
 * `parent_mean`, given `best`, the best score before it (docs/tuners.md):
 *     r = min((score - parent_mean) / best, 1), times best_bonus when score > best,
 * so r is in [-1, best_bonus]: negative for a child worse than both parents
 * (worse than their mean, in fact), best_bonus times the gain for a new
 * best. With nothing above 0 yet, a child above 0 gets best_bonus. */
static double reward(const ga_dqn_params *p, double best, double parent_mean, double score)
{
    if (best <= 0) return score > 0 ? p->best_bonus : 0.0;
    double r = RLT_MIN((score - parent_mean) / best, 1.0);
    return score > best ? p->best_bonus * r : r;
}

/* Scores as the agents take them: a failure, or anything not a finite
 * positive number, is 0. */
static double clean_score(double score) { return isfinite(score) && score > 0 ? score : 0.0; }

/* ---- acting -------------------------------------------------------------- */

/* Epsilon-greedy among the allowed actions (NULL: all): a uniformly random
 * one with probability epsilon, else the greedy one (*is_greedy says
 * which). */
static int agent_act(rlt_tuner *t, ga_dqn_state *st, const dqn *d, const float *rows, const bool *allowed,
                     bool *is_greedy)
{
    *is_greedy = false;
    int n_allowed = 0;
    for (int a = 0; a < d->n_actions; a++) n_allowed += !allowed || allowed[a];
    if (n_allowed == 0) return 0;
    if (rlt_rng_uniform(&t->rng) >= st->agent.epsilon) {
        int action = 0;
        /* predict fails only when out of memory: then the action is random */
        if (dqn_greedy(d, rows, allowed, st->q_row, &action, NULL) == RLT_STATUS_OK) {
            *is_greedy = true;
            return action;
        }
    }
    int pick = (int)rlt_rng_below(&t->rng, (uint64_t)n_allowed);
    for (int a = 0; a < d->n_actions; a++)
        if ((!allowed || allowed[a]) && pick-- == 0) return a;
    return 0;
}

/* Moves knob k of c to a random other choice, drawn uniformly among those
 * that leave c valid (among all others when none does: the child is then
 * refused and the breeding tries again). */
static void mutate_knob(rlt_tuner *t, rlt_config *c, int k)
{
    const rlt_space *s = t->space;
    int n = s->knobs[k].n_choices, current = c->choice[k];
    if (n < 2) return;
    int16_t valid[RLT_SPACE_MAX_CHOICES];
    int n_valid = ga_dqn_other_valid_choices(s, c, k, valid);
    if (n_valid > 0) {
        c->choice[k] = valid[rlt_rng_below(&t->rng, (uint64_t)n_valid)];
    } else {
        int v = (int)rlt_rng_below(&t->rng, (uint64_t)n - 1);
        c->choice[k] = (int16_t)(v >= current ? v + 1 : v);
    }
}

/* rlt_ga_child_fn: parents drawn as ga draws them, the crossover point
 * from the crossover DQN, the mutation from the mutation DQN; up to
 * MAX_ATTEMPTS tries at a new valid child. The accepted try waits in
 * pending[slot] for its score, with the rows of the actions taken. */
static bool ga_dqn_make_child(rlt_tuner *t, rlt_ga *g, void *ctx, int slot, rlt_config *out)
{
    ga_dqn_state *st = ctx;
    const rlt_space *s = t->space;
    int n = s->n_knobs;
    ga_dqn_agent *ag = &st->agent;
    ga_dqn_pending *pd = &st->pending[slot];
    pd->is_open = false;
    for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        int i1 = rlt_ga_pick_parent(t, g), i2 = rlt_ga_pick_parent(t, g);
        const rlt_config *p1 = &g->pool[i1], *p2 = &g->pool[i2];
        double s1 = g->pool_score[i1], s2 = g->pool_score[i2];
        ga_dqn_crossover_rows(t, &st->history, p1, p2, s1, s2, ag->crossover.n_actions, st->rows);
        bool is_point_greedy, is_knob_greedy;
        int point_action = agent_act(t, st, &ag->crossover, st->rows, NULL, &is_point_greedy);
        memcpy(pd->point_row, st->rows + (size_t)point_action * GA_DQN_CROSSOVER_FEATURES,
               GA_DQN_CROSSOVER_FEATURES * sizeof(float));
        int point = point_action + 1;
        rlt_config crossed = {0};
        for (int k = 0; k < n; k++) crossed.choice[k] = (k < point ? p1 : p2)->choice[k];
        ga_dqn_mutation_rows(t, &st->history, p1, p2, &crossed, 0.5 * (s1 + s2), st->rows, st->allowed);
        int knob_action = agent_act(t, st, &ag->mutation, st->rows, st->allowed, &is_knob_greedy);
        memcpy(pd->knob_row, st->rows + (size_t)knob_action * GA_DQN_MUTATION_FEATURES,
               GA_DQN_MUTATION_FEATURES * sizeof(float));
        *out = crossed;
        if (knob_action > 0) mutate_knob(t, out, knob_action - 1);
        if (!rlt_ga_claim(t, out)) continue;
        pd->is_open = true;
        pd->parents[0] = *p1;
        pd->parents[1] = *p2;
        pd->crossed = crossed;
        pd->child = *out;
        pd->point_action = point_action;
        pd->knob_action = knob_action;
        pd->is_point_greedy = is_point_greedy;
        pd->is_knob_greedy = is_knob_greedy;
        pd->parent_score[0] = s1;
        pd->parent_score[1] = s2;
        return true;
    }
    ag->n_random_children++;
    return false;
}

/* ---- learning ------------------------------------------------------------ */

/* A scored child into the counts of what the agents chose. */
static void note_choices(rlt_ga_dqn_choices *c, const ga_dqn_pending *pd, double r, bool is_new_best)
{
    int kind = pd->is_knob_greedy ? RLT_GA_DQN_GREEDY : RLT_GA_DQN_EXPLORED;
    c->n[kind]++;
    c->reward_sum[kind] += r;
    c->n_new_best[kind] += is_new_best;
    c->n_no_mutation[kind] += pd->knob_action == 0;
    if (pd->is_point_greedy && pd->point_action < RLT_SPACE_MAX_KNOBS) c->greedy_points[pd->point_action]++;
    if (pd->is_knob_greedy && pd->knob_action <= RLT_SPACE_MAX_KNOBS) c->greedy_knobs[pd->knob_action]++;
}

/* A bred child's score is in: one transition for each DQN, the target
 * networks' copy when due, and one learning step each once the run's
 * replay buffers hold learn_start transitions.
 *   crossover: s = the parents' point rows, a = point - 1,
 *              s' = the point rows of the crossed child as both parents
 *   mutation:  s = the crossed child's knob rows, a = 0 or knob + 1,
 *              s' = the knob rows of the child
 * (the next states are rated with the history as it is now, the child's
 * score in it). The crossover DQN's next state is a pair of parents as
 * every state it sees (both parents are the same configuration when
 * selection draws one twice). */
static rlt_status agent_observe(rlt_tuner *t, ga_dqn_state *st, const ga_dqn_pending *pd, double score,
                                rlt_diag *diag)
{
    ga_dqn_agent *ag = &st->agent;
    const ga_dqn_params *p = &ag->params;
    double parent_mean = 0.5 * (pd->parent_score[0] + pd->parent_score[1]);
    double r = reward(p, ag->best_score, parent_mean, score);
    note_choices(&ag->choices, pd, r, score > ag->best_score);
    if (pd->knob_action > 0) ga_dqn_history_add_mutation(&st->history, pd->knob_action - 1, r);
    rlt_status status;
    ga_dqn_crossover_rows(t, &st->history, &pd->crossed, &pd->crossed, score, score, ag->crossover.n_actions,
                          st->next_rows);
    if ((status = dqn_push(&ag->crossover, p->replay, pd->point_row, r, st->next_rows, NULL, diag)) != RLT_STATUS_OK)
        return status;
    ga_dqn_mutation_rows(t, &st->history, &pd->parents[0], &pd->parents[1], &pd->child, parent_mean,
                         st->next_rows, st->next_allowed);
    if ((status = dqn_push(&ag->mutation, p->replay, pd->knob_row, r, st->next_rows, st->next_allowed, diag)) !=
        RLT_STATUS_OK)
        return status;
    ag->n_transitions++;
    if (ag->n_transitions % p->target_every == 0 &&
        ((status = rlt_mlp_copy_weights(ag->crossover.q_target, ag->crossover.q, diag)) != RLT_STATUS_OK ||
         (status = rlt_mlp_copy_weights(ag->mutation.q_target, ag->mutation.q, diag)) != RLT_STATUS_OK))
        return status;
    if (ag->mutation.n_replay <= p->learn_start) return RLT_STATUS_OK;
    if ((status = dqn_learn(&ag->crossover, p, &t->rng, diag)) != RLT_STATUS_OK ||
        (status = dqn_learn(&ag->mutation, p, &t->rng, diag)) != RLT_STATUS_OK) {
        rlt_diag_prefix(diag, "ga-dqn learning step %lld", (long long)ag->n_learn_steps + 1);
        return status;
    }
    ag->n_learn_steps++;
    ag->epsilon = RLT_MAX(p->eps_min, ag->epsilon * p->eps_decay);
    return RLT_STATUS_OK;
}

/* ---- the tuner ----------------------------------------------------------- */

static rlt_status ga_dqn_load(rlt_tuner *t, const rlt_agent_file *f, rlt_diag *diag);

/* The agents built into the library (models/ga_dqn.rla, trained over many
 * workloads' datasets: models/README.md) in place of the fresh ones. */
static rlt_status load_built_in(rlt_tuner *t, rlt_diag *diag)
{
    const char *name = "models/ga_dqn.rla (built in)";
    rlt_agent_file *f = NULL;
    rlt_status st = rlt_agent_file_load_bytes(rlt_default_ga_dqn_agent, sizeof rlt_default_ga_dqn_agent - 1, name,
                                              &f, diag);
    if (st == RLT_STATUS_OK) st = ga_dqn_load(t, f, diag);
    rlt_agent_file_destroy(f);
    return st;
}

static rlt_status ga_dqn_init(rlt_tuner *t, rlt_diag *diag)
{
    /* BLAS worker threads must not compete with the measuring child for the
     * 2 cores: the networks are small, one thread does. */
    openblas_set_num_threads(1);
    ga_dqn_state *st = rlt_calloc(1, sizeof *st);
    if (!st) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a tuner");
    t->state = st;
    const rlt_space *s = t->space;
    int n = s->n_knobs;
    if (n < 1) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "ga-dqn: the space has no knobs to breed");
    ga_dqn_agent *ag = &st->agent;
    rlt_status status;
    if ((status = params_resolve(&t->opts, &ag->params, diag)) != RLT_STATUS_OK) return status;
    if ((status = rlt_ga_init(t, &st->ga, diag)) != RLT_STATUS_OK) return status;
    /* the first generation is drawn as ga draws it; the networks' seeds come next */
    uint64_t seed_crossover = rlt_rng_u64(&t->rng), seed_mutation = rlt_rng_u64(&t->rng);
    if ((status = dqn_create(&ag->crossover, GA_DQN_CROSSOVER_FEATURES, n_point_actions(s), &ag->params,
                             seed_crossover, diag)) != RLT_STATUS_OK ||
        (status = dqn_create(&ag->mutation, GA_DQN_MUTATION_FEATURES, n + 1, &ag->params, seed_mutation, diag)) !=
            RLT_STATUS_OK)
        return status;
    ag->epsilon = 1.0;
    if (!t->opts.ga_dqn_fresh && (status = load_built_in(t, diag)) != RLT_STATUS_OK) return status;
    size_t pop = (size_t)RLT_MAX(st->ga.pop, 1);
    size_t per_child = GA_DQN_CROSSOVER_FEATURES + GA_DQN_MUTATION_FEATURES;
    size_t state_floats = (size_t)(n + 1) * RLT_MAX(GA_DQN_CROSSOVER_FEATURES, GA_DQN_MUTATION_FEATURES);
    st->pending = rlt_calloc(pop, sizeof *st->pending);
    st->pending_rows = rlt_calloc(pop * per_child, sizeof(float));
    st->rows = rlt_calloc(state_floats, sizeof(float));
    st->next_rows = rlt_calloc(state_floats, sizeof(float));
    st->allowed = rlt_calloc((size_t)(n + 1), sizeof(bool));
    st->next_allowed = rlt_calloc((size_t)(n + 1), sizeof(bool));
    st->q_row = rlt_calloc((size_t)(n + 1), sizeof *st->q_row);
    if (!st->pending || !st->pending_rows || !st->rows || !st->next_rows || !st->allowed || !st->next_allowed ||
        !st->q_row)
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a tuner");
    for (size_t i = 0; i < pop; i++) {
        st->pending[i].point_row = st->pending_rows + i * per_child;
        st->pending[i].knob_row = st->pending_rows + i * per_child + GA_DQN_CROSSOVER_FEATURES;
    }
    return RLT_STATUS_OK;
}

static void ga_dqn_fini(rlt_tuner *t)
{
    ga_dqn_state *st = t->state;
    if (!st) return;
    rlt_ga_free(&st->ga);
    dqn_free(&st->agent.crossover);
    dqn_free(&st->agent.mutation);
    rlt_free(st->pending);
    rlt_free(st->pending_rows);
    rlt_free(st->rows);
    rlt_free(st->next_rows);
    rlt_free(st->allowed);
    rlt_free(st->next_allowed);
    rlt_free(st->q_row);
    rlt_free(st);
}

static int ga_dqn_next(rlt_tuner *t, int max, rlt_config *out)
{
    ga_dqn_state *st = t->state;
    return rlt_ga_next(t, &st->ga, ga_dqn_make_child, st, max, out);
}

/* Scores of bred children become transitions, in the order given; every
 * score (proposed or not) goes into the history and counts toward the
 * best, which scales later rewards. Configurations the GA did not propose
 * only count as visited. */
static rlt_status ga_dqn_update(rlt_tuner *t, int n, const rlt_config *configs, const double *scores,
                                rlt_diag *diag)
{
    ga_dqn_state *st = t->state;
    for (int i = 0; i < n; i++) {
        double score = clean_score(scores[i]);
        ga_dqn_history_add(&st->history, t->space, &configs[i], score);
        int slot = rlt_ga_find(&st->ga, t->space, &configs[i]);
        if (slot >= 0 && st->pending[slot].is_open) {
            st->pending[slot].is_open = false;
            rlt_status status = agent_observe(t, st, &st->pending[slot], score, diag);
            if (status != RLT_STATUS_OK) return status;
        }
        st->agent.best_score = RLT_MAX(st->agent.best_score, score);
    }
    rlt_ga_update(&st->ga, t->space, n, configs, scores);
    return RLT_STATUS_OK;
}

/* ---- saved agents ------------------------------------------------------- */

/* The state's version in agent files: 2 since the DQNs score rows of
 * features (1, unmarked, fed them the genes and fitted one knob layout). */
#define STATE_VERSION 2

/* Kept: both DQNs (Q network with Adam's state, target network), epsilon
 * and the learning clocks. Restarted: the population, the history, the
 * replay buffers and the best score, which belong to the workload. The
 * networks fit every space: the knobs the file lists are only a note of
 * where the agent last learned. */
static rlt_status ga_dqn_save(const rlt_tuner *t, rlt_agent_file *f, rlt_diag *diag)
{
    const ga_dqn_agent *ag = &((const ga_dqn_state *)t->state)->agent;
    rlt_status st;
    if ((st = rlt_agent_file_put_real(f, "state_version", STATE_VERSION, diag)) ||
        (st = rlt_agent_file_put_mlp(f, "crossover.q", ag->crossover.q, ag->crossover.adam, diag)) ||
        (st = rlt_agent_file_put_mlp(f, "crossover.q_target", ag->crossover.q_target, NULL, diag)) ||
        (st = rlt_agent_file_put_mlp(f, "mutation.q", ag->mutation.q, ag->mutation.adam, diag)) ||
        (st = rlt_agent_file_put_mlp(f, "mutation.q_target", ag->mutation.q_target, NULL, diag)) ||
        (st = rlt_agent_file_put_real(f, "epsilon", ag->epsilon, diag)) ||
        (st = rlt_agent_file_put_real(f, "n_transitions", (double)ag->n_transitions, diag)))
        return st;
    return rlt_agent_file_put_real(f, "n_learn_steps", (double)ag->n_learn_steps, diag);
}

static rlt_status ga_dqn_load(rlt_tuner *t, const rlt_agent_file *f, rlt_diag *diag)
{
    ga_dqn_agent *ag = &((ga_dqn_state *)t->state)->agent;
    rlt_mlp *q[4] = {NULL};
    rlt_adam *adam[2] = {NULL};
    double version = 0, epsilon = 0, n_transitions = 0, n_learn_steps = 0;
    rlt_status st;
    if (rlt_agent_file_get_real(f, "state_version", &version, NULL) != RLT_STATUS_OK || version != STATE_VERSION)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "agent file '%s': a ga-dqn agent of state version %g; this rltune's is %d (its DQNs score "
                        "knob features, not genes): train the agent again",
                        rlt_agent_file_source(f), version, STATE_VERSION);
    if ((st = rlt_agent_file_get_mlp(f, "crossover.q", rlt_mlp_get_spec(ag->crossover.q), &q[0], &adam[0], diag)) ||
        (st = rlt_agent_file_get_mlp(f, "crossover.q_target", rlt_mlp_get_spec(ag->crossover.q), &q[1], NULL,
                                     diag)) ||
        (st = rlt_agent_file_get_mlp(f, "mutation.q", rlt_mlp_get_spec(ag->mutation.q), &q[2], &adam[1], diag)) ||
        (st = rlt_agent_file_get_mlp(f, "mutation.q_target", rlt_mlp_get_spec(ag->mutation.q), &q[3], NULL,
                                     diag)) ||
        (st = rlt_agent_file_get_real(f, "epsilon", &epsilon, diag)) ||
        (st = rlt_agent_file_get_real(f, "n_transitions", &n_transitions, diag)) ||
        (st = rlt_agent_file_get_real(f, "n_learn_steps", &n_learn_steps, diag)))
        goto fail;
    if (!adam[0] || !adam[1] || !(epsilon >= 0 && epsilon <= 1) || !(n_transitions >= 0 && n_transitions < 1e15) ||
        !(n_learn_steps >= 0 && n_learn_steps < 1e15)) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                      "agent file '%s': ga-dqn's optimisers, epsilon or counters are missing or out of range",
                      rlt_agent_file_source(f));
        goto fail;
    }
    dqn *nets[2] = {&ag->crossover, &ag->mutation};
    for (int i = 0; i < 2; i++) {
        rlt_mlp_destroy(nets[i]->q);
        rlt_mlp_destroy(nets[i]->q_target);
        rlt_adam_destroy(nets[i]->adam);
        nets[i]->q = q[2 * i];
        nets[i]->q_target = q[2 * i + 1];
        nets[i]->adam = adam[i];
    }
    ag->epsilon = epsilon;
    ag->n_transitions = (int64_t)n_transitions;
    ag->n_learn_steps = (int64_t)n_learn_steps;
    return RLT_STATUS_OK;
fail:
    for (int i = 0; i < 4; i++) rlt_mlp_destroy(q[i]);
    for (int i = 0; i < 2; i++) rlt_adam_destroy(adam[i]);
    return st;
}

const rlt_tuner_ops rlt_tuner_ga_dqn_ops = {.name = "ga-dqn",
                                            .flags = RLT_TUNER_HAS_AGENT,
                                            .init = ga_dqn_init,
                                            .next_batch = ga_dqn_next,
                                            .update = ga_dqn_update,
                                            .fini = ga_dqn_fini,
                                            .save = ga_dqn_save,
                                            .load = ga_dqn_load};

/* ---- a look at the agents (ga_dqn.h) ------------------------------------- */

static rlt_status check_is_ga_dqn(const rlt_tuner *t, rlt_diag *diag)
{
    if (t->ops != &rlt_tuner_ga_dqn_ops)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "tuner '%s' is not ga-dqn", rlt_tuner_name(t));
    return RLT_STATUS_OK;
}

rlt_status rlt_tuner_ga_dqn_stats(const rlt_tuner *t, rlt_ga_dqn_stats *out, rlt_diag *diag)
{
    rlt_status status = check_is_ga_dqn(t, diag);
    if (status != RLT_STATUS_OK) return status;
    const ga_dqn_agent *ag = &((const ga_dqn_state *)t->state)->agent;
    *out = (rlt_ga_dqn_stats){.n_transitions = ag->n_transitions,
                              .n_learn_steps = ag->n_learn_steps,
                              .n_random_children = ag->n_random_children,
                              .epsilon = ag->epsilon,
                              .best_score = ag->best_score,
                              .crossover_loss = ag->crossover.loss_avg,
                              .mutation_loss = ag->mutation.loss_avg,
                              .choices = ag->choices};
    return RLT_STATUS_OK;
}

/* The score of c in the GA's parent pool, 0 when it is not there. */
static double pool_score_of(const ga_dqn_state *st, const rlt_space *s, const rlt_config *c)
{
    for (int i = 0; i < st->ga.n_pool; i++)
        if (memcmp(st->ga.pool[i].choice, c->choice, sizeof c->choice[0] * (size_t)s->n_knobs) == 0)
            return st->ga.pool_score[i];
    return 0.0;
}

/* Action values use their own scratch: t is not changed. */
rlt_status rlt_tuner_ga_dqn_point_values(const rlt_tuner *t, const rlt_config *p1, const rlt_config *p2,
                                         float *out_q, rlt_diag *diag)
{
    rlt_status status = check_is_ga_dqn(t, diag);
    if (status != RLT_STATUS_OK) return status;
    const ga_dqn_state *st = t->state;
    float rows[RLT_SPACE_MAX_KNOBS * GA_DQN_CROSSOVER_FEATURES];
    const dqn *d = &st->agent.crossover;
    ga_dqn_crossover_rows(t, &st->history, p1, p2, pool_score_of(st, t->space, p1), pool_score_of(st, t->space, p2),
                          d->n_actions, rows);
    return rlt_mlp_predict(d->q, d->n_actions, rows, out_q, diag);
}

rlt_status rlt_tuner_ga_dqn_knob_values(const rlt_tuner *t, const rlt_config *c, float *out_q, rlt_diag *diag)
{
    rlt_status status = check_is_ga_dqn(t, diag);
    if (status != RLT_STATUS_OK) return status;
    const ga_dqn_state *st = t->state;
    float rows[(RLT_SPACE_MAX_KNOBS + 1) * GA_DQN_MUTATION_FEATURES];
    bool allowed[RLT_SPACE_MAX_KNOBS + 1];
    const dqn *d = &st->agent.mutation;
    ga_dqn_mutation_rows(t, &st->history, c, c, c, pool_score_of(st, t->space, c), rows, allowed);
    if ((status = rlt_mlp_predict(d->q, d->n_actions, rows, out_q, diag)) != RLT_STATUS_OK) return status;
    for (int a = 0; a < d->n_actions; a++)
        if (!allowed[a]) out_q[a] = -INFINITY;
    return RLT_STATUS_OK;
}
