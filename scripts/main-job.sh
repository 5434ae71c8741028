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
tiled=examples/schedules/matmul_tiled.sched

echo
echo "== $op, default schedule (the plain triple loop)"
build/rltune measure --op "$op" --repeat 3 | tee build/main-default.txt
echo
echo "== $op, $tiled"
grep -v '^#' "$tiled"
build/rltune measure --op "$op" --schedule "$tiled" | tee build/main-tiled.txt

gflops() { awk '/^GFLOP\/s:/ {print $2}' "$1"; }
echo
printf '%-20s %12s\n' schedule GFLOP/s
printf '%-20s %12s\n' default "$(gflops build/main-default.txt)"
printf '%-20s %12s\n' tiled "$(gflops build/main-tiled.txt)"
