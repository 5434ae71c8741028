/* End-to-end tests of `rltune env` (src/cli/cmd_env.c): scripted sessions
 * through a pipe. The tree with the cursor, the GFLOP/s and the legal
 * actions after each action; unknown and illegal actions answered with a
 * message while the session goes on; stop, the end of input and the step
 * limit each ending it with exit 0 and the final schedule, which
 * `rltune show --schedule` replays to the same tree; a start from a
 * schedule; the help; bad input (exit 2; the replay of a state dataset is
 * tested with the dataset's making, in test_cli_gen_dataset.c). Shapes are tiny, kernels built at
 * -O1 and timed briefly, and --peak is given except where the measured peak
 * is the point; the compile cache is $RLTUNE_CACHE_DIR, set by CTest. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/text.h"
#include "../common/tmp.h"
#include "cli_runner.h"

static char tmp_dir[] = "/tmp/rlt_cli_env_XXXXXX";

static void setup(void) { tmp_dir_use(tmp_dir); }

static void teardown(void) { tmp_remove_tree(tmp_dir); }

TestSuite(cli_env, .init = setup, .fini = teardown, .timeout = 180);

#define FAST "--peak", "100", "--cflags", "-O1 -march=native", "--repeat", "1", "--min-repeat-ms", "1"

Test(cli_env, scripted_session)
{
    const char *save = tmp_path("final.sched");
    cli_run r = CLI_STDIN("down\nsplit_8\n\n# a comment\nfoo\nsplit_256\ndown\nswap_down\nvectorize\nmerge\nstop\n",
                          "env", "--op", "matmul:M=16,N=16,K=8", FAST, "--save", save);
    assert_ok(&r);
    /* the start: the default nest, cursor on the outermost loop */
    assert_has(r.out, "op:       matmul:M=16,N=16,K=8\n", "stdout");
    assert_has(r.out, "peak:     100.00 GFLOP/s (one core, FP32 FMA, given by --peak)\n", "stdout");
    assert_has(r.out,
               "loop tree (> marks the cursor):\n"
               "> for i in 0..16\n"
               "    for j in 0..16\n"
               "      for k in 0..8  reduce\n"
               "        C[i,j] += A[i,k] * B[k,j]\n"
               "accumulate: in a local tile inside j (cache_write j)\n"
               "GFLOP/s:  ",
               "stdout");
    assert_has(r.out, "legal:    down swap_down split_2 split_4 split_8 unroll parallel stop\n", "stdout");
    /* each action echoed, then the reward and the new state */
    assert_has(r.out,
               "\n> split_8\nreward:   ", "stdout");
    assert_has(r.out,
               "  for i in 0..16\n"
               ">   for j.o in 0..2\n"
               "      for j.i in 0..8\n"
               "        for k in 0..8  reduce\n",
               "stdout");
    assert_has(r.out,
               "  for i in 0..16\n"
               "    for j.o in 0..2\n"
               "      for k in 0..8  reduce\n"
               ">       vectorize j.i in 0..8\n",
               "stdout");
    cr_assert_eq(text_count(r.out, ", OK\n"), 6, "every state measured OK:\n%s", r.out); /* start + 5 actions */
    /* unknown and illegal actions: a message on stderr, and the session goes on */
    assert_has(r.err, "rltune: unknown action 'foo'; actions: up, down, swap_up,", "stderr");
    assert_has(r.err, "rltune: split_256 is not legal here: split_256: loop 'j.o' has extent 2", "stderr");
    assert_has(r.err, "rltune: merge is not legal here: merge: 'j.i' must be the loop directly inside 'j.o'", "stderr");
    cr_assert_null(strstr(r.err, "error:"), "stderr:\n%s", r.err);
    /* the final schedule, also saved */
    const char *final = "# rltune schedule v1\n"
                        "split j 8\n"
                        "reorder i j.o k j.i\n"
                        "vectorize j.i\n"
                        "cache_write j.o\n"; /* the env's accumulator: a vector of 8 sums */
    assert_has(r.out, "\nfinal schedule (", "stdout");
    assert_has(r.out, ", OK, 6 steps):\n", "stdout");
    assert_has(r.out, final, "stdout");
    size_t len = 0;
    char *saved = tmp_file_read(save, &len);
    cr_assert_str_eq(saved, final);
    free(saved);
    /* which replays to the same tree */
    cli_run s = CLI("show", "--op", "matmul:M=16,N=16,K=8", "--schedule", save, "--tree-only");
    assert_ok(&s);
    cr_assert_str_eq(s.out, "for i in 0..16\n"
                            "  for j.o in 0..2\n"
                            "    acc C[j.i=8]   (cache_write)\n" /* the kernel the env measured */
                            "    for k in 0..8  reduce\n"
                            "      vectorize j.i in 0..8\n"
                            "        C[i,j] += A[i,k] * B[k,j]\n");
    cli_run_free(&s);
    cli_run_free(&r);
}

