/*
 * gnn.c - a message-passing network over a graph's nodes (nn.h, "graph
 * layers"): each layer concatenates a node's features with the mean of
 * its neighbours' and applies one dense ReLU layer (an rlt_mlp). The mean
 * is a fixed linear map A (row v: 1/deg(v) at each neighbour), so its
 * backward is A's transpose; both are walks over one adjacency list built
 * per forward.
 */
#include "nn/nn.h"

#include <string.h>

struct rlt_gnn {
    rlt_gnn_spec spec;
    rlt_mlp *layers[RLT_MLP_MAX_LAYERS];
    /* the kept forward */
    int n_nodes;
    int *adj_start, *adj;  /* CSR of neighbours (both directions, duplicates kept) */
    float *h[RLT_MLP_MAX_LAYERS + 1]; /* layer inputs: h[0] = x, h[l] [n_nodes x width(l)] */
    float *z;                 /* scratch: [h ; mean] of one layer, [n_nodes x 2 width] */
    float *dz, *dh_a, *dh_b;  /* scratch for backward */
    int cap_nodes, cap_adj;
};

static int width_in(const rlt_gnn *g, int l) { return l == 0 ? g->spec.n_inputs : g->spec.n_hidden; }

static rlt_status check_spec(const rlt_gnn_spec *s, rlt_diag *diag)
{
    if (s->n_inputs < 1 || s->n_inputs > RLT_MLP_MAX_UNITS / 2 || s->n_hidden < 1 ||
        s->n_hidden > RLT_MLP_MAX_UNITS / 2 || s->n_layers < 1 || s->n_layers > RLT_MLP_MAX_LAYERS)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "nn: a graph network needs 1..%d inputs and hidden units and 1..%d layers (got %d, %d, %d)",
                        RLT_MLP_MAX_UNITS / 2, RLT_MLP_MAX_LAYERS, s->n_inputs, s->n_hidden, s->n_layers);
    return RLT_STATUS_OK;
}

static rlt_mlp_spec layer_spec(const rlt_gnn_spec *s, int l)
{
    rlt_mlp_spec m = {.n_inputs = 2 * (l == 0 ? s->n_inputs : s->n_hidden), .n_layers = 1};
    m.layers[0] = (rlt_mlp_layer){s->n_hidden, RLT_NN_ACT_RELU};
    return m;
}

rlt_status rlt_gnn_create(const rlt_gnn_spec *spec, uint64_t seed, rlt_gnn **out, rlt_diag *diag)
{
    *out = NULL;
    rlt_status st = check_spec(spec, diag);
    if (st != RLT_STATUS_OK) return st;
    rlt_mlp *layers[RLT_MLP_MAX_LAYERS] = {0};
    for (int l = 0; l < spec->n_layers; l++) {
        rlt_mlp_spec ms = layer_spec(spec, l);
        if ((st = rlt_mlp_create(&ms, seed + (uint64_t)l, &layers[l], diag)) != RLT_STATUS_OK) {
            for (int k = 0; k < l; k++) rlt_mlp_destroy(layers[k]);
            return st;
        }
    }
    return rlt_gnn_from_layers(spec->n_layers, layers, out, diag);
}

rlt_status rlt_gnn_from_layers(int n_layers, rlt_mlp **layers, rlt_gnn **out, rlt_diag *diag)
{
    *out = NULL;
    rlt_status st = RLT_STATUS_OK;
    rlt_gnn *g = NULL;
    rlt_gnn_spec spec = {0};
    if (n_layers < 1 || n_layers > RLT_MLP_MAX_LAYERS) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "nn: a graph network has 1..%d layers, not %d",
                      RLT_MLP_MAX_LAYERS, n_layers);
        goto fail;
    }
    const rlt_mlp_spec *first = rlt_mlp_get_spec(layers[0]);
    spec = (rlt_gnn_spec){.n_inputs = first->n_inputs / 2, .n_hidden = first->layers[0].n_units,
                          .n_layers = n_layers};
    for (int l = 0; l < n_layers; l++) {
        rlt_mlp_spec want = layer_spec(&spec, l);
        if (!layers[l] || !rlt_mlp_spec_equal(rlt_mlp_get_spec(layers[l]), &want)) {
            st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                          "nn: layer %d of a graph network is not one ReLU layer of %d -> %d units", l,
                          want.n_inputs, spec.n_hidden);
            goto fail;
        }
    }
    if ((st = check_spec(&spec, diag)) != RLT_STATUS_OK) goto fail;
    if (!(g = rlt_calloc(1, sizeof *g))) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "nn: out of memory making a graph network");
        goto fail;
    }
    g->spec = spec;
    for (int l = 0; l < n_layers; l++) g->layers[l] = layers[l];
    *out = g;
    return RLT_STATUS_OK;
