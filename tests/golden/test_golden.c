/* Golden tests of the printed loop tree (rlt_nest_print), the lowered loops
 * (rlt_codegen_lowered_text) and the generated C (rlt_codegen_kernel) for
 * every schedule primitive: the stages of code generation.
 *
 * Each case is one file, tests/golden/cases/NAME.golden:
 *
 *     # rule: <one sentence: what the primitive must do to the code>
 *     # (more comment lines, optional)
 *     op: matmul:M=8,N=6,K=4            (a built-in op spec), or
 *     expr: C[i,j] += A[i,k]*B[k,j]     (a user expression)
 *     shape: i=8,j=6,k=4                (with its extents)
 *     schedule:
 *     split i 3                         (schedule text, up to "== tree")
 *     == tree
 *     <expected rlt_nest_print output>
 *     == lowered                        (optional: a few cases have it)
 *     <expected rlt_codegen_lowered_text output>
 *     == c
 *     <expected rlt_codegen_kernel code, to the end of the file>
 *
 * The test compares the outputs exactly and, on a mismatch, shows the first
 * differing line with context. With RLTUNE_UPDATE_GOLDEN=1 in the
 * environment it rewrites the expected parts from the actual output instead
 * (then read the diff before committing: a golden states what is right, not
 * what the code happens to do). Every expected kernel is also compiled with
 * the system compiler (`cc -fsyntax-only`), so a golden cannot freeze code
 * that does not compile. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "sched/sched.h"

#define CASES_DIR RLTUNE_SOURCE_DIR "/tests/golden/cases"
#define MAX_CASES 128

typedef struct golden {
    char name[256];
    char path[4096];
    char *header;   /* everything before "== tree" (owned) */
    char *rule;     /* points into a copy: the rule sentence */
    char *op_spec;  /* "op:" value, or NULL */
    char *expr;     /* "expr:" value, or NULL */
    char *shape;
    char *schedule; /* the lines after "schedule:" (owned) */
    char *tree;     /* expected (owned) */
    char *lowered;  /* expected (owned), or NULL: the case has no "== lowered" */
    char *code;     /* expected (owned) */
} golden;

static char *dup_range(const char *start, const char *end)
{
    size_t n = (size_t)(end - start);
    char *s = malloc(n + 1);
    cr_assert_not_null(s);
    memcpy(s, start, n);
    s[n] = '\0';
    return s;
}

/* The value after "key: " on a header line, or NULL. */
static char *header_value(const char *header, const char *key)
{
    size_t key_len = strlen(key);
    for (const char *line = header; line && *line;) {
        const char *end = strchr(line, '\n');
        if (!end) end = line + strlen(line);
        if ((size_t)(end - line) > key_len && strncmp(line, key, key_len) == 0) {
            const char *v = line + key_len;
            while (*v == ' ') v++;
            return dup_range(v, end);
        }
        line = *end ? end + 1 : end;
    }
    return NULL;
}

static void golden_load(golden *g, const char *dir, const char *name)
{
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "%s", name);
    snprintf(g->path, sizeof g->path, "%s/%s", dir, name);
    char *text = NULL;
    size_t len = 0;
    rlt_diag d = {0};
    cr_assert_eq(rlt_file_read(g->path, &text, &len, &d), RLT_STATUS_OK, "%s", d.message);
    const char *tree_mark = strstr(text, "== tree\n");
    const char *code_mark = strstr(text, "== c\n");
    cr_assert(tree_mark && code_mark && tree_mark < code_mark, "%s: needs '== tree' then '== c' lines", name);
    cr_assert(tree_mark == text || tree_mark[-1] == '\n', "%s: '== tree' must start a line", name);
    const char *lowered_mark = strstr(text, "\n== lowered\n");
    cr_assert(!lowered_mark || (tree_mark < lowered_mark && lowered_mark < code_mark),
              "%s: '== lowered' goes between '== tree' and '== c'", name);
    g->header = dup_range(text, tree_mark);
    g->tree = dup_range(tree_mark + strlen("== tree\n"), lowered_mark ? lowered_mark + 1 : code_mark);
    if (lowered_mark) g->lowered = dup_range(lowered_mark + strlen("\n== lowered\n"), code_mark);
    g->code = dup_range(code_mark + strlen("== c\n"), text + len);
    rlt_free(text);

    g->rule = header_value(g->header, "# rule:");
    cr_assert(g->rule && strlen(g->rule) > 10, "%s: needs a '# rule: ...' line saying what to check", name);
    g->op_spec = header_value(g->header, "op:");
    g->expr = header_value(g->header, "expr:");
    g->shape = header_value(g->header, "shape:");
    cr_assert((g->op_spec != NULL) != (g->expr != NULL), "%s: needs 'op:' or 'expr:' (not both)", name);
    cr_assert(!g->expr || g->shape, "%s: 'expr:' needs 'shape:'", name);
    const char *sched = strstr(g->header, "\nschedule:\n");
    cr_assert_not_null(sched, "%s: needs a 'schedule:' line (the schedule may be empty)", name);
    g->schedule = dup_range(sched + strlen("\nschedule:\n"), g->header + strlen(g->header));
}

