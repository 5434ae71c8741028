"""Loading librltune.so with cffi in ABI mode (dlopen: no compiled
extension), and turning rltune's statuses into Python exceptions.

Where the library is looked for, first found wins:
  1. $RLTUNE_LIB, a path to the shared library (an error if it is missing);
  2. build/librltune.so of an rltune source tree, searched upward from this
     package's directory and from the current directory (so an install
     from the repository, editable or not, finds the in-tree build);
  3. ctypes.util.find_library("rltune"): an installed librltune.
The library is loaded on first use, so `import rltune` works without it.
"""

from __future__ import annotations

import ctypes.util
import os
from pathlib import Path
from typing import Any, NoReturn, Optional, TypeVar

import cffi

from . import _cdef
from .errors import LibraryNotFoundError, error_for_status

ffi = cffi.FFI()
ffi.cdef(_cdef.TYPES)
ffi.cdef(_cdef.FUNCTIONS)
ffi.cdef(_cdef.LIBC)

#: The header version the declarations were copied from.
HEADER_VERSION = "0.1.0"

_lib: Optional[Any] = None
_libc: Optional[Any] = None
_lib_path: Optional[str] = None


def _search_upward(start: Path) -> Optional[Path]:
    for d in (start, *start.parents):
        candidate = d / "build" / "librltune.so"
        if candidate.is_file():
            return candidate
    return None


def find_library() -> str:
    """The path (or soname) of the librltune that would be loaded. Raises
    LibraryNotFoundError naming every place looked at."""
    env = os.environ.get("RLTUNE_LIB")
    if env:
        if not os.path.isfile(env):
            raise LibraryNotFoundError(f"$RLTUNE_LIB is {env!r}, which is not a file")
        return env
    looked = []
    for start in (Path(__file__).resolve().parent, Path.cwd().resolve()):
        found = _search_upward(start)
        if found is not None:
            return str(found)
        looked.append(f"build/librltune.so above {start}")
    name = ctypes.util.find_library("rltune")
    if name:
        return name
    looked.append('ctypes.util.find_library("rltune")')
    raise LibraryNotFoundError(
        "librltune.so not found; looked for " + ", ".join(looked)
        + ". Build rltune (scripts/build.sh) or set RLTUNE_LIB to the library's path"
    )


def lib() -> Any:
    """The loaded library (loaded on the first call)."""
    global _lib, _lib_path
    if _lib is None:
        path = find_library()
        try:
            loaded = ffi.dlopen(path)
        except OSError as e:
            raise LibraryNotFoundError(f"cannot load librltune from {path!r}: {e}") from e
        version = ffi.string(loaded.rlt_version()).decode()
        if version.split(".")[:1] != HEADER_VERSION.split(".")[:1]:
            raise LibraryNotFoundError(
                f"librltune at {path!r} is version {version}; this package binds version {HEADER_VERSION}"
            )
        _lib, _lib_path = loaded, path
    return _lib


def library_path() -> str:
    """Where the loaded library came from."""
    lib()
    assert _lib_path is not None
    return _lib_path


def libc() -> Any:
    """The C library, for fopen/fclose (records import and export)."""
    global _libc
    if _libc is None:
        _libc = ffi.dlopen(None)
    return _libc


def new_diag() -> Any:
    return ffi.new("rlt_diag *")


def status_name(status: int) -> str:
    name: str = ffi.string(lib().rlt_status_str(status)).decode()
    return name


def raise_status(status: int, message: str) -> NoReturn:
    raise error_for_status(status, status_name(status), message)


def check(status: int, diag: Any, context: str = "") -> None:
    """Raises the exception of `status` with the diag's message unless OK."""
    if status == 0:
        return
    message = ffi.string(diag.message).decode(errors="replace") if diag is not None else ""
    if not message:
        message = status_name(status)
    if context:
        message = f"{context}: {message}"
    raise_status(status, message)


def text(ptr: Any) -> str:
    """A borrowed C string as str ("" for NULL)."""
    if ptr == ffi.NULL:
        return ""
    value: str = ffi.string(ptr).decode(errors="replace")
    return value


def take_text(ptr: Any) -> str:
    """A C string rltune hands out (freed here with rlt_free) as str."""
    if ptr == ffi.NULL:
        raise error_for_status(5, "OUT_OF_MEMORY", "rltune returned no string (out of memory)")
    try:
        value: str = ffi.string(ptr).decode(errors="replace")
        return value
    finally:
        lib().rlt_free(ptr)


def cstr(value: Optional[str | os.PathLike[str]], keep: list[Any]) -> Any:
    """A char* for `value` (NULL for None), kept alive by `keep`."""
    if value is None:
        return ffi.NULL
    buf = ffi.new("char[]", os.fsencode(value))
    keep.append(buf)
    return buf


_H = TypeVar("_H", bound="Handle")


class Handle:
    """A wrapper owning one C handle in `_ptr` (a cdata whose destructor,
    set with ffi.gc, frees it): close() frees it now, and a with block
    closes it at the end."""

    _ptr: Any

    def close(self) -> None:
        if self._ptr is not None:
            ffi.release(self._ptr)
            self._ptr = None

    def __enter__(self: _H) -> _H:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

