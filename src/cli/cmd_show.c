/*
 * cmd_show.c - `rltune show`: prints an op (rlt_op_print), the schedule
 * applied to it (rlt_sched_print), the loop tree it makes (rlt_nest_print)
 * and the C kernel it lowers to (rlt_codegen_kernel), or just the tree or
 * just the C with --tree-only / --c-only.
 */
#include "cli/cli.h"
#include "codegen/codegen.h"

#include <stdio.h>

static const rlt_cli_opt show_opts[] = {
    RLT_CLI_OP_OPTS,
    {"tree-only", NULL, "print only the loop tree"},
    {"c-only", NULL, "print only the generated C kernel (without the shared preamble)"},
};

static int run_show(const rlt_cli_args *args)
{
    int rc = RLT_CLI_EXIT_OK;
    rlt_diag d = {0};
    rlt_cli_input in = {0};
    rlt_kernel_src kernel = {0};
    rlt_str out;
    rlt_str_init(&out);
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
        st = rlt_codegen_kernel(&in.nest, &kernel, &d);
        if (st != RLT_STATUS_OK) {
            rlt_cli_error("code generation failed for %s: %s", in.op->spec, d.message);
            rc = rlt_cli_exit_for(st);
            goto cleanup;
        }
    }

    if (is_tree_only) {
        rlt_nest_print(&in.nest, &out);
    } else if (is_c_only) {
        rlt_str_append(&out, kernel.code);
    } else {
        rlt_str_printf(&out, "op: %s\n", in.op->spec);
        rlt_op_print(in.op, &out);
        if (in.sched) {
            rlt_str_printf(&out, "\nschedule: %s\n", in.sched_source);
            rlt_sched_print(in.sched, &out);
        } else {
            rlt_str_append(&out, "\nschedule: (default schedule)\n");
        }
        rlt_str_append(&out, "\nloop tree:\n");
        rlt_nest_print(&in.nest, &out);
        rlt_str_printf(&out, "\nC kernel %s%s (the shared preamble is left out):\n", kernel.symbol,
                       kernel.needs_openmp ? ", compiled with OpenMP" : "");
        rlt_str_append(&out, kernel.code);
    }
    if (out.has_failed) {
        rlt_cli_error("out of memory formatting the output");
        rc = RLT_CLI_EXIT_INTERNAL;
        goto cleanup;
    }
    fwrite(out.data, 1, out.len, stdout);
    if (out.len > 0 && out.data[out.len - 1] != '\n') fputc('\n', stdout);

cleanup:
    rlt_str_free(&out);
    rlt_kernel_src_free(&kernel);
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
    .n_opts = (int)RLT_ARRAY_LEN(show_opts),
    .opts = show_opts,
    .run = run_show,
};
