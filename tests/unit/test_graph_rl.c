/*
 * test_graph_rl.c - the graph-rewrite environment and its policy
 * (rltune/graph_opt.h; src/api/graph_env.c, graph_policy.c): observations
 * (features, edges, candidates, mask), rewards as X-RLflow's relative cost
 * drop, masked and late actions refused, the horizon; a policy trained by
 * PPO for a few iterations learns to take the rewrite that pays on a graph
 * where one always does, acts the same after a save and load, and the
 * "rl" search rolls it out; bad policy files refused.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/onnx_build.h"
#include "../common/tmp.h"
#include "rltune/graph_opt.h"
#include "rltune/records.h"

static char tmp_dir[] = "/tmp/rlt_graph_rl_XXXXXX";
static char model_path[300];

/* x -> Identity -> Conv -> Mul(per channel): folding the Mul into the
 * Conv always lowers the cost (a step less, the same kernel: nothing new
 * fuses into it, so its time is the one measured already). */
static void setup(void)
{
    tmp_dir_use(tmp_dir);
    snprintf(model_path, sizeof model_path, "%s/net.onnx", tmp_dir);
    uint64_t rng = 3;
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, OB_DIMS(1, 4, 12, 12));
    ob_node(&b, "Identity", "id", "x", "xi");
    ob_conv_rand(&b, "c", "xi", "y", 4, 8, 3, 1, 1, 1, true, &rng);
    ob_init_f32(&b, "k", 4, OB_DIMS(1, 8, 1, 1), (float[]){0.5f, 2, -1, 1.5f, 1, 1, 2, 3});
    ob_node(&b, "Mul", "scale", "y,k", "o");
    ob_output(&b, "o");
    cr_assert(ob_write(&b, model_path));
    ob_free(&b);
}

static void teardown(void) { tmp_remove_tree(tmp_dir); }

TestSuite(graph_rl, .init = setup, .fini = teardown, .timeout = 120);

static rlt_rules *verified_rules(void)
{
    rlt_rules *r = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_rules_load(NULL, &r, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_rules_verify(r, 1, &d), RLT_STATUS_OK, "%s", d.message);
    return r;
}

static rlt_model *load_model(void)
{
    rlt_model *m = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_model_load(model_path, &m, &d), RLT_STATUS_OK, "%s", d.message);
    return m;
}

/* The candidate of rule `name`, or -1. */
static int candidate_of(const rlt_rules *rules, const rlt_graph_env_obs *o, const char *name)
{
    for (int k = 0; k < o->n_candidates; k++) {
        rlt_rule_info ri;
        rlt_rule_info_get(rules, o->cand_rule[k], &ri);
        if (o->mask[k] && strcmp(ri.name, name) == 0) return k;
    }
    return -1;
}

