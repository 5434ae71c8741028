/* text.h - looking into text a test got (a command's output, a file, a
 * generated SVG): how often a string stands in it. Header-only, like
 * fixtures.h. Shared by tests/unit/test_report.c and
 * tests/cli/test_cli_env.c, test_cli_experiment.c. */
#ifndef RLT_TESTS_TEXT_H
#define RLT_TESTS_TEXT_H

#include <string.h>

/* How many times `needle` (not empty) stands in `text`, overlaps counted:
 * text_count(s, "\n") is s's number of newlines. */
static inline int text_count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

#endif /* RLT_TESTS_TEXT_H */
