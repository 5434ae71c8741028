/*
 * ops.c - the fast implementations of a compiled network's other nodes
 * (ops.h): rlt_fast_op_create plans a node once (reads its attributes,
 * checks its shapes and types, collapses its index spaces), and
 * rlt_fast_op_run runs the plan with contiguous loops.
 *
 * The plans, one per kind of op:
 * - unary: n elements in, n out (the activations; Pow by a constant scalar);
 * - broadcast: elementwise binary ops, whose shapes collapse (dimensions of
 *   size 1 dropped, neighbours that walk both operands alike merged) to an
 *   odometer over outer dimensions and an inner loop in which each operand
 *   is either contiguous or one value;
 * - pool: MaxPool / AveragePool in 1-D or 2-D, output row by output row:
 *   the outputs whose windows lie inside the input's columns reduce the
 *   kernel rows into a row on the stack, then across the window, with no
 *   bounds checks; the edges run the evaluator's checked loop;
 * - rows: Softmax, LayerNormalization, ReduceMean and GlobalAveragePool,
 *   which reduce over a contiguous block (Softmax also over a strided axis);
 * - copy: Transpose and Slice as one strided copy, collapsed like the
 *   broadcast, whose inner loop is a memcpy (runs), a tiled transpose (the
 *   input's contiguous dimension is not the output's) or a gather;
 * - parts: Concat and Split, memcpy of chunks;
 * - bytes: the reshapes, Identity, Dropout, Cast to the same type.
 *
 * Everything an op needs lives in one allocation (the struct and its
 * tables), so create has one point of failure and destroy one free.
 *
 * The library is built for the baseline ISA (SSE2 on x86-64). The loops
 * that compute (unary, binary, pools, the row reductions) are written once
 * as inline bodies and compiled three times on x86: as they are, and
 * inside functions with target("avx2") and target("avx512f"), of which
 * create picks the best the CPU has (8 or 16 lanes instead of 4: 2-4x on
 * the maths). No FMA and no reassociation in any (C11 mode does not
 * contract; the reductions' partial sums are spelled out), so all give the
 * same bits. The data movement is memory-bound and compiled once.
 */
#include "net/ops.h"

#include <float.h>
#include <math.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
/* gcc -O2 (12 and later) vectorises only loops whose trip count is a known
 * multiple of the vector width (its "very cheap" cost model); these loops
 * run over lengths known at run time, so ask for its dynamic model (what
 * -O3 uses), which adds a scalar tail. Without trapping maths gcc also
 * if-converts the selects (max, clamps, the branches of the maths below).
 * No fast-math: sums keep their order, so the partial sums below are
 * written out by hand. */
#pragma GCC optimize("vect-cost-model=dynamic", "no-trapping-math")
#define FOP_INLINE static inline __attribute__((always_inline))
#else
#define FOP_INLINE static inline
#endif

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define FOP_HAS_X86 1
#endif

#define MAX_RANK RLT_GRAPH_MAX_RANK

/* GNU C vector types (not intrinsics: the compiler maps them to the ISA at
 * hand, two SSE registers or one AVX register) for the reductions, whose
 * partial sums must stay in registers across iterations. */
typedef float v8f __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
typedef double v4d __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

/* ---- vectorisable maths ------------------------------------------------------- */

/* e^x for x <= 0 or NaN (Cephes' expf: x = n ln2 + r, |r| <= ln2 / 2, a
 * degree-6 polynomial in r, 2^n built in the exponent bits): within 1 ulp
 * of e^x (every float of [-87, 0] checked); 0 below -87 (where e^x leaves
 * the normal floats), NaN for NaN.
 * The callers pass x - max and -|x|; x > 0 would give garbage. Written
 * without calls or branches so that a loop over it vectorises. */
FOP_INLINE float exp_neg(float x)
{
    float xc = x < -87.0f ? -87.0f : x;
    /* t = 1.5 * 2^23 + n, n = x / ln2 rounded to nearest: n is in t's low
     * mantissa bits, read without a float-to-int conversion. */
    float t = xc * 1.44269504088896341f + 12582912.0f;
    float n = t - 12582912.0f;
    float r = xc - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    uint32_t tb;
    memcpy(&tb, &t, sizeof tb);
    uint32_t bits = (tb - 0x4B400000u + 127u) << 23; /* 2^n, n in [-126, 0] */
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    float y = p * scale;
    return x < -87.0f ? 0.0f : y;
}

/* 1 / (1 + e^-x), from e = e^-|x| so that neither side loses digits:
 * 1 / (1 + e) for x >= 0, e / (1 + e) below. Within 3 ulp. */
FOP_INLINE float sigmoid_f(float x)
{
    float e = exp_neg(-fabsf(x));
    float s = 1.0f / (1.0f + e);
    return x >= 0.0f ? s : e * s;
}

/* tanh as a rational function of x (odd degree 13 over even degree 6,
 * Eigen's fast tanh), x clamped where tanh is 1 in f32, x itself below
 * 4e-4: within 4 ulp of tanh. */
FOP_INLINE float tanh_f(float x0)
{
    float x = x0 > 7.99881172180175781f ? 7.99881172180175781f : x0;
    x = x < -7.99881172180175781f ? -7.99881172180175781f : x;
    float z = x * x;
    float p = -2.76076847742355e-16f;
    p = p * z + 2.00018790482477e-13f;
    p = p * z + -8.60467152213735e-11f;
    p = p * z + 5.12229709037114e-08f;
    p = p * z + 1.48572235717979e-05f;
    p = p * z + 6.37261928875436e-04f;
    p = p * z + 4.89352455891786e-03f;
    float q = 1.19825839466702e-06f;
    q = q * z + 1.18534705686654e-04f;
    q = q * z + 2.26843463243900e-03f;
    q = q * z + 4.89352518554385e-03f;
    float r = x * p / q;
    return fabsf(x0) < 0.0004f ? x0 : r;
}

/* erf as a rational function of x (odd degree 13 over even degree 8,
 * Eigen's fast erf), x clamped to [-4, 4] (erf is +-1 in f32 beyond):
 * within 4 ulp of erf. */
FOP_INLINE float erf_f(float x0)
{
    float x = x0 > 4.0f ? 4.0f : x0;
    x = x < -4.0f ? -4.0f : x;
    float z = x * x;
    float p = -2.72614225801306e-10f;
    p = p * z + 2.77068142495902e-08f;
    p = p * z + -2.10102402082508e-06f;
    p = p * z + -5.69250639462346e-05f;
    p = p * z + -7.34990630326855e-04f;
    p = p * z + -2.95459980854025e-03f;
    p = p * z + -1.60960333262415e-02f;
    float q = -1.45660718464996e-05f;
    q = q * z + -2.13374055278905e-04f;
    q = q * z + -1.68282697438203e-03f;
    q = q * z + -7.37332916720468e-03f;
    q = q * z + -1.42647390514189e-02f;
    return x * p / q;
}

/* ---- reductions: partial sums in vector registers ------------------------------ */

/* Four floats from x + i, in double. */
#define LOAD4D(v, p)                                                                                         \
    do {                                                                                                     \
        v4f f_;                                                                                              \
        memcpy(&f_, (p), sizeof f_);                                                                         \
        (v) = __builtin_convertvector(f_, v4d);                                                              \
    } while (0)

/* Sum in double (the evaluator's precision), sixteen partial sums (named,
 * not an array, so that they stay in registers). */
FOP_INLINE double sum_f64(const float *restrict x, int64_t n)
{
    v4d a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, u0, u1, u2, u3;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        LOAD4D(u0, x + i);
        LOAD4D(u1, x + i + 4);
        LOAD4D(u2, x + i + 8);
        LOAD4D(u3, x + i + 12);
        a0 += u0;
        a1 += u1;
        a2 += u2;
        a3 += u3;
    }
    v4d a = (a0 + a1) + (a2 + a3);
    double s = (a[0] + a[1]) + (a[2] + a[3]);
    for (; i < n; i++) s += (double)x[i];
    return s;
}

/* Sum of (x - mean)^2 in double. */
FOP_INLINE double sum_sq_dev_f64(const float *restrict x, int64_t n, double mean)
{
    v4d a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, u0, u1, u2, u3, m = {mean, mean, mean, mean};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        LOAD4D(u0, x + i);
        LOAD4D(u1, x + i + 4);
        LOAD4D(u2, x + i + 8);
        LOAD4D(u3, x + i + 12);
        u0 -= m;
        u1 -= m;
        u2 -= m;
        u3 -= m;
        a0 += u0 * u0;
        a1 += u1 * u1;
        a2 += u2 * u2;
        a3 += u3 * u3;
    }
    v4d a = (a0 + a1) + (a2 + a3);
    double s = (a[0] + a[1]) + (a[2] + a[3]);
    for (; i < n; i++) {
        double d = (double)x[i] - mean;
        s += d * d;
    }
    return s;
}

/* Sum in float, sixteen partial sums (Softmax's exponentials, all in
 * (0, 1]). */
FOP_INLINE float sum_f32(const float *restrict x, int64_t n)
{
    v8f a0 = {0}, a1 = {0};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        v8f u, v;
        memcpy(&u, x + i, sizeof u);
        memcpy(&v, x + i + 8, sizeof v);
        a0 += u;
        a1 += v;
    }
    v8f a = a0 + a1;
    float s = ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
    for (; i < n; i++) s += x[i];
    return s;
}

/* `v > m ? v : m` lane by lane. */
#define VMAX(v, m) ((v8f)((((v) > (m)) & (v8i)(v)) | (~((v) > (m)) & (v8i)(m))))

/* The largest of n >= 1 floats, `v > m ? v : m` as the evaluator does
 * (a NaN is kept only when it comes first in its lane). */
