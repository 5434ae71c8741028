/* procs.h - looking at processes from a test: how many processes mention
 * a string on their command line (compilers or measuring children left
 * behind), and a monotonic clock. Header-only, like fixtures.h. Shared by
 * tests/unit/test_build.c and tests/cli/test_cli_tune.c. */
#ifndef RLT_TESTS_PROCS_H
#define RLT_TESTS_PROCS_H

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Number of processes whose command line contains `needle`. */
static inline int count_processes_with(const char *needle)
{
    int n = 0;
    DIR *d = opendir("/proc");
    cr_assert_not_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char path[300], buf[8192];
        snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        for (size_t i = 0; i < len; i++)
            if (buf[i] == '\0') buf[i] = ' ';
        buf[len] = '\0';
        if (strstr(buf, needle)) n++;
    }
    closedir(d);
    return n;
}

/* Seconds on the monotonic clock. */
static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif /* RLT_TESTS_PROCS_H */
