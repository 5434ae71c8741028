/* Unit tests of state datasets and their replay (src/env/dataset.c,
 * rlt_env_dataset_make and rlt_env_opts.replay_path, docs/env.md "State
 * datasets"):
 *  - the walk finds every state within the depth: random walks of the
 *    evaluator's env stay inside the replay, with the same rewards;
 *  - a replay masks exactly the actions to states it lacks, and refuses
 *    them; it starts only at states it holds;
 *  - max_states cuts a level by the seed; the same options give the same
 *    bytes; a stop writes the states evaluated so far;
 *  - failed kernels keep their status and message; the dataset's thread
 *    count and peak; prefetch and reset_batch on a replay;
 *  - every kind of malformed file refused with the file, the line and what
 *    was wrong; bad options;
 *  - a live dataset (-O1) replayed without a compiler;
 *  - out of memory at every allocation of make, load and step.
 *
 * States are scored by a fake evaluator (a number from the nest's hash)
 * except in the test that says it measures. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env/env.h"

#include "../common/leaks.h"
#include "../common/tmp.h"

static char tmp_dir[] = "/tmp/rlt_env_dataset_XXXXXX";

static void setup(void) { tmp_dir_use(tmp_dir); }

static void teardown(void) { tmp_remove_tree(tmp_dir); }

TestSuite(env_dataset, .init = setup, .fini = teardown, .timeout = 120);

#define MM "matmul:M=12,N=10,K=8"
#define PEAK 100.0

/* ---- helpers ------------------------------------------------------------ */

typedef struct fake_eval {
    int n_calls;
    bool has_failures; /* every seventh state's kernel fails, with a message of two lines */
} fake_eval;

static double fake_gflops(uint64_t hash) { return 1.0 + (double)(hash % 1000) / 100.0; }

static rlt_status fake_evaluate(void *ctx, const rlt_env_eval_request *req, rlt_env_eval_result *out,
                                rlt_diag *diag)
{
    (void)diag;
    fake_eval *f = ctx;
    f->n_calls++;
    out->status = RLT_STATUS_OK;
    out->gflops = fake_gflops(req->nest_hash);
    if (f->has_failures && req->nest_hash % 7 == 0) {
        out->status = RLT_STATUS_RUN_ERROR;
        snprintf(out->message, sizeof out->message, "crashed\n\tat line 2");
    }
    return RLT_STATUS_OK;
}

static rlt_env_dataset_opts fake_opts(fake_eval *f, int depth)
{
    return (rlt_env_dataset_opts){
        .depth = depth,
        .env = {.peak_gflops = PEAK, .evaluate = fake_evaluate, .evaluate_ctx = f},
    };
}

/* Makes a dataset with `o` into tmp `name`; returns its path. */
static const char *make(const char *spec, const char *name, const rlt_env_dataset_opts *o,
                        rlt_env_dataset_result *r)
{
    const char *path = tmp_path(name);
    rlt_diag d = {0};
    rlt_env_dataset_result scratch;
    cr_assert_eq(rlt_env_dataset_make(spec, path, o, r ? r : &scratch, &d), RLT_STATUS_OK, "%s", d.message);
    return path;
}

static rlt_env *replay_env(const char *spec, const char *path)
{
    rlt_env_opts o = {.replay_path = path};
    rlt_env *env = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_create(spec, &o, &env, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_env_reset(env, &d), RLT_STATUS_OK, "%s", d.message);
    return env;
}

static rlt_env *fake_env(const char *spec, fake_eval *f)
{
    rlt_env_opts o = {.peak_gflops = PEAK, .evaluate = fake_evaluate, .evaluate_ctx = f};
    rlt_env *env = NULL;
    cr_assert_eq(rlt_env_create(spec, &o, &env, NULL), RLT_STATUS_OK);
    cr_assert_eq(rlt_env_reset(env, NULL), RLT_STATUS_OK);
    return env;
}

