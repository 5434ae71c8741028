/*
 * input.c - what `show` and `measure` work on: the op named by --op or by
 * --expr / --shape, the schedule from --schedule (a file, or stdin for '-'),
 * and the nest the schedule makes of the op (rlt_cli_input_load). Also the
 * shared error printer, the status-to-exit-code rule, and reading and
 * writing the command's files.
 */
#include "cli/cli.h"
#include "rltune/model.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void rlt_cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("rltune: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

cJSON *rlt_cli_json_add_number(cJSON *object, const char *name, double v)
{
    cJSON *item = NULL;
    if (isfinite(v)) {
        char text[40];
        rlt_format_double(v, text, sizeof text);
        item = cJSON_CreateRaw(text);
    } else {
        item = cJSON_CreateNull();
    }
    if (item && !cJSON_AddItemToObject(object, name, item)) {
        cJSON_Delete(item);
        item = NULL;
    }
    return item;
}

int rlt_cli_exit_for(rlt_status status)
{
    switch (status) {
    case RLT_STATUS_OK:
        return RLT_CLI_EXIT_OK;
    case RLT_STATUS_INVALID_ARGUMENT:
    case RLT_STATUS_PARSE_ERROR:
    case RLT_STATUS_ILLEGAL_SCHEDULE:
        return RLT_CLI_EXIT_USAGE;
    default:
        return RLT_CLI_EXIT_INTERNAL;
    }
}

/* Files the command reads are small: a schedule or config piped from an
 * endless source is refused, not read forever. */
#define TEXT_READ_MAX_BYTES (64 << 20)

rlt_status rlt_cli_text_read(const char *path, char **out_text, rlt_diag *diag)
{
    *out_text = NULL;
    bool is_stdin = strcmp(path, "-") == 0;
    const char *name = is_stdin ? "<stdin>" : path;
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f) return rlt_fail(diag, RLT_STATUS_IO_ERROR, "cannot open '%s': %s", path, strerror(errno));
    size_t len = 0, cap = 4096;
    char *text = malloc(cap);
    bool is_oom = !text, is_too_big = false;
    while (!is_oom) {
        if (len + 1 >= cap) {
            char *grown = cap < TEXT_READ_MAX_BYTES ? realloc(text, cap * 2) : NULL;
            is_too_big = cap >= TEXT_READ_MAX_BYTES;
            is_oom = !grown && !is_too_big;
            if (!grown) break;
            text = grown;
            cap *= 2;
        }
        size_t n = fread(text + len, 1, cap - len - 1, f);
        if (n == 0) break;
        len += n;
    }
    rlt_status st = RLT_STATUS_OK;
    if (is_oom)
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory reading '%s'", name);
    else if (is_too_big)
        st = rlt_fail(diag, RLT_STATUS_IO_ERROR, "'%s' is larger than %d MiB: not read", name,
                      TEXT_READ_MAX_BYTES >> 20);
    else if (ferror(f))
        st = rlt_fail(diag, RLT_STATUS_IO_ERROR, "cannot read '%s': %s", name, strerror(errno));
    else if ((text[len] = '\0', strlen(text) != len))
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s: holds a NUL byte: not a text file", name);
    if (!is_stdin) fclose(f);
    if (st != RLT_STATUS_OK) {
        free(text);
        return st;
    }
    *out_text = text;
    return RLT_STATUS_OK;
}

rlt_status rlt_cli_file_write(const char *path, const char *data, size_t len, rlt_diag *diag)
{
    char tmp[4096];
    int n = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof tmp)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "path too long: '%s'", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return rlt_fail(diag, RLT_STATUS_IO_ERROR, "cannot create '%s': %s", tmp, strerror(errno));
    bool is_written = fwrite(data, 1, len, f) == len;
    int saved_errno = errno;
    is_written &= fclose(f) == 0;
    if (!is_written || rename(tmp, path) != 0) {
        if (is_written) saved_errno = errno;
        remove(tmp);
        return rlt_fail(diag, RLT_STATUS_IO_ERROR, "cannot write '%s': %s", path, strerror(saved_errno));
    }
    return RLT_STATUS_OK;
}

