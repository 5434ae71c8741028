/*
 * bandit.c - the "bandit" tuner: ktune's one-step contextual bandit, a
 * policy over whole configurations trained by PPO with horizon 1 and
 * gamma 0 (docs/tuners.md, "bandit").
 *
 * The policy is an MLP (context -> 64 tanh -> 64 tanh -> one group of
 * logits per knob). The context describes the workload: the loop features
 * of a fixed reference configuration (the first valid one in index order).
 * A proposal samples every knob from its softmax head; an invalid or
 * visited sample is drawn again, a bounded number of times, before a
 * uniformly random new configuration is taken instead. Reported scores
 * collect in a rollout of at least BANDIT_ROLLOUT_ROWS rows; the reward of
 * a row is its score over the best score so far, its advantage the reward
 * minus a moving-average baseline, divided by the rollout's standard
 * deviation. Each update is PPO's clipped surrogate over the rollout (a
 * few epochs of shuffled minibatches) with an entropy bonus, gradient
 * clipping and Adam.
 *
 * Entry point: rlt_tuner_bandit_ops (created through rlt_tuner_create).
 */
#include "nn/nn.h"
#include "nn/agent_file.h"
#include "search/tuner.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#define BANDIT_HIDDEN 64            /* units in each of the two tanh layers */
#define BANDIT_MAX_MINIBATCH 1024   /* larger minibatch options are cut to this */
#define BANDIT_ROLLOUT_ROWS 16      /* rows reported before an update (tune's default batch) */
#define BANDIT_SAMPLE_TRIES 64      /* policy samples per proposal before the random fallback */
#define BANDIT_DRAW_TRIES 1024      /* rlt_tuner_draw_new's tries in the fallback */
#define BANDIT_REFERENCE_SCAN 4096  /* indices searched for the reference configuration */
#define BANDIT_CONTEXT_SCALE 0.0625 /* 1/16: log2 features (up to about 20) to about 1 */
#define BANDIT_HEAD_GAIN 0.01       /* initial output weights scaled by this: a near-uniform policy */
#define BANDIT_MAX_GRAD_NORM 0.5    /* PPO's max_grad_norm (OpenAI baselines) */
#define BANDIT_BASELINE_RATE 0.25   /* weight of each rollout's mean reward in the baseline */
#define BANDIT_MAX_COLS (RLT_SPACE_MAX_KNOBS * RLT_SPACE_MAX_CHOICES)

/* A proposal not yet reported, with the log-probability the policy gave it
 * when it was proposed (PPO's "old" policy). */
typedef struct bandit_pending {
    uint64_t index;
    float log_prob;
} bandit_pending;

/* All of the agent's state: what a later save / load keeps is everything
 * but the minibatch scratch. */
typedef struct bandit_agent {
    /* hyper-parameters, defaults resolved */
    double lr, clip, entropy_coef;
    int epochs, minibatch;
    /* the policy */
    int n_context;
    float *context; /* [n_context]: one fixed vector for the run */
    int n_knobs;
    int sizes[RLT_SPACE_MAX_KNOBS]; /* choices per knob: the heads */
    int offsets[RLT_SPACE_MAX_KNOBS];
    rlt_nn_groups groups; /* .sizes points into this struct */
    rlt_mlp *policy;
    rlt_adam *adam;
    /* rewards, baseline, counters */
    double best_score; /* the best score reported; rewards are scores over it */
    double baseline;   /* moving average of rewards, in units of best_score */
    bool has_baseline;
    int64_t n_proposed, n_fallbacks, n_reported, n_updates;
    /* proposals waiting for their scores */
    bandit_pending *pending;
    int n_pending, cap_pending;
    uint64_t scan_cursor; /* index order once random draws run dry */
    /* the rollout: reported rows not yet trained on */
    int n_rows, cap_rows;
    int *actions;        /* [cap_rows x n_knobs] */
    float *old_log_prob; /* [cap_rows] */
    double *scores;      /* [cap_rows] */
    float *advantage;    /* [cap_rows] */
    int *order;          /* [cap_rows] */
    /* minibatch scratch, [minibatch] rows */
    float *xs, *logits, *logp, *dlogp, *dlogits, *dentropy, *log_prob, *dlog_prob, *mb_old, *mb_advantage;
    int *mb_actions;
} bandit_agent;

