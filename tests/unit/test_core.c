/* Unit tests of src/core: status names, diagnostics, allocator fault hook,
 * arena, RNG reproducibility, strings, hashing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

Test(core, every_status_has_a_distinct_name)
{
    for (int i = 0; i < RLT_STATUS_COUNT; i++) {
        const char *name = rlt_status_str((rlt_status)i);
        cr_assert_str_neq(name, "UNKNOWN_STATUS", "status %d has no name", i);
        cr_assert_eq(rlt_status_from_str(name), (rlt_status)i);
        for (int j = 0; j < i; j++) cr_assert_str_neq(name, rlt_status_str((rlt_status)j));
    }
    cr_assert_str_eq(rlt_status_str(RLT_STATUS_COUNT), "UNKNOWN_STATUS");
    cr_assert_eq(rlt_status_from_str("NOPE"), RLT_STATUS_COUNT);
}

Test(core, first_failure_wins_and_prefix_adds_context)
{
    rlt_diag d = {0};
    cr_assert_eq(rlt_fail(&d, RLT_STATUS_PARSE_ERROR, "bad '%s'", "x"), RLT_STATUS_PARSE_ERROR);
    rlt_fail(&d, RLT_STATUS_IO_ERROR, "later");
    cr_assert_eq(d.status, RLT_STATUS_PARSE_ERROR);
    rlt_diag_prefix(&d, "line %d", 3);
    cr_assert_str_eq(d.message, "line 3: bad 'x'");
    cr_assert_eq(rlt_fail(NULL, RLT_STATUS_INTERNAL, "no diag"), RLT_STATUS_INTERNAL);
}

Test(core, alloc_hook_fails_the_nth_call_and_after)
{
    rlt_alloc_fail_after(2);
    void *a = rlt_malloc(8);
    void *b = rlt_malloc(8);
    void *c = rlt_malloc(8);
    rlt_alloc_fail_after(0);
    cr_assert_not_null(a);
    cr_assert_null(b);
    cr_assert_null(c);
    rlt_free(a);
    void *d = rlt_malloc(8);
    cr_assert_not_null(d);
    rlt_free(d);
}

Test(core, arena_hands_out_zeroed_aligned_memory)
{
    rlt_arena *arena = rlt_arena_create();
    cr_assert_not_null(arena);
    for (int i = 1; i < 2000; i += 37) {
        unsigned char *p = rlt_arena_alloc(arena, (size_t)i * 13);
        cr_assert_not_null(p);
        cr_assert_eq((uintptr_t)p % 16, 0);
        for (int k = 0; k < i * 13; k++) cr_assert_eq(p[k], 0);
        memset(p, 0xab, (size_t)i * 13);
    }
    cr_assert_str_eq(rlt_arena_strdup(arena, "hello"), "hello");
    rlt_arena_destroy(arena);
}

Test(core, rng_is_reproducible_and_roughly_uniform)
{
    rlt_rng a, b;
    rlt_rng_seed(&a, 42);
    rlt_rng_seed(&b, 42);
    for (int i = 0; i < 100; i++) cr_assert_eq(rlt_rng_u64(&a), rlt_rng_u64(&b));
    rlt_rng_seed(&b, 43);
    cr_assert_neq(rlt_rng_u64(&a), rlt_rng_u64(&b));
    int counts[10] = {0};
    for (int i = 0; i < 100000; i++) counts[rlt_rng_below(&a, 10)]++;
    for (int i = 0; i < 10; i++) cr_assert(counts[i] > 9500 && counts[i] < 10500, "bucket %d: %d", i, counts[i]);
    for (int i = 0; i < 1000; i++) {
        double u = rlt_rng_uniform(&a);
        cr_assert(u >= 0.0 && u < 1.0);
    }
}

Test(core, str_builds_text_and_reports_allocation_failure)
{
    rlt_str s;
    rlt_str_init(&s);
    rlt_str_append(&s, "a");
    rlt_str_printf(&s, "%d-%s", 12, "b");
    rlt_str_indent(&s, 2);
    char *t = rlt_str_take(&s);
    cr_assert_str_eq(t, "a12-b    ");
    rlt_free(t);

    rlt_str_init(&s);
    rlt_alloc_fail_after(1);
    rlt_str_append(&s, "x");
    rlt_alloc_fail_after(0);
    rlt_str_append(&s, "y");
    cr_assert(s.has_failed);
    cr_assert_null(rlt_str_take(&s));
}

Test(core, hash_is_stable)
{
    /* FNV-1a 64 of "a" is a published value: a change would invalidate caches. */
    cr_assert_eq(rlt_hash_str(RLT_HASH_SEED, "a"), 0xaf63dc4c8601ec8cull);
    cr_assert_neq(rlt_hash_str(RLT_HASH_SEED, "ab"), rlt_hash_str(RLT_HASH_SEED, "ba"));
}

Test(core, parse_i64_accepts_only_whole_integers)
{
    int64_t v;
    cr_assert(rlt_parse_i64("123", &v) && v == 123);
    cr_assert(rlt_parse_i64("-7", &v) && v == -7);
    cr_assert_not(rlt_parse_i64("", &v));
    cr_assert_not(rlt_parse_i64("12x", &v));
    cr_assert_not(rlt_parse_i64(" 1", &v));
    cr_assert_not(rlt_parse_i64("99999999999999999999", &v));
}

Test(core, file_write_is_atomic_and_read_back)
{
    char dir[] = "/tmp/rlt_core_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/sub/dir/f.txt", dir);
    char sub[256];
    snprintf(sub, sizeof sub, "%s/sub/dir", dir);
    rlt_diag d = {0};
    cr_assert_eq(rlt_mkdir_p(sub, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_file_write(path, "hello\n", 6, &d), RLT_STATUS_OK, "%s", d.message);
    char *text = NULL;
    size_t len = 0;
    cr_assert_eq(rlt_file_read(path, &text, &len, &d), RLT_STATUS_OK);
    cr_assert_eq(len, 6);
    cr_assert_str_eq(text, "hello\n");
    rlt_free(text);
    cr_assert_eq(rlt_file_read("/nonexistent/x", &text, &len, &d), RLT_STATUS_IO_ERROR);
    cr_assert(strstr(d.message, "/nonexistent/x") != NULL);
    /* An endless device is refused, not read until memory runs out. */
    rlt_diag d2 = {0};
    cr_assert_eq(rlt_file_read("/dev/zero", &text, &len, &d2), RLT_STATUS_IO_ERROR);
    cr_assert(strstr(d2.message, "larger than") != NULL, "%s", d2.message);
}
