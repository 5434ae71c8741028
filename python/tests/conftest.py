"""Shared fixtures: a private kernel cache for the whole run, and the fast
build and run options (-O1, one short sample) every measuring test uses."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest

import rltune

TINY = "matmul:M=8,N=8,K=8"


@pytest.fixture(scope="session", autouse=True)
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """RLTUNE_CACHE_DIR in a temporary directory: no test reads or fills a
    user's cache."""
    path = tmp_path_factory.mktemp("rltune-cache")
    old = os.environ.get("RLTUNE_CACHE_DIR")
    os.environ["RLTUNE_CACHE_DIR"] = str(path)
    yield path
    if old is None:
        del os.environ["RLTUNE_CACHE_DIR"]
    else:
        os.environ["RLTUNE_CACHE_DIR"] = old


@pytest.fixture
def build() -> rltune.BuildOptions:
    return rltune.BuildOptions(cflags="-O1")


@pytest.fixture
def run() -> rltune.RunOptions:
    return rltune.RunOptions(repeat=1, min_repeat_ms=0.5)


@pytest.fixture
def tiny() -> rltune.Op:
    return rltune.Op(TINY)
