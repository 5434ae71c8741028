/*
 * test_graph_onnx_write.c - the ONNX exporter (rlt_graph_to_onnx_bytes,
 * rlt_graph_write_onnx, src/graph/onnx_write.c). Round trips: a model built
 * with tests/common/onnx_build.h is loaded, written and loaded again, and
 * the two graphs must print the same text (rlt_graph_print) and evaluate
 * to the same bytes (rlt_graph_eval): a small CNN with BatchNormalization
 * folded and not, a transformer block at opset 17 (Gelu goes to
 * com.microsoft), folded shape subgraphs, Split / Squeeze / Unsqueeze /
 * Slice at opsets 11 and 13. Graphs built by hand hold what passes make:
 * nodes marked removed (skipped), attribute forms at opset 13 (written as
 * new initializer inputs, with names that clash with nothing), constant
 * inputs at opset 11 (written as attributes). The written protobuf is
 * decoded here to check the model's fields. Errors: an unwritable path
 * (IO_ERROR naming it, no file left), graphs ONNX cannot express
 * (INVALID_ARGUMENT naming the node or tensor), allocation failures at
 * every point (OUT_OF_MEMORY, nothing leaked).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/leaks.h"
#include "../common/onnx_build.h"
#include "../common/tmp.h"
#include "graph/graph.h"

#define D(...) ((int64_t[]){__VA_ARGS__})

/* ---- helpers ------------------------------------------------------------------ */

static rlt_graph *load_ok(onnx_build *b)
{
    rlt_graph *g = NULL;
    rlt_diag d = {0};
    cr_assert_eq(ob_load(b, &g, &d), RLT_STATUS_OK, "load failed: %s", d.message);
    return g;
}

static void *write_ok(const rlt_graph *g, size_t *len)
{
    void *buf = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_graph_to_onnx_bytes(g, &buf, len, &d), RLT_STATUS_OK, "write failed: %s", d.message);
    cr_assert_not_null(buf);
    return buf;
}

static rlt_graph *reload_ok(const void *buf, size_t len)
{
    rlt_graph *g = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_graph_load_onnx_bytes(buf, len, "written.onnx", &g, &d), RLT_STATUS_OK,
                 "the written model does not load: %s", d.message);
    return g;
}

/* The written model decoded (free with onnx__model_proto__free_unpacked). */
static Onnx__ModelProto *unpack(const void *buf, size_t len)
{
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
    cr_assert_not_null(m, "the written bytes are not a ModelProto");
    return m;
}

/* Seeded values for every graph input (floats in [-1, 1), integers 0..2,
 * bools alternating). in[i] heap, freed with free_inputs. */
static void make_inputs(const rlt_graph *g, void **in, uint64_t seed)
{
    for (int i = 0; i < g->n_inputs; i++) {
        const rlt_graph_tensor *t = &g->tensors[g->inputs[i]];
        int64_t n = rlt_graph_tensor_n_elems(t);
        in[i] = calloc((size_t)n + 1, rlt_dtype_size(t->dtype));
        cr_assert_not_null(in[i]);
        uint64_t s = seed * 6364136223846793005ull + (uint64_t)i;
        for (int64_t k = 0; k < n; k++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            double u = (double)(s >> 11) / 9007199254740992.0;
            switch (t->dtype) {
            case RLT_DTYPE_FLOAT32: ((float *)in[i])[k] = (float)(u * 2.0 - 1.0); break;
            case RLT_DTYPE_INT64: ((int64_t *)in[i])[k] = (int64_t)(u * 3.0); break;
            case RLT_DTYPE_INT32: ((int32_t *)in[i])[k] = (int32_t)(u * 3.0); break;
            default: ((unsigned char *)in[i])[k] = (unsigned char)(k & 1); break;
            }
        }
    }
}

static void free_inputs(const rlt_graph *g, void **in)
{
    for (int i = 0; i < g->n_inputs; i++) free(in[i]);
}

/* a and b (same inputs and outputs) give the same bytes on seeded inputs. */
static void expect_same_outputs(const rlt_graph *a, const rlt_graph *b)
{
    cr_assert_eq(a->n_inputs, b->n_inputs);
    cr_assert_eq(a->n_outputs, b->n_outputs);
    cr_assert_leq(a->n_outputs, 8);
    void *in[8] = {NULL}, *out_a[8] = {NULL}, *out_b[8] = {NULL};
    cr_assert_leq(a->n_inputs, 8);
    make_inputs(a, in, 42);
    rlt_diag d = {0};
    cr_assert_eq(rlt_graph_eval(a, a->n_inputs, (const void *const *)in, a->n_outputs, out_a, &d), RLT_STATUS_OK,
                 "eval of the original: %s", d.message);
    cr_assert_eq(rlt_graph_eval(b, b->n_inputs, (const void *const *)in, b->n_outputs, out_b, &d), RLT_STATUS_OK,
                 "eval of the written model: %s", d.message);
    for (int i = 0; i < a->n_outputs; i++) {
        const rlt_graph_tensor *ta = &a->tensors[a->outputs[i]], *tb = &b->tensors[b->outputs[i]];
        cr_assert_eq(ta->dtype, tb->dtype);
        cr_assert_eq(rlt_graph_tensor_n_elems(ta), rlt_graph_tensor_n_elems(tb));
        size_t bytes = (size_t)rlt_graph_tensor_n_elems(ta) * rlt_dtype_size(ta->dtype);
        cr_expect_eq(memcmp(out_a[i], out_b[i], bytes), 0, "output %d ('%s') differs", i, ta->name);
        rlt_free(out_a[i]);
        rlt_free(out_b[i]);
    }
    free_inputs(a, in);
}

static void expect_same_text(const rlt_graph *a, const rlt_graph *b)
{
    char *ta = rlt_graph_print(a), *tb = rlt_graph_print(b);
    cr_assert(ta && tb);
    cr_expect_str_eq(tb, ta, "the written model reads back differently:\n--- original\n%s--- written\n%s", ta, tb);
    rlt_free(ta);
    rlt_free(tb);
}

/* Writes g, reads it back, expects the same text and outputs; returns the
 * bytes (free with rlt_free) and the graph read back (rlt_graph_destroy). */
static rlt_graph *round_trip(const rlt_graph *g, void **bytes, size_t *len)
{
    size_t n;
    void *buf = write_ok(g, &n);
    rlt_graph *back = reload_ok(buf, n);
    expect_same_text(g, back);
    expect_same_outputs(g, back);
    if (bytes) {
        *bytes = buf;
        *len = n;
    } else {
        rlt_free(buf);
    }
    return back;
}

