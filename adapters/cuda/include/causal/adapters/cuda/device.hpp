// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// device: one CUDA/HIP device as the adapter sees it — its driver table,
// whether it can run 64-bit stream memory operations, a slab of 64-bit
// timeline words in mapped pinned memory, and a pool of reusable events.
//
// Model. Every causal::cuda semaphore owns one 64-bit *word*: the value a
// stream waits on with cuStreamWaitValue64 (>=) and writes with
// cuStreamWriteValue64. Words live in one page of page-locked host memory
// mapped into the device (cudaHostAlloc(Mapped)), so the device polls and
// writes them and the host can write them too (a host signal relayed to
// device waiters, <causal/adapters/cuda/semaphore.hpp>). The slab holds
// `word_capacity` words; allocation is a bitmap scan under a spin lock.
// Events (for the event mode and for devices without 64-bit memory
// operations) are created lazily, at most `event_capacity` of them, and
// recycled through a free list: an event is returned only when the value
// it marks has been reached on the host, after which no new device wait
// can name it.
//
// The constructor probes the device (with it made current through
// scoped_device, so the calling thread's current device is restored; the
// CAN_USE_64_BIT_STREAM_MEM_OPS attribute, the name) and maps the slab;
// any failure is kept in setup_status() and every later call returns it.
// "No such device" (failed_precondition) means exactly that the runtime
// answered api::no_device or has fewer devices; any other failure of the
// device count is kept as that error (device_lost, the native code).
// Events are created with the device made current (scoped_device), so any
// thread may ask for one.
//
// Word lifetime. A device wait on a word is a command in some stream until
// the stream passes it, and CUDA cannot take it back. Queues count, per
// word, the device waits they enqueued and have not yet seen passed
// (note_device_wait / device_wait_passed). free_word() on a word that
// still has such waits *retires* it: it stays out of allocate_word until
// the last of them is passed, so no stream ever polls a word that a new
// semaphore has reset. The destructor leaves the slab mapped (leaks it)
// rather than free memory a stream may still poll, if any wait is still
// counted then (a queue outlived its context).
//
// Releasing a failed word. A semaphore that fails records, for its word,
// the highest value a device wait asked for (mark_failed_word); it does not
// write it, so work queued behind those waits does not run on inputs that
// were never produced. A queue writes it (release_if_failed) where a
// stuck wait must be let through: before draining its stream at teardown
// (release_failed_words: every failed word, since its stream may wait on
// another stream stuck on one), and for waits of failed submissions that
// belong to no operation.
//
// Thread safety: every member may be called from any thread.
// Memory order:  the slab and the event list are guarded by spin locks
//                (acquire/release); the probe results are immutable. The
//                per-word wait counts are atomics (acq_rel); retiring and
//                freeing a word, and raising a failed one
//                (release_if_failed: only a word still in use), happen
//                under the slab lock, so a raise never lands on a word
//                allocate_word has handed to a new semaphore.
// Blocking/allocation: never blocks. The constructor maps one page of
//                pinned memory; acquire_event may create an event (a
//                runtime call) until event_capacity exist; nothing else
//                allocates.
// Size:          ~10.6 KiB (the two event tables and the per-word wait
//                counts and release values dominate).
// Configuration: word_capacity (512: one 4 KiB page), event_capacity (256).
// See also:      docs/adapters.md, <causal/adapters/cuda/driver.hpp>,
//                <causal/adapters/cuda/semaphore.hpp>.
#pragma once

#include <causal/adapters/cuda/api.hpp>
#include <causal/adapters/cuda/driver.hpp>
#include <causal/config.hpp>
#include <causal/detail/spin_lock.hpp>
#include <causal/result.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

CAUSAL_BEGIN_NAMESPACE

namespace cuda {

/// A 64-bit timeline word: where the host sees it and where the device does.
struct timeline_word {
  std::uint64_t* host = nullptr;
  std::uint64_t* device = nullptr;
  std::uint32_t index = 0;
};

/// One device: driver table, capabilities, word slab, event pool.
class device_context {
 public:
  /// Words in the slab (one 4 KiB page of 64-bit words).
  static constexpr std::size_t word_capacity = 512;
  /// Most events the context creates.
  static constexpr std::size_t event_capacity = 256;

