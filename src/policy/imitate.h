/*
 * imitate.h - LoopTune policies learnt from search (`rltune gen-demos`,
 * `rltune imitate`): demonstrations, the traces of the best kernels search
 * finds, and behaviour cloning of them into a blind policy (algo bc,
 * policy.h). docs/policy.md, "Imitation", says why and how well it works.
 *
 *   imitate.c    the demonstrations file, making demonstrations, cloning
 *
 * Making demonstrations, two stages:
 *   1. Search. On each of the search shapes, every expert runs from the
 *      op's default nest: greedy search (lookahead 1) and, when a guide
 *      policy is given, the beam that policy guides. The trace of each
 *      result goes into a library of traces (each distinct one once).
 *   2. Label. On each of the label shapes, every trace of the library is
 *      walked in a blind env (a trace with an action illegal on that shape
 *      does not apply to it) and the nests where the traces end are
 *      measured in one batch (rlt_env_reset_batch). The shape's
 *      demonstration is the fastest trace, unless a trace within `tie` of
 *      it does better over all label shapes (the largest geometric mean of
 *      its GFLOP/s over each shape's best, a trace that does not apply or
 *      fails counting 1/100): near-ties go to the trace that serves most
 *      shapes, so that the policy is shown one consistent way and not the
 *      noise between equals. A shape where no trace beats the start
 *      nest gets the empty trace (stop at once).
 * A trace found on one shape is thus tried on all of them, so a shape is
 * labelled with the best of many searches' answers, not only its own.
 *
 * Cloning: every demonstration is replayed in a blind env; each state on
 * the way is one sample (its observation, GFLOP/s input zeroed, and the
 * trace's next action), the state at the end one more (stop). The network
 * is trained on them by masked softmax cross-entropy (Adam, minibatches,
 * seeded), and the policy is blind: rollouts need no measurement until the
 * end.
 */
#ifndef RLT_POLICY_IMITATE_H
#define RLT_POLICY_IMITATE_H

#include "policy/policy.h"
#include "rltune/train.h"

#include <signal.h>

/* Demonstrations and behaviour cloning are public: rltune/train.h. */

#endif /* RLT_POLICY_IMITATE_H */
