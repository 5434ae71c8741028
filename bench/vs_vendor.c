/*
 * vs_vendor.c - kernel quality (issue 4): for every workload of a list
 * (bench/workloads/standard.txt by default), rltune tunes for a fixed trial
 * budget, and its best kernel is then measured side by side with OpenBLAS and
 * oneDNN, at each thread count asked for, in the same run.
 *
 * Tuning. One `rlt_tune` run per workload and thread count, as `rltune tune
 * --tuner T --trials N --threads t` does it, with a cold compile cache. All
 * runs keep their records in one database (a temporary one unless --db), and
 * with transfer on (the default) each model-based run is warm-started from
 * the records of the workloads of its kind tuned before it in the same run
 * (`rltune tune --transfer`). A run at more than one thread also starts from
 * the best configuration found at the previous thread count and its
 * neighbours (`start_key`; the parallel knob, which a 1-thread space lacks,
 * starts at none), so that it needs its budget for what threads change.
 * Every run measures --seeds rule-built configurations (default
 * RLT_TUNE_SEEDS, as `rltune tune`; rlt_space_seeds) before the tuner's own
 * proposals; they count in the trial budget. Each run ends with rltune
 * tune's final pick (--final N, default 4: the N best measured again, 3
 * rounds, the best median kept; 0 turns it off). The tuning wall time of
 * every run is reported.
 *
 * Measuring. After a workload's runs, each best kernel is measured again
 * (7 samples of >= 50 ms; its output checked against the reference first, so
 * every number in the table is of a verified kernel), in --rounds rounds
 * interleaved with the baselines, and the table gives the median of the
 * rounds. Baselines run as separate programs from this build directory, so
 * that the libraries they load stay out of this process, pinned like
 * rltune's runner:
 *   OpenBLAS   bench_sgemm, for the matmul-like ops: matmul (M N K),
 *              batch_matmul (B products per call), dense (B transposed);
 *              dense's bias is not counted.
 *   oneDNN     bench_dnnl (when built): the primitive with the layouts it
 *              prefers (weights reordered once, outside the timing; the
 *              activations' reorders not counted: what a network of oneDNN
 *              layers pays), the same with the reorders of the input into
 *              and the output out of its layouts counted (what one layer
 *              between NCHW tensors pays, as rltune's kernel does: its
 *              packing of activations is timed), and with rltune's plain
 *              layouts (NCHW). For matmul and batch_matmul there is one
 *              oneDNN number (plain). The targets are judged against the
 *              primitive alone, as the issue states them.
 *
 * Usage: bench_vs_vendor [--trials N] [--final N] [--tuner NAME] [--threads 1,2] [--rounds N]
 *                        [--workloads FILE] [--only SUBSTRING]... [--seed S]
 *                        [--no-transfer] [--db FILE] [--seeds N] [--check-process]
 * --only (repeatable) keeps the workloads whose spec contains one of the
 * substrings. --check-process also measures every tuned kernel, each round,
 * through an `rltune measure` process (7 samples of >= 50 ms, as here), and
 * ends with a table of both figures: a check that this process, which has
 * tuned and holds the cost model's OpenMP runtime, does not slow the
 * children it forks.
 * Prints markdown on stdout (a row per workload and thread count as soon as
 * it is measured, then the geometric means per op family and the targets);
 * progress on stderr.
 */
#include "ir/ir.h"
#include "measure/measure.h"
#include "sched/sched.h"
#include "search/tune.h"

#include "bench_util.h"
#include "timing.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef RLTUNE_BENCH_DIR
#define RLTUNE_BENCH_DIR "."
#endif
#ifndef RLTUNE_SOURCE_DIR
#define RLTUNE_SOURCE_DIR "."
#endif

enum { MAX_WORKLOADS = 64, MAX_THREADS = 4, MAX_ROUNDS = 16, SPEC_MAX = 256 };