FOP_INLINE float max_f32(const float *restrict x, int64_t n)
{
    int64_t i = 1;
    float m = x[0];
    if (n >= 16) {
        v8f m0, m1;
        memcpy(&m0, x, sizeof m0);
        memcpy(&m1, x + 8, sizeof m1);
        for (i = 16; i + 16 <= n; i += 16) {
            v8f u, v;
            memcpy(&u, x + i, sizeof u);
            memcpy(&v, x + i + 8, sizeof v);
            m0 = VMAX(u, m0);
            m1 = VMAX(v, m1);
        }
        m0 = VMAX(m1, m0);
        m = m0[0];
        for (int k = 1; k < 8; k++) m = m0[k] > m ? m0[k] : m;
    }
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

/* ---- plans ------------------------------------------------------------------------ */

typedef enum fop_kind {
    FOP_BYTES = 0, /* copy n bytes (a view run as a copy); Dropout's mask set */
    FOP_UNARY,
    FOP_BINARY,
    FOP_POOL,
    FOP_GLOBAL_POOL,
    FOP_SOFTMAX,
    FOP_LAYERNORM,
    FOP_REDUCE_MEAN,
    FOP_COPY,   /* Transpose, Slice */
    FOP_CONCAT,
    FOP_SPLIT,
} fop_kind;

typedef enum unary_fn {
    UN_RELU = 0,
    UN_CLIP,
    UN_LEAKY_RELU,
    UN_SIGMOID,
    UN_TANH,
    UN_ERF,
    UN_SQRT,
    UN_GELU,
    UN_GELU_TANH,
    UN_SQUARE, /* Pow by 2 */
    UN_CUBE,   /* Pow by 3 */
    UN_POW,    /* Pow by another constant */
} unary_fn;

typedef enum binary_fn { BIN_ADD = 0, BIN_SUB, BIN_MUL, BIN_DIV, BIN_POW } binary_fn;

/* An odometer over `rank` outer dimensions with an input and an output
 * offset per step (element strides; the input's may be negative). */
typedef struct odo {
    int rank;
    int64_t dims[MAX_RANK], xs[MAX_RANK], ys[MAX_RANK];
    int64_t count; /* product of dims */
} odo;

typedef struct bcast_plan {
    int rank;                     /* collapsed, >= 1 */
    int64_t dims[MAX_RANK];       /* the output's, collapsed; contiguous in y */
    int64_t sa[MAX_RANK], sb[MAX_RANK]; /* operand element strides, 0 where broadcast */
    int64_t total;                /* output elements */
} bcast_plan;

enum { POOL_TMP = 1024 }; /* floats of a pool's stack row */

typedef struct pool_plan {
    bool is_max;
    int64_t planes;               /* N * C */
    int64_t ih, iw, oh, ow;       /* 1-D pools have ih = oh = 1 */
    int64_t kh, kw, sh, sw, dh, dw, ph, pw; /* pads at the beginning */
    int64_t ow_lo, ow_hi;         /* outputs [ow_lo, ow_hi) read no column outside the input */
    int64_t chunk;                /* interior outputs per pass through the stack row (0: too wide) */
    /* AveragePool: divisors per output row and column (extra[]); the
     * window's divisor is their product, 0 giving 0. */
    const float *div_h, *div_w;
} pool_plan;

typedef struct rows_plan {
    int64_t outer, len, inner;    /* [outer, len, inner]: reduce over len */
    double eps;                   /* LayerNormalization */
    int scale, bias;              /* LayerNormalization: tensors of len values, or -1 */
    const float *scale_c, *bias_c; /* ... or constants expanded into extra[] (NULL: use the tensor) */
} rows_plan;

typedef enum copy_mode {
    COPY_RUNS = 0, /* the inner dimension is contiguous in the input: memcpy */
    COPY_TILE,     /* another output dimension is: tiled transpose */
    COPY_GATHER,   /* none: strided element copy */
} copy_mode;

typedef struct copy_plan {
    copy_mode mode;
    size_t es;                    /* bytes per element: 1, 4 or 8 */
    int64_t base;                 /* input element offset of the first output element */
    int64_t n_inner, inner_xs;    /* inner dimension: length, input stride */
    int64_t n_tile, tile_ys;      /* COPY_TILE: the dimension contiguous in the input: length, output stride */
    odo outer;                    /* the other dimensions */
} copy_plan;

typedef struct part {
    int tensor;
    int64_t chunk_bytes;          /* bytes per outer index */
} part;

typedef struct parts_plan {
    int64_t outer;
    int n_parts;
    const part *parts;            /* extra[] */
} parts_plan;

/* The builds of the compute loops, in order of preference. */
typedef enum fop_isa { ISA_BASELINE = 0, ISA_AVX2, ISA_AVX512F, ISA_COUNT } fop_isa;

static const char *const isa_names[ISA_COUNT] = {"baseline", "avx2", "avx512f"};

struct rlt_fast_op {
    fop_kind kind;
    fop_isa isa;        /* the build of the loops it runs */
    int fn;             /* unary_fn or binary_fn */
    int x, x2, y, y2;   /* tensors: input 0, input 1 (or -1), output 0, a second output (or -1) */
    int64_t n;          /* FOP_BYTES: bytes of output 0; FOP_UNARY: elements */
    int64_t n2;         /* FOP_BYTES: elements of output 1 (Dropout's mask, its dtype in fn) */
    float p0, p1;       /* Clip's bounds, LeakyRelu's alpha, Pow's exponent */
    union {
        bcast_plan bcast;
        pool_plan pool;
        rows_plan rows;
        copy_plan copy;
        parts_plan parts;
    } u;
    union {
        double d;
        int64_t i;
    } extra[]; /* the tables the plan points into */
};

/* ---- graph access ---------------------------------------------------------------- */

static const rlt_graph_tensor *tin(const rlt_graph *g, const rlt_graph_node *n, int i)
{
    if (i >= n->n_inputs || n->inputs[i] < 0) return NULL;
    return &g->tensors[n->inputs[i]];
}

static const rlt_graph_tensor *tout(const rlt_graph *g, const rlt_graph_node *n, int i)
{
    if (i >= n->n_outputs || n->outputs[i] < 0) return NULL;
    return &g->tensors[n->outputs[i]];
}

static bool is_f32(const rlt_graph_tensor *t) { return t && t->dtype == RLT_DTYPE_FLOAT32; }

static int64_t n_elems(const rlt_graph_tensor *t) { return rlt_graph_tensor_n_elems(t); }

static bool axis_norm(int64_t axis, int rank, int *out)
{
    if (axis < -(int64_t)rank || axis >= rank) return false;
    *out = (int)(axis < 0 ? axis + rank : axis);
    return true;
}

static void strides_of(int rank, const int64_t *dims, int64_t *strides)
{
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= dims[i];
    }
}

/* Value i of a constant integer tensor. */
static int64_t const_int(const rlt_graph_tensor *t, int64_t i)
{
    return t->dtype == RLT_DTYPE_INT64 ? ((const int64_t *)t->data)[i] : ((const int32_t *)t->data)[i];
}

static bool is_const_ints(const rlt_graph_tensor *t)
{
    return t && t->data && (t->dtype == RLT_DTYPE_INT64 || t->dtype == RLT_DTYPE_INT32) && n_elems(t) <= MAX_RANK;
}

/* Every input and output present has a shape; no output is a constant
 * (folded) or missing its first. */
static bool io_ok(const rlt_graph *g, const rlt_graph_node *n)
{
    if (n->n_inputs < 1 || n->n_outputs < 1 || n->outputs[0] < 0 || n->inputs[0] < 0) return false;
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] >= 0 && !g->tensors[n->inputs[i]].has_shape) return false;
    for (int i = 0; i < n->n_outputs; i++) {
        const rlt_graph_tensor *t = tout(g, n, i);
        if (t && (!t->has_shape || t->data)) return false;
    }
    return true;
}

/* ---- building: one allocation per op ------------------------------------------------ */

static fop_isa isa_limit = ISA_COUNT - 1;

void rlt_fast_op_limit_isa(const char *isa)
{
    isa_limit = ISA_COUNT - 1;
    for (int i = 0; isa && i < ISA_COUNT; i++)
        if (strcmp(isa, isa_names[i]) == 0) isa_limit = (fop_isa)i;
}

const char *rlt_fast_op_isa(const rlt_fast_op *op) { return isa_names[op->isa]; }

/* The best build this CPU runs, within the test hook's limit. */
static fop_isa isa_pick(void)
{
    fop_isa isa = ISA_BASELINE;
#ifdef FOP_HAS_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) isa = ISA_AVX512F;
    else if (__builtin_cpu_supports("avx2")) isa = ISA_AVX2;
#endif
    return RLT_MIN(isa, isa_limit);
}

static rlt_fast_op *op_new(fop_kind kind, const rlt_graph_node *n, size_t extra_bytes)
{
    rlt_fast_op *op = rlt_calloc(1, sizeof *op + extra_bytes);
    if (!op) return NULL;
    op->kind = kind;
    op->isa = isa_pick();
    op->x = n->inputs[0];
    op->x2 = n->n_inputs > 1 ? n->inputs[1] : -1;
    op->y = n->outputs[0];
    op->y2 = n->n_outputs > 1 ? n->outputs[1] : -1;
    return op;
}

/* What the planners return: OK with *out set or left NULL (not covered),
 * or OUT_OF_MEMORY. */
#define NEW_OP(op, kind, extra_bytes)                                                                        \
    do {                                                                                                     \
        (op) = op_new((kind), n, (extra_bytes));                                                             \
        if (!(op)) return RLT_STATUS_OUT_OF_MEMORY;                                                          \
    } while (0)

/* Drops dimensions of size 1 and merges neighbours i, i+1 whose strides in
 * every one of n_ops operands satisfy s[i] == s[i+1] * dims[i+1]. At least
 * one dimension is kept (of size 1 when all were). */
