/*
 * looptune.c - benchmark of the LoopTune policy (issue 6): on held-out
 * shapes, the shipped policy's kernel and wall time against the searches
 * over the same env (greedy with 1- and 2-step lookahead, beam of width 2
 * and 4, random search with the policy's time and with 10x it) and against
 * OpenBLAS, all measured in the same run.
 *
 * For each workload every method starts from the op's default nest in a new
 * env with a cold compile cache (a temporary directory, so no method builds
 * faster for what another built) and the same peak; its wall time is the
 * method's own, measurement included. The searches' and the policy's
 * measurements are quick (3 samples of >= 10 ms); each method's final kernel
 * is then measured again carefully (7 samples of >= 50 ms) in --rounds rounds
 * interleaved with OpenBLAS (bench_sgemm, a separate program), and the
 * tables give the median of those rounds.
 *
 * Usage: bench_looptune --policy FILE (--dataset FILE [--n-test N] | --random-shapes N --shape-seed S)
 *                       [--conv SPEC;SPEC..] [--steps N] [--rounds N] [--budget S] [--seed S]
 *                       [--methods a,b,..] [--prev-policy FILE] [--unpacked]
 *   --n-test N   held-out matmul shapes taken from the dataset's test part, evenly spaced (default 6)
 *   --random-shapes N  instead of a dataset, N matmuls drawn by --shape-seed as `rltune gen-dataset
 *                --kind mm-random --dims 16:1024:1` draws them (odd, prime, thin and tall sizes); pick
 *                a seed no training set was drawn with (models/mm-any.shapes: 7)
 *   --random-kind KIND  what --random-shapes draws: mm-random (default), dense-random or
 *                bmm-random (`rltune gen-dataset`'s kinds; batch_matmul with --dims 16:512:1); the
 *                OpenBLAS baseline is sgemm with B transposed for dense (its W[j, k]; without the
 *                bias and relu) and B products a call for batch_matmul
 *   --conv       conv2d layers to add (default: two ResNet-style 3x3 layers), ';'-separated, or "none"
 *   --steps N    the policy's rollout length and the searches' depth (default RLT_POLICY_DEFAULT_STEPS, 24)
 *   --budget S   time limit of each search except random (default 300 s)
 *   --prev-policy FILE  also roll out this policy (greedy and beam 2: methods prev-policy,
 *                prev-policy-beam2), e.g. the one the new policy replaces
 *   --unpacked   also re-measure each policy's kernel without the env's packs (docs/env.md,
 *                "Packing"), in the same rounds: what the packing rule adds
 * Prints markdown tables on stdout and progress on stderr.
 */
#include "measure/measure.h"
#include "policy/search.h"
#include "policy/shapes.h"

#include "bench_util.h"
#include "timing.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef RLTUNE_BENCH_DIR
#define RLTUNE_BENCH_DIR "."
#endif

enum { MAX_WORKLOADS = 72, MAX_ROUNDS = 16, MAX_METHODS = 12, MAX_RANDOM_SHAPES = 64 };

/* What issue 30 asks of `rltune optimize`'s wall time, cold cache. */
#define OPTIMIZE_WALL_TARGET_S 3.0

typedef enum method_kind {
    M_POLICY,
    M_POLICY_BEAM,
    M_PREV_POLICY,
    M_PREV_POLICY_BEAM,
    M_GREEDY,
    M_BEAM,
    M_RANDOM_SAME,
    M_RANDOM_10X
} method_kind;

typedef struct method {
    const char *name;
    method_kind kind;
    int param; /* lookahead, beam width */
} method;

static const method ALL_METHODS[] = {
    {"policy", M_POLICY, 0},
    {"policy-beam2", M_POLICY_BEAM, 2},
    {"prev-policy", M_PREV_POLICY, 0},
    {"prev-policy-beam2", M_PREV_POLICY_BEAM, 2},
    {"greedy1", M_GREEDY, 1},
    {"greedy2", M_GREEDY, 2},
    {"beam2", M_BEAM, 2},
    {"beam4", M_BEAM, 4},
    {"random-same", M_RANDOM_SAME, 0},
    {"random-10x", M_RANDOM_10X, 0},
};

