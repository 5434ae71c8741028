/*
 * ops_run.c - runs the plans of a compiled network's fast ops (ops_run.h):
 * rlt_fast_op_run dispatches on the plan's kind to contiguous loops the
 * compiler vectorises. The plans are made by src/net/ops.c
 * (rlt_fast_op_create), which also says how each op is planned.
 *
 * Needs the C library and nothing of rltune: `rltune export --model`
 * writes this file and ops_run.h verbatim into the libraries it exports.
 *
 * The library is built for the baseline ISA (SSE2 on x86-64). The loops
 * that compute (unary, binary, pools, the row reductions) are written once
 * as inline bodies and compiled three times on x86: as they are, and
 * inside functions with target("avx2") and target("avx512f"), of which the
 * plan's isa picks one (8 or 16 lanes instead of 4: 2-4x on the maths). No
 * FMA and no reassociation in any (C11 mode does not contract; the
 * reductions' partial sums are spelled out), so all give the same bits.
 * One row kind has intrinsics of its own, which only the AVX-512 build
 * calls: a 3-wide, stride-2 MaxPool's (pool_row_3s2_avx512). The data
 * movement is memory-bound and compiled once.
 */
#include "ops_run.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#define FOP_MIN(a, b) ((a) < (b) ? (a) : (b))

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
#include <immintrin.h>
#endif

/* GNU C vector types (not intrinsics: the compiler maps them to the ISA at
 * hand, two SSE registers or one AVX register) for the reductions, whose
 * partial sums must stay in registers across iterations. */
typedef float v8f __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
typedef double v4d __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

/* The floats of op's table at byte offset `off` of extra[]. */
static inline const float *fop_table(const rlt_fast_op *op, int64_t off)
{
    return (const float *)(const void *)((const char *)op->extra + off);
}

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

/* ---- unary ---------------------------------------------------------------------- */

FOP_INLINE void run_unary(const rlt_fast_op *op, const float *restrict x, float *restrict y, int64_t n)
{
    float p0 = op->p0, p1 = op->p1;
    switch (op->fn) {
    case FOP_UN_RELU:
        for (int64_t i = 0; i < n; i++) y[i] = x[i] < 0.0f ? 0.0f : x[i];
        break;
    case FOP_UN_CLIP:
        for (int64_t i = 0; i < n; i++) {
            float v = x[i] < p0 ? p0 : x[i];
            y[i] = v > p1 ? p1 : v;
        }
        break;
    case FOP_UN_LEAKY_RELU:
        for (int64_t i = 0; i < n; i++) y[i] = x[i] < 0.0f ? p0 * x[i] : x[i];
        break;
    case FOP_UN_SIGMOID:
        for (int64_t i = 0; i < n; i++) y[i] = sigmoid_f(x[i]);
        break;
    case FOP_UN_TANH:
        for (int64_t i = 0; i < n; i++) y[i] = tanh_f(x[i]);
        break;
    case FOP_UN_ERF:
        for (int64_t i = 0; i < n; i++) y[i] = erf_f(x[i]);
        break;
    case FOP_UN_SQRT:
        for (int64_t i = 0; i < n; i++) y[i] = sqrtf(x[i]);
        break;
    case FOP_UN_GELU:
        for (int64_t i = 0; i < n; i++) y[i] = 0.5f * x[i] * (1.0f + erf_f(x[i] * 0.70710678118654752f));
        break;
    case FOP_UN_GELU_TANH:
        /* 0.5 v (1 + tanh(u)) = v sigmoid(2u), u = sqrt(2/pi) (v + 0.044715 v^3) */
        for (int64_t i = 0; i < n; i++) {
            float v = x[i];
            float u2 = 1.5957691216057308f * (v + 0.044715f * v * v * v);
            y[i] = v * sigmoid_f(u2);
        }
        break;
    case FOP_UN_SQUARE:
        for (int64_t i = 0; i < n; i++) y[i] = x[i] * x[i];
        break;
    case FOP_UN_CUBE:
        for (int64_t i = 0; i < n; i++) y[i] = (float)((double)x[i] * (double)x[i] * (double)x[i]);
        break;
    case FOP_UN_POW:
        for (int64_t i = 0; i < n; i++) y[i] = powf(x[i], p0);
        break;
    }
}

/* ---- binary with broadcasting ------------------------------------------------------ */

