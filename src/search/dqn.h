/*
 * dqn.h - what the "dqn" tuner (dqn.c) offers beyond the tuner interface:
 * a look at its learned policy, for tests and inspection. The tuner itself
 * is created through rlt_tuner_create("dqn", ...) (search/tuner.h).
 */
#ifndef RLT_DQN_H
#define RLT_DQN_H

#include "search/tuner.h"

/* The move (-1, 0 or +1) each knob's Q-head chooses greedily (no
 * exploration) at configuration `c` on step `step` (0 .. horizon - 1) of an
 * episode: out_moves[k] for k < space->n_knobs. `t` is borrowed and not
 * changed. Errors: INVALID_ARGUMENT when t is not a dqn tuner or step is
 * out of range; OUT_OF_MEMORY. */
rlt_status rlt_tuner_dqn_greedy(const rlt_tuner *t, const rlt_config *c, int step, int *out_moves, rlt_diag *diag);

#endif /* RLT_DQN_H */
