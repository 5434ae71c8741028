/* Unit tests of the loop-nest IR (src/ir/nest.c): the default nest of every
 * op (spatial loops in output order, then reduction loops), lookups, the
 * invariants rlt_nest_check enforces, on nests edited by hand so that the
 * check is tested apart from the primitives that normally guard it, the
 * printed loop tree (exact text), the structural hash, and the physical
 * layout of staged tensors. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "sched/sched.h"

#include "../common/fixtures.h"

static void assert_print(const rlt_nest *n, const char *want)
{
    rlt_str s;
    rlt_str_init(&s);
    rlt_nest_print(n, &s);
    cr_assert_not(s.has_failed);
    cr_assert_str_eq(s.data, want, "got:\n%s\nwant:\n%s", s.data, want);
    rlt_str_free(&s);
}

static void assert_check_fails(const rlt_nest *n, rlt_status want, const char *needle)
{
    rlt_diag d = {0};
    rlt_status st = rlt_nest_check(n, &d);
    cr_assert_eq(st, want, "want %s, got %s: %s", rlt_status_str(want), rlt_status_str(st), d.message);
    cr_assert_eq(d.status, st);
    cr_assert(strstr(d.message, needle), "expected '%s' in: %s", needle, d.message);
}

/* ---- the default nest --------------------------------------------------- */

Test(nest, init_puts_spatial_loops_first_then_reductions_for_every_op)
{
    static const struct {
        const char *spec, *loops;
    } cases[] = {
        {"matmul:M=8,N=6,K=4", "i:8 j:6 k:4r"},
        {"batch_matmul:B=2,M=5,N=9,K=7", "b:2 i:5 j:9 k:7r"},
        {"dense:M=3,N=11,K=10,bias=1,relu=1", "i:3 j:11 k:10r"},
        {"conv2d:N=1,C=3,H=9,W=8,K=4,R=3,S=3,stride=2,pad=1", "n:1 k:4 p:5 q:4 c:3r r:3r s:3r"},
        {"depthwise_conv2d:N=1,C=4,H=9,W=9,R=3,S=3,stride=1,pad=1", "n:1 c:4 p:9 q:9 r:3r s:3r"},
    };
    int n_ops = 0;
    rlt_op_library(&n_ops);
    cr_assert_eq((int)RLT_ARRAY_LEN(cases), n_ops, "a new built-in op needs a case here");
    for (size_t i = 0; i < RLT_ARRAY_LEN(cases); i++) {
        rlt_op *op = fixture_op(cases[i].spec);
        rlt_nest n;
        rlt_nest_init(&n, op);
        assert_loops(&n, cases[i].loops);
        cr_assert_eq(n.op, op);
        cr_assert_eq(n.n_vars, op->n_axes);
        cr_assert_eq(n.acc_var, RLT_ACC_NONE);
        for (int l = 0; l < n.n_loops; l++) {
            cr_assert_eq(n.loops[l].kind, RLT_LOOP_SERIAL);
            cr_assert_eq(n.loops[l].var, l);
            cr_assert_eq(n.vars[l].origin, RLT_VAR_AXIS);
            cr_assert_eq(n.vars[l].axis, l);
        }
        for (int t = 0; t < op->n_tensors; t++) cr_assert_not(rlt_layout_is_staged(&n.layouts[t]));
        cr_assert_eq(rlt_nest_check(&n, NULL), RLT_STATUS_OK);
        rlt_op_destroy(op);
    }
    /* User expressions: reduction axes in order of first appearance, spatial
     * axes in the output's order whatever the inputs say. */
    rlt_op *op = fixture_expr_op("O[i] += A[i,m] * B[m,k] * D[k]", "i=3,k=4,m=5");
    rlt_nest n;
    rlt_nest_init(&n, op);
    assert_loops(&n, "i:3 m:5r k:4r");
    rlt_op_destroy(op);
    op = fixture_expr_op("Y[j,i] = X[i,j] * 2", "i=3,j=4");
    rlt_nest_init(&n, op);
    assert_loops(&n, "j:4 i:3");
    rlt_op_destroy(op);
}

/* ---- lookups ------------------------------------------------------------ */

