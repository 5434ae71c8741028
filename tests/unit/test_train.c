/* Unit tests of the LoopTune trainer (src/policy/train.h): DQN and PPO on a
 * synthetic evaluator (nothing compiled or measured: GFLOP/s is a known
 * function of the schedule that rewards parallel, vectorize and unroll and
 * punishes splits), so that a short run from a fixed seed must learn it:
 * the greedy rollout of the trained policy beats an untrained one's; one
 * seed gives a bit-identical policy; a run stopped and resumed from its
 * checkpoint ends bit-identical to an unbroken one, with the step count
 * continued; a checkpoint that does not match the options, or has a
 * damaged section, is refused with a message; the reward curve is a
 * well-formed SVG file; bad options are refused. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/train.h"

#include "../common/leaks.h"
#include "../common/tmp.h"
#include "../common/xml_check.h"

static char tmp_dir[] = "/tmp/rlt_train_XXXXXX";

static void setup(void) { tmp_dir_use(tmp_dir); }

static void teardown(void) { tmp_remove_tree(tmp_dir); }

TestSuite(train, .init = setup, .fini = teardown, .timeout = 120);

/* ---- the synthetic evaluator --------------------------------------------- */

#define SYNTH_PEAK 10.0 /* rewards are GFLOP/s gains over this */

static int count_lines(const char *text, const char *prefix)
{
    int n = 0;
    size_t len = strlen(prefix);
    for (const char *p = text; p; p = strchr(p, '\n')) {
        if (*p == '\n') p++;
        n += strncmp(p, prefix, len) == 0;
    }
    return n;
}

/* 1 GFLOP/s, +3 with a parallel loop, +3 with a vectorized one, +2 with an
 * unrolled one, -0.25 per split (at least 0.1). The best in 10 actions from
 * i, j, k with the cursor on i: parallel, down, swap_down, vectorize, up,
 * unroll: 9 GFLOP/s, a return of 0.8. */
static rlt_status synth_evaluate(void *ctx, const rlt_env_eval_request *req, rlt_env_eval_result *out,
                                 rlt_diag *diag)
{
    (void)diag;
    int *n_calls = ctx;
    (*n_calls)++;
    double g = 1.0 + 3.0 * (count_lines(req->schedule, "parallel ") > 0) +
               3.0 * (count_lines(req->schedule, "vectorize ") > 0) +
               2.0 * (count_lines(req->schedule, "unroll ") > 0) - 0.25 * count_lines(req->schedule, "split ");
    out->status = RLT_STATUS_OK;
    out->gflops = fmax(g, 0.1);
    return RLT_STATUS_OK;
}

static int n_synth_calls;

/* ---- datasets ------------------------------------------------------------ */

static char *train_specs[] = {"matmul:M=16,N=16,K=16", "matmul:M=32,N=16,K=16", "matmul:M=16,N=32,K=32",
                              "matmul:M=32,N=32,K=16"};
static bool train_is_test[] = {false, false, false, true};
static const rlt_shape_set shapes = {.n = 4, .specs = train_specs, .is_test = train_is_test};

static char *other_specs[] = {"matmul:M=16,N=16,K=16", "matmul:M=64,N=16,K=16"};
static bool other_is_test[] = {false, false};
static const rlt_shape_set other_shapes = {.n = 2, .specs = other_specs, .is_test = other_is_test};

static rlt_train_opts base_opts(const char *algo, int64_t n_steps, uint64_t seed)
{
    return (rlt_train_opts){
        .algo = algo,
        .shapes = &shapes,
        .dataset_name = "synthetic",
        .n_steps = n_steps,
        .seed = seed,
        .n_envs = 4,
        .n_hidden = 2,
        .hidden = {64, 64},
        .env = {.peak_gflops = SYNTH_PEAK, .evaluate = synth_evaluate, .evaluate_ctx = &n_synth_calls},
    };
}

