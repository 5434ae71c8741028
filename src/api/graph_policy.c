/*
 * graph_policy.c - RLFlow's agent over the graph-rewrite environment
 * (rltune/graph_opt.h, "the policy"): a message-passing encoder of the
 * graph (nn's graph layers), a candidate head scoring each (rule, location)
 * from the mean of its matched nodes' embeddings, the rule and the graph's
 * mean embedding, a stop head and a value head on the graph's embedding;
 * PPO with GAE over episodes of a set of graphs; the policy file (an agent
 * file of tuner "graph-policy").
 *
 * One observation at a time goes through the networks (graphs differ in
 * size): a training step runs forward and backward per sample and sums the
 * gradients over a minibatch.
 */
#include "api/graph_opt_internal.h"
#include "gopt/default_policy_bytes.h"
#include "nn/agent_file.h"
#include "nn/nn.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define POLICY_TUNER "graph-policy"
#define N_GLOBALS 2 /* step / horizon, log(cost / first cost) */
#define GRAD_CLIP 1.0

enum { NET_CAND, NET_STOP, NET_VALUE, N_HEADS };
static const char *const head_names[N_HEADS] = {"cand", "stop", "value"};

struct rlt_graph_policy {
    int n_features, hidden, n_rules;
    char **rule_names;  /* n_rules, heap */
    rlt_gnn *gnn;
    rlt_mlp *heads[N_HEADS];
    rlt_adam *gnn_adam[RLT_MLP_MAX_LAYERS];
    rlt_adam *head_adam[N_HEADS];
    /* the rules the last act saw, and each one's index among the policy's */
    const rlt_ruleset *mapped_for;
    int *rule_map;
    int n_mapped;
};

/* One observation as the networks read it (owned copies, kept for PPO). */
typedef struct gobs {
    int n_nodes, n_edges, n_valid;
    float *features;  /* n_nodes x n_features */
    int *edges;       /* n_edges x 2 */
    int *actions;     /* n_valid: the environment's action of each valid candidate */
    int *rules;       /* n_valid: the policy's rule index, -1 unknown */
    int *anchors;     /* n_valid x RLT_GRAPH_ENV_MAX_ANCHORS */
    float globals[N_GLOBALS];
} gobs;

/* What a forward keeps for the backward. */
typedef struct gfwd {
    float *h;        /* n_nodes x hidden */
    float *gmean;    /* hidden */
    float *cand_in;  /* n_valid x (2 hidden + n_rules) */
    float *logits;   /* n_valid + 1 (stop last) */
    double value;
} gfwd;

static int cand_width(const rlt_graph_policy *p) { return 2 * p->hidden + p->n_rules; }
static int head_width(const rlt_graph_policy *p) { return p->hidden + N_GLOBALS; }

/* ---- making, saving, loading ------------------------------------------------------- */

void rlt_graph_policy_destroy(rlt_graph_policy *p)
{
    if (!p) return;
    for (int i = 0; i < p->n_rules && p->rule_names; i++) rlt_free(p->rule_names[i]);
    rlt_free(p->rule_names);
    if (p->gnn)
        for (int l = 0; l < rlt_gnn_get_spec(p->gnn)->n_layers; l++) rlt_adam_destroy(p->gnn_adam[l]);
    rlt_gnn_destroy(p->gnn);
    for (int k = 0; k < N_HEADS; k++) {
        rlt_mlp_destroy(p->heads[k]);
        rlt_adam_destroy(p->head_adam[k]);
    }
    rlt_free(p->rule_map);
    rlt_free(p);
}

static rlt_mlp_spec head_spec(const rlt_graph_policy *p, int k)
{
    rlt_mlp_spec s = {.n_inputs = k == NET_CAND ? cand_width(p) : head_width(p), .n_layers = 2};
    s.layers[0] = (rlt_mlp_layer){k == NET_STOP ? p->hidden / 2 : p->hidden, RLT_NN_ACT_RELU};
    s.layers[1] = (rlt_mlp_layer){1, RLT_NN_ACT_NONE};
    return s;
}

static rlt_status make_adams(rlt_graph_policy *p, double lr, rlt_diag *diag)
{
    rlt_adam_opts ao = {.lr = lr};
    for (int l = 0; l < rlt_gnn_get_spec(p->gnn)->n_layers; l++)
        if (!p->gnn_adam[l]) {
            rlt_status st = rlt_adam_create(&ao, rlt_gnn_layer(p->gnn, l), &p->gnn_adam[l], diag);
            if (st != RLT_STATUS_OK) return st;
        }
    for (int k = 0; k < N_HEADS; k++)
        if (!p->head_adam[k]) {
            rlt_status st = rlt_adam_create(&ao, p->heads[k], &p->head_adam[k], diag);
            if (st != RLT_STATUS_OK) return st;
        }
    return RLT_STATUS_OK;
}

