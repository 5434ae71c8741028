"""Operators: a built-in op from its spec ("matmul:M=64,N=64,K=64") or a
user's expression with its extents (rltune/op.h)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._lib import check, ffi, lib, new_diag, take_text, text


@dataclass(frozen=True)
class OpParam:
    """One parameter of a built-in op."""

    key: str
    help: str
    default_value: int
    is_required: bool
    min_value: int
    max_value: int
    is_omitted_at_default: bool = False  # the canonical spec names the key only when it is not the default


@dataclass(frozen=True)
class OpInfo:
    """A built-in op of the library (`rltune ops`)."""

    name: str
    summary: str
    example: str
    params: tuple[OpParam, ...]


class Op:
    """An immutable operator. Make one with Op(spec), Op.parse(spec) or
    Op.from_expr(expr, shape); bad specs raise ValueError subclasses
    (ParseError, InvalidArgumentError) with rltune's message."""

    __slots__ = ("_ptr", "__weakref__")

    def __init__(self, spec: str) -> None:
        L = lib()
        out = ffi.new("rlt_op **")
        diag = new_diag()
        check(L.rlt_op_parse(spec.encode(), out, diag), diag)
        self._ptr = ffi.gc(out[0], L.rlt_op_destroy)

    @classmethod
    def parse(cls, spec: str) -> "Op":
        return cls(spec)

    @classmethod
    def from_expr(cls, expr: str, shape: str) -> "Op":
        """An op from an expression ("C[i,j] += A[i,k] * B[k,j]") and the
        extents of its indices ("i=64,j=64,k=64"); docs/ir.md."""
        L = lib()
        out = ffi.new("rlt_op **")
        diag = new_diag()
        check(L.rlt_op_from_expr(expr.encode(), shape.encode(), out, diag), diag)
        self = cls.__new__(cls)
        self._ptr = ffi.gc(out[0], L.rlt_op_destroy)
        return self

    @property
    def spec(self) -> str:
        """The canonical spec, every key in the library's order."""
        return text(lib().rlt_op_spec(self._ptr))

    @property
    def kind(self) -> str:
        return text(lib().rlt_op_kind(self._ptr))

    @property
    def flops(self) -> float:
        """Floating-point operations of one call."""
        return float(lib().rlt_op_flops(self._ptr))

    def text(self) -> str:
        """The op as statements over its tensors, as `rltune show` prints it."""
        return take_text(lib().rlt_op_text(self._ptr))

    def __repr__(self) -> str:
        return f"Op({self.spec!r})"

    @property
    def _handle(self) -> Any:
        return self._ptr


def op_library() -> list[OpInfo]:
    """The built-in ops, in the library's order."""
    n = ffi.new("int *")
    infos = lib().rlt_op_library(n)
    result = []
    for i in range(n[0]):
        info = infos[i]
        params = tuple(
            OpParam(
                key=text(p.key),
                help=text(p.help),
                default_value=int(p.default_value),
                is_required=bool(p.is_required),
                min_value=int(p.min_value),
                max_value=int(p.max_value),
                is_omitted_at_default=bool(p.is_omitted_at_default),
            )
            for p in (info.params[j] for j in range(info.n_params))
        )
        result.append(OpInfo(text(info.name), text(info.summary), text(info.example), params))
    return result
