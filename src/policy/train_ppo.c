/*
 * train_ppo.c - PPO for `rltune train` (train.h; docs/training.md): the
 * policy's network is the actor (observation -> one logit per action), its
 * critic the state's value in the env's reward units. Illegal actions get
 * -1e9 added to their logits, so they have probability 0 and no gradient.
 * Every slot acts ppo_rollout_steps times per rollout; then GAE (gamma,
 * ppo_lambda) gives advantages, normalised over the rollout, and returns;
 * an episode cut by the step limit, or still running at the rollout's end,
 * bootstraps from the critic; stop ends it with nothing to follow. Then
 * ppo_epochs passes of shuffled minibatches: the clipped surrogate
 * (ppo_clip) with an entropy bonus (ppo_entropy_coef) for the actor, the
 * squared error against the returns for the critic, each network with its
 * own Adam and gradient-norm clipping at 0.5 (OpenAI baselines'). In the
 * first ppo_critic_warmup env steps only the critic learns: a fresh critic
 * beside an actor started from a trained policy would otherwise give it
 * advantages that are mostly the shapes' differences. A blind
 * policy (started from a bc one by --init) keeps a blind actor: it sees the
 * observations without their GFLOP/s, so that its rollout still needs no
 * measurement on the way; the critic sees them whole.
 *
 * Checkpoint section: ppo_rollout, the rollout in progress, so that a
 * resumed run goes on exactly where the broken one stopped.
 *
 * Entry point: train_algo_ppo (train_internal.h).
 */
#include "policy/train_internal.h"

#include <math.h>
#include <string.h>

#define PPO_MAX_GRAD_NORM 0.5
#define PPO_ILLEGAL_LOGIT (-1e9f) /* added to an illegal action's logit: exp() of it is 0 in double */
#define PPO_FLAG_TERMINAL 1
#define PPO_FLAG_TRUNCATED 2

#define SECTION_ROLLOUT "ppo_rollout"

typedef struct ppo_state {
    int n_envs, n_t;   /* slots, rollout steps per slot */
    int n_batched;     /* batched steps in the rollout so far */
    int *len;          /* [n_envs] rows recorded per slot */
    /* the rollout: row slot * n_t + t */
    float *obs;        /* [rows x OBS] the state acted in */
    float *boot_obs;   /* [rows x OBS] the state after a truncated step */
    int *action;
    float *logp, *value, *reward;
    uint8_t *flags;
    /* the update */
    float *adv, *ret, *boot_value;
    int *order;
    float *v_obs, *v_out; /* [rows + n_envs] states whose value bootstraps */
    /* acting */
    float *act_obs, *act_logits, *act_logp, *act_value; /* act_obs: what a blind actor sees */
    /* a minibatch */
    float *mb_obs, *mb_actor_obs; /* mb_actor_obs: what a blind actor sees */
    float *mb_logits, *mb_logp, *mb_dlogp, *mb_dlogits, *mb_dent, *mb_lp, *mb_dlp, *mb_v, *mb_dv, *mb_ret;
    int *mb_action;
} ppo_state;

static const rlt_nn_groups one_group = {.n_cols = RLT_ENV_N_ACTIONS, .n_groups = 1};

