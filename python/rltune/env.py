"""The LoopTune environment over an op's loop nest, as the C library has it
(rltune/env.h, docs/env.md): LoopTuneEnv is a thin handle; the Gymnasium
environment rltune/LoopNest-v0 (rltune.gym_env) is built on it.
make_env_dataset measures the states near a start into a state dataset,
which an env given replay_path answers from (docs/env.md, "State
datasets")."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, NoReturn, Optional, Union

import numpy as np
import numpy.typing as npt

from ._lib import Handle, check, cstr, ffi, lib, new_diag, status_name, take_text, text

N_ACTIONS: int = 17  # RLT_ENV_N_ACTIONS (the layout test checks it)
OBS_LEN: int = 359  # RLT_ENV_OBS_LEN
OBS_VERSION: int = 1
OBS_MASK: int = OBS_LEN - N_ACTIONS  # RLT_ENV_OBS_MASK: the mask is the observation's last block
ACTION_STOP: int = 16
ACTION_NONE: int = -1  # RLT_ENV_ACTION_NONE: in a batch of steps, leave this env as it is
ACTION_RESET: int = -2  # RLT_ENV_ACTION_RESET: in a batch of steps, reset this env (rlt_env_reset)


def action_name(action: int) -> str:
    """"up", "split_8", ..., "stop"; "unknown" out of range."""
    return text(lib().rlt_env_action_name(action))


def action_from_name(name: str) -> int:
    """The action with this name, or -1."""
    return int(lib().rlt_env_action_from_name(name.encode()))


ACTION_NAMES: tuple[str, ...] = (
    "up", "down", "swap_up", "swap_down", "split_2", "split_4", "split_8", "split_16", "split_32",
    "split_64", "split_128", "split_256", "merge", "unroll", "vectorize", "parallel", "stop",
)


@dataclass(frozen=True)
class EvalRequest:
    """A state to score (rlt_env_eval_request): the kernel's schedule
    (text form v1, the accumulator included), the state's structural hash
    (the cache key) and the op's flops per call."""

    op_spec: str
    schedule: str
    nest_hash: int
    flops: float


@dataclass(frozen=True)
class EvalResult:
    """What an evaluator returns: GFLOP/s, or a failure status name and its
    message (the state is then worth 0)."""

    gflops: float
    status: str = "OK"
    message: str = ""


#: An evaluator: returns GFLOP/s (a float) or an EvalResult. Raising an
#: exception fails the step (the env stays as it was) with the exception's
#: text as rltune's message.
Evaluator = Callable[[EvalRequest], Union[float, EvalResult]]


@dataclass(frozen=True)
class EnvStats:
    n_evaluations: int
    n_cache_hits: int
    n_cached: int


class _EvaluatorBridge:
    """Keeps a Python evaluator callable from C for the life of an env
    family (clones hold the same bridge)."""

    def __init__(self, fn: Evaluator) -> None:
        self.fn = fn
        self.callback = ffi.callback("rlt_env_evaluate_fn", self._call, error=lib().RLT_STATUS_INTERNAL)

    def _call(self, ctx: Any, req: Any, out: Any, diag: Any) -> int:
        try:
            request = EvalRequest(text(req.op_spec), text(req.schedule), int(req.nest_hash), float(req.flops))
            result = self.fn(request)
            if not isinstance(result, EvalResult):
                result = EvalResult(float(result))
            code = lib().rlt_status_from_str(result.status.encode())
            if code == lib().RLT_STATUS_COUNT:
                raise ValueError(f"evaluator returned status {result.status!r}, not a status name")
            gflops = float(result.gflops)
            if not np.isfinite(gflops) or gflops < 0:
                raise ValueError(f"evaluator returned {gflops} GFLOP/s (must be finite, >= 0)")
            out.status = code
            out.gflops = gflops
            out.message = result.message.encode()[:255]
            return 0
        except Exception as e:  # reported through rltune's diag, not lost in C
            if diag != ffi.NULL:
                diag.status = lib().RLT_STATUS_INVALID_ARGUMENT
                diag.message = f"Python evaluator: {type(e).__name__}: {e}".encode()[:1023]
            return int(lib().RLT_STATUS_INVALID_ARGUMENT)


