#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright 2026 The causal Authors
"""Merges the per-rank traces of a causal::mpi job into one trace and one DAG.

usage: merge_traces.py RANK_TRACE.json [RANK_TRACE.json...] --json OUT.json [--dot OUT.dot]

Each input is what causal::mpi::rank_trace::write() produced on one rank
(<causal/adapters/mpi/trace.hpp>): a Chrome trace whose object "causal" holds
the rank, the job size, t0_ns (the rank's steady clock at its ts 0),
clock_offset_ns (added to the rank's clock gives rank 0's), and the rank's
exports and proxies by name.

The merged Chrome/Perfetto JSON (open in https://ui.perfetto.dev):
  - one process per rank, named "rank N"; the rank's queues, semaphores,
    workers and node keep their tracks, named "<family>: <track>";
  - every time shifted onto rank 0's clock, the earliest event at 0;
  - flows: a rank's own flow ids are made unique per rank; an update
    message's flow ("msg:<owner>:<id>:<value>:<kind>:<to>") is kept when both
    its send and its receipt are present, which draws an arrow between ranks;
    a half (its peer's file is missing, or the message was in flight at the
    end) is dropped.
  - "causal_job" next to "traceEvents": ranks, cross_rank_flows.

The DOT graph: one cluster per rank ("rank N") and within it one per queue;
one node per operation ("axis:epoch" and its label); a grey edge between
consecutive operations of a queue; one edge per wait from the operation that
produced the value waited for -- solid for a wait issued, dashed for an
elided one, labelled with the semaphore, value and tier, bold blue when it
crosses ranks. The producer is the wait's recorded producer entry, or, for a
wait on a proxy that recorded none (the owner's plan had not arrived), the
operation of the owner rank that signalled that export's value.

Exit status: 0 on success, 1 with a message on stderr when an input is not
a rank trace (unreadable, not JSON, no "causal" object, unknown version, a
rank outside the job or given twice).
"""

import argparse
import json
import sys
from pathlib import Path

FORMAT = "causal-rank-trace"
VERSION = 1
# Track families of rank_trace's pids (causal::write_chrome_trace + node).
FAMILIES = {1: "queues", 2: "semaphores", 3: "workers", 4: "node"}
FLOW_PHASES = {"s", "t", "f"}


class MergeError(Exception):
    pass


