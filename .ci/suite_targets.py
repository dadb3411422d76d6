#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright 2026 The causal Authors
"""Prints, one per line, the build outputs (paths relative to BUILDDIR) that
the tests of the given suites need, so that a CI step can build only those:

    ninja -C BUILDDIR $(python3 .ci/suite_targets.py BUILDDIR unit stress)

A sanitizer build only runs the unit and stress suites; building the header
self-containment TUs and the tools it never runs would double its time.

usage: suite_targets.py BUILDDIR SUITE [SUITE...]
"""

import json
import os
import subprocess
import sys


def introspect(builddir: str, what: str) -> list:
    out = subprocess.run(["meson", "introspect", what, builddir],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    builddir = os.path.abspath(argv[0])
    wanted = set(argv[1:])
    targets = {t["id"]: t for t in introspect(builddir, "--targets")}
    outputs: set[str] = set()
    for test in introspect(builddir, "--tests"):
        suites = {s.split(":", 1)[-1] for s in test["suite"]}
        if not suites & wanted:
            continue
        for target_id in test.get("depends", []):
            target = targets.get(target_id)
            if target is None:
                continue
            for filename in target["filename"]:
                outputs.add(os.path.relpath(filename, builddir))
    for output in sorted(outputs):
        print(output)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
