/*
 * mlp.c - multi-layer perceptrons (nn.h): dense layers with an activation
 * each, deterministic initialisation from a seed, forward over a minibatch
 * (kept for backward, or not: predict), backward from any dL/doutput,
 * gradient norms and clipping, copying weights.
 *
 * Entry points: rlt_mlp_create / _destroy, _forward, _predict, _backward,
 * _zero_grad, _grad_norm, _grad_clip, _copy_weights, and the accessors.
 * Every matrix product is OpenBLAS's cblas_sgemm: a layer computes
 * Y = act(X W^T + b) with X [rows x fan_in] and W [units x fan_in], both
 * row-major; backward gives dW += dZ^T X, db += column sums of dZ and
 * dX = dZ W, with dZ = dY * act'(Y) from the layer's output alone (ReLU:
 * Y > 0; tanh: 1 - Y^2), so only outputs are kept.
 */
#include "nn/nn_internal.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- activations ---------------------------------------------------------- */

static const char *const act_names[RLT_NN_ACT_COUNT] = {
    [RLT_NN_ACT_NONE] = "none",
    [RLT_NN_ACT_RELU] = "relu",
    [RLT_NN_ACT_TANH] = "tanh",
};

const char *rlt_nn_act_str(rlt_nn_act act)
{
    if ((int)act < 0 || act >= RLT_NN_ACT_COUNT) return "unknown";
    return act_names[act];
}

rlt_nn_act rlt_nn_act_from_str(const char *name)
{
    for (int i = 0; i < RLT_NN_ACT_COUNT; i++)
        if (name && strcmp(act_names[i], name) == 0) return (rlt_nn_act)i;
    return RLT_NN_ACT_COUNT;
}

static void act_forward(rlt_nn_act act, float *y, size_t n)
{
    switch (act) {
    case RLT_NN_ACT_NONE:
        break;
    case RLT_NN_ACT_RELU:
        for (size_t i = 0; i < n; i++) y[i] = y[i] > 0.0f ? y[i] : 0.0f;
        break;
    case RLT_NN_ACT_TANH:
        for (size_t i = 0; i < n; i++) y[i] = tanhf(y[i]);
        break;
    default:
        RLT_ASSERT(!"unknown activation");
    }
}

/* dz = dy * act'(z), from the activation's output y; dz may be dy. */
static void act_backward(rlt_nn_act act, const float *y, const float *dy, float *dz, size_t n)
{
    switch (act) {
    case RLT_NN_ACT_NONE:
        if (dz != dy) memcpy(dz, dy, n * sizeof *dz);
        break;
    case RLT_NN_ACT_RELU:
        for (size_t i = 0; i < n; i++) dz[i] = y[i] > 0.0f ? dy[i] : 0.0f;
        break;
    case RLT_NN_ACT_TANH:
        for (size_t i = 0; i < n; i++) dz[i] = dy[i] * (1.0f - y[i] * y[i]);
        break;
    default:
        RLT_ASSERT(!"unknown activation");
    }
}

/* ---- specs ---------------------------------------------------------------- */

rlt_status nn_spec_check(const rlt_mlp_spec *spec, rlt_diag *diag)
{
    if (!spec) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "nn: no network spec given");
    if (spec->n_inputs < 1 || spec->n_inputs > RLT_MLP_MAX_UNITS)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "nn: n_inputs %d is outside 1..%d", spec->n_inputs,
                        RLT_MLP_MAX_UNITS);
    if (spec->n_layers < 1 || spec->n_layers > RLT_MLP_MAX_LAYERS)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "nn: n_layers %d is outside 1..%d", spec->n_layers,
                        RLT_MLP_MAX_LAYERS);
    for (int l = 0; l < spec->n_layers; l++) {
        const rlt_mlp_layer *layer = &spec->layers[l];
        if (layer->n_units < 1 || layer->n_units > RLT_MLP_MAX_UNITS)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "nn: layer %d has n_units %d, outside 1..%d", l,
                            layer->n_units, RLT_MLP_MAX_UNITS);
        if ((int)layer->act < 0 || layer->act >= RLT_NN_ACT_COUNT)
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "nn: layer %d has activation %d (accepted: 0 none, 1 relu, 2 tanh)", l,
                            (int)layer->act);
    }
    return RLT_STATUS_OK;
}

size_t nn_spec_n_params(const rlt_mlp_spec *spec)
{
    size_t n = 0;
    size_t fan_in = (size_t)spec->n_inputs;
    for (int l = 0; l < spec->n_layers; l++) {
        size_t units = (size_t)spec->layers[l].n_units;
        n += units * fan_in + units;
        fan_in = units;
    }
    return n;
}

