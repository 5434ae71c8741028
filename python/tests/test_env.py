"""rltune/LoopNest-v0: Gymnasium's checker, reproducible seeded rollouts,
masks, truncation, bad kwargs; and the C env's handle underneath."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import rltune
from rltune import EvalRequest, EvalResult, LoopNestEnv

TINY = "matmul:M=8,N=8,K=8"
SMALL = "matmul:M=16,N=16,K=16"
LIVE: dict[str, Any] = {"cflags": "-O1", "repeat": 1, "min_repeat_ms": 0.5}


def fake_gflops(req: EvalRequest) -> float:
    """A deterministic stand-in for measuring: a number from the state's hash."""
    return 1.0 + (req.nest_hash % 997) / 10.0


def make(**kwargs: Any) -> gym.Env[Any, Any]:
    return gym.make("rltune/LoopNest-v0", **kwargs)


def core(env: gym.Env[Any, Any]) -> rltune.LoopTuneEnv:
    """The C env's handle under a made env."""
    unwrapped = env.unwrapped
    assert isinstance(unwrapped, LoopNestEnv)
    return unwrapped.core


def rollout(env: gym.Env[Any, Any], seed: int, n_steps: int) -> list[tuple[Any, ...]]:
    """Random legal actions drawn from the env's np_random: (action,
    observation, reward, terminated, truncated) of each step."""
    obs, info = env.reset(seed=seed)
    trace: list[tuple[Any, ...]] = [(None, obs, 0.0, False, False)]
    rng = env.unwrapped.np_random
    for _ in range(n_steps):
        legal = np.flatnonzero(info["action_mask"])
        action = int(rng.choice(legal))
        obs, reward, terminated, truncated, info = env.step(action)
        trace.append((action, obs, reward, terminated, truncated))
        if terminated or truncated:
            obs, info = env.reset()
    return trace


def test_registered_on_import() -> None:
    assert "rltune/LoopNest-v0" in gym.registry


def test_env_checker_passes_with_an_evaluator() -> None:
    env = make(op=SMALL, measure=fake_gflops, peak_gflops=100.0, max_steps=8)
    check_env(env.unwrapped)
    env.close()


def test_env_checker_passes_measuring_live() -> None:
    env = make(op=TINY, max_steps=4, **LIVE)
    check_env(env.unwrapped)
    handle = core(env)
    assert handle.peak_gflops > 0 and handle.stats().n_evaluations >= 1
    env.close()


def test_spaces_and_info() -> None:
    env = make(op=TINY, measure=fake_gflops, peak_gflops=100.0)
    assert env.observation_space.shape == (rltune.env.OBS_LEN,)
    assert env.observation_space.dtype == np.float32
    assert isinstance(env.action_space, gym.spaces.Discrete)
    assert env.action_space.n == rltune.env.N_ACTIONS == len(rltune.ACTION_NAMES)
    obs, info = env.reset(seed=0)
    assert obs.dtype == np.float32 and obs in env.observation_space
    mask = info["action_mask"]
    assert mask.dtype == np.int8 and mask.shape == (rltune.env.N_ACTIONS,)
    assert mask[rltune.ACTION_NAMES.index("stop")] == 1
    # the mask is also the observation's last block
    np.testing.assert_array_equal(obs[342:359], mask.astype(np.float32))
    assert info["gflops"] == pytest.approx(fake_gflops(EvalRequest("", "", core(env).state_hash, 0)))
    assert "for i in 0..8" in core(env).tree()


def test_seeded_rollout_is_reproducible() -> None:
    traces = []
    for _ in range(2):
        env = make(op=SMALL, measure=fake_gflops, peak_gflops=100.0, max_steps=6)
        traces.append(rollout(env, seed=7, n_steps=20))
        env.close()
    a, b = traces
    assert [t[0] for t in a] == [t[0] for t in b]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x[1], y[1])
        assert x[2:] == y[2:]
    other = rollout(make(op=SMALL, measure=fake_gflops, peak_gflops=100.0, max_steps=6), seed=8, n_steps=20)
    assert [t[0] for t in other] != [t[0] for t in a]


def test_seeded_rollout_measured_live_is_reproducible_but_for_timing() -> None:
    traces = [rollout(make(op=TINY, max_steps=3, **LIVE), seed=3, n_steps=5) for _ in range(2)]
    a, b = traces
    assert [t[0] for t in a] == [t[0] for t in b]
    for x, y in zip(a, b):
        # every feature but the state's GFLOP/s (measured, so noisy)
        np.testing.assert_array_equal(np.delete(x[1], 341), np.delete(y[1], 341))
        assert x[3:] == y[3:]