rlt_status rlt_cli_op_load(const rlt_cli_args *args, rlt_op **out, rlt_diag *diag)
{
    const char *spec = rlt_cli_args_get(args, "op");
    const char *expr = rlt_cli_args_get(args, "expr");
    const char *shape = rlt_cli_args_get(args, "shape");
    rlt_status st = RLT_STATUS_OK;
    if (spec && (expr || shape))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "--op cannot be combined with --expr / --shape: give a built-in op or an expression");
    if (!spec && !expr && !shape)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "no op given: use --op SPEC (e.g. --op matmul:M=512,N=512,K=512; list: 'rltune ops') "
                        "or --expr EXPR --shape SHAPE");
    if (expr && !shape)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "--expr needs --shape with the extents of its indices, e.g. --shape i=64,j=64,k=64");
    if (shape && !expr)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "--shape needs --expr, e.g. --expr 'C[i,j] += A[i,k] * B[k,j]'");
    if (spec) {
        st = rlt_op_parse(spec, out, diag);
        if (st != RLT_STATUS_OK) rlt_diag_prefix(diag, "--op");
    } else {
        st = rlt_op_from_expr(expr, shape, out, diag);
        if (st != RLT_STATUS_OK) rlt_diag_prefix(diag, "--expr/--shape");
    }
    return st;
}

static rlt_status load_sched(const char *source, rlt_sched **out, rlt_diag *diag)
{
    if (strcmp(source, "-") != 0) return rlt_sched_load(source, out, diag);
    char *text = NULL;
    rlt_status st = rlt_cli_text_read(source, &text, diag);
    if (st == RLT_STATUS_OK) st = rlt_sched_parse(text, "<stdin>", out, diag);
    free(text);
    return st;
}

rlt_status rlt_cli_input_load(const rlt_cli_args *args, rlt_cli_input *out, rlt_diag *diag)
{
    memset(out, 0, sizeof *out);
    out->sched_source = rlt_cli_args_get(args, "schedule");
    rlt_status st = rlt_cli_op_load(args, &out->op, diag);
    if (st != RLT_STATUS_OK) goto cleanup;

    if (out->sched_source) {
        st = load_sched(out->sched_source, &out->sched, diag);
        if (st != RLT_STATUS_OK) {
            rlt_diag_prefix(diag, "--schedule");
            goto cleanup;
        }
        st = rlt_nest_create(out->op, out->sched, &out->nest, diag);
        if (st != RLT_STATUS_OK) {
            bool is_stdin = strcmp(out->sched_source, "-") == 0;
            rlt_diag_prefix(diag, "--schedule: %s", is_stdin ? "<stdin>" : out->sched_source);
            goto cleanup;
        }
    } else {
        st = rlt_nest_create(out->op, NULL, &out->nest, diag);
    }

cleanup:
    /* A schedule file that cannot be read is the user's argument, not the
     * environment: report it as bad input like any other. */
    if (st == RLT_STATUS_IO_ERROR) {
        st = RLT_STATUS_INVALID_ARGUMENT;
        if (diag) diag->status = st;
    }
    if (st != RLT_STATUS_OK) rlt_cli_input_free(out);
    return st;
}

void rlt_cli_input_free(rlt_cli_input *in)
{
    rlt_nest_destroy(in->nest);
    rlt_sched_destroy(in->sched);
    rlt_op_destroy(in->op);
    in->nest = NULL;
    in->sched = NULL;
    in->op = NULL;
}

rlt_status rlt_cli_env_opts_get(const rlt_cli_args *args, int repeat_def, double min_repeat_ms_def,
                                rlt_env_opts *out, rlt_diag *diag)
{
    int64_t threads = 0, seed = 0, repeat = 0;
    double min_repeat_ms = 0, timeout_s = 0, peak = 0;
    rlt_status st = rlt_cli_args_int(args, "threads", 1, 1, RLT_MAX_THREADS, &threads, diag);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_int(args, "seed", 0, 0, INT64_MAX, &seed, diag);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_int(args, "repeat", repeat_def, 1, 100000, &repeat, diag);
    if (st == RLT_STATUS_OK)
        st = rlt_cli_args_double(args, "min-repeat-ms", min_repeat_ms_def, 0.0, true, 600000.0, &min_repeat_ms,
                                 diag);
    if (st == RLT_STATUS_OK) st = rlt_cli_args_double(args, "timeout", 10.0, 0.0, true, 86400.0, &timeout_s, diag);
    if (st == RLT_STATUS_OK && rlt_cli_args_has(args, "peak"))
        st = rlt_cli_args_double(args, "peak", 0.0, 0.0, true, 1e9, &peak, diag);
    const char *cc = rlt_cli_args_get(args, "cc");
    if (st == RLT_STATUS_OK && cc && cc[strspn(cc, " \t")] == '\0')
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "--cc must name a compiler, got an empty value");
    if (st != RLT_STATUS_OK) return st;
    *out = (rlt_env_opts){
        .cc = cc,
        .cflags = rlt_cli_args_get(args, "cflags"),
        .n_threads = (int)threads,
        .repeat = (int)repeat,
        .min_repeat_ms = min_repeat_ms,
        .timeout_s = timeout_s,
        .seed = (uint64_t)seed,
        .peak_gflops = peak,
    };
    return RLT_STATUS_OK;
}

