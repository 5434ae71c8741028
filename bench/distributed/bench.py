#!/usr/bin/env python3
"""bench/distributed/bench.py - tuning throughput of `--executor mpi`
(issue 31): trials per second of `rltune tune` with the local executor and
under mpirun with 1, 2 and 3 ranks, each run on a cold compile cache of its
own, the median of --repeat runs per setting, the settings alternated so
that the machine's drift touches all of them alike.

On one machine this is a simulation of a farm: the ranks share its cores,
so builds cannot get faster than the local run's two compilers; what it
measures is the executor's own cost (shares sent, per-host timing turns,
results returned) against a local run. Several hosts are needed for the
near-linear compile throughput the executor is for.

    .venv/bin/python bench/distributed/bench.py [--op SPEC] [--trials N] [--batch N] [--repeat R]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_once(rltune, setting, args, work):
    cache = tempfile.mkdtemp(prefix="cache_", dir=work)
    db = os.path.join(work, "bench_%s_%d.db" % (setting, time.monotonic_ns()))
    cmd = [rltune, "tune", "--op", args.op, "--tuner", "random", "--seed", "0", "--trials", str(args.trials),
           "--batch", str(args.batch), "--final", "0", "--seeds", "0", "--db", db, "--json"]
    env = dict(os.environ, RLTUNE_CACHE_DIR=cache, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    if setting != "local":
        n = setting.split("-")[1]
        cmd = ["mpirun", "--oversubscribe", "-np", n] + cmd + ["--executor", "mpi"]
    t0 = time.monotonic()
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    wall = time.monotonic() - t0
    shutil.rmtree(cache)
    os.unlink(db)
    r = json.loads(out)
    return r["measurements_per_s"], wall, r["best"]["gflops"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--op", default="matmul:M=256,N=256,K=256")
    p.add_argument("--trials", type=int, default=96)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--rltune", default=os.path.join(ROOT, "build", "rltune"))
    args = p.parse_args()
    settings = ["local", "mpi-1", "mpi-2", "mpi-3"]
    rates = {s: [] for s in settings}
    walls = {s: [] for s in settings}
    with tempfile.TemporaryDirectory(prefix="rltune_bench_mpi_") as work:
        for _ in range(args.repeat):
            for s in settings:
                rate, wall, _ = run_once(args.rltune, s, args, work)
                rates[s].append(rate)
                walls[s].append(wall)
    print("%s, %s, %d trials in batches of %d, random tuner, cold compile cache, median of %d runs, %d cores"
          % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), args.op, args.trials, args.batch, args.repeat,
             os.cpu_count()))
    print()
    print("| executor | trials/s (median) | runs | wall s (median) | / local |")
    print("|---|---|---|---|---|")
    base = statistics.median(rates["local"])
    for s in settings:
        m = statistics.median(rates[s])
        print("| %s | %.2f | %s | %.1f | %.2fx |" % (s, m, ", ".join("%.2f" % x for x in rates[s]),
                                                    statistics.median(walls[s]), m / base))
    return 0


if __name__ == "__main__":
    sys.exit(main())
