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

#include "nn/nn.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

/* The hyper-parameters, defaults resolved (rlt_tuner_opts' ga_dqn_*). */
typedef struct ga_dqn_params {
    double lr, gamma, eps_decay, eps_min, grad_clip, best_bonus;
    int replay, minibatch, learn_start, target_every;
} ga_dqn_params;

/* One DQN: the Q network, its target copy, Adam's state, the replay buffer
 * (a ring of the last `replay` transitions) and minibatch scratch. */
typedef struct dqn {
    int n_inputs, n_actions;
    rlt_mlp *q, *q_target;
    rlt_adam *adam;
    float *replay_states; /* [replay x n_inputs] */
    float *replay_next;   /* [replay x n_inputs] */
    int *replay_actions;
    float *replay_rewards;
    int n_replay, replay_head;
    double loss_avg; /* moving average of the learning steps' TD loss */
    float *mb_states, *mb_next, *mb_q, *mb_next_q, *mb_dq, *mb_targets;
    int *mb_actions;
} dqn;

/* All that the agents learn and count. */
typedef struct ga_dqn_agent {
    ga_dqn_params params;
    dqn crossover; /* state: both parents' genes; action: the crossover point - 1 */
    dqn mutation;  /* state: the crossed child's gene; action: 0 none, k + 1 knob k */
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
    double parent_mean; /* the parents' scores (failures 0), averaged */
} ga_dqn_pending;

typedef struct ga_dqn_state {
    rlt_ga ga;
    ga_dqn_agent agent;
    ga_dqn_pending *pending; /* [ga.pop], by generation slot */
    float *rows;             /* scratch: 4 x n_knobs */
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

static rlt_status dqn_create(dqn *d, int n_inputs, int n_actions, const ga_dqn_params *p, uint64_t seed,
                             rlt_diag *diag)
{
    d->n_inputs = n_inputs;
    d->n_actions = n_actions;
    /* GA-DQN's Q network: MLP (256, 64), ReLU; the target starts as a copy
     * (one spec, one seed: the same weights) */
    rlt_mlp_spec spec = {.n_inputs = n_inputs,
                         .n_layers = 3,
                         .layers = {{256, RLT_NN_ACT_RELU}, {64, RLT_NN_ACT_RELU}, {n_actions, RLT_NN_ACT_NONE}}};
    rlt_status st;
    if ((st = rlt_mlp_create(&spec, seed, &d->q, diag)) != RLT_STATUS_OK) return st;
    if ((st = rlt_mlp_create(&spec, seed, &d->q_target, diag)) != RLT_STATUS_OK) return st;
    if ((st = rlt_adam_create(&(rlt_adam_opts){.lr = p->lr}, d->q, &d->adam, diag)) != RLT_STATUS_OK) return st;
    size_t cap = (size_t)p->replay, mb = (size_t)p->minibatch;
    d->replay_states = rlt_malloc(cap * (size_t)n_inputs * sizeof(float));
    d->replay_next = rlt_malloc(cap * (size_t)n_inputs * sizeof(float));
    d->replay_actions = rlt_malloc(cap * sizeof(int));
    d->replay_rewards = rlt_malloc(cap * sizeof(float));
    d->mb_states = rlt_malloc(mb * (size_t)n_inputs * sizeof(float));
    d->mb_next = rlt_malloc(mb * (size_t)n_inputs * sizeof(float));
    d->mb_q = rlt_malloc(mb * (size_t)n_actions * sizeof(float));
    d->mb_next_q = rlt_malloc(mb * (size_t)n_actions * sizeof(float));
    d->mb_dq = rlt_malloc(mb * (size_t)n_actions * sizeof(float));
    d->mb_targets = rlt_malloc(mb * sizeof(float));
    d->mb_actions = rlt_malloc(mb * sizeof(int));
    if (!d->replay_states || !d->replay_next || !d->replay_actions || !d->replay_rewards || !d->mb_states ||
        !d->mb_next || !d->mb_q || !d->mb_next_q || !d->mb_dq || !d->mb_targets || !d->mb_actions)
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating ga-dqn's agents (replay buffer of %d)",
                        p->replay);
    return RLT_STATUS_OK;
}