static int random_legal(const rlt_env *env, rlt_rng *rng, bool with_stop)
{
    bool mask[RLT_ENV_N_ACTIONS];
    rlt_env_action_mask(env, mask);
    int legal[RLT_ENV_N_ACTIONS], n = 0;
    for (int a = 0; a < RLT_ENV_N_ACTIONS; a++)
        if (mask[a] && (with_stop || a != RLT_ENV_ACTION_STOP)) legal[n++] = a;
    cr_assert_gt(n, 0);
    return legal[rlt_rng_below(rng, (uint64_t)n)];
}

/* ---- the walk and the replay --------------------------------------------- */

Test(env_dataset, every_state_within_the_depth_is_replayed_with_the_same_rewards)
{
    fake_eval f = {0};
    rlt_env_dataset_opts o = fake_opts(&f, 3);
    rlt_env_dataset_result r;
    const char *path = make(MM, "mm.states", &o, &r);
    cr_assert_gt(r.n_states, 100, "%d states", r.n_states);
    cr_assert_eq(r.n_found, r.n_states);
    cr_assert_eq(r.depth_complete, 3);
    cr_assert_eq(f.n_calls, r.n_states, "each state evaluated once");
    cr_assert_eq(r.n_failed, 0);
    cr_assert_eq(r.peak_gflops, PEAK);
    cr_assert(!r.was_stopped);

    rlt_env *live = fake_env(MM, &f), *replay = replay_env(MM, path);
    cr_assert_eq(rlt_env_peak_gflops(replay), PEAK);
    rlt_rng rng;
    rlt_rng_seed(&rng, 7);
    for (int walk = 0; walk < 200; walk++) {
        cr_assert_eq(rlt_env_reset(live, NULL), RLT_STATUS_OK);
        cr_assert_eq(rlt_env_reset(replay, NULL), RLT_STATUS_OK);
        for (int s = 0; s < 3; s++) {
            int a = random_legal(live, &rng, false);
            double r_live = 0, r_replay = 0;
            rlt_diag d = {0};
            cr_assert_eq(rlt_env_step(live, a, &r_live, NULL, NULL), RLT_STATUS_OK);
            cr_assert_eq(rlt_env_step(replay, a, &r_replay, NULL, &d), RLT_STATUS_OK, "walk %d step %d %s: %s",
                         walk, s, rlt_env_action_name(a), d.message);
            cr_assert_eq(rlt_env_state_hash(replay), rlt_env_state_hash(live));
            cr_assert_float_eq(r_replay, r_live, 1e-9);
            cr_assert_float_eq(rlt_env_gflops(replay), fake_gflops(rlt_env_state_hash(live)), 1e-9);
            float a_obs[RLT_ENV_OBS_LEN], b_obs[RLT_ENV_OBS_LEN];
            rlt_env_observe(live, a_obs, RLT_ENV_OBS_LEN, NULL);
            rlt_env_observe(replay, b_obs, RLT_ENV_OBS_LEN, NULL);
            /* the observations differ only in the mask (the replay's leaves the dataset out) */
            for (int k = 0; k < RLT_ENV_OBS_MASK; k++)
                cr_assert_float_eq(a_obs[k], b_obs[k], 1e-6, "observation[%d]", k);
        }
    }
    rlt_env_stats st;
    rlt_env_stats_get(replay, &st);
    cr_assert_leq(st.n_evaluations, r.n_states, "each state looked up once, then cached");
    rlt_env_destroy(replay);
    rlt_env_destroy(live);
}