Test(cli_env, end_of_input_finishes_like_stop)
{
    cli_run r = CLI_STDIN("split_2\nparallel", "env", "--expr", "Y[i,j] = X[j,i] * 2", "--shape", "i=6,j=8", FAST);
    assert_ok(&r);
    assert_has(r.out, "op:       expr:Y[i,j] = X[j,i] * 2|i=6,j=8\n", "stdout");
    assert_has(r.out, "> parallel i.o in 0..3 threads=run-time\n", "stdout");
    assert_has(r.out, "\n(end of input)\n", "stdout");
    assert_has(r.out,
               "final schedule (", "stdout");
    assert_has(r.out,
               "# rltune schedule v1\n"
               "split i 2\n"
               "parallel i.o\n",
               "stdout");
    cli_run_free(&r);
    /* nothing at all: the default schedule */
    cli_run e = CLI_STDIN("", "env", "--op", "matmul:M=4,N=4,K=4", FAST);
    assert_ok(&e);
    assert_has(e.out, ", 0 steps):\n# rltune schedule v1\n", "stdout");
    cli_run_free(&e);
}

Test(cli_env, step_limit_and_start_schedule)
{
    const char *start = tmp_path("start.sched");
    tmp_file_write_text(start, "split i 4\nunroll i.i\n");
    cli_run r = CLI_STDIN("down\nmerge\nup\nup\n", "env", "--op", "matmul:M=8,N=8,K=8", "--schedule", start,
                          "--max-steps", "2", FAST);
    assert_ok(&r);
    assert_has(r.out,
               "> for i.o in 0..2\n"
               "    unroll i.i in 0..4\n",
               "stdout");
    assert_has(r.out, "\n(step limit reached: --max-steps 2)\n", "stdout");
    assert_has(r.out, "> unroll i in 0..8\n", "stdout"); /* merge keeps the inner half's unroll */
    assert_has(r.out, "# rltune schedule v1\nunroll i\n", "stdout");
    cr_assert_eq(text_count(r.out, "\n> up\n"), 0, "actions after the limit were read:\n%s", r.out);
    cli_run_free(&r);
}

/* A weight the register tile sweeps is packed (docs/env.md, "Packing"): a
 * `pack:` line, the final schedule's last line, and a start from that
 * schedule is the same state. */
Test(cli_env, the_packs_are_shown_and_start_again)
{
    const char *start = tmp_path("tile.sched");
    tmp_file_write_text(start, "split j 8\nsplit i 8\nreorder i.o j.o k i.i j.i\nunroll i.i\nvectorize j.i\n");
    const char *final = "# rltune schedule v1\n"
                        "split j 8\n"
                        "split i 8\n"
                        "reorder i.o j.o k i.i j.i\n"
                        "unroll i.i\n"
                        "vectorize j.i\n"
                        "cache_write j.o\n"
                        "pack W 0 8\n";
    const char *save = tmp_path("final.sched");
    cli_run r = CLI_STDIN("stop\n", "env", "--op", "dense:M=16,N=16,K=8", "--schedule", start, FAST, "--save", save);
    assert_ok(&r);
    assert_has(r.out, "accumulate: in a local tile inside j.o (cache_write j.o)\n"
                      "pack:     pack W 0 8 (the tile reads it in contiguous panels)\n"
                      "GFLOP/s:  ",
               "stdout");
    assert_has(r.out, ", OK\n", "stdout");
    assert_has(r.out, final, "stdout");
    cli_run again = CLI_STDIN("stop\n", "env", "--op", "dense:M=16,N=16,K=8", "--schedule", save, FAST);
    assert_ok(&again);
    assert_has(again.out, final, "stdout");
    cli_run_free(&again);
    cli_run_free(&r);
}

