#!/usr/bin/env bash
# Installs every Debian package that rltune's build, tests and benchmarks need,
# then the Python virtual environment .venv/ of the Python package's tests
# (pinned in python/requirements-dev.txt; docs/dependencies.md says why each).
# Non-interactive and idempotent: packages already present are left alone, and
# apt is only touched when something is missing; the venv is only rebuilt when
# the pins (or the Python it was made with) change.
set -euo pipefail
cd "$(dirname "$0")/.."

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
    libopenmpi-dev openmpi-bin            # --executor mpi (optional at build time: docs/distributed.md)
    iproute2                              # ip netns: the MPI executor's two-host test (tests/mpi/)
    python3 python3-venv                  # the Python package's tests (.venv/, below); no python3-dev: nothing is compiled
)

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done

if ((${#missing[@]} == 0)); then
    echo "install-deps: all ${#packages[@]} packages present"
else
    echo "install-deps: installing ${missing[*]}"
    sudo_cmd=()
    if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
    export DEBIAN_FRONTEND=noninteractive
    "${sudo_cmd[@]}" apt-get update -qq
    "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The virtual environment: made from scratch whenever the stamp (the pins and
# the interpreter's version) differs from what it was made with, so it holds
# exactly the pinned packages; the stamp is written last, so an interrupted
# install is redone. PYTHON picks the interpreter (default python3).
python=${PYTHON:-python3}
requirements=python/requirements-dev.txt
stamp=.venv/rltune-requirements.stamp
want=$({ "$python" -c 'import sys; print(sys.version)'; cat "$requirements"; })
if [ -x .venv/bin/python ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "install-deps: .venv up to date ($requirements)"
    exit 0
fi
echo "install-deps: making .venv from $requirements"
rm -rf .venv
"$python" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -r "$requirements"
printf '%s\n' "$want" >"$stamp"
