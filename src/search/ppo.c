/*
 * ppo.c - the "ppo" tuner: Chameleon's design (Ahn et al., "Chameleon:
 * Adaptive Code Optimization for Expedited Deep Neural Network
 * Compilation", ICLR 2020; docs/tuners.md, "ppo").
 *
 * AutoTVM's loop with two parts replaced. A cost model (XGBoost,
 * rank:pairwise as in Chameleon; on a space small enough to be scored whole,
 * a regression with rows weighted by their score, as Ansor's; option
 * cost_loss; cost_model.h) is refitted on every measured batch. Instead
 * of simulated annealing, `walkers` PPO walkers explore the model: a
 * walker's observation is its configuration's knob positions in [0, 1],
 * its action one move in {dec, stay, inc} per knob (one 3-way softmax per
 * knob), its reward the model's score of where it lands (normalised by the
 * spread of the model's scores on its training rows). The actor-critic (one
 * MLP with a shared trunk, logits and a value) is trained by PPO-clip with
 * GAE on segments of the walk, with an entropy bonus; it persists across
 * the run. The walkers keep the top `walkers` candidates: the distinct,
 * valid, unvisited configurations they reached, ranked by the model. The
 * exploration of one fitted model stops after `explore_steps` steps, or
 * earlier once `stall_steps` steps in a row have brought nothing new into
 * the first `batch` candidates (AutoTVM's early stop for its annealing).
 * Episodes run across explorations: after `episode_steps` steps every
 * walker restarts at a random valid configuration. Instead of the top of
 * the candidates' ranking, adaptive sampling
 * (rlt_ppo_adaptive_sample, k-means in kmeans.c) proposes one configuration
 * per cluster of the candidates; the rest of a batch is the model's ranking,
 * then random configurations. Until a model is fitted (first batch, unless
 * transfer rows are given) proposals are random, as in AutoTVM.
 *
 * Entry points: rlt_tuner_ppo_ops (through rlt_tuner_create),
 * rlt_ppo_adaptive_sample and rlt_tuner_ppo_stats (search/ppo.h).
 */
#include "search/ppo.h"
#include "nn/agent_file.h"

#include "nn/nn.h"
#include "search/cost_rows.h"
#include "search/kmeans.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#define PPO_HIDDEN 64              /* units in each of the two tanh layers of the shared trunk */
#define PPO_HEAD_GAIN 0.01         /* the logits' output weights scaled by this: a near-uniform first policy */
#define PPO_MAX_GRAD_NORM 0.5      /* PPO's max_grad_norm (OpenAI baselines) */
#define PPO_VF_COEF 0.5            /* the value loss's weight (OpenAI baselines' PPO2) */
#define PPO_SEGMENT_STEPS 16       /* walker steps per PPO update (x walkers transitions) */
#define PPO_REWARD_CLIP 5.0        /* normalised rewards are clipped to [-5, 5] */
#define PPO_INVALID_PENALTY 0.5    /* a move onto an invalid configuration: stay, reward of staying less this */
#define PPO_K_STEP 8               /* Chameleon: k grows in steps of 8 ... */
#define PPO_ELBOW_RATIO 2.5        /* ... while each step divides the k-means loss by 2.5 or more */
#define PPO_KMEANS_ITERATIONS 100  /* Lloyd iterations at most */
#define PPO_START_TRIES 64         /* random draws for a valid walker start */
#define PPO_SMALL_SPACE 4096       /* default ppo_score_whole: spaces up to this size are scored whole, not walked */
#define PPO_DRAW_TRIES 1024        /* rlt_tuner_draw_new's tries for the random filler */
#define PPO_MAX_WALKERS 4096
#define PPO_MAX_MINIBATCH 4096

/* The agent. What a save / load must keep (everything learned, and the
 * counters and positions that make a resumed run continue the same way):
 *   - the resolved hyper-parameters (lr ... stall_steps), to check a load;
 *   - the actor-critic `net` (rlt_mlp) and its Adam state `adam` (moments
 *     and step count);
 *   - the cost model (rlt_cost_model_save) and its training rows `rows`
 *     (features, raw scores, n_transfer, best_y), since every update refits
 *     from scratch on all of them;
 *   - the reward normaliser (reward_mean, reward_scale) and has_model, the
 *     stats (stats.n_fits counts the fits) and explored_fit (whether the
 *     model in force has been explored);
 *   - the walkers' positions and episode (walkers, episode_step,
 *     stats.n_episodes).
 * Not learned, rebuilt as needed: the score cache and the set of invalid
 * configurations (caches), the candidates and the plan (rebuilt by the next
 * exploration; a load should set explored_fit = n_fits - 1 to re-explore),
 * scan_cursor, the segment buffers and minibatch scratch. */
