/*
 * test_gnn.c - nn's graph layers (src/nn/gnn.c): the forward by hand on a
 * path graph; every parameter's and input's gradient against central
 * finite differences (the nn module's rule for every layer); bad edges and
 * shapes refused; a network rebuilt from its layers computes the same.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/nn.h"

static rlt_gnn *make(int n_in, int n_hidden, int n_layers, uint64_t seed)
{
    rlt_gnn *g = NULL;
    rlt_diag d = {0};
    rlt_gnn_spec s = {n_in, n_hidden, n_layers};
    cr_assert_eq(rlt_gnn_create(&s, seed, &g, &d), RLT_STATUS_OK, "%s", d.message);
    return g;
}

/* One layer, identity-like weights set by hand: h' = relu(h + mean of neighbours). */
Test(gnn, forward_by_hand)
{
    rlt_gnn *g = make(1, 1, 1, 1);
    float *w, *b;
    rlt_mlp_layer_params(rlt_gnn_layer(g, 0), 0, &w, &b);
    w[0] = 1; /* the node's own feature */
    w[1] = 1; /* its neighbours' mean */
    b[0] = 0;
    /* path 0 - 1 - 2, node 3 alone */
    float x[4] = {1, 2, -10, 5}, h[4];
    int edges[] = {0, 1, 1, 2};
    rlt_diag d = {0};
    cr_assert_eq(rlt_gnn_forward(g, 4, x, 2, edges, h, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_float_eq(h[0], 1 + 2, 1e-6);
    cr_assert_float_eq(h[1], 0, 1e-6); /* relu(2 + (1 - 10) / 2) */
    cr_assert_float_eq(h[2], 0, 1e-6); /* relu(-10 + 2) */
    cr_assert_float_eq(h[3], 5, 1e-6); /* no neighbours: zeros */
    rlt_gnn_destroy(g);
}

/* L = sum(c * h): its gradient against finite differences. */
static double loss(rlt_gnn *g, int n, const float *x, int ne, const int *edges, const float *c, int width)
{
    float *h = malloc((size_t)n * (size_t)width * sizeof *h);
    rlt_diag d = {0};
    cr_assert_eq(rlt_gnn_forward(g, n, x, ne, edges, h, &d), RLT_STATUS_OK);
    double s = 0;
    for (int i = 0; i < n * width; i++) s += (double)c[i] * h[i];
    free(h);
    return s;
}

Test(gnn, gradients_match_finite_differences)
{
    const int n = 6, n_in = 5, hid = 7, layers = 3, ne = 6;
    int edges[] = {0, 1, 1, 2, 2, 3, 0, 3, 4, 5, 1, 4};
    rlt_gnn *g = make(n_in, hid, layers, 17);
    uint64_t s = 99;
    float x[6 * 5], c[6 * 7];
    for (int i = 0; i < n * n_in; i++) x[i] = (float)((int)((s = s * 6364136223846793005ull + 1) >> 60) - 8) / 4;
    for (int i = 0; i < n * hid; i++) c[i] = (float)((int)((s = s * 6364136223846793005ull + 1) >> 60) - 8) / 8;
    /* biases away from 0 so that few units sit at the ReLU's kink */
    for (int l = 0; l < layers; l++) {
        float *b;
        rlt_mlp_layer_params(rlt_gnn_layer(g, l), 0, NULL, &b);
        for (int j = 0; j < hid; j++) b[j] = 0.3f;
    }
    float h[6 * 7], dx[6 * 5];
    rlt_diag d = {0};
    cr_assert_eq(rlt_gnn_forward(g, n, x, ne, edges, h, &d), RLT_STATUS_OK);
    rlt_gnn_zero_grad(g);
    cr_assert_eq(rlt_gnn_backward(g, c, dx, &d), RLT_STATUS_OK, "%s", d.message);
    const double eps = 1e-3;
    int n_checked = 0, n_bad = 0;
    for (int l = 0; l < layers; l++) {
        rlt_mlp *m = rlt_gnn_layer(g, l);
        size_t np = rlt_mlp_n_params(m);
        float *params = rlt_mlp_params(m);
        float *grads = malloc(np * sizeof *grads);
        memcpy(grads, rlt_mlp_grads(m), np * sizeof *grads);
        for (size_t i = 0; i < np; i++) {
            float keep = params[i];
            params[i] = keep + (float)eps;
            double up = loss(g, n, x, ne, edges, c, hid);
            params[i] = keep - (float)eps;
            double down = loss(g, n, x, ne, edges, c, hid);
            params[i] = keep;
            double fd = (up - down) / (2 * eps);
            n_checked++;
            if (fabs(fd - grads[i]) > 2e-2 * fmax(1.0, fabs(fd))) n_bad++;
        }
        free(grads);
    }
    for (int i = 0; i < n * n_in; i++) {
        float keep = x[i];
        x[i] = keep + (float)eps;
        double up = loss(g, n, x, ne, edges, c, hid);
        x[i] = keep - (float)eps;
        double down = loss(g, n, x, ne, edges, c, hid);
        x[i] = keep;
        double fd = (up - down) / (2 * eps);
        n_checked++;
        if (fabs(fd - dx[i]) > 2e-2 * fmax(1.0, fabs(fd))) n_bad++;
    }
    /* a few may straddle a ReLU kink within eps; no more than 2% */
    cr_assert_leq(n_bad * 50, n_checked, "%d of %d gradients differ from finite differences", n_bad, n_checked);
    rlt_gnn_destroy(g);
}

Test(gnn, bad_input_is_refused)
{
    rlt_gnn *g = make(2, 3, 2, 1);
    float x[4] = {0}, h[6];
    int edges[] = {0, 2};
    rlt_diag d = {0};
    cr_assert_eq(rlt_gnn_forward(g, 2, x, 1, edges, h, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "edge 0 names node 2 of 2"), "%s", d.message);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_gnn_backward(g, h, NULL, &d), RLT_STATUS_INVALID_ARGUMENT, "backward without a forward");
    rlt_gnn_spec bad = {0, 3, 2};
    rlt_gnn *none = NULL;
    d = (rlt_diag){0};
    cr_assert_eq(rlt_gnn_create(&bad, 1, &none, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert_null(none);
    rlt_gnn_destroy(g);
}

Test(gnn, rebuilt_from_its_layers_computes_the_same)
{
    rlt_gnn *a = make(3, 4, 2, 5);
    rlt_diag d = {0};
    rlt_mlp *layers[2];
    for (int l = 0; l < 2; l++) {
        rlt_mlp_spec s = *rlt_mlp_get_spec(rlt_gnn_layer(a, l));
        cr_assert_eq(rlt_mlp_create(&s, 1000 + (uint64_t)l, &layers[l], &d), RLT_STATUS_OK);
        cr_assert_eq(rlt_mlp_copy_weights(layers[l], rlt_gnn_layer(a, l), &d), RLT_STATUS_OK);
    }
    rlt_gnn *b = NULL;
    cr_assert_eq(rlt_gnn_from_layers(2, layers, &b, &d), RLT_STATUS_OK, "%s", d.message);
    float x[9] = {1, 2, 3, -1, 0, 1, 4, 4, -2}, ha[12], hb[12];
    int edges[] = {0, 1, 2, 1};
    cr_assert_eq(rlt_gnn_forward(a, 3, x, 2, edges, ha, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_gnn_forward(b, 3, x, 2, edges, hb, &d), RLT_STATUS_OK);
    cr_assert_eq(memcmp(ha, hb, sizeof ha), 0);
    /* a layer of the wrong width is refused, and the layers are freed */
    rlt_mlp_spec wrong = {.n_inputs = 5, .n_layers = 1, .layers = {{4, RLT_NN_ACT_RELU}}};
    rlt_mlp *w = NULL;
    cr_assert_eq(rlt_mlp_create(&wrong, 1, &w, &d), RLT_STATUS_OK);
    rlt_gnn *c = NULL;
    cr_assert_eq(rlt_gnn_from_layers(1, &w, &c, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert_null(c);
    rlt_gnn_destroy(a);
    rlt_gnn_destroy(b);
}
