/* onnx_build.h - builds small ONNX models in memory for the graph tests,
 * with the structs protoc-c generates from onnx.proto: declare inputs,
 * initializers, nodes (with attributes) and outputs, then pack the model
 * into bytes (ob_pack) or load it straight into a graph (ob_load). Every
 * piece is allocated by the builder and freed by ob_free; and a few layers
 * (ob_conv, ob_batchnorm, ob_resnet_block). Header-only, like fixtures.h;
 * used by tests/unit/test_graph_onnx.c (and its fuzz seeds),
 * test_graph_eval.c, test_graph_tasks.c, test_net.c, test_net_ops.c and
 * tests/cli/test_cli_tasks.c, test_cli_run.c. Layers with seeded random
 * weights (ob_conv_rand, ob_batchnorm_rand) make networks whose
 * activations stay O(1).
 *
 *     onnx_build b;
 *     ob_init(&b, 13);
 *     ob_input(&b, "x", OB_F32, 4, (int64_t[]){1, 3, 8, 8});
 *     ob_init_f32(&b, "w", 4, (int64_t[]){4, 3, 3, 3}, NULL);
 *     Onnx__NodeProto *n = ob_node(&b, "Conv", "conv1", "x,w", "y");
 *     ob_attr_ints(&b, n, "pads", 4, (int64_t[]){1, 1, 1, 1});
 *     ob_output(&b, "y");
 *     rlt_status st = ob_load(&b, &g, &d);
 *     ob_free(&b);
 */
#ifndef RLT_TESTS_ONNX_BUILD_H
#define RLT_TESTS_ONNX_BUILD_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "onnx.pb-c.h"

enum { OB_F32 = 1, OB_I32 = 6, OB_I64 = 7, OB_BOOL = 9, OB_F64 = 11 };

typedef struct onnx_build {
    Onnx__ModelProto model;
    Onnx__GraphProto graph;
    Onnx__OperatorSetIdProto opset;
    Onnx__OperatorSetIdProto *opsets[1];
    void **allocs; /* everything to free */
    size_t n_allocs, cap_allocs;
} onnx_build;

static inline void *ob_keep(onnx_build *b, void *p)
{
    if (!p) abort();
    if (b->n_allocs == b->cap_allocs) {
        b->cap_allocs = b->cap_allocs ? 2 * b->cap_allocs : 64;
        b->allocs = realloc(b->allocs, b->cap_allocs * sizeof *b->allocs);
        if (!b->allocs) abort();
    }
    b->allocs[b->n_allocs++] = p;
    return p;
}

static inline void *ob_zalloc(onnx_build *b, size_t n) { return ob_keep(b, calloc(1, n ? n : 1)); }

static inline char *ob_str(onnx_build *b, const char *s)
{
    char *p = ob_zalloc(b, strlen(s) + 1);
    memcpy(p, s, strlen(s));
    return p;
}

/* Appends `item` to a protobuf-c repeated field (array + count). */
#define OB_PUSH(b, arr, count, item)                                                                         \
    do {                                                                                                     \
        void **grown_ = ob_zalloc((b), ((count) + 1) * sizeof(void *));                                     \
        if (count) memcpy(grown_, (arr), (count) * sizeof(void *));                                         \
        (arr) = (void *)grown_;                                                                              \
        (arr)[(count)++] = (item);                                                                           \
    } while (0)

static inline void ob_init(onnx_build *b, int opset)
{
    memset(b, 0, sizeof *b);
    onnx__model_proto__init(&b->model);
    onnx__graph_proto__init(&b->graph);
    onnx__operator_set_id_proto__init(&b->opset);
    b->opset.domain = "";
    b->opset.has_version = 1;
    b->opset.version = opset;
    b->opsets[0] = &b->opset;
    b->model.has_ir_version = 1;
    b->model.ir_version = 8;
    b->model.n_opset_import = 1;
    b->model.opset_import = b->opsets;
    b->model.graph = &b->graph;
    b->graph.name = "test";
}

static inline void ob_free(onnx_build *b)
{
    for (size_t i = 0; i < b->n_allocs; i++) free(b->allocs[i]);
    free(b->allocs);
    memset(b, 0, sizeof *b);
}

