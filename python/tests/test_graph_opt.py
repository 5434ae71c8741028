"""Graph substitutions from Python (rltune.graph_opt, rltune/GraphRewrite-v0):
the shipped rules verified and listed, a wrong rule file refused with its
counterexample, graph_opt's greedy search on a small network the rules
rewrite (written back as ONNX and run by ONNX Runtime when it is there),
the environment's observations, steps and mask, and the Gymnasium env
through gym.make, checked by gymnasium's env checker where it applies."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import rltune
from rltune import GraphEnv, InvalidArgumentError, Model, Rules, graph_opt

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def _write_model(path: Path) -> Path:
    """x -> Identity -> Conv(3->8) -> per-channel Mul -> output: folding the
    Mul into the Conv and removing the Identity always pay."""
    rng = np.random.default_rng(0)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 10, 10])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 10, 10])
    inits = [
        numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w"),
        numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b"),
        numpy_helper.from_array(rng.uniform(0.5, 2, (1, 8, 1, 1)).astype(np.float32), "k"),
    ]
    nodes = [
        helper.make_node("Identity", ["x"], ["xi"], name="id"),
        helper.make_node("Conv", ["xi", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Mul", ["c", "k"], ["y"], name="scale"),
    ]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, path)
    return path


@pytest.fixture(scope="module")
def rules() -> Rules:
    return Rules()


def test_shipped_rules_verified_and_listed(rules: Rules) -> None:
    assert len(rules) >= 20
    names = rules.names()
    assert "merge_sibling_convs" in names and "fold_mul_into_conv" in names
    info = rules.info(names.index("fold_batchnorm_into_conv"))
    assert info.is_verified and not info.is_exact and info.n_checks == 2 and info.doc


def test_a_wrong_rule_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.rules"
    bad.write_text("rule relu_splits\n  src s = Add(a, b)\n  src y = Relu(s)\n  dst ra = Relu(a)\n"
                   "  dst rb = Relu(b)\n  dst y2 = Add(ra, rb)\n  out y -> y2\n  check a=f32[4,5] b=f32[4,5]\nend\n")
    with pytest.raises(InvalidArgumentError, match="differs at element"):
        Rules(bad)


def test_graph_opt_greedy_writes_a_graph_onnx_runtime_runs(tmp_path: Path, rules: Rules) -> None:
    m = Model(_write_model(tmp_path / "net.onnx"))
    better, res = graph_opt(m, rules, search="greedy")
    assert res.cost_after_ms < res.cost_before_ms
    assert {s.rule for s in res.steps} >= {"fold_mul_into_conv", "remove_identity"}
    assert res.n_nodes_after == 1 and res.n_cost_evals >= 3
    out = tmp_path / "opt.onnx"
    better.save_onnx(out)
    ort = pytest.importorskip("onnxruntime")
    x = np.random.default_rng(1).standard_normal((1, 3, 10, 10)).astype(np.float32)
    ref = ort.InferenceSession(str(tmp_path / "net.onnx")).run(None, {"x": x})[0]
    got = ort.InferenceSession(str(out)).run(None, {"x": x})[0]
    assert np.max(np.abs(got - ref)) <= 1e-4 * np.max(np.abs(ref))


def test_graph_opt_costs_kernels_by_their_best_seeds(tmp_path: Path, rules: Rules) -> None:
    import sqlite3

    m = Model(_write_model(tmp_path / "net.onnx"))
    db = tmp_path / "r.db"
    _, res = graph_opt(m, rules, search="none", db_path=db)  # with a database: 3 seeds a kernel
    _, res2 = graph_opt(m, rules, search="none", db_path=tmp_path / "one.db", cost_seeds=1)
    assert res.n_tasks_measured == res2.n_tasks_measured >= 1
    count = lambda p: sqlite3.connect(p).execute("SELECT COUNT(*) FROM measurements").fetchone()[0]
    assert count(db) == 3 * res.n_tasks_measured and count(tmp_path / "one.db") == res2.n_tasks_measured
    with pytest.raises(InvalidArgumentError, match="seeds measured per task"):
        graph_opt(m, rules, search="none", cost_seeds=9)


def test_rl_search_with_the_shipped_policy(tmp_path: Path, rules: Rules) -> None:
    m = Model(_write_model(tmp_path / "net.onnx"))
    _, res = graph_opt(m, rules, search="rl", policy=rltune.GraphPolicy())
    assert res.cost_after_ms <= res.cost_before_ms and res.n_cost_evals <= 21


def test_environment_steps_and_mask(tmp_path: Path, rules: Rules) -> None:
    m = Model(_write_model(tmp_path / "net.onnx"))
    env = GraphEnv(rules, horizon=5)
    obs = env.reset(m)
    assert obs.features.shape == (3, env.n_features) and obs.edges.shape == (2, 2)
    assert obs.mask[-1] == 1 and len(obs.candidates()) == len(obs.cand_rule)
    names = rules.names()
    fold = next(a for a in obs.candidates() if names[obs.cand_rule[a]] == "fold_mul_into_conv")
    reward, done = env.step(fold)
    assert reward > 0 and not done
    with pytest.raises(InvalidArgumentError, match="masked"):
        env.step(200)
    reward, done = env.step(env.n_actions - 1)
    assert done and reward == 0
    assert env.best_model().path


def test_gymnasium_env(tmp_path: Path, rules: Rules) -> None:
    env = gym.make("rltune/GraphRewrite-v0", model=str(_write_model(tmp_path / "net.onnx")), rules=rules, horizon=4,
                   max_candidates=32)
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert info["action_mask"].shape == (33,) and info["action_mask"][-1] == 1
    total, terminated, truncated = 0.0, False, False
    while not (terminated or truncated):
        action = env.action_space.sample(info["action_mask"])
        obs, reward, terminated, truncated, info = env.step(action)
        total += reward
    assert info["best_cost_ms"] <= info["cost0_ms"]
    env.close()


def test_gymnasium_env_checker_and_kwargs(tmp_path: Path, rules: Rules) -> None:
    path = str(_write_model(tmp_path / "net.onnx"))
    env = gym.make("rltune/GraphRewrite-v0", model=path, rules=rules, horizon=4, max_candidates=32)
    check_env(env.unwrapped)
    # a masked action is a no-op step by default, an error on request
    obs, info = env.reset(seed=1)
    _, reward, terminated, _, info = env.step(30)
    assert reward == 0 and not terminated and not info["is_legal"]
    strict = gym.make("rltune/GraphRewrite-v0", model=path, rules=rules, max_candidates=32, illegal_action="raise")
    strict.reset(seed=1)
    with pytest.raises(InvalidArgumentError, match="masked"):
        strict.step(30)
    with pytest.raises(ValueError, match="needs model="):
        gym.make("rltune/GraphRewrite-v0", rules=rules)
    with pytest.raises(ValueError, match="the horizon must be"):
        gym.make("rltune/GraphRewrite-v0", model=path, rules=rules, horizon=0)
    with pytest.raises(ValueError, match="reward must be"):
        gym.make("rltune/GraphRewrite-v0", model=path, rules=rules, reward="fast")