/* The op families of the summary, with their targets (issue 4). */
typedef enum family { FAM_MATMUL, FAM_CONV2D, FAM_DEPTHWISE, FAM_DENSE, N_FAMILIES } family;
static const char *FAMILY_NAMES[N_FAMILIES] = {"matmul (incl. batch_matmul)", "conv2d", "depthwise_conv2d", "dense"};

typedef struct cell {
    bool has_run;
    double tuned_gflops; /* the run's own best, tuning-time measurement */
    double wall_s;       /* tuning wall time */
    int n_trials, n_failed, n_transfer_rows;
    char schedule[4096];
    char cc[16];
    char config[1024];
    double rltune[MAX_ROUNDS], blas[MAX_ROUNDS], dnnl_pref[MAX_ROUNDS], dnnl_pref_io[MAX_ROUNDS],
        dnnl_plain[MAX_ROUNDS];
    double m_rltune, m_blas, m_pref, m_pref_io, m_plain; /* medians over the rounds; 0 = n/a */
    double own[MAX_ROUNDS], m_own; /* --check-process: measured by an `rltune measure` process */
} cell;

static family family_of(const rlt_op *op)
{
    if (strcmp(op->kind, "conv2d") == 0) return FAM_CONV2D;
    if (strcmp(op->kind, "depthwise_conv2d") == 0) return FAM_DEPTHWISE;
    if (strcmp(op->kind, "dense") == 0) return FAM_DENSE;
    return FAM_MATMUL;
}

/* The extent of the axis of this name; 0 when the op has none. */
static int64_t axis_extent(const rlt_op *op, const char *name)
{
    int a = rlt_op_find_axis(op, name);
    return a >= 0 ? op->axes[a].extent : 0;
}

/* ---- the workload list ------------------------------------------------------- */

static int read_workloads(const char *path, char specs[][SPEC_MAX], int cap)
{
    FILE *f = fopen(path, "r");
    if (!f) bench_die(2, "cannot read the workload list %s: %s", path, strerror(errno));
    char line[1024];
    int n = 0, line_no = 0;
    while (fgets(line, sizeof line, f)) {
        line_no++;
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        char *s = line;
        while (*s == ' ' || *s == '\t') s++;
        size_t len = strlen(s);
        while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == '\r' || s[len - 1] == ' ' || s[len - 1] == '\t'))
            s[--len] = '\0';
        if (len == 0) continue;
        if (n == cap) bench_die(2, "%s:%d: more than %d workloads", path, line_no, cap);
        if (len >= SPEC_MAX) bench_die(2, "%s:%d: op spec longer than %d characters", path, line_no, SPEC_MAX - 1);
        rlt_op *op = NULL;
        rlt_diag d = {0};
        if (rlt_op_parse(s, &op, &d) != RLT_STATUS_OK) bench_die(2, "%s:%d: %s", path, line_no, d.message);
        rlt_op_destroy(op);
        memcpy(specs[n++], s, len + 1);
    }
    fclose(f);
    return n;
}

static bool is_selected(const char *spec, const char *const *only, int n_only)
{
    for (int i = 0; i < n_only; i++)
        if (strstr(spec, only[i])) return true;
    return n_only == 0;
}

/* ---- tuning ---------------------------------------------------------------------- */

typedef struct tune_setup {
    const char *tuner;
    int trials;
    int n_final; /* rlt_tune_opts.n_final */
    int n_seeds; /* rlt_tune_opts.n_seeds */
    uint64_t seed;
    rlt_db *db;
    bool transfer;
} tune_setup;

