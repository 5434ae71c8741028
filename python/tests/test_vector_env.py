"""rltune/LoopNest-v0's vector form, LoopNestVectorEnv (one
rlt_env_vec_step per step): made by gym.make_vec; step for step the same
as gymnasium's SyncVectorEnv of LoopNest-v0 envs (every autoreset mode,
masked actions, truncation) and as the same rollouts done env by env;
masks batched; seeded rollouts repeat; actions of any int dtype and
layout; errors as LoopNest-v0's, nothing changed by a refused step.
Gymnasium has no checker for vector envs: the SyncVectorEnv comparison
stands in for one."""

from __future__ import annotations

import warnings
import weakref
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import AutoresetMode

import rltune
from rltune import EvalRequest, LoopNestVectorEnv
from rltune.env import N_ACTIONS, OBS_LEN, OBS_MASK

OP = "matmul:M=32,N=32,K=32"
TINY = "matmul:M=8,N=8,K=8"
SMALL = "matmul:M=16,N=16,K=16"
DOWN, STOP = rltune.ACTION_NAMES.index("down"), rltune.ACTION_NAMES.index("stop")
UP, SPLIT_2 = rltune.ACTION_NAMES.index("up"), rltune.ACTION_NAMES.index("split_2")


@pytest.fixture(scope="module")
def replay() -> str:
    """measure= for the examples' state dataset of OP (4 steps deep)."""
    for d in Path(__file__).resolve().parents:
        path = d / "examples" / "python" / "data" / "matmul32.states"
        if path.is_file():
            return f"replay:{path}"
    pytest.skip("examples/python/data/matmul32.states is not above this test")


def fake_gflops(req: EvalRequest) -> float:
    """A deterministic stand-in for measuring: a number from the state's hash."""
    return 1.0 + (req.nest_hash % 997) / 10.0


SCORED: dict[str, Any] = {"measure": fake_gflops, "peak_gflops": 100.0}


def make_vec(num_envs: int, **kwargs: Any) -> LoopNestVectorEnv:
    env = gym.make_vec("rltune/LoopNest-v0", num_envs=num_envs, vectorization_mode="vector_entry_point", **kwargs)
    assert isinstance(env, LoopNestVectorEnv)
    return env


def pick_actions(rng: np.random.Generator, masks: np.ndarray, p_any: float = 0.1, p_stop: float = 0.1) -> np.ndarray:
    """A legal action per env (stop now and then), or with probability
    p_any any action, legal or not."""
    actions = np.empty(len(masks), dtype=np.int64)
    for i, mask in enumerate(masks):
        legal = np.flatnonzero(mask)
        if len(legal) == 0 or rng.random() < p_any:
            actions[i] = rng.integers(N_ACTIONS)
        elif mask[STOP] and rng.random() < p_stop:
            actions[i] = STOP
        else:
            actions[i] = rng.choice(legal[legal != STOP]) if len(legal) > 1 else legal[0]
    return actions


def assert_same(a: Any, b: Any, what: str) -> None:
    assert data_equivalence(a, b, exact=True), f"{what}:\n{a!r}\n!=\n{b!r}"


# ---- registration and spaces ---------------------------------------------------


def test_make_vec_uses_the_vector_entry_point_without_warnings(replay: str) -> None:
    spec = gym.spec("rltune/LoopNest-v0")
    assert spec.vector_entry_point == "rltune.vector_env:LoopNestVectorEnv"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env = gym.make_vec("rltune/LoopNest-v0", num_envs=3, op=OP, measure=replay)  # the default mode
    assert isinstance(env, LoopNestVectorEnv) and env.num_envs == 3
    assert env.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    assert env.spec is not None and env.spec.kwargs["vectorization_mode"] == "vector_entry_point"
    sync = gym.make_vec("rltune/LoopNest-v0", num_envs=3, vectorization_mode="sync", op=OP, measure=replay)
    assert isinstance(sync, gym.vector.SyncVectorEnv)
    assert env.single_observation_space == sync.single_observation_space
    assert env.observation_space == sync.observation_space and env.action_space == sync.action_space
    env.close()
    sync.close()


