/*
 * test_graph_node_tests.c - ONNX's own backend node test cases run through
 * the importer (rlt_graph_load_onnx) and the reference evaluator
 * (rlt_graph_eval), for every op rltune supports (docs/graph.md,
 * "Supported"). Each case is a folder <name>/ with model.onnx (one node, or
 * a few for the "_expanded" ones) and test_data_set_N/input_K.pb,
 * output_K.pb (TensorProto: what numpy's reference computed). CMake passes
 * the folder of cases (RLTUNE_ONNX_NODE_TESTS_DIR: the onnx wheel's
 * data/node, or the cases tests/common/write_onnx_node_tests.py wrote from
 * the wheel); the test fails when it is missing.
 *
 * A case whose nodes are all supported ops is
 * - run at its own opset when that is 9 to 17 (rltune's opsets);
 * - run at opset 17 when its opset is newer but none of its ops changed
 *   after 17 in a way rltune would read differently (retarget_blocked,
 *   later_attrs, later_inputs);
 * - otherwise skipped by the opset rule, and listed.
 * rltune's graphs have static shapes, while ONNX's cases feed Reshape's
 * shape, Slice's starts, Squeeze's axes, ... as graph inputs: an input the
 * importer refuses as not constant is bound to the data set's value (an
 * initializer) and the model loaded again; such cases are marked {names}.
 * A run either loads, evaluates and matches every expected output (f32:
 * |got - want| <= 1e-7 + 1e-5 |want|, or at most 4 ulps apart: stricter
 * than ONNX's own rtol 1e-3 / atol 1e-7, which only loose_cases get;
 * integers and bools exactly; the same type and shape), or is refused at
 * load with a documented refusal (documented_refusals: a data type rltune
 * does not read, training mode, ...) whose message starts with the model
 * file. Anything else fails the test: a wrong value, a wrong shape, a
 * refusal of something the docs say is supported. The test also fails when
 * fewer than MIN_PASSED cases pass or a supported op is covered by no
 * passing case (unless no_node_case says why), so that it cannot quietly
 * test nothing. A summary with the names goes to stderr.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/leaks.h"
#include "graph/graph.h"
#include "onnx.pb-c.h"

#ifndef RLTUNE_ONNX_NODE_TESTS_DIR
#define RLTUNE_ONNX_NODE_TESTS_DIR ""
#endif

#define OPSET_MIN 9
#define OPSET_MAX 17
/* Cases that must pass: a little under what passes with onnx 1.23.2, so that
 * a lost folder, a broken loader or a broken comparison cannot pass. */
#define MIN_PASSED 235
#define MAX_IO 16 /* inputs or outputs of one case */

/* docs/graph.md, "Supported". */
static const char *const supported_ops[] = {
    "Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "BatchNormalization", "Relu", "Sigmoid", "Tanh",
    "Erf", "Sqrt", "LeakyRelu", "Gelu", "Clip", "Add", "Sub", "Mul", "Div", "Pow", "Where", "Expand",
    "Flatten", "Reshape", "Transpose", "Concat", "Split", "Slice", "Gather", "Squeeze", "Unsqueeze", "Gemm",
    "MatMul", "Softmax", "LayerNormalization", "ReduceMean", "Dropout", "Identity", "Cast", "Constant",
    "ConstantOfShape", "Shape", "Pad",
};
#define N_SUPPORTED ((int)(sizeof supported_ops / sizeof supported_ops[0]))

/* Supported ops whose definition changed after opset 17 in a way that
 * rltune's opset-17 reading would get wrong: ReduceMean-18 takes its axes
 * as an input, Split-18 has num_outputs (a ragged last part). A case of a
 * newer opset with neither, and with none of later_attrs and later_inputs,
 * is run at opset 17: every other supported op kept its inputs, outputs,
 * attributes and semantics up to ONNX's newest opset but for new data
 * types (refused by type) and what those two list (Pad-18's axes input,
 * Pad-19's mode 'wrap'), and Gelu (opset 20) is read at any opset
 * (docs/graph.md). */
static const char *const retarget_blocked[] = {"ReduceMean", "Split"};

