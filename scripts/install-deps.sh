#!/usr/bin/env bash
# Installs every Debian package that rltune's build, tests and benchmarks need.
# Non-interactive and idempotent: packages already present are left alone, and
# apt is only touched when something is missing.
set -euo pipefail

packages=(
    build-essential cmake pkg-config      # toolchain and build system
    gcc clang libomp-14-dev               # kernel compilers (gcc default, clang selectable) + OpenMP
    libclang-rt-14-dev                    # clang's libFuzzer and sanitizer runtimes (scripts/fuzz.sh)
    libcriterion-dev                      # unit tests
    libcjson-dev                          # JSON output and configs
    libopenblas-dev                       # baseline sgemm in benchmarks
    libdnnl-dev                           # oneDNN baseline in benchmarks (bench_dnnl only)
    libsqlite3-dev                        # tuning records
    libxgboost-dev                        # cost model (XGBoost C API)
    gnuplot-nox                           # PNG plots of `rltune experiment` (optional at run time)
    protobuf-c-compiler                   # protoc-c: C code for ONNX's protobuf messages (cmake/onnx.cmake)
    libprotobuf-c-dev                     # protobuf-c runtime the generated ONNX decoder links (graph)
    libonnx-dev                           # onnx.proto, the ONNX model schema the decoder is generated from
)

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done

if ((${#missing[@]} == 0)); then
    echo "install-deps: all ${#packages[@]} packages present"
    exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
