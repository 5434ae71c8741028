"""Python's overhead per step of rltune/LoopNest-v0 over the C API, for
steps that measure nothing (issue 29: at most 10%).

Two envs that measure nothing: one replaying a state dataset
(measure="replay:FILE"), one scoring states with an evaluator (a number
from the state's hash; after the warm pass every state is in the env's
cache, so it is never called). A step is then the env's own work: the
transition, the look-up, the mask (a replay remembers its masks; the
evaluator's env computes each one, 17 actions tried), the observation. One
fixed sequence of actions (seeded random legal ones of the replay, resets
included) is stepped through

  - C: bench/python/c_steps.c, built here against the same librltune.so,
    calling rlt_env_step, rlt_env_observe and rlt_env_action_mask per step
    (what a Gymnasium step hands back);
  - gym: the env as gym.make gives it (its checker and order wrappers);
  - unwrapped: the LoopNestEnv itself;
  - core: rltune.LoopTuneEnv's step, observe and action_mask;
  - floor: the least a Python step can do: the three C calls through cffi
    straight, the observation and mask arrays and the info dict, nothing
    checked (what any binding of this C API per step pays);
  - C batch, N envs: c_steps stepping N clones of the env together
    through a C vector env (rlt_env_vec: one rlt_env_vec_step per step of
    all N, episodes truncated at the sequence's episode length, autoreset
    at the next step, every output written): what the vector env asks of
    C;
  - vector env, N envs: gym.make_vec's LoopNestVectorEnv (one
    rlt_env_vec_step per call, autoreset by gymnasium's rules);

round after round, each in turn, every pass after a warm one that fills the
env's cache (as a long training run's is). For the N-env rows each env
follows the same sequence, rotated by a whole number of episodes (env j
starts at episode j * episodes / N), the step limit (max_steps) being the
sequence's episode length, so that the vector env's autoresets fall where
the sequence resets; their times are per env step, a call's divided by N.
Prints each one's median nanoseconds per step over the rounds and its
overhead over C's median (and a vector env's over the C batch of as many
envs), as a Markdown table.

    .venv/bin/python bench/python/overhead.py [--rounds 11] [--episodes 500] [--num-envs 8,64]

The process is pinned to one CPU (the last), and so is c_steps, its child.
Needs a C compiler (cc, or $CC) for c_steps.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import gymnasium as gym
import numpy as np

import rltune

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OP = "matmul:M=32,N=32,K=32"
DEFAULT_DATASET = ROOT / "examples" / "python" / "data" / "matmul32.states"


def build_c_steps(out_dir: Path) -> Path:
    """c_steps linked against the librltune.so this process loaded."""
    lib = Path(rltune.library_path()).resolve()
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        sys.exit("overhead.py: no C compiler (cc, gcc or $CC) to build c_steps")
    exe = out_dir / "c_steps"
    cmd = [cc, "-O2", "-std=gnu11", f"-I{ROOT / 'include'}", str(ROOT / "bench" / "python" / "c_steps.c"),
           "-o", str(exe), str(lib), f"-Wl,-rpath,{lib.parent}"]
    subprocess.run(cmd, check=True)
    return exe


def action_trace(op: str, dataset: Path, n_episodes: int, episode_steps: int, seed: int) -> list[int]:
    """Seeded random legal actions, -1 for each reset."""
    env = rltune.LoopTuneEnv(op, replay_path=dataset)
    rng = np.random.default_rng(seed)
    actions: list[int] = []
    for _ in range(n_episodes):
        env.reset()
        actions.append(-1)
        for _ in range(episode_steps):
            a = int(rng.choice(np.flatnonzero(env.action_mask())))
            actions.append(a)
            _, done = env.step(a)
            if done:
                break
    env.close()
    return actions


def vector_actions(actions: list[int], num_envs: int) -> np.ndarray:
    """The action sequence for num_envs envs, one row per call: env j's
    column is the sequence rotated to start at episode j * episodes /
    num_envs (the same steps, at other times)."""
    episodes: list[list[int]] = []
    for a in actions:
        if a < 0:
            episodes.append([])
        episodes[-1].append(a)
    columns = []
    for j in range(num_envs):
        k = j * len(episodes) // num_envs
        columns.append([a for ep in episodes[k:] + episodes[:k] for a in ep])
    return np.array(columns, dtype=np.int64).T


def vector_pass(env: Any, rows: np.ndarray) -> float:
    """Nanoseconds per env step of one pass: the first row is a reset,
    every later -1 an autoreset (its action ignored)."""
    steps = np.where(rows < 0, 0, rows)
    t0 = time.perf_counter_ns()
    env.reset()
    for t in range(1, len(steps)):
        env.step(steps[t])
    return (time.perf_counter_ns() - t0) / rows.size


def python_pass(step: Callable[[int], Any], reset: Callable[[], Any], actions: list[int]) -> float:
    """Nanoseconds per step of one pass."""
    t0 = time.perf_counter_ns()
    for a in actions:
        if a < 0:
            reset()
        else:
            step(a)
    return (time.perf_counter_ns() - t0) / len(actions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--op", default=DEFAULT_OP)
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET,
                        help="a state dataset of --op (default: the examples' matmul 32^3, 4 steps deep)")
    parser.add_argument("--rounds", type=int, default=11, help="passes of each, interleaved (median taken)")
    parser.add_argument("--episodes", type=int, default=500, help="episodes in the action sequence")
    parser.add_argument("--episode-steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-envs", default="8,64",
                        help="sizes of the vector env (and C batch) rows, comma separated; '' for none")
    args = parser.parse_args()
    args.num_envs = [int(n) for n in args.num_envs.split(",") if n]

    cpu = max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    actions = action_trace(args.op, args.dataset, args.episodes, args.episode_steps, args.seed)
    n_steps = sum(a >= 0 for a in actions)
    print(f"{args.op}: {len(actions)} calls per pass ({n_steps} steps, {len(actions) - n_steps} resets), "
          f"{args.rounds} rounds, CPU {cpu}; {platform.python_implementation()} {platform.python_version()}, "
          f"numpy {np.__version__}, gymnasium {gym.__version__}")
    with tempfile.TemporaryDirectory(prefix="rltune-overhead-") as tmp:
        exe = build_c_steps(Path(tmp))
        actions_file = Path(tmp) / "actions.txt"
        actions_file.write_text("\n".join(map(str, actions)) + "\n")
        batches: dict[int, tuple[np.ndarray, Path]] = {}
        for n in args.num_envs:
            rows = vector_actions(actions, n)
            path = Path(tmp) / f"actions_{n}.txt"
            path.write_text("\n".join(" ".join(map(str, row)) for row in rows) + "\n")
            batches[n] = (rows, path)
        for mode in ("replay", "evaluator"):
            print()
            bench_mode(mode, args, exe, actions, actions_file, batches)


def hash_gflops(req: rltune.EvalRequest) -> float:
    """c_steps' evaluator."""
    return 1.0 + req.nest_hash % 97


