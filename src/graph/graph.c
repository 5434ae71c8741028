/*
 * graph.c - the graph IR's containers and whole-graph passes: creating a
 * graph, adding tensors and nodes, the name table, topological sorting
 * (rlt_graph_sort), dead-code elimination (rlt_graph_dce) and the text form
 * (rlt_graph_print). Shape inference and folding are in infer.c, the ONNX
 * importer in onnx.c.
 */
#include "graph/graph.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

const char *rlt_dtype_str(rlt_dtype dtype)
{
    switch (dtype) {
    case RLT_DTYPE_FLOAT32: return "f32";
    case RLT_DTYPE_INT64: return "i64";
    case RLT_DTYPE_INT32: return "i32";
    case RLT_DTYPE_BOOL: return "bool";
    default: return "?";
    }
}

size_t rlt_dtype_size(rlt_dtype dtype)
{
    switch (dtype) {
    case RLT_DTYPE_FLOAT32: return 4;
    case RLT_DTYPE_INT64: return 8;
    case RLT_DTYPE_INT32: return 4;
    case RLT_DTYPE_BOOL: return 1;
    default: return 0;
    }
}

const char *rlt_graph_attr_kind_str(rlt_graph_attr_kind kind)
{
    static const char *const names[RLT_GRAPH_ATTR_COUNT] = {"int", "float", "string", "ints", "floats",
                                                             "tensor"};
    return (unsigned)kind < RLT_GRAPH_ATTR_COUNT ? names[kind] : "?";
}

/* ---- creating ------------------------------------------------------------ */

rlt_status rlt_graph_create(int opset, rlt_graph **out, rlt_diag *diag)
{
    rlt_graph *g = rlt_calloc(1, sizeof *g);
    if (!g) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a graph");
    g->arena = rlt_arena_create();
    if (!g->arena) {
        rlt_free(g);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a graph");
    }
    g->opset = opset;
    *out = g;
    return RLT_STATUS_OK;
}

void rlt_graph_destroy(rlt_graph *g)
{
    while (g) {
        g->is_destroyed = true;
        if (g->n_clones > 0) return; /* the last clone frees it */
        rlt_graph *base = g->base;
        rlt_free(g->slots);
        rlt_free(g->nodes);
        rlt_free(g->tensors);
        rlt_arena_destroy(g->arena);
        rlt_free(g);
        if (!base) return;
        base->n_clones--;
        g = base->is_destroyed ? base : NULL;
    }
}

/* A copy of n ints in g's arena (NULL only when out of memory). */
static int *ints_copy(rlt_graph *g, const int *v, int n)
{
    int *copy = rlt_arena_alloc(g->arena, (size_t)n * sizeof *copy + 1);
    if (copy && n) memcpy(copy, v, (size_t)n * sizeof *copy);
    return copy;
}

rlt_status rlt_graph_clone(const rlt_graph *g, rlt_graph **out, rlt_diag *diag)
{
    *out = NULL;
    rlt_graph *c = NULL;
    if (rlt_graph_create(g->opset, &c, diag) != RLT_STATUS_OK) return RLT_STATUS_OUT_OF_MEMORY;
    c->tensors = rlt_malloc(((size_t)g->n_tensors + 1) * sizeof *c->tensors);
    c->nodes = rlt_malloc(((size_t)g->n_nodes + 1) * sizeof *c->nodes);
    c->slots = g->n_slots ? rlt_malloc((size_t)g->n_slots * sizeof *c->slots) : NULL;
    c->inputs = ints_copy(c, g->inputs, g->n_inputs);
    c->outputs = ints_copy(c, g->outputs, g->n_outputs);
    bool is_ok = c->tensors && c->nodes && (c->slots || !g->n_slots) && c->inputs && c->outputs;
    if (is_ok) {
        if (g->n_tensors) memcpy(c->tensors, g->tensors, (size_t)g->n_tensors * sizeof *c->tensors);
        if (g->n_slots) memcpy(c->slots, g->slots, (size_t)g->n_slots * sizeof *c->slots);
        c->n_tensors = c->cap_tensors = g->n_tensors;
        c->n_slots = g->n_slots;
        c->n_inputs = g->n_inputs;
        c->n_outputs = g->n_outputs;
        c->cap_nodes = g->n_nodes;
        for (int i = 0; i < g->n_nodes && is_ok; i++) {
            rlt_graph_node node = g->nodes[i];
            node.inputs = ints_copy(c, node.inputs, node.n_inputs);
            node.outputs = ints_copy(c, node.outputs, node.n_outputs);
            rlt_graph_attr *attrs = rlt_arena_alloc(c->arena, (size_t)node.n_attrs * sizeof *attrs + 1);
            if (attrs && node.n_attrs) memcpy(attrs, node.attrs, (size_t)node.n_attrs * sizeof *attrs);
            node.attrs = attrs;
            is_ok = node.inputs && node.outputs && attrs;
            c->nodes[c->n_nodes++] = node;
        }
    }
    if (!is_ok) {
        rlt_graph_destroy(c);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory copying a graph");
    }
    rlt_graph *base = (rlt_graph *)g; /* only its clone count changes */
    base->n_clones++;
    c->base = base;
    *out = c;
    return RLT_STATUS_OK;
}

