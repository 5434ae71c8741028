/*
 * train.c - the training run of `rltune train` (train.h; docs/training.md):
 * the options resolved (defaults, or a checkpoint's), the env slots playing
 * episodes on the dataset's training shapes with one batched measurement a
 * step (rlt_env_prefetch), the algorithm's hooks (train_dqn.c,
 * train_ppo.c), progress, checkpoints and resume, the reward curve (SVG)
 * and the policy's `about` text.
 *
 * A checkpoint is a policy file (policy.h: rlt_policy_put with the
 * optimiser states) with the trainer's sections: train_version, train_opts,
 * train_dataset, train_state, train_slots, train_episodes, and the
 * algorithm's (docs/formats.md, "Training checkpoints"). A resume rebuilds
 * the episodes in progress by replaying their actions, so that a run
 * broken and resumed acts as an unbroken one would (given the same
 * measurements).
 *
 * Entry point: rlt_train.
 */
#include "policy/train_internal.h"
#include "report/report.h"

#include <cblas.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRAIN_CHECKPOINT_VERSION 1
#define POLICY_TUNER "policy" /* policy.h: the tuner name of policy files */
#define DQN_HEAD_GAIN 1.0     /* the Q network's output layer as initialised */
#define PPO_HEAD_GAIN 0.01    /* the actor's output weights scaled: a near-uniform first policy */
#define CKPT_MARGIN_BYTES (1 << 20) /* headers and rounding in the checkpoint's size estimate */
#define CURVE_MAX_POINTS 400

#define SECTION_VERSION "train_version"
#define SECTION_OPTS "train_opts"
#define SECTION_DATASET "train_dataset"
#define SECTION_STATE "train_state"
#define SECTION_SLOTS "train_slots"
#define SECTION_EPISODES "train_episodes"

/* ---- binary sections ------------------------------------------------------ */

void train_put_u(rlt_str *s, uint64_t v, int n_bytes)
{
    unsigned char b[8];
    rlt_le_store(b, v, n_bytes);
    rlt_str_appendn(s, (const char *)b, (size_t)n_bytes);
}

void train_put_f32(rlt_str *s, float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    train_put_u(s, bits, 4);
}

void train_put_f64(rlt_str *s, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    train_put_u(s, bits, 8);
}

static uint32_t float_bits(float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    return bits;
}

size_t train_obs_bytes(const float *obs)
{
    size_t n = 0;
    for (int k = 0; k < RLT_ENV_OBS_LEN; k++) n += float_bits(obs[k]) != 0;
    return 2 + 6 * n;
}

void train_put_obs(rlt_str *s, const float *obs)
{
    int n = 0;
    for (int k = 0; k < RLT_ENV_OBS_LEN; k++) n += float_bits(obs[k]) != 0;
    train_put_u(s, (uint64_t)n, 2);
    for (int k = 0; k < RLT_ENV_OBS_LEN; k++)
        if (float_bits(obs[k]) != 0) {
            train_put_u(s, (uint64_t)k, 2);
            train_put_u(s, float_bits(obs[k]), 4);
        }
}

uint64_t train_get_u(train_reader *r, int n_bytes)
{
    if (r->has_failed || r->len - r->at < (size_t)n_bytes) {
        r->has_failed = true;
        return 0;
    }
    uint64_t v = rlt_le_load(r->p + r->at, n_bytes);
    r->at += (size_t)n_bytes;
    return v;
}

float train_get_f32(train_reader *r)
{
    uint32_t bits = (uint32_t)train_get_u(r, 4);
    float v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

double train_get_f64(train_reader *r)
{
    uint64_t bits = train_get_u(r, 8);
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

bool train_get_obs(train_reader *r, float *obs)
{
    uint64_t n = train_get_u(r, 2);
    if (n > RLT_ENV_OBS_LEN) r->has_failed = true;
    memset(obs, 0, RLT_ENV_OBS_LEN * sizeof *obs);
    int64_t last = -1;
    for (uint64_t i = 0; i < n && !r->has_failed; i++) {
        uint64_t k = train_get_u(r, 2);
        float v = train_get_f32(r);
        if ((int64_t)k <= last || k >= RLT_ENV_OBS_LEN || !isfinite(v)) r->has_failed = true;
        else obs[k] = v;
        last = (int64_t)k;
    }
    return !r->has_failed;
}

int train_obs_mask(const float *obs, bool mask[RLT_ENV_N_ACTIONS])
{
    int n = 0;
    for (int a = 0; a < RLT_ENV_N_ACTIONS; a++) {
        mask[a] = obs[RLT_ENV_OBS_MASK + a] > 0.5f;
        n += mask[a];
    }
    return n;
}

const char *train_checkpoint_name(const train_run *r)
{
    const rlt_train_opts *o = r->opts;
    return o->resume_path ? o->resume_path : o->checkpoint_path ? o->checkpoint_path : "<checkpoint>";
}

rlt_status train_section_error(const train_run *r, const char *section, const char *what, rlt_diag *diag)
{
    return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "checkpoint '%s': section %s holds %s", train_checkpoint_name(r),
                    section, what);
}

/* ---- options ----------------------------------------------------------------- */

typedef enum field_kind { FIELD_INT, FIELD_DOUBLE } field_kind;

/* A numeric option: where it is in rlt_train_opts and train_cfg, which
 * algorithm reads it (-1: both), its default, and its range (ints
 * [lo, hi]; doubles (lo, hi]). A field that may be 0 (is_zero_ok) is asked
 * for as 0 by a negative value; one added after checkpoints existed
 * (is_new) reads as its default when a checkpoint lacks it. */
typedef struct cfg_field {
    const char *name; /* in train_opts sections and messages */
    field_kind kind;
    size_t opt_off, cfg_off;
    int algo;
    double def_dqn, def_ppo;
    double lo, hi;
    bool is_zero_ok, is_new;
} cfg_field;

#define INT_FIELD(name, member, algo, def, lo, hi) \
    {name, FIELD_INT, offsetof(rlt_train_opts, member), offsetof(train_cfg, member), algo, def, def, lo, hi, \
     false, false}
#define DBL_FIELD(name, member, algo, dqn, ppo, lo, hi) \
    {name, FIELD_DOUBLE, offsetof(rlt_train_opts, member), offsetof(train_cfg, member), algo, dqn, ppo, lo, hi, \
     false, false}
/* A ppo field that may be 0, range [0, hi]. */
#define PPO_ZERO_OK_FIELD(name, member, kind, def, hi, is_new) \
    {name, kind, offsetof(rlt_train_opts, member), offsetof(train_cfg, member), RLT_POLICY_ALGO_PPO, 0, def, 0, hi, \
     true, is_new}

static const cfg_field cfg_fields[] = {
    INT_FIELD("envs", n_envs, -1, RLT_TRAIN_DEFAULT_ENVS, 1, RLT_TRAIN_MAX_ENVS),
    INT_FIELD("episode_steps", episode_steps, -1, RLT_TRAIN_DEFAULT_EPISODE_STEPS, 1, RLT_TRAIN_MAX_EPISODE_STEPS),
    DBL_FIELD("lr", lr, -1, RLT_TRAIN_DEFAULT_DQN_LR, RLT_TRAIN_DEFAULT_PPO_LR, 0, 1),
    DBL_FIELD("gamma", gamma, -1, RLT_TRAIN_DEFAULT_GAMMA, RLT_TRAIN_DEFAULT_GAMMA, 0, 0.9999),
    INT_FIELD("dqn_batch", dqn_batch, RLT_POLICY_ALGO_DQN, RLT_TRAIN_DEFAULT_DQN_BATCH, 1, 4096),
    INT_FIELD("dqn_buffer", dqn_buffer, RLT_POLICY_ALGO_DQN, RLT_TRAIN_DEFAULT_DQN_BUFFER, 1,
              RLT_TRAIN_MAX_DQN_BUFFER),
    INT_FIELD("dqn_learn_start", dqn_learn_start, RLT_POLICY_ALGO_DQN, RLT_TRAIN_DEFAULT_DQN_LEARN_START, 1,
              RLT_TRAIN_MAX_STEPS),
    DBL_FIELD("dqn_updates_per_step", dqn_updates_per_step, RLT_POLICY_ALGO_DQN,
              RLT_TRAIN_DEFAULT_DQN_UPDATES_PER_STEP, 0, 0, 64),
    INT_FIELD("dqn_target_every", dqn_target_every, RLT_POLICY_ALGO_DQN, RLT_TRAIN_DEFAULT_DQN_TARGET_EVERY, 1,
              RLT_TRAIN_MAX_STEPS),
    DBL_FIELD("dqn_eps_end", dqn_eps_end, RLT_POLICY_ALGO_DQN, RLT_TRAIN_DEFAULT_DQN_EPS_END, 0, 0, 1),
    DBL_FIELD("dqn_eps_fraction", dqn_eps_fraction, RLT_POLICY_ALGO_DQN, RLT_TRAIN_DEFAULT_DQN_EPS_FRACTION, 0, 0,
              1),
    INT_FIELD("ppo_rollout_steps", ppo_rollout_steps, RLT_POLICY_ALGO_PPO, RLT_TRAIN_DEFAULT_PPO_ROLLOUT_STEPS, 1,
              1024),
    INT_FIELD("ppo_epochs", ppo_epochs, RLT_POLICY_ALGO_PPO, RLT_TRAIN_DEFAULT_PPO_EPOCHS, 1, 100),
    INT_FIELD("ppo_minibatch", ppo_minibatch, RLT_POLICY_ALGO_PPO, RLT_TRAIN_DEFAULT_PPO_MINIBATCH, 1, 4096),
    DBL_FIELD("ppo_lambda", ppo_lambda, RLT_POLICY_ALGO_PPO, 0, RLT_TRAIN_DEFAULT_PPO_LAMBDA, 0, 1),
    DBL_FIELD("ppo_clip", ppo_clip, RLT_POLICY_ALGO_PPO, 0, RLT_TRAIN_DEFAULT_PPO_CLIP, 0, 0.99),
    PPO_ZERO_OK_FIELD("ppo_entropy_coef", ppo_entropy_coef, FIELD_DOUBLE, RLT_TRAIN_DEFAULT_PPO_ENTROPY_COEF, 10,
                      false),
    PPO_ZERO_OK_FIELD("ppo_critic_warmup", ppo_critic_warmup, FIELD_INT, 0, RLT_TRAIN_MAX_STEPS, true),
};

static double field_get(const cfg_field *f, const void *base, size_t off)
{
    const char *p = (const char *)base + off;
    if (f->kind == FIELD_INT) return *(const int *)p;
    return *(const double *)p;
}

static void field_set(const cfg_field *f, void *base, size_t off, double v)
{
    char *p = (char *)base + off;
    if (f->kind == FIELD_INT) *(int *)p = (int)v;
    else *(double *)p = v;
}

static bool field_applies(const cfg_field *f, rlt_policy_algo algo) { return f->algo < 0 || f->algo == (int)algo; }

static void hidden_text(const int *hidden, int n, char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int l = 0; l < n && at < cap; l++) at += (size_t)snprintf(buf + at, cap - at, "%s%d", l ? "," : "", hidden[l]);
}

