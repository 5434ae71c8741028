/*
 * model.c - the public face of whole networks (rltune/model.h): a model
 * handle holding the loaded graph (graph/onnx.c, BatchNormalization folding
 * and dead-code removal), its text form and counts, and its tasks and other
 * kernels copied out of graph/tasks.c's extraction into the public structs.
 */
#include "graph/graph.h"
#include "rltune/model.h"

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

void rlt_model_destroy(rlt_model *m)
{
    if (!m) return;
    rlt_graph_destroy(m->graph);
    rlt_free(m);
}

const char *rlt_model_last_error(const rlt_model *m) { return m->last_error; }

char *rlt_model_text(const rlt_model *m) { return rlt_graph_print(m->graph); }

int rlt_model_opset(const rlt_model *m) { return m->graph->opset; }

int rlt_model_n_nodes(const rlt_model *m) { return m->graph->n_nodes; }

int rlt_model_n_inputs(const rlt_model *m) { return m->graph->n_inputs; }

int rlt_model_n_outputs(const rlt_model *m) { return m->graph->n_outputs; }

rlt_status rlt_model_tasks(rlt_model *m, rlt_task **out, int *out_n, rlt_diag *diag)
{
    *out = NULL;
    *out_n = 0;
    rlt_diag d = {0};
    rlt_graph_tasks gt;
    rlt_status st = rlt_graph_tasks_extract(m->graph, &gt, &d);
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
