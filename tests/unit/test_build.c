/* Unit tests of the builder (src/measure/builder.c): a batch compiles with
 * two compilers at once and loads; a bad kernel fails alone, with the
 * compiler's message, while its unit neighbours build; the cache answers a
 * second build, per kernel, whatever the grouping; a hanging compiler is
 * killed at its timeout with nothing left behind; clang works; OpenMP kernels
 * get their own units. Kernels are hand-written C with the ABI of codegen.h. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/kernels.h"
#include "../common/procs.h"
#include "../common/tmp.h"
#include "measure/measure.h"

/* ---- helpers ------------------------------------------------------------ */

/* A trivial good kernel; `c` makes each one distinct. */
static rlt_kernel_src good_kernel(int c)
{
    char tmpl[512];
    snprintf(tmpl, sizeof tmpl,
             "size_t @_workspace_bytes(void) { return 0; }\n"
             "void @(float *const *t, void *ws, int n_threads)\n"
             "{ (void)ws; (void)n_threads; t[1][0] = t[0][0] + %d.0f; }\n",
             c);
    return kernel_from_template(tmpl, false);
}

static char *make_temp_dir(void) { return tmp_dir_make("/tmp/rlt_build_XXXXXX"); }

static bool on_path(const char *prog)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", prog);
    return system(cmd) == 0;
}

static void free_kernels(rlt_kernel_src *k, int n)
{
    for (int i = 0; i < n; i++) rlt_kernel_src_free(&k[i]);
}

/* ---- tests -------------------------------------------------------------- */

Test(build, batch_compiles_two_at_a_time_and_loads)
{
    char *dir = make_temp_dir();
    char cache[PATH_MAX], probe[PATH_MAX], script[4 * PATH_MAX];
    snprintf(cache, sizeof cache, "%s/cache", dir);
    snprintf(probe, sizeof probe, "%s/cc-probe", dir);
    /* A compiler wrapper that records how many of it run at once. */
    snprintf(script, sizeof script,
             "#!/bin/sh\n"
             "mkdir -p %s/running\n"
             "touch %s/running/$$\n"
             "ls %s/running | wc -l >> %s/counts\n"
             "sleep 0.3\n"
             "rm -f %s/running/$$\n"
             "exec gcc \"$@\"\n",
             dir, dir, dir, dir, dir);
    tmp_script_write(probe, script);

    enum { N = 10 };
    rlt_kernel_src k[N];
    rlt_build_result r[N];
    for (int i = 0; i < N; i++) k[i] = good_kernel(i);
    rlt_build_opts opts = {.cc = probe, .cache_dir = cache, .n_parallel = 2, .max_per_unit = 4};
    rlt_diag d = {0};
    cr_assert_eq(rlt_build_batch(&opts, N, k, r, &d), RLT_STATUS_OK, "%s", d.message);

    int n_distinct = 0;
    for (int i = 0; i < N; i++) {
        cr_assert_eq(r[i].status, RLT_STATUS_OK, "kernel %d: %s", i, r[i].log);
        cr_assert_not(r[i].was_cached);
        cr_assert_str_eq(r[i].symbol, k[i].symbol);
        cr_assert(r[i].build_s > 0);
        bool is_new = true;
        for (int j = 0; j < i; j++) is_new = is_new && strcmp(r[j].so_path, r[i].so_path) != 0;
        n_distinct += is_new;
        /* Loading is safe here: the objects have no constructors; nothing is called. */
        void *lib = dlopen(r[i].so_path, RTLD_NOW | RTLD_LOCAL);
        cr_assert_not_null(lib, "%s", dlerror());
        char ws[1024];
        snprintf(ws, sizeof ws, "%s_workspace_bytes", k[i].symbol);
        cr_assert_not_null(dlsym(lib, k[i].symbol));
        cr_assert_not_null(dlsym(lib, ws));
        dlclose(lib);
    }
    cr_assert_eq(n_distinct, 3, "10 kernels, 4 a unit: 3 shared objects, got %d", n_distinct);

    char counts_path[PATH_MAX];
    snprintf(counts_path, sizeof counts_path, "%s/counts", dir);
    FILE *f = fopen(counts_path, "r");
    cr_assert_not_null(f);
    int count, max_count = 0, n_runs = 0;
    while (fscanf(f, "%d", &count) == 1) {
        max_count = count > max_count ? count : max_count;
        n_runs++;
    }
    fclose(f);
    cr_assert_eq(n_runs, 3);
    cr_assert_eq(max_count, 2, "two compilers at once, never more (saw %d)", max_count);

    /* The units' sources are kept in the cache for debugging. */
    char src[PATH_MAX];
    snprintf(src, sizeof src, "%.*s.c", (int)(strlen(r[0].so_path) - 3), r[0].so_path);
    cr_assert_eq(access(src, R_OK), 0, "%s", src);

    free_kernels(k, N);
    tmp_remove_tree(dir);
    free(dir);
}