/* A graph input; a negative dim becomes the symbolic dimension "N". */
static inline void ob_input(onnx_build *b, const char *name, int elem_type, int rank, const int64_t *dims)
{
    Onnx__ValueInfoProto *vi = ob_zalloc(b, sizeof *vi);
    onnx__value_info_proto__init(vi);
    vi->name = ob_str(b, name);
    Onnx__TypeProto *tp = ob_zalloc(b, sizeof *tp);
    onnx__type_proto__init(tp);
    Onnx__TypeProto__Tensor *tt = ob_zalloc(b, sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    tt->has_elem_type = 1;
    tt->elem_type = elem_type;
    Onnx__TensorShapeProto *sh = ob_zalloc(b, sizeof *sh);
    onnx__tensor_shape_proto__init(sh);
    for (int i = 0; i < rank; i++) {
        Onnx__TensorShapeProto__Dimension *d = ob_zalloc(b, sizeof *d);
        onnx__tensor_shape_proto__dimension__init(d);
        if (dims[i] >= 0) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = dims[i];
        } else {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = ob_str(b, "N");
        }
        OB_PUSH(b, sh->dim, sh->n_dim, d);
    }
    tt->shape = sh;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->type = tp;
    OB_PUSH(b, b->graph.input, b->graph.n_input, vi);
}

static inline void ob_output(onnx_build *b, const char *name)
{
    Onnx__ValueInfoProto *vi = ob_zalloc(b, sizeof *vi);
    onnx__value_info_proto__init(vi);
    vi->name = ob_str(b, name);
    OB_PUSH(b, b->graph.output, b->graph.n_output, vi);
}

static inline int64_t ob_n_elems(int rank, const int64_t *dims)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    return n;
}

/* A tensor (not yet placed anywhere) of type `elem_type`; `raw` (n bytes)
 * goes into raw_data when given, else values (may be NULL: 0.5, 1.5, ...
 * for floats, 0, 1, 2 ... for ints) go into the typed field. */
static inline Onnx__TensorProto *ob_tensor(onnx_build *b, const char *name, int elem_type, int rank, const int64_t *dims,
                                    const void *values)
{
    Onnx__TensorProto *t = ob_zalloc(b, sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = ob_str(b, name);
    t->has_data_type = 1;
    t->data_type = elem_type;
    t->n_dims = (size_t)rank;
    t->dims = ob_zalloc(b, (size_t)rank * sizeof(int64_t));
    if (rank) memcpy(t->dims, dims, (size_t)rank * sizeof(int64_t));
    size_t n = (size_t)ob_n_elems(rank, dims);
    if (elem_type == OB_F32) {
        t->n_float_data = n;
        t->float_data = ob_zalloc(b, n * sizeof(float));
        for (size_t i = 0; i < n; i++) t->float_data[i] = values ? ((const float *)values)[i] : (float)i + 0.5f;
    } else if (elem_type == OB_I64) {
        t->n_int64_data = n;
        t->int64_data = ob_zalloc(b, n * sizeof(int64_t));
        for (size_t i = 0; i < n; i++) t->int64_data[i] = values ? ((const int64_t *)values)[i] : (int64_t)i;
    } else {
        t->n_int32_data = n;
        t->int32_data = ob_zalloc(b, n * sizeof(int32_t));
        for (size_t i = 0; i < n; i++) t->int32_data[i] = values ? ((const int32_t *)values)[i] : (int32_t)i;
    }
    return t;
}

static inline void ob_initializer(onnx_build *b, Onnx__TensorProto *t)
{
    OB_PUSH(b, b->graph.initializer, b->graph.n_initializer, t);
}

static inline void ob_init_f32(onnx_build *b, const char *name, int rank, const int64_t *dims, const float *values)
{
    ob_initializer(b, ob_tensor(b, name, OB_F32, rank, dims, values));
}

/* A 1-D int64 initializer of n values. */
static inline void ob_init_i64(onnx_build *b, const char *name, int n, const int64_t *values)
{
    int64_t dims[1] = {n};
    ob_initializer(b, ob_tensor(b, name, OB_I64, 1, dims, values));
}

/* Splits "a,b,,c" into names ("" for an empty entry). */
static inline void ob_names(onnx_build *b, const char *list, char ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!list || !list[0]) return;
    const char *p = list;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char *s = ob_zalloc(b, len + 1);
        memcpy(s, p, len);
        OB_PUSH(b, *out, *n, s);
        if (!comma) break;
        p = comma + 1;
    }
}

