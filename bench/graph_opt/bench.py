#!/usr/bin/env python3
"""bench.py - graph substitutions (issue 28): `rltune graph-opt` per model and search.

    bench.py [--models resnet18,squeezenet1_1,mobilenet_v2,inception_stack,bert_layer,vit_block]
             [--searches none,greedy,taso] [--work /tmp/graph_opt] [--budget N] [--alpha A]
             [--time-limit S] [--db FILE | --db none] [--repeat R] [--seed S] [--no-measure]
             [--no-pin] [--rltune build/rltune] [--md OUT.md] [--json OUT.json]

For every model (written by bench/networks/make_models.py into --work when
absent, seed 0) and every search:

1. `rltune graph-opt --model WORK/M.onnx --search S --json --threads 1
   --out WORK/M.S.onnx --repeat R` (with --budget, --alpha, --time-limit,
   --db passed through), pinned to core 0 (taskset -c 0): the rewrites of
   the best graph, its cost (the sum of its kernels' measured times) before
   and after, the cost evaluations (graphs costed), the search's time, and
   the latency of both networks compiled and timed, with rltune's own check
   of the optimised network against the original graph's reference.
2. The written WORK/M.S.onnx checked with onnx.checker (full_check) and run
   in ONNX Runtime on the seeded input (numpy default_rng(--seed), uniform
   [-1, 1), as ort_baseline.py makes it); its outputs against the original
   model's ONNX Runtime outputs: max |diff| over max |reference| (target
   1e-4).

Every search shares one records database (--db, default WORK/graph_opt.db):
the first run's measured seeds are the later runs' task times, so the
searches of a model cost its kernels alike and their costs compare. A
search rltune does not know (e.g. 'rl' before it exists) fails its row,
and the others go on.

Prints a markdown table (and progress on stderr); --md writes it with the
command, date and machine; --json every number.
"""
from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
MAKE = ROOT / "bench" / "networks" / "make_models.py"
DEFAULT_MODELS = "resnet18,squeezenet1_1,mobilenet_v2,inception_stack,bert_layer,vit_block"
ORT_TARGET = 1e-4


def ort_session(model: onnx.ModelProto | str) -> ort.InferenceSession:
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    data = model if isinstance(model, str) else model.SerializeToString()
    return ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])


def seeded_inputs(sess: ort.InferenceSession, seed: int) -> dict[str, np.ndarray]:
    """ort_baseline.py's input: default_rng(seed).uniform(-1, 1, shape), float32
    (one stream for all inputs, in order)."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for i in sess.get_inputs():
        if i.type != "tensor(float)" or not all(isinstance(d, int) for d in i.shape):
            raise SystemExit(f"input {i.name}: only float32 inputs of static shape ({i.type} {i.shape})")
        feeds[i.name] = rng.uniform(-1, 1, i.shape).astype(np.float32)
    return feeds


def ort_error(path: Path, feeds: dict[str, np.ndarray], ref: list[np.ndarray]) -> tuple[float | None, str]:
    """The written model's outputs against the reference: max |diff| / max |ref|."""
    try:
        onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    except Exception as e:  # noqa: BLE001 - any checker failure is the result
        return None, f"checker: {str(e).splitlines()[0][:120]}"
    try:
        outs = ort_session(str(path)).run(None, feeds)
    except Exception as e:  # noqa: BLE001
        return None, f"onnxruntime: {str(e).splitlines()[0][:120]}"
    if len(outs) != len(ref):
        return None, f"{len(outs)} outputs, the original has {len(ref)}"
    err = 0.0
    for o, r in zip(outs, ref):
        if o.shape != r.shape:
            return None, f"output shape {list(o.shape)}, the original's {list(r.shape)}"
        scale = float(np.abs(r).max()) or 1.0
        err = max(err, float(np.abs(o.astype(np.float64) - r).max()) / scale)
    return err, ""


