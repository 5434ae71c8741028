/*
 * test_net_export.c - compiled networks exported as stand-alone C libraries
 * (rlt_model_export, src/net/net_export.c). A small network built with
 * tests/common/onnx_build.h covers every kind of step: fused kernels (a
 * convolution with its bias and relu, one with a residual Add, a dense
 * layer whose weight the compile transposed into a new buffer), fast ops
 * reading constants (Mul, LayerNormalization) and activations (MaxPool, an
 * Add of two activations, Transpose, Softmax), a view (Flatten), two inputs
 * and two outputs. The export is built with the system's cc through its
 * own Makefile (`make check`: the example against rltune's reference),
 * then loaded with dlopen: its outputs equal rltune's compiled network's
 * bit for bit, and its create and run report bad weights files (missing,
 * truncated, another export's, none) and NULL buffers with their codes and
 * messages. Also: weights compiled into the library, what cannot be
 * exported (a node on the reference evaluator, a bad name, a net of
 * another model), which writes nothing, and allocation failures at every
 * point of an export (OUT_OF_MEMORY, nothing leaked). A second network has
 * a Split and a Concat placed in place (slices of one block at offsets):
 * it builds, checks and matches rltune's network bit for bit.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/leaks.h"
#include "../common/onnx_build.h"
#include "../common/tmp.h"
#include "graph/graph.h"
#include "net/net.h"
#include "rltune/model.h"

#define D(...) ((int64_t[]){__VA_ARGS__})

static uint64_t rng_state;

static void init_rand(onnx_build *b, const char *name, int rank, const int64_t *dims, float scale)
{
    ob_init_rand(b, name, rank, dims, scale, &rng_state);
}

/* The network of the first test (opset 17, for LayerNormalization). */
static void build_mixed(onnx_build *b)
{
    rng_state = 5;
    ob_init(b, 17);
    ob_input(b, "x", OB_F32, 4, D(1, 4, 8, 8));
    ob_input(b, "z", OB_F32, 4, D(1, 8, 4, 4));
    ob_conv_rand(b, "c1", "x", "a0", 4, 8, 3, 1, 1, 1, true, &rng_state);
    ob_node(b, "Relu", "r1", "a0", "a1");
    ob_conv_rand(b, "c2", "a1", "b0", 8, 8, 3, 1, 1, 1, true, &rng_state);
    ob_node(b, "Add", "res", "b0,a1", "b1"); /* a residual: fused into c2 */
    ob_node(b, "Relu", "r2", "b1", "b2");
    Onnx__NodeProto *mp = ob_node(b, "MaxPool", "pool", "b2", "p");
    ob_attr_ints(b, mp, "kernel_shape", 2, D(2, 2));
    ob_attr_ints(b, mp, "strides", 2, D(2, 2));
    ob_node(b, "Add", "addz", "p,z", "q"); /* two activations: a fast op */
    Onnx__NodeProto *fl = ob_node(b, "Flatten", "flat", "q", "f"); /* a view */
    ob_attr_i(b, fl, "axis", 1);
    init_rand(b, "fc_w", 2, D(128, 10), 0.2f); /* [K,N]: the compile transposes it */
    init_rand(b, "fc_b", 1, D(10), 0.3f);
    ob_node(b, "Gemm", "fc", "f,fc_w,fc_b", "g");
    float half = 0.5f;
    ob_init_f32(b, "half", 0, NULL, &half);
    ob_node(b, "Mul", "scale", "g,half", "h"); /* a fast op reading a constant */
    init_rand(b, "ln_s", 1, D(10), 1.0f);
    init_rand(b, "ln_b", 1, D(10), 0.5f);
    ob_node(b, "LayerNormalization", "ln", "h,ln_s,ln_b", "l");
    ob_node(b, "Softmax", "sm", "l", "y");
    Onnx__NodeProto *tr = ob_node(b, "Transpose", "tr", "q", "t");
    ob_attr_ints(b, tr, "perm", 4, D(0, 2, 3, 1));
    ob_output(b, "y");
    ob_output(b, "t");
}

