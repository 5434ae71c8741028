/* Unit tests of the schedule primitives and schedules (src/sched/sched.c,
 * src/sched/random.c):
 *  - every primitive on hand-built cases: the resulting loops (names,
 *    extents, order, kinds), the accumulator position and the layouts;
 *  - every legality refusal: ILLEGAL_SCHEDULE, a message saying why, and
 *    `out` left untouched;
 *  - the text form: parse / print round trips, comments, the version header,
 *    errors that name the source and line, apply errors that name the step;
 *  - random schedules: reproducible from a seed, and every one replays;
 *  - out of memory: parsing and code generation fail cleanly at every
 *    allocation (the sanitizer build checks for leaks). */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "sched/sched.h"

#include "../common/fixtures.h"
#include "../common/leaks.h"

/* ---- helpers ------------------------------------------------------------ */

/* The name of the accumulator's variable, "root" or "none". */
static const char *acc_name(const rlt_nest *n)
{
    if (n->acc_var == RLT_ACC_NONE) return "none";
    if (n->acc_var == RLT_ACC_ROOT) return "root";
    return n->vars[n->acc_var].name;
}

/* One step of schedule text applied to `in`: must be refused as illegal
 * with `needle` in the message and `out` untouched. */
static void assert_refused(const rlt_nest *in, const char *step_text, const char *needle)
{
    rlt_sched *s = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_sched_parse(step_text, "test", &s, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(s->n_steps, 1);
    /* `out` starts as something other than `in`, so a partial write shows. */
    rlt_nest out, before;
    memset(&out, 0x5a, sizeof out);
    memcpy(&before, &out, sizeof out);
    rlt_status st = rlt_step_apply(in, &s->steps[0], &out, &d);
    cr_assert_eq(st, RLT_STATUS_ILLEGAL_SCHEDULE, "'%s': want ILLEGAL_SCHEDULE, got %s: %s", step_text,
                 rlt_status_str(st), d.message);
    cr_assert_eq(d.status, st);
    cr_assert(strstr(d.message, needle), "'%s': expected '%s' in: %s", step_text, needle, d.message);
    cr_assert(memcmp(&out, &before, sizeof out) == 0, "'%s': a refused step wrote its output", step_text);
    /* The same when `in` and `out` are one object (rlt_sched_apply does that). */
    rlt_nest same;
    memcpy(&same, in, sizeof same);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_step_apply(&same, &s->steps[0], &same, &d), RLT_STATUS_ILLEGAL_SCHEDULE);
    cr_assert(memcmp(&same, in, sizeof same) == 0, "'%s': a refused step changed its input", step_text);
    rlt_sched_destroy(s);
}

/* ---- split -------------------------------------------------------------- */

Test(split, dividing_and_tail_factors)
{
    rlt_op *op = fixture_op("matmul:M=8,N=6,K=4");
    rlt_nest n = fixture_scheduled(op, "split j 3\n");
    assert_loops(&n, "i:8 j.o:2 j.i:3 k:4r");
    cr_assert_not(rlt_nest_var_has_tail(&n, 1));
    n = fixture_scheduled(op, "split i 3\n");
    assert_loops(&n, "i.o:3 i.i:3 j:6 k:4r");
    cr_assert(rlt_nest_var_has_tail(&n, 0), "8 = 3 * 3 - 1: a tail");
    /* A reduction splits into two reduction loops; splits nest. */
    n = fixture_scheduled(op, "split k 2\nsplit k.o 2\n");
    assert_loops(&n, "i:8 j:6 k.o.o:1r k.o.i:2r k.i:2r");
    rlt_op_destroy(op);
}

Test(split, factor_one_and_factor_larger_than_the_extent)
{
    rlt_op *op = fixture_op("matmul:M=8,N=6,K=4");
    rlt_nest n = fixture_scheduled(op, "split i 1\n");
    assert_loops(&n, "i.o:8 i.i:1 j:6 k:4r");
    cr_assert_not(rlt_nest_var_has_tail(&n, 0));
    /* A factor past the extent but under twice it is kept: one outer
     * iteration, and the inner loop runs past the end (a tail), as a vector
     * wider than its axis needs. */
    n = fixture_scheduled(op, "split j 8\n");
    assert_loops(&n, "i:8 j.o:1 j.i:8 k:4r");
    cr_assert_eq(n.vars[n.loops[2].var].factor, 8);
    cr_assert(rlt_nest_var_has_tail(&n, 1));
    /* From twice the extent on, it is clamped to it: no loop idle more than half the time. */
    n = fixture_scheduled(op, "split j 12\n");
    assert_loops(&n, "i:8 j.o:1 j.i:6 k:4r");
    cr_assert_not(rlt_nest_var_has_tail(&n, 1));
    n = fixture_scheduled(op, "split j 9223372036854775807\n");
    assert_loops(&n, "i:8 j.o:1 j.i:6 k:4r");
    rlt_op_destroy(op);
}

Test(split, annotations_follow_their_half)
{
    rlt_op *op = fixture_expr_op("Y[i,j] = X[i,j] * 2", "i=16,j=32");
    /* Vectorize and unroll describe the inner half, parallel the outer. */
    rlt_nest n = fixture_scheduled(op, "vectorize j\nsplit j 8\n");
    assert_loops(&n, "i:16 j.o:4 j.i:8v");
    n = fixture_scheduled(op, "unroll i\nsplit i 4\n");
    assert_loops(&n, "i.o:4 i.i:4u j:32");
    n = fixture_scheduled(op, "parallel i 3\nsplit i 4\n");
    assert_loops(&n, "i.o:4p3 i.i:4 j:32");
    /* A split that would leave a bad vector width is refused. */
    rlt_nest v = fixture_scheduled(op, "vectorize j\n");
    assert_refused(&v, "split j 3\n", "power of two");
    rlt_op_destroy(op);
}

Test(split, of_the_cache_write_loop_keeps_the_tile)
{
    rlt_op *op = fixture_op("matmul:M=8,N=6,K=4");
    rlt_nest n = fixture_scheduled(op, "cache_write i\nsplit i 4\n");
    assert_loops(&n, "i.o:2 i.i:4 j:6 k:4r");
    /* The tile is what lay inside i: j (and the reduction), not i.i. */
    cr_assert_str_eq(acc_name(&n), "i.i");
    rlt_op_destroy(op);
}

