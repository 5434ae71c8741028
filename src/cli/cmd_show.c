/*
 * cmd_show.c - `rltune show`: prints an op (rlt_op_text), the schedule
 * applied to it (rlt_sched_text), the loop tree it makes (rlt_nest_tree)
 * and the C kernel it lowers to (rlt_nest_c_source); or one stage of the
 * code generation with --stage: the nest (the loop tree), the lowered
 * loops (rlt_nest_lowered_text) or the C. --tree-only and --c-only are
 * --stage nest and --stage c.
 */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

static const rlt_cli_opt show_opts[] = {
    RLT_CLI_OP_OPTS,
    {"stage", "STAGE", "print only one stage of code generation: nest, lowered or c"},
    {"tree-only", NULL, "print only the loop tree (--stage nest)"},
    {"c-only", NULL, "print only the generated C kernel, without the shared preamble (--stage c)"},
};

/* What `show` prints: everything, or one stage. */
typedef enum show_part { SHOW_ALL, SHOW_NEST, SHOW_LOWERED, SHOW_C } show_part;

/* Prints a text with a newline after it unless it ends with one. */
static void print_text(const char *text)
{
    size_t len = strlen(text);
    fputs(text, stdout);
    if (len > 0 && text[len - 1] != '\n') fputc('\n', stdout);
}

/* The part the options ask for; false (with a message) when they conflict
 * or name no stage. */
static bool show_part_of(const rlt_cli_args *args, show_part *out)
{
    const char *stage = rlt_cli_args_get(args, "stage");
    bool is_tree_only = rlt_cli_args_has(args, "tree-only");
    bool is_c_only = rlt_cli_args_has(args, "c-only");
    if (is_tree_only + is_c_only + (stage != NULL) > 1) {
        rlt_cli_error("--stage, --tree-only and --c-only cannot be combined: each prints one part");
        return false;
    }
    *out = is_tree_only ? SHOW_NEST : is_c_only ? SHOW_C : SHOW_ALL;
    if (!stage) return true;
    if (strcmp(stage, "nest") == 0) *out = SHOW_NEST;
    else if (strcmp(stage, "lowered") == 0) *out = SHOW_LOWERED;
    else if (strcmp(stage, "c") == 0) *out = SHOW_C;
    else {
        rlt_cli_error("--stage '%s' is not a stage: use nest, lowered or c", stage);
        return false;
    }
    return true;
}

static int run_show(const rlt_cli_args *args)
{
    int rc = RLT_CLI_EXIT_OK;
    rlt_diag d = {0};
    rlt_cli_input in = {0};
    rlt_c_source kernel = {0};
    char *op_text = NULL, *sched_text = NULL, *tree = NULL, *lowered = NULL;
    show_part part;
    if (!show_part_of(args, &part)) {
        rc = RLT_CLI_EXIT_USAGE;
        goto cleanup;
    }
    rlt_status st = rlt_cli_input_load(args, &in, &d);
    if (st != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    if (part == SHOW_ALL || part == SHOW_C) {
        st = rlt_nest_c_source(in.nest, &kernel, &d);
        if (st != RLT_STATUS_OK) {
            rlt_cli_error("code generation failed for %s: %s", rlt_op_spec(in.op), d.message);
            rc = rlt_cli_exit_for(st);
            goto cleanup;
        }
    }
    if (part == SHOW_LOWERED) {
        st = rlt_nest_lowered_text(in.nest, &lowered, &d);
        if (st != RLT_STATUS_OK) {
            rlt_cli_error("lowering failed for %s: %s", rlt_op_spec(in.op), d.message);
            rc = rlt_cli_exit_for(st);
            goto cleanup;
        }
    }
    if (part == SHOW_ALL || part == SHOW_NEST) {
        tree = rlt_nest_tree(in.nest);
        op_text = rlt_op_text(in.op);
        sched_text = in.sched ? rlt_sched_text(in.sched) : NULL;
        if (!tree || !op_text || (in.sched && !sched_text)) {
            rlt_cli_error("out of memory formatting the output");
            rc = RLT_CLI_EXIT_INTERNAL;
            goto cleanup;
        }
    }

    switch (part) {
    case SHOW_NEST:
        print_text(tree);
        break;
    case SHOW_LOWERED:
        print_text(lowered);
        break;
    case SHOW_C:
        print_text(kernel.code);
        break;
    case SHOW_ALL:
        printf("op: %s\n%s", rlt_op_spec(in.op), op_text);
        if (in.sched)
            printf("\nschedule: %s\n%s", in.sched_source, sched_text);
        else
            printf("\nschedule: (default schedule)\n");
        printf("\nloop tree:\n%s", tree);
        printf("\nC kernel %s%s (the shared preamble is left out):\n", kernel.symbol,
               kernel.needs_openmp ? ", compiled with OpenMP" : "");
        print_text(kernel.code);
        break;
    }

cleanup:
    rlt_free(lowered);
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
    .synopsis = "(--op SPEC | --expr EXPR --shape SHAPE) [--schedule FILE]\n"
                "                   [--stage nest|lowered|c | --tree-only | --c-only]",
    .summary = "Prints the op, the schedule (\"(default schedule)\" when none), the loop tree the\n"
               "schedule makes and the C kernel it lowers to; with --stage, one stage of code\n"
               "generation alone: the loop tree (nest), the lowered loops (lowered) or the C.\n"
               "Nothing is compiled or run.",
    .details = "Schedule files: one step a line, e.g. 'split i 8' (see docs/schedule.md and\n"
               "examples/schedules/). An illegal step is refused with its line and the reason.",
    .n_opts = (int)RLT_CLI_ARRAY_LEN(show_opts),
    .opts = show_opts,
    .run = run_show,
};
