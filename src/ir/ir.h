/*
 * ir.h - tensor expressions, the op library and its spec parser, and the
 * loop-nest IR that schedules transform and codegen lowers.
 *
 * A tensor expression (rlt_op) is
 *
 *     OUT[s0, s1, ...]  (+)=  body            summed over the reduction axes
 *     OUT[s0, s1, ...]   =  epilogue(ACC)     optional, elementwise
 *
 * where the output is indexed by the spatial axes in order, `body` is an
 * expression tree of loads with affine indices over all axes, and the
 * epilogue (bias add, relu, ...) reads the reduction's result as ACC and loads
 * indexed by spatial axes only. Loads outside a tensor's bounds read zero:
 * that is how convolution padding is stated.
 *
 * A loop nest (rlt_nest) is a plain value: a fixed-size struct that transforms
 * copy and edit, never share mutably, so search states can keep many cheaply.
 * Its iteration variables are the op's axes and the variables split and fuse
 * made from them; the loops are the current leaf variables, outer to inner.
 */
#ifndef RLT_IR_H
#define RLT_IR_H

#include "core/core.h"
#include "rltune/schedule.h"

#define RLT_MAX_AXES 12    /* axes of one op */
#define RLT_MAX_DIMS 6     /* dimensions of one tensor */
#define RLT_MAX_TENSORS 8  /* inputs and the output */
#define RLT_MAX_VARS 64    /* iteration variables in one nest, including non-leaf ones */
#define RLT_MAX_LOOPS 24   /* loops in one nest */
#define RLT_NAME_MAX 32    /* tensor and axis names, including the NUL */
#define RLT_LOOP_NAME_MAX 64 /* loop names ("j.o.i", "i.o_j.o"), including the NUL */

/* ---- tensor expressions ------------------------------------------------- */

#define RLT_MAX_EXTENT ((int64_t)1 << 31)       /* any op parameter, axis extent or index term */
#define RLT_MAX_TENSOR_ELEMS ((int64_t)1 << 31) /* elements of one tensor */

/* sum_a coef[a] * axis_a + offset, over the op's axes (by index). */
typedef struct rlt_affine {
    int64_t coef[RLT_MAX_AXES];
    int64_t offset;
} rlt_affine;

typedef enum rlt_expr_kind {
    RLT_EXPR_CONST,
    RLT_EXPR_LOAD,
    RLT_EXPR_ACC,  /* the reduction's result; only in an epilogue */
    RLT_EXPR_NEG,  /* -a */
    RLT_EXPR_RELU, /* max(a, 0) */
    RLT_EXPR_ADD,
    RLT_EXPR_SUB,
    RLT_EXPR_MUL,
    RLT_EXPR_MAX,
    RLT_EXPR_MIN
} rlt_expr_kind;

typedef struct rlt_expr rlt_expr;
struct rlt_expr {
    rlt_expr_kind kind;
    double value;                   /* CONST */
    int tensor;                     /* LOAD: index into rlt_op.tensors */
    rlt_affine index[RLT_MAX_DIMS]; /* LOAD: one affine index per tensor dimension */
    const rlt_expr *a, *b;          /* operands (unary: a only) */
};

typedef struct rlt_tensor {
    char name[RLT_NAME_MAX];
    int n_dims;
    int64_t dims[RLT_MAX_DIMS];
    bool is_output;
    bool is_weight; /* a parameter a framework would pre-pack once (weights, bias) */
} rlt_tensor;

typedef struct rlt_axis {
    char name[RLT_NAME_MAX];
    int64_t extent;
    bool is_reduce;
} rlt_axis;

/* An operator. Built by rlt_op_parse / rlt_op_from_expr, freed by
 * rlt_op_destroy; expression nodes live in the op's arena. */
typedef struct rlt_op {
    rlt_arena *arena;
    char kind[RLT_NAME_MAX]; /* "matmul", ..., or "expr" for a user's expression */
    char spec[512];          /* canonical spec: every key, in the library's order */
    int n_axes;
    int n_spatial;           /* axes[0 .. n_spatial-1] index the output, in order */
    rlt_axis axes[RLT_MAX_AXES];
    int n_tensors;           /* inputs in call order, then the output (last) */
    rlt_tensor tensors[RLT_MAX_TENSORS];
    const rlt_expr *body;     /* summed over the reduction axes (assigned if none) */
    const rlt_expr *epilogue; /* NULL, or elementwise over ACC and spatially indexed loads */
    double flops;             /* floating-point operations of one call */
} rlt_op;

/* A new expression node in `arena` (zeroed but for kind and operands);
 * NULL when out of memory. */
rlt_expr *rlt_expr_new(rlt_arena *arena, rlt_expr_kind kind, const rlt_expr *a, const rlt_expr *b);

