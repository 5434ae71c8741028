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
 *     c_steps OP DATASET|- ACTIONS_FILE RUNS
 *
 * ACTIONS_FILE: one action number a line, -1 for a reset (rlt_env_reset).
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

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: c_steps OP DATASET|- ACTIONS_FILE RUNS\n");
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
    int rc = run(env, actions, n) ? 0 : 1; /* warm: every state into the cache */
    for (int r = 0; r < atoi(argv[4]) && rc == 0; r++) {
        double t0 = now_ns();
        rc = run(env, actions, n) ? 0 : 1;
        printf("%.1f\n", (now_ns() - t0) / n);
    }
    rlt_env_destroy(env);
    free(actions);
    return rc;
}
