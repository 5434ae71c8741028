/* Unit tests of src/space: knobs derived for every op, index <-> config,
 * neighbours, keys, validity rules, the schedule of a configuration, and
 * random valid configurations measured correct through the real pipeline. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "measure/measure.h"
#include "space/space.h"

#include "../common/fixtures.h"

static const char *const SPECS[] = {
    "matmul:M=512,N=512,K=512",
    "batch_matmul:B=12,M=128,N=128,K=64",
    "dense:M=1,N=1000,K=512,bias=1,relu=1",
    "conv2d:N=1,C=128,H=28,W=28,K=128,R=3,S=3,stride=1,pad=1",
    "depthwise_conv2d:N=1,C=32,H=112,W=112,R=3,S=3,stride=1,pad=1",
};

static void make_space(const rlt_op *op, int threads, rlt_space *s)
{
    rlt_diag d = {0};
    /* the caches fixed, so that the seeds do not depend on the machine */
    rlt_space_opts o = {
        .n_threads = threads, .vector_floats = 8, .l1d_bytes = 32 << 10, .l2_bytes = 512 << 10, .no_clang = true};
    cr_assert_eq(rlt_space_create(op, &o, s, &d), RLT_STATUS_OK, "%s", d.message);
}

static int find_knob(const rlt_space *s, const char *name)
{
    for (int k = 0; k < s->n_knobs; k++)
        if (strcmp(s->knobs[k].name, name) == 0) return k;
    return -1;
}

/* Builds (-O1) and runs nests[0..n) of op once each, checked against the
 * reference; their results in r. */
