/*
 * tuner_opts.c - the tuners' hyper-parameters by name: one table that maps
 * each settable field of rlt_tuner_opts to its name, type, tuners, default
 * and meaning, and the setters that read them from text (`rltune tune
 * --tuner-opt`), from a JSON object (`--tuner-config`, the experiment
 * config's "options"). `rltune tuners` prints the table; docs/tuners.md
 * lists the same defaults.
 *
 * The table only parses and range-checks the syntax of a value; the tuner
 * checks what depends on the rest (rlt_tuner_create), as it does for
 * values set in code.
 */
#include "search/cost_model.h"
#include "search/tuner.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OPT_INT(field, tuners, def, help)                                                                      \
    {#field, RLT_TUNER_OPT_INT, offsetof(rlt_tuner_opts, field), tuners, def, help, NULL}
#define OPT_REAL(field, tuners, def, help)                                                                     \
    {#field, RLT_TUNER_OPT_REAL, offsetof(rlt_tuner_opts, field), tuners, def, help, NULL}

#define OPT_CHOICE(field, tuners, def, help, choices)                                                          \
    {#field, RLT_TUNER_OPT_CHOICE, offsetof(rlt_tuner_opts, field), tuners, def, help, choices}

static const char *const dqn_resets[] = {"zeros", "random", "median", NULL};

static const rlt_tuner_opt_info opt_table[] = {
    OPT_INT(population, "ga ga-dqn", "min(64, |space|)", "configurations per generation"),
    OPT_INT(elite, "ga ga-dqn", "3", "best configurations kept into the next generation"),
    OPT_REAL(mutation_prob, "ga", "0.1", "probability that a gene (knob) of a child mutates"),
    OPT_INT(plan_size, "xgb xgb-rank", "64", "configurations planned per model fit"),
    OPT_INT(fit_every, "xgb xgb-rank", "16",
            "measurements between model fits (the first one too), at most plan_size; each fit re-plans (AutoTVM: "
            "64)"),
    OPT_INT(sa_chains, "xgb xgb-rank", "128", "simulated-annealing walkers over the model"),
    OPT_INT(sa_iterations, "xgb xgb-rank", "500", "annealing steps at most (stops after 50 without a new top plan)"),
    OPT_CHOICE(cost_loss, "xgb xgb-rank ppo", "the tuner's",
               "the cost model's loss: rank, reg, or reg-weighted (rows weighted by score, as Ansor's); xgb: reg, "
               "xgb-rank: rank, ppo: reg-weighted on spaces it scores whole, else rank",
               rlt_cost_loss_names),
    OPT_REAL(bandit_lr, "bandit", "0.001", "Adam's learning rate"),
    OPT_REAL(bandit_clip, "bandit", "0.2", "PPO's ratio clip"),
    OPT_INT(bandit_epochs, "bandit", "3", "passes over each rollout"),
    OPT_INT(bandit_minibatch, "bandit", "32", "rows per gradient step"),
    {"bandit_entropy_coef", RLT_TUNER_OPT_REAL_OR_NONE, offsetof(rlt_tuner_opts, bandit_entropy_coef), "bandit",
     "0.01", "entropy bonus (0: none)", NULL},
    OPT_INT(dqn_horizon, "dqn", "20", "steps per episode"),
    OPT_CHOICE(dqn_reset, "dqn", "random", "episode start: zeros, random or median knobs", dqn_resets),
    OPT_INT(dqn_walkers, "dqn", "the batch size (at most 256)", "parallel episodes"),
    OPT_REAL(dqn_gamma, "dqn", "0.9", "discount, < 1"),
    OPT_REAL(dqn_lr, "dqn", "0.001", "Adam's learning rate"),
    OPT_INT(dqn_hidden, "dqn", "64", "units in each of the two ReLU layers"),
    OPT_INT(dqn_minibatch, "dqn", "32", "transitions per gradient step"),
    OPT_INT(dqn_replay, "dqn", "10000", "replay buffer capacity (transitions)"),
    OPT_INT(dqn_target_every, "dqn", "100", "gradient steps between target-network copies"),
    OPT_REAL(dqn_eps_end, "dqn", "0.05", "final per-knob exploration rate"),
    OPT_INT(dqn_eps_decay, "dqn", "300", "proposals over which exploration falls linearly from 1"),
    OPT_INT(dqn_train_steps, "dqn", "2", "gradient steps per new transition"),
    OPT_REAL(ga_dqn_lr, "ga-dqn", "0.001", "Adam's learning rate"),
    OPT_REAL(ga_dqn_gamma, "ga-dqn", "0.95", "discount, < 1"),
    OPT_REAL(ga_dqn_eps_decay, "ga-dqn", "0.99", "epsilon's factor per learning step, <= 1"),
    OPT_REAL(ga_dqn_eps_min, "ga-dqn", "0.1", "epsilon's floor, <= 1"),
    OPT_INT(ga_dqn_replay, "ga-dqn", "10000", "replay buffer capacity (transitions)"),
    OPT_INT(ga_dqn_minibatch, "ga-dqn", "64", "transitions per learning step"),
    OPT_INT(ga_dqn_learn_start, "ga-dqn", "100", "transitions before the first learning step"),
    OPT_INT(ga_dqn_target_every, "ga-dqn", "200", "transitions between target-network copies"),
    OPT_REAL(ga_dqn_grad_clip, "ga-dqn", "10", "gradient-norm clip"),
    OPT_REAL(ga_dqn_best_bonus, "ga-dqn", "5", "reward factor for a new best"),
    OPT_INT(ga_dqn_fresh, "ga-dqn", "0", "1: untrained agents (the published GA-DQN), not the built-in ones"),
    OPT_REAL(ppo_lr, "ppo", "0.001", "Adam's learning rate of the actor-critic"),
    OPT_INT(ppo_epochs, "ppo", "3", "passes over each segment of walker steps"),
    OPT_INT(ppo_minibatch, "ppo", "32", "transitions per gradient step"),
    OPT_REAL(ppo_gamma, "ppo", "0.9", "discount, < 1"),
    OPT_REAL(ppo_lambda, "ppo", "0.99", "GAE's lambda, <= 1"),
    OPT_REAL(ppo_clip, "ppo", "0.2", "PPO's ratio clip, < 1"),
    {"ppo_entropy_coef", RLT_TUNER_OPT_REAL_OR_NONE, offsetof(rlt_tuner_opts, ppo_entropy_coef), "ppo", "0.3",
     "entropy bonus (0: none)", NULL},
    OPT_INT(ppo_walkers, "ppo", "128", "parallel walkers over the cost model"),
    OPT_INT(ppo_episode_steps, "ppo", "500", "walker steps per episode (then a random restart)"),
    OPT_INT(ppo_explore_steps, "ppo", "100", "walker steps per exploration of a fitted model, at most"),
    OPT_INT(ppo_stall_steps, "ppo", "50", "an exploration stops after this many steps without a new top candidate"),
    OPT_INT(ppo_score_whole, "ppo", "4096",
            "spaces of at most this many configurations are scored whole by the cost model instead of walked (1: walk "
            "every space)"),
};

#define N_OPTS ((int)(sizeof opt_table / sizeof opt_table[0]))

int rlt_tuner_opt_count(void) { return N_OPTS; }

const rlt_tuner_opt_info *rlt_tuner_opt_at(int i)
{
    RLT_ASSERT(i >= 0 && i < N_OPTS);
    return &opt_table[i];
}

const rlt_tuner_opt_info *rlt_tuner_opt_find(const char *key)
{
    for (int i = 0; i < N_OPTS; i++)
        if (strcmp(opt_table[i].name, key) == 0) return &opt_table[i];
    return NULL;
}

bool rlt_tuner_opt_applies(const rlt_tuner_opt_info *info, const char *tuner)
{
    size_t n = strlen(tuner);
    for (const char *p = info->tuners; *p;) {
        const char *end = strchr(p, ' ');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, tuner, n) == 0) return true;
        p += len;
        while (*p == ' ') p++;
    }
    return false;
}

int rlt_tuner_param_count(void) { return N_OPTS; }

rlt_tuner_param rlt_tuner_param_at(int i)
{
    if (i < 0 || i >= N_OPTS) return (rlt_tuner_param){0};
    const rlt_tuner_opt_info *info = &opt_table[i];
    return (rlt_tuner_param){.name = info->name, .tuners = info->tuners, .def = info->def, .help = info->help};
}

bool rlt_tuner_reads_param(const char *tuner, const char *name)
{
    const rlt_tuner_opt_info *info = rlt_tuner_opt_find(name);
    return info && rlt_tuner_opt_applies(info, tuner);
}

rlt_status rlt_tuner_opts_set(rlt_tuner_opts *o, const char *key, const char *value, rlt_diag *diag)
{
    const rlt_tuner_opt_info *info = rlt_tuner_opt_find(key);
    if (!info)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "unknown tuner option '%s' (`rltune tuners` lists them)",
                        key);
    char *field = (char *)o + info->offset;
    switch (info->type) {
    case RLT_TUNER_OPT_INT: {
        int64_t v;
        if (!rlt_parse_i64(value, &v) || v < 1 || v > 100000000)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "tuner option %s: '%s' is not a whole number in [1, 100000000]", key, value);
        *(int *)field = (int)v;
        return RLT_STATUS_OK;
    }
    case RLT_TUNER_OPT_REAL:
    case RLT_TUNER_OPT_REAL_OR_NONE: {
        char *end = NULL;
        errno = 0;
        double v = *value ? strtod(value, &end) : NAN;
        bool is_zero_ok = info->type == RLT_TUNER_OPT_REAL_OR_NONE;
        if (!end || *end || errno || !isfinite(v) || v < 0 || (v == 0 && !is_zero_ok))
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "tuner option %s: '%s' is not a %s finite number", key,
                            value, is_zero_ok ? "non-negative" : "positive");
        /* the field's 0 means "the default": "none" is stored as -1 */
        *(double *)field = v == 0 ? -1.0 : v;
        return RLT_STATUS_OK;
    }
    case RLT_TUNER_OPT_CHOICE: {
        char accepted[128] = "";
        for (int i = 0; info->choices[i]; i++) {
            if (strcmp(value, info->choices[i]) == 0) {
                *(const char **)field = info->choices[i]; /* static: the opts keep no caller memory */
                return RLT_STATUS_OK;
            }
            size_t len = strlen(accepted);
            snprintf(accepted + len, sizeof accepted - len, "%s%s", i ? ", " : "", info->choices[i]);
        }
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "tuner option %s: '%s' is not one of %s", key, value,
                        accepted);
    }
    }
    RLT_ASSERT(!"unknown option type");
    return RLT_STATUS_INTERNAL;
}