static int count_op(const Onnx__ModelProto *m, const char *op)
{
    int n = 0;
    for (size_t i = 0; i < m->graph->n_node; i++) n += strcmp(m->graph->node[i]->op_type, op) == 0;
    return n;
}

static const Onnx__NodeProto *node_named(const Onnx__ModelProto *m, const char *name)
{
    for (size_t i = 0; i < m->graph->n_node; i++)
        if (m->graph->node[i]->name && strcmp(m->graph->node[i]->name, name) == 0) return m->graph->node[i];
    cr_assert_fail("no node '%s' in the written model", name);
    return NULL;
}

static const Onnx__TensorProto *init_named(const Onnx__ModelProto *m, const char *name)
{
    for (size_t i = 0; i < m->graph->n_initializer; i++)
        if (strcmp(m->graph->initializer[i]->name, name) == 0) return m->graph->initializer[i];
    return NULL;
}

static bool has_attr(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (strcmp(n->attribute[i]->name, name) == 0) return true;
    return false;
}

/* ---- graphs by hand (what passes make) ------------------------------------------ */

static int h_tensor(rlt_graph *g, const char *name, rlt_dtype dtype, int rank, const int64_t *dims)
{
    rlt_diag d = {0};
    int t;
    cr_assert_eq(rlt_graph_tensor_add(g, name, dtype, &t, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_graph_tensor_set_shape(g, t, rank, dims, &d), RLT_STATUS_OK, "%s", d.message);
    return t;
}

/* A 1-D int64 constant of n values. */
static int h_const_i64(rlt_graph *g, const char *name, int n, const int64_t *v)
{
    int t = h_tensor(g, name, RLT_DTYPE_INT64, 1, D(n));
    int64_t *data = rlt_arena_alloc(g->arena, (size_t)n * sizeof *data + 1);
    cr_assert_not_null(data);
    memcpy(data, v, (size_t)n * sizeof *data);
    g->tensors[t].data = data;
    return t;
}

static int h_node(rlt_graph *g, const char *op, const char *name, int n_in, const int *in, int n_out, const int *out)
{
    rlt_diag d = {0};
    int n;
    cr_assert_eq(rlt_graph_node_add(g, op, name, n_in, in, n_out, out, &n, &d), RLT_STATUS_OK, "%s", d.message);
    return n;
}

static void h_attr(rlt_graph *g, int node, rlt_graph_attr a)
{
    rlt_graph_node *n = &g->nodes[node];
    rlt_graph_attr *attrs = rlt_arena_alloc(g->arena, ((size_t)n->n_attrs + 1) * sizeof *attrs);
    cr_assert_not_null(attrs);
    if (n->n_attrs) memcpy(attrs, n->attrs, (size_t)n->n_attrs * sizeof *attrs);
    a.name = rlt_arena_strdup(g->arena, a.name);
    attrs[n->n_attrs++] = a;
    n->attrs = attrs;
}

static void h_attr_ints(rlt_graph *g, int node, const char *name, int n, const int64_t *v)
{
    int64_t *copy = rlt_arena_alloc(g->arena, (size_t)n * sizeof *copy + 1);
    cr_assert_not_null(copy);
    memcpy(copy, v, (size_t)n * sizeof *copy);
    h_attr(g, node, (rlt_graph_attr){.name = name, .kind = RLT_GRAPH_ATTR_INTS, .n_values = n, .ints = copy});
}

static void h_attr_i(rlt_graph *g, int node, const char *name, int64_t v)
{
    h_attr(g, node, (rlt_graph_attr){.name = name, .kind = RLT_GRAPH_ATTR_INT, .i = v});
}

static void h_io(rlt_graph *g, int n_in, const int *in, int n_out, const int *out)
{
    g->inputs = rlt_arena_alloc(g->arena, (size_t)(n_in + 1) * sizeof(int));
    g->outputs = rlt_arena_alloc(g->arena, (size_t)(n_out + 1) * sizeof(int));
    cr_assert(g->inputs && g->outputs);
    memcpy(g->inputs, in, (size_t)n_in * sizeof(int));
    memcpy(g->outputs, out, (size_t)n_out * sizeof(int));
    g->n_inputs = n_in;
    g->n_outputs = n_out;
}

static rlt_graph *h_graph(int opset)
{
    rlt_graph *g = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_graph_create(opset, &g, &d), RLT_STATUS_OK);
    return g;
}

/* ---- models ---------------------------------------------------------------------- */

/* Conv (bias) -> BN -> Relu -> MaxPool -> Conv -> BN -> Relu ->
 * GlobalAveragePool -> Flatten -> Gemm (transB) at opset 13. */
static void small_cnn(onnx_build *b)
{
    uint64_t rng = 7;
    ob_init(b, 13);
    ob_input(b, "x", OB_F32, 4, D(1, 3, 12, 12));
    ob_conv_rand(b, "c1", "x", "c1_y", 3, 8, 3, 1, 1, 1, true, &rng);
    ob_batchnorm_rand(b, "bn1", "c1_y", "bn1_y", 8, &rng);
    ob_node(b, "Relu", "r1", "bn1_y", "r1_y");
    Onnx__NodeProto *mp = ob_node(b, "MaxPool", "pool", "r1_y", "p");
    ob_attr_ints(b, mp, "kernel_shape", 2, D(2, 2));
    ob_attr_ints(b, mp, "strides", 2, D(2, 2));
    ob_conv_rand(b, "c2", "p", "c2_y", 8, 8, 3, 2, 1, 1, false, &rng);
    ob_batchnorm_rand(b, "bn2", "c2_y", "bn2_y", 8, &rng);
    ob_node(b, "Relu", "r2", "bn2_y", "r2_y");
    ob_node(b, "GlobalAveragePool", "gap", "r2_y", "g");
    Onnx__NodeProto *fl = ob_node(b, "Flatten", "flat", "g", "f");
    ob_attr_i(b, fl, "axis", 1);
    ob_init_rand(b, "fc_w", 2, D(10, 8), 0.5f, &rng);
    ob_init_rand(b, "fc_b", 1, D(10), 0.5f, &rng);
    Onnx__NodeProto *fc = ob_node(b, "Gemm", "fc", "f,fc_w,fc_b", "y");
    ob_attr_i(b, fc, "transB", 1);
    ob_output(b, "y");
}

