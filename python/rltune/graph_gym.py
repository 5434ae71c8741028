"""rltune/GraphRewrite-v0: the graph-rewrite environment as a Gymnasium env.

    import gymnasium as gym, rltune
    env = gym.make("rltune/GraphRewrite-v0", model="net.onnx")
    obs, info = env.reset(seed=0)
    action = env.action_space.sample(info["action_mask"])
    obs, reward, terminated, truncated, info = env.step(action)

Observation (a Dict): "graph", a gymnasium Graph instance (node features
[n_nodes x n_features], float32, docs/graph-opt.md "The environment"; edge
features all 1, as gymnasium wants some with edge_links; edge_links
[n_edges x 2], producer then reader); "cand_rule"
(max_candidates ints, the rule of each candidate, -1 past the last);
"cand_nodes" ([max_candidates x 12], the nodes each candidate's pattern
matched, -1 padded); "globals" (step / horizon, log of cost / first cost).
Actions: Discrete(max_candidates + 1); the last is stop. info["action_mask"]
(int8) marks the candidates offered and stop; info also has cost_ms,
cost0_ms, best_cost_ms, is_refused and is_legal. `terminated` is the stop
action or no candidate left; `truncated` the horizon (counted in env steps,
masked ones included). A masked action does not change the graph: by
default (illegal_action="noop") it is a step with reward 0 and
info["is_legal"] False; illegal_action="raise" raises InvalidArgumentError
(rltune's refusal) instead.

Keyword arguments: model (a path or a Model; or models, a list of them: each
reset picks one, seeded), rules (a Rules; default the shipped set,
verified), horizon (50), max_candidates (256), reward ("step": X-RLflow's
100 x (c_prev - c_new) / c_0; "best": the drop of the best cost), step_penalty,
db_path (records for the kernels' times), threads, cold_weights (True:
kernels costed cold, as graph_opt costs them), cost_seeds (a kernel without
a record costs the best of its first cost_seeds seeds; 0: 3 with db_path,
1 without), illegal_action.
"""

from __future__ import annotations

import os
from typing import Any, Optional, Sequence, SupportsFloat, Union

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from .graph_opt import MAX_ANCHORS, GraphEnv, Rules
from .model import Model

ModelLike = Union[str, "os.PathLike[str]", Model]


