/* End-to-end tests of `rltune gen-demos` and `rltune imitate`
 * (src/cli/cmd_gen_demos.c, cmd_imitate.c): demonstrations made on a tiny
 * dataset (16x16 matmuls, kernels built at -O1 and timed briefly, --peak
 * given), a policy cloned from them that `rltune optimize` rolls out
 * measuring one state, and bad input: one error line, exit 2. The compile
 * cache is $RLTUNE_CACHE_DIR, set by CTest. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/imitate.h"

#include "../common/json.h"
#include "../common/tmp.h"
#include "cli_runner.h"

static char tmp_dir[] = "/tmp/rlt_cli_imitate_XXXXXX";
static char dataset[300], demos[300], policy[300];

static void setup(void)
{
    tmp_dir_use(tmp_dir);
    snprintf(dataset, sizeof dataset, "%s/mm.shapes", tmp_dir);
    snprintf(demos, sizeof demos, "%s/mm.demos", tmp_dir);
    snprintf(policy, sizeof policy, "%s/bc.rlp", tmp_dir);
    static const char text[] = "# rltune shapes v1\n"
                               "train matmul:M=16,N=16,K=16\n"
                               "train matmul:M=32,N=16,K=16\n"
                               "train matmul:M=16,N=32,K=16\n"
                               "test matmul:M=32,N=32,K=16\n";
    tmp_file_write(dataset, text, strlen(text));
}

static void teardown(void) { tmp_remove_tree(tmp_dir); }

TestSuite(cli_imitate, .init = setup, .fini = teardown, .timeout = 240);

#define FAST "--peak", "100", "--cflags", "-O1 -march=native", "--repeat", "1", "--min-repeat-ms", "1"

Test(cli_imitate, demonstrations_a_cloned_policy_and_its_one_measurement_rollout)
{
    cli_run r = CLI("gen-demos", "--dataset", dataset, "--out", demos, "--search-shapes", "1", "--label-shapes", "3",
                    "--budget", "5", "--steps", "4", FAST);
    assert_ok(&r);
    assert_has(r.out, "3 demonstrations", "stdout");
    assert_has(r.err, "search matmul:M=16,N=16,K=16", "stderr");
    assert_has(r.err, "label 3/3", "stderr");
    cli_run_free(&r);
    rlt_demo_set s;
    rlt_diag d = {0};
    cr_assert_eq(rlt_demo_set_load(demos, &s, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(s.n, 3);
    for (int i = 0; i < s.n; i++) {
        cr_assert_leq(s.demos[i].n_trace, 4);
        cr_assert_geq(s.demos[i].gflops, s.demos[i].start_gflops);
    }
    rlt_demo_set_free(&s);

    r = CLI("imitate", "--demos", demos, "--out", policy, "--epochs", "60", "--hidden", "32", "--json");
    assert_ok(&r);
    cJSON *o = json_parse_object(r.out);
    cr_assert_eq(cJSON_GetObjectItem(o, "demos")->valueint, 3);
    cr_assert_gt(cJSON_GetObjectItem(o, "samples")->valueint, 0);
    cr_assert_lt(cJSON_GetObjectItem(o, "loss_last")->valuedouble, cJSON_GetObjectItem(o, "loss_first")->valuedouble);
    cJSON_Delete(o);
    cli_run_free(&r);

    rlt_policy *p = NULL;
    cr_assert_eq(rlt_policy_load(policy, &p, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(p->algo, RLT_POLICY_ALGO_BC);
    assert_has(p->about, "rltune", "about");
    assert_has(p->about, "imitate", "about");
    rlt_policy_destroy(p);

    /* several files learn together */
    char both[700];
    snprintf(both, sizeof both, "%s,%s", demos, demos);
    r = CLI("imitate", "--demos", both, "--out", policy, "--epochs", "20", "--hidden", "32", "--json");
    assert_ok(&r);
    o = json_parse_object(r.out);
    cr_assert_eq(cJSON_GetObjectItem(o, "demos")->valueint, 6);
    cJSON_Delete(o);
    cli_run_free(&r);

    r = CLI("optimize", "--op", "matmul:M=32,N=32,K=16", "--policy", policy, "--json", FAST);
    assert_ok(&r);
    o = json_parse_object(r.out);
    cr_assert_leq(cJSON_GetObjectItem(o, "n_evaluations")->valueint, 1, "a blind rollout measures its end only");
    assert_has(cJSON_GetObjectItem(o, "method")->valuestring, "bc, greedy rollout", "method");
    cJSON_Delete(o);
    cli_run_free(&r);
}

Test(cli_imitate, bad_input_is_one_error_line)
{
    EXPECT_USAGE_ERROR("--dataset", "gen-demos", "--out", demos);
    EXPECT_USAGE_ERROR("--guide", "gen-demos", "--dataset", dataset, "--out", demos, "--no-greedy");
    EXPECT_USAGE_ERROR("--budget", "gen-demos", "--dataset", dataset, "--out", demos, "--budget", "0");
    EXPECT_USAGE_ERROR("--guide", "gen-demos", "--dataset", dataset, "--out", demos, "--guide", dataset);
    EXPECT_USAGE_ERROR("--demos", "imitate", "--out", policy);
    EXPECT_USAGE_ERROR("not a demonstrations file", "imitate", "--demos", dataset, "--out", policy);
    EXPECT_USAGE_ERROR("--hidden", "imitate", "--demos", dataset, "--out", policy, "--hidden", "0");
    const char *illegal = tmp_path("illegal.demos");
    tmp_file_write_text(illegal, "# rltune demos v1\nmatmul:M=16,N=16,K=16\t1\t1\tswap_up\n");
    EXPECT_USAGE_ERROR("demonstration 1 (matmul:M=16,N=16,K=16): action 1, swap_up, is illegal there", "imitate",
                       "--demos", illegal, "--out", policy);
    EXPECT_USAGE_ERROR("unknown algorithm 'bc'", "train", "--dataset", dataset, "--steps", "5", "--out", policy,
                       "--algo", "bc");
}