/* The shortest text that reads back as v ("0.0005", not 0.00050000000000000001). */
static void double_text(double v, char *buf, size_t cap)
{
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(buf, cap, "%.*g", digits, v);
        if (strtod(buf, NULL) == v) return;
    }
}

static rlt_status mismatch(const char *ck_name, const char *what, const char *had, const char *asked, rlt_diag *diag)
{
    return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                    "cannot resume: checkpoint '%s' was trained with %s %s, this run asks for %s (leave the option out "
                    "to take the checkpoint's, or start a new run)",
                    ck_name, what, had, asked);
}

/* The options in force: each field from o, else the checkpoint's (ck, may
 * be NULL), else the default; a field given and different from the
 * checkpoint's is refused. */
static rlt_status cfg_resolve(const rlt_train_opts *o, const train_cfg *ck, const char *ck_name, train_cfg *out,
                              rlt_diag *diag)
{
    static const int default_hidden[] = {RLT_POLICY_DEFAULT_HIDDEN_1, RLT_POLICY_DEFAULT_HIDDEN_2};
    memset(out, 0, sizeof *out);
    /* algo */
    if (o->algo) {
        if (!rlt_policy_algo_from_str(o->algo, &out->algo) || out->algo == RLT_POLICY_ALGO_BC)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "train: unknown algorithm '%.64s' (dqn, ppo; bc policies come from rltune imitate)",
                            o->algo);
        if (ck && ck->algo != out->algo)
            return mismatch(ck_name, "algo", rlt_policy_algo_str(ck->algo), o->algo, diag);
    } else {
        out->algo = ck ? ck->algo : RLT_POLICY_ALGO_DQN;
    }
    /* seed */
    out->seed = o->seed != 0 || !ck ? o->seed : ck->seed;
    if (ck && out->seed != ck->seed) {
        char had[32], asked[32];
        snprintf(had, sizeof had, "%llu", (unsigned long long)ck->seed);
        snprintf(asked, sizeof asked, "%llu", (unsigned long long)out->seed);
        return mismatch(ck_name, "seed", had, asked, diag);
    }
    /* network */
    if (o->n_hidden != 0) {
        if (o->n_hidden < 0 || o->n_hidden > RLT_POLICY_MAX_HIDDEN)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "train: %d hidden layers (1..%d)", o->n_hidden,
                            RLT_POLICY_MAX_HIDDEN);
        out->n_hidden = o->n_hidden;
        memcpy(out->hidden, o->hidden, sizeof out->hidden);
        for (int l = 0; l < out->n_hidden; l++)
            if (out->hidden[l] < 1 || out->hidden[l] > 4096)
                return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "train: hidden layer %d has %d units (1..4096)",
                                l + 1, out->hidden[l]);
        if (ck && (ck->n_hidden != out->n_hidden ||
                   memcmp(ck->hidden, out->hidden, sizeof(int) * (size_t)out->n_hidden) != 0)) {
            char had[64], asked[64];
            hidden_text(ck->hidden, ck->n_hidden, had, sizeof had);
            hidden_text(out->hidden, out->n_hidden, asked, sizeof asked);
            return mismatch(ck_name, "hidden layers", had, asked, diag);
        }
    } else if (ck) {
        out->n_hidden = ck->n_hidden;
        memcpy(out->hidden, ck->hidden, sizeof out->hidden);
    } else {
        out->n_hidden = (int)RLT_ARRAY_LEN(default_hidden);
        memcpy(out->hidden, default_hidden, sizeof default_hidden);
    }
    if (ck) snprintf(out->init, sizeof out->init, "%s", ck->init);
    /* the numbers */
    for (size_t i = 0; i < RLT_ARRAY_LEN(cfg_fields); i++) {
        const cfg_field *f = &cfg_fields[i];
        double v = field_get(f, o, f->opt_off);
        if (!field_applies(f, out->algo)) {
            if (v != 0)
                return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "train: %s is an option of %s, not of %s",
                                f->name, f->algo == RLT_POLICY_ALGO_DQN ? "dqn" : "ppo",
                                rlt_policy_algo_str(out->algo));
            continue;
        }
        if (v == 0) {
            v = ck ? field_get(f, ck, f->cfg_off) : out->algo == RLT_POLICY_ALGO_PPO ? f->def_ppo : f->def_dqn;
        } else {
            if (f->is_zero_ok && v < 0) v = 0; /* asked for none */
            bool is_in = f->kind == FIELD_INT ? v >= f->lo && v <= f->hi : v > f->lo && v <= f->hi;
            if (f->is_zero_ok) is_in = v >= 0 && v <= f->hi;
            if (!is_in || !isfinite(v))
                return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "train: %s %g out of range (%s%g .. %g)", f->name,
                                v, f->kind == FIELD_INT ? "" : "above ", f->lo, f->hi);
            if (ck && field_get(f, ck, f->cfg_off) != v) {
                char had[40], asked[40];
                double_text(field_get(f, ck, f->cfg_off), had, sizeof had);
                double_text(v, asked, sizeof asked);
                return mismatch(ck_name, f->name, had, asked, diag);
            }
        }
        field_set(f, out, f->cfg_off, v);
    }
    return RLT_STATUS_OK;
}

