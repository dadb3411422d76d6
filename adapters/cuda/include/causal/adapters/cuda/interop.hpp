// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// interop: a Vulkan timeline semaphore imported into CUDA
// (cudaImportExternalSemaphore from an opaque timeline fd), waited for and
// signalled from stream queues, with the values it reaches marked external.
//
// Model. `external_timeline` owns the imported handle and refers to a host
// causal semaphore that stands for the same timeline on this side (the
// Vulkan adapter's semaphore, or a plain one). wait_op(v) and signal_op(v)
// are stream_operations: submitted on a stream queue they enqueue
// cudaWaitExternalSemaphoresAsync / cudaSignalExternalSemaphoresAsync in
// stream order. The scheduler did not witness how another API reached a
// value, so `observe(v)` (called when the host learns the Vulkan timeline
// reached v, e.g. from vkGetSemaphoreCounterValue) advances the host
// semaphore with signal_external: those values are *tainted* — waits on
// them import a tainted frontier and are never elided — until a witnessed
// signal heals the watermark (docs/semaphores.md).
//
// Holding. A wait_op is held on the host, as an internal device wait is
// (stream_queue.hpp, "Held operations"), until its value is sent to the
// other API's device (the host semaphore's sent_value() or sent(v)) or
// reached on the host (observe): enqueued earlier it could sit at the
// head of a hardware queue that the stream feeding the other side shares,
// and a CUDA -> Vulkan -> CUDA chain would deadlock. A plain host
// semaphore that reports neither makes the wait a host round trip. A
// queue set to enqueue ahead (set_waits_before_signal(true)) does not hold
// it. A held wait whose host semaphore fails stays held until its queue's
// destructor fails it (`cancelled`).
//
// Same device. An imported semaphore only works on the GPU that created
// it; CUDA does not check, and on a machine with several GPUs (or a
// Vulkan instance that picked another one) the import may succeed and the
// waits never return. So the constructor takes the Vulkan device's
// deviceUUID (VkPhysicalDeviceIDProperties) and compares it with this
// context's device UUID (cudaDeviceProp::uuid) before importing: a
// mismatch is `invalid_argument`, nothing imported, the fd still the
// caller's.
//
// Teardown. The operations are stream commands that name the imported
// handle, and cudaDestroyExternalSemaphore does not wait for them. So each
// launch records, right after its wait or signal, the event of its stream
// (one event per stream, taken from the context at the first launch there
// and re-recorded by every later one: at most `max_streams` streams, an
// operation on one more fails with `resource_exhausted`, nothing
// enqueued). The destructor makes a stream of its own wait for every
// stream's event (cudaStreamWaitEvent, whose record is the latest), waits
// for that stream, and only then destroys the handle. A timeline no stream
// used is destroyed at once. If any of that fails (a faulted context, an
// event that could not be recorded after its operation), the handle is
// leaked rather than destroyed under a command that may still use it.
//
// Thread safety: the handle is immutable; observe() may be called from any
//                thread (the semaphore's contract); operations may be
//                launched from queues on different threads at once (one
//                stream is used by one thread at a time): a stream's
//                event slot is claimed with a compare-exchange.
// Memory order:  a slot's claim is published with a release store that a
//                later launch's acquire load pairs with; the destructor
//                reads the slots after every launch (the caller orders it).
// Blocking/allocation: never allocates; a launch never blocks (the first
//                on a stream takes an event: the context's event lock and
//                perhaps cudaEventCreate). Import reads the device's UUID
//                and imports (two runtime calls); the destructor blocks
//                until every stream has passed its operations on the
//                handle (a wait nobody signals blocks it, as
//                cudaStreamSynchronize would).
// Size:          max_streams * 24 bytes (the event slots) plus ~48.
// Configuration: Semaphore (the host semaphore type).
// See also:      docs/semaphores.md, docs/adapters.md, <causal/semaphore.hpp>,
//                <causal/adapters/cuda/stream_queue.hpp>.
#pragma once

#include <causal/adapters/cuda/api.hpp>
#include <causal/adapters/cuda/device.hpp>
#include <causal/adapters/cuda/driver.hpp>
#include <causal/adapters/cuda/stream_queue.hpp>
#include <causal/config.hpp>
#include <causal/result.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

CAUSAL_BEGIN_NAMESPACE

namespace cuda {

/// An imported external timeline semaphore; see the file comment.
template <class Semaphore>
class external_timeline {
 public:
  /// Bytes in a device UUID (VK_UUID_SIZE, sizeof(cudaUUID_t)).
  static constexpr std::size_t uuid_size = 16;
  /// Streams whose operations on the handle one timeline tracks for its
  /// teardown (one event each; see the file comment).
  static constexpr std::size_t max_streams = 16;

