/* End-to-end tests of `rltune rules` (cmd_rules.c) and `rltune graph-opt`
 * (cmd_graph_opt.c), and of --graph-opt on `run` and `tune --model`: the
 * shipped rules list and verify; a file with a wrong rule is refused with
 * its counterexample (exit 2); a small network that the rules rewrite
 * (two sibling convolutions concatenated, an Identity, a Dropout) is
 * optimised greedily and by TASO's search, the rewrites printed, the
 * optimised network checked against the original and written as ONNX,
 * which rltune loads again; errors: unknown search, missing model, bad
 * numbers, a rules file that does not parse. */
#include <cjson/cJSON.h>

#include "../common/json.h"
#include "../common/onnx_build.h"
#include "../common/tmp.h"
#include "cli_runner.h"

static char tmp_dir[] = "/tmp/rlt_cli_gopt_XXXXXX";
static char model_path[300], out_path[300], bad_rules[300], broken_rules[300], db_path[300];

/* x -> Identity -> Dropout -> two 3x3 convolutions (4 and 6 channels),
 * the first times a per-channel constant -> Concat -> Relu. Removing the
 * Identity and the Dropout (views of the input: free) leaves the cost as
 * it is with fewer nodes, whatever the timings. Moving the Relu before the
 * Concat removes a step of its own (it joins the convolutions' epilogues);
 * folding the Mul, or merging the convolutions, changes which kernels run:
 * each is a gain or not by the timings of kernels measured once, so the
 * test asks for one of the three, not which. */
static void setup(void)
{
    tmp_dir_use(tmp_dir);
    snprintf(model_path, sizeof model_path, "%s/net.onnx", tmp_dir);
    snprintf(out_path, sizeof out_path, "%s/opt.onnx", tmp_dir);
    snprintf(bad_rules, sizeof bad_rules, "%s/bad.rules", tmp_dir);
    snprintf(broken_rules, sizeof broken_rules, "%s/broken.rules", tmp_dir);
    snprintf(db_path, sizeof db_path, "%s/records.db", tmp_dir);
    uint64_t rng = 9;
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, OB_DIMS(1, 3, 10, 10));
    ob_node(&b, "Identity", "id", "x", "xd");
    ob_node(&b, "Dropout", "drop", "xd", "xi");
    ob_conv_rand(&b, "e1", "xi", "c1", 3, 4, 3, 1, 1, 1, true, &rng);
    ob_init_f32(&b, "k", 4, OB_DIMS(1, 4, 1, 1), (float[]){0.5f, 2, -1, 1.5f});
    ob_node(&b, "Mul", "scale", "c1,k", "y1");
    ob_conv_rand(&b, "e2", "xi", "y2", 3, 6, 3, 1, 1, 1, true, &rng);
    ob_attr_i(&b, ob_node(&b, "Concat", "cat", "y1,y2", "z"), "axis", 1);
    ob_node(&b, "Relu", "act", "z", "y");
    ob_output(&b, "y");
    cr_assert(ob_write(&b, model_path), "cannot write %s", model_path);
    ob_free(&b);
    FILE *f = fopen(bad_rules, "w");
    cr_assert_not_null(f);
    fputs("# relu(a + b) is not relu(a) + relu(b)\nrule relu_splits\n  src s = Add(a, b)\n  src y = Relu(s)\n"
          "  dst ra = Relu(a)\n  dst rb = Relu(b)\n  dst y2 = Add(ra, rb)\n  out y -> y2\n"
          "  check a=f32[4,5] b=f32[4,5]\nend\n",
          f);
    fclose(f);
    f = fopen(broken_rules, "w");
    cr_assert_not_null(f);
    fputs("rule half\n  src y = Relu(x)\n", f);
    fclose(f);
}

static void teardown(void) { tmp_remove_tree(tmp_dir); }

TestSuite(cli_graph_opt, .init = setup, .fini = teardown, .timeout = 120);

