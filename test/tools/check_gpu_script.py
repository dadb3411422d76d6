#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright 2026 The causal Authors
"""Runs .ci/gpu against stubs and checks what it decided, with no GPU.

usage: check_gpu_script.py PATH/TO/.ci/gpu

Each case builds a temporary machine: a PATH of symlinks to the system
tools the script uses plus stub nvidia-smi / nvcc answers, toolkit
prefixes with a stub nvcc (CAUSAL_GPU_CUDA_ROOTS), a driver probe that
prints fixed answers (CAUSAL_GPU_PROBE), a folder of device nodes
(CAUSAL_GPU_DEV_DIR) and a stub compute-sanitizer (CAUSAL_GPU_SANITIZER).
The dry-run cases check the decisions before a build: GPU or not, the
toolkit, the -gencode flags, the plan and the exit code. The prebuilt
cases (CAUSAL_GPU_PREBUILT=1, stub binaries that log how they were run)
check the run itself: what runs, under which environment, and that a
skip, an error row or a missing piece fails it where a GPU is present.
Prints each case's name and, for a failure, the script's output.
"""

import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile

# Tools .ci/gpu, .ci/lib.sh and .ci/deps call; the hermetic PATH has only
# these (dpkg where it exists), so a real nvcc, nvidia-smi or
# compute-sanitizer on this machine never answers for a stub.
SYSTEM_TOOLS = ["bash", "sed", "grep", "sort", "head", "tail", "tr", "wc", "readlink", "dirname",
                "date", "mktemp", "timeout", "env", "cat", "rm", "mkdir", "cut", "dpkg", "dpkg-query"]

H100 = "0 9.0 1980000 2619000 NVIDIA H100 80GB HBM3"
A100 = "1 8.0 1410000 1593000 NVIDIA A100-SXM4-80GB"
ARCHS_12_8 = [75, 80, 86, 87, 89, 90, 100, 101, 120]