/* train_opts: "KEY VALUE" lines (algo, seed, hidden, then the fields of the
 * algorithm, then the dataset's name and, for a run started from a policy,
 * that policy's, neither of which is compared). */
static void cfg_write(const train_cfg *c, const char *dataset_name, rlt_str *out)
{
    char hidden[64];
    hidden_text(c->hidden, c->n_hidden, hidden, sizeof hidden);
    rlt_str_printf(out, "algo %s\nseed %llu\nhidden %s\n", rlt_policy_algo_str(c->algo), (unsigned long long)c->seed,
                   hidden);
    for (size_t i = 0; i < RLT_ARRAY_LEN(cfg_fields); i++) {
        const cfg_field *f = &cfg_fields[i];
        if (!field_applies(f, c->algo)) continue;
        if (f->kind == FIELD_INT) rlt_str_printf(out, "%s %d\n", f->name, (int)field_get(f, c, f->cfg_off));
        else {
            char text[40];
            double_text(field_get(f, c, f->cfg_off), text, sizeof text);
            rlt_str_printf(out, "%s %s\n", f->name, text);
        }
    }
    rlt_str_append(out, "dataset ");
    for (const char *p = dataset_name ? dataset_name : "-"; *p; p++) rlt_str_appendn(out, *p == '\n' ? "?" : p, 1);
    rlt_str_append(out, "\n");
    if (c->init[0]) rlt_str_printf(out, "init %s\n", c->init); /* init_name keeps it to one line */
}

/* Reads cfg_write's text; every key of the algorithm must be there, each
 * once, in range. *out_dataset gets the dataset's name (into buf). */
static rlt_status cfg_read(const train_run *r, const char *text, size_t len, train_cfg *out, char *dataset,
                           size_t dataset_cap, rlt_diag *diag)
{
    memset(out, 0, sizeof *out);
    snprintf(dataset, dataset_cap, "-");
    bool has_algo = false, has_seed = false, has_hidden = false;
    bool has_field[RLT_ARRAY_LEN(cfg_fields)] = {0};
    char line[512];
    size_t at = 0;
    while (at < len) {
        size_t end = at;
        while (end < len && text[end] != '\n') end++;
        size_t n = end - at;
        if (n >= sizeof line) return train_section_error(r, SECTION_OPTS, "a line too long", diag);
        memcpy(line, text + at, n);
        line[n] = '\0';
        at = end + 1;
        char *value = strchr(line, ' ');
        if (!value) return train_section_error(r, SECTION_OPTS, "a line that is not KEY VALUE", diag);
        *value++ = '\0';
        char *rest = NULL;
        if (strcmp(line, "algo") == 0) {
            has_algo = rlt_policy_algo_from_str(value, &out->algo) && out->algo != RLT_POLICY_ALGO_BC;
        } else if (strcmp(line, "seed") == 0) {
            has_seed = rlt_parse_u64(value, &out->seed);
        } else if (strcmp(line, "hidden") == 0) {
            has_hidden = true;
            for (char *p = value; *p && has_hidden; p = *rest == ',' ? rest + 1 : rest) {
                long units = strtol(p, &rest, 10);
                if (rest == p || units < 1 || units > 4096 || out->n_hidden == RLT_POLICY_MAX_HIDDEN ||
                    (*rest != ',' && *rest != '\0'))
                    has_hidden = false;
                else
                    out->hidden[out->n_hidden++] = (int)units;
            }
            has_hidden &= out->n_hidden > 0;
        } else if (strcmp(line, "dataset") == 0) {
            snprintf(dataset, dataset_cap, "%s", value);
        } else if (strcmp(line, "init") == 0) {
            snprintf(out->init, sizeof out->init, "%s", value);
        } else {
            size_t i = 0;
            while (i < RLT_ARRAY_LEN(cfg_fields) && strcmp(cfg_fields[i].name, line) != 0) i++;
            if (i == RLT_ARRAY_LEN(cfg_fields) || has_field[i])
                return train_section_error(r, SECTION_OPTS, "an unknown or repeated key", diag);
            const cfg_field *f = &cfg_fields[i];
            double v = strtod(value, &rest);
            bool is_int_ok = f->kind != FIELD_INT || (v == floor(v) && fabs(v) <= 2e9);
            bool is_zero_ok = v != 0 || f->is_zero_ok; /* 0 means a default */
            if (rest == value || *rest != '\0' || !isfinite(v) || !is_int_ok || !is_zero_ok)
                return train_section_error(r, SECTION_OPTS, "a value that is not a number of its kind", diag);
            field_set(f, out, f->cfg_off, v);
            has_field[i] = true;
        }
    }
    if (!has_algo || !has_seed || !has_hidden)
        return train_section_error(r, SECTION_OPTS, "no valid algo, seed or hidden", diag);
    /* every field of the algorithm, in range: resolving against itself checks it */
    for (size_t i = 0; i < RLT_ARRAY_LEN(cfg_fields); i++)
        if (field_applies(&cfg_fields[i], out->algo) != has_field[i] && (has_field[i] || !cfg_fields[i].is_new))
            return train_section_error(r, SECTION_OPTS, "a key missing, or one of the other algorithm", diag);
    rlt_train_opts o = {.algo = rlt_policy_algo_str(out->algo), .n_hidden = out->n_hidden};
    memcpy(o.hidden, out->hidden, sizeof o.hidden);
    for (size_t i = 0; i < RLT_ARRAY_LEN(cfg_fields); i++)
        if (has_field[i])
            field_set(&cfg_fields[i], &o, cfg_fields[i].opt_off, field_get(&cfg_fields[i], out, cfg_fields[i].cfg_off));
    train_cfg check;
    rlt_diag d = {0};
    if (cfg_resolve(&o, NULL, NULL, &check, &d) != RLT_STATUS_OK ||
        (out->algo == RLT_POLICY_ALGO_PPO && (out->ppo_entropy_coef < 0 || out->ppo_critic_warmup < 0)))
        return train_section_error(r, SECTION_OPTS, "a value out of range", diag);
    return RLT_STATUS_OK;
}

/* ---- the run's pieces ----------------------------------------------------- */

static void run_free(train_run *r)
{
    if (r->algo && r->algo_state) r->algo->free(r);
    if (r->slots)
        for (int i = 0; i < r->cfg.n_envs; i++) rlt_env_destroy(r->slots[i].env);
    if (r->families)
        for (int s = 0; s < r->n_specs; s++) rlt_env_destroy(r->families[s]);
    rlt_free(r->slots);
    rlt_free(r->families);
    rlt_free(r->specs);
    rlt_free(r->episodes);
    rlt_policy_destroy(r->policy);
}

static double run_wall_s(const train_run *r) { return r->wall_base_s + (double)(rlt_time_ns() - r->t0_ns) * 1e-9; }

static void run_env_stats(const train_run *r, int64_t *out_evaluations, int64_t *out_hits)
{
    *out_evaluations = r->n_evaluations_base;
    *out_hits = r->n_cache_hits_base;
    for (int s = 0; s < r->n_specs; s++)
        if (r->families[s]) {
            rlt_env_stats st;
            rlt_env_stats_get(r->families[s], &st);
            *out_evaluations += st.n_evaluations;
            *out_hits += st.n_cache_hits;
        }
}

/* The mean return of episodes [from, to). */
static double mean_return(const train_run *r, int64_t from, int64_t to)
{
    if (to <= from) return 0;
    double sum = 0;
    for (int64_t k = from; k < to; k++) sum += r->episodes[k].ret;
    return sum / (double)(to - from);
}

static double recent_return(const train_run *r)
{
    return mean_return(r, RLT_MAX(r->n_episodes - RLT_TRAIN_RETURN_WINDOW, 0), r->n_episodes);
}

