/* Unit tests of the nn module (src/nn/): finite-difference gradient checks
 * of every layer kind (dense + none / relu / tanh, with respect to weights,
 * biases and inputs), every loss, the grouped softmax and log-softmax and
 * the action helpers, and a whole two-hidden-layer network; deterministic
 * initialisation; forward / predict / backward bookkeeping; clipping;
 * copying weights; Adam's exact first step and learning two regressions;
 * the weights file: round trips (bit-identical outputs, training resumed
 * bit for bit), every kind of damaged file refused with its message, the
 * committed corpus (tests/fuzz/corpus/nn/) replayed; allocation failures
 * reported without leaks. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn.h"

#include "../common/leaks.h"
#include "../common/tmp.h"

#define CORPUS_DIR RLTUNE_SOURCE_DIR "/tests/fuzz/corpus/nn"

/* ---- helpers -------------------------------------------------------------- */

static rlt_mlp *make_mlp(const rlt_mlp_spec *spec, uint64_t seed)
{
    rlt_mlp *m = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_mlp_create(spec, seed, &m, &d), RLT_STATUS_OK, "%s", d.message);
    return m;
}

static void fill_uniform(rlt_rng *rng, float *a, size_t n, double lo, double hi)
{
    for (size_t i = 0; i < n; i++) a[i] = (float)(lo + (hi - lo) * rlt_rng_uniform(rng));
}

static float *alloc_floats(size_t n)
{
    float *p = calloc(n ? n : 1, sizeof *p);
    cr_assert_not_null(p);
    return p;
}

/* The spec of a network from (units, activation) pairs. */
static rlt_mlp_spec spec_of(int n_inputs, int n_layers, const rlt_mlp_layer *layers)
{
    rlt_mlp_spec s = {.n_inputs = n_inputs, .n_layers = n_layers};
    for (int l = 0; l < n_layers; l++) s.layers[l] = layers[l];
    return s;
}

/* ---- the gradient checker -------------------------------------------------- */

/* A scalar function of some float array (the one being perturbed), in
 * double. */
typedef double (*scalar_fn)(void *ctx);

typedef struct check_result {
    int n_checked;
    int n_bad;     /* elements outside the tolerance */
    int n_skipped; /* elements where a ReLU kink lies within the step */
    double rel_err; /* |a - n| / max(|a|, |n|) over the checked elements, as vectors */
    size_t worst;   /* the element with the largest excess error */
    double worst_analytic, worst_numeric;
} check_result;

/* Central differences of f in each x[i] against analytic[i]. The step used
 * is the one float arithmetic took ((float)(x + h) - (float)(x - h)), so
 * rounding x +- h is not counted as error. An element passes when
 * |a - n| <= atol + rtol max(|a|, |n|). Where the two one-sided slopes
 * disagree by more than kink_tol, a kink (a ReLU switching) lies within the
 * step and the element is skipped and counted: for smooth functions their
 * difference is only h times the curvature. */
static check_result grad_check(float *x, size_t n, const float *analytic, scalar_fn f, void *ctx, double h,
                               double rtol, double atol, double kink_tol)
{
    check_result r = {0};
    double diff2 = 0, a2 = 0, n2 = 0, worst_excess = -INFINITY;
    double f0 = f(ctx);
    for (size_t i = 0; i < n; i++) {
        float saved = x[i];
        float xp = (float)((double)saved + h), xm = (float)((double)saved - h);
        x[i] = xp;
        double fp = f(ctx);
        x[i] = xm;
        double fm = f(ctx);
        x[i] = saved;
        double num = (fp - fm) / ((double)xp - (double)xm);
        double slope_up = (fp - f0) / ((double)xp - (double)saved);
        double slope_down = (f0 - fm) / ((double)saved - (double)xm);
        if (fabs(slope_up - slope_down) > kink_tol) {
            r.n_skipped++;
            continue;
        }
        double a = analytic[i];
        double err = fabs(a - num);
        double excess = err - (atol + rtol * RLT_MAX(fabs(a), fabs(num)));
        if (excess > 0) r.n_bad++;
        if (excess > worst_excess) {
            worst_excess = excess;
            r.worst = i;
            r.worst_analytic = a;
            r.worst_numeric = num;
        }
        diff2 += (a - num) * (a - num);
        a2 += a * a;
        n2 += num * num;
        r.n_checked++;
    }
    double scale = sqrt(RLT_MAX(a2, n2));
    r.rel_err = scale > 0 ? sqrt(diff2) / scale : 0;
    return r;
}

/* Smooth functions (no ReLU): nothing may be skipped. */
#define SMOOTH_KINK_TOL 1e9

static void assert_check(const char *what, check_result r, size_t n, double max_rel_err, double max_skipped_share)
{
    cr_log_info("%s: %d checked, %d skipped, relative error %.3g, worst [%zu] %.8g vs %.8g", what, r.n_checked,
                r.n_skipped, r.rel_err, r.worst, r.worst_analytic, r.worst_numeric);
    cr_assert_eq(r.n_bad, 0, "%s: %d of %d elements off; worst [%zu]: analytic %.8g, numeric %.8g", what, r.n_bad,
                 r.n_checked, r.worst, r.worst_analytic, r.worst_numeric);
    cr_assert_leq(r.rel_err, max_rel_err, "%s: relative error %.3g of the whole gradient", what, r.rel_err);
    cr_assert_leq(r.n_skipped, (int)(max_skipped_share * (double)n), "%s: %d of %zu elements skipped as kinks", what,
                  r.n_skipped, n);
    cr_assert_gt(r.n_checked, 0, "%s: nothing checked", what);
}

/* ---- networks under a fixed linear functional ------------------------------ */

/* L = sum(c * y) over the outputs y of the network at x: dL/dy = c. */
typedef struct net_ctx {
    rlt_mlp *m;
    int n_rows;
    float *x;       /* [n_rows x n_inputs] */
    const float *c; /* [n_rows x n_outputs] */
    float *y;       /* scratch */
} net_ctx;

static double net_linear_loss(void *p)
{
    net_ctx *c = p;
    rlt_diag d = {0};
    cr_assert_eq(rlt_mlp_predict(c->m, c->n_rows, c->x, c->y, &d), RLT_STATUS_OK, "%s", d.message);
    double sum = 0;
    for (size_t i = 0, n = (size_t)c->n_rows * (size_t)rlt_mlp_n_outputs(c->m); i < n; i++)
        sum += (double)c->c[i] * (double)c->y[i];
    return sum;
}

/* Checks one network's backward against finite differences in every
 * parameter and every input, with dL/dy a fixed random matrix. */
