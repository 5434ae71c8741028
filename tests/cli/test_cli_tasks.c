/* End-to-end tests of `rltune tasks` (cmd_tasks.c): a small ResNet-style
 * model written with tests/common/onnx_build.h into the test's directory
 * (two basic blocks, a Conv with asymmetric pads, a global pool, a Gemm
 * head) is listed as a table (tasks heaviest first, the total, the other
 * kernels with the reason a Conv is not tunable) and as one JSON object;
 * a missing --model, a missing file and a file that is not ONNX are bad
 * input (exit 2, one error line). */
#include <cjson/cJSON.h>

#include "../common/json.h"
#include "../common/onnx_build.h"
#include "../common/tmp.h"
#include "cli_runner.h"

#define CONV16 "conv2d:N=1,C=16,H=8,W=8,K=16,R=3,S=3,stride=1,pad=1,dilation=1"
#define CONV16_FLOPS (2.0 * 16 * 8 * 8 * 16 * 3 * 3)
#define DENSE "dense:M=1,N=10,K=16,bias=1,relu=0"

static char tmp_dir[] = "/tmp/rlt_cli_tasks_XXXXXX";
static char model_path[300];

/* Writes the model: two blocks of 16 channels at 8x8, a Conv with pads
 * [0,0,1,1], GlobalAveragePool, Flatten, Gemm 16 -> 10 with a bias. */
static void setup(void)
{
    tmp_dir_use(tmp_dir);
    snprintf(model_path, sizeof model_path, "%s/net.onnx", tmp_dir);
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, OB_DIMS(1, 16, 8, 8));
    ob_resnet_block(&b, "a", "x", 16);
    ob_resnet_block(&b, "b", "a_out", 16);
    ob_init_f32(&b, "asym_w", 4, OB_DIMS(16, 16, 2, 2), NULL);
    Onnx__NodeProto *n = ob_node(&b, "Conv", "asym", "b_out,asym_w", "c");
    ob_attr_ints(&b, n, "pads", 4, OB_DIMS(0, 0, 1, 1));
    ob_node(&b, "GlobalAveragePool", "gap", "c", "p");
    ob_node(&b, "Flatten", "flat", "p", "f");
    ob_init_f32(&b, "fc_w", 2, OB_DIMS(10, 16), NULL);
    ob_init_f32(&b, "fc_b", 1, OB_DIMS(10), NULL);
    n = ob_node(&b, "Gemm", "fc", "f,fc_w,fc_b", "y");
    ob_attr_i(&b, n, "transB", 1);
    ob_output(&b, "y");
    cr_assert(ob_write(&b, model_path), "cannot write %s", model_path);
    ob_free(&b);
}

static void teardown(void) { tmp_remove_tree(tmp_dir); }

TestSuite(cli_tasks, .init = setup, .fini = teardown, .timeout = 60);

Test(cli_tasks, table)
{
    cli_run r = CLI("tasks", "--model", model_path);
    assert_ok(&r);
    cr_expect_str_empty(r.err);
    char want[512];
    snprintf(want, sizeof want, "model: %s (opset 13): 14 nodes, 1 input, 1 output\n", model_path);
    assert_has(r.out, want, "stdout");
    assert_has(r.out, "tasks: 3 (5 kernels), heaviest first\n", "stdout");
    /* heaviest first: the residual add makes the second conv's epilogue one op longer */
    const char *k1 = strstr(r.out, CONV16 ",epilogue=bias+add+relu\n");
    const char *k2 = strstr(r.out, CONV16 ",epilogue=bias+relu\n");
    const char *k3 = strstr(r.out, DENSE);
    cr_assert(k1 && k2 && k3, "stdout:\n%s", r.out);
    cr_expect(k1 < k2 && k2 < k3, "not heaviest first:\n%s", r.out);
    assert_has(r.out, "       2         297984  50.1%  " CONV16 ",epilogue=bias+add+relu\n", "stdout");
    assert_has(r.out, "  total: 5 kernels, 1190218 FLOPs per run\n", "stdout");
    assert_has(r.out, "other kernels: 3 nodes, not tuned\n", "stdout");
    assert_has(r.out, "       1  Conv: not tunable yet: asymmetric pads [0,0,1,1]", "stdout");
    assert_has(r.out, "(first: asym)\n", "stdout");
    assert_has(r.out, "       1  GlobalAveragePool\n", "stdout");
    assert_has(r.out, "       1  Flatten\n", "stdout");
    cli_run_free(&r);
}