Test(split, refusals)
{
    rlt_op *op = fixture_op("matmul:M=8,N=6,K=4");
    rlt_nest n;
    rlt_nest_init(&n, op);
    assert_refused(&n, "split i 0\n", "factor 0 must be at least 1");
    assert_refused(&n, "split i -2\n", "factor -2 must be at least 1");
    assert_refused(&n, "split x 2\n", "no loop named 'x' (loops: i, j, k)");
    assert_refused(&n, "split i.o 2\n", "no loop named 'i.o'");
    /* At most RLT_MAX_LOOPS loops: 3 + 21 splits of k, k.i, k.i.i, ... */
    char text[4096] = "", name[RLT_LOOP_NAME_MAX] = "k";
    size_t used = 0;
    for (int i = 0; i < RLT_MAX_LOOPS - 3; i++) {
        used += (size_t)snprintf(text + used, sizeof text - used, "split %s 1\n", name);
        strcat(name, ".i");
    }
    rlt_nest full = fixture_scheduled(op, text);
    cr_assert_eq(full.n_loops, RLT_MAX_LOOPS);
    assert_refused(&full, "split i 2\n", "already has 24 loops");
    rlt_op_destroy(op);
}

/* ---- reorder ------------------------------------------------------------ */

Test(reorder, named_loops_take_the_positions_they_jointly_occupy)
{
    rlt_op *op = fixture_op("batch_matmul:B=2,M=3,N=4,K=5");
    rlt_nest n = fixture_scheduled(op, "reorder k b\n");
    assert_loops(&n, "k:5r i:3 j:4 b:2");
    /* Positions 1 and 3 (i, k) swap; b and j stay where they are. */
    n = fixture_scheduled(op, "reorder k i\n");
    assert_loops(&n, "b:2 k:5r j:4 i:3");
    /* Three loops at positions 0, 2, 3 in the order j, b, k. */
    n = fixture_scheduled(op, "reorder j k b\n");
    assert_loops(&n, "j:4 i:3 k:5r b:2");
    /* Naming loops in their current order changes nothing. */
    n = fixture_scheduled(op, "reorder i k\n");
    assert_loops(&n, "b:2 i:3 j:4 k:5r");
    /* Annotations and the accumulator move with their loops. */
    n = fixture_scheduled(op, "parallel b 2\ncache_write b\nunroll k\nreorder j i\n");
    assert_loops(&n, "b:2p2 j:4 i:3 k:5ru");
    cr_assert_str_eq(acc_name(&n), "b");
    rlt_op_destroy(op);
}

Test(reorder, refusals)
{
    rlt_op *op = fixture_op("matmul:M=8,N=8,K=4");
    rlt_nest n;
    rlt_nest_init(&n, op);
    assert_refused(&n, "reorder i x\n", "no loop named 'x'");
    assert_refused(&n, "reorder i i\n", "names loop 'i' twice");
    /* A reorder that breaks an invariant: the vector loop no longer innermost. */
    rlt_nest v = fixture_scheduled(op, "split j 4\nreorder k j.i\nvectorize j.i\n");
    assert_refused(&v, "reorder j.i k\n", "must be innermost");
    /* The parallel loop moved inside the accumulator. */
    rlt_nest p = fixture_scheduled(op, "parallel i\ncache_write j\n");
    assert_refused(&p, "reorder j i\n", "parallel loop 'i' is inside the cache_write accumulator at 'j'");
    /* The primitive itself needs two loops or more. */
    const char *one[] = {"i"};
    rlt_diag d = {0};
    rlt_nest out = n;
    cr_assert_eq(rlt_sched_reorder(&n, 1, one, &out, &d), RLT_STATUS_ILLEGAL_SCHEDULE);
    cr_assert(strstr(d.message, "reorder needs 2 to 3 distinct loops, got 1"), "%s", d.message);
    rlt_op_destroy(op);
}

/* ---- fuse --------------------------------------------------------------- */

Test(fuse, adjacent_loops_become_one)
{
    rlt_op *op = fixture_op("matmul:M=8,N=6,K=4");
    rlt_nest n = fixture_scheduled(op, "fuse i j\n");
    assert_loops(&n, "i_j:48 k:4r");
    int f = n.loops[0].var;
    cr_assert_eq(n.vars[f].origin, RLT_VAR_FUSED);
    cr_assert_eq(n.vars[f].fused_outer, 0);
    cr_assert_eq(n.vars[f].fused_inner, 1);
    cr_assert_not(n.vars[f].is_reduce);
    /* Split parts fuse too, reductions with reductions; a tail stays a tail. */
    n = fixture_scheduled(op, "split i 3\nsplit k 2\nfuse k.o k.i\nfuse i.o i.i\n");
    assert_loops(&n, "i.o_i.i:9 j:6 k.o_k.i:4r");
    cr_assert(rlt_nest_var_has_tail(&n, 0));
    /* A fused loop can be split and parallelised. */
    n = fixture_scheduled(op, "fuse i j\nsplit i_j 5\nparallel i_j.o 2\n");
    assert_loops(&n, "i_j.o:10p2 i_j.i:5 k:4r");
    rlt_op_destroy(op);
}

Test(fuse, of_the_cache_write_loop)
{
    rlt_op *op = fixture_op("matmul:M=8,N=6,K=4");
    /* The accumulator sits inside j; fusing i and j keeps it inside the
     * fused loop, with the same tile. */
    rlt_nest n = fixture_scheduled(op, "cache_write j\nfuse i j\n");
    assert_loops(&n, "i_j:48 k:4r");
    cr_assert_str_eq(acc_name(&n), "i_j");
    rlt_nest before = fixture_scheduled(op, "cache_write i\n");
    assert_refused(&before, "fuse i j\n", "the cache_write accumulator sits between these loops");
    rlt_op_destroy(op);
}

Test(fuse, refusals)
{
    rlt_op *op = fixture_op("matmul:M=8,N=6,K=4");
    rlt_nest n;
    rlt_nest_init(&n, op);
    assert_refused(&n, "fuse i k\n", "'k' must be the loop directly inside 'i'");
    assert_refused(&n, "fuse j i\n", "'i' must be the loop directly inside 'j'");
    assert_refused(&n, "fuse j k\n", "cannot fuse a spatial loop with a reduction loop");
    assert_refused(&n, "fuse i x\n", "no loop named 'x'");
    rlt_nest u = fixture_scheduled(op, "unroll j\n");
    assert_refused(&u, "fuse i j\n", "both loops must be plain loops");
    rlt_nest p = fixture_scheduled(op, "parallel i\n");
    assert_refused(&p, "fuse i j\n", "both loops must be plain loops");
    rlt_op_destroy(op);
}