Test(cli_graph_opt, rules_list_and_verify)
{
    cli_run r = CLI("rules", "list");
    assert_ok(&r);
    assert_has(r.out, "merge_sibling_convs_concat", "stdout");
    assert_has(r.out, "enlarge_conv_1x1_to_3x3", "stdout");
    cli_run_free(&r);
    r = CLI("rules", "verify");
    assert_ok(&r);
    assert_has(r.out, "ok  fold_batchnorm_into_conv", "stdout");
    assert_has(r.out, "within 1e-5\n", "stdout");
    assert_has(r.out, " rules verified (shipped)\n", "stdout");
    cli_run_free(&r);
    r = CLI("rules", "verify", "--json");
    assert_ok(&r);
    cJSON *j = json_parse_object_line(r.out);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "verified")));
    cr_assert_geq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "list")), 20);
    cJSON_Delete(j);
    cli_run_free(&r);
}

Test(cli_graph_opt, a_wrong_rule_is_refused)
{
    cli_run r = CLI("rules", "verify", bad_rules);
    cr_assert_eq(r.exit_code, 2, "exit %d\n%s", r.exit_code, r.err);
    cr_assert_str_empty(r.out);
    assert_has(r.err, "rule relu_splits is refused", "stderr");
    assert_has(r.err, "differs at element", "stderr");
    cli_run_free(&r);
    /* graph-opt verifies the user's rules before it starts */
    r = CLI("graph-opt", "--model", model_path, "--rules", bad_rules, "--no-measure");
    cr_assert_eq(r.exit_code, 2, "exit %d\n%s", r.exit_code, r.err);
    assert_has(r.err, "refused", "stderr");
    cli_run_free(&r);
}

Test(cli_graph_opt, greedy_rewrites_checks_and_writes)
{
    cli_run r = CLI("graph-opt", "--model", model_path, "--search", "greedy", "--db", db_path, "--out", out_path,
                    "--repeat", "3");
    assert_ok(&r);
    assert_has(r.out, "rewrites (", "stdout");
    assert_has(r.out, "remove_identity", "stdout");
    assert_has(r.out, "remove_dropout", "stdout");
    /* greedy takes the larger gain first: which one depends on the timings (the CI once
     * measured the convolution with the Mul and the Relu in its epilogue faster than
     * without the Mul, and greedy rightly kept the Mul) */
    cr_assert(strstr(r.out, "relu_before_concat") || strstr(r.out, "fold_mul_into_conv") ||
                  strstr(r.out, "merge_sibling_convs"),
              "%s", r.out);
    double cost_before, cost_after;
    const char *cost = strstr(r.out, "\ncost: ");
    cr_assert(cost && sscanf(cost, "\ncost: %lf ms -> %lf ms", &cost_before, &cost_after) == 2, "%s", r.out);
    cr_assert_lt(cost_after, cost_before, "%s", r.out);
    assert_has(r.out, "nodes: 7 -> ", "stdout");
    assert_has(r.out, "outputs match the original's", "stdout");
    assert_has(r.out, "wrote ", "stdout");
    cli_run_free(&r);
    /* the written graph loads: no Identity or Dropout left */
    r = CLI("tasks", "--model", out_path);
    assert_ok(&r);
    cr_assert_null(strstr(r.out, "Identity"), "%s", r.out);
    cr_assert_null(strstr(r.out, "Dropout"), "%s", r.out);
    cli_run_free(&r);
    /* run --graph-opt does the same rewrites before compiling */
    r = CLI("run", "--model", model_path, "--db", db_path, "--graph-opt", "greedy", "--repeat", "3");
    assert_ok(&r);
    assert_has(r.out, "graph-opt: greedy: ", "stdout");
    assert_has(r.out, "remove_dropout", "stdout");
    assert_has(r.out, ": OK", "stdout");
    cli_run_free(&r);
    /* the seeds were timed cold, as tune --model times kernels: their
     * records are cold ones, and --warm times (and files) warm ones */
    r = CLI("tasks", "--model", model_path, "--json");
    assert_ok(&r);
    cJSON *j = json_parse_object_line(r.out);
    char spec[512];
    snprintf(spec, sizeof spec, "%s", json_string_at(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "tasks"), 0), "spec"));
    cJSON_Delete(j);
    cli_run_free(&r);
    r = CLI("best", "--op", spec, "--db", db_path, "--cold");
    assert_ok(&r);
    cli_run_free(&r);
    r = CLI("best", "--op", spec, "--db", db_path);
    cr_expect_neq(r.exit_code, 0, "no warm record of %s yet: %s", spec, r.out);
    cli_run_free(&r);
    r = CLI("graph-opt", "--model", model_path, "--search", "greedy", "--db", db_path, "--warm", "--no-measure");
    assert_ok(&r);
    cli_run_free(&r);
    r = CLI("best", "--op", spec, "--db", db_path);
    assert_ok(&r);
    cli_run_free(&r);
}