/* A conv with bias and relu: the smallest network with a kernel. */
static void build_tiny(onnx_build *b)
{
    rng_state = 3;
    ob_init(b, 13);
    ob_input(b, "x", OB_F32, 4, D(1, 3, 6, 6));
    ob_conv_rand(b, "c", "x", "a", 3, 4, 3, 1, 1, 1, true, &rng_state);
    ob_node(b, "Relu", "r", "a", "y");
    ob_output(b, "y");
}

/* Writes the model built in b to DIR/net.onnx and loads it. */
static rlt_model *model_of(onnx_build *b, const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/net.onnx", dir);
    cr_assert(ob_write(b, path), "cannot write %s", path);
    ob_free(b);
    rlt_model *m = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_model_load(path, &m, &d), RLT_STATUS_OK, "%s", d.message);
    return m;
}

/* m compiled in NCHW (channel_block 0) or in blocks of channel_block. */
static rlt_net *compile_ok(rlt_model *m, int channel_block)
{
    rlt_net_options o;
    rlt_net_options_init(&o);
    o.channel_block = channel_block;
    rlt_net *n = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_model_compile(m, &o, &n, &d), RLT_STATUS_OK, "compile: %s", d.message);
    return n;
}

static void export_ok(rlt_model *m, rlt_net *n, const char *dir, const char *name, bool embed,
                      rlt_model_export_result *res)
{
    rlt_model_export_options o;
    rlt_model_export_options_init(&o);
    o.dir = dir;
    o.name = name;
    o.origin = "a test network";
    o.embed_weights = embed;
    o.seed = 7;
    rlt_diag d = {0};
    cr_assert_eq(rlt_model_export(m, n, &o, res, &d), RLT_STATUS_OK, "export: %s", d.message);
}

/* Runs `make -C dir TARGET` with warnings as errors in rltune's own code
 * and the example; its output in *out (caller frees), its exit status
 * returned. */
static int make_in(const char *dir, const char *target, char **out)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "make -s -C '%s' -j2 BASE_CFLAGS='-std=c11 -O2 -Wall -Wextra -Werror' %s 2>&1", dir, target);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t len = 0, cap = 4096;
    char *text = malloc(cap);
    cr_assert_not_null(text);
    for (size_t got; (got = fread(text + len, 1, cap - len - 1, p)) > 0;) {
        len += got;
        if (cap - len < 2) text = realloc(text, cap *= 2);
        cr_assert_not_null(text);
    }
    text[len] = '\0';
    int status = pclose(p);
    *out = text;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static bool exists(const char *dir, const char *file)
{
    char path[1400];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    struct stat st;
    return stat(path, &st) == 0;
}

/* The library's functions, by dlsym. */
typedef struct lib {
    void *handle;
    int (*create)(const char *, int, void **, char *, size_t);
    int (*run)(void *, const void *const *, void *const *);
    const char *(*last_error)(const void *);
    void (*destroy)(void *);
} lib;

static lib lib_open(const char *dir, const char *name)
{
    char path[600], sym[200];
    snprintf(path, sizeof path, "%s/lib%s.so", dir, name);
    lib l = {.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL)};
    cr_assert_not_null(l.handle, "dlopen: %s", dlerror());
    snprintf(sym, sizeof sym, "%s_create", name);
    *(void **)&l.create = dlsym(l.handle, sym);
    snprintf(sym, sizeof sym, "%s_run", name);
    *(void **)&l.run = dlsym(l.handle, sym);
    snprintf(sym, sizeof sym, "%s_last_error", name);
    *(void **)&l.last_error = dlsym(l.handle, sym);
    snprintf(sym, sizeof sym, "%s_destroy", name);
    *(void **)&l.destroy = dlsym(l.handle, sym);
    cr_assert(l.create && l.run && l.last_error && l.destroy, "the library lacks its functions");
    return l;
}

