/*
 * gopt_internal.h - what the files of src/gopt/ share and nothing else
 * uses: the index of a graph's readers that matching walks, matching with
 * an index built once for all rules, and applying with verification's
 * leave to replace graph outputs.
 */
#ifndef RLT_GOPT_INTERNAL_H
#define RLT_GOPT_INTERNAL_H

#include "gopt/gopt.h"

/* The live nodes reading each tensor (each node once), and which tensors
 * are graph outputs. */
typedef struct gopt_readers {
    int *start;      /* n_tensors + 1: tensor t's readers are nodes[start[t] .. start[t] + fill[t]) */
    int *fill;
    int *nodes;
    bool *is_output;
} gopt_readers;

rlt_status gopt_readers_build(const rlt_graph *g, gopt_readers *rd, rlt_diag *diag);
void gopt_readers_free(gopt_readers *rd);

/* rlt_gopt_rule_matches with the readers of g already indexed. */
rlt_status gopt_rule_matches_with(const rlt_ruleset *rs, int rule, const rlt_graph *g, const gopt_readers *rd,
                                  rlt_gopt_match_fn fn, void *ctx, rlt_diag *diag);

/* rlt_gopt_apply; may_map_outputs lets a graph output be replaced by a
 * pattern input (verification's graphs, whose outputs are the pattern's). */
rlt_status gopt_apply(const rlt_ruleset *rs, const rlt_graph *g, const rlt_gopt_match *m, bool may_map_outputs,
                      rlt_graph **out, char *reason, rlt_diag *diag);

/* Gives node `node` of g (added by a rule, with attributes) the form of
 * g's opset: an attribute ONNX made an input (Split's split, Pad's pads,
 * Clip's min and max, ...) becomes a constant input. */
rlt_status gopt_opset_form(rlt_graph *g, int node, rlt_diag *diag);

#endif /* RLT_GOPT_INTERNAL_H */
