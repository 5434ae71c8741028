/*
 * model.c - the public face of whole networks (rltune/model.h): a model
 * handle holding the loaded graph (graph/onnx.c, BatchNormalization folding
 * and dead-code removal), its text form and counts, and its tasks and other
 * kernels copied out of graph/tasks.c's extraction into the public structs;
 * a compiled network's export (rlt_model_export: net/net_export.c writes
 * the library, this file the example's input and expected outputs).
 */
#include "api/model_internal.h"
#include "ir/ir.h"
#include "net/net.h"

#include <stdio.h>
#include <string.h>

struct rlt_model {
    rlt_graph *graph;
    char last_error[1024]; /* the last failed call's message; "" when none */
};

/* Keeps a failed call's message in the handle (rlt_model_last_error) and
 * hands it to the caller's diag, which keeps a message it already holds. */
static rlt_status noted(rlt_model *m, rlt_status st, const rlt_diag *d, rlt_diag *diag)
{
    return rlt_diag_keep(m->last_error, sizeof m->last_error, st, d, diag);
}

rlt_status rlt_model_load(const char *path, rlt_model **out, rlt_diag *diag)
{
    rlt_graph *g = NULL;
    rlt_status st = rlt_graph_load_onnx(path, &g, diag);
    if (st != RLT_STATUS_OK) return st;
    rlt_model *m = NULL;
    if (rlt_graph_fold_batchnorm(g, diag) < 0 || rlt_graph_dce(g) < 0) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "%s: out of memory folding the graph", path);
        goto cleanup;
    }
    if (!(m = rlt_calloc(1, sizeof *m))) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "%s: out of memory loading the model", path);
        goto cleanup;
    }
    m->graph = g;
    g = NULL;
    *out = m;
cleanup:
    rlt_graph_destroy(g);
    return st;
}

rlt_status rlt_model_from_graph(rlt_graph *g, rlt_model **out, rlt_diag *diag)
{
    rlt_model *m = rlt_calloc(1, sizeof *m);
    if (!m) {
        rlt_graph_destroy(g);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory making a model");
    }
    m->graph = g;
    *out = m;
    return RLT_STATUS_OK;
}

void rlt_model_destroy(rlt_model *m)
{
    if (!m) return;
    rlt_graph_destroy(m->graph);
    rlt_free(m);
}

const char *rlt_model_last_error(const rlt_model *m) { return m->last_error; }

const rlt_graph *rlt_model_graph(const rlt_model *m) { return m->graph; }

rlt_status rlt_model_noted(rlt_model *m, rlt_status st, const rlt_diag *d, rlt_diag *diag)
{
    return noted(m, st, d, diag);
}

char *rlt_model_text(const rlt_model *m) { return rlt_graph_print(m->graph); }

int rlt_model_opset(const rlt_model *m) { return m->graph->opset; }

int rlt_model_n_nodes(const rlt_model *m) { return m->graph->n_nodes; }

int64_t rlt_model_weights_bytes(const rlt_model *m)
{
    const rlt_graph *g = m->graph;
    int64_t bytes = 0;
    bool *seen = rlt_calloc((size_t)g->n_tensors + 1, sizeof *seen);
    if (!seen) return 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const rlt_graph_node *n = &g->nodes[i];
        if (n->is_removed) continue;
        for (int k = 0; k < n->n_inputs; k++) {
            int t = n->inputs[k];
            if (t < 0 || seen[t] || !g->tensors[t].data) continue;
            seen[t] = true;
            bytes += rlt_graph_tensor_n_elems(&g->tensors[t]) * (int64_t)rlt_dtype_size(g->tensors[t].dtype);
        }
    }
    rlt_free(seen);
    return bytes;
}

int rlt_model_n_inputs(const rlt_model *m) { return m->graph->n_inputs; }

int rlt_model_n_outputs(const rlt_model *m) { return m->graph->n_outputs; }

