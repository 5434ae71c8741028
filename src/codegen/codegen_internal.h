/*
 * codegen_internal.h - what the codegen files share and nobody else needs.
 */
#ifndef RLT_CODEGEN_INTERNAL_H
#define RLT_CODEGEN_INTERNAL_H

#include "codegen/codegen.h"

#include <stdio.h>

/* Stands for the kernel's name until the code is complete and hashed; it has
 * the length of a real symbol ("rlt_k_" + 16 hex digits). */
#define CODEGEN_SYMBOL_PLACEHOLDER "RLT_SYMBOL_PLACEHOLDER"

/* Takes the text of `code`, names the kernel from its hash with `prefix`
 * ("rlt_k_" or "rlt_r_"), and fills `out`. */
rlt_status codegen_finish(rlt_str *code, const char *prefix, bool needs_openmp, rlt_kernel_src *out,
                          rlt_diag *diag);

/* Appends an affine index over the op's axes as C, each axis name behind
 * `prefix`, e.g. "x_p*2 + x_r - 1". */
void codegen_print_axis_affine(const rlt_op *op, const rlt_affine *a, const char *prefix, rlt_str *out);

#endif