Test(graph_onnx_write, small_cnn)
{
    onnx_build b;
    small_cnn(&b);
    rlt_graph *g = load_ok(&b);
    void *buf;
    size_t len;
    rlt_graph *back = round_trip(g, &buf, &len);

    Onnx__ModelProto *m = unpack(buf, len);
    cr_expect_eq(m->ir_version, 7);
    cr_expect_str_eq(m->producer_name, "rltune");
    cr_assert_eq(m->n_opset_import, 1);
    cr_expect_str_eq(m->opset_import[0]->domain, "");
    cr_expect_eq(m->opset_import[0]->version, 13);
    cr_expect_eq(m->graph->n_node, 10);
    cr_expect_eq(m->graph->n_input, 1);
    cr_expect_eq(m->graph->n_output, 1);
    cr_expect_eq(m->graph->n_value_info, 9, "one per intermediate tensor");
    cr_expect_eq(m->graph->n_initializer, 2 + 4 + 1 + 4 + 2, "c1 w, b; bn1; c2 w; bn2; fc w, b");
    const Onnx__ValueInfoProto *y = m->graph->output[0];
    cr_expect_eq(y->type->tensor_type->elem_type, 1);
    cr_assert_eq(y->type->tensor_type->shape->n_dim, 2);
    cr_expect_eq(y->type->tensor_type->shape->dim[1]->dim_value, 10);
    const Onnx__TensorProto *w = init_named(m, "c1_w");
    cr_assert_not_null(w);
    cr_expect(w->has_raw_data);
    cr_expect_eq(w->raw_data.len, 8 * 3 * 3 * 3 * sizeof(float));
    onnx__model_proto__free_unpacked(m, NULL);
    rlt_free(buf);
    rlt_graph_destroy(back);
    rlt_graph_destroy(g);

    /* BatchNormalization folded into the Convs: the new weights and
     * biases are folded constants, written as initializers. */
    g = NULL;
    rlt_diag d = {0};
    cr_assert_eq(ob_load_folded(&b, &g, &d), RLT_STATUS_OK, "%s", d.message);
    back = round_trip(g, &buf, &len);
    m = unpack(buf, len);
    cr_expect_eq(count_op(m, "BatchNormalization"), 0);
    cr_expect_eq(count_op(m, "Conv"), 2);
    cr_expect_eq(m->graph->n_node, 8);
    cr_expect_eq(node_named(m, "c2")->n_input, 3, "the folded Conv has a bias");
    onnx__model_proto__free_unpacked(m, NULL);
    rlt_free(buf);
    rlt_graph_destroy(back);
    rlt_graph_destroy(g);
    ob_free(&b);
    assert_no_leaks();
}

/* One attention head and an MLP with LayerNormalization and Gelu. */
Test(graph_onnx_write, transformer_opset17)
{
    uint64_t rng = 11;
    onnx_build b;
    ob_init(&b, 17);
    ob_input(&b, "x", OB_F32, 3, D(1, 4, 8));
    const char *proj[] = {"q", "k", "v"};
    for (int i = 0; i < 3; i++) {
        char w[16], bias[16], mm[16], add[16], in[64], out[16], rs[16], rs_in[64], tr[16], trn[16];
        snprintf(w, sizeof w, "%s_w", proj[i]);
        snprintf(bias, sizeof bias, "%s_b", proj[i]);
        snprintf(mm, sizeof mm, "%s_mm", proj[i]);
        snprintf(add, sizeof add, "%s_add", proj[i]);
        snprintf(out, sizeof out, "%s_lin", proj[i]);
        snprintf(rs, sizeof rs, "%s_heads", proj[i]);
        snprintf(tr, sizeof tr, "%s_t", proj[i]);
        snprintf(trn, sizeof trn, "%s_tr", proj[i]);
        ob_init_rand(&b, w, 2, D(8, 8), 0.4f, &rng);
        ob_init_rand(&b, bias, 1, D(8), 0.1f, &rng);
        snprintf(in, sizeof in, "x,%s", w);
        ob_node(&b, "MatMul", mm, in, mm);
        snprintf(in, sizeof in, "%s,%s", mm, bias);
        ob_node(&b, "Add", add, in, out);
        snprintf(rs_in, sizeof rs_in, "%s,heads_shape", out);
        ob_node(&b, "Reshape", rs, rs_in, rs);
        Onnx__NodeProto *t = ob_node(&b, "Transpose", trn, rs, tr);
        /* k goes to [1, 2, 4(d), 4(seq)] for q @ k^T */
        ob_attr_ints(&b, t, "perm", 4, i == 1 ? D(0, 2, 3, 1) : D(0, 2, 1, 3));
    }
    ob_init_i64(&b, "heads_shape", 4, D(1, 4, 2, 4));
    ob_node(&b, "MatMul", "scores", "q_t,k_t", "s");
    float scale = 0.5f;
    ob_init_f32(&b, "scale", 0, NULL, &scale);
    ob_node(&b, "Mul", "scaled", "s,scale", "s2");
    Onnx__NodeProto *sm = ob_node(&b, "Softmax", "softmax", "s2", "p");
    ob_attr_i(&b, sm, "axis", -1);
    ob_node(&b, "MatMul", "ctx", "p,v_t", "c");
    Onnx__NodeProto *t = ob_node(&b, "Transpose", "ctx_tr", "c", "ct");
    ob_attr_ints(&b, t, "perm", 4, D(0, 2, 1, 3));
    ob_init_i64(&b, "seq_shape", 3, D(1, 4, 8));
    ob_node(&b, "Reshape", "merge", "ct,seq_shape", "m");
    ob_node(&b, "Add", "resid", "m,x", "h");
    ob_init_rand(&b, "ln_s", 1, D(8), 1.0f, &rng);
    ob_init_rand(&b, "ln_b", 1, D(8), 0.2f, &rng);
    Onnx__NodeProto *ln = ob_node(&b, "LayerNormalization", "ln", "h,ln_s,ln_b", "hn");
    ob_attr_i(&b, ln, "axis", -1);
    ob_attr_f(&b, ln, "epsilon", 1e-5f);
    ob_init_rand(&b, "w1", 2, D(8, 16), 0.4f, &rng);
    ob_init_rand(&b, "w2", 2, D(16, 8), 0.3f, &rng);
    ob_node(&b, "MatMul", "fc1", "hn,w1", "u");
    ob_node(&b, "Gelu", "gelu", "u", "ug");
    ob_node(&b, "MatMul", "fc2", "ug,w2", "o");
    float two = 2.0f;
    ob_init_f32(&b, "two", 0, NULL, &two);
    ob_node(&b, "Sqrt", "sq", "two", "sqrt2"); /* not folded: a node that reads only constants */
    ob_node(&b, "Div", "div", "o,sqrt2", "od");
    ob_node(&b, "Erf", "erf", "od", "y");
    ob_output(&b, "y");
    ob_output(&b, "p");
    rlt_graph *g = load_ok(&b);
    void *buf;
    size_t len;
    rlt_graph *back = round_trip(g, &buf, &len);
    Onnx__ModelProto *m = unpack(buf, len);
    cr_expect_eq(m->ir_version, 8);
    cr_assert_eq(m->n_opset_import, 2, "Gelu needs com.microsoft before opset 20");
    cr_expect_str_eq(m->opset_import[1]->domain, "com.microsoft");
    cr_expect_eq(m->opset_import[1]->version, 1);
    cr_expect_str_eq(node_named(m, "gelu")->domain, "com.microsoft");
    cr_expect_eq(m->graph->n_output, 2);
    cr_expect_str_eq(m->graph->output[1]->name, "p");
    onnx__model_proto__free_unpacked(m, NULL);
    rlt_free(buf);
    rlt_graph_destroy(back);
    rlt_graph_destroy(g);
    ob_free(&b);
    assert_no_leaks();
}

