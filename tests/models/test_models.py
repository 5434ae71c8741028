"""tests/models/test_models.py - the benchmark networks' generator
(bench/networks/make_models.py) and ONNX Runtime baseline
(bench/networks/ort_baseline.py) on the tiny CI model, small_cnn, and
`rltune tasks --model` on it.

    .venv/bin/python -m pytest tests/models -q

RLTUNE_BIN names the rltune binary (default build/rltune under the
repository root). When RLTUNE_BIN is not set and build/rltune does not
exist, the rltune test is skipped; when RLTUNE_BIN is set, it must exist.
A few seconds in all.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

ROOT = Path(__file__).resolve().parents[2]
NETWORKS = ROOT / "bench" / "networks"
MAKE = NETWORKS / "make_models.py"
BASELINE = NETWORKS / "ort_baseline.py"

# small_cnn's tasks after the BatchNormalizations fold into the Convs: the
# op, the keys its spec must hold (others, such as an `epilogue=` key or the
# dense op's own bias flag, may be added as the op library grows), the
# epilogue and the weight.
CONV = dict(N=1, stride=1, dilation=1)
EXPECTED_TASKS = sorted([
    ("conv2d", dict(CONV, C=3, H=32, W=32, K=16, R=3, S=3, pad=1), "bias,relu", 1),
    ("conv2d", dict(CONV, C=16, H=32, W=32, K=16, R=3, S=3, pad=1), "bias,relu", 1),
    ("conv2d", dict(CONV, C=16, H=32, W=32, K=16, R=3, S=3, pad=1), "bias,add,relu", 1),
    ("depthwise_conv2d", dict(CONV, C=16, H=16, W=16, R=3, S=3, pad=1), "bias,relu6", 1),
    ("conv2d", dict(CONV, C=16, H=16, W=16, K=32, R=1, S=1, pad=0), "bias,relu", 1),
    ("dense", dict(M=1, N=10, K=32), "bias", 1),
], key=repr)
EXPECTED_OTHER = sorted([("MaxPool", 1, ""), ("GlobalAveragePool", 1, ""), ("Flatten", 1, "")])


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """"conv2d:N=1,C=3,..." -> ("conv2d", {"N": "1", "C": "3", ...})."""
    op, _, rest = spec.partition(":")
    keys = dict(kv.split("=", 1) for kv in rest.split(",") if kv)
    return op, keys


def make(out: Path, *args: str) -> Path:
    subprocess.run([sys.executable, str(MAKE), "--out", str(out), "--only", "small_cnn", *args],
                   check=True, capture_output=True, text=True)
    path = out / "small_cnn.onnx"
    assert path.is_file()
    return path


def load_make_models():
    spec = importlib.util.spec_from_file_location("make_models", MAKE)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    dont_write = sys.dont_write_bytecode
    sys.dont_write_bytecode = True  # no bench/networks/__pycache__
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.dont_write_bytecode = dont_write
    return mod


@pytest.fixture(scope="module")
def small_cnn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make(tmp_path_factory.mktemp("models"))


def rltune_bin() -> Path:
    env = os.environ.get("RLTUNE_BIN")
    if env:
        path = Path(env)
        assert path.is_file(), f"RLTUNE_BIN={env} does not exist"
        return path
    path = ROOT / "build" / "rltune"
    if not path.is_file():
        pytest.skip("no build/rltune (set RLTUNE_BIN)")
    return path


def test_small_cnn_is_valid_onnx(small_cnn: Path) -> None:
    model = onnx.load(str(small_cnn))
    onnx.checker.check_model(model, full_check=True)
    assert model.opset_import[0].version == 13
    ops = [n.op_type for n in model.graph.node]
    for op in ("Conv", "BatchNormalization", "Relu", "Add", "MaxPool", "Clip",
               "GlobalAveragePool", "Flatten", "Gemm"):
        assert op in ops, op
    assert any(n.op_type == "Conv" and any(a.name == "group" and a.i == 16 for a in n.attribute)
               for n in model.graph.node), "no depthwise Conv"
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    out = inferred.graph.output[0].type.tensor_type.shape
    assert [d.dim_value for d in out.dim] == [1, 10]


def test_generator_is_seeded(small_cnn: Path, tmp_path: Path) -> None:
    again = make(tmp_path / "same")
    assert again.read_bytes() == small_cnn.read_bytes()
    other = make(tmp_path / "other", "--seed", "1")
    assert other.read_bytes() != small_cnn.read_bytes()


def test_ort_baseline(small_cnn: Path, tmp_path: Path) -> None:
    x_path, y_path = tmp_path / "x.npy", tmp_path / "y.npy"
    r = subprocess.run([sys.executable, str(BASELINE), str(small_cnn), "--seed", "3",
                        "--write-input", str(x_path), "--write-output", str(y_path),
                        "--threads", "1,2", "--repeat", "3", "--warmup", "1", "--json"],
                       check=True, capture_output=True, text=True)
    report = json.loads(r.stdout)
    assert report["input_shape"] == [1, 3, 32, 32]
    assert report["output_shape"] == [1, 10]
    assert set(report["threads"]) == {"1", "2"}
    for t in report["threads"].values():
        assert 0 < t["min_ms"] <= t["median_ms"]
        assert t["max_abs_diff"] < 1e-4
    x = np.load(x_path)
    y = np.load(y_path)
    assert x.dtype == np.float32 and x.shape == (1, 3, 32, 32)
    assert x.min() >= -1.0 and x.max() < 1.0
    assert np.array_equal(x, np.random.default_rng(3).uniform(-1, 1, (1, 3, 32, 32))
                          .astype(np.float32))
    # Activations stay O(1): the logits are finite, neither vanishing nor exploding.
    assert y.shape == (1, 10) and np.isfinite(y).all()
    assert 0.05 < float(np.abs(y).max()) < 100

    # The same input through --input gives the same output.
    y2_path = tmp_path / "y2.npy"
    subprocess.run([sys.executable, str(BASELINE), str(small_cnn), "--input", str(x_path),
                    "--write-output", str(y2_path), "--repeat", "1", "--warmup", "0"],
                   check=True, capture_output=True, text=True)
    assert np.array_equal(np.load(y2_path), y)


def test_rltune_tasks(small_cnn: Path) -> None:
    exe = rltune_bin()
    r = subprocess.run([str(exe), "tasks", "--model", str(small_cnn), "--json"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["opset"] == 13 and d["n_inputs"] == 1 and d["n_outputs"] == 1
    assert len(d["tasks"]) == len(EXPECTED_TASKS)
    unmatched = list(EXPECTED_TASKS)
    for t in d["tasks"]:
        op, keys = parse_spec(t["spec"])
        match = [e for e in unmatched
                 if e[0] == op and e[2] == t["epilogue"] and e[3] == t["weight"]
                 and all(keys.get(k) == str(v) for k, v in e[1].items())]
        assert match, f"unexpected task {t['spec']} [{t['epilogue']}] x{t['weight']}"
        unmatched.remove(match[0])
    assert d["n_tasks"] == len(EXPECTED_TASKS)
    assert d["n_kernels"] == sum(e[3] for e in EXPECTED_TASKS)
    other = sorted((o["op_type"], o["count"], o["reason"]) for o in d["other_kernels"])
    assert other == EXPECTED_OTHER
    # The residual: the block's second Conv (its BatchNormalization folded)
    # takes the Add and the Relu after it.
    residual = [t for t in d["tasks"] if t["epilogue"] == "bias,add,relu"]
    assert residual[0]["nodes"] == ["/block/conv2/Conv", "/block/Add", "/block/relu_1/Relu"]
    # rltune's FLOPs: 2 x the kernels' multiply-adds, as the generator counts
    # them, plus at most the epilogues' element-wise operations.
    flops = load_make_models().summary(onnx.load(str(small_cnn)))["flops"]
    assert flops <= d["total_flops"] <= flops * 1.05


def test_rltune_run_matches_onnxruntime(small_cnn: Path, tmp_path: Path) -> None:
    """`rltune run` compiles small_cnn from seed schedules, checks it against
    its own reference, and its output equals ONNX Runtime's on the same input
    within 1e-4 of the largest output (issue 27's bar)."""
    exe = rltune_bin()
    x_path, y_ort, y_rlt = tmp_path / "x.npy", tmp_path / "y_ort.npy", tmp_path / "y_rlt.npy"
    subprocess.run([sys.executable, str(BASELINE), str(small_cnn), "--seed", "5",
                    "--write-input", str(x_path), "--write-output", str(y_ort),
                    "--threads", "1", "--repeat", "1", "--warmup", "0"],
                   check=True, capture_output=True, text=True)
    r = subprocess.run([str(exe), "run", "--model", str(small_cnn), "--input", str(x_path),
                        "--output", str(y_rlt), "--repeat", "2", "--json"],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["correct"] is True
    assert report["tasks_untuned"] == len(EXPECTED_TASKS) and report["tasks_tuned"] == 0
    assert report["latency_ms"]["min"] > 0
    ours, theirs = np.load(y_rlt), np.load(y_ort)
    assert ours.shape == theirs.shape == (1, 10) and ours.dtype == np.float32
    assert np.abs(ours - theirs).max() <= 1e-4 * np.abs(theirs).max()