static rlt_status policy_new(const rlt_ruleset *rs, int hidden, int gnn_layers, uint64_t seed, rlt_graph_policy **out,
                             rlt_diag *diag)
{
    *out = NULL;
    rlt_graph_policy *p = rlt_calloc(1, sizeof *p);
    if (!p) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory making a policy");
    p->n_features = rlt_graph_env_n_features();
    p->hidden = hidden;
    p->n_rules = rs->n_rules;
    rlt_status st = RLT_STATUS_OK;
    if (!(p->rule_names = rlt_calloc((size_t)p->n_rules + 1, sizeof *p->rule_names)))
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory making a policy");
    for (int i = 0; i < p->n_rules && st == RLT_STATUS_OK; i++)
        if (!(p->rule_names[i] = rlt_strdup(rs->rules[i]->name)))
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory making a policy");
    rlt_gnn_spec gs = {.n_inputs = p->n_features, .n_hidden = hidden, .n_layers = gnn_layers};
    if (st == RLT_STATUS_OK) st = rlt_gnn_create(&gs, seed, &p->gnn, diag);
    for (int k = 0; k < N_HEADS && st == RLT_STATUS_OK; k++) {
        rlt_mlp_spec hs = head_spec(p, k);
        st = rlt_mlp_create(&hs, seed + 100 + (uint64_t)k, &p->heads[k], diag);
    }
    if (st != RLT_STATUS_OK) {
        rlt_graph_policy_destroy(p);
        return st;
    }
    *out = p;
    return RLT_STATUS_OK;
}

rlt_status rlt_graph_policy_save(const rlt_graph_policy *p, const char *path, rlt_diag *diag)
{
    rlt_agent_file *f = NULL;
    rlt_str names;
    rlt_str_init(&names);
    for (int i = 0; i < p->n_rules; i++) {
        rlt_str_append(&names, p->rule_names[i]);
        rlt_str_append(&names, "\n");
    }
    rlt_status st = names.has_failed ? rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory saving a policy")
                                     : rlt_agent_file_create(POLICY_TUNER, NULL, &f, diag);
    if (st == RLT_STATUS_OK) st = rlt_agent_file_put_bytes(f, "rules", names.data ? names.data : "", names.len, diag);
    if (st == RLT_STATUS_OK) st = rlt_agent_file_put_real(f, "features", p->n_features, diag);
    int n_layers = rlt_gnn_get_spec(p->gnn)->n_layers;
    if (st == RLT_STATUS_OK) st = rlt_agent_file_put_real(f, "gnn_layers", n_layers, diag);
    for (int l = 0; l < n_layers && st == RLT_STATUS_OK; l++) {
        char name[32];
        snprintf(name, sizeof name, "gnn_%d", l);
        st = rlt_agent_file_put_mlp(f, name, rlt_gnn_layer(p->gnn, l), p->gnn_adam[l], diag);
    }
    for (int k = 0; k < N_HEADS && st == RLT_STATUS_OK; k++)
        st = rlt_agent_file_put_mlp(f, head_names[k], p->heads[k], p->head_adam[k], diag);
    if (st == RLT_STATUS_OK) st = rlt_agent_file_save(f, path, diag);
    rlt_agent_file_destroy(f);
    rlt_str_free(&names);
    return st;
}

/* A policy from an agent file already read; `path` names it in messages.
 * Takes f (destroyed here). */
static rlt_status policy_from_file(rlt_agent_file *f, const char *path, rlt_graph_policy **out, rlt_diag *diag);

rlt_status rlt_graph_policy_load(const char *path, rlt_graph_policy **out, rlt_diag *diag)
{
    *out = NULL;
    rlt_agent_file *f = NULL;
    rlt_status st = rlt_agent_file_load(path, &f, diag);
    if (st != RLT_STATUS_OK) return st;
    return policy_from_file(f, path, out, diag);
}

rlt_status rlt_graph_policy_default(rlt_graph_policy **out, rlt_diag *diag)
{
    *out = NULL;
    rlt_agent_file *f = NULL;
    const char *name = "models/graph_rewrite.rlp (built in)";
    rlt_status st = rlt_agent_file_load_bytes(rlt_default_graph_policy, sizeof rlt_default_graph_policy - 1, name,
                                              &f, diag);
    if (st != RLT_STATUS_OK) return st;
    return policy_from_file(f, name, out, diag);
}

