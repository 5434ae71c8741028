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
 * once. Every other node runs its fast op (ops.h), or the reference
 * evaluator (rlt_graph_eval_node) when it has none; a view runs nothing,
 * nor does a Concat or a Split whose parts are contiguous slices of one
 * block (placed in place).
 * Activations live in one arena placed by the memory plan
 * (graph/memplan.h): a tensor's buffer is reused once its last reader has
 * run. net_internal.h holds the compiled net's structs.
 *
 * Running (rlt_net_run) copies the inputs into the arena, runs the steps in
 * order and copies the outputs out. Nothing is allocated while running, so
 * a timed run times the network alone. Exporting (net_export.c) writes a
 * compiled net as a stand-alone C library. docs/net.md describes it.
 *
 * Threads: a net runs on one thread at a time (its kernels' parallel loops
 * use n_threads OpenMP threads); the graph it was compiled from must
 * outlive it and stay unchanged.
 */
#ifndef RLT_NET_H
#define RLT_NET_H

#include "graph/graph.h"
#include "net/ops_run.h"
#include "rltune/model.h"

/* rlt_net, rlt_net_options, rlt_net_task, rlt_net_step and the queries
 * (rlt_net_n_tasks, rlt_net_step_get, ...) are declared in rltune/model.h. */

/* Compiles graph g (sorted, inferred; best after BatchNormalization
 * folding and dead-code removal, as rlt_model_load leaves it; borrowed: it
 * must outlive the net). Errors: INVALID_ARGUMENT (options; a node rltune
 * cannot run), IO_ERROR (the database), BUILD_ERROR (a kernel failed to
 * compile or load: the message names the task), OUT_OF_MEMORY. */
rlt_status rlt_net_compile(const rlt_graph *g, const rlt_net_options *opts, rlt_net **out, rlt_diag *diag);

/* The spec of the op without its epilogue (conv2d's epilogue= key, dense's
 * bias and relu): the same loops, so a schedule of one applies to the
 * other. "" when the op has no epilogue. */
void rlt_net_base_spec(const char *spec, char *out, size_t cap);

/* Whether a record's kernel may run in a network at n_threads. At one
 * thread, any. At several, only one built by the network's own compiler
 * (a configuration without cc=clang): gcc's kernels run their parallel
 * loops on libgomp's threads and clang's on libomp's, and two pools of
 * threads that each keep spinning after a loop take the same cores from
 * each other, slowing every kernel (docs/net.md, "Threads"). */
bool rlt_net_takes_record(const char *config, int n_threads);

/* The layout of rlt_net_options.channel_block RLT_NET_BLOCK_AUTO: the
 * network's latency estimate from the records alone (the sum over tasks
 * of weight x the best record's time, looked up as the compile looks
 * them up; infinite with a task untuned) in NCHW (est_ms[0]) and in
 * blocks of rlt_net_machine_block() channels (est_ms[1]); *out_block is
 * the blocked one's block when both are finite and it is the lower, or
 * when not both are and its tasks with records hold a larger share of
 * the network's FLOPs (a partly tuned layout over an untuned one); else 0
 * (NCHW: where the records say nothing, or nothing better). Errors: the
 * database's. */
rlt_status rlt_net_choose_block(const rlt_graph *g, const rlt_net_options *opts, int *out_block, double est_ms[2],
                                rlt_diag *diag);

/* The machine's channel block: the floats of its widest vector register. */
int rlt_net_machine_block(void);

/* INVALID_ARGUMENT unless block is 0 (NCHW), a block up to
 * RLT_NET_MAX_BLOCK, or with is_auto_allowed RLT_NET_BLOCK_AUTO. */
rlt_status rlt_net_check_block(int block, bool is_auto_allowed, rlt_diag *diag);