Test(cli_graph_opt, taso_json)
{
    cli_run r = CLI("graph-opt", "--model", model_path, "--search", "taso", "--budget", "5", "--json", "--repeat", "3");
    assert_ok(&r);
    cJSON *j = json_parse_object_line(r.out);
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(j, "search")), "taso");
    double before = cJSON_GetNumberValue(cJSON_GetObjectItem(j, "cost_before_ms"));
    double after = cJSON_GetNumberValue(cJSON_GetObjectItem(j, "cost_after_ms"));
    cr_assert_gt(before, 0);
    cr_assert_lt(after, before);
    cr_assert_geq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "rewrites")), 3);
    cr_assert_geq(cJSON_GetNumberValue(cJSON_GetObjectItem(j, "cost_evals")), 4);
    cr_assert_leq(cJSON_GetNumberValue(cJSON_GetObjectItem(j, "expanded")), 5);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "correct")));
    cr_assert_lt(cJSON_GetNumberValue(cJSON_GetObjectItem(j, "max_error")), 1e-4);
    cJSON_Delete(j);
    cli_run_free(&r);
}

/* --search rl with the policy built into the library: a rollout of a few
 * cost evaluations, checked like the others. */
Test(cli_graph_opt, rl_with_the_shipped_policy)
{
    cli_run r = CLI("graph-opt", "--model", model_path, "--search", "rl", "--json", "--repeat", "3");
    assert_ok(&r);
    cJSON *j = json_parse_object_line(r.out);
    cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(j, "search")), "rl");
    cr_assert_leq(cJSON_GetNumberValue(cJSON_GetObjectItem(j, "cost_evals")), 21, "horizon 20 and the first");
    cr_assert_leq(cJSON_GetNumberValue(cJSON_GetObjectItem(j, "cost_after_ms")),
                  cJSON_GetNumberValue(cJSON_GetObjectItem(j, "cost_before_ms")));
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "correct")));
    cJSON_Delete(j);
    cli_run_free(&r);
}

Test(cli_graph_opt, bad_input)
{
    EXPECT_USAGE_ERROR("--model FILE is required", "graph-opt");
    EXPECT_USAGE_ERROR("'beam' is not a search", "graph-opt", "--model", model_path, "--search", "beam");
    EXPECT_USAGE_ERROR("--alpha", "graph-opt", "--model", model_path, "--alpha", "0.5");
    EXPECT_USAGE_ERROR("--budget", "graph-opt", "--model", model_path, "--budget", "-1");
    EXPECT_USAGE_ERROR("bad value 0 for --cost-seeds: expected a whole number from 1 to 8", "graph-opt", "--model",
                       model_path, "--cost-seeds", "0");
    EXPECT_USAGE_ERROR("--policy goes with --search rl", "graph-opt", "--model", model_path, "--policy", model_path);
    EXPECT_USAGE_ERROR("broken.rules:2: rule half is not closed", "graph-opt", "--model", model_path, "--rules",
                       broken_rules, "--no-measure");
    EXPECT_USAGE_ERROR("needs a sub-command", "rules");
    EXPECT_USAGE_ERROR("unknown sub-command 'check'", "rules", "check");
    EXPECT_USAGE_ERROR("--graph-opt: 'beam' is not a search", "run", "--model", model_path, "--graph-opt", "beam");
    EXPECT_USAGE_ERROR("--graph-opt goes with --model", "tune", "--op", "matmul:M=8,N=8,K=8", "--graph-opt",
                       "greedy", "--trials", "1");
}