/* ---- creation ----------------------------------------------------------- */

/* The context: the loop part of the features (docs/features.md) of the
 * first valid configuration in index order, scaled. It describes the
 * workload (loop extents, strides, footprints of a nearly untiled nest),
 * not a proposal. Constant 1 when no valid configuration is found early. */
static void make_context(const rlt_space *s, bandit_agent *a, float *features)
{
    int first_loop = 2 * s->n_knobs;
    uint64_t size = rlt_space_size(s);
    for (uint64_t i = 0; i < size && i < BANDIT_REFERENCE_SCAN; i++) {
        rlt_config c;
        rlt_space_config_of(s, i, &c);
        if (rlt_space_features(s, &c, features, NULL) != RLT_STATUS_OK) continue;
        for (int j = 0; j < a->n_context; j++)
            a->context[j] = (float)(features[first_loop + j] * BANDIT_CONTEXT_SCALE);
        return;
    }
    for (int j = 0; j < a->n_context; j++) a->context[j] = 1.0f;
}

static rlt_status alloc_scratch(bandit_agent *a, rlt_diag *diag)
{
    size_t rows = (size_t)a->minibatch, cols = (size_t)a->groups.n_cols;
    float **per_col[] = {&a->logits, &a->logp, &a->dlogp, &a->dlogits, &a->dentropy};
    float **per_row[] = {&a->log_prob, &a->dlog_prob, &a->mb_old, &a->mb_advantage};
    bool is_ok = true;
    for (size_t i = 0; i < RLT_ARRAY_LEN(per_col); i++)
        is_ok &= (*per_col[i] = rlt_malloc(rows * cols * sizeof(float))) != NULL;
    for (size_t i = 0; i < RLT_ARRAY_LEN(per_row); i++)
        is_ok &= (*per_row[i] = rlt_malloc(rows * sizeof(float))) != NULL;
    is_ok &= (a->xs = rlt_malloc(rows * (size_t)a->n_context * sizeof(float))) != NULL;
    is_ok &= (a->mb_actions = rlt_malloc(rows * (size_t)a->n_knobs * sizeof(int))) != NULL;
    if (!is_ok) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a tuner");
    /* every row of a minibatch sees the same context */
    size_t n_context = (size_t)a->n_context;
    for (size_t r = 0; r < rows; r++) memcpy(a->xs + r * n_context, a->context, sizeof(float) * n_context);
    return RLT_STATUS_OK;
}

static rlt_status bandit_init(rlt_tuner *t, rlt_diag *diag)
{
    /* BLAS worker threads must not compete with the measuring child for the
     * cores (2 on the test machine); at these sizes one thread is as fast. */
    openblas_set_num_threads(1);
    const rlt_space *s = t->space;
    const rlt_tuner_opts *o = &t->opts;
    bandit_agent *a = rlt_calloc(1, sizeof *a);
    if (!a) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a tuner");
    t->state = a;
    a->lr = o->bandit_lr > 0 ? o->bandit_lr : 1e-3;
    a->clip = o->bandit_clip > 0 ? o->bandit_clip : 0.2;
    a->epochs = o->bandit_epochs > 0 ? o->bandit_epochs : 3;
    a->minibatch = o->bandit_minibatch > 0 ? RLT_MIN(o->bandit_minibatch, BANDIT_MAX_MINIBATCH) : 32;
    a->entropy_coef = o->bandit_entropy_coef > 0 ? o->bandit_entropy_coef : o->bandit_entropy_coef < 0 ? 0.0 : 0.01;
    a->n_knobs = s->n_knobs;
    int n_cols = 0;
    for (int k = 0; k < s->n_knobs; k++) {
        a->sizes[k] = s->knobs[k].n_choices;
        a->offsets[k] = n_cols;
        n_cols += a->sizes[k];
    }
    a->groups = (rlt_nn_groups){.n_cols = n_cols, .n_groups = s->n_knobs, .sizes = a->sizes};
    a->n_context = RLT_FEATURE_LOOP_PART;
    a->context = rlt_calloc((size_t)a->n_context, sizeof *a->context);
    float *features = rlt_calloc((size_t)rlt_space_n_features(s), sizeof *features);
    if (!a->context || !features) {
        rlt_free(features);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a tuner");
    }
    make_context(s, a, features);
    rlt_free(features);
    rlt_status st = alloc_scratch(a, diag);
    if (st != RLT_STATUS_OK) return st;

    rlt_mlp_spec spec = {.n_inputs = a->n_context,
                         .n_layers = 3,
                         .layers = {{BANDIT_HIDDEN, RLT_NN_ACT_TANH},
                                    {BANDIT_HIDDEN, RLT_NN_ACT_TANH},
                                    {n_cols, RLT_NN_ACT_NONE}}};
    if ((st = rlt_mlp_create(&spec, o->seed, &a->policy, diag)) != RLT_STATUS_OK) return st;
    /* a near-uniform first policy: the output layer starts small, as PPO
     * implementations initialise the policy head with a gain of 0.01 */
    float *w = NULL;
    rlt_mlp_layer_params(a->policy, 2, &w, NULL);
    for (size_t i = 0; i < (size_t)n_cols * BANDIT_HIDDEN; i++) w[i] *= (float)BANDIT_HEAD_GAIN;
    return rlt_adam_create(&(rlt_adam_opts){.lr = a->lr}, a->policy, &a->adam, diag);
}