/* A shape subgraph folds at load: the Reshape's target is a folded
 * constant (no initializer of the model), written as an initializer. */
Test(graph_onnx_write, folded_constants_become_initializers)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 3, D(2, 3, 4));
    ob_node(&b, "Shape", "shape", "x", "s");
    ob_init_i64(&b, "zero", 1, D(0));
    ob_node(&b, "Gather", "first", "s,zero", "n0");
    ob_init_i64(&b, "minus1", 1, D(-1));
    Onnx__NodeProto *c = ob_node(&b, "Concat", "cat", "n0,minus1", "target");
    ob_attr_i(&b, c, "axis", 0);
    ob_node(&b, "Reshape", "rs", "x,target", "r");
    ob_node(&b, "Relu", "relu", "r", "y");
    ob_output(&b, "y");
    rlt_graph *g = load_ok(&b);
    int target = rlt_graph_tensor_find(g, "target");
    cr_assert_geq(target, 0);
    cr_assert_not_null(g->tensors[target].data);
    cr_assert(!g->tensors[target].is_initializer);
    void *buf;
    size_t len;
    rlt_graph *back = round_trip(g, &buf, &len);
    Onnx__ModelProto *m = unpack(buf, len);
    cr_expect_eq(m->graph->n_node, 2);
    cr_expect_eq(m->graph->n_initializer, 1, "only the Reshape's target is read");
    const Onnx__TensorProto *t = init_named(m, "target");
    cr_assert_not_null(t);
    cr_expect_eq(t->data_type, 7);
    cr_assert_eq(t->raw_data.len, 16);
    int64_t v[2];
    memcpy(v, t->raw_data.data, sizeof v);
    cr_expect(v[0] == 2 && v[1] == -1);
    cr_expect(back->tensors[rlt_graph_tensor_find(back, "target")].is_initializer);
    onnx__model_proto__free_unpacked(m, NULL);
    rlt_free(buf);
    rlt_graph_destroy(back);
    rlt_graph_destroy(g);
    ob_free(&b);
    assert_no_leaks();
}

/* Nodes marked removed (folded by rlt_graph_infer, no rlt_graph_dce) are
 * skipped, and so are the constants only they read. */
