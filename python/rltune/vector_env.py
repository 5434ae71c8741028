"""rltune/LoopNest-v0 as a Gymnasium vector env: num_envs LoopTune envs
stepped by one C call a step (rlt_env_vec_step, a C vector env that keeps
the step counts, truncates, autoresets and writes every output), so that
what Python does per step does not grow with num_envs.

    import gymnasium as gym, rltune
    envs = gym.make_vec("rltune/LoopNest-v0", num_envs=64, op="matmul:M=32,N=32,K=32",
                        measure="replay:examples/python/data/matmul32.states", max_steps=10)
    obs, info = envs.reset(seed=0)                # obs: (64, 359) float32
    actions = envs.action_space.sample(tuple(info["action_mask"]))
    obs, rewards, terminated, truncated, info = envs.step(actions)

Each sub-env is LoopNest-v0 (rltune.gym_env.LoopNestEnv): the same
keyword arguments, observations, rewards, masks, illegal-action handling
and truncation, and the same results step for step as gymnasium's
SyncVectorEnv of LoopNest-v0 envs. The sub-envs are clones of one C env:
they share the op, a replay's dataset and the cache of evaluated states (a
state measured by one is free to all), and measured sub-envs build the
new states of a step together (compilers in parallel).
"""

from __future__ import annotations

import os
import sys
from typing import Any, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ._lib import check, cstr, ffi, lib, new_diag
from .env import ACTION_NAMES, N_ACTIONS, OBS_LEN, Evaluator, LoopTuneEnv
from .errors import InvalidArgumentError
from .gym_env import _make_core, _observation_bounds

ObsBatch = npt.NDArray[np.float32]
BoolArray = npt.NDArray[np.bool_]
IndexArray = npt.NDArray[np.intp]

_INT64 = np.dtype(np.int64)
_INT64_MAX = np.iinfo(np.int64).max
_AUTORESET_C = {
    AutoresetMode.NEXT_STEP: "RLT_ENV_AUTORESET_NEXT_STEP",
    AutoresetMode.SAME_STEP: "RLT_ENV_AUTORESET_SAME_STEP",
    AutoresetMode.DISABLED: "RLT_ENV_AUTORESET_DISABLED",
}
_INFO_KEYS = ("action_mask", "gflops", "is_legal", "n_steps")
_POOL_MAX = 3  # sets of output arrays a copying vector env recycles


def _vec_out(*arrays: Optional[np.ndarray]) -> tuple[Any, list[Any]]:
    """An rlt_env_vec_out of these arrays (obs, masks, rewards, terminated,
    truncated, is_legal, gflops, n_steps; None: NULL), and the buffers that
    must outlive it."""
    out = ffi.new("rlt_env_vec_out *")
    keep: list[Any] = []
    types = ("float[]", "unsigned char[]", "double[]", "bool[]", "bool[]", "bool[]", "double[]", "int64_t[]")
    names = ("obs", "masks", "rewards", "terminated", "truncated", "is_legal", "gflops", "n_steps")
    for name, ctype, array in zip(names, types, arrays):
        if array is not None:
            buf = ffi.from_buffer(ctype, array)
            keep.append(buf)
            setattr(out, name, buf)
    return out, keep


class _Outputs:
    """One set of a vector env's output arrays, with the rlt_env_vec_out
    that C writes them through."""

    __slots__ = ("obs", "masks", "rewards", "terminated", "truncated", "is_legal", "gflops", "n_steps", "arrays",
                 "c", "_keep", "_counts")

    def __init__(self, n: int) -> None:
        self.obs = np.zeros((n, OBS_LEN), dtype=np.float32)
        self.masks = np.zeros((n, N_ACTIONS), dtype=np.int8)  # 1 legal
        self.rewards = np.zeros(n, dtype=np.float64)
        self.terminated = np.zeros(n, dtype=np.bool_)
        self.truncated = np.zeros(n, dtype=np.bool_)
        self.is_legal = np.ones(n, dtype=np.bool_)
        self.gflops = np.zeros(n, dtype=np.float64)
        self.n_steps = np.zeros(n, dtype=np.int64)
        self.arrays = (self.obs, self.masks, self.rewards, self.terminated, self.truncated, self.is_legal,
                       self.gflops, self.n_steps)
        self.c, self._keep = _vec_out(*self.arrays)
        self._counts = self._ref_counts()

    def _ref_counts(self) -> Optional[list[int]]:
        """How many references each array has (None where Python does not
        count them)."""
        if not hasattr(sys, "getrefcount"):
            return None
        return [sys.getrefcount(a) for a in self.arrays]

    def is_free(self) -> bool:
        """Whether nothing holds any of the arrays but the set itself (no
        result, view or buffer of them is alive): they may be written
        again."""
        return self._counts is not None and self._ref_counts() == self._counts


