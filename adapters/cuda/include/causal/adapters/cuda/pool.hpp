// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// pool: stream-ordered device memory for stream queues — one arena taken
// from a CUDA memory pool (cudaMemPoolCreate + cudaMallocFromPoolAsync),
// placed by the core's death-frontier block pool (<causal/pool.hpp>).
//
// Model. The arena is `quota` bytes allocated once, stream-ordered, from a
// fresh cudaMemPool_t on the device, and returned with cudaFreeAsync when
// the pool is destroyed. Inside it, `causal::basic_block_pool` decides
// which range a queue may use *now*: a block freed by queue A is reused by
// queue B for free when B's knowledge covers A's freeing operation, or when
// A's completion shows it retired; otherwise the block pool issues the one
// device wait that closes the gap (on A's progress timeline, see
// basic_stream_queue::set_progress_timeline) before B's next operation.
// The driver's own stream-ordered reuse (cudaMallocAsync's per-stream
// free lists and event-based cross-stream reuse) is bypassed for these
// blocks: the death frontier replaces one event per free with one frontier
// check per reuse.
//
// Thread safety: externally synchronised (like the block pool and queues).
// Memory order:  as <causal/pool.hpp>.
// Blocking/allocation: the constructor allocates the arena and waits for
//                it (a stream synchronise); acquire/release never block
//                and never allocate; the destructor frees the arena
//                stream-ordered and waits.
// Size:          the block pool (~16 KiB for 64 blocks) plus ~64 bytes.
// Configuration: Queue (a basic_stream_queue), MaxBlocks (default 64);
//                quota and alignment (default 256) at construction.
// See also:      docs/buffers.md, docs/adapters.md, <causal/pool.hpp>,
//                <causal/adapters/cuda/stream_queue.hpp>.
#pragma once

#include <causal/adapters/cuda/api.hpp>
#include <causal/adapters/cuda/device.hpp>
#include <causal/adapters/cuda/driver.hpp>
#include <causal/completion.hpp>
#include <causal/config.hpp>
#include <causal/pool.hpp>
#include <causal/result.hpp>

#include <cstddef>
#include <cstdint>

CAUSAL_BEGIN_NAMESPACE

namespace cuda {

/// A block of device memory from a device_block_pool.
struct device_block {
  void* pointer = nullptr;  ///< device address of the first byte
  pool_block block{};       ///< the placement handle (offset, size, lifetime)
};

/// Device memory in stream order over a death-frontier block pool.
template <class Queue, std::size_t MaxBlocks = 64>
class device_block_pool {
 public:
  using placement_type = basic_block_pool<Queue, completion_tracker, MaxBlocks>;

  /// Allocates a `quota`-byte arena on `dev` (see setup_status()).
  device_block_pool(device_context& dev, std::size_t quota, std::size_t alignment = 256,
                    const completion_tracker* tracker = nullptr) noexcept
      : dev_(&dev), placement_(quota, alignment, tracker) {
    setup_ = open(quota);
  }

  device_block_pool(const device_block_pool&) = delete;
  device_block_pool& operator=(const device_block_pool&) = delete;

  /// Frees the arena (stream-ordered, then waits). Precondition: no queued
  /// work still uses a block.
  ~device_block_pool() {
    const driver_table& d = dev_->driver();
    if (arena_ != nullptr) {
      (void)d.free_async(arena_, stream_);
      (void)d.stream_synchronize(stream_);
    }
    if (stream_ != nullptr) (void)d.stream_destroy(stream_);
    if (pool_ != nullptr) (void)d.pool_destroy(pool_);
  }

  /// Ok, or why the arena could not be made (then every acquire fails).
  [[nodiscard]] status setup_status() const noexcept { return setup_; }
  [[nodiscard]] void* arena() const noexcept { return arena_; }
  [[nodiscard]] placement_type& placement() noexcept { return placement_; }
  [[nodiscard]] const pool_stats& stats() const noexcept { return placement_.stats(); }

  /// Declares `timeline` as queue axis `a`'s progress timeline (fence
  /// waits on blocks that queue freed go to it).
  status register_timeline(causal::axis a, typename Queue::semaphore_type& timeline) noexcept {
    return placement_.register_timeline(a, timeline);
  }

  /// A block of `size` bytes for `q`'s next operation (errors as
  /// basic_block_pool::acquire, or the setup error).
  result<device_block> acquire(Queue& q, std::size_t size) noexcept {
    if (!setup_) return setup_.error_value();
    result<pool_block> b = placement_.acquire(q, size);
    if (!b) return b.error_value();
    return device_block{static_cast<std::byte*>(arena_) + b->offset, *b};
  }

  /// Frees `b` after everything `q` submitted so far.
  status release(const device_block& b, const Queue& q) noexcept {
    return placement_.release(b.block, q);
  }

 private:
  status open(std::size_t quota) noexcept {
    if (!dev_->setup_status()) return dev_->setup_status();
    if (!placement_.setup_status()) return placement_.setup_status();
    const driver_table& d = dev_->driver();
    // The arena's stream belongs to the current device: make ours current
    // for the whole setup, whatever thread builds the pool.
    const scoped_device current(d, dev_->ordinal());
    if (status s = current.status_value(); !s) return s;
    if (status s = to_status(d.pool_create(&pool_, dev_->ordinal()), "cudaMemPoolCreate"); !s) {
      pool_ = nullptr;
      return s;
    }
    if (status s = to_status(d.stream_create(&stream_), "cudaStreamCreateWithFlags"); !s) {
      stream_ = nullptr;
      return s;
    }
    if (status s = to_status(d.malloc_from_pool_async(&arena_, quota, pool_, stream_),
                             "cudaMallocFromPoolAsync");
        !s) {
      arena_ = nullptr;
      return s;
    }
    return to_status(d.stream_synchronize(stream_), "cudaStreamSynchronize");
  }

  device_context* dev_;
  placement_type placement_;
  status setup_{};
  api::mem_pool_t pool_{};
  api::stream_t stream_{};
  void* arena_ = nullptr;
};

}  // namespace cuda

CAUSAL_END_NAMESPACE