/* One inner row: A(i) and B(i) read the operands (a vector or a value). */
#define BINARY_ROW(A, B)                                                                                     \
    switch (fn) {                                                                                            \
    case FOP_BIN_ADD:                                                                                            \
        for (int64_t i = 0; i < n; i++) y[i] = (A) + (B);                                                    \
        break;                                                                                               \
    case FOP_BIN_SUB:                                                                                            \
        for (int64_t i = 0; i < n; i++) y[i] = (A) - (B);                                                    \
        break;                                                                                               \
    case FOP_BIN_MUL:                                                                                            \
        for (int64_t i = 0; i < n; i++) y[i] = (A) * (B);                                                    \
        break;                                                                                               \
    case FOP_BIN_DIV:                                                                                            \
        for (int64_t i = 0; i < n; i++) y[i] = (A) / (B);                                                    \
        break;                                                                                               \
    case FOP_BIN_POW:                                                                                            \
        for (int64_t i = 0; i < n; i++) y[i] = powf((A), (B));                                               \
        break;                                                                                               \
    }

FOP_INLINE void binary_vv(int fn, float *restrict y, const float *restrict a, const float *restrict b, int64_t n)
{
    BINARY_ROW(a[i], b[i])
}

FOP_INLINE void binary_vs(int fn, float *restrict y, const float *restrict a, float s, int64_t n)
{
    BINARY_ROW(a[i], s)
}

FOP_INLINE void binary_sv(int fn, float *restrict y, float s, const float *restrict b, int64_t n)
{
    BINARY_ROW(s, b[i])
}

