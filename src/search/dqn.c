/*
 * dqn.c - the "dqn" tuner: ktune's multi-step DQN (docs/tuners.md, "dqn").
 *
 * Walkers move through the space in episodes of `horizon` steps, starting
 * from all-zero, random or median knobs. An action is one move in
 * {-1, 0, +1} per knob, K' = clip(K + A) to each knob's range; the state is
 * the configuration's knob positions in [0, 1] and the step's place in the
 * episode. With N knobs the joint action space has 3^N members, so the
 * Q-network is factored by action branching (BDQ: Tavakoli, Pardo and
 * Kormushev, "Action Branching Architectures for Deep Reinforcement
 * Learning", AAAI 2018): one MLP whose outputs are a state value and 3
 * advantages per knob (the dueling form), Q_k(s, a) = V(s) + A_k(s, a) -
 * mean A_k(s, .). Each knob's move is taken from its own head, epsilon-
 * greedily per knob, and every head is trained towards one shared target,
 * r + gamma * the mean over heads of the target network's Q of the online
 * network's greedy move (BDQ's double-Q mean target), with the Huber loss,
 * Adam and gradient clipping, from a replay buffer.
 *
 * Each batch, every walker steps until it lands on a configuration never
 * visited: that is its proposal, and its transition waits for the score.
 * An episode's start is proposed first when it is new. Steps onto
 * configurations the tuner has scores for (measured, or reported from old
 * records) are answered from that memory and cost no measurement; after
 * `horizon` of them in one batch the walker takes the greedy move with the
 * cheapest single-knob change that reaches a new configuration. A move onto
 * an invalid configuration leaves the walker where it was. Walkers that
 * find nothing new leave their places in the batch to random draws.
 *
 * Rewards are computed when transitions are replayed, from the score
 * memory, so that they follow the best score as it improves: ktune's
 * -min(t, t_timeout) in log time relative to the best (reward_of); an
 * invalid move gets the reward of the configuration stayed on, less a
 * little.
 *
 * Entry points: rlt_tuner_dqn_ops (through rlt_tuner_create),
 * rlt_tuner_dqn_greedy (search/dqn.h).
 */
#include "search/dqn.h"
#include "nn/agent_file.h"

#include "nn/nn.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#define DQN_PENALTY (-1.0f)        /* reward of a failed measurement (the "timeout") */
#define DQN_INVALID_PENALTY 0.05f  /* an invalid move: the reward of staying, less this */
#define DQN_TIME_CAP 1000.0        /* "timeout": times this many times the best time get the penalty */
#define DQN_INVALID (-1.0)         /* the score memory's mark for an invalid configuration */
#define DQN_HUBER_DELTA 1.0        /* the DQN paper's error clipping (PyTorch's SmoothL1Loss) */
#define DQN_MAX_GRAD_NORM 10.0     /* gradient-norm clip */
#define DQN_MAX_WALKERS 256        /* when the walkers follow the batch size */
#define DQN_MAX_TRAIN_STEPS 256    /* gradient steps per update, at most */
#define DQN_PENDING_MAX_AGE 2      /* updates a transition waits for its score before it is dropped */
#define DQN_DRAW_TRIES 256         /* rlt_tuner_draw_new's tries for the random filler */

typedef enum dqn_reset {
    DQN_RESET_ZEROS,
    DQN_RESET_RANDOM,
    DQN_RESET_MEDIAN
} dqn_reset;

static const char *const reset_names[] = {"zeros", "random", "median"};

/* One step of a walker. Its reward is computed when it is replayed, from
 * the score memory, so that it follows the best score as it improves. */
typedef struct dqn_transition {
    rlt_config from, to;               /* to == from after an invalid move */
    uint64_t index_to;                 /* rlt_space_index_of(to) */
    int8_t moves[RLT_SPACE_MAX_KNOBS]; /* -1, 0, +1 per knob */
    int16_t step;                      /* of `from` in its episode, 0 .. horizon - 1 */
    bool is_invalid;                   /* the move led to an invalid configuration: stayed */
} dqn_transition;

/* A transition whose configuration reached has not been scored yet. */
typedef struct dqn_pending {
    dqn_transition tr;
    int age; /* updates it has waited through */
} dqn_pending;

typedef struct dqn_walker {
    rlt_config at;
    int step; /* steps taken in the current episode */
} dqn_walker;

