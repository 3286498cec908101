#!/usr/bin/env python3
"""Bad-input sweep (issue 21): run `mheta` and the fixture binaries on bad inputs and count how
each run ends.

    cargo build --release -p mheta-cli -p jacobi -p jacobi-prefetch -p cg -p lanczos -p rna
    python3 tests/bad-inputs/sweep.py [--target target/release] [--seed-dir tests/fuzz-seeds]

Two parts:
- *targeted* cases, one per bad input the issue names, grouped by its categories. Each must end
  with a clear error: a non-zero exit, a message on stderr, no panic. Where the input is a file,
  the message must name it. Some cases check a behaviour instead (a symlink written through, no
  scratch directory left after a signal).
- *mutations*: every field of a structure and a measurements file deleted, nulled, turned into a
  string, negative or huge, one at a time, given to `predict`. Whether a mutation should be
  accepted is not judged here (many fields are optional); only crashes and hangs count.

An outcome is `crash` (a signal, exit 101/134/137/139, or "panicked" on stderr), `hang` (no
exit within the timeout), `accepted` (exit 0), `error` (a non-zero exit with a message), or
`unclear` (an error whose message does not name the input file it is about). Prints one line
per failed case and a table of counts per category; exits 1 when a targeted case failed.
"""

import argparse
import copy
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

TIMEOUT_S = 60
CRASH_CODES = {101, 134, 137, 139}
FIXTURES = ["jacobi", "jacobi-prefetch", "cg", "lanczos", "rna"]


def run(argv, timeout=TIMEOUT_S, stdout=subprocess.PIPE, cwd=None):
    """(outcome, returncode, stderr) of one command."""
    try:
        p = subprocess.run(argv, stdout=stdout, stderr=subprocess.PIPE, timeout=timeout,
                           cwd=cwd, text=True, errors="replace")
    except subprocess.TimeoutExpired:
        return "hang", None, ""
    err = p.stderr or ""
    if p.returncode < 0 or p.returncode in CRASH_CODES or "panicked" in err:
        return "crash", p.returncode, err
    if p.returncode == 0:
        return "accepted", 0, err
    if not err.strip():
        return "unclear", p.returncode, err
    return "error", p.returncode, err


