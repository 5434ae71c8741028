"""rltune: an autotuner and kernel compiler for deep-learning tensor
programs and whole networks, from Python. Binds librltune.so through its
public C API with cffi (ABI mode: nothing compiled at install).
docs/python.md.

Importing the package registers the Gymnasium environments
rltune/LoopNest-v0 (with its vector form, gymnasium.make_vec),
rltune/Knobs-v0 and rltune/GraphRewrite-v0; librltune itself is loaded on first use
(rltune._lib.find_library says where it is looked for).
"""

from __future__ import annotations

import gymnasium

from ._lib import find_library, library_path
from .arrays import Array, load_npy, save_npy
from .env import (
    ACTION_NAMES,
    EnvDatasetResult,
    EnvStats,
    EvalRequest,
    EvalResult,
    Evaluator,
    LoopTuneEnv,
    make_env_dataset,
)
from .errors import (
    IllegalScheduleError,
    InternalError,
    InvalidArgumentError,
    LibraryNotFoundError,
    MeasurementError,
    ParseError,
    RltuneError,
    RltuneIOError,
    RltuneMemoryError,
)
from .graph_gym import GraphRewriteEnv
from .graph_opt import GraphEnv, GraphObservation, GraphOptResult, GraphOptStep, GraphPolicy, RuleInfo, Rules, graph_opt
from .gym_env import LoopNestEnv
from .knobs import ConfigMeasurer, ConfigResult, DatasetInfo, DatasetResult, KnobSpace, measure_dataset
from .knobs_env import KnobsEnv
from .measure import BuildOptions, Machine, RunOptions, RunResult, Workload, build_command, machine, measure
from .model import (
    ExportResult,
    LatencyPoint,
    Model,
    ModelTensor,
    ModelTuning,
    ModelTuningSummary,
    Net,
    NetStep,
    NetTask,
    OtherKernel,
    Task,
    TuningTask,
    channel_block,
)
from .op import Op, OpInfo, OpParam, op_library
from .records import Database, Record, RecordTarget, config_key_get
from .schedule import CSource, Nest, Schedule
from .session import Session, SessionSummary, session_target, tuner_names, tuner_summary
from .vector_env import LoopNestVectorEnv

__version__ = "0.1.0"


def version() -> str:
    """The version of the loaded librltune ("0.1.0")."""
    from ._lib import lib, text

    return text(lib().rlt_version())


def _register() -> None:
    if "rltune/LoopNest-v0" not in gymnasium.registry:
        gymnasium.register(
            id="rltune/LoopNest-v0",
            entry_point="rltune.gym_env:LoopNestEnv",
            vector_entry_point="rltune.vector_env:LoopNestVectorEnv",
        )
    if "rltune/Knobs-v0" not in gymnasium.registry:
        gymnasium.register(id="rltune/Knobs-v0", entry_point="rltune.knobs_env:KnobsEnv")
    if "rltune/GraphRewrite-v0" not in gymnasium.registry:
        gymnasium.register(id="rltune/GraphRewrite-v0", entry_point="rltune.graph_gym:GraphRewriteEnv")


_register()

__all__ = [
    "ACTION_NAMES", "Array", "BuildOptions", "GraphEnv", "GraphObservation", "GraphOptResult", "GraphOptStep",
    "GraphPolicy", "GraphRewriteEnv", "RuleInfo", "Rules", "graph_opt", "CSource", "ConfigMeasurer", "ConfigResult", "Database", "DatasetInfo",
    "DatasetResult", "EnvDatasetResult", "EnvStats", "EvalRequest", "EvalResult", "Evaluator", "ExportResult",
    "IllegalScheduleError",
    "InternalError", "InvalidArgumentError", "KnobSpace", "KnobsEnv", "LatencyPoint", "LibraryNotFoundError",
    "LoopNestEnv", "LoopNestVectorEnv", "LoopTuneEnv", "Machine", "MeasurementError", "Model", "ModelTensor", "ModelTuning",
    "ModelTuningSummary", "Nest", "Net", "NetStep", "NetTask", "Op", "OpInfo", "OpParam", "OtherKernel",
    "ParseError", "Record", "RecordTarget", "RltuneError", "RltuneIOError", "RltuneMemoryError", "RunOptions",
    "RunResult", "Schedule", "Session", "SessionSummary", "Task", "TuningTask", "Workload", "build_command",
    "channel_block", "config_key_get", "find_library", "library_path", "load_npy", "machine", "make_env_dataset", "measure", "measure_dataset",
    "op_library", "save_npy", "session_target", "tuner_names", "tuner_summary", "version",
]
