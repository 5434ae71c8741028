/*
 * graph.h - the graph IR of whole networks: tensors (name, data type, static
 * shape, optional constant values), nodes (op type, inputs, outputs, typed
 * attributes), the graph's inputs and outputs; topological order, shape
 * inference with constant folding, dead-code elimination, a text form; and
 * BatchNormalization folding (fold.c); the reference evaluation (eval.c);
 * the ONNX importer (onnx.c) that builds one from a model file and the
 * exporter (onnx_write.c) that writes one back; the tasks
 * (tasks.c): the kernels rltune tunes, with what would fuse into them.
 * docs/graph.md describes the module.
 *
 * Conventions:
 * - A graph owns everything in it. Names, attribute values, constant data
 *   and the nodes' input / output lists live in the graph's arena and are
 *   released with it (rlt_graph_destroy); the tensor and node arrays are
 *   heap arrays that may move when something is added, so keep indices, not
 *   pointers, across calls that add.
 * - Tensors and nodes are referred to by index. An optional input or output
 *   that a node leaves out is -1.
 * - Shapes are static: every dimension is a known count >= 0 (ONNX models
 *   with symbolic dimensions are refused at import). Rank 0 is a scalar.
 * - Constant data is row-major, little-endian, of the tensor's data type
 *   (bool: one byte, 0 or 1).
 * - Threads: a graph belongs to one thread at a time; nothing is global.
 */
#ifndef RLT_GRAPH_H
#define RLT_GRAPH_H

#include "core/core.h"

#include <stdarg.h>

#define RLT_GRAPH_MAX_RANK 8                        /* dimensions of one tensor */
#define RLT_GRAPH_MAX_ELEMS ((int64_t)1 << 40)      /* elements of one tensor */
/* Constant folding makes results of at most RLT_GRAPH_FOLD_MAX_ELEMS
 * elements (all of a node's outputs together), or of at most
 * RLT_GRAPH_FOLD_WEIGHT_MAX_ELEMS when the result has at most twice the
 * elements of the node's constant inputs (64 times for Pad, which makes a
 * 3x3 to 7x7 kernel of a 1x1 one): weights computed from weights fold,
 * while a small constant blown up by Expand or ConstantOfShape does not. */
#define RLT_GRAPH_FOLD_MAX_ELEMS ((int64_t)1 << 20)
#define RLT_GRAPH_FOLD_WEIGHT_MAX_ELEMS ((int64_t)1 << 26)

/* Element types. The numbers are internal (ONNX's own codes are mapped at
 * import). */
typedef enum rlt_dtype {
    RLT_DTYPE_FLOAT32 = 0,
    RLT_DTYPE_INT64,
    RLT_DTYPE_INT32,
    RLT_DTYPE_BOOL,
    RLT_DTYPE_COUNT
} rlt_dtype;

/* "f32", "i64", "i32", "bool"; "?" for other values. */
const char *rlt_dtype_str(rlt_dtype dtype);
/* Bytes of one element: 4, 8, 4, 1; 0 for other values. */
size_t rlt_dtype_size(rlt_dtype dtype);

typedef struct rlt_graph_tensor {
    const char *name; /* arena-owned, unique in the graph */
    rlt_dtype dtype;
    bool has_shape;   /* false until shape inference reached it */
    int rank;         /* 0 .. RLT_GRAPH_MAX_RANK */
    int64_t dims[RLT_GRAPH_MAX_RANK];
    void *data;       /* arena-owned constant values, or NULL: not a constant */
    bool is_initializer; /* a constant from the model file (ONNX initializer) */
    int producer;     /* index of the node writing it; -1 for graph inputs and constants */
} rlt_graph_tensor;

typedef enum rlt_graph_attr_kind {
    RLT_GRAPH_ATTR_INT = 0,
    RLT_GRAPH_ATTR_FLOAT,
    RLT_GRAPH_ATTR_STRING,
    RLT_GRAPH_ATTR_INTS,
    RLT_GRAPH_ATTR_FLOATS,
    RLT_GRAPH_ATTR_TENSOR,
    RLT_GRAPH_ATTR_COUNT
} rlt_graph_attr_kind;

