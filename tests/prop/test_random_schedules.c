/* Property tests of the whole pipeline.
 *
 * 1. Random legal schedules (rlt_sched_random, fixed seeds) of every built-in
 *    op and of two user expressions, at small sizes with tails, are lowered,
 *    compiled and run through the real measurement pipeline
 *    (rlt_workload_create + rlt_measure_nests); every one must come back OK
 *    and within tolerance of the reference. A failure prints the op, the
 *    schedule text, the status and the runner's message, which is all it
 *    takes to replay it with `rltune` or tests/golden.
 * 2. The compiled reference kernel of every op (rlt_codegen_reference, built
 *    with RLT_REFERENCE_CFLAGS and loaded in-process) agrees with the
 *    interpreter (rlt_op_eval_reference) in value and magnitude: the runner
 *    trusts that kernel to judge every candidate, so it is checked here
 *    against the independent, obviously-correct evaluator.
 *
 * Compiles dominate the time: all schedules of an op are built in one batch
 * at -O1. RLTUNE_PROP_SCHEDULES overrides the number of schedules per op
 * (e.g. 200 for a long soak run). */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "measure/measure.h"
#include "sched/sched.h"

/* The ops: small, with sizes that leave tails for most split factors. */
typedef struct prop_op {
    const char *spec;  /* a built-in spec, or NULL for an expression */
    const char *expr;
    const char *shape;
} prop_op;

static const prop_op prop_ops[] = {
    {"matmul:M=13,N=17,K=9", NULL, NULL},
    {"batch_matmul:B=2,M=5,N=9,K=7", NULL, NULL},
    {"dense:M=3,N=11,K=10,bias=1,relu=1", NULL, NULL},
    {"conv2d:N=1,C=3,H=9,W=8,K=4,R=3,S=3,stride=2,pad=1", NULL, NULL},
    {"conv2d:N=2,C=2,H=7,W=7,K=3,R=3,S=2,stride=1,pad=2,dilation=2", NULL, NULL},
    {"depthwise_conv2d:N=1,C=4,H=9,W=9,R=3,S=3,stride=1,pad=1", NULL, NULL},
    /* A reduction with an epilogue that reads another tensor. */
    {NULL, "C[i,j] += A[i,k]*B[k,j]; C[i,j] = relu(C[i,j] + bias[j])", "i=7,j=19,k=5"},
    /* No reduction: max, min, constants, a shifted (partly out of bounds)
     * load and a transposed one. */
    {NULL, "Y[i,j] = max(X[i,j] * 2.5 - 1, min(X[i-1,j], Z[j,i])) + 0.25", "i=6,j=21"},
};

#define N_PROP_OPS ((int)RLT_ARRAY_LEN(prop_ops))
#define DEFAULT_SCHEDULES 24

static rlt_op *make_op(const prop_op *p)
{
    rlt_op *op = NULL;
    rlt_diag d = {0};
    rlt_status st = p->spec ? rlt_op_parse(p->spec, &op, &d) : rlt_op_from_expr(p->expr, p->shape, &op, &d);
    cr_assert_eq(st, RLT_STATUS_OK, "%s: %s", p->spec ? p->spec : p->expr, d.message);
    return op;
}

static int n_schedules(void)
{
    const char *env = getenv("RLTUNE_PROP_SCHEDULES");
    int n = env ? atoi(env) : 0;
    return n > 0 ? n : DEFAULT_SCHEDULES;
}

/* ---- 1. random schedules give the reference's answer -------------------- */

