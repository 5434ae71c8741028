/*
 * task_sched.h - Ansor's gradient-based task scheduler: which of a
 * network's tasks the next round of tuning goes to.
 *
 * The objective is the network's latency, f = sum_i w_i g_i, where w_i is
 * task i's weight (occurrences) and g_i its best time so far. After a
 * warm-up round of every task in order, each round goes to the task whose
 * estimated gradient df/dt_i (t_i: the rounds it has had) is most negative:
 *
 *   df/dt_i ~ w_i ( alpha (g_i(t_i) - g_i(t_i - dt)) / dt
 *                 + (1 - alpha) min(-g_i(t_i) / t_i,  beta C_i / max_{k in N(i)} V_k - g_i(t_i)) )
 *
 * the first term the task's recent improvement over a backward window of
 * dt rounds, the second an optimistic forward guess, whichever promises
 * more of: the time shrinking like 1/t, or falling to beta times what its
 * FLOPs C_i would take at the best throughput V_k = C_k / g_k of a similar
 * task k (the same op kind). Ties (within a relative 1e-9) are
 * broken at random. A task with no OK time yet after its rounds comes
 * first, the fewest rounds first, so a broken task cannot starve the rest
 * nor be left at an unknown time. Pure functions: the caller keeps the
 * state.
 */
#ifndef RLT_TASK_SCHED_H
#define RLT_TASK_SCHED_H

#include "core/core.h"

/* Ansor's constants (reference-designs.md): */
#define RLT_TASK_SCHED_ALPHA 0.2 /* weight of the backward (recent improvement) term */
#define RLT_TASK_SCHED_BETA 2.0  /* how far from similar tasks' throughput a task may stay */
#define RLT_TASK_SCHED_WINDOW 3  /* backward window, in rounds */

typedef struct rlt_task_state {
    double weight;       /* w_i > 0 */
    double flops;        /* C_i: FLOPs of one occurrence */
    int group;           /* similar tasks share a group (the op kind) */
    int n_rounds;        /* t_i */
    const double *best_ms; /* best time after each round (n_rounds of them); INFINITY while none is OK */
    bool is_done;        /* nothing left to tune: never picked */
} rlt_task_state;

/* The task the next round goes to, or -1 when every task is done. The
 * first task (in order) with no rounds yet, then the unknown ones, then by
 * the gradient; `rng` breaks ties. */
int rlt_task_sched_pick(int n, const rlt_task_state *tasks, rlt_rng *rng);

/* The gradient estimate of task i (the formula above; more negative is a
 * better place for the next round). Tasks with no rounds, or no OK time,
 * get -INFINITY. */
double rlt_task_sched_gradient(int n, const rlt_task_state *tasks, int i);

/* sum_i w_i g_i over the tasks' latest best times: the network's latency
 * estimate in ms; INFINITY while some task has no OK time. */
double rlt_task_sched_latency(int n, const rlt_task_state *tasks);

#endif /* RLT_TASK_SCHED_H */