def _fill_env_opts(
    o: Any,
    keep: list[Any],
    *,
    n_threads: int,
    max_steps: int,
    cc: Optional[str],
    cflags: Optional[str],
    cache_dir: Optional[str | os.PathLike[str]],
    repeat: int,
    min_repeat_ms: float,
    timeout_s: float,
    seed: int,
    peak_gflops: float,
) -> None:
    """The measurement fields of an rlt_env_opts (strings kept by `keep`)."""
    o.cc = cstr(cc, keep)
    o.cflags = cstr(cflags, keep)
    o.cache_dir = cstr(cache_dir, keep)
    o.n_threads = n_threads
    o.repeat = repeat
    o.min_repeat_ms = min_repeat_ms
    o.timeout_s = timeout_s
    o.seed = seed
    o.peak_gflops = peak_gflops
    o.max_steps = max_steps


class LoopTuneEnv(Handle):
    """A handle on rlt_env: the state, actions, mask and observation of the
    LoopTune environment, without Gymnasium's conventions. Every call is the
    C function of the same name; failures raise RltuneError subclasses
    (a masked action: IllegalScheduleError).

    evaluate None measures each new state live (compiled with cc/cflags,
    timed with repeat/min_repeat_ms/timeout_s); a callable scores states
    instead (EvalRequest -> GFLOP/s), compiling nothing; replay_path looks
    every state up in a state dataset (make_env_dataset), compiling nothing,
    and masks the actions to states it lacks (n_threads 0 and peak_gflops 0
    then take the dataset's)."""

    def __init__(
        self,
        op: str,
        *,
        n_threads: int = 0,
        max_steps: int = 0,
        cc: Optional[str] = None,
        cflags: Optional[str] = None,
        cache_dir: Optional[str | os.PathLike[str]] = None,
        repeat: int = 0,
        min_repeat_ms: float = 0.0,
        timeout_s: float = 0.0,
        seed: int = 0,
        peak_gflops: float = 0.0,
        evaluate: Optional[Evaluator] = None,
        replay_path: Optional[str | os.PathLike[str]] = None,
    ) -> None:
        L = lib()
        keep: list[Any] = []
        o = ffi.new("rlt_env_opts *")
        _fill_env_opts(
            o, keep, n_threads=n_threads, max_steps=max_steps, cc=cc, cflags=cflags, cache_dir=cache_dir,
            repeat=repeat, min_repeat_ms=min_repeat_ms, timeout_s=timeout_s, seed=seed, peak_gflops=peak_gflops,
        )
        o.replay_path = cstr(replay_path, keep)
        # One object per family: clones share it (restore checks it), and it
        # keeps the evaluator's C callback alive as long as any member.
        self._family: object = [evaluate, keep]
        self._bridge = _EvaluatorBridge(evaluate) if evaluate is not None else None
        if self._bridge is not None:
            o.evaluate = self._bridge.callback
        out = ffi.new("rlt_env **")
        d = new_diag()
        check(L.rlt_env_create(op.encode(), o, out, d), d)
        self._ptr: Any = ffi.gc(out[0], L.rlt_env_destroy)
        self._init_buffers()

    def _init_buffers(self) -> None:
        """What every call reuses: out-parameters, the diag, and an
        observation buffer with a numpy view of it."""
        self._mask = ffi.new("bool[]", N_ACTIONS)
        self._mask_view = np.frombuffer(ffi.buffer(self._mask), dtype=np.bool_)
        self._reward = ffi.new("double *")
        self._done = ffi.new("bool *")
        self._diag = new_diag()
        self._obs_c = ffi.new("float[]", OBS_LEN)
        self._obs_view = np.frombuffer(ffi.buffer(self._obs_c), dtype=np.float32)

    def _raise(self, status: int) -> NoReturn:
        """Raises a failed call's error from self._diag, and clears the
        diag: rltune writes a message only into a diag that holds none."""
        d = self._diag
        try:
            check(status, d)
        finally:
            d.status = 0
            d.message[0] = b"\0"
        raise AssertionError("unreachable")  # check raised

    def _h(self) -> Any:
        if self._ptr is None:
            raise ValueError("the env is closed")
        return self._ptr


    def clone(self) -> "LoopTuneEnv":
        """A new env in the same state, sharing the op, workload and cache."""
        out = ffi.new("rlt_env **")
        d = new_diag()
        check(lib().rlt_env_clone(self._h(), out, d), d)
        twin = LoopTuneEnv.__new__(LoopTuneEnv)
        twin._family = self._family
        twin._bridge = self._bridge
        twin._ptr = ffi.gc(out[0], lib().rlt_env_destroy)
        twin._init_buffers()
        return twin

    def restore(self, src: "LoopTuneEnv") -> None:
        """Copies src's state into this env (both of one family)."""
        if src._family is not self._family:
            raise ValueError("restore: the envs are not of one family (one cloned from the other)")
        lib().rlt_env_restore(self._h(), src._h())

    def reset(self, schedule: Optional[str] = None) -> None:
        """Starts an episode at the default nest (or a schedule's)."""
        d = self._diag
        if schedule is None:
            st = lib().rlt_env_reset(self._h(), d)
        else:
            st = lib().rlt_env_reset_schedule(self._h(), schedule.encode(), d)
        if st:
            self._raise(st)

    def step(self, action: int) -> tuple[float, bool]:
        """Takes an action; (reward, done)."""
        st = lib().rlt_env_step(self._h(), int(action), self._reward, self._done, self._diag)
        if st:
            self._raise(st)
        return float(self._reward[0]), bool(self._done[0])

    def prefetch(self, actions: list[int]) -> None:
        """Evaluates together the states these actions would reach (built in
        one batch), so the steps that follow are look-ups."""
        if not actions:
            return
        envs = ffi.new("rlt_env *[]", [self._h()] * len(actions))
        acts = ffi.new("int[]", actions)
        d = new_diag()
        check(lib().rlt_env_prefetch(envs, acts, len(actions), d), d)

    def observe(self, out: Optional[npt.NDArray[np.float32]] = None) -> npt.NDArray[np.float32]:
        """The observation (OBS_LEN float32, docs/env.md), a new array
        unless `out` is given."""
        st = lib().rlt_env_observe(self._h(), self._obs_c, OBS_LEN, self._diag)
        if st:
            self._raise(st)
        if out is None:
            return self._obs_view.copy()
        if out.dtype != np.float32 or out.shape != (OBS_LEN,):
            raise ValueError(f"observe: out must be a float32 array of shape ({OBS_LEN},)")
        out[:] = self._obs_view
        return out

    def action_mask(self) -> npt.NDArray[np.int8]:
        """1 where the action is legal now (Gymnasium's mask dtype)."""
        lib().rlt_env_action_mask(self._h(), self._mask)
        return self._mask_view.astype(np.int8)

    @property
    def is_done(self) -> bool:
        return bool(lib().rlt_env_is_done(self._h()))

    @property
    def is_reset(self) -> bool:
        return bool(lib().rlt_env_is_reset(self._h()))

    @property
    def gflops(self) -> float:
        return float(lib().rlt_env_gflops(self._h()))

    def eval_status(self) -> tuple[str, str]:
        """The current state's evaluation: (status name, message)."""
        msg = ffi.new("const char **")
        status = lib().rlt_env_eval_status(self._h(), msg)
        return status_name(status), text(msg[0])

    @property
    def peak_gflops(self) -> float:
        return float(lib().rlt_env_peak_gflops(self._h()))

    @property
    def cursor(self) -> int:
        return int(lib().rlt_env_cursor(self._h()))

    @property
    def n_steps(self) -> int:
        return int(lib().rlt_env_n_steps(self._h()))

    @property
    def state_hash(self) -> int:
        return int(lib().rlt_env_state_hash(self._h()))

    @property
    def accumulator(self) -> Optional[str]:
        ptr = lib().rlt_env_accumulator(self._h())
        return None if ptr == ffi.NULL else text(ptr)

    @property
    def last_error(self) -> str:
        return text(lib().rlt_env_last_error(self._h()))

    def tree(self) -> str:
        """The loop tree, "> " marking the cursor's loop."""
        return take_text(lib().rlt_env_tree(self._h()))

    def schedule(self) -> str:
        """The schedule of the kernel the state measures (text form v1)."""
        return take_text(lib().rlt_env_schedule(self._h()))

    def stats(self) -> EnvStats:
        s = ffi.new("rlt_env_stats *")
        lib().rlt_env_stats_get(self._h(), s)
        return EnvStats(int(s.n_evaluations), int(s.n_cache_hits), int(s.n_cached))