/* All of the agent's state: what a later save / load has to keep. */
typedef struct dqn_agent {
    /* hyper-parameters, defaults resolved */
    int horizon, hidden, minibatch, replay_cap, target_every, eps_decay, n_walkers_fixed, train_steps;
    double gamma, lr, eps_end;
    dqn_reset reset;
    /* the networks */
    int n_knobs, n_inputs, n_outputs, n_net_outputs; /* N knob positions + the step; 3 N Q-values; 1 + 3 N */
    rlt_mlp *q, *q_target;
    rlt_adam *adam;
    /* experience */
    dqn_transition *replay; /* ring of replay_cap */
    int n_replay, replay_next;
    dqn_pending *pending;
    int n_pending, cap_pending;
    rlt_score_map scores; /* by configuration index: GFLOP/s, 0 for failures, DQN_INVALID */
    double best_score;
    /* walkers */
    dqn_walker *walkers;
    int n_walkers, next_walker;
    uint64_t scan_cursor; /* index order once random draws run dry */
    /* counters */
    int64_t n_proposed;        /* proposals made: epsilon's clock */
    int64_t n_train_steps;     /* gradient steps taken */
    int64_t n_new_transitions; /* replayed transitions added since the last training */
    /* scratch for one minibatch */
    float *x, *x_next, *net_out, *dnet, *q_out, *q_next, *q_next_target, *targets, *dq, *y;
    int *cols;
    bool *is_last;
} dqn_agent;

/* ---- states, actions, rewards ------------------------------------------- */

/* The network's input for configuration c on step `step`: each knob's
 * position in [0, 1] (as the knob features of docs/features.md), then
 * step / horizon. */
static void encode(const dqn_agent *a, const rlt_space *s, const rlt_config *c, int step, float *x)
{
    for (int k = 0; k < a->n_knobs; k++) {
        int n = s->knobs[k].n_choices;
        x[k] = n > 1 ? (float)c->choice[k] / (float)(n - 1) : 0.0f;
    }
    x[a->n_knobs] = (float)step / (float)a->horizon;
}

/* ktune's reward -min(t, t_timeout), in units of the best time so far and
 * on a log scale: -min(log(t / t_best), log T) / log T with T =
 * DQN_TIME_CAP, which is log(score / best) / log T clipped to [-1, 0]
 * (t = flops / score). A failure is the timeout, -1. */
static float reward_of(const dqn_agent *a, double score)
{
    if (!(score > 0)) return DQN_PENALTY;
    if (!(a->best_score > 0)) return 0.0f;
    double ratio = RLT_MAX(score / a->best_score, 1.0 / DQN_TIME_CAP);
    return (float)(log(ratio) / log(DQN_TIME_CAP));
}

/* A transition's reward: that of the configuration reached, or after an
 * invalid move that of the configuration stayed on (-1 if it was never
 * measured) less DQN_INVALID_PENALTY. */
static float transition_reward(const dqn_agent *a, const dqn_transition *tr)
{
    double score = 0;
    bool is_scored = rlt_score_map_get(&a->scores, tr->index_to, &score) && score != DQN_INVALID;
    float r = is_scored ? reward_of(a, score) : DQN_PENALTY;
    return tr->is_invalid ? r - DQN_INVALID_PENALTY : r;
}

/* The index (0, 1, 2 for -1, 0, +1) of the largest of a head's 3 values. */
static int head_argmax(const float *q)
{
    int best = 0;
    for (int j = 1; j < 3; j++)
        if (q[j] > q[best]) best = j;
    return best;
}

static void apply_moves(const rlt_space *s, const rlt_config *c, const int8_t *moves, rlt_config *out)
{
    *out = *c;
    for (int k = 0; k < s->n_knobs; k++) {
        int v = c->choice[k] + moves[k];
        out->choice[k] = (int16_t)RLT_MIN(RLT_MAX(v, 0), s->knobs[k].n_choices - 1);
    }
}

static double epsilon(const dqn_agent *a)
{
    double e = 1.0 - (1.0 - a->eps_end) * (double)a->n_proposed / (double)a->eps_decay;
    return RLT_MAX(e, a->eps_end);
}

/* ---- experience --------------------------------------------------------- */