/* Attributes (or, with a value, attribute values) that supported ops
 * gained after opset 17: a case of a newer opset that sets one is out of
 * scope (skipped by opset), not run at 17. */
static const struct {
    const char *op, *attr, *value; /* value: NULL for any */
} later_attrs[] = {
    {"AveragePool", "dilations", NULL}, /* opset 19 */
    {"Cast", "saturate", NULL},         /* opset 19, for the float8 types */
    {"Cast", "round_mode", NULL},       /* opset 24 */
    {"Pad", "mode", "wrap"},            /* opset 19 */
};

/* Inputs that supported ops gained after opset 17, by position: a case of
 * a newer opset that gives one is skipped by opset too. */
static const struct {
    const char *op, *name;
    size_t index;
} later_inputs[] = {
    {"Pad", "axes", 3}, /* opset 18 */
};

/* Refusals docs/graph.md documents, by what the message says. */
static const struct {
    const char *needle;
    const char *why;
} documented_refusals[] = {
    {"has ONNX data type", "data types other than FLOAT, INT64, INT32, BOOL"},
    {"is not a tensor", "sequences, maps and optionals"},
    {"cast to ONNX data type", "Cast to a type rltune does not read"},
    {"training_mode=1 is not supported", "BatchNormalization in training mode"},
    {"training_mode=true is not supported", "Dropout in training mode"},
    {"storage_order=1 is not supported", "MaxPool's storage_order=1"},
    {"dilations other than 1 are not supported for AveragePool", "AveragePool with dilations"},
};

/* Cases compared with ONNX's own tolerance (rtol 1e-3, atol 1e-7) instead
 * of ours, and why. */
static const struct {
    const char *name;
    const char *why;
} loose_cases[] = {
    {"test_averagepool_2d_ceil_last_window_starts_on_pad",
     "its expected values are PyTorch's printed to 4 decimals (0.1511 for 1.3595 / 9 = 0.151056)"},
};

/* Supported ops that no node test case (in scope) covers, and why. */
static const struct {
    const char *op;
    const char *why;
} no_node_case[] = {
    {"Cast", "every Cast case of onnx 1.23 casts from or to a type rltune does not read (FLOAT16, DOUBLE, "
             "FLOAT8E4M3FN, ...); test_graph_eval.c and test_graph_onnx.c check Cast"},
};

/* ---- lists of names ----------------------------------------------------------- */

typedef struct name_list {
    int n, cap;
    char **items;
} name_list;

static void list_add(name_list *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void list_add(name_list *l, const char *fmt, ...)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->items = realloc(l->items, (size_t)l->cap * sizeof *l->items);
        cr_assert_not_null(l->items);
    }
    va_list ap;
    va_start(ap, fmt);
    char buf[2048];
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    l->items[l->n] = strdup(buf);
    cr_assert_not_null(l->items[l->n]);
    l->n++;
}

static void list_free(name_list *l)
{
    for (int i = 0; i < l->n; i++) free(l->items[i]);
    free(l->items);
    memset(l, 0, sizeof *l);
}

/* Prints "title (N):" and the items, several short ones to a line. */
static void list_print(const char *title, const name_list *l, bool one_per_line)
{
    fprintf(stderr, "%s (%d):\n", title, l->n);
    int col = 0;
    for (int i = 0; i < l->n; i++) {
        int len = (int)strlen(l->items[i]);
        if (one_per_line || (col > 0 && col + len + 1 > 110)) {
            if (col > 0) fputc('\n', stderr);
            col = 0;
        }
        fprintf(stderr, "%s%s", col ? " " : "  ", l->items[i]);
        col += len + (col ? 1 : 2);
        if (one_per_line) {
            fputc('\n', stderr);
            col = 0;
        }
    }
    if (col > 0) fputc('\n', stderr);
}

/* Formats into buf, cutting what does not fit (messages may be long). */
static void say(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void say(char *buf, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
}

/* ---- files ----------------------------------------------------------------------- */

/* The file's bytes (free with free), or NULL when it cannot be read. */
static unsigned char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *data = NULL;
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        data = malloc((size_t)size + 1);
        if (data && fread(data, 1, (size_t)size, f) != (size_t)size) {
            free(data);
            data = NULL;
        }
    }
    fclose(f);
    *len = (size_t)(size < 0 ? 0 : size);
    return data;
}