Test(fuse, long_names_and_too_many_variables_are_refused)
{
    rlt_op *op = fixture_expr_op("Y[i] = X[i]", "i=4");
    /* split + fuse doubles the name: i -> i.o_i.i -> i.o_i.i.o_i.o_i.i.i ... */
    rlt_nest n;
    rlt_nest_init(&n, op);
    char name[256] = "i";
    rlt_diag d = {0};
    rlt_status st = RLT_STATUS_OK;
    int rounds = 0;
    while (st == RLT_STATUS_OK && rounds < 10) {
        char o[300], in[300];
        snprintf(o, sizeof o, "%s.o", name);
        snprintf(in, sizeof in, "%s.i", name);
        st = rlt_sched_split(&n, name, 2, &n, &d);
        if (st == RLT_STATUS_OK) st = rlt_sched_fuse(&n, o, in, &n, &d);
        if (st == RLT_STATUS_OK) cr_assert_lt(snprintf(name, sizeof name, "%s_%s", o, in), (int)sizeof name);
        rounds++;
    }
    cr_assert_eq(st, RLT_STATUS_ILLEGAL_SCHEDULE);
    cr_assert(strstr(d.message, "would be longer than 63 characters"), "%s", d.message);
    cr_assert_eq(rlt_nest_check(&n, NULL), RLT_STATUS_OK, "the last accepted nest stays valid");

    /* Variables: each split adds two, each fuse one; 64 at most. Three
     * rounds of split + fuse per axis keep names short (7, 19, 43 chars)
     * and the loop count fixed; 12 axes give 12 + 12 * 9 variables. */
    rlt_op *mm = fixture_expr_op("Y[a,b,c,d,e,f] += X[a,b,c,d,e,f] * W[g,h,m,n,o,q]",
                         "a=2,b=2,c=2,d=2,e=2,f=2,g=2,h=2,m=2,n=2,o=2,q=2");
    rlt_nest_init(&n, mm);
    d = (rlt_diag){0};
    st = RLT_STATUS_OK;
    for (int a = 0; a < mm->n_axes && st == RLT_STATUS_OK; a++) {
        snprintf(name, sizeof name, "%s", mm->axes[a].name);
        for (int round = 0; round < 3 && st == RLT_STATUS_OK; round++) {
            char o[300], in[300];
            snprintf(o, sizeof o, "%s.o", name);
            snprintf(in, sizeof in, "%s.i", name);
            st = rlt_sched_split(&n, name, 1, &n, &d);
            if (st == RLT_STATUS_OK) st = rlt_sched_fuse(&n, o, in, &n, &d);
            cr_assert_lt(snprintf(name, sizeof name, "%s_%s", o, in), (int)sizeof name);
        }
    }
    cr_assert_eq(st, RLT_STATUS_ILLEGAL_SCHEDULE);
    cr_assert(strstr(d.message, "too many loop variables (at most 64)"), "%s", d.message);
    cr_assert_leq(n.n_vars, RLT_MAX_VARS);
    cr_assert_eq(rlt_nest_check(&n, NULL), RLT_STATUS_OK);
    rlt_op_destroy(mm);
    rlt_op_destroy(op);
}

/* ---- unroll, vectorize, parallel ---------------------------------------- */

Test(annotate, unroll_vectorize_parallel_mark_their_loop)
{
    rlt_op *op = fixture_op("matmul:M=8,N=16,K=4");
    rlt_nest n = fixture_scheduled(op, "split j 8\nreorder k j.i\nvectorize j.i\nunroll k\nparallel i 4\n");
    assert_loops(&n, "i:8p4 j.o:2 k:4ru j.i:8v");
    /* Marking a loop again the same way is allowed and changes nothing
     * (a new thread count replaces the old one). */
    rlt_nest again = fixture_scheduled(op, "split j 8\nreorder k j.i\nvectorize j.i\nunroll k\nparallel i 4\nunroll k\n"
                                   "vectorize j.i\nparallel i 2\n");
    assert_loops(&again, "i:8p2 j.o:2 k:4ru j.i:8v");
    /* Thread counts: absent or 0 means the run-time count. */
    n = fixture_scheduled(op, "parallel j\n");
    assert_loops(&n, "i:8 j:16p0 k:4r");
    n = fixture_scheduled(op, "parallel j 256\n");
    assert_loops(&n, "i:8 j:16p256 k:4r");
    /* Unrolling a reduction loop is fine. */
    n = fixture_scheduled(op, "unroll k\n");
    assert_loops(&n, "i:8 j:16 k:4ru");
    rlt_op_destroy(op);
}

Test(annotate, vectorize_refusals)
{
    rlt_op *op = fixture_op("matmul:M=8,N=96,K=4");
    rlt_nest n;
    rlt_nest_init(&n, op);
    assert_refused(&n, "vectorize k\n", "vectorized loop 'k' is a reduction");
    assert_refused(&n, "vectorize j\n", "must be innermost, but 'k' is inside it");
    rlt_nest r = fixture_scheduled(op, "reorder k j\n");
    assert_refused(&r, "vectorize j\n", "has extent 96: the vector width must be a power of two from 2 to 64");
    rlt_nest w = fixture_scheduled(op, "split j 3\nreorder k j.i\n");
    assert_refused(&w, "vectorize j.i\n", "has extent 3");
    rlt_op *wide = fixture_op("matmul:M=8,N=128,K=4");
    rlt_nest x = fixture_scheduled(wide, "reorder k j\n");
    assert_refused(&x, "vectorize j\n", "has extent 128");
    rlt_nest ok = fixture_scheduled(wide, "split j 64\nreorder k j.i\nvectorize j.i\n");
    assert_loops(&ok, "i:8 j.o:2 k:4r j.i:64v");
    /* A loop carries one annotation. */
    assert_refused(&ok, "unroll j.i\n", "already marked vectorize");
    rlt_op_destroy(wide);
    rlt_op_destroy(op);
}

Test(annotate, parallel_and_unroll_refusals)
{
    rlt_op *op = fixture_op("matmul:M=300,N=128,K=64");
    rlt_nest n;
    rlt_nest_init(&n, op);
    assert_refused(&n, "parallel k\n", "parallel loop 'k' is a reduction");
    rlt_nest p = fixture_scheduled(op, "parallel i\n");
    assert_refused(&p, "parallel j\n", "loops 'i' and 'j' are both parallel");
    assert_refused(&p, "unroll i\n", "the loop is already marked parallel");
    assert_refused(&n, "parallel i 257\n", "thread count 257 must be 0 to 256");
    assert_refused(&n, "parallel i -1\n", "thread count -1 must be 0 to 256");
    assert_refused(&n, "unroll i\n", "unrolled loop 'i' has extent 300, more than 256: split it first");
    rlt_nest u = fixture_scheduled(op, "unroll j\n");
    assert_refused(&u, "unroll k\n", "unrolling 'k' makes 8192 copies of the loop body, more than 4096");
    /* The primitive checks the count too (callers that skip the parser). */
    rlt_diag d = {0};
    rlt_nest out = n;
    cr_assert_eq(rlt_sched_annotate(&n, "i", RLT_LOOP_PARALLEL, 1000, &out, &d), RLT_STATUS_ILLEGAL_SCHEDULE);
    cr_assert(strstr(d.message, "thread count 1000 must be 0 to 256"), "%s", d.message);
    rlt_op_destroy(op);
}

