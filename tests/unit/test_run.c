/* Unit tests of the runner and workloads (src/measure/runner.c, measure.c):
 * a correct matmul is timed; every kind of bad kernel (crash, trap, endless
 * loop, writes to its input, off-by-one, unwritten element, state carried
 * between calls, writes past its output, missing symbols) gets its status
 * and a message that says what happened, and the caller carries on; a build
 * failure passes through; hundreds of runs leak no process or descriptor;
 * rlt_measure_nests measures generated kernels, among them strided vector
 * loads of stride-2 and stride-4 convolutions. Other kernels are hand-written C
 * with the ABI of codegen.h, for matmul:M=16,N=16,K=16 (A 16x16, B 16x16,
 * C 16x16, row-major). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/fixtures.h"
#include "../common/kernels.h"
#include "../common/procs.h"
#include "../common/tmp.h"
#include "codegen/codegen.h"
#include "measure/measure.h"

/* ---- fixture: the op, a workload, a private compile cache --------------- */

static char cache_dir[] = "/tmp/rlt_run_XXXXXX";
static rlt_op *op;
static rlt_workload *workload;

static void setup(void)
{
    tmp_dir_make_in(cache_dir);
    rlt_diag d = {0};
    cr_assert_eq(rlt_op_parse("matmul:M=16,N=16,K=16", &op, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_build_opts bopts = {.cache_dir = cache_dir};
    cr_assert_eq(rlt_workload_create(op, &bopts, 42, &workload, &d), RLT_STATUS_OK, "%s", d.message);
}

static void teardown(void)
{
    rlt_workload_destroy(workload);
    rlt_op_destroy(op);
    tmp_remove_tree(cache_dir);
}

TestSuite(run, .init = setup, .fini = teardown);

/* Fast runs: the tests are about outcomes, not precise times. */
static const rlt_run_opts quick = {.repeat = 3, .min_repeat_ms = 1.0, .timeout_s = 5.0};

/* ---- kernels ------------------------------------------------------------ */

/* A matmul kernel; the snippets change one thing about it. '@' stands for
 * the symbol, derived from the text as codegen derives it from the code. */
#define MATMUL(BEFORE, K_END, AFTER)                                                   \
    "size_t @_workspace_bytes(void) { return 0; }\n"                                   \
    "void @(float *const *t, void *ws, int n_threads)\n"                               \
    "{\n"                                                                              \
    "  (void)ws; (void)n_threads;\n"                                                   \
    "  const float *A = t[0], *B = t[1]; float *C = t[2];\n"                           \
    "  " BEFORE "\n"                                                                   \
    "  for (int i = 0; i < 16; i++)\n"                                                 \
    "    for (int j = 0; j < 16; j++) {\n"                                             \
    "      float acc = 0.0f;\n"                                                        \
    "      for (int k = 0; k < " K_END "; k++) acc += A[i * 16 + k] * B[k * 16 + j];\n" \
    "      C[i * 16 + j] = acc;\n"                                                     \
    "    }\n"                                                                          \
    "  " AFTER "\n"                                                                    \
    "}\n"

static const char *const good_matmul = MATMUL("", "16", "");

/* Templates starting with "//omp" need OpenMP. */
static rlt_kernel_src make_kernel(const char *tmpl)
{
    return kernel_from_template(tmpl, strncmp(tmpl, "//omp\n", 6) == 0);
}

/* Builds the templates in one batch; every one must compile. */
static void build_all(int n, const char *const *tmpls, rlt_build_result *builds)
{
    rlt_kernel_src k[16];
    cr_assert(n <= 16);
    for (int i = 0; i < n; i++) k[i] = make_kernel(tmpls[i]);
    rlt_build_opts bopts = {.cache_dir = cache_dir};
    rlt_diag d = {0};
    cr_assert_eq(rlt_build_batch(&bopts, n, k, builds, &d), RLT_STATUS_OK, "%s", d.message);
    for (int i = 0; i < n; i++) {
        cr_assert_eq(builds[i].status, RLT_STATUS_OK, "kernel %d: %s", i, builds[i].log);
        rlt_kernel_src_free(&k[i]);
    }
}

static rlt_run_result run_one(const rlt_build_result *b, const rlt_run_opts *opts)
{
    rlt_run_result r;
    rlt_run_kernel(workload, b, opts, &r);
    return r;
}

static void assert_message_has(const rlt_run_result *r, const char *needle)
{
    cr_assert(strstr(r->message, needle) != NULL, "expected '%s' in: %s", needle, r->message);
}

/* ---- tests -------------------------------------------------------------- */

Test(run, correct_matmul_is_timed)
{
    rlt_build_result b;
    build_all(1, &good_matmul, &b);
    rlt_run_result r = run_one(&b, &(rlt_run_opts){.repeat = 5, .min_repeat_ms = 5.0});
    cr_assert_eq(r.status, RLT_STATUS_OK, "%s: %s", rlt_status_str(r.status), r.message);
    cr_assert(r.is_correct);
    cr_assert(r.gflops > 0);
    cr_assert(r.time_min_ms > 0 && r.time_min_ms <= r.time_median_ms, "min %g median %g", r.time_min_ms,
              r.time_median_ms);
    cr_assert_eq(r.n_samples, 5);
    /* number grew until a sample lasted 5 ms: a 16^3 matmul takes microseconds. */
    cr_assert(r.number > 1);
    cr_assert(r.time_median_ms * r.number >= 5.0 * 0.5, "sample of %d calls x %g ms", r.number, r.time_median_ms);
    cr_assert(r.max_error <= 1.0);
    double expect_gflops = op->flops / (r.time_median_ms * 1e6);
    cr_assert(r.gflops > 0.99 * expect_gflops && r.gflops < 1.01 * expect_gflops);
}

/* A candidate slower than the cutoff is checked, then timed by the fastest
 * of a few more calls; a wrong one is still caught first. The cutoff goes by
 * those calls, not the checked one: a kernel slow only on its first calls
 * (as a parallel one is, starting its OpenMP threads) is timed as usual. */
/* Spins MS milliseconds of wall time, whatever the machine's speed (a loop of
 * a fixed count took 20 ms on one machine and over 50 on a slower one, where
 * the timeout case below then killed it). clock_gettime is declared here:
 * kernels' sources do not include <time.h>; CLOCK_MONOTONIC is 1 on Linux
 * and a timespec is two longs on its 64-bit ABIs. */
#define BUSY_MS(MS)                                                                              \
    "{ extern int clock_gettime(int, void *); struct { long s, ns; } t0_, t1_;"                  \
    " clock_gettime(1, &t0_);"                                                                  \
    " do clock_gettime(1, &t1_); while ((t1_.s - t0_.s) * 1e3 + (t1_.ns - t0_.ns) * 1e-6 < " #MS "); }"
Test(run, slow_cutoff_goes_by_the_calls_after_the_checked_one)
{
    static const char *const tmpls[] = {
        good_matmul,
        MATMUL("", "15", ""),
        MATMUL("static int calls; if (calls++ < 2) { " BUSY_MS(20) " }", "16", ""),
        MATMUL(BUSY_MS(10), "16", ""),
        MATMUL(BUSY_MS(20), "16", ""),
    };
    rlt_build_result b[5];
    build_all(5, tmpls, b);
    rlt_run_opts cut = {.repeat = 5, .min_repeat_ms = 5.0, .slow_cutoff_ms = 1e-6};
    rlt_run_result r = run_one(&b[0], &cut);
    cr_assert_eq(r.status, RLT_STATUS_OK, "%s", r.message);
    cr_assert(r.is_correct);
    cr_assert_eq(r.n_samples, 1);
    cr_assert(r.gflops > 0 && r.time_min_ms == r.time_median_ms);
    assert_message_has(&r, "timed by the fastest of its first 5 call(s)");
    r = run_one(&b[1], &cut);
    cr_assert_eq(r.status, RLT_STATUS_WRONG_ANSWER, "the check comes before the cutoff: %s", r.message);
    r = run_one(&b[0], &(rlt_run_opts){.repeat = 3, .min_repeat_ms = 1.0, .slow_cutoff_ms = 1e6});
    cr_assert_eq(r.n_samples, 3, "under the cutoff: timed as usual");

    /* a 2 ms cutoff: the first two calls take about 20 ms, the others microseconds */
    rlt_run_opts two_ms = {.repeat = 3, .min_repeat_ms = 1.0, .slow_cutoff_ms = 2.0};
    r = run_one(&b[2], &two_ms);
    cr_assert_eq(r.status, RLT_STATUS_OK, "%s", r.message);
    cr_assert_eq(r.n_samples, 3, "slow first calls alone are not cut off: %s", r.message);
    cr_assert(r.time_median_ms < 2.0, "timed warm: %g ms", r.time_median_ms);
    /* every call about 10 ms: cut off, by a warm call */
    r = run_one(&b[3], &two_ms);
    cr_assert_eq(r.status, RLT_STATUS_OK, "%s", r.message);
    cr_assert_eq(r.n_samples, 1, "%g ms: %s", r.time_median_ms, r.message);
    cr_assert(r.time_median_ms > 2.0, "%g ms", r.time_median_ms);
    assert_message_has(&r, "slower than the cutoff of 2.000 ms");
    /* about 20 ms a call under a 0.1 s timeout: five calls would not fit,
     * so it takes fewer and is timed, not killed */
    r = run_one(&b[4], &(rlt_run_opts){.repeat = 3, .min_repeat_ms = 1.0, .slow_cutoff_ms = 2.0, .timeout_s = 0.1});
    cr_assert_eq(r.status, RLT_STATUS_OK, "%s: %s", rlt_status_str(r.status), r.message);
    cr_assert_eq(r.n_samples, 1, "%s", r.message);
    assert_message_has(&r, "timed by the fastest of its first");
}

Test(run, crashes_are_named_and_the_caller_carries_on)
{
    const char *tmpls[] = {
        MATMUL("volatile float *volatile p = 0; *p = 1.0f;", "16", ""),
        MATMUL("__builtin_trap();", "16", ""),
        MATMUL("volatile int zero = 0, seven = 7; seven = seven / zero;", "16", ""),
        good_matmul,
    };
    rlt_build_result b[4];
    build_all(4, tmpls, b);

    rlt_run_result r = run_one(&b[0], &quick);
    cr_assert_eq(r.status, RLT_STATUS_RUN_ERROR, "%s", r.message);
    assert_message_has(&r, "SIGSEGV");
    assert_message_has(&r, "NULL pointer");
    cr_assert_not(r.is_correct);

    r = run_one(&b[3], &quick);
    cr_assert_eq(r.status, RLT_STATUS_OK, "right after a crash: %s", r.message);

    r = run_one(&b[1], &quick);
    cr_assert_eq(r.status, RLT_STATUS_RUN_ERROR, "%s", r.message);
    assert_message_has(&r, "SIGILL");

    r = run_one(&b[2], &quick);
    cr_assert_eq(r.status, RLT_STATUS_RUN_ERROR, "%s", r.message);
    assert_message_has(&r, "SIGFPE");

    r = run_one(&b[3], &quick);
    cr_assert_eq(r.status, RLT_STATUS_OK, "%s", r.message);
}

Test(run, endless_loop_times_out)
{
    const char *tmpl = MATMUL("volatile int spin = 1; while (spin) {}", "16", "");
    rlt_build_result b;
    build_all(1, &tmpl, &b);
    double t0 = now_s();
    rlt_run_result r = run_one(&b, &(rlt_run_opts){.timeout_s = 1.0});
    double elapsed = now_s() - t0;
    cr_assert_eq(r.status, RLT_STATUS_RUN_TIMEOUT, "%s: %s", rlt_status_str(r.status), r.message);
    cr_assert(elapsed < 2.0, "took %.2f s for a 1 s timeout", elapsed);
    assert_message_has(&r, "timeout");
    cr_assert_eq(r.gflops, 0.0);
}

Test(run, slow_kernel_gets_fewer_samples_not_a_timeout)
{
    /* 0.4 s a call against a 1 s timeout: the checked call is all the
     * sampling budget (80%) allows. */
    const char *tmpl =
        "#include <time.h>\n" MATMUL("", "16", "nanosleep(&(struct timespec){.tv_nsec = 400000000}, 0);");
    rlt_build_result b;
    build_all(1, &tmpl, &b);
    double t0 = now_s();
    rlt_run_result r = run_one(&b, &(rlt_run_opts){.repeat = 3, .timeout_s = 1.0});
    double elapsed = now_s() - t0;
    cr_assert_eq(r.status, RLT_STATUS_OK, "%s: %s", rlt_status_str(r.status), r.message);
    cr_assert_eq(r.n_samples, 1);
    cr_assert_eq(r.number, 1);
    cr_assert(r.time_min_ms >= 400.0 && r.time_min_ms < 600.0, "%g ms", r.time_min_ms);
    cr_assert(elapsed < 1.0, "took %.2f s", elapsed);
    assert_message_has(&r, "1 of 3 samples");
}

Test(run, writing_an_input_is_caught_and_harms_nothing)
{
    const char *tmpls[] = {MATMUL("((float *)A)[3] = 1e30f;", "16", ""), good_matmul};
    rlt_build_result b[2];
    build_all(2, tmpls, b);
    rlt_run_result r = run_one(&b[0], &quick);
    cr_assert_eq(r.status, RLT_STATUS_RUN_ERROR, "%s", r.message);
    assert_message_has(&r, "SIGSEGV");
    assert_message_has(&r, "input tensor A");
    /* The shared input was not touched: the good kernel still agrees. */
    r = run_one(&b[1], &quick);
    cr_assert_eq(r.status, RLT_STATUS_OK, "%s", r.message);
}

Test(run, wrong_answers_name_the_element)
{
    const char *tmpls[] = {
        /* Off by one in the reduction of row 5 only. */
        MATMUL("", "(i == 5 ? 15 : 16)", ""),
        /* Element C[3,4] never written. */
        "size_t @_workspace_bytes(void) { return 0; }\n"
        "void @(float *const *t, void *ws, int n_threads)\n"
        "{\n"
        "  (void)ws; (void)n_threads;\n"
        "  for (int i = 0; i < 16; i++)\n"
        "    for (int j = 0; j < 16; j++) {\n"
        "      if (i == 3 && j == 4) continue;\n"
        "      float acc = 0.0f;\n"
        "      for (int k = 0; k < 16; k++) acc += t[0][i * 16 + k] * t[1][k * 16 + j];\n"
        "      t[2][i * 16 + j] = acc;\n"
        "    }\n"
        "}\n",
        /* Right the first time, wrong once it has been called before. */
        MATMUL("static int calls;", "16", "if (++calls > 1) C[7] = 0.5f;"),
    };
    rlt_build_result b[3];
    build_all(3, tmpls, b);

    rlt_run_result r = run_one(&b[0], &quick);
    cr_assert_eq(r.status, RLT_STATUS_WRONG_ANSWER, "%s", r.message);
    assert_message_has(&r, "C[5,0]");
    assert_message_has(&r, "element 80");
    assert_message_has(&r, "16 of 256 elements wrong");
    cr_assert_not(r.is_correct);
    cr_assert(r.max_error > 1.0);
    cr_assert_eq(r.gflops, 0.0);

    r = run_one(&b[1], &quick);
    cr_assert_eq(r.status, RLT_STATUS_WRONG_ANSWER, "%s", r.message);
    assert_message_has(&r, "C[3,4]");
    assert_message_has(&r, "element 52");
    assert_message_has(&r, "NaN");
    assert_message_has(&r, "1 of 256");

    r = run_one(&b[2], &quick);
    cr_assert_eq(r.status, RLT_STATUS_WRONG_ANSWER, "%s", r.message);
    assert_message_has(&r, "after the timed calls");
    assert_message_has(&r, "C[0,7]");
}

Test(run, writes_past_the_output_are_caught)
{
    /* 256 floats fill whole cache lines, so the guard page sits right after. */
    const char *tmpl = MATMUL("", "16", "C[256] = 1.0f;");
    rlt_build_result b;
    build_all(1, &tmpl, &b);
    rlt_run_result r = run_one(&b, &quick);
    cr_assert_eq(r.status, RLT_STATUS_RUN_ERROR, "%s", r.message);
    assert_message_has(&r, "past the end of the output");
}

Test(run, workspace_is_provided_aligned_and_guarded)
{
    const char *tmpls[] = {
        /* Uses 64 floats of aligned workspace for a row of B. */
        "#include <stdint.h>\n"
        "size_t @_workspace_bytes(void) { return 100; }\n"
        "void @(float *const *t, void *ws, int n_threads)\n"
        "{\n"
        "  (void)n_threads;\n"
        "  if ((uintptr_t)ws % 64) __builtin_trap();\n"
        "  float *row = ws;\n"
        "  for (int i = 0; i < 16; i++)\n"
        "    for (int j = 0; j < 16; j++) {\n"
        "      for (int k = 0; k < 16; k++) row[k] = t[0][i * 16 + k];\n"
        "      float acc = 0.0f;\n"
        "      for (int k = 0; k < 16; k++) acc += row[k] * t[1][k * 16 + j];\n"
        "      t[2][i * 16 + j] = acc;\n"
        "    }\n"
        "  ((char *)ws)[101] = 1;\n"
        "}\n",
    };
    rlt_build_result b;
    build_all(1, tmpls, &b);
    rlt_run_result r = run_one(&b, &quick);
    cr_assert_eq(r.status, RLT_STATUS_RUN_ERROR, "%s", r.message);
    assert_message_has(&r, "past the end of its workspace");
}

Test(run, prepare_runs_once_before_the_first_call)
{
    const char *tmpls[] = {
        /* B transposed into the workspace by _prepare; the kernel traps
         * unless _prepare ran exactly once before it. */
        "static int prepared;\n"
        "size_t @_workspace_bytes(void) { return 16 * 16 * sizeof(float); }\n"
        "void @_prepare(float *const *t, void *ws, int n_threads)\n"
        "{\n"
        "  (void)n_threads;\n"
        "  prepared++;\n"
        "  float *bt = ws;\n"
        "  for (int k = 0; k < 16; k++)\n"
        "    for (int j = 0; j < 16; j++) bt[j * 16 + k] = t[1][k * 16 + j];\n"
        "}\n"
        "void @(float *const *t, void *ws, int n_threads)\n"
        "{\n"
        "  (void)n_threads;\n"
        "  if (prepared != 1) __builtin_trap();\n"
        "  const float *bt = ws;\n"
        "  for (int i = 0; i < 16; i++)\n"
        "    for (int j = 0; j < 16; j++) {\n"
        "      float acc = 0.0f;\n"
        "      for (int k = 0; k < 16; k++) acc += t[0][i * 16 + k] * bt[j * 16 + k];\n"
        "      t[2][i * 16 + j] = acc;\n"
        "    }\n"
        "}\n",
    };
    rlt_build_result b;
    build_all(1, tmpls, &b);
    rlt_run_result r = run_one(&b, &quick);
    cr_assert_eq(r.status, RLT_STATUS_OK, "%s: %s", rlt_status_str(r.status), r.message);
    cr_assert(r.is_correct);
    cr_assert(r.n_samples >= 1);
}

Test(run, missing_symbols_are_run_errors)
{
    const char *tmpls[] = {
        good_matmul,
        /* No <symbol>_workspace_bytes. */
        "void @(float *const *t, void *ws, int n_threads) { (void)t; (void)ws; (void)n_threads; }\n",
    };
    rlt_build_result b[2];
    build_all(2, tmpls, b);
    rlt_build_result renamed = b[0];
    snprintf(renamed.symbol, sizeof renamed.symbol, "rlt_k_does_not_exist");
    rlt_run_result r = run_one(&renamed, &quick);
    cr_assert_eq(r.status, RLT_STATUS_RUN_ERROR, "%s", r.message);
    assert_message_has(&r, "rlt_k_does_not_exist");

    r = run_one(&b[1], &quick);
    cr_assert_eq(r.status, RLT_STATUS_RUN_ERROR, "%s", r.message);
    assert_message_has(&r, "_workspace_bytes");

    rlt_build_result gone = b[0];
    snprintf(gone.so_path, sizeof gone.so_path, "%s/no-such.so", cache_dir);
    r = run_one(&gone, &quick);
    cr_assert_eq(r.status, RLT_STATUS_RUN_ERROR, "%s", r.message);
    assert_message_has(&r, "no-such.so");
}

Test(run, build_failures_pass_through)
{
    rlt_build_result b = {.status = RLT_STATUS_BUILD_ERROR};
    snprintf(b.log, sizeof b.log, "/c/x.c: In function 'f':\n/c/x.c:3:5: error: 'q' undeclared\n");
    rlt_run_result r = run_one(&b, &quick);
    cr_assert_eq(r.status, RLT_STATUS_BUILD_ERROR);
    assert_message_has(&r, "error: 'q' undeclared");
    cr_assert_not(r.is_correct);

    rlt_build_result t = {.status = RLT_STATUS_BUILD_TIMEOUT};
    r = run_one(&t, &quick);
    cr_assert_eq(r.status, RLT_STATUS_BUILD_TIMEOUT);
}

/* The kernels trap unless they run where they should: the libc and libgomp
 * functions are declared by hand because the preamble comes first. */
#define AFFINITY_CHECK(COND)                                                           \
    "int sched_getaffinity(int pid, unsigned long size, unsigned long *mask);\n"       \
    MATMUL("unsigned long mask[16] = {0}; int n_cpus = 0;"                             \
           "if (sched_getaffinity(0, sizeof mask, mask) != 0) __builtin_trap();"       \
           "for (int w = 0; w < 16; w++) n_cpus += __builtin_popcountl(mask[w]);"      \
           "if (!(" COND ")) __builtin_trap();",                                       \
           "16", "")

Test(run, single_thread_runs_are_pinned_and_openmp_gets_its_environment)
{
    long n_online = sysconf(_SC_NPROCESSORS_ONLN);
    const char *tmpls[] = {
        AFFINITY_CHECK("n_cpus == 1"),
        AFFINITY_CHECK("n_cpus > 1"),
        "//omp\n"
        "int omp_get_max_threads(void);\n"
        "int omp_get_proc_bind(void);\n"
        "size_t @_workspace_bytes(void) { return 0; }\n"
        "void @(float *const *t, void *ws, int n_threads)\n"
        "{\n"
        "  (void)ws;\n"
        "  if (omp_get_max_threads() != 3 || n_threads != 3 || omp_get_proc_bind() != 3) __builtin_trap();\n"
        "#pragma omp parallel for num_threads(n_threads)\n"
        "  for (int i = 0; i < 16; i++)\n"
        "    for (int j = 0; j < 16; j++) {\n"
        "      float acc = 0.0f;\n"
        "      for (int k = 0; k < 16; k++) acc += t[0][i * 16 + k] * t[1][k * 16 + j];\n"
        "      t[2][i * 16 + j] = acc;\n"
        "    }\n"
        "}\n",
    };
    rlt_build_result b[3];
    build_all(3, tmpls, b);
    rlt_run_result r = run_one(&b[0], &quick);
    cr_assert_eq(r.status, RLT_STATUS_OK, "pinned to one CPU: %s", r.message);
    if (n_online > 1) {
        r = run_one(&b[1], &(rlt_run_opts){.repeat = 3, .min_repeat_ms = 1.0, .no_pin = true});
        cr_assert_eq(r.status, RLT_STATUS_OK, "no_pin: %s", r.message);
    }
    /* OMP_NUM_THREADS=3 (more than the cores here, so not libgomp's default)
     * and OMP_PROC_BIND=close must be set before libgomp loads. */
    r = run_one(&b[2], &(rlt_run_opts){.repeat = 3, .min_repeat_ms = 1.0, .n_threads = 3});
    cr_assert_eq(r.status, RLT_STATUS_OK, "OpenMP with 3 threads: %s", r.message);
}

static int count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    cr_assert_not_null(d);
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n - 1; /* the directory's own descriptor */
}

/* Processes whose parent is this one (zombies included). */
static int count_children(void)
{
    int n = 0;
    DIR *d = opendir("/proc");
    cr_assert_not_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char path[300], line[256];
        snprintf(path, sizeof path, "/proc/%s/status", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        while (fgets(line, sizeof line, f)) {
            long ppid;
            if (sscanf(line, "PPid: %ld", &ppid) == 1) {
                n += ppid == (long)getpid();
                break;
            }
        }
        fclose(f);
    }
    closedir(d);
    return n;
}

Test(run, many_runs_leak_no_process_and_no_descriptor)
{
    const char *tmpls[] = {good_matmul, MATMUL("volatile float *volatile p = 0; *p = 1.0f;", "16", "")};
    rlt_build_result b[2];
    build_all(2, tmpls, b);
    rlt_run_opts tiny = {.repeat = 1, .min_repeat_ms = 0.001, .timeout_s = 5.0};
    int fds_before = count_fds();
    cr_assert_eq(count_children(), 0);
    for (int i = 0; i < 200; i++) {
        rlt_run_result r = run_one(&b[i % 2], &tiny);
        cr_assert_eq(r.status, i % 2 ? RLT_STATUS_RUN_ERROR : RLT_STATUS_OK, "run %d: %s", i, r.message);
    }
    cr_assert_eq(count_fds(), fds_before);
    cr_assert_eq(count_children(), 0);
}

Test(run, measure_nests_lowers_builds_and_runs)
{
    rlt_nest nests[3];
    rlt_nest_init(&nests[0], op);
    nests[1] = nests[0]; /* the same code: compiled and run once */
    rlt_nest_init(&nests[2], op);
    nests[2].loops[2].kind = RLT_LOOP_PARALLEL; /* a parallel reduction: codegen refuses it */
    rlt_run_result r[3];
    rlt_build_opts bopts = {.cache_dir = cache_dir};
    rlt_diag d = {0};
    cr_assert_eq(rlt_measure_nests(workload, &bopts, &quick, 3, nests, r, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(r[0].status, RLT_STATUS_OK, "%s", r[0].message);
    cr_assert(r[0].is_correct && r[0].gflops > 0);
    cr_assert_eq(r[1].status, RLT_STATUS_OK);
    cr_assert_eq(r[1].time_median_ms, r[0].time_median_ms);
    cr_assert_eq(r[2].status, RLT_STATUS_BUILD_ERROR, "%s: %s", rlt_status_str(r[2].status), r[2].message);
    assert_message_has(&r[2], "code generation failed");
}

Test(run, workload_reports_a_reference_that_cannot_be_built)
{
    rlt_workload *w = NULL;
    rlt_diag d = {0};
    rlt_build_opts bopts = {.cache_dir = cache_dir, .cc = "no-such-compiler-rlt"};
    rlt_status st = rlt_workload_create(op, &bopts, 1, &w, &d);
    cr_assert_eq(st, RLT_STATUS_IO_ERROR, "%s: %s", rlt_status_str(st), d.message);
    cr_assert_null(w);
    cr_assert(strstr(d.message, "reference kernel of matmul") != NULL, "%s", d.message);
    cr_assert(strstr(d.message, "no-such-compiler-rlt") != NULL, "%s", d.message);
}

Test(run, workload_of_another_op_is_refused)
{
    rlt_op *other = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_op_parse("matmul:M=8,N=8,K=8", &other, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_nest nest;
    rlt_nest_init(&nest, other);
    rlt_run_result r;
    cr_assert_eq(rlt_measure_nests(workload, NULL, &quick, 1, &nest, &r, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "M=8") != NULL, "%s", d.message);
    rlt_op_destroy(other);
}

/* Strided vector loads (rlt_lds2_W / rlt_lds4_W, codegen version 4) compute
 * the reference: stride-2 convolutions vectorized along the output width,
 * reading a padded copy at 8 and 16 floats, the unpadded input itself at 4
 * (its last lane is the tensor's last float: the loads must not read past
 * it), and a stride-4 depthwise one whose tiles are split into an interior
 * copy without padding checks and a border one. */
/* The op of `spec` under `schedule`, its nest in *n; the generated code
 * must contain `needle` and, when not NULL, `also`. */
static rlt_op *scheduled_with(const char *spec, const char *schedule, const char *needle, const char *also,
                              rlt_nest *n)
{
    rlt_diag d = {0};
    rlt_op *sop = NULL;
    cr_assert_eq(rlt_op_parse(spec, &sop, &d), RLT_STATUS_OK, "%s", d.message);
    *n = fixture_scheduled(sop, schedule);
    rlt_kernel_src k;
    cr_assert_eq(rlt_codegen_kernel(n, &k, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_not_null(strstr(k.code, needle), "%s: no %s in\n%s", spec, needle, k.code);
    if (also) cr_assert_not_null(strstr(k.code, also), "%s: no %s in\n%s", spec, also, k.code);
    rlt_kernel_src_free(&k);
    return sop;
}

/* A vector wider than what is left of its axis never takes the whole-vector
 * path, so none is emitted: only masked loads and stores for it. */
Test(run, a_vector_wider_than_its_axis_has_only_the_masked_path)
{
    rlt_diag d = {0};
    rlt_op *wop = NULL;
    cr_assert_eq(rlt_op_parse("depthwise_conv2d:N=1,C=2,H=9,W=7,R=3,S=3,stride=1,pad=1", &wop, &d), RLT_STATUS_OK);
    rlt_nest n = fixture_scheduled(wop, "split q 8\nreorder n q.o c p r s q.i\ncache_write p\nunroll r\nunroll s\n"
                                       "vectorize q.i\n");
    rlt_kernel_src k;
    cr_assert_eq(rlt_codegen_kernel(&n, &k, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_not_null(strstr(k.code, "rlt_stm8("), "%s", k.code);
    cr_assert_null(strstr(k.code, "rlt_store8("), "an unmasked store of 8 lanes in\n%s", k.code);
    cr_assert_null(strstr(k.code, "rlt_load8("), "an unmasked load of 8 lanes in\n%s", k.code);
    cr_assert_null(strstr(k.code, "q_o*"), "the loop of one iteration left in an index in\n%s", k.code);
    rlt_kernel_src_free(&k);
    /* two vectors of 8 on 13: the first whole, the second partial */
    rlt_op_destroy(wop);
    cr_assert_eq(rlt_op_parse("depthwise_conv2d:N=1,C=2,H=5,W=13,R=3,S=3,stride=1,pad=1", &wop, &d), RLT_STATUS_OK);
    n = fixture_scheduled(wop, "split q 16\nsplit q.i 8\nreorder n q.o c p r s q.i.o q.i.i\ncache_write p\n"
                              "unroll q.i.o\nvectorize q.i.i\n");
    cr_assert_eq(rlt_codegen_kernel(&n, &k, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_not_null(strstr(k.code, "rlt_store8("), "%s", k.code);
    cr_assert_not_null(strstr(k.code, "rlt_stm8("), "%s", k.code);
    rlt_kernel_src_free(&k);
    rlt_op_destroy(wop);
}

Test(run, strided_vector_loads_compute_the_reference)
{
    static const struct {
        const char *spec, *schedule;
    } cases[] = {
        {"conv2d:N=1,C=3,H=34,W=34,K=4,R=3,S=3,stride=2,pad=1",
         "split q 8\nreorder n k p q.o c r s q.i\nunroll r\nunroll s\nvectorize q.i\npad I\n"},
        {"conv2d:N=1,C=2,H=40,W=64,K=3,R=3,S=3,stride=2,pad=1",
         "split q 16\nreorder n k p q.o c r s q.i\nvectorize q.i\npad I\n"},
        {"conv2d:N=1,C=5,H=9,W=17,K=2,R=1,S=1,stride=2,pad=0", "split q 4\nreorder n k p q.o c r s q.i\nvectorize q.i\n"},
        {"depthwise_conv2d:N=1,C=3,H=24,W=35,R=3,S=3,stride=4,pad=2",
         "split q 8\nreorder n c p q.o r s q.i\ncache_write q.o\nunroll r\nunroll s\nvectorize q.i\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rlt_diag d = {0};
        rlt_nest n;
        rlt_op *cop = scheduled_with(cases[i].spec, cases[i].schedule, i == 3 ? "rlt_lds4_" : "rlt_lds2_",
                                     i == 3 ? "in bounds: no checks" : NULL, &n);
        rlt_build_opts bopts = {.cache_dir = cache_dir};
        rlt_workload *cw = NULL;
        cr_assert_eq(rlt_workload_create(cop, &bopts, 7, &cw, &d), RLT_STATUS_OK, "%s", d.message);
        rlt_run_result r;
        cr_assert_eq(rlt_measure_nests(cw, &bopts, &quick, 1, &n, &r, &d), RLT_STATUS_OK, "%s", d.message);
        cr_assert_eq(r.status, RLT_STATUS_OK, "%s: %s", cases[i].spec, r.message);
        cr_assert(r.is_correct, "%s", cases[i].spec);
        rlt_workload_destroy(cw);
        rlt_op_destroy(cop);
    }
}

/* A vector that runs past its loop's end (a tail) or over a tensor's border
 * (convolution padding, no `pad`) loads and stores only the lanes inside, in
 * masked operations: every width that has them (16, 8, 4), contiguous and
 * strided (2, 4) lanes, under gcc and clang, with the ISA's masked
 * instructions (-march=native: AVX-512 or AVX here) and with the preamble's
 * lane loops (-mno-avx). The runner checks each against the reference, and
 * its guard zones catch a write past the output. */
Test(run, partial_vectors_and_border_loads_compute_the_reference, .timeout = 300)
{
    static const struct {
        const char *spec, *schedule, *helper;
    } cases[] = {
        /* a tail of 5 of 16 lanes on j, and partial sums reloaded */
        {"matmul:M=5,N=21,K=7", "split j 16\nsplit k 4\nreorder i j.o k.o k.i j.i\ncache_write k.o\nvectorize j.i\n",
         "rlt_stm16"},
        /* the border and the tail of a 3x3 window along the width (8 lanes) */
        {"depthwise_conv2d:N=1,C=2,H=9,W=13,R=3,S=3,stride=1,pad=1",
         "split q 8\nsplit p 2\nreorder n c p.o q.o r s p.i q.i\ncache_write q.o\nunroll r\nunroll s\nunroll p.i\n"
         "vectorize q.i\n",
         "rlt_ldm8("},
        /* stride 2 with a 12-lane tail and the left border (16 lanes); the
         * window's columns s rolled: each load on its own */
        {"depthwise_conv2d:N=1,C=3,H=56,W=56,R=3,S=3,stride=2,pad=1",
         "split p 2\nsplit q 16\nreorder n c p.o q.o r s p.i q.i\ncache_write q.o\nunroll q.o\nunroll p.i\n"
         "unroll r\nvectorize q.i\n",
         "rlt_ldm2_16("},
        /* the same with s unrolled: its taps read one window of the row (codegen 9) */
        {"depthwise_conv2d:N=1,C=3,H=56,W=56,R=3,S=3,stride=2,pad=1",
         "split p 2\nsplit q 16\nreorder n c p.o q.o r p.i s q.i\ncache_write q.o\nunroll q.o\nunroll p.i\n"
         "unroll s\nunroll r\nvectorize q.i\n",
         "rlt_ldw2_16("},
        /* windows inside the row, unmasked, between a border tile and a
         * 3-lane tail; dilation 2: taps 0, 2 and 4 floats apart */
        {"depthwise_conv2d:N=1,C=2,H=12,W=70,R=3,S=3,stride=2,pad=1",
         "split q 16\nreorder n c p q.o r s q.i\ncache_write q.o\nunroll r\nunroll s\nvectorize q.i\n",
         "rlt_ldw2u_16("},
        {"depthwise_conv2d:N=1,C=2,H=12,W=75,R=3,S=3,stride=2,pad=2,dilation=2",
         "split q 16\nreorder n c p q.o r s q.i\ncache_write q.o\nunroll r\nunroll s\nvectorize q.i\n",
         "rlt_ldw2u_16("},
        /* a 7-wide window (taps up to 6 floats on, a third vector of 5) over
         * input channels, a convolution's first layer */
        {"conv2d:N=1,C=2,H=20,W=80,K=3,R=7,S=7,stride=2,pad=3",
         "split q 16\nreorder n k p q.o c r s q.i\ncache_write q.o\nunroll s\nvectorize q.i\n", "rlt_ldw2u_16("},
        /* stride 4 at 4 lanes, padding 2 */
        {"depthwise_conv2d:N=1,C=2,H=23,W=35,R=3,S=3,stride=4,pad=2",
         "split q 4\nreorder n c p q.o r s q.i\ncache_write q.o\nunroll r\nunroll s\nvectorize q.i\n", "rlt_ldm4_4("},
        /* a vector wider than its axis (rows of 7 in 8 lanes) */
        {"depthwise_conv2d:N=1,C=2,H=9,W=7,R=3,S=3,stride=1,pad=1",
         "split q 8\nsplit p 3\nreorder n q.o c p.o r s p.i q.i\ncache_write p.o\nunroll r\nunroll s\nunroll p.i\n"
         "vectorize q.i\n",
         "rlt_stm8"},
        /* two vectors past a row of 13, the second partial (16 lanes in all) */
        {"depthwise_conv2d:N=1,C=2,H=5,W=13,R=3,S=3,stride=1,pad=1",
         "split q 16\nsplit q.i 8\nreorder n q.o c p r s q.i.o q.i.i\ncache_write p\nunroll r\nunroll s\nunroll q.i.o\n"
         "vectorize q.i.i\n",
         "rlt_stm8"},
        /* an epilogue reading the bias under a tail (conv2d, K along the vector) */
        {"dense:M=3,N=13,K=10,bias=1,relu=1", "split j 8\nreorder i j.o k j.i\ncache_write j.o\nvectorize j.i\n",
         "rlt_stm8"},
    };
    static const char *const compilers[] = {"gcc", "clang"};
    static const char *const cflags[] = {"-O1 -march=native", "-O1 -mno-avx"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rlt_diag d = {0};
        rlt_nest n;
        rlt_op *cop = scheduled_with(cases[i].spec, cases[i].schedule, cases[i].helper, NULL, &n);
        for (int c = 0; c < 2; c++)
            for (int f = 0; f < 2; f++) {
                rlt_build_opts bopts = {.cache_dir = cache_dir, .cc = compilers[c], .cflags = cflags[f]};
                rlt_workload *cw = NULL;
                cr_assert_eq(rlt_workload_create(cop, &bopts, 7, &cw, &d), RLT_STATUS_OK, "%s", d.message);
                rlt_run_result r;
                cr_assert_eq(rlt_measure_nests(cw, &bopts, &quick, 1, &n, &r, &d), RLT_STATUS_OK, "%s", d.message);
                cr_assert_eq(r.status, RLT_STATUS_OK, "%s, %s %s: %s", cases[i].spec, compilers[c], cflags[f],
                             r.message);
                cr_assert(r.is_correct, "%s, %s %s", cases[i].spec, compilers[c], cflags[f]);
                rlt_workload_destroy(cw);
            }
        rlt_op_destroy(cop);
    }
}
