/* End-to-end tests of the rltune command (src/cli/): the real binary
 * (RLTUNE_BINARY) is run with fork/exec, its stdout, stderr and exit code
 * captured under a time limit. Covered: --version and the help texts; `ops`
 * as text and JSON; `show` for a built-in op and a user expression, with and
 * without a schedule (file, stdin, the examples); `measure --json` (exactly
 * one JSON object, status OK, correct, timed) with the default schedule, a
 * tiled one and a parallel one on two threads; a failing kernel (exit 1,
 * result still printed); a missing compiler (exit 3); and every kind of bad
 * input (exit 2, nothing on stdout, one "rltune: error:" line naming the
 * problem). Shapes are tiny and runs short (--repeat 2 --min-repeat-ms 1);
 * the compile cache is $RLTUNE_CACHE_DIR, set by CTest. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/json.h"
#include "../common/tmp.h"
#include "cli_runner.h"
#include "ir/ir.h"

/* ---- temporary files ---------------------------------------------------- */

static char tmp_dir[] = "/tmp/rlt_cli_XXXXXX";

static void setup(void) { tmp_dir_use(tmp_dir); }

static void teardown(void) { tmp_remove_tree(tmp_dir); }

TestSuite(cli, .init = setup, .fini = teardown, .timeout = 120);

/* Writes `text` to a file in the test's directory; returns its path
 * (static storage, one per name). */
static const char *write_tmp(const char *name, const char *text)
{
    const char *path = tmp_path(name);
    tmp_file_write_text(path, text);
    return path;
}

static const char tiled_sched[] = "# rltune schedule v1\n"
                                  "split i 4\n"
                                  "split j 8\n"
                                  "reorder i.o j.o k i.i j.i\n"
                                  "cache_write j.o\n"
                                  "unroll i.i\n"
                                  "vectorize j.i\n";

static const char parallel_sched[] = "# rltune schedule v1\n"
                                     "split i 8\n"
                                     "split j 8\n"
                                     "reorder i.o j.o k i.i j.i\n"
                                     "vectorize j.i\n"
                                     "parallel i.o\n";

/* ---- version and help --------------------------------------------------- */

Test(cli, version)
{
    cli_run r = CLI("--version");
    assert_ok(&r);
    cr_assert_str_eq(r.out, "rltune " RLTUNE_VERSION "\n");
    cli_run_free(&r);
}

Test(cli, main_help_lists_commands_and_exit_codes)
{
    cli_run r = CLI("--help");
    assert_ok(&r);
    const char *needles[] = {"ops", "show", "measure", "tune", "dataset", "best", "history", "records", "export", "help", "exit status", "  0 ", "  1 ", "  2 ", "  3 ",
                             "RLTUNE_CACHE_DIR"};
    for (size_t i = 0; i < sizeof needles / sizeof needles[0]; i++) assert_has(r.out, needles[i], "--help");
    cli_run_free(&r);
}

Test(cli, command_help_lists_every_option)
{
    const char *measure_opts[] = {"--op SPEC", "--expr EXPR", "--shape SHAPE", "--schedule FILE", "--threads N",
                                  "--seed S", "--cc CMD", "--cflags FLAGS", "--number N", "--repeat N",
                                  "--min-repeat-ms X", "--timeout S", "--no-pin", "--json", "--help"};
    cli_run a = CLI("help", "measure");
    cli_run b = CLI("measure", "--help");
    assert_ok(&a);
    assert_ok(&b);
    cr_assert_str_eq(a.out, b.out);
    for (size_t i = 0; i < sizeof measure_opts / sizeof measure_opts[0]; i++)
        assert_has(a.out, measure_opts[i], "help measure");
    cli_run s = CLI("show", "--help");
    assert_ok(&s);
    assert_has(s.out, "--tree-only", "show --help");
    assert_has(s.out, "--c-only", "show --help");
    cli_run o = CLI("help", "ops");
    assert_ok(&o);
    assert_has(o.out, "--json", "help ops");
    cli_run_free(&a);
    cli_run_free(&b);
    cli_run_free(&s);
    cli_run_free(&o);
}

/* ---- ops ---------------------------------------------------------------- */