static void tune_cell(const rlt_op *op, const tune_setup *ts, int threads, const cell *previous, cell *out)
{
    char *cache = bench_temp_dir_or_die();
    char what[600];
    snprintf(what, sizeof what, "%s, %d thread%s", op->spec, threads, threads == 1 ? "" : "s");
    char start[1100] = "";
    if (previous && previous->config[0])
        snprintf(start, sizeof start, "%s%s", previous->config,
                 threads > 1 && !strstr(previous->config, ";parallel=") ? ";parallel=none" : "");
    rlt_tune_opts o = {
        .tuner = ts->tuner,
        .n_trials = ts->trials,
        .seed = ts->seed,
        .n_threads = threads,
        .build = {.cache_dir = cache},
        .run = {.repeat = 3, .min_repeat_ms = 10, .timeout_s = 20},
        .db = ts->db,
        .transfer_db = ts->transfer ? ts->db : NULL,
        .start_key = start[0] ? start : NULL,
        .n_final = ts->n_final,
        .n_seeds = ts->n_seeds,
        .progress = bench_tune_progress,
        .progress_ctx = what,
    };
    rlt_tune_result r;
    rlt_diag d = {0};
    rlt_status st = rlt_tune(op, &o, &r, &d);
    fprintf(stderr, "\n");
    if (st != RLT_STATUS_OK) bench_die(3, "tuning %s: %s", what, d.message);
    if (start[0]) fprintf(stderr, "  started from %s\n", start);
    fprintf(stderr, "  best %s\n", r.best_config);
    memset(out, 0, sizeof *out);
    out->has_run = true;
    out->tuned_gflops = r.best_gflops;
    out->wall_s = r.wall_s;
    out->n_trials = r.n_trials;
    out->n_failed = r.n_failed;
    out->n_transfer_rows = r.n_transfer_rows;
    snprintf(out->schedule, sizeof out->schedule, "%s", r.best_schedule);
    snprintf(out->cc, sizeof out->cc, "%s", r.best_cc);
    snprintf(out->config, sizeof out->config, "%s", r.best_config);
    rlt_tune_result_free(&r);
    bench_remove_dir_or_warn(cache);
    free(cache);
}

/* ---- measuring ------------------------------------------------------------------ */

static char *remeasure_cache;

/* The tuned kernel measured carefully; 0 when there is none or it fails. */
static double measure_tuned(const rlt_workload *w, const rlt_op *op, const cell *c, int threads)
{
    if (!c->schedule[0]) return 0;
    return bench_measure_schedule(w, op, c->schedule, c->cc, remeasure_cache, threads, 300);
}

/* The tuned kernel measured by an `rltune measure` process, as a user
 * would measure it (--check-process): the same samples as measure_tuned,
 * from a process that has not tuned anything. 0 when it fails. */
static double measure_tuned_own_process(const rlt_op *op, const cell *c, int threads)
{
    if (!c->schedule[0]) return 0;
    char path[1200];
    snprintf(path, sizeof path, "%s/own.sched", remeasure_cache);
    FILE *f = fopen(path, "w");
    if (!f) bench_die(3, "cannot write %s: %s", path, strerror(errno));
    bool ok = fputs(c->schedule, f) >= 0;
    if (fclose(f) != 0 || !ok) bench_die(3, "cannot write %s", path);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "%s measure --op '%s' --schedule '%s' --threads %d --cc '%s' --repeat 7 --min-repeat-ms 50 "
             "--timeout 300 --json",
             RLTUNE_BINARY, op->spec, path, threads, c->cc[0] ? c->cc : "gcc");
    return bench_run_json(cmd, "gflops");
}

typedef struct baseline_cmds {
    char blas[1024], pref[1024], plain[1024]; /* "" = none */
} baseline_cmds;