typedef struct ppo_agent {
    /* hyper-parameters, defaults resolved */
    double lr, gamma, lambda, clip, entropy_coef;
    int epochs, minibatch, n_walkers, episode_steps, explore_steps, stall_steps, score_whole;
    /* the actor-critic: one MLP from the observation (n_knobs positions)
     * to 3 logits per knob (dec, stay, inc) and the value, in units of
     * (1 - gamma) (the last output) */
    int n_knobs, n_outputs; /* n_outputs = 3 n_knobs + 1 */
    rlt_nn_groups groups;   /* the logits: n_knobs equal groups of 3 */
    rlt_mlp *net;
    rlt_adam *adam;
    /* the cost model */
    rlt_cost_model *model;
    rlt_cost_rows rows;
    double reward_mean, reward_scale; /* of the model's scores on its training rows */
    bool has_model;                   /* fitted, with scores that differ: worth exploring */
    int64_t explored_fit;             /* the n_fits whose model was last explored */
    /* the walkers: positions (valid once placed, when a valid start was
     * found), and the step of their episode (all walkers move together) */
    rlt_config *walkers;
    int episode_step;
    rlt_ppo_stats stats;
    /* ---- caches and scratch (not learned) ---- */
    rlt_score_map cache; /* model scores by configuration index for the model in force; emptied at every fit */
    rlt_visited invalid;       /* configurations found invalid */
    uint64_t n_invalid_in_space; /* of them, those with an index below rlt_space_size */
    /* the exploration's candidates, best first: n_cand <= n_walkers */
    rlt_config *cand;
    uint64_t *cand_index;
    double *cand_score;
    int n_cand;
    /* the plan: sampled configurations (which need not be candidates),
     * then the other candidates: 2 x n_walkers at most */
    rlt_config *plan;
    int n_plan, n_plan_sampled, plan_pt;
    uint64_t scan_cursor;
    /* one step of all walkers */
    double *walker_score;  /* [W] the model's score of each walker's position */
    rlt_config *next;      /* [W] */
    uint64_t *next_index;  /* [W] */
    double *next_score;    /* [W] */
    float *step_out;       /* [W x (3N + 1)] */
    float *step_logits;    /* [W x 3N] */
    float *step_logp;      /* [W x 3N] */
    rlt_config *miss;      /* [W] configurations to predict */
    double *miss_score;    /* [W] */
    float *features;       /* [min(W, RLT_COST_ROWS_CHUNK) x n_features] */
    /* a segment: PPO_SEGMENT_STEPS x W transitions, row = step * W + walker */
    float *seg_obs;        /* [rows x N] */
    int *seg_actions;      /* [rows x N] 0, 1, 2 for dec, stay, inc */
    float *seg_logp;       /* [rows] log-probability of the joint action when taken */
    float *seg_value;      /* [rows] the value of the state when the step was taken */
    float *seg_reward;     /* [rows] */
    float *seg_adv;        /* [rows] */
    float *seg_return;     /* [rows] */
    int *seg_order;        /* [rows] */
    float *boot_value;     /* [W] values after the segment's last step */
    /* a minibatch */
    float *mb_obs, *mb_out, *mb_dout, *mb_logits, *mb_logp, *mb_dlogp, *mb_dlogits, *mb_dentropy;
    float *mb_log_prob, *mb_dlog_prob;
    int *mb_actions;
} ppo_agent;

/* ---- the model ----------------------------------------------------------- */

/* The model's scores of n configurations (indices idx), -INFINITY for
 * invalid ones: from the cache, the rest predicted in one call. n <= W. */
static void score_configs(rlt_tuner *t, int n, const rlt_config *c, const uint64_t *idx, double *out)
{
    ppo_agent *a = t->state;
    int n_miss = 0;
    int miss_of[PPO_MAX_WALKERS];
    for (int i = 0; i < n; i++) {
        if (rlt_visited_has(&a->invalid, idx[i])) {
            out[i] = -INFINITY;
        } else if (!rlt_score_map_get(&a->cache, idx[i], &out[i])) {
            miss_of[n_miss] = i;
            a->miss[n_miss++] = c[i];
        }
    }
    if (n_miss == 0) return;
    rlt_cost_rows_predict(a->model, t->space, n_miss, a->miss, a->features, a->miss_score);
    for (int j = 0; j < n_miss; j++) {
        int i = miss_of[j];
        out[i] = a->miss_score[j];
        if (isfinite(out[i])) rlt_score_map_put(&a->cache, idx[i], out[i]);
        else if (rlt_visited_add(&a->invalid, idx[i]) && idx[i] < rlt_space_size(t->space)) a->n_invalid_in_space++;
    }
}

/* The reward for standing on a configuration of model score `score`: its
 * distance from the mean of the model's scores of its training rows, in
 * their standard deviations, clipped. */
static double reward_of(const ppo_agent *a, double score)
{
    if (!isfinite(score)) return -PPO_REWARD_CLIP;
    double z = (score - a->reward_mean) / a->reward_scale;
    return fmin(fmax(z, -PPO_REWARD_CLIP), PPO_REWARD_CLIP);
}

/* Refits the model on every row and sets the reward normaliser. */
static rlt_status fit_model(rlt_tuner *t, rlt_diag *diag)
{
    ppo_agent *a = t->state;
    rlt_status st = rlt_cost_rows_fit(&a->rows, a->model, diag);
    if (st != RLT_STATUS_OK) return st;
    a->stats.n_fits++;
    rlt_score_map_clear(&a->cache);
    a->has_model = false;
    if (!rlt_cost_model_is_trained(a->model)) return RLT_STATUS_OK;
    double *pred = rlt_malloc(sizeof *pred * (size_t)a->rows.n);
    if (!pred) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory normalising the ppo tuner's rewards");
    st = rlt_cost_model_predict(a->model, a->rows.n, a->rows.xs, pred, diag);
    if (st == RLT_STATUS_OK) {
        double mean = 0, var = 0;
        for (int i = 0; i < a->rows.n; i++) mean += pred[i];
        mean /= a->rows.n;
        for (int i = 0; i < a->rows.n; i++) var += (pred[i] - mean) * (pred[i] - mean);
        var /= a->rows.n;
        a->reward_mean = mean;
        a->reward_scale = sqrt(var);
        a->has_model = a->reward_scale > 1e-9; /* a flat model has nothing to show the walkers */
    }
    rlt_free(pred);
    return st;
}

/* ---- the actor-critic ---------------------------------------------------- */

/* The observation: each knob's choice as its position in [0, 1]. */
static void encode(const rlt_space *s, const rlt_config *c, float *x)
{
    for (int k = 0; k < s->n_knobs; k++) {
        int n = s->knobs[k].n_choices;
        x[k] = n > 1 ? (float)c->choice[k] / (float)(n - 1) : 0.0f;
    }
}

/* ---- candidates ---------------------------------------------------------- */

static bool same_config(const rlt_space *s, const rlt_config *x, const rlt_config *y)
{
    return memcmp(x->choice, y->choice, sizeof x->choice[0] * (size_t)s->n_knobs) == 0;
}

/* Offers a configuration the walkers reached to the candidates (the top
 * n_walkers by model score, best first, ties by index; distinct, valid,
 * unvisited): the position it entered at, or -1. */
static int cand_offer(rlt_tuner *t, const rlt_config *c, uint64_t index, double score)
{
    ppo_agent *a = t->state;
    if (!isfinite(score)) return -1;
    int cap = a->n_walkers;
    if (a->n_cand == cap) {
        double worst = a->cand_score[cap - 1];
        if (score < worst || (score == worst && index >= a->cand_index[cap - 1])) return -1;
    }
    if (rlt_visited_has(&t->visited, index)) return -1;
    for (int i = 0; i < a->n_cand; i++)
        if (a->cand_index[i] == index) return -1;
    int pos = a->n_cand < cap ? a->n_cand++ : cap - 1;
    while (pos > 0 && (a->cand_score[pos - 1] < score ||
                       (a->cand_score[pos - 1] == score && a->cand_index[pos - 1] > index))) {
        a->cand[pos] = a->cand[pos - 1];
        a->cand_index[pos] = a->cand_index[pos - 1];
        a->cand_score[pos] = a->cand_score[pos - 1];
        pos--;
    }
    a->cand[pos] = *c;
    a->cand_index[pos] = index;
    a->cand_score[pos] = score;
    return pos;
}

