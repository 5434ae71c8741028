/* kernels.h - hand-written kernels for the builder and runner tests: a
 * kernel (the ABI of codegen.h) from a C template in which '@' stands for
 * its symbol, derived from the template as codegen derives it from the
 * code, so equal templates share a symbol and different ones do not.
 * Header-only, like fixtures.h. Shared by tests/unit/test_build.c and
 * test_run.c. */
#ifndef RLT_TESTS_KERNELS_H
#define RLT_TESTS_KERNELS_H

#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>

#include "measure/measure.h"

/* The kernel of template `tmpl`; its code is owned by the caller (free with
 * rlt_kernel_src_free). */
static inline rlt_kernel_src kernel_from_template(const char *tmpl, bool needs_openmp)
{
    rlt_kernel_src k = {0};
    snprintf(k.symbol, sizeof k.symbol, "rlt_t_%016" PRIx64, rlt_hash_str(RLT_HASH_SEED, tmpl));
    rlt_str s;
    rlt_str_init(&s);
    for (const char *p = tmpl; *p; p++) {
        if (*p == '@')
            rlt_str_append(&s, k.symbol);
        else
            rlt_str_appendn(&s, p, 1);
    }
    k.code = rlt_str_take(&s);
    cr_assert_not_null(k.code);
    k.needs_openmp = needs_openmp;
    return k;
}

#endif /* RLT_TESTS_KERNELS_H */
