/*
 * peak.c - one core's FP32 FMA peak, the scale of the environment's rewards
 * (docs/env.md, "Peak").
 *
 * Entry points: env_peak_get (the cached value, else measured and cached),
 * env_peak_measure, env_peak_cache_path.
 *
 * The measurement is a generated kernel of PEAK_CHAINS independent chains
 * of `acc = acc * m + c` on vectors of the target's width (contracted to
 * FMA by -ffp-contract=fast, which the default flags have), built by the
 * builder and run by the runner like any kernel: in a child process, pinned
 * to one CPU, timed over samples. The runner checks every kernel's output
 * against a reference, so the kernel also computes an op, `Y[i] = X[i]`:
 * it writes X + 0 * (sum of the chains), which is X exactly while the
 * chains stay finite (m is in [0.25, 0.75) and |c| < 1, so they converge)
 * and which the compiler cannot drop without -ffast-math. The peak is the
 * kernel's flops (2 per lane per FMA) over its fastest sample.
 *
 * The cache file, <compile cache dir>/peak/<key>.txt with key a hash of the
 * CPU model, vector width, FMA, compiler and flags, holds
 *     # rltune peak v1
 *     gflops 72.41
 *     cpu AMD EPYC 7B13 64-Core Processor
 *     cc gcc
 *     cflags -O3 -march=native -mprefer-vector-width=512 -ffp-contract=fast
 * A file that does not read back (another version, garbage) is measured
 * again and replaced.
 */
#include "env/env.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PEAK_FILE_HEADER "# rltune peak v1"
#define PEAK_CHAINS 12        /* independent FMA chains: 2 pipes x 4 cycles of latency, and spare */
#define PEAK_ITERATIONS 16384 /* FMAs per chain per call */
#define PEAK_OP_SIZE 64       /* elements of the op the kernel also computes */

static const char *resolve_cc(const rlt_build_opts *bopts)
{
    const char *env = getenv("RLTUNE_CC");
    if (bopts->cc && bopts->cc[0]) return bopts->cc;
    return env && env[0] ? env : "gcc";
}

static const char *resolve_cflags(const rlt_build_opts *bopts)
{
    return bopts->cflags ? bopts->cflags : RLT_DEFAULT_CFLAGS;
}

/* The kernel's code, with the symbol in it, into k. */
static rlt_status peak_kernel(int width, rlt_kernel_src *k, rlt_diag *diag)
{
    rlt_str code;
    rlt_str_init(&code);
    rlt_str_printf(&code, "size_t SYMBOL_workspace_bytes(void) { return 0; }\n");
    rlt_str_printf(&code,
                   "void SYMBOL(float *const *t, void *ws, int n_threads)\n{\n"
                   "    (void)ws;\n    (void)n_threads;\n"
                   "    const float *x = t[0];\n    float *y = t[1];\n"
                   "    rlt_v%d m = rlt_splat%d(0.5f + 0.25f * x[0]), c = rlt_splat%d(x[1]);\n",
                   width, width, width);
    for (int i = 0; i < PEAK_CHAINS; i++)
        rlt_str_printf(&code, "    rlt_v%d a%d = rlt_splat%d(x[%d]);\n", width, i, width, 2 + i);
    rlt_str_printf(&code, "    for (long r = 0; r < %d; r++) {\n", PEAK_ITERATIONS);
    for (int i = 0; i < PEAK_CHAINS; i++) rlt_str_printf(&code, "        a%d = a%d * m + c;\n", i, i);
    rlt_str_append(&code, "    }\n    rlt_v");
    rlt_str_printf(&code, "%d s = a0", width);
    for (int i = 1; i < PEAK_CHAINS; i++) rlt_str_printf(&code, " + a%d", i);
    rlt_str_printf(&code,
                   ";\n    float z = 0.0f;\n    for (int l = 0; l < %d; l++) z += s[l];\n"
                   "    for (int i = 0; i < %d; i++) y[i] = x[i] + 0.0f * z;\n}\n",
                   width, PEAK_OP_SIZE);
    if (code.has_failed) {
        rlt_str_free(&code);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory generating the peak kernel");
    }
    /* The symbol: a name from the code's hash, like generated kernels. */
    uint64_t h = rlt_hash_str(RLT_HASH_SEED, code.data);
    char symbol[RLT_SYMBOL_MAX];
    snprintf(symbol, sizeof symbol, "rlt_peak_%016" PRIx64, h);
    rlt_str text;
    rlt_str_init(&text);
    for (const char *p = code.data; *p;) {
        const char *hit = strstr(p, "SYMBOL");
        if (!hit) {
            rlt_str_append(&text, p);
            break;
        }
        rlt_str_appendn(&text, p, (size_t)(hit - p));
        rlt_str_append(&text, symbol);
        p = hit + strlen("SYMBOL");
    }
    rlt_str_free(&code);
    char *taken = rlt_str_take(&text);
    if (!taken) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory generating the peak kernel");
    memset(k, 0, sizeof *k);
    snprintf(k->symbol, sizeof k->symbol, "%s", symbol);
    k->code = taken;
    return RLT_STATUS_OK;
}

