"""Whole networks (rltune/model.h): an ONNX model loaded into rltune's
graph, its tasks, the reference evaluator, the network compiled to a
program that runs in this process, and the network's tasks tuned from one
budget of trials (Ansor's task scheduler). docs/net.md and docs/python.md
("Whole networks").

    m = Model("net.onnx")
    for t in m.tasks():
        print(t.weight, t.spec)
    with ModelTuning(m, db_path="r.db", n_trials=200) as t:
        print(t.run().latency_ms)
    net = m.compile(db_path="r.db")
    y, = net.run(x)                       # numpy in, numpy out

A model must outlive what is made from it (nets and tunings hold a
reference to it); closing a model closes its nets and tunings first.
"""

from __future__ import annotations

import math
import os
import threading
import weakref
from dataclasses import dataclass
from typing import Any, NamedTuple, Optional, Sequence, Union

import numpy as np

from ._lib import Handle, check, cstr, ffi, lib, new_diag, take_text, text
from .arrays import ELEM_NAMES, _adopt, _to_numpy, borrowed, dtype_of_elem
from .errors import InvalidArgumentError
from .measure import BuildOptions, RunOptions

#: rlt_net_origin by value.
ORIGINS = ("record", "base_record", "seed")

ArrayLike = Any
Inputs = Union[ArrayLike, Sequence[ArrayLike]]


@dataclass(frozen=True)
class ModelTensor:
    """A graph input or output (rlt_model_tensor): name, element type and
    static shape."""

    name: str
    elem: str  # "f32", "i64", "i32", "bool"
    shape: tuple[int, ...]

    @property
    def dtype(self) -> np.dtype:
        return dtype_of_elem(ELEM_NAMES.index(self.elem))

    @classmethod
    def _from_c(cls, t: Any) -> "ModelTensor":
        return cls(
            name=ffi.string(t.name).decode(errors="replace"),
            elem=ELEM_NAMES[int(t.elem)],
            shape=tuple(int(t.dims[d]) for d in range(t.rank)),
        )

    def describe(self) -> str:
        return f"{self.elem}[{','.join(str(n) for n in self.shape)}]"


@dataclass(frozen=True)
class Task:
    """One distinct kernel rltune tunes (rlt_task): the fused op's spec
    (what `Op` and `Session` take and records are filed under), what fuses
    into it ("bias,add,relu"; "" for none), its occurrences in the
    network, one occurrence's FLOPs, and the names of the nodes every
    occurrence covers (the kernel node, then the fused ones)."""

    spec: str
    epilogue: str
    weight: int
    flops: float
    nodes: tuple[str, ...]


@dataclass(frozen=True)
class OtherKernel:
    """Nodes that are not tasks, grouped by op type and reason
    (rlt_other_kernel); reason "" for op types rltune has no op for."""

    op_type: str
    reason: str
    count: int
    first_node: str


@dataclass(frozen=True)
class NetTask:
    """A compiled task (rlt_net_task): where its schedule came from
    (origin "record", "base_record" or "seed"), with the record's id and
    median time (0 for a seed)."""

    spec: str
    weight: int
    flops: float
    origin: str
    record_id: int
    record_ms: float


@dataclass(frozen=True)
class ExportResult:
    """What Net.export wrote (rlt_model_export_result)."""

    name: str
    dir: str
    n_steps: int
    n_kernel_steps: int
    n_kernels: int
    n_fast_ops: int
    n_views: int
    n_other_cc: int
    n_kernel_files: int
    weights_bytes: int
    arena_bytes: int
    needs_openmp: bool
    cc: str
    cflags: str


@dataclass(frozen=True)
class NetStep:
    """One step of a compiled network (rlt_net_step): a fused kernel
    (`task` its index in Net.tasks()) or a node rltune's own code runs
    (`task` -1); `total_ms` sums its wall time over the profiled runs."""

    name: str
    what: str
    task: int
    n_nodes: int
    flops: float
    total_ms: float


class LatencyPoint(NamedTuple):
    """One point of the latency estimate over a network's tuning."""

    n_trials: int
    wall_s: float
    latency_ms: float


