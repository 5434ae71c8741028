/*
 * cmd_tuners.c - `rltune tuners`: lists the tuners `tune --tuner` takes and
 * every hyper-parameter `--tuner-opt` / `--tuner-config` can set, with the
 * tuners that read it and its default (search/tuner.h's table).
 */
#include "cli/cli.h"
#include "search/tuner.h"

#include <stdio.h>
#include <string.h>

static const rlt_cli_opt tuners_opts[] = {
    {"tuner", "NAME", "only this tuner and its options"},
};

/* One line per tuner; the names come from rlt_tuner_names. */
static const struct {
    const char *name, *summary;
} summaries[] = {
    {"random", "uniformly random configurations, never one twice"},
    {"grid", "every configuration in index order"},
    {"ga", "AutoTVM's genetic algorithm: elitism, two-point crossover, mutation"},
    {"xgb", "AutoTVM's XGBoost tuner, regression objective, simulated annealing over the model"},
    {"xgb-rank", "the same with the pairwise rank objective (the default tuner)"},
    {"ga-dqn", "ga with a DQN choosing the crossover point and one choosing the mutation"},
    {"dqn", "ktune's multi-step DQN: -1/0/+1 per knob over episodes"},
    {"bandit", "ktune's one-step contextual bandit (PPO-clip over whole configurations)"},
    {"ppo", "Chameleon: PPO walkers over the XGBoost model, k-means adaptive sampling"},
};

static const char *summary_of(const char *name)
{
    for (size_t i = 0; i < RLT_ARRAY_LEN(summaries); i++)
        if (strcmp(summaries[i].name, name) == 0) return summaries[i].summary;
    return "";
}

static int run_tuners(const rlt_cli_args *args)
{
    const char *only = rlt_cli_args_get(args, "tuner");
    bool is_known = !only;
    for (const char *const *n = rlt_tuner_names(); *n && !is_known; n++) is_known = strcmp(*n, only) == 0;
    if (!is_known) {
        rlt_cli_error("--tuner: unknown tuner '%s' (run 'rltune tuners' for the list)", only);
        return RLT_CLI_EXIT_USAGE;
    }
    printf("Tuners (rltune tune --tuner NAME):\n");
    for (const char *const *n = rlt_tuner_names(); *n; n++)
        if (!only || strcmp(*n, only) == 0) printf("  %-9s %s\n", *n, summary_of(*n));
    printf("\nHyper-parameters (--tuner-opt NAME=VALUE,... or --tuner-config FILE.json):\n");
    printf("  %-20s %-16s %-28s %s\n", "name", "tuners", "default", "meaning");
    for (int i = 0; i < rlt_tuner_opt_count(); i++) {
        const rlt_tuner_opt_info *info = rlt_tuner_opt_at(i);
        if (only && !rlt_tuner_opt_applies(info, only)) continue;
        printf("  %-20s %-16s %-28s %s\n", info->name, info->tuners, info->def, info->help);
    }
    return RLT_CLI_EXIT_OK;
}

const rlt_cli_cmd rlt_cli_cmd_tuners = {
    .name = "tuners",
    .brief = "list the tuners and the hyper-parameters each one reads",
    .synopsis = "[--tuner NAME]",
    .summary = "Lists the tuners 'rltune tune --tuner' takes and every hyper-parameter that\n"
               "--tuner-opt and --tuner-config can set, with the tuners that read it and its\n"
               "default (the published settings; docs/tuners.md says where each comes from).",
    .n_opts = (int)RLT_ARRAY_LEN(tuners_opts),
    .opts = tuners_opts,
    .run = run_tuners,
};