static void replay_push(dqn_agent *a, const dqn_transition *tr)
{
    a->replay[a->replay_next] = *tr;
    a->replay_next = (a->replay_next + 1) % a->replay_cap;
    if (a->n_replay < a->replay_cap) a->n_replay++;
    a->n_new_transitions++;
}

/* Keeps a transition until its configuration is scored; dropped when out
 * of memory (it is only experience). */
static void pending_push(dqn_agent *a, const dqn_transition *tr)
{
    if (a->n_pending == a->cap_pending) {
        int cap = a->cap_pending ? 2 * a->cap_pending : 64;
        dqn_pending *p = rlt_realloc(a->pending, sizeof *p * (size_t)cap);
        if (!p) return;
        a->pending = p;
        a->cap_pending = cap;
    }
    a->pending[a->n_pending++] = (dqn_pending){.tr = *tr};
}

/* ---- walking ------------------------------------------------------------ */

static void walker_reset(rlt_tuner *t, dqn_walker *w)
{
    const rlt_space *s = t->space;
    dqn_agent *a = t->state;
    memset(&w->at, 0, sizeof w->at);
    w->step = 0;
    switch (a->reset) {
    case DQN_RESET_ZEROS:
        break;
    case DQN_RESET_MEDIAN:
        for (int k = 0; k < s->n_knobs; k++) w->at.choice[k] = (int16_t)(s->knobs[k].n_choices / 2);
        break;
    case DQN_RESET_RANDOM:
        /* a valid start when one is found quickly (an invalid one is only
         * a position to move from) */
        for (int i = 0; i < 64; i++) {
            rlt_space_random(s, &t->rng, &w->at);
            if (rlt_space_is_valid(s, &w->at)) break;
        }
        break;
    }
}

/* Q-values from rows of the network's outputs, BDQ's dueling form: the
 * outputs are a state value V and 3 advantages per knob, and
 * Q_k(a) = V + A_k(a) - mean_a A_k(a). */
static void dueling_q(const dqn_agent *a, int n_rows, const float *net, float *q)
{
    for (int i = 0; i < n_rows; i++) {
        const float *o = net + (size_t)i * (size_t)a->n_net_outputs;
        float *qi = q + (size_t)i * (size_t)a->n_outputs;
        for (int k = 0; k < a->n_knobs; k++) {
            const float *adv = o + 1 + 3 * k;
            float mean = (adv[0] + adv[1] + adv[2]) / 3.0f;
            for (int j = 0; j < 3; j++) qi[3 * k + j] = o[0] + adv[j] - mean;
        }
    }
}

/* dL/d(network outputs) from dL/dQ, through dueling_q. */
static void dueling_backward(const dqn_agent *a, int n_rows, const float *dq, float *dnet)
{
    for (int i = 0; i < n_rows; i++) {
        const float *dqi = dq + (size_t)i * (size_t)a->n_outputs;
        float *d = dnet + (size_t)i * (size_t)a->n_net_outputs;
        float dv = 0;
        for (int k = 0; k < a->n_knobs; k++) {
            const float *g = dqi + 3 * k;
            float sum = g[0] + g[1] + g[2];
            dv += sum;
            for (int j = 0; j < 3; j++) d[1 + 3 * k + j] = g[j] - sum / 3.0f;
        }
        d[0] = dv;
    }
}

/* Q-values (3 per knob) of configuration c on step `step`. */
static rlt_status q_values(const rlt_tuner *t, const rlt_config *c, int step, float *out, rlt_diag *diag)
{
    const dqn_agent *a = t->state;
    float x[RLT_SPACE_MAX_KNOBS + 1], net[1 + 3 * RLT_SPACE_MAX_KNOBS];
    encode(a, t->space, c, step, x);
    rlt_status st = rlt_mlp_predict(a->q, 1, x, net, diag);
    if (st == RLT_STATUS_OK) dueling_q(a, 1, net, out);
    return st;
}

/* Is `c` (index `index`) valid? Remembers invalid ones in the score
 * memory and the visited set, so each is checked once. */
static bool check_valid(rlt_tuner *t, const rlt_config *c, uint64_t index)
{
    dqn_agent *a = t->state;
    if (rlt_space_is_valid(t->space, c)) return true;
    rlt_score_map_put(&a->scores, index, DQN_INVALID);
    rlt_visited_add(&t->visited, index);
    return false;
}

