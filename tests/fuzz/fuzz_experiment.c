/*
 * fuzz_experiment.c - libFuzzer target for experiment configs
 * (experiment/experiment.h, rlt_exp_config_parse): the input is parsed as a
 * config's text. Nothing may crash, leak or read out of bounds; a refused
 * config is PARSE_ERROR or INVALID_ARGUMENT with a message naming the file,
 * and hands out nothing. Parsing reads nothing outside the text, so no
 * dataset, database or model needs to exist (the corpus has configs over
 * ops and over whole models).
 *
 * Built with clang by the CMake option RLTUNE_FUZZ and run by
 * scripts/fuzz.sh (part of scripts/test.sh: FUZZ_SECONDS each, 20 by
 * default, inputs up to 2000 bytes) over a scratch copy of its corpus,
 * tests/fuzz/corpus/experiment/, which tests/unit/test_experiment.c also
 * replays in every test run (files named valid_* must parse, the others
 * must be refused). To fuzz it longer, from the repository root:
 *
 *   FUZZ_SECONDS=600 scripts/fuzz.sh experiment
 */
#include <stdlib.h>
#include <string.h>

#include "experiment/experiment.h"

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