def rewrites_summary(rewrites: list[dict]) -> str:
    if not rewrites:
        return "0"
    c = Counter(r["rule"] for r in rewrites)
    parts = [f"{rule}" + (f" x{n}" if n > 1 else "") for rule, n in c.most_common()]
    return f"{len(rewrites)}: " + ", ".join(parts)


def run_graph_opt(args, model_path: Path, search: str, out_path: Path) -> tuple[dict | None, str, list[str]]:
    cmd = [args.rltune, "graph-opt", "--model", str(model_path), "--search", search, "--json",
           "--threads", "1", "--out", str(out_path), "--repeat", str(args.repeat)]
    for opt in ("budget", "alpha", "time_limit"):
        v = getattr(args, opt)
        if v is not None and search != "rl":
            cmd += ["--" + opt.replace("_", "-"), str(v)]
    if search == "rl":
        cmd += ["--policy", str(Path(args.policy).resolve())]
    if args.db:
        cmd += ["--db", args.db]
    if args.no_measure:
        cmd.append("--no-measure")
    if not args.no_pin:
        cmd = ["taskset", "-c", "0"] + cmd
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=args.work)
    wall = time.time() - t0
    # 0: done; 1: done, the optimised network's outputs differ (still a JSON report)
    if r.returncode not in (0, 1) or not r.stdout.strip():
        msg = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
        return None, f"exit {r.returncode}: {msg}", cmd
    report = json.loads(r.stdout.strip().splitlines()[-1])
    report["wall_s"] = wall
    report["exit"] = r.returncode
    return report, "", cmd