rlt_status rlt_tuner_opts_set_json(rlt_tuner_opts *o, const char *tuner, const cJSON *obj, const char *where,
                                   rlt_diag *diag)
{
    if (!cJSON_IsObject(obj))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s: expected an object of tuner options", where);
    const cJSON *item;
    cJSON_ArrayForEach(item, obj)
    {
        const char *key = item->string ? item->string : "";
        const rlt_tuner_opt_info *info = rlt_tuner_opt_find(key);
        if (!info)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "%s.%s: unknown tuner option (`rltune tuners` lists them)", where, key);
        if (tuner && !rlt_tuner_opt_applies(info, tuner))
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s.%s: an option of %s, not of %s", where, key,
                            info->tuners, tuner);
        char text[64];
        if (cJSON_IsString(item)) {
            if (strlen(item->valuestring) >= sizeof text)
                return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s.%s: value too long", where, key);
            strcpy(text, item->valuestring);
        } else if (cJSON_IsNumber(item)) {
            snprintf(text, sizeof text, "%.17g", item->valuedouble);
        } else {
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s.%s: expected a number or a string", where, key);
        }
        rlt_diag sub = {0};
        if (rlt_tuner_opts_set(o, key, text, &sub) != RLT_STATUS_OK)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s.%s: %s", where, key, sub.message);
    }
    return RLT_STATUS_OK;
}
