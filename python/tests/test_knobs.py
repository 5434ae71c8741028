"""Knob spaces, configuration measurers (rltune/space.h) and
rltune/Knobs-v0: the space's knobs, keys and validity; live measurement
read back from records; a dataset measured through the binding and
replayed with its own numbers; Gymnasium's checker in both action modes,
seeded reproducibility, masks and penalties, bad kwargs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import rltune
from rltune import KnobsEnv, KnobSpace

TINY = "matmul:M=8,N=8,K=8"
# Every knob but i.tile and k.tile held: a complete dataset of 32
# configurations, each with neighbours in it.
FIX = "vec=j*8;i.mid=1;j.mid=1;j.tile=1;order.s=i,j;unroll=0;pack.A=off;pack.B=off;cc=gcc"
FAST_BUILD = rltune.BuildOptions(cflags="-O1 -march=native")
FAST_RUN = rltune.RunOptions(repeat=1, min_repeat_ms=0.5)


@pytest.fixture(scope="module")
def dataset(cache_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("knobs") / "mm8.db"
    info, result = rltune.measure_dataset(
        TINY, path, n_samples=64, fix=FIX, seed=1, batch_size=16, build=FAST_BUILD, run=FAST_RUN
    )
    assert info.is_complete and info.n_configs == result.n_done > 4
    return path


def make(dataset: Path, **kwargs: Any) -> gym.Env[Any, Any]:
    return gym.make("rltune/Knobs-v0", dataset=str(dataset), **kwargs)


def records_by_key(dataset: Path) -> dict[str, rltune.Record]:
    with rltune.Database(str(dataset), read_only=True) as db:
        return {r.config: r for r in db.history(TINY)}


# ---- the space and its measurers ----------------------------------------------------


def test_a_space_has_knobs_choices_keys_and_validity() -> None:
    s = KnobSpace("matmul:M=16,N=16,K=16")
    assert s.spec == "matmul:M=16,N=16,K=16" and s.n_threads == 1
    assert {"vec", "i.tile", "j.tile", "k.tile", "unroll"} <= set(s.knob_names)
    assert "parallel" not in s.knob_names and "parallel" in KnobSpace(s.spec, n_threads=2).knob_names
    assert s.size == int(np.prod(s.n_choices.astype(np.int64)))
    assert all(len(c) == n for c, n in zip(s.choices, s.n_choices))
    m = s.median()
    assert s.is_valid(m)
    assert np.array_equal(s.parse(s.key(m)), m)
    with pytest.raises(rltune.ParseError, match="colour"):
        s.parse("v1;colour=red")
    last = s.n_choices - 1
    assert not s.is_valid(last)
    with pytest.raises(rltune.IllegalScheduleError):
        s.check(last)
    with pytest.raises(rltune.InvalidArgumentError, match="vec"):
        s.key(s.n_choices)
    assert s.is_valid(s.nearest_valid(last))


def test_live_measurement_is_stored_and_read_back(tmp_path: Path) -> None:
    s = KnobSpace(TINY)
    m0 = s.median()
    rows = [m0, s.nearest_valid(np.zeros(s.n_knobs, dtype=np.int32)), s.n_choices - 1]
    db = tmp_path / "r.db"
    with s.live_measurer(build=FAST_BUILD, run=FAST_RUN, db_path=db) as m:
        assert m.kind == "live"
        first = m.measure(rows)
    assert first[0].ok and first[0].gflops > 0 and not first[0].is_from_records
    assert first[2].status == "ILLEGAL_SCHEDULE" and first[2].message
    with s.live_measurer(build=FAST_BUILD, run=FAST_RUN, db_path=db) as m:
        again = m.measure(rows[:2])
    assert [r.gflops for r in again] == [r.gflops for r in first[:2]]
    assert all(r.is_from_records for r in again)


def test_a_replay_answers_with_the_datasets_numbers(dataset: Path) -> None:
    s = KnobSpace.open_dataset(dataset)
    assert s.spec == TINY and s.dataset_size > 4
    records = records_by_key(dataset)
    configs = s.dataset_configs()
    m = s.replay_measurer()
    assert m.kind == "replay"
    results = m.measure(configs)
    for c, r in zip(configs, results):
        rec = records[s.key(c)]
        assert r.status == rec.status and not r.is_absent and r.is_from_records
        if r.ok:
            assert r.gflops == rec.gflops
    assert m.best_gflops == max(r.gflops for r in results)
    # held knobs moved: valid, but not in the dataset
    corner = KnobSpace(TINY).nearest_valid(np.zeros(s.n_knobs, dtype=np.int32))
    assert s.is_valid(corner) and not s.in_dataset(corner), "vec=none is outside the fixed sub-space"
    assert s.in_dataset(s.nearest_valid(corner)), "a dataset's space looks for measured ones"
    (absent,) = m.measure([corner])
    assert absent.is_absent and absent.status == "OK" and absent.gflops == 0
    # an op's space replaying the file by path gives the same
    same = KnobSpace(TINY).replay_measurer(dataset).measure(configs)
    assert [r.gflops for r in same] == [r.gflops for r in results]


# ---- rltune/Knobs-v0 -----------------------------------------------------------------


@pytest.mark.parametrize("action_mode", ["multidiscrete", "discrete"])
@pytest.mark.parametrize("reset_to", ["random", "median"])
def test_the_env_passes_gymnasiums_checker(dataset: Path, action_mode: str, reset_to: str) -> None:
    env = make(dataset, action_mode=action_mode, reset_to=reset_to, horizon=8)
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


def rollout(env: gym.Env[Any, Any], seed: int, n_steps: int) -> list[tuple[Any, ...]]:
    obs, info = env.reset(seed=seed)
    out: list[tuple[Any, ...]] = [("reset", obs.tolist())]
    unwrapped = env.unwrapped
    assert isinstance(unwrapped, KnobsEnv)
    for _ in range(n_steps):
        mask = info["action_mask"]
        action = env.action_space.sample(tuple(mask) if unwrapped.action_mode == "multidiscrete" else mask)
        obs, reward, terminated, truncated, info = env.step(action)
        out.append((np.asarray(action).tolist(), obs.tolist(), reward, terminated, truncated))
        if terminated or truncated:
            obs, info = env.reset()
            out.append(("reset", obs.tolist()))
    return out


@pytest.mark.parametrize("action_mode", ["multidiscrete", "discrete"])
def test_a_seeded_rollout_is_reproducible(dataset: Path, action_mode: str) -> None:
    kwargs = {"action_mode": action_mode, "reset_to": "random", "horizon": 5}
    a = rollout(make(dataset, **kwargs), seed=7, n_steps=12)
    b = rollout(make(dataset, **kwargs), seed=7, n_steps=12)
    assert a == b
    c = rollout(make(dataset, **kwargs), seed=8, n_steps=12)
    assert c != a


def test_steps_follow_the_mask_and_invalid_moves_are_penalised(dataset: Path) -> None:
    env = make(dataset, action_mode="discrete", reset_to="median", reward="gflops_delta", horizon=3)
    u = env.unwrapped
    assert isinstance(u, KnobsEnv)
    obs, info = env.reset(seed=0)
    n = u.space.n_knobs
    assert env.action_space == gym.spaces.Discrete(2 * n + 1)
    assert obs.shape == (n + 1,) and info["action_mask"].shape == (2 * n + 1,)
    assert info["gflops"] > 0 and info["is_valid"]
    mask = info["action_mask"]
    legal = [a for a in range(1, 2 * n + 1) if mask[a]]
    assert legal, "the median of a complete sub-space has neighbours in it"
    before = info["gflops"]
    obs, reward, terminated, truncated, info = env.step(legal[0])
    assert info["is_valid"] and not terminated and not truncated
    assert reward == pytest.approx((info["gflops"] - before) / u.gflops_scale)
    # a move out of the sub-space (masked, inside the knob's range): the penalty, the state kept
    config = info["config"]

    def inside(a: int) -> bool:
        knob, delta = (a - 1) // 2, (1 if a % 2 == 0 else -1)
        return 0 <= config[knob] + delta < u.space.n_choices[knob]

    masked = [a for a in range(1, 2 * n + 1) if not info["action_mask"][a] and inside(a)]
    assert masked
    obs, reward, terminated, truncated, after = env.step(masked[0])
    assert reward == u.invalid_reward == -1.0
    assert not after["is_valid"] and after["status"] in ("ABSENT", "ILLEGAL_SCHEDULE")
    assert np.array_equal(after["config"], config)
    obs, reward, terminated, truncated, after = env.step(0)
    assert truncated and reward == 0.0, "the horizon truncates"


def test_replay_gives_the_datasets_numbers_and_neg_time(dataset: Path) -> None:
    env = make(dataset, reward="neg_time", timeout_ms=1e9)
    u = env.unwrapped
    assert isinstance(u, KnobsEnv)
    records = records_by_key(dataset)
    for c in u.space.dataset_configs()[:6]:
        rec = records[u.space.key(c)]
        obs, info = env.reset(options={"config": c})
        assert info["gflops"] == (rec.gflops if rec.status == "OK" else 0.0)
        assert obs[-1] == pytest.approx(min(rec.gflops / u.gflops_scale, 1.0))
        assert u.key() == rec.config
        _, reward, _, _, info = env.step(np.ones(u.space.n_knobs, dtype=np.int64))  # stay
        assert reward == -rec.time_median_ms
    assert u.gflops_scale == max(r.gflops for r in records.values())


def test_a_live_env_measures(tmp_path: Path) -> None:
    env = gym.make(
        "rltune/Knobs-v0", op=TINY, horizon=2, action_mode="discrete", cflags="-O1 -march=native",
        repeat=1, min_repeat_ms=0.5,
    )
    obs, info = env.reset(seed=0)
    assert info["is_valid"] and info["gflops"] > 0
    _, _, _, _, info = env.step(int(np.flatnonzero(info["action_mask"][1:])[0]) + 1)
    _, _, _, truncated, _ = env.step(0)
    assert truncated
    env.close()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"op": "nosuch:M=8"}, "unknown op 'nosuch'"),
        ({"op": "matmul:M=0,N=8,K=8"}, "M"),
        ({}, "op=SPEC"),
        ({"op": TINY, "reset_to": "middle"}, "reset_to"),
        ({"op": TINY, "action_mode": "box"}, "action_mode"),
        ({"op": TINY, "reward": "gflops"}, "reward"),
        ({"op": TINY, "horizon": -1}, "horizon"),
        ({"op": TINY, "threads": 0}, "threads"),
        ({"op": TINY, "measure": "replay:"}, "replay:FILE"),
        ({"op": TINY, "measure": "fast"}, "measure"),
        ({"dataset": "/nonexistent/x.db"}, "/nonexistent/x.db"),
    ],
)
def test_bad_kwargs_raise_value_error(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        gym.make("rltune/Knobs-v0", **kwargs)


def test_bad_dataset_kwargs(dataset: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="thread"):
        make(dataset, threads=2)
    with pytest.raises(ValueError, match="of op"):
        make(dataset, op="matmul:M=16,N=16,K=16")
    with pytest.raises(ValueError, match="no db_path"):
        make(dataset, db_path=str(tmp_path / "r.db"))
    with rltune.Database(str(tmp_path / "plain.db")):
        pass
    with pytest.raises(ValueError, match="not a dataset"):
        gym.make("rltune/Knobs-v0", measure=f"replay:{tmp_path / 'plain.db'}")