bool rlt_mlp_spec_equal(const rlt_mlp_spec *a, const rlt_mlp_spec *b)
{
    if (a->n_inputs != b->n_inputs || a->n_layers != b->n_layers) return false;
    for (int l = 0; l < a->n_layers && l < RLT_MLP_MAX_LAYERS; l++)
        if (a->layers[l].n_units != b->layers[l].n_units || a->layers[l].act != b->layers[l].act) return false;
    return true;
}

void nn_param_name(const rlt_mlp_spec *spec, size_t index, char *buf, size_t cap)
{
    size_t start = 0;
    size_t fan_in = (size_t)spec->n_inputs;
    for (int l = 0; l < spec->n_layers; l++) {
        size_t units = (size_t)spec->layers[l].n_units;
        size_t n_weights = units * fan_in;
        if (index < start + n_weights) {
            size_t k = index - start;
            snprintf(buf, cap, "layer %d weight [%zu][%zu]", l, k / fan_in, k % fan_in);
            return;
        }
        if (index < start + n_weights + units) {
            snprintf(buf, cap, "layer %d bias [%zu]", l, index - start - n_weights);
            return;
        }
        start += n_weights + units;
        fan_in = units;
    }
    snprintf(buf, cap, "parameter %zu", index);
}

/* ---- create / destroy ----------------------------------------------------- */

rlt_status nn_mlp_alloc(const rlt_mlp_spec *spec, rlt_mlp **out, rlt_diag *diag)
{
    RLT_ASSERT(out);
    *out = NULL;
    rlt_status st = nn_spec_check(spec, diag);
    if (st != RLT_STATUS_OK) return st;
    rlt_mlp *m = rlt_calloc(1, sizeof *m);
    if (!m) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "nn: out of memory creating a network");
    m->spec = *spec;
    memset(m->spec.layers + spec->n_layers, 0,
           (size_t)(RLT_MLP_MAX_LAYERS - spec->n_layers) * sizeof m->spec.layers[0]);
    size_t offset = 0;
    int fan_in = spec->n_inputs;
    m->max_width = spec->n_inputs;
    for (int l = 0; l < spec->n_layers; l++) {
        int units = spec->layers[l].n_units;
        m->fan_in[l] = fan_in;
        m->w_offset[l] = offset;
        m->b_offset[l] = offset + (size_t)units * (size_t)fan_in;
        offset = m->b_offset[l] + (size_t)units;
        m->max_width = RLT_MAX(m->max_width, units);
        fan_in = units;
    }
    m->n_params = offset;
    m->params = rlt_calloc(m->n_params, sizeof *m->params);
    m->grads = rlt_calloc(m->n_params, sizeof *m->grads);
    if (!m->params || !m->grads) {
        rlt_mlp_destroy(m);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "nn: out of memory for %zu parameters", offset);
    }
    *out = m;
    return RLT_STATUS_OK;
}

rlt_status rlt_mlp_create(const rlt_mlp_spec *spec, uint64_t seed, rlt_mlp **out, rlt_diag *diag)
{
    RLT_ASSERT(out);
    *out = NULL;
    rlt_mlp *m = NULL;
    rlt_status st = nn_mlp_alloc(spec, &m, diag);
    if (st != RLT_STATUS_OK) return st;
    rlt_rng rng;
    rlt_rng_seed(&rng, seed);
    for (int l = 0; l < m->spec.n_layers; l++) {
        double fan_in = m->fan_in[l];
        double fan_out = m->spec.layers[l].n_units;
        double limit = m->spec.layers[l].act == RLT_NN_ACT_RELU ? sqrt(6.0 / fan_in) : sqrt(6.0 / (fan_in + fan_out));
        float *w = m->params + m->w_offset[l];
        for (size_t i = 0, n = m->b_offset[l] - m->w_offset[l]; i < n; i++)
            w[i] = (float)((2.0 * rlt_rng_uniform(&rng) - 1.0) * limit);
        /* biases stay 0 (calloc) */
    }
    *out = m;
    return RLT_STATUS_OK;
}

void rlt_mlp_destroy(rlt_mlp *m)
{
    if (!m) return;
    rlt_free(m->cache);
    rlt_free(m->grads);
    rlt_free(m->params);
    rlt_free(m);
}

/* ---- accessors ------------------------------------------------------------ */

const rlt_mlp_spec *rlt_mlp_get_spec(const rlt_mlp *m) { return &m->spec; }
int rlt_mlp_n_inputs(const rlt_mlp *m) { return m->spec.n_inputs; }
int rlt_mlp_n_outputs(const rlt_mlp *m) { return m->spec.layers[m->spec.n_layers - 1].n_units; }
size_t rlt_mlp_n_params(const rlt_mlp *m) { return m->n_params; }
float *rlt_mlp_params(rlt_mlp *m) { return m->params; }
float *rlt_mlp_grads(rlt_mlp *m) { return m->grads; }