static void check_random_schedules(int which)
{
    const prop_op *p = &prop_ops[which];
    rlt_op *op = make_op(p);
    int n = n_schedules();
    rlt_sched **scheds = calloc((size_t)n, sizeof *scheds);
    rlt_nest *nests = calloc((size_t)n, sizeof *nests);
    rlt_run_result *results = calloc((size_t)n, sizeof *results);
    cr_assert(scheds && nests && results);

    int n_steps_total = 0;
    for (int i = 0; i < n; i++) {
        rlt_rng rng;
        /* One seed per (op, schedule): adding an op does not change the others. */
        rlt_rng_seed(&rng, 1000003u * (uint64_t)(which + 1) + (uint64_t)i);
        rlt_random_sched_opts o = {.n_steps = 10, .max_threads = 2};
        rlt_diag d = {0};
        cr_assert_eq(rlt_sched_random(op, &rng, &o, &scheds[i], &d), RLT_STATUS_OK, "%s", d.message);
        cr_assert_eq(rlt_sched_apply(scheds[i], op, &nests[i], &d), RLT_STATUS_OK,
                     "%s: random schedule %d does not replay: %s", op->spec, i, d.message);
        n_steps_total += scheds[i]->n_steps;
    }
    /* The generator must actually schedule: empty schedules test nothing. */
    cr_assert_geq(n_steps_total, 5 * n, "%s: only %d steps in %d schedules", op->spec, n_steps_total, n);

    rlt_build_opts bopts = {.cflags = "-O1 -march=native", .n_parallel = 2};
    rlt_run_opts ropts = {.repeat = 1, .number = 1, .min_repeat_ms = 0, .timeout_s = 20, .n_threads = 2};
    rlt_workload *w = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_workload_create(op, &bopts, 7, &w, &d), RLT_STATUS_OK, "%s: %s", op->spec, d.message);
    cr_assert_eq(rlt_measure_nests(w, &bopts, &ropts, n, nests, results, &d), RLT_STATUS_OK, "%s: %s", op->spec,
                 d.message);

    int n_bad = 0;
    for (int i = 0; i < n; i++) {
        if (results[i].status == RLT_STATUS_OK && results[i].is_correct) continue;
        rlt_str text;
        rlt_str_init(&text);
        rlt_sched_print(scheds[i], &text);
        cr_log_error("%s, schedule %d:\n%s=> %s: %s (max_error %g)", op->spec, i, text.data,
                     rlt_status_str(results[i].status), results[i].message, results[i].max_error);
        rlt_str_free(&text);
        n_bad++;
    }
    cr_expect_eq(n_bad, 0, "%s: %d of %d random schedules failed (see the log above)", op->spec, n_bad, n);

    rlt_workload_destroy(w);
    for (int i = 0; i < n; i++) rlt_sched_destroy(scheds[i]);
    free(scheds);
    free(nests);
    free(results);
    rlt_op_destroy(op);
}

Test(random_schedules, matmul, .timeout = 300) { check_random_schedules(0); }
Test(random_schedules, batch_matmul, .timeout = 300) { check_random_schedules(1); }
Test(random_schedules, dense_bias_relu, .timeout = 300) { check_random_schedules(2); }
Test(random_schedules, conv2d_stride2_pad1, .timeout = 300) { check_random_schedules(3); }
Test(random_schedules, conv2d_dilation2_pad2, .timeout = 300) { check_random_schedules(4); }
Test(random_schedules, depthwise_conv2d, .timeout = 300) { check_random_schedules(5); }
Test(random_schedules, expr_with_epilogue, .timeout = 300) { check_random_schedules(6); }
Test(random_schedules, expr_without_reduction, .timeout = 300) { check_random_schedules(7); }

/* Every op's schedules are tested above; this one checks the coverage of the
 * generator itself, so a change that stops it from drawing some primitive
 * cannot quietly hollow the property test out. */
Test(random_schedules, generator_draws_every_primitive)
{
    int seen[RLT_STEP_KIND_COUNT] = {0};
    for (int which = 0; which < N_PROP_OPS; which++) {
        rlt_op *op = make_op(&prop_ops[which]);
        for (int i = 0; i < DEFAULT_SCHEDULES; i++) {
            rlt_rng rng;
            rlt_rng_seed(&rng, 1000003u * (uint64_t)(which + 1) + (uint64_t)i);
            rlt_random_sched_opts o = {.n_steps = 10, .max_threads = 2};
            rlt_sched *s = NULL;
            cr_assert_eq(rlt_sched_random(op, &rng, &o, &s, NULL), RLT_STATUS_OK);
            for (int k = 0; k < s->n_steps; k++) seen[s->steps[k].kind]++;
            rlt_sched_destroy(s);
        }
        rlt_op_destroy(op);
    }
    for (int k = 0; k < RLT_STEP_KIND_COUNT; k++)
        cr_expect_gt(seen[k], 0, "no random schedule of the property test uses %s", rlt_step_kind_name(k));
}

/* ---- 2. the compiled reference agrees with the interpreter --------------- */

typedef void (*reference_fn)(const float *const *inputs, double *out, double *out_magnitude);

/* Built-in ops at shapes other than the ones above too, so both code paths
 * see odd strides, padding on one side only, and dilation. */
static const prop_op reference_ops[] = {
    {"matmul:M=13,N=17,K=9", NULL, NULL},
    {"batch_matmul:B=2,M=5,N=9,K=7", NULL, NULL},
    {"dense:M=3,N=11,K=10,bias=0,relu=0", NULL, NULL},
    {"dense:M=3,N=11,K=10,bias=1,relu=0", NULL, NULL},
    {"dense:M=3,N=11,K=10,bias=1,relu=1", NULL, NULL},
    {"conv2d:N=1,C=3,H=9,W=8,K=4,R=3,S=3,stride=2,pad=1", NULL, NULL},
    {"conv2d:N=2,C=2,H=7,W=7,K=3,R=3,S=2,stride=1,pad=2,dilation=2", NULL, NULL},
    {"depthwise_conv2d:N=1,C=4,H=9,W=9,R=3,S=3,stride=1,pad=1", NULL, NULL},
    {"depthwise_conv2d:N=2,C=3,H=6,W=7,R=2,S=3,stride=2,pad=0,dilation=1", NULL, NULL},
    {NULL, "C[i,j] += A[i,k]*B[k,j]; C[i,j] = relu(C[i,j] + bias[j])", "i=7,j=19,k=5"},
    {NULL, "Y[i,j] = max(X[i,j] * 2.5 - 1, min(X[i-1,j], Z[j,i])) + 0.25", "i=6,j=21"},
    /* Subtraction and negation inside a reduction: the magnitude of a term
     * is the expression on absolute values, not the absolute value of the
     * term (which cancellation can make tiny). */
    {NULL, "O[i] += A[i,k] * B[k] - A[i,k] * C[k] + -D[k]", "i=5,k=8"},
    /* A load that is out of bounds on both sides, and min in a reduction. */
    {NULL, "Y[i] += min(X[i+k-2], W[k]) * 3", "i=6,k=5"},
};

