#!/usr/bin/env bash
# bench/search_efficiency: how many measurements each tuner needs to reach
# 90/95/99% of the best known configuration (issue 5).
#
#   bench/search_efficiency/run.sh [--samples N] [--skip-live]
#
# 1. Sampled datasets: for every workload in workloads.txt, `rltune dataset`
#    measures N random configurations (default 1024) of its whole space
#    once, into datasets/w<i>.db (resumable: a dataset already complete is
#    left as it is; so is one made by an earlier codegen, which cannot be
#    resumed but replays under its own target). This and 2 are the slow
#    part (minutes per workload);
#    keep the machine otherwise idle meanwhile.
# 2. Complete sub-space datasets: for every line of subspaces.txt (an op and
#    the knobs it fixes), `rltune dataset --fix` measures every valid
#    configuration of the sub-space into datasets/f<i>.db. On these, tuners
#    that walk from configuration to neighbouring configuration can walk
#    (docs/datasets.md, "Fixed knobs"); on the sparse samples of 1 they
#    cannot.
# 3. Replay: `rltune experiment` with replay.json (the samples) and
#    replay-subspaces.json: every tuner x workload x 10 seeds, answered from
#    the datasets, in minutes; then replay-transfer-{matmul,conv2d}.json:
#    the learning tuners with their agents carried from workload to
#    workload (carry_agent) against the same tuners fresh.
# 4. Live (unless --skip-live): `rltune experiment --config live.json`: the
#    comparison measured on this machine: two workloads, 4 seeds, 256 trials
#    (about 35 minutes).
# Reports go to out/search_efficiency/{replay,replay-subspaces,replay-transfer-*,live}/
# (report.html, table.md, results.json, plots). The numbers go into
# bench/RESULTS.md by hand, with the date.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
samples=1024
live=1
while [ $# -gt 0 ]; do
    case "$1" in
    --samples) samples="$2"; shift 2 ;;
    --skip-live) live=0; shift ;;
    *) echo "usage: $0 [--samples N] [--skip-live]" >&2; exit 2 ;;
    esac
done
"$root/scripts/build.sh"
rltune="$root/build/rltune"
mkdir -p "$here/datasets"
i=0
grep -v '^#' "$here/workloads.txt" | grep -v '^$' | while read -r op; do
    i=$((i + 1))
    echo "== dataset $i: $op ($samples configurations)"
    if ! "$rltune" dataset --op "$op" --out "$here/datasets/w$i.db" --samples "$samples" --seed 0; then
        # a dataset made by an earlier codegen cannot be resumed, but it is
        # kept: it replays under its own target, and the replay refuses one
        # that is unfinished
        [ -e "$here/datasets/w$i.db" ] || exit 1
        echo "== dataset $i: kept as it is (delete it to measure it again)"
    fi
done
i=0
grep -v '^#' "$here/subspaces.txt" | grep -v '^$' | while read -r op fix; do
    i=$((i + 1))
    echo "== sub-space dataset $i: $op, fixed $fix"
    if ! "$rltune" dataset --op "$op" --fix "$fix" --out "$here/datasets/f$i.db" --samples 8192 --seed 0; then
        [ -e "$here/datasets/f$i.db" ] || exit 1
        echo "== sub-space dataset $i: kept as it is (delete it to measure it again)"
    fi
done
echo "== replayed comparison, samples"
"$rltune" experiment --config "$here/replay.json" --out "$root/out/search_efficiency/replay"
echo "== replayed comparison, complete sub-spaces"
"$rltune" experiment --config "$here/replay-subspaces.json" --out "$root/out/search_efficiency/replay-subspaces"
echo "== replayed comparison, agents carried from workload to workload"
for kind in matmul conv2d; do
    "$rltune" experiment --config "$here/replay-transfer-$kind.json" \
        --out "$root/out/search_efficiency/replay-transfer-$kind"
done
if [ "$live" = 1 ]; then
    echo "== live comparison"
    "$rltune" experiment --config "$here/live.json" --out "$root/out/search_efficiency/live"
fi
