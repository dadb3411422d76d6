#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright 2026 The causal Authors
#
# plot.py: turns scaled runs of the scenario suite (the CSV that
# `11_scenarios --csv FILE` appends) into PNG plots of device waits and
# sync metadata bytes against --width, --depth and --devices, one line per
# model (binary events, timelines, frontiers).
#
# Usage:
#   plot.py --csv runs.csv --out DIR
#       plot an existing CSV;
#   plot.py --example path/to/11_scenarios --scenarios examples/scenarios --out DIR [--quick]
#       run the sweeps first (writing DIR/runs.csv), then plot.
#
# Exits 77 (reported by Meson as skipped) when matplotlib is not importable
# (Debian: apt-get install python3-matplotlib), 1 when a run or a check
# fails. Each written PNG is checked to be a non-empty PNG file.

import argparse
import csv
import os
import subprocess
import sys

MODELS = ["binary events", "timelines", "frontiers"]
METRICS = [("device_waits", "device waits"), ("metadata_bytes", "sync metadata bytes")]

# (scenario file, axis, values): the sweeps run by --example.
SWEEPS = [
    ("03_fork_join.json", "devices", [2, 4, 8, 12, 15]),
    ("10_tensor_parallel.json", "devices", [2, 4, 8, 16, 32]),
    ("06_buffer_reuse.json", "depth", [1, 2, 4, 8]),
    ("11_multi_model.json", "width", [1, 2, 4, 8, 16]),
    ("04_transitive.json", "depth", [1, 2, 4, 8, 16, 32]),
]
QUICK = {"devices": [2, 4, 8], "depth": [1, 2, 4], "width": [1, 2, 4]}


def run_sweeps(example, scenarios, out, quick):
    path = os.path.join(out, "runs.csv")
    if os.path.exists(path):
        os.remove(path)
    for name, axis, values in SWEEPS:
        for v in QUICK[axis] if quick else values:
            cmd = [example, "--quiet", "--csv", path, "--" + axis, str(v),
                   os.path.join(scenarios, name)]
            done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if done.returncode != 0:
                sys.exit("plot.py: %s failed (%d): %s" % (" ".join(cmd), done.returncode, done.stderr))
    return path


def read_rows(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit("plot.py: %s has no rows" % path)
    for r in rows:
        if r["model"] not in MODELS:
            sys.exit("plot.py: unknown model %r in %s" % (r["model"], path))
    return rows


def axis_of(rows):
    """The scaling axis that varies within one scenario's rows."""
    for axis in ("devices", "width", "depth"):
        if len({r[axis] for r in rows}) > 1:
            return axis
    return None


def plot(rows, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    for scenario in sorted({r["scenario"] for r in rows}):
        mine = [r for r in rows if r["scenario"] == scenario]
        axis = axis_of(mine)
        if axis is None:
            continue
        fig, axes = plt.subplots(1, len(METRICS), figsize=(10, 4))
        for ax, (key, label) in zip(axes, METRICS):
            for model in MODELS:
                pts = sorted((int(r[axis]), float(r[key])) for r in mine if r["model"] == model)
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=model)
            ax.set_xlabel("--" + axis)
            ax.set_ylabel(label)
            ax.set_title("%s: %s" % (scenario, label))
            ax.grid(True, alpha=0.3)
            ax.legend()
        fig.tight_layout()
        path = os.path.join(out, "%s_%s.png" % (scenario, axis))
        fig.savefig(path, dpi=100)
        plt.close(fig)
        with open(path, "rb") as f:
            if f.read(8) != b"\x89PNG\r\n\x1a\n":
                sys.exit("plot.py: %s is not a PNG" % path)
        written.append(path)
    if not written:
        sys.exit("plot.py: nothing to plot (no scenario varies in width, depth or devices)")
    return written


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--csv")
    p.add_argument("--example")
    p.add_argument("--scenarios", default=os.path.dirname(os.path.abspath(__file__)))
    p.add_argument("--out", required=True)
    p.add_argument("--quick", action="store_true", help="fewer points per sweep (CI)")
    args = p.parse_args()
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("SKIP: matplotlib is not importable (apt-get install python3-matplotlib)")
        return 77
    if (args.csv is None) == (args.example is None):
        p.error("give exactly one of --csv and --example")
    os.makedirs(args.out, exist_ok=True)
    path = args.csv or run_sweeps(args.example, args.scenarios, args.out, args.quick)
    rows = read_rows(path)
    # The plots must show the claims: frontiers never issue more waits.
    for r in rows:
        if r["model"] != "frontiers":
            continue
        for other in rows:
            same = all(other[k] == r[k] for k in ("scenario", "width", "depth", "devices"))
            if same and other["model"] != "frontiers" and int(r["device_waits"]) > int(other["device_waits"]):
                sys.exit("plot.py: frontiers issued more waits than %s in %s" % (other["model"], r))
    for w in plot(rows, args.out):
        print("wrote", w)
    return 0


if __name__ == "__main__":
    sys.exit(main())
