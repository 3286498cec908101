#!/usr/bin/env python3
"""The plot of `study/npt.md`: predicted against measured seconds per iteration of every
allocation, for each program, by NP-T + NNLS, MHETA from one instrumented run per allocation and
MHETA from one instrumented run (`--retarget`). Log scales; the diagonal is a perfect prediction.

    python3 study/npt_plot.py [--out study/npt.svg]

Reads study/npt/, study/npt-cg/ and study/npt-rna/ (`npt.py` and `npt_retarget.py` write them).
Writes SVG by hand: the machine has no plotting library, and the figure is three scatter plots.
"""

import argparse
import json
import math
import os

PROGRAMS = [("Jacobi, 2,500 rows", "study/npt"), ("CG, 200,000 rows", "study/npt-cg"),
            ("rna, 8,000 rows", "study/npt-rna")]
SERIES = [("NP-T + NNLS (48 runs)", "#d62728"),
          ("MHETA, one run per allocation (80 runs)", "#1f77b4"),
          ("MHETA, one run + --retarget (1 run)", "#2ca02c")]
W, H, PAD = 330, 330, 55


def key(allocation):
    return json.dumps([list(x) for x in allocation])


def load(directory):
    def read(name):
        with open(os.path.join(directory, name)) as f:
            return json.load(f)
    measured = {key(r["allocation"]): r["seconds"] for r in read("measured.json")["runs"]}
    npt = {key([[g["nodes"], g["ranks"]] for g in e["configuration"]]): e["seconds"]
           for e in read("allocate.json")["estimates"]}
    per_allocation = {key(p["allocation"]): p["seconds"] for p in read("mheta.json")["predictions"]}
    one_run = {key(p["allocation"]): p["predicted_s"] for p in read("retarget.json")["predictions"]}
    return [[(measured[k], s[k]) for k in measured if k in s and s[k] > 0]
            for s in (npt, per_allocation, one_run)]


def panel(title, series, x0):
    values = [v for pts in series for p in pts for v in p]
    lo, hi = math.log10(min(values)), math.log10(max(values))
    lo, hi = math.floor(lo), math.ceil(hi)

    def pos(v, horizontal):
        t = (math.log10(v) - lo) / (hi - lo)
        return x0 + PAD + t * (W - PAD - 10) if horizontal else H - PAD - t * (H - PAD - 30)

    out = [f'<text x="{x0 + W / 2}" y="18" text-anchor="middle" font-size="14">{title}</text>']
    out.append(f'<rect x="{x0 + PAD}" y="30" width="{W - PAD - 10}" height="{H - PAD - 30}" '
               'fill="none" stroke="#999"/>')
    for e in range(lo, hi + 1):
        x, y = pos(10 ** e, True), pos(10 ** e, False)
        label = f"1e{e}"
        out.append(f'<line x1="{x}" y1="{H - PAD}" x2="{x}" y2="{H - PAD + 4}" stroke="#999"/>')
        out.append(f'<text x="{x}" y="{H - PAD + 16}" text-anchor="middle" font-size="10">{label}</text>')
        out.append(f'<line x1="{x0 + PAD - 4}" y1="{y}" x2="{x0 + PAD}" y2="{y}" stroke="#999"/>')
        out.append(f'<text x="{x0 + PAD - 6}" y="{y + 3}" text-anchor="end" font-size="10">{label}</text>')
    out.append(f'<line x1="{pos(10 ** lo, True)}" y1="{pos(10 ** lo, False)}" '
               f'x2="{pos(10 ** hi, True)}" y2="{pos(10 ** hi, False)}" stroke="#555" '
               'stroke-dasharray="4 3"/>')
    for (name, colour), pts in zip(SERIES, series):
        for m, p in pts:
            out.append(f'<circle cx="{pos(m, True):.1f}" cy="{pos(p, False):.1f}" r="2.5" '
                       f'fill="{colour}" fill-opacity="0.6"/>')
    out.append(f'<text x="{x0 + PAD + (W - PAD) / 2}" y="{H - 12}" text-anchor="middle" '
               'font-size="11">measured s/iteration</text>')
    out.append(f'<text x="{x0 + 14}" y="{(H + 30) / 2}" text-anchor="middle" font-size="11" '
               f'transform="rotate(-90 {x0 + 14} {(H + 30) / 2})">predicted s/iteration</text>')
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="study/npt.svg")
    a = ap.parse_args()
    width = W * len(PROGRAMS)
    body = []
    for i, (title, directory) in enumerate(PROGRAMS):
        body += panel(title, load(directory), i * W)
    for j, (name, colour) in enumerate(SERIES):
        x = 20 + j * 320
        body.append(f'<circle cx="{x}" cy="{H + 18}" r="4" fill="{colour}"/>')
        body.append(f'<text x="{x + 8}" y="{H + 22}" font-size="12">{name}</text>')
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{H + 35}" '
           f'font-family="sans-serif">\n<rect width="100%" height="100%" fill="white"/>\n'
           + "\n".join(body) + "\n</svg>\n")
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        f.write(svg)
    os.replace(tmp, a.out)


if __name__ == "__main__":
    main()
