/*
 * export.c - writes a scheduled op's kernel as a stand-alone C library
 * (export.h): rlt_export_name picks the library's name from the op,
 * rlt_export_kernel generates the kernel and the op's reference, writes
 * NAME.c, NAME.h, example.c and the Makefile, and compiles libNAME.so.
 *
 * The generated kernel keeps the kernel ABI (codegen.h); the wrappers give
 * it a signature with one named pointer per tensor, so a caller needs
 * neither rltune's headers nor the ABI's tensor array. The example checks
 * the library with the same tolerance the runner uses (measure.h), against
 * the reference kernel rltune itself trusts, so "OK" means what a
 * measurement's OK means.
 */
#include "export/export.h"

#include <errno.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

extern char **environ;

#define MAX_COMPILER_WORDS 64

static void append_value_chars(char *out, size_t cap, size_t *used, const char *s, size_t n)
{
    for (size_t i = 0; i < n && *used + 1 < cap; i++) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) c = '_';
        out[(*used)++] = c;
    }
    out[*used] = '\0';
}

void rlt_export_name(const rlt_op *op, char *out, size_t cap)
{
    size_t used = 0;
    RLT_ASSERT(cap > 0);
    out[0] = '\0';
    append_value_chars(out, cap, &used, "rltune_", 7);
    append_value_chars(out, cap, &used, op->kind, strlen(op->kind));
    append_value_chars(out, cap, &used, "_", 1);
    bool is_first = true;
    if (strcmp(op->kind, "expr") == 0) {
        for (int a = 0; a < op->n_axes; a++) {
            char v[32];
            int n = snprintf(v, sizeof v, "%s%" PRId64, is_first ? "" : "x", op->axes[a].extent);
            append_value_chars(out, cap, &used, v, (size_t)n);
            is_first = false;
        }
        return;
    }
    /* a built-in op's canonical spec: "kind:KEY=VALUE,KEY=VALUE,..." */
    const char *p = strchr(op->spec, ':');
    while (p && *p) {
        const char *eq = strchr(p, '=');
        if (!eq) break;
        const char *end = eq + 1 + strcspn(eq + 1, ",");
        if (!is_first) append_value_chars(out, cap, &used, "x", 1);
        append_value_chars(out, cap, &used, eq + 1, (size_t)(end - eq - 1));
        is_first = false;
        p = end;
    }
}

bool rlt_export_name_is_valid(const char *name)
{
    if (!name[0] || strlen(name) >= RLT_EXPORT_NAME_MAX) return false;
    if (!((name[0] >= 'a' && name[0] <= 'z') || name[0] == '_')) return false;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_')) return false;
    return true;
}

/* Appends `text` with every `from` replaced by `to`: the kernel's
 * hash-derived symbol becomes the library's own name. */
static void append_replaced(rlt_str *out, const char *text, const char *from, const char *to)
{
    size_t n_from = strlen(from);
    for (const char *p = strstr(text, from); p; p = strstr(text, from)) {
        rlt_str_appendn(out, text, (size_t)(p - text));
        rlt_str_append(out, to);
        text = p + n_from;
    }
    rlt_str_append(out, text);
}

void rlt_export_comment_lines(rlt_str *out, const char *text)
{
    while (*text) {
        size_t n = strcspn(text, "\n");
        rlt_str_append(out, " *   ");
        for (size_t i = 0; i < n; i++) {
            rlt_str_appendn(out, text + i, 1);
            if (text[i] == '*' && i + 1 < n && text[i + 1] == '/') rlt_str_append(out, " ");
        }
        rlt_str_append(out, "\n");
        text += n;
        if (*text == '\n') text++;
    }
}

/* A tensor's name as a C parameter: names that are C keywords get a '_'. */
static void param_name(const rlt_tensor *t, char *out, size_t cap)
{
    static const char *const keywords[] = {
        "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
        "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return",
        "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void",
        "volatile", "while", "bool", "true", "false", "NULL"};
    bool is_keyword = false;
    for (size_t i = 0; i < RLT_ARRAY_LEN(keywords); i++) is_keyword |= strcmp(keywords[i], t->name) == 0;
    snprintf(out, cap, "%s%s", t->name, is_keyword ? "_" : "");
}

