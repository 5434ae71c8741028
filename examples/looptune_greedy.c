/*
 * looptune_greedy.c - rltune's public API: the LoopTune environment
 * (rltune/env.h), stepped by a greedy one-step lookahead: at each step every
 * legal action is tried on a clone (clones share the cache of measured
 * states), and the one with the largest reward is taken, until none gains.
 * Then the schedule the env's state stands for, which `rltune measure
 * --schedule` replays.
 *
 * Build against an installed rltune:
 *     cc looptune_greedy.c $(pkg-config --cflags --libs rltune) -o looptune_greedy
 * Usage: looptune_greedy [SPEC [STEPS]]   (default matmul:M=64,N=64,K=64, 6)
 */
#include <rltune.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    const char *spec = argc > 1 ? argv[1] : "matmul:M=64,N=64,K=64";
    int max_steps = argc > 2 ? atoi(argv[2]) : 6;
    rlt_diag d = {0};
    rlt_env *env = NULL;
    char *schedule = NULL;
    int rc = 2;
    rlt_env_opts o = {.max_steps = max_steps > 0 ? max_steps : 6, .repeat = 2, .min_repeat_ms = 2};
    if (rlt_env_create(spec, &o, &env, &d) != RLT_STATUS_OK) goto done;
    rc = 3;
    if (rlt_env_reset(env, &d) != RLT_STATUS_OK) goto done; /* measures the default nest */
    printf("start: %.2f GFLOP/s\n", rlt_env_gflops(env));
    bool is_done = false;
    while (!is_done) {
        bool mask[RLT_ENV_N_ACTIONS];
        rlt_env_action_mask(env, mask);
        int best = RLT_ENV_ACTION_STOP; /* always legal before the end */
        double best_gain = 0, r = 0;
        for (int a = 0; a < RLT_ENV_N_ACTIONS; a++) {
            if (!mask[a] || a == RLT_ENV_ACTION_STOP) continue;
            rlt_env *trial = NULL;
            bool trial_done;
            if (rlt_env_clone(env, &trial, &d) != RLT_STATUS_OK) goto done;
            rlt_status st = rlt_env_step(trial, a, &r, &trial_done, &d);
            rlt_env_destroy(trial);
            if (st != RLT_STATUS_OK) goto done;
            if (r > best_gain) {
                best_gain = r;
                best = a;
            }
        }
        if (rlt_env_step(env, best, &r, &is_done, &d) != RLT_STATUS_OK) goto done;
        printf("%-10s -> %.2f GFLOP/s\n", rlt_env_action_name(best), rlt_env_gflops(env));
    }
    schedule = rlt_env_schedule(env);
    printf("schedule:\n%s", schedule ? schedule : "");
    rc = rlt_env_gflops(env) > 0 ? 0 : 1;
done:
    if (d.status != RLT_STATUS_OK) fprintf(stderr, "looptune_greedy: %s\n", d.message);
    rlt_free(schedule);
    rlt_env_destroy(env);
    return rc;
}
