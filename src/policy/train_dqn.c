/*
 * train_dqn.c - double DQN for `rltune train` (train.h; docs/training.md):
 * the policy's network is the online Q network (observation -> one Q-value
 * per action, in the env's reward units), with a target network copied
 * from it every dqn_target_every updates. Actions are epsilon-greedy over
 * the legal actions only (epsilon falls linearly from 1 to dqn_eps_end over
 * the first dqn_eps_fraction of the run's steps). Transitions go to a
 * replay ring; after dqn_learn_start env steps every env step buys
 * dqn_updates_per_step minibatch updates: target
 *     y = r                                         after stop (terminal),
 *     y = r + gamma Q_target(s', argmax_legal Q(s'))  otherwise (an episode
 *                                                     cut by the step limit
 *                                                     bootstraps too),
 * the Huber loss (delta 1) of Q(s, a) against y, gradient-norm clipping at
 * 10 and Adam.
 *
 * Checkpoint sections: dqn_target (the target network), dqn_state (the
 * update credit) and dqn_replay (the ring, compact; the newest transitions
 * that fit the budget).
 *
 * Entry point: train_algo_dqn (train_internal.h).
 */
#include "policy/train_internal.h"

#include <math.h>
#include <string.h>

#define DQN_HUBER_DELTA 1.0   /* rewards are GFLOP/s gains over the peak: within [-1, 1], as the DQN paper's */
#define DQN_MAX_GRAD_NORM 10.0
#define DQN_FLAG_TERMINAL 1

#define SECTION_TARGET "dqn_target"
#define SECTION_STATE "dqn_state"
#define SECTION_REPLAY "dqn_replay"

typedef struct dqn_state {
    rlt_mlp *target; /* owned */
    /* the replay ring: n stored of cap, the next written at `next` */
    int cap, n, next;
    float *obs, *obs_next; /* [cap x RLT_ENV_OBS_LEN] */
    uint8_t *action, *flags;
    float *reward;
    double credit; /* gradient updates owed */
    /* scratch: acting on up to n_envs rows, learning on a minibatch */
    float *act_obs, *act_scores;
    double *act_u;
    float *x, *xn, *q, *qn, *qt, *dq, *y;
    int *cols;
    bool *is_terminal;
} dqn_state;

static double epsilon(const train_run *r)
{
    double span = r->cfg.dqn_eps_fraction * (double)r->opts->n_steps;
    double e = 1.0 - (1.0 - r->cfg.dqn_eps_end) * (double)r->n_steps / RLT_MAX(span, 1.0);
    return RLT_MAX(e, r->cfg.dqn_eps_end);
}

static rlt_status dqn_init(train_run *r, rlt_diag *diag)
{
    dqn_state *s = rlt_calloc(1, sizeof *s);
    if (!s) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating the dqn trainer");
    r->algo_state = s;
    const rlt_mlp_spec *spec = rlt_mlp_get_spec(r->policy->net);
    rlt_status st = rlt_mlp_create(spec, 0, &s->target, diag);
    if (st == RLT_STATUS_OK) st = rlt_mlp_copy_weights(s->target, r->policy->net, diag);
    if (st != RLT_STATUS_OK) return st;
    size_t cap = (size_t)r->cfg.dqn_buffer, b = (size_t)r->cfg.dqn_batch, e = (size_t)r->cfg.n_envs;
    size_t obs = RLT_ENV_OBS_LEN, na = RLT_ENV_N_ACTIONS;
    s->cap = (int)cap;
    bool is_ok = true;
    is_ok &= (s->obs = rlt_malloc(cap * obs * sizeof(float))) != NULL;
    is_ok &= (s->obs_next = rlt_malloc(cap * obs * sizeof(float))) != NULL;
    is_ok &= (s->action = rlt_calloc(cap, 1)) != NULL;
    is_ok &= (s->flags = rlt_calloc(cap, 1)) != NULL;
    is_ok &= (s->reward = rlt_calloc(cap, sizeof(float))) != NULL;
    is_ok &= (s->act_obs = rlt_calloc(e * obs, sizeof(float))) != NULL;
    is_ok &= (s->act_scores = rlt_calloc(e * na, sizeof(float))) != NULL;
    is_ok &= (s->act_u = rlt_calloc(e, sizeof(double))) != NULL;
    is_ok &= (s->x = rlt_calloc(b * obs, sizeof(float))) != NULL;
    is_ok &= (s->xn = rlt_calloc(b * obs, sizeof(float))) != NULL;
    float **per_q[] = {&s->q, &s->qn, &s->qt, &s->dq};
    for (size_t i = 0; i < RLT_ARRAY_LEN(per_q); i++) is_ok &= (*per_q[i] = rlt_calloc(b * na, sizeof(float))) != NULL;
    is_ok &= (s->y = rlt_calloc(b, sizeof(float))) != NULL;
    is_ok &= (s->cols = rlt_calloc(b, sizeof(int))) != NULL;
    is_ok &= (s->is_terminal = rlt_calloc(b, sizeof(bool))) != NULL;
    if (!is_ok)
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY,
                        "out of memory for a replay buffer of %d transitions (%.0f MiB)", s->cap,
                        (double)cap * obs * 8 / (1 << 20));
    return RLT_STATUS_OK;
}