/* ---- cache_write -------------------------------------------------------- */

Test(cache_write, at_a_loop_and_at_the_root)
{
    rlt_op *op = fixture_op("matmul:M=8,N=6,K=4");
    rlt_nest n = fixture_scheduled(op, "cache_write j\n");
    cr_assert_str_eq(acc_name(&n), "j");
    assert_loops(&n, "i:8 j:6 k:4r");
    n = fixture_scheduled(op, "cache_write root\n");
    cr_assert_eq(n.acc_var, RLT_ACC_ROOT);
    /* A second cache_write moves the accumulator. */
    n = fixture_scheduled(op, "cache_write root\ncache_write i\n");
    cr_assert_str_eq(acc_name(&n), "i");
    /* At a reduction loop: the tile is one element, partial sums carried. */
    n = fixture_scheduled(op, "reorder k j\ncache_write k\n");
    cr_assert_str_eq(acc_name(&n), "k");
    /* NULL means root for callers of the primitive. */
    rlt_nest base;
    rlt_nest_init(&base, op);
    cr_assert_eq(rlt_sched_cache_write(&base, NULL, &n, NULL), RLT_STATUS_OK);
    cr_assert_eq(n.acc_var, RLT_ACC_ROOT);
    rlt_op_destroy(op);
}

Test(cache_write, refusals)
{
    rlt_op *op = fixture_op("matmul:M=200,N=100,K=4");
    rlt_nest n;
    rlt_nest_init(&n, op);
    assert_refused(&n, "cache_write root\n",
                   "accumulator at 'root' would hold 20000 floats, more than 16384: move it inward");
    assert_refused(&n, "cache_write x\n", "no loop named 'x'");
    rlt_nest p = fixture_scheduled(op, "parallel j\n");
    assert_refused(&p, "cache_write i\n", "parallel loop 'j' is inside the cache_write accumulator at 'i'");
    rlt_nest v = fixture_scheduled(op, "split j 4\nreorder k j.i\nvectorize j.i\n");
    assert_refused(&v, "cache_write j.i\n", "would sit inside the vectorized loop 'j.i'");
    /* Growing the tile past the limit later is refused too: reorder brings
     * a big spatial loop inside the accumulator. */
    rlt_nest t = fixture_scheduled(op, "split i 100\ncache_write i.o\n");
    cr_assert_eq(rlt_nest_check(&t, NULL), RLT_STATUS_OK, "100 * 100 floats fit");
    rlt_op *big = fixture_op("matmul:M=400,N=100,K=4");
    rlt_nest t2 = fixture_scheduled(big, "split j 2\ncache_write j.i\n");
    assert_refused(&t2, "reorder j.i i\n", "would hold 20000 floats");
    rlt_op_destroy(big);
    rlt_op_destroy(op);
}

/* ---- pack and pad ------------------------------------------------------- */

Test(pack, by_dim_index_and_by_axis_name)
{
    rlt_op *op = fixture_op("matmul:M=4,N=20,K=5");
    /* B[k,j]: dim 1 is indexed by j alone. */
    rlt_nest by_index = fixture_scheduled(op, "pack B 1 16\n");
    rlt_nest by_name = fixture_scheduled(op, "pack B j 16\n");
    const rlt_layout *l = &by_name.layouts[1];
    cr_assert_eq(l->n_blocks, 1);
    cr_assert_eq(l->block_dim[0], 1);
    cr_assert_eq(l->block[0], 16);
    cr_assert_not(l->is_padded);
    cr_assert_eq(rlt_nest_hash(&by_index), rlt_nest_hash(&by_name));
    cr_assert_not(rlt_layout_is_staged(&by_name.layouts[0]));
    /* Several dims, names mixed with indices, in the order given. */
    rlt_nest two = fixture_scheduled(op, "pack A k 4 0 2\n");
    l = &two.layouts[0];
    cr_assert(l->n_blocks == 2 && l->block_dim[0] == 1 && l->block[0] == 4 && l->block_dim[1] == 0 &&
              l->block[1] == 2);
    /* Loops are untouched. */
    assert_loops(&two, "i:4 j:20 k:5r");
    rlt_op_destroy(op);
}

Test(pack, refusals)
{
    rlt_op *op = fixture_op("matmul:M=4,N=20,K=5");
    rlt_nest n;
    rlt_nest_init(&n, op);
    assert_refused(&n, "pack C 0 4\n", "'C' is the output; only inputs can be staged (use cache_write");
    assert_refused(&n, "pack Q 0 4\n", "no tensor named 'Q' (inputs: A, B)");
    assert_refused(&n, "pack B 2 4\n", "dim 2 out of range (the tensor has 2 dims)");
    assert_refused(&n, "pack B -1 4\n", "dim -1 out of range");
    assert_refused(&n, "pack B 99999999999 4\n", "out of range");
    assert_refused(&n, "pack B 0 4 0 2\n", "dim 0 is blocked twice");
    assert_refused(&n, "pack B 0 0\n", "block 0 must be from 1 to 2147483648");
    /* A huge block once overflowed the layout's size arithmetic. */
    assert_refused(&n, "pack B 1 9223372036854775807\n", "block 9223372036854775807 must be from 1 to 2147483648");
    assert_refused(&n, "pack B 1 2147483648\n", "the staged copy would exceed 268435456 floats");
    assert_refused(&n, "pack B i 4\n", "'i' is neither a dim index nor an axis that indexes a dim of B");
    assert_refused(&n, "pack B zz 4\n", "'zz' is neither a dim index nor an axis");
    rlt_nest p = fixture_scheduled(op, "pack B 0 4\n");
    assert_refused(&p, "pack B 1 4\n", "the tensor is already packed");
    assert_refused(&n, "pack B 1 1000000000\n", "the staged copy would exceed 268435456 floats");
    /* An axis that appears only with others in a dim does not name it. */
    rlt_op *conv = fixture_op("conv2d:N=1,C=2,H=6,W=6,K=3,R=3,S=3");
    rlt_nest c;
    rlt_nest_init(&c, conv);
    assert_refused(&c, "pack I p 2\n", "'p' is neither a dim index nor an axis that indexes a dim of I");
    rlt_nest by_c = fixture_scheduled(conv, "pack I c 2\n");
    cr_assert_eq(by_c.layouts[0].block_dim[0], 1);
    rlt_op_destroy(conv);
    rlt_op_destroy(op);
}