/* The library `name` in dir (weights in its file) and the net n, run on
 * the same inputs: each of the n_out outputs (bytes[i] long) is the same,
 * bit for bit. The library's buffers start filled with NaNs. */
static void expect_lib_equals_net(const char *dir, const char *name, rlt_net *n, const void *const *in, int n_out,
                                  const size_t *bytes)
{
    lib l = lib_open(dir, name);
    char msg[512] = "", path[1400];
    void *net = NULL;
    snprintf(path, sizeof path, "%s/%s.weights", dir, name);
    cr_assert_eq(l.create(path, 1, &net, msg, sizeof msg), 0, "%s", msg);
    void *out_lib[8], *out_net[8];
    cr_assert_leq(n_out, 8);
    for (int i = 0; i < n_out; i++) {
        out_lib[i] = malloc(bytes[i]);
        out_net[i] = malloc(bytes[i]);
        cr_assert(out_lib[i] && out_net[i]);
        memset(out_lib[i], 0xff, bytes[i]);
    }
    cr_assert_eq(l.run(net, in, out_lib), 0, "%s", l.last_error(net));
    rlt_diag d = {0};
    cr_assert_eq(rlt_net_run_buffers(n, in, out_net, &d), RLT_STATUS_OK, "%s", d.message);
    for (int i = 0; i < n_out; i++) {
        cr_expect(memcmp(out_lib[i], out_net[i], bytes[i]) == 0, "output %d differs from rltune's", i);
        free(out_lib[i]);
        free(out_net[i]);
    }
    l.destroy(net);
    dlclose(l.handle);
}

/* create with weights_path: its status, the message in msg. */
static int create_status(const lib *l, const char *weights_path, char *msg, size_t cap)
{
    void *net = (void *)1;
    int st = l->create(weights_path, 0, &net, msg, cap);
    if (st == 0) l->destroy(net);
    else cr_expect_null(net, "a failed create hands out nothing");
    return st;
}

/* ---- tests ------------------------------------------------------------------- */