static rlt_status episode_push(train_run *r, int64_t end_step, double ret, double start_frac, rlt_diag *diag)
{
    if (r->n_episodes == r->cap_episodes) {
        int64_t cap = r->cap_episodes ? 2 * r->cap_episodes : 256;
        train_episode *e = rlt_realloc(r->episodes, sizeof *e * (size_t)cap);
        if (!e) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory keeping the episodes' returns");
        r->episodes = e;
        r->cap_episodes = cap;
    }
    r->episodes[r->n_episodes++] =
        (train_episode){.end_step = end_step, .ret = (float)ret, .start_frac = (float)start_frac};
    return RLT_STATUS_OK;
}

/* Points slot i at shape `shape`'s family (made at its first use) and
 * starts an episode there at the op's default nest. */
static rlt_status slot_start(train_run *r, int i, int shape, rlt_diag *diag)
{
    train_slot *sl = &r->slots[i];
    rlt_status st = RLT_STATUS_OK;
    if (!r->families[shape]) {
        rlt_env_opts eo = r->opts->env;
        eo.max_steps = 0; /* the trainer ends episodes itself, so their last state keeps its mask */
        if ((st = rlt_env_create(r->specs[shape], &eo, &r->families[shape], diag)) != RLT_STATUS_OK) {
            rlt_diag_prefix(diag, "training shape '%s'", r->specs[shape]);
            return st;
        }
    }
    if (sl->shape != shape) {
        rlt_env_destroy(sl->env);
        sl->env = NULL;
        sl->shape = -1;
        if ((st = rlt_env_clone(r->families[shape], &sl->env, diag)) != RLT_STATUS_OK) return st;
        sl->shape = shape;
    }
    if ((st = rlt_env_reset(sl->env, diag)) != RLT_STATUS_OK ||
        (st = rlt_env_observe(sl->env, sl->obs, RLT_ENV_OBS_LEN, diag)) != RLT_STATUS_OK) {
        rlt_diag_prefix(diag, "training shape '%s', reset", r->specs[shape]);
        return st;
    }
    sl->is_running = true;
    sl->n_actions = 0;
    sl->ret = 0;
    sl->start_frac = sl->obs[RLT_ENV_OBS_GFLOPS];
    return RLT_STATUS_OK;
}

/* ---- the policy's description -------------------------------------------------- */

static char *about_text(const train_run *r, bool is_final)
{
    const rlt_train_opts *o = r->opts;
    const train_cfg *c = &r->cfg;
    rlt_str s;
    rlt_str_init(&s);
    char hidden[64];
    hidden_text(c->hidden, c->n_hidden, hidden, sizeof hidden);
    int64_t n_eval, n_hits;
    run_env_stats(r, &n_eval, &n_hits);
    int64_t k = RLT_MIN(RLT_MAX(r->n_episodes / 10, 1), r->n_episodes);
    if (is_final) rlt_str_printf(&s, "trained by rltune %s train\n", RLTUNE_VERSION);
    else rlt_str_printf(&s, "a checkpoint of rltune %s train (training in progress)\n", RLTUNE_VERSION);
    if (o->command_line) rlt_str_printf(&s, "command: %s\n", o->command_line);
    rlt_str_printf(&s, "dataset: %s (%d training shapes)\n", o->dataset_name ? o->dataset_name : "-", r->n_specs);
    rlt_str_printf(&s, "algo: %s%s, seed %llu, hidden %s, lr %g, gamma %g, %d envs x %d-step episodes\n",
                   rlt_policy_algo_str(c->algo), r->policy->is_blind ? " (blind actor)" : "",
                   (unsigned long long)c->seed, hidden, c->lr, c->gamma, c->n_envs, c->episode_steps);
    if (c->algo == RLT_POLICY_ALGO_PPO)
        rlt_str_printf(&s, "ppo: rollout %d steps, %d epochs, minibatch %d, lambda %g, clip %g, entropy %g, critic "
                           "warm-up %d steps\n",
                       c->ppo_rollout_steps, c->ppo_epochs, c->ppo_minibatch, c->ppo_lambda, c->ppo_clip,
                       c->ppo_entropy_coef, c->ppo_critic_warmup);
    if (c->init[0]) rlt_str_printf(&s, "started from: %s\n", c->init);
    rlt_str_printf(&s, "steps: %lld of %lld, %lld episodes, %lld gradient updates", (long long)r->n_steps,
                   (long long)o->n_steps, (long long)r->n_episodes, (long long)r->n_updates);
    if (r->n_steps_resumed > 0) rlt_str_printf(&s, ", resumed at step %lld", (long long)r->n_steps_resumed);
    rlt_str_append(&s, "\n");
    rlt_str_printf(&s, "wall time: %.1f s, %lld states measured, %lld cache hits\n", run_wall_s(r), (long long)n_eval,
                   (long long)n_hits);
    rlt_str_printf(&s, "mean return (GFLOP/s gain over peak): first 10%% of episodes %.4f, last 10%% %.4f, "
                       "last %d %.4f\n",
                   mean_return(r, 0, k), mean_return(r, r->n_episodes - k, r->n_episodes), RLT_TRAIN_RETURN_WINDOW,
                   recent_return(r));
    return rlt_str_take(&s);
}

static rlt_status set_about(train_run *r, bool is_final, rlt_diag *diag)
{
    char *text = about_text(r, is_final);
    if (!text) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory describing the policy");
    rlt_status st = rlt_policy_set_about(r->policy, text, diag);
    rlt_free(text);
    return st;
}

/* ---- the reward curve ------------------------------------------------------------- */

/* A step of 1, 2 or 5 times a power of ten, at least `min`. */
static int64_t nice_at_least(double min)
{
    int64_t step = 1;
    for (;;) {
        for (int m = 1; m <= 5; m += m == 1 ? 1 : 3)
            if ((double)(step * m) >= min) return step * m;
        step *= 10;
    }
}

/* The curve as SVG: per bucket of env steps, the moving average over the
 * last RLT_TRAIN_RETURN_WINDOW finished episodes of the GFLOP/s over peak
 * at their end and at their start (the gap is the mean return; returns can
 * be negative, which the plot's axis, starting at 0, could not show). Before
 * the first episode ends the lines hold its values. */
static rlt_status curve_write(const train_run *r, const char *path, rlt_diag *diag)
{
    int64_t bucket = nice_at_least((double)r->n_steps / CURVE_MAX_POINTS);
    int n_points = (int)((r->n_steps + bucket - 1) / bucket);
    double *end = rlt_calloc((size_t)RLT_MAX(n_points, 1), sizeof *end);
    double *start = rlt_calloc((size_t)RLT_MAX(n_points, 1), sizeof *start);
    rlt_str s;
    rlt_str_init(&s);
    rlt_status st = RLT_STATUS_OK;
    if (!end || !start) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory drawing the reward curve");
        goto done;
    }
    int64_t j = 0;
    double sum_end = 0, sum_start = 0;
    for (int k = 0; k < n_points; k++) {
        int64_t at = (int64_t)(k + 1) * bucket;
        while (j < r->n_episodes && r->episodes[j].end_step <= at) {
            const train_episode *e = &r->episodes[j];
            sum_end += (double)e->start_frac + e->ret;
            sum_start += e->start_frac;
            if (j >= RLT_TRAIN_RETURN_WINDOW) {
                const train_episode *old = &r->episodes[j - RLT_TRAIN_RETURN_WINDOW];
                sum_end -= (double)old->start_frac + old->ret;
                sum_start -= old->start_frac;
            }
            j++;
        }
        int64_t w = RLT_MIN(j, (int64_t)RLT_TRAIN_RETURN_WINDOW);
        const train_episode *first = r->n_episodes > 0 ? &r->episodes[0] : NULL;
        end[k] = w > 0 ? sum_end / (double)w : first ? (double)first->start_frac + first->ret : 0;
        start[k] = w > 0 ? sum_start / (double)w : first ? first->start_frac : 0;
        end[k] = RLT_MAX(end[k], 0.0);
        start[k] = RLT_MAX(start[k], 0.0);
    }
    char title[200], x_label[80], end_label[80];
    snprintf(title, sizeof title, "rltune train: %s on %s, %lld steps, %lld episodes", rlt_policy_algo_str(r->cfg.algo),
             r->opts->dataset_name ? r->opts->dataset_name : "the dataset", (long long)r->n_steps,
             (long long)r->n_episodes);
    if (bucket == 1) snprintf(x_label, sizeof x_label, "env steps");
    else snprintf(x_label, sizeof x_label, "env steps (x %lld)", (long long)bucket);
    snprintf(end_label, sizeof end_label, "end of episode (mean of the last %d)", RLT_TRAIN_RETURN_WINDOW);
    rlt_plot_series series[2] = {{.label = end_label, .n = n_points, .y = end},
                                 {.label = "start of episode (the gap is the mean return)", .n = n_points, .y = start}};
    rlt_plot plot = {.title = title,
                     .x_label = x_label,
                     .y_label = "GFLOP/s over peak",
                     .n_series = 2,
                     .series = series};
    rlt_svg_plot(&plot, true, &s);
    if (s.has_failed) st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory drawing the reward curve");
    else st = rlt_file_write(path, s.data, s.len, diag);
    if (st != RLT_STATUS_OK) rlt_diag_prefix(diag, "reward curve");