/* ---- PPO ----------------------------------------------------------------- */

/* The logits and values of rows of the network's outputs. */
static void split_outputs(const ppo_agent *a, int n_rows, const float *out, float *logits, float *values)
{
    size_t cols = (size_t)a->groups.n_cols;
    for (int i = 0; i < n_rows; i++) {
        const float *o = out + (size_t)i * (size_t)a->n_outputs;
        memcpy(logits + (size_t)i * cols, o, cols * sizeof(float));
        if (values) values[i] = (float)(o[cols] / (1.0 - a->gamma));
    }
}

/* One PPO step on segment rows rows[0..m-1]: the clipped surrogate, the
 * entropy bonus and the value loss (PPO2's vf_coef 0.5) through the one
 * network, gradient clipping, Adam. */
static rlt_status ppo_minibatch_step(ppo_agent *a, const int *rows, int m, rlt_diag *diag)
{
    const rlt_nn_groups *g = &a->groups;
    size_t nk = (size_t)a->n_knobs, cols = (size_t)g->n_cols, n_out = (size_t)a->n_outputs;
    for (int i = 0; i < m; i++) {
        size_t r = (size_t)rows[i];
        memcpy(a->mb_obs + (size_t)i * nk, a->seg_obs + r * nk, nk * sizeof(float));
        memcpy(a->mb_actions + (size_t)i * nk, a->seg_actions + r * nk, nk * sizeof(int));
    }
    rlt_status st;
    if ((st = rlt_mlp_forward(a->net, m, a->mb_obs, a->mb_out, diag)) != RLT_STATUS_OK) return st;
    split_outputs(a, m, a->mb_out, a->mb_logits, NULL);
    /* policy: loss_i = -min(q A, clip(q, 1 - c, 1 + c) A) / m, q = pi /
     * pi_old; where the clipped term is the smaller one, it is constant in q */
    if ((st = rlt_nn_log_softmax(g, m, a->mb_logits, a->mb_logp, diag)) != RLT_STATUS_OK ||
        (st = rlt_nn_log_prob_picked(g, m, a->mb_logp, a->mb_actions, a->mb_log_prob, diag)) != RLT_STATUS_OK)
        return st;
    rlt_nn_ppo_clip_grad(m, a->mb_log_prob, a->seg_logp, a->seg_adv, rows, a->clip, a->mb_dlog_prob);
    double entropy = 0;
    if ((st = rlt_nn_log_prob_picked_backward(g, m, a->mb_actions, a->mb_dlog_prob, a->mb_dlogp, diag)) !=
            RLT_STATUS_OK ||
        (st = rlt_nn_log_softmax_backward(g, m, a->mb_logp, a->mb_dlogp, a->mb_dlogits, diag)) != RLT_STATUS_OK ||
        (st = rlt_nn_entropy(g, m, a->mb_logits, &entropy, a->mb_dentropy, diag)) != RLT_STATUS_OK)
        return st;
    a->stats.last_entropy = entropy;
    /* value: PPO_VF_COEF x the mean squared error of the value (in units of
     * 1 - gamma) against the GAE return (in the same units) */
    double unit = 1.0 - a->gamma;
    for (int i = 0; i < m; i++) {
        float *d = a->mb_dout + (size_t)i * n_out;
        for (size_t j = 0; j < cols; j++)
            d[j] = a->mb_dlogits[(size_t)i * cols + j] - (float)a->entropy_coef * a->mb_dentropy[(size_t)i * cols + j];
        double v = a->mb_out[(size_t)i * n_out + cols], target = a->seg_return[rows[i]] * unit;
        d[cols] = (float)(PPO_VF_COEF * 2.0 * (v - target) / m);
    }
    rlt_mlp_zero_grad(a->net);
    if ((st = rlt_mlp_backward(a->net, m, a->mb_dout, NULL, diag)) != RLT_STATUS_OK ||
        (st = rlt_mlp_grad_clip(a->net, PPO_MAX_GRAD_NORM, NULL, diag)) != RLT_STATUS_OK)
        return st;
    return rlt_adam_step(a->adam, a->net, diag);
}

/* PPO on a segment of n_steps steps of every walker: GAE advantages
 * (bootstrapped from the value of where the walkers stand: the
 * walk goes on, it is not an episode's end), normalised over the segment,
 * then `epochs` passes of shuffled minibatches. */
static rlt_status train_segment(rlt_tuner *t, int n_steps, rlt_diag *diag)
{
    ppo_agent *a = t->state;
    int w = a->n_walkers, n_rows = n_steps * w;
    size_t nk = (size_t)a->n_knobs;
    for (int i = 0; i < w; i++) encode(t->space, &a->walkers[i], a->mb_obs + (size_t)i * nk);
    rlt_status st = rlt_mlp_predict(a->net, w, a->mb_obs, a->step_out, diag);
    if (st != RLT_STATUS_OK) return st;
    split_outputs(a, w, a->step_out, a->step_logits, a->boot_value);
    for (int i = 0; i < w; i++) {
        double gae = 0, next_value = a->boot_value[i];
        for (int s = n_steps - 1; s >= 0; s--) {
            int r = s * w + i;
            double delta = a->seg_reward[r] + a->gamma * next_value - a->seg_value[r];
            gae = delta + a->gamma * a->lambda * gae;
            a->seg_adv[r] = (float)gae;
            a->seg_return[r] = (float)(gae + a->seg_value[r]);
            next_value = a->seg_value[r];
        }
    }
    double mean = 0, var = 0;
    for (int r = 0; r < n_rows; r++) mean += a->seg_adv[r];
    mean /= n_rows;
    for (int r = 0; r < n_rows; r++) var += (a->seg_adv[r] - mean) * (a->seg_adv[r] - mean);
    var /= n_rows;
    double scale = 1.0 / (sqrt(var) + 1e-8);
    for (int r = 0; r < n_rows; r++) a->seg_adv[r] = (float)((a->seg_adv[r] - mean) * scale);
    for (int epoch = 0; epoch < a->epochs; epoch++) {
        for (int r = 0; r < n_rows; r++) a->seg_order[r] = r;
        for (int r = n_rows - 1; r > 0; r--) {
            int j = (int)rlt_rng_below(&t->rng, (uint64_t)r + 1);
            int x = a->seg_order[r];
            a->seg_order[r] = a->seg_order[j];
            a->seg_order[j] = x;
        }
        for (int start = 0; start < n_rows; start += a->minibatch)
            if ((st = ppo_minibatch_step(a, a->seg_order + start, RLT_MIN(a->minibatch, n_rows - start), diag)) !=
                RLT_STATUS_OK)
                return st;
    }
    a->stats.n_ppo_updates++;
    return RLT_STATUS_OK;
}