static void baseline_commands(const rlt_op *op, int threads, bool has_dnnl, baseline_cmds *b)
{
    memset(b, 0, sizeof *b);
    const char *dir = RLTUNE_BENCH_DIR;
    long long m = axis_extent(op, "i"), n = axis_extent(op, "j"), k = axis_extent(op, "k");
    if (strcmp(op->kind, "matmul") == 0)
        snprintf(b->blas, sizeof b->blas, "%s/bench_sgemm %lld %lld %lld %d --json", dir, m, n, k, threads);
    else if (strcmp(op->kind, "batch_matmul") == 0)
        snprintf(b->blas, sizeof b->blas, "%s/bench_sgemm %lld %lld %lld %d --batch %lld --json", dir, m, n, k,
                 threads, (long long)axis_extent(op, "b"));
    else if (strcmp(op->kind, "dense") == 0)
        snprintf(b->blas, sizeof b->blas, "%s/bench_sgemm %lld %lld %lld %d --trans-b --json", dir, m, n, k, threads);
    if (!has_dnnl) return;
    bool plain_only = strcmp(op->kind, "matmul") == 0 || strcmp(op->kind, "batch_matmul") == 0;
    if (!plain_only)
        snprintf(b->pref, sizeof b->pref, "%s/bench_dnnl '%s' --threads %d --format preferred --json", dir, op->spec,
                 threads);
    snprintf(b->plain, sizeof b->plain, "%s/bench_dnnl '%s' --threads %d --format plain --json", dir, op->spec,
             threads);
}

static double run_baseline(const char *cmd)
{
    return cmd[0] ? bench_run_json(cmd, "gflops") : 0;
}

/* ---- the tables --------------------------------------------------------------- */

static void print_num(double v)
{
    if (v > 0)
        printf(" %.1f |", v);
    else
        printf(" n/a |");
}

/* A ratio, or n/a for 0 (unknown). */
static void print_ratio_value(double r)
{
    if (r > 0)
        printf(" %.2f |", r);
    else
        printf(" n/a |");
}

static void print_ratio(double a, double b) { print_ratio_value(a > 0 && b > 0 ? a / b : 0); }

/* The ratios a[i] / b[i] where both are known, 0 elsewhere (bench_geomean
 * leaves those out). */
static void ratios(const double *a, const double *b, int n, double *out)
{
    for (int i = 0; i < n; i++) out[i] = a[i] > 0 && b[i] > 0 ? a[i] / b[i] : 0;
}

static double median_of(const double *v, int n)
{
    double tmp[MAX_ROUNDS];
    int k = 0;
    for (int i = 0; i < n; i++)
        if (v[i] > 0) tmp[k++] = v[i];
    return k ? bench_median(tmp, k) : 0;
}

