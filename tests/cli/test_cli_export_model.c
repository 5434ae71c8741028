/* End-to-end tests of `rltune export --model` (cmd_export.c): a small CNN
 * written with tests/common/onnx_build.h into the test's directory
 * (conv-relu, a residual block, max pool, a depthwise conv with relu6,
 * global pool, flatten, a Gemm head; seeded random weights) is exported
 * and built and checked by its own Makefile (`make check`, without
 * rltune): from seed schedules, with a task tuned into --db, with its
 * weights compiled in; bad options, a model with a node only the
 * reference evaluator runs, and a bad name are bad input (exit 2, one
 * error line). */
#include "../common/onnx_build.h"
#include "../common/tmp.h"
#include "cli_runner.h"

static char tmp_dir[] = "/tmp/rlt_cli_export_model_XXXXXX";
static char model_path[300];

static uint64_t rng_state = 17;

#define STEM "conv2d:N=1,C=3,H=16,W=16,K=8,R=3,S=3,stride=1,pad=1,dilation=1,epilogue=bias+relu"

static void setup(void)
{
    tmp_dir_use(tmp_dir);
    snprintf(model_path, sizeof model_path, "%s/small.onnx", tmp_dir);
    cr_assert(ob_write_small_cnn(model_path, &rng_state), "cannot write %s", model_path);
}

static void teardown(void) { tmp_remove_tree(tmp_dir); }

TestSuite(cli_export_model, .init = setup, .fini = teardown, .timeout = 300);

/* Runs `command` in a shell: its exit status; its output (stdout and
 * stderr) in out. */
static int shell(const char *command, char *out, size_t cap)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s 2>&1", command);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* `make check` in dir: exit 0, and the example says OK. */
static void assert_check_passes(const char *dir, const char *name)
{
    char cmd[600], out[16384], want[200];
    snprintf(cmd, sizeof cmd, "make -s -j2 -C %s check", dir);
    cr_assert_eq(shell(cmd, out, sizeof out), 0, "make check failed:\n%s", out);
    snprintf(want, sizeof want, "%s: 1 output, 10 values: max error ", name);
    assert_has(out, want, "make check");
    assert_has(out, "(tolerance 0.0001 relative): OK\n", "make check");
}

Test(cli_export_model, seeds_build_and_check_without_rltune)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", tmp_path("net"));
    cli_run r = CLI("export", "--model", model_path, "--out", dir);
    assert_ok(&r);
    char want[600];
    snprintf(want, sizeof want, "model:   %s (opset 13): 13 nodes\n", model_path);
    assert_has(r.out, want, "stdout");
    assert_has(r.out,
               "library: rltune_small: 7 steps: 5 fused kernels of 5 tasks (0 tuned, 5 from seeds), 2 fast ops; "
               "1 view runs nothing\n",
               "stdout");
    assert_has(r.out, "MiB of weights (a file)", "stdout");
    snprintf(want, sizeof want, "check:   make -C %s check\n", dir);
    assert_has(r.out, want, "stdout");
    cli_run_free(&r);
    const char *files[] = {"rltune_small.h", "rltune_small.c", "rltune_small_kernels_1.c", "rltune_small_kernels_2.c",
                           "ops_run.h", "ops_run.c", "rltune_small.weights", "example.c", "Makefile", "input_0.npy",
                           "expected_0.npy"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        cr_expect(tmp_exists(tmp_path_in(dir, files[i])), "%s was not written", files[i]);
    assert_check_passes(dir, "rltune_small");
    /* the example's other arguments: timed runs, threads */
    char cmd[600], out[4096];
    snprintf(cmd, sizeof cmd, "cd %s && ./example 3 2", dir);
    cr_assert_eq(shell(cmd, out, sizeof out), 0, "%s", out);
    assert_has(out, "rltune_small: median ", "example");
    assert_has(out, " over 3 runs, 2 threads\n", "example");
}

/* A task tuned into --db gives its kernel; --threads, --name, --seed and
 * --embed-weights. */
