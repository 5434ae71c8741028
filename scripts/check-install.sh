#!/usr/bin/env bash
# Installs the release build (build/) into a scratch prefix and uses it as a
# program outside rltune would: every public header compiles on its own
# (as C11, and as C++ when g++ is there), every examples/*.c builds with
# nothing but `pkg-config --cflags --libs rltune` and runs, and
# librltune.so exports the public API (rlt_*) and nothing else. Part of
# scripts/test.sh; needs scripts/build.sh first. Usage:
#   scripts/check-install.sh [BUILD_DIR]     (default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
prefix=$build/install-check
out=$prefix/examples
rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
pc=$(find "$prefix" -name rltune.pc | head -1)
[ -n "$pc" ] || { echo "check-install: no rltune.pc under $prefix" >&2; exit 1; }
export PKG_CONFIG_PATH=$(dirname "$pc")
libdir=$(pkg-config --variable=libdir rltune)
cflags=$(pkg-config --cflags rltune)
libs=$(pkg-config --libs rltune)
echo "== install: $prefix (rltune $(pkg-config --modversion rltune))"

for h in "$prefix"/include/rltune.h "$prefix"/include/rltune/*.h; do
    name=${h#"$prefix"/include/}
    echo "#include <$name>" | cc -std=c11 -Wall -Wextra -Werror -pedantic $cflags -fsyntax-only -x c - ||
        { echo "check-install: <$name> does not compile on its own" >&2; exit 1; }
    if command -v g++ >/dev/null; then
        echo "#include <$name>" | g++ -Wall -Wextra -Werror $cflags -fsyntax-only -x c++ - ||
            { echo "check-install: <$name> does not compile as C++" >&2; exit 1; }
    fi
done
echo "== every public header compiles on its own"

# The shared library exports the API and nothing of rltune's insides.
so=$libdir/librltune.so
leaked=$(nm -D --defined-only "$so" | awk '$2 ~ /[TDB]/ {print $3}' | grep -v '^rlt_' | grep -v '^_' || true)
[ -z "$leaked" ] || { echo "check-install: librltune.so exports non-API symbols: $leaked" >&2; exit 1; }
declared=$(grep -ho '^RLT_API [^(]*(' "$prefix"/include/rltune/*.h |
    sed -E 's/.*[^a-z0-9_](rlt_[a-z0-9_]*) *\($/\1/' | sort -u)
exported=$(nm -D --defined-only "$so" | awk '{print $3}' | grep '^rlt_' | sort -u)
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
[ -z "$missing" ] || { echo "check-install: declared but not exported by librltune.so: $missing" >&2; exit 1; }
extra=$(comm -13 <(echo "$declared") <(echo "$exported"))
[ -z "$extra" ] || { echo "check-install: exported but not declared RLT_API: $extra" >&2; exit 1; }
echo "== librltune.so exports the $(echo "$declared" | wc -l) functions of the public API, nothing else"

mkdir -p "$out"
for src in examples/*.c; do
    name=$(basename "$src" .c)
    cc -std=c11 -Wall -Wextra -Werror "$src" $cflags $libs -o "$out/$name"
done
echo "== examples built with pkg-config: $(ls "$out" | tr '\n' ' ')"

export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export RLTUNE_CACHE_DIR=${RLTUNE_CACHE_DIR:-$build/kernel-cache}
"$out/measure_matmul" matmul:M=64,N=64,K=64
db=$out/tune.db
"$out/tune_matmul" matmul:M=32,N=32,K=32 "$db" | tail -n 2
# run again: every trial is read back, none measured
again=$("$out/tune_matmul" matmul:M=32,N=32,K=32 "$db")
echo "$again" | grep -q "after 32 trials (0 measured, 32 read back)" ||
    { echo "check-install: the rerun of tune_matmul measured something:" >&2; echo "$again" >&2; exit 1; }
"$out/looptune_greedy" matmul:M=32,N=32,K=32 3 | tail -n 3
echo "== examples ran against the installed library"
