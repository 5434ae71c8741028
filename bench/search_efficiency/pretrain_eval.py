#!/usr/bin/env python3
"""pretrain_eval.py - does a GA-DQN agent trained on other workloads beat GA on unseen ones? (issue 33)

    pretrain_eval.py [--group G] [--epochs E] [--train-seeds S] [--tuner-opt O] [--test-opt O]
                     [--agent FILE] [--save FILE] [--no-fresh] [--seeds N]

Replay only, nothing is measured: seconds a run. One ga-dqn agent is
carried (`tune --agent-in / --agent-out`) through E (3) passes over the
group's training datasets (pretrain.txt's, datasets/g<i>.db), S (4) runs of
512 trials each per dataset and pass (or --agent FILE is taken as it is);
then ga, ga-dqn fresh and ga-dqn starting from that agent tune each test
dataset (subspaces.txt's, datasets/f<i>.db: workloads the agent never saw),
(--agent built-in: the agents built into rltune),
seeds 1 to 10 (--seeds), 512 trials. Printed: each tuner's mean measurements to reach
95% of the dataset's best (513 when a run never does), and the geometric
mean over the test workloads of each ga-dqn's mean against ga's (issue
33's target: 0.8 at most). Groups: all (default: every training dataset,
every test one), matmul, conv2d (3x3), conv1x1, and seen (trained on the
test datasets themselves: not transfer, a bound on what the state can learn). --tuner-opt goes to every
ga-dqn run, --test-opt to the test runs only (after --tuner-opt);
--save keeps the trained agent. $RLTUNE: the rltune binary (build/rltune)."""
import argparse, json, math, os, shutil, sqlite3, subprocess, sys, statistics, tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
R = os.environ.get("RLTUNE", str(HERE.parents[1] / "build" / "rltune"))  # a copy, to rebuild while it runs
D = str(HERE / "datasets") + "/"


def ops_of(listing):
    """The ops of a listing (subspaces.txt, pretrain.txt), in order."""
    return [line.split()[0] for line in open(HERE / listing) if line.strip() and not line.startswith("#")]


F_OPS, G_OPS = ops_of("subspaces.txt"), ops_of("pretrain.txt")
TRAIN = [(op, f"{D}g{i + 1}.db") for i, op in enumerate(G_OPS)]
TEST = [(op, f"{D}f{i + 1}.db") for i, op in enumerate(F_OPS)]
GROUPS = {
    "all": {"train": TRAIN, "test": TEST},
    "matmul": {"train": TRAIN[0:3], "test": TEST[0:4]},
    "conv2d": {"train": [TRAIN[5], TRAIN[8]], "test": TEST[4:7]},
    "conv1x1": {"train": [TRAIN[6]], "test": TEST[7:8]},
    # not a test of transfer: trained on the test datasets themselves, how far this state can go at all
    "seen": {"train": TEST, "test": TEST},
}
TRIALS, SEEDS = 512, 10
WORK = tempfile.mkdtemp(prefix="rlt_pretrain_")


def tune(op, ds, tuner, seed, agent_in=None, agent_out=None, options=None):
    cmd = [R, "tune", "--op", op, "--tuner", tuner, "--measure", "replay:" + ds, "--trials", str(TRIALS),
           "--seed", str(seed), "--json"]
    if agent_in: cmd += ["--agent-in", agent_in]
    if agent_out: cmd += ["--agent-out", agent_out]
    if options: cmd += ["--tuner-opt", options]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{out.stderr}")
    return json.loads(out.stdout)["curve"]


def join(*options):
    """Tuner options joined for --tuner-opt (None when there are none)."""
    return ",".join(o for o in options if o) or None


def best_of(ds):
    return sqlite3.connect(ds).execute("SELECT MAX(gflops) FROM measurements WHERE status='OK'").fetchone()[0]


def to95(curve, best):
    for i, v in enumerate(curve):
        if v >= 0.95 * best:
            return i + 1
    return TRIALS + 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--group", default="all", choices=list(GROUPS))
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--train-seeds", type=int, default=4)
    ap.add_argument("--tuner-opt", default=None)
    ap.add_argument("--test-opt", default=None)
    ap.add_argument("--agent", default=None)
    ap.add_argument("--save", default=None)
    ap.add_argument("--no-fresh", action="store_true", help="skip the fresh ga-dqn runs")
    ap.add_argument("--seeds", type=int, default=SEEDS, help="test runs per tuner and dataset (seeds 1..N; 0: train only)")
    a = ap.parse_args()
    g = GROUPS[a.group]
    agent, n = a.agent, 0
    if not agent:
        for e in range(a.epochs):
            for op, ds in g["train"]:
                for s in range(a.train_seeds):
                    out = f"{WORK}/agent_{n}.agent"
                    first = None if agent else "ga_dqn_fresh=1"
                    tune(op, ds, "ga-dqn", 1000 + n, agent_in=agent, agent_out=out, options=join(a.tuner_opt, first))
                    agent, n = out, n + 1
        print(f"== {a.group}: agent trained over {n} runs", flush=True)
        if a.save:
            shutil.copy(agent, a.save)
    if a.seeds == 0:
        return
    test_opt = join(a.tuner_opt, a.test_opt)
    runs = [("ga", "ga", None, None), ("ga-dqn", "ga-dqn", None, join(a.tuner_opt, "ga_dqn_fresh=1")),
            ("ga-dqn pre", "ga-dqn", None if agent == "built-in" else agent, test_opt)]
    if a.no_fresh:
        del runs[1]
    ratios = {label: [] for label, *_ in runs[1:]}
    for op, ds in g["test"]:
        best = best_of(ds)
        res = {}
        for label, tuner, ain, opt in runs:
            res[label] = [to95(tune(op, ds, tuner, s, agent_in=ain, options=opt), best) for s in range(1, a.seeds + 1)]
        m = {k: statistics.mean(v) for k, v in res.items()}
        print(f"{op}: mean measurements to 95%: " + ", ".join(f"{k} {v:.1f}" for k, v in m.items()), flush=True)
        for k in ratios:
            ratios[k].append(m[k] / m["ga"])
    for k, v in ratios.items():
        print(f"{a.group}: {k} / ga geomean {math.exp(sum(map(math.log, v)) / len(v)):.3f} (per workload "
              + ", ".join(f"{x:.2f}" for x in v) + ")", flush=True)


try:
    main()
finally:
    shutil.rmtree(WORK, ignore_errors=True)
