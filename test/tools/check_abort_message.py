#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright 2026 The causal Authors
"""Runs a program that must abort, and checks what it said.

usage: check_abort_message.py PROGRAM EXPECTED [EXPECTED ...]

Passes when PROGRAM ends by a signal or a non-zero exit and its stderr
holds every EXPECTED text; fails otherwise, printing what it saw.
"""

import subprocess
import sys


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    program, expected = sys.argv[1], sys.argv[2:]
    done = subprocess.run([program], capture_output=True, text=True, errors="replace", timeout=60)
    print(done.stderr, end="")
    if done.returncode == 0:
        print(f"{program} exited 0; it should have aborted", file=sys.stderr)
        return 1
    missing = [e for e in expected if e not in done.stderr]
    if missing:
        print(f"the report lacks: {missing}", file=sys.stderr)
        return 1
    print(f"ok: exit {done.returncode}, report names {len(expected)} expected texts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