static bool close_enough(double a, double b) { return fabs(a - b) <= 1e-9 * fmax(1.0, fmax(fabs(a), fabs(b))); }

Test(reference, compiled_reference_agrees_with_the_interpreter, .timeout = 300)
{
    enum { N = (int)RLT_ARRAY_LEN(reference_ops) };
    rlt_op *ops[N];
    rlt_kernel_src kernels[N];
    rlt_build_result builds[N];
    for (int i = 0; i < N; i++) {
        ops[i] = make_op(&reference_ops[i]);
        rlt_diag d = {0};
        cr_assert_eq(rlt_codegen_reference(ops[i], &kernels[i], &d), RLT_STATUS_OK, "%s", d.message);
        cr_assert_not(kernels[i].needs_openmp);
    }
    rlt_build_opts bopts = {.cflags = RLT_REFERENCE_CFLAGS};
    rlt_diag d = {0};
    cr_assert_eq(rlt_build_batch(&bopts, N, kernels, builds, &d), RLT_STATUS_OK, "%s", d.message);

    for (int i = 0; i < N; i++) {
        const rlt_op *op = ops[i];
        cr_assert_eq(builds[i].status, RLT_STATUS_OK, "%s: %s", op->spec, builds[i].log);
        void *so = dlopen(builds[i].so_path, RTLD_NOW | RTLD_LOCAL);
        cr_assert_not_null(so, "%s: %s", op->spec, dlerror());
        reference_fn fn = (reference_fn)(uintptr_t)dlsym(so, builds[i].symbol);
        cr_assert_not_null(fn, "%s: no symbol %s", op->spec, builds[i].symbol);

        float *inputs[RLT_MAX_TENSORS] = {0};
        for (int t = 0; t + 1 < op->n_tensors; t++) {
            int64_t size = rlt_op_tensor_size(op, t);
            inputs[t] = malloc(sizeof(float) * (size_t)size);
            cr_assert_not_null(inputs[t]);
            rlt_tensor_fill(inputs[t], size, 100 + (uint64_t)t);
        }
        int64_t n_out = rlt_op_tensor_size(op, op->n_tensors - 1);
        double *want = malloc(sizeof(double) * (size_t)n_out), *want_mag = malloc(sizeof(double) * (size_t)n_out);
        double *got = malloc(sizeof(double) * (size_t)n_out), *got_mag = malloc(sizeof(double) * (size_t)n_out);
        cr_assert(want && want_mag && got && got_mag);
        cr_assert_eq(rlt_op_eval_reference(op, (const float *const *)inputs, want, want_mag, &d), RLT_STATUS_OK, "%s",
                     d.message);
        fn((const float *const *)inputs, got, got_mag);
        int n_value_bad = 0, n_mag_bad = 0;
        for (int64_t e = 0; e < n_out; e++) {
            if (!close_enough(got[e], want[e]) && n_value_bad++ == 0)
                cr_log_error("%s: element %lld: compiled %.17g, interpreter %.17g", op->spec, (long long)e, got[e],
                             want[e]);
            if (!close_enough(got_mag[e], want_mag[e]) && n_mag_bad++ == 0)
                cr_log_error("%s: element %lld: compiled magnitude %.17g, interpreter %.17g", op->spec,
                             (long long)e, got_mag[e], want_mag[e]);
        }
        cr_expect_eq(n_value_bad, 0, "%s: %d of %lld values differ", op->spec, n_value_bad, (long long)n_out);
        cr_expect_eq(n_mag_bad, 0, "%s: %d of %lld magnitudes differ", op->spec, n_mag_bad, (long long)n_out);
        /* The magnitude bounds the value. */
        for (int64_t e = 0; e < n_out; e++)
            cr_expect(fabs(want[e]) <= want_mag[e] * (1 + 1e-12), "%s: |value| > magnitude at %lld", op->spec,
                      (long long)e);
        free(want);
        free(want_mag);
        free(got);
        free(got_mag);
        for (int t = 0; t + 1 < op->n_tensors; t++) free(inputs[t]);
        dlclose(so);
        rlt_kernel_src_free(&kernels[i]);
        rlt_op_destroy(ops[i]);
    }
}