static bool is_dir(const char *path)
{
    struct stat s;
    return stat(path, &s) == 0 && S_ISDIR(s.st_mode);
}

static bool is_file(const char *path)
{
    struct stat s;
    return stat(path, &s) == 0 && S_ISREG(s.st_mode);
}

static int not_hidden(const struct dirent *e) { return e->d_name[0] != '.'; }

/* ---- comparing ----------------------------------------------------------------- */

/* Distance in ulps between two finite floats of the same sign (or zeros). */
static int64_t ulps_apart(float a, float b)
{
    int32_t ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    if (ia < 0) ia = (int32_t)(0x80000000u - (uint32_t)ia);
    if (ib < 0) ib = (int32_t)(0x80000000u - (uint32_t)ib);
    return llabs((int64_t)ia - (int64_t)ib);
}

/* Ours: 1e-7 + 1e-5 |want|, or 4 ulps; ONNX's own (is_loose): numpy's
 * assert_allclose with rtol 1e-3, atol 1e-7. */
static bool f32_close(float got, float want, bool is_loose)
{
    if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
    if (isinf(want) || isinf(got)) return got == want;
    double diff = fabs((double)got - (double)want);
    if (is_loose) return diff <= 1e-7 + 1e-3 * fabs((double)want);
    return diff <= 1e-7 + 1e-5 * fabs((double)want) || ulps_apart(got, want) <= 4;
}

static void shape_str(const rlt_graph_tensor *t, char *buf, size_t cap)
{
    size_t len = (size_t)snprintf(buf, cap, "%s[", rlt_dtype_str(t->dtype));
    for (int d = 0; d < t->rank && len < cap; d++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%ld", d ? "," : "", (long)t->dims[d]);
    if (len < cap) snprintf(buf + len, cap - len, "]");
}

static bool same_shape(const rlt_graph_tensor *a, const rlt_graph_tensor *b)
{
    if (a->dtype != b->dtype || a->rank != b->rank) return false;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d]) return false;
    return true;
}

/* Compares output `what` with the expected tensor; false and a reason in
 * `why` when they differ. */
static bool output_matches(const rlt_graph_tensor *got_t, const void *got, const rlt_graph_tensor *want, bool is_loose,
                           char *why, size_t cap, const char *what)
{
    char gs[128], ws[128];
    shape_str(got_t, gs, sizeof gs);
    shape_str(want, ws, sizeof ws);
    if (!same_shape(got_t, want)) {
        say(why, cap, "%s is %s; expected %s", what, gs, ws);
        return false;
    }
    int64_t n = rlt_graph_tensor_n_elems(want);
    for (int64_t i = 0; i < n; i++) {
        bool ok;
        char gv[64], wv[64];
        switch (want->dtype) {
        case RLT_DTYPE_FLOAT32: {
            float g = ((const float *)got)[i], w = ((const float *)want->data)[i];
            ok = f32_close(g, w, is_loose);
            snprintf(gv, sizeof gv, "%.9g", g);
            snprintf(wv, sizeof wv, "%.9g", w);
            break;
        }
        case RLT_DTYPE_INT64: {
            int64_t g = ((const int64_t *)got)[i], w = ((const int64_t *)want->data)[i];
            ok = g == w;
            snprintf(gv, sizeof gv, "%lld", (long long)g);
            snprintf(wv, sizeof wv, "%lld", (long long)w);
            break;
        }
        case RLT_DTYPE_INT32: {
            int32_t g = ((const int32_t *)got)[i], w = ((const int32_t *)want->data)[i];
            ok = g == w;
            snprintf(gv, sizeof gv, "%d", g);
            snprintf(wv, sizeof wv, "%d", w);
            break;
        }
        default: {
            unsigned g = ((const unsigned char *)got)[i], w = ((const unsigned char *)want->data)[i];
            ok = (g != 0) == (w != 0);
            snprintf(gv, sizeof gv, "%u", g);
            snprintf(wv, sizeof wv, "%u", w);
            break;
        }
        }
        if (!ok) {
            say(why, cap, "%s %s: element %lld is %s; expected %s", what, ws, (long long)i, gv, wv);
            return false;
        }
    }
    return true;
}