static void check_network(const char *what, const rlt_mlp_spec *spec, uint64_t seed, int n_rows, double kink_tol,
                          double max_skipped_share)
{
    rlt_mlp *m = make_mlp(spec, seed);
    rlt_rng rng;
    rlt_rng_seed(&rng, seed + 1000);
    /* Biases away from 0 so that the check covers them meaningfully. */
    float *params = rlt_mlp_params(m);
    for (int l = 0; l < spec->n_layers; l++) {
        float *b;
        rlt_mlp_layer_params(m, l, NULL, &b);
        fill_uniform(&rng, b, (size_t)spec->layers[l].n_units, -0.5, 0.5);
    }
    size_t n_in = (size_t)n_rows * (size_t)spec->n_inputs;
    size_t n_out = (size_t)n_rows * (size_t)rlt_mlp_n_outputs(m);
    float *x = alloc_floats(n_in), *c = alloc_floats(n_out), *y = alloc_floats(n_out), *dx = alloc_floats(n_in);
    fill_uniform(&rng, x, n_in, -1.5, 1.5);
    fill_uniform(&rng, c, n_out, -1, 1);

    rlt_diag d = {0};
    cr_assert_eq(rlt_mlp_forward(m, n_rows, x, y, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_mlp_zero_grad(m);
    cr_assert_eq(rlt_mlp_backward(m, n_rows, c, dx, &d), RLT_STATUS_OK, "%s", d.message);
    size_t n_params = rlt_mlp_n_params(m);
    float *grads = alloc_floats(n_params);
    memcpy(grads, rlt_mlp_grads(m), n_params * sizeof *grads);

    net_ctx ctx = {m, n_rows, x, c, y};
    char label[128];
    snprintf(label, sizeof label, "%s: parameters", what);
    check_result r = grad_check(params, n_params, grads, net_linear_loss, &ctx, 1e-3, 1e-2, 2e-3, kink_tol);
    assert_check(label, r, n_params, 2e-3, max_skipped_share);
    snprintf(label, sizeof label, "%s: inputs", what);
    r = grad_check(x, n_in, dx, net_linear_loss, &ctx, 1e-3, 1e-2, 2e-3, kink_tol);
    assert_check(label, r, n_in, 2e-3, max_skipped_share);

    free(grads);
    free(dx);
    free(y);
    free(c);
    free(x);
    rlt_mlp_destroy(m);
}

/* ---- networks: creation ---------------------------------------------------- */

static const rlt_mlp_layer k_dqn_layers[] = {{16, RLT_NN_ACT_RELU}, {8, RLT_NN_ACT_TANH}, {5, RLT_NN_ACT_NONE}};

Test(mlp, create_is_deterministic_and_scaled)
{
    rlt_mlp_spec spec = spec_of(7, 3, k_dqn_layers);
    rlt_mlp *a = make_mlp(&spec, 42), *b = make_mlp(&spec, 42), *c = make_mlp(&spec, 43);
    size_t n = rlt_mlp_n_params(a);
    cr_assert_eq(n, (size_t)(16 * 7 + 16 + 8 * 16 + 8 + 5 * 8 + 5));
    cr_assert_eq(rlt_mlp_n_inputs(a), 7);
    cr_assert_eq(rlt_mlp_n_outputs(a), 5);
    cr_assert(rlt_mlp_spec_equal(rlt_mlp_get_spec(a), &spec));
    cr_assert_eq(memcmp(rlt_mlp_params(a), rlt_mlp_params(b), n * sizeof(float)), 0, "same seed, other weights");
    cr_assert_neq(memcmp(rlt_mlp_params(a), rlt_mlp_params(c), n * sizeof(float)), 0, "other seed, same weights");
    /* He-uniform before ReLU, Xavier-uniform otherwise; biases 0; and the
     * weights fill their range (not all tiny). */
    int fan_in = 7;
    for (int l = 0; l < 3; l++) {
        int units = spec.layers[l].n_units;
        double limit = spec.layers[l].act == RLT_NN_ACT_RELU ? sqrt(6.0 / fan_in) : sqrt(6.0 / (fan_in + units));
        float *w, *bias;
        rlt_mlp_layer_params(a, l, &w, &bias);
        double max_abs = 0;
        for (int i = 0; i < units * fan_in; i++) {
            cr_assert_leq(fabs(w[i]), limit, "layer %d weight %d = %g over %g", l, i, (double)w[i], limit);
            max_abs = RLT_MAX(max_abs, fabs(w[i]));
        }
        cr_assert_geq(max_abs, 0.7 * limit, "layer %d: largest weight %g of limit %g", l, max_abs, limit);
        for (int j = 0; j < units; j++) cr_assert_eq(bias[j], 0.0f);
        fan_in = units;
    }
    for (size_t i = 0; i < n; i++) cr_assert_eq(rlt_mlp_grads(a)[i], 0.0f);
    rlt_mlp_destroy(c);
    rlt_mlp_destroy(b);
    rlt_mlp_destroy(a);
}

Test(mlp, create_refuses_bad_specs)
{
    struct {
        rlt_mlp_spec spec;
        const char *message;
    } cases[] = {
        {{.n_inputs = 0, .n_layers = 1, .layers = {{4, RLT_NN_ACT_NONE}}}, "n_inputs 0 is outside 1..65536"},
        {{.n_inputs = 65537, .n_layers = 1, .layers = {{4, RLT_NN_ACT_NONE}}}, "n_inputs 65537"},
        {{.n_inputs = 3, .n_layers = 0}, "n_layers 0 is outside 1..16"},
        {{.n_inputs = 3, .n_layers = 17}, "n_layers 17"},
        {{.n_inputs = 3, .n_layers = 2, .layers = {{4, RLT_NN_ACT_RELU}, {0, RLT_NN_ACT_NONE}}},
         "layer 1 has n_units 0"},
        {{.n_inputs = 3, .n_layers = 1, .layers = {{4, (rlt_nn_act)7}}}, "layer 0 has activation 7"},
        {{.n_inputs = 3, .n_layers = 1, .layers = {{4, (rlt_nn_act)-1}}}, "layer 0 has activation -1"},
    };
    for (size_t i = 0; i < RLT_ARRAY_LEN(cases); i++) {
        rlt_mlp *m = (rlt_mlp *)&cases; /* must be reset to NULL */
        rlt_diag d = {0};
        cr_assert_eq(rlt_mlp_create(&cases[i].spec, 1, &m, &d), RLT_STATUS_INVALID_ARGUMENT, "case %zu", i);
        cr_assert_null(m);
        cr_assert(strstr(d.message, cases[i].message), "case %zu: '%s' lacks '%s'", i, d.message, cases[i].message);
    }
    rlt_diag d = {0};
    rlt_mlp *m = NULL;
    cr_assert_eq(rlt_mlp_create(NULL, 1, &m, &d), RLT_STATUS_INVALID_ARGUMENT);
}

Test(mlp, activation_names)
{
    for (int a = 0; a < RLT_NN_ACT_COUNT; a++)
        cr_assert_eq(rlt_nn_act_from_str(rlt_nn_act_str((rlt_nn_act)a)), (rlt_nn_act)a);
    cr_assert_str_eq(rlt_nn_act_str(RLT_NN_ACT_RELU), "relu");
    cr_assert_str_eq(rlt_nn_act_str(RLT_NN_ACT_COUNT), "unknown");
    cr_assert_eq(rlt_nn_act_from_str("sigmoid"), RLT_NN_ACT_COUNT);
    cr_assert_eq(rlt_nn_act_from_str(NULL), RLT_NN_ACT_COUNT);
}

/* ---- networks: gradients --------------------------------------------------- */

Test(mlp_grad, dense_none)
{
    rlt_mlp_layer layers[] = {{6, RLT_NN_ACT_NONE}};
    rlt_mlp_spec spec = spec_of(5, 1, layers);
    check_network("dense+none", &spec, 1, 4, SMOOTH_KINK_TOL, 0);
}

Test(mlp_grad, dense_relu)
{
    rlt_mlp_layer layers[] = {{6, RLT_NN_ACT_RELU}};
    rlt_mlp_spec spec = spec_of(5, 1, layers);
    check_network("dense+relu", &spec, 2, 4, 1e-3, 0.05);
}

Test(mlp_grad, dense_tanh)
{
    rlt_mlp_layer layers[] = {{6, RLT_NN_ACT_TANH}};
    rlt_mlp_spec spec = spec_of(5, 1, layers);
    check_network("dense+tanh", &spec, 3, 4, SMOOTH_KINK_TOL, 0);
}

/* Two hidden layers of each kind, then a linear head. */
Test(mlp_grad, two_hidden_layers)
{
    rlt_mlp_layer tanh_relu[] = {{8, RLT_NN_ACT_TANH}, {7, RLT_NN_ACT_RELU}, {3, RLT_NN_ACT_NONE}};
    rlt_mlp_spec spec = spec_of(5, 3, tanh_relu);
    check_network("tanh-relu-none", &spec, 4, 4, 2e-2, 0.05);
    rlt_mlp_layer relu_relu[] = {{9, RLT_NN_ACT_RELU}, {6, RLT_NN_ACT_RELU}, {4, RLT_NN_ACT_NONE}};
    spec = spec_of(3, 3, relu_relu);
    check_network("relu-relu-none", &spec, 5, 5, 1e-3, 0.05);
    rlt_mlp_layer tanh_tanh[] = {{8, RLT_NN_ACT_TANH}, {8, RLT_NN_ACT_TANH}, {2, RLT_NN_ACT_TANH}};
    spec = spec_of(4, 3, tanh_tanh);
    check_network("tanh-tanh-tanh", &spec, 6, 3, SMOOTH_KINK_TOL, 0);
}

/* A network and a loss together, as an agent uses them: MSE against
 * targets, its gradient fed to backward. */
typedef struct mse_net_ctx {
    rlt_mlp *m;
    int n_rows;
    float *x;
    const float *target;
    float *y;
} mse_net_ctx;

static double net_mse_loss(void *p)
{
    mse_net_ctx *c = p;
    rlt_diag d = {0};
    double loss = 0;
    cr_assert_eq(rlt_mlp_predict(c->m, c->n_rows, c->x, c->y, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_nn_loss_mse(c->n_rows * rlt_mlp_n_outputs(c->m), c->y, c->target, &loss, NULL, &d),
                 RLT_STATUS_OK, "%s", d.message);
    return loss;
}

Test(mlp_grad, network_with_mse_loss)
{
    rlt_mlp_layer layers[] = {{10, RLT_NN_ACT_TANH}, {6, RLT_NN_ACT_TANH}, {2, RLT_NN_ACT_NONE}};
    rlt_mlp_spec spec = spec_of(3, 3, layers);
    rlt_mlp *m = make_mlp(&spec, 7);
    enum { ROWS = 6 };
    float x[ROWS * 3], t[ROWS * 2], y[ROWS * 2], dy[ROWS * 2], dx[ROWS * 3];
    rlt_rng rng;
    rlt_rng_seed(&rng, 8);
    fill_uniform(&rng, x, RLT_ARRAY_LEN(x), -1, 1);
    fill_uniform(&rng, t, RLT_ARRAY_LEN(t), -2, 2);
    rlt_diag d = {0};
    double loss = 0;
    cr_assert_eq(rlt_mlp_forward(m, ROWS, x, y, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_nn_loss_mse(ROWS * 2, y, t, &loss, dy, &d), RLT_STATUS_OK);
    rlt_mlp_zero_grad(m);
    cr_assert_eq(rlt_mlp_backward(m, ROWS, dy, dx, &d), RLT_STATUS_OK);
    size_t n = rlt_mlp_n_params(m);
    float *grads = alloc_floats(n);
    memcpy(grads, rlt_mlp_grads(m), n * sizeof *grads);
    mse_net_ctx ctx = {m, ROWS, x, t, y};
    check_result r = grad_check(rlt_mlp_params(m), n, grads, net_mse_loss, &ctx, 1e-3, 1e-2, 1e-3, SMOOTH_KINK_TOL);
    assert_check("mse network: parameters", r, n, 2e-3, 0);
    r = grad_check(x, RLT_ARRAY_LEN(x), dx, net_mse_loss, &ctx, 1e-3, 1e-2, 1e-3, SMOOTH_KINK_TOL);
    assert_check("mse network: inputs", r, RLT_ARRAY_LEN(x), 2e-3, 0);
    free(grads);
    rlt_mlp_destroy(m);
}

/* The checker itself must catch a wrong gradient: one element off by 5%,
 * or the sign of a whole layer's bias gradient. */
Test(mlp_grad, checker_catches_wrong_gradients)
{
    rlt_mlp_layer layers[] = {{6, RLT_NN_ACT_TANH}, {3, RLT_NN_ACT_NONE}};
    rlt_mlp_spec spec = spec_of(4, 2, layers);
    rlt_mlp *m = make_mlp(&spec, 9);
    enum { ROWS = 3 };
    float x[ROWS * 4], c[ROWS * 3], y[ROWS * 3];
    rlt_rng rng;
    rlt_rng_seed(&rng, 10);
    fill_uniform(&rng, x, RLT_ARRAY_LEN(x), -1, 1);
    fill_uniform(&rng, c, RLT_ARRAY_LEN(c), -1, 1);
    rlt_diag d = {0};
    cr_assert_eq(rlt_mlp_forward(m, ROWS, x, y, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_mlp_backward(m, ROWS, c, NULL, &d), RLT_STATUS_OK);
    size_t n = rlt_mlp_n_params(m);
    float *grads = alloc_floats(n);
    memcpy(grads, rlt_mlp_grads(m), n * sizeof *grads);
    net_ctx ctx = {m, ROWS, x, c, y};
    check_result r = grad_check(rlt_mlp_params(m), n, grads, net_linear_loss, &ctx, 1e-3, 1e-2, 2e-3, SMOOTH_KINK_TOL);
    cr_assert_eq(r.n_bad, 0, "the correct gradient fails: [%zu] %g vs %g", r.worst, r.worst_analytic,
                 r.worst_numeric);
    size_t big = 0; /* the largest gradient, off by 5% */
    for (size_t i = 0; i < n; i++)
        if (fabsf(grads[i]) > fabsf(grads[big])) big = i;
    grads[big] *= 1.05f;
    r = grad_check(rlt_mlp_params(m), n, grads, net_linear_loss, &ctx, 1e-3, 1e-2, 2e-3, SMOOTH_KINK_TOL);
    cr_assert_eq(r.n_bad, 1, "a 5%% error in one element went unnoticed (%d bad)", r.n_bad);
    cr_assert_eq(r.worst, big);
    grads[big] /= 1.05f;
    float *b;
    rlt_mlp_layer_params(m, 1, NULL, &b);
    size_t b_at = (size_t)(b - rlt_mlp_params(m));
    for (size_t j = 0; j < 3; j++) grads[b_at + j] = -grads[b_at + j];
    r = grad_check(rlt_mlp_params(m), n, grads, net_linear_loss, &ctx, 1e-3, 1e-2, 2e-3, SMOOTH_KINK_TOL);
    cr_assert_geq(r.n_bad, 3, "a flipped bias gradient went unnoticed (%d bad)", r.n_bad);
    free(grads);
    rlt_mlp_destroy(m);
}

/* ---- networks: bookkeeping ------------------------------------------------- */

Test(mlp, backward_accumulates_and_zero_grad_clears)
{
    rlt_mlp_spec spec = spec_of(7, 3, k_dqn_layers);
    rlt_mlp *m = make_mlp(&spec, 11);
    enum { ROWS = 4 };
    float x[ROWS * 7], y[ROWS * 5], c[ROWS * 5];
    rlt_rng rng;
    rlt_rng_seed(&rng, 12);
    fill_uniform(&rng, x, RLT_ARRAY_LEN(x), -1, 1);
    fill_uniform(&rng, c, RLT_ARRAY_LEN(c), -1, 1);
    rlt_diag d = {0};
    cr_assert_eq(rlt_mlp_forward(m, ROWS, x, y, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_mlp_backward(m, ROWS, c, NULL, &d), RLT_STATUS_OK);
    size_t n = rlt_mlp_n_params(m);
    float *once = alloc_floats(n);
    memcpy(once, rlt_mlp_grads(m), n * sizeof *once);
    cr_assert_gt(rlt_mlp_grad_norm(m), 0);
    cr_assert_eq(rlt_mlp_backward(m, ROWS, c, NULL, &d), RLT_STATUS_OK);
    for (size_t i = 0; i < n; i++)
        cr_assert_float_eq(rlt_mlp_grads(m)[i], 2 * once[i], 1e-6 + 1e-5 * fabsf(once[i]), "[%zu]", i);
    rlt_mlp_zero_grad(m);
    cr_assert_eq(rlt_mlp_grad_norm(m), 0);
    free(once);
    rlt_mlp_destroy(m);
}

Test(mlp, predict_matches_forward_and_keeps_the_forward)
{
    rlt_mlp_spec spec = spec_of(7, 3, k_dqn_layers);
    rlt_mlp *m = make_mlp(&spec, 13);
    enum { ROWS = 9 };
    float x1[ROWS * 7], x2[2 * 7], y_fwd[ROWS * 5], y_pred[ROWS * 5], y2[2 * 5], c[ROWS * 5];
    rlt_rng rng;
    rlt_rng_seed(&rng, 14);
    fill_uniform(&rng, x1, RLT_ARRAY_LEN(x1), -1, 1);
    fill_uniform(&rng, x2, RLT_ARRAY_LEN(x2), -1, 1);
    fill_uniform(&rng, c, RLT_ARRAY_LEN(c), -1, 1);
    rlt_diag d = {0};
    cr_assert_eq(rlt_mlp_forward(m, ROWS, x1, y_fwd, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_mlp_predict(m, ROWS, x1, y_pred, &d), RLT_STATUS_OK);
    cr_assert_eq(memcmp(y_fwd, y_pred, sizeof y_fwd), 0, "predict differs from forward");
    cr_assert_eq(rlt_mlp_backward(m, ROWS, c, NULL, &d), RLT_STATUS_OK);
    size_t n = rlt_mlp_n_params(m);
    float *want = alloc_floats(n);
    memcpy(want, rlt_mlp_grads(m), n * sizeof *want);
    /* a predict between forward and backward changes nothing */
    rlt_mlp_zero_grad(m);
    cr_assert_eq(rlt_mlp_forward(m, ROWS, x1, y_fwd, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_mlp_predict(m, 2, x2, y2, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_mlp_backward(m, ROWS, c, NULL, &d), RLT_STATUS_OK);
    cr_assert_eq(memcmp(want, rlt_mlp_grads(m), n * sizeof *want), 0, "predict disturbed the kept forward");
    /* a single row, and a network of one layer, predict as they forward */
    cr_assert_eq(rlt_mlp_forward(m, 1, x2, y2, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_mlp_predict(m, 1, x2, y_pred, &d), RLT_STATUS_OK);
    cr_assert_eq(memcmp(y2, y_pred, 5 * sizeof(float)), 0);
    rlt_mlp_layer one[] = {{3, RLT_NN_ACT_TANH}};
    rlt_mlp_spec spec1 = spec_of(7, 1, one);
    rlt_mlp *m1 = make_mlp(&spec1, 15);
    cr_assert_eq(rlt_mlp_forward(m1, 2, x2, y_fwd, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_mlp_predict(m1, 2, x2, y_pred, &d), RLT_STATUS_OK);
    cr_assert_eq(memcmp(y_fwd, y_pred, 6 * sizeof(float)), 0);
    rlt_mlp_destroy(m1);
    free(want);
    rlt_mlp_destroy(m);
}

Test(mlp, forward_and_backward_refuse_misuse)
{
    rlt_mlp_spec spec = spec_of(7, 3, k_dqn_layers);
    rlt_mlp *m = make_mlp(&spec, 16);
    float x[3 * 7] = {0}, y[3 * 5], c[3 * 5] = {0};
    rlt_diag d = {0};
    cr_assert_eq(rlt_mlp_backward(m, 3, c, NULL, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "without a kept forward"), "%s", d.message);
    cr_assert_eq(rlt_mlp_forward(m, 3, x, y, &d), RLT_STATUS_OK);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_mlp_backward(m, 2, c, NULL, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "backward of 2 rows after a forward of 3 rows"), "%s", d.message);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_mlp_backward(m, 3, NULL, NULL, &d), RLT_STATUS_INVALID_ARGUMENT);
    /* a failed forward leaves no forward kept */
    d = (rlt_diag){0};
    cr_assert_eq(rlt_mlp_forward(m, 0, x, y, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "forward of 0 rows"), "%s", d.message);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_mlp_backward(m, 3, c, NULL, &d), RLT_STATUS_INVALID_ARGUMENT);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_mlp_forward(m, 3, NULL, y, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "input"), "%s", d.message);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_mlp_predict(m, -1, x, y, &d), RLT_STATUS_INVALID_ARGUMENT);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_mlp_predict(m, 3, x, NULL, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "output"), "%s", d.message);
    rlt_mlp_destroy(m);
}

Test(mlp, copy_weights_makes_a_target_network)
{
    rlt_mlp_spec spec = spec_of(7, 3, k_dqn_layers);
    rlt_mlp *online = make_mlp(&spec, 17), *target = make_mlp(&spec, 18);
    float x[4 * 7], y1[4 * 5], y2[4 * 5];
    rlt_rng rng;
    rlt_rng_seed(&rng, 19);
    fill_uniform(&rng, x, RLT_ARRAY_LEN(x), -1, 1);
    rlt_diag d = {0};
    cr_assert_eq(rlt_mlp_predict(online, 4, x, y1, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_mlp_predict(target, 4, x, y2, &d), RLT_STATUS_OK);
    cr_assert_neq(memcmp(y1, y2, sizeof y1), 0);
    cr_assert_eq(rlt_mlp_copy_weights(target, online, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_mlp_predict(target, 4, x, y2, &d), RLT_STATUS_OK);
    cr_assert_eq(memcmp(y1, y2, sizeof y1), 0);
    /* later changes to the online network do not reach the target */
    rlt_mlp_params(online)[0] += 1.0f;
    cr_assert_neq(rlt_mlp_params(online)[0], rlt_mlp_params(target)[0]);

    rlt_mlp_layer other_layers[] = {{16, RLT_NN_ACT_RELU}, {8, RLT_NN_ACT_RELU}, {5, RLT_NN_ACT_NONE}};
    rlt_mlp_spec other = spec_of(7, 3, other_layers);
    rlt_mlp *wrong = make_mlp(&other, 20);
    cr_assert_eq(rlt_mlp_copy_weights(wrong, online, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "different shapes"), "%s", d.message);
    rlt_mlp_destroy(wrong);
    rlt_mlp_destroy(target);
    rlt_mlp_destroy(online);
}

Test(mlp, grad_clip_caps_the_norm)
{
    rlt_mlp_spec spec = spec_of(7, 3, k_dqn_layers);
    rlt_mlp *m = make_mlp(&spec, 21);
    size_t n = rlt_mlp_n_params(m);
    rlt_rng rng;
    rlt_rng_seed(&rng, 22);
    fill_uniform(&rng, rlt_mlp_grads(m), n, -1, 1);
    float *before = alloc_floats(n);
    memcpy(before, rlt_mlp_grads(m), n * sizeof *before);
    double norm0 = rlt_mlp_grad_norm(m);
    cr_assert_gt(norm0, 5);

    rlt_diag d = {0};
    double norm = 0;
    cr_assert_eq(rlt_mlp_grad_clip(m, 2 * norm0, &norm, &d), RLT_STATUS_OK);
    cr_assert_eq(norm, norm0);
    cr_assert_eq(memcmp(before, rlt_mlp_grads(m), n * sizeof *before), 0, "clipping below the cap changed gradients");

    cr_assert_eq(rlt_mlp_grad_clip(m, 1.5, &norm, &d), RLT_STATUS_OK);
    cr_assert_eq(norm, norm0, "the norm before clipping is reported");
    double after = rlt_mlp_grad_norm(m);
    cr_assert_float_eq(after, 1.5, 1.5 * 1e-6, "clipped norm %.9g", after);
    for (size_t i = 0; i < n; i++) /* the direction is kept */
        cr_assert_float_eq(rlt_mlp_grads(m)[i], before[i] * (float)(1.5 / norm0), 1e-6, "[%zu]", i);

    double bad[] = {0, -1, NAN, INFINITY};
    for (size_t i = 0; i < RLT_ARRAY_LEN(bad); i++) {
        d = (rlt_diag){0};
        cr_assert_eq(rlt_mlp_grad_clip(m, bad[i], NULL, &d), RLT_STATUS_INVALID_ARGUMENT, "max_norm %g", bad[i]);
        cr_assert(strstr(d.message, "must be positive and finite"), "%s", d.message);
    }
    /* a NaN gradient is reported by name and nothing changes */
    float *b;
    rlt_mlp_layer_params(m, 1, NULL, &b);
    size_t at = (size_t)(b - rlt_mlp_params(m)) + 2;
    memcpy(before, rlt_mlp_grads(m), n * sizeof *before);
    rlt_mlp_grads(m)[at] = NAN;
    before[at] = NAN;
    d = (rlt_diag){0};
    cr_assert_eq(rlt_mlp_grad_clip(m, 0.1, &norm, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "the gradient of layer 1 bias [2] is nan"), "%s", d.message);
    for (size_t i = 0; i < n; i++)
        if (i != at) cr_assert_eq(rlt_mlp_grads(m)[i], before[i]);
    free(before);
    rlt_mlp_destroy(m);
}

/* ---- losses ---------------------------------------------------------------- */

typedef struct loss_ctx {
    int kind; /* 0 mse, 1 huber, 2 huber_picked */
    int n_rows, n_cols;
    float *pred;
    const float *target;
    const int *cols;
    double delta;
} loss_ctx;

static double eval_loss(void *p)
{
    loss_ctx *c = p;
    rlt_diag d = {0};
    double loss = NAN;
    rlt_status st = c->kind == 0   ? rlt_nn_loss_mse(c->n_rows, c->pred, c->target, &loss, NULL, &d)
                    : c->kind == 1 ? rlt_nn_loss_huber(c->n_rows, c->pred, c->target, c->delta, &loss, NULL, &d)
                                   : rlt_nn_loss_huber_picked(c->n_rows, c->n_cols, c->pred, c->cols, c->target,
                                                              c->delta, &loss, NULL, &d);
    cr_assert_eq(st, RLT_STATUS_OK, "%s", d.message);
    return loss;
}

Test(loss, mse_value_and_gradient)
{
    float pred[] = {1, 2, 3, -1}, target[] = {0, 2, 5, 1}, grad[4];
    double loss = 0;
    rlt_diag d = {0};
    cr_assert_eq(rlt_nn_loss_mse(4, pred, target, &loss, grad, &d), RLT_STATUS_OK);
    cr_assert_float_eq(loss, (1.0 + 0 + 4 + 4) / 4, 1e-12);
    float want[] = {0.5f, 0, -1, -1};
    for (int i = 0; i < 4; i++) cr_assert_float_eq(grad[i], want[i], 1e-7);
    enum { N = 12 };
    float p[N], t[N], g[N];
    rlt_rng rng;
    rlt_rng_seed(&rng, 23);
    fill_uniform(&rng, p, N, -2, 2);
    fill_uniform(&rng, t, N, -2, 2);
    cr_assert_eq(rlt_nn_loss_mse(N, p, t, &loss, g, &d), RLT_STATUS_OK);
    loss_ctx ctx = {0, N, 1, p, t, NULL, 0};
    assert_check("mse", grad_check(p, N, g, eval_loss, &ctx, 1e-3, 1e-3, 1e-5, SMOOTH_KINK_TOL), N, 1e-4, 0);
}

Test(loss, huber_value_and_gradient)
{
    /* |e| 0.5 (quadratic), 3 (linear) with delta 1 */
    float pred[] = {0.5f, 4, -2}, target[] = {0, 1, 1}, grad[3];
    double loss = 0;
    rlt_diag d = {0};
    cr_assert_eq(rlt_nn_loss_huber(3, pred, target, 1.0, &loss, grad, &d), RLT_STATUS_OK);
    cr_assert_float_eq(loss, (0.125 + 2.5 + 2.5) / 3, 1e-12);
    cr_assert_float_eq(grad[0], 0.5f / 3, 1e-7);
    cr_assert_float_eq(grad[1], 1.0f / 3, 1e-7);
    cr_assert_float_eq(grad[2], -1.0f / 3, 1e-7);
    /* both regimes, none within the step of |e| = delta */
    enum { N = 16 };
    float p[N], t[N], g[N];
    rlt_rng rng;
    rlt_rng_seed(&rng, 24);
    fill_uniform(&rng, t, N, -1, 1);
    for (int i = 0; i < N; i++) {
        double e = (i % 2 ? 0.2 : 1.3) + 0.6 * rlt_rng_uniform(&rng); /* in [0.2, 0.8) or [1.3, 1.9) */
        p[i] = t[i] + (float)(i % 3 ? e : -e);
    }
    cr_assert_eq(rlt_nn_loss_huber(N, p, t, 1.0, &loss, g, &d), RLT_STATUS_OK);
    loss_ctx ctx = {1, N, 1, p, t, NULL, 1.0};
    assert_check("huber", grad_check(p, N, g, eval_loss, &ctx, 1e-3, 1e-3, 1e-5, SMOOTH_KINK_TOL), N, 1e-4, 0);
}

Test(loss, huber_picked_is_huber_of_the_chosen_column)
{
    enum { ROWS = 5, COLS = 4 };
    float q[ROWS * COLS], target[ROWS], grad[ROWS * COLS], picked[ROWS], pgrad[ROWS];
    int cols[ROWS] = {0, 3, 1, 1, 2};
    rlt_rng rng;
    rlt_rng_seed(&rng, 25);
    fill_uniform(&rng, q, ROWS * COLS, -3, 3);
    fill_uniform(&rng, target, ROWS, -3, 3);
    for (int i = 0; i < ROWS; i++) picked[i] = q[i * COLS + cols[i]];
    double loss = 0, want = 0;
    rlt_diag d = {0};
    cr_assert_eq(rlt_nn_loss_huber_picked(ROWS, COLS, q, cols, target, 1.5, &loss, grad, &d), RLT_STATUS_OK, "%s",
                 d.message);
    cr_assert_eq(rlt_nn_loss_huber(ROWS, picked, target, 1.5, &want, pgrad, &d), RLT_STATUS_OK);
    cr_assert_eq(loss, want);
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < COLS; j++)
            cr_assert_eq(grad[i * COLS + j], j == cols[i] ? pgrad[i] : 0.0f, "[%d][%d]", i, j);
    loss_ctx ctx = {2, ROWS, COLS, q, target, cols, 1.5};
    assert_check("huber_picked", grad_check(q, ROWS * COLS, grad, eval_loss, &ctx, 1e-3, 1e-3, 1e-5, 1e-2),
                 ROWS * COLS, 1e-4, 0.05);
    /* the unpicked columns may hold anything */
    q[1] = NAN;
    cr_assert_eq(rlt_nn_loss_huber_picked(ROWS, COLS, q, cols, target, 1.5, &loss, NULL, &d), RLT_STATUS_OK);
}

Test(loss, losses_refuse_bad_arguments)
{
    float p[] = {1, NAN, 3}, t[] = {0, 0, 0}, ok[] = {1, 2, 3};
    double loss;
    int cols[] = {0, 5, 1};
    struct {
        rlt_status st;
        const char *message;
    } got[7];
    rlt_diag d[7] = {{0}};
    got[0].st = rlt_nn_loss_mse(0, ok, t, &loss, NULL, &d[0]);
    got[0].message = "mse of 0 elements";
    got[1].st = rlt_nn_loss_mse(3, p, t, &loss, NULL, &d[1]);
    got[1].message = "mse: pred[1] is nan";
    got[2].st = rlt_nn_loss_huber(3, ok, t, 0.0, &loss, NULL, &d[2]);
    got[2].message = "huber: delta 0 must be positive";
    got[3].st = rlt_nn_loss_huber(3, ok, NULL, 1.0, &loss, NULL, &d[3]);
    got[3].message = "huber without its targets";
    got[4].st = rlt_nn_loss_huber_picked(3, 1, ok, cols, t, 1.0, &loss, NULL, &d[4]);
    got[4].message = "cols[1] is 5, outside 0..0";
    got[5].st = rlt_nn_loss_huber(3, ok, t, INFINITY, &loss, NULL, &d[5]);
    got[5].message = "delta inf";
    float bad_t[] = {0, 0, INFINITY};
    got[6].st = rlt_nn_loss_mse(3, ok, bad_t, &loss, NULL, &d[6]);
    got[6].message = "target[2] is inf";
    for (size_t i = 0; i < RLT_ARRAY_LEN(got); i++) {
        cr_assert_eq(got[i].st, RLT_STATUS_INVALID_ARGUMENT, "case %zu", i);
        cr_assert(strstr(d[i].message, got[i].message), "case %zu: '%s' lacks '%s'", i, d[i].message,
                  got[i].message);
    }
}

/* ---- softmax over groups --------------------------------------------------- */

/* Three knobs of 3 actions and one of 2: unequal groups. */
static const int k_group_sizes[] = {3, 3, 2, 3};
#define G_COLS 11
#define G_GROUPS 4
#define G_ROWS 3

typedef struct group_ctx {
    int kind; /* 0 softmax, 1 log_softmax, 2 nll, 3 entropy, 4 log_prob_picked of log_softmax */
    const rlt_nn_groups *g;
    float *logits;
    const float *c;       /* [rows x cols] for 0, 1; [rows] for 4 */
    const int *actions;
    const float *weights;
    float *scratch;       /* [rows x cols] */
    float *scratch_rows;  /* [rows] */
} group_ctx;

static double eval_group(void *p)
{
    group_ctx *c = p;
    rlt_diag d = {0};
    double v = 0;
    rlt_status st = RLT_STATUS_OK;
    size_t n = (size_t)G_ROWS * (size_t)c->g->n_cols;
    switch (c->kind) {
    case 0:
    case 1:
        st = c->kind == 0 ? rlt_nn_softmax(c->g, G_ROWS, c->logits, c->scratch, &d)
                          : rlt_nn_log_softmax(c->g, G_ROWS, c->logits, c->scratch, &d);
        for (size_t i = 0; i < n; i++) v += (double)c->c[i] * (double)c->scratch[i];
        break;
    case 2:
        st = rlt_nn_loss_nll(c->g, G_ROWS, c->logits, c->actions, c->weights, &v, NULL, &d);
        break;
    case 3:
        st = rlt_nn_entropy(c->g, G_ROWS, c->logits, &v, NULL, &d);
        break;
    default:
        st = rlt_nn_log_softmax(c->g, G_ROWS, c->logits, c->scratch, &d);
        if (st == RLT_STATUS_OK)
            st = rlt_nn_log_prob_picked(c->g, G_ROWS, c->scratch, c->actions, c->scratch_rows, &d);
        for (int i = 0; i < G_ROWS; i++) v += (double)c->c[i] * (double)c->scratch_rows[i];
    }
    cr_assert_eq(st, RLT_STATUS_OK, "%s", d.message);
    return v;
}

typedef struct group_data {
    rlt_nn_groups g;
    float logits[G_ROWS * G_COLS];
    float c[G_ROWS * G_COLS];
    int actions[G_ROWS * G_GROUPS];
    float weights[G_ROWS];
    float scratch[G_ROWS * G_COLS], scratch_rows[G_ROWS], grad[G_ROWS * G_COLS];
} group_data;

static void group_data_make(group_data *gd, uint64_t seed)
{
    gd->g = (rlt_nn_groups){.n_cols = G_COLS, .n_groups = G_GROUPS, .sizes = k_group_sizes};
    rlt_rng rng;
    rlt_rng_seed(&rng, seed);
    fill_uniform(&rng, gd->logits, G_ROWS * G_COLS, -2, 2);
    fill_uniform(&rng, gd->c, G_ROWS * G_COLS, -1, 1);
    fill_uniform(&rng, gd->weights, G_ROWS, -2, 2);
    for (int i = 0; i < G_ROWS; i++)
        for (int k = 0; k < G_GROUPS; k++)
            gd->actions[i * G_GROUPS + k] = (int)rlt_rng_below(&rng, (uint64_t)k_group_sizes[k]);
}

static group_ctx group_ctx_of(group_data *gd, int kind)
{
    return (group_ctx){kind, &gd->g, gd->logits, gd->c, gd->actions, gd->weights, gd->scratch, gd->scratch_rows};
}

Test(softmax, values_sum_to_one_per_group_and_are_stable)
{
    float logits[] = {0, logf(2), logf(3), 1000, 1000, 1000, -1000, 5, 0, 0, 0};
    float p[G_COLS], logp[G_COLS];
    rlt_nn_groups g = {.n_cols = G_COLS, .n_groups = G_GROUPS, .sizes = k_group_sizes};
    rlt_diag d = {0};
    cr_assert_eq(rlt_nn_softmax(&g, 1, logits, p, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_nn_log_softmax(&g, 1, logits, logp, &d), RLT_STATUS_OK, "%s", d.message);
    float want[] = {1 / 6.0f, 2 / 6.0f, 3 / 6.0f, 1 / 3.0f, 1 / 3.0f, 1 / 3.0f, 0, 1, 1 / 3.0f, 1 / 3.0f, 1 / 3.0f};
    for (int j = 0; j < G_COLS; j++) {
        cr_assert_float_eq(p[j], want[j], 1e-6, "p[%d] = %g", j, (double)p[j]);
        cr_assert(isfinite(logp[j]), "logp[%d] = %g", j, (double)logp[j]);
        if (want[j] > 0) cr_assert_float_eq(logp[j], logf(want[j]), 1e-6, "logp[%d]", j);
    }
    cr_assert_float_eq(logp[6], -1005.0f, 1e-3, "log-softmax keeps tiny probabilities: %g", (double)logp[6]);
    /* equal groups by default */
    rlt_nn_groups equal = {.n_cols = 6, .n_groups = 2};
    float z[] = {1, 2, 3, 1, 2, 3}, q[6];
    cr_assert_eq(rlt_nn_softmax(&equal, 1, z, q, &d), RLT_STATUS_OK);
    for (int j = 0; j < 3; j++) cr_assert_eq(q[j], q[j + 3]);
    cr_assert_float_eq(q[0] + q[1] + q[2], 1.0f, 1e-6);
}

Test(softmax, softmax_backward_gradient)
{
    group_data gd;
    group_data_make(&gd, 26);
    rlt_diag d = {0};
    cr_assert_eq(rlt_nn_softmax(&gd.g, G_ROWS, gd.logits, gd.scratch, &d), RLT_STATUS_OK);
    float probs[G_ROWS * G_COLS];
    memcpy(probs, gd.scratch, sizeof probs);
    cr_assert_eq(rlt_nn_softmax_backward(&gd.g, G_ROWS, probs, gd.c, gd.grad, &d), RLT_STATUS_OK, "%s", d.message);
    group_ctx ctx = group_ctx_of(&gd, 0);
    assert_check("softmax", grad_check(gd.logits, G_ROWS * G_COLS, gd.grad, eval_group, &ctx, 1e-3, 1e-3, 1e-5,
                                       SMOOTH_KINK_TOL),
                 G_ROWS * G_COLS, 1e-3, 0);
}

Test(softmax, log_softmax_backward_gradient)
{
    group_data gd;
    group_data_make(&gd, 27);
    rlt_diag d = {0};
    cr_assert_eq(rlt_nn_log_softmax(&gd.g, G_ROWS, gd.logits, gd.scratch, &d), RLT_STATUS_OK);
    float logp[G_ROWS * G_COLS];
    memcpy(logp, gd.scratch, sizeof logp);
    cr_assert_eq(rlt_nn_log_softmax_backward(&gd.g, G_ROWS, logp, gd.c, gd.grad, &d), RLT_STATUS_OK, "%s",
                 d.message);
    group_ctx ctx = group_ctx_of(&gd, 1);
    assert_check("log_softmax", grad_check(gd.logits, G_ROWS * G_COLS, gd.grad, eval_group, &ctx, 1e-3, 1e-3, 1e-5,
                                           SMOOTH_KINK_TOL),
                 G_ROWS * G_COLS, 1e-3, 0);
}

/* PPO's chain: logits -> log_softmax -> log-probability of the joint
 * action, and back through log_prob_picked_backward and
 * log_softmax_backward. */
Test(softmax, log_prob_of_actions_chain_gradient)
{
    group_data gd;
    group_data_make(&gd, 28);
    rlt_diag d = {0};
    float logp[G_ROWS * G_COLS], lp[G_ROWS], dlogp[G_ROWS * G_COLS];
    cr_assert_eq(rlt_nn_log_softmax(&gd.g, G_ROWS, gd.logits, logp, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_nn_log_prob_picked(&gd.g, G_ROWS, logp, gd.actions, lp, &d), RLT_STATUS_OK, "%s", d.message);
    for (int i = 0; i < G_ROWS; i++) {
        double want = 0;
        for (int k = 0, start = 0; k < G_GROUPS; start += k_group_sizes[k], k++)
            want += logp[i * G_COLS + start + gd.actions[i * G_GROUPS + k]];
        cr_assert_float_eq(lp[i], want, 1e-5);
    }
    /* c's first G_ROWS values weigh the rows' log-probabilities */
    cr_assert_eq(rlt_nn_log_prob_picked_backward(&gd.g, G_ROWS, gd.actions, gd.c, dlogp, &d), RLT_STATUS_OK);
    int n_nonzero = 0;
    for (int j = 0; j < G_ROWS * G_COLS; j++) n_nonzero += dlogp[j] != 0;
    cr_assert_eq(n_nonzero, G_ROWS * G_GROUPS);
    cr_assert_eq(rlt_nn_log_softmax_backward(&gd.g, G_ROWS, logp, dlogp, gd.grad, &d), RLT_STATUS_OK);
    group_ctx ctx = group_ctx_of(&gd, 4);
    assert_check("log_prob_picked", grad_check(gd.logits, G_ROWS * G_COLS, gd.grad, eval_group, &ctx, 1e-3, 1e-3,
                                               1e-5, SMOOTH_KINK_TOL),
                 G_ROWS * G_COLS, 1e-3, 0);
}

Test(softmax, nll_value_and_gradient)
{
    group_data gd;
    group_data_make(&gd, 29);
    rlt_diag d = {0};
    double loss = 0;
    float logp[G_ROWS * G_COLS], lp[G_ROWS];
    cr_assert_eq(rlt_nn_log_softmax(&gd.g, G_ROWS, gd.logits, logp, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_nn_log_prob_picked(&gd.g, G_ROWS, logp, gd.actions, lp, &d), RLT_STATUS_OK);
    for (int weighted = 0; weighted < 2; weighted++) {
        const float *w = weighted ? gd.weights : NULL;
        cr_assert_eq(rlt_nn_loss_nll(&gd.g, G_ROWS, gd.logits, gd.actions, w, &loss, gd.grad, &d), RLT_STATUS_OK,
                     "%s", d.message);
        double want = 0;
        for (int i = 0; i < G_ROWS; i++) want -= (w ? w[i] : 1.0) * lp[i];
        cr_assert_float_eq(loss, want / G_ROWS, 1e-5, "nll %g, want %g", loss, want / G_ROWS);
        group_ctx ctx = group_ctx_of(&gd, 2);
        ctx.weights = w;
        assert_check(weighted ? "nll, weighted" : "nll",
                     grad_check(gd.logits, G_ROWS * G_COLS, gd.grad, eval_group, &ctx, 1e-3, 1e-3, 1e-5,
                                SMOOTH_KINK_TOL),
                     G_ROWS * G_COLS, 1e-3, 0);
    }
}

Test(softmax, entropy_value_and_gradient)
{
    group_data gd;
    group_data_make(&gd, 30);
    rlt_diag d = {0};
    double h = 0;
    /* uniform logits: the entropy is sum over groups of log(size) */
    float zeros[G_ROWS * G_COLS] = {0};
    cr_assert_eq(rlt_nn_entropy(&gd.g, G_ROWS, zeros, &h, NULL, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_float_eq(h, 3 * log(3.0) + log(2.0), 1e-12);
    cr_assert_eq(rlt_nn_entropy(&gd.g, G_ROWS, gd.logits, &h, gd.grad, &d), RLT_STATUS_OK);
    cr_assert_lt(h, 3 * log(3.0) + log(2.0));
    group_ctx ctx = group_ctx_of(&gd, 3);
    assert_check("entropy", grad_check(gd.logits, G_ROWS * G_COLS, gd.grad, eval_group, &ctx, 1e-3, 1e-3, 1e-5,
                                       SMOOTH_KINK_TOL),
                 G_ROWS * G_COLS, 1e-3, 0);
}

Test(softmax, groupings_and_actions_are_checked)
{
    float z[12] = {0}, out[12];
    int bad_sum[] = {3, 3, 3}, zero_size[] = {3, 0, 3, 6};
    int actions[4] = {0, 1, 3, 0};
    double v;
    struct {
        rlt_nn_groups g;
        int n_rows;
        const char *message;
    } cases[] = {
        {{.n_cols = 12, .n_groups = 3, .sizes = bad_sum}, 1, "the group sizes sum to 9, not n_cols 12"},
        {{.n_cols = 12, .n_groups = 4, .sizes = zero_size}, 1, "group 1 has size 0"},
        {{.n_cols = 12, .n_groups = 5}, 1, "12 columns do not split into 5 equal groups"},
        {{.n_cols = 12, .n_groups = 13}, 1, "12 columns in 13 groups"},
        {{.n_cols = 0, .n_groups = 1}, 1, "0 columns in 1 groups"},
        {{.n_cols = 12, .n_groups = 4}, 0, "of 0 rows"},
    };
    for (size_t i = 0; i < RLT_ARRAY_LEN(cases); i++) {
        rlt_diag d = {0};
        cr_assert_eq(rlt_nn_log_softmax(&cases[i].g, cases[i].n_rows, z, out, &d), RLT_STATUS_INVALID_ARGUMENT,
                     "case %zu", i);
        cr_assert(strstr(d.message, cases[i].message), "case %zu: '%s' lacks '%s'", i, d.message, cases[i].message);
    }
    rlt_nn_groups g = {.n_cols = 12, .n_groups = 4};
    rlt_diag d = {0};
    cr_assert_eq(rlt_nn_loss_nll(&g, 1, z, actions, NULL, &v, NULL, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "action of row 0 in group 2 is 3, outside 0..2"), "%s", d.message);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_nn_softmax(NULL, 1, z, out, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "without a grouping"), "%s", d.message);
    d = (rlt_diag){0};
    z[5] = NAN;
    cr_assert_eq(rlt_nn_entropy(&g, 1, z, &v, NULL, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "logits[5] is nan"), "%s", d.message);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_nn_softmax_backward(&g, 1, out, NULL, out, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "dL/dprobabilities"), "%s", d.message);
}

/* ---- Adam ------------------------------------------------------------------ */

Test(adam, first_step_is_lr_times_sign)
{
    rlt_mlp_layer layers[] = {{3, RLT_NN_ACT_NONE}};
    rlt_mlp_spec spec = spec_of(2, 1, layers);
    rlt_mlp *m = make_mlp(&spec, 31);
    size_t n = rlt_mlp_n_params(m);
    cr_assert_eq(n, 9u);
    float before[9], g[9] = {0.5f, -2, 1e-3f, 0, 3, -0.25f, 7, -7, 1};
    memcpy(before, rlt_mlp_params(m), sizeof before);
    memcpy(rlt_mlp_grads(m), g, sizeof g);
    rlt_adam *a = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_adam_create(&(rlt_adam_opts){.lr = 0.01}, m, &a, &d), RLT_STATUS_OK, "%s", d.message);
    const rlt_adam_opts *o = rlt_adam_get_opts(a);
    cr_assert(o->lr == 0.01 && o->beta1 == 0.9 && o->beta2 == 0.999 && o->eps == 1e-8 && o->weight_decay == 0);
    cr_assert_eq(rlt_adam_n_steps(a), 0);
    cr_assert_eq(rlt_adam_step(a, m, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_adam_n_steps(a), 1);
    /* bias-corrected: m_hat = g, v_hat = g^2, so the step is lr g / (|g| + eps) */
    for (size_t i = 0; i < n; i++) {
        double want = before[i] - 0.01 * g[i] / (fabs(g[i]) + 1e-8);
        cr_assert_float_eq(rlt_mlp_params(m)[i], want, 1e-6, "[%zu] %.9g vs %.9g", i, rlt_mlp_params(m)[i], want);
    }
    rlt_adam_destroy(a);
    rlt_mlp_destroy(m);
}

Test(adam, weight_decay_is_decoupled)
{
    rlt_mlp_layer layers[] = {{3, RLT_NN_ACT_NONE}};
    rlt_mlp_spec spec = spec_of(2, 1, layers);
    rlt_mlp *m = make_mlp(&spec, 32);
    float before[9];
    memcpy(before, rlt_mlp_params(m), sizeof before);
    rlt_adam *a = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_adam_create(&(rlt_adam_opts){.lr = 0.1, .weight_decay = 0.5}, m, &a, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_adam_step(a, m, &d), RLT_STATUS_OK); /* zero gradients: only the decay */
    for (int i = 0; i < 9; i++) cr_assert_float_eq(rlt_mlp_params(m)[i], before[i] * 0.95f, 1e-7, "[%d]", i);
    rlt_adam_destroy(a);
    rlt_mlp_destroy(m);
}

/* Full-batch regression with MSE; returns the final loss. */
static double fit(const rlt_mlp_spec *spec, uint64_t seed, const rlt_adam_opts *opts, int n, const float *x,
                  const float *t, int batch, int n_steps, float *out_params_checksum)
{
    rlt_mlp *m = make_mlp(spec, seed);
    rlt_adam *a = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_adam_create(opts, m, &a, &d), RLT_STATUS_OK, "%s", d.message);
    int n_in = spec->n_inputs, n_out = rlt_mlp_n_outputs(m);
    float *y = alloc_floats((size_t)n * (size_t)n_out), *dy = alloc_floats((size_t)n * (size_t)n_out);
    double loss = 0;
    for (int step = 0; step < n_steps; step++) {
        int start = (step * batch) % n;
        int rows = RLT_MIN(batch, n - start);
        cr_assert_eq(rlt_mlp_forward(m, rows, x + (size_t)start * (size_t)n_in, y, &d), RLT_STATUS_OK);
        cr_assert_eq(rlt_nn_loss_mse(rows * n_out, y, t + (size_t)start * (size_t)n_out, &loss, dy, &d),
                     RLT_STATUS_OK, "%s", d.message);
        rlt_mlp_zero_grad(m);
        cr_assert_eq(rlt_mlp_backward(m, rows, dy, NULL, &d), RLT_STATUS_OK);
        cr_assert_eq(rlt_adam_step(a, m, &d), RLT_STATUS_OK, "%s", d.message);
    }
    cr_assert_eq(rlt_mlp_predict(m, n, x, y, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_nn_loss_mse(n * n_out, y, t, &loss, NULL, &d), RLT_STATUS_OK);
    if (out_params_checksum) {
        float sum = 0;
        for (size_t i = 0; i < rlt_mlp_n_params(m); i++) sum += rlt_mlp_params(m)[i] * (float)(i % 7 + 1);
        *out_params_checksum = sum;
    }
    free(dy);
    free(y);
    rlt_adam_destroy(a);
    rlt_mlp_destroy(m);
    return loss;
}

Test(adam, learns_sin)
{
    enum { N = 64 };
    float x[N], t[N];
    double var = 0;
    for (int i = 0; i < N; i++) {
        x[i] = (float)(-M_PI + 2 * M_PI * i / (N - 1));
        t[i] = sinf(x[i]);
        var += (double)t[i] * t[i] / N;
    }
    rlt_mlp_layer layers[] = {{32, RLT_NN_ACT_TANH}, {32, RLT_NN_ACT_TANH}, {1, RLT_NN_ACT_NONE}};
    rlt_mlp_spec spec = spec_of(1, 3, layers);
    rlt_adam_opts opts = {.lr = 1e-2};
    float sum1 = 0, sum2 = 0;
    double loss = fit(&spec, 33, &opts, N, x, t, N, 1500, &sum1);
    cr_log_info("sin: MSE %g after 1500 steps (variance %g)", loss, var);
    cr_assert_lt(loss, 1e-3 * var, "sin: MSE %g after 1500 steps (variance %g)", loss, var);
    double again = fit(&spec, 33, &opts, N, x, t, N, 1500, &sum2);
    cr_assert_eq(loss, again, "one seed, two results: %.17g vs %.17g", loss, again);
    cr_assert_eq(sum1, sum2);
}

Test(adam, learns_a_linear_map_from_minibatches)
{
    enum { N = 256, IN = 4, OUT = 3 };
    static const float w[OUT][IN] = {{1, -2, 0.5f, 0}, {0.25f, 0, 1, -1}, {-0.5f, 1.5f, 0, 2}};
    static const float b[OUT] = {0.1f, -0.3f, 0.7f};
    float x[N * IN], t[N * OUT];
    rlt_rng rng;
    rlt_rng_seed(&rng, 34);
    fill_uniform(&rng, x, N * IN, -1, 1);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < OUT; j++) {
            double s = b[j];
            for (int k = 0; k < IN; k++) s += (double)w[j][k] * x[i * IN + k];
            t[i * OUT + j] = (float)s;
        }
    rlt_mlp_layer layers[] = {{OUT, RLT_NN_ACT_NONE}};
    rlt_mlp_spec spec = spec_of(IN, 1, layers);
    double loss = fit(&spec, 35, &(rlt_adam_opts){.lr = 2e-2}, N, x, t, 32, 2000, NULL);
    cr_log_info("linear map: MSE %g after 2000 minibatch steps", loss);
    cr_assert_lt(loss, 1e-6, "linear map: MSE %g after 2000 minibatch steps", loss);
}

Test(adam, refuses_bad_options_and_bad_gradients)
{
    rlt_mlp_spec spec = spec_of(7, 3, k_dqn_layers);
    rlt_mlp *m = make_mlp(&spec, 36);
    struct {
        rlt_adam_opts o;
        const char *message;
    } cases[] = {
        {{.lr = -1}, "lr -1 must be positive"},      {{.lr = INFINITY}, "lr inf"},
        {{.beta1 = 1}, "beta1 1 is outside (0, 1)"}, {{.beta2 = -0.5}, "beta2 -0.5"},
        {{.eps = -1e-8}, "eps -1e-08"},              {{.weight_decay = -1}, "weight_decay -1"},
    };
    for (size_t i = 0; i < RLT_ARRAY_LEN(cases); i++) {
        rlt_adam *a = NULL;
        rlt_diag d = {0};
        cr_assert_eq(rlt_adam_create(&cases[i].o, m, &a, &d), RLT_STATUS_INVALID_ARGUMENT, "case %zu", i);
        cr_assert_null(a);
        cr_assert(strstr(d.message, cases[i].message), "case %zu: '%s' lacks '%s'", i, d.message, cases[i].message);
    }
    rlt_adam *a = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_adam_create(NULL, m, &a, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_adam_set_lr(a, 0.5, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_adam_get_opts(a)->lr, 0.5);
    cr_assert_eq(rlt_adam_set_lr(a, 0, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert_eq(rlt_adam_get_opts(a)->lr, 0.5);

    size_t n = rlt_mlp_n_params(m);
    float *before = alloc_floats(n);
    memcpy(before, rlt_mlp_params(m), n * sizeof *before);
    rlt_mlp_grads(m)[3] = INFINITY;
    d = (rlt_diag){0};
    cr_assert_eq(rlt_adam_step(a, m, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "the gradient of layer 0 weight [0][3] is inf: step 1 not taken"), "%s", d.message);
    cr_assert_eq(rlt_adam_n_steps(a), 0);
    cr_assert_eq(memcmp(before, rlt_mlp_params(m), n * sizeof *before), 0);

    rlt_mlp_layer small_layers[] = {{2, RLT_NN_ACT_NONE}};
    rlt_mlp_spec small = spec_of(2, 1, small_layers);
    rlt_mlp *other = make_mlp(&small, 37);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_adam_step(a, other, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "the network has 6 parameters but the optimiser was made for"), "%s", d.message);
    rlt_mlp_destroy(other);
    free(before);
    rlt_adam_destroy(a);
    rlt_mlp_destroy(m);
}

/* ---- weights files --------------------------------------------------------- */

/* Offsets in a v1 file (docs/formats.md). */
#define OFF_VERSION 8
#define OFF_FLAGS 12
#define OFF_N_INPUTS 16
#define OFF_N_LAYERS 20
#define OFF_LAYERS 24
static size_t off_n_params(int n_layers) { return OFF_LAYERS + 8 * (size_t)n_layers; }
static size_t off_params(int n_layers) { return off_n_params(n_layers) + 8; }

static void put_le(char *bytes, size_t at, uint64_t v, int n_bytes)
{
    for (int i = 0; i < n_bytes; i++) bytes[at + (size_t)i] = (char)(unsigned char)(v >> (8 * i));
}

/* Rewrites the trailing checksum after an edit, so that the edit itself is
 * what the loader finds. */
static void fix_checksum(char *bytes, size_t len)
{
    put_le(bytes, len - 8, rlt_hash_bytes(RLT_HASH_SEED, bytes, len - 8), 8);
}

static void put_f32_at(char *bytes, size_t at, float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    put_le(bytes, at, bits, 4);
}

static void put_f64_at(char *bytes, size_t at, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    put_le(bytes, at, bits, 8);
}

/* A small network (7 -> 16 relu -> 8 tanh -> 5) trained a few steps, with
 * its optimiser. */
static void trained_pair(rlt_mlp **out_m, rlt_adam **out_a, const float *x, int n_rows, int n_steps)
{
    rlt_mlp_spec spec = spec_of(7, 3, k_dqn_layers);
    rlt_mlp *m = make_mlp(&spec, 38);
    rlt_adam *a = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_adam_create(&(rlt_adam_opts){.lr = 1e-2, .weight_decay = 1e-3}, m, &a, &d), RLT_STATUS_OK);
    size_t n_out = (size_t)n_rows * 5;
    float *y = alloc_floats(n_out), *t = alloc_floats(n_out), *dy = alloc_floats(n_out);
    for (int i = 0; i < n_rows * 5; i++) t[i] = (float)(i % 3) - 1;
    double loss;
    for (int s = 0; s < n_steps; s++) {
        cr_assert_eq(rlt_mlp_forward(m, n_rows, x, y, &d), RLT_STATUS_OK);
        cr_assert_eq(rlt_nn_loss_mse(n_rows * 5, y, t, &loss, dy, &d), RLT_STATUS_OK);
        rlt_mlp_zero_grad(m);
        cr_assert_eq(rlt_mlp_backward(m, n_rows, dy, NULL, &d), RLT_STATUS_OK);
        cr_assert_eq(rlt_adam_step(a, m, &d), RLT_STATUS_OK);
    }
    free(dy);
    free(t);
    free(y);
    *out_m = m;
    *out_a = a;
}

/* One more training step, as trained_pair takes them. */
static void train_step(rlt_mlp *m, rlt_adam *a, const float *x, int n_rows)
{
    float y[8 * 5], t[8 * 5], dy[8 * 5];
    cr_assert_leq(n_rows, 8);
    for (int i = 0; i < n_rows * 5; i++) t[i] = (float)(i % 3) - 1;
    rlt_diag d = {0};
    double loss;
    cr_assert_eq(rlt_mlp_forward(m, n_rows, x, y, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_nn_loss_mse(n_rows * 5, y, t, &loss, dy, &d), RLT_STATUS_OK);
    rlt_mlp_zero_grad(m);
    cr_assert_eq(rlt_mlp_backward(m, n_rows, dy, NULL, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_adam_step(a, m, &d), RLT_STATUS_OK);
}

Test(weights_file, round_trip_gives_identical_outputs)
{
    char *dir = tmp_dir_make("/tmp/rlt_nn_XXXXXX");
    char path[512];
    snprintf(path, sizeof path, "%s/q.rltnn", dir);
    float x[8 * 7], y1[8 * 5], y2[8 * 5];
    rlt_rng rng;
    rlt_rng_seed(&rng, 39);
    fill_uniform(&rng, x, RLT_ARRAY_LEN(x), -1, 1);
    rlt_mlp *m = NULL;
    rlt_adam *a = NULL;
    trained_pair(&m, &a, x, 8, 5);
    rlt_diag d = {0};
    cr_assert_eq(rlt_mlp_save(m, NULL, path, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_mlp *loaded = NULL;
    rlt_adam *loaded_a = (rlt_adam *)&d; /* must be reset to NULL: no state was saved */
    cr_assert_eq(rlt_mlp_load(path, &loaded, &loaded_a, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_null(loaded_a);
    cr_assert(rlt_mlp_spec_equal(rlt_mlp_get_spec(loaded), rlt_mlp_get_spec(m)));
    cr_assert_eq(memcmp(rlt_mlp_params(loaded), rlt_mlp_params(m), rlt_mlp_n_params(m) * sizeof(float)), 0);
    cr_assert_eq(rlt_mlp_predict(m, 8, x, y1, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_mlp_predict(loaded, 8, x, y2, &d), RLT_STATUS_OK);
    cr_assert_eq(memcmp(y1, y2, sizeof y1), 0, "outputs differ after a round trip");
    /* no temporary file left behind */
    DIR *dh = opendir(dir);
    int n_entries = 0;
    for (struct dirent *e; (e = readdir(dh)) != NULL;) n_entries += e->d_name[0] != '.';
    closedir(dh);
    cr_assert_eq(n_entries, 1);
    rlt_mlp_destroy(loaded);
    rlt_adam_destroy(a);
    rlt_mlp_destroy(m);
    tmp_remove_tree(dir);
    free(dir);
}

/* Saved with its optimiser mid-training, a network resumes bit for bit. */
Test(weights_file, training_resumes_exactly)
{
    float x[8 * 7];
    rlt_rng rng;
    rlt_rng_seed(&rng, 40);
    fill_uniform(&rng, x, RLT_ARRAY_LEN(x), -1, 1);
    rlt_mlp *m = NULL;
    rlt_adam *a = NULL;
    trained_pair(&m, &a, x, 8, 10);
    char *bytes = NULL;
    size_t len = 0;
    rlt_diag d = {0};
    cr_assert_eq(rlt_mlp_save_bytes(m, a, &bytes, &len, &d), RLT_STATUS_OK, "%s", d.message);
    size_t n = rlt_mlp_n_params(m);
    cr_assert_eq(len, off_params(3) + 4 * n + 48 + 8 * n + 8);
    rlt_mlp *m2 = NULL;
    rlt_adam *a2 = NULL;
    cr_assert_eq(rlt_mlp_load_bytes(bytes, len, "mem", &m2, &a2, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_not_null(a2);
    cr_assert_eq(rlt_adam_n_steps(a2), 10);
    cr_assert_eq(memcmp(rlt_adam_get_opts(a2), rlt_adam_get_opts(a), sizeof(rlt_adam_opts)), 0);
    for (int s = 0; s < 5; s++) {
        train_step(m, a, x, 8);
        train_step(m2, a2, x, 8);
    }
    cr_assert_eq(memcmp(rlt_mlp_params(m), rlt_mlp_params(m2), n * sizeof(float)), 0, "resumed training differs");
    /* loading without asking for the state is fine too */
    rlt_mlp *m3 = NULL;
    cr_assert_eq(rlt_mlp_load_bytes(bytes, len, "mem", &m3, NULL, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_mlp_destroy(m3);
    rlt_free(bytes);
    rlt_adam_destroy(a2);
    rlt_mlp_destroy(m2);
    rlt_adam_destroy(a);
    rlt_mlp_destroy(m);
}

/* Every kind of damage, each refused with PARSE_ERROR and its message. */
Test(weights_file, damaged_files_are_refused)
{
    float x[4 * 7] = {0};
    rlt_mlp *m = NULL;
    rlt_adam *a = NULL;
    trained_pair(&m, &a, x, 4, 2);
    char *good = NULL, *good_adam = NULL;
    size_t len = 0, len_adam = 0;
    rlt_diag d = {0};
    cr_assert_eq(rlt_mlp_save_bytes(m, NULL, &good, &len, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_mlp_save_bytes(m, a, &good_adam, &len_adam, &d), RLT_STATUS_OK);
    size_t n = rlt_mlp_n_params(m);
    size_t p0 = off_params(3);

    size_t lr_at = p0 + 4 * n; /* then beta1, beta2, eps, weight_decay, n_steps, m [n], v [n] */
    size_t m_at = lr_at + 48, v_at = m_at + 4 * n;

    enum { EDIT_NONE, EDIT_U32, EDIT_U64, EDIT_F32, EDIT_F64, EDIT_XOR, EDIT_CHECKSUM };
    struct {
        const char *name;
        bool with_adam;
        size_t cut;   /* bytes dropped from the end (SIZE_MAX: all) */
        size_t extra; /* zero bytes added at the end */
        int edit;
        size_t at;
        uint64_t u;
        double f;
        bool fix; /* recompute the checksum after the edit */
        const char *message;
    } cases[] = {
        {"empty", false, SIZE_MAX, 0, EDIT_NONE, 0, 0, 0, false, "truncated: reading the magic and version"},
        {"bad magic", false, 0, 0, EDIT_U32, 0, 0x4e4f534a, 0, false, "not an rltune weights file"},
        {"version 2", false, 0, 0, EDIT_U32, OFF_VERSION, 2, 0, true,
         "version 2 is not supported (this build reads version 1)"},
        {"unknown flags", false, 0, 0, EDIT_U32, OFF_FLAGS, 6, 0, true, "unknown flags 0x6"},
        {"header cut", false, len - 22, 0, EDIT_NONE, 0, 0, 0, false,
         "truncated: reading the flags, n_inputs and n_layers needs 24 bytes, the file has 22"},
        {"layers cut", false, len - 30, 0, EDIT_NONE, 0, 0, 0, false, "truncated: reading the layers"},
        {"weights cut", false, 40, 0, EDIT_NONE, 0, 0, 0, false, "truncated: the file has"},
        {"trailing bytes", false, 0, 3, EDIT_NONE, 0, 0, 0, false, "3 trailing bytes"},
        {"no inputs", false, 0, 0, EDIT_U32, OFF_N_INPUTS, 0, 0, true, "n_inputs 0 is outside 1..65536"},
        {"no layers", false, 0, 0, EDIT_U32, OFF_N_LAYERS, 0, 0, true, "n_layers 0 is outside 1..16"},
        {"too many layers", false, 0, 0, EDIT_U32, OFF_N_LAYERS, 99, 0, true, "n_layers 99"},
        {"empty layer", false, 0, 0, EDIT_U32, OFF_LAYERS + 8, 0, 0, true, "layer 1 has n_units 0"},
        {"huge layer", false, 0, 0, EDIT_U32, OFF_LAYERS, 0xffffffffu, 0, true, "layer 0 has n_units 4294967295"},
        {"unknown activation", false, 0, 0, EDIT_U32, OFF_LAYERS + 4, 3, 0, true, "layer 0 has activation 3"},
        {"wider layer", false, 0, 0, EDIT_U32, OFF_LAYERS + 16, 6, 0, true, "mismatched sizes: the header says"},
        {"n_params off", false, 0, 0, EDIT_U64, off_n_params(3), 12345, 0, true,
         "mismatched sizes: the header says 12345 parameters but its layers have"},
        {"flipped weight", false, 0, 0, EDIT_XOR, p0 + 100, 0x10, 0, false, "checksum mismatch"},
        {"flipped checksum", false, 0, 0, EDIT_CHECKSUM, 0, 0, 0, false, "checksum mismatch"},
        {"nan weight", false, 0, 0, EDIT_F32, p0, 0, NAN, true, "the value of layer 0 weight [0][0] is nan"},
        {"inf bias", false, 0, 0, EDIT_F32, p0 + 4 * (16 * 7) + 4 * 3, 0, -INFINITY, true,
         "the value of layer 0 bias [3] is -inf"},
        {"adam cut", true, 1, 0, EDIT_NONE, 0, 0, 0, false, "parameters and optimiser state"},
        {"adam lr", true, 0, 0, EDIT_F64, lr_at, 0, -1, true, "bad optimiser options (adam: lr -1"},
        {"adam zero eps", true, 0, 0, EDIT_F64, lr_at + 24, 0, 0, true, "must not be 0"},
        {"adam beta2", true, 0, 0, EDIT_F64, lr_at + 16, 0, 1.5, true, "beta2 1.5 is outside (0, 1)"},
        {"adam steps", true, 0, 0, EDIT_U64, lr_at + 40, UINT64_MAX, 0, true,
         "step count 18446744073709551615 is too large"},
        {"adam nan m", true, 0, 0, EDIT_F32, m_at + 4, 0, NAN, true, "first moment of layer 0 weight [0][1] is nan"},
        {"adam negative v", true, 0, 0, EDIT_F32, v_at + 8, 0, -1, true,
         "second moment of layer 0 weight [0][2] is -1: it must be finite and >= 0"},
    };
    for (size_t i = 0; i < RLT_ARRAY_LEN(cases); i++) {
        const char *src = cases[i].with_adam ? good_adam : good;
        size_t src_len = cases[i].with_adam ? len_adam : len;
        size_t keep = cases[i].cut == SIZE_MAX ? 0 : src_len - cases[i].cut;
        size_t blen = keep + cases[i].extra;
        char *b = calloc(blen + 1, 1);
        cr_assert_not_null(b);
        memcpy(b, src, keep);
        size_t at = cases[i].at;
        switch (cases[i].edit) {
        case EDIT_U32:
            put_le(b, at, cases[i].u, 4);
            break;
        case EDIT_U64:
            put_le(b, at, cases[i].u, 8);
            break;
        case EDIT_F32:
            put_f32_at(b, at, (float)cases[i].f);
            break;
        case EDIT_F64:
            put_f64_at(b, at, cases[i].f);
            break;
        case EDIT_XOR:
            b[at] ^= (char)cases[i].u;
            break;
        case EDIT_CHECKSUM:
            b[blen - 1] ^= 1;
            break;
        default:
            break;
        }
        if (cases[i].fix) fix_checksum(b, blen);
        rlt_mlp *got = (rlt_mlp *)b; /* must be reset to NULL */
        rlt_adam *got_a = (rlt_adam *)b;
        rlt_diag dd = {0};
        rlt_status st = rlt_mlp_load_bytes(b, blen, "damaged.rltnn", &got, &got_a, &dd);
        cr_assert_eq(st, RLT_STATUS_PARSE_ERROR, "%s: %s (%s)", cases[i].name, rlt_status_str(st), dd.message);
        cr_assert_null(got, "%s", cases[i].name);
        cr_assert_null(got_a, "%s", cases[i].name);
        cr_assert(strstr(dd.message, "'damaged.rltnn'"), "%s: no file name in '%s'", cases[i].name, dd.message);
        cr_assert(strstr(dd.message, cases[i].message), "%s: '%s' lacks '%s'", cases[i].name, dd.message,
                  cases[i].message);
        free(b);
    }
    /* the unedited bytes load, so every refusal above is the edit's */
    rlt_mlp *ok = NULL;
    cr_assert_eq(rlt_mlp_load_bytes(good, len, "good", &ok, NULL, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_mlp_destroy(ok);
    cr_assert_eq(rlt_mlp_load_bytes(NULL, 0, NULL, &ok, NULL, &d), RLT_STATUS_PARSE_ERROR);
    rlt_free(good_adam);
    rlt_free(good);
    rlt_adam_destroy(a);
    rlt_mlp_destroy(m);
}

Test(weights_file, file_errors_name_the_file)
{
    char *dir = tmp_dir_make("/tmp/rlt_nn_XXXXXX");
    char path[512];
    snprintf(path, sizeof path, "%s/missing.rltnn", dir);
    rlt_mlp *m = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_mlp_load(path, &m, NULL, &d), RLT_STATUS_IO_ERROR);
    cr_assert(strstr(d.message, path), "%s", d.message);
    snprintf(path, sizeof path, "%s/text.rltnn", dir);
    tmp_file_write_text(path, "rltune-cost-model v1\n");
    d = (rlt_diag){0};
    cr_assert_eq(rlt_mlp_load(path, &m, NULL, &d), RLT_STATUS_PARSE_ERROR);
    cr_assert(strstr(d.message, path) && strstr(d.message, "not an rltune weights file"), "%s", d.message);
    snprintf(path, sizeof path, "%s/no/such/dir/q.rltnn", dir);
    rlt_mlp_layer layers[] = {{2, RLT_NN_ACT_NONE}};
    rlt_mlp_spec spec = spec_of(2, 1, layers);
    rlt_mlp *small = make_mlp(&spec, 41);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_mlp_save(small, NULL, path, &d), RLT_STATUS_IO_ERROR);
    cr_assert(strstr(d.message, "no/such/dir"), "%s", d.message);
    /* an optimiser of another network is not saved with this one */
    rlt_mlp_spec big_spec = spec_of(7, 3, k_dqn_layers);
    rlt_mlp *big = make_mlp(&big_spec, 42);
    rlt_adam *a = NULL;
    cr_assert_eq(rlt_adam_create(NULL, big, &a, &d), RLT_STATUS_OK);
    char *bytes = NULL;
    size_t len = 0;
    d = (rlt_diag){0};
    cr_assert_eq(rlt_mlp_save_bytes(small, a, &bytes, &len, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert_null(bytes);
    cr_assert(strstr(d.message, "optimiser made for"), "%s", d.message);
    rlt_adam_destroy(a);
    rlt_mlp_destroy(big);
    rlt_mlp_destroy(small);
    tmp_remove_tree(dir);
    free(dir);
}

/* The committed corpus: files named valid_* load (and predict finite
 * outputs), every other file is refused with a message naming it. The
 * loader must never crash on any of them (ASan and UBSan builds check). */
Test(weights_file, corpus_replays)
{
    DIR *dir = opendir(CORPUS_DIR);
    cr_assert_not_null(dir, "cannot open %s", CORPUS_DIR);
    int n_files = 0, n_valid = 0;
    for (struct dirent *e; (e = readdir(dir)) != NULL;) {
        if (e->d_name[0] == '.') continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", CORPUS_DIR, e->d_name);
        n_files++;
        bool is_valid = strncmp(e->d_name, "valid_", 6) == 0;
        rlt_mlp *m = NULL;
        rlt_adam *a = NULL;
        rlt_diag d = {0};
        rlt_status st = rlt_mlp_load(path, &m, &a, &d);
        if (!is_valid) {
            cr_assert_eq(st, RLT_STATUS_PARSE_ERROR, "%s: %s (%s)", e->d_name, rlt_status_str(st), d.message);
            cr_assert_null(m, "%s", e->d_name);
            cr_assert(strstr(d.message, e->d_name), "%s: message '%s' does not name it", e->d_name, d.message);
            continue;
        }
        cr_assert_eq(st, RLT_STATUS_OK, "%s: %s", e->d_name, d.message);
        n_valid++;
        int n_in = rlt_mlp_n_inputs(m), n_out = rlt_mlp_n_outputs(m);
        float *x = alloc_floats((size_t)n_in), *y = alloc_floats((size_t)n_out);
        for (int i = 0; i < n_in; i++) x[i] = 0.5f;
        cr_assert_eq(rlt_mlp_predict(m, 1, x, y, &d), RLT_STATUS_OK);
        for (int j = 0; j < n_out; j++) cr_assert(isfinite(y[j]), "%s: output %d is %g", e->d_name, j, (double)y[j]);
        free(y);
        free(x);
        rlt_adam_destroy(a);
        rlt_mlp_destroy(m);
    }
    closedir(dir);
    cr_assert_geq(n_files, 12, "the corpus has only %d files", n_files);
    cr_assert_geq(n_valid, 2, "the corpus has only %d valid files", n_valid);
}

/* ---- allocation failures --------------------------------------------------- */

/* Everything that allocates, failing at each allocation in turn: the
 * failure is OUT_OF_MEMORY with a message, nothing leaks, and once the
 * allocations stop failing the same sequence succeeds. */
Test(nn_alloc, failures_are_reported_without_leaks)
{
    char *dir = tmp_dir_make("/tmp/rlt_nn_XXXXXX");
    char path[512];
    snprintf(path, sizeof path, "%s/w.rltnn", dir);
    rlt_mlp_spec spec = spec_of(7, 3, k_dqn_layers);
    float x[6 * 7] = {0}, y[6 * 5], dy[6 * 5] = {0};
    int n_failures = 0;
    for (long k = 1;; k++) {
        rlt_diag d = {0};
        rlt_mlp *m = NULL, *loaded = NULL;
        rlt_adam *a = NULL, *loaded_a = NULL;
        rlt_alloc_fail_after(k);
        rlt_status st = rlt_mlp_create(&spec, 1, &m, &d);
        if (st == RLT_STATUS_OK) st = rlt_mlp_forward(m, 6, x, y, &d);
        if (st == RLT_STATUS_OK) st = rlt_mlp_backward(m, 6, dy, NULL, &d);
        if (st == RLT_STATUS_OK) st = rlt_mlp_predict(m, 6, x, y, &d);
        if (st == RLT_STATUS_OK) st = rlt_adam_create(NULL, m, &a, &d);
        if (st == RLT_STATUS_OK) st = rlt_mlp_save(m, a, path, &d);
        if (st == RLT_STATUS_OK) st = rlt_mlp_load(path, &loaded, &loaded_a, &d);
        rlt_alloc_fail_after(0);
        rlt_adam_destroy(loaded_a);
        rlt_mlp_destroy(loaded);
        rlt_adam_destroy(a);
        rlt_mlp_destroy(m);
        if (st == RLT_STATUS_OK) break;
        cr_assert_eq(st, RLT_STATUS_OUT_OF_MEMORY, "failing allocation %ld: %s (%s)", k, rlt_status_str(st),
                     d.message);
        cr_assert(strstr(d.message, "out of memory"), "allocation %ld: %s", k, d.message);
        n_failures++;
        cr_assert_lt(k, 1000, "allocations never stop failing");
    }
    cr_assert_geq(n_failures, 8, "only %d allocations were tried", n_failures);
    tmp_remove_tree(dir);
    free(dir);
    assert_no_leaks();
}

/* PPO's clipped surrogate: its gradient against finite differences, rows
 * gathered, and zero where the clip holds. */
Test(nn, ppo_clip_gradient_matches_finite_differences)
{
    enum { M = 6, R = 9 };
    const float logp_old[R] = {-1.0f, -2.0f, -0.5f, -1.5f, -3.0f, -0.2f, -1.1f, -0.7f, -2.2f};
    const float adv[R] = {1.0f, -1.0f, 0.5f, -2.0f, 1.5f, -0.3f, 0.8f, 2.0f, -1.2f};
    const int rows[M] = {8, 0, 3, 5, 1, 7};
    /* ratios near 1 (inside the clip) and far from it (clipped when it binds) */
    float logp[M] = {-2.1f, -0.9f, -1.6f, 0.5f, -2.5f, 0.0f};
    float grad[M], g2[M];
    double clip = 0.2;
    double loss = rlt_nn_ppo_clip_grad(M, logp, logp_old, adv, rows, clip, grad);
    cr_assert(isfinite(loss));
    for (int i = 0; i < M; i++) {
        float save = logp[i];
        double h = 1e-3;
        logp[i] = save + (float)h;
        double up = rlt_nn_ppo_clip_grad(M, logp, logp_old, adv, rows, clip, g2);
        logp[i] = save - (float)h;
        double down = rlt_nn_ppo_clip_grad(M, logp, logp_old, adv, rows, clip, g2);
        logp[i] = save;
        double numeric = (up - down) / (2 * h);
        cr_assert_float_eq(grad[i], numeric, 1e-3, "row %d: %g vs %g", i, grad[i], numeric);
    }
    /* row 1: ratio e^0.1, inside [0.8, 1.2]: a gradient; row 5: ratio e^0.7
     * with a positive advantage, clipped at 1.2: none */
    cr_assert_neq(grad[1], 0.0f);
    cr_assert_eq(grad[5], 0.0f);
}
