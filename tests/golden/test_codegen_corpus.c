/* The C that code generation gives for a corpus of schedules, held to
 * hashes: tests/golden/codegen_corpus.txt has one line per op, its random
 * legal schedules (rlt_sched_random, fixed seeds) and the hash of every
 * schedule's text and kernel (or of its refusal); the last lines hold
 * stride-2 window schedules written out, which random schedules never reach
 * (the window loads of lower_load.c). About 5,000 kernels in all.
 *
 * Where the golden cases (test_golden.c) state what each primitive must do,
 * this corpus guards the refactors of code generation (issue 32: the
 * lowered IR between the nest and the C): a change that moves one byte of
 * any kernel names the op whose hash moved. When the C is meant to change,
 * RLTUNE_UPDATE_GOLDEN=1 rewrites the file; then compare the kernels of the
 * previous build and this one (and their speed) before committing it. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "sched/sched.h"

#define CORPUS_PATH RLTUNE_SOURCE_DIR "/tests/golden/codegen_corpus.txt"
#define SCHEDULES_PER_OP 250
#define WINDOW_VARIANTS 144

/* Odd sizes, tails everywhere; three user expressions (epilogues, min/max,
 * shifted and transposed reads). */
static const char *const ops[] = {
    "matmul:M=13,N=17,K=9",
    "matmul:M=37,N=29,K=23",
    "matmul:M=64,N=48,K=31",
    "batch_matmul:B=2,M=5,N=9,K=7",
    "batch_matmul:B=3,M=11,N=13,K=6",
    "dense:M=3,N=11,K=10,bias=1,relu=1",
    "dense:M=7,N=19,K=33,bias=1,relu=0",
    "dense:M=5,N=23,K=17",
    "conv2d:N=1,C=3,H=9,W=8,K=4,R=3,S=3,stride=2,pad=1",
    "conv2d:N=2,C=2,H=7,W=7,K=3,R=3,S=2,stride=1,pad=2,dilation=2",
    "conv2d:N=1,C=5,H=13,W=11,K=7,R=3,S=3,stride=1,pad=1",
    "conv2d:N=1,C=16,H=14,W=14,K=24,R=1,S=1,stride=1,pad=0",
    "conv2d:N=1,C=8,H=6,W=6,K=8,R=3,S=3,stride=1,pad=1,epilogue=bias+add+relu",
    "depthwise_conv2d:N=1,C=4,H=9,W=9,R=3,S=3,stride=1,pad=1",
    "depthwise_conv2d:N=1,C=7,H=15,W=13,R=5,S=5,stride=2,pad=2",
    "depthwise_conv2d:N=2,C=9,H=11,W=10,R=3,S=3,stride=1,pad=0",
    "depthwise_conv2d:N=1,C=6,H=9,W=70,R=3,S=3,stride=2,pad=1",
    "conv2d:N=1,C=3,H=7,W=67,K=5,R=3,S=3,stride=2,pad=1",
};
static const char *const exprs[][2] = {
    {"C[i,j] += A[i,k]*B[k,j]; C[i,j] = relu(C[i,j] + bias[j])", "i=7,j=19,k=5"},
    {"Y[i,j] = max(X[i,j] * 2.5 - 1, min(X[i-1,j], Z[j,i])) + 0.25", "i=6,j=21"},
    {"Y[i,j] = -X[i,j] * 3 + X[i,j+1]; Y[i,j] = relu(Y[i,j] + b[j])", "i=9,j=35"},
};
static const char *const window_ops[] = {
    "depthwise_conv2d:N=1,C=6,H=9,W=70,R=3,S=3,stride=2,pad=1",
    "depthwise_conv2d:N=2,C=3,H=5,W=40,R=3,S=3,stride=2,pad=1",
    "conv2d:N=1,C=3,H=7,W=67,K=5,R=3,S=3,stride=2,pad=1",
};

#define N_OPS (sizeof ops / sizeof *ops)
#define N_EXPRS (sizeof exprs / sizeof *exprs)
#define N_WINDOW_OPS (sizeof window_ops / sizeof *window_ops)
#define N_GROUPS (N_OPS + N_EXPRS + N_WINDOW_OPS)

typedef struct group {
    char name[512]; /* the op's spec, "expr ..." or "windows of ..." */
    int n_schedules, n_lowered;
    uint64_t hash;
} group;

static void hash_bytes(uint64_t *h, const char *s)
{
    for (; *s; s++) *h = (*h ^ (uint8_t)*s) * 1099511628211ull;
    *h = (*h ^ 0xffu) * 1099511628211ull; /* a separator, so that "ab" + "c" is not "a" + "bc" */
}

