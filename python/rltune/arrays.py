"""rltune's n-dimensional arrays and NumPy's .npy files (rltune/npy.h),
exchanged with numpy.

An rlt_array holds float32, int64, int32 or bool elements, C order, up to
8 dims. Going in (`Array.from_numpy`, a network's inputs, `save_npy`), a
numpy array of one of those dtypes is taken as it is, made C-contiguous
(and native-endian) first when it is not; any other dtype is refused
(InvalidArgumentError naming the conversion), never silently converted.
Coming out, `Array.numpy()` copies by default; `Array.numpy(copy=False)`
is a zero-copy view of the C array that keeps its memory alive for as
long as the view (or any view of it) lives, even past `Array.close()`.
"""

from __future__ import annotations

import os
import weakref
from typing import Any, Optional, Sequence

import numpy as np

from ._lib import Handle, check, ffi, lib, new_diag
from .errors import InvalidArgumentError

#: The element types by rlt_elem value, as rltune names them, and their numpy dtypes.
ELEM_NAMES = ("f32", "i64", "i32", "bool")
ELEM_DTYPES = (np.dtype(np.float32), np.dtype(np.int64), np.dtype(np.int32), np.dtype(np.bool_))
#: The most dims an array has (RLT_ARRAY_MAX_RANK).
MAX_RANK = 8

_ELEM_BY_KIND = {("f", 4): 0, ("i", 8): 1, ("i", 4): 2, ("b", 1): 3}


def elem_of_dtype(dtype: Any) -> int:
    """The rlt_elem of a numpy dtype (float32, int64, int32, bool, of
    either byte order); InvalidArgumentError for any other."""
    dt = np.dtype(dtype)
    elem = _ELEM_BY_KIND.get((dt.kind, dt.itemsize))
    if elem is None:
        raise InvalidArgumentError(
            f"{dt} arrays are not rltune arrays: rltune takes float32, int64, int32 and bool "
            f"(convert with .astype(np.float32) or the like)"
        )
    return elem


def dtype_of_elem(elem: int) -> np.dtype:
    """The numpy dtype of an rlt_elem value."""
    if not 0 <= int(elem) < len(ELEM_DTYPES):
        raise InvalidArgumentError(f"unknown rlt_elem {int(elem)}")
    return ELEM_DTYPES[int(elem)]


def _prepared(x: Any) -> tuple[np.ndarray, int]:
    """x as a C-contiguous, native-endian numpy array of an rltune dtype,
    with its rlt_elem (no copy when it already is one)."""
    a = np.asarray(x)
    elem = elem_of_dtype(a.dtype)
    if a.ndim > MAX_RANK:
        raise InvalidArgumentError(f"an array of rank {a.ndim}: rltune's arrays have at most {MAX_RANK} dims")
    # not ascontiguousarray: it makes a 0-d array 1-d
    return np.asarray(a, dtype=ELEM_DTYPES[elem], order="C"), elem


def borrowed(x: Any, keep: list[Any]) -> Any:
    """An `rlt_array *` of the caller's own pointing at x's data (zero
    copy; a contiguous copy first when x is not one), for a call that
    borrows its inputs. `keep` keeps the data and the struct alive: it
    must outlive the call."""
    a, elem = _prepared(x)
    c = ffi.new("rlt_array *")
    c.elem = elem
    c.rank = a.ndim
    for d, n in enumerate(a.shape):
        c.dims[d] = n
    # from_buffer needs a buffer with at least one byte of room to point
    # at; an empty array gets a one-byte dummy (its data is never read).
    buf = ffi.from_buffer(a) if a.nbytes > 0 else ffi.new("char[1]")
    c.data = buf
    keep.extend((a, buf, c))
    return c