/* Rows [r0, r1) of the output (rows of the collapsed inner dimension). */
FOP_INLINE void run_binary(const rlt_fast_op *op, const float *a, const float *b, float *y, int64_t r0, int64_t r1)
{
    const fop_bcast *p = &op->u.bcast;
    int fn = op->fn;
    if (p->total == 0) return;
    int in = p->rank - 1;
    int64_t n = p->dims[in];
    bool a_vec = p->sa[in] != 0 || n == 1, b_vec = p->sb[in] != 0 || n == 1;
    int64_t idx[RLT_FAST_OP_MAX_RANK] = {0}, ao = 0, bo = 0;
    /* the odometer at row r0 */
    for (int64_t d = in - 1, q = r0; d >= 0; d--) {
        idx[d] = q % p->dims[d];
        q /= p->dims[d];
        ao += idx[d] * p->sa[d];
        bo += idx[d] * p->sb[d];
    }
    y += r0 * n;
    for (int64_t r = r0; r < r1; r++, y += n) {
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

FOP_INLINE void pool_row_interior(const fop_pool *p, float *restrict y, const float *restrict r, int64_t n, bool first)
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
FOP_INLINE float pool_one(const fop_pool *p, const float *xc, int64_t h0, int64_t ow)
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

/* dst[0..n) = the n_rows kernel rows from a (row_step apart) reduced
 * column by column: their max or their sum, in row order (the 3x3
 * window's three rows in one pass). */
FOP_INLINE void pool_reduce_rows(const fop_pool *p, float *restrict dst, const float *a, int64_t row_step,
                                 int64_t n_rows, int64_t n)
{
    const float *restrict r0 = a;
    if (n_rows == 1) {
        for (int64_t j = 0; j < n; j++) dst[j] = r0[j];
        return;
    }
    const float *restrict r1 = a + row_step;
    if (n_rows == 3) {
        const float *restrict r2 = r1 + row_step;
        if (p->is_max)
            for (int64_t j = 0; j < n; j++) {
                float m = r1[j] > r0[j] ? r1[j] : r0[j];
                dst[j] = r2[j] > m ? r2[j] : m;
            }
        else
            for (int64_t j = 0; j < n; j++) dst[j] = (r0[j] + r1[j]) + r2[j];
        return;
    }
    if (p->is_max)
        for (int64_t j = 0; j < n; j++) dst[j] = r1[j] > r0[j] ? r1[j] : r0[j];
    else
        for (int64_t j = 0; j < n; j++) dst[j] = r0[j] + r1[j];
    for (int64_t k = 2; k < n_rows; k++) {
        const float *restrict r = a + k * row_step;
        if (p->is_max)
            for (int64_t j = 0; j < n; j++) dst[j] = r[j] > dst[j] ? r[j] : dst[j];
        else
            for (int64_t j = 0; j < n; j++) dst[j] += r[j];
    }
}

/* The interior of one output row, [ow_lo, ow_hi), from its kernel rows
 * (the first at r0, `n_rows` of them `row_step` apart): separably, the
 * kernel rows reduced into a row on the stack (contiguous loops), then
 * that row across the window (strided), in chunks of outputs whose input
 * span fits it; with one kernel row (or a window too wide for the stack
 * row), straight from the input rows. */
FOP_INLINE void pool_interior(const fop_pool *p, float *restrict y, const float *r0, int64_t row_step, int64_t n_rows)
{
    int64_t n_in = p->ow_hi - p->ow_lo, chunk = p->chunk;
    if (n_rows == 1 || chunk == 0) { /* one kernel row, or a window wider than tmp */
        for (int64_t k = 0; k < n_rows; k++) pool_row_interior(p, y, r0 + k * row_step, n_in, k == 0);
        return;
    }
    float tmp[RLT_FAST_OP_POOL_TMP];
    for (int64_t i0 = 0; i0 < n_in; i0 += chunk) {
        int64_t nb = FOP_MIN(chunk, n_in - i0), span = (nb - 1) * p->sw + (p->kw - 1) * p->dw + 1;
        pool_reduce_rows(p, tmp, r0 + i0 * p->sw, row_step, n_rows, span);
        pool_row_interior(p, y + i0, tmp, nb, true);
    }
}

/* One output row whole (fop_pool.padded_row): its kernel rows inside the
 * input (n_rows of them from r, row_step apart) reduced into the stack row
 * `tmp`, whose pads (tmp[k] is input column k - pw) the caller filled once
 * with -inf for MaxPool, 0 for AveragePool (the same as leaving the tap
 * out, since every window holds a tap of the input), then that row across
 * the windows, every output alike. */
FOP_INLINE void pool_padded_row(const fop_pool *p, float *restrict y, float *restrict tmp, int64_t n_cols,
                                const float *r, int64_t row_step, int64_t n_rows)
{
    pool_reduce_rows(p, tmp + p->pw, r, row_step, n_rows, n_cols);
    pool_row_interior(p, y, tmp, p->ow, true);
}

/* ---- MaxPool 3 wide, stride 2, in AVX-512 registers ------------------------------ */

#ifdef FOP_HAS_X86
#define FOP_AVX512 __attribute__((target("avx512f"))) static inline

/* Columns [16 j, 16 j + 16) of the n_rows (1-3) kernel rows from r,
 * row_step apart, reduced as pool_reduce_rows does (b > a ? b : a in the
 * same order, which _mm512_max_ps(b, a) is to the bit, NaN and signed
 * zeros included); the columns from n_cols on are -inf (the right pads,
 * and nothing past the row is read: masked loads). */
FOP_AVX512 __m512 pool_cols16(const float *r, int64_t row_step, int64_t n_rows, int64_t n_cols, int64_t j)
{
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    int64_t c = 16 * j, left = n_cols - 16 * j;
    if (left <= 0) return ninf;
    __mmask16 k = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
    __m512 m = _mm512_mask_loadu_ps(ninf, k, r + c);
    if (n_rows > 1) m = _mm512_max_ps(_mm512_mask_loadu_ps(ninf, k, r + row_step + c), m);
    if (n_rows > 2) m = _mm512_max_ps(_mm512_mask_loadu_ps(ninf, k, r + 2 * row_step + c), m);
    return m;
}

/* The 16 floats from lane `by` of a:b (a first). */
#define FOP_SHIFT16(b, a, by) \
    _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(b), _mm512_castps_si512(a), (by)))

/* One output row of a MaxPool 3 wide with stride 2 whose padded row (pw
 * = 0 or 1 pads on the left, -inf) holds n_cols input columns, from its
 * n_rows kernel rows: the padded row's 16-column pieces t[j] made in
 * registers as they are needed, y[i] = max(t[2i], t[2i + 1], t[2i + 2])
 * (max_row3_first's order) 16 at a time, the last piece stored masked. No
 * tails, no stack row (whose store and reload at another offset the CPU
 * cannot forward), nothing read or written outside the rows. */
