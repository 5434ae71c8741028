"""Graph substitutions (rltune/graph_opt.h): verified rewrite rules, the
searches over a model's graph (greedy, TASO's backtracking, a trained
policy), the graph-rewrite environment and RLFlow's policy.
docs/graph-opt.md and docs/python.md ("Graph substitutions").

    rules = Rules()                       # the shipped set, verified
    better, result = graph_opt(Model("net.onnx"), rules, search="taso")
    print(result.cost_before_ms, "->", result.cost_after_ms, [s.rule for s in result.steps])
    better.save_onnx("better.onnx")

    env = GraphEnv(rules)
    obs = env.reset(Model("net.onnx"))
    reward, done = env.step(obs.candidates()[0])

The Gymnasium environment is rltune/GraphRewrite-v0 (rltune.graph_gym).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import numpy.typing as npt

from ._lib import Handle, check, ffi, lib, new_diag
from .model import Model

MAX_ANCHORS = 12  #: RLT_GRAPH_ENV_MAX_ANCHORS: nodes a candidate names


@dataclass(frozen=True)
class RuleInfo:
    """One rule (rlt_rule_info)."""

    name: str
    doc: str
    file: str
    line: int
    n_src: int
    n_dst: int
    n_checks: int
    is_verified: bool
    is_exact: bool
    max_error: float


class Rules(Handle):
    """A set of rewrite rules: the shipped ones (path None) or a file's,
    plus any added; verified on construction unless verify=False (a rule
    that fails raises InvalidArgumentError with its counterexample)."""

    def __init__(self, path: Optional[str | os.PathLike[str]] = None, *, verify: bool = True, seed: int = 1) -> None:
        L = lib()
        out = ffi.new("rlt_rules **")
        d = new_diag()
        check(L.rlt_rules_load(os.fsencode(path) if path is not None else ffi.NULL, out, d), d)
        self._ptr: Any = ffi.gc(out[0], L.rlt_rules_destroy)
        if verify:
            self.verify(seed)

    def __deepcopy__(self, memo: dict) -> "Rules":
        # shared, not copied: a verified set is only read (Gymnasium copies an
        # env's kwargs when it makes it again)
        return self

    def __copy__(self) -> "Rules":
        return self

    def add(self, path: str | os.PathLike[str]) -> None:
        """Adds a file's rules (not verified: call verify())."""
        d = new_diag()
        check(lib().rlt_rules_add(self._h(), os.fsencode(path), d), d)

    def verify(self, seed: int = 1) -> None:
        d = new_diag()
        check(lib().rlt_rules_verify(self._h(), seed, d), d)

    def _h(self) -> Any:
        if self._ptr is None:
            raise ValueError("the rules are closed")
        return self._ptr

    def __len__(self) -> int:
        return int(lib().rlt_rules_count(self._h()))

    def info(self, i: int) -> RuleInfo:
        if not 0 <= i < len(self):
            raise IndexError(i)
        r = ffi.new("rlt_rule_info *")
        lib().rlt_rule_info_get(self._h(), i, r)
        return RuleInfo(
            name=ffi.string(r.name).decode(),
            doc=ffi.string(r.doc).decode(errors="replace"),
            file=ffi.string(r.file).decode(errors="replace"),
            line=int(r.line),
            n_src=int(r.n_src),
            n_dst=int(r.n_dst),
            n_checks=int(r.n_checks),
            is_verified=bool(r.is_verified),
            is_exact=bool(r.is_exact),
            max_error=float(r.max_error),
        )

    def names(self) -> list[str]:
        return [self.info(i).name for i in range(len(self))]


class GraphPolicy(Handle):
    """A trained graph-rewrite policy: a file of rltune graph-train, or
    (path None) the one shipped with rltune (models/graph_rewrite.rlp,
    built into the library)."""

    def __init__(self, path: Optional[str | os.PathLike[str]] = None) -> None:
        L = lib()
        out = ffi.new("rlt_graph_policy **")
        d = new_diag()
        if path is None:
            check(L.rlt_graph_policy_default(out, d), d)
        else:
            check(L.rlt_graph_policy_load(os.fsencode(path), out, d), d)
        self._ptr: Any = ffi.gc(out[0], L.rlt_graph_policy_destroy)

    def _h(self) -> Any:
        if self._ptr is None:
            raise ValueError("the policy is closed")
        return self._ptr

    def save(self, path: str | os.PathLike[str]) -> None:
        d = new_diag()
        check(lib().rlt_graph_policy_save(self._h(), os.fsencode(path), d), d)

    def act(self, env: "GraphEnv", greedy: bool = True, seed: int = 1) -> int:
        """The action the policy takes in env's current state."""
        state = ffi.new("uint64_t *", seed)
        a = ffi.new("int *")
        d = new_diag()
        check(lib().rlt_graph_policy_act(self._h(), env.rules._h(), env._obs_c(), greedy, state, a, d), d)
        return int(a[0])