Test(env_dataset, a_replay_masks_and_refuses_the_actions_to_states_it_lacks)
{
    fake_eval f = {0};
    rlt_env_dataset_opts o = fake_opts(&f, 1);
    rlt_env_dataset_result r;
    const char *path = make(MM, "d1.states", &o, &r);
    rlt_env *replay = replay_env(MM, path), *scratch = NULL, *live = fake_env(MM, &f);
    cr_assert_eq(rlt_env_clone(replay, &scratch, NULL), RLT_STATUS_OK);
    rlt_rng rng;
    rlt_rng_seed(&rng, 3);
    int n_masked_for_the_dataset = 0;
    for (int walk = 0; walk < 20; walk++) {
        cr_assert_eq(rlt_env_reset(replay, NULL), RLT_STATUS_OK);
        for (int s = 0; s < 6; s++) {
            bool mask[RLT_ENV_N_ACTIONS], legal[RLT_ENV_N_ACTIONS];
            rlt_env_action_mask(replay, mask);
            rlt_env_restore(scratch, replay);
            /* what the env would allow without the replay */
            char *sched = rlt_env_schedule(replay);
            cr_assert_eq(rlt_env_reset_schedule(live, sched, NULL), RLT_STATUS_OK);
            rlt_free(sched);
            for (int k = 0; k < rlt_env_cursor(replay); k++)
                cr_assert_eq(rlt_env_step(live, RLT_ENV_ACTION_DOWN, NULL, NULL, NULL), RLT_STATUS_OK);
            rlt_env_action_mask(live, legal);
            for (int a = 0; a < RLT_ENV_N_ACTIONS; a++) {
                rlt_env_restore(scratch, replay);
                rlt_diag d = {0};
                rlt_status st = rlt_env_step(scratch, a, NULL, NULL, &d);
                if (mask[a]) {
                    cr_assert_eq(st, RLT_STATUS_OK, "%s unmasked but refused: %s", rlt_env_action_name(a), d.message);
                    cr_assert(legal[a]);
                    continue;
                }
                cr_assert_eq(st, RLT_STATUS_ILLEGAL_SCHEDULE, "%s masked but %s", rlt_env_action_name(a),
                             rlt_status_str(st));
                if (legal[a]) {
                    n_masked_for_the_dataset++;
                    cr_assert(strstr(d.message, "not in the replay dataset"), "%s", d.message);
                    cr_assert(strstr(d.message, path), "%s", d.message);
                }
            }
            rlt_diag d = {0};
            int a = random_legal(replay, &rng, false);
            cr_assert_eq(rlt_env_step(replay, a, NULL, NULL, &d), RLT_STATUS_OK, "%s", d.message);
        }
    }
    cr_assert_gt(n_masked_for_the_dataset, 0);
    /* a start it lacks */
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_reset_schedule(replay, "split i 4\nsplit j 2", &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "does not hold this state (its kernel: split i 4; split j 2"), "%s", d.message);
    cr_assert_str_eq(rlt_env_last_error(replay), d.message);
    rlt_env_destroy(live);
    rlt_env_destroy(scratch);
    rlt_env_destroy(replay);
}