Test(pad, conv_input_gets_the_borders_its_accesses_need)
{
    rlt_op *op = fixture_op("conv2d:N=1,C=2,H=5,W=6,K=3,R=3,S=2,stride=1,pad=1");
    /* I[n, c, p+r-1, q+s-1]: p+r-1 in [-1, 5] over H=5 -> 1 below, 1 above;
     * q+s-1 in [-1, 6] over W=6 (Q = 7, S = 2) -> 1 below, 1 above. */
    rlt_nest n = fixture_scheduled(op, "pad I\n");
    const rlt_layout *l = &n.layouts[0];
    cr_assert(l->is_padded);
    int64_t want_lo[] = {0, 0, 1, 1}, want_hi[] = {0, 0, 1, 1};
    for (int d = 0; d < 4; d++)
        cr_assert(l->pad_lo[d] == want_lo[d] && l->pad_hi[d] == want_hi[d], "dim %d: %lld/%lld", d,
                  (long long)l->pad_lo[d], (long long)l->pad_hi[d]);
    cr_assert_eq(l->n_blocks, 0);
    /* Pad and pack together: pad first or pack first, the same layout. */
    rlt_nest a = fixture_scheduled(op, "pad I\npack I 3 4\n");
    rlt_nest b = fixture_scheduled(op, "pack I 3 4\npad I\n");
    cr_assert_eq(rlt_nest_hash(&a), rlt_nest_hash(&b));
    rlt_op_destroy(op);

    /* Asymmetric: stride 2 without padding reads past the end on one side only. */
    op = fixture_expr_op("Y[i] += X[i+k-2] * W[k]", "i=4,k=3");
    n = fixture_scheduled(op, "pad X\n");
    cr_assert(n.layouts[0].pad_lo[0] == 2 && n.layouts[0].pad_hi[0] == 0, "%lld/%lld",
              (long long)n.layouts[0].pad_lo[0], (long long)n.layouts[0].pad_hi[0]);
    rlt_op_destroy(op);
}

Test(pad, refusals)
{
    rlt_op *op = fixture_op("conv2d:N=1,C=2,H=5,W=5,K=3,R=3,S=3,pad=1");
    rlt_nest n;
    rlt_nest_init(&n, op);
    assert_refused(&n, "pad O\n", "'O' is the output");
    assert_refused(&n, "pad W\n", "every access of W is already in bounds; there is nothing to pad");
    assert_refused(&n, "pad Z\n", "no tensor named 'Z' (inputs: I, W)");
    rlt_nest p = fixture_scheduled(op, "pad I\n");
    assert_refused(&p, "pad I\n", "the tensor is already padded");
    rlt_op_destroy(op);
    op = fixture_op("matmul:M=4,N=4,K=4");
    rlt_nest_init(&n, op);
    assert_refused(&n, "pad A\n", "nothing to pad");
    rlt_op_destroy(op);
}

/* ---- schedule text ------------------------------------------------------ */