static int collapse(int rank, int64_t *dims, int n_ops, int64_t (*strides)[MAX_RANK])
{
    int r = 0;
    for (int j = 0; j < rank; j++) {
        if (dims[j] == 1) continue;
        bool merge = r > 0;
        for (int k = 0; k < n_ops && merge; k++) merge = strides[k][r - 1] == strides[k][j] * dims[j];
        if (merge) {
            dims[r - 1] *= dims[j];
            for (int k = 0; k < n_ops; k++) strides[k][r - 1] = strides[k][j];
            continue;
        }
        dims[r] = dims[j];
        for (int k = 0; k < n_ops; k++) strides[k][r] = strides[k][j];
        r++;
    }
    if (r == 0) {
        dims[0] = 1;
        for (int k = 0; k < n_ops; k++) strides[k][0] = 1;
        r = 1;
    }
    return r;
}

/* ---- unary ---------------------------------------------------------------------- */

static rlt_status plan_unary(const rlt_graph *g, const rlt_graph_node *n, rlt_fast_op **out)
{
    const char *t = n->op_type;
    const rlt_graph_tensor *x = tin(g, n, 0), *y = tout(g, n, 0);
    if (!is_f32(x) || !is_f32(y) || n_elems(x) != n_elems(y) || n->n_outputs != 1) return RLT_STATUS_OK;
    unary_fn fn;
    float p0 = 0.0f, p1 = 0.0f;
    if (strcmp(t, "Relu") == 0) {
        fn = UN_RELU;
    } else if (strcmp(t, "Clip") == 0) {
        fn = UN_CLIP;
        if (g->opset < 11) {
            p0 = (float)rlt_graph_attr_float(n, "min", -FLT_MAX);
            p1 = (float)rlt_graph_attr_float(n, "max", FLT_MAX);
        } else {
            p0 = -INFINITY;
            p1 = INFINITY;
            for (int k = 1; k <= 2; k++) {
                const rlt_graph_tensor *b = tin(g, n, k);
                if (!b) continue;
                if (!is_f32(b) || !b->data || n_elems(b) != 1) return RLT_STATUS_OK;
                if (k == 1) p0 = ((const float *)b->data)[0];
                else p1 = ((const float *)b->data)[0];
            }
        }
    } else if (strcmp(t, "LeakyRelu") == 0) {
        fn = UN_LEAKY_RELU;
        p0 = (float)rlt_graph_attr_float(n, "alpha", 0.01);
    } else if (strcmp(t, "Sigmoid") == 0) {
        fn = UN_SIGMOID;
    } else if (strcmp(t, "Tanh") == 0) {
        fn = UN_TANH;
    } else if (strcmp(t, "Erf") == 0) {
        fn = UN_ERF;
    } else if (strcmp(t, "Sqrt") == 0) {
        fn = UN_SQRT;
    } else if (strcmp(t, "Gelu") == 0) {
        const rlt_graph_attr *a = rlt_graph_node_attr(n, "approximate");
        fn = a && a->kind == RLT_GRAPH_ATTR_STRING && strcmp(a->s, "tanh") == 0 ? UN_GELU_TANH : UN_GELU;
    } else { /* Pow by a constant scalar */
        const rlt_graph_tensor *e = tin(g, n, 1);
        if (!is_f32(e) || !e->data || n_elems(e) != 1) return RLT_STATUS_OK;
        p0 = ((const float *)e->data)[0];
        fn = p0 == 2.0f ? UN_SQUARE : p0 == 3.0f ? UN_CUBE : UN_POW;
    }
    rlt_fast_op *op;
    NEW_OP(op, FOP_UNARY, 0);
    op->fn = fn;
    op->n = n_elems(y);
    op->p0 = p0;
    op->p1 = p1;
    *out = op;
    return RLT_STATUS_OK;
}

FOP_INLINE void run_unary(const rlt_fast_op *op, const float *restrict x, float *restrict y)
{
    int64_t n = op->n;
    float p0 = op->p0, p1 = op->p1;
    switch ((unary_fn)op->fn) {
    case UN_RELU:
        for (int64_t i = 0; i < n; i++) y[i] = x[i] < 0.0f ? 0.0f : x[i];
        break;
    case UN_CLIP:
        for (int64_t i = 0; i < n; i++) {
            float v = x[i] < p0 ? p0 : x[i];
            y[i] = v > p1 ? p1 : v;
        }
        break;
    case UN_LEAKY_RELU:
        for (int64_t i = 0; i < n; i++) y[i] = x[i] < 0.0f ? p0 * x[i] : x[i];
        break;
    case UN_SIGMOID:
        for (int64_t i = 0; i < n; i++) y[i] = sigmoid_f(x[i]);
        break;
    case UN_TANH:
        for (int64_t i = 0; i < n; i++) y[i] = tanh_f(x[i]);
        break;
    case UN_ERF:
        for (int64_t i = 0; i < n; i++) y[i] = erf_f(x[i]);
        break;
    case UN_SQRT:
        for (int64_t i = 0; i < n; i++) y[i] = sqrtf(x[i]);
        break;
    case UN_GELU:
        for (int64_t i = 0; i < n; i++) y[i] = 0.5f * x[i] * (1.0f + erf_f(x[i] * 0.70710678118654752f));
        break;
    case UN_GELU_TANH:
        /* 0.5 v (1 + tanh(u)) = v sigmoid(2u), u = sqrt(2/pi) (v + 0.044715 v^3) */
        for (int64_t i = 0; i < n; i++) {
            float v = x[i];
            float u2 = 1.5957691216057308f * (v + 0.044715f * v * v * v);
            y[i] = v * sigmoid_f(u2);
        }
        break;
    case UN_SQUARE:
        for (int64_t i = 0; i < n; i++) y[i] = x[i] * x[i];
        break;
    case UN_CUBE:
        for (int64_t i = 0; i < n; i++) y[i] = (float)((double)x[i] * (double)x[i] * (double)x[i]);
        break;
    case UN_POW:
        for (int64_t i = 0; i < n; i++) y[i] = powf(x[i], p0);
        break;
    }
}

/* ---- binary with broadcasting ------------------------------------------------------ */

static rlt_status plan_binary(const rlt_graph *g, const rlt_graph_node *n, rlt_fast_op **out)
{
    const rlt_graph_tensor *a = tin(g, n, 0), *b = tin(g, n, 1), *y = tout(g, n, 0);
    if (!is_f32(a) || !is_f32(b) || !is_f32(y) || n->n_outputs != 1) return RLT_STATUS_OK;
    const char *t = n->op_type;
    binary_fn fn = t[0] == 'A'   ? BIN_ADD
                   : t[0] == 'S' ? BIN_SUB
                   : t[0] == 'M' ? BIN_MUL
                   : t[0] == 'D' ? BIN_DIV
                                 : BIN_POW;
    if (fn == BIN_POW && b->data && n_elems(b) == 1 && n_elems(a) == n_elems(y)) return plan_unary(g, n, out);
    bcast_plan p = {.total = n_elems(y)};
    int64_t st[2][MAX_RANK] = {{0}};
    const rlt_graph_tensor *ops[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        const rlt_graph_tensor *o = ops[k];
        if (o->rank > y->rank) return RLT_STATUS_OK;
        int64_t s[MAX_RANK];
        strides_of(o->rank, o->dims, s);
        for (int i = 0; i < o->rank; i++) {
            int j = y->rank - o->rank + i;
            if (o->dims[i] != 1 && o->dims[i] != y->dims[j]) return RLT_STATUS_OK;
            st[k][j] = o->dims[i] == 1 ? 0 : s[i];
        }
    }
    memcpy(p.dims, y->dims, sizeof p.dims);
    p.rank = collapse(y->rank, p.dims, 2, st);
    memcpy(p.sa, st[0], sizeof p.sa);
    memcpy(p.sb, st[1], sizeof p.sb);
    /* After collapsing, an operand's inner stride is 1 (it spans the inner
     * dimension) or 0 (it is one value along it). */
    int in = p.rank - 1;
    if (p.sa[in] > 1 || p.sb[in] > 1) return RLT_STATUS_OK;
    rlt_fast_op *op;
    NEW_OP(op, FOP_BINARY, 0);
    op->fn = fn;
    op->u.bcast = p;
    *out = op;
    return RLT_STATUS_OK;
}

/* One inner row: A(i) and B(i) read the operands (a vector or a value). */
#define BINARY_ROW(A, B)                                                                                     \
    switch (fn) {                                                                                            \
    case BIN_ADD:                                                                                            \
        for (int64_t i = 0; i < n; i++) y[i] = (A) + (B);                                                    \
        break;                                                                                               \
    case BIN_SUB:                                                                                            \
        for (int64_t i = 0; i < n; i++) y[i] = (A) - (B);                                                    \
        break;                                                                                               \
    case BIN_MUL:                                                                                            \
        for (int64_t i = 0; i < n; i++) y[i] = (A) * (B);                                                    \
        break;                                                                                               \
    case BIN_DIV:                                                                                            \
        for (int64_t i = 0; i < n; i++) y[i] = (A) / (B);                                                    \
        break;                                                                                               \
    case BIN_POW:                                                                                            \
        for (int64_t i = 0; i < n; i++) y[i] = powf((A), (B));                                               \
        break;                                                                                               \
    }

FOP_INLINE void binary_vv(binary_fn fn, float *restrict y, const float *restrict a, const float *restrict b, int64_t n)
{
    BINARY_ROW(a[i], b[i])
}

FOP_INLINE void binary_vs(binary_fn fn, float *restrict y, const float *restrict a, float s, int64_t n)
{
    BINARY_ROW(a[i], s)
}

FOP_INLINE void binary_sv(binary_fn fn, float *restrict y, float s, const float *restrict b, int64_t n)
{
    BINARY_ROW(s, b[i])
}