def load_rank(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise MergeError(f"{path}: cannot read a JSON trace: {e}") from e
    meta = data.get("causal") if isinstance(data, dict) else None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise MergeError(f'{path}: not a causal rank trace (no "causal" object of format {FORMAT})')
    if meta.get("version") != VERSION:
        raise MergeError(f"{path}: rank trace version {meta.get('version')} (this tool reads {VERSION})")
    for key in ("rank", "size", "t0_ns", "clock_offset_ns"):
        if not isinstance(meta.get(key), int):
            raise MergeError(f'{path}: "causal.{key}" is missing or not an integer')
    if not 0 <= meta["rank"] < meta["size"]:
        raise MergeError(f"{path}: rank {meta['rank']} outside a job of {meta['size']}")
    events = data.get("traceEvents")
    if not isinstance(events, list):
        raise MergeError(f'{path}: no "traceEvents" list')
    return {"path": path, "meta": meta, "events": events}


def track_id(pid: int, tid: int) -> int:
    # Families stay apart within a rank's process: queues first.
    return pid * 1000 + tid


def merge_json(ranks: list) -> dict:
    # Each rank's ts 0 on rank 0's clock, in ns; the earliest event goes to 0.
    starts = {r["meta"]["rank"]: r["meta"]["t0_ns"] + r["meta"]["clock_offset_ns"] for r in ranks}
    origin = None
    for r in ranks:
        base = starts[r["meta"]["rank"]]
        for e in r["events"]:
            if "ts" in e:
                t = base + float(e["ts"]) * 1000.0
                origin = t if origin is None else min(origin, t)
    if origin is None:
        origin = min(starts.values(), default=0)

    out = []
    # Flow ends of update messages by id, to keep only complete pairs.
    message_ends = {}
    for r in ranks:
        rank = r["meta"]["rank"]
        pid = rank + 1
        out.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": f"rank {rank}"}})
        out.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": rank}})
        shift_us = (starts[rank] - origin) / 1000.0
        for e in r["events"]:
            old_pid = e.get("pid", 0)
            family = FAMILIES.get(old_pid, f"pid {old_pid}")
            if e.get("ph") == "M":
                if e.get("name") == "thread_name":
                    name = (e.get("args") or {}).get("name", "")
                    out.append({"ph": "M", "name": "thread_name", "pid": pid,
                                "tid": track_id(old_pid, e.get("tid", 0)),
                                "args": {"name": f"{family}: {name}"}})
                continue  # process names are replaced by "rank N"
            m = dict(e)
            m["pid"] = pid
            m["tid"] = track_id(old_pid, e.get("tid", 0))
            if "ts" in m:
                m["ts"] = round(float(m["ts"]) + shift_us, 3)
            if m.get("ph") in FLOW_PHASES:
                fid = str(m.get("id"))
                if fid.startswith("msg:"):
                    message_ends.setdefault(fid, []).append(m)
                    continue
                m["id"] = f"r{rank}:{fid}"
            out.append(m)
    cross = 0
    for fid, ends in sorted(message_ends.items()):
        phases = sorted(e["ph"] for e in ends)
        if phases != ["f", "s"]:
            continue
        out.extend(ends)
        if ends[0]["pid"] != ends[1]["pid"]:
            cross += 1
    size = max((r["meta"]["size"] for r in ranks), default=0)
    return {"displayTimeUnit": "ns", "traceEvents": out,
            "causal_job": {"ranks": size, "cross_rank_flows": cross}}


def dot_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def merge_dot(ranks: list) -> str:
    # Operations by "axis:epoch", with their rank and queue; queue track
    # names (the axis and the name given to it) by (rank, tid).
    ops = {}
    queue_names = {}
    for r in ranks:
        for e in r["events"]:
            if e.get("ph") == "M" and e.get("name") == "thread_name" and e.get("pid") == 1:
                queue_names[(r["meta"]["rank"], e.get("tid"))] = (e.get("args") or {}).get("name")
    # (rank, export name, value) -> operation that signalled it.
    signalled = {}
    for r in ranks:
        rank = r["meta"]["rank"]
        for e in r["events"]:
            if e.get("ph") != "X" or e.get("cat") != "operation":
                continue
            args = e.get("args") or {}
            key = f"{args.get('axis')}:{args.get('epoch')}"
            ops[key] = {"rank": rank, "axis": args.get("axis"), "epoch": args.get("epoch", 0),
                        "queue": queue_names.get((rank, e.get("tid"))) or args.get("axis"),
                        "label": args.get("label") or e.get("name", ""), "waits": args.get("waits") or []}
            for s in args.get("signals") or []:
                signalled[(rank, s.get("semaphore"), s.get("value"))] = key
    # Proxy names -> (owner, owner's export name).
    export_names = {}
    for r in ranks:
        for x in r["meta"].get("exports", []):
            export_names[(r["meta"]["rank"], x.get("id"))] = x.get("name")
    proxy_of = {}
    for r in ranks:
        for p in r["meta"].get("proxies", []):
            owner_name = export_names.get((p.get("owner"), p.get("id")))
            if owner_name is not None:
                proxy_of[(r["meta"]["rank"], p.get("name"))] = (p.get("owner"), owner_name)

    lines = ["digraph causal_job {", "  rankdir=LR;", "  node [shape=box, fontsize=10];",
             "  edge [fontsize=8];"]
    by_rank = {}
    for key, op in ops.items():
        by_rank.setdefault(op["rank"], {}).setdefault(op["axis"], []).append((op["epoch"], key))
    for rank in sorted(by_rank):
        lines.append(f"  subgraph cluster_rank{rank} {{")
        lines.append(f'    label="rank {rank}";')
        for q, (axis, items) in enumerate(sorted(by_rank[rank].items())):
            lines.append(f"    subgraph cluster_rank{rank}_q{q} {{")
            lines.append(f"      label={dot_string(str(ops[items[0][1]]['queue']))};")
            items.sort()
            for _, key in items:
                lines.append(f"      {dot_string(key)} [label={dot_string(key + chr(10) + ops[key]['label'])}];")
            for (_, a), (_, b) in zip(items, items[1:]):
                lines.append(f"      {dot_string(a)} -> {dot_string(b)} [color=grey];")
            lines.append("    }")
        lines.append("  }")
    for key, op in sorted(ops.items()):
        for w in op["waits"]:
            producer = w.get("producer")
            if producer not in ops:
                owner = proxy_of.get((op["rank"], w.get("semaphore")))
                producer = signalled.get((owner[0], owner[1], w.get("value"))) if owner else None
            if producer is None or producer not in ops:
                continue
            style = "dashed" if w.get("elided") else "solid"
            label = f"{w.get('semaphore')} >= {w.get('value')} ({w.get('tier')})"
            attrs = f"style={style}, label={dot_string(label)}"
            if ops[producer]["rank"] != op["rank"]:
                attrs += ", color=blue, penwidth=2"
            lines.append(f"  {dot_string(producer)} -> {dot_string(key)} [{attrs}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("inputs", nargs="+", type=Path, help="per-rank trace files")
    parser.add_argument("--json", required=True, type=Path, help="merged Chrome/Perfetto JSON to write")
    parser.add_argument("--dot", type=Path, help="merged Graphviz DOT to write")
    args = parser.parse_args(argv)
    try:
        ranks = [load_rank(p) for p in args.inputs]
        seen = {}
        for r in ranks:
            rank = r["meta"]["rank"]
            if rank in seen:
                raise MergeError(f"{r['path']}: rank {rank} given twice (also {seen[rank]})")
            seen[rank] = r["path"]
        ranks.sort(key=lambda r: r["meta"]["rank"])
        merged = merge_json(ranks)
        args.json.write_text(json.dumps(merged), encoding="utf-8")
        if args.dot is not None:
            args.dot.write_text(merge_dot(ranks), encoding="utf-8")
    except (MergeError, OSError) as e:
        print(f"merge_traces: {e}", file=sys.stderr)
        return 1
    job = merged["causal_job"]
    print(f"merged {len(ranks)} rank(s) into {args.json}: {len(merged['traceEvents'])} events, "
          f"{job['cross_rank_flows']} cross-rank message arrows"
          + (f"; DAG in {args.dot}" if args.dot is not None else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
