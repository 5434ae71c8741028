#!/usr/bin/env python3
"""pretrain_eval.py - does a GA-DQN agent trained on other workloads beat GA on unseen ones? (issue 33)

    pretrain_eval.py [GROUPS [EPOCHS [TRAIN_SEEDS [TUNER_OPTS]]]]

GROUPS: comma-separated of matmul, conv2d (3x3), conv1x1 (default all: an
agent fits only spaces with the same knobs, so each group trains its own).
Replay only, nothing is measured: seconds a run. For each group, one
ga-dqn agent is carried (`tune --agent-in / --agent-out`) through EPOCHS
(3) passes over its training datasets (pretrain.txt's, datasets/g<i>.db),
TRAIN_SEEDS (4) runs of 512 trials each per dataset and pass; then ga,
ga-dqn fresh and ga-dqn starting from that agent tune each test dataset
(subspaces.txt's, datasets/f<i>.db: workloads the agent never saw), seeds 1
to 10, 512 trials. Printed: each tuner's mean measurements to reach 95% of
the dataset's best (513 when a run never does), and per group the geometric
mean over the test workloads of each ga-dqn's mean against ga's (issue 33's
target: 0.8 at most). TUNER_OPTS goes to every ga-dqn run (`--tuner-opt`)."""
import json, math, shutil, sqlite3, subprocess, sys, statistics, tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
R = str(HERE.parents[1] / "build" / "rltune")
F = str(HERE / "datasets") + "/"
G = F
GROUPS = {
    "matmul": {
        "train": [("matmul:M=96,N=160,K=200", G + "g1.db"), ("matmul:M=64,N=384,K=96", G + "g2.db"),
                  ("matmul:M=200,N=72,K=136", G + "g3.db")],
        "test": [("matmul:M=128,N=128,K=128", F + "f1.db"), ("matmul:M=256,N=256,K=256", F + "f2.db"),
                 ("matmul:M=512,N=512,K=512", F + "f3.db"), ("matmul:M=127,N=255,K=509", F + "f4.db")],
    },
    "conv2d": {
        "train": [("conv2d:N=1,C=32,H=14,W=14,K=64,R=3,S=3,stride=1,pad=1", G + "g6.db"),
                  ("conv2d:N=1,C=48,H=7,W=7,K=96,R=3,S=3,stride=1,pad=1", G + "g9.db")],
        "test": [("conv2d:N=1,C=64,H=28,W=28,K=64,R=3,S=3,pad=1", F + "f5.db"),
                 ("conv2d:N=1,C=128,H=14,W=14,K=128,R=3,S=3,pad=1", F + "f6.db"),
                 ("conv2d:N=1,C=256,H=7,W=7,K=256,R=3,S=3,pad=1", F + "f7.db")],
    },
    "conv1x1": {
        "train": [("conv2d:N=1,C=96,H=14,W=14,K=48,R=1,S=1,stride=1,pad=0", G + "g7.db")],
        "test": [("conv2d:N=1,C=64,H=28,W=28,K=128,R=1,S=1,stride=2", F + "f8.db")],
    },
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


def best_of(ds):
    return sqlite3.connect(ds).execute("SELECT MAX(gflops) FROM measurements WHERE status='OK'").fetchone()[0]


def to95(curve, best):
    for i, v in enumerate(curve):
        if v >= 0.95 * best:
            return i + 1
    return TRIALS + 1


def main():
    groups = sys.argv[1].split(",") if len(sys.argv) > 1 else list(GROUPS)
    epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    train_seeds = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    options = sys.argv[4] if len(sys.argv) > 4 else None
    for g in groups:
        agent = None
        n = 0
        for e in range(epochs):
            for op, ds in GROUPS[g]["train"]:
                for s in range(train_seeds):
                    out = f"{WORK}/agent_{g}_{n}.agent"
                    tune(op, ds, "ga-dqn", 1000 + n, agent_in=agent, agent_out=out, options=options)
                    agent, n = out, n + 1
        print(f"== {g}: agent trained over {n} runs: {agent}", flush=True)
        ratios = {"ga-dqn": [], "ga-dqn pre": []}
        for op, ds in GROUPS[g]["test"]:
            best = best_of(ds)
            res = {}
            for label, tuner, ain in (("ga", "ga", None), ("ga-dqn", "ga-dqn", None), ("ga-dqn pre", "ga-dqn", agent)):
                res[label] = [to95(tune(op, ds, tuner, s, agent_in=ain, options=options if tuner == "ga-dqn" else None), best)
                              for s in range(1, SEEDS + 1)]
            m = {k: statistics.mean(v) for k, v in res.items()}
            print(f"{op}: mean measurements to 95%: " + ", ".join(f"{k} {v:.1f}" for k, v in m.items()), flush=True)
            for k in ratios:
                ratios[k].append(m[k] / m["ga"])
        for k, v in ratios.items():
            print(f"{g}: {k} / ga geomean {math.exp(sum(map(math.log, v)) / len(v)):.3f} (per workload "
                  + ", ".join(f"{x:.2f}" for x in v) + ")", flush=True)


try:
    main()
finally:
    shutil.rmtree(WORK, ignore_errors=True)