int main(int argc, char **argv)
{
    bench_program = "bench_vs_vendor";
    int trials = 128, rounds = 3, n_final = 4, n_seeds = RLT_TUNE_SEEDS;
    uint64_t seed = 0;
    bool transfer = true, check_process = false;
    char tuner[64] = "xgb-rank", thread_list[64] = "1,2", db_path[1024] = "";
    const char *only[MAX_WORKLOADS];
    int n_only = 0;
    char list_path[1024];
    snprintf(list_path, sizeof list_path, "%s/bench/workloads/standard.txt", RLTUNE_SOURCE_DIR);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--no-transfer") == 0) {
            transfer = false;
            continue;
        }
        if (strcmp(a, "--check-process") == 0) {
            check_process = true;
            continue;
        }
        if (!v) bench_die(2, "option %s needs a value (see the header of bench/vs_vendor.c)", a);
        if (strcmp(a, "--trials") == 0) trials = atoi(v);
        else if (strcmp(a, "--rounds") == 0) rounds = atoi(v);
        else if (strcmp(a, "--final") == 0) n_final = atoi(v);
        else if (strcmp(a, "--seeds") == 0) n_seeds = atoi(v);
        else if (strcmp(a, "--seed") == 0) seed = strtoull(v, NULL, 10);
        else if (strcmp(a, "--tuner") == 0) snprintf(tuner, sizeof tuner, "%s", v);
        else if (strcmp(a, "--threads") == 0) snprintf(thread_list, sizeof thread_list, "%s", v);
        else if (strcmp(a, "--only") == 0 && n_only < MAX_WORKLOADS) only[n_only++] = v;
        else if (strcmp(a, "--workloads") == 0) snprintf(list_path, sizeof list_path, "%s", v);
        else if (strcmp(a, "--db") == 0) snprintf(db_path, sizeof db_path, "%s", v);
        else bench_die(2, "unknown option %s", a);
        i++;
    }
    if (trials < 1 || rounds < 1 || rounds > MAX_ROUNDS || n_final < 0 || n_final > 16 || n_seeds < 0 ||
        n_seeds > 64)
        bench_die(2, "out of range: --trials >= 1, --rounds 1..16, --final 0..16, --seeds 0..64");
    int threads[MAX_THREADS], n_threads = 0;
    {
        char tl[64];
        snprintf(tl, sizeof tl, "%s", thread_list);
        for (char *tok = strtok(tl, ","); tok; tok = strtok(NULL, ",")) {
            int t = atoi(tok);
            if (t < 1 || t > 256 || n_threads == MAX_THREADS) bench_die(2, "--threads: at most 4 counts, each 1..256");
            threads[n_threads++] = t;
        }
        if (n_threads == 0) bench_die(2, "--threads: no thread count");
    }
    static char specs[MAX_WORKLOADS][SPEC_MAX];
    int n_all = read_workloads(list_path, specs, MAX_WORKLOADS), n_wl = 0;
    for (int i = 0; i < n_all; i++)
        if (is_selected(specs[i], only, n_only)) memmove(specs[n_wl++], specs[i], SPEC_MAX);
    if (n_wl == 0) bench_die(2, "no workload of %s matches --only", list_path);

    char *tmp_dir = NULL;
    if (!db_path[0]) {
        tmp_dir = bench_temp_dir_or_die();
        snprintf(db_path, sizeof db_path, "%s/records.db", tmp_dir);
    }
    rlt_db *db = NULL;
    rlt_diag d = {0};
    if (rlt_db_open(db_path, &(rlt_db_opts){0}, &db, &d) != RLT_STATUS_OK) bench_die(3, "%s", d.message);
    remeasure_cache = bench_temp_dir_or_die();
    char dnnl_path[1024];
    snprintf(dnnl_path, sizeof dnnl_path, "%s/bench_dnnl", RLTUNE_BENCH_DIR);
    bool has_dnnl = access(dnnl_path, X_OK) == 0;

    char date[64];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M %Z", localtime(&now));
    rlt_target target;
    rlt_target_detect(&target);
    printf("# bench_vs_vendor, %s\n\n", date);
    printf("Machine: %s, %d cores, %d-float vectors. oneDNN: %s.\n", target.cpu_model, target.n_cores,
           target.vector_floats, has_dnnl ? "bench_dnnl" : "not built (n/a)");
    printf("Command: bench_vs_vendor --trials %d --final %d --seeds %d --tuner %s --threads %s --rounds %d --seed %llu%s%s",
           trials, n_final, n_seeds, tuner, thread_list, rounds, (unsigned long long)seed,
           transfer ? "" : " --no-transfer", check_process ? " --check-process" : "");
    for (int i = 0; i < n_only; i++) printf(" --only '%s'", only[i]);
    printf("\n");
    printf("Budget: %d trials of %s per workload and thread count (%d of them rule-built seeds)%s.\n\n",
           trials, tuner, n_seeds,
           transfer && strncmp(tuner, "xgb", 3) == 0 ? ", warm-started from the records of the workloads of the same kind before it" : "");
    printf("GFLOP/s, medians of %d rounds; ratios are rltune / baseline. \"tune s\": tuning wall time "
           "(compile, run, verify, model).\n\n",
           rounds);
    printf("\"oneDNN preferred\": the primitive alone, activations already in its layouts; \"+ reorders\": "
           "with the reorders from and to NCHW counted, as rltune counts its own packing.\n\n");
    printf("| workload | threads | rltune | OpenBLAS | oneDNN preferred | oneDNN preferred + reorders | oneDNN plain | "
           "/ OpenBLAS | / oneDNN preferred | / preferred + reorders | / oneDNN plain | tune s | failed |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    fflush(stdout);

    static cell cells[MAX_WORKLOADS][MAX_THREADS];
    family fam[MAX_WORKLOADS];
    /* transfer warm-starts the model-based tuners only (xgb, xgb-rank) */
    tune_setup ts = {tuner, trials, n_final, n_seeds, seed, db, transfer && strncmp(tuner, "xgb", 3) == 0};
    double tune_total_s = 0;
    for (int wi = 0; wi < n_wl; wi++) {
        rlt_op *op = NULL;
        if (rlt_op_parse(specs[wi], &op, &d) != RLT_STATUS_OK) bench_die(3, "%s", d.message);
        fam[wi] = family_of(op);
        for (int t = 0; t < n_threads; t++) {
            tune_cell(op, &ts, threads[t], t > 0 ? &cells[wi][t - 1] : NULL, &cells[wi][t]);
            tune_total_s += cells[wi][t].wall_s;
        }
        rlt_workload *w = NULL;
        rlt_build_opts wopts = {.cache_dir = remeasure_cache};
        if (rlt_workload_create(op, &wopts, 0, &w, &d) != RLT_STATUS_OK) bench_die(3, "%s", d.message);
        for (int r = 0; r < rounds; r++) {
            fprintf(stderr, "  measuring %s, round %d/%d\n", op->spec, r + 1, rounds);
            for (int t = 0; t < n_threads; t++) {
                cell *c = &cells[wi][t];
                baseline_cmds b;
                baseline_commands(op, threads[t], has_dnnl, &b);
                c->rltune[r] = measure_tuned(w, op, c, threads[t]);
                c->blas[r] = run_baseline(b.blas);
                static const char *const pref_keys[] = {"gflops", "gflops_with_reorders"};
                double pref[2] = {0, 0};
                if (b.pref[0]) bench_run_json_numbers(b.pref, 2, pref_keys, pref);
                c->dnnl_pref[r] = pref[0];
                c->dnnl_pref_io[r] = pref[1];
                c->dnnl_plain[r] = run_baseline(b.plain);
                c->own[r] = check_process ? measure_tuned_own_process(op, c, threads[t]) : 0;
                fprintf(stderr, "    %d thread%s: rltune %.1f", threads[t], threads[t] == 1 ? "" : "s", c->rltune[r]);
                if (check_process) fprintf(stderr, " (own process %.1f)", c->own[r]);
                fprintf(stderr, ", OpenBLAS %.1f, oneDNN preferred %.1f, plain %.1f\n", c->blas[r],
                        c->dnnl_pref[r], c->dnnl_plain[r]);
            }
        }
        rlt_workload_destroy(w);
        for (int t = 0; t < n_threads; t++) {
            cell *c = &cells[wi][t];
            c->m_rltune = median_of(c->rltune, rounds);
            c->m_blas = median_of(c->blas, rounds);
            c->m_pref = median_of(c->dnnl_pref, rounds);
            c->m_pref_io = median_of(c->dnnl_pref_io, rounds);
            c->m_plain = median_of(c->dnnl_plain, rounds);
            c->m_own = median_of(c->own, rounds);
            printf("| %s | %d |", op->spec, threads[t]);
            print_num(c->m_rltune);
            print_num(c->m_blas);
            print_num(c->m_pref);
            print_num(c->m_pref_io);
            print_num(c->m_plain);
            print_ratio(c->m_rltune, c->m_blas);
            print_ratio(c->m_rltune, c->m_pref);
            print_ratio(c->m_rltune, c->m_pref_io);
            print_ratio(c->m_rltune, c->m_plain);
            printf(" %.0f | %d |\n", c->wall_s, c->n_failed);
        }
        fflush(stdout);
        rlt_op_destroy(op);
    }

    /* Summary: geometric means per family and thread count, and the targets. */
    printf("\n## Geometric means per op family\n\n");
    printf("| family | threads | workloads | / OpenBLAS | / oneDNN preferred | / preferred + reorders | / oneDNN plain "
           "| target | met |\n");
    printf("|---|---|---|---|---|---|---|---|---|\n");
    for (int f = 0; f < N_FAMILIES; f++)
        for (int t = 0; t < n_threads; t++) {
            double a[MAX_WORKLOADS], blas[MAX_WORKLOADS], pref[MAX_WORKLOADS], pref_io[MAX_WORKLOADS],
                plain[MAX_WORKLOADS];
            int n = 0;
            for (int wi = 0; wi < n_wl; wi++) {
                if (fam[wi] != (family)f) continue;
                const cell *c = &cells[wi][t];
                a[n] = c->m_rltune;
                blas[n] = c->m_blas;
                pref[n] = c->m_pref;
                pref_io[n] = c->m_pref_io;
                plain[n] = c->m_plain;
                n++;
            }
            if (n == 0) continue;
            double r[MAX_WORKLOADS];
            ratios(a, blas, n, r);
            double g_blas = bench_geomean(r, n);
            ratios(a, pref, n, r);
            double g_pref = bench_geomean(r, n);
            ratios(a, pref_io, n, r);
            double g_pref_io = bench_geomean(r, n);
            ratios(a, plain, n, r);
            double g_plain = bench_geomean(r, n);
            printf("| %s | %d | %d |", FAMILY_NAMES[f], threads[t], n);
            print_ratio_value(g_blas);
            print_ratio_value(g_pref);
            print_ratio_value(g_pref_io);
            print_ratio_value(g_plain);
            /* The targets: matmul >= 1.0x OpenBLAS on every shape;
             * conv2d geomean >= 0.9x oneDNN preferred and > 1.0x plain on
             * every layer; depthwise and dense >= 1.0x oneDNN. */
            bool met = true;
            const char *goal = "";
            for (int i = 0; i < n; i++) {
                if (f == FAM_MATMUL) met &= blas[i] > 0 && a[i] >= blas[i];
                if (f == FAM_CONV2D) met &= plain[i] > 0 && a[i] > plain[i];
                if (f == FAM_DEPTHWISE || f == FAM_DENSE) {
                    double best_dnnl = fmax(pref[i], plain[i]);
                    met &= best_dnnl > 0 && a[i] >= best_dnnl;
                }
            }
            if (f == FAM_MATMUL) goal = ">= 1.0x OpenBLAS on every shape";
            if (f == FAM_CONV2D) {
                goal = ">= 0.9x oneDNN preferred (geomean), > 1.0x oneDNN plain on every layer";
                met &= g_pref >= 0.9;
            }
            if (f == FAM_DEPTHWISE || f == FAM_DENSE) goal = ">= 1.0x oneDNN (faster format) on every layer";
            printf(" %s | %s |\n", goal, met ? "met" : "MISSED");
        }
    printf("\nTuning wall time, all runs: %.0f s (%.1f min).\n", tune_total_s, tune_total_s / 60);
    if (check_process) {
        printf("\n## rltune's kernels measured in this process and in their own\n\n");
        printf("| workload | threads | this process | own process | own / this | rounds (this; own) |\n");
        printf("|---|---|---|---|---|---|\n");
        for (int wi = 0; wi < n_wl; wi++)
            for (int t = 0; t < n_threads; t++) {
                const cell *c = &cells[wi][t];
                printf("| %s | %d |", specs[wi], threads[t]);
                print_num(c->m_rltune);
                print_num(c->m_own);
                print_ratio(c->m_own, c->m_rltune);
                for (int r = 0; r < rounds; r++) printf(" %.1f", c->rltune[r]);
                printf(";");
                for (int r = 0; r < rounds; r++) printf(" %.1f", c->own[r]);
                printf(" |\n");
            }
    }
    fflush(stdout);

    rlt_db_close(db);
    bench_remove_dir_or_warn(remeasure_cache);
    free(remeasure_cache);
    if (tmp_dir) {
        bench_remove_dir_or_warn(tmp_dir);
        free(tmp_dir);
    }
    return 0;
}
