/*
 * test_gopt_rules.c - graph substitutions (src/gopt/): the rule language
 * (parse errors with file and line), verification (every shipped rule
 * passes; a wrong rule is refused with its counterexample; a check that
 * breaks the rule's conditions is refused), matching and applying on
 * hand-built graphs with golden before/after text, the conditions that
 * stop a match (an inner tensor read outside, attributes off their
 * defaults), the structural hash, random rewrite sequences that must keep
 * the graph's outputs (and give no two nodes one name), and the searches
 * with a cost given by the test.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/onnx_build.h"
#include "gopt/gopt.h"

#define D(...) ((int64_t[]){__VA_ARGS__})

/* ---- helpers ------------------------------------------------------------------- */

static rlt_ruleset *parse_ok(const char *text)
{
    rlt_ruleset *rs = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_ruleset_parse(text, "test.rules", &rs, &d), RLT_STATUS_OK, "parse: %s", d.message);
    return rs;
}

static rlt_graph *load(onnx_build *b)
{
    rlt_graph *g = NULL;
    rlt_diag d = {0};
    cr_assert_eq(ob_load_folded(b, &g, &d), RLT_STATUS_OK, "load: %s", d.message);
    ob_free(b);
    return g;
}

static int rule_index(const rlt_ruleset *rs, const char *name)
{
    for (int i = 0; i < rs->n_rules; i++)
        if (strcmp(rs->rules[i]->name, name) == 0) return i;
    cr_assert_fail("no rule %s", name);
    return -1;
}

typedef struct matches {
    rlt_gopt_match m[64];
    int n;
} matches;

static bool keep_match(void *ctx, const rlt_gopt_match *m)
{
    matches *ms = ctx;
    if (ms->n < 64) ms->m[ms->n++] = *m;
    return true;
}

static matches find(const rlt_ruleset *rs, const char *rule, const rlt_graph *g)
{
    matches ms = {.n = 0};
    rlt_diag d = {0};
    cr_assert_eq(rlt_gopt_rule_matches(rs, rule_index(rs, rule), g, keep_match, &ms, &d), RLT_STATUS_OK);
    return ms;
}

static rlt_graph *apply(const rlt_ruleset *rs, const rlt_graph *g, const rlt_gopt_match *m)
{
    rlt_graph *out = NULL;
    rlt_diag d = {0};
    char reason[256];
    cr_assert_eq(rlt_gopt_apply(rs, g, m, &out, reason, &d), RLT_STATUS_OK, "apply: %s", d.message);
    cr_assert_not_null(out, "refused: %s", reason);
    return out;
}

/* Evaluates g on seeded random inputs; returns output 0 (rlt_free). */
static float *eval_first(const rlt_graph *g, uint64_t seed)
{
    void *in[8] = {0};
    void *out[8] = {0};
    uint64_t state = seed;
    for (int i = 0; i < g->n_inputs; i++) {
        const rlt_graph_tensor *t = &g->tensors[g->inputs[i]];
        int64_t n = rlt_graph_tensor_n_elems(t);
        float *v = malloc((size_t)n * sizeof *v + 1);
        for (int64_t k = 0; k < n; k++) v[k] = ob_rand(&state);
        in[i] = v;
    }
    rlt_diag d = {0};
    cr_assert_eq(rlt_graph_eval(g, g->n_inputs, (const void *const *)in, g->n_outputs, out, &d), RLT_STATUS_OK,
                 "eval: %s", d.message);
    for (int i = 0; i < g->n_inputs; i++) free(in[i]);
    for (int i = 1; i < g->n_outputs; i++) rlt_free(out[i]);
    return out[0];
}

static int64_t out_elems(const rlt_graph *g) { return rlt_graph_tensor_n_elems(&g->tensors[g->outputs[0]]); }

static void expect_close(const rlt_graph *a, const rlt_graph *b, double tol)
{
    float *x = eval_first(a, 7), *y = eval_first(b, 7);
    int64_t n = out_elems(a);
    cr_assert_eq(n, out_elems(b));
    double scale = 0;
    for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(x[i]));
    for (int64_t i = 0; i < n; i++)
        cr_assert(fabs((double)x[i] - y[i]) <= tol * (scale > 0 ? scale : 1), "element %ld: %g vs %g", (long)i, x[i],
                  y[i]);
    rlt_free(x);
    rlt_free(y);
}