/* ---- exploring the model ------------------------------------------------- */

/* A random valid configuration, or the last draw when none was found. */
static void random_start(rlt_tuner *t, rlt_config *out)
{
    for (int i = 0; i < PPO_START_TRIES; i++) {
        rlt_space_random(t->space, &t->rng, out);
        if (rlt_space_is_valid(t->space, out)) return;
    }
}

/* One step of every walker: act, move (or stay when the move is invalid),
 * record the transitions as row `seg_step` of the segment, offer the
 * configurations reached to the candidates. *out_changed: whether one
 * entered the first n_top. */
static rlt_status walk_step(rlt_tuner *t, int seg_step, int n_top, bool *out_changed, rlt_diag *diag)
{
    ppo_agent *a = t->state;
    const rlt_space *s = t->space;
    int w = a->n_walkers, nk = a->n_knobs;
    float *obs = a->seg_obs + (size_t)seg_step * (size_t)w * (size_t)nk;
    for (int i = 0; i < w; i++) encode(s, &a->walkers[i], obs + (size_t)i * (size_t)nk);
    rlt_status st;
    if ((st = rlt_mlp_predict(a->net, w, obs, a->step_out, diag)) != RLT_STATUS_OK) return st;
    split_outputs(a, w, a->step_out, a->step_logits, a->seg_value + (size_t)seg_step * (size_t)w);
    if ((st = rlt_nn_log_softmax(&a->groups, w, a->step_logits, a->step_logp, diag)) != RLT_STATUS_OK) return st;
    for (int i = 0; i < w; i++) {
        size_t row = (size_t)seg_step * (size_t)w + (size_t)i;
        const float *lp = a->step_logp + (size_t)i * 3 * (size_t)nk;
        int *act = a->seg_actions + row * (size_t)nk;
        double log_prob = 0;
        a->next[i] = a->walkers[i];
        for (int k = 0; k < nk; k++) {
            double u = rlt_rng_uniform(&t->rng);
            int j = 2;
            for (int m = 0; m < 2; m++) {
                u -= exp((double)lp[3 * k + m]);
                if (u < 0) {
                    j = m;
                    break;
                }
            }
            act[k] = j;
            log_prob += lp[3 * k + j];
            int v = a->walkers[i].choice[k] + j - 1;
            a->next[i].choice[k] = (int16_t)RLT_MIN(RLT_MAX(v, 0), s->knobs[k].n_choices - 1);
        }
        a->seg_logp[row] = (float)log_prob;
        a->next_index[i] = rlt_space_index_of(s, &a->next[i]);
    }
    score_configs(t, w, a->next, a->next_index, a->next_score);
    bool changed = false;
    for (int i = 0; i < w; i++) {
        size_t row = (size_t)seg_step * (size_t)w + (size_t)i;
        if (!isfinite(a->next_score[i])) {
            a->seg_reward[row] = (float)(reward_of(a, a->walker_score[i]) - PPO_INVALID_PENALTY);
            continue; /* stays */
        }
        a->walkers[i] = a->next[i];
        a->walker_score[i] = a->next_score[i];
        a->seg_reward[row] = (float)reward_of(a, a->next_score[i]);
        int pos = cand_offer(t, &a->next[i], a->next_index[i], a->next_score[i]);
        changed |= pos >= 0 && pos < n_top;
    }
    *out_changed = changed;
    return RLT_STATUS_OK;
}

/* A new episode: every walker at a random valid configuration. */
static void new_episode(rlt_tuner *t)
{
    ppo_agent *a = t->state;
    for (int i = 0; i < a->n_walkers; i++) random_start(t, &a->walkers[i]);
    a->episode_step = 0;
    a->stats.n_episodes++;
}

/* The walkers' scores under the model in force; their positions offered to
 * the candidates. */
static void score_walkers(rlt_tuner *t)
{
    ppo_agent *a = t->state;
    int w = a->n_walkers;
    for (int i = 0; i < w; i++) a->next_index[i] = rlt_space_index_of(t->space, &a->walkers[i]);
    score_configs(t, w, a->walkers, a->next_index, a->walker_score);
    for (int i = 0; i < w; i++) cand_offer(t, &a->walkers[i], a->next_index[i], a->walker_score[i]);
}

/* A space of at most score_whole configurations is scored whole by the
 * model instead of walked (and gets the score-weighted model by default). */
static bool is_scored_whole(const rlt_tuner *t)
{
    const ppo_agent *a = t->state;
    return rlt_space_size(t->space) <= (uint64_t)a->score_whole;
}

/* Walks the walkers over the model in force, training the actor-critic on
 * the way, and keeps the candidates. Stops after explore_steps steps, or
 * after stall_steps in a row that brought nothing new into the first n_top
 * candidates (the batch being proposed), or once every configuration of
 * the space is scored. Episodes (all walkers move together) last
 * episode_steps steps, across explorations. */