int rlt_model_channel_block(void) { return rlt_net_machine_block(); }

rlt_status rlt_model_tasks(rlt_model *m, rlt_task **out, int *out_n, rlt_diag *diag)
{
    return rlt_model_tasks_blocked(m, 0, out, out_n, diag);
}

rlt_status rlt_model_tasks_blocked(rlt_model *m, int channel_block, rlt_task **out, int *out_n, rlt_diag *diag)
{
    *out = NULL;
    *out_n = 0;
    rlt_diag d = {0};
    rlt_graph_tasks gt;
    rlt_status st = rlt_net_check_block(channel_block, false, &d);
    if (st == RLT_STATUS_OK) st = rlt_graph_tasks_extract_blocked(m->graph, channel_block, &gt, &d);
    if (st != RLT_STATUS_OK) return noted(m, st, &d, diag);
    /* one block: the tasks, then every task's name pointers, then the names */
    size_t n_names = 0, text_bytes = 0;
    for (int i = 0; i < gt.n_tasks; i++) {
        n_names += (size_t)gt.tasks[i].n_nodes;
        for (int k = 0; k < gt.tasks[i].n_nodes; k++)
            text_bytes += strlen(rlt_graph_node_label(m->graph, gt.tasks[i].nodes[k])) + 1;
    }
    if (gt.n_tasks > 0) {
        size_t head = (size_t)gt.n_tasks * sizeof(rlt_task), ptrs = n_names * sizeof(const char *);
        char *block = rlt_calloc(1, head + ptrs + text_bytes);
        if (!block) {
            st = rlt_fail(&d, RLT_STATUS_OUT_OF_MEMORY, "out of memory listing the model's tasks");
            rlt_graph_tasks_free(&gt);
            return noted(m, st, &d, diag);
        }
        rlt_task *tasks = (rlt_task *)block;
        const char **names = (const char **)(block + head);
        char *text = block + head + ptrs;
        for (int i = 0; i < gt.n_tasks; i++) {
            const rlt_graph_task *src = &gt.tasks[i];
            rlt_task *t = &tasks[i];
            snprintf(t->spec, sizeof t->spec, "%s", src->spec);
            snprintf(t->epilogue, sizeof t->epilogue, "%s", src->epilogue);
            t->weight = src->weight;
            t->flops = src->flops;
            t->n_nodes = src->n_nodes;
            t->nodes = names;
            for (int k = 0; k < src->n_nodes; k++) {
                const char *label = rlt_graph_node_label(m->graph, src->nodes[k]);
                size_t len = strlen(label) + 1;
                memcpy(text, label, len);
                *names++ = text;
                text += len;
            }
        }
        *out = tasks;
        *out_n = gt.n_tasks;
    }
    rlt_graph_tasks_free(&gt);
    return RLT_STATUS_OK;
}

rlt_status rlt_model_other_kernels(rlt_model *m, rlt_other_kernel **out, int *out_n, rlt_diag *diag)
{
    *out = NULL;
    *out_n = 0;
    rlt_diag d = {0};
    rlt_graph_tasks gt;
    rlt_status st = rlt_graph_tasks_extract(m->graph, &gt, &d);
    if (st != RLT_STATUS_OK) return noted(m, st, &d, diag);
    if (gt.n_others > 0) {
        rlt_other_kernel *others = rlt_calloc((size_t)gt.n_others, sizeof *others);
        if (!others) {
            st = rlt_fail(&d, RLT_STATUS_OUT_OF_MEMORY, "out of memory listing the model's other kernels");
            rlt_graph_tasks_free(&gt);
            return noted(m, st, &d, diag);
        }
        for (int i = 0; i < gt.n_others; i++) {
            const rlt_graph_other *src = &gt.others[i];
            snprintf(others[i].op_type, sizeof others[i].op_type, "%s", src->op_type);
            snprintf(others[i].reason, sizeof others[i].reason, "%s", src->reason);
            others[i].count = src->count;
            snprintf(others[i].first_node, sizeof others[i].first_node, "%s",
                     rlt_graph_node_label(m->graph, src->first_node));
        }
        *out = others;
        *out_n = gt.n_others;
    }
    rlt_graph_tasks_free(&gt);
    return RLT_STATUS_OK;
}

