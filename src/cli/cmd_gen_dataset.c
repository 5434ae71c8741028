/*
 * cmd_gen_dataset.c - `rltune gen-dataset`: writes a shape dataset
 * (rlt_shape_set_generate / _save, rltune/train.h): every matmul or
 * conv2d shape of the given ranges, or a seeded subset, split by shape into
 * a train and a test part for LoopTune policies. Measures nothing.
 */
#include "cli/cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define STR2(x) #x
#define STR(x) STR2(x)

static const rlt_cli_opt gen_dataset_opts[] = {
    {"kind", "KIND", "mm (matmul: M, N, K from --dims) or conv (conv2d: C, K from --dims) (default mm)"},
    {"dims", "RANGE", "mm: M, N and K; conv: channels C and K; LO:HI:STEP, N or A,B,C, e.g. 64:256:16 (required)"},
    {"sizes", "RANGE", "conv only: the image size H = W (default 7,14,28,56)"},
    {"kernels", "RANGE", "conv only: the kernel size R = S, odd (default 1,3)"},
    {"test-fraction", "X", "the part of the shapes held out for testing, from 0 up to (not including) 1 "
                           "(default 0.2)"},
    {"max-shapes", "N", "keep a random subset of N shapes, 1.." STR(RLT_SHAPES_MAX) " (default: all)"},
    {"seed", "S", "seed of the subset and of the split, a whole number >= 0 (default 0)"},
    {"out", "FILE", "the dataset file to write (replaced atomically; required)"},
};

static int run_gen_dataset(const rlt_cli_args *args)
{
    int rc = RLT_CLI_EXIT_USAGE;
    rlt_diag d = {0};
    rlt_shape_set set = {0};
    int64_t max_shapes = 0, seed = 0;
    double test_fraction = 0;
    rlt_status st = rlt_cli_args_double(args, "test-fraction", 0.2, 0.0, false, 1.0, &test_fraction, &d);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_int(args, "max-shapes", 0, 1, RLT_SHAPES_MAX, &max_shapes, &d);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_int(args, "seed", 0, 0, INT64_MAX, &seed, &d);
    if (st != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        goto cleanup;
    }
    const char *kind = rlt_cli_args_get(args, "kind");
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
    printf("%d %s shapes (%d train, %d test) written to %s\n", set.n, strcmp(o.kind, "conv") == 0 ? "conv2d" : "matmul",
           rlt_shape_set_count(&set, false), rlt_shape_set_count(&set, true), path);
    rc = RLT_CLI_EXIT_OK;
cleanup:
    rlt_shape_set_free(&set);
    return rc;
}

const rlt_cli_cmd rlt_cli_cmd_gen_dataset = {
    .name = "gen-dataset",
    .brief = "write a dataset of matmul or conv2d shapes, split into train and test, for LoopTune policies",
    .synopsis = "--dims RANGE --out FILE [--kind mm|conv] [--sizes RANGE] [--kernels RANGE]\n"
                "                          [--test-fraction X] [--max-shapes N] [--seed S]",
    .summary = "Writes every shape of the ranges (or a seeded random subset of --max-shapes of them) as\n"
               "canonical op specs, one a line, each marked train or test: round(n * --test-fraction)\n"
               "shapes, drawn by --seed, form the test part, which a policy trained on the train part\n"
               "never sees. --kind mm gives matmul:M=..,N=..,K=.. with M, N and K each from --dims;\n"
               "--kind conv gives conv2d with N=1, C and K from --dims, H = W from --sizes, R = S from\n"
               "--kernels, stride 1 and pad R/2 (the output keeps the input's size). A RANGE is\n"
               "LO:HI:STEP (LO, LO+STEP, ... up to HI), a value N, or a list A,B,C of whole numbers >= 1.\n"
               "Nothing is measured.",
    .details = "Example (13^3 = 2197 shapes, 439 of them for testing):\n"
               "  rltune gen-dataset --kind mm --dims 64:256:16 --out mm.shapes\n"
               "  rltune gen-dataset --kind conv --dims 16,32,64 --sizes 14,28 --kernels 1,3 --out conv.shapes\n"
               "The same options give the same file. At most " STR(RLT_SHAPES_MAX) " shapes before\n"
               "--max-shapes. stdout gets one line: the shapes, train / test, the file. The file's\n"
               "format: docs/formats.md (\"Shape datasets\").\n"
               "Exit status: 0 written; 2 bad input (an option, a range, an --out that cannot be written);\n"
               "3 internal error (out of memory).",
    .n_opts = (int)RLT_CLI_ARRAY_LEN(gen_dataset_opts),
    .opts = gen_dataset_opts,
    .run = run_gen_dataset,
};