Test(net_export, every_kind_of_step_builds_checks_and_matches_rltune, .timeout = 300)
{
    char *dir = tmp_dir_make("/tmp/rlt_net_export_XXXXXX");
    onnx_build b;
    build_mixed(&b);
    rlt_model *m = model_of(&b, dir);
    rlt_net *n = compile_ok(m, 0);
    char out_dir[300];
    snprintf(out_dir, sizeof out_dir, "%s/lib", dir);
    rlt_model_export_result res;
    export_ok(m, n, out_dir, "mixed_net", false, &res);
    cr_expect_str_eq(res.name, "mixed_net");
    cr_expect_eq(res.n_kernel_steps, 3, "c1+relu, c2+residual+relu, the Gemm");
    cr_expect_eq(res.n_kernels, 3);
    cr_expect_eq(res.n_fast_ops, 6, "MaxPool, Add, Mul, LayerNormalization, Softmax, Transpose");
    cr_expect_eq(res.n_views, 1, "Flatten");
    cr_expect_eq(res.n_steps, 9);
    cr_expect_eq(res.n_kernel_files, 1);
    cr_expect_eq(res.arena_bytes, rlt_net_activation_bytes(n));
    cr_expect_eq(res.weights_bytes % 64, 0);
    const char *files[] = {"mixed_net.h", "mixed_net.c", "mixed_net_kernels_1.c", "ops_run.h", "ops_run.c",
                           "mixed_net.weights", "example.c", "Makefile", "input_0.npy", "input_1.npy",
                           "expected_0.npy", "expected_1.npy"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) cr_expect(exists(out_dir, files[i]), "%s", files[i]);
    cr_expect_not(exists(out_dir, "mixed_net_weights.c"));

    /* the fast ops' run time is rltune's own file, verbatim */
    char path[1400];
    snprintf(path, sizeof path, "%s/ops_run.c", out_dir);
    char *written = tmp_file_read(path, NULL);
    char *source = tmp_file_read(RLTUNE_SOURCE_DIR "/src/net/ops_run.c", NULL);
    cr_expect_str_eq(written, source);
    free(written);
    free(source);

    /* the Makefile builds it with no warning, and the example finds it right */
    char *text = NULL;
    int rc = make_in(out_dir, "check", &text);
    cr_assert_eq(rc, 0, "make check failed:\n%s", text);
    cr_expect(strstr(text, "mixed_net: 2 outputs, ") && strstr(text, "(tolerance 0.0001 relative): OK"), "%s",
              text);
    free(text);

    /* the library's outputs are rltune's, bit for bit */
    lib l = lib_open(out_dir, "mixed_net");
    char msg[512] = "";
    void *net = NULL;
    snprintf(path, sizeof path, "%s/mixed_net.weights", out_dir);
    cr_assert_eq(l.create(path, 2, &net, msg, sizeof msg), 0, "%s", msg);
    cr_expect_str_eq(msg, "");
    const rlt_graph *g = rlt_net_graph(n);
    float x[256], z[128], y_lib[10], t_lib[128], y_net[10], t_net[128];
    rng_state = 99;
    for (int i = 0; i < 256; i++) x[i] = ob_rand(&rng_state);
    for (int i = 0; i < 128; i++) z[i] = ob_rand(&rng_state);
    cr_assert_eq(g->n_inputs, 2);
    const void *in[2] = {x, z};
    void *out_lib[2] = {y_lib, t_lib}, *out_net[2] = {y_net, t_net};
    memset(y_lib, 0xff, sizeof y_lib);
    memset(t_lib, 0xff, sizeof t_lib);
    cr_assert_eq(l.run(net, in, out_lib), 0, "%s", l.last_error(net));
    rlt_diag d = {0};
    cr_assert_eq(rlt_net_run_buffers(n, in, out_net, &d), RLT_STATUS_OK, "%s", d.message);
    cr_expect(memcmp(y_lib, y_net, sizeof y_lib) == 0, "output y differs from rltune's");
    cr_expect(memcmp(t_lib, t_net, sizeof t_lib) == 0, "output t differs from rltune's");
    /* a second run gives the same (nothing left over from the first) */
    memset(y_lib, 0, sizeof y_lib);
    cr_assert_eq(l.run(net, in, out_lib), 0);
    cr_expect(memcmp(y_lib, y_net, sizeof y_lib) == 0);

    /* run: a NULL buffer is named, and nothing runs */
    const void *in_bad[2] = {x, NULL};
    cr_expect_eq(l.run(net, in_bad, out_lib), 1);
    cr_expect(strstr(l.last_error(net), "input 1 ('z') is NULL"), "%s", l.last_error(net));
    void *out_bad[2] = {y_lib, NULL};
    cr_expect_eq(l.run(net, in, out_bad), 1);
    cr_expect(strstr(l.last_error(net), "output 1 ('t') is NULL"), "%s", l.last_error(net));
    cr_expect_eq(l.run(net, in, out_lib), 0);
    cr_expect_str_eq(l.last_error(net), "");
    l.destroy(net);

    /* create: weights that are missing, truncated, another export's, none */
    char bad[1400];
    snprintf(bad, sizeof bad, "%s/nonexistent.weights", dir);
    cr_expect_eq(create_status(&l, bad, msg, sizeof msg), 2);
    cr_expect(strstr(msg, "cannot open the weights file") && strstr(msg, "nonexistent.weights"), "%s", msg);
    size_t len = 0;
    char *w = tmp_file_read(path, &len);
    snprintf(bad, sizeof bad, "%s/short.weights", dir);
    tmp_file_write(bad, w, len - 64);
    cr_expect_eq(create_status(&l, bad, msg, sizeof msg), 3);
    cr_expect(strstr(msg, "is shorter than its header says"), "%s", msg);
    tmp_file_write(bad, w, 40);
    cr_expect_eq(create_status(&l, bad, msg, sizeof msg), 3);
    cr_expect(strstr(msg, "shorter than a weights file's 64-byte header"), "%s", msg);
    w[20] ^= 1; /* the signature */
    tmp_file_write(bad, w, len);
    cr_expect_eq(create_status(&l, bad, msg, sizeof msg), 3);
    cr_expect(strstr(msg, "belongs to another export"), "%s", msg);
    w[20] ^= 1;
    w[8] = 9; /* the version */
    tmp_file_write(bad, w, len);
    cr_expect_eq(create_status(&l, bad, msg, sizeof msg), 3);
    cr_expect(strstr(msg, "has version 9; this library reads version 1"), "%s", msg);
    w[0] = 'X';
    tmp_file_write(bad, w, len);
    cr_expect_eq(create_status(&l, bad, msg, sizeof msg), 3);
    cr_expect(strstr(msg, "is not a weights file"), "%s", msg);
    free(w);
    cr_expect_eq(create_status(&l, NULL, msg, sizeof msg), 1);
    cr_expect(strstr(msg, "no weights path"), "%s", msg);
    cr_expect_eq(l.create(path, 1, NULL, msg, sizeof msg), 1, "no out");
    dlclose(l.handle);

    rlt_net_destroy(n);
    rlt_model_destroy(m);
    tmp_remove_tree(dir);
    free(dir);
}