/* ---- inputs, outputs and the reference -------------------------------------- */

_Static_assert((int)RLT_ELEM_F32 == (int)RLT_DTYPE_FLOAT32 && (int)RLT_ELEM_I64 == (int)RLT_DTYPE_INT64 &&
                   (int)RLT_ELEM_I32 == (int)RLT_DTYPE_INT32 && (int)RLT_ELEM_BOOL == (int)RLT_DTYPE_BOOL,
               "rlt_elem and rlt_dtype number the element types alike");
_Static_assert(RLT_ARRAY_MAX_RANK == RLT_GRAPH_MAX_RANK, "arrays hold any graph tensor");

static void describe(const rlt_graph *g, int t, rlt_model_tensor *out)
{
    const rlt_graph_tensor *gt = &g->tensors[t];
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", gt->name);
    out->elem = (rlt_elem)gt->dtype;
    out->rank = gt->rank;
    for (int d = 0; d < gt->rank; d++) out->dims[d] = gt->dims[d];
}

void rlt_model_input(const rlt_model *m, int i, rlt_model_tensor *out) { describe(m->graph, m->graph->inputs[i], out); }

void rlt_model_output(const rlt_model *m, int i, rlt_model_tensor *out)
{
    describe(m->graph, m->graph->outputs[i], out);
}

/* INVALID_ARGUMENT unless array a fits graph tensor t; `what` says which
 * ("input 0"). */
static rlt_status check_array(const rlt_graph *g, int t, const rlt_array *a, const char *what, rlt_diag *diag)
{
    const rlt_graph_tensor *gt = &g->tensors[t];
    if (!a) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s ('%s') is missing", what, gt->name);
    bool fits = (int)a->elem == (int)gt->dtype && a->rank == gt->rank && a->data;
    for (int d = 0; fits && d < gt->rank; d++) fits = a->dims[d] == gt->dims[d];
    if (fits) return RLT_STATUS_OK;
    char want[160], got[160];
    size_t k = (size_t)snprintf(want, sizeof want, "%s[", rlt_dtype_str(gt->dtype));
    for (int d = 0; d < gt->rank && k < sizeof want; d++)
        k += (size_t)snprintf(want + k, sizeof want - k, "%s%lld", d ? "," : "", (long long)gt->dims[d]);
    if (k < sizeof want) snprintf(want + k, sizeof want - k, "]");
    k = (size_t)snprintf(got, sizeof got, "%s[", rlt_elem_name(a->elem));
    for (int d = 0; d < a->rank && d < RLT_ARRAY_MAX_RANK && k < sizeof got; d++)
        k += (size_t)snprintf(got + k, sizeof got - k, "%s%lld", d ? "," : "", (long long)a->dims[d]);
    if (k < sizeof got) snprintf(got + k, sizeof got - k, "]");
    return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "%s ('%s') is %s; the model needs %s", what, gt->name, got,
                    want);
}

static rlt_status check_inputs(const rlt_graph *g, const rlt_array *const *inputs, rlt_diag *diag)
{
    for (int i = 0; i < g->n_inputs; i++) {
        char what[32];
        snprintf(what, sizeof what, "input %d", i);
        rlt_status st = check_array(g, g->inputs[i], inputs ? inputs[i] : NULL, what, diag);
        if (st != RLT_STATUS_OK) return st;
    }
    return RLT_STATUS_OK;
}

