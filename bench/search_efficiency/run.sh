#!/usr/bin/env bash
# bench/search_efficiency: how many measurements each tuner needs to reach
# 90/95/99% of the best known configuration (issue 5).
#
#   bench/search_efficiency/run.sh [--samples N] [--skip-live]
#
# 1. Datasets: for every workload in workloads.txt, `rltune dataset` measures
#    N random configurations (default 1024) once, into datasets/ (resumable:
#    a dataset already complete is left as it is). This is the slow part
#    (minutes per workload); keep the machine otherwise idle meanwhile.
# 2. Replay: `rltune experiment --config replay.json`: every tuner x workload
#    x 10 seeds, answered from the datasets, in seconds to minutes.
# 3. Live (unless --skip-live): `rltune experiment --config live.json`: the
#    same comparison measured on this machine, two workloads, fewer seeds.
# Reports go to out/search_efficiency/{replay,live}/ (report.html, table.md,
# results.json, plots). The numbers go into bench/RESULTS.md by hand, with
# the date.
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
    "$rltune" dataset --op "$op" --out "$here/datasets/w$i.db" --samples "$samples" --seed 0
done
echo "== replayed comparison"
"$rltune" experiment --config "$here/replay.json" --out "$root/out/search_efficiency/replay"
if [ "$live" = 1 ]; then
    echo "== live comparison"
    "$rltune" experiment --config "$here/live.json" --out "$root/out/search_efficiency/live"
fi
