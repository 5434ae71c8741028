/*
 * policy.c - a LoopTune policy (policy.h): its networks, the scores and
 * values it gives states, and its file (an agent file of tuner "policy").
 */
#include "policy/policy.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define SECTION_ALGO "algo"
#define SECTION_OBS_VERSION "obs_version"
#define SECTION_NET "net"
#define SECTION_CRITIC "critic"
#define SECTION_ABOUT "about"
#define SECTION_BLIND "blind"
#define POLICY_TUNER "policy"
#define MAX_HIDDEN_UNITS 4096

const char *rlt_policy_algo_str(rlt_policy_algo algo)
{
    switch (algo) {
    case RLT_POLICY_ALGO_DQN: return "dqn";
    case RLT_POLICY_ALGO_PPO: return "ppo";
    case RLT_POLICY_ALGO_BC: return "bc";
    }
    return "unknown";
}

const char *rlt_policy_algo_name(const rlt_policy *p) { return rlt_policy_algo_str(p->algo); }

bool rlt_policy_algo_from_str(const char *name, rlt_policy_algo *out)
{
    if (strcmp(name, "dqn") == 0) *out = RLT_POLICY_ALGO_DQN;
    else if (strcmp(name, "ppo") == 0) *out = RLT_POLICY_ALGO_PPO;
    else if (strcmp(name, "bc") == 0) *out = RLT_POLICY_ALGO_BC;
    else return false;
    return true;
}

/* The spec of a network from the observation through the hidden layers to
 * n_out linear outputs. */
static rlt_mlp_spec net_spec(int n_hidden, const int *hidden, int n_out)
{
    rlt_mlp_spec s = {.n_inputs = RLT_ENV_OBS_LEN, .n_layers = n_hidden + 1};
    for (int l = 0; l < n_hidden; l++) s.layers[l] = (rlt_mlp_layer){hidden[l], RLT_NN_ACT_RELU};
    s.layers[n_hidden] = (rlt_mlp_layer){n_out, RLT_NN_ACT_NONE};
    return s;
}

rlt_status rlt_policy_create(rlt_policy_algo algo, int n_hidden, const int *hidden, uint64_t seed,
                             rlt_policy **out, rlt_diag *diag)
{
    static const int default_hidden[] = {RLT_POLICY_DEFAULT_HIDDEN_1, RLT_POLICY_DEFAULT_HIDDEN_2};
    *out = NULL;
    if (algo != RLT_POLICY_ALGO_DQN && algo != RLT_POLICY_ALGO_PPO && algo != RLT_POLICY_ALGO_BC)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "policy: unknown algorithm %d", (int)algo);
    if (n_hidden == 0) {
        n_hidden = (int)RLT_ARRAY_LEN(default_hidden);
        hidden = default_hidden;
    }
    if (n_hidden < 0 || n_hidden > RLT_POLICY_MAX_HIDDEN)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "policy: %d hidden layers (1..%d)", n_hidden,
                        RLT_POLICY_MAX_HIDDEN);
    for (int l = 0; l < n_hidden; l++)
        if (hidden[l] < 1 || hidden[l] > MAX_HIDDEN_UNITS)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "policy: hidden layer %d has %d units (1..%d)", l + 1,
                            hidden[l], MAX_HIDDEN_UNITS);
    rlt_policy *p = rlt_calloc(1, sizeof *p);
    if (!p) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory creating a policy");
    p->algo = algo;
    p->is_blind = algo == RLT_POLICY_ALGO_BC;
    rlt_mlp_spec spec = net_spec(n_hidden, hidden, RLT_ENV_N_ACTIONS);
    rlt_status st = rlt_mlp_create(&spec, seed, &p->net, diag);
    if (st == RLT_STATUS_OK && algo == RLT_POLICY_ALGO_PPO) {
        rlt_mlp_spec cspec = net_spec(n_hidden, hidden, 1);
        st = rlt_mlp_create(&cspec, seed ^ 0x9e3779b97f4a7c15ULL, &p->critic, diag);
    }
    if (st != RLT_STATUS_OK) {
        rlt_policy_destroy(p);
        return st;
    }
    *out = p;
    return RLT_STATUS_OK;
}