void rlt_mlp_layer_params(rlt_mlp *m, int layer, float **out_weights, float **out_biases)
{
    RLT_ASSERT(layer >= 0 && layer < m->spec.n_layers);
    if (out_weights) *out_weights = m->params + m->w_offset[layer];
    if (out_biases) *out_biases = m->params + m->b_offset[layer];
}

/* ---- forward -------------------------------------------------------------- */

/* One dense layer and its activation: y [n_rows x units] from
 * x [n_rows x fan_in]. y must not overlap x. */
static void layer_forward(const rlt_mlp *m, int l, int n_rows, const float *x, float *y)
{
    int units = m->spec.layers[l].n_units;
    int fan_in = m->fan_in[l];
    const float *w = m->params + m->w_offset[l];
    const float *b = m->params + m->b_offset[l];
    for (int r = 0; r < n_rows; r++) memcpy(y + (size_t)r * (size_t)units, b, (size_t)units * sizeof *y);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n_rows, units, fan_in, 1.0f, x, fan_in, w, fan_in, 1.0f,
                y, units);
    act_forward(m->spec.layers[l].act, y, (size_t)n_rows * (size_t)units);
}

static rlt_status check_rows(const char *what, int n_rows, const void *in, const void *out, rlt_diag *diag)
{
    if (n_rows < 1)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "nn: %s of %d rows (at least 1 is needed)", what, n_rows);
    if (!in || !out)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "nn: %s without its %s array", what,
                        !in ? "input" : "output");
    return RLT_STATUS_OK;
}

/* Makes room for a kept forward of n_rows rows. On failure the old cache
 * is kept (but no forward is). */
static rlt_status cache_reserve(rlt_mlp *m, int n_rows, rlt_diag *diag)
{
    if (n_rows <= m->n_rows_cap) return RLT_STATUS_OK;
    size_t rows = (size_t)n_rows;
    size_t n_floats = rows * (size_t)m->spec.n_inputs + 2 * rows * (size_t)m->max_width;
    for (int l = 0; l < m->spec.n_layers; l++) n_floats += rows * (size_t)m->spec.layers[l].n_units;
    float *cache = rlt_malloc(n_floats * sizeof *cache);
    if (!cache)
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "nn: out of memory keeping a forward pass of %d rows",
                        n_rows);
    rlt_free(m->cache);
    m->cache = cache;
    m->n_rows_cap = n_rows;
    float *p = cache;
    m->input = p;
    p += rows * (size_t)m->spec.n_inputs;
    for (int l = 0; l < m->spec.n_layers; l++) {
        m->outputs[l] = p;
        p += rows * (size_t)m->spec.layers[l].n_units;
    }
    m->scratch[0] = p;
    p += rows * (size_t)m->max_width;
    m->scratch[1] = p;
    return RLT_STATUS_OK;
}

rlt_status rlt_mlp_forward(rlt_mlp *m, int n_rows, const float *x, float *out_y, rlt_diag *diag)
{
    RLT_ASSERT(m);
    m->n_rows_kept = 0;
    rlt_status st = check_rows("forward", n_rows, x, out_y, diag);
    if (st != RLT_STATUS_OK) return st;
    st = cache_reserve(m, n_rows, diag);
    if (st != RLT_STATUS_OK) return st;
    memcpy(m->input, x, (size_t)n_rows * (size_t)m->spec.n_inputs * sizeof *x);
    const float *in = m->input;
    for (int l = 0; l < m->spec.n_layers; l++) {
        layer_forward(m, l, n_rows, in, m->outputs[l]);
        in = m->outputs[l];
    }
    memcpy(out_y, in, (size_t)n_rows * (size_t)rlt_mlp_n_outputs(m) * sizeof *out_y);
    m->n_rows_kept = n_rows;
    return RLT_STATUS_OK;
}

rlt_status rlt_mlp_predict(const rlt_mlp *m, int n_rows, const float *x, float *out_y, rlt_diag *diag)
{
    RLT_ASSERT(m);
    rlt_status st = check_rows("predict", n_rows, x, out_y, diag);
    if (st != RLT_STATUS_OK) return st;
    size_t rows = (size_t)n_rows;
    int last = m->spec.n_layers - 1;
    /* Ping-pong between two scratch matrices; the last layer writes out_y. */
    float *scratch = NULL;
    if (last > 0) {
        scratch = rlt_malloc(2 * rows * (size_t)m->max_width * sizeof *scratch);
        if (!scratch)
            return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "nn: out of memory predicting %d rows", n_rows);
    }
    const float *in = x;
    for (int l = 0; l <= last; l++) {
        float *y = l == last ? out_y : scratch + (size_t)(l % 2) * rows * (size_t)m->max_width;
        layer_forward(m, l, n_rows, in, y);
        in = y;
    }
    rlt_free(scratch);
    return RLT_STATUS_OK;
}

