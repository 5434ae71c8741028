#!/usr/bin/env bash
# The Python package installed as a user installs it: `pip install ./python`
# into a fresh virtual environment (nothing of .venv/), its dependencies
# resolved by pip within the pins of python/requirements-dev.txt, against
# the library that scripts/check-install.sh installed into a scratch
# prefix; then, from outside the source tree (so that the installed copy is
# the one imported), the three environments made, checked by Gymnasium's
# env_checker and stepped, and one matmul measured live. Part of
# scripts/test.sh, after scripts/check-install.sh. Usage:
#   scripts/check-python-install.sh [BUILD_DIR]     (default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
prefix=$build/install-check
lib=$(find "$prefix" -name librltune.so | head -1)
[ -n "$lib" ] || { echo "check-python-install: no librltune.so under $prefix (run scripts/check-install.sh first)" >&2; exit 1; }
venv=$build/python-install-check
rm -rf "$venv"
"${PYTHON:-python3}" -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check -c python/requirements-dev.txt ./python
echo "== python: rltune $("$venv/bin/python" -m pip show rltune | sed -n 's/^Version: //p') installed into a fresh venv ($venv)"

cd "$venv"
RLTUNE_LIB=$lib RLTUNE_CACHE_DIR=${RLTUNE_CACHE_DIR:-$build/kernel-cache} "$venv/bin/python" - <<'EOF'
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
from gymnasium.utils.env_checker import check_env

import rltune

venv = Path(sys.prefix).resolve()
where = Path(rltune.__file__).resolve()
if venv not in where.parents:
    sys.exit(f"check-python-install: imported rltune from {where}, not from the fresh venv {venv}")

op = "matmul:M=16,N=16,K=16"
env = gym.make("rltune/LoopNest-v0", op=op, max_steps=4, cflags="-O1", repeat=1, min_repeat_ms=0.5)
check_env(env.unwrapped)
obs, info = env.reset(seed=0)
obs, reward, terminated, truncated, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
env.close()
for name in ("rltune/Knobs-v0", "rltune/GraphRewrite-v0"):
    assert name in gym.registry, name
o = rltune.Op(op)
s = rltune.Schedule().split("j", 16).reorder("i", "j.o", "k", "j.i").vectorize("j.i")
timing = rltune.measure(o, rltune.Nest(o, s), rltune.BuildOptions(cflags="-O2"), rltune.RunOptions(repeat=3))
assert timing.ok and timing.is_correct and timing.gflops > 0, timing
print(f"== python: LoopNest-v0 passes env_checker from the installed package ({where.parent}); {op} at {timing.gflops:.1f} GFLOP/s")
EOF
