#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright 2026 The causal Authors
"""Runs a death test (mpi_carrier_death_test, mpi_node_death_test) under
mpiexec with Open MPI's recovery mode and judges it by the verdict line
rank 0 prints.

usage: check_death.py MPIEXEC RANKS TEST_BINARY exit|kill [MPIEXEC_ARGS...]

With recovery (OMPI_MCA_orte_enable_recovery=1) Open MPI 4.1 lets the
survivors run on after a rank dies, but mpiexec then exits 0 whatever the
ranks return, so its status says nothing: the test passes only when the
output holds "<binary name>: VERDICT pass". "SKIP" in the output
(another MPI, fewer ranks) exits 77. A run that does not end within the
limit fails with what it printed so far.
"""

import os
import subprocess
import sys

LIMIT_SECONDS = 100


def main() -> int:
    if len(sys.argv) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    mpiexec, ranks, binary, how = sys.argv[1:5]
    extra = sys.argv[5:]
    env = dict(os.environ)
    env["OMPI_MCA_orte_enable_recovery"] = "1"
    command = [mpiexec, "-n", ranks, *extra, binary, how]
    try:
        run = subprocess.run(command, env=env, capture_output=True, timeout=LIMIT_SECONDS)
    except subprocess.TimeoutExpired as expired:
        out = (expired.stdout or b"").decode(errors="replace")
        err = (expired.stderr or b"").decode(errors="replace")
        print(f"{' '.join(command)} did not end within {LIMIT_SECONDS} s:\n{out}\n{err}",
              file=sys.stderr)
        return 1
    out = run.stdout.decode(errors="replace")
    err = run.stderr.decode(errors="replace")
    print(out)
    if "SKIP" in out:
        return 77
    if f"{os.path.basename(binary)}: VERDICT pass" in out:
        return 0
    print(f"no passing verdict (mpiexec exited {run.returncode}):\n{err}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