/* ---- backward ------------------------------------------------------------- */

rlt_status rlt_mlp_backward(rlt_mlp *m, int n_rows, const float *dout, float *out_dx, rlt_diag *diag)
{
    RLT_ASSERT(m);
    if (m->n_rows_kept == 0)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "nn: backward without a kept forward (call rlt_mlp_forward first)");
    if (n_rows != m->n_rows_kept)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "nn: backward of %d rows after a forward of %d rows",
                        n_rows, m->n_rows_kept);
    if (!dout) return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "nn: backward without dL/doutput");
    size_t rows = (size_t)n_rows;
    int last = m->spec.n_layers - 1;
    /* dz holds dL/d(pre-activation) of layer l; the layer below's dL/dy
     * goes into the other scratch matrix (or out_dx for the input). */
    float *dz = m->scratch[0];
    act_backward(m->spec.layers[last].act, m->outputs[last], dout, dz,
                 rows * (size_t)m->spec.layers[last].n_units);
    for (int l = last; l >= 0; l--) {
        int units = m->spec.layers[l].n_units;
        int fan_in = m->fan_in[l];
        const float *x = l > 0 ? m->outputs[l - 1] : m->input;
        float *dw = m->grads + m->w_offset[l];
        float *db = m->grads + m->b_offset[l];
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, units, fan_in, n_rows, 1.0f, dz, units, x, fan_in,
                    1.0f, dw, fan_in);
        for (size_t r = 0; r < rows; r++) {
            const float *dz_row = dz + r * (size_t)units;
            for (int j = 0; j < units; j++) db[j] += dz_row[j];
        }
        if (l == 0 && !out_dx) break;
        const float *w = m->params + m->w_offset[l];
        float *dx = l > 0 ? (dz == m->scratch[0] ? m->scratch[1] : m->scratch[0]) : out_dx;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n_rows, fan_in, units, 1.0f, dz, units, w, fan_in,
                    0.0f, dx, fan_in);
        if (l > 0) {
            act_backward(m->spec.layers[l - 1].act, m->outputs[l - 1], dx, dx, rows * (size_t)fan_in);
            dz = dx;
        }
    }
    return RLT_STATUS_OK;
}

/* ---- gradients ------------------------------------------------------------ */

void rlt_mlp_zero_grad(rlt_mlp *m) { memset(m->grads, 0, m->n_params * sizeof *m->grads); }

double rlt_mlp_grad_norm(const rlt_mlp *m)
{
    double sum = 0;
    for (size_t i = 0; i < m->n_params; i++) sum += (double)m->grads[i] * (double)m->grads[i];
    return sqrt(sum);
}

rlt_status rlt_mlp_grad_clip(rlt_mlp *m, double max_norm, double *out_norm, rlt_diag *diag)
{
    RLT_ASSERT(m);
    if (out_norm) *out_norm = 0;
    if (!(max_norm > 0) || !isfinite(max_norm))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "nn: max_norm %g for clipping must be positive and finite",
                        max_norm);
    for (size_t i = 0; i < m->n_params; i++)
        if (!isfinite(m->grads[i])) {
            char name[96];
            nn_param_name(&m->spec, i, name, sizeof name);
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "nn: the gradient of %s is %g: not clipped (the loss or its inputs diverged)", name,
                            (double)m->grads[i]);
        }
    double norm = rlt_mlp_grad_norm(m);
    if (out_norm) *out_norm = norm;
    if (norm > max_norm) {
        float scale = (float)(max_norm / norm);
        for (size_t i = 0; i < m->n_params; i++) m->grads[i] *= scale;
    }
    return RLT_STATUS_OK;
}

rlt_status rlt_mlp_copy_weights(rlt_mlp *dst, const rlt_mlp *src, rlt_diag *diag)
{
    RLT_ASSERT(dst && src);
    if (!rlt_mlp_spec_equal(&dst->spec, &src->spec))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "nn: cannot copy weights between networks of different shapes (%d inputs, %d layers, %zu "
                        "parameters vs %d inputs, %d layers, %zu parameters)",
                        src->spec.n_inputs, src->spec.n_layers, src->n_params, dst->spec.n_inputs,
                        dst->spec.n_layers, dst->n_params);
    if (dst != src) memcpy(dst->params, src->params, src->n_params * sizeof *dst->params);
    return RLT_STATUS_OK;
}
