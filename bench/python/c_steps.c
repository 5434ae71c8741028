/*
 * c_steps.c - the C side of bench/python/overhead.py: replays a fixed
 * sequence of LoopNest actions on an env answering from a state dataset
 * (rlt_env_opts.replay_path), or with DATASET "-" on an env scoring states
 * with an evaluator (a number from the state's hash, peak 100), so that no
 * step measures anything, doing per step
 * what a Gymnasium step hands back (rlt_env_step, rlt_env_observe,
 * rlt_env_action_mask, rlt_env_gflops), and prints the nanoseconds per
 * step of each run.
 *
 *     c_steps OP DATASET|- ACTIONS_FILE RUNS [NUM_ENVS MAX_STEPS]
 *
 * ACTIONS_FILE: one action number a line, -1 for a reset (rlt_env_reset).
 * With NUM_ENVS (and MAX_STEPS), a line holds NUM_ENVS actions, one per env (clones of
 * one env), and each line is one step of a vector env (rlt_env_vec, as
 * Python's LoopNestVectorEnv makes it: episodes truncated at MAX_STEPS,
 * autoreset at the next step, every output written): the first line is
 * rlt_env_vec_reset, each later one rlt_env_vec_step, where the -1s must
 * be the envs whose episode the line before ended (their action is not
 * read); it prints nanoseconds per env step (per action read).
 * A first untimed pass fills the env's cache, as the Python side's does.
 * Public API only (include/rltune.h), linked against librltune.so.
 */
#include <rltune.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* The evaluator of DATASET "-": overhead.py's Python side scores with the
 * same function, though after the warm pass neither is called. */
static rlt_status hash_evaluate(void *ctx, const rlt_env_eval_request *req, rlt_env_eval_result *out, rlt_diag *d)
{
    (void)ctx;
    (void)d;
    out->status = RLT_STATUS_OK;
    out->gflops = 1.0 + (double)(req->nest_hash % 97);
    return RLT_STATUS_OK;
}

/* What the passes read, so that no call's result can be dropped. */
static volatile double sink;

/* One pass over the actions; false on any failure (printed). */
static int run(rlt_env *env, const int *actions, int n)
{
    float obs[RLT_ENV_OBS_LEN];
    bool mask[RLT_ENV_N_ACTIONS];
    rlt_diag d = {0};
    for (int i = 0; i < n; i++) {
        double reward = 0;
        bool done = false;
        rlt_status st = actions[i] < 0 ? rlt_env_reset(env, &d) : rlt_env_step(env, actions[i], &reward, &done, &d);
        if (st == RLT_STATUS_OK) st = rlt_env_observe(env, obs, RLT_ENV_OBS_LEN, &d);
        if (st != RLT_STATUS_OK) {
            fprintf(stderr, "c_steps: action %d (line %d): %s\n", actions[i], i + 1, d.message);
            return 0;
        }
        rlt_env_action_mask(env, mask);
        sink += rlt_env_gflops(env) + reward + done + mask[0] + obs[0];
    }
    return 1;
}

/* One pass over the actions, n_envs at a time, through the
 * vector env `vec`; false on any failure (printed). */