static rlt_status ppo_init(train_run *r, rlt_diag *diag)
{
    ppo_state *s = rlt_calloc(1, sizeof *s);
    if (!s) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating the ppo trainer");
    r->algo_state = s;
    s->n_envs = r->cfg.n_envs;
    s->n_t = r->cfg.ppo_rollout_steps;
    size_t rows = (size_t)s->n_envs * (size_t)s->n_t, e = (size_t)s->n_envs, mb = (size_t)r->cfg.ppo_minibatch;
    size_t obs = RLT_ENV_OBS_LEN, na = RLT_ENV_N_ACTIONS;
    bool is_ok = true;
    is_ok &= (s->len = rlt_calloc(e, sizeof(int))) != NULL;
    is_ok &= (s->obs = rlt_calloc(rows * obs, sizeof(float))) != NULL;
    is_ok &= (s->boot_obs = rlt_calloc(rows * obs, sizeof(float))) != NULL;
    is_ok &= (s->action = rlt_calloc(rows, sizeof(int))) != NULL;
    is_ok &= (s->flags = rlt_calloc(rows, 1)) != NULL;
    is_ok &= (s->order = rlt_calloc(rows, sizeof(int))) != NULL;
    float **per_row[] = {&s->logp, &s->value, &s->reward, &s->adv, &s->ret, &s->boot_value};
    for (size_t i = 0; i < RLT_ARRAY_LEN(per_row); i++)
        is_ok &= (*per_row[i] = rlt_calloc(rows, sizeof(float))) != NULL;
    is_ok &= (s->v_obs = rlt_calloc((rows + e) * obs, sizeof(float))) != NULL;
    is_ok &= (s->v_out = rlt_calloc(rows + e, sizeof(float))) != NULL;
    is_ok &= (s->act_obs = rlt_calloc(e * obs, sizeof(float))) != NULL;
    is_ok &= (s->act_logits = rlt_calloc(e * na, sizeof(float))) != NULL;
    is_ok &= (s->act_logp = rlt_calloc(e * na, sizeof(float))) != NULL;
    is_ok &= (s->act_value = rlt_calloc(e, sizeof(float))) != NULL;
    is_ok &= (s->mb_obs = rlt_calloc(mb * obs, sizeof(float))) != NULL;
    is_ok &= (s->mb_actor_obs = rlt_calloc(mb * obs, sizeof(float))) != NULL;
    float **per_col[] = {&s->mb_logits, &s->mb_logp, &s->mb_dlogp, &s->mb_dlogits, &s->mb_dent};
    for (size_t i = 0; i < RLT_ARRAY_LEN(per_col); i++)
        is_ok &= (*per_col[i] = rlt_calloc(mb * na, sizeof(float))) != NULL;
    float **per_mb[] = {&s->mb_lp, &s->mb_dlp, &s->mb_v, &s->mb_dv, &s->mb_ret};
    for (size_t i = 0; i < RLT_ARRAY_LEN(per_mb); i++) is_ok &= (*per_mb[i] = rlt_calloc(mb, sizeof(float))) != NULL;
    is_ok &= (s->mb_action = rlt_calloc(mb, sizeof(int))) != NULL;
    if (!is_ok) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory for a rollout of %zu rows", rows);
    return RLT_STATUS_OK;
}

static void ppo_free(train_run *r)
{
    ppo_state *s = r->algo_state;
    if (!s) return;
    void *arrays[] = {s->len,        s->obs,       s->boot_obs,  s->action,    s->logp,      s->value,
                      s->reward,     s->flags,     s->adv,       s->ret,       s->boot_value, s->order,
                      s->v_obs,      s->v_out,     s->act_logits, s->act_logp, s->act_value, s->mb_obs,
                      s->mb_logits,  s->mb_logp,   s->mb_dlogp,  s->mb_dlogits, s->mb_dent,  s->mb_lp,
                      s->mb_dlp,     s->mb_v,      s->mb_dv,     s->mb_ret,    s->mb_action, s->act_obs,
                      s->mb_actor_obs};
    for (size_t i = 0; i < RLT_ARRAY_LEN(arrays); i++) rlt_free(arrays[i]);
    rlt_free(s);
    r->algo_state = NULL;
}

/* Adds PPO_ILLEGAL_LOGIT to the logits of the actions each row's
 * observation masks. */
static void mask_logits(int n, const float *obs, float *logits)
{
    for (int i = 0; i < n; i++) {
        const float *mask = obs + (size_t)i * RLT_ENV_OBS_LEN + RLT_ENV_OBS_MASK;
        for (int a = 0; a < RLT_ENV_N_ACTIONS; a++)
            if (mask[a] < 0.5f) logits[(size_t)i * RLT_ENV_N_ACTIONS + (size_t)a] += PPO_ILLEGAL_LOGIT;
    }
}

/* What the actor sees of n observations: them, or for a blind policy
 * (fine-tuned from a bc one) a copy in buf without the GFLOP/s. The
 * critic always sees them whole. */
static const float *actor_input(const train_run *r, int n, const float *obs, float *buf)
{
    if (!r->policy->is_blind) return obs;
    memcpy(buf, obs, (size_t)n * RLT_ENV_OBS_LEN * sizeof(float));
    rlt_policy_blind_obs(n, buf);
    return buf;
}

/* Samples each slot's action from the masked softmax (one uniform per
 * slot, in slot order) and keeps its log-probability and value in the
 * slot's next row. */