@dataclass(frozen=True)
class EnvDatasetResult:
    """What make_env_dataset wrote (rlt_env_dataset_result)."""

    n_states: int  # states in the file
    n_found: int  # distinct states the walk found (more than n_states when max_states cut a level)
    depth_complete: int  # every state within this many steps of the start is in the file
    n_failed: int  # states whose kernel failed (0 GFLOP/s)
    peak_gflops: float  # one core's, as the file records it
    start_gflops: float
    best_gflops: float
    was_stopped: bool
    wall_s: float


def make_env_dataset(
    op: str,
    path: Union[str, os.PathLike[str]],
    *,
    depth: int = 0,
    max_states: int = 0,
    seed: int = 0,
    schedule: Optional[str] = None,
    batch_size: int = 0,
    n_threads: int = 0,
    cc: Optional[str] = None,
    cflags: Optional[str] = None,
    cache_dir: Optional[str | os.PathLike[str]] = None,
    repeat: int = 0,
    min_repeat_ms: float = 0.0,
    timeout_s: float = 0.0,
    data_seed: int = 0,
    peak_gflops: float = 0.0,
    evaluate: Optional[Evaluator] = None,
    progress: Optional[Callable[[int, int], None]] = None,
) -> EnvDatasetResult:
    """Makes a state dataset of `op` in `path` (rlt_env_dataset_make, as
    `rltune gen-dataset --kind states` does): every env state within `depth`
    steps (0: 4) of the start (the op's default nest, or `schedule`'s), or
    max_states of them (0: 1000; a seeded subset of the level that passes
    it), each measured live with the measurement options (rltune's defaults
    when zero: 3 samples of 10 ms, as the C env) or scored by `evaluate`.
    `progress(n_done, n_states)` is called after each batch of batch_size
    (0: 16) kernels. LoopNest-v0 replays the file with
    measure="replay:PATH"."""
    L = lib()
    keep: list[Any] = []
    o = ffi.new("rlt_env_dataset_opts *")
    o.depth = depth
    o.max_states = max_states
    o.seed = seed
    o.start_schedule = cstr(schedule, keep)
    o.batch_size = batch_size
    _fill_env_opts(
        o.env, keep, n_threads=n_threads, max_steps=0, cc=cc, cflags=cflags, cache_dir=cache_dir, repeat=repeat,
        min_repeat_ms=min_repeat_ms, timeout_s=timeout_s, seed=data_seed, peak_gflops=peak_gflops,
    )
    bridge = _EvaluatorBridge(evaluate) if evaluate is not None else None
    if bridge is not None:
        o.env.evaluate = bridge.callback
    errors: list[BaseException] = []
    stop = ffi.new("int *")

    def on_progress(ctx: Any, n_done: int, n_states: int) -> None:
        if errors:
            return
        try:
            if progress is not None:
                progress(int(n_done), int(n_states))
        except BaseException as e:  # Ctrl-C lands here too: stop after this batch, raise after the call
            errors.append(e)
            stop[0] = 1

    callback = ffi.callback("rlt_env_dataset_progress_fn", on_progress)
    o.progress = callback
    o.stop = stop
    result = ffi.new("rlt_env_dataset_result *")
    d = new_diag()
    check(L.rlt_env_dataset_make(op.encode(), os.fsencode(path), o, result, d), d)
    if errors:
        raise errors[0]
    return EnvDatasetResult(
        n_states=int(result.n_states),
        n_found=int(result.n_found),
        depth_complete=int(result.depth_complete),
        n_failed=int(result.n_failed),
        peak_gflops=float(result.peak_gflops),
        start_gflops=float(result.start_gflops),
        best_gflops=float(result.best_gflops),
        was_stopped=bool(result.was_stopped),
        wall_s=float(result.wall_s),
    )
