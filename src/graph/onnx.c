/*
 * onnx.c - the ONNX importer: a model file (protobuf ModelProto, decoded by
 * the code protoc-c generates from Debian's onnx.proto, cmake/onnx.cmake)
 * into the graph IR. Entry points: rlt_graph_load_onnx (a file) and
 * rlt_graph_load_onnx_bytes (a buffer); rlt_graph_tensor_decode_onnx reads
 * one TensorProto by the same rules (ONNX's backend test data).
 *
 * Nothing in the file is trusted: every name is looked up, every tensor's
 * data length is checked against its shape and type, every count is
 * bounded, and what rltune does not handle (an op, an attribute type, a data
 * type, a symbolic dimension, external or sparse data) is refused with one
 * message naming where it is. The decoded protobuf is freed before return;
 * the graph keeps copies in its arena.
 */
#include "graph/graph.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "onnx.pb-c.h"

#define ONNX_OPSET_MIN 9
#define ONNX_OPSET_MAX 17
#define ONNX_FILE_MAX_BYTES ((long)2 << 30) /* protobuf's own limit on one message */
#define ONNX_MAX_LIST (1 << 20)             /* inputs / outputs of one node */

bool rlt_dtype_from_onnx(int64_t code, rlt_dtype *out)
{
    switch (code) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: *out = RLT_DTYPE_FLOAT32; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: *out = RLT_DTYPE_INT32; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: *out = RLT_DTYPE_INT64; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: *out = RLT_DTYPE_BOOL; return true;
    default: return false;
    }
}

const char *rlt_dtype_onnx_name(int64_t code)
{
    static const char *const names[] = {
        "UNDEFINED",  "FLOAT",      "UINT8",      "INT8",           "UINT16",     "INT16",
        "INT32",      "INT64",      "STRING",     "BOOL",           "FLOAT16",    "DOUBLE",
        "UINT32",     "UINT64",     "COMPLEX64",  "COMPLEX128",     "BFLOAT16",   "FLOAT8E4M3FN",
        "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",  "INT4",       "FLOAT4E2M1",
        "FLOAT8E8M0", "UINT2",      "INT2",       "FLOAT6E2M3",     "FLOAT6E3M2"};
    return code >= 0 && code < (int64_t)RLT_ARRAY_LEN(names) ? names[code] : "unknown";
}

static const char *str_or_empty(const char *s) { return s ? s : ""; }

/* protobuf-c allocates through rltune's allocator (and its fault hook). */
static void *pb_alloc(void *data, size_t size)
{
    (void)data;
    return rlt_malloc(size);
}

static void pb_free(void *data, void *ptr)
{
    (void)data;
    rlt_free(ptr);
}

typedef struct importer {
    rlt_graph *g;
    rlt_arena *arena;   /* where decoded tensor data goes: the graph's, or a scratch one */
    const char *source; /* names the model in messages */
    rlt_diag *diag;
} importer;

/* ---- tensors ------------------------------------------------------------- */

/* Decodes a TensorProto's type, shape and values into `t` (name excluded);
 * `what` names it in messages ("initializer 'w'"). */