static void bandit_fini(rlt_tuner *t)
{
    bandit_agent *a = t->state;
    if (!a) return;
    rlt_mlp_destroy(a->policy);
    rlt_adam_destroy(a->adam);
    void *arrays[] = {a->context,  a->pending,  a->actions,   a->old_log_prob, a->scores,    a->advantage,
                      a->order,    a->xs,       a->logits,    a->logp,         a->dlogp,     a->dlogits,
                      a->dentropy, a->log_prob, a->dlog_prob, a->mb_old,       a->mb_advantage, a->mb_actions};
    for (size_t i = 0; i < RLT_ARRAY_LEN(arrays); i++) rlt_free(arrays[i]);
    rlt_free(a);
}

/* ---- proposing ---------------------------------------------------------- */

/* The policy's per-knob log-probabilities for the context: logp [n_cols]. */
static bool policy_log_probs(const bandit_agent *a, float *logp)
{
    float logits[BANDIT_MAX_COLS];
    return rlt_mlp_predict(a->policy, 1, a->context, logits, NULL) == RLT_STATUS_OK &&
           rlt_nn_log_softmax(&a->groups, 1, logits, logp, NULL) == RLT_STATUS_OK;
}

static float config_log_prob(const bandit_agent *a, const float *logp, const rlt_config *c)
{
    double sum = 0;
    for (int k = 0; k < a->n_knobs; k++) sum += logp[a->offsets[k] + c->choice[k]];
    return (float)sum;
}

/* One choice per knob, each drawn from its head (inverse CDF in double). */
static void sample_config(rlt_tuner *t, const float *logp, rlt_config *out)
{
    const bandit_agent *a = t->state;
    *out = (rlt_config){0};
    for (int k = 0; k < a->n_knobs; k++) {
        const float *head = logp + a->offsets[k];
        double u = rlt_rng_uniform(&t->rng);
        int choice = a->sizes[k] - 1;
        for (int j = 0; j < a->sizes[k] - 1; j++) {
            u -= exp((double)head[j]);
            if (u < 0) {
                choice = j;
                break;
            }
        }
        out->choice[k] = (int16_t)choice;
    }
}

static void pending_add(bandit_agent *a, uint64_t index, float log_prob)
{
    if (a->n_pending == a->cap_pending) {
        int cap = a->cap_pending ? 2 * a->cap_pending : 64;
        bandit_pending *p = rlt_realloc(a->pending, (size_t)cap * sizeof *p);
        if (!p) return; /* then its log-probability is taken at update */
        a->pending = p;
        a->cap_pending = cap;
    }
    a->pending[a->n_pending++] = (bandit_pending){index, log_prob};
}

