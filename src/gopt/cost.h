/*
 * cost.h - what a graph costs to run, from measured kernels: the cost
 * model of the graph-substitution searches (gopt.h).
 *
 * A graph's cost is the sum of its steps' times, its steps being what
 * rlt_net_compile would make of it: a kernel per task occurrence (graph
 * tasks: a Conv / Gemm / MatMul with its fused epilogue), a fast op (or the
 * evaluator) per other live node, nothing for views and for Concats and
 * Splits placed in place. A task's time is its best record in the records database (the
 * fused op's, else the op's without its epilogue, as the net compiler
 * chooses), else its seed schedule's, measured once (built and run by the
 * measurement runner) and cached; a fast op's time is measured once in
 * this process per (op type, attributes, input and output types and
 * shapes, which inputs are constant, and the values of constants of at
 * most 8 elements: Pow's exponent picks its loop) and cached, the
 * evaluator's likewise for a node without a fast op. So evaluating a graph
 * measures only what no graph before it had, and most rewrites cost
 * nothing to evaluate. docs/graph-opt.md, "Cost", gives the details.
 *
 * Threads: a cost model belongs to one thread at a time. At several
 * threads, what runs parallel loops in this process (a fast op timed, a
 * network measured) runs them on a thread of its own that ends before the
 * call returns: a thread that ran an OpenMP parallel region keeps a pool of
 * threads which a forked child inherits without the threads, so the
 * measurement runner's child (the seeds' runs) would hang in its own first
 * parallel region. A caller that runs parallel loops on its own thread (a
 * network at several threads) before seeds are measured meets the same.
 */
#ifndef RLT_GOPT_COST_H
#define RLT_GOPT_COST_H

#include "graph/graph.h"
#include "rltune/graph_opt.h"
#include "rltune/measure.h"
#include "rltune/model.h"

typedef struct rlt_gcost_options {
    const char *db_path;   /* records database to take task times from, or NULL; when given, seed
                              measurements are stored in it as records (never lost, and the next run
                              reads them) */
    int n_threads;         /* threads the kernels and fast ops run on, >= 1 */
    rlt_build_opts build;  /* how kernels are compiled (compiler, flags, cache) */
    int repeat;            /* timed runs of a fast op (median taken), >= 1 (default 15) */
    uint64_t seed;         /* inputs of the measurements */
    bool cold_weights;     /* tasks timed with their weights evicted (rlt_run_opts.cold_weights):
                              cold records, seeds measured cold */
    int n_seeds;           /* a task without a record costs the best of its first n_seeds rule-built
                              seeds, each measured and stored, 1 .. RLT_NET_MAX_SEEDS (default
                              RLT_GCOST_SEEDS) */
} rlt_gcost_options;

/* The seeds measured per task by default (rltune/graph_opt.h): the first
 * seed of each of the space's vectorized axes and the next by rating, as
 * rlt_space_seeds orders them (docs/graph-opt.md, "Cost", says why). */
#define RLT_GCOST_SEEDS RLT_GRAPH_COST_SEEDS

/* The seeds a search costs a task by: n_seeds when given (not 0), else
 * RLT_GCOST_SEEDS with a database and 1 without (rlt_graph_opt_options). */
static inline int rlt_graph_cost_seeds(int n_seeds, const char *db_path)
{
    return n_seeds ? n_seeds : db_path ? RLT_GCOST_SEEDS : 1;
}

/* Defaults: no database, 1 thread, default build, 15 repeats, seed 1, RLT_GCOST_SEEDS seeds. */
void rlt_gcost_options_init(rlt_gcost_options *o);

typedef struct rlt_gcost rlt_gcost;

/* What a cost model has done so far. */
typedef struct rlt_gcost_stats {
    int n_graphs;            /* rlt_gcost_graph calls that succeeded: the searches' cost evaluations */
    int n_tasks_from_records;/* distinct task specs timed by a record */
    int n_tasks_measured;    /* distinct task specs whose seed schedules were built and run */
    int n_seeds_measured;    /* the seed schedules built and run (up to n_seeds a task) */
    int n_ops_measured;      /* distinct fast-op keys timed */
    double measure_s;        /* wall time spent building and measuring (seeds: their references too) */
} rlt_gcost_stats;

/* A cost model (free with rlt_gcost_destroy); the options are copied
 * (db_path and the build strings too). Errors: INVALID_ARGUMENT (options),
 * IO_ERROR (the database cannot be opened), OUT_OF_MEMORY. */
rlt_status rlt_gcost_create(const rlt_gcost_options *o, rlt_gcost **out, rlt_diag *diag);
void rlt_gcost_destroy(rlt_gcost *c); /* NULL ok */

/* The cost of graph g (sorted, inferred; borrowed for the call) in
 * milliseconds, *total_ms (0 on failure); per_node_ms, when not NULL, gets
 * g->n_nodes entries: a task occurrence's time on its kernel node, 0 on the
 * nodes fused into it, views, in-place Concats, folded and removed nodes
 * (all 0 on failure). Measures what the caches lack: every seed not timed
 * yet in one batch (built together, then run one at a time), each stored
 * as a record when there is a database (before any failure is reported).
 * Errors: INVALID_ARGUMENT (a node rltune cannot run, naming it; a
 * constant graph input), BUILD_ERROR (a seed kernel failed to build or
 * run: names the task and the run's status), the reference's status
 * (BUILD_*, RUN_*: a task's reference kernel, naming the task), IO_ERROR
 * (the database), OUT_OF_MEMORY. */
rlt_status rlt_gcost_graph(rlt_gcost *c, const rlt_graph *g, double *total_ms, double *per_node_ms,
                           rlt_diag *diag);

void rlt_gcost_stats_get(const rlt_gcost *c, rlt_gcost_stats *out);

/* Compiles g as a network with the options' database, threads and build
 * (rlt_net_compile), and times it with rlt_net_time on seeded random
 * inputs (rlt_model_random_inputs's, of o->seed), its outputs not checked:
 * what "measured latency" means for graph-opt. t: as rlt_net_time takes
 * them (NULL: the defaults), pinned only at one thread (as `rltune run`
 * times). o->repeat is not used. Errors: INVALID_ARGUMENT (the thread
 * count), rlt_net_compile's and rlt_net_time's. */
rlt_status rlt_gcost_measure(const rlt_gcost_options *o, const rlt_graph *g, const rlt_net_timing_options *t,
                             rlt_net_timing *out, rlt_diag *diag);

#endif /* RLT_GOPT_COST_H */