class LoopNestVectorEnv(VectorEnv[ObsBatch, npt.NDArray[np.int64], npt.NDArray[Any]]):
    """num_envs LoopNest-v0 envs stepped together: rltune/LoopNest-v0's
    vector entry point, what gym.make_vec("rltune/LoopNest-v0",
    num_envs=N, ...) makes.

    Keyword arguments: num_envs (>= 1) and LoopNest-v0's (op, threads,
    max_steps, measure, illegal_action, cc, cflags, cache_dir, repeat,
    min_repeat_ms, timeout_s, data_seed, peak_gflops, render_mode), applied
    to every sub-env; autoreset_mode (gymnasium's AutoresetMode or its
    value: "NextStep", the default, "SameStep" or "Disabled"); copy (True:
    step and reset return arrays of their own, never written again while
    anything holds them or a view of them, and recycled once nothing does;
    False: arrays that the next call overwrites). Bad values raise
    ValueError (rltune's message for a bad op or dataset).

    step(actions) takes num_envs actions (ints in 0..16) and returns the
    observations (num_envs, 359) float32, rewards (float64), terminated and
    truncated (bool), and info: per sub-env "action_mask" (num_envs, 17)
    int8, "gflops", "is_legal" and "n_steps", each with gymnasium's "_key"
    mask (read-only arrays). Autoreset follows gymnasium 1.x: with
    "NextStep" a sub-env whose episode ended (terminated or truncated) is
    reset by the next step, which ignores its action and returns its first
    observation, reward 0;
    "SameStep" resets it in the step that ended it and hands the last
    observation and info over in info["final_obs"] and info["final_info"];
    with "Disabled", reset(options={"reset_mask": mask}) resets it.
    reset(seed=...) seeds np_random and the action spaces (the envs are
    deterministic given the actions); options["schedule"] starts the
    episodes at a schedule's nest (one text for all, or one per sub-env,
    None for the default nest)."""

    metadata: dict[str, Any] = {"render_modes": ["ansi"], "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        num_envs: int = 1,
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
        autoreset_mode: Union[str, AutoresetMode] = AutoresetMode.NEXT_STEP,
        copy: bool = True,
    ) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) or num_envs < 1:
            raise ValueError(f"num_envs must be an int >= 1, not {num_envs!r}")
        try:
            mode = AutoresetMode(autoreset_mode)
        except ValueError:
            raise ValueError(
                f"autoreset_mode must be one of {[m.value for m in AutoresetMode]} (or gymnasium's AutoresetMode), "
                f"not {autoreset_mode!r}"
            ) from None
        first = _make_core(
            op, threads=threads, max_steps=max_steps, measure=measure, illegal_action=illegal_action,
            render_mode=render_mode, cc=cc, cflags=cflags, cache_dir=cache_dir, repeat=repeat,
            min_repeat_ms=min_repeat_ms, timeout_s=timeout_s, data_seed=data_seed, peak_gflops=peak_gflops,
            name="LoopNest-v0",
        )
        n = int(num_envs)
        self.num_envs = n
        self._cores: list[LoopTuneEnv] = [first] + [first.clone() for _ in range(n - 1)]
        self.op = op
        self.max_steps = max_steps or 0
        self.illegal_action = illegal_action
        self.render_mode = render_mode
        self.autoreset_mode = mode
        self.copy = bool(copy)
        self.metadata = {**type(self).metadata, "autoreset_mode": mode}
        low, high = _observation_bounds()
        self.single_observation_space = spaces.Box(low=low, high=high, shape=(OBS_LEN,), dtype=np.float32)
        self.single_action_space = spaces.Discrete(N_ACTIONS)
        self.observation_space = batch_space(self.single_observation_space, n)
        self.action_space = batch_space(self.single_action_space, n)

        # The C vector env (it keeps the step counts and autoresets, and
        # writes every output), and the actions as int64 for arrays that
        # are not C-contiguous int64 already.
        self._lib = lib()
        self._diag = new_diag()
        ptrs = [core._h() for core in self._cores]
        envs_c = ffi.new("rlt_env *[]", ptrs)
        opts = ffi.new("rlt_env_vec_opts *")
        opts.max_steps = self.max_steps
        opts.autoreset = getattr(self._lib, _AUTORESET_C[mode])
        is_strict = illegal_action == "raise"
        opts.masked_action = self._lib.RLT_ENV_MASKED_REFUSE if is_strict else self._lib.RLT_ENV_MASKED_NOOP
        vec = ffi.new("rlt_env_vec **")
        check(self._lib.rlt_env_vec_create(envs_c, n, opts, vec, self._diag), self._diag)
        # The vector env only borrows the C envs (its destroy does not touch
        # them), so it may be freed before or after them.
        self._vec = ffi.gc(vec[0], self._lib.rlt_env_vec_destroy)
        self._vec_step = self._lib.rlt_env_vec_step
        self._shape = (n,)
        self._obs_shape = (n, OBS_LEN)
        self._actions = np.zeros(n, dtype=np.int64)
        self._actions_c = ffi.from_buffer("int64_t[]", self._actions)
        # Where C writes: with copy False the env's own arrays, returned as
        # they are; with copy True, a set of arrays that no earlier result
        # holds any more (recycled: returned as they are), else a new
        # observation array and the env's own others, returned as copies.
        self._own = _Outputs(n)
        self._pool: list[_Outputs] = []
        self._final: Optional[tuple[np.ndarray, ...]] = None
        self._final_c = ffi.NULL
        if mode == AutoresetMode.SAME_STEP:  # where the ended episodes' last states go
            self._final = (
                np.zeros(self._obs_shape, dtype=np.float32),
                np.zeros((n, N_ACTIONS), dtype=np.int8),
                np.zeros(n, dtype=np.float64),
                np.zeros(n, dtype=np.bool_),
                np.zeros(n, dtype=np.int64),
            )
            fo, fm, fg, fl, fn = self._final
            self._final_c, self._final_keep = _vec_out(fo, fm, None, None, None, fl, fg, fn)
        self._everyone = np.ones(n, dtype=np.bool_)
        self._everyone.flags.writeable = False
        self._is_reset = False

    # ---- gymnasium's API ----------------------------------------------------

    def reset(
        self, *, seed: Optional[int] = None, options: Optional[dict[str, Any]] = None
    ) -> tuple[ObsBatch, dict[str, Any]]:
        """Starts an episode in every sub-env (or in those of
        options["reset_mask"], a bool array of num_envs) at the op's
        default nest, or at options["schedule"]: a schedule's text for all,
        or a sequence of num_envs texts (None: the default nest)."""
        if self.closed:
            raise ValueError("the env is closed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
            raise ValueError(f"seed must be an int or None, not {seed!r}")
        options = dict(options or {})
        which = self._reset_mask(options.pop("reset_mask", None))
        schedules = self._schedules(options.pop("schedule", None))
        if options:
            raise ValueError(
                f"unknown reset option(s) {sorted(options)}: LoopNest-v0 takes 'schedule' and 'reset_mask'"
            )
        super().reset(seed=seed)
        if seed is not None:
            self.action_space.seed(int(seed))
            self.single_action_space.seed(int(seed))
        keep: list[Any] = []
        which_c = ffi.NULL if which is None else ffi.from_buffer("bool[]", which)
        sched_c = ffi.NULL
        if schedules is not None:
            sched_c = ffi.new("const char *[]", [cstr(s, keep) for s in schedules])
        out, obs = self._outputs()
        st = self._lib.rlt_env_vec_reset(self._vec, which_c, sched_c, out.c, self._diag)
        if st:
            self._raise(st)
        self._is_reset = True
        present = self._everyone if which is None else which
        info = self._info(out, present)
        if which is not None:  # the info is of the envs reset (zeros elsewhere, as SyncVectorEnv has it)
            for key in _INFO_KEYS:
                info[key] = np.where(which.reshape((-1,) + (1,) * (info[key].ndim - 1)), info[key], 0).astype(
                    info[key].dtype
                )
        return obs, info

    def step(self, actions: Any) -> tuple[ObsBatch, npt.NDArray[np.float64], BoolArray, BoolArray, dict[str, Any]]:
        """Steps every sub-env with one rlt_env_vec_step call (see the
        class's doc for autoreset)."""
        # The hot path: a few checks, one C call that does everything, the
        # info dict. No numpy arithmetic and nothing per sub-env.
        a = actions if type(actions) is np.ndarray else np.asarray(actions)
        if a.dtype is _INT64 and a.shape == self._shape and self._is_reset:
            if a.flags.c_contiguous:
                actions_c = ffi.from_buffer("int64_t[]", a)
            else:
                np.copyto(self._actions, a)
                actions_c = self._actions_c
        else:
            actions_c = self._actions_from(a, actions)
        out, obs = self._outputs()
        st = self._vec_step(self._vec, actions_c, out.c, self._final_c, self._diag)
        if st:
            self._raise(st)
        info = self._info(out, self._everyone)
        if self._final is not None:
            self._same_step_info(out, info)
        if out is not self._own or not self.copy:
            return obs, out.rewards, out.terminated, out.truncated, info
        return obs, out.rewards.copy(), out.terminated.copy(), out.truncated.copy(), info

    def render(self) -> Optional[tuple[str, ...]]:
        """With render_mode "ansi", each sub-env's loop tree and GFLOP/s."""
        if self.render_mode != "ansi":
            return None
        return tuple(f"{core.tree()}GFLOP/s: {core.gflops:.2f}\n" for core in self._cores)

    def close_extras(self, **kwargs: Any) -> None:
        self._is_reset = False  # step and reset refuse from now on: the C envs are freed
        ffi.release(self._vec)  # rlt_env_vec_destroy, before the envs it borrows
        for core in self._cores:
            core.close()

    # ---- rltune's additions -------------------------------------------------

    @property
    def cores(self) -> tuple[LoopTuneEnv, ...]:
        """The sub-envs' C handles (tree, schedule, gflops, stats), clones
        of one env: they share its cache of evaluated states."""
        return tuple(self._cores)

    # ---- helpers ------------------------------------------------------------

    def _actions_from(self, a: npt.NDArray[Any], actions: Any) -> Any:
        """The actions as C takes them (int64), from any other array: its
        shape and dtype checked, values past int64 refused, step before
        reset refused."""
        if a.shape != self._shape or a.dtype.kind not in "iu":
            raise ValueError(f"actions must be {self.num_envs} ints (shape ({self.num_envs},)), not {actions!r}")
        if not self._is_reset:
            if self.closed:
                raise ValueError("the env is closed")
            raise InvalidArgumentError("step before reset: call reset() first", status="INVALID_ARGUMENT", code=1)
        if a.dtype.kind == "u" and a.dtype.itemsize == 8 and a.max() > _INT64_MAX:  # past what int64 holds
            bad = int(np.flatnonzero(a > _INT64_MAX)[0])
            names = ", ".join(ACTION_NAMES)
            raise ValueError(f"actions[{bad}] = {a[bad]} is out of range: 0..{N_ACTIONS - 1} ({names})")
        np.copyto(self._actions, a, casting="unsafe")
        return self._actions_c

    def _outputs(self) -> tuple[_Outputs, ObsBatch]:
        """Where the next call writes (see __init__): the set of arrays,
        and the observations' array."""
        own = self._own
        if not self.copy:
            return own, own.obs
        for out in self._pool:
            if out.is_free():
                return out, out.obs
        if len(self._pool) < _POOL_MAX and own._counts is not None:
            self._pool.append(_Outputs(self.num_envs))
            return self._pool[-1], self._pool[-1].obs
        obs = np.empty(own.obs.shape, dtype=np.float32)
        own.c.obs = ffi.from_buffer("float[]", obs)  # alive for the call: obs holds the memory
        return own, obs

    def _raise(self, status: int) -> None:
        """Raises a failed call's error from the diag, and clears it:
        rltune writes a message only into a diag that holds none."""
        d = self._diag
        try:
            check(status, d)
        finally:
            d.status = 0
            d.message[0] = b"\0"

    def _reset_mask(self, mask: Any) -> Optional[BoolArray]:
        """Which sub-envs a reset starts: all (None), or options["reset_mask"]."""
        if mask is None:
            return None
        if not isinstance(mask, np.ndarray) or mask.dtype != np.bool_ or mask.shape != self._shape:
            raise ValueError(f"options['reset_mask'] must be a bool array of shape ({self.num_envs},), not {mask!r}")
        if not mask.any():
            raise ValueError("options['reset_mask'] must select at least one sub-env")
        return np.ascontiguousarray(mask).copy()

    def _schedules(self, schedule: Any) -> Optional[list[Optional[str]]]:
        """options["schedule"] as one entry per sub-env; None when every
        one starts at the default nest."""
        if schedule is None:
            return None
        if isinstance(schedule, str):
            return [schedule] * self.num_envs
        if (
            isinstance(schedule, Sequence)
            and len(schedule) == self.num_envs
            and all(s is None or isinstance(s, str) for s in schedule)
        ):
            return list(schedule)
        raise ValueError(
            f"options['schedule'] must be a schedule's text or a sequence of {self.num_envs} (str or None), "
            f"not {schedule!r}"
        )

    def _info(self, out: _Outputs, present: BoolArray) -> dict[str, Any]:
        """The sub-envs' infos (LoopNest-v0's), batched as gymnasium's
        vector envs batch them: a "_key" mask beside each key. Copies when
        `out` is the env's own and copy is True."""
        if out is self._own and self.copy:
            masks, gflops, is_legal = out.masks.copy(), out.gflops.copy(), out.is_legal.copy()
            n_steps = out.n_steps.copy()
        else:
            masks, gflops, is_legal, n_steps = out.masks, out.gflops, out.is_legal, out.n_steps
        return {
            "action_mask": masks,
            "_action_mask": present,
            "gflops": gflops,
            "_gflops": present,
            "is_legal": is_legal,
            "_is_legal": present,
            "n_steps": n_steps,
            "_n_steps": present,
        }

    def _same_step_info(self, out: _Outputs, info: dict[str, Any]) -> None:
        """AutoresetMode.SAME_STEP: the sub-envs whose episode just ended
        (and that C started again) hand their last observation and info
        over in info["final_obs"] and info["final_info"] (gymnasium's
        layout: None and zeros for the others)."""
        done = np.logical_or(out.terminated, out.truncated)
        if not done.any():
            return
        assert self._final is not None
        f_obs, f_masks, f_gflops, f_legal, f_n_steps = self._final
        final_obs = np.full(self.num_envs, None, dtype=object)
        for i in done.nonzero()[0]:
            final_obs[i] = f_obs[i].copy()
        final_info: dict[str, Any] = {}
        for key, value in zip(_INFO_KEYS, (f_masks, f_gflops, f_legal, f_n_steps)):
            final_info[key], final_info["_" + key] = value.copy(), done
        info["final_obs"], info["_final_obs"] = final_obs, done
        info["final_info"], info["_final_info"] = final_info, done