static rlt_status policy_from_file(rlt_agent_file *f, const char *path, rlt_graph_policy **out, rlt_diag *diag)
{
    rlt_graph_policy *p = NULL;
    rlt_status st = RLT_STATUS_OK;
    double n_features = 0, n_layers = 0;
    const char *names = NULL;
    size_t names_len = 0;
    if (strcmp(rlt_agent_file_tuner(f), POLICY_TUNER) != 0) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s: not a graph-rewrite policy (saved by '%s')", path,
                      rlt_agent_file_tuner(f));
        goto cleanup;
    }
    if ((st = rlt_agent_file_get_real(f, "features", &n_features, diag)) != RLT_STATUS_OK ||
        (st = rlt_agent_file_get_real(f, "gnn_layers", &n_layers, diag)) != RLT_STATUS_OK ||
        (st = rlt_agent_file_get_bytes(f, "rules", &names, &names_len, diag)) != RLT_STATUS_OK)
        goto cleanup;
    if ((int)n_features != rlt_graph_env_n_features() || n_layers < 1 || n_layers > RLT_MLP_MAX_LAYERS) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR,
                      "%s: a policy of %g node features and %g graph layers; this rltune observes %d features", path,
                      n_features, n_layers, rlt_graph_env_n_features());
        goto cleanup;
    }
    if (!(p = rlt_calloc(1, sizeof *p))) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory loading a policy");
        goto cleanup;
    }
    p->n_features = (int)n_features;
    for (size_t i = 0; i < names_len; i++) p->n_rules += names[i] == '\n';
    if (!(p->rule_names = rlt_calloc((size_t)p->n_rules + 1, sizeof *p->rule_names))) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory loading a policy");
        goto cleanup;
    }
    for (int i = 0, start = 0; i < p->n_rules; i++) {
        int end = start;
        while ((size_t)end < names_len && names[end] != '\n') end++;
        if (!(p->rule_names[i] = rlt_malloc((size_t)(end - start) + 1))) {
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory loading a policy");
            goto cleanup;
        }
        memcpy(p->rule_names[i], names + start, (size_t)(end - start));
        p->rule_names[i][end - start] = 0;
        start = end + 1;
    }
    rlt_mlp *layers[RLT_MLP_MAX_LAYERS] = {0};
    rlt_adam *adams[RLT_MLP_MAX_LAYERS] = {0};
    int n_got = 0;
    for (; n_got < (int)n_layers && st == RLT_STATUS_OK; n_got++) {
        char name[32];
        snprintf(name, sizeof name, "gnn_%d", n_got);
        st = rlt_agent_file_get_mlp(f, name, NULL, &layers[n_got], &adams[n_got], diag);
    }
    if (st == RLT_STATUS_OK) {
        st = rlt_gnn_from_layers((int)n_layers, layers, &p->gnn, diag);
        for (int l = 0; l < (int)n_layers; l++) p->gnn_adam[l] = adams[l];
    } else {
        for (int l = 0; l < n_got; l++) {
            rlt_mlp_destroy(layers[l]);
            rlt_adam_destroy(adams[l]);
        }
    }
    if (st != RLT_STATUS_OK) goto cleanup;
    p->hidden = rlt_gnn_get_spec(p->gnn)->n_hidden;
    if (rlt_gnn_get_spec(p->gnn)->n_inputs != p->n_features) {
        st = rlt_fail(diag, RLT_STATUS_PARSE_ERROR, "%s: the graph layers read %d features, not %d", path,
                      rlt_gnn_get_spec(p->gnn)->n_inputs, p->n_features);
        goto cleanup;
    }
    for (int k = 0; k < N_HEADS && st == RLT_STATUS_OK; k++) {
        rlt_mlp_spec want = head_spec(p, k);
        st = rlt_agent_file_get_mlp(f, head_names[k], &want, &p->heads[k], &p->head_adam[k], diag);
    }
cleanup:
    rlt_agent_file_destroy(f);
    if (st != RLT_STATUS_OK) {
        rlt_graph_policy_destroy(p);
        return st;
    }
    *out = p;
    return RLT_STATUS_OK;
}

/* ---- observations ------------------------------------------------------------------ */

static void gobs_free(gobs *o)
{
    rlt_free(o->features);
    rlt_free(o->edges);
    rlt_free(o->actions);
    rlt_free(o->rules);
    rlt_free(o->anchors);
    memset(o, 0, sizeof *o);
}

/* The policy's index of each rule of rs (by name), kept until rs changes. */
static rlt_status map_rules(rlt_graph_policy *p, const rlt_ruleset *rs, rlt_diag *diag)
{
    if (p->mapped_for == rs && p->n_mapped == rs->n_rules) return RLT_STATUS_OK;
    int *map = rlt_realloc(p->rule_map, ((size_t)rs->n_rules + 1) * sizeof *map);
    if (!map) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory mapping rules");
    p->rule_map = map;
    for (int i = 0; i < rs->n_rules; i++) {
        map[i] = -1;
        for (int k = 0; k < p->n_rules; k++)
            if (strcmp(p->rule_names[k], rs->rules[i]->name) == 0) map[i] = k;
    }
    p->mapped_for = rs;
    p->n_mapped = rs->n_rules;
    return RLT_STATUS_OK;
}