Test(cli, ops_text_lists_every_op_and_key)
{
    cli_run r = CLI("ops");
    assert_ok(&r);
    int n_ops = 0;
    const rlt_op_info *ops = rlt_op_library(&n_ops);
    for (int i = 0; i < n_ops; i++) {
        assert_has(r.out, ops[i].name, "ops");
        assert_has(r.out, ops[i].example, "ops");
        for (int p = 0; p < ops[i].n_params; p++) assert_has(r.out, ops[i].params[p].help, "ops");
    }
    assert_has(r.out, "--expr", "ops");
    assert_has(r.out, "--shape", "ops");
    assert_has(r.out, "required", "ops");
    assert_has(r.out, "default 1", "ops");
    cli_run_free(&r);
}

Test(cli, ops_json_is_the_library)
{
    cli_run r = CLI("ops", "--json");
    assert_ok(&r);
    cJSON *arr = cJSON_Parse(r.out);
    cr_assert_not_null(arr, "not JSON:\n%s", r.out);
    cr_assert(cJSON_IsArray(arr));
    int n_ops = 0;
    const rlt_op_info *ops = rlt_op_library(&n_ops);
    cr_assert_eq(cJSON_GetArraySize(arr), n_ops);
    for (int i = 0; i < n_ops; i++) {
        cJSON *o = cJSON_GetArrayItem(arr, i);
        cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(o, "name")), ops[i].name);
        cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(o, "example")), ops[i].example);
        cr_assert_not_null(cJSON_GetStringValue(cJSON_GetObjectItem(o, "summary")));
        cJSON *params = cJSON_GetObjectItem(o, "params");
        cr_assert_eq(cJSON_GetArraySize(params), ops[i].n_params);
        for (int p = 0; p < ops[i].n_params; p++) {
            const rlt_op_param *prm = &ops[i].params[p];
            cJSON *po = cJSON_GetArrayItem(params, p);
            cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(po, "key")), prm->key);
            cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(po, "help")), prm->help);
            cr_assert_eq(cJSON_IsTrue(cJSON_GetObjectItem(po, "required")), prm->is_required);
            cJSON *def = cJSON_GetObjectItem(po, "default");
            if (prm->is_required)
                cr_assert(cJSON_IsNull(def));
            else
                cr_assert_eq(cJSON_GetNumberValue(def), (double)prm->default_value);
            cr_assert_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(po, "min")), (double)prm->min_value);
            cr_assert_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(po, "max")), (double)prm->max_value);
        }
    }
    cJSON_Delete(arr);
    cli_run_free(&r);
}

/* ---- show --------------------------------------------------------------- */

Test(cli, show_builtin_default_schedule)
{
    cli_run r = CLI("show", "--op", "matmul:M=16,N=16,K=16");
    assert_ok(&r);
    assert_has(r.out, "op: matmul:M=16,N=16,K=16", "show");
    assert_has(r.out, "C[i,j] += A[i,k] * B[k,j]", "show");
    assert_has(r.out, "(default schedule)", "show");
    assert_has(r.out, "for i in 0..16", "show");
    assert_has(r.out, "for k in 0..16  reduce", "show");
    assert_has(r.out, "void rlt_k_", "show");
    cli_run_free(&r);
}

Test(cli, show_builtin_with_schedule)
{
    const char *path = write_tmp("tiled.sched", tiled_sched);
    cli_run r = CLI("show", "--op=matmul:M=16,N=16,K=16", "--schedule", path);
    assert_ok(&r);
    assert_has(r.out, "split i 4", "show");
    assert_has(r.out, "for i.o in 0..4", "show");
    assert_has(r.out, "unroll i.i in 0..4", "show");
    assert_has(r.out, "vectorize j.i in 0..8", "show");
    assert_has(r.out, "void rlt_k_", "show");
    cr_assert_null(strstr(r.out, "(default schedule)"));
    cli_run_free(&r);
}

