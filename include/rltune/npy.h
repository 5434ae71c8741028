/*
 * rltune/npy.h - n-dimensional arrays and NumPy's .npy files: what a
 * network's inputs and outputs are made of (`rltune run --input X.npy
 * --output Y.npy`). An array is a plain struct: its element type, its
 * shape and its data, row-major. rlt_npy_load reads the files np.save
 * writes (format versions 1.0, 2.0 and 3.0) of float32, int64, int32 and
 * bool arrays; rlt_npy_save writes files np.load reads, byte for byte
 * what np.save writes for the same array. docs/formats.md (".npy
 * arrays") says what is accepted and what each refusal says.
 *
 *     rlt_array *x = NULL;
 *     if (rlt_npy_load("x.npy", &x, &d) != RLT_STATUS_OK) { ... d.message ... }
 *     printf("%s, rank %d, %lld elements\n", rlt_elem_name(x->elem), x->rank,
 *            (long long)rlt_array_n_elems(x));
 *     const float *v = x->data;                   // when x->elem == RLT_ELEM_F32
 *     rlt_array *y = NULL;
 *     rlt_array_create(RLT_ELEM_F32, 2, (int64_t[]){2, 3}, &y, &d);   // zeros
 *     ((float *)y->data)[0] = v[0];
 *     rlt_npy_save("y.npy", y, &d);
 *     rlt_array_destroy(y);
 *     rlt_array_destroy(x);
 */
#ifndef RLTUNE_NPY_H
#define RLTUNE_NPY_H

#include "rltune/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Element types of arrays; the values match the graph's internal dtypes. */
typedef enum rlt_elem { RLT_ELEM_F32 = 0, RLT_ELEM_I64 = 1, RLT_ELEM_I32 = 2, RLT_ELEM_BOOL = 3 } rlt_elem;

/* The most dimensions an array has (NumPy allows 64; networks need 8). */
#define RLT_ARRAY_MAX_RANK 8

/* An array. Those rlt_array_create and rlt_npy_load hand out are one
 * allocation, struct and data together: free with rlt_array_destroy, and
 * never free or replace `data` itself (the values may be changed, and so
 * may the dims as long as their product stays the same). A caller may
 * also fill a struct of its own, pointing at data it owns, to save it
 * with rlt_npy_save. */
typedef struct rlt_array {
    rlt_elem elem;
    int rank;                         /* 0 .. RLT_ARRAY_MAX_RANK; 0 is a scalar */
    int64_t dims[RLT_ARRAY_MAX_RANK]; /* dims[0 .. rank-1] >= 0; the rest 0 */
    void *data;                       /* row-major (C order), little-endian; owned by the array
                                         (64-byte aligned); a bool is one byte, 0 or 1 */
} rlt_array;

/* "f32", "i64", "i32", "bool"; "?" for any other value. */
RLT_API const char *rlt_elem_name(rlt_elem e);

/* The bytes of one element: 4, 8, 4, 1; 0 for any other value. */
RLT_API size_t rlt_elem_size(rlt_elem e);

/* The number of elements: the product of dims[0 .. rank-1], 1 for a scalar,
 * 0 when a dim is 0. Returns 0 for NULL, and -1 for an array no function
 * here would make: a rank outside 0 .. RLT_ARRAY_MAX_RANK, a negative dim,
 * or a product that does not fit an int64_t. */
RLT_API int64_t rlt_array_n_elems(const rlt_array *a);

/* A new array of `elem` with `rank` dims (dims[0 .. rank-1]; dims may be
 * NULL when rank is 0), every element zero, data 64-byte aligned. Errors:
 * INVALID_ARGUMENT (a rank outside 0 .. RLT_ARRAY_MAX_RANK, a negative
 * dim, an unknown elem, dims that multiply to more than 2^40, those of 0
 * aside: the most elements an array has), OUT_OF_MEMORY. *out is
 * set on success only (free with rlt_array_destroy). Thread-safe. */
RLT_API rlt_status rlt_array_create(rlt_elem elem, int rank, const int64_t *dims, rlt_array **out, rlt_diag *diag);

/* Frees an array from rlt_array_create or rlt_npy_load. NULL ok. */
RLT_API void rlt_array_destroy(rlt_array *a);

/* Reads the NumPy .npy file at `path` (format versions 1.0, 2.0 and 3.0):
 * dtypes float32 ('<f4'), int64 ('<i8'), int32 ('<i4') and bool ('|b1'),
 * '=' (native) and '|' (not applicable) taken as little-endian; C order
 * (fortran_order True only where the two orders lay the data out alike:
 * at most one dim above 1); shapes as rlt_array_create takes them. `path`
 * may also name a pipe. Errors, each with one message that starts with
 * the path and says what was wrong and what is read: IO_ERROR (the file
 * cannot be opened or read), PARSE_ERROR (not a .npy file: the magic, a
 * truncated header or data, the header's syntax or keys, bytes after the
 * data, a bool byte other than 0 or 1), INVALID_ARGUMENT (a .npy file
 * rltune does not read: another dtype, such as float64, with the
 * conversion to save with; big-endian data; Fortran order; a structured
 * or object dtype; a rank over 8 or a shape too large; another format
 * version), OUT_OF_MEMORY. *out is set on success only (free with
 * rlt_array_destroy). Thread-safe. */
RLT_API rlt_status rlt_npy_load(const char *path, rlt_array **out, rlt_diag *diag);

/* Writes `a` (borrowed; from rlt_array_create or rlt_npy_load, or a struct
 * of the caller's) to `path` as np.save would: format 1.0 (2.0 for a
 * header over 65535 bytes, which no rank up to 8 needs), 'descr' '<f4',
 * '<i8', '<i4' or '|b1', C order, the header padded with spaces and a
 * newline to a multiple of 64 bytes; readable by numpy.load and
 * rlt_npy_load. Replaces the file atomically: writes "<path>.tmp.<pid>"
 * beside it, then renames it over `path` (removed again on failure).
 * Errors: INVALID_ARGUMENT (an array no function here would make: see
 * rlt_array_create; data NULL with elements; a bool byte other than 0 or
 * 1), IO_ERROR (the file cannot be written; the message names it).
 * Thread-safe for distinct paths. */
RLT_API rlt_status rlt_npy_save(const char *path, const rlt_array *a, rlt_diag *diag);

#ifdef __cplusplus
}
#endif
#endif /* RLTUNE_NPY_H */
