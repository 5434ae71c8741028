/*
 * args.c - the option parser shared by the rltune commands (see args.h):
 * rlt_cli_args_parse, the typed getters rlt_cli_args_int / _double, and the
 * usage printer.
 *
 * It is strict on purpose: a misspelt option or one given twice is an error,
 * never silently ignored or overridden, because a benchmark run with the
 * wrong settings looks exactly like a right one.
 */
#include "cli/args.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A whole decimal number, nothing before or after it. */
static bool parse_i64(const char *s, int64_t *out)
{
    if (!s || !*s || isspace((unsigned char)*s)) return false;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0' || end == s) return false;
    *out = (int64_t)v;
    return true;
}

/* Index of option `name` (of length `len`) in the table, or -1. */
static int find_opt(const rlt_cli_opt *opts, int n_opts, const char *name, size_t len)
{
    for (int i = 0; i < n_opts; i++)
        if (strlen(opts[i].name) == len && strncmp(opts[i].name, name, len) == 0) return i;
    return -1;
}

/* "--op, --expr, ..., --help": the options a command accepts, for messages. */
static void list_opts(const rlt_cli_opt *opts, int n_opts, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i <= n_opts && used + 1 < cap; i++) {
        const char *name = i < n_opts ? opts[i].name : "help";
        int w = snprintf(buf + used, cap - used, "%s--%s", i ? ", " : "", name);
        if (w < 0) break;
        used += (size_t)w;
    }
}

rlt_status rlt_cli_args_parse(const char *command, int n_opts, const rlt_cli_opt *opts, int argc, char **argv,
                              rlt_cli_args *out, rlt_diag *diag)
{
    RLT_CLI_ASSERT(n_opts >= 0 && n_opts <= RLT_CLI_MAX_OPTS && (n_opts == 0 || opts) && out);
    memset(out, 0, sizeof *out);
    out->command = command;
    out->n_opts = n_opts;
    out->opts = opts;
    char valid[1024];
    for (int a = 0; a < argc; a++) {
        const char *word = argv[a];
        if (strcmp(word, "--help") == 0 || strcmp(word, "-h") == 0) {
            out->is_help = true;
            continue;
        }
        if (strncmp(word, "--", 2) != 0 || word[2] == '\0') {
            list_opts(opts, n_opts, valid, sizeof valid);
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "unexpected argument '%.200s' for 'rltune %s': it takes only options (%s); "
                            "see 'rltune help %s'",
                            word, command, valid, command);
        }
        const char *name = word + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        int i = find_opt(opts, n_opts, name, len);
        if (i < 0) {
            list_opts(opts, n_opts, valid, sizeof valid);
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "unknown option '--%.*s' for 'rltune %s'; valid options: %s", (int)(len < 200 ? len : 200),
                            name, command, valid);
        }
        if (out->values[i])
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "option --%s is given twice (once is allowed)",
                            opts[i].name);
        if (!opts[i].metavar) {
            if (eq)
                return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                                "option --%s is a flag and takes no value, got '--%.200s'", opts[i].name, name);
            out->values[i] = "";
            continue;
        }
        if (eq) {
            out->values[i] = eq + 1;
            continue;
        }
        /* A following word that looks like an option means the value was
         * left out; a value that really starts with "--" can still be
         * given as --name=--value. */
        if (a + 1 >= argc || strncmp(argv[a + 1], "--", 2) == 0)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "option --%s needs a value (%s): --%s %s or --%s=%s",
                            opts[i].name, opts[i].metavar, opts[i].name, opts[i].metavar, opts[i].name,
                            opts[i].metavar);
        out->values[i] = argv[++a];
    }
    return RLT_STATUS_OK;
}

static int index_of(const rlt_cli_args *args, const char *name)
{
    int i = find_opt(args->opts, args->n_opts, name, strlen(name));
    RLT_CLI_ASSERT(i >= 0); /* asking for an option the command does not declare is a bug */
    return i;
}