/* ---- one case ------------------------------------------------------------------ */

typedef enum outcome {
    OUT_OTHER_OPS,  /* uses an op rltune does not support: not counted */
    OUT_SKIP_OPSET, /* all ops supported, but the opset is out of scope */
    OUT_PASSED,
    OUT_REFUSED,    /* refused at load as documented */
    OUT_FAILED,
} outcome;

typedef struct case_result {
    outcome outcome;
    int opset;          /* the model's own */
    bool is_retargeted; /* run at OPSET_MAX instead of its own opset */
    char detail[1200];  /* the failure, the refusal, or why it was skipped */
    int n_bound;        /* graph inputs bound to the data set's values (run_set) */
    char bound[200];    /* their names, comma-separated */
    int n_ops;
    char ops[8][32];    /* its distinct op types */
} case_result;

static bool is_supported(const char *domain, const char *op)
{
    if (strcmp(op, "Gelu") == 0 && strcmp(domain, "com.microsoft") == 0) return true;
    if (domain[0] && strcmp(domain, "ai.onnx") != 0) return false;
    for (int i = 0; i < N_SUPPORTED; i++)
        if (strcmp(supported_ops[i], op) == 0) return true;
    return false;
}

static void free_values(rlt_graph_tensor *t, int n)
{
    for (int i = 0; i < n; i++) rlt_free(t[i].data);
}

/* Reads test_data_set_N/<kind>_K.pb for K = 0.. into t (at most MAX_IO);
 * their number in *n. False and a reason when one cannot be read. */
static bool read_values(const char *set_dir, const char *kind, rlt_graph_tensor *t, int *n, char *why, size_t cap)
{
    *n = 0;
    for (int k = 0; k < MAX_IO; k++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s_%d.pb", set_dir, kind, k);
        if (!is_file(path)) break;
        size_t len = 0;
        unsigned char *bytes = read_file(path, &len);
        if (!bytes) {
            say(why, cap, "cannot read %s: %s", path, strerror(errno));
            return false;
        }
        rlt_diag d = {0};
        rlt_status st = rlt_graph_tensor_decode_onnx(bytes, len, path, &t[k], &d);
        free(bytes);
        if (st != RLT_STATUS_OK) {
            say(why, cap, "%s", d.message);
            return false;
        }
        (*n)++;
    }
    return true;
}

/* Runs one data set on a loaded case: the data set's inputs but those bound
 * into the model (is_bound, by the model's input index) are fed; false and
 * a reason on a mismatch. */
static bool run_data_set(const rlt_graph *g, const char *set_dir, const bool *is_bound, bool is_loose, char *why,
                         size_t cap)
{
    rlt_graph_tensor ins[MAX_IO], want[MAX_IO];
    int n_in = 0, n_want = 0;
    void *outs[MAX_IO] = {NULL};
    bool ok = false;
    if (!read_values(set_dir, "input", ins, &n_in, why, cap)) goto cleanup;
    if (!read_values(set_dir, "output", want, &n_want, why, cap)) goto cleanup;
    const rlt_graph_tensor *fed[MAX_IO];
    int n_fed = 0;
    for (int i = 0; i < n_in; i++)
        if (!is_bound[i]) fed[n_fed++] = &ins[i];
    if (n_fed != g->n_inputs || n_want != g->n_outputs) {
        say(why, cap, "the graph has %d inputs and %d outputs; the data set %d and %d", g->n_inputs, g->n_outputs,
            n_fed, n_want);
        goto cleanup;
    }
    const void *in_data[MAX_IO];
    for (int i = 0; i < n_fed; i++) {
        const rlt_graph_tensor *gi = &g->tensors[g->inputs[i]];
        if (!same_shape(gi, fed[i])) {
            char gs[128], ws[128];
            shape_str(gi, gs, sizeof gs);
            shape_str(fed[i], ws, sizeof ws);
            say(why, cap, "graph input %d ('%s') is %s; the data set gives %s", i, gi->name, gs, ws);
            goto cleanup;
        }
        in_data[i] = fed[i]->data;
    }
    rlt_diag d = {0};
    rlt_status st = rlt_graph_eval(g, n_fed, in_data, n_want, outs, &d);
    if (st != RLT_STATUS_OK) {
        say(why, cap, "evaluation failed: %s", d.message);
        goto cleanup;
    }
    for (int o = 0; o < n_want; o++) {
        const rlt_graph_tensor *go = &g->tensors[g->outputs[o]];
        char what[200];
        snprintf(what, sizeof what, "output %d ('%s')", o, go->name);
        if (!output_matches(go, outs[o], &want[o], is_loose, why, cap, what)) goto cleanup;
    }
    ok = true;
cleanup:
    for (int o = 0; o < MAX_IO; o++) rlt_free(outs[o]);
    free_values(want, n_want);
    free_values(ins, n_in);
    return ok;
}

