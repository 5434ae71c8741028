/*
 * fuzz_agent.c - libFuzzer target for agent files (search/agent_file.h):
 * the input is loaded with rlt_agent_file_load_bytes. Nothing may crash,
 * leak or read out of bounds; every failure must be a PARSE_ERROR with a
 * message that hands out nothing. A file that loads must be canonical: saved
 * again it gives back the input byte for byte.
 *
 * Not part of the CMake build (CMake builds only files named test_*.c); its
 * corpus in tests/fuzz/corpus/agent/ is replayed by
 * tests/unit/test_agent_file.c (files named valid_* must load, the others
 * must be refused). Build and run from the repository root:
 *
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
 *     -fno-sanitize-recover=all $(pkg-config --cflags openblas) \
 *     -Iinclude -Isrc src/core/core.c src/nn/*.c src/search/agent_file.c \
 *     src/space/*.c src/sched/*.c src/ir/*.c tests/fuzz/fuzz_agent.c \
 *     $(pkg-config --libs openblas) -lm -o fuzz_agent
 *   mkdir -p /tmp/agent-corpus
 *   ./fuzz_agent -max_len=4000 -max_total_time=120 /tmp/agent-corpus tests/fuzz/corpus/agent
 *
 * (agent_file.c also defines rlt_tuner_save / rlt_tuner_load, which need
 * the tuners: link the whole library instead, build/librltune.a, when the
 * line above does not link.) A file holds a checksum of its bytes, which
 * random mutations break: each input is also tried with its last 8 bytes
 * replaced by the right checksum, so that mutations reach the section
 * parser.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "search/agent_file.h"

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
