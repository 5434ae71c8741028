#!/usr/bin/env python3
"""ort_baseline.py - reference outputs and baseline latency of an ONNX model
from ONNX Runtime (the PyPI wheel, CPU execution provider).

    ort_baseline.py MODEL.onnx [--input X.npy | --seed S] [--write-input X.npy]
                    [--write-output Y.npy] [--threads 1,2] [--repeat R] [--warmup W]
                    [--json]

The input: X.npy when given, else uniform [-1, 1) float32 of the model's
input shape from numpy's default_rng(S) (S = --seed, default 0), so that the
same seed gives the same input here, in rltune's checks and in tests. The
model must have static shapes and one float32 input.

For every thread count T of --threads (default 1), one InferenceSession with
graph_optimization_level ORT_ENABLE_ALL, intra_op_num_threads = T,
inter_op_num_threads = 1 and ORT_SEQUENTIAL execution; W warm-up runs
(default 5), then R timed runs (default 20), each timed alone with
time.perf_counter around session.run; the median and the minimum in ms.
The reference output (--write-output, the model's first output) is the
first session's; the others' outputs are compared with it (max_abs_diff in
the JSON; ORT's kernels may sum in another order with more threads).

The script pins nothing itself: pin it from outside, as the other
benchmarks are run (bench/RESULTS.md), with as many cores as the largest
thread count, e.g.

    taskset -c 0   .venv/bin/python bench/networks/ort_baseline.py m.onnx --threads 1
    taskset -c 0,1 .venv/bin/python bench/networks/ort_baseline.py m.onnx --threads 2

--json prints one JSON object on stdout:
    {"model": PATH, "input_shape": [...], "output_shape": [...],
     "ort_version": "...", "repeat": R, "warmup": W,
     "threads": {"1": {"median_ms": .., "min_ms": .., "max_abs_diff": ..}, ...},
     "output": {"min": .., "max": .., "mean": .., "std": .., "finite": true}}
otherwise a short table.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np


def make_input(shape: list[int], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--input", help="the input as a .npy file")
    src.add_argument("--seed", type=int, default=0, help="seed of the random input (default 0)")
    ap.add_argument("--write-input", help="write the input used to this .npy file")
    ap.add_argument("--write-output", help="write the reference output to this .npy file")
    ap.add_argument("--threads", default="1", help="comma-separated thread counts (default 1)")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    try:
        threads = [int(t) for t in args.threads.split(",") if t.strip()]
    except ValueError:
        ap.error("--threads takes comma-separated integers")
    if not threads or min(threads) < 1:
        ap.error("--threads takes counts >= 1")
    if args.repeat < 1 or args.warmup < 0:
        ap.error("--repeat must be >= 1 and --warmup >= 0")

    import onnxruntime as ort  # noqa: PLC0415 (after argument errors)

    def session(n_threads: int) -> ort.InferenceSession:
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.intra_op_num_threads = n_threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.log_severity_level = 3
        return ort.InferenceSession(args.model, so, providers=["CPUExecutionProvider"])

    first = session(threads[0])
    inputs = first.get_inputs()
    if len(inputs) != 1:
        print(f"ort_baseline.py: {args.model} has {len(inputs)} inputs; one is supported",
              file=sys.stderr)
        return 2
    info = inputs[0]
    shape = info.shape
    if not all(isinstance(d, int) and d >= 0 for d in shape):
        print(f"ort_baseline.py: input '{info.name}' has shape {shape}: static shapes needed",
              file=sys.stderr)
        return 2
    if info.type != "tensor(float)":
        print(f"ort_baseline.py: input '{info.name}' is {info.type}; float32 is supported",
              file=sys.stderr)
        return 2
    if args.input:
        x = np.load(args.input)
        if list(x.shape) != list(shape) or x.dtype != np.float32:
            print(f"ort_baseline.py: {args.input} holds {x.dtype}{list(x.shape)}; "
                  f"the model wants float32{list(shape)}", file=sys.stderr)
            return 2
    else:
        x = make_input(shape, args.seed)
    if args.write_input:
        np.save(args.write_input, x)
    feed = {info.name: x}

    ref = None
    results: dict[str, dict[str, float]] = {}
    for t in threads:
        sess = first if t == threads[0] and ref is None else session(t)
        y = sess.run(None, feed)[0]
        if ref is None:
            ref = y
        for _ in range(args.warmup):
            sess.run(None, feed)
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            sess.run(None, feed)
            times.append((time.perf_counter() - t0) * 1e3)
        results[str(t)] = {"median_ms": statistics.median(times), "min_ms": min(times),
                           "max_abs_diff": float(np.max(np.abs(y.astype(np.float64) - ref)))}
    assert ref is not None
    if args.write_output:
        np.save(args.write_output, ref)

    out_stats = {"min": float(ref.min()), "max": float(ref.max()), "mean": float(ref.mean()),
                 "std": float(ref.std()), "finite": bool(np.isfinite(ref).all())}
    if args.json:
        print(json.dumps({"model": args.model, "input_shape": list(shape),
                          "output_shape": list(ref.shape), "ort_version": ort.__version__,
                          "repeat": args.repeat, "warmup": args.warmup,
                          "threads": results, "output": out_stats}))
    else:
        print(f"model:  {args.model}")
        print(f"input:  {info.name} float32{list(shape)}; output {list(ref.shape)}: "
              f"min {out_stats['min']:.4g} max {out_stats['max']:.4g} "
              f"std {out_stats['std']:.4g}{'' if out_stats['finite'] else ' (NOT FINITE)'}")
        print(f"onnxruntime {ort.__version__}, ORT_ENABLE_ALL, sequential, "
              f"{args.warmup} warm-ups, {args.repeat} runs")
        print(f"{'threads':>7} {'median ms':>10} {'min ms':>10} {'max |diff|':>11}")
        for t, r in results.items():
            print(f"{t:>7} {r['median_ms']:>10.3f} {r['min_ms']:>10.3f} {r['max_abs_diff']:>11.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
