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
// Thread safety: the handle is immutable; observe() may be called from any
//                thread (the semaphore's contract).
// Memory order:  none of its own.
// Blocking/allocation: never blocks, never allocates; import reads the
//                device's UUID and imports (two runtime calls), destroy
//                one.
// Size:          three pointers.
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

  /// Precondition: no queued operation still uses the handle.
  ~external_timeline() {
    if (imported_) (void)dev_->driver().destroy_external_semaphore(handle_);
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
    return t->dev_->driver().wait_external(t->handle_, v, s);
  }
  static int launch_signal(api::stream_t s, void* self, std::uint64_t v) noexcept {
    auto* t = static_cast<external_timeline*>(self);
    if (!t->imported_) return detail::not_supported;
    return t->dev_->driver().signal_external(t->handle_, v, s);
  }

  device_context* dev_;
  Semaphore* host_;
  api::external_semaphore_t handle_{};
  status setup_{};
  bool imported_ = false;
};

}  // namespace cuda

CAUSAL_END_NAMESPACE