fail:
    for (int l = 0; l < n_layers && l < RLT_MLP_MAX_LAYERS; l++) rlt_mlp_destroy(layers[l]);
    return st;
}

void rlt_gnn_destroy(rlt_gnn *g)
{
    if (!g) return;
    for (int l = 0; l < g->spec.n_layers; l++) rlt_mlp_destroy(g->layers[l]);
    for (int l = 0; l <= g->spec.n_layers; l++) rlt_free(g->h[l]);
    rlt_free(g->adj_start);
    rlt_free(g->adj);
    rlt_free(g->z);
    rlt_free(g->dz);
    rlt_free(g->dh_a);
    rlt_free(g->dh_b);
    rlt_free(g);
}

const rlt_gnn_spec *rlt_gnn_get_spec(const rlt_gnn *g) { return &g->spec; }

rlt_mlp *rlt_gnn_layer(rlt_gnn *g, int l)
{
    RLT_ASSERT(l >= 0 && l < g->spec.n_layers);
    return g->layers[l];
}

void rlt_gnn_zero_grad(rlt_gnn *g)
{
    for (int l = 0; l < g->spec.n_layers; l++) rlt_mlp_zero_grad(g->layers[l]);
}

/* Room for n nodes and e edges in the kept buffers. */
static bool reserve(rlt_gnn *g, int n, int e)
{
    int wmax = g->spec.n_inputs > g->spec.n_hidden ? g->spec.n_inputs : g->spec.n_hidden;
    if (n > g->cap_nodes) {
        for (int l = 0; l <= g->spec.n_layers; l++) {
            rlt_free(g->h[l]);
            if (!(g->h[l] = rlt_malloc((size_t)n * (size_t)wmax * sizeof(float)))) return false;
        }
        rlt_free(g->z);
        rlt_free(g->dz);
        rlt_free(g->dh_a);
        rlt_free(g->dh_b);
        rlt_free(g->adj_start);
        g->z = rlt_malloc((size_t)n * 2 * (size_t)wmax * sizeof(float));
        g->dz = rlt_malloc((size_t)n * 2 * (size_t)wmax * sizeof(float));
        g->dh_a = rlt_malloc((size_t)n * (size_t)wmax * sizeof(float));
        g->dh_b = rlt_malloc((size_t)n * (size_t)wmax * sizeof(float));
        g->adj_start = rlt_malloc(((size_t)n + 1) * sizeof(int));
        if (!g->z || !g->dz || !g->dh_a || !g->dh_b || !g->adj_start) return false;
        g->cap_nodes = n;
    }
    if (2 * e > g->cap_adj) {
        rlt_free(g->adj);
        if (!(g->adj = rlt_malloc(((size_t)2 * (size_t)e + 1) * sizeof(int)))) return false;
        g->cap_adj = 2 * e;
    }
    return true;
}

/* z = [h ; A h] for a layer of width w. */
static void concat_mean(const rlt_gnn *g, const float *h, int w, float *z)
{
    for (int v = 0; v < g->n_nodes; v++) {
        float *row = z + (size_t)v * 2 * (size_t)w;
        memcpy(row, h + (size_t)v * (size_t)w, (size_t)w * sizeof(float));
        float *mean = row + w;
        memset(mean, 0, (size_t)w * sizeof(float));
        int deg = g->adj_start[v + 1] - g->adj_start[v];
        for (int k = g->adj_start[v]; k < g->adj_start[v + 1]; k++) {
            const float *hu = h + (size_t)g->adj[k] * (size_t)w;
            for (int j = 0; j < w; j++) mean[j] += hu[j];
        }
        if (deg > 0)
            for (int j = 0; j < w; j++) mean[j] /= (float)deg;
    }
}

