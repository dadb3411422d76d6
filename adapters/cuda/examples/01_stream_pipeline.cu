// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// 01_stream_pipeline: three CUDA streams as causal queues — produce ->
// transform -> reduce — over `rounds` rounds, with every result checked.
//
// Each stage is a stream_queue. Round r: the producer fills x[r] and signals
// `produced` := r; the transformer waits produced >= r, computes y[r] = 3 *
// x[r] and signals `transformed` := r; the reducer waits transformed >= r,
// sums y[r] into sums[r] and signals `reduced` := r. The reducer's
// submissions go in *first*, before anything they wait for exists: the
// queue holds each on the host until the signal it waits for is on a
// stream (so its wait never sits ahead of that signal on a hardware queue
// the streams share), and the polls below issue it. The host checks every
// sum and prints what the queues did (device waits issued, waits elided).
//
// Run: build with -Dcuda=enabled and run `cuda_01_stream_pipeline`; it
// exits 77 (skipped) without a GPU.

#include <causal/adapters/cuda/device.hpp>
#include <causal/adapters/cuda/semaphore.hpp>
#include <causal/adapters/cuda/stream_queue.hpp>
#include <causal/axis.hpp>

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

constexpr int elements = 1 << 16;
constexpr int rounds = 8;

__global__ void fill(int* x, int n, int round) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = round + i % 7;
}

__global__ void triple(const int* x, int* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 3 * x[i];
}

__global__ void sum(const int* y, int n, unsigned long long* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(out, static_cast<unsigned long long>(y[i]));
}

struct buffers {
  int* x = nullptr;                  // rounds * elements
  int* y = nullptr;                  // rounds * elements
  unsigned long long* sums = nullptr;  // rounds
};

constexpr int threads = 256;
constexpr int blocks = (elements + threads - 1) / threads;

int launch_fill(cudaStream_t s, void* user, std::uint64_t r) noexcept {
  auto* b = static_cast<buffers*>(user);
  fill<<<blocks, threads, 0, s>>>(b->x + r * elements, elements, static_cast<int>(r));
  return static_cast<int>(cudaGetLastError());
}
int launch_triple(cudaStream_t s, void* user, std::uint64_t r) noexcept {
  auto* b = static_cast<buffers*>(user);
  triple<<<blocks, threads, 0, s>>>(b->x + r * elements, b->y + r * elements, elements);
  return static_cast<int>(cudaGetLastError());
}
int launch_sum(cudaStream_t s, void* user, std::uint64_t r) noexcept {
  auto* b = static_cast<buffers*>(user);
  sum<<<blocks, threads, 0, s>>>(b->y + r * elements, elements, b->sums + r);
  return static_cast<int>(cudaGetLastError());
}

unsigned long long expected_sum(int round) {
  unsigned long long total = 0;
  for (int i = 0; i < elements; ++i) total += 3ull * static_cast<unsigned long long>(round + i % 7);
  return total;
}

}  // namespace

int main() {
  {
    // Skip only for "no device" (cudaErrorNoDevice, or no driver at all);
    // a driver older than the runtime, or any other failure, fails loudly.
    char why[256];
    if (const int gate = causal::cuda::device_gate(causal::cuda::native_driver(), why, sizeof why); gate != 0) {
      std::fprintf(stderr, "%s: %s\n", gate == 77 ? "SKIP" : "FAIL", why);
      return gate;
    }
  }
  causal::cuda::device_context dev;
  if (!dev.setup_status()) {
    std::fprintf(stderr, "device setup failed: %s\n", dev.setup_status().error_value().message().data());
    return 1;
  }
  std::printf("device: %s (64-bit stream memory operations: %s)\n", dev.name(),
              dev.has_memory_ops() ? "yes" : "no, host-signalling fallback");

  buffers b;
  if (cudaMalloc(&b.x, sizeof(int) * elements * rounds) != cudaSuccess ||
      cudaMalloc(&b.y, sizeof(int) * elements * rounds) != cudaSuccess ||
      cudaMalloc(&b.sums, sizeof(unsigned long long) * rounds) != cudaSuccess ||
      cudaMemset(b.sums, 0, sizeof(unsigned long long) * rounds) != cudaSuccess ||
      cudaDeviceSynchronize() != cudaSuccess) {
    std::fprintf(stderr, "cudaMalloc failed\n");
    return 1;
  }

  int failures = 0;
  {
    causal::axis_allocator axes;
    causal::cuda::semaphore produced(dev), transformed(dev), reduced(dev);
    causal::cuda::stream_queue producer(axes.allocate(0, causal::domain::queue).value(), dev);
    causal::cuda::stream_queue transformer(axes.allocate(0, causal::domain::queue).value(), dev);
    causal::cuda::stream_queue reducer(axes.allocate(0, causal::domain::queue).value(), dev);

    // [snippet:cuda_pipeline]
    for (std::uint64_t r = 1; r <= rounds; ++r) {
      const std::uint64_t slot = r - 1;
      auto c = reducer.submit({{&transformed, r}}, {{&reduced, r}},
                              causal::cuda::stream_operation{&launch_sum, &b, slot, "sum"});
      auto t = transformer.submit({{&produced, r}}, {{&transformed, r}},
                                  causal::cuda::stream_operation{&launch_triple, &b, slot, "triple"});
      auto p = producer.submit({}, {{&produced, r}},
                               causal::cuda::stream_operation{&launch_fill, &b, slot, "fill"});
      if (!c || !t || !p) {
        std::fprintf(stderr, "submit failed in round %d\n", static_cast<int>(r));
        return 1;
      }
    }
    // Host completion: poll the queues until the last round is reduced.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!reduced.try_wait(rounds) && std::chrono::steady_clock::now() < deadline) {
      (void)producer.poll();
      (void)transformer.poll();
      (void)reducer.poll();
    }
    // [/snippet]
    for (causal::cuda::stream_queue* q : {&producer, &transformer, &reducer}) {
      if (const causal::status drained = q->synchronize(); !drained) {
        std::fprintf(stderr, "synchronize failed: %s\n", drained.error_value().message().data());
        return 1;
      }
    }
    if (!reduced.try_wait(rounds)) {
      std::fprintf(stderr, "pipeline did not finish\n");
      return 1;
    }
    std::printf("transformer: %llu device waits, %llu elided; reducer: %llu device waits\n",
                static_cast<unsigned long long>(transformer.stats().device_waits),
                static_cast<unsigned long long>(transformer.stats().waits_elided()),
                static_cast<unsigned long long>(reducer.stats().device_waits));
  }

  std::vector<unsigned long long> sums(rounds);
  if (cudaMemcpy(sums.data(), b.sums, sizeof(unsigned long long) * rounds, cudaMemcpyDeviceToHost) !=
      cudaSuccess) {
    std::fprintf(stderr, "cudaMemcpy failed\n");
    return 1;
  }
  for (int r = 0; r < rounds; ++r) {
    const unsigned long long want = expected_sum(r);
    if (sums[static_cast<std::size_t>(r)] != want) {
      std::fprintf(stderr, "round %d: sum %llu, expected %llu\n", r, sums[static_cast<std::size_t>(r)],
                   want);
      ++failures;
    }
  }
  if (cudaFree(b.x) != cudaSuccess || cudaFree(b.y) != cudaSuccess || cudaFree(b.sums) != cudaSuccess) {
    std::fprintf(stderr, "cudaFree failed\n");
    return 1;
  }
  if (failures != 0) return 1;
  std::printf("all %d rounds checked\n", rounds);
  return 0;
}
