/*
 * observe.c - the environment's observation (docs/env.md, "Observation"):
 * a fixed-length float vector, layout version RLT_ENV_OBS_VERSION.
 *
 * Entry point: env_observe. Blocks, at the offsets include/rltune.h names:
 *   per loop (padded to RLT_ENV_MAX_LOOPS rows of RLT_ENV_LOOP_FEATURES):
 *     present, log2 extent, tail, depth, reduction, unrolled, vectorized,
 *     parallel, cursor, log2 of the points inside, and per access slot
 *     (inputs 0..2, the output) log2(1 + |stride|) of the loop;
 *   a 32-bucket histogram of power-of-two access strides, weighted by how
 *     often each loop steps;
 *   the last five actions one-hot, most recent first;
 *   GFLOP/s over the peak; the action mask.
 *
 * Strides are in elements of each tensor as the op indexes it (row-major),
 * from the coefficient of every loop variable in every axis (splits only:
 * an env's nest has no fused loops).
 */
#include "env/env.h"

#include <float.h>
#include <math.h>
#include <string.h>

enum {
    F_PRESENT,
    F_LOG2_EXTENT,
    F_TAIL,
    F_DEPTH,
    F_REDUCE,
    F_UNROLL,
    F_VECTORIZE,
    F_PARALLEL,
    F_CURSOR,
    F_LOG2_INNER,
    F_STRIDES, /* RLT_ENV_OBS_TENSORS of them */
};
_Static_assert(F_STRIDES + RLT_ENV_OBS_TENSORS == RLT_ENV_LOOP_FEATURES, "loop feature count");
_Static_assert(RLT_ENV_OBS_LEN == 359, "observation length of layout version 1");

#define MAX_ACCESSES 129 /* the loads of an op, and the output's store */

/* coef[v]: the coefficient of loop variable v in the value of variable
 * `var` (scaled by `scale`): a split's parent is outer * factor + inner. */
static void var_coefs(const rlt_nest *n, int var, double scale, double coef[RLT_MAX_VARS])
{
    if (rlt_nest_loop_of_var(n, var) >= 0) {
        coef[var] += scale;
        return;
    }
    int outer, inner, fused;
    rlt_nest_var_children(n, var, &outer, &inner, &fused);
    if (outer < 0) return; /* fused: the env never makes one */
    var_coefs(n, outer, scale * (double)n->vars[outer].factor, coef);
    var_coefs(n, inner, scale, coef);
}

/* Row-major strides of tensor t's dims, in elements. */
static void tensor_strides(const rlt_tensor *t, double strides[RLT_MAX_DIMS])
{
    double s = 1;
    for (int d = t->n_dims - 1; d >= 0; d--) {
        strides[d] = s;
        s *= (double)t->dims[d];
    }
}

/* The flattened index of an access as a coefficient per axis. */
static void access_axis_coefs(const rlt_op *op, const rlt_expr *load, double out[RLT_MAX_AXES])
{
    memset(out, 0, sizeof(double) * RLT_MAX_AXES);
    int t = load ? load->tensor : op->n_tensors - 1;
    double strides[RLT_MAX_DIMS];
    tensor_strides(&op->tensors[t], strides);
    if (!load) { /* the output, indexed by the spatial axes in order */
        for (int a = 0; a < op->n_spatial; a++) out[a] = strides[a];
        return;
    }
    for (int d = 0; d < op->tensors[t].n_dims; d++)
        for (int a = 0; a < op->n_axes; a++) out[a] += strides[d] * (double)load->index[d].coef[a];
}

/* Whether loop l's range overruns a variable (a split with a tail), as the
 * printed tree's "(tail: ...)" says. */
static bool loop_has_tail(const rlt_nest *n, int l)
{
    for (int p = 0; p < n->n_vars; p++) {
        if (!rlt_nest_var_has_tail(n, p)) continue;
        int v, inner, fused;
        rlt_nest_var_children(n, p, &v, &inner, &fused);
        while (v >= 0 && rlt_nest_loop_of_var(n, v) < 0) {
            int o;
            rlt_nest_var_children(n, v, &o, &inner, &fused);
            v = o >= 0 ? o : fused;
        }
        if (v == n->loops[l].var) return true;
    }
    return false;
}

void rlt_env_observation_bounds(float low[RLT_ENV_OBS_LEN], float high[RLT_ENV_OBS_LEN])
{
    for (int i = 0; i < RLT_ENV_OBS_LEN; i++) {
        low[i] = 0;
        high[i] = 1;
    }
    for (int l = 0; l < RLT_ENV_MAX_LOOPS; l++) {
        float *row = high + RLT_ENV_OBS_LOOPS + l * RLT_ENV_LOOP_FEATURES;
        row[F_LOG2_EXTENT] = 64;
        row[F_LOG2_INNER] = 64;
        for (int k = 0; k < RLT_ENV_OBS_TENSORS; k++) row[F_STRIDES + k] = 64;
    }
    for (int b = 0; b < RLT_ENV_STRIDE_BUCKETS; b++) high[RLT_ENV_OBS_STRIDES + b] = FLT_MAX;
    high[RLT_ENV_OBS_GFLOPS] = FLT_MAX;
}

