"""The Python examples (examples/python/) run, briefly: REINFORCE in numpy
learns on LoopNest-v0 replaying the shipped state dataset (a seeded run is
exact: the replay is noise-free), and the random agent measures live."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "python"


def load(name: str) -> ModuleType:
    path = EXAMPLES / f"{name}.py"
    if not path.is_file():
        pytest.skip(f"{path} is not here (an installed package without the repository)")
    spec = importlib.util.spec_from_file_location(f"rltune_example_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_reinforce_learns_on_the_replayed_dataset(capsys: pytest.CaptureFixture[str]) -> None:
    example = load("reinforce_numpy")
    out = example.main(["--iterations", "20", "--seed", "0", "--quiet"])
    returns = np.array(out["returns"])
    first, last = returns[:5].mean(), returns[-5:].mean()
    assert last > first + 0.1, f"no learning: first {first:+.4f}, last {last:+.4f}"
    assert last > out["random_return"] + 0.1, f"last {last:+.4f}, random {out['random_return']:+.4f}"
    assert out["greedy_return"] > out["random_return"]
    text = capsys.readouterr().out
    assert "random policy: mean return" in text and "iteration  19  mean return" in text
    assert "nothing compiled" in text
    # the same seed, the same run
    again = example.main(["--iterations", "20", "--seed", "0", "--quiet"])
    assert again["returns"] == out["returns"]


def test_random_agent_runs(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    example = load("random_agent")
    monkeypatch.setattr(sys, "argv", ["random_agent.py", "--op", "matmul:M=8,N=8,K=8", "--episodes", "1",
                                      "--max-steps", "3", "--cflags=-O1"])
    example.main()
    text = capsys.readouterr().out
    assert "episode 0: start" in text and "# rltune schedule v1" in text