typedef struct run {
    bool has_run;
    double search_gflops; /* as the method measured it */
    double wall_s;
    int64_t n_evaluations;
    int n_trace;
    char schedule[4096];
    double remeasured[MAX_ROUNDS];
    double final_gflops;  /* median of the re-measurements */
    char unpacked[4096];  /* --unpacked: the schedule without its pack lines ("" without) */
    double unpacked_remeasured[MAX_ROUNDS];
    double unpacked_gflops;
} run;

/* The schedule without its `pack` lines, into out. */
static void strip_packs(const char *schedule, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *line = schedule; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line + 1) : strlen(line);
        if (strncmp(line, "pack ", 5) != 0 && n + len < cap) {
            memcpy(out + n, line, len);
            n += len;
        }
        line += len;
    }
    out[n] = '\0';
}

/* Whether OpenBLAS is a baseline of the op (matmul, dense, batch_matmul). */
static bool is_product(const char *spec)
{
    return strncmp(spec, "matmul:", 7) == 0 || strncmp(spec, "dense:", 6) == 0 || strncmp(spec, "batch_matmul:", 13) == 0;
}

/* The spec's value of KEY ("M"), 0 when absent. */
static int64_t spec_value(const char *spec, const char *key)
{
    char pat[16];
    snprintf(pat, sizeof pat, "%s=", key);
    for (const char *p = strchr(spec, ':'); p; p = strchr(p + 1, ','))
        if (strncmp(p + 1, pat, strlen(pat)) == 0) return strtoll(p + 1 + strlen(pat), NULL, 10);
    return 0;
}

/* OpenBLAS sgemm on the op's product through bench_sgemm (dense: B
 * transposed; batch_matmul: B products a call); 0 when it is missing or
 * fails. */
static double sgemm_gflops(const char *spec)
{
    char cmd[1024];
    int64_t batch = strncmp(spec, "batch_matmul:", 13) == 0 ? spec_value(spec, "B") : 1;
    snprintf(cmd, sizeof cmd, "%s/bench_sgemm %" PRId64 " %" PRId64 " %" PRId64 " 1 --batch %" PRId64 "%s --json",
             RLTUNE_BENCH_DIR, spec_value(spec, "M"), spec_value(spec, "N"), spec_value(spec, "K"), batch,
             strncmp(spec, "dense:", 6) == 0 ? " --trans-b" : "");
    return bench_run_json(cmd, "gflops");
}

static bool is_conv(const char *spec) { return strncmp(spec, "conv2d:", 7) == 0; }

/* oneDNN's direct convolution on a conv2d through bench_dnnl, one thread,
 * the layouts it prefers, the primitive alone (the input already in its
 * layout, the weights reordered once: what a network of oneDNN layers pays
 * a layer); 0 when it is missing or fails. */
static double dnnl_gflops(const char *spec)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s/bench_dnnl '%s' --threads 1 --json", RLTUNE_BENCH_DIR, spec);
    return bench_run_json(cmd, "gflops");
}

/* One method on one workload, from the default nest, with a cold cache. */
static bool is_policy_method(const method *m) { return m->kind <= M_PREV_POLICY_BEAM; }

