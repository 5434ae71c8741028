/*
 * codegen.h - lowers a scheduled loop nest to readable C.
 *
 * Every kernel has the same ABI, so the runner can call any of them:
 *
 *     size_t SYMBOL_workspace_bytes(void);
 *     void   SYMBOL_prepare(float *const *tensors, void *workspace, int n_threads);
 *     void   SYMBOL(float *const *tensors, void *workspace, int n_threads);
 *
 * `tensors` holds the op's tensors in order (inputs, then the output);
 * `workspace` is 64-byte aligned scratch of the size the first function
 * returns (staged inputs live there); `n_threads` is the thread count for
 * parallel loops that did not fix their own. The kernel overwrites every
 * output element and never writes its inputs.
 *
 * Weights (tensors an op marks is_weight: a framework's parameters) are
 * staged once: SYMBOL_prepare packs and pads them into the workspace, and
 * SYMBOL reads them there on every later call with that workspace. Call
 * SYMBOL_prepare again when the weights change. It reads only the weights
 * and does nothing when the schedule stages none. The runner calls it once,
 * before the checked call, so a measured time never includes it; it is
 * the same contract as a framework's weight pre-packing, and as oneDNN's
 * weights reordered once to the primitive's layout. Activations are staged
 * inside SYMBOL, on every call, and timed.
 *
 * The reference kernel of an op is different: scalar, unscheduled, double
 * precision, and it also writes a magnitude per output element (the body and
 * epilogue evaluated on absolute values: |a|+|b| for a sum or difference,
 * |a|*|b| for a product, summed over the reduction) that bounds the rounding
 * error of a correct fp32 kernel:
 *
 *     void SYMBOL(const float *const *inputs, double *out, double *out_magnitude);
 *
 * Sources need the preamble (rlt_codegen_preamble) once per translation unit.
 */
#ifndef RLT_CODEGEN_H
#define RLT_CODEGEN_H

#include "ir/ir.h"

#define RLT_SYMBOL_MAX 64

/* The version of the code a schedule lowers to, part of every tuning
 * record's target key (`codegen=N`): a change that makes the same schedule
 * (or configuration key) produce different code bumps it, so that records
 * of the old code are not read back, resumed or transferred as if they
 * described the new. History:
 *   1  (no field) everything before;
 *   2  reduction loops of one iteration (1x1 windows) no longer zero the
 *      output first or make an accumulator tile continue partial sums;
 *   3  a vector tile whose vector runs across the output's rows is written
 *      back and reloaded transposed (rlt_tstore8xN, rlt_tload8xN), not lane
 *      by lane;
 *   4  a vector load whose lanes are 2 or 4 floats apart (a stride-2
 *      convolution's input along its width) is 2 or 4 contiguous loads and
 *      shuffles (rlt_lds2_W, rlt_lds4_W), not lane by lane; a tile whose
 *      loads all stay inside their tensors (checked once at its start)
 *      reads without the padding checks, in vectors;
 *   5  a partial vector (a vector loop over a tail) and a vector load at a
 *      tensor's border load and store only their lanes inside, in masked
 *      operations (rlt_ldmW, rlt_ldm2_W, rlt_ldm4_W, rlt_stmW), not lane by
 *      lane; a configuration's parallel L0 loop is the outermost of L0
 *      (src/space: one parallel region a call);
 *   6  a split past its loop's extent is kept (a vector wider than its axis)
 *      and its loop of one iteration folded to 0, so such a vector emits its
 *      partial (masked) path alone (src/space offers such vectors, and
 *      register tiles whose last vector ends past the axis);
 *   7  a reduction term with a factor that reads a tensor's zero border
 *      (no padded copy) is left out where that is certain, and otherwise
 *      guarded once for the statement ("if (in bounds) acc += ...") rather
 *      than by a check in each load (bounds that vary across a vector's
 *      lanes stay in its masked load);
 *   8  a parallel kernel's staging splits the outermost staging loop of
 *      more than one iteration between the threads (before: always the
 *      outermost, a batch of 1 for a convolution's input: one thread);
 *   9  the taps of an unrolled stride-2 window read the row's window in
 *      shared vectors and shuffles (rlt_ldw2_16), and src/space puts that
 *      window's column loop inside the register tile, just outside the
 *      vector, so that its taps come together;
 *  10  a tile's write-back (and reload) across the output's rows is
 *      transposed at 16 lanes too, runs of 3 and 5-7 columns in one masked
 *      run, and the loop along the row moves next to the vector for it
 *      (before: 16-lane tiles, and tiles with another loop there, were
 *      stored lane by lane). */
#define RLT_CODEGEN_VERSION 10

typedef struct rlt_kernel_src {
    char symbol[RLT_SYMBOL_MAX]; /* "rlt_k_<16 hex digits of the code's hash>" */
    char *code;                  /* the kernel's functions; owned: free with rlt_free */
    bool needs_openmp;           /* has a parallel loop: compile and link with OpenMP */
} rlt_kernel_src;

/* The shared preamble: includes, vector typedefs, load/store helpers. */
const char *rlt_codegen_preamble(void);

/* Lowers a checked nest to a kernel. The symbol is derived from the code, so
 * equal code gives equal symbols (the compile cache relies on it). */
rlt_status rlt_codegen_kernel(const rlt_nest *nest, rlt_kernel_src *out, rlt_diag *diag);

/* The lowered loop tree of a checked nest (src/codegen/lowered.h), one
 * node a line, appended to out: the stage between the nest and its C
 * (`rltune show --stage lowered`). Errors: OUT_OF_MEMORY. */
rlt_status rlt_codegen_lowered_text(const rlt_nest *nest, rlt_str *out, rlt_diag *diag);

/* The op's reference kernel (see above). */
rlt_status rlt_codegen_reference(const rlt_op *op, rlt_kernel_src *out, rlt_diag *diag);

void rlt_kernel_src_free(rlt_kernel_src *k); /* frees code; the struct stays */

#endif /* RLT_CODEGEN_H */