Test(graph_onnx_write, removed_nodes_are_skipped)
{
    rlt_graph *g = h_graph(13);
    int x = h_tensor(g, "x", RLT_DTYPE_FLOAT32, 2, D(2, 3));
    int c = h_tensor(g, "c", RLT_DTYPE_FLOAT32, 1, D(3));
    float *cv = rlt_arena_alloc(g->arena, 3 * sizeof *cv);
    cv[0] = 1.0f, cv[1] = 2.0f, cv[2] = -3.0f;
    g->tensors[c].data = cv;
    g->tensors[c].is_initializer = true;
    int c2, y, z;
    rlt_diag d = {0};
    cr_assert_eq(rlt_graph_tensor_add(g, "c2", RLT_DTYPE_FLOAT32, &c2, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_graph_tensor_add(g, "y", RLT_DTYPE_FLOAT32, &y, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_graph_tensor_add(g, "z", RLT_DTYPE_FLOAT32, &z, &d), RLT_STATUS_OK);
    h_node(g, "Add", "cadd", 2, (int[]){c, c}, 1, &c2);
    h_node(g, "Mul", "mul", 2, (int[]){x, c2}, 1, &y);
    h_node(g, "Relu", "relu", 1, &y, 1, &z);
    h_io(g, 1, &x, 1, &z);
    cr_assert_eq(rlt_graph_sort(g, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_graph_infer(g, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert(g->nodes[0].is_removed, "the Add of constants folds");

    size_t len;
    void *buf = write_ok(g, &len);
    Onnx__ModelProto *m = unpack(buf, len);
    cr_expect_eq(m->graph->n_node, 2);
    cr_expect_eq(count_op(m, "Add"), 0);
    cr_expect_eq(m->graph->n_initializer, 1);
    cr_expect_not_null(init_named(m, "c2"));
    cr_expect_null(init_named(m, "c"), "nothing written reads c");
    onnx__model_proto__free_unpacked(m, NULL);
    rlt_graph *back = reload_ok(buf, len);
    expect_same_outputs(g, back);
    cr_assert_eq(rlt_graph_dce(g), 1);
    expect_same_text(g, back);
    rlt_free(buf);
    rlt_graph_destroy(back);
    rlt_graph_destroy(g);
    assert_no_leaks();
}

/* ---- operands that moved from attributes to inputs -------------------------------- */

/* x [2,6,1] -> Split axis 1 into [2,2,1] and [2,4,1]; Squeeze axis 2 and
 * Unsqueeze axis 0 of the first ([1,2,2]); Slice 1:3 on axis 1 of the
 * second ([2,2,1]). Attribute forms (opset < 13), or inputs named as the
 * writer names the operands it converts. */
static void moved_model(onnx_build *b, int opset)
{
    ob_init(b, opset);
    ob_input(b, "x", OB_F32, 3, D(2, 6, 1));
    if (opset < 13) {
        Onnx__NodeProto *n = ob_node(b, "Split", "sp", "x", "a,b");
        ob_attr_i(b, n, "axis", 1);
        ob_attr_ints(b, n, "split", 2, D(2, 4));
        n = ob_node(b, "Squeeze", "sq", "a", "a2");
        ob_attr_ints(b, n, "axes", 1, D(2));
        n = ob_node(b, "Unsqueeze", "us", "a2", "a3");
        ob_attr_ints(b, n, "axes", 1, D(0));
    } else {
        ob_init_i64(b, "sp_split", 2, D(2, 4));
        ob_init_i64(b, "sq_axes", 1, D(2));
        ob_init_i64(b, "us_axes", 1, D(0));
        Onnx__NodeProto *n = ob_node(b, "Split", "sp", "x,sp_split", "a,b");
        ob_attr_i(b, n, "axis", 1);
        ob_node(b, "Squeeze", "sq", "a,sq_axes", "a2");
        ob_node(b, "Unsqueeze", "us", "a2,us_axes", "a3");
    }
    if (opset < 10) {
        Onnx__NodeProto *n = ob_node(b, "Slice", "sl", "b", "b2");
        ob_attr_ints(b, n, "starts", 1, D(1));
        ob_attr_ints(b, n, "ends", 1, D(3));
        ob_attr_ints(b, n, "axes", 1, D(1));
    } else {
        ob_init_i64(b, "sl_starts", 1, D(1));
        ob_init_i64(b, "sl_ends", 1, D(3));
        ob_init_i64(b, "sl_axes", 1, D(1));
        ob_node(b, "Slice", "sl", "b,sl_starts,sl_ends,sl_axes", "b2");
    }
    ob_output(b, "a3");
    ob_output(b, "b2");
}

/* The same graph built by hand at `opset` with every operand in the
 * attribute form (what passes may leave), shapes set by hand. */
static rlt_graph *moved_graph_attrs(int opset)
{
    rlt_graph *g = h_graph(opset);
    int x = h_tensor(g, "x", RLT_DTYPE_FLOAT32, 3, D(2, 6, 1));
    int a = h_tensor(g, "a", RLT_DTYPE_FLOAT32, 3, D(2, 2, 1));
    int b = h_tensor(g, "b", RLT_DTYPE_FLOAT32, 3, D(2, 4, 1));
    int a2 = h_tensor(g, "a2", RLT_DTYPE_FLOAT32, 2, D(2, 2));
    int a3 = h_tensor(g, "a3", RLT_DTYPE_FLOAT32, 3, D(1, 2, 2));
    int b2 = h_tensor(g, "b2", RLT_DTYPE_FLOAT32, 3, D(2, 2, 1));
    int n = h_node(g, "Split", "sp", 1, &x, 2, (int[]){a, b});
    h_attr_i(g, n, "axis", 1);
    h_attr_ints(g, n, "split", 2, D(2, 4));
    n = h_node(g, "Squeeze", "sq", 1, &a, 1, &a2);
    h_attr_ints(g, n, "axes", 1, D(2));
    n = h_node(g, "Unsqueeze", "us", 1, &a2, 1, &a3);
    h_attr_ints(g, n, "axes", 1, D(0));
    n = h_node(g, "Slice", "sl", 1, &b, 1, &b2);
    h_attr_ints(g, n, "starts", 1, D(1));
    h_attr_ints(g, n, "ends", 1, D(3));
    h_attr_ints(g, n, "axes", 1, D(1));
    h_io(g, 1, &x, 2, (int[]){a3, b2});
    return g;
}

static void round_trip_model(onnx_build *b, Onnx__ModelProto **m)
{
    rlt_graph *g = load_ok(b);
    void *buf;
    size_t len;
    rlt_graph *back = round_trip(g, &buf, &len);
    *m = unpack(buf, len);
    rlt_free(buf);
    rlt_graph_destroy(back);
    rlt_graph_destroy(g);
}

Test(graph_onnx_write, split_squeeze_unsqueeze_slice_opsets)
{
    int opsets[] = {9, 11, 13, 17};
    for (size_t i = 0; i < RLT_ARRAY_LEN(opsets); i++) {
        onnx_build b;
        moved_model(&b, opsets[i]);
        Onnx__ModelProto *m;
        round_trip_model(&b, &m);
        bool attrs13 = opsets[i] < 13, attrs10 = opsets[i] < 10;
        cr_expect_eq(has_attr(node_named(m, "sp"), "split"), attrs13, "opset %d", opsets[i]);
        cr_expect_eq(node_named(m, "sp")->n_input, attrs13 ? 1 : 2, "opset %d", opsets[i]);
        cr_expect_eq(has_attr(node_named(m, "sq"), "axes"), attrs13, "opset %d", opsets[i]);
        cr_expect_eq(has_attr(node_named(m, "us"), "axes"), attrs13, "opset %d", opsets[i]);
        cr_expect_eq(has_attr(node_named(m, "sl"), "starts"), attrs10, "opset %d", opsets[i]);
        cr_expect_eq(node_named(m, "sl")->n_input, attrs10 ? 1 : 4, "opset %d", opsets[i]);
        onnx__model_proto__free_unpacked(m, NULL);
        ob_free(&b);
    }
    assert_no_leaks();
}

/* What a pass leaves at opset 13: the attribute forms become new int64
 * initializers, and the graph reads back as the input form would. */
Test(graph_onnx_write, attribute_forms_become_inputs)
{
    int opsets[] = {10, 13};
    for (size_t i = 0; i < RLT_ARRAY_LEN(opsets); i++) {
        int opset = opsets[i];
        rlt_graph *g = moved_graph_attrs(opset);
        /* Slice took attributes at opset 9 only: at 10 only Slice moves. */
        size_t len;
        void *buf = write_ok(g, &len);
        Onnx__ModelProto *m = unpack(buf, len);
        cr_expect_eq(has_attr(node_named(m, "sp"), "split"), opset < 13);
        cr_expect(!has_attr(node_named(m, "sl"), "starts") && !has_attr(node_named(m, "sl"), "axes"));
        cr_expect_eq(node_named(m, "sl")->n_input, 4);
        const Onnx__TensorProto *t = init_named(m, "sl_ends");
        cr_assert_not_null(t);
        cr_expect(t->data_type == 7 && t->n_dims == 1 && t->dims[0] == 1);
        if (opset >= 13) {
            const Onnx__NodeProto *sp = node_named(m, "sp");
            cr_assert_eq(sp->n_input, 2);
            cr_expect_str_eq(sp->input[1], "sp_split");
            cr_expect_not_null(init_named(m, "sq_axes"));
            cr_expect_not_null(init_named(m, "us_axes"));
        }
        onnx__model_proto__free_unpacked(m, NULL);

        /* It reads back as the model built in that form. */
        rlt_graph *back = reload_ok(buf, len);
        onnx_build b;
        moved_model(&b, opset);
        rlt_graph *want = load_ok(&b);
        expect_same_text(want, back);
        expect_same_outputs(want, back);
        rlt_free(buf);
        rlt_graph_destroy(want);
        rlt_graph_destroy(back);
        rlt_graph_destroy(g);
        ob_free(&b);
    }
    assert_no_leaks();
}

/* Split's sizes as an attribute in a graph read at opset 13, as the graph
 * substitutions make it; a tensor already named like the new operand makes
 * the writer pick another name. */
Test(graph_onnx_write, split_attribute_in_loaded_graph)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(4, 6));
    ob_input(&b, "sp_split", OB_F32, 2, D(4, 2)); /* takes the name the writer would pick first */
    ob_node(&b, "Relu", "relu", "x", "r");
    ob_output(&b, "r");
    rlt_graph *g = load_ok(&b);
    int r = rlt_graph_tensor_find(g, "r");
    int s = rlt_graph_tensor_find(g, "sp_split");
    int p = h_tensor(g, "p", RLT_DTYPE_FLOAT32, 2, D(4, 2));
    int q = h_tensor(g, "q", RLT_DTYPE_FLOAT32, 2, D(4, 4));
    int y = h_tensor(g, "y", RLT_DTYPE_FLOAT32, 2, D(4, 2));
    int n = h_node(g, "Split", "sp", 1, &r, 2, (int[]){p, q});
    h_attr_i(g, n, "axis", 1);
    h_attr_ints(g, n, "split", 2, D(2, 4));
    h_node(g, "Add", "add", 2, (int[]){p, s}, 1, &y);
    h_io(g, 2, (int[]){g->inputs[0], g->inputs[1]}, 2, (int[]){y, q});

    size_t len;
    void *buf = write_ok(g, &len);
    Onnx__ModelProto *m = unpack(buf, len);
    const Onnx__NodeProto *sp = node_named(m, "sp");
    cr_assert_eq(sp->n_input, 2);
    cr_expect_str_eq(sp->input[1], "sp_split_1");
    cr_expect(!has_attr(sp, "split"));
    const Onnx__TensorProto *t = init_named(m, "sp_split_1");
    cr_assert_not_null(t);
    cr_assert_eq(t->raw_data.len, 16);
    int64_t v[2];
    memcpy(v, t->raw_data.data, sizeof v);
    cr_expect(v[0] == 2 && v[1] == 4);
    onnx__model_proto__free_unpacked(m, NULL);
    rlt_graph *back = reload_ok(buf, len);
    expect_same_outputs(g, back);
    rlt_free(buf);
    rlt_graph_destroy(back);
    rlt_graph_destroy(g);
    ob_free(&b);
    assert_no_leaks();
}

/* The other way: constant inputs where the opset takes attributes. */
Test(graph_onnx_write, constant_inputs_become_attributes)
{
    rlt_graph *g = h_graph(11);
    int x = h_tensor(g, "x", RLT_DTYPE_FLOAT32, 2, D(3, 6));
    int sizes = h_const_i64(g, "sizes", 2, D(1, 5));
    int a = h_tensor(g, "a", RLT_DTYPE_FLOAT32, 2, D(3, 1));
    int b = h_tensor(g, "b", RLT_DTYPE_FLOAT32, 2, D(3, 5));
    int n = h_node(g, "Split", "sp", 2, (int[]){x, sizes}, 2, (int[]){a, b});
    h_attr_i(g, n, "axis", 1);
    h_io(g, 1, &x, 2, (int[]){a, b});
    size_t len;
    void *buf = write_ok(g, &len);
    Onnx__ModelProto *m = unpack(buf, len);
    const Onnx__NodeProto *sp = node_named(m, "sp");
    cr_expect_eq(sp->n_input, 1);
    cr_expect(has_attr(sp, "split"));
    cr_expect_eq(m->graph->n_initializer, 0, "the sizes are no longer read");
    onnx__model_proto__free_unpacked(m, NULL);
    rlt_graph *back = reload_ok(buf, len);
    expect_same_outputs(g, back);
    rlt_free(buf);
    rlt_graph_destroy(back);

    /* A computed operand cannot be an attribute. */
    g->tensors[sizes].data = NULL;
    void *out = NULL;
    rlt_diag d = {0};
    cr_expect_eq(rlt_graph_to_onnx_bytes(g, &out, &len, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_expect_null(out);
    cr_expect(strstr(d.message, "'sp' (Split, opset 11)") && strstr(d.message, "'sizes'") &&
                  strstr(d.message, "attribute before opset 13"), "%s", d.message);
    rlt_graph_destroy(g);
    assert_no_leaks();
}

/* ---- optional operands, attribute kinds ------------------------------------------- */

/* An optional input left out in the middle is "", trailing ones are
 * dropped; every attribute kind travels. */
Test(graph_onnx_write, optional_inputs_and_attribute_kinds)
{
    rlt_graph *g = h_graph(13);
    int x = h_tensor(g, "x", RLT_DTYPE_FLOAT32, 1, D(4));
    int lo = h_tensor(g, "lo", RLT_DTYPE_FLOAT32, 0, NULL);
    float *v = rlt_arena_alloc(g->arena, sizeof *v);
    *v = 0.25f;
    g->tensors[lo].data = v;
    int y = h_tensor(g, "y", RLT_DTYPE_FLOAT32, 1, D(4));
    int y2 = h_tensor(g, "y2", RLT_DTYPE_FLOAT32, 1, D(4));
    int z = h_tensor(g, "z", RLT_DTYPE_FLOAT32, 1, D(4));
    h_node(g, "Clip", "", 3, (int[]){x, lo, -1}, 1, &y);             /* max left out: dropped */
    h_node(g, "Clip", "clip_hi", 3, (int[]){y, -1, lo}, 1, &y2);     /* min left out: "" */
    int n = h_node(g, "Identity", "id", 1, &y2, 1, &z);
    rlt_graph_tensor *t = rlt_arena_alloc(g->arena, sizeof *t);
    *t = (rlt_graph_tensor){.name = "", .dtype = RLT_DTYPE_INT64, .has_shape = true, .rank = 1, .dims = {2},
                            .producer = -1};
    int64_t *tv = rlt_arena_alloc(g->arena, 2 * sizeof *tv);
    tv[0] = 7, tv[1] = -7;
    t->data = tv;
    float fl[2] = {1.5f, -2.5f};
    float *fv = rlt_arena_alloc(g->arena, sizeof fl);
    memcpy(fv, fl, sizeof fl);
    h_attr_i(g, n, "i", -3);
    h_attr(g, n, (rlt_graph_attr){.name = "f", .kind = RLT_GRAPH_ATTR_FLOAT, .f = 0.75f});
    h_attr(g, n, (rlt_graph_attr){.name = "s", .kind = RLT_GRAPH_ATTR_STRING, .s = "text"});
    h_attr_ints(g, n, "is", 3, D(1, 2, 3));
    h_attr(g, n, (rlt_graph_attr){.name = "fs", .kind = RLT_GRAPH_ATTR_FLOATS, .n_values = 2, .floats = fv});
    h_attr(g, n, (rlt_graph_attr){.name = "t", .kind = RLT_GRAPH_ATTR_TENSOR, .tensor = t});
    h_io(g, 1, &x, 1, &z);
    size_t len;
    void *buf = write_ok(g, &len);
    Onnx__ModelProto *m = unpack(buf, len);
    cr_assert_eq(m->graph->n_node, 3);
    const Onnx__NodeProto *c0 = m->graph->node[0], *c1 = m->graph->node[1], *id = m->graph->node[2];
    cr_expect_null(c0->name);
    cr_expect_eq(c0->n_input, 2);
    cr_assert_eq(c1->n_input, 3);
    cr_expect_str_eq(c1->input[1], "");
    cr_expect_str_eq(c1->input[2], "lo");
    cr_assert_eq(id->n_attribute, 6);
    Onnx__AttributeProto *const *at = id->attribute;
    cr_expect(at[0]->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT && at[0]->i == -3);
    cr_expect(at[1]->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT && at[1]->f == 0.75f);
    cr_expect(at[2]->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING && at[2]->s.len == 4 &&
              memcmp(at[2]->s.data, "text", 4) == 0);
    cr_expect(at[3]->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS && at[3]->n_ints == 3 && at[3]->ints[2] == 3);
    cr_expect(at[4]->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS && at[4]->n_floats == 2 &&
              at[4]->floats[1] == -2.5f);
    cr_assert(at[5]->type == ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR && at[5]->t);
    cr_expect(at[5]->t->data_type == 7 && at[5]->t->n_dims == 1 && at[5]->t->raw_data.len == 16);
    onnx__model_proto__free_unpacked(m, NULL);
    rlt_free(buf);
    rlt_graph_destroy(g);
    assert_no_leaks();
}

/* Clip's min / max as attributes at opset 13 (inputs since 11). */
Test(graph_onnx_write, clip_attributes_become_inputs)
{
    onnx_build b;
    ob_init(&b, 9);
    ob_input(&b, "x", OB_F32, 1, D(8));
    Onnx__NodeProto *n = ob_node(&b, "Clip", "clip", "x", "y");
    ob_attr_f(&b, n, "min", -0.25f);
    ob_attr_f(&b, n, "max", 0.5f);
    ob_output(&b, "y");
    rlt_graph *g = load_ok(&b);
    g->opset = 13; /* the same node, now in a graph of opset 13 */
    size_t len;
    void *buf = write_ok(g, &len);
    Onnx__ModelProto *m = unpack(buf, len);
    const Onnx__NodeProto *c = node_named(m, "clip");
    cr_expect_eq(c->n_attribute, 0);
    cr_assert_eq(c->n_input, 3);
    cr_expect_str_eq(c->input[1], "clip_min");
    const Onnx__TensorProto *t = init_named(m, "clip_max");
    cr_assert_not_null(t);
    cr_expect(t->data_type == 1 && t->n_dims == 0 && t->raw_data.len == 4);
    onnx__model_proto__free_unpacked(m, NULL);
    rlt_graph *back = reload_ok(buf, len);
    g->opset = 9; /* evaluated as read: rlt_graph_eval reads min / max by the opset */
    expect_same_outputs(g, back);
    rlt_free(buf);
    rlt_graph_destroy(back);
    rlt_graph_destroy(g);
    ob_free(&b);
    assert_no_leaks();
}

/* ---- files and errors --------------------------------------------------------------- */

static int dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    closedir(d);
    return n;
}

Test(graph_onnx_write, file_written_and_unwritable_paths)
{
    char *dir = tmp_dir_make("/tmp/rlt_onnxw_XXXXXX");
    onnx_build b;
    small_cnn(&b);
    rlt_graph *g = load_ok(&b);
    char path[512];
    snprintf(path, sizeof path, "%s/m.onnx", dir);
    rlt_diag d = {0};
    cr_assert_eq(rlt_graph_write_onnx(g, path, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_graph *back = NULL;
    cr_assert_eq(rlt_graph_load_onnx(path, &back, &d), RLT_STATUS_OK, "%s", d.message);
    expect_same_text(g, back);
    rlt_graph_destroy(back);
    cr_expect_eq(dir_entries(dir), 1, "only the model: no temporary file left");

    /* a directory that does not exist */
    char bad[600];
    snprintf(bad, sizeof bad, "%s/missing/m.onnx", dir);
    d = (rlt_diag){0};
    cr_expect_eq(rlt_graph_write_onnx(g, bad, &d), RLT_STATUS_IO_ERROR);
    cr_expect(strstr(d.message, bad), "the message names the path: %s", d.message);
    struct stat st;
    cr_expect_neq(stat(bad, &st), 0);
    /* a path that is a directory: the temporary file is written, the
     * rename fails, and nothing is left */
    char sub[600];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    cr_assert_eq(mkdir(sub, 0755), 0);
    d = (rlt_diag){0};
    cr_expect_eq(rlt_graph_write_onnx(g, sub, &d), RLT_STATUS_IO_ERROR);
    cr_expect(strstr(d.message, sub), "the message names the path: %s", d.message);
    cr_expect_eq(dir_entries(dir), 2, "m.onnx and sub only: the temporary file is removed");
    cr_expect_eq(dir_entries(sub), 0);

    rlt_graph_destroy(g);
    ob_free(&b);
    tmp_remove_tree(dir);
    free(dir);
    assert_no_leaks();
}

/* Writing fails with `status` and each of `subs` in the message. */
static void expect_write_error(const rlt_graph *g, rlt_status status, const char *subs)
{
    void *out = NULL;
    size_t len = 0;
    rlt_diag d = {0};
    cr_expect_eq(rlt_graph_to_onnx_bytes(g, &out, &len, &d), status, "%s", d.message);
    cr_expect_null(out);
    char buf[512];
    snprintf(buf, sizeof buf, "%s", subs);
    for (char *p = strtok(buf, "|"); p; p = strtok(NULL, "|"))
        cr_expect(strstr(d.message, p), "'%s' is not in the message: %s", p, d.message);
}

Test(graph_onnx_write, graphs_onnx_cannot_express)
{
    /* an opset rltune does not write */
    rlt_graph *g = h_graph(18);
    expect_write_error(g, RLT_STATUS_INVALID_ARGUMENT, "opset 18|9 to 17");
    rlt_graph_destroy(g);

    /* a tensor that nothing defines */
    g = h_graph(13);
    int x = h_tensor(g, "x", RLT_DTYPE_FLOAT32, 1, D(4));
    int ghost = h_tensor(g, "ghost", RLT_DTYPE_FLOAT32, 1, D(4));
    int y = h_tensor(g, "y", RLT_DTYPE_FLOAT32, 1, D(4));
    h_node(g, "Add", "add", 2, (int[]){x, ghost}, 1, &y);
    h_io(g, 1, &x, 1, &y);
    expect_write_error(g, RLT_STATUS_INVALID_ARGUMENT, "'add' (Add, opset 13)|'ghost'|neither a graph input nor");
    rlt_graph_destroy(g);

    /* a node before the producer of its input */
    g = h_graph(13);
    x = h_tensor(g, "x", RLT_DTYPE_FLOAT32, 1, D(4));
    y = h_tensor(g, "y", RLT_DTYPE_FLOAT32, 1, D(4));
    int z = h_tensor(g, "z", RLT_DTYPE_FLOAT32, 1, D(4));
    h_node(g, "Relu", "second", 1, &y, 1, &z);
    h_node(g, "Relu", "first", 1, &x, 1, &y);
    h_io(g, 1, &x, 1, &z);
    expect_write_error(g, RLT_STATUS_INVALID_ARGUMENT, "'second'|'y'|'first'|not sorted");
    rlt_graph_destroy(g);

    /* a graph output that only a removed node wrote */
    g = h_graph(13);
    x = h_tensor(g, "x", RLT_DTYPE_FLOAT32, 1, D(4));
    y = h_tensor(g, "y", RLT_DTYPE_FLOAT32, 1, D(4));
    int n = h_node(g, "Relu", "r", 1, &x, 1, &y);
    g->nodes[n].is_removed = true;
    h_io(g, 1, &x, 1, &y);
    expect_write_error(g, RLT_STATUS_INVALID_ARGUMENT, "graph output 'y'");
    rlt_graph_destroy(g);

    /* an operand given both ways */
    g = h_graph(13);
    x = h_tensor(g, "x", RLT_DTYPE_FLOAT32, 2, D(1, 4));
    int axes = h_const_i64(g, "axes", 1, D(0));
    y = h_tensor(g, "y", RLT_DTYPE_FLOAT32, 1, D(4));
    n = h_node(g, "Squeeze", "sq", 2, (int[]){x, axes}, 1, &y);
    h_attr_ints(g, n, "axes", 1, D(0));
    h_io(g, 1, &x, 1, &y);
    expect_write_error(g, RLT_STATUS_INVALID_ARGUMENT, "'sq' (Squeeze, opset 13)|axes is given both");
    rlt_graph_destroy(g);

    /* Gelu's tanh form has no ONNX op before opset 20 */
    g = h_graph(17);
    x = h_tensor(g, "x", RLT_DTYPE_FLOAT32, 1, D(4));
    y = h_tensor(g, "y", RLT_DTYPE_FLOAT32, 1, D(4));
    n = h_node(g, "Gelu", "gelu", 1, &x, 1, &y);
    h_attr(g, n, (rlt_graph_attr){.name = "approximate", .kind = RLT_GRAPH_ATTR_STRING, .s = "tanh"});
    h_io(g, 1, &x, 1, &y);
    expect_write_error(g, RLT_STATUS_INVALID_ARGUMENT, "'gelu' (Gelu, opset 17)|approximate='tanh'");
    rlt_graph_destroy(g);

    /* Slice's steps at opset 9 */
    g = h_graph(9);
    x = h_tensor(g, "x", RLT_DTYPE_FLOAT32, 1, D(6));
    int s0 = h_const_i64(g, "s0", 1, D(0)), e0 = h_const_i64(g, "e0", 1, D(6));
    int a0 = h_const_i64(g, "a0", 1, D(0)), st = h_const_i64(g, "st", 1, D(2));
    y = h_tensor(g, "y", RLT_DTYPE_FLOAT32, 1, D(3));
    h_node(g, "Slice", "sl", 5, (int[]){x, s0, e0, a0, st}, 1, &y);
    h_io(g, 1, &x, 1, &y);
    expect_write_error(g, RLT_STATUS_INVALID_ARGUMENT, "'sl' (Slice, opset 9)|'st', the steps");
    rlt_graph_destroy(g);
    assert_no_leaks();
}

Test(graph_onnx_write, allocation_failures)
{
    onnx_build b;
    moved_model(&b, 11);
    rlt_graph *g = load_ok(&b);
    rlt_graph *g13 = moved_graph_attrs(13);
    const rlt_graph *graphs[] = {g, g13};
    for (size_t k = 0; k < RLT_ARRAY_LEN(graphs); k++) {
        bool written = false;
        for (long n = 1; n < 2000 && !written; n++) {
            void *out = NULL;
            size_t len = 0;
            rlt_diag d = {0};
            rlt_alloc_fail_after(n);
            rlt_status st = rlt_graph_to_onnx_bytes(graphs[k], &out, &len, &d);
            rlt_alloc_fail_after(0);
            if (st == RLT_STATUS_OK) {
                written = true;
                rlt_free(out);
            } else {
                cr_assert_eq(st, RLT_STATUS_OUT_OF_MEMORY, "%s", d.message);
                cr_assert_null(out);
                cr_assert_neq(d.message[0], '\0');
            }
        }
        cr_expect(written, "never written with enough allocations");
    }
    rlt_graph_destroy(g13);
    rlt_graph_destroy(g);
    ob_free(&b);
    assert_no_leaks();
}
