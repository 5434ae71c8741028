"""A tuning session, stepped batch by batch (rltune/session.h)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Optional

from ._lib import Handle, check, cstr, ffi, lib, new_diag, take_text, text
from .measure import BuildOptions, RunOptions
from .op import Op
from .records import RecordTarget

_OPTION_NAMES = (
    None, "tuner", "numbers", "db_path", "replay_path", "transfer_path", "agent",
    "start_key", "policy_path", "tuner_config_path", "tuner_options",
)


@dataclass(frozen=True)
class SessionSummary:
    """Where a session stands (rlt_session_summary), copied out."""

    n_trials: int
    n_total: int
    n_measured: int
    n_from_records: int
    n_failed: int
    n_replayed: int
    n_absent: int
    best_gflops: float
    best_time_ms: float
    best_config: str
    best_schedule: str
    best_cc: str
    curve: tuple[float, ...]
    wall_s: float
    tuner_s: float
    measurements_per_s: float
    is_done: bool
    was_stopped: bool
    was_stopped_early: bool
    was_exhausted: bool
    n_seeds: int
    n_other_threads: int
    n_transfer_rows: int
    n_transfer_workloads: int
    start_config: str
    n_final: int
    final_rounds: int
    final_repeat: int
    final_min_repeat_ms: float
    final_s: float
    tuning_best_gflops: float
    tuning_best_config: str
    has_policy: bool
    policy_gflops: float
    policy_wall_s: float
    policy_n_evaluations: int
    policy_schedule: str

    @classmethod
    def _from_c(cls, s: Any) -> "SessionSummary":
        values: dict[str, Any] = {}
        for name, f in cls.__dataclass_fields__.items():
            if name == "curve":
                values[name] = tuple(s.curve[i] for i in range(s.n_trials)) if s.curve != ffi.NULL else ()
                continue
            v = getattr(s, name)
            if f.type == "str":
                values[name] = text(v)
            elif f.type == "bool":
                values[name] = bool(v)
            elif f.type == "int":
                values[name] = int(v)
            else:
                values[name] = float(v)
        return cls(**values)


def tuner_names() -> list[str]:
    """The tuners Session(tuner=...) takes."""
    names = lib().rlt_tuner_names()
    result = []
    i = 0
    while names[i] != ffi.NULL:
        result.append(text(names[i]))
        i += 1
    return result


def tuner_summary(tuner: str) -> str:
    return text(lib().rlt_tuner_summary(tuner.encode()))


def session_target(build: Optional[BuildOptions] = None, n_threads: int = 1) -> RecordTarget:
    """The target a session with these options records under (its `.key` is
    what Database.best and .history take)."""
    keep: list[Any] = []
    out = ffi.new("rlt_record_target *")
    d = new_diag()
    check(lib().rlt_session_target(build._c(keep) if build else ffi.NULL, n_threads, out, d), d)
    return RecordTarget._from_c(out)


class Session(Handle):
    """A tuning session of one op. Options are keyword arguments named as
    rlt_session_options' fields (None / unset: rltune's defaults), with
    `build` and `run` as BuildOptions / RunOptions. A refused option
    raises a ValueError subclass whose `.option` names it.

        s = Session(op, tuner="random", n_trials=8, batch_size=4, db_path="r.db")
        while not s.is_done:
            s.step()
            print(s.summary().best_gflops)
        s.finish()
    """

    def __init__(
        self,
        op: Op,
        *,
        tuner: Optional[str] = None,
        n_trials: Optional[int] = None,
        batch_size: Optional[int] = None,
        early_stopping: Optional[int] = None,
        seed: Optional[int] = None,
        n_threads: Optional[int] = None,
        build: Optional[BuildOptions] = None,
        run: Optional[RunOptions] = None,
        db_path: Optional[str | os.PathLike[str]] = None,
        replay_path: Optional[str | os.PathLike[str]] = None,
        transfer_path: Optional[str | os.PathLike[str]] = None,
        agent_in: Optional[str | os.PathLike[str]] = None,
        agent_out: Optional[str | os.PathLike[str]] = None,
        start_key: Optional[str] = None,
        policy_path: Optional[str | os.PathLike[str]] = None,
        from_other_threads: Optional[bool] = None,
        no_clang: Optional[bool] = None,
        n_seeds: Optional[int] = None,
        n_final: Optional[int] = None,
        tuner_config_path: Optional[str | os.PathLike[str]] = None,
        tuner_options: Optional[str] = None,
    ) -> None:
        L = lib()
        o = ffi.new("rlt_session_options *")
        L.rlt_session_options_init(o)
        keep: list[Any] = []
        numbers = {
            "n_trials": n_trials, "batch_size": batch_size, "early_stopping": early_stopping, "seed": seed,
            "n_threads": n_threads, "from_other_threads": from_other_threads, "no_clang": no_clang,
            "n_seeds": n_seeds,
            "n_final": n_final,
        }
        for name, value in numbers.items():
            if value is not None:
                setattr(o, name, value)
        strings = {
            "tuner": tuner, "db_path": db_path, "replay_path": replay_path, "transfer_path": transfer_path,
            "agent_in": agent_in, "agent_out": agent_out, "start_key": start_key, "policy_path": policy_path,
            "tuner_config_path": tuner_config_path, "tuner_options": tuner_options,
        }
        for name, path in strings.items():
            if path is not None:
                setattr(o, name, cstr(path, keep))
        if build is not None:
            build._fill(o.build, keep)
        if run is not None:
            run._fill(o.run)
        out = ffi.new("rlt_session **")
        bad = ffi.new("rlt_session_option *")
        d = new_diag()
        try:
            check(L.rlt_session_open(op._handle, o, out, bad, d), d)
        except Exception as e:
            idx = int(bad[0])
            setattr(e, "option", _OPTION_NAMES[idx] if 0 <= idx < len(_OPTION_NAMES) else None)
            raise
        self.op = op
        # The strings stay alive as long as the session: the C session keeps
        # some of the pointers past rlt_session_open (the live measurer's
        # copy of the build options; agent_out, used by finish).
        self._keep = keep
        self._ptr: Any = ffi.gc(out[0], L.rlt_session_destroy)

    def _h(self) -> Any:
        if self._ptr is None:
            raise ValueError("the session is closed")
        return self._ptr

    @property
    def is_done(self) -> bool:
        return bool(lib().rlt_session_is_done(self._h()))

    def step(self) -> "SessionSummary":
        """One batch: proposed, measured (or read back, or replayed),
        stored, heard by the tuner. Returns the summary after it."""
        d = new_diag()
        check(lib().rlt_session_step(self._h(), d), d)
        return self.summary()

    def run(self) -> "SessionSummary":
        """Steps until done, then finishes; the final summary."""
        while not self.is_done:
            self.step()
        self.finish()
        return self.summary()

    def finish(self) -> None:
        """Ends the search: the agent saved, then the final pick."""
        d = new_diag()
        check(lib().rlt_session_finish(self._h(), d), d)

    def summary(self) -> SessionSummary:
        s = ffi.new("rlt_session_summary *")
        lib().rlt_session_summary_get(self._h(), s)
        return SessionSummary._from_c(s)

    def json(self) -> dict[str, Any]:
        """The session as `rltune tune --json` prints it, parsed."""
        result: dict[str, Any] = json.loads(self.json_text())
        return result

    def json_text(self) -> str:
        return take_text(lib().rlt_session_json(self._h()))

    @property
    def last_error(self) -> str:
        return text(lib().rlt_session_last_error(self._h()))