def test_reset_gives_batched_observations_and_masks(replay: str) -> None:
    env = make_vec(4, op=OP, measure=replay)
    obs, info = env.reset(seed=0)
    assert obs.shape == (4, OBS_LEN) and obs.dtype == np.float32 and obs in env.observation_space
    masks = info["action_mask"]
    assert masks.shape == (4, N_ACTIONS) and masks.dtype == np.int8
    np.testing.assert_array_equal(obs[:, OBS_MASK:], masks.astype(np.float32))  # the observation's last block
    assert (masks[:, STOP] == 1).all() and (info["n_steps"] == 0).all() and info["is_legal"].all()
    assert info["_action_mask"].all() and info["gflops"].dtype == np.float64
    assert (info["gflops"] == env.cores[0].gflops).all() and info["gflops"][0] > 0
    obs, rewards, terminated, truncated, info = env.step(np.full(4, DOWN))
    assert rewards.shape == (4,) and rewards.dtype == np.float64 and (rewards == 0).all()
    assert terminated.dtype == np.bool_ and not terminated.any() and not truncated.any()
    assert (info["n_steps"] == 1).all() and all(core.cursor == 1 for core in env.cores)
    frames = env.render()
    assert frames is None
    env.close()


# ---- the same as SyncVectorEnv, and as single envs ----------------------------------


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED])
@pytest.mark.parametrize("scoring", ["replay", "evaluator"])
def test_steps_as_gymnasiums_sync_vector_env_does(replay: str, mode: AutoresetMode, scoring: str) -> None:
    kwargs: dict[str, Any] = {"op": OP, "measure": replay} if scoring == "replay" else {"op": SMALL, **SCORED}
    kwargs["max_steps"] = 6
    ours = make_vec(5, autoreset_mode=mode, **kwargs)
    sync = gym.make_vec("rltune/LoopNest-v0", num_envs=5, vectorization_mode="sync",
                        vector_kwargs={"autoreset_mode": mode}, **kwargs)
    obs, info = ours.reset(seed=1)
    obs_s, info_s = sync.reset(seed=1)
    assert_same(obs, obs_s, "reset observations")
    assert_same(info, info_s, "reset info")
    rng = np.random.default_rng(2)
    n_ended = n_illegal = 0
    ended = np.zeros(5, dtype=bool)
    for t in range(150):
        if mode == AutoresetMode.DISABLED and ended.any():  # the caller resets the envs whose episode ended
            got_reset = ours.reset(options={"reset_mask": ended.copy()})
            want_reset = sync.reset(options={"reset_mask": ended.copy()})
            assert_same(got_reset, want_reset, f"step {t}: reset of {ended}")
            info = got_reset[1]
            info = {**info, "action_mask": got_reset[0][:, OBS_MASK:].astype(np.int8)}  # every env's mask
        actions = pick_actions(rng, info["action_mask"])
        got = ours.step(actions)
        want = sync.step(actions)
        for name, a, b in zip(("observations", "rewards", "terminated", "truncated", "info"), got, want):
            assert_same(a, b, f"step {t}, actions {actions}: {name}")
        info = got[4]
        ended = got[2] | got[3]
        n_ended += int(ended.sum())
        n_illegal += int((~info["is_legal"]).sum())
    assert n_ended > 10 and n_illegal > 10  # episodes ended, by stop and by the limit; masked actions were no-ops
    ours.close()
    sync.close()


def test_a_seeded_vector_rollout_is_the_env_by_env_rollouts(replay: str) -> None:
    n = 4

    def vector_rollout(seed: int) -> list[tuple[Any, ...]]:
        env = make_vec(n, op=OP, measure=replay, max_steps=5)
        obs, info = env.reset(seed=seed)
        trace: list[tuple[Any, ...]] = [(None, obs, info)]
        for _ in range(60):
            actions = pick_actions(env.np_random, info["action_mask"])
            obs, rewards, terminated, truncated, info = env.step(actions)
            trace.append((actions, obs, rewards, terminated, truncated, info))
        env.close()
        return trace

    trace = vector_rollout(seed=3)
    again = vector_rollout(seed=3)
    assert_same(trace, again, "the same seed")
    assert not data_equivalence([t[0] for t in vector_rollout(seed=4)[1:]], [t[0] for t in trace[1:]])

    # env by env: LoopNest-v0 stepped with the same actions, reset after an episode ends (gymnasium's
    # next-step autoreset: that step's action is ignored)
    singles = [gym.make("rltune/LoopNest-v0", op=OP, measure=replay, max_steps=5) for _ in range(n)]
    for i, env in enumerate(singles):
        obs, info = env.reset(seed=3 + i)
        np.testing.assert_array_equal(obs, trace[0][1][i])
        np.testing.assert_array_equal(info["action_mask"], trace[0][2]["action_mask"][i])
    ended = [False] * n
    for t, (actions, obs_v, rewards_v, term_v, trunc_v, info_v) in enumerate(trace[1:]):
        for i, env in enumerate(singles):
            if ended[i]:
                obs, info = env.reset()
                reward, terminated, truncated = 0.0, False, False
            else:
                obs, reward, terminated, truncated, info = env.step(int(actions[i]))
            ended[i] = terminated or truncated
            what = f"step {t}, env {i}"
            np.testing.assert_array_equal(obs, obs_v[i], err_msg=what)
            assert (reward, terminated, truncated) == (rewards_v[i], term_v[i], trunc_v[i]), what
            np.testing.assert_array_equal(info["action_mask"], info_v["action_mask"][i], err_msg=what)
            assert info["gflops"] == info_v["gflops"][i], what
            assert info["n_steps"] == info_v["n_steps"][i], what
            assert info.get("is_legal", True) == info_v["is_legal"][i], what
    for env in singles:
        env.close()


