"""tests/models/test_dnnl_net.py - bench_dnnl_net (bench/networks/dnnl_net.c),
the network as a chain of oneDNN primitives that bench.py --onednn times: on
small_cnn against ONNX Runtime's output; on a small model made here that
takes the paths small_cnn and ResNet do not (a standalone Relu, a sum into a
copy because the operand is read later, a binary Add with a Clip fused, a
grouped Conv, AveragePool, a ceil_mode MaxPool, a Flatten read by two Gemms
with alpha, beta and transB 0, one of them summed into the other); and a
model with an op it does not build, refused with the node named.

    .venv/bin/python -m pytest tests/models/test_dnnl_net.py -q

DNNL_NET_BIN names the binary (default build/bench_dnnl_net under the
repository root, built when oneDNN is found). When DNNL_NET_BIN is not set
and the binary does not exist, the tests are skipped; when it is set, it
must exist. Under a second in all.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[2]
NETWORKS = ROOT / "bench" / "networks"
MAKE = NETWORKS / "make_models.py"
BASELINE = NETWORKS / "ort_baseline.py"


def dnnl_net_bin() -> Path:
    env = os.environ.get("DNNL_NET_BIN")
    if env:
        path = Path(env)
        assert path.is_file(), f"DNNL_NET_BIN={env} does not exist"
        return path
    path = ROOT / "build" / "bench_dnnl_net"
    if not path.is_file():
        pytest.skip("no build/bench_dnnl_net (oneDNN not found at build time; set DNNL_NET_BIN)")
    return path


def reference(model: Path, tmp: Path, seed: int) -> tuple[Path, Path]:
    """ONNX Runtime's input and output for the model (ort_baseline.py)."""
    x, y = tmp / f"{model.stem}.in.npy", tmp / f"{model.stem}.out.npy"
    subprocess.run([sys.executable, str(BASELINE), str(model), "--seed", str(seed), "--write-input", str(x),
                    "--write-output", str(y), "--threads", "1", "--repeat", "1", "--warmup", "0"],
                   check=True, capture_output=True, text=True)
    return x, y


def run_chain(exe: Path, model: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe), str(model), *args], capture_output=True, text=True, timeout=120)


def test_dnnl_net_small_cnn_matches_onnxruntime(tmp_path: Path) -> None:
    """small_cnn (Conv+BN+Relu, a residual block, MaxPool, depthwise Conv +
    ReLU6, GlobalAveragePool, Flatten, Gemm) as oneDNN primitives gives ONNX
    Runtime's output within 1e-4 of its largest value, and the JSON line
    has what bench.py reads."""
    exe = dnnl_net_bin()
    subprocess.run([sys.executable, str(MAKE), "--out", str(tmp_path), "--only", "small_cnn"],
                   check=True, capture_output=True, text=True)
    model = tmp_path / "small_cnn.onnx"
    x, y = reference(model, tmp_path, 5)
    r = run_chain(exe, model, "--input", str(x), "--check", str(y), "--repeat", "3", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout.strip().splitlines()[-1])
    assert report["model"] == str(model) and report["threads"] == 1 and report["runs"] == 3
    assert 0 < report["min_ms"] <= report["median_ms"]
    assert report["max_rel_err"] <= 1e-4
    # the BatchNormalizations folded, the Relus, the Clip and the residual
    # Add fused: 6 Convs / Gemm, 2 pools, no eltwise or binary of their own
    assert report["primitives"] - report["reorders"] == 8
    # two threads give the same answer
    r = run_chain(exe, model, "--input", str(x), "--check", str(y), "--repeat", "2", "--threads", "2", "--json")
    assert r.returncode == 0, r.stderr


def test_dnnl_net_other_paths_match_onnxruntime(tmp_path: Path) -> None:
    """The paths ResNet does not take, on a small model, against ONNX Runtime;
    and a wrong reference fails with exit status 1."""
    exe = dnnl_net_bin()
    rng = np.random.default_rng(7)

    def init(name: str, *shape: int) -> onnx.TensorProto:
        return numpy_helper.from_array(rng.uniform(-0.5, 0.5, size=shape).astype(np.float32), name)

    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu_in"),
        helper.make_node("Conv", ["r", "w1", "b1"], ["c1"], name="conv_g2", group=2, pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("Add", ["c1", "r"], ["a"], name="add_sum"),   # r read again below: a copy
        helper.make_node("Add", ["a", "r"], ["b"], name="add_binary"),
        helper.make_node("Clip", ["b", "lo", "hi"], ["cl"], name="clip"),
        helper.make_node("AveragePool", ["cl"], ["p"], name="avgpool", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                         strides=[1, 1], count_include_pad=0),
        helper.make_node("MaxPool", ["p"], ["m"], name="maxpool_ceil", kernel_shape=[2, 2], strides=[2, 2],
                         ceil_mode=1),
        helper.make_node("Flatten", ["m"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "w2", "c2"], ["g1"], name="gemm_t", transB=1, alpha=0.5, beta=2.0),
        helper.make_node("Gemm", ["f", "w3", "c3"], ["g2"], name="gemm_n"),
        helper.make_node("Add", ["g1", "g2"], ["y"], name="add_out"),
    ]
    inits = [init("w1", 4, 2, 3, 3), init("b1", 4), numpy_helper.from_array(np.float32(0.0), "lo"),
             numpy_helper.from_array(np.float32(1.5), "hi"), init("w2", 10, 64), init("c2", 10),
             init("w3", 64, 10), init("c3", 1, 10)]
    graph = helper.make_graph(nodes, "paths", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 7, 7])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    path = tmp_path / "paths.onnx"
    onnx.save(model, str(path))
    x, y = reference(path, tmp_path, 3)
    r = run_chain(exe, path, "--input", str(x), "--check", str(y), "--repeat", "2", "--verbose")
    assert r.returncode == 0, r.stderr + r.stdout
    for what in ("eltwise relu", "convolution (grouped)", "binary add", "pooling avg", "pooling max",
                 "inner product"):
        assert what in r.stdout, what
    bad = np.load(y)
    bad[0, 0] += 0.05 * np.abs(bad).max()
    np.save(tmp_path / "bad.npy", bad)
    r = run_chain(exe, path, "--input", str(x), "--check", str(tmp_path / "bad.npy"), "--repeat", "1")
    assert r.returncode == 1 and "WRONG ANSWER" in r.stderr, r.stderr


def test_dnnl_net_refuses_an_op_it_does_not_build(tmp_path: Path) -> None:
    """A Softmax: exit status 2, the node's name and op type in the message."""
    exe = dnnl_net_bin()
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Softmax", ["r"], ["y"], name="the_softmax", axis=1)]
    graph = helper.make_graph(nodes, "soft", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])])
    path = tmp_path / "soft.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), str(path))
    r = run_chain(exe, path, "--repeat", "1")
    assert r.returncode == 2
    assert "'the_softmax' (Softmax" in r.stderr and "no primitive for Softmax" in r.stderr, r.stderr
