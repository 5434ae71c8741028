"""REINFORCE in numpy on rltune/LoopNest-v0, replaying a state dataset.

A small policy network (one hidden layer, masked softmax over the 17
actions) learns to schedule an op's loop nest from the env's observations,
with REINFORCE: whole episodes, the return-to-go against a per-step
baseline, Adam. Every state comes from a state dataset (measure="replay:
FILE"): nothing is compiled while learning, the rewards are noise-free, and
a seeded run repeats exactly. Prints the random policy's mean return, then
the mean return of every iteration, then the greedy policy's episode.

    .venv/bin/python -m pip install ./python
    .venv/bin/python examples/python/reinforce_numpy.py

The default dataset, examples/python/data/matmul32.states, was measured on
the development machine by

    rltune gen-dataset --kind states --op matmul:M=32,N=32,K=32 --depth 4 \\
        --out examples/python/data/matmul32.states

(about 1000 states, 2 to 3 minutes). With --op, or a --dataset that does
not exist yet, the example measures one itself (rltune.make_env_dataset,
--depth 3 by default: 200-odd states, 10-20 seconds on this machine).
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

import gymnasium as gym
import numpy as np
import numpy.typing as npt

import rltune

HERE = Path(__file__).resolve().parent
DEFAULT_OP = "matmul:M=32,N=32,K=32"
DEFAULT_DATASET = HERE / "data" / "matmul32.states"

Array = npt.NDArray[np.float64]


def features(obs: npt.NDArray[np.float32], high: npt.NDArray[np.float32]) -> Array:
    """The observation scaled to about [0, 1]: log2 features (bounded by
    64) over 16, the stride histogram and GFLOP/s (unbounded) through
    log1p, flags as they are."""
    x = obs.astype(np.float64)
    log2 = high == 64
    unbounded = high > 64
    x[log2] /= 16.0
    x[unbounded] = np.log1p(x[unbounded])
    return x


class Policy:
    """x -> tanh(x W1 + b1) W2 + b2 -> logits; illegal actions masked out."""

    def __init__(self, n_in: int, n_hidden: int, n_out: int, rng: np.random.Generator) -> None:
        self.params = {
            "W1": rng.normal(0, 1 / np.sqrt(n_in), (n_in, n_hidden)),
            "b1": np.zeros(n_hidden),
            "W2": rng.normal(0, 0.01, (n_hidden, n_out)),
            "b2": np.zeros(n_out),
        }

    def probs(self, x: Array, mask: npt.NDArray[np.int8]) -> tuple[Array, Array]:
        """Action probabilities (rows of x, masks) and the hidden layer."""
        p = self.params
        h = np.tanh(x @ p["W1"] + p["b1"])
        logits = h @ p["W2"] + p["b2"]
        logits = np.where(mask > 0, logits, -np.inf)
        logits -= logits.max(axis=-1, keepdims=True)
        e = np.exp(logits)
        return e / e.sum(axis=-1, keepdims=True), h

    def grads(self, x: Array, mask: npt.NDArray[np.int8], actions: npt.NDArray[np.int64], adv: Array,
              entropy_coef: float) -> dict[str, Array]:
        """Gradient of -(mean of adv * log pi(a|x) + entropy_coef * H(pi))."""
        p = self.params
        probs, h = self.probs(x, mask)
        n = len(actions)
        one_hot = np.zeros_like(probs)
        one_hot[np.arange(n), actions] = 1.0
        # d(-adv log pi(a))/dlogits = adv (pi - onehot); the entropy's: pi (log pi + H)
        logp = np.log(np.where(probs > 0, probs, 1.0))
        entropy = -(probs * logp).sum(axis=1, keepdims=True)
        d_logits = adv[:, None] * (probs - one_hot) + entropy_coef * probs * (logp + entropy)
        d_logits = np.where(mask > 0, d_logits, 0.0) / n
        d_h = (d_logits @ p["W2"].T) * (1 - h * h)
        return {"W1": x.T @ d_h, "b1": d_h.sum(0), "W2": h.T @ d_logits, "b2": d_logits.sum(0)}


@dataclass
class Adam:
    lr: float
    beta1: float = 0.9
    beta2: float = 0.999
    t: int = 0
    m: dict[str, Array] = field(default_factory=dict)
    v: dict[str, Array] = field(default_factory=dict)

    def step(self, params: dict[str, Array], grads: dict[str, Array]) -> None:
        self.t += 1
        for k, g in grads.items():
            self.m[k] = self.beta1 * self.m.get(k, 0) + (1 - self.beta1) * g
            self.v[k] = self.beta2 * self.v.get(k, 0) + (1 - self.beta2) * g * g
            m_hat = self.m[k] / (1 - self.beta1**self.t)
            v_hat = self.v[k] / (1 - self.beta2**self.t)
            params[k] -= self.lr * m_hat / (np.sqrt(v_hat) + 1e-8)


@dataclass
class Episode:
    xs: list[Array] = field(default_factory=list)
    masks: list[npt.NDArray[np.int8]] = field(default_factory=list)
    actions: list[int] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    final_gflops: float = 0.0


def run_episode(env: gym.Env, policy: Optional[Policy], high: npt.NDArray[np.float32], rng: np.random.Generator,
                seed: Optional[int] = None, greedy: bool = False) -> Episode:
    """One episode: actions drawn from the policy (None: uniform over the
    legal ones), or its most likely ones when greedy."""
    ep = Episode()
    obs, info = env.reset(seed=seed)
    done = False
    while not done:
        x, mask = features(obs, high), info["action_mask"]
        if policy is None:
            action = int(rng.choice(np.flatnonzero(mask)))
        else:
            probs = policy.probs(x[None], mask[None])[0][0]
            action = int(np.argmax(probs)) if greedy else int(rng.choice(len(probs), p=probs))
        obs, reward, terminated, truncated, info = env.step(action)
        ep.xs.append(x)
        ep.masks.append(mask)
        ep.actions.append(action)
        ep.rewards.append(float(reward))
        done = terminated or truncated
    ep.final_gflops = float(info["gflops"])
    return ep


def ensure_dataset(path: Path, op: str, depth: int, quiet: bool) -> None:
    """Measures the state dataset at `path` unless it exists."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    print(f"measuring {op}'s env states within {depth} steps into {path} ...", flush=True)

    def progress(done: int, total: int) -> None:
        if not quiet:
            print(f"\r  {done}/{total} states", end="", flush=True)

    r = rltune.make_env_dataset(op, path, depth=depth, progress=progress)
    print(f"\n  {r.n_states} states in {r.wall_s:.1f} s: start {r.start_gflops:.2f} GFLOP/s, "
          f"best {r.best_gflops:.2f}, peak {r.peak_gflops:.1f}")


