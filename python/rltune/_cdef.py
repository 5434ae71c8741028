"""The C declarations rltune's Python binding uses, copied from the public
headers (include/rltune/*.h, version 0.1.0; rltune/space.h too) in cffi's cdef syntax.

They must match the headers exactly: tests/test_layout.py compiles a C
program with the real headers that prints the size and every field offset
of each struct below and every constant, and redeclares every function of
FUNCTIONS after the headers, so that a declaration that drifted from its
header fails to compile.

TYPES holds the types and constants, FUNCTIONS the prototypes (one per
line), LIBC the few C library functions used to hand files to rltune.
"""

TYPES = r"""
/* rltune/base.h */
typedef enum rlt_status {
    RLT_STATUS_OK = 0,
    RLT_STATUS_INVALID_ARGUMENT,
    RLT_STATUS_PARSE_ERROR,
    RLT_STATUS_ILLEGAL_SCHEDULE,
    RLT_STATUS_IO_ERROR,
    RLT_STATUS_OUT_OF_MEMORY,
    RLT_STATUS_BUILD_ERROR,
    RLT_STATUS_BUILD_TIMEOUT,
    RLT_STATUS_RUN_ERROR,
    RLT_STATUS_RUN_TIMEOUT,
    RLT_STATUS_WRONG_ANSWER,
    RLT_STATUS_INTERNAL,
    RLT_STATUS_COUNT
} rlt_status;

typedef struct rlt_diag {
    rlt_status status;
    char message[1024];
} rlt_diag;

/* rltune/op.h */
typedef struct rlt_op rlt_op;

typedef struct rlt_op_param {
    const char *key;
    const char *help;
    int64_t default_value;
    bool is_required;
    int64_t min_value;
    int64_t max_value;
    bool is_omitted_at_default;
} rlt_op_param;

typedef struct rlt_op_info {
    const char *name;
    const char *summary;
    const char *example;
    int n_params;
    const rlt_op_param *params;
} rlt_op_info;

/* rltune/schedule.h */
typedef struct rlt_sched rlt_sched;
typedef struct rlt_nest rlt_nest;
#define RLT_MAX_THREADS 256

typedef struct rlt_c_source {
    char *code;
    char symbol[64];
    bool needs_openmp;
} rlt_c_source;

/* rltune/measure.h */
typedef struct rlt_build_opts {
    const char *cc;
    const char *cflags;
    const char *cache_dir;
    double timeout_s;
    int n_parallel;
    int max_per_unit;
} rlt_build_opts;

typedef struct rlt_machine {
    char cpu[128];
    int n_cores;
    int vector_floats;
    bool has_fma;
    int64_t llc_bytes;
} rlt_machine;

typedef struct rlt_run_opts {
    int number;
    int repeat;
    double min_repeat_ms;
    int warmup;
    double timeout_s;
    int n_threads;
    bool no_pin;
    double slow_cutoff_ms;
    bool cold_weights;
} rlt_run_opts;

typedef struct rlt_run_result {
    rlt_status status;
    bool is_correct;
    double time_min_ms;
    double time_median_ms;
    double gflops;
    int n_samples;
    int number;
    double max_error;
    char message[512];
    double build_s;
} rlt_run_result;

typedef struct rlt_workload rlt_workload;
typedef struct rlt_batch rlt_batch;

typedef struct rlt_candidate {
    const char *schedule;
    const char *cc;
} rlt_candidate;

typedef struct rlt_executor {
    rlt_status (*measure)(void *ctx, const rlt_op *op, const char *target, const rlt_build_opts *build,
                          const rlt_run_opts *run, int n, const rlt_candidate *candidates, rlt_run_result *out,
                          rlt_diag *diag);
    void *ctx;
} rlt_executor;

/* rltune/records.h */
typedef struct rlt_db rlt_db;

typedef struct rlt_db_opts {
    bool is_read_only;
    double busy_timeout_s;
} rlt_db_opts;

typedef struct rlt_record_target {
    char cpu[128];
    int vector_floats;
    int n_threads;
    bool is_weights_prepacked;
    bool is_weights_cold;
    int codegen;
    char cc[384];
} rlt_record_target;

typedef struct rlt_record {
    int64_t id;
    char spec[512];
    rlt_record_target target;
    char config[1024];
    char schedule[4096];
    char tuner[32];
    rlt_status status;
    bool is_final;
    double time_min_ms;
    double time_median_ms;
    double gflops;
    uint64_t seed;
    double build_s;
    double created_s;
    char message[512];
} rlt_record;

typedef bool (*rlt_db_record_fn)(const rlt_record *record, void *ctx);

/* rltune/session.h (sig_atomic_t is int with glibc: the layout test checks
 * the struct that holds a pointer to it) */
typedef struct rlt_session rlt_session;

typedef struct rlt_tune_progress {
    int n_done;
    int n_total;
    double best_gflops;
    double elapsed_s;
    double measurements_per_s;
} rlt_tune_progress;

typedef void (*rlt_tune_progress_fn)(const rlt_tune_progress *p, void *ctx);

typedef struct rlt_session_options {
    const char *tuner;
    int n_trials;
    int batch_size;
    int early_stopping;
    uint64_t seed;
    int n_threads;
    rlt_build_opts build;
    rlt_run_opts run;
    const rlt_executor *executor;
    const char *db_path;
    const char *replay_path;
    const char *transfer_path;
    const char *agent_in;
    const char *agent_out;
    const char *start_key;
    const char *policy_path;
    bool from_other_threads;
    bool no_clang;
    int n_seeds;
    int n_final;
    const char *tuner_config_path;
    const char *tuner_options;
    const volatile int *stop;
    rlt_tune_progress_fn progress;
    void *progress_ctx;
} rlt_session_options;

typedef enum rlt_session_option {
    RLT_OPTION_NONE = 0,
    RLT_OPTION_TUNER,
    RLT_OPTION_NUMBERS,
    RLT_OPTION_DB,
    RLT_OPTION_REPLAY,
    RLT_OPTION_TRANSFER,
    RLT_OPTION_AGENT,
    RLT_OPTION_START,
    RLT_OPTION_POLICY,
    RLT_OPTION_TUNER_CONFIG,
    RLT_OPTION_TUNER_OPTIONS
} rlt_session_option;

typedef struct rlt_session_summary {
    int n_trials;
    int n_total;
    int n_measured;
    int n_from_records;
    int n_failed;
    int n_replayed;
    int n_absent;
    double best_gflops;
    double best_time_ms;
    const char *best_config;
    const char *best_schedule;
    const char *best_cc;
    const double *curve;
    double wall_s;
    double tuner_s;
    double measurements_per_s;
    bool is_done, was_stopped, was_stopped_early, was_exhausted;
    int n_seeds;
    int n_other_threads;
    int n_transfer_rows, n_transfer_workloads;
    const char *start_config;
    int n_final, final_rounds;
    int final_repeat;
    double final_min_repeat_ms;
    double final_s;
    double tuning_best_gflops;
    const char *tuning_best_config;
    bool has_policy;
    double policy_gflops, policy_wall_s;
    int64_t policy_n_evaluations;
    const char *policy_schedule;
} rlt_session_summary;

typedef struct rlt_tuner_param {
    const char *name;
    const char *tuners;
    const char *def;
    const char *help;
} rlt_tuner_param;

/* rltune/env.h */
typedef struct rlt_env rlt_env;

typedef enum rlt_env_action {
    RLT_ENV_ACTION_UP,
    RLT_ENV_ACTION_DOWN,
    RLT_ENV_ACTION_SWAP_UP,
    RLT_ENV_ACTION_SWAP_DOWN,
    RLT_ENV_ACTION_SPLIT_2,
    RLT_ENV_ACTION_SPLIT_4,
    RLT_ENV_ACTION_SPLIT_8,
    RLT_ENV_ACTION_SPLIT_16,
    RLT_ENV_ACTION_SPLIT_32,
    RLT_ENV_ACTION_SPLIT_64,
    RLT_ENV_ACTION_SPLIT_128,
    RLT_ENV_ACTION_SPLIT_256,
    RLT_ENV_ACTION_MERGE,
    RLT_ENV_ACTION_UNROLL,
    RLT_ENV_ACTION_VECTORIZE,
    RLT_ENV_ACTION_PARALLEL,
    RLT_ENV_ACTION_STOP,
    RLT_ENV_N_ACTIONS
} rlt_env_action;

#define RLT_ENV_OBS_VERSION 1
#define RLT_ENV_MAX_LOOPS 16
#define RLT_ENV_OBS_TENSORS 4
#define RLT_ENV_LOOP_FEATURES 14
#define RLT_ENV_STRIDE_BUCKETS 32
#define RLT_ENV_HISTORY 5
#define RLT_ENV_OBS_LOOPS 0
#define RLT_ENV_OBS_STRIDES 224
#define RLT_ENV_OBS_HISTORY 256
#define RLT_ENV_OBS_GFLOPS 341
#define RLT_ENV_OBS_MASK 342
#define RLT_ENV_OBS_LEN 359
#define RLT_ENV_ACTION_NONE -1
#define RLT_ENV_ACTION_RESET -2

typedef struct rlt_env_eval_request {
    const char *op_spec;
    const char *schedule;
    const rlt_nest *nest;
    uint64_t nest_hash;
    double flops;
} rlt_env_eval_request;

typedef struct rlt_env_eval_result {
    rlt_status status;
    double gflops;
    char message[256];
} rlt_env_eval_result;

typedef rlt_status (*rlt_env_evaluate_fn)(void *ctx, const rlt_env_eval_request *req, rlt_env_eval_result *out,
                                          rlt_diag *diag);

typedef struct rlt_env_opts {
    const char *cc;
    const char *cflags;
    const char *cache_dir;
    int n_threads;
    int repeat;
    double min_repeat_ms;
    double timeout_s;
    uint64_t seed;
    double peak_gflops;
    int max_steps;
    rlt_env_evaluate_fn evaluate;
    void *evaluate_ctx;
    const char *replay_path;
} rlt_env_opts;

typedef struct rlt_env_stats {
    int64_t n_evaluations;
    int64_t n_cache_hits;
    int64_t n_cached;
} rlt_env_stats;

typedef struct rlt_env_vec rlt_env_vec;

typedef enum rlt_env_autoreset {
    RLT_ENV_AUTORESET_NEXT_STEP,
    RLT_ENV_AUTORESET_SAME_STEP,
    RLT_ENV_AUTORESET_DISABLED,
    RLT_ENV_AUTORESET_COUNT
} rlt_env_autoreset;

typedef enum rlt_env_masked_action {
    RLT_ENV_MASKED_NOOP,
    RLT_ENV_MASKED_REFUSE,
    RLT_ENV_MASKED_COUNT
} rlt_env_masked_action;

typedef struct rlt_env_vec_opts {
    int max_steps;
    rlt_env_autoreset autoreset;
    rlt_env_masked_action masked_action;
} rlt_env_vec_opts;

typedef struct rlt_env_vec_out {
    float *obs;
    unsigned char *masks;
    double *rewards;
    bool *terminated;
    bool *truncated;
    bool *is_legal;
    double *gflops;
    int64_t *n_steps;
} rlt_env_vec_out;

/* rltune/session.h: datasets */
#define RLT_DATASET_DEFAULT_SAMPLES 4096
#define RLT_DATASET_MAX_SAMPLES 1000000

typedef struct rlt_dataset_info {
    char spec[512];
    char target[512];
    int n_threads;
    int vector_floats;
    bool has_clang;
    char fixed[512];
    uint64_t space_size;
    int64_t n_valid;
    bool is_complete;
    int n_samples;
    uint64_t seed;
    int n_configs;
} rlt_dataset_info;

typedef struct rlt_dataset_opts {
    int n_samples;
    const char *fix;
    uint64_t seed;
    int batch_size;
    int n_threads;
    rlt_build_opts build;
    rlt_run_opts run;
    const rlt_executor *executor;
    const volatile int *stop;
    rlt_tune_progress_fn progress;
    void *progress_ctx;
} rlt_dataset_opts;

typedef struct rlt_dataset_result {
    int n_done;
    int n_measured;
    int n_from_records;
    int n_failed;
    bool was_stopped;
    double best_gflops;
    double best_time_ms;
    char best_config[1024];
    char best_cc[16];
    double wall_s;
    double measurements_per_s;
} rlt_dataset_result;

/* rltune/space.h */
#define RLT_KNOB_SPACE_MAX_KNOBS 40
#define RLT_KNOB_SPACE_MAX_CHOICES 64
typedef struct rlt_knob_space rlt_knob_space;
typedef struct rlt_config_measurer rlt_config_measurer;

typedef struct rlt_config_measurer_options {
    rlt_build_opts build;
    rlt_run_opts run;
    const char *db_path;
    const char *tuner;
    uint64_t seed;
} rlt_config_measurer_options;

typedef struct rlt_config_result {
    rlt_status status;
    bool is_absent;
    bool is_from_records;
    double gflops;
    double time_median_ms;
    char message[256];
} rlt_config_result;
/* rltune/npy.h (the dims' length is RLT_ARRAY_MAX_RANK) */
typedef enum rlt_elem { RLT_ELEM_F32 = 0, RLT_ELEM_I64 = 1, RLT_ELEM_I32 = 2, RLT_ELEM_BOOL = 3 } rlt_elem;
#define RLT_ARRAY_MAX_RANK 8

typedef struct rlt_array {
    rlt_elem elem;
    int rank;
    int64_t dims[8];
    void *data;
} rlt_array;

/* rltune/model.h */
typedef struct rlt_model rlt_model;

typedef struct rlt_task {
    char spec[512];
    char epilogue[128];
    int weight;
    double flops;
    int n_nodes;
    const char *const *nodes;
} rlt_task;

typedef struct rlt_other_kernel {
    char op_type[64];
    char reason[256];
    int count;
    char first_node[128];
} rlt_other_kernel;

typedef struct rlt_model_tensor {
    char name[256];
    rlt_elem elem;
    int rank;
    int64_t dims[8];
} rlt_model_tensor;

typedef struct rlt_net rlt_net;

typedef struct rlt_net_options {
    const char *db_path;
    int n_threads;
    rlt_build_opts build;
    bool cold_weights;
    int channel_block;
} rlt_net_options;

typedef enum rlt_net_origin {
    RLT_NET_FROM_RECORD = 0,
    RLT_NET_FROM_BASE_RECORD,
    RLT_NET_FROM_SEED
} rlt_net_origin;

typedef struct rlt_net_task {
    char spec[512];
    int weight;
    double flops;
    rlt_net_origin origin;
    int64_t record_id;
    double record_ms;
} rlt_net_task;

typedef struct rlt_net_step {
    const char *name;
    const char *what;
    int task;
    int n_nodes;
    double flops;
    double total_ms;
} rlt_net_step;

typedef struct rlt_model_export_options {
    const char *dir;
    const char *name;
    const char *origin;
    bool embed_weights;
    uint64_t seed;
} rlt_model_export_options;

typedef struct rlt_model_export_result {
    char name[128];
    int n_steps;
    int n_kernel_steps;
    int n_kernels;
    int n_fast_ops;
    int n_views;
    int n_other_cc;
    int n_kernel_files;
    int64_t weights_bytes;
    int64_t arena_bytes;
    bool needs_openmp;
    char cc[256];
    char cflags[512];
} rlt_model_export_result;

typedef struct rlt_model_tuning rlt_model_tuning;

typedef struct rlt_model_tune_options {
    rlt_session_options session;
    int n_trials;
    bool no_transfer;
    int channel_block;
} rlt_model_tune_options;

typedef struct rlt_latency_point {
    int n_trials;
    double wall_s;
    double latency_ms;
} rlt_latency_point;

typedef struct rlt_model_tuning_summary {
    int n_tasks;
    int n_trials;
    int n_budget;
    int n_rounds;
    int n_recorded;
    int last_task;
    double wall_s;
    double latency_ms;
    double latency_ms_at_open;
    int n_points;
    const rlt_latency_point *curve;
    bool was_stopped;
} rlt_model_tuning_summary;

typedef struct rlt_tuning_task {
    char spec[512];
    int weight;
    double flops;
    int n_rounds;
    int n_trials;
    int n_from_siblings;
    int n_recorded;
    double best_ms;
    double gradient;
    bool is_done;
} rlt_tuning_task;

/* rltune/env.h: state datasets */
#define RLT_ENV_DATASET_VERSION 1
#define RLT_ENV_DATASET_DEFAULT_DEPTH 4
#define RLT_ENV_DATASET_MAX_DEPTH 64
#define RLT_ENV_DATASET_DEFAULT_MAX_STATES 1000
#define RLT_ENV_DATASET_MAX_STATES 100000
#define RLT_ENV_DATASET_DEFAULT_BATCH 16
#define RLT_ENV_DATASET_MAX_BATCH 256

typedef void (*rlt_env_dataset_progress_fn)(void *ctx, int n_done, int n_states);

typedef struct rlt_env_dataset_opts {
    int depth;
    int max_states;
    uint64_t seed;
    const char *start_schedule;
    int batch_size;
    rlt_env_opts env;
    const volatile int *stop;
    rlt_env_dataset_progress_fn progress;
    void *progress_ctx;
} rlt_env_dataset_opts;

typedef struct rlt_env_dataset_result {
    int n_states;
    int n_found;
    int depth_complete;
    int n_failed;
    double peak_gflops;
    double start_gflops;
    double best_gflops;
    bool was_stopped;
    double wall_s;
} rlt_env_dataset_result;

/* rltune/graph_opt.h */
typedef struct rlt_rules rlt_rules;
typedef struct rlt_graph_policy rlt_graph_policy;
typedef struct rlt_graph_env rlt_graph_env;
#define RLT_GRAPH_ENV_MAX_ANCHORS 12

typedef struct rlt_rule_info {
    char name[64];
    char doc[512];
    char file[256];
    int line;
    int n_src, n_dst;
    int n_checks;
    bool is_verified;
    bool is_exact;
    double max_error;
} rlt_rule_info;

typedef struct rlt_graph_opt_options {
    const char *search;
    double alpha;
    int budget;
    double time_limit_s;
    const char *db_path;
    int n_threads;
    rlt_build_opts build;
    uint64_t seed;
    bool is_verbose;
    struct rlt_graph_policy *policy;
    int horizon;
    bool cold_weights;
    int n_seeds;
} rlt_graph_opt_options;

typedef struct rlt_graph_opt_step {
    char rule[64];
    char where[128];
    double cost_ms;
} rlt_graph_opt_step;

typedef struct rlt_graph_opt_result {
    double cost_before_ms, cost_after_ms;
    int n_nodes_before, n_nodes_after;
    int n_steps;
    rlt_graph_opt_step *steps;
    int n_cost_evals;
    int n_expanded;
    int n_candidates;
    int n_tasks_measured, n_tasks_from_records, n_ops_measured;
    double search_s, measure_s;
} rlt_graph_opt_result;

typedef enum rlt_graph_reward { RLT_GRAPH_REWARD_STEP = 0, RLT_GRAPH_REWARD_BEST = 1 } rlt_graph_reward;

typedef struct rlt_graph_env_options {
    int horizon;
    rlt_graph_reward reward;
    double step_penalty;
    int max_candidates;
    const char *db_path;
    int n_threads;
    rlt_build_opts build;
    uint64_t seed;
    bool cold_weights;
    int n_seeds;
} rlt_graph_env_options;

typedef struct rlt_graph_env_obs {
    int n_nodes;
    int n_features;
    const float *features;
    int n_edges;
    const int *edges;
    int n_candidates;
    const int *cand_rule;
    const int *cand_nodes;
    const unsigned char *mask;
    int n_actions;
    double cost_ms, cost0_ms, best_cost_ms;
    int step, horizon;
    bool done;
    bool is_refused;
} rlt_graph_env_obs;
"""