/* The greedy moves, or the greedy moves with the one knob changed whose
 * change costs the least Q-value, that reach a valid configuration never
 * visited: into moves and next. False when none does. */
static bool force_new(rlt_tuner *t, const dqn_walker *w, const float *q, int8_t *moves, rlt_config *next)
{
    const rlt_space *s = t->space;
    dqn_agent *a = t->state;
    int n = a->n_knobs;
    int8_t greedy[RLT_SPACE_MAX_KNOBS];
    for (int k = 0; k < n; k++) greedy[k] = (int8_t)(head_argmax(q + 3 * k) - 1);
    /* candidates: the greedy moves (-1), then each (knob, other move) by
     * increasing loss of Q-value */
    int cand_knob[1 + 2 * RLT_SPACE_MAX_KNOBS], cand_move[1 + 2 * RLT_SPACE_MAX_KNOBS];
    float cand_cost[1 + 2 * RLT_SPACE_MAX_KNOBS];
    cand_knob[0] = -1;
    cand_move[0] = 0;
    cand_cost[0] = -INFINITY;
    int n_cand = 1;
    for (int k = 0; k < n; k++)
        for (int m = -1; m <= 1; m++) {
            if (m == greedy[k]) continue;
            float cost = q[3 * k + greedy[k] + 1] - q[3 * k + m + 1];
            int pos = n_cand++;
            while (pos > 0 && cand_cost[pos - 1] > cost) {
                cand_knob[pos] = cand_knob[pos - 1];
                cand_move[pos] = cand_move[pos - 1];
                cand_cost[pos] = cand_cost[pos - 1];
                pos--;
            }
            cand_knob[pos] = k;
            cand_move[pos] = m;
            cand_cost[pos] = cost;
        }
    for (int i = 0; i < n_cand; i++) {
        memcpy(moves, greedy, sizeof greedy);
        if (cand_knob[i] >= 0) moves[cand_knob[i]] = (int8_t)cand_move[i];
        apply_moves(s, &w->at, moves, next);
        uint64_t index = rlt_space_index_of(s, next);
        if (rlt_visited_has(&t->visited, index)) continue;
        if (check_valid(t, next, index)) return true;
    }
    return false;
}

/* Walks `w` until it proposes a configuration never visited (true, into
 * *out) or gives up for this batch (false). An episode's start is proposed
 * first when it is new. Steps onto known configurations are answered from
 * memory; steps onto visited but unscored ones (proposed in this batch, or
 * not reported) leave their transitions pending. */
static bool walker_advance(rlt_tuner *t, dqn_walker *w, rlt_config *out)
{
    const rlt_space *s = t->space;
    dqn_agent *a = t->state;
    double eps = epsilon(a);
    for (int n_free = 0;; n_free++) {
        if (w->step >= a->horizon) walker_reset(t, w);
        if (w->step == 0) {
            uint64_t index = rlt_space_index_of(s, &w->at);
            if (!rlt_visited_has(&t->visited, index) && check_valid(t, &w->at, index)) {
                rlt_visited_add(&t->visited, index);
                *out = w->at;
                return true;
            }
        }
        float q[3 * RLT_SPACE_MAX_KNOBS];
        bool has_q = q_values(t, &w->at, w->step, q, NULL) == RLT_STATUS_OK;
        dqn_transition tr = {.from = w->at, .step = (int16_t)w->step};
        for (int k = 0; k < a->n_knobs; k++) {
            bool is_random = !has_q || rlt_rng_uniform(&t->rng) < eps;
            int j = is_random ? (int)rlt_rng_below(&t->rng, 3) : head_argmax(q + 3 * k);
            tr.moves[k] = (int8_t)(j - 1);
        }
        apply_moves(s, &w->at, tr.moves, &tr.to);
        if (n_free >= a->horizon) {
            /* a whole episode's worth of free steps: leave the known region */
            if (!has_q || !force_new(t, w, q, tr.moves, &tr.to)) {
                walker_reset(t, w);
                return false;
            }
        }
        w->step++;
        tr.index_to = rlt_space_index_of(s, &tr.to);
        double score;
        bool is_known = rlt_score_map_get(&a->scores, tr.index_to, &score);
        if ((is_known && score == DQN_INVALID) || (!is_known && !check_valid(t, &tr.to, tr.index_to))) {
            tr.to = tr.from; /* stay */
            tr.index_to = rlt_space_index_of(s, &tr.from);
            tr.is_invalid = true;
            replay_push(a, &tr);
            continue;
        }
        w->at = tr.to;
        if (is_known) {
            replay_push(a, &tr);
            continue;
        }
        pending_push(a, &tr);
        if (rlt_visited_add(&t->visited, tr.index_to)) {
            *out = tr.to;
            return true;
        }
        /* visited but not scored yet: free, its reward comes with the score */
    }
}