/* "int", "float", "string", "ints", "floats", "tensor". */
const char *rlt_graph_attr_kind_str(rlt_graph_attr_kind kind);

typedef struct rlt_graph_attr {
    const char *name; /* arena-owned */
    rlt_graph_attr_kind kind;
    int64_t i;              /* INT */
    float f;                /* FLOAT */
    const char *s;          /* STRING, arena-owned, NUL-terminated */
    int n_values;           /* INTS, FLOATS */
    const int64_t *ints;    /* INTS, arena-owned */
    const float *floats;    /* FLOATS, arena-owned */
    const rlt_graph_tensor *tensor; /* TENSOR: a constant outside the tensor list, arena-owned */
} rlt_graph_attr;

typedef struct rlt_graph_node {
    const char *name;    /* arena-owned; "" when the model gave none */
    const char *op_type; /* arena-owned: "Conv", "Relu", ... */
    int file_index;      /* position in the model file's node list, for messages */
    int n_inputs;
    int *inputs;         /* arena-owned tensor indices; -1: an optional input left out */
    int n_outputs;
    int *outputs;        /* arena-owned tensor indices; -1: an optional output left out */
    int n_attrs;
    rlt_graph_attr *attrs; /* arena-owned */
    bool is_removed;     /* folded into constants; rlt_graph_dce drops it */
} rlt_graph_node;

typedef struct rlt_graph {
    rlt_arena *arena;
    int opset;           /* the model's default-domain opset version */
    int n_tensors, cap_tensors;
    rlt_graph_tensor *tensors; /* heap, may move when tensors are added */
    int n_nodes, cap_nodes;
    rlt_graph_node *nodes;     /* heap, may move when nodes are added */
    int n_inputs;
    int *inputs;         /* arena-owned: tensors the caller feeds (no initializers) */
    int n_outputs;
    int *outputs;        /* arena-owned: tensors the graph computes */
    int n_slots;         /* name lookup: open addressing, tensor index + 1, 0 = empty */
    int *slots;          /* heap */
    struct rlt_graph *base; /* a clone's original (rlt_graph_clone), whose arena holds the names, attribute
                               values and constant data the clone borrows; NULL for other graphs */
    int n_clones;        /* live clones borrowing from this graph: it is freed after the last of them */
    bool is_destroyed;   /* rlt_graph_destroy was called; freed once n_clones is 0 */
} rlt_graph;

/* ---- building ------------------------------------------------------------ */

/* An empty graph for `opset` (free with rlt_graph_destroy). Fails only when
 * out of memory. */
rlt_status rlt_graph_create(int opset, rlt_graph **out, rlt_diag *diag);
void rlt_graph_destroy(rlt_graph *g); /* NULL ok */

/* A copy of g that changes independently of it (free with
 * rlt_graph_destroy): its own tensor and node arrays, input / output and
 * attribute lists, sharing g's names, attribute values and constant data,
 * which it borrows. g stays allocated until it and every clone of it are
 * destroyed (in any order), so the graphs of a search can share one
 * network's weights. What the clone adds lives in its own arena. Fails
 * only when out of memory. */
rlt_status rlt_graph_clone(const rlt_graph *g, rlt_graph **out, rlt_diag *diag);

/* The tensor of that name, or -1. */
int rlt_graph_tensor_find(const rlt_graph *g, const char *name);
/* Adds a tensor without a shape or data; its index in *out_index.
 * INVALID_ARGUMENT when the name is taken, OUT_OF_MEMORY. */
rlt_status rlt_graph_tensor_add(rlt_graph *g, const char *name, rlt_dtype dtype, int *out_index,
                                rlt_diag *diag);
/* Gives tensor `t` a shape (dims copied); INVALID_ARGUMENT for a rank over
 * RLT_GRAPH_MAX_RANK, a negative dimension or more than
 * RLT_GRAPH_MAX_ELEMS elements. */