/* Adds one schedule's text and its kernel (or its refusal) to the group. */
static void add_kernel(group *gr, const rlt_op *op, const rlt_sched *s)
{
    rlt_str text;
    rlt_str_init(&text);
    rlt_sched_print(s, &text);
    cr_assert_not(text.has_failed);
    hash_bytes(&gr->hash, text.data);
    rlt_str_free(&text);
    gr->n_schedules++;
    rlt_nest nest;
    rlt_diag d = {0};
    if (rlt_sched_apply(s, op, &nest, &d) != RLT_STATUS_OK) {
        hash_bytes(&gr->hash, rlt_status_str(d.status));
        return;
    }
    rlt_kernel_src k = {0};
    rlt_status st = rlt_codegen_kernel(&nest, &k, &d);
    cr_assert_eq(st, RLT_STATUS_OK, "%s: %s", gr->name, d.message);
    hash_bytes(&gr->hash, k.symbol);
    hash_bytes(&gr->hash, k.code);
    gr->n_lowered++;
    rlt_kernel_src_free(&k);
}

static void random_group(group *gr, const rlt_op *op, int index)
{
    for (int i = 0; i < SCHEDULES_PER_OP; i++) {
        rlt_rng rng;
        rlt_rng_seed(&rng, 7777u * (uint64_t)(index + 1) + (uint64_t)i);
        rlt_random_sched_opts o = {.n_steps = 4 + i % 17, .max_threads = i % 3 == 0 ? 0 : 4,
                                   .max_unroll = i % 2 ? 16 : 0, .max_unrolled_loops = 1 + i % 3};
        rlt_sched *s = NULL;
        rlt_diag d = {0};
        cr_assert_eq(rlt_sched_random(op, &rng, &o, &s, &d), RLT_STATUS_OK, "%s: %s", gr->name, d.message);
        add_kernel(gr, op, s);
        rlt_sched_destroy(s);
    }
}

/* Stride-2 windows along q: q split into vectors (and their halves), the
 * window's taps r and s unrolled, with and without cache_write, pad and
 * parallel loops. */
static void window_group(group *gr, const rlt_op *op, bool is_depthwise)
{
    const char *ch = is_depthwise ? "c" : "k";
    for (int v = 0; v < WINDOW_VARIANTS; v++) {
        int x = v;
        int split_p = x % 2;
        x /= 2;
        int cache = x % 3;
        x /= 3;
        int unroll_r = x % 2;
        x /= 2;
        int pad = x % 2;
        x /= 2;
        int par = x % 3;
        x /= 3;
        int q8 = x % 2;
        char text[1024];
        int m = snprintf(text, sizeof text, "split q %d\n", q8 ? 8 : 16);
        if (q8) m += snprintf(text + m, sizeof text - (size_t)m, "split q.i 16\n");
        if (split_p) m += snprintf(text + m, sizeof text - (size_t)m, "split p 2\n");
        const char *p = split_p ? "p.o p.i" : "p";
        m += snprintf(text + m, sizeof text - (size_t)m, "reorder n %s %s q.o %s r s %s\n", ch, p,
                      is_depthwise ? "" : "c", q8 ? "q.i.o q.i.i" : "q.i");
        if (cache == 1) m += snprintf(text + m, sizeof text - (size_t)m, "cache_write q.o\n");
        if (cache == 2) m += snprintf(text + m, sizeof text - (size_t)m, "cache_write %s\n", split_p ? "p.o" : "p");
        if (cache == 2 && split_p) m += snprintf(text + m, sizeof text - (size_t)m, "unroll p.i\n");
        if (unroll_r) m += snprintf(text + m, sizeof text - (size_t)m, "unroll r\n");
        m += snprintf(text + m, sizeof text - (size_t)m, "unroll s\nvectorize %s\n", q8 ? "q.i.i" : "q.i");
        if (pad) m += snprintf(text + m, sizeof text - (size_t)m, "pad I\n");
        if (par == 1) m += snprintf(text + m, sizeof text - (size_t)m, "parallel n\n");
        if (par == 2) snprintf(text + m, sizeof text - (size_t)m, "parallel %s 3\n", ch);
        rlt_sched *s = NULL;
        rlt_diag d = {0};
        if (rlt_sched_parse(text, "<window>", &s, &d) != RLT_STATUS_OK) {
            hash_bytes(&gr->hash, text); /* a variant a primitive refuses (pad after some splits) */
            hash_bytes(&gr->hash, rlt_status_str(d.status));
            gr->n_schedules++;
            continue;
        }
        add_kernel(gr, op, s);
        rlt_sched_destroy(s);
    }
}

