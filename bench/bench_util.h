/* bench_util.h - what the benchmark programs that tune (bench/tuning.c,
 * bench/looptune.c, bench/vs_vendor.c) share: their fatal errors, cold
 * compile caches in temporary directories, the careful measurement of a
 * found schedule, and baselines run as separate programs that print one JSON
 * object. Header-only, like timing.h: each bench/ program is its own
 * executable, and sets bench_program first thing in main. */
#ifndef RLT_BENCH_UTIL_H
#define RLT_BENCH_UTIL_H

#include "core/core.h"
#include "measure/measure.h"
#include "sched/sched.h"
#include "search/tune.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The program's name, the prefix of its messages. */
static const char *bench_program = "bench";

static inline void bench_die(int code, const char *fmt, ...) RLT_PRINTF(2, 3);

/* Prints "PROGRAM: message" on stderr and exits with `code`. */
static inline void bench_die(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", bench_program);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(code);
}

/* A new empty directory under /tmp (owned: free it), or NULL with errno. */
static inline char *bench_temp_dir(void)
{
    char templ[] = "/tmp/rltune-bench-XXXXXX";
    char *d = mkdtemp(templ);
    return d ? strdup(d) : NULL;
}

/* Removes a directory made by bench_temp_dir and everything in it; false
 * when that failed. */
static inline bool bench_remove_dir(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0;
}

/* bench_temp_dir, or the program dies. */
static inline char *bench_temp_dir_or_die(void)
{
    char *d = bench_temp_dir();
    if (!d) bench_die(3, "cannot make a temporary directory: %s", strerror(errno));
    return d;
}

/* bench_remove_dir, with a warning when it fails. */
static inline void bench_remove_dir_or_warn(const char *dir)
{
    if (!bench_remove_dir(dir)) fprintf(stderr, "%s: could not remove %s\n", bench_program, dir);
}

/* The kernel of a schedule found by a search, measured carefully: its output
 * checked against the reference first, then 7 samples of >= 50 ms. cc NULL
 * or "" is the default compiler; kernels are cached in cache_dir. 0 when the
 * kernel fails; the program dies when the schedule does not replay. */
static inline double bench_measure_schedule(const rlt_workload *w, const rlt_op *op, const char *schedule,
                                            const char *cc, const char *cache_dir, int threads, double timeout_s)
{
    rlt_diag d = {0};
    rlt_sched *s = NULL;
    rlt_nest nest;
    if (rlt_sched_parse(schedule, "found", &s, &d) != RLT_STATUS_OK ||
        rlt_sched_apply(s, op, &nest, &d) != RLT_STATUS_OK)
        bench_die(3, "replaying a found schedule of %s: %s\n%s", op->spec, d.message, schedule);
    rlt_sched_destroy(s);
    rlt_build_opts bopts = {.cc = cc && cc[0] ? cc : NULL, .cache_dir = cache_dir};
    rlt_run_opts ropts = {.repeat = 7, .min_repeat_ms = 50, .timeout_s = timeout_s, .n_threads = threads};
    rlt_run_result res;
    if (rlt_measure_nests(w, &bopts, &ropts, 1, &nest, &res, &d) != RLT_STATUS_OK)
        bench_die(3, "measuring a found kernel of %s: %s", op->spec, d.message);
    if (res.status != RLT_STATUS_OK || !res.is_correct) {
        fprintf(stderr, "%s: a found kernel of %s failed: %s\n", bench_program, op->spec, res.message);
        return 0;
    }
    return res.gflops;
}

/* A tuning run's progress line on stderr (rlt_tune_opts.progress); the
 * context is the run's name, a string. */
static inline void bench_tune_progress(const rlt_tune_progress *p, void *what)
{
    fprintf(stderr, "\r  %-64.64s %5d/%-5d best %7.2f GFLOP/s  %5.2f trials/s", (const char *)what, p->n_done,
            p->n_total, p->best_gflops, p->measurements_per_s);
    fflush(stderr);
}

/* Runs a command and parses its stdout as one JSON object: out[i] gets the
 * number at keys[i], 0 where it is absent, and all are 0 when the program is
 * missing or fails (the tables say n/a). */
static inline void bench_run_json_numbers(const char *cmd, int n_keys, const char *const *keys, double *out)
{
    for (int i = 0; i < n_keys; i++) out[i] = 0;
    FILE *p = popen(cmd, "r");
    if (!p) return;
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, p);
    buf[n] = '\0';
    if (pclose(p) != 0) return;
    cJSON *j = cJSON_Parse(buf);
    for (int i = 0; i < n_keys && j; i++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, keys[i]);
        out[i] = cJSON_IsNumber(x) ? x->valuedouble : 0;
    }
    cJSON_Delete(j);
}

/* The number at `key` of a command's JSON output (bench_run_json_numbers). */
static inline double bench_run_json(const char *cmd, const char *key)
{
    double v;
    bench_run_json_numbers(cmd, 1, &key, &v);
    return v;
}

#endif /* RLT_BENCH_UTIL_H */
