/* End-to-end tests of `rltune train` (src/cli/cmd_train.c): real training
 * runs on a tiny dataset (16x16 matmuls, kernels built at -O1 and timed
 * briefly, --peak given) write the policy, the checkpoint and the curve, and
 * the policy loads; --json's object; a resume continues the step count and
 * a mismatched one is refused; --init fine-tunes a bc policy into a blind
 * ppo one; Ctrl-C stops the run with a checkpoint and exit 0; bad input
 * exits 2 with one error line. The compile cache is
 * $RLTUNE_CACHE_DIR, set by CTest. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "policy/policy.h"

#include "../common/json.h"
#include "../common/procs.h"
#include "../common/tmp.h"
#include "../common/xml_check.h"
#include "cli_runner.h"

static char tmp_dir[] = "/tmp/rlt_cli_train_XXXXXX";
static char dataset[300];

static void setup(void)
{
    tmp_dir_use(tmp_dir);
    snprintf(dataset, sizeof dataset, "%s/mm.txt", tmp_dir);
    static const char text[] = "# rltune shapes v1\n"
                               "# kind mm dims 16,32 test-fraction 0.3 seed 0\n"
                               "train matmul:M=16,N=16,K=16\n"
                               "train matmul:M=32,N=16,K=16\n"
                               "test matmul:M=16,N=32,K=16\n";
    tmp_file_write(dataset, text, strlen(text));
}

static void teardown(void) { tmp_remove_tree(tmp_dir); }

TestSuite(cli_train, .init = setup, .fini = teardown, .timeout = 240);

#define FAST "--peak", "100", "--cflags", "-O1 -march=native", "--repeat", "1", "--min-repeat-ms", "1"

static bool file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

static rlt_policy *load_policy(const char *path)
{
    rlt_policy *p = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_policy_load(path, &p, &d), RLT_STATUS_OK, "%s: %s", path, d.message);
    return p;
}

Test(cli_train, a_run_writes_the_policy_the_checkpoint_and_the_curve)
{
    const char *out = tmp_path("p.rlp");
    cli_run r = CLI("train", "--dataset", dataset, "--steps", "30", "--envs", "2", "--out", out, FAST);
    assert_ok(&r);
    cr_assert_eq(strncmp(r.out, "trained dqn for 30 steps: ", 26), 0, "stdout:\n%s", r.out);
    cr_assert_eq(strchr(r.out, '\n'), r.out + strlen(r.out) - 1, "not one line:\n%s", r.out);
    assert_has(r.out, "policy ", "stdout");
    cr_assert_str_empty(r.err, "stderr is not a terminal, yet:\n%s", r.err);
    cli_run_free(&r);

    /* the policy, without optimiser states, with how it was trained */
    rlt_policy *p = load_policy(out);
    cr_assert_eq(p->algo, RLT_POLICY_ALGO_DQN);
    cr_assert_null(p->net_adam);
    cr_assert_not_null(p->about);
    assert_has(p->about, "rltune train --dataset", "about");
    assert_has(p->about, "steps: 30 of 30", "about");
    assert_has(p->about, "seed 0", "about");
    rlt_policy_destroy(p);
    /* the checkpoint (OUT.ckpt) is a policy too */
    p = load_policy(tmp_path("p.rlp.ckpt"));
    rlt_policy_destroy(p);
    /* the curve: OUT with .svg for .rlp */
    char *svg = tmp_file_read(tmp_path("p.svg"), NULL);
    cr_assert_eq(strncmp(svg, "<?xml", 5), 0);
    size_t len = strlen(svg);
    cr_assert(len > 7 && strcmp(svg + len - 7, "</svg>\n") == 0);
    char err[256];
    cr_assert(xml_check(svg, err, sizeof err), "%s", err);
    free(svg);
}