Test(nest, lookups_follow_splits_and_fuses)
{
    rlt_op *op = fixture_op("matmul:M=8,N=6,K=4");
    rlt_nest n = fixture_scheduled(op, "split i 3\nsplit j 3\nfuse i.i j.o\n");
    assert_loops(&n, "i.o:3 i.i_j.o:6 j.i:3 k:4r");
    /* vars: 0 i, 1 j, 2 k, 3 i.o, 4 i.i, 5 j.o, 6 j.i, 7 i.i_j.o */
    cr_assert_eq(n.n_vars, 8);
    cr_assert_eq(rlt_nest_find_loop(&n, "i.o"), 0);
    cr_assert_eq(rlt_nest_find_loop(&n, "i.i_j.o"), 1);
    cr_assert_eq(rlt_nest_find_loop(&n, "k"), 3);
    cr_assert_eq(rlt_nest_find_loop(&n, "i"), -1, "a split variable is no longer a loop");
    cr_assert_eq(rlt_nest_find_loop(&n, "i.i"), -1, "a fused variable is no longer a loop");
    cr_assert_eq(rlt_nest_find_loop(&n, ""), -1);
    cr_assert_eq(rlt_nest_loop_of_var(&n, 7), 1);
    cr_assert_eq(rlt_nest_loop_of_var(&n, 0), -1);
    cr_assert_eq(rlt_nest_loop_of_var(&n, 2), 3);

    int o, i, f;
    rlt_nest_var_children(&n, 0, &o, &i, &f);
    cr_assert(o == 3 && i == 4 && f == -1, "i -> %d %d %d", o, i, f);
    rlt_nest_var_children(&n, 4, &o, &i, &f);
    cr_assert(o == -1 && i == -1 && f == 7, "i.i -> %d %d %d", o, i, f);
    rlt_nest_var_children(&n, 5, &o, &i, &f);
    cr_assert(o == -1 && i == -1 && f == 7, "j.o -> %d %d %d", o, i, f);
    rlt_nest_var_children(&n, 2, &o, &i, &f);
    cr_assert(o == -1 && i == -1 && f == -1, "k -> %d %d %d", o, i, f);

    cr_assert(n.vars[7].origin == RLT_VAR_FUSED && n.vars[7].fused_outer == 4 && n.vars[7].fused_inner == 5);
    cr_assert(n.vars[3].origin == RLT_VAR_SPLIT_OUTER && n.vars[3].parent == 0 && n.vars[3].factor == 3);
    cr_assert(n.vars[4].origin == RLT_VAR_SPLIT_INNER && n.vars[4].parent == 0 && n.vars[4].factor == 3);
    /* 8 = 3*3 - 1: a tail; 6 = 2*3: none. */
    cr_assert(rlt_nest_var_has_tail(&n, 0));
    cr_assert_not(rlt_nest_var_has_tail(&n, 1));
    cr_assert_not(rlt_nest_var_has_tail(&n, 2));
    cr_assert_not(rlt_nest_var_has_tail(&n, 7));
    rlt_op_destroy(op);
}

/* ---- rlt_nest_check on hand-edited nests --------------------------------- */

static rlt_op *check_op;

static void check_setup(void) { check_op = fixture_op("matmul:M=300,N=128,K=64"); }
static void check_teardown(void) { rlt_op_destroy(check_op); }

TestSuite(nest_check, .init = check_setup, .fini = check_teardown);

/* Default nest of check_op with loop l marked `kind`. */
static rlt_nest marked(int l, rlt_loop_kind kind)
{
    rlt_nest n;
    rlt_nest_init(&n, check_op);
    n.loops[l].kind = kind;
    return n;
}

Test(nest_check, vectorize_rules)
{
    rlt_nest n = marked(2, RLT_LOOP_VECTORIZE);
    assert_check_fails(&n, RLT_STATUS_ILLEGAL_SCHEDULE, "vectorized loop 'k' is a reduction");
    n = marked(1, RLT_LOOP_VECTORIZE);
    assert_check_fails(&n, RLT_STATUS_ILLEGAL_SCHEDULE, "must be innermost, but 'k' is inside it");
    /* Width: a power of two from 2 to 64. */
    rlt_op *op = fixture_expr_op("Y[i,j] = X[i,j]", "i=2,j=6");
    int64_t widths[] = {1, 2, 3, 6, 64, 128, 96};
    bool is_ok[] = {false, true, false, false, true, false, false};
    for (size_t w = 0; w < RLT_ARRAY_LEN(widths); w++) {
        rlt_nest_init(&n, op);
        n.vars[1].extent = widths[w];
        n.loops[1].kind = RLT_LOOP_VECTORIZE;
        if (is_ok[w])
            cr_assert_eq(rlt_nest_check(&n, NULL), RLT_STATUS_OK, "width %lld", (long long)widths[w]);
        else
            assert_check_fails(&n, RLT_STATUS_ILLEGAL_SCHEDULE, "power of two from 2 to 64");
    }
    rlt_op_destroy(op);
}

