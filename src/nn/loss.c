/*
 * loss.c - losses and softmax over groups of columns (nn.h): MSE, Huber
 * (also of one picked column per row, DQN's loss), softmax and log-softmax
 * within groups with their backward passes, the log-probability of chosen
 * actions, the negative log-likelihood and the entropy (PPO's heads).
 *
 * Every function checks its arguments and reports what was wrong
 * (INVALID_ARGUMENT) rather than returning NaN. Sums and exponentials are
 * in double; results are rounded to float once. Losses are means over the
 * examples, and their gradients are of that mean.
 */
#include "nn/nn_internal.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

/* ---- argument checks ------------------------------------------------------ */

static rlt_status check_finite(const char *fn, const char *what, size_t n, const float *a, rlt_diag *diag)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(a[i]))
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "nn: %s: %s[%zu] is %g: values must be finite", fn,
                            what, i, (double)a[i]);
    return RLT_STATUS_OK;
}

static rlt_status check_elementwise(const char *fn, int n, const float *pred, const float *target,
                                    double *out_loss, rlt_diag *diag)
{
    if (n < 1) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "nn: %s of %d elements (at least 1)", fn, n);
    if (!pred || !target || !out_loss)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "nn: %s without its %s", fn,
                        !pred ? "predictions" : !target ? "targets" : "loss output");
    rlt_status st = check_finite(fn, "pred", (size_t)n, pred, diag);
    if (st != RLT_STATUS_OK) return st;
    return check_finite(fn, "target", (size_t)n, target, diag);
}

static rlt_status check_delta(const char *fn, double delta, rlt_diag *diag)
{
    if (!(delta > 0) || !isfinite(delta))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "nn: %s: delta %g must be positive and finite", fn, delta);
    return RLT_STATUS_OK;
}

/* ---- MSE and Huber -------------------------------------------------------- */

rlt_status rlt_nn_loss_mse(int n, const float *pred, const float *target, double *out_loss, float *out_grad,
                           rlt_diag *diag)
{
    rlt_status st = check_elementwise("mse", n, pred, target, out_loss, diag);
    if (st != RLT_STATUS_OK) return st;
    double sum = 0;
    for (int i = 0; i < n; i++) {
        double e = (double)pred[i] - (double)target[i];
        sum += e * e;
        if (out_grad) out_grad[i] = (float)(2.0 * e / n);
    }
    *out_loss = sum / n;
    return RLT_STATUS_OK;
}

/* One element's Huber loss; *grad gets its derivative in e. */
static double huber(double e, double delta, double *grad)
{
    if (fabs(e) <= delta) {
        *grad = e;
        return 0.5 * e * e;
    }
    *grad = e > 0 ? delta : -delta;
    return delta * (fabs(e) - 0.5 * delta);
}

rlt_status rlt_nn_loss_huber(int n, const float *pred, const float *target, double delta, double *out_loss,
                             float *out_grad, rlt_diag *diag)
{
    rlt_status st = check_elementwise("huber", n, pred, target, out_loss, diag);
    if (st == RLT_STATUS_OK) st = check_delta("huber", delta, diag);
    if (st != RLT_STATUS_OK) return st;
    double sum = 0;
    for (int i = 0; i < n; i++) {
        double g;
        sum += huber((double)pred[i] - (double)target[i], delta, &g);
        if (out_grad) out_grad[i] = (float)(g / n);
    }
    *out_loss = sum / n;
    return RLT_STATUS_OK;
}

rlt_status rlt_nn_loss_huber_picked(int n_rows, int n_cols, const float *pred, const int *cols,
                                    const float *target, double delta, double *out_loss, float *out_grad,
                                    rlt_diag *diag)
{
    const char *fn = "huber_picked";
    if (n_rows < 1 || n_cols < 1)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "nn: %s of %d rows x %d columns (at least 1 x 1)", fn,
                        n_rows, n_cols);
    if (!pred || !cols || !target || !out_loss)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "nn: %s without its %s", fn,
                        !pred ? "predictions" : !cols ? "columns" : !target ? "targets" : "loss output");
    rlt_status st = check_delta(fn, delta, diag);
    if (st == RLT_STATUS_OK) st = check_finite(fn, "target", (size_t)n_rows, target, diag);
    if (st != RLT_STATUS_OK) return st;
    for (int i = 0; i < n_rows; i++) {
        if (cols[i] < 0 || cols[i] >= n_cols)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "nn: %s: cols[%d] is %d, outside 0..%d", fn, i,
                            cols[i], n_cols - 1);
        float p = pred[(size_t)i * (size_t)n_cols + (size_t)cols[i]];
        if (!isfinite(p))
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "nn: %s: pred[%d][%d] is %g: values must be finite",
                            fn, i, cols[i], (double)p);
    }
    if (out_grad) memset(out_grad, 0, (size_t)n_rows * (size_t)n_cols * sizeof *out_grad);
    double sum = 0;
    for (int i = 0; i < n_rows; i++) {
        size_t at = (size_t)i * (size_t)n_cols + (size_t)cols[i];
        double g;
        sum += huber((double)pred[at] - (double)target[i], delta, &g);
        if (out_grad) out_grad[at] = (float)(g / n_rows);
    }
    *out_loss = sum / n_rows;
    return RLT_STATUS_OK;
}

