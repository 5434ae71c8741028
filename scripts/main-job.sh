#!/usr/bin/env bash
# rltune's main job: installs, builds, tunes matmul 512x512x512 with the
# xgb-rank tuner (records in rltune.db: a second run reads them back instead
# of measuring again), then prints the tuned kernel's GFLOP/s next to the
# untuned loop nest, the hand-written example schedule and OpenBLAS sgemm,
# all measured on this machine, one thread, pinned.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
op="matmul:M=512,N=512,K=512"
trials="${RLTUNE_MAIN_TRIALS:-256}"

echo
echo "== tuning $op: xgb-rank, $trials trials, records in rltune.db"
build/rltune tune --op "$op" --tuner xgb-rank --trials "$trials" --db rltune.db | tee build/main-tune.txt
echo
echo "== the best record"
build/rltune best --op "$op" --db rltune.db | tee build/main-best.txt

echo
echo "== baselines, measured now"
build/rltune measure --op "$op" --repeat 3 > build/main-default.txt
build/rltune measure --op "$op" --schedule examples/schedules/matmul_tiled.sched > build/main-tiled.txt
build/bench_sgemm 512 512 512 | tee build/main-openblas.txt

tuned=$(awk '/^best:/ {print $2}' build/main-best.txt)
default=$(awk '/^GFLOP\/s:/ {print $2}' build/main-default.txt)
tiled=$(awk '/^GFLOP\/s:/ {print $2}' build/main-tiled.txt)
openblas=$(sed -n 's/.*, \([0-9.]*\) GFLOP\/s.*/\1/p' build/main-openblas.txt)
echo
printf '%-34s %10s %14s\n' "$op, 1 thread" "GFLOP/s" "vs OpenBLAS"
for row in "rltune tuned (xgb-rank):$tuned" "hand-written example schedule:$tiled" \
           "untuned loop nest:$default" "OpenBLAS sgemm:$openblas"; do
    name=${row%%:*}
    value=${row##*:}
    printf '%-34s %10s %13.2fx\n' "$name" "$value" "$(awk -v a="$value" -v b="$openblas" 'BEGIN {print a / b}')"
done