/* ---- the steps a compile makes of a graph ----------------------------------
 *
 * What rlt_net_compile decides per node and per task, shared with the cost
 * model of graph substitutions (gopt/cost.c), which costs a graph as the
 * steps a compile would make of it without compiling it. Walking the nodes
 * in order, a node is skipped when it is removed, fused into a task's
 * occurrence (rlt_net_node_tasks gives RLT_NET_FUSED) or, being no kernel
 * node, folded (rlt_net_node_is_folded); a kernel node runs its task's
 * kernel; any other node is a view (rlt_net_node_is_view: alias[output 0]
 * becomes input 0), else a Concat placed in place
 * (rlt_net_concat_fits_in_place: alias[each input] becomes the output),
 * else a Split placed in place (rlt_net_split_fits_in_place: alias[each
 * output] becomes the input), else it runs its fast op or the evaluator.
 * alias starts as the identity over g's tensors. */

#define RLT_NET_FUSED (-2) /* rlt_net_node_tasks: a node fused into an occurrence */
#define RLT_NET_MAX_BLOCK RLT_FAST_OP_MAX_LANES /* the largest channel block: what the blocked pools take */

/* Per node of g (task_of[g->n_nodes]): the index in gt (g's tasks,
 * rlt_graph_tasks_extract) of the task whose occurrence it is the kernel
 * node of, RLT_NET_FUSED for a node fused into an occurrence, -1 for the
 * others. occ_of (may be NULL): the kernel nodes' occurrence numbers, -1
 * elsewhere. */
void rlt_net_node_tasks(const rlt_graph *g, const rlt_graph_tasks *gt, int *task_of, int *occ_of);

/* True when every output of the node is a constant: it runs nothing. */
bool rlt_net_node_is_folded(const rlt_graph *g, int node);

/* True when the node only reinterprets an activation's bytes
 * (rlt_fast_op_is_view, its input not a constant): its output shares its
 * input's buffer and it runs nothing. */
bool rlt_net_node_is_view(const rlt_graph *g, int node);

/* True when Concat `node` can be placed in place: its parts are contiguous
 * in its output (every output dimension before the axis is 1), and each
 * input is written by a step of the network and lives in no other block
 * yet (alias[t] == t: not a view's output, not a part of another Concat,
 * not an output of a Split placed in place; not a graph input, not a
 * constant, not twice in this Concat, of the output's type). alias: per
 * tensor of g, as the walk has left it so far. False for any other node. */
bool rlt_net_concat_fits_in_place(const rlt_graph *g, int node, const int *alias);

/* True when Split `node` can be placed in place: its outputs are
 * contiguous in its input (every input dimension before the axis is 1:
 * NCHW channels at batch 1, the last axis of [1, ..., N]), each output is
 * present, of the input's type and shape but for the axis (the sizes adding
 * up to it), and the input's block (following alias to its root: the input
 * may be a view, a Concat's part or another Split's output) is an
 * activation a step writes: not a graph input nor a view of one, not a
 * constant. Outputs that are graph outputs are allowed (they are copied
 * out of their slices). alias: per tensor of g, as the walk has left it so
 * far. False for any other node. */
bool rlt_net_split_fits_in_place(const rlt_graph *g, int node, const int *alias);

/* The record a network compiles a task with: the best record (rlt_db_best_where,
 * taking only what rlt_net_takes_record at n_threads) of the fused op's spec
 * on `target` (a key text) whose schedule applies to op (the task's fused
 * op, parsed from spec), else the same of the op without its epilogue.
 * *out_found says whether there was one; then *out is it, *nest its
 * schedule applied to op and *out_origin RLT_NET_FROM_RECORD or
 * RLT_NET_FROM_BASE_RECORD. out and nest are scratch otherwise. Errors: the
 * database's (IO_ERROR). */
rlt_status rlt_net_task_record(rlt_db *db, const char *target, const char *spec, const rlt_op *op, int n_threads,
                               rlt_record *out, rlt_nest *nest, rlt_net_origin *out_origin, bool *out_found,
                               rlt_diag *diag);