/* The model with the graph inputs marked in is_bound turned into
 * initializers holding the data set's values for them (free with free). */
static unsigned char *pack_bound(Onnx__ModelProto *m, const char *set_dir, const bool *is_bound, size_t *len)
{
    Onnx__GraphProto *gp = m->graph;
    Onnx__GraphProto graph = *gp;
    Onnx__ModelProto model = *m;
    model.graph = &graph;
    Onnx__ValueInfoProto *inputs[MAX_IO];
    Onnx__TensorProto **inits = calloc(gp->n_initializer + MAX_IO + 1, sizeof *inits);
    Onnx__TensorProto *bound[MAX_IO] = {NULL};
    char *names[MAX_IO] = {NULL};
    cr_assert_not_null(inits);
    graph.n_input = 0;
    graph.input = inputs;
    graph.initializer = inits;
    if (gp->n_initializer) memcpy(inits, gp->initializer, gp->n_initializer * sizeof *inits);
    for (size_t i = 0; i < gp->n_input && i < MAX_IO; i++) {
        if (!is_bound[i]) {
            inputs[graph.n_input++] = gp->input[i];
            continue;
        }
        char path[4600];
        snprintf(path, sizeof path, "%s/input_%zu.pb", set_dir, i);
        size_t n = 0;
        unsigned char *bytes = read_file(path, &n);
        cr_assert_not_null(bytes, "cannot read %s", path);
        bound[i] = onnx__tensor_proto__unpack(NULL, n, bytes);
        free(bytes);
        cr_assert_not_null(bound[i], "%s is not a TensorProto", path);
        names[i] = bound[i]->name;
        bound[i]->name = gp->input[i]->name;
        inits[graph.n_initializer++] = bound[i];
    }
    *len = onnx__model_proto__get_packed_size(&model);
    unsigned char *out = malloc(*len + 1);
    cr_assert_not_null(out);
    cr_assert_eq(onnx__model_proto__pack(&model, out), *len);
    for (int i = 0; i < MAX_IO; i++)
        if (bound[i]) {
            bound[i]->name = names[i];
            onnx__tensor_proto__free_unpacked(bound[i], NULL);
        }
    free(inits);
    return out;
}

/* The graph input that a refusal says must be a constant ("input 1 ('s',
 * the shape) is not a constant"), by its index in the model, or -1. */
static int refused_input(const Onnx__ModelProto *m, const char *message)
{
    if (!strstr(message, "is not a constant") && !strstr(message, "must be a constant")) return -1;
    const char *open = strstr(message, "('");
    if (!open) return -1;
    open += 2;
    const char *close = strchr(open, '\'');
    if (!close) return -1;
    for (size_t i = 0; i < m->graph->n_input && i < MAX_IO; i++) {
        const char *name = m->graph->input[i]->name ? m->graph->input[i]->name : "";
        if (strlen(name) == (size_t)(close - open) && strncmp(name, open, (size_t)(close - open)) == 0) return (int)i;
    }
    return -1;
}

/* Loads the model for one data set and runs it. The ops that take shapes,
 * axes, starts or sizes as inputs need them constant (rltune's graphs have
 * static shapes), while ONNX's cases feed them: each input a refusal names
 * as not constant is bound to the data set's value as an initializer, and
 * the model loaded again. */