static rlt_sched *parse_ok(const char *text)
{
    rlt_sched *s = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_sched_parse(text, "test.sched", &s, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_not_null(s);
    return s;
}

static char *print_sched(const rlt_sched *s)
{
    rlt_str t;
    rlt_str_init(&t);
    rlt_sched_print(s, &t);
    char *text = rlt_str_take(&t);
    cr_assert_not_null(text);
    return text;
}

static void assert_same_steps(const rlt_sched *a, const rlt_sched *b)
{
    cr_assert_eq(a->n_steps, b->n_steps);
    for (int i = 0; i < a->n_steps; i++) {
        cr_assert_eq(a->steps[i].kind, b->steps[i].kind, "step %d", i);
        cr_assert_eq(a->steps[i].n_args, b->steps[i].n_args, "step %d", i);
        for (int k = 0; k < a->steps[i].n_args; k++)
            cr_assert_str_eq(a->steps[i].args[k], b->steps[i].args[k], "step %d arg %d", i, k);
    }
}

static void assert_parse_fails(const char *text, rlt_status want, const char *needle)
{
    rlt_sched *s = (rlt_sched *)&s; /* must come back NULL */
    rlt_diag d = {0};
    rlt_status st = rlt_sched_parse(text, "file.sched", &s, &d);
    cr_assert_eq(st, want, "'%s': want %s, got %s: %s", text, rlt_status_str(want), rlt_status_str(st), d.message);
    cr_assert_null(s);
    cr_assert(strstr(d.message, needle), "'%s': expected '%s' in: %s", text, needle, d.message);
}

Test(sched_text, print_of_parse_is_canonical_and_parse_of_print_is_equal)
{
    const char *messy =
        "# rltune schedule v1\n"
        "\n"
        "# tile the output\n"
        "   split\ti   4   # 4 rows a tile\r\n"
        "split j 8\n"
        "reorder i.o j.o i.i k j.i\n"
        "\t\n"
        "fuse i.o j.o\n"
        "unroll i.i\n"
        "vectorize j.i\n"
        "parallel i.o_j.o 2\n"
        "parallel i.o_j.o\n"
        "cache_write i.o_j.o\n"
        "cache_write root\n"
        "pack B j 16 0 4\n"
        "pad I";
    const char *canonical =
        "# rltune schedule v1\n"
        "split i 4\n"
        "split j 8\n"
        "reorder i.o j.o i.i k j.i\n"
        "fuse i.o j.o\n"
        "unroll i.i\n"
        "vectorize j.i\n"
        "parallel i.o_j.o 2\n"
        "parallel i.o_j.o\n"
        "cache_write i.o_j.o\n"
        "cache_write root\n"
        "pack B j 16 0 4\n"
        "pad I\n";
    rlt_sched *s = parse_ok(messy);
    cr_assert_eq(s->n_steps, 12);
    cr_assert_eq(s->steps[0].line, 4, "steps remember their line");
    cr_assert_eq(s->steps[11].line, 16);
    char *text = print_sched(s);
    cr_assert_str_eq(text, canonical);
    rlt_sched *again = parse_ok(text);
    assert_same_steps(s, again);
    char *text2 = print_sched(again);
    cr_assert_str_eq(text2, text, "print is a fixed point");
    rlt_free(text2);
    rlt_free(text);
    rlt_sched_destroy(again);
    rlt_sched_destroy(s);

    /* Empty and comment-only schedules are empty, and print as the header. */
    s = parse_ok("");
    cr_assert_eq(s->n_steps, 0);
    text = print_sched(s);
    cr_assert_str_eq(text, RLT_SCHED_HEADER "\n");
    rlt_free(text);
    rlt_sched_destroy(s);
    s = parse_ok("# nothing\n\n   # at all\n");
    cr_assert_eq(s->n_steps, 0);
    rlt_sched_destroy(s);
    /* Many steps (the step array grows). */
    rlt_str many;
    rlt_str_init(&many);
    for (int i = 0; i < 100; i++) rlt_str_printf(&many, "split i%d %d\n", i, i + 1);
    s = parse_ok(many.data);
    cr_assert_eq(s->n_steps, 100);
    cr_assert_str_eq(s->steps[99].args[0], "i99");
    rlt_sched *copy = rlt_sched_copy(s);
    cr_assert_not_null(copy);
    assert_same_steps(s, copy);
    rlt_sched_destroy(copy);
    rlt_sched_destroy(s);
    rlt_str_free(&many);
}

Test(sched_text, version_header)
{
    rlt_sched *s = parse_ok("# rltune schedule v1\nsplit i 2\n");
    cr_assert_eq(s->n_steps, 1);
    rlt_sched_destroy(s);
    assert_parse_fails("# rltune schedule v2\nsplit i 2\n", RLT_STATUS_PARSE_ERROR,
                       "file.sched:1: schedule format v2 is not supported (this rltune reads v1)");
    assert_parse_fails("split i 2\n# rltune schedule v7\n", RLT_STATUS_PARSE_ERROR, "file.sched:2: schedule format v7");
    assert_parse_fails("# rltune schedule v0\n", RLT_STATUS_PARSE_ERROR, "schedule format v0 is not supported");
    assert_parse_fails("# rltune schedule v10\n", RLT_STATUS_PARSE_ERROR, "schedule format v10 is not supported");
    /* Past INT_MAX: named as written (sscanf's %d would be undefined here). */
    assert_parse_fails("# rltune schedule v99999999999999999999\n", RLT_STATUS_PARSE_ERROR,
                       "schedule format v99999999999999999999 is not supported");
    s = parse_ok("# rltune schedule v001\nsplit i 2\n");
    cr_assert_eq(s->n_steps, 1);
    rlt_sched_destroy(s);
}

Test(sched_text, errors_name_the_source_line_and_what_is_accepted)
{
    assert_parse_fails("split i 2\n\nsplit j\n", RLT_STATUS_PARSE_ERROR,
                       "file.sched:3: split takes 2..2 arguments, got 1 (usage: split LOOP FACTOR)");
    assert_parse_fails("split i 2 3\n", RLT_STATUS_PARSE_ERROR, "file.sched:1: split takes 2..2 arguments, got 3");
    assert_parse_fails("reorder i\n", RLT_STATUS_PARSE_ERROR, "reorder takes 2..24 arguments, got 1");
    assert_parse_fails("unroll\n", RLT_STATUS_PARSE_ERROR, "unroll takes 1..1 arguments, got 0");
    assert_parse_fails("cache_write i j\n", RLT_STATUS_PARSE_ERROR, "usage: cache_write LOOP|root");
    assert_parse_fails("pad\n", RLT_STATUS_PARSE_ERROR, "usage: pad TENSOR");
    assert_parse_fails("pack B 1\n", RLT_STATUS_PARSE_ERROR, "usage: pack TENSOR DIM BLOCK [DIM BLOCK ...]");
    assert_parse_fails("pack B 1 16 0\n", RLT_STATUS_PARSE_ERROR, "file.sched:1: pack: dims and blocks come in pairs");
    assert_parse_fails("split i four\n", RLT_STATUS_PARSE_ERROR,
                       "file.sched:1: split: factor 'four' is not an integer (usage: split LOOP FACTOR)");
    assert_parse_fails("split i 2.5\n", RLT_STATUS_PARSE_ERROR, "factor '2.5' is not an integer");
    assert_parse_fails("split i 99999999999999999999\n", RLT_STATUS_PARSE_ERROR, "is not an integer");
    assert_parse_fails("parallel i x\n", RLT_STATUS_PARSE_ERROR, "thread count 'x' is not an integer");
    assert_parse_fails("pack B 1 x\n", RLT_STATUS_PARSE_ERROR, "block 'x' is not an integer");
    assert_parse_fails("\n\n\n\ntile i 4\n", RLT_STATUS_PARSE_ERROR,
                       "file.sched:5: unknown step 'tile' (steps: split, reorder, fuse, unroll, vectorize, parallel, "
                       "cache_write, pack, pad)");
    assert_parse_fails("Split i 4\n", RLT_STATUS_PARSE_ERROR, "unknown step 'Split'");
    assert_parse_fails("split i\x01 4\n", RLT_STATUS_PARSE_ERROR, "file.sched:1: unexpected character 0x01");
    assert_parse_fails("split \xc3\xa9 4\n", RLT_STATUS_PARSE_ERROR, "unexpected character 0xc3");
    char long_word[200];
    memset(long_word, 'x', sizeof long_word);
    memcpy(long_word, "split ", 6);
    long_word[sizeof long_word - 1] = '\0';
    assert_parse_fails(long_word, RLT_STATUS_PARSE_ERROR, "is longer than 63 characters");
    char *long_line = malloc(5000);
    cr_assert_not_null(long_line);
    memset(long_line, ' ', 5000);
    long_line[4999] = '\0';
    assert_parse_fails(long_line, RLT_STATUS_PARSE_ERROR, "file.sched:1: line longer than 4095 characters");
    free(long_line);
    /* More words than any step takes. */
    rlt_str many;
    rlt_str_init(&many);
    rlt_str_append(&many, "reorder");
    for (int i = 0; i < 40; i++) rlt_str_printf(&many, " l%d", i);
    assert_parse_fails(many.data, RLT_STATUS_PARSE_ERROR, "too many words");
    rlt_str_free(&many);
}

Test(sched_text, add_load_and_kind_names)
{
    rlt_sched *s = rlt_sched_create();
    cr_assert_not_null(s);
    rlt_diag d = {0};
    cr_assert_eq(rlt_sched_add(s, "split i 16", &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_sched_add(s, "  vectorize i.i  # the lanes", &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(s->n_steps, 2);
    cr_assert_eq(s->steps[1].kind, RLT_STEP_VECTORIZE);
    cr_assert_eq(rlt_sched_add(s, "", &d), RLT_STATUS_PARSE_ERROR);
    cr_assert(strstr(d.message, "empty step"), "%s", d.message);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_sched_add(s, "fuse a", &d), RLT_STATUS_PARSE_ERROR);
    cr_assert_eq(s->n_steps, 2);
    rlt_sched_destroy(s);
    rlt_sched_destroy(NULL);

    static const char *const names[] = {"split", "reorder", "fuse", "unroll", "vectorize", "parallel",
                                        "cache_write", "pack", "pad"};
    cr_assert_eq(RLT_ARRAY_LEN(names), (size_t)RLT_STEP_KIND_COUNT);
    for (int k = 0; k < RLT_STEP_KIND_COUNT; k++) cr_assert_str_eq(rlt_step_kind_name(k), names[k]);
    cr_assert_str_eq(rlt_step_kind_name(RLT_STEP_KIND_COUNT), "unknown");
    cr_assert_str_eq(rlt_step_kind_name((rlt_step_kind)-1), "unknown");

    /* rlt_sched_load: the path names the errors. */
    char path[] = "/tmp/rlt_sched_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    const char text[] = "# rltune schedule v1\nsplit i 2\nsplit i.o x\n";
    cr_assert_eq(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(fd);
    rlt_sched *loaded = (rlt_sched *)&loaded;
    d = (rlt_diag){0};
    cr_assert_eq(rlt_sched_load(path, &loaded, &d), RLT_STATUS_PARSE_ERROR);
    cr_assert_null(loaded);
    char want[128];
    snprintf(want, sizeof want, "%s:3: split: factor 'x'", path);
    cr_assert(strstr(d.message, want), "expected '%s' in: %s", want, d.message);
    /* A file with a NUL byte is not a schedule. */
    fd = open(path, O_WRONLY | O_TRUNC);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, "split i 2\n\0\n", 12), 12);
    close(fd);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_sched_load(path, &loaded, &d), RLT_STATUS_PARSE_ERROR);
    cr_assert(strstr(d.message, "not a text file"), "%s", d.message);
    unlink(path);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_sched_load(path, &loaded, &d), RLT_STATUS_IO_ERROR);
    cr_assert_null(loaded);
    cr_assert(strstr(d.message, path), "%s", d.message);
}

