/*
 * cmd_ops.c - `rltune ops`: lists the built-in op library (rlt_op_library)
 * with every parameter, as text or (--json) as one JSON array, and explains
 * how to give a user expression instead.
 */
#include "cli/cli.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>

static const rlt_cli_opt ops_opts[] = {
    {"json", NULL, "print a JSON array of ops instead of text"},
};

static void print_text(const rlt_op_info *ops, int n_ops)
{
    printf("Built-in ops: --op NAME:KEY=VALUE,... (keys in any order; defaults may be left out)\n");
    for (int i = 0; i < n_ops; i++) {
        const rlt_op_info *op = &ops[i];
        printf("\n%s\n  %s\n", op->name, op->summary);
        for (int p = 0; p < op->n_params; p++) {
            const rlt_op_param *prm = &op->params[p];
            char when[96];
            if (prm->is_required)
                snprintf(when, sizeof when, "required, %" PRId64 "..%" PRId64, prm->min_value, prm->max_value);
            else
                snprintf(when, sizeof when, "default %" PRId64 ", %" PRId64 "..%" PRId64, prm->default_value,
                         prm->min_value, prm->max_value);
            printf("  %-9s %s (%s)\n", prm->key, prm->help, when);
        }
        printf("  example: --op %s\n", op->example);
    }
    printf("\nUser expressions: --expr EXPR --shape SHAPE\n"
           "  EXPR is one statement OUT[i,j,...] += body (summed over the indices not on the left)\n"
           "  or OUT[...] = body, optionally followed by '; OUT[...] = epilogue' that reads the\n"
           "  result as OUT[...]; body uses loads with affine indices, numbers, + - *, relu, max, min.\n"
           "  SHAPE gives every index's extent. Loads outside a tensor read zero (padding).\n"
           "  example: --expr 'C[i,j] += A[i,k] * B[k,j]' --shape i=64,j=64,k=64\n"
           "  example: --expr 'Y[i,j] += X[i,k] * W[j,k]; Y[i,j] = relu(Y[i,j] + b[j])' "
           "--shape i=32,j=64,k=128\n"
           "  Grammar and rules: docs/ir.md.\n");
}

/* The array as one JSON document; NULL when out of memory. */
static char *format_json(const rlt_op_info *ops, int n_ops)
{
    char *text = NULL;
    cJSON *arr = cJSON_CreateArray();
    if (!arr) goto cleanup;
    for (int i = 0; i < n_ops; i++) {
        const rlt_op_info *op = &ops[i];
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(arr, o)) {
            cJSON_Delete(o);
            goto cleanup;
        }
        cJSON_AddStringToObject(o, "name", op->name);
        cJSON_AddStringToObject(o, "summary", op->summary);
        cJSON_AddStringToObject(o, "example", op->example);
        cJSON *params = cJSON_AddArrayToObject(o, "params");
        if (!params) goto cleanup;
        for (int p = 0; p < op->n_params; p++) {
            const rlt_op_param *prm = &op->params[p];
            cJSON *po = cJSON_CreateObject();
            if (!po || !cJSON_AddItemToArray(params, po)) {
                cJSON_Delete(po);
                goto cleanup;
            }
            cJSON_AddStringToObject(po, "key", prm->key);
            cJSON_AddStringToObject(po, "help", prm->help);
            cJSON_AddBoolToObject(po, "required", prm->is_required);
            if (prm->is_required)
                cJSON_AddNullToObject(po, "default");
            else
                rlt_cli_json_add_number(po, "default", (double)prm->default_value);
            rlt_cli_json_add_number(po, "min", (double)prm->min_value);
            rlt_cli_json_add_number(po, "max", (double)prm->max_value);
        }
    }
    text = cJSON_PrintUnformatted(arr);

cleanup:
    cJSON_Delete(arr);
    return text;
}

static int run_ops(const rlt_cli_args *args)
{
    int n_ops = 0;
    const rlt_op_info *ops = rlt_op_library(&n_ops);
    if (!rlt_cli_args_has(args, "json")) {
        print_text(ops, n_ops);
        return RLT_CLI_EXIT_OK;
    }
    char *text = format_json(ops, n_ops);
    if (!text) {
        rlt_cli_error("out of memory formatting the op list");
        return RLT_CLI_EXIT_INTERNAL;
    }
    printf("%s\n", text);
    cJSON_free(text);
    return RLT_CLI_EXIT_OK;
}

const rlt_cli_cmd rlt_cli_cmd_ops = {
    .name = "ops",
    .brief = "list the built-in ops, their parameters and examples",
    .synopsis = "[--json]",
    .summary = "Lists the built-in ops: name, expression, every parameter (help, required or default,\n"
               "range) and an example spec; also how to give a user expression with --expr/--shape.",
    .details = "With --json: an array of {name, summary, example, params: [{key, help, required,\n"
               "default (null when required), min, max}]}.",
    .n_opts = (int)RLT_CLI_ARRAY_LEN(ops_opts),
    .opts = ops_opts,
    .run = run_ops,
};