__attribute__((target("avx512f"))) static void pool_row_3s2_avx512(float *restrict y, int64_t ow, const float *r,
                                                                   int64_t row_step, int64_t n_rows, int64_t n_cols,
                                                                   int64_t pw)
{
    const __m512i evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odds = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    __m512 prev = _mm512_set1_ps(-INFINITY), v;
    int64_t j = 0;
    /* t[j]: columns [16 j - pw, 16 j - pw + 16) */
#define FOP_NEXT_PIECE(t)                                             \
    do {                                                              \
        v = pool_cols16(r, row_step, n_rows, n_cols, j++);            \
        (t) = pw ? FOP_SHIFT16(v, prev, 15) : v;                      \
        prev = v;                                                     \
    } while (0)
    __m512 t0, t1, t2;
    FOP_NEXT_PIECE(t0);
    for (int64_t i = 0; i < ow; i += 16) {
        FOP_NEXT_PIECE(t1);
        FOP_NEXT_PIECE(t2);
        __m512 e = _mm512_permutex2var_ps(t0, evens, t1), o = _mm512_permutex2var_ps(t0, odds, t1);
        __m512 e2 = _mm512_permutex2var_ps(FOP_SHIFT16(t1, t0, 2), evens, FOP_SHIFT16(t2, t1, 2));
        __m512 m = _mm512_max_ps(e2, _mm512_max_ps(o, e));
        if (ow - i >= 16) _mm512_storeu_ps(y + i, m);
        else _mm512_mask_storeu_ps(y + i, (__mmask16)((1u << (ow - i)) - 1), m);
        t0 = t2;
    }
#undef FOP_NEXT_PIECE
}
#endif

/* Planes [c0, c1) by padded rows (fop_pool.padded_row): twice as fast as
 * the edges apart on ResNet's and SqueezeNet's 3x3 MaxPools, whose rows
 * of 13-56 outputs leave little to share a row's fixed costs. Their
 * MaxPools (3 wide, stride 2, at most one pad on the left) go further in
 * the AVX-512 build: pool_row_3s2_avx512, in registers. */
FOP_INLINE void run_pool_padded(const rlt_fast_op *op, const float *x, float *y, int64_t c0, int64_t c1, int isa)
{
    const fop_pool *p = &op->u.pool;
    float tmp[RLT_FAST_OP_POOL_TMP] __attribute__((aligned(64)));
    float fill = p->is_max ? -INFINITY : 0.0f;
    int64_t span = (p->ow - 1) * p->sw + p->kw;   /* the row's windows reach tmp[span - 1] */
    int64_t n_cols = FOP_MIN(p->iw, span - p->pw); /* input columns [0, n_cols) land in tmp */
    bool is_3s2 = false; /* pool_row_3s2_avx512 */
#ifdef FOP_HAS_X86
    is_3s2 = isa == FOP_ISA_AVX512F && p->is_max && p->kw == 3 && p->sw == 2 && p->pw <= 1;
#else
    (void)isa;
#endif
    for (int64_t k = 0; k < p->pw; k++) tmp[k] = fill;
    for (int64_t k = p->pw + n_cols; k < span; k++) tmp[k] = fill;
    int64_t last_h = (p->kh - 1) * p->dh;
    y += c0 * p->oh * p->ow;
    for (int64_t c = c0; c < c1; c++) {
        const float *xc = x + c * p->ih * p->iw;
        for (int64_t oh = 0; oh < p->oh; oh++, y += p->ow) {
            int64_t h0 = oh * p->sh - p->ph, k_first = 0, n_rows = p->kh;
            if (h0 < 0 || h0 + last_h >= p->ih) { /* a top or bottom row: the kernel rows inside */
                k_first = -1, n_rows = 0;
                for (int64_t kh = 0; kh < p->kh; kh++) {
                    int64_t i = h0 + kh * p->dh;
                    if (i < 0 || i >= p->ih) continue;
                    if (k_first < 0) k_first = kh;
                    n_rows = kh - k_first + 1;
                }
            }
            const float *r = n_rows > 0 ? xc + (h0 + k_first * p->dh) * p->iw : NULL;
#ifdef FOP_HAS_X86
            if (is_3s2 && n_rows > 0 && n_rows <= 3) {
                pool_row_3s2_avx512(y, p->ow, r, p->dh * p->iw, n_rows, n_cols, p->pw);
                continue; /* a MaxPool's row is done */
            }
#endif
            if (n_rows > 0) {
                pool_padded_row(p, y, tmp, n_cols, r, p->dh * p->iw, n_rows);
            } else { /* no kernel row inside the input: empty windows */
                for (int64_t ow = 0; ow < p->ow; ow++) y[ow] = p->is_max ? -FLT_MAX : 0.0f;
            }
            if (!p->is_max) {
                float dh = fop_table(op, p->div_h)[oh];
                const float *restrict dw = fop_table(op, p->div_w);
                for (int64_t ow = 0; ow < p->ow; ow++) {
                    float dv = dh * dw[ow];
                    y[ow] = dv > 0.0f ? y[ow] / dv : 0.0f;
                }
            }
        }
    }
}

/* One blocked output: the max or the sum of the window's taps inside the
 * input, L lanes at once, in pool_one's order; `seen` whether any tap was. */