Test(nest_check, parallel_rules)
{
    rlt_nest n = marked(2, RLT_LOOP_PARALLEL);
    assert_check_fails(&n, RLT_STATUS_ILLEGAL_SCHEDULE, "parallel loop 'k' is a reduction");
    n = marked(0, RLT_LOOP_PARALLEL);
    n.loops[1].kind = RLT_LOOP_PARALLEL;
    assert_check_fails(&n, RLT_STATUS_ILLEGAL_SCHEDULE, "loops 'i' and 'j' are both parallel");
    n = marked(0, RLT_LOOP_PARALLEL);
    n.loops[0].n_threads = RLT_MAX_THREADS;
    cr_assert_eq(rlt_nest_check(&n, NULL), RLT_STATUS_OK);
    n.loops[0].n_threads = RLT_MAX_THREADS + 1;
    assert_check_fails(&n, RLT_STATUS_ILLEGAL_SCHEDULE, "thread count 257 outside 0..256");
    n.loops[0].n_threads = -1;
    assert_check_fails(&n, RLT_STATUS_ILLEGAL_SCHEDULE, "thread count -1");
}

Test(nest_check, unroll_limits)
{
    rlt_nest n = marked(0, RLT_LOOP_UNROLL); /* i: 300 */
    assert_check_fails(&n, RLT_STATUS_ILLEGAL_SCHEDULE, "unrolled loop 'i' has extent 300, more than 256");
    n = marked(1, RLT_LOOP_UNROLL); /* j: 128 */
    cr_assert_eq(rlt_nest_check(&n, NULL), RLT_STATUS_OK);
    n.loops[2].kind = RLT_LOOP_UNROLL; /* k: 64, 128 * 64 copies */
    assert_check_fails(&n, RLT_STATUS_ILLEGAL_SCHEDULE, "makes 8192 copies of the loop body, more than 4096");
    n.vars[2].extent = 32; /* exactly 4096 is allowed */
    cr_assert_eq(rlt_nest_check(&n, NULL), RLT_STATUS_OK);
}

Test(nest_check, accumulator_rules)
{
    rlt_nest n;
    rlt_nest_init(&n, check_op);
    n.acc_var = RLT_ACC_ROOT; /* 300 * 128 floats */
    assert_check_fails(&n, RLT_STATUS_ILLEGAL_SCHEDULE, "accumulator at 'root' would hold 38400 floats, more than 16384");
    n.acc_var = 0; /* inside i: 128 floats; the reduction loop does not count */
    cr_assert_eq(rlt_nest_check(&n, NULL), RLT_STATUS_OK);
    n.loops[0].kind = RLT_LOOP_PARALLEL; /* the accumulator is inside the parallel loop: fine */
    cr_assert_eq(rlt_nest_check(&n, NULL), RLT_STATUS_OK);
    n.loops[0].kind = RLT_LOOP_SERIAL;
    n.loops[1].kind = RLT_LOOP_PARALLEL; /* now the parallel loop is inside it */
    assert_check_fails(&n, RLT_STATUS_ILLEGAL_SCHEDULE, "parallel loop 'j' is inside the cache_write accumulator at 'i'");

    /* The accumulator inside the innermost, vectorized, loop. */
    rlt_op *op = fixture_expr_op("Y[i,j] = X[i,j]", "i=2,j=8");
    rlt_nest_init(&n, op);
    n.loops[1].kind = RLT_LOOP_VECTORIZE;
    n.acc_var = 1;
    assert_check_fails(&n, RLT_STATUS_ILLEGAL_SCHEDULE, "would sit inside the vectorized loop 'j'");
    n.acc_var = 0;
    cr_assert_eq(rlt_nest_check(&n, NULL), RLT_STATUS_OK);
    /* An accumulator variable that is no loop is a bug, not bad input. */
    n = fixture_scheduled(op, "split i 2\n");
    n.acc_var = 0;
    assert_check_fails(&n, RLT_STATUS_INTERNAL, "not a loop");
    rlt_op_destroy(op);
}

/* ---- printing ----------------------------------------------------------- */