rlt_status rlt_graph_random_inputs(const rlt_graph *g, uint64_t seed, rlt_array **out, rlt_diag *diag)
{
    for (int i = 0; i < g->n_inputs; i++) out[i] = NULL;
    for (int i = 0; i < g->n_inputs; i++) {
        const rlt_graph_tensor *t = &g->tensors[g->inputs[i]];
        rlt_status st = rlt_array_create((rlt_elem)t->dtype, t->rank, t->dims, &out[i], diag);
        if (st != RLT_STATUS_OK) {
            for (int k = 0; k < i; k++) {
                rlt_array_destroy(out[k]);
                out[k] = NULL;
            }
            return st;
        }
        if (t->dtype == RLT_DTYPE_FLOAT32)
            rlt_tensor_fill(out[i]->data, rlt_graph_tensor_n_elems(t),
                            seed + 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1)); /* one stream an input */
    }
    return RLT_STATUS_OK;
}

rlt_status rlt_model_random_inputs(const rlt_model *m, uint64_t seed, rlt_array **out, rlt_diag *diag)
{
    return rlt_graph_random_inputs(m->graph, seed, out, diag);
}

rlt_status rlt_model_evaluate(rlt_model *m, const rlt_array *const *inputs, rlt_array **outputs, rlt_diag *diag)
{
    const rlt_graph *g = m->graph;
    rlt_diag d = {0};
    for (int i = 0; i < g->n_outputs; i++) outputs[i] = NULL;
    rlt_status st = check_inputs(g, inputs, &d);
    if (st != RLT_STATUS_OK) return noted(m, st, &d, diag);
    const void **in = rlt_calloc((size_t)g->n_inputs + 1, sizeof *in);
    void **out = rlt_calloc((size_t)g->n_outputs + 1, sizeof *out);
    if (!in || !out) {
        st = rlt_fail(&d, RLT_STATUS_OUT_OF_MEMORY, "out of memory evaluating the model");
        goto cleanup;
    }
    for (int i = 0; i < g->n_inputs; i++) in[i] = inputs[i]->data;
    if ((st = rlt_graph_eval(g, g->n_inputs, in, g->n_outputs, out, &d)) != RLT_STATUS_OK) goto cleanup;
    for (int i = 0; i < g->n_outputs && st == RLT_STATUS_OK; i++) {
        const rlt_graph_tensor *t = &g->tensors[g->outputs[i]];
        if ((st = rlt_array_create((rlt_elem)t->dtype, t->rank, t->dims, &outputs[i], &d)) == RLT_STATUS_OK &&
            rlt_graph_tensor_n_elems(t) > 0)
            memcpy(outputs[i]->data, out[i], (size_t)rlt_graph_tensor_n_elems(t) * rlt_dtype_size(t->dtype));
    }
cleanup:
    if (out)
        for (int i = 0; i < g->n_outputs; i++) rlt_free(out[i]);
    if (st != RLT_STATUS_OK)
        for (int i = 0; i < g->n_outputs; i++) {
            rlt_array_destroy(outputs[i]);
            outputs[i] = NULL;
        }
    rlt_free(out);
    rlt_free(in);
    return st == RLT_STATUS_OK ? st : noted(m, st, &d, diag);
}

/* ---- compiled networks ------------------------------------------------------ */

void rlt_net_options_init(rlt_net_options *o)
{
    memset(o, 0, sizeof *o);
    o->n_threads = 1;
    o->cold_weights = true;
    o->channel_block = RLT_NET_BLOCK_AUTO;
}

rlt_status rlt_model_compile(rlt_model *m, const rlt_net_options *o, rlt_net **out, rlt_diag *diag)
{
    rlt_diag d = {0};
    rlt_status st = rlt_net_compile(m->graph, o, out, &d);
    return st == RLT_STATUS_OK ? st : noted(m, st, &d, diag);
}

