/*
 * fuzz_npy.c - libFuzzer target for the .npy reader (rlt_npy_load,
 * src/api/npy.c): the input is written to a file and loaded. Nothing may
 * crash, leak, hang or read out of bounds. A refusal is a status with a
 * message that starts with the file's path and hands out no array; an
 * array that loads is saved and loaded again, and must come back the same
 * (element type, shape and bytes).
 *
 * Built with clang by the CMake option RLTUNE_FUZZ and run by
 * scripts/fuzz.sh (part of scripts/test.sh: FUZZ_SECONDS each, 20 by
 * default, inputs up to 4096 bytes) over a scratch copy of its corpus,
 * tests/fuzz/corpus/npy/ (NumPy's own files from tests/fixtures/npy/ and
 * truncations of them), which tests/unit/test_fuzz_corpus.c also replays
 * in every test run: files named ok_* must load, bad_* must be refused,
 * any other name (a fuzzer's find) may go either way. To fuzz it longer,
 * from the repository root:
 *
 *   FUZZ_SECONDS=600 scripts/fuzz.sh npy
 *
 * The files live in a directory under $TMPDIR (else /tmp) made at the
 * first input; scripts/fuzz.sh gives the target a TMPDIR of its own and
 * removes it after the run.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rltune/npy.h"

static char in_path[4096], out_path[4096];

static void paths_make(void)
{
    if (in_path[0]) return;
    const char *tmp = getenv("TMPDIR");
    char dir[4000];
    snprintf(dir, sizeof dir, "%s/rlt_fuzz_npy_XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(dir)) abort();
    snprintf(in_path, sizeof in_path, "%s/in.npy", dir);
    snprintf(out_path, sizeof out_path, "%s/out.npy", dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    paths_make();
    FILE *f = fopen(in_path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) abort();
    rlt_array *a = (rlt_array *)1, *b = NULL;
    rlt_diag d = {0};
    rlt_status st = rlt_npy_load(in_path, &a, &d);
    if (st != RLT_STATUS_OK) {
        if (a != NULL && a != (rlt_array *)1) abort(); /* nothing handed out */
        if (d.status != st || strncmp(d.message, in_path, strlen(in_path)) != 0) abort();
        return 0;
    }
    if (!a) abort();
    if (rlt_npy_save(out_path, a, &d) != RLT_STATUS_OK || rlt_npy_load(out_path, &b, &d) != RLT_STATUS_OK) abort();
    if (b->elem != a->elem || b->rank != a->rank) abort();
    for (int i = 0; i < a->rank; i++)
        if (b->dims[i] != a->dims[i]) abort();
    size_t bytes = (size_t)rlt_array_n_elems(a) * rlt_elem_size(a->elem);
    if (bytes && memcmp(a->data, b->data, bytes) != 0) abort();
    rlt_array_destroy(a);
    rlt_array_destroy(b);
    return 0;
}