/* ---- the name table ------------------------------------------------------ */

static int slot_of(const rlt_graph *g, const char *name)
{
    int mask = g->n_slots - 1;
    int i = (int)(rlt_hash_str(RLT_HASH_SEED, name) & (uint64_t)mask);
    while (g->slots[i] != 0 && strcmp(g->tensors[g->slots[i] - 1].name, name) != 0) i = (i + 1) & mask;
    return i;
}

/* Rebuilds the table for the current tensors, at most half full. */
static bool slots_rebuild(rlt_graph *g, int n_wanted)
{
    int n = 64;
    while (n < 2 * n_wanted) n *= 2;
    int *slots = rlt_calloc((size_t)n, sizeof *slots);
    if (!slots) return false;
    rlt_free(g->slots);
    g->slots = slots;
    g->n_slots = n;
    for (int t = 0; t < g->n_tensors; t++) g->slots[slot_of(g, g->tensors[t].name)] = t + 1;
    return true;
}

int rlt_graph_tensor_find(const rlt_graph *g, const char *name)
{
    if (!g->slots || !name) return -1;
    int s = g->slots[slot_of(g, name)];
    return s - 1;
}

rlt_status rlt_graph_tensor_add(rlt_graph *g, const char *name, rlt_dtype dtype, int *out_index, rlt_diag *diag)
{
    if (rlt_graph_tensor_find(g, name) >= 0)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "tensor name '%s' is defined twice", name);
    if (g->n_tensors == g->cap_tensors) {
        int cap = g->cap_tensors ? 2 * g->cap_tensors : 16;
        rlt_graph_tensor *t = rlt_realloc(g->tensors, (size_t)cap * sizeof *t);
        if (!t) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory adding tensor '%s'", name);
        g->tensors = t;
        g->cap_tensors = cap;
    }
    if (2 * (g->n_tensors + 1) > g->n_slots && !slots_rebuild(g, g->n_tensors + 1))
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory adding tensor '%s'", name);
    char *copy = rlt_arena_strdup(g->arena, name);
    if (!copy) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory adding tensor '%s'", name);
    int idx = g->n_tensors++;
    g->tensors[idx] = (rlt_graph_tensor){.name = copy, .dtype = dtype, .producer = -1};
    g->slots[slot_of(g, copy)] = idx + 1;
    if (out_index) *out_index = idx;
    return RLT_STATUS_OK;
}

rlt_status rlt_graph_tensor_set_shape(rlt_graph *g, int t, int rank, const int64_t *dims, rlt_diag *diag)
{
    RLT_ASSERT(t >= 0 && t < g->n_tensors);
    rlt_graph_tensor *x = &g->tensors[t];
    if (rank < 0 || rank > RLT_GRAPH_MAX_RANK)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "tensor '%s' has rank %d; at most %d is supported",
                        x->name, rank, RLT_GRAPH_MAX_RANK);
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "tensor '%s': dimension %d is %" PRId64
                            "; dimensions must be >= 0", x->name, i, dims[i]);
        if (dims[i] > 0 && n > RLT_GRAPH_MAX_ELEMS / dims[i])
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "tensor '%s' has more than 2^40 elements; not supported", x->name);
        n *= dims[i];
    }
    x->rank = rank;
    for (int i = 0; i < rank; i++) x->dims[i] = dims[i];
    x->has_shape = true;
    return RLT_STATUS_OK;
}

