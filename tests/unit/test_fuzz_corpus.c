/* Replays committed fuzz corpora; running under ASan/UBSan
 * (RLTUNE_SANITIZE) catches what the assertions do not.
 * - The op front end (tests/fuzz/corpus/op/, grown by tests/fuzz/fuzz_op.c)
 *   through rlt_op_parse and rlt_op_from_expr, the way the fuzz target does:
 *   each file whole as a spec, and split at its first newline into
 *   expression and shape. Asserts that nothing crashes and that every
 *   failure has a message.
 * - The JSON-lines records importer (tests/fuzz/corpus/records/, grown by
 *   tests/fuzz/fuzz_records.c): each file imported with
 *   rlt_db_import_jsonl into a fresh database that holds one record. An
 *   import either succeeds (every non-blank line added or skipped as
 *   present; importing it again adds nothing) or is refused with
 *   PARSE_ERROR, a message that starts "FILE:LINE:", and the database
 *   exactly as it was (docs/formats.md: the import is one transaction).
 *   Files named ok_* must import; bad_L<n>_* must be refused naming line
 *   <n>; any other name (a fuzzer's find) may go either way. A line over
 *   the 1 MiB limit is made here rather than committed. Nothing may leak
 *   (checked in the sanitizer build).
 * - The .npy reader (tests/fuzz/corpus/npy/, grown by tests/fuzz/fuzz_npy.c)
 *   through rlt_npy_load: ok_* must load, and save and load back the same;
 *   bad_* must be refused with a message that starts with the path; any
 *   other name may go either way.
 * - The state-dataset reader (tests/fuzz/corpus/env_states/, grown by
 *   tests/fuzz/fuzz_env_states.c) through env_dataset_load for
 *   matmul:M=32,N=32,K=32: ok_* must load with as many states as their
 *   header says, bad_* must be refused with a message naming the file.
 * - The rule language (tests/fuzz/corpus/rules/, grown by
 *   tests/fuzz/fuzz_rules.c) through rlt_ruleset_parse and
 *   rlt_ruleset_verify: ok_* (each shipped rule alone) must parse and
 *   verify, bad_* must be refused by one or the other with a message. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/leaks.h"
#include "../common/tmp.h"
#include "db/db.h"
#include "env/env.h"
#include "gopt/gopt.h"
#include "ir/ir.h"
#include "rltune/npy.h"

#define CORPUS_DIR RLTUNE_SOURCE_DIR "/tests/fuzz/corpus/op"
#define RECORDS_DIR RLTUNE_SOURCE_DIR "/tests/fuzz/corpus/records"
#define NPY_DIR RLTUNE_SOURCE_DIR "/tests/fuzz/corpus/npy"
#define ENV_STATES_DIR RLTUNE_SOURCE_DIR "/tests/fuzz/corpus/env_states"
#define RULES_DIR RLTUNE_SOURCE_DIR "/tests/fuzz/corpus/rules"

static void check(const char *file, const char *what, rlt_status st, rlt_op *op, const rlt_diag *d)
{
    if (st == RLT_STATUS_OK) {
        cr_assert_not_null(op, "%s (%s): OK without an op", file, what);
        cr_assert_neq(op->spec[0], '\0', "%s (%s): empty spec", file, what);
        rlt_op_destroy(op);
        return;
    }
    cr_assert_null(op, "%s (%s): failed but handed out an op", file, what);
    cr_assert_eq(d->status, st, "%s (%s): diag status differs", file, what);
    cr_assert_neq(d->message[0], '\0', "%s (%s): %s without a message", file, what, rlt_status_str(st));
}

Test(fuzz_corpus, op_inputs_never_crash_and_failures_have_messages)
{
    DIR *dir = opendir(CORPUS_DIR);
    cr_assert_not_null(dir, "cannot open %s", CORPUS_DIR);
    int n_files = 0, n_ok = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        if (entry->d_name[0] == '.') continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", CORPUS_DIR, entry->d_name);
        char *data = NULL;
        size_t len = 0;
        rlt_diag rd = {0};
        cr_assert_eq(rlt_file_read(path, &data, &len, &rd), RLT_STATUS_OK, "%s", rd.message);
        n_files++;
        /* Own NUL-terminated copy: the bytes as the fuzz target sees them. */
        char *text = malloc(len + 1);
        cr_assert_not_null(text);
        memcpy(text, data, len);
        text[len] = '\0';
        rlt_free(data);

        rlt_diag d = {0};
        rlt_op *op = NULL;
        rlt_status st = rlt_op_parse(text, &op, &d);
        n_ok += st == RLT_STATUS_OK;
        check(entry->d_name, "spec", st, op, &d);

        char *newline = strchr(text, '\n');
        const char *shape = "";
        if (newline) {
            *newline = '\0';
            shape = newline + 1;
        }
        rlt_diag d2 = {0};
        op = NULL;
        st = rlt_op_from_expr(text, shape, &op, &d2);
        n_ok += st == RLT_STATUS_OK;
        check(entry->d_name, "expression", st, op, &d2);
        free(text);
    }
    closedir(dir);
    cr_assert_geq(n_files, 30, "the corpus has only %d files", n_files);
    cr_assert_gt(n_ok, 0, "no corpus input parsed at all");
}