Test(nest, print_default_nests)
{
    rlt_op *op = fixture_op("matmul:M=8,N=6,K=4");
    rlt_nest n;
    rlt_nest_init(&n, op);
    assert_print(&n,
                 "for i in 0..8\n"
                 "  for j in 0..6\n"
                 "    for k in 0..4  reduce\n"
                 "      C[i,j] += A[i,k] * B[k,j]\n");
    rlt_op_destroy(op);

    op = fixture_op("dense:M=2,N=3,K=4,bias=1,relu=1");
    rlt_nest_init(&n, op);
    assert_print(&n,
                 "for i in 0..2\n"
                 "  for j in 0..3\n"
                 "    for k in 0..4  reduce\n"
                 "      Y[i,j] += X[i,k] * W[j,k]\n"
                 "then Y[...] = relu(Y[i,j] + bias[j])\n");
    rlt_op_destroy(op);

    op = fixture_op("conv2d:N=1,C=3,H=9,W=8,K=4,R=3,S=3,stride=2,pad=1");
    rlt_nest_init(&n, op);
    assert_print(&n,
                 "for n in 0..1\n"
                 "  for k in 0..4\n"
                 "    for p in 0..5\n"
                 "      for q in 0..4\n"
                 "        for c in 0..3  reduce\n"
                 "          for r in 0..3  reduce\n"
                 "            for s in 0..3  reduce\n"
                 "              O[n,k,p,q] += I[n,c,2*p+r-1,2*q+s-1] * W[k,c,r,s]\n");
    rlt_op_destroy(op);

    /* Without a reduction the statement assigns. */
    op = fixture_expr_op("Y[i,j] = max(X[i,j] * 2.5, Z[j,i]) + 0.25", "i=2,j=3");
    rlt_nest_init(&n, op);
    assert_print(&n,
                 "for i in 0..2\n"
                 "  for j in 0..3\n"
                 "    Y[i,j] = max(X[i,j] * 2.5, Z[j,i]) + 0.25\n");
    rlt_op_destroy(op);
}

Test(nest, print_shows_annotations_tails_accumulator_and_staging)
{
    rlt_op *op = fixture_op("dense:M=5,N=16,K=3,bias=1,relu=1");
    rlt_nest n = fixture_scheduled(op,
                           "split j 8\nreorder k j.i\nvectorize j.i\nsplit i 2\nunroll i.i\n"
                           "reorder i.i j.o\ncache_write i.o\nparallel i.o\n");
    assert_print(&n,
                 "parallel i.o in 0..3 threads=run-time  (tail: i < 5)\n"
                 "  acc Y[i.i=2, j.o=2, j.i=8]   (cache_write)\n"
                 "  unroll i.i in 0..2\n"
                 "    for j.o in 0..2\n"
                 "      for k in 0..3  reduce\n"
                 "        vectorize j.i in 0..8\n"
                 "          Y[i,j] += X[i,k] * W[j,k]\n"
                 "then Y[...] = relu(Y[i,j] + bias[j])\n");
    rlt_op_destroy(op);

    /* Padding widths per dim (lo/hi), blocked dims in the order packed, the
     * accumulator tile listing only spatial loops, fixed thread counts. */
    op = fixture_op("conv2d:N=1,C=2,H=4,W=4,K=3,R=3,S=3,pad=1");
    n = fixture_scheduled(op,
                  "pad I\npack I 3 4 2 3\nsplit q 3\nreorder c q.i\nsplit k 2\nunroll k.i\n"
                  "parallel p 2\ncache_write p\n");
    assert_print(&n,
                 "stage I -> I_s[2][2][1][2][4][3]  pad 0/0 0/0 1/1 1/1  pack dim3/4 dim2/3\n"
                 "for n in 0..1\n"
                 "  for k.o in 0..2  (tail: k < 3)\n"
                 "    unroll k.i in 0..2\n"
                 "      parallel p in 0..4 threads=2\n"
                 "        acc O[q.o=2, q.i=3]   (cache_write)\n"
                 "        for q.o in 0..2  (tail: q < 4)\n"
                 "          for c in 0..2  reduce\n"
                 "            for q.i in 0..3\n"
                 "              for r in 0..3  reduce\n"
                 "                for s in 0..3  reduce\n"
                 "                  O[n,k,p,q] += I[n,c,p+r-1,q+s-1] * W[k,c,r,s]\n");
    rlt_op_destroy(op);

    /* A tail stays marked when the half that overruns is split again or
     * fused: the loop carrying it names every variable it overruns. */
    op = fixture_op("matmul:M=5,N=3,K=2");
    n = fixture_scheduled(op, "split i 2\nsplit i.o 2\n");
    assert_print(&n,
                 "for i.o.o in 0..2  (tail: i < 5)  (tail: i.o < 3)\n"
                 "  for i.o.i in 0..2\n"
                 "    for i.i in 0..2\n"
                 "      for j in 0..3\n"
                 "        for k in 0..2  reduce\n"
                 "          C[i,j] += A[i,k] * B[k,j]\n");
    n = fixture_scheduled(op, "split i 2\nfuse i.o i.i\n");
    assert_print(&n,
                 "for i.o_i.i in 0..6  (tail: i < 5)\n"
                 "  for j in 0..3\n"
                 "    for k in 0..2  reduce\n"
                 "      C[i,j] += A[i,k] * B[k,j]\n");
    rlt_op_destroy(op);

    /* The accumulator at the root, and at the innermost loop. */
    op = fixture_op("matmul:M=2,N=3,K=4");
    n = fixture_scheduled(op, "cache_write root\n");
    assert_print(&n,
                 "acc C[i=2, j=3]   (cache_write)\n"
                 "for i in 0..2\n"
                 "  for j in 0..3\n"
                 "    for k in 0..4  reduce\n"
                 "      C[i,j] += A[i,k] * B[k,j]\n");
    n = fixture_scheduled(op, "cache_write k\n");
    assert_print(&n,
                 "for i in 0..2\n"
                 "  for j in 0..3\n"
                 "    for k in 0..4  reduce\n"
                 "      acc C[]   (cache_write)\n"
                 "      C[i,j] += A[i,k] * B[k,j]\n");
    rlt_op_destroy(op);
}

