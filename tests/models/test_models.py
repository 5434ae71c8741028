"""tests/models/test_models.py - the benchmark networks' generator
(bench/networks/make_models.py) and ONNX Runtime baseline
(bench/networks/ort_baseline.py) on the tiny CI model, small_cnn, and
`rltune tasks --model` on it; the shapes and FLOPs of inception_stack and
vit_block; `rltune graph-opt` on a small model the shipped rules rewrite
(the written ONNX checked in ONNX Runtime), and `rltune rules verify`.

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
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

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
    # a 1x1 stride-1 unpadded convolution's 16 x 16 plane as one row (docs/graph.md, "Tasks")
    ("conv2d", dict(CONV, C=16, H=1, W=256, K=32, R=1, S=1, pad=0), "bias,relu", 1),
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


def test_inception_stack_and_vit_block_shapes() -> None:
    """The two graph-substitution benchmarks build, infer strictly, and have
    the paper's FLOPs: GoogLeNet's inception 3a, 3b, 4a, 4b are 128 + 304 +
    73 + 88 = 593 M multiply-adds (the paper's table, its 5x5 branch); a
    ViT-Base block on 197 tokens 197 x 7.08 M for the projections and MLP
    plus 2 x 12 x 197^2 x 64 for the attention."""
    mm = load_make_models()
    inc = mm.summary(mm.build("inception_stack", 0, 1))
    assert inc["input"] == [1, 192, 28, 28] and inc["output"] == [1, 512, 14, 14]
    assert abs(inc["flops"] / 2 - 593e6) < 1e6
    vit = mm.summary(mm.build("vit_block", 0, 1))
    assert vit["input"] == vit["output"] == [1, 197, 768]
    macs = 197 * (4 * 768 * 768 + 2 * 768 * 3072) + 2 * 12 * 197 * 197 * 64
    assert vit["flops"] == 2 * macs


# ---- rltune graph-opt and rltune rules ---------------------------------------------------


def rewritable_model() -> onnx.ModelProto:
    """A small graph the shipped rules rewrite: two sibling 3x3 Convs
    concatenated, then Relu, Identity and Dropout (output y); sibling
    MatMuls with their bias Adds multiplied (z); a 1x1 Conv followed by a
    per-channel Mul (u), which fold_mul_into_conv folds into the Conv: the
    same kernel with one step less, so greedy always takes it."""
    rng = np.random.default_rng(11)

    def w(name: str, *shape: int) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)

    inits = [w("conv_a.weight", 8, 8, 3, 3), w("conv_a.bias", 8), w("conv_b.weight", 8, 8, 3, 3),
             w("conv_b.bias", 8), w("q.weight", 8, 16), w("q.bias", 16), w("k.weight", 8, 16),
             w("k.bias", 16), w("conv_c.weight", 8, 8, 1, 1), w("conv_c.bias", 8),
             numpy_helper.from_array(rng.uniform(0.5, 1.5, (1, 8, 1, 1)).astype(np.float32), "scale")]
    conv = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])
    nodes = [
        helper.make_node("Conv", ["x", "conv_a.weight", "conv_a.bias"], ["a"], name="/conv_a/Conv", **conv),
        helper.make_node("Conv", ["x", "conv_b.weight", "conv_b.bias"], ["b"], name="/conv_b/Conv", **conv),
        helper.make_node("Concat", ["a", "b"], ["ab"], name="/Concat", axis=1),
        helper.make_node("Relu", ["ab"], ["r"], name="/Relu"),
        helper.make_node("Identity", ["r"], ["i"], name="/Identity"),
        helper.make_node("Dropout", ["i"], ["y"], name="/Dropout"),
        helper.make_node("GlobalAveragePool", ["x"], ["p"], name="/pool/GlobalAveragePool"),
        helper.make_node("Flatten", ["p"], ["f"], name="/Flatten", axis=1),
        helper.make_node("MatMul", ["f", "q.weight"], ["qm"], name="/q/MatMul"),
        helper.make_node("Add", ["qm", "q.bias"], ["qa"], name="/q/Add"),
        helper.make_node("MatMul", ["f", "k.weight"], ["km"], name="/k/MatMul"),
        helper.make_node("Add", ["km", "k.bias"], ["ka"], name="/k/Add"),
        helper.make_node("Mul", ["qa", "ka"], ["z"], name="/Mul"),
        helper.make_node("Conv", ["x", "conv_c.weight", "conv_c.bias"], ["c"], name="/conv_c/Conv",
                         kernel_shape=[1, 1]),
        helper.make_node("Mul", ["c", "scale"], ["u"], name="/scale/Mul"),
    ]
    graph = helper.make_graph(
        nodes, "rewritable", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 16, 16]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 16]),
         helper.make_tensor_value_info("u", TensorProto.FLOAT, [1, 8, 16, 16])],
        initializer=inits)
    model = helper.make_model(graph, producer_name="tests/models/test_models.py",
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def ort_run(path: Path, x: np.ndarray) -> list[np.ndarray]:
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})


def test_rltune_graph_opt_rewrites_and_writes_onnx(tmp_path: Path) -> None:
    """`rltune graph-opt --search greedy --out`: exit 0, its JSON report, a
    non-empty list of rewrites, and the written graph valid ONNX whose
    outputs in ONNX Runtime are the original's within 1e-4 of the largest."""
    exe = rltune_bin()
    src, out = tmp_path / "rewritable.onnx", tmp_path / "opt.onnx"
    onnx.save(rewritable_model(), str(src))
    r = subprocess.run([str(exe), "graph-opt", "--model", str(src), "--search", "greedy", "--out", str(out),
                        "--repeat", "2", "--json"],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["model"] == str(src) and d["search"] == "greedy" and d["out"] == str(out)
    assert d["rules"] >= 20
    assert d["nodes_before"] == 15
    assert d["cost_evals"] >= 2 and d["expanded"] >= 1 and d["candidates"] >= 1 and d["search_s"] >= 0
    assert 0 < d["cost_after_ms"] <= d["cost_before_ms"]
    rules = [s["rule"] for s in d["rewrites"]]
    assert rules, "no rewrite applied"
    assert "fold_mul_into_conv" in rules, rules
    for s in d["rewrites"]:
        assert s["where"] and s["cost_ms"] > 0
    assert d["rewrites"][-1]["cost_ms"] == pytest.approx(d["cost_after_ms"])
    assert d["latency_ms"]["before"] > 0 and d["latency_ms"]["after"] > 0
    assert d["correct"] is True and d["max_error"] >= 0 and d["repeat"] == 2

    model = onnx.load(str(out))
    onnx.checker.check_model(model, full_check=True)
    assert len(model.graph.node) == d["nodes_after"] < d["nodes_before"]
    names = [n.name for n in model.graph.node if n.name]
    assert len(names) == len(set(names)), "two nodes of one name"
    assert not any(n.op_type == "Mul" and "scale" in n.input for n in model.graph.node)
    x = np.random.default_rng(2).uniform(-1, 1, (1, 8, 16, 16)).astype(np.float32)
    ref, got = ort_run(src, x), ort_run(out, x)
    assert [o.name for o in model.graph.output] == ["y", "z", "u"]
    for want, have in zip(ref, got):
        assert have.shape == want.shape and np.isfinite(have).all()
        assert np.abs(have - want).max() <= 1e-4 * np.abs(want).max()


def test_rltune_rules_verify() -> None:
    exe = rltune_bin()
    r = subprocess.run([str(exe), "rules", "verify"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "rules verified" in r.stdout


BAD_RULE = """\
# Wrong: relu(a + b) is not relu(a) + relu(b) (a = 2, b = -1: 1 against 2).
rule relu_splits_add
  src s = Add(a, b)
  src y = Relu(s)
  dst ra = Relu(a)
  dst rb = Relu(b)
  dst z = Add(ra, rb)
  out y -> z
  check a=f32[2,3] b=f32[2,3]
end
"""


def test_rltune_rules_verify_refuses_a_wrong_rule(tmp_path: Path) -> None:
    exe = rltune_bin()
    bad = tmp_path / "bad.rules"
    bad.write_text(BAD_RULE)
    r = subprocess.run([str(exe), "rules", "verify", str(bad)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "relu_splits_add" in r.stderr
    assert "refused" in r.stderr and "differs at element" in r.stderr