done:
    rlt_str_free(&s);
    rlt_free(end);
    rlt_free(start);
    return st;
}

/* ---- checkpoints ----------------------------------------------------------------- */

/* Bytes a network takes in a file: its parameters, with Adam's two
 * moments when with_adam. */
static size_t net_bytes(const rlt_mlp *m, bool with_adam)
{
    return m ? rlt_mlp_n_params(m) * sizeof(float) * (with_adam ? 3 : 1) + 4096 : 0;
}

static rlt_status put_str(rlt_agent_file *f, const char *name, rlt_str *s, size_t *total, rlt_diag *diag)
{
    if (s->has_failed) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory writing a checkpoint");
    *total += s->len + 128;
    rlt_status st = rlt_agent_file_put_bytes(f, name, s->data ? s->data : "", s->len, diag);
    rlt_str_clear(s);
    return st;
}

static rlt_status checkpoint_write(train_run *r, rlt_diag *diag)
{
    const char *path = r->opts->checkpoint_path;
    rlt_agent_file *f = NULL;
    rlt_str s;
    rlt_str_init(&s);
    size_t total = CKPT_MARGIN_BYTES;
    rlt_status st = set_about(r, false, diag);
    if (st == RLT_STATUS_OK) st = rlt_agent_file_create(POLICY_TUNER, NULL, &f, diag);
    if (st == RLT_STATUS_OK) st = rlt_policy_put(r->policy, true, f, diag);
    if (st == RLT_STATUS_OK) st = rlt_agent_file_put_real(f, SECTION_VERSION, TRAIN_CHECKPOINT_VERSION, diag);
    total += net_bytes(r->policy->net, true) + net_bytes(r->policy->critic, true) + net_bytes(r->policy->net, false);
    if (st == RLT_STATUS_OK) {
        cfg_write(&r->cfg, r->opts->dataset_name, &s);
        st = put_str(f, SECTION_OPTS, &s, &total, diag);
    }
    if (st == RLT_STATUS_OK) {
        for (int k = 0; k < r->n_specs; k++) rlt_str_printf(&s, "%s\n", r->specs[k]);
        st = put_str(f, SECTION_DATASET, &s, &total, diag);
    }
    if (st == RLT_STATUS_OK) {
        int64_t n_eval, n_hits;
        run_env_stats(r, &n_eval, &n_hits);
        train_put_u(&s, (uint64_t)r->n_steps, 8);
        train_put_u(&s, (uint64_t)r->n_updates, 8);
        for (int k = 0; k < 4; k++) train_put_u(&s, r->rng.s[k], 8);
        train_put_f64(&s, run_wall_s(r));
        train_put_u(&s, (uint64_t)n_eval, 8);
        train_put_u(&s, (uint64_t)n_hits, 8);
        st = put_str(f, SECTION_STATE, &s, &total, diag);
    }
    if (st == RLT_STATUS_OK) {
        train_put_u(&s, (uint64_t)r->cfg.n_envs, 4);
        for (int i = 0; i < r->cfg.n_envs; i++) {
            const train_slot *sl = &r->slots[i];
            train_put_u(&s, (uint64_t)(uint32_t)sl->shape, 4);
            train_put_u(&s, sl->is_running, 1);
            train_put_u(&s, (uint64_t)sl->n_actions, 2);
            rlt_str_appendn(&s, (const char *)sl->actions, (size_t)sl->n_actions);
            train_put_f64(&s, sl->ret);
            train_put_f64(&s, sl->start_frac);
        }
        st = put_str(f, SECTION_SLOTS, &s, &total, diag);
    }
    if (st == RLT_STATUS_OK) {
        train_put_u(&s, (uint64_t)r->n_episodes, 8);
        for (int64_t k = 0; k < r->n_episodes; k++) {
            train_put_u(&s, (uint64_t)r->episodes[k].end_step, 8);
            train_put_f32(&s, r->episodes[k].ret);
            train_put_f32(&s, r->episodes[k].start_frac);
        }
        st = put_str(f, SECTION_EPISODES, &s, &total, diag);
    }
    if (st == RLT_STATUS_OK) {
        if (total > RLT_FILE_READ_MAX_BYTES)
            st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                          "a checkpoint of these networks would exceed %d MiB: use smaller hidden layers",
                          RLT_FILE_READ_MAX_BYTES >> 20);
        else
            st = r->algo->save(r, f, (size_t)RLT_FILE_READ_MAX_BYTES - total, diag);
    }
    if (st == RLT_STATUS_OK) st = rlt_agent_file_save(f, path, diag);
    if (st == RLT_STATUS_OK && r->opts->curve_path) st = curve_write(r, r->opts->curve_path, diag);
    if (st == RLT_STATUS_OK) r->n_checkpoints++;
    else rlt_diag_prefix(diag, "checkpoint at step %lld", (long long)r->n_steps);
    rlt_agent_file_destroy(f);
    rlt_str_free(&s);
    return st;
}

/* Checks that the checkpoint was trained on this dataset's training
 * shapes, in this order. */
static rlt_status check_dataset(const train_run *r, const char *text, size_t len, const char *ck_dataset,
                                rlt_diag *diag)
{
    const char *p = text, *end = text + len;
    int k = 0;
    for (; p < end; k++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) return train_section_error(r, SECTION_DATASET, "a line without its newline", diag);
        size_t n = (size_t)(nl - p);
        if (k >= r->n_specs || strlen(r->specs[k]) != n || memcmp(r->specs[k], p, n) != 0)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "cannot resume: checkpoint '%s' was trained on another dataset ('%s'): training shape %d "
                            "there is '%.*s', here %s%s%s (resume with the dataset it was trained on)",
                            train_checkpoint_name(r), ck_dataset, k + 1, (int)RLT_MIN(n, 200), p,
                            k < r->n_specs ? "'" : "", k < r->n_specs ? r->specs[k] : "none",
                            k < r->n_specs ? "'" : "");
        p = nl + 1;
    }
    if (k != r->n_specs)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "cannot resume: checkpoint '%s' was trained on another dataset ('%s'): %d training shapes "
                        "there, %d here (resume with the dataset it was trained on)",
                        train_checkpoint_name(r), ck_dataset, k, r->n_specs);
    return RLT_STATUS_OK;
}

/* Reads the trainer's own sections (after the options, the dataset, the
 * policy and the algorithm's state). */