static rlt_status gobs_make(rlt_graph_policy *p, const rlt_ruleset *rs, const rlt_graph_env_obs *obs, gobs *o,
                            rlt_diag *diag)
{
    memset(o, 0, sizeof *o);
    if (obs->done || obs->n_nodes < 1)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "graph policy: the episode has ended");
    rlt_status st = map_rules(p, rs, diag);
    if (st != RLT_STATUS_OK) return st;
    o->n_nodes = obs->n_nodes;
    o->n_edges = obs->n_edges;
    for (int k = 0; k < obs->n_candidates; k++) o->n_valid += obs->mask[k] != 0;
    size_t nf = (size_t)obs->n_nodes * (size_t)obs->n_features;
    o->features = rlt_malloc(nf * sizeof *o->features);
    o->edges = rlt_malloc(((size_t)obs->n_edges * 2 + 1) * sizeof *o->edges);
    o->actions = rlt_malloc(((size_t)o->n_valid + 1) * sizeof *o->actions);
    o->rules = rlt_malloc(((size_t)o->n_valid + 1) * sizeof *o->rules);
    o->anchors = rlt_malloc(((size_t)o->n_valid + 1) * RLT_GRAPH_ENV_MAX_ANCHORS * sizeof *o->anchors);
    if (!o->features || !o->edges || !o->actions || !o->rules || !o->anchors) {
        gobs_free(o);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory copying an observation");
    }
    memcpy(o->features, obs->features, nf * sizeof *o->features);
    if (obs->n_edges) memcpy(o->edges, obs->edges, (size_t)obs->n_edges * 2 * sizeof *o->edges);
    int v = 0;
    for (int k = 0; k < obs->n_candidates; k++) {
        if (!obs->mask[k]) continue;
        o->actions[v] = k;
        o->rules[v] = obs->cand_rule[k] >= 0 && obs->cand_rule[k] < rs->n_rules ? p->rule_map[obs->cand_rule[k]] : -1;
        memcpy(o->anchors + (size_t)v * RLT_GRAPH_ENV_MAX_ANCHORS, obs->cand_nodes + (size_t)k * RLT_GRAPH_ENV_MAX_ANCHORS,
               RLT_GRAPH_ENV_MAX_ANCHORS * sizeof *o->anchors);
        v++;
    }
    o->globals[0] = obs->horizon > 0 ? (float)obs->step / (float)obs->horizon : 0;
    o->globals[1] = obs->cost0_ms > 0 && obs->cost_ms > 0 ? (float)log(obs->cost_ms / obs->cost0_ms) : 0;
    return RLT_STATUS_OK;
}

/* ---- the networks ------------------------------------------------------------------- */

static void gfwd_free(gfwd *f)
{
    rlt_free(f->h);
    rlt_free(f->gmean);
    rlt_free(f->cand_in);
    rlt_free(f->logits);
    memset(f, 0, sizeof *f);
}

static int n_anchors(const int *a)
{
    int n = 0;
    while (n < RLT_GRAPH_ENV_MAX_ANCHORS && a[n] >= 0) n++;
    return n;
}

/* Forward through every network, keeping what backward needs. */
static rlt_status forward(rlt_graph_policy *p, const gobs *o, gfwd *f, rlt_diag *diag)
{
    memset(f, 0, sizeof *f);
    int hd = p->hidden, cw = cand_width(p), hw = head_width(p);
    f->h = rlt_malloc((size_t)o->n_nodes * (size_t)hd * sizeof *f->h);
    f->gmean = rlt_calloc((size_t)hd, sizeof *f->gmean);
    f->cand_in = rlt_calloc(((size_t)o->n_valid + 1) * (size_t)cw, sizeof *f->cand_in);
    f->logits = rlt_malloc(((size_t)o->n_valid + 1) * sizeof *f->logits);
    float *head_in = rlt_malloc((size_t)hw * sizeof *head_in);
    rlt_status st = RLT_STATUS_OK;
    if (!f->h || !f->gmean || !f->cand_in || !f->logits || !head_in) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory in the policy");
        goto cleanup;
    }
    if ((st = rlt_gnn_forward(p->gnn, o->n_nodes, o->features, o->n_edges, o->edges, f->h, diag)) != RLT_STATUS_OK)
        goto cleanup;
    for (int v = 0; v < o->n_nodes; v++)
        for (int j = 0; j < hd; j++) f->gmean[j] += f->h[(size_t)v * (size_t)hd + (size_t)j];
    for (int j = 0; j < hd; j++) f->gmean[j] /= (float)o->n_nodes;
    for (int k = 0; k < o->n_valid; k++) {
        float *row = f->cand_in + (size_t)k * (size_t)cw;
        const int *a = o->anchors + (size_t)k * RLT_GRAPH_ENV_MAX_ANCHORS;
        int na = n_anchors(a);
        for (int i = 0; i < na; i++)
            for (int j = 0; j < hd; j++) row[j] += f->h[(size_t)a[i] * (size_t)hd + (size_t)j] / (float)na;
        if (o->rules[k] >= 0) row[hd + o->rules[k]] = 1;
        memcpy(row + hd + p->n_rules, f->gmean, (size_t)hd * sizeof *row);
    }
    if (o->n_valid > 0 &&
        (st = rlt_mlp_forward(p->heads[NET_CAND], o->n_valid, f->cand_in, f->logits, diag)) != RLT_STATUS_OK)
        goto cleanup;
    memcpy(head_in, f->gmean, (size_t)hd * sizeof *head_in);
    memcpy(head_in + hd, o->globals, sizeof o->globals);
    float out;
    if ((st = rlt_mlp_forward(p->heads[NET_STOP], 1, head_in, &f->logits[o->n_valid], diag)) != RLT_STATUS_OK ||
        (st = rlt_mlp_forward(p->heads[NET_VALUE], 1, head_in, &out, diag)) != RLT_STATUS_OK)
        goto cleanup;
    f->value = out;
