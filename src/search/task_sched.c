/*
 * task_sched.c - Ansor's gradient-based task scheduler (task_sched.h).
 */
#include "search/task_sched.h"

#include <math.h>

static double latest(const rlt_task_state *t) { return t->n_rounds > 0 ? t->best_ms[t->n_rounds - 1] : INFINITY; }

double rlt_task_sched_gradient(int n, const rlt_task_state *tasks, int i)
{
    const rlt_task_state *t = &tasks[i];
    double g = latest(t);
    if (t->n_rounds == 0 || !isfinite(g)) return -INFINITY;
    /* backward: the improvement over the last `window` rounds (the first
     * OK time stands for the rounds before it) */
    int window = t->n_rounds - 1 < RLT_TASK_SCHED_WINDOW ? t->n_rounds - 1 : RLT_TASK_SCHED_WINDOW;
    double backward = 0;
    if (window > 0) {
        double before = t->best_ms[t->n_rounds - 1 - window];
        if (isfinite(before)) backward = (g - before) / window;
    }
    /* forward: 1/t, bounded by what similar tasks reach */
    double forward = -g / t->n_rounds;
    double best_rate = 0; /* FLOPs per ms */
    for (int k = 0; k < n; k++) {
        double gk = latest(&tasks[k]);
        if (tasks[k].group == t->group && isfinite(gk) && gk > 0 && tasks[k].flops / gk > best_rate)
            best_rate = tasks[k].flops / gk;
    }
    if (best_rate > 0) {
        double bound = RLT_TASK_SCHED_BETA * t->flops / best_rate - g;
        if (bound < forward) forward = bound;
    }
    return t->weight * (RLT_TASK_SCHED_ALPHA * backward + (1 - RLT_TASK_SCHED_ALPHA) * forward);
}

int rlt_task_sched_pick(int n, const rlt_task_state *tasks, rlt_rng *rng)
{
    /* warm-up: every task once, in order */
    for (int i = 0; i < n; i++)
        if (!tasks[i].is_done && tasks[i].n_rounds == 0) return i;
    /* tasks without an OK time: the fewest rounds first */
    int unknown = -1;
    for (int i = 0; i < n; i++)
        if (!tasks[i].is_done && !isfinite(latest(&tasks[i])) &&
            (unknown < 0 || tasks[i].n_rounds < tasks[unknown].n_rounds))
            unknown = i;
    if (unknown >= 0) return unknown;
    int best = -1, n_ties = 0;
    double best_grad = 0;
    for (int i = 0; i < n; i++) {
        if (tasks[i].is_done) continue;
        double grad = rlt_task_sched_gradient(n, tasks, i);
        double tol = 1e-9 * fabs(best_grad);
        if (best < 0 || grad < best_grad - tol) {
            best = i;
            best_grad = grad;
            n_ties = 1;
        } else if (grad <= best_grad + tol && rlt_rng_below(rng, (uint64_t)++n_ties) == 0) {
            best = i; /* reservoir: each tied task equally likely */
        }
    }
    return best;
}

double rlt_task_sched_latency(int n, const rlt_task_state *tasks)
{
    double sum = 0;
    for (int i = 0; i < n; i++) sum += tasks[i].weight * latest(&tasks[i]);
    return sum;
}