/* ---- records ---------------------------------------------------------------- */

/* Every record of the database as exported JSON lines, row ids included
 * (free it): equal texts mean an unchanged database. */
static char *export_all(rlt_db *db)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_not_null(f);
    rlt_diag d = {0};
    cr_assert_eq(rlt_db_export_jsonl(db, NULL, f, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(fclose(f), 0);
    return text;
}

static int64_t count_records(rlt_db *db)
{
    int64_t n = -1;
    rlt_diag d = {0};
    cr_assert_eq(rlt_db_count(db, NULL, &n, &d), RLT_STATUS_OK, "%s", d.message);
    return n;
}

/* A new database in `dir` holding one record that no corpus file has. */
static rlt_db *fresh_db(const char *dir, int i)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%d.db", dir, i);
    rlt_db *db = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_db_open(path, NULL, &db, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_record r;
    memset(&r, 0, sizeof r);
    snprintf(r.spec, sizeof r.spec, "add:N=8");
    cr_assert_eq(rlt_record_target_parse("cpu=test;vec=8;threads=1;cc=gcc", &r.target, &d), RLT_STATUS_OK);
    snprintf(r.config, sizeof r.config, "already=here");
    snprintf(r.schedule, sizeof r.schedule, "split i 2\n");
    snprintf(r.tuner, sizeof r.tuner, "random");
    r.status = RLT_STATUS_OK;
    r.time_min_ms = r.time_median_ms = 1.0;
    r.gflops = 0.5;
    r.created_s = 1700000000.0;
    cr_assert_eq(rlt_db_append(db, 1, &r, &d), RLT_STATUS_OK, "%s", d.message);
    return db;
}

/* Lines holding anything but spaces, tabs and a CR: the records of a file
 * that imports. */
static int count_record_lines(const char *data, size_t len)
{
    int n = 0;
    bool has_text = false;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || data[i] == '\n') {
            n += has_text;
            has_text = false;
        } else if (data[i] != ' ' && data[i] != '\t' && data[i] != '\r') {
            has_text = true;
        }
    }
    return n;
}

typedef enum expect { EXPECT_OK, EXPECT_REFUSED, EXPECT_EITHER } expect;

/* Imports `path` (named `name` in messages) into a fresh database and
 * checks the outcome; a refusal's message must hold `needle` unless it is
 * NULL. Returns whether the import was refused. */