Test(sched_text, apply_errors_name_the_schedule_line_or_step)
{
    rlt_op *op = fixture_op("matmul:M=8,N=6,K=4");
    rlt_sched *s = parse_ok("# rltune schedule v1\nsplit i 4\n\n# then\nvectorize i.o\n");
    rlt_nest out;
    rlt_diag d = {0};
    cr_assert_eq(rlt_sched_apply(s, op, &out, &d), RLT_STATUS_ILLEGAL_SCHEDULE);
    cr_assert(strstr(d.message, "schedule line 5: vectorize i.o: vectorized loop 'i.o' must be innermost"), "%s",
              d.message);
    rlt_sched_destroy(s);
    /* An unknown loop: the step is quoted as written. */
    s = parse_ok("split i 4\nunroll q\n");
    d = (rlt_diag){0};
    cr_assert_eq(rlt_sched_apply(s, op, &out, &d), RLT_STATUS_ILLEGAL_SCHEDULE);
    cr_assert(strstr(d.message, "schedule line 2: unroll q: no loop named 'q' (loops: i.o, i.i, j, k)"), "%s",
              d.message);
    rlt_sched_destroy(s);
    /* Steps built in code have no line: they are counted instead. */
    s = rlt_sched_create();
    cr_assert_eq(rlt_sched_add(s, "split i 4", NULL), RLT_STATUS_OK);
    cr_assert_eq(rlt_sched_add(s, "fuse i.i k", NULL), RLT_STATUS_OK);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_sched_apply(s, op, &out, &d), RLT_STATUS_ILLEGAL_SCHEDULE);
    cr_assert(strstr(d.message, "schedule step 2: fuse i.i k: 'k' must be the loop directly inside 'i.i'"), "%s",
              d.message);
    rlt_sched_destroy(s);
    /* A malformed step built by hand is caught when applied. */
    rlt_step bad = {.kind = RLT_STEP_SPLIT, .n_args = 1};
    snprintf(bad.args[0], sizeof bad.args[0], "i");
    d = (rlt_diag){0};
    rlt_nest n;
    rlt_nest_init(&n, op);
    cr_assert_eq(rlt_step_apply(&n, &bad, &out, &d), RLT_STATUS_PARSE_ERROR);
    cr_assert(strstr(d.message, "wrong number of arguments (usage: split LOOP FACTOR)"), "%s", d.message);
    bad.kind = RLT_STEP_KIND_COUNT;
    d = (rlt_diag){0};
    cr_assert_eq(rlt_step_apply(&n, &bad, &out, &d), RLT_STATUS_INTERNAL);
    rlt_op_destroy(op);
}

/* ---- random schedules --------------------------------------------------- */

static const char *const random_specs[] = {
    "matmul:M=13,N=17,K=9",
    "batch_matmul:B=2,M=5,N=9,K=7",
    "dense:M=3,N=11,K=10,bias=1,relu=1",
    "conv2d:N=1,C=3,H=9,W=8,K=4,R=3,S=3,stride=2,pad=1",
    "depthwise_conv2d:N=1,C=4,H=9,W=9,R=3,S=3,stride=1,pad=1",
};

Test(random, same_seed_same_schedule_and_every_one_replays)
{
    for (size_t o = 0; o < RLT_ARRAY_LEN(random_specs); o++) {
        rlt_op *op = fixture_op(random_specs[o]);
        int n_distinct = 0;
        char *prev = NULL;
        for (uint64_t seed = 0; seed < 60; seed++) {
            rlt_random_sched_opts opts = {.n_steps = 12, .max_threads = 4};
            rlt_rng r1, r2;
            rlt_rng_seed(&r1, seed);
            rlt_rng_seed(&r2, seed);
            rlt_sched *a = NULL, *b = NULL;
            cr_assert_eq(rlt_sched_random(op, &r1, &opts, &a, NULL), RLT_STATUS_OK);
            cr_assert_eq(rlt_sched_random(op, &r2, &opts, &b, NULL), RLT_STATUS_OK);
            char *ta = print_sched(a), *tb = print_sched(b);
            cr_assert_str_eq(ta, tb, "%s seed %llu", op->spec, (unsigned long long)seed);
            n_distinct += !prev || strcmp(prev, ta) != 0;
            /* Replays, through the text form too, and lowers. */
            rlt_nest n;
            rlt_diag d = {0};
            cr_assert_eq(rlt_sched_apply(a, op, &n, &d), RLT_STATUS_OK, "%s seed %llu: %s\n%s", op->spec,
                         (unsigned long long)seed, d.message, ta);
            rlt_sched *re = parse_ok(ta);
            assert_same_steps(a, re);
            rlt_nest n2;
            cr_assert_eq(rlt_sched_apply(re, op, &n2, &d), RLT_STATUS_OK, "%s", d.message);
            cr_assert_eq(rlt_nest_hash(&n), rlt_nest_hash(&n2));
            cr_assert_eq(rlt_nest_check(&n, &d), RLT_STATUS_OK, "%s", d.message);
            rlt_kernel_src k;
            cr_assert_eq(rlt_codegen_kernel(&n, &k, &d), RLT_STATUS_OK, "%s", d.message);
            rlt_kernel_src_free(&k);
            /* Thread counts stay within max_threads. */
            for (int l = 0; l < n.n_loops; l++) cr_assert_leq(n.loops[l].n_threads, 4);
            rlt_free(prev);
            prev = ta;
            rlt_free(tb);
            rlt_sched_destroy(re);
            rlt_sched_destroy(a);
            rlt_sched_destroy(b);
        }
        rlt_free(prev);
        cr_assert_gt(n_distinct, 40, "%s: only %d distinct schedules from 60 seeds", op->spec, n_distinct);
        rlt_op_destroy(op);
    }
}

