// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// semaphore: a causal timeline semaphore that CUDA/HIP streams can wait on
// and signal on the device — the host semaphore (payload, frontiers,
// timepoints) plus a 64-bit word in mapped pinned memory and a ledger of
// events.
//
// Model. `causal::cuda::basic_semaphore` *is* a causal::basic_semaphore
// (public base): host code signals, waits and reads frontiers exactly as on
// any semaphore, and the core's basic_queue plans waits against it. On top:
//
//   word    the device-side counter. A stream in memory-operations mode
//           writes v with cuStreamWriteValue64 when its signalling
//           operation completes, and waits with cuStreamWaitValue64(>= v).
//           The host payload follows later, when the queue's host
//           completion reaches v (device_signal with the recorded frontier).
//   relay   a device wait on a value that the *host* (or a queue on
//           another device kind) will signal needs the word written from
//           the host: request_mirror(v) arms one timepoint that, each time
//           the payload advances, stores the payload into the word (a
//           CAS-max, so the host never lowers it), until the payload has
//           passed every requested value. The callback only stores to
//           memory: it never calls the runtime and never blocks.
//   ledger  for event-mode streams and devices without 64-bit memory
//           operations: (value, event) of each submitted, unreached
//           signal; a device wait on S >= v waits on the event of the
//           smallest recorded value >= v (it reaches S >= v when it
//           completes). The producing queue removes an entry once the
//           value is reached on the host and recycles the event.
//
// Failure and the device. A stream command cannot be taken back once
// enqueued (CUDA has no way to cancel a cuStreamWaitValue64 or the work
// behind it), so a device wait on a semaphore that fails (or is destroyed)
// would poll its word forever, and its stream would never drain. When the
// semaphore fails, it records for its word the highest value any device
// wait asked for (request_mirror; device_context::mark_failed_word), and a
// queue that must let such a wait through writes it (before draining at
// teardown, or for a wait that belongs to no operation): the work queued
// behind it then *runs*, on inputs that were never produced, after its
// queue has failed its signals. A destroyed semaphore writes it at once:
// nobody can signal it any more. Either way the word is only reused once
// every wait on it has been passed (device_context). A value reached
// before the failure stays reached, on the device too: the relay mirrors
// the payload it froze into the word before it stops.
//
// Word writes come from the device (stream signals) and the host (relay,
// host completion), each monotone on its own side. A host store can land
// between two device stores of the same word and briefly lower it; the next
// host completion or relay restores it, so a device waiter is delayed, never
// stranded. Keep a semaphore's signals on one side (streams, or the host)
// to avoid even that.
//
// Thread safety: every member may be called concurrently (the base's
//                contract; the ledger has its own spin lock, the relay is
//                lock-free).
// Memory order:  word stores are relaxed CAS-max (the device reads the
//                word through PCIe/NVLink, not through C++ atomics); the
//                payload keeps the base's release/acquire contract.
// Blocking/allocation: never allocates after construction; the ledger
//                lock is held across one event-wait enqueue (a runtime
//                call, microseconds). The destructor waits for a running
//                relay callback.
// Size:          the base (~3 KiB with the defaults) + ledger_capacity * 24
//                bytes + ~80.
// Configuration: Frontier, HistoryDepth, PendingCapacity (the base's);
//                ledger_capacity (32).
// See also:      docs/semaphores.md, docs/adapters.md, <causal/semaphore.hpp>,
//                <causal/adapters/cuda/stream_queue.hpp>.
#pragma once

#include <causal/adapters/cuda/api.hpp>
#include <causal/adapters/cuda/device.hpp>
#include <causal/config.hpp>
#include <causal/detail/spin_lock.hpp>
#include <causal/frontier.hpp>
#include <causal/result.hpp>
#include <causal/semaphore.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>

CAUSAL_BEGIN_NAMESPACE

namespace cuda {

/// A timeline semaphore with a device word; see the file comment.
template <frontier_type Frontier = frontier, std::size_t HistoryDepth = 4,
          std::size_t PendingCapacity = 8>
class basic_semaphore : public causal::basic_semaphore<Frontier, HistoryDepth, PendingCapacity> {
  using base = causal::basic_semaphore<Frontier, HistoryDepth, PendingCapacity>;

 public:
  /// Most (value, event) entries held at once.
  static constexpr std::size_t ledger_capacity = 32;

  /// Creates the semaphore at `initial` with a word from `dev`. When no
  /// word can be had the semaphore is created *failed* with that error
  /// (failure() says why), as causal::basic_semaphore does for system_wide.
  explicit basic_semaphore(device_context& dev, std::uint64_t initial = 0) noexcept
      : base(initial, semaphore_scope::device_local), dev_(&dev) {
    result<timeline_word> w = dev.allocate_word(initial);
    if (!w) {
      (void)this->fail(w.error_value());
      return;
    }
    word_ = *w;
  }