rlt_status rlt_net_run(rlt_net *n, const rlt_array *const *inputs, rlt_array *const *outputs, rlt_diag *diag)
{
    const rlt_graph *g = rlt_net_graph(n);
    enum { MAX_IO = 64 };
    if (g->n_inputs > MAX_IO || g->n_outputs > MAX_IO)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "rlt_net_run takes at most %d inputs and outputs", MAX_IO);
    const void *in[MAX_IO];
    void *out[MAX_IO];
    rlt_status st = check_inputs(g, inputs, diag);
    if (st != RLT_STATUS_OK) return st;
    for (int i = 0; i < g->n_outputs; i++) {
        char what[32];
        snprintf(what, sizeof what, "output %d", i);
        if ((st = check_array(g, g->outputs[i], outputs ? outputs[i] : NULL, what, diag)) != RLT_STATUS_OK) return st;
        out[i] = outputs[i]->data;
    }
    for (int i = 0; i < g->n_inputs; i++) in[i] = inputs[i]->data;
    return rlt_net_run_buffers(n, in, out, diag);
}

/* ---- exporting a compiled network ---------------------------------------------- */

void rlt_model_export_options_init(rlt_model_export_options *o) { memset(o, 0, sizeof *o); }

/* Writes arrays[0 .. n) as DIR/<fmt with i>. */
static rlt_status npy_files_write(const char *dir, const char *fmt, int n, rlt_array *const *arrays, rlt_diag *diag)
{
    for (int i = 0; i < n; i++) {
        char file[64], path[4200];
        snprintf(file, sizeof file, fmt, i);
        snprintf(path, sizeof path, "%s/%s", dir, file);
        rlt_status st = rlt_npy_save(path, arrays[i], diag);
        if (st != RLT_STATUS_OK) return st;
    }
    return RLT_STATUS_OK;
}

rlt_status rlt_model_export(rlt_model *m, const rlt_net *net, const rlt_model_export_options *o,
                            rlt_model_export_result *out, rlt_diag *diag)
{
    const rlt_graph *g = m->graph;
    rlt_diag d = {0};
    rlt_status st = RLT_STATUS_OK;
    rlt_array **in = NULL, **ref = NULL;
    memset(out, 0, sizeof *out);
    if (!net || rlt_net_graph(net) != g) {
        st = rlt_fail(&d, RLT_STATUS_INVALID_ARGUMENT, "the network to export was not compiled from this model");
        goto cleanup;
    }
    if (!o) {
        st = rlt_fail(&d, RLT_STATUS_INVALID_ARGUMENT, "no export options");
        goto cleanup;
    }
    /* the library first: it refuses what it cannot export before anything is written */
    if ((st = rlt_net_export(net, o, out, &d)) != RLT_STATUS_OK) goto cleanup;
    in = rlt_calloc((size_t)g->n_inputs + 1, sizeof *in);
    ref = rlt_calloc((size_t)g->n_outputs + 1, sizeof *ref);
    if (!in || !ref) {
        st = rlt_fail(&d, RLT_STATUS_OUT_OF_MEMORY, "out of memory exporting the model");
        goto cleanup;
    }
    if ((st = rlt_model_random_inputs(m, o->seed, in, &d)) != RLT_STATUS_OK ||
        (st = rlt_model_evaluate(m, (const rlt_array *const *)in, ref, &d)) != RLT_STATUS_OK ||
        (st = npy_files_write(o->dir, RLT_NET_EXPORT_INPUT_NPY, g->n_inputs, in, &d)) != RLT_STATUS_OK ||
        (st = npy_files_write(o->dir, RLT_NET_EXPORT_EXPECTED_NPY, g->n_outputs, ref, &d)) != RLT_STATUS_OK)
        goto cleanup;
cleanup:
    for (int i = 0; in && i < g->n_inputs; i++) rlt_array_destroy(in[i]);
    for (int i = 0; ref && i < g->n_outputs; i++) rlt_array_destroy(ref[i]);
    rlt_free(ref);
    rlt_free(in);
    return st == RLT_STATUS_OK ? st : noted(m, st, &d, diag);
}
