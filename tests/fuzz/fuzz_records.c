/*
 * fuzz_records.c - libFuzzer target for the JSON-lines records importer
 * (rlt_db_import_jsonl, src/db/db.c): the input is imported into a records
 * database. It must never crash, leak or read out of bounds; an import
 * either succeeds, adding exactly the records it counts (and importing the
 * same input again adds none), or is refused with PARSE_ERROR and a message
 * that starts "fuzz:LINE:", leaving the database as it was (the import is
 * one transaction: docs/formats.md).
 *
 * Built with clang by the CMake option RLTUNE_FUZZ and run by
 * scripts/fuzz.sh (part of scripts/test.sh: FUZZ_SECONDS each, 20 by
 * default, inputs up to 4096 bytes) over a scratch copy of its corpus,
 * tests/fuzz/corpus/records/, which tests/unit/test_fuzz_corpus.c also
 * replays in every test run (that test also says how corpus files are
 * named: ok_*, bad_L<line>_*, anything else). To fuzz it longer, from the
 * repository root:
 *
 *   FUZZ_SECONDS=600 scripts/fuzz.sh records
 *
 * The database lives in a directory under $TMPDIR (else /tmp) made at the
 * first input, and is started afresh every 1000 inputs so that it stays
 * small; the directory is left behind, so scripts/fuzz.sh gives the target
 * a TMPDIR of its own and removes it after the run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db/db.h"

static char db_path[4096];
static rlt_db *db;
static int n_inputs;

/* Opens a new, empty database (removing the last one). */
static void db_restart(void)
{
    static char dir[4000];
    if (!dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/rlt_fuzz_records_XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) abort();
        snprintf(db_path, sizeof db_path, "%s/fuzz.db", dir);
    }
    rlt_db_close(db);
    db = NULL;
    const char *suffixes[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s%s", db_path, suffixes[i]);
        unlink(path);
    }
    rlt_diag d = {0};
    if (rlt_db_open(db_path, NULL, &db, &d) != RLT_STATUS_OK) abort();
}

static int64_t count_all(void)
{
    int64_t n = -1;
    rlt_diag d = {0};
    if (rlt_db_count(db, NULL, &n, &d) != RLT_STATUS_OK) abort();
    return n;
}

/* Imports `size` bytes; returns the status, the counts and the message. */
static rlt_status import_bytes(const unsigned char *data, size_t size, int *n_added, int *n_skipped, rlt_diag *d)
{
    /* fmemopen reads a buffer's bytes, NULs included; it refuses size 0 on
     * old C libraries, so an empty input reads /dev/null. */
    FILE *in = size ? fmemopen((void *)data, size, "rb") : fopen("/dev/null", "rb");
    if (!in) abort();
    rlt_status st = rlt_db_import_jsonl(db, in, "fuzz", n_added, n_skipped, d);
    fclose(in);
    return st;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (!db || ++n_inputs % 1000 == 0) db_restart();
    int64_t before = count_all();
    int n_added = -1, n_skipped = -1;
    rlt_diag d = {0};
    rlt_status st = import_bytes(data, size, &n_added, &n_skipped, &d);
    if (st == RLT_STATUS_OK) {
        if (n_added < 0 || n_skipped < 0 || count_all() != before + n_added) abort();
        int again_added = -1, again_skipped = -1;
        rlt_diag d2 = {0};
        if (import_bytes(data, size, &again_added, &again_skipped, &d2) != RLT_STATUS_OK) abort();
        if (again_added != 0 || again_skipped != n_added + n_skipped) abort();
        return 0;
    }
    /* Refused: a parse error naming the line, nothing stored, no counts. */
    if (st != RLT_STATUS_PARSE_ERROR || d.status != st) abort();
    if (strncmp(d.message, "fuzz:", 5) != 0 || d.message[5] < '1' || d.message[5] > '9') abort();
    if (n_added != 0 || n_skipped != 0 || count_all() != before) abort();
    return 0;
}
