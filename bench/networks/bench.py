#!/usr/bin/env python3
"""bench.py - whole networks, rltune against ONNX Runtime, batch 1.

    bench.py [--models resnet18,mobilenet_v2,squeezenet1_1,bert_layer] [--threads 1,2]
             [--dir /tmp/models] [--db FILE] [--tune-trials N] [--repeat R] [--rltune build/rltune]
             [--onednn [build/bench_dnnl_net]] [--layout nchw|nchwc] [--json OUT.json]

For every model (written by make_models.py into --dir when absent, seed 0):

1. ONNX Runtime (ort_baseline.py): the reference output of the seed-0 input
   and the latency at each thread count, the process pinned to as many
   cores (taskset -c 0 / 0,1), median and min of R runs after warm-up.
2. With --tune-trials N: `rltune tune --model` with N trials per thread
   count into --db (records kept: a rerun continues), wall time reported.
3. `rltune run` at each thread count, pinned the same way, on the same input:
   median and min of R runs after warm-up, its own check against its
   reference, and the output compared with ONNX Runtime's (max |diff| over
   max |ORT|; the bar is 1e-4).
4. With --onednn: the network as a chain of oneDNN primitives
   (bench_dnnl_net, bench/networks/dnnl_net.c), pinned the same way, on the
   same input, checked against ONNX Runtime's output (1e-4), median and min
   of R runs after warm-up. A model it does not build (an op it has no
   primitive for: it says which) gets no oneDNN numbers.
Steps 1, 3 and 4 alternate --rounds times (default 3); the table gives the
median of the rounds' medians (the JSON each round's): on a shared host the
second core's speed comes and goes, and alternating exposes both to it.

Prints a markdown table (ratio = rltune median / ORT median: below 1 is
faster than ORT; with --onednn also oneDNN's median and rltune / oneDNN)
and, with --json, writes every number. Each step runs alone: nothing is
compiled while something is timed.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def pin(threads: int) -> list[str]:
    cores = ",".join(str(c) for c in range(threads))
    return ["taskset", "-c", cores]


def run_json(cmd: list[str], **kw) -> dict:
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode not in (0, 1):
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def run_onednn(cmd: list[str]) -> dict | None:
    """bench_dnnl_net's JSON line; None when it does not build the model
    (exit status 2: the reason goes to stderr). Any other failure, a wrong
    answer included, ends the benchmark."""
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode == 2:
        print(f"oneDNN chain: {r.stderr.strip()}", file=sys.stderr)
        return None
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="resnet18,mobilenet_v2,squeezenet1_1,bert_layer")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--dir", default="/tmp/models")
    ap.add_argument("--db", default=None, help="records database for run and tune (default: none, seeds only)")
    ap.add_argument("--tune-trials", type=int, default=0)
    ap.add_argument("--tuner", default="xgb-rank")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3, help="ORT and rltune alternately this many times")
    ap.add_argument("--rltune", default=str(ROOT / "build" / "rltune"))
    ap.add_argument("--onednn", nargs="?", const=str(ROOT / "build" / "bench_dnnl_net"), default=None,
                    help="also time the network as a chain of oneDNN primitives (bench_dnnl_net; "
                         "default build/bench_dnnl_net)")
    ap.add_argument("--layout", default=None,
                    help="rltune's --layout for tune and run (nchw or nchwc; default: rltune's default)")
    ap.add_argument("--json", help="write every number to this file")
    args = ap.parse_args()
    models = [m for m in args.models.split(",") if m]
    threads = [int(t) for t in args.threads.split(",")]
    d = Path(args.dir)
    d.mkdir(parents=True, exist_ok=True)
    py = sys.executable
    onednn = args.onednn
    if onednn and not Path(onednn).is_file():
        print(f"--onednn: {onednn} does not exist (built when CMake finds oneDNN: libdnnl-dev); "
              "no oneDNN numbers", file=sys.stderr)
    has_onednn = bool(onednn) and Path(onednn).is_file()
    results = []
    for m in models:
        onnx_path = d / f"{m}.onnx"
        if not onnx_path.exists():
            subprocess.run([py, str(HERE / "make_models.py"), "--out", str(d), "--only", m], check=True)
        x, y_ort = d / f"{m}.in.npy", d / f"{m}.out.npy"
        row = {"model": m, "threads": {}}
        builds_onednn = has_onednn  # until bench_dnnl_net says it does not build this model
        for t in threads:
            cell = {}
            if args.tune_trials > 0:
                assert args.db, "--tune-trials needs --db"
                t0 = time.time()
                tune = run_json([args.rltune, "tune", "--model", str(onnx_path), "--trials", str(args.tune_trials),
                                 "--tuner", args.tuner, "--threads", str(t), "--db", args.db, "--json"]
                                + (["--layout", args.layout] if args.layout else []))
                cell["tune_wall_s"] = time.time() - t0
                cell["tune_trials"] = tune["trials"] + tune["recorded"]
                cell["tune_latency_estimate_ms"] = tune["latency_ms"]
            # ORT and rltune alternately, --rounds times: the median of the
            # rounds' medians (a shared host's second core comes and goes)
            y_rlt = d / f"{m}.rltune.t{t}.npy"
            cmd = pin(t) + [args.rltune, "run", "--model", str(onnx_path), "--input", str(x), "--output", str(y_rlt),
                            "--threads", str(t), "--repeat", str(args.repeat), "--json"]
            if args.db:
                cmd += ["--db", args.db]
            if args.layout:
                cmd += ["--layout", args.layout]
            dnnl_cmd = pin(t) + [str(onednn), str(onnx_path), "--input", str(x), "--check", str(y_ort),
                                 "--threads", str(t), "--repeat", str(args.repeat), "--json"]
            ort_runs, rl_runs, dnnl_runs = [], [], []
            for _ in range(args.rounds):
                ort_runs.append(run_json(pin(t) + [py, str(HERE / "ort_baseline.py"), str(onnx_path), "--seed", "0",
                                                   "--write-input", str(x), "--write-output", str(y_ort),
                                                   "--threads", str(t), "--repeat", str(args.repeat),
                                                   "--json"])["threads"][str(t)])
                rl_runs.append(run_json(cmd, cwd=d))
                if builds_onednn:
                    r = run_onednn(dnnl_cmd)
                    if r is None:
                        builds_onednn = False
                    else:
                        dnnl_runs.append(r)
            rl = rl_runs[0]
            ours, theirs = np.load(y_rlt), np.load(y_ort)
            cell.update({"ort_median_ms": statistics.median(r["median_ms"] for r in ort_runs),
                         "ort_min_ms": min(r["min_ms"] for r in ort_runs),
                         "ort_round_medians_ms": [r["median_ms"] for r in ort_runs],
                         "rltune_median_ms": statistics.median(r["latency_ms"]["median"] for r in rl_runs),
                         "rltune_min_ms": min(r["latency_ms"]["min"] for r in rl_runs),
                         "rltune_round_medians_ms": [r["latency_ms"]["median"] for r in rl_runs],
                         "rltune_correct": all(r["correct"] for r in rl_runs), "tasks_tuned": rl["tasks_tuned"],
                         "tasks_untuned": rl["tasks_untuned"], "compile_s": rl["compile_s"],
                         "peak_memory_bytes": rl["peak_memory_bytes"],
                         "error_vs_ort": float(np.abs(ours - theirs).max() / np.abs(theirs).max())})
            cell["ratio"] = cell["rltune_median_ms"] / cell["ort_median_ms"]
            also = ""
            if builds_onednn and dnnl_runs:
                cell.update({"onednn_median_ms": statistics.median(r["median_ms"] for r in dnnl_runs),
                             "onednn_min_ms": min(r["min_ms"] for r in dnnl_runs),
                             "onednn_round_medians_ms": [r["median_ms"] for r in dnnl_runs],
                             "onednn_error_vs_ort": max(r["max_rel_err"] for r in dnnl_runs)})
                cell["ratio_vs_onednn"] = cell["rltune_median_ms"] / cell["onednn_median_ms"]
                also = (f", oneDNN {cell['onednn_median_ms']:.3f} ms "
                        f"(rltune / oneDNN {cell['ratio_vs_onednn']:.2f}x)")
            row["threads"][str(t)] = cell
            print(f"{m} t{t}: ORT {cell['ort_median_ms']:.3f} ms, rltune {cell['rltune_median_ms']:.3f} ms "
                  f"({cell['ratio']:.2f}x){also}, error vs ORT {cell['error_vs_ort']:.2e}", file=sys.stderr)
        results.append(row)
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"\n{time.strftime('%Y-%m-%d')}, {cpu}, batch 1, median of {args.rounds} rounds' medians of "
          f"{args.repeat} runs, "
          f"{'db ' + args.db if args.db else 'untuned (seed schedules)'}\n")
    if onednn:
        print("| model | threads | ONNX Runtime ms | rltune ms | rltune / ORT | oneDNN ms | rltune / oneDNN | "
              "tasks tuned | error vs ORT |")
        print("|---|---|---|---|---|---|---|---|---|")
    else:
        print("| model | threads | ONNX Runtime ms | rltune ms | rltune / ORT | tasks tuned | error vs ORT |")
        print("|---|---|---|---|---|---|---|")
    for row in results:
        for t, c in row["threads"].items():
            dnnl = ""
            if onednn:
                has = "onednn_median_ms" in c
                dnnl = (f" {c['onednn_median_ms']:.3f} | {c['ratio_vs_onednn']:.2f}x |" if has else " — | — |")
            print(f"| {row['model']} | {t} | {c['ort_median_ms']:.3f} | {c['rltune_median_ms']:.3f} | "
                  f"{c['ratio']:.2f}x |{dnnl} {c['tasks_tuned']}/{c['tasks_tuned'] + c['tasks_untuned']} | "
                  f"{c['error_vs_ort']:.1e} |")
    if args.json:
        out = {"cpu": cpu, "date": time.strftime("%Y-%m-%d"), "repeat": args.repeat, "results": results}
        if has_onednn:
            out["onednn"] = str(onednn)
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