static int live_nodes(const rlt_graph *g)
{
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++) n += !g->nodes[i].is_removed;
    return n;
}

static int count_op(const rlt_graph *g, const char *op)
{
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++) n += !g->nodes[i].is_removed && strcmp(g->nodes[i].op_type, op) == 0;
    return n;
}

/* No two live nodes share a name (ONNX Runtime refuses such a model). */
static void expect_unique_node_names(const rlt_graph *g)
{
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].is_removed || !g->nodes[i].name[0]) continue;
        for (int j = i + 1; j < g->n_nodes; j++)
            cr_assert(g->nodes[j].is_removed || strcmp(g->nodes[i].name, g->nodes[j].name) != 0,
                      "two nodes named %s", g->nodes[i].name);
    }
}

/* ---- the language --------------------------------------------------------------- */

Test(gopt_rules, shipped_rules_parse_and_verify)
{
    rlt_ruleset *rs = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_ruleset_default(&rs, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_geq(rs->n_rules, 20);
    cr_assert_eq(rlt_ruleset_verify(rs, 1, &d), RLT_STATUS_OK, "%s", d.message);
    for (int i = 0; i < rs->n_rules; i++) {
        cr_assert(rs->rules[i]->is_verified);
        cr_assert_gt(rs->rules[i]->n_checks, 0);
        cr_assert_str_neq(rs->rules[i]->doc, "", "rule %s has no comment", rs->rules[i]->name);
    }
    /* exact where the ops allow: merging convolutions is bit for bit, BN folding is not */
    cr_assert(rs->rules[rule_index(rs, "merge_sibling_convs")]->is_exact);
    cr_assert_not(rs->rules[rule_index(rs, "fold_batchnorm_into_conv")]->is_exact);
    rlt_ruleset_destroy(rs);
}

Test(gopt_rules, parse_errors_name_file_line_and_what)
{
    static const struct {
        const char *text, *needle;
    } cases[] = {
        {"src y = Relu(x)\n", "test.rules:1: 'src' outside a rule"},
        {"rule a\n  src y = Relu(x)\n  out y -> x\n  check x=f32[2]\n", "not closed by 'end'"},
        {"rule a\n  src y = Relu(x)\n  check x=f32[2]\nend\n", "replaces nothing"},
        {"rule a\n  src y = Relu(x)\n  out y -> x\nend\n", "has no check line"},
        {"rule a\n  src y = Relu(x)\n  dst z = Relu(q)\n  out y -> z\n  check x=f32[2]\nend\n",
         "test.rules:3: 'q' is not a pattern input"},
        {"rule a\n  src y = Relu(x)\n  dst z = Relu(y)\n  out y -> z\n  check x=f32[2]\nend\n",
         "cannot read 'y'"},
        {"rule a\n  src y = Relu(x)\n  out y -> x\n  check x=f32[2\nend\n", "test.rules:4:"},
        {"rule a\n  src y = Relu(x)\n  where frob(x)\n  out y -> x\n  check x=f32[2]\nend\n",
         "unknown function 'frob'"},
        {"rule a\n  src y = Relu(x)\n  out y -> x\n  check w=f32[2]\nend\n", "'w' is not a pattern input"},
        {"rule a\n  src y = Relu(x)\n  out y -> x\n  check q=f32[2]\nend\n", "test.rules:4:"},
        {"rule a\n  src y = Relu(x)\n  out y -> x\n  frob\nend\n", "unknown statement 'frob'"},
        {"rule a\n  src y = Conv(x, w) strides=[1,1]+S\n  out y -> x\n  check x=f32[2]\nend\n", "test.rules:2:"},
        {"rule a\n  src y = Relu(x)\n  out y -> x\n  check x=f32[2]\nend\nrule a\n  src y = Relu(x)\n  out y -> "
         "x\n  check x=f32[2]\nend\n",
         "rule a is defined twice"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rlt_ruleset *rs = NULL;
        rlt_diag d = {0};
        cr_assert_eq(rlt_ruleset_parse(cases[i].text, "test.rules", &rs, &d), RLT_STATUS_PARSE_ERROR, "case %zu",
                     i);
        cr_assert_null(rs);
        cr_assert(strstr(d.message, cases[i].needle), "case %zu: '%s' lacks '%s'", i, d.message, cases[i].needle);
    }
}

Test(gopt_rules, comments_above_a_rule_document_it)
{
    rlt_ruleset *rs = parse_ok("# file header\n\n# Identity does nothing;\n# it goes.\nrule a\n"
                               "  src y = Identity(x)  # inline comment\n  out y -> x\n  check x=f32[2]\nend\n");
    cr_assert_str_eq(rs->rules[0]->doc, "Identity does nothing; it goes.");
    cr_assert_eq(rs->rules[0]->line, 5);
    rlt_ruleset_destroy(rs);
}

/* ---- verification --------------------------------------------------------------- */

Test(gopt_rules, a_wrong_rule_is_refused_with_a_counterexample)
{
    /* relu(a + b) is not relu(a) + relu(b) */
    rlt_ruleset *rs = parse_ok("rule relu_splits\n  src s = Add(a, b)\n  src y = Relu(s)\n  dst ra = Relu(a)\n"
                               "  dst rb = Relu(b)\n  dst y2 = Add(ra, rb)\n  out y -> y2\n"
                               "  check a=f32[4,5] b=f32[4,5]\nend\n");
    rlt_diag d = {0};
    cr_assert_eq(rlt_ruleset_verify(rs, 1, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "rule relu_splits is refused"), "%s", d.message);
    cr_assert(strstr(d.message, "check at line 8"), "%s", d.message);
    cr_assert(strstr(d.message, "differs at element"), "%s", d.message);
    cr_assert(strstr(d.message, "source") && strstr(d.message, "target"), "%s", d.message);
    cr_assert_not(rs->rules[0]->is_verified);
    rlt_ruleset_destroy(rs);
}

Test(gopt_rules, a_check_that_breaks_the_conditions_is_refused)
{
    rlt_ruleset *rs = parse_ok("rule mm\n  src y1 = MatMul(x, w1)\n  src y2 = MatMul(x, w2)\n  src s = Add(y1, y2)\n"
                               "  where shape(w1) == shape(w2)\n  dst w = Add(w1, w2)\n  dst y = MatMul(x, w)\n"
                               "  out s -> y\n  check x=f32[3,4] w1=f32[4,5] w2=f32[4,1]\nend\n");
    rlt_diag d = {0};
    cr_assert_eq(rlt_ruleset_verify(rs, 1, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "condition 1 of the rule does not hold"), "%s", d.message);
    rlt_ruleset_destroy(rs);
}

Test(gopt_rules, a_check_whose_source_does_not_infer_is_refused)
{
    rlt_ruleset *rs = parse_ok("rule mm\n  src y = MatMul(x, w)\n  dst y2 = MatMul(x, w)\n  out y -> y2\n"
                               "  check x=f32[3,4] w=f32[5,5]\nend\n");
    rlt_diag d = {0};
    cr_assert_eq(rlt_ruleset_verify(rs, 1, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "the source does not infer"), "%s", d.message);
    rlt_ruleset_destroy(rs);
}

/* ---- matching and applying ------------------------------------------------------- */

/* x @ w1 and x @ w2 read by two Relus: one product, split. */
Test(gopt_rules, sibling_matmuls_merge_golden)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(3, 4));
    ob_init_f32(&b, "w1", 2, D(4, 2), (float[]){1, 2, 3, 4, 5, 6, 7, 8});
    ob_init_f32(&b, "w2", 2, D(4, 1), (float[]){1, -1, 1, -1});
    ob_node(&b, "MatMul", "m1", "x,w1", "y1");
    ob_node(&b, "MatMul", "m2", "x,w2", "y2");
    ob_node(&b, "Relu", "r1", "y1", "z1");
    ob_node(&b, "Relu", "r2", "y2", "z2");
    ob_output(&b, "z1");
    ob_output(&b, "z2");
    rlt_graph *g = load(&b);
    rlt_ruleset *rs = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_ruleset_default(&rs, &d), RLT_STATUS_OK);
    matches ms = find(rs, "merge_sibling_matmuls", g);
    cr_assert_eq(ms.n, 2, "both orders of the two siblings"); /* (m1, m2) and (m2, m1) */
    rlt_graph *g2 = apply(rs, g, &ms.m[0]);
    char *text = rlt_graph_print(g2);
    /* at opset 13 the split sizes are Split's second input */
    const char *expected = "graph opset 13: 1 input, 2 outputs, 4 nodes, 2 constants\n"
                           "input x f32[3,4]\n"
                           "const w_7 f32[4,3]\n"
                           "const split_9 i64[2] = {2,1}\n"
                           "node merge_sibling_matmuls_5 MatMul(x, w_7) -> y_8 f32[3,3]\n"
                           "node merge_sibling_matmuls_6 Split(y_8, split_9) -> y1 f32[3,2], y2 f32[3,1] axis=-1\n"
                           "node r1 Relu(y1) -> z1 f32[3,2]\n"
                           "node r2 Relu(y2) -> z2 f32[3,1]\n"
                           "output z1 f32[3,2]\n"
                           "output z2 f32[3,1]\n";
    cr_assert_str_eq(text, expected);
    rlt_free(text);
    expect_close(g, g2, 0);
    rlt_graph_destroy(g2);
    rlt_ruleset_destroy(rs);
    rlt_graph_destroy(g);
}