FOP_INLINE bool pool_blocked_taps(const fop_pool *p, const float *xc, int64_t h0, int64_t w0, float *acc,
                                  const int64_t L, const bool is_max)
{
    bool seen = false;
    for (int64_t l = 0; l < L; l++) acc[l] = is_max ? -INFINITY : 0.0f;
    for (int64_t kh = 0; kh < p->kh; kh++) {
        int64_t i = h0 + kh * p->dh;
        if (i < 0 || i >= p->ih) continue;
        for (int64_t kw = 0; kw < p->kw; kw++) {
            int64_t j = w0 + kw * p->dw;
            if (j < 0 || j >= p->iw) continue;
            const float *restrict v = xc + (i * p->iw + j) * L;
            seen = true;
            for (int64_t l = 0; l < L; l++) acc[l] = is_max ? (v[l] > acc[l] ? v[l] : acc[l]) : acc[l] + v[l];
        }
    }
    return seen;
}

/* NCHWc: channel blocks [c0, c1), each [ih][iw][L] (L lanes innermost).
 * Every output is L lanes at once: the max or the sum of its window's taps
 * inside the input, in pool_one's order (the same sums; a max that meets
 * NaN may keep another value), then AveragePool's divisor. Outputs whose
 * windows lie inside the input (rows [oh_lo, oh_hi), columns [ow_lo,
 * ow_hi)) take every tap without a check, 8 lanes at a time (L a multiple of 8); the others check each.
 * L and is_max are constants where the callers inline it, so the lanes
 * are one vector. */
FOP_INLINE void pool_blocked(const rlt_fast_op *op, const float *x, float *y, int64_t c0, int64_t c1,
                             const int64_t L, const bool is_max)
{
    const fop_pool *p = &op->u.pool;
    const float *dw = is_max ? NULL : fop_table(op, p->div_w);
    int64_t oh_lo = FOP_MIN((p->ph + p->sh - 1) / p->sh, p->oh);
    int64_t last = p->ih - 1 - (p->kh - 1) * p->dh + p->ph; /* oh * sh <= last */
    int64_t oh_hi = last < 0 ? 0 : FOP_MIN(last / p->sh + 1, p->oh);
    if (oh_hi < oh_lo) oh_hi = oh_lo;
    for (int64_t c = c0; c < c1; c++) {
        const float *xc = x + c * p->ih * p->iw * L;
        float *yc = y + c * p->oh * p->ow * L;
        for (int64_t oh = 0; oh < p->oh; oh++) {
            int64_t h0 = oh * p->sh - p->ph;
            float dh = is_max ? 1.0f : fop_table(op, p->div_h)[oh];
            bool is_inner_row = oh >= oh_lo && oh < oh_hi;
            for (int64_t ow = 0; ow < p->ow; ow++) {
                int64_t w0 = ow * p->sw - p->pw;
                float *restrict o = yc + (oh * p->ow + ow) * L;
                if (is_inner_row && ow >= p->ow_lo && ow < p->ow_hi && L % 8 == 0) {
                    /* every tap inside: 8 lanes at a time in registers (an
                     * accumulator on the stack would wait on its own store
                     * at every tap) */
                    const float *base = xc + (h0 * p->iw + w0) * L;
                    float dv = is_max ? 1.0f : dh * dw[ow];
                    for (int64_t l0 = 0; l0 < L; l0 += 8) {
                        v8f a, v;
                        memcpy(&a, base + l0, sizeof a);
                        if (!is_max) a = (v8f){0} + a; /* +0 + -0 is +0, as pool_one's sum */
                        for (int64_t kh = 0; kh < p->kh; kh++)
                            for (int64_t kw = kh == 0; kw < p->kw; kw++) {
                                memcpy(&v, base + (kh * p->dh * p->iw + kw * p->dw) * L + l0, sizeof v);
                                a = is_max ? VMAX(v, a) : a + v;
                            }
                        if (!is_max) a = dv > 0.0f ? a / dv : (v8f){0};
                        memcpy(o + l0, &a, sizeof a);
                    }
                    continue;
                }
                float acc[RLT_FAST_OP_MAX_LANES];
                bool seen = pool_blocked_taps(p, xc, h0, w0, acc, L, is_max);
                if (is_max) {
                    for (int64_t l = 0; l < L; l++) o[l] = seen ? acc[l] : -FLT_MAX;
                } else {
                    float dv = dh * dw[ow];
                    for (int64_t l = 0; l < L; l++) o[l] = dv > 0.0f ? acc[l] / dv : 0.0f;
                }
            }
        }
    }
}

