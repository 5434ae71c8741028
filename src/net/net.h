/*
 * net.h - compiled networks: a loaded graph turned into a program of steps
 * that runs in this process.
 *
 * Compiling (rlt_net_compile) makes one kernel per task of the graph
 * (graph/tasks.c: a Conv, Gemm or MatMul with its fused epilogue), from the
 * best record of the task's fused op in a records database, else the best
 * record of the op without its epilogue (the same loops, so its schedule
 * applies), else the first rule-built seed of the op's search space. The
 * kernels of all tasks are built in one batch (the builder's cache makes a
 * second compile of the same network cheap), loaded with dlopen, and each
 * occurrence gets its own workspace, into which its weights are packed
 * once. Every other node runs through the reference evaluator
 * (rlt_graph_eval_node). Activations live in one arena placed by the
 * memory plan (graph/memplan.h): a tensor's buffer is reused once its last
 * reader has run.
 *
 * Running (rlt_net_run) copies the inputs into the arena, runs the steps in
 * order and copies the outputs out. Nothing is allocated while running, so
 * a timed run times the network alone. docs/net.md describes it.
 *
 * Threads: a net runs on one thread at a time (its kernels' parallel loops
 * use n_threads OpenMP threads); the graph it was compiled from must
 * outlive it and stay unchanged.
 */
#ifndef RLT_NET_H
#define RLT_NET_H

#include "graph/graph.h"
#include "rltune/model.h"

/* rlt_net, rlt_net_options, rlt_net_task, rlt_net_step and the queries
 * (rlt_net_n_tasks, rlt_net_step_get, ...) are declared in rltune/model.h. */

/* Compiles graph g (sorted, inferred; best after BatchNormalization
 * folding and dead-code removal, as rlt_model_load leaves it; borrowed: it
 * must outlive the net). Errors: INVALID_ARGUMENT (options; a node rltune
 * cannot run), IO_ERROR (the database), BUILD_ERROR (a kernel failed to
 * compile or load: the message names the task), OUT_OF_MEMORY. */
rlt_status rlt_net_compile(const rlt_graph *g, const rlt_net_options *opts, rlt_net **out, rlt_diag *diag);

/* The graph the net runs (borrowed). */
const rlt_graph *rlt_net_graph(const rlt_net *n);

/* Runs the network once. inputs: one buffer per graph input in order, of
 * its type and shape (borrowed); outputs: one buffer per graph output, of
 * its size, overwritten. Errors: INVALID_ARGUMENT (a NULL buffer; an
 * evaluated node's run-time error, naming it). */
rlt_status rlt_net_run_buffers(rlt_net *n, const void *const *inputs, void *const *outputs, rlt_diag *diag);

#endif /* RLT_NET_H */
