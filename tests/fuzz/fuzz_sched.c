/*
 * fuzz_sched.c - libFuzzer target for schedule text: the input is parsed
 * (rlt_sched_parse) and, when it parses, printed, re-parsed and replayed
 * (rlt_sched_apply) on a small conv2d and a small matmul; every nest a
 * schedule is accepted for is checked, printed and lowered to C. Nothing may
 * crash, leak or read out of bounds; every failure must carry its status and
 * a message; printing must be a fixed point of parsing; an accepted nest
 * must pass rlt_nest_check and lower (a primitive that lets through a nest
 * codegen refuses is a bug).
 *
 * Built with clang by the CMake option RLTUNE_FUZZ and run by
 * scripts/fuzz.sh (part of scripts/test.sh: FUZZ_SECONDS each, 20 by
 * default, inputs up to 400 bytes) over a scratch copy of its corpus,
 * tests/fuzz/corpus/sched/, which tests/unit/test_sched_corpus.c also
 * replays in every test run. To fuzz it longer, from the repository root:
 *
 *   FUZZ_SECONDS=600 scripts/fuzz.sh sched
 *
 * The build's -fno-sanitize-recover=all makes undefined behaviour a crash
 * the fuzzer reports (without it UBSan prints and carries on). The corpus
 * holds every step name; a -dict= of step names, loop names and boundary
 * numbers (9223372036854775807, 2147483648, 4096, 257, ...) helps it reach
 * the arithmetic limits faster.
 */
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "sched/sched.h"

static void fail_if(int cond)
{
    if (cond) abort();
}

/* Replays an accepted schedule on op; checks what comes out. */
static void replay(const rlt_sched *s, const rlt_op *op)
{
    rlt_diag d = {0};
    rlt_nest n;
    rlt_status st = rlt_sched_apply(s, op, &n, &d);
    if (st != RLT_STATUS_OK) {
        fail_if(d.status != st || d.message[0] == '\0');
        /* Only bad input, never a bug or a resource problem. */
        fail_if(st != RLT_STATUS_ILLEGAL_SCHEDULE && st != RLT_STATUS_PARSE_ERROR);
        return;
    }
    fail_if(rlt_nest_check(&n, NULL) != RLT_STATUS_OK);
    rlt_str tree;
    rlt_str_init(&tree);
    rlt_nest_print(&n, &tree);
    fail_if(tree.has_failed || !tree.data);
    rlt_str_free(&tree);
    (void)rlt_nest_hash(&n);
    rlt_kernel_src k;
    fail_if(rlt_codegen_kernel(&n, &k, &d) != RLT_STATUS_OK);
    fail_if(!k.code || strstr(k.code, k.symbol) == NULL);
    rlt_kernel_src_free(&k);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    static rlt_op *conv, *matmul;
    if (!conv) {
        fail_if(rlt_op_parse("conv2d:N=1,C=2,H=5,W=5,K=3,R=3,S=3,stride=1,pad=1", &conv, NULL) != RLT_STATUS_OK);
        fail_if(rlt_op_parse("matmul:M=13,N=17,K=9", &matmul, NULL) != RLT_STATUS_OK);
    }
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';

    rlt_diag d = {0};
    rlt_sched *s = NULL;
    rlt_status st = rlt_sched_parse(text, "fuzz", &s, &d);
    free(text);
    if (st != RLT_STATUS_OK) {
        fail_if(s != NULL || d.status != st || d.message[0] == '\0');
        fail_if(st != RLT_STATUS_PARSE_ERROR);
        return 0;
    }
    fail_if(s == NULL);

    /* Printing is canonical: print(parse(print(s))) == print(s). */
    rlt_str printed, again_printed;
    rlt_str_init(&printed);
    rlt_str_init(&again_printed);
    rlt_sched_print(s, &printed);
    rlt_sched *again = NULL;
    fail_if(rlt_sched_parse(printed.data, "printed", &again, NULL) != RLT_STATUS_OK);
    fail_if(again->n_steps != s->n_steps);
    rlt_sched_print(again, &again_printed);
    fail_if(strcmp(printed.data, again_printed.data) != 0);
    rlt_str_free(&printed);
    rlt_str_free(&again_printed);
    rlt_sched_destroy(again);

    replay(s, conv);
    replay(s, matmul);
    rlt_sched_destroy(s);
    return 0;
}
