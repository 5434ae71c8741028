/*
 * ga_dqn_features.c - the rows ga-dqn's DQNs score (ga_dqn_features.h;
 * docs/tuners.md, "GA-DQN's state", lists every feature).
 *
 * Every feature is a ratio or a flag in [0, 1] (rewards in [-1, 1]), so
 * that it means the same on a matmul of 100 GFLOP/s and on a depthwise
 * convolution of 5.
 */
#include "search/ga_dqn_features.h"

#include <math.h>
#include <string.h>

_Static_assert(GA_DQN_CROSSOVER_FEATURES == 16 + GA_DQN_GLOBAL_FEATURES, "crossover rows: 16 features + global");
_Static_assert(GA_DQN_MUTATION_FEATURES == 17 + GA_DQN_GLOBAL_FEATURES, "mutation rows: 17 features + global");

/* The kinds of knob an agent tells apart. */
enum { KIND_SPATIAL_TILE, KIND_REDUCTION_TILE, KIND_VECTOR, KIND_ORDER, KIND_OTHER, N_KINDS };

static int kind_group(rlt_knob_kind kind)
{
    switch (kind) {
    case RLT_KNOB_TILE:
    case RLT_KNOB_MID: return KIND_SPATIAL_TILE;
    case RLT_KNOB_RTILE: return KIND_REDUCTION_TILE;
    case RLT_KNOB_VEC: return KIND_VECTOR;
    case RLT_KNOB_ORDER_S:
    case RLT_KNOB_ORDER_R: return KIND_ORDER;
    default: return KIND_OTHER;
    }
}

static double clamp01(double x) { return x < 0 ? 0 : x > 1 ? 1 : x; }

static size_t at(int k, int v) { return (size_t)k * RLT_SPACE_MAX_CHOICES + (size_t)v; }

/* ---- the history ----------------------------------------------------------- */

void ga_dqn_history_add(ga_dqn_history *h, const rlt_space *s, const rlt_config *c, double score)
{
    h->n_scored++;
    h->sum += score;
    if (score > h->best) {
        h->best = score;
        h->best_config = *c;
        h->n_since_best = 0;
    } else {
        h->n_since_best++;
    }
    for (int k = 0; k < s->n_knobs; k++) {
        size_t i = at(k, c->choice[k]);
        h->value_count[i]++;
        h->value_sum[i] += (float)score;
        if ((float)score > h->value_best[i]) h->value_best[i] = (float)score;
    }
}

void ga_dqn_history_add_mutation(ga_dqn_history *h, int k, double reward)
{
    h->mutation_count[k]++;
    h->mutation_reward[k] += reward;
}

/* The best score measured with knob k at choice v, over the best of all
 * (0 when none was measured). */
static double value_best_ratio(const ga_dqn_history *h, int k, int v)
{
    return h->best > 0 ? h->value_best[at(k, v)] / h->best : 0.0;
}

/* The mean score with knob k at choice v over the mean of all, a third of
 * it (so 3x the mean is 1; 0 when none was measured). */
static double value_mean_ratio(const ga_dqn_history *h, int k, int v)
{
    int32_t n = h->value_count[at(k, v)];
    if (n == 0 || h->sum <= 0) return 0.0;
    double mean = h->value_sum[at(k, v)] / n, all = h->sum / (double)h->n_scored;
    return clamp01(mean / all / 3.0);
}

static bool is_best_value(const ga_dqn_history *h, int k, int v)
{
    return h->best > 0 && h->best_config.choice[k] == v;
}

static bool is_visited(const rlt_tuner *t, const rlt_config *c)
{
    return rlt_visited_has(&t->visited, rlt_space_index_of(t->space, c));
}

/* The run-wide features: the parents' mean score over the best, how long
 * the best has stood (in generations of 64, at most 4), how much has been
 * measured (log scale, 1 at 1000), and the share of knobs on which the
 * parents differ. */
static void global_features(const rlt_space *s, const ga_dqn_history *h, const rlt_config *p1,
                            const rlt_config *p2, double parent_mean, float *out)
{
    int n_differ = 0;
    for (int k = 0; k < s->n_knobs; k++) n_differ += p1->choice[k] != p2->choice[k];
    out[0] = (float)(h->best > 0 ? clamp01(parent_mean / h->best) : 0.0);
    out[1] = (float)(RLT_MIN((double)h->n_since_best / 64.0, 4.0) / 4.0);
    out[2] = (float)clamp01(log1p((double)h->n_scored) / log1p(1000.0));
    out[3] = (float)n_differ / (float)s->n_knobs;
}

int ga_dqn_other_valid_choices(const rlt_space *s, const rlt_config *c, int k, int16_t *out)
{
    int n = 0;
    rlt_config trial = *c;
    for (int v = 0; v < s->knobs[k].n_choices; v++) {
        if (v == c->choice[k]) continue;
        trial.choice[k] = (int16_t)v;
        if (rlt_space_is_valid(s, &trial)) out[n++] = (int16_t)v;
    }
    return n;
}

/* ---- crossover --------------------------------------------------------------- */

