/*
 * pools.c - the networks' pools on rltune's fast ops, two ways in one run:
 * a row's interior outputs apart from its edges (every fop_pool before
 * the padded rows; still the way when a window may miss the input), and
 * every output of the row from one stack row holding its pads
 * (fop_pool.padded_row). Compiles src/net/ops_run.c into itself, as an
 * exported network does, so that one binary runs both on the same data.
 *
 *     build/bench_pools [--samples N]
 *
 * Per pool and ISA build (the plans choose AVX2 for pools but the 3-wide,
 * stride-2 MaxPools, which take AVX-512 and its intrinsic way by padded
 * rows, pool_row_3s2_avx512): the median ms per call of each way, their
 * ratio, and whether the outputs are bit-identical (they must be: the
 * inputs are whole numbers, so AveragePool's sums are exact in either
 * order). One thread, pinned by the caller (taskset -c 1).
 */
#include "../src/net/ops_run.c"

#include "timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pool_shape {
    const char *name;
    int64_t c, h, w, k, s, pad;
    bool is_ceil, is_max;
} pool_shape;

static const pool_shape k_shapes[] = {
    {"ResNet MaxPool 3x3/2 pad 1, 64x112x112", 64, 112, 112, 3, 2, 1, false, true},
    {"SqueezeNet MaxPool 3x3/2 ceil, 64x111x111", 64, 111, 111, 3, 2, 0, true, true},
    {"SqueezeNet MaxPool 3x3/2 ceil, 128x55x55", 128, 55, 55, 3, 2, 0, true, true},
    {"SqueezeNet MaxPool 3x3/2 ceil, 256x27x27", 256, 27, 27, 3, 2, 0, true, true},
    {"AveragePool 3x3/1 pad 1, 192x28x28 (Inception)", 192, 28, 28, 3, 1, 1, false, false},
};

/* Output length of one dimension, ONNX's rule (a ceil_mode window must
 * start inside the input or its leading pad). */
static int64_t out_len(int64_t in, int64_t k, int64_t s, int64_t pad, bool is_ceil)
{
    int64_t span = in + 2 * pad - k;
    int64_t n = (is_ceil ? (span + s - 1) / s : span / s) + 1;
    if (is_ceil && (n - 1) * s >= in + pad) n--;
    return n;
}

typedef struct run_ctx {
    rlt_fast_op *op;
    void *vals[2];
    int isa;
} run_ctx;

static bool run_once(void *p)
{
    run_ctx *c = p;
    rlt_fast_op_run_range(c->op, c->vals, c->isa, 0, rlt_fast_op_units(c->op));
    return true;
}

/* The plan ops.c makes for the shape, both ways allowed (padded_row is
 * set by the caller). AveragePool's divisors: the taps inside, pads not
 * counted. */
static rlt_fast_op *plan(const pool_shape *ps)
{
    int64_t oh = out_len(ps->h, ps->k, ps->s, ps->pad, ps->is_ceil), ow = out_len(ps->w, ps->k, ps->s, ps->pad, ps->is_ceil);
    size_t extra = ps->is_max ? 0 : (size_t)(oh + ow) * sizeof(float);
    rlt_fast_op *op = calloc(1, sizeof *op + extra + 64);
    if (!op) return NULL;
    op->kind = FOP_POOL;
    op->x = 0;
    op->y = 1;
    op->isa_max = FOP_ISA_AVX512F;
    fop_pool *p = &op->u.pool;
    *p = (fop_pool){.is_max = ps->is_max, .planes = ps->c, .ih = ps->h, .iw = ps->w, .oh = oh, .ow = ow,
                    .kh = ps->k, .kw = ps->k, .sh = ps->s, .sw = ps->s, .dh = 1, .dw = 1, .ph = ps->pad, .pw = ps->pad,
                    .div_h = -1, .div_w = -1};
    p->ow_lo = FOP_MIN((p->pw + p->sw - 1) / p->sw, p->ow);
    int64_t last = p->iw - 1 - (p->kw - 1) * p->dw + p->pw;
    p->ow_hi = last < 0 ? 0 : FOP_MIN(last / p->sw + 1, p->ow);
    if (p->ow_hi < p->ow_lo) p->ow_hi = p->ow_lo;
    p->chunk = (RLT_FAST_OP_POOL_TMP - p->kw) / p->sw + 1;
    if (!ps->is_max) {
        float *div = (float *)(void *)op->extra;
        p->div_h = 0;
        p->div_w = (int64_t)(oh * sizeof(float));
        for (int dim = 0; dim < 2; dim++)
            for (int64_t o = 0; o < (dim ? ow : oh); o++) {
                int64_t start = o * ps->s - ps->pad, n = 0, in = dim ? ps->w : ps->h;
                for (int64_t t = 0; t < ps->k; t++) n += start + t >= 0 && start + t < in;
                div[(dim ? oh : 0) + o] = (float)n;
            }
    }
    return op;
}

int main(int argc, char **argv)
{
    int n_samples = 15;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--samples") == 0 && i + 1 < argc) n_samples = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_pools [--samples N]\n");
            return 2;
        }
    }
    if (n_samples < 1 || n_samples > BENCH_MAX_SAMPLES) {
        fprintf(stderr, "bench_pools: --samples must be 1..%d\n", BENCH_MAX_SAMPLES);
        return 2;
    }
    int cpu_isa = rlt_fast_op_cpu_isa();
    printf("| pool | build | edges apart (ms) | padded rows (ms) | padded / apart | same bits |\n");
    printf("|---|---|---|---|---|---|\n");
    int rc = 0;
    for (size_t i = 0; i < sizeof k_shapes / sizeof k_shapes[0]; i++) {
        const pool_shape *ps = &k_shapes[i];
        rlt_fast_op *op = plan(ps);
        const fop_pool *p = op ? &op->u.pool : NULL;
        float *x = op ? malloc((size_t)(ps->c * ps->h * ps->w) * sizeof *x) : NULL;
        float *y[2] = {x ? malloc((size_t)(p->planes * p->oh * p->ow) * sizeof(float)) : NULL,
                       x ? malloc((size_t)(p->planes * p->oh * p->ow) * sizeof(float)) : NULL};
        if (!op || !x || !y[0] || !y[1]) {
            fprintf(stderr, "bench_pools: out of memory\n");
            return 3;
        }
        uint64_t state = 0x9e3779b97f4a7c15ull + i;
        for (int64_t e = 0; e < ps->c * ps->h * ps->w; e++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            x[e] = (float)((int)(state >> 40) % 2001 - 1000); /* whole numbers: every sum exact */
        }
        for (int isa = FOP_ISA_AVX2; isa <= FOP_MIN(cpu_isa, FOP_ISA_AVX512F); isa++) {
            double ms[2];
            for (int way = 0; way < 2; way++) {
                op->u.pool.padded_row = way;
                run_ctx c = {op, {x, y[way]}, isa};
                ms[way] = bench_time_calls(run_once, &c, n_samples, 0.02) * 1e3;
            }
            bool same = memcmp(y[0], y[1], (size_t)(p->planes * p->oh * p->ow) * sizeof(float)) == 0;
            rc |= !same;
            printf("| %s | %s | %.4f | %.4f | %.2f | %s |\n", ps->name, isa == FOP_ISA_AVX2 ? "AVX2" : "AVX-512",
                   ms[0], ms[1], ms[1] / ms[0], same ? "yes" : "NO");
        }
        free(y[0]);
        free(y[1]);
        free(x);
        free(op);
    }
    return rc;
}