static inline Onnx__NodeProto *ob_node(onnx_build *b, const char *op, const char *name, const char *inputs,
                                const char *outputs)
{
    Onnx__NodeProto *n = ob_zalloc(b, sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = ob_str(b, op);
    n->name = ob_str(b, name);
    ob_names(b, inputs, &n->input, &n->n_input);
    ob_names(b, outputs, &n->output, &n->n_output);
    OB_PUSH(b, b->graph.node, b->graph.n_node, n);
    return n;
}

static inline Onnx__AttributeProto *ob_attr(onnx_build *b, Onnx__NodeProto *n, const char *name,
                                     Onnx__AttributeProto__AttributeType type)
{
    Onnx__AttributeProto *a = ob_zalloc(b, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = ob_str(b, name);
    a->has_type = 1;
    a->type = type;
    OB_PUSH(b, n->attribute, n->n_attribute, a);
    return a;
}

static inline void ob_attr_i(onnx_build *b, Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = ob_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

static inline void ob_attr_f(onnx_build *b, Onnx__NodeProto *n, const char *name, float v)
{
    Onnx__AttributeProto *a = ob_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
}

static inline void ob_attr_s(onnx_build *b, Onnx__NodeProto *n, const char *name, const char *v)
{
    Onnx__AttributeProto *a = ob_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.len = strlen(v);
    a->s.data = (uint8_t *)ob_str(b, v);
}

static inline void ob_attr_ints(onnx_build *b, Onnx__NodeProto *n, const char *name, int count, const int64_t *v)
{
    Onnx__AttributeProto *a = ob_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = (size_t)count;
    a->ints = ob_zalloc(b, (size_t)count * sizeof(int64_t));
    if (count) memcpy(a->ints, v, (size_t)count * sizeof(int64_t));
}

static inline void ob_attr_floats(onnx_build *b, Onnx__NodeProto *n, const char *name, int count, const float *v)
{
    Onnx__AttributeProto *a = ob_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    a->n_floats = (size_t)count;
    a->floats = ob_zalloc(b, (size_t)count * sizeof(float));
    if (count) memcpy(a->floats, v, (size_t)count * sizeof(float));
}

static inline void ob_attr_t(onnx_build *b, Onnx__NodeProto *n, const char *name, Onnx__TensorProto *t)
{
    Onnx__AttributeProto *a = ob_attr(b, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    a->t = t;
}

/* The model as protobuf bytes (owned by the builder). */
static inline uint8_t *ob_pack(onnx_build *b, size_t *len)
{
    *len = onnx__model_proto__get_packed_size(&b->model);
    uint8_t *buf = ob_zalloc(b, *len);
    size_t n = onnx__model_proto__pack(&b->model, buf);
    if (n != *len) abort();
    return buf;
}

static inline rlt_status ob_load(onnx_build *b, rlt_graph **g, rlt_diag *d)
{
    size_t len;
    uint8_t *buf = ob_pack(b, &len);
    return rlt_graph_load_onnx_bytes(buf, len, "test.onnx", g, d);
}

/* ob_load, then BatchNormalization folding and dead-code removal, as
 * rlt_model_load leaves a graph. */
static inline rlt_status ob_load_folded(onnx_build *b, rlt_graph **g, rlt_diag *d)
{
    rlt_status st = ob_load(b, g, d);
    if (st != RLT_STATUS_OK) return st;
    if (rlt_graph_fold_batchnorm(*g, d) < 0 || rlt_graph_dce(*g) < 0) {
        rlt_graph_destroy(*g);
        *g = NULL;
        return RLT_STATUS_OUT_OF_MEMORY;
    }
    return RLT_STATUS_OK;
}

/* Writes the packed model to `path`; false when the file cannot be written. */
static inline bool ob_write(onnx_build *b, const char *path)
{
    size_t len;
    uint8_t *buf = ob_pack(b, &len);
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(buf, 1, len, f) == len;
    return fclose(f) == 0 && ok;
}

/* ---- seeded random weights (tests/unit/test_net.c, tests/cli/test_cli_run.c) ---- */

/* Uniform in [-1, 1) from a 64-bit LCG state. */
static inline float ob_rand(uint64_t *state)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((double)(*state >> 40) / (double)(1ULL << 24) * 2.0 - 1.0);
}

/* An f32 initializer of values uniform in [-scale, scale). */
static inline void ob_init_rand(onnx_build *b, const char *name, int rank, const int64_t *dims, float scale,
                                uint64_t *state)
{
    int64_t n = ob_n_elems(rank, dims);
    float *v = ob_zalloc(b, (size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = scale * ob_rand(state);
    ob_init_f32(b, name, rank, dims, v);
}

/* A Conv (square kernel R, stride, symmetric pad, groups) with random
 * weights scaled by the fan-in, so that activations stay O(1) through a
 * network, and a random bias when has_bias. */
static inline Onnx__NodeProto *ob_conv_rand(onnx_build *b, const char *name, const char *in, const char *out,
                                             int64_t C, int64_t K, int64_t R, int64_t stride, int64_t pad,
                                             int64_t group, bool has_bias, uint64_t *state)
{
    char w[160], bias[160], inputs[480];
    snprintf(w, sizeof w, "%s_w", name);
    snprintf(bias, sizeof bias, "%s_b", name);
    ob_init_rand(b, w, 4, (int64_t[]){K, C / group, R, R}, 1.5f / sqrtf((float)(C / group * R * R)), state);
    if (has_bias) ob_init_rand(b, bias, 1, (int64_t[]){K}, 0.3f, state);
    snprintf(inputs, sizeof inputs, "%s,%s%s%s", in, w, has_bias ? "," : "", has_bias ? bias : "");
    Onnx__NodeProto *n = ob_node(b, "Conv", name, inputs, out);
    ob_attr_ints(b, n, "pads", 4, (int64_t[]){pad, pad, pad, pad});
    ob_attr_ints(b, n, "strides", 2, (int64_t[]){stride, stride});
    if (group != 1) ob_attr_i(b, n, "group", group);
    return n;
}

/* An inference BatchNormalization over C channels with random statistics
 * (variance in [0.5, 1.5]). */
static inline void ob_batchnorm_rand(onnx_build *b, const char *name, const char *in, const char *out, int64_t C,
                                     uint64_t *state)
{
    char s[160], bb[160], m[160], v[160], inputs[800];
    snprintf(s, sizeof s, "%s_scale", name);
    snprintf(bb, sizeof bb, "%s_bias", name);
    snprintf(m, sizeof m, "%s_mean", name);
    snprintf(v, sizeof v, "%s_var", name);
    float *var = ob_zalloc(b, (size_t)C * sizeof *var);
    for (int64_t i = 0; i < C; i++) var[i] = 1.0f + 0.5f * ob_rand(state);
    ob_init_rand(b, s, 1, (int64_t[]){C}, 1.0f, state);
    ob_init_rand(b, bb, 1, (int64_t[]){C}, 0.5f, state);
    ob_init_rand(b, m, 1, (int64_t[]){C}, 0.5f, state);
    ob_init_f32(b, v, 1, (int64_t[]){C}, var);
    snprintf(inputs, sizeof inputs, "%s,%s,%s,%s,%s", in, s, bb, m, v);
    ob_node(b, "BatchNormalization", name, inputs, out);
}

/* ---- layers (tests/unit/test_graph_tasks.c, tests/cli/test_cli_tasks.c) ---- */

#define OB_DIMS(...) ((int64_t[]){__VA_ARGS__})

/* A Conv named `name` from `in` to `out`: weight [K, C/group, R, R] (and
 * bias [K] when has_bias), square stride and symmetric pad. */
static inline Onnx__NodeProto *ob_conv(onnx_build *b, const char *name, const char *in, const char *out, int64_t C,
                                        int64_t K, int64_t R, int64_t stride, int64_t pad, int64_t group, bool has_bias)
{
    char w[160], bias[160], inputs[480];
    snprintf(w, sizeof w, "%s_w", name);
    snprintf(bias, sizeof bias, "%s_b", name);
    ob_init_f32(b, w, 4, OB_DIMS(K, C / group, R, R), NULL);
    if (has_bias) ob_init_f32(b, bias, 1, OB_DIMS(K), NULL);
    snprintf(inputs, sizeof inputs, "%s,%s%s%s", in, w, has_bias ? "," : "", has_bias ? bias : "");
    Onnx__NodeProto *n = ob_node(b, "Conv", name, inputs, out);
    ob_attr_ints(b, n, "pads", 4, OB_DIMS(pad, pad, pad, pad));
    ob_attr_ints(b, n, "strides", 2, OB_DIMS(stride, stride));
    if (group != 1) ob_attr_i(b, n, "group", group);
    return n;
}

/* An inference BatchNormalization over C channels. */
static inline void ob_batchnorm(onnx_build *b, const char *name, const char *in, const char *out, int64_t C)
{
    char s[160], bb[160], m[160], v[160], inputs[800];
    snprintf(s, sizeof s, "%s_scale", name);
    snprintf(bb, sizeof bb, "%s_bias", name);
    snprintf(m, sizeof m, "%s_mean", name);
    snprintf(v, sizeof v, "%s_var", name);
    ob_init_f32(b, s, 1, OB_DIMS(C), NULL);
    ob_init_f32(b, bb, 1, OB_DIMS(C), NULL);
    ob_init_f32(b, m, 1, OB_DIMS(C), NULL);
    ob_init_f32(b, v, 1, OB_DIMS(C), NULL);
    snprintf(inputs, sizeof inputs, "%s,%s,%s,%s,%s", in, s, bb, m, v);
    ob_node(b, "BatchNormalization", name, inputs, out);
}

/* A ResNet basic block over [1, C, H, W]: Conv-BN-Relu-Conv-BN-Add(in)-Relu,
 * its nodes named PREFIX_conv1 ... PREFIX_relu2, writing PREFIX_out. */
static inline void ob_resnet_block(onnx_build *b, const char *p, const char *in, int64_t C)
{
    char n[12][64];
    const char *part[] = {"conv1", "bn1", "relu1", "conv2", "bn2", "add", "relu2", "c1", "b1", "r1", "c2", "b2"};
    for (int i = 0; i < 12; i++) snprintf(n[i], sizeof n[i], "%s_%s", p, part[i]);
    char a[64], out[64];
    snprintf(a, sizeof a, "%s_a", p);
    snprintf(out, sizeof out, "%s_out", p);
    ob_conv(b, n[0], in, n[7], C, C, 3, 1, 1, 1, false);
    ob_batchnorm(b, n[1], n[7], n[8], C);
    ob_node(b, "Relu", n[2], n[8], n[9]);
    ob_conv(b, n[3], n[9], n[10], C, C, 3, 1, 1, 1, false);
    ob_batchnorm(b, n[4], n[10], n[11], C);
    char add_in[140];
    snprintf(add_in, sizeof add_in, "%s,%s", n[11], in);
    ob_node(b, "Add", n[5], add_in, a);
    ob_node(b, "Relu", n[6], a, out);
}

/* The small CNN the CLI tests run and export (tests/cli): a 3x3 stem with
 * Relu, a residual block, MaxPool, a depthwise conv with Clip 0..6,
 * GlobalAveragePool, Flatten and a Gemm (transB) to 10 outputs; input x
 * [1,3,16,16], output y [1,10]; weights drawn from *rng. Written to
 * path; false when it cannot be written. Its stem's task is
 * "conv2d:N=1,C=3,H=16,W=16,K=8,R=3,S=3,stride=1,pad=1,dilation=1,epilogue=bias+relu". */
static inline bool ob_write_small_cnn(const char *path, uint64_t *rng)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, OB_DIMS(1, 3, 16, 16));
    ob_conv_rand(&b, "stem", "x", "s0", 3, 8, 3, 1, 1, 1, true, rng);
    ob_node(&b, "Relu", "stem_relu", "s0", "s1");
    ob_conv_rand(&b, "c1", "s1", "a0", 8, 8, 3, 1, 1, 1, true, rng);
    ob_node(&b, "Relu", "r1", "a0", "a1");
    ob_conv_rand(&b, "c2", "a1", "a2", 8, 8, 3, 1, 1, 1, true, rng);
    ob_node(&b, "Add", "add", "a2,s1", "a3");
    ob_node(&b, "Relu", "r2", "a3", "a4");
    Onnx__NodeProto *mp = ob_node(&b, "MaxPool", "pool", "a4", "p");
    ob_attr_ints(&b, mp, "kernel_shape", 2, OB_DIMS(2, 2));
    ob_attr_ints(&b, mp, "strides", 2, OB_DIMS(2, 2));
    ob_conv_rand(&b, "dw", "p", "d0", 8, 8, 3, 1, 1, 8, true, rng);
    ob_init_rand(&b, "zero", 0, NULL, 0.0f, rng);
    float six = 6.0f;
    ob_init_f32(&b, "six", 0, NULL, &six);
    ob_node(&b, "Clip", "dw6", "d0,zero,six", "d1");
    ob_node(&b, "GlobalAveragePool", "gap", "d1", "g");
    ob_node(&b, "Flatten", "flat", "g", "f");
    ob_init_rand(&b, "fc_w", 2, OB_DIMS(10, 8), 0.5f, rng);
    ob_init_rand(&b, "fc_b", 1, OB_DIMS(10), 0.5f, rng);
    Onnx__NodeProto *fc = ob_node(&b, "Gemm", "fc", "f,fc_w,fc_b", "y");
    ob_attr_i(&b, fc, "transB", 1);
    ob_output(&b, "y");
    bool ok = ob_write(&b, path);
    ob_free(&b);
    return ok;
}

#endif /* RLT_TESTS_ONNX_BUILD_H */