  basic_semaphore(const basic_semaphore&) = delete;
  basic_semaphore& operator=(const basic_semaphore&) = delete;

  /// Precondition: no queue still holds ledger entries or unfinished
  /// operations that wait on this semaphore (poll or synchronize them
  /// first). Device waits still enqueued on the word are released (see
  /// the file comment) and the word is retired until they are passed.
  ~basic_semaphore() {
    // A relay callback may be running on a signalling thread; it re-arms
    // or clears relay_armed_ as its last action.
    while (relay_armed_.load(std::memory_order_acquire)) {
      if (relay_.cancel()) break;
      causal::detail::cpu_relax();
    }
    release_device_waits();  // never signalled now: let its waits through
    for (std::size_t i = 0; i < ledger_count_; ++i) dev_->release_event(ledger_[i].event);
    dev_->free_word(word_);
  }

  [[nodiscard]] device_context& device() const noexcept { return *dev_; }
  /// The word's device address (for stream memory operations).
  [[nodiscard]] std::uint64_t* device_word() const noexcept { return word_.device; }
  /// The word's index in the device's slab (for per-word wait counts);
  /// device_context::word_capacity when the semaphore has no word.
  [[nodiscard]] std::uint32_t word_index() const noexcept {
    return word_.host == nullptr ? static_cast<std::uint32_t>(device_context::word_capacity)
                                 : word_.index;
  }
  /// The word as the host sees it now.
  [[nodiscard]] std::uint64_t word_value() const noexcept {
    if (word_.host == nullptr) return 0;
    return std::atomic_ref<std::uint64_t>(*word_.host).load(std::memory_order_relaxed);
  }

  /// Raises the word to at least `v` from the host (a CAS-max; never
  /// lowers it). Called after `v` is known reached.
  void mirror(std::uint64_t v) noexcept {
    if (word_.host == nullptr) return;
    std::atomic_ref<std::uint64_t> w(*word_.host);
    std::uint64_t seen = w.load(std::memory_order_relaxed);
    // relaxed: the device observes the word through the bus, not through
    // C++ atomics; the CAS only keeps concurrent host writers monotone.
    while (seen < v && !w.compare_exchange_weak(seen, v, std::memory_order_relaxed)) {
    }
  }

  /// Makes the host relay store the payload into the word until it has
  /// passed `v` (see the file comment). Lock-free; may run the relay inline.
  void request_mirror(std::uint64_t v) noexcept {
    std::uint64_t want = wanted_.load(std::memory_order_relaxed);
    while (want < v && !wanted_.compare_exchange_weak(want, v, std::memory_order_acq_rel)) {
    }
    // acq_rel: the winner of false -> true owns the relay node until it
    // stores false again (release), which the next winner acquires.
    if (!relay_armed_.exchange(true, std::memory_order_acq_rel)) arm_relay();
  }

  /// Records that a stream command writing `v` (or more) into the word has
  /// been enqueued (a CAS-max). From then on a device wait for `v` follows
  /// its signal in enqueue order, so it cannot block the signal on a
  /// hardware queue the two streams share (stream_queue's held waits).
  void note_sent(std::uint64_t v) noexcept {
    std::uint64_t seen = sent_.load(std::memory_order_relaxed);
    // release: pairs with sent()'s acquire; the enqueue happened before.
    while (seen < v && !sent_.compare_exchange_weak(seen, v, std::memory_order_release,
                                                    std::memory_order_relaxed)) {
    }
  }

  /// True when a device wait for `v` can no longer get ahead of its
  /// signal: `v` is reached on the host, or a stream has enqueued a write
  /// of `v` or more. A value merely *submitted* (announced) is not enough:
  /// its queue may hold it on the host, or not have enqueued it yet.
  [[nodiscard]] bool sent(std::uint64_t v) const noexcept {
    return sent_.load(std::memory_order_acquire) >= v || this->value() >= v;
  }

  /// The highest value a stream has enqueued a write of (note_sent); 0
  /// when none has.
  [[nodiscard]] std::uint64_t sent_value() const noexcept {
    return sent_.load(std::memory_order_acquire);  // pairs with note_sent's release
  }

  /// Writes the highest value a device wait asked for into the word, so
  /// every device wait on it completes (see the file comment).
  void release_device_waits() noexcept { mirror(wanted_.load(std::memory_order_acquire)); }

  /// True while the relay is armed (for tests).
  [[nodiscard]] bool relay_armed() const noexcept {
    return relay_armed_.load(std::memory_order_acquire);
  }

