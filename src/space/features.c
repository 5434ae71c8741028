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
 *   summary         features of the whole nest that do not depend on where
 *                   a loop sits (RLT_FEATURE_SUMMARY, after the loops): the
 *                   register tile (accumulators, unrolled body, vector
 *                   width, loads per multiply-add, whether a reduction runs
 *                   around it), each tensor's stride along the vector, the
 *                   bytes per iteration brought in at nominal L1 and L2
 *                   capacities, and the parallel loop's extent.
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
    return 2 * s->n_knobs + RLT_FEATURE_LOOP_PART + RLT_FEATURE_SUMMARY;
}

/* Nominal cache capacities of the summary's traffic features: fixed, not
 * read from the machine, so that a configuration's features (and a replay's
 * model) are the same wherever they are computed. */
#define NOMINAL_L1_BYTES (32.0 * 1024)
#define NOMINAL_L2_BYTES (1024.0 * 1024)

/* The summary's slots (docs/features.md, "Summary features"). */
enum {
    SUM_ACCUMULATORS,  /* the register tile's vector accumulators */
    SUM_BODY,          /* its iterations: the unrolled body */
    SUM_VECTOR,        /* the vector width */
    SUM_FMA_PER_LOAD,  /* its iterations per input element it loads */
    SUM_REDUCE_AROUND, /* a reduction loop runs just outside it */
    SUM_VECTOR_STRIDE, /* per tensor (RLT_FEATURE_TENSORS slots): the stride along the vector */
    SUM_L1_TRAFFIC = SUM_VECTOR_STRIDE + RLT_FEATURE_TENSORS, /* bytes per iteration into a 32 KiB set */
    SUM_L2_TRAFFIC,    /* ... into a 1 MiB set */
    SUM_PARALLEL,      /* the parallel loop's extent */
    SUM_COUNT
};
_Static_assert(SUM_COUNT == RLT_FEATURE_SUMMARY, "RLT_FEATURE_SUMMARY counts the summary's slots");

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

/* The summary (SUM_* slots) of nest n from the per-tensor strides and
 * footprints the loop features use (tensors[0..n_t-1] of op; stride and
 * touched by loop, iterations of each subnest). */
