/*
 * nn.h - the small neural networks the RL agents learn with (GA-DQN's Q
 * networks, PPO's actor and critic, the contextual bandit): multi-layer
 * perceptrons of dense layers, losses, Adam, and a versioned weights file.
 * docs/nn.md describes the module; docs/formats.md the file.
 *
 * Conventions for every function here:
 * - Data is float32, row-major, one row per example: a minibatch of n_rows
 *   inputs is [n_rows x n_inputs], its outputs [n_rows x n_outputs].
 * - Losses return the mean over the examples (a double) and write the
 *   gradient of that mean with respect to their input; rlt_mlp_backward
 *   sums over rows, so a loss's gradient fed to it gives the gradient of the
 *   mean loss.
 * - Arrays passed in are borrowed for the call and never kept. Outputs are
 *   caller-allocated of the size stated; output pointers marked "may be
 *   NULL" are skipped when NULL.
 * - Determinism: one seed gives bit-identical weights; one sequence of calls
 *   on one machine (same OpenBLAS, same thread count) gives bit-identical
 *   results.
 * - Threads: rlt_mlp_predict does not modify the network, so several
 *   threads may predict with one network at once; everything else needs the
 *   network (and optimiser) to itself.
 *
 * Typical training step (DQN):
 *     rlt_mlp_forward(q, n, states, q_values, &d);               // keeps activations
 *     rlt_nn_loss_huber_picked(n, n_actions, q_values, actions, targets, 1.0, &loss, dq, &d);
 *     rlt_mlp_zero_grad(q);
 *     rlt_mlp_backward(q, n, dq, NULL, &d);                      // accumulates gradients
 *     rlt_mlp_grad_clip(q, 10.0, &norm, &d);
 *     rlt_adam_step(adam, q, &d);
 */
#ifndef RLT_NN_H
#define RLT_NN_H

#include "core/core.h"

/* ---- networks ------------------------------------------------------------ */

#define RLT_MLP_MAX_LAYERS 16
#define RLT_MLP_MAX_UNITS 65536 /* per layer, and inputs */

/* The activation after a dense layer. The numbers are stored in weights
 * files: never renumber. */
typedef enum rlt_nn_act {
    RLT_NN_ACT_NONE = 0, /* identity: Q-values, logits, a critic's value */
    RLT_NN_ACT_RELU = 1,
    RLT_NN_ACT_TANH = 2,
    RLT_NN_ACT_COUNT
} rlt_nn_act;

/* "none", "relu", "tanh"; "unknown" for other values. */
const char *rlt_nn_act_str(rlt_nn_act act);
/* The activation of that name, or RLT_NN_ACT_COUNT when there is none. */
rlt_nn_act rlt_nn_act_from_str(const char *name);

typedef struct rlt_mlp_layer {
    int n_units;    /* outputs of this dense layer, 1..RLT_MLP_MAX_UNITS */
    rlt_nn_act act; /* applied to them */
} rlt_mlp_layer;

/* A network's shape: a value, copied by rlt_mlp_create. Layer l maps the
 * previous layer's units (n_inputs for l = 0) to its own; the last layer's
 * units are the network's outputs. GA-DQN's Q network:
 *     {.n_inputs = n, .n_layers = 3,
 *      .layers = {{256, RLT_NN_ACT_RELU}, {64, RLT_NN_ACT_RELU}, {n_actions, RLT_NN_ACT_NONE}}} */
typedef struct rlt_mlp_spec {
    int n_inputs; /* 1..RLT_MLP_MAX_UNITS */
    int n_layers; /* 1..RLT_MLP_MAX_LAYERS */
    rlt_mlp_layer layers[RLT_MLP_MAX_LAYERS]; /* the first n_layers are used */
} rlt_mlp_spec;

/* True when both specs describe the same network (layers past n_layers are
 * ignored). */
bool rlt_mlp_spec_equal(const rlt_mlp_spec *a, const rlt_mlp_spec *b);

typedef struct rlt_mlp rlt_mlp;

/* Creates a network of shape `spec` with weights drawn from `seed`
 * (rlt_rng): layer by layer, each weight matrix row by row, uniform in
 * [-limit, limit) with limit = sqrt(6 / fan_in) before a ReLU (He) and
 * sqrt(6 / (fan_in + fan_out)) otherwise (Xavier); biases 0. Two creates
 * with one spec and seed give bit-identical weights. Gradients start at 0.
 * On success *out is owned by the caller (free with rlt_mlp_destroy); on
 * failure it is NULL. Errors: INVALID_ARGUMENT for a spec out of range (the
 * message names the field), OUT_OF_MEMORY. */