static void measure_quickly(const rlt_op *op, int n, const rlt_nest *nests, rlt_run_result *r)
{
    rlt_diag d = {0};
    rlt_build_opts bopts = {.cflags = "-O1 -march=native"};
    rlt_workload *w = NULL;
    cr_assert_eq(rlt_workload_create(op, &bopts, 3, &w, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_run_opts ropts = {.repeat = 1, .number = 1, .min_repeat_ms = 0.001, .timeout_s = 20, .n_threads = 2};
    cr_assert_eq(rlt_measure_nests(w, &bopts, &ropts, n, nests, r, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_workload_destroy(w);
}

Test(space, every_op_gets_tiling_knobs_by_the_same_rule)
{
    for (size_t i = 0; i < sizeof SPECS / sizeof SPECS[0]; i++) {
        rlt_op *op = fixture_op(SPECS[i]);
        rlt_space s;
        make_space(op, 1, &s);
        cr_assert_gt(rlt_space_size(&s), 1000, "%s", SPECS[i]);
        cr_assert_geq(find_knob(&s, "vec"), 0, "%s", SPECS[i]);
        cr_assert_geq(find_knob(&s, "unroll"), 0);
        cr_assert_lt(find_knob(&s, "parallel"), 0, "one thread: no parallel knob");
        /* every spatial axis longer than 1 has a register tile and a middle tile */
        for (int a = 0; a < op->n_spatial; a++) {
            char name[64];
            snprintf(name, sizeof name, "%s.tile", op->axes[a].name);
            cr_assert_eq(find_knob(&s, name) >= 0, op->axes[a].extent > 1, "%s %s", SPECS[i], name);
        }
        rlt_op_destroy(op);
    }
    rlt_op *conv = fixture_op(SPECS[3]);
    rlt_space s;
    make_space(conv, 2, &s);
    cr_assert_geq(find_knob(&s, "pad.I"), 0, "padded input gets a pad knob");
    cr_assert_geq(find_knob(&s, "pack.W"), 0, "weights indexed by k alone can be packed");
    cr_assert_geq(find_knob(&s, "parallel"), 0, "two threads: a parallel knob");
    cr_assert_lt(find_knob(&s, "n.tile"), 0, "an axis of extent 1 has no knobs");
    rlt_op_destroy(conv);
}

Test(space, index_config_and_key_round_trip)
{
    rlt_op *op = fixture_op(SPECS[3]);
    rlt_space s;
    make_space(op, 2, &s);
    rlt_rng rng;
    rlt_rng_seed(&rng, 7);
    for (int i = 0; i < 500; i++) {
        rlt_config c, back;
        rlt_space_random(&s, &rng, &c);
        uint64_t index = rlt_space_index_of(&s, &c);
        cr_assert_lt(index, rlt_space_size(&s));
        rlt_space_config_of(&s, index, &back);
        cr_assert_eq(memcmp(&c, &back, sizeof c), 0);
        rlt_str key;
        rlt_str_init(&key);
        rlt_space_config_key(&s, &c, &key);
        rlt_diag d = {0};
        cr_assert_eq(rlt_space_config_parse(&s, key.data, &back, &d), RLT_STATUS_OK, "%s: %s", key.data, d.message);
        cr_assert_eq(memcmp(&c, &back, sizeof c), 0, "%s", key.data);
        rlt_str_free(&key);
    }
    rlt_config c;
    rlt_diag d = {0};
    cr_assert_eq(rlt_space_config_parse(&s, "v2;vec=none", &c, &d), RLT_STATUS_PARSE_ERROR);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_space_config_parse(&s, "v1;nosuch=3", &c, &d), RLT_STATUS_PARSE_ERROR);
    cr_assert(strstr(d.message, "nosuch") != NULL, "%s", d.message);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_space_config_parse(&s, "v1;vec=none", &c, &d), RLT_STATUS_PARSE_ERROR);
    cr_assert(strstr(d.message, "missing") != NULL, "%s", d.message);
    rlt_op_destroy(op);
}

Test(space, neighbours_step_one_knob_within_range)
{
    rlt_op *op = fixture_op(SPECS[0]);
    rlt_space s;
    make_space(op, 1, &s);
    rlt_config c = {0}, n;
    cr_assert_not(rlt_space_neighbour(&s, &c, 0, -1, &n), "below the first choice");
    cr_assert(rlt_space_neighbour(&s, &c, 0, +1, &n));
    cr_assert_eq(n.choice[0], 1);
    for (int k = 1; k < s.n_knobs; k++) cr_assert_eq(n.choice[k], c.choice[k]);
    c.choice[1] = (int16_t)(s.knobs[1].n_choices - 1);
    cr_assert_not(rlt_space_neighbour(&s, &c, 1, +1, &n), "past the last choice");
    cr_assert_not(rlt_space_neighbour(&s, &c, s.n_knobs, +1, &n), "no such knob");
    rlt_op_destroy(op);
}

/* The configuration of `key` in s (*c) and its schedule (returned; destroy
 * it), whose text must be `expected`. */
static rlt_sched *assert_schedule_of(const rlt_space *s, const char *key, const char *expected, rlt_config *c,
                                     const char **out_cc)
{
    rlt_diag d = {0};
    cr_assert_eq(rlt_space_config_parse(s, key, c, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_sched *sched = NULL;
    cr_assert_eq(rlt_space_schedule(s, c, &sched, out_cc, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_str text;
    rlt_str_init(&text);
    rlt_sched_print(sched, &text);
    cr_assert_str_eq(text.data, expected);
    rlt_str_free(&text);
    return sched;
}

Test(space, the_hand_written_matmul_schedule_is_in_the_space)
{
    rlt_op *op = fixture_op(SPECS[0]);
    rlt_space s;
    make_space(op, 1, &s);
    rlt_config c;
    rlt_diag d = {0};
    const char *key = "v1;vec=j*8;i.tile=6;i.mid=1;j.tile=2;j.mid=1;k.tile=256;order.s=j,i;unroll=1;"
                      "pack.A=off;pack.B=j";
    const char *cc = NULL;
    rlt_sched *sched = assert_schedule_of(&s, key, "# rltune schedule v1\n"
                                                   "split i 6\n"
                                                   "split j 16\n"
                                                   "split j.i 8\n"
                                                   "split k 256\n"
                                                   "reorder j.o i.o k.o k.i j.i.o i.i j.i.i\n"
                                                   "cache_write k.o\n"
                                                   "unroll j.i.o\n"
                                                   "unroll i.i\n"
                                                   "vectorize j.i.i\n"
                                                   "pack B 1 16\n", &c, &cc);
    cr_assert_str_eq(cc, "gcc");
    rlt_nest n;
    cr_assert_eq(rlt_sched_apply(sched, op, &n, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_sched_destroy(sched);
    rlt_op_destroy(op);
}

Test(space, redundant_and_illegal_configurations_are_invalid)
{
    rlt_op *op = fixture_op("matmul:M=10,N=64,K=64");
    rlt_space s;
    make_space(op, 2, &s);
    rlt_config c = {0};
    int mid = find_knob(&s, "i.mid"), tile = find_knob(&s, "i.tile"), par = find_knob(&s, "parallel");
    cr_assert(mid >= 0 && tile >= 0 && par >= 0);
    cr_assert(rlt_space_is_valid(&s, &c), "all-first choices: the plain nest");
    /* i.tile = 8 leaves 2 register tiles: i.mid = 4 repeats i.mid = 2 */
    c.choice[tile] = 7; /* 8 */
    c.choice[mid] = 2;  /* 4 */
    rlt_diag d = {0};
    rlt_nest n;
    cr_assert_eq(rlt_space_nest(&s, &c, &n, NULL, &d), RLT_STATUS_ILLEGAL_SCHEDULE);
    cr_assert(strstr(d.message, "i.mid") != NULL, "%s", d.message);
    c.choice[mid] = 1; /* 2 */
    cr_assert(rlt_space_is_valid(&s, &c));
    cr_assert_eq(s.knobs[tile].n_choices, 8, "no register tile longer than the axis is offered");
    /* parallel over i when the tile covers all of i: nothing to share out */
    c.choice[mid] = 0;
    c.choice[tile] = 7; /* 8: i.o has 2 iterations, fine */
    int i_choice = -1;
    for (int ch = 0; ch < s.knobs[par].n_choices; ch++)
        if (s.knobs[par].values[ch] == 0) i_choice = ch;
    cr_assert_geq(i_choice, 0);
    c.choice[par] = (int16_t)i_choice;
    cr_assert(rlt_space_is_valid(&s, &c));
    rlt_op_destroy(op);
}

Test(space, random_valid_configurations_measure_correct)
{
    static const char *const small[] = {
        "matmul:M=20,N=36,K=17",
        "conv2d:N=1,C=5,H=9,W=10,K=12,R=3,S=3,stride=1,pad=1",
        "dense:M=3,N=40,K=24,bias=1,relu=1",
    };
    for (size_t i = 0; i < sizeof small / sizeof small[0]; i++) {
        rlt_op *op = fixture_op(small[i]);
        rlt_space s;
        make_space(op, 2, &s);
        rlt_rng rng;
        rlt_rng_seed(&rng, 11 + i);
        enum { N = 10 };
        rlt_nest nests[N];
        rlt_str keys[N];
        int n = 0;
        for (int tries = 0; tries < 2000 && n < N; tries++) {
            rlt_config c;
            rlt_space_random(&s, &rng, &c);
            if (rlt_space_nest(&s, &c, &nests[n], NULL, NULL) != RLT_STATUS_OK) continue;
            rlt_str_init(&keys[n]);
            rlt_space_config_key(&s, &c, &keys[n]);
            n++;
        }
        cr_assert_eq(n, N, "%s: too few valid configurations", small[i]);
        rlt_run_result r[N];
        measure_quickly(op, n, nests, r);
        for (int k = 0; k < n; k++) {
            cr_expect_eq(r[k].status, RLT_STATUS_OK, "%s %s: %s %s", small[i], keys[k].data,
                         rlt_status_str(r[k].status), r[k].message);
            rlt_str_free(&keys[k]);
        }
        rlt_op_destroy(op);
    }
}

/* A row narrower than a vector: the vec knob also offers the width past it
 * (at most twice the row), after every other choice; the schedule splits
 * past the extent, keeps the loop of one iteration outermost and vectorizes
 * the rest; and such kernels, masked at the row's end, compute the reference.
 * Likewise a register tile whose last vector ends past its axis. */
Test(space, a_vector_wider_than_its_axis_is_one_masked_vector)
{
    rlt_op *op = fixture_op("depthwise_conv2d:N=1,C=3,H=6,W=7,R=3,S=3,stride=1,pad=1");
    rlt_space s;
    make_space(op, 2, &s);
    int vec = find_knob(&s, "vec");
    cr_assert_geq(vec, 0);
    rlt_str all;
    rlt_str_init(&all);
    for (int ch = 0; ch < s.knobs[vec].n_choices; ch++) {
        rlt_str_append(&all, " ");
        rlt_knob_value_text(&s, &s.knobs[vec], ch, &all);
    }
    cr_assert_str_eq(all.data, " none p*4 q*4 c*4 p*8 q*8", "the wide widths come last");
    rlt_str_free(&all);

    rlt_config c;
    rlt_diag d = {0};
    const char *key = "v1;vec=q*8;c.tile=1;c.mid=1;p.tile=3;p.mid=1;q.tile=1;q.mid=1;r.tile=3;s.tile=3;"
                      "order.s=c,p,q;order.r=r,s;unroll=1;pack.I=off;pack.W=off;pad.I=0;parallel=c";
    rlt_sched *sched = assert_schedule_of(&s, key, "# rltune schedule v1\n"
                                                   "split p 3\n"
                                                   "split q 8\n"
                                                   "reorder n q.o c p.o r s p.i q.i\n"
                                                   "cache_write p.o\n"
                                                   "unroll p.i\n"
                                                   "unroll s\n"
                                                   "unroll r\n"
                                                   "vectorize q.i\n"
                                                   "parallel c\n", &c, NULL);
    rlt_sched_destroy(sched);
    /* more than one wide vector in the register tile repeats the first */
    int q_tile = find_knob(&s, "q.tile");
    c.choice[q_tile] = 1;
    cr_assert_not(rlt_space_is_valid(&s, &c));

    /* random configurations with a wide vector, measured */
    rlt_rng rng;
    rlt_rng_seed(&rng, 5);
    enum { N = 12 };
    rlt_nest nests[N];
    int n = 0;
    for (int tries = 0; tries < 4000 && n < N; tries++) {
        rlt_space_random(&s, &rng, &c);
        c.choice[vec] = (int16_t)(s.knobs[vec].n_choices - 1 - (int)rlt_rng_below(&rng, 3));
        if (rlt_space_nest(&s, &c, &nests[n], NULL, NULL) == RLT_STATUS_OK) n++;
    }
    cr_assert_eq(n, N, "too few valid configurations with a wide vector");
    rlt_run_result r[N];
    measure_quickly(op, n, nests, r);
    for (int k = 0; k < n; k++)
        cr_expect_eq(r[k].status, RLT_STATUS_OK, "configuration %d: %s %s", k, rlt_status_str(r[k].status),
                     r[k].message);
    rlt_op_destroy(op);

    /* a register tile of vectors may end past its axis, by less than a vector */
    op = fixture_op("matmul:M=4,N=20,K=3");
    make_space(op, 1, &s);
    key = "v1;vec=j*8;i.tile=2;i.mid=1;j.tile=3;j.mid=1;k.tile=3;order.s=i,j;unroll=1;pack.A=off;pack.B=off";
    sched = assert_schedule_of(&s, key, "# rltune schedule v1\n"
                                        "split i 2\n"
                                        "split j 8\n"
                                        "reorder i.o k i.i j.o j.i\n"
                                        "cache_write i.o\n"
                                        "unroll i.i\n"
                                        "unroll j.o\n"
                                        "unroll k\n"
                                        "vectorize j.i\n", &c, NULL);
    rlt_sched_destroy(sched);
    cr_assert_eq(rlt_space_nest(&s, &c, &nests[0], NULL, &d), RLT_STATUS_OK, "%s", d.message);
    c.choice[find_knob(&s, "j.tile")] = 3; /* 4 vectors: the last one wholly past */
    cr_assert_not(rlt_space_is_valid(&s, &c));
    measure_quickly(op, 1, nests, r);
    cr_expect_eq(r[0].status, RLT_STATUS_OK, "%s %s", rlt_status_str(r[0].status), r[0].message);
    rlt_op_destroy(op);
}

/* A stride-2 window's unrolled column loop (s) runs inside the register
 * tile, just outside a vector of 16, where codegen shares its taps' loads;
 * at 8 lanes, where it does not, the window stays outside the tile. */
Test(space, a_stride_2_windows_columns_run_inside_the_tile)
{
    rlt_op *op = fixture_op("depthwise_conv2d:N=1,C=4,H=56,W=56,R=3,S=3,stride=2,pad=1");
    rlt_space s;
    rlt_diag d = {0};
    rlt_space_opts o = {.n_threads = 1, .vector_floats = 16, .l1d_bytes = 32 << 10, .l2_bytes = 512 << 10, .no_clang = true};
    cr_assert_eq(rlt_space_create(op, &o, &s, &d), RLT_STATUS_OK, "%s", d.message);
    /* the same tile at 16 lanes (window inside) and at 8 (outside) */
    static const struct {
        const char *key, *reorder;
    } cases[] = {
        {"v1;vec=q*16;c.tile=1;c.mid=1;p.tile=2;p.mid=1;q.tile=2;q.mid=1;r.tile=3;s.tile=3;"
         "order.s=c,p,q;order.r=r,s;unroll=1;pack.I=off;pack.W=off;pad.I=0",
         "split q 16\nreorder n c p.o r p.i q.o s q.i\n"},
        {"v1;vec=q*8;c.tile=1;c.mid=1;p.tile=2;p.mid=1;q.tile=4;q.mid=1;r.tile=3;s.tile=3;"
         "order.s=c,p,q;order.r=r,s;unroll=1;pack.I=off;pack.W=off;pad.I=0",
         "split q 8\nreorder n c p.o r s p.i q.o q.i\n"},
    };
    for (size_t i = 0; i < RLT_ARRAY_LEN(cases); i++) {
        char expected[512];
        snprintf(expected, sizeof expected,
                 "# rltune schedule v1\nsplit p 2\n%scache_write p.o\nunroll p.i\nunroll q.o\nunroll s\nunroll r\n"
                 "vectorize q.i\n",
                 cases[i].reorder);
        rlt_config c;
        rlt_sched_destroy(assert_schedule_of(&s, cases[i].key, expected, &c, NULL));
    }
    rlt_op_destroy(op);
}

/* ---- projection of a nest onto the space -------------------------------- */

/* A configuration's own nest reads back as a valid configuration with the
 * same register tile, vectorization and parallel axis. */
Test(space, a_configurations_nest_projects_back_to_it)
{
    for (size_t i = 0; i < sizeof SPECS / sizeof SPECS[0]; i++) {
        rlt_op *op = fixture_op(SPECS[i]);
        rlt_space s;
        make_space(op, 2, &s);
        rlt_rng rng;
        rlt_rng_seed(&rng, 7);
        int n_checked = 0;
        for (int t = 0; t < 20000 && n_checked < 40; t++) {
            rlt_config c;
            rlt_space_random(&s, &rng, &c);
            for (int k = 0; k < s.n_knobs; k++) {
                rlt_knob_kind kind = s.knobs[k].kind;
                if (kind == RLT_KNOB_ORDER_S || kind == RLT_KNOB_ORDER_R || kind == RLT_KNOB_PACK ||
                    kind == RLT_KNOB_PAD || kind == RLT_KNOB_CC)
                    c.choice[k] = 0;
            }
            rlt_nest nest;
            if (rlt_space_nest(&s, &c, &nest, NULL, NULL) != RLT_STATUS_OK) continue;
            rlt_config back;
            rlt_diag d = {0};
            cr_assert_eq(rlt_space_project(&s, &nest, &back, &d), RLT_STATUS_OK, "%s", d.message);
            /* the register tile, vectorization and parallel axis read back exactly */
            for (int k = 0; k < s.n_knobs; k++) {
                rlt_knob_kind kind = s.knobs[k].kind;
                if (kind != RLT_KNOB_VEC && kind != RLT_KNOB_TILE && kind != RLT_KNOB_PARALLEL) continue;
                cr_assert_eq(back.choice[k], c.choice[k], "%s: knob %s", SPECS[i], s.knobs[k].name);
            }
            cr_assert(rlt_space_is_valid(&s, &back));
            n_checked++;
        }
        cr_assert_geq(n_checked, 10, "%s: too few valid configurations drawn", SPECS[i]);
        rlt_op_destroy(op);
    }
}

/* A nest the space does not make (the env's kind) lands on a valid
 * configuration with its register tile and vectorized axis. */
Test(space, an_env_nest_projects_to_its_register_tile)
{
    rlt_op *op = fixture_op("matmul:M=128,N=128,K=128");
    rlt_space s;
    make_space(op, 1, &s);
    rlt_sched *sched = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_sched_parse("split j 8\nsplit i 4\nreorder i.o j.o k i.i j.i\ncache_write j.o\n"
                                 "unroll i.i\nvectorize j.i",
                                 "env", &sched, &d),
                 RLT_STATUS_OK, "%s", d.message);
    rlt_nest nest;
    cr_assert_eq(rlt_sched_apply(sched, op, &nest, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_config c;
    cr_assert_eq(rlt_space_project(&s, &nest, &c, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert(rlt_space_is_valid(&s, &c));
    rlt_str key;
    rlt_str_init(&key);
    rlt_space_config_key(&s, &c, &key);
    cr_assert(strstr(key.data, ";vec=j*8;"), "%s", key.data);
    cr_assert(strstr(key.data, ";i.tile=4;"), "%s", key.data);
    cr_assert(strstr(key.data, ";j.tile=1;"), "%s", key.data);
    cr_assert(strstr(key.data, ";unroll=1"), "%s", key.data);
    rlt_str_free(&key);
    rlt_sched_destroy(sched);
    rlt_op_destroy(op);
}

/* The value text of knob `name` in configuration c ("" when the space has no such knob). */
static void knob_text(const rlt_space *s, const rlt_config *c, const char *name, char *out, size_t cap)
{
    int k = find_knob(s, name);
    out[0] = '\0';
    if (k < 0) return;
    rlt_str t;
    rlt_str_init(&t);
    rlt_knob_value_text(s, &s->knobs[k], c->choice[k], &t);
    snprintf(out, cap, "%s", t.data ? t.data : "");
    rlt_str_free(&t);
}

/* Knob `name` of seed i has the value text `expected`. */
static void assert_knob(const rlt_space *s, const rlt_config *c, int i, const char *name, const char *expected)
{
    char text[64];
    knob_text(s, &c[i], name, text, sizeof text);
    cr_assert_str_eq(text, expected, "seed %d: %s=%s, not %s", i, name, text, expected);
}

/* knob_text as a value. */
static const char *text_of(const rlt_space *s, const rlt_config *c, const char *name, char *buf, size_t cap)
{
    knob_text(s, c, name, buf, cap);
    return buf;
}

static void key_of(const rlt_space *s, const rlt_config *c, char *buf, size_t cap)
{
    rlt_str key;
    rlt_str_init(&key);
    rlt_space_config_key(s, c, &key);
    snprintf(buf, cap, "%s", key.data);
    rlt_str_free(&key);
}

/* A configuration of a kindred space (the op with another epilogue, at
 * another thread count) is adopted knob by knob: shared knobs keep their
 * values, a knob the key lacks takes each of its choices, one the space
 * lacks is dropped; back again, it is the configuration it came from. */
Test(space, a_kindred_spaces_key_is_adopted)
{
    rlt_op *relu = fixture_op("conv2d:N=1,C=64,H=14,W=14,K=64,R=3,S=3,stride=1,pad=1,epilogue=bias+relu");
    rlt_op *add = fixture_op("conv2d:N=1,C=64,H=14,W=14,K=64,R=3,S=3,stride=1,pad=1,epilogue=bias+add+relu");
    rlt_space sr, sa, sr2;
    make_space(relu, 1, &sr);
    make_space(add, 1, &sa);
    make_space(relu, 2, &sr2);
    int res = find_knob(&sa, "pack.res"), par = find_knob(&sr2, "parallel");
    cr_assert(res >= 0 && find_knob(&sr, "pack.res") < 0, "the residual's pack knob is the add's alone");
    cr_assert(par >= 0 && find_knob(&sr, "parallel") < 0);
    /* the seeds and their valid neighbours (random configurations are
     * mostly invalid) */
    rlt_config pool[16 * (1 + 2 * RLT_SPACE_MAX_KNOBS)];
    int n_pool = rlt_space_seeds(&sr, 16, pool), n_seeds = n_pool;
    for (int i = 0; i < n_seeds; i++)
        for (int k = 0; k < sr.n_knobs; k++)
            for (int dk = -1; dk <= 1; dk += 2)
                if (rlt_space_neighbour(&sr, &pool[i], k, dk, &pool[n_pool]) && rlt_space_is_valid(&sr, &pool[n_pool]))
                    n_pool++;
    int n_tried = 0;
    for (int i = 0; i < n_pool && n_tried < 60; i += 1 + n_pool / 60) {
        rlt_config c = pool[i];
        n_tried++;
        char key[1024], a[256], b[256];
        key_of(&sr, &c, key, sizeof key);
        rlt_config got[RLT_SPACE_MAX_KNOBS + 16];
        int n = rlt_space_configs_adopt(&sa, key, got, 0, (int)RLT_ARRAY_LEN(got));
        cr_assert_geq(n, 1, "%s", key);
        cr_assert_leq(n, sa.knobs[res].n_choices);
        for (int j = 0; j < n; j++) {
            cr_assert(rlt_space_is_valid(&sa, &got[j]));
            for (int k = 0; k < sr.n_knobs; k++)
                cr_assert_str_eq(text_of(&sa, &got[j], sr.knobs[k].name, a, sizeof a),
                                 text_of(&sr, &c, sr.knobs[k].name, b, sizeof b), "knob %s of %s", sr.knobs[k].name,
                                 key);
            for (int m = 0; m < j; m++) cr_assert_neq(got[m].choice[res], got[j].choice[res], "each once");
            /* back: the residual's knob dropped, the configuration it came from */
            char back_key[1024];
            key_of(&sa, &got[j], back_key, sizeof back_key);
            rlt_config back;
            cr_assert_eq(rlt_space_configs_adopt(&sr, back_key, &back, 0, 1), 1);
            cr_assert_eq(rlt_space_index_of(&sr, &back), rlt_space_index_of(&sr, &c), "%s", back_key);
        }
        /* offered again with what it gave: nothing new */
        cr_assert_eq(rlt_space_configs_adopt(&sa, key, got, n, (int)RLT_ARRAY_LEN(got)), 0);
        /* at two threads: the parallel knob at each of its (valid) choices */
        n = rlt_space_configs_adopt(&sr2, key, got, 0, (int)RLT_ARRAY_LEN(got));
        cr_assert_geq(n, 1, "%s", key);
        for (int j = 0; j < n; j++)
            for (int k = 0; k < sr.n_knobs; k++)
                cr_assert_str_eq(text_of(&sr2, &got[j], sr.knobs[k].name, a, sizeof a),
                                 text_of(&sr, &c, sr.knobs[k].name, b, sizeof b));
    }
    cr_assert_geq(n_tried, 40);
    /* not of this version, or a value that is not a choice: none */
    rlt_config c, got;
    rlt_space_seeds(&sr, 1, &c);
    char key[1024];
    key_of(&sr, &c, key, sizeof key);
    key[1] = '9';
    cr_assert_eq(rlt_space_configs_adopt(&sa, key, &got, 0, 1), 0);
    key_of(&sr, &c, key, sizeof key);
    char *vec = strstr(key, ";vec=");
    cr_assert_not_null(vec);
    memcpy(vec + 5, "zz", 2);
    cr_assert_eq(rlt_space_configs_adopt(&sa, key, &got, 0, 1), 0, "%s", key);
    rlt_op_destroy(relu);
    rlt_op_destroy(add);
}

Test(space, seeds_are_distinct_valid_and_deterministic)
{
    for (size_t i = 0; i < sizeof SPECS / sizeof SPECS[0]; i++)
        for (int threads = 1; threads <= 2; threads++) {
            rlt_op *op = fixture_op(SPECS[i]);
            rlt_space s;
            make_space(op, threads, &s);
            rlt_config a[8], b[8];
            int n = rlt_space_seeds(&s, 8, a);
            cr_assert_eq(n, 8, "%s: %d seeds", SPECS[i], n);
            cr_assert_eq(rlt_space_seeds(&s, 8, b), n);
            cr_assert_eq(memcmp(a, b, sizeof a), 0, "%s: the same space gave other seeds", SPECS[i]);
            for (int x = 0; x < n; x++) {
                cr_assert(rlt_space_is_valid(&s, &a[x]), "%s: seed %d invalid", SPECS[i], x);
                for (int y = 0; y < x; y++)
                    cr_assert_neq(rlt_space_index_of(&s, &a[x]), rlt_space_index_of(&s, &a[y]), "%s: seeds %d, %d",
                                  SPECS[i], y, x);
            }
            cr_assert_eq(rlt_space_seeds(&s, 3, b), 3);
            cr_assert_eq(memcmp(a, b, 3 * sizeof *a), 0, "fewer seeds are the first ones");
            cr_assert_eq(rlt_space_seeds(&s, 0, b), 0);
            rlt_op_destroy(op);
        }
}

Test(space, seeds_follow_their_rules)
{
    char text[64];
    /* conv2d: vectorized at full width with at least half the accumulators;
     * the weights packed where vectors along k would gather them; the
     * input, reused by 2*K*R*S flops an element, padded; the output
     * channels parallel at 2 threads; the last quarter blocks C */
    rlt_op *conv = fixture_op(SPECS[3]);
    rlt_space s;
    make_space(conv, 2, &s);
    rlt_config c[8];
    int n = rlt_space_seeds(&s, 8, c), n_blocked = 0;
    for (int i = 0; i < n; i++) {
        rlt_nest nest;
        rlt_diag d = {0};
        cr_assert_eq(rlt_space_nest(&s, &c[i], &nest, NULL, &d), RLT_STATUS_OK, "%s", d.message);
        knob_text(&s, &c[i], "vec", text, sizeof text);
        cr_assert(strcmp(text, "k*8") == 0 || strcmp(text, "q*8") == 0, "seed %d: vec=%s", i, text);
        bool along_k = strcmp(text, "k*8") == 0;
        assert_knob(&s, c, i, "pack.W", along_k ? "k" : "off");
        assert_knob(&s, c, i, "pad.I", "1");
        assert_knob(&s, c, i, "unroll", "1");
        knob_text(&s, &c[i], "parallel", text, sizeof text);
        cr_assert_str_neq(text, "none", "seed %d", i);
        knob_text(&s, &c[i], "c.tile", text, sizeof text);
        n_blocked += strcmp(text, "128") != 0;
        if (i < n - n / 4) cr_assert_str_eq(text, "128", "seed %d: a plain seed keeps C whole", i);
        /* accumulators: the product of the register tiles in units */
        int64_t acc = 1;
        for (int k = 0; k < s.n_knobs; k++)
            if (s.knobs[k].kind == RLT_KNOB_TILE) acc *= s.knobs[k].values[c[i].choice[k]];
        cr_assert(acc >= s.max_accumulators / 2 && acc <= s.max_accumulators, "seed %d: %lld accumulators", i,
                  (long long)acc);
    }
    cr_assert_eq(n_blocked, 2, "a quarter of 8 seeds block C");
    for (int i = 0; i < n; i++) assert_knob(&s, c, i, "order.r", "c,r,s"); /* C=128 outside the 3x3 window */
    rlt_op_destroy(conv);

    /* the stem: 3 channels under a 7x7 window go innermost */
    rlt_op *stem = fixture_op("conv2d:N=1,C=3,H=224,W=224,K=64,R=7,S=7,stride=2,pad=3");
    make_space(stem, 1, &s);
    n = rlt_space_seeds(&s, 8, c);
    cr_assert_gt(n, 0);
    for (int i = 0; i < n; i++) assert_knob(&s, c, i, "order.r", "r,s,c");
    rlt_op_destroy(stem);

    /* depthwise: vectorizing along channels would need the input transposed
     * (a timed copy) and the output written lane by lane: the seeds go along
     * the width; the input, 18 flops an element, is not worth a padded copy */
    rlt_op *dw = fixture_op(SPECS[4]);
    make_space(dw, 1, &s);
    n = rlt_space_seeds(&s, 8, c);
    for (int i = 0; i < n; i++) {
        assert_knob(&s, c, i, "vec", "q*8");
        assert_knob(&s, c, i, "pad.I", "0");
        assert_knob(&s, c, i, "pack.I", "off");
    }
    rlt_op_destroy(dw);
}

/* The k.tile of the first blocked seed (the last quarter of 8) of matmul
 * 512^3 in a space whose caches are l1 and l2 bytes. */
static int64_t blocked_k_tile(const rlt_op *op, int64_t l1, int64_t l2)
{
    rlt_diag d = {0};
    rlt_space s;
    rlt_space_opts o = {.n_threads = 1, .vector_floats = 8, .l1d_bytes = l1, .l2_bytes = l2, .no_clang = true};
    cr_assert_eq(rlt_space_create(op, &o, &s, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_config c[8];
    cr_assert_eq(rlt_space_seeds(&s, 8, c), 8);
    int k = find_knob(&s, "k.tile");
    cr_assert_geq(k, 0);
    return s.knobs[k].values[c[6].choice[k]];
}

Test(space, blocked_seeds_follow_the_cache_sizes)
{
    rlt_op *mm = fixture_op(SPECS[0]);
    /* detected from the machine, or the defaults: never zero */
    rlt_diag d = {0};
    rlt_space s;
    rlt_space_opts o = {.n_threads = 1, .no_clang = true};
    cr_assert_eq(rlt_space_create(mm, &o, &s, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert(s.l1d_bytes >= 4096 && s.l2_bytes >= s.l1d_bytes, "L1 %lld, L2 %lld", (long long)s.l1d_bytes,
              (long long)s.l2_bytes);
    /* a reduction block sized for half the L1: four times the L1, a larger block */
    int64_t small = blocked_k_tile(mm, 32 << 10, 512 << 10), large = blocked_k_tile(mm, 128 << 10, 2048 << 10);
    cr_assert_lt(small, 512, "the blocked seed keeps K whole");
    cr_assert_gt(large, small, "k block %lld with a 128 KiB L1, %lld with 32 KiB", (long long)large, (long long)small);
    rlt_op_destroy(mm);
}