void rlt_policy_destroy(rlt_policy *p)
{
    if (!p) return;
    rlt_mlp_destroy(p->net);
    rlt_mlp_destroy(p->critic);
    rlt_adam_destroy(p->net_adam);
    rlt_adam_destroy(p->critic_adam);
    rlt_free(p->about);
    rlt_free(p);
}

rlt_status rlt_policy_set_about(rlt_policy *p, const char *text, rlt_diag *diag)
{
    char *copy = NULL;
    if (text && !(copy = rlt_strdup(text)))
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory keeping a policy's description");
    rlt_free(p->about);
    p->about = copy;
    return RLT_STATUS_OK;
}

/* ---- acting ------------------------------------------------------------- */

bool rlt_policy_is_blind(const rlt_policy *p) { return p->is_blind; }

void rlt_policy_blind_obs(int n_rows, float *obs)
{
    for (int i = 0; i < n_rows; i++) obs[(size_t)i * RLT_ENV_OBS_LEN + RLT_ENV_OBS_GFLOPS] = 0.0f;
}

rlt_status rlt_policy_scores(const rlt_policy *p, int n_rows, const float *obs, float *out, rlt_diag *diag)
{
    float *blind = NULL;
    if (rlt_policy_is_blind(p)) {
        size_t n = (size_t)n_rows * RLT_ENV_OBS_LEN;
        if (!(blind = rlt_malloc(n * sizeof *blind)))
            return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory scoring %d states", n_rows);
        memcpy(blind, obs, n * sizeof *blind);
        rlt_policy_blind_obs(n_rows, blind);
    }
    rlt_status st = rlt_mlp_predict(p->net, n_rows, blind ? blind : obs, out, diag);
    rlt_free(blind);
    if (st != RLT_STATUS_OK) return st;
    for (int i = 0; i < n_rows; i++) {
        const float *mask = obs + (size_t)i * RLT_ENV_OBS_LEN + RLT_ENV_OBS_MASK;
        float *row = out + (size_t)i * RLT_ENV_N_ACTIONS;
        for (int a = 0; a < RLT_ENV_N_ACTIONS; a++)
            if (mask[a] < 0.5f) row[a] = -INFINITY;
    }
    return RLT_STATUS_OK;
}

int rlt_policy_best_action(const float scores[RLT_ENV_N_ACTIONS])
{
    int best = -1;
    for (int a = 0; a < RLT_ENV_N_ACTIONS; a++)
        if (scores[a] != -INFINITY && (best < 0 || scores[a] > scores[best])) best = a;
    return best < 0 ? RLT_ENV_ACTION_STOP : best;
}

rlt_status rlt_policy_values(const rlt_policy *p, int n_rows, const float *obs, float *out, rlt_diag *diag)
{
    if (p->algo == RLT_POLICY_ALGO_PPO) return rlt_mlp_predict(p->critic, n_rows, obs, out, diag);
    if (p->algo == RLT_POLICY_ALGO_BC) {
        for (int i = 0; i < n_rows; i++) out[i] = 0.0f;
        return RLT_STATUS_OK;
    }
    float *scores = rlt_malloc((size_t)n_rows * RLT_ENV_N_ACTIONS * sizeof *scores);
    if (!scores) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory scoring %d states", n_rows);
    rlt_status st = rlt_policy_scores(p, n_rows, obs, scores, diag);
    for (int i = 0; i < n_rows && st == RLT_STATUS_OK; i++) {
        const float *row = scores + (size_t)i * RLT_ENV_N_ACTIONS;
        int a = rlt_policy_best_action(row);
        out[i] = row[a] == -INFINITY ? 0.0f : row[a];
    }
    rlt_free(scores);
    return st;
}

