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
// The arena's free. The pool's own stream frees the arena, and nothing
// orders that stream after the queues' work: the free is made to wait on
// the device. A release by queue A at A's epoch e promises that every use
// of the block, on any queue, is ordered before A's operation e (the
// block pool's contract), so A's progress timeline reaching e proves the
// block unused. The pool remembers, per freeing axis, the highest epoch
// that released a block, and its destructor enqueues on its stream, before
// cudaFreeAsync, one cuStreamWaitValue64 (>=) per axis on that axis's
// registered progress timeline, then waits for the stream. So:
//   - a release by a queue whose axis has no progress timeline registered
//     here (register_timeline) is refused (`failed_precondition`, nothing
//     changed): the free could not be ordered after it;
//   - an axis whose timeline has reached e on the host needs no wait, nor
//     one whose timeline was destroyed (its queue must have finished with
//     it: a progress timeline outlives its queue's work);
//   - the wait is enqueued only once e is *sent* (a stream has enqueued the
//     write of e), as a queue's own device waits are (stream_queue.hpp,
//     "Held operations"): enqueued earlier it could sit ahead of that
//     write on a shared hardware queue. A queue that still holds the
//     operation that wrote e on the host, or writes its progress from the
//     host (events mode, the host-signalling fallback) and has not seen e
//     complete, leaves the destructor no safe order: that is refused
//     loudly, in every build mode (stderr, then abort; docs/lifetimes.md).
//     Synchronise or destroy such a queue before its pool.
// A block still live (acquired, never released) when the pool is
// destroyed is not covered: its uses must have completed by then
// (precondition).
//
// Thread safety: externally synchronised (like the block pool and queues).
//                A registered timeline may be destroyed from any thread
//                (it withdraws itself, as from the block pool).
// Memory order:  as <causal/pool.hpp>; the destructor reads the timelines'
//                payloads and sent values (acquire).
// Blocking/allocation: the constructor allocates the arena and waits for
//                it (a stream synchronise); acquire/release never block
//                and never allocate; the destructor enqueues the waits and
//                the free on its stream and waits for it (a progress value
//                that never arrives blocks it, as cudaStreamSynchronize).
// Size:          the block pool (~16 KiB for 64 blocks) plus
//                placement_type::max_timelines * 48 bytes (the
//                freeing axes) plus ~64.
// Configuration: Queue (a basic_stream_queue), MaxBlocks (default 64);
//                quota and alignment (default 256) at construction.
// See also:      docs/buffers.md, docs/adapters.md, docs/lifetimes.md,
//                <causal/pool.hpp>, <causal/adapters/cuda/stream_queue.hpp>.
#pragma once

#include <causal/adapters/cuda/api.hpp>
#include <causal/adapters/cuda/device.hpp>
#include <causal/adapters/cuda/driver.hpp>
#include <causal/completion.hpp>
#include <causal/config.hpp>
#include <causal/pool.hpp>
#include <causal/result.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

CAUSAL_BEGIN_NAMESPACE

namespace cuda {

/// A block of device memory from a device_block_pool.
struct device_block {
  void* pointer = nullptr;  ///< device address of the first byte
  pool_block block{};       ///< the placement handle (offset, size, lifetime)
};

/// Device memory in stream order over a death-frontier block pool; see the
/// file comment.
///
/// Template parameters:
/// - `Queue`: the stream queue type acquiring and freeing (its
///   `semaphore_type` is a cuda::basic_semaphore: progress timelines).
/// - `MaxBlocks`: block descriptors (basic_block_pool's).
template <class Queue, std::size_t MaxBlocks = 64>
class device_block_pool {
 public:
  using placement_type = basic_block_pool<Queue, completion_tracker, MaxBlocks>;
  using semaphore_type = typename Queue::semaphore_type;

  /// Allocates a `quota`-byte arena on `dev` (see setup_status()).
  device_block_pool(device_context& dev, std::size_t quota, std::size_t alignment = 256,
                    const completion_tracker* tracker = nullptr) noexcept
      : dev_(&dev), placement_(quota, alignment, tracker) {
    setup_ = open(quota);
  }