static rlt_status ppo_act(train_run *r, int n, int *actions, rlt_diag *diag)
{
    ppo_state *s = r->algo_state;
    for (int i = 0; i < n; i++) {
        RLT_ASSERT(s->len[i] < s->n_t);
        size_t row = (size_t)i * (size_t)s->n_t + (size_t)s->len[i];
        memcpy(s->obs + row * RLT_ENV_OBS_LEN, r->slots[i].obs, sizeof r->slots[i].obs);
        memcpy(s->v_obs + (size_t)i * RLT_ENV_OBS_LEN, r->slots[i].obs, sizeof r->slots[i].obs);
    }
    rlt_status st;
    if ((st = rlt_mlp_predict(r->policy->net, n, actor_input(r, n, s->v_obs, s->act_obs), s->act_logits, diag)) !=
            RLT_STATUS_OK ||
        (st = rlt_mlp_predict(r->policy->critic, n, s->v_obs, s->act_value, diag)) != RLT_STATUS_OK)
        return st;
    mask_logits(n, s->v_obs, s->act_logits);
    if ((st = rlt_nn_log_softmax(&one_group, n, s->act_logits, s->act_logp, diag)) != RLT_STATUS_OK) return st;
    for (int i = 0; i < n; i++) {
        const float *lp = s->act_logp + (size_t)i * RLT_ENV_N_ACTIONS;
        bool mask[RLT_ENV_N_ACTIONS];
        train_obs_mask(r->slots[i].obs, mask);
        double u = rlt_rng_uniform(&r->rng);
        int a = -1;
        for (int k = 0; k < RLT_ENV_N_ACTIONS; k++) {
            if (!mask[k]) continue;
            a = k; /* the last legal one takes what rounding leaves over */
            u -= exp((double)lp[k]);
            if (u < 0) break;
        }
        if (a < 0) a = RLT_ENV_ACTION_STOP;
        size_t row = (size_t)i * (size_t)s->n_t + (size_t)s->len[i];
        actions[i] = a;
        s->action[row] = a;
        s->logp[row] = lp[a];
        s->value[row] = s->act_value[i];
    }
    return RLT_STATUS_OK;
}

static void ppo_record(train_run *r, int i, const float *obs_before, int action, float reward, bool is_terminal,
                       bool is_truncated, const float *obs_after)
{
    (void)obs_before;
    (void)action;
    ppo_state *s = r->algo_state;
    size_t row = (size_t)i * (size_t)s->n_t + (size_t)s->len[i];
    s->reward[row] = reward;
    s->flags[row] = (uint8_t)((is_terminal ? PPO_FLAG_TERMINAL : 0) | (is_truncated ? PPO_FLAG_TRUNCATED : 0));
    if (is_truncated) memcpy(s->boot_obs + row * RLT_ENV_OBS_LEN, obs_after, RLT_ENV_OBS_LEN * sizeof(float));
    s->len[i]++;
}