/* An inner tensor read outside the pattern keeps the rule from matching. */
Test(gopt_rules, inner_tensor_read_outside_stops_a_match)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 2, D(2, 3));
    ob_input(&b, "a", OB_F32, 2, D(2, 3));
    ob_input(&b, "c", OB_F32, 2, D(2, 3));
    ob_node(&b, "Add", "s", "x,a", "s");
    ob_node(&b, "Add", "t", "s,c", "t");
    ob_node(&b, "Relu", "r", "s", "u"); /* s read outside (s, t) */
    ob_node(&b, "Add", "o", "t,u", "o");
    ob_output(&b, "o");
    rlt_graph *g = load(&b);
    rlt_ruleset *rs = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_ruleset_default(&rs, &d), RLT_STATUS_OK);
    matches ms = find(rs, "add_associate", g);
    for (int i = 0; i < ms.n; i++) cr_assert_neq(ms.m[i].nodes[0], 0, "s is read by r: (s, t) must not match");
    rlt_ruleset_destroy(rs);
    rlt_graph_destroy(g);
}

/* A Conv with group 2 does not match a pattern that leaves group out
 * (so at its default, 1); kernel_shape left out matches whatever the
 * weight says. */
Test(gopt_rules, unnamed_attributes_must_be_at_their_default)
{
    uint64_t rng = 3;
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 4, 6, 6));
    ob_conv_rand(&b, "c1", "x", "y1", 4, 4, 3, 1, 1, 2, true, &rng);
    ob_conv_rand(&b, "c2", "x", "y2", 4, 4, 3, 1, 1, 2, true, &rng);
    ob_node(&b, "Add", "s", "y1,y2", "z");
    ob_output(&b, "z");
    rlt_graph *g = load(&b);
    rlt_ruleset *rs = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_ruleset_default(&rs, &d), RLT_STATUS_OK);
    cr_assert_eq(find(rs, "merge_sibling_convs", g).n, 0);
    rlt_ruleset_destroy(rs);
    rlt_graph_destroy(g);

    /* group 1: kernel_shape, which onnx_build leaves out, is the weight's */
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 4, 6, 6));
    ob_conv_rand(&b, "c1", "x", "y1", 4, 4, 3, 1, 1, 1, true, &rng);
    ob_conv_rand(&b, "c2", "x", "y2", 4, 2, 3, 1, 1, 1, true, &rng);
    ob_conv_rand(&b, "c3", "x", "y3", 4, 2, 1, 1, 0, 1, true, &rng);
    ob_attr_i(&b, ob_node(&b, "Concat", "cat", "y1,y2,y3", "z"), "axis", 1);
    ob_output(&b, "z");
    g = load(&b);
    rs = NULL;
    cr_assert_eq(rlt_ruleset_default(&rs, &d), RLT_STATUS_OK);
    matches ms = find(rs, "merge_sibling_convs", g);
    cr_assert_eq(ms.n, 2, "c1 with c2 either way; c3's 1x1 kernel differs");
    rlt_graph *g2 = apply(rs, g, &ms.m[0]);
    expect_close(g, g2, 1e-6);
    rlt_graph_destroy(g2);
    rlt_ruleset_destroy(rs);
    rlt_graph_destroy(g);
}