cleanup:
    rlt_free(head_in);
    if (st != RLT_STATUS_OK) gfwd_free(f);
    return st;
}

/* Gradients (accumulated) for dL/dlogits [n_valid + 1] and dL/dvalue. */
static rlt_status backward(rlt_graph_policy *p, const gobs *o, const gfwd *f, const float *dlogits, float dvalue,
                           rlt_diag *diag)
{
    int hd = p->hidden, cw = cand_width(p), hw = head_width(p);
    float *dcand = rlt_calloc(((size_t)o->n_valid + 1) * (size_t)cw, sizeof *dcand);
    float *dhead = rlt_malloc((size_t)hw * sizeof *dhead);
    float *dg = rlt_calloc((size_t)hd, sizeof *dg);
    float *dh = rlt_calloc((size_t)o->n_nodes * (size_t)hd, sizeof *dh);
    rlt_status st = RLT_STATUS_OK;
    if (!dcand || !dhead || !dg || !dh) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory in the policy");
        goto cleanup;
    }
    if (o->n_valid > 0) {
        if ((st = rlt_mlp_backward(p->heads[NET_CAND], o->n_valid, dlogits, dcand, diag)) != RLT_STATUS_OK)
            goto cleanup;
        for (int k = 0; k < o->n_valid; k++) {
            const float *row = dcand + (size_t)k * (size_t)cw;
            const int *a = o->anchors + (size_t)k * RLT_GRAPH_ENV_MAX_ANCHORS;
            int na = n_anchors(a);
            for (int i = 0; i < na; i++)
                for (int j = 0; j < hd; j++) dh[(size_t)a[i] * (size_t)hd + (size_t)j] += row[j] / (float)na;
            for (int j = 0; j < hd; j++) dg[j] += row[hd + p->n_rules + j];
        }
    }
    if ((st = rlt_mlp_backward(p->heads[NET_STOP], 1, &dlogits[o->n_valid], dhead, diag)) != RLT_STATUS_OK)
        goto cleanup;
    for (int j = 0; j < hd; j++) dg[j] += dhead[j];
    if ((st = rlt_mlp_backward(p->heads[NET_VALUE], 1, &dvalue, dhead, diag)) != RLT_STATUS_OK) goto cleanup;
    for (int j = 0; j < hd; j++) dg[j] += dhead[j];
    for (int v = 0; v < o->n_nodes; v++)
        for (int j = 0; j < hd; j++) dh[(size_t)v * (size_t)hd + (size_t)j] += dg[j] / (float)o->n_nodes;
    st = rlt_gnn_backward(p->gnn, dh, NULL, diag);
cleanup:
    rlt_free(dh);
    rlt_free(dg);
    rlt_free(dhead);
    rlt_free(dcand);
    return st;
}

/* Softmax of the n logits into probs (double). */
static void softmax(int n, const float *logits, double *probs)
{
    double mx = -INFINITY, sum = 0;
    for (int i = 0; i < n; i++) mx = fmax(mx, logits[i]);
    for (int i = 0; i < n; i++) sum += (probs[i] = exp(logits[i] - mx));
    for (int i = 0; i < n; i++) probs[i] /= sum;
}

static double uniform(uint64_t *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*state >> 11) * (1.0 / 9007199254740992.0);
}

/* An index drawn from probs (or the most probable one). */
static int pick(int n, const double *probs, bool is_greedy, uint64_t *state)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (probs[i] > probs[best]) best = i;
    if (is_greedy) return best;
    double u = uniform(state), acc = 0;
    for (int i = 0; i < n; i++) {
        acc += probs[i];
        if (u < acc) return i;
    }
    return n - 1;
}

