/* End-to-end tests of `rltune run` (cmd_run.c): a small CNN written with
 * tests/common/onnx_build.h into the test's directory (conv-bn-relu, a
 * residual block, max pool, a depthwise conv with relu6, global pool, a
 * Gemm head; seeded random weights) is compiled from seed schedules, run,
 * checked against the reference and timed, as text, as JSON and with a
 * profile; an input from a .npy file gives the output the library's
 * reference evaluation gives, written to a .npy file; a records database
 * with a tuned task is used; bad models, inputs and options are bad input
 * (exit 2, one error line). */
#include <cjson/cJSON.h>
#include <math.h>

#include "../common/json.h"
#include "../common/onnx_build.h"
#include "../common/tmp.h"
#include "cli_runner.h"
#include "rltune/model.h"

static char tmp_dir[] = "/tmp/rlt_cli_run_XXXXXX";
static char model_path[300];

static uint64_t rng_state = 17;

#define STEM "conv2d:N=1,C=3,H=16,W=16,K=8,R=3,S=3,stride=1,pad=1,dilation=1,epilogue=bias+relu"

static void setup(void)
{
    tmp_dir_use(tmp_dir);
    snprintf(model_path, sizeof model_path, "%s/net.onnx", tmp_dir);
    cr_assert(ob_write_small_cnn(model_path, &rng_state), "cannot write %s", model_path);
}

static void teardown(void) { tmp_remove_tree(tmp_dir); }

TestSuite(cli_run, .init = setup, .fini = teardown, .timeout = 120);

Test(cli_run, text)
{
    cli_run r = CLI("run", "--model", model_path, "--repeat", "3");
    assert_ok(&r);
    char want[512];
    snprintf(want, sizeof want, "model:     %s (opset 13): 13 nodes\n", model_path);
    assert_has(r.out, want, "stdout");
    assert_has(r.out, "compiled:  8 steps: 5 fused kernels of 5 tasks (0 tuned, 5 from seeds), 3 other nodes;",
               "stdout");
    assert_has(r.out, ": OK (tolerance 0.0001 relative)\n", "stdout");
    assert_has(r.out, " over 3 runs, 1 thread\n", "stdout");
    cr_expect_null(strstr(r.out, "profile"), "no profile unless asked:\n%s", r.out);
    cli_run_free(&r);
}

Test(cli_run, json_and_profile)
{
    cli_run r = CLI("run", "--model", model_path, "--repeat", "2", "--threads", "2", "--profile", "--json");
    assert_ok(&r);
    cJSON *j = json_parse_object_line(r.out);
    cr_expect_str_eq(json_string_at(j, "model"), model_path);
    cr_expect_eq(json_number_at(j, "threads"), 2);
    cr_expect(json_bool_at(j, "correct"));
    cr_expect_leq(json_number_at(j, "max_error"), 1e-4 * json_number_at(j, "max_reference"));
    cJSON *lat = cJSON_GetObjectItem(j, "latency_ms");
    cr_assert_not_null(lat);
    cr_expect_gt(json_number_at(lat, "median"), 0);
    cr_expect_leq(json_number_at(lat, "min"), json_number_at(lat, "median"));
    cr_expect_gt(json_number_at(j, "peak_memory_bytes"), 0);
    cr_expect_eq(json_number_at(j, "tasks_tuned"), 0);
    cr_expect_eq(json_number_at(j, "tasks_untuned"), 5);
    cr_expect(json_bool_at(j, "cold_weights"), "a model is compiled from its cold records first, whatever its size");
    cJSON *tasks = cJSON_GetObjectItem(j, "tasks");
    cr_assert(cJSON_IsArray(tasks) && cJSON_GetArraySize(tasks) == 5, "%s", r.out);
    cr_expect_str_eq(json_string_at(cJSON_GetArrayItem(tasks, 0), "spec"), STEM);
    cr_expect_str_eq(json_string_at(cJSON_GetArrayItem(tasks, 0), "origin"), "seed");
    cJSON *prof = cJSON_GetObjectItem(j, "profile");
    cr_assert(cJSON_IsArray(prof) && cJSON_GetArraySize(prof) == 8, "%s", r.out);
    double total = 0, last = INFINITY;
    for (int i = 0; i < 8; i++) {
        double ms = json_number_at(cJSON_GetArrayItem(prof, i), "ms");
        cr_expect_leq(ms, last, "slowest first");
        last = ms;
        total += ms;
    }
    cr_expect_gt(total, 0);
    cJSON_Delete(j);
    cli_run_free(&r);
}