static rlt_status explore(rlt_tuner *t, int n_top, rlt_diag *diag)
{
    ppo_agent *a = t->state;
    int w = a->n_walkers;
    a->n_cand = 0;
    if (a->stats.n_episodes == 0) new_episode(t);
    score_walkers(t);
    int seg = 0, stall = 0, step = 0;
    rlt_status st = RLT_STATUS_OK;
    uint64_t size = rlt_space_size(t->space);
    if (is_scored_whole(t)) {
        /* a small space is scored whole: cheaper than walking it */
        for (uint64_t start = 0; start < size; start += (uint64_t)w) {
            int n = (int)RLT_MIN((uint64_t)w, size - start);
            for (int i = 0; i < n; i++) {
                a->next_index[i] = start + (uint64_t)i;
                rlt_space_config_of(t->space, a->next_index[i], &a->next[i]);
            }
            score_configs(t, n, a->next, a->next_index, a->next_score);
            for (int i = 0; i < n; i++) cand_offer(t, &a->next[i], a->next_index[i], a->next_score[i]);
        }
    }
    /* once every configuration of the space is scored, the candidates are
     * the best unvisited ones there are: walking on cannot change them */
    for (; step < a->explore_steps && stall < a->stall_steps && a->cache.n + a->n_invalid_in_space < size; step++) {
        if (a->episode_step >= a->episode_steps) {
            /* the episode's last steps are trained with the values of where
             * it stopped (a time limit, not an end state), then a new one */
            if (seg > 0 && (st = train_segment(t, seg, diag)) != RLT_STATUS_OK) return st;
            seg = 0;
            new_episode(t);
            score_walkers(t);
        }
        bool changed = false;
        if ((st = walk_step(t, seg, n_top, &changed, diag)) != RLT_STATUS_OK) return st;
        a->episode_step++;
        stall = changed ? 0 : stall + 1;
        if (++seg == PPO_SEGMENT_STEPS) {
            if ((st = train_segment(t, seg, diag)) != RLT_STATUS_OK) return st;
            seg = 0;
        }
    }
    if (seg > 0 && (st = train_segment(t, seg, diag)) != RLT_STATUS_OK) return st;
    a->stats.n_explorations++;
    a->stats.n_steps += step;
    a->stats.last_steps = step;
    a->stats.last_candidates = a->n_cand;
    return RLT_STATUS_OK;
}

/* The plan of the explored model: adaptive sampling's configurations (at
 * most max), then the other candidates, best first. */
static rlt_status make_plan(rlt_tuner *t, int max, rlt_diag *diag)
{
    ppo_agent *a = t->state;
    a->n_plan = a->n_plan_sampled = a->plan_pt = 0;
    if (a->n_cand == 0) return RLT_STATUS_OK;
    int k_max = RLT_MIN(max, a->n_cand), n_sampled = 0, k = 0;
    rlt_status st = rlt_ppo_adaptive_sample(t->space, &t->visited, a->n_cand, a->cand, k_max, &t->rng, a->plan,
                                            &n_sampled, &k, diag);
    if (st != RLT_STATUS_OK) return st;
    a->stats.last_k = k;
    a->n_plan = a->n_plan_sampled = n_sampled;
    for (int i = 0; i < a->n_cand; i++) {
        bool is_sampled = false;
        for (int j = 0; j < n_sampled && !is_sampled; j++)
            is_sampled = same_config(t->space, &a->plan[j], &a->cand[i]);
        if (!is_sampled) a->plan[a->n_plan++] = a->cand[i];
    }
    return RLT_STATUS_OK;
}

/* ---- the tuner interface ------------------------------------------------- */

static int ppo_next(rlt_tuner *t, int max, rlt_config *out)
{
    ppo_agent *a = t->state;
    if (a->has_model && a->explored_fit != a->stats.n_fits) {
        a->explored_fit = a->stats.n_fits;
        a->n_plan = a->n_plan_sampled = a->plan_pt = 0;
        /* a failure here (out of memory) leaves no plan: random proposals */
        if (explore(t, max, NULL) != RLT_STATUS_OK || make_plan(t, max, NULL) != RLT_STATUS_OK) a->n_plan = 0;
    }
    int n = 0;
    while (n < max && a->plan_pt < a->n_plan) {
        int i = a->plan_pt++;
        if (!rlt_visited_add(&t->visited, rlt_space_index_of(t->space, &a->plan[i]))) continue;
        out[n++] = a->plan[i];
        if (i < a->n_plan_sampled) a->stats.n_sampled++;
        else a->stats.n_ranked++;
    }
    while (n < max &&
           (rlt_tuner_draw_new(t, PPO_DRAW_TRIES, &out[n]) || rlt_tuner_scan_new(t, &a->scan_cursor, &out[n]))) {
        n++;
        a->stats.n_random++;
    }
    return n;
}

static rlt_status ppo_update(rlt_tuner *t, int n, const rlt_config *configs, const double *scores, rlt_diag *diag)
{
    ppo_agent *a = t->state;
    /* failures score 0; configurations invalid in this space (old records)
     * are only marked visited */
    rlt_status st = rlt_cost_rows_add(&a->rows, t->space, n, configs, scores, diag);
    if (st == RLT_STATUS_OK && a->rows.best_y > 0 && a->rows.n >= 2) st = fit_model(t, diag);
    if (st != RLT_STATUS_OK) rlt_diag_prefix(diag, "ppo tuner, update");
    return st;
}