FOP_INLINE void run_binary(const rlt_fast_op *op, const float *a, const float *b, float *y)
{
    const bcast_plan *p = &op->u.bcast;
    binary_fn fn = (binary_fn)op->fn;
    if (p->total == 0) return;
    int in = p->rank - 1;
    int64_t n = p->dims[in], n_rows = p->total / n;
    bool a_vec = p->sa[in] != 0 || n == 1, b_vec = p->sb[in] != 0 || n == 1;
    int64_t idx[MAX_RANK] = {0}, ao = 0, bo = 0;
    for (int64_t r = 0; r < n_rows; r++, y += n) {
        if (a_vec && b_vec) binary_vv(fn, y, a + ao, b + bo, n);
        else if (a_vec) binary_vs(fn, y, a + ao, b[bo], n);
        else binary_sv(fn, y, a[ao], b + bo, n);
        for (int d = in - 1; d >= 0; d--) {
            ao += p->sa[d];
            bo += p->sb[d];
            if (++idx[d] < p->dims[d]) break;
            ao -= p->sa[d] * p->dims[d];
            bo -= p->sb[d] * p->dims[d];
            idx[d] = 0;
        }
    }
}

/* ---- pools ------------------------------------------------------------------------- */

/* The number of taps k in [0, K) with 0 <= start + k * d < in. */
static int64_t taps_inside(int64_t start, int64_t K, int64_t d, int64_t in)
{
    int64_t count = 0;
    for (int64_t k = 0; k < K; k++) {
        int64_t i = start + k * d;
        count += i >= 0 && i < in;
    }
    return count;
}

static rlt_status plan_pool(const rlt_graph *g, const rlt_graph_node *n, rlt_fast_op **out)
{
    const rlt_graph_tensor *x = tin(g, n, 0), *y = tout(g, n, 0);
    bool is_max = strcmp(n->op_type, "MaxPool") == 0;
    if (!is_f32(x) || !is_f32(y) || (x->rank != 3 && x->rank != 4) || y->rank != x->rank) return RLT_STATUS_OK;
    if (tout(g, n, 1)) return RLT_STATUS_OK; /* Indices */
    if (y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1]) return RLT_STATUS_OK;
    int n_sp = x->rank - 2, n_k, n_s, n_d, n_p;
    const int64_t *ks = rlt_graph_attr_ints(n, "kernel_shape", &n_k), *s = rlt_graph_attr_ints(n, "strides", &n_s),
                  *d = rlt_graph_attr_ints(n, "dilations", &n_d), *pads = rlt_graph_attr_ints(n, "pads", &n_p);
    if (!ks || n_k != n_sp || (s && n_s != n_sp) || (d && n_d != n_sp) || (pads && n_p != 2 * n_sp))
        return RLT_STATUS_OK;
    /* Seen as 2-D: a 1-D pool has a height of 1. */
    int64_t k2[2] = {1, 1}, s2[2] = {1, 1}, d2[2] = {1, 1}, pb[2] = {0, 0}, pe[2] = {0, 0}, in2[2] = {1, 1},
            out2[2] = {1, 1};
    for (int i = 0; i < n_sp; i++) {
        int j = 2 - n_sp + i;
        k2[j] = ks[i];
        s2[j] = s ? s[i] : 1;
        d2[j] = d ? d[i] : 1;
        pb[j] = pads ? pads[i] : 0;
        pe[j] = pads ? pads[n_sp + i] : 0;
        in2[j] = x->dims[2 + i];
        out2[j] = y->dims[2 + i];
        if (k2[j] < 1 || s2[j] < 1 || d2[j] < 1 || pb[j] < 0 || pe[j] < 0) return RLT_STATUS_OK;
        if (!is_max && d2[j] != 1) return RLT_STATUS_OK;
    }
    bool include_pad = rlt_graph_attr_int(n, "count_include_pad", 0) != 0;
    size_t extra = is_max ? 0 : (size_t)(out2[0] + out2[1]) * sizeof(float);
    rlt_fast_op *op;
    NEW_OP(op, FOP_POOL, extra);
    /* Pools run rows of a few dozen outputs, where 16 lanes spend their
     * time in the tails: AVX2 measured 10% faster than AVX-512 on
     * ResNet's and SqueezeNet's MaxPools. */
    op->isa = RLT_MIN(op->isa, ISA_AVX2);
    pool_plan *p = &op->u.pool;
    *p = (pool_plan){.is_max = is_max,
                     .planes = x->dims[0] * x->dims[1],
                     .ih = in2[0], .iw = in2[1], .oh = out2[0], .ow = out2[1],
                     .kh = k2[0], .kw = k2[1], .sh = s2[0], .sw = s2[1], .dh = d2[0], .dw = d2[1],
                     .ph = pb[0], .pw = pb[1]};
    /* Outputs ow whose taps ow*sw - pw + k*dw all lie in [0, iw). */
    p->ow_lo = RLT_MIN((p->pw + p->sw - 1) / p->sw, p->ow);
    int64_t last = p->iw - 1 - (p->kw - 1) * p->dw + p->pw; /* ow*sw <= last */
    p->ow_hi = last < 0 ? 0 : RLT_MIN(last / p->sw + 1, p->ow);
    if (p->ow_hi < p->ow_lo) p->ow_hi = p->ow_lo;
    int64_t reach = (p->kw - 1) * p->dw + 1;
    p->chunk = reach <= POOL_TMP ? (POOL_TMP - reach) / p->sw + 1 : 0;
    if (!is_max) {
        float *div = (float *)op->extra;
        for (int dim = 0; dim < 2; dim++) {
            float *dv = dim == 0 ? div : div + out2[0];
            for (int64_t o = 0; o < out2[dim]; o++) {
                int64_t start = o * s2[dim] - pb[dim];
                /* With the pads counted, PyTorch's divisor: the window
                 * clipped to the padded input (a ceil_mode overhang past
                 * the end padding does not count), as the evaluator. */
                int64_t c = include_pad ? RLT_MIN(start + k2[dim], in2[dim] + pe[dim]) - start
                                        : taps_inside(start, k2[dim], 1, in2[dim]);
                dv[o] = (float)c;
            }
        }
        p->div_h = div;
        p->div_w = div + out2[0];
    }
    *out = op;
    return RLT_STATUS_OK;
}

/* One row across the window: y[i] op= r[i*s + k*d] over k < kw, for the
 * interior outputs of a row (r already at the first tap of the first).
 * `first` sets y instead. Specialised below for the common windows (kw 2
 * or 3, dilation 1, stride 1 or 2), where the taps of an output stay in
 * registers. */
FOP_INLINE void max_row(float *restrict y, const float *restrict r, int64_t n, int64_t s, int64_t kw, int64_t d,
                        bool first)
{
    for (int64_t k = 0; k < kw; k++) {
        const float *restrict rk = r + k * d;
        if (first && k == 0) {
            for (int64_t i = 0; i < n; i++) y[i] = rk[i * s];
        } else {
            for (int64_t i = 0; i < n; i++) y[i] = rk[i * s] > y[i] ? rk[i * s] : y[i];
        }
    }
}

FOP_INLINE void max_row3_first(float *restrict y, const float *restrict r, int64_t n, int64_t s)
{
    for (int64_t i = 0; i < n; i++) {
        float m = r[i * s];
        m = r[i * s + 1] > m ? r[i * s + 1] : m;
        y[i] = r[i * s + 2] > m ? r[i * s + 2] : m;
    }
}

FOP_INLINE void max_row2_first(float *restrict y, const float *restrict r, int64_t n, int64_t s)
{
    for (int64_t i = 0; i < n; i++) y[i] = r[i * s + 1] > r[i * s] ? r[i * s + 1] : r[i * s];
}

FOP_INLINE void sum_row(float *restrict y, const float *restrict r, int64_t n, int64_t s, int64_t kw, bool first)
{
    for (int64_t k = 0; k < kw; k++) {
        const float *restrict rk = r + k;
        if (first && k == 0) {
            for (int64_t i = 0; i < n; i++) y[i] = rk[i * s];
        } else {
            for (int64_t i = 0; i < n; i++) y[i] += rk[i * s];
        }
    }
}

FOP_INLINE void pool_row_interior(const pool_plan *p, float *restrict y, const float *restrict r, int64_t n, bool first)
{
    int64_t s = p->sw;
    if (!p->is_max) {
        if (s == 1) sum_row(y, r, n, 1, p->kw, first);
        else if (s == 2) sum_row(y, r, n, 2, p->kw, first);
        else sum_row(y, r, n, s, p->kw, first);
    } else if (first && p->dw == 1 && p->kw == 3) {
        if (s == 1) max_row3_first(y, r, n, 1);
        else if (s == 2) max_row3_first(y, r, n, 2);
        else max_row3_first(y, r, n, s);
    } else if (first && p->dw == 1 && p->kw == 2) {
        if (s == 1) max_row2_first(y, r, n, 1);
        else if (s == 2) max_row2_first(y, r, n, 2);
        else max_row2_first(y, r, n, s);
    } else if (s == 1) {
        max_row(y, r, n, 1, p->kw, p->dw, first);
    } else {
        max_row(y, r, n, s, p->kw, p->dw, first);
    }
}

/* One output (oh, ow) with every tap checked, as the evaluator runs it:
 * the edges of a row. */
FOP_INLINE float pool_one(const pool_plan *p, const float *xc, int64_t h0, int64_t ow)
{
    int64_t w0 = ow * p->sw - p->pw;
    float best = -FLT_MAX, sum = 0.0f;
    bool seen = false;
    for (int64_t kh = 0; kh < p->kh; kh++) {
        int64_t i = h0 + kh * p->dh;
        if (i < 0 || i >= p->ih) continue;
        const float *row = xc + i * p->iw;
        for (int64_t kw = 0; kw < p->kw; kw++) {
            int64_t j = w0 + kw * p->dw;
            if (j < 0 || j >= p->iw) continue;
            float v = row[j];
            if (!seen || v > best) best = v;
            seen = true;
            sum += v;
        }
    }
    return p->is_max ? best : sum;
}