/* Makes walkers up to `n` (a fixed count when dqn_walkers was given). */
static bool grow_walkers(rlt_tuner *t, int n)
{
    dqn_agent *a = t->state;
    if (a->n_walkers_fixed > 0) n = a->n_walkers_fixed;
    n = RLT_MIN(n, DQN_MAX_WALKERS);
    if (n <= a->n_walkers) return true;
    dqn_walker *w = rlt_realloc(a->walkers, sizeof *w * (size_t)n);
    if (!w) return false;
    a->walkers = w;
    for (int i = a->n_walkers; i < n; i++) walker_reset(t, &w[i]);
    a->n_walkers = n;
    return true;
}

static int dqn_next(rlt_tuner *t, int max, rlt_config *out)
{
    dqn_agent *a = t->state;
    int n = 0;
    if (grow_walkers(t, max) && a->n_walkers > 0) {
        int i = 0;
        for (; i < a->n_walkers && n < max; i++) {
            dqn_walker *w = &a->walkers[(a->next_walker + i) % a->n_walkers];
            if (walker_advance(t, w, &out[n])) n++;
        }
        a->next_walker = (a->next_walker + i) % a->n_walkers;
    }
    /* walkers that found nothing new leave their places to random draws */
    while (n < max &&
           (rlt_tuner_draw_new(t, DQN_DRAW_TRIES, &out[n]) || rlt_tuner_scan_new(t, &a->scan_cursor, &out[n])))
        n++;
    a->n_proposed += n;
    return n;
}

/* ---- learning ----------------------------------------------------------- */

/* One gradient step on a minibatch drawn uniformly from the replay buffer:
 * y = r                                            on an episode's last step,
 *     r + gamma (1/N) sum_k Q'_k(s', argmax Q_k(s'))  otherwise,
 * each head's Q-value of its move pulled towards y by the Huber loss. */
static rlt_status train_step(rlt_tuner *t, rlt_diag *diag)
{
    dqn_agent *a = t->state;
    const rlt_space *s = t->space;
    int b = a->minibatch, n = a->n_knobs;
    for (int i = 0; i < b; i++) {
        const dqn_transition *tr = &a->replay[rlt_rng_below(&t->rng, (uint64_t)a->n_replay)];
        encode(a, s, &tr->from, tr->step, a->x + (size_t)i * (size_t)a->n_inputs);
        encode(a, s, &tr->to, tr->step + 1, a->x_next + (size_t)i * (size_t)a->n_inputs);
        a->y[i] = transition_reward(a, tr);
        a->is_last[i] = tr->step + 1 >= a->horizon;
        for (int k = 0; k < n; k++) a->cols[i * n + k] = tr->moves[k] + 1;
    }
    rlt_status st;
    if ((st = rlt_mlp_predict(a->q, b, a->x_next, a->net_out, diag)) != RLT_STATUS_OK) return st;
    dueling_q(a, b, a->net_out, a->q_next);
    if ((st = rlt_mlp_predict(a->q_target, b, a->x_next, a->net_out, diag)) != RLT_STATUS_OK) return st;
    dueling_q(a, b, a->net_out, a->q_next_target);
    for (int i = 0; i < b; i++) {
        double y = a->y[i];
        if (!a->is_last[i]) {
            double sum = 0;
            const float *qn = a->q_next + (size_t)i * (size_t)a->n_outputs;
            const float *qt = a->q_next_target + (size_t)i * (size_t)a->n_outputs;
            for (int k = 0; k < n; k++) sum += qt[3 * k + head_argmax(qn + 3 * k)];
            y += a->gamma * sum / n;
        }
        for (int k = 0; k < n; k++) a->targets[i * n + k] = (float)y;
    }
    if ((st = rlt_mlp_forward(a->q, b, a->x, a->net_out, diag)) != RLT_STATUS_OK) return st;
    dueling_q(a, b, a->net_out, a->q_out);
    /* the [b x 3N] Q-values read as b N rows of one head's 3 values */
    double loss;
    if ((st = rlt_nn_loss_huber_picked(b * n, 3, a->q_out, a->cols, a->targets, DQN_HUBER_DELTA, &loss, a->dq,
                                       diag)) != RLT_STATUS_OK)
        return st;
    rlt_mlp_zero_grad(a->q);
    dueling_backward(a, b, a->dq, a->dnet);
    if ((st = rlt_mlp_backward(a->q, b, a->dnet, NULL, diag)) != RLT_STATUS_OK) return st;
    if ((st = rlt_mlp_grad_clip(a->q, DQN_MAX_GRAD_NORM, NULL, diag)) != RLT_STATUS_OK) return st;
    if ((st = rlt_adam_step(a->adam, a->q, diag)) != RLT_STATUS_OK) return st;
    a->n_train_steps++;
    if (a->n_train_steps % a->target_every == 0) return rlt_mlp_copy_weights(a->q_target, a->q, diag);
    return RLT_STATUS_OK;
}