/* rlt_op_library, rlt_op_parse, rlt_op_from_expr, rlt_op_destroy and the
 * accessors are declared in rltune/op.h. */

/* Index of the tensor / axis with this name, or -1. */
int rlt_op_find_tensor(const rlt_op *op, const char *name);
int rlt_op_find_axis(const rlt_op *op, const char *name);

/* Number of elements of tensor t. */
int64_t rlt_op_tensor_size(const rlt_op *op, int t);

/* Number of points of the reduction domain (1 when there is no reduction). */
int64_t rlt_op_reduce_size(const rlt_op *op);

/* Appends the op as text: its tensors with shapes and the expression, e.g.
 *   C[i,j] += A[i,k] * B[k,j]   with i=512 j=512 k=512 */
void rlt_op_print(const rlt_op *op, rlt_str *out);
void rlt_expr_print(const rlt_op *op, const rlt_expr *e, rlt_str *out);
void rlt_affine_print(const rlt_op *op, const rlt_affine *a, rlt_str *out);

/* Appends the op's statement on one line in the expression grammar of
 * docs/ir.md, epilogue included (ACC printed as the output's element), e.g.
 *   C[i,j] += A[i,k] * B[k,j]; C[i,j] = relu(C[i,j] + bias[j])
 * Re-parsing it with the op's extents gives the same expression trees. */
void rlt_op_print_statement(const rlt_op *op, rlt_str *out);

/* Floating-point operations of one call: (body ops + 1 for the accumulation)
 * per point of the whole domain (no +1 without reduction axes), plus the
 * epilogue's ops per output element; every unary or binary node is one op.
 * Gives 2*M*N*K for matmul. Both op builders fill op->flops with it. */
double rlt_op_count_flops(const rlt_op *op);

/* Smallest and largest value of `a` over the axes' full ranges. */
void rlt_affine_range(const rlt_op *op, const rlt_affine *a, int64_t *lo, int64_t *hi);

/* True if some access of this load can fall outside its tensor (and so
 * reads zero), judged over the axes' full ranges. */
bool rlt_load_may_be_out_of_bounds(const rlt_op *op, const rlt_expr *load);

/* The op's load nodes, the body's first then the epilogue's, in the order
 * they are written; returns how many (at most `max`). */
int rlt_op_loads(const rlt_op *op, const rlt_expr **out, int max);

/* The dim of `load`'s tensor that axis `axis` alone indexes (coefficient 1,
 * no offset, no other axis), or -1. */
int rlt_load_dim_of_axis(const rlt_op *op, const rlt_expr *load, int axis);

/* Fills n floats uniformly in [-1, 1) from `seed` (one stream a tensor). */
void rlt_tensor_fill(float *data, int64_t n, uint64_t seed);

/* Evaluates the op directly in double precision, for tests: inputs in the
 * op's tensor order, `out` has the output's size. `out_magnitude` (may be
 * NULL) receives, per output element, the sum of the absolute values of the
 * terms, which bounds rounding error. Slow: for small shapes. */
rlt_status rlt_op_eval_reference(const rlt_op *op, const float *const *inputs, double *out,
                                 double *out_magnitude, rlt_diag *diag);

/* One element of the output (its index in the output's row-major order),
 * evaluated as rlt_op_eval_reference does, with its magnitude: the check of
 * a sample of a large output (bench_dnnl). INVALID_ARGUMENT for an index
 * outside the output. */
rlt_status rlt_op_eval_reference_at(const rlt_op *op, const float *const *inputs, int64_t index, double *value,
                                    double *magnitude, rlt_diag *diag);

/* ---- loop nests --------------------------------------------------------- */

typedef enum rlt_var_origin {
    RLT_VAR_AXIS,        /* one of the op's axes */
    RLT_VAR_SPLIT_OUTER, /* parent = outer * factor + inner */
    RLT_VAR_SPLIT_INNER,
    RLT_VAR_FUSED        /* fused = outer_var * extent(inner_var) + inner_var */
} rlt_var_origin;

typedef struct rlt_var {
    char name[RLT_LOOP_NAME_MAX];
    int64_t extent;
    bool is_reduce;
    rlt_var_origin origin;
    int axis;            /* AXIS: index into op->axes */
    int parent;          /* SPLIT_*: the variable that was split */
    int64_t factor;      /* SPLIT_*: the split factor (the inner extent) */
    int fused_outer;     /* FUSED: the two variables fused */
    int fused_inner;
} rlt_var;

typedef enum rlt_loop_kind {
    RLT_LOOP_SERIAL,
    RLT_LOOP_UNROLL,
    RLT_LOOP_VECTORIZE,
    RLT_LOOP_PARALLEL
} rlt_loop_kind;

