/* Unit tests of Ansor's gradient-based task scheduler (src/search/task_sched.c):
 * the warm-up in order, tasks without an OK time first, the gradient formula
 * worked by hand (backward window, 1/t forward term, the similar tasks'
 * throughput bound), weights, random tie-breaking, done tasks, and the
 * latency estimate. */
#include <criterion/criterion.h>
#include <math.h>

#include "search/task_sched.h"

static rlt_task_state task(double weight, double flops, int group, int n_rounds, const double *best)
{
    return (rlt_task_state){.weight = weight, .flops = flops, .group = group, .n_rounds = n_rounds, .best_ms = best};
}

Test(task_sched, warm_up_in_order_then_unknown_first)
{
    rlt_rng rng;
    rlt_rng_seed(&rng, 1);
    const double a[] = {1.0}, none[] = {INFINITY, INFINITY}, none1[] = {INFINITY};
    rlt_task_state t[3] = {task(1, 1e6, 0, 1, a), task(1, 1e6, 0, 0, NULL), task(1, 1e6, 0, 0, NULL)};
    cr_expect_eq(rlt_task_sched_pick(3, t, &rng), 1, "the first task without a round");
    t[1] = task(1, 1e6, 0, 2, none);
    t[2] = task(1, 1e6, 0, 1, none1);
    cr_expect_eq(rlt_task_sched_pick(3, t, &rng), 2, "no OK time yet: the fewest rounds first");
    t[2].is_done = true;
    cr_expect_eq(rlt_task_sched_pick(3, t, &rng), 1);
    t[1].is_done = true;
    cr_expect_eq(rlt_task_sched_pick(3, t, &rng), 0);
    t[0].is_done = true;
    cr_expect_eq(rlt_task_sched_pick(3, t, &rng), -1, "all done");
}

Test(task_sched, gradient_by_hand)
{
    /* one task alone (no similar task with another rate): 5 rounds,
     * 10, 8, 6, 5, 4 ms, weight 3: backward over 3 rounds (4 - 8) / 3,
     * forward -4 / 5; the bound from itself is beta*C/(C/4) - 4 = 4 > -0.8 */
    const double h[] = {10, 8, 6, 5, 4};
    rlt_task_state t[1] = {task(3, 2e6, 7, 5, h)};
    double want = 3 * (0.2 * (4.0 - 8.0) / 3 + 0.8 * (-4.0 / 5));
    cr_expect_float_eq(rlt_task_sched_gradient(1, t, 0), want, 1e-12);
    /* two rounds: a window of 1 */
    rlt_task_state u[1] = {task(1, 2e6, 7, 2, h)};
    cr_expect_float_eq(rlt_task_sched_gradient(1, u, 0), 0.2 * (8.0 - 10.0) + 0.8 * (-8.0 / 2), 1e-12);
    /* one round: no backward term */
    rlt_task_state v[1] = {task(1, 2e6, 7, 1, h)};
    cr_expect_float_eq(rlt_task_sched_gradient(1, v, 0), 0.8 * -10.0, 1e-12);
    /* a similar task at 4x the throughput bounds the forward guess:
     * beta * C / V - g = 2 * 1e6 / (4e6 / 1) - 4 = -3.5, below -4/5 */
    const double s[] = {1};
    rlt_task_state w[2] = {task(1, 1e6, 7, 5, h), task(1, 4e6, 7, 1, s)};
    cr_expect_float_eq(rlt_task_sched_gradient(2, w, 0), 0.2 * (4.0 - 8.0) / 3 + 0.8 * -3.5, 1e-12);
    /* another kind is not similar */
    w[1].group = 8;
    cr_expect_float_eq(rlt_task_sched_gradient(2, w, 0), 0.2 * (4.0 - 8.0) / 3 + 0.8 * (-4.0 / 5), 1e-12);
}

Test(task_sched, picks_the_most_to_gain)
{
    rlt_rng rng;
    rlt_rng_seed(&rng, 3);
    const double flat[] = {5, 5, 5, 5}, falling[] = {9, 7, 6, 5};
    rlt_task_state t[2] = {task(1, 1e6, 0, 4, flat), task(1, 1e6, 1, 4, falling)};
    cr_expect_eq(rlt_task_sched_pick(2, t, &rng), 1, "recent improvement");
    /* weight: the same history twice as often in the network */
    rlt_task_state u[2] = {task(1, 1e6, 0, 4, flat), task(2, 1e6, 1, 4, flat)};
    cr_expect_eq(rlt_task_sched_pick(2, u, &rng), 1, "weight");
    /* a task far slower than a similar one's throughput */
    const double fast[] = {0.1, 0.1, 0.1, 0.1};
    rlt_task_state v[3] = {task(1, 1e6, 0, 4, flat), task(1, 1e6, 5, 4, flat), task(1, 1e6, 5, 4, fast)};
    cr_expect_eq(rlt_task_sched_pick(3, v, &rng), 1, "the similar task's throughput says it can gain");
}

Test(task_sched, ties_broken_at_random_and_by_seed)
{
    const double h[] = {2, 2};
    rlt_task_state t[3] = {task(1, 1e6, 0, 2, h), task(1, 1e6, 1, 2, h), task(1, 1e6, 2, 2, h)};
    int count[3] = {0};
    rlt_rng rng;
    rlt_rng_seed(&rng, 11);
    for (int i = 0; i < 3000; i++) count[rlt_task_sched_pick(3, t, &rng)]++;
    for (int k = 0; k < 3; k++) cr_expect(count[k] > 850 && count[k] < 1150, "task %d picked %d times", k, count[k]);
    rlt_rng a, b;
    rlt_rng_seed(&a, 5);
    rlt_rng_seed(&b, 5);
    for (int i = 0; i < 50; i++) cr_expect_eq(rlt_task_sched_pick(3, t, &a), rlt_task_sched_pick(3, t, &b));
}

Test(task_sched, latency_estimate)
{
    const double a[] = {3, 2}, b[] = {1.5}, none[] = {INFINITY};
    rlt_task_state t[2] = {task(2, 1, 0, 2, a), task(3, 1, 0, 1, b)};
    cr_expect_float_eq(rlt_task_sched_latency(2, t), 2 * 2 + 3 * 1.5, 1e-12);
    t[1] = task(3, 1, 0, 1, none);
    cr_expect(isinf(rlt_task_sched_latency(2, t)));
    t[1] = task(3, 1, 0, 0, NULL);
    cr_expect(isinf(rlt_task_sched_latency(2, t)), "a task without a round has no time");
    cr_expect_eq(rlt_task_sched_latency(0, t), 0);
}
