#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright 2026 The causal Authors
"""Renders the DOT graph a sample program writes, and fails on any problem.

usage: render_dot.py SAMPLE_PROGRAM DOT

Runs SAMPLE_PROGRAM (which writes DOT to stdout), then `DOT -Tsvg` on that
text. Fails when either exits non-zero, when Graphviz prints anything on
stderr (errors and warnings alike: a syntax problem in our escaping shows up
as a warning first), or when the output is not an SVG document.
"""

import subprocess
import sys


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    sample, dot = sys.argv[1], sys.argv[2]
    made = subprocess.run([sample], capture_output=True, timeout=30)
    if made.returncode != 0:
        print(f"{sample} exited with {made.returncode}:\n{made.stderr.decode(errors='replace')}",
              file=sys.stderr)
        return 1
    if not made.stdout.startswith(b"digraph "):
        print("the sample did not write a digraph", file=sys.stderr)
        return 1
    rendered = subprocess.run([dot, "-Tsvg"], input=made.stdout, capture_output=True, timeout=30)
    problems = rendered.stderr.decode(errors="replace").strip()
    if rendered.returncode != 0 or problems:
        print(f"dot -Tsvg exited with {rendered.returncode}:\n{problems}", file=sys.stderr)
        print(made.stdout.decode(errors="replace"), file=sys.stderr)
        return 1
    if b"<svg" not in rendered.stdout or b"</svg>" not in rendered.stdout:
        print("dot -Tsvg did not produce an SVG document", file=sys.stderr)
        return 1
    nodes = rendered.stdout.count(b'class="node"')
    edges = rendered.stdout.count(b'class="edge"')
    print(f"rendered {len(made.stdout)} bytes of DOT: {nodes} nodes, {edges} edges")
    if nodes == 0 or edges == 0:
        print("the rendered graph is empty", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
