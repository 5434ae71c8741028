/*
 * ops_run.h - the run-time half of a compiled network's fast ops (ops.h):
 * the plan of one op, as src/net/ops.c makes it when a network is compiled,
 * and the function that runs it. Self-contained on purpose: this header and
 * ops_run.c need the C library and nothing of rltune, so that
 * `rltune export --model` writes these two files, verbatim, into the
 * stand-alone library it exports (rltune embeds their text at build time:
 * CMakeLists.txt, "ops_run_text.h"). One source for both.
 *
 * A plan is one flat block: the struct, then its tables (extra[]). It holds
 * no pointers (tables are byte offsets into extra[], tensors are indices
 * into the caller's value array), so the block may be copied byte for byte,
 * written to a file and run where it is read back: an exported network
 * keeps its fast ops in its weights file. Every field has a fixed width, so
 * the layout is the same for every C compiler of the platform's ABI; its
 * version is RLT_FAST_OP_LAYOUT (a block of another layout must not run).
 *
 * Threads: a plan is read-only while running; several threads may run the
 * same plan at once on different buffers.
 */
#ifndef RLT_NET_OPS_RUN_H
#define RLT_NET_OPS_RUN_H

#include <stdint.h>

/* The version of the plan's layout below: any change to a field, an enum's
 * values or the meaning of a table bumps it. 1: the first. 2: pools and
 * GlobalAveragePool on blocked channels (fop_pool.lanes, fop_rows.inner). */
#define RLT_FAST_OP_LAYOUT 2

#define RLT_FAST_OP_MAX_RANK 8 /* dimensions of a tensor (the graph's RLT_GRAPH_MAX_RANK) */

enum { RLT_FAST_OP_POOL_TMP = 1024 }; /* floats of a pool's row on the stack */
enum { RLT_FAST_OP_MAX_LANES = 64 }; /* channels of a block (NCHWc) the pools and GlobalAveragePool take */

/* The kinds of plans. */
enum {
    FOP_BYTES = 0, /* copy n bytes (a view run as a copy); Dropout's mask set */
    FOP_UNARY,
    FOP_BINARY,
    FOP_POOL,
    FOP_GLOBAL_POOL,
    FOP_SOFTMAX,
    FOP_LAYERNORM,
    FOP_REDUCE_MEAN,
    FOP_COPY, /* Transpose, Slice */
    FOP_CONCAT,
    FOP_SPLIT,
};

/* FOP_UNARY's functions. */
enum {
    FOP_UN_RELU = 0,
    FOP_UN_CLIP,
    FOP_UN_LEAKY_RELU,
    FOP_UN_SIGMOID,
    FOP_UN_TANH,
    FOP_UN_ERF,
    FOP_UN_SQRT,
    FOP_UN_GELU,
    FOP_UN_GELU_TANH,
    FOP_UN_SQUARE, /* Pow by 2 */
    FOP_UN_CUBE,   /* Pow by 3 */
    FOP_UN_POW,    /* Pow by another constant */
};

/* FOP_BINARY's functions. */
enum { FOP_BIN_ADD = 0, FOP_BIN_SUB, FOP_BIN_MUL, FOP_BIN_DIV, FOP_BIN_POW };

/* FOP_BYTES: the element type of Dropout's mask (all ones). */
enum { FOP_FILL_F32 = 0, FOP_FILL_I64, FOP_FILL_I32, FOP_FILL_BYTE };

/* The builds of the compute loops, in order of preference. */
enum { FOP_ISA_BASELINE = 0, FOP_ISA_AVX2, FOP_ISA_AVX512F, FOP_ISA_COUNT };

/* FOP_COPY's inner loops. */
enum {
    FOP_COPY_RUNS = 0, /* the inner dimension is contiguous in the input: memcpy */
    FOP_COPY_TILE,     /* another output dimension is: tiled transpose */
    FOP_COPY_GATHER,   /* none: strided element copy */
};

/* An odometer over `rank` outer dimensions with an input and an output
 * offset per step (element strides; the input's may be negative). */
typedef struct fop_odo {
    int32_t rank, pad_;
    int64_t dims[RLT_FAST_OP_MAX_RANK], xs[RLT_FAST_OP_MAX_RANK], ys[RLT_FAST_OP_MAX_RANK];
    int64_t count; /* product of dims */
} fop_odo;

typedef struct fop_bcast {
    int32_t rank, pad_;                     /* collapsed, >= 1 */
    int64_t dims[RLT_FAST_OP_MAX_RANK];     /* the output's, collapsed; contiguous in y */
    int64_t sa[RLT_FAST_OP_MAX_RANK], sb[RLT_FAST_OP_MAX_RANK]; /* operand element strides, 0 where broadcast */
    int64_t total;                          /* output elements */
} fop_bcast;

typedef struct fop_pool {
    int32_t is_max;
    int32_t padded_row;           /* every output of a row from one stack row of
                                     its kernel rows with the pads filled in
                                     (dilation 1 along the row, every window
                                     holding a tap of the input, the row
                                     within RLT_FAST_OP_POOL_TMP): no edge
                                     outputs apart */
    int64_t planes;               /* N * C */
    int64_t ih, iw, oh, ow;       /* 1-D pools have ih = oh = 1 */
    int64_t kh, kw, sh, sw, dh, dw, ph, pw; /* pads at the beginning */
    int64_t ow_lo, ow_hi;         /* outputs [ow_lo, ow_hi) read no column outside the input */
    int64_t chunk;                /* interior outputs per pass through the stack row (0: too wide) */
    /* AveragePool: divisors per output row and column, floats at these
     * byte offsets of extra[] (-1 for MaxPool); the window's divisor is
     * their product, 0 giving 0. */
    int64_t div_h, div_w;
    int64_t lanes;                /* 0: NCHW planes; else NCHWc: each plane is a block of
                                     lanes channels, innermost ([ih][iw][lanes]) */
} fop_pool;

