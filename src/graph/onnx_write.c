/*
 * onnx_write.c - the ONNX exporter: a sorted, inferred graph back into a
 * model file (protobuf ModelProto, encoded by the code protoc-c generates
 * from Debian's onnx.proto, cmake/onnx.cmake). Entry points:
 * rlt_graph_to_onnx_bytes (a buffer) and rlt_graph_write_onnx (a file,
 * written to a temporary one beside it and renamed).
 *
 * What is written: the graph inputs, every constant that a written node
 * reads or that is a graph output as an initializer (raw_data), the nodes
 * not marked removed in graph order, value_info for their outputs, and the
 * graph outputs, all with types and shapes. The IR lets passes put some
 * operands in the attribute form at any opset; the writer puts them in the
 * form g->opset wants (the `moved` table: Split's split and Squeeze /
 * Unsqueeze's axes became inputs at opset 13, Slice's starts / ends / axes
 * at 10, Clip's min / max at 11, Dropout's ratio at 12), making new
 * initializers for attributes and attributes from constant inputs. Gelu,
 * which the default domain has only from opset 20, goes to com.microsoft.
 *
 * Every protobuf struct lives in one scratch arena released before
 * return; names and constant data are borrowed from the graph for the
 * encoding, never copied.
 */
#include "graph/graph.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "onnx.pb-c.h"

#define ONNX_WRITE_OPSET_MIN 9
#define ONNX_WRITE_OPSET_MAX 17
#define ONNX_WRITE_MAX_BYTES ((size_t)2 << 30) /* protobuf's own limit on one message */
#define ONNX_MS_DOMAIN "com.microsoft"

/* An operand that ONNX moved from an attribute to an input at opset
 * `since`: before, the attribute form; from then on, the input form. */
typedef struct moved_operand {
    const char *op_type;
    const char *attr;       /* the attribute's name, and the operand's in messages */
    int input;              /* the input's index */
    int since;              /* first opset of the input form */
    rlt_graph_attr_kind kind; /* INTS (a 1-D int64 input) or FLOAT (a scalar of input 0's type, f32) */
} moved_operand;

static const moved_operand moved[] = {
    {"Split", "split", 1, 13, RLT_GRAPH_ATTR_INTS},
    {"Squeeze", "axes", 1, 13, RLT_GRAPH_ATTR_INTS},
    {"Unsqueeze", "axes", 1, 13, RLT_GRAPH_ATTR_INTS},
    {"Slice", "starts", 1, 10, RLT_GRAPH_ATTR_INTS},
    {"Slice", "ends", 2, 10, RLT_GRAPH_ATTR_INTS},
    {"Slice", "axes", 3, 10, RLT_GRAPH_ATTR_INTS},
    {"Clip", "min", 1, 11, RLT_GRAPH_ATTR_FLOAT},
    {"Clip", "max", 2, 11, RLT_GRAPH_ATTR_FLOAT},
    {"Dropout", "ratio", 1, 12, RLT_GRAPH_ATTR_FLOAT},
};

typedef struct writer {
    const rlt_graph *g;
    rlt_arena *arena;   /* every protobuf struct and converted operand */
    rlt_diag *diag;
    int *live_producer; /* heap, per tensor: the written node writing it, or -1 */
    bool *is_defined;   /* heap, per tensor: an input, a constant or an earlier node's output */
    bool *is_read;      /* heap, per tensor: read by a written node or a graph output */
    int n_new;          /* constants made from attributes */
    rlt_graph_tensor *new_tensors; /* arena, room for one per moved operand of every node */
    bool has_ms_domain; /* a node of com.microsoft was written */
} writer;

