#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright 2026 The causal Authors
"""Proves that the test watchdog (test/support/watchdog.hpp) turns a hang
into a failure with a dump instead of a silent timeout. Runs the
watchdog_stall binary three times:

  1. the stall with a 2 s stall limit: the process must die of SIGABRT
     within 60 s, after a dump that names the test case and shows the
     executor (workers parked, the sleeping slot), the watched semaphore
     and process, and every thread's stack;
  2. the same stall with the watchdog's limit far away, ended by SIGTERM
     (what Meson sends at its timeout): the dump must come before it dies;
  3. an eventually() that gives up: the test fails normally, after a dump.

usage: check_watchdog.py WATCHDOG_STALL_BINARY
Exits 0 when all three behave, 1 otherwise (saying what was missing).
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import time

STALL_CASE = "watchdog self-test: every thread waits for a wake that never comes"
EVENTUALLY_CASE = "watchdog self-test: eventually() that gives up writes the dump"


def run(binary, case, stall_seconds, terminate_after_marker=False, limit=60.0):
    env = dict(os.environ)
    env["CAUSAL_TEST_STALL_SECONDS"] = str(stall_seconds)
    env.pop("CAUSAL_TEST_HOGS", None)
    proc = subprocess.Popen([binary, case], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=env, text=True, errors="replace")
    if terminate_after_marker:
        # Read until the marker, then send what Meson sends at a timeout.
        seen = []
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            seen.append(line)
            if "stalling now" in line:
                time.sleep(0.5)  # let the threads park
                proc.send_signal(signal.SIGTERM)
                break
        try:
            rest, _ = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            proc.kill()
            rest, _ = proc.communicate()
            return None, "".join(seen) + rest
        return proc.returncode, "".join(seen) + rest
    try:
        out, _ = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        return None, out
    return proc.returncode, out


def expect(failures, output, pattern, what):
    if not re.search(pattern, output, re.MULTILINE):
        failures.append(f"missing {what} (/{pattern}/)")


def check_stall_dump(failures, out, reason_pattern):
    expect(failures, out, r"==== causal test watchdog: " + reason_pattern, "the dump header")
    expect(failures, out, re.escape("test case: " + STALL_CASE), "the running test case")
    expect(failures, out, r"executor 0x[0-9a-f]+: 2 workers \(2 parked, 0 spinning\)",
           "the executor's summary")
    expect(failures, out, r"worker 0: parked \(in the parked mask\)", "worker 0 parked")
    expect(failures, out, r"worker 1: parked \(in the parked mask\)", "worker 1 parked")
    expect(failures, out, r"slot \d+: process 0x[0-9a-f]+, sleeping, budget 2",
           "the sleeping compute slot")
    expect(failures, out, r"-- gate semaphore:\nsemaphore 0x[0-9a-f]+: value 0, "
                          r"parked waiters (2|unknown)", "the semaphore and its waiters")
    expect(failures, out, r"-- listed process:\nprocess 0x[0-9a-f]+: count 1, suspended",
           "the suspended listed process")
    expect(failures, out, r"-- threads \(\d+\):", "the thread list")
    if shutil.which("addr2line"):
        expect(failures, out, r"#\d+ 0x[0-9a-f]+ .*basic_semaphore<.*>::wait", "a frame in the semaphore's wait")
    expect(failures, out, r"==== end of causal test watchdog dump ====", "the end of the dump")


def main(argv):
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    binary = argv[0]
    problems = []

    started = time.monotonic()
    rc, out = run(binary, STALL_CASE, 2)
    took = time.monotonic() - started
    print(f"--- 1. stall limit 2 s: exit {rc} after {took:.1f} s\n{out}")
    failures = []
    if rc != -signal.SIGABRT:
        failures.append(f"expected death by SIGABRT, got {rc}")
    expect(failures, out, r"aborting the stalled test", "the abort message")
    check_stall_dump(failures, out, r"no progress for \d+\.\d s")
    problems += [f"stall: {f}" for f in failures]

    rc, out = run(binary, STALL_CASE, 600, terminate_after_marker=True)
    print(f"--- 2. SIGTERM: exit {rc}\n{out}")
    failures = []
    if rc not in (-signal.SIGTERM, 128 + signal.SIGTERM):
        failures.append(f"expected death by SIGTERM, got {rc}")
    check_stall_dump(failures, out, r"terminated by SIGTERM")
    problems += [f"sigterm: {f}" for f in failures]

    rc, out = run(binary, EVENTUALLY_CASE, 600)
    print(f"--- 3. eventually() gives up: exit {rc}\n{out}")
    failures = []
    if rc is None or rc <= 0:
        failures.append(f"expected a failed test (exit code > 0), got {rc}")
    expect(failures, out, r"==== causal test watchdog: eventually\(\) gave up", "the dump header")
    expect(failures, out, r"-- never semaphore:\nsemaphore 0x[0-9a-f]+: value 0", "the semaphore")
    problems += [f"eventually: {f}" for f in failures]

    for p in problems:
        print("FAILED:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