rlt_status rlt_graph_policy_act(rlt_graph_policy *p, const rlt_rules *rules, const rlt_graph_env_obs *obs,
                                bool is_greedy, uint64_t *rng_state, int *action, rlt_diag *diag)
{
    gobs o;
    gfwd f;
    rlt_status st = gobs_make(p, rules->set, obs, &o, diag);
    if (st != RLT_STATUS_OK) return st;
    if ((st = forward(p, &o, &f, diag)) == RLT_STATUS_OK) {
        double *probs = rlt_malloc(((size_t)o.n_valid + 1) * sizeof *probs);
        if (!probs) {
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory in the policy");
        } else {
            softmax(o.n_valid + 1, f.logits, probs);
            int i = pick(o.n_valid + 1, probs, is_greedy, rng_state);
            *action = i < o.n_valid ? o.actions[i] : obs->n_actions - 1;
            rlt_free(probs);
        }
        gfwd_free(&f);
    }
    gobs_free(&o);
    return st;
}

/* ---- PPO ------------------------------------------------------------------------------ */

void rlt_graph_train_options_init(rlt_graph_train_options *o)
{
    memset(o, 0, sizeof *o);
    o->n_iterations = 60;
    o->episodes_per_model = 2;
    o->horizon = 20;
    o->ppo_epochs = 4;
    o->minibatch = 32;
    o->lr = 3e-4;
    o->gamma = 0.99;
    o->lambda = 0.95;
    o->clip = 0.2;
    o->ent_coef = 0.01;
    o->vf_coef = 0.5;
    o->hidden = 64;
    o->gnn_layers = 3;
    o->seed = 1;
    o->n_threads = 1;
    o->cold_weights = true;
}

typedef struct sample {
    gobs o;
    int choice;       /* index among o's valid candidates, n_valid = stop */
    float logp_old, value, reward, adv, ret;
    bool is_last;     /* the episode's last step */
} sample;

typedef struct samples {
    sample *s;
    int n, cap;
} samples;

static void samples_clear(samples *ss)
{
    for (int i = 0; i < ss->n; i++) gobs_free(&ss->s[i].o);
    ss->n = 0;
}

static sample *samples_add(samples *ss)
{
    if (ss->n == ss->cap) {
        int cap = ss->cap ? 2 * ss->cap : 256;
        sample *s = rlt_realloc(ss->s, (size_t)cap * sizeof *s);
        if (!s) return NULL;
        ss->s = s;
        ss->cap = cap;
    }
    sample *s = &ss->s[ss->n++];
    memset(s, 0, sizeof *s);
    return s;
}

/* One episode on model m, its steps appended to ss. */
static rlt_status rollout(rlt_graph_policy *p, const rlt_rules *rules, rlt_graph_env *env, const rlt_model *m,
                          uint64_t *rng, samples *ss, double *ret, double *best_ratio, double *entropy, int *n_steps,
                          rlt_diag *diag)
{
    rlt_status st = rlt_graph_env_reset(env, m, diag);
    *ret = 0;
    rlt_graph_env_obs obs;
    rlt_graph_env_observe(env, &obs);
    while (st == RLT_STATUS_OK && !obs.done) {
        sample *s = samples_add(ss);
        if (!s) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory in a rollout");
        if ((st = gobs_make(p, rules->set, &obs, &s->o, diag)) != RLT_STATUS_OK) {
            ss->n--;
            break;
        }
        gfwd f;
        if ((st = forward(p, &s->o, &f, diag)) != RLT_STATUS_OK) break;
        int n = s->o.n_valid + 1;
        double *probs = rlt_malloc((size_t)n * sizeof *probs);
        if (!probs) {
            gfwd_free(&f);
            return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory in a rollout");
        }
        softmax(n, f.logits, probs);
        for (int i = 0; i < n; i++)
            if (probs[i] > 0) *entropy -= probs[i] * log(probs[i]);
        s->choice = pick(n, probs, false, rng);
        s->logp_old = (float)log(fmax(probs[s->choice], 1e-30));
        s->value = (float)f.value;
        rlt_free(probs);
        gfwd_free(&f);
        int a = s->choice < s->o.n_valid ? s->o.actions[s->choice] : obs.n_actions - 1;
        double r;
        bool done;
        if ((st = rlt_graph_env_step(env, a, &r, &done, diag)) != RLT_STATUS_OK) break;
        s->reward = (float)r;
        *ret += r;
        (*n_steps)++;
        rlt_graph_env_observe(env, &obs);
    }
    if (ss->n > 0) ss->s[ss->n - 1].is_last = true;
    *best_ratio = obs.cost0_ms > 0 ? obs.best_cost_ms / obs.cost0_ms : 1;
    return st;
}

/* GAE over the samples from `first` on (whole episodes, each ending in a
 * terminal step). */
static void advantages(samples *ss, int first, double gamma, double lambda)
{
    double next_value = 0, gae = 0;
    for (int i = ss->n - 1; i >= first; i--) {
        sample *s = &ss->s[i];
        if (s->is_last) next_value = gae = 0;
        double delta = s->reward + gamma * next_value - s->value;
        gae = delta + gamma * lambda * gae;
        s->adv = (float)gae;
        s->ret = (float)(gae + s->value);
        next_value = s->value;
    }
}

