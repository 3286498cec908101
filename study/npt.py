#!/usr/bin/env python3
"""NP-T + NNLS (seed 002) against MHETA on a fixture (Jacobi or CG) over an HY1-like cluster of
two groups of four nodes, allocating processes per node.

Usage (from the repository root, after `cargo build --release -p jacobi -p cg` and `cargo build
-p mheta-cli`):

    python3 study/npt.py [--program jacobi] [--out study/npt] [--iterations 10] [--target 2500]
    python3 study/npt.py --program cg --out study/npt-cg --target 200000 --fit-sizes 100000,200000,300000
    python3 study/npt.py --program rna --out study/npt-rna --target 8000 --fit-sizes 4000,8000,12000
    python3 study/npt.py --cluster fixtures/clusters/hy2-8.toml --max-ranks 1 --no-per-allocation \
        --out /tmp/npt-hy2   # the groups of a cluster file: see study/npt.md on HY2 and HY3

Groups: `fast` (HY1's varying-CPU kind at power 1.0: 256 MiB, normal disk) and `small` (HY1's
small-memory, slow-disk kind: power 0.5, 6 MiB, 50/40 MB/s, 8 ms), four nodes each, one or two
processes per node (`ranks` in cluster.toml). Every run is the fixture on the virtual clock
(thread CPU time / power + emulated disk and network), Block distribution over the ranks.

1. NP-T: runs of each group alone, P_i = 1..4 nodes, M_i = 1, 2, at N = 1000, 2000, 3000 rows
   (48 runs; other sizes with --fit-sizes), fitted by `mheta fit` / `mheta allocate` (the
   family named like the program, ours: `runtime/model/src/empirical/family.rs`; NNLS).
2. The alternatives: every configuration (80) at the target size, one uninstrumented run each
   (`--timings`): the true optimum, ε of each method's choice, each method's prediction error.
3. MHETA: its model predicts a distribution over a fixed set of ranks, so to compare allocations
   it needs one instrumented run of each configuration (80), then `mheta predict --distribution
   block`.

Writes OUT/runs.json (the fitting runs), OUT/measured.json (the alternatives), OUT/mheta.json
(MHETA's predictions), OUT/allocate.json and OUT/summary.json, and prints a Markdown table.
The seconds it reports are taken on whatever machine runs it; on a shared machine they are
taken with the load average the summary records (`load`): quiet only when nothing else ran.
"""

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
import tomllib

GROUPS = [
    {"name": "fast", "nodes": 4, "cpu": 1.0, "memory": "256MiB",
     "disk_read": "200MB/s", "disk_write": "150MB/s", "disk_latency": "1ms"},
    {"name": "small", "nodes": 4, "cpu": 0.5, "memory": "6MiB",
     "disk_read": "50MB/s", "disk_write": "40MB/s", "disk_latency": "8ms"},
]
MAX_RANKS = 2
CLUSTER = "hy1-like 4+4"
NETWORK = {"latency": "60us", "bandwidth": "125MB/s"}
NODE_KEYS = ["cpu", "memory", "disk_read", "disk_write", "disk_latency"]


def use_cluster(path):
    """Make the groups those of a cluster.toml: runs of identical nodes (every key of NODE_KEYS
    equal) in the file's order, a `count = k` entry being k identical nodes, on the file's
    network. HY2 has six groups (four single nodes of varying CPU power, two pairs), HY3 eight
    single nodes."""
    global GROUPS, CLUSTER, NETWORK
    with open(path, "rb") as f:
        spec = tomllib.load(f)
    NETWORK = spec["network"]
    groups = []
    for node in spec["node"]:
        kind = {k: node[k] for k in NODE_KEYS}
        count = node.get("count", 1)
        if groups and all(groups[-1][k] == kind[k] for k in NODE_KEYS):
            groups[-1]["nodes"] += count
        else:
            groups.append(dict(kind, name=f"g{len(groups)}", nodes=count))
    GROUPS = groups
    CLUSTER = os.path.basename(path)


