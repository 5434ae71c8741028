/*
 * cmd_export.c - `rltune export`: writes the best recorded kernel of an op
 * (or the kernel of a --schedule file) as a stand-alone C library in a
 * directory: source, documented header, compiled shared object, a checking
 * example and its Makefile (src/export/export.h does the work); or, with
 * --model, a whole network compiled as `rltune run` compiles it
 * (rlt_model_compile, then rlt_model_export: src/net/net_export.c).
 *
 * A kernel's library is compiled the way the record was measured: with the
 * compiler its configuration chose (the space's cc knob) and the --cflags
 * that also select the record's target. A network's is built by its
 * Makefile, every kernel with --cc and --cflags.
 */
#include "cli/cli.h"
#include "rltune/model.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const rlt_cli_opt export_opts[] = {
    {"op", "SPEC", "built-in op, e.g. matmul:M=512,N=512,K=512 (see 'rltune ops')"},
    {"expr", "EXPR", "a user expression instead, e.g. 'C[i,j] += A[i,k] * B[k,j]' (needs --shape)"},
    {"shape", "SHAPE", "extents of the expression's indices, e.g. i=64,j=64,k=64"},
    {"schedule", "FILE", "export this schedule ('-' reads stdin) instead of the best record's"},
    RLT_CLI_TARGET_OPTS,
    {"out", "DIR", "directory to write the library to (created if absent; its files are replaced)"},
    {"name", "NAME", "the library's name, [a-z_][a-z0-9_]* (default rltune_<op>_<sizes>; rltune_<model>)"},
    {"model", "FILE", "export a whole ONNX network instead, compiled as 'rltune run' compiles it"},
    {"embed-weights", NULL, "--model: compile the weights into the library instead of NAME.weights (small models)"},
    {"seed", "S", "--model: seed of the example's random input (default 0)"},
    {"warm", NULL, "--model: take only the records timed warm (by default the cold ones first, as 'rltune run')"},
    {"layout", "L", "--model: " RLT_CLI_LAYOUT_AUTO_HELP},
};

/* "rltune_" and the model file's name without its directory and ".onnx",
 * lower case, other characters '_': the default library name. */
static void model_name(const char *path, char *out, size_t cap)
{
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    size_t len = strlen(base);
    if (len > 5 && strcmp(base + len - 5, ".onnx") == 0) len -= 5;
    int n = snprintf(out, cap, "rltune_");
    for (size_t i = 0; i < len && (size_t)n + 1 < cap && n < 100; i++, n++) {
        char c = (char)tolower((unsigned char)base[i]);
        out[n] = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ? c : '_';
    }
    out[n] = '\0';
}

/* `rltune export --model`: compiles the network (schedules from --db, as
 * `rltune run` takes them) and writes it as a library. */
