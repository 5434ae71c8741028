/*
 * fuzz_env_states.c - libFuzzer target for the state-dataset reader
 * (env_dataset_load, src/env/dataset.c): the input is written to a file
 * and read as a dataset of matmul:M=32,N=32,K=32, the op of the corpus's
 * files. Nothing may crash, leak, hang or read out of bounds. A refusal
 * is a status with a message that names the file and hands out no
 * dataset.
 *
 * Built with clang by the CMake option RLTUNE_FUZZ and run by
 * scripts/fuzz.sh (part of scripts/test.sh: FUZZ_SECONDS each, 20 by
 * default) over a scratch copy of its corpus, tests/fuzz/corpus/env_states/
 * (cuts of examples/python/data/matmul32.states and damaged copies), which
 * tests/unit/test_fuzz_corpus.c also replays in every test run: files
 * named ok_* must load, bad_* must be refused, any other name may go either
 * way. To fuzz it longer, from the repository root:
 *
 *   FUZZ_SECONDS=600 scripts/fuzz.sh env_states
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "env/env.h"
#include "ir/ir.h"

static char in_path[4096];
static rlt_op *op;

static void setup(void)
{
    if (in_path[0]) return;
    const char *tmp = getenv("TMPDIR");
    char dir[4000];
    snprintf(dir, sizeof dir, "%s/rlt_fuzz_env_states_XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(dir)) abort();
    snprintf(in_path, sizeof in_path, "%s/in.states", dir);
    rlt_diag d = {0};
    if (rlt_op_parse("matmul:M=32,N=32,K=32", &op, &d) != RLT_STATUS_OK) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    FILE *f = fopen(in_path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) abort();
    env_dataset *ds = (env_dataset *)1;
    rlt_diag d = {0};
    rlt_status st = env_dataset_load(in_path, op, &ds, &d);
    if (st != RLT_STATUS_OK) {
        if (ds != NULL && ds != (env_dataset *)1) abort(); /* nothing handed out */
        if (d.status != st || !strstr(d.message, in_path)) abort();
        return 0;
    }
    if (!ds || env_dataset_n_states(ds) < 0 || env_dataset_n_threads(ds) < 1) abort();
    env_dataset_destroy(ds);
    return 0;
}