/* Takes `index` out of the pending proposals; false when it is not there. */
static bool pending_take(bandit_agent *a, uint64_t index, float *out_log_prob)
{
    for (int i = a->n_pending - 1; i >= 0; i--) {
        if (a->pending[i].index != index) continue;
        *out_log_prob = a->pending[i].log_prob;
        a->pending[i] = a->pending[--a->n_pending];
        return true;
    }
    return false;
}

static int bandit_next(rlt_tuner *t, int max, rlt_config *out)
{
    bandit_agent *a = t->state;
    const rlt_space *s = t->space;
    float logp[BANDIT_MAX_COLS];
    /* without the policy (out of memory) proposals are random */
    bool has_policy = policy_log_probs(a, logp);
    int n = 0;
    while (n < max) {
        bool is_new = false;
        for (int i = 0; has_policy && i < BANDIT_SAMPLE_TRIES && !is_new; i++) {
            sample_config(t, logp, &out[n]);
            uint64_t index = rlt_space_index_of(s, &out[n]);
            if (rlt_visited_has(&t->visited, index)) continue;
            rlt_visited_add(&t->visited, index); /* an invalid one is not drawn again either */
            is_new = rlt_space_is_valid(s, &out[n]);
        }
        if (!is_new) {
            if (!rlt_tuner_draw_new(t, BANDIT_DRAW_TRIES, &out[n]) && !rlt_tuner_scan_new(t, &a->scan_cursor, &out[n]))
                break; /* exhausted */
            a->n_fallbacks++;
        }
        if (has_policy) pending_add(a, rlt_space_index_of(s, &out[n]), config_log_prob(a, logp, &out[n]));
        a->n_proposed++;
        n++;
    }
    return n;
}

/* ---- learning ----------------------------------------------------------- */

static bool grow_rollout(bandit_agent *a, int n_rows)
{
    if (n_rows <= a->cap_rows) return true;
    int cap = RLT_MAX(n_rows, 2 * a->cap_rows);
    size_t rows = (size_t)cap;
    int *actions = rlt_realloc(a->actions, rows * (size_t)a->n_knobs * sizeof *actions);
    if (actions) a->actions = actions;
    float *old_log_prob = rlt_realloc(a->old_log_prob, rows * sizeof *old_log_prob);
    if (old_log_prob) a->old_log_prob = old_log_prob;
    double *scores = rlt_realloc(a->scores, rows * sizeof *scores);
    if (scores) a->scores = scores;
    float *advantage = rlt_realloc(a->advantage, rows * sizeof *advantage);
    if (advantage) a->advantage = advantage;
    int *order = rlt_realloc(a->order, rows * sizeof *order);
    if (order) a->order = order;
    if (!actions || !old_log_prob || !scores || !advantage || !order) return false;
    a->cap_rows = cap;
    return true;
}

/* One PPO-clip gradient step on the rollout rows rows[0..m-1]. */
static rlt_status ppo_step(bandit_agent *a, const int *rows, int m, rlt_diag *diag)
{
    const rlt_nn_groups *g = &a->groups;
    size_t knobs = (size_t)a->n_knobs;
    for (int i = 0; i < m; i++) {
        memcpy(a->mb_actions + (size_t)i * knobs, a->actions + (size_t)rows[i] * knobs, knobs * sizeof(int));
        a->mb_old[i] = a->old_log_prob[rows[i]];
        a->mb_advantage[i] = a->advantage[rows[i]];
    }
    rlt_status st;
    if ((st = rlt_mlp_forward(a->policy, m, a->xs, a->logits, diag)) != RLT_STATUS_OK ||
        (st = rlt_nn_log_softmax(g, m, a->logits, a->logp, diag)) != RLT_STATUS_OK ||
        (st = rlt_nn_log_prob_picked(g, m, a->logp, a->mb_actions, a->log_prob, diag)) != RLT_STATUS_OK)
        return st;
    /* loss_i = -min(r A, clip(r, 1 - c, 1 + c) A) / m with r = pi / pi_old;
     * where the clipped term is the smaller one, it is constant in r */
    for (int i = 0; i < m; i++) {
        double ratio = exp((double)a->log_prob[i] - (double)a->mb_old[i]);
        double adv = a->mb_advantage[i];
        double clipped = fmin(fmax(ratio, 1.0 - a->clip), 1.0 + a->clip) * adv;
        a->dlog_prob[i] = ratio * adv <= clipped ? (float)(-adv * ratio / m) : 0.0f;
    }
    double entropy = 0;
    if ((st = rlt_nn_log_prob_picked_backward(g, m, a->mb_actions, a->dlog_prob, a->dlogp, diag)) != RLT_STATUS_OK ||
        (st = rlt_nn_log_softmax_backward(g, m, a->logp, a->dlogp, a->dlogits, diag)) != RLT_STATUS_OK ||
        (st = rlt_nn_entropy(g, m, a->logits, &entropy, a->dentropy, diag)) != RLT_STATUS_OK)
        return st;
    /* the bonus: loss -= coef * entropy */
    for (size_t j = 0; j < (size_t)m * (size_t)g->n_cols; j++) a->dlogits[j] -= (float)a->entropy_coef * a->dentropy[j];
    rlt_mlp_zero_grad(a->policy);
    if ((st = rlt_mlp_backward(a->policy, m, a->dlogits, NULL, diag)) != RLT_STATUS_OK ||
        (st = rlt_mlp_grad_clip(a->policy, BANDIT_MAX_GRAD_NORM, NULL, diag)) != RLT_STATUS_OK)
        return st;
    return rlt_adam_step(a->adam, a->policy, diag);
}

