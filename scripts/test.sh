#!/usr/bin/env bash
# The whole test suite, from a fresh machine: installs what it needs, builds
# the release and the sanitizer builds, runs every test in both (unit,
# golden, property, fuzz-corpus replay, CLI end to end), checks the installed
# library (scripts/check-install.sh) and the Python package installed into a
# fresh venv (scripts/check-python-install.sh), then runs each fuzz
# target for FUZZ_SECONDS (default 20; scripts/fuzz.sh, build-fuzz/).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh --asan
# Kernels compiled by the tests go to a cache inside each build directory
# (set by CTest), so a test run never depends on a user's cache.
echo "== tests: release build"
(cd build && ctest --output-on-failure)
echo "== install: the library as a program outside rltune uses it"
scripts/check-install.sh build
echo "== install: the Python package into a fresh virtual environment, on the installed library"
scripts/check-python-install.sh build
echo "== tests: the Python package (python/tests, in .venv)"
.venv/bin/python -m pip install -q --disable-pip-version-check --no-build-isolation ./python
RLTUNE_LIB="$PWD/build/librltune.so" .venv/bin/python -m pytest python/tests -q
echo "== tests: the benchmark networks' generator, ONNX Runtime, rltune run and the oneDNN chain (tests/models, in .venv)"
RLTUNE_BIN="$PWD/build/rltune" RLTUNE_CACHE_DIR="$PWD/build/kernel-cache" \
    .venv/bin/python -m pytest tests/models -q -p no:cacheprovider
echo "== tests: ASan + UBSan build"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --output-on-failure)
# Criterion reports a test before its worker exits, so a leak found at exit
# does not fail it: look for every sanitizer report in the tests' output.
log=build-asan/Testing/Temporary/LastTest.log
if grep -qE "ERROR: (LeakSanitizer|AddressSanitizer)|runtime error:" "$log"; then
    grep -nE -A12 "ERROR: (LeakSanitizer|AddressSanitizer)|runtime error:" "$log" | head -60
    echo "sanitizer reports in the ASan + UBSan test run (see $log): failing"
    exit 1
fi
# Last, the libFuzzer targets: each for a bounded time over a scratch copy of
# its corpus (about a minute and a half on 2 cores, the build included).
scripts/fuzz.sh