  /// Opens device `ordinal` through `driver`; see setup_status().
  explicit device_context(const driver_table& driver = native_driver(), int ordinal = 0) noexcept
      : driver_(&driver), ordinal_(ordinal) {
    setup_ = open();
  }

  device_context(const device_context&) = delete;
  device_context& operator=(const device_context&) = delete;

  /// Every semaphore and queue made from this context must have been
  /// destroyed: each holds a timeline word of its slab. One still holding
  /// a word is refused loudly, in every build mode (stderr, then abort:
  /// docs/lifetimes.md). A word only retiring (device waits still counted
  /// on it after its owner went) keeps the slab leaked, not freed under
  /// the device.
  ~device_context() {
    std::size_t held = 0;
    {
      causal::detail::spin_guard guard(words_lock_);
      for (std::size_t i = 0; i < word_used_.size(); ++i) {
        held += static_cast<std::size_t>(__builtin_popcountll(word_used_[i] & ~word_retiring_[i]));
      }
    }
    if (held != 0) [[unlikely]] {
      std::fprintf(stderr,
                   "causal: cuda::device_context destroyed while %zu semaphore(s) or queue(s) made "
                   "from it still hold its timeline words; destroy them before their context "
                   "(docs/lifetimes.md)\n",
                   held);
      std::fflush(stderr);
      std::abort();
    }
    for (std::size_t i = 0; i < events_created_; ++i) (void)driver_->event_destroy(all_events_[i]);
    if (slab_host_ != nullptr && pending_device_waits() == 0) (void)driver_->host_free(slab_host_);
  }

  /// Ok, or why the device could not be opened (no device, no memory).
  [[nodiscard]] status setup_status() const noexcept { return setup_; }
  [[nodiscard]] const driver_table& driver() const noexcept { return *driver_; }
  [[nodiscard]] int ordinal() const noexcept { return ordinal_; }
  /// True when the device runs 64-bit stream memory operations
  /// (CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS).
  [[nodiscard]] bool has_memory_ops() const noexcept { return memory_ops_; }
  /// The device's name ("" if it could not be read).
  [[nodiscard]] const char* name() const noexcept { return name_.data(); }

  /// Takes a free word and sets it to `initial`. Errors: the setup error;
  /// `resource_exhausted` when all word_capacity words are taken.
  result<timeline_word> allocate_word(std::uint64_t initial) noexcept {
    if (!setup_) return setup_.error_value();
    causal::detail::spin_guard guard(words_lock_);
    for (std::size_t i = 0; i < word_capacity; ++i) {
      std::uint64_t& bits = word_used_[i / 64];
      const std::uint64_t bit = std::uint64_t{1} << (i % 64);
      if ((bits & bit) != 0) continue;
      bits |= bit;
      timeline_word w{slab_host_ + i, slab_device_ + i, static_cast<std::uint32_t>(i)};
      *w.host = initial;
      release_at_[i].store(0, std::memory_order_relaxed);
      return w;
    }
    return error{errc::resource_exhausted, "device_context: every timeline word is in use",
                 word_capacity};
  }

  /// Returns `w` to the slab, or, while device waits on it are still
  /// counted, retires it until the last one is passed (see the file
  /// comment).
  void free_word(const timeline_word& w) noexcept {
    if (w.host == nullptr || w.index >= word_capacity) return;
    causal::detail::spin_guard guard(words_lock_);
    const std::uint64_t bit = std::uint64_t{1} << (w.index % 64);
    // acquire: pairs with the release decrement in device_wait_passed.
    if (word_waits_[w.index].load(std::memory_order_acquire) != 0) {
      word_retiring_[w.index / 64] |= bit;
      return;
    }
    word_used_[w.index / 64] &= ~bit;
    release_at_[w.index].store(0, std::memory_order_relaxed);  // under the lock
  }

  /// A queue enqueued a device wait on word `index` (a stream command that
  /// will read it until the stream passes it), or uses it as its
  /// completion word (streams write it until the queue drains them).
  void note_device_wait(std::uint32_t index) noexcept {
    if (index < word_capacity) word_waits_[index].fetch_add(1, std::memory_order_relaxed);
  }