/* Advantages of the rollout's rows; false when they carry no preference
 * (every reward equal). */
static bool rollout_advantages(bandit_agent *a, int n)
{
    double mean = 0, var = 0;
    for (int i = 0; i < n; i++) {
        double s = a->scores[i];
        a->advantage[i] = (float)(isfinite(s) && s > 0 ? s / a->best_score : 0.0);
        mean += a->advantage[i];
    }
    mean /= n;
    for (int i = 0; i < n; i++) var += (a->advantage[i] - mean) * (a->advantage[i] - mean);
    var /= n;
    /* the baseline is that of the rollouts before (the first rollout's own
     * mean for the first), so it does not depend on the rows it judges */
    double baseline = a->has_baseline ? a->baseline : mean;
    a->baseline = a->has_baseline ? a->baseline + BANDIT_BASELINE_RATE * (mean - a->baseline) : mean;
    a->has_baseline = true;
    if (!(var > 1e-12)) return false;
    double scale = 1.0 / sqrt(var);
    for (int i = 0; i < n; i++) a->advantage[i] = (float)((a->advantage[i] - baseline) * scale);
    return true;
}

static rlt_status train(rlt_tuner *t, rlt_diag *diag)
{
    bandit_agent *a = t->state;
    int n = a->n_rows;
    a->n_rows = 0;
    if (a->best_score <= 0 || !rollout_advantages(a, n)) return RLT_STATUS_OK; /* nothing to learn from */
    for (int epoch = 0; epoch < a->epochs; epoch++) {
        for (int i = 0; i < n; i++) a->order[i] = i;
        for (int i = n - 1; i > 0; i--) {
            int j = (int)rlt_rng_below(&t->rng, (uint64_t)i + 1);
            int x = a->order[i];
            a->order[i] = a->order[j];
            a->order[j] = x;
        }
        for (int start = 0; start < n; start += a->minibatch) {
            rlt_status st = ppo_step(a, a->order + start, RLT_MIN(a->minibatch, n - start), diag);
            if (st != RLT_STATUS_OK) {
                rlt_diag_prefix(diag, "bandit update %lld", (long long)a->n_updates);
                return st;
            }
        }
    }
    a->n_updates++;
    return RLT_STATUS_OK;
}

