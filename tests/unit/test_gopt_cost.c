/*
 * test_gopt_cost.c - the cost model of graph substitutions
 * (src/gopt/cost.c): a task with a record costs exactly the record's time
 * and measures nothing; a seed is measured once per process (a second
 * call, a second graph sharing the task); the per-node times sum to the
 * total, with 0 on fused nodes, views and Concats and Splits placed in
 * place (a Split of the graph input copies and costs its copy), and the
 * nodes that cost something are exactly those a compiled network runs;
 * identical fast-op nodes are timed once; a seed measurement is stored in
 * the database and the next cost model reads it instead of measuring; at
 * two threads, fast ops and a network run in this process before a seed
 * leave the seed's forked run working; a whole network's measured latency;
 * errors, every allocation failing in turn, no leaks. Graphs are built with
 * tests/common/onnx_build.h, small, sharing one conv task where they can
 * so that few kernels are built.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../common/leaks.h"
#include "../common/onnx_build.h"
#include "../common/tmp.h"
#include "gopt/cost.h"
#include "graph/graph.h"
#include "net/net.h"
#include "net/net_internal.h"
#include "rltune/records.h"
#include "rltune/session.h"

#define D(...) ((int64_t[]){__VA_ARGS__})

/* The task every conv graph here shares: conv2d 4 -> 8, 3x3, with its Relu. */
#define CONV_SPEC "conv2d:N=1,C=4,H=6,W=6,K=8,R=3,S=3,stride=1,pad=1,dilation=1,epilogue=bias+relu"

static uint64_t rng_state;

static char tmp_dir[] = "/tmp/rlt_gcost_XXXXXX";

static void tmp_fini(void)
{
    if (strcmp(tmp_dir + strlen(tmp_dir) - 6, "XXXXXX") != 0) tmp_remove_tree(tmp_dir);
}

static rlt_graph *load_folded(onnx_build *b)
{
    rlt_graph *g = NULL;
    rlt_diag d = {0};
    cr_assert_eq(ob_load_folded(b, &g, &d), RLT_STATUS_OK, "load failed: %s", d.message);
    ob_free(b);
    return g;
}

/* x [1,4,6,6] -> Conv (4 -> 8, 3x3, pad 1, bias) -> Relu "relu" -> r, then
 * `tail` ("": r is the output; "sigmoid": Sigmoid "sig" -> y; "flatten":
 * Flatten "flat" -> f, Sigmoid "sig" -> y). */
static rlt_graph *conv_graph(const char *tail)
{
    onnx_build b;
    rng_state = 3;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 4, 6, 6));
    ob_conv_rand(&b, "conv", "x", "c", 4, 8, 3, 1, 1, 1, true, &rng_state);
    ob_node(&b, "Relu", "relu", "c", "r");
    if (strcmp(tail, "sigmoid") == 0) {
        ob_node(&b, "Sigmoid", "sig", "r", "y");
        ob_output(&b, "y");
    } else if (strcmp(tail, "flatten") == 0) {
        ob_node(&b, "Flatten", "flat", "r", "f");
        ob_node(&b, "Sigmoid", "sig", "f", "y");
        ob_output(&b, "y");
    } else {
        ob_output(&b, "r");
    }
    return load_folded(&b);
}

static int node_named(const rlt_graph *g, const char *name)
{
    for (int i = 0; i < g->n_nodes; i++)
        if (strcmp(g->nodes[i].name, name) == 0) return i;
    cr_assert_fail("no node '%s'", name);
    return -1;
}

static rlt_gcost *cost_create_seeds(const char *db_path, int n_seeds)
{
    rlt_gcost_options o;
    rlt_gcost_options_init(&o);
    o.db_path = db_path;
    o.repeat = 5;
    o.n_seeds = n_seeds;
    rlt_gcost *c = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_gcost_create(&o, &c, &d), RLT_STATUS_OK, "%s", d.message);
    return c;
}

static rlt_gcost *cost_create(const char *db_path) { return cost_create_seeds(db_path, RLT_GCOST_SEEDS); }