def write_exe(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("#!/bin/bash\n" + text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def nvcc_stub(path, release, archs):
    listing = "\\n".join(f"compute_{a}" for a in archs)
    write_exe(path, f"""case "$1" in
  --version) printf 'nvcc: NVIDIA (R) Cuda compiler driver\\nCuda compilation tools, release {release}, V{release}.1\\n' ;;
  --list-gpu-arch) printf '{listing}\\n' ;;
  *) exit 1 ;;
esac
""")


class Machine:
    """One stub machine in a temporary folder."""

    def __init__(self, root, script):
        self.root = root
        self.script = script
        self.bin = os.path.join(root, "bin")
        self.dev = os.path.join(root, "dev")
        self.log = os.path.join(root, "calls.log")
        os.makedirs(self.bin)
        os.makedirs(self.dev)
        for tool in SYSTEM_TOOLS:
            found = shutil.which(tool)
            if found:
                os.symlink(found, os.path.join(self.bin, tool))
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("CAUSAL_", "CUDA_"))}
        self.env.update({
            "PATH": self.bin,
            "TMPDIR": root,
            "CAUSAL_GPU_DEV_DIR": self.dev,
            "CAUSAL_GPU_CUDA_ROOTS": "",
            "CAUSAL_GPU_SANITIZER": "none",
            "CAUSAL_GPU_PROBE": os.path.join(root, "probe"),
        })
        self.probe(["libcuda none", "count 0"])
        self.nvidia_smi(None)

    def probe(self, lines, rc=0):
        body = "".join(f"echo '{line}'\n" for line in lines)
        write_exe(os.path.join(self.root, "probe"), body + f"exit {rc}\n")

    def nvidia_smi(self, gpus, compute_cap=None):
        """None: installed, but it cannot reach a driver; else the -L lines."""
        path = os.path.join(self.bin, "nvidia-smi")
        if gpus is None:
            write_exe(path, "echo 'NVIDIA-SMI has failed because it could not communicate with the "
                            "NVIDIA driver.' >&2\nexit 9\n")
            return
        listing = "".join(f"GPU {i}: {name} (UUID: GPU-{i})\\n" for i, name in enumerate(gpus))
        write_exe(path, f"""case "$*" in
  -L) printf '{listing}' ;;
  *compute_cap*--format=csv,noheader*) echo '{compute_cap or ""}' ;;
  *) echo 'index, name, driver_version'; echo '0, stub, 570.00' ;;
esac
""")

    def toolkit(self, name, release, archs=ARCHS_12_8):
        prefix = os.path.join(self.root, name)
        nvcc_stub(os.path.join(prefix, "bin", "nvcc"), release, archs)
        roots = self.env["CAUSAL_GPU_CUDA_ROOTS"]
        self.env["CAUSAL_GPU_CUDA_ROOTS"] = (roots + " " + prefix).strip()

    def nvcc_on_path(self, release, archs=ARCHS_12_8):
        nvcc_stub(os.path.join(self.bin, "nvcc"), release, archs)

    def device_node(self):
        open(os.path.join(self.dev, "nvidia0"), "w", encoding="utf-8").close()

    def sanitizer(self):
        path = os.path.join(self.root, "compute-sanitizer")
        write_exe(path, f"""echo "compute-sanitizer $2 ${{@: -1}}" >>'{self.log}'
exec "${{@: -1}}"
""")
        self.env["CAUSAL_GPU_SANITIZER"] = path

    def gpu(self, devices=(H100,), driver=12080):
        self.probe(["libcuda libcuda.so.1", "init 0", f"driver {driver}", f"count {len(devices)}"]
                   + [f"device {d}" for d in devices])
        self.nvidia_smi([d.split(" ", 4)[4] for d in devices])
        self.device_node()

    def prebuilt(self, device_rc=0, bench_error=False):
        """Stub binaries in a build folder; each logs its run and environment."""
        build = os.path.join(self.root, "build")
        log = (f"echo \"${{0##*/}} $* connections=${{CUDA_DEVICE_MAX_CONNECTIONS:-}} "
               f"require_memory_ops=${{CAUSAL_CUDA_REQUIRE_MEMORY_OPS:-}}\" >>'{self.log}'\n")
        write_exe(os.path.join(build, "adapters/cuda/test/cuda_host_logic_test"), log + "exit 0\n")
        write_exe(os.path.join(build, "adapters/cuda/test/cuda_device_test"), log + f"exit {device_rc}\n")
        write_exe(os.path.join(build, "adapters/cuda/examples/cuda_01_stream_pipeline"), log + "exit 0\n")
        error = ('      "error_occurred": true,\\n      "error_message": "no timeline word",\\n'
                 if bench_error else "")
        write_exe(os.path.join(build, "adapters/cuda/bench/cuda_stream_sync_bench"), log + f"""
for arg; do
  case "$arg" in --benchmark_out=*) out="${{arg#--benchmark_out=}}" ;; esac
done
printf '{{\\n  "benchmarks": [\\n    {{\\n      "name": "bm_edge/wait_value",\\n      "run_type": "iteration",\\n{error}      "real_time": 1.0\\n    }},\\n    {{\\n      "name": "bm_edge/event",\\n      "run_type": "iteration",\\n      "real_time": 2.0\\n    }}\\n  ]\\n}}\\n' >"$out"
exit 0
""")
        self.env["CAUSAL_GPU_PREBUILT"] = "1"
        self.env["CAUSAL_GPU_BUILD"] = build

    def run(self, *args):
        done = subprocess.run(["bash", self.script, *args], env=self.env, capture_output=True,
                              text=True, errors="replace", timeout=120)
        calls = ""
        if os.path.exists(self.log):
            with open(self.log, encoding="utf-8") as f:
                calls = f.read()
        return done.returncode, done.stdout, done.stderr, calls


def case(name, setup, args, exit_code, contains=(), absent=(), calls_contain=(), calls_absent=(),
         last_line=None):
    # last_line: a pattern the last line of standard output must match (the
    # summary; the failures go to standard error).
    """Runs one case; returns a list of what went wrong (empty: passed)."""
    root = tempfile.mkdtemp(prefix="causal-gpu-script-")
    try:
        machine = Machine(root, SCRIPT)
        setup(machine)
        rc, stdout, stderr, calls = machine.run(*args)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    out = stdout + stderr
    problems = []
    if rc != exit_code:
        problems.append(f"exit code {rc}, expected {exit_code}")
    problems += [f"output lacks {text!r}" for text in contains if text not in out]
    problems += [f"output has {text!r}" for text in absent if text in out]
    problems += [f"calls lack {pattern!r}" for pattern in calls_contain
                 if not re.search(pattern, calls, re.MULTILINE)]
    problems += [f"calls have {pattern!r}" for pattern in calls_absent
                 if re.search(pattern, calls, re.MULTILINE)]
    if last_line is not None:
        lines = stdout.strip().splitlines()
        if not lines or not re.fullmatch(last_line, lines[-1]):
            problems.append(f"last line {lines[-1] if lines else ''!r} does not match {last_line!r}")
    status = "FAIL" if problems else "ok"
    print(f"{status}: {name}")
    if problems:
        for p in problems:
            print(f"    {p}")
        print("    --- output ---")
        print("\n".join("    " + line for line in out.splitlines()))
        if calls:
            print("    --- calls ---")
            print("\n".join("    " + line for line in calls.splitlines()))
    return problems