rlt_status rlt_mlp_create(const rlt_mlp_spec *spec, uint64_t seed, rlt_mlp **out, rlt_diag *diag);
void rlt_mlp_destroy(rlt_mlp *m); /* NULL ok */

/* The network's shape (borrowed; lives as long as m). */
const rlt_mlp_spec *rlt_mlp_get_spec(const rlt_mlp *m);
int rlt_mlp_n_inputs(const rlt_mlp *m);
int rlt_mlp_n_outputs(const rlt_mlp *m);

/* All parameters and their gradients, each one contiguous array of
 * rlt_mlp_n_params floats (borrowed; valid until rlt_mlp_destroy). Layout,
 * layer after layer: the weights W [n_units x fan_in] row-major (W[j][i]
 * connects input i to unit j), then the biases [n_units]. Callers may
 * change parameters through the pointer (soft target updates, scaling a
 * head); the file format stores them in this order. */
size_t rlt_mlp_n_params(const rlt_mlp *m);
float *rlt_mlp_params(rlt_mlp *m);
float *rlt_mlp_grads(rlt_mlp *m);
/* Layer `layer`'s weights and biases inside rlt_mlp_params (either output
 * may be NULL). layer must be in 0..n_layers-1 (asserted). */
void rlt_mlp_layer_params(rlt_mlp *m, int layer, float **out_weights, float **out_biases);

/* Forward pass over a minibatch x [n_rows x n_inputs] into
 * out_y [n_rows x n_outputs], keeping the input and every layer's output for
 * rlt_mlp_backward (the last forward replaces the ones before). Grows the
 * network's workspace when n_rows is the largest yet. Errors:
 * INVALID_ARGUMENT for n_rows < 1 or a NULL array, OUT_OF_MEMORY (then no
 * forward is kept). */
rlt_status rlt_mlp_forward(rlt_mlp *m, int n_rows, const float *x, float *out_y, rlt_diag *diag);

/* The same outputs as rlt_mlp_forward, bit for bit, without keeping
 * anything: m is not modified (a kept forward stays valid). Allocates its
 * scratch per call. Errors as rlt_mlp_forward. */
rlt_status rlt_mlp_predict(const rlt_mlp *m, int n_rows, const float *x, float *out_y, rlt_diag *diag);

/* Backward pass of the last rlt_mlp_forward: given dout = dL/dy
 * [n_rows x n_outputs], adds dL/dparameters (summed over the rows) to the
 * gradients, and writes dL/dx [n_rows x n_inputs] to out_dx (may be NULL).
 * Does not allocate; may be called more than once per forward (each call
 * adds again). Errors: INVALID_ARGUMENT when no forward is kept or its row
 * count is not n_rows, or dout is NULL. */
rlt_status rlt_mlp_backward(rlt_mlp *m, int n_rows, const float *dout, float *out_dx, rlt_diag *diag);

/* Sets every gradient to 0. */
void rlt_mlp_zero_grad(rlt_mlp *m);

/* The Euclidean norm of all gradients together (computed in double). */
double rlt_mlp_grad_norm(const rlt_mlp *m);

/* Gradient-norm clipping: when the norm of all gradients is above max_norm,
 * scales them so that it is max_norm. *out_norm (may be NULL) gets the norm
 * before clipping. Errors: INVALID_ARGUMENT when max_norm is not a positive
 * finite number, or when a gradient is NaN or infinite (the message names
 * the first; nothing is changed), so a diverging run stops here instead of
 * writing NaN into the weights. */
rlt_status rlt_mlp_grad_clip(rlt_mlp *m, double max_norm, double *out_norm, rlt_diag *diag);

/* Copies src's parameters into dst (a DQN's target network); gradients,
 * kept forwards and optimiser state are untouched. Errors:
 * INVALID_ARGUMENT when the specs differ (rlt_mlp_spec_equal). */
rlt_status rlt_mlp_copy_weights(rlt_mlp *dst, const rlt_mlp *src, rlt_diag *diag);

/* ---- losses -------------------------------------------------------------- */

/* Mean squared error over n elements: mean((pred - target)^2); out_grad
 * [n] (may be NULL) gets 2 (pred - target) / n. Errors: INVALID_ARGUMENT for
 * n < 1, a NULL array, or a pred or target that is not finite (the message
 * names the element). */