static int run_batch(rlt_env_vec *vec, int n_envs, const int *actions, int n)
{
    enum { MAX_ENVS = 1024 };
    static float obs[MAX_ENVS * RLT_ENV_OBS_LEN];
    static unsigned char masks[MAX_ENVS * RLT_ENV_N_ACTIONS];
    static double rewards[MAX_ENVS], gflops[MAX_ENVS];
    static bool terminated[MAX_ENVS], truncated[MAX_ENVS], is_legal[MAX_ENVS];
    static int64_t batch[MAX_ENVS], n_steps[MAX_ENVS];
    rlt_env_vec_out out = {obs, masks, rewards, terminated, truncated, is_legal, gflops, n_steps};
    rlt_diag d = {0};
    if (n_envs > MAX_ENVS) {
        fprintf(stderr, "c_steps: at most %d envs\n", MAX_ENVS);
        return 0;
    }
    for (int line = 0; line < n / n_envs; line++) {
        const int *a = actions + (size_t)line * n_envs;
        for (int i = 0; i < n_envs; i++) {
            if (line > 0 && (a[i] < 0) != (terminated[i] || truncated[i])) {
                fprintf(stderr, "c_steps: line %d, env %d: %s, where the vector env %s\n", line + 1, i,
                        a[i] < 0 ? "a reset" : "an action", a[i] < 0 ? "resets nothing" : "resets");
                return 0;
            }
            batch[i] = a[i] < 0 ? 0 : a[i];
        }
        rlt_status st = line == 0 ? rlt_env_vec_reset(vec, NULL, NULL, &out, &d)
                                  : rlt_env_vec_step(vec, batch, &out, NULL, &d);
        if (st != RLT_STATUS_OK) {
            fprintf(stderr, "c_steps: line %d: %s\n", line + 1, d.message);
            return 0;
        }
        sink += gflops[0] + rewards[0] + terminated[0] + masks[0] + obs[0];
    }
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 5 && argc != 7) {
        fprintf(stderr, "usage: c_steps OP DATASET|- ACTIONS_FILE RUNS [NUM_ENVS MAX_STEPS]\n");
        return 2;
    }
    int n_envs = argc == 7 ? atoi(argv[5]) : 1, max_steps = argc == 7 ? atoi(argv[6]) : 0;
    if (n_envs < 1 || max_steps < 0) {
        fprintf(stderr, "c_steps: NUM_ENVS must be >= 1 and MAX_STEPS >= 0, not %s and %s\n", argv[5], argv[6]);
        return 2;
    }
    FILE *f = fopen(argv[3], "r");
    if (!f) {
        perror(argv[3]);
        return 2;
    }
    int n = 0, cap = 1024, a;
    int *actions = malloc((size_t)cap * sizeof *actions);
    while (actions && fscanf(f, "%d", &a) == 1) {
        if (n == cap) actions = realloc(actions, (size_t)(cap *= 2) * sizeof *actions);
        if (actions) actions[n++] = a;
    }
    fclose(f);
    if (!actions || n == 0) {
        fprintf(stderr, "c_steps: no actions in %s\n", argv[3]);
        return 2;
    }
    rlt_env_opts o = {.replay_path = argv[2]};
    if (strcmp(argv[2], "-") == 0) o = (rlt_env_opts){.evaluate = hash_evaluate, .peak_gflops = 100};
    rlt_env *env = NULL;
    rlt_diag d = {0};
    if (rlt_env_create(argv[1], &o, &env, &d) != RLT_STATUS_OK) {
        fprintf(stderr, "c_steps: %s\n", d.message);
        return 1;
    }
    if (n % n_envs != 0) {
        fprintf(stderr, "c_steps: %d actions in %s, not lines of %d\n", n, argv[3], n_envs);
        return 2;
    }
    rlt_env **envs = calloc((size_t)n_envs, sizeof *envs);
    int rc = envs ? 0 : 1;
    for (int i = 0; i < n_envs && rc == 0; i++) {
        if (i == 0)
            envs[0] = env;
        else if (rlt_env_clone(env, &envs[i], &d) != RLT_STATUS_OK)
            rc = 1;
    }
    rlt_env_vec *vec = NULL;
    rlt_env_vec_opts vo = {.max_steps = max_steps};
    if (rc == 0 && argc == 7 && rlt_env_vec_create(envs, n_envs, &vo, &vec, &d) != RLT_STATUS_OK) {
        fprintf(stderr, "c_steps: %s\n", d.message);
        rc = 1;
    }
    /* the first pass warms: every state into the cache */
    for (int r = -1; r < atoi(argv[4]) && rc == 0; r++) {
        double t0 = now_ns();
        rc = (vec ? run_batch(vec, n_envs, actions, n) : run(env, actions, n)) ? 0 : 1;
        if (r >= 0) printf("%.1f\n", (now_ns() - t0) / n);
    }
    rlt_env_vec_destroy(vec);
    for (int i = n_envs - 1; envs && i >= 1; i--) rlt_env_destroy(envs[i]);
    free(envs);
    rlt_env_destroy(env);
    free(actions);
    return rc;
}
