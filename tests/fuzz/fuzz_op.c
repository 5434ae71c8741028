/*
 * fuzz_op.c - libFuzzer target for the op front end: the input split at its
 * first newline is tried as an expression and a shape (rlt_op_from_expr),
 * and the whole input as an op spec (rlt_op_parse). Parsers must never
 * crash, leak or read out of bounds, and every failure must carry a message;
 * a parsed op's spec must parse back to the same spec.
 *
 * Built with clang by the CMake option RLTUNE_FUZZ and run by
 * scripts/fuzz.sh (part of scripts/test.sh: FUZZ_SECONDS each, 20 by
 * default, inputs up to 600 bytes) over a scratch copy of its corpus,
 * tests/fuzz/corpus/op/, which tests/unit/test_fuzz_corpus.c also replays
 * in every test run. To fuzz it longer, from the repository root:
 *
 *   FUZZ_SECONDS=600 scripts/fuzz.sh op
 */
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

static void check(rlt_status st, rlt_op *op, const rlt_diag *d)
{
    if (st != RLT_STATUS_OK) {
        if (op || d->status != st || d->message[0] == '\0') abort();
        return;
    }
    if (!op) abort();
    /* The canonical spec is a fixed point. */
    rlt_diag d2 = {0};
    rlt_op *again = NULL;
    if (rlt_op_parse(op->spec, &again, &d2) != RLT_STATUS_OK) abort();
    if (strcmp(again->spec, op->spec) != 0 || again->flops != op->flops) abort();
    rlt_op_destroy(again);
    rlt_op_destroy(op);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';

    rlt_diag d = {0};
    rlt_op *op = NULL;
    check(rlt_op_parse(text, &op, &d), op, &d);

    char *newline = strchr(text, '\n');
    const char *shape = "";
    if (newline) {
        *newline = '\0';
        shape = newline + 1;
    }
    rlt_diag d2 = {0};
    op = NULL;
    check(rlt_op_from_expr(text, shape, &op, &d2), op, &d2);
    free(text);
    return 0;
}