static void dqn_free(train_run *r)
{
    dqn_state *s = r->algo_state;
    if (!s) return;
    rlt_mlp_destroy(s->target);
    void *arrays[] = {s->obs, s->obs_next, s->action, s->flags, s->reward, s->act_obs, s->act_scores, s->act_u,
                      s->x,   s->xn,       s->q,      s->qn,    s->qt,     s->dq,      s->y,          s->cols,
                      s->is_terminal};
    for (size_t i = 0; i < RLT_ARRAY_LEN(arrays); i++) rlt_free(arrays[i]);
    rlt_free(s);
    r->algo_state = NULL;
}

/* Epsilon-greedy over the legal actions. Every slot draws its uniform
 * first, in slot order; the network is asked only when a slot acts
 * greedily; random picks are drawn after, in slot order. */
static rlt_status dqn_act(train_run *r, int n, int *actions, rlt_diag *diag)
{
    dqn_state *s = r->algo_state;
    double eps = epsilon(r);
    bool is_any_greedy = false;
    for (int i = 0; i < n; i++) {
        s->act_u[i] = rlt_rng_uniform(&r->rng);
        is_any_greedy |= s->act_u[i] >= eps;
    }
    if (is_any_greedy) {
        for (int i = 0; i < n; i++)
            memcpy(s->act_obs + (size_t)i * RLT_ENV_OBS_LEN, r->slots[i].obs, sizeof r->slots[i].obs);
        rlt_status st = rlt_policy_scores(r->policy, n, s->act_obs, s->act_scores, diag);
        if (st != RLT_STATUS_OK) return st;
    }
    for (int i = 0; i < n; i++) {
        if (s->act_u[i] >= eps) {
            actions[i] = rlt_policy_best_action(s->act_scores + (size_t)i * RLT_ENV_N_ACTIONS);
            continue;
        }
        bool mask[RLT_ENV_N_ACTIONS];
        int n_legal = train_obs_mask(r->slots[i].obs, mask);
        int k = n_legal > 0 ? (int)rlt_rng_below(&r->rng, (uint64_t)n_legal) : 0;
        actions[i] = RLT_ENV_ACTION_STOP;
        for (int a = 0; a < RLT_ENV_N_ACTIONS; a++)
            if (mask[a] && k-- == 0) {
                actions[i] = a;
                break;
            }
    }
    return RLT_STATUS_OK;
}

static void dqn_record(train_run *r, int i, const float *obs_before, int action, float reward, bool is_terminal,
                       bool is_truncated, const float *obs_after)
{
    (void)i;
    (void)is_truncated;
    dqn_state *s = r->algo_state;
    size_t at = (size_t)s->next;
    memcpy(s->obs + at * RLT_ENV_OBS_LEN, obs_before, RLT_ENV_OBS_LEN * sizeof(float));
    memcpy(s->obs_next + at * RLT_ENV_OBS_LEN, obs_after, RLT_ENV_OBS_LEN * sizeof(float));
    s->action[at] = (uint8_t)action;
    s->flags[at] = is_terminal ? DQN_FLAG_TERMINAL : 0;
    s->reward[at] = reward;
    s->next = (s->next + 1) % s->cap;
    if (s->n < s->cap) s->n++;
}

