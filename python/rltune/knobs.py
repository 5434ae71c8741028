"""Knob spaces and measuring their configurations (rltune/space.h), and
datasets (rlt_dataset_measure, rltune/session.h).

    space = KnobSpace(Op("matmul:M=64,N=64,K=64"), n_threads=1)
    config = space.median()                      # numpy int32 array, one choice per knob
    print(space.knob_names, space.key(config))
    with space.live_measurer(build=BuildOptions(cflags="-O1")) as m:
        print(m.measure([config])[0].gflops)

    measure_dataset(op, "mm.db", n_samples=64)   # once
    space = KnobSpace.open_dataset("mm.db")      # then, noise-free and fast:
    m = space.replay_measurer()

A configuration is an int array of n_knobs choice indices (any sequence
of ints is taken; numpy int32 arrays are returned).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

from ._lib import Handle, check, cstr, ffi, lib, new_diag, status_name, take_text, text
from .measure import BuildOptions, RunOptions
from .op import Op

Config = npt.NDArray[np.int32]
ConfigLike = Union[Sequence[int], npt.NDArray[Any]]

MAX_KNOBS = 40
MAX_CHOICES = 64


@dataclass(frozen=True)
class ConfigResult:
    """One configuration's measurement (rlt_config_result). `status` is
    "OK", a kernel's failure (BUILD_ERROR, RUN_ERROR, WRONG_ANSWER, ...) or
    ILLEGAL_SCHEDULE for an invalid configuration (not measured);
    `is_absent`: a replay's dataset lacks it (status OK, no GFLOP/s)."""

    status: str
    is_absent: bool
    is_from_records: bool
    gflops: float
    time_median_ms: float
    message: str

    @property
    def ok(self) -> bool:
        """Measured (or replayed) and correct: it has a GFLOP/s."""
        return self.status == "OK" and not self.is_absent

    @classmethod
    def _from_c(cls, r: Any) -> "ConfigResult":
        return cls(
            status=status_name(r.status),
            is_absent=bool(r.is_absent),
            is_from_records=bool(r.is_from_records),
            gflops=float(r.gflops),
            time_median_ms=float(r.time_median_ms),
            message=ffi.string(r.message).decode(errors="replace"),
        )


