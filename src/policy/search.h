/*
 * search.h - searches over the LoopTune env that need no policy: the
 * baselines a trained policy is measured against (LoopTune's greedy search
 * with 1- and 2-step lookahead, beam search, random search), each on real
 * measurements through the env (every new state built, run and checked),
 * and `rltune optimize --search`. docs/policy.md describes them.
 *
 * All three search from the env's current state and return the best state
 * they evaluated (the start included), by measured GFLOP/s; a failed kernel
 * scores 0, so it is the result only when nothing beat the start. Ties go
 * to the state reached by fewer actions, then to the one found first.
 * Every action taken counts against max_steps: a trace never holds more
 * than max_steps actions.
 *
 * Greedy, lookahead L (1 or 2). A cursor move changes nothing measurable,
 * so a greedy search on GFLOP/s alone would never move the cursor. The
 * lookahead therefore sees through cursor moves: one *move* is "put the
 * cursor on loop p (|p - cursor| up or down actions, none when p is the
 * cursor's loop) then take one transforming action there" (swap_up ...
 * parallel: every action but up, down and stop), for every loop p and
 * every transforming action legal with the cursor on p, as long as the
 * move's actions fit in what is left of max_steps. From the current state
 * the search forms every sequence of 1 to L moves (L = 2: every move, then
 * every move from the state it reaches), measuring all the states of each
 * level in one rlt_env_prefetch batch. The sequence whose end state has
 * the most GFLOP/s wins (ties: fewer actions, then the first enumerated,
 * cursor loops nearest first, outer before inner, then the lower action
 * number); when its end state beats the current state's GFLOP/s, the
 * search takes the sequence's first move (its cursor moves and its
 * action) and looks ahead again, else it stops. So L = 2 takes a first
 * move that is neutral or worse when a second one makes up for it. Each
 * round takes at least one action, so at most max_steps rounds. The cost
 * of a round: with P loops and T legal transforming actions a loop, about
 * P x T states at level 1 and (P x T)^2 at level 2 (what an earlier
 * round measured is a cache hit): use time_budget_s on large nests.
 *
 * Beam, width W. Breadth-first over every legal action but stop (cursor
 * moves included): the W states of a level each take every legal action,
 * the new states are measured in one rlt_env_prefetch batch, and the W
 * best distinct states (nest hash and cursor) go on, ranked by measured
 * GFLOP/s (ties: the smaller trace, compared action by action). A state
 * that was on the beam at an earlier level does not come back, so the
 * beam cannot walk the cursor to and fro. max_steps levels, or until no
 * new state is left. The result is the best state of any level.
 *
 * Random. Walks of max_steps uniformly random legal actions (stop
 * excluded; a walk ends early where none is legal) from the start, until
 * time_budget_s of wall clock is spent or max_walks walks were taken. Walk
 * w draws its actions from an rlt_rng seeded with a hash of (seed, w), so
 * a seed fixes every walk whatever the timing; walks go in batches of 8 in
 * lock step, each level's new states measured in one rlt_env_prefetch
 * batch. The first batch always runs to its end (at least one walk); after
 * it the budget is checked between levels, so it is overrun by at most one
 * level of a batch.
 *
 * time_budget_s > 0 stops greedy and beam too. Beam checks it between
 * levels (the first always runs), so it is overrun by at most one level.
 * Greedy also checks it inside a round, between chunks of 32 states of a
 * level's batch (the first chunk always runs): when it runs out, the round
 * picks among the moves measured so far and the search ends, so it is
 * overrun by at most one chunk.
 */
#ifndef RLT_POLICY_SEARCH_H
#define RLT_POLICY_SEARCH_H

#include "policy/policy.h"

/* The searches' types and rlt_env_search are public: rltune/policy.h. */

#endif /* RLT_POLICY_SEARCH_H */