/* The interior of one output row, [ow_lo, ow_hi), from its kernel rows
 * (the first at r0, `n_rows` of them `row_step` apart): separably, the
 * kernel rows reduced into a row on the stack (contiguous loops), then
 * that row across the window (strided), in chunks of outputs whose input
 * span fits it; with one kernel row (or a window too wide for the stack
 * row), straight from the input rows. */
FOP_INLINE void pool_interior(const pool_plan *p, float *restrict y, const float *r0, int64_t row_step, int64_t n_rows)
{
    int64_t n_in = p->ow_hi - p->ow_lo, chunk = p->chunk;
    if (n_rows == 1 || chunk == 0) { /* one kernel row, or a window wider than tmp */
        for (int64_t k = 0; k < n_rows; k++) pool_row_interior(p, y, r0 + k * row_step, n_in, k == 0);
        return;
    }
    float tmp[POOL_TMP];
    for (int64_t i0 = 0; i0 < n_in; i0 += chunk) {
        int64_t nb = RLT_MIN(chunk, n_in - i0), span = (nb - 1) * p->sw + (p->kw - 1) * p->dw + 1;
        const float *restrict a = r0 + i0 * p->sw, *restrict b = a + row_step;
        if (p->is_max)
            for (int64_t j = 0; j < span; j++) tmp[j] = b[j] > a[j] ? b[j] : a[j];
        else
            for (int64_t j = 0; j < span; j++) tmp[j] = a[j] + b[j];
        for (int64_t k = 2; k < n_rows; k++) {
            const float *restrict r = a + k * row_step;
            if (p->is_max)
                for (int64_t j = 0; j < span; j++) tmp[j] = r[j] > tmp[j] ? r[j] : tmp[j];
            else
                for (int64_t j = 0; j < span; j++) tmp[j] += r[j];
        }
        pool_row_interior(p, y + i0, tmp, nb, true);
    }
}

FOP_INLINE void run_pool(const rlt_fast_op *op, const float *x, float *y)
{
    const pool_plan *p = &op->u.pool;
    int64_t n_in = p->ow_hi - p->ow_lo;
    for (int64_t c = 0; c < p->planes; c++) {
        const float *xc = x + c * p->ih * p->iw;
        for (int64_t oh = 0; oh < p->oh; oh++, y += p->ow) {
            int64_t h0 = oh * p->sh - p->ph;
            for (int64_t ow = 0; ow < p->ow_lo; ow++) y[ow] = pool_one(p, xc, h0, ow);
            for (int64_t ow = p->ow_hi; ow < p->ow; ow++) y[ow] = pool_one(p, xc, h0, ow);
            if (n_in > 0) {
                /* the kernel rows inside the input: k_first, k_first + 1, ... */
                int64_t k_first = -1, n_rows = 0;
                for (int64_t kh = 0; kh < p->kh; kh++) {
                    int64_t i = h0 + kh * p->dh;
                    if (i < 0 || i >= p->ih) continue;
                    if (k_first < 0) k_first = kh;
                    n_rows = kh - k_first + 1;
                }
                if (n_rows > 0) {
                    const float *r0 = xc + (h0 + k_first * p->dh) * p->iw + p->ow_lo * p->sw - p->pw;
                    pool_interior(p, y + p->ow_lo, r0, p->dh * p->iw, n_rows);
                } else { /* no kernel row inside the input: empty windows */
                    for (int64_t ow = p->ow_lo; ow < p->ow_hi; ow++) y[ow] = p->is_max ? -FLT_MAX : 0.0f;
                }
            }
            if (!p->is_max) {
                float dh = p->div_h[oh];
                const float *restrict dw = p->div_w;
                for (int64_t ow = 0; ow < p->ow; ow++) {
                    float dv = dh * dw[ow];
                    y[ow] = dv > 0.0f ? y[ow] / dv : 0.0f;
                }
            }
        }
    }
}

/* ---- rows: Softmax, LayerNormalization, ReduceMean, GlobalAveragePool ----------- */

static rlt_status plan_global_pool(const rlt_graph *g, const rlt_graph_node *n, rlt_fast_op **out)
{
    const rlt_graph_tensor *x = tin(g, n, 0), *y = tout(g, n, 0);
    if (!is_f32(x) || !is_f32(y) || x->rank < 3) return RLT_STATUS_OK;
    int64_t planes = x->dims[0] * x->dims[1];
    if (n_elems(y) != planes) return RLT_STATUS_OK;
    rlt_fast_op *op;
    NEW_OP(op, FOP_GLOBAL_POOL, 0);
    op->u.rows = (rows_plan){.outer = planes, .len = planes ? n_elems(x) / planes : 0, .inner = 1};
    *out = op;
    return RLT_STATUS_OK;
}

static rlt_status plan_reduce_mean(const rlt_graph *g, const rlt_graph_node *n, rlt_fast_op **out)
{
    const rlt_graph_tensor *x = tin(g, n, 0), *y = tout(g, n, 0);
    if (!is_f32(x) || !is_f32(y) || n->n_inputs != 1) return RLT_STATUS_OK;
    int n_axes;
    const int64_t *axes = rlt_graph_attr_ints(n, "axes", &n_axes);
    bool reduce[MAX_RANK] = {false};
    for (int d = 0; d < x->rank; d++) reduce[d] = axes == NULL;
    for (int i = 0; i < n_axes; i++) {
        int a;
        if (!axis_norm(axes[i], x->rank, &a)) return RLT_STATUS_OK;
        reduce[a] = true;
    }
    /* Covered: the reduced dimensions (of size > 1) come after every kept
     * one, so that each output is the mean of a contiguous block. */
    int64_t rows = 1, len = 1;
    bool reducing = false;
    for (int d = 0; d < x->rank; d++) {
        if (reduce[d]) {
            len *= x->dims[d];
            reducing = reducing || x->dims[d] != 1;
        } else {
            if (reducing && x->dims[d] != 1) return RLT_STATUS_OK;
            rows *= x->dims[d];
        }
    }
    if (n_elems(y) != rows) return RLT_STATUS_OK;
    rlt_fast_op *op;
    NEW_OP(op, FOP_REDUCE_MEAN, 0);
    op->u.rows = (rows_plan){.outer = rows, .len = len, .inner = 1};
    *out = op;
    return RLT_STATUS_OK;
}

/* The mean of each block of len floats (NaN for empty blocks, as the
 * evaluator's 0 / 0). */
FOP_INLINE void run_means(const rows_plan *p, const float *x, float *y)
{
    for (int64_t r = 0; r < p->outer; r++) y[r] = (float)(sum_f64(x + r * p->len, p->len) / (double)p->len);
}

static rlt_status plan_softmax(const rlt_graph *g, const rlt_graph_node *n, rlt_fast_op **out)
{
    const rlt_graph_tensor *x = tin(g, n, 0), *y = tout(g, n, 0);
    if (!is_f32(x) || !is_f32(y) || n_elems(x) != n_elems(y)) return RLT_STATUS_OK;
    int axis;
    if (!axis_norm(rlt_graph_attr_int(n, "axis", g->opset >= 13 ? -1 : 1), x->rank, &axis)) return RLT_STATUS_OK;
    rows_plan p = {.outer = 1, .len = 1, .inner = 1};
    for (int d = 0; d < axis; d++) p.outer *= x->dims[d];
    if (g->opset >= 13) {
        p.len = x->dims[axis];
        for (int d = axis + 1; d < x->rank; d++) p.inner *= x->dims[d];
    } else { /* before opset 13: the input flattened to [outer, rest] */
        for (int d = axis; d < x->rank; d++) p.len *= x->dims[d];
    }
    rlt_fast_op *op;
    NEW_OP(op, FOP_SOFTMAX, 0);
    op->u.rows = p;
    *out = op;
    return RLT_STATUS_OK;
}

/* Softmax of one contiguous row: max-subtracted, e^(x - max) in float
 * (exp_neg), summed in float, scaled by 1 / sum. */
FOP_INLINE void softmax_row(const float *restrict x, float *restrict y, int64_t n)
{
    float m = max_f32(x, n);
    for (int64_t i = 0; i < n; i++) y[i] = exp_neg(x[i] - m);
    float inv = 1.0f / sum_f32(y, n);
    for (int64_t i = 0; i < n; i++) y[i] *= inv;
}

/* Softmax along a strided axis: columns of `inner`, in blocks whose
 * maxima and sums fit on the stack. */
enum { SOFTMAX_BLOCK = 256 };

FOP_INLINE void softmax_columns(const float *x, float *y, int64_t len, int64_t inner)
{
    float mx[SOFTMAX_BLOCK], sm[SOFTMAX_BLOCK];
    for (int64_t j0 = 0; j0 < inner; j0 += SOFTMAX_BLOCK) {
        int64_t nb = RLT_MIN((int64_t)SOFTMAX_BLOCK, inner - j0);
        const float *xb = x + j0;
        float *yb = y + j0;
        for (int64_t j = 0; j < nb; j++) {
            mx[j] = xb[j];
            sm[j] = 0.0f;
        }
        for (int64_t k = 1; k < len; k++) {
            const float *restrict xr = xb + k * inner;
            for (int64_t j = 0; j < nb; j++) mx[j] = xr[j] > mx[j] ? xr[j] : mx[j];
        }
        for (int64_t k = 0; k < len; k++) {
            const float *restrict xr = xb + k * inner;
            float *restrict yr = yb + k * inner;
            for (int64_t j = 0; j < nb; j++) {
                float e = exp_neg(xr[j] - mx[j]);
                yr[j] = e;
                sm[j] += e;
            }
        }
        for (int64_t j = 0; j < nb; j++) sm[j] = 1.0f / sm[j];
        for (int64_t k = 0; k < len; k++) {
            float *restrict yr = yb + k * inner;
            for (int64_t j = 0; j < nb; j++) yr[j] *= sm[j];
        }
    }
}