static void golden_free(golden *g)
{
    free(g->header);
    free(g->rule);
    free(g->op_spec);
    free(g->expr);
    free(g->shape);
    free(g->schedule);
    free(g->tree);
    free(g->lowered);
    free(g->code);
}

static int compare_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The case files, sorted (so failures come out in a stable order). */
static int list_cases(const char *dir, char **names)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "cannot open %s", dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 8 || strcmp(e->d_name + len - 7, ".golden") != 0) continue;
        cr_assert_lt(n, MAX_CASES);
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, compare_names);
    return n;
}

/* Logs the first line where `got` and `want` differ, with two lines of
 * context before it and the following lines of each side. */
static void log_diff(const char *name, const char *what, const char *want, const char *got)
{
    int line = 1;
    const char *w = want, *g = got;
    const char *w_line = want, *g_line = got;
    while (*w && *g && *w == *g) {
        if (*w == '\n') {
            line++;
            w_line = w + 1;
            g_line = g + 1;
        }
        w++;
        g++;
    }
    /* Back up two lines for context. */
    const char *ctx = w_line;
    for (int k = 0; k < 2 && ctx > want; k++) {
        ctx--;
        while (ctx > want && ctx[-1] != '\n') ctx--;
    }
    rlt_str msg;
    rlt_str_init(&msg);
    rlt_str_printf(&msg, "%s: %s differs from line %d:\n", name, what, line);
    for (const char *c = ctx; c < w_line;) {
        const char *e = strchr(c, '\n');
        rlt_str_printf(&msg, "   %.*s\n", (int)(e - c), c);
        c = e + 1;
    }
    const char *sides[2] = {w_line, g_line};
    const char *marks[2] = {"-", "+"};
    for (int s = 0; s < 2; s++) {
        const char *c = sides[s];
        for (int k = 0; k < 4 && *c; k++) {
            const char *e = strchr(c, '\n');
            int n = e ? (int)(e - c) : (int)strlen(c);
            rlt_str_printf(&msg, " %s %.*s\n", marks[s], n, c);
            c = e ? e + 1 : c + n;
        }
        if (!*sides[s]) rlt_str_printf(&msg, " %s (end)\n", marks[s]);
    }
    rlt_str_append(&msg, "(- expected, + actual; RLTUNE_UPDATE_GOLDEN=1 rewrites the goldens)");
    cr_log_error("%s", msg.data);
    rlt_str_free(&msg);
}

/* Runs one case: its op, schedule, tree, lowered loops (when the case has
 * them) and code. Returns the actual outputs in *tree / *lowered / *code
 * (owned; *lowered NULL when the case has none). */