@dataclass(frozen=True)
class ModelTuningSummary:
    """Where a network's tuning stands (rlt_model_tuning_summary), copied
    out. latency_ms is the sum over tasks of weight x best time (inf while
    a task has none); curve has one point per round."""

    n_tasks: int
    n_trials: int
    n_budget: int
    n_rounds: int
    n_recorded: int
    last_task: int
    wall_s: float
    latency_ms: float
    latency_ms_at_open: float
    curve: tuple[LatencyPoint, ...]
    was_stopped: bool


@dataclass(frozen=True)
class TuningTask:
    """One task as a network's tuning sees it (rlt_tuning_task): rounds it
    got, new measurements, configurations it evaluated from its siblings'
    best (the same op with another epilogue), records at open, best time (inf: none
    yet) and the scheduler's last gradient estimate."""

    spec: str
    weight: int
    flops: float
    n_rounds: int
    n_trials: int
    n_from_siblings: int
    n_recorded: int
    best_ms: float
    gradient: float
    is_done: bool


#: The layout Model.tasks and ModelTuning take by default (`rltune tune
#: --model`'s); Model.compile's is "auto" (`rltune run`'s).
DEFAULT_LAYOUT = "nchw"

#: rlt_net_options.channel_block's RLT_NET_BLOCK_AUTO.
BLOCK_AUTO = -1


def channel_block(layout: str, auto: bool = False) -> int:
    """rlt_net_options.channel_block of a layout: 0 for "nchw", the
    machine's vector width in floats for "nchwc" (rlt_model_channel_block),
    and with `auto`, BLOCK_AUTO for "auto" (the layout the records say is
    faster)."""
    if layout == "nchw":
        return 0
    if layout == "nchwc":
        return int(lib().rlt_model_channel_block())
    if auto and layout == "auto":
        return BLOCK_AUTO
    raise InvalidArgumentError(f"layout {layout!r}: expected 'nchwc'{', auto' if auto else ''} or 'nchw'")


def _arrays_in(kind: str, described: Sequence[ModelTensor], inputs: Inputs, keep: list[Any]) -> Any:
    """`const rlt_array *const[]` for `inputs` (one array or a sequence of
    them, one per graph input, borrowed); a count or dtype rltune does
    not take raises naming the input."""
    if isinstance(inputs, (list, tuple)):
        items = list(inputs)
    else:
        items = [inputs]
    if len(items) != len(described):
        names = ", ".join(f"'{t.name}'" for t in described)
        raise InvalidArgumentError(
            f"{kind} takes {len(described)} input{'s' if len(described) != 1 else ''} ({names}), got {len(items)}"
        )
    ptrs = []
    for i, (x, t) in enumerate(zip(items, described)):
        try:
            ptrs.append(borrowed(x, keep))
        except InvalidArgumentError as e:
            raise InvalidArgumentError(f"input {i} ('{t.name}'): {e.message}; the model needs {t.describe()}") from None
    arr = ffi.new("rlt_array *[]", ptrs) if ptrs else ffi.new("rlt_array *[1]")
    keep.append(arr)
    return arr