static void run_method(const char *spec, const method *m, const rlt_policy *policy, const rlt_policy *prev,
                       double peak, int steps, double budget_s, double policy_wall_s, uint64_t seed, run *out)
{
    char *cache = bench_temp_dir_or_die();
    rlt_env_opts eo = {.cache_dir = cache, .peak_gflops = peak, .seed = seed};
    rlt_env *env = NULL;
    rlt_diag d = {0};
    if (rlt_env_create(spec, &eo, &env, &d) != RLT_STATUS_OK) bench_die(2, "%s: %s", spec, d.message);
    uint64_t t0 = rlt_time_ns();
    if (rlt_env_reset(env, &d) != RLT_STATUS_OK) bench_die(3, "%s: %s", spec, d.message);
    double reset_s = (double)(rlt_time_ns() - t0) * 1e-9;
    rlt_optimize_result r = {0};
    rlt_status st;
    if (is_policy_method(m)) {
        rlt_rollout_opts ro = {.max_steps = steps, .beam_width = m->param};
        bool is_prev = m->kind == M_PREV_POLICY || m->kind == M_PREV_POLICY_BEAM;
        st = rlt_policy_rollout(is_prev ? prev : policy, env, &ro, &r, &d);
    } else {
        rlt_env_search_opts so = {.max_steps = steps, .seed = seed, .time_budget_s = budget_s};
        if (m->kind == M_GREEDY) {
            so.kind = RLT_ENV_SEARCH_GREEDY;
            so.lookahead = m->param;
        } else if (m->kind == M_BEAM) {
            so.kind = RLT_ENV_SEARCH_BEAM;
            so.beam_width = m->param;
        } else {
            so.kind = RLT_ENV_SEARCH_RANDOM;
            so.time_budget_s = fmax(0.5, (m->kind == M_RANDOM_10X ? 10 : 1) * policy_wall_s - reset_s);
        }
        st = rlt_env_search(env, &so, &r, &d);
    }
    if (st != RLT_STATUS_OK) bench_die(3, "%s, %s: %s", spec, m->name, d.message);
    memset(out, 0, sizeof *out);
    out->has_run = true;
    out->search_gflops = r.gflops;
    out->wall_s = r.wall_s + reset_s; /* the start's measurement is the method's too */
    out->n_evaluations = r.n_evaluations + 1;
    out->n_trace = r.n_trace;
    snprintf(out->schedule, sizeof out->schedule, "%s", r.schedule);
    rlt_optimize_result_free(&r);
    rlt_env_destroy(env);
    bench_remove_dir_or_warn(cache);
    free(cache);
}

static char *remeasure_cache;

static double remeasure(const rlt_workload *w, const rlt_op *op, const char *schedule)
{
    return bench_measure_schedule(w, op, schedule, NULL, remeasure_cache, 1, 120);
}

/* One line per workload with each policy method's kernel against the
 * baseline (OpenBLAS for products, oneDNN for conv2d) and its wall time,
 * then each one's geometric mean, worst ratio and slowest run per family:
 * the numbers issue 30 judges, in one place. */