rlt_status rlt_graph_tensor_set_shape(rlt_graph *g, int t, int rank, const int64_t *dims, rlt_diag *diag);
/* Nodes not marked removed. */
int rlt_graph_n_live_nodes(const rlt_graph *g);
/* Elements of a tensor with a shape (1 for a scalar). */
int64_t rlt_graph_tensor_n_elems(const rlt_graph_tensor *t);
/* Adds a node (its lists copied into the arena, attributes empty); sets
 * the producer of its outputs. INVALID_ARGUMENT when an index is out of
 * range or an output already has a producer. */
rlt_status rlt_graph_node_add(rlt_graph *g, const char *op_type, const char *name, int n_inputs,
                              const int *inputs, int n_outputs, const int *outputs, int *out_index,
                              rlt_diag *diag);
/* The attribute of that name on a node, or NULL. */
const rlt_graph_attr *rlt_graph_node_attr(const rlt_graph_node *node, const char *name);
/* An INT / FLOAT attribute's value, `def` when absent or of another kind;
 * an INTS attribute's values (NULL and *n = 0 when absent or another kind). */
int64_t rlt_graph_attr_int(const rlt_graph_node *node, const char *name, int64_t def);
double rlt_graph_attr_float(const rlt_graph_node *node, const char *name, double def);
const int64_t *rlt_graph_attr_ints(const rlt_graph_node *node, const char *name, int *n);

/* Fails with `status` and a message that names the node: "node I 'NAME'
 * (OP, opset N): " followed by the formatted text. */
rlt_status rlt_graph_node_fail(const rlt_graph *g, const rlt_graph_node *node, rlt_diag *diag, rlt_status status,
                               const char *fmt, ...) RLT_PRINTF(5, 6);
/* The same with a va_list (for the passes' own failure helpers). */
rlt_status rlt_graph_node_vfail(const rlt_graph *g, const rlt_graph_node *node, rlt_diag *diag, rlt_status status,
                                const char *fmt, va_list ap);

/* INVALID_ARGUMENT naming the node when its op type is not one rltune
 * supports, or needs a later opset than the graph's (attributes and inputs
 * are checked by rlt_graph_infer). */
rlt_status rlt_graph_op_check(rlt_graph *g, int node, rlt_diag *diag);

/* ---- passes ----------------------------------------------------------------- */

/* Reorders the nodes so that every node comes after the producers of its
 * inputs (stable: a sorted graph keeps its order). INVALID_ARGUMENT, naming
 * a node on it, when there is a cycle. */
rlt_status rlt_graph_sort(rlt_graph *g, rlt_diag *diag);

/* Shape and type inference over a sorted graph, folding nodes whose inputs
 * are all constant (within the limits above) into constants: Shape of any
 * tensor, and every op rlt_graph_can_eval runs (Constant, Reshape, Concat,
 * Add, Sqrt, Pow, Pad, Conv, MatMul, ...) of constants, by the op's own
 * code or by rlt_graph_eval_node. A folded node is marked removed.
 * Canonicalises attributes on the way: Conv's and the pools' auto_pad
 * becomes explicit pads.
 * INVALID_ARGUMENT naming the node, its op type and the opset for an
 * unsupported op or attribute, for inputs that do not fit and for constants
 * that cannot be computed (an integer division by zero); OUT_OF_MEMORY. */
rlt_status rlt_graph_infer(rlt_graph *g, rlt_diag *diag);

/* Removes the nodes marked removed and those whose outputs reach no graph
 * output, then the tensors nothing refers to (graph inputs stay). Tensor
 * and node indices change. Returns the number of nodes removed, or -1 when
 * out of memory (the graph is unchanged then). */
int rlt_graph_dce(rlt_graph *g);

