#!/usr/bin/env bash
# Configures and builds rltune in build/ (release) and, with --asan, also in
# build-asan/ (AddressSanitizer + UndefinedBehaviorSanitizer). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
if [ "${1:-}" = "--asan" ]; then
    cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DRLTUNE_SANITIZE=ON -DRLTUNE_BENCH=OFF >/dev/null
    cmake --build build-asan -j"$jobs"
fi