static void run_set(Onnx__ModelProto *m, const unsigned char *bytes, size_t len, const char *path, const char *set_dir,
                    const char *name, bool bind_all, case_result *r)
{
    bool is_bound[MAX_IO] = {false};
    for (size_t i = 0; bind_all && i < m->graph->n_input; i++) is_bound[i] = true;
    const char *mode = bind_all ? " [every input a constant]" : "";
    rlt_graph *g = NULL;
    for (;;) {
        unsigned char *packed = NULL;
        size_t packed_len = len;
        if (r->is_retargeted || r->n_bound > 0 || bind_all) packed = pack_bound(m, set_dir, is_bound, &packed_len);
        rlt_diag d = {0};
        rlt_status st = rlt_graph_load_onnx_bytes(packed ? packed : bytes, packed_len, path, &g, &d);
        free(packed);
        if (st == RLT_STATUS_OK) break;
        cr_assert_null(g);
        int k = refused_input(m, d.message);
        if (k >= 0 && !is_bound[k]) {
            is_bound[k] = true;
            r->n_bound++;
            snprintf(r->bound + strlen(r->bound), sizeof r->bound - strlen(r->bound), "%s%s", r->n_bound > 1 ? "," : "",
                     m->graph->input[k]->name);
            continue;
        }
        const char *why = NULL;
        for (size_t i = 0; i < sizeof documented_refusals / sizeof *documented_refusals; i++)
            if (strstr(d.message, documented_refusals[i].needle)) why = documented_refusals[i].why;
        size_t plen = strlen(path);
        bool names_file = strncmp(d.message, path, plen) == 0 && strncmp(d.message + plen, ": ", 2) == 0;
        if (st == RLT_STATUS_INVALID_ARGUMENT && why && names_file && !bind_all) {
            r->outcome = OUT_REFUSED;
            say(r->detail, sizeof r->detail, "%s [%s]: %s", name, why, d.message + plen + 2);
        } else {
            r->outcome = OUT_FAILED;
            say(r->detail, sizeof r->detail, "%s%s: load failed (%s%s): %s", name, mode, rlt_status_str(st),
                why ? ", the message does not start with the file" : ", not a documented refusal", d.message);
        }
        return;
    }
    char why[1000] = "";
    bool is_loose = false;
    for (size_t i = 0; i < sizeof loose_cases / sizeof *loose_cases; i++)
        is_loose |= strcmp(loose_cases[i].name, name) == 0;
    if (!run_data_set(g, set_dir, is_bound, is_loose, why, sizeof why)) {
        r->outcome = OUT_FAILED;
        say(r->detail, sizeof r->detail, "%s%s (%s): %s", name, mode, strrchr(set_dir, '/') + 1, why);
    }
    rlt_graph_destroy(g);
}