# ---- masked actions, errors ---------------------------------------------------


def state_of(env: LoopNestVectorEnv) -> list[tuple[int, int]]:
    return [(core.state_hash, core.cursor) for core in env.cores]


def test_a_masked_action_is_a_noop_in_its_env_or_raises_naming_it() -> None:
    env = make_vec(3, op=TINY, **SCORED)
    obs, _ = env.reset(seed=0)
    # the cursors are on the outermost loop: up is masked
    obs2, rewards, terminated, truncated, info = env.step(np.array([DOWN, UP, SPLIT_2]))
    assert info["is_legal"].tolist() == [True, False, True]
    assert rewards[1] == 0.0 and not terminated[1] and info["n_steps"].tolist() == [1, 1, 1]
    np.testing.assert_array_equal(obs2[1], obs[1])
    assert [core.cursor for core in env.cores] == [1, 0, 0]

    strict = make_vec(3, op=TINY, illegal_action="raise", **SCORED)
    strict.reset(seed=0)
    before = state_of(strict)
    with pytest.raises(rltune.IllegalScheduleError, match=r"^envs\[2\] of 3: up: the cursor is on the outermost"):
        strict.step(np.array([DOWN, DOWN, UP]))
    assert state_of(strict) == before  # no env stepped
    _, _, _, _, info = strict.step(np.array([DOWN, DOWN, DOWN]))
    assert (info["n_steps"] == 1).all() and info["is_legal"].all()
    env.close()
    strict.close()


@pytest.mark.parametrize(
    "actions, words",
    [
        (np.array([0, 1]), "must be 3 ints"),
        (np.array([0.0, 1.0, 2.0]), "must be 3 ints"),
        ([[0, 1, 2]], "must be 3 ints"),
        (np.array([0, -1, 2]), r"actions\[1\] = -1 is out of range: 0..16"),
        (np.array([0, 1, 17]), r"actions\[2\] = 17 is out of range"),
        (np.array([0, 2**32 + 1, 2]), r"actions\[1\] = 4294967297 is out of range"),
        (np.array([0, 1, 2**32 + 1], dtype=np.uint64), r"actions\[2\] = 4294967297 is out of range"),
        (np.array([0, 255, 1], dtype=np.uint8), r"actions\[1\] = 255 is out of range"),
        (np.array([0, 2**63, 1], dtype=np.uint64), r"actions\[1\] = 9223372036854775808 is out of range"),
        (np.array([0, -(2**63), 1]), r"actions\[1\] = -9223372036854775808 is out of range"),
    ],
)
def test_bad_actions_raise_value_error_and_change_nothing(actions: Any, words: str) -> None:
    env = make_vec(3, op=TINY, **SCORED)
    env.reset(seed=0)
    before = state_of(env)
    with pytest.raises(ValueError, match=words):
        env.step(actions)
    assert state_of(env) == before and (env.step(np.array([DOWN, DOWN, DOWN]))[4]["n_steps"] == 1).all()
    env.close()


def test_actions_of_any_int_dtype_and_layout_step_alike(replay: str) -> None:
    def rollout(convert: Any) -> list[Any]:
        env = make_vec(4, op=OP, measure=replay, max_steps=4)
        obs, info = env.reset(seed=5)
        rng = np.random.default_rng(5)
        trace = [obs]
        for _ in range(20):
            actions = pick_actions(rng, info["action_mask"], p_any=0.2)
            obs, rewards, terminated, truncated, info = env.step(convert(actions))
            trace += [obs, rewards, terminated, truncated, info]
        env.close()
        return trace

    want = rollout(lambda a: a)
    for convert in (
        lambda a: a.astype(np.int32),
        lambda a: a.astype(np.uint8),
        lambda a: a.astype(np.uint64),
        lambda a: [int(x) for x in a],
        lambda a: np.repeat(a, 2)[::2],  # not contiguous
        lambda a: a.astype(">i8"),  # not native
    ):
        assert_same(rollout(convert), want, "the same actions as int64")