  /// Imports the timeline behind `fd` (from vkGetSemaphoreFdKHR with an
  /// OPAQUE_FD handle of a timeline semaphore) created on the Vulkan
  /// device whose VkPhysicalDeviceIDProperties::deviceUUID is
  /// `vulkan_device_uuid`; on success the runtime owns the fd. `host`
  /// stands for the same timeline on the host. Errors (setup_status(),
  /// nothing imported, the fd still the caller's): the context's own
  /// failure; `invalid_argument` for a negative fd or a UUID that is not
  /// this context's device; the runtime's status if the UUID cannot be
  /// read or the import fails.
  external_timeline(device_context& dev, int fd,
                    std::span<const std::uint8_t, uuid_size> vulkan_device_uuid,
                    Semaphore& host) noexcept
      : dev_(&dev), host_(&host) {
    if (!dev.setup_status()) {
      setup_ = dev.setup_status();
    } else if (fd < 0) {
      setup_ = status{error{errc::invalid_argument, "external_timeline: negative fd"}};
    } else if (status same = same_device(dev, vulkan_device_uuid); !same) {
      setup_ = same;
    } else {
      // Imported into the current device: make ours current, from any thread.
      const scoped_device current(dev.driver(), dev.ordinal());
      setup_ = current.status_value();
      if (setup_) {
        setup_ = to_status(dev.driver().import_timeline_fd(&handle_, fd), "cudaImportExternalSemaphore");
      }
    }
    imported_ = static_cast<bool>(setup_);
  }

  external_timeline(const external_timeline&) = delete;
  external_timeline& operator=(const external_timeline&) = delete;

  /// Waits until every stream has passed the operations launched on the
  /// handle, then destroys it (see the file comment, "Teardown").
  ~external_timeline() {
    if (!imported_) return;
    const driver_table& d = dev_->driver();
    bool passed = !untracked_.load(std::memory_order_acquire);
    std::size_t used = 0;
    for (const stream_mark& m : marks_) used += m.state.load(std::memory_order_acquire) == ready ? 1 : 0;
    if (used != 0 && passed) {
      // A stream of our own, on the context's device, waits for each
      // stream's latest record: after that, no command names the handle.
      const scoped_device current(d, dev_->ordinal());
      api::stream_t waiter{};
      passed = current.status_value() && d.stream_create(&waiter) == 0;
      if (passed) {
        for (const stream_mark& m : marks_) {
          if (m.state.load(std::memory_order_acquire) != ready) continue;
          if (d.stream_wait_event(waiter, m.event) != 0) passed = false;
        }
        if (d.stream_synchronize(waiter) != 0) passed = false;
        (void)d.stream_destroy(waiter);
      }
    }
    for (stream_mark& m : marks_) {
      if (m.state.load(std::memory_order_acquire) == ready) dev_->release_event(m.event);
    }
    // Else leaked: a command may still name it.
    if (passed) (void)d.destroy_external_semaphore(handle_);
  }

  /// Ok, or why the import failed.
  [[nodiscard]] status setup_status() const noexcept { return setup_; }
  [[nodiscard]] Semaphore& host() const noexcept { return *host_; }

  /// An operation that makes its stream wait until the timeline >= `v`.
  /// Held by the queue (stream_operation::ready) until `v` is sent on the
  /// other side or reached on the host, as an internal wait is, so it
  /// never blocks a hardware queue ahead of the signal it waits for.
  [[nodiscard]] stream_operation wait_op(std::uint64_t v) noexcept {
    return stream_operation{&launch_wait, this, v, "external wait", &wait_ready};
  }
  /// An operation that signals the timeline to `v` in stream order.
  [[nodiscard]] stream_operation signal_op(std::uint64_t v) noexcept {
    return stream_operation{&launch_signal, this, v, "external signal"};
  }

  /// Records that the timeline reached `v` by a signal the scheduler did
  /// not witness: the host semaphore advances, tainted above the watermark.
  /// Values at or below the host payload are ignored (ok).
  status observe(std::uint64_t v) noexcept {
    if (v <= host_->value()) return status{};
    return host_->signal_external(v);
  }

