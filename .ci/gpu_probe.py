#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright 2026 The causal Authors
"""Asks the CUDA driver API (libcuda, through ctypes) what GPUs it sees, so
that .ci/gpu does not depend on nvidia-smi being installed.

Prints one answer per line, for .ci/gpu to read:

    libcuda PATH            the library that loaded, or "libcuda none"
    init CODE               cuInit(0)'s CUresult (0: success; 100: no device)
    driver VERSION          cuDriverGetVersion, e.g. 12080 for CUDA 12.8
    count N                 cuDeviceGetCount (0 when init failed)
    device I MAJOR.MINOR SM_KHZ MEM_KHZ NAME...
                            one per device: compute capability, the clocks
                            the driver reports (0 where it does not), name

Always exits 0 when it could ask: what it found is the answer, not an
error. Exits 2 only for a bad command line.

usage: gpu_probe.py
"""

import ctypes
import sys

CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13
CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76


def attribute(cuda, device, which):
    value = ctypes.c_int(0)
    if cuda.cuDeviceGetAttribute(ctypes.byref(value), which, device) != 0:
        return 0
    return value.value


def main() -> int:
    if len(sys.argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    cuda = None
    for name in ("libcuda.so.1", "libcuda.so"):
        try:
            cuda = ctypes.CDLL(name)
            print(f"libcuda {name}")
            break
        except OSError:
            continue
    if cuda is None:
        print("libcuda none")
        print("count 0")
        return 0

    init = cuda.cuInit(0)
    print(f"init {init}")
    version = ctypes.c_int(0)
    if cuda.cuDriverGetVersion(ctypes.byref(version)) == 0:
        print(f"driver {version.value}")
    count = ctypes.c_int(0)
    if init != 0 or cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
        print("count 0")
        return 0
    print(f"count {count.value}")
    for index in range(count.value):
        device = ctypes.c_int(0)
        if cuda.cuDeviceGet(ctypes.byref(device), index) != 0:
            continue
        name = ctypes.create_string_buffer(256)
        if cuda.cuDeviceGetName(name, len(name), device) != 0:
            name.value = b"?"
        major = attribute(cuda, device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
        minor = attribute(cuda, device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
        sm_khz = attribute(cuda, device, CU_DEVICE_ATTRIBUTE_CLOCK_RATE)
        mem_khz = attribute(cuda, device, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)
        print(f"device {index} {major}.{minor} {sm_khz} {mem_khz} "
              f"{name.value.decode(errors='replace')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
