"""Whole networks from Python (rltune/model.h, rltune/npy.h): a small CNN
built here with onnx.helper (Conv + BatchNormalization + Relu, residual
Adds, MaxPool, a 1x1 Conv, a depthwise Conv + Clip(0, 6),
GlobalAveragePool, Flatten, Gemm; seeded weights; opset 13) loaded,
listed, evaluated and compiled against ONNX Runtime, tuned, and compiled
again from the tuning's records; .npy files exchanged with numpy.

Kernels are built with -O0: the tests check results and bookkeeping, not
speed, and -O0 compiles several times faster than -O1."""

from __future__ import annotations

import gc
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rltune
from rltune import Array, BuildOptions, Model, ModelTuning, RunOptions

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

BUILD = BuildOptions(cflags="-O0")
RUN = RunOptions(repeat=1, min_repeat_ms=0.5)
CONV8 = "conv2d:N=1,C=8,H=16,W=16,K=8,R=3,S=3,stride=1,pad=1,dilation=1"


def _small_cnn(path: Path, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    inits: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, value: Any) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value, dtype=np.float32), name))
        return name

    def conv(name: str, x: str, cin: int, cout: int, k: int, pad: int, group: int = 1, bias: bool = True) -> str:
        w = rng.normal(0.0, 1.0 / math.sqrt(cin // group * k * k), (cout, cin // group, k, k))
        ins = [x, const(f"{name}.w", w)] + ([const(f"{name}.b", rng.uniform(-0.1, 0.1, cout))] if bias else [])
        nodes.append(
            helper.make_node(
                "Conv", ins, [f"{name}.y"], name=name, kernel_shape=[k, k], pads=[pad] * 4, strides=[1, 1], group=group
            )
        )
        return f"{name}.y"

    def bn(name: str, x: str, c: int) -> str:
        ins = [x] + [
            const(f"{name}.{what}", rng.uniform(lo, hi, c))
            for what, lo, hi in (("scale", 0.5, 1.5), ("bias", -0.1, 0.1), ("mean", -0.1, 0.1), ("var", 0.5, 1.5))
        ]
        nodes.append(helper.make_node("BatchNormalization", ins, [f"{name}.y"], name=name, epsilon=1e-5))
        return f"{name}.y"

    def op(op_type: str, name: str, ins: list[str], **attrs: Any) -> str:
        nodes.append(helper.make_node(op_type, ins, [f"{name}.y"], name=name, **attrs))
        return f"{name}.y"

    a = op("Relu", "relu1", [bn("bn1", conv("conv1", "x", 3, 8, 3, 1, bias=False), 8)])
    for b in range(2):  # two residual blocks of one shape: tasks of weight 2
        h = op("Relu", f"b{b}.relu1", [bn(f"b{b}.bn1", conv(f"b{b}.conv1", a, 8, 8, 3, 1), 8)])
        h = bn(f"b{b}.bn2", conv(f"b{b}.conv2", h, 8, 8, 3, 1), 8)
        a = op("Relu", f"b{b}.relu2", [op("Add", f"b{b}.add", [h, a])])
    p = op("MaxPool", "pool", [a], kernel_shape=[2, 2], strides=[2, 2])
    p = op("Relu", "relu3", [conv("conv3", p, 8, 16, 1, 0)])
    d = conv("dw", p, 16, 16, 3, 1, group=16, bias=False)
    d = op("Clip", "clip", [d, const("clip.min", 0.0), const("clip.max", 6.0)])
    f = op("Flatten", "flat", [op("GlobalAveragePool", "gap", [d])], axis=1)
    w, bias = const("fc.w", rng.normal(0.0, 0.25, (10, 16))), const("fc.b", rng.uniform(-0.1, 0.1, 10))
    nodes.append(helper.make_node("Gemm", [f, w, bias], ["y"], name="fc", transB=1))
    graph = helper.make_graph(
        nodes,
        "small_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8  # what the pinned onnxruntime reads
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


@pytest.fixture(scope="module")
def cnn_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("model") / "small_cnn.onnx"
    _small_cnn(path)
    return path


@pytest.fixture(scope="module")
def cnn(cnn_path: Path) -> Model:
    return Model(cnn_path)


@pytest.fixture(scope="module")
def net(cnn: Model) -> rltune.Net:
    return cnn.compile(build=BUILD)


@pytest.fixture(scope="module")
def x() -> np.ndarray:
    return np.random.default_rng(1).uniform(-1.0, 1.0, (1, 3, 16, 16)).astype(np.float32)


def _ort(path: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    result: list[np.ndarray] = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)
    return result


def _close(got: np.ndarray, want: np.ndarray) -> None:
    """Within 1e-4 of the largest |want| (issue 27's bar)."""
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


def test_model_loads_with_its_tasks_and_other_kernels(cnn: Model) -> None:
    assert cnn.opset == 13
    assert cnn.n_nodes == 20  # the BatchNormalizations folded into their Convs
    assert cnn.inputs == (rltune.ModelTensor("x", "f32", (1, 3, 16, 16)),)
    assert cnn.outputs == (rltune.ModelTensor("y", "f32", (1, 10)),)
    assert cnn.inputs[0].dtype == np.float32
    text = cnn.text()
    assert "input x f32[1,3,16,16]" in text and "BatchNormalization" not in text
    tasks = cnn.tasks()
    assert [(t.spec.split(":")[0], t.epilogue, t.weight) for t in tasks] == [
        ("conv2d", "bias,relu", 1),
        ("conv2d", "bias,relu", 2),
        ("conv2d", "bias,add,relu", 2),
        ("conv2d", "bias,relu", 1),
        ("depthwise_conv2d", "relu6", 1),
        ("dense", "bias", 1),
    ]
    assert tasks[1].spec == CONV8 + ",epilogue=bias+relu"
    assert tasks[2].nodes == ("b0.conv2", "b0.add", "b0.relu2", "b1.conv2", "b1.add", "b1.relu2")
    assert tasks[4].nodes == ("dw", "clip") and tasks[5].nodes == ("fc",)
    for t in tasks:
        assert t.flops == rltune.Op(t.spec).flops  # the spec is what Op and Session take
    others = cnn.other_kernels()
    assert [(k.op_type, k.count, k.first_node, k.reason) for k in others] == [
        ("MaxPool", 1, "pool", ""),
        ("GlobalAveragePool", 1, "gap", ""),
        ("Flatten", 1, "flat", ""),
    ]


def test_evaluate_matches_onnxruntime(cnn: Model, cnn_path: Path, x: np.ndarray) -> None:
    (want,) = _ort(cnn_path, {"x": x})
    (got,) = cnn.evaluate(x)  # one array for a model of one input
    _close(got, want)
    (again,) = cnn.evaluate([x])
    assert np.array_equal(again, got)
    r1, r2 = cnn.random_inputs(seed=3), cnn.random_inputs(seed=3)
    assert len(r1) == 1 and r1[0].dtype == np.float32 and r1[0].shape == (1, 3, 16, 16)
    assert np.array_equal(r1[0], r2[0]) and not np.array_equal(r1[0], cnn.random_inputs(seed=4)[0])
    assert -1.0 <= r1[0].min() and r1[0].max() < 1.0
    _close(cnn.evaluate(r1)[0], _ort(cnn_path, {"x": r1[0]})[0])


def test_compiled_net_matches_onnxruntime_and_the_reference(
    cnn: Model, cnn_path: Path, net: rltune.Net, x: np.ndarray
) -> None:
    (want,) = _ort(cnn_path, {"x": x})
    (got,) = net.run(x)
    _close(got, want)
    _close(got, cnn.evaluate(x)[0])
    got[...] = np.nan  # a copy: the next run does not see it
    (again,) = net.run([x])
    assert np.array_equal(again, net.run(x)[0])
    _close(again, want)
    # a Fortran-ordered, non-contiguous input is laid out in C order first
    (f_order,) = net.run(np.asfortranarray(x))
    assert np.array_equal(f_order, again)

    tasks = net.tasks()
    assert [t.spec for t in tasks] == [t.spec for t in cnn.tasks()]
    assert all(t.origin == "seed" and t.record_id == 0 and t.record_ms == 0 for t in tasks)
    steps = net.steps()
    kernels = [s for s in steps if s.task >= 0]
    assert len(kernels) == sum(t.weight for t in tasks) == 8
    assert [s.what for s in steps if s.task < 0] == ["MaxPool", "GlobalAveragePool", "Flatten"]
    assert steps[0].name == "conv1" and steps[0].what == tasks[0].spec and steps[0].n_nodes == 2
    assert all(s.flops == tasks[s.task].flops for s in kernels)
    assert net.activation_bytes > 0 and net.extra_bytes > 0 and net.compile_s > 0


def test_export_builds_and_checks_against_the_reference(cnn: Model, net: rltune.Net, tmp_path: Path) -> None:
    import subprocess

    out = tmp_path / "exported"
    r = net.export(out, name="small_cnn", seed=3)
    assert r.name == "small_cnn" and r.dir == str(out)
    assert r.n_kernel_steps == 8 and r.n_kernels == len(cnn.tasks()) and r.n_fast_ops == 2 and r.n_views == 1
    assert r.weights_bytes > 0 and r.arena_bytes == net.activation_bytes
    assert (out / "small_cnn.h").exists() and (out / "small_cnn.weights").exists()
    # the example's input is rltune's seed-3 input, its expected output rltune's reference
    x = np.load(out / "input_0.npy")
    np.testing.assert_array_equal(x, cnn.random_inputs(seed=3)[0])
    _close(np.load(out / "expected_0.npy"), cnn.evaluate(x)[0])
    done = subprocess.run(["make", "-s", "-C", str(out), "check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "OK" in done.stdout
    with pytest.raises(rltune.InvalidArgumentError, match="name"):
        net.export(tmp_path / "bad", name="Not A Name")


def test_profile_steps_sum_to_about_the_run_time(net: rltune.Net, x: np.ndarray) -> None:
    net.profile(True)
    try:
        assert net.is_profiling and all(s.total_ms == 0 for s in net.steps())
        n = 20
        t0 = time.perf_counter()
        for _ in range(n):
            net.run(x)
        wall_ms = (time.perf_counter() - t0) * 1e3
        total = sum(s.total_ms for s in net.steps())
        assert all(s.total_ms > 0 for s in net.steps())
        # the steps run inside the timed loop; the rest is copies and Python
        assert 0.2 * wall_ms <= total <= wall_ms
        net.profile(True)  # turning it on again clears the totals
        assert all(s.total_ms == 0 for s in net.steps())
    finally:
        net.profile(False)
    net.run(x)
    assert not net.is_profiling and all(s.total_ms == 0 for s in net.steps())


@pytest.mark.parametrize(
    "bad, words",
    [
        (np.zeros((1, 3, 8, 8), np.float32), r"input 0 \('x'\) is f32\[1,3,8,8\]; the model needs f32\[1,3,16,16\]"),
        (np.zeros((1, 3, 16, 16), np.int64), r"input 0 \('x'\) is i64\[1,3,16,16\]; the model needs f32"),
        (np.zeros((1, 3, 16, 16), np.float64), r"input 0 \('x'\): float64 arrays are not rltune arrays"),
        ([np.zeros((1, 3, 16, 16), np.float32)] * 2, r"takes 1 input \('x'\), got 2"),
    ],
)
def test_a_wrong_input_raises_naming_it(cnn: Model, net: rltune.Net, bad: Any, words: str) -> None:
    for call in (net.run, cnn.evaluate):
        with pytest.raises(rltune.InvalidArgumentError, match=words):
            call(bad)


def test_inputs_and_outputs_of_other_types(tmp_path: Path) -> None:
    """Two inputs (f32, i64) and two outputs (f32, bool), no tasks."""
    graph = helper.make_graph(
        [
            helper.make_node("Gather", ["x", "idx"], ["y"], name="gather", axis=0),
            helper.make_node("Cast", ["idx"], ["nz"], name="cast", to=TensorProto.BOOL),
        ],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4]),
            helper.make_tensor_value_info("idx", TensorProto.INT64, [3]),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4]),
            helper.make_tensor_value_info("nz", TensorProto.BOOL, [3]),
        ],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    proto.ir_version = 8
    path = tmp_path / "gather.onnx"
    onnx.save(proto, str(path))
    with Model(path) as m:
        assert [t.elem for t in m.inputs] == ["f32", "i64"] and [t.elem for t in m.outputs] == ["f32", "bool"]
        assert m.tasks() == [] and [k.op_type for k in m.other_kernels()] == ["Gather", "Cast"]
        feeds = {"x": np.arange(8, dtype=np.float32).reshape(2, 4), "idx": np.array([1, 0, 1], np.int64)}
        want = _ort(path, feeds)
        net = m.compile(build=BUILD)
        for got in (m.evaluate(list(feeds.values())), net.run(tuple(feeds.values()))):
            assert [g.dtype for g in got] == [np.float32, np.bool_]
            assert all(np.array_equal(g, w) for g, w in zip(got, want))
        assert [r.dtype for r in m.random_inputs()] == [np.float32, np.int64]
        assert not m.random_inputs()[1].any()  # integer inputs are zero
        wrong = r"input 1 \('idx'\) is i32\[3\]; the model needs i64\[3\]"
        with pytest.raises(rltune.InvalidArgumentError, match=wrong):
            net.run([feeds["x"], feeds["idx"].astype(np.int32)])
    with pytest.raises(ValueError, match="closed"):
        net.run(list(feeds.values()))  # closing the model closed its net


def test_model_load_errors(tmp_path: Path) -> None:
    with pytest.raises(rltune.RltuneIOError, match="nosuch.onnx"):
        Model(tmp_path / "nosuch.onnx")
    junk = tmp_path / "junk.onnx"
    junk.write_text("hello")
    with pytest.raises(rltune.ParseError, match="junk.onnx: not an ONNX model"):
        Model(junk)
    graph = helper.make_graph(
        [helper.make_node("Det", ["x"], ["y"], name="det0")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(tmp_path / "det.onnx"))
    with pytest.raises(rltune.InvalidArgumentError, match=r"det0.*Det, opset 13.*not supported"):
        Model(tmp_path / "det.onnx")


# ---- .npy files and arrays ---------------------------------------------------------

_RNG = np.random.default_rng(2)
ARRAYS = {
    "f32": _RNG.standard_normal((2, 3, 4)).astype(np.float32),
    "i64": np.arange(-5, 7, dtype=np.int64).reshape(3, 4) * (1 << 40),
    "i32": np.arange(-3, 2, dtype=np.int32),
    "bool": np.array([[True, False, True], [False, False, True]]),
    "scalar": np.array(3.5, np.float32),
    "empty": np.zeros((0, 3), np.int64),
    "rank8": np.arange(256, dtype=np.float32).reshape((2,) * 8),
}


@pytest.mark.parametrize("name", list(ARRAYS))
def test_npy_round_trip_with_numpy(tmp_path: Path, name: str) -> None:
    x = ARRAYS[name]
    ours, theirs = tmp_path / "ours.npy", tmp_path / "theirs.npy"
    rltune.save_npy(ours, x)
    np.save(theirs, x)
    assert ours.read_bytes() == theirs.read_bytes()  # what np.save writes, byte for byte
    back = np.load(ours)
    assert back.dtype == x.dtype and back.shape == x.shape and np.array_equal(back, x)
    got = rltune.load_npy(theirs)
    assert got.dtype == x.dtype and got.shape == x.shape and np.array_equal(got, x)

    a = Array.from_numpy(x)
    assert a.dtype == x.dtype and a.shape == x.shape and a.size == x.size
    assert a.elem == {"float32": "f32", "int64": "i64", "int32": "i32", "bool": "bool"}[str(x.dtype)]
    a.save(tmp_path / "array.npy")
    assert (tmp_path / "array.npy").read_bytes() == theirs.read_bytes()
    b = Array.load(theirs)
    assert np.array_equal(b.numpy(), x) and np.array_equal(np.asarray(b), x)


def test_array_views_and_conversions(tmp_path: Path) -> None:
    # strided, Fortran-ordered and big-endian arrays go in as C-order native copies
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    for x in (base[:, ::2], np.asfortranarray(base), base.astype(">f4")):
        a = Array.from_numpy(x)
        assert a.numpy().flags.c_contiguous and np.array_equal(a.numpy(), x)
        rltune.save_npy(tmp_path / "x.npy", x)
        assert np.array_equal(np.load(tmp_path / "x.npy"), x)
    # a view shares the C array's memory and keeps it alive past close()
    a = Array.from_numpy(np.ones((2, 2), np.float32))
    view = a.numpy(copy=False)
    copy = a.numpy()
    view[0, 0] = 5.0
    assert a.numpy()[0, 0] == 5.0 and copy[0, 0] == 1.0
    part = view[1:]
    del view
    a.close()
    gc.collect()
    assert repr(a) == "Array(closed)" and part.tolist() == [[1.0, 1.0]]
    with pytest.raises(ValueError, match="closed"):
        a.numpy()
    z = Array.zeros(np.int32, (2, 3))
    assert z.numpy().tolist() == [[0, 0, 0]] * 2 and Array.zeros(bool, ()).numpy().shape == ()


def test_npy_errors(tmp_path: Path) -> None:
    np.save(tmp_path / "f64.npy", np.zeros(3))
    with pytest.raises(rltune.InvalidArgumentError, match=r"f64.npy: .*float64.*astype\(np.float32\)"):
        rltune.load_npy(tmp_path / "f64.npy")
    with pytest.raises(rltune.RltuneIOError, match="missing.npy"):
        rltune.load_npy(tmp_path / "missing.npy")
    (tmp_path / "junk.npy").write_bytes(b"hello world")
    with pytest.raises(rltune.ParseError, match="not a .npy file"):
        Array.load(tmp_path / "junk.npy")
    with pytest.raises(rltune.InvalidArgumentError, match="float64 arrays are not rltune arrays"):
        rltune.save_npy(tmp_path / "x.npy", np.zeros(3))
    with pytest.raises(rltune.InvalidArgumentError, match="at most 8 dims"):
        Array.from_numpy(np.zeros((1,) * 9, np.float32))
    with pytest.raises(rltune.InvalidArgumentError):
        Array.zeros(np.float32, (2, -1))  # rltune's own check


# ---- tuning a network --------------------------------------------------------------


def test_model_tuning_then_compile_from_its_records(cnn: Model, x: np.ndarray, tmp_path: Path) -> None:
    db = tmp_path / "net.db"
    options: dict[str, Any] = dict(
        tuner="random", batch_size=4, n_trials=24, n_final=0, seed=5, db_path=db, build=BUILD, run=RUN
    )
    with ModelTuning(cnn, **options) as t:
        s = t.summary()
        assert (s.n_tasks, s.n_trials, s.n_rounds, s.n_recorded, s.last_task) == (6, 0, 0, 0, -1)
        assert math.isinf(s.latency_ms) and s.curve == () and not t.is_done
        rounds = 0
        while not t.is_done:
            s = t.step()
            rounds += 1
            assert s.n_rounds == rounds and len(s.curve) == rounds and 0 <= s.last_task < 6
        t.finish()
        s = t.summary()
        tasks = t.tasks()
    assert s.n_budget == 24 and s.n_trials >= 24 and s.n_trials < 24 + 4  # whole rounds
    assert rounds >= 6 and s.n_rounds == rounds  # a warm-up round of every task first
    assert [k.n_rounds > 0 for k in tasks] == [True] * 6 and sum(k.n_rounds for k in tasks) == rounds
    assert sum(k.n_trials for k in tasks) == s.n_trials
    assert all(0 <= k.n_from_siblings <= 4 * k.n_rounds for k in tasks)
    assert s.latency_ms == pytest.approx(sum(k.weight * k.best_ms for k in tasks), rel=1e-12)
    assert math.isfinite(s.latency_ms) and s.latency_ms > 0
    assert [p.n_trials for p in s.curve] == sorted(p.n_trials for p in s.curve)
    assert s.curve[-1].n_trials == s.n_trials and s.curve[-1].latency_ms == pytest.approx(s.latency_ms)
    assert all(isinstance(p, rltune.LatencyPoint) and len(p) == 3 for p in s.curve)

    # compiled again, the tasks take their schedules from the records
    tuned = cnn.compile(db_path=db, build=BUILD)
    for nt, k in zip(tuned.tasks(), tasks):
        assert nt.spec == k.spec and nt.origin == "record" and nt.record_id > 0
        assert nt.record_ms == pytest.approx(k.best_ms)
    _close(tuned.run(x)[0], cnn.evaluate(x)[0])

    # a rerun of a finished tuning measures nothing: the records count toward the budget
    with cnn.tune(**options) as again:
        assert again.is_done
        s2 = again.run()
    assert s2.n_trials == 0 and s2.n_rounds == 0 and s2.n_recorded == s.n_trials
    assert s2.latency_ms_at_open == pytest.approx(s.latency_ms)


def test_cold_tuning_files_apart_and_compiles_cold_first(cnn: Model, x: np.ndarray, tmp_path: Path) -> None:
    # the floats the nodes read once the BatchNormalizations are folded:
    # conv weights, the biases folding gave the convs, the dense layer, Clip's bounds
    weights = 3 * 8 * 9 + 4 * 8 * 8 * 9 + 8 * 16 + 16 * 9
    biases = 8 + 4 * 8 + 16
    assert cnn.weights_bytes == 4 * (weights + biases + 16 * 10 + 10 + 2)
    db = tmp_path / "cold.db"
    with ModelTuning(cnn, tuner="random", batch_size=2, n_trials=12, n_final=0, seed=3, db_path=db, build=BUILD,
                     run=RUN) as t:  # cold by default
        t.run()
        tasks = t.tasks()
    assert all(k.n_trials > 0 and math.isfinite(k.best_ms) for k in tasks)
    # the cold records serve a cold compile (the default), and only that
    cold = cnn.compile(db_path=db, build=BUILD, cold_weights=True)
    assert [nt.origin for nt in cold.tasks()] == ["record"] * len(tasks)
    warm = cnn.compile(db_path=db, build=BUILD, cold_weights=False)
    assert [nt.origin for nt in warm.tasks()] == ["seed"] * len(tasks)
    assert [nt.origin for nt in cnn.compile(db_path=db, build=BUILD).tasks()] == ["record"] * len(tasks)
    _close(cold.run(x)[0], cnn.evaluate(x)[0])
    with rltune.Database(db, read_only=True) as records:
        targets = {r.target for r in records.history()}
    assert len(targets) == 1
    (target,) = targets
    assert target.is_weights_cold and ";weights=cold;" in target.key


def test_model_tuning_errors(cnn: Model, tmp_path: Path) -> None:
    with pytest.raises(rltune.InvalidArgumentError, match="needs a records database"):
        ModelTuning(cnn, db_path="")
    with pytest.raises(rltune.InvalidArgumentError, match="at least 1, got 0"):
        ModelTuning(cnn, db_path=tmp_path / "r.db", n_trials=0)
    # sessions open at their task's first round: a bad tuner fails the step, naming the task
    with ModelTuning(cnn, db_path=tmp_path / "r.db", tuner="nosuch", n_trials=8) as t:
        with pytest.raises(rltune.InvalidArgumentError, match=r"task conv2d:.*unknown tuner 'nosuch'") as info:
            t.step()
        assert t.last_error == str(info.value)
    with pytest.raises(ValueError, match="closed"):
        t.step()


def _blocked_cnn(path: Path) -> None:
    """Channels that are multiples of 16 (so of any machine's block): a stem
    3 -> 16, MaxPool, a residual 3x3 pair, a 1x1 to 32, GlobalAveragePool,
    Flatten, Gemm."""
    rng = np.random.default_rng(7)
    inits: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, value: Any) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value, dtype=np.float32), name))
        return name

    def conv(name: str, x: str, cin: int, cout: int, k: int) -> str:
        w = rng.normal(0.0, 1.0 / math.sqrt(cin * k * k), (cout, cin, k, k))
        ins = [x, const(f"{name}.w", w), const(f"{name}.b", rng.uniform(-0.1, 0.1, cout))]
        nodes.append(helper.make_node("Conv", ins, [f"{name}.y"], name=name, kernel_shape=[k, k], pads=[k // 2] * 4))
        return f"{name}.y"

    def op(op_type: str, name: str, ins: list[str], **attrs: Any) -> str:
        nodes.append(helper.make_node(op_type, ins, [f"{name}.y"], name=name, **attrs))
        return f"{name}.y"

    s = op("Relu", "stem_relu", [conv("stem", "x", 3, 16, 3)])
    p = op("MaxPool", "pool", [s], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    h = op("Relu", "r1", [conv("c1", p, 16, 16, 3)])
    a = op("Relu", "r2", [op("Add", "add", [conv("c2", h, 16, 16, 3), p])])
    f = op("Flatten", "flat", [op("GlobalAveragePool", "gap", [conv("c3", a, 16, 32, 1)])], axis=1)
    nodes.append(helper.make_node("Gemm", [f, const("fc.w", rng.normal(0, 0.2, (10, 32)))], ["y"], name="fc",
                                  transB=1))
    graph = helper.make_graph(nodes, "blocked_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                      [1, 3, 12, 12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))


def test_blocked_layout_tasks_compile_and_tune(tmp_path: Path) -> None:
    path = tmp_path / "blocked_cnn.onnx"
    _blocked_cnn(path)
    m = Model(path)
    block = rltune.channel_block("nchwc")
    assert block in (4, 8, 16) and rltune.channel_block("nchw") == 0
    plain, blocked = m.tasks(), m.tasks(layout="nchwc")
    assert [t.epilogue for t in plain] == [t.epilogue for t in blocked]
    assert not any("block=" in t.spec for t in plain)
    assert blocked[0].spec.endswith(f",oblock={block},epilogue=bias+relu")  # the stem reads NCHW
    assert all(f"iblock={block}" in t.spec for t in blocked[1:4])  # the head's dense reads NCHW
    assert blocked[4].spec.startswith("dense:")
    x = np.random.default_rng(2).uniform(-1, 1, (1, 3, 12, 12)).astype(np.float32)
    (want,) = _ort(path, {"x": x})
    net = m.compile(build=BUILD, layout="nchwc")
    assert [t.spec for t in net.tasks()] == [t.spec for t in blocked]
    _close(net.run(x)[0], want)
    db = tmp_path / "blocked.db"
    with ModelTuning(m, tuner="random", batch_size=2, n_trials=10, n_final=0, seed=1, db_path=db, build=BUILD,
                     run=RUN, layout="nchwc") as t:
        t.run()
        assert [k.spec for k in t.tasks()] == [b.spec for b in blocked]
    tuned = m.compile(db_path=db, build=BUILD, layout="nchwc")
    assert [nt.origin for nt in tuned.tasks()] == ["record"] * len(blocked)
    assert tuned.channel_block == block and tuned.layout_estimates_ms is None
    _close(tuned.run(x)[0], want)
    # auto (the default): the blocked tasks are all tuned, NCHW's are not
    chosen = m.compile(db_path=db, build=BUILD)
    assert chosen.channel_block == block
    est = chosen.layout_estimates_ms
    assert est is not None and math.isinf(est[0]) and 0 < est[1] < math.inf
    assert m.compile(build=BUILD).channel_block == 0  # no records: NCHW
    # NCHW's tasks are other ops: the blocked records do not serve them
    assert [nt.origin for nt in m.compile(db_path=db, build=BUILD, layout="nchw").tasks()][:4] == ["seed"] * 4
    with pytest.raises(rltune.InvalidArgumentError, match="expected 'nchwc', auto or 'nchw'"):
        m.compile(layout="nhwc")
    with pytest.raises(rltune.InvalidArgumentError, match="expected 'nchwc' or 'nchw'"):
        m.tasks(layout="auto")