FUNCTIONS = r"""
const char *rlt_version(void);
const char *rlt_status_str(rlt_status status);
rlt_status rlt_status_from_str(const char *name);
void rlt_free(void *ptr);
void rlt_format_double(double v, char *buf, size_t cap);
rlt_status rlt_op_parse(const char *spec, rlt_op **out, rlt_diag *diag);
rlt_status rlt_op_from_expr(const char *expr, const char *shape, rlt_op **out, rlt_diag *diag);
void rlt_op_destroy(rlt_op *op);
const char *rlt_op_spec(const rlt_op *op);
const char *rlt_op_kind(const rlt_op *op);
double rlt_op_flops(const rlt_op *op);
char *rlt_op_text(const rlt_op *op);
const rlt_op_info *rlt_op_library(int *n_ops);
rlt_sched *rlt_sched_create(void);
void rlt_sched_destroy(rlt_sched *s);
rlt_status rlt_sched_parse(const char *text, const char *source, rlt_sched **out, rlt_diag *diag);
rlt_status rlt_sched_load(const char *path, rlt_sched **out, rlt_diag *diag);
char *rlt_sched_text(const rlt_sched *s);
int rlt_sched_n_steps(const rlt_sched *s);
rlt_status rlt_sched_add_split(rlt_sched *s, const char *loop, int64_t factor, rlt_diag *diag);
rlt_status rlt_sched_add_reorder(rlt_sched *s, int n_loops, const char *const *loops, rlt_diag *diag);
rlt_status rlt_sched_add_fuse(rlt_sched *s, const char *outer, const char *inner, rlt_diag *diag);
rlt_status rlt_sched_add_unroll(rlt_sched *s, const char *loop, rlt_diag *diag);
rlt_status rlt_sched_add_vectorize(rlt_sched *s, const char *loop, rlt_diag *diag);
rlt_status rlt_sched_add_parallel(rlt_sched *s, const char *loop, int n_threads, rlt_diag *diag);
rlt_status rlt_sched_add_cache_write(rlt_sched *s, const char *loop, rlt_diag *diag);
rlt_status rlt_sched_add_pack(rlt_sched *s, const char *tensor, int n_blocks, const int *dims, const int64_t *blocks, rlt_diag *diag);
rlt_status rlt_sched_add_pad(rlt_sched *s, const char *tensor, rlt_diag *diag);
rlt_status rlt_nest_create(const rlt_op *op, const rlt_sched *s, rlt_nest **out, rlt_diag *diag);
void rlt_nest_destroy(rlt_nest *n);
char *rlt_nest_tree(const rlt_nest *n);
rlt_status rlt_nest_c_source(const rlt_nest *n, rlt_c_source *out, rlt_diag *diag);
rlt_status rlt_nest_lowered_text(const rlt_nest *n, char **out, rlt_diag *diag);
bool rlt_nest_is_parallel(const rlt_nest *n);
char *rlt_build_command(const rlt_build_opts *opts, bool with_openmp);
void rlt_machine_detect(rlt_machine *out);
rlt_status rlt_workload_create(const rlt_op *op, const rlt_build_opts *opts, uint64_t seed, rlt_workload **out, rlt_diag *diag);
void rlt_workload_destroy(rlt_workload *w);
rlt_status rlt_measure(const rlt_workload *w, const rlt_build_opts *bopts, const rlt_run_opts *ropts, int n, const rlt_nest *const *nests, rlt_run_result *out, rlt_diag *diag);
rlt_status rlt_measure_build(const rlt_workload *w, const rlt_build_opts *bopts, int n, const rlt_nest *const *nests, const char *const *cc_of, rlt_batch **out, rlt_diag *diag);
void rlt_measure_run(const rlt_batch *b, const rlt_run_opts *ropts, rlt_run_result *out);
void rlt_batch_destroy(rlt_batch *b);
rlt_status rlt_db_open(const char *path, const rlt_db_opts *opts, rlt_db **out, rlt_diag *diag);
void rlt_db_close(rlt_db *db);
const char *rlt_db_last_error(const rlt_db *db);
rlt_status rlt_db_append(rlt_db *db, int n, const rlt_record *records, rlt_diag *diag);
rlt_status rlt_db_lookup(rlt_db *db, const char *spec, const char *target, const char *config, rlt_record *out, bool *out_found, rlt_diag *diag);
rlt_status rlt_db_best(rlt_db *db, const char *spec, const char *target, rlt_record *out, bool *out_found, rlt_diag *diag);
rlt_status rlt_db_history(rlt_db *db, const char *spec, const char *target, rlt_db_record_fn fn, void *ctx, rlt_diag *diag);
rlt_status rlt_db_count(rlt_db *db, const char *spec, int64_t *out_n, rlt_diag *diag);
rlt_status rlt_db_export_jsonl(rlt_db *db, const char *spec, FILE *out, rlt_diag *diag);
rlt_status rlt_db_import_jsonl(rlt_db *db, FILE *in, const char *source, int *out_n_added, int *out_n_skipped, rlt_diag *diag);
char *rlt_record_json(const rlt_record *r);
rlt_status rlt_record_from_json(const char *text, const char *where, rlt_record *out, rlt_diag *diag);
bool rlt_config_key_get(const char *key, const char *name, char *buf, size_t cap);
const char *rlt_config_key_cc(const char *key);
char *rlt_record_target_text(const rlt_record_target *t);
rlt_status rlt_record_target_parse(const char *key, rlt_record_target *out, rlt_diag *diag);
bool rlt_record_target_equal(const rlt_record_target *a, const rlt_record_target *b);
void rlt_session_options_init(rlt_session_options *o);
rlt_status rlt_session_open(const rlt_op *op, const rlt_session_options *o, rlt_session **out, rlt_session_option *out_bad_option, rlt_diag *diag);
rlt_status rlt_session_step(rlt_session *s, rlt_diag *diag);
bool rlt_session_is_done(const rlt_session *s);
rlt_status rlt_session_finish(rlt_session *s, rlt_diag *diag);
void rlt_session_summary_get(const rlt_session *s, rlt_session_summary *out);
char *rlt_session_json(const rlt_session *s);
const char *rlt_session_last_error(const rlt_session *s);
void rlt_session_destroy(rlt_session *s);
rlt_status rlt_session_target(const rlt_build_opts *build, int n_threads, rlt_record_target *out, rlt_diag *diag);
const char *const *rlt_tuner_names(void);
const char *rlt_tuner_summary(const char *tuner);
int rlt_tuner_param_count(void);
rlt_tuner_param rlt_tuner_param_at(int i);
bool rlt_tuner_reads_param(const char *tuner, const char *name);
const char *rlt_env_action_name(int action);
int rlt_env_action_from_name(const char *name);
rlt_status rlt_env_create(const char *op_spec, const rlt_env_opts *opts, rlt_env **out, rlt_diag *diag);
void rlt_env_destroy(rlt_env *env);
const char *rlt_env_last_error(const rlt_env *env);
rlt_status rlt_env_clone(const rlt_env *env, rlt_env **out, rlt_diag *diag);
void rlt_env_restore(rlt_env *dst, const rlt_env *src);
rlt_status rlt_env_reset(rlt_env *env, rlt_diag *diag);
rlt_status rlt_env_reset_schedule(rlt_env *env, const char *schedule, rlt_diag *diag);
rlt_status rlt_env_step(rlt_env *env, int action, double *out_reward, bool *out_done, rlt_diag *diag);
rlt_status rlt_env_prefetch(rlt_env *const *envs, const int *actions, int n, rlt_diag *diag);
rlt_status rlt_env_reset_batch(rlt_env *const *envs, const char *const *schedules, int n, rlt_diag *diag);
rlt_status rlt_env_step_batch(rlt_env *const *envs, int n, const int *actions, double *rewards, bool *dones, float *obs, unsigned char *masks, rlt_diag *diag);
rlt_status rlt_env_observe_batch(rlt_env *const *envs, int n, float *obs, unsigned char *masks, rlt_diag *diag);
void rlt_env_gflops_batch(rlt_env *const *envs, int n, double *out);
rlt_status rlt_env_vec_create(rlt_env *const *envs, int n, const rlt_env_vec_opts *opts, rlt_env_vec **out, rlt_diag *diag);
void rlt_env_vec_destroy(rlt_env_vec *vec);
rlt_status rlt_env_vec_reset(rlt_env_vec *vec, const bool *which, const char *const *schedules, const rlt_env_vec_out *out, rlt_diag *diag);
rlt_status rlt_env_vec_step(rlt_env_vec *vec, const int64_t *actions, const rlt_env_vec_out *out, const rlt_env_vec_out *final, rlt_diag *diag);
rlt_status rlt_env_observe(const rlt_env *env, float *out, size_t n_floats, rlt_diag *diag);
void rlt_env_observation_bounds(float low[359], float high[359]);
void rlt_env_action_mask(const rlt_env *env, bool mask[17]);
bool rlt_env_is_done(const rlt_env *env);
bool rlt_env_is_reset(const rlt_env *env);
double rlt_env_gflops(const rlt_env *env);
rlt_status rlt_env_eval_status(const rlt_env *env, const char **out_message);
double rlt_env_peak_gflops(const rlt_env *env);
int rlt_env_cursor(const rlt_env *env);
int rlt_env_n_steps(const rlt_env *env);
uint64_t rlt_env_state_hash(const rlt_env *env);
const rlt_nest *rlt_env_nest(const rlt_env *env);
const char *rlt_env_accumulator(const rlt_env *env);
char *rlt_env_tree(const rlt_env *env);
char *rlt_env_schedule(const rlt_env *env);
void rlt_env_stats_get(const rlt_env *env, rlt_env_stats *out);
rlt_status rlt_dataset_measure(const rlt_op *op, const char *path, const rlt_dataset_opts *opts, rlt_dataset_info *out_info, rlt_dataset_result *out, rlt_diag *diag);
rlt_status rlt_knob_space_create(const rlt_op *op, int n_threads, rlt_knob_space **out, rlt_diag *diag);
rlt_status rlt_knob_space_open_dataset(const char *path, rlt_knob_space **out, rlt_diag *diag);
void rlt_knob_space_destroy(rlt_knob_space *s);
const char *rlt_knob_space_last_error(const rlt_knob_space *s);
const rlt_op *rlt_knob_space_op(const rlt_knob_space *s);
int rlt_knob_space_n_threads(const rlt_knob_space *s);
int rlt_knob_space_n_knobs(const rlt_knob_space *s);
const char *rlt_knob_space_knob_name(const rlt_knob_space *s, int knob);
int rlt_knob_space_n_choices(const rlt_knob_space *s, int knob);
const char *rlt_knob_space_choice_text(const rlt_knob_space *s, int knob, int choice);
uint64_t rlt_knob_space_size(const rlt_knob_space *s);
rlt_status rlt_knob_space_config_key(rlt_knob_space *s, const int *config, char **out, rlt_diag *diag);
rlt_status rlt_knob_space_config_parse(rlt_knob_space *s, const char *key, int *out, rlt_diag *diag);
bool rlt_knob_space_is_valid(const rlt_knob_space *s, const int *config);
rlt_status rlt_knob_space_config_check(rlt_knob_space *s, const int *config, rlt_diag *diag);
int rlt_knob_space_nearest_valid(const rlt_knob_space *s, const int *from, int *out);
int rlt_knob_space_median(const rlt_knob_space *s, int *out);
int rlt_knob_space_dataset_size(const rlt_knob_space *s);
rlt_status rlt_knob_space_dataset_config(rlt_knob_space *s, int i, int *out, rlt_diag *diag);
bool rlt_knob_space_in_dataset(const rlt_knob_space *s, const int *config);
void rlt_config_measurer_options_init(rlt_config_measurer_options *o);
rlt_status rlt_config_measurer_create_live(const rlt_knob_space *space, const rlt_config_measurer_options *opts, rlt_config_measurer **out, rlt_diag *diag);
rlt_status rlt_config_measurer_create_replay(const rlt_knob_space *space, const char *dataset_path, rlt_config_measurer **out, rlt_diag *diag);
void rlt_config_measurer_destroy(rlt_config_measurer *m);
const char *rlt_config_measurer_kind(const rlt_config_measurer *m);
double rlt_config_measurer_best_gflops(const rlt_config_measurer *m);
rlt_status rlt_config_measure(rlt_config_measurer *m, int n, const int *configs, rlt_config_result *out, rlt_diag *diag);
const char *rlt_config_measurer_last_error(const rlt_config_measurer *m);
const char *rlt_elem_name(rlt_elem e);
size_t rlt_elem_size(rlt_elem e);
int64_t rlt_array_n_elems(const rlt_array *a);
rlt_status rlt_array_create(rlt_elem elem, int rank, const int64_t *dims, rlt_array **out, rlt_diag *diag);
void rlt_array_destroy(rlt_array *a);
rlt_status rlt_npy_load(const char *path, rlt_array **out, rlt_diag *diag);
rlt_status rlt_npy_save(const char *path, const rlt_array *a, rlt_diag *diag);
rlt_status rlt_model_load(const char *path, rlt_model **out, rlt_diag *diag);
void rlt_model_destroy(rlt_model *m);
const char *rlt_model_last_error(const rlt_model *m);
char *rlt_model_text(const rlt_model *m);
int rlt_model_opset(const rlt_model *m);
int64_t rlt_model_weights_bytes(const rlt_model *m);
int rlt_model_n_nodes(const rlt_model *m);
int rlt_model_n_inputs(const rlt_model *m);
int rlt_model_n_outputs(const rlt_model *m);
rlt_status rlt_model_tasks(rlt_model *m, rlt_task **out, int *out_n, rlt_diag *diag);
rlt_status rlt_model_tasks_blocked(rlt_model *m, int channel_block, rlt_task **out, int *out_n, rlt_diag *diag);
int rlt_model_channel_block(void);
rlt_status rlt_model_other_kernels(rlt_model *m, rlt_other_kernel **out, int *out_n, rlt_diag *diag);
void rlt_model_input(const rlt_model *m, int i, rlt_model_tensor *out);
void rlt_model_output(const rlt_model *m, int i, rlt_model_tensor *out);
rlt_status rlt_model_random_inputs(const rlt_model *m, uint64_t seed, rlt_array **out, rlt_diag *diag);
rlt_status rlt_model_evaluate(rlt_model *m, const rlt_array *const *inputs, rlt_array **outputs, rlt_diag *diag);
void rlt_net_options_init(rlt_net_options *o);
rlt_status rlt_model_compile(rlt_model *m, const rlt_net_options *o, rlt_net **out, rlt_diag *diag);
void rlt_net_destroy(rlt_net *n);
rlt_status rlt_net_run(rlt_net *n, const rlt_array *const *inputs, rlt_array *const *outputs, rlt_diag *diag);
void rlt_net_profile(rlt_net *n, bool on);
int rlt_net_n_tasks(const rlt_net *n);
void rlt_net_task_get(const rlt_net *n, int i, rlt_net_task *out);
int rlt_net_n_steps(const rlt_net *n);
void rlt_net_step_get(const rlt_net *n, int i, rlt_net_step *out);
int64_t rlt_net_activation_bytes(const rlt_net *n);
int rlt_net_channel_block(const rlt_net *n);
void rlt_net_layout_estimates(const rlt_net *n, double est_ms[2]);
int64_t rlt_net_extra_bytes(const rlt_net *n);
double rlt_net_compile_s(const rlt_net *n);
void rlt_model_export_options_init(rlt_model_export_options *o);
rlt_status rlt_model_export(rlt_model *m, const rlt_net *net, const rlt_model_export_options *o, rlt_model_export_result *out, rlt_diag *diag);
void rlt_model_tune_options_init(rlt_model_tune_options *o);
rlt_status rlt_model_tuning_open(rlt_model *m, const rlt_model_tune_options *o, rlt_model_tuning **out, rlt_diag *diag);
rlt_status rlt_model_tuning_step(rlt_model_tuning *t, rlt_diag *diag);
bool rlt_model_tuning_is_done(const rlt_model_tuning *t);
rlt_status rlt_model_tuning_finish(rlt_model_tuning *t, rlt_diag *diag);
void rlt_model_tuning_destroy(rlt_model_tuning *t);
const char *rlt_model_tuning_last_error(const rlt_model_tuning *t);
void rlt_model_tuning_summary_get(const rlt_model_tuning *t, rlt_model_tuning_summary *out);
void rlt_model_tuning_task_get(const rlt_model_tuning *t, int i, rlt_tuning_task *out);
rlt_status rlt_env_dataset_make(const char *op_spec, const char *path, const rlt_env_dataset_opts *opts, rlt_env_dataset_result *out, rlt_diag *diag);
rlt_status rlt_rules_load(const char *path, rlt_rules **out, rlt_diag *diag);
rlt_status rlt_rules_add(rlt_rules *r, const char *path, rlt_diag *diag);
void rlt_rules_destroy(rlt_rules *r);
rlt_status rlt_rules_verify(rlt_rules *r, uint64_t seed, rlt_diag *diag);
int rlt_rules_count(const rlt_rules *r);
void rlt_rule_info_get(const rlt_rules *r, int i, rlt_rule_info *out);
void rlt_graph_opt_options_init(rlt_graph_opt_options *o);
rlt_status rlt_model_graph_opt(rlt_model *m, const rlt_rules *rules, const rlt_graph_opt_options *o, rlt_model **out, rlt_graph_opt_result *res, rlt_diag *diag);
void rlt_graph_opt_result_free(rlt_graph_opt_result *r);
rlt_status rlt_model_save_onnx(const rlt_model *m, const char *path, rlt_diag *diag);
void rlt_graph_env_options_init(rlt_graph_env_options *o);
rlt_status rlt_graph_env_create(const rlt_rules *rules, const rlt_graph_env_options *o, rlt_graph_env **out, rlt_diag *diag);
void rlt_graph_env_destroy(rlt_graph_env *e);
rlt_status rlt_graph_env_reset(rlt_graph_env *e, const rlt_model *m, rlt_diag *diag);
rlt_status rlt_graph_env_step(rlt_graph_env *e, int a, double *reward, bool *done, rlt_diag *diag);
void rlt_graph_env_observe(const rlt_graph_env *e, rlt_graph_env_obs *out);
int rlt_graph_env_n_features(void);
const char *rlt_graph_env_feature_name(int i);
rlt_status rlt_graph_env_best_model(const rlt_graph_env *e, rlt_model **out, rlt_diag *diag);
int rlt_graph_env_n_cost_evals(const rlt_graph_env *e);
rlt_status rlt_graph_policy_load(const char *path, rlt_graph_policy **out, rlt_diag *diag);
rlt_status rlt_graph_policy_default(rlt_graph_policy **out, rlt_diag *diag);
rlt_status rlt_graph_policy_save(const rlt_graph_policy *p, const char *path, rlt_diag *diag);
void rlt_graph_policy_destroy(rlt_graph_policy *p);
rlt_status rlt_graph_policy_act(rlt_graph_policy *p, const rlt_rules *rules, const rlt_graph_env_obs *obs, bool is_greedy, uint64_t *rng_state, int *action, rlt_diag *diag);
"""