/* ---- groups --------------------------------------------------------------- */

static int group_size(const rlt_nn_groups *g, int k) { return g->sizes ? g->sizes[k] : g->n_cols / g->n_groups; }

/* Checks the grouping, the row count and that every array in `arrays`
 * (n_arrays of them, named by `names`) is there. */
static rlt_status check_groups(const char *fn, const rlt_nn_groups *g, int n_rows, int n_arrays,
                               const void *const *arrays, const char *const *names, rlt_diag *diag)
{
    if (!g) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "nn: %s without a grouping of the columns", fn);
    if (g->n_cols < 1 || g->n_groups < 1 || g->n_groups > g->n_cols)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "nn: %s: %d columns in %d groups (need 1 <= n_groups <= n_cols)", fn, g->n_cols,
                        g->n_groups);
    if (!g->sizes && g->n_cols % g->n_groups != 0)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "nn: %s: %d columns do not split into %d equal groups (give sizes)", fn, g->n_cols,
                        g->n_groups);
    if (g->sizes) {
        int64_t sum = 0;
        for (int k = 0; k < g->n_groups; k++) {
            if (g->sizes[k] < 1)
                return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "nn: %s: group %d has size %d (at least 1)", fn,
                                k, g->sizes[k]);
            sum += g->sizes[k];
        }
        if (sum != g->n_cols)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "nn: %s: the group sizes sum to %" PRId64 ", not n_cols %d", fn, sum, g->n_cols);
    }
    if (n_rows < 1) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "nn: %s of %d rows (at least 1)", fn, n_rows);
    for (int a = 0; a < n_arrays; a++)
        if (!arrays[a]) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "nn: %s without its %s", fn, names[a]);
    return RLT_STATUS_OK;
}

static rlt_status check_actions(const char *fn, const rlt_nn_groups *g, int n_rows, const int *actions,
                                rlt_diag *diag)
{
    for (int i = 0; i < n_rows; i++)
        for (int k = 0; k < g->n_groups; k++) {
            int a = actions[(size_t)i * (size_t)g->n_groups + (size_t)k];
            if (a < 0 || a >= group_size(g, k))
                return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                                "nn: %s: action of row %d in group %d is %d, outside 0..%d", fn, i, k, a,
                                group_size(g, k) - 1);
        }
    return RLT_STATUS_OK;
}

#define ARRAYS(...) (const void *const[]){__VA_ARGS__}
#define NAMES(...) (const char *const[]){__VA_ARGS__}

/* log(sum(exp(x))) of n values, in double, max-subtracted. */
static double log_sum_exp(const float *x, int n)
{
    double max = x[0];
    for (int j = 1; j < n; j++) max = RLT_MAX(max, (double)x[j]);
    double sum = 0;
    for (int j = 0; j < n; j++) sum += exp((double)x[j] - max);
    return max + log(sum);
}

/* ---- softmax and log-softmax ---------------------------------------------- */

/* logits - log(sum(exp(logits))) per group (exp of it when is_exp: the
 * softmax), groups following one another, row after row. */
static void grouped_log_softmax(const rlt_nn_groups *g, int n_rows, const float *logits, float *out, bool is_exp)
{
    size_t off = 0; /* the group's first element */
    for (int i = 0; i < n_rows; i++)
        for (int k = 0; k < g->n_groups; k++) {
            int size = group_size(g, k);
            double lse = log_sum_exp(logits + off, size);
            for (int j = 0; j < size; j++) {
                double v = (double)logits[off + (size_t)j] - lse;
                out[off + (size_t)j] = (float)(is_exp ? exp(v) : v);
            }
            off += (size_t)size;
        }
}