  device_block_pool(const device_block_pool&) = delete;
  device_block_pool& operator=(const device_block_pool&) = delete;

  /// Frees the arena on the pool's stream after the device waits that
  /// order it behind every queue that released a block (file comment,
  /// "The arena's free"), then waits for the stream. Refused loudly
  /// (stderr, abort) when such a queue has not enqueued the progress value
  /// to wait for. Precondition: no block is still live.
  ~device_block_pool() {
    const driver_table& d = dev_->driver();
    if (arena_ != nullptr) {
      refuse_if_unordered();
      bool ordered = true;
      std::array<counted_wait, placement_type::max_timelines> waited_on{};
      std::size_t waited = 0;
      for (std::size_t i = 0; i < axis_count_; ++i) {
        axis_timeline& t = axes_[i];
        const std::uint64_t v = wait_value(t);
        if (v == 0) continue;
        if (d.wait_value64(stream_, t.timeline->device_word(), v) != 0) {
          ordered = false;  // the free cannot follow that queue: keep the arena
          break;
        }
        // The stream reads the word until it passes the wait.
        t.timeline->device().note_device_wait(t.timeline->word_index());
        waited_on[waited++] = counted_wait{&t.timeline->device(), t.timeline->word_index()};
      }
      if (ordered) (void)d.free_async(arena_, stream_);
      if (d.stream_synchronize(stream_) == 0) {
        for (std::size_t i = 0; i < waited; ++i) {
          waited_on[i].device->device_wait_passed(waited_on[i].word);
        }
      }
      // Else the waits stay counted: their words are retired, never
      // reused under a stream that may still read them.
    }
    for (std::size_t i = 0; i < axis_count_; ++i) {
      if (axes_[i].timeline != nullptr) {
        causal::detail::remove_holder_if_able(*axes_[i].timeline, axes_[i]);
      }
    }
    if (stream_ != nullptr) (void)d.stream_destroy(stream_);
    if (pool_ != nullptr) (void)d.pool_destroy(pool_);
  }

  /// Ok, or why the arena could not be made (then every acquire fails).
  [[nodiscard]] status setup_status() const noexcept { return setup_; }
  [[nodiscard]] void* arena() const noexcept { return arena_; }
  [[nodiscard]] placement_type& placement() noexcept { return placement_; }
  [[nodiscard]] const pool_stats& stats() const noexcept { return placement_.stats(); }

  /// Declares `timeline` as queue axis `a`'s progress timeline (the queue's
  /// set_progress_timeline): fence waits on blocks that queue freed go to
  /// it, and the arena's free waits on it. Register it here, not through
  /// placement(): a queue may release blocks only once its axis has one.
  /// Errors as basic_block_pool::register_timeline; nothing changes on
  /// error.
  status register_timeline(causal::axis a, semaphore_type& timeline) noexcept {
    axis_timeline* slot = nullptr;
    for (std::size_t i = 0; i < axis_count_ && slot == nullptr; ++i) {
      if (axes_[i].axis == a && axes_[i].timeline == nullptr) slot = &axes_[i];
    }
    for (std::size_t i = 0; i < axis_count_ && slot == nullptr; ++i) {
      // A destroyed timeline's queue has finished with the arena: its
      // entry may serve another axis.
      if (axes_[i].timeline == nullptr) slot = &axes_[i];
    }
    if (slot == nullptr && axis_count_ < axes_.size()) slot = &axes_[axis_count_];
    if (slot == nullptr) {
      return status{error{errc::capacity_exceeded,
                          "device_block_pool: max_timelines progress timelines registered",
                          axes_.size()}};
    }
    if (status s = placement_.register_timeline(a, timeline); !s) return s;
    if (slot == &axes_[axis_count_]) ++axis_count_;
    if (slot->axis != a) slot->released = 0;
    slot->axis = a;
    slot->timeline = &timeline;
    slot->withdraw = &withdraw_timeline;
    causal::detail::add_holder_if_able(timeline, *slot);
    return status{};
  }