static void print_policies_table(const char *const *specs, int n_work,
                                 const method *const *methods, int n_methods, run runs[][MAX_METHODS],
                                 const double *base, bool unpacked)
{
    printf("### All workloads, policies\n\n(baseline: OpenBLAS sgemm for matmul, dense and batch_matmul, oneDNN's "
           "primitive for conv2d)\n\n| workload | baseline |");
    for (int k = 0; k < n_methods; k++)
        if (is_policy_method(methods[k])) {
            printf(" %s GFLOP/s | x baseline | wall s |", methods[k]->name);
            if (unpacked) printf(" without packs | x baseline |");
        }
    printf("\n|---|---:|");
    for (int k = 0; k < n_methods; k++)
        if (is_policy_method(methods[k])) printf(unpacked ? "---:|---:|---:|---:|---:|" : "---:|---:|---:|");
    printf("\n");
    for (int w = 0; w < n_work; w++) {
        printf("| %s | ", specs[w]);
        if (base[w] > 0) printf("%.1f |", base[w]);
        else printf("n/a |");
        for (int k = 0; k < n_methods; k++) {
            if (!is_policy_method(methods[k])) continue;
            const run *r = &runs[w][k];
            printf(" %.1f | ", r->final_gflops);
            if (base[w] > 0) printf("%.2f", r->final_gflops / base[w]);
            else printf("n/a");
            printf(" | %.2f |", r->wall_s);
            if (!unpacked) continue;
            printf(" %.1f | ", r->unpacked_gflops);
            if (base[w] > 0) printf("%.2f |", r->unpacked_gflops / base[w]);
            else printf("n/a |");
        }
        printf("\n");
    }
    printf("\n| method | workloads | x baseline geomean | min | >= 0.7x | wall s max | runs over %.0f s |\n"
           "|---|---|---:|---:|---:|---:|---:|\n", OPTIMIZE_WALL_TARGET_S);
    for (int row = 0; row < 4 * n_methods; row++) {
        int k = row / 4;
        bool is_unpacked = row % 2, is_conv_row = (row / 2) % 2;
        if (!is_policy_method(methods[k]) || (is_unpacked && !unpacked)) continue;
        static double ratios[MAX_WORKLOADS];
        int n = 0, n_good = 0, n_slow = 0, n_family = 0;
        double mn = INFINITY, wall_max = 0;
        for (int w = 0; w < n_work; w++) {
            if (is_conv(specs[w]) != is_conv_row) continue;
            n_family++;
            wall_max = fmax(wall_max, runs[w][k].wall_s);
            n_slow += runs[w][k].wall_s > OPTIMIZE_WALL_TARGET_S;
            if (!(base[w] > 0)) continue;
            ratios[n] = (is_unpacked ? runs[w][k].unpacked_gflops : runs[w][k].final_gflops) / base[w];
            mn = fmin(mn, ratios[n]);
            n_good += ratios[n] >= 0.7;
            n++;
        }
        if (n_family == 0) continue;
        printf("| %s%s | %s | %.3f | %.3f | %d of %d | %.2f | %d of %d |\n", methods[k]->name,
               is_unpacked ? " without packs" : "", is_conv_row ? "conv2d (x oneDNN)" : "products (x OpenBLAS)",
               bench_geomean(ratios, n), n ? mn : 0, n_good, n, wall_max, n_slow, n_family);
    }
    printf("\n");
}

static const char *arg_value(int *i, int argc, char **argv)
{
    if (*i + 1 >= argc) bench_die(2, "%s needs a value", argv[*i]);
    return argv[++*i];
}

