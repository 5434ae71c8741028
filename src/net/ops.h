/*
 * ops.h - fast run-time implementations of the nodes of a compiled network
 * that are not tuned kernels: pools, Softmax, LayerNormalization,
 * ReduceMean, elementwise arithmetic with broadcasting, activations, and
 * the data movement ops (Concat, Split, Slice, Transpose, the reshapes).
 * Where the reference evaluator (rlt_graph_eval_node) walks every element
 * through generic index arithmetic in double, these read their attributes,
 * check their shapes and precompute their strides once, when the network
 * is compiled, and then run contiguous loops the compiler vectorises.
 * docs/net.md ("Fast ops") lists what is covered and how close each op
 * stays to the evaluator. ops.c plans; the plan (struct rlt_fast_op) and
 * the loops that run it are ops_run.h and ops_run.c, which need nothing
 * of rltune: exported networks carry them verbatim.
 *
 * Threads: an op is immutable once created; several threads may run the
 * same op at once on different buffers.
 */
#ifndef RLT_NET_OPS_H
#define RLT_NET_OPS_H

#include "graph/graph.h"

/* A node's fast run-time implementation: chosen once when the network is
 * compiled (attributes read, shapes checked, strides precomputed), then
 * called on every run. Owns nothing of the graph: it keeps tensor indices
 * and the values of the attributes and constants it needs. */
typedef struct rlt_fast_op rlt_fast_op;

/* The fast implementation of node `node` of sorted, inferred graph g, or
 * NULL (*out NULL, status OK) when there is none for its op type,
 * attributes or data types, so that the caller falls back to
 * rlt_graph_eval_node. A node marked removed, or one with a constant
 * (folded) output, gets NULL too. The op is built from g's shapes and
 * constants at this moment (g may be destroyed afterwards; the buffers
 * given to rlt_fast_op_run must then still have those shapes).
 * *out: free with rlt_fast_op_destroy. Errors: OUT_OF_MEMORY only (*out
 * NULL, diag names the node). */
rlt_status rlt_fast_op_create(const rlt_graph *g, int node, rlt_fast_op **out, rlt_diag *diag);

/* The same for a node whose input 0 holds its channels in blocks of
 * `lanes` (NCHWc, graph/tasks.c's blocked layouts): MaxPool and
 * AveragePool (2-D; their output blocked alike) and GlobalAveragePool
 * (whose [N, C, 1, 1] output is the same floats in either layout) get
 * loops over whole blocks; any other node has no layout of its own to
 * know (elementwise over equal shapes, Concat / Split of whole blocks)
 * and gets rlt_fast_op_create's plan. lanes 0 is rlt_fast_op_create;
 * NULL where a pool's block does not divide its channels or exceeds
 * RLT_FAST_OP_MAX_LANES. */
rlt_status rlt_fast_op_create_blocked(const rlt_graph *g, int node, int lanes, rlt_fast_op **out, rlt_diag *diag);

/* Runs the op: vals as for rlt_graph_eval_node, indexed by tensor: every
 * input's buffer (constants: their data) and every output's buffer, of the
 * tensor's size. Outputs are not zeroed beforehand and are fully written;
 * they must not overlap any input (a view's output may be its input's own
 * buffer: the copy is then skipped). Never allocates, never fails. */
void rlt_fast_op_run(const rlt_fast_op *op, void *const *vals);

void rlt_fast_op_destroy(rlt_fast_op *op); /* NULL ok */

/* Which build of its loops the op runs: "baseline" (what the library is
 * compiled for: SSE2 on x86-64), "avx2" or "avx512f" (x86, chosen by
 * create as the best the CPU has; all give the same bits). Static string. */
const char *rlt_fast_op_isa(const rlt_fast_op *op);

/* Test hook: ops created after this call run at most build `isa`
 * ("baseline", "avx2", "avx512f"; NULL or another name: no limit, the
 * default), so that tests reach every build the machine can run.
 * Process-global, for single-threaded tests only. */
void rlt_fast_op_limit_isa(const char *isa);

/* True when the node only reinterprets its input's bytes: Reshape,
 * Flatten, Squeeze, Unsqueeze and Identity, and Dropout (inference) when
 * it has no mask output. The caller may then let output 0 share input 0's
 * buffer instead of running the node; when it does not, the node's fast op
 * is a copy. */
bool rlt_fast_op_is_view(const rlt_graph *g, int node);

#endif /* RLT_NET_OPS_H */