/* One sample's loss gradients accumulated, scaled by 1 / batch. */
static rlt_status learn_one(rlt_graph_policy *p, const rlt_graph_train_options *o, const sample *s, int batch,
                            double *entropy_sum, rlt_diag *diag)
{
    gfwd f;
    rlt_status st = forward(p, &s->o, &f, diag);
    if (st != RLT_STATUS_OK) return st;
    int n = s->o.n_valid + 1;
    double *probs = rlt_malloc((size_t)n * sizeof *probs);
    float *dlogits = rlt_malloc((size_t)n * sizeof *dlogits);
    if (!probs || !dlogits) {
        st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory training");
        goto cleanup;
    }
    softmax(n, f.logits, probs);
    double logp = log(fmax(probs[s->choice], 1e-30));
    double ratio = exp(logp - s->logp_old);
    double a = s->adv;
    /* clipped surrogate: d(-min(r A, clip(r) A))/dlogp */
    bool is_clipped = (a >= 0 && ratio > 1 + o->clip) || (a < 0 && ratio < 1 - o->clip);
    double dlogp = is_clipped ? 0 : -ratio * a;
    double h = 0;
    for (int i = 0; i < n; i++)
        if (probs[i] > 0) h -= probs[i] * log(probs[i]);
    *entropy_sum += h;
    for (int i = 0; i < n; i++) {
        double d_logp = dlogp * ((i == s->choice) - probs[i]);
        double d_ent = probs[i] > 0 ? -probs[i] * (log(probs[i]) + h) : 0; /* dH/dlogit_i */
        dlogits[i] = (float)((d_logp - o->ent_coef * d_ent) / batch);
    }
    float dvalue = (float)(2.0 * o->vf_coef * (f.value - s->ret) / batch);
    st = backward(p, &s->o, &f, dlogits, dvalue, diag);
cleanup:
    rlt_free(dlogits);
    rlt_free(probs);
    gfwd_free(&f);
    return st;
}

static void zero_grads(rlt_graph_policy *p)
{
    rlt_gnn_zero_grad(p->gnn);
    for (int k = 0; k < N_HEADS; k++) rlt_mlp_zero_grad(p->heads[k]);
}

static rlt_status update(rlt_graph_policy *p, rlt_diag *diag)
{
    rlt_status st = RLT_STATUS_OK;
    double norm;
    for (int l = 0; l < rlt_gnn_get_spec(p->gnn)->n_layers && st == RLT_STATUS_OK; l++) {
        rlt_mlp *m = rlt_gnn_layer(p->gnn, l);
        if ((st = rlt_mlp_grad_clip(m, GRAD_CLIP, &norm, diag)) == RLT_STATUS_OK)
            st = rlt_adam_step(p->gnn_adam[l], m, diag);
    }
    for (int k = 0; k < N_HEADS && st == RLT_STATUS_OK; k++)
        if ((st = rlt_mlp_grad_clip(p->heads[k], GRAD_CLIP, &norm, diag)) == RLT_STATUS_OK)
            st = rlt_adam_step(p->head_adam[k], p->heads[k], diag);
    return st;
}

static rlt_status copy_policy(const rlt_graph_policy *src, rlt_graph_policy *dst, rlt_diag *diag)
{
    rlt_status st = RLT_STATUS_OK;
    for (int l = 0; l < rlt_gnn_get_spec(src->gnn)->n_layers && st == RLT_STATUS_OK; l++)
        st = rlt_mlp_copy_weights(rlt_gnn_layer(dst->gnn, l), rlt_gnn_layer(((rlt_graph_policy *)src)->gnn, l), diag);
    for (int k = 0; k < N_HEADS && st == RLT_STATUS_OK; k++)
        st = rlt_mlp_copy_weights(dst->heads[k], src->heads[k], diag);
    return st;
}

