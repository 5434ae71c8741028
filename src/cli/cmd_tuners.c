/*
 * cmd_tuners.c - `rltune tuners`: lists the tuners `tune --tuner` takes and
 * every hyper-parameter `--tuner-opt` / `--tuner-config` can set, with the
 * tuners that read it and its default (the library's tables,
 * rlt_tuner_summary and rlt_tuner_param_at).
 */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

static const rlt_cli_opt tuners_opts[] = {
    {"tuner", "NAME", "only this tuner and its options"},
};

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
        if (!only || strcmp(*n, only) == 0) printf("  %-9s %s\n", *n, rlt_tuner_summary(*n));
    printf("\nHyper-parameters (--tuner-opt NAME=VALUE,... or --tuner-config FILE.json):\n");
    printf("  %-20s %-16s %-28s %s\n", "name", "tuners", "default", "meaning");
    for (int i = 0; i < rlt_tuner_param_count(); i++) {
        rlt_tuner_param p = rlt_tuner_param_at(i);
        if (only && !rlt_tuner_reads_param(only, p.name)) continue;
        printf("  %-20s %-16s %-28s %s\n", p.name, p.tuners, p.def, p.help);
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
    .n_opts = (int)RLT_CLI_ARRAY_LEN(tuners_opts),
    .opts = tuners_opts,
    .run = run_tuners,
};