Test(net_export, embedded_weights, .timeout = 300)
{
    char *dir = tmp_dir_make("/tmp/rlt_net_export_XXXXXX");
    onnx_build b;
    build_tiny(&b);
    rlt_model *m = model_of(&b, dir);
    rlt_net *n = compile_ok(m, 0);
    rlt_model_export_result res;
    export_ok(m, n, dir, "tiny", true, &res);
    cr_expect(exists(dir, "tiny_weights.c"));
    cr_expect_not(exists(dir, "tiny.weights"));
    char *text = NULL;
    int rc = make_in(dir, "check", &text);
    cr_assert_eq(rc, 0, "make check failed:\n%s", text);
    cr_expect(strstr(text, "tiny: 1 output, 144 values: ") && strstr(text, ": OK"), "%s", text);
    free(text);
    lib l = lib_open(dir, "tiny");
    char msg[256];
    cr_expect_eq(create_status(&l, NULL, msg, sizeof msg), 0, "%s", msg);
    dlclose(l.handle);
    rlt_net_destroy(n);
    rlt_model_destroy(m);
    tmp_remove_tree(dir);
    free(dir);
}

/* A Split on channels at batch 1 whose outputs are views of their slices
 * (one a graph output, one read by a kernel at an offset past the block's
 * start), and a Concat whose parts are written in place: the export's
 * places are the net's (vals[t] - arena, the slices' offsets included),
 * `make check` passes and the library's outputs equal rltune's bit for
 * bit. */