rlt_status rlt_gnn_forward(rlt_gnn *g, int n_nodes, const float *x, int n_edges, const int *edges, float *out_h,
                           rlt_diag *diag)
{
    g->n_nodes = 0;
    if (n_nodes < 1 || !x || !out_h || n_edges < 0 || (n_edges > 0 && !edges))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "nn: a graph forward needs nodes, features and outputs");
    for (int e = 0; e < 2 * n_edges; e++)
        if (edges[e] < 0 || edges[e] >= n_nodes)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "nn: edge %d names node %d of %d", e / 2, edges[e],
                            n_nodes);
    if (!reserve(g, n_nodes, n_edges))
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "nn: out of memory in a graph forward");
    /* neighbours both ways, counted then placed */
    memset(g->adj_start, 0, ((size_t)n_nodes + 1) * sizeof(int));
    for (int e = 0; e < n_edges; e++) {
        g->adj_start[edges[2 * e] + 1]++;
        g->adj_start[edges[2 * e + 1] + 1]++;
    }
    for (int v = 0; v < n_nodes; v++) g->adj_start[v + 1] += g->adj_start[v];
    int *fill = g->dh_a ? (int *)g->dh_a : NULL; /* scratch: n ints fit in n x w floats */
    memset(fill, 0, (size_t)n_nodes * sizeof(int));
    for (int e = 0; e < n_edges; e++) {
        int a = edges[2 * e], b = edges[2 * e + 1];
        g->adj[g->adj_start[a] + fill[a]++] = b;
        g->adj[g->adj_start[b] + fill[b]++] = a;
    }
    g->n_nodes = n_nodes;
    memcpy(g->h[0], x, (size_t)n_nodes * (size_t)g->spec.n_inputs * sizeof(float));
    for (int l = 0; l < g->spec.n_layers; l++) {
        int w = width_in(g, l);
        concat_mean(g, g->h[l], w, g->z);
        rlt_status st = rlt_mlp_forward(g->layers[l], n_nodes, g->z, g->h[l + 1], diag);
        if (st != RLT_STATUS_OK) {
            g->n_nodes = 0;
            return st;
        }
    }
    /* each layer's rlt_mlp keeps a copy of its input z for the backward */
    memcpy(out_h, g->h[g->spec.n_layers], (size_t)n_nodes * (size_t)g->spec.n_hidden * sizeof(float));
    return RLT_STATUS_OK;
}

rlt_status rlt_gnn_backward(rlt_gnn *g, const float *dh, float *out_dx, rlt_diag *diag)
{
    if (g->n_nodes == 0)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "nn: graph backward without a kept forward");
    int n = g->n_nodes;
    float *cur = g->dh_a, *below = g->dh_b;
    memcpy(cur, dh, (size_t)n * (size_t)g->spec.n_hidden * sizeof(float));
    rlt_status st = RLT_STATUS_OK;
    for (int l = g->spec.n_layers - 1; l >= 0 && st == RLT_STATUS_OK; l--) {
        int w = width_in(g, l);
        bool needs_dx = l > 0 || out_dx;
        if ((st = rlt_mlp_backward(g->layers[l], n, cur, needs_dx ? g->dz : NULL, diag)) != RLT_STATUS_OK) break;
        if (!needs_dx) break;
        /* dh_v = dz_v[:w] + sum over v's neighbours u of dz_u[w:] / deg(u) */
        for (int v = 0; v < n; v++)
            memcpy(below + (size_t)v * (size_t)w, g->dz + (size_t)v * 2 * (size_t)w, (size_t)w * sizeof(float));
        for (int u = 0; u < n; u++) {
            int deg = g->adj_start[u + 1] - g->adj_start[u];
            if (deg == 0) continue;
            const float *dm = g->dz + (size_t)u * 2 * (size_t)w + w;
            for (int k = g->adj_start[u]; k < g->adj_start[u + 1]; k++) {
                float *dv = below + (size_t)g->adj[k] * (size_t)w;
                for (int j = 0; j < w; j++) dv[j] += dm[j] / (float)deg;
            }
        }
        float *t = cur;
        cur = below;
        below = t;
    }
    if (st == RLT_STATUS_OK && out_dx) memcpy(out_dx, cur, (size_t)n * (size_t)g->spec.n_inputs * sizeof(float));
    return st;
}