int rlt_cli_env_start(const rlt_cli_args *args, const rlt_op *op, const rlt_env_opts *opts, rlt_env **out)
{
    rlt_diag d = {0};
    char *text = NULL;
    rlt_env *env = NULL;
    const char *path = rlt_cli_args_get(args, "schedule");
    *out = NULL;
    rlt_status st = RLT_STATUS_OK;
    if (path && (st = rlt_cli_text_read(path, &text, &d)) != RLT_STATUS_OK) {
        rlt_diag_prefix(&d, "--schedule");
        st = RLT_STATUS_INVALID_ARGUMENT; /* a missing file is bad input */
    }
    if (st == RLT_STATUS_OK) st = rlt_env_create(rlt_op_spec(op), opts, &env, &d);
    if (st == RLT_STATUS_OK) {
        fflush(stdout); /* the runner forks: nothing buffered may be written twice */
        st = text ? rlt_env_reset_schedule(env, text, &d) : rlt_env_reset(env, &d);
        if (st != RLT_STATUS_OK && text) rlt_diag_prefix(&d, "--schedule %s", path);
    }
    free(text);
    if (st != RLT_STATUS_OK) {
        rlt_env_destroy(env);
        rlt_cli_error("%s", d.message);
        return rlt_cli_exit_for(st);
    }
    *out = env;
    return RLT_CLI_EXIT_OK;
}

bool rlt_cli_model_cold(const rlt_cli_args *args, const rlt_model *m, bool is_quiet)
{
    bool is_cold = !rlt_cli_args_has(args, "warm");
    if (is_quiet) return is_cold;
    double mib = (double)rlt_model_weights_bytes(m) / (1 << 20);
    printf("weights:   %.1f MiB: kernels timed %s (%s)\n", mib,
           is_cold ? "cold, as the network runs them: weights, workspace and output evicted from the caches before "
                     "every call"
                   : "warm, their weights and output in the caches from the call before",
           rlt_cli_args_has(args, "warm") ? "--warm" : "--warm for the other way");
    return is_cold;
}

int rlt_cli_model_layout(const rlt_cli_args *args, bool is_auto_allowed, int *out_block)
{
    const char *v = rlt_cli_args_get(args, "layout");
    if (!v) v = is_auto_allowed ? "auto" : "nchw";
    if (strcmp(v, "nchwc") == 0 || strcmp(v, "nchw") == 0) {
        *out_block = v[4] == 'c' ? rlt_model_channel_block() : 0;
        return RLT_CLI_EXIT_OK;
    }
    if (is_auto_allowed && strcmp(v, "auto") == 0) {
        *out_block = RLT_NET_BLOCK_AUTO;
        return RLT_CLI_EXIT_OK;
    }
    rlt_cli_error("--layout %.40s: expected nchwc (channels in blocks of the vector width, %d here, where every node "
                  "can take them)%s or nchw",
                  v, rlt_model_channel_block(), is_auto_allowed ? ", auto (the one the records say is faster)" : "");
    return RLT_CLI_EXIT_USAGE;
}

int rlt_cli_model_load(const char *path, rlt_model **out)
{
    rlt_diag d = {0};
    rlt_status st = rlt_model_load(path, out, &d);
    if (st == RLT_STATUS_OK) return RLT_CLI_EXIT_OK;
    /* a file that is missing, unreadable, not a model or unsupported is the user's input */
    rlt_cli_error("%s", d.message);
    return st == RLT_STATUS_OUT_OF_MEMORY || st == RLT_STATUS_INTERNAL ? RLT_CLI_EXIT_INTERNAL : RLT_CLI_EXIT_USAGE;
}