/* Add matches with its inputs either way round: c + (a + b). */
Test(gopt_rules, add_matches_either_way_round)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "a", OB_F32, 1, D(4));
    ob_input(&b, "b", OB_F32, 1, D(4));
    ob_input(&b, "c", OB_F32, 1, D(4));
    ob_node(&b, "Add", "s", "a,b", "s");
    ob_node(&b, "Add", "t", "c,s", "t");
    ob_output(&b, "t");
    rlt_graph *g = load(&b);
    rlt_ruleset *rs = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_ruleset_default(&rs, &d), RLT_STATUS_OK);
    matches ms = find(rs, "add_associate", g);
    cr_assert_eq(ms.n, 2, "s = a + b and s = b + a"); /* the second Add's order is fixed by s */
    for (int i = 0; i < ms.n; i++) {
        rlt_graph *g2 = apply(rs, g, &ms.m[i]);
        expect_close(g, g2, 1e-6);
        rlt_graph_destroy(g2);
    }
    rlt_ruleset_destroy(rs);
    rlt_graph_destroy(g);
}

/* Two sibling convolutions concatenated become one; the concat goes. */
Test(gopt_rules, sibling_convs_concat_merge)
{
    uint64_t rng = 5;
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 3, 8, 8));
    ob_conv_rand(&b, "e1", "x", "y1", 3, 4, 3, 1, 1, 1, true, &rng);
    ob_conv_rand(&b, "e2", "x", "y2", 3, 6, 3, 1, 1, 1, true, &rng);
    ob_attr_i(&b, ob_node(&b, "Concat", "cat", "y1,y2", "z"), "axis", 1);
    ob_output(&b, "z");
    rlt_graph *g = load(&b);
    rlt_ruleset *rs = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_ruleset_default(&rs, &d), RLT_STATUS_OK);
    matches ms = find(rs, "merge_sibling_convs_concat", g);
    cr_assert_eq(ms.n, 1, "only in the Concat's order");
    rlt_graph *g2 = apply(rs, g, &ms.m[0]);
    cr_assert_eq(count_op(g2, "Conv"), 1);
    cr_assert_eq(count_op(g2, "Concat"), 0, "the weights' Concat folded, the output's gone");
    cr_assert_eq(live_nodes(g2), 1);
    expect_close(g, g2, 1e-6);
    rlt_graph_destroy(g2);
    rlt_ruleset_destroy(rs);
    rlt_graph_destroy(g);
}

