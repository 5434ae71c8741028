/* Unit tests of code generation (src/codegen/lower*.c, reference.c) beyond
 * the goldens: symbols are a function of the code (the compile cache
 * depends on it), workspace sizes of staged layouts, the preamble compiles
 * with gcc and clang, names that are C keywords or predefined macros still
 * give code that compiles and computes the right thing, and every
 * primitive's kernel builds and runs correctly when the user picks clang. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "measure/measure.h"
#include "sched/sched.h"

#include "../common/fixtures.h"

/* ---- helpers ------------------------------------------------------------ */

static rlt_kernel_src lower(const rlt_nest *n)
{
    rlt_kernel_src k;
    rlt_diag d = {0};
    cr_assert_eq(rlt_codegen_kernel(n, &k, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_not_null(k.code);
    return k;
}

static bool is_symbol(const char *s, const char *prefix)
{
    size_t n = strlen(prefix);
    if (strncmp(s, prefix, n) != 0 || strlen(s) != n + 16) return false;
    for (const char *p = s + n; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return false;
    return true;
}

/* Writes `code` (after the preamble) to a temporary .c file and runs
 * `compiler -std=gnu11 -fsyntax-only -fopenmp FLAGS` on it; returns the
 * exit status and logs the compiler's messages. */
static int syntax_check(const char *compiler, const char *flags, const char *code)
{
    char path[] = "/tmp/rlt_codegen_XXXXXX.c";
    int fd = mkstemps(path, 2);
    cr_assert_geq(fd, 0);
    FILE *f = fdopen(fd, "w");
    cr_assert_not_null(f);
    fputs(rlt_codegen_preamble(), f);
    fputs(code, f);
    fclose(f);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s -std=gnu11 -fsyntax-only -fopenmp %s %s 2>&1", compiler, flags, path);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    rlt_str out;
    rlt_str_init(&out);
    char buf[512];
    while (fgets(buf, sizeof buf, p)) rlt_str_append(&out, buf);
    int status = pclose(p);
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (rc != 0) cr_log_error("%s:\n%s", cmd, out.data ? out.data : "");
    else unlink(path);
    rlt_str_free(&out);
    return rc;
}

/* ---- symbols ------------------------------------------------------------ */

Test(codegen, symbols_are_a_function_of_the_code)
{
    rlt_op *op = fixture_op("matmul:M=16,N=16,K=16");
    const char *base = "split i 4\nsplit j 8\nreorder i.o j.o i.i k j.i\nvectorize j.i\n";
    rlt_nest a = fixture_scheduled(op, base);
    rlt_kernel_src k1 = lower(&a), k2 = lower(&a);
    cr_assert_str_eq(k1.code, k2.code, "lowering is deterministic");
    cr_assert_str_eq(k1.symbol, k2.symbol);
    cr_assert(is_symbol(k1.symbol, "rlt_k_"), "symbol '%s'", k1.symbol);
    cr_assert_not(k1.needs_openmp);
    /* The code names its functions by the symbol, and nothing else. */
    char decl[128];
    snprintf(decl, sizeof decl, "size_t %s_workspace_bytes(void)", k1.symbol);
    cr_assert(strstr(k1.code, decl), "no '%s' in the code", decl);
    snprintf(decl, sizeof decl, "void %s(float *const *rlt_t, void *rlt_ws, int rlt_nthreads)", k1.symbol);
    cr_assert(strstr(k1.code, decl), "no '%s' in the code", decl);
    cr_assert_null(strstr(k1.code, "PLACEHOLDER"));

    /* A nest reached another way but equal gives the same kernel. */
    rlt_nest b = fixture_scheduled(op, "split i 4\nsplit j 8\nreorder i.o j.o i.i k j.i\nreorder k i.i\nreorder i.i k\n"
                                       "vectorize j.i\n");
    rlt_kernel_src kb = lower(&b);
    cr_assert_str_eq(kb.symbol, k1.symbol);
    rlt_kernel_src_free(&kb);

    /* Different nests, different kernels. */
    static const char *const others[] = {
        "",
        "split i 4\nsplit j 8\nreorder i.o j.o i.i k j.i\n",
        "split i 2\nsplit j 8\nreorder i.o j.o i.i k j.i\nvectorize j.i\n",
        "split i 4\nsplit j 8\nreorder i.o j.o i.i k j.i\nvectorize j.i\nunroll i.i\n",
        "split i 4\nsplit j 8\nreorder i.o j.o i.i k j.i\nvectorize j.i\nparallel i.o\n",
        "split i 4\nsplit j 8\nreorder i.o j.o i.i k j.i\nvectorize j.i\nparallel i.o 2\n",
        "split i 4\nsplit j 8\nreorder i.o j.o i.i k j.i\nvectorize j.i\ncache_write j.o\n",
        "split i 4\nsplit j 8\nreorder i.o j.o i.i k j.i\nvectorize j.i\npack B 1 8\n",
        "fuse i j\n",
    };
    char symbols[RLT_ARRAY_LEN(others) + 1][RLT_SYMBOL_MAX];
    snprintf(symbols[0], sizeof symbols[0], "%s", k1.symbol);
    for (size_t i = 0; i < RLT_ARRAY_LEN(others); i++) {
        rlt_nest n = fixture_scheduled(op, others[i]);
        rlt_kernel_src k = lower(&n);
        snprintf(symbols[i + 1], sizeof symbols[i + 1], "%s", k.symbol);
        bool is_parallel = strstr(others[i], "parallel") != NULL;
        cr_assert_eq(k.needs_openmp, is_parallel, "'%s': needs_openmp %d", others[i], k.needs_openmp);
        cr_assert_eq(strstr(k.code, "#pragma omp") != NULL, is_parallel);
        rlt_kernel_src_free(&k);
    }
    for (size_t i = 0; i < RLT_ARRAY_LEN(symbols); i++)
        for (size_t j = 0; j < i; j++) cr_expect_str_neq(symbols[i], symbols[j], "schedules %zu and %zu", i, j);
    rlt_kernel_src_free(&k1);
    rlt_kernel_src_free(&k2);
    rlt_kernel_src_free(&k1); /* freeing twice is harmless: code is reset */
    rlt_kernel_src_free(NULL);

    /* Reference kernels: their own prefix, deterministic, per op. */
    rlt_op *other = fixture_op("matmul:M=16,N=16,K=8");
    rlt_kernel_src r1, r2, r3;
    cr_assert_eq(rlt_codegen_reference(op, &r1, NULL), RLT_STATUS_OK);
    cr_assert_eq(rlt_codegen_reference(op, &r2, NULL), RLT_STATUS_OK);
    cr_assert_eq(rlt_codegen_reference(other, &r3, NULL), RLT_STATUS_OK);
    cr_assert(is_symbol(r1.symbol, "rlt_r_"), "symbol '%s'", r1.symbol);
    cr_assert_str_eq(r1.symbol, r2.symbol);
    cr_assert_str_eq(r1.code, r2.code);
    cr_assert_str_neq(r1.symbol, r3.symbol);
    cr_assert_not(r1.needs_openmp);
    rlt_kernel_src_free(&r1);
    rlt_kernel_src_free(&r2);
    rlt_kernel_src_free(&r3);
    rlt_op_destroy(other);
    rlt_op_destroy(op);
}

Test(codegen, refuses_nests_that_fail_the_check)
{
    rlt_op *op = fixture_op("matmul:M=8,N=8,K=8");
    rlt_nest n;
    rlt_nest_init(&n, op);
    n.loops[2].kind = RLT_LOOP_VECTORIZE; /* a reduction: the check refuses it */
    rlt_kernel_src k = {0};
    rlt_diag d = {0};
    cr_assert_eq(rlt_codegen_kernel(&n, &k, &d), RLT_STATUS_ILLEGAL_SCHEDULE);
    cr_assert_null(k.code);
    cr_assert(strstr(d.message, "is a reduction"), "%s", d.message);
    rlt_op_destroy(op);
}

/* ---- workspace ---------------------------------------------------------- */

/* The workspace size the kernel's code declares. */
static long long declared_workspace(const rlt_kernel_src *k)
{
    char pattern[640];
    snprintf(pattern, sizeof pattern, "%s_workspace_bytes(void) { return ", k->symbol);
    const char *p = strstr(k->code, pattern);
    cr_assert_not_null(p, "no workspace function in the code");
    return atoll(p + strlen(pattern));
}

Test(codegen, workspace_holds_every_staged_tensor_64_byte_aligned, .timeout = 120)
{
    static const struct {
        const char *spec, *sched;
        long long bytes;             /* the workspace */
        const char *offset_decl;     /* where the second staged tensor starts, or NULL */
    } cases[] = {
        {"matmul:M=4,N=20,K=5", "", 0, NULL},
        /* B[5,20] -> B_s[2][5][16]: 160 floats, 640 bytes. */
        {"matmul:M=4,N=20,K=5", "pack B j 16\n", 640, NULL},
        /* A[4,5] -> A_s[2][5][2] (20 floats, 80 -> 128 bytes), then B_s at 128. */
        {"matmul:M=4,N=20,K=5", "pack A 0 2\npack B j 16\n", 128 + 640, "B_s = (float *)((char *)rlt_ws + 128)"},
        /* I[1,2,4,4] padded by 1 -> I_s[1][2][6][6]: 72 floats, 288 -> 320 bytes. */
        {"conv2d:N=1,C=2,H=4,W=4,K=3,R=3,S=3,pad=1", "pad I\n", 320, NULL},
        /* ... and W[3,2,3,3] packed by 2 on dim 0 -> W_s[2][2][3][3][2]: 72 floats, at 320. */
        {"conv2d:N=1,C=2,H=4,W=4,K=3,R=3,S=3,pad=1", "pad I\npack W 0 2\n", 640,
         "W_s = (float *)((char *)rlt_ws + 320)"},
        /* Padding then blocking by 4: I_s[2][1][2][6][4], 96 floats = 384 bytes. */
        {"conv2d:N=1,C=2,H=4,W=4,K=3,R=3,S=3,pad=1", "pad I\npack I 3 4\n", 384, NULL},
    };
    rlt_kernel_src kernels[RLT_ARRAY_LEN(cases)];
    rlt_op *ops[RLT_ARRAY_LEN(cases)];
    for (size_t i = 0; i < RLT_ARRAY_LEN(cases); i++) {
        ops[i] = fixture_op(cases[i].spec);
        rlt_nest n = fixture_scheduled(ops[i], cases[i].sched);
        kernels[i] = lower(&n);
        cr_assert_eq(declared_workspace(&kernels[i]), cases[i].bytes, "%s / %s", cases[i].spec, cases[i].sched);
        if (cases[i].offset_decl)
            cr_assert(strstr(kernels[i].code, cases[i].offset_decl), "no '%s' in:\n%s", cases[i].offset_decl,
                      kernels[i].code);
    }
    /* And the compiled function returns it. */
    rlt_build_result builds[RLT_ARRAY_LEN(cases)];
    rlt_diag d = {0};
    cr_assert_eq(rlt_build_batch(&(rlt_build_opts){.cflags = "-O0"}, RLT_ARRAY_LEN(cases), kernels, builds, &d),
                 RLT_STATUS_OK, "%s", d.message);
    for (size_t i = 0; i < RLT_ARRAY_LEN(cases); i++) {
        cr_assert_eq(builds[i].status, RLT_STATUS_OK, "%s", builds[i].log);
        void *so = dlopen(builds[i].so_path, RTLD_NOW | RTLD_LOCAL);
        cr_assert_not_null(so, "%s", dlerror());
        char name[RLT_SYMBOL_MAX + 32];
        snprintf(name, sizeof name, "%s_workspace_bytes", builds[i].symbol);
        size_t (*ws)(void) = (size_t(*)(void))(uintptr_t)dlsym(so, name);
        cr_assert_not_null(ws);
        cr_assert_eq((long long)ws(), cases[i].bytes);
        dlclose(so);
        rlt_kernel_src_free(&kernels[i]);
        rlt_op_destroy(ops[i]);
    }
}

/* ---- compilers ---------------------------------------------------------- */

Test(codegen, preamble_compiles_with_gcc_and_clang)
{
    cr_assert_eq(syntax_check("gcc", "-Wall -Wextra -Werror", ""), 0);
    /* clang warns about the unused helpers of the vector widths a kernel
     * does not use; that is all it may say. */
    cr_assert_eq(syntax_check("clang", "-Wall -Wextra -Werror -Wno-unused-function", ""), 0);
}

/* Ops whose names are C keywords, names the kernel declares itself, or
 * macros the compiler and headers predefine (`linux` and `unix` are 1 in
 * gnu11 mode, NAN and INFINITY come from math.h; p0 and c0 are the staging
 * loops' counters), each with schedules that make loop names from them. */
static const struct {
    const char *expr, *shape, *sched;
} reserved_cases[] = {
    {"C[int,j] += double[int,for] * B[for,j]", "int=5,j=6,for=3", ""},
    {"C[int,j] += double[int,for] * B[for,j]", "int=5,j=6,for=3",
     "split int 2\nfuse int.o int.i\nsplit j 4\nreorder for j.i\nvectorize j.i\ncache_write int.o_int.i\n"
     "pack double for 2\n"},
    {"unix[i,linux] += NAN[i,k] * INFINITY[k,linux]", "i=3,linux=4,k=5", "split linux 2\nunroll linux.i\n"},
    {"unix[i,linux] += NAN[i,k] * INFINITY[k,linux]", "i=3,linux=4,k=5", "pack NAN 1 2\nparallel i\n"},
    {"Y[i] += p0[i+k-1] * c0[k]", "i=6,k=3", "pad p0\npack c0 0 2\n"},
    {"Y[p0,c1] = X[p0,c1] + while[c1]", "p0=3,c1=4", "fuse p0 c1\n"},
    {"Yy[static,rltx] = max(main[static,rltx], 0)", "static=2,rltx=3", "cache_write root\n"},
};

Test(codegen, reserved_names_still_compile_and_compute, .timeout = 300)
{
    enum { N = (int)RLT_ARRAY_LEN(reserved_cases) };
    for (int i = 0; i < N; i++) {
        rlt_op *op = fixture_expr_op(reserved_cases[i].expr, reserved_cases[i].shape);
        rlt_nest n = fixture_scheduled(op, reserved_cases[i].sched);
        rlt_kernel_src k = lower(&n);
        cr_expect_eq(syntax_check("gcc", "", k.code), 0, "gcc: %s / %s", reserved_cases[i].expr,
                     reserved_cases[i].sched);
        cr_expect_eq(syntax_check("clang", "", k.code), 0, "clang: %s / %s", reserved_cases[i].expr,
                     reserved_cases[i].sched);
        /* The reference has its own naming: check it through a workload. */
        rlt_build_opts bopts = {.cflags = "-O1"};
        rlt_workload *w = NULL;
        rlt_diag d = {0};
        cr_assert_eq(rlt_workload_create(op, &bopts, 3, &w, &d), RLT_STATUS_OK, "%s: %s", op->spec, d.message);
        rlt_run_result r;
        rlt_run_opts ropts = {.repeat = 1, .number = 1, .min_repeat_ms = 0, .timeout_s = 20, .n_threads = 2};
        cr_assert_eq(rlt_measure_nests(w, &bopts, &ropts, 1, &n, &r, &d), RLT_STATUS_OK, "%s", d.message);
        cr_expect_eq(r.status, RLT_STATUS_OK, "%s / %s: %s: %s", op->spec, reserved_cases[i].sched,
                     rlt_status_str(r.status), r.message);
        rlt_workload_destroy(w);
        rlt_kernel_src_free(&k);
        rlt_op_destroy(op);
    }
}

/* One schedule per primitive (and the combinations with their own code
 * paths): built with clang through the real builder, run, checked. */
/* A tile whose vector runs across the output's rows (output channels in
 * NCHW) is written back (and its partial sums reloaded) transposed along the
 * row: runs of 8, 4 and 2 columns whole, runs of 3 and 5-7 as 4 or 8 with
 * zeros and masked stores (loads), a last single column lane by lane; at 8
 * and 16 lanes, and with the row's loop moved next to the vector when
 * another unrolled loop sits there. Every helper is used by some case; each
 * case is built with gcc and clang (and gcc without AVX, the preamble's lane
 * loops), run, checked. */
Test(codegen, transposed_write_back_computes_with_gcc_and_clang, .timeout = 300)
{
    static const char *const k8 = "split k 8\nreorder n r s k.o p c q k.i\ncache_write p\nunroll q\nvectorize k.i\n";
    static const char *const k8_reload =
        "split k 8\nsplit c 2\nreorder n r s k.o c.o p q c.i k.i\ncache_write p\nunroll q\nvectorize k.i\n";
    static const char *const k16_reload =
        "split k 16\nsplit c 2\nreorder n r s k.o c.o p q c.i k.i\ncache_write p\nunroll q\nvectorize k.i\n";
    static const struct {
        const char *spec, *sched;
    } cases[] = {
        {"conv2d:N=1,C=2,H=3,W=15,K=16,R=1,S=1", k8},  /* 8 + 7 */
        {"conv2d:N=1,C=2,H=2,W=9,K=16,R=1,S=1", k8},   /* 8 + 1, lane by lane */
        {"depthwise_conv2d:N=1,C=8,H=4,W=6,R=3,S=3,pad=1",
         "pad I\nsplit c 8\nreorder n c.o p r s q c.i\ncache_write p\nunroll q\nvectorize c.i\n"},
        {"conv2d:N=1,C=4,H=2,W=15,K=16,R=1,S=1", k8_reload},  /* reloads: 8 + 7 */
        {"conv2d:N=1,C=4,H=2,W=11,K=16,R=1,S=1", k8_reload},  /* 8 + 3 */
        {"conv2d:N=1,C=4,H=2,W=12,K=16,R=1,S=1", k8_reload},  /* 8 + 4 */
        {"conv2d:N=1,C=4,H=2,W=10,K=16,R=1,S=1", k8_reload},  /* 8 + 2 */
        {"conv2d:N=1,C=4,H=2,W=15,K=32,R=1,S=1", k16_reload}, /* 16 lanes */
        {"conv2d:N=1,C=4,H=2,W=11,K=32,R=1,S=1", k16_reload},
        {"conv2d:N=1,C=4,H=2,W=12,K=32,R=1,S=1", k16_reload},
        {"conv2d:N=1,C=4,H=2,W=10,K=32,R=1,S=1", k16_reload},
        /* columns outside the channels' two vectors in the tile: moved in */
        {"conv2d:N=1,C=3,H=2,W=7,K=64,R=1,S=1",
         "split k 32\nsplit k.i 16\nreorder n r s k.o p c q k.i.o k.i.i\ncache_write p\nunroll q\nunroll k.i.o\n"
         "vectorize k.i.i\n"},
    };
    static const char *const helpers[] = {
        "rlt_tstore8x8(",   "rlt_tstore8x4(",   "rlt_tstore8x2(",   "rlt_tstore8x8n(",  "rlt_tstore8x4n(",
        "rlt_tload8x8(",    "rlt_tload8x4(",    "rlt_tload8x2(",    "rlt_tload8x8n(",   "rlt_tload8x4n(",
        "rlt_tstore16x8(",  "rlt_tstore16x4(",  "rlt_tstore16x2(",  "rlt_tstore16x8n(", "rlt_tstore16x4n(",
        "rlt_tload16x8(",   "rlt_tload16x4(",   "rlt_tload16x2(",   "rlt_tload16x8n(",  "rlt_tload16x4n(",
    };
    static const struct {
        const char *cc, *cflags;
    } builds[] = {{"gcc", "-O1 -march=native"}, {"clang", "-O1 -march=native"}, {"gcc", "-O1 -mno-avx"}};
    bool is_used[RLT_ARRAY_LEN(helpers)] = {false};
    for (size_t i = 0; i < RLT_ARRAY_LEN(cases); i++) {
        rlt_op *op = fixture_op(cases[i].spec);
        rlt_nest nest = fixture_scheduled(op, cases[i].sched);
        rlt_kernel_src src;
        rlt_diag d = {0};
        cr_assert_eq(rlt_codegen_kernel(&nest, &src, &d), RLT_STATUS_OK, "%s", d.message);
        bool has_any = false;
        for (size_t h = 0; h < RLT_ARRAY_LEN(helpers); h++)
            if (strstr(src.code, helpers[h])) is_used[h] = has_any = true;
        cr_expect(has_any, "%s: no transposed store or load in\n%s", cases[i].spec, src.code);
        rlt_kernel_src_free(&src);
        for (size_t b = 0; b < RLT_ARRAY_LEN(builds); b++) {
            rlt_build_opts bopts = {.cc = builds[b].cc, .cflags = builds[b].cflags};
            rlt_run_opts ropts = {.repeat = 1, .number = 1, .min_repeat_ms = 0, .timeout_s = 20, .n_threads = 1};
            rlt_workload *w = NULL;
            rlt_run_result result;
            cr_assert_eq(rlt_workload_create(op, &bopts, 5, &w, &d), RLT_STATUS_OK, "%s", d.message);
            cr_assert_eq(rlt_measure_nests(w, &bopts, &ropts, 1, &nest, &result, &d), RLT_STATUS_OK, "%s", d.message);
            cr_expect_eq(result.status, RLT_STATUS_OK, "%s %s, %s: %s: %s", builds[b].cc, builds[b].cflags, op->spec,
                         rlt_status_str(result.status), result.message);
            rlt_workload_destroy(w);
        }
        rlt_op_destroy(op);
    }
    for (size_t h = 0; h < RLT_ARRAY_LEN(helpers); h++) cr_expect(is_used[h], "no case uses %s)", helpers[h]);
}

static const struct {
    const char *spec, *sched;
} clang_cases[] = {
    {"matmul:M=5,N=6,K=3", ""},
    {"matmul:M=5,N=6,K=3", "split i 2\n"},
    {"matmul:M=5,N=6,K=3", "reorder k j\n"},
    {"matmul:M=5,N=6,K=3", "fuse i j\n"},
    {"matmul:M=5,N=6,K=3", "split i 2\nunroll i.i\n"},
    {"matmul:M=5,N=6,K=3", "split j 4\nreorder k j.i\nvectorize j.i\n"},
    {"matmul:M=5,N=6,K=3", "parallel i 2\n"},
    {"matmul:M=5,N=6,K=3", "cache_write i\n"},
    {"matmul:M=5,N=6,K=3", "split j 4\nreorder k j.i\nvectorize j.i\nsplit i 2\nunroll i.i\nreorder i.i j.o\n"
                           "cache_write i.o\nparallel i.o\n"},
    {"matmul:M=5,N=6,K=3", "pack B j 4\n"},
    {"dense:M=3,N=8,K=5,bias=1,relu=1", "split k 2\nreorder k.o j\ncache_write k.o\n"},
    {"dense:M=3,N=8,K=5,bias=1,relu=1", "split j 4\nreorder k j.i\nvectorize j.i\ncache_write j.o\n"},
    {"conv2d:N=1,C=2,H=5,W=5,K=3,R=3,S=3,stride=2,pad=1", "pad I\npack W 0 2\n"},
    {"depthwise_conv2d:N=1,C=4,H=6,W=6,R=3,S=3,pad=1", "pad I\nsplit c 2\nreorder s c.i\nvectorize c.i\n"},
    /* without pad: border terms left out or guarded once a statement */
    {"conv2d:N=1,C=2,H=3,W=16,K=1,R=3,S=3,pad=1", "reorder n k s c r p q\ncache_write k\nunroll r\nunroll p\nvectorize q\n"},
    {"conv2d:N=1,C=2,H=3,W=16,K=1,R=3,S=3,pad=1", "reorder n k s c r p q\ncache_write k\nunroll r\nunroll p\n"},
    {"depthwise_conv2d:N=1,C=1,H=8,W=16,R=3,S=3,pad=1",
     "split q 8\nsplit p 2\nreorder n c p.o q.o r s p.i q.i\ncache_write q.o\nunroll p.i\nunroll r\nvectorize q.i\n"},
};

Test(codegen, every_primitive_builds_and_runs_with_clang, .timeout = 300)
{
    rlt_build_opts bopts = {.cc = "clang", .cflags = "-O1 -march=native"};
    rlt_run_opts ropts = {.repeat = 1, .number = 1, .min_repeat_ms = 0, .timeout_s = 20, .n_threads = 2};
    for (size_t i = 0; i < RLT_ARRAY_LEN(clang_cases);) {
        /* The cases of one op in one batch. */
        size_t end = i;
        while (end < RLT_ARRAY_LEN(clang_cases) && strcmp(clang_cases[end].spec, clang_cases[i].spec) == 0) end++;
        rlt_op *op = fixture_op(clang_cases[i].spec);
        rlt_nest nests[RLT_ARRAY_LEN(clang_cases)];
        rlt_run_result results[RLT_ARRAY_LEN(clang_cases)];
        for (size_t c = i; c < end; c++) nests[c - i] = fixture_scheduled(op, clang_cases[c].sched);
        rlt_workload *w = NULL;
        rlt_diag d = {0};
        cr_assert_eq(rlt_workload_create(op, &bopts, 11, &w, &d), RLT_STATUS_OK, "%s", d.message);
        cr_assert_eq(rlt_measure_nests(w, &bopts, &ropts, (int)(end - i), nests, results, &d), RLT_STATUS_OK, "%s",
                     d.message);
        for (size_t c = i; c < end; c++)
            cr_expect_eq(results[c - i].status, RLT_STATUS_OK, "clang, %s / %s: %s: %s", op->spec,
                         clang_cases[c].sched, rlt_status_str(results[c - i].status), results[c - i].message);
        rlt_workload_destroy(w);
        rlt_op_destroy(op);
        i = end;
    }
}
