/*
 * train.h - training LoopTune policies (`rltune train`): DQN or PPO over
 * the LoopTune env (src/env, docs/env.md) on the training part of a shape
 * dataset (shapes.h), with checkpoints, resume, a reward curve and a
 * progress callback. docs/training.md describes the algorithms and why
 * each default is what it is; docs/formats.md the checkpoint's sections.
 *
 *   train.c      the run: options, episodes over the env slots, batched
 *                measurement, progress, checkpoints and resume, the curve
 *   train_dqn.c  double DQN: replay buffer, target network, epsilon-greedy
 *   train_ppo.c  PPO: masked actor, critic, GAE, clipped surrogate
 *
 * One run: n_envs slots each play episodes of episode_steps actions on a
 * shape drawn (seeded) from the dataset's training part, from the op's
 * default nest. At every step the actions of all slots are chosen, their new
 * states measured together (rlt_env_prefetch: compiled in parallel, run one
 * at a time), then each slot steps. Every env step counts toward n_steps.
 * One env family per shape lives for the whole run, so a state reached
 * twice is measured once.
 *
 * Determinism: one seed and one sequence of measurements give the same
 * actions and bit-identical networks (OpenBLAS is set to one thread).
 */
#ifndef RLT_POLICY_TRAIN_H
#define RLT_POLICY_TRAIN_H

#include "policy/policy.h"
#include "policy/shapes.h"
#include "rltune/train.h"

#include <signal.h>

/* The trainer's options, statistics and rlt_train are public: rltune/train.h. */

#endif /* RLT_POLICY_TRAIN_H */
