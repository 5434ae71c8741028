/* fixtures.h - the op and nest fixtures several test files share: each
 * asserts (Criterion) that its input is valid, so a test reads as what it
 * checks. Header-only: every test file is its own executable. */
#ifndef RLT_TEST_FIXTURES_H
#define RLT_TEST_FIXTURES_H

#include <criterion/criterion.h>

#include "sched/sched.h"

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
    cr_assert_eq(rlt_sched_apply(s, op, &n, &d), RLT_STATUS_OK, "%s:\n%s", d.message, text);
    rlt_sched_destroy(s);
    return n;
}

#endif