static rlt_status alloc_buffers(ppo_agent *a, int n_features, rlt_diag *diag)
{
    size_t w = (size_t)a->n_walkers, nk = (size_t)a->n_knobs, cols = 3 * nk;
    size_t seg = (size_t)PPO_SEGMENT_STEPS * w, mb = (size_t)a->minibatch;
    size_t mb_rows = RLT_MAX(mb, w); /* mb_obs also holds the walkers' observations */
    bool is_ok = true;
    is_ok &= (a->walkers = rlt_calloc(w, sizeof *a->walkers)) != NULL;
    is_ok &= (a->cand = rlt_calloc(w, sizeof *a->cand)) != NULL;
    is_ok &= (a->cand_index = rlt_calloc(w, sizeof *a->cand_index)) != NULL;
    is_ok &= (a->cand_score = rlt_calloc(w, sizeof *a->cand_score)) != NULL;
    is_ok &= (a->plan = rlt_calloc(2 * w, sizeof *a->plan)) != NULL; /* sampled, then candidates */
    is_ok &= (a->walker_score = rlt_calloc(w, sizeof *a->walker_score)) != NULL;
    is_ok &= (a->next = rlt_calloc(w, sizeof *a->next)) != NULL;
    is_ok &= (a->next_index = rlt_calloc(w, sizeof *a->next_index)) != NULL;
    is_ok &= (a->next_score = rlt_calloc(w, sizeof *a->next_score)) != NULL;
    is_ok &= (a->step_out = rlt_calloc(w * (cols + 1), sizeof(float))) != NULL;
    is_ok &= (a->step_logits = rlt_calloc(w * cols, sizeof(float))) != NULL;
    is_ok &= (a->step_logp = rlt_calloc(w * cols, sizeof(float))) != NULL;
    is_ok &= (a->miss = rlt_calloc(w, sizeof *a->miss)) != NULL;
    is_ok &= (a->miss_score = rlt_calloc(w, sizeof *a->miss_score)) != NULL;
    is_ok &= (a->features = rlt_calloc(RLT_MIN(w, (size_t)RLT_COST_ROWS_CHUNK) * (size_t)n_features,
                                       sizeof(float))) != NULL;
    is_ok &= (a->seg_obs = rlt_calloc(seg * nk, sizeof(float))) != NULL;
    is_ok &= (a->seg_actions = rlt_calloc(seg * nk, sizeof(int))) != NULL;
    float **per_seg[] = {&a->seg_logp, &a->seg_value, &a->seg_reward, &a->seg_adv, &a->seg_return};
    for (size_t i = 0; i < RLT_ARRAY_LEN(per_seg); i++) is_ok &= (*per_seg[i] = rlt_calloc(seg, sizeof(float))) != NULL;
    is_ok &= (a->seg_order = rlt_calloc(seg, sizeof(int))) != NULL;
    is_ok &= (a->boot_value = rlt_calloc(w, sizeof(float))) != NULL;
    is_ok &= (a->mb_obs = rlt_calloc(mb_rows * nk, sizeof(float))) != NULL;
    float **per_col[] = {&a->mb_logits, &a->mb_logp, &a->mb_dlogp, &a->mb_dlogits, &a->mb_dentropy};
    for (size_t i = 0; i < RLT_ARRAY_LEN(per_col); i++)
        is_ok &= (*per_col[i] = rlt_calloc(mb * cols, sizeof(float))) != NULL;
    is_ok &= (a->mb_out = rlt_calloc(mb * (cols + 1), sizeof(float))) != NULL;
    is_ok &= (a->mb_dout = rlt_calloc(mb * (cols + 1), sizeof(float))) != NULL;
    float **per_row[] = {&a->mb_log_prob, &a->mb_dlog_prob};
    for (size_t i = 0; i < RLT_ARRAY_LEN(per_row); i++) is_ok &= (*per_row[i] = rlt_calloc(mb, sizeof(float))) != NULL;
    is_ok &= (a->mb_actions = rlt_calloc(mb * nk, sizeof(int))) != NULL;
    return is_ok ? RLT_STATUS_OK : rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a tuner");
}

/* Resolves the options (0 = Chameleon's value) and checks their ranges. */
static rlt_status resolve_opts(const rlt_tuner_opts *o, ppo_agent *a, rlt_diag *diag)
{
    a->lr = o->ppo_lr != 0 ? o->ppo_lr : 1e-3;
    a->epochs = o->ppo_epochs != 0 ? o->ppo_epochs : 3;
    a->minibatch = o->ppo_minibatch != 0 ? o->ppo_minibatch : 32;
    a->gamma = o->ppo_gamma != 0 ? o->ppo_gamma : 0.9;
    a->lambda = o->ppo_lambda != 0 ? o->ppo_lambda : 0.99;
    a->clip = o->ppo_clip != 0 ? o->ppo_clip : 0.2;
    a->entropy_coef = o->ppo_entropy_coef > 0 ? o->ppo_entropy_coef : o->ppo_entropy_coef < 0 ? 0.0 : 0.3;
    a->n_walkers = o->ppo_walkers != 0 ? o->ppo_walkers : 128;
    a->episode_steps = o->ppo_episode_steps != 0 ? o->ppo_episode_steps : 500;
    a->explore_steps = o->ppo_explore_steps != 0 ? o->ppo_explore_steps : 100;
    a->stall_steps = o->ppo_stall_steps != 0 ? o->ppo_stall_steps : 50;
    a->score_whole = o->ppo_score_whole != 0 ? o->ppo_score_whole : PPO_SMALL_SPACE;
    const char *bad = NULL;
    if (!(a->lr > 0 && a->lr <= 1)) bad = "ppo_lr must be in (0, 1]";
    else if (a->epochs < 1 || a->epochs > 100) bad = "ppo_epochs must be in 1..100";
    else if (a->minibatch < 1 || a->minibatch > PPO_MAX_MINIBATCH) bad = "ppo_minibatch must be in 1..4096";
    else if (!(a->gamma > 0 && a->gamma < 1)) bad = "ppo_gamma must be in (0, 1)";
    else if (!(a->lambda > 0 && a->lambda <= 1)) bad = "ppo_lambda must be in (0, 1]";
    else if (!(a->clip > 0 && a->clip < 1)) bad = "ppo_clip must be in (0, 1)";
    else if (!isfinite(a->entropy_coef)) bad = "ppo_entropy_coef must be finite";
    else if (a->n_walkers < 1 || a->n_walkers > PPO_MAX_WALKERS) bad = "ppo_walkers must be in 1..4096";
    else if (a->episode_steps < 1) bad = "ppo_episode_steps must be >= 1";
    else if (a->explore_steps < 1 || a->explore_steps > 100000) bad = "ppo_explore_steps must be in 1..100000";
    else if (a->stall_steps < 1) bad = "ppo_stall_steps must be >= 1";
    else if (a->score_whole < 1) bad = "ppo_score_whole must be >= 1";
    if (bad)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "ppo tuner: %s (lr %g, epochs %d, minibatch %d, gamma %g, lambda %g, clip %g, entropy_coef "
                        "%g, walkers %d, episode_steps %d, explore_steps %d, stall_steps %d)",
                        bad, a->lr, a->epochs, a->minibatch, a->gamma, a->lambda, a->clip, a->entropy_coef,
                        a->n_walkers, a->episode_steps, a->explore_steps, a->stall_steps);
    return RLT_STATUS_OK;
}

