#!/usr/bin/env python3
"""seeds_ab.py - the rule-built seeds of two builds, measured against each other.

    seeds_ab.py --a A/bench_seeds --b B/bench_seeds
                [--models resnet18,squeezenet1_1,mobilenet_v2,inception_stack,bert_layer,vit_block]
                [--specs FILE] [--work /tmp/seeds_ab] [--rounds 2] [--repeat 10] [--warm]
                [--rltune build/rltune] [--md OUT.md] [--json OUT.json]

A change to the seed rating (src/space/seeds.c) changes the kernel every
untuned task of a network runs (`rltune run`) and the cost a graph search
(`rltune graph-opt`) gives it. This script finds what a change does:

1. The specs: the tasks of the models (`rltune tasks --json`; models
   written by bench/networks/make_models.py into --work when absent, seed
   0), or those of --specs (one op spec a line).
2. Each build's bench_seeds (bench/seeds.c, built with the build) prints
   the first seed of every spec and writes its schedule.
3. Every spec whose seed differs is measured with `rltune measure
   --schedule ... --cold --repeat R` (--warm: without --cold), A and B
   alternately, --rounds times; a variant's time is the median of its
   rounds' medians. The kernels are built and timed by one rltune (the
   C the schedules lower to is that rltune's), pinned by measure itself.

Prints a markdown table of the changed seeds (A's and B's keys, times and
A/B: above 1, B's seed is faster) with the geometric mean of A/B over them,
the best and the worst; --md writes it with the command, date and machine.
Run it on a quiet machine: nothing else may compile or run meanwhile.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MAKE = ROOT / "bench" / "networks" / "make_models.py"
DEFAULT_MODELS = "resnet18,squeezenet1_1,mobilenet_v2,inception_stack,bert_layer,vit_block"


def model_specs(args, work: Path) -> list[str]:
    specs: list[str] = []
    for m in args.models.split(","):
        path = work / f"{m}.onnx"
        if not path.exists():
            subprocess.run([sys.executable, str(MAKE), "--out", str(work), "--only", m],
                           check=True, stdout=subprocess.DEVNULL)
        out = subprocess.run([args.rltune, "tasks", "--model", str(path), "--json"],
                             check=True, capture_output=True, text=True).stdout
        specs += [t["spec"] for t in json.loads(out)["tasks"]]
    return sorted(set(specs))


def seeds_of(tool: str, specs: list[str], out: Path) -> dict[str, str]:
    out.mkdir(parents=True, exist_ok=True)
    res = subprocess.run([tool, "--out", str(out)], input="\n".join(specs) + "\n",
                         capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"seeds_ab: {tool} failed ({res.returncode}): {res.stderr.strip()}")
    keys = {}
    for line in res.stdout.splitlines():
        i, spec, key = line.split("\t")[:3]
        keys[spec] = (int(i), key)
    return keys


def measure(args, spec: str, sched: Path) -> float:
    cmd = [args.rltune, "measure", "--op", spec, "--schedule", str(sched), "--repeat", str(args.repeat), "--json"]
    if not args.warm:
        cmd.append("--cold")
    res = subprocess.run(cmd, capture_output=True, text=True)
    try:
        d = json.loads(res.stdout)
    except json.JSONDecodeError:
        return math.nan
    return d["time_ms"]["median"] if d.get("status") == "OK" else math.nan


def short(key: str) -> str:
    """The key without the knobs every seed sets alike."""
    drop = ("v1", "unroll=1", "order.s=")
    return ";".join(p for p in key.split(";") if not p.startswith(drop) and not p.endswith(".mid=1"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="build A's bench_seeds")
    ap.add_argument("--b", required=True, help="build B's bench_seeds")
    ap.add_argument("--models", default=DEFAULT_MODELS, help=f"comma-separated (default {DEFAULT_MODELS})")
    ap.add_argument("--specs", help="a file of op specs, one a line, instead of the models' tasks")
    ap.add_argument("--work", default="/tmp/seeds_ab", help="models and schedules (made if missing)")
    ap.add_argument("--rounds", type=int, default=2, help="A/B alternations per spec (default 2)")
    ap.add_argument("--repeat", type=int, default=10, help="timed samples per measurement (default 10)")
    ap.add_argument("--warm", action="store_true", help="time warm (default: --cold, as graph costs are)")
    ap.add_argument("--rltune", default=str(ROOT / "build" / "rltune"))
    ap.add_argument("--md", help="write the table, with the command and date, to this file")
    ap.add_argument("--json", help="write every number to this file")
    args = ap.parse_args()

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    if args.specs:
        specs = [l.strip() for l in Path(args.specs).read_text().splitlines() if l.strip() and not l.startswith("#")]
    else:
        specs = model_specs(args, work)
    a = seeds_of(args.a, specs, work / "A")
    b = seeds_of(args.b, specs, work / "B")
    changed = [s for s in specs if s in a and s in b and a[s][1] != b[s][1]]
    print(f"{len(specs)} specs, {len(changed)} seeds changed", file=sys.stderr)

    rows = []
    for n, spec in enumerate(changed):
        times = {"A": [], "B": []}
        for _ in range(args.rounds):
            for v, keys in (("A", a), ("B", b)):
                times[v].append(measure(args, spec, work / v / f"{keys[spec][0]}.0.sched"))
        ta, tb = (statistics.median(times[v]) for v in ("A", "B"))
        rows.append({"spec": spec, "a_key": a[spec][1], "b_key": b[spec][1], "a_ms": ta, "b_ms": tb,
                     "a_samples": times["A"], "b_samples": times["B"], "a_over_b": ta / tb})
        print(f"[{n + 1}/{len(changed)}] {spec}: A {ta:.3f} ms, B {tb:.3f} ms, A/B {ta / tb:.2f}", file=sys.stderr)

    ok = [r["a_over_b"] for r in rows if math.isfinite(r["a_over_b"])]
    geo = math.exp(sum(map(math.log, ok)) / len(ok)) if ok else math.nan
    lines = ["| spec | A's seed | B's seed | A ms | B ms | A/B |", "|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: r["a_over_b"] if math.isfinite(r["a_over_b"]) else 0):
        lines.append(f"| {r['spec']} | {short(r['a_key'])} | {short(r['b_key'])} | {r['a_ms']:.3f} | "
                     f"{r['b_ms']:.3f} | {r['a_over_b']:.2f} |")
    summary = (f"{len(specs)} specs, {len(changed)} seeds changed, {len(ok)} measured on both: geometric mean "
               f"A/B {geo:.3f}" + (f", worst {min(ok):.2f}, best {max(ok):.2f}" if ok else ""))
    table = "\n".join(lines + ["", summary])
    print(table)
    if args.md:
        cmd = " ".join(shlex.quote(x) for x in sys.argv)
        head = (f"`{cmd}`\n\n{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.node()}, "
                f"{os.cpu_count()} CPUs, {'warm' if args.warm else 'cold'}, {args.rounds} rounds x "
                f"{args.repeat} samples\n\n")
        Path(args.md).write_text(head + table + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps({"specs": len(specs), "changed": len(changed), "geomean_a_over_b": geo,
                                               "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
