/*
 * tuning.c - benchmark of the tuning loop (issue 3): how fast rltune measures
 * candidates, and how good a kernel each tuner finds for a trial budget,
 * next to OpenBLAS and oneDNN measured in the same run.
 *
 * Part 1, throughput: `rltune tune`'s loop (rlt_tune) on matmul 256^3 with a
 * cold compile cache, for the random tuner (no model) and xgb-rank (model
 * training and annealing included): measured candidates per second of wall
 * time, compile, run and verification included. Median over seeds.
 *
 * Part 2, search quality: for each workload, tuner and seed, one tuning run
 * of --trials trials with a cold cache and no records (nothing read back);
 * its curve gives the best GFLOP/s after 64, 256 and 1000 trials (those
 * within the budget). Those are tuning-time measurements (3 samples of >=
 * 10 ms), and the best of many noisy numbers leans high; so each run's final
 * kernel is measured again at the end, carefully (7 samples of >= 50 ms),
 * in --rounds rounds interleaved with the baselines, and the tables give the
 * median of those rounds. "Best found" is the best of those re-measured
 * kernels over all tuners and seeds.
 *
 * Baselines run as separate programs from this build directory, so that the
 * libraries they load stay out of this process: bench_sgemm (OpenBLAS sgemm;
 * for conv2d on the im2col GEMM shape, im2col not counted: a bound, not a
 * convolution) and bench_dnnl (oneDNN, when built: the primitive alone with
 * its preferred layout, activations' reorders not counted, and with plain
 * NCHW). All at the run's thread count, pinned like rltune's runner.
 *
 * By default the tuners are measured alone (--rule-seeds 0); `rltune tune`
 * first measures 8 rule-built configurations (its --seeds), and
 * --rule-seeds 8 measures the tuners as a user running it gets them (the
 * seeds count among the trials).
 *
 * Usage: bench_tuning [--trials N] [--seeds N] [--rule-seeds N] [--tuners a,b,..]
 *                     [--workloads matmul,conv2d] [--throughput-trials N] [--rounds N]
 *                     [--threads N] [--skip-throughput]
 * Prints markdown tables on stdout and progress on stderr.
 */
#include "measure/measure.h"
#include "sched/sched.h"
#include "search/tune.h"

#include "bench_util.h"
#include "timing.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef RLTUNE_BENCH_DIR
#define RLTUNE_BENCH_DIR "."
#endif

enum { MAX_TUNERS = 8, MAX_SEEDS = 16, MAX_ROUNDS = 16 };

static const int CHECKPOINTS[] = {64, 256, 1000};
enum { N_CHECKPOINTS = 3 };

typedef struct workload {
    const char *name;
    const char *spec;
    int gemm_m, gemm_n, gemm_k; /* the OpenBLAS row: sgemm of this shape */
    const char *gemm_note;
    bool has_dnnl;
} workload;

static const workload WORKLOADS[] = {
    {"matmul", "matmul:M=512,N=512,K=512", 512, 512, 512, "sgemm", true},
    /* conv2d as GEMM: K x (C*R*S) times (C*R*S) x (P*Q) */
    {"conv2d", "conv2d:N=1,C=128,H=28,W=28,K=128,R=3,S=3,stride=1,pad=1", 128, 784, 1152,
     "sgemm on the im2col shape, im2col not counted", true},
};

typedef struct run_result {
    bool has_run;
    double at[N_CHECKPOINTS]; /* best GFLOP/s after CHECKPOINTS[i] trials (0: beyond the budget) */
    double tuned_gflops;      /* the run's own best */
    double wall_s, per_s;
    int n_failed;
    char schedule[4096];
    char cc[16];
    double remeasured[MAX_ROUNDS];
} run_result;

/* ---- baselines: separate programs, JSON out (bench_run_json) ------------- */

static bool is_program(const char *path) { return access(path, X_OK) == 0; }

/* ---- tuning runs ---------------------------------------------------------- */

