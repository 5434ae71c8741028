"""Schedules (text or typed steps) and the loop nests they make
(rltune/schedule.h)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from ._lib import check, cstr, ffi, lib, new_diag, take_text
from .errors import RltuneMemoryError
from .op import Op


class Schedule:
    """A list of schedule steps. Schedule() is empty; Schedule(text) or
    Schedule.parse(text) parses the text form (docs/schedule.md). The add_*
    methods append typed steps (returning self, so they chain); a step of
    bad form raises InvalidArgumentError, and legality is decided when a
    Nest applies the schedule."""

    __slots__ = ("_ptr",)

    def __init__(self, text: Optional[str] = None, source: str = "<inline>") -> None:
        L = lib()
        if text is None:
            ptr = L.rlt_sched_create()
            if ptr == ffi.NULL:
                raise RltuneMemoryError("out of memory making a schedule")
        else:
            out = ffi.new("rlt_sched **")
            diag = new_diag()
            check(L.rlt_sched_parse(text.encode(), source.encode(), out, diag), diag)
            ptr = out[0]
        self._ptr = ffi.gc(ptr, L.rlt_sched_destroy)

    @classmethod
    def parse(cls, text: str, source: str = "<inline>") -> "Schedule":
        return cls(text, source)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "Schedule":
        """Reads and parses a schedule file."""
        L = lib()
        out = ffi.new("rlt_sched **")
        diag = new_diag()
        keep: list[Any] = []
        check(L.rlt_sched_load(cstr(path, keep), out, diag), diag)
        self = cls.__new__(cls)
        self._ptr = ffi.gc(out[0], L.rlt_sched_destroy)
        return self

    def text(self) -> str:
        """The text form, header first: what parse takes back."""
        return take_text(lib().rlt_sched_text(self._ptr))

    def __str__(self) -> str:
        return self.text()

    def __len__(self) -> int:
        return int(lib().rlt_sched_n_steps(self._ptr))

    def __repr__(self) -> str:
        return f"Schedule({self.text()!r})"

    def _add(self, status: int, diag: Any) -> "Schedule":
        check(status, diag)
        return self

    def split(self, loop: str, factor: int) -> "Schedule":
        d = new_diag()
        return self._add(lib().rlt_sched_add_split(self._ptr, loop.encode(), factor, d), d)

    def reorder(self, *loops: str) -> "Schedule":
        """The loops take the positions they hold, in this order."""
        keep = [ffi.new("char[]", name.encode()) for name in loops]
        arr = ffi.new("const char *[]", keep) if keep else ffi.NULL
        d = new_diag()
        return self._add(lib().rlt_sched_add_reorder(self._ptr, len(keep), arr, d), d)

    def fuse(self, outer: str, inner: str) -> "Schedule":
        d = new_diag()
        return self._add(lib().rlt_sched_add_fuse(self._ptr, outer.encode(), inner.encode(), d), d)

    def unroll(self, loop: str) -> "Schedule":
        d = new_diag()
        return self._add(lib().rlt_sched_add_unroll(self._ptr, loop.encode(), d), d)

    def vectorize(self, loop: str) -> "Schedule":
        d = new_diag()
        return self._add(lib().rlt_sched_add_vectorize(self._ptr, loop.encode(), d), d)

    def parallel(self, loop: str, n_threads: int = 0) -> "Schedule":
        """n_threads 0: the run-time thread count."""
        d = new_diag()
        return self._add(lib().rlt_sched_add_parallel(self._ptr, loop.encode(), n_threads, d), d)

    def cache_write(self, loop: Optional[str] = None) -> "Schedule":
        """loop None: a tile around the whole nest ("root")."""
        keep: list[Any] = []
        d = new_diag()
        return self._add(lib().rlt_sched_add_cache_write(self._ptr, cstr(loop, keep), d), d)

    def pack(self, tensor: str, dims: Sequence[int], blocks: Sequence[int]) -> "Schedule":
        """Copies `tensor` into a blocked layout: dims[i] split by blocks[i]."""
        if len(dims) != len(blocks):
            raise ValueError(f"pack {tensor}: {len(dims)} dims but {len(blocks)} blocks")
        cd = ffi.new("int[]", list(dims)) if dims else ffi.NULL
        cb = ffi.new("int64_t[]", list(blocks)) if blocks else ffi.NULL
        d = new_diag()
        return self._add(lib().rlt_sched_add_pack(self._ptr, tensor.encode(), len(dims), cd, cb, d), d)

    def pad(self, tensor: str) -> "Schedule":
        d = new_diag()
        return self._add(lib().rlt_sched_add_pad(self._ptr, tensor.encode(), d), d)


@dataclass(frozen=True)
class CSource:
    """The C kernel a nest lowers to."""

    code: str
    symbol: str
    needs_openmp: bool


class Nest:
    """An op's loop nest with a schedule applied (None: the default nest),
    each step checked by its legality rule: an illegal one raises
    IllegalScheduleError naming the step and why. Keeps the op alive."""

    __slots__ = ("_ptr", "op")

    def __init__(self, op: Op, schedule: Optional[Schedule | str] = None) -> None:
        if isinstance(schedule, str):
            schedule = Schedule(schedule)
        L = lib()
        out = ffi.new("rlt_nest **")
        d = new_diag()
        sched = schedule._ptr if schedule is not None else ffi.NULL
        check(L.rlt_nest_create(op._handle, sched, out, d), d)
        self.op = op
        self._ptr = ffi.gc(out[0], L.rlt_nest_destroy)

    def tree(self) -> str:
        """The loop tree, one loop a line (`rltune show --tree-only`)."""
        return take_text(lib().rlt_nest_tree(self._ptr))

    def lowered(self) -> str:
        """The lowered loop IR between the tree and the C, one node a line
        (`rltune show --stage lowered`)."""
        L = lib()
        out = ffi.new("char **")
        d = new_diag()
        check(L.rlt_nest_lowered_text(self._ptr, out, d), d)
        return take_text(out[0])

    def c_source(self) -> CSource:
        """The C kernel (`rltune show --c-only`)."""
        L = lib()
        out = ffi.new("rlt_c_source *")
        d = new_diag()
        check(L.rlt_nest_c_source(self._ptr, out, d), d)
        code = take_text(out.code)
        return CSource(code, ffi.string(out.symbol).decode(), bool(out.needs_openmp))

    @property
    def is_parallel(self) -> bool:
        return bool(lib().rlt_nest_is_parallel(self._ptr))