def test_an_autoreset_ignores_the_action_of_the_env_it_resets() -> None:
    env = make_vec(3, op=TINY, **SCORED)
    env.reset(seed=0)
    _, _, terminated, _, _ = env.step(np.array([STOP, DOWN, DOWN]))
    assert terminated.tolist() == [True, False, False]
    obs, rewards, terminated, truncated, info = env.step(np.array([N_ACTIONS + 5, UP, UP]))  # env 0's is not read
    assert info["n_steps"].tolist() == [0, 2, 2] and rewards[0] == 0.0 and not terminated.any()
    assert info["action_mask"][0, STOP] == 1
    env.close()


def test_step_before_reset_raises() -> None:
    env = make_vec(2, op=TINY, **SCORED)
    with pytest.raises(rltune.InvalidArgumentError, match="call reset"):
        env.step(np.array([DOWN, DOWN]))
    env.close()


def test_an_evaluators_failure_raises_and_changes_no_env() -> None:
    calls: list[str] = []
    broken = {"now": False}

    def evaluate(req: EvalRequest) -> float:
        if broken["now"]:
            raise RuntimeError("no compiler today")
        calls.append(req.schedule)
        return fake_gflops(req)

    env = make_vec(3, op=SMALL, measure=evaluate, peak_gflops=100.0)
    env.reset(seed=0)
    assert len(calls) == 1  # the start state, once for the three clones (they share the cache)
    env.step(np.array([SPLIT_2, SPLIT_2, DOWN]))
    assert len(calls) == 2  # the state two envs reached, once
    before = state_of(env)
    broken["now"] = True
    with pytest.raises(rltune.InvalidArgumentError, match=r"envs\[0\] of 3: Python evaluator: RuntimeError"):
        env.step(np.array([SPLIT_2, DOWN, SPLIT_2]))
    assert state_of(env) == before
    broken["now"] = False
    _, _, _, _, info = env.step(np.array([SPLIT_2, DOWN, SPLIT_2]))
    assert (info["n_steps"] == 2).all() and env.cores[0].stats().n_evaluations == len(calls)
    env.close()


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"num_envs": 2}, "needs op=SPEC"),
        ({"num_envs": 0, "op": TINY}, "num_envs must be an int >= 1"),
        ({"num_envs": 2, "op": "matmull:M=1"}, "unknown op 'matmull'"),
        ({"num_envs": 2, "op": TINY, "max_steps": -1}, "max_steps must be"),
        ({"num_envs": 2, "op": TINY, "illegal_action": "skip"}, "illegal_action must be"),
        ({"num_envs": 2, "op": TINY, "measure": "guess"}, "measure must be"),
        ({"num_envs": 2, "op": TINY, "measure": "replay:/nonexistent/x.states"}, "cannot read the replay dataset"),
        ({"num_envs": 2, "op": TINY, "autoreset_mode": "Sometimes"}, "autoreset_mode must be one of"),
        ({"num_envs": 2, "op": TINY, "threads": 0}, "threads must be"),
        ({"num_envs": 2, "op": TINY, "render_mode": "human"}, "render_mode must be"),
    ],
)
def test_bad_kwargs_raise_value_error_with_the_message(kwargs: dict[str, Any], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        gym.make_vec("rltune/LoopNest-v0", vectorization_mode="vector_entry_point", **kwargs)


# ---- resets -------------------------------------------------------------------------


def test_disabled_autoreset_refuses_a_done_env_until_reset_mask_resets_it() -> None:
    env = make_vec(3, op=TINY, autoreset_mode="Disabled", max_steps=2, **SCORED)
    env.reset(seed=0)
    _, _, terminated, _, _ = env.step(np.array([STOP, DOWN, DOWN]))
    assert terminated.tolist() == [True, False, False]
    with pytest.raises(rltune.InvalidArgumentError, match=r"envs\[0\] of 3: the episode is over"):
        env.step(np.array([DOWN, UP, UP]))
    obs, info = env.reset(options={"reset_mask": np.array([True, False, False])})
    assert info["_action_mask"].tolist() == [True, False, False]  # the info is of env 0 (zeros elsewhere)
    assert info["action_mask"][0].any() and not info["action_mask"][1:].any()
    assert info["n_steps"].tolist() == [0, 0, 0] and [core.cursor for core in env.cores] == [0, 1, 1]
    _, _, terminated, truncated, info = env.step(np.array([DOWN, UP, UP]))
    assert not terminated.any() and truncated.tolist() == [False, True, True]
    # truncated envs are not reset either: they step on, truncated again
    _, _, _, truncated, info = env.step(np.array([UP, DOWN, DOWN]))
    assert truncated.tolist() == [True, True, True] and info["n_steps"].tolist() == [2, 3, 3]
    for bad in (np.array([1, 0, 0]), np.array([True, False]), np.zeros(3, dtype=bool)):
        with pytest.raises(ValueError, match="reset_mask"):
            env.reset(options={"reset_mask": bad})
    env.close()


def test_reset_from_schedules() -> None:
    env = make_vec(3, op=TINY, **SCORED)
    single = gym.make("rltune/LoopNest-v0", op=TINY, **SCORED)
    want, _ = single.reset(options={"schedule": "split i 2"})
    default, _ = single.reset()
    obs, _ = env.reset(options={"schedule": "split i 2"})
    for row in obs:
        np.testing.assert_array_equal(row, want)
    obs, _ = env.reset(options={"schedule": [None, "split i 2", None]})
    np.testing.assert_array_equal(obs[0], default)
    np.testing.assert_array_equal(obs[1], want)
    with pytest.raises(rltune.ParseError, match="unknown step 'tile'"):
        env.reset(options={"schedule": [None, None, "tile i 2"]})
    with pytest.raises(ValueError, match="options\\['schedule'\\]"):
        env.reset(options={"schedule": ["split i 2"]})
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(options={"start": "split i 2"})
    env.close()
    single.close()


# ---- arrays: copied or not ----------------------------------------------------------


@pytest.mark.parametrize("copy", [True, False])
def test_returned_arrays_are_the_callers_unless_copy_is_false(copy: bool) -> None:
    env = make_vec(2, op=TINY, copy=copy, render_mode="ansi", **SCORED)
    obs, info = env.reset(seed=0)
    first = obs.copy()
    obs2, rewards, terminated, truncated, info2 = env.step(np.array([DOWN, DOWN]))
    assert (obs2 is obs) == (not copy)
    if copy:
        np.testing.assert_array_equal(obs, first)  # the reset's observation is as it was
        assert info2["action_mask"] is not info["action_mask"]
    obs3, rewards3, *_ = env.step(np.array([UP, UP]))
    assert (rewards3 is rewards) == (not copy)
    frames = env.render()
    assert isinstance(frames, tuple) and len(frames) == 2 and "GFLOP/s" in frames[0]
    env.close()
    assert env.closed


def test_copied_results_stay_as_they_were_while_anything_holds_them(replay: str) -> None:
    """copy=True recycles the arrays of results nothing holds any more: a
    result (or a view of one, or one of its arrays) that is kept is never
    written again."""
    env = make_vec(6, op=OP, measure=replay, max_steps=3)
    obs, info = env.reset(seed=0)
    rng = np.random.default_rng(0)
    kept: list[tuple[Any, Any]] = []  # (what is held, a copy of it then)
    for t in range(40):
        result = env.step(pick_actions(rng, info["action_mask"]))
        info = result[4]
        held: Any = (result[0][1:3], result[1], result[4]["n_steps"], result)[t % 4]  # a view, arrays, all of it
        kept.append((held, [np.copy(x) for x in held] if isinstance(held, tuple) else np.copy(held)))
        if t % 3 == 0:
            kept.pop(0)  # some are let go, and their arrays recycled
    for held, then in kept:
        if isinstance(held, tuple):
            for x, y in zip(held[:4], then[:4]):
                np.testing.assert_array_equal(x, y)
        else:
            np.testing.assert_array_equal(held, then)
    env.close()
    # a result nothing holds is written again, not allocated anew
    env = make_vec(2, op=OP, measure=replay)
    env.reset(seed=0)
    rewards = weakref.ref(env.step(np.full(2, DOWN))[1])
    again = env.step(np.full(2, UP))[1]  # (not in the assert: pytest's would hold the first one meanwhile)
    assert again is rewards()
    env.close()


def test_measured_live_states_are_built_together_and_shared() -> None:
    env = make_vec(3, op=TINY, cflags="-O1", repeat=1, min_repeat_ms=0.5, max_steps=3)
    obs, info = env.reset(seed=0)
    before = env.cores[0].stats()
    obs, rewards, _, _, info = env.step(np.array([SPLIT_2, SPLIT_2, DOWN]))
    after = env.cores[0].stats()
    assert after.n_evaluations == before.n_evaluations + 1  # one new state, measured once for two envs
    assert np.isfinite(rewards).all() and (info["gflops"] > 0).all()
    env.close()