Test(cli_tasks, json)
{
    cli_run r = CLI("tasks", "--json", "--model", model_path);
    assert_ok(&r);
    cJSON *j = json_parse_object_line(r.out);
    cr_expect_str_eq(cJSON_GetObjectItem(j, "model")->valuestring, model_path);
    cr_expect_eq(cJSON_GetObjectItem(j, "opset")->valuedouble, 13);
    cr_expect_eq(cJSON_GetObjectItem(j, "n_nodes")->valuedouble, 14);
    cr_expect_eq(cJSON_GetObjectItem(j, "n_tasks")->valuedouble, 3);
    cr_expect_eq(cJSON_GetObjectItem(j, "n_kernels")->valuedouble, 5);
    /* each conv adds bias and relu (and one of them the residual) per output; the dense its bias */
    cr_expect_eq(cJSON_GetObjectItem(j, "total_flops")->valuedouble,
                 4 * CONV16_FLOPS + (2 * 2 + 2 * 3) * 1024.0 + 2.0 * 10 * 16 + 10);
    cJSON *tasks = cJSON_GetObjectItem(j, "tasks");
    cr_assert(cJSON_IsArray(tasks) && cJSON_GetArraySize(tasks) == 3, "%s", r.out);
    cJSON *t0 = cJSON_GetArrayItem(tasks, 0), *t2 = cJSON_GetArrayItem(tasks, 2);
    cr_expect_str_eq(cJSON_GetObjectItem(t0, "spec")->valuestring, CONV16 ",epilogue=bias+add+relu");
    cr_expect_str_eq(cJSON_GetObjectItem(t0, "epilogue")->valuestring, "bias,add,relu");
    cr_expect_eq(cJSON_GetObjectItem(t0, "weight")->valuedouble, 2);
    cr_expect_eq(cJSON_GetObjectItem(t0, "flops")->valuedouble, CONV16_FLOPS + 3 * 1024.0);
    cJSON *nodes = cJSON_GetObjectItem(t0, "nodes");
    cr_assert(cJSON_IsArray(nodes) && cJSON_GetArraySize(nodes) == 6, "%s", r.out);
    cr_expect_str_eq(cJSON_GetArrayItem(nodes, 0)->valuestring, "a_conv2");
    cr_expect_str_eq(cJSON_GetArrayItem(nodes, 5)->valuestring, "b_relu2");
    cr_expect_str_eq(cJSON_GetObjectItem(t2, "spec")->valuestring, DENSE);
    cr_expect_str_eq(cJSON_GetObjectItem(t2, "epilogue")->valuestring, "bias");
    cJSON *others = cJSON_GetObjectItem(j, "other_kernels");
    cr_assert(cJSON_IsArray(others) && cJSON_GetArraySize(others) == 3, "%s", r.out);
    cJSON *o0 = cJSON_GetArrayItem(others, 0), *o1 = cJSON_GetArrayItem(others, 1);
    cr_expect_str_eq(cJSON_GetObjectItem(o0, "op_type")->valuestring, "Conv");
    cr_expect_eq(cJSON_GetObjectItem(o0, "count")->valuedouble, 1);
    cr_expect_not_null(strstr(cJSON_GetObjectItem(o0, "reason")->valuestring, "asymmetric pads [0,0,1,1]"));
    cr_expect_str_eq(cJSON_GetObjectItem(o0, "first_node")->valuestring, "asym");
    cr_expect_str_eq(cJSON_GetObjectItem(o1, "op_type")->valuestring, "GlobalAveragePool");
    cr_expect_str_eq(cJSON_GetObjectItem(o1, "reason")->valuestring, "");
    cJSON_Delete(j);
    cli_run_free(&r);
}

/* --layout nchwc: the graph's input and the residuals read from it stay
 * NCHW, so each block's first conv writes blocks and its second reads
 * them and writes NCHW (the block is the machine's vector width: 4, 8 or
 * 16, each a divisor of the 16 channels). */
Test(cli_tasks, blocked_layout)
{
    cli_run r = CLI("tasks", "--model", model_path, "--layout", "nchwc");
    assert_ok(&r);
    assert_has(r.out, "tasks: 3 (5 kernels), heaviest first\n", "stdout");
    assert_has(r.out, CONV16 ",oblock=", "stdout");
    assert_has(r.out, ",epilogue=bias+relu\n", "stdout");
    assert_has(r.out, CONV16 ",iblock=", "stdout");
    cr_expect_null(strstr(r.out, "oblock=16,epilogue=bias+add"), "the residual block's output stays NCHW:\n%s", r.out);
    cli_run_free(&r);
    r = CLI("tasks", "--model", model_path, "--layout", "nchw");
    assert_ok(&r);
    cr_expect_null(strstr(r.out, "block="), "stdout:\n%s", r.out);
    cli_run_free(&r);
    EXPECT_USAGE_ERROR("--layout nhwc: expected nchwc", "tasks", "--model", model_path, "--layout", "nhwc");
    EXPECT_USAGE_ERROR("--layout auto: expected nchwc", "tasks", "--model", model_path, "--layout", "auto");
}

Test(cli_tasks, help)
{
    cli_run r = CLI("tasks", "--help");
    assert_ok(&r);
    assert_has(r.out, "usage: rltune tasks --model FILE [--layout nchw|nchwc] [--json]", "stdout");
    assert_has(r.out, "--model", "stdout");
    cli_run_free(&r);
    r = CLI("--help");
    assert_ok(&r);
    assert_has(r.out, "  tasks ", "the command list");
    cli_run_free(&r);
}

Test(cli_tasks, bad_input)
{
    EXPECT_USAGE_ERROR("--model FILE is required", "tasks");
    EXPECT_USAGE_ERROR("unknown option '--op'", "tasks", "--model", model_path, "--op", "matmul:M=1,N=1,K=1");

    char missing[400];
    snprintf(missing, sizeof missing, "%s/absent.onnx", tmp_dir);
    EXPECT_USAGE_ERROR("absent.onnx", "tasks", "--model", missing);

    char text_path[400];
    snprintf(text_path, sizeof text_path, "%s/notes.onnx", tmp_dir);
    tmp_file_write_text(text_path, "not a model, just text\n");
    EXPECT_USAGE_ERROR("not an ONNX model", "tasks", "--model", text_path);
    EXPECT_USAGE_ERROR("not an ONNX model", "tasks", "--json", "--model", text_path);
}