class Sweep:
    def __init__(self, target, seeds, work):
        self.target = pathlib.Path(target)
        self.mheta = str(self.target / "mheta")
        self.seeds = pathlib.Path(seeds)
        self.work = pathlib.Path(work)
        self.results = []  # (part, category, name, outcome, detail)

    def record(self, part, category, name, outcome, detail=""):
        self.results.append((part, category, name, outcome, detail))

    def expect_error(self, category, name, argv, names=None, **kw):
        """A bad input: it must end in a clear error; `names` must appear in the message."""
        outcome, code, err = run(argv, **kw)
        if outcome == "error" and names and names not in err:
            outcome = "unclear"
        detail = f"exit {code}: {err.strip().splitlines()[0] if err.strip() else ''}"
        self.record("targeted", category, name, outcome, detail[:160])

    def check(self, category, name, ok, detail=""):
        self.record("targeted", category, name, "ok" if ok else "wrong", detail[:160])

    def file(self, name, text):
        path = self.work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return str(path)

    # --- inputs -------------------------------------------------------------------------------

    def seed(self, kind):
        path = self.seeds / f"jacobi-hy1-2.{kind}.json"
        return json.loads(path.read_text())

    def pair(self, name, structure, measurements):
        s = self.file(f"{name}/structure.json", json.dumps(structure))
        m = self.file(f"{name}/measurements.json", json.dumps(measurements))
        return s, m

    def predict(self, s, m, dist=None, extra=()):
        if dist is None:
            dist = ",".join(str(n["rows"]) for n in json.loads(pathlib.Path(m).read_text())["nodes"])
        return [self.mheta, "predict", "--structure", s, "--measurements", m,
                "--distribution", dist, *extra]

    # --- categories ---------------------------------------------------------------------------

    def deep_nesting(self):
        c = "1 deep nesting"
        body = {
            "3000 parentheses": "(" * 3000 + "x" + ")" * 3000,
            "3000 blocks": "{" * 3000 + "x" + "}" * 3000,
            "sum of 30000 terms": " + ".join(["x"] * 30000),
            "chain of 100000 calls": "x" + ".abs()" * 100000,
        }
        for name, expr in body.items():
            f = self.file(f"deep/{name.replace(' ', '_')}.rs",
                          f"fn main() {{ let x = 1.0f64; let _y = {expr}; }}\n")
            outcome, code, err = run([self.mheta, "analyze", f], stdout=subprocess.DEVNULL)
            # Analysing a file with no solver is an error or a warning; either is fine, a crash
            # or a hang is not.
            self.record("targeted", c, name, "ok" if outcome in ("accepted", "error") else outcome,
                        f"exit {code}")
        chain = "if x == 0 { 0 }" + "".join(f" else if x == {i} {{ {i} }}" for i in range(1, 5000))
        f = self.file("deep/else_if_5000.rs",
                      f"fn main() {{ let x = 3; let _y = {chain} else {{ 1 }}; }}\n")
        outcome, code, _ = run([self.mheta, "analyze", f], stdout=subprocess.DEVNULL)
        self.record("targeted", c, "else-if chain 5000", "ok" if outcome in ("accepted", "error")
                    else outcome, f"exit {code}")

    def atomic_writes(self):
        c = "3 atomic writes"
        fixture = str(pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "jacobi")
        if os.access("/dev/full", os.W_OK):
            self.expect_error(c, "--out /dev/full", [self.mheta, "analyze", fixture, "--out",
                                                     "/dev/full"])
            self.check(c, "/dev/full still a device", not pathlib.Path("/dev/full").is_file())
        real = self.work / "atomic" / "real.json"
        real.parent.mkdir(parents=True, exist_ok=True)
        real.write_text("{}")
        link = self.work / "atomic" / "link.json"
        if link.exists() or link.is_symlink():
            link.unlink()
        link.symlink_to(real)
        outcome, code, err = run([self.mheta, "analyze", fixture, "--out", str(link)],
                                 stdout=subprocess.DEVNULL)
        self.check(c, "--out symlink written through",
                   outcome == "accepted" and link.is_symlink() and len(real.read_text()) > 2,
                   f"{outcome} {err.strip()[:100]}")
        self.expect_error(c, "--out a directory",
                          [self.mheta, "analyze", fixture, "--out", str(real.parent)],
                          names=str(real.parent))

    def predict_inputs(self):
        c = "4 predict/search inputs"
        st, me = self.seed("structure"), self.seed("measurements")
        dist = ",".join(str(n["rows"]) for n in me["nodes"])
        total = sum(n["rows"] for n in me["nodes"])
        cases = []
        s = copy.deepcopy(st); s["schema"] = "mheta-structure/99"; cases.append(("structure schema", s, me, "structure.json"))
        m = copy.deepcopy(me); m["schema"] = "mheta-measurements/99"; cases.append(("measurements schema", st, m, "measurements.json"))
        m = copy.deepcopy(me); m["structure"]["digest"] = "0000000000000000"; cases.append(("digest mismatch", st, m, "measurements.json"))
        m = copy.deepcopy(me); m["rows"] = total + 500; cases.append(("rows total", st, m, "measurements.json"))
        m = copy.deepcopy(me); m["nodes"][0]["rows"] += 7; cases.append(("node rows", st, m, "measurements.json"))
        for field in ("cpu", "memory_bytes", "disk_read_bps", "disk_write_bps"):
            m = copy.deepcopy(me); m["cluster"]["nodes"][0][field] = 0; cases.append((f"cluster {field} 0", st, m, "measurements.json"))
        m = copy.deepcopy(me); m["cluster"]["network"]["bandwidth_bps"] = 0; cases.append(("bandwidth 0", st, m, "measurements.json"))
        s = copy.deepcopy(st); s["solvers"][0]["sections"] = []; cases.append(("no sections", s, me, "structure.json"))
        m = copy.deepcopy(me)
        if m["nodes"][0]["stages"]:
            m["nodes"][0]["stages"][0]["stage"] = 999
            cases.append(("unknown stage id", st, m, "measurements.json"))
        m = copy.deepcopy(me)
        if m["nodes"][0]["events"]:
            m["nodes"][0]["events"][0]["event"] = 999
            cases.append(("unknown event id", st, m, "measurements.json"))
        m = copy.deepcopy(me); m["nodes"] = m["nodes"][:1]; cases.append(("fewer nodes than the cluster", st, m, "measurements.json"))
        for name, s, m, names in cases:
            sp, mp = self.pair(f"predict/{name.replace(' ', '_')}", s, m)
            self.expect_error(c, name, self.predict(sp, mp, dist), names=names)
        sp, mp = self.pair("predict/ok", st, me)
        self.expect_error(c, "distribution of the wrong length", self.predict(sp, mp, "1,2,3"))
        self.expect_error(c, "distribution not summing to the rows", self.predict(sp, mp, f"{total},1"))
        self.expect_error(c, "truncated structure", self.predict(
            self.file("predict/truncated.json", json.dumps(st)[:200]), mp, dist),
            names="truncated.json")
        self.expect_error(c, "search with a bad budget", [self.mheta, "search", "--structure", sp,
                                                          "--measurements", mp, "--budget", "-1s"])

    def sizes(self):
        c = "7 sizes"
        for f in FIXTURES:
            self.expect_error(c, f"{f} --rows 1e11", [str(self.target / f), "--rows",
                                                      "100000000000", "--iterations", "2"])
        self.expect_error(c, "bench --nodes 1e8", [self.mheta, "bench", "--nodes", "100000000"])

    def stdout_full(self):
        c = "8 stdout"
        fixture = str(pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "jacobi")
        if not os.access("/dev/full", os.W_OK):
            return
        with open("/dev/full", "w") as full:
            for name, argv in [("analyze", [self.mheta, "analyze", fixture]),
                               ("help", [self.mheta, "--help"]),
                               ("jacobi", [str(self.target / "jacobi"), "--iterations", "2"])]:
                outcome, code, err = run(argv, stdout=full)
                self.record("targeted", c, f"{name} > /dev/full",
                            outcome if outcome != "accepted" else "accepted", f"exit {code}")

    def degenerate(self):
        c = "9 degenerate"
        for f in FIXTURES:
            self.expect_error(c, f"{f} --rows 0", [str(self.target / f), "--rows", "0",
                                                   "--iterations", "2"])
        self.expect_error(c, "study --fixtures-dir /nonexistent",
                          [self.mheta, "study", "--fixtures-dir", "/nonexistent", "--out",
                           str(self.work / "study")], names="/nonexistent")
        d = self.work / "report-empty"
        d.mkdir(parents=True, exist_ok=True)
        (d / "tune.json").write_text(json.dumps({"distributions": []}))
        self.expect_error(c, "report of no distributions", [self.mheta, "report", str(d)],
                          names="tune.json")
        crate = self.work / "crate-missing-solver"
        (crate / "src").mkdir(parents=True, exist_ok=True)
        (crate / "Cargo.toml").write_text('[package]\nname = "x"\nversion = "0.1.0"\nedition = "2021"\n')
        (crate / "src" / "main.rs").write_text("fn main() {}\n")
        (crate / "mheta.toml").write_text('[[solver]]\nfunction = "does_not_exist"\n')
        self.expect_error(c, "mheta.toml names a missing solver", [self.mheta, "analyze",
                                                                   str(crate)], names="mheta.toml")

    def messages(self):
        c = "10 messages"
        self.expect_error(c, "--distribution=-5,2005", [str(self.target / "jacobi"),
                                                        "--distribution=-5,2005"], names="-5")
        self.expect_error(c, "bench --nodes 0", [self.mheta, "bench", "--nodes", "0"])
        self.expect_error(c, "analyze missing path", [self.mheta, "analyze", "/nonexistent/x"],
                          names="/nonexistent/x")
        outcome, code, err = run([self.mheta, "predict", "--structure", "/nonexistent/s.json",
                                  "--measurements", "/nonexistent/m.json", "--distribution", "1"])
        once = err.count("No such file or directory") <= 1
        self.check(c, "OS error said once", outcome == "error" and once, err.strip()[:160])

    def cluster_toml(self):
        c = "cluster.toml"
        bad = {
            "negative cpu": '[network]\nlatency = "10us"\nbandwidth = "1GB/s"\n[[node]]\ncpu = -1\nmemory = "1GiB"\n',
            "unknown unit": '[network]\nlatency = "10 parsecs"\nbandwidth = "1GB/s"\n[[node]]\ncpu = 1\nmemory = "1GiB"\n',
            "no nodes": '[network]\nlatency = "10us"\nbandwidth = "1GB/s"\n',
            "not toml": 'this is [not toml\n',
            "zero memory": '[network]\nlatency = "10us"\nbandwidth = "1GB/s"\n[[node]]\ncpu = 1\nmemory = "0B"\n',
        }
        for name, text in bad.items():
            f = self.file(f"cluster/{name.replace(' ', '_')}.toml", text)
            self.expect_error(c, name, [str(self.target / "jacobi"), "--cluster", f,
                                        "--iterations", "2"], names=f)

    def signals(self):
        c = "6 scratch on signals"
        tmp = pathlib.Path(tempfile.gettempdir())
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            before = set(tmp.glob("mheta-run-*"))
            p = subprocess.Popen([str(self.target / "jacobi"), "--iterations", "100000"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.5)
            p.send_signal(sig)
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                self.record("targeted", c, sig.name, "hang")
                continue
            left = set(tmp.glob("mheta-run-*")) - before
            self.check(c, f"{sig.name}: no scratch left", not left, f"left {sorted(left)}")

    # --- mutations ----------------------------------------------------------------------------

    def mutations(self):
        st, me = self.seed("structure"), self.seed("measurements")
        dist = ",".join(str(n["rows"]) for n in me["nodes"])
        for kind, doc in (("structure", st), ("measurements", me)):
            for path in leaf_paths(doc):
                for label, value in (("deleted", DELETE), ("null", None), ("string", "x"),
                                     ("negative", -1), ("huge", 1e300)):
                    mutated = copy.deepcopy(doc)
                    set_path(mutated, path, value)
                    s, m = (mutated, me) if kind == "structure" else (st, mutated)
                    sp, mp = self.pair("mutation", s, m)
                    outcome, code, err = run(self.predict(sp, mp, dist), timeout=30)
                    name = f"{kind}:{'/'.join(map(str, path))} {label}"
                    self.record("mutations", kind, name, outcome, f"exit {code}")


DELETE = object()


def leaf_paths(doc, prefix=(), limit_per_list=2):
    """Every scalar's path, following at most the first `limit_per_list` items of a list."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from leaf_paths(v, prefix + (k,), limit_per_list)
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:limit_per_list]):
            yield from leaf_paths(v, prefix + (i,), limit_per_list)
    else:
        yield prefix


def set_path(doc, path, value):
    for k in path[:-1]:
        doc = doc[k]
    if value is DELETE:
        if isinstance(doc, dict):
            del doc[path[-1]]
        else:
            doc.pop(path[-1])
    else:
        doc[path[-1]] = value


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = pathlib.Path(__file__).resolve().parents[2]
    ap.add_argument("--target", default=str(root / "target" / "release"))
    ap.add_argument("--seed-dir", default=str(root / "tests" / "fuzz-seeds"))
    ap.add_argument("--no-mutations", action="store_true")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="mheta-bad-inputs-")
    sweep = Sweep(args.target, args.seed_dir, work)
    try:
        for part in (sweep.deep_nesting, sweep.atomic_writes, sweep.predict_inputs, sweep.sizes,
                     sweep.stdout_full, sweep.degenerate, sweep.messages, sweep.cluster_toml,
                     sweep.signals):
            part()
        if not args.no_mutations:
            sweep.mutations()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    failed = 0
    counts = {}
    for part, category, name, outcome, detail in sweep.results:
        counts.setdefault((part, category), {}).setdefault(outcome, 0)
        counts[(part, category)][outcome] += 1
        bad = (part == "targeted" and outcome not in ("error", "ok")) or \
              (part == "mutations" and outcome in ("crash", "hang"))
        if bad:
            failed += part == "targeted"
            print(f"{part} / {category} / {name}: {outcome} ({detail})")
    print()
    print(f"{'part':10} {'category':28} outcomes")
    for (part, category), c in counts.items():
        print(f"{part:10} {category:28} " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
    total = len(sweep.results)
    crashes = sum(1 for r in sweep.results if r[3] == "crash")
    hangs = sum(1 for r in sweep.results if r[3] == "hang")
    print(f"\n{total} cases: {crashes} crashes, {hangs} hangs, {failed} targeted cases failed")
    sys.exit(1 if failed or crashes or hangs else 0)


if __name__ == "__main__":
    main()
