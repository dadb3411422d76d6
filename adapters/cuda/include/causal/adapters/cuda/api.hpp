// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// api: the CUDA/HIP name map — the one place where the adapter names a
// vendor type or calls a vendor function, so that the same adapter source
// builds against the CUDA runtime or, with CAUSAL_CUDA_USE_HIP=1, HIP.
//
// Model. Every call the adapter makes goes through `causal::cuda::
// driver_table` (<causal/adapters/cuda/driver.hpp>), a struct of plain
// function pointers with vendor-neutral signatures (an `int` status, 0 for
// success). This header supplies the vendor types those signatures use
// (stream_t, event_t, mem_pool_t, external_semaphore_t) and the real
// implementations, thin wrappers over the runtime. Driver-only entry points
// (cuStreamWaitValue64, cuStreamWriteValue64, cuDeviceGetAttribute) are never
// linked: on CUDA they are fetched at run time with
// cudaGetDriverEntryPointByVersion, so a binary starts, and reports "no
// device", on a machine without libcuda. HIP exports the same operations
// from its runtime (hipStreamWaitValue64, hipStreamWriteValue64 on the same
// mapped pinned words, from hipHostMalloc: ROCm waits on any device-visible
// memory with a polling kernel, and only signal memory, which the host
// could not write as a plain word, with a CP packet; hipStreamAddCallback
// stands in for hipLaunchHostFunc, which HIP 5.2 lacks).
//
// Thread safety: the wrappers are as thread-safe as the runtime calls.
// Memory order:  none of its own.
// Blocking/allocation: the wrappers never allocate; stream_synchronize
//                blocks, everything else only enqueues.
// Size:          n/a (types and functions).
// Configuration: CAUSAL_CUDA_USE_HIP (0: CUDA, the default; 1: HIP). TU-
//                global: every TU of a program must agree. Probe with
//                CAUSAL_CUDA_IS_HIP().
// See also:      docs/adapters.md, <causal/adapters/cuda/driver.hpp>.
#pragma once

#include <causal/config.hpp>

#include <cstddef>
#include <cstdint>

#ifndef CAUSAL_CUDA_USE_HIP
#define CAUSAL_CUDA_USE_HIP 0
#endif
/// 1 when the adapter is built on HIP, else 0 (function-like probe).
#define CAUSAL_CUDA_IS_HIP() (CAUSAL_CUDA_USE_HIP)

#if CAUSAL_CUDA_IS_HIP()
#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#include <hip/hip_runtime_api.h>
#else
// Driver *types and enums* only (CUstream, CU_STREAM_WAIT_VALUE_GEQ, ...):
// including cuda.h links nothing; the functions come at run time.
#include <cuda.h>
#include <cuda_runtime_api.h>
#endif

CAUSAL_BEGIN_NAMESPACE

namespace cuda::api {

#if CAUSAL_CUDA_IS_HIP()

using stream_t = hipStream_t;
using event_t = hipEvent_t;
using mem_pool_t = hipMemPool_t;
using external_semaphore_t = hipExternalSemaphore_t;
inline constexpr const char* vendor = "hip";

#else

using stream_t = cudaStream_t;
using event_t = cudaEvent_t;
using mem_pool_t = cudaMemPool_t;
using external_semaphore_t = cudaExternalSemaphore_t;
inline constexpr const char* vendor = "cuda";

#endif

/// The native status code of "out of memory" (the same on both runtimes),
/// mapped to errc::resource_exhausted; every other failure is device_lost.
inline constexpr int out_of_memory = 2;

/// The native status code of "no device" (cudaErrorNoDevice,
/// CUDA_ERROR_NO_DEVICE and hipErrorNoDevice are all 100): the only status
/// that device_count() reads as "no device, skip"; every other failure is
/// an error to report (a too-old driver must not look like a clean skip).
inline constexpr int no_device = 100;

}  // namespace cuda::api

CAUSAL_END_NAMESPACE
