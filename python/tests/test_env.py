"""rltune/LoopNest-v0: Gymnasium's checker, reproducible seeded rollouts,
masks, truncation, bad kwargs; the C env's handle underneath; and state
datasets (rltune.make_env_dataset) replayed with measure="replay:FILE"."""

from __future__ import annotations

from pathlib import Path
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
        ({"op": TINY, "measure": "replay:/nonexistent/x.states"}, "cannot read the replay dataset"),
        ({"op": TINY, "measure": "replay:"}, "replay:FILE"),
        ({"op": TINY, "threads": 0}, "threads must be an int >= 1"),
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


# ---- state datasets and their replay ---------------------------------------


@pytest.fixture(scope="module")
def small_states(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, rltune.EnvDatasetResult]:
    """A state dataset of SMALL, three steps deep, scored by fake_gflops."""
    path = tmp_path_factory.mktemp("states") / "small.states"
    seen: list[tuple[int, int]] = []
    result = rltune.make_env_dataset(
        SMALL, path, depth=3, evaluate=fake_gflops, peak_gflops=100.0, batch_size=32,
        progress=lambda done, total: seen.append((done, total)),
    )
    assert seen and seen[-1] == (result.n_states, result.n_states)
    return path, result


def test_make_env_dataset_finds_every_state_within_the_depth(
    small_states: tuple[Path, rltune.EnvDatasetResult]
) -> None:
    path, result = small_states
    assert result.n_states == result.n_found > 100
    assert result.depth_complete == 3 and result.n_failed == 0 and not result.was_stopped
    assert result.peak_gflops == 100.0
    text = path.read_text()
    assert text.startswith("# rltune env states v1\nop matmul:M=16,N=16,K=16\n")
    assert f"\nstates {result.n_states}\n" in text and "\nmeasured evaluator\n" in text


def test_replay_gives_the_evaluators_rewards_and_masks_what_it_lacks(
    small_states: tuple[Path, rltune.EnvDatasetResult]
) -> None:
    path, _ = small_states
    replay = make(op=SMALL, measure=f"replay:{path}", max_steps=5)
    scored = make(op=SMALL, measure=fake_gflops, peak_gflops=100.0, max_steps=5)
    rng = np.random.default_rng(5)
    n_masked = 0
    for episode in range(30):
        obs_r, info_r = replay.reset(seed=episode)
        obs_s, info_s = scored.reset(seed=episode)
        for _ in range(5):  # past the dataset's depth, 3
            mask = info_r["action_mask"]
            assert (mask <= info_s["action_mask"]).all()  # the replay's mask is the env's, less what it lacks
            n_masked += int((mask < info_s["action_mask"]).sum())
            action = int(rng.choice(np.flatnonzero(mask)))
            obs_r, reward_r, term_r, trunc_r, info_r = replay.step(action)
            obs_s, reward_s, term_s, trunc_s, info_s = scored.step(action)
            assert reward_r == pytest.approx(reward_s, abs=1e-9)
            assert info_r["gflops"] == pytest.approx(info_s["gflops"], rel=1e-6)
            assert (term_r, trunc_r) == (term_s, trunc_s)
            np.testing.assert_allclose(obs_r[: rltune.env.OBS_LEN - 17], obs_s[: rltune.env.OBS_LEN - 17], rtol=1e-6)
            if term_r or trunc_r:
                break
    assert n_masked > 0 and core(replay).peak_gflops == 100.0
    # a masked action: a no-op step, or IllegalScheduleError
    replay.reset(seed=0)
    for name in ("down", "split_2", "down"):
        replay.step(rltune.ACTION_NAMES.index(name))
    _, info = replay.reset(seed=0)
    for name in ("split_2", "split_2", "split_2"):
        if not info["action_mask"][rltune.ACTION_NAMES.index(name)]:
            break
        _, _, _, _, info = replay.step(rltune.ACTION_NAMES.index(name))
    blocked = [a for a in range(rltune.env.N_ACTIONS) if not info["action_mask"][a]]
    before = core(replay).state_hash
    _, reward, _, _, info = replay.step(blocked[0])
    assert reward == 0.0 and not info["is_legal"] and core(replay).state_hash == before
    strict = make(op=SMALL, measure=f"replay:{path}", illegal_action="raise")
    strict.reset(seed=0)
    strict_blocked = int(np.flatnonzero(1 - strict.unwrapped.core.action_mask())[0])
    with pytest.raises(rltune.IllegalScheduleError):
        strict.step(strict_blocked)