const char *rlt_cli_args_get(const rlt_cli_args *args, const char *name)
{
    return args->values[index_of(args, name)];
}

bool rlt_cli_args_has(const rlt_cli_args *args, const char *name) { return rlt_cli_args_get(args, name) != NULL; }

rlt_status rlt_cli_args_int(const rlt_cli_args *args, const char *name, int64_t def, int64_t min, int64_t max,
                            int64_t *out, rlt_diag *diag)
{
    const char *text = rlt_cli_args_get(args, name);
    int64_t v = 0;
    if (!text) {
        *out = def;
        return RLT_STATUS_OK;
    }
    if (!parse_i64(text, &v))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "bad value '%.100s' for --%s: expected a whole number from %" PRId64 " to %" PRId64, text,
                        name, min, max);
    if (v < min || v > max)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "bad value %" PRId64 " for --%s: expected a whole number from %" PRId64 " to %" PRId64, v,
                        name, min, max);
    *out = v;
    return RLT_STATUS_OK;
}

rlt_status rlt_cli_args_double(const rlt_cli_args *args, const char *name, double def, double min,
                               bool is_min_exclusive, double max, double *out, rlt_diag *diag)
{
    const char *text = rlt_cli_args_get(args, name);
    if (!text) {
        *out = def;
        return RLT_STATUS_OK;
    }
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    /* strtod accepts leading spaces, "inf", "nan" and hex: a number for a
     * time limit is plain decimal, so only those characters pass. */
    bool is_plain = text[0] != '\0' && strspn(text, "0123456789.eE+-") == strlen(text);
    if (!is_plain || end == text || *end != '\0' || errno == ERANGE || !isfinite(v))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "bad value '%.100s' for --%s: expected a number %s %g and at most %g", text, name,
                        is_min_exclusive ? "above" : "from", min, max);
    if ((is_min_exclusive ? v <= min : v < min) || v > max)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "bad value %g for --%s: expected a number %s %g and at most %g", v, name,
                        is_min_exclusive ? "above" : "from", min, max);
    *out = v;
    return RLT_STATUS_OK;
}

rlt_status rlt_cli_args_int_list(const rlt_cli_args *args, const char *name, int max_n, int min, int max,
                                 const char *what, const char *example, int *out, int *out_n, rlt_diag *diag)
{
    const char *text = rlt_cli_args_get(args, name);
    int n = 0;
    *out_n = 0;
    if (!text) return RLT_STATUS_OK;
    for (const char *p = text;;) {
        char *end = NULL;
        long v = *p >= '0' && *p <= '9' && n < max_n ? strtol(p, &end, 10) : -1;
        if (v < min || v > max || (*end != '\0' && *end != ','))
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "--%s: '%.64s' is not 1 to %d %s of %d..%d, e.g. %s",
                            name, text, max_n, what, min, max, example);
        out[n++] = (int)v;
        if (*end == '\0') break;
        p = end + 1;
    }
    *out_n = n;
    return RLT_STATUS_OK;
}

void rlt_cli_usage_print(FILE *f, const char *command, const char *synopsis, const char *summary, int n_opts,
                         const rlt_cli_opt *opts)
{
    fprintf(f, "usage: rltune %s %s\n\n%s\n", command, synopsis, summary);
    if (n_opts == 0) return;
    fprintf(f, "\noptions:\n");
    int width = (int)strlen("--help");
    for (int i = 0; i < n_opts; i++) {
        int w = (int)strlen(opts[i].name) + 2 + (opts[i].metavar ? (int)strlen(opts[i].metavar) + 1 : 0);
        width = RLT_CLI_MAX(width, w);
    }
    for (int i = 0; i < n_opts; i++) {
        char left[128];
        snprintf(left, sizeof left, "--%s%s%s", opts[i].name, opts[i].metavar ? " " : "",
                 opts[i].metavar ? opts[i].metavar : "");
        fprintf(f, "  %-*s  %s\n", width, left, opts[i].help);
    }
    fprintf(f, "  %-*s  %s\n", width, "--help", "print this help and exit");
}