/* The blind env's evaluator: every state scores 0, nothing is built. */
static rlt_status score_nothing(void *ctx, const rlt_env_eval_request *req, rlt_env_eval_result *out,
                                rlt_diag *diag)
{
    (void)ctx;
    (void)req;
    (void)diag;
    *out = (rlt_env_eval_result){.status = RLT_STATUS_OK, .gflops = 0.0};
    return RLT_STATUS_OK;
}

rlt_status rlt_policy_blind_env(const char *op_spec, rlt_env **out, rlt_diag *diag)
{
    rlt_env_opts o = {.peak_gflops = 1.0, .evaluate = score_nothing};
    return rlt_env_create(op_spec, &o, out, diag);
}

/* ---- files -------------------------------------------------------------- */

rlt_status rlt_policy_put(const rlt_policy *p, bool with_optimiser, rlt_agent_file *f, rlt_diag *diag)
{
    const char *algo = rlt_policy_algo_str(p->algo);
    const char *about = p->about ? p->about : "";
    rlt_status st = rlt_agent_file_put_bytes(f, SECTION_ALGO, algo, strlen(algo), diag);
    if (st == RLT_STATUS_OK) st = rlt_agent_file_put_real(f, SECTION_OBS_VERSION, RLT_ENV_OBS_VERSION, diag);
    if (st == RLT_STATUS_OK)
        st = rlt_agent_file_put_mlp(f, SECTION_NET, p->net, with_optimiser ? p->net_adam : NULL, diag);
    if (st == RLT_STATUS_OK && p->critic)
        st = rlt_agent_file_put_mlp(f, SECTION_CRITIC, p->critic, with_optimiser ? p->critic_adam : NULL, diag);
    if (st == RLT_STATUS_OK) st = rlt_agent_file_put_bytes(f, SECTION_ABOUT, about, strlen(about), diag);
    /* only where it is not the algorithm's default, so that a bc policy's
     * file stays what it was before the section existed */
    if (st == RLT_STATUS_OK && p->is_blind != (p->algo == RLT_POLICY_ALGO_BC))
        st = rlt_agent_file_put_real(f, SECTION_BLIND, p->is_blind ? 1 : 0, diag);
    return st;
}

/* Checks that a loaded network maps the observation to n_out outputs. */
static rlt_status check_net(const rlt_agent_file *f, const char *name, const rlt_mlp *m, int n_out, rlt_diag *diag)
{
    if (rlt_mlp_n_inputs(m) == RLT_ENV_OBS_LEN && rlt_mlp_n_outputs(m) == n_out) return RLT_STATUS_OK;
    return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                    "policy file '%s': network %s maps %d inputs to %d outputs, a policy's maps %d to %d",
                    rlt_agent_file_source(f), name, rlt_mlp_n_inputs(m), rlt_mlp_n_outputs(m), RLT_ENV_OBS_LEN,
                    n_out);
}