def fmt_row(model: str, search: str, rep: dict | None, err: str, ort_err: float | None, ort_msg: str) -> str:
    err, ort_msg = err.replace("|", "\\|"), ort_msg.replace("|", "\\|")  # inside a table cell
    if rep is None:
        return f"| {model} | {search} | failed: {err} | | | | | |"
    cost = f"{rep['cost_before_ms']:.3f} -> {rep['cost_after_ms']:.3f}"
    if "latency_ms" in rep:
        lb, la = rep["latency_ms"]["before"], rep["latency_ms"]["after"]
        lat = f"{lb:.3f} -> {la:.3f} ({la / lb:.3f}x)" if lb > 0 else f"{lb:.3f} -> {la:.3f}"
        if not rep.get("correct", True):
            lat += f", rltune check FAILED (max error {rep['max_error']:.2g})"
    else:
        lat = "not measured"
    ortc = f"{ort_err:.1e}" if ort_err is not None else f"**{ort_msg}**"
    if ort_err is not None and ort_err > ORT_TARGET:
        ortc = f"**{ortc}** (> {ORT_TARGET:g})"
    return (f"| {model} | {search} | {rewrites_summary(rep['rewrites'])} | {cost} | {lat} | "
            f"{rep['cost_evals']} | {rep['search_s']:.1f} | {ortc} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=DEFAULT_MODELS, help=f"comma-separated (default {DEFAULT_MODELS})")
    ap.add_argument("--searches", default="none,greedy,taso",
                    help="comma-separated searches of rltune graph-opt (default none,greedy,taso)")
    ap.add_argument("--work", default="/tmp/graph_opt", help="models, optimised graphs, database (made if missing)")
    ap.add_argument("--policy", default=str(Path(__file__).resolve().parents[2] / "models" / "graph_rewrite.rlp"),
                    help="search rl: the policy (default models/graph_rewrite.rlp)")
    ap.add_argument("--budget", type=int, help="passed to graph-opt (its default: 200)")
    ap.add_argument("--alpha", type=float, help="passed to graph-opt (its default: 1.05)")
    ap.add_argument("--time-limit", type=float, help="passed to graph-opt, seconds per search")
    ap.add_argument("--db", default=None,
                    help="records database passed to graph-opt (default WORK/graph_opt.db; 'none': no database)")
    ap.add_argument("--repeat", type=int, default=10, help="timed runs of each network (graph-opt --repeat)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the ONNX Runtime check's input (default 0)")
    ap.add_argument("--no-measure", action="store_true", help="costs only: graph-opt --no-measure")
    ap.add_argument("--no-pin", action="store_true", help="do not pin graph-opt to core 0")
    ap.add_argument("--rltune", default=str(ROOT / "build" / "rltune"))
    ap.add_argument("--md", help="write the table, with the command and date, to this file")
    ap.add_argument("--json", help="write every number to this file")
    args = ap.parse_args()
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    searches = [s.strip() for s in args.searches.split(",") if s.strip()]
    work = Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    args.work = str(work)
    if args.db is None:
        args.db = str(work / "graph_opt.db")
    elif args.db == "none":
        args.db = ""
    else:
        args.db = str(Path(args.db).resolve())
    args.rltune = str(Path(args.rltune).resolve())
    if not Path(args.rltune).is_file():
        sys.exit(f"no rltune binary at {args.rltune} (build it, or --rltune)")

    results = []
    for m in models:
        path = work / f"{m}.onnx"
        if not path.exists():
            subprocess.run([sys.executable, str(MAKE), "--out", str(work), "--only", m],
                           check=True, capture_output=True, text=True)
        sess = ort_session(str(path))
        feeds = seeded_inputs(sess, args.seed)
        ref = [o.astype(np.float64) for o in sess.run(None, feeds)]
        for s in searches:
            out = work / f"{m}.{s}.onnx"
            if out.exists():
                out.unlink()
            print(f"{m} {s} ...", file=sys.stderr, flush=True)
            rep, err, cmd = run_graph_opt(args, path, s, out)
            ort_err, ort_msg = (None, "no output written")
            if rep is not None and out.exists():
                ort_err, ort_msg = ort_error(out, feeds, ref)
            row = {"model": m, "search": s, "command": shlex.join(cmd), "report": rep, "error": err,
                   "ort_max_error": ort_err, "ort_message": ort_msg}
            results.append(row)
            line = fmt_row(m, s, rep, err, ort_err, ort_msg)
            print("  " + line, file=sys.stderr, flush=True)

    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    date = time.strftime("%Y-%m-%d %H:%M")
    head = (f"{date}, {cpu}, batch 1, 1 thread{'' if args.no_pin else ' (taskset -c 0)'}, graph-opt"
            + (" --no-measure" if args.no_measure else f" --repeat {args.repeat}")
            + (f" --budget {args.budget}" if args.budget is not None else "")
            + (f" --alpha {args.alpha}" if args.alpha is not None else "")
            + (f" --time-limit {args.time_limit}" if args.time_limit is not None else "")
            + (f", db {args.db}" if args.db else ", no database"))
    lines = ["| model | search | rewrites | cost ms before -> after | latency ms before -> after (ratio) "
             "| cost evaluations | search s | ORT max error |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [fmt_row(r["model"], r["search"], r["report"], r["error"], r["ort_max_error"], r["ort_message"])
              for r in results]
    table = "\n".join(lines)
    print(f"\n{head}\n\n{table}")
    if args.md:
        command = shlex.join([sys.executable, *sys.argv])
        Path(args.md).write_text(f"# bench/graph_opt\n\n`{command}`\n\n{head}\n\n{table}\n\n"
                                 f"Cost: the sum of the graph's kernels' measured times (rltune's cost model); "
                                 f"latency: both networks compiled and timed by graph-opt (best of two medians "
                                 f"of {args.repeat} runs); ORT max error: the written graph's outputs in ONNX "
                                 f"Runtime against the original model's, over the largest |output| "
                                 f"(target {ORT_TARGET:g}).\n")
    if args.json:
        Path(args.json).write_text(json.dumps({"date": date, "cpu": cpu, "argv": sys.argv, "results": results},
                                              indent=1))
    failed = [r for r in results if r["report"] is None or r["ort_max_error"] is None
              or r["ort_max_error"] > ORT_TARGET or not r["report"].get("correct", True)]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
