/*
 * model_internal.h - what the model handle's other files in src/api/ share
 * (model.c owns the handle): its graph, and keeping a failure as its last
 * error.
 */
#ifndef RLT_API_MODEL_INTERNAL_H
#define RLT_API_MODEL_INTERNAL_H

#include "graph/graph.h"
#include "rltune/model.h"

/* The model's graph (borrowed). */
const rlt_graph *rlt_model_graph(const rlt_model *m);

/* Keeps a failed call's message as m's last error and hands d to diag
 * (rlt_diag_keep); returns st. */
rlt_status rlt_model_noted(rlt_model *m, rlt_status st, const rlt_diag *d, rlt_diag *diag);

#endif /* RLT_API_MODEL_INTERNAL_H */