def test_truncated_at_max_steps_and_terminated_by_stop() -> None:
    env = make(op=TINY, measure=fake_gflops, peak_gflops=100.0, max_steps=2)
    env.reset(seed=0)
    down = rltune.ACTION_NAMES.index("down")
    _, reward, terminated, truncated, _ = env.step(down)
    assert (reward, terminated, truncated) == (0.0, False, False)
    _, _, terminated, truncated, _ = env.step(down)
    assert (terminated, truncated) == (False, True)
    env.reset()
    _, _, terminated, truncated, info = env.step(rltune.ACTION_NAMES.index("stop"))
    assert (terminated, truncated) == (True, False)
    assert not info["action_mask"].any()


def test_reward_is_the_change_in_gflops_over_the_peak() -> None:
    env = make(op=TINY, measure=fake_gflops, peak_gflops=50.0)
    _, info = env.reset(seed=0)
    before = info["gflops"]
    _, reward, _, _, info = env.step(rltune.ACTION_NAMES.index("split_2"))
    assert reward == pytest.approx((info["gflops"] - before) / 50.0)


def test_masked_action_is_a_noop_or_raises() -> None:
    env = make(op=TINY, measure=fake_gflops, peak_gflops=100.0)
    obs, info = env.reset(seed=0)
    up = rltune.ACTION_NAMES.index("up")
    assert info["action_mask"][up] == 0  # the cursor starts on the outermost loop
    obs2, reward, terminated, truncated, info2 = env.step(up)
    assert not info2["is_legal"] and reward == 0.0 and not terminated
    np.testing.assert_array_equal(obs, obs2)
    strict = make(op=TINY, measure=fake_gflops, peak_gflops=100.0, illegal_action="raise")
    strict.reset(seed=0)
    with pytest.raises(rltune.IllegalScheduleError) as e:
        strict.step(up)
    assert isinstance(e.value, ValueError) and e.value.message


def test_reset_from_a_schedule() -> None:
    env = make(op=TINY, measure=fake_gflops, peak_gflops=100.0)
    env.reset(seed=0, options={"schedule": "split j 4\n"})
    assert "j.o" in core(env).tree()
    with pytest.raises(ValueError):
        env.reset(options={"schedule": "fuse i j\n"})


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"op": "nosuch:M=8"}, "unknown op 'nosuch'"),
        ({"op": "matmul:M=x"}, "not a whole number"),
        ({"op": "matmul:M=8,N=8,K=8,Q=3"}, "Q"),
        ({"op": TINY, "threads": 100000}, "thread"),
        ({"op": TINY, "measure": "replay:x.db"}, "replay"),
        ({"op": TINY, "measure": "sometimes"}, "measure"),
        ({"op": TINY, "max_steps": -1}, "max_steps"),
        ({}, "op=SPEC"),
    ],
)
def test_bad_kwargs_raise_value_error_with_the_message(kwargs: dict[str, Any], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        make(**kwargs)


def test_an_evaluators_failure_is_a_state_and_its_exception_an_error() -> None:
    def failing(req: EvalRequest) -> EvalResult:
        return EvalResult(0.0, "WRONG_ANSWER", "made up")

    env = make(op=TINY, measure=failing, peak_gflops=100.0)
    env.reset(seed=0)
    assert core(env).eval_status() == ("WRONG_ANSWER", "made up")

    def broken(req: EvalRequest) -> float:
        raise RuntimeError("no model")

    env = make(op=TINY, measure=broken, peak_gflops=100.0)
    with pytest.raises(rltune.RltuneError, match="no model"):
        env.reset(seed=0)


def test_core_handle_clone_restore_and_schedule() -> None:
    core = rltune.LoopTuneEnv(TINY, evaluate=fake_gflops, peak_gflops=100.0)
    core.reset()
    twin = core.clone()
    twin.step(rltune.ACTION_NAMES.index("split_4"))
    assert twin.state_hash != core.state_hash
    assert twin.schedule().startswith("# rltune schedule v1\nsplit i 4")
    core.restore(twin)
    assert core.state_hash == twin.state_hash and core.n_steps == 1
    stranger = rltune.LoopTuneEnv(TINY, evaluate=fake_gflops, peak_gflops=100.0)
    with pytest.raises(ValueError):
        core.restore(stranger)
    assert rltune.env.action_from_name("stop") == rltune.ACTION_NAMES.index("stop")
