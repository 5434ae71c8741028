/*
 * features.c - fixed-length feature vectors of configurations, for the cost
 * model (docs/features.md). Two parts:
 *
 *   knob features   per knob: the choice's position (index / (n - 1)) and
 *                   log2(1 + |value|) of what it stands for;
 *   loop features   per loop of the nest, outer first, padded to
 *                   RLT_FEATURE_LOOPS: log2 extent, depth / n_loops, unrolled,
 *                   vectorized, parallel, reduction; and per tensor (inputs in
 *                   order, then the output; padded to RLT_FEATURE_TENSORS):
 *                   log2(1 + |stride|) of the loop's variable in the tensor's
 *                   flattened index, log2 of the bytes the loop and those
 *                   inside it touch, log2 of their reuse (iterations per
 *                   element touched), and whether the tensor is staged.
 *
 * Strides and footprints are those of the tensor as the op indexes it
 * (row-major), also for staged (packed or padded) inputs, whose copy is
 * marked by the last feature: AutoTVM's itervar features, approximated the
 * same way for layouts it cannot see.
 */
#include "space/space.h"

#include <math.h>
#include <string.h>

int rlt_space_n_features(const rlt_space *s)
{
    return 2 * s->n_knobs + RLT_FEATURE_LOOPS * (RLT_FEATURE_PER_LOOP + RLT_FEATURE_TENSORS * RLT_FEATURE_PER_ACCESS);
}

static float log2p1(double x) { return (float)log2(1.0 + fabs(x)); }

/* Coefficient of each loop variable in each axis: the value of an axis is
 * sum(coef * loop counter). Splits only (the spaces never fuse); a fused
 * variable contributes nothing. */
static void axis_coefs(const rlt_nest *n, int var, int64_t scale, int64_t coef[RLT_MAX_VARS])
{
    if (rlt_nest_loop_of_var(n, var) >= 0) {
        coef[var] += scale;
        return;
    }
    int outer, inner, fused;
    rlt_nest_var_children(n, var, &outer, &inner, &fused);
    if (outer < 0) return;
    axis_coefs(n, outer, scale * n->vars[outer].factor, coef);
    axis_coefs(n, inner, scale, coef);
}

rlt_status rlt_space_features(const rlt_space *s, const rlt_config *c, float *out, rlt_diag *diag)
{
    rlt_nest n;
    rlt_status st = rlt_space_nest(s, c, &n, NULL, diag);
    if (st != RLT_STATUS_OK) return st;
    const rlt_op *op = s->op;
    int f = 0;
    for (int k = 0; k < s->n_knobs; k++) {
        const rlt_knob *kn = &s->knobs[k];
        out[f++] = kn->n_choices > 1 ? (float)c->choice[k] / (float)(kn->n_choices - 1) : 0.0f;
        int64_t v = kn->values[c->choice[k]];
        bool is_size = kn->kind == RLT_KNOB_TILE || kn->kind == RLT_KNOB_MID || kn->kind == RLT_KNOB_RTILE;
        out[f++] = is_size ? log2p1((double)v) : log2p1((double)c->choice[k]);
    }
    /* coef[a][v]: coefficient of loop variable v in axis a */
    int64_t coef[RLT_MAX_AXES][RLT_MAX_VARS];
    memset(coef, 0, sizeof coef);
    for (int a = 0; a < op->n_axes; a++) axis_coefs(&n, a, 1, coef[a]);
    /* per tensor and dim: the flattened index's coefficient of each axis */
    int tensors[RLT_FEATURE_TENSORS];
    int n_t = 0;
    for (int t = 0; t < op->n_tensors && n_t < RLT_FEATURE_TENSORS; t++)
        if (!op->tensors[t].is_output && n_t < RLT_FEATURE_TENSORS - 1) tensors[n_t++] = t;
    tensors[n_t++] = op->n_tensors - 1;
    /* the first load of each tensor stands for its accesses */
    const rlt_expr *loads[RLT_MAX_TENSORS] = {NULL};
    const rlt_expr *all[128];
    int n_all = rlt_op_loads(op, all, 128);
    for (int i = n_all - 1; i >= 0; i--) loads[all[i]->tensor] = all[i];
    for (int l = 0; l < RLT_FEATURE_LOOPS; l++) {
        float *row = out + f + l * (RLT_FEATURE_PER_LOOP + RLT_FEATURE_TENSORS * RLT_FEATURE_PER_ACCESS);
        memset(row, 0, sizeof(float) * (RLT_FEATURE_PER_LOOP + RLT_FEATURE_TENSORS * RLT_FEATURE_PER_ACCESS));
        if (l >= n.n_loops) continue;
        const rlt_loop *loop = &n.loops[l];
        const rlt_var *v = &n.vars[loop->var];
        row[0] = log2p1((double)v->extent);
        row[1] = (float)(l + 1) / (float)n.n_loops;
        row[2] = loop->kind == RLT_LOOP_UNROLL;
        row[3] = loop->kind == RLT_LOOP_VECTORIZE;
        row[4] = loop->kind == RLT_LOOP_PARALLEL;
        row[5] = v->is_reduce;
        double iterations = 1;
        for (int m = l; m < n.n_loops; m++) iterations *= (double)n.vars[n.loops[m].var].extent;
        for (int ti = 0; ti < n_t; ti++) {
            int t = tensors[ti];
            const rlt_tensor *tensor = &op->tensors[t];
            float *acc = row + RLT_FEATURE_PER_LOOP + ti * RLT_FEATURE_PER_ACCESS;
            int64_t strides[RLT_MAX_DIMS];
            int64_t st_ = 1;
            for (int d = tensor->n_dims - 1; d >= 0; d--) {
                strides[d] = st_;
                st_ *= tensor->dims[d];
            }
            double stride = 0, touched = 1;
            for (int d = 0; d < tensor->n_dims; d++) {
                /* index of dim d as sum over axes; for the output, axis d */
                double span = 1, step = 0;
                for (int a = 0; a < op->n_axes; a++) {
                    int64_t ca = tensor->is_output ? (a == d ? 1 : 0) : (loads[t] ? loads[t]->index[d].coef[a] : 0);
                    if (!ca) continue;
                    step += (double)(ca * coef[a][loop->var]);
                    for (int m = l; m < n.n_loops; m++) {
                        int u = n.loops[m].var;
                        span += fabs((double)(ca * coef[a][u])) * (double)(n.vars[u].extent - 1);
                    }
                }
                stride += step * (double)strides[d];
                touched *= span < (double)tensor->dims[d] ? span : (double)tensor->dims[d];
            }
            acc[0] = log2p1(stride);
            acc[1] = log2p1(4.0 * touched);
            acc[2] = log2p1(iterations / touched);
            acc[3] = !tensor->is_output && rlt_layout_is_staged(&n.layouts[t]);
        }
    }
    return RLT_STATUS_OK;
}