rlt_status rlt_nn_softmax(const rlt_nn_groups *g, int n_rows, const float *logits, float *out_probs,
                          rlt_diag *diag)
{
    rlt_status st = check_groups("softmax", g, n_rows, 2, ARRAYS(logits, out_probs), NAMES("logits", "output"), diag);
    if (st == RLT_STATUS_OK)
        st = check_finite("softmax", "logits", (size_t)n_rows * (size_t)g->n_cols, logits, diag);
    if (st != RLT_STATUS_OK) return st;
    grouped_log_softmax(g, n_rows, logits, out_probs, true);
    return RLT_STATUS_OK;
}

rlt_status rlt_nn_softmax_backward(const rlt_nn_groups *g, int n_rows, const float *probs, const float *dprobs,
                                   float *out_dlogits, rlt_diag *diag)
{
    rlt_status st = check_groups("softmax_backward", g, n_rows, 3, ARRAYS(probs, dprobs, out_dlogits),
                                 NAMES("probabilities", "dL/dprobabilities", "output"), diag);
    if (st != RLT_STATUS_OK) return st;
    size_t off = 0;
    for (int i = 0; i < n_rows; i++)
        for (int k = 0; k < g->n_groups; k++) {
            int size = group_size(g, k);
            const float *p = probs + off, *dp = dprobs + off;
            double dot = 0;
            for (int j = 0; j < size; j++) dot += (double)p[j] * (double)dp[j];
            for (int j = 0; j < size; j++) out_dlogits[off + (size_t)j] = (float)((double)p[j] * ((double)dp[j] - dot));
            off += (size_t)size;
        }
    return RLT_STATUS_OK;
}

rlt_status rlt_nn_log_softmax(const rlt_nn_groups *g, int n_rows, const float *logits, float *out_logp,
                              rlt_diag *diag)
{
    rlt_status st =
        check_groups("log_softmax", g, n_rows, 2, ARRAYS(logits, out_logp), NAMES("logits", "output"), diag);
    if (st == RLT_STATUS_OK)
        st = check_finite("log_softmax", "logits", (size_t)n_rows * (size_t)g->n_cols, logits, diag);
    if (st != RLT_STATUS_OK) return st;
    grouped_log_softmax(g, n_rows, logits, out_logp, false);
    return RLT_STATUS_OK;
}

rlt_status rlt_nn_log_softmax_backward(const rlt_nn_groups *g, int n_rows, const float *logp, const float *dlogp,
                                       float *out_dlogits, rlt_diag *diag)
{
    rlt_status st = check_groups("log_softmax_backward", g, n_rows, 3, ARRAYS(logp, dlogp, out_dlogits),
                                 NAMES("log-probabilities", "dL/dlog-probabilities", "output"), diag);
    if (st != RLT_STATUS_OK) return st;
    size_t off = 0;
    for (int i = 0; i < n_rows; i++)
        for (int k = 0; k < g->n_groups; k++) {
            int size = group_size(g, k);
            double sum = 0;
            for (int j = 0; j < size; j++) sum += (double)dlogp[off + (size_t)j];
            for (int j = 0; j < size; j++) {
                size_t at = off + (size_t)j;
                out_dlogits[at] = (float)((double)dlogp[at] - exp((double)logp[at]) * sum);
            }
            off += (size_t)size;
        }
    return RLT_STATUS_OK;
}

/* ---- chosen actions ------------------------------------------------------- */

rlt_status rlt_nn_log_prob_picked(const rlt_nn_groups *g, int n_rows, const float *logp, const int *actions,
                                  float *out_log_prob, rlt_diag *diag)
{
    rlt_status st = check_groups("log_prob_picked", g, n_rows, 3, ARRAYS(logp, actions, out_log_prob),
                                 NAMES("log-probabilities", "actions", "output"), diag);
    if (st == RLT_STATUS_OK) st = check_actions("log_prob_picked", g, n_rows, actions, diag);
    if (st != RLT_STATUS_OK) return st;
    for (int i = 0; i < n_rows; i++) {
        const float *row = logp + (size_t)i * (size_t)g->n_cols;
        const int *act = actions + (size_t)i * (size_t)g->n_groups;
        double sum = 0;
        for (int k = 0, start = 0; k < g->n_groups; start += group_size(g, k), k++) sum += (double)row[start + act[k]];
        out_log_prob[i] = (float)sum;
    }
    return RLT_STATUS_OK;
}