Test(cli_export_model, tuned_task_embedded_weights)
{
    const char *db = tmp_path("r.db");
    cli_run t = CLI("tune", "--op", STEM, "--trials", "4", "--tuner", "random", "--db", db, "--threads", "2");
    assert_ok(&t);
    cli_run_free(&t);
    char dir[512];
    snprintf(dir, sizeof dir, "%s", tmp_path("tuned"));
    cli_run r = CLI("export", "--model", model_path, "--out", dir, "--db", db, "--threads", "2", "--name", "my_net",
                    "--seed", "5", "--embed-weights");
    assert_ok(&r);
    char want[600];
    snprintf(want, sizeof want, "(1 tuned from %s, 4 from seeds)", db);
    assert_has(r.out, want, "stdout");
    assert_has(r.out, "MiB of weights (compiled in)", "stdout");
    cli_run_free(&r);
    cr_expect(tmp_exists(tmp_path_in(dir, "my_net_weights.c")));
    cr_expect_not(tmp_exists(tmp_path_in(dir, "my_net.weights")));
    char *header = tmp_file_read(tmp_path_in(dir, "my_net.h"), NULL);
    assert_has(header, "#define MY_NET_THREADS 2\n", "my_net.h");
    assert_has(header, "#define MY_NET_HAS_EMBEDDED_WEIGHTS 1\n", "my_net.h");
    assert_has(header, "#define MY_NET_INPUT_0_DIMS {1, 3, 16, 16}\n", "my_net.h");
    assert_has(header, "#define MY_NET_OUTPUT_0_NAME \"y\"\n", "my_net.h");
    free(header);
    char *kernels = tmp_file_read(tmp_path_in(dir, "my_net_kernels_1.c"), NULL);
    assert_has(kernels, STEM ": its best record (record ", "my_net_kernels_1.c");
    free(kernels);
    assert_check_passes(dir, "my_net");
}

Test(cli_export_model, bad_input)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", tmp_path("bad"));
    EXPECT_USAGE_ERROR("--out DIR is required", "export", "--model", model_path);
    EXPECT_USAGE_ERROR("--model exports a whole network: it cannot be combined with --op", "export", "--model",
                       model_path, "--out", dir, "--op", "matmul:M=4,N=4,K=4");
    EXPECT_USAGE_ERROR("cannot be combined with --schedule", "export", "--model", model_path, "--out", dir,
                       "--schedule", "s.sched");
    EXPECT_USAGE_ERROR("--embed-weights goes with --model", "export", "--op", "matmul:M=4,N=4,K=4", "--out", dir,
                       "--embed-weights");
    EXPECT_USAGE_ERROR("--seed goes with --model", "export", "--op", "matmul:M=4,N=4,K=4", "--out", dir, "--seed",
                       "1");
    EXPECT_USAGE_ERROR("cannot open", "export", "--model", "/nonexistent/m.onnx", "--out", dir);
    EXPECT_USAGE_ERROR("--db: cannot read '/nonexistent/r.db'", "export", "--model", model_path, "--out", dir,
                       "--db", "/nonexistent/r.db");
    EXPECT_USAGE_ERROR("--threads", "export", "--model", model_path, "--out", dir, "--threads", "0");
    EXPECT_USAGE_ERROR("bad library name 'Bad-Name'", "export", "--model", model_path, "--out", dir, "--name",
                       "Bad-Name");
    cr_expect_not(tmp_exists(dir), "nothing written for bad input");

    /* a node only rltune's reference evaluator runs: named, nothing written */
    const char *asym_path = tmp_path("asym.onnx");
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, OB_DIMS(1, 3, 8, 8));
    Onnx__NodeProto *asym = ob_conv_rand(&b, "asym", "x", "y", 3, 4, 3, 1, 0, 1, true, &rng_state);
    asym->attribute[0]->ints[2] = 2; /* pads [0,0,2,0]: no task */
    ob_output(&b, "y");
    cr_assert(ob_write(&b, asym_path));
    ob_free(&b);
    EXPECT_USAGE_ERROR("node 0 'asym' (Conv, opset 13): runs on rltune's reference evaluator", "export", "--model",
                       asym_path, "--out", dir);
    cr_expect_not(tmp_exists(dir), "nothing written for a network that cannot be exported");
}

Test(cli_export_model, help)
{
    cli_run r = CLI("export", "--help");
    assert_ok(&r);
    assert_has(r.out, "rltune export --model FILE --out DIR", "stdout");
    assert_has(r.out, "--embed-weights", "stdout");
    cli_run_free(&r);
}