/* One gradient step of the actor and one of the critic on rows[0..m-1]. */
static rlt_status ppo_minibatch(train_run *r, const int *rows, int m, rlt_diag *diag)
{
    ppo_state *s = r->algo_state;
    const train_cfg *c = &r->cfg;
    size_t na = RLT_ENV_N_ACTIONS;
    for (int i = 0; i < m; i++) {
        memcpy(s->mb_obs + (size_t)i * RLT_ENV_OBS_LEN, s->obs + (size_t)rows[i] * RLT_ENV_OBS_LEN,
               RLT_ENV_OBS_LEN * sizeof(float));
        s->mb_action[i] = s->action[rows[i]];
        s->mb_ret[i] = s->ret[rows[i]];
    }
    rlt_status st;
    if ((st = rlt_mlp_forward(r->policy->net, m, actor_input(r, m, s->mb_obs, s->mb_actor_obs), s->mb_logits,
                              diag)) != RLT_STATUS_OK)
        return st;
    mask_logits(m, s->mb_obs, s->mb_logits);
    if ((st = rlt_nn_log_softmax(&one_group, m, s->mb_logits, s->mb_logp, diag)) != RLT_STATUS_OK ||
        (st = rlt_nn_log_prob_picked(&one_group, m, s->mb_logp, s->mb_action, s->mb_lp, diag)) != RLT_STATUS_OK)
        return st;
    /* loss_i = -min(q A, clip(q, 1 - c, 1 + c) A) / m with q = pi / pi_old;
     * where the clipped term is the smaller one it is constant in q */
    rlt_nn_ppo_clip_grad(m, s->mb_lp, s->logp, s->adv, rows, c->ppo_clip, s->mb_dlp);
    double entropy = 0;
    if ((st = rlt_nn_log_prob_picked_backward(&one_group, m, s->mb_action, s->mb_dlp, s->mb_dlogp, diag)) !=
            RLT_STATUS_OK ||
        (st = rlt_nn_log_softmax_backward(&one_group, m, s->mb_logp, s->mb_dlogp, s->mb_dlogits, diag)) !=
            RLT_STATUS_OK ||
        (st = rlt_nn_entropy(&one_group, m, s->mb_logits, &entropy, s->mb_dent, diag)) != RLT_STATUS_OK)
        return st;
    for (int i = 0; i < m; i++) {
        const float *mask = s->mb_obs + (size_t)i * RLT_ENV_OBS_LEN + RLT_ENV_OBS_MASK;
        float *d = s->mb_dlogits + (size_t)i * na;
        const float *de = s->mb_dent + (size_t)i * na;
        for (size_t a = 0; a < na; a++)
            d[a] = mask[a] < 0.5f ? 0.0f : d[a] - (float)c->ppo_entropy_coef * de[a];
    }
    /* during the critic's warm-up the actor is held (its Adam does not step either) */
    bool is_actor_held = r->n_steps <= (int64_t)c->ppo_critic_warmup;
    rlt_mlp_zero_grad(r->policy->net);
    if (!is_actor_held &&
        ((st = rlt_mlp_backward(r->policy->net, m, s->mb_dlogits, NULL, diag)) != RLT_STATUS_OK ||
         (st = rlt_mlp_grad_clip(r->policy->net, PPO_MAX_GRAD_NORM, NULL, diag)) != RLT_STATUS_OK ||
         (st = rlt_adam_step(r->policy->net_adam, r->policy->net, diag)) != RLT_STATUS_OK))
        return st;
    double loss = 0;
    if ((st = rlt_mlp_forward(r->policy->critic, m, s->mb_obs, s->mb_v, diag)) != RLT_STATUS_OK ||
        (st = rlt_nn_loss_mse(m, s->mb_v, s->mb_ret, &loss, s->mb_dv, diag)) != RLT_STATUS_OK)
        return st;
    rlt_mlp_zero_grad(r->policy->critic);
    if ((st = rlt_mlp_backward(r->policy->critic, m, s->mb_dv, NULL, diag)) != RLT_STATUS_OK ||
        (st = rlt_mlp_grad_clip(r->policy->critic, PPO_MAX_GRAD_NORM, NULL, diag)) != RLT_STATUS_OK ||
        (st = rlt_adam_step(r->policy->critic_adam, r->policy->critic, diag)) != RLT_STATUS_OK)
        return st;
    r->n_updates++;
    return RLT_STATUS_OK;
}

/* The values that bootstrap: after every truncated row (boot_value), and
 * after each slot's last row when its episode goes on (the value of the
 * slot's state now, into end_value). */
static rlt_status bootstrap_values(train_run *r, float *end_value, rlt_diag *diag)
{
    ppo_state *s = r->algo_state;
    int n_v = 0;
    size_t obs_bytes = RLT_ENV_OBS_LEN * sizeof(float);
    for (int i = 0; i < s->n_envs; i++) {
        for (int t = 0; t < s->len[i]; t++) {
            size_t row = (size_t)i * (size_t)s->n_t + (size_t)t;
            if (s->flags[row] & PPO_FLAG_TRUNCATED)
                memcpy(s->v_obs + (size_t)n_v++ * RLT_ENV_OBS_LEN, s->boot_obs + row * RLT_ENV_OBS_LEN, obs_bytes);
        }
        size_t last = (size_t)i * (size_t)s->n_t + (size_t)s->len[i] - 1;
        if (s->len[i] > 0 && s->flags[last] == 0)
            memcpy(s->v_obs + (size_t)n_v++ * RLT_ENV_OBS_LEN, r->slots[i].obs, obs_bytes);
    }
    if (n_v > 0) {
        rlt_status st = rlt_mlp_predict(r->policy->critic, n_v, s->v_obs, s->v_out, diag);
        if (st != RLT_STATUS_OK) return st;
    }
    n_v = 0;
    for (int i = 0; i < s->n_envs; i++) {
        for (int t = 0; t < s->len[i]; t++) {
            size_t row = (size_t)i * (size_t)s->n_t + (size_t)t;
            s->boot_value[row] = s->flags[row] & PPO_FLAG_TRUNCATED ? s->v_out[n_v++] : 0.0f;
        }
        size_t last = (size_t)i * (size_t)s->n_t + (size_t)s->len[i] - 1;
        end_value[i] = s->len[i] > 0 && s->flags[last] == 0 ? s->v_out[n_v++] : 0.0f;
    }
    return RLT_STATUS_OK;
}