Test(cli, show_expression_with_and_without_schedule)
{
    const char *expr = "Y[i,j] += X[i,k] * W[j,k]; Y[i,j] = relu(Y[i,j] + b[j])";
    cli_run r = CLI("show", "--expr", expr, "--shape", "i=8,j=16,k=4");
    assert_ok(&r);
    assert_has(r.out, "(default schedule)", "show");
    assert_has(r.out, "for j in 0..16", "show");
    assert_has(r.out, "relu", "show");
    assert_has(r.out, "void rlt_k_", "show");
    const char *path = write_tmp("expr.sched", "split j 8\nreorder j.o k j.i\nvectorize j.i\n");
    cli_run s = CLI("show", "--expr", expr, "--shape", "i=8,j=16,k=4", "--schedule", path);
    assert_ok(&s);
    assert_has(s.out, "for j.o in 0..2", "show");
    assert_has(s.out, "vectorize j.i in 0..8", "show");
    assert_has(s.out, "void rlt_k_", "show");
    cli_run_free(&r);
    cli_run_free(&s);
}

Test(cli, show_tree_only_and_c_only)
{
    cli_run t = CLI("show", "--op", "matmul:M=16,N=16,K=16", "--tree-only");
    assert_ok(&t);
    cr_assert_eq(strncmp(t.out, "for i in 0..16", 14), 0, "%s", t.out);
    cr_assert_null(strstr(t.out, "rlt_k_"));
    cli_run c = CLI("show", "--op", "matmul:M=16,N=16,K=16", "--c-only");
    assert_ok(&c);
    assert_has(c.out, "void rlt_k_", "--c-only");
    cr_assert_null(strstr(c.out, "loop tree:"));
    cr_assert_null(strstr(c.out, "op: "));
    cli_run_free(&t);
    cli_run_free(&c);
}

Test(cli, show_schedule_from_stdin)
{
    cli_run r = CLI_STDIN("split j 8\nreorder j.o k j.i\nvectorize j.i\n", "show", "--op", "matmul:M=16,N=16,K=16",
                          "--schedule", "-", "--tree-only");
    assert_ok(&r);
    assert_has(r.out, "vectorize j.i in 0..8", "show");
    cli_run_free(&r);
}

Test(cli, show_example_schedules)
{
    const char *files[] = {"matmul_tiled.sched", "matmul_parallel.sched"};
    for (size_t i = 0; i < 2; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/examples/schedules/%s", RLTUNE_SOURCE_DIR, files[i]);
        cli_run r = CLI("show", "--op", "matmul:M=512,N=512,K=512", "--schedule", path);
        assert_ok(&r);
        assert_has(r.out, "vectorize j.i.i in 0..8", path);
        assert_has(r.out, "B_s[32][512][16]", path);
        if (i == 1) assert_has(r.out, "parallel", path);
        cli_run_free(&r);
    }
}

/* ---- measure ------------------------------------------------------------ */

/* Parses stdout as exactly one JSON object (nothing but white space after
 * it) and checks the fields every result has. */
static cJSON *parse_result(const cli_run *r)
{
    const char *end = NULL;
    cJSON *o = cJSON_ParseWithOpts(r->out, &end, false);
    cr_assert_not_null(o, "stdout is not JSON:\n%s\nstderr:\n%s", r->out, r->err);
    cr_assert(cJSON_IsObject(o));
    cr_assert_eq(end[strspn(end, " \t\r\n")], '\0', "more than one JSON value on stdout:\n%s", r->out);
    const char *strings[] = {"op", "status", "message", "compiler"};
    for (size_t i = 0; i < 4; i++)
        cr_assert(cJSON_IsString(cJSON_GetObjectItem(o, strings[i])), "field %s:\n%s", strings[i], r->out);
    const char *numbers[] = {"gflops", "threads", "seed", "number", "n_samples", "max_error", "flops", "build_s"};
    for (size_t i = 0; i < 8; i++)
        cr_assert(cJSON_IsNumber(cJSON_GetObjectItem(o, numbers[i])), "field %s:\n%s", numbers[i], r->out);
    cr_assert(cJSON_IsBool(cJSON_GetObjectItem(o, "correct")));
    cJSON *sched = cJSON_GetObjectItem(o, "schedule");
    cr_assert(cJSON_IsString(sched) || cJSON_IsNull(sched));
    cr_assert(cJSON_IsObject(cJSON_GetObjectItem(o, "time_ms")));
    cJSON *target = cJSON_GetObjectItem(o, "target");
    cr_assert(cJSON_IsString(cJSON_GetObjectItem(target, "cpu")));
    cr_assert_geq(cJSON_GetNumberValue(cJSON_GetObjectItem(target, "cores")), 1);
    cr_assert_geq(cJSON_GetNumberValue(cJSON_GetObjectItem(target, "vector_floats")), 4);
    return o;
}