class KnobSpace(Handle):
    """An op's knob space, as a tuning session searches it
    (rlt_knob_space_create), or the space a dataset was measured on
    (KnobSpace.open_dataset). Bad input raises ValueError subclasses with
    rltune's message."""

    def __init__(self, op: Union[Op, str], n_threads: int = 1) -> None:
        L = lib()
        if isinstance(op, str):
            op = Op(op)
        out = ffi.new("rlt_knob_space **")
        d = new_diag()
        check(L.rlt_knob_space_create(op._ptr, int(n_threads), out, d), d)
        self._init(out[0])

    @classmethod
    def open_dataset(cls, path: Union[str, os.PathLike[str]]) -> "KnobSpace":
        """The space (op, threads, knobs) of a dataset, its measurements
        loaded for replay_measurer()."""
        L = lib()
        out = ffi.new("rlt_knob_space **")
        d = new_diag()
        check(L.rlt_knob_space_open_dataset(os.fsencode(path), out, d), d)
        self = cls.__new__(cls)
        self._init(out[0])
        return self

    def _init(self, ptr: Any) -> None:
        L = lib()
        self._ptr = ffi.gc(ptr, L.rlt_knob_space_destroy)
        n = int(L.rlt_knob_space_n_knobs(ptr))
        self.n_knobs: int = n
        self.knob_names: tuple[str, ...] = tuple(text(L.rlt_knob_space_knob_name(ptr, k)) for k in range(n))
        self.n_choices: npt.NDArray[np.int32] = np.array(
            [L.rlt_knob_space_n_choices(ptr, k) for k in range(n)], dtype=np.int32
        )
        self.choices: tuple[tuple[str, ...], ...] = tuple(
            tuple(text(L.rlt_knob_space_choice_text(ptr, k, c)) for c in range(int(self.n_choices[k])))
            for k in range(n)
        )
        self.spec: str = text(L.rlt_op_spec(L.rlt_knob_space_op(ptr)))
        self.n_threads: int = int(L.rlt_knob_space_n_threads(ptr))
        self.size: int = int(L.rlt_knob_space_size(ptr))
        self.dataset_size: int = int(L.rlt_knob_space_dataset_size(ptr))
        self.flops: float = float(L.rlt_op_flops(L.rlt_knob_space_op(ptr)))

    def _h(self) -> Any:
        if self._ptr is None:
            raise ValueError("the knob space is closed")
        return self._ptr

    def _in(self, config: ConfigLike) -> Any:
        a = np.asarray(config)
        if a.shape != (self.n_knobs,):
            raise ValueError(f"a configuration is {self.n_knobs} choice indices, not an array of shape {a.shape}")
        return ffi.new("int[]", [int(x) for x in a])

    def _out(self) -> Any:
        return ffi.new("int[]", max(self.n_knobs, 1))

    def _np(self, buf: Any) -> Config:
        return np.array([buf[k] for k in range(self.n_knobs)], dtype=np.int32)

    @property
    def last_error(self) -> str:
        return text(lib().rlt_knob_space_last_error(self._h()))

    def key(self, config: ConfigLike) -> str:
        """The configuration's key ("v1;vec=j*8;..."), as records store it."""
        out = ffi.new("char **")
        d = new_diag()
        check(lib().rlt_knob_space_config_key(self._h(), self._in(config), out, d), d)
        return take_text(out[0])

    def parse(self, key: str) -> Config:
        """A key back into its configuration (ParseError when it is not one of this space)."""
        out = self._out()
        d = new_diag()
        check(lib().rlt_knob_space_config_parse(self._h(), key.encode(), out, d), d)
        return self._np(out)

    def is_valid(self, config: ConfigLike) -> bool:
        return bool(lib().rlt_knob_space_is_valid(self._h(), self._in(config)))

    def check(self, config: ConfigLike) -> None:
        """Raises (IllegalScheduleError with the reason, or
        InvalidArgumentError for a choice out of range) unless valid."""
        d = new_diag()
        check(lib().rlt_knob_space_config_check(self._h(), self._in(config), d), d)

    def nearest_valid(self, config: ConfigLike) -> Config:
        """The valid configuration nearest `config` (rlt_knob_space_nearest_valid;
        for a dataset's space, one the dataset measured)."""
        out = self._out()
        lib().rlt_knob_space_nearest_valid(self._h(), self._in(config), out)
        return self._np(out)

    def median(self) -> Config:
        """Every knob at its middle choice, or the valid configuration nearest it."""
        out = self._out()
        lib().rlt_knob_space_median(self._h(), out)
        return self._np(out)

    def in_dataset(self, config: ConfigLike) -> bool:
        return bool(lib().rlt_knob_space_in_dataset(self._h(), self._in(config)))

    def dataset_config(self, i: int) -> Config:
        """The i-th configuration the dataset measured (0 <= i < dataset_size)."""
        out = self._out()
        d = new_diag()
        check(lib().rlt_knob_space_dataset_config(self._h(), int(i), out, d), d)
        return self._np(out)

    def dataset_configs(self) -> npt.NDArray[np.int32]:
        """Every configuration the dataset measured, one row each."""
        rows = [self.dataset_config(i) for i in range(self.dataset_size)]
        return np.array(rows, dtype=np.int32).reshape(len(rows), self.n_knobs)

    def live_measurer(
        self,
        *,
        build: Optional[BuildOptions] = None,
        run: Optional[RunOptions] = None,
        db_path: Optional[Union[str, os.PathLike[str]]] = None,
        tuner: Optional[str] = None,
        seed: int = 0,
    ) -> "ConfigMeasurer":
        """Builds, runs and times configurations here, as a session does;
        with db_path, records are read back and stored."""
        return ConfigMeasurer._live(self, build, run, db_path, tuner, seed)

    def replay_measurer(self, dataset: Optional[Union[str, os.PathLike[str]]] = None) -> "ConfigMeasurer":
        """Answers from a dataset (this space's own when None): noise-free,
        nothing compiled; a configuration it lacks is is_absent."""
        return ConfigMeasurer._replay(self, dataset)


