/*
 * net_internal.h - the insides of a compiled network (struct rlt_net), for
 * the files of src/net/ that walk one: net.c compiles and runs it,
 * net_export.c writes it out as a stand-alone C library. Nothing outside
 * src/net/ includes this header.
 *
 * A net is a program of steps over one arena of activations. Every graph
 * tensor the program touches has a value in vals[]: a constant's data
 * (read in place), its block of the arena (placed by the memory plan), or
 * NULL. A kernel step calls a fused kernel with its op's tensors (graph
 * tensors, or buffers the compile made: transposed or scaled weights,
 * merged biases), a step of another node runs its fast op (ops_run.h) or
 * the evaluator, and a view runs nothing (its output is its input's
 * block), nor does a Concat or Split placed in place (its parts are
 * slices of one block).
 */
#ifndef RLT_NET_INTERNAL_H
#define RLT_NET_INTERNAL_H

#include "codegen/codegen.h"
#include "net/net.h"
#include "net/ops.h"

#define RLT_NET_ALIGN 64 /* bytes: arena blocks, buffers and workspaces */

typedef size_t (*rlt_net_workspace_fn)(void);
typedef void (*rlt_net_kernel_fn)(float *const *tensors, void *workspace, int n_threads);

/* A task's kernel, shared by its occurrences. */
typedef struct net_kernel {
    rlt_op *op;         /* the fused op (owned) */
    rlt_kernel_src src; /* its generated source (owned) */
    const char *cc;     /* the compiler its configuration chose (static string); NULL: the options' */
    void *lib;          /* dlopen handle (owned) */
    rlt_net_kernel_fn run, prepare;
    size_t workspace_bytes;
} net_kernel;

/* An op tensor of an occurrence: a graph tensor, or a buffer made here. */
typedef struct net_bound {
    int tensor;   /* graph tensor, or -1 */
    float *buf;   /* when tensor is -1: owned by the net (in allocs), rlt_op_tensor_size floats */
} net_bound;

typedef struct net_step {
    int task;     /* -1: a node run by rltune's own code (fast, or else the evaluator's) */
    rlt_fast_op *fast; /* task -1: its fast implementation (owned), or NULL: the evaluator's */
    bool is_view; /* task -1: its output shares its input's buffer; nothing to run */
    int node;     /* the kernel node, or the evaluated node */
    int n_nodes;
    net_bound bind[RLT_MAX_TENSORS]; /* kernel: the op's tensors, in the op's order */
    int out;      /* kernel: the graph tensor the fused kernel writes */
    float *tensors[RLT_MAX_TENSORS]; /* kernel: bind[] resolved to buffers */
    void *workspace;
    bool is_prepared_each_run; /* a weight is computed by the network: pack it on every run */
    double total_ns;
} net_step;

struct rlt_net {
    const rlt_graph *g;   /* borrowed */
    int n_threads;
    char *cc, *cflags;    /* the compiler command and flags the kernels were built with (owned) */
    int n_tasks;
    rlt_net_task *tasks;
    net_kernel *kernels;  /* one per task */
    int n_steps;
    net_step *steps;
    void **vals;          /* per tensor: its constant data, or its place in the arena, or NULL */
    int *alias;           /* per tensor: the tensor whose block it lives in (a view's input, a Concat's
                             output, a Split's input), or itself; after the memory plan, the block's
                             owner (its root) */
    int64_t *alias_off;   /* per tensor: its byte offset in that tensor's buffer (a Concat's part, a
                             Split's output; after the memory plan, in the root's), or 0 */
    int channel_block;    /* the layout compiled: rlt_net_options.channel_block, auto resolved */
    double layout_est_ms[2]; /* with RLT_NET_BLOCK_AUTO: the records' estimates of NCHW and blocked */
    int *tensor_block;    /* per tensor: its channels in blocks of this many (NCHWc), or 0; NULL
                             when the net is NCHW throughout (graph/tasks.c's blocked layouts) */
    void *arena_raw;
    char *arena;          /* arena_raw aligned to RLT_NET_ALIGN: vals[t] - arena is t's offset */
    int64_t arena_bytes;
    void **allocs;        /* buffers made here (aligned pointers' raw allocations) */
    int n_allocs, cap_allocs;
    int64_t extra_bytes;
    bool is_profiling;
    double compile_s;
};

#endif /* RLT_NET_INTERNAL_H */