/* "const float *A, const float *B, float *C" */
static void append_params(rlt_str *out, const rlt_op *op)
{
    for (int t = 0; t < op->n_tensors; t++) {
        char name[RLT_NAME_MAX + 2];
        param_name(&op->tensors[t], name, sizeof name);
        rlt_str_printf(out, "%s%sfloat *%s", t ? ", " : "", op->tensors[t].is_output ? "" : "const ", name);
    }
}

static void append_args(rlt_str *out, const rlt_op *op, const char *array)
{
    for (int t = 0; t < op->n_tensors; t++) {
        char name[RLT_NAME_MAX + 2];
        param_name(&op->tensors[t], name, sizeof name);
        if (array)
            rlt_str_printf(out, "%s%s[%d]", t ? ", " : "", array, t);
        else
            rlt_str_printf(out, "%s%s%s", t ? ", " : "", op->tensors[t].is_output ? "" : "(float *)", name);
    }
}

/* "const float *W, const float *bias, ": the weights, each followed by ", " */
static void append_weight_params(rlt_str *out, const rlt_op *op)
{
    for (int t = 0; t < op->n_tensors; t++) {
        if (!op->tensors[t].is_weight) continue;
        char name[RLT_NAME_MAX + 2];
        param_name(&op->tensors[t], name, sizeof name);
        rlt_str_printf(out, "const float *%s, ", name);
    }
}

/* "NULL, (float *)W, NULL": the tensor array of SYMBOL_prepare */
static void append_weight_args(rlt_str *out, const rlt_op *op)
{
    for (int t = 0; t < op->n_tensors; t++) {
        char name[RLT_NAME_MAX + 2];
        param_name(&op->tensors[t], name, sizeof name);
        if (op->tensors[t].is_weight) rlt_str_printf(out, "%s(float *)%s", t ? ", " : "", name);
        else rlt_str_printf(out, "%sNULL", t ? ", " : "");
    }
}

typedef struct export_text {
    const rlt_op *op;
    const char *name;
    const char *upper;    /* the name in upper case, for macros */
    const char *cc;
    const char *cflags;
    int n_threads;
    const char *origin;
    const char *schedule; /* printed trace */
    const rlt_kernel_src *kernel;
    const rlt_kernel_src *reference;
} export_text;