int rlt_graph_n_live_nodes(const rlt_graph *g)
{
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++) n += !g->nodes[i].is_removed;
    return n;
}

int64_t rlt_graph_tensor_n_elems(const rlt_graph_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) n *= t->dims[i];
    return n;
}

rlt_status rlt_graph_node_add(rlt_graph *g, const char *op_type, const char *name, int n_inputs,
                              const int *inputs, int n_outputs, const int *outputs, int *out_index,
                              rlt_diag *diag)
{
    for (int i = 0; i < n_inputs; i++)
        if (inputs[i] < -1 || inputs[i] >= g->n_tensors)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "node '%s' (%s): input %d is not a tensor", name,
                            op_type, i);
    for (int i = 0; i < n_outputs; i++) {
        if (outputs[i] < -1 || outputs[i] >= g->n_tensors)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "node '%s' (%s): output %d is not a tensor",
                            name, op_type, i);
        if (outputs[i] >= 0 && (g->tensors[outputs[i]].producer >= 0 || g->tensors[outputs[i]].data))
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "node '%s' (%s): output '%s' is already written by another node or is a constant",
                            name, op_type, g->tensors[outputs[i]].name);
        for (int j = 0; j < i; j++)
            if (outputs[i] >= 0 && outputs[j] == outputs[i])
                return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "node '%s' (%s): output '%s' is listed twice",
                                name, op_type, g->tensors[outputs[i]].name);
    }
    if (g->n_nodes == g->cap_nodes) {
        int cap = g->cap_nodes ? 2 * g->cap_nodes : 16;
        rlt_graph_node *n = rlt_realloc(g->nodes, (size_t)cap * sizeof *n);
        if (!n) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory adding node '%s'", name);
        g->nodes = n;
        g->cap_nodes = cap;
    }
    rlt_graph_node node = {.file_index = g->n_nodes, .n_inputs = n_inputs, .n_outputs = n_outputs};
    node.name = rlt_arena_strdup(g->arena, name ? name : "");
    node.op_type = rlt_arena_strdup(g->arena, op_type);
    node.inputs = rlt_arena_alloc(g->arena, (size_t)n_inputs * sizeof(int) + 1);
    node.outputs = rlt_arena_alloc(g->arena, (size_t)n_outputs * sizeof(int) + 1);
    if (!node.name || !node.op_type || !node.inputs || !node.outputs)
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory adding node '%s'", name);
    if (n_inputs) memcpy(node.inputs, inputs, (size_t)n_inputs * sizeof(int));
    if (n_outputs) memcpy(node.outputs, outputs, (size_t)n_outputs * sizeof(int));
    int idx = g->n_nodes++;
    g->nodes[idx] = node;
    for (int i = 0; i < n_outputs; i++)
        if (outputs[i] >= 0) g->tensors[outputs[i]].producer = idx;
    if (out_index) *out_index = idx;
    return RLT_STATUS_OK;
}

const rlt_graph_attr *rlt_graph_node_attr(const rlt_graph_node *node, const char *name)
{
    for (int i = 0; i < node->n_attrs; i++)
        if (strcmp(node->attrs[i].name, name) == 0) return &node->attrs[i];
    return NULL;
}

int64_t rlt_graph_attr_int(const rlt_graph_node *node, const char *name, int64_t def)
{
    const rlt_graph_attr *a = rlt_graph_node_attr(node, name);
    return a && a->kind == RLT_GRAPH_ATTR_INT ? a->i : def;
}

double rlt_graph_attr_float(const rlt_graph_node *node, const char *name, double def)
{
    const rlt_graph_attr *a = rlt_graph_node_attr(node, name);
    return a && a->kind == RLT_GRAPH_ATTR_FLOAT ? (double)a->f : def;
}

const int64_t *rlt_graph_attr_ints(const rlt_graph_node *node, const char *name, int *n)
{
    const rlt_graph_attr *a = rlt_graph_node_attr(node, name);
    if (!a || a->kind != RLT_GRAPH_ATTR_INTS) {
        *n = 0;
        return NULL;
    }
    *n = a->n_values;
    return a->ints;
}

