#!/usr/bin/env bash
# rltune's main job until the tuner lands: installs, builds, then measures
# matmul 512x512x512 with its default (unscheduled) loop nest and with a
# tiled, register-blocked schedule, each verified against the reference, and
# prints GFLOP/s.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
op="matmul:M=512,N=512,K=512"
echo
echo "== $op, default schedule (the plain triple loop)"
build/rltune measure --op "$op" --repeat 3
echo
echo "== $op, examples/schedules/matmul_tiled.sched"
cat examples/schedules/matmul_tiled.sched
build/rltune measure --op "$op" --schedule examples/schedules/matmul_tiled.sched
