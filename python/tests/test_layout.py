"""The cffi declarations (rltune/_cdef.py) against the real headers: a C
program compiled with include/rltune.h prints the size and every field
offset of each declared struct and the value of every constant, which must
equal what cffi computed (rltune/space.h is included beside rltune.h, which
need not include it yet); and every declared function, redeclared after the
headers, must compile (a prototype that drifted from its header is a
conflicting declaration)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rltune import _cdef
from rltune._lib import ffi, lib
from rltune.env import ACTION_NAMES, ACTION_NONE, ACTION_RESET, N_ACTIONS, OBS_LEN, OBS_VERSION


def _include_dir() -> Path:
    for d in Path(__file__).resolve().parents:
        if (d / "include" / "rltune.h").is_file():
            return d / "include"
    pytest.skip("rltune's headers (include/rltune.h) are not above this test")


def _compiler() -> str:
    for cc in ("cc", "gcc", "clang"):
        path = shutil.which(cc)
        if path:
            return path
    pytest.skip("no C compiler")


def _constants() -> dict[str, int]:
    values: dict[str, int] = {}
    for enum in ("rlt_status", "rlt_session_option", "rlt_env_action", "rlt_env_autoreset", "rlt_env_masked_action", "rlt_elem", "rlt_net_origin", "rlt_graph_reward"):
        for value, name in ffi.typeof(enum).elements.items():
            values[name] = value
    for name, value in re.findall(r"#define (\w+) (-?\d+)", _cdef.TYPES):
        values[name] = int(value)
    return values


def _expected() -> list[str]:
    lines = []
    for struct in _cdef.STRUCTS:
        t = ffi.typeof(struct)
        lines.append(f"sizeof {struct} {ffi.sizeof(t)}")
        lines.append(f"alignof {struct} {ffi.alignof(t)}")
        for name, field in t.fields:
            lines.append(f"offsetof {struct}.{name} {field.offset}")
            lines.append(f"sizeof {struct}.{name} {ffi.sizeof(field.type)}")
    for name, value in _constants().items():
        lines.append(f"const {name} {value}")
    return lines


def _program() -> str:
    out = ["#include <rltune.h>", "#include <rltune/space.h>", "#include <stdalign.h>", "#include <stdio.h>", "int main(void) {"]
    for struct in _cdef.STRUCTS:
        t = ffi.typeof(struct)
        out.append(f'    printf("sizeof {struct} %zu\\n", sizeof({struct}));')
        out.append(f'    printf("alignof {struct} %zu\\n", alignof({struct}));')
        for name, _ in t.fields:
            out.append(f'    printf("offsetof {struct}.{name} %zu\\n", offsetof({struct}, {name}));')
            out.append(f'    printf("sizeof {struct}.{name} %zu\\n", sizeof((({struct} *)0)->{name}));')
    for name in _constants():
        out.append(f'    printf("const {name} %lld\\n", (long long)({name}));')
    out.append("    return 0;\n}")
    return "\n".join(out) + "\n"


def test_struct_layouts_and_constants_match_the_headers(tmp_path: Path) -> None:
    include, cc = _include_dir(), _compiler()
    src = tmp_path / "layout.c"
    exe = tmp_path / "layout"
    src.write_text(_program())
    subprocess.run([cc, "-std=c11", "-I", str(include), "-o", str(exe), str(src)], check=True)
    got = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.splitlines()
    expected = _expected()
    mismatches = [f"C: {g!r}, cffi: {e!r}" for g, e in zip(got, expected) if g != e]
    assert len(got) == len(expected)
    assert not mismatches, "\n".join(mismatches)


def test_every_declared_function_matches_its_header(tmp_path: Path) -> None:
    include, cc = _include_dir(), _compiler()
    src = tmp_path / "decls.c"
    src.write_text("#include <rltune.h>\n#include <rltune/space.h>\n" + _cdef.FUNCTIONS)
    r = subprocess.run(
        [cc, "-std=c11", "-fsyntax-only", "-Werror", "-I", str(include), str(src)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr


def test_every_declared_function_is_exported() -> None:
    names = re.findall(r"\b(rlt_\w+)\(", _cdef.FUNCTIONS)
    assert len(names) > 90
    missing = [n for n in names if not hasattr(lib(), n)]
    assert not missing


def test_env_constants_match() -> None:
    consts = _constants()
    assert N_ACTIONS == consts["RLT_ENV_N_ACTIONS"]
    assert OBS_LEN == consts["RLT_ENV_OBS_LEN"]
    assert OBS_VERSION == consts["RLT_ENV_OBS_VERSION"]
    assert ACTION_NONE == consts["RLT_ENV_ACTION_NONE"] == lib().RLT_ENV_ACTION_NONE
    assert ACTION_RESET == consts["RLT_ENV_ACTION_RESET"] == lib().RLT_ENV_ACTION_RESET
    assert list(ACTION_NAMES) == [ffi.string(lib().rlt_env_action_name(a)).decode() for a in range(N_ACTIONS)]


def test_array_and_net_constants_match() -> None:
    from rltune import arrays, model

    consts = _constants()
    assert arrays.MAX_RANK == consts["RLT_ARRAY_MAX_RANK"]
    for elem, (name, dtype) in enumerate(zip(arrays.ELEM_NAMES, arrays.ELEM_DTYPES)):
        assert ffi.string(lib().rlt_elem_name(elem)).decode() == name
        assert lib().rlt_elem_size(elem) == dtype.itemsize
    assert consts["RLT_ELEM_BOOL"] == len(arrays.ELEM_NAMES) - 1
    origins = ffi.typeof("rlt_net_origin").elements
    assert [origins[i] for i in range(len(model.ORIGINS))] == [
        "RLT_NET_FROM_" + o.upper() for o in model.ORIGINS
    ]