Test(build, bad_kernel_fails_alone_with_the_compiler_message)
{
    char *dir = make_temp_dir();
    rlt_kernel_src k[3] = {
        good_kernel(1),
        kernel_from_template("size_t @_workspace_bytes(void) { return 0; }\n"
                             "void @(float *const *t, void *ws, int n_threads)\n"
                             "{ (void)ws; (void)n_threads; t[1][0] = undeclared_thing_xyz; }\n",
                             false),
        good_kernel(2),
    };
    rlt_build_result r[3];
    rlt_build_opts opts = {.cache_dir = dir};
    rlt_diag d = {0};
    cr_assert_eq(rlt_build_batch(&opts, 3, k, r, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(r[0].status, RLT_STATUS_OK, "%s", r[0].log);
    cr_assert_eq(r[2].status, RLT_STATUS_OK, "%s", r[2].log);
    cr_assert_eq(r[1].status, RLT_STATUS_BUILD_ERROR);
    cr_assert(strstr(r[1].log, "undeclared_thing_xyz") != NULL, "log: %s", r[1].log);
    cr_assert(strstr(r[1].log, "error") != NULL, "log: %s", r[1].log);
    cr_assert_eq(r[1].so_path[0], '\0');
    free_kernels(k, 3);
    tmp_remove_tree(dir);
    free(dir);
}

Test(build, long_compiler_output_is_cut_to_fit)
{
    char *dir = make_temp_dir();
    /* Hundreds of errors: the log keeps the first ones and says where the source is. */
    rlt_str s;
    rlt_str_init(&s);
    rlt_str_append(&s, "size_t @_workspace_bytes(void) { return 0; }\nvoid @(float *const *t, void *ws, int n)\n{\n");
    for (int i = 0; i < 300; i++) rlt_str_printf(&s, "  t[1][%d] = missing_%d;\n", i, i);
    rlt_str_append(&s, "}\n");
    rlt_kernel_src k = kernel_from_template(s.data, false);
    rlt_str_free(&s);
    rlt_build_result r;
    rlt_build_opts opts = {.cache_dir = dir};
    cr_assert_eq(rlt_build_batch(&opts, 1, &k, &r, NULL), RLT_STATUS_OK);
    cr_assert_eq(r.status, RLT_STATUS_BUILD_ERROR);
    cr_assert(strstr(r.log, "missing_0") != NULL, "%s", r.log);
    cr_assert(strstr(r.log, "more bytes; full source: ") != NULL, "%s", r.log);
    cr_assert(strlen(r.log) < sizeof r.log);
    rlt_kernel_src_free(&k);
    tmp_remove_tree(dir);
    free(dir);
}

Test(build, second_build_is_answered_by_the_cache)
{
    char *dir = make_temp_dir();
    enum { N = 5 };
    rlt_kernel_src k[N];
    for (int i = 0; i < N; i++) k[i] = good_kernel(100 + i);
    rlt_build_result r1[N], r2[N], r3[2];
    rlt_build_opts opts = {.cache_dir = dir};
    rlt_diag d = {0};
    cr_assert_eq(rlt_build_batch(&opts, 4, k, r1, &d), RLT_STATUS_OK, "%s", d.message);
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(r1[i].status, RLT_STATUS_OK, "%s", r1[i].log);
        cr_assert_not(r1[i].was_cached);
    }

    double t0 = now_s();
    cr_assert_eq(rlt_build_batch(&opts, 4, k, r2, &d), RLT_STATUS_OK, "%s", d.message);
    double elapsed = now_s() - t0;
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(r2[i].status, RLT_STATUS_OK);
        cr_assert(r2[i].was_cached);
        cr_assert_eq(r2[i].build_s, 0.0);
        cr_assert_str_eq(r2[i].so_path, r1[i].so_path);
    }
    cr_assert(elapsed < 0.5, "a cached build took %.3f s", elapsed);

    /* A kernel compiled in an earlier unit is found in a new grouping. */
    rlt_kernel_src mixed[2] = {k[2], k[4]};
    cr_assert_eq(rlt_build_batch(&opts, 2, mixed, r3, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert(r3[0].was_cached);
    cr_assert_str_eq(r3[0].so_path, r1[2].so_path);
    cr_assert_eq(r3[1].status, RLT_STATUS_OK, "%s", r3[1].log);
    cr_assert_not(r3[1].was_cached);

    /* Other flags are another cache entry. */
    rlt_build_opts o2 = {.cache_dir = dir, .cflags = "-O1"};
    cr_assert_eq(rlt_build_batch(&o2, 1, k, r3, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(r3[0].status, RLT_STATUS_OK, "%s", r3[0].log);
    cr_assert_not(r3[0].was_cached);

    free_kernels(k, N);
    tmp_remove_tree(dir);
    free(dir);
}

Test(build, duplicates_in_a_batch_compile_once)
{
    char *dir = make_temp_dir();
    rlt_kernel_src a = good_kernel(7), b = good_kernel(8);
    rlt_kernel_src k[3] = {a, b, a};
    rlt_build_result r[3];
    rlt_build_opts opts = {.cache_dir = dir};
    cr_assert_eq(rlt_build_batch(&opts, 3, k, r, NULL), RLT_STATUS_OK);
    for (int i = 0; i < 3; i++) cr_assert_eq(r[i].status, RLT_STATUS_OK, "%s", r[i].log);
    cr_assert_str_eq(r[0].so_path, r[2].so_path);
    cr_assert_not(r[0].was_cached);
    cr_assert(r[2].was_cached);
    rlt_kernel_src_free(&a);
    rlt_kernel_src_free(&b);
    tmp_remove_tree(dir);
    free(dir);
}

Test(build, hanging_compiler_times_out_and_leaves_nothing_behind)
{
    char *dir = make_temp_dir();
    char cc[PATH_MAX];
    snprintf(cc, sizeof cc, "%s/hang-cc", dir);
    /* The sleep is a grandchild of the builder: killing only the script
     * would leave it running. */
    tmp_script_write(cc, "#!/bin/sh\nsleep 31.4159\n");
    rlt_kernel_src k = good_kernel(1);
    rlt_build_result r;
    rlt_build_opts opts = {.cc = cc, .cache_dir = dir, .timeout_s = 1.0};
    double t0 = now_s();
    cr_assert_eq(rlt_build_batch(&opts, 1, &k, &r, NULL), RLT_STATUS_OK);
    double elapsed = now_s() - t0;
    cr_assert_eq(r.status, RLT_STATUS_BUILD_TIMEOUT, "%s: %s", rlt_status_str(r.status), r.log);
    cr_assert(elapsed >= 1.0 && elapsed < 1.5, "took %.2f s for a 1 s timeout", elapsed);
    cr_assert(strstr(r.log, "timeout") != NULL, "%s", r.log);
    int n_left = 1;
    for (int tries = 0; tries < 100 && n_left > 0; tries++) {
        n_left = count_processes_with("sleep 31.4159");
        if (n_left > 0) usleep(10000);
    }
    cr_assert_eq(n_left, 0, "the compiler's children outlived the timeout");
    rlt_kernel_src_free(&k);
    tmp_remove_tree(dir);
    free(dir);
}

Test(build, a_missing_compiler_is_reported)
{
    char *dir = make_temp_dir();
    rlt_kernel_src k = good_kernel(1);
    rlt_build_result r;
    rlt_build_opts opts = {.cc = "no-such-compiler-rlt", .cache_dir = dir};
    rlt_diag d = {0};
    cr_assert_eq(rlt_build_batch(&opts, 1, &k, &r, &d), RLT_STATUS_IO_ERROR);
    cr_assert(strstr(d.message, "no-such-compiler-rlt") != NULL, "%s", d.message);
    cr_assert_eq(r.status, RLT_STATUS_BUILD_ERROR);
    cr_assert(strstr(r.log, "no-such-compiler-rlt") != NULL, "%s", r.log);
    rlt_kernel_src_free(&k);
    tmp_remove_tree(dir);
    free(dir);
}

Test(build, clang_can_be_the_compiler)
{
    if (!on_path("clang")) cr_skip_test("clang is not installed");
    char *dir = make_temp_dir();
    rlt_kernel_src k = good_kernel(3);
    rlt_build_result r;
    rlt_build_opts opts = {.cc = "clang", .cache_dir = dir};
    rlt_diag d = {0};
    cr_assert_eq(rlt_build_batch(&opts, 1, &k, &r, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(r.status, RLT_STATUS_OK, "%s", r.log);
    void *lib = dlopen(r.so_path, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(lib, "%s", dlerror());
    cr_assert_not_null(dlsym(lib, k.symbol));
    dlclose(lib);
    rlt_kernel_src_free(&k);
    tmp_remove_tree(dir);
    free(dir);
}

Test(build, openmp_kernels_get_their_own_units)
{
    char *dir = make_temp_dir();
    rlt_kernel_src k[2] = {
        good_kernel(1),
        kernel_from_template("size_t @_workspace_bytes(void) { return 0; }\n"
                             "void @(float *const *t, void *ws, int n_threads)\n"
                             "{\n  (void)ws;\n#pragma omp parallel for num_threads(n_threads)\n"
                             "  for (int i = 0; i < 4; i++) t[1][i] = t[0][i];\n}\n",
                             true),
    };
    rlt_build_result r[2];
    rlt_build_opts opts = {.cache_dir = dir};
    cr_assert_eq(rlt_build_batch(&opts, 2, k, r, NULL), RLT_STATUS_OK);
    cr_assert_eq(r[0].status, RLT_STATUS_OK, "%s", r[0].log);
    cr_assert_eq(r[1].status, RLT_STATUS_OK, "%s", r[1].log);
    cr_assert_str_neq(r[0].so_path, r[1].so_path);
    /* The OpenMP unit was compiled with -fopenmp: its source is in the cache
     * and the object needs libgomp. */
    /* RTLD_NODELETE: libgomp keeps a few bytes of its own per process;
     * unloaded, LeakSanitizer would report them as leaked by us. */
    void *lib = dlopen(r[1].so_path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    cr_assert_not_null(lib, "%s", dlerror());
    dlclose(lib);
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "grep -q GOMP_parallel %s", r[1].so_path);
    cr_assert_eq(system(cmd), 0, "no OpenMP calls in %s", r[1].so_path);
    free_kernels(k, 2);
    tmp_remove_tree(dir);
    free(dir);
}

Test(build, malformed_kernels_and_options_are_refused)
{
    char *dir = make_temp_dir();
    rlt_kernel_src k = good_kernel(1);
    snprintf(k.symbol, sizeof k.symbol, "not a symbol");
    rlt_build_result r;
    rlt_build_opts opts = {.cache_dir = dir};
    cr_assert_eq(rlt_build_batch(&opts, 1, &k, &r, NULL), RLT_STATUS_OK);
    cr_assert_eq(r.status, RLT_STATUS_BUILD_ERROR);
    cr_assert(strstr(r.log, "not a symbol") != NULL, "%s", r.log);

    rlt_build_opts bad = {.cache_dir = dir, .n_parallel = -1};
    rlt_diag d = {0};
    cr_assert_eq(rlt_build_batch(&bad, 1, &k, &r, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "n_parallel") != NULL, "%s", d.message);
    cr_assert_eq(r.status, RLT_STATUS_BUILD_ERROR);
    rlt_kernel_src_free(&k);

    cr_assert_eq(rlt_build_batch(&opts, 0, NULL, NULL, NULL), RLT_STATUS_OK);
    tmp_remove_tree(dir);
    free(dir);
}

Test(build, describe_prints_the_whole_command)
{
    rlt_str s;
    rlt_str_init(&s);
    rlt_build_describe(&(rlt_build_opts){.cc = "gcc", .cflags = "-O2  -g"}, true, &s);
    cr_assert_str_eq(s.data, "gcc -O2 -g -std=gnu11 -fPIC -shared -fopenmp");
    rlt_str_clear(&s);
    rlt_build_describe(&(rlt_build_opts){.cc = "clang"}, false, &s);
    cr_assert(strncmp(s.data, "clang " RLT_DEFAULT_CFLAGS, strlen("clang " RLT_DEFAULT_CFLAGS)) == 0, "%s", s.data);
    cr_assert(strstr(s.data, "-shared") && strstr(s.data, "-fPIC") && !strstr(s.data, "-fopenmp"), "%s", s.data);
    rlt_str_free(&s);
}

Test(build, target_is_detected)
{
    rlt_target t;
    rlt_target_detect(&t);
    cr_assert(t.cpu_model[0] != '\0');
    cr_assert(t.n_cores >= 1);
    cr_assert(t.vector_floats == 4 || t.vector_floats == 8 || t.vector_floats == 16);
#if defined(__x86_64__)
    cr_assert_eq(t.vector_floats == 16, __builtin_cpu_supports("avx512f") != 0);
#endif
}