static void write_header(const export_text *x, rlt_str *s)
{
    const rlt_op *op = x->op;
    const char *n = x->name;
    rlt_str stmt;
    rlt_str_init(&stmt);
    rlt_op_print(op, &stmt);
    rlt_str_printf(s, "/*\n * %s.h - generated by rltune %s: a tuned kernel of\n *\n", n, RLTUNE_VERSION);
    rlt_export_comment_lines(s, op->spec);
    rlt_export_comment_lines(s, stmt.data ? stmt.data : "");
    if (x->origin) {
        rlt_str_append(s, " *\n * from:\n");
        rlt_export_comment_lines(s, x->origin);
    }
    rlt_str_append(s, " *\n * Tensors are dense, row-major float32 arrays, in this order:\n");
    for (int t = 0; t < op->n_tensors; t++) {
        char name[RLT_NAME_MAX + 2];
        param_name(&op->tensors[t], name, sizeof name);
        rlt_str_printf(s, " *   %-8s float", name);
        for (int k = 0; k < op->tensors[t].n_dims; k++) rlt_str_printf(s, "[%" PRId64 "]", op->tensors[t].dims[k]);
        if (op->tensors[t].is_weight) rlt_str_printf(s, "  weight: only read; %s_prepare stages it\n", n);
        else rlt_str_printf(s, "  %s\n", op->tensors[t].is_output ? "output: every element is overwritten" : "input: only read");
    }
    rlt_str_printf(s,
                   " * Pointers need no particular alignment; inputs and the output must not overlap.\n"
                   " * Built with: %s %s -std=gnu11 -fPIC -shared%s (see the Makefile).\n */\n",
                   x->cc, x->cflags, x->kernel->needs_openmp ? " -fopenmp" : "");
    rlt_str_printf(s, "#ifndef %s_H\n#define %s_H\n\n#include <stddef.h>\n\n", x->upper, x->upper);
    rlt_str_append(s, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
    rlt_str_printf(s,
                   "/* Threads %s() gives the kernel's parallel loops (the tuning run's). */\n"
                   "#define %s_THREADS %d\n\n",
                   n, x->upper, x->n_threads);
    rlt_str_printf(s,
                   "/* Computes the output from the inputs. Allocates the kernel's workspace (64-byte\n"
                   " * aligned) for the call, stages the weights into it, runs the kernel and frees\n"
                   " * it; parallel loops run on %s_THREADS threads. Returns 0, or -1 when the\n"
                   " * workspace cannot be allocated (the output is then untouched). Reentrant: calls\n"
                   " * on different outputs may run at once. For repeated calls with the same\n"
                   " * weights, prepare a workspace once and call %s_ws: the tuned time is that\n"
                   " * of %s_ws. */\n"
                   "int %s(",
                   x->upper, n, n, n);
    append_params(s, op);
    rlt_str_append(s, ");\n\n");
    rlt_str_printf(s, "/* Bytes of workspace %s_prepare and %s_ws need (may be 0). */\nsize_t %s_workspace_bytes(void);\n\n",
                   n, n, n);
    rlt_str_printf(s,
                   "/* Stages the weights (packs and pads them as the schedule says) into `workspace`:\n"
                   " * caller-owned, 64-byte aligned, at least %s_workspace_bytes() long (NULL when\n"
                   " * that is 0). Call it once, and again whenever the weights change; it does\n"
                   " * nothing when the schedule stages no weight. */\n"
                   "void %s_prepare(",
                   n, n);
    append_weight_params(s, op);
    rlt_str_append(s, "void *workspace, int n_threads);\n\n");
    rlt_str_printf(s,
                   "/* Computes the output with a workspace that %s_prepare filled from the same\n"
                   " * weights, allocating nothing; one call at a time per workspace; parallel loops\n"
                   " * run on n_threads threads (< 1: one). This is the call the tuner timed. */\n"
                   "void %s_ws(",
                   n, n);
    append_params(s, op);
    rlt_str_append(s, ", void *workspace, int n_threads);\n\n");
    rlt_str_printf(s,
                   "/* The kernel itself, with rltune's kernel ABI (docs/formats.md): `tensors` holds\n"
                   " * the tensors above in order. */\n"
                   "size_t %s_kernel_workspace_bytes(void);\n"
                   "void %s_kernel_prepare(float *const *tensors, void *workspace, int n_threads);\n"
                   "void %s_kernel(float *const *tensors, void *workspace, int n_threads);\n\n",
                   n, n, n);
    rlt_str_printf(s, "#ifdef __cplusplus\n}\n#endif\n\n#endif /* %s_H */\n", x->upper);
    if (stmt.has_failed) s->has_failed = true;
    rlt_str_free(&stmt);
}

static void write_source(const export_text *x, rlt_str *s)
{
    const char *n = x->name;
    char kernel_name[RLT_EXPORT_NAME_MAX + 16];
    snprintf(kernel_name, sizeof kernel_name, "%s_kernel", n);
    rlt_str_printf(s, "/*\n * %s.c - generated by rltune %s: the kernel of\n", n, RLTUNE_VERSION);
    rlt_export_comment_lines(s, x->op->spec);
    rlt_str_append(s, " * under the schedule\n");
    rlt_export_comment_lines(s, x->schedule);
    rlt_str_append(s, " * and the wrappers declared in the header.\n */\n");
    rlt_str_append(s, rlt_codegen_preamble());
    rlt_str_printf(s, "#include <stdlib.h>\n\n#include \"%s.h\"\n\n", n);
    append_replaced(s, x->kernel->code, x->kernel->symbol, kernel_name);
    rlt_str_printf(s, "\nsize_t %s_workspace_bytes(void) { return %s_kernel_workspace_bytes(); }\n\n", n, n);
    rlt_str_printf(s, "void %s_prepare(", n);
    append_weight_params(s, x->op);
    rlt_str_append(s, "void *workspace, int n_threads)\n{\n");
    rlt_str_append(s, "    /* the kernel only reads the weights: casting const away is safe */\n");
    rlt_str_append(s, "    float *const rlt_tensors[] = {");
    append_weight_args(s, x->op);
    rlt_str_printf(s, "};\n    %s_kernel_prepare(rlt_tensors, workspace, n_threads);\n}\n\n", n);
    rlt_str_printf(s, "void %s_ws(", n);
    append_params(s, x->op);
    rlt_str_append(s, ", void *workspace, int n_threads)\n{\n");
    rlt_str_append(s, "    /* the kernel never writes its inputs: casting const away is safe */\n");
    rlt_str_append(s, "    float *const rlt_tensors[] = {");
    append_args(s, x->op, NULL);
    rlt_str_printf(s, "};\n    %s_kernel(rlt_tensors, workspace, n_threads);\n}\n\n", n);
    rlt_str_printf(s, "int %s(", n);
    append_params(s, x->op);
    rlt_str_printf(s,
                   ")\n{\n"
                   "    size_t rlt_bytes = %s_kernel_workspace_bytes();\n"
                   "    void *rlt_workspace = NULL;\n"
                   "    if (rlt_bytes > 0) {\n"
                   "        /* aligned_alloc wants a multiple of the alignment */\n"
                   "        rlt_workspace = aligned_alloc(64, (rlt_bytes + 63) / 64 * 64);\n"
                   "        if (!rlt_workspace) return -1;\n"
                   "    }\n"
                   "    %s_prepare(",
                   n, n);
    for (int t = 0; t < x->op->n_tensors; t++) {
        if (!x->op->tensors[t].is_weight) continue;
        char name[RLT_NAME_MAX + 2];
        param_name(&x->op->tensors[t], name, sizeof name);
        rlt_str_printf(s, "%s, ", name);
    }
    rlt_str_printf(s, "rlt_workspace, %s_THREADS);\n    %s_ws(", x->upper, n);
    for (int t = 0; t < x->op->n_tensors; t++) {
        char name[RLT_NAME_MAX + 2];
        param_name(&x->op->tensors[t], name, sizeof name);
        rlt_str_printf(s, "%s, ", name);
    }
    rlt_str_printf(s, "rlt_workspace, %s_THREADS);\n    free(rlt_workspace);\n    return 0;\n}\n", x->upper);
}

static void write_example(const export_text *x, rlt_str *s)
{
    const rlt_op *op = x->op;
    const char *n = x->name;
    char ref_name[RLT_EXPORT_NAME_MAX + 16];
    snprintf(ref_name, sizeof ref_name, "%s_reference", n);
    rlt_str_printf(s,
                   "/*\n * example.c - generated by rltune %s: calls %s() on inputs filled from a\n"
                   " * fixed seed and checks its output against the op's reference, plain loops in\n"
                   " * double precision generated from the op's expression:\n",
                   RLTUNE_VERSION, n);
    rlt_str stmt;
    rlt_str_init(&stmt);
    rlt_op_print(op, &stmt);
    rlt_export_comment_lines(s, stmt.data ? stmt.data : "");
    rlt_str_free(&stmt);
    rlt_str_append(s,
                   " * An element passes when |out - ref| <= 16 * sqrt(R + 1) * FLT_EPSILON * magnitude\n"
                   " * + FLT_MIN (R: the reduction's size; magnitude: the sum of the terms' absolute\n"
                   " * values), the tolerance rltune's own measurements use. Prints \"max relative\n"
                   " * error ... OK\" and exits 0, or \"FAILED\" and exits 1. Build and run: make run\n */\n");
    rlt_str_append(s, rlt_codegen_preamble());
    rlt_str_printf(s, "#include <float.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n\n"
                      "#include \"%s.h\"\n\n",
                   n);
    append_replaced(s, x->reference->code, x->reference->symbol, ref_name);
    rlt_str_append(s,
                   "\n/* uniform in [-1, 1) from a 64-bit LCG: the same numbers on every machine */\n"
                   "static void fill(float *x, size_t n, uint64_t seed)\n{\n"
                   "    uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;\n"
                   "    for (size_t i = 0; i < n; i++) {\n"
                   "        state = state * 6364136223846793005ull + 1442695040888963407ull;\n"
                   "        x[i] = (float)((double)(state >> 40) / (double)(1 << 24) * 2.0 - 1.0);\n"
                   "    }\n}\n\n");
    rlt_str_printf(s, "int main(void)\n{\n    enum { N_TENSORS = %d };\n    static const size_t sizes[N_TENSORS] = {",
                   op->n_tensors);
    for (int t = 0; t < op->n_tensors; t++)
        rlt_str_printf(s, "%s%" PRId64, t ? ", " : "", rlt_op_tensor_size(op, t));
    rlt_str_printf(s,
                   "};\n"
                   "    const size_t n_out = sizes[N_TENSORS - 1];\n"
                   "    const double reduce_size = %" PRId64 ";\n"
                   "    int rc = 1;\n"
                   "    float *t[N_TENSORS] = {0};\n"
                   "    double *ref = malloc(n_out * sizeof *ref), *mag = malloc(n_out * sizeof *mag);\n"
                   "    for (int i = 0; i < N_TENSORS; i++) {\n"
                   "        t[i] = malloc(sizes[i] * sizeof(float));\n"
                   "        if (!t[i]) goto done;\n"
                   "        fill(t[i], sizes[i], (uint64_t)i + 1);\n"
                   "    }\n"
                   "    if (!ref || !mag) goto done;\n"
                   "    /* NaN in the output first: an element the kernel forgets fails the check */\n"
                   "    for (size_t e = 0; e < n_out; e++) t[N_TENSORS - 1][e] = NAN;\n"
                   "    if (%s(",
                   rlt_op_reduce_size(op), n);
    append_args(s, op, "t");
    rlt_str_printf(s,
                   ") != 0) {\n"
                   "        fprintf(stderr, \"%s: cannot allocate the workspace\\n\");\n"
                   "        goto done;\n"
                   "    }\n"
                   "    %s((const float *const *)t, ref, mag);\n"
                   "    const double limit = 16.0 * sqrt(reduce_size + 1.0) * FLT_EPSILON;\n"
                   "    double max_rel = 0.0;\n"
                   "    size_t n_bad = 0, first_bad = 0;\n"
                   "    for (size_t e = 0; e < n_out; e++) {\n"
                   "        double err = fabs((double)t[N_TENSORS - 1][e] - ref[e]);\n"
                   "        double rel = err / (mag[e] > FLT_MIN ? mag[e] : FLT_MIN);\n"
                   "        if (!(err <= limit * mag[e] + FLT_MIN)) {\n"
                   "            if (n_bad++ == 0) first_bad = e;\n"
                   "        }\n"
                   "        if (!(rel <= max_rel)) max_rel = rel;\n"
                   "    }\n"
                   "    if (n_bad == 0) {\n"
                   "        printf(\"%s: %%zu outputs, max relative error %%.3g (limit %%.3g): OK\\n\",\n"
                   "               n_out, max_rel, limit);\n"
                   "        rc = 0;\n"
                   "    } else {\n"
                   "        printf(\"%s: max relative error %%.3g (limit %%.3g): FAILED, \"\n"
                   "               \"%%zu of %%zu outputs wrong, the first at %%zu: %%.9g, expected %%.9g\\n\",\n"
                   "               max_rel, limit, n_bad, n_out, first_bad,\n"
                   "               (double)t[N_TENSORS - 1][first_bad], ref[first_bad]);\n"
                   "    }\n"
                   "done:\n"
                   "    for (int i = 0; i < N_TENSORS; i++) free(t[i]);\n"
                   "    free(ref);\n"
                   "    free(mag);\n"
                   "    return rc;\n"
                   "}\n",
                   n, ref_name, n, n);
}

static void write_makefile(const export_text *x, rlt_str *s)
{
    const char *n = x->name;
    rlt_str_printf(s,
                   "# Makefile - generated by rltune %s: builds the example against lib%s.so.\n"
                   "#   make        lib%s.so (only when %s.c is newer: it ships built) and example\n"
                   "#   make run    builds, then runs the example (prints OK, exits 0)\n"
                   "CC = %s\n"
                   "CFLAGS = %s\n"
                   "KERNEL_FLAGS = -std=gnu11 -fPIC -shared%s\n"
                   "# the example's reference must be right, not fast: no contraction\n"
                   "EXAMPLE_CFLAGS = -std=gnu11 -O2 -ffp-contract=off\n\n"
                   "all: example\n\n"
                   "lib%s.so: %s.c %s.h\n"
                   "\t$(CC) $(CFLAGS) $(KERNEL_FLAGS) -o $@ %s.c\n\n"
                   "example: example.c %s.h lib%s.so\n"
                   "\t$(CC) $(EXAMPLE_CFLAGS) -o $@ example.c -L. -l%s -Wl,-rpath,'$$ORIGIN' -lm\n\n"
                   "run: example\n\t./example\n\n"
                   "clean:\n\trm -f example\n\n"
                   ".PHONY: all run clean\n",
                   RLTUNE_VERSION, n, n, n, x->cc, x->cflags, x->kernel->needs_openmp ? " -fopenmp" : "", n, n, n,
                   n, n, n, n);
}

/* Splits `text` on spaces into argv words (pointing into `buf`). */
static int split_words(char *buf, char **argv, int max)
{
    int n = 0;
    for (char *p = strtok(buf, " \t"); p && n < max; p = strtok(NULL, " \t")) argv[n++] = p;
    return n;
}

/* Compiles NAME.c into libNAME.so with the Makefile's command. */
static rlt_status compile_library(const export_text *x, const char *c_path, const char *so_path, rlt_diag *diag)
{
    rlt_status st = RLT_STATUS_OK;
    rlt_str cmd;
    rlt_str_init(&cmd);
    rlt_str_printf(&cmd, "%s %s -std=gnu11 -fPIC -shared%s", x->cc, x->cflags,
                   x->kernel->needs_openmp ? " -fopenmp" : "");
    if (cmd.has_failed) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory starting the compiler");
        goto cleanup;
    }
    char *argv[MAX_COMPILER_WORDS + 4];
    int argc = split_words(cmd.data, argv, MAX_COMPILER_WORDS);
    argv[argc++] = "-o";
    argv[argc++] = (char *)so_path;
    argv[argc++] = (char *)c_path;
    argv[argc] = NULL;
    pid_t pid;
    int e = posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ);
    if (e != 0) {
        st = rlt_fail(diag, RLT_STATUS_IO_ERROR, "cannot start the compiler '%s': %s", argv[0], strerror(e));
        goto cleanup;
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            st = rlt_fail(diag, RLT_STATUS_IO_ERROR, "cannot wait for the compiler: %s", strerror(errno));
            goto cleanup;
        }
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        st = rlt_fail(diag, RLT_STATUS_BUILD_ERROR, "'%s' failed (%s %d) compiling %s; its messages are above",
                      argv[0], WIFEXITED(status) ? "exit" : "signal",
                      WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), c_path);
