/* leaks.h - assert_no_leaks(): in the sanitizer build (RLTUNE_SANITIZE),
 * fails the test if LeakSanitizer finds memory that nothing points to any
 * more; elsewhere it does nothing. A test calls it where it says so, after
 * freeing what it made: a leak found only when the Criterion worker exits
 * would not fail the test. Header-only, like fixtures.h. Shared by
 * tests/unit/test_db.c, test_cost_model.c and test_fuzz_corpus.c. */
#ifndef RLT_TESTS_LEAKS_H
#define RLT_TESTS_LEAKS_H

#include <criterion/criterion.h>

#if defined(__SANITIZE_ADDRESS__)
#define RLT_TESTS_HAS_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RLT_TESTS_HAS_LSAN 1
#endif
#endif
#ifdef RLT_TESTS_HAS_LSAN
#include <sanitizer/lsan_interface.h>
#endif

static inline void assert_no_leaks(void)
{
#ifdef RLT_TESTS_HAS_LSAN
    cr_assert_eq(__lsan_do_recoverable_leak_check(), 0, "memory leaked (LeakSanitizer's report is above)");
#endif
}

#endif /* RLT_TESTS_LEAKS_H */