static int run_export_model(const rlt_cli_args *args, const char *dir)
{
    static const char *const op_only[] = {"op", "expr", "shape", "schedule", "all-targets"};
    int rc = RLT_CLI_EXIT_USAGE;
    rlt_diag d = {0};
    rlt_status st;
    rlt_model *m = NULL;
    rlt_net *net = NULL;
    const char *path = rlt_cli_args_get(args, "model");
    int64_t threads, seed;
    for (size_t i = 0; i < RLT_CLI_ARRAY_LEN(op_only); i++)
        if (rlt_cli_args_has(args, op_only[i])) {
            rlt_cli_error("--model exports a whole network: it cannot be combined with --%s, which chooses a kernel",
                          op_only[i]);
            return RLT_CLI_EXIT_USAGE;
        }
    if (!path || !path[0]) {
        rlt_cli_error("--model FILE needs the ONNX model to export");
        return RLT_CLI_EXIT_USAGE;
    }
    if (rlt_cli_args_has(args, "cold") && rlt_cli_args_has(args, "warm")) {
        rlt_cli_error("--cold and --warm contradict each other: give one (or neither: cold)");
        return RLT_CLI_EXIT_USAGE;
    }
    int block = 0;
    if ((rc = rlt_cli_model_layout(args, true, &block)) != RLT_CLI_EXIT_OK) return rc;
    if (rlt_cli_args_int(args, "threads", 1, 1, RLT_MAX_THREADS, &threads, &d) != RLT_STATUS_OK ||
        rlt_cli_args_int(args, "seed", 0, 0, INT64_MAX, &seed, &d) != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        return RLT_CLI_EXIT_USAGE;
    }
    /* --db: the named file must exist; the default is used when present */
    const char *db_path = rlt_cli_args_get(args, "db");
    if (db_path && access(db_path, R_OK) != 0) {
        rlt_cli_error("--db: cannot read '%s': %s", db_path, strerror(errno));
        return RLT_CLI_EXIT_USAGE;
    }
    if (!db_path && access("rltune.db", R_OK) == 0) db_path = "rltune.db";
    char name[128];
    if (rlt_cli_args_has(args, "name")) snprintf(name, sizeof name, "%s", rlt_cli_args_get(args, "name"));
    else model_name(path, name, sizeof name);
    if ((rc = rlt_cli_model_load(path, &m)) != RLT_CLI_EXIT_OK) return rc;
    rlt_net_options no;
    rlt_net_options_init(&no);
    no.db_path = db_path;
    no.n_threads = (int)threads;
    no.build.cc = rlt_cli_args_get(args, "cc");
    no.build.cflags = rlt_cli_args_get(args, "cflags");
    no.cold_weights = rlt_cli_model_cold(args, m, true);
    no.channel_block = block;
    if ((st = rlt_model_compile(m, &no, &net, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("%s: %s", path, d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    rlt_model_export_options eo;
    rlt_model_export_options_init(&eo);
    eo.dir = dir;
    eo.name = name;
    eo.origin = path;
    eo.embed_weights = rlt_cli_args_has(args, "embed-weights");
    eo.seed = (uint64_t)seed;
    rlt_model_export_result res;
    if ((st = rlt_model_export(m, net, &eo, &res, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("%s: %s", path, d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    int n_tuned = 0;
    for (int i = 0; i < rlt_net_n_tasks(net); i++) {
        rlt_net_task t;
        rlt_net_task_get(net, i, &t);
        n_tuned += t.origin != RLT_NET_FROM_SEED;
    }
    printf("model:   %s (opset %d): %d nodes\n", path, rlt_model_opset(m), rlt_model_n_nodes(m));
    printf("library: %s: %d steps: %d fused kernels of %d tasks (%d tuned%s%s, %d from seeds), %d fast op%s; "
           "%d view%s run%s nothing\n",
           res.name, res.n_steps, res.n_kernel_steps, rlt_net_n_tasks(net), n_tuned, db_path ? " from " : "",
           db_path ? db_path : "", rlt_net_n_tasks(net) - n_tuned, res.n_fast_ops,
           res.n_fast_ops == 1 ? "" : "s", res.n_views,
           res.n_views == 1 ? "" : "s", res.n_views == 1 ? "s" : "");
    printf("memory:  %.2f MiB of weights (%s), %.2f MiB of activations\n", (double)res.weights_bytes / 1048576.0,
           eo.embed_weights ? "compiled in" : "a file", (double)res.arena_bytes / 1048576.0);
    printf("wrote:   %s/{%s.h, %s.c, %s_kernels_*.c (%d), ops_run.h, ops_run.c, %s%s, example.c, Makefile, "
           "input_*.npy, expected_*.npy}\n",
           dir, res.name, res.name, res.name, res.n_kernel_files, res.name,
           eo.embed_weights ? "_weights.c" : ".weights");
    printf("build:   %s %s%s (the Makefile's CC and CFLAGS)\n", res.cc, res.cflags,
           res.needs_openmp ? " -fopenmp" : "");
    if (res.n_other_cc > 0)
        printf("note:    %d task%s' records chose another compiler (cc=clang); the library compiles every kernel "
               "with %s\n",
               res.n_other_cc, res.n_other_cc == 1 ? "'s" : "s", res.cc);
    printf("check:   make -C %s check\n", dir);
    rc = RLT_CLI_EXIT_OK;
cleanup:
    rlt_net_destroy(net);
    rlt_model_destroy(m);
    return rc;
}

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
    if (rlt_cli_args_has(args, "model")) return run_export_model(args, dir);
    if (rlt_cli_args_has(args, "embed-weights") || rlt_cli_args_has(args, "seed") || rlt_cli_args_has(args, "warm") ||
        rlt_cli_args_has(args, "layout")) {
        rlt_cli_error("--%s goes with --model", rlt_cli_args_has(args, "seed")            ? "seed"
                                                : rlt_cli_args_has(args, "embed-weights") ? "embed-weights"
                                                : rlt_cli_args_has(args, "warm")          ? "warm"
                                                                                          : "layout");
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
    .brief = "write the best recorded kernel of an op, or a whole network, as a stand-alone C library",
    .synopsis = "(--op SPEC | --expr EXPR --shape SHAPE) --out DIR [--schedule FILE | --db FILE]\n"
                "                     [--threads N] [--cc CMD] [--cflags FLAGS] [--all-targets] [--name NAME]\n"
                "       rltune export --model FILE --out DIR [--db FILE] [--threads N] [--cc CMD] [--cflags FLAGS] [--cold | --warm]\n"
                "                     [--name NAME] [--embed-weights] [--seed S] [--layout auto|nchw|nchwc]",
    .summary = "Writes the kernel of the op's best OK record (as 'rltune best' finds it; or of the\n"
               "--schedule given) to DIR: NAME.c, NAME.h (one function taking the tensors by name),\n"
               "libNAME.so (compiled with the record's compiler and --cflags), example.c (checks the\n"
               "library against the op's reference) and a Makefile. 'make -C DIR run' builds and runs\n"
               "the example without rltune.\n"
               "With --model, the network compiled as 'rltune run --model' compiles it (each task from\n"
               "its best record in --db, default rltune.db when it exists, else a seed) is written to\n"
               "DIR: NAME.h (create / run / destroy, the inputs and outputs), NAME.c (the program),\n"
               "NAME_kernels_*.c, ops_run.[ch] (rltune's fast ops), NAME.weights, a Makefile, and\n"
               "example.c with a seeded input and rltune's reference output as .npy files. 'make -C DIR\n"
               "check' builds libNAME.so and checks it (within 1e-4 of the largest reference value).",
    .details = "Exit status 1 when there is no OK record to export (the message says what to run); 2 for\n"
               "bad input, a network with a node only rltune's reference evaluator runs included (the\n"
               "message names it). Layouts: docs/formats.md, \"Exported kernels\" and \"Exported networks\".",
    .n_opts = (int)RLT_CLI_ARRAY_LEN(export_opts),
    .opts = export_opts,
    .run = run_export,
};