Test(env_dataset, a_dataset_from_a_start_schedule_replays_from_there)
{
    fake_eval f = {0};
    rlt_env_dataset_opts o = fake_opts(&f, 1);
    o.start_schedule = "split j 2\nreorder i k j.o j.i";
    rlt_env_dataset_result r;
    const char *path = make(MM, "start.states", &o, &r);
    rlt_env_opts eo = {.replay_path = path};
    rlt_env *env = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_create(MM, &eo, &env, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_env_reset(env, &d), RLT_STATUS_INVALID_ARGUMENT, "the default nest is not in it");
    d = (rlt_diag){0};
    cr_assert_eq(rlt_env_reset_schedule(env, o.start_schedule, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_float_eq(rlt_env_gflops(env), r.start_gflops, 1e-4);
    size_t len = 0;
    char *text = tmp_file_read(path, &len);
    cr_assert(strstr(text, "\nstart split j 2; reorder i k j.o j.i\n"), "%s", text);
    free(text);
    rlt_env_destroy(env);
}

Test(env_dataset, max_states_cuts_a_level_by_the_seed)
{
    fake_eval f = {0};
    rlt_env_dataset_opts o = fake_opts(&f, 3);
    o.max_states = 60;
    rlt_env_dataset_result r;
    const char *a = make(MM, "a.states", &o, &r);
    cr_assert_eq(r.n_states, 60);
    cr_assert_gt(r.n_found, 60);
    cr_assert_lt(r.depth_complete, 3);
    /* every state of the complete levels is in: a depth_complete dataset is a prefix */
    rlt_env_dataset_opts full = fake_opts(&f, r.depth_complete);
    rlt_env_dataset_result rf;
    const char *b = make(MM, "full.states", &full, &rf);
    cr_assert_lt(rf.n_states, 60);
    size_t la, lb;
    char *ta = tmp_file_read(a, &la), *tb = tmp_file_read(b, &lb);
    const char *states_a = strstr(ta, "\nstates "), *states_b = strstr(tb, "\nstates ");
    states_a = strchr(states_a + 1, '\n') + 1;
    states_b = strchr(states_b + 1, '\n') + 1;
    cr_assert_eq(strncmp(states_a, states_b, strlen(states_b)), 0, "the complete levels come first, in order");
    /* the same options give the same bytes; another seed other states */
    const char *again = make(MM, "again.states", &o, NULL);
    o.seed = 1;
    const char *other = make(MM, "other.states", &o, NULL);
    size_t l1, l2;
    char *t1 = tmp_file_read(again, &l1), *t2 = tmp_file_read(other, &l2);
    cr_assert(la == l1 && memcmp(ta, t1, la) == 0);
    cr_assert_str_neq(strstr(ta, "\nstates "), strstr(t2, "\nstates "));
    free(t2);
    free(t1);
    free(tb);
    free(ta);
}

static void stop_after_first(void *ctx, int n_done, int n_states)
{
    (void)n_states;
    cr_assert_gt(n_done, 0);
    *(volatile sig_atomic_t *)ctx = 1;
}

Test(env_dataset, a_stop_writes_the_states_evaluated_so_far)
{
    fake_eval f = {0};
    volatile sig_atomic_t stop = 0;
    rlt_env_dataset_opts o = fake_opts(&f, 3);
    o.batch_size = 5;
    o.stop = &stop;
    o.progress = stop_after_first;
    o.progress_ctx = (void *)&stop;
    rlt_env_dataset_result r;
    const char *path = make(MM, "stopped.states", &o, &r);
    cr_assert(r.was_stopped);
    cr_assert_eq(r.n_states, 5);
    cr_assert_eq(r.depth_complete, 0, "the start only: level 1 has more than 4 states");
    rlt_env *env = replay_env(MM, path);
    rlt_env_destroy(env);
}

Test(env_dataset, failed_kernels_keep_their_status_and_message)
{
    fake_eval f = {.has_failures = true};
    rlt_env_dataset_opts o = fake_opts(&f, 2);
    rlt_env_dataset_result r;
    const char *path = make(MM, "failed.states", &o, &r);
    cr_assert_gt(r.n_failed, 0);
    size_t len;
    char *text = tmp_file_read(path, &len);
    cr_assert(strstr(text, "RUN_ERROR\t0\t"), "%s", text);
    cr_assert(strstr(text, "\tcrashed  at line 2\n"), "tabs and line breaks of a message become spaces");
    free(text);
    /* walk the replay until a failed state */
    rlt_env *env = replay_env(MM, path);
    rlt_rng rng;
    rlt_rng_seed(&rng, 1);
    bool has_found = false;
    for (int walk = 0; walk < 200 && !has_found; walk++) {
        cr_assert_eq(rlt_env_reset(env, NULL), RLT_STATUS_OK);
        for (int s = 0; s < 2 && !has_found; s++) {
            cr_assert_eq(rlt_env_step(env, random_legal(env, &rng, false), NULL, NULL, NULL), RLT_STATUS_OK);
            const char *msg = NULL;
            if (rlt_env_eval_status(env, &msg) == RLT_STATUS_RUN_ERROR) {
                has_found = true;
                cr_assert_str_eq(msg, "crashed  at line 2");
                cr_assert_eq(rlt_env_gflops(env), 0.0);
            }
        }
    }
    cr_assert(has_found);
    rlt_env_destroy(env);
}

Test(env_dataset, a_replay_takes_the_datasets_threads_and_peak)
{
    fake_eval f = {0};
    rlt_env_dataset_opts o = fake_opts(&f, 1);
    o.env.n_threads = 2;
    o.env.peak_gflops = 50;
    const char *path = make(MM, "t2.states", &o, NULL);
    rlt_env *env = replay_env(MM, path);
    cr_assert_eq(rlt_env_peak_gflops(env), 50.0);
    /* rewards over peak x threads */
    double start = rlt_env_gflops(env), reward = 0;
    cr_assert_eq(rlt_env_step(env, RLT_ENV_ACTION_SPLIT_2, &reward, NULL, NULL), RLT_STATUS_OK);
    cr_assert_float_eq(reward, (rlt_env_gflops(env) - start) / 100.0, 1e-12);
    rlt_env_destroy(env);
    /* another thread count is refused, naming both; a given peak is taken */
    rlt_env_opts eo = {.replay_path = path, .n_threads = 1};
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_create(MM, &eo, &env, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "measured with 2 threads, the env asks for 1"), "%s", d.message);
    eo = (rlt_env_opts){.replay_path = path, .n_threads = 2, .peak_gflops = 10, .cc = "/nonexistent/cc"};
    cr_assert_eq(rlt_env_create(MM, &eo, &env, NULL), RLT_STATUS_OK);
    cr_assert_eq(rlt_env_reset(env, NULL), RLT_STATUS_OK, "nothing is built: the compiler is not used");
    cr_assert_eq(rlt_env_peak_gflops(env), 10.0);
    rlt_env_destroy(env);
}

Test(env_dataset, prefetch_and_reset_batch_on_a_replay)
{
    fake_eval f = {0};
    rlt_env_dataset_opts o = fake_opts(&f, 1);
    const char *path = make(MM, "p.states", &o, NULL);
    rlt_env *env = replay_env(MM, path), *twin = NULL;
    cr_assert_eq(rlt_env_clone(env, &twin, NULL), RLT_STATUS_OK);
    rlt_env *envs[RLT_ENV_N_ACTIONS];
    int actions[RLT_ENV_N_ACTIONS];
    for (int a = 0; a < RLT_ENV_N_ACTIONS; a++) {
        envs[a] = env;
        actions[a] = a;
    }
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_prefetch(envs, actions, RLT_ENV_N_ACTIONS, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_env_step(env, RLT_ENV_ACTION_SPLIT_4, NULL, NULL, NULL), RLT_STATUS_OK);
    /* one more step is two away from the start: prefetch skips what it lacks */
    cr_assert_eq(rlt_env_prefetch(envs, actions, RLT_ENV_N_ACTIONS, &d), RLT_STATUS_OK, "%s", d.message);
    const char *scheds[2] = {NULL, "split i 2"};
    rlt_env *both[2] = {env, twin};
    cr_assert_eq(rlt_env_reset_batch(both, scheds, 2, &d), RLT_STATUS_OK, "%s", d.message);
    scheds[1] = "split i 2\nsplit j 2";
    cr_assert_eq(rlt_env_reset_batch(both, scheds, 2, &d), RLT_STATUS_INVALID_ARGUMENT);
    rlt_env_destroy(twin);
    rlt_env_destroy(env);
}

/* ---- bad files and options ------------------------------------------------ */

#define HEAD "# rltune env states v1\nop matmul:M=12,N=10,K=8\nthreads 1\npeak_gflops 100\n"

typedef struct bad_file {
    const char *text;
    rlt_status status;
    const char *words;
} bad_file;

static const bad_file bad_files[] = {
    {"", RLT_STATUS_PARSE_ERROR, "not a state dataset (its first line is not '# rltune env states v1'"},
    {"# rltune schedule v1\nsplit i 2\n", RLT_STATUS_PARSE_ERROR, "not a state dataset"},
    {"# rltune env states v2\n", RLT_STATUS_PARSE_ERROR, ":1: state dataset format v2 is not supported"},
    {HEAD "colour blue\nstates 1\n", RLT_STATUS_PARSE_ERROR, ":5: unknown header key 'colour'"},
    {HEAD "threads 2\nstates 1\n", RLT_STATUS_PARSE_ERROR, ":5: header key 'threads' given twice"},
    {"# rltune env states v1\nop matmul:M=12,N=10,K=8\npeak_gflops 100\nstates 1\nOK\t1\tcache_write j\n",
     RLT_STATUS_PARSE_ERROR, "the header has no 'threads' line"},
    {HEAD "OK\t1\tcache_write j\n", RLT_STATUS_PARSE_ERROR, "cache_write j' is not a 'key value' line of the header"},
    {"# rltune env states v1\nop matmul:M=12,N=10,K=8\nthreads 0\npeak_gflops 100\nstates 1\n",
     RLT_STATUS_PARSE_ERROR, ":3: threads '0' is not a whole number from 1 to 256"},
    {"# rltune env states v1\nop matmul:M=12,N=10,K=8\nthreads 1\npeak_gflops -1\nstates 1\n",
     RLT_STATUS_PARSE_ERROR, ":4: peak_gflops '-1' is not a number above 0"},
    {HEAD "states 0\n", RLT_STATUS_PARSE_ERROR, ":5: states '0' is not a whole number from 1 to 100000"},
    {HEAD "states 1\nOK 1 cache_write j\n", RLT_STATUS_PARSE_ERROR, ":6: 'OK 1 cache_write j' is not a state line"},
    {HEAD "states 1\nFINE\t1\tcache_write j\n", RLT_STATUS_PARSE_ERROR,
     ":6: status 'FINE' is not a kernel's result"},
    {HEAD "states 1\nPARSE_ERROR\t1\tcache_write j\n", RLT_STATUS_PARSE_ERROR, "status 'PARSE_ERROR' is not"},
    {HEAD "states 1\nOK\tfast\tcache_write j\n", RLT_STATUS_PARSE_ERROR, ":6: GFLOP/s 'fast' is not a number >= 0"},
    {HEAD "states 1\nOK\tnan\tcache_write j\n", RLT_STATUS_PARSE_ERROR, "GFLOP/s 'nan' is not"},
    {HEAD "states 1\nOK\t1\tsplit q 2\n", RLT_STATUS_PARSE_ERROR, ":6: schedule line 1"},
    {HEAD "states 1\nOK\t1\tsplat i 2\n", RLT_STATUS_PARSE_ERROR, ":6: the state's schedule:1"},
    {HEAD "states 1\nOK\t1\tfuse i j\n", RLT_STATUS_PARSE_ERROR, "comes from fuse, which the env cannot express"},
    {HEAD "states 1\nOK\t1\t-\n", RLT_STATUS_PARSE_ERROR,
     ":6: this rltune's env measures that state as 'cache_write j', the file has '-': the dataset was made by "
     "another version of rltune"},
    {HEAD "states 1\nOK\t1\tcache_write i\n", RLT_STATUS_PARSE_ERROR,
     "measures that state as 'cache_write j', the file has 'cache_write i'"},
    {HEAD "states 2\nOK\t1\tcache_write j\nOK\t2\tcache_write j\n", RLT_STATUS_PARSE_ERROR,
     ":7: the same state as line 6"},
    {HEAD "states 2\nOK\t1\tcache_write j\n", RLT_STATUS_PARSE_ERROR, "1 states, the header says 2 (a truncated file?)"},
    {HEAD "states 1\nOK\t1\tcache_write j\nOK\t2\tsplit i 2; cache_write j\n", RLT_STATUS_PARSE_ERROR,
     ":7: more states than the header's 'states 1'"},
    {"# rltune env states v1\nop matmul:M=12,N=10,K=9\nthreads 1\npeak_gflops 100\nstates 1\nOK\t1\tcache_write j\n",
     RLT_STATUS_INVALID_ARGUMENT, "is of matmul:M=12,N=10,K=9, not of the env's op matmul:M=12,N=10,K=8"},
    {"# rltune env states v1\nop nosuch:M=1\nthreads 1\npeak_gflops 100\nstates 1\n", RLT_STATUS_PARSE_ERROR,
     ": its op: unknown op 'nosuch'"},
};

Test(env_dataset, malformed_files_are_refused_with_the_file_and_line)
{
    const char *path = tmp_path("bad.states");
    for (size_t i = 0; i < RLT_ARRAY_LEN(bad_files); i++) {
        tmp_file_write_text(path, bad_files[i].text);
        rlt_env_opts o = {.replay_path = path};
        rlt_env *env = NULL;
        rlt_diag d = {0};
        rlt_status st = rlt_env_create(MM, &o, &env, &d);
        cr_assert_eq(st, bad_files[i].status, "case %zu: %s: %s", i, rlt_status_str(st), d.message);
        cr_assert(strstr(d.message, bad_files[i].words), "case %zu: '%s' lacks '%s'", i, d.message,
                  bad_files[i].words);
        cr_assert(strstr(d.message, path), "case %zu: '%s' does not name the file", i, d.message);
        cr_assert_null(env);
    }
    /* a good one, with a comment and a failed state's message */
    tmp_file_write_text(path, HEAD "# a comment\nstates 2\nOK\t1.5\tcache_write j\n"
                                   "BUILD_ERROR\t0\tsplit i 2; cache_write j\tno compiler\n");
    rlt_env *env = replay_env(MM, path);
    cr_assert_eq(rlt_env_gflops(env), 1.5);
    cr_assert_eq(rlt_env_peak_gflops(env), 100.0);
    cr_assert_eq(rlt_env_step(env, RLT_ENV_ACTION_SPLIT_2, NULL, NULL, NULL), RLT_STATUS_OK);
    const char *msg = NULL;
    cr_assert_eq(rlt_env_eval_status(env, &msg), RLT_STATUS_BUILD_ERROR);
    cr_assert_str_eq(msg, "no compiler");
    rlt_env_destroy(env);
    /* a missing file */
    rlt_env_opts o = {.replay_path = tmp_path("missing.states")};
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_create(MM, &o, &env, &d), RLT_STATUS_IO_ERROR);
    cr_assert(strstr(d.message, "cannot read the replay dataset"), "%s", d.message);
    cr_assert(strstr(d.message, "missing.states"), "%s", d.message);
}