/* The graph as text, one line per input, constant, node and output (free
 * with rlt_free; NULL when out of memory):
 *
 *     graph opset 13: 1 input, 1 output, 2 nodes, 2 constants
 *     input x f32[1,3,8,8]
 *     const w f32[4,3,3,3]
 *     node conv1 Conv(x, w) -> y f32[1,4,8,8] dilations=[1,1] group=1 ...
 *     node n1 Relu(y) -> z f32[1,4,8,8]
 *     output z f32[1,4,8,8]
 *
 * Constants print their values when they have at most 8 elements. */
char *rlt_graph_print(const rlt_graph *g);

/* Folds each BatchNormalization (inference form) into the Conv that
 * produces its input: when scale, B, mean and var are constants, the
 * Conv's weight (and bias, if any) is constant, and the Conv's output has
 * no other reader and is no graph output. The Conv gets new constant
 * tensors W' = W * s and b' = (b - mean) * s + B, s = scale /
 * sqrt(var + epsilon), per output channel (a bias is created when the Conv
 * had none; the old weight stays for its other readers), and writes the
 * BatchNormalization's output itself; the BatchNormalization is marked
 * removed (rlt_graph_dce then drops it and the tensors nothing reads).
 * A BatchNormalization whose optional statistics outputs are read is left
 * alone. Returns the number folded, or -1 when out of memory (diag says
 * so; the graph is still valid then: folds already done stay done, and
 * tensors added for an unfinished one are read by nothing). (fold.c) */
int rlt_graph_fold_batchnorm(rlt_graph *g, rlt_diag *diag);

/* ---- reference evaluation (eval.c) --------------------------------------- */

/* Evaluates a sorted, inferred graph (what rlt_graph_load_onnx returns, or
 * one after rlt_graph_fold_batchnorm / rlt_graph_dce): the reference that
 * compiled networks are checked against. Plain loops, floats accumulated
 * in double for the long sums (docs/graph.md, "Reference evaluation").
 *
 * inputs: n_inputs buffers (must equal g->n_inputs), borrowed, one per
 *   graph input in order, row-major, of the input's data type and shape.
 * outputs: room for n_outputs pointers (must equal g->n_outputs); each is
 *   set to a new buffer (free with rlt_free) holding that graph output,
 *   row-major, of its type. All are NULL after a failure.
 * Errors: INVALID_ARGUMENT (input or output counts that differ from the
 * graph's, a NULL input, a Gather index out of range, an integer division
 * by zero, a graph that is not sorted or not inferred: names the node),
 * OUT_OF_MEMORY. Intermediates are freed after their last reader. The
 * graph is not changed; one graph may be evaluated by several threads. */
rlt_status rlt_graph_eval(const rlt_graph *g, int n_inputs, const void *const *inputs, int n_outputs, void **outputs,
                          rlt_diag *diag);

/* True when rlt_graph_eval can evaluate nodes of this op type. */
bool rlt_graph_can_eval(const char *op_type);

/* Evaluates one node of a sorted, inferred graph as rlt_graph_eval does:
 * vals[t] holds tensor t's values for every input of the node (constants
 * included: pass the tensor's data) and a buffer of the tensor's size for
 * every output, which is zeroed and then written. What compiled networks
 * run for the nodes that are not tuned kernels, and what rlt_graph_infer
 * folds constants with. Errors as rlt_graph_eval's, naming the node. */
rlt_status rlt_graph_eval_node(const rlt_graph *g, int node, void **vals, rlt_diag *diag);

/* ---- tasks (tasks.c) ------------------------------------------------------ */

/* The kernels rltune tunes in a graph: each Conv, Gemm and MatMul that fits
 * a built-in op (conv2d, depthwise_conv2d, dense, matmul, batch_matmul)
 * with the elementwise nodes that directly follow it and would fuse into it
 * (its epilogue), deduplicated by (op spec, epilogue). docs/graph.md,
 * "Tasks", gives the rules. */
