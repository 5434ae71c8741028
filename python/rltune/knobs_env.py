"""rltune/Knobs-v0: ktune's knob environment as a Gymnasium env.

    import gymnasium as gym, rltune
    env = gym.make("rltune/Knobs-v0", op="matmul:M=64,N=64,K=64", horizon=16)
    env = gym.make("rltune/Knobs-v0", dataset="mm.db")       # replay: noise-free, fast
    obs, info = env.reset(seed=0)
    action = env.action_space.sample(tuple(info["action_mask"]))
    obs, reward, terminated, truncated, info = env.step(action)

The state is a configuration of the op's knob space (rltune.KnobSpace:
the space a tuning session searches). An action moves knobs one choice
down, not at all, or up: MultiDiscrete([3] * n_knobs) (0: -1, 1: stay,
2: +1, every knob at once), or Discrete(2 * n_knobs + 1) (0: stay,
1 + 2k: knob k down, 2 + 2k: knob k up). The observation is every knob's
choice over its last choice, then the state's GFLOP/s over `gflops_scale`
(clipped to 1): Box(0, 1, (n_knobs + 1,), float32). docs/python.md,
"rltune/Knobs-v0", says the rest: rewards, the penalty of an invalid
configuration, action masks, kwargs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Optional, SupportsFloat, Union

import gymnasium as gym
import numpy as np
import numpy.typing as npt
from gymnasium import spaces

from .errors import InvalidArgumentError, RltuneError
from .knobs import Config, ConfigMeasurer, ConfigResult, KnobSpace
from .measure import BuildOptions, RunOptions
from .op import Op

ObsType = npt.NDArray[np.float32]

RESET_TO = ("zero", "random", "median")
ACTION_MODES = ("multidiscrete", "discrete")
REWARDS = ("neg_time", "gflops_delta")


@dataclass(frozen=True)
class _Score:
    """A configuration as the env sees it: valid (measured OK, or
    replayed) with its GFLOP/s and time, or not, with why."""

    is_valid: bool
    gflops: float
    time_ms: float
    status: str


class KnobsEnv(gym.Env[ObsType, Any]):
    """ktune's knob environment (rltune/Knobs-v0).

    Keyword arguments: op (a spec) and/or dataset (a dataset file; the
    same as measure="replay:FILE"), threads, horizon, reset_to,
    action_mode, reward, gflops_scale, timeout_ms, invalid_reward, and for
    live measurement cc, cflags, cache_dir, repeat, min_repeat_ms,
    timeout_s, db_path. Bad values raise ValueError (rltune's message for
    a bad op or dataset)."""

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        op: Optional[str] = None,
        *,
        dataset: Optional[Union[str, os.PathLike[str]]] = None,
        measure: str = "live",
        threads: Optional[int] = None,
        horizon: Optional[int] = 16,
        reset_to: str = "median",
        action_mode: str = "multidiscrete",
        reward: str = "gflops_delta",
        gflops_scale: Optional[float] = None,
        timeout_ms: Optional[float] = None,
        invalid_reward: Optional[float] = None,
        cc: Optional[str] = None,
        cflags: Optional[str] = None,
        cache_dir: Optional[Union[str, os.PathLike[str]]] = None,
        repeat: int = 2,
        min_repeat_ms: float = 2.0,
        timeout_s: float = 0.0,
        db_path: Optional[Union[str, os.PathLike[str]]] = None,
        render_mode: Optional[str] = None,
    ) -> None:
        if op is not None and (not isinstance(op, str) or not op):
            raise ValueError(f"op must be an op spec such as 'matmul:M=64,N=64,K=64', not {op!r}")
        if not isinstance(measure, str) or not (measure == "live" or measure.startswith("replay:")):
            raise ValueError(f"measure must be 'live' or 'replay:FILE', not {measure!r}")
        if measure.startswith("replay:"):
            path = measure[len("replay:"):]
            if not path:
                raise ValueError("measure='replay:FILE' needs the dataset's path after 'replay:'")
            if dataset is not None and os.fspath(dataset) != path:
                raise ValueError(f"dataset={dataset!r} and measure={measure!r} name two datasets: give one")
            dataset = path
        if op is None and dataset is None:
            raise ValueError("Knobs-v0 needs op=SPEC (live measurement) or dataset=FILE (replay of a dataset)")
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise ValueError(f"threads must be an int >= 1, not {threads!r}")
        if horizon is not None and (isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 0):
            raise ValueError(f"horizon must be an int >= 0 or None, not {horizon!r}")
        for name, value, allowed in (
            ("reset_to", reset_to, RESET_TO),
            ("action_mode", action_mode, ACTION_MODES),
            ("reward", reward, REWARDS),
        ):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}, not {value!r}")
        for name, number in (("gflops_scale", gflops_scale), ("timeout_ms", timeout_ms)):
            if number is not None and not (isinstance(number, (int, float)) and number > 0):
                raise ValueError(f"{name} must be a number > 0 or None, not {number!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'ansi', not {render_mode!r}")

        self.is_replay = dataset is not None
        if self.is_replay:
            assert dataset is not None
            if db_path is not None:
                raise ValueError("a replay stores no records: no db_path with dataset= or measure='replay:FILE'")
            try:
                self.space = KnobSpace.open_dataset(dataset)
            except RltuneError as e:
                if isinstance(e, ValueError):
                    raise
                # a missing or unreadable file is a bad kwarg too: ValueError, rltune's message
                raise InvalidArgumentError(e.message, status=e.status, code=e.code) from e
            if op is not None and Op(op).spec != self.space.spec:
                raise ValueError(f"dataset {os.fspath(dataset)!r} is of op {self.space.spec}, not {Op(op).spec}")
            if threads is not None and threads != self.space.n_threads:
                raise ValueError(
                    f"dataset {os.fspath(dataset)!r} was measured with {self.space.n_threads} thread(s), "
                    f"not {threads}"
                )
            self.measurer: ConfigMeasurer = self.space.replay_measurer()
        else:
            assert op is not None
            self.space = KnobSpace(op, threads or 1)
            self.measurer = self.space.live_measurer(
                build=BuildOptions(cc=cc, cflags=cflags, cache_dir=os.fspath(cache_dir) if cache_dir else None),
                run=RunOptions(repeat=repeat, min_repeat_ms=min_repeat_ms, timeout_s=timeout_s),
                db_path=db_path,
            )
        self.op = self.space.spec
        self.horizon = horizon or 0
        self.reset_to = reset_to
        self.action_mode = action_mode
        self.reward_kind = reward
        self.render_mode = render_mode
        self._gflops_scale = float(gflops_scale) if gflops_scale else None
        self._timeout_ms = float(timeout_ms) if timeout_ms else None
        self._invalid_reward = None if invalid_reward is None else float(invalid_reward)

        n = self.space.n_knobs
        self.observation_space = spaces.Box(low=0.0, high=1.0, shape=(n + 1,), dtype=np.float32)
        if action_mode == "multidiscrete":
            self.action_space: spaces.Space[Any] = spaces.MultiDiscrete(np.full(n, 3, dtype=np.int64))
        else:
            self.action_space = spaces.Discrete(2 * n + 1)
        self._cache: dict[tuple[int, ...], _Score] = {}
        self._config: Config = np.zeros(n, dtype=np.int32)
        self._score = _Score(False, 0.0, 0.0, "NOT_RESET")
        self._n_steps = 0
        self._is_reset = False
        self.n_measured = 0

    # ---- measurement ----------------------------------------------------------

    def _scores(self, configs: list[Config]) -> list[_Score]:
        """The configurations' scores, measured (one batch) where not cached."""
        keys = [tuple(int(x) for x in c) for c in configs]
        todo = [k for k in dict.fromkeys(keys) if k not in self._cache]
        if todo:
            results = self.measurer.measure(np.array(todo, dtype=np.int32))
            self.n_measured += len(todo)
            for k, r in zip(todo, results):
                self._cache[k] = self._score_of(r)
        return [self._cache[k] for k in keys]

    @staticmethod
    def _score_of(r: ConfigResult) -> _Score:
        if r.ok:
            return _Score(True, r.gflops, r.time_median_ms, "OK")
        return _Score(False, 0.0, 0.0, "ABSENT" if r.is_absent else r.status)

    @property
    def gflops_scale(self) -> float:
        """What GFLOP/s are divided by: the kwarg; else a replay's dataset
        best; else, live, 4x the median configuration's (measured once)."""
        if self._gflops_scale is None:
            if self.is_replay:
                self._gflops_scale = self.measurer.best_gflops or 1.0
            else:
                median = self._scores([self.space.median()])[0]
                self._gflops_scale = 4.0 * median.gflops if median.is_valid else 1.0
        return self._gflops_scale

    @property
    def timeout_ms(self) -> float:
        """t_timeout of the neg_time reward: the kwarg; else the time of a
        kernel at a tenth of gflops_scale."""
        if self._timeout_ms is None:
            self._timeout_ms = 10.0 * self.space.flops / (self.gflops_scale * 1e6)
        return self._timeout_ms

    @property
    def invalid_reward(self) -> float:
        """The reward of a step onto an invalid configuration: the kwarg;
        else -timeout_ms (neg_time) or -1.0 (gflops_delta)."""
        if self._invalid_reward is not None:
            return self._invalid_reward
        return -self.timeout_ms if self.reward_kind == "neg_time" else -1.0

    # ---- moves and masks ---------------------------------------------------------

    def _allowed(self, config: Config) -> bool:
        """Where a move may lead: a valid configuration (of the dataset, in a replay)."""
        if self.is_replay:
            return self.space.in_dataset(config)
        return self.space.is_valid(config)

    def _moved(self, knob: int, delta: int) -> Optional[Config]:
        c = self._config.copy()
        c[knob] += delta
        if not 0 <= c[knob] < self.space.n_choices[knob]:
            return None
        return c

    def action_mask(self) -> npt.NDArray[np.int8]:
        """1 where a move stays inside the space and leads to an allowed
        configuration (each move alone): shape (n_knobs, 3) for
        multidiscrete (columns -1, 0, +1), (2 * n_knobs + 1,) for discrete."""
        n = self.space.n_knobs
        moves = np.zeros((n, 3), dtype=np.int8)
        moves[:, 1] = 1
        for k in range(n):
            for col, delta in ((0, -1), (2, 1)):
                c = self._moved(k, delta)
                moves[k, col] = int(c is not None and self._allowed(c))
        if self.action_mode == "multidiscrete":
            return moves
        flat = np.zeros(2 * n + 1, dtype=np.int8)
        flat[0] = 1
        flat[1::2] = moves[:, 0]
        flat[2::2] = moves[:, 2]
        return flat

    def _apply(self, action: Any) -> Config:
        """The configuration the action leads to (a move past a knob's
        range leaves that knob where it is)."""
        n = self.space.n_knobs
        deltas = np.zeros(n, dtype=np.int64)
        if self.action_mode == "multidiscrete":
            a = np.asarray(action, dtype=np.int64).reshape(-1)
            if a.shape != (n,) or np.any(a < 0) or np.any(a > 2):
                raise ValueError(f"action {action!r} is not in MultiDiscrete([3] * {n}) (0: -1, 1: stay, 2: +1)")
            deltas = a - 1
        else:
            a_int = int(action)
            if not 0 <= a_int <= 2 * n:
                raise ValueError(f"action {action!r} is out of range: 0..{2 * n}")
            if a_int > 0:
                deltas[(a_int - 1) // 2] = -1 if a_int % 2 == 1 else 1
        c = self._config.astype(np.int64) + deltas
        inside = (c >= 0) & (c < self.space.n_choices)
        return np.where(inside, c, self._config).astype(np.int32)

    # ---- the env --------------------------------------------------------------

    def _observe(self) -> ObsType:
        last = np.maximum(self.space.n_choices - 1, 1).astype(np.float32)
        obs = np.empty(self.space.n_knobs + 1, dtype=np.float32)
        obs[:-1] = self._config.astype(np.float32) / last
        obs[-1] = min(self._score.gflops / self.gflops_scale, 1.0)
        return obs

    def _info(self) -> dict[str, Any]:
        return {
            "action_mask": self.action_mask(),
            "config": self._config.copy(),
            "gflops": self._score.gflops,
            "time_ms": self._score.time_ms,
            "is_valid": self._score.is_valid,
            "status": self._score.status,
            "n_steps": self._n_steps,
        }

    def _start(self, options: Optional[dict[str, Any]]) -> Config:
        given = (options or {}).get("config")
        if given is not None:
            c = self.space.parse(given) if isinstance(given, str) else np.asarray(given, dtype=np.int32)
            self.space.check(c)
            return c
        if self.reset_to == "median":
            return self.space.median()
        if self.reset_to == "zero":
            return self.space.nearest_valid(np.zeros(self.space.n_knobs, dtype=np.int32))
        rng = self.np_random
        if self.is_replay:
            return self.space.dataset_config(int(rng.integers(self.space.dataset_size)))
        draw = np.zeros(self.space.n_knobs, dtype=np.int32)
        for _ in range(1000):
            draw = rng.integers(0, self.space.n_choices).astype(np.int32)
            if self.space.is_valid(draw):
                return draw
        return self.space.nearest_valid(draw)

    def reset(
        self, *, seed: Optional[int] = None, options: Optional[dict[str, Any]] = None
    ) -> tuple[ObsType, dict[str, Any]]:
        """Starts an episode at reset_to's configuration (random: drawn
        with env.np_random, seeded by `seed`), or options["config"] (a
        configuration or its key)."""
        super().reset(seed=seed)
        if seed is not None:
            self.action_space.seed(seed)
        self._config = self._start(options)
        self._score = self._scores([self._config])[0]
        self._n_steps = 0
        self._is_reset = True
        return self._observe(), self._info()

    def step(self, action: Any) -> tuple[ObsType, SupportsFloat, bool, bool, dict[str, Any]]:
        if not self._is_reset:
            raise ValueError("step before reset: call reset() first")
        target = self._apply(action)
        old = self._score
        if np.array_equal(target, self._config):
            new = old
        else:
            new = self._scores([target])[0]
        if new.is_valid:
            self._config = target
            self._score = new
            if self.reward_kind == "neg_time":
                reward = -min(new.time_ms, self.timeout_ms)
            else:
                reward = (new.gflops - old.gflops) / self.gflops_scale
        else:
            reward = self.invalid_reward
        self._n_steps += 1
        truncated = bool(self.horizon and self._n_steps >= self.horizon)
        info = self._info()
        info["is_valid"] = new.is_valid
        info["status"] = new.status
        return self._observe(), float(reward), False, truncated, info

    def key(self) -> str:
        """The current configuration's key."""
        return self.space.key(self._config)

    def render(self) -> Optional[str]:
        if self.render_mode != "ansi":
            return None
        knobs = " ".join(
            f"{name}={self.space.choices[k][int(self._config[k])]}" for k, name in enumerate(self.space.knob_names)
        )
        return f"{knobs}\nGFLOP/s: {self._score.gflops:.2f}\n"

    def close(self) -> None:
        self.measurer.close()
        super().close()
