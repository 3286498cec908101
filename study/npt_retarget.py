#!/usr/bin/env python3
"""MHETA from one instrumented run: the allocations of an `npt.py` study predicted with
`mheta predict --retarget` from a single instrumented run, against the study's measured times.

Usage (from the repository root, after `npt.py` wrote OUT, and `cargo build --release -p PROGRAM`
and `cargo build -p mheta-cli`):

    python3 study/npt_retarget.py --program jacobi --out study/npt --target 2500
    python3 study/npt_retarget.py --program cg --out study/npt-cg --target 200000

The instrumented run is of `--base` (default every node of both groups with one rank, "4,1,4,1"),
on the virtual clock like the study's runs. Writes OUT/retarget.json and prints the mean, median
and largest prediction error over the allocations, by class, and the choice and its ε.
"""

import argparse
import importlib.util
import json
import os
import subprocess
import tempfile

spec = importlib.util.spec_from_file_location(
    "npt", os.path.join(os.path.dirname(os.path.abspath(__file__)), "npt.py"))
npt = importlib.util.module_from_spec(spec)
spec.loader.exec_module(npt)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--program", default="jacobi", choices=["jacobi", "cg", "rna"])
    ap.add_argument("--out", default="study/npt")
    ap.add_argument("--target", type=int, default=2500)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--base", default="4,1,4,1", help="the instrumented allocation, P_1,M_1,P_2,M_2")
    ap.add_argument("--mheta", default="target/debug/mheta")
    a = ap.parse_args()
    b = [int(x) for x in a.base.split(",")]
    base = [b[i:i + 2] for i in range(0, len(b), 2)]
    runs = json.load(open(os.path.join(a.out, "measured.json")))["runs"]
    with tempfile.TemporaryDirectory(prefix="mheta-retarget-") as d:
        ins = npt.Runner(f"target/release/{a.program}", a.iterations, d)
        _, m, s, _ = ins.run(base, a.target, instrument=True)
        predictions = []
        for r in runs:
            cluster = os.path.join(d, "cluster.toml")
            with open(cluster, "w") as f:
                f.write(npt.cluster_toml(r["allocation"]))
            p = npt.mheta_json(a.mheta, ["predict", "--structure", s, "--measurements", m,
                                         "--cluster", cluster, "--retarget", "--distribution",
                                         "block", "--json"])
            predictions.append({"allocation": r["allocation"], "measured_s": r["seconds"],
                                "predicted_s": p["prediction"]["iteration_s"]})
    with open(os.path.join(a.out, "retarget.json"), "w") as f:
        json.dump({"base": base, "size": a.target, "instrumented_runs": ins.runs,
                   "measurement_s": ins.seconds,
                   "load": open("/proc/loadavg").read().split()[:3], "predictions": predictions}, f, indent=1)

    def klass(alloc):
        (pf, mf), (ps, ms) = alloc
        if ps and ms == 2:
            return "small nodes with 2 ranks each"
        if not pf:
            return "small nodes alone, 1 rank each"
        return "fast nodes only" if not ps else "both groups, small nodes 1 rank each"

    def summary(es):
        es = sorted(es)
        return (f"{len(es)} allocations, mean {100 * sum(es) / len(es):.1f}%, "
                f"median {100 * es[len(es) // 2]:.1f}%, max {100 * es[-1]:.1f}%")

    errors, by_class = [], {}
    for p in predictions:
        e = abs(p["predicted_s"] - p["measured_s"]) / p["measured_s"]
        errors.append(e)
        by_class.setdefault(klass(p["allocation"]), []).append(e)
    best = min(predictions, key=lambda p: p["measured_s"])
    choice = min(predictions, key=lambda p: p["predicted_s"])
    eps = (choice["measured_s"] - best["measured_s"]) / best["measured_s"]
    print(f"{a.program}, N = {a.target}, one instrumented run of {npt.label(base)}: "
          f"{summary(errors)}; choice {npt.label(choice['allocation'])}, "
          f"true optimum {npt.label(best['allocation'])}, ε {100 * eps:.1f}%")
    for k, es in sorted(by_class.items()):
        print(f"  {k}: {summary(es)}")


if __name__ == "__main__":
    main()