/* The schedule a network compiles a task with when it takes no record: the
 * first rule-built seed of op's search space at n_threads, clang never
 * offered (the network's own compiler builds every seed). *out gets its
 * nest; key and schedule, when not NULL, get the seed's configuration key
 * (rlt_space_config_key) and schedule text (rlt_sched_print) appended:
 * what a record of it holds. Errors: the space's, OUT_OF_MEMORY. */
rlt_status rlt_net_seed_nest(const rlt_op *op, int n_threads, rlt_nest *out, rlt_str *key, rlt_str *schedule,
                             rlt_diag *diag);

/* As rlt_net_seed_nest, for the space's first `count` rule-built seeds
 * (rlt_space_seeds with max = count: which seeds come first depends on
 * count), 1 <= count <= RLT_NET_MAX_SEEDS: what a graph search measures to
 * cost a task by the best of its first seeds. Seed i goes to out[i], and
 * to keys[i] and schedules[i] when those arrays are not NULL; *n_out is
 * how many there are (fewer than count when the space has fewer; 0 only
 * when out of memory). */
#define RLT_NET_MAX_SEEDS 8
rlt_status rlt_net_seed_nests(const rlt_op *op, int n_threads, int count, rlt_nest *out, rlt_str *keys,
                              rlt_str *schedules, int *n_out, rlt_diag *diag);

/* Runs fn(arg) so that the OpenMP threads it starts leave nothing behind:
 * at n_threads > 1 on a thread of its own, joined before returning (at 1,
 * here). A parallel region leaves its OpenMP threads bound to the thread
 * that ran it (libgomp's pool), and a child that thread forks later (the
 * measurement runner's, which runs kernels) inherits that pool without its
 * threads: the child's first parallel region then waits for them until its
 * timeout. The pool of a thread that ends is released. What runs a network
 * or fast ops at several threads in a process that measures kernels later
 * (rlt_net_time, the graph cost model) goes through here. Errors:
 * OUT_OF_MEMORY (no thread could be started). */
rlt_status rlt_net_contained(int n_threads, void *(*fn)(void *), void *arg, rlt_diag *diag);

/* The threads the net's kernels run on. */
int rlt_net_threads(const rlt_net *n);

/* The graph the net runs (borrowed). */
const rlt_graph *rlt_net_graph(const rlt_net *n);

/* Runs the network once. inputs: one buffer per graph input in order, of
 * its type and shape (borrowed); outputs: one buffer per graph output, of
 * its size, overwritten. Errors: INVALID_ARGUMENT (a NULL buffer; an
 * evaluated node's run-time error, naming it). */
rlt_status rlt_net_run_buffers(rlt_net *n, const void *const *inputs, void *const *outputs, rlt_diag *diag);

/* ---- export (net_export.c) ------------------------------------------------ */

/* The example's files an export's caller writes into the directory
 * (rlt_model_export): graph input i and the reference's output i, as .npy. */
#define RLT_NET_EXPORT_INPUT_NPY "input_%d.npy"
#define RLT_NET_EXPORT_EXPECTED_NPY "expected_%d.npy"

/* OK when every step of n can be exported: INVALID_ARGUMENT naming the
 * first node that runs on the reference evaluator (which an exported
 * library does not carry) and its op type. */
rlt_status rlt_net_exportable(const rlt_net *n, rlt_diag *diag);

/* Writes n as a stand-alone C library into o->dir (rltune/model.h,
 * rlt_model_export, says what; docs/formats.md, "Exported networks", the
 * layout): NAME.h, NAME.c, NAME_kernels_K.c, ops_run.h, ops_run.c, the
 * weights (NAME.weights, or NAME_weights.c when o->embed_weights),
 * example.c (reading the RLT_NET_EXPORT_*_NPY files) and the Makefile.
 * o->seed is not used. Errors: INVALID_ARGUMENT (o; rlt_net_exportable's),
 * IO_ERROR, OUT_OF_MEMORY; *out filled on success. */
rlt_status rlt_net_export(const rlt_net *n, const rlt_model_export_options *o, rlt_model_export_result *out,
                          rlt_diag *diag);

#endif /* RLT_NET_H */