void ga_dqn_crossover_rows(const rlt_tuner *t, const ga_dqn_history *h, const rlt_config *p1, const rlt_config *p2,
                           double s1, double s2, int n_points, float *out)
{
    const rlt_space *s = t->space;
    int n = s->n_knobs;
    int n_differ = 0;
    for (int k = 0; k < n; k++) n_differ += p1->choice[k] != p2->choice[k];
    float global[GA_DQN_GLOBAL_FEATURES];
    global_features(s, h, p1, p2, 0.5 * (s1 + s2), global);
    for (int p = 1; p <= n_points; p++) {
        float *f = out + (size_t)(p - 1) * GA_DQN_CROSSOVER_FEATURES;
        memset(f, 0, GA_DQN_CROSSOVER_FEATURES * sizeof *f);
        rlt_config child = {0};
        int differ_before = 0;
        double best_ratio = 0, mean_ratio = 0, n_best_values = 0;
        for (int k = 0; k < n; k++) {
            child.choice[k] = (k < p ? p1 : p2)->choice[k];
            if (p1->choice[k] == p2->choice[k]) continue;
            differ_before += k < p;
            best_ratio += value_best_ratio(h, k, child.choice[k]);
            mean_ratio += value_mean_ratio(h, k, child.choice[k]);
            n_best_values += is_best_value(h, k, child.choice[k]);
        }
        f[0] = (float)p / (float)n;
        f[1] = n_differ ? (float)differ_before / (float)n_differ : 0.0f;
        f[2] = differ_before == n_differ;           /* the child is parent 1 */
        f[3] = differ_before == 0;                  /* the child is parent 2 */
        f[4] = is_visited(t, &child);
        f[5] = rlt_space_is_valid(s, &child);
        f[6] = n_differ ? (float)(best_ratio / n_differ) : 0.0f;
        f[7] = n_differ ? (float)(mean_ratio / n_differ) : 0.0f;
        f[8] = n_differ ? (float)(n_best_values / n_differ) : 0.0f;
        if (p < n) f[9 + kind_group(s->knobs[p].kind)] = 1;
        f[14] = (float)(h->best > 0 ? clamp01(s1 / h->best) : 0.0);
        f[15] = (float)(h->best > 0 ? clamp01(s2 / h->best) : 0.0);
        memcpy(f + GA_DQN_CROSSOVER_FEATURES - GA_DQN_GLOBAL_FEATURES, global, sizeof global);
    }
}

/* ---- mutation ---------------------------------------------------------------- */

void ga_dqn_mutation_rows(const rlt_tuner *t, const ga_dqn_history *h, const rlt_config *p1, const rlt_config *p2,
                          const rlt_config *c, double parent_mean, float *out, bool *out_allowed)
{
    const rlt_space *s = t->space;
    int n = s->n_knobs;
    float global[GA_DQN_GLOBAL_FEATURES];
    global_features(s, h, p1, p2, parent_mean, global);
    float *none = out;
    memset(none, 0, GA_DQN_MUTATION_FEATURES * sizeof *none);
    memcpy(none + GA_DQN_MUTATION_FEATURES - GA_DQN_GLOBAL_FEATURES, global, sizeof global);
    out_allowed[0] = !is_visited(t, c) && rlt_space_is_valid(s, c);
    for (int k = 0; k < n; k++) {
        float *f = out + (size_t)(k + 1) * GA_DQN_MUTATION_FEATURES;
        memset(f, 0, GA_DQN_MUTATION_FEATURES * sizeof *f);
        const rlt_knob *kn = &s->knobs[k];
        int current = c->choice[k], n_unseen = 0, n_seen = 0;
        int16_t valid[RLT_SPACE_MAX_CHOICES];
        int n_valid = ga_dqn_other_valid_choices(s, c, k, valid);
        double best_other = 0, seen_sum = 0;
        for (int i = 0; i < n_valid; i++) {
            int v = valid[i];
            if (h->value_count[at(k, v)] == 0) {
                n_unseen++;
            } else {
                double r = value_best_ratio(h, k, v);
                best_other = RLT_MAX(best_other, r);
                seen_sum += r;
                n_seen++;
            }
        }
        out_allowed[k + 1] = n_valid > 0;
        int32_t n_mut = h->mutation_count[k];
        f[0] = 1;
        f[1 + kind_group(kn->kind)] = 1;
        f[6] = (float)(log2((double)kn->n_choices) / 6.0);
        f[7] = kn->n_choices > 1 ? (float)n_valid / (float)(kn->n_choices - 1) : 0.0f;
        f[8] = is_best_value(h, k, current);
        f[9] = (float)value_best_ratio(h, k, current);
        f[10] = (float)value_mean_ratio(h, k, current);
        f[11] = (float)best_other;
        f[12] = n_seen ? (float)(seen_sum / n_seen) : 0.0f;
        f[13] = n_valid ? (float)n_unseen / (float)n_valid : 0.0f;
        f[14] = p1->choice[k] == p2->choice[k];
        f[15] = n_mut ? (float)RLT_MAX(-1.0, RLT_MIN(1.0, h->mutation_reward[k] / n_mut)) : 0.0f;
        f[16] = (float)n_mut / (float)(n_mut + 4);
        memcpy(f + GA_DQN_MUTATION_FEATURES - GA_DQN_GLOBAL_FEATURES, global, sizeof global);
    }
}