static void assert_measured_ok(const cJSON *o, const char *spec)
{
    cr_assert_str_eq(json_string_at(o, "op"), spec);
    cr_assert_str_eq(json_string_at(o, "status"), "OK", "message: %s", json_string_at(o, "message"));
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(o, "correct")));
    cr_assert_str_empty(json_string_at(o, "message"));
    cr_assert_gt(json_number_at(o, "gflops"), 0.0);
    cJSON *t = cJSON_GetObjectItem(o, "time_ms");
    double t_min = json_number_at(t, "min"), t_median = json_number_at(t, "median");
    cr_assert_gt(t_min, 0.0);
    cr_assert_leq(t_min, t_median);
    cr_assert_eq(json_number_at(o, "n_samples"), 2);
    cr_assert_geq(json_number_at(o, "number"), 1);
    cr_assert_leq(json_number_at(o, "max_error"), 1.0);
}

Test(cli, measure_json_default_schedule)
{
    cli_run r = CLI("measure", "--op", "matmul:M=32,N=32,K=32", "--json", "--repeat", "2", "--min-repeat-ms", "1",
                    "--seed", "7");
    assert_ok(&r);
    cJSON *o = parse_result(&r);
    assert_measured_ok(o, "matmul:M=32,N=32,K=32");
    cr_assert(cJSON_IsNull(cJSON_GetObjectItem(o, "schedule")));
    cr_assert_eq(json_number_at(o, "flops"), 2.0 * 32 * 32 * 32);
    cr_assert_eq(json_number_at(o, "seed"), 7);
    cr_assert_eq(json_number_at(o, "threads"), 1);
    cJSON_Delete(o);
    cli_run_free(&r);
}

Test(cli, measure_json_tiled_schedule)
{
    const char *path = write_tmp("tiled.sched", tiled_sched);
    cli_run r = CLI("measure", "--op", "matmul:M=32,N=32,K=32", "--schedule", path, "--json", "--repeat", "2",
                    "--min-repeat-ms=1");
    assert_ok(&r);
    cJSON *o = parse_result(&r);
    assert_measured_ok(o, "matmul:M=32,N=32,K=32");
    const char *sched = json_string_at(o, "schedule");
    cr_assert_not_null(sched);
    assert_has(sched, "split i 4", "schedule");
    assert_has(sched, "vectorize j.i", "schedule");
    cJSON_Delete(o);
    cli_run_free(&r);
}

Test(cli, measure_parallel_on_two_threads)
{
    const char *path = write_tmp("parallel.sched", parallel_sched);
    cli_run r = CLI("measure", "--op", "matmul:M=32,N=32,K=32", "--schedule", path, "--threads", "2", "--json",
                    "--repeat", "2", "--min-repeat-ms", "1");
    assert_ok(&r);
    cJSON *o = parse_result(&r);
    assert_measured_ok(o, "matmul:M=32,N=32,K=32");
    cr_assert_eq(json_number_at(o, "threads"), 2);
    assert_has(json_string_at(o, "compiler"), "-fopenmp", "compiler");
    cJSON_Delete(o);
    cli_run_free(&r);
}

Test(cli, measure_expression_text_report)
{
    cli_run r = CLI("measure", "--expr", "C[i,j] += A[i,k] * B[k,j]", "--shape", "i=16,j=16,k=16", "--repeat", "2",
                    "--min-repeat-ms", "1");
    assert_ok(&r);
    const char *needles[] = {"op:", "schedule:  (default schedule)", "status:    OK", "correct:   yes", "time:",
                             "GFLOP/s:", "samples:   2 x", "threads:   1", "compiler:", "CPU:"};
    for (size_t i = 0; i < sizeof needles / sizeof needles[0]; i++) assert_has(r.out, needles[i], "report");
    cli_run_free(&r);
}