cleanup:
    rlt_str_free(&cmd);
    return st;
}

static rlt_status write_file(const char *dir, const char *file, rlt_str *text, char *path, size_t cap,
                             rlt_diag *diag)
{
    snprintf(path, cap, "%s/%s", dir, file);
    if (text->has_failed) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory generating %s", path);
    return rlt_file_write(path, text->data, text->len, diag);
}

rlt_status rlt_export_kernel(const rlt_op *op, const rlt_sched *sched, const rlt_export_opts *opts,
                             rlt_export_result *out, rlt_diag *diag)
{
    rlt_status st = RLT_STATUS_OK;
    rlt_kernel_src kernel = {0}, reference = {0};
    rlt_str sched_text, text;
    rlt_str_init(&sched_text);
    rlt_str_init(&text);
    char path[4096], c_path[4096];
    char upper[RLT_EXPORT_NAME_MAX];
    rlt_nest *nest = rlt_malloc(sizeof *nest);
    memset(out, 0, sizeof *out);
    if (!nest) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory exporting a kernel");
        goto cleanup;
    }
    if (opts->name) {
        if (!rlt_export_name_is_valid(opts->name)) {
            st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                          "bad library name '%.200s': expected a C identifier of lower-case letters, digits "
                          "and '_' (at most %d characters), e.g. rltune_matmul_512x512x512",
                          opts->name, RLT_EXPORT_NAME_MAX - 1);
            goto cleanup;
        }
        snprintf(out->name, sizeof out->name, "%s", opts->name);
    } else {
        rlt_export_name(op, out->name, sizeof out->name);
    }
    for (size_t i = 0; i <= strlen(out->name); i++)
        upper[i] = (char)(out->name[i] >= 'a' && out->name[i] <= 'z' ? out->name[i] - 'a' + 'A' : out->name[i]);
    if ((st = rlt_sched_apply(sched, op, nest, diag)) != RLT_STATUS_OK) goto cleanup;
    if ((st = rlt_codegen_kernel(nest, &kernel, diag)) != RLT_STATUS_OK) goto cleanup;
    if ((st = rlt_codegen_reference(op, &reference, diag)) != RLT_STATUS_OK) goto cleanup;
    out->needs_openmp = kernel.needs_openmp;
    rlt_sched_print(sched, &sched_text);
    const char *cc = opts->build.cc ? opts->build.cc : getenv("RLTUNE_CC");
    export_text x = {
        .op = op,
        .name = out->name,
        .upper = upper,
        .cc = cc && cc[0] ? cc : "gcc",
        .cflags = opts->build.cflags ? opts->build.cflags : RLT_DEFAULT_CFLAGS,
        .n_threads = opts->n_threads > 0 ? opts->n_threads : 1,
        .origin = opts->origin,
        .schedule = sched_text.data && sched_text.data[0] ? sched_text.data : "(none: the unscheduled nest)\n",
        .kernel = &kernel,
        .reference = &reference,
    };
    if ((st = rlt_mkdir_p(opts->dir, diag)) != RLT_STATUS_OK) goto cleanup;
    /* sources first, the library last: make then sees it newer than its
     * source and uses it as shipped */
    char file[RLT_EXPORT_NAME_MAX + 8];
    write_header(&x, &text);
    snprintf(file, sizeof file, "%s.h", out->name);
    if ((st = write_file(opts->dir, file, &text, path, sizeof path, diag)) != RLT_STATUS_OK) goto cleanup;
    rlt_str_clear(&text);
    write_source(&x, &text);
    snprintf(file, sizeof file, "%s.c", out->name);
    if ((st = write_file(opts->dir, file, &text, c_path, sizeof c_path, diag)) != RLT_STATUS_OK) goto cleanup;
    rlt_str_clear(&text);
    write_example(&x, &text);
    if ((st = write_file(opts->dir, "example.c", &text, path, sizeof path, diag)) != RLT_STATUS_OK) goto cleanup;
    rlt_str_clear(&text);
    write_makefile(&x, &text);
    if ((st = write_file(opts->dir, "Makefile", &text, path, sizeof path, diag)) != RLT_STATUS_OK) goto cleanup;
    if (!opts->no_build) {
        snprintf(file, sizeof file, "lib%s.so", out->name);
        snprintf(path, sizeof path, "%s/%s", opts->dir, file);
        if ((st = compile_library(&x, c_path, path, diag)) != RLT_STATUS_OK) goto cleanup;
        snprintf(out->so_path, sizeof out->so_path, "%s", path);
    }
cleanup:
    rlt_str_free(&text);
    rlt_str_free(&sched_text);
    rlt_kernel_src_free(&reference);
    rlt_kernel_src_free(&kernel);
    rlt_free(nest);
    return st;
}
