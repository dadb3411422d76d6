#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright 2026 The causal Authors
"""Tests merge_traces.py on small synthetic rank traces (no MPI needed).

usage: test_merge_traces.py MERGE_TRACES

Two ranks, written by hand in rank_trace's format
(<causal/adapters/mpi/trace.hpp>), with clocks 500 us apart after the
offset: the merged times, process and track names, flows (a message arrow
kept, a half arrow dropped, local flow ids made unique), the DOT clusters and
the edges between ranks (from a recorded producer, and resolved through a
proxy's export when none was recorded) are checked against the values the
inputs imply; then inputs the tool must refuse. Exit status 0 when all pass.
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

failures = []


def expect(ok: bool, what: str) -> None:
    print(f"  {'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        failures.append(what)


def meta(rank: int, t0_ns: int, offset_ns: int, exports=(), proxies=()) -> dict:
    return {"format": "causal-rank-trace", "version": 1, "rank": rank, "size": 2, "t0_ns": t0_ns,
            "clock_offset_ns": offset_ns, "exports": list(exports), "proxies": list(proxies), "dropped": 0}


def op(ts: float, axis: str, epoch: int, label: str, waits=(), signals=()) -> dict:
    return {"ph": "X", "name": label, "pid": 1, "tid": 1, "cat": "operation", "ts": ts, "dur": 10.0,
            "args": {"axis": axis, "epoch": epoch, "label": label, "waits": list(waits), "signals": list(signals)}}


def wait(semaphore: str, value: int, tier: str, producer) -> dict:
    return {"semaphore": semaphore, "value": value, "tier": tier, "elided": tier != "device", "producer": producer}


# Rank 0: its clock is the reference; ts 0 = 1 000 000 ns.
RANK0 = {
    "displayTimeUnit": "ns",
    "traceEvents": [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "queues"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "m0.queue.1 (producer)"}},
        op(0.0, "m0.queue.1", 1, "produce", signals=[{"semaphore": "A", "value": 1}]),
        op(20.0, "m0.queue.1", 2, "produce", signals=[{"semaphore": "A", "value": 2}]),
        # A local flow (the core writer numbers them from 1 in every file).
        {"ph": "s", "name": "A >= 1", "pid": 1, "tid": 1, "cat": "wait", "id": 1, "ts": 0.0},
        {"ph": "f", "name": "A >= 1", "pid": 1, "tid": 1, "cat": "wait", "id": 1, "bp": "e", "ts": 20.0},
        {"ph": "M", "name": "process_name", "pid": 4, "tid": 0, "args": {"name": "node"}},
        {"ph": "X", "name": "A reached 1", "pid": 4, "tid": 1, "cat": "message", "ts": 12.0, "dur": 1.0},
        {"ph": "s", "name": "reached", "pid": 4, "tid": 1, "cat": "message", "id": "msg:0:1:1:reached:1", "ts": 12.0},
        # Sent, never received (still in flight at the end): dropped.
        {"ph": "s", "name": "submitted", "pid": 4, "tid": 1, "cat": "message", "id": "msg:0:1:2:submitted:1",
         "ts": 14.0},
    ],
    "causal": meta(0, 1_000_000, 0, exports=[{"id": 1, "name": "A"}]),
}

# Rank 1: its ts 0 is 2 000 000 ns on its clock, 1 500 000 ns on rank 0's:
# 500 us after rank 0's ts 0.
RANK1 = {
    "displayTimeUnit": "ns",
    "traceEvents": [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "queues"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "m1.queue.1 (consumer)"}},
        op(5.0, "m1.queue.1", 1, "consume", waits=[wait("A (rank 0)", 1, "device", "m0.queue.1:1")]),
        # No producer recorded (the plan had not arrived): resolved through
        # the proxy's export to rank 0's operation that signalled A = 2.
        op(30.0, "m1.queue.1", 2, "consume", waits=[wait("A (rank 0)", 2, "reached", None)]),
        {"ph": "s", "name": "x", "pid": 1, "tid": 1, "cat": "wait", "id": 1, "ts": 5.0},
        {"ph": "f", "name": "x", "pid": 1, "tid": 1, "cat": "wait", "id": 1, "bp": "e", "ts": 30.0},
        {"ph": "X", "name": "A (rank 0) reached 1", "pid": 4, "tid": 2, "cat": "message", "ts": -3.0, "dur": 1.0},
        {"ph": "f", "name": "reached", "pid": 4, "tid": 2, "cat": "message", "id": "msg:0:1:1:reached:1",
         "bp": "e", "ts": -3.0},
    ],
    "causal": meta(1, 2_000_000, -500_000, proxies=[{"owner": 0, "id": 1, "name": "A (rank 0)"}]),
}


def run(merge: str, files: list, out: Path):
    return subprocess.run([sys.executable, merge, *map(str, files), "--json", str(out / "job.json"),
                           "--dot", str(out / "job.dot")], capture_output=True, text=True, timeout=60)


def check_merge(merge: str, tmp: Path) -> None:
    r0, r1 = tmp / "r0.json", tmp / "r1.json"
    r0.write_text(json.dumps(RANK0))
    r1.write_text(json.dumps(RANK1))
    # Given out of order: the tool sorts by rank.
    done = run(merge, [r1, r0], tmp)
    expect(done.returncode == 0, f"two ranks merge (exit {done.returncode}: {done.stderr.strip()})")
    if done.returncode != 0:
        return
    job = json.loads((tmp / "job.json").read_text())
    events = job["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"}
    expect(procs == {1: "rank 0", 2: "rank 1"}, f"one process per rank: {procs}")
    threads = sorted(e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "thread_name")
    expect(threads == ["queues: m0.queue.1 (producer)", "queues: m1.queue.1 (consumer)"],
           f"tracks keep their names under their family: {threads}")
    ops = {(e["pid"], e["args"]["epoch"]): e["ts"] for e in events if e.get("cat") == "operation"}
    expect(ops == {(1, 1): 0.0, (1, 2): 20.0, (2, 1): 505.0, (2, 2): 530.0},
           f"times shifted onto rank 0's clock: {ops}")
    msg = [e for e in events if str(e.get("id", "")).startswith("msg:")]
    expect(sorted((e["ph"], e["pid"], e["ts"]) for e in msg) == [("f", 2, 497.0), ("s", 1, 12.0)],
           f"the message arrow goes from rank 0's send to rank 1's receipt: {msg}")
    expect(not any(e.get("id") == "msg:0:1:2:submitted:1" for e in events), "a half arrow is dropped")
    local = sorted({str(e["id"]) for e in events if e.get("cat") == "wait"})
    expect(local == ["r0:1", "r1:1"], f"local flow ids are unique per rank: {local}")
    expect(job.get("causal_job") == {"ranks": 2, "cross_rank_flows": 1}, f"job summary: {job.get('causal_job')}")
    expect(min(e["ts"] for e in events if "ts" in e) == 0.0, "the earliest event is at 0")

    dot = (tmp / "job.dot").read_text()
    expect("subgraph cluster_rank0 {" in dot and "subgraph cluster_rank1 {" in dot, "one DOT cluster per rank")
    expect('label="m1.queue.1 (consumer)";' in dot, "queue clusters carry the queue's name")
    expect('"m0.queue.1:1" -> "m0.queue.1:2" [color=grey];' in dot, "FIFO edge within a queue")
    expect('"m0.queue.1:1" -> "m1.queue.1:1" [style=solid, label="A (rank 0) >= 1 (device)", color=blue, '
           'penwidth=2];' in dot, "a cross-rank edge from the recorded producer")
    expect('"m0.queue.1:2" -> "m1.queue.1:2" [style=dashed, label="A (rank 0) >= 2 (reached)", color=blue, '
           'penwidth=2];' in dot, "a cross-rank edge resolved through the proxy's export")


def check_refusals(merge: str, tmp: Path) -> None:
    r0 = tmp / "r0.json"
    r0.write_text(json.dumps(RANK0))
    plain = tmp / "plain.json"
    plain.write_text(json.dumps({"traceEvents": []}))
    broken = tmp / "broken.json"
    broken.write_text('{"traceEvents": [')
    future = tmp / "future.json"
    future.write_text(json.dumps({**RANK1, "causal": {**RANK1["causal"], "version": 2}}))
    outside = tmp / "outside.json"
    outside.write_text(json.dumps({**RANK1, "causal": {**RANK1["causal"], "rank": 2}}))
    for files, why, words in [
        ([r0, plain], "a trace that is not a rank trace", "not a causal rank trace"),
        ([broken], "a file that is not JSON", "cannot read a JSON trace"),
        ([future], "an unknown format version", "version 2"),
        ([outside], "a rank outside its job", "outside a job of 2"),
        ([r0, r0], "a rank given twice", "given twice"),
    ]:
        done = run(merge, files, tmp)
        expect(done.returncode == 1 and words in done.stderr, f"refuses {why} ({done.stderr.strip()})")


def main(argv: list) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 2
    with tempfile.TemporaryDirectory() as d:
        check_merge(argv[0], Path(d))
        check_refusals(argv[0], Path(d))
    print(f"{len(failures)} check(s) failed" if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
