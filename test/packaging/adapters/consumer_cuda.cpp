// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// consumer_cuda: what a user of the CUDA adapter compiles (host code, no
// nvcc) through pkg-config `causal-cuda` and CMake `causal::cuda`. The
// packaging tests build and link it; run without a GPU, it reports the
// runtime's answer and exits 0.

#include <causal/adapters/cuda/stream_queue.hpp>

#include <cstdio>

int main() {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  std::printf("consumer_cuda: cudaGetDeviceCount: %s, %d device(s)\n", cudaGetErrorName(e), devices);
  return 0;
}
