#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright 2026 The causal Authors
"""ratio.py: turns frontier_bench's JSON output into a markdown table of
ours vs the std::map clock, with the ratio map/ours.

    build/bench/frontier_bench --benchmark_repetitions=5 \\
        --benchmark_report_aggregates_only=true --benchmark_format=json > out.json
    python3 bench/ratio.py out.json            # or: ... | python3 bench/ratio.py -

Benchmarks are named <op>/<case>/<n>/<impl>, impl being `ours` or `map`.
Each cell is the median over repetitions with the min..max spread. Where an
op has a matching restore benchmark (merge -> merge_restore,
insert_or_raise/diff -> insert_restore/diff), a second row gives the op net
of its restore (median minus median) and that ratio too. A goal summary
follows the table.
"""

import argparse
import json
import statistics
import sys
from collections import defaultdict

RESTORE_OF = {"merge": "merge_restore", "insert_or_raise": "insert_restore"}
OP_ORDER = ["merge", "merge_pure", "dominates", "compare", "insert_or_raise"]


def load(path, field):
    """Returns {run_name: (median, min, max)} in nanoseconds."""
    text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
    data = json.loads(text)
    aggregates = defaultdict(dict)
    samples = defaultdict(list)
    for b in data["benchmarks"]:
        if b.get("error_occurred"):
            sys.exit(f"ratio.py: {b['name']} reported an error: {b.get('error_message')}")
        if b.get("time_unit", "ns") != "ns":
            sys.exit(f"ratio.py: {b['name']} is not in ns")
        name = b.get("run_name", b["name"])
        if b.get("run_type") == "aggregate":
            aggregates[name][b["aggregate_name"]] = b[field]
        else:
            samples[name].append(b[field])
    out = {}
    for name in set(aggregates) | set(samples):
        agg = aggregates.get(name, {})
        if "median" in agg and "min" in agg and "max" in agg:
            out[name] = (agg["median"], agg["min"], agg["max"])
        elif samples.get(name):
            s = samples[name]
            out[name] = (statistics.median(s), min(s), max(s))
        elif "median" in agg:
            out[name] = (agg["median"], agg["median"], agg["median"])
    return out


def cell(v):
    med, lo, hi = v
    return f"{med:.2f} ({lo:.2f}..{hi:.2f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", help="frontier_bench --benchmark_format=json output, or - for stdin")
    ap.add_argument("--time", choices=["real", "cpu"], default="real",
                    help="which time to report (default: real, i.e. wall clock)")
    args = ap.parse_args()
    runs = load(args.json, args.time + "_time")

    keys = set()
    for name in runs:
        parts = name.split("/")
        if len(parts) == 4 and parts[3] in ("ours", "map"):
            keys.add((parts[0], parts[1], int(parts[2])))

    def order(k):
        op, case, n = k
        return (OP_ORDER.index(op) if op in OP_ORDER else 99, op, case != "same", n)

    print(f"| op | case | n | ours ns, median (min..max) | map ns, median (min..max) | map/ours |")
    print("|---|---|---:|---:|---:|---:|")
    net = {}
    for op, case, n in sorted(keys, key=order):
        if op.endswith("_restore"):
            continue
        stem = f"{op}/{case}/{n}"
        ours, mp = runs.get(stem + "/ours"), runs.get(stem + "/map")
        if ours is None or mp is None:
            continue
        print(f"| {op} | {case} | {n} | {cell(ours)} | {cell(mp)} | {mp[0] / ours[0]:.1f}x |")
        restore = RESTORE_OF.get(op)
        r_stem = f"{restore}/{case}/{n}" if restore else None
        if r_stem and r_stem + "/ours" in runs and r_stem + "/map" in runs:
            o_net = ours[0] - runs[r_stem + "/ours"][0]
            m_net = mp[0] - runs[r_stem + "/map"][0]
            net[stem] = (o_net, m_net)
            ratio = f"{m_net / o_net:.1f}x" if o_net > 0 else "n/a"
            print(f"| {op}, net of restore | {case} | {n} | {o_net:.2f} | {m_net:.2f} | {ratio} |")

    # Goals from the frontier issue's benchmark brief, on the 6-entry cases.
    print()
    print("Goals (6 entries, medians):")
    m6 = net.get("merge/same/6")
    if m6:
        print(f"- merge of two 6-entry frontiers <= 10 ns: same axes {m6[0]:.2f} ns net "
              f"({runs['merge/same/6/ours'][0]:.2f} gross)"
              + (f", different axes {net['merge/diff/6'][0]:.2f} ns net" if "merge/diff/6" in net else "")
              + f" -> {'met' if m6[0] <= 10 else 'MISSED'} (same axes)")
    d6 = runs.get("dominates/same/6/ours")
    if d6:
        dd = runs.get("dominates/diff/6/ours")
        print(f"- dominates <= 5 ns: same axes {d6[0]:.2f} ns"
              + (f", different axes {dd[0]:.2f} ns" if dd else "")
              + f" -> {'met' if d6[0] <= 5 else 'MISSED'} (same axes)")
    below = []
    for op, case, n in sorted(keys, key=order):
        stem = f"{op}/{case}/{n}"
        if op.endswith("_restore") or stem + "/ours" not in runs or stem + "/map" not in runs:
            continue
        r = runs[stem + "/map"][0] / runs[stem + "/ours"][0]
        if stem in net and net[stem][0] > 0:
            r = max(r, net[stem][1] / net[stem][0])
        if r < 10:
            below.append(f"{stem} ({r:.1f}x)")
    print(f"- >= 10x faster than std::map: {'met everywhere' if not below else 'MISSED for ' + ', '.join(below)}")


if __name__ == "__main__":
    main()