def test_replay_passes_the_env_checker_and_repeats_seeded_rollouts(
    small_states: tuple[Path, rltune.EnvDatasetResult]
) -> None:
    path, _ = small_states
    env = make(op=SMALL, measure=f"replay:{path}", max_steps=6)
    check_env(env.unwrapped)
    a, b = rollout(env, seed=3, n_steps=40), rollout(make(op=SMALL, measure=f"replay:{path}", max_steps=6), 3, 40)
    assert [t[0] for t in a] == [t[0] for t in b]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x[1], y[1])  # noise-free: the GFLOP/s too
        assert x[2:] == y[2:]


def test_replay_refuses_another_op_a_start_it_lacks_and_another_thread_count(
    small_states: tuple[Path, rltune.EnvDatasetResult]
) -> None:
    path, _ = small_states
    with pytest.raises(ValueError, match="not of the env's op matmul:M=8,N=8,K=8"):
        make(op=TINY, measure=f"replay:{path}")
    with pytest.raises(ValueError, match="measured with 1 thread, the env asks for 2"):
        make(op=SMALL, measure=f"replay:{path}", threads=2)
    env = make(op=SMALL, measure=f"replay:{path}")
    with pytest.raises(ValueError, match="does not hold this state"):
        env.reset(options={"schedule": "split i 2\nsplit j 2\nsplit k 2\nunroll k.i\n"})
    bad = path.parent / "bad.states"
    bad.write_text("# rltune env states v9\n")
    with pytest.raises(rltune.ParseError, match="format v9 is not supported"):
        make(op=SMALL, measure=f"replay:{bad}")


def test_a_measured_dataset_replays_its_measurements(tmp_path: Path) -> None:
    path = tmp_path / "tiny.states"
    result = rltune.make_env_dataset(
        TINY, path, depth=1, cflags="-O1", repeat=1, min_repeat_ms=0.5, peak_gflops=100.0
    )
    assert result.n_states > 3 and result.n_failed == 0 and result.start_gflops > 0
    env = make(op=TINY, measure=f"replay:{path}", cc="/nonexistent/cc")  # nothing is built
    _, info = env.reset(seed=0)
    assert info["gflops"] == pytest.approx(result.start_gflops, rel=1e-5)
    assert "\nmeasured live, 1 sample of at least 0.5 ms\n" in path.read_text()


def test_make_env_dataset_errors_and_a_progress_that_raises(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="depth 99 is out of range"):
        rltune.make_env_dataset(TINY, tmp_path / "x.states", depth=99, evaluate=fake_gflops, peak_gflops=1.0)
    with pytest.raises(ValueError, match="the start schedule"):
        rltune.make_env_dataset(TINY, tmp_path / "x.states", schedule="fuse i j\n", evaluate=fake_gflops,
                                peak_gflops=1.0)

    def interrupt(done: int, total: int) -> None:
        raise KeyboardInterrupt

    path = tmp_path / "stopped.states"
    with pytest.raises(KeyboardInterrupt):
        rltune.make_env_dataset(SMALL, path, depth=3, batch_size=4, evaluate=fake_gflops, peak_gflops=1.0,
                                progress=interrupt)
    assert "\nstates 4\n" in path.read_text()  # stopped after the first batch, which it wrote
