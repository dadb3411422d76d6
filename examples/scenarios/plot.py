#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright 2026 The causal Authors
"""Plots how the scenario suite scales: device waits and sync metadata bytes
against --width, --depth or --devices, one line per synchronization model
(binary events, timelines, frontiers), one PNG per scenario.

Input: the CSV that `11_scenarios --csv FILE` appends to, one row per
(scenario, scale, model) with at least the columns scenario, model, width,
depth, devices, device_waits and metadata_bytes. Either give such a file
(--csv), or let this script run the sweeps itself (--example, writing
OUT/runs.csv first).

examples:
  plot.py --csv runs.csv --out plots/
  plot.py --example build/examples/11_scenarios --scenarios examples/scenarios --out plots/ --quick

Each model has its own colour, marker and line style, so lines that lie on
top of each other stay visible; a panel whose values span two orders of
magnitude or more uses a logarithmic y axis. Exits 0 when every PNG was
written (each is checked to be a PNG), 2 for bad arguments or an unreadable
CSV, 1 when a sweep or a check fails, and 77 (reported by Meson as skipped)
when matplotlib is not importable (Debian: apt-get install
python3-matplotlib).
"""

import argparse
import csv
import os
import subprocess
import sys

MODELS = ["binary events", "timelines", "frontiers"]
# Per model: colour, marker and line style, so that identical values (events
# and timelines often issue the same waits) do not hide one line under
# another; the legend also says when two lines coincide.
STYLES = {
    "binary events": dict(color="#d62728", marker="s", linestyle="-", markersize=7),
    "timelines": dict(color="#1f77b4", marker="^", linestyle="--", markersize=7),
    "frontiers": dict(color="#2ca02c", marker="o", linestyle=":", markersize=6, linewidth=2.2),
}
REQUIRED_COLUMNS = ("scenario", "model", "width", "depth", "devices", "device_waits", "metadata_bytes")
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


def fail_input(message):
    print("plot.py: " + message, file=sys.stderr)
    sys.exit(2)


def read_rows(path):
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            rows = list(reader)
            columns = reader.fieldnames or []
    except OSError as e:
        fail_input("cannot read %s: %s" % (path, e.strerror or e))
    except (csv.Error, UnicodeDecodeError) as e:
        fail_input("%s is not a CSV file: %s" % (path, e))
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        fail_input("%s lacks the column(s) %s (write it with 11_scenarios --csv)" % (path, ", ".join(missing)))
    if not rows:
        fail_input("%s has no rows" % path)
    for n, r in enumerate(rows, 2):
        if r["model"] not in MODELS:
            fail_input("%s line %d: unknown model %r (expected one of %s)" % (path, n, r["model"], ", ".join(MODELS)))
        for c in REQUIRED_COLUMNS[2:]:
            try:
                float(r[c])
            except (TypeError, ValueError):
                fail_input("%s line %d: %s is %r, not a number" % (path, n, c, r[c]))
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
    from matplotlib.ticker import MaxNLocator

    written = []
    for scenario in sorted({r["scenario"] for r in rows}):
        mine = [r for r in rows if r["scenario"] == scenario]
        axis = axis_of(mine)
        if axis is None:
            continue
        fig, axes = plt.subplots(1, len(METRICS), figsize=(10, 4))
        for ax, (key, label) in zip(axes, METRICS):
            values = []
            drawn = {}
            for model in MODELS:
                pts = sorted((int(r[axis]), float(r[key])) for r in mine if r["model"] == model)
                values += [p[1] for p in pts]
                same = [m for m, q in drawn.items() if q == pts]
                legend = model + (" (same as %s)" % same[0] if same else "")
                ax.plot([p[0] for p in pts], [p[1] for p in pts], label=legend, **STYLES[model])
                drawn[model] = pts
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            positive = [v for v in values if v > 0]
            if positive and max(positive) >= 100 * min(positive):
                # Orders of magnitude apart: a linear axis would squash the
                # small line flat. symlog keeps zeros drawable.
                ax.set_yscale("symlog", linthresh=max(1.0, min(positive)))
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
    p = argparse.ArgumentParser(prog="plot.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--csv", metavar="FILE", help="plot this CSV (from 11_scenarios --csv)")
    p.add_argument("--example", metavar="PROGRAM", help="run the sweeps with this 11_scenarios binary first")
    p.add_argument("--scenarios", metavar="DIR", default=os.path.dirname(os.path.abspath(__file__)),
                   help="the scenario files the sweeps use (default: this script's folder)")
    p.add_argument("--out", metavar="DIR", required=True, help="where the PNGs (and runs.csv) go")
    p.add_argument("--quick", action="store_true", help="fewer points per sweep (CI)")
    args = p.parse_args()
    if (args.csv is None) == (args.example is None):
        p.error("give exactly one of --csv and --example")
    if args.example is not None and not os.access(args.example, os.X_OK):
        fail_input("--example %s is not an executable file" % args.example)
    # A bad CSV is reported whether or not matplotlib is there to plot it.
    rows = read_rows(args.csv) if args.csv else None
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("SKIP: matplotlib is not importable (apt-get install python3-matplotlib)")
        return 77
    os.makedirs(args.out, exist_ok=True)
    if rows is None:
        rows = read_rows(run_sweeps(args.example, args.scenarios, args.out, args.quick))
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
