/*
 * random.c - random legal schedules (rlt_sched_random): the property tests
 * replay them against the reference, and random search samples them.
 *
 * Each draw picks a primitive and its arguments from the current nest and
 * keeps the step only if the primitive's legality check accepts it.
 */
#include "sched/sched.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int pick_loop(const rlt_nest *n, rlt_rng *rng) { return (int)rlt_rng_below(rng, (uint64_t)n->n_loops); }

static const char *loop_name(const rlt_nest *n, int pos) { return n->vars[n->loops[pos].var].name; }

/* A split factor: mostly divisors and powers of two, sometimes not dividing. */
static int64_t pick_factor(int64_t extent, rlt_rng *rng)
{
    static const int64_t odd[] = {3, 5, 6, 7, 12};
    if (extent <= 1) return 1;
    switch (rlt_rng_below(rng, 3)) {
    case 0: {
        int64_t f = (int64_t)1 << rlt_rng_below(rng, 5); /* 1..16 */
        return f;
    }
    case 1:
        return odd[rlt_rng_below(rng, RLT_ARRAY_LEN(odd))];
    default:
        for (int tries = 0; tries < 8; tries++) {
            int64_t f = 2 + (int64_t)rlt_rng_below(rng, (uint64_t)(extent > 2 ? extent - 1 : 1));
            if (extent % f == 0) return f;
        }
        return 2;
    }
}

static void set_step(rlt_step *step, rlt_step_kind kind)
{
    memset(step, 0, sizeof *step);
    step->kind = kind;
}

static void add_arg(rlt_step *step, const char *fmt, ...) RLT_PRINTF(2, 3);
static void add_arg(rlt_step *step, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(step->args[step->n_args++], RLT_LOOP_NAME_MAX, fmt, ap);
    va_end(ap);
}

/* Draws one candidate step for nest n. */
static void draw_step(const rlt_nest *n, rlt_rng *rng, const rlt_random_sched_opts *o, int n_unrolled, int choice,
                      rlt_step *step)
{
    const rlt_op *op = n->op;
    int pos = pick_loop(n, rng);
    const rlt_var *v = &n->vars[n->loops[pos].var];
    switch (choice) {
    case 0:
    case 1:
        set_step(step, RLT_STEP_SPLIT);
        add_arg(step, "%s", v->name);
        add_arg(step, "%" PRId64, pick_factor(v->extent, rng));
        return;
    case 2: {
        set_step(step, RLT_STEP_REORDER);
        if (n->n_loops < 2) return; /* nothing to reorder (a fully fused nest) */
        int k = 2 + (int)rlt_rng_below(rng, (uint64_t)(n->n_loops > 3 ? 3 : n->n_loops - 1));
        int chosen[RLT_MAX_LOOPS];
        int m = 0;
        for (int tries = 0; tries < 32 && m < k && m < n->n_loops; tries++) {
            int p = pick_loop(n, rng);
            bool seen = false;
            for (int i = 0; i < m; i++) seen |= chosen[i] == p;
            if (!seen) chosen[m++] = p;
        }
        for (int i = 0; i < m; i++) add_arg(step, "%s", loop_name(n, chosen[i]));
        return;
    }
    case 3:
        set_step(step, RLT_STEP_FUSE);
        if (pos + 1 < n->n_loops) {
            add_arg(step, "%s", v->name);
            add_arg(step, "%s", loop_name(n, pos + 1));
        }
        return;
    case 4:
        set_step(step, RLT_STEP_UNROLL);
        if (v->extent <= o->max_unroll && n_unrolled < o->max_unrolled_loops) add_arg(step, "%s", v->name);
        return;
    case 5:
        set_step(step, RLT_STEP_VECTORIZE);
        add_arg(step, "%s", loop_name(n, n->n_loops - 1));
        return;
    case 10: {
        /* split a spatial loop by a power of two and move its inner part
         * innermost, so that vectorize has something to work on */
        int64_t f = (int64_t)2 << rlt_rng_below(rng, 3);
        set_step(step, RLT_STEP_SPLIT);
        add_arg(step, "%s", v->name);
        add_arg(step, "%" PRId64, f);
        return;
    }
    case 6:
        set_step(step, RLT_STEP_PARALLEL);
        add_arg(step, "%s", v->name);
        add_arg(step, "%d", (int)rlt_rng_below(rng, (uint64_t)o->max_threads + 1));
        return;
    case 7:
        set_step(step, RLT_STEP_CACHE_WRITE);
        if (rlt_rng_below(rng, 4) == 0) add_arg(step, "root");
        else add_arg(step, "%s", v->name);
        return;
    case 8: {
        static const int64_t blocks[] = {2, 3, 4, 8, 16};
        set_step(step, RLT_STEP_PACK);
        int t = (int)rlt_rng_below(rng, (uint64_t)(op->n_tensors - 1));
        add_arg(step, "%s", op->tensors[t].name);
        int nb = 1 + (int)rlt_rng_below(rng, op->tensors[t].n_dims > 1 ? 2 : 1);
        int first = (int)rlt_rng_below(rng, (uint64_t)op->tensors[t].n_dims);
        for (int b = 0; b < nb; b++) {
            add_arg(step, "%d", (first + b) % op->tensors[t].n_dims);
            add_arg(step, "%" PRId64, blocks[rlt_rng_below(rng, RLT_ARRAY_LEN(blocks))]);
        }
        return;
    }
    default:
        set_step(step, RLT_STEP_PAD);
        add_arg(step, "%s", op->tensors[rlt_rng_below(rng, (uint64_t)(op->n_tensors - 1))].name);
        return;
    }
}