/* A rewrite that would make a cycle is refused: y2 reads y1's consumer. */
Test(gopt_rules, a_cycle_is_refused)
{
    rlt_ruleset *rs = parse_ok("rule merge\n  src y1 = Relu(x1)\n  src y2 = Relu(x2)\n"
                               "  dst c = Concat(x1, x2) axis=0\n  dst r = Relu(c)\n"
                               "  dst z1, z2 = Split(r) axis=0 split=[dim(x1, 0), dim(x2, 0)]\n"
                               "  out y1 -> z1, y2 -> z2\n  check x1=f32[2] x2=f32[3]\nend\n");
    rlt_diag d = {0};
    cr_assert_eq(rlt_ruleset_verify(rs, 1, &d), RLT_STATUS_OK, "%s", d.message);
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 1, D(4));
    ob_node(&b, "Relu", "a", "x", "y1");
    ob_node(&b, "Neg", "n", "y1", "x2");
    ob_node(&b, "Relu", "b", "x2", "y2");
    ob_output(&b, "y2");
    rlt_graph *g = NULL;
    if (ob_load_folded(&b, &g, &d) != RLT_STATUS_OK) { /* Neg is not in the IR: use Sqrt */
        ob_free(&b);
        ob_init(&b, 13);
        ob_input(&b, "x", OB_F32, 1, D(4));
        ob_node(&b, "Relu", "a", "x", "y1");
        ob_node(&b, "Sqrt", "n", "y1", "x2");
        ob_node(&b, "Relu", "b", "x2", "y2");
        ob_output(&b, "y2");
        g = load(&b);
    } else {
        ob_free(&b);
    }
    matches ms = find(rs, "merge", g);
    cr_assert_geq(ms.n, 1);
    for (int i = 0; i < ms.n; i++) {
        rlt_graph *out = NULL;
        char reason[256];
        cr_assert_eq(rlt_gopt_apply(rs, g, &ms.m[i], &out, reason, &d), RLT_STATUS_OK);
        cr_assert_null(out);
        cr_assert(strstr(reason, "cycle") || strstr(reason, "graph output"), "%s", reason);
    }
    rlt_ruleset_destroy(rs);
    rlt_graph_destroy(g);
}

/* ---- the hash -------------------------------------------------------------------- */