static void run_case(const char *root, const char *name, case_result *r)
{
    memset(r, 0, sizeof *r);
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    size_t len = 0;
    unsigned char *bytes = read_file(path, &len);
    if (!bytes) {
        r->outcome = OUT_FAILED;
        say(r->detail, sizeof r->detail, "cannot read %s", path);
        return;
    }
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, bytes);
    if (!m || !m->graph) {
        r->outcome = OUT_FAILED;
        say(r->detail, sizeof r->detail, "%s is not an ONNX model", path);
        if (m) onnx__model_proto__free_unpacked(m, NULL);
        free(bytes);
        return;
    }
    /* Which ops, which opset, and whether a newer one can be read at 17. */
    bool all_supported = true;
    char blocked[200] = "";
    for (size_t i = 0; i < m->graph->n_node; i++) {
        const Onnx__NodeProto *n = m->graph->node[i];
        const char *op = n->op_type ? n->op_type : "", *domain = n->domain ? n->domain : "";
        if (!is_supported(domain, op)) all_supported = false;
        for (size_t k = 0; k < sizeof retarget_blocked / sizeof *retarget_blocked; k++)
            if (strcmp(op, retarget_blocked[k]) == 0) snprintf(blocked, sizeof blocked, "%s", op);
        for (size_t a = 0; a < n->n_attribute; a++)
            for (size_t k = 0; k < sizeof later_attrs / sizeof *later_attrs; k++) {
                const Onnx__AttributeProto *at = n->attribute[a];
                const char *want = later_attrs[k].value;
                if (strcmp(op, later_attrs[k].op) != 0 || !at->name || strcmp(at->name, later_attrs[k].attr) != 0)
                    continue;
                if (!want) snprintf(blocked, sizeof blocked, "%s's %s", op, later_attrs[k].attr);
                else if (at->s.len == strlen(want) && memcmp(at->s.data, want, at->s.len) == 0)
                    snprintf(blocked, sizeof blocked, "%s's %s=%s", op, later_attrs[k].attr, want);
            }
        for (size_t k = 0; k < sizeof later_inputs / sizeof *later_inputs; k++)
            if (strcmp(op, later_inputs[k].op) == 0 && n->n_input > later_inputs[k].index &&
                n->input[later_inputs[k].index][0])
                snprintf(blocked, sizeof blocked, "%s's %s input", op, later_inputs[k].name);
        bool seen = false;
        for (int k = 0; k < r->n_ops; k++) seen |= strcmp(r->ops[k], op) == 0;
        if (!seen && r->n_ops < 8) snprintf(r->ops[r->n_ops++], sizeof r->ops[0], "%s", op);
    }
    Onnx__OperatorSetIdProto *opset = NULL;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        Onnx__OperatorSetIdProto *o = m->opset_import[i];
        if (!o->domain || !o->domain[0] || strcmp(o->domain, "ai.onnx") == 0) opset = o;
    }
    r->opset = opset && opset->has_version ? (int)opset->version : 0;
    if (!all_supported) {
        r->outcome = OUT_OTHER_OPS;
        goto cleanup;
    }
    if (m->graph->n_input > MAX_IO || m->graph->n_output > MAX_IO) {
        r->outcome = OUT_FAILED;
        say(r->detail, sizeof r->detail, "%s: more than %d inputs or outputs", name, MAX_IO);
        goto cleanup;
    }
    if (r->opset < OPSET_MIN || (r->opset > OPSET_MAX && blocked[0])) {
        r->outcome = OUT_SKIP_OPSET;
        say(r->detail, sizeof r->detail, "%s(%d%s%s)", name, r->opset, blocked[0] ? ": " : "", blocked);
        goto cleanup;
    }
    if (r->opset > OPSET_MAX) {
        opset->version = OPSET_MAX;
        r->is_retargeted = true;
    }
    /* Every data set; then, once they pass, again with every input bound
     * as a constant, so that the importer folds the ops it folds (infer.c)
     * and the folded values are checked too. */
    struct dirent **sets = NULL;
    int n_sets = scandir(dir, &sets, not_hidden, alphasort);
    int n_run = 0;
    r->outcome = OUT_PASSED;
    for (int pass = 0; pass < 2; pass++)
        for (int s = 0; s < n_sets; s++) {
            char set_dir[4400];
            snprintf(set_dir, sizeof set_dir, "%s/%s", dir, sets[s]->d_name);
            if (r->outcome == OUT_PASSED && strncmp(sets[s]->d_name, "test_data_set_", 14) == 0 && is_dir(set_dir)) {
                n_run++;
                run_set(m, bytes, len, path, set_dir, name, pass == 1, r);
            }
        }
    for (int s = 0; s < n_sets; s++) free(sets[s]);
    free(sets);
    if (r->outcome == OUT_PASSED && n_run == 0) {
        r->outcome = OUT_FAILED;
        say(r->detail, sizeof r->detail, "%s: no test_data_set_N folder", name);
    }
cleanup:
    onnx__model_proto__free_unpacked(m, NULL);
    free(bytes);
}

/* ---- the suite ------------------------------------------------------------------- */