/* One tuning run with a cold compile cache and no records. */
static void tune_once(const rlt_op *op, const char *tuner, uint64_t seed, int trials, int threads, int rule_seeds,
                      run_result *out)
{
    char *cache = bench_temp_dir_or_die();
    char what[768];
    snprintf(what, sizeof what, "%s %s seed %llu", op->spec, tuner, (unsigned long long)seed);
    rlt_tune_opts o = {
        .tuner = tuner,
        .n_trials = trials,
        .seed = seed,
        .n_threads = threads,
        .n_seeds = rule_seeds,
        .build = {.cache_dir = cache},
        .run = {.repeat = 3, .min_repeat_ms = 10, .timeout_s = 10},
        .progress = bench_tune_progress,
        .progress_ctx = what,
    };
    rlt_tune_result r;
    rlt_diag d = {0};
    rlt_status st = rlt_tune(op, &o, &r, &d);
    fprintf(stderr, "\n");
    if (st != RLT_STATUS_OK) bench_die(3, "tuning %s: %s", what, d.message);
    memset(out, 0, sizeof *out);
    out->has_run = true;
    for (int c = 0; c < N_CHECKPOINTS; c++)
        out->at[c] = CHECKPOINTS[c] <= r.n_trials ? r.curve[CHECKPOINTS[c] - 1] : 0;
    out->tuned_gflops = r.best_gflops;
    out->wall_s = r.wall_s;
    out->per_s = r.measurements_per_s;
    out->n_failed = r.n_failed;
    snprintf(out->schedule, sizeof out->schedule, "%s", r.best_schedule);
    snprintf(out->cc, sizeof out->cc, "%s", r.best_cc);
    rlt_tune_result_free(&r);
    bench_remove_dir_or_warn(cache);
    free(cache);
}

/* Measures a run's final kernel carefully; 0 when it has none. */
static char *remeasure_cache; /* compile cache of the re-measurements */

static double remeasure(const rlt_workload *w, const rlt_op *op, const run_result *rr, int threads)
{
    if (!rr->schedule[0]) return 0;
    return bench_measure_schedule(w, op, rr->schedule, strcmp(rr->cc, "clang") == 0 ? "clang" : NULL, remeasure_cache,
                                  threads, 120);
}

/* ---- main ------------------------------------------------------------------ */

static int split_list(char *s, const char **out, int cap)
{
    int n = 0;
    for (char *tok = strtok(s, ","); tok && n < cap; tok = strtok(NULL, ",")) out[n++] = tok;
    return n;
}

static void print_cell(double v)
{
    if (v > 0)
        printf(" %.1f |", v);
    else
        printf(" n/a |");
}