static void summary_features(const rlt_nest *n, const rlt_op *op, const int *tensors, int n_t,
                             const double stride[][RLT_MAX_LOOPS], const double touched[][RLT_MAX_LOOPS + 1],
                             const double *iterations, float *sum)
{
    memset(sum, 0, sizeof(float) * RLT_FEATURE_SUMMARY);
    /* the register tile: the innermost run of unrolled and vectorized loops */
    int tile = n->n_loops, vec_loop = -1;
    while (tile > 0 && (n->loops[tile - 1].kind == RLT_LOOP_UNROLL || n->loops[tile - 1].kind == RLT_LOOP_VECTORIZE)) {
        tile--;
        if (n->loops[tile].kind == RLT_LOOP_VECTORIZE) vec_loop = tile;
    }
    double spatial = 1, vec = vec_loop >= 0 ? (double)n->vars[n->loops[vec_loop].var].extent : 1;
    for (int m = tile; m < n->n_loops; m++)
        if (!n->vars[n->loops[m].var].is_reduce) spatial *= (double)n->vars[n->loops[m].var].extent;
    double in_elems = 0;
    for (int ti = 0; ti < n_t; ti++)
        if (!op->tensors[tensors[ti]].is_output) in_elems += touched[ti][tile] / 4.0;
    sum[SUM_ACCUMULATORS] = log2p1(spatial / vec);
    sum[SUM_BODY] = log2p1(iterations[tile]);
    sum[SUM_VECTOR] = log2p1(vec);
    sum[SUM_FMA_PER_LOAD] = in_elems > 0 ? log2p1(iterations[tile] / in_elems) : 0;
    sum[SUM_REDUCE_AROUND] = tile > 0 && n->vars[n->loops[tile - 1].var].is_reduce;
    for (int ti = 0; ti < n_t; ti++)
        sum[SUM_VECTOR_STRIDE + ti] = vec_loop >= 0 ? log2p1(stride[ti][vec_loop]) : 0;
    /* bytes per iteration brought in where the working set fits a level:
     * the outermost loop whose subnest touches at most the capacity */
    double bytes[RLT_MAX_LOOPS + 1];
    for (int l = 0; l <= n->n_loops; l++) {
        bytes[l] = 0;
        for (int ti = 0; ti < n_t; ti++) bytes[l] += touched[ti][l];
    }
    const double capacity[2] = {NOMINAL_L1_BYTES, NOMINAL_L2_BYTES};
    for (int level = 0; level < 2; level++) {
        int l = n->n_loops;
        while (l > 0 && bytes[l - 1] <= capacity[level]) l--;
        sum[SUM_L1_TRAFFIC + level] = log2p1(1024.0 * bytes[l] / iterations[l]);
    }
    for (int m = 0; m < n->n_loops; m++)
        if (n->loops[m].kind == RLT_LOOP_PARALLEL) sum[SUM_PARALLEL] = log2p1((double)n->vars[n->loops[m].var].extent);
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
    /* per tensor: the row-major strides of its dims; the flattened index's
     * step per loop (stride[ti][m]) and the bytes the loops from m inwards
     * touch (touched[ti][m]) */
    double stride[RLT_FEATURE_TENSORS][RLT_MAX_LOOPS], touched[RLT_FEATURE_TENSORS][RLT_MAX_LOOPS + 1];
    double iterations[RLT_MAX_LOOPS + 1];
    iterations[n.n_loops] = 1;
    for (int m = n.n_loops - 1; m >= 0; m--) iterations[m] = iterations[m + 1] * (double)n.vars[n.loops[m].var].extent;
    for (int ti = 0; ti < n_t; ti++) {
        int t = tensors[ti];
        const rlt_tensor *tensor = &op->tensors[t];
        int64_t strides[RLT_MAX_DIMS];
        int64_t st_ = 1;
        for (int d = tensor->n_dims - 1; d >= 0; d--) {
            strides[d] = st_;
            st_ *= tensor->dims[d];
        }
        /* the step of dim d per counter of loop m, summed over the axes
         * (a loop's variable belongs to one axis: splits only) */
        double step[RLT_MAX_DIMS][RLT_MAX_LOOPS];
        for (int d = 0; d < tensor->n_dims; d++)
            for (int m = 0; m < n.n_loops; m++) {
                double v = 0;
                for (int a = 0; a < op->n_axes; a++) {
                    int64_t ca = tensor->is_output ? (a == d ? 1 : 0) : (loads[t] ? loads[t]->index[d].coef[a] : 0);
                    v += (double)(ca * coef[a][n.loops[m].var]);
                }
                step[d][m] = v;
            }
        for (int m = 0; m < n.n_loops; m++) {
            stride[ti][m] = 0;
            for (int d = 0; d < tensor->n_dims; d++) stride[ti][m] += step[d][m] * (double)strides[d];
        }
        for (int l = 0; l <= n.n_loops; l++) {
            double elems = 1;
            for (int d = 0; d < tensor->n_dims; d++) {
                double span = 1;
                for (int m = l; m < n.n_loops; m++)
                    span += fabs(step[d][m]) * (double)(n.vars[n.loops[m].var].extent - 1);
                elems *= span < (double)tensor->dims[d] ? span : (double)tensor->dims[d];
            }
            touched[ti][l] = 4.0 * elems;
        }
    }
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
        for (int ti = 0; ti < n_t; ti++) {
            float *acc = row + RLT_FEATURE_PER_LOOP + ti * RLT_FEATURE_PER_ACCESS;
            acc[0] = log2p1(stride[ti][l]);
            acc[1] = log2p1(touched[ti][l]);
            acc[2] = log2p1(iterations[l] / (touched[ti][l] / 4.0));
            acc[3] = !op->tensors[tensors[ti]].is_output && rlt_layout_is_staged(&n.layouts[tensors[ti]]);
        }
    }
    f += RLT_FEATURE_LOOP_PART;

    summary_features(&n, op, tensors, n_t, stride, touched, iterations, out + f);
    return RLT_STATUS_OK;
}
