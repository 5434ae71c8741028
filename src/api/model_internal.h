/*
 * model_internal.h - what the model handle's other files in src/api/ share
 * (model.c owns the handle): its graph, and keeping a failure as its last
 * error; and the seeded inputs of a graph, which the graph-substitution
 * cost model (gopt/cost.c) times graphs on without a model handle.
 */
#ifndef RLT_API_MODEL_INTERNAL_H
#define RLT_API_MODEL_INTERNAL_H

#include "graph/graph.h"
#include "rltune/model.h"

/* The model's graph (borrowed). */
const rlt_graph *rlt_model_graph(const rlt_model *m);

/* rlt_model_random_inputs of a graph (sorted, inferred; borrowed): one
 * array per graph input in out (free each with rlt_array_destroy), f32
 * uniform in [-1, 1) (input i from its own stream of `seed`), integer and
 * bool inputs zero. OUT_OF_MEMORY; all NULL on failure. */
rlt_status rlt_graph_random_inputs(const rlt_graph *g, uint64_t seed, rlt_array **out, rlt_diag *diag);

/* A model holding graph g (sorted, inferred; owned by the model from now
 * on, also when this fails). Fails only when out of memory. */
rlt_status rlt_model_from_graph(rlt_graph *g, rlt_model **out, rlt_diag *diag);

/* Keeps a failed call's message as m's last error and hands d to diag
 * (rlt_diag_keep); returns st. */
rlt_status rlt_model_noted(rlt_model *m, rlt_status st, const rlt_diag *d, rlt_diag *diag);

#endif /* RLT_API_MODEL_INTERNAL_H */
