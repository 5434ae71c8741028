/*
 * rltune/op.h - operators: a built-in op from its spec
 * ("matmul:M=512,N=512,K=512"; `rltune ops` lists them) or a user's
 * einsum-like expression with its extents, and the library of built-in
 * ops. An op is immutable once made; everything downstream borrows it.
 */
#ifndef RLTUNE_OP_H
#define RLTUNE_OP_H

#include "rltune/base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlt_op rlt_op;

/* Parses a built-in op spec such as "matmul:M=512,N=512,K=512" (every key
 * of the op; defaults fill those left out). Errors (PARSE_ERROR,
 * INVALID_ARGUMENT) name the key or value and what would be accepted;
 * OUT_OF_MEMORY. Free with rlt_op_destroy. */
RLT_API rlt_status rlt_op_parse(const char *spec, rlt_op **out, rlt_diag *diag);

/* Builds an op from a user's expression and the extents of its indices:
 * expr "C[i,j] += A[i,k] * B[k,j]; C[i,j] = relu(C[i,j] + bias[j])",
 * shape "i=64,j=64,k=64" (grammar and rules: docs/ir.md). Its spec is
 * "expr:EXPR|SHAPE", which rlt_op_parse takes back. */
RLT_API rlt_status rlt_op_from_expr(const char *expr, const char *shape, rlt_op **out, rlt_diag *diag);

RLT_API void rlt_op_destroy(rlt_op *op); /* NULL ok */

/* The canonical spec ("matmul:M=512,N=512,K=512": every key, in the
 * library's order): what records are filed under. Borrowed from the op. */
RLT_API const char *rlt_op_spec(const rlt_op *op);

/* The op's kind ("matmul", "conv2d", ..., "expr"). Borrowed. */
RLT_API const char *rlt_op_kind(const rlt_op *op);

/* Floating-point operations of one call. */
RLT_API double rlt_op_flops(const rlt_op *op);

/* The op as statements over its tensors, with their shapes, as `rltune
 * show` prints it. Free with rlt_free; NULL when out of memory. */
RLT_API char *rlt_op_text(const rlt_op *op);

/* One parameter of a built-in op. */
typedef struct rlt_op_param {
    const char *key;
    const char *help;
    int64_t default_value; /* used when is_required is false */
    bool is_required;
    int64_t min_value;     /* smallest accepted value (1 for sizes, 0 for flags / pad) */
    int64_t max_value;     /* largest accepted value */
    bool is_omitted_at_default; /* the canonical spec names the key only when it is not the default */
} rlt_op_param;

/* A built-in op. */
typedef struct rlt_op_info {
    const char *name;
    const char *summary;
    const char *example; /* a full spec */
    int n_params;
    const rlt_op_param *params;
} rlt_op_info;

/* The built-in op library, in a fixed order: *n_ops entries (static). */
RLT_API const rlt_op_info *rlt_op_library(int *n_ops);

#ifdef __cplusplus
}
#endif
#endif /* RLTUNE_OP_H */
