/*
 * test_cli_optimize.c - `rltune optimize` (a policy's rollout, the search
 * baselines) and `rltune tune --tuner policy`, end to end on tiny matmuls:
 * real kernels, built with -O1 and timed briefly, and a policy written by the
 * test (untrained: what is checked is the plumbing, not its quality).
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

#include "../common/json.h"
#include "../common/tmp.h"
#include "cli_runner.h"

static char tmp_dir[] = "/tmp/rlt_cli_optimize_XXXXXX";
static char policy_path[256];

static void setup(void)
{
    tmp_dir_make_in(tmp_dir);
    snprintf(policy_path, sizeof policy_path, "%s/p.rlp", tmp_dir);
    static const int hidden[] = {16};
    rlt_policy *p = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_policy_create(RLT_POLICY_ALGO_DQN, 1, hidden, 3, &p, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_policy_save(p, policy_path, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_policy_destroy(p);
}

static void teardown(void) { tmp_remove_tree(tmp_dir); }

TestSuite(cli_optimize, .init = setup, .fini = teardown, .timeout = 300);

#define MM "matmul:M=16,N=16,K=8"
#define FAST "--peak", "100", "--cflags", "-O1 -march=native", "--repeat", "1", "--min-repeat-ms", "1"

Test(cli_optimize, a_policy_rollout_gives_a_schedule_that_replays)
{
    cli_run r = CLI("optimize", "--op", MM, "--policy", policy_path, "--steps", "6", "--json", FAST);
    assert_ok(&r);
    cJSON *j = json_parse_object(r.out);
    cr_assert_gt(json_number_at(j, "gflops"), 0);
    cr_assert_geq(json_number_at(j, "gflops"), json_number_at(j, "start_gflops"), "the result is the best state seen");
    cr_assert_gt(json_number_at(j, "time_ms"), 0);
    cr_assert_geq(json_number_at(j, "wall_s"), 0);
    const cJSON *trace = cJSON_GetObjectItemCaseSensitive(j, "trace");
    cr_assert(cJSON_IsArray(trace) && cJSON_GetArraySize(trace) <= 6);
    const cJSON *sched = cJSON_GetObjectItemCaseSensitive(j, "schedule");
    cr_assert(cJSON_IsString(sched));
    char path[512];
    snprintf(path, sizeof path, "%s/best.sched", tmp_dir);
    tmp_file_write_text(path, sched->valuestring);
    cli_run m = CLI("measure", "--op", MM, "--schedule", path, "--cflags", "-O1 -march=native");
    assert_ok(&m);
    cli_run_free(&m);
    cJSON_Delete(j);
    cli_run_free(&r);
}

Test(cli_optimize, the_searches_run_and_print_the_tree)
{
    cli_run r = CLI("optimize", "--op", MM, "--search", "greedy", "--steps", "2", FAST);
    assert_ok(&r);
    assert_has(r.out, "method:   greedy search (lookahead 1)\n", "stdout");
    assert_has(r.out, "loop tree:\n", "stdout");
    assert_has(r.out, "schedule:\n# rltune schedule v1\n", "stdout");
    cli_run_free(&r);
    cli_run b = CLI("optimize", "--op", MM, "--search", "beam", "--beam", "2", "--steps", "2", "--json", FAST);
    assert_ok(&b);
    cJSON *j = json_parse_object(b.out);
    cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(j, "method")->valuestring, "beam search (width 2)");
    cJSON_Delete(j);
    cli_run_free(&b);
    cli_run q = CLI("optimize", "--op", MM, "--search", "random", "--time-budget", "0.5", "--steps", "4", FAST);
    assert_ok(&q);
    assert_has(q.out, "random search (0.5 s, seed 0)", "stdout");
    cli_run_free(&q);
}

Test(cli_optimize, bad_input_is_refused)
{
    EXPECT_USAGE_ERROR("give either --policy FILE or --search KIND", "optimize", "--op", MM);
    EXPECT_USAGE_ERROR("give either --policy FILE or --search KIND", "optimize", "--op", MM, "--policy",
                       policy_path, "--search", "greedy");
    EXPECT_USAGE_ERROR("not a search (greedy, beam, random)", "optimize", "--op", MM, "--search", "annealing");
    EXPECT_USAGE_ERROR("--search random needs --time-budget", "optimize", "--op", MM, "--search", "random");
    EXPECT_USAGE_ERROR("--lookahead is an option of --search greedy", "optimize", "--op", MM, "--search", "beam",
                       "--lookahead", "2");
    EXPECT_USAGE_ERROR("--lookahead", "optimize", "--op", MM, "--search", "greedy", "--lookahead", "3");
    EXPECT_USAGE_ERROR("--policy", "optimize", "--op", MM, "--policy", "/nonexistent/p.rlp");
    char junk[512];
    snprintf(junk, sizeof junk, "%s/junk.rlp", tmp_dir);
    tmp_file_write_text(junk, "not a policy\n");
    EXPECT_USAGE_ERROR("--policy", "optimize", "--op", MM, "--policy", junk);
    EXPECT_USAGE_ERROR("unknown op", "optimize", "--op", "matmull:M=4", "--search", "greedy");
}

Test(cli_optimize, tune_starts_from_the_policys_result)
{
    char db[512];
    snprintf(db, sizeof db, "%s/t.db", tmp_dir);
    cli_run r = CLI("tune", "--final", "0", "--op", MM, "--tuner", "policy", "--policy", policy_path, "--policy-base", "random",
                    "--trials", "6", "--db", db, "--json", "--cflags", "-O1 -march=native");
    assert_ok(&r);
    cJSON *j = json_parse_object(r.out);
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "policy");
    cr_assert(cJSON_IsObject(p), "no policy object:\n%s", r.out);
    cr_assert_gt(json_number_at(p, "gflops"), 0);
    const cJSON *start = cJSON_GetObjectItemCaseSensitive(p, "start_config");
    cr_assert(cJSON_IsString(start) && strncmp(start->valuestring, "v1;", 3) == 0, "%s", r.out);
    cr_assert_eq(json_number_at(j, "trials"), 6);
    cJSON_Delete(j);
    cli_run_free(&r);
    EXPECT_USAGE_ERROR("--tuner policy needs --policy FILE", "tune", "--op", MM, "--tuner", "policy");
    EXPECT_USAGE_ERROR("--policy and --policy-base go with --tuner policy", "tune", "--op", MM, "--policy",
                       policy_path);
}
