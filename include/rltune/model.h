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
#include "rltune/measure.h"
#include "rltune/npy.h"
#include "rltune/session.h"

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

/* The bytes of the constants the model's nodes read (weights, biases,
 * folded tables), each once. */
RLT_API int64_t rlt_model_weights_bytes(const rlt_model *m);

RLT_API int rlt_model_n_nodes(const rlt_model *m);
RLT_API int rlt_model_n_inputs(const rlt_model *m);
RLT_API int rlt_model_n_outputs(const rlt_model *m);

/* A task: one distinct kernel rltune tunes, and how often the network runs
 * it. */
typedef struct rlt_task {
    char spec[512];     /* the canonical spec of the fused op, e.g. "conv2d:N=1,C=64,...,
                           epilogue=bias+relu": what `rltune tune --op` takes and records are
                           filed under */
    char epilogue[128]; /* what fuses into the kernel, in order, comma-separated: "bias",
                           "add" (a residual), "relu", "relu6" (Clip 0..6); "" for none */
    int weight;         /* occurrences in the network (>= 1) */
    double flops;       /* of one occurrence: rlt_op_flops of spec (the epilogue counted) */
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

/* The same with activations in blocks of channel_block channels where the
 * layout rules allow (rlt_net_options.channel_block): the tasks a network
 * compiled so runs, conv2d's specs with iblock= / oblock=. 0 is
 * rlt_model_tasks. Errors: INVALID_ARGUMENT (a block outside 0..64),
 * OUT_OF_MEMORY. */
RLT_API rlt_status rlt_model_tasks_blocked(rlt_model *m, int channel_block, rlt_task **out, int *out_n,
                                           rlt_diag *diag);

/* The channel block of this machine's blocked layout: the floats of its
 * widest vector register (16 with AVX-512, 8 with AVX2, else 4). */
RLT_API int rlt_model_channel_block(void);

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

/* ---- inputs, outputs and the reference ----------------------------------- */

/* A graph input or output: its name, element type and static shape. */
typedef struct rlt_model_tensor {
    char name[256];
    rlt_elem elem;
    int rank;
    int64_t dims[RLT_ARRAY_MAX_RANK];
} rlt_model_tensor;

/* Input / output i (0 <= i < the count) described in *out. */
RLT_API void rlt_model_input(const rlt_model *m, int i, rlt_model_tensor *out);
RLT_API void rlt_model_output(const rlt_model *m, int i, rlt_model_tensor *out);

/* A seeded input for every graph input (room for rlt_model_n_inputs
 * arrays in `out`; free each with rlt_array_destroy): f32 uniform in
 * [-1, 1) (input i from its own stream of `seed`), integer and bool
 * inputs zero. OUT_OF_MEMORY; all NULL on failure. */
RLT_API rlt_status rlt_model_random_inputs(const rlt_model *m, uint64_t seed, rlt_array **out, rlt_diag *diag);

/* Runs the graph with rltune's reference evaluator (plain loops, long sums
 * in double: docs/graph.md): what compiled networks are checked against.
 * inputs: one array per graph input, in order, of its element type and
 * shape (borrowed). outputs: room for one array per graph output; each is
 * set to a new array (free with rlt_array_destroy), all NULL on failure.
 * Errors: INVALID_ARGUMENT (a missing array, one of another type or shape:
 * the message names the input; a run-time error of a node), OUT_OF_MEMORY
 * (kept as m's last error). */
RLT_API rlt_status rlt_model_evaluate(rlt_model *m, const rlt_array *const *inputs, rlt_array **outputs,
                                      rlt_diag *diag);

/* ---- compiled networks ------------------------------------------------------ */

/* A model compiled to a program that runs in this process: one kernel per
 * task (the fused op's schedule from the best record of a records
 * database, else the best record of the op without its epilogue, else the
 * first rule-built seed of its search space), and rltune's own code for
 * the other nodes; activations in one buffer placed by a static memory
 * plan. docs/net.md describes it. */
typedef struct rlt_net rlt_net;

typedef struct rlt_net_options {
    const char *db_path;  /* records to take schedules from; NULL: seeds only */
    int n_threads;        /* threads kernels are compiled for, looked up under and run with (>= 1) */
    rlt_build_opts build; /* compiler, flags, kernel cache (as for tuning: records are looked up
                             under the target these make) */
    bool cold_weights;    /* schedules from the records timed cold, as the network runs its
                             kernels (rlt_run_opts.cold_weights: weights, workspace and output
                             evicted before every call), a task without any from the warm ones;
                             false: the warm ones only */
    int channel_block;    /* activations in blocks of this many channels, innermost (NCHWc), where
                             every node that touches them can run so (docs/net.md, "Blocked
                             layouts"); the conv2d tasks' specs say iblock= / oblock=. 0: NCHW
                             throughout. rlt_model_channel_block gives the machine's.
                             RLT_NET_BLOCK_AUTO: the layout (NCHW, or the machine's block) whose
                             tasks' records estimate the lower latency when both are fully
                             tuned, else the one tuned further (share of FLOPs with records),
                             NCHW on a tie */
} rlt_net_options;

#define RLT_NET_BLOCK_AUTO (-1)

/* Defaults: no database, 1 thread, the default compiler, cold records first,
 * the layout chosen from the records (RLT_NET_BLOCK_AUTO). */
RLT_API void rlt_net_options_init(rlt_net_options *o);

/* Compiles m (borrowed: it must outlive the net). Errors: INVALID_ARGUMENT
 * (options; a node rltune cannot run), IO_ERROR / INVALID_ARGUMENT (the
 * database), BUILD_ERROR (a kernel failed to compile or load: the message
 * names its task), OUT_OF_MEMORY; kept as m's last error. *out is set on
 * success only (free with rlt_net_destroy). */
RLT_API rlt_status rlt_model_compile(rlt_model *m, const rlt_net_options *o, rlt_net **out, rlt_diag *diag);
RLT_API void rlt_net_destroy(rlt_net *n); /* NULL ok */

/* Runs the network once. inputs: one array per graph input, in order, of
 * its type and shape (borrowed); outputs: one array per graph output, of
 * its type and shape (rlt_array_create), overwritten. Nothing is allocated,
 * so a timed call times the network alone. Errors: INVALID_ARGUMENT (an
 * array missing or of another type or shape, naming it; a node's run-time
 * error, naming the node). Threads: one call on a net at a time. At
 * several threads the kernels' OpenMP threads stay bound to the calling
 * thread: a kernel measured later in a child that thread forks (a tuning
 * session's runner) waits for them until its timeout, so run nets on
 * another thread than the one that tunes (rlt_net_time does so itself;
 * docs/net.md, "OpenMP and forked children"). */
RLT_API rlt_status rlt_net_run(rlt_net *n, const rlt_array *const *inputs, rlt_array *const *outputs,
                               rlt_diag *diag);

/* While profiling is on, every run adds each step's wall time to its
 * total_ms; turning it on clears the totals. */
RLT_API void rlt_net_profile(rlt_net *n, bool on);

/* Where a task's schedule came from. */
typedef enum rlt_net_origin {
    RLT_NET_FROM_RECORD = 0,  /* the best OK record of the fused op on this target */
    RLT_NET_FROM_BASE_RECORD, /* the best OK record of the op without its epilogue */
    RLT_NET_FROM_SEED         /* untuned: the first rule-built seed of its space */
} rlt_net_origin;

/* A compiled task. */
typedef struct rlt_net_task {
    char spec[512];         /* the fused op (rlt_task.spec) */
    int weight;             /* occurrences */
    double flops;           /* of one occurrence */
    rlt_net_origin origin;
    int64_t record_id;      /* the record's id (0 for a seed) */
    double record_ms;       /* the record's median time (0 for a seed) */
} rlt_net_task;

/* One step of the program: a fused kernel, or a node rltune's own code runs. */
typedef struct rlt_net_step {
    const char *name;  /* the (kernel) node's label; borrowed from the net */
    const char *what;  /* a kernel's fused op spec, or the node's op type; borrowed */
    int task;          /* index of the task, or -1 */
    int n_nodes;       /* graph nodes the step runs (a kernel and its epilogue) */
    double flops;      /* a kernel's FLOPs; 0 otherwise */
    double total_ms;   /* wall time over the profiled runs */
} rlt_net_step;

RLT_API int rlt_net_n_tasks(const rlt_net *n);
RLT_API void rlt_net_task_get(const rlt_net *n, int i, rlt_net_task *out);
RLT_API int rlt_net_n_steps(const rlt_net *n);
RLT_API void rlt_net_step_get(const rlt_net *n, int i, rlt_net_step *out);
/* The activations' buffer (the memory plan's peak), and the bytes compiling
 * added beside the model's weights: weights transposed or scaled, biases,
 * kernels' workspaces (packed weights). */
RLT_API int64_t rlt_net_activation_bytes(const rlt_net *n);
/* The channel block the net was compiled with (auto resolved; 0: NCHW). */
RLT_API int rlt_net_channel_block(const rlt_net *n);
/* With RLT_NET_BLOCK_AUTO, the records' latency estimates it chose by:
 * est_ms[0] NCHW, est_ms[1] blocked (infinite: a task untuned); NaN when
 * the layout was given. */
RLT_API void rlt_net_layout_estimates(const rlt_net *n, double est_ms[2]);
RLT_API int64_t rlt_net_extra_bytes(const rlt_net *n);
/* Wall time the compile took, in seconds. */
RLT_API double rlt_net_compile_s(const rlt_net *n);

/* ---- exporting a compiled network ----------------------------------------------- */

/* A compiled network written out as a stand-alone C library that needs
 * nothing of rltune to build or run (docs/formats.md, "Exported networks";
 * `rltune export --model`): in o->dir, NAME.h (create / run / destroy, the
 * inputs' and outputs' names, types and shapes), NAME.c (the program: where
 * every tensor lives, the steps), NAME_kernels_K.c (the tuned kernels),
 * ops_run.c and ops_run.h (rltune's fast ops, verbatim), the weights
 * (NAME.weights, read by create; or compiled in, NAME_weights.c), a
 * Makefile (`make` builds libNAME.so, `make check` runs the example) and
 * example.c, which runs the library on input_I.npy and checks its outputs
 * against expected_I.npy (rltune's reference evaluation of the graph on
 * that input) within 1e-4 of the largest reference value, as `rltune run`
 * checks. */
typedef struct rlt_model_export_options {
    const char *dir;      /* created if absent (with its parents); the files named above are replaced */
    const char *name;     /* the library's name: [a-z_][a-z0-9_]*, at most 100 characters (NULL:
                             "rltune_net") */
    const char *origin;   /* a line for the files' comments, e.g. the model's path (may be NULL) */
    bool embed_weights;   /* compile the weights into the library (NAME_weights.c; create then
                             takes no path) instead of writing NAME.weights: for small models only
                             (ResNet-50's 100 MB become 400 MB of C) */
    uint64_t seed;        /* the example's input: rlt_model_random_inputs(m, seed, ...) */
} rlt_model_export_options;

/* Defaults: no directory (to be set), name NULL, weights in a file, seed 0. */
RLT_API void rlt_model_export_options_init(rlt_model_export_options *o);

typedef struct rlt_model_export_result {
    char name[128];         /* the library's name */
    int n_steps;            /* steps the library runs: kernels and fast ops (views run nothing) */
    int n_kernel_steps;     /* fused kernels called */
    int n_kernels;          /* distinct kernels compiled (the tasks') */
    int n_fast_ops;         /* steps on rltune's fast ops */
    int n_views;            /* views: their output is their input's buffer */
    int n_other_cc;         /* tasks whose record chose another compiler (cc=clang) than the
                               export's: compiled with the export's all the same */
    int n_kernel_files;     /* NAME_kernels_1.c ... */
    int64_t weights_bytes;  /* the weights' payload: constants, buffers the compile made, fast ops */
    int64_t arena_bytes;    /* the activations' buffer create allocates */
    bool needs_openmp;      /* a kernel has a parallel loop: the library links OpenMP */
    char cc[256];           /* the compiler and flags the Makefile uses: the net's (rlt_net_options.build) */
    char cflags[512];
} rlt_model_export_result;

/* Writes net, compiled from m (rlt_model_compile), as a stand-alone C
 * library in o->dir (above), with an example input drawn from o->seed and
 * the expected outputs from rlt_model_evaluate. Kernels come from the net:
 * its tasks' records or seeds; every kernel is compiled with the net's
 * compiler and flags. Nothing is built here: `make -C DIR check` builds the
 * library and runs the example. Errors: INVALID_ARGUMENT (net not compiled
 * from m; no dir; a bad name; a node the net runs on rltune's reference
 * evaluator, which the library does not carry: the message names the node
 * and its op type, and nothing is written), IO_ERROR (a file cannot be
 * written, naming it), OUT_OF_MEMORY; kept as m's last error. *out is
 * filled on success. Threads: not while net runs. */
RLT_API rlt_status rlt_model_export(rlt_model *m, const rlt_net *net, const rlt_model_export_options *o,
                                    rlt_model_export_result *out, rlt_diag *diag);

/* ---- tuning a whole network ---------------------------------------------------- */

/* A network's tasks tuned from one budget of trials by Ansor's
 * gradient-based task scheduler: after a warm-up round of every task, each
 * round (one batch of one task's tuning session) goes to the task whose
 * tuning is expected to cut the network's latency estimate, sum over tasks
 * of weight x best time, the most (docs/net.md, "Tuning a network"). Every
 * measurement goes to the records database, which `rlt_model_compile`
 * then takes the schedules from. A rerun continues: what the database
 * holds for the tasks counts toward the budget and is where each task's
 * tuning starts from.
 *
 *     rlt_model_tune_options o;
 *     rlt_model_tune_options_init(&o);
 *     o.n_trials = 512; o.session.db_path = "rltune.db";
 *     rlt_model_tuning *t;
 *     rlt_model_tuning_open(m, &o, &t, &d);
 *     while (!rlt_model_tuning_is_done(t) && rlt_model_tuning_step(t, &d) == RLT_STATUS_OK) { ... }
 *     rlt_model_tuning_finish(t, &d);
 *     rlt_model_tuning_destroy(t);
 */
typedef struct rlt_model_tuning rlt_model_tuning;

typedef struct rlt_model_tune_options {
    /* Every task's session: tuner, batch_size (one round), seed, n_threads,
     * build, run, db_path (required), n_seeds, n_final, the tuner's
     * hyper-parameters, stop. Its n_trials, replay_path, transfer_path,
     * agent_in, agent_out, start_key, policy_path and progress are not used
     * (must be unset: NULL or the default). */
    rlt_session_options session;
    int n_trials;     /* the network's budget: trials over all tasks, the records the database
                         already holds for them on this target included, so that a rerun of an
                         interrupted run finishes it and a rerun of a finished one measures
                         nothing (>= 1; whole rounds: the last may pass it by less than a batch) */
    bool no_transfer; /* tuners with a cost model (xgb, xgb-rank, ppo) warm-start from the records
                         of the other tasks of their op kind in db_path unless this is set */
    int channel_block; /* the tasks of the network compiled with this rlt_net_options.channel_block
                          (0: NCHW throughout) */
} rlt_model_tune_options;

/* Defaults: the session's (xgb-rank, batches of 16, ...) but kernels timed
 * cold, as the network runs them (session.run.cold_weights), 1000 trials,
 * transfer on, db_path NULL (to be set). */
RLT_API void rlt_model_tune_options_init(rlt_model_tune_options *o);

/* Reads what the database already holds for each task on this target.
 * Sessions open when their task is first picked. m is borrowed and must
 * outlive the tuning. Errors: INVALID_ARGUMENT (options), IO_ERROR /
 * INVALID_ARGUMENT (the database), OUT_OF_MEMORY; kept as m's last error. */
RLT_API rlt_status rlt_model_tuning_open(rlt_model *m, const rlt_model_tune_options *o, rlt_model_tuning **out,
                                         rlt_diag *diag);

/* One round: the scheduler picks a task, its session (opened now if it is
 * the task's first) tunes one batch. Errors: a session's (the failing task
 * named), INVALID_ARGUMENT after the end; what was measured is stored. */
RLT_API rlt_status rlt_model_tuning_step(rlt_model_tuning *t, rlt_diag *diag);

/* The budget is spent, every task is done, or the stop flag was raised. */
RLT_API bool rlt_model_tuning_is_done(const rlt_model_tuning *t);

/* Ends every opened session (each measures its best few again: the final
 * pick, rlt_session_options.n_final). Call once, after the last step. */
RLT_API rlt_status rlt_model_tuning_finish(rlt_model_tuning *t, rlt_diag *diag);

RLT_API void rlt_model_tuning_destroy(rlt_model_tuning *t); /* NULL ok */

/* The message of the last failed call ("" when none). */
RLT_API const char *rlt_model_tuning_last_error(const rlt_model_tuning *t);

/* One point of the latency estimate over tuning. */
typedef struct rlt_latency_point {
    int n_trials;      /* new measurements so far */
    double wall_s;     /* since open */
    double latency_ms; /* sum of weight x best time; INFINITY while a task has none */
} rlt_latency_point;

typedef struct rlt_model_tuning_summary {
    int n_tasks;
    int n_trials;        /* new measurements so far, every task's */
    int n_budget;        /* the options' n_trials (records at open count toward it) */
    int n_rounds;        /* rounds so far (steps) */
    int n_recorded;      /* OK and failed records the database held for the tasks at open */
    int last_task;       /* the task of the last round; -1 before the first */
    double wall_s;
    double latency_ms;   /* the estimate now (as above) */
    double latency_ms_at_open; /* from the records at open (INFINITY when a task had none) */
    int n_points;
    const rlt_latency_point *curve; /* after every round; borrowed, valid until the next call */
    bool was_stopped;
} rlt_model_tuning_summary;

RLT_API void rlt_model_tuning_summary_get(const rlt_model_tuning *t, rlt_model_tuning_summary *out);

/* One task as the tuning sees it. */
typedef struct rlt_tuning_task {
    char spec[512];    /* the fused op */
    int weight;
    double flops;
    int n_rounds;      /* rounds it got */
    int n_trials;      /* new measurements */
    int n_from_siblings; /* configurations it evaluated from its siblings' best (the same op with
                            another epilogue; measured, or read back when measured before) */
    int n_recorded;    /* records on this target at open */
    double best_ms;    /* best time (records at open, or measured since); INFINITY: none */
    double gradient;   /* the scheduler's last estimate (more negative: more to gain); 0 before */
    bool is_done;
} rlt_tuning_task;

RLT_API void rlt_model_tuning_task_get(const rlt_model_tuning *t, int i, rlt_tuning_task *out);

/* ---- timing a compiled network (src/api/model_bench.c) ---------------------- */

/* The check of a network's outputs against the reference: correct when the
 * largest |output - reference| over every f32 element is within this
 * fraction of the largest |reference| (issue 27's bar against ONNX
 * Runtime); integer and bool outputs must match exactly. */
#define RLT_NET_CHECK_TOLERANCE 1e-4

/* How rlt_net_time times a network: what `rltune run` does. */
typedef struct rlt_net_timing_options {
    int n_warmup;     /* untimed runs first, >= 0 (default 2); the first run of all is the checked one */
    int repeat;       /* timed runs, >= 1 (default 10) */
    bool is_pinned;   /* the calling thread is pinned to the CPU it is on while timing, its affinity
                         restored after (default true; for a network compiled for one thread:
                         steadier timings) */
    bool is_profiled; /* the net's profile (rlt_net_profile) is turned on for the timed runs only */
} rlt_net_timing_options;

/* Defaults: 2 warm-up runs, 10 timed runs, pinned, no profile. */
RLT_API void rlt_net_timing_options_init(rlt_net_timing_options *o);

typedef struct rlt_net_timing {
    double median_ms, min_ms; /* over the timed runs (the median of an even count: the mean of the middle two) */
    int repeat;               /* timed runs */
    bool is_checked;          /* a reference was given: the first run's outputs were compared */
    bool is_correct;          /* within RLT_NET_CHECK_TOLERANCE (false when not checked) */
    double max_error;         /* largest |output - reference| (INFINITY: an integer output differs,
                                 or a NaN) */
    double max_reference;     /* largest |reference| */
} rlt_net_timing;

/* Runs n on `inputs` into `outputs` (as rlt_net_run: borrowed, one array per
 * graph input / output) n_warmup + repeat times, times the last `repeat`
 * with a monotonic clock, and, when `reference` (one array per graph
 * output, as rlt_model_evaluate makes them; may be NULL) is given, compares
 * the first run's outputs with it (rlt_net_outputs_compare). o may be NULL
 * (the defaults). Errors: INVALID_ARGUMENT (options out of range; a run's,
 * as rlt_net_run's), OUT_OF_MEMORY; *out is filled on success. Threads: as
 * rlt_net_run; pinning changes the calling thread's CPU affinity while it
 * runs. */
RLT_API rlt_status rlt_net_time(rlt_net *n, const rlt_array *const *inputs, rlt_array *const *outputs,
                                const rlt_array *const *reference, const rlt_net_timing_options *o,
                                rlt_net_timing *out, rlt_diag *diag);

/* The largest |out - ref| and |ref| over the f32 arrays of out[0 .. n) and
 * ref[0 .. n) (the same types and shapes); an integer or bool pair that
 * differs anywhere, or a NaN, makes *max_error INFINITY. */
RLT_API void rlt_net_outputs_compare(int n, const rlt_array *const *out, const rlt_array *const *ref,
                                     double *max_error, double *max_reference);

#ifdef __cplusplus
}
#endif
#endif /* RLTUNE_MODEL_H */