/* ---- structural hash ---------------------------------------------------- */

Test(nest, hash_is_equal_for_equal_nests_and_differs_otherwise)
{
    rlt_op *op = fixture_op("matmul:M=16,N=16,K=16");
    rlt_op *other_op = fixture_op("matmul:M=16,N=16,K=8");
    const char *base = "split i 4\nsplit j 8\nreorder i.o j.o i.i k j.i\nvectorize j.i\n";
    rlt_nest a = fixture_scheduled(op, base);
    rlt_nest b = fixture_scheduled(op, base);
    cr_assert_eq(rlt_nest_hash(&a), rlt_nest_hash(&b), "same schedule, same hash");
    /* A no-op reorder leaves the nest equal. */
    rlt_nest c = fixture_scheduled(op, "split i 4\nsplit j 8\nreorder i.o j.o i.i k j.i\nvectorize j.i\nreorder i.o j.o\n");
    cr_assert_eq(rlt_nest_hash(&a), rlt_nest_hash(&c));

    static const char *const different[] = {
        "split i 2\nsplit j 8\nreorder i.o j.o i.i k j.i\nvectorize j.i\n", /* factor */
        "split i 4\nsplit j 8\nreorder j.o i.o i.i k j.i\nvectorize j.i\n", /* order */
        "split i 4\nsplit j 8\nreorder i.o j.o i.i k j.i\n",                /* annotation */
        "split i 4\nsplit j 8\nreorder i.o j.o i.i k j.i\nvectorize j.i\nunroll i.i\n",
        "split i 4\nsplit j 8\nreorder i.o j.o i.i k j.i\nvectorize j.i\nparallel i.o\n",
        "split i 4\nsplit j 8\nreorder i.o j.o i.i k j.i\nvectorize j.i\nparallel i.o 2\n", /* threads */
        "split i 4\nsplit j 8\nreorder i.o j.o i.i k j.i\nvectorize j.i\ncache_write j.o\n",
        "split i 4\nsplit j 8\nreorder i.o j.o i.i k j.i\nvectorize j.i\ncache_write i.o\n", /* acc position */
        "split i 4\nsplit j 8\nreorder i.o j.o i.i k j.i\nvectorize j.i\npack B 1 8\n",
        "split i 4\nsplit j 8\nreorder i.o j.o i.i k j.i\nvectorize j.i\npack B 1 4\n", /* block */
        "split i 4\nsplit j 8\nreorder i.o j.o i.i k j.i\nvectorize j.i\npack B 0 8\n", /* dim */
        "split i 4\nsplit j 8\nreorder i.o j.o i.i k j.i\nvectorize j.i\npack A 1 8\n", /* tensor */
        "split i 4\nsplit j 8\nfuse j.o j.i\n",
    };
    uint64_t hashes[RLT_ARRAY_LEN(different) + 2];
    hashes[0] = rlt_nest_hash(&a);
    for (size_t i = 0; i < RLT_ARRAY_LEN(different); i++) {
        rlt_nest x = fixture_scheduled(op, different[i]);
        hashes[i + 1] = rlt_nest_hash(&x);
    }
    rlt_nest x = fixture_scheduled(other_op, base); /* same schedule, other op */
    hashes[RLT_ARRAY_LEN(different) + 1] = rlt_nest_hash(&x);
    for (size_t i = 0; i < RLT_ARRAY_LEN(hashes); i++)
        for (size_t j = 0; j < i; j++)
            cr_expect_neq(hashes[i], hashes[j], "nests %zu and %zu hash alike", i, j);

    /* Padding widths count. */
    rlt_op *conv = fixture_op("conv2d:N=1,C=1,H=5,W=5,K=1,R=3,S=3,pad=1");
    rlt_op *conv2 = fixture_op("conv2d:N=1,C=1,H=5,W=5,K=1,R=3,S=3,pad=2");
    rlt_nest p1 = fixture_scheduled(conv, "pad I\n"), p0;
    rlt_nest_init(&p0, conv);
    cr_assert_neq(rlt_nest_hash(&p0), rlt_nest_hash(&p1));
    rlt_nest p2 = fixture_scheduled(conv2, "pad I\n");
    cr_assert_neq(rlt_nest_hash(&p1), rlt_nest_hash(&p2));
    rlt_op_destroy(conv2);
    rlt_op_destroy(conv);
    rlt_op_destroy(other_op);
    rlt_op_destroy(op);
}