static bool replay_records(const char *dir, int i, const char *path, const char *name, expect want, long want_line,
                           const char *needle)
{
    rlt_db *db = fresh_db(dir, i);
    char *before = export_all(db);
    FILE *in = fopen(path, "rb");
    cr_assert_not_null(in, "cannot open %s", path);
    int n_added = -1, n_skipped = -1;
    rlt_diag d = {0};
    rlt_status st = rlt_db_import_jsonl(db, in, name, &n_added, &n_skipped, &d);
    fclose(in);
    if (st == RLT_STATUS_OK) {
        cr_assert_neq(want, EXPECT_REFUSED, "%s: a broken file was imported (%d added)", name, n_added);
        size_t len = 0;
        char *data = tmp_file_read(path, &len);
        int n_lines = count_record_lines(data, len);
        free(data);
        cr_assert_eq(n_added + n_skipped, n_lines, "%s: %d added + %d skipped of %d records", name, n_added,
                     n_skipped, n_lines);
        cr_assert_eq(count_records(db), 1 + n_added, "%s", name);
        /* again: everything is present now */
        int again_added = -1, again_skipped = -1;
        in = fopen(path, "rb");
        cr_assert_not_null(in);
        cr_assert_eq(rlt_db_import_jsonl(db, in, name, &again_added, &again_skipped, &d), RLT_STATUS_OK,
                     "%s, imported again: %s", name, d.message);
        fclose(in);
        cr_assert_eq(again_added, 0, "%s: the second import added %d", name, again_added);
        cr_assert_eq(again_skipped, n_added + n_skipped, "%s", name);
    } else {
        cr_assert_neq(want, EXPECT_OK, "%s: refused (%s): %s", name, rlt_status_str(st), d.message);
        cr_assert_eq(st, RLT_STATUS_PARSE_ERROR, "%s: %s: %s", name, rlt_status_str(st), d.message);
        cr_assert_eq(d.status, st, "%s: the diagnostics hold another status", name);
        /* "FILE:LINE:" first, the line counted from 1, blank lines included */
        size_t name_len = strlen(name);
        const char *at = d.message + name_len + 1;
        char *end = NULL;
        long line = strncmp(d.message, name, name_len) == 0 && d.message[name_len] == ':' && isdigit((unsigned char)*at)
                        ? strtol(at, &end, 10)
                        : 0;
        cr_assert(line >= 1 && end && *end == ':', "%s: the message does not start with '%s:LINE:': %s", name, name,
                  d.message);
        if (want_line > 0) cr_assert_eq(line, want_line, "%s: names line %ld: %s", name, line, d.message);
        if (needle) cr_assert_not_null(strstr(d.message, needle), "%s: no '%s' in: %s", name, needle, d.message);
        cr_assert(n_added == 0 && n_skipped == 0, "%s: refused but counted %d added, %d skipped", name, n_added,
                  n_skipped);
        char *after = export_all(db);
        cr_assert_str_eq(after, before, "%s: a refused import changed the database", name);
        free(after);
        cr_log_info("%s: %s", name, d.message);
    }
    free(before);
    rlt_db_close(db);
    return st != RLT_STATUS_OK;
}

Test(fuzz_corpus, records_imports_are_whole_or_refused_naming_the_line)
{
    char *tmp = tmp_dir_make("/tmp/rlt_fuzz_records_XXXXXX");
    DIR *dir = opendir(RECORDS_DIR);
    cr_assert_not_null(dir, "cannot open %s", RECORDS_DIR);
    int n_files = 0, n_ok = 0, n_refused = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        const char *name = entry->d_name;
        if (name[0] == '.') continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", RECORDS_DIR, name);
        expect want = EXPECT_EITHER;
        long want_line = 0;
        if (strncmp(name, "ok_", 3) == 0) {
            want = EXPECT_OK;
        } else if (strncmp(name, "bad_", 4) == 0) {
            want = EXPECT_REFUSED;
            cr_assert(sscanf(name, "bad_L%ld_", &want_line) == 1 && want_line > 0,
                      "%s: a bad_ file is named bad_L<line>_<what>", name);
        }
        bool is_refused = replay_records(tmp, n_files, path, name, want, want_line, NULL);
        n_files++;
        n_refused += is_refused;
        n_ok += !is_refused;
    }
    closedir(dir);
    tmp_remove_tree(tmp);
    free(tmp);
    assert_no_leaks();
    cr_assert_geq(n_files, 15, "the records corpus has only %d files", n_files);
    cr_assert_geq(n_ok, 3, "only %d corpus files imported", n_ok);
    cr_assert_geq(n_refused, 10, "only %d corpus files were refused", n_refused);
}

