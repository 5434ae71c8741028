/*
 * adam.c - the Adam optimiser (nn.h), as PyTorch's torch.optim.Adam
 * (AdamW's decoupled weight decay when weight_decay > 0): per parameter
 * moments m and v, bias-corrected steps.
 *
 * Entry points: rlt_adam_create / _destroy, _step, _n_steps, _get_opts,
 * _set_lr. The state (options, step count, moments) is saved beside the
 * weights by weights_file.c, so that training resumes bit for bit.
 */
#include "nn/nn_internal.h"

#include <math.h>

rlt_status nn_adam_opts_resolve(const rlt_adam_opts *in, rlt_adam_opts *out, rlt_diag *diag)
{
    rlt_adam_opts o = {0};
    if (in) o = *in;
    if (o.lr == 0) o.lr = 1e-3;
    if (o.beta1 == 0) o.beta1 = 0.9;
    if (o.beta2 == 0) o.beta2 = 0.999;
    if (o.eps == 0) o.eps = 1e-8;
    if (!(o.lr > 0) || !isfinite(o.lr))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "adam: lr %g must be positive and finite", o.lr);
    if (!(o.beta1 > 0 && o.beta1 < 1))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "adam: beta1 %g is outside (0, 1)", o.beta1);
    if (!(o.beta2 > 0 && o.beta2 < 1))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "adam: beta2 %g is outside (0, 1)", o.beta2);
    if (!(o.eps > 0) || !isfinite(o.eps))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "adam: eps %g must be positive and finite", o.eps);
    if (!(o.weight_decay >= 0) || !isfinite(o.weight_decay))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "adam: weight_decay %g must be finite and >= 0",
                        o.weight_decay);
    *out = o;
    return RLT_STATUS_OK;
}

rlt_status nn_adam_alloc(const rlt_adam_opts *opts, size_t n_params, rlt_adam **out, rlt_diag *diag)
{
    RLT_ASSERT(out);
    *out = NULL;
    rlt_adam *a = rlt_calloc(1, sizeof *a);
    if (!a) return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "adam: out of memory");
    a->opts = *opts;
    a->n_params = n_params;
    a->m = rlt_calloc(n_params, sizeof *a->m);
    a->v = rlt_calloc(n_params, sizeof *a->v);
    if (!a->m || !a->v) {
        rlt_adam_destroy(a);
        return rlt_fail(diag, RLT_STATUS_OUT_OF_MEMORY, "adam: out of memory for the moments of %zu parameters",
                        n_params);
    }
    *out = a;
    return RLT_STATUS_OK;
}

rlt_status rlt_adam_create(const rlt_adam_opts *opts, const rlt_mlp *m, rlt_adam **out, rlt_diag *diag)
{
    RLT_ASSERT(m && out);
    *out = NULL;
    rlt_adam_opts o;
    rlt_status st = nn_adam_opts_resolve(opts, &o, diag);
    if (st != RLT_STATUS_OK) return st;
    return nn_adam_alloc(&o, m->n_params, out, diag);
}

void rlt_adam_destroy(rlt_adam *a)
{
    if (!a) return;
    rlt_free(a->v);
    rlt_free(a->m);
    rlt_free(a);
}

int64_t rlt_adam_n_steps(const rlt_adam *a) { return a->n_steps; }

const rlt_adam_opts *rlt_adam_get_opts(const rlt_adam *a) { return &a->opts; }

rlt_status rlt_adam_set_lr(rlt_adam *a, double lr, rlt_diag *diag)
{
    if (!(lr > 0) || !isfinite(lr))
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT, "adam: lr %g must be positive and finite", lr);
    a->opts.lr = lr;
    return RLT_STATUS_OK;
}

rlt_status rlt_adam_step(rlt_adam *a, rlt_mlp *m, rlt_diag *diag)
{
    RLT_ASSERT(a && m);
    if (m->n_params != a->n_params)
        return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                        "adam: the network has %zu parameters but the optimiser was made for %zu", m->n_params,
                        a->n_params);
    for (size_t i = 0; i < m->n_params; i++)
        if (!isfinite(m->grads[i])) {
            char name[96];
            nn_param_name(&m->spec, i, name, sizeof name);
            return rlt_fail(diag, RLT_STATUS_INVALID_ARGUMENT,
                            "adam: the gradient of %s is %g: step %lld not taken (the loss or its inputs diverged)",
                            name, (double)m->grads[i], (long long)a->n_steps + 1);
        }
    a->n_steps++;
    const rlt_adam_opts *o = &a->opts;
    double t = (double)a->n_steps;
    double step_size = o->lr / (1.0 - pow(o->beta1, t));
    double bc2_sqrt = sqrt(1.0 - pow(o->beta2, t));
    double decay = 1.0 - o->lr * o->weight_decay;
    for (size_t i = 0; i < m->n_params; i++) {
        double g = m->grads[i];
        double mi = o->beta1 * a->m[i] + (1.0 - o->beta1) * g;
        double vi = o->beta2 * a->v[i] + (1.0 - o->beta2) * g * g;
        a->m[i] = (float)mi;
        a->v[i] = (float)vi;
        double p = m->params[i];
        if (o->weight_decay > 0) p *= decay;
        p -= step_size * (double)a->m[i] / (sqrt((double)a->v[i]) / bc2_sqrt + o->eps);
        m->params[i] = (float)p;
    }
    return RLT_STATUS_OK;
}
