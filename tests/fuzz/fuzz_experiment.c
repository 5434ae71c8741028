/*
 * fuzz_experiment.c - libFuzzer target for experiment configs
 * (report/report.h, rlt_exp_config_parse): the input is parsed as a
 * config's text. Nothing may crash, leak or read out of bounds; a refused
 * config is PARSE_ERROR or INVALID_ARGUMENT with a message naming the file,
 * and hands out nothing. Parsing reads nothing outside the text, so no
 * dataset or database needs to exist.
 *
 * Not part of the CMake build (CMake builds only files named test_*.c); its
 * corpus in tests/fuzz/corpus/experiment/ is replayed by
 * tests/unit/test_report.c (files named valid_* must parse, the others must
 * be refused). Build and run from the repository root, after a build in
 * build-asan/ (the parser needs the tuners, so it links the library):
 *
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
 *     -fno-sanitize-recover=all -Iinclude -Isrc tests/fuzz/fuzz_experiment.c \
 *     build-asan/librltune.a $(pkg-config --libs libcjson sqlite3 xgboost openblas) \
 *     -lm -ldl -lpthread -o fuzz_experiment
 *   mkdir -p /tmp/experiment-corpus
 *   ./fuzz_experiment -max_len=2000 -max_total_time=120 /tmp/experiment-corpus \
 *     tests/fuzz/corpus/experiment
 */
#include <stdlib.h>
#include <string.h>

#include "report/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    rlt_diag d = {0};
    rlt_exp_config *c = NULL;
    rlt_status st = rlt_exp_config_parse("fuzz.json", text, &c, &d);
    if (st == RLT_STATUS_OK) {
        if (!c) abort();
    } else if (c || (st != RLT_STATUS_PARSE_ERROR && st != RLT_STATUS_INVALID_ARGUMENT) ||
               !strstr(d.message, "fuzz.json")) {
        abort();
    }
    rlt_exp_config_destroy(c);
    free(text);
    return 0;
}