Test(random, fully_fused_and_tiny_nests)
{
    /* A nest that fuses down to one loop must not trip the generator (a
     * reorder draw needs two loops). */
    rlt_op *op = fixture_expr_op("Y[i,j] = X[i,j] + 1", "i=3,j=2");
    for (uint64_t seed = 0; seed < 300; seed++) {
        rlt_rng rng;
        rlt_rng_seed(&rng, seed);
        rlt_sched *s = NULL;
        rlt_random_sched_opts opts = {.n_steps = 20};
        cr_assert_eq(rlt_sched_random(op, &rng, &opts, &s, NULL), RLT_STATUS_OK);
        rlt_nest n;
        rlt_diag d = {0};
        cr_assert_eq(rlt_sched_apply(s, op, &n, &d), RLT_STATUS_OK, "%s", d.message);
        rlt_sched_destroy(s);
    }
    rlt_op_destroy(op);
    /* Extent-1 axes everywhere. */
    op = fixture_op("matmul:M=1,N=1,K=1");
    for (uint64_t seed = 0; seed < 100; seed++) {
        rlt_rng rng;
        rlt_rng_seed(&rng, seed);
        rlt_sched *s = NULL;
        cr_assert_eq(rlt_sched_random(op, &rng, NULL, &s, NULL), RLT_STATUS_OK);
        rlt_nest n;
        rlt_diag d = {0};
        cr_assert_eq(rlt_sched_apply(s, op, &n, &d), RLT_STATUS_OK, "%s", d.message);
        rlt_sched_destroy(s);
    }
    rlt_op_destroy(op);
}

/* ---- out of memory ------------------------------------------------------ */

Test(oom, sched_parse_fails_cleanly_at_every_allocation)
{
    rlt_str text;
    rlt_str_init(&text);
    rlt_str_append(&text, RLT_SCHED_HEADER "\n");
    for (int i = 0; i < 40; i++) rlt_str_printf(&text, "split i%d 2\n", i); /* grows the step array twice */
    char *src = rlt_str_take(&text);
    cr_assert_not_null(src);
    int n_failed = 0;
    for (long n = 1; n < 1000; n++) {
        rlt_sched *s = (rlt_sched *)&s;
        rlt_diag d = {0};
        rlt_alloc_fail_after(n);
        rlt_status st = rlt_sched_parse(src, "oom.sched", &s, &d);
        rlt_alloc_fail_after(0);
        if (st == RLT_STATUS_OK) {
            cr_assert_eq(s->n_steps, 40);
            rlt_sched_destroy(s);
            break;
        }
        cr_assert_eq(st, RLT_STATUS_OUT_OF_MEMORY, "allocation %ld: %s: %s", n, rlt_status_str(st), d.message);
        cr_assert_null(s);
        cr_assert_neq(d.message[0], '\0');
        n_failed++;
    }
    cr_assert_geq(n_failed, 3, "the parse allocates the schedule and grows it twice");
    rlt_free(src);
    assert_no_leaks();
}

/* Code generation under allocation failure: OUT_OF_MEMORY with nothing
 * handed out, or success with exactly the code an unhindered run gives
 * (never code with pieces missing). */
static void check_codegen_oom(const rlt_op *op, const char *sched_text, bool is_reference)
{
    rlt_nest n = fixture_scheduled(op, sched_text);
    rlt_kernel_src want;
    rlt_diag d = {0};
    rlt_status st = is_reference ? rlt_codegen_reference(op, &want, &d) : rlt_codegen_kernel(&n, &want, &d);
    cr_assert_eq(st, RLT_STATUS_OK, "%s", d.message);
    int n_failed = 0;
    for (long k = 1; k < 100000; k++) {
        rlt_kernel_src got = {0};
        d = (rlt_diag){0};
        rlt_alloc_fail_after(k);
        st = is_reference ? rlt_codegen_reference(op, &got, &d) : rlt_codegen_kernel(&n, &got, &d);
        rlt_alloc_fail_after(0);
        if (st == RLT_STATUS_OK) {
            cr_assert_str_eq(got.code, want.code, "%s: allocation %ld gave different code", op->spec, k);
            cr_assert_str_eq(got.symbol, want.symbol);
            rlt_kernel_src_free(&got);
            break;
        }
        cr_assert_eq(st, RLT_STATUS_OUT_OF_MEMORY, "%s, allocation %ld: %s: %s", op->spec, k, rlt_status_str(st),
                     d.message);
        cr_assert_null(got.code);
        n_failed++;
    }
    cr_assert_gt(n_failed, 0);
    rlt_kernel_src_free(&want);
}

Test(oom, codegen_fails_cleanly_at_every_allocation, .timeout = 120)
{
    rlt_op *op = fixture_op("dense:M=5,N=16,K=3,bias=1,relu=1");
    check_codegen_oom(op,
                      "split j 8\nreorder k j.i\nvectorize j.i\nsplit i 2\nunroll i.i\nreorder i.i j.o\n"
                      "cache_write i.o\nparallel i.o\npack W 0 4\n",
                      false);
    check_codegen_oom(op, "split i 2\nsplit j 3\nfuse i.o i.i\n", false);
    check_codegen_oom(op, "", true);
    rlt_op_destroy(op);
    op = fixture_op("conv2d:N=1,C=2,H=5,W=5,K=3,R=3,S=3,pad=1");
    check_codegen_oom(op, "pad I\nsplit q 2\nreorder s q.i\nvectorize q.i\ncache_write p\n", false);
    check_codegen_oom(op, "split p 2\nunroll p.i\n", false);
    check_codegen_oom(op, "", true);
    rlt_op_destroy(op);
    assert_no_leaks();
}
