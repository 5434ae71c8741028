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
#include "rltune/train.h"

/* The shape sets' types and functions are public: rltune/train.h. */

#endif /* RLT_POLICY_SHAPES_H */
