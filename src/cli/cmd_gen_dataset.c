/*
 * cmd_gen_dataset.c - `rltune gen-dataset`: writes a shape dataset
 * (rlt_shape_set_generate / _save, rltune/train.h): every matmul or
 * conv2d shape of the given ranges, or a seeded subset, split by shape into
 * a train and a test part for LoopTune policies; measures nothing. Or, with
 * --kind states, a state dataset of one op (rlt_env_dataset_make,
 * rltune/env.h): the env states near the start, measured, which the env
 * replays (`rltune env --measure replay:FILE`, Python's LoopNest-v0).
 */
#include "cli/cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const rlt_cli_opt gen_dataset_opts[] = {
    {"kind", "KIND", "mm (matmul: M, N, K from --dims), mm-random (matmul: --max-shapes of them, M, N, K "
                     "each drawn log-uniformly from --dims), dense-random, bmm-random (dense, batch_matmul: "
                     "drawn the same way), conv (conv2d: C, K from --dims) or states (the env states of one op, "
                     "measured) (default mm)"},
    {"dims", "RANGE", "mm: M, N and K; conv: channels C and K; LO:HI:STEP, N or A,B,C, e.g. 64:256:16 (required)"},
    {"sizes", "RANGE", "conv only: the image size H = W (default 7,14,28,56)"},
    {"kernels", "RANGE", "conv only: the kernel size R = S, odd (default 1,3)"},
    {"test-fraction", "X", "the part of the shapes held out for testing, from 0 up to (not including) 1 "
                           "(default 0.2)"},
    {"max-shapes", "N", "keep a random subset of N shapes, 1.." RLT_CLI_STR(RLT_SHAPES_MAX) " (default: all)"},
    {"seed", "S", "seed of the subset and of the split (states: of the states kept and of the input data), "
                  "a whole number >= 0 (default 0)"},
    {"out", "FILE", "the dataset file to write (replaced atomically; required)"},
    /* --kind states */
    {"op", "SPEC", "states: the op, e.g. matmul:M=64,N=64,K=64 (see 'rltune ops')"},
    {"expr", "EXPR", "states: a user expression instead (needs --shape)"},
    {"shape", "SHAPE", "states: extents of the expression's indices, e.g. i=64,j=64,k=64"},
    {"schedule", "FILE", "states: start from this schedule's nest (default: the op's default nest)"},
    {"depth", "N", "states: steps from the start the walk goes, 1..64 (default 4)"},
    {"max-states", "N", "states: at most N states, 1..100000 (default 1000)"},
    {"batch", "N", "states: kernels built together, 1..256 (default 16)"},
    {"threads", "N", "states: run-time threads of a parallel loop, 1..256 (default 1)"},
    {"cc", "CMD", "states: compiler command (default $RLTUNE_CC, else gcc)"},
    {"cflags", "FLAGS", "states: compiler flags, one argument (default \"" RLT_DEFAULT_CFLAGS "\")"},
    {"repeat", "N", "states: timed samples per state, at least 1 (default 3)"},
    {"min-repeat-ms", "X", "states: shortest timed sample in milliseconds, above 0 (default 10)"},
    {"timeout", "S", "states: time limit in seconds for one kernel's run, above 0 (default 10)"},
    {"peak", "GFLOPS", "states: one core's peak to normalise rewards by (default: measured once, cached)"},
};

/* The options of each kind; any other kind's is refused. */
static const char *const shape_only[] = {"dims", "sizes", "kernels", "test-fraction", "max-shapes"};
static const char *const states_only[] = {"op",  "expr",   "shape",  "schedule",      "depth",   "max-states",
                                          "batch", "threads", "cc",  "cflags", "repeat", "min-repeat-ms",
                                          "timeout", "peak"};

/* The first option of `names` given, or NULL. */
static const char *first_given(const rlt_cli_args *args, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (rlt_cli_args_has(args, names[i])) return names[i];
    return NULL;
}