static rlt_status dqn_update(rlt_tuner *t, int n, const rlt_config *configs, const double *scores, rlt_diag *diag)
{
    dqn_agent *a = t->state;
    for (int i = 0; i < n; i++) {
        double score = isfinite(scores[i]) && scores[i] > 0 ? scores[i] : 0.0;
        if (!rlt_score_map_put(&a->scores, rlt_space_index_of(t->space, &configs[i]), score))
            return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory keeping the dqn tuner's scores");
        a->best_score = RLT_MAX(a->best_score, score);
    }
    /* transitions whose configuration is now scored go to the replay */
    int kept = 0;
    for (int i = 0; i < a->n_pending; i++) {
        dqn_pending *p = &a->pending[i];
        double score;
        if (rlt_score_map_get(&a->scores, p->tr.index_to, &score)) {
            replay_push(a, &p->tr);
        } else if (++p->age <= DQN_PENDING_MAX_AGE) {
            a->pending[kept++] = *p;
        }
    }
    a->n_pending = kept;
    if (a->n_replay < a->minibatch) return RLT_STATUS_OK;
    int64_t steps = RLT_MIN(a->n_new_transitions * a->train_steps, (int64_t)DQN_MAX_TRAIN_STEPS);
    a->n_new_transitions = 0;
    for (int64_t i = 0; i < steps; i++) {
        rlt_status st = train_step(t, diag);
        if (st != RLT_STATUS_OK) {
            rlt_diag_prefix(diag, "dqn tuner, training step %lld", (long long)a->n_train_steps + 1);
            return st;
        }
    }
    return RLT_STATUS_OK;
}

/* ---- creation ----------------------------------------------------------- */