typedef struct rlt_loop {
    int var;             /* index into rlt_nest.vars */
    rlt_loop_kind kind;
    int n_threads;       /* PARALLEL: 0 = the thread count given at run time */
} rlt_loop;

/* How one input tensor is staged before the loop nest runs. */
typedef struct rlt_layout {
    bool is_padded;                  /* pad: zero borders so every access is in bounds */
    int64_t pad_lo[RLT_MAX_DIMS];
    int64_t pad_hi[RLT_MAX_DIMS];
    int n_blocks;                    /* pack: dims split into blocks (see rlt_layout_physical_dims) */
    int block_dim[RLT_MAX_DIMS];     /* in the order they were packed */
    int64_t block[RLT_MAX_DIMS];
} rlt_layout;

#define RLT_ACC_NONE (-1) /* no cache_write: the output is accumulated in place */
#define RLT_ACC_ROOT (-2) /* cache_write around the whole nest */

typedef struct rlt_nest {
    const rlt_op *op; /* borrowed: outlives the nest */
    int n_vars;
    rlt_var vars[RLT_MAX_VARS];
    int n_loops;
    rlt_loop loops[RLT_MAX_LOOPS]; /* outer to inner */
    int acc_var; /* cache_write: the accumulator lives inside this var's loop
                    (RLT_ACC_NONE, RLT_ACC_ROOT or a var index) */
    rlt_layout layouts[RLT_MAX_TENSORS];
} rlt_nest;

/* The unscheduled nest: spatial axes in output order, then reduction axes. */
void rlt_nest_init(rlt_nest *nest, const rlt_op *op);

/* Loop position of the loop with this name, or -1. */
int rlt_nest_find_loop(const rlt_nest *nest, const char *name);
/* Loop position of variable v, or -1 when v is not a current loop. */
int rlt_nest_loop_of_var(const rlt_nest *nest, int var);

/* The op axis variable var comes from (split halves follow their parent);
 * -1 for a fused variable. */
int rlt_nest_var_axis(const rlt_nest *nest, int var);

/* True if the staged layout of tensor t differs from the tensor itself. */
bool rlt_layout_is_staged(const rlt_layout *layout);

/* Checks every invariant a nest must keep (vectorized loop innermost, one
 * parallel loop, accumulator size, ...); the message says which and why. */
rlt_status rlt_nest_check(const rlt_nest *nest, rlt_diag *diag);

/* Appends the loop tree, readable, one loop a line, e.g.
 *   parallel i.o in 0..43 threads=2  (tail: i < 512)
 *     for k in 0..512  reduce
 *       unroll i.i in 0..12
 *         vectorize j.i in 0..8
 *           C[i,j] += A[i,k] * B[k,j]                                        */
void rlt_nest_print(const rlt_nest *nest, rlt_str *out);

/* Structural hash: equal for nests that lower to the same code. */
uint64_t rlt_nest_hash(const rlt_nest *nest);

/* Limits the checks enforce (and why): */
#define RLT_MAX_VECTOR_FLOATS 64    /* widest explicit vector type generated */
#define RLT_MAX_UNROLL_EXTENT 256   /* one unrolled loop */
#define RLT_MAX_UNROLL_PRODUCT 4096 /* copies of the innermost body: bounds code size */
#define RLT_MAX_ACC_FLOATS 16384    /* accumulator tile (64 KiB on the stack) */
/* RLT_MAX_THREADS (the most run-time threads) is public: rltune/schedule.h. */

/* The variable a split or fuse turned `var` into, or -1 while it is a loop:
 * for a split, the outer and inner halves; for a fuse, the fused variable. */
void rlt_nest_var_children(const rlt_nest *nest, int var, int *split_outer, int *split_inner, int *fused);

/* True if `var` was split by a factor that does not divide its extent, so
 * its loops run past the end and the generated code guards them. */
bool rlt_nest_var_has_tail(const rlt_nest *nest, int var);

/* The physical dims of the staged copy of input t: first the outer parts
 * of the blocked dims (padded extent / block, rounded up) in the order they
 * were packed, then the other dims (padded) in their order, then the blocks
 * in the order they were packed. So `pack B j 16` on B[k,j] gives
 * B_s[j/16][k][16]. `outer_pos[d]` / `inner_pos[d]` (may be NULL) receive
 * where original dim d went (inner_pos -1 when d is not blocked). Returns
 * the number of physical dims. */
int rlt_layout_physical_dims(const rlt_nest *nest, int t, int64_t dims[2 * RLT_MAX_DIMS],
                             int outer_pos[RLT_MAX_DIMS], int inner_pos[RLT_MAX_DIMS]);

#endif /* RLT_IR_H */