typedef struct rlt_graph_task {
    char spec[512];     /* canonical spec (rlt_op_spec) of the fused op: the kernel's op with
                           its epilogue (",epilogue=bias+add+relu"; dense says bias / relu
                           with its own keys) */
    char epilogue[128]; /* "" or the fused steps in order: "bias,add,relu" */
    int weight;         /* occurrences in the graph */
    double flops;       /* of one occurrence: rlt_op_flops of spec (the epilogue counted) */
    int n_nodes;
    int *nodes;         /* heap: node indices, occurrence after occurrence, each its kernel
                           node then the nodes fused into it, in graph order */
    int *starts;        /* heap: weight entries, where each occurrence begins in nodes[] */
} rlt_graph_task;

/* Nodes that are not tasks, grouped by (op type, reason). */
typedef struct rlt_graph_other {
    const char *op_type; /* borrowed from the graph */
    char reason[256];    /* "" when rltune has no op for the op type (pools, Softmax,
                            Reshape, ...); otherwise why a Conv / Gemm / MatMul does not
                            fit the op library yet ("asymmetric pads [0,0,1,1] ...") */
    int count;
    int first_node;      /* index of the first such node */
} rlt_graph_other;

typedef struct rlt_graph_tasks {
    int n_tasks;
    rlt_graph_task *tasks;   /* heap, in the order of their first occurrence */
    int n_others;
    rlt_graph_other *others; /* heap, in the order of their first occurrence */
    int block;               /* the channel block asked for (0: every activation NCHW) */
    int *tensor_block;       /* heap, per graph tensor, with block > 0: the activation's channels
                                in blocks of this many, innermost (NCHWc), or 0 (as the graph
                                says); NULL with block 0 */
} rlt_graph_tasks;

/* Extracts the tasks of a sorted, inferred graph (what rlt_graph_load_onnx
 * returns, best after rlt_graph_fold_batchnorm and rlt_graph_dce); nodes
 * marked removed are skipped. `out` is filled on success only (free with
 * rlt_graph_tasks_free); the graph is not changed. Errors: OUT_OF_MEMORY,
 * INVALID_ARGUMENT for a graph that is not inferred. */
rlt_status rlt_graph_tasks_extract(const rlt_graph *g, rlt_graph_tasks *out, rlt_diag *diag);

/* The same with activations in blocks of `block` channels (NCHWc, the
 * layout of oneDNN's and ONNX Runtime's convolutions) wherever every node
 * that touches them can run so: conv2d kernels read and write either
 * layout (their specs say which: iblock=, oblock=), MaxPool, AveragePool,
 * Relu-like and same-shaped elementwise nodes, Concat and Split of whole
 * channel blocks keep their input's layout, GlobalAveragePool reads
 * either; graph inputs and outputs, and every tensor another node reads,
 * stay NCHW. out->tensor_block says which tensors are blocked.
 * docs/graph.md, "Blocked layouts", gives the rules. block 0 is
 * rlt_graph_tasks_extract. */
rlt_status rlt_graph_tasks_extract_blocked(const rlt_graph *g, int block, rlt_graph_tasks *out, rlt_diag *diag);
void rlt_graph_tasks_free(rlt_graph_tasks *t); /* frees what extract made; NULL ok */

/* True when tensor c (constant or not), broadcast against `out`, holds one
 * value per output channel (channel_axis of out; every other dimension 1):
 * what tasks fuse as a bias. */
bool rlt_graph_is_per_channel(const rlt_graph_tensor *c, const rlt_graph_tensor *out, int channel_axis);

/* A name for a node in messages and task lists: its own name, or its first
 * output tensor's name when the model gave none. Borrowed from the graph. */
const char *rlt_graph_node_label(const rlt_graph *g, int node);

/* ---- ONNX import (onnx.c) ------------------------------------------------ */

/* ONNX's TensorProto.DataType codes rltune reads: 1 (FLOAT), 6 (INT32),
 * 7 (INT64), 9 (BOOL). False for the others. */
bool rlt_dtype_from_onnx(int64_t code, rlt_dtype *out);
/* ONNX's name of a TensorProto.DataType code, for messages: "FLOAT16",
 * "FLOAT8E4M3FN", ... (up to 28, FLOAT6E3M2); "unknown" for others. */