void env_observe(const env_state *state, double peak_norm, float *out)
{
    RLT_ASSERT(peak_norm > 0);
    memset(out, 0, sizeof(float) * RLT_ENV_OBS_LEN);
    const rlt_nest *n = &state->nest;
    const rlt_op *op = n->op;
    int n_loops = RLT_MIN(n->n_loops, RLT_ENV_MAX_LOOPS);

    /* loop_coef[a][l]: coefficient of loop l's counter in axis a */
    double loop_coef[RLT_MAX_AXES][RLT_ENV_MAX_LOOPS];
    for (int a = 0; a < op->n_axes; a++) {
        double coef[RLT_MAX_VARS] = {0};
        var_coefs(n, a, 1.0, coef);
        for (int l = 0; l < n_loops; l++) loop_coef[a][l] = coef[n->loops[l].var];
    }
    /* every access: its tensor and the stride of each loop in it */
    const rlt_expr *loads[MAX_ACCESSES];
    int n_access = rlt_op_loads(op, loads, MAX_ACCESSES - 1);
    loads[n_access++] = NULL; /* the output */
    double stride[MAX_ACCESSES][RLT_ENV_MAX_LOOPS];
    int slot_access[RLT_ENV_OBS_TENSORS];
    for (int k = 0; k < RLT_ENV_OBS_TENSORS; k++) slot_access[k] = -1;
    for (int i = 0; i < n_access; i++) {
        double axis_coef[RLT_MAX_AXES];
        access_axis_coefs(op, loads[i], axis_coef);
        for (int l = 0; l < n_loops; l++) {
            double s = 0;
            for (int a = 0; a < op->n_axes; a++) s += axis_coef[a] * loop_coef[a][l];
            stride[i][l] = fabs(s);
        }
        /* slots 0..2: the first load of inputs 0..2; slot 3: the output */
        int last = RLT_ENV_OBS_TENSORS - 1;
        int slot = !loads[i] ? last : loads[i]->tensor < last ? loads[i]->tensor : -1;
        if (slot >= 0 && slot_access[slot] < 0) slot_access[slot] = i;
    }

    /* per loop */
    double inner_log2 = 0; /* log2 of the points inside loop l, built from the inside out */
    for (int l = n_loops - 1; l >= 0; l--) {
        float *row = out + RLT_ENV_OBS_LOOPS + l * RLT_ENV_LOOP_FEATURES;
        const rlt_loop *loop = &n->loops[l];
        const rlt_var *v = &n->vars[loop->var];
        row[F_PRESENT] = 1;
        row[F_LOG2_EXTENT] = (float)log2((double)v->extent);
        row[F_TAIL] = loop_has_tail(n, l);
        row[F_DEPTH] = (float)l / RLT_ENV_MAX_LOOPS;
        row[F_REDUCE] = v->is_reduce;
        row[F_UNROLL] = loop->kind == RLT_LOOP_UNROLL;
        row[F_VECTORIZE] = loop->kind == RLT_LOOP_VECTORIZE;
        row[F_PARALLEL] = loop->kind == RLT_LOOP_PARALLEL;
        row[F_CURSOR] = l == state->cursor;
        row[F_LOG2_INNER] = (float)inner_log2;
        for (int k = 0; k < RLT_ENV_OBS_TENSORS; k++)
            if (slot_access[k] >= 0) row[F_STRIDES + k] = (float)log2(1.0 + stride[slot_access[k]][l]);
        /* histogram: loop l steps once per run of the loops inside it,
         * i.e. at a fraction 2^-inner_log2 of the innermost iterations */
        double weight = exp2(-inner_log2);
        for (int i = 0; i < n_access; i++) {
            double s = stride[i][l];
            if (s < 1) continue;
            int b = (int)ceil(log2(s) - 1e-9);
            b = RLT_MAX(0, RLT_MIN(b, RLT_ENV_STRIDE_BUCKETS - 1));
            out[RLT_ENV_OBS_STRIDES + b] += (float)weight;
        }
        inner_log2 += log2((double)v->extent);
    }

    for (int k = 0; k < RLT_ENV_HISTORY; k++)
        if (state->history[k] >= 0) out[RLT_ENV_OBS_HISTORY + k * RLT_ENV_N_ACTIONS + state->history[k]] = 1;
    out[RLT_ENV_OBS_GFLOPS] = (float)(state->gflops / peak_norm);
    for (int a = 0; a < RLT_ENV_N_ACTIONS; a++) out[RLT_ENV_OBS_MASK + a] = state->mask[a];
}
