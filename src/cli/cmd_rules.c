/*
 * cmd_rules.c - `rltune rules list|verify [FILE]`: the graph substitutions
 * shipped with rltune (or a file of them), listed or verified on random
 * inputs (rlt_rules_verify). A rule that fails is refused with its
 * counterexample and the command exits 2.
 */
#include "cli/cli.h"
#include "rltune/graph_opt.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

static const rlt_cli_opt rules_opts[] = {
    {"seed", "N", "random inputs of the checks (default 1)"},
    {"json", NULL, "print exactly one JSON object on stdout"},
};

static const char rules_synopsis[] = "list|verify [FILE] [--seed N] [--json]";

static void print_rules_help(void)
{
    rlt_cli_usage_print(stdout, "rules", rules_synopsis, rlt_cli_cmd_rules.summary, rlt_cli_cmd_rules.n_opts,
                        rlt_cli_cmd_rules.opts);
    printf("\n%s\n", rlt_cli_cmd_rules.details);
}

static char *format_json(const rlt_rules *rules, const char *source, bool is_verified)
{
    char *text = NULL;
    cJSON *root = cJSON_CreateObject();
    cJSON *list = NULL;
    if (!root || !cJSON_AddStringToObject(root, "rules", source) ||
        !cJSON_AddBoolToObject(root, "verified", is_verified) || !(list = cJSON_AddArrayToObject(root, "list")))
        goto cleanup;
    for (int i = 0; i < rlt_rules_count(rules); i++) {
        rlt_rule_info ri;
        rlt_rule_info_get(rules, i, &ri);
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(list, o)) {
            cJSON_Delete(o);
            goto cleanup;
        }
        if (!cJSON_AddStringToObject(o, "name", ri.name) || !cJSON_AddStringToObject(o, "doc", ri.doc) ||
            !rlt_cli_json_add_number(o, "line", ri.line) || !rlt_cli_json_add_number(o, "n_src", ri.n_src) ||
            !rlt_cli_json_add_number(o, "n_dst", ri.n_dst) || !rlt_cli_json_add_number(o, "n_checks", ri.n_checks))
            goto cleanup;
        if (is_verified &&
            (!cJSON_AddBoolToObject(o, "exact", ri.is_exact) || !rlt_cli_json_add_number(o, "max_error", ri.max_error)))
            goto cleanup;
    }
    text = cJSON_PrintUnformatted(root);
cleanup:
    cJSON_Delete(root);
    return text;
}

static int run_rules(int argc, char **argv)
{
    rlt_diag d = {0};
    if (argc == 0) {
        rlt_cli_error("'rltune rules' needs a sub-command: list or verify (see 'rltune help rules')");
        return RLT_CLI_EXIT_USAGE;
    }
    for (int a = 0; a < argc; a++)
        if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0) {
            print_rules_help();
            return RLT_CLI_EXIT_OK;
        }
    const char *sub = argv[0];
    bool is_verify = strcmp(sub, "verify") == 0;
    if (!is_verify && strcmp(sub, "list") != 0) {
        rlt_cli_error("unknown sub-command '%.100s' for 'rltune rules'; sub-commands: list, verify", sub);
        return RLT_CLI_EXIT_USAGE;
    }
    int first_opt = 1;
    const char *file = NULL;
    if (argc > 1 && strncmp(argv[1], "--", 2) != 0) {
        file = argv[1];
        first_opt = 2;
    }
    rlt_cli_args args;
    if (rlt_cli_args_parse(is_verify ? "rules verify" : "rules list", (int)RLT_CLI_ARRAY_LEN(rules_opts), rules_opts,
                           argc - first_opt, argv + first_opt, &args, &d) != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        return RLT_CLI_EXIT_USAGE;
    }
    int64_t seed;
    if (rlt_cli_args_int(&args, "seed", 1, 0, INT64_MAX, &seed, &d) != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        return RLT_CLI_EXIT_USAGE;
    }
    const char *source = file ? file : "shipped";
    rlt_rules *rules = NULL;
    rlt_status st = rlt_rules_load(file, &rules, &d);
    if (st != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        return rlt_cli_exit_for(st);
    }
    int rc = RLT_CLI_EXIT_OK;
    if (is_verify && (st = rlt_rules_verify(rules, (uint64_t)seed, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    if (rlt_cli_args_has(&args, "json")) {
        char *json = format_json(rules, source, is_verify);
        if (!json) {
            rlt_cli_error("out of memory formatting the rules");
            rc = RLT_CLI_EXIT_INTERNAL;
            goto cleanup;
        }
        printf("%s\n", json);
        cJSON_free(json);
        goto cleanup;
    }
    for (int i = 0; i < rlt_rules_count(rules); i++) {
        rlt_rule_info ri;
        rlt_rule_info_get(rules, i, &ri);
        if (is_verify)
            printf("ok  %-32s %d check%s x 2 opsets, %s\n", ri.name, ri.n_checks, ri.n_checks == 1 ? "" : "s",
                   ri.is_exact ? "exact" : "within 1e-5");
        else
            printf("%-32s %2d -> %-2d nodes  %s\n", ri.name, ri.n_src, ri.n_dst, ri.doc);
    }
    if (is_verify) printf("%d rules verified (%s)\n", rlt_rules_count(rules), source);
cleanup:
    rlt_rules_destroy(rules);
    return rc;
}

const rlt_cli_cmd rlt_cli_cmd_rules = {
    .name = "rules",
    .brief = "list or verify graph substitutions (the shipped set, or a file of them)",
    .synopsis = rules_synopsis,
    .summary = "list prints each rule: its name, the nodes it replaces and puts in, what it does.\n"
               "verify checks each rule on every one of its check lines, at opsets 11 and 13: the\n"
               "source pattern and its replacement are evaluated on the same random integer-valued\n"
               "inputs by rltune's reference evaluator and must agree (bit for bit when every op is\n"
               "exact on integers, else within 1e-5). Without FILE, the rules shipped with rltune.",
    .details = "A rule that fails is refused: the message names the rule, its check line and the\n"
               "first differing element with both values, and the command exits 2. The rule format:\n"
               "docs/graph-opt.md, \"Rules\".",
    .n_opts = (int)RLT_CLI_ARRAY_LEN(rules_opts),
    .opts = rules_opts,
    .run_words = run_rules,
};