static rlt_status tensor_decode(const importer *im, const Onnx__TensorProto *tp, const char *what,
                                rlt_graph_tensor *t)
{
    if (tp->n_external_data > 0 ||
        (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL))
        return rlt_fail(im->diag, RLT_STATUS_INVALID_ARGUMENT,
                        "%s: %s keeps its data in an external file, which rltune does not read; save the model "
                        "with its weights inside (onnx.save_model(..., save_as_external_data=False))",
                        im->source, what);
    if (tp->segment)
        return rlt_fail(im->diag, RLT_STATUS_INVALID_ARGUMENT, "%s: %s is segmented, which is not supported",
                        im->source, what);
    if (!tp->has_data_type || !rlt_dtype_from_onnx(tp->data_type, &t->dtype))
        return rlt_fail(im->diag, RLT_STATUS_INVALID_ARGUMENT,
                        "%s: %s has ONNX data type %d (%s); supported: FLOAT, INT64, INT32, BOOL", im->source, what,
                        tp->has_data_type ? tp->data_type : 0,
                        rlt_dtype_onnx_name(tp->has_data_type ? tp->data_type : 0));
    if (tp->n_dims > RLT_GRAPH_MAX_RANK)
        return rlt_fail(im->diag, RLT_STATUS_INVALID_ARGUMENT, "%s: %s has rank %zu; at most %d is supported",
                        im->source, what, tp->n_dims, RLT_GRAPH_MAX_RANK);
    int64_t n = 1;
    for (size_t i = 0; i < tp->n_dims; i++) {
        int64_t d = tp->dims[i];
        if (d < 0)
            return rlt_fail(im->diag, RLT_STATUS_PARSE_ERROR, "%s: %s has dimension %zu of size %" PRId64,
                            im->source, what, i, d);
        if (d > 0 && n > RLT_GRAPH_MAX_ELEMS / d)
            return rlt_fail(im->diag, RLT_STATUS_INVALID_ARGUMENT, "%s: %s has more than 2^40 elements",
                            im->source, what);
        n *= d;
        t->dims[i] = d;
    }
    t->rank = (int)tp->n_dims;
    t->has_shape = true;
    size_t es = rlt_dtype_size(t->dtype);
    size_t have;
    const char *field;
    if (tp->has_raw_data) {
        have = tp->raw_data.len / es;
        field = "raw_data";
        if (tp->raw_data.len % es != 0) have = (size_t)-1;
    } else if (t->dtype == RLT_DTYPE_FLOAT32) {
        have = tp->n_float_data;
        field = "float_data";
    } else if (t->dtype == RLT_DTYPE_INT64) {
        have = tp->n_int64_data;
        field = "int64_data";
    } else {
        have = tp->n_int32_data;
        field = "int32_data";
    }
    if (have != (size_t)n)
        return rlt_fail(im->diag, RLT_STATUS_PARSE_ERROR,
                        "%s: %s: its %s holds %zu bytes; its shape and type (%" PRId64 " elements of %s) need %zu",
                        im->source, what, field,
                        tp->has_raw_data ? tp->raw_data.len : (have == (size_t)-1 ? 0 : have) * es, n,
                        rlt_dtype_str(t->dtype), (size_t)n * es);
    unsigned char *data = rlt_arena_alloc(im->arena, (size_t)n * es + 1);
    if (!data) return rlt_fail(im->diag, RLT_STATUS_OUT_OF_MEMORY, "%s: out of memory reading %s", im->source, what);
    if (tp->has_raw_data) {
        if (n) memcpy(data, tp->raw_data.data, (size_t)n * es);
        if (t->dtype == RLT_DTYPE_BOOL)
            for (int64_t i = 0; i < n; i++) data[i] = data[i] != 0;
    } else if (t->dtype == RLT_DTYPE_FLOAT32) {
        if (n) memcpy(data, tp->float_data, (size_t)n * es);
    } else if (t->dtype == RLT_DTYPE_INT64) {
        if (n) memcpy(data, tp->int64_data, (size_t)n * es);
    } else if (t->dtype == RLT_DTYPE_INT32) {
        if (n) memcpy(data, tp->int32_data, (size_t)n * es);
    } else {
        for (int64_t i = 0; i < n; i++) data[i] = tp->int32_data[i] != 0;
    }
    t->data = data;
    return RLT_STATUS_OK;
}

static rlt_status add_initializers(const importer *im, const Onnx__GraphProto *gp)
{
    if (gp->n_sparse_initializer > 0)
        return rlt_fail(im->diag, RLT_STATUS_INVALID_ARGUMENT,
                        "%s: the graph has sparse initializers, which rltune does not read", im->source);
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        const char *name = str_or_empty(tp->name);
        if (!name[0])
            return rlt_fail(im->diag, RLT_STATUS_PARSE_ERROR, "%s: initializer %zu has no name", im->source, i);
        char what[300];
        snprintf(what, sizeof what, "initializer '%.200s'", name);
        rlt_graph_tensor t = {.producer = -1};
        rlt_status st = tensor_decode(im, tp, what, &t);
        if (st != RLT_STATUS_OK) return st;
        int idx;
        st = rlt_graph_tensor_add(im->g, name, t.dtype, &idx, im->diag);
        if (st != RLT_STATUS_OK) return st;
        rlt_graph_tensor *x = &im->g->tensors[idx];
        memcpy(x->dims, t.dims, sizeof t.dims);
        x->rank = t.rank;
        x->has_shape = true;
        x->data = t.data;
        x->is_initializer = true;
    }
    return RLT_STATUS_OK;
}

