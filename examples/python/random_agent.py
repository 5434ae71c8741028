"""A random agent on rltune/LoopNest-v0: legal actions drawn at random for a
few episodes, every new state compiled and timed on this machine; prints
each step and the best schedule found.

    .venv/bin/python -m pip install ./python
    .venv/bin/python examples/python/random_agent.py --op matmul:M=64,N=64,K=64
"""

from __future__ import annotations

import argparse

import gymnasium as gym
import numpy as np

import rltune


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--op", default="matmul:M=64,N=64,K=64", help="op spec")
    parser.add_argument("--episodes", type=int, default=2)
    parser.add_argument("--max-steps", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cflags", default=None, help="compiler flags (default rltune's -O3 ...)")
    args = parser.parse_args()

    env = gym.make("rltune/LoopNest-v0", op=args.op, max_steps=args.max_steps, cflags=args.cflags)
    assert isinstance(env.unwrapped, rltune.LoopNestEnv)
    core = env.unwrapped.core  # the C env's handle: tree, schedule, GFLOP/s
    best_gflops, best_schedule = 0.0, ""
    for episode in range(args.episodes):
        obs, info = env.reset(seed=args.seed + episode)
        rng = env.unwrapped.np_random
        print(f"episode {episode}: start {info['gflops']:.2f} GFLOP/s (peak {core.peak_gflops:.1f})")
        if info["gflops"] > best_gflops:
            best_gflops, best_schedule = info["gflops"], core.schedule()
        done = False
        while not done:
            action = int(rng.choice(np.flatnonzero(info["action_mask"])))
            obs, reward, terminated, truncated, info = env.step(action)
            print(f"  {rltune.ACTION_NAMES[action]:<10} reward {float(reward):+.4f}  {info['gflops']:8.2f} GFLOP/s")
            if info["gflops"] > best_gflops:
                best_gflops, best_schedule = info["gflops"], core.schedule()
            done = terminated or truncated
    stats = core.stats()
    print(f"best {best_gflops:.2f} GFLOP/s ({stats.n_evaluations} states measured, {stats.n_cache_hits} cache hits)")
    print(best_schedule, end="")
    env.close()


if __name__ == "__main__":
    main()