static void dqn_free(dqn *d)
{
    rlt_mlp_destroy(d->q);
    rlt_mlp_destroy(d->q_target);
    rlt_adam_destroy(d->adam);
    rlt_free(d->replay_states);
    rlt_free(d->replay_next);
    rlt_free(d->replay_actions);
    rlt_free(d->replay_rewards);
    rlt_free(d->mb_states);
    rlt_free(d->mb_next);
    rlt_free(d->mb_q);
    rlt_free(d->mb_next_q);
    rlt_free(d->mb_dq);
    rlt_free(d->mb_targets);
    rlt_free(d->mb_actions);
    *d = (dqn){0};
}

/* The action of highest Q-value (the first of equals) for one state;
 * q_row holds n_actions floats. */
static rlt_status dqn_greedy(const dqn *d, const float *state, float *q_row, int *out_action, rlt_diag *diag)
{
    rlt_status st = rlt_mlp_predict(d->q, 1, state, q_row, diag);
    if (st != RLT_STATUS_OK) return st;
    int best = 0;
    for (int a = 1; a < d->n_actions; a++)
        if (q_row[a] > q_row[best]) best = a;
    *out_action = best;
    return RLT_STATUS_OK;
}

static void dqn_push(dqn *d, int cap, const float *state, int action, double reward, const float *next)
{
    size_t n = (size_t)d->n_inputs, i = (size_t)d->replay_head;
    memcpy(d->replay_states + i * n, state, n * sizeof(float));
    memcpy(d->replay_next + i * n, next, n * sizeof(float));
    d->replay_actions[i] = action;
    d->replay_rewards[i] = (float)reward;
    d->replay_head = (d->replay_head + 1) % cap;
    if (d->n_replay < cap) d->n_replay++;
}

/* One minibatch step: transitions drawn uniformly (with replacement) from
 * the replay buffer, targets r + gamma max_a Q_target(s', a), the Huber
 * loss of Q(s, a) against them, Adam on the clipped gradients. */
static rlt_status dqn_learn(dqn *d, const ga_dqn_params *p, rlt_rng *rng, rlt_diag *diag)
{
    int b = p->minibatch, na = d->n_actions;
    size_t n = (size_t)d->n_inputs;
    for (int i = 0; i < b; i++) {
        size_t j = (size_t)rlt_rng_below(rng, (uint64_t)d->n_replay);
        memcpy(d->mb_states + (size_t)i * n, d->replay_states + j * n, n * sizeof(float));
        memcpy(d->mb_next + (size_t)i * n, d->replay_next + j * n, n * sizeof(float));
        d->mb_actions[i] = d->replay_actions[j];
        d->mb_targets[i] = d->replay_rewards[j];
    }
    rlt_status st;
    if ((st = rlt_mlp_predict(d->q_target, b, d->mb_next, d->mb_next_q, diag)) != RLT_STATUS_OK) return st;
    for (int i = 0; i < b; i++) {
        const float *next_q = d->mb_next_q + (size_t)i * (size_t)na;
        float max = next_q[0];
        for (int a = 1; a < na; a++) max = fmaxf(max, next_q[a]);
        d->mb_targets[i] += (float)p->gamma * max;
    }
    double loss = 0;
    if ((st = rlt_mlp_forward(d->q, b, d->mb_states, d->mb_q, diag)) != RLT_STATUS_OK ||
        (st = rlt_nn_loss_huber_picked(b, na, d->mb_q, d->mb_actions, d->mb_targets, HUBER_DELTA, &loss, d->mb_dq,
                                       diag)) != RLT_STATUS_OK)
        return st;
    rlt_mlp_zero_grad(d->q);
    if ((st = rlt_mlp_backward(d->q, b, d->mb_dq, NULL, diag)) != RLT_STATUS_OK ||
        (st = rlt_mlp_grad_clip(d->q, p->grad_clip, NULL, diag)) != RLT_STATUS_OK ||
        (st = rlt_adam_step(d->adam, d->q, diag)) != RLT_STATUS_OK)
        return st;
    d->loss_avg = d->loss_avg == 0 ? loss : (1 - LOSS_AVG_WEIGHT) * d->loss_avg + LOSS_AVG_WEIGHT * loss;
    return RLT_STATUS_OK;
}

/* ---- genes and rewards --------------------------------------------------- */

/* A gene as the networks see it: each knob's choice over its number of
 * choices, in [0, 1). */
static void gene_row(const rlt_space *s, const rlt_config *c, float *out)
{
    for (int k = 0; k < s->n_knobs; k++) out[k] = (float)c->choice[k] / (float)s->knobs[k].n_choices;
}

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

