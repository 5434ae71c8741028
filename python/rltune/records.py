"""The records database: one row per measurement, failures included
(rltune/records.h, docs/formats.md)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, fields
from typing import Any, Iterator, Optional

from ._lib import Handle, check, cstr, ffi, lib, libc, new_diag, status_name, take_text, text
from .errors import RltuneIOError


def _s(chars: Any) -> str:
    value: str = ffi.string(chars).decode(errors="replace")
    return value


@dataclass(frozen=True)
class RecordTarget:
    """Where a record was measured; `key` is its key text, what records are
    filed and looked up under."""

    cpu: str
    vector_floats: int
    n_threads: int
    is_weights_prepacked: bool
    codegen: int
    cc: str
    is_weights_cold: bool = False  # timed with weights, workspace and output evicted (key "weights=cold")

    @classmethod
    def _from_c(cls, t: Any) -> "RecordTarget":
        return cls(_s(t.cpu), t.vector_floats, t.n_threads, bool(t.is_weights_prepacked), t.codegen, _s(t.cc),
                   bool(t.is_weights_cold))

    def _fill(self, t: Any) -> None:
        t.cpu = self.cpu.encode()
        t.vector_floats = self.vector_floats
        t.n_threads = self.n_threads
        t.is_weights_prepacked = self.is_weights_prepacked
        t.is_weights_cold = self.is_weights_cold
        t.codegen = self.codegen
        t.cc = self.cc.encode()

    @property
    def key(self) -> str:
        t = ffi.new("rlt_record_target *")
        self._fill(t)
        return take_text(lib().rlt_record_target_text(t))

    @classmethod
    def parse(cls, key: str) -> "RecordTarget":
        t = ffi.new("rlt_record_target *")
        d = new_diag()
        check(lib().rlt_record_target_parse(key.encode(), t, d), d)
        return cls._from_c(t)


@dataclass(frozen=True)
class Record:
    """One measurement (rlt_record); `status` is the status name."""

    id: int
    spec: str
    target: RecordTarget
    config: str
    schedule: str
    tuner: str
    status: str
    is_final: bool
    time_min_ms: float
    time_median_ms: float
    gflops: float
    seed: int
    build_s: float
    created_s: float
    message: str

    @classmethod
    def _from_c(cls, r: Any) -> "Record":
        return cls(
            id=int(r.id),
            spec=_s(r.spec),
            target=RecordTarget._from_c(r.target),
            config=_s(r.config),
            schedule=_s(r.schedule),
            tuner=_s(r.tuner),
            status=status_name(r.status),
            is_final=bool(r.is_final),
            time_min_ms=float(r.time_min_ms),
            time_median_ms=float(r.time_median_ms),
            gflops=float(r.gflops),
            seed=int(r.seed),
            build_s=float(r.build_s),
            created_s=float(r.created_s),
            message=_s(r.message),
        )

    def _c(self) -> Any:
        r = ffi.new("rlt_record *")
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "target":
                v._fill(r.target)
            elif f.name == "status":
                code = lib().rlt_status_from_str(v.encode())
                if code == lib().RLT_STATUS_COUNT:
                    raise ValueError(f"record status {v!r} is not a status name")
                r.status = code
            elif isinstance(v, str):
                setattr(r, f.name, v.encode())
            else:
                setattr(r, f.name, v)
        return r

    def json(self) -> str:
        """The record as one line of JSON (format v2)."""
        return take_text(lib().rlt_record_json(self._c()))

    def to_dict(self) -> dict[str, Any]:
        result: dict[str, Any] = json.loads(self.json())
        return result

    @classmethod
    def from_json(cls, text: str, where: str = "<json>") -> "Record":
        r = ffi.new("rlt_record *")
        d = new_diag()
        check(lib().rlt_record_from_json(text.encode(), where.encode(), r, d), d)
        return cls._from_c(r)


def config_key_get(key: str, name: str) -> Optional[str]:
    """A field of a configuration key ("cc"), or None when absent."""
    buf = ffi.new("char[]", 1024)
    if not lib().rlt_config_key_get(key.encode(), name.encode(), buf, 1024):
        return None
    return _s(buf)


class Database(Handle):
    """A records database (SQLite), created if absent unless read_only.
    Use as a context manager or call close()."""

    def __init__(
        self, path: str | os.PathLike[str], read_only: bool = False, busy_timeout_s: float = 0.0
    ) -> None:
        L = lib()
        keep: list[Any] = []
        opts = ffi.new("rlt_db_opts *", {"is_read_only": read_only, "busy_timeout_s": busy_timeout_s})
        out = ffi.new("rlt_db **")
        d = new_diag()
        check(L.rlt_db_open(cstr(path, keep), opts, out, d), d)
        self.path = os.fspath(path)
        self._ptr: Any = ffi.gc(out[0], L.rlt_db_close)

    @classmethod
    def open(cls, path: str | os.PathLike[str], read_only: bool = False) -> "Database":
        return cls(path, read_only)


    def _h(self) -> Any:
        if self._ptr is None:
            raise ValueError(f"records database {self.path} is closed")
        return self._ptr

    @property
    def last_error(self) -> str:
        return text(lib().rlt_db_last_error(self._h()))

    def count(self, spec: Optional[str] = None) -> int:
        keep: list[Any] = []
        n = ffi.new("int64_t *")
        d = new_diag()
        check(lib().rlt_db_count(self._h(), cstr(spec, keep), n, d), d)
        return int(n[0])

    def best(self, spec: str, target: Optional[str] = None) -> Optional[Record]:
        """The fastest OK record of a spec (on one target key, or any)."""
        keep: list[Any] = []
        r = ffi.new("rlt_record *")
        found = ffi.new("bool *")
        d = new_diag()
        check(lib().rlt_db_best(self._h(), spec.encode(), cstr(target, keep), r, found, d), d)
        return Record._from_c(r) if found[0] else None

    def lookup(self, spec: str, target: str, config: str) -> Optional[Record]:
        r = ffi.new("rlt_record *")
        found = ffi.new("bool *")
        d = new_diag()
        check(lib().rlt_db_lookup(self._h(), spec.encode(), target.encode(), config.encode(), r, found, d), d)
        return Record._from_c(r) if found[0] else None

    def history(self, spec: Optional[str] = None, target: Optional[str] = None) -> list[Record]:
        """Every record of a spec (None: all) on a target (None: all),
        oldest first."""
        records: list[Record] = []
        failures: list[BaseException] = []

        def collect(rec: Any, ctx: Any) -> bool:
            records.append(Record._from_c(rec))
            return True

        def on_error(exc_type: Any, exc: BaseException, tb: Any) -> bool:
            failures.append(exc)
            return False  # stops the walk

        callback = ffi.callback("rlt_db_record_fn", collect, error=False, onerror=on_error)
        keep: list[Any] = []
        d = new_diag()
        check(lib().rlt_db_history(self._h(), cstr(spec, keep), cstr(target, keep), callback, ffi.NULL, d), d)
        if failures:
            raise failures[0]
        return records

    def __iter__(self) -> Iterator[Record]:
        return iter(self.history())

    def append(self, records: list[Record]) -> None:
        """Appends records in one transaction (ids are ignored)."""
        if not records:
            return
        arr = ffi.new("rlt_record[]", len(records))
        for i, rec in enumerate(records):
            ffi.memmove(ffi.addressof(arr, i), rec._c(), ffi.sizeof("rlt_record"))
        d = new_diag()
        check(lib().rlt_db_append(self._h(), len(records), arr, d), d)

    def export_jsonl(self, path: str | os.PathLike[str], spec: Optional[str] = None) -> None:
        """Writes the records (all, or one spec's) as JSON lines to path."""
        keep: list[Any] = []
        f = libc().fopen(cstr(path, keep), b"w")
        if f == ffi.NULL:
            raise RltuneIOError(f"{os.fspath(path)}: cannot open for writing", status="IO_ERROR", code=4)
        d = new_diag()
        try:
            status = lib().rlt_db_export_jsonl(self._h(), cstr(spec, keep), f, d)
        finally:
            closed = libc().fclose(f)
        check(status, d)
        if closed != 0:
            raise RltuneIOError(f"{os.fspath(path)}: write failed", status="IO_ERROR", code=4)

    def import_jsonl(self, path: str | os.PathLike[str]) -> tuple[int, int]:
        """Appends the records of a JSON-lines file not already present;
        returns (added, skipped)."""
        keep: list[Any] = []
        f = libc().fopen(cstr(path, keep), b"r")
        if f == ffi.NULL:
            raise RltuneIOError(f"{os.fspath(path)}: cannot open for reading", status="IO_ERROR", code=4)
        added, skipped = ffi.new("int *"), ffi.new("int *")
        d = new_diag()
        try:
            status = lib().rlt_db_import_jsonl(self._h(), f, cstr(path, keep), added, skipped, d)
        finally:
            libc().fclose(f)
        check(status, d)
        return int(added[0]), int(skipped[0])
