/*
 * cmd_run.c - `rltune run`: compiles an ONNX model with the best records
 * of its tasks (rlt_model_compile; seeds for the untuned), runs it on an
 * input (.npy, or seeded random), checks the output against rltune's
 * reference evaluation of the graph, and times it: median and min of
 * --repeat runs after warm-up, with --profile the time of every step.
 */
#include "cli/cli.h"
#include "rltune/model.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_IO 16

static const rlt_cli_opt run_opts[] = {
    {"model", "FILE", "the ONNX model (.onnx) to compile and run"},
    {"db", "FILE", "records database to take the tasks' schedules from (default rltune.db when it exists)"},
    {"input", "X.npy[,...]", "the input(s) as .npy files, one per model input (default: seeded random)"},
    {"output", "Y.npy[,...]", "write the output(s) to these .npy files"},
    {"threads", "N", "threads the kernels run with (default 1); records are looked up for this count"},
    {"repeat", "R", "timed runs (default 10), after 2 untimed warm-up runs"},
    {"seed", "S", "seed of the random input (default 0)"},
    {"profile", NULL, "also time every step (a fused kernel or another node) and list them"},
    {"cc", "CMD", "compiler for the kernels (default $RLTUNE_CC, else gcc): part of the records' target"},
    {"cflags", "FLAGS", "compiler flags (default \"" RLT_DEFAULT_CFLAGS "\")"},
    {"graph-opt", "SEARCH", "first rewrite the graph with rltune's substitutions: greedy, taso, rl or none"},
    {"cold", NULL, "take the schedules timed cold (as tune --model times them) first, warm ones where a task "
                   "has none (the default)"},
    {"warm", NULL, "take only the schedules timed warm, with the weights and output in the caches"},
    {"layout", "L", RLT_CLI_LAYOUT_AUTO_HELP},
    {"json", NULL, "print exactly one JSON object on stdout instead of the report"},
};

typedef struct run_result {
    const char *path;
    rlt_model *model;
    rlt_net *net;
    int n_threads, repeat;
    const char *db_path;
    double median_ms, min_ms;
    double max_error, max_ref; /* over every output element, relative check */
    bool is_correct;
    bool is_cold; /* cold records first (rlt_net_options.cold_weights) */
    int block;    /* the net's channel block (auto resolved): 0 for nchw */
    bool is_layout_auto;
    int n_tuned, n_untuned;
} run_result;

/* Splits "a,b,c" into at most max parts (pointers into a copy owned by the
 * caller: free(*out_copy)); returns the count, or -1 when out of memory. */
static int split_list(const char *text, char **out_copy, const char **parts, int max)
{
    char *copy = strdup(text);
    *out_copy = copy;
    if (!copy) return -1;
    int n = 0;
    for (char *p = copy; n < max; n++) {
        parts[n] = p;
        char *comma = strchr(p, ',');
        if (!comma) return n + 1;
        *comma = '\0';
        p = comma + 1;
    }
    return max + 1; /* too many */
}

/* Profile rows, slowest first. */
typedef struct prof_row {
    rlt_net_step step;
    int index;
} prof_row;