/* PPO on the rollout recorded so far, which is then emptied. */
static rlt_status ppo_update(train_run *r, rlt_diag *diag)
{
    ppo_state *s = r->algo_state;
    const train_cfg *c = &r->cfg;
    float end_value[RLT_TRAIN_MAX_ENVS];
    rlt_status st = bootstrap_values(r, end_value, diag);
    if (st != RLT_STATUS_OK) return st;
    int n_rows = 0;
    for (int i = 0; i < s->n_envs; i++) {
        double gae = 0, next_value = end_value[i];
        for (int t = s->len[i] - 1; t >= 0; t--) {
            int row = i * s->n_t + t;
            if (s->flags[row] & PPO_FLAG_TERMINAL) {
                next_value = 0;
                gae = 0;
            } else if (s->flags[row] & PPO_FLAG_TRUNCATED) {
                next_value = s->boot_value[row];
                gae = 0;
            }
            double delta = s->reward[row] + c->gamma * next_value - s->value[row];
            gae = delta + c->gamma * c->ppo_lambda * gae;
            s->adv[row] = (float)gae;
            s->ret[row] = (float)(gae + s->value[row]);
            next_value = s->value[row];
            s->order[n_rows++] = row;
        }
    }
    if (n_rows > 0) {
        double mean = 0, var = 0;
        for (int k = 0; k < n_rows; k++) mean += s->adv[s->order[k]];
        mean /= n_rows;
        for (int k = 0; k < n_rows; k++) var += (s->adv[s->order[k]] - mean) * (s->adv[s->order[k]] - mean);
        double scale = 1.0 / (sqrt(var / n_rows) + 1e-8);
        for (int k = 0; k < n_rows; k++) s->adv[s->order[k]] = (float)((s->adv[s->order[k]] - mean) * scale);
    }
    for (int epoch = 0; epoch < c->ppo_epochs && n_rows > 0; epoch++) {
        for (int k = n_rows - 1; k > 0; k--) {
            int j = (int)rlt_rng_below(&r->rng, (uint64_t)k + 1);
            int x = s->order[k];
            s->order[k] = s->order[j];
            s->order[j] = x;
        }
        for (int start = 0; start < n_rows; start += c->ppo_minibatch) {
            st = ppo_minibatch(r, s->order + start, RLT_MIN(c->ppo_minibatch, n_rows - start), diag);
            if (st != RLT_STATUS_OK) {
                rlt_diag_prefix(diag, "ppo update %lld", (long long)r->n_updates + 1);
                return st;
            }
        }
    }
    for (int i = 0; i < s->n_envs; i++) s->len[i] = 0;
    s->n_batched = 0;
    return RLT_STATUS_OK;
}

static rlt_status ppo_learn(train_run *r, int n_new, rlt_diag *diag)
{
    (void)n_new;
    ppo_state *s = r->algo_state;
    if (++s->n_batched < s->n_t) return RLT_STATUS_OK;
    return ppo_update(r, diag);
}

static rlt_status ppo_finish(train_run *r, rlt_diag *diag)
{
    ppo_state *s = r->algo_state;
    for (int i = 0; i < s->n_envs; i++)
        if (s->len[i] > 0) return ppo_update(r, diag);
    return RLT_STATUS_OK;
}

/* ---- checkpoints ---------------------------------------------------------- */

/* ppo_rollout: u32 n_envs, u32 rollout steps, u32 batched steps so far,
 * u32 rows per slot [n_envs], then each slot's rows in order: u8 action,
 * u8 flags (1 terminal, 2 truncated), f32 log-probability, f32 value, f32
 * reward, the observation, and after a truncated step the observation it
 * led to. */
