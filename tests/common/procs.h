/* procs.h - looking at processes from a test: how many processes mention
 * a string on their command line (compilers or measuring children left
 * behind), whether a process has a SIGINT handler yet; and time: a
 * monotonic clock, sleeping. Header-only, like fixtures.h. Shared by
 * tests/unit/test_build.c, test_run.c, test_db.c and
 * tests/cli/test_cli_tune.c, test_cli_train.c, test_cli_experiment.c. */
#ifndef RLT_TESTS_PROCS_H
#define RLT_TESTS_PROCS_H

#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdbool.h>
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

/* Whether process `pid` (a child not yet waited for) has a handler for
 * SIGINT: the SigCgt mask in /proc/PID/status, which must be readable. */
static inline bool process_catches_sigint(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot read %s", path);
    unsigned long long mask = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "SigCgt: %llx", &mask) == 1) break;
    fclose(f);
    return mask & (1ull << (SIGINT - 1));
}

/* Seconds on the monotonic clock. */
static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Sleeps `ms` milliseconds (less if a signal comes). */
static inline void sleep_ms(long ms)
{
    nanosleep(&(struct timespec){.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000}, NULL);
}

#endif /* RLT_TESTS_PROCS_H */