 private:
  // Whether `vulkan` names the context's device (see the file comment).
  static status same_device(device_context& dev,
                            std::span<const std::uint8_t, uuid_size> vulkan) noexcept {
    if (dev.driver().device_uuid == nullptr) {
      return status{error{errc::failed_precondition,
                          "external_timeline: this runtime cannot report its device UUID"}};
    }
    std::uint8_t own[uuid_size] = {};
    if (status st = to_status(dev.driver().device_uuid(dev.ordinal(), own), "cudaGetDeviceProperties");
        !st) {
      return st;
    }
    for (std::size_t i = 0; i < uuid_size; ++i) {
      if (own[i] != vulkan[i]) {
        return status{error{errc::invalid_argument,
                            "external_timeline: the Vulkan semaphore's device (deviceUUID) is not "
                            "this CUDA device: an import would never be signalled here",
                            static_cast<std::uint64_t>(dev.ordinal())}};
      }
    }
    return status{};
  }

  // The holding rule for external waits: enqueue once the value is sent
  // to its device (a host semaphore that reports it: sent_value() on the
  // Vulkan adapter's, sent(v) on ours) or reached on the host (observe).
  static bool wait_ready(void* self, std::uint64_t v) noexcept {
    const Semaphore& h = *static_cast<external_timeline*>(self)->host_;
    if (h.value() >= v) return true;
    if constexpr (requires { h.sent_value(); }) {
      return h.sent_value() >= v;
    } else if constexpr (requires { h.sent(v); }) {
      return h.sent(v);
    } else {
      return false;
    }
  }

  static int launch_wait(api::stream_t s, void* self, std::uint64_t v) noexcept {
    auto* t = static_cast<external_timeline*>(self);
    if (!t->imported_) return detail::not_supported;
    stream_mark* m = t->mark_for(s);
    if (m == nullptr) return api::out_of_memory;  // resource_exhausted, nothing enqueued
    if (int rc = t->dev_->driver().wait_external(t->handle_, v, s); rc != 0) return rc;
    return t->record(*m, s);
  }
  static int launch_signal(api::stream_t s, void* self, std::uint64_t v) noexcept {
    auto* t = static_cast<external_timeline*>(self);
    if (!t->imported_) return detail::not_supported;
    stream_mark* m = t->mark_for(s);
    if (m == nullptr) return api::out_of_memory;
    if (int rc = t->dev_->driver().signal_external(t->handle_, v, s); rc != 0) return rc;
    return t->record(*m, s);
  }

  // One stream's event slot: free, being claimed (by the stream's first
  // launch), or ready (stream and event set, read-only from then on).
  static constexpr std::uint8_t free_slot = 0;
  static constexpr std::uint8_t claiming = 1;
  static constexpr std::uint8_t ready = 2;
  struct stream_mark {
    std::atomic<std::uint8_t> state{free_slot};
    api::stream_t stream{};
    api::event_t event{};
  };

  // The slot of stream `s`, claimed (with an event from the context) at
  // its first launch; null when every slot is taken or no event is left.
  stream_mark* mark_for(api::stream_t s) noexcept {
    for (stream_mark& m : marks_) {
      // acquire: pairs with the release store of `ready` below, so the
      // stream and event written before it are visible.
      const std::uint8_t st = m.state.load(std::memory_order_acquire);
      if (st == ready && m.stream == s) return &m;
    }
    for (stream_mark& m : marks_) {
      std::uint8_t expected = free_slot;
      // relaxed on failure: another stream's claim; we only move on.
      if (!m.state.compare_exchange_strong(expected, claiming, std::memory_order_acquire,
                                           std::memory_order_relaxed)) {
        continue;
      }
      result<api::event_t> e = dev_->acquire_event();
      if (!e) {
        m.state.store(free_slot, std::memory_order_release);
        return nullptr;
      }
      m.stream = s;
      m.event = *e;
      m.state.store(ready, std::memory_order_release);  // pairs with the acquire loads above
      return &m;
    }
    return nullptr;
  }

  // Records `m`'s event after an operation just enqueued on `s`. If that
  // fails the operation is on the stream untracked: the destructor will
  // leak the handle rather than destroy it under that command.
  int record(stream_mark& m, api::stream_t s) noexcept {
    const int rc = dev_->driver().event_record(m.event, s);
    // release: pairs with the destructor's acquire load.
    if (rc != 0) untracked_.store(true, std::memory_order_release);
    return rc;
  }

  device_context* dev_;
  Semaphore* host_;
  api::external_semaphore_t handle_{};
  status setup_{};
  bool imported_ = false;
  std::atomic<bool> untracked_{false};
  std::array<stream_mark, max_streams> marks_{};
};

}  // namespace cuda

CAUSAL_END_NAMESPACE