rlt_status env_peak_measure(const rlt_build_opts *bopts, double *out_gflops, rlt_diag *diag)
{
    rlt_status st = RLT_STATUS_OK;
    rlt_op *op = NULL;
    rlt_workload *w = NULL;
    rlt_kernel_src k = {0};
    rlt_build_result build;
    rlt_target target;
    rlt_target_detect(&target);
    int width = target.vector_floats;
    char shape[32];
    snprintf(shape, sizeof shape, "i=%d", PEAK_OP_SIZE);

    if ((st = rlt_op_from_expr("Y[i] = X[i]", shape, &op, diag)) != RLT_STATUS_OK) goto cleanup;
    if ((st = peak_kernel(width, &k, diag)) != RLT_STATUS_OK) goto cleanup;
    if ((st = rlt_workload_create(op, bopts, 0, &w, diag)) != RLT_STATUS_OK) goto cleanup;
    if ((st = rlt_build_batch(bopts, 1, &k, &build, diag)) != RLT_STATUS_OK) goto cleanup;
    if (build.status != RLT_STATUS_OK) {
        st = rlt_fail(diag, build.status, "the peak kernel did not build: %s", build.log);
        goto cleanup;
    }
    /* Many short samples and the fastest of them: a sample that another
     * process interrupted is slower, never faster. */
    rlt_run_opts ropts = {.repeat = 15, .min_repeat_ms = 10};
    rlt_run_result r;
    rlt_run_kernel(w, &build, &ropts, &r);
    if (r.status != RLT_STATUS_OK || r.time_min_ms <= 0) {
        st = rlt_fail(diag, r.status != RLT_STATUS_OK ? r.status : RLT_STATUS_INTERNAL,
                      "the peak kernel failed (%s): %s", rlt_status_str(r.status), r.message);
        goto cleanup;
    }
    double flops = 2.0 * width * PEAK_CHAINS * (double)PEAK_ITERATIONS;
    *out_gflops = flops / (r.time_min_ms * 1e6);

cleanup:
    rlt_kernel_src_free(&k);
    rlt_workload_destroy(w);
    rlt_op_destroy(op);
    return st;
}

/* The compile cache directory, resolved as the builder does. */
static rlt_status cache_dir_of(const rlt_build_opts *bopts, char *out, size_t cap, rlt_diag *diag)
{
    const char *env;
    int len;
    if (bopts->cache_dir && bopts->cache_dir[0])
        len = snprintf(out, cap, "%s", bopts->cache_dir);
    else if ((env = getenv("RLTUNE_CACHE_DIR")) && env[0])
        len = snprintf(out, cap, "%s", env);
    else if ((env = getenv("XDG_CACHE_HOME")) && env[0])
        len = snprintf(out, cap, "%s/rltune", env);
    else if ((env = getenv("HOME")) && env[0])
        len = snprintf(out, cap, "%s/.cache/rltune", env);
    else
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "no directory for the peak cache: set RLTUNE_CACHE_DIR (or HOME)");
    if (len < 0 || (size_t)len + 64 >= cap)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "cache directory path too long: '%.200s'", out);
    return RLT_STATUS_OK;
}

rlt_status env_peak_cache_path(const rlt_build_opts *bopts, char *out, rlt_diag *diag)
{
    char dir[PATH_MAX];
    rlt_status st = cache_dir_of(bopts, dir, sizeof dir, diag);
    if (st != RLT_STATUS_OK) return st;
    rlt_target target;
    rlt_target_detect(&target);
    uint64_t h = rlt_hash_str(RLT_HASH_SEED, PEAK_FILE_HEADER);
    h = rlt_hash_str(h, target.cpu_model);
    int32_t features[2] = {target.vector_floats, target.has_fma};
    h = rlt_hash_bytes(h, features, sizeof features);
    h = rlt_hash_str(h, resolve_cc(bopts));
    h = rlt_hash_str(h, resolve_cflags(bopts));
    int len = snprintf(out, PATH_MAX, "%s/peak/%016" PRIx64 ".txt", dir, h);
    if (len < 0 || len >= PATH_MAX)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "cache directory path too long: '%.200s'", dir);
    return RLT_STATUS_OK;
}

/* The gflops line of a peak file, or false. */
static bool peak_file_parse(const char *text, double *out)
{
    size_t n = strlen(PEAK_FILE_HEADER);
    if (strncmp(text, PEAK_FILE_HEADER, n) != 0 || text[n] != '\n') return false;
    const char *line = strstr(text, "\ngflops ");
    if (!line) return false;
    char *end = NULL;
    double v = strtod(line + strlen("\ngflops "), &end);
    if (!end || (*end != '\n' && *end != '\0') || !isfinite(v) || v <= 0) return false;
    *out = v;
    return true;
}

rlt_status env_peak_get(const rlt_build_opts *bopts, double *out_gflops, bool *out_was_cached, rlt_diag *diag)
{
    char path[PATH_MAX];
    rlt_status st = env_peak_cache_path(bopts, path, diag);
    if (st != RLT_STATUS_OK) return st;
    char *text = NULL;
    size_t len = 0;
    double v = 0;
    bool is_cached = rlt_file_read(path, &text, &len, NULL) == RLT_STATUS_OK && peak_file_parse(text, &v);
    rlt_free(text);
    if (out_was_cached) *out_was_cached = is_cached;
    if (is_cached) {
        *out_gflops = v;
        return RLT_STATUS_OK;
    }
    if ((st = env_peak_measure(bopts, &v, diag)) != RLT_STATUS_OK) return st;
    *out_gflops = v;
    /* Writing the cache is best effort: the value is right either way. */
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    rlt_target target;
    rlt_target_detect(&target);
    rlt_str body;
    rlt_str_init(&body);
    rlt_str_printf(&body, "%s\ngflops %.6g\ncpu %s\ncc %s\ncflags %s\n", PEAK_FILE_HEADER, v, target.cpu_model,
                   resolve_cc(bopts), resolve_cflags(bopts));
    if (!body.has_failed && rlt_mkdir_p(dir, NULL) == RLT_STATUS_OK) {
        rlt_diag d = {0};
        if (rlt_file_write(path, body.data, body.len, &d) != RLT_STATUS_OK)
            rlt_log(RLT_LOG_WARN, "peak not cached: %s", d.message);
    }
    rlt_str_free(&body);
    return RLT_STATUS_OK;
}
