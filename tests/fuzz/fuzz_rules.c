/*
 * fuzz_rules.c - libFuzzer target for the rule language (rlt_ruleset_parse,
 * src/gopt/rules.c): the input is parsed as a rule file; a parsed set whose
 * checks name only small tensors (at most 4096 elements in all, 64 a
 * dimension) is also verified, which builds, infers, matches, rewrites and
 * evaluates graphs from the fuzzed rules (src/gopt/verify.c, match.c).
 * Nothing may crash, leak, hang or read out of bounds; a refusal is a
 * status with a message and hands out no set.
 *
 * Built with clang by the CMake option RLTUNE_FUZZ and run by
 * scripts/fuzz.sh (part of scripts/test.sh: FUZZ_SECONDS each, 20 by
 * default) over a scratch copy of its corpus, tests/fuzz/corpus/rules/
 * (each shipped rule alone, and broken ones), which
 * tests/unit/test_fuzz_corpus.c also replays in every test run: files
 * named ok_* must parse and verify, bad_* must be refused, any other name
 * may go either way. To fuzz it longer, from the repository root:
 *
 *   FUZZ_SECONDS=600 scripts/fuzz.sh rules
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gopt/gopt.h"

/* Whether every check of every rule is small enough to verify quickly. */
static bool is_small(const rlt_ruleset *rs)
{
    for (int i = 0; i < rs->n_rules; i++) {
        const rlt_rule *r = rs->rules[i];
        int64_t total = 0;
        for (int c = 0; c < r->n_checks; c++)
            for (int k = 0; k < r->checks[c].n_values; k++) {
                const rlt_rcheck_value *v = &r->checks[c].values[k];
                int64_t n = 1;
                for (int d = 0; d < v->rank; d++) {
                    if (v->dims[d] > 64) return false;
                    n *= v->dims[d];
                }
                total += n;
            }
        if (total > 4096 || r->n_src + r->n_dst > 12) return false;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    rlt_ruleset *rs = NULL;
    rlt_diag d = {0};
    rlt_status st = rlt_ruleset_parse(text, "fuzz.rules", &rs, &d);
    if (st != RLT_STATUS_OK) {
        if (rs || d.status != st || !d.message[0]) abort();
    } else {
        if (!rs) abort();
        if (is_small(rs)) {
            rlt_diag v = {0};
            st = rlt_ruleset_verify(rs, 1, &v);
            if (st != RLT_STATUS_OK && (v.status != st || !v.message[0])) abort();
        }
        rlt_ruleset_destroy(rs);
    }
    free(text);
    return 0;
}
