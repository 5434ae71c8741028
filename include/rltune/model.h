/*
 * rltune/model.h - whole networks: an ONNX model loaded into rltune's graph
 * (sorted, shapes inferred, constant subgraphs and BatchNormalizations
 * folded, dead nodes removed), its text form, and its tasks: the kernels
 * rltune tunes (Conv, Gemm, MatMul as built-in op specs, each with the
 * elementwise nodes that would fuse into it), deduplicated and weighted by
 * their occurrences, as `rltune tasks` lists them. docs/graph.md says
 * which ONNX ops and opsets load, and the rules of tasks.
 *
 *     rlt_model *m = NULL;
 *     if (rlt_model_load("resnet18.onnx", &m, &d) != RLT_STATUS_OK) { ... d.message ... }
 *     rlt_task *tasks = NULL;
 *     int n_tasks = 0;
 *     rlt_model_tasks(m, &tasks, &n_tasks, &d);
 *     for (int i = 0; i < n_tasks; i++)
 *         printf("%d x %s %s\n", tasks[i].weight, tasks[i].spec, tasks[i].epilogue);
 *     rlt_free(tasks);
 *     rlt_model_destroy(m);
 */
#ifndef RLTUNE_MODEL_H
#define RLTUNE_MODEL_H

#include "rltune/base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlt_model rlt_model;

/* Reads the ONNX model at `path` (opsets 9 to 17; static shapes), sorts it,
 * infers every tensor's type and shape, folds constant subgraphs and each
 * BatchNormalization a Conv can absorb, and removes dead nodes. Errors:
 * IO_ERROR (the file cannot be read), PARSE_ERROR (not an ONNX model, or a
 * tensor whose data does not fit its shape), INVALID_ARGUMENT (what rltune
 * does not support: an op, an attribute, a data type, a symbolic
 * dimension; the message names the node, its op type and the opset),
 * OUT_OF_MEMORY; messages start with the path. *out is set on success only
 * (free with rlt_model_destroy). */
RLT_API rlt_status rlt_model_load(const char *path, rlt_model **out, rlt_diag *diag);
RLT_API void rlt_model_destroy(rlt_model *m); /* NULL ok */

/* The message of the last failed call on m ("" when none). */
RLT_API const char *rlt_model_last_error(const rlt_model *m);

/* The graph as text after loading, one line per input, constant, node and
 * output (docs/graph.md shows it). Free with rlt_free; NULL when out of
 * memory. */
RLT_API char *rlt_model_text(const rlt_model *m);

/* The model's default-domain opset, and the counts of the loaded graph:
 * nodes (after folding and dead-code removal), graph inputs (what a caller
 * feeds; constants are not inputs) and outputs. */
RLT_API int rlt_model_opset(const rlt_model *m);
RLT_API int rlt_model_n_nodes(const rlt_model *m);
RLT_API int rlt_model_n_inputs(const rlt_model *m);
RLT_API int rlt_model_n_outputs(const rlt_model *m);

/* A task: one distinct kernel rltune tunes, and how often the network runs
 * it. */
typedef struct rlt_task {
    char spec[512];     /* the canonical op spec, e.g. "conv2d:N=1,C=64,...": rlt_op_parse takes it */
    char epilogue[128]; /* what would fuse into the kernel, in order, comma-separated: "bias",
                           "add" (a residual), "relu", "relu6" (Clip 0..6), "sigmoid"; "" for none */
    int weight;         /* occurrences in the network (>= 1) */
    double flops;       /* of one occurrence: rlt_op_flops of spec (the epilogue not counted) */
    int n_nodes;
    const char *const *nodes; /* the names of the nodes the task covers, occurrence after
                                 occurrence, each the kernel node then the nodes fused into it;
                                 a node the model left unnamed goes by its first output's name.
                                 Borrowed from the array rlt_model_tasks hands out. */
} rlt_task;

/* The model's tasks, in the order of their first occurrence in the graph:
 * each Conv, Gemm and MatMul that fits a built-in op (conv2d,
 * depthwise_conv2d, dense, matmul, batch_matmul), deduplicated by (spec,
 * epilogue). *out is one allocation holding the tasks and their node names
 * (free it with rlt_free); *out_n may be 0 (*out NULL then). Errors:
 * OUT_OF_MEMORY (kept as m's last error). */
RLT_API rlt_status rlt_model_tasks(rlt_model *m, rlt_task **out, int *out_n, rlt_diag *diag);

/* Nodes that are not tasks, grouped by (op type, reason): the network's
 * other kernels. */
typedef struct rlt_other_kernel {
    char op_type[64];     /* "MaxPool", "Softmax", "Conv", ... */
    char reason[256];     /* "" when rltune has no op for the op type (pools, Softmax,
                             Reshape, ...: not tuned); otherwise why these Conv / Gemm /
                             MatMul nodes do not fit the op library yet, e.g. "asymmetric
                             pads [0,0,1,1]: the op pads every side alike" */
    int count;            /* nodes */
    char first_node[128]; /* the first such node's name (as in rlt_task.nodes) */
} rlt_other_kernel;

/* The model's other kernels, in the order of their first occurrence. *out
 * is an array of *out_n (free with rlt_free; NULL when 0). Errors:
 * OUT_OF_MEMORY (kept as m's last error). */
RLT_API rlt_status rlt_model_other_kernels(rlt_model *m, rlt_other_kernel **out, int *out_n, rlt_diag *diag);

#ifdef __cplusplus
}
#endif
#endif /* RLTUNE_MODEL_H */