static rlt_policy *train_ok(const rlt_train_opts *o, rlt_train_stats *stats)
{
    rlt_policy *p = NULL;
    rlt_diag d = {0};
    rlt_status st = rlt_train(o, &p, stats, &d);
    cr_assert_eq(st, RLT_STATUS_OK, "%s: %s", rlt_status_str(st), d.message);
    cr_assert_not_null(p);
    return p;
}

/* The return of the policy's greedy rollout of 10 actions on `spec`. */
static double greedy_return(const rlt_policy *p, const char *spec)
{
    rlt_diag d = {0};
    rlt_env *env = NULL;
    rlt_env_opts eo = {.peak_gflops = SYNTH_PEAK, .evaluate = synth_evaluate, .evaluate_ctx = &n_synth_calls};
    cr_assert_eq(rlt_env_create(spec, &eo, &env, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_env_reset(env, &d), RLT_STATUS_OK, "%s", d.message);
    double total = 0;
    bool is_done = false;
    for (int t = 0; t < 10 && !is_done; t++) {
        float obs[RLT_ENV_OBS_LEN], scores[RLT_ENV_N_ACTIONS];
        double r = 0;
        cr_assert_eq(rlt_env_observe(env, obs, RLT_ENV_OBS_LEN, &d), RLT_STATUS_OK);
        cr_assert_eq(rlt_policy_scores(p, 1, obs, scores, &d), RLT_STATUS_OK, "%s", d.message);
        cr_assert_eq(rlt_env_step(env, rlt_policy_best_action(scores), &r, &is_done, &d), RLT_STATUS_OK, "%s",
                     d.message);
        total += r;
    }
    rlt_env_destroy(env);
    return total;
}

/* The mean greedy return over every shape of the dataset, test included. */
static double mean_greedy_return(const rlt_policy *p)
{
    double sum = 0;
    for (int k = 0; k < shapes.n; k++) sum += greedy_return(p, shapes.specs[k]);
    return sum / shapes.n;
}

static double untrained_return(const char *algo, const int *hidden, uint64_t seed)
{
    rlt_policy *p = NULL;
    rlt_diag d = {0};
    rlt_policy_algo a;
    cr_assert(rlt_policy_algo_from_str(algo, &a));
    cr_assert_eq(rlt_policy_create(a, 2, hidden, seed, &p, &d), RLT_STATUS_OK, "%s", d.message);
    double r = mean_greedy_return(p);
    rlt_policy_destroy(p);
    return r;
}

/* The policy file's bytes, written without `about` (it holds the wall time). */
static char *policy_bytes(rlt_policy *p, const char *name, size_t *out_len)
{
    rlt_diag d = {0};
    cr_assert_eq(rlt_policy_set_about(p, NULL, &d), RLT_STATUS_OK);
    const char *path = tmp_path(name);
    cr_assert_eq(rlt_policy_save(p, path, &d), RLT_STATUS_OK, "%s", d.message);
    char *bytes = NULL;
    cr_assert_eq(rlt_file_read(path, &bytes, out_len, &d), RLT_STATUS_OK, "%s", d.message);
    return bytes;
}

static void assert_same_policy(rlt_policy *a, rlt_policy *b, const char *what)
{
    size_t len_a = 0, len_b = 0;
    char *x = policy_bytes(a, "a.rlp", &len_a), *y = policy_bytes(b, "b.rlp", &len_b);
    cr_assert(len_a == len_b && memcmp(x, y, len_a) == 0, "%s: the policy files differ", what);
    rlt_free(x);
    rlt_free(y);
}

/* ---- learning ------------------------------------------------------------- */

/* Trains from each seed and rolls the policies out greedily: each beats
 * the untrained policy clearly, and on average they do at least as well as
 * parallel alone (0.3; parallel and unroll make 0.5, with vectorize 0.8;
 * they reach 0.44 to 0.55). The episodes' mean return rises during
 * training. About one PPO run in ten ends in a poorer greedy policy (its
 * sampling policy still improves): two seeds keep the test from depending
 * on which run that is on a given CPU. */
static void check_learns(const char *algo, int64_t n_steps, int n_seeds, int hidden)
{
    int layers[] = {hidden, hidden};
    double untrained = untrained_return(algo, layers, 7), sum = 0;
    for (int k = 0; k < n_seeds; k++) {
        rlt_train_opts o = base_opts(algo, n_steps, 7 + (uint64_t)k);
        o.hidden[0] = o.hidden[1] = hidden;
        if (strcmp(algo, "dqn") == 0) {
            o.lr = 1e-3; /* a small network, a short run */
            o.dqn_updates_per_step = 2;
        }
        rlt_train_stats stats;
        rlt_policy *p = train_ok(&o, &stats);
        double trained = mean_greedy_return(p);
        sum += trained;
        cr_log_info("%s, seed %d: greedy return %.3f trained, %.3f untrained; episodes' mean return %.3f first 10%%, "
                    "%.3f last 10%%; %lld updates",
                    algo, 7 + k, trained, untrained, stats.mean_return_first, stats.mean_return_last,
                    (long long)stats.n_updates);
        cr_assert_eq(stats.n_steps, n_steps);
        cr_assert_str_eq(stats.algo, algo);
        cr_assert_gt(stats.n_episodes, n_steps / 10 - 4);
        cr_assert_gt(stats.n_updates, 0);
        cr_assert_gt(trained, untrained + 0.15, "%s: trained %.3f, untrained %.3f", algo, trained, untrained);
        cr_assert_gt(stats.mean_return_last, stats.mean_return_first + 0.1);
        cr_assert_not_null(p->about);
        cr_assert_not_null(strstr(p->about, algo), "%s", p->about);
        rlt_policy_destroy(p);
    }
    cr_assert_geq(sum / n_seeds, 0.3, "%s: the trained policies' greedy return is only %.3f (the best is 0.8)", algo,
                  sum / n_seeds);
    assert_no_leaks();
}

/* (32 units: Adam's step over every parameter is most of a DQN update) */
Test(train, dqn_learns_the_synthetic_rewards) { check_learns("dqn", 1600, 1, 32); }

Test(train, ppo_learns_the_synthetic_rewards) { check_learns("ppo", 4800, 2, 64); }

/* ---- determinism, checkpoints, resume ------------------------------------- */

static void check_same_seed_same_policy(const char *algo)
{
    rlt_train_opts o = base_opts(algo, 240, 3);
    rlt_policy *a = train_ok(&o, NULL), *b = train_ok(&o, NULL);
    assert_same_policy(a, b, algo);
    o.seed = 4;
    rlt_policy *c = train_ok(&o, NULL);
    size_t len_a = 0, len_c = 0;
    char *x = policy_bytes(a, "a.rlp", &len_a), *y = policy_bytes(c, "c.rlp", &len_c);
    cr_assert(len_a != len_c || memcmp(x, y, len_a) != 0, "%s: seeds 3 and 4 gave the same policy", algo);
    rlt_free(x);
    rlt_free(y);
    rlt_policy_destroy(a);
    rlt_policy_destroy(b);
    rlt_policy_destroy(c);
    assert_no_leaks();
}

Test(train, dqn_same_seed_gives_a_bit_identical_policy) { check_same_seed_same_policy("dqn"); }

Test(train, ppo_same_seed_gives_a_bit_identical_policy) { check_same_seed_same_policy("ppo"); }

/* Sets the stop flag once the run has done `at` steps. */
typedef struct stop_at {
    volatile sig_atomic_t flag;
    int64_t at;
    int n_calls, n_checkpoints;
    int64_t last_done;
} stop_at;

static void stop_when_due(const rlt_train_progress *p, void *ctx)
{
    stop_at *s = ctx;
    s->n_calls++;
    s->n_checkpoints += p->is_checkpoint;
    cr_assert_gt(p->n_steps_done, s->last_done, "progress goes forward");
    s->last_done = p->n_steps_done;
    cr_assert_eq(p->n_steps_total, 480);
    if (s->at > 0 && p->n_steps_done >= s->at) s->flag = 1;
}

/* A run stopped at step 200 (by the flag, as Ctrl-C does) and resumed from
 * its checkpoint to 480 ends with the policy an unbroken run of 480 steps
 * makes, bit for bit: the checkpoint keeps the networks, Adam, the RNG, the
 * replay buffer or the rollout in progress, and the episodes in progress
 * (replayed on the resume). */
static void check_resume(const char *algo)
{
    const char *ckpt = tmp_path("run.ckpt");
    stop_at unbroken = {0};
    rlt_train_opts o = base_opts(algo, 480, 11);
    o.checkpoint_path = tmp_path("unbroken.ckpt");
    o.checkpoint_every = 100;
    o.progress = stop_when_due;
    o.progress_ctx = &unbroken;
    rlt_train_stats stats;
    rlt_policy *whole = train_ok(&o, &stats);
    cr_assert_eq(stats.n_steps, 480);
    cr_assert_eq(stats.n_steps_resumed, 0);
    cr_assert(!stats.is_interrupted);
    cr_assert_eq(stats.n_checkpoints, 6, "one at the start, 4 on the way (100, 200, 300, 400), one at the end: %d",
                 stats.n_checkpoints);
    cr_assert_eq(unbroken.n_checkpoints, 4);
    cr_assert_eq(unbroken.n_calls, 480 / 4);

    stop_at first = {.at = 200};
    o.checkpoint_path = ckpt;
    o.progress_ctx = &first;
    o.stop = &first.flag;
    rlt_policy *part = train_ok(&o, &stats);
    cr_assert(stats.is_interrupted);
    cr_assert_eq(stats.n_steps, 200);
    int64_t episodes_before = stats.n_episodes;
    rlt_policy_destroy(part);

    /* the checkpoint is a usable policy too */
    rlt_policy *loaded = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_policy_load(ckpt, &loaded, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_not_null(strstr(loaded->about, "checkpoint"), "%s", loaded->about);
    rlt_policy_destroy(loaded);

    stop_at second = {0};
    second.last_done = 200;
    rlt_train_opts ro = base_opts(NULL, 480, 0); /* algo and seed from the checkpoint */
    ro.n_hidden = 0;                             /* the network too */
    ro.n_envs = 0;
    ro.resume_path = ckpt;
    ro.checkpoint_path = ckpt;
    ro.progress = stop_when_due;
    ro.progress_ctx = &second;
    rlt_policy *resumed = train_ok(&ro, &stats);
    cr_assert_eq(stats.n_steps, 480);
    cr_assert_eq(stats.n_steps_resumed, 200);
    cr_assert_gt(stats.n_episodes, episodes_before);
    cr_assert_str_eq(stats.algo, algo);
    cr_assert_eq(stats.seed, 11);
    cr_assert_eq(second.n_calls, (480 - 200) / 4);
    assert_same_policy(whole, resumed, algo);
    rlt_policy_destroy(whole);
    rlt_policy_destroy(resumed);
    assert_no_leaks();
}

Test(train, dqn_resume_continues_as_an_unbroken_run) { check_resume("dqn"); }

Test(train, ppo_resume_continues_as_an_unbroken_run) { check_resume("ppo"); }

static void expect_refused(const rlt_train_opts *o, rlt_status want, const char *needle)
{
    rlt_policy *p = NULL;
    rlt_diag d = {0};
    rlt_status st = rlt_train(o, &p, NULL, &d);
    cr_assert_eq(st, want, "%s (want %s): %s", rlt_status_str(st), rlt_status_str(want), d.message);
    cr_assert_null(p);
    cr_assert_not_null(strstr(d.message, needle), "message lacks \"%s\": %s", needle, d.message);
}

Test(train, mismatched_resume_is_refused)
{
    const char *ckpt = tmp_path("m.ckpt");
    rlt_train_opts o = base_opts("dqn", 40, 5);
    o.checkpoint_path = ckpt;
    rlt_policy_destroy(train_ok(&o, NULL));

    rlt_train_opts r = base_opts("ppo", 80, 0);
    r.resume_path = ckpt;
    expect_refused(&r, RLT_STATUS_INVALID_ARGUMENT, "algo dqn, this run asks for ppo");
    r = base_opts("dqn", 80, 0);
    r.resume_path = ckpt;
    r.hidden[1] = 32;
    expect_refused(&r, RLT_STATUS_INVALID_ARGUMENT, "hidden layers 64,64, this run asks for 64,32");
    r = base_opts("dqn", 80, 0);
    r.resume_path = ckpt;
    r.shapes = &other_shapes;
    expect_refused(&r, RLT_STATUS_INVALID_ARGUMENT, "another dataset ('synthetic'): training shape 2");
    r = base_opts("dqn", 80, 6);
    r.resume_path = ckpt;
    expect_refused(&r, RLT_STATUS_INVALID_ARGUMENT, "seed 5, this run asks for 6");
    r = base_opts("dqn", 80, 0);
    r.resume_path = ckpt;
    r.lr = 0.01;
    expect_refused(&r, RLT_STATUS_INVALID_ARGUMENT, "lr 0.0005, this run asks for 0.01");
    r = base_opts("dqn", 80, 0);
    r.resume_path = ckpt;
    r.n_envs = 2;
    expect_refused(&r, RLT_STATUS_INVALID_ARGUMENT, "envs 4, this run asks for 2");

    /* a policy file is not a checkpoint */
    rlt_policy *p = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_policy_load(ckpt, &p, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_policy_save(p, tmp_path("plain.rlp"), &d), RLT_STATUS_OK, "%s", d.message);
    rlt_policy_destroy(p);
    r = base_opts("dqn", 80, 0);
    r.resume_path = tmp_path("plain.rlp");
    expect_refused(&r, RLT_STATUS_INVALID_ARGUMENT, "not a training checkpoint");
    /* nor is a damaged file */
    tmp_file_write(tmp_path("junk.ckpt"), "RLTUNEAG junk", 13);
    r.resume_path = tmp_path("junk.ckpt");
    expect_refused(&r, RLT_STATUS_PARSE_ERROR, "junk.ckpt");
    r.resume_path = tmp_path("absent.ckpt");
    expect_refused(&r, RLT_STATUS_IO_ERROR, "absent.ckpt");
    /* the matching resume works, and a finished run resumes to nothing more */
    r = base_opts(NULL, 36, 0);
    r.resume_path = ckpt;
    expect_refused(&r, RLT_STATUS_INVALID_ARGUMENT, "has done 40 steps, more than the 36 asked for");
    r = base_opts(NULL, 40, 0);
    r.resume_path = ckpt;
    rlt_train_stats stats;
    rlt_policy_destroy(train_ok(&r, &stats));
    cr_assert_eq(stats.n_steps, 40);
    cr_assert_eq(stats.n_steps_resumed, 40);
    assert_no_leaks();
}

/* A copy of checkpoint `from` in `to` with section `damaged` cut to half
 * its length (every other section as it was). */
static void copy_damaged(const char *from, const char *to, const char *damaged)
{
    static const char *const sections[] = {"algo",        "obs_version",   "net",           "about",
                                           "train_version", "train_opts",  "train_dataset", "train_state",
                                           "train_slots", "train_episodes", "dqn_target",   "dqn_state",
                                           "dqn_replay"};
    rlt_diag d = {0};
    rlt_agent_file *in = NULL, *out = NULL;
    cr_assert_eq(rlt_agent_file_load(from, &in, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_agent_file_create("policy", NULL, &out, &d), RLT_STATUS_OK);
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
        const char *data = NULL;
        size_t len = 0;
        cr_assert_eq(rlt_agent_file_get_bytes(in, sections[i], &data, &len, &d), RLT_STATUS_OK, "%s", d.message);
        if (strcmp(sections[i], damaged) == 0) len /= 2;
        cr_assert_eq(rlt_agent_file_put_bytes(out, sections[i], data, len, &d), RLT_STATUS_OK, "%s", d.message);
    }
    cr_assert_eq(rlt_agent_file_save(out, to, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_agent_file_destroy(in);
    rlt_agent_file_destroy(out);
}

Test(train, damaged_checkpoint_sections_are_refused)
{
    const char *ckpt = tmp_path("d.ckpt"), *bad = tmp_path("bad.ckpt");
    rlt_train_opts o = base_opts("dqn", 48, 5);
    o.checkpoint_path = ckpt;
    o.dqn_learn_start = 8;
    rlt_policy_destroy(train_ok(&o, NULL));
    static const char *const damaged[] = {"train_opts", "train_state", "train_slots", "train_episodes", "dqn_state",
                                          "dqn_replay"};
    for (size_t i = 0; i < sizeof damaged / sizeof damaged[0]; i++) {
        copy_damaged(ckpt, bad, damaged[i]);
        rlt_train_opts r = base_opts(NULL, 96, 0);
        r.resume_path = bad;
        expect_refused(&r, RLT_STATUS_PARSE_ERROR, damaged[i]);
    }
    copy_damaged(ckpt, bad, "dqn_target");
    rlt_train_opts r = base_opts(NULL, 96, 0);
    r.resume_path = bad;
    expect_refused(&r, RLT_STATUS_PARSE_ERROR, "");
    /* the undamaged copy resumes */
    copy_damaged(ckpt, bad, "none");
    rlt_train_stats stats;
    rlt_policy_destroy(train_ok(&r, &stats));
    cr_assert_eq(stats.n_steps_resumed, 48);
    assert_no_leaks();
}

/* ---- the curve, bad options ----------------------------------------------- */

Test(train, the_curve_is_a_well_formed_svg_file)
{
    const char *curve = tmp_path("curve.svg");
    rlt_train_opts o = base_opts("dqn", 200, 1);
    o.curve_path = curve;
    rlt_policy_destroy(train_ok(&o, NULL));
    char *text = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_text_file_read(curve, &text, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert(strncmp(text, "<?xml", 5) == 0 || strncmp(text, "<svg", 4) == 0, "%.80s", text);
    size_t len = strlen(text);
    cr_assert(len > 7 && strcmp(text + len - 7, "</svg>\n") == 0, "ends with %s", text + len - 20);
    char err[256];
    cr_assert(xml_check(text, err, sizeof err), "not well-formed XML: %s", err);
    cr_assert_not_null(strstr(text, "<polyline"), "no line drawn");
    cr_assert_not_null(strstr(text, "env steps"));
    rlt_free(text);
    assert_no_leaks();
}

Test(train, bad_options_are_refused)
{
    rlt_train_opts o = base_opts("dqn", 0, 1);
    expect_refused(&o, RLT_STATUS_INVALID_ARGUMENT, "0 steps");
    o = base_opts("sarsa", 10, 1);
    expect_refused(&o, RLT_STATUS_INVALID_ARGUMENT, "unknown algorithm 'sarsa'");
    o = base_opts("ppo", 10, 1);
    o.dqn_batch = 32;
    expect_refused(&o, RLT_STATUS_INVALID_ARGUMENT, "dqn_batch is an option of dqn, not of ppo");
    o = base_opts("dqn", 10, 1);
    o.gamma = 1.5;
    expect_refused(&o, RLT_STATUS_INVALID_ARGUMENT, "gamma 1.5 out of range");
    o = base_opts("dqn", 10, 1);
    o.n_envs = 1000;
    expect_refused(&o, RLT_STATUS_INVALID_ARGUMENT, "envs 1000 out of range");
    o = base_opts("dqn", 10, 1);
    o.hidden[0] = 0;
    expect_refused(&o, RLT_STATUS_INVALID_ARGUMENT, "hidden layer 1 has 0 units");
    bool all_test[] = {true};
    char *one[] = {"matmul:M=16,N=16,K=16"};
    rlt_shape_set tests_only = {.n = 1, .specs = one, .is_test = all_test};
    o = base_opts("dqn", 10, 1);
    o.shapes = &tests_only;
    expect_refused(&o, RLT_STATUS_INVALID_ARGUMENT, "no training shapes");
    bool is_train[] = {false};
    char *bad[] = {"matmul:M=0,N=16,K=16"};
    rlt_shape_set bad_shape = {.n = 1, .specs = bad, .is_test = is_train};
    o = base_opts("dqn", 10, 1);
    o.shapes = &bad_shape;
    rlt_policy *p = NULL;
    rlt_diag d = {0};
    cr_assert_neq(rlt_train(&o, &p, NULL, &d), RLT_STATUS_OK);
    cr_assert_not_null(strstr(d.message, "matmul:M=0"), "%s", d.message);
    o = base_opts("dqn", 10, 1);
    o.checkpoint_path = tmp_path("no/such/dir/x.ckpt");
    expect_refused(&o, RLT_STATUS_IO_ERROR, "no/such/dir");
    assert_no_leaks();
}

/* ---- fine-tuning a policy (--init) ------------------------------------------ */

/* A bc policy of the test's network size, untrained. */
static rlt_policy *blind_policy(uint64_t seed)
{
    rlt_policy *p = NULL;
    rlt_diag d = {0};
    int hidden[] = {64, 64};
    cr_assert_eq(rlt_policy_create(RLT_POLICY_ALGO_BC, 2, hidden, seed, &p, &d), RLT_STATUS_OK, "%s", d.message);
    return p;
}

static bool same_params(const rlt_mlp *a, const rlt_mlp *b)
{
    size_t n = rlt_mlp_n_params(a);
    return n == rlt_mlp_n_params(b) &&
           memcmp(rlt_mlp_params((rlt_mlp *)a), rlt_mlp_params((rlt_mlp *)b), n * sizeof(float)) == 0;
}

/* Stopped before its first step, a run started from a bc policy hands back
 * that policy's network as a ppo actor that is still blind: its scores do
 * not move with the observation's GFLOP/s, before and after a save and
 * load, and `about` names where it started. */
Test(train, ppo_from_a_bc_policy_starts_from_its_network_and_stays_blind)
{
    rlt_policy *bc = blind_policy(21);
    volatile sig_atomic_t stop = 1;
    rlt_train_opts o = base_opts("ppo", 240, 5);
    o.n_hidden = 0; /* the init's */
    o.init = bc;
    o.init_name = "cloned.rlp";
    o.stop = &stop;
    rlt_train_stats stats;
    rlt_policy *p = train_ok(&o, &stats);
    cr_assert(stats.is_interrupted);
    cr_assert_eq(stats.n_steps, 0);
    cr_assert_eq(p->algo, RLT_POLICY_ALGO_PPO);
    cr_assert(rlt_policy_is_blind(p));
    cr_assert(same_params(p->net, bc->net), "the actor starts as the bc network");
    cr_assert_not_null(strstr(p->about, "started from: cloned.rlp (bc, blind)"), "%s", p->about);

    rlt_diag d = {0};
    const char *path = tmp_path("ft.rlp");
    rlt_policy *loaded = NULL;
    cr_assert_eq(rlt_policy_save(p, path, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_policy_load(path, &loaded, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert(rlt_policy_is_blind(loaded) && loaded->algo == RLT_POLICY_ALGO_PPO);
    rlt_env *env = NULL;
    rlt_env_opts eo = {.peak_gflops = SYNTH_PEAK, .evaluate = synth_evaluate, .evaluate_ctx = &n_synth_calls};
    cr_assert_eq(rlt_env_create("matmul:M=16,N=32,K=32", &eo, &env, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_env_reset(env, &d), RLT_STATUS_OK, "%s", d.message);
    float obs[2 * RLT_ENV_OBS_LEN], scores[2 * RLT_ENV_N_ACTIONS];
    cr_assert_eq(rlt_env_observe(env, obs, RLT_ENV_OBS_LEN, &d), RLT_STATUS_OK);
    memcpy(obs + RLT_ENV_OBS_LEN, obs, RLT_ENV_OBS_LEN * sizeof(float));
    obs[RLT_ENV_OBS_LEN + RLT_ENV_OBS_GFLOPS] += 0.5f;
    cr_assert_eq(rlt_policy_scores(loaded, 2, obs, scores, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_arr_eq(scores, scores + RLT_ENV_N_ACTIONS, RLT_ENV_N_ACTIONS * sizeof(float));
    /* a ppo policy trained from scratch does read it */
    rlt_policy *seeing = train_ok(&(rlt_train_opts){.algo = "ppo", .shapes = &shapes, .n_steps = 8, .seed = 5,
                                                    .n_envs = 4, .n_hidden = 2, .hidden = {64, 64}, .env = eo},
                                  NULL);
    cr_assert(!rlt_policy_is_blind(seeing));
    rlt_policy_destroy(seeing);
    rlt_env_destroy(env);
    rlt_policy_destroy(loaded);
    rlt_policy_destroy(p);
    rlt_policy_destroy(bc);
    assert_no_leaks();
}

/* Fine-tuned by PPO on the synthetic rewards, a blind policy learns them
 * as one trained from scratch does (check_learns), and a run stopped and
 * resumed keeps the actor blind and the start in `about`. */
Test(train, ppo_fine_tunes_a_blind_policy)
{
    rlt_policy *bc = blind_policy(22);
    int layers[] = {64, 64};
    double untrained = untrained_return("ppo", layers, 7);
    rlt_train_opts o = base_opts("ppo", 4800, 7);
    o.init = bc;
    o.init_name = "cloned.rlp";
    rlt_train_stats stats;
    rlt_policy *p = train_ok(&o, &stats);
    double trained = mean_greedy_return(p);
    cr_log_info("fine-tuned: greedy return %.3f, untrained %.3f; episodes' mean return %.3f -> %.3f", trained,
                untrained, stats.mean_return_first, stats.mean_return_last);
    cr_assert(rlt_policy_is_blind(p));
    cr_assert_gt(trained, untrained + 0.15, "trained %.3f, untrained %.3f", trained, untrained);
    cr_assert_gt(stats.mean_return_last, stats.mean_return_first + 0.1);
    rlt_policy_destroy(p);

    stop_at first = {.at = 200};
    o.n_steps = 480;
    o.checkpoint_path = tmp_path("ft.ckpt");
    o.progress = stop_when_due;
    o.progress_ctx = &first;
    o.stop = &first.flag;
    rlt_policy_destroy(train_ok(&o, &stats));
    cr_assert(stats.is_interrupted);
    rlt_train_opts ro = base_opts(NULL, 480, 0);
    ro.n_hidden = 0;
    ro.resume_path = o.checkpoint_path;
    rlt_policy *resumed = train_ok(&ro, &stats);
    cr_assert_eq(stats.n_steps_resumed, 200);
    cr_assert(rlt_policy_is_blind(resumed));
    cr_assert_not_null(strstr(resumed->about, "started from: cloned.rlp (bc, blind)"), "%s", resumed->about);
    rlt_policy_destroy(resumed);
    rlt_policy_destroy(bc);
    assert_no_leaks();
}

Test(train, bad_init_is_refused)
{
    rlt_policy *bc = blind_policy(23);
    rlt_train_opts o = base_opts("dqn", 10, 1);
    o.init = bc;
    o.init_name = "cloned.rlp";
    expect_refused(&o, RLT_STATUS_INVALID_ARGUMENT, "give --algo ppo");
    o.algo = "ppo";
    o.hidden[0] = 32;
    expect_refused(&o, RLT_STATUS_INVALID_ARGUMENT, "--hidden 32,64, but the network of --init 'cloned.rlp' has");
    o.hidden[0] = 64;
    o.resume_path = tmp_path("none.ckpt");
    expect_refused(&o, RLT_STATUS_INVALID_ARGUMENT, "not both");
    rlt_policy *dqn = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_policy_create(RLT_POLICY_ALGO_DQN, 2, (int[]){64, 64}, 1, &dqn, &d), RLT_STATUS_OK);
    o = base_opts("ppo", 10, 1);
    o.init = dqn;
    o.init_name = "q.rlp";
    expect_refused(&o, RLT_STATUS_INVALID_ARGUMENT, "'q.rlp' is a dqn policy");
    rlt_policy_destroy(dqn);
    rlt_policy_destroy(bc);
    assert_no_leaks();
}