rlt_status rlt_sched_random(const rlt_op *op, rlt_rng *rng, const rlt_random_sched_opts *opts, rlt_sched **out,
                            rlt_diag *diag)
{
    rlt_random_sched_opts o = opts ? *opts : (rlt_random_sched_opts){0};
    if (o.n_steps <= 0) o.n_steps = 8;
    if (o.max_unroll <= 0) o.max_unroll = 8;
    if (o.max_unrolled_loops <= 0) o.max_unrolled_loops = 2;
    if (o.max_threads <= 0) o.max_threads = 2;
    *out = NULL;
    rlt_sched *s = rlt_sched_create();
    if (!s) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory building a random schedule");
    rlt_nest cur;
    rlt_nest_init(&cur, op);
    int n_unrolled = 0;
    for (int tries = 0; tries < 20 * o.n_steps && s->n_steps < o.n_steps; tries++) {
        /* One draw is a step, or (one time in eleven) the three steps that
         * make a vector loop: split a loop by 2^k, move the inner part
         * innermost, vectorize it. All are kept or none. */
        rlt_step steps[3];
        int n_new = 1;
        int choice = (int)rlt_rng_below(rng, 11);
        draw_step(&cur, rng, &o, n_unrolled, choice, &steps[0]);
        if (choice == 10 && steps[0].n_args == 2) {
            char inner[RLT_LOOP_NAME_MAX + 2];
            snprintf(inner, sizeof inner, "%s.i", steps[0].args[0]);
            set_step(&steps[1], RLT_STEP_REORDER);
            add_arg(&steps[1], "%s", cur.vars[cur.loops[cur.n_loops - 1].var].name);
            add_arg(&steps[1], "%s", inner);
            set_step(&steps[2], RLT_STEP_VECTORIZE);
            add_arg(&steps[2], "%s", inner);
            n_new = strcmp(steps[0].args[0], steps[1].args[0]) == 0 ? 1 : 3;
            if (n_new == 1) {
                set_step(&steps[1], RLT_STEP_VECTORIZE);
                add_arg(&steps[1], "%s", inner);
                n_new = 2;
            }
        }
        if (steps[0].n_args == 0) continue;
        rlt_nest next = cur;
        bool is_ok = true;
        for (int i = 0; i < n_new && is_ok; i++) is_ok = rlt_step_apply(&next, &steps[i], &next, NULL) == RLT_STATUS_OK;
        if (!is_ok) continue;
        for (int i = 0; i < n_new; i++) {
            rlt_status st = rlt_sched_append(s, &steps[i], diag);
            if (st != RLT_STATUS_OK) {
                rlt_sched_destroy(s);
                return st;
            }
        }
        cur = next;
        n_unrolled = 0;
        for (int l = 0; l < cur.n_loops; l++) n_unrolled += cur.loops[l].kind == RLT_LOOP_UNROLL;
    }
    *out = s;
    return RLT_STATUS_OK;
}
