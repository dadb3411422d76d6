#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright 2026 The causal Authors
"""Runs one compile-fail case: passes only if the case does NOT compile and
the compiler's diagnostic matches the regex the case declares.

Line 1 of every <case>.fail.cpp reads

    // expect-error: <Python regex>

and the regex is searched (re.search, case-sensitive) in the compiler's
combined stdout and stderr. Write it to match both g++ and clang.

usage: run_case.py CASE_FILE INCLUDE_DIR -- COMPILER [ARGS...]
The command run is: COMPILER ARGS -std=c++20 -fsyntax-only -I INCLUDE_DIR CASE_FILE
"""

import re
import subprocess
import sys

MARKER = "// expect-error:"


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    case_file, include_dir, compiler = argv[0], argv[1], argv[3:]

    with open(case_file, encoding="utf-8") as f:
        first_line = f.readline().strip()
    if not first_line.startswith(MARKER):
        print(f"{case_file}: line 1 must be '{MARKER} <regex>', got: {first_line!r}")
        return 1
    pattern = first_line[len(MARKER):].strip()
    if not pattern:
        print(f"{case_file}: the expect-error regex is empty")
        return 1
    try:
        expected = re.compile(pattern)
    except re.error as e:
        print(f"{case_file}: bad expect-error regex {pattern!r}: {e}")
        return 1

    command = compiler + ["-std=c++20", "-fsyntax-only", "-I", include_dir, case_file]
    print("$ " + " ".join(command))
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, errors="replace")
    print(result.stdout, end="")

    if result.returncode == 0:
        print(f"FAIL: {case_file} compiled, but it must not (expected /{pattern}/)")
        return 1
    if not expected.search(result.stdout):
        print(f"FAIL: {case_file} failed to compile, but no diagnostic matches /{pattern}/")
        return 1
    print(f"ok: failed to compile with a diagnostic matching /{pattern}/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