rlt_status rlt_graph_policy_train(const rlt_rules *rules, rlt_model *const *models, int n_models,
                                  const rlt_graph_train_options *o, rlt_graph_policy **out, rlt_diag *diag)
{
    *out = NULL;
    if (n_models < 1 || o->n_iterations < 0 || o->episodes_per_model < 1 || o->horizon < 1 || o->ppo_epochs < 1 ||
        o->minibatch < 1 || !(o->lr > 0) || o->gamma < 0 || o->gamma > 1 || o->lambda < 0 || o->lambda > 1 ||
        !(o->clip > 0) || o->ent_coef < 0 || o->vf_coef < 0 || o->hidden < 2 || o->hidden > 1024 ||
        o->gnn_layers < 1 || o->gnn_layers > 8)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "graph policy training: an option is out of range (models %d, iterations %d, horizon %d, "
                        "hidden %d, graph layers %d)",
                        n_models, o->n_iterations, o->horizon, o->hidden, o->gnn_layers);
    rlt_graph_policy *p = NULL;
    rlt_graph_env *env = NULL;
    samples ss = {0};
    int *order = NULL;
    uint64_t rng = o->seed * 0x9e3779b97f4a7c15ull + 1;
    rlt_status st = policy_new(rules->set, o->init ? o->init->hidden : o->hidden,
                               o->init ? rlt_gnn_get_spec(o->init->gnn)->n_layers : o->gnn_layers, o->seed, &p, diag);
    if (st == RLT_STATUS_OK && o->init) {
        if (o->init->n_rules != p->n_rules) {
            st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                          "graph policy training: the policy to go on from knows %d rules, these rules are %d",
                          o->init->n_rules, p->n_rules);
        } else {
            for (int i = 0; i < p->n_rules && st == RLT_STATUS_OK; i++)
                if (strcmp(o->init->rule_names[i], p->rule_names[i]) != 0)
                    st = rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                                  "graph policy training: rule %d is %s in the policy, %s here", i + 1,
                                  o->init->rule_names[i], p->rule_names[i]);
            if (st == RLT_STATUS_OK) st = copy_policy(o->init, p, diag);
        }
    }
    if (st == RLT_STATUS_OK) st = make_adams(p, o->lr, diag);
    rlt_graph_env_options eo;
    rlt_graph_env_options_init(&eo);
    eo.horizon = o->horizon;
    eo.reward = o->reward;
    eo.step_penalty = o->step_penalty;
    eo.db_path = o->db_path;
    eo.n_threads = o->n_threads;
    eo.build = o->build;
    eo.seed = o->seed;
    eo.cold_weights = o->cold_weights;
    eo.n_seeds = o->n_seeds;
    if (st == RLT_STATUS_OK) st = rlt_graph_env_create(rules, &eo, &env, diag);
    uint64_t t0 = rlt_time_ns();
    for (int it = 0; it < o->n_iterations && st == RLT_STATUS_OK; it++) {
        rlt_graph_train_progress pr = {.iteration = it + 1, .n_iterations = o->n_iterations};
        samples_clear(&ss);
        double entropy = 0;
        for (int e = 0; e < o->episodes_per_model && st == RLT_STATUS_OK; e++)
            for (int mi = 0; mi < n_models && st == RLT_STATUS_OK; mi++) {
                double ret = 0, ratio = 1;
                int first = ss.n;
                st = rollout(p, rules, env, models[mi], &rng, &ss, &ret, &ratio, &entropy, &pr.n_steps, diag);
                if (st != RLT_STATUS_OK) break;
                advantages(&ss, first, o->gamma, o->lambda);
                pr.n_episodes++;
                pr.mean_return += ret;
                pr.mean_best_ratio += ratio;
            }
        if (st != RLT_STATUS_OK || ss.n == 0) break;
        pr.mean_return /= pr.n_episodes;
        pr.mean_best_ratio /= pr.n_episodes;
        pr.entropy = entropy / ss.n;
        /* advantages normalised over the iteration */
        double mean = 0, var = 0;
        for (int i = 0; i < ss.n; i++) mean += ss.s[i].adv;
        mean /= ss.n;
        for (int i = 0; i < ss.n; i++) var += (ss.s[i].adv - mean) * (ss.s[i].adv - mean);
        double sd = sqrt(var / ss.n) + 1e-8;
        for (int i = 0; i < ss.n; i++) ss.s[i].adv = (float)((ss.s[i].adv - mean) / sd);
        rlt_free(order);
        if (!(order = rlt_malloc((size_t)ss.n * sizeof *order))) {
            st = rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "out of memory training");
            break;
        }
        for (int i = 0; i < ss.n; i++) order[i] = i;
        double ent_sum = 0;
        for (int epoch = 0; epoch < o->ppo_epochs && st == RLT_STATUS_OK; epoch++) {
            for (int i = ss.n - 1; i > 0; i--) { /* Fisher-Yates */
                int j = (int)(uniform(&rng) * (i + 1));
                int t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
            for (int b = 0; b < ss.n && st == RLT_STATUS_OK; b += o->minibatch) {
                int nb = ss.n - b < o->minibatch ? ss.n - b : o->minibatch;
                zero_grads(p);
                for (int k = 0; k < nb && st == RLT_STATUS_OK; k++)
                    st = learn_one(p, o, &ss.s[order[b + k]], nb, &ent_sum, diag);
                if (st == RLT_STATUS_OK) st = update(p, diag);
            }
        }
        pr.elapsed_s = (double)(rlt_time_ns() - t0) * 1e-9;
        pr.n_cost_evals = rlt_graph_env_n_cost_evals(env);
        if (st == RLT_STATUS_OK && o->progress) o->progress(o->progress_ctx, &pr);
    }
    samples_clear(&ss);
    rlt_free(ss.s);
    rlt_free(order);
    rlt_graph_env_destroy(env);
    if (st != RLT_STATUS_OK) {
        rlt_graph_policy_destroy(p);
        return st;
    }
    *out = p;
    return RLT_STATUS_OK;
}