/* Planes (N * C, or N * C / lanes blocked) [c0, c1). */
FOP_INLINE void run_pool(const rlt_fast_op *op, const float *x, float *y, int64_t c0, int64_t c1, int isa)
{
    const fop_pool *p = &op->u.pool;
    if (p->lanes) {
        if (p->lanes == 16 && p->is_max) pool_blocked(op, x, y, c0, c1, 16, true);
        else if (p->lanes == 16) pool_blocked(op, x, y, c0, c1, 16, false);
        else if (p->lanes == 8 && p->is_max) pool_blocked(op, x, y, c0, c1, 8, true);
        else if (p->lanes == 8) pool_blocked(op, x, y, c0, c1, 8, false);
        else if (p->is_max) pool_blocked(op, x, y, c0, c1, p->lanes, true);
        else pool_blocked(op, x, y, c0, c1, p->lanes, false);
        return;
    }
    if (p->padded_row) {
        run_pool_padded(op, x, y, c0, c1, isa);
        return;
    }
    int64_t n_in = p->ow_hi - p->ow_lo;
    y += c0 * p->oh * p->ow;
    for (int64_t c = c0; c < c1; c++) {
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
                float dh = fop_table(op, p->div_h)[oh];
                const float *restrict dw = fop_table(op, p->div_w);
                for (int64_t ow = 0; ow < p->ow; ow++) {
                    float dv = dh * dw[ow];
                    y[ow] = dv > 0.0f ? y[ow] / dv : 0.0f;
                }
            }
        }
    }
}

/* ---- rows: Softmax, LayerNormalization, ReduceMean, GlobalAveragePool ----------- */

/* The mean of each block of len floats (NaN for empty blocks, as the
 * evaluator's 0 / 0). */