static rlt_status bandit_update(rlt_tuner *t, int n, const rlt_config *configs, const double *scores,
                                rlt_diag *diag)
{
    bandit_agent *a = t->state;
    if (n <= 0) return RLT_STATUS_OK;
    if (!grow_rollout(a, a->n_rows + n))
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory training the bandit");
    /* PPO's old log-probabilities: a proposal's as it was proposed; a
     * configuration the tuner did not propose (a record read back) is taken
     * as a sample of the current policy */
    float logp[BANDIT_MAX_COLS];
    bool has_policy = false;
    for (int i = 0; i < n; i++) {
        int row = a->n_rows + i;
        int *action = a->actions + (size_t)row * (size_t)a->n_knobs;
        for (int k = 0; k < a->n_knobs; k++) {
            RLT_ASSERT(configs[i].choice[k] >= 0 && configs[i].choice[k] < a->sizes[k]);
            action[k] = configs[i].choice[k];
        }
        if (pending_take(a, rlt_space_index_of(t->space, &configs[i]), &a->old_log_prob[row])) continue;
        if (!has_policy && !(has_policy = policy_log_probs(a, logp)))
            return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory training the bandit");
        a->old_log_prob[row] = config_log_prob(a, logp, &configs[i]);
    }
    for (int i = 0; i < n; i++) {
        a->scores[a->n_rows + i] = scores[i];
        if (isfinite(scores[i]) && scores[i] > a->best_score) {
            /* the baseline follows the scores, not the unit */
            if (a->best_score > 0) a->baseline *= a->best_score / scores[i];
            a->best_score = scores[i];
        }
    }
    a->n_rows += n;
    a->n_reported += n;
    return a->n_rows >= BANDIT_ROLLOUT_ROWS ? train(t, diag) : RLT_STATUS_OK;
}

/* ---- saved agents ------------------------------------------------------- */

/* Kept: the policy with Adam's state and the reward baseline (a fraction of
 * the best score, so it carries over to another workload's scale).
 * Restarted: the best score, the rollout and the proposals in flight. The
 * heads are one per choice, so the space must have the same knobs with the
 * same numbers of choices; the context (the workload's loop features) is
 * this run's own. */
static rlt_status bandit_save(const rlt_tuner *t, rlt_agent_file *f, rlt_diag *diag)
{
    const bandit_agent *a = t->state;
    rlt_status st;
    if ((st = rlt_agent_file_put_mlp(f, "policy", a->policy, a->adam, diag)) != RLT_STATUS_OK ||
        (st = rlt_agent_file_put_real(f, "baseline", a->has_baseline ? a->baseline : -1.0, diag)) != RLT_STATUS_OK)
        return st;
    return rlt_agent_file_put_real(f, "n_updates", (double)a->n_updates, diag);
}

static rlt_status bandit_load(rlt_tuner *t, const rlt_agent_file *f, rlt_diag *diag)
{
    bandit_agent *a = t->state;
    rlt_mlp *policy = NULL;
    rlt_adam *adam = NULL;
    double baseline = 0, n_updates = 0;
    rlt_status st;
    if ((st = rlt_tuner_agent_check_knobs(f, t->space, true, diag)) != RLT_STATUS_OK ||
        (st = rlt_agent_file_get_mlp(f, "policy", rlt_mlp_get_spec(a->policy), &policy, &adam, diag)) !=
            RLT_STATUS_OK ||
        (st = rlt_agent_file_get_real(f, "baseline", &baseline, diag)) != RLT_STATUS_OK ||
        (st = rlt_agent_file_get_real(f, "n_updates", &n_updates, diag)) != RLT_STATUS_OK)
        goto fail;
    if (!adam || !(baseline == -1.0 || (baseline >= 0 && baseline <= 1)) || !(n_updates >= 0 && n_updates < 1e15)) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                      "agent file '%s': the bandit's optimiser, baseline or counter is missing or out of range",
                      rlt_agent_file_source(f));
        goto fail;
    }
    rlt_mlp_destroy(a->policy);
    rlt_adam_destroy(a->adam);
    a->policy = policy;
    a->adam = adam;
    a->has_baseline = baseline >= 0;
    a->baseline = a->has_baseline ? baseline : 0;
    a->n_updates = (int64_t)n_updates;
    return RLT_STATUS_OK;
fail:
    rlt_mlp_destroy(policy);
    rlt_adam_destroy(adam);
    return st;
}

const rlt_tuner_ops rlt_tuner_bandit_ops = {.name = "bandit",
                                            .flags = RLT_TUNER_HAS_AGENT,
                                            .init = bandit_init,
                                            .next_batch = bandit_next,
                                            .update = bandit_update,
                                            .fini = bandit_fini,
                                            .save = bandit_save,
                                            .load = bandit_load};