  /// The stream passed one device wait on word `index` (its queue saw a
  /// later host function run, or drained the stream). The last one frees a
  /// retired word.
  void device_wait_passed(std::uint32_t index) noexcept {
    if (index >= word_capacity) return;
    // acq_rel: the last decrement publishes "no waiter" to free_word.
    if (word_waits_[index].fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    causal::detail::spin_guard guard(words_lock_);
    const std::uint64_t bit = std::uint64_t{1} << (index % 64);
    if ((word_retiring_[index / 64] & bit) != 0 &&
        word_waits_[index].load(std::memory_order_acquire) == 0) {
      word_retiring_[index / 64] &= ~bit;
      word_used_[index / 64] &= ~bit;
      release_at_[index].store(0, std::memory_order_relaxed);  // under the lock
    }
  }

  /// Records that the semaphore of word `index` failed and device waits on
  /// it asked for up to `v` (see the file comment).
  void mark_failed_word(std::uint32_t index, std::uint64_t v) noexcept {
    if (index >= word_capacity) return;
    std::uint64_t seen = release_at_[index].load(std::memory_order_relaxed);
    while (seen < v &&
           !release_at_[index].compare_exchange_weak(seen, v, std::memory_order_acq_rel)) {
    }
  }

  /// If word `index` belongs to a failed semaphore, raises it to the value
  /// recorded by mark_failed_word so every device wait on it completes;
  /// returns whether it raised it (false: not failed, or already there).
  bool release_if_failed(std::uint32_t index) noexcept {
    if (index >= word_capacity || slab_host_ == nullptr) return false;
    // Under the slab lock, and only for a word in use (retiring included):
    // a free word may be handed to a new semaphore by allocate_word at any
    // moment, and a raise landing after that would pass its waits.
    causal::detail::spin_guard guard(words_lock_);
    if ((word_used_[index / 64] & (std::uint64_t{1} << (index % 64))) == 0) return false;
    const std::uint64_t v = release_at_[index].load(std::memory_order_acquire);
    if (v == 0) return false;
    std::atomic_ref<std::uint64_t> w(slab_host_[index]);
    std::uint64_t seen = w.load(std::memory_order_relaxed);
    // relaxed: the device reads the word through the bus; the CAS keeps
    // host writers monotone.
    while (seen < v) {
      if (w.compare_exchange_weak(seen, v, std::memory_order_relaxed)) return true;
    }
    return false;
  }

  /// release_if_failed on every word of a failed semaphore: lets every
  /// device wait on a failed semaphore through, on every stream (used by
  /// a queue's teardown: its stream may wait on another stream that is
  /// itself stuck on a failed word). Returns how many words it raised.
  std::size_t release_failed_words() noexcept {
    std::size_t n = 0;
    for (std::uint32_t i = 0; i < word_capacity; ++i) {
      if (release_at_[i].load(std::memory_order_acquire) != 0 && release_if_failed(i)) ++n;
    }
    return n;
  }

  /// Device waits on word `index` not yet passed.
  [[nodiscard]] std::uint32_t device_waits_on(std::uint32_t index) const noexcept {
    return index < word_capacity ? word_waits_[index].load(std::memory_order_acquire) : 0;
  }

  /// Device waits not yet passed, on every word.
  [[nodiscard]] std::size_t pending_device_waits() const noexcept {
    std::size_t n = 0;
    for (const auto& c : word_waits_) n += c.load(std::memory_order_acquire);
    return n;
  }

  /// Words freed while device waits on them were pending, not yet reusable.
  [[nodiscard]] std::size_t words_retiring() const noexcept {
    causal::detail::spin_guard guard(words_lock_);
    std::size_t n = 0;
    for (std::uint64_t bits : word_retiring_) n += static_cast<std::size_t>(__builtin_popcountll(bits));
    return n;
  }

  /// Words in use (retiring ones included).
  [[nodiscard]] std::size_t words_in_use() const noexcept {
    causal::detail::spin_guard guard(words_lock_);
    std::size_t n = 0;
    for (std::uint64_t bits : word_used_) n += static_cast<std::size_t>(__builtin_popcountll(bits));
    return n;
  }

  /// Takes an event from the free list, creating one if none is free.
  /// Errors: the setup error, `resource_exhausted` at event_capacity, or
  /// the runtime's failure.
  result<api::event_t> acquire_event() noexcept {
    if (!setup_) return setup_.error_value();
    causal::detail::spin_guard guard(events_lock_);
    if (free_count_ != 0) return free_events_[--free_count_];
    if (events_created_ == event_capacity) {
      return error{errc::resource_exhausted, "device_context: event_capacity events in use",
                   event_capacity};
    }
    api::event_t e{};
    // Events belong to the current device: make ours current, whatever
    // thread asks.
    const scoped_device current(*driver_, ordinal_);
    if (status s = current.status_value(); !s) return s.error_value();
    if (status s = to_status(driver_->event_create(&e), "cudaEventCreateWithFlags"); !s) {
      return s.error_value();
    }
    all_events_[events_created_++] = e;
    return e;
  }

  /// Returns `e` (from acquire_event) to the free list.
  void release_event(api::event_t e) noexcept {
    causal::detail::spin_guard guard(events_lock_);
    if (free_count_ < event_capacity) free_events_[free_count_++] = e;
  }

  /// Events created so far / currently free.
  [[nodiscard]] std::size_t events_created() const noexcept {
    causal::detail::spin_guard guard(events_lock_);
    return events_created_;
  }
  [[nodiscard]] std::size_t events_free() const noexcept {
    causal::detail::spin_guard guard(events_lock_);
    return free_count_;
  }

 private:
  status open() noexcept {
    const result<int> count = device_count(*driver_);
    if (!count) return status{count.error_value()};  // not "no device": say what it is
    if (*count <= ordinal_ || ordinal_ < 0) {
      return status{error{errc::failed_precondition, "device_context: no such device (no GPU?)",
                          static_cast<std::uint64_t>(ordinal_ < 0 ? 0 : ordinal_)}};
    }
    // The probe and the slab need the device current; the caller's current
    // device is restored afterwards (scoped_device).
    const scoped_device current(*driver_, ordinal_);
    if (status s = current.status_value(); !s) return s;
    int supported = 0;
    if (driver_->mem_ops_64 != nullptr && driver_->mem_ops_64(ordinal_, &supported) == 0) {
      memory_ops_ = supported != 0;
    }
    if (driver_->device_name != nullptr) {
      (void)driver_->device_name(ordinal_, name_.data(), name_.size());
      name_.back() = '\0';
    }
    void* host = nullptr;
    if (status s = to_status(driver_->host_alloc_mapped(&host, word_capacity * sizeof(std::uint64_t)),
                             "cudaHostAlloc(Mapped)");
        !s) {
      return s;
    }
    void* device = nullptr;
    if (status s = to_status(driver_->host_device_pointer(&device, host), "cudaHostGetDevicePointer");
        !s) {
      (void)driver_->host_free(host);
      return s;
    }
    slab_host_ = static_cast<std::uint64_t*>(host);
    slab_device_ = static_cast<std::uint64_t*>(device);
    return status{};
  }

  const driver_table* driver_;
  int ordinal_;
  status setup_{};
  bool memory_ops_ = false;
  std::array<char, 128> name_{};

  mutable causal::detail::spin_lock words_lock_;
  std::uint64_t* slab_host_ = nullptr;
  std::uint64_t* slab_device_ = nullptr;
  std::array<std::uint64_t, word_capacity / 64> word_used_{};
  std::array<std::uint64_t, word_capacity / 64> word_retiring_{};
  std::array<std::atomic<std::uint32_t>, word_capacity> word_waits_{};
  std::array<std::atomic<std::uint64_t>, word_capacity> release_at_{};

  mutable causal::detail::spin_lock events_lock_;
  std::size_t events_created_ = 0;
  std::size_t free_count_ = 0;
  std::array<api::event_t, event_capacity> all_events_{};
  std::array<api::event_t, event_capacity> free_events_{};
};

}  // namespace cuda

CAUSAL_END_NAMESPACE
