/* End-to-end tests of `rltune gen-dataset` (src/cli/cmd_gen_dataset.c):
 * mm and conv datasets written to a file that rlt_shape_set_load reads
 * back with the counts of the one summary line on stdout; the defaults
 * (--kind mm, --test-fraction 0.2); --max-shapes and --seed; the same
 * options giving the same bytes; --kind states (a state dataset of a tiny
 * op, measured at -O1, which `rltune env --measure replay:FILE` replays);
 * the help; and bad input (exit 2, one "rltune: error:" line naming the
 * option, nothing on stdout, no file). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/shapes.h"

#include "../common/tmp.h"
#include "cli_runner.h"

static char tmp_dir[] = "/tmp/rlt_cli_gen_dataset_XXXXXX";

static void setup(void) { tmp_dir_use(tmp_dir); }

static void teardown(void) { tmp_remove_tree(tmp_dir); }

TestSuite(cli_gen_dataset, .init = setup, .fini = teardown, .timeout = 120);

/* Loads `path`, which must be a shape dataset of n shapes, n_test of them
 * for testing. */
static void assert_dataset(const char *path, int n, int n_test, const char *about)
{
    rlt_shape_set s;
    rlt_diag d = {0};
    cr_assert_eq(rlt_shape_set_load(path, &s, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(s.n, n, "%d shapes", s.n);
    cr_assert_eq(rlt_shape_set_count(&s, true), n_test);
    cr_assert_str_eq(s.about, about);
    rlt_shape_set_free(&s);
}

Test(cli_gen_dataset, mm)
{
    const char *out = tmp_path("mm.shapes");
    cli_run r = CLI("gen-dataset", "--kind", "mm", "--dims", "64:256:16", "--out", out);
    assert_ok(&r);
    char expected[512];
    snprintf(expected, sizeof expected, "2197 matmul shapes (1758 train, 439 test) written to %s\n", out);
    cr_assert_str_eq(r.out, expected);
    cr_assert_str_empty(r.err, "stderr: %s", r.err);
    assert_dataset(out, 2197, 439, "kind mm dims 64:256:16 test-fraction 0.2 seed 0");
    cli_run_free(&r);

    /* --kind mm is the default; the same options give the same bytes, another seed another file */
    const char *same = tmp_path("same.shapes"), *other = tmp_path("other.shapes");
    r = CLI("gen-dataset", "--dims", "64:256:16", "--out", same);
    assert_ok(&r);
    cli_run_free(&r);
    r = CLI("gen-dataset", "--dims", "64:256:16", "--out", other, "--seed", "1");
    assert_ok(&r);
    cli_run_free(&r);
    size_t n1, n2, n3;
    char *t1 = tmp_file_read(out, &n1), *t2 = tmp_file_read(same, &n2), *t3 = tmp_file_read(other, &n3);
    cr_assert(n1 == n2 && memcmp(t1, t2, n1) == 0, "the same options wrote other bytes");
    cr_assert(n1 != n3 || memcmp(t1, t3, n1) != 0, "--seed 1 wrote the same file as seed 0");
    free(t1);
    free(t2);
    free(t3);
}

Test(cli_gen_dataset, conv_subset_and_options)
{
    const char *out = tmp_path("conv.shapes");
    cli_run r = CLI("gen-dataset", "--kind", "conv", "--dims", "16:64:16", "--sizes", "7,14", "--kernels", "1,3,5",
                    "--test-fraction", "0.25", "--max-shapes", "20", "--seed", "7", "--out", out);
    assert_ok(&r);
    char expected[512];
    snprintf(expected, sizeof expected, "20 conv2d shapes (15 train, 5 test) written to %s\n", out);
    cr_assert_str_eq(r.out, expected);
    assert_dataset(out, 20, 5,
                   "kind conv dims 16:64:16 sizes 7,14 kernels 1,3,5 max-shapes 20 test-fraction 0.25 seed 7");
    char *text = tmp_file_read(out, NULL);
    assert_has(text, ",stride=1,pad=", "the file");
    cr_assert_null(strstr(text, "N=2"), "conv shapes have N=1:\n%s", text);
    free(text);
    cli_run_free(&r);

    /* no test part; conv's default sizes and kernels: 1 x 4 x 1 x 2 shapes */
    r = CLI("gen-dataset", "--kind", "conv", "--dims", "32", "--test-fraction", "0", "--out", out);
    assert_ok(&r);
    snprintf(expected, sizeof expected, "8 conv2d shapes (8 train, 0 test) written to %s\n", out);
    cr_assert_str_eq(r.out, expected);
    assert_dataset(out, 8, 0, "kind conv dims 32 sizes 7,14,28,56 kernels 1,3 test-fraction 0 seed 0");
    cli_run_free(&r);
}

Test(cli_gen_dataset, states, .timeout = 300)
{
    const char *out = tmp_path("mm8.states");
    cli_run r = CLI("gen-dataset", "--kind", "states", "--op", "matmul:M=8,N=8,K=8", "--depth", "1", "--cflags",
                    "-O1 -march=native", "--repeat", "1", "--min-repeat-ms", "1", "--peak", "100", "--out", out);
    assert_ok(&r);
    assert_has(r.out, " written to ", "stdout");
    assert_has(r.out, "states of matmul:M=8,N=8,K=8 (all within 1 step; ", "stdout");
    assert_has(r.out, ", 0 failed, peak 100.00 GFLOP/s, ", "stdout");
    cr_assert_str_empty(r.err, "stderr: %s", r.err);
    int n_states = atoi(r.out);
    cr_assert_gt(n_states, 3, "%s", r.out);
    cli_run_free(&r);
    char *text = tmp_file_read(out, NULL);
    assert_has(text, "# rltune env states v1\nop matmul:M=8,N=8,K=8\nthreads 1\npeak_gflops 100\nstart cache_write j\n"
                     "depth 1\ndepth_complete 1\nseed 0\nmeasured live, 1 sample of at least 1 ms\n",
               "the file");
    assert_has(text, "\nOK\t", "the file");
    free(text);

    /* replayed: the dataset's peak, nothing built (no compiler needed), a step out of it refused */
    char replay[1024];
    snprintf(replay, sizeof replay, "replay:%s", out);
    r = CLI_STDIN("split_2\nunroll\nstop\n", "env", "--op", "matmul:M=8,N=8,K=8", "--measure", replay);
    assert_ok(&r);
    assert_has(r.out, "peak:     100.00 GFLOP/s (one core, FP32 FMA, the dataset's)\n", "stdout");
    assert_has(r.out, "measure:  replay of ", "stdout");
    assert_has(r.out, "\n> split_2\nreward:   ", "stdout");
    assert_has(r.err, "rltune: unroll is not legal here: unroll: the state it leads to is not in the replay "
                      "dataset ", "stderr");
    cli_run_free(&r);
}

Test(cli_gen_dataset, help)
{
    cli_run h = CLI("gen-dataset", "--help");
    assert_ok(&h);
    const char *needles[] = {"usage: rltune gen-dataset --dims RANGE --out FILE", "--test-fraction X",
                             "--max-shapes N", "rltune gen-dataset --kind mm --dims 64:256:16 --out", "Exit status",
                             "rltune gen-dataset --kind states (--op SPEC", "--depth N", "--max-states N",
                             "replay:FILE"};
    for (size_t i = 0; i < sizeof needles / sizeof needles[0]; i++)
        assert_has(h.out, needles[i], "gen-dataset --help");
    cli_run_free(&h);
    cli_run m = CLI("--help");
    assert_ok(&m);
    assert_has(m.out, "  gen-dataset ", "--help");
    cli_run_free(&m);
}

Test(cli_gen_dataset, bad_input)
{
    const char *out = tmp_path("bad.shapes");
    EXPECT_USAGE_ERROR("no --dims given", "gen-dataset", "--out", out);
    EXPECT_USAGE_ERROR("no --out given", "gen-dataset", "--dims", "64");
    EXPECT_USAGE_ERROR("--out is empty", "gen-dataset", "--dims", "64", "--out", "");
    EXPECT_USAGE_ERROR("--kind 'matrix'", "gen-dataset", "--kind", "matrix", "--dims", "64", "--out", out);
    EXPECT_USAGE_ERROR("--dims '0': the value is 0", "gen-dataset", "--dims", "0", "--out", out);
    EXPECT_USAGE_ERROR("--dims '-64'", "gen-dataset", "--dims", "-64", "--out", out);
    EXPECT_USAGE_ERROR("--dims '256:64:16': empty range", "gen-dataset", "--dims", "256:64:16", "--out", out);
    EXPECT_USAGE_ERROR("--dims '64:256': malformed range", "gen-dataset", "--dims", "64:256", "--out", out);
    EXPECT_USAGE_ERROR("--dims 'abc'", "gen-dataset", "--dims", "abc", "--out", out);
    EXPECT_USAGE_ERROR("--dims '': empty range", "gen-dataset", "--dims", "", "--out", out);
    EXPECT_USAGE_ERROR("101 x 101 x 101 shapes (M, N, K), more than 1000000", "gen-dataset", "--dims", "1:101:1",
                       "--out", out);
    EXPECT_USAGE_ERROR("--sizes is for --kind conv only", "gen-dataset", "--dims", "64", "--sizes", "7", "--out",
                       out);
    EXPECT_USAGE_ERROR("--kernels is for --kind conv only", "gen-dataset", "--kind", "mm", "--dims", "64",
                       "--kernels", "3", "--out", out);
    EXPECT_USAGE_ERROR("--kernels '2': kernel 2 is even", "gen-dataset", "--kind", "conv", "--dims", "64",
                       "--kernels", "2", "--out", out);
    EXPECT_USAGE_ERROR("--sizes '7,7'", "gen-dataset", "--kind", "conv", "--dims", "64", "--sizes", "7,7", "--out",
                       out);
    EXPECT_USAGE_ERROR("--test-fraction 1 is out of range", "gen-dataset", "--dims", "64", "--test-fraction", "1",
                       "--out", out);
    EXPECT_USAGE_ERROR("--test-fraction", "gen-dataset", "--dims", "64", "--test-fraction", "-0.5", "--out", out);
    EXPECT_USAGE_ERROR("--test-fraction", "gen-dataset", "--dims", "64", "--test-fraction", "half", "--out", out);
    EXPECT_USAGE_ERROR("--max-shapes", "gen-dataset", "--dims", "64", "--max-shapes", "0", "--out", out);
    EXPECT_USAGE_ERROR("--seed", "gen-dataset", "--dims", "64", "--seed", "-1", "--out", out);
    EXPECT_USAGE_ERROR("--shapes", "gen-dataset", "--dims", "64", "--shapes", "3", "--out", out);
    cr_assert_neq(access(out, F_OK), 0, "a refused command wrote %s", out);
    const char *nowhere = tmp_path("no/such/dir/x.shapes");
    EXPECT_USAGE_ERROR("--out", "gen-dataset", "--dims", "64", "--out", nowhere);
    EXPECT_USAGE_ERROR(nowhere, "gen-dataset", "--dims", "64", "--out", nowhere);

    /* --kind states */
    const char *states = tmp_path("bad.states");
    const char *op = "matmul:M=4,N=4,K=4";
    EXPECT_USAGE_ERROR("--op is an option of state datasets (--kind states)", "gen-dataset", "--dims", "64", "--op",
                       op, "--out", out);
    EXPECT_USAGE_ERROR("--dims is an option of shape datasets", "gen-dataset", "--kind", "states", "--op", op,
                       "--dims", "64", "--out", states);
    EXPECT_USAGE_ERROR("no op given", "gen-dataset", "--kind", "states", "--out", states);
    EXPECT_USAGE_ERROR("no --out given: name the state dataset file", "gen-dataset", "--kind", "states", "--op", op);
    EXPECT_USAGE_ERROR("--depth", "gen-dataset", "--kind", "states", "--op", op, "--depth", "0", "--out", states);
    EXPECT_USAGE_ERROR("--depth", "gen-dataset", "--kind", "states", "--op", op, "--depth", "65", "--out", states);
    EXPECT_USAGE_ERROR("--max-states", "gen-dataset", "--kind", "states", "--op", op, "--max-states", "100001",
                       "--out", states);
    EXPECT_USAGE_ERROR("--batch", "gen-dataset", "--kind", "states", "--op", op, "--batch", "0", "--out", states);
    EXPECT_USAGE_ERROR("unknown op 'nosuch'", "gen-dataset", "--kind", "states", "--op", "nosuch:M=1", "--out",
                       states);
    EXPECT_USAGE_ERROR("--schedule", "gen-dataset", "--kind", "states", "--op", op, "--schedule",
                       "/nonexistent/x.sched", "--out", states);
    const char *fused = tmp_path("fused.sched");
    tmp_file_write_text(fused, "fuse i j\n");
    EXPECT_USAGE_ERROR("the start schedule: loop 'i_j' comes from fuse", "gen-dataset", "--kind", "states", "--op",
                       op, "--schedule", fused, "--peak", "100", "--out", states);
    cr_assert_neq(access(states, F_OK), 0, "a refused command wrote %s", states);
    EXPECT_USAGE_ERROR("cannot write the state dataset", "gen-dataset", "--kind", "states", "--op", op, "--depth",
                       "1", "--peak", "100", "--cflags", "-O1", "--repeat", "1", "--min-repeat-ms", "1", "--out",
                       tmp_path("no/such/dir/x.states"));
}