static rlt_status dqn_init(rlt_tuner *t, rlt_diag *diag)
{
    /* BLAS worker threads must not compete with the measuring child for the
     * 2 cores; the networks are small enough for one thread. */
    openblas_set_num_threads(1);
    const rlt_space *s = t->space;
    const rlt_tuner_opts *o = &t->opts;
    dqn_agent *a = rlt_calloc(1, sizeof *a);
    if (!a) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a tuner");
    t->state = a;
    a->horizon = o->dqn_horizon > 0 ? o->dqn_horizon : 20;
    a->gamma = o->dqn_gamma > 0 ? o->dqn_gamma : 0.9;
    a->lr = o->dqn_lr > 0 ? o->dqn_lr : 1e-3;
    a->hidden = o->dqn_hidden > 0 ? o->dqn_hidden : 64;
    a->minibatch = o->dqn_minibatch > 0 ? o->dqn_minibatch : 32;
    a->replay_cap = o->dqn_replay > 0 ? o->dqn_replay : 10000;
    a->target_every = o->dqn_target_every > 0 ? o->dqn_target_every : 100;
    a->eps_end = o->dqn_eps_end > 0 ? o->dqn_eps_end : 0.05;
    a->eps_decay = o->dqn_eps_decay > 0 ? o->dqn_eps_decay : 300;
    a->n_walkers_fixed = o->dqn_walkers > 0 ? o->dqn_walkers : 0;
    a->train_steps = o->dqn_train_steps > 0 ? o->dqn_train_steps : 2;
    a->reset = DQN_RESET_RANDOM;
    if (o->dqn_reset) {
        bool is_known = false;
        for (int r = 0; r < (int)RLT_ARRAY_LEN(reset_names); r++)
            if (strcmp(o->dqn_reset, reset_names[r]) == 0) {
                a->reset = (dqn_reset)r;
                is_known = true;
            }
        if (!is_known)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "dqn tuner: unknown episode reset '%s' (accepted: zeros, random, median)", o->dqn_reset);
    }
    if (a->horizon > 10000 || a->gamma >= 1.0 || a->eps_end > 1.0 || a->minibatch > 4096)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "dqn tuner: horizon %d, gamma %g, eps_end %g, minibatch %d out of range (accepted: horizon "
                        "1..10000, gamma in (0, 1), eps_end in (0, 1], minibatch 1..4096)",
                        a->horizon, a->gamma, a->eps_end, a->minibatch);
    if (s->n_knobs < 1) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "dqn tuner: the space has no knobs");

    a->n_knobs = s->n_knobs;
    a->n_inputs = s->n_knobs + 1;
    a->n_outputs = 3 * s->n_knobs;
    a->n_net_outputs = 1 + a->n_outputs;
    rlt_mlp_spec spec = {.n_inputs = a->n_inputs,
                         .n_layers = 3,
                         .layers = {{a->hidden, RLT_NN_ACT_RELU},
                                    {a->hidden, RLT_NN_ACT_RELU},
                                    {a->n_net_outputs, RLT_NN_ACT_NONE}}};
    uint64_t net_seed = rlt_rng_u64(&t->rng);
    rlt_status st;
    if ((st = rlt_mlp_create(&spec, net_seed, &a->q, diag)) != RLT_STATUS_OK) return st;
    if ((st = rlt_mlp_create(&spec, net_seed, &a->q_target, diag)) != RLT_STATUS_OK) return st;
    rlt_adam_opts ao = {.lr = a->lr};
    if ((st = rlt_adam_create(&ao, a->q, &a->adam, diag)) != RLT_STATUS_OK) return st;

    size_t b = (size_t)a->minibatch;
    a->replay = rlt_calloc((size_t)a->replay_cap, sizeof *a->replay);
    a->x = rlt_calloc(b * (size_t)a->n_inputs, sizeof *a->x);
    a->x_next = rlt_calloc(b * (size_t)a->n_inputs, sizeof *a->x_next);
    a->net_out = rlt_calloc(b * (size_t)a->n_net_outputs, sizeof *a->net_out);
    a->dnet = rlt_calloc(b * (size_t)a->n_net_outputs, sizeof *a->dnet);
    a->q_out = rlt_calloc(b * (size_t)a->n_outputs, sizeof *a->q_out);
    a->q_next = rlt_calloc(b * (size_t)a->n_outputs, sizeof *a->q_next);
    a->q_next_target = rlt_calloc(b * (size_t)a->n_outputs, sizeof *a->q_next_target);
    a->dq = rlt_calloc(b * (size_t)a->n_outputs, sizeof *a->dq);
    a->targets = rlt_calloc(b * (size_t)a->n_knobs, sizeof *a->targets);
    a->cols = rlt_calloc(b * (size_t)a->n_knobs, sizeof *a->cols);
    a->y = rlt_calloc(b, sizeof *a->y);
    a->is_last = rlt_calloc(b, sizeof *a->is_last);
    if (!a->replay || !a->x || !a->x_next || !a->net_out || !a->dnet || !a->q_out || !a->q_next ||
        !a->q_next_target || !a->dq || !a->targets || !a->cols || !a->y || !a->is_last)
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a tuner");
    if (a->n_walkers_fixed > 0 && !grow_walkers(t, a->n_walkers_fixed))
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a tuner");
    return RLT_STATUS_OK;
}

static void dqn_fini(rlt_tuner *t)
{
    dqn_agent *a = t->state;
    if (!a) return;
    rlt_mlp_destroy(a->q);
    rlt_mlp_destroy(a->q_target);
    rlt_adam_destroy(a->adam);
    rlt_free(a->replay);
    rlt_free(a->pending);
    rlt_score_map_free(&a->scores);
    rlt_free(a->walkers);
    float *arrays[] = {a->x,      a->x_next,        a->net_out, a->dnet, a->q_out,
                       a->q_next, a->q_next_target, a->targets, a->dq,   a->y};
    for (size_t i = 0; i < RLT_ARRAY_LEN(arrays); i++) rlt_free(arrays[i]);
    rlt_free(a->cols);
    rlt_free(a->is_last);
    rlt_free(a);
}