def main(argv: Optional[Sequence[str]] = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--op", default=DEFAULT_OP, help=f"op spec (default {DEFAULT_OP})")
    parser.add_argument("--dataset", type=Path, default=None,
                        help="state dataset; measured first when missing (default: the shipped one for the "
                             "default op, else OP.states in the working directory)")
    parser.add_argument("--depth", type=int, default=3, help="steps of a dataset measured here (default 3)")
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--episodes", type=int, default=32, help="episodes per iteration")
    parser.add_argument("--max-steps", type=int, default=6, help="steps before an episode is truncated")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--entropy", type=float, default=0.01, help="entropy bonus")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quiet", action="store_true", help="one line per iteration only")
    args = parser.parse_args(argv)

    dataset = args.dataset
    if dataset is None:
        safe = args.op.replace(":", "_").replace(",", "_").replace("=", "")
        dataset = DEFAULT_DATASET if args.op == DEFAULT_OP else Path(f"{safe}.states")
    ensure_dataset(dataset, args.op, args.depth, args.quiet)

    env = gym.make("rltune/LoopNest-v0", op=args.op, measure=f"replay:{os.fspath(dataset)}",
                   max_steps=args.max_steps)
    high = env.observation_space.high
    rng = np.random.default_rng(args.seed)
    env.reset(seed=args.seed)
    core = env.unwrapped.core
    start_gflops = core.gflops
    random_returns = [sum(run_episode(env, None, high, rng).rewards) for _ in range(4 * args.episodes)]
    random_return = float(np.mean(random_returns))
    print(f"{args.op}: start {start_gflops:.2f} GFLOP/s, peak {core.peak_gflops:.1f}; "
          f"random policy: mean return {random_return:+.4f}")

    policy = Policy(len(high), args.hidden, rltune.env.N_ACTIONS, rng)
    adam = Adam(args.lr)
    returns: list[float] = []
    for it in range(args.iterations):
        episodes = [run_episode(env, policy, high, rng) for _ in range(args.episodes)]
        # returns-to-go, and a baseline per time step (the batch's mean)
        rtg = [np.cumsum(ep.rewards[::-1])[::-1] for ep in episodes]
        width = max(len(g) for g in rtg)
        padded = np.full((len(rtg), width), np.nan)
        for i, g in enumerate(rtg):
            padded[i, : len(g)] = g
        baseline = np.nanmean(padded, axis=0)
        adv = np.concatenate([g - baseline[: len(g)] for g in rtg])
        adv = adv / (adv.std() + 1e-8)
        x = np.array([x for ep in episodes for x in ep.xs])
        mask = np.array([m for ep in episodes for m in ep.masks])
        actions = np.array([a for ep in episodes for a in ep.actions])
        adam.step(policy.params, policy.grads(x, mask, actions, adv, args.entropy))
        mean_return = float(np.mean([g[0] for g in rtg]))
        returns.append(mean_return)
        best = max(ep.final_gflops for ep in episodes)
        print(f"iteration {it:3d}  mean return {mean_return:+.4f}  best end state {best:7.2f} GFLOP/s", flush=True)

    greedy = run_episode(env, policy, high, rng, greedy=True)
    print(f"greedy policy: {' '.join(rltune.ACTION_NAMES[a] for a in greedy.actions)} -> "
          f"{greedy.final_gflops:.2f} GFLOP/s (return {sum(greedy.rewards):+.4f})")
    if not args.quiet:
        print(core.schedule(), end="")
    stats = core.stats()
    print(f"{stats.n_evaluations} states looked up in {dataset}, {stats.n_cache_hits} cache hits; nothing compiled")
    env.close()
    return {"returns": returns, "random_return": random_return, "greedy_return": float(sum(greedy.rewards))}


if __name__ == "__main__":
    main(sys.argv[1:])
