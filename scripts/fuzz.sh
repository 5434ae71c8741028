#!/usr/bin/env bash
# Builds the libFuzzer targets tests/fuzz/fuzz_*.c with clang in build-fuzz/
# (CMake option RLTUNE_FUZZ: ASan + UBSan, undefined behaviour aborts) and
# runs each for FUZZ_SECONDS seconds (default 20) over a scratch copy of its
# committed corpus, tests/fuzz/corpus/NAME/ (build-fuzz/corpus/NAME/; the
# committed corpus is never written). Fails when a target crashes, leaks,
# reads out of bounds, hits undefined behaviour or hangs on an input: the
# input is kept in build-fuzz/findings/NAME/ and the target's log printed.
#
#   scripts/fuzz.sh              every target
#   scripts/fuzz.sh op sched     those of tests/fuzz/fuzz_op.c and fuzz_sched.c
#   FUZZ_SECONDS=600 scripts/fuzz.sh records
#
# FUZZ_JOBS targets run at once (default: the number of cores). A finding
# worth keeping goes into the committed corpus by hand, named as the
# corpus's replay test expects (each fuzz_*.c's header says which test).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-20}
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
build=build-fuzz

# The longest input each target is given (the formats' own sizes; libFuzzer
# would otherwise take the longest file of the corpus).
max_len_of() {
    case "$1" in
        op) echo 600 ;;
        sched) echo 400 ;;
        records) echo 4096 ;;
        nn | experiment) echo 2000 ;;
        agent) echo 4000 ;;
        *) echo 4096 ;;
    esac
}

if [ $# -gt 0 ]; then
    names=("$@")
else
    names=()
    for src in tests/fuzz/fuzz_*.c; do
        n=${src#tests/fuzz/fuzz_}
        names+=("${n%.c}")
    done
fi
for n in "${names[@]}"; do
    if [ ! -f "tests/fuzz/fuzz_$n.c" ] || [ ! -d "tests/fuzz/corpus/$n" ]; then
        echo "fuzz: no target '$n' (tests/fuzz/fuzz_$n.c and tests/fuzz/corpus/$n/)" >&2
        exit 2
    fi
done

CC=clang cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRLTUNE_FUZZ=ON -DRLTUNE_TESTS=OFF \
    -DRLTUNE_BENCH=OFF >/dev/null
cmake --build "$build" -j"$jobs" --target $(printf 'fuzz_%s ' "${names[@]}")

# One target: a fresh scratch corpus, findings and TMPDIR of its own.
run_one() {
    local n=$1
    local corpus=$build/corpus/$n findings=$build/findings/$n tmp=$build/tmp/$n log=$build/logs/$n.log
    rm -rf "$corpus" "$findings" "$tmp"
    mkdir -p "$corpus" "$findings" "$tmp" "$build/logs"
    cp -R "tests/fuzz/corpus/$n/." "$corpus/"
    local rc=0
    TMPDIR=$PWD/$tmp ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
        "$build/fuzz_$n" -max_total_time="$seconds" -max_len="$(max_len_of "$n")" -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$findings/" "$corpus" >"$log" 2>&1 || rc=$?
    rm -rf "$tmp"
    return $rc
}

echo "== fuzz: ${names[*]}, ${seconds} s each, $jobs at once"
failed=()
pending=("${names[@]}")
running=()
while [ ${#pending[@]} -gt 0 ] || [ ${#running[@]} -gt 0 ]; do
    while [ ${#pending[@]} -gt 0 ] && [ ${#running[@]} -lt "$jobs" ]; do
        run_one "${pending[0]}" &
        running+=("${pending[0]}:$!")
        pending=("${pending[@]:1}")
    done
    # wait for the first of the running ones to end
    first=${running[0]}
    n=${first%%:*}
    pid=${first##*:}
    rc=0
    wait "$pid" || rc=$?
    running=("${running[@]:1}")
    runs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$build/logs/$n.log" | grep -Eo '[0-9]+$' || echo "?")
    if [ "$rc" -ne 0 ]; then
        failed+=("$n")
        echo "fuzz_$n: FAILED (exit $rc) after $runs inputs; the input: $(ls "$build/findings/$n" | head -1)"
        tail -40 "$build/logs/$n.log"
    else
        echo "fuzz_$n: ok, $runs inputs"
    fi
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: ${failed[*]} failed (inputs in $build/findings/, logs in $build/logs/)"
    exit 1
fi
echo "fuzz: every target ran ${seconds} s without a finding"