Test(graph_rl, observation_reward_and_ending)
{
    rlt_rules *rules = verified_rules();
    rlt_model *m = load_model();
    rlt_graph_env_options eo;
    rlt_graph_env_options_init(&eo);
    eo.horizon = 3;
    rlt_graph_env *env = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_graph_env_create(rules, &eo, &env, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_eq(rlt_graph_env_reset(env, m, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_graph_env_obs o;
    rlt_graph_env_observe(env, &o);
    cr_assert_eq(o.n_nodes, 3);
    cr_assert_eq(o.n_features, rlt_graph_env_n_features());
    cr_assert_eq(o.n_edges, 2, "id -> c -> scale");
    cr_assert_eq(o.n_actions, 257);
    cr_assert(o.mask[256], "stop is always allowed");
    cr_assert_gt(o.cost0_ms, 0);
    cr_assert_float_eq(o.cost_ms, o.cost0_ms, 0);
    /* one-hot op type per node */
    for (int v = 0; v < o.n_nodes; v++) {
        float sum = 0;
        for (int f = 0; f < rlt_graph_env_n_features(); f++)
            if (strcmp(rlt_graph_env_feature_name(f), "other") == 0 || f < rlt_graph_env_n_features() - 6)
                sum += o.features[v * o.n_features + f];
        cr_assert_float_eq(sum, 1, 0);
    }
    int k = candidate_of(rules, &o, "fold_mul_into_conv");
    cr_assert_geq(k, 0);
    cr_assert_eq(o.cand_nodes[k * RLT_GRAPH_ENV_MAX_ANCHORS + 2], -1, "two source nodes");
    double before = o.cost_ms, c0 = o.cost0_ms, reward;
    bool done;
    cr_assert_eq(rlt_graph_env_step(env, k, &reward, &done, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_graph_env_observe(env, &o);
    cr_assert_not(done);
    cr_assert_eq(o.n_nodes, 2);
    cr_assert_lt(o.cost_ms, before);
    cr_assert_float_eq(reward, 100 * (before - o.cost_ms) / c0, 1e-9);
    cr_assert_float_eq(o.best_cost_ms, o.cost_ms, 0);
    /* a masked action, then the horizon */
    cr_assert_eq(rlt_graph_env_step(env, 200, &reward, &done, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "action 200 is masked"), "%s", d.message);
    k = candidate_of(rules, &o, "remove_identity");
    cr_assert_geq(k, 0);
    cr_assert_eq(rlt_graph_env_step(env, k, &reward, &done, &d), RLT_STATUS_OK);
    cr_assert_float_eq(reward, 0, 1e-12, "a view costs nothing");
    rlt_graph_env_observe(env, &o);
    if (!done) {
        cr_assert_eq(rlt_graph_env_step(env, o.n_actions - 1, &reward, &done, &d), RLT_STATUS_OK);
        cr_assert(done);
    }
    d = (rlt_diag){0};
    cr_assert_eq(rlt_graph_env_step(env, o.n_actions - 1, &reward, &done, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "after the episode's end"), "%s", d.message);
    rlt_model *best = NULL;
    cr_assert_eq(rlt_graph_env_best_model(env, &best, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_model_n_nodes(best), 1);
    cr_assert_geq(rlt_graph_env_n_cost_evals(env), 3);
    rlt_model_destroy(best);
    rlt_graph_env_destroy(env);
    rlt_model_destroy(m);
    rlt_rules_destroy(rules);
}

Test(graph_rl, a_trained_policy_takes_the_rewrite_that_pays)
{
    rlt_rules *rules = verified_rules();
    rlt_model *m = load_model();
    rlt_graph_train_options o;
    rlt_graph_train_options_init(&o);
    o.n_iterations = 40;
    o.horizon = 4;
    o.episodes_per_model = 4;
    o.lr = 1e-3;
    o.seed = 5;
    rlt_graph_policy *p = NULL;
    rlt_diag d = {0};
    rlt_model *models[1] = {m};
    cr_assert_eq(rlt_graph_policy_train(rules, models, 1, &o, &p, &d), RLT_STATUS_OK, "%s", d.message);
    /* greedy: the first action folds the Mul or removes the Identity (a
     * view: free), never stops; which of the two comes first is worth a
     * discount factor's 1% of the Mul's time to the policy, so the timings
     * decide it */
    rlt_graph_env_options eo;
    rlt_graph_env_options_init(&eo);
    rlt_graph_env *env = NULL;
    cr_assert_eq(rlt_graph_env_create(rules, &eo, &env, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_graph_env_reset(env, m, &d), RLT_STATUS_OK);
    rlt_graph_env_obs obs;
    rlt_graph_env_observe(env, &obs);
    uint64_t state = 1;
    int a;
    cr_assert_eq(rlt_graph_policy_act(p, rules, &obs, true, &state, &a, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert(a == candidate_of(rules, &obs, "fold_mul_into_conv") || a == candidate_of(rules, &obs, "remove_identity"),
              "action %d", a);
    /* saved and loaded, the same choice; the rl search rolls it out */
    char path[400];
    snprintf(path, sizeof path, "%s/p.rlp", tmp_dir);
    cr_assert_eq(rlt_graph_policy_save(p, path, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_graph_policy *q = NULL;
    cr_assert_eq(rlt_graph_policy_load(path, &q, &d), RLT_STATUS_OK, "%s", d.message);
    int b;
    cr_assert_eq(rlt_graph_policy_act(q, rules, &obs, true, &state, &b, &d), RLT_STATUS_OK);
    cr_assert_eq(a, b);
    rlt_graph_opt_options go;
    rlt_graph_opt_options_init(&go);
    go.search = "rl";
    go.policy = q;
    rlt_model *better = NULL;
    rlt_graph_opt_result res;
    cr_assert_eq(rlt_model_graph_opt(m, rules, &go, &better, &res, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert_lt(res.cost_after_ms, res.cost_before_ms);
    bool folded = false;
    for (int i = 0; i < res.n_steps; i++) folded |= strcmp(res.steps[i].rule, "fold_mul_into_conv") == 0;
    cr_assert(folded, "the rollout folds the Mul");
    cr_assert_leq(res.n_cost_evals, 1 + 50);
    rlt_graph_opt_result_free(&res);
    rlt_model_destroy(better);
    better = NULL;
    go.alpha = 0.99; /* the rollout's bound, alpha x the best cost, must be >= 1 */
    d = (rlt_diag){0};
    cr_assert_eq(rlt_model_graph_opt(m, rules, &go, &better, &res, &d), RLT_STATUS_INVALID_ARGUMENT);
    cr_assert(strstr(d.message, "alpha must be >= 1"), "%s", d.message);
    cr_assert_null(better);
    rlt_graph_policy_destroy(q);
    rlt_graph_policy_destroy(p);
    rlt_graph_env_destroy(env);
    rlt_model_destroy(m);
    rlt_rules_destroy(rules);
}

Test(graph_rl, bad_policy_files_are_refused)
{
    char path[400];
    snprintf(path, sizeof path, "%s/junk.rlp", tmp_dir);
    FILE *f = fopen(path, "w");
    fputs("not a policy", f);
    fclose(f);
    rlt_graph_policy *p = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_graph_policy_load(path, &p, &d), RLT_STATUS_PARSE_ERROR);
    cr_assert_null(p);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_graph_policy_load(RLTUNE_SOURCE_DIR "/models/looptune.rlp", &p, &d), RLT_STATUS_PARSE_ERROR);
    cr_assert(strstr(d.message, "not a graph-rewrite policy"), "%s", d.message);
    d = (rlt_diag){0};
    cr_assert_eq(rlt_graph_policy_load("/nonexistent/p.rlp", &p, &d), RLT_STATUS_IO_ERROR);
}

/* The policy built into the library loads and acts on a graph it never saw. */
Test(graph_rl, the_shipped_policy_acts)
{
    rlt_rules *rules = verified_rules();
    rlt_model *m = load_model();
    rlt_graph_policy *p = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_graph_policy_default(&p, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_graph_env_options eo;
    rlt_graph_env_options_init(&eo);
    rlt_graph_env *env = NULL;
    cr_assert_eq(rlt_graph_env_create(rules, &eo, &env, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_graph_env_reset(env, m, &d), RLT_STATUS_OK);
    rlt_graph_env_obs obs;
    rlt_graph_env_observe(env, &obs);
    uint64_t state = 1;
    int a = -1;
    cr_assert_eq(rlt_graph_policy_act(p, rules, &obs, true, &state, &a, &d), RLT_STATUS_OK, "%s", d.message);
    cr_assert(a >= 0 && a < obs.n_actions && obs.mask[a], "action %d", a);
    rlt_graph_env_destroy(env);
    rlt_graph_policy_destroy(p);
    rlt_model_destroy(m);
    rlt_rules_destroy(rules);
}

/* A move and its inverse: moving the Relus after the Concat and back would
 * return to the first graph, so the second is refused without a cost
 * evaluation (and masked). */
Test(graph_rl, a_rewrite_back_to_an_earlier_graph_is_refused)
{
    char path[400];
    snprintf(path, sizeof path, "%s/relus.onnx", tmp_dir);
    onnx_build b;
    ob_init(&b, 13);
    ob_input(&b, "x", OB_F32, 4, OB_DIMS(1, 4, 6, 6));
    ob_input(&b, "y", OB_F32, 4, OB_DIMS(1, 4, 6, 6));
    ob_node(&b, "Relu", "r1", "x", "rx");
    ob_node(&b, "Relu", "r2", "y", "ry");
    ob_attr_i(&b, ob_node(&b, "Concat", "cat", "rx,ry", "z"), "axis", 1);
    ob_node(&b, "Sigmoid", "s", "z", "o");
    ob_output(&b, "o");
    cr_assert(ob_write(&b, path));
    ob_free(&b);
    rlt_rules *rules = verified_rules();
    rlt_model *m = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_model_load(path, &m, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_graph_env_options eo;
    rlt_graph_env_options_init(&eo);
    rlt_graph_env *env = NULL;
    cr_assert_eq(rlt_graph_env_create(rules, &eo, &env, &d), RLT_STATUS_OK);
    cr_assert_eq(rlt_graph_env_reset(env, m, &d), RLT_STATUS_OK);
    rlt_graph_env_obs o;
    rlt_graph_env_observe(env, &o);
    int k = candidate_of(rules, &o, "relu_after_concat");
    cr_assert_geq(k, 0);
    double reward;
    bool done;
    cr_assert_eq(rlt_graph_env_step(env, k, &reward, &done, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_graph_env_observe(env, &o);
    cr_assert_not(o.is_refused);
    int evals = rlt_graph_env_n_cost_evals(env);
    k = candidate_of(rules, &o, "relu_before_concat");
    cr_assert_geq(k, 0);
    cr_assert_eq(rlt_graph_env_step(env, k, &reward, &done, &d), RLT_STATUS_OK, "%s", d.message);
    rlt_graph_env_observe(env, &o);
    cr_assert(o.is_refused, "back to the first graph");
    cr_assert_not(o.mask[k]);
    cr_assert_float_eq(reward, 0, 0);
    cr_assert_eq(rlt_graph_env_n_cost_evals(env), evals, "nothing costed");
    cr_assert_eq(o.n_nodes, 3, "the graph stays: Concat, Relu, Sigmoid");
    rlt_graph_env_destroy(env);
    rlt_model_destroy(m);
    rlt_rules_destroy(rules);
}

/* The records of the seeds an environment measured, as JSON lines. */
static char *records_text(const char *db_path)
{
    rlt_db *db = NULL;
    rlt_diag d = {0};
    cr_assert_eq(rlt_db_open(db_path, NULL, &db, &d), RLT_STATUS_OK, "%s", d.message);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_not_null(f);
    cr_assert_eq(rlt_db_export_jsonl(db, NULL, f, &d), RLT_STATUS_OK, "%s", d.message);
    fclose(f);
    rlt_db_close(db);
    return text;
}

/* The environment costs kernels as graph-opt's other searches do: cold by
 * default (cold records; the seeds it measures stored as cold ones), warm
 * when asked. Costing them warm while greedy and TASO cost them cold made
 * the "rl" search's costs incomparable with theirs. */
Test(graph_rl, kernels_are_costed_cold_as_the_other_searches_cost_them)
{
    rlt_rules *rules = verified_rules();
    rlt_model *m = load_model();
    for (int cold = 1; cold >= 0; cold--) {
        char db_path[320];
        snprintf(db_path, sizeof db_path, "%s/%s.db", tmp_dir, cold ? "cold" : "warm");
        rlt_graph_env_options eo;
        rlt_graph_env_options_init(&eo);
        cr_assert(eo.cold_weights, "cold by default");
        eo.cold_weights = cold;
        eo.db_path = db_path;
        rlt_graph_env *env = NULL;
        rlt_diag d = {0};
        cr_assert_eq(rlt_graph_env_create(rules, &eo, &env, &d), RLT_STATUS_OK, "%s", d.message);
        cr_assert_eq(rlt_graph_env_reset(env, m, &d), RLT_STATUS_OK, "%s", d.message);
        rlt_graph_env_destroy(env);
        char *text = records_text(db_path);
        cr_assert(strstr(text, "\"tuner\":\"gopt-seed\""), "the seed is stored: %s", text);
        if (cold)
            cr_assert(strstr(text, "\"weights\":\"cold\""), "%s", text);
        else
            cr_assert_null(strstr(text, "\"weights\":\"cold\""), "%s", text);
        free(text);
    }
    rlt_graph_train_options to;
    rlt_graph_train_options_init(&to);
    cr_assert(to.cold_weights, "training costs as the searches do");
    rlt_model_destroy(m);
    rlt_rules_destroy(rules);
}
