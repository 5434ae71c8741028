/*
 * cmd_show.c - `rltune show`: prints an op (rlt_op_text), the schedule
 * applied to it (rlt_sched_text), the loop tree it makes (rlt_nest_tree)
 * and the C kernel it lowers to (rlt_nest_c_source), or just the tree or
 * just the C with --tree-only / --c-only.
 */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

static const rlt_cli_opt show_opts[] = {
    RLT_CLI_OP_OPTS,
    {"tree-only", NULL, "print only the loop tree"},
    {"c-only", NULL, "print only the generated C kernel (without the shared preamble)"},
};

/* Prints a text with a newline after it unless it ends with one. */
static void print_text(const char *text)
{
    size_t len = strlen(text);
    fputs(text, stdout);
    if (len > 0 && text[len - 1] != '\n') fputc('\n', stdout);
}

static int run_show(const rlt_cli_args *args)
{
    int rc = RLT_CLI_EXIT_OK;
    rlt_diag d = {0};
    rlt_cli_input in = {0};
    rlt_c_source kernel = {0};
    char *op_text = NULL, *sched_text = NULL, *tree = NULL;
    bool is_tree_only = rlt_cli_args_has(args, "tree-only");
    bool is_c_only = rlt_cli_args_has(args, "c-only");
    if (is_tree_only && is_c_only) {
        rlt_cli_error("--tree-only and --c-only cannot be combined: each prints one part");
        rc = RLT_CLI_EXIT_USAGE;
        goto cleanup;
    }
    rlt_status st = rlt_cli_input_load(args, &in, &d);
    if (st != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    if (!is_tree_only) {
        st = rlt_nest_c_source(in.nest, &kernel, &d);
        if (st != RLT_STATUS_OK) {
            rlt_cli_error("code generation failed for %s: %s", rlt_op_spec(in.op), d.message);
            rc = rlt_cli_exit_for(st);
            goto cleanup;
        }
    }
    if (!is_c_only) {
        tree = rlt_nest_tree(in.nest);
        op_text = rlt_op_text(in.op);
        sched_text = in.sched ? rlt_sched_text(in.sched) : NULL;
        if (!tree || !op_text || (in.sched && !sched_text)) {
            rlt_cli_error("out of memory formatting the output");
            rc = RLT_CLI_EXIT_INTERNAL;
            goto cleanup;
        }
    }

    if (is_tree_only) {
        print_text(tree);
    } else if (is_c_only) {
        print_text(kernel.code);
    } else {
        printf("op: %s\n%s", rlt_op_spec(in.op), op_text);
        if (in.sched)
            printf("\nschedule: %s\n%s", in.sched_source, sched_text);
        else
            printf("\nschedule: (default schedule)\n");
        printf("\nloop tree:\n%s", tree);
        printf("\nC kernel %s%s (the shared preamble is left out):\n", kernel.symbol,
               kernel.needs_openmp ? ", compiled with OpenMP" : "");
        print_text(kernel.code);
    }

cleanup:
    rlt_free(tree);
    rlt_free(sched_text);
    rlt_free(op_text);
    rlt_free(kernel.code);
    rlt_cli_input_free(&in);
    return rc;
}

const rlt_cli_cmd rlt_cli_cmd_show = {
    .name = "show",
    .brief = "print an op, its schedule, loop tree and generated C",
    .synopsis = "(--op SPEC | --expr EXPR --shape SHAPE) [--schedule FILE] [--tree-only | --c-only]",
    .summary = "Prints the op, the schedule (\"(default schedule)\" when none), the loop tree the\n"
               "schedule makes and the C kernel it lowers to. Nothing is compiled or run.",
    .details = "Schedule files: one step a line, e.g. 'split i 8' (see docs/schedule.md and\n"
               "examples/schedules/). An illegal step is refused with its line and the reason.",
    .n_opts = (int)RLT_CLI_ARRAY_LEN(show_opts),
    .opts = show_opts,
    .run = run_show,
};