Test(cli_env, measured_peak_and_help)
{
    cli_run r = CLI_STDIN("stop\n", "env", "--op", "matmul:M=4,N=4,K=4", "--cflags", "-O1 -march=native");
    assert_ok(&r);
    assert_has(r.out, " GFLOP/s (one core, FP32 FMA, measured)\n", "stdout");
    cli_run_free(&r);
    cli_run h = CLI("env", "--help");
    assert_ok(&h);
    const char *needles[] = {"usage: rltune env", "--op SPEC", "--schedule FILE", "--peak GFLOPS", "--max-steps N",
                             "--save FILE", "split_256", "merge", "docs/env.md"};
    for (size_t i = 0; i < sizeof needles / sizeof needles[0]; i++) assert_has(h.out, needles[i], "env --help");
    cli_run_free(&h);
    cli_run m = CLI("--help");
    assert_ok(&m);
    assert_has(m.out, "  env ", "--help");
    cli_run_free(&m);
}

/* "replay:PATH" (a static buffer). */
static const char *bad_replay(const char *path)
{
    static char arg[1024];
    snprintf(arg, sizeof arg, "replay:%s", path);
    return arg;
}

Test(cli_env, bad_input)
{
    EXPECT_USAGE_ERROR("no op given", "env");
    EXPECT_USAGE_ERROR("unknown op 'matmull'", "env", "--op", "matmull:M=4");
    EXPECT_USAGE_ERROR("--peak", "env", "--op", "matmul:M=4,N=4,K=4", "--peak", "0");
    EXPECT_USAGE_ERROR("--max-steps", "env", "--op", "matmul:M=4,N=4,K=4", "--max-steps", "0");
    EXPECT_USAGE_ERROR("--schedule - would read stdin", "env", "--op", "matmul:M=4,N=4,K=4", "--schedule", "-");
    EXPECT_USAGE_ERROR("--schedule", "env", "--op", "matmul:M=4,N=4,K=4", "--schedule", "/nonexistent/x.sched");
    const char *fused = tmp_path("fused.sched");
    tmp_file_write_text(fused, "fuse i j\n");
    EXPECT_USAGE_ERROR("comes from fuse, which the env cannot express", "env", "--op", "matmul:M=4,N=4,K=4",
                       "--schedule", fused, "--peak", "100");
    EXPECT_USAGE_ERROR("--measure: unknown mode 'replay:'", "env", "--op", "matmul:M=4,N=4,K=4", "--measure",
                       "replay:");
    EXPECT_USAGE_ERROR("--measure: unknown mode 'dataset'", "env", "--op", "matmul:M=4,N=4,K=4", "--measure",
                       "dataset");
    EXPECT_USAGE_ERROR("--cflags cannot be combined with --measure replay", "env", "--op", "matmul:M=4,N=4,K=4",
                       "--measure", "replay:x.states", "--cflags", "-O1");
    EXPECT_USAGE_ERROR("cannot read the replay dataset", "env", "--op", "matmul:M=4,N=4,K=4", "--measure",
                       "replay:/nonexistent/x.states");
    const char *bad = tmp_path("bad.states");
    tmp_file_write_text(bad, "# rltune env states v1\nop matmul:M=4,N=4,K=8\nthreads 1\npeak_gflops 1\nstates 1\n"
                             "OK\t1\tcache_write j\n");
    EXPECT_USAGE_ERROR("is of matmul:M=4,N=4,K=8, not of the env's op matmul:M=4,N=4,K=4", "env", "--op",
                       "matmul:M=4,N=4,K=4", "--measure", bad_replay(bad));
}