rlt_status rlt_nn_loss_mse(int n, const float *pred, const float *target, double *out_loss, float *out_grad,
                           rlt_diag *diag);

/* Huber (smooth L1) loss over n elements, as PyTorch's HuberLoss: per
 * element 0.5 e^2 for |e| <= delta, else delta (|e| - 0.5 delta), with
 * e = pred - target; the mean. out_grad [n] may be NULL. Errors as MSE, and
 * INVALID_ARGUMENT for a delta that is not positive and finite. */
rlt_status rlt_nn_loss_huber(int n, const float *pred, const float *target, double delta, double *out_loss,
                             float *out_grad, rlt_diag *diag);

/* DQN's loss: the Huber loss of pred[i][cols[i]] against target[i] for each
 * of n_rows rows of pred [n_rows x n_cols] (the Q-value of the action taken
 * against its bootstrapped target), averaged over the rows. out_grad
 * [n_rows x n_cols] (may be NULL) gets the gradient: 0 outside the picked
 * elements. Errors as rlt_nn_loss_huber, and INVALID_ARGUMENT for a column
 * outside 0..n_cols-1. */
rlt_status rlt_nn_loss_huber_picked(int n_rows, int n_cols, const float *pred, const int *cols,
                                    const float *target, double delta, double *out_loss, float *out_grad,
                                    rlt_diag *diag);

/* ---- softmax over groups of columns --------------------------------------- */

/* How each row of n_cols outputs splits into consecutive groups, each its
 * own categorical distribution: PPO's per-knob heads are n_groups = knobs,
 * 3 columns each ({dec, stay, inc}). A value; `sizes` is borrowed. */
typedef struct rlt_nn_groups {
    int n_cols;       /* columns in a row, >= 1 */
    int n_groups;     /* >= 1 */
    const int *sizes; /* n_groups sizes >= 1 summing to n_cols; NULL: n_groups equal
                         groups of n_cols / n_groups (which must divide) */
} rlt_nn_groups;

/* Every function below refuses a grouping that breaks these rules, n_rows <
 * 1 and NULL arrays (INVALID_ARGUMENT, naming what was wrong); those that
 * read logits also refuse a logit that is not finite. Actions are
 * [n_rows x n_groups] indices within each group (0..size-1), also checked.
 * Arrays are [n_rows x n_cols] unless said otherwise. */

/* Softmax within each group of each row (max-subtracted, in double):
 * out_probs [n_rows x n_cols]. */
rlt_status rlt_nn_softmax(const rlt_nn_groups *g, int n_rows, const float *logits, float *out_probs,
                          rlt_diag *diag);

/* Given the softmax's output probs and dL/dprobs, writes dL/dlogits:
 * p_j (dp_j - sum_k p_k dp_k) within each group. */
rlt_status rlt_nn_softmax_backward(const rlt_nn_groups *g, int n_rows, const float *probs, const float *dprobs,
                                   float *out_dlogits, rlt_diag *diag);

/* Log-softmax within each group (log-sum-exp in double): out_logp
 * [n_rows x n_cols], finite for finite logits however large. */
rlt_status rlt_nn_log_softmax(const rlt_nn_groups *g, int n_rows, const float *logits, float *out_logp,
                              rlt_diag *diag);

/* Given log-softmax's output logp and dL/dlogp, writes dL/dlogits:
 * dlogp_j - exp(logp_j) sum_k dlogp_k within each group. */
rlt_status rlt_nn_log_softmax_backward(const rlt_nn_groups *g, int n_rows, const float *logp, const float *dlogp,
                                       float *out_dlogits, rlt_diag *diag);

/* The log-probability of each row's joint action (one choice per group):
 * out_log_prob[i] = sum over groups of logp[i][chosen column]. */
rlt_status rlt_nn_log_prob_picked(const rlt_nn_groups *g, int n_rows, const float *logp, const int *actions,
                                  float *out_log_prob, rlt_diag *diag);

/* Its backward: given dL/dlog_prob [n_rows], writes dL/dlogp
 * [n_rows x n_cols] (the row's value at each chosen column, 0 elsewhere). */
rlt_status rlt_nn_log_prob_picked_backward(const rlt_nn_groups *g, int n_rows, const int *actions,
                                           const float *dlog_prob, float *out_dlogp, rlt_diag *diag);

