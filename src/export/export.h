/*
 * export.h - writes a scheduled op's kernel as a small stand-alone C
 * library that needs nothing of rltune to build or run:
 *
 *     DIR/NAME.c       the preamble, the kernel (renamed NAME_kernel) and the
 *                      wrappers declared in NAME.h
 *     DIR/NAME.h       the call signature, documented: tensors by name
 *     DIR/libNAME.so   NAME.c compiled (unless opts->no_build)
 *     DIR/example.c    fills the inputs, calls NAME, checks the output
 *                      against the op's reference (plain loops, double
 *                      precision) and prints "... OK" (exit 0) or "FAILED"
 *     DIR/Makefile     builds the example against libNAME.so
 *
 * Layout and the wrapper's contract: docs/formats.md ("Exported kernels").
 */
#ifndef RLT_EXPORT_H
#define RLT_EXPORT_H

#include "measure/measure.h"
#include "rltune/export.h"
#include "sched/sched.h"

/* rlt_export_opts, rlt_export_result, rlt_export_name and
 * rlt_export_kernel are declared in rltune/export.h. */

/* What the exporters share (export.c, and net/net_export.c for whole
 * networks). */

/* True when `name` can name an exported library: [a-z_][a-z0-9_]*, shorter
 * than RLT_EXPORT_NAME_MAX (it becomes file names, C identifiers and, in
 * upper case, macro prefixes). */
bool rlt_export_name_is_valid(const char *name);

/* Appends `text` as lines of a C comment (" *   " before each), with any
 * comment terminator in it broken up. */
void rlt_export_comment_lines(rlt_str *out, const char *text);

#endif /* RLT_EXPORT_H */