/* Epsilon-greedy: a uniformly random action with probability epsilon,
 * else the greedy one (*is_greedy says which). */
static int agent_act(rlt_tuner *t, ga_dqn_state *st, const dqn *d, const float *state, bool *is_greedy)
{
    *is_greedy = false;
    if (rlt_rng_uniform(&t->rng) < st->agent.epsilon) return (int)rlt_rng_below(&t->rng, (uint64_t)d->n_actions);
    int action = 0;
    /* predict fails only when out of memory: then the action is random */
    if (dqn_greedy(d, state, st->q_row, &action, NULL) != RLT_STATUS_OK)
        return (int)rlt_rng_below(&t->rng, (uint64_t)d->n_actions);
    *is_greedy = true;
    return action;
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
    int n_valid = 0;
    rlt_config trial = *c;
    for (int v = 0; v < n; v++) {
        if (v == current) continue;
        trial.choice[k] = (int16_t)v;
        if (rlt_space_is_valid(s, &trial)) valid[n_valid++] = (int16_t)v;
    }
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
 * pending[slot] for its score. */
static bool ga_dqn_make_child(rlt_tuner *t, rlt_ga *g, void *ctx, int slot, rlt_config *out)
{
    ga_dqn_state *st = ctx;
    const rlt_space *s = t->space;
    int n = s->n_knobs;
    ga_dqn_pending *pd = &st->pending[slot];
    pd->is_open = false;
    float *pair = st->rows, *gene = st->rows + 2 * n;
    for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        int i1 = rlt_ga_pick_parent(t, g), i2 = rlt_ga_pick_parent(t, g);
        const rlt_config *p1 = &g->pool[i1], *p2 = &g->pool[i2];
        gene_row(s, p1, pair);
        gene_row(s, p2, pair + n);
        bool is_point_greedy, is_knob_greedy;
        int point_action = agent_act(t, st, &st->agent.crossover, pair, &is_point_greedy);
        int point = point_action + 1;
        rlt_config crossed = {0};
        for (int k = 0; k < n; k++) crossed.choice[k] = (k < point ? p1 : p2)->choice[k];
        gene_row(s, &crossed, gene);
        int knob_action = agent_act(t, st, &st->agent.mutation, gene, &is_knob_greedy);
        *out = crossed;
        if (knob_action > 0) mutate_knob(t, out, knob_action - 1);
        if (!rlt_ga_claim(t, out)) continue;
        *pd = (ga_dqn_pending){.is_open = true,
                               .parents = {*p1, *p2},
                               .crossed = crossed,
                               .child = *out,
                               .point_action = point_action,
                               .knob_action = knob_action,
                               .is_point_greedy = is_point_greedy,
                               .is_knob_greedy = is_knob_greedy,
                               .parent_mean = 0.5 * (g->pool_score[i1] + g->pool_score[i2])};
        return true;
    }
    st->agent.n_random_children++;
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
 * networks' copy when due, and one learning step each past learn_start.
 *   crossover: s = (parent 1, parent 2), a = point - 1, s' = (crossed, crossed)
 *   mutation:  s = crossed, a = 0 or knob + 1, s' = child
 * The crossover DQN's next state is the crossed child as both parents: a
 * pair of genes as every state it sees (both parents are the same
 * configuration when selection draws one twice). */
static rlt_status agent_observe(rlt_tuner *t, ga_dqn_state *st, const ga_dqn_pending *pd, double score,
                                rlt_diag *diag)
{
    ga_dqn_agent *ag = &st->agent;
    const ga_dqn_params *p = &ag->params;
    const rlt_space *s = t->space;
    int n = s->n_knobs;
    double r = reward(p, ag->best_score, pd->parent_mean, score);
    note_choices(&ag->choices, pd, r, score > ag->best_score);
    float *pair = st->rows, *pair_next = st->rows + 2 * n;
    gene_row(s, &pd->parents[0], pair);
    gene_row(s, &pd->parents[1], pair + n);
    gene_row(s, &pd->crossed, pair_next);
    gene_row(s, &pd->crossed, pair_next + n);
    dqn_push(&ag->crossover, p->replay, pair, pd->point_action, r, pair_next);
    float *gene = st->rows, *gene_next = st->rows + n;
    gene_row(s, &pd->crossed, gene);
    gene_row(s, &pd->child, gene_next);
    dqn_push(&ag->mutation, p->replay, gene, pd->knob_action, r, gene_next);
    ag->n_transitions++;
    rlt_status status;
    if (ag->n_transitions % p->target_every == 0 &&
        ((status = rlt_mlp_copy_weights(ag->crossover.q_target, ag->crossover.q, diag)) != RLT_STATUS_OK ||
         (status = rlt_mlp_copy_weights(ag->mutation.q_target, ag->mutation.q, diag)) != RLT_STATUS_OK))
        return status;
    if (ag->n_transitions <= p->learn_start) return RLT_STATUS_OK;
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
    if ((status = dqn_create(&ag->crossover, 2 * n, n_point_actions(s), &ag->params, seed_crossover, diag)) !=
            RLT_STATUS_OK ||
        (status = dqn_create(&ag->mutation, n, n + 1, &ag->params, seed_mutation, diag)) != RLT_STATUS_OK)
        return status;
    ag->epsilon = 1.0;
    st->pending = rlt_calloc((size_t)RLT_MAX(st->ga.pop, 1), sizeof *st->pending);
    st->rows = rlt_calloc((size_t)(4 * n), sizeof *st->rows);
    st->q_row = rlt_calloc((size_t)(n + 1), sizeof *st->q_row);
    if (!st->pending || !st->rows || !st->q_row)
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a tuner");
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
    rlt_free(st->rows);
    rlt_free(st->q_row);
    rlt_free(st);
}

static int ga_dqn_next(rlt_tuner *t, int max, rlt_config *out)
{
    ga_dqn_state *st = t->state;
    return rlt_ga_next(t, &st->ga, ga_dqn_make_child, st, max, out);
}

/* Scores of bred children become transitions, in the order given; every
 * score (proposed or not) counts toward the best, which scales later
 * rewards. Configurations the GA did not propose only count as visited. */
static rlt_status ga_dqn_update(rlt_tuner *t, int n, const rlt_config *configs, const double *scores,
                                rlt_diag *diag)
{
    ga_dqn_state *st = t->state;
    for (int i = 0; i < n; i++) {
        double score = clean_score(scores[i]);
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

/* Kept: both DQNs (Q network with Adam's state, target network), epsilon
 * and the learning clocks. Restarted: the population, the replay buffers
 * and the best score, which belong to the workload. */
static rlt_status ga_dqn_save(const rlt_tuner *t, rlt_agent_file *f, rlt_diag *diag)
{
    const ga_dqn_agent *ag = &((const ga_dqn_state *)t->state)->agent;
    rlt_status st;
    if ((st = rlt_agent_file_put_mlp(f, "crossover.q", ag->crossover.q, ag->crossover.adam, diag)) ||
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
    double epsilon = 0, n_transitions = 0, n_learn_steps = 0;
    rlt_status st;
    if ((st = rlt_tuner_agent_check_knobs(f, t->space, false, diag)) ||
        (st = rlt_agent_file_get_mlp(f, "crossover.q", rlt_mlp_get_spec(ag->crossover.q), &q[0], &adam[0], diag)) ||
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

/* Action values use their own scratch: t is not changed. */
rlt_status rlt_tuner_ga_dqn_point_values(const rlt_tuner *t, const rlt_config *p1, const rlt_config *p2,
                                         float *out_q, rlt_diag *diag)
{
    rlt_status status = check_is_ga_dqn(t, diag);
    if (status != RLT_STATUS_OK) return status;
    const ga_dqn_state *st = t->state;
    float pair[2 * RLT_SPACE_MAX_KNOBS];
    gene_row(t->space, p1, pair);
    gene_row(t->space, p2, pair + t->space->n_knobs);
    return rlt_mlp_predict(st->agent.crossover.q, 1, pair, out_q, diag);
}

rlt_status rlt_tuner_ga_dqn_knob_values(const rlt_tuner *t, const rlt_config *c, float *out_q, rlt_diag *diag)
{
    rlt_status status = check_is_ga_dqn(t, diag);
    if (status != RLT_STATUS_OK) return status;
    const ga_dqn_state *st = t->state;
    float gene[RLT_SPACE_MAX_KNOBS];
    gene_row(t->space, c, gene);
    return rlt_mlp_predict(st->agent.mutation.q, 1, gene, out_q, diag);
}