static int prof_cmp(const void *pa, const void *pb)
{
    const prof_row *a = pa, *b = pb;
    if (a->step.total_ms != b->step.total_ms) return a->step.total_ms > b->step.total_ms ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

static prof_row *profile_rows(const rlt_net *net)
{
    int n = rlt_net_n_steps(net);
    prof_row *rows = calloc((size_t)n + 1, sizeof *rows);
    if (!rows) return NULL;
    for (int i = 0; i < n; i++) {
        rlt_net_step_get(net, i, &rows[i].step);
        rows[i].index = i;
    }
    qsort(rows, (size_t)n, sizeof *rows, prof_cmp);
    return rows;
}

static const char *origin_name(rlt_net_origin o)
{
    return o == RLT_NET_FROM_RECORD ? "record" : o == RLT_NET_FROM_BASE_RECORD ? "base_record" : "seed";
}

static void print_text(const run_result *r, const prof_row *rows)
{
    const rlt_net *net = r->net;
    int n_steps = rlt_net_n_steps(net), n_kernels = 0;
    for (int i = 0; i < rlt_net_n_tasks(net); i++) {
        rlt_net_task t;
        rlt_net_task_get(net, i, &t);
        n_kernels += t.weight;
    }
    printf("model:     %s (opset %d): %d nodes\n", r->path, rlt_model_opset(r->model), rlt_model_n_nodes(r->model));
    printf("compiled:  %d steps: %d fused kernels of %d tasks (%d tuned%s%s%s, %d from seeds), %d other nodes; "
           "%.2f s\n",
           n_steps, n_kernels, rlt_net_n_tasks(net), r->n_tuned, r->db_path ? " from " : "",
           r->db_path ? r->db_path : "", r->db_path && r->is_cold ? ", cold records first" : "", r->n_untuned,
           n_steps - n_kernels, rlt_net_compile_s(net));
    double est[2];
    rlt_net_layout_estimates(net, est);
    char why[200] = "";
    if (!isnan(est[0])) {
        char a[32] = "not fully tuned", b[32] = "not fully tuned";
        if (isfinite(est[0])) snprintf(a, sizeof a, "%.3f ms", est[0]);
        if (isfinite(est[1])) snprintf(b, sizeof b, "%.3f ms", est[1]);
        snprintf(why, sizeof why, " (auto: the records estimate nchw %s, nchwc %s)", a, b);
    }
    if (r->block)
        printf("layout:    nchwc: activations in blocks of %d channels where every node can take them%s\n", r->block,
               why);
    else
        printf("layout:    nchw%s\n", why);
    printf("memory:    %.2f MiB of activations (memory plan), %.2f MiB of packed weights and workspaces\n",
           (double)rlt_net_activation_bytes(net) / 1048576.0, (double)rlt_net_extra_bytes(net) / 1048576.0);
    printf("check:     max error %.3g against the reference, whose largest value is %.3g: %s (tolerance %g "
           "relative)\n",
           r->max_error, r->max_ref, r->is_correct ? "OK" : "WRONG", RLT_NET_CHECK_TOLERANCE);
    printf("latency:   median %.4f ms, min %.4f ms over %d runs, %d thread%s\n", r->median_ms, r->min_ms, r->repeat,
           r->n_threads, r->n_threads == 1 ? "" : "s");
    if (!rows) return;
    double total = 0;
    for (int i = 0; i < n_steps; i++) total += rows[i].step.total_ms;
    printf("\nprofile (per run, slowest first):\n  %9s %6s %9s  %-24s %s\n", "ms", "share", "GFLOP/s", "node", "what");
    for (int i = 0; i < n_steps; i++) {
        const rlt_net_step *s = &rows[i].step;
        double ms = s->total_ms / r->repeat;
        char gf[32] = "-";
        if (s->flops > 0 && ms > 0) snprintf(gf, sizeof gf, "%.1f", s->flops / (ms * 1e6));
        printf("  %9.4f %5.1f%% %9s  %-24.24s %s\n", ms, total > 0 ? 100.0 * s->total_ms / total : 0.0, gf, s->name,
               s->what);
    }
}

static char *format_json(const run_result *r, const prof_row *rows)
{
    const rlt_net *net = r->net;
    cJSON *o = cJSON_CreateObject(), *lat = NULL, *tasks = NULL, *prof = NULL;
    bool ok = o && cJSON_AddStringToObject(o, "model", r->path) && rlt_cli_json_add_number(o, "threads", r->n_threads) &&
              (lat = cJSON_AddObjectToObject(o, "latency_ms")) && rlt_cli_json_add_number(lat, "median", r->median_ms) &&
              rlt_cli_json_add_number(lat, "min", r->min_ms) && rlt_cli_json_add_number(o, "repeat", r->repeat) &&
              cJSON_AddBoolToObject(o, "correct", r->is_correct) &&
              rlt_cli_json_add_number(o, "max_error", r->max_error) &&
              rlt_cli_json_add_number(o, "max_reference", r->max_ref) &&
              rlt_cli_json_add_number(o, "tolerance", RLT_NET_CHECK_TOLERANCE) &&
              rlt_cli_json_add_number(o, "peak_memory_bytes", (double)rlt_net_activation_bytes(net)) &&
              rlt_cli_json_add_number(o, "extra_bytes", (double)rlt_net_extra_bytes(net)) &&
              rlt_cli_json_add_number(o, "compile_s", rlt_net_compile_s(net)) &&
              rlt_cli_json_add_number(o, "tasks_tuned", r->n_tuned) &&
              cJSON_AddBoolToObject(o, "cold_weights", r->is_cold) &&
              cJSON_AddStringToObject(o, "layout", r->block ? "nchwc" : "nchw") &&
              rlt_cli_json_add_number(o, "channel_block", r->block) &&
              cJSON_AddBoolToObject(o, "layout_auto", r->is_layout_auto) &&
              rlt_cli_json_add_number(o, "tasks_untuned", r->n_untuned) &&
              (r->db_path ? cJSON_AddStringToObject(o, "db", r->db_path) != NULL
                          : cJSON_AddNullToObject(o, "db") != NULL) &&
              (tasks = cJSON_AddArrayToObject(o, "tasks"));
    for (int i = 0; ok && i < rlt_net_n_tasks(net); i++) {
        rlt_net_task t;
        rlt_net_task_get(net, i, &t);
        cJSON *e = cJSON_CreateObject();
        ok = e && cJSON_AddItemToArray(tasks, e) && cJSON_AddStringToObject(e, "spec", t.spec) &&
             rlt_cli_json_add_number(e, "weight", t.weight) && rlt_cli_json_add_number(e, "flops", t.flops) &&
             cJSON_AddStringToObject(e, "origin", origin_name(t.origin)) &&
             rlt_cli_json_add_number(e, "record_id", (double)t.record_id) &&
             rlt_cli_json_add_number(e, "record_ms", t.record_ms);
    }
    if (ok && rows) {
        ok = (prof = cJSON_AddArrayToObject(o, "profile")) != NULL;
        for (int i = 0; ok && i < rlt_net_n_steps(net); i++) {
            const rlt_net_step *s = &rows[i].step;
            cJSON *e = cJSON_CreateObject();
            ok = e && cJSON_AddItemToArray(prof, e) && cJSON_AddStringToObject(e, "node", s->name) &&
                 cJSON_AddStringToObject(e, "what", s->what) && rlt_cli_json_add_number(e, "step", rows[i].index) &&
                 rlt_cli_json_add_number(e, "n_nodes", s->n_nodes) &&
                 rlt_cli_json_add_number(e, "ms", s->total_ms / r->repeat) &&
                 rlt_cli_json_add_number(e, "flops", s->flops);
        }
    }
    char *text = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return text;
}

/* Loads --input (or makes seeded random inputs) into in[0 .. n_in). */
static int load_inputs(const rlt_cli_args *args, rlt_model *m, rlt_array **in)
{
    rlt_diag d = {0};
    int n_in = rlt_model_n_inputs(m);
    const char *list = rlt_cli_args_get(args, "input");
    if (!list) {
        int64_t seed;
        if (rlt_cli_args_int(args, "seed", 0, 0, INT64_MAX, &seed, &d) != RLT_STATUS_OK) {
            rlt_cli_error("%s", d.message);
            return RLT_CLI_EXIT_USAGE;
        }
        if (rlt_model_random_inputs(m, (uint64_t)seed, in, &d) != RLT_STATUS_OK) {
            rlt_cli_error("%s", d.message);
            return RLT_CLI_EXIT_INTERNAL;
        }
        return RLT_CLI_EXIT_OK;
    }
    char *copy = NULL;
    const char *paths[MAX_IO];
    int n = split_list(list, &copy, paths, MAX_IO);
    int rc = RLT_CLI_EXIT_USAGE;
    if (n < 0) {
        rlt_cli_error("out of memory");
        rc = RLT_CLI_EXIT_INTERNAL;
    } else if (n != n_in) {
        rlt_cli_error("--input: the model has %d input%s; %d file%s given", n_in, n_in == 1 ? "" : "s",
                      n > MAX_IO ? MAX_IO : n, n == 1 ? " was" : "s were");
    } else {
        rc = RLT_CLI_EXIT_OK;
        for (int i = 0; i < n && rc == RLT_CLI_EXIT_OK; i++) {
            rlt_status st = rlt_npy_load(paths[i], &in[i], &d);
            if (st != RLT_STATUS_OK) {
                rlt_cli_error("--input: %s", d.message);
                rc = st == RLT_STATUS_OUT_OF_MEMORY ? RLT_CLI_EXIT_INTERNAL : RLT_CLI_EXIT_USAGE;
            }
        }
    }
    free(copy);
    return rc;
}

static int write_outputs(const char *list, int n_out, rlt_array *const *out)
{
    rlt_diag d = {0};
    char *copy = NULL;
    const char *paths[MAX_IO];
    int n = split_list(list, &copy, paths, MAX_IO), rc = RLT_CLI_EXIT_OK;
    if (n < 0) {
        rlt_cli_error("out of memory");
        rc = RLT_CLI_EXIT_INTERNAL;
    }
    for (int i = 0; i < n && i < n_out && rc == RLT_CLI_EXIT_OK; i++) {
        if (rlt_npy_save(paths[i], out[i], &d) != RLT_STATUS_OK) {
            rlt_cli_error("--output: %s", d.message);
            rc = RLT_CLI_EXIT_INTERNAL;
        }
    }
    free(copy);
    return rc;
}

/* The options' checks that need no model: --output's count comes later. */
static int read_numbers(const rlt_cli_args *args, run_result *r)
{
    rlt_diag d = {0};
    int64_t threads, repeat;
    if (rlt_cli_args_int(args, "threads", 1, 1, RLT_MAX_THREADS, &threads, &d) != RLT_STATUS_OK ||
        rlt_cli_args_int(args, "repeat", 10, 1, 1000000, &repeat, &d) != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        return RLT_CLI_EXIT_USAGE;
    }
    r->n_threads = (int)threads;
    r->repeat = (int)repeat;
    return RLT_CLI_EXIT_OK;
}

static int run_run(const rlt_cli_args *args)
{
    int rc = RLT_CLI_EXIT_USAGE;
    rlt_diag d = {0};
    rlt_status st;
    run_result r = {.path = rlt_cli_args_get(args, "model")};
    rlt_array *in[MAX_IO] = {0}, *out[MAX_IO] = {0}, *ref[MAX_IO] = {0};
    prof_row *rows = NULL;
    char *json = NULL;
    int n_in = 0, n_out = 0;
    if (!r.path || !r.path[0]) {
        rlt_cli_error("--model FILE is required: the ONNX model to run");
        return RLT_CLI_EXIT_USAGE;
    }
    if ((rc = read_numbers(args, &r)) != RLT_CLI_EXIT_OK) return rc;
    if (rlt_cli_args_has(args, "cold") && rlt_cli_args_has(args, "warm")) {
        rlt_cli_error("--cold and --warm contradict each other: give one (or neither: cold)");
        return RLT_CLI_EXIT_USAGE;
    }
    if ((rc = rlt_cli_model_layout(args, true, &r.block)) != RLT_CLI_EXIT_OK) return rc;
    rc = RLT_CLI_EXIT_USAGE;
    /* --db: the named file must exist; the default is used when present */
    r.db_path = rlt_cli_args_get(args, "db");
    if (r.db_path && access(r.db_path, R_OK) != 0) {
        rlt_cli_error("--db: cannot read '%s': %s", r.db_path, strerror(errno));
        return RLT_CLI_EXIT_USAGE;
    }
    if (!r.db_path && access("rltune.db", R_OK) == 0) r.db_path = "rltune.db";
    if ((rc = rlt_cli_model_load(r.path, &r.model)) != RLT_CLI_EXIT_OK) return rc;
    rc = RLT_CLI_EXIT_USAGE;
    n_in = rlt_model_n_inputs(r.model);
    n_out = rlt_model_n_outputs(r.model);
    if (n_in > MAX_IO || n_out > MAX_IO) {
        rlt_cli_error("%s: the model has %d inputs and %d outputs; rltune run takes at most %d of each", r.path, n_in,
                      n_out, MAX_IO);
        goto cleanup;
    }
    if ((rc = load_inputs(args, r.model, in)) != RLT_CLI_EXIT_OK) goto cleanup;
    rc = RLT_CLI_EXIT_INTERNAL;
    for (int i = 0; i < n_out; i++) {
        rlt_model_tensor t;
        rlt_model_output(r.model, i, &t);
        if (rlt_array_create(t.elem, t.rank, t.dims, &out[i], &d) != RLT_STATUS_OK) {
            rlt_cli_error("%s", d.message);
            goto cleanup;
        }
    }
    /* the reference first: a wrong input is reported before compiling */
    if ((st = rlt_model_evaluate(r.model, (const rlt_array *const *)in, ref, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("%s: %s", rlt_cli_args_has(args, "input") ? "--input" : r.path, d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    /* a rewritten graph is checked against the original graph's reference */
    if (rlt_cli_args_has(args, "graph-opt") &&
        (rc = rlt_cli_graph_opt_apply(rlt_cli_args_get(args, "graph-opt"), r.path, r.db_path, r.n_threads,
                                      rlt_cli_model_cold(args, r.model, true), rlt_cli_args_has(args, "json"),
                                      &r.model)) != RLT_CLI_EXIT_OK)
        goto cleanup;
    rc = RLT_CLI_EXIT_INTERNAL;
    rlt_net_options o;
    rlt_net_options_init(&o);
    o.db_path = r.db_path;
    o.n_threads = r.n_threads;
    o.build.cc = rlt_cli_args_get(args, "cc");
    o.build.cflags = rlt_cli_args_get(args, "cflags");
    o.cold_weights = r.is_cold = rlt_cli_model_cold(args, r.model, true);
    o.channel_block = r.block;
    r.is_layout_auto = r.block == RLT_NET_BLOCK_AUTO;
    if ((st = rlt_model_compile(r.model, &o, &r.net, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("%s: %s", r.path, d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    r.block = rlt_net_channel_block(r.net);
    for (int i = 0; i < rlt_net_n_tasks(r.net); i++) {
        rlt_net_task t;
        rlt_net_task_get(r.net, i, &t);
        if (t.origin == RLT_NET_FROM_SEED) r.n_untuned++;
        else r.n_tuned++;
    }
    /* the checked run, a second warm-up, then the timed runs; one thread
     * is pinned to its CPU (kernels with more threads keep every CPU) */
    rlt_net_timing_options to;
    rlt_net_timing_options_init(&to);
    to.n_warmup = 2;
    to.repeat = r.repeat;
    to.is_pinned = r.n_threads == 1;
    to.is_profiled = rlt_cli_args_has(args, "profile");
    rlt_net_timing timing;
    if ((st = rlt_net_time(r.net, (const rlt_array *const *)in, out, (const rlt_array *const *)ref, &to, &timing,
                           &d)) != RLT_STATUS_OK) {
        rlt_cli_error("%s: %s", r.path, d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    r.median_ms = timing.median_ms;
    r.min_ms = timing.min_ms;
    r.max_error = timing.max_error;
    r.max_ref = timing.max_reference;
    r.is_correct = timing.is_correct;
    if (rlt_cli_args_has(args, "profile") && !(rows = profile_rows(r.net))) {
        rlt_cli_error("out of memory");
        goto cleanup;
    }
    if (rlt_cli_args_has(args, "output") && (rc = write_outputs(rlt_cli_args_get(args, "output"), n_out, out)) != 0)
        goto cleanup;
    if (rlt_cli_args_has(args, "json")) {
        if (!(json = format_json(&r, rows))) {
            rlt_cli_error("out of memory formatting the result");
            rc = RLT_CLI_EXIT_INTERNAL;
            goto cleanup;
        }
        printf("%s\n", json);
    } else {
        print_text(&r, rows);
    }
    rc = r.is_correct ? RLT_CLI_EXIT_OK : RLT_CLI_EXIT_KERNEL_FAILED;
cleanup:
    cJSON_free(json);
    free(rows);
    for (int i = 0; i < MAX_IO; i++) {
        rlt_array_destroy(in[i]);
        rlt_array_destroy(out[i]);
        rlt_array_destroy(ref[i]);
    }
    rlt_net_destroy(r.net);
    rlt_model_destroy(r.model);
    return rc;
}

const rlt_cli_cmd rlt_cli_cmd_run = {
    .name = "run",
    .brief = "compile an ONNX model with its tuned kernels, run it, check it and time it",
    .synopsis = "--model FILE [--db FILE] [--input X.npy] [--output Y.npy] [--threads N] [--repeat R]\n"
                "                  [--seed S] [--profile] [--cc CMD] [--cflags FLAGS] [--cold | --warm]\n"
                "                  [--layout nchw|nchwc] [--json]",
    .summary = "Compiles the model: each task (a Conv, Gemm or MatMul with the elementwise nodes fused\n"
               "into it, as 'rltune tasks' lists them) gets the schedule of its best record in --db on\n"
               "this target, else that of the op without its epilogue, else the first rule-built seed\n"
               "of its search space; the other nodes run on rltune's own code. Runs it on the input\n"
               "(--input, else seeded random), checks every output against rltune's reference\n"
               "evaluation of the graph (max error within 1e-4 of the largest reference value), and\n"
               "prints the latency: median and min of --repeat runs after two warm-ups.",
    .details = "With --profile, every step's time per run, slowest first. With --json, stdout holds one\n"
               "JSON object: model, threads, latency_ms {median, min}, repeat, correct, max_error,\n"
               "max_reference, tolerance, peak_memory_bytes (the activations' memory plan),\n"
               "extra_bytes, compile_s, tasks_tuned, tasks_untuned, db, tasks (spec, weight, flops,\n"
               "origin: record / base_record / seed, record_id, record_ms) and with --profile, profile\n"
               "(node, what, step, n_nodes, ms, flops).\n"
               "Exit status 1 when the output is wrong (the report is still printed); 2 for a bad\n"
               "model, input or option. docs/net.md describes the compiled network.",
    .n_opts = (int)RLT_CLI_ARRAY_LEN(run_opts),
    .opts = run_opts,
    .run = run_run,
};
