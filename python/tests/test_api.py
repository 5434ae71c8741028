"""The library from Python: ops, schedules, nests, measurement, a tuning
session and its records, on a tiny matmul."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rltune
from rltune import BuildOptions, Nest, Op, RunOptions, Schedule

TINY = "matmul:M=8,N=8,K=8"


def test_version() -> None:
    assert rltune.version() == "0.1.0"
    assert rltune.library_path()


def test_op_from_spec_and_expr() -> None:
    op = Op("matmul:M=8,N=8,K=8")
    assert op.spec == TINY and op.kind == "matmul" and op.flops == 2 * 8 * 8 * 8
    assert "C[i,j] += A[i,k] * B[k,j]" in op.text()
    expr = Op.from_expr("C[i,j] += A[i,k] * B[k,j]", "i=8,j=8,k=8")
    assert expr.kind == "expr" and expr.flops == op.flops
    assert Op(expr.spec).spec == expr.spec  # the expr spec parses back
    names = [info.name for info in rltune.op_library()]
    assert "matmul" in names and "conv2d" in names
    assert all(info.example for info in rltune.op_library())


@pytest.mark.parametrize(
    "spec, cls, words",
    [
        ("nosuch:M=8", rltune.InvalidArgumentError, "unknown op 'nosuch'"),
        ("matmul:M=x", rltune.ParseError, "not a whole number"),
        ("matmul:M=0", rltune.InvalidArgumentError, "M"),
    ],
)
def test_bad_op_specs_raise_value_errors_with_rltunes_message(
    spec: str, cls: type[rltune.RltuneError], words: str
) -> None:
    with pytest.raises(cls, match=words) as info:
        Op(spec)
    assert isinstance(info.value, ValueError)
    assert info.value.status == cls.status
    assert spec in str(info.value)


def test_schedule_text_round_trip_and_typed_steps() -> None:
    typed = Schedule().split("j", 4).reorder("i", "j.o", "k", "j.i").vectorize("j.i").unroll("k")
    assert len(typed) == 4
    text = typed.text()
    assert text.startswith("# rltune schedule v1\n") and "vectorize j.i" in text
    parsed = Schedule.parse(text)
    assert parsed.text() == text
    with pytest.raises(rltune.InvalidArgumentError):
        Schedule().split("j", 0)  # a factor below 1
    with pytest.raises(rltune.InvalidArgumentError, match="reorder"):
        Schedule().reorder("i")  # one loop
    with pytest.raises(rltune.ParseError, match="<inline>"):
        Schedule("split j")


def test_schedule_load(tmp_path: Path) -> None:
    path = tmp_path / "s.sched"
    path.write_text("split i 2\n")
    assert Schedule.load(path).text() == "# rltune schedule v1\nsplit i 2\n"
    with pytest.raises(rltune.RltuneIOError):
        Schedule.load(tmp_path / "absent.sched")


def test_nest_tree_and_c_source(tiny: Op) -> None:
    nest = Nest(tiny, "split j 4\nreorder i j.o k j.i\nvectorize j.i\n")
    tree = nest.tree()
    assert "vectorize j.i in 0..4" in tree and "for k in 0..8" in tree
    src = nest.c_source()
    assert src.symbol.startswith("rlt_k_") and src.symbol in src.code
    assert not src.needs_openmp and not nest.is_parallel
    assert "for i in 0..8" in Nest(tiny).tree()
    lowered = nest.lowered()
    assert "vector j_i x4" in lowered and "compute: A[i,k] * B[k,j] (vector)" in lowered
    assert "load B[k,j]: vector" in lowered and "output C: vector" in lowered


def test_illegal_schedule_is_a_value_error(tiny: Op) -> None:
    with pytest.raises(rltune.IllegalScheduleError, match="must be innermost") as info:
        Nest(tiny, Schedule().split("j", 4).vectorize("j.i"))
    assert isinstance(info.value, ValueError) and info.value.status == "ILLEGAL_SCHEDULE"


def test_measure(tiny: Op, build: BuildOptions, run: RunOptions) -> None:
    nests = [Nest(tiny), Nest(tiny, "split j 4\nreorder i j.o k j.i\nvectorize j.i\n")]
    results = rltune.measure(tiny, nests, build, run)
    assert [r.status for r in results] == ["OK", "OK"]
    assert all(r.ok and r.is_correct and r.gflops > 0 and r.n_samples == 1 for r in results)
    one = rltune.Workload(tiny, build).measure([nests[0]], build, run)[0]
    assert one.ok
    assert "-O1" in rltune.build_command(build)
    assert rltune.machine().n_cores >= 1


def test_session_and_records(tiny: Op, build: BuildOptions, run: RunOptions, tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    with rltune.Session(
        tiny, tuner="random", n_trials=6, batch_size=3, seed=1, build=build, run=run,
        db_path=db, n_seeds=0, n_final=0,
    ) as s:
        steps = 0
        while not s.is_done:
            summary = s.step()
            steps += 1
            assert summary.n_trials == min(6, 3 * steps)
        s.finish()
        summary = s.summary()
        assert summary.n_trials == 6 and summary.is_done
        assert summary.best_gflops > 0 and len(summary.curve) == 6
        assert summary.best_schedule.startswith("# rltune schedule v1")
        report = s.json()
        assert report["tuner"] == "random"
        assert json.loads(s.json_text()) == report

    target = rltune.session_target(build, 1).key
    with rltune.Database(db, read_only=True) as records:
        assert records.count(TINY) == 6
        history = records.history(TINY)
        assert len(history) == 6 and all(r.spec == TINY and r.tuner == "random" for r in history)
        assert [r.id for r in history] == sorted(r.id for r in history)
        best = records.best(TINY, target)
        assert best is not None and best.status == "OK"
        assert best.gflops == max(r.gflops for r in history if r.status == "OK")
        assert records.best("matmul:M=9,N=8,K=8") is None
        assert records.history(TINY, target)[0].target.key == target
        # the record's JSON reads back to the same record
        assert rltune.Record.from_json(best.json()) == best
        assert best.to_dict()["op"] == TINY
        records.export_jsonl(tmp_path / "r.jsonl")
    lines = (tmp_path / "r.jsonl").read_text().splitlines()
    assert len(lines) == 6
    with rltune.Database(tmp_path / "copy.db") as copy:
        assert copy.import_jsonl(tmp_path / "r.jsonl") == (6, 0)
        assert copy.import_jsonl(tmp_path / "r.jsonl") == (0, 6)
        copy.append([best])
        assert copy.count() == 7

    # A finished run, run again, measures nothing: everything is read back.
    again = rltune.Session(
        tiny, tuner="random", n_trials=6, batch_size=3, seed=1, build=build, run=run,
        db_path=db, n_seeds=0, n_final=0,
    ).run()
    assert again.n_from_records == 6 and again.n_measured == 0


def test_session_refuses_bad_options(tiny: Op) -> None:
    with pytest.raises(rltune.InvalidArgumentError, match="nosuch") as info:
        rltune.Session(tiny, tuner="nosuch")
    assert getattr(info.value, "option") == "tuner"
    with pytest.raises(ValueError) as info2:
        rltune.Session(tiny, n_trials=0)
    assert getattr(info2.value, "option") == "numbers"


def test_records_refuse_a_file_that_is_not_theirs(tmp_path: Path) -> None:
    path = tmp_path / "not.db"
    path.write_text("hello")
    with pytest.raises(rltune.RltuneError) as info:
        rltune.Database(path)
    assert info.value.status in ("INVALID_ARGUMENT", "IO_ERROR")
    assert path.read_text() == "hello"