Test(cli, measure_failed_build_exits_1_with_result)
{
    cli_run r = CLI("measure", "--op", "matmul:M=8,N=8,K=8", "--cflags", "-O2 -fno-such-flag-rltune", "--json",
                    "--repeat", "2", "--min-repeat-ms", "1");
    cr_assert_eq(r.exit_code, 1, "exit %d, stderr:\n%s", r.exit_code, r.err);
    cJSON *o = parse_result(&r);
    cr_assert_str_eq(json_string_at(o, "status"), "BUILD_ERROR");
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(o, "correct")));
    cr_assert_eq(json_number_at(o, "gflops"), 0.0);
    cJSON *t = cJSON_GetObjectItem(o, "time_ms");
    cr_assert(cJSON_IsNull(cJSON_GetObjectItem(t, "min")));
    cr_assert(cJSON_IsNull(cJSON_GetObjectItem(t, "median")));
    assert_has(json_string_at(o, "message"), "no-such-flag-rltune", "message");
    cJSON_Delete(o);
    cli_run_free(&r);
}

Test(cli, measure_timeout_exits_1_with_result)
{
    /* 2*256^3 flops with the unscheduled nest take well over a millisecond. */
    cli_run r = CLI("measure", "--op", "matmul:M=256,N=256,K=256", "--timeout", "0.001");
    cr_assert_eq(r.exit_code, 1, "exit %d, stderr:\n%s", r.exit_code, r.err);
    assert_has(r.out, "status:    RUN_TIMEOUT", "report");
    assert_has(r.out, "message:", "report");
    cli_run_free(&r);
}

Test(cli, measure_missing_compiler_exits_3)
{
    cli_run r = CLI("measure", "--op", "matmul:M=8,N=8,K=8", "--cc", "/nonexistent/rltune-cc", "--json");
    cr_assert_eq(r.exit_code, 3, "exit %d, stderr:\n%s", r.exit_code, r.err);
    cr_assert_str_empty(r.out);
    cr_assert_eq(strncmp(r.err, "rltune: error: ", 15), 0, "%s", r.err);
    assert_has(r.err, "/nonexistent/rltune-cc", "stderr");
    cli_run_free(&r);
}

/* ---- bad input: exit 2, one message naming the problem ------------------ */

Test(cli, unknown_command)
{
    EXPECT_USAGE_ERROR("unknown command 'frobnicate'", "frobnicate");
    EXPECT_USAGE_ERROR("unknown command 'nosuch'", "help", "nosuch");
    EXPECT_USAGE_ERROR("takes no arguments", "--version", "extra");
}

Test(cli, no_command)
{
    cli_run r = run_cli_argv(NULL, (const char *const[]){NULL});
    assert_usage_error(&r, "no command given");
    cli_run_free(&r);
}

Test(cli, bad_op_specs)
{
    EXPECT_USAGE_ERROR("unknown op 'matmull'", "show", "--op", "matmull:M=8,N=8,K=8");
    EXPECT_USAGE_ERROR("needs key K", "show", "--op", "matmul:M=8,N=8");
    EXPECT_USAGE_ERROR("M must be at least 1, got 0", "show", "--op", "matmul:M=0,N=8,K=8");
    EXPECT_USAGE_ERROR("N must be at least 1, got -4", "measure", "--op", "matmul:M=8,N=-4,K=8");
    EXPECT_USAGE_ERROR("unknown key 'Q'", "show", "--op", "matmul:M=8,N=8,K=8,Q=2");
    EXPECT_USAGE_ERROR("no op given", "show");
    EXPECT_USAGE_ERROR("--expr needs --shape", "show", "--expr", "C[i] = A[i]");
    EXPECT_USAGE_ERROR("cannot be combined", "show", "--op", "matmul:M=8,N=8,K=8", "--shape", "i=2");
    EXPECT_USAGE_ERROR("'k' has no extent", "show", "--expr", "C[i,j] += A[i,k] * B[k,j]", "--shape", "i=4,j=4");
}

