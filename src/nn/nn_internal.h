/*
 * nn_internal.h - what the files of the nn module share and nobody else
 * sees: the layouts of rlt_mlp and rlt_adam, so that the weights file
 * (weights_file.c) can fill them, and the checks all of them use.
 */
#ifndef RLT_NN_INTERNAL_H
#define RLT_NN_INTERNAL_H

#include "nn/nn.h"

struct rlt_mlp {
    rlt_mlp_spec spec;
    int fan_in[RLT_MLP_MAX_LAYERS];        /* inputs of each layer */
    size_t w_offset[RLT_MLP_MAX_LAYERS];   /* where each layer's W starts in params */
    size_t b_offset[RLT_MLP_MAX_LAYERS];   /* and its biases */
    int max_width;                         /* largest of n_inputs and every n_units */
    size_t n_params;
    float *params; /* [n_params], owned */
    float *grads;  /* [n_params], owned */

    /* The kept forward, for backward. One owned block of n_rows_cap rows:
     * the input, every layer's output, and two scratch matrices of
     * max_width columns that backward passes gradients through. */
    float *cache;
    int n_rows_cap;
    int n_rows_kept; /* rows of the kept forward; 0: none */
    float *input;                        /* [n_rows_cap x n_inputs] */
    float *outputs[RLT_MLP_MAX_LAYERS];  /* [n_rows_cap x n_units] each */
    float *scratch[2];                   /* [n_rows_cap x max_width] each */
};

struct rlt_adam {
    rlt_adam_opts opts; /* defaults resolved */
    size_t n_params;
    int64_t n_steps;
    float *m; /* first moments [n_params], owned */
    float *v; /* second moments [n_params], owned */
};

/* Checks a spec (named fields in the message, INVALID_ARGUMENT). */
rlt_status nn_spec_check(const rlt_mlp_spec *spec, rlt_diag *diag);

/* A network of that (checked) spec with zero parameters and gradients:
 * rlt_mlp_create without the initialisation, for the loader. */
rlt_status nn_mlp_alloc(const rlt_mlp_spec *spec, rlt_mlp **out, rlt_diag *diag);

/* Parameter count of a checked spec. */
size_t nn_spec_n_params(const rlt_mlp_spec *spec);

/* Resolves zero fields to the defaults and checks the rest. */
rlt_status nn_adam_opts_resolve(const rlt_adam_opts *in, rlt_adam_opts *out, rlt_diag *diag);

/* An optimiser with zeroed state for n_params parameters (checked opts). */
rlt_status nn_adam_alloc(const rlt_adam_opts *opts, size_t n_params, rlt_adam **out, rlt_diag *diag);

/* Describes parameter `index` of a network ("layer 2 weight [3][17]" or
 * "layer 0 bias [5]") into buf, for messages. */
void nn_param_name(const rlt_mlp_spec *spec, size_t index, char *buf, size_t cap);

#endif /* RLT_NN_INTERNAL_H */
