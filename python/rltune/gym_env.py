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
small timing defaults), "replay:FILE" (every state looked up in a state
dataset, rltune.make_env_dataset: noise-free, nothing compiled; actions to
states it lacks are masked), or `measure` is a callable scoring states
(rltune.env.Evaluator), which compiles nothing.

gym.make_vec("rltune/LoopNest-v0", num_envs=N, ...) makes its vector form,
rltune.vector_env.LoopNestVectorEnv: N envs stepped by one C call.
"""

from __future__ import annotations

import os
from typing import Any, Optional, SupportsFloat, Union

import gymnasium as gym
import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from ._lib import ffi, lib
from .env import ACTION_NAMES, N_ACTIONS, OBS_LEN, OBS_MASK, Evaluator, LoopTuneEnv
from .errors import InvalidArgumentError, RltuneError

ObsType = npt.NDArray[np.float32]


def _observation_bounds() -> tuple[ObsType, ObsType]:
    """Bounds of every feature (docs/env.md, "Observation"), as the C env
    declares them (rlt_env_observation_bounds)."""
    low = np.zeros(OBS_LEN, dtype=np.float32)
    high = np.zeros(OBS_LEN, dtype=np.float32)
    lib().rlt_env_observation_bounds(ffi.from_buffer("float[]", low), ffi.from_buffer("float[]", high))
    return low, high


def _make_core(
    op: Optional[str],
    *,
    threads: Optional[int],
    max_steps: Optional[int],
    measure: Union[str, Evaluator],
    illegal_action: str,
    render_mode: Optional[str],
    cc: Optional[str],
    cflags: Optional[str],
    cache_dir: Optional[str | os.PathLike[str]],
    repeat: int,
    min_repeat_ms: float,
    timeout_s: float,
    data_seed: int,
    peak_gflops: float,
    name: str,
) -> LoopTuneEnv:
    """The C env of LoopNest-v0's keyword arguments (LoopNestEnv's and
    LoopNestVectorEnv's), checked: bad values raise ValueError (rltune's
    message for a bad op or an unreadable dataset). `name` is the env's in
    messages. The C env's own max_steps is left at 0: the step limit is a
    truncation, kept by the Python env, not a termination."""
    if not op or not isinstance(op, str):
        raise ValueError(f"{name} needs op=SPEC, an op spec such as 'matmul:M=64,N=64,K=64'")
    if max_steps is not None and (not isinstance(max_steps, int) or max_steps < 0):
        raise ValueError(f"max_steps must be an int >= 0 or None, not {max_steps!r}")
    if illegal_action not in ("noop", "raise"):
        raise ValueError(f"illegal_action must be 'noop' or 'raise', not {illegal_action!r}")
    if render_mode is not None and render_mode != "ansi":
        raise ValueError(f"render_mode must be None or 'ansi', not {render_mode!r}")
    evaluate: Optional[Evaluator] = None
    replay_path: Optional[str] = None
    if callable(measure):
        evaluate = measure
    elif isinstance(measure, str) and measure.startswith("replay:") and len(measure) > len("replay:"):
        replay_path = measure[len("replay:"):]
    elif measure != "live":
        raise ValueError(
            f"measure must be 'live', 'replay:FILE' (a state dataset: rltune.make_env_dataset) or a callable, "
            f"not {measure!r}"
        )
    if threads is not None and (not isinstance(threads, int) or threads < 1):
        raise ValueError(f"threads must be an int >= 1 or None, not {threads!r}")
    try:
        return LoopTuneEnv(
            op,
            n_threads=threads or (0 if replay_path else 1),
            cc=cc,
            cflags=cflags,
            cache_dir=cache_dir,
            repeat=repeat,
            min_repeat_ms=min_repeat_ms,
            timeout_s=timeout_s,
            seed=data_seed,
            peak_gflops=peak_gflops,
            evaluate=evaluate,
            replay_path=replay_path,
        )
    except RltuneError as e:
        if isinstance(e, ValueError) or replay_path is None:
            raise
        # a missing or unreadable dataset is a bad kwarg too: ValueError, rltune's message
        raise InvalidArgumentError(e.message, status=e.status, code=e.code) from e


class LoopNestEnv(gym.Env[ObsType, np.int64]):
    """The LoopTune environment (rltune/LoopNest-v0).

    Keyword arguments: op (a spec, required), threads (run-time threads of
    a parallel loop; None: 1, or a replay's), max_steps (steps before
    truncation; 0 or None: only stop ends an episode), measure ("live",
    "replay:FILE", or a callable: see rltune.env.Evaluator), illegal_action
    ("noop" or "raise"), and the
    measurement options cc, cflags, cache_dir, repeat, min_repeat_ms,
    timeout_s, data_seed (the inputs of measured kernels) and peak_gflops
    (> 0: taken as given; 0: measured once per target and cached).
    Bad values raise ValueError (rltune's message for a bad op)."""

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        op: Optional[str] = None,
        *,
        threads: Optional[int] = None,
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
        self._env = _make_core(
            op, threads=threads, max_steps=max_steps, measure=measure, illegal_action=illegal_action,
            render_mode=render_mode, cc=cc, cflags=cflags, cache_dir=cache_dir, repeat=repeat,
            min_repeat_ms=min_repeat_ms, timeout_s=timeout_s, data_seed=data_seed, peak_gflops=peak_gflops,
            name="LoopNest-v0",
        )
        self.op = op
        self.max_steps = max_steps or 0
        self.illegal_action = illegal_action
        self.render_mode = render_mode
        low, high = _observation_bounds()
        self.observation_space = spaces.Box(low=low, high=high, shape=(OBS_LEN,), dtype=np.float32)
        self.action_space = spaces.Discrete(N_ACTIONS)
        self._n_steps = 0
        self._lib = lib()
        self._illegal = int(self._lib.RLT_STATUS_ILLEGAL_SCHEDULE)

    @property
    def core(self) -> LoopTuneEnv:
        """The C env's handle (tree, schedule, gflops, stats, clone)."""
        return self._env

    def _observe(self, is_legal: bool = True) -> tuple[ObsType, dict[str, Any]]:
        """The observation and the info dict. The mask is the observation's
        last block (rlt_env_observe writes rlt_env_action_mask there)."""
        core = self._env
        ptr = core._h()
        st = self._lib.rlt_env_observe(ptr, core._obs_c, OBS_LEN, core._diag)
        if st:
            core._raise(st)
        obs = core._obs_view.copy()
        info = {
            "action_mask": obs[OBS_MASK:].astype(np.int8),
            "gflops": self._lib.rlt_env_gflops(ptr),
            "is_legal": is_legal,
            "n_steps": self._n_steps,
        }
        return obs, info

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
        return self._observe()

    def step(self, action: Any) -> tuple[ObsType, SupportsFloat, bool, bool, dict[str, Any]]:
        # The C calls are made here directly rather than through
        # LoopTuneEnv's methods: a step that measures nothing takes the C
        # env 2 microseconds, and every Python call added counts
        # (bench/python/overhead.py).
        a = int(action)
        if not 0 <= a < N_ACTIONS:
            raise ValueError(f"action {action!r} is out of range: 0..{N_ACTIONS - 1} ({', '.join(ACTION_NAMES)})")
        core = self._env
        ptr = core._h()
        st = self._lib.rlt_env_step(ptr, a, core._reward, core._done, core._diag)
        if st == 0:
            reward, terminated, is_legal = core._reward[0], core._done[0], True
        elif st == self._illegal and self.illegal_action == "noop":
            core._diag.status = 0  # cleared for the next call, as _raise does
            core._diag.message[0] = b"\0"
            reward, terminated, is_legal = 0.0, False, False
        elif not self._lib.rlt_env_is_reset(ptr):
            core._diag.status = 0
            core._diag.message[0] = b"\0"
            raise InvalidArgumentError("step before reset: call reset() first", status="INVALID_ARGUMENT", code=1)
        else:
            core._raise(st)
        self._n_steps += 1
        truncated = bool(self.max_steps and self._n_steps >= self.max_steps and not terminated)
        obs, info = self._observe(is_legal)
        return obs, reward, terminated, truncated, info

    def render(self) -> Optional[str]:
        if self.render_mode == "ansi":
            return f"{self._env.tree()}GFLOP/s: {self._env.gflops:.2f}\n"
        return None

    def close(self) -> None:
        self._env.close()
        super().close()
