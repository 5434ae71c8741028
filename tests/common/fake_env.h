/* fake_env.h - LoopTune envs whose evaluator is a fixed function of the
 * nest (its structural hash), so that tests of policies, rollouts and
 * demonstrations step and "measure" without compiling anything. The fake
 * counts its calls. Header-only (static inline), like tmp.h: every test file
 * is its own executable. Shared by tests/unit/test_policy.c and
 * test_imitate.c (test_env.c has a stricter fake of its own, which also
 * checks the requests). */
#ifndef RLT_TESTS_FAKE_ENV_H
#define RLT_TESTS_FAKE_ENV_H

#include <criterion/criterion.h>

#include "rltune.h"

typedef struct fake_eval {
    int n_calls;
} fake_eval;

/* GFLOP/s as a fixed function of the nest: 1 to 11. */
static inline rlt_status fake_evaluate(void *ctx, const rlt_env_eval_request *req, rlt_env_eval_result *out,
                                       rlt_diag *diag)
{
    (void)diag;
    ((fake_eval *)ctx)->n_calls++;
    out->status = RLT_STATUS_OK;
    out->gflops = 1.0 + (double)(req->nest_hash % 1000) / 100.0;
    return RLT_STATUS_OK;
}

/* Env options scoring with the fake, peak 100. */
static inline rlt_env_opts fake_env_opts(fake_eval *f)
{
    return (rlt_env_opts){.peak_gflops = 100, .evaluate = fake_evaluate, .evaluate_ctx = f};
}

/* A fake-scored env of `spec`, reset (its start scored). */
static inline rlt_env *fake_env_make(const char *spec, fake_eval *f)
{
    rlt_env_opts o = fake_env_opts(f);
    rlt_env *env = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_env_create(spec, &o, &env, &d), RLT_STATUS_OK, "%s: %s", spec, d.message);
    cr_assert_eq(rlt_env_reset(env, &d), RLT_STATUS_OK, "%s: %s", spec, d.message);
    return env;
}

#endif /* RLT_TESTS_FAKE_ENV_H */