static rlt_graph *two_branch(bool swapped, const char *inner)
{
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 1, D(4));
    ob_init_f32(&b, "k", 1, D(4), (float[]){1, 2, 3, 4});
    if (swapped) {
        ob_node(&b, "Mul", "n2", "x,k", "q");
        ob_node(&b, "Relu", "n1", "x", inner);
    } else {
        ob_node(&b, "Relu", "n1", "x", inner);
        ob_node(&b, "Mul", "n2", "k,x", "q");
    }
    char in[64];
    snprintf(in, sizeof in, "%s,q", inner);
    ob_node(&b, "Add", "n3", in, "o");
    ob_output(&b, "o");
    return load(&b);
}

Test(gopt_rules, hash_ignores_order_and_names_not_structure)
{
    rlt_graph *a = two_branch(false, "r"), *b = two_branch(true, "other_name");
    cr_assert_eq(rlt_gopt_graph_hash(a), rlt_gopt_graph_hash(b));
    rlt_graph *c = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_graph_clone(a, &c, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_gopt_graph_hash(c), rlt_gopt_graph_hash(a));
    for (int i = 0; i < c->n_nodes; i++)
        if (strcmp(c->nodes[i].op_type, "Relu") == 0) c->nodes[i].op_type = "Sigmoid";
    cr_assert_neq(rlt_gopt_graph_hash(c), rlt_gopt_graph_hash(a));
    rlt_graph_destroy(a); /* the clone keeps a's weights alive */
    cr_assert_eq(((float *)c->tensors[rlt_graph_tensor_find(c, "k")].data)[3], 4.0f);
    rlt_graph_destroy(c);
    rlt_graph_destroy(b);
}

/* ---- random rewrite sequences ------------------------------------------------------ */

/* A graph many rules apply to: an inception-style block (three sibling
 * convolutions, two concatenated, a 1x1 beside 3x3s), Relus, a residual
 * Add, sibling MatMuls over its pooled features, elementwise chains. */
static rlt_graph *rich_graph(void)
{
    uint64_t rng = 11;
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, D(1, 4, 6, 6));
    ob_conv_rand(&b, "a", "x", "ya", 4, 4, 3, 1, 1, 1, true, &rng);
    ob_conv_rand(&b, "b", "x", "yb", 4, 4, 3, 1, 1, 1, true, &rng);
    ob_conv_rand(&b, "c", "x", "yc", 4, 4, 1, 1, 0, 1, true, &rng);
    ob_node(&b, "Relu", "ra", "ya", "za");
    ob_node(&b, "Relu", "rb", "yb", "zb");
    ob_attr_i(&b, ob_node(&b, "Concat", "cat", "za,zb", "cab"), "axis", 1);
    ob_node(&b, "Relu", "rc", "yc", "zc");
    ob_attr_i(&b, ob_node(&b, "Concat", "cat2", "zc,zc", "cc"), "axis", 1);
    ob_node(&b, "Add", "res", "cab,cc", "s");
    ob_node(&b, "GlobalAveragePool", "gap", "s", "p");
    ob_node(&b, "Flatten", "fl", "p", "f");
    ob_init_rand(&b, "w1", 2, D(8, 5), 0.3f, &rng);
    ob_init_rand(&b, "w2", 2, D(8, 5), 0.3f, &rng);
    ob_init_rand(&b, "w3", 2, D(5, 3), 0.3f, &rng);
    ob_node(&b, "MatMul", "m1", "f,w1", "h1");
    ob_node(&b, "MatMul", "m2", "f,w2", "h2");
    ob_node(&b, "Add", "hs", "h1,h2", "h");
    ob_node(&b, "MatMul", "m3", "h,w3", "o1");
    ob_init_f32(&b, "k1", 1, D(3), (float[]){0.5f, 2, -1});
    ob_init_f32(&b, "k2", 1, D(3), (float[]){1, 1, 3});
    ob_node(&b, "Mul", "e1", "o1,k1", "o2");
    ob_node(&b, "Mul", "e2", "o2,k2", "o3");
    ob_node(&b, "Identity", "id", "o3", "o");
    ob_output(&b, "o");
    return load(&b);
}