Test(env_dataset, bad_options_are_refused)
{
    fake_eval f = {0};
    const char *path = tmp_path("never.states");
    struct {
        rlt_env_dataset_opts o;
        const char *words;
    } cases[] = {
        {{.depth = -1}, "depth -1 is out of range: 1 to 64 steps"},
        {{.depth = 65}, "depth 65 is out of range"},
        {{.max_states = 100001}, "max_states 100001 is out of range: 1 to 100000"},
        {{.batch_size = 257}, "batch_size 257 is out of range: 1 to 256"},
        {{.env = {.replay_path = "x.states"}}, "a state dataset is measured, not replayed"},
        {{.env = {.max_steps = 3}}, "env.max_steps must be 0"},
        {{.env = {.n_threads = 999}}, "env options out of range"},
        {{.start_schedule = "fuse i j"}, "the start schedule"},
    };
    for (size_t i = 0; i < RLT_ARRAY_LEN(cases); i++) {
        rlt_env_dataset_opts o = cases[i].o;
        o.env.peak_gflops = PEAK;
        if (!o.env.replay_path) {
            o.env.evaluate = fake_evaluate;
            o.env.evaluate_ctx = &f;
        }
        rlt_diag d = {0};
        rlt_status st = rlt_env_dataset_make(MM, path, &o, NULL, &d);
        cr_assert_eq(st, RLT_STATUS_INVALID_ARGUMENT, "case %zu: %s: %s", i, rlt_status_str(st), d.message);
        cr_assert(strstr(d.message, cases[i].words), "case %zu: '%s' lacks '%s'", i, d.message, cases[i].words);
        cr_assert(!tmp_exists(path), "case %zu wrote the file", i);
    }
    rlt_diag d = {0};
    rlt_env_dataset_opts o = fake_opts(&f, 1);
    cr_assert_eq(rlt_env_dataset_make("nosuch:M=1", path, &o, NULL, &d), RLT_STATUS_INVALID_ARGUMENT);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_env_dataset_make(MM, tmp_path("no/such/dir.states"), &o, NULL, &d), RLT_STATUS_IO_ERROR);
    cr_assert(strstr(d.message, "cannot write the state dataset"), "%s", d.message);
    /* an evaluator and a replay at once */
    rlt_env_opts eo = {.replay_path = path, .evaluate = fake_evaluate, .evaluate_ctx = &f};
    rlt_env *env = NULL;
    d = (rlt_diag){0};
    cr_assert_eq(rlt_env_create(MM, &eo, &env, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "an evaluator and a replay dataset"), "%s", d.message);
}