/* ---- graph inputs and outputs --------------------------------------------- */

static rlt_status add_input(const importer *im, const Onnx__ValueInfoProto *vi, size_t i)
{
    const char *name = str_or_empty(vi->name);
    rlt_graph *g = im->g;
    if (!name[0]) return rlt_fail(im->diag, RLT_STATUS_PARSE_ERROR, "%s: graph input %zu has no name", im->source, i);
    /* An initializer listed among the inputs (IR version < 4 did so) stays
     * a constant. */
    if (rlt_graph_tensor_find(g, name) >= 0) {
        if (g->tensors[rlt_graph_tensor_find(g, name)].is_initializer) return RLT_STATUS_OK;
        return rlt_fail(im->diag, RLT_STATUS_PARSE_ERROR, "%s: graph input '%s' is listed twice", im->source, name);
    }
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
        return rlt_fail(im->diag, RLT_STATUS_INVALID_ARGUMENT, "%s: graph input '%s' is not a tensor", im->source,
                        name);
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    rlt_dtype dtype;
    if (!tt->has_elem_type || !rlt_dtype_from_onnx(tt->elem_type, &dtype))
        return rlt_fail(im->diag, RLT_STATUS_INVALID_ARGUMENT,
                        "%s: graph input '%s' has ONNX data type %d (%s); supported: FLOAT, INT64, INT32, BOOL",
                        im->source, name, tt->elem_type, rlt_dtype_onnx_name(tt->elem_type));
    if (!tt->shape)
        return rlt_fail(im->diag, RLT_STATUS_INVALID_ARGUMENT,
                        "%s: graph input '%s' has no shape; rltune needs static shapes", im->source, name);
    if (tt->shape->n_dim > RLT_GRAPH_MAX_RANK)
        return rlt_fail(im->diag, RLT_STATUS_INVALID_ARGUMENT, "%s: graph input '%s' has rank %zu; at most %d",
                        im->source, name, tt->shape->n_dim, RLT_GRAPH_MAX_RANK);
    int64_t dims[RLT_GRAPH_MAX_RANK];
    for (size_t d = 0; d < tt->shape->n_dim; d++) {
        const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
        if (dim->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
            return rlt_fail(im->diag, RLT_STATUS_INVALID_ARGUMENT,
                            "%s: dimension %zu of graph input '%s' is symbolic ('%s'); rltune needs static shapes: "
                            "export the model with fixed input sizes",
                            im->source, d, name,
                            dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
                                ? str_or_empty(dim->dim_param) : "");
        dims[d] = dim->dim_value;
    }
    int idx;
    rlt_status st = rlt_graph_tensor_add(g, name, dtype, &idx, im->diag);
    if (st == RLT_STATUS_OK) st = rlt_graph_tensor_set_shape(g, idx, (int)tt->shape->n_dim, dims, im->diag);
    if (st != RLT_STATUS_OK) {
        rlt_diag_prefix(im->diag, "%s: graph input '%s'", im->source, name);
        return st;
    }
    g->inputs[g->n_inputs++] = idx;
    return RLT_STATUS_OK;
}

/* ---- nodes ------------------------------------------------------------------ */

static rlt_status attr_decode(const importer *im, int node, const Onnx__AttributeProto *ap, rlt_graph_attr *a)
{
    rlt_graph *g = im->g;
    const rlt_graph_node *n = &g->nodes[node];
    const char *name = str_or_empty(ap->name);
    if (!name[0]) return rlt_graph_node_fail(g, n, im->diag, RLT_STATUS_PARSE_ERROR, "an attribute has no name");
    if (ap->ref_attr_name && ap->ref_attr_name[0])
        return rlt_graph_node_fail(g, n, im->diag, RLT_STATUS_INVALID_ARGUMENT,
                                   "attribute '%s' refers to a function's attribute, which is not supported", name);
    if (!ap->has_type)
        return rlt_graph_node_fail(g, n, im->diag, RLT_STATUS_PARSE_ERROR, "attribute '%s' has no type", name);
    a->name = rlt_arena_strdup(g->arena, name);
    if (!a->name) return rlt_fail(im->diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory");
    switch (ap->type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
        a->kind = RLT_GRAPH_ATTR_INT;
        a->i = ap->i;
        return RLT_STATUS_OK;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
        a->kind = RLT_GRAPH_ATTR_FLOAT;
        a->f = ap->f;
        return RLT_STATUS_OK;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: {
        a->kind = RLT_GRAPH_ATTR_STRING;
        char *s = rlt_arena_alloc(g->arena, ap->s.len + 1);
        if (!s) return rlt_fail(im->diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory");
        if (ap->s.len) memcpy(s, ap->s.data, ap->s.len);
        a->s = s;
        return RLT_STATUS_OK;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS: {
        if (ap->n_ints > ONNX_MAX_LIST)
            return rlt_graph_node_fail(g, n, im->diag, RLT_STATUS_INVALID_ARGUMENT, "attribute '%s' is too long",
                                       name);
        a->kind = RLT_GRAPH_ATTR_INTS;
        int64_t *v = rlt_arena_alloc(g->arena, ap->n_ints * sizeof *v + 1);
        if (!v) return rlt_fail(im->diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory");
        if (ap->n_ints) memcpy(v, ap->ints, ap->n_ints * sizeof *v);
        a->ints = v;
        a->n_values = (int)ap->n_ints;
        return RLT_STATUS_OK;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: {
        if (ap->n_floats > ONNX_MAX_LIST)
            return rlt_graph_node_fail(g, n, im->diag, RLT_STATUS_INVALID_ARGUMENT, "attribute '%s' is too long",
                                       name);
        a->kind = RLT_GRAPH_ATTR_FLOATS;
        float *v = rlt_arena_alloc(g->arena, ap->n_floats * sizeof *v + 1);
        if (!v) return rlt_fail(im->diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory");
        if (ap->n_floats) memcpy(v, ap->floats, ap->n_floats * sizeof *v);
        a->floats = v;
        a->n_values = (int)ap->n_floats;
        return RLT_STATUS_OK;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: {
        if (!ap->t)
            return rlt_graph_node_fail(g, n, im->diag, RLT_STATUS_PARSE_ERROR, "tensor attribute '%s' has no tensor",
                                       name);
        rlt_graph_tensor *t = rlt_arena_alloc(g->arena, sizeof *t);
        if (!t) return rlt_fail(im->diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory");
        char what[300];
        snprintf(what, sizeof what, "node %d '%.80s' (%.60s, opset %d): the tensor of attribute '%.80s'",
                 n->file_index, n->name, n->op_type, g->opset, name);
        rlt_status st = tensor_decode(im, ap->t, what, t);
        if (st != RLT_STATUS_OK) return st;
        t->name = "";
        t->producer = -1;
        a->kind = RLT_GRAPH_ATTR_TENSOR;
        a->tensor = t;
        return RLT_STATUS_OK;
    }
    default: {
        static const char *const kinds[] = {"UNDEFINED", "FLOAT",  "INT",     "STRING",        "TENSOR",
                                            "GRAPH",     "FLOATS", "INTS",    "STRINGS",       "TENSORS",
                                            "GRAPHS",    "SPARSE_TENSOR",     "SPARSE_TENSORS", "TYPE_PROTO",
                                            "TYPE_PROTOS"};
        unsigned k = (unsigned)ap->type;
        return rlt_graph_node_fail(g, n, im->diag, RLT_STATUS_INVALID_ARGUMENT,
                                   "attribute '%s' has type %s, which is not supported", name,
                                   k < RLT_ARRAY_LEN(kinds) ? kinds[k] : "unknown");
    }
    }
}

/* The node's domain: the default one, or com.microsoft for Gelu (what
 * exporters emit before opset 20 has it). */
static rlt_status check_domain(const importer *im, int node, const char *domain)
{
    const rlt_graph_node *n = &im->g->nodes[node];
    if (!domain[0] || strcmp(domain, "ai.onnx") == 0) return RLT_STATUS_OK;
    if (strcmp(domain, "com.microsoft") == 0 && strcmp(n->op_type, "Gelu") == 0) return RLT_STATUS_OK;
    return rlt_graph_node_fail(im->g, n, im->diag, RLT_STATUS_INVALID_ARGUMENT,
                               "op %s of domain '%s' is not supported; rltune reads the default ONNX domain",
                               n->op_type, domain);
}

static rlt_status add_nodes(const importer *im, const Onnx__GraphProto *gp)
{
    rlt_graph *g = im->g;
    rlt_status st = RLT_STATUS_OK;
    int *ins = NULL, *outs = NULL;
    /* First every node's outputs, so that inputs may name a later node's
     * output (rlt_graph_sort puts them in order). */
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        if (np->n_input > ONNX_MAX_LIST || np->n_output > ONNX_MAX_LIST)
            return rlt_fail(im->diag, RLT_STATUS_INVALID_ARGUMENT, "%s: node %zu has too many inputs or outputs",
                            im->source, i);
        for (size_t o = 0; o < np->n_output; o++) {
            const char *name = str_or_empty(np->output[o]);
            if (!name[0]) continue;
            if (rlt_graph_tensor_find(g, name) >= 0)
                return rlt_fail(im->diag, RLT_STATUS_PARSE_ERROR,
                                "%s: node %zu '%s' (%s): output '%s' is already defined (by a node, an input or an "
                                "initializer)", im->source, i, str_or_empty(np->name), str_or_empty(np->op_type),
                                name);
            st = rlt_graph_tensor_add(g, name, RLT_DTYPE_FLOAT32, NULL, im->diag);
            if (st != RLT_STATUS_OK) return st;
        }
    }
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        const char *op = str_or_empty(np->op_type), *name = str_or_empty(np->name);
        if (!op[0]) {
            st = rlt_fail(im->diag, RLT_STATUS_PARSE_ERROR, "%s: node %zu '%s' has no op type", im->source, i, name);
            goto cleanup;
        }
        rlt_free(ins);
        rlt_free(outs);
        ins = rlt_malloc((np->n_input + 1) * sizeof *ins);
        outs = rlt_malloc((np->n_output + 1) * sizeof *outs);
        if (!ins || !outs) {
            st = rlt_fail(im->diag, RLT_STATUS_OUT_OF_MEMORY, "%s: out of memory", im->source);
            goto cleanup;
        }
        for (size_t k = 0; k < np->n_input; k++) {
            const char *in = str_or_empty(np->input[k]);
            ins[k] = in[0] ? rlt_graph_tensor_find(g, in) : -1;
            if (in[0] && ins[k] < 0) {
                st = rlt_fail(im->diag, RLT_STATUS_PARSE_ERROR,
                              "%s: node %zu '%s' (%s, opset %d): input '%s' is not produced by any node, graph "
                              "input or initializer", im->source, i, name, op, g->opset, in);
                goto cleanup;
            }
        }
        for (size_t k = 0; k < np->n_output; k++) {
            const char *out = str_or_empty(np->output[k]);
            outs[k] = out[0] ? rlt_graph_tensor_find(g, out) : -1;
        }
        int idx;
        st = rlt_graph_node_add(g, op, name, (int)np->n_input, ins, (int)np->n_output, outs, &idx, im->diag);
        if (st != RLT_STATUS_OK) goto cleanup;
        st = check_domain(im, idx, str_or_empty(np->domain));
        if (st == RLT_STATUS_OK) st = rlt_graph_op_check(g, idx, im->diag);
        if (st != RLT_STATUS_OK) goto cleanup;
        if (np->n_attribute > 1024) {
            st = rlt_graph_node_fail(g, &g->nodes[idx], im->diag, RLT_STATUS_INVALID_ARGUMENT,
                                     "%zu attributes; at most 1024", np->n_attribute);
            goto cleanup;
        }
        rlt_graph_attr *attrs = rlt_arena_alloc(g->arena, np->n_attribute * sizeof *attrs + 1);
        if (!attrs) {
            st = rlt_fail(im->diag, RLT_STATUS_OUT_OF_MEMORY, "%s: out of memory", im->source);
            goto cleanup;
        }
        for (size_t a = 0; a < np->n_attribute; a++) {
            st = attr_decode(im, idx, np->attribute[a], &attrs[a]);
            if (st != RLT_STATUS_OK) goto cleanup;
            for (size_t b = 0; b < a; b++)
                if (strcmp(attrs[b].name, attrs[a].name) == 0) {
                    st = rlt_graph_node_fail(g, &g->nodes[idx], im->diag, RLT_STATUS_PARSE_ERROR,
                                             "attribute '%s' is given twice", attrs[a].name);
                    goto cleanup;
                }
        }
        g->nodes[idx].attrs = attrs;
        g->nodes[idx].n_attrs = (int)np->n_attribute;
    }
cleanup:
    rlt_free(outs);
    rlt_free(ins);
    return st;
}

/* ---- the model ----------------------------------------------------------------- */

static rlt_status model_opset(const importer *im, const Onnx__ModelProto *m, int *opset)
{
    bool found = false;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        const char *domain = str_or_empty(o->domain);
        if (domain[0] && strcmp(domain, "ai.onnx") != 0) continue;
        if (!o->has_version || o->version < ONNX_OPSET_MIN || o->version > ONNX_OPSET_MAX)
            return rlt_fail(im->diag, RLT_STATUS_INVALID_ARGUMENT,
                            "%s: opset %" PRId64 " of the default ONNX domain is not supported; rltune reads opsets "
                            "%d to %d", im->source, o->has_version ? o->version : 0, ONNX_OPSET_MIN, ONNX_OPSET_MAX);
        *opset = (int)o->version;
        found = true;
    }
    if (!found)
        return rlt_fail(im->diag, RLT_STATUS_PARSE_ERROR,
                        "%s: the model imports no opset of the default ONNX domain", im->source);
    return RLT_STATUS_OK;
}

static rlt_status import_model(importer *im, const Onnx__ModelProto *m, rlt_graph **out)
{
    const Onnx__GraphProto *gp = m->graph;
    if (!gp) return rlt_fail(im->diag, RLT_STATUS_PARSE_ERROR, "%s: the model has no graph", im->source);
    int opset = 0;
    rlt_status st = model_opset(im, m, &opset);
    if (st != RLT_STATUS_OK) return st;
    st = rlt_graph_create(opset, &im->g, im->diag);
    if (st != RLT_STATUS_OK) return st;
    rlt_graph *g = im->g;
    im->arena = g->arena;
    g->inputs = rlt_arena_alloc(g->arena, (gp->n_input + 1) * sizeof(int));
    g->outputs = rlt_arena_alloc(g->arena, (gp->n_output + 1) * sizeof(int));
    if (!g->inputs || !g->outputs) {
        st = rlt_fail(im->diag, RLT_STATUS_OUT_OF_MEMORY, "%s: out of memory", im->source);
        goto fail;
    }
    if ((st = add_initializers(im, gp)) != RLT_STATUS_OK) goto fail;
    for (size_t i = 0; i < gp->n_input; i++)
        if ((st = add_input(im, gp->input[i], i)) != RLT_STATUS_OK) goto fail;
    if ((st = add_nodes(im, gp)) != RLT_STATUS_OK) goto fail;
    if (gp->n_output == 0) {
        st = rlt_fail(im->diag, RLT_STATUS_PARSE_ERROR, "%s: the graph has no outputs", im->source);
        goto fail;
    }
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *name = str_or_empty(gp->output[i]->name);
        int t = rlt_graph_tensor_find(g, name);
        if (t < 0) {
            st = rlt_fail(im->diag, RLT_STATUS_PARSE_ERROR,
                          "%s: graph output '%s' is not produced by any node, input or initializer", im->source, name);
            goto fail;
        }
        g->outputs[g->n_outputs++] = t;
    }
    if ((st = rlt_graph_sort(g, im->diag)) != RLT_STATUS_OK) goto fail;
    if ((st = rlt_graph_infer(g, im->diag)) != RLT_STATUS_OK) goto fail;
    if (rlt_graph_dce(g) < 0) {
        st = rlt_fail(im->diag, RLT_STATUS_OUT_OF_MEMORY, "%s: out of memory", im->source);
        goto fail;
    }
    *out = g;
    im->g = NULL;
    return RLT_STATUS_OK;
fail:
    if (st != RLT_STATUS_OK && im->diag && strncmp(im->diag->message, im->source, strlen(im->source)) != 0)
        rlt_diag_prefix(im->diag, "%s", im->source);
    rlt_graph_destroy(im->g);
    im->g = NULL;
    return st;
}

rlt_status rlt_graph_load_onnx_bytes(const void *data, size_t len, const char *source, rlt_graph **out,
                                     rlt_diag *diag)
{
    importer im = {.source = source ? source : "ONNX model", .diag = diag};
    if (!out) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "rlt_graph_load_onnx_bytes: no place for the result");
    if (!data && len) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "rlt_graph_load_onnx_bytes: no data");
    if (len == 0) return rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s: empty file: not an ONNX model", im.source);
    ProtobufCAllocator alloc = {.alloc = pb_alloc, .free = pb_free, .allocator_data = NULL};
    Onnx__ModelProto *m = onnx__model_proto__unpack(&alloc, len, data);
    if (!m)
        return rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                        "%s: not an ONNX model: the protobuf data is malformed or truncated (%zu bytes)", im.source,
                        len);
    rlt_status st = import_model(&im, m, out);
    onnx__model_proto__free_unpacked(m, &alloc);
    return st;
}

rlt_status rlt_graph_load_onnx(const char *path, rlt_graph **out, rlt_diag *diag)
{
    rlt_status st = RLT_STATUS_OK;
    unsigned char *data = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return rlt_fail(diag, RLT_STATUS_IO_ERROR, "cannot open '%s': %s", path, strerror(errno));
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0) {
        st = rlt_fail(diag, RLT_STATUS_IO_ERROR, "cannot read '%s': not a regular file", path);
        goto cleanup;
    }
    if (size >= ONNX_FILE_MAX_BYTES) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "'%s' is 2 GiB or larger: not a single protobuf message",
                      path);
        goto cleanup;
    }
    data = rlt_malloc((size_t)size + 1);
    if (!data) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading '%s'", path);
        goto cleanup;
    }
    if (fread(data, 1, (size_t)size, f) != (size_t)size) {
        st = rlt_fail(diag, RLT_STATUS_IO_ERROR, "cannot read '%s': %s", path, strerror(errno));
        goto cleanup;
    }
    st = rlt_graph_load_onnx_bytes(data, (size_t)size, path, out, diag);