Test(gopt_rules, random_rewrite_sequences_keep_the_output)
{
    rlt_ruleset *rs = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_ruleset_default(&rs, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_ruleset_verify(rs, 1, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_graph *g0 = rich_graph();
    int n_applied = 0, rules_used[64] = {0};
    for (uint64_t seq = 0; seq < 12; seq++) {
        rlt_graph *g = NULL;
        cr_assert_eq(rlt_graph_clone(g0, &g, &d), RLT_STATUS_OK);
        uint64_t state = 1000 + seq;
        for (int step = 0; step < 8; step++) {
            rlt_gopt_match *ms = NULL;
            int n = 0;
            cr_assert_eq(rlt_gopt_find(rs, g, &ms, &n, &d), RLT_STATUS_OK);
            if (n == 0) {
                rlt_free(ms);
                break;
            }
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            const rlt_gopt_match *m = &ms[(state >> 33) % (uint64_t)n];
            rlt_graph *g2 = NULL;
            char reason[256];
            cr_assert_eq(rlt_gopt_apply(rs, g, m, &g2, reason, &d), RLT_STATUS_OK, "%s", d.message);
            if (g2) {
                n_applied++;
                rules_used[m->rule]++;
                rlt_graph_destroy(g);
                g = g2;
                expect_close(g0, g, 1e-5);
                expect_unique_node_names(g);
            }
            rlt_free(ms);
        }
        rlt_graph_destroy(g);
    }
    int n_distinct = 0;
    for (int i = 0; i < 64; i++) n_distinct += rules_used[i] > 0;
    cr_assert_geq(n_applied, 40, "rewrites applied: %d", n_applied);
    cr_assert_geq(n_distinct, 6, "distinct rules applied: %d", n_distinct);
    rlt_graph_destroy(g0);
    rlt_ruleset_destroy(rs);
}

/* ---- the searches ----------------------------------------------------------------- */

/* A cost the test controls: 10 per Conv and MatMul, 1 per other node. */
static rlt_status toy_cost(void *ctx, const rlt_graph *g, double *cost, double *per_node, rlt_diag *diag)
{
    (void)diag;
    int *calls = ctx;
    (*calls)++;
    double c = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        const rlt_graph_node *n = &g->nodes[i];
        double x = n->is_removed ? 0 : (strcmp(n->op_type, "Conv") == 0 || strcmp(n->op_type, "MatMul") == 0) ? 10 : 1;
        if (per_node) per_node[i] = x;
        c += x;
    }
    *cost = c;
    return RLT_STATUS_OK;
}

Test(gopt_rules, greedy_and_taso_lower_the_cost_and_keep_the_output)
{
    rlt_ruleset *rs = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_ruleset_default(&rs, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_ruleset_verify(rs, 1, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_graph *g = rich_graph();
    double costs[3];
    for (int k = 0; k < 3; k++) {
        rlt_gopt_options o;
        rlt_gopt_options_init(&o);
        o.search = k == 0 ? RLT_GOPT_SEARCH_NONE : k == 1 ? RLT_GOPT_SEARCH_GREEDY : RLT_GOPT_SEARCH_TASO;
        o.budget = 60;
        int calls = 0;
        rlt_gopt_result res;
        cr_assert_eq(rlt_gopt_search(rs, g, &o, toy_cost, &calls, &res, &d), RLT_STATUS_OK, "%s", d.message);
        cr_assert_eq(res.n_cost_evals, calls);
        double check;
        toy_cost(&calls, res.graph, &check, NULL, &d);
        cr_assert_float_eq(check, res.cost_after, 1e-9);
        cr_assert_leq(res.cost_after, res.cost_before);
        costs[k] = res.cost_after;
        if (k > 0) {
            cr_assert_lt(res.cost_after, res.cost_before, "%s lowered nothing", rlt_gopt_search_str(o.search));
            cr_assert_gt(res.n_steps, 0);
            if (o.search == RLT_GOPT_SEARCH_GREEDY) /* every step was better than the graph it started from */
                for (int s = 0; s < res.n_steps; s++)
                    cr_assert_leq(res.steps[s].cost_after, s ? res.steps[s - 1].cost_after : res.cost_before);
            cr_assert_float_eq(res.steps[res.n_steps - 1].cost_after, res.cost_after, 1e-9);
        } else {
            cr_assert_eq(res.n_steps, 0);
        }
        expect_close(g, res.graph, 1e-5);
        expect_unique_node_names(res.graph);
        rlt_gopt_result_free(&res);
    }
    cr_assert_leq(costs[2], costs[1], "taso %g, greedy %g", costs[2], costs[1]);
    rlt_graph_destroy(g);
    rlt_ruleset_destroy(rs);
}