rlt_status rlt_graph_node_fail(const rlt_graph *g, const rlt_graph_node *node, rlt_diag *diag, rlt_status status,
                               const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rlt_status st = rlt_graph_node_vfail(g, node, diag, status, fmt, ap);
    va_end(ap);
    return st;
}

rlt_status rlt_graph_node_vfail(const rlt_graph *g, const rlt_graph_node *node, rlt_diag *diag, rlt_status status,
                                const char *fmt, va_list ap)
{
    char what[768];
    vsnprintf(what, sizeof what, fmt, ap);
    if (node->name[0])
        return rlt_fail(diag, status, "node %d '%s' (%s, opset %d): %s", node->file_index, node->name,
                        node->op_type, g->opset, what);
    return rlt_fail(diag, status, "node %d (%s, opset %d): %s", node->file_index, node->op_type, g->opset, what);
}

/* ---- topological order ----------------------------------------------------- */

/* Sets every tensor's producer from the node list. */
static void producers_refresh(rlt_graph *g)
{
    for (int t = 0; t < g->n_tensors; t++) g->tensors[t].producer = -1;
    for (int n = 0; n < g->n_nodes; n++)
        for (int o = 0; o < g->nodes[n].n_outputs; o++)
            if (g->nodes[n].outputs[o] >= 0) g->tensors[g->nodes[n].outputs[o]].producer = n;
}

rlt_status rlt_graph_sort(rlt_graph *g, rlt_diag *diag)
{
    rlt_status st = RLT_STATUS_OK;
    int n = g->n_nodes;
    /* Depth-first over producers, in file order, with an explicit stack:
     * state 0 new, 1 on the stack, 2 placed. */
    unsigned char *state = rlt_calloc((size_t)n + 1, 1);
    int *stack_node = rlt_malloc(((size_t)n + 1) * sizeof(int));
    int *stack_next = rlt_malloc(((size_t)n + 1) * sizeof(int));
    int *order = rlt_malloc(((size_t)n + 1) * sizeof(int));
    rlt_graph_node *sorted = rlt_malloc(((size_t)n + 1) * sizeof *sorted);
    if (!state || !stack_node || !stack_next || !order || !sorted) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory sorting the graph");
        goto cleanup;
    }
    int n_order = 0;
    for (int root = 0; root < n; root++) {
        if (state[root]) continue;
        int depth = 0;
        stack_node[0] = root;
        stack_next[0] = 0;
        state[root] = 1;
        while (depth >= 0) {
            const rlt_graph_node *node = &g->nodes[stack_node[depth]];
            if (stack_next[depth] < node->n_inputs) {
                int t = node->inputs[stack_next[depth]++];
                int p = t >= 0 ? g->tensors[t].producer : -1;
                if (p < 0 || state[p] == 2) continue;
                if (state[p] == 1) {
                    st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                                  "the graph has a cycle through node %d '%s' (%s), input '%s'",
                                  node->file_index, node->name, node->op_type, g->tensors[t].name);
                    goto cleanup;
                }
                state[p] = 1;
                depth++;
                stack_node[depth] = p;
                stack_next[depth] = 0;
            } else {
                state[stack_node[depth]] = 2;
                order[n_order++] = stack_node[depth];
                depth--;
            }
        }
    }
    RLT_ASSERT(n_order == n);
    for (int i = 0; i < n; i++) sorted[i] = g->nodes[order[i]];
    if (n) memcpy(g->nodes, sorted, (size_t)n * sizeof *sorted);
    producers_refresh(g);
cleanup:
    rlt_free(sorted);
    rlt_free(order);
    rlt_free(stack_next);
    rlt_free(stack_node);
    rlt_free(state);
    return st;
}

/* ---- dead-code elimination ------------------------------------------------- */