class Model(Handle):
    """An ONNX model loaded into rltune (rlt_model_load: sorted, shapes
    inferred, constant subgraphs and BatchNormalizations folded, dead
    nodes removed). Errors carry rltune's message, which starts with the
    path (and names the node, op type and opset where one is at fault).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        L = lib()
        out = ffi.new("rlt_model **")
        d = new_diag()
        check(L.rlt_model_load(os.fsencode(path), out, d), d)
        self.path = os.fspath(path)
        self._ptr: Any = ffi.gc(out[0], L.rlt_model_destroy)
        self._dependents: weakref.WeakSet[Any] = weakref.WeakSet()
        n_in, n_out = L.rlt_model_n_inputs(self._ptr), L.rlt_model_n_outputs(self._ptr)
        t = ffi.new("rlt_model_tensor *")
        ins, outs = [], []
        for i in range(n_in):
            L.rlt_model_input(self._ptr, i, t)
            ins.append(ModelTensor._from_c(t))
        for i in range(n_out):
            L.rlt_model_output(self._ptr, i, t)
            outs.append(ModelTensor._from_c(t))
        self._inputs: tuple[ModelTensor, ...] = tuple(ins)
        self._outputs: tuple[ModelTensor, ...] = tuple(outs)

    @classmethod
    def _adopt(cls, ptr: Any, path: str | os.PathLike[str]) -> "Model":
        """A Model owning rlt_model handle ptr (made by the library: a
        rewritten graph, an environment's best)."""
        L = lib()
        m = cls.__new__(cls)
        m.path = os.fspath(path)
        m._ptr = ffi.gc(ptr, L.rlt_model_destroy)
        m._dependents = weakref.WeakSet()
        t = ffi.new("rlt_model_tensor *")
        ins, outs = [], []
        for i in range(L.rlt_model_n_inputs(ptr)):
            L.rlt_model_input(ptr, i, t)
            ins.append(ModelTensor._from_c(t))
        for i in range(L.rlt_model_n_outputs(ptr)):
            L.rlt_model_output(ptr, i, t)
            outs.append(ModelTensor._from_c(t))
        m._inputs = tuple(ins)
        m._outputs = tuple(outs)
        return m

    def save_onnx(self, path: str | os.PathLike[str]) -> None:
        """Writes the model's graph as an ONNX file (rlt_model_save_onnx)."""
        d = new_diag()
        check(lib().rlt_model_save_onnx(self._h(), os.fsencode(path), d), d)

    def _h(self) -> Any:
        if self._ptr is None:
            raise ValueError("the model is closed")
        return self._ptr

    def close(self) -> None:
        """Frees the model now, closing its nets and tunings first."""
        for dep in list(self._dependents):
            dep.close()
        super().close()

    # ---- the graph ----------------------------------------------------------

    def text(self) -> str:
        """The graph as text, one line per input, constant, node and output."""
        return take_text(lib().rlt_model_text(self._h()))

    @property
    def opset(self) -> int:
        return int(lib().rlt_model_opset(self._h()))

    @property
    def n_nodes(self) -> int:
        """Nodes after folding and dead-code removal."""
        return int(lib().rlt_model_n_nodes(self._h()))

    @property
    def weights_bytes(self) -> int:
        """The bytes of the constants the nodes read, each once."""
        return int(lib().rlt_model_weights_bytes(self._h()))

    @property
    def inputs(self) -> tuple[ModelTensor, ...]:
        """The graph inputs, what run() and evaluate() take, in order."""
        self._h()
        return self._inputs

    @property
    def outputs(self) -> tuple[ModelTensor, ...]:
        self._h()
        return self._outputs

    @property
    def last_error(self) -> str:
        return text(lib().rlt_model_last_error(self._h()))

    def tasks(self, layout: str = DEFAULT_LAYOUT) -> list[Task]:
        """The tasks, in the order of their first occurrence
        (rlt_model_tasks_blocked): those of the network compiled with
        `layout` ("nchw", or "nchwc": activations in blocks of the vector
        width's channels, conv2d's specs with iblock= / oblock=)."""
        out = ffi.new("rlt_task **")
        n = ffi.new("int *")
        d = new_diag()
        check(lib().rlt_model_tasks_blocked(self._h(), channel_block(layout), out, n, d), d)
        if out[0] == ffi.NULL:
            return []
        tasks = ffi.gc(out[0], lib().rlt_free)
        result = []
        for i in range(n[0]):
            t = tasks[i]
            result.append(
                Task(
                    spec=ffi.string(t.spec).decode(errors="replace"),
                    epilogue=ffi.string(t.epilogue).decode(errors="replace"),
                    weight=int(t.weight),
                    flops=float(t.flops),
                    nodes=tuple(text(t.nodes[k]) for k in range(t.n_nodes)),
                )
            )
        ffi.release(tasks)
        return result

    def other_kernels(self) -> list[OtherKernel]:
        """The nodes that are not tasks, by (op type, reason), in the order
        of their first occurrence (rlt_model_other_kernels)."""
        out = ffi.new("rlt_other_kernel **")
        n = ffi.new("int *")
        d = new_diag()
        check(lib().rlt_model_other_kernels(self._h(), out, n, d), d)
        if out[0] == ffi.NULL:
            return []
        others = ffi.gc(out[0], lib().rlt_free)
        result = [
            OtherKernel(
                op_type=ffi.string(o.op_type).decode(errors="replace"),
                reason=ffi.string(o.reason).decode(errors="replace"),
                count=int(o.count),
                first_node=ffi.string(o.first_node).decode(errors="replace"),
            )
            for o in (others[i] for i in range(n[0]))
        ]
        ffi.release(others)
        return result

    # ---- the reference ----------------------------------------------------------

    def random_inputs(self, seed: int = 0) -> list[np.ndarray]:
        """A seeded input for every graph input (rlt_model_random_inputs):
        f32 uniform in [-1, 1), integer and bool inputs zero; what
        `rltune run` feeds without --input."""
        n = len(self._inputs)
        out = ffi.new("rlt_array *[]", max(n, 1))
        d = new_diag()
        check(lib().rlt_model_random_inputs(self._h(), seed, out, d), d)
        return [_to_numpy(_adopt(out[i]), copy=False) for i in range(n)]

    def evaluate(self, inputs: Inputs) -> list[np.ndarray]:
        """Runs the graph with rltune's reference evaluator
        (rlt_model_evaluate): one numpy array per graph input (a single
        array for a model of one input) in, one per output out. An input
        of another dtype or shape raises InvalidArgumentError naming it."""
        keep: list[Any] = []
        arr = _arrays_in("the model", self._inputs, inputs, keep)
        n = len(self._outputs)
        out = ffi.new("rlt_array *[]", max(n, 1))
        d = new_diag()
        check(lib().rlt_model_evaluate(self._h(), arr, out, d), d)
        return [_to_numpy(_adopt(out[i]), copy=False) for i in range(n)]

    # ---- compiling and tuning ---------------------------------------------------

    def compile(
        self,
        db_path: Optional[str | os.PathLike[str]] = None,
        n_threads: int = 1,
        build: Optional[BuildOptions] = None,
        cold_weights: bool = True,
        layout: str = "auto",
    ) -> "Net":
        """The model compiled to a program that runs in this process
        (rlt_model_compile): each task's schedule from the best record of
        `db_path` on this target (the target of `n_threads` and `build`;
        the records timed cold first, as ModelTuning times them, unless
        `cold_weights` is False: then the warm ones only), else its op's
        without the epilogue, else a rule-built seed. `layout` "nchwc"
        keeps activations in blocks of the vector width's channels where
        every node can take them (rlt_net_options.channel_block), "nchw"
        none, "auto" (the default) the one whose tuned records estimate
        the faster network (NCHW unless nchwc's tasks are all tuned and
        faster): Net.channel_block says which."""
        return Net(self, db_path=db_path, n_threads=n_threads, build=build, cold_weights=cold_weights, layout=layout)

    def tune(self, **options: Any) -> "ModelTuning":
        """A ModelTuning of this model; options as ModelTuning takes them."""
        return ModelTuning(self, **options)

    def __repr__(self) -> str:
        if self._ptr is None:
            return f"Model({self.path!r}, closed)"
        return f"Model({self.path!r}: opset {self.opset}, {self.n_nodes} nodes)"


class Net(Handle):
    """A model compiled to a program (rlt_net). run() takes numpy arrays
    and returns copies of the outputs; the output arrays rltune writes
    into are made once per net and reused, and a lock makes concurrent
    run() calls on one net take turns (rlt_net_run takes one at a time).
    """

    def __init__(
        self,
        model: Model,
        *,
        db_path: Optional[str | os.PathLike[str]] = None,
        n_threads: int = 1,
        build: Optional[BuildOptions] = None,
        cold_weights: bool = True,
        layout: str = "auto",
    ) -> None:
        L = lib()
        keep: list[Any] = []
        o = ffi.new("rlt_net_options *")
        L.rlt_net_options_init(o)
        o.db_path = cstr(db_path, keep)
        o.n_threads = n_threads
        o.cold_weights = cold_weights
        o.channel_block = channel_block(layout, auto=True)
        if build is not None:
            build._fill(o.build, keep)
        out = ffi.new("rlt_net **")
        d = new_diag()
        check(L.rlt_model_compile(model._h(), o, out, d), d)
        self.model = model  # the net runs the model's graph: it must outlive the net
        self._ptr: Any = ffi.gc(out[0], L.rlt_net_destroy)
        model._dependents.add(self)
        self._lock = threading.Lock()
        self._profiling = False
        self._outputs: list[Any] = []
        for t in model.outputs:
            arr = ffi.new("rlt_array **")
            dims = ffi.new("int64_t[]", list(t.shape)) if t.shape else ffi.NULL
            check(L.rlt_array_create(ELEM_NAMES.index(t.elem), len(t.shape), dims, arr, d), d)
            self._outputs.append(_adopt(arr[0]))
        self._out_arr = ffi.new("rlt_array *[]", self._outputs) if self._outputs else ffi.new("rlt_array *[1]")

    def _h(self) -> Any:
        if self._ptr is None:
            raise ValueError("the net is closed")
        return self._ptr

    def close(self) -> None:
        super().close()
        self._outputs = []

    def run(self, inputs: Inputs) -> list[np.ndarray]:
        """Runs the network once (rlt_net_run) on one numpy array per graph
        input (a single array for a model of one input), of the input's
        dtype and shape, and returns a copy of every output. An input that
        does not fit raises InvalidArgumentError naming it."""
        h = self._h()
        keep: list[Any] = []
        arr = _arrays_in("the model", self.model.inputs, inputs, keep)
        d = new_diag()
        with self._lock:
            check(lib().rlt_net_run(h, arr, self._out_arr, d), d)
            return [_to_numpy(o, copy=True) for o in self._outputs]

    def profile(self, on: bool = True) -> None:
        """Profiling on (clearing the steps' totals) or off: while on, every
        run adds each step's wall time to its total_ms."""
        lib().rlt_net_profile(self._h(), bool(on))
        self._profiling = bool(on)

    @property
    def is_profiling(self) -> bool:
        return self._profiling

    @property
    def channel_block(self) -> int:
        """The layout compiled ("auto" resolved): 0 for NCHW, else the
        channel block (rlt_net_channel_block)."""
        return int(lib().rlt_net_channel_block(self._h()))

    @property
    def layout_estimates_ms(self) -> Optional[tuple[float, float]]:
        """With layout "auto", the records' latency estimates it chose by,
        (NCHW, blocked) (inf: a task untuned); None when the layout was
        given (rlt_net_layout_estimates)."""
        est = ffi.new("double[2]")
        lib().rlt_net_layout_estimates(self._h(), est)
        return None if math.isnan(est[0]) else (float(est[0]), float(est[1]))

    def tasks(self) -> list[NetTask]:
        """The compiled tasks and where their schedules came from."""
        L, h = lib(), self._h()
        t = ffi.new("rlt_net_task *")
        result = []
        for i in range(L.rlt_net_n_tasks(h)):
            L.rlt_net_task_get(h, i, t)
            origin = int(t.origin)
            result.append(
                NetTask(
                    spec=ffi.string(t.spec).decode(errors="replace"),
                    weight=int(t.weight),
                    flops=float(t.flops),
                    origin=ORIGINS[origin] if 0 <= origin < len(ORIGINS) else str(origin),
                    record_id=int(t.record_id),
                    record_ms=float(t.record_ms),
                )
            )
        return result

    def steps(self) -> list[NetStep]:
        """The program's steps in order, with their profiled totals."""
        L, h = lib(), self._h()
        s = ffi.new("rlt_net_step *")
        result = []
        for i in range(L.rlt_net_n_steps(h)):
            L.rlt_net_step_get(h, i, s)
            result.append(
                NetStep(
                    name=text(s.name),
                    what=text(s.what),
                    task=int(s.task),
                    n_nodes=int(s.n_nodes),
                    flops=float(s.flops),
                    total_ms=float(s.total_ms),
                )
            )
        return result

    @property
    def activation_bytes(self) -> int:
        """The activations' buffer: the memory plan's peak."""
        return int(lib().rlt_net_activation_bytes(self._h()))

    @property
    def extra_bytes(self) -> int:
        """What compiling added beside the model's weights (weights
        transposed or scaled, biases, workspaces with packed weights)."""
        return int(lib().rlt_net_extra_bytes(self._h()))

    @property
    def compile_s(self) -> float:
        return float(lib().rlt_net_compile_s(self._h()))

    def export(
        self,
        directory: str | os.PathLike[str],
        *,
        name: Optional[str] = None,
        embed_weights: bool = False,
        seed: int = 0,
    ) -> ExportResult:
        """Writes this net as a stand-alone C library in `directory`
        (rlt_model_export; `rltune export --model`): NAME.h, NAME.c, the
        kernels, rltune's fast ops, the weights, a Makefile and an example
        that `make -C DIR check` builds and runs against rltune's reference
        outputs for the input drawn from `seed`. Nothing is compiled here."""
        L = lib()
        keep: list[Any] = []
        o = ffi.new("rlt_model_export_options *")
        L.rlt_model_export_options_init(o)
        o.dir = cstr(directory, keep)
        o.name = cstr(name, keep)
        o.origin = cstr(self.model.path, keep)
        o.embed_weights = bool(embed_weights)
        o.seed = seed
        r = ffi.new("rlt_model_export_result *")
        d = new_diag()
        with self._lock:
            check(L.rlt_model_export(self.model._h(), self._h(), o, r, d), d)
        return ExportResult(
            name=text(r.name),
            dir=os.fspath(directory),
            n_steps=int(r.n_steps),
            n_kernel_steps=int(r.n_kernel_steps),
            n_kernels=int(r.n_kernels),
            n_fast_ops=int(r.n_fast_ops),
            n_views=int(r.n_views),
            n_other_cc=int(r.n_other_cc),
            n_kernel_files=int(r.n_kernel_files),
            weights_bytes=int(r.weights_bytes),
            arena_bytes=int(r.arena_bytes),
            needs_openmp=bool(r.needs_openmp),
            cc=text(r.cc),
            cflags=text(r.cflags),
        )


class ModelTuning(Handle):
    """A network's tasks tuned from one budget of trials
    (rlt_model_tuning_*): after a warm-up round of every task, each round
    (one batch of one task's session) goes to the task expected to cut the
    latency estimate the most. Every measurement goes to `db_path`
    (required), which Model.compile then takes schedules from; the records
    it already holds for the tasks count toward `n_trials`, so a rerun
    continues (and a rerun of a finished tuning measures nothing).

    Options are keyword arguments: `n_trials` and `no_transfer` are the
    network's (rlt_model_tune_options), the others every task's session's
    (named as rlt_session_options' fields, as Session takes them); None
    keeps rltune's defaults (xgb-rank, batches of 16, 1000 trials).
    `cold_weights` (default True, as `rltune tune --model`) times every
    kernel cold, as the network runs it: its weights, workspace and output
    evicted before each call (RunOptions.cold_weights, set over `run`'s).
    `layout` ("nchw" or "nchwc") tunes the tasks of the network compiled
    with that layout (Model.compile's).

        with ModelTuning(m, tuner="random", n_trials=64, db_path="r.db") as t:
            while not t.is_done:
                t.step()
            t.finish()
            print(t.summary().latency_ms)
    """

    def __init__(
        self,
        model: Model,
        *,
        db_path: str | os.PathLike[str],
        n_trials: Optional[int] = None,
        tuner: Optional[str] = None,
        batch_size: Optional[int] = None,
        seed: Optional[int] = None,
        n_threads: Optional[int] = None,
        build: Optional[BuildOptions] = None,
        run: Optional[RunOptions] = None,
        n_seeds: Optional[int] = None,
        n_final: Optional[int] = None,
        no_transfer: Optional[bool] = None,
        tuner_config_path: Optional[str | os.PathLike[str]] = None,
        tuner_options: Optional[str] = None,
        cold_weights: bool = True,
        layout: str = DEFAULT_LAYOUT,
    ) -> None:
        L = lib()
        o = ffi.new("rlt_model_tune_options *")
        L.rlt_model_tune_options_init(o)
        keep: list[Any] = [o]
        o.channel_block = channel_block(layout)
        if n_trials is not None:
            o.n_trials = n_trials
        if no_transfer is not None:
            o.no_transfer = no_transfer
        s = o.session
        for name, value in {
            "batch_size": batch_size, "seed": seed, "n_threads": n_threads, "n_seeds": n_seeds, "n_final": n_final,
        }.items():
            if value is not None:
                setattr(s, name, value)
        for name, value in {
            "tuner": tuner, "db_path": db_path, "tuner_config_path": tuner_config_path,
            "tuner_options": tuner_options,
        }.items():
            if value is not None:
                setattr(s, name, cstr(value, keep))
        if build is not None:
            build._fill(s.build, keep)
        if run is not None:
            run._fill(s.run)
        s.run.cold_weights = cold_weights
        out = ffi.new("rlt_model_tuning **")
        d = new_diag()
        check(L.rlt_model_tuning_open(model._h(), o, out, d), d)
        self.model = model  # borrowed by the tuning: it must outlive it
        # The tuning keeps a copy of the options, strings by pointer (the
        # build options', the tuner's config and options): they live as
        # long as the tuning.
        self._keep = keep
        self._ptr: Any = ffi.gc(out[0], L.rlt_model_tuning_destroy)
        model._dependents.add(self)

    def _h(self) -> Any:
        if self._ptr is None:
            raise ValueError("the tuning is closed")
        return self._ptr

    @property
    def is_done(self) -> bool:
        """The budget is spent or every task is done."""
        return bool(lib().rlt_model_tuning_is_done(self._h()))

    def step(self) -> ModelTuningSummary:
        """One round: the scheduler picks a task, whose session tunes one
        batch. Returns the summary after it."""
        d = new_diag()
        check(lib().rlt_model_tuning_step(self._h(), d), d)
        return self.summary()

    def finish(self) -> None:
        """Ends every opened session (each measures its best few again:
        n_final). Once, after the last step."""
        d = new_diag()
        check(lib().rlt_model_tuning_finish(self._h(), d), d)

    def run(self) -> ModelTuningSummary:
        """Steps until done, then finishes; the final summary."""
        while not self.is_done:
            self.step()
        self.finish()
        return self.summary()

    def summary(self) -> ModelTuningSummary:
        s = ffi.new("rlt_model_tuning_summary *")
        lib().rlt_model_tuning_summary_get(self._h(), s)
        curve = tuple(
            LatencyPoint(int(p.n_trials), float(p.wall_s), float(p.latency_ms))
            for p in (s.curve[i] for i in range(s.n_points))
        ) if s.curve != ffi.NULL else ()
        return ModelTuningSummary(
            n_tasks=int(s.n_tasks),
            n_trials=int(s.n_trials),
            n_budget=int(s.n_budget),
            n_rounds=int(s.n_rounds),
            n_recorded=int(s.n_recorded),
            last_task=int(s.last_task),
            wall_s=float(s.wall_s),
            latency_ms=float(s.latency_ms),
            latency_ms_at_open=float(s.latency_ms_at_open),
            curve=curve,
            was_stopped=bool(s.was_stopped),
        )

    def tasks(self) -> list[TuningTask]:
        """Every task as the tuning sees it, in the model's order."""
        L, h = lib(), self._h()
        s = ffi.new("rlt_model_tuning_summary *")
        L.rlt_model_tuning_summary_get(h, s)
        t = ffi.new("rlt_tuning_task *")
        result = []
        for i in range(s.n_tasks):
            L.rlt_model_tuning_task_get(h, i, t)
            result.append(
                TuningTask(
                    spec=ffi.string(t.spec).decode(errors="replace"),
                    weight=int(t.weight),
                    flops=float(t.flops),
                    n_rounds=int(t.n_rounds),
                    n_trials=int(t.n_trials),
                    n_from_siblings=int(t.n_from_siblings),
                    n_recorded=int(t.n_recorded),
                    best_ms=float(t.best_ms),
                    gradient=float(t.gradient),
                    is_done=bool(t.is_done),
                )
            )
        return result

    @property
    def last_error(self) -> str:
        return text(lib().rlt_model_tuning_last_error(self._h()))

