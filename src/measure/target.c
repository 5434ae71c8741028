/*
 * target.c - what the machine we measure on offers: CPU model, usable cores,
 * vector width in floats, FMA, the last-level cache. Entry point:
 * rlt_target_detect.
 *
 * The vector width comes from the CPU's feature bits (cpuid through
 * __builtin_cpu_supports), not from /proc/cpuinfo's flags, so it says what
 * this process may execute even where the kernel hides flags.
 */
#include "measure/measure.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Copies the value of the first "model name" line of /proc/cpuinfo; leaves
 * `out` empty when there is none (some ARM kernels print no model name). */
static void read_cpu_model(char *out, size_t cap)
{
    out[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        const char *colon = strchr(line, ':');
        if (!colon) continue;
        const char *v = colon + 1;
        while (*v == ' ' || *v == '\t') v++;
        size_t n = strcspn(v, "\n");
        while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t')) n--;
        if (n >= cap) n = cap - 1;
        memcpy(out, v, n);
        out[n] = '\0';
        break;
    }
    fclose(f);
}

/* The largest data or unified cache CPU 0 sees, in bytes, from sysfs
 * ("32768K", "1M"): a virtual machine's own view, which sysconf's
 * _SC_LEVEL3_CACHE_SIZE may not be (it read 320 MiB for a 32 MiB L3 here).
 * 0 when sysfs says nothing. */
static int64_t read_llc_bytes(void)
{
    int64_t best = 0;
    for (int i = 0; i < 16; i++) {
        char path[96], type[32] = "", size[32] = "";
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        FILE *f = fopen(path, "r");
        if (!f) break;
        bool is_read = fgets(type, sizeof type, f) != NULL;
        fclose(f);
        if (!is_read || strncmp(type, "Instruction", 11) == 0) continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (!(f = fopen(path, "r"))) continue;
        is_read = fgets(size, sizeof size, f) != NULL;
        fclose(f);
        char *end = NULL;
        long long v = is_read ? strtoll(size, &end, 10) : 0;
        if (v <= 0 || !end) continue;
        int64_t bytes = *end == 'K' ? (int64_t)v << 10 : *end == 'M' ? (int64_t)v << 20 : *end == 'G' ? (int64_t)v << 30 : v;
        if (bytes > best) best = bytes;
    }
    return best;
}

void rlt_target_detect(rlt_target *t)
{
    *t = (rlt_target){0};
    read_cpu_model(t->cpu_model, sizeof t->cpu_model);
    if (!t->cpu_model[0]) snprintf(t->cpu_model, sizeof t->cpu_model, "unknown CPU");
    t->llc_bytes = read_llc_bytes();

    /* The cores this process may run on (taskset, cgroups), which is what a
     * parallel kernel gets; the online count only when affinity is unknown. */
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) t->n_cores = CPU_COUNT(&set);
    if (t->n_cores <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        t->n_cores = n > 0 ? (int)n : 1;
    }

#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        t->vector_floats = 16;
    else if (__builtin_cpu_supports("avx2") || __builtin_cpu_supports("avx"))
        t->vector_floats = 8;
    else
        t->vector_floats = 4;
    t->has_fma = __builtin_cpu_supports("fma") != 0;
#else
    /* 128-bit vectors (NEON, VSX); AArch64 always has fused multiply-add. */
    t->vector_floats = 4;
#if defined(__aarch64__)
    t->has_fma = true;
#endif
#endif
}
