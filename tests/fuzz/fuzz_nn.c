/*
 * fuzz_nn.c - libFuzzer target for network weights files: the input is
 * loaded (rlt_mlp_load_bytes, with the optimiser state asked for). Nothing
 * may crash, leak or read out of bounds; every failure must be a
 * PARSE_ERROR with a message and hand out nothing. A file that loads must
 * be canonical: saving what was loaded gives back the input byte for byte;
 * and it must predict (finite weights may still overflow to inf or NaN in
 * the outputs: not a bug, so not checked).
 *
 * Built with clang by the CMake option RLTUNE_FUZZ and run by
 * scripts/fuzz.sh (part of scripts/test.sh: FUZZ_SECONDS each, 20 by
 * default, inputs up to 2000 bytes) over a scratch copy of its corpus,
 * tests/fuzz/corpus/nn/, which tests/unit/test_nn.c also replays in every
 * test run (files named valid_* must load, the others must be refused). To
 * fuzz it longer, from the repository root:
 *
 *   FUZZ_SECONDS=600 scripts/fuzz.sh nn
 *
 * A file holds a checksum of its bytes, which random mutations break: each
 * input is also tried with its last 8 bytes replaced by the right checksum,
 * so that mutations reach the value checks and the loading path.
 */
#include <stdlib.h>
#include <string.h>

#include "nn/nn.h"

/* Loads one input and checks what the loader did with it. */
static void check_input(const unsigned char *data, size_t size)
{
    rlt_diag d = {0};
    rlt_mlp *m = NULL;
    rlt_adam *a = NULL;
    rlt_status st = rlt_mlp_load_bytes((const char *)data, size, "fuzz", &m, &a, &d);
    if (st != RLT_STATUS_OK) {
        if (m || a || st != RLT_STATUS_PARSE_ERROR || d.status != st || d.message[0] == '\0') abort();
        return;
    }
    if (!m) abort();
    char *bytes = NULL;
    size_t len = 0;
    if (rlt_mlp_save_bytes(m, a, &bytes, &len, &d) != RLT_STATUS_OK) abort();
    if (len != size || memcmp(bytes, data, size) != 0) abort();
    rlt_free(bytes);

    int n_in = rlt_mlp_n_inputs(m), n_out = rlt_mlp_n_outputs(m);
    float *x = calloc((size_t)n_in, sizeof *x), *y = calloc((size_t)n_out, sizeof *y);
    if (!x || !y) abort();
    if (rlt_mlp_predict(m, 1, x, y, &d) != RLT_STATUS_OK) abort();
    free(y);
    free(x);
    rlt_adam_destroy(a);
    rlt_mlp_destroy(m);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    check_input(data, size);
    /* Again with the checksum (the last 8 bytes) made right, so that
     * mutations get past it to the value checks and the loading path. */
    if (size < 16) return 0;
    unsigned char *fixed = malloc(size);
    if (!fixed) abort();
    memcpy(fixed, data, size);
    uint64_t h = rlt_hash_bytes(RLT_HASH_SEED, fixed, size - 8);
    for (int i = 0; i < 8; i++) fixed[size - 8 + (size_t)i] = (unsigned char)(h >> (8 * i));
    check_input(fixed, size);
    free(fixed);
    return 0;
}