FOP_INLINE void run_softmax(const rows_plan *p, const float *x, float *y)
{
    if (p->len == 0) return;
    int64_t block = p->len * p->inner;
    for (int64_t o = 0; o < p->outer; o++) {
        if (p->inner == 1) softmax_row(x + o * block, y + o * block, p->len);
        else softmax_columns(x + o * block, y + o * block, p->len, p->inner);
    }
}

/* LayerNormalization's scale or bias `t` (input k), broadcast to the
 * normalised dims [rank - axis] of x: len values read from the tensor at
 * run time when it has exactly those (no dimension broadcast), else its
 * constant values expanded into dst (when dst is given; *need says so),
 * else not covered (false). */
static bool ln_param(const rlt_graph_tensor *t, const rlt_graph_tensor *x, int axis, int64_t len, float *dst,
                     bool *need)
{
    int r = x->rank - axis;
    if (!is_f32(t) || t->rank > r) return false;
    for (int k = 0; k < t->rank; k++)
        if (t->dims[k] != 1 && t->dims[k] != x->dims[x->rank - t->rank + k]) return false;
    *need = false;
    if (n_elems(t) == len) return true;
    if (!t->data) return false;
    *need = true;
    if (!dst) return true;
    /* Expand: walk the normalised dims, t's stride 0 where it has 1. */
    int64_t ts[MAX_RANK] = {0}, s[MAX_RANK], idx[MAX_RANK] = {0}, off = 0;
    strides_of(t->rank, t->dims, s);
    for (int k = 0; k < t->rank; k++) ts[r - t->rank + k] = t->dims[k] == 1 ? 0 : s[k];
    const float *v = t->data;
    for (int64_t e = 0; e < len; e++) {
        dst[e] = v[off];
        for (int d = r - 1; d >= 0; d--) {
            off += ts[d];
            if (++idx[d] < x->dims[axis + d]) break;
            off -= ts[d] * x->dims[axis + d];
            idx[d] = 0;
        }
    }
    return true;
}

static rlt_status plan_layernorm(const rlt_graph *g, const rlt_graph_node *n, rlt_fast_op **out)
{
    const rlt_graph_tensor *x = tin(g, n, 0), *y = tout(g, n, 0), *sc = tin(g, n, 1), *bi = tin(g, n, 2);
    if (!is_f32(x) || !is_f32(y) || n_elems(x) != n_elems(y)) return RLT_STATUS_OK;
    if (tout(g, n, 1) || tout(g, n, 2)) return RLT_STATUS_OK; /* Mean, InvStdDev */
    int axis;
    if (!axis_norm(rlt_graph_attr_int(n, "axis", -1), x->rank, &axis)) return RLT_STATUS_OK;
    rows_plan p = {.outer = 1, .len = 1, .inner = 1, .eps = rlt_graph_attr_float(n, "epsilon", 1e-5), .scale = -1,
                   .bias = -1};
    for (int d = 0; d < axis; d++) p.outer *= x->dims[d];
    for (int d = axis; d < x->rank; d++) p.len *= x->dims[d];
    bool need_s = false, need_b = false;
    if (sc && !ln_param(sc, x, axis, p.len, NULL, &need_s)) return RLT_STATUS_OK;
    if (bi && !ln_param(bi, x, axis, p.len, NULL, &need_b)) return RLT_STATUS_OK;
    size_t extra = (size_t)((need_s ? p.len : 0) + (need_b ? p.len : 0)) * sizeof(float);
    rlt_fast_op *op;
    NEW_OP(op, FOP_LAYERNORM, extra);
    float *dst = (float *)op->extra;
    if (sc) {
        p.scale = n->inputs[1];
        if (need_s) {
            ln_param(sc, x, axis, p.len, dst, &need_s);
            p.scale_c = dst;
            dst += p.len;
        }
    }
    if (bi) {
        p.bias = n->inputs[2];
        if (need_b) {
            ln_param(bi, x, axis, p.len, dst, &need_b);
            p.bias_c = dst;
        }
    }
    op->u.rows = p;
    *out = op;
    return RLT_STATUS_OK;
}

FOP_INLINE void run_layernorm(const rows_plan *p, const float *x, float *y, const float *scale, const float *bias)
{
    int64_t len = p->len;
    if (len == 0) return;
    for (int64_t o = 0; o < p->outer; o++) {
        const float *restrict xr = x + o * len;
        float *restrict yr = y + o * len;
        double mean = sum_f64(xr, len) / (double)len;
        double var = sum_sq_dev_f64(xr, len, mean) / (double)len;
        /* The mean as two floats: x - hi is exact where x is close to
         * the mean, so a large mean over a small spread loses nothing. */
        float hi = (float)mean, lo = (float)(mean - (double)hi), istd = (float)(1.0 / sqrt(var + p->eps));
        if (scale && bias)
            for (int64_t k = 0; k < len; k++) yr[k] = ((xr[k] - hi) - lo) * istd * scale[k] + bias[k];
        else if (scale)
            for (int64_t k = 0; k < len; k++) yr[k] = ((xr[k] - hi) - lo) * istd * scale[k];
        else if (bias)
            for (int64_t k = 0; k < len; k++) yr[k] = ((xr[k] - hi) - lo) * istd + bias[k];
        else
            for (int64_t k = 0; k < len; k++) yr[k] = ((xr[k] - hi) - lo) * istd;
    }
}

/* ---- strided copies: Transpose, Slice --------------------------------------------- */

/* Plans y = x viewed through (dims, element strides xs, base offset):
 * collapses the dimensions, then picks the inner loop. */
static void copy_plan_make(copy_plan *p, size_t es, int rank, const int64_t *out_dims, const int64_t *xs_in,
                           int64_t base)
{
    int64_t dims[MAX_RANK], st[1][MAX_RANK];
    memcpy(dims, out_dims, (size_t)rank * sizeof *dims);
    memcpy(st[0], xs_in, (size_t)rank * sizeof *xs_in);
    int r = collapse(rank, dims, 1, st);
    const int64_t *xs = st[0];
    int64_t ys[MAX_RANK];
    strides_of(r, dims, ys);
    memset(p, 0, sizeof *p);
    p->es = es;
    p->base = base;
    p->n_inner = dims[r - 1];
    p->inner_xs = xs[r - 1];
    int tile = -1;
    if (xs[r - 1] == 1) {
        p->mode = COPY_RUNS;
    } else {
        for (int d = 0; d < r - 1; d++)
            if (xs[d] == 1) tile = d;
        p->mode = tile >= 0 ? COPY_TILE : COPY_GATHER;
    }
    if (tile >= 0) {
        p->n_tile = dims[tile];
        p->tile_ys = ys[tile];
    }
    odo *od = &p->outer;
    od->count = 1;
    for (int d = 0; d < r - 1; d++) {
        if (d == tile) continue;
        od->dims[od->rank] = dims[d];
        od->xs[od->rank] = xs[d];
        od->ys[od->rank] = ys[d];
        od->count *= dims[d];
        od->rank++;
    }
    for (int d = 0; d < r; d++)
        if (dims[d] == 0) od->count = 0;
}

static rlt_status plan_transpose(const rlt_graph *g, const rlt_graph_node *n, rlt_fast_op **out)
{
    const rlt_graph_tensor *x = tin(g, n, 0), *y = tout(g, n, 0);
    size_t es = rlt_dtype_size(x->dtype);
    if (x->dtype != y->dtype || y->rank != x->rank || es == 0) return RLT_STATUS_OK;
    int n_perm;
    const int64_t *pa = rlt_graph_attr_ints(n, "perm", &n_perm);
    if (pa && n_perm != x->rank) return RLT_STATUS_OK;
    int64_t s[MAX_RANK], xs[MAX_RANK];
    strides_of(x->rank, x->dims, s);
    bool used[MAX_RANK] = {false};
    for (int i = 0; i < x->rank; i++) {
        int64_t pi = pa ? pa[i] : x->rank - 1 - i;
        if (pi < 0 || pi >= x->rank || used[pi] || y->dims[i] != x->dims[pi]) return RLT_STATUS_OK;
        used[pi] = true;
        xs[i] = s[pi];
    }
    rlt_fast_op *op;
    NEW_OP(op, FOP_COPY, 0);
    copy_plan_make(&op->u.copy, es, y->rank, y->dims, xs, 0);
    *out = op;
    return RLT_STATUS_OK;
}