  //===-- event ledger ------------------------------------------------------===//

  /// Records that `event`, recorded by `owner`'s stream, completes when
  /// the semaphore reaches `v`. Errors: `resource_exhausted` when full.
  status add_event(std::uint64_t v, api::event_t event, const void* owner) noexcept {
    causal::detail::spin_guard guard(ledger_lock_);
    if (ledger_count_ == ledger_capacity) {
      return status{error{errc::resource_exhausted, "cuda::semaphore: event ledger full",
                          ledger_capacity}};
    }
    ledger_[ledger_count_++] = ledger_entry{v, event, owner};
    return status{};
  }

  /// Calls `enqueue(event)` with the event of the smallest recorded value
  /// >= `v`, under the ledger lock so the event cannot be recycled
  /// meanwhile; returns its status, or nullopt when no entry covers v.
  template <class Enqueue>
  std::optional<status> wait_event_for(std::uint64_t v, Enqueue&& enqueue) noexcept {
    causal::detail::spin_guard guard(ledger_lock_);
    const ledger_entry* best = nullptr;
    for (std::size_t i = 0; i < ledger_count_; ++i) {
      const ledger_entry& e = ledger_[i];
      if (e.value >= v && (best == nullptr || e.value < best->value)) best = &e;
    }
    if (best == nullptr) return std::nullopt;
    return enqueue(best->event);
  }

  /// Removes `owner`'s entries for values <= `v` and returns their events
  /// to the device's pool; returns how many.
  std::size_t release_events_through(std::uint64_t v, const void* owner) noexcept {
    causal::detail::spin_guard guard(ledger_lock_);
    std::size_t released = 0;
    for (std::size_t i = 0; i < ledger_count_;) {
      if (ledger_[i].owner == owner && ledger_[i].value <= v) {
        dev_->release_event(ledger_[i].event);
        ledger_[i] = ledger_[--ledger_count_];
        ++released;
      } else {
        ++i;
      }
    }
    return released;
  }

  /// Entries in the ledger.
  [[nodiscard]] std::size_t ledger_size() const noexcept {
    causal::detail::spin_guard guard(ledger_lock_);
    return ledger_count_;
  }

 private:
  struct ledger_entry {
    std::uint64_t value = 0;
    api::event_t event{};
    const void* owner = nullptr;
  };

  // Called by the owner of the relay node (relay_armed_ is true).
  void arm_relay() noexcept {
    for (;;) {
      std::uint64_t payload = this->value();
      mirror(payload);
      const bool gone = this->failed();
      if (gone) {
        // A value reached before the failure stays reached, for device
        // waiters too: the payload is frozen once failed, and reading it
        // after the failure flag's acquire sees a signal that landed
        // between the first read and the failure.
        payload = this->value();
        mirror(payload);
        note_failed_word();  // a failed semaphore never signals again
      }
      if (wanted_.load(std::memory_order_acquire) <= payload || gone) {
        relay_armed_.store(false, std::memory_order_release);
        // A request may have raised wanted_ after the check, seen the relay
        // armed and left: take ownership back if so.
        if (wanted_.load(std::memory_order_acquire) > this->value() && !this->failed() &&
            !relay_armed_.exchange(true, std::memory_order_acq_rel)) {
          continue;
        }
        return;
      }
      relay_.reset(payload + 1, &on_relay, this);
      this->add_timepoint(relay_);  // may fire inline: on_relay re-enters arm_relay
      return;
    }
  }

  static void on_relay(semaphore_timepoint& tp, status s) noexcept {
    auto* self = static_cast<basic_semaphore*>(tp.user_data());
    if (!s) {
      // Failed or destroyed: it will never reach the values device waits
      // asked for; let queues release them where they must. What it
      // reached before stays reached (the frozen payload).
      self->mirror(self->value());
      self->note_failed_word();
      self->relay_armed_.store(false, std::memory_order_release);
      return;
    }
    self->arm_relay();
  }

  void note_failed_word() noexcept {
    dev_->mark_failed_word(word_index(), wanted_.load(std::memory_order_acquire));
  }

  device_context* dev_;
  timeline_word word_{};
  semaphore_timepoint relay_;
  std::atomic<std::uint64_t> wanted_{0};
  std::atomic<std::uint64_t> sent_{0};  // highest value a stream enqueued a write of
  std::atomic<bool> relay_armed_{false};
  mutable causal::detail::spin_lock ledger_lock_;
  std::size_t ledger_count_ = 0;
  std::array<ledger_entry, ledger_capacity> ledger_{};
};

/// The default device semaphore.
using semaphore = basic_semaphore<>;

}  // namespace cuda

CAUSAL_END_NAMESPACE