def cluster_toml(allocation):
    text = f'[network]\nlatency = "{NETWORK["latency"]}"\nbandwidth = "{NETWORK["bandwidth"]}"\n'
    for g, (nodes, ranks) in zip(GROUPS, allocation):
        if nodes == 0:
            continue
        text += (
            f'\n[[node]]\ncount = {nodes}\nranks = {ranks}\ncpu = {g["cpu"]}\n'
            f'memory = "{g["memory"]}"\ndisk_read = "{g["disk_read"]}"\n'
            f'disk_write = "{g["disk_write"]}"\ndisk_latency = "{g["disk_latency"]}"\n'
        )
    return text


def configurations():
    states = [[(0, 0)] + [(p, m) for p in range(1, g["nodes"] + 1) for m in range(1, MAX_RANKS + 1)]
              for g in GROUPS]
    for c in itertools.product(*states):
        if any(p for p, _ in c):
            yield [list(x) for x in c]


def label(allocation):
    return "(" + ", ".join(f"{p}, {m}" for p, m in allocation) + ")"


class Runner:
    def __init__(self, program, iterations, scratch):
        self.program = program
        self.iterations = iterations
        self.scratch = scratch
        self.runs = 0
        self.seconds = 0.0

    def run(self, allocation, rows, instrument=False):
        """One run; returns (seconds per iteration, measurements path, structure path)."""
        d = tempfile.mkdtemp(dir=self.scratch)
        cluster = os.path.join(d, "cluster.toml")
        with open(cluster, "w") as f:
            f.write(cluster_toml(allocation))
        timings = os.path.join(d, "timings.json")
        cmd = [self.program, "--cluster", cluster, "--rows", str(rows), "--iterations",
               str(self.iterations), "--clock", "virtual", "--timings", timings]
        measurements = os.path.join(d, "measurements.json")
        structure = os.path.join(d, "structure.json")
        if instrument:
            cmd += ["--instrument", "--measurements", measurements, "--emit-structure", structure]
        begin = time.monotonic()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, timeout=600)
        self.seconds += time.monotonic() - begin
        self.runs += 1
        with open(timings) as f:
            return json.load(f)["iteration_s"], measurements, structure, cluster


