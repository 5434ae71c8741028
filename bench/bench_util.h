/* bench_util.h - what the benchmark programs that tune (bench/tuning.c,
 * bench/looptune.c) share: cold compile caches in temporary directories, and
 * baselines run as separate programs that print one JSON object. Header-only,
 * like timing.h: each bench/ program is its own executable. */
#ifndef RLT_BENCH_UTIL_H
#define RLT_BENCH_UTIL_H

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A new empty directory under /tmp (owned: free it), or NULL with errno. */
static inline char *bench_temp_dir(void)
{
    char templ[] = "/tmp/rltune-bench-XXXXXX";
    char *d = mkdtemp(templ);
    return d ? strdup(d) : NULL;
}

/* Removes a directory made by bench_temp_dir and everything in it; false
 * when that failed. */
static inline bool bench_remove_dir(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0;
}

/* Runs a command, parses its stdout as one JSON object and returns the number
 * at `key`; 0 when the program is missing or fails (the tables say n/a). */
static inline double bench_run_json(const char *cmd, const char *key)
{
    FILE *p = popen(cmd, "r");
    if (!p) return 0;
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, p);
    buf[n] = '\0';
    if (pclose(p) != 0) return 0;
    cJSON *j = cJSON_Parse(buf);
    const cJSON *x = j ? cJSON_GetObjectItemCaseSensitive(j, key) : NULL;
    double v = cJSON_IsNumber(x) ? x->valuedouble : 0;
    cJSON_Delete(j);
    return v;
}

#endif /* RLT_BENCH_UTIL_H */