Test(graph_node_tests, onnx_node_cases, .timeout = 600)
{
    const char *root = RLTUNE_ONNX_NODE_TESTS_DIR;
    cr_assert(root[0] && is_dir(root),
              "ONNX's node test cases are not there ('%s'): CMake looks for them in the onnx wheel of .venv "
              "(scripts/install-deps.sh makes it), as onnx/backend/test/data/node or written into the build tree by "
              "tests/common/write_onnx_node_tests.py; make .venv and reconfigure",
              root);
    struct dirent **entries = NULL;
    int n_entries = scandir(root, &entries, not_hidden, alphasort);
    cr_assert(n_entries > 0, "cannot list '%s' or it is empty", root);

    name_list passed = {0}, retargeted = {0}, refused = {0}, skipped = {0}, failed = {0};
    int n_other = 0, n_cases = 0, n_bound_cases = 0;
    int op_passes[N_SUPPORTED] = {0};
    case_result *r = malloc(sizeof *r);
    cr_assert_not_null(r);
    for (int e = 0; e < n_entries; e++) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", root, entries[e]->d_name);
        if (!is_dir(dir)) {
            free(entries[e]);
            continue;
        }
        n_cases++;
        run_case(root, entries[e]->d_name, r);
        const char *name = entries[e]->d_name;
        switch (r->outcome) {
        case OUT_OTHER_OPS: n_other++; break;
        case OUT_SKIP_OPSET: list_add(&skipped, "%s", r->detail); break;
        case OUT_REFUSED: list_add(&refused, "%s", r->detail); break;
        case OUT_FAILED: list_add(&failed, "%s", r->detail); break;
        case OUT_PASSED:
            if (r->is_retargeted) list_add(&retargeted, "%s(%d)%s%s%s", name, r->opset, r->n_bound ? "{" : "", r->bound,
                                           r->n_bound ? "}" : "");
            else list_add(&passed, "%s%s%s%s", name, r->n_bound ? "{" : "", r->bound, r->n_bound ? "}" : "");
            n_bound_cases += r->n_bound > 0;
            for (int k = 0; k < r->n_ops; k++)
                for (int s = 0; s < N_SUPPORTED; s++)
                    if (strcmp(r->ops[k], supported_ops[s]) == 0) op_passes[s]++;
            break;
        }
        free(entries[e]);
    }
    free(entries);
    free(r);

    int n_run = passed.n + retargeted.n + refused.n + failed.n;
    fprintf(stderr,
            "ONNX node tests in %s: %d cases; %d use ops rltune does not support; %d run: %d passed at their own "
            "opset, %d passed at opset %d (their own is newer: the op did not change), %d refused as documented, "
            "%d failed; %d skipped by opset. {names}: graph inputs bound to the data set's values as constants "
            "(rltune needs static shapes): %d of the passed cases\n",
            root, n_cases, n_other, n_run, passed.n, retargeted.n, OPSET_MAX, refused.n, failed.n, skipped.n,
            n_bound_cases);
    list_print("passed at their own opset", &passed, false);
    list_print("passed at opset 17 (their own opset in parentheses)", &retargeted, false);
    list_print("refused as documented", &refused, true);
    list_print("skipped by opset (rltune reads 9 to 17; a newer case runs at 17 unless an op changed after 17: "
               "ReduceMean, Split, or an attribute or input added later)", &skipped, false);
    list_print("FAILED", &failed, true);

    name_list uncovered = {0};
    for (int s = 0; s < N_SUPPORTED; s++) {
        if (op_passes[s] > 0) continue;
        bool excused = false;
        for (size_t k = 0; k < sizeof no_node_case / sizeof *no_node_case; k++)
            if (strcmp(no_node_case[k].op, supported_ops[s]) == 0) {
                fprintf(stderr, "no passing node case for %s: %s\n", supported_ops[s], no_node_case[k].why);
                excused = true;
            }
        if (!excused) list_add(&uncovered, "%s", supported_ops[s]);
    }
    int n_passed = passed.n + retargeted.n, n_failed = failed.n;
    char first_uncovered[64] = "";
    if (uncovered.n) snprintf(first_uncovered, sizeof first_uncovered, "%s", uncovered.items[0]);
    int n_uncovered = uncovered.n;
    list_free(&uncovered);
    list_free(&passed);
    list_free(&retargeted);
    list_free(&refused);
    list_free(&skipped);
    list_free(&failed);
    assert_no_leaks();
    cr_expect_eq(n_failed, 0, "%d ONNX node test cases failed (listed above)", n_failed);
    cr_expect_geq(n_passed, MIN_PASSED, "only %d ONNX node test cases passed; at least %d must", n_passed, MIN_PASSED);
    cr_expect_eq(n_uncovered, 0, "%d supported ops (%s first) pass no node test case", n_uncovered, first_uncovered);
}