rlt_status rlt_policy_get(const rlt_agent_file *f, bool with_optimiser, rlt_policy **out, rlt_diag *diag)
{
    *out = NULL;
    const char *src = rlt_agent_file_source(f);
    if (strcmp(rlt_agent_file_tuner(f), POLICY_TUNER) != 0)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "'%s' is an agent of tuner %s, not a policy (rltune train writes policies)", src,
                        rlt_agent_file_tuner(f));
    const char *algo = NULL, *about = NULL;
    size_t len = 0, about_len = 0;
    double version = 0;
    rlt_status st = rlt_agent_file_get_bytes(f, SECTION_ALGO, &algo, &len, diag);
    if (st == RLT_STATUS_OK) st = rlt_agent_file_get_real(f, SECTION_OBS_VERSION, &version, diag);
    if (st == RLT_STATUS_OK) st = rlt_agent_file_get_bytes(f, SECTION_ABOUT, &about, &about_len, diag);
    if (st != RLT_STATUS_OK) return st;
    rlt_policy *p = rlt_calloc(1, sizeof *p);
    if (!p) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory loading a policy");
    if (!rlt_policy_algo_from_str(algo, &p->algo) || strlen(algo) != len) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "policy file '%s': unknown algorithm '%.32s' (dqn, ppo, bc)",
                      src, algo);
        goto fail;
    }
    if (version != RLT_ENV_OBS_VERSION) {
        st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                      "policy file '%s': trained on observation layout %g, this rltune's is %d", src, version,
                      RLT_ENV_OBS_VERSION);
        goto fail;
    }
    if ((st = rlt_agent_file_get_mlp(f, SECTION_NET, NULL, &p->net, with_optimiser ? &p->net_adam : NULL, diag)) !=
            RLT_STATUS_OK ||
        (st = check_net(f, SECTION_NET, p->net, RLT_ENV_N_ACTIONS, diag)) != RLT_STATUS_OK)
        goto fail;
    if (p->algo == RLT_POLICY_ALGO_PPO &&
        ((st = rlt_agent_file_get_mlp(f, SECTION_CRITIC, NULL, &p->critic,
                                      with_optimiser ? &p->critic_adam : NULL, diag)) != RLT_STATUS_OK ||
         (st = check_net(f, SECTION_CRITIC, p->critic, 1, diag)) != RLT_STATUS_OK))
        goto fail;
    if (about_len > 0 && (st = rlt_policy_set_about(p, about, diag)) != RLT_STATUS_OK) goto fail;
    p->is_blind = p->algo == RLT_POLICY_ALGO_BC;
    if (rlt_agent_file_has(f, SECTION_BLIND)) {
        double blind = -1;
        if ((st = rlt_agent_file_get_real(f, SECTION_BLIND, &blind, diag)) != RLT_STATUS_OK) goto fail;
        if (blind != 0 && blind != 1) {
            st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "policy file '%s': section %s is %g, not 0 or 1", src,
                          SECTION_BLIND, blind);
            goto fail;
        }
        p->is_blind = blind == 1;
    }
    *out = p;
    return RLT_STATUS_OK;

fail:
    rlt_policy_destroy(p);
    return st;
}

rlt_status rlt_policy_save(const rlt_policy *p, const char *path, rlt_diag *diag)
{
    rlt_agent_file *f = NULL;
    rlt_status st = rlt_agent_file_create(POLICY_TUNER, NULL, &f, diag);
    if (st == RLT_STATUS_OK) st = rlt_policy_put(p, false, f, diag);
    if (st == RLT_STATUS_OK) st = rlt_agent_file_save(f, path, diag);
    rlt_agent_file_destroy(f);
    return st;
}

rlt_status rlt_policy_load(const char *path, rlt_policy **out, rlt_diag *diag)
{
    *out = NULL;
    rlt_agent_file *f = NULL;
    rlt_status st = rlt_agent_file_load(path, &f, diag);
    if (st == RLT_STATUS_OK) st = rlt_policy_get(f, false, out, diag);
    rlt_agent_file_destroy(f);
    return st;
}

/* ---- results of an optimisation ----------------------------------------- */

void rlt_optimize_result_free(rlt_optimize_result *r)
{
    if (!r) return;
    rlt_free(r->schedule);
    rlt_free(r->tree);
    r->schedule = r->tree = NULL;
}

rlt_status rlt_optimize_result_take(rlt_optimize_result *r, const rlt_env *env, const int *trace, int n_trace,
                                    rlt_diag *diag)
{
    RLT_ASSERT(n_trace >= 0 && n_trace <= RLT_OPTIMIZE_MAX_TRACE);
    char *schedule = rlt_env_schedule(env), *tree = rlt_env_tree(env);
    if (!schedule || !tree) {
        rlt_free(schedule);
        rlt_free(tree);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory printing the best state");
    }
    rlt_optimize_result_free(r);
    r->schedule = schedule;
    r->tree = tree;
    r->gflops = rlt_env_gflops(env);
    const rlt_nest *nest = rlt_env_nest(env);
    r->time_ms = r->gflops > 0 ? nest->op->flops / (r->gflops * 1e6) : INFINITY;
    r->n_trace = n_trace;
    if (n_trace > 0) memcpy(r->trace, trace, (size_t)n_trace * sizeof *trace);
    return RLT_STATUS_OK;
}