rlt_status rlt_nn_log_prob_picked_backward(const rlt_nn_groups *g, int n_rows, const int *actions,
                                           const float *dlog_prob, float *out_dlogp, rlt_diag *diag)
{
    rlt_status st = check_groups("log_prob_picked_backward", g, n_rows, 3, ARRAYS(actions, dlog_prob, out_dlogp),
                                 NAMES("actions", "dL/dlog_prob", "output"), diag);
    if (st == RLT_STATUS_OK) st = check_actions("log_prob_picked_backward", g, n_rows, actions, diag);
    if (st != RLT_STATUS_OK) return st;
    memset(out_dlogp, 0, (size_t)n_rows * (size_t)g->n_cols * sizeof *out_dlogp);
    for (int i = 0; i < n_rows; i++) {
        float *row = out_dlogp + (size_t)i * (size_t)g->n_cols;
        const int *act = actions + (size_t)i * (size_t)g->n_groups;
        for (int k = 0, start = 0; k < g->n_groups; start += group_size(g, k), k++) row[start + act[k]] = dlog_prob[i];
    }
    return RLT_STATUS_OK;
}

rlt_status rlt_nn_loss_nll(const rlt_nn_groups *g, int n_rows, const float *logits, const int *actions,
                           const float *row_weights, double *out_loss, float *out_dlogits, rlt_diag *diag)
{
    const char *fn = "nll";
    rlt_status st = check_groups(fn, g, n_rows, 3, ARRAYS(logits, actions, out_loss),
                                 NAMES("logits", "actions", "loss output"), diag);
    if (st == RLT_STATUS_OK) st = check_finite(fn, "logits", (size_t)n_rows * (size_t)g->n_cols, logits, diag);
    if (st == RLT_STATUS_OK && row_weights) st = check_finite(fn, "row_weights", (size_t)n_rows, row_weights, diag);
    if (st == RLT_STATUS_OK) st = check_actions(fn, g, n_rows, actions, diag);
    if (st != RLT_STATUS_OK) return st;
    double loss = 0;
    for (int i = 0; i < n_rows; i++) {
        double w = row_weights ? (double)row_weights[i] : 1.0;
        size_t off = (size_t)i * (size_t)g->n_cols;
        for (int k = 0; k < g->n_groups; k++) {
            int size = group_size(g, k);
            int a = actions[(size_t)i * (size_t)g->n_groups + (size_t)k];
            double lse = log_sum_exp(logits + off, size);
            loss -= w * ((double)logits[off + (size_t)a] - lse);
            if (out_dlogits)
                for (int j = 0; j < size; j++) {
                    double p = exp((double)logits[off + (size_t)j] - lse);
                    out_dlogits[off + (size_t)j] = (float)(w * (p - (j == a ? 1.0 : 0.0)) / n_rows);
                }
            off += (size_t)size;
        }
    }
    *out_loss = loss / n_rows;
    return RLT_STATUS_OK;
}

rlt_status rlt_nn_entropy(const rlt_nn_groups *g, int n_rows, const float *logits, double *out_entropy,
                          float *out_dlogits, rlt_diag *diag)
{
    const char *fn = "entropy";
    rlt_status st =
        check_groups(fn, g, n_rows, 2, ARRAYS(logits, out_entropy), NAMES("logits", "entropy output"), diag);
    if (st == RLT_STATUS_OK) st = check_finite(fn, "logits", (size_t)n_rows * (size_t)g->n_cols, logits, diag);
    if (st != RLT_STATUS_OK) return st;
    double total = 0;
    size_t off = 0;
    for (int i = 0; i < n_rows; i++)
        for (int k = 0; k < g->n_groups; k++) {
            int size = group_size(g, k);
            const float *x = logits + off;
            double lse = log_sum_exp(x, size);
            double h = 0;
            for (int j = 0; j < size; j++) {
                double logp = (double)x[j] - lse;
                h -= exp(logp) * logp;
            }
            total += h;
            if (out_dlogits)
                for (int j = 0; j < size; j++) {
                    double logp = (double)x[j] - lse;
                    out_dlogits[off + (size_t)j] = (float)(-exp(logp) * (logp + h) / n_rows);
                }
            off += (size_t)size;
        }
    *out_entropy = total / n_rows;
    return RLT_STATUS_OK;
}

double rlt_nn_ppo_clip_grad(int m, const float *logp, const float *logp_old, const float *adv, const int *rows,
                            double clip, float *out_dlogp)
{
    double loss = 0;
    for (int i = 0; i < m; i++) {
        int r = rows ? rows[i] : i;
        double ratio = exp((double)logp[i] - (double)logp_old[r]), a = adv[r];
        double clipped = fmin(fmax(ratio, 1.0 - clip), 1.0 + clip) * a;
        bool is_unclipped = ratio * a <= clipped;
        loss -= fmin(ratio * a, clipped) / m;
        out_dlogp[i] = is_unclipped ? (float)(-a * ratio / m) : 0.0f;
    }
    return loss;
}