Test(cli_train, json_resume_and_a_mismatched_resume)
{
    const char *out = tmp_path("q.rlp"), *ckpt = tmp_path("q.ckpt"), *curve = tmp_path("curve.svg");
    cli_run r = CLI("train", "--dataset", dataset, "--algo", "ppo", "--steps", "20", "--envs", "2", "--hidden",
                    "32,32", "--seed", "3", "--out", out, "--checkpoint", ckpt, "--curve", curve, "--json", FAST);
    assert_ok(&r);
    cJSON *o = json_parse_object_line(r.out);
    cr_assert_str_eq(cJSON_GetObjectItem(o, "algo")->valuestring, "ppo");
    cr_assert_str_eq(cJSON_GetObjectItem(o, "seed")->valuestring, "3");
    cr_assert_eq(json_number_at(o, "steps"), 20);
    cr_assert_eq(json_number_at(o, "steps_resumed"), 0);
    cr_assert_eq(json_number_at(o, "train_shapes"), 2);
    cr_assert_gt(json_number_at(o, "n_evaluations"), 0);
    cr_assert_geq(json_number_at(o, "wall_s"), 0);
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(o, "interrupted")));
    cr_assert_str_eq(cJSON_GetObjectItem(o, "policy")->valuestring, out);
    cr_assert_str_eq(cJSON_GetObjectItem(o, "checkpoint")->valuestring, ckpt);
    cr_assert_str_eq(cJSON_GetObjectItem(o, "curve")->valuestring, curve);
    cr_assert(cJSON_IsNumber(cJSON_GetObjectItem(o, "mean_return_first")));
    cr_assert(cJSON_IsNumber(cJSON_GetObjectItem(o, "mean_return_last")));
    cJSON_Delete(o);
    cli_run_free(&r);
    cr_assert(file_exists(ckpt) && file_exists(curve));

    /* options left out come from the checkpoint */
    r = CLI("train", "--dataset", dataset, "--steps", "30", "--out", out, "--checkpoint", ckpt, "--resume", ckpt,
            "--curve", curve, "--json", FAST);
    assert_ok(&r);
    o = json_parse_object_line(r.out);
    cr_assert_str_eq(cJSON_GetObjectItem(o, "algo")->valuestring, "ppo");
    cr_assert_eq(json_number_at(o, "steps"), 30);
    cr_assert_eq(json_number_at(o, "steps_resumed"), 20);
    cJSON_Delete(o);
    cli_run_free(&r);
    rlt_policy *p = load_policy(out);
    cr_assert_eq(p->algo, RLT_POLICY_ALGO_PPO);
    assert_has(p->about, "steps: 30 of 30", "about");
    assert_has(p->about, "resumed", "about");
    rlt_policy_destroy(p);

    /* what differs is refused */
    EXPECT_USAGE_ERROR("checkpoint '", "train", "--dataset", dataset, "--algo", "dqn", "--steps", "40", "--out", out,
                       "--resume", ckpt, FAST);
    EXPECT_USAGE_ERROR("algo ppo, this run asks for dqn", "train", "--dataset", dataset, "--algo", "dqn", "--steps",
                       "40", "--out", out, "--resume", ckpt, FAST);
    EXPECT_USAGE_ERROR("hidden layers 32,32, this run asks for 64", "train", "--dataset", dataset, "--hidden", "64",
                       "--steps", "40", "--out", out, "--resume", ckpt, FAST);
    EXPECT_USAGE_ERROR("not a training checkpoint", "train", "--dataset", dataset, "--steps", "40", "--out",
                       tmp_path("r.rlp"), "--resume", out, FAST);
}

Test(cli_train, ctrl_c_stops_with_a_checkpoint_and_the_policy)
{
    const char *out = tmp_path("c.rlp"), *ckpt = tmp_path("c.rlp.ckpt");
    const char *so = tmp_path("stdout"), *se = tmp_path("stderr");
    const char *const args[] = {"train", "--dataset", dataset, "--steps", "100000", "--envs", "2", "--out", out,
                                FAST, NULL};
    pid_t pid = cli_spawn(args, so, se);
    /* once the handler is there, training runs; half a second later it is
     * measuring (a first periodic checkpoint would take 500 steps) */
    for (int i = 0; !process_catches_sigint(pid); i++) {
        cr_assert_lt(i, 3000, "no SIGINT handler after 30 s");
        sleep_ms(10);
    }
    sleep_ms(500);
    cr_assert_eq(kill(pid, SIGINT), 0);
    int status = cli_wait(pid, RUN_LIMIT_S);
    char *o = tmp_file_read(so, NULL), *e = tmp_file_read(se, NULL);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d, stderr:\n%s", status, e);
    cr_assert_eq(strncmp(o, "interrupted at step ", 20), 0, "stdout:\n%s", o);
    long step = atol(o + 20);
    cr_assert_lt(step, 100000);
    cr_assert(file_exists(out) && file_exists(ckpt));
    free(o);
    free(e);
    char steps[32];
    snprintf(steps, sizeof steps, "%ld", step + 4);
    cli_run r = CLI("train", "--dataset", dataset, "--steps", steps, "--out", out, "--resume", ckpt, "--json", FAST);
    assert_ok(&r);
    cJSON *j = json_parse_object_line(r.out);
    cr_assert_eq(json_number_at(j, "steps"), step + 4);
    cr_assert_eq(json_number_at(j, "steps_resumed"), step);
    cJSON_Delete(j);
    cli_run_free(&r);
}

/* --init: PPO from a bc policy (made here, untrained: what matters is
 * where the networks start) gives a blind ppo policy that says where it
 * started and how; what --init cannot do is refused. */
