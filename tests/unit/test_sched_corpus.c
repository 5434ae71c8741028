/* Replays the committed fuzz corpus of schedule text
 * (tests/fuzz/corpus/sched/, grown by tests/fuzz/fuzz_sched.c) the way the
 * fuzz target does: parse; if it parses, print and re-parse (a fixed point),
 * then apply to a small conv2d and a small matmul and lower what is
 * accepted. Asserts that nothing crashes, that every failure carries its
 * status and a message, and that accepted nests lower; running under
 * ASan/UBSan (RLTUNE_SANITIZE) catches the rest. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "sched/sched.h"

#define CORPUS_DIR RLTUNE_SOURCE_DIR "/tests/fuzz/corpus/sched"

/* Returns true if the schedule was accepted for op. */
static bool replay(const char *file, const rlt_sched *s, const rlt_op *op)
{
    rlt_diag d = {0};
    rlt_nest n;
    rlt_status st = rlt_sched_apply(s, op, &n, &d);
    if (st != RLT_STATUS_OK) {
        cr_assert_eq(d.status, st, "%s on %s: diag status differs", file, op->spec);
        cr_assert_neq(d.message[0], '\0', "%s on %s: %s without a message", file, op->spec, rlt_status_str(st));
        cr_assert(st == RLT_STATUS_ILLEGAL_SCHEDULE || st == RLT_STATUS_PARSE_ERROR, "%s on %s: %s: %s", file,
                  op->spec, rlt_status_str(st), d.message);
        return false;
    }
    cr_assert_eq(rlt_nest_check(&n, &d), RLT_STATUS_OK, "%s on %s: accepted nest fails the check: %s", file,
                 op->spec, d.message);
    rlt_kernel_src k;
    cr_assert_eq(rlt_codegen_kernel(&n, &k, &d), RLT_STATUS_OK, "%s on %s: %s", file, op->spec, d.message);
    rlt_kernel_src_free(&k);
    return true;
}

Test(sched_corpus, inputs_never_crash_and_failures_have_messages)
{
    rlt_op *conv = NULL, *matmul = NULL;
    cr_assert_eq(rlt_op_parse("conv2d:N=1,C=2,H=5,W=5,K=3,R=3,S=3,stride=1,pad=1", &conv, NULL), RLT_STATUS_OK);
    cr_assert_eq(rlt_op_parse("matmul:M=13,N=17,K=9", &matmul, NULL), RLT_STATUS_OK);
    DIR *dir = opendir(CORPUS_DIR);
    cr_assert_not_null(dir, "cannot open %s", CORPUS_DIR);
    int n_files = 0, n_parsed = 0, n_applied = 0;
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
        /* The bytes as the fuzz target sees them: up to the first NUL. */
        rlt_diag d = {0};
        rlt_sched *s = NULL;
        rlt_status st = rlt_sched_parse(data, entry->d_name, &s, &d);
        rlt_free(data);
        if (st != RLT_STATUS_OK) {
            cr_assert_null(s, "%s: failed but handed out a schedule", entry->d_name);
            cr_assert_eq(d.status, st, "%s: diag status differs", entry->d_name);
            cr_assert_neq(d.message[0], '\0', "%s: %s without a message", entry->d_name, rlt_status_str(st));
            cr_assert(strstr(d.message, entry->d_name), "%s: the message does not name the source: %s",
                      entry->d_name, d.message);
            continue;
        }
        n_parsed++;
        rlt_str printed, again_printed;
        rlt_str_init(&printed);
        rlt_str_init(&again_printed);
        rlt_sched_print(s, &printed);
        rlt_sched *again = NULL;
        cr_assert_eq(rlt_sched_parse(printed.data, "printed", &again, &d), RLT_STATUS_OK, "%s: %s", entry->d_name,
                     d.message);
        rlt_sched_print(again, &again_printed);
        cr_assert_str_eq(again_printed.data, printed.data, "%s: print is not a fixed point", entry->d_name);
        rlt_str_free(&printed);
        rlt_str_free(&again_printed);
        rlt_sched_destroy(again);
        n_applied += replay(entry->d_name, s, conv);
        n_applied += replay(entry->d_name, s, matmul);
        rlt_sched_destroy(s);
    }
    closedir(dir);
    cr_assert_geq(n_files, 30, "the corpus has only %d files", n_files);
    cr_assert_gt(n_parsed, 10, "only %d corpus inputs parse", n_parsed);
    cr_assert_gt(n_applied, 5, "only %d corpus inputs apply to an op", n_applied);
    rlt_op_destroy(matmul);
    rlt_op_destroy(conv);
}
