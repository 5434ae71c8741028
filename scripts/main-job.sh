#!/usr/bin/env bash
# rltune's main job: installs, builds, tunes matmul 512x512x512 with the
# xgb-rank tuner (records in rltune.db: a second run reads them back instead
# of measuring again), then prints the tuned kernel's GFLOP/s next to the
# untuned loop nest, the hand-written example schedule and OpenBLAS sgemm,
# all measured again on this machine in interleaved rounds, one thread,
# pinned.
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
echo "== the tuned kernel and the baselines, measured again: 3 rounds, each measuring all of them in turn"
# Tuning times each candidate briefly and keeps the fastest, which leans
# high; the table uses careful re-measurements, interleaved so that drifts
# of the machine hit every row alike, and takes each row's median.
rounds=3
: > build/main-rounds.txt
for round in $(seq 1 $rounds); do
    t=$(build/rltune measure --op "$op" --best --db rltune.db | awk '/^GFLOP\/s:/ {print $2}')
    h=$(build/rltune measure --op "$op" --schedule examples/schedules/matmul_tiled.sched | awk '/^GFLOP\/s:/ {print $2}')
    u=$(build/rltune measure --op "$op" --repeat 3 | awk '/^GFLOP\/s:/ {print $2}')
    o=$(build/bench_sgemm 512 512 512 | sed -n 's/.*, \([0-9.]*\) GFLOP\/s.*/\1/p')
    echo "round $round: tuned $t, hand-written $h, untuned $u, OpenBLAS $o" | tee -a build/main-rounds.txt
done
med() { awk -v col="$1" '{gsub(",", ""); for (i = 1; i <= NF; i++) if ($i == col) print $(i + 1)}' build/main-rounds.txt |
        sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
tuned=$(med tuned)
tiled=$(med hand-written)
default=$(med untuned)
openblas=$(med OpenBLAS)
echo
printf '%-34s %10s %14s\n' "$op, 1 thread" "GFLOP/s" "vs OpenBLAS"
for row in "rltune tuned (xgb-rank):$tuned" "hand-written example schedule:$tiled" \
           "untuned loop nest:$default" "OpenBLAS sgemm:$openblas"; do
    name=${row%%:*}
    value=${row##*:}
    printf '%-34s %10s %13.2fx\n' "$name" "$value" "$(awk -v a="$value" -v b="$openblas" 'BEGIN {print a / b}')"
done
echo "(medians of $rounds rounds; each round in build/main-rounds.txt)"