int main(int argc, char **argv)
{
    bench_program = "bench_tuning";
    int trials = 1000, n_seeds = 3, throughput_trials = 128, rounds = 3, threads = 1, rule_seeds = 0;
    bool skip_throughput = false;
    char tuner_list[256] = "random,grid,ga,xgb,xgb-rank", workload_list[128] = "matmul,conv2d";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--skip-throughput") == 0) {
            skip_throughput = true;
            continue;
        }
        if (!v) bench_die(2, "option %s needs a value", a);
        if (strcmp(a, "--trials") == 0) trials = atoi(v);
        else if (strcmp(a, "--seeds") == 0) n_seeds = atoi(v);
        else if (strcmp(a, "--rule-seeds") == 0) rule_seeds = atoi(v);
        else if (strcmp(a, "--throughput-trials") == 0) throughput_trials = atoi(v);
        else if (strcmp(a, "--rounds") == 0) rounds = atoi(v);
        else if (strcmp(a, "--threads") == 0) threads = atoi(v);
        else if (strcmp(a, "--tuners") == 0) snprintf(tuner_list, sizeof tuner_list, "%s", v);
        else if (strcmp(a, "--workloads") == 0) snprintf(workload_list, sizeof workload_list, "%s", v);
        else bench_die(2, "unknown option %s", a);
        i++;
    }
    if (trials < 1 || n_seeds < 1 || n_seeds > MAX_SEEDS || throughput_trials < 1 || rounds < 1 ||
        rounds > MAX_ROUNDS || threads < 1 || threads > 256 || rule_seeds < 0 || rule_seeds > 64)
        bench_die(2, "out of range: --trials >= 1, --seeds 1..16, --throughput-trials >= 1, --rounds 1..16, "
               "--threads 1..256, --rule-seeds 0..64");
    char date[64];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M", localtime(&now));
    rlt_target target;
    rlt_target_detect(&target);
    printf("# bench_tuning, %s\n\nMachine: %s, %d cores, %d-float vectors; %d thread(s).\n", date,
           target.cpu_model, target.n_cores, target.vector_floats, threads);
    printf("Command: bench_tuning --trials %d --seeds %d --rule-seeds %d --tuners %s --workloads %s "
           "--throughput-trials %d --rounds %d --threads %d%s\n\n",
           trials, n_seeds, rule_seeds, tuner_list, workload_list, throughput_trials, rounds, threads,
           skip_throughput ? " --skip-throughput" : "");
    printf("%s\n\n", rule_seeds > 0 ? "Each run first measures rule-built configurations (rltune tune's --seeds); "
                                      "they count among its trials."
                                    : "The tuners alone: no rule-built configurations (rltune tune --seeds 0).");
    fflush(stdout);
    const char *tuners[MAX_TUNERS], *wnames[8];
    int n_tuners = split_list(tuner_list, tuners, MAX_TUNERS);
    int n_wl = split_list(workload_list, wnames, 8);


    remeasure_cache = bench_temp_dir_or_die();

    /* Part 1 */
    if (!skip_throughput) {
        rlt_op *op = NULL;
        rlt_diag d = {0};
        if (rlt_op_parse("matmul:M=256,N=256,K=256", &op, &d) != RLT_STATUS_OK) bench_die(3, "%s", d.message);
        printf("## Throughput: matmul 256^3, %d trials, cold compile cache\n\n", throughput_trials);
        printf("| tuner | trials/s (median of %d seeds) | each seed |\n|---|---|---|\n", n_seeds);
        const char *tp_tuners[] = {"random", "xgb-rank"};
        for (int t = 0; t < 2; t++) {
            double per_s[MAX_SEEDS];
            for (int s = 0; s < n_seeds; s++) {
                run_result rr;
                tune_once(op, tp_tuners[t], (uint64_t)s, throughput_trials, threads, 0, &rr);
                per_s[s] = rr.per_s;
            }
            printf("| %s | %.2f |", tp_tuners[t], bench_median(per_s, n_seeds));
            for (int s = 0; s < n_seeds; s++) printf(" %.2f", per_s[s]);
            printf(" |\n");
            fflush(stdout);
        }
        printf("\nTarget: at least 8 measured candidates per second.\n\n");
        rlt_op_destroy(op);
    }

    /* Part 2 */
    for (int wi = 0; wi < n_wl; wi++) {
        const workload *wl = NULL;
        for (size_t k = 0; k < sizeof WORKLOADS / sizeof *WORKLOADS; k++)
            if (strcmp(WORKLOADS[k].name, wnames[wi]) == 0) wl = &WORKLOADS[k];
        if (!wl) bench_die(2, "unknown workload '%s' (matmul, conv2d)", wnames[wi]);
        rlt_op *op = NULL;
        rlt_diag d = {0};
        if (rlt_op_parse(wl->spec, &op, &d) != RLT_STATUS_OK) bench_die(3, "%s", d.message);
        static run_result runs[MAX_TUNERS][MAX_SEEDS];
        memset(runs, 0, sizeof runs);
        for (int t = 0; t < n_tuners; t++)
            for (int s = 0; s < n_seeds; s++)
                tune_once(op, tuners[t], (uint64_t)s, trials, threads, rule_seeds, &runs[t][s]);

        /* Re-measure every final kernel, interleaved with the baselines. */
        rlt_workload *w = NULL;
        rlt_build_opts wopts = {.cache_dir = remeasure_cache};
        if (rlt_workload_create(op, &wopts, 0, &w, &d) != RLT_STATUS_OK) bench_die(3, "%s", d.message);
        char sgemm_cmd[1024], dnnl_pref[1024], dnnl_plain[1024];
        snprintf(sgemm_cmd, sizeof sgemm_cmd, "%s/bench_sgemm %d %d %d %d --json", RLTUNE_BENCH_DIR, wl->gemm_m,
                 wl->gemm_n, wl->gemm_k, threads);
        snprintf(dnnl_pref, sizeof dnnl_pref, "%s/bench_dnnl '%s' --threads %d --format preferred --json",
                 RLTUNE_BENCH_DIR, wl->spec, threads);
        snprintf(dnnl_plain, sizeof dnnl_plain, "%s/bench_dnnl '%s' --threads %d --format plain --json",
                 RLTUNE_BENCH_DIR, wl->spec, threads);
        char dnnl_path[1024];
        snprintf(dnnl_path, sizeof dnnl_path, "%s/bench_dnnl", RLTUNE_BENCH_DIR);
        bool has_dnnl = wl->has_dnnl && is_program(dnnl_path);
        double blas[MAX_ROUNDS], pref[MAX_ROUNDS], plain[MAX_ROUNDS];
        for (int r = 0; r < rounds; r++) {
            fprintf(stderr, "  re-measuring %s, round %d/%d\n", wl->name, r + 1, rounds);
            for (int t = 0; t < n_tuners; t++)
                for (int s = 0; s < n_seeds; s++) runs[t][s].remeasured[r] = remeasure(w, op, &runs[t][s], threads);
            blas[r] = bench_run_json(sgemm_cmd, "gflops");
            pref[r] = has_dnnl ? bench_run_json(dnnl_pref, "gflops") : 0;
            plain[r] = has_dnnl ? bench_run_json(dnnl_plain, "gflops") : 0;
        }
        rlt_workload_destroy(w);
        double blas_g = bench_median(blas, rounds), pref_g = bench_median(pref, rounds);
        double plain_g = bench_median(plain, rounds);
        /* (the conv2d's im2col GEMM does the conv's multiply-adds: the same FLOP count) */

        double best_found = 0, best_tuned = 0;
        for (int t = 0; t < n_tuners; t++)
            for (int s = 0; s < n_seeds; s++) {
                best_found = fmax(best_found, bench_median(runs[t][s].remeasured, rounds));
                best_tuned = fmax(best_tuned, runs[t][s].tuned_gflops);
            }

        printf("## %s (%s), %d trials, %d seed(s), %d thread(s)\n\n", wl->name, wl->spec, trials, n_seeds, threads);
        printf("Baselines (median of %d rounds): OpenBLAS %s %.1f GFLOP/s", rounds, wl->gemm_note, blas_g);
        if (has_dnnl)
            printf("; oneDNN preferred layout %.1f, plain NCHW %.1f GFLOP/s", pref_g, plain_g);
        else
            printf("; oneDNN: bench_dnnl not built");
        printf(".\nBest found (re-measured, all tuners and seeds): %.1f GFLOP/s.\n\n", best_found);
        printf("Medians over seeds. \"@N\": best GFLOP/s after N trials as measured while tuning; \"final\": "
               "the run's best kernel re-measured (7 samples >= 50 ms, median of %d rounds).\n\n", rounds);
        printf("| tuner |");
        for (int c = 0; c < N_CHECKPOINTS; c++)
            if (CHECKPOINTS[c] <= trials) printf(" @%d |", CHECKPOINTS[c]);
        printf(" final | final / best found | final / OpenBLAS |%s wall s | trials/s | failed |\n|---|",
               has_dnnl ? " final / oneDNN |" : "");
        for (int c = 0; c < N_CHECKPOINTS; c++)
            if (CHECKPOINTS[c] <= trials) printf("---|");
        printf("---|---|---|%s---|---|---|\n", has_dnnl ? "---|" : "");
        for (int t = 0; t < n_tuners; t++) {
            double v[MAX_SEEDS];
            printf("| %s |", tuners[t]);
            for (int c = 0; c < N_CHECKPOINTS; c++) {
                if (CHECKPOINTS[c] > trials) continue;
                for (int s = 0; s < n_seeds; s++) v[s] = runs[t][s].at[c];
                print_cell(bench_median(v, n_seeds));
            }
            for (int s = 0; s < n_seeds; s++) v[s] = bench_median(runs[t][s].remeasured, rounds);
            double fin = bench_median(v, n_seeds);
            print_cell(fin);
            printf(" %.2f | %.2f |", best_found > 0 ? fin / best_found : 0, blas_g > 0 ? fin / blas_g : 0);
            if (has_dnnl) printf(" %.2f |", pref_g > 0 ? fin / pref_g : 0);
            for (int s = 0; s < n_seeds; s++) v[s] = runs[t][s].wall_s;
            printf(" %.0f |", bench_median(v, n_seeds));
            for (int s = 0; s < n_seeds; s++) v[s] = runs[t][s].per_s;
            printf(" %.2f |", bench_median(v, n_seeds));
            for (int s = 0; s < n_seeds; s++) v[s] = runs[t][s].n_failed;
            printf(" %.0f |\n", bench_median(v, n_seeds));
        }
        /* Target: xgb within 10% of the best ever found after 256 trials; both
         * numbers are tuning-time measurements, which share their bias. */
        if (trials >= 256)
            for (int t = 0; t < n_tuners; t++) {
                if (strncmp(tuners[t], "xgb", 3) != 0) continue;
                double v[MAX_SEEDS];
                for (int s = 0; s < n_seeds; s++) v[s] = runs[t][s].at[1];
                double r = best_tuned > 0 ? bench_median(v, n_seeds) / best_tuned : 0;
                printf("\n%s after 256 trials: %.2f of the best tuning-time GFLOP/s of all runs (%.1f); target >= 0.90: %s.",
                       tuners[t], r, best_tuned, r >= 0.9 ? "met" : "MISSED");
            }
        printf("\n\n");
        fflush(stdout);
        rlt_op_destroy(op);
    }
    bench_remove_dir_or_warn(remeasure_cache);
    free(remeasure_cache);
    return 0;
}