static void make_corpus(group *groups)
{
    for (size_t w = 0; w < N_GROUPS; w++) {
        group *gr = &groups[w];
        *gr = (group){.hash = 1469598103934665603ull};
        rlt_op *op = NULL;
        rlt_diag d = {0};
        rlt_status st;
        if (w < N_OPS) {
            snprintf(gr->name, sizeof gr->name, "%s", ops[w]);
            st = rlt_op_parse(ops[w], &op, &d);
        } else if (w < N_OPS + N_EXPRS) {
            snprintf(gr->name, sizeof gr->name, "expr %s | %s", exprs[w - N_OPS][0], exprs[w - N_OPS][1]);
            st = rlt_op_from_expr(exprs[w - N_OPS][0], exprs[w - N_OPS][1], &op, &d);
        } else {
            snprintf(gr->name, sizeof gr->name, "windows of %s", window_ops[w - N_OPS - N_EXPRS]);
            st = rlt_op_parse(window_ops[w - N_OPS - N_EXPRS], &op, &d);
        }
        cr_assert_eq(st, RLT_STATUS_OK, "%s: %s", gr->name, d.message);
        if (w < N_OPS + N_EXPRS) random_group(gr, op, (int)w);
        else window_group(gr, op, strncmp(op->kind, "depthwise", 9) == 0);
        rlt_op_destroy(op);
    }
}

static void write_corpus(const group *groups)
{
    FILE *f = fopen(CORPUS_PATH, "w");
    cr_assert_not_null(f, "cannot write %s", CORPUS_PATH);
    fputs("# op or expression <TAB> schedules <TAB> lowered <TAB> FNV-1a 64 of their texts and kernels\n"
          "# (tests/golden/test_codegen_corpus.c; RLTUNE_UPDATE_GOLDEN=1 rewrites this file)\n",
          f);
    for (size_t w = 0; w < N_GROUPS; w++)
        fprintf(f, "%s\t%d\t%d\t%016" PRIx64 "\n", groups[w].name, groups[w].n_schedules, groups[w].n_lowered,
                groups[w].hash);
    cr_assert_eq(fclose(f), 0);
}

Test(codegen_corpus, every_kernel_of_the_corpus_is_as_recorded, .timeout = 600)
{
    static group groups[N_GROUPS];
    make_corpus(groups);
    int n_lowered = 0;
    for (size_t w = 0; w < N_GROUPS; w++) n_lowered += groups[w].n_lowered;
    cr_assert_geq(n_lowered, 4000, "only %d kernels lowered", n_lowered);
    const char *update = getenv("RLTUNE_UPDATE_GOLDEN");
    if (update && strcmp(update, "1") == 0) {
        write_corpus(groups);
        cr_log_warn("%s rewritten: %d kernels", CORPUS_PATH, n_lowered);
        return;
    }
    FILE *f = fopen(CORPUS_PATH, "r");
    cr_assert_not_null(f, "cannot read %s (RLTUNE_UPDATE_GOLDEN=1 writes it)", CORPUS_PATH);
    char line[1024];
    size_t w = 0;
    int n_bad = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        cr_assert_lt(w, N_GROUPS, "%s has more lines than the corpus has groups", CORPUS_PATH);
        char *tab = strchr(line, '\t');
        cr_assert_not_null(tab, "%s: a line without its counts: %s", CORPUS_PATH, line);
        *tab = '\0';
        int n_schedules, n_low;
        uint64_t hash;
        cr_assert_eq(sscanf(tab + 1, "%d\t%d\t%" SCNx64, &n_schedules, &n_low, &hash), 3, "%s: %s", CORPUS_PATH,
                     tab + 1);
        const group *gr = &groups[w++];
        cr_assert_str_eq(line, gr->name, "%s lists the groups in another order", CORPUS_PATH);
        if (n_schedules != gr->n_schedules || n_low != gr->n_lowered || hash != gr->hash) {
            cr_log_error("%s: %d schedules, %d lowered, hash %016" PRIx64 "; recorded %d, %d, %016" PRIx64,
                         gr->name, gr->n_schedules, gr->n_lowered, gr->hash, n_schedules, n_low, hash);
            n_bad++;
        }
    }
    fclose(f);
    cr_assert_eq(w, N_GROUPS, "%s lists %zu of the %zu groups", CORPUS_PATH, w, (size_t)N_GROUPS);
    cr_assert_eq(n_bad, 0,
                 "the C of %d of %zu groups changed (above). If it is meant to, compare the kernels and their "
                 "speed, then rewrite the file with RLTUNE_UPDATE_GOLDEN=1",
                 n_bad, (size_t)N_GROUPS);
}