/* Lines longer than the importer reads (1 MiB, db.c JSONL_LINE_MAX_BYTES),
 * far and just over, after a good one: refused as too long, naming line 2,
 * nothing stored. Made here: too big to commit. */
Test(fuzz_corpus, records_line_over_a_mebibyte_is_refused)
{
    char *tmp = tmp_dir_make("/tmp/rlt_fuzz_records_XXXXXX");
    char path[512];
    snprintf(path, sizeof path, "%s/long.jsonl", tmp);
    size_t len = 0;
    char *good = tmp_file_read(RECORDS_DIR "/ok_no_final_newline", &len);
    char *nl = strchr(good, '\n');
    cr_assert_not_null(nl);
    size_t good_len = (size_t)(nl - good) + 1;
    /* far over, and just over (the limit falls inside the last read chunk) */
    static const size_t long_lens[] = {2u << 20, (1u << 20) + 100};
    for (size_t i = 0; i < sizeof long_lens / sizeof *long_lens; i++) {
        size_t long_len = long_lens[i];
        char *text = malloc(good_len + long_len + 1);
        cr_assert_not_null(text);
        memcpy(text, good, good_len);
        memset(text + good_len, 'x', long_len);
        text[good_len] = '"';
        text[good_len + long_len - 1] = '\n';
        tmp_file_write(path, text, good_len + long_len);
        free(text);
        bool is_refused =
            replay_records(tmp, 0, path, "long.jsonl", EXPECT_REFUSED, 2, "line longer than 1048576 bytes");
        cr_assert(is_refused, "a line of %zu bytes", long_len);
    }
    free(good);
    tmp_remove_tree(tmp);
    free(tmp);
    assert_no_leaks();
}

Test(fuzz_corpus, npy_files_load_and_round_trip_or_are_refused_by_name)
{
    DIR *dir = opendir(NPY_DIR);
    cr_assert_not_null(dir, "cannot open %s", NPY_DIR);
    char *tmp = tmp_dir_make("/tmp/rlt_fuzz_npy_XXXXXX");
    char out_path[512];
    snprintf(out_path, sizeof out_path, "%s/out.npy", tmp);
    int n_files = 0, n_ok = 0, n_refused = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        if (entry->d_name[0] == '.') continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", NPY_DIR, entry->d_name);
        n_files++;
        rlt_array *a = NULL, *b = NULL;
        rlt_diag d = {0};
        rlt_status st = rlt_npy_load(path, &a, &d);
        if (st != RLT_STATUS_OK) {
            cr_assert(strncmp(entry->d_name, "ok_", 3) != 0, "%s must load: %s", entry->d_name, d.message);
            cr_assert_null(a, "%s: refused but handed out an array", entry->d_name);
            cr_assert(strncmp(d.message, path, strlen(path)) == 0, "%s: message '%s' does not name the file",
                      entry->d_name, d.message);
            n_refused++;
            continue;
        }
        cr_assert(strncmp(entry->d_name, "bad_", 4) != 0, "%s must be refused", entry->d_name);
        cr_assert_eq(rlt_npy_save(out_path, a, &d), RLT_STATUS_OK, "%s: %s", entry->d_name, d.message);
        cr_assert_eq(rlt_npy_load(out_path, &b, &d), RLT_STATUS_OK, "%s: %s", entry->d_name, d.message);
        cr_assert(b->elem == a->elem && b->rank == a->rank, "%s", entry->d_name);
        for (int i = 0; i < a->rank; i++) cr_assert_eq(b->dims[i], a->dims[i], "%s", entry->d_name);
        size_t bytes = (size_t)rlt_array_n_elems(a) * rlt_elem_size(a->elem);
        cr_assert(!bytes || memcmp(a->data, b->data, bytes) == 0, "%s: data differ", entry->d_name);
        rlt_array_destroy(a);
        rlt_array_destroy(b);
        n_ok++;
    }
    closedir(dir);
    tmp_remove_tree(tmp);
    free(tmp);
    assert_no_leaks();
    cr_assert_geq(n_files, 17, "the npy corpus has only %d files", n_files);
    cr_assert_geq(n_ok, 9, "only %d corpus files loaded", n_ok);
    cr_assert_geq(n_refused, 8, "only %d corpus files were refused", n_refused);
}