Test(cli, bad_options)
{
    EXPECT_USAGE_ERROR("unknown option '--thread'", "measure", "--op", "matmul:M=8,N=8,K=8", "--thread", "2");
    EXPECT_USAGE_ERROR("--threads", "measure", "--op", "matmul:M=8,N=8,K=8", "--thread", "2");
    EXPECT_USAGE_ERROR("unknown option '--frob'", "--frob");
    EXPECT_USAGE_ERROR("--op needs a value", "show", "--op");
    EXPECT_USAGE_ERROR("--schedule needs a value", "show", "--op", "matmul:M=8,N=8,K=8", "--schedule", "--c-only");
    EXPECT_USAGE_ERROR("--op is given twice", "show", "--op", "matmul:M=8,N=8,K=8", "--op=matmul:M=8,N=8,K=8");
    EXPECT_USAGE_ERROR("--json is a flag", "ops", "--json=yes");
    EXPECT_USAGE_ERROR("unexpected argument 'matmul:M=8,N=8,K=8'", "show", "matmul:M=8,N=8,K=8");
    EXPECT_USAGE_ERROR("cannot be combined", "show", "--op", "matmul:M=8,N=8,K=8", "--tree-only", "--c-only");
    EXPECT_USAGE_ERROR("--cc must name a compiler", "measure", "--op", "matmul:M=8,N=8,K=8", "--cc", "");
}

Test(cli, bad_numbers)
{
    const char *op = "matmul:M=8,N=8,K=8";
    EXPECT_USAGE_ERROR("bad value 0 for --threads", "measure", "--op", op, "--threads", "0");
    EXPECT_USAGE_ERROR("bad value 257 for --threads", "measure", "--op", op, "--threads", "257");
    EXPECT_USAGE_ERROR("bad value 'two' for --threads", "measure", "--op", op, "--threads", "two");
    EXPECT_USAGE_ERROR("bad value '1.5' for --threads", "measure", "--op", op, "--threads", "1.5");
    EXPECT_USAGE_ERROR("bad value 0 for --repeat", "measure", "--op", op, "--repeat", "0");
    EXPECT_USAGE_ERROR("bad value -1 for --number", "measure", "--op", op, "--number", "-1");
    EXPECT_USAGE_ERROR("bad value -1 for --seed", "measure", "--op", op, "--seed", "-1");
    EXPECT_USAGE_ERROR("bad value '' for --seed", "measure", "--op", op, "--seed=");
    EXPECT_USAGE_ERROR("bad value 0 for --timeout", "measure", "--op", op, "--timeout", "0");
    EXPECT_USAGE_ERROR("bad value -2 for --timeout", "measure", "--op", op, "--timeout", "-2");
    EXPECT_USAGE_ERROR("bad value 'inf' for --timeout", "measure", "--op", op, "--timeout", "inf");
    EXPECT_USAGE_ERROR("bad value 'fast' for --min-repeat-ms", "measure", "--op", op, "--min-repeat-ms", "fast");
}

Test(cli, illegal_schedule_steps)
{
    const char *op = "matmul:M=16,N=16,K=16";
    const char *vec_k = write_tmp("vec_k.sched", "# rltune schedule v1\nvectorize k\n");
    EXPECT_USAGE_ERROR("line 2", "show", "--op", op, "--schedule", vec_k);
    EXPECT_USAGE_ERROR("reduction", "measure", "--op", op, "--schedule", vec_k);
    const char *nosuch = write_tmp("nosuch.sched", "split nosuch 4\n");
    EXPECT_USAGE_ERROR("no loop named 'nosuch'", "show", "--op", op, "--schedule", nosuch);
    EXPECT_USAGE_ERROR("nosuch.sched", "show", "--op", op, "--schedule", nosuch);
    cli_run r = CLI_STDIN("split j 4\nvectorize k\n", "show", "--op", op, "--schedule", "-");
    assert_usage_error(&r, "<stdin>");
    cli_run_free(&r);
}

Test(cli, malformed_schedule_lines)
{
    const char *op = "matmul:M=16,N=16,K=16";
    const char *unknown = write_tmp("unknown_step.sched", "split i 4\nfrobnicate i\n");
    EXPECT_USAGE_ERROR("unknown step 'frobnicate'", "show", "--op", op, "--schedule", unknown);
    EXPECT_USAGE_ERROR("unknown_step.sched:2", "show", "--op", op, "--schedule", unknown);
    const char *few = write_tmp("few_args.sched", "split i\n");
    EXPECT_USAGE_ERROR("split", "show", "--op", op, "--schedule", few);
    const char *v2 = write_tmp("v2.sched", "# rltune schedule v2\nsplit i 4\n");
    EXPECT_USAGE_ERROR("v2.sched", "show", "--op", op, "--schedule", v2);
}

