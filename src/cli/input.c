/*
 * input.c - what `show` and `measure` work on: the op named by --op or by
 * --expr / --shape, the schedule from --schedule (a file, or stdin for '-'),
 * and the nest the schedule makes of the op (rlt_cli_input_load). Also the
 * shared error printer and the status-to-exit-code rule.
 */
#include "cli/cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void rlt_cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("rltune: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
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

/* Reads all of stdin as text, with rlt_file_read's size limit (a schedule
 * piped from an endless source is refused, not read forever). */
static rlt_status read_stdin(char **out_text, size_t *out_len, rlt_diag *diag)
{
    return rlt_file_read("/dev/stdin", out_text, out_len, diag);
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
    rlt_status st = RLT_STATUS_OK;
    char *text = NULL;
    size_t len = 0;
    if (strcmp(source, "-") != 0) {
        st = rlt_sched_load(source, out, diag);
        goto cleanup;
    }
    st = read_stdin(&text, &len, diag);
    if (st != RLT_STATUS_OK) goto cleanup;
    if (memchr(text, '\0', len) != NULL) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "<stdin>: not a text file");
        goto cleanup;
    }
    st = rlt_sched_parse(text, "<stdin>", out, diag);

cleanup:
    rlt_free(text);
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
        st = rlt_sched_apply(out->sched, out->op, &out->nest, diag);
        if (st != RLT_STATUS_OK) {
            bool is_stdin = strcmp(out->sched_source, "-") == 0;
            rlt_diag_prefix(diag, "--schedule: %s", is_stdin ? "<stdin>" : out->sched_source);
            goto cleanup;
        }
    } else {
        rlt_nest_init(&out->nest, out->op);
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
    rlt_sched_destroy(in->sched);
    rlt_op_destroy(in->op);
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
    if (path && (st = rlt_text_file_read(path, &text, &d)) != RLT_STATUS_OK) {
        rlt_diag_prefix(&d, "--schedule");
        st = RLT_STATUS_INVALID_ARGUMENT; /* a missing file is bad input */
    }
    if (st == RLT_STATUS_OK) st = rlt_env_create(op->spec, opts, &env, &d);
    if (st == RLT_STATUS_OK) {
        fflush(stdout); /* the runner forks: nothing buffered may be written twice */
        st = text ? rlt_env_reset_schedule(env, text, &d) : rlt_env_reset(env, &d);
        if (st != RLT_STATUS_OK && text) rlt_diag_prefix(&d, "--schedule %s", path);
    }
    rlt_free(text);
    if (st != RLT_STATUS_OK) {
        rlt_env_destroy(env);
        rlt_cli_error("%s", d.message);
        return rlt_cli_exit_for(st);
    }
    *out = env;
    return RLT_CLI_EXIT_OK;
}
