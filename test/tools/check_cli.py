#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright 2026 The causal Authors
"""Runs one command-line tool invocation and checks how it answered.

usage: check_cli.py [--exit N] [--stdout TEXT]... [--stderr TEXT]...
                    [--quiet-stdout] [--quiet-stderr] -- COMMAND [ARGS...]

Passes when COMMAND exits with N (default 0), its standard output holds
every --stdout TEXT and its standard error every --stderr TEXT (and is
empty with --quiet-stdout / --quiet-stderr). A crash (a signal) always
fails. The tools' help and error tests are built from this: help goes to
stdout and exits 0; a bad option or input names the problem on stderr and
exits non-zero, never with a traceback or an abort.
"""

import argparse
import subprocess
import sys


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--exit", type=int, default=0, dest="exit_code")
    parser.add_argument("--stdout", action="append", default=[])
    parser.add_argument("--stderr", action="append", default=[])
    parser.add_argument("--quiet-stdout", action="store_true")
    parser.add_argument("--quiet-stderr", action="store_true")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command after --")
    done = subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=120)
    problems = []
    if done.returncode < 0:
        problems.append(f"killed by signal {-done.returncode}")
    elif done.returncode != args.exit_code:
        problems.append(f"exit code {done.returncode}, expected {args.exit_code}")
    problems += [f"stdout lacks {t!r}" for t in args.stdout if t not in done.stdout]
    problems += [f"stderr lacks {t!r}" for t in args.stderr if t not in done.stderr]
    if args.quiet_stdout and done.stdout:
        problems.append("stdout should be empty")
    if args.quiet_stderr and done.stderr:
        problems.append("stderr should be empty")
    if "Traceback (most recent call last)" in done.stderr:
        problems.append("a Python traceback on stderr")
    if "terminate called" in done.stderr:
        problems.append("an uncaught C++ exception")
    print("$ " + " ".join(command))
    print("--- stdout\n" + done.stdout + "--- stderr\n" + done.stderr + "---")
    for p in problems:
        print("FAIL: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