@dataclass(frozen=True)
class GraphOptStep:
    rule: str
    where: str
    cost_ms: float


@dataclass(frozen=True)
class GraphOptResult:
    """What a search did (rlt_graph_opt_result)."""

    cost_before_ms: float
    cost_after_ms: float
    n_nodes_before: int
    n_nodes_after: int
    steps: tuple[GraphOptStep, ...]
    n_cost_evals: int
    n_expanded: int
    n_candidates: int
    search_s: float
    n_tasks_measured: int = 0      # kernels costed by measuring their seeds
    n_tasks_from_records: int = 0  # kernels costed by a record


def graph_opt(
    model: Model,
    rules: Rules,
    *,
    search: str = "greedy",
    policy: Optional[GraphPolicy] = None,
    alpha: float = 1.05,
    budget: int = 200,
    horizon: int = 20,
    time_limit_s: float = 0.0,
    db_path: Optional[str | os.PathLike[str]] = None,
    threads: int = 1,
    seed: int = 1,
    cold_weights: bool = True,
    cost_seeds: int = 0,
) -> tuple[Model, GraphOptResult]:
    """Searches rewrites of model's graph (rlt_model_graph_opt): "greedy",
    "taso", "rl" (with policy) or "none", its kernels costed cold (as
    ModelTuning times them; `cold_weights=False`: warm), a kernel without a
    record by the best of its first `cost_seeds` seeds (0: 3 with db_path,
    1 without). Returns the best graph as a new Model and what the search
    did."""
    L = lib()
    o = ffi.new("rlt_graph_opt_options *")
    L.rlt_graph_opt_options_init(o)
    keep = [ffi.new("char[]", search.encode())]
    o.search = keep[0]
    o.alpha = alpha
    o.budget = budget
    o.horizon = horizon
    o.time_limit_s = time_limit_s
    o.n_threads = threads
    o.seed = seed
    o.cold_weights = cold_weights
    o.n_seeds = cost_seeds
    if db_path is not None:
        keep.append(ffi.new("char[]", os.fsencode(db_path)))
        o.db_path = keep[-1]
    if policy is not None:
        o.policy = policy._h()
    out = ffi.new("rlt_model **")
    res = ffi.new("rlt_graph_opt_result *")
    d = new_diag()
    check(L.rlt_model_graph_opt(model._h(), rules._h(), o, out, res, d), d)
    try:
        steps = tuple(
            GraphOptStep(ffi.string(res.steps[i].rule).decode(), ffi.string(res.steps[i].where).decode(errors="replace"),
                         float(res.steps[i].cost_ms))
            for i in range(res.n_steps)
        )
        result = GraphOptResult(
            cost_before_ms=float(res.cost_before_ms),
            cost_after_ms=float(res.cost_after_ms),
            n_nodes_before=int(res.n_nodes_before),
            n_nodes_after=int(res.n_nodes_after),
            steps=steps,
            n_cost_evals=int(res.n_cost_evals),
            n_expanded=int(res.n_expanded),
            n_candidates=int(res.n_candidates),
            n_tasks_measured=int(res.n_tasks_measured),
            n_tasks_from_records=int(res.n_tasks_from_records),
            search_s=float(res.search_s),
        )
    finally:
        L.rlt_graph_opt_result_free(res)
    return Model._adopt(out[0], model.path), result


@dataclass
class GraphObservation:
    """A copy of the environment's observation (rlt_graph_env_obs)."""

    features: npt.NDArray[np.float32]   # [n_nodes x n_features]
    edges: npt.NDArray[np.int64]        # [n_edges x 2]: producer, reader
    cand_rule: npt.NDArray[np.int64]    # [n_candidates]
    cand_nodes: npt.NDArray[np.int64]   # [n_candidates x MAX_ANCHORS], -1 padded
    mask: npt.NDArray[np.int8]          # [n_actions]
    cost_ms: float
    cost0_ms: float
    best_cost_ms: float
    step: int
    horizon: int
    done: bool
    is_refused: bool

    def candidates(self) -> list[int]:
        """The actions that apply a candidate (not stop)."""
        return [int(a) for a in np.flatnonzero(self.mask[:-1])]