/* The cost of g; per_node (g->n_nodes entries) may be NULL. */
static double cost_of(rlt_gcost *c, const rlt_graph *g, double *per_node)
{
    double total = -1;
    rlt_diag d = {0};
    cr_assert_eq(rlt_gcost_graph(c, g, &total, per_node, &d), RLT_STATUS_OK, "%s", d.message);
    return total;
}

static rlt_gcost_stats stats_of(const rlt_gcost *c)
{
    rlt_gcost_stats s;
    rlt_gcost_stats_get(c, &s);
    return s;
}

/* Checks that per_node sums to total, and that the nodes with a time are
 * exactly those whose step runs something in the compiled network: a
 * kernel, or a node that is no view (nor a Concat or Split placed in
 * place). */
static void check_against_net(const rlt_graph *g, const double *per_node, double total, int n_threads)
{
    double sum = 0;
    for (int i = 0; i < g->n_nodes; i++) sum += per_node[i];
    cr_expect_float_eq(sum, total, 1e-9 * fmax(total, 1.0), "sum %g, total %g", sum, total);
    rlt_net_options o;
    rlt_net_options_init(&o);
    o.n_threads = n_threads;
    rlt_net *n = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_net_compile(g, &o, &n, &d), RLT_STATUS_OK, "%s", d.message);
    bool *runs = calloc((size_t)g->n_nodes + 1, sizeof *runs);
    for (int i = 0; i < n->n_steps; i++) runs[n->steps[i].node] = n->steps[i].task >= 0 || !n->steps[i].is_view;
    for (int i = 0; i < g->n_nodes; i++)
        cr_expect_eq(per_node[i] > 0, runs[i], "node %d '%s' (%s): %g ms, the net %s it", i, g->nodes[i].name,
                     g->nodes[i].op_type, per_node[i], runs[i] ? "runs" : "does not run");
    free(runs);
    rlt_net_destroy(n);
}