int main(int argc, char **argv)
{
    bench_program = "bench_looptune";
    const char *policy_path = NULL, *dataset_path = NULL, *prev_path = NULL, *random_kind = "mm-random";
    const char *conv = "conv2d:N=1,C=32,H=28,W=28,K=32,R=3,S=3,stride=1,pad=1;"
                       "conv2d:N=1,C=64,H=14,W=14,K=64,R=3,S=3,stride=1,pad=1";
    char methods_arg[256] = "";
    int n_test = 6, steps = RLT_POLICY_DEFAULT_STEPS, rounds = 3, n_random = 0;
    double budget_s = 300;
    uint64_t seed = 0, shape_seed = 0;
    bool has_shape_seed = false, unpacked = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--policy") == 0) policy_path = arg_value(&i, argc, argv);
        else if (strcmp(argv[i], "--prev-policy") == 0) prev_path = arg_value(&i, argc, argv);
        else if (strcmp(argv[i], "--dataset") == 0) dataset_path = arg_value(&i, argc, argv);
        else if (strcmp(argv[i], "--conv") == 0) conv = arg_value(&i, argc, argv);
        else if (strcmp(argv[i], "--n-test") == 0) n_test = atoi(arg_value(&i, argc, argv));
        else if (strcmp(argv[i], "--random-shapes") == 0) n_random = atoi(arg_value(&i, argc, argv));
        else if (strcmp(argv[i], "--random-kind") == 0) random_kind = arg_value(&i, argc, argv);
        else if (strcmp(argv[i], "--shape-seed") == 0) {
            shape_seed = strtoull(arg_value(&i, argc, argv), NULL, 10);
            has_shape_seed = true;
        }
        else if (strcmp(argv[i], "--steps") == 0) steps = atoi(arg_value(&i, argc, argv));
        else if (strcmp(argv[i], "--rounds") == 0) rounds = atoi(arg_value(&i, argc, argv));
        else if (strcmp(argv[i], "--budget") == 0) budget_s = atof(arg_value(&i, argc, argv));
        else if (strcmp(argv[i], "--seed") == 0) seed = strtoull(arg_value(&i, argc, argv), NULL, 10);
        else if (strcmp(argv[i], "--unpacked") == 0) unpacked = true;
        else if (strcmp(argv[i], "--methods") == 0)
            snprintf(methods_arg, sizeof methods_arg, "%s", arg_value(&i, argc, argv));
        else bench_die(2, "unknown argument '%s' (see the comment at the top of bench/looptune.c)", argv[i]);
    }
    if (!policy_path || !dataset_path == !n_random)
        bench_die(2, "--policy FILE and one of --dataset FILE or --random-shapes N are required");
    if (n_random && (n_random < 1 || n_random > MAX_RANDOM_SHAPES || !has_shape_seed))
        bench_die(2, "--random-shapes 1..%d, with --shape-seed S (one no training set was drawn with)",
                  MAX_RANDOM_SHAPES);
    if (n_test < 0 || n_test > (n_random ? MAX_RANDOM_SHAPES : 24) || steps < 1 || steps > 64 || rounds < 1 || rounds > MAX_ROUNDS || !(budget_s > 0))
        bench_die(2, "--n-test 0..24, --steps 1..64, --rounds 1..%d, --budget > 0", MAX_ROUNDS);

    rlt_diag d = {0};
    rlt_policy *policy = NULL, *prev = NULL;
    rlt_shape_set shapes = {0};
    if (rlt_policy_load(policy_path, &policy, &d) != RLT_STATUS_OK) bench_die(2, "%s", d.message);
    if (prev_path && rlt_policy_load(prev_path, &prev, &d) != RLT_STATUS_OK) bench_die(2, "%s", d.message);
    if (dataset_path && rlt_shape_set_load(dataset_path, &shapes, &d) != RLT_STATUS_OK) bench_die(2, "%s", d.message);
    if (n_random) {
        rlt_shape_gen_opts go = {.kind = random_kind,
                                 .dims = strcmp(random_kind, "bmm-random") == 0 ? "16:512:1" : "16:1024:1",
                                 .max_shapes = n_random,
                                 .seed = shape_seed};
        if (rlt_shape_set_generate(&go, &shapes, &d) != RLT_STATUS_OK) bench_die(2, "%s", d.message);
        for (int k = 0; k < shapes.n; k++) shapes.is_test[k] = true; /* all of them evaluated */
        n_test = shapes.n;
    }

    /* the methods */
    const method *methods[MAX_METHODS];
    int n_methods = 0;
    for (size_t k = 0; k < RLT_ARRAY_LEN(ALL_METHODS); k++) {
        char padded[300];
        snprintf(padded, sizeof padded, ",%s,", methods_arg);
        char key[64];
        snprintf(key, sizeof key, ",%s,", ALL_METHODS[k].name);
        bool is_prev = ALL_METHODS[k].kind == M_PREV_POLICY || ALL_METHODS[k].kind == M_PREV_POLICY_BEAM;
        if ((!methods_arg[0] || strstr(padded, key)) && (prev || !is_prev)) methods[n_methods++] = &ALL_METHODS[k];
    }
    if (n_methods == 0 || methods[0]->kind != M_POLICY) bench_die(2, "--methods must include policy (first)");

    /* the workloads: evenly spaced test shapes, then the conv layers */
    const char *specs[MAX_WORKLOADS];
    int n_work = 0;
    static int test_idx[4096];
    int n_idx = 0;
    for (int k = 0; k < shapes.n && n_idx < 4096; k++)
        if (shapes.is_test[k]) test_idx[n_idx++] = k;
    if (n_test > n_idx) n_test = n_idx;
    for (int i = 0; i < n_test; i++) {
        const char *spec = shapes.specs[test_idx[(int64_t)i * n_idx / n_test]];
        specs[n_work++] = spec;
    }
    char *conv_copy = strdup(conv);
    for (char *tok = strtok(conv_copy, ";"); tok && strcmp(conv, "none") != 0 && n_work < MAX_WORKLOADS;
         tok = strtok(NULL, ";")) {
        specs[n_work++] = tok;
    }

    /* the peak, once (cached per target in the default cache) */
    rlt_env *probe = NULL;
    if (rlt_env_create("matmul:M=8,N=8,K=8", NULL, &probe, &d) != RLT_STATUS_OK ||
        rlt_env_reset(probe, &d) != RLT_STATUS_OK)
        bench_die(3, "settling the peak: %s", d.message);
    double peak = rlt_env_peak_gflops(probe);
    rlt_env_destroy(probe);

    time_t now = time(NULL);
    char date[64];
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    rlt_target target;
    rlt_target_detect(&target);
    printf("## bench/looptune (%s)\n\n", date);
    printf("Machine: %s, %d cores, %d-float vectors; peak %.1f GFLOP/s (one core, FP32 FMA). One thread.\n",
           target.cpu_model, target.n_cores, target.vector_floats, peak);
    printf("Policy: %s (%s). %s\n", policy_path, rlt_policy_algo_str(policy->algo),
           policy->about ? "How it was trained is below." : "");
    if (prev) printf("Previous policy (prev-policy): %s (%s).\n", prev_path, rlt_policy_algo_str(prev->algo));
    if (n_random)
        printf("Shapes: %d drawn with --shape-seed %" PRIu64 " (%s).\n", n_random, shape_seed, shapes.about);
    printf("Steps: %d (rollout length and search depth); search budget %.0f s; final kernels re-measured in %d "
           "rounds (7 samples >= 50 ms, median), OpenBLAS sgemm or oneDNN (one thread) in the same rounds.\n\n",
           steps, budget_s, rounds);

    remeasure_cache = bench_temp_dir_or_die();
    static run runs[MAX_WORKLOADS][MAX_METHODS];
    double base[MAX_WORKLOADS] = {0};
    double ratio_best[MAX_WORKLOADS], ratio_time[MAX_WORKLOADS], ratio_blas[MAX_WORKLOADS];
    int n_ratio = 0, n_blas_ratio = 0;

    for (int w = 0; w < n_work; w++) {
        const char *spec = specs[w];
        for (int k = 0; k < n_methods; k++) {
            fprintf(stderr, "%s: %s ...", spec, methods[k]->name);
            fflush(stderr);
            run_method(spec, methods[k], policy, prev, peak, steps, budget_s, runs[w][0].wall_s, seed, &runs[w][k]);
            fprintf(stderr, " %.2f GFLOP/s in %.1f s (%lld states)\n", runs[w][k].search_gflops, runs[w][k].wall_s,
                    (long long)runs[w][k].n_evaluations);
            if (unpacked && is_policy_method(methods[k]))
                strip_packs(runs[w][k].schedule, runs[w][k].unpacked, sizeof runs[w][k].unpacked);
        }
        rlt_op *op = NULL;
        rlt_workload *wl = NULL;
        rlt_build_opts wopts = {.cache_dir = remeasure_cache};
        if (rlt_op_parse(spec, &op, &d) != RLT_STATUS_OK ||
            rlt_workload_create(op, &wopts, seed, &wl, &d) != RLT_STATUS_OK)
            bench_die(3, "%s: %s", spec, d.message);
        double b[MAX_ROUNDS];
        for (int r = 0; r < rounds; r++) {
            for (int k = 0; k < n_methods; k++) {
                run *rr = &runs[w][k];
                rr->remeasured[r] = remeasure(wl, op, rr->schedule);
                if (rr->unpacked[0])
                    rr->unpacked_remeasured[r] = strcmp(rr->unpacked, rr->schedule) == 0
                                                     ? rr->remeasured[r] /* nothing packed: the same kernel */
                                                     : remeasure(wl, op, rr->unpacked);
            }
            if (is_product(spec)) b[r] = sgemm_gflops(spec);
            if (is_conv(spec)) b[r] = dnnl_gflops(spec);
        }
        if (is_product(spec) || is_conv(spec)) base[w] = bench_median(b, rounds);
        for (int k = 0; k < n_methods; k++) {
            runs[w][k].final_gflops = bench_median(runs[w][k].remeasured, rounds);
            if (runs[w][k].unpacked[0]) runs[w][k].unpacked_gflops = bench_median(runs[w][k].unpacked_remeasured, rounds);
        }

        /* the table of this workload */
        int best = -1;
        for (int k = 1; k < n_methods; k++)
            if (!is_policy_method(methods[k]) &&
                (best < 0 || runs[w][k].final_gflops > runs[w][best].final_gflops))
                best = k;
        printf("### %s%s\n\n", spec, !is_product(spec) ? "" : n_random ? " (drawn)" : " (held out)");
        printf("| method | GFLOP/s | x best search | x %s | wall s | states measured | actions |\n",
               is_conv(spec) ? "oneDNN" : "OpenBLAS");
        printf("|---|---:|---:|---:|---:|---:|---:|\n");
        for (int k = 0; k < n_methods; k++) {
            const run *r = &runs[w][k];
            printf("| %s%s | %.1f | %.2f | ", methods[k]->name, k == best ? " (best search)" : "", r->final_gflops,
                   best >= 0 && runs[w][best].final_gflops > 0 ? r->final_gflops / runs[w][best].final_gflops : 0);
            if (base[w] > 0) printf("%.2f", r->final_gflops / base[w]);
            else printf("n/a");
            printf(" | %.1f | %lld | %d |\n", r->wall_s, (long long)r->n_evaluations, r->n_trace);
        }
        if (base[w] > 0)
            printf("| %s | %.1f | | 1.00 | | | |\n", is_conv(spec) ? "oneDNN (primitive alone)" : "OpenBLAS sgemm",
                   base[w]);
        printf("\n");
        fflush(stdout);
        if (best >= 0 && runs[w][best].final_gflops > 0) {
            ratio_best[n_ratio] = runs[w][0].final_gflops / runs[w][best].final_gflops;
            ratio_time[n_ratio++] = runs[w][0].wall_s / runs[w][best].wall_s;
        }
        if (base[w] > 0 && is_product(spec)) ratio_blas[n_blas_ratio++] = runs[w][0].final_gflops / base[w];
        rlt_workload_destroy(wl);
        rlt_op_destroy(op);
    }

    print_policies_table(specs, n_work, methods, n_methods, runs, base, unpacked);

    printf("### Summary\n\n");
    printf("| | geometric mean | min | target |\n|---|---:|---:|---|\n");
    double mn = INFINITY;
    if (n_ratio > 0) { /* only with a search among the methods */
        for (int i = 0; i < n_ratio; i++) mn = fmin(mn, ratio_best[i]);
        printf("| policy GFLOP/s / best search's (all workloads) | %.2f | %.2f | >= 0.9 |\n",
               bench_geomean(ratio_best, n_ratio), mn);
        double mx = 0;
        for (int i = 0; i < n_ratio; i++) mx = fmax(mx, ratio_time[i]);
        printf("| policy wall time / best search's | %.3f | (max %.3f) | <= 0.1 |\n",
               bench_geomean(ratio_time, n_ratio), mx);
    }
    mn = INFINITY;
    for (int i = 0; i < n_blas_ratio; i++) mn = fmin(mn, ratio_blas[i]);
    if (n_blas_ratio > 0)
        printf("| policy GFLOP/s / OpenBLAS (held-out products) | %.2f | %.2f | >= 0.7 |\n",
               bench_geomean(ratio_blas, n_blas_ratio), mn);
    if (policy->about) printf("\nThe policy's `about`:\n\n```\n%s%s```\n", policy->about,
                              policy->about[0] && policy->about[strlen(policy->about) - 1] == '\n' ? "" : "\n");

    bench_remove_dir_or_warn(remeasure_cache);
    free(remeasure_cache);
    free(conv_copy);
    rlt_shape_set_free(&shapes);
    rlt_policy_destroy(prev);
    rlt_policy_destroy(policy);
    return 0;
}