static rlt_status checkpoint_read_state(train_run *r, const rlt_agent_file *f, rlt_diag *diag)
{
    const char *data = NULL;
    size_t len = 0;
    rlt_status st = rlt_agent_file_get_bytes(f, SECTION_STATE, &data, &len, diag);
    if (st != RLT_STATUS_OK) return st;
    train_reader rd = {.p = (const unsigned char *)data, .len = len};
    r->n_steps = (int64_t)train_get_u(&rd, 8);
    r->n_updates = (int64_t)train_get_u(&rd, 8);
    for (int k = 0; k < 4; k++) r->rng.s[k] = train_get_u(&rd, 8);
    r->wall_base_s = train_get_f64(&rd);
    r->n_evaluations_base = (int64_t)train_get_u(&rd, 8);
    r->n_cache_hits_base = (int64_t)train_get_u(&rd, 8);
    if (rd.has_failed || rd.at != len || r->n_steps < 0 || r->n_steps > RLT_TRAIN_MAX_STEPS || r->n_updates < 0 ||
        !(r->wall_base_s >= 0 && r->wall_base_s < 1e9) || r->n_evaluations_base < 0 || r->n_cache_hits_base < 0 ||
        (r->rng.s[0] | r->rng.s[1] | r->rng.s[2] | r->rng.s[3]) == 0)
        return train_section_error(r, SECTION_STATE, "counters out of range", diag);
    r->n_steps_resumed = r->n_steps;

    if ((st = rlt_agent_file_get_bytes(f, SECTION_SLOTS, &data, &len, diag)) != RLT_STATUS_OK) return st;
    rd = (train_reader){.p = (const unsigned char *)data, .len = len};
    if (train_get_u(&rd, 4) != (uint64_t)r->cfg.n_envs)
        return train_section_error(r, SECTION_SLOTS, "another number of envs", diag);
    for (int i = 0; i < r->cfg.n_envs; i++) {
        train_slot *sl = &r->slots[i];
        int32_t shape = (int32_t)(uint32_t)train_get_u(&rd, 4);
        sl->is_running = train_get_u(&rd, 1) != 0;
        sl->n_actions = (int)train_get_u(&rd, 2);
        if (rd.has_failed || shape < -1 || shape >= r->n_specs || sl->n_actions > r->cfg.episode_steps ||
            rd.len - rd.at < (size_t)sl->n_actions || (sl->is_running && shape < 0))
            return train_section_error(r, SECTION_SLOTS, "a slot out of range", diag);
        memcpy(sl->actions, rd.p + rd.at, (size_t)sl->n_actions);
        rd.at += (size_t)sl->n_actions;
        for (int k = 0; k < sl->n_actions; k++)
            if (sl->actions[k] >= RLT_ENV_N_ACTIONS)
                return train_section_error(r, SECTION_SLOTS, "an action out of range", diag);
        sl->ret = train_get_f64(&rd);
        sl->start_frac = train_get_f64(&rd);
        if (!isfinite(sl->ret) || !isfinite(sl->start_frac))
            return train_section_error(r, SECTION_SLOTS, "a return that is not finite", diag);
        sl->shape = shape; /* the env is made by restore_slots */
    }
    if (rd.has_failed || rd.at != len) return train_section_error(r, SECTION_SLOTS, "the wrong length", diag);

    if ((st = rlt_agent_file_get_bytes(f, SECTION_EPISODES, &data, &len, diag)) != RLT_STATUS_OK) return st;
    rd = (train_reader){.p = (const unsigned char *)data, .len = len};
    uint64_t n = train_get_u(&rd, 8);
    if (rd.has_failed || n > (uint64_t)r->n_steps || (len - 8) / 16 != n || (len - 8) % 16 != 0)
        return train_section_error(r, SECTION_EPISODES, "the wrong length", diag);
    for (uint64_t k = 0; k < n; k++) {
        int64_t end_step = (int64_t)train_get_u(&rd, 8);
        float ret = train_get_f32(&rd), start = train_get_f32(&rd);
        if (end_step < 1 || end_step > r->n_steps || !isfinite(ret) || !isfinite(start))
            return train_section_error(r, SECTION_EPISODES, "an episode out of range", diag);
        if ((st = episode_push(r, end_step, ret, start, diag)) != RLT_STATUS_OK) return st;
    }
    return RLT_STATUS_OK;
}

/* Rebuilds the episodes in progress: each running slot's env is reset on
 * its shape and its actions replayed, one level at a time, each level's
 * new states measured in one batch. */
static rlt_status restore_slots(train_run *r, rlt_diag *diag)
{
    int n = r->cfg.n_envs, max_actions = 0;
    rlt_status st = RLT_STATUS_OK;
    for (int i = 0; i < n; i++) {
        train_slot *sl = &r->slots[i];
        int shape = sl->shape;
        sl->shape = -1;
        if (!sl->is_running) continue;
        train_slot saved = *sl;
        if ((st = slot_start(r, i, shape, diag)) != RLT_STATUS_OK) return st;
        sl->n_actions = saved.n_actions;
        memcpy(sl->actions, saved.actions, sizeof sl->actions);
        sl->ret = saved.ret;
        sl->start_frac = saved.start_frac;
        max_actions = RLT_MAX(max_actions, sl->n_actions);
    }
    rlt_env *envs[RLT_TRAIN_MAX_ENVS];
    int actions[RLT_TRAIN_MAX_ENVS];
    for (int t = 0; t < max_actions; t++) {
        int m = 0;
        for (int i = 0; i < n; i++)
            if (r->slots[i].is_running && t < r->slots[i].n_actions) {
                envs[m] = r->slots[i].env;
                actions[m++] = r->slots[i].actions[t];
            }
        if ((st = rlt_env_prefetch(envs, actions, m, diag)) != RLT_STATUS_OK) return st;
        for (int i = 0; i < n; i++) {
            train_slot *sl = &r->slots[i];
            if (!sl->is_running || t >= sl->n_actions) continue;
            bool is_done = false;
            if ((st = rlt_env_step(sl->env, sl->actions[t], NULL, &is_done, diag)) != RLT_STATUS_OK) {
                rlt_diag_prefix(diag, "checkpoint '%s': replaying slot %d's episode", train_checkpoint_name(r), i);
                return st;
            }
            if (is_done) return train_section_error(r, SECTION_SLOTS, "an episode that had already ended", diag);
        }
    }
    for (int i = 0; i < n; i++)
        if (r->slots[i].is_running &&
            (st = rlt_env_observe(r->slots[i].env, r->slots[i].obs, RLT_ENV_OBS_LEN, diag)) != RLT_STATUS_OK)
            return st;
    return RLT_STATUS_OK;
}

/* ---- setting up ------------------------------------------------------------------ */

static rlt_mlp_spec policy_spec(const train_cfg *c, int n_out)
{
    rlt_mlp_spec s = {.n_inputs = RLT_ENV_OBS_LEN, .n_layers = c->n_hidden + 1};
    for (int l = 0; l < c->n_hidden; l++) s.layers[l] = (rlt_mlp_layer){c->hidden[l], RLT_NN_ACT_RELU};
    s.layers[c->n_hidden] = (rlt_mlp_layer){n_out, RLT_NN_ACT_NONE};
    return s;
}

static void scale_head(rlt_mlp *m, double gain)
{
    if (gain == 1.0) return;
    float *w = NULL, *b = NULL;
    rlt_mlp_layer_params(m, rlt_mlp_get_spec(m)->n_layers - 1, &w, &b);
    size_t n = (size_t)(b - w); /* the weights come right before the biases */
    for (size_t k = 0; k < n; k++) w[k] = (float)(w[k] * gain);
}

/* A run started from a policy (opts->init): PPO only, since its actor is
 * a network of logits as a bc or ppo policy's is (a dqn's gives
 * Q-values); the hidden layers are that policy's. Sets c->init to what the
 * checkpoint and `about` say of it. */