const char *rlt_dtype_onnx_name(int64_t code);

/* Reads an ONNX model (.onnx, protobuf) into a graph: sorted, shapes
 * inferred, constant shape subgraphs folded, dead nodes removed. Opsets 9 to
 * 17 of the default domain; the ops and limits are in docs/graph.md.
 * `*out` is set on success only (free with rlt_graph_destroy).
 * Errors: IO_ERROR (cannot read), PARSE_ERROR (not a protobuf ModelProto,
 * or a tensor whose data does not match its shape), INVALID_ARGUMENT
 * (what rltune does not support: an op, an attribute, a data type, a
 * symbolic dimension, external data; names the node, op type and opset). */
rlt_status rlt_graph_load_onnx(const char *path, rlt_graph **out, rlt_diag *diag);
/* The same from bytes in memory (borrowed for the call); `source` names them
 * in messages (may be NULL). */
rlt_status rlt_graph_load_onnx_bytes(const void *data, size_t len, const char *source, rlt_graph **out,
                                     rlt_diag *diag);

/* Decodes one serialized ONNX TensorProto (what ONNX's backend tests keep in
 * test_data_set_N/input_K.pb and output_K.pb) with the importer's rules
 * (data types, raw or typed data, its length checked against the shape):
 * out's dtype, rank and dims are set, out->data is a new buffer of its
 * values (free with rlt_free), out->name is NULL. `data` is borrowed for the
 * call; `source` names it in messages (may be NULL). `*out` is set on
 * success only. Errors: PARSE_ERROR (not a TensorProto, data that does not
 * fit), INVALID_ARGUMENT (a data type rltune does not read, external
 * data), OUT_OF_MEMORY. */
rlt_status rlt_graph_tensor_decode_onnx(const void *data, size_t len, const char *source, rlt_graph_tensor *out,
                                        rlt_diag *diag);

/* ---- ONNX export (onnx_write.c) ------------------------------------------ */

/* Encodes a sorted, inferred graph (what rlt_graph_load_onnx returns,
 * possibly changed by passes) as an ONNX ModelProto that ONNX's checker
 * and ONNX Runtime accept: IR version of the opset (9 -> 4 ... 15..17 ->
 * 8), producer "rltune", the default domain at g->opset (and com.microsoft
 * 1 for Gelu); the graph inputs, the constants that written nodes read or
 * that are graph outputs as initializers (raw_data), the nodes not marked
 * removed in graph order, value_info for their outputs, and the outputs,
 * with types and shapes. Operands in the attribute form that g->opset
 * takes as inputs (Split's split and Squeeze / Unsqueeze's axes from
 * opset 13, Slice's starts / ends / axes from 10, Clip's min / max from
 * 11, Dropout's ratio from 12) become new initializers named
 * "LABEL_OPERAND" (made unique), and constant inputs of those ops become
 * attributes before those opsets (docs/graph.md, "Writing ONNX").
 * `*out` is set on success only, to a new buffer of *out_len bytes (free
 * with rlt_free); the graph is borrowed and not changed.
 * Errors: INVALID_ARGUMENT (what ONNX cannot express: an opset outside 9
 * to 17, a node reading a tensor that nothing written defines or before
 * its producer, an operand given both ways, Gelu approximate='tanh', a
 * model of 2 GiB or more; names the node or tensor), OUT_OF_MEMORY. */
rlt_status rlt_graph_to_onnx_bytes(const rlt_graph *g, void **out, size_t *out_len, rlt_diag *diag);
/* rlt_graph_to_onnx_bytes into the file at `path`, written to a temporary
 * file beside it and renamed, so a failure leaves no partial file. Errors
 * as rlt_graph_to_onnx_bytes's, and IO_ERROR naming the path. */
rlt_status rlt_graph_write_onnx(const rlt_graph *g, const char *path, rlt_diag *diag);

#endif /* RLT_GRAPH_H */
