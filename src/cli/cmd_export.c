/*
 * cmd_export.c - `rltune export`: writes the best recorded kernel of an op
 * (or the kernel of a --schedule file) as a stand-alone C library in a
 * directory: source, documented header, compiled shared object, a checking
 * example and its Makefile (src/export/export.h does the work).
 *
 * The library is compiled the way the record was measured: with the
 * compiler its configuration chose (the space's cc knob) and the --cflags
 * that also select the record's target.
 */
#include "cli/cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const rlt_cli_opt export_opts[] = {
    {"op", "SPEC", "built-in op, e.g. matmul:M=512,N=512,K=512 (see 'rltune ops')"},
    {"expr", "EXPR", "a user expression instead, e.g. 'C[i,j] += A[i,k] * B[k,j]' (needs --shape)"},
    {"shape", "SHAPE", "extents of the expression's indices, e.g. i=64,j=64,k=64"},
    {"schedule", "FILE", "export this schedule ('-' reads stdin) instead of the best record's"},
    RLT_CLI_TARGET_OPTS,
    {"out", "DIR", "directory to write the library to (created if absent; its files are replaced)"},
    {"name", "NAME", "the library's name, [a-z_][a-z0-9_]* (default rltune_<op>_<sizes>)"},
};

static int run_export(const rlt_cli_args *args)
{
    int rc = RLT_CLI_EXIT_USAGE;
    rlt_diag d = {0};
    rlt_cli_input in = {0};
    rlt_op *op = NULL;
    rlt_sched *sched = NULL;
    rlt_record *r = NULL;
    char *origin = NULL, *target = NULL;
    rlt_export_result res;
    rlt_status st;
    int64_t threads;
    const char *dir = rlt_cli_args_get(args, "out");
    const char *sched_path = rlt_cli_args_get(args, "schedule");
    const char *db_path = NULL;
    rlt_export_opts o = {.dir = dir, .name = rlt_cli_args_get(args, "name"),
                         .build = {.cc = rlt_cli_args_get(args, "cc"), .cflags = rlt_cli_args_get(args, "cflags")}};
    if (!dir || !dir[0]) {
        rlt_cli_error("--out DIR is required: the directory to write the library to");
        goto cleanup;
    }
    if (sched_path && (rlt_cli_args_has(args, "db") || rlt_cli_args_has(args, "all-targets"))) {
        rlt_cli_error("--schedule exports that schedule: it cannot be combined with --db or --all-targets, "
                      "which choose a record");
        goto cleanup;
    }
    if ((st = rlt_cli_args_int(args, "threads", 1, 1, RLT_MAX_THREADS, &threads, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        goto cleanup;
    }
    o.n_threads = (int)threads;
    if (sched_path) {
        if ((st = rlt_cli_input_load(args, &in, &d)) != RLT_STATUS_OK) {
            rlt_cli_error("%s", d.message);
            rc = rlt_cli_exit_for(st);
            goto cleanup;
        }
        op = in.op;
        sched = in.sched;
        if (asprintf(&origin, "schedule file %s", strcmp(sched_path, "-") == 0 ? "<stdin>" : sched_path) < 0)
            origin = NULL;
    } else {
        if ((st = rlt_cli_op_load(args, &in.op, &d)) != RLT_STATUS_OK) {
            rlt_cli_error("%s", d.message);
            rc = rlt_cli_exit_for(st);
            goto cleanup;
        }
        op = in.op;
        if (!(r = calloc(1, sizeof *r))) {
            rlt_cli_error("out of memory");
            rc = RLT_CLI_EXIT_INTERNAL;
            goto cleanup;
        }
        const char *cc = NULL;
        if ((rc = rlt_cli_best_input(args, &in, r, &db_path, &cc)) != RLT_CLI_EXIT_OK) goto cleanup;
        rc = RLT_CLI_EXIT_USAGE;
        sched = in.sched;
        if (cc) o.build.cc = cc;
        o.n_threads = r->target.n_threads;
        if (!(target = rlt_record_target_text(&r->target)) ||
            asprintf(&origin, "record %" PRId64 " of %s: %.2f GFLOP/s, %.4f ms, tuner %s\ntarget %s\nconfig %s",
                     r->id, db_path, r->gflops, r->time_median_ms, r->tuner, target,
                     r->config[0] ? r->config : "(a bare schedule)") < 0)
            origin = NULL;
    }
    if (!origin) {
        rlt_cli_error("out of memory");
        rc = RLT_CLI_EXIT_INTERNAL;
        goto cleanup;
    }
    o.origin = origin;
    if ((st = rlt_export_kernel(op, sched, &o, &res, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("%s%s", st == RLT_STATUS_ILLEGAL_SCHEDULE ? "the schedule does not apply: " : "", d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    printf("op:      %s\n", rlt_op_spec(op));
    printf("from:    %s\n", sched_path ? origin : db_path);
    if (r) printf("best:    %.2f GFLOP/s (record %" PRId64 ")\n", r->gflops, r->id);
    printf("wrote:   %s/{%s.h, %s.c, lib%s.so, example.c, Makefile}\n", dir, res.name, res.name, res.name);
    printf("check:   make -C %s run\n", dir);
    rc = RLT_CLI_EXIT_OK;
cleanup:
    free(origin);
    rlt_free(target);
    free(r);
    rlt_cli_input_free(&in);
    return rc;
}

const rlt_cli_cmd rlt_cli_cmd_export = {
    .name = "export",
    .brief = "write the best recorded kernel of an op as a stand-alone C library",
    .synopsis = "(--op SPEC | --expr EXPR --shape SHAPE) --out DIR [--schedule FILE | --db FILE]\n"
                "                     [--threads N] [--cc CMD] [--cflags FLAGS] [--all-targets] [--name NAME]",
    .summary = "Writes the kernel of the op's best OK record (as 'rltune best' finds it; or of the\n"
               "--schedule given) to DIR: NAME.c, NAME.h (one function taking the tensors by name),\n"
               "libNAME.so (compiled with the record's compiler and --cflags), example.c (checks the\n"
               "library against the op's reference) and a Makefile. 'make -C DIR run' builds and runs\n"
               "the example without rltune.",
    .details = "Exit status 1 when there is no OK record to export (the message says what to run).\n"
               "Layout and the wrapper's contract: docs/formats.md, \"Exported kernels\".",
    .n_opts = (int)RLT_CLI_ARRAY_LEN(export_opts),
    .opts = export_opts,
    .run = run_export,
};