cleanup:
    rlt_free(data);
    fclose(f);
    return st;
}

rlt_status rlt_graph_tensor_decode_onnx(const void *data, size_t len, const char *source, rlt_graph_tensor *out,
                                        rlt_diag *diag)
{
    importer im = {.source = source ? source : "ONNX tensor", .diag = diag};
    if (!out)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "rlt_graph_tensor_decode_onnx: no place for the result");
    if (!data && len) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "rlt_graph_tensor_decode_onnx: no data");
    ProtobufCAllocator alloc = {.alloc = pb_alloc, .free = pb_free, .allocator_data = NULL};
    rlt_status st = RLT_STATUS_OK;
    void *copy = NULL;
    /* An empty message is a valid TensorProto (no type: refused below). */
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(&alloc, len, len ? data : (const void *)"");
    im.arena = rlt_arena_create();
    if (!tp) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                      "%s: not an ONNX TensorProto: the protobuf data is malformed or truncated (%zu bytes)", im.source,
                      len);
        goto cleanup;
    }
    if (!im.arena) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "%s: out of memory", im.source);
        goto cleanup;
    }
    char what[300];
    snprintf(what, sizeof what, "tensor '%.200s'", str_or_empty(tp->name));
    rlt_graph_tensor t = {.producer = -1};
    if ((st = tensor_decode(&im, tp, what, &t)) != RLT_STATUS_OK) goto cleanup;
    size_t bytes = (size_t)rlt_graph_tensor_n_elems(&t) * rlt_dtype_size(t.dtype);
    copy = rlt_malloc(bytes + 1);
    if (!copy) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "%s: out of memory for %zu bytes", im.source, bytes);
        goto cleanup;
    }
    if (bytes) memcpy(copy, t.data, bytes);
    *out = t;
    out->name = NULL;
    out->data = copy;
cleanup:
    rlt_arena_destroy(im.arena);
    if (tp) onnx__tensor_proto__free_unpacked(tp, &alloc);
    return st;
}