static rlt_status init_resolve(const rlt_train_opts *o, train_cfg *c, rlt_diag *diag)
{
    if (!o->init) return RLT_STATUS_OK;
    const char *name = o->init_name ? o->init_name : "-";
    if (c->algo != RLT_POLICY_ALGO_PPO)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "train: --init starts PPO's actor from a policy's network: give --algo ppo");
    if (o->init->algo == RLT_POLICY_ALGO_DQN)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "train: --init '%s' is a dqn policy: its outputs are Q-values, not the logits PPO's actor "
                        "needs (give a bc or ppo policy)",
                        name);
    const rlt_mlp_spec *sp = rlt_mlp_get_spec(o->init->net);
    int n_hidden = sp->n_layers - 1, hidden[RLT_POLICY_MAX_HIDDEN] = {0};
    if (n_hidden < 1 || n_hidden > RLT_POLICY_MAX_HIDDEN)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "train: --init '%s' has %d hidden layers (1..%d)", name,
                        n_hidden, RLT_POLICY_MAX_HIDDEN);
    for (int l = 0; l < n_hidden; l++) hidden[l] = sp->layers[l].n_units;
    if (o->n_hidden != 0 &&
        (o->n_hidden != n_hidden || memcmp(o->hidden, hidden, sizeof(int) * (size_t)n_hidden) != 0)) {
        char had[64], asked[64];
        hidden_text(hidden, n_hidden, had, sizeof had);
        hidden_text(o->hidden, o->n_hidden, asked, sizeof asked);
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "train: --hidden %s, but the network of --init '%s' has hidden layers %s (leave --hidden out)",
                        asked, name, had);
    }
    c->n_hidden = n_hidden;
    memcpy(c->hidden, hidden, sizeof c->hidden);
    snprintf(c->init, sizeof c->init, "%.200s (%s%s)", name, rlt_policy_algo_str(o->init->algo),
             o->init->is_blind ? ", blind" : "");
    for (char *p = c->init; *p; p++)
        if (*p == '\n') *p = '?';
    return RLT_STATUS_OK;
}

/* A new policy with its optimisers, from the seed; with opts->init its
 * actor (and critic, from a ppo policy) start as that policy's, and it is
 * blind if that one is. */
static rlt_status policy_fresh(train_run *r, rlt_diag *diag)
{
    const train_cfg *c = &r->cfg;
    const rlt_policy *init = r->opts->init;
    rlt_rng_seed(&r->rng, c->seed);
    uint64_t net_seed = rlt_rng_u64(&r->rng);
    rlt_status st = rlt_policy_create(c->algo, c->n_hidden, c->hidden, net_seed, &r->policy, diag);
    if (st != RLT_STATUS_OK) return st;
    if (init) {
        r->policy->is_blind = init->is_blind;
        if ((st = rlt_mlp_copy_weights(r->policy->net, init->net, diag)) != RLT_STATUS_OK ||
            (init->critic && (st = rlt_mlp_copy_weights(r->policy->critic, init->critic, diag)) != RLT_STATUS_OK))
            return st;
    }
    rlt_adam_opts ao = {.lr = c->lr};
    if ((st = rlt_adam_create(&ao, r->policy->net, &r->policy->net_adam, diag)) != RLT_STATUS_OK) return st;
    if (r->policy->critic &&
        (st = rlt_adam_create(&ao, r->policy->critic, &r->policy->critic_adam, diag)) != RLT_STATUS_OK)
        return st;
    if (!init) scale_head(r->policy->net, c->algo == RLT_POLICY_ALGO_PPO ? PPO_HEAD_GAIN : DQN_HEAD_GAIN);
    return RLT_STATUS_OK;
}

/* Reads the checkpoint's options and policy; the caller then makes the
 * rest and calls checkpoint_read_rest. */
static rlt_status resume_open(train_run *r, const rlt_agent_file *f, rlt_diag *diag)
{
    const char *name = train_checkpoint_name(r);
    double version = 0;
    const char *data = NULL;
    size_t len = 0;
    rlt_diag ignored = {0};
    if (rlt_agent_file_get_real(f, SECTION_VERSION, &version, &ignored) != RLT_STATUS_OK)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "'%s' is not a training checkpoint (no %s section): --resume takes the file written by "
                        "--checkpoint, not the policy of --out",
                        name, SECTION_VERSION);
    if (version != TRAIN_CHECKPOINT_VERSION)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "checkpoint '%s' has version %g, this rltune reads %d", name,
                        version, TRAIN_CHECKPOINT_VERSION);
    train_cfg ck;
    char ck_dataset[256];
    rlt_status st = rlt_agent_file_get_bytes(f, SECTION_OPTS, &data, &len, diag);
    if (st == RLT_STATUS_OK) st = cfg_read(r, data, len, &ck, ck_dataset, sizeof ck_dataset, diag);
    if (st == RLT_STATUS_OK) st = cfg_resolve(r->opts, &ck, name, &r->cfg, diag);
    if (st == RLT_STATUS_OK) st = rlt_agent_file_get_bytes(f, SECTION_DATASET, &data, &len, diag);
    if (st == RLT_STATUS_OK) st = check_dataset(r, data, len, ck_dataset, diag);
    if (st == RLT_STATUS_OK) st = rlt_policy_get(f, true, &r->policy, diag);
    if (st != RLT_STATUS_OK) return st;
    rlt_mlp_spec want = policy_spec(&r->cfg, RLT_ENV_N_ACTIONS), want_critic = policy_spec(&r->cfg, 1);
    bool is_ppo = r->cfg.algo == RLT_POLICY_ALGO_PPO;
    if (r->policy->algo != r->cfg.algo || !rlt_mlp_spec_equal(rlt_mlp_get_spec(r->policy->net), &want) ||
        !r->policy->net_adam || (is_ppo && (!rlt_mlp_spec_equal(rlt_mlp_get_spec(r->policy->critic), &want_critic) ||
                                            !r->policy->critic_adam)))
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                        "checkpoint '%s': its networks or optimiser states do not match its options", name);
    if (rlt_adam_get_opts(r->policy->net_adam)->lr != r->cfg.lr)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "checkpoint '%s': its optimiser's learning rate is not its lr",
                        name);
    return RLT_STATUS_OK;
}

static rlt_status check_opts(const rlt_train_opts *o, rlt_diag *diag)
{
    if (!o->shapes) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "train: no dataset given");
    if (o->n_steps < 1 || o->n_steps > RLT_TRAIN_MAX_STEPS)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "train: %lld steps (1..%lld)", (long long)o->n_steps,
                        (long long)RLT_TRAIN_MAX_STEPS);
    if (o->checkpoint_every < 0 || o->checkpoint_every > RLT_TRAIN_MAX_STEPS)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "train: checkpoint every %lld steps (1..%lld)",
                        (long long)o->checkpoint_every, (long long)RLT_TRAIN_MAX_STEPS);
    if (o->init && o->resume_path)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "train: --init starts a new run from a policy, --resume continues a checkpoint's: not both");
    int n_train = 0;
    for (int k = 0; k < o->shapes->n; k++) n_train += !o->shapes->is_test[k];
    if (n_train < 1)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "train: dataset '%s' has no training shapes (%d test shapes)",
                        o->dataset_name ? o->dataset_name : "-", o->shapes->n);
    return RLT_STATUS_OK;
}

static void fill_stats(const train_run *r, bool is_interrupted, rlt_train_stats *out)
{
    if (!out) return;
    memset(out, 0, sizeof *out);
    int64_t k = RLT_MIN(RLT_MAX(r->n_episodes / 10, 1), r->n_episodes);
    out->n_steps = r->n_steps;
    out->n_steps_resumed = r->n_steps_resumed;
    out->n_episodes = r->n_episodes;
    out->n_updates = r->n_updates;
    if (r->families) run_env_stats(r, &out->n_evaluations, &out->n_cache_hits);
    out->wall_s = run_wall_s(r);
    out->mean_return_first = mean_return(r, 0, k);
    out->mean_return_last = mean_return(r, r->n_episodes - k, r->n_episodes);
    out->mean_return_recent = recent_return(r);
    out->n_train_shapes = r->n_specs;
    out->n_checkpoints = r->n_checkpoints;
    out->is_interrupted = is_interrupted;
    snprintf(out->algo, sizeof out->algo, "%s", rlt_policy_algo_str(r->cfg.algo));
    out->seed = r->cfg.seed;
}