int rlt_graph_dce(rlt_graph *g)
{
    int n_removed = -1;
    bool *node_live = rlt_calloc((size_t)g->n_nodes + 1, sizeof *node_live);
    bool *tensor_live = rlt_calloc((size_t)g->n_tensors + 1, sizeof *tensor_live);
    int *remap = rlt_malloc(((size_t)g->n_tensors + 1) * sizeof *remap);
    if (!node_live || !tensor_live || !remap) goto cleanup;
    producers_refresh(g);
    for (int i = 0; i < g->n_outputs; i++) tensor_live[g->outputs[i]] = true;
    /* Producers come before consumers once sorted; walk backwards, and a
     * second sweep catches graphs that were never sorted. */
    for (bool changed = true; changed;) {
        changed = false;
        for (int n = g->n_nodes - 1; n >= 0; n--) {
            const rlt_graph_node *node = &g->nodes[n];
            if (node_live[n] || node->is_removed) continue;
            bool needed = false;
            for (int o = 0; o < node->n_outputs; o++)
                if (node->outputs[o] >= 0 && tensor_live[node->outputs[o]]) needed = true;
            if (!needed) continue;
            node_live[n] = changed = true;
            for (int i = 0; i < node->n_inputs; i++)
                if (node->inputs[i] >= 0) tensor_live[node->inputs[i]] = true;
        }
    }
    for (int i = 0; i < g->n_inputs; i++) tensor_live[g->inputs[i]] = true;
    /* A live node keeps all its outputs (a Dropout's unused mask too). */
    for (int n = 0; n < g->n_nodes; n++)
        if (node_live[n])
            for (int o = 0; o < g->nodes[n].n_outputs; o++)
                if (g->nodes[n].outputs[o] >= 0) tensor_live[g->nodes[n].outputs[o]] = true;

    int n_tensors = 0;
    for (int t = 0; t < g->n_tensors; t++) {
        remap[t] = tensor_live[t] ? n_tensors : -1;
        if (tensor_live[t]) g->tensors[n_tensors++] = g->tensors[t];
    }
    int n_nodes = 0;
    for (int n = 0; n < g->n_nodes; n++) {
        if (!node_live[n]) continue;
        rlt_graph_node *node = &g->nodes[n];
        for (int i = 0; i < node->n_inputs; i++)
            if (node->inputs[i] >= 0) node->inputs[i] = remap[node->inputs[i]];
        for (int o = 0; o < node->n_outputs; o++)
            if (node->outputs[o] >= 0) node->outputs[o] = remap[node->outputs[o]];
        g->nodes[n_nodes++] = *node;
    }
    for (int i = 0; i < g->n_inputs; i++) g->inputs[i] = remap[g->inputs[i]];
    for (int i = 0; i < g->n_outputs; i++) g->outputs[i] = remap[g->outputs[i]];
    n_removed = g->n_nodes - n_nodes;
    g->n_nodes = n_nodes;
    g->n_tensors = n_tensors;
    producers_refresh(g);
    /* The table shrinks or stays: rebuilding in place cannot fail when the
     * old one is kept on failure. */
    if (!slots_rebuild(g, n_tensors)) {
        memset(g->slots, 0, (size_t)g->n_slots * sizeof *g->slots);
        for (int t = 0; t < g->n_tensors; t++) g->slots[slot_of(g, g->tensors[t].name)] = t + 1;
    }
cleanup:
    rlt_free(remap);
    rlt_free(tensor_live);
    rlt_free(node_live);
    return n_removed;
}

/* ---- text form ------------------------------------------------------------ */

static void print_shape(rlt_str *s, const rlt_graph_tensor *t)
{
    rlt_str_append(s, rlt_dtype_str(t->dtype));
    if (!t->has_shape) {
        rlt_str_append(s, "[?]");
        return;
    }
    rlt_str_append(s, "[");
    for (int i = 0; i < t->rank; i++) rlt_str_printf(s, "%s%" PRId64, i ? "," : "", t->dims[i]);
    rlt_str_append(s, "]");
}

static void print_values(rlt_str *s, const rlt_graph_tensor *t)
{
    if (!t->data || !t->has_shape) return;
    int64_t n = rlt_graph_tensor_n_elems(t);
    if (n > 8) return;
    rlt_str_append(s, " = {");
    for (int64_t i = 0; i < n; i++) {
        if (i) rlt_str_append(s, ",");
        switch (t->dtype) {
        case RLT_DTYPE_FLOAT32: rlt_str_printf(s, "%g", (double)((const float *)t->data)[i]); break;
        case RLT_DTYPE_INT64: rlt_str_printf(s, "%" PRId64, ((const int64_t *)t->data)[i]); break;
        case RLT_DTYPE_INT32: rlt_str_printf(s, "%" PRId32, ((const int32_t *)t->data)[i]); break;
        case RLT_DTYPE_BOOL: rlt_str_printf(s, "%d", ((const unsigned char *)t->data)[i]); break;
        default: break;
        }
    }
    rlt_str_append(s, "}");
}