FOP_INLINE void run_means(const fop_rows *p, const float *x, float *y, int64_t r0, int64_t r1)
{
    if (p->inner == 1) {
        for (int64_t r = r0; r < r1; r++) y[r] = (float)(sum_f64(x + r * p->len, p->len) / (double)p->len);
        return;
    }
    /* [outer, len, inner] (NCHWc's GlobalAveragePool): inner means per row,
     * written [outer, inner], the channels in order */
    for (int64_t r = r0; r < r1; r++) {
        double acc[RLT_FAST_OP_MAX_LANES] = {0};
        const float *xr = x + r * p->len * p->inner;
        for (int64_t j = 0; j < p->len; j++)
            for (int64_t i = 0; i < p->inner; i++) acc[i] += (double)xr[j * p->inner + i];
        for (int64_t i = 0; i < p->inner; i++) y[r * p->inner + i] = (float)(acc[i] / (double)p->len);
    }
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
        int64_t nb = FOP_MIN((int64_t)SOFTMAX_BLOCK, inner - j0);
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

FOP_INLINE void run_softmax(const fop_rows *p, const float *x, float *y, int64_t o0, int64_t o1)
{
    if (p->len == 0) return;
    int64_t block = p->len * p->inner;
    for (int64_t o = o0; o < o1; o++) {
        if (p->inner == 1) softmax_row(x + o * block, y + o * block, p->len);
        else softmax_columns(x + o * block, y + o * block, p->len, p->inner);
    }
}

/* LayerNormalization's scale or bias `t` (input k), broadcast to the
 * normalised dims [rank - axis] of x: len values read from the tensor at
 * run time when it has exactly those (no dimension broadcast), else its
 * constant values expanded into dst (when dst is given; *need says so),
 * else not covered (false). */
FOP_INLINE void run_layernorm(const fop_rows *p, const float *x, float *y, const float *scale, const float *bias,
                              int64_t o0, int64_t o1)
{
    int64_t len = p->len;
    if (len == 0) return;
    for (int64_t o = o0; o < o1; o++) {
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

enum { TILE = 32 };

/* The tiled transpose of one (n_tile x n_inner) block: y[i * ys + j] =
 * x[i + j * xs], in TILE x TILE tiles so that both sides stay in cache. */
#define TILE_COPY(T)                                                                                         \
    do {                                                                                                     \
        const T *restrict xt_ = (const T *)x;                                                                \
        T *restrict yt_ = (T *)y;                                                                            \
        for (int64_t i0 = 0; i0 < ni; i0 += TILE)                                                            \
            for (int64_t j0 = 0; j0 < nj; j0 += TILE) {                                                      \
                int64_t i1 = FOP_MIN(i0 + TILE, ni), j1 = FOP_MIN(j0 + TILE, nj);                            \
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
            int64_t i1 = FOP_MIN(i0 + TILE, ni), j1 = FOP_MIN(j0 + TILE, nj);
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

static void run_copy(const fop_copy *p, const char *x, char *y)
{
    const fop_odo *od = &p->outer;
    size_t es = p->es;
    int64_t idx[RLT_FAST_OP_MAX_RANK] = {0}, xo = p->base, yo = 0;
    for (int64_t o = 0; o < od->count; o++) {
        const char *xp = x + xo * (int64_t)es;
        char *yp = y + yo * (int64_t)es;
        switch (p->mode) {
        case FOP_COPY_RUNS: memcpy(yp, xp, (size_t)p->n_inner * es); break;
        case FOP_COPY_TILE: tile_copy(es, yp, xp, p->n_tile, p->n_inner, p->tile_ys, p->inner_xs); break;
        case FOP_COPY_GATHER: gather_copy(es, yp, xp, p->n_inner, p->inner_xs); break;
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

/* ---- Concat, Split, bytes ---------------------------------------------------------- */

static void run_parts(const rlt_fast_op *op, void *const *vals)
{
    const fop_parts *p = &op->u.parts;
    const fop_part *parts = (const fop_part *)(const void *)((const char *)op->extra + p->parts);
    bool is_split = op->kind == FOP_SPLIT;
    char *whole = vals[is_split ? op->x : op->y];
    for (int64_t b = 0; b < p->outer; b++)
        for (int i = 0; i < p->n_parts; i++) {
            int64_t chunk = parts[i].chunk_bytes;
            if (chunk == 0) continue;
            char *part_at = (char *)vals[parts[i].tensor] + b * chunk;
            if (is_split) memcpy(part_at, whole, (size_t)chunk);
            else memcpy(whole, part_at, (size_t)chunk);
            whole += chunk;
        }
}

/* Dropout's mask in inference: every element kept, 1 of the mask's type
 * (bool from opset 10, the input's type before). */
static void fill_ones(void *mask, int fill, int64_t n)
{
    switch (fill) {
    case FOP_FILL_F32:
        for (int64_t i = 0; i < n; i++) ((float *)mask)[i] = 1.0f;
        break;
    case FOP_FILL_I64:
        for (int64_t i = 0; i < n; i++) ((int64_t *)mask)[i] = 1;
        break;
    case FOP_FILL_I32:
        for (int64_t i = 0; i < n; i++) ((int32_t *)mask)[i] = 1;
        break;
    default:
        if (n > 0) memset(mask, 1, (size_t)n);
        break;
    }
}

/* ---- dispatch ------------------------------------------------------------------- */

/* The ops that compute, built three times on x86 (see the top of the
 * file), over units [lo, hi) of rlt_fast_op_units; isa is the build's (a
 * constant in each), for the code written for one ISA alone. */
FOP_INLINE void run_compute(const rlt_fast_op *op, void *const *vals, int64_t lo, int64_t hi, int isa)
{
    const float *x = vals[op->x];
    float *y = vals[op->y];
    switch (op->kind) {
    case FOP_UNARY: run_unary(op, x + lo, y + lo, hi - lo); break;
    case FOP_BINARY: run_binary(op, x, vals[op->x2], y, lo, hi); break;
    case FOP_POOL: run_pool(op, x, y, lo, hi, isa); break;
    case FOP_GLOBAL_POOL:
    case FOP_REDUCE_MEAN: run_means(&op->u.rows, x, y, lo, hi); break;
    case FOP_SOFTMAX: run_softmax(&op->u.rows, x, y, lo, hi); break;
    case FOP_LAYERNORM: {
        const fop_rows *p = &op->u.rows;
        const float *scale = p->scale_c >= 0 ? fop_table(op, p->scale_c) : p->scale >= 0 ? vals[p->scale] : NULL;
        const float *bias = p->bias_c >= 0 ? fop_table(op, p->bias_c) : p->bias >= 0 ? vals[p->bias] : NULL;
        run_layernorm(p, x, y, scale, bias, lo, hi);
        break;
    }
    default: break;
    }
}

static void run_compute_baseline(const rlt_fast_op *op, void *const *vals, int64_t lo, int64_t hi)
{
    run_compute(op, vals, lo, hi, FOP_ISA_BASELINE);
}

#ifdef FOP_HAS_X86
__attribute__((target("avx2"))) static void run_compute_avx2(const rlt_fast_op *op, void *const *vals, int64_t lo,
                                                             int64_t hi)
{
    run_compute(op, vals, lo, hi, FOP_ISA_AVX2);
}

__attribute__((target("avx512f"))) static void run_compute_avx512f(const rlt_fast_op *op, void *const *vals,
                                                                   int64_t lo, int64_t hi)
{
    run_compute(op, vals, lo, hi, FOP_ISA_AVX512F);
}
#endif

int64_t rlt_fast_op_units(const rlt_fast_op *op)
{
    switch (op->kind) {
    case FOP_UNARY: return op->n;
    case FOP_BINARY:
        return op->u.bcast.total > 0 ? op->u.bcast.total / op->u.bcast.dims[op->u.bcast.rank - 1] : 0;
    case FOP_POOL: return op->u.pool.planes;
    case FOP_GLOBAL_POOL:
    case FOP_REDUCE_MEAN:
    case FOP_SOFTMAX:
    case FOP_LAYERNORM: return op->u.rows.outer;
    default: return 0;
    }
}

void rlt_fast_op_run_range(const rlt_fast_op *op, void *const *vals, int isa, int64_t lo, int64_t hi)
{
    if (lo >= hi) return;
    isa = FOP_MIN(isa, op->isa_max);
#ifdef FOP_HAS_X86
    if (isa == FOP_ISA_AVX512F) {
        run_compute_avx512f(op, vals, lo, hi);
        return;
    }
    if (isa == FOP_ISA_AVX2) {
        run_compute_avx2(op, vals, lo, hi);
        return;
    }
#endif
    run_compute_baseline(op, vals, lo, hi);
}

void rlt_fast_op_run(const rlt_fast_op *op, void *const *vals) { rlt_fast_op_run_isa(op, vals, op->isa); }

void rlt_fast_op_run_isa(const rlt_fast_op *op, void *const *vals, int isa)
{
    const void *x = vals[op->x];
    void *y = vals[op->y];
    switch (op->kind) {
    case FOP_BYTES:
        if (y != x && op->n > 0) memcpy(y, x, (size_t)op->n);
        if (op->y2 >= 0) fill_ones(vals[op->y2], op->fn, op->n2);
        break;
    case FOP_COPY: run_copy(&op->u.copy, x, y); break;
    case FOP_CONCAT:
    case FOP_SPLIT: run_parts(op, vals); break;
    default: rlt_fast_op_run_range(op, vals, isa, 0, rlt_fast_op_units(op)); break;
    }
}

int rlt_fast_op_threads(const rlt_fast_op *op, int n_threads)
{
    int64_t units = rlt_fast_op_units(op);
    if (n_threads <= 1 || units < 2) return 1;
    /* the output's elements, to weigh the work against the cost of waking
     * the other threads (a few microseconds) */
    int64_t elems = op->kind == FOP_UNARY ? op->n : op->kind == FOP_BINARY ? op->u.bcast.total
                                                : op->kind == FOP_POOL   ? op->u.pool.planes * op->u.pool.oh * op->u.pool.ow *
                                                                               (op->u.pool.lanes ? op->u.pool.lanes : 1)
                                                                         : op->u.rows.outer * op->u.rows.len * op->u.rows.inner;
    if (elems < RLT_FAST_OP_PARALLEL_ELEMS) return 1;
    return (int)FOP_MIN((int64_t)n_threads, units);
}

void rlt_fast_op_run_threads(const rlt_fast_op *op, void *const *vals, int isa, int n_threads)
{
    int n = rlt_fast_op_threads(op, n_threads);
    if (n <= 1) {
        rlt_fast_op_run_isa(op, vals, isa);
        return;
    }
    int64_t units = rlt_fast_op_units(op), grain = op->kind == FOP_UNARY ? 16 : 1;
#ifdef _OPENMP
#pragma omp parallel for num_threads(n) schedule(static)
#endif
    for (int t = 0; t < n; t++) {
        /* equal shares, unary's on whole vectors */
        int64_t lo = units * t / n / grain * grain, hi = t + 1 == n ? units : units * (t + 1) / n / grain * grain;
        rlt_fast_op_run_range(op, vals, isa, lo, hi);
    }
}

int rlt_fast_op_cpu_isa(void)
{
    int isa = FOP_ISA_BASELINE;
#ifdef FOP_HAS_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) isa = FOP_ISA_AVX512F;
    else if (__builtin_cpu_supports("avx2")) isa = FOP_ISA_AVX2;
#endif
    return isa;
}

const char *rlt_fast_op_isa_name(int isa)
{
    static const char *const names[FOP_ISA_COUNT] = {"baseline", "avx2", "avx512f"};
    return isa >= 0 && isa < FOP_ISA_COUNT ? names[isa] : "?";
}
