#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright 2026 The causal Authors
"""Runs 13_inference_split on three ranks, merges its traces and checks them.

usage: check_inference_split.py MPIEXEC EXAMPLE MERGE_TRACES OUT_DIR [MPIEXEC_ARGS...]

MPIEXEC_ARGS (e.g. -n 3 --oversubscribe) go to mpiexec before EXAMPLE. The
example checks its own results (every output against a host reference, the
elided waits, the pools) and writes OUT_DIR/trace-rank{0,1,2}.json; this
script then runs MERGE_TRACES (adapters/mpi/tools/merge_traces.py) into
OUT_DIR/job-trace.json and OUT_DIR/job-dag.dot and checks that:
  - the merged trace is JSON with one process per rank, "rank 0".."rank 2";
  - it has flow arrows between ranks: update messages whose send ("s") and
    receipt ("f") lie in different ranks' processes, for each of the three
    exports (tokens_ready, encoded, decoded);
  - the DOT graph has one cluster per rank and edges between operations of
    different ranks, including the decoder's waits on encoded.
Exit status 0 when all hold, 1 otherwise (with the reason).
"""

import json
import re
import subprocess
import sys
from pathlib import Path


def fail(why: str) -> int:
    print(f"FAIL: {why}")
    return 1


def main(argv: list) -> int:
    if len(argv) < 4:
        print(__doc__)
        return 2
    mpiexec, example, merge, out_dir = argv[0], argv[1], argv[2], Path(argv[3])
    mpiexec_args = argv[4:]
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*"):
        old.unlink()

    run = subprocess.run([mpiexec, *mpiexec_args, example, str(out_dir)], timeout=100)
    if run.returncode != 0:
        return fail(f"the example exited with {run.returncode}")
    traces = sorted(out_dir.glob("trace-rank*.json"))
    if len(traces) != 3:
        return fail(f"expected three rank traces, found {[t.name for t in traces]}")
    merged_json = out_dir / "job-trace.json"
    merged_dot = out_dir / "job-dag.dot"
    merged = subprocess.run([sys.executable, merge, *map(str, traces), "--json", str(merged_json),
                             "--dot", str(merged_dot)], timeout=60)
    if merged.returncode != 0:
        return fail(f"merge_traces.py exited with {merged.returncode}")

    job = json.loads(merged_json.read_text(encoding="utf-8"))
    events = job["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    if sorted(names.values()) != ["rank 0", "rank 1", "rank 2"]:
        return fail(f"processes are {sorted(names.values())}, not one per rank")
    ends = {}
    for e in events:
        if e.get("ph") in ("s", "f") and str(e.get("id", "")).startswith("msg:"):
            ends.setdefault(e["id"], {})[e["ph"]] = e
    crossing = {fid: pair for fid, pair in ends.items()
                if set(pair) == {"s", "f"} and pair["s"]["pid"] != pair["f"]["pid"]}
    owners = {fid.split(":")[1] for fid in crossing}
    print(f"merged trace: {len(events)} events, {len(crossing)} message arrows between ranks "
          f"(from ranks {sorted(owners)})")
    if owners != {"0", "1", "2"}:
        return fail("every rank's export should have arrows to the ranks following it")
    for fid, pair in crossing.items():
        owner, to = int(fid.split(":")[1]), int(fid.split(":")[5])
        if names[pair["s"]["pid"]] != f"rank {owner}" or names[pair["f"]["pid"]] != f"rank {to}":
            return fail(f"arrow {fid} does not go from rank {owner} to rank {to}")

    dot = merged_dot.read_text(encoding="utf-8")
    clusters = re.findall(r"subgraph cluster_rank(\d+) \{", dot)
    if sorted(clusters) != ["0", "1", "2"]:
        return fail(f"DOT clusters per rank: {clusters}")
    edges = re.findall(r'"m(\d+)\.[^"]*" -> "m(\d+)\.[^"]*" \[([^\]]*)\]', dot)
    cross = [(a, b, attrs) for a, b, attrs in edges if a != b]
    print(f"merged DAG: {len(edges)} edges, {len(cross)} between ranks")
    if not any(a == "1" and b == "2" and "encoded" in attrs for a, b, attrs in cross):
        return fail("no DOT edge from the encoder (rank 1) to the decoder (rank 2)")
    if not any(a == "0" and b == "1" for a, b, _ in cross):
        return fail("no DOT edge from the tokenizer (rank 0) to the encoder (rank 1)")
    print("merged trace and DAG checked")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
