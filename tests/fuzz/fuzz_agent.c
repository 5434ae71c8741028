/*
 * fuzz_agent.c - libFuzzer target for agent files (nn/agent_file.h): the
 * input is loaded with rlt_agent_file_load_bytes. Nothing may crash, leak
 * or read out of bounds; every failure must be a PARSE_ERROR with a message
 * that hands out nothing. A file that loads must be canonical: saved again
 * it gives back the input byte for byte.
 *
 * Built with clang by the CMake option RLTUNE_FUZZ and run by
 * scripts/fuzz.sh (part of scripts/test.sh: FUZZ_SECONDS each, 20 by
 * default, inputs up to 4000 bytes) over a scratch copy of its corpus,
 * tests/fuzz/corpus/agent/, which tests/unit/test_agent_file.c also
 * replays in every test run (files named valid_* must load, the others must
 * be refused). To fuzz it longer, from the repository root:
 *
 *   FUZZ_SECONDS=600 scripts/fuzz.sh agent
 *
 * A file holds a checksum of its bytes, which random mutations break: each
 * input is also tried with its last 8 bytes replaced by the right checksum,
 * so that mutations reach the section parser.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nn/agent_file.h"

static void check_input(const unsigned char *data, size_t size)
{
    rlt_diag d = {0};
    rlt_agent_file *f = NULL;
    rlt_status st = rlt_agent_file_load_bytes((const char *)data, size, "fuzz", &f, &d);
    if (st != RLT_STATUS_OK) {
        if (f || st != RLT_STATUS_PARSE_ERROR || d.message[0] == '\0') abort();
        return;
    }
    char path[64];
    snprintf(path, sizeof path, "/tmp/fuzz_agent.%d", (int)getpid());
    if (rlt_agent_file_save(f, path, &d) != RLT_STATUS_OK) abort();
    char *bytes = NULL;
    size_t len = 0;
    if (rlt_file_read(path, &bytes, &len, &d) != RLT_STATUS_OK) abort();
    if (len != size || memcmp(bytes, data, size) != 0) abort();
    rlt_free(bytes);
    unlink(path);
    rlt_agent_file_destroy(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_input(data, size);
    if (size >= 8) {
        unsigned char *fixed = malloc(size);
        if (!fixed) return 0;
        memcpy(fixed, data, size);
        rlt_le_store(fixed + size - 8, rlt_hash_bytes(RLT_HASH_SEED, fixed, size - 8), 8);
        check_input(fixed, size);
        free(fixed);
    }
    return 0;
}