def mheta_json(mheta, args):
    out = subprocess.run([mheta] + args, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main():
    global MAX_RANKS
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--program", default="jacobi", choices=["jacobi", "cg", "rna"],
                    help="the fixture")
    ap.add_argument("--family", help="the NP-T model family (default: the program's, pipeline for rna)")
    ap.add_argument("--out", default="study/npt")
    ap.add_argument("--binary", help="the fixture's binary (default target/release/PROGRAM)")
    ap.add_argument("--fit-sizes", default="1000,2000,3000",
                    help="the sizes N of the NP-T model's runs, comma-separated")
    ap.add_argument("--mheta", default="target/debug/mheta")
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--target", type=int, default=2500)
    ap.add_argument("--cluster", help="group the nodes of this cluster.toml (runs of identical "
                    "nodes) instead of the HY1-like 4+4 groups")
    ap.add_argument("--max-ranks", type=int, default=MAX_RANKS,
                    help="the most processes per node (default 2)")
    ap.add_argument("--no-per-allocation", action="store_true",
                    help="skip MHETA's instrumented run of every allocation (npt_retarget.py "
                    "predicts them from one)")
    a = ap.parse_args()
    MAX_RANKS = a.max_ranks
    if a.cluster:
        use_cluster(a.cluster)
    binary = a.binary or f"target/release/{a.program}"
    family = a.family or {"rna": "pipeline"}.get(a.program, a.program)
    fit_sizes = [int(n) for n in a.fit_sizes.split(",")]
    os.makedirs(a.out, exist_ok=True)
    groups = [{"name": g["name"], "nodes": g["nodes"]} for g in GROUPS]
    with tempfile.TemporaryDirectory(prefix="mheta-npt-") as scratch:
        # 1. The NP-T model's runs: each group alone.
        fit = Runner(binary, a.iterations, scratch)
        runs = []
        for gi, g in enumerate(GROUPS):
            for m in range(1, MAX_RANKS + 1):
                for p in range(1, g["nodes"] + 1):
                    for n in fit_sizes:
                        alloc = [[0, 0] for _ in GROUPS]
                        alloc[gi] = [p, m]
                        s, *_ = fit.run(alloc, n)
                        runs.append({"size": n, "allocation": alloc, "seconds": s})
                        print(f"fit {label(alloc)} N={n}: {s:.6f} s", file=sys.stderr)
        runs_file = os.path.join(a.out, "runs.json")
        with open(runs_file, "w") as f:
            json.dump({"schema": "mheta-runs/1", "program": a.program, "cluster": CLUSTER,
                       "groups": groups, "runs": runs}, f, indent=1)
        # 2. The alternatives, and 3. MHETA's instrumented run of each.
        alt = Runner(binary, a.iterations, scratch)
        ins = Runner(binary, a.iterations, scratch)
        measured, predicted = [], []
        for alloc in configurations():
            s, *_ = alt.run(alloc, a.target)
            measured.append({"size": a.target, "allocation": alloc, "seconds": s})
            if a.no_per_allocation:
                print(f"alt {label(alloc)}: {s:.6f} s", file=sys.stderr)
                continue
            _, m, st, cl = ins.run(alloc, a.target, instrument=True)
            p = mheta_json(a.mheta, ["predict", "--structure", st, "--measurements", m,
                                     "--cluster", cl, "--distribution", "block", "--json"])
            predicted.append({"allocation": alloc, "seconds": p["prediction"]["iteration_s"]})
            print(f"alt {label(alloc)}: {s:.6f} s, MHETA {predicted[-1]['seconds']:.6f} s",
                  file=sys.stderr)
    measured_file = os.path.join(a.out, "measured.json")
    with open(measured_file, "w") as f:
        json.dump({"schema": "mheta-runs/1", "program": a.program, "cluster": CLUSTER,
                   "groups": groups, "runs": measured}, f, indent=1)
    with open(os.path.join(a.out, "mheta.json"), "w") as f:
        json.dump({"size": a.target, "predictions": predicted}, f, indent=1)

    allocate = mheta_json(a.mheta, ["allocate", runs_file, "--family", family, "--size",
                                    str(a.target), "--measured",
                                    measured_file, "--top", "1000", "--json"])
    with open(os.path.join(a.out, "allocate.json"), "w") as f:
        json.dump(allocate, f, indent=1)

    truth = {label(r["allocation"]): r["seconds"] for r in measured}
    best_label = min(truth, key=truth.get)
    best = truth[best_label]

    def error(pairs):
        e = [abs(p - truth[c]) / truth[c] for c, p in pairs if c in truth]
        return sum(e) / len(e), len(e)

    npt_pairs = [(label([[g["nodes"], g["ranks"]] for g in e["configuration"]]), e["seconds"])
                 for e in allocate["estimates"]]
    npt_choice = allocate["optimum"]["label"]
    mheta_pairs = [(label(p["allocation"]), p["seconds"]) for p in predicted]
    npt_err, npt_n = error(npt_pairs)
    summary = {
        "load": open("/proc/loadavg").read().split()[:3],
        "size": a.target,
        "true_optimum": best_label, "true_optimum_s": best,
        "npt": {"runs": fit.runs, "measurement_s": fit.seconds, "choice": npt_choice,
                "epsilon": (truth[npt_choice] - best) / best,
                "prediction_error": npt_err, "configurations_estimated": npt_n,
                "not_estimated": allocate["not_estimated"]},
        "alternatives": {"runs": alt.runs, "measurement_s": alt.seconds},
    }
    if mheta_pairs:
        mheta_choice = min(mheta_pairs, key=lambda x: x[1])[0]
        mheta_err, mheta_n = error(mheta_pairs)
        summary["mheta"] = {"runs": ins.runs, "measurement_s": ins.seconds,
                            "choice": mheta_choice,
                            "epsilon": (truth[mheta_choice] - best) / best,
                            "prediction_error": mheta_err, "configurations_estimated": mheta_n}
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(f"{a.program}, N = {a.target} rows, {len(truth)} configurations; true optimum {best_label} "
          f"at {best * 1e3:.3f} ms\n")
    print("| method | runs | seconds of measurement | "
          "mean prediction error | choice | ε |")
    print("|---|---|---|---|---|---|")
    for name, key in [("NP-T + NNLS", "npt"), ("MHETA", "mheta")]:
        r = summary.get(key)
        if r is None:
            continue
        print(f"| {name} | {r['runs']} | {r['measurement_s']:.0f} | "
              f"{100 * r['prediction_error']:.1f}% ({r['configurations_estimated']} configurations) | "
              f"{r['choice']} | {100 * r['epsilon']:.1f}% |")


if __name__ == "__main__":
    main()