static rlt_status oom(const writer *w)
{
    return rlt_fail(w->diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory writing the ONNX model");
}

static int64_t ir_version_of(int opset)
{
    if (opset <= 9) return 4;
    if (opset == 10) return 5;
    if (opset == 11) return 6;
    if (opset <= 14) return 7;
    return 8;
}

static int64_t onnx_dtype(rlt_dtype d)
{
    switch (d) {
    case RLT_DTYPE_FLOAT32: return ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    case RLT_DTYPE_INT64: return ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    case RLT_DTYPE_INT32: return ONNX__TENSOR_PROTO__DATA_TYPE__INT32;
    case RLT_DTYPE_BOOL: return ONNX__TENSOR_PROTO__DATA_TYPE__BOOL;
    default: return 0;
    }
}

static void *zalloc(const writer *w, size_t n) { return rlt_arena_alloc(w->arena, n ? n : 1); }

/* ---- tensors and value infos ------------------------------------------------ */

/* A TensorProto of t's type, shape and data (raw_data borrowed); `name`
 * may be NULL. */
static Onnx__TensorProto *tensor_proto(const writer *w, const rlt_graph_tensor *t, const char *name)
{
    Onnx__TensorProto *tp = zalloc(w, sizeof *tp);
    int64_t *dims = zalloc(w, (size_t)t->rank * sizeof *dims);
    if (!tp || !dims) return NULL;
    onnx__tensor_proto__init(tp);
    tp->name = name && name[0] ? (char *)name : NULL;
    tp->has_data_type = 1;
    tp->data_type = (int32_t)onnx_dtype(t->dtype);
    if (t->rank) memcpy(dims, t->dims, (size_t)t->rank * sizeof *dims);
    tp->n_dims = (size_t)t->rank;
    tp->dims = dims;
    tp->has_raw_data = 1;
    tp->raw_data.len = (size_t)rlt_graph_tensor_n_elems(t) * rlt_dtype_size(t->dtype);
    tp->raw_data.data = (uint8_t *)t->data;
    return tp;
}

/* A ValueInfoProto: t's name, element type and (when it has one) shape. */
static Onnx__ValueInfoProto *value_info(const writer *w, const rlt_graph_tensor *t)
{
    Onnx__ValueInfoProto *vi = zalloc(w, sizeof *vi);
    Onnx__TypeProto *tp = zalloc(w, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = zalloc(w, sizeof *tt);
    if (!vi || !tp || !tt) return NULL;
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    vi->name = (char *)t->name;
    tt->has_elem_type = 1;
    tt->elem_type = (int32_t)onnx_dtype(t->dtype);
    if (t->has_shape) {
        Onnx__TensorShapeProto *sh = zalloc(w, sizeof *sh);
        Onnx__TensorShapeProto__Dimension **dims = zalloc(w, (size_t)t->rank * sizeof *dims);
        if (!sh || !dims) return NULL;
        onnx__tensor_shape_proto__init(sh);
        for (int i = 0; i < t->rank; i++) {
            Onnx__TensorShapeProto__Dimension *d = zalloc(w, sizeof *d);
            if (!d) return NULL;
            onnx__tensor_shape_proto__dimension__init(d);
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = t->dims[i];
            dims[i] = d;
        }
        sh->n_dim = (size_t)t->rank;
        sh->dim = dims;
        tt->shape = sh;
    }
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    vi->type = tp;
    return vi;
}

/* ---- checks ---------------------------------------------------------------------- */

/* A tensor the writer can encode: a known type, and a shape when constant. */
static rlt_status check_tensor(const writer *w, int t)
{
    const rlt_graph_tensor *x = &w->g->tensors[t];
    if (onnx_dtype(x->dtype) == 0)
        return rlt_fail(w->diag, RLT_STATUS_INVALID_ARGUMENT,
                        "tensor '%s' has data type %d, which ONNX export does not know", x->name, (int)x->dtype);
    if (x->data && !x->has_shape)
        return rlt_fail(w->diag, RLT_STATUS_INVALID_ARGUMENT, "tensor '%s' holds constant data but has no shape",
                        x->name);
    return RLT_STATUS_OK;
}

/* Which tensors the written nodes write, each by one of them; the nodes'
 * tensor indices in range; the graph inputs fed, with shapes. */
static rlt_status find_producers(writer *w)
{
    const rlt_graph *g = w->g;
    for (int t = 0; t < g->n_tensors; t++) w->live_producer[t] = -1;
    for (int n = 0; n < g->n_nodes; n++) {
        const rlt_graph_node *node = &g->nodes[n];
        if (node->is_removed) continue;
        if (node->n_outputs == 0 || node->outputs[0] < 0)
            return rlt_graph_node_fail(g, node, w->diag, RLT_STATUS_INVALID_ARGUMENT,
                                       "has no first output, which ONNX needs");
        for (int i = 0; i < node->n_inputs; i++)
            if (node->inputs[i] >= g->n_tensors)
                return rlt_graph_node_fail(g, node, w->diag, RLT_STATUS_INVALID_ARGUMENT,
                                           "input %d refers to tensor %d; the graph has %d", i, node->inputs[i],
                                           g->n_tensors);
        for (int o = 0; o < node->n_outputs; o++) {
            int t = node->outputs[o];
            if (t < 0) continue;
            if (t >= g->n_tensors)
                return rlt_graph_node_fail(g, node, w->diag, RLT_STATUS_INVALID_ARGUMENT,
                                           "output %d refers to tensor %d; the graph has %d", o, t, g->n_tensors);
            if (w->live_producer[t] >= 0)
                return rlt_graph_node_fail(g, node, w->diag, RLT_STATUS_INVALID_ARGUMENT,
                                           "output '%s' is also written by node '%s'", g->tensors[t].name,
                                           rlt_graph_node_label(g, w->live_producer[t]));
            w->live_producer[t] = n;
        }
    }
    for (int i = 0; i < g->n_inputs; i++) {
        int t = g->inputs[i];
        if (w->live_producer[t] >= 0)
            return rlt_fail(w->diag, RLT_STATUS_INVALID_ARGUMENT, "graph input '%s' is also written by node '%s'",
                            g->tensors[t].name, rlt_graph_node_label(g, w->live_producer[t]));
        if (g->tensors[t].data || !g->tensors[t].has_shape)
            return rlt_fail(w->diag, RLT_STATUS_INVALID_ARGUMENT,
                            "graph input '%s' %s; an input is fed, with a static shape", g->tensors[t].name,
                            g->tensors[t].data ? "holds constant data" : "has no shape");
        w->is_defined[t] = true;
    }
    for (int t = 0; t < g->n_tensors; t++) {
        rlt_status st = check_tensor(w, t);
        if (st != RLT_STATUS_OK) return st;
        if (g->tensors[t].data && w->live_producer[t] < 0) w->is_defined[t] = true;
    }
    return RLT_STATUS_OK;
}

/* ---- nodes ------------------------------------------------------------------------ */

/* A name for a converted operand that no tensor of the graph and no other
 * converted operand has: "LABEL_OPERAND", then "LABEL_OPERAND_1", ... */
static const char *new_name(const writer *w, int node, const char *operand)
{
    const char *label = rlt_graph_node_label(w->g, node);
    char buf[256];
    for (int k = 0;; k++) {
        if (k == 0) snprintf(buf, sizeof buf, "%.200s_%s", label, operand);
        else snprintf(buf, sizeof buf, "%.200s_%s_%d", label, operand, k);
        bool taken = rlt_graph_tensor_find(w->g, buf) >= 0;
        for (int i = 0; i < w->n_new && !taken; i++) taken = strcmp(w->new_tensors[i].name, buf) == 0;
        if (!taken) return rlt_arena_strdup(w->arena, buf);
    }
}

/* An attribute, rltune's form to ONNX's. */
static Onnx__AttributeProto *attr_proto(const writer *w, const rlt_graph_attr *a)
{
    Onnx__AttributeProto *ap = zalloc(w, sizeof *ap);
    if (!ap) return NULL;
    onnx__attribute_proto__init(ap);
    ap->name = (char *)a->name;
    ap->has_type = 1;
    switch (a->kind) {
    case RLT_GRAPH_ATTR_INT:
        ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        ap->has_i = 1;
        ap->i = a->i;
        break;
    case RLT_GRAPH_ATTR_FLOAT:
        ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
        ap->has_f = 1;
        ap->f = a->f;
        break;
    case RLT_GRAPH_ATTR_STRING:
        ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
        ap->has_s = 1;
        ap->s.len = strlen(a->s);
        ap->s.data = (uint8_t *)a->s;
        break;
    case RLT_GRAPH_ATTR_INTS:
        ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        ap->n_ints = (size_t)a->n_values;
        ap->ints = (int64_t *)a->ints;
        break;
    case RLT_GRAPH_ATTR_FLOATS:
        ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
        ap->n_floats = (size_t)a->n_values;
        ap->floats = (float *)a->floats;
        break;
    default:
        ap->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
        ap->t = tensor_proto(w, a->tensor, NULL);
        if (!ap->t) return NULL;
        break;
    }
    return ap;
}

/* One node being converted: its inputs (tensor indices, or -1; new_input[i]
 * >= 0 for an operand made from an attribute: an index into w->new_tensors)
 * and attributes, in ONNX's form for the opset. */
typedef struct node_form {
    int n_inputs;
    int *inputs;    /* arena, room for the node's inputs and the moved operands */
    int *new_input; /* arena, as many */
    int n_attrs;
    rlt_graph_attr *attrs; /* arena */
} node_form;

/* Attribute `m->attr` of the node to input m->input (opset >= m->since). */
static rlt_status operand_to_input(writer *w, int node, const moved_operand *m, const rlt_graph_attr *a,
                                   node_form *f)
{
    const rlt_graph *g = w->g;
    const rlt_graph_node *n = &g->nodes[node];
    if (m->input < f->n_inputs && f->inputs[m->input] >= 0)
        return rlt_graph_node_fail(g, n, w->diag, RLT_STATUS_INVALID_ARGUMENT,
                                   "%s is given both as an attribute and as input %d ('%s')", m->attr, m->input,
                                   g->tensors[f->inputs[m->input]].name);
    if (a->kind != m->kind)
        return rlt_graph_node_fail(g, n, w->diag, RLT_STATUS_INVALID_ARGUMENT,
                                   "attribute '%s' is a %s; expected a %s", m->attr, rlt_graph_attr_kind_str(a->kind),
                                   rlt_graph_attr_kind_str(m->kind));
    rlt_graph_tensor *t = &w->new_tensors[w->n_new];
    memset(t, 0, sizeof *t);
    t->name = new_name(w, node, m->attr);
    if (!t->name) return oom(w);
    t->has_shape = true;
    t->producer = -1;
    t->is_initializer = true;
    if (m->kind == RLT_GRAPH_ATTR_INTS) {
        t->dtype = RLT_DTYPE_INT64;
        t->rank = 1;
        t->dims[0] = a->n_values;
        t->data = (void *)a->ints;
    } else {
        const rlt_graph_tensor *x = f->n_inputs > 0 && f->inputs[0] >= 0 ? &g->tensors[f->inputs[0]] : NULL;
        if (!x || x->dtype != RLT_DTYPE_FLOAT32)
            return rlt_graph_node_fail(g, n, w->diag, RLT_STATUS_INVALID_ARGUMENT,
                                       "attribute '%s' is a float, but input 0 is %s; from opset %d it is an input of "
                                       "input 0's type", m->attr, x ? rlt_dtype_str(x->dtype) : "left out", m->since);
        t->dtype = RLT_DTYPE_FLOAT32;
        t->rank = 0;
        t->data = (void *)&a->f;
    }
    while (f->n_inputs <= m->input) {
        f->inputs[f->n_inputs] = -1;
        f->new_input[f->n_inputs++] = -1;
    }
    f->new_input[m->input] = w->n_new++;
    return RLT_STATUS_OK;
}

/* Constant input m->input of the node to attribute m->attr (opset <
 * m->since). */
static rlt_status operand_to_attr(writer *w, int node, const moved_operand *m, node_form *f)
{
    const rlt_graph *g = w->g;
    const rlt_graph_node *n = &g->nodes[node];
    const rlt_graph_tensor *t = &g->tensors[f->inputs[m->input]];
    if (rlt_graph_node_attr(n, m->attr))
        return rlt_graph_node_fail(g, n, w->diag, RLT_STATUS_INVALID_ARGUMENT,
                                   "%s is given both as an attribute and as input %d ('%s')", m->attr, m->input,
                                   t->name);
    bool is_ints = m->kind == RLT_GRAPH_ATTR_INTS;
    int64_t count = t->has_shape ? rlt_graph_tensor_n_elems(t) : -1;
    bool fits = t->data && (is_ints ? (t->dtype == RLT_DTYPE_INT64 || t->dtype == RLT_DTYPE_INT32) && t->rank <= 1
                                    : t->dtype == RLT_DTYPE_FLOAT32 && count == 1);
    if (!fits || count > (1 << 20))
        return rlt_graph_node_fail(g, n, w->diag, RLT_STATUS_INVALID_ARGUMENT,
                                   "input %d ('%s', the %s) must be a constant %s to be written as an attribute "
                                   "before opset %d", m->input, t->name, m->attr,
                                   is_ints ? "1-D integer tensor" : "f32 scalar", m->since);
    rlt_graph_attr a = {.name = m->attr, .kind = m->kind};
    if (is_ints) {
        int64_t *v = zalloc(w, (size_t)count * sizeof *v);
        if (!v) return oom(w);
        for (int64_t i = 0; i < count; i++)
            v[i] = t->dtype == RLT_DTYPE_INT64 ? ((const int64_t *)t->data)[i] : ((const int32_t *)t->data)[i];
        a.ints = v;
        a.n_values = (int)count;
    } else {
        a.f = ((const float *)t->data)[0];
    }
    f->attrs[f->n_attrs++] = a;
    f->inputs[m->input] = -1;
    return RLT_STATUS_OK;
}

/* The node's inputs and attributes in the opset's form. */
static rlt_status node_form_make(writer *w, int node, node_form *f)
{
    const rlt_graph *g = w->g;
    const rlt_graph_node *n = &g->nodes[node];
    size_t room = (size_t)RLT_MAX(n->n_inputs, 0) + 8; /* moved operands are inputs 1 to 3 */
    f->inputs = zalloc(w, room * sizeof *f->inputs);
    f->new_input = zalloc(w, room * sizeof *f->new_input);
    if (!f->inputs || !f->new_input) return oom(w);
    f->n_inputs = n->n_inputs;
    for (int i = 0; i < n->n_inputs; i++) {
        f->inputs[i] = n->inputs[i];
        f->new_input[i] = -1;
    }
    f->attrs = zalloc(w, ((size_t)n->n_attrs + RLT_ARRAY_LEN(moved)) * sizeof *f->attrs);
    if (!f->attrs) return oom(w);
    f->n_attrs = 0;
    for (int a = 0; a < n->n_attrs; a++) {
        const rlt_graph_attr *attr = &n->attrs[a];
        const moved_operand *m = NULL;
        for (size_t k = 0; k < RLT_ARRAY_LEN(moved); k++)
            if (strcmp(moved[k].op_type, n->op_type) == 0 && strcmp(moved[k].attr, attr->name) == 0) m = &moved[k];
        if (m && g->opset >= m->since) {
            rlt_status st = operand_to_input(w, node, m, attr, f);
            if (st != RLT_STATUS_OK) return st;
            continue;
        }
        /* Gelu of com.microsoft has no attributes: approximate="none" is its
         * only form. */
        if (strcmp(n->op_type, "Gelu") == 0 && strcmp(attr->name, "approximate") == 0) {
            if (attr->kind == RLT_GRAPH_ATTR_STRING && strcmp(attr->s, "none") == 0) continue;
            return rlt_graph_node_fail(g, n, w->diag, RLT_STATUS_INVALID_ARGUMENT,
                                       "Gelu with approximate='%s' cannot be written: the default domain has Gelu from "
                                       "opset 20 only, and com.microsoft's Gelu is the exact form",
                                       attr->kind == RLT_GRAPH_ATTR_STRING ? attr->s : "?");
        }
        f->attrs[f->n_attrs++] = *attr;
    }
    for (size_t k = 0; k < RLT_ARRAY_LEN(moved); k++) {
        const moved_operand *m = &moved[k];
        if (strcmp(m->op_type, n->op_type) != 0 || g->opset >= m->since) continue;
        if (m->input < f->n_inputs && f->inputs[m->input] >= 0) {
            rlt_status st = operand_to_attr(w, node, m, f);
            if (st != RLT_STATUS_OK) return st;
        }
    }
    /* Slice before opset 10 has no steps: only all ones can be dropped. */
    if (strcmp(n->op_type, "Slice") == 0 && g->opset < 10 && f->n_inputs > 4 && f->inputs[4] >= 0) {
        const rlt_graph_tensor *t = &g->tensors[f->inputs[4]];
        bool ones = t->data && t->dtype == RLT_DTYPE_INT64 && t->rank <= 1;
        for (int64_t i = 0; ones && i < rlt_graph_tensor_n_elems(t); i++) ones = ((const int64_t *)t->data)[i] == 1;
        if (!ones)
            return rlt_graph_node_fail(g, n, w->diag, RLT_STATUS_INVALID_ARGUMENT,
                                       "input 4 ('%s', the steps) cannot be written before opset 10, which has no "
                                       "steps; only steps of 1 can be left out", t->name);
        f->inputs[4] = -1;
    }
    /* Trailing operands left out are dropped; others become "". */
    while (f->n_inputs > 0 && f->inputs[f->n_inputs - 1] < 0 && f->new_input[f->n_inputs - 1] < 0) f->n_inputs--;
    return RLT_STATUS_OK;
}

static rlt_status node_proto(writer *w, int node, Onnx__NodeProto **out)
{
    const rlt_graph *g = w->g;
    const rlt_graph_node *n = &g->nodes[node];
    node_form f = {0};
    rlt_status st = node_form_make(w, node, &f);
    if (st != RLT_STATUS_OK) return st;
    Onnx__NodeProto *np = zalloc(w, sizeof *np);
    char **ins = zalloc(w, (size_t)f.n_inputs * sizeof *ins);
    int n_out = n->n_outputs;
    while (n_out > 0 && n->outputs[n_out - 1] < 0) n_out--;
    char **outs = zalloc(w, (size_t)n_out * sizeof *outs);
    Onnx__AttributeProto **attrs = zalloc(w, (size_t)f.n_attrs * sizeof *attrs);
    if (!np || !ins || !outs || !attrs) return oom(w);
    onnx__node_proto__init(np);
    for (int i = 0; i < f.n_inputs; i++) {
        int t = f.inputs[i];
        if (f.new_input[i] >= 0) {
            ins[i] = (char *)w->new_tensors[f.new_input[i]].name;
            continue;
        }
        if (t < 0) {
            ins[i] = "";
            continue;
        }
        if (!w->is_defined[t]) {
            if (w->live_producer[t] >= 0)
                return rlt_graph_node_fail(g, n, w->diag, RLT_STATUS_INVALID_ARGUMENT,
                                           "reads '%s' before node '%s' writes it: the graph is not sorted "
                                           "(rlt_graph_sort)", g->tensors[t].name,
                                           rlt_graph_node_label(g, w->live_producer[t]));
            return rlt_graph_node_fail(g, n, w->diag, RLT_STATUS_INVALID_ARGUMENT,
                                       "reads '%s', which no written node produces and which is neither a graph "
                                       "input nor a constant", g->tensors[t].name);
        }
        w->is_read[t] = true;
        ins[i] = (char *)g->tensors[t].name;
    }
    for (int o = 0; o < n_out; o++) {
        int t = n->outputs[o];
        outs[o] = t >= 0 ? (char *)g->tensors[t].name : "";
        if (t >= 0) w->is_defined[t] = true;
    }
    for (int a = 0; a < f.n_attrs; a++)
        if (!(attrs[a] = attr_proto(w, &f.attrs[a]))) return oom(w);
    np->name = n->name && n->name[0] ? (char *)n->name : NULL;
    np->op_type = (char *)n->op_type;
    if (strcmp(n->op_type, "Gelu") == 0) {
        np->domain = ONNX_MS_DOMAIN;
        w->has_ms_domain = true;
    }
    np->n_input = (size_t)f.n_inputs;
    np->input = ins;
    np->n_output = (size_t)n_out;
    np->output = outs;
    np->n_attribute = (size_t)f.n_attrs;
    np->attribute = attrs;
    *out = np;
    return RLT_STATUS_OK;
}

/* ---- the model ------------------------------------------------------------------- */

static rlt_status graph_proto(writer *w, Onnx__GraphProto *gp)
{
    const rlt_graph *g = w->g;
    int n_live = 0;
    for (int n = 0; n < g->n_nodes; n++)
        if (!g->nodes[n].is_removed) n_live++;
    w->new_tensors = zalloc(w, ((size_t)n_live * RLT_ARRAY_LEN(moved)) * sizeof *w->new_tensors);
    gp->node = zalloc(w, (size_t)n_live * sizeof *gp->node);
    gp->input = zalloc(w, (size_t)g->n_inputs * sizeof *gp->input);
    gp->output = zalloc(w, (size_t)g->n_outputs * sizeof *gp->output);
    if (!w->new_tensors || !gp->node || !gp->input || !gp->output) return oom(w);
    gp->name = "rltune";

    for (int i = 0; i < g->n_inputs; i++)
        if (!(gp->input[gp->n_input++] = value_info(w, &g->tensors[g->inputs[i]]))) return oom(w);
    for (int n = 0; n < g->n_nodes; n++) {
        if (g->nodes[n].is_removed) continue;
        rlt_status st = node_proto(w, n, &gp->node[gp->n_node]);
        if (st != RLT_STATUS_OK) return st;
        gp->n_node++;
    }
    for (int i = 0; i < g->n_outputs; i++) {
        int t = g->outputs[i];
        if (!w->is_defined[t])
            return rlt_fail(w->diag, RLT_STATUS_INVALID_ARGUMENT,
                            "graph output '%s' is not written by any node that is not removed, and is neither a graph "
                            "input nor a constant", g->tensors[t].name);
        w->is_read[t] = true;
        if (!(gp->output[gp->n_output++] = value_info(w, &g->tensors[t]))) return oom(w);
    }

    /* Initializers: the constants read, in tensor order, then the operands
     * made from attributes. */
    size_t n_init = (size_t)w->n_new, n_vi = 0;
    for (int t = 0; t < g->n_tensors; t++) {
        if (w->is_read[t] && g->tensors[t].data && w->live_producer[t] < 0) n_init++;
        if (w->live_producer[t] >= 0) n_vi++;
    }
    gp->initializer = zalloc(w, n_init * sizeof *gp->initializer);
    gp->value_info = zalloc(w, n_vi * sizeof *gp->value_info);
    if (!gp->initializer || !gp->value_info) return oom(w);
    for (int t = 0; t < g->n_tensors; t++) {
        const rlt_graph_tensor *x = &g->tensors[t];
        if (!w->is_read[t] || !x->data || w->live_producer[t] >= 0) continue;
        if (!(gp->initializer[gp->n_initializer++] = tensor_proto(w, x, x->name))) return oom(w);
    }
    for (int i = 0; i < w->n_new; i++)
        if (!(gp->initializer[gp->n_initializer++] = tensor_proto(w, &w->new_tensors[i], w->new_tensors[i].name)))
            return oom(w);

    /* value_info: the nodes' outputs other than graph outputs, in node
     * order. */
    bool *is_output = w->is_read; /* reused: only the graph outputs' flags matter below */
    for (int t = 0; t < g->n_tensors; t++) is_output[t] = false;
    for (int i = 0; i < g->n_outputs; i++) is_output[g->outputs[i]] = true;
    for (int n = 0; n < g->n_nodes; n++) {
        const rlt_graph_node *node = &g->nodes[n];
        if (node->is_removed) continue;
        for (int o = 0; o < node->n_outputs; o++) {
            int t = node->outputs[o];
            if (t < 0 || is_output[t] || !g->tensors[t].has_shape) continue;
            if (!(gp->value_info[gp->n_value_info++] = value_info(w, &g->tensors[t]))) return oom(w);
        }
    }
    return RLT_STATUS_OK;
}

rlt_status rlt_graph_to_onnx_bytes(const rlt_graph *g, void **out, size_t *out_len, rlt_diag *diag)
{
    if (!g || !out || !out_len)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "rlt_graph_to_onnx_bytes: %s is NULL",
                        !g ? "the graph" : !out ? "out" : "out_len");
    if (g->opset < ONNX_WRITE_OPSET_MIN || g->opset > ONNX_WRITE_OPSET_MAX)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "cannot write opset %d as ONNX; rltune writes opsets %d to %d (those it reads)", g->opset,
                        ONNX_WRITE_OPSET_MIN, ONNX_WRITE_OPSET_MAX);
    rlt_status st = RLT_STATUS_OK;
    writer w = {.g = g, .diag = diag};
    Onnx__GraphProto gp;
    Onnx__OperatorSetIdProto opsets[2];
    Onnx__OperatorSetIdProto *opset_list[2] = {&opsets[0], &opsets[1]};
    Onnx__ModelProto m;
    uint8_t *buf = NULL;
    w.arena = rlt_arena_create();
    w.live_producer = rlt_malloc(((size_t)g->n_tensors + 1) * sizeof *w.live_producer);
    w.is_defined = rlt_calloc((size_t)g->n_tensors + 1, sizeof *w.is_defined);
    w.is_read = rlt_calloc((size_t)g->n_tensors + 1, sizeof *w.is_read);
    if (!w.arena || !w.live_producer || !w.is_defined || !w.is_read) {
        st = oom(&w);
        goto cleanup;
    }
    if ((st = find_producers(&w)) != RLT_STATUS_OK) goto cleanup;
    onnx__graph_proto__init(&gp);
    if ((st = graph_proto(&w, &gp)) != RLT_STATUS_OK) goto cleanup;

    for (int i = 0; i < 2; i++) {
        onnx__operator_set_id_proto__init(&opsets[i]);
        opsets[i].has_version = 1;
    }
    opsets[0].domain = "";
    opsets[0].version = g->opset;
    opsets[1].domain = ONNX_MS_DOMAIN;
    opsets[1].version = 1;
    onnx__model_proto__init(&m);
    m.has_ir_version = 1;
    m.ir_version = ir_version_of(g->opset);
    m.producer_name = "rltune";
    m.producer_version = RLTUNE_VERSION;
    m.n_opset_import = w.has_ms_domain ? 2 : 1;
    m.opset_import = opset_list;
    m.graph = &gp;

    size_t len = onnx__model_proto__get_packed_size(&m);
    if (len >= ONNX_WRITE_MAX_BYTES) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "the model would take %zu bytes; an ONNX file holds less than 2 GiB (rltune writes no "
                      "external data)", len);
        goto cleanup;
    }
    buf = rlt_malloc(len + 1);
    if (!buf) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory for the %zu bytes of the ONNX model", len);
        goto cleanup;
    }
    size_t packed = onnx__model_proto__pack(&m, buf);
    RLT_ASSERT(packed == len);
    *out = buf;
    *out_len = len;
cleanup:
    rlt_free(w.is_read);
    rlt_free(w.is_defined);
    rlt_free(w.live_producer);
    rlt_arena_destroy(w.arena);
    return st;
}

rlt_status rlt_graph_write_onnx(const rlt_graph *g, const char *path, rlt_diag *diag)
{
    if (!path) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "rlt_graph_write_onnx: the path is NULL");
    void *data = NULL;
    size_t len = 0;
    rlt_status st = rlt_graph_to_onnx_bytes(g, &data, &len, diag);
    if (st == RLT_STATUS_OK) st = rlt_file_write(path, data, len, diag);
    rlt_free(data);
    return st;
}