def feature_names() -> list[str]:
    L = lib()
    return [ffi.string(L.rlt_graph_env_feature_name(i)).decode() for i in range(L.rlt_graph_env_n_features())]


class GraphEnv(Handle):
    """The graph-rewrite environment over verified rules (rlt_graph_env):
    reset(model) then step(action) until done; action n_actions - 1 stops.
    reward="step" is X-RLflow's 100 x (c_prev - c_new) / c_0, "best" the
    drop of the best cost so far. Kernels are costed cold, as graph_opt
    costs them (`cold_weights=False`: warm records, seeds timed warm), and
    by the best of their first `cost_seeds` seeds (0: graph_opt's default)."""

    def __init__(
        self,
        rules: Rules,
        *,
        horizon: int = 50,
        max_candidates: int = 256,
        reward: str = "step",
        step_penalty: float = 0.0,
        db_path: Optional[str | os.PathLike[str]] = None,
        threads: int = 1,
        seed: int = 1,
        cold_weights: bool = True,
        cost_seeds: int = 0,
    ) -> None:
        L = lib()
        o = ffi.new("rlt_graph_env_options *")
        L.rlt_graph_env_options_init(o)
        if reward not in ("step", "best"):
            raise ValueError(f"reward must be 'step' or 'best', not {reward!r}")
        o.horizon = horizon
        o.max_candidates = max_candidates
        o.reward = 0 if reward == "step" else 1
        o.step_penalty = step_penalty
        o.n_threads = threads
        o.seed = seed
        o.cold_weights = cold_weights
        o.n_seeds = cost_seeds
        db = ffi.new("char[]", os.fsencode(db_path)) if db_path is not None else ffi.NULL
        o.db_path = db
        out = ffi.new("rlt_graph_env **")
        d = new_diag()
        check(L.rlt_graph_env_create(rules._h(), o, out, d), d)
        self.rules = rules  # the environment borrows them
        self._ptr: Any = ffi.gc(out[0], L.rlt_graph_env_destroy)
        self.n_actions = max_candidates + 1
        self.n_features = int(L.rlt_graph_env_n_features())

    def _h(self) -> Any:
        if self._ptr is None:
            raise ValueError("the environment is closed")
        return self._ptr

    def _obs_c(self) -> Any:
        o = ffi.new("rlt_graph_env_obs *")
        lib().rlt_graph_env_observe(self._h(), o)
        return o

    def reset(self, model: Model) -> GraphObservation:
        d = new_diag()
        check(lib().rlt_graph_env_reset(self._h(), model._h(), d), d)
        return self.observe()

    def step(self, action: int) -> tuple[float, bool]:
        r = ffi.new("double *")
        done = ffi.new("bool *")
        d = new_diag()
        check(lib().rlt_graph_env_step(self._h(), int(action), r, done, d), d)
        return float(r[0]), bool(done[0])

    def observe(self) -> GraphObservation:
        o = self._obs_c()
        n, f, e, k = o.n_nodes, o.n_features, o.n_edges, o.n_candidates

        def arr(ptr: Any, count: int, ctype: str, dtype: Any) -> np.ndarray:
            if count == 0:
                return np.zeros(0, dtype=dtype)
            return np.frombuffer(ffi.buffer(ptr, count * ffi.sizeof(ctype)), dtype=dtype).copy()

        return GraphObservation(
            features=arr(o.features, n * f, "float", np.float32).reshape(n, f),
            edges=arr(o.edges, 2 * e, "int", np.int32).astype(np.int64).reshape(e, 2),
            cand_rule=arr(o.cand_rule, k, "int", np.int32).astype(np.int64),
            cand_nodes=arr(o.cand_nodes, k * MAX_ANCHORS, "int", np.int32).astype(np.int64).reshape(k, MAX_ANCHORS),
            mask=arr(o.mask, o.n_actions, "unsigned char", np.uint8).astype(np.int8),
            cost_ms=float(o.cost_ms),
            cost0_ms=float(o.cost0_ms),
            best_cost_ms=float(o.best_cost_ms),
            step=int(o.step),
            horizon=int(o.horizon),
            done=bool(o.done),
            is_refused=bool(o.is_refused),
        )

    def best_model(self, path_hint: str = "<graph env>") -> Model:
        out = ffi.new("rlt_model **")
        d = new_diag()
        check(lib().rlt_graph_env_best_model(self._h(), out, d), d)
        return Model._adopt(out[0], path_hint)

    @property
    def n_cost_evals(self) -> int:
        return int(lib().rlt_graph_env_n_cost_evals(self._h()))