static rlt_status ppo_init(rlt_tuner *t, rlt_diag *diag)
{
    /* BLAS worker threads must not compete with the measuring child for the
     * cores; the networks are small enough for one thread. (XGBoost runs
     * with one thread too: cost_model.c.) */
    openblas_set_num_threads(1);
    const rlt_space *s = t->space;
    const rlt_tuner_opts *o = &t->opts;
    ppo_agent *a = rlt_calloc(1, sizeof *a);
    if (!a) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a tuner");
    t->state = a;
    rlt_status st = resolve_opts(o, a, diag);
    if (st != RLT_STATUS_OK) return st;
    if (s->n_knobs < 1) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "ppo tuner: the space has no knobs");
    a->n_knobs = s->n_knobs;
    a->groups = (rlt_nn_groups){.n_cols = 3 * s->n_knobs, .n_groups = s->n_knobs, .sizes = NULL};
    a->explored_fit = -1;
    int n_features = rlt_space_n_features(s);
    if ((st = alloc_buffers(a, n_features, diag)) != RLT_STATUS_OK) return st;

    a->n_outputs = 3 * a->n_knobs + 1;
    rlt_mlp_spec spec = {.n_inputs = a->n_knobs,
                         .n_layers = 3,
                         .layers = {{PPO_HIDDEN, RLT_NN_ACT_TANH},
                                    {PPO_HIDDEN, RLT_NN_ACT_TANH},
                                    {a->n_outputs, RLT_NN_ACT_NONE}}};
    if ((st = rlt_mlp_create(&spec, rlt_rng_u64(&t->rng), &a->net, diag)) != RLT_STATUS_OK) return st;
    /* a near-uniform first policy (PPO's small-gain policy head): the
     * logits' rows of the output weights scaled down */
    float *head = NULL;
    rlt_mlp_layer_params(a->net, 2, &head, NULL);
    for (size_t i = 0; i < (size_t)3 * (size_t)a->n_knobs * PPO_HIDDEN; i++) head[i] *= (float)PPO_HEAD_GAIN;
    if ((st = rlt_adam_create(&(rlt_adam_opts){.lr = a->lr}, a->net, &a->adam, diag)) != RLT_STATUS_OK) return st;

    /* the cost model: AutoTVM's (and Chameleon's) rank:pairwise where the
     * walkers walk it, since they are rewarded wherever they step and need
     * the order everywhere; Ansor's score-weighted regression where the
     * space is scored whole and only the top of the ranking is used
     * (docs/tuners.md, "ppo": each is the better of the two in its regime
     * in the replays) */
    a->rows.n_features = n_features;
    rlt_cost_model_opts mo = {.seed = o->seed};
    rlt_cost_loss def = is_scored_whole(t) ? RLT_COST_REG_WEIGHTED : RLT_COST_RANK;
    if ((st = rlt_cost_loss_choose("ppo", o->cost_loss, def, &mo.loss, diag)) != RLT_STATUS_OK ||
        (st = rlt_cost_model_create(&mo, n_features, &a->model, diag)) != RLT_STATUS_OK)
        return st;
    a->stats.cost_loss = mo.loss;
    if (o->n_transfer > 0) {
        /* a warm start: the first batch comes from the model, as in xgb */
        if (!o->transfer_xs || !o->transfer_ys)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%d transferred rows announced but none given",
                            o->n_transfer);
        if ((st = rlt_cost_rows_add_transfer(&a->rows, o->n_transfer, o->transfer_xs, o->transfer_ys, diag)) !=
            RLT_STATUS_OK)
            return st;
        if (a->rows.n >= 2 && (st = fit_model(t, diag)) != RLT_STATUS_OK) return st;
    }
    return RLT_STATUS_OK;
}

static void ppo_fini(rlt_tuner *t)
{
    ppo_agent *a = t->state;
    if (!a) return;
    rlt_mlp_destroy(a->net);
    rlt_adam_destroy(a->adam);
    rlt_cost_model_destroy(a->model);
    rlt_cost_rows_free(&a->rows);
    rlt_score_map_free(&a->cache);
    rlt_visited_free(&a->invalid);
    void *arrays[] = {a->walkers, a->cand, a->cand_index, a->cand_score, a->plan, a->walker_score, a->next,
                      a->next_index, a->next_score, a->step_logits, a->step_out, a->mb_out, a->mb_dout,
                      a->step_logp, a->miss, a->miss_score, a->features, a->seg_obs, a->seg_actions, a->seg_logp,
                      a->seg_value, a->seg_reward, a->seg_adv, a->seg_return, a->seg_order, a->boot_value,
                      a->mb_obs, a->mb_logits, a->mb_logp, a->mb_dlogp, a->mb_dlogits, a->mb_dentropy,
                      a->mb_log_prob, a->mb_dlog_prob, a->mb_actions};
    for (size_t i = 0; i < RLT_ARRAY_LEN(arrays); i++) rlt_free(arrays[i]);
    rlt_free(a);
}

/* ---- saved agents ------------------------------------------------------- */

/* Kept: the actor-critic with Adam's state and the count of PPO updates.
 * Restarted: the cost model and its rows (another workload's scores; a
 * warm start of the model is --transfer's job), the walkers, the
 * candidates and the reward normaliser, which follows each fitted model. */
static rlt_status ppo_save(const rlt_tuner *t, rlt_agent_file *f, rlt_diag *diag)
{
    const ppo_agent *a = t->state;
    rlt_status st = rlt_agent_file_put_mlp(f, "actor_critic", a->net, a->adam, diag);
    if (st != RLT_STATUS_OK) return st;
    return rlt_agent_file_put_real(f, "n_ppo_updates", (double)a->stats.n_ppo_updates, diag);
}

static rlt_status ppo_load(rlt_tuner *t, const rlt_agent_file *f, rlt_diag *diag)
{
    ppo_agent *a = t->state;
    rlt_mlp *net = NULL;
    rlt_adam *adam = NULL;
    double n_updates = 0;
    rlt_status st;
    if ((st = rlt_tuner_agent_check_knobs(f, t->space, false, diag)) != RLT_STATUS_OK ||
        (st = rlt_agent_file_get_mlp(f, "actor_critic", rlt_mlp_get_spec(a->net), &net, &adam, diag)) !=
            RLT_STATUS_OK ||
        (st = rlt_agent_file_get_real(f, "n_ppo_updates", &n_updates, diag)) != RLT_STATUS_OK)
        goto fail;
    if (!adam || !(n_updates >= 0 && n_updates < 1e15)) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                      "agent file '%s': ppo's optimiser or update count is missing or out of range",
                      rlt_agent_file_source(f));
        goto fail;
    }
    rlt_mlp_destroy(a->net);
    rlt_adam_destroy(a->adam);
    a->net = net;
    a->adam = adam;
    a->stats.n_ppo_updates = (int64_t)n_updates;
    return RLT_STATUS_OK;