Test(net_export, in_place_split_and_concat, .timeout = 300)
{
    char *dir = tmp_dir_make("/tmp/rlt_net_export_XXXXXX");
    onnx_build b;
    rng_state = 9;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 4, 6, 6));
    ob_conv_rand(&b, "c1", "x", "s0", 4, 8, 3, 1, 1, 1, true, &rng_state);
    ob_node(&b, "Relu", "r1", "s0", "s");
    ob_init_i64(&b, "sizes", 2, D(3, 5));
    ob_attr_i(&b, ob_node(&b, "Split", "sp", "s,sizes", "a,bb"), "axis", 1);
    ob_conv_rand(&b, "c2", "bb", "k", 5, 4, 3, 1, 1, 1, true, &rng_state);
    ob_node(&b, "Sigmoid", "sig", "a", "sa");
    ob_attr_i(&b, ob_node(&b, "Concat", "cat", "k,sa", "y"), "axis", 1);
    ob_output(&b, "y");
    ob_output(&b, "a");
    rlt_model *m = model_of(&b, dir);
    rlt_net *n = compile_ok(m, 0);
    char out_dir[300];
    snprintf(out_dir, sizeof out_dir, "%s/lib", dir);
    rlt_model_export_result res;
    export_ok(m, n, out_dir, "split_net", false, &res);
    cr_expect_eq(res.n_kernel_steps, 2, "c1+relu, c2");
    cr_expect_eq(res.n_fast_ops, 1, "Sigmoid");
    cr_expect_eq(res.n_views, 2, "the Split and the Concat, in place");
    cr_expect_eq(res.n_steps, 3, "the views run nothing");
    cr_expect_eq(res.arena_bytes, rlt_net_activation_bytes(n));
    char *text = NULL;
    int rc = make_in(out_dir, "check", &text);
    cr_assert_eq(rc, 0, "make check failed:\n%s", text);
    cr_expect(strstr(text, "split_net: 2 outputs, ") && strstr(text, "(tolerance 0.0001 relative): OK"), "%s",
              text);
    free(text);

    float x[144];
    rng_state = 98;
    for (int i = 0; i < 144; i++) x[i] = ob_rand(&rng_state);
    const void *in[1] = {x};
    expect_lib_equals_net(out_dir, "split_net", n, in, 2, (const size_t[]){252 * sizeof(float), 108 * sizeof(float)});
    rlt_net_destroy(n);
    rlt_model_destroy(m);
    tmp_remove_tree(dir);
    free(dir);
}

/* A network in blocked layouts (channel_block 8): the reordered conv
 * weights are the net's buffers and the blocked MaxPool and
 * GlobalAveragePool plans are written as they are, so `make check` passes
 * and the library's output equals rltune's bit for bit. */
Test(net_export, blocked_layout, .timeout = 300)
{
    char *dir = tmp_dir_make("/tmp/rlt_net_export_XXXXXX");
    onnx_build b;
    rng_state = 12;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 3, 9, 9));
    ob_conv_rand(&b, "stem", "x", "s0", 3, 16, 3, 1, 1, 1, true, &rng_state);
    ob_node(&b, "Relu", "sr", "s0", "s");
    Onnx__NodeProto *mp = ob_node(&b, "MaxPool", "mp", "s", "p");
    ob_attr_ints(&b, mp, "kernel_shape", 2, D(3, 3));
    ob_attr_ints(&b, mp, "strides", 2, D(2, 2));
    ob_attr_ints(&b, mp, "pads", 4, D(1, 1, 1, 1));
    ob_conv_rand(&b, "c1", "p", "c", 16, 16, 3, 1, 1, 1, true, &rng_state);
    ob_node(&b, "Add", "res", "c,p", "r");
    ob_node(&b, "GlobalAveragePool", "gap", "r", "y");
    ob_output(&b, "y");
    rlt_model *m = model_of(&b, dir);
    rlt_net *n = compile_ok(m, 8);
    rlt_net_task t;
    rlt_net_task_get(n, 1, &t);
    cr_expect(strstr(t.spec, ",iblock=8,oblock=8,epilogue=bias+add"), "%s", t.spec);
    char out_dir[300];
    snprintf(out_dir, sizeof out_dir, "%s/lib", dir);
    rlt_model_export_result res;
    export_ok(m, n, out_dir, "blocked_net", false, &res);
    cr_expect_eq(res.n_fast_ops, 2, "MaxPool, GlobalAveragePool");
    char *text = NULL;
    int rc = make_in(out_dir, "check", &text);
    cr_assert_eq(rc, 0, "make check failed:\n%s", text);
    cr_expect(strstr(text, "(tolerance 0.0001 relative): OK"), "%s", text);
    free(text);
    float x[243];
    for (int i = 0; i < 243; i++) x[i] = ob_rand(&rng_state);
    const void *in[1] = {x};
    expect_lib_equals_net(out_dir, "blocked_net", n, in, 1, (const size_t[]){16 * sizeof(float)});
    rlt_net_destroy(n);
    rlt_model_destroy(m);
    tmp_remove_tree(dir);
    free(dir);
}