LIBC = r"""
FILE *fopen(const char *path, const char *mode);
int fclose(FILE *stream);
"""

# The structs whose layout the test checks against the headers.
STRUCTS = (
    "rlt_diag",
    "rlt_op_param",
    "rlt_op_info",
    "rlt_c_source",
    "rlt_build_opts",
    "rlt_machine",
    "rlt_run_opts",
    "rlt_run_result",
    "rlt_candidate",
    "rlt_executor",
    "rlt_db_opts",
    "rlt_record_target",
    "rlt_record",
    "rlt_tune_progress",
    "rlt_session_options",
    "rlt_session_summary",
    "rlt_tuner_param",
    "rlt_env_eval_request",
    "rlt_env_eval_result",
    "rlt_env_opts",
    "rlt_env_stats",
    "rlt_env_vec_opts",
    "rlt_env_vec_out",
    "rlt_dataset_info",
    "rlt_dataset_opts",
    "rlt_dataset_result",
    "rlt_config_measurer_options",
    "rlt_config_result",
    "rlt_array",
    "rlt_task",
    "rlt_other_kernel",
    "rlt_model_tensor",
    "rlt_net_options",
    "rlt_net_task",
    "rlt_net_step",
    "rlt_model_export_options",
    "rlt_model_export_result",
    "rlt_model_tune_options",
    "rlt_latency_point",
    "rlt_model_tuning_summary",
    "rlt_tuning_task",
    "rlt_env_dataset_opts",
    "rlt_env_dataset_result",
    "rlt_rule_info",
    "rlt_graph_opt_options",
    "rlt_graph_opt_step",
    "rlt_graph_opt_result",
    "rlt_graph_env_options",
    "rlt_graph_env_obs",
)