  /// A block of `size` bytes for `q`'s next operation (errors as
  /// basic_block_pool::acquire, or the setup error).
  result<device_block> acquire(Queue& q, std::size_t size) noexcept {
    if (!setup_) return setup_.error_value();
    result<pool_block> b = placement_.acquire(q, size);
    if (!b) return b.error_value();
    return device_block{static_cast<std::byte*>(arena_) + b->offset, *b};
  }

  /// Frees `b` after everything `q` submitted so far. Errors (nothing
  /// changes): basic_block_pool::release's, and `failed_precondition`
  /// when `q`'s axis has no progress timeline registered here (the
  /// arena's free could not be ordered after it).
  status release(const device_block& b, const Queue& q) noexcept {
    if (status s = placement_.check_release(b.block, q); !s) return s;
    axis_timeline* t = find(q.axis());
    if (t == nullptr) {
      return status{error{errc::failed_precondition,
                          "device_block_pool: release by a queue whose axis has no progress "
                          "timeline registered with this pool (set_progress_timeline, then "
                          "register_timeline): the arena's free could not wait for it",
                          q.axis().raw()}};
    }
    if (status s = placement_.release(b.block, q); !s) return s;
    if (t->released < q.epoch()) t->released = q.epoch();
    return status{};
  }

 private:
  // A freeing axis: its registered progress timeline (null once the
  // semaphore is destroyed: withdrawn) and the highest epoch at which it
  // released a block.
  struct axis_timeline : causal::detail::semaphore_holder {
    causal::axis axis{};
    semaphore_type* timeline = nullptr;
    std::uint64_t released = 0;
  };
  struct counted_wait {
    device_context* device = nullptr;
    std::uint32_t word = 0;
  };

  static void withdraw_timeline(causal::detail::semaphore_holder& h) noexcept {
    static_cast<axis_timeline&>(h).timeline = nullptr;
  }

  [[nodiscard]] axis_timeline* find(causal::axis a) noexcept {
    for (std::size_t i = 0; i < axis_count_; ++i) {
      if (axes_[i].axis == a && axes_[i].timeline != nullptr) return &axes_[i];
    }
    return nullptr;
  }

  // The value the free must wait for on `t`'s word, or 0 for none: the
  // highest released epoch unless the host has seen it. A failed timeline
  // belongs to a failed queue, which issues nothing more: only what its
  // stream was given can still run.
  [[nodiscard]] static std::uint64_t wait_value(const axis_timeline& t) noexcept {
    if (t.timeline == nullptr || t.released == 0) return 0;
    const std::uint64_t reached = t.timeline->value();
    if (reached >= t.released) return 0;
    const std::uint64_t sent = t.timeline->sent_value();
    if (sent >= t.released) return t.released;
    if (t.timeline->failed()) return sent > reached ? sent : 0;
    return t.released;  // not sent: refuse_if_unordered stops before this
  }

  // Aborts, naming the axis, when a freeing queue has not enqueued the
  // progress write the free would wait for (file comment).
  void refuse_if_unordered() const noexcept {
    for (std::size_t i = 0; i < axis_count_; ++i) {
      const axis_timeline& t = axes_[i];
      if (t.timeline == nullptr || t.released == 0 || t.timeline->failed()) continue;
      if (t.timeline->value() >= t.released || t.timeline->sent_value() >= t.released) continue;
      std::fprintf(stderr,
                   "causal: cuda::device_block_pool destroyed while the queue of axis %llu has "
                   "not enqueued its progress write of epoch %llu (the operation is held on the "
                   "host, or the queue writes its progress from the host and has not completed "
                   "it): the arena's free cannot be ordered after the work that uses it; "
                   "synchronise or destroy the queue before its pool (docs/lifetimes.md)\n",
                   static_cast<unsigned long long>(t.axis.raw()),
                   static_cast<unsigned long long>(t.released));
      std::fflush(stderr);
      std::abort();
    }
  }

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
  std::size_t axis_count_ = 0;
  std::array<axis_timeline, placement_type::max_timelines> axes_{};
};

}  // namespace cuda

CAUSAL_END_NAMESPACE