/* Appends an OK record of `spec` on this machine's one-thread target. */
static void record_add(const char *db_path, const char *spec, const char *schedule, double ms)
{
    rlt_db *db = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_db_open(db_path, NULL, &db, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_record r;
    memset(&r, 0, sizeof r);
    rlt_build_opts build = {0};
    cr_assert_eq(rlt_session_target(&build, 1, &r.target, &d), RLT_STATUS_OK, "%s", d.message);
    snprintf(r.spec, sizeof r.spec, "%s", spec);
    snprintf(r.schedule, sizeof r.schedule, "%s", schedule);
    snprintf(r.tuner, sizeof r.tuner, "test");
    r.status = RLT_STATUS_OK;
    r.time_min_ms = r.time_median_ms = ms;
    r.gflops = 1;
    cr_assert_eq(rlt_db_append(db, 1, &r, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_db_close(db);
}

/* ---- tasks ------------------------------------------------------------------------ */

/* (a) A task with a record costs exactly the record's median, measured by
 * nothing; so does the op without its epilogue's record for a task
 * without one of its own. */
Test(gopt_cost, task_time_from_a_record, .fini = tmp_fini)
{
    tmp_dir_make_in(tmp_dir);
    char path[256];
    snprintf(path, sizeof path, "%s/r.db", tmp_dir);
    rlt_graph *g = conv_graph("");
    rlt_graph_tasks gt = {0};
    rlt_diag d = {0};
    cr_assert_eq(rlt_graph_tasks_extract(g, &gt, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(gt.n_tasks, 1);
    cr_assert_str_eq(gt.tasks[0].spec, CONV_SPEC);
    rlt_graph_tasks_free(&gt);
    /* a record of the op without its epilogue (faster), and two of the
     * fused op: the fused op's best is taken, as the net compiler takes it */
    record_add(path, "conv2d:N=1,C=4,H=6,W=6,K=8,R=3,S=3,stride=1,pad=1,dilation=1",
               "# rltune schedule v1\nsplit k 4\n", 0.25);
    record_add(path, CONV_SPEC, "# rltune schedule v1\nsplit k 2\n", 0.375);
    record_add(path, CONV_SPEC, "# rltune schedule v1\nsplit k 4\n", 0.5);
    rlt_gcost *c = cost_create(path);
    double per_node[8];
    cr_assert_leq(g->n_nodes, 8);
    cr_expect_eq(cost_of(c, g, per_node), 0.375);
    cr_expect_eq(per_node[node_named(g, "conv")], 0.375);
    cr_expect_eq(per_node[node_named(g, "relu")], 0.0, "fused into the conv's kernel");
    rlt_gcost_stats s = stats_of(c);
    cr_expect_eq(s.n_graphs, 1);
    cr_expect_eq(s.n_tasks_from_records, 1);
    cr_expect_eq(s.n_tasks_measured, 0);
    cr_expect_eq(s.n_ops_measured, 0);
    rlt_gcost_destroy(c);
    rlt_graph_destroy(g);

    /* a conv without Relu: its spec has no record, the op without its
     * epilogue (the bias) has, as the net compiler would take it */
    onnx_build b;
    rng_state = 3;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 4, 6, 6));
    ob_conv_rand(&b, "conv", "x", "c", 4, 8, 3, 1, 1, 1, true, &rng_state);
    ob_output(&b, "c");
    g = load_folded(&b);
    c = cost_create(path);
    cr_expect_eq(cost_of(c, g, NULL), 0.25);
    cr_expect_eq(stats_of(c).n_tasks_from_records, 1);
    cr_expect_eq(stats_of(c).n_tasks_measured, 0);
    rlt_gcost_destroy(c);
    rlt_graph_destroy(g);
    assert_no_leaks();
}

/* (b) Without a database the seed is measured once: a second call, and a
 * second graph sharing the task, measure no task again. */
Test(gopt_cost, seed_measured_once)
{
    rlt_graph *g = conv_graph(""), *g2 = conv_graph("sigmoid");
    rlt_gcost *c = cost_create(NULL);
    double first = cost_of(c, g, NULL);
    cr_expect_gt(first, 0);
    rlt_gcost_stats s = stats_of(c);
    cr_expect_eq(s.n_tasks_measured, 1);
    cr_expect_eq(s.n_tasks_from_records, 0);
    cr_expect_gt(s.measure_s, 0);
    cr_expect_eq(cost_of(c, g, NULL), first, "the cached time");
    double per_node[8];
    cr_assert_leq(g2->n_nodes, 8);
    double second = cost_of(c, g2, per_node);
    s = stats_of(c);
    cr_expect_eq(s.n_graphs, 3);
    cr_expect_eq(s.n_tasks_measured, 1, "the conv task is shared");
    cr_expect_eq(s.n_ops_measured, 1, "the Sigmoid");
    cr_expect_eq(per_node[node_named(g2, "conv")], first);
    cr_expect_float_eq(second, first + per_node[node_named(g2, "sig")], 1e-12);
    rlt_gcost_destroy(c);
    rlt_graph_destroy(g2);
    rlt_graph_destroy(g);
    assert_no_leaks();
}

/* Collects the records of a spec (rlt_db_history). */
typedef struct records_seen {
    int n;
    rlt_record r[8];
} records_seen;

static bool collect_record(const rlt_record *r, void *ctx)
{
    records_seen *s = ctx;
    if (s->n < 8) s->r[s->n++] = *r;
    return true;
}

/* (e) With a database every seed measured is stored as a record (the
 * seed's configuration and schedule, OK, its times), RLT_GCOST_SEEDS
 * distinct ones, and the task costs the best; the next cost model takes
 * that record, measuring nothing, and so does a compiled network. */
Test(gopt_cost, seed_measurement_stored, .fini = tmp_fini)
{
    tmp_dir_make_in(tmp_dir);
    char path[256];
    snprintf(path, sizeof path, "%s/new.db", tmp_dir);
    rlt_graph *g = conv_graph("");
    rlt_gcost *c = cost_create(path);
    double first = cost_of(c, g, NULL);
    cr_expect_eq(stats_of(c).n_tasks_measured, 1);
    rlt_gcost_destroy(c);

    rlt_db *db = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_db_open(path, &(rlt_db_opts){.is_read_only = true}, &db, &d), RLT_STATUS_OK, "%s", d.message);
    int64_t count = 0;
    cr_assert_eq(rlt_db_count(db, CONV_SPEC, &count, &d), RLT_STATUS_OK, "%s", d.message);
    cr_expect_eq(count, RLT_GCOST_SEEDS);
    records_seen seen = {0};
    cr_assert_eq(rlt_db_history(db, CONV_SPEC, NULL, collect_record, &seen, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(seen.n, RLT_GCOST_SEEDS);
    double fastest = seen.r[0].time_median_ms;
    for (int i = 0; i < seen.n; i++) {
        cr_expect_eq(seen.r[i].status, RLT_STATUS_OK);
        if (seen.r[i].time_median_ms < fastest) fastest = seen.r[i].time_median_ms;
        for (int j = 0; j < i; j++)
            cr_expect_str_neq(seen.r[i].config, seen.r[j].config, "seeds %d and %d are the same configuration", j, i);
    }
    cr_expect_eq(first, fastest, "the task costs its fastest seed");
    rlt_record r;
    bool found = false;
    cr_assert_eq(rlt_db_best(db, CONV_SPEC, NULL, &r, &found, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert(found);
    cr_expect_eq(r.status, RLT_STATUS_OK);
    cr_expect_eq(r.time_median_ms, first);
    cr_expect_gt(r.time_min_ms, 0);
    cr_expect_str_eq(r.tuner, "gopt-seed");
    cr_expect_not_null(strstr(r.config, "v1;"), "the seed's configuration key: %s", r.config);
    cr_expect_not_null(strstr(r.schedule, "# rltune schedule"), "%s", r.schedule);
    rlt_db_close(db);

    c = cost_create(path);
    cr_expect_eq(cost_of(c, g, NULL), first);
    rlt_gcost_stats s = stats_of(c);
    cr_expect_eq(s.n_tasks_from_records, 1);
    cr_expect_eq(s.n_tasks_measured, 0);
    rlt_gcost_destroy(c);

    rlt_net_options o;
    rlt_net_options_init(&o);
    o.db_path = path;
    rlt_net *n = NULL;
    cr_assert_eq(rlt_net_compile(g, &o, &n, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_net_task t;
    rlt_net_task_get(n, 0, &t);
    cr_expect_eq(t.origin, RLT_NET_FROM_RECORD);
    cr_expect_eq(t.record_ms, first);
    rlt_net_destroy(n);
    rlt_graph_destroy(g);
    assert_no_leaks();
}

/* One seed when asked: one record, the first seed's (the seed a network
 * compiled without records runs). */
Test(gopt_cost, one_seed_when_asked, .fini = tmp_fini)
{
    tmp_dir_make_in(tmp_dir);
    char path[256];
    snprintf(path, sizeof path, "%s/one.db", tmp_dir);
    rlt_graph *g = conv_graph("");
    rlt_gcost *c = cost_create_seeds(path, 1);
    cr_expect_gt(cost_of(c, g, NULL), 0);
    cr_expect_eq(stats_of(c).n_tasks_measured, 1);
    cr_expect_eq(stats_of(c).n_seeds_measured, 1);
    rlt_gcost_destroy(c);
    rlt_db *db = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_db_open(path, &(rlt_db_opts){.is_read_only = true}, &db, &d), RLT_STATUS_OK, "%s", d.message);
    records_seen seen = {0};
    cr_assert_eq(rlt_db_history(db, CONV_SPEC, NULL, collect_record, &seen, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(seen.n, 1);
    rlt_db_close(db);
    rlt_op *op = NULL;
    cr_assert_eq(rlt_op_parse(CONV_SPEC, &op, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_nest nest;
    rlt_str key;
    rlt_str_init(&key);
    cr_assert_eq(rlt_net_seed_nest(op, 1, &nest, &key, NULL, &d), RLT_STATUS_OK, "%s", d.message);
    cr_expect_str_eq(seen.r[0].config, key.data, "the first seed");
    rlt_str_free(&key);
    rlt_op_destroy(op);
    rlt_graph_destroy(g);
    /* the searches' default: three with a database, one without */
    cr_expect_eq(rlt_graph_cost_seeds(0, path), RLT_GCOST_SEEDS);
    cr_expect_eq(rlt_graph_cost_seeds(0, NULL), 1);
    cr_expect_eq(rlt_graph_cost_seeds(2, NULL), 2);
    assert_no_leaks();
}

/* ---- steps ----------------------------------------------------------------------- */

/* (c) The per-node times sum to the total: the kernel node has the task's
 * time, the fused Relu and the Flatten (a view) 0, the Sigmoid its own. */
Test(gopt_cost, per_node_times)
{
    rlt_graph *g = conv_graph("flatten");
    rlt_gcost *c = cost_create(NULL);
    double per_node[8];
    cr_assert_leq(g->n_nodes, 8);
    double total = cost_of(c, g, per_node);
    cr_expect_gt(per_node[node_named(g, "conv")], 0);
    cr_expect_eq(per_node[node_named(g, "relu")], 0.0);
    cr_expect_eq(per_node[node_named(g, "flat")], 0.0);
    cr_expect_gt(per_node[node_named(g, "sig")], 0);
    check_against_net(g, per_node, total, 1);
    rlt_gcost_destroy(c);
    rlt_graph_destroy(g);
    assert_no_leaks();
}

/* (d) Two Relus of the same shape share one measurement. */
Test(gopt_cost, identical_ops_measured_once)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 8, 8, 8));
    ob_node(&b, "Relu", "r1", "x", "a");
    ob_node(&b, "Sigmoid", "s", "a", "b");
    ob_node(&b, "Relu", "r2", "b", "y");
    ob_output(&b, "y");
    rlt_graph *g = load_folded(&b);
    rlt_gcost *c = cost_create(NULL);
    double per_node[4];
    double total = cost_of(c, g, per_node);
    rlt_gcost_stats s = stats_of(c);
    cr_expect_eq(s.n_ops_measured, 2, "Relu and Sigmoid");
    cr_expect_eq(s.n_tasks_measured, 0);
    cr_expect_eq(per_node[node_named(g, "r1")], per_node[node_named(g, "r2")]);
    check_against_net(g, per_node, total, 1);
    rlt_gcost_destroy(c);
    rlt_graph_destroy(g);
    assert_no_leaks();
}

/* (f) Two 1x1 convs (one task, two occurrences) write their halves of a
 * Concat in place: it costs 0; a Concat of the graph input must copy: it
 * costs its fast op. At 1 and 2 threads, as the net places them. */
Test(gopt_cost, concat_in_place_costs_nothing)
{
    onnx_build b;
    rng_state = 5;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 4, 6, 6));
    ob_conv_rand(&b, "ca", "x", "a0", 4, 4, 1, 1, 0, 1, true, &rng_state);
    ob_node(&b, "Relu", "ra", "a0", "a1");
    ob_conv_rand(&b, "cb", "x", "b0", 4, 4, 1, 1, 0, 1, true, &rng_state);
    ob_node(&b, "Relu", "rb", "b0", "b1");
    ob_attr_i(&b, ob_node(&b, "Concat", "fire", "a1,b1", "c"), "axis", 1);
    ob_attr_i(&b, ob_node(&b, "Concat", "with_input", "x,a1", "e"), "axis", 1);
    ob_output(&b, "c");
    ob_output(&b, "e");
    rlt_graph *g = load_folded(&b);
    for (int threads = 1; threads <= 2; threads++) {
        rlt_gcost_options o;
        rlt_gcost_options_init(&o);
        o.n_threads = threads;
        o.repeat = 5;
        rlt_gcost *c = NULL;
        rlt_diag d = {0};
        cr_assert_eq(rlt_gcost_create(&o, &c, &d), RLT_STATUS_OK, "%s", d.message);
        double per_node[8];
        cr_assert_leq(g->n_nodes, 8);
        double total = cost_of(c, g, per_node);
        cr_expect_eq(per_node[node_named(g, "fire")], 0.0, "in place");
        cr_expect_gt(per_node[node_named(g, "with_input")], 0, "a graph input's part is copied");
        cr_expect_eq(per_node[node_named(g, "ca")], per_node[node_named(g, "cb")], "one task");
        cr_expect_eq(stats_of(c).n_tasks_measured, 1);
        check_against_net(g, per_node, total, threads);
        rlt_gcost_destroy(c);
    }
    rlt_graph_destroy(g);
    assert_no_leaks();
}

/* (g) A conv's output Split on channels at batch 1 (its outputs views of
 * their slices) costs 0, as does a Split of a Flatten of it; a Split of the
 * graph input must copy: it costs its fast op; a Concat of a Split's
 * output copies (the part lives in another block). As the net places
 * them. */
Test(gopt_cost, split_in_place_costs_nothing)
{
    onnx_build b;
    rng_state = 7;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 4, 6, 6));
    ob_conv_rand(&b, "conv", "x", "c", 4, 8, 3, 1, 1, 1, true, &rng_state);
    ob_node(&b, "Relu", "relu", "c", "r");
    ob_attr_i(&b, ob_node(&b, "Split", "sp", "r", "a,b"), "axis", 1);
    ob_node(&b, "Sigmoid", "sig", "a", "s");
    ob_attr_i(&b, ob_node(&b, "Flatten", "flat", "r", "f"), "axis", 1);
    ob_attr_i(&b, ob_node(&b, "Split", "sp_flat", "f", "f0,f1"), "axis", -1);
    ob_attr_i(&b, ob_node(&b, "Split", "of_input", "x", "x0,x1"), "axis", 1);
    ob_attr_i(&b, ob_node(&b, "Concat", "cat", "b,s", "y"), "axis", 1);
    ob_output(&b, "y");
    ob_output(&b, "f1");
    ob_output(&b, "x0");
    rlt_graph *g = load_folded(&b);
    rlt_gcost *c = cost_create(NULL);
    double per_node[16];
    cr_assert_leq(g->n_nodes, 16);
    double total = cost_of(c, g, per_node);
    cr_expect_eq(per_node[node_named(g, "sp")], 0.0, "in place");
    cr_expect_eq(per_node[node_named(g, "sp_flat")], 0.0, "in place, of a view");
    cr_expect_gt(per_node[node_named(g, "of_input")], 0, "a graph input's Split is copied");
    cr_expect_gt(per_node[node_named(g, "cat")], 0, "a Split's output is no Concat's part in place");
    check_against_net(g, per_node, total, 1);
    rlt_gcost_destroy(c);
    rlt_graph_destroy(g);
    assert_no_leaks();
}

/* One Sigmoid over 64K elements: split over the threads (OpenMP) at two. */
static rlt_graph *big_sigmoid_graph(void)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 64, 32, 32));
    ob_node(&b, "Sigmoid", "s", "x", "y");
    ob_output(&b, "y");
    return load_folded(&b);
}

/* At two threads, a fast op timed (its OpenMP threads started) and a
 * network measured in this process before a seed is measured leave the
 * runner's forked child able to run its own parallel loops: the seed
 * measures OK instead of hanging until its timeout. */
Test(gopt_cost, two_threads_ops_then_seed)
{
    rlt_graph *g1 = big_sigmoid_graph();
    rlt_graph *g2 = conv_graph("");
    rlt_gcost_options o;
    rlt_gcost_options_init(&o);
    o.n_threads = 2;
    o.repeat = 3;
    rlt_gcost *c = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_gcost_create(&o, &c, &d), RLT_STATUS_OK, "%s", d.message);
    cr_expect_gt(cost_of(c, g1, NULL), 0);
    rlt_net_timing_options t;
    rlt_net_timing_options_init(&t);
    t.n_warmup = 1;
    t.repeat = 3;
    rlt_net_timing timing;
    cr_assert_eq(rlt_gcost_measure(&o, g1, &t, &timing, &d), RLT_STATUS_OK, "%s", d.message);
    cr_expect_gt(cost_of(c, g2, NULL), 0);
    cr_expect_eq(stats_of(c).n_tasks_measured, 1);
    rlt_gcost_destroy(c);
    rlt_graph_destroy(g1);
    rlt_graph_destroy(g2);
    assert_no_leaks();
}