def toolkit_13(m):
    m.toolkit("cuda-13.0", "13.0")


def main() -> int:
    failures = 0
    dry = ["--dry-run"]

    def check(*args, **kwargs):
        nonlocal failures
        if case(*args, **kwargs):
            failures += 1

    # No GPU: nvidia-smi cannot reach a driver, libcuda is missing, no nodes.
    check("no GPU", toolkit_13, dry, 0,
          contains=["no GPU: building, and running the host-logic test only", "toolkit: CUDA 13.0",
                    "architecture: none known, no -gencode", "run cuda_host_logic",
                    "dry run: nothing configured"],
          absent=["GPU RUN FAILED", "-gencode=", "compute-sanitizer memcheck"])

    # No GPU, building for one elsewhere.
    def archs_set(m):
        toolkit_13(m)
        m.env["CAUSAL_GPU_ARCHS"] = "9.0"
    check("no GPU, CAUSAL_GPU_ARCHS=9.0", archs_set, dry, 0,
          contains=["-gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_90,code=compute_90"])

    # Debian 12's own toolkit only.
    check("old toolkit (11.8) only", lambda m: m.nvcc_on_path("11.8", [50, 60, 70, 75, 80, 86, 89, 90]),
          dry, 1, contains=["GPU RUN FAILED: CUDA toolkit too old", "(CUDA 11.8)", "CUDA >= 12.5",
                            "cudaGetDriverEntryPointByVersion"])

    # Debian's 11.8 on PATH, NVIDIA's 12.8 under a prefix: the prefix wins.
    def old_and_new(m):
        m.nvcc_on_path("11.8")
        m.toolkit("cuda-12.8", "12.8")
    check("old toolkit on PATH, 12.8 in /usr/local/cuda", old_and_new, dry, 0,
          contains=["toolkit: CUDA 12.8", "cuda-12.8/bin/nvcc", "skipped nvcc", "(CUDA 11.8): older than 12.5"],
          absent=["GPU RUN FAILED"])

    check("no toolkit at all", lambda m: None, dry, 1, contains=["GPU RUN FAILED: no CUDA compiler"])

    # One H100.
    def h100(m):
        m.toolkit("cuda-12.8", "12.8")
        m.gpu()
        m.sanitizer()
    check("H100 present", h100, dry, 0,
          contains=["driver API: libcuda.so.1, CUDA 12.8 driver, 1 device(s)",
                    "device 0: NVIDIA H100 80GB HBM3, compute capability 9.0, SM clock 1980 MHz",
                    "nvidia-smi: 1 GPU(s)", "nvidia0",
                    "architecture: 90 (from the driver probe): "
                    "-gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_90,code=compute_90",
                    "GPU present: nothing may skip",
                    "run cuda_device with CUDA_DEVICE_MAX_CONNECTIONS=1",
                    "run cuda_01_stream_pipeline with CUDA_DEVICE_MAX_CONNECTIONS=1",
                    "compute-sanitizer memcheck: cuda_device, cuda_01_stream_pipeline",
                    "compute-sanitizer racecheck", "compute-sanitizer synccheck",
                    "compute-sanitizer initcheck",
                    "run cuda_stream_sync_bench (JSON; a row with an error fails)",
                    "run cuda_stream_sync_bench with CUDA_DEVICE_MAX_CONNECTIONS=1"],
          absent=["GPU RUN FAILED", "code=sm_75"])

    # Two GPUs of different generations: SASS for both, PTX of the newer.
    def two(m):
        m.toolkit("cuda-12.8", "12.8")
        m.gpu(devices=(H100, A100))
        m.sanitizer()
    check("A100 + H100", two, dry, 0,
          contains=["architecture: 80 90",
                    "-gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_90,code=sm_90 "
                    "-gencode=arch=compute_90,code=compute_90"],
          absent=["code=compute_80", "GPU RUN FAILED"])

    # Device nodes, yet the driver API sees nothing.
    def nodes_only(m):
        toolkit_13(m)
        m.device_node()
        m.probe(["libcuda libcuda.so.1", "init 100", "driver 12080", "count 0"])
    check("device nodes, no device from the driver API", nodes_only, dry, 1,
          contains=["GPU RUN FAILED: device nodes exist", "the driver API finds no device",
                    "cuInit 100"])

    # nvidia-smi lists a GPU, libcuda cannot be loaded.
    def smi_only(m):
        toolkit_13(m)
        m.nvidia_smi(["NVIDIA H100 80GB HBM3"])
    check("nvidia-smi lists a GPU, the driver API none", smi_only, dry, 1,
          contains=["GPU RUN FAILED: nvidia-smi lists 1 GPU(s) but the driver API finds none",
                    "libcuda none"])

    # A GPU without compute-sanitizer.
    def no_sanitizer(m):
        m.toolkit("cuda-12.8", "12.8")
        m.gpu()
    check("H100 without compute-sanitizer", no_sanitizer, dry, 1,
          contains=["compute-sanitizer: not installed", "GPU RUN FAILED: compute-sanitizer is not installed"])

    # A 12.2 driver under a 13.0 toolkit.
    def old_driver(m):
        toolkit_13(m)
        m.gpu(driver=12020)
        m.sanitizer()
    check("driver older than the toolkit", old_driver, dry, 1,
          contains=["the driver supports CUDA 12.2, older than the toolkit's major version (nvcc 13.0)"])

    # A GPU newer than nvcc knows.
    def too_new_gpu(m):
        m.toolkit("cuda-12.8", "12.8", archs=[75, 80, 86, 89, 90])
        m.gpu(devices=("0 10.0 1965000 3996000 NVIDIA B200",))
        m.sanitizer()
    check("compute capability nvcc cannot build for", too_new_gpu, dry, 1,
          contains=["nvcc 12.8 cannot build for compute capability 100"])

    # No driver probe answer: device nodes and nvidia-smi decide.
    def no_probe(m):
        m.toolkit("cuda-12.8", "12.8")
        m.gpu()
        m.sanitizer()
        m.probe([], rc=1)
        m.nvidia_smi(["NVIDIA H100 80GB HBM3"], compute_cap="9.0")
    check("driver probe fails, nodes and nvidia-smi say GPU", no_probe, dry, 0,
          contains=["driver probe", "failed", "without a driver probe answer",
                    "architecture: 90 (from nvidia-smi)"])

    check("bad argument", toolkit_13, ["--bogus"], 2, contains=["unknown argument '--bogus'"])

    # The run itself, on stub binaries.
    def run_h100(**prebuilt):
        def setup(m):
            m.gpu()
            m.sanitizer()
            m.prebuilt(**prebuilt)
        return setup
    check("run: H100, everything passes", run_h100(), [], 0,
          contains=["cuda_stream_sync_bench rows: 2 rows, none with an error"],
          absent=["GPU RUN FAILED"],
          calls_contain=[r"^cuda_host_logic_test  connections= ",
                         r"^cuda_device_test  connections= require_memory_ops=1$",
                         r"^cuda_device_test  connections=1 require_memory_ops=1$",
                         r"^cuda_01_stream_pipeline  connections=1 ",
                         r"^cuda_stream_sync_bench .*--benchmark_out=.*connections=1 ",
                         *[rf"^compute-sanitizer {tool} .*cuda_device_test$"
                           for tool in ("memcheck", "racecheck", "synccheck", "initcheck")],
                         *[rf"^compute-sanitizer {tool} .*cuda_01_stream_pipeline$"
                           for tool in ("memcheck", "racecheck", "synccheck", "initcheck")]],
          last_line=r"[1-9][0-9]* passed, 0 failed, 0 skipped")
    check("run: a benchmark row with an error fails", run_h100(bench_error=True), [], 1,
          contains=["GPU RUN FAILED: cuda_stream_sync_bench rows: 1 of 2 benchmark rows reported an error"],
          last_line=r"[0-9]+ passed, [1-9][0-9]* failed, 0 skipped")
    check("run: cuda_device skipping with a GPU fails", run_h100(device_rc=77), [], 1,
          contains=["GPU RUN FAILED: cuda_device skipped (exit 77) although a GPU is present"],
          last_line=r"[0-9]+ passed, [1-9][0-9]* failed, 0 skipped")

    def run_no_gpu(m):
        m.prebuilt(device_rc=77)
    check("run: no GPU, only the host-logic test", run_no_gpu, [], 0,
          contains=["no GPU: cuda_device, the example"],
          calls_contain=[r"^cuda_host_logic_test "], calls_absent=[r"^cuda_device_test "],
          last_line=r"1 passed, 0 failed, 0 skipped")

    print(f"{failures} case(s) failed" if failures else "all cases passed")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    SCRIPT = os.path.abspath(sys.argv[1])
    sys.exit(main())