/* Softmax cross-entropy of chosen actions (negative log-likelihood):
 * -(1/n_rows) sum_i w_i log_prob_i, with log_prob_i as above from the
 * logits and w = row_weights (may be NULL: all 1; advantages give the
 * plain policy gradient). out_dlogits [n_rows x n_cols] (may be NULL) gets
 * (w_i / n_rows) (softmax - onehot) within each group. row_weights must be
 * finite. */
rlt_status rlt_nn_loss_nll(const rlt_nn_groups *g, int n_rows, const float *logits, const int *actions,
                           const float *row_weights, double *out_loss, float *out_dlogits, rlt_diag *diag);

/* The mean over rows of the summed entropy of the groups' distributions
 * (PPO's entropy bonus: the caller subtracts coef x this from its loss).
 * out_dlogits (may be NULL) gets its gradient, -(1/n_rows) p_j (log p_j + H)
 * within each group of entropy H. */
rlt_status rlt_nn_entropy(const rlt_nn_groups *g, int n_rows, const float *logits, double *out_entropy,
                          float *out_dlogits, rlt_diag *diag);

/* PPO's clipped surrogate over a minibatch of m rows:
 * -(1/m) sum_i min(q_i A_i, clip(q_i, 1 - c, 1 + c) A_i), with
 * q_i = exp(logp[i] - logp_old[r]) and A_i = adv[r], r = rows[i] (rows NULL:
 * r = i; the old log-probabilities and advantages are the rollout's). Writes
 * the gradient with respect to logp into out_dlogp [m] (0 where the clipped
 * term is the smaller: it is constant in q there) and returns the loss. */
double rlt_nn_ppo_clip_grad(int m, const float *logp, const float *logp_old, const float *adv, const int *rows,
                            double clip, float *out_dlogp);

/* ---- Adam ---------------------------------------------------------------- */

/* Zero fields take the defaults (PyTorch's): lr 1e-3, beta1 0.9,
 * beta2 0.999, eps 1e-8, weight_decay 0. */
typedef struct rlt_adam_opts {
    double lr;           /* > 0 */
    double beta1;        /* in (0, 1) */
    double beta2;        /* in (0, 1) */
    double eps;          /* > 0 */
    double weight_decay; /* >= 0; decoupled (AdamW): p -= lr * weight_decay * p each step */
} rlt_adam_opts;

typedef struct rlt_adam rlt_adam;

/* An optimiser for the parameters of networks shaped like m (its state,
 * first and second moments of every parameter, starts at 0, at step 0).
 * opts may be NULL (all defaults). On success *out is owned by the caller
 * (free with rlt_adam_destroy). Errors: INVALID_ARGUMENT for an option out
 * of range (named), OUT_OF_MEMORY. */
rlt_status rlt_adam_create(const rlt_adam_opts *opts, const rlt_mlp *m, rlt_adam **out, rlt_diag *diag);
void rlt_adam_destroy(rlt_adam *a); /* NULL ok */

/* One Adam step on m's parameters from its gradients, with bias
 * correction (PyTorch's Adam; AdamW when weight_decay > 0). Does not zero
 * the gradients. Errors: INVALID_ARGUMENT when m's parameter count is not
 * the optimiser's, or a gradient is NaN or infinite (named; nothing is
 * changed, the step count included). */
rlt_status rlt_adam_step(rlt_adam *a, rlt_mlp *m, rlt_diag *diag);

/* Steps taken (restored by rlt_mlp_load with the state). */
int64_t rlt_adam_n_steps(const rlt_adam *a);
/* The options in force, defaults resolved (borrowed). */
const rlt_adam_opts *rlt_adam_get_opts(const rlt_adam *a);
/* Changes the learning rate (schedules); INVALID_ARGUMENT unless lr is
 * positive and finite. */
rlt_status rlt_adam_set_lr(rlt_adam *a, double lr, rlt_diag *diag);

/* ---- weights files (docs/formats.md, "Network weights") ------------------ */

#define RLT_NN_FILE_VERSION 1

/* Serialises m's spec and parameters, and with `adam` (may be NULL) the
 * optimiser's options, step count and moments, so that training resumes
 * exactly. *out_bytes is owned by the caller (rlt_free). Errors:
 * INVALID_ARGUMENT when adam was made for a network of another size,
 * OUT_OF_MEMORY. */
rlt_status rlt_mlp_save_bytes(const rlt_mlp *m, const rlt_adam *adam, char **out_bytes, size_t *out_len,
                              rlt_diag *diag);