static rlt_status plan_slice(const rlt_graph *g, const rlt_graph_node *n, rlt_fast_op **out)
{
    const rlt_graph_tensor *x = tin(g, n, 0), *y = tout(g, n, 0);
    size_t es = rlt_dtype_size(x->dtype);
    int r = x->rank;
    if (x->dtype != y->dtype || y->rank != r || es == 0) return RLT_STATUS_OK;
    int64_t starts[MAX_RANK], ends[MAX_RANK], axes[MAX_RANK], steps[MAX_RANK];
    int n_starts = 0, n_ends = 0, n_axes = -1, n_steps = -1;
    if (g->opset < 10) {
        int na;
        const int64_t *sa = rlt_graph_attr_ints(n, "starts", &n_starts), *ea = rlt_graph_attr_ints(n, "ends", &n_ends),
                      *aa = rlt_graph_attr_ints(n, "axes", &na);
        if (!sa || !ea || n_starts > r || n_ends > r || (aa && na > r)) return RLT_STATUS_OK;
        memcpy(starts, sa, (size_t)n_starts * sizeof *sa);
        memcpy(ends, ea, (size_t)n_ends * sizeof *ea);
        if (aa) {
            n_axes = na;
            memcpy(axes, aa, (size_t)na * sizeof *aa);
        }
    } else {
        const rlt_graph_tensor *ts[4] = {tin(g, n, 1), tin(g, n, 2), tin(g, n, 3), tin(g, n, 4)};
        int64_t *dst[4] = {starts, ends, axes, steps};
        int *cnt[4] = {&n_starts, &n_ends, &n_axes, &n_steps};
        if (!ts[0] || !ts[1]) return RLT_STATUS_OK;
        for (int k = 0; k < 4; k++) {
            if (!ts[k]) continue;
            if (!is_const_ints(ts[k])) return RLT_STATUS_OK;
            *cnt[k] = (int)n_elems(ts[k]);
            for (int i = 0; i < *cnt[k]; i++) dst[k][i] = const_int(ts[k], i);
        }
    }
    if (n_ends != n_starts || (n_axes >= 0 && n_axes != n_starts) || (n_steps >= 0 && n_steps != n_starts))
        return RLT_STATUS_OK;
    int64_t o_start[MAX_RANK], o_step[MAX_RANK];
    for (int d = 0; d < r; d++) {
        o_start[d] = 0;
        o_step[d] = 1;
    }
    for (int i = 0; i < n_starts; i++) {
        int axis;
        if (!axis_norm(n_axes >= 0 ? axes[i] : i, r, &axis)) return RLT_STATUS_OK;
        int64_t dim = x->dims[axis], step = n_steps >= 0 ? steps[i] : 1, st = starts[i];
        if (step == 0) return RLT_STATUS_OK;
        if (st < 0) st += dim;
        if (step > 0) st = st < 0 ? 0 : (st > dim ? dim : st);
        else st = st < 0 ? -1 : (st > dim - 1 ? dim - 1 : st);
        o_start[axis] = st;
        o_step[axis] = step;
    }
    /* The output's shape holds the lengths; every index must land inside. */
    int64_t s[MAX_RANK], xs[MAX_RANK], base = 0;
    strides_of(r, x->dims, s);
    for (int d = 0; d < r; d++) {
        if (y->dims[d] == 0) continue;
        int64_t last = o_start[d] + (y->dims[d] - 1) * o_step[d];
        if (o_start[d] < 0 || o_start[d] >= x->dims[d] || last < 0 || last >= x->dims[d]) return RLT_STATUS_OK;
        xs[d] = o_step[d] * s[d];
        base += o_start[d] * s[d];
    }
    for (int d = 0; d < r; d++)
        if (y->dims[d] == 0) xs[d] = 0, base = 0;
    rlt_fast_op *op;
    NEW_OP(op, FOP_COPY, 0);
    copy_plan_make(&op->u.copy, es, r, y->dims, xs, base);
    *out = op;
    return RLT_STATUS_OK;
}

enum { TILE = 32 };

/* The tiled transpose of one (n_tile x n_inner) block: y[i * ys + j] =
 * x[i + j * xs], in TILE x TILE tiles so that both sides stay in cache. */
#define TILE_COPY(T)                                                                                         \
    do {                                                                                                     \
        const T *restrict xt_ = (const T *)x;                                                                \
        T *restrict yt_ = (T *)y;                                                                            \
        for (int64_t i0 = 0; i0 < ni; i0 += TILE)                                                            \
            for (int64_t j0 = 0; j0 < nj; j0 += TILE) {                                                      \
                int64_t i1 = RLT_MIN(i0 + TILE, ni), j1 = RLT_MIN(j0 + TILE, nj);                            \
                for (int64_t i = i0; i < i1; i++)                                                            \
                    for (int64_t j = j0; j < j1; j++) yt_[i * ys + j] = xt_[i + j * xs];                     \
            }                                                                                                \
    } while (0)

/* Lanes of two 4-lane vectors by index (0-3: a's, 4-7: b's). */
#if defined(__clang__)
#define SHUFFLE4(a, b, i0, i1, i2, i3) __builtin_shufflevector((a), (b), i0, i1, i2, i3)
#else
#define SHUFFLE4(a, b, i0, i1, i2, i3) __builtin_shuffle((a), (b), (v4i){i0, i1, i2, i3})
#endif
typedef int32_t v4i __attribute__((vector_size(16)));

/* The same for 4-byte elements, 4 x 4 blocks transposed in registers
 * (two rounds of shuffles), in TILE x TILE tiles; the edges one by one. */
static void tile_copy4(uint32_t *restrict y, const uint32_t *restrict x, int64_t ni, int64_t nj, int64_t ys,
                       int64_t xs)
{
    for (int64_t i0 = 0; i0 < ni; i0 += TILE)
        for (int64_t j0 = 0; j0 < nj; j0 += TILE) {
            int64_t i1 = RLT_MIN(i0 + TILE, ni), j1 = RLT_MIN(j0 + TILE, nj);
            int64_t i = i0;
            for (; i + 4 <= i1; i += 4) {
                int64_t j = j0;
                for (; j + 4 <= j1; j += 4) {
                    v4f r0, r1, r2, r3; /* r_k: x's row j + k, elements i .. i + 3 */
                    memcpy(&r0, x + i + j * xs, sizeof r0);
                    memcpy(&r1, x + i + (j + 1) * xs, sizeof r1);
                    memcpy(&r2, x + i + (j + 2) * xs, sizeof r2);
                    memcpy(&r3, x + i + (j + 3) * xs, sizeof r3);
                    v4f t0 = SHUFFLE4(r0, r1, 0, 4, 1, 5), t1 = SHUFFLE4(r0, r1, 2, 6, 3, 7);
                    v4f t2 = SHUFFLE4(r2, r3, 0, 4, 1, 5), t3 = SHUFFLE4(r2, r3, 2, 6, 3, 7);
                    v4f c0 = SHUFFLE4(t0, t2, 0, 1, 4, 5), c1 = SHUFFLE4(t0, t2, 2, 3, 6, 7);
                    v4f c2 = SHUFFLE4(t1, t3, 0, 1, 4, 5), c3 = SHUFFLE4(t1, t3, 2, 3, 6, 7);
                    memcpy(y + i * ys + j, &c0, sizeof c0);
                    memcpy(y + (i + 1) * ys + j, &c1, sizeof c1);
                    memcpy(y + (i + 2) * ys + j, &c2, sizeof c2);
                    memcpy(y + (i + 3) * ys + j, &c3, sizeof c3);
                }
                for (; j < j1; j++)
                    for (int64_t k = i; k < i + 4; k++) y[k * ys + j] = x[k + j * xs];
            }
            for (; i < i1; i++)
                for (int64_t j = j0; j < j1; j++) y[i * ys + j] = x[i + j * xs];
        }
}

static void tile_copy(size_t es, char *y, const char *x, int64_t ni, int64_t nj, int64_t ys, int64_t xs)
{
    switch (es) {
    case 1: TILE_COPY(uint8_t); break;
    case 4: tile_copy4((uint32_t *)y, (const uint32_t *)x, ni, nj, ys, xs); break;
    default: TILE_COPY(uint64_t); break;
    }
}

#define GATHER_COPY(T)                                                                                       \
    do {                                                                                                     \
        const T *restrict xt_ = (const T *)x;                                                                \
        T *restrict yt_ = (T *)y;                                                                            \
        for (int64_t j = 0; j < nj; j++) yt_[j] = xt_[j * xs];                                               \
    } while (0)

static void gather_copy(size_t es, char *y, const char *x, int64_t nj, int64_t xs)
{
    switch (es) {
    case 1: GATHER_COPY(uint8_t); break;
    case 4: GATHER_COPY(uint32_t); break;
    default: GATHER_COPY(uint64_t); break;
    }
}

static void run_copy(const copy_plan *p, const char *x, char *y)
{
    const odo *od = &p->outer;
    size_t es = p->es;
    int64_t idx[MAX_RANK] = {0}, xo = p->base, yo = 0;
    for (int64_t o = 0; o < od->count; o++) {
        const char *xp = x + xo * (int64_t)es;
        char *yp = y + yo * (int64_t)es;
        switch (p->mode) {
        case COPY_RUNS: memcpy(yp, xp, (size_t)p->n_inner * es); break;
        case COPY_TILE: tile_copy(es, yp, xp, p->n_tile, p->n_inner, p->tile_ys, p->inner_xs); break;
        case COPY_GATHER: gather_copy(es, yp, xp, p->n_inner, p->inner_xs); break;
        }
        for (int d = od->rank - 1; d >= 0; d--) {
            xo += od->xs[d];
            yo += od->ys[d];
            if (++idx[d] < od->dims[d]) break;
            xo -= od->xs[d] * od->dims[d];
            yo -= od->ys[d] * od->dims[d];
            idx[d] = 0;
        }
    }
}

/* ---- Concat, Split ------------------------------------------------------------------ */

/* Concat (is_split false: the inputs are the parts, output 0 the whole) or
 * Split (input 0 the whole, the outputs the parts). */
