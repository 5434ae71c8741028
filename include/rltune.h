/*
 * rltune.h - the public API of librltune, an autotuner and kernel compiler
 * for deep-learning tensor programs on the CPU. This header includes every
 * part; each can be included alone (rltune/<part>.h):
 *
 *   rltune/base.h      version, status codes, diagnostics, rlt_free
 *   rltune/op.h        operators: built-in specs, user expressions
 *   rltune/schedule.h  schedules (text or typed steps) and the nests they make
 *   rltune/measure.h   compile, run, check and time nests on this machine
 *   rltune/session.h   a tuning session, stepped batch by batch; the tuners;
 *                      datasets measured once for replayed tuning
 *   rltune/experiment.h  tuners x workloads x seeds, and their report
 *   rltune/space.h     knob spaces, and measuring their configurations
 *                      live or from a dataset (the knob environments)
 *   rltune/model.h     whole networks (ONNX): import, and the tasks to tune
 *   rltune/npy.h       n-dimensional arrays, read from and written to
 *                      NumPy .npy files
 *   rltune/records.h   the records database: best, history, export, import
 *   rltune/export.h    a kernel as a stand-alone C library
 *   rltune/env.h       the LoopTune environment over a loop nest
 *   rltune/policy.h    trained LoopTune policies and their rollouts; the
 *                      search baselines over the same actions
 *   rltune/train.h     training policies: shape datasets, demonstrations,
 *                      imitation, DQN and PPO
 *
 * Build against an installed rltune with `pkg-config --cflags --libs rltune`.
 *
 * Conventions. Every fallible call returns an rlt_status (RLT_STATUS_OK is
 * zero) and fills the caller's rlt_diag, which may be NULL, with a message
 * naming what was wrong, where, and what would be accepted; the long-lived
 * handles also keep their last error (rlt_session_last_error,
 * rlt_db_last_error, rlt_env_last_error, rlt_experiment_last_error).
 * Handles are opaque, made by a _create / _open / _parse / _load function and freed by
 * its _destroy / _close; a pointer a function returns is borrowed from its
 * argument unless the comment says to free it (rlt_free for strings).
 * There is no global state but the allocator's test hook. Distinct handles
 * may be used from distinct threads; one handle from one thread at a time.
 * Measurement forks a child per kernel: call it from one thread.
 *
 * Worked example: a schedule measured, then a tuning session, step by step
 * (examples/measure_matmul.c and examples/tune_matmul.c are these, whole).
 *
 *     rlt_diag d = {0};
 *     rlt_op *op = NULL;
 *     rlt_op_parse("matmul:M=256,N=256,K=256", &op, &d);
 *     rlt_sched *s = NULL;
 *     rlt_sched_parse("split j 16\nreorder i j.o k j.i\nvectorize j.i\n", "<inline>", &s, &d);
 *     rlt_nest *nest = NULL;
 *     rlt_nest_create(op, s, &nest, &d);          // legality checked per step
 *     rlt_workload *w = NULL;
 *     rlt_workload_create(op, NULL, 0, &w, &d);   // inputs + reference output
 *     rlt_run_result r;
 *     rlt_measure(w, NULL, NULL, 1, (const rlt_nest *const[]){nest}, &r, &d);
 *     printf("%s %.1f GFLOP/s\n", rlt_status_str(r.status), r.gflops);
 *
 *     rlt_session_options o;
 *     rlt_session_options_init(&o);
 *     o.n_trials = 32; o.batch_size = 8; o.db_path = "rltune.db";
 *     rlt_session *t = NULL;
 *     rlt_session_open(op, &o, &t, NULL, &d);
 *     while (!rlt_session_is_done(t) && rlt_session_step(t, &d) == RLT_STATUS_OK) {
 *         rlt_session_summary sum;
 *         rlt_session_summary_get(t, &sum);
 *         printf("%d trials: %.1f GFLOP/s\n", sum.n_trials, sum.best_gflops);
 *     }
 *     rlt_session_finish(t, &d);
 *     rlt_session_destroy(t);
 *     rlt_workload_destroy(w); rlt_nest_destroy(nest); rlt_sched_destroy(s); rlt_op_destroy(op);
 */
#ifndef RLTUNE_H
#define RLTUNE_H

#include "rltune/base.h"
#include "rltune/env.h"
#include "rltune/experiment.h"
#include "rltune/export.h"
#include "rltune/graph_opt.h"
#include "rltune/measure.h"
#include "rltune/model.h"
#include "rltune/npy.h"
#include "rltune/op.h"
#include "rltune/policy.h"
#include "rltune/records.h"
#include "rltune/schedule.h"
#include "rltune/session.h"
#include "rltune/space.h"
#include "rltune/train.h"

#endif /* RLTUNE_H */