def bench_mode(mode: str, args: argparse.Namespace, exe: Path, actions: list[int], actions_file: Path,
               batches: dict[int, tuple[np.ndarray, Path]]) -> None:
    """Times the ways through the actions on the replay or the evaluator's
    env, and prints the table."""
    if mode == "replay":
        kwargs: dict[str, Any] = {"measure": f"replay:{args.dataset}"}
        core_kwargs: dict[str, Any] = {"replay_path": args.dataset}
        c_arg = str(args.dataset)
    else:
        kwargs = {"measure": hash_gflops, "peak_gflops": 100.0}
        core_kwargs = {"evaluate": hash_gflops, "peak_gflops": 100.0}
        c_arg = "-"
    gym_env = gym.make("rltune/LoopNest-v0", op=args.op, max_steps=0, **kwargs)
    unwrapped = gym_env.unwrapped
    core = rltune.LoopTuneEnv(args.op, **core_kwargs)
    obs = np.empty(rltune.env.OBS_LEN, dtype=np.float32)

    def core_step(a: int) -> None:
        core.step(a)
        core.observe(obs)
        core.action_mask()

    def core_reset() -> None:
        core.reset()
        core.observe(obs)
        core.action_mask()

    L = rltune._lib.lib()
    ptr, obs_c, view, reward, done, diag = core._ptr, core._obs_c, core._obs_view, core._reward, core._done, core._diag

    def floor_step(a: int) -> tuple[Any, ...]:
        L.rlt_env_step(ptr, a, reward, done, diag)
        L.rlt_env_observe(ptr, obs_c, 359, diag)
        o = view.copy()
        info = {"action_mask": o[342:].astype(np.int8), "gflops": L.rlt_env_gflops(ptr), "is_legal": True}
        return o, reward[0], done[0], False, info

    def floor_reset() -> tuple[Any, ...]:
        L.rlt_env_reset(ptr, diag)
        L.rlt_env_observe(ptr, obs_c, 359, diag)
        o = view.copy()
        return o, {"action_mask": o[342:].astype(np.int8), "gflops": L.rlt_env_gflops(ptr)}

    def c_pass(path: Path, n_envs: int = 0) -> Callable[[], float]:
        cmd = [str(exe), args.op, c_arg, str(path), "1"]
        if n_envs:  # a vector env of n_envs
            cmd += [str(n_envs), str(args.episode_steps)]
        return lambda: float(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.split()[0])

    passes: dict[str, Callable[[], float]] = {
        "C (c_steps)": c_pass(actions_file),
        "gym.make env": lambda: python_pass(gym_env.step, gym_env.reset, actions),
        "LoopNestEnv (unwrapped)": lambda: python_pass(unwrapped.step, unwrapped.reset, actions),
        "LoopTuneEnv (core)": lambda: python_pass(core_step, core_reset, actions),
        "floor (bare cffi calls)": lambda: python_pass(floor_step, floor_reset, actions),
    }
    vector_envs = []
    for n, (rows, path) in batches.items():
        vec = gym.make_vec("rltune/LoopNest-v0", num_envs=n, vectorization_mode="vector_entry_point", op=args.op,
                           max_steps=args.episode_steps, **kwargs)
        vector_envs.append(vec)
        passes[f"C batch, {n} envs (per env)"] = c_pass(path, n)
        passes[f"vector env, {n} envs (per env)"] = (lambda v, r: lambda: vector_pass(v, r))(vec, rows)
    for name, fn in passes.items():
        if not name.startswith("C"):
            fn()  # the warm pass
    times: dict[str, list[float]] = {name: [] for name in passes}
    for _ in range(args.rounds):
        for name, fn in passes.items():
            times[name].append(fn())
    gym_env.close()
    core.close()
    for vec in vector_envs:
        vec.close()

    c_median = statistics.median(times["C (c_steps)"])
    what = f"replaying {args.dataset.name}" if mode == "replay" else "an evaluator's env, every state cached"
    print(f"{what}:")
    print()
    print("| | median ns / call | min | max | over C | over C batch |")
    print("|---|---|---|---|---|---|")
    for name, ts in times.items():
        med = statistics.median(ts)
        over = "" if name == "C (c_steps)" else f"{100 * (med / c_median - 1):+.1f}%"
        over_batch = ""
        if name.startswith("vector env, "):  # over the C batch of as many envs
            batch = statistics.median(times[name.replace("vector env, ", "C batch, ")])
            over_batch = f"{100 * (med / batch - 1):+.1f}%"
        print(f"| {name} | {med:.0f} | {min(ts):.0f} | {max(ts):.0f} | {over} | {over_batch} |")


if __name__ == "__main__":
    main()