class _View:
    """The owner of a zero-copy numpy view of an rlt_array: holds the
    C array's cdata (whose destructor frees it) for as long as the view
    and its views live."""

    def __init__(self, ptr: Any, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self._ptr = ptr
        data = int(ffi.cast("uintptr_t", ptr.data))
        self.__array_interface__ = {
            "shape": shape,
            "typestr": dtype.str,
            "data": (data, False),
            "strides": None,
            "version": 3,
        }


def _shape(ptr: Any) -> tuple[int, ...]:
    return tuple(int(ptr.dims[d]) for d in range(ptr.rank))


def _to_numpy(ptr: Any, copy: bool, views: Optional[weakref.WeakSet[_View]] = None) -> np.ndarray:
    """The data of an `rlt_array *` (an owning cdata when copy is False)."""
    shape, dtype = _shape(ptr), dtype_of_elem(ptr.elem)
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if n == 0:
        return np.zeros(shape, dtype)
    if copy:
        out = np.empty(shape, dtype)
        ffi.memmove(ffi.from_buffer(out), ptr.data, out.nbytes)
        return out
    view = _View(ptr, shape, dtype)
    if views is not None:
        views.add(view)
    return np.asarray(view)


def _adopt(ptr: Any) -> Any:
    """An `rlt_array *` rltune handed out, made owning (freed with
    rlt_array_destroy when garbage-collected)."""
    return ffi.gc(ptr, lib().rlt_array_destroy)


class Array(Handle):
    """An rlt_array made by rltune (rlt_array_create, rlt_npy_load), owned
    here. `.numpy()` copies its data out; `.numpy(copy=False)` is a view
    that keeps the memory alive on its own (close() then only drops this
    handle's reference), so views never dangle.

        a = Array.from_numpy(np.arange(6, dtype=np.int64).reshape(2, 3))
        a.save("x.npy")                 # what np.save writes, byte for byte
        b = Array.load("x.npy").numpy()
    """

    def __init__(self, ptr: Any) -> None:
        """Takes ownership of an `rlt_array *` from rltune (use the
        class methods to make one)."""
        self._ptr: Any = _adopt(ptr)
        self._views: weakref.WeakSet[_View] = weakref.WeakSet()

    @classmethod
    def zeros(cls, dtype: Any, shape: Sequence[int]) -> "Array":
        """A new array of zeros (rlt_array_create); dtype a numpy dtype of
        the four."""
        elem = elem_of_dtype(dtype)
        dims = [int(n) for n in shape]
        out = ffi.new("rlt_array **")
        d = new_diag()
        c_dims = ffi.new("int64_t[]", dims) if dims else ffi.NULL
        check(lib().rlt_array_create(elem, len(dims), c_dims, out, d), d)
        return cls(out[0])

    @classmethod
    def from_numpy(cls, x: Any) -> "Array":
        """A new rlt_array holding a copy of x (any array-like of float32,
        int64, int32 or bool; C order whatever x's strides)."""
        a, _ = _prepared(x)
        arr = cls.zeros(a.dtype, a.shape)
        if a.nbytes:
            ffi.memmove(arr._h().data, ffi.from_buffer(a), a.nbytes)
        return arr

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "Array":
        """Reads a .npy file (rlt_npy_load: float32, int64, int32, bool;
        versions 1.0 to 3.0). Errors carry rltune's message, which starts
        with the path."""
        out = ffi.new("rlt_array **")
        d = new_diag()
        check(lib().rlt_npy_load(os.fsencode(path), out, d), d)
        return cls(out[0])

    def _h(self) -> Any:
        if self._ptr is None:
            raise ValueError("the array is closed")
        return self._ptr

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes the array as np.save would (rlt_npy_save; atomically)."""
        d = new_diag()
        check(lib().rlt_npy_save(os.fsencode(path), self._h(), d), d)

    @property
    def elem(self) -> str:
        """"f32", "i64", "i32" or "bool"."""
        return ELEM_NAMES[int(self._h().elem)]

    @property
    def dtype(self) -> np.dtype:
        return dtype_of_elem(self._h().elem)

    @property
    def shape(self) -> tuple[int, ...]:
        return _shape(self._h())

    @property
    def size(self) -> int:
        """The number of elements (rlt_array_n_elems)."""
        return int(lib().rlt_array_n_elems(self._h()))

    def numpy(self, copy: bool = True) -> np.ndarray:
        """The data as a numpy array: a copy, or (copy=False) a writable
        zero-copy view sharing the C array's memory."""
        return _to_numpy(self._h(), copy, self._views)

    def __array__(self, dtype: Any = None, copy: Optional[bool] = None) -> np.ndarray:
        a = self.numpy(copy=True)
        return a if dtype is None else a.astype(dtype)

    def close(self) -> None:
        """Frees the array now, unless a view from numpy(copy=False) is
        still alive: then the memory goes with the last view."""
        if self._ptr is not None and len(self._views) > 0:
            self._ptr = None
            return
        super().close()

    def __repr__(self) -> str:
        if self._ptr is None:
            return "Array(closed)"
        return f"Array({self.elem}, shape={self.shape})"


def load_npy(path: str | os.PathLike[str]) -> np.ndarray:
    """A .npy file read by rltune (rlt_npy_load) as a numpy array."""
    arr = Array.load(path)
    try:
        return arr.numpy(copy=True)
    finally:
        arr.close()


def save_npy(path: str | os.PathLike[str], x: Any) -> None:
    """Writes x (float32, int64, int32 or bool) with rltune's writer
    (rlt_npy_save), with no copy of a C-contiguous array: the file is what
    np.save would write."""
    keep: list[Any] = []
    c = borrowed(x, keep)
    d = new_diag()
    check(lib().rlt_npy_save(os.fsencode(path), c, d), d)
