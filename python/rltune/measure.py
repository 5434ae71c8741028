"""Measuring nests on this machine: compile, run, check, time
(rltune/measure.h)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Optional, Sequence, overload

from ._lib import check, cstr, ffi, lib, new_diag, status_name, take_text
from .op import Op
from .schedule import Nest

DEFAULT_CFLAGS = "-O3 -march=native -mprefer-vector-width=512 -ffp-contract=fast"


@dataclass
class BuildOptions:
    """How kernels are compiled (rlt_build_opts); None / 0 take the
    defaults: cc $RLTUNE_CC or gcc, cflags DEFAULT_CFLAGS, cache_dir
    $RLTUNE_CACHE_DIR or ~/.cache/rltune, timeout_s 60, n_parallel 2,
    max_per_unit 8."""

    cc: Optional[str] = None
    cflags: Optional[str] = None
    cache_dir: Optional[str] = None
    timeout_s: float = 0.0
    n_parallel: int = 0
    max_per_unit: int = 0

    def _fill(self, c: Any, keep: list[Any]) -> None:
        c.cc = cstr(self.cc, keep)
        c.cflags = cstr(self.cflags, keep)
        c.cache_dir = cstr(self.cache_dir, keep)
        c.timeout_s = self.timeout_s
        c.n_parallel = self.n_parallel
        c.max_per_unit = self.max_per_unit

    def _c(self, keep: list[Any]) -> Any:
        c = ffi.new("rlt_build_opts *")
        self._fill(c, keep)
        keep.append(c)
        return c


@dataclass
class RunOptions:
    """How kernels are run and timed (rlt_run_opts); 0 takes the default:
    number 1 (grown to meet min_repeat_ms), repeat 5, min_repeat_ms 20,
    warmup 1, timeout_s 10, n_threads 1."""

    number: int = 0
    repeat: int = 0
    min_repeat_ms: float = 0.0
    warmup: int = 0
    timeout_s: float = 0.0
    n_threads: int = 0
    no_pin: bool = False
    slow_cutoff_ms: float = 0.0
    cold_weights: bool = False  # evict the weights, workspace and output from the caches before every timed call

    def _fill(self, c: Any) -> None:
        for f in fields(self):
            setattr(c, f.name, getattr(self, f.name))

    def _c(self, keep: list[Any]) -> Any:
        c = ffi.new("rlt_run_opts *")
        self._fill(c)
        keep.append(c)
        return c


@dataclass(frozen=True)
class RunResult:
    """One nest's measurement. `status` is "OK" or why it failed
    (BUILD_ERROR, BUILD_TIMEOUT, RUN_ERROR, RUN_TIMEOUT, WRONG_ANSWER,
    IO_ERROR); `message` says more."""

    status: str
    is_correct: bool
    time_min_ms: float
    time_median_ms: float
    gflops: float
    n_samples: int
    number: int
    max_error: float
    message: str
    build_s: float

    @property
    def ok(self) -> bool:
        return self.status == "OK"

    @classmethod
    def _from_c(cls, r: Any) -> "RunResult":
        return cls(
            status=status_name(r.status),
            is_correct=bool(r.is_correct),
            time_min_ms=float(r.time_min_ms),
            time_median_ms=float(r.time_median_ms),
            gflops=float(r.gflops),
            n_samples=int(r.n_samples),
            number=int(r.number),
            max_error=float(r.max_error),
            message=ffi.string(r.message).decode(errors="replace"),
            build_s=float(r.build_s),
        )


@dataclass(frozen=True)
class Machine:
    """The machine kernels run on, as rltune sees it."""

    cpu: str
    n_cores: int
    vector_floats: int
    has_fma: bool
    llc_bytes: int = 0  # the last-level cache; 0 when unknown


def machine() -> Machine:
    m = ffi.new("rlt_machine *")
    lib().rlt_machine_detect(m)
    return Machine(ffi.string(m.cpu).decode(errors="replace"), m.n_cores, m.vector_floats, bool(m.has_fma),
                   int(m.llc_bytes))


def build_command(build: Optional[BuildOptions] = None, with_openmp: bool = False) -> str:
    """The compiler command line kernels are built with."""
    keep: list[Any] = []
    return take_text(lib().rlt_build_command(build._c(keep) if build else ffi.NULL, with_openmp))


class Workload:
    """An op's inputs (filled from `seed`) and reference output, built and
    run once, shared by every measurement of its kernels. Raises
    MeasurementError when the reference cannot be built or run."""

    __slots__ = ("_ptr", "op", "_keep")

    def __init__(self, op: Op, build: Optional[BuildOptions] = None, seed: int = 0) -> None:
        L = lib()
        keep: list[Any] = []
        out = ffi.new("rlt_workload **")
        d = new_diag()
        check(L.rlt_workload_create(op._handle, build._c(keep) if build else ffi.NULL, seed, out, d), d)
        self.op = op
        self._keep = keep  # the build options' strings, kept as long as the workload
        self._ptr = ffi.gc(out[0], L.rlt_workload_destroy)

    def measure(
        self,
        nests: Sequence[Nest],
        build: Optional[BuildOptions] = None,
        run: Optional[RunOptions] = None,
    ) -> list[RunResult]:
        """Measures the nests (all built first, then run one at a time):
        one RunResult each, a failing kernel being its result's status.
        Raises only when measuring itself cannot work (no compiler, no
        cache directory, out of memory)."""
        n = len(nests)
        if n == 0:
            return []
        for nest in nests:
            if nest.op is not self.op and nest.op.spec != self.op.spec:
                raise ValueError(f"a nest of {nest.op.spec} measured with a workload of {self.op.spec}")
        keep: list[Any] = []
        arr = ffi.new("const rlt_nest *[]", [nest._ptr for nest in nests])
        out = ffi.new("rlt_run_result[]", n)
        d = new_diag()
        check(
            lib().rlt_measure(
                self._ptr, build._c(keep) if build else ffi.NULL, run._c(keep) if run else ffi.NULL, n, arr, out, d
            ),
            d,
        )
        return [RunResult._from_c(out[i]) for i in range(n)]


@overload
def measure(
    op: Op, nests: Nest, build: Optional[BuildOptions] = None, run: Optional[RunOptions] = None, seed: int = 0
) -> RunResult: ...


@overload
def measure(
    op: Op,
    nests: Sequence[Nest],
    build: Optional[BuildOptions] = None,
    run: Optional[RunOptions] = None,
    seed: int = 0,
) -> list[RunResult]: ...


def measure(
    op: Op,
    nests: Nest | Sequence[Nest],
    build: Optional[BuildOptions] = None,
    run: Optional[RunOptions] = None,
    seed: int = 0,
) -> RunResult | list[RunResult]:
    """Makes the op's workload and measures one nest (returns its
    RunResult) or a list of them (returns a list)."""
    w = Workload(op, build, seed)
    if isinstance(nests, Nest):
        return w.measure([nests], build, run)[0]
    return w.measure(list(nests), build, run)