/* Reads what rlt_mlp_save_bytes wrote. `source` names the bytes in
 * messages (a file name). On success *out is a new network (rlt_mlp_destroy)
 * and, when out_adam is not NULL, *out_adam the saved optimiser
 * (rlt_adam_destroy), or NULL when none was saved. On failure both are
 * NULL. Errors: PARSE_ERROR for anything that is not a v1 weights file
 * with its checksum: wrong magic, another version, truncated, trailing
 * bytes, a layer spec out of range, a parameter count that does not match
 * the spec, a checksum mismatch, a NaN or infinite parameter, optimiser
 * state out of range; the message says which, and where. OUT_OF_MEMORY. */
rlt_status rlt_mlp_load_bytes(const char *bytes, size_t len, const char *source, rlt_mlp **out,
                              rlt_adam **out_adam, rlt_diag *diag);

/* The same through a file, written atomically (rlt_file_write). Files
 * larger than RLT_FILE_READ_MAX_BYTES are not read, so save refuses to
 * write one (INVALID_ARGUMENT). IO_ERROR when the file cannot be written
 * or read; messages name the file. */
rlt_status rlt_mlp_save(const rlt_mlp *m, const rlt_adam *adam, const char *path, rlt_diag *diag);
rlt_status rlt_mlp_load(const char *path, rlt_mlp **out, rlt_adam **out_adam, rlt_diag *diag);

/* ---- graph layers (gnn.c) ------------------------------------------------ */

/* A message-passing network over a graph's nodes (the graph-rewrite
 * policy's encoder): layer l maps every node's features h to
 *     h'_v = relu(W_l [h_v ; mean of h_u over v's neighbours] + b_l)
 * (neighbours both ways along the edges; a node without any gets zeros),
 * n_layers layers of n_hidden units, the first reading n_inputs features.
 * Each layer is an rlt_mlp of one dense layer (2 x its input width ->
 * n_hidden, ReLU): Adam, saving and loading work on them one by one. */
typedef struct rlt_gnn_spec {
    int n_inputs;  /* features per node, 1..RLT_MLP_MAX_UNITS / 2 */
    int n_hidden;  /* 1..RLT_MLP_MAX_UNITS / 2 */
    int n_layers;  /* 1..RLT_MLP_MAX_LAYERS */
} rlt_gnn_spec;

typedef struct rlt_gnn rlt_gnn;

/* Layer l's weights from seed + l (rlt_mlp_create). Errors:
 * INVALID_ARGUMENT (a spec out of range), OUT_OF_MEMORY. */
rlt_status rlt_gnn_create(const rlt_gnn_spec *spec, uint64_t seed, rlt_gnn **out, rlt_diag *diag);
/* A network over the given layers (moved into it: the caller's pointers
 * are owned by the network from now on, also on failure); they must chain
 * as rlt_gnn_create's do. INVALID_ARGUMENT otherwise. */
rlt_status rlt_gnn_from_layers(int n_layers, rlt_mlp **layers, rlt_gnn **out, rlt_diag *diag);
void rlt_gnn_destroy(rlt_gnn *g); /* NULL ok */

const rlt_gnn_spec *rlt_gnn_get_spec(const rlt_gnn *g);
/* Layer l (borrowed): for Adam, saving, copying. */
rlt_mlp *rlt_gnn_layer(rlt_gnn *g, int l);

/* Forward over one graph of n_nodes >= 1 nodes: x [n_nodes x n_inputs],
 * edges [n_edges x 2] (from, to: node indices, checked), out_h
 * [n_nodes x n_hidden]; keeps what rlt_gnn_backward needs (the last
 * forward replaces the ones before). Errors: INVALID_ARGUMENT (an edge out
 * of range, n_nodes < 1), OUT_OF_MEMORY. */
rlt_status rlt_gnn_forward(rlt_gnn *g, int n_nodes, const float *x, int n_edges, const int *edges, float *out_h,
                           rlt_diag *diag);
/* Accumulates the layers' gradients for dL/dh [n_nodes x n_hidden] of the
 * kept forward; out_dx [n_nodes x n_inputs] (may be NULL) gets dL/dx. */
rlt_status rlt_gnn_backward(rlt_gnn *g, const float *dh, float *out_dx, rlt_diag *diag);
void rlt_gnn_zero_grad(rlt_gnn *g);

#endif /* RLT_NN_H */
