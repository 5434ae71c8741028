/* Replays the committed fuzz corpus of the op front end
 * (tests/fuzz/corpus/op/, grown by tests/fuzz/fuzz_op.c) through
 * rlt_op_parse and rlt_op_from_expr, the way the fuzz target does: each file
 * whole as a spec, and split at its first newline into expression and shape.
 * Only asserts that nothing crashes and that every failure has a message;
 * running under ASan/UBSan (RLTUNE_SANITIZE) catches the rest. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

#define CORPUS_DIR RLTUNE_SOURCE_DIR "/tests/fuzz/corpus/op"

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