/* One gradient step on a minibatch drawn uniformly from the ring. */
static rlt_status dqn_update(train_run *r, rlt_diag *diag)
{
    dqn_state *s = r->algo_state;
    int b = r->cfg.dqn_batch;
    size_t row = RLT_ENV_OBS_LEN * sizeof(float);
    for (int i = 0; i < b; i++) {
        size_t j = (size_t)rlt_rng_below(&r->rng, (uint64_t)s->n);
        memcpy(s->x + (size_t)i * RLT_ENV_OBS_LEN, s->obs + j * RLT_ENV_OBS_LEN, row);
        memcpy(s->xn + (size_t)i * RLT_ENV_OBS_LEN, s->obs_next + j * RLT_ENV_OBS_LEN, row);
        s->cols[i] = s->action[j];
        s->y[i] = s->reward[j];
        s->is_terminal[i] = s->flags[j] & DQN_FLAG_TERMINAL;
    }
    rlt_status st;
    if ((st = rlt_policy_scores(r->policy, b, s->xn, s->qn, diag)) != RLT_STATUS_OK ||
        (st = rlt_mlp_predict(s->target, b, s->xn, s->qt, diag)) != RLT_STATUS_OK)
        return st;
    for (int i = 0; i < b; i++) {
        if (s->is_terminal[i]) continue; /* y = r */
        const float *qn = s->qn + (size_t)i * RLT_ENV_N_ACTIONS;
        int a = rlt_policy_best_action(qn);
        if (qn[a] == -INFINITY) continue; /* no legal action: nothing follows */
        s->y[i] = (float)(s->y[i] + r->cfg.gamma * s->qt[(size_t)i * RLT_ENV_N_ACTIONS + (size_t)a]);
    }
    double loss = 0;
    if ((st = rlt_mlp_forward(r->policy->net, b, s->x, s->q, diag)) != RLT_STATUS_OK ||
        (st = rlt_nn_loss_huber_picked(b, RLT_ENV_N_ACTIONS, s->q, s->cols, s->y, DQN_HUBER_DELTA, &loss, s->dq,
                                       diag)) != RLT_STATUS_OK)
        return st;
    rlt_mlp_zero_grad(r->policy->net);
    if ((st = rlt_mlp_backward(r->policy->net, b, s->dq, NULL, diag)) != RLT_STATUS_OK ||
        (st = rlt_mlp_grad_clip(r->policy->net, DQN_MAX_GRAD_NORM, NULL, diag)) != RLT_STATUS_OK ||
        (st = rlt_adam_step(r->policy->net_adam, r->policy->net, diag)) != RLT_STATUS_OK)
        return st;
    r->n_updates++;
    if (r->n_updates % r->cfg.dqn_target_every == 0) return rlt_mlp_copy_weights(s->target, r->policy->net, diag);
    return RLT_STATUS_OK;
}

static rlt_status dqn_learn(train_run *r, int n_new, rlt_diag *diag)
{
    dqn_state *s = r->algo_state;
    if (r->n_steps < r->cfg.dqn_learn_start || s->n < r->cfg.dqn_batch) {
        s->credit = 0;
        return RLT_STATUS_OK;
    }
    s->credit += n_new * r->cfg.dqn_updates_per_step;
    while (s->credit >= 1.0) {
        rlt_status st = dqn_update(r, diag);
        if (st != RLT_STATUS_OK) {
            rlt_diag_prefix(diag, "dqn update %lld", (long long)r->n_updates + 1);
            return st;
        }
        s->credit -= 1.0;
    }
    return RLT_STATUS_OK;
}

static rlt_status dqn_finish(train_run *r, rlt_diag *diag)
{
    (void)r;
    (void)diag;
    return RLT_STATUS_OK;
}

/* ---- checkpoints ---------------------------------------------------------- */

/* dqn_replay: u32 n_stored, u32 next, then n_stored transitions in the
 * ring's order as they are loaded (index 0 first): u8 action, u8 flags,
 * f32 reward, obs, obs_next (train_put_obs). All of the ring when it fits
 * the budget (then a resumed run samples exactly as an unbroken one);
 * otherwise the newest that fit, oldest first, and next = n_stored. */