/* The progress line of a state dataset, on a terminal. */
static void states_progress(void *ctx, int n_done, int n_states)
{
    if (!*(const bool *)ctx) return;
    printf("\r[gen-dataset] %d/%d states measured", n_done, n_states);
    fflush(stdout);
}

static int run_gen_states(const rlt_cli_args *args)
{
    int rc = RLT_CLI_EXIT_USAGE;
    rlt_diag d = {0};
    rlt_op *op = NULL;
    char *start = NULL;
    int64_t depth = 0, max_states = 0, batch = 0;
    rlt_env_dataset_opts o = {0};
    const char *bad = first_given(args, shape_only, RLT_CLI_ARRAY_LEN(shape_only));
    if (bad) {
        rlt_cli_error("--%s is an option of shape datasets (--kind mm or conv), not of --kind states", bad);
        goto cleanup;
    }
    rlt_status st = rlt_cli_env_opts_get(args, 3, 10.0, &o.env, &d);
    if (st == RLT_STATUS_OK)
        st = rlt_cli_args_int(args, "depth", RLT_ENV_DATASET_DEFAULT_DEPTH, 1, RLT_ENV_DATASET_MAX_DEPTH, &depth, &d);
    if (st == RLT_STATUS_OK)
        st = rlt_cli_args_int(args, "max-states", RLT_ENV_DATASET_DEFAULT_MAX_STATES, 1, RLT_ENV_DATASET_MAX_STATES,
                              &max_states, &d);
    if (st == RLT_STATUS_OK)
        st = rlt_cli_args_int(args, "batch", RLT_ENV_DATASET_DEFAULT_BATCH, 1, RLT_ENV_DATASET_MAX_BATCH, &batch, &d);
    if (st != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        goto cleanup;
    }
    const char *path = rlt_cli_args_get(args, "out");
    if (!path || !path[0]) {
        rlt_cli_error("no --out given: name the state dataset file to write, e.g. --out mm64.states");
        goto cleanup;
    }
    const char *sched_path = rlt_cli_args_get(args, "schedule");
    if (sched_path && (st = rlt_cli_text_read(sched_path, &start, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("--schedule: %s", d.message);
        goto cleanup;
    }
    if ((st = rlt_cli_op_load(args, &op, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    bool is_tty = isatty(STDOUT_FILENO) != 0;
    o.depth = (int)depth;
    o.max_states = (int)max_states;
    o.batch_size = (int)batch;
    o.seed = o.env.seed;
    o.start_schedule = start;
    o.stop = &rlt_cli_stop_requested;
    o.progress = states_progress;
    o.progress_ctx = &is_tty;
    rlt_env_dataset_result r;
    fflush(stdout); /* the runner forks: nothing buffered may be written twice */
    rlt_cli_interrupt_catch();
    st = rlt_env_dataset_make(rlt_op_spec(op), path, &o, &r, &d);
    rlt_cli_interrupt_release();
    if (is_tty) printf("\n");
    if (st != RLT_STATUS_OK) {
        if (sched_path && st != RLT_STATUS_OUT_OF_MEMORY) rlt_diag_prefix(&d, "--schedule %s", sched_path);
        rlt_cli_error("%s", d.message);
        /* a file that cannot be written is bad input; a kernel that cannot
         * be measured at all (no compiler), the environment */
        rc = st == RLT_STATUS_IO_ERROR ? RLT_CLI_EXIT_USAGE : rlt_cli_exit_for(st);
        goto cleanup;
    }
    printf("%d states of %s (all within %d step%s; %d found within %d%s) written to %s\n", r.n_states,
           rlt_op_spec(op), r.depth_complete, r.depth_complete == 1 ? "" : "s", r.n_found, o.depth,
           r.was_stopped ? "; stopped by Ctrl-C" : "", path);
    printf("start %.2f GFLOP/s, best %.2f GFLOP/s, %d failed, peak %.2f GFLOP/s, %.1f s\n", r.start_gflops,
           r.best_gflops, r.n_failed, r.peak_gflops, r.wall_s);
    rc = RLT_CLI_EXIT_OK;
cleanup:
    free(start); /* rlt_cli_text_read's: libc's allocator */
    rlt_op_destroy(op);
    return rc;
}

static int run_gen_dataset(const rlt_cli_args *args)
{
    int rc = RLT_CLI_EXIT_USAGE;
    rlt_diag d = {0};
    rlt_shape_set set = {0};
    int64_t max_shapes = 0, seed = 0;
    const char *kind = rlt_cli_args_get(args, "kind");
    if (kind && strcmp(kind, "states") == 0) return run_gen_states(args);
    const char *bad = first_given(args, states_only, RLT_CLI_ARRAY_LEN(states_only));
    if (bad) {
        rlt_cli_error("--%s is an option of state datasets (--kind states), not of shape datasets", bad);
        return rc;
    }
    double test_fraction = 0;
    rlt_status st = rlt_cli_args_double(args, "test-fraction", 0.2, 0.0, false, 1.0, &test_fraction, &d);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_int(args, "max-shapes", 0, 1, RLT_SHAPES_MAX, &max_shapes, &d);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_int(args, "seed", 0, 0, INT64_MAX, &seed, &d);
    if (st != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        goto cleanup;
    }
    const char *dims = rlt_cli_args_get(args, "dims");
    const char *path = rlt_cli_args_get(args, "out");
    if (!dims) {
        rlt_cli_error("no --dims given: give the range of the sizes, e.g. --dims 64:256:16 (LO:HI:STEP), "
                      "--dims 64 or --dims 32,64,128");
        goto cleanup;
    }
    if (!path) {
        rlt_cli_error("no --out given: name the dataset file to write, e.g. --out shapes.txt");
        goto cleanup;
    }
    if (!path[0]) {
        rlt_cli_error("--out is empty: name the dataset file to write, e.g. --out shapes.txt");
        goto cleanup;
    }
    rlt_shape_gen_opts o = {
        .kind = kind ? kind : "mm",
        .dims = dims,
        .sizes = rlt_cli_args_get(args, "sizes"),
        .kernels = rlt_cli_args_get(args, "kernels"),
        .test_fraction = test_fraction,
        .max_shapes = (int)max_shapes,
        .seed = (uint64_t)seed,
    };
    if ((st = rlt_shape_set_generate(&o, &set, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    if ((st = rlt_shape_set_save(&set, path, &d)) != RLT_STATUS_OK) {
        /* an --out that cannot be written (no such directory) is bad input */
        rlt_cli_error("--out %s: %s", path, d.message);
        rc = st == RLT_STATUS_OUT_OF_MEMORY ? RLT_CLI_EXIT_INTERNAL : RLT_CLI_EXIT_USAGE;
        goto cleanup;
    }
    const char *family = strcmp(o.kind, "conv") == 0           ? "conv2d"
                         : strcmp(o.kind, "dense-random") == 0 ? "dense"
                         : strcmp(o.kind, "bmm-random") == 0   ? "batch_matmul"
                                                               : "matmul";
    printf("%d %s shapes (%d train, %d test) written to %s\n", set.n, family, rlt_shape_set_count(&set, false),
           rlt_shape_set_count(&set, true), path);
    rc = RLT_CLI_EXIT_OK;
cleanup:
    rlt_shape_set_free(&set);
    return rc;
}

const rlt_cli_cmd rlt_cli_cmd_gen_dataset = {
    .name = "gen-dataset",
    .brief = "write a dataset of matmul, dense, batch_matmul or conv2d shapes for LoopTune policies, or of an "
             "op's env states",
    .synopsis = "--dims RANGE --out FILE [--kind mm|mm-random|dense-random|bmm-random|conv] [--sizes RANGE]\n"
                "                          [--kernels RANGE]\n"
                "                          [--test-fraction X] [--max-shapes N] [--seed S]\n"
                "       rltune gen-dataset --kind states (--op SPEC | --expr EXPR --shape SHAPE) --out FILE\n"
                "                          [--schedule FILE] [--depth N] [--max-states N] [--batch N] [--seed S]\n"
                "                          [--threads N] [--cc CMD] [--cflags FLAGS] [--repeat N]\n"
                "                          [--min-repeat-ms X] [--timeout S] [--peak GFLOPS]",
    .summary = "Writes every shape of the ranges (or a seeded random subset of --max-shapes of them) as\n"
               "canonical op specs, one a line, each marked train or test: round(n * --test-fraction)\n"
               "shapes, drawn by --seed, form the test part, which a policy trained on the train part\n"
               "never sees. --kind mm gives matmul:M=..,N=..,K=.. with M, N and K each from --dims;\n"
               "--kind mm-random draws --max-shapes distinct matmuls instead, M, N and K each from --dims'\n"
               "values, log-uniformly (as many of 16..63 as of 256..1023: thin and tall ones, odd sizes);\n"
               "--kind dense-random and bmm-random draw dense and batch_matmul shapes the same way, with\n"
               "bias and relu each on or off at random (dense) or the batch log-uniform in 2..16;\n"
               "--kind conv gives conv2d with N=1, C and K from --dims, H = W from --sizes, R = S from\n"
               "--kernels, stride 1 and pad R/2 (the output keeps the input's size). A RANGE is\n"
               "LO:HI:STEP (LO, LO+STEP, ... up to HI), a value N, or a list A,B,C of whole numbers >= 1.\n"
               "Nothing is measured.\n"
               "--kind states writes a state dataset of one op instead: every state of the LoopTune env\n"
               "within --depth steps of the start (the op's default nest, or --schedule's), found breadth\n"
               "first over every action from every cursor position; when a level would pass --max-states,\n"
               "a random subset of its new states (drawn by --seed) fills the rest. Each state's kernel is\n"
               "built, checked and timed as `rltune env` does, --batch at a time. `rltune env --measure\n"
               "replay:FILE` and Python's LoopNest-v0 (measure=\"replay:FILE\") then answer from the file:\n"
               "nothing is measured, and actions to states it lacks are masked.",
    .details = "Example (13^3 = 2197 shapes, 439 of them for testing):\n"
               "  rltune gen-dataset --kind mm --dims 64:256:16 --out mm.shapes\n"
               "  rltune gen-dataset --kind mm-random --dims 16:1024:1 --max-shapes 200 --seed 7 --out any.shapes\n"
               "  rltune gen-dataset --kind conv --dims 16,32,64 --sizes 14,28 --kernels 1,3 --out conv.shapes\n"
               "  rltune gen-dataset --kind states --op matmul:M=32,N=32,K=32 --depth 4 --out mm32.states\n"
               "The same options give the same file (a state dataset: the same states, measured). At most\n"
               RLT_CLI_STR(RLT_SHAPES_MAX) " shapes before --max-shapes. stdout gets one line: the shapes, train /\n"
               "test, the file (states: two lines, the states and their GFLOP/s). Formats:\n"
               "docs/formats.md (\"Shape datasets\"), docs/env.md (\"State datasets\"). Ctrl-C stops a\n"
               "state dataset after the batch in flight and writes the states measured.\n"
               "Exit status: 0 written; 2 bad input (an option, a range, an op, a --schedule the env cannot\n"
               "express, an --out that cannot be written); 3 environment or internal error (no compiler,\n"
               "out of memory).",
    .n_opts = (int)RLT_CLI_ARRAY_LEN(gen_dataset_opts),
    .opts = gen_dataset_opts,
    .run = run_gen_dataset,
};