/* ---- measured ------------------------------------------------------------- */

Test(env_dataset, a_measured_dataset_replays_its_measurements_without_a_compiler, .timeout = 300)
{
    rlt_env_dataset_opts o = {
        .depth = 1,
        .env = {.cflags = "-O1 -march=native", .repeat = 1, .min_repeat_ms = 1, .peak_gflops = PEAK},
    };
    rlt_env_dataset_result r;
    const char *path = make("matmul:M=8,N=8,K=8", "live.states", &o, &r);
    cr_assert_gt(r.n_states, 5);
    cr_assert_eq(r.n_failed, 0);
    cr_assert_gt(r.start_gflops, 0);
    cr_assert_geq(r.best_gflops, r.start_gflops);
    size_t len;
    char *text = tmp_file_read(path, &len);
    cr_assert(strstr(text, "\nmeasured live, 1 sample of at least 1 ms\n"), "%s", text);
    cr_assert(strstr(text, "\nbuild "), "%s", text);
    cr_assert(strstr(text, "-O1 -march=native"), "%s", text);
    free(text);
    rlt_env_opts eo = {.replay_path = path, .cc = "/nonexistent/cc"};
    rlt_env *env = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_create("matmul:M=8,N=8,K=8", &eo, &env, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_env_reset(env, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_float_eq(rlt_env_gflops(env), r.start_gflops, 1e-5 * r.start_gflops);
    cr_assert_eq(rlt_env_peak_gflops(env), PEAK);
    rlt_env_destroy(env);
}

/* ---- out of memory -------------------------------------------------------- */

Test(env_dataset, out_of_memory_at_every_allocation)
{
    fake_eval f = {.has_failures = true};
    rlt_env_dataset_opts o = fake_opts(&f, 2);
    o.max_states = 40;
    o.batch_size = 8;
    const char *path = tmp_path("oom.states");
    bool has_succeeded = false;
    for (long n = 1; n < 2000 && !has_succeeded; n++) {
        rlt_env_opts eo = {.replay_path = path};
        rlt_env *env = NULL;
        remove(path);
        rlt_alloc_fail_after(n);
        rlt_status st = rlt_env_dataset_make(MM, path, &o, NULL, NULL);
        if (st == RLT_STATUS_OK) st = rlt_env_create(MM, &eo, &env, NULL);
        if (st == RLT_STATUS_OK) st = rlt_env_reset(env, NULL);
        if (st == RLT_STATUS_OK) st = rlt_env_step(env, RLT_ENV_ACTION_SPLIT_2, NULL, NULL, NULL);
        rlt_alloc_fail_after(0);
        cr_assert(st == RLT_STATUS_OK || st == RLT_STATUS_OUT_OF_MEMORY, "allocation %ld: %s", n,
                  rlt_status_str(st));
        has_succeeded = st == RLT_STATUS_OK;
        rlt_env_destroy(env);
    }
    cr_assert(has_succeeded);
    assert_no_leaks();
}