/* What cannot be exported is refused before anything is written. */
Test(net_export, refusals)
{
    char *dir = tmp_dir_make("/tmp/rlt_net_export_XXXXXX");
    char out_dir[300];
    snprintf(out_dir, sizeof out_dir, "%s/out", dir);
    onnx_build b;
    rng_state = 4;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 3, 6, 6));
    Onnx__NodeProto *asym = ob_conv_rand(&b, "asym", "x", "y", 3, 4, 3, 1, 0, 1, true, &rng_state);
    asym->attribute[0]->ints[2] = 2; /* pads [0,0,2,0]: no task, the evaluator runs it */
    ob_output(&b, "y");
    rlt_model *m = model_of(&b, dir);
    rlt_net *n = compile_ok(m, 0);
    rlt_model_export_options o;
    rlt_model_export_options_init(&o);
    o.dir = out_dir;
    rlt_model_export_result res;
    rlt_diag d = {0};
    cr_expect_eq(rlt_model_export(m, n, &o, &res, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_expect(strstr(d.message, "'asym' (Conv, opset 13): runs on rltune's reference evaluator") &&
                  strstr(d.message, "cannot be exported"),
              "%s", d.message);
    cr_expect_str_eq(rlt_model_last_error(m), d.message);
    cr_expect_not(exists(out_dir, ""), "nothing written");

    /* a bad name; no directory; a net of another model */
    onnx_build b2;
    build_tiny(&b2);
    rlt_model *m2 = model_of(&b2, dir);
    rlt_net *n2 = compile_ok(m2, 0);
    o.name = "Bad-Name";
    d = (rlt_diag){0};
    cr_expect_eq(rlt_model_export(m2, n2, &o, &res, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_expect(strstr(d.message, "bad library name 'Bad-Name'"), "%s", d.message);
    o.name = NULL;
    o.dir = NULL;
    d = (rlt_diag){0};
    cr_expect_eq(rlt_model_export(m2, n2, &o, &res, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_expect(strstr(d.message, "no directory"), "%s", d.message);
    o.dir = out_dir;
    d = (rlt_diag){0};
    cr_expect_eq(rlt_model_export(m, n2, &o, &res, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_expect(strstr(d.message, "not compiled from this model"), "%s", d.message);
    cr_expect_not(exists(out_dir, ""), "nothing written");
    cr_expect_eq(rlt_net_exportable(n2, &d), RLT_STATUS_OK);

    rlt_net_destroy(n2);
    rlt_model_destroy(m2);
    rlt_net_destroy(n);
    rlt_model_destroy(m);
    tmp_remove_tree(dir);
    free(dir);
}

/* An allocation failure anywhere in an export: OUT_OF_MEMORY with a
 * message, nothing leaked; with enough allocations it succeeds. */
Test(net_export, allocation_failures)
{
    char *dir = tmp_dir_make("/tmp/rlt_net_export_XXXXXX");
    onnx_build b;
    build_mixed(&b);
    rlt_model *m = model_of(&b, dir);
    rlt_net *n = compile_ok(m, 0);
    rlt_model_export_options o;
    rlt_model_export_options_init(&o);
    o.dir = dir;
    bool done = false;
    for (long k = 1; k < 2000 && !done; k++) {
        rlt_model_export_result res;
        rlt_diag d = {0};
        rlt_alloc_fail_after(k);
        rlt_status st = rlt_model_export(m, n, &o, &res, &d);
        rlt_alloc_fail_after(0);
        if (st == RLT_STATUS_OK) {
            done = true;
        } else {
            cr_assert_eq(st, RLT_STATUS_OUT_OF_MEMORY, "allocation %ld: %s", k, d.message);
            cr_expect(strstr(d.message, "out of memory") != NULL, "allocation %ld: %s", k, d.message);
        }
    }
    cr_expect(done, "never exported with enough allocations");
    rlt_net_destroy(n);
    rlt_model_destroy(m);
    assert_no_leaks();
    tmp_remove_tree(dir);
    free(dir);
}