static void report_progress(const train_run *r, bool is_checkpoint)
{
    if (!r->opts->progress) return;
    rlt_train_progress p = {.n_steps_done = r->n_steps,
                            .n_steps_total = r->opts->n_steps,
                            .n_episodes = r->n_episodes,
                            .mean_return = recent_return(r),
                            .is_checkpoint = is_checkpoint};
    run_env_stats(r, &p.n_evaluations, &p.n_cache_hits);
    double dt = (double)(rlt_time_ns() - r->t0_ns) * 1e-9;
    if (dt > 0) {
        p.steps_per_s = (double)(r->n_steps - r->n_steps_resumed) / dt;
        p.states_per_s = (double)(p.n_evaluations - r->n_evaluations_base) / dt;
    }
    p.eta_s = p.steps_per_s > 0 ? (double)(r->opts->n_steps - r->n_steps) / p.steps_per_s : 0;
    r->opts->progress(&p, r->opts->progress_ctx);
}

/* ---- the run --------------------------------------------------------------------- */

/* One batched step of slots 0 .. n-1: episodes started where none runs,
 * actions chosen, their new states measured in one batch, the steps taken
 * and recorded, then the algorithm learns. */
static rlt_status batched_step(train_run *r, int n, rlt_diag *diag)
{
    rlt_status st;
    for (int i = 0; i < n; i++)
        if (!r->slots[i].is_running &&
            (st = slot_start(r, i, (int)rlt_rng_below(&r->rng, (uint64_t)r->n_specs), diag)) != RLT_STATUS_OK)
            return st;
    int actions[RLT_TRAIN_MAX_ENVS];
    rlt_env *envs[RLT_TRAIN_MAX_ENVS];
    if ((st = r->algo->act(r, n, actions, diag)) != RLT_STATUS_OK) return st;
    for (int i = 0; i < n; i++) envs[i] = r->slots[i].env;
    if ((st = rlt_env_prefetch(envs, actions, n, diag)) != RLT_STATUS_OK) {
        rlt_diag_prefix(diag, "measuring the states of step %lld", (long long)r->n_steps + 1);
        return st;
    }
    for (int i = 0; i < n; i++) {
        train_slot *sl = &r->slots[i];
        float before[RLT_ENV_OBS_LEN];
        memcpy(before, sl->obs, sizeof before);
        double reward = 0;
        bool is_done = false;
        if ((st = rlt_env_step(sl->env, actions[i], &reward, &is_done, diag)) != RLT_STATUS_OK ||
            (st = rlt_env_observe(sl->env, sl->obs, RLT_ENV_OBS_LEN, diag)) != RLT_STATUS_OK) {
            rlt_diag_prefix(diag, "step %lld, shape '%s', action %s", (long long)r->n_steps + i + 1,
                            r->specs[sl->shape], rlt_env_action_name(actions[i]));
            return st;
        }
        sl->actions[sl->n_actions++] = (uint8_t)actions[i];
        sl->ret += reward;
        bool is_truncated = !is_done && sl->n_actions >= r->cfg.episode_steps;
        r->algo->record(r, i, before, actions[i], (float)reward, is_done, is_truncated, sl->obs);
        if (is_done || is_truncated) {
            sl->is_running = false;
            if ((st = episode_push(r, r->n_steps + i + 1, sl->ret, sl->start_frac, diag)) != RLT_STATUS_OK)
                return st;
        }
    }
    r->n_steps += n;
    return r->algo->learn(r, n, diag);
}

rlt_status rlt_train(const rlt_train_opts *opts, rlt_policy **out, rlt_train_stats *stats, rlt_diag *diag)
{
    *out = NULL;
    if (stats) memset(stats, 0, sizeof *stats);
    train_run r = {.opts = opts, .t0_ns = rlt_time_ns()};
    rlt_agent_file *ck = NULL;
    bool is_interrupted = false;
    rlt_status st = check_opts(opts, diag);
    if (st != RLT_STATUS_OK) return st;
    /* BLAS worker threads must not compete with the compilers and the
     * measuring child; the networks are small enough for one thread, and
     * one thread keeps the results bit-identical run to run. */
    openblas_set_num_threads(1);

    const rlt_shape_set *set = opts->shapes;
    if (!(r.specs = rlt_calloc((size_t)set->n, sizeof *r.specs))) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory starting a training run");
        goto done;
    }
    for (int k = 0; k < set->n; k++)
        if (!set->is_test[k]) r.specs[r.n_specs++] = set->specs[k];

    if (opts->resume_path) {
        if ((st = rlt_agent_file_load(opts->resume_path, &ck, diag)) != RLT_STATUS_OK ||
            (st = resume_open(&r, ck, diag)) != RLT_STATUS_OK)
            goto done;
    } else {
        if ((st = cfg_resolve(opts, NULL, NULL, &r.cfg, diag)) != RLT_STATUS_OK ||
            (st = init_resolve(opts, &r.cfg, diag)) != RLT_STATUS_OK || (st = policy_fresh(&r, diag)) != RLT_STATUS_OK)
            goto done;
    }
    r.algo = r.cfg.algo == RLT_POLICY_ALGO_PPO ? &train_algo_ppo : &train_algo_dqn;
    if (!(r.families = rlt_calloc((size_t)r.n_specs, sizeof *r.families)) ||
        !(r.slots = rlt_calloc((size_t)r.cfg.n_envs, sizeof *r.slots))) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory starting a training run");
        goto done;
    }
    for (int i = 0; i < r.cfg.n_envs; i++) r.slots[i].shape = -1;
    if ((st = r.algo->init(&r, diag)) != RLT_STATUS_OK) goto done;
    if (ck) {
        if ((st = r.algo->load(&r, ck, diag)) != RLT_STATUS_OK ||
            (st = checkpoint_read_state(&r, ck, diag)) != RLT_STATUS_OK ||
            (st = restore_slots(&r, diag)) != RLT_STATUS_OK)
            goto done;
        rlt_agent_file_destroy(ck);
        ck = NULL;
    }

    if (r.n_steps > opts->n_steps) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "checkpoint '%s' has done %lld steps, more than the %lld asked for (the steps are the run's "
                      "total, not more steps)",
                      opts->resume_path, (long long)r.n_steps, (long long)opts->n_steps);
        goto done;
    }
    /* a new run writes its checkpoint (and curve) at once: a path that
     * cannot be written fails now, not after the first measurements */
    if (opts->checkpoint_path && !opts->resume_path && (st = checkpoint_write(&r, diag)) != RLT_STATUS_OK) goto done;
    int64_t every = opts->checkpoint_every > 0 ? opts->checkpoint_every : RLT_TRAIN_DEFAULT_CHECKPOINT_EVERY;
    while (r.n_steps < opts->n_steps) {
        if (opts->stop && *opts->stop) {
            is_interrupted = true;
            break;
        }
        int n = (int)RLT_MIN((int64_t)r.cfg.n_envs, opts->n_steps - r.n_steps);
        int64_t before = r.n_steps;
        if ((st = batched_step(&r, n, diag)) != RLT_STATUS_OK) goto done;
        bool is_due = opts->checkpoint_path && r.n_steps / every != before / every && r.n_steps < opts->n_steps;
        if (is_due && (st = checkpoint_write(&r, diag)) != RLT_STATUS_OK) goto done;
        report_progress(&r, is_due);
    }
    if (!is_interrupted && (st = r.algo->finish(&r, diag)) != RLT_STATUS_OK) goto done;
    if (opts->checkpoint_path) {
        if ((st = checkpoint_write(&r, diag)) != RLT_STATUS_OK) goto done;
    } else if (opts->curve_path && (st = curve_write(&r, opts->curve_path, diag)) != RLT_STATUS_OK) {
        goto done;
    }
    if ((st = set_about(&r, true, diag)) != RLT_STATUS_OK) goto done;
    *out = r.policy;
    r.policy = NULL;

done:
    fill_stats(&r, is_interrupted, stats);
    rlt_agent_file_destroy(ck);
    run_free(&r);
    return st;
}