typedef struct fop_rows {
    int64_t outer, len, inner;    /* [outer, len, inner]: reduce over len (GlobalAveragePool on
                                     NCHWc: inner = the block's lanes) */
    double eps;                   /* LayerNormalization */
    int32_t scale, bias;          /* LayerNormalization: tensors of len values, or -1 */
    int64_t scale_c, bias_c;      /* ... or constants expanded into extra[]: byte offsets (-1: use the tensor) */
} fop_rows;

typedef struct fop_copy {
    int32_t mode, pad_;           /* FOP_COPY_* */
    int64_t es;                   /* bytes per element: 1, 4 or 8 */
    int64_t base;                 /* input element offset of the first output element */
    int64_t n_inner, inner_xs;    /* inner dimension: length, input stride */
    int64_t n_tile, tile_ys;      /* FOP_COPY_TILE: the dimension contiguous in the input: length, output stride */
    fop_odo outer;                /* the other dimensions */
} fop_copy;

typedef struct fop_part {
    int32_t tensor, pad_;
    int64_t chunk_bytes;          /* bytes per outer index */
} fop_part;

typedef struct fop_parts {
    int64_t outer;
    int32_t n_parts, pad_;
    int64_t parts;                /* byte offset of n_parts fop_part in extra[] */
} fop_parts;

/* One op's plan (the name ops.h gives it). */
typedef struct rlt_fast_op rlt_fast_op;
struct rlt_fast_op {
    int32_t layout;     /* RLT_FAST_OP_LAYOUT */
    int32_t kind;       /* FOP_* */
    int32_t isa;        /* the build of the loops it runs here (FOP_ISA_*): chosen at create */
    int32_t isa_max;    /* the best build the plan wants (pools: AVX2), whatever the CPU */
    int32_t fn;         /* FOP_UN_* or FOP_BIN_*; FOP_BYTES: the mask's FOP_FILL_* */
    int32_t x, x2, y, y2; /* tensors: input 0, input 1 (or -1), output 0, a second output (or -1) */
    float p0, p1;       /* Clip's bounds, LeakyRelu's alpha, Pow's exponent */
    int32_t pad_;
    int64_t bytes;      /* the whole block: this struct and its tables */
    int64_t n;          /* FOP_BYTES: bytes of output 0; FOP_UNARY: elements */
    int64_t n2;         /* FOP_BYTES: elements of output 1 (Dropout's mask) */
    union {
        fop_bcast bcast;
        fop_pool pool;
        fop_rows rows;
        fop_copy copy;
        fop_parts parts;
    } u;
    union {
        double d;
        int64_t i;
    } extra[]; /* the tables the plan's offsets point into */
};

/* Runs op with the build op->isa: vals indexed by tensor (every input's
 * buffer, constants' data, every output's buffer, of the tensor's size).
 * Outputs are not zeroed beforehand and are written whole; they must not
 * overlap an input (a view's output may be its input's own buffer: the
 * copy is then skipped). Never allocates, never fails. */
void rlt_fast_op_run(const rlt_fast_op *op, void *const *vals);

/* The same with the build `isa`, lowered to op->isa_max: what an exported
 * network runs, with the isa rlt_fast_op_cpu_isa gave on its machine. */
void rlt_fast_op_run_isa(const rlt_fast_op *op, void *const *vals, int isa);

/* Several threads: the ops that compute split their outer loop (unary's
 * elements, binary's rows, a pool's planes, the row reductions' rows)
 * into equal shares, one per thread, each thread's results the same bits
 * as one thread's. Copies run on one thread (memory-bound). Ops with
 * fewer output elements than this run on one thread: waking the others
 * would cost more than it saves. */
#define RLT_FAST_OP_PARALLEL_ELEMS 16384

/* The op's units of work that may run on different threads (elements,
 * rows or planes, as above); 0 for the ops that run whole. */
int64_t rlt_fast_op_units(const rlt_fast_op *op);

/* Runs units [lo, hi) of a computing op (rlt_fast_op_units > 0) with the
 * build isa (lowered to op->isa_max). */
void rlt_fast_op_run_range(const rlt_fast_op *op, void *const *vals, int isa, int64_t lo, int64_t hi);

/* The threads the op runs on when n_threads are offered: 1 for small ops,
 * copies, or n_threads 1; at most n_threads and its units. */
int rlt_fast_op_threads(const rlt_fast_op *op, int n_threads);

/* rlt_fast_op_run_isa on rlt_fast_op_threads(op, n_threads) OpenMP
 * threads (an OpenMP parallel loop when compiled with -fopenmp, else in
 * turn on this thread). */
void rlt_fast_op_run_threads(const rlt_fast_op *op, void *const *vals, int isa, int n_threads);

/* The best build this CPU runs (FOP_ISA_*): AVX-512F, AVX2 or the
 * baseline (always the baseline off x86). */
int rlt_fast_op_cpu_isa(void);

/* "baseline", "avx2", "avx512f" ("?" for another value). Static string. */
const char *rlt_fast_op_isa_name(int isa);

#endif /* RLT_NET_OPS_RUN_H */