static void golden_run(const golden *g, char **tree, char **lowered, char **code, bool *needs_openmp)
{
    rlt_op *op = NULL;
    rlt_diag d = {0};
    rlt_status st = g->op_spec ? rlt_op_parse(g->op_spec, &op, &d) : rlt_op_from_expr(g->expr, g->shape, &op, &d);
    cr_assert_eq(st, RLT_STATUS_OK, "%s: %s", g->name, d.message);
    rlt_sched *s = NULL;
    cr_assert_eq(rlt_sched_parse(g->schedule, g->path, &s, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_nest n;
    cr_assert_eq(rlt_sched_apply(s, op, &n, &d), RLT_STATUS_OK, "%s: %s", g->name, d.message);
    rlt_str t;
    rlt_str_init(&t);
    rlt_nest_print(&n, &t);
    *tree = rlt_str_take(&t);
    cr_assert_not_null(*tree);
    *lowered = NULL;
    if (g->lowered) {
        rlt_str_init(&t);
        cr_assert_eq(rlt_codegen_lowered_text(&n, &t, &d), RLT_STATUS_OK, "%s: %s", g->name, d.message);
        *lowered = rlt_str_take(&t);
        cr_assert_not_null(*lowered);
    }
    rlt_kernel_src k;
    cr_assert_eq(rlt_codegen_kernel(&n, &k, &d), RLT_STATUS_OK, "%s: %s", g->name, d.message);
    *code = k.code;
    *needs_openmp = k.needs_openmp;
    rlt_sched_destroy(s);
    rlt_op_destroy(op);
}

static void golden_rewrite(const golden *g, const char *tree, const char *lowered, const char *code)
{
    rlt_str text;
    rlt_str_init(&text);
    rlt_str_printf(&text, "%s== tree\n%s", g->header, tree);
    if (lowered) rlt_str_printf(&text, "== lowered\n%s", lowered);
    rlt_str_printf(&text, "== c\n%s", code);
    rlt_diag d = {0};
    cr_assert_eq(rlt_file_write(g->path, text.data, text.len, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_str_free(&text);
}

Test(golden, trees_and_code_match_the_cases)
{
    char *names[MAX_CASES];
    int n = list_cases(CASES_DIR, names);
    cr_assert_geq(n, 20, "only %d golden cases in %s", n, CASES_DIR);
    const char *update = getenv("RLTUNE_UPDATE_GOLDEN");
    bool is_update = update && strcmp(update, "1") == 0;
    int n_bad = 0, n_updated = 0, n_lowered = 0;
    for (int i = 0; i < n; i++) {
        golden g;
        golden_load(&g, CASES_DIR, names[i]);
        char *tree = NULL, *lowered = NULL, *code = NULL;
        bool needs_openmp = false;
        golden_run(&g, &tree, &lowered, &code, &needs_openmp);
        bool is_same_lowered = !lowered || strcmp(lowered, g.lowered) == 0;
        bool is_same = strcmp(tree, g.tree) == 0 && is_same_lowered && strcmp(code, g.code) == 0;
        n_lowered += lowered != NULL;
        if (!is_same && is_update) {
            golden_rewrite(&g, tree, lowered, code);
            cr_log_warn("%s: rewritten", g.name);
            n_updated++;
        } else if (!is_same) {
            if (strcmp(tree, g.tree) != 0) log_diff(g.name, "the loop tree", g.tree, tree);
            if (!is_same_lowered) log_diff(g.name, "the lowered loops", g.lowered, lowered);
            if (strcmp(code, g.code) != 0) log_diff(g.name, "the C code", g.code, code);
            n_bad++;
        }
        rlt_free(tree);
        rlt_free(lowered);
        rlt_free(code);
        golden_free(&g);
        free(names[i]);
    }
    cr_expect_eq(n_bad, 0, "%d of %d golden cases differ (see above)", n_bad, n);
    cr_expect_geq(n_lowered, 5, "only %d golden cases show the lowered loops", n_lowered);
    if (n_updated) cr_log_warn("%d golden cases rewritten", n_updated);
}

/* Every primitive appears in some golden, and every golden tests something
 * the others do not: distinct schedules or ops. */
Test(golden, every_primitive_has_a_case)
{
    char *names[MAX_CASES];
    int n = list_cases(CASES_DIR, names);
    int seen[RLT_STEP_KIND_COUNT] = {0};
    for (int i = 0; i < n; i++) {
        golden g;
        golden_load(&g, CASES_DIR, names[i]);
        rlt_sched *s = NULL;
        rlt_diag d = {0};
        cr_assert_eq(rlt_sched_parse(g.schedule, g.path, &s, &d), RLT_STATUS_OK, "%s", d.message);
        for (int k = 0; k < s->n_steps; k++) seen[s->steps[k].kind]++;
        rlt_sched_destroy(s);
        golden_free(&g);
        free(names[i]);
    }
    for (int k = 0; k < RLT_STEP_KIND_COUNT; k++)
        cr_expect_gt(seen[k], 0, "no golden case uses %s", rlt_step_kind_name(k));
}

/* Runs `cc -std=gnu11 -fsyntax-only -fopenmp` on `path`; returns its exit
 * status, with its messages in the log. */
static int compile_syntax_only(const char *compiler, const char *path)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s -std=gnu11 -fsyntax-only -fopenmp -Wall -Wno-unused-variable %s 2>&1", compiler,
             path);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    char buf[512];
    rlt_str out;
    rlt_str_init(&out);
    while (fgets(buf, sizeof buf, p)) rlt_str_append(&out, buf);
    int status = pclose(p);
    if (out.len) cr_log_warn("%s:\n%s", cmd, out.data);
    rlt_str_free(&out);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Test(golden, expected_code_compiles, .timeout = 120)
{
    char *names[MAX_CASES];
    int n = list_cases(CASES_DIR, names);
    char path[] = "/tmp/rlt_golden_XXXXXX.c";
    int fd = mkstemps(path, 2);
    cr_assert_geq(fd, 0);
    FILE *f = fdopen(fd, "w");
    cr_assert_not_null(f);
    fputs(rlt_codegen_preamble(), f);
    /* One translation unit; kernels with equal code (equal symbols) once. */
    char *seen[MAX_CASES];
    int n_seen = 0;
    for (int i = 0; i < n; i++) {
        golden g;
        golden_load(&g, CASES_DIR, names[i]);
        bool is_dup = false;
        for (int k = 0; k < n_seen && !is_dup; k++) is_dup = strcmp(seen[k], g.code) == 0;
        if (!is_dup) {
            fprintf(f, "\n/* ---- %s */\n%s", g.name, g.code);
            seen[n_seen++] = strdup(g.code);
        }
        golden_free(&g);
        free(names[i]);
    }
    fclose(f);
    const char *cc = getenv("RLTUNE_CC");
    int rc = compile_syntax_only(cc && *cc ? cc : "cc", path);
    cr_expect_eq(rc, 0, "the golden kernels do not compile (kept in %s)", path);
    for (int k = 0; k < n_seen; k++) free(seen[k]);
    if (rc == 0) unlink(path);
}