static rlt_status ppo_save(const train_run *r, rlt_agent_file *f, size_t budget_bytes, rlt_diag *diag)
{
    const ppo_state *s = r->algo_state;
    rlt_str b;
    rlt_str_init(&b);
    train_put_u(&b, (uint64_t)s->n_envs, 4);
    train_put_u(&b, (uint64_t)s->n_t, 4);
    train_put_u(&b, (uint64_t)s->n_batched, 4);
    for (int i = 0; i < s->n_envs; i++) train_put_u(&b, (uint64_t)s->len[i], 4);
    for (int i = 0; i < s->n_envs; i++)
        for (int t = 0; t < s->len[i]; t++) {
            size_t row = (size_t)i * (size_t)s->n_t + (size_t)t;
            train_put_u(&b, (uint64_t)s->action[row], 1);
            train_put_u(&b, s->flags[row], 1);
            train_put_f32(&b, s->logp[row]);
            train_put_f32(&b, s->value[row]);
            train_put_f32(&b, s->reward[row]);
            train_put_obs(&b, s->obs + row * RLT_ENV_OBS_LEN);
            if (s->flags[row] & PPO_FLAG_TRUNCATED) train_put_obs(&b, s->boot_obs + row * RLT_ENV_OBS_LEN);
        }
    rlt_status st;
    if (b.has_failed)
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory writing a checkpoint");
    else if (b.len > budget_bytes)
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "the rollout in progress (%zu bytes) does not fit in a checkpoint: use fewer envs or rollout "
                      "steps",
                      b.len);
    else
        st = rlt_agent_file_put_bytes(f, SECTION_ROLLOUT, b.data, b.len, diag);
    rlt_str_free(&b);
    return st;
}

static rlt_status ppo_load(train_run *r, const rlt_agent_file *f, rlt_diag *diag)
{
    ppo_state *s = r->algo_state;
    const char *data = NULL;
    size_t len = 0;
    rlt_status st = rlt_agent_file_get_bytes(f, SECTION_ROLLOUT, &data, &len, diag);
    if (st != RLT_STATUS_OK) return st;
    train_reader rd = {.p = (const unsigned char *)data, .len = len};
    uint64_t n_envs = train_get_u(&rd, 4), n_t = train_get_u(&rd, 4), n_batched = train_get_u(&rd, 4);
    if (rd.has_failed || n_envs != (uint64_t)s->n_envs || n_t != (uint64_t)s->n_t || n_batched >= n_t)
        return train_section_error(r, SECTION_ROLLOUT, "sizes that differ from the options", diag);
    for (int i = 0; i < s->n_envs; i++) {
        uint64_t n = train_get_u(&rd, 4);
        if (n > n_batched) return train_section_error(r, SECTION_ROLLOUT, "a slot with too many rows", diag);
        s->len[i] = (int)n;
    }
    for (int i = 0; i < s->n_envs; i++)
        for (int t = 0; t < s->len[i]; t++) {
            size_t row = (size_t)i * (size_t)s->n_t + (size_t)t;
            uint64_t a = train_get_u(&rd, 1);
            s->flags[row] = (uint8_t)train_get_u(&rd, 1);
            s->logp[row] = train_get_f32(&rd);
            s->value[row] = train_get_f32(&rd);
            s->reward[row] = train_get_f32(&rd);
            bool is_ok = train_get_obs(&rd, s->obs + row * RLT_ENV_OBS_LEN);
            if (s->flags[row] & PPO_FLAG_TRUNCATED) is_ok &= train_get_obs(&rd, s->boot_obs + row * RLT_ENV_OBS_LEN);
            if (!is_ok || a >= RLT_ENV_N_ACTIONS || s->flags[row] > (PPO_FLAG_TERMINAL | PPO_FLAG_TRUNCATED) ||
                !isfinite(s->logp[row]) || !isfinite(s->value[row]) || !isfinite(s->reward[row]))
                return train_section_error(r, SECTION_ROLLOUT, "a row out of range", diag);
            s->action[row] = (int)a;
        }
    if (rd.at != len) return train_section_error(r, SECTION_ROLLOUT, "bytes after the last row", diag);
    s->n_batched = (int)n_batched;
    return RLT_STATUS_OK;
}

const train_algo train_algo_ppo = {
    .init = ppo_init,
    .act = ppo_act,
    .record = ppo_record,
    .learn = ppo_learn,
    .finish = ppo_finish,
    .save = ppo_save,
    .load = ppo_load,
    .free = ppo_free,
};
