/*
 * cmd_records.c - the commands that read the tuning records `tune` stores:
 * `rltune best` (the fastest OK record of an op on this target), `rltune
 * history` (every record of an op, oldest first, with the best so far) and
 * `rltune records export|import` (the records as JSON lines: each a
 * record's one JSON form, rlt_record_json). Also the helpers `export` shares with them: opening --db for
 * reading, the target key of --threads / --cc / --cflags, and finding the
 * best record with a message that says how to make one.
 *
 * Records of one target are comparable; the target key is the one `tune`
 * records under (rlt_session_target), so these commands take the same
 * --threads / --cc / --cflags as the tune run, or --all-targets.
 */
#include "cli/cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_DB "rltune.db"
#define CONFIG_COLUMN_MAX 60 /* history's table cuts longer config keys */

/* ---- shared with export ------------------------------------------------- */

int rlt_cli_db_open_read(const rlt_cli_args *args, rlt_db **out, const char **out_path)
{
    rlt_diag d = {0};
    const char *path = rlt_cli_args_get(args, "db");
    if (!path) path = DEFAULT_DB;
    *out_path = path;
    rlt_status st = rlt_db_open(path, &(rlt_db_opts){.is_read_only = true}, out, &d);
    if (st == RLT_STATUS_OK) return RLT_CLI_EXIT_OK;
    rlt_cli_error("--db: %s", d.message);
    /* The database is the user's argument: an absent, unreadable or foreign
     * file is bad input, as a schedule file is. */
    return st == RLT_STATUS_OUT_OF_MEMORY ? RLT_CLI_EXIT_INTERNAL : RLT_CLI_EXIT_USAGE;
}

int rlt_cli_target_get(const rlt_cli_args *args, char **out_target)
{
    rlt_diag d = {0};
    int64_t threads;
    *out_target = NULL;
    if (rlt_cli_args_int(args, "threads", 1, 1, RLT_MAX_THREADS, &threads, &d) != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        return RLT_CLI_EXIT_USAGE;
    }
    if (rlt_cli_args_has(args, "all-targets")) {
        if (rlt_cli_args_has(args, "threads") || rlt_cli_args_has(args, "cc") || rlt_cli_args_has(args, "cflags") ||
            rlt_cli_args_has(args, "cold")) {
            rlt_cli_error("--all-targets searches every target: it cannot be combined with --threads, --cc, "
                          "--cflags or --cold, which choose one");
            return RLT_CLI_EXIT_USAGE;
        }
        return RLT_CLI_EXIT_OK;
    }
    rlt_build_opts build = {.cc = rlt_cli_args_get(args, "cc"), .cflags = rlt_cli_args_get(args, "cflags")};
    rlt_record_target t;
    rlt_status st = rlt_session_target(&build, (int)threads, &t, &d);
    if (st != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        return rlt_cli_exit_for(st);
    }
    t.is_weights_cold = rlt_cli_args_has(args, "cold");
    if (!(*out_target = rlt_record_target_text(&t))) {
        rlt_cli_error("out of memory computing the target key");
        return RLT_CLI_EXIT_INTERNAL;
    }
    return RLT_CLI_EXIT_OK;
}

/* The one-line hint for an op with no records: what to run to make some. */
static void print_none_found(const char *what, const rlt_op *op, const char *db_path, const char *target,
                             bool has_other_targets)
{
    bool is_expr = strcmp(rlt_op_kind(op), "expr") == 0;
    const char *spec = rlt_op_spec(op);
    if (has_other_targets)
        rlt_cli_error("no %s for %s in %s on this target (%s); there are some for other targets: pass the "
                      "--threads, --cc and --cflags of the tune run, or --all-targets",
                      what, spec, db_path, target);
    else
        rlt_cli_error("no %s for %s in %s%s; run 'rltune tune %s%s%s' first", what, spec, db_path,
                      target ? " on this target" : "", is_expr ? "--expr ... --shape ..." : "--op ",
                      is_expr ? "" : spec, strcmp(db_path, DEFAULT_DB) ? " --db ..." : "");
}