fail:
    rlt_mlp_destroy(net);
    rlt_adam_destroy(adam);
    return st;
}

const rlt_tuner_ops rlt_tuner_ppo_ops = {.name = "ppo",
                                         .flags = RLT_TUNER_HAS_AGENT | RLT_TUNER_USES_TRANSFER,
                                         .init = ppo_init,
                                         .next_batch = ppo_next,
                                         .update = ppo_update,
                                         .fini = ppo_fini,
                                         .save = ppo_save,
                                         .load = ppo_load};

rlt_status rlt_tuner_ppo_stats(const rlt_tuner *t, rlt_ppo_stats *out, rlt_diag *diag)
{
    if (t->ops != &rlt_tuner_ppo_ops)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "tuner '%s' is not a ppo tuner", t->ops->name);
    *out = ((const ppo_agent *)t->state)->stats;
    return RLT_STATUS_OK;
}

/* ---- adaptive sampling --------------------------------------------------- */

/* The knobs clustered on: those with at least half as many choices as the
 * knob with the most, and at least 2. */
static int cluster_knobs(const rlt_space *s, int *out)
{
    int most = 0, n = 0;
    for (int k = 0; k < s->n_knobs; k++) most = RLT_MAX(most, s->knobs[k].n_choices);
    for (int k = 0; k < s->n_knobs; k++)
        if (s->knobs[k].n_choices >= 2 && 2 * s->knobs[k].n_choices >= most) out[n++] = k;
    return n;
}

static bool is_taken(const rlt_space *s, const rlt_visited *visited, const rlt_config *out, int n_out,
                     const rlt_config *c)
{
    if (visited && rlt_visited_has(visited, rlt_space_index_of(s, c))) return true;
    for (int i = 0; i < n_out; i++)
        if (same_config(s, &out[i], c)) return true;
    return false;
}

rlt_status rlt_ppo_adaptive_sample(const rlt_space *s, const rlt_visited *visited, int n, const rlt_config *candidates,
                                   int k_max, rlt_rng *rng, rlt_config *out, int *out_n, int *out_k, rlt_diag *diag)
{
    *out_n = 0;
    if (out_k) *out_k = 0;
    if (n < 1 || k_max < 1)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "adaptive sampling: %d candidates, at most %d clusters (accepted: both >= 1)", n, k_max);
    int knobs[RLT_SPACE_MAX_KNOBS];
    int dim = cluster_knobs(s, knobs);
    if (dim == 0) {
        /* nothing to cluster on (every knob has one choice): the first */
        if (!is_taken(s, visited, out, 0, &candidates[0]) && rlt_space_is_valid(s, &candidates[0])) {
            out[0] = candidates[0];
            *out_n = 1;
        }
        if (out_k) *out_k = 1;
        return RLT_STATUS_OK;
    }
    double *points = rlt_malloc(sizeof *points * (size_t)n * (size_t)dim);
    double *member_d2 = rlt_malloc(sizeof *member_d2 * (size_t)n);
    rlt_kmeans km = {0};
    rlt_status st = RLT_STATUS_OK;
    if (!points || !member_d2) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory sampling %d candidates", n);
        goto done;
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < dim; j++)
            points[(size_t)i * (size_t)dim + (size_t)j] =
                (double)candidates[i].choice[knobs[j]] / (double)(s->knobs[knobs[j]].n_choices - 1);
    st = rlt_kmeans_elbow(points, n, dim, PPO_K_STEP, k_max, PPO_ELBOW_RATIO, PPO_KMEANS_ITERATIONS, rng, &km, diag);
    if (st != RLT_STATUS_OK) goto done;
    if (out_k) *out_k = km.k;
    int n_out = 0;
    for (int c = 0; c < km.k; c++) {
        const double *centroid = km.centroids + (size_t)c * (size_t)dim;
        /* the centroid's knobs rounded, the others by the members' mode */
        rlt_config pick = {0};
        for (int k = 0; k < s->n_knobs; k++) {
            int count[RLT_SPACE_MAX_CHOICES] = {0};
            for (int i = 0; i < n; i++)
                if (km.assign[i] == c) count[candidates[i].choice[k]]++;
            int mode = 0;
            for (int v = 1; v < s->knobs[k].n_choices; v++)
                if (count[v] > count[mode]) mode = v;
            pick.choice[k] = (int16_t)mode;
        }
        for (int j = 0; j < dim; j++) {
            int n_choices = s->knobs[knobs[j]].n_choices;
            long v = lround(centroid[j] * (n_choices - 1));
            pick.choice[knobs[j]] = (int16_t)RLT_MIN(RLT_MAX(v, 0), n_choices - 1);
        }
        if (!is_taken(s, visited, out, n_out, &pick) && rlt_space_is_valid(s, &pick)) {
            out[n_out++] = pick;
            continue;
        }
        /* else the nearest member that is still free */
        for (int i = 0; i < n; i++)
            member_d2[i] = km.assign[i] == c ? 0 : INFINITY;
        for (int i = 0; i < n; i++) {
            if (km.assign[i] != c) continue;
            for (int j = 0; j < dim; j++) {
                double d = points[(size_t)i * (size_t)dim + (size_t)j] - centroid[j];
                member_d2[i] += d * d;
            }
        }
        for (;;) {
            int best = -1;
            for (int i = 0; i < n; i++)
                if (isfinite(member_d2[i]) && (best < 0 || member_d2[i] < member_d2[best])) best = i;
            if (best < 0) break; /* every member is taken */
            member_d2[best] = INFINITY;
            if (!is_taken(s, visited, out, n_out, &candidates[best]) && rlt_space_is_valid(s, &candidates[best])) {
                out[n_out++] = candidates[best];
                break;
            }
        }
    }
    *out_n = n_out;
done:
    rlt_kmeans_free(&km);
    rlt_free(points);
    rlt_free(member_d2);
    return st;
}