static rlt_status dqn_save(const train_run *r, rlt_agent_file *f, size_t budget_bytes, rlt_diag *diag)
{
    const dqn_state *s = r->algo_state;
    rlt_status st = rlt_agent_file_put_mlp(f, SECTION_TARGET, s->target, NULL, diag);
    rlt_str b;
    rlt_str_init(&b);
    if (st == RLT_STATUS_OK) {
        train_put_f64(&b, s->credit);
        st = b.has_failed ? rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory writing a checkpoint")
                          : rlt_agent_file_put_bytes(f, SECTION_STATE, b.data, b.len, diag);
    }
    if (st != RLT_STATUS_OK) goto done;
    /* how many of the newest fit */
    size_t total = 8;
    int n_fit = 0;
    for (; n_fit < s->n; n_fit++) {
        size_t j = (size_t)((s->next - 1 - n_fit + 2 * s->cap) % s->cap);
        size_t bytes = 6 + train_obs_bytes(s->obs + j * RLT_ENV_OBS_LEN) +
                       train_obs_bytes(s->obs_next + j * RLT_ENV_OBS_LEN);
        if (total + bytes > budget_bytes) break;
        total += bytes;
    }
    bool is_whole = n_fit == s->n;
    rlt_str_clear(&b);
    train_put_u(&b, (uint64_t)n_fit, 4);
    train_put_u(&b, is_whole ? (uint64_t)s->next : (uint64_t)n_fit % (uint64_t)s->cap, 4);
    for (int k = 0; k < n_fit; k++) {
        size_t j = is_whole ? (size_t)k : (size_t)((s->next - n_fit + k + 2 * s->cap) % s->cap);
        train_put_u(&b, s->action[j], 1);
        train_put_u(&b, s->flags[j], 1);
        train_put_f32(&b, s->reward[j]);
        train_put_obs(&b, s->obs + j * RLT_ENV_OBS_LEN);
        train_put_obs(&b, s->obs_next + j * RLT_ENV_OBS_LEN);
    }
    if (!is_whole)
        rlt_log(RLT_LOG_INFO, "train: checkpoint keeps the newest %d of %d replayed transitions (size limit)", n_fit,
                s->n);
    st = b.has_failed ? rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory writing a checkpoint")
                      : rlt_agent_file_put_bytes(f, SECTION_REPLAY, b.data, b.len, diag);
done:
    rlt_str_free(&b);
    return st;
}

static rlt_status dqn_load(train_run *r, const rlt_agent_file *f, rlt_diag *diag)
{
    dqn_state *s = r->algo_state;
    rlt_mlp *target = NULL;
    const char *data = NULL;
    size_t len = 0;
    rlt_status st = rlt_agent_file_get_mlp(f, SECTION_TARGET, rlt_mlp_get_spec(r->policy->net), &target, NULL, diag);
    if (st != RLT_STATUS_OK) return st;
    rlt_mlp_destroy(s->target);
    s->target = target;
    if ((st = rlt_agent_file_get_bytes(f, SECTION_STATE, &data, &len, diag)) != RLT_STATUS_OK) return st;
    train_reader rd = {.p = (const unsigned char *)data, .len = len};
    s->credit = train_get_f64(&rd);
    if (rd.has_failed || rd.at != len || !(s->credit >= 0 && s->credit < 1e6))
        return train_section_error(r, SECTION_STATE, "not an update credit", diag);
    if ((st = rlt_agent_file_get_bytes(f, SECTION_REPLAY, &data, &len, diag)) != RLT_STATUS_OK) return st;
    rd = (train_reader){.p = (const unsigned char *)data, .len = len};
    uint64_t n = train_get_u(&rd, 4), next = train_get_u(&rd, 4);
    if (rd.has_failed || n > (uint64_t)s->cap || next >= (uint64_t)s->cap || (n < (uint64_t)s->cap && next != n))
        return train_section_error(r, SECTION_REPLAY, "a count or position out of range", diag);
    for (size_t j = 0; j < n; j++) {
        s->action[j] = (uint8_t)train_get_u(&rd, 1);
        s->flags[j] = (uint8_t)train_get_u(&rd, 1);
        s->reward[j] = train_get_f32(&rd);
        if (!train_get_obs(&rd, s->obs + j * RLT_ENV_OBS_LEN) ||
            !train_get_obs(&rd, s->obs_next + j * RLT_ENV_OBS_LEN) || s->action[j] >= RLT_ENV_N_ACTIONS ||
            s->flags[j] > DQN_FLAG_TERMINAL || !isfinite(s->reward[j]))
            return train_section_error(r, SECTION_REPLAY, "a transition out of range", diag);
    }
    if (rd.at != len) return train_section_error(r, SECTION_REPLAY, "bytes after the last transition", diag);
    s->n = (int)n;
    s->next = (int)next;
    return RLT_STATUS_OK;
}

const train_algo train_algo_dqn = {
    .init = dqn_init,
    .act = dqn_act,
    .record = dqn_record,
    .learn = dqn_learn,
    .finish = dqn_finish,
    .save = dqn_save,
    .load = dqn_load,
    .free = dqn_free,
};