class ConfigMeasurer(Handle):
    """Measures configurations of a KnobSpace (rlt_config_measurer): live
    or replayed. Make one with KnobSpace.live_measurer / replay_measurer."""

    def __init__(self) -> None:
        raise TypeError("use KnobSpace.live_measurer() or KnobSpace.replay_measurer()")

    @classmethod
    def _live(
        cls,
        space: KnobSpace,
        build: Optional[BuildOptions],
        run: Optional[RunOptions],
        db_path: Optional[Union[str, os.PathLike[str]]],
        tuner: Optional[str],
        seed: int,
    ) -> "ConfigMeasurer":
        L = lib()
        keep: list[Any] = []
        o = ffi.new("rlt_config_measurer_options *")
        L.rlt_config_measurer_options_init(o)
        if build is not None:
            build._fill(o.build, keep)
        if run is not None:
            run._fill(o.run)
        o.db_path = cstr(db_path, keep)
        o.tuner = cstr(tuner, keep)
        o.seed = int(seed)
        out = ffi.new("rlt_config_measurer **")
        d = new_diag()
        check(L.rlt_config_measurer_create_live(space._h(), o, out, d), d)
        return cls._wrap(space, out[0])

    @classmethod
    def _replay(cls, space: KnobSpace, dataset: Optional[Union[str, os.PathLike[str]]]) -> "ConfigMeasurer":
        L = lib()
        keep: list[Any] = []
        out = ffi.new("rlt_config_measurer **")
        d = new_diag()
        check(L.rlt_config_measurer_create_replay(space._h(), cstr(dataset, keep), out, d), d)
        return cls._wrap(space, out[0])

    @classmethod
    def _wrap(cls, space: KnobSpace, ptr: Any) -> "ConfigMeasurer":
        self = cls.__new__(cls)
        self.space = space  # the measurer borrows it: keep it alive
        self._ptr = ffi.gc(ptr, lib().rlt_config_measurer_destroy)
        self.kind = text(lib().rlt_config_measurer_kind(ptr))
        return self

    def _h(self) -> Any:
        if self._ptr is None:
            raise ValueError("the measurer is closed")
        return self._ptr

    @property
    def best_gflops(self) -> float:
        """A replay's: its dataset's best; live: the best measured so far."""
        return float(lib().rlt_config_measurer_best_gflops(self._h()))

    @property
    def last_error(self) -> str:
        return text(lib().rlt_config_measurer_last_error(self._h()))

    def measure(self, configs: Union[Iterable[ConfigLike], npt.NDArray[Any]]) -> list[ConfigResult]:
        """Measures the configurations as one batch (built in parallel)."""
        rows = np.asarray([np.asarray(c) for c in configs] if not isinstance(configs, np.ndarray) else configs)
        n_knobs = self.space.n_knobs
        if rows.size == 0:
            return []
        if rows.ndim != 2 or rows.shape[1] != n_knobs:
            raise ValueError(f"configurations are rows of {n_knobs} choice indices, not an array of shape {rows.shape}")
        n = rows.shape[0]
        flat = ffi.new("int[]", [int(x) for x in rows.reshape(-1)])
        out = ffi.new("rlt_config_result[]", n)
        d = new_diag()
        check(lib().rlt_config_measure(self._h(), n, flat, out, d), d)
        return [ConfigResult._from_c(out[i]) for i in range(n)]


@dataclass(frozen=True)
class DatasetInfo:
    """A dataset's description (rlt_dataset_info)."""

    spec: str
    target: str
    n_threads: int
    vector_floats: int
    has_clang: bool
    fixed: str
    space_size: int
    n_valid: int
    is_complete: bool
    n_samples: int
    seed: int
    n_configs: int


@dataclass(frozen=True)
class DatasetResult:
    """What a measure_dataset run did (rlt_dataset_result)."""

    n_done: int
    n_measured: int
    n_from_records: int
    n_failed: int
    was_stopped: bool
    best_gflops: float
    best_time_ms: float
    best_config: str
    best_cc: str
    wall_s: float
    measurements_per_s: float


def _copy_out(cls: Any, c: Any) -> Any:
    values: dict[str, Any] = {}
    for name, f in cls.__dataclass_fields__.items():
        v = getattr(c, name)
        if f.type == "str":
            values[name] = ffi.string(v).decode(errors="replace")
        elif f.type == "bool":
            values[name] = bool(v)
        elif f.type == "int":
            values[name] = int(v)
        else:
            values[name] = float(v)
    return cls(**values)


def measure_dataset(
    op: Union[Op, str],
    path: Union[str, os.PathLike[str]],
    *,
    n_samples: int = 0,
    fix: Optional[str] = None,
    seed: int = 0,
    batch_size: int = 0,
    n_threads: int = 1,
    build: Optional[BuildOptions] = None,
    run: Optional[RunOptions] = None,
) -> tuple[DatasetInfo, DatasetResult]:
    """Measures the dataset of `op` into `path` (rlt_dataset_measure, as
    `rltune dataset` does; resumed when the file holds it): every valid
    configuration when there are at most n_samples (0: 4096), else a
    uniform sample of n_samples; `fix` holds knobs at one choice
    ("cc=gcc;vec=j*8")."""
    L = lib()
    if isinstance(op, str):
        op = Op(op)
    keep: list[Any] = []
    o = ffi.new("rlt_dataset_opts *")
    o.n_samples = int(n_samples)
    o.fix = cstr(fix, keep)
    o.seed = int(seed)
    o.batch_size = int(batch_size)
    o.n_threads = int(n_threads)
    if build is not None:
        build._fill(o.build, keep)
    if run is not None:
        run._fill(o.run)
    info = ffi.new("rlt_dataset_info *")
    result = ffi.new("rlt_dataset_result *")
    d = new_diag()
    check(L.rlt_dataset_measure(op._ptr, os.fsencode(path), o, info, result, d), d)
    return _copy_out(DatasetInfo, info), _copy_out(DatasetResult, result)