/* ---- staged layouts ----------------------------------------------------- */

Test(nest, physical_dims_of_packed_and_padded_tensors)
{
    rlt_op *op = fixture_op("matmul:M=4,N=20,K=5");
    /* pack B j 16 on B[k,j]: B_s[ceil(20/16)][5][16]. */
    rlt_nest n = fixture_scheduled(op, "pack B j 16\n");
    int64_t dims[2 * RLT_MAX_DIMS];
    int outer[RLT_MAX_DIMS], inner[RLT_MAX_DIMS];
    int nd = rlt_layout_physical_dims(&n, 1, dims, outer, inner);
    cr_assert_eq(nd, 3);
    cr_assert(dims[0] == 2 && dims[1] == 5 && dims[2] == 16);
    cr_assert(outer[0] == 1 && inner[0] == -1, "k: %d %d", outer[0], inner[0]);
    cr_assert(outer[1] == 0 && inner[1] == 2, "j: %d %d", outer[1], inner[1]);
    cr_assert(rlt_layout_is_staged(&n.layouts[1]));
    cr_assert_not(rlt_layout_is_staged(&n.layouts[0]));
    /* An unstaged tensor: its own dims. */
    nd = rlt_layout_physical_dims(&n, 0, dims, outer, inner);
    cr_assert(nd == 2 && dims[0] == 4 && dims[1] == 5 && outer[0] == 0 && outer[1] == 1);
    cr_assert(inner[0] == -1 && inner[1] == -1);
    /* Two blocks: outer parts in packing order, then unblocked dims, then
     * the blocks in packing order. */
    n = fixture_scheduled(op, "pack A 1 2 0 3\n");
    nd = rlt_layout_physical_dims(&n, 0, dims, outer, inner);
    cr_assert_eq(nd, 4);
    cr_assert(dims[0] == 3 && dims[1] == 2 && dims[2] == 2 && dims[3] == 3, "%lld %lld %lld %lld",
              (long long)dims[0], (long long)dims[1], (long long)dims[2], (long long)dims[3]);
    cr_assert(outer[1] == 0 && inner[1] == 2 && outer[0] == 1 && inner[0] == 3);
    rlt_op_destroy(op);

    /* Padding is added before blocking: 4 + 1 + 1 = 6 -> 2 blocks of 4. */
    op = fixture_op("conv2d:N=1,C=2,H=4,W=4,K=3,R=3,S=3,pad=1");
    n = fixture_scheduled(op, "pad I\npack I 3 4\n");
    nd = rlt_layout_physical_dims(&n, 0, dims, NULL, NULL);
    cr_assert_eq(nd, 5);
    int64_t want[] = {2, 1, 2, 6, 4};
    for (int d = 0; d < nd; d++) cr_assert_eq(dims[d], want[d], "dim %d", d);
    cr_assert(n.layouts[0].is_padded);
    for (int d = 0; d < 4; d++) {
        int64_t w = d >= 2 ? 1 : 0;
        cr_assert(n.layouts[0].pad_lo[d] == w && n.layouts[0].pad_hi[d] == w, "dim %d", d);
    }
    rlt_op_destroy(op);
}