/* ---- saved agents ------------------------------------------------------- */

/* Kept: the Q network with Adam's state, the target network, and the two
 * clocks (exploration's and the target copies'). Restarted: the replay
 * buffer, the walkers and the scores, which belong to the workload. */
static rlt_status dqn_save(const rlt_tuner *t, rlt_agent_file *f, rlt_diag *diag)
{
    const dqn_agent *a = t->state;
    rlt_status st;
    if ((st = rlt_agent_file_put_mlp(f, "q", a->q, a->adam, diag)) != RLT_STATUS_OK ||
        (st = rlt_agent_file_put_mlp(f, "q_target", a->q_target, NULL, diag)) != RLT_STATUS_OK ||
        (st = rlt_agent_file_put_real(f, "n_proposed", (double)a->n_proposed, diag)) != RLT_STATUS_OK)
        return st;
    return rlt_agent_file_put_real(f, "n_train_steps", (double)a->n_train_steps, diag);
}

static rlt_status dqn_load(rlt_tuner *t, const rlt_agent_file *f, rlt_diag *diag)
{
    dqn_agent *a = t->state;
    rlt_mlp *q = NULL, *q_target = NULL;
    rlt_adam *adam = NULL;
    double n_proposed = 0, n_train_steps = 0;
    const rlt_mlp_spec *spec = rlt_mlp_get_spec(a->q);
    rlt_status st;
    if ((st = rlt_tuner_agent_check_knobs(f, t->space, false, diag)) != RLT_STATUS_OK ||
        (st = rlt_agent_file_get_mlp(f, "q", spec, &q, &adam, diag)) != RLT_STATUS_OK ||
        (st = rlt_agent_file_get_mlp(f, "q_target", spec, &q_target, NULL, diag)) != RLT_STATUS_OK ||
        (st = rlt_agent_file_get_real(f, "n_proposed", &n_proposed, diag)) != RLT_STATUS_OK ||
        (st = rlt_agent_file_get_real(f, "n_train_steps", &n_train_steps, diag)) != RLT_STATUS_OK)
        goto fail;
    if (!adam || !(n_proposed >= 0 && n_proposed < 1e15) || !(n_train_steps >= 0 && n_train_steps < 1e15)) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                      "agent file '%s': the dqn agent's optimiser or counters are missing or out of range",
                      rlt_agent_file_source(f));
        goto fail;
    }
    rlt_mlp_destroy(a->q);
    rlt_mlp_destroy(a->q_target);
    rlt_adam_destroy(a->adam);
    a->q = q;
    a->q_target = q_target;
    a->adam = adam;
    a->n_proposed = (int64_t)n_proposed;
    a->n_train_steps = (int64_t)n_train_steps;
    return RLT_STATUS_OK;
fail:
    rlt_mlp_destroy(q);
    rlt_mlp_destroy(q_target);
    rlt_adam_destroy(adam);
    return st;
}

const rlt_tuner_ops rlt_tuner_dqn_ops = {.name = "dqn",
                                         .flags = RLT_TUNER_HAS_AGENT,
                                         .init = dqn_init,
                                         .next_batch = dqn_next,
                                         .update = dqn_update,
                                         .fini = dqn_fini,
                                         .save = dqn_save,
                                         .load = dqn_load};

rlt_status rlt_tuner_dqn_greedy(const rlt_tuner *t, const rlt_config *c, int step, int *out_moves, rlt_diag *diag)
{
    if (t->ops != &rlt_tuner_dqn_ops)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "tuner '%s' is not a dqn tuner", t->ops->name);
    const dqn_agent *a = t->state;
    if (step < 0 || step >= a->horizon)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "step %d outside the episode (0 .. %d)", step,
                        a->horizon - 1);
    float q[3 * RLT_SPACE_MAX_KNOBS];
    rlt_status st = q_values(t, c, step, q, diag);
    if (st != RLT_STATUS_OK) return st;
    for (int k = 0; k < a->n_knobs; k++) out_moves[k] = head_argmax(q + 3 * k) - 1;
    return RLT_STATUS_OK;
}
