/*
 * shapes.h - datasets of op shapes for training and evaluating LoopTune
 * policies (`rltune gen-dataset`), split into a training and a test part
 * by shape, so that a policy is judged on shapes it never saw.
 *
 * A dataset file is text (docs/formats.md, "Shape datasets"):
 *
 *     # rltune shapes v1
 *     # kind mm dims 64:256:16 test-fraction 0.2 seed 0
 *     train matmul:M=64,N=80,K=128
 *     test matmul:M=64,N=64,K=240
 *
 * one op spec a line, canonical (rlt_op_parse's), each once, marked train
 * or test; '#' lines are comments. The first line is the header with the
 * format's version (1); the first comment that starts with "# kind " is
 * the set's `about`. Blank lines and blanks at either end of a line are
 * ignored. The reader is rlt_shape_set_load, the writer
 * rlt_shape_set_save (shapes.c).
 */
#ifndef RLT_POLICY_SHAPES_H
#define RLT_POLICY_SHAPES_H

#include "core/core.h"

/* The most shapes one set of ranges may give (before --max-shapes). */
#define RLT_SHAPES_MAX 1000000

typedef struct rlt_shape_set {
    int n;
    char **specs;   /* canonical op specs, n of them, each owned */
    bool *is_test;  /* split: true for the test part; n of them, owned */
    char *about;    /* the generator's comment line without "# " (kind, ranges, fraction, seed); owned, may be NULL */
} rlt_shape_set;

/* Frees the arrays and strings (rlt_free) and zeroes *s; the struct itself is
 * the caller's. NULL and a zeroed set are fine. */
void rlt_shape_set_free(rlt_shape_set *s);

/* Counts of each part. */
int rlt_shape_set_count(const rlt_shape_set *s, bool is_test);

/* What gen-dataset generates. A range is "LO:HI:STEP" (LO, LO+STEP, ...
 * up to HI) or a single value "N", or a list "A,B,C" (any order, each value
 * once; used ascending). Values are whole numbers from 1 to RLT_MAX_EXTENT.
 * The strings are borrowed for the call. */
typedef struct rlt_shape_gen_opts {
    const char *kind;       /* "mm" (matmul M, N, K each from dims) or "conv" (conv2d, docs/policy.md) */
    const char *dims;       /* mm: the range of M, N and K; conv: the range of C and K (channels) */
    const char *sizes;      /* conv: the range of H = W; NULL = "7,14,28,56"; mm: must be NULL */
    const char *kernels;    /* conv: R = S, odd only (pad R/2 keeps the size); NULL = "1,3"; mm: must be NULL */
    double test_fraction;   /* in [0, 1); shapes drawn for the test part */
    int max_shapes;         /* > 0: a random subset of this many shapes (before the split); 0: all */
    uint64_t seed;          /* the subset and the split */
} rlt_shape_gen_opts;

/* Generates the shapes of `opts` into *out (zeroed first; free with
 * rlt_shape_set_free): every combination of the ranges, in a fixed order
 * (mm: M, N, K; conv: C, H = W, K, R = S; the last fastest), a seeded
 * random subset when max_shapes is set, and a seeded split with
 * round(n * test_fraction) shapes (halves rounded up) in the test part.
 * The set lists the train part, then the test part, each in that order.
 * mm gives matmul:M=..,N=..,K=..; conv gives conv2d with N=1, stride 1 and
 * pad R/2 (output size = input size). Specs are canonical; `about` records
 * the options ("kind mm dims 64:256:16 test-fraction 0.2 seed 0"). The same
 * opts give the same set. Errors: INVALID_ARGUMENT naming the option as
 * gen-dataset spells it (--kind, --dims, ...) with the text and what is
 * wrong (an unknown kind, a malformed or empty range, a value below 1 or
 * above RLT_MAX_EXTENT, a value listed twice, an even kernel, --sizes or
 * --kernels for mm, a fraction outside [0, 1), more than RLT_SHAPES_MAX
 * shapes, a shape rlt_op_parse refuses), OUT_OF_MEMORY. */
rlt_status rlt_shape_set_generate(const rlt_shape_gen_opts *opts, rlt_shape_set *out, rlt_diag *diag);

/* Writes the set (format above) atomically (rlt_file_write), in the set's
 * order. Errors: IO_ERROR naming the file; INVALID_ARGUMENT for a set the
 * reader would refuse (no shape, an empty spec or one with blanks, an about
 * of more than one line); OUT_OF_MEMORY. */
rlt_status rlt_shape_set_save(const rlt_shape_set *s, const char *path, rlt_diag *diag);

/* Reads a dataset file into *out (zeroed first; free with
 * rlt_shape_set_free), the shapes in the file's order, each spec made
 * canonical. Errors: IO_ERROR (unreadable), PARSE_ERROR naming the file
 * and line (no header, another version, a NUL byte, a line that is not
 * "train SPEC" or "test SPEC", a spec rlt_op_parse refuses, a shape twice,
 * no shape at all), OUT_OF_MEMORY. A save then load gives an equal set. */
rlt_status rlt_shape_set_load(const char *path, rlt_shape_set *out, rlt_diag *diag);

#endif /* RLT_POLICY_SHAPES_H */