/* The same for a network compiled and timed by rlt_net_compile and
 * rlt_net_time on this thread (what `rltune experiment` does between two
 * runs' tuning): the kernels' and fast ops' OpenMP threads go with the
 * threads those run on (rlt_net_contained), and the seed measured after
 * runs its parallel loops. */
Test(gopt_cost, two_threads_net_timed_then_seed)
{
    rlt_graph *g1 = big_sigmoid_graph();
    rlt_graph *g2 = conv_graph("");
    rlt_net_options no;
    rlt_net_options_init(&no);
    no.n_threads = 2;
    rlt_net *net = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_net_compile(g1, &no, &net, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_array *in = NULL, *out = NULL;
    cr_assert_eq(rlt_array_create(RLT_ELEM_F32, 4, D(1, 64, 32, 32), &in, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_array_create(RLT_ELEM_F32, 4, D(1, 64, 32, 32), &out, &d), RLT_STATUS_OK);
    rlt_net_timing_options t;
    rlt_net_timing_options_init(&t);
    t.n_warmup = 1;
    t.repeat = 3;
    rlt_net_timing timing;
    cr_assert_eq(rlt_net_time(net, (const rlt_array *const *)&in, &out, NULL, &t, &timing, &d), RLT_STATUS_OK, "%s",
                 d.message);
    rlt_gcost_options o;
    rlt_gcost_options_init(&o);
    o.n_threads = 2;
    rlt_gcost *c = NULL;
    cr_assert_eq(rlt_gcost_create(&o, &c, &d), RLT_STATUS_OK, "%s", d.message);
    uint64_t t0 = rlt_time_ns();
    cr_expect_gt(cost_of(c, g2, NULL), 0);
    cr_expect_eq(stats_of(c).n_tasks_measured, 1);
    cr_expect_lt((double)(rlt_time_ns() - t0) * 1e-9, 8.0, "the seed waited for threads that were not there");
    rlt_gcost_destroy(c);
    rlt_array_destroy(in);
    rlt_array_destroy(out);
    rlt_net_destroy(net);
    rlt_graph_destroy(g1);
    rlt_graph_destroy(g2);
    assert_no_leaks();
}

/* ---- measured latency -------------------------------------------------------------- */

/* (g) The small CNN of the CLI tests, compiled and timed. */
Test(gopt_cost, measure_small_cnn, .fini = tmp_fini)
{
    tmp_dir_make_in(tmp_dir);
    char path[256];
    snprintf(path, sizeof path, "%s/cnn.onnx", tmp_dir);
    uint64_t rng = 9;
    cr_assert(ob_write_small_cnn(path, &rng));
    rlt_graph *g = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_graph_load_onnx(path, &g, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_geq(rlt_graph_fold_batchnorm(g, &d), 0);
    cr_assert_geq(rlt_graph_dce(g), 0);
    rlt_gcost_options o;
    rlt_gcost_options_init(&o);
    rlt_net_timing_options t;
    rlt_net_timing_options_init(&t);
    t.n_warmup = 1;
    t.repeat = 3;
    rlt_net_timing timing;
    cr_assert_eq(rlt_gcost_measure(&o, g, &t, &timing, &d), RLT_STATUS_OK, "%s", d.message);
    cr_expect_gt(timing.median_ms, 0);
    cr_expect_leq(timing.min_ms, timing.median_ms);
    cr_expect_eq(timing.repeat, 3);
    rlt_graph_destroy(g);
    assert_no_leaks();
}

/* ---- errors ------------------------------------------------------------------------ */

/* Every allocation failing in turn, creating a cost model with a database
 * and costing a graph (its task from a record, a view and a fast op):
 * OUT_OF_MEMORY with a message, nothing leaked, until it succeeds with the
 * cost it has with memory to spare. */
Test(gopt_cost, out_of_memory, .fini = tmp_fini)
{
    tmp_dir_make_in(tmp_dir);
    char path[256];
    snprintf(path, sizeof path, "%s/r.db", tmp_dir);
    record_add(path, CONV_SPEC, "# rltune schedule v1\nsplit k 2\n", 0.5);
    rlt_graph *g = conv_graph("flatten");
    rlt_gcost_options o;
    rlt_gcost_options_init(&o);
    o.db_path = path;
    o.repeat = 1;
    bool done = false;
    for (long k = 1; k < 5000 && !done; k++) {
        rlt_gcost *c = NULL;
        rlt_diag d = {0};
        double total = -1;
        rlt_alloc_fail_after(k);
        rlt_status st = rlt_gcost_create(&o, &c, &d);
        if (st == RLT_STATUS_OK) st = rlt_gcost_graph(c, g, &total, NULL, &d);
        rlt_alloc_fail_after(0);
        if (st == RLT_STATUS_OK) {
            done = true;
            cr_expect_gt(total, 0.5);
        } else {
            cr_expect_eq(st, RLT_STATUS_OUT_OF_MEMORY, "allocation %ld: %s: %s", k, rlt_status_str(st), d.message);
            cr_expect_neq(d.message[0], '\0', "allocation %ld", k);
        }
        rlt_gcost_destroy(c);
    }
    cr_expect(done, "never succeeded");
    rlt_graph_destroy(g);
    assert_no_leaks();
}

/* (h) Bad options, a database that cannot be opened. */
Test(gopt_cost, errors)
{
    rlt_gcost_options o;
    rlt_gcost_options_init(&o);
    rlt_gcost *c = NULL;
    rlt_diag d = {0};
    o.n_threads = 0;
    cr_expect_eq(rlt_gcost_create(&o, &c, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_expect_not_null(strstr(d.message, "thread count"), "%s", d.message);
    cr_expect_null(c);
    o.n_threads = 1;
    o.repeat = 0;
    d = (rlt_diag){0};
    cr_expect_eq(rlt_gcost_create(&o, &c, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_expect_not_null(strstr(d.message, "repeat"), "%s", d.message);
    cr_expect_null(c);
    o.repeat = 15;
    for (int n = 0; n <= RLT_NET_MAX_SEEDS + 1; n += RLT_NET_MAX_SEEDS + 1) { /* 0 and 9 */
        o.n_seeds = n;
        d = (rlt_diag){0};
        cr_expect_eq(rlt_gcost_create(&o, &c, &d), RLT_STATUS_INVALID_ARGUMENT, "n_seeds %d", n);
        cr_expect_not_null(strstr(d.message, "seeds measured per task"), "%s", d.message);
        cr_expect_null(c);
    }
    o.n_seeds = RLT_GCOST_SEEDS;
    o.db_path = "/nonexistent/dir/r.db";
    d = (rlt_diag){0};
    cr_expect_eq(rlt_gcost_create(&o, &c, &d), RLT_STATUS_IO_ERROR, "%s: %s", rlt_status_str(d.status), d.message);
    cr_expect_not_null(strstr(d.message, "/nonexistent/dir/r.db"), "%s", d.message);
    cr_expect_null(c);
    /* a constant graph input */
    rlt_graph *g = conv_graph("");
    o.db_path = NULL;
    cr_assert_eq(rlt_gcost_create(&o, &c, &d), RLT_STATUS_OK, "%s", d.message);
    int w = rlt_graph_tensor_find(g, "conv_w");
    cr_assert_geq(w, 0);
    int saved = g->inputs[0];
    g->inputs[0] = w;
    double total = -1;
    d = (rlt_diag){0};
    cr_expect_eq(rlt_gcost_graph(c, g, &total, NULL, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_expect_not_null(strstr(d.message, "is a constant"), "%s", d.message);
    cr_expect_eq(total, 0);
    cr_expect_eq(stats_of(c).n_graphs, 0, "only successful calls count");
    g->inputs[0] = saved;
    rlt_gcost_destroy(c);
    rlt_graph_destroy(g);
    assert_no_leaks();
}