/* An input from a file; the output written to one equals the library's
 * reference evaluation of the same input within the tolerance. */
Test(cli_run, npy_input_and_output)
{
    rlt_diag d = {0};
    rlt_model *m = NULL;
    cr_assert_eq(rlt_model_load(model_path, &m, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_array *in = NULL, *ref = NULL, *out = NULL;
    cr_assert_eq(rlt_model_random_inputs(m, 99, &in, &d), RLT_STATUS_OK, "%s", d.message);
    char in_path[400], out_path[400];
    snprintf(in_path, sizeof in_path, "%s/x.npy", tmp_dir);
    snprintf(out_path, sizeof out_path, "%s/y.npy", tmp_dir);
    cr_assert_eq(rlt_npy_save(in_path, in, &d), RLT_STATUS_OK, "%s", d.message);
    cli_run r = CLI("run", "--model", model_path, "--input", in_path, "--output", out_path, "--repeat", "1");
    assert_ok(&r);
    cli_run_free(&r);
    cr_assert_eq(rlt_model_evaluate(m, (const rlt_array *const *)&in, &ref, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_npy_load(out_path, &out, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(out->rank, 2);
    cr_assert_eq(out->dims[0], 1);
    cr_assert_eq(out->dims[1], 10);
    const float *o = out->data, *e = ref->data;
    double max_ref = 0, max_err = 0;
    for (int i = 0; i < 10; i++) {
        max_ref = fmax(max_ref, fabs(e[i]));
        max_err = fmax(max_err, fabs((double)o[i] - e[i]));
    }
    cr_expect_leq(max_err, 1e-4 * max_ref, "error %g, largest %g", max_err, max_ref);
    rlt_array_destroy(in);
    rlt_array_destroy(ref);
    rlt_array_destroy(out);
    rlt_model_destroy(m);
}

/* A task tuned into a database is compiled from its best record. */
Test(cli_run, tuned_from_db)
{
    char db[400];
    snprintf(db, sizeof db, "%s/r.db", tmp_dir);
    cli_run t = CLI("tune", "--op", STEM, "--trials", "4", "--tuner", "random", "--db", db);
    assert_ok(&t);
    cli_run_free(&t);
    cli_run r = CLI("run", "--model", model_path, "--db", db, "--repeat", "1", "--json");
    assert_ok(&r);
    cJSON *j = json_parse_object_line(r.out);
    cr_expect_eq(json_number_at(j, "tasks_tuned"), 1);
    cr_expect_eq(json_number_at(j, "tasks_untuned"), 4);
    cJSON *t0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "tasks"), 0);
    cr_expect_str_eq(json_string_at(t0, "origin"), "record");
    cr_expect_gt(json_number_at(t0, "record_id"), 0);
    cr_expect_gt(json_number_at(t0, "record_ms"), 0);
    cr_expect(json_bool_at(j, "correct"));
    cJSON_Delete(j);
    cli_run_free(&r);
}

/* `rltune tune --model`: the tasks share the trials (a warm-up round of
 * each, then the scheduler), a rerun with the same budget measures
 * nothing, a larger one continues, and `rltune run` then takes every task
 * from the records. */
Test(cli_run, tune_model_then_run)
{
    char db[400];
    snprintf(db, sizeof db, "%s/net.db", tmp_dir);
    cli_run r = CLI("tune", "--model", model_path, "--trials", "24", "--batch", "4", "--tuner", "random", "--final",
                    "0", "--db", db, "--json");
    assert_ok(&r);
    cJSON *j = json_parse_object_line(r.out);
    cr_expect_str_eq(json_string_at(j, "model"), model_path);
    cr_expect_eq(json_number_at(j, "recorded"), 0);
    int trials = (int)json_number_at(j, "trials"), rounds = (int)json_number_at(j, "rounds");
    cr_expect(trials >= 20 && trials <= 24 + 3, "trials %d", trials); /* whole rounds; small spaces run out */
    cr_expect_geq(rounds, 5, "a warm-up round of every task");
    cJSON *tasks = cJSON_GetObjectItem(j, "tasks");
    cr_assert(cJSON_IsArray(tasks) && cJSON_GetArraySize(tasks) == 5, "%s", r.out);
    double latency = 0;
    int from_siblings = 0;
    for (int i = 0; i < 5; i++) {
        cJSON *t = cJSON_GetArrayItem(tasks, i);
        cr_expect_geq(json_number_at(t, "rounds"), 1, "task %d", i);
        cr_expect_gt(json_number_at(t, "best_ms"), 0, "task %d", i);
        latency += json_number_at(t, "weight") * json_number_at(t, "best_ms");
        /* the residual block's convs (bias+relu, bias+add+relu) are siblings:
         * the one tuned second starts from the other's best */
        int n = (int)json_number_at(t, "from_siblings");
        bool has_sibling = strstr(json_string_at(t, "spec"), "C=8,H=16,W=16,K=8,R=3,S=3") != NULL;
        cr_expect(has_sibling || n == 0, "task %d has no sibling: %d from siblings", i, n);
        from_siblings += n;
    }
    cr_expect_geq(from_siblings, 1, "%s", r.out);
    cr_expect_float_eq(json_number_at(j, "latency_ms"), latency, 1e-9 * latency);
    cJSON *curve = cJSON_GetObjectItem(j, "curve");
    cr_assert(cJSON_IsArray(curve) && cJSON_GetArraySize(curve) == rounds, "%s", r.out);
    cJSON *last = cJSON_GetArrayItem(curve, rounds - 1);
    cr_expect_eq(json_number_at(last, "trials"), trials);
    cr_expect_float_eq(json_number_at(last, "latency_ms"), latency, 1e-9 * latency);
    cJSON_Delete(j);
    cli_run_free(&r);

    /* the same budget again: everything is in the records */
    r = CLI("tune", "--model", model_path, "--trials", "24", "--batch", "4", "--tuner", "random", "--final", "0",
            "--db", db, "--json");
    assert_ok(&r);
    j = json_parse_object_line(r.out);
    cr_expect_eq(json_number_at(j, "trials"), 0);
    cr_expect_eq(json_number_at(j, "recorded"), trials);
    cr_expect_float_eq(json_number_at(j, "latency_ms_at_open"), latency, 1e-9 * latency);
    cJSON_Delete(j);
    cli_run_free(&r);

    /* the text report, continuing with a larger budget */
    r = CLI("tune", "--model", model_path, "--trials", "32", "--batch", "4", "--tuner", "random", "--final", "0",
            "--db", db);
    assert_ok(&r);
    assert_has(r.out, "] round   1  trials ", "stdout");
    assert_has(r.out, " from the records, ", "stdout");
    assert_has(r.out, "run the network with 'rltune run --model ", "stdout");
    assert_has(r.out, "kernels timed cold, as the network runs them: weights, workspace and output evicted from the "
                      "caches before every call (--warm for the other way)", "stdout");
    cli_run_free(&r);

    r = CLI("run", "--model", model_path, "--db", db, "--repeat", "1", "--json");
    assert_ok(&r);
    j = json_parse_object_line(r.out);
    cr_expect_eq(json_number_at(j, "tasks_tuned"), 5);
    cr_expect(json_bool_at(j, "correct"));
    cJSON_Delete(j);
    cli_run_free(&r);

    /* warm: the records above are cold, so a warm run has none and takes
     * the seeds; a warm round of every task then files warm records (not
     * counting the cold ones toward its budget), which a warm run takes */
    r = CLI("run", "--model", model_path, "--db", db, "--repeat", "1", "--warm", "--json");
    assert_ok(&r);
    j = json_parse_object_line(r.out);
    cr_expect_not(json_bool_at(j, "cold_weights"));
    cr_expect_eq(json_number_at(j, "tasks_tuned"), 0, "no warm record");
    cJSON_Delete(j);
    cli_run_free(&r);
    r = CLI("tune", "--model", model_path, "--trials", "5", "--batch", "1", "--tuner", "random", "--final", "0",
            "--seeds", "0", "--db", db, "--warm", "--json");
    assert_ok(&r);
    j = json_parse_object_line(r.out);
    cr_expect_not(json_bool_at(j, "cold_weights"));
    cr_expect_eq(json_number_at(j, "recorded"), 0, "the cold records do not count toward a warm budget");
    cr_expect_geq(json_number_at(j, "trials"), 5);
    cJSON_Delete(j);
    cli_run_free(&r);
    r = CLI("run", "--model", model_path, "--db", db, "--repeat", "1", "--warm", "--json");
    assert_ok(&r);
    j = json_parse_object_line(r.out);
    cr_expect_eq(json_number_at(j, "tasks_tuned"), 5, "the warm records");
    cJSON_Delete(j);
    cli_run_free(&r);
}

/* --layout nchwc end to end: a model of 16 channels (a stem, a residual
 * block, GlobalAveragePool, Gemm) tuned in blocked layouts, then run from
 * those records; the NCHW network's convolutions are other ops, which the
 * blocked records do not serve. */
Test(cli_run, blocked_layout)
{
    char path[400], db[400];
    snprintf(path, sizeof path, "%s/blocked.onnx", tmp_dir);
    snprintf(db, sizeof db, "%s/blocked.db", tmp_dir);
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, OB_DIMS(1, 3, 8, 8));
    ob_conv_rand(&b, "stem", "x", "s0", 3, 16, 3, 1, 1, 1, true, &rng_state);
    ob_node(&b, "Relu", "stem_relu", "s0", "s");
    ob_resnet_block(&b, "blk", "s", 16);
    ob_node(&b, "GlobalAveragePool", "gap", "blk_out", "g");
    ob_node(&b, "Flatten", "flat", "g", "f");
    ob_init_rand(&b, "fc_w", 2, OB_DIMS(10, 16), 0.3f, &rng_state);
    ob_attr_i(&b, ob_node(&b, "Gemm", "fc", "f,fc_w", "y"), "transB", 1);
    ob_output(&b, "y");
    cr_assert(ob_write(&b, path));
    ob_free(&b);
    cli_run r = CLI("tune", "--model", path, "--layout", "nchwc", "--trials", "8", "--batch", "2", "--tuner", "random",
                    "--final", "0", "--seeds", "0", "--db", db);
    assert_ok(&r);
    char want[1024];
    snprintf(want, sizeof want, "run the network with 'rltune run --model %s --db %s --layout nchwc'", path, db);
    assert_has(r.out, want, "stdout");
    snprintf(want, sizeof want, "K=16,R=3,S=3,stride=1,pad=1,dilation=1,iblock=%d,oblock=%d,epilogue=bias+add+relu",
             rlt_model_channel_block(), rlt_model_channel_block());
    assert_has(r.out, want, "stdout");
    cli_run_free(&r);
    r = CLI("run", "--model", path, "--db", db, "--layout", "nchwc", "--repeat", "1");
    assert_ok(&r);
    snprintf(want, sizeof want, "layout:    nchwc: activations in blocks of %d channels", rlt_model_channel_block());
    assert_has(r.out, want, "stdout");
    assert_has(r.out, "(4 tuned from ", "stdout");
    assert_has(r.out, ": OK (tolerance", "stdout");
    cli_run_free(&r);
    /* auto (the default): only the blocked tasks are all tuned */
    r = CLI("run", "--model", path, "--db", db, "--repeat", "1");
    assert_ok(&r);
    snprintf(want, sizeof want, "layout:    nchwc: activations in blocks of %d channels where every node can take them "
             "(auto: the records estimate nchw not fully tuned, nchwc ", rlt_model_channel_block());
    assert_has(r.out, want, "stdout");
    assert_has(r.out, "(4 tuned from ", "stdout");
    cli_run_free(&r);
    r = CLI("run", "--model", path, "--db", db, "--repeat", "1", "--threads", "2", "--json");
    assert_ok(&r);
    cJSON *j = json_parse_object_line(r.out);
    cr_expect_str_eq(json_string_at(j, "layout"), "nchw", "auto: nothing is tuned at 2 threads");
    cr_expect(json_bool_at(j, "layout_auto"));
    cr_expect_eq(json_number_at(j, "channel_block"), 0);
    cr_expect_eq(json_number_at(j, "tasks_tuned"), 0, "NCHW tasks are other ops (and another thread count)");
    cr_expect(json_bool_at(j, "correct"));
    cJSON_Delete(j);
    cli_run_free(&r);
    /* one blocked task tuned, no NCHW one: auto takes the layout tuned further */
    char db2[400];
    snprintf(db2, sizeof db2, "%s/partial.db", tmp_dir);
    r = CLI("tune", "--model", path, "--layout", "nchwc", "--trials", "2", "--batch", "2", "--tuner", "random",
            "--final", "0", "--seeds", "0", "--db", db2, "--json");
    assert_ok(&r);
    cli_run_free(&r);
    r = CLI("run", "--model", path, "--db", db2, "--repeat", "1", "--json");
    assert_ok(&r);
    j = json_parse_object_line(r.out);
    cr_expect_str_eq(json_string_at(j, "layout"), "nchwc", "a partly tuned layout over an untuned one");
    cr_expect_eq(json_number_at(j, "tasks_tuned"), 1);
    cJSON_Delete(j);
    cli_run_free(&r);
    EXPECT_USAGE_ERROR("--layout goes with --model", "tune", "--op", "matmul:M=4,N=4,K=4", "--layout", "nchwc");
    EXPECT_USAGE_ERROR("--layout nhwc: expected nchwc", "run", "--model", path, "--layout", "nhwc");
}

Test(cli_run, tune_model_bad_input)
{
    EXPECT_USAGE_ERROR("--op cannot be combined with --model", "tune", "--model", model_path, "--op",
                       "matmul:M=4,N=4,K=4");
    EXPECT_USAGE_ERROR("--transfer cannot be combined with --model", "tune", "--model", model_path, "--transfer",
                       "x.db");
    EXPECT_USAGE_ERROR("--no-transfer goes with --model", "tune", "--op", "matmul:M=4,N=4,K=4", "--no-transfer");
    EXPECT_USAGE_ERROR("cannot open", "tune", "--model", "/nonexistent/m.onnx");
    EXPECT_USAGE_ERROR("--cold and --warm contradict each other", "tune", "--model", model_path, "--cold", "--warm");
    EXPECT_USAGE_ERROR("--cold and --warm contradict each other", "run", "--model", model_path, "--cold", "--warm");
}

Test(cli_run, bad_input)
{
    EXPECT_USAGE_ERROR("--model FILE is required", "run");
    EXPECT_USAGE_ERROR("cannot open", "run", "--model", "/nonexistent/m.onnx");
    EXPECT_USAGE_ERROR("--repeat", "run", "--model", model_path, "--repeat", "0");
    EXPECT_USAGE_ERROR("--db: cannot read '/nonexistent/r.db'", "run", "--model", model_path, "--db",
                       "/nonexistent/r.db");
    EXPECT_USAGE_ERROR("--input: the model has 1 input; 2 files were given", "run", "--model", model_path,
                       "--input", "a.npy,b.npy");
    /* an input of the wrong shape names the input and both shapes */
    rlt_diag d = {0};
    rlt_array *a = NULL;
    cr_assert_eq(rlt_array_create(RLT_ELEM_F32, 2, (int64_t[]){3, 4}, &a, &d), RLT_STATUS_OK);
    char path[400];
    snprintf(path, sizeof path, "%s/bad.npy", tmp_dir);
    cr_assert_eq(rlt_npy_save(path, a, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_array_destroy(a);
    EXPECT_USAGE_ERROR("input 0 ('x') is f32[3,4]; the model needs f32[1,3,16,16]", "run", "--model", model_path,
                       "--input", path);
    /* a file that is not .npy */
    EXPECT_USAGE_ERROR("--input: ", "run", "--model", model_path, "--input", model_path);
}

Test(cli_run, help)
{
    cli_run r = CLI("run", "--help");
    assert_ok(&r);
    assert_has(r.out, "usage: rltune run --model FILE", "stdout");
    cli_run_free(&r);
}