class GraphRewriteEnv(gym.Env[dict, np.int64]):
    """RLFlow's environment over rltune's verified rules (rltune/GraphRewrite-v0)."""

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        model: Optional[ModelLike] = None,
        *,
        models: Optional[Sequence[ModelLike]] = None,
        rules: Optional[Rules] = None,
        horizon: int = 50,
        max_candidates: int = 256,
        reward: str = "step",
        step_penalty: float = 0.0,
        db_path: Optional[str | os.PathLike[str]] = None,
        threads: int = 1,
        cold_weights: bool = True,
        cost_seeds: int = 0,
        illegal_action: str = "noop",
        render_mode: Optional[str] = None,
    ) -> None:
        if illegal_action not in ("noop", "raise"):
            raise ValueError(f"illegal_action must be 'noop' or 'raise', not {illegal_action!r}")
        self.illegal_action = illegal_action
        self.horizon = horizon
        self._steps = 0
        given = ([model] if model is not None else []) + list(models or [])
        if not given:
            raise ValueError("GraphRewrite-v0 needs model= (a path or a Model) or models=[...]")
        self._models = [m if isinstance(m, Model) else Model(m) for m in given]
        self.rules = rules if rules is not None else Rules()
        self._env = GraphEnv(self.rules, horizon=horizon, max_candidates=max_candidates, reward=reward,
                             step_penalty=step_penalty, db_path=db_path, threads=threads,
                             cold_weights=cold_weights, cost_seeds=cost_seeds)
        self.render_mode = render_mode
        n_features = self._env.n_features
        self.max_candidates = max_candidates
        self.action_space = spaces.Discrete(max_candidates + 1)
        self.observation_space = spaces.Dict({
            # features are one-hots, shares, and logs scaled to a few units (docs/graph-opt.md)
            "graph": spaces.Graph(node_space=spaces.Box(0.0, 16.0, (n_features,), np.float32),
                                  edge_space=spaces.Box(0, 1, (1,), np.float32)),
            "cand_rule": spaces.Box(-1, max(len(self.rules) - 1, 0), (max_candidates,), np.int64),
            "cand_nodes": spaces.Box(-1, np.iinfo(np.int32).max, (max_candidates, MAX_ANCHORS), np.int64),
            "globals": spaces.Box(np.array([0.0, -16.0], np.float32), np.array([1.0, 16.0], np.float32)),
        })
        self._obs = None

    def _observation(self, is_legal: bool = True) -> tuple[dict, dict]:
        o = self._env.observe()
        self._obs = o
        k = len(o.cand_rule)
        cand_rule = np.full(self.max_candidates, -1, dtype=np.int64)
        cand_rule[:k] = o.cand_rule
        cand_nodes = np.full((self.max_candidates, MAX_ANCHORS), -1, dtype=np.int64)
        cand_nodes[:k] = o.cand_nodes
        step_share = min(o.step / o.horizon, 1.0) if o.horizon else 0.0
        ratio = float(np.clip(np.log(o.cost_ms / o.cost0_ms), -16, 16)) if o.cost0_ms > 0 and o.cost_ms > 0 else 0.0
        obs = {
            "graph": spaces.GraphInstance(nodes=o.features, edges=np.ones((len(o.edges), 1), dtype=np.float32),
                                          edge_links=o.edges),
            "cand_rule": cand_rule,
            "cand_nodes": cand_nodes,
            "globals": np.array([step_share, ratio], dtype=np.float32),
        }
        info = {
            "action_mask": o.mask.copy(),
            "cost_ms": o.cost_ms,
            "cost0_ms": o.cost0_ms,
            "best_cost_ms": o.best_cost_ms,
            "is_refused": o.is_refused,
            "is_legal": is_legal,
        }
        return obs, info

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict[str, Any]] = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self._steps = 0
        i = int(self.np_random.integers(len(self._models))) if len(self._models) > 1 else 0
        self._env.reset(self._models[i])
        return self._observation()

    def step(self, action: Any) -> tuple[dict, SupportsFloat, bool, bool, dict]:
        a = int(action)
        self._steps += 1
        if self._obs is not None and not (0 <= a < len(self._obs.mask) and self._obs.mask[a]) and \
                self.illegal_action == "noop":
            obs, info = self._observation(is_legal=False)
            return obs, 0.0, False, self._steps >= self.horizon, info
        reward, done = self._env.step(a)
        obs, info = self._observation()
        o = self._obs
        truncated = bool(done and o.step >= o.horizon and a != self.max_candidates) or \
            (not done and self._steps >= self.horizon)
        terminated = bool(done and not truncated)
        return obs, reward, terminated, truncated, info

    @property
    def n_cost_evals(self) -> int:
        """Graphs costed since the environment was made."""
        return self._env.n_cost_evals

    def best_model(self) -> Model:
        """The episode's best graph, as a Model."""
        return self._env.best_model()

    def render(self) -> Optional[str]:
        if self.render_mode != "ansi" or self._obs is None:
            return None
        o = self._obs
        names = self.rules.names()
        lines = [f"step {o.step}/{o.horizon}: cost {o.cost_ms:.4f} ms (first {o.cost0_ms:.4f}, best {o.best_cost_ms:.4f}),"
                 f" {len(o.cand_rule)} candidates"]
        lines += [f"  {k}: {names[r]}" for k, r in enumerate(o.cand_rule[:10])]
        return "\n".join(lines)

    def close(self) -> None:
        self._env.close()