Test(cli, unreadable_schedule_files)
{
    const char *op = "matmul:M=16,N=16,K=16";
    char missing[512];
    snprintf(missing, sizeof missing, "%s/does-not-exist.sched", tmp_dir);
    EXPECT_USAGE_ERROR("does-not-exist.sched", "show", "--op", op, "--schedule", missing);
    EXPECT_USAGE_ERROR("No such file", "measure", "--op", op, "--schedule", missing);
    EXPECT_USAGE_ERROR("Is a directory", "show", "--op", op, "--schedule", tmp_dir);
}

/* ---- rltune tune -------------------------------------------------------- */

/* The one JSON object on stdout of a tune run. */
static cJSON *parse_tune_json(const cli_run *r)
{
    cJSON *o = json_parse_object(r->out);
    cr_assert_str_eq(json_string_at(o, "tuner"), "random");
    return o;
}

/* A tiny tuning run: exactly one JSON object (no progress line: stdout is a
 * pipe), every trial stored; the same run again reads everything back. */
Test(cli, tune_json_then_resume_measures_nothing_new)
{
    char db[512];
    snprintf(db, sizeof db, "%s/tune.db", tmp_dir);
    const char *const args[] = {"tune", "--final", "0", "--op", "matmul:M=16,N=24,K=8", "--tuner", "random", "--trials", "6",
                                "--batch", "3", "--seed", "5", "--db", db, "--cflags", "-O1 -march=native",
                                "--repeat", "1", "--min-repeat-ms", "0.5", "--json", NULL};
    cli_run r = run_cli_argv(NULL, args);
    assert_ok(&r);
    cr_assert(strstr(r.out, "[tune]") == NULL, "no progress line when stdout is not a terminal");
    cJSON *o = parse_tune_json(&r);
    cr_assert_eq(json_number_at(o, "trials"), 6);
    cr_assert_eq(json_number_at(o, "measured"), 6);
    cr_assert_eq(json_number_at(o, "from_records"), 0);
    cJSON *best = cJSON_GetObjectItem(o, "best");
    cr_assert_gt(json_number_at(best, "gflops"), 0);
    cr_assert(strstr(json_string_at(best, "config"), "v1;") == json_string_at(best, "config"));
    cJSON *curve = cJSON_GetObjectItem(o, "curve");
    cr_assert_eq(cJSON_GetArraySize(curve), 6);
    cr_assert(json_number_at(o, "measurements_per_s") > 0 && json_number_at(o, "wall_s") > 0);
    cJSON_Delete(o);
    cli_run_free(&r);

    r = run_cli_argv(NULL, args);
    assert_ok(&r);
    o = parse_tune_json(&r);
    cr_assert_eq(json_number_at(o, "measured"), 0, "a resumed run measures nothing it measured before");
    cr_assert_eq(json_number_at(o, "from_records"), 6);
    cJSON_Delete(o);
    cli_run_free(&r);
}

Test(cli, tune_bad_input)
{
    cli_run r = CLI("tune", "--final", "0", "--op", "matmul:M=8,N=8,K=8", "--tuner", "annealing");
    assert_usage_error(&r, "unknown tuner 'annealing'");
    cli_run_free(&r);
    r = CLI("tune", "--final", "0", "--op", "matmul:M=8,N=8,K=8", "--trials", "0");
    assert_usage_error(&r, "--trials");
    cli_run_free(&r);
    r = CLI("tune", "--final", "0", "--op", "matmul:M=8,N=8,K=8", "--trials", "-3");
    assert_usage_error(&r, "--trials");
    cli_run_free(&r);
    /* a file that is not a database is refused and left as it was */
    const char *junk = write_tmp("junk.db", "these are not the records you are looking for\n");
    r = CLI("tune", "--final", "0", "--op", "matmul:M=8,N=8,K=8", "--db", junk, "--trials", "2");
    assert_usage_error(&r, "junk.db");
    cli_run_free(&r);
    FILE *f = fopen(junk, "r");
    char text[128] = "";
    cr_assert_not_null(f);
    cr_assert_not_null(fgets(text, sizeof text, f));
    fclose(f);
    cr_assert_str_eq(text, "these are not the records you are looking for\n");
}