Test(cli_train, init_fine_tunes_a_bc_policy)
{
    const char *bc_path = tmp_path("bc.rlp"), *out = tmp_path("ft.rlp");
    rlt_policy *bc = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_policy_create(RLT_POLICY_ALGO_BC, 2, (int[]){32, 32}, 1, &bc, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_policy_save(bc, bc_path, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_policy_destroy(bc);
    cli_run r = CLI("train", "--dataset", dataset, "--algo", "ppo", "--init", bc_path, "--steps", "20", "--envs", "2",
                    "--entropy", "0", "--critic-warmup", "8", "--out", out, "--json", FAST);
    assert_ok(&r);
    cli_run_free(&r);
    rlt_policy *p = load_policy(out);
    cr_assert_eq(p->algo, RLT_POLICY_ALGO_PPO);
    cr_assert(rlt_policy_is_blind(p));
    cr_assert_eq(rlt_mlp_get_spec(p->net)->layers[0].n_units, 32, "the hidden layers are the init's");
    assert_has(p->about, "ppo (blind actor)", "about");
    assert_has(p->about, "entropy 0, critic warm-up 8 steps", "about");
    assert_has(p->about, "started from: ", "about");
    assert_has(p->about, "bc.rlp (bc, blind)", "about");
    rlt_policy_destroy(p);

    EXPECT_USAGE_ERROR("give --algo ppo", "train", "--dataset", dataset, "--init", bc_path, "--steps", "10",
                       "--out", out, FAST);
    EXPECT_USAGE_ERROR("--init: ", "train", "--dataset", dataset, "--algo", "ppo", "--init", tmp_path("absent.rlp"),
                       "--steps", "10", "--out", out, FAST);
    EXPECT_USAGE_ERROR("not both", "train", "--dataset", dataset, "--algo", "ppo", "--init", bc_path, "--resume",
                       tmp_path("ft.rlp.ckpt"), "--steps", "30", "--out", out, FAST);
    EXPECT_USAGE_ERROR("--hidden 64, but the network of --init", "train", "--dataset", dataset, "--algo", "ppo",
                       "--init", bc_path, "--hidden", "64", "--steps", "10", "--out", out, FAST);
    EXPECT_USAGE_ERROR("--entropy", "train", "--dataset", dataset, "--algo", "ppo", "--entropy", "-1", "--steps",
                       "10", "--out", out, FAST);
    EXPECT_USAGE_ERROR("ppo_critic_warmup is an option of ppo", "train", "--dataset", dataset, "--critic-warmup",
                       "10", "--steps", "10", "--out", out, FAST);
}

Test(cli_train, bad_input_exits_2)
{
    const char *out = tmp_path("x.rlp");
    EXPECT_USAGE_ERROR("--dataset is required", "train", "--steps", "10", "--out", out);
    EXPECT_USAGE_ERROR("--steps is required", "train", "--dataset", dataset, "--out", out);
    EXPECT_USAGE_ERROR("--out is required", "train", "--dataset", dataset, "--steps", "10");
    EXPECT_USAGE_ERROR("--steps", "train", "--dataset", dataset, "--steps", "0", "--out", out);
    EXPECT_USAGE_ERROR("--envs", "train", "--dataset", dataset, "--steps", "10", "--envs", "300", "--out", out);
    EXPECT_USAGE_ERROR("unknown algorithm 'sarsa'", "train", "--dataset", dataset, "--steps", "10", "--algo", "sarsa",
                       "--out", out);
    EXPECT_USAGE_ERROR("--hidden: '0,5'", "train", "--dataset", dataset, "--steps", "10", "--hidden", "0,5", "--out",
                       out);
    EXPECT_USAGE_ERROR("--hidden: '64,'", "train", "--dataset", dataset, "--steps", "10", "--hidden", "64,", "--out",
                       out);
    EXPECT_USAGE_ERROR("--lr", "train", "--dataset", dataset, "--steps", "10", "--lr", "0", "--out", out);
    EXPECT_USAGE_ERROR("--gamma", "train", "--dataset", dataset, "--steps", "10", "--gamma", "1", "--out", out);
    EXPECT_USAGE_ERROR("three different files", "train", "--dataset", dataset, "--steps", "10", "--out", out,
                       "--checkpoint", out);
    EXPECT_USAGE_ERROR("--out: cannot write", "train", "--dataset", dataset, "--steps", "10", "--out",
                       tmp_path("no/such/dir/x.rlp"));
    EXPECT_USAGE_ERROR("--checkpoint: cannot write", "train", "--dataset", dataset, "--steps", "10", "--out", out,
                       "--checkpoint", tmp_path("no/x.ckpt"));
    EXPECT_USAGE_ERROR("--resume: cannot read", "train", "--dataset", dataset, "--steps", "10", "--out", out,
                       "--resume", tmp_path("absent.ckpt"));
    EXPECT_USAGE_ERROR("--dataset: ", "train", "--dataset", tmp_path("absent.txt"), "--steps", "10", "--out", out);
    const char *bad = tmp_path("bad.txt");
    tmp_file_write(bad, "# rltune shapes v1\ntrain nonsense\n", 34);
    EXPECT_USAGE_ERROR("--dataset: ", "train", "--dataset", bad, "--steps", "10", "--out", out);
    const char *tests_only = tmp_path("tests_only.txt");
    tmp_file_write(tests_only, "# rltune shapes v1\ntest matmul:M=16,N=16,K=16\n", 46);
    EXPECT_USAGE_ERROR("no training shapes", "train", "--dataset", tests_only, "--steps", "10", "--out", out);
    cr_assert(!file_exists(out), "a refused run wrote its policy");

    cli_run r = CLI("train", "--help");
    assert_ok(&r);
    assert_has(r.out, "--resume", "help");
    assert_has(r.out, "--checkpoint-every", "help");
    cli_run_free(&r);
}