Test(fuzz_corpus, state_datasets_load_or_are_refused_naming_the_file)
{
    DIR *dir = opendir(ENV_STATES_DIR);
    cr_assert_not_null(dir, "cannot open %s", ENV_STATES_DIR);
    rlt_op *op = NULL;
    rlt_diag pd = {0};
    cr_assert_eq(rlt_op_parse("matmul:M=32,N=32,K=32", &op, &pd), RLT_STATUS_OK);
    int n_files = 0, n_ok = 0, n_refused = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        if (entry->d_name[0] == '.') continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", ENV_STATES_DIR, entry->d_name);
        n_files++;
        env_dataset *ds = NULL;
        rlt_diag d = {0};
        rlt_status st = env_dataset_load(path, op, &ds, &d);
        if (st != RLT_STATUS_OK) {
            cr_assert(strncmp(entry->d_name, "ok_", 3) != 0, "%s must load: %s", entry->d_name, d.message);
            cr_assert_null(ds, "%s: refused but handed out a dataset", entry->d_name);
            cr_assert(strstr(d.message, path), "%s: message '%s' does not name the file", entry->d_name, d.message);
            n_refused++;
            continue;
        }
        cr_assert(strncmp(entry->d_name, "bad_", 4) != 0, "%s must be refused", entry->d_name);
        cr_assert_gt(env_dataset_n_states(ds), 0, "%s", entry->d_name);
        env_dataset_destroy(ds);
        n_ok++;
    }
    closedir(dir);
    rlt_op_destroy(op);
    assert_no_leaks();
    cr_assert_geq(n_files, 15, "the env_states corpus has only %d files", n_files);
    cr_assert_geq(n_ok, 3, "only %d corpus files loaded", n_ok);
    cr_assert_geq(n_refused, 12, "only %d corpus files were refused", n_refused);
}

Test(fuzz_corpus, rule_files_parse_and_verify_or_are_refused)
{
    DIR *dir = opendir(RULES_DIR);
    cr_assert_not_null(dir, "cannot open %s", RULES_DIR);
    int n_files = 0, n_ok = 0, n_refused = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        if (entry->d_name[0] == '.') continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", RULES_DIR, entry->d_name);
        n_files++;
        rlt_ruleset *rs = NULL;
        rlt_diag d = {0};
        rlt_status st = rlt_ruleset_load(path, &rs, &d);
        if (st == RLT_STATUS_OK) st = rlt_ruleset_verify(rs, 1, &d);
        if (st != RLT_STATUS_OK) {
            cr_assert(strncmp(entry->d_name, "ok_", 3) != 0, "%s must parse and verify: %s", entry->d_name,
                      d.message);
            cr_assert_eq(d.status, st, "%s", entry->d_name);
            cr_assert_neq(d.message[0], '\0', "%s: refused without a message", entry->d_name);
            n_refused++;
        } else {
            cr_assert(strncmp(entry->d_name, "bad_", 4) != 0, "%s must be refused", entry->d_name);
            cr_assert_gt(rs->n_rules, 0, "%s", entry->d_name);
            n_ok++;
        }
        rlt_ruleset_destroy(rs);
    }
    closedir(dir);
    assert_no_leaks();
    cr_assert_geq(n_files, 30, "the rules corpus has only %d files", n_files);
    cr_assert_geq(n_ok, 20, "only %d corpus files verified", n_ok);
    cr_assert_geq(n_refused, 8, "only %d corpus files were refused", n_refused);
}