int rlt_cli_best_find(const rlt_cli_args *args, const rlt_op *op, rlt_record *out, const char **out_db_path)
{
    rlt_diag d = {0};
    rlt_db *db = NULL;
    char *target = NULL, *found_target = NULL;
    bool is_found = false;
    int rc = rlt_cli_target_get(args, &target);
    if (rc != RLT_CLI_EXIT_OK) goto cleanup;
    if ((rc = rlt_cli_db_open_read(args, &db, out_db_path)) != RLT_CLI_EXIT_OK) goto cleanup;
    rlt_status st = rlt_db_best(db, rlt_op_spec(op), target, out, &is_found, &d);
    if (st == RLT_STATUS_OK && !is_found && target) st = rlt_db_best(db, rlt_op_spec(op), NULL, out, &is_found, &d);
    if (st != RLT_STATUS_OK) {
        rlt_cli_error("--db: %s", d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    if (is_found) found_target = rlt_record_target_text(&out->target);
    bool is_other_target = is_found && target && (!found_target || strcmp(found_target, target) != 0);
    if (!is_found || is_other_target) {
        print_none_found("OK record", op, *out_db_path, target, is_found);
        rc = RLT_CLI_EXIT_KERNEL_FAILED;
        goto cleanup;
    }
    rc = RLT_CLI_EXIT_OK;
cleanup:
    rlt_db_close(db);
    rlt_free(found_target);
    rlt_free(target);
    return rc;
}

int rlt_cli_best_input(const rlt_cli_args *args, rlt_cli_input *in, rlt_record *out, const char **out_db_path,
                       const char **out_cc)
{
    RLT_CLI_ASSERT(in->op && !in->sched);
    int rc = rlt_cli_best_find(args, in->op, out, out_db_path);
    if (rc != RLT_CLI_EXIT_OK) return rc;
    rlt_diag d = {0};
    char source[128];
    snprintf(source, sizeof source, "record %" PRId64 "'s schedule", out->id);
    rlt_status st = rlt_sched_parse(out->schedule, source, &in->sched, &d);
    if (st == RLT_STATUS_OK) st = rlt_nest_create(in->op, in->sched, &in->nest, &d);
    if (st != RLT_STATUS_OK) {
        rlt_cli_error("--db: %s: %s", *out_db_path, d.message);
        return rlt_cli_exit_for(st);
    }
    *out_cc = rlt_config_key_cc(out->config);
    return RLT_CLI_EXIT_OK;
}

/* "2025-11-21 14:13:50 +0100": a record's created_s in local time. */
static void format_when(double created_s, char *buf, size_t cap)
{
    time_t t = (time_t)created_s;
    struct tm tm;
    if (!localtime_r(&t, &tm) || strftime(buf, cap, "%Y-%m-%d %H:%M:%S %z", &tm) == 0) snprintf(buf, cap, "?");
}

/* ---- best --------------------------------------------------------------- */

static const rlt_cli_opt best_opts[] = {
    {"op", "SPEC", "built-in op, e.g. matmul:M=512,N=512,K=512 (see 'rltune ops')"},
    {"expr", "EXPR", "a user expression instead, e.g. 'C[i,j] += A[i,k] * B[k,j]' (needs --shape)"},
    {"shape", "SHAPE", "extents of the expression's indices, e.g. i=64,j=64,k=64"},
    RLT_CLI_TARGET_OPTS,
    {"json", NULL, "print exactly one JSON object on stdout instead of the report"},
};

static int run_best(const rlt_cli_args *args)
{
    int rc = RLT_CLI_EXIT_USAGE;
    rlt_diag d = {0};
    rlt_op *op = NULL;
    char *text = NULL;
    rlt_record *r = calloc(1, sizeof *r);
    const char *db_path = NULL;
    rlt_status st;
    if (!r) {
        rlt_cli_error("out of memory");
        rc = RLT_CLI_EXIT_INTERNAL;
        goto cleanup;
    }
    if ((st = rlt_cli_op_load(args, &op, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    if ((rc = rlt_cli_best_find(args, op, r, &db_path)) != RLT_CLI_EXIT_OK) goto cleanup;
    if (rlt_cli_args_has(args, "json")) {
        if (!(text = rlt_record_json(r))) {
            rlt_cli_error("out of memory formatting the result");
            rc = RLT_CLI_EXIT_INTERNAL;
            goto cleanup;
        }
        printf("%s\n", text);
    } else {
        char when[64];
        format_when(r->created_s, when, sizeof when);
        text = rlt_record_target_text(&r->target);
        printf("op:        %s\n", r->spec);
        printf("target:    %s\n", text ? text : "");
        printf("best:      %.2f GFLOP/s, %.4f ms (min %.4f ms)%s\n", r->gflops, r->time_median_ms, r->time_min_ms,
               r->is_final ? ", a final pick's measurement" : "");
        printf("config:    %s\n", r->config[0] ? r->config : "(a bare schedule)");
        printf("tuner:     %s, seed %" PRIu64 ", %d thread%s\n", r->tuner, r->seed, r->target.n_threads,
               r->target.n_threads == 1 ? "" : "s");
        printf("measured:  %s (record %" PRId64 " of %s)\n", when, r->id, db_path);
        printf("schedule:\n%s", r->schedule);
        size_t len = strlen(r->schedule);
        if (len > 0 && r->schedule[len - 1] != '\n') printf("\n");
    }
    rc = RLT_CLI_EXIT_OK;
cleanup:
    rlt_free(text);
    rlt_op_destroy(op);
    free(r);
    return rc;
}

const rlt_cli_cmd rlt_cli_cmd_best = {
    .name = "best",
    .brief = "print the fastest recorded kernel of an op on this target",
    .synopsis = "(--op SPEC | --expr EXPR --shape SHAPE) [--db FILE] [--threads N] [--cc CMD]\n"
                "                   [--cflags FLAGS] [--all-targets] [--json]",
    .summary = "Prints the fastest record with status OK of the op in the records database, among those\n"
               "of this machine's target: the CPU, and the --threads, --cc and --cflags of the tune run\n"
               "(give the same ones), or among every target with --all-targets.",
    .details = "Exit status 1 when there is no such record (the message says what to run).\n"
               "With --json, stdout holds the record as one JSON object, as 'rltune records export' writes\n"
               "it (docs/formats.md): v, id, op, target {cpu, vector_floats, threads, weights, codegen,\n"
               "cc}, config, schedule, tuner, status, final, time_ms {min, median}, gflops, seed,\n"
               "build_s, created_s (Unix time), message.",
    .n_opts = (int)RLT_CLI_ARRAY_LEN(best_opts),
    .opts = best_opts,
    .run = run_best,
};

/* ---- history ------------------------------------------------------------ */

static const rlt_cli_opt history_opts[] = {
    {"op", "SPEC", "built-in op, e.g. matmul:M=512,N=512,K=512 (see 'rltune ops')"},
    {"expr", "EXPR", "a user expression instead, e.g. 'C[i,j] += A[i,k] * B[k,j]' (needs --shape)"},
    {"shape", "SHAPE", "extents of the expression's indices, e.g. i=64,j=64,k=64"},
    RLT_CLI_TARGET_OPTS,
    {"limit", "N", "print only the last N records, at least 1 (best-so-far still counts all of them)"},
    {"json", NULL, "print exactly one JSON object on stdout instead of the table"},
};

/* One walk over the records: counting (is_counting), then printing those
 * from index `first` on, with the best GFLOP/s so far over all of them. */
typedef struct history_walk {
    bool is_counting;
    bool is_json;
    int64_t n_seen;
    int64_t first;
    double best_gflops;
    bool has_failed;   /* out of memory formatting JSON */
} history_walk;

static bool history_visit(const rlt_record *r, void *ctx)
{
    history_walk *w = ctx;
    int64_t n = ++w->n_seen;
    if (w->is_counting) return true;
    if (r->status == RLT_STATUS_OK && r->gflops > w->best_gflops) w->best_gflops = r->gflops;
    if (n - 1 < w->first) return true;
    if (w->is_json) {
        char *text = rlt_record_json(r);
        if (!text) {
            w->has_failed = true;
            return false;
        }
        printf("%s{\"n\":%" PRId64 ",\"best_gflops\":%.17g,\"record\":%s}", n - 1 > w->first ? "," : "", n,
               w->best_gflops, text);
        rlt_free(text);
        return true;
    }
    char config[CONFIG_COLUMN_MAX + 1];
    const char *c = r->config[0] ? r->config : "(schedule)";
    size_t len = strlen(c);
    if (len > CONFIG_COLUMN_MAX) {
        memcpy(config, c, CONFIG_COLUMN_MAX - 3);
        memcpy(config + CONFIG_COLUMN_MAX - 3, "...", 4);
    } else {
        memcpy(config, c, len + 1);
    }
    printf("%5" PRId64 "  %-13s %9.2f %9.2f  %-8s %s%s\n", n, rlt_status_str(r->status), r->gflops, w->best_gflops,
           r->tuner, r->is_final ? "(final) " : "", config);
    return true;
}

/* Prints a database failure met while reading; returns its exit code. */
static int db_error(rlt_status st, const rlt_diag *d)
{
    rlt_cli_error("--db: %s", d->message);
    return rlt_cli_exit_for(st);
}

static int run_history(const rlt_cli_args *args)
{
    int rc = RLT_CLI_EXIT_USAGE;
    rlt_diag d = {0};
    rlt_op *op = NULL;
    rlt_db *db = NULL;
    char *target = NULL;
    const char *db_path = NULL;
    int64_t limit;
    rlt_status st;
    bool is_json = rlt_cli_args_has(args, "json");
    if ((st = rlt_cli_args_int(args, "limit", 0, 1, INT64_MAX, &limit, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        goto cleanup;
    }
    if ((st = rlt_cli_op_load(args, &op, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    if ((rc = rlt_cli_target_get(args, &target)) != RLT_CLI_EXIT_OK) goto cleanup;
    if ((rc = rlt_cli_db_open_read(args, &db, &db_path)) != RLT_CLI_EXIT_OK) goto cleanup;
    history_walk w = {.is_counting = true, .is_json = is_json};
    if ((st = rlt_db_history(db, rlt_op_spec(op), target, history_visit, &w, &d)) != RLT_STATUS_OK) {
        rc = db_error(st, &d);
        goto cleanup;
    }
    int64_t n_total = w.n_seen;
    if (n_total == 0) {
        int64_t n_any = 0;
        if (target && (st = rlt_db_count(db, rlt_op_spec(op), &n_any, &d)) != RLT_STATUS_OK) {
            rc = db_error(st, &d);
            goto cleanup;
        }
        print_none_found("records", op, db_path, target, n_any > 0);
        rc = RLT_CLI_EXIT_KERNEL_FAILED;
        goto cleanup;
    }
    w = (history_walk){.is_json = is_json, .first = limit > 0 && limit < n_total ? n_total - limit : 0};
    if (is_json) {
        cJSON *head = cJSON_CreateObject();
        char *text = NULL;
        if (head && cJSON_AddStringToObject(head, "op", rlt_op_spec(op)) &&
            (target ? cJSON_AddStringToObject(head, "target", target) != NULL
                    : cJSON_AddNullToObject(head, "target") != NULL) &&
            rlt_cli_json_add_number(head, "n_records", (double)n_total))
            text = cJSON_PrintUnformatted(head);
        cJSON_Delete(head);
        if (!text) {
            rlt_cli_error("out of memory formatting the records");
            rc = RLT_CLI_EXIT_INTERNAL;
            goto cleanup;
        }
        /* the object without its closing brace, then the records array */
        printf("%.*s,\"records\":[", (int)strlen(text) - 1, text);
        cJSON_free(text);
    } else {
        printf("op:     %s\n", rlt_op_spec(op));
        printf("target: %s\n", target ? target : "(all targets)");
        printf("records: %" PRId64 "%s, oldest first\n\n", n_total,
               w.first > 0 ? " (the earlier ones are left out by --limit)" : "");
        printf("%5s  %-13s %9s %9s  %-8s %s\n", "n", "status", "GFLOP/s", "best", "tuner", "config");
    }
    if ((st = rlt_db_history(db, rlt_op_spec(op), target, history_visit, &w, &d)) != RLT_STATUS_OK) {
        rc = db_error(st, &d);
        goto cleanup;
    }
    if (w.has_failed) {
        rlt_cli_error("out of memory formatting the records");
        rc = RLT_CLI_EXIT_INTERNAL;
        goto cleanup;
    }
    if (is_json) printf("]}\n");
    rc = RLT_CLI_EXIT_OK;
cleanup:
    rlt_db_close(db);
    rlt_free(target);
    rlt_op_destroy(op);
    return rc;
}

const rlt_cli_cmd rlt_cli_cmd_history = {
    .name = "history",
    .brief = "list every recorded measurement of an op, oldest first",
    .synopsis = "(--op SPEC | --expr EXPR --shape SHAPE) [--db FILE] [--threads N] [--cc CMD]\n"
                "                      [--cflags FLAGS] [--all-targets] [--limit N] [--json]",
    .summary = "Lists the op's records on this machine's target (the --threads, --cc and --cflags of the\n"
               "tune run), or on every target with --all-targets, oldest first: status, GFLOP/s, the\n"
               "best GFLOP/s so far, the tuner and the configuration (cut to 60 characters).",
    .details = "Exit status 1 when the op has no records there.\n"
               "With --json, stdout holds one JSON object: op, target (null with --all-targets),\n"
               "n_records (all of them, whatever --limit says), records: an array, oldest first, of\n"
               "{n, best_gflops, record}: n counts from 1 over all records, best_gflops is the best so\n"
               "far, record is the record's JSON object (as 'rltune best --json' prints it).",
    .n_opts = (int)RLT_CLI_ARRAY_LEN(history_opts),
    .opts = history_opts,
    .run = run_history,
};

/* ---- records export | import -------------------------------------------- */

static const rlt_cli_opt records_export_opts[] = {
    {"db", "FILE", "records database (default rltune.db in the working directory)"},
    {"op", "SPEC", "export only this op's records (default: all of them)"},
    {"out", "FILE", "write to FILE instead of stdout (replaced whole, never left half-written)"},
};

static const rlt_cli_opt records_import_opts[] = {
    {"db", "FILE", "records database, created if absent (default rltune.db in the working directory)"},
};

/* The table `rltune help records` prints: both sub-commands' options. */
static const rlt_cli_opt records_opts[] = {
    {"db", "FILE", "records database (default rltune.db in the working directory)"},
    {"op", "SPEC", "export: only this op's records (default: all of them)"},
    {"out", "FILE", "export: write to FILE instead of stdout"},
};

static const char records_export_synopsis[] = "export [--db FILE] [--op SPEC] [--out FILE]";
static const char records_import_synopsis[] = "import FILE [--db FILE]";

static int records_export(const rlt_cli_args *args)
{
    int rc = RLT_CLI_EXIT_USAGE;
    rlt_diag d = {0};
    rlt_op *op = NULL;
    rlt_db *db = NULL;
    FILE *f = stdout;
    char tmp_path[4096] = "";
    const char *db_path = NULL;
    const char *out_path = rlt_cli_args_get(args, "out");
    const char *spec = rlt_cli_args_get(args, "op");
    rlt_status st;
    if (spec && (st = rlt_op_parse(spec, &op, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("--op: %s", d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    if ((rc = rlt_cli_db_open_read(args, &db, &db_path)) != RLT_CLI_EXIT_OK) goto cleanup;
    if (out_path) {
        /* a temporary name, renamed into place at the end: a failed export
         * never leaves a half-written file under the name asked for */
        snprintf(tmp_path, sizeof tmp_path, "%s.tmp.%ld", out_path, (long)getpid());
        if (!(f = fopen(tmp_path, "w"))) {
            rlt_cli_error("--out: cannot create '%s': %s", tmp_path, strerror(errno));
            tmp_path[0] = '\0';
            rc = RLT_CLI_EXIT_USAGE;
            goto cleanup;
        }
    }
    if ((st = rlt_db_export_jsonl(db, op ? rlt_op_spec(op) : NULL, f, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    if (fflush(f) != 0 || ferror(f)) {
        rlt_cli_error("cannot write the records to %s: %s", out_path ? tmp_path : "stdout", strerror(errno));
        rc = RLT_CLI_EXIT_INTERNAL;
        goto cleanup;
    }
    if (out_path) {
        FILE *done = f;
        f = stdout;
        if (fclose(done) != 0 || rename(tmp_path, out_path) != 0) {
            rlt_cli_error("--out: cannot write '%s': %s", out_path, strerror(errno));
            rc = RLT_CLI_EXIT_INTERNAL;
            goto cleanup;
        }
        tmp_path[0] = '\0';
    }
    rc = RLT_CLI_EXIT_OK;
cleanup:
    if (f != stdout) fclose(f);
    if (tmp_path[0]) remove(tmp_path);
    rlt_db_close(db);
    rlt_op_destroy(op);
    return rc;
}

static int records_import(const char *source, const rlt_cli_args *args)
{
    int rc = RLT_CLI_EXIT_USAGE;
    rlt_diag d = {0};
    rlt_db *db = NULL;
    bool is_stdin = strcmp(source, "-") == 0;
    FILE *f = is_stdin ? stdin : fopen(source, "r");
    int n_added = 0, n_skipped = 0;
    rlt_status st;
    if (!f) {
        rlt_cli_error("cannot open '%s': %s", source, strerror(errno));
        goto cleanup;
    }
    const char *db_path = rlt_cli_args_get(args, "db");
    if (!db_path) db_path = DEFAULT_DB;
    if ((st = rlt_db_open(db_path, &(rlt_db_opts){0}, &db, &d)) != RLT_STATUS_OK) {
        rlt_cli_error("--db: %s", d.message);
        rc = st == RLT_STATUS_OUT_OF_MEMORY ? RLT_CLI_EXIT_INTERNAL : RLT_CLI_EXIT_USAGE;
        goto cleanup;
    }
    if ((st = rlt_db_import_jsonl(db, f, is_stdin ? "<stdin>" : source, &n_added, &n_skipped, &d)) !=
        RLT_STATUS_OK) {
        rlt_cli_error("%s (nothing was imported)", d.message);
        rc = rlt_cli_exit_for(st);
        goto cleanup;
    }
    printf("added %d, skipped %d (already present) in %s\n", n_added, n_skipped, db_path);
    rc = RLT_CLI_EXIT_OK;
cleanup:
    rlt_db_close(db);
    if (f && !is_stdin) fclose(f);
    return rc;
}

static bool is_help_word(const char *w) { return strcmp(w, "--help") == 0 || strcmp(w, "-h") == 0; }

static void print_records_help(void)
{
    rlt_cli_usage_print(stdout, "records", rlt_cli_cmd_records.synopsis, rlt_cli_cmd_records.summary,
                        rlt_cli_cmd_records.n_opts, rlt_cli_cmd_records.opts);
    printf("\n%s\n", rlt_cli_cmd_records.details);
}

/* `rltune records SUB ...`: the sub-command is the first word; the rest is
 * parsed against that sub-command's options. */
static int run_records(int argc, char **argv)
{
    rlt_diag d = {0};
    rlt_cli_args args;
    if (argc == 0) {
        rlt_cli_error("'rltune records' needs a sub-command: export or import (see 'rltune help records')");
        return RLT_CLI_EXIT_USAGE;
    }
    const char *sub = argv[0];
    bool is_export = strcmp(sub, "export") == 0, is_import = strcmp(sub, "import") == 0;
    for (int a = 0; a < argc; a++) {
        if (!is_help_word(argv[a])) continue;
        if (is_export)
            rlt_cli_usage_print(stdout, "records", records_export_synopsis, "Writes records as JSON lines.",
                                (int)RLT_CLI_ARRAY_LEN(records_export_opts), records_export_opts);
        else if (is_import)
            rlt_cli_usage_print(stdout, "records", records_import_synopsis,
                                "Adds the records of a JSON-lines file ('-': stdin) not already present.",
                                (int)RLT_CLI_ARRAY_LEN(records_import_opts), records_import_opts);
        else
            print_records_help();
        return RLT_CLI_EXIT_OK;
    }
    if (!is_export && !is_import) {
        rlt_cli_error("unknown sub-command '%.100s' for 'rltune records'; sub-commands: export, import", sub);
        return RLT_CLI_EXIT_USAGE;
    }
    if (is_export) {
        if (rlt_cli_args_parse("records export", (int)RLT_CLI_ARRAY_LEN(records_export_opts), records_export_opts,
                               argc - 1, argv + 1, &args, &d) != RLT_STATUS_OK) {
            rlt_cli_error("%s", d.message);
            return RLT_CLI_EXIT_USAGE;
        }
        return records_export(&args);
    }
    /* import FILE: the file is the one positional word; "-" is stdin */
    if (argc < 2 || (strncmp(argv[1], "--", 2) == 0)) {
        rlt_cli_error("'rltune records import' needs the file to import: rltune %s %s", "records",
                      records_import_synopsis);
        return RLT_CLI_EXIT_USAGE;
    }
    if (rlt_cli_args_parse("records import", (int)RLT_CLI_ARRAY_LEN(records_import_opts), records_import_opts,
                           argc - 2, argv + 2, &args, &d) != RLT_STATUS_OK) {
        rlt_cli_error("%s", d.message);
        return RLT_CLI_EXIT_USAGE;
    }
    return records_import(argv[1], &args);
}

const rlt_cli_cmd rlt_cli_cmd_records = {
    .name = "records",
    .brief = "export the records as JSON lines, or import them",
    .synopsis = "export [--db FILE] [--op SPEC] [--out FILE]\n"
                "       rltune records import FILE [--db FILE]",
    .summary = "export writes the records (all, or one op's) as JSON lines, format v2 (docs/formats.md),\n"
               "to stdout or --out; import adds those of a file ('-': stdin) that are not already in\n"
               "the database (same spec, target, config, created_s and status), in one transaction.",
    .details = "import prints \"added N, skipped M\". A malformed line fails the whole import (exit 2,\n"
               "the message names the line) and adds nothing.",
    .n_opts = (int)RLT_CLI_ARRAY_LEN(records_opts),
    .opts = records_opts,
    .run_words = run_records,
};