static rlt_status plan_parts(const rlt_graph *g, const rlt_graph_node *n, bool is_split, rlt_fast_op **out)
{
    const rlt_graph_tensor *whole = is_split ? tin(g, n, 0) : tout(g, n, 0);
    int n_parts = is_split ? n->n_outputs : n->n_inputs;
    size_t es = rlt_dtype_size(whole->dtype);
    if (es == 0 || (!is_split && n->n_outputs != 1)) return RLT_STATUS_OK;
    int axis;
    if (!axis_norm(rlt_graph_attr_int(n, "axis", 0), whole->rank, &axis)) return RLT_STATUS_OK;
    int64_t outer = 1, inner = (int64_t)es, sum = 0;
    for (int d = 0; d < axis; d++) outer *= whole->dims[d];
    for (int d = axis + 1; d < whole->rank; d++) inner *= whole->dims[d];
    for (int i = 0; i < n_parts; i++) {
        const rlt_graph_tensor *t = is_split ? tout(g, n, i) : tin(g, n, i);
        if (!t || t->dtype != whole->dtype || t->rank != whole->rank) return RLT_STATUS_OK;
        for (int d = 0; d < whole->rank; d++)
            if (d != axis && t->dims[d] != whole->dims[d]) return RLT_STATUS_OK;
        sum += t->dims[axis];
    }
    if (sum != whole->dims[axis]) return RLT_STATUS_OK;
    rlt_fast_op *op;
    NEW_OP(op, is_split ? FOP_SPLIT : FOP_CONCAT, (size_t)n_parts * sizeof(part));
    part *parts = (part *)op->extra;
    for (int i = 0; i < n_parts; i++) {
        const rlt_graph_tensor *t = is_split ? tout(g, n, i) : tin(g, n, i);
        parts[i] = (part){.tensor = is_split ? n->outputs[i] : n->inputs[i], .chunk_bytes = t->dims[axis] * inner};
    }
    op->u.parts = (parts_plan){.outer = outer, .n_parts = n_parts, .parts = parts};
    *out = op;
    return RLT_STATUS_OK;
}

static void run_parts(const rlt_fast_op *op, void *const *vals)
{
    const parts_plan *p = &op->u.parts;
    bool is_split = op->kind == FOP_SPLIT;
    char *whole = vals[is_split ? op->x : op->y];
    for (int64_t b = 0; b < p->outer; b++)
        for (int i = 0; i < p->n_parts; i++) {
            int64_t chunk = p->parts[i].chunk_bytes;
            if (chunk == 0) continue;
            char *part_at = (char *)vals[p->parts[i].tensor] + b * chunk;
            if (is_split) memcpy(part_at, whole, (size_t)chunk);
            else memcpy(whole, part_at, (size_t)chunk);
            whole += chunk;
        }
}

/* ---- views and copies --------------------------------------------------------------- */

static bool is_view_op(const char *t)
{
    return strcmp(t, "Reshape") == 0 || strcmp(t, "Flatten") == 0 || strcmp(t, "Squeeze") == 0 ||
           strcmp(t, "Unsqueeze") == 0 || strcmp(t, "Identity") == 0;
}

/* Output 0 holds input 0's bytes. */
static bool same_bytes(const rlt_graph *g, const rlt_graph_node *n)
{
    const rlt_graph_tensor *x = tin(g, n, 0), *y = tout(g, n, 0);
    return x && y && x->dtype == y->dtype && n_elems(x) == n_elems(y) && rlt_dtype_size(x->dtype) > 0;
}

bool rlt_fast_op_is_view(const rlt_graph *g, int node)
{
    if (node < 0 || node >= g->n_nodes) return false;
    const rlt_graph_node *n = &g->nodes[node];
    if (n->is_removed || !io_ok(g, n) || !same_bytes(g, n)) return false;
    if (is_view_op(n->op_type)) return true;
    return strcmp(n->op_type, "Dropout") == 0 && !tout(g, n, 1);
}

static rlt_status plan_bytes(const rlt_graph *g, const rlt_graph_node *n, rlt_fast_op **out)
{
    if (!same_bytes(g, n)) return RLT_STATUS_OK;
    const rlt_graph_tensor *x = tin(g, n, 0), *mask = tout(g, n, 1);
    if (mask && strcmp(n->op_type, "Dropout") != 0) return RLT_STATUS_OK;
    rlt_fast_op *op;
    NEW_OP(op, FOP_BYTES, 0);
    op->n = n_elems(x) * (int64_t)rlt_dtype_size(x->dtype);
    op->n2 = mask ? n_elems(mask) : 0;
    op->fn = mask ? (int)mask->dtype : 0;
    if (!mask) op->y2 = -1;
    *out = op;
    return RLT_STATUS_OK;
}

/* Dropout's mask in inference: every element kept, 1 of the mask's type
 * (bool from opset 10, the input's type before). */
static void fill_ones(void *mask, rlt_dtype dtype, int64_t n)
{
    switch (dtype) {
    case RLT_DTYPE_FLOAT32:
        for (int64_t i = 0; i < n; i++) ((float *)mask)[i] = 1.0f;
        break;
    case RLT_DTYPE_INT64:
        for (int64_t i = 0; i < n; i++) ((int64_t *)mask)[i] = 1;
        break;
    case RLT_DTYPE_INT32:
        for (int64_t i = 0; i < n; i++) ((int32_t *)mask)[i] = 1;
        break;
    default:
        if (n > 0) memset(mask, 1, (size_t)n);
        break;
    }
}

/* ---- the entry points ------------------------------------------------------------- */

typedef rlt_status (*plan_fn)(const rlt_graph *g, const rlt_graph_node *n, rlt_fast_op **out);

static rlt_status plan_concat(const rlt_graph *g, const rlt_graph_node *n, rlt_fast_op **out)
{
    return plan_parts(g, n, false, out);
}

static rlt_status plan_split(const rlt_graph *g, const rlt_graph_node *n, rlt_fast_op **out)
{
    return plan_parts(g, n, true, out);
}

/* Cast to the input's own type: a copy; the conversions are the
 * evaluator's. */
static rlt_status plan_cast(const rlt_graph *g, const rlt_graph_node *n, rlt_fast_op **out)
{
    return plan_bytes(g, n, out);
}

static const struct {
    const char *op_type;
    plan_fn plan;
} plans[] = {
    {"Add", plan_binary},
    {"AveragePool", plan_pool},
    {"Cast", plan_cast},
    {"Clip", plan_unary},
    {"Concat", plan_concat},
    {"Div", plan_binary},
    {"Dropout", plan_bytes},
    {"Erf", plan_unary},
    {"Flatten", plan_bytes},
    {"Gelu", plan_unary},
    {"GlobalAveragePool", plan_global_pool},
    {"Identity", plan_bytes},
    {"LayerNormalization", plan_layernorm},
    {"LeakyRelu", plan_unary},
    {"MaxPool", plan_pool},
    {"Mul", plan_binary},
    {"Pow", plan_binary},
    {"ReduceMean", plan_reduce_mean},
    {"Relu", plan_unary},
    {"Reshape", plan_bytes},
    {"Sigmoid", plan_unary},
    {"Slice", plan_slice},
    {"Softmax", plan_softmax},
    {"Split", plan_split},
    {"Sqrt", plan_unary},
    {"Squeeze", plan_bytes},
    {"Sub", plan_binary},
    {"Tanh", plan_unary},
    {"Transpose", plan_transpose},
    {"Unsqueeze", plan_bytes},
};

rlt_status rlt_fast_op_create(const rlt_graph *g, int node, rlt_fast_op **out, rlt_diag *diag)
{
    *out = NULL;
    RLT_ASSERT(node >= 0 && node < g->n_nodes);
    const rlt_graph_node *n = &g->nodes[node];
    if (n->is_removed || !io_ok(g, n)) return RLT_STATUS_OK;
    for (size_t i = 0; i < RLT_ARRAY_LEN(plans); i++) {
        if (strcmp(plans[i].op_type, n->op_type) != 0) continue;
        rlt_status st = plans[i].plan(g, n, out);
        if (st != RLT_STATUS_OK)
            return rlt_graph_node_fail(g, n, diag, st, "out of memory planning its fast implementation");
        return RLT_STATUS_OK;
    }
    return RLT_STATUS_OK;
}

/* The ops that compute, built twice (see the top of the file). */
FOP_INLINE void run_compute(const rlt_fast_op *op, void *const *vals)
{
    const float *x = vals[op->x];
    float *y = vals[op->y];
    switch (op->kind) {
    case FOP_UNARY: run_unary(op, x, y); break;
    case FOP_BINARY: run_binary(op, x, vals[op->x2], y); break;
    case FOP_POOL: run_pool(op, x, y); break;
    case FOP_GLOBAL_POOL:
    case FOP_REDUCE_MEAN: run_means(&op->u.rows, x, y); break;
    case FOP_SOFTMAX: run_softmax(&op->u.rows, x, y); break;
    case FOP_LAYERNORM: {
        const rows_plan *p = &op->u.rows;
        const float *scale = p->scale_c ? p->scale_c : p->scale >= 0 ? vals[p->scale] : NULL;
        const float *bias = p->bias_c ? p->bias_c : p->bias >= 0 ? vals[p->bias] : NULL;
        run_layernorm(p, x, y, scale, bias);
        break;
    }
    default: break;
    }
}

static void run_compute_baseline(const rlt_fast_op *op, void *const *vals) { run_compute(op, vals); }

#ifdef FOP_HAS_X86
__attribute__((target("avx2"))) static void run_compute_avx2(const rlt_fast_op *op, void *const *vals)
{
    run_compute(op, vals);
}

__attribute__((target("avx512f"))) static void run_compute_avx512f(const rlt_fast_op *op, void *const *vals)
{
    run_compute(op, vals);
}
#endif

void rlt_fast_op_run(const rlt_fast_op *op, void *const *vals)
{
    const void *x = vals[op->x];
    void *y = vals[op->y];
    switch (op->kind) {
    case FOP_BYTES:
        if (y != x && op->n > 0) memcpy(y, x, (size_t)op->n);
        if (op->y2 >= 0) fill_ones(vals[op->y2], (rlt_dtype)op->fn, op->n2);
        break;
    case FOP_COPY: run_copy(&op->u.copy, x, y); break;
    case FOP_CONCAT:
    case FOP_SPLIT: run_parts(op, vals); break;
    default:
#ifdef FOP_HAS_X86
        if (op->isa == ISA_AVX512F) {
            run_compute_avx512f(op, vals);
            break;
        }
        if (op->isa == ISA_AVX2) {
            run_compute_avx2(op, vals);
            break;
        }
#endif
        run_compute_baseline(op, vals);
        break;
    }
}

void rlt_fast_op_destroy(rlt_fast_op *op) { rlt_free(op); }
