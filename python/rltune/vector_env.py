"""rltune/LoopNest-v0 as a Gymnasium vector env: num_envs LoopTune envs
stepped by one C call (rlt_env_step_batch), so Python's fixed cost per
call is shared by all of them.

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
from typing import Any, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ._lib import check, cstr, ffi, lib, new_diag
from .env import ACTION_NAMES, ACTION_NONE, ACTION_RESET, N_ACTIONS, OBS_LEN, Evaluator, LoopTuneEnv
from .errors import InvalidArgumentError, RltuneError
from .gym_env import _make_core, _observation_bounds

ObsBatch = npt.NDArray[np.float32]
BoolArray = npt.NDArray[np.bool_]
IndexArray = npt.NDArray[np.intp]


class LoopNestVectorEnv(VectorEnv[ObsBatch, npt.NDArray[np.int64], npt.NDArray[Any]]):
    """num_envs LoopNest-v0 envs stepped together: rltune/LoopNest-v0's
    vector entry point, what gym.make_vec("rltune/LoopNest-v0",
    num_envs=N, ...) makes.

    Keyword arguments: num_envs (>= 1) and LoopNest-v0's (op, threads,
    max_steps, measure, illegal_action, cc, cflags, cache_dir, repeat,
    min_repeat_ms, timeout_s, data_seed, peak_gflops, render_mode), applied
    to every sub-env; autoreset_mode (gymnasium's AutoresetMode or its
    value: "NextStep", the default, "SameStep" or "Disabled"); copy (True:
    step and reset return arrays of their own; False: arrays that the next
    call overwrites). Bad values raise ValueError (rltune's message for a
    bad op or dataset).

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

        # What every call reuses: the envs as a C array and as addresses
        # (numpy picks the subsets to reset), the C outputs' arrays with
        # their cffi views, and the step's scratch arrays.
        self._lib = lib()
        self._diag = new_diag()
        ptrs = [core._h() for core in self._cores]
        self._envs_c = ffi.new("rlt_env *[]", ptrs)
        self._addrs = np.array([int(ffi.cast("uintptr_t", p)) for p in ptrs], dtype=np.uintp)
        self._shape = (n,)
        self._actions = np.zeros(n, dtype=np.intc)
        self._actions_c = ffi.from_buffer("int[]", self._actions)
        self._rewards = np.zeros(n, dtype=np.float64)
        self._rewards_c = ffi.from_buffer("double[]", self._rewards)
        self._terminated = np.zeros(n, dtype=np.bool_)
        self._terminated_c = ffi.from_buffer("bool[]", self._terminated)
        self._truncated = np.zeros(n, dtype=np.bool_)
        self._obs = np.zeros((n, OBS_LEN), dtype=np.float32)  # the observations when copy is False
        self._obs_c = ffi.from_buffer("float[]", self._obs)
        self._masks = np.zeros((n, N_ACTIONS), dtype=np.int8)  # 1 legal: rlt_env_step_batch's masks
        self._masks_c = ffi.from_buffer("unsigned char[]", self._masks)
        self._masks_flat = self._masks.reshape(-1)
        self._gflops = np.zeros(n, dtype=np.float64)
        self._gflops_c = ffi.from_buffer("double[]", self._gflops)
        self._n_steps = np.zeros(n, dtype=np.int64)
        self._autoreset = np.zeros(n, dtype=np.bool_)
        self._n_autoreset = 0
        self._in_range = np.zeros(n, dtype=np.bool_)
        self._index = np.zeros(n, dtype=np.intp)
        self._row_offsets = np.arange(n, dtype=np.intp) * N_ACTIONS
        # constants as arrays: a ufunc on two arrays costs less than on an
        # array and a Python number
        self._n_actions_u64 = np.full(n, N_ACTIONS, dtype=np.uint64)
        self._n_actions_uint = np.full(n, N_ACTIONS, dtype=np.uintc)
        self._max_steps = np.full(n, self.max_steps, dtype=np.int64)
        self._resets = np.full(n, ACTION_RESET, dtype=np.intc)
        self._ones = np.ones(n, dtype=np.int64)
        self._zeros = np.zeros(n, dtype=np.int64)
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
        schedules = self._schedules(options.pop("schedule", None), which)
        if options:
            raise ValueError(
                f"unknown reset option(s) {sorted(options)}: LoopNest-v0 takes 'schedule' and 'reset_mask'"
            )
        super().reset(seed=seed)
        if seed is not None:
            self.action_space.seed(int(seed))
            self.single_action_space.seed(int(seed))
        idx = which.nonzero()[0]
        self._reset_envs(idx, schedules)
        self._terminated[idx] = False
        self._truncated[idx] = False
        self._is_reset = True
        obs, obs_c = self._obs_buffer()
        st = self._lib.rlt_env_observe_batch(self._envs_c, self.num_envs, obs_c, self._masks_c, self._diag)
        if st:
            self._raise(st)
        info = self._info(np.ones(self.num_envs, dtype=np.bool_), which)
        if len(idx) < self.num_envs:  # the info is of the envs reset (zeros elsewhere, as SyncVectorEnv has it)
            for key in ("action_mask", "gflops", "is_legal", "n_steps"):
                info[key] = np.where(which.reshape((-1,) + (1,) * (info[key].ndim - 1)), info[key], 0).astype(
                    info[key].dtype
                )
        return obs, info

    def step(self, actions: Any) -> tuple[ObsBatch, npt.NDArray[np.float64], BoolArray, BoolArray, dict[str, Any]]:
        """Steps every sub-env with one rlt_env_step_batch call (see the
        class's doc for autoreset)."""
        # The hot path: numpy on whole arrays (a fraction of a microsecond a
        # call, whatever num_envs) and one C call; no Python per sub-env,
        # except for masked actions.
        a = actions if type(actions) is np.ndarray else np.asarray(actions)
        if a.shape != self._shape or a.dtype.kind not in "iu":
            raise ValueError(f"actions must be {self.num_envs} ints (shape ({self.num_envs},)), not {actions!r}")
        if not self._is_reset:
            if self.closed:
                raise ValueError("the env is closed")
            raise InvalidArgumentError("step before reset: call reset() first", status="INVALID_ARGUMENT", code=1)
        acts = self._actions
        acts[:] = a
        if a.dtype.itemsize == 8:  # checked before the cast to C's int could wrap it
            in_range = np.less(a.view(np.uint64), self._n_actions_u64, out=self._in_range)
        else:
            in_range = np.less(acts.view(np.uintc), self._n_actions_uint, out=self._in_range)
        np.add(self._row_offsets, acts, out=self._index)
        is_legal = np.logical_and(in_range, self._masks_flat.take(self._index, mode="clip"))
        resets = self._n_autoreset and self.autoreset_mode == AutoresetMode.NEXT_STEP
        if resets:  # the sub-envs whose episode ended start again, their actions ignored
            np.copyto(acts, self._resets, where=self._autoreset)
            np.logical_or(is_legal, self._autoreset, out=is_legal)
        if np.count_nonzero(is_legal) != self.num_envs:
            self._refuse_or_skip(a, in_range, is_legal)
        obs, obs_c = self._obs_buffer()
        st = self._lib.rlt_env_step_batch(
            self._envs_c, self.num_envs, self._actions_c, self._rewards_c, self._terminated_c, obs_c, self._masks_c,
            self._diag,
        )
        if st:
            self._raise(st)
        n_steps = np.add(self._n_steps, self._ones, out=self._n_steps)
        if resets:
            np.copyto(n_steps, self._zeros, where=self._autoreset)
        terminated, truncated = self._terminated, self._truncated
        if self.max_steps:
            np.greater_equal(n_steps, self._max_steps, out=truncated)
            np.greater(truncated, terminated, out=truncated)  # and not terminated
        if self.autoreset_mode != AutoresetMode.DISABLED:
            np.logical_or(terminated, truncated, out=self._autoreset)
            self._n_autoreset = np.count_nonzero(self._autoreset)
        info = self._info(is_legal, self._everyone)
        if self.autoreset_mode == AutoresetMode.SAME_STEP and self._n_autoreset:
            self._same_step_reset(obs, info)
        if not self.copy:
            return obs, self._rewards, terminated, truncated, info
        return obs, self._rewards.copy(), terminated.copy(), truncated.copy(), info

    def render(self) -> Optional[tuple[str, ...]]:
        """With render_mode "ansi", each sub-env's loop tree and GFLOP/s."""
        if self.render_mode != "ansi":
            return None
        return tuple(f"{core.tree()}GFLOP/s: {core.gflops:.2f}\n" for core in self._cores)

    def close_extras(self, **kwargs: Any) -> None:
        self._is_reset = False  # step and reset refuse from now on: the C envs are freed
        for core in self._cores:
            core.close()

    # ---- rltune's additions -------------------------------------------------

    @property
    def cores(self) -> tuple[LoopTuneEnv, ...]:
        """The sub-envs' C handles (tree, schedule, gflops, stats), clones
        of one env: they share its cache of evaluated states."""
        return tuple(self._cores)

    # ---- helpers ------------------------------------------------------------

    def _obs_buffer(self) -> tuple[ObsBatch, Any]:
        """Where the C call writes the observations: a new array (copy),
        written in place rather than copied after, or the env's own."""
        if not self.copy:
            return self._obs, self._obs_c
        obs = np.empty((self.num_envs, OBS_LEN), dtype=np.float32)
        return obs, ffi.from_buffer("float[]", obs)

    def _raise(self, status: int) -> None:
        """Raises a failed call's error from the diag, and clears it:
        rltune writes a message only into a diag that holds none."""
        d = self._diag
        try:
            check(status, d)
        finally:
            d.status = 0
            d.message[0] = b"\0"

    def _refuse_or_skip(self, a: npt.NDArray[Any], in_range: BoolArray, is_legal: BoolArray) -> None:
        """The actions the batch cannot take as given: one out of range
        raises ValueError; a masked one is a step that changes nothing
        (is_legal False), or with illegal_action="raise" raises
        IllegalScheduleError. Nothing changes before an error is raised."""
        if np.count_nonzero(in_range) != self.num_envs:
            bad = int((~in_range).nonzero()[0][0])
            raise ValueError(
                f"actions[{bad}] = {a[bad]} is out of range: 0..{N_ACTIONS - 1} ({', '.join(ACTION_NAMES)})"
            )
        refused = ~is_legal
        if self.autoreset_mode == AutoresetMode.DISABLED:
            # a terminated sub-env (not reset) goes to the C call, which
            # refuses it as rlt_env_step does: the episode is over
            refused &= ~self._terminated
        illegal = refused.nonzero()[0]
        if len(illegal) and self.illegal_action == "raise":
            self._raise_illegal(int(illegal[0]), int(self._actions[illegal[0]]))
        self._actions[illegal] = ACTION_NONE

    def _raise_illegal(self, i: int, action: int) -> None:
        """illegal_action="raise": the error rlt_env_step gives for sub-env
        i's masked action (taken on a clone, so no env changes), naming it."""
        scratch = self._cores[i].clone()
        try:
            scratch.step(action)
        except RltuneError as e:
            raise type(e)(f"envs[{i}] of {self.num_envs}: {e.message}", status=e.status, code=e.code) from None
        finally:
            scratch.close()
        raise AssertionError(f"sub-env {i}: {ACTION_NAMES[action]} is masked, yet rlt_env_step took it")

    def _reset_mask(self, mask: Any) -> BoolArray:
        """Which sub-envs a reset starts: all, or options["reset_mask"]."""
        if mask is None:
            return np.ones(self.num_envs, dtype=np.bool_)
        if not isinstance(mask, np.ndarray) or mask.dtype != np.bool_ or mask.shape != self._shape:
            raise ValueError(f"options['reset_mask'] must be a bool array of shape ({self.num_envs},), not {mask!r}")
        if not mask.any():
            raise ValueError("options['reset_mask'] must select at least one sub-env")
        return mask.copy()

    def _schedules(self, schedule: Any, which: BoolArray) -> Optional[list[Optional[str]]]:
        """options["schedule"] as one entry per sub-env that resets; None
        when every one starts at the default nest."""
        if schedule is None:
            return None
        if isinstance(schedule, str):
            return [schedule] * int(np.count_nonzero(which))
        if (
            isinstance(schedule, Sequence)
            and len(schedule) == self.num_envs
            and all(s is None or isinstance(s, str) for s in schedule)
        ):
            return [schedule[i] for i in which.nonzero()[0]]
        raise ValueError(
            f"options['schedule'] must be a schedule's text or a sequence of {self.num_envs} (str or None), "
            f"not {schedule!r}"
        )

    def _reset_envs(self, idx: IndexArray, schedules: Optional[list[Optional[str]]]) -> None:
        """rlt_env_reset_batch of the sub-envs idx (ascending, distinct);
        their step counts and autoreset flags start again. A schedule that
        cannot start an episode resets no env (its error says which)."""
        if len(idx) == self.num_envs:
            envs = self._envs_c
        else:
            envs = ffi.from_buffer("rlt_env *[]", self._addrs[idx])
        keep: list[Any] = []
        sched_c = ffi.NULL
        if schedules is not None:
            sched_c = ffi.new("const char *[]", [cstr(s, keep) for s in schedules])
        st = self._lib.rlt_env_reset_batch(envs, sched_c, len(idx), self._diag)
        if st:
            self._raise(st)
        self._n_steps[idx] = 0
        self._autoreset[idx] = False
        self._n_autoreset = np.count_nonzero(self._autoreset)

    def _info(self, is_legal: BoolArray, present: BoolArray) -> dict[str, Any]:
        """The sub-envs' infos (LoopNest-v0's), batched as gymnasium's
        vector envs batch them: a "_key" mask beside each key."""
        self._lib.rlt_env_gflops_batch(self._envs_c, self.num_envs, self._gflops_c)
        if not self.copy:
            masks, gflops, n_steps = self._masks, self._gflops, self._n_steps
        else:
            masks, gflops, n_steps = self._masks.copy(), self._gflops.copy(), self._n_steps.copy()
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

    def _same_step_reset(self, obs: ObsBatch, info: dict[str, Any]) -> None:
        """AutoresetMode.SAME_STEP: the sub-envs whose episode just ended
        hand their last observation and info over in info["final_obs"] and
        info["final_info"] (gymnasium's layout: None and zeros for the
        others) and start again; their rows of the observation and of info
        become their first state's."""
        done = self._autoreset.copy()
        idx = done.nonzero()[0]
        final_obs = np.full(self.num_envs, None, dtype=object)
        for i in idx:
            final_obs[i] = obs[i].copy()
        final_info: dict[str, Any] = {}
        for key in ("action_mask", "gflops", "is_legal", "n_steps"):
            value = info[key]
            kept = np.zeros_like(value)
            kept[idx] = value[idx]
            final_info[key], final_info["_" + key] = kept, done
        self._reset_envs(idx, None)
        fresh = np.empty((len(idx), OBS_LEN), dtype=np.float32)
        masks = np.empty((len(idx), N_ACTIONS), dtype=np.int8)
        envs = ffi.from_buffer("rlt_env *[]", self._addrs[idx])
        st = self._lib.rlt_env_observe_batch(
            envs, len(idx), ffi.from_buffer("float[]", fresh), ffi.from_buffer("unsigned char[]", masks), self._diag
        )
        if st:
            self._raise(st)
        obs[idx] = fresh
        self._masks[idx] = masks
        info.update(self._info(info["is_legal"] | done, self._everyone))
        info["final_obs"], info["_final_obs"] = final_obs, done
        info["final_info"], info["_final_info"] = final_info, done