static void print_attr(rlt_str *s, const rlt_graph_attr *a)
{
    rlt_str_printf(s, " %s=", a->name);
    switch (a->kind) {
    case RLT_GRAPH_ATTR_INT: rlt_str_printf(s, "%" PRId64, a->i); break;
    case RLT_GRAPH_ATTR_FLOAT: rlt_str_printf(s, "%g", (double)a->f); break;
    case RLT_GRAPH_ATTR_STRING: rlt_str_printf(s, "\"%s\"", a->s); break;
    case RLT_GRAPH_ATTR_INTS:
        rlt_str_append(s, "[");
        for (int i = 0; i < a->n_values; i++) rlt_str_printf(s, "%s%" PRId64, i ? "," : "", a->ints[i]);
        rlt_str_append(s, "]");
        break;
    case RLT_GRAPH_ATTR_FLOATS:
        rlt_str_append(s, "[");
        for (int i = 0; i < a->n_values; i++) rlt_str_printf(s, "%s%g", i ? "," : "", (double)a->floats[i]);
        rlt_str_append(s, "]");
        break;
    case RLT_GRAPH_ATTR_TENSOR:
        print_shape(s, a->tensor);
        print_values(s, a->tensor);
        break;
    default: rlt_str_append(s, "?"); break;
    }
}

char *rlt_graph_print(const rlt_graph *g)
{
    rlt_str s;
    rlt_str_init(&s);
    int n_consts = 0;
    for (int t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].data) n_consts++;
    rlt_str_printf(&s, "graph opset %d: %d input%s, %d output%s, %d node%s, %d constant%s\n", g->opset,
                   g->n_inputs, g->n_inputs == 1 ? "" : "s", g->n_outputs, g->n_outputs == 1 ? "" : "s",
                   g->n_nodes, g->n_nodes == 1 ? "" : "s", n_consts, n_consts == 1 ? "" : "s");
    for (int i = 0; i < g->n_inputs; i++) {
        rlt_str_printf(&s, "input %s ", g->tensors[g->inputs[i]].name);
        print_shape(&s, &g->tensors[g->inputs[i]]);
        rlt_str_append(&s, "\n");
    }
    for (int t = 0; t < g->n_tensors; t++) {
        if (!g->tensors[t].data) continue;
        rlt_str_printf(&s, "const %s ", g->tensors[t].name);
        print_shape(&s, &g->tensors[t]);
        print_values(&s, &g->tensors[t]);
        rlt_str_append(&s, "\n");
    }
    for (int n = 0; n < g->n_nodes; n++) {
        const rlt_graph_node *node = &g->nodes[n];
        if (node->is_removed) continue;
        rlt_str_printf(&s, "node %s %s(", node->name[0] ? node->name : "-", node->op_type);
        for (int i = 0; i < node->n_inputs; i++)
            rlt_str_printf(&s, "%s%s", i ? ", " : "", node->inputs[i] >= 0 ? g->tensors[node->inputs[i]].name : "-");
        rlt_str_append(&s, ") ->");
        for (int o = 0; o < node->n_outputs; o++) {
            rlt_str_append(&s, o ? ", " : " ");
            if (node->outputs[o] < 0) {
                rlt_str_append(&s, "-");
                continue;
            }
            rlt_str_printf(&s, "%s ", g->tensors[node->outputs[o]].name);
            print_shape(&s, &g->tensors[node->outputs[o]]);
        }
        for (int a = 0; a < node->n_attrs; a++) print_attr(&s, &node->attrs[a]);
        rlt_str_append(&s, "\n");
    }
    for (int i = 0; i < g->n_outputs; i++) {
        rlt_str_printf(&s, "output %s ", g->tensors[g->outputs[i]].name);
        print_shape(&s, &g->tensors[g->outputs[i]]);
        rlt_str_append(&s, "\n");
    }
    return rlt_str_take(&s);
}
