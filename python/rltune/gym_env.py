"""rltune/LoopNest-v0: the LoopTune environment as a Gymnasium env.

    import gymnasium as gym, rltune
    env = gym.make("rltune/LoopNest-v0", op="matmul:M=64,N=64,K=64", max_steps=10)
    obs, info = env.reset(seed=0)
    action = env.action_space.sample(info["action_mask"])
    obs, reward, terminated, truncated, info = env.step(action)

Observation: the C env's observation (Box, float32, 359 floats, layout
docs/env.md). Actions: Discrete(17) (rltune.env.ACTION_NAMES).
info["action_mask"] (int8, 1 legal) is the C env's mask. The reward and
`terminated` (the stop action) come from rlt_env_step; `truncated` is set
after max_steps steps. A masked action does not change the state: by
default (illegal_action="noop") it is a step with reward 0 and
info["is_legal"] False; illegal_action="raise" raises IllegalScheduleError
instead. Measurement is live (each new state compiled, run and timed, with
small timing defaults), or `measure` is a callable scoring states
(rltune.env.Evaluator), which compiles nothing.
"""

from __future__ import annotations

import os
from typing import Any, Optional, SupportsFloat, Union

import gymnasium as gym
import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from ._lib import ffi, lib
from .env import ACTION_NAMES, N_ACTIONS, OBS_LEN, Evaluator, LoopTuneEnv
from .errors import IllegalScheduleError, InvalidArgumentError

ObsType = npt.NDArray[np.float32]


def _observation_bounds() -> tuple[ObsType, ObsType]:
    """Bounds of every feature (docs/env.md, "Observation"), as the C env
    declares them (rlt_env_observation_bounds)."""
    low = np.zeros(OBS_LEN, dtype=np.float32)
    high = np.zeros(OBS_LEN, dtype=np.float32)
    lib().rlt_env_observation_bounds(ffi.from_buffer("float[]", low), ffi.from_buffer("float[]", high))
    return low, high


class LoopNestEnv(gym.Env[ObsType, np.int64]):
    """The LoopTune environment (rltune/LoopNest-v0).

    Keyword arguments: op (a spec, required), threads (run-time threads of
    a parallel loop), max_steps (steps before truncation; 0 or None: only
    stop ends an episode), measure ("live", or a callable: see
    rltune.env.Evaluator), illegal_action ("noop" or "raise"), and the
    measurement options cc, cflags, cache_dir, repeat, min_repeat_ms,
    timeout_s, data_seed (the inputs of measured kernels) and peak_gflops
    (> 0: taken as given; 0: measured once per target and cached).
    Bad values raise ValueError (rltune's message for a bad op)."""

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        op: Optional[str] = None,
        *,
        threads: int = 1,
        max_steps: Optional[int] = 20,
        measure: Union[str, Evaluator] = "live",
        illegal_action: str = "noop",
        cc: Optional[str] = None,
        cflags: Optional[str] = None,
        cache_dir: Optional[str | os.PathLike[str]] = None,
        repeat: int = 2,
        min_repeat_ms: float = 2.0,
        timeout_s: float = 0.0,
        data_seed: int = 0,
        peak_gflops: float = 0.0,
        render_mode: Optional[str] = None,
    ) -> None:
        if not op or not isinstance(op, str):
            raise ValueError("LoopNest-v0 needs op=SPEC, an op spec such as 'matmul:M=64,N=64,K=64'")
        if max_steps is not None and (not isinstance(max_steps, int) or max_steps < 0):
            raise ValueError(f"max_steps must be an int >= 0 or None, not {max_steps!r}")
        if illegal_action not in ("noop", "raise"):
            raise ValueError(f"illegal_action must be 'noop' or 'raise', not {illegal_action!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'ansi', not {render_mode!r}")
        evaluate: Optional[Evaluator]
        if callable(measure):
            evaluate = measure
        elif measure == "live":
            evaluate = None
        elif isinstance(measure, str) and measure.startswith("replay:"):
            raise ValueError(
                "measure='replay:FILE' is not available yet: the C env (rlt_env) measures live or through an "
                "evaluator; pass measure=a callable to score states without measuring"
            )
        else:
            raise ValueError(f"measure must be 'live' or a callable, not {measure!r}")
        # The C env's own max_steps is left at 0: the step limit is a
        # truncation here, not a termination.
        self._env = LoopTuneEnv(
            op,
            n_threads=threads,
            cc=cc,
            cflags=cflags,
            cache_dir=cache_dir,
            repeat=repeat,
            min_repeat_ms=min_repeat_ms,
            timeout_s=timeout_s,
            seed=data_seed,
            peak_gflops=peak_gflops,
            evaluate=evaluate,
        )
        self.op = op
        self.max_steps = max_steps or 0
        self.illegal_action = illegal_action
        self.render_mode = render_mode
        low, high = _observation_bounds()
        self.observation_space = spaces.Box(low=low, high=high, shape=(OBS_LEN,), dtype=np.float32)
        self.action_space = spaces.Discrete(N_ACTIONS)
        self._n_steps = 0

    @property
    def core(self) -> LoopTuneEnv:
        """The C env's handle (tree, schedule, gflops, stats, clone)."""
        return self._env

    def _info(self, is_legal: bool = True) -> dict[str, Any]:
        return {
            "action_mask": self._env.action_mask(),
            "gflops": self._env.gflops,
            "is_legal": is_legal,
            "n_steps": self._n_steps,
        }

    def reset(
        self, *, seed: Optional[int] = None, options: Optional[dict[str, Any]] = None
    ) -> tuple[ObsType, dict[str, Any]]:
        """Starts an episode at the op's default nest, or at
        options["schedule"] (a schedule's text). `seed` seeds the env's
        np_random (and the action space's sampler); the env itself is
        deterministic given the actions."""
        super().reset(seed=seed)
        if seed is not None:
            self.action_space.seed(seed)
        schedule = (options or {}).get("schedule")
        self._env.reset(schedule)
        self._n_steps = 0
        return self._env.observe(), self._info()

    def step(self, action: Any) -> tuple[ObsType, SupportsFloat, bool, bool, dict[str, Any]]:
        a = int(action)
        if not 0 <= a < N_ACTIONS:
            raise ValueError(f"action {action!r} is out of range: 0..{N_ACTIONS - 1} ({', '.join(ACTION_NAMES)})")
        if not self._env.is_reset:
            raise InvalidArgumentError("step before reset: call reset() first", status="INVALID_ARGUMENT", code=1)
        reward, terminated = 0.0, False
        is_legal = True
        try:
            reward, terminated = self._env.step(a)
        except IllegalScheduleError:
            if self.illegal_action == "raise":
                raise
            is_legal = False
        self._n_steps += 1
        truncated = bool(self.max_steps and self._n_steps >= self.max_steps and not terminated)
        return self._env.observe(), reward, terminated, truncated, self._info(is_legal)

    def render(self) -> Optional[str]:
        if self.render_mode == "ansi":
            return f"{self._env.tree()}GFLOP/s: {self._env.gflops:.2f}\n"
        return None

    def close(self) -> None:
        self._env.close()
        super().close()
