/*
 * fold.c - graph rewrites that fold one node into another's constants:
 * rlt_graph_fold_batchnorm puts an inference BatchNormalization into the
 * weights and bias of the Conv that produces its input, so that the
 * network runs one kernel where it had two.
 */
#include "graph/graph.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The live node writing tensor t, or -1. */
static int producer_of(const rlt_graph *g, int t)
{
    for (int n = 0; n < g->n_nodes; n++) {
        const rlt_graph_node *node = &g->nodes[n];
        if (node->is_removed) continue;
        for (int o = 0; o < node->n_outputs; o++)
            if (node->outputs[o] == t) return n;
    }
    return -1;
}

/* How many times live nodes and the graph's outputs read tensor t. */
static int readers_of(const rlt_graph *g, int t)
{
    int count = 0;
    for (int n = 0; n < g->n_nodes; n++) {
        const rlt_graph_node *node = &g->nodes[n];
        if (node->is_removed) continue;
        for (int i = 0; i < node->n_inputs; i++) count += node->inputs[i] == t;
    }
    for (int i = 0; i < g->n_outputs; i++) count += g->outputs[i] == t;
    return count;
}

static bool is_const_f32(const rlt_graph *g, int t, int64_t n_values)
{
    if (t < 0) return false;
    const rlt_graph_tensor *x = &g->tensors[t];
    return x->data && x->has_shape && x->dtype == RLT_DTYPE_FLOAT32 && rlt_graph_tensor_n_elems(x) == n_values;
}

/* Adds a constant f32 tensor named after `base` (made unique), with the
 * given shape and arena-owned data. */
static rlt_status const_add(rlt_graph *g, const char *base, int rank, const int64_t *dims, float *data, int *out,
                            rlt_diag *diag)
{
    char name[256];
    snprintf(name, sizeof name, "%s", base);
    for (int k = 1; rlt_graph_tensor_find(g, name) >= 0; k++) snprintf(name, sizeof name, "%s_%d", base, k);
    rlt_status st = rlt_graph_tensor_add(g, name, RLT_DTYPE_FLOAT32, out, diag);
    if (st != RLT_STATUS_OK) return st;
    st = rlt_graph_tensor_set_shape(g, *out, rank, dims, diag);
    if (st != RLT_STATUS_OK) return st;
    g->tensors[*out].data = data;
    return RLT_STATUS_OK;
}

/* Folds BatchNormalization node b into its producer when that is a Conv
 * that qualifies: 1 when folded, 0 when not, -1 when out of memory. */
static int fold_one(rlt_graph *g, int b, rlt_diag *diag)
{
    const rlt_graph_node *bn = &g->nodes[b];
    if (bn->n_inputs != 5) return 0;
    int x = bn->inputs[0], y = bn->outputs[0];
    if (x < 0 || y < 0 || !g->tensors[x].has_shape || g->tensors[x].rank < 3) return 0;
    const rlt_graph_attr *tm = rlt_graph_node_attr(bn, "training_mode");
    if (tm && tm->i != 0) return 0;
    for (int o = 1; o < bn->n_outputs; o++)
        if (bn->outputs[o] >= 0 && readers_of(g, bn->outputs[o]) > 0) return 0;
    int64_t C = g->tensors[x].dims[1];
    for (int i = 1; i < 5; i++)
        if (!is_const_f32(g, bn->inputs[i], C)) return 0;
    int p = producer_of(g, x);
    if (p < 0 || p >= b) return 0;
    const rlt_graph_node *conv = &g->nodes[p];
    if (strcmp(conv->op_type, "Conv") != 0 || conv->n_outputs != 1 || conv->outputs[0] != x) return 0;
    if (readers_of(g, x) != 1) return 0;
    int wi = conv->inputs[1], bi = conv->n_inputs > 2 ? conv->inputs[2] : -1;
    if (wi < 0 || !g->tensors[wi].data || g->tensors[wi].dtype != RLT_DTYPE_FLOAT32 || g->tensors[wi].dims[0] != C)
        return 0;
    if (bi >= 0 && !is_const_f32(g, bi, C)) return 0;

    const rlt_graph_attr *ea = rlt_graph_node_attr(bn, "epsilon");
    double eps = ea && ea->kind == RLT_GRAPH_ATTR_FLOAT ? ea->f : 1e-5;
    int64_t n_w = rlt_graph_tensor_n_elems(&g->tensors[wi]), per = C ? n_w / C : 0;
    float *w_new = rlt_arena_alloc(g->arena, (size_t)n_w * sizeof(float) + 1);
    float *b_new = rlt_arena_alloc(g->arena, (size_t)C * sizeof(float) + 1);
    int *ins = rlt_arena_alloc(g->arena, 3 * sizeof(int));
    if (!w_new || !b_new || !ins) {
        rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory folding BatchNormalization '%s'", bn->name);
        return -1;
    }
    const float *w = g->tensors[wi].data, *bias = bi >= 0 ? g->tensors[bi].data : NULL;
    const float *scale = g->tensors[bn->inputs[1]].data, *shift = g->tensors[bn->inputs[2]].data,
                *mean = g->tensors[bn->inputs[3]].data, *var = g->tensors[bn->inputs[4]].data;
    for (int64_t c = 0; c < C; c++) {
        double s = (double)scale[c] / sqrt((double)var[c] + eps);
        for (int64_t k = 0; k < per; k++) w_new[c * per + k] = (float)((double)w[c * per + k] * s);
        b_new[c] = (float)(((bias ? (double)bias[c] : 0.0) - (double)mean[c]) * s + (double)shift[c]);
    }

    /* New tensors first (adding may move the tensor array, and may fail:
     * an unread tensor left behind is harmless), then the rewiring. */
    char base[200];
    int64_t w_dims[RLT_GRAPH_MAX_RANK];
    int w_rank = g->tensors[wi].rank;
    memcpy(w_dims, g->tensors[wi].dims, sizeof w_dims);
    int w_t, b_t;
    snprintf(base, sizeof base, "%s_bnfold_w", g->tensors[y].name);
    if (const_add(g, base, w_rank, w_dims, w_new, &w_t, diag) != RLT_STATUS_OK) return -1;
    snprintf(base, sizeof base, "%s_bnfold_b", g->tensors[y].name);
    if (const_add(g, base, 1, &C, b_new, &b_t, diag) != RLT_STATUS_OK) return -1;

    rlt_graph_node *cv = &g->nodes[p];
    ins[0] = cv->inputs[0];
    ins[1] = w_t;
    ins[2] = b_t;
    cv->inputs = ins;
    cv->n_inputs = 3;
    cv->outputs[0] = y;
    g->tensors[y].producer = p;
    g->tensors[x].producer = -1;
    g->nodes[b].is_removed = true;
    return 1;
}

int rlt_graph_fold_batchnorm(rlt_graph *g, rlt_diag *diag)
{
    int n_folded = 0;
    for (int b = 0; b < g->n_nodes; b++) {
        if (g->nodes[b].is_removed || strcmp(g->nodes[b].op_type, "BatchNormalization") != 0) continue;
        int r = fold_one(g, b, diag);
        if (r < 0) return -1;
        n_folded += r;
    }
    return n_folded;
}
