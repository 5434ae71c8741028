/* fixtures.h - the op and nest fixtures several test files share: each
 * asserts (Criterion) that its input is valid, so a test reads as what it
 * checks; a nest's loops as text (assert_loops); and a synthetic search
 * problem for tuners. Header-only: every test file is its own executable.
 * Shared by tests/unit/test_nest.c, test_sched.c, test_codegen.c,
 * test_run.c, test_space.c, test_session.c, test_dataset.c and the tuner
 * tests (test_tuner.c, test_bandit.c, ...; also through tuners.h). */
#ifndef RLT_TEST_FIXTURES_H
#define RLT_TEST_FIXTURES_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>

#include "sched/sched.h"
#include "space/space.h"

/* A built-in op from its spec; it must parse. Free with rlt_op_destroy. */
static inline rlt_op *fixture_op(const char *spec)
{
    rlt_op *op = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_op_parse(spec, &op, &d), RLT_STATUS_OK, "%s: %s", spec, d.message);
    return op;
}

/* A user expression; it must be valid. */
static inline rlt_op *fixture_expr_op(const char *expr, const char *shape)
{
    rlt_op *op = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_op_from_expr(expr, shape, &op, &d), RLT_STATUS_OK, "%s: %s", expr, d.message);
    return op;
}

/* The op's default nest with schedule `text` applied; it must be legal. */
static inline rlt_nest fixture_scheduled(const rlt_op *op, const char *text)
{
    rlt_sched *s = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_sched_parse(text, "test", &s, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_nest n;
    cr_assert_eq(rlt_sched_apply(s, op, &n, &d), RLT_STATUS_OK, "%s: %s:\n%s", op->spec, d.message, text);
    rlt_sched_destroy(s);
    return n;
}

/* The loops of `n` as "i.o:3 i.i:3 j:6 k:4r": name, extent, r for a
 * reduction, and the annotation: u unroll, v vectorize, pN parallel with N
 * threads. Written into got (size bytes, cut short if need be). */
static inline void fixture_loops_text(const rlt_nest *n, char *got, size_t size)
{
    size_t used = 0;
    got[0] = '\0';
    for (int l = 0; l < n->n_loops && used < size; l++) {
        const rlt_loop *loop = &n->loops[l];
        const rlt_var *v = &n->vars[loop->var];
        used += (size_t)snprintf(got + used, size - used, "%s%s:%lld%s", l ? " " : "", v->name, (long long)v->extent,
                                 v->is_reduce ? "r" : "");
        if (loop->kind == RLT_LOOP_UNROLL) used += (size_t)snprintf(got + used, size - used, "u");
        if (loop->kind == RLT_LOOP_VECTORIZE) used += (size_t)snprintf(got + used, size - used, "v");
        if (loop->kind == RLT_LOOP_PARALLEL)
            used += (size_t)snprintf(got + used, size - used, "p%d", loop->n_threads);
    }
}

/* Asserts that the loops of `n` are `want` (fixture_loops_text). */
static inline void assert_loops(const rlt_nest *n, const char *want)
{
    char got[1024];
    fixture_loops_text(n, got, sizeof got);
    cr_assert_str_eq(got, want);
}

/* ---- a synthetic search problem for tuners ------------------------------ */

/* A known valid configuration of matmul:M=512,N=512,K=512's space (8-float
 * vectors, one thread, no clang): the optimum of fixture_synthetic_score. */
#define FIXTURE_SYNTHETIC_BEST                                                                   \
    "v1;vec=j*8;i.tile=6;i.mid=1;j.tile=2;j.mid=1;k.tile=256;order.s=j,i;unroll=1;pack.A=off;" \
    "pack.B=j"

/* The configuration of `s` with this key; it must parse. */
static inline void fixture_config(const rlt_space *s, const char *key, rlt_config *out)
{
    rlt_diag d = {0};
    cr_assert_eq(rlt_space_config_parse(s, key, out, &d), RLT_STATUS_OK, "%s: %s", key, d.message);
}

/* A smooth score over the knobs, 100 at `best` and falling with the
 * distance (each knob's choice over its number of choices): what the tuner
 * tests search instead of measured GFLOP/s. */
static inline double fixture_synthetic_score(const rlt_space *s, const rlt_config *c, const rlt_config *best)
{
    double d2 = 0;
    for (int k = 0; k < s->n_knobs; k++) {
        double d = (double)(c->choice[k] - best->choice[k]) / (double)(s->knobs[k].n_choices);
        d2 += d * d;
    }
    return 100.0 * exp(-8.0 * d2);
}

#endif /* RLT_TEST_FIXTURES_H */
