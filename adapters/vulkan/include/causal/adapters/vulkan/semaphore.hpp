// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// semaphore: a causal timeline semaphore paired with a Vulkan timeline
// semaphore (VK_SEMAPHORE_TYPE_TIMELINE), so that device queues wait and
// signal the Vulkan half while host code and wait elision read the host half.
//
// Model. The host half is a `causal::semaphore` (payload + frontier
// history, docs/semaphores.md); the device half is a VkSemaphore. Values flow:
//   device -> host  a queue that submits a signal of v announces it on the
//                   host half (submit_signal, with the frontier it carries)
//                   and notes v as *issued*; when the device counter passes
//                   v, a poll (vulkan::device::poll or its waiter thread)
//                   reaches v on the host half with that frontier. Counter
//                   values nobody issued through a causal queue (a raw
//                   vkSignalSemaphore, another API, another process sharing
//                   the payload) are reached as *external*: tainted, so
//                   waits on them are never elided.
//   host -> device  signal(v, f) signals the VkSemaphore (vkSignalSemaphore)
//                   and then reaches v on the host half.
// A semaphore exported or imported as an fd (VK_KHR_external_semaphore_fd),
// or marked with mark_external(), is *external*: others may advance it, so
// the waiter thread polls it on a timer; values it did not issue are tainted.
// A queue sends a wait on an external value only once the value is reached
// on the host or the producer's signal is known to be submitted
// (mark_sent), as for any other wait (queue.hpp, "Held batches").
//
// Signals of one batch are reached in issue order. (axis, e) claims that
// operation e has completed with every signal of it reached
// (docs/queues.md, "Signals of one operation"), and only the batch's last
// signal (then its queue's epoch timeline) carries it. A poll reads one
// counter at a time, so the host could see the last one first; instead
// each issued value names the signal issued just before it in its batch
// (its *gate*), and a poll reaches the value only once the gate is reached
// (or failed) on the host. Until then the value, and every later one of
// the semaphore, waits for the next poll; vulkan::device::poll repeats its
// pass while a pass both held a value back and moved another, so one call
// reaches everything the device has completed. So no host observer -- a
// host wait returning, a timepoint firing, a tracker retiring e, a pool
// -- sees a value that carries (axis, e) reached before every signal of e
// is reached on the host.
//
// The host half is a private base: the members a queue, a block pool, a
// multi-wait or a semaphore_link need are re-exported; signal and wait are
// replaced by versions that keep both halves in step.
//
// Failure. `fail(e)` freezes the host payload (as <causal/semaphore.hpp>):
// a wait on a value reached before the failure succeeds however late it
// is made; one on a higher value gets the failure.
//
// Thread safety: every member may be called concurrently. Values issued by
//                queues and reached by polls go through one internal mutex.
// Memory order:  as <causal/semaphore.hpp>: reaching v on the host half
//                releases; value(), try_wait() and waits acquire.
// Blocking/allocation: allocates only when more issued values are
//                outstanding than ever before (make_issue_room, on the
//                submitting thread: the table doubles and is kept).
//                signal() and poll() take the internal mutex and call the
//                driver; wait* block in vkWaitSemaphores in slices of at
//                most 2 ms.
// Size:          the host semaphore (~3 KiB) plus ~400 bytes.
// Configuration: semaphore_options (initial value, scope, external,
//                exportable); the host half is causal::semaphore.
// See also:      docs/semaphores.md and docs/adapters.md, <causal/semaphore.hpp>,
//                <causal/adapters/vulkan/device.hpp>,
//                <causal/adapters/vulkan/queue.hpp>.
#pragma once

#include <causal/adapters/vulkan/device.hpp>
#include <causal/config.hpp>
#include <causal/detail/inline_ring.hpp>
#include <causal/frontier.hpp>
#include <causal/result.hpp>
#include <causal/semaphore.hpp>

#include <vulkan/vulkan.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <utility>

CAUSAL_BEGIN_NAMESPACE

namespace vulkan {

class backend;
class queue;

/// How a semaphore is created.
struct semaphore_options {
  std::uint64_t initial = 0;
  semaphore_scope scope = semaphore_scope::device_local;
  /// Values may be advanced outside this process's causal queues.
  bool external = false;
  /// Created exportable as an opaque fd (needs VK_KHR_external_semaphore_fd).
  bool exportable = false;
};

/// A host causal semaphore paired with a Vulkan timeline semaphore; see the
/// file comment.
class semaphore : private causal::semaphore {
  using base = causal::semaphore;

 public:
  using base::clock;
  using base::frontier_type;
  using base::imported_type;
  using base::default_spin;
  using base::history_depth;
  using base::pending_capacity;

  /// Values issued to the device and not yet reached on the host, held
  /// without allocating; more grow the table (any number may be issued).
  static constexpr std::size_t inline_issued = base::pending_capacity;

  /// Creates both halves at `options.initial`. On failure the semaphore is
  /// created failed (see failure()): a lost or unusable device, a driver
  /// error, or `exportable` without fd support (`failed_precondition`).
  explicit semaphore(device& dev, semaphore_options options = {}) noexcept
      : base(options.initial, options.scope), device_(&dev), external_(options.external) {
    create(options, /*attach=*/true);
  }

  /// Creates a semaphore at `initial` with the default options.
  semaphore(device& dev, std::uint64_t initial) noexcept
      : semaphore(dev, semaphore_options{initial}) {}

  semaphore(const semaphore&) = delete;
  semaphore& operator=(const semaphore&) = delete;

  /// Destroys the VkSemaphore. Precondition: no pending device work uses
  /// it (wait for the queues first) and no host thread waits on it. Values
  /// of other semaphores gated on this one's (see the file comment) stop
  /// waiting for it. A batch a queue still holds on the host (not sent to
  /// the device yet) that waits on or signals this semaphore would read it
  /// after it is gone: that is refused loudly, in every build mode, with
  /// the count of such uses (docs/lifetimes.md). Destroy or idle the
  /// queues first; a queue's destructor drops what it holds.
  ~semaphore() {
    if (const std::uint32_t uses = held_uses_.load(std::memory_order_acquire); uses != 0)
        [[unlikely]] {
      std::fprintf(stderr,
                   "causal: vulkan::semaphore (host value %llu) destroyed while %u batch use(s) "
                   "held on the host, not yet sent to the device, still wait on or signal it; "
                   "destroy the queues that hold them first (docs/lifetimes.md)\n",
                   static_cast<unsigned long long>(base::value()), static_cast<unsigned>(uses));
      std::fflush(stderr);
      std::abort();
    }
    if (attached_) {
      device_->forget_gate(this);
      device_->detach(member_);
    }
    if (handle_ != VK_NULL_HANDLE) {
      device_->fn().destroy_semaphore(device_->vk_device(), handle_, nullptr);
    }
  }

  //===-- the host half (re-exported) ---------------------------------------===//

  using base::add_timepoint;
  using base::failed;
  using base::failure;
  using base::frontier_at;
  using base::is_tainted;
  using base::parked_waiters;
  using base::pending_count;
  using base::reservation_unneeded;
  using base::reserve_signal;
  using base::scope;
  using base::set_observer;
  using base::state_of;
  using base::submit_reserved_signal;
  using base::submit_signal;
  using base::unreserve_signal;
  using base::taint_watermark;
  using base::try_wait;
  using base::value;

  /// True for a queue's epoch timeline, which only its queue signals:
  /// signal() refuses, and so does a queue asked to signal it.
  [[nodiscard]] bool writes_reserved() const noexcept { return internal_; }

  /// Fails the semaphore with `e` (sticky; first error wins) and freezes
  /// the host payload: host waiters and timepoints on values it has not
  /// reached get `e`, and submissions held on the host that wait on such a
  /// value are dropped (kick), their signals failed once their other waits
  /// are over (queue.hpp, "Failure"), so nothing waits forever. (Device
  /// waits never need releasing: a queue only sends a wait to the driver
  /// once its signal has been sent, see queue.hpp.) Returns true when `e`
  /// is the error recorded.
  bool fail(error e) noexcept {
    const bool first = base::fail(e);
    device_->kick_all();
    return first;
  }

  //===-- observers -------------------------------------------------------===//

  [[nodiscard]] vk::Semaphore handle() const noexcept { return vk::Semaphore(handle_); }
  [[nodiscard]] VkSemaphore vk_handle() const noexcept { return handle_; }
  [[nodiscard]] device& owner() const noexcept { return *device_; }
  /// True when values may come from outside (exported, imported, marked).
  [[nodiscard]] bool external() const noexcept {
    return external_.load(std::memory_order_acquire);
  }
  /// Ok, or why creation failed.
  [[nodiscard]] status setup_status() const noexcept { return setup_; }
  /// Values issued by queues whose host half has not been reached yet
  /// (the device may have reached them: see the file comment).
  [[nodiscard]] std::size_t issued_count() const noexcept {
    return issued_size_.load(std::memory_order_relaxed);
  }
  /// The highest value whose signal has reached the driver (a queue's batch
  /// was submitted, or the host signalled it). A queue sends a batch that
  /// waits for v only once sent_value() >= v (see queue.hpp).
  [[nodiscard]] std::uint64_t sent_value() const noexcept {
    // seq_cst: the waiter's side of the Dekker pair with note_sent (see
    // queue.hpp, "held batches").
    return sent_.load(std::memory_order_seq_cst);
  }

  /// Ok when a device signal or wait of `v` would stay within the device's
  /// maxTimelineSemaphoreValueDifference of the current counter (Vulkan
  /// leaves going further undefined); else `invalid_argument` naming `v`.
  /// Reads the counter only when the host value is too far behind.
  [[nodiscard]] status check_value_difference(std::uint64_t v) const noexcept {
    const std::uint64_t limit = device_->max_timeline_value_difference();
    if (v <= base::value() || v - base::value() <= limit) return status{};
    const result<std::uint64_t> now = device_value();
    if (now && (v <= *now || v - *now <= limit)) return status{};
    return error{errc::invalid_argument,
                 "vulkan::semaphore: value further from the current one than "
                 "maxTimelineSemaphoreValueDifference allows",
                 v};
  }

  /// Reads the Vulkan counter directly (diagnostics; does not advance the
  /// host half).
  [[nodiscard]] result<std::uint64_t> device_value() const noexcept {
    std::uint64_t v = 0;
    const VkResult r = device_->fn().get_semaphore_counter_value(device_->vk_device(), handle_, &v);
    if (r != VK_SUCCESS) return device_->check(r, "vkGetSemaphoreCounterValue failed").error_value();
    return v;
  }

  //===-- host signal and wait ----------------------------------------------===//

  /// Signals `v` from the host on both halves, carrying `f`: first the
  /// VkSemaphore (so device waits see it), then the host half; then retries
  /// held submissions. Errors (nothing changes): `failed_precondition` on a
  /// queue's epoch timeline (queue::timeline(): only the queue moves it;
  /// writes_reserved()), the failure, `v` not above
  /// the value (`not_increasing`), `v` at or above a value a queue has
  /// issued and the device not yet reached (`invalid_argument`: Vulkan
  /// requires a timeline to increase in execution order), `v` further above
  /// the value than maxTimelineSemaphoreValueDifference (`invalid_argument`).
  /// An issued value the device has reached but the host holds back for
  /// its batch's earlier signal (file comment) is reached first by one
  /// device poll -- except from a timepoint callback of a poll, which gets
  /// `invalid_argument` then.
  status signal(std::uint64_t v, const frontier_type& f = frontier_type{}) noexcept {
    if (internal_) {
      return error{errc::failed_precondition,
                   "vulkan::semaphore::signal: a queue's epoch timeline; only its queue signals it (a "
                   "host signal would mark epochs complete that have not run)",
                   v};
    }
    status out;
    for (bool polled = false;; polled = true) {
      std::unique_lock lock(mutex_);
      if (auto e = failure(); e) return *e;
      (void)poll_locked();
      if (auto e = failure(); e) return *e;
      if (v <= base::value()) {
        return error{errc::not_increasing, "vulkan::semaphore::signal: value not above the payload", v};
      }
      if (!issued_.empty() && issued_[0].value <= v) {
        if (held_back_ && !polled && detail::polls_on_this_thread == 0) {
          // Reached on the device, held back on the host for the signal
          // issued before it: reach both (device::poll takes every
          // member's lock, this one's included), then look again.
          lock.unlock();
          (void)device_->poll();
          continue;
        }
        return error{errc::invalid_argument,
                     "vulkan::semaphore::signal: a queue has issued a signal at or below this "
                     "value that the host has not reached",
                     issued_[0].value};
      }
      // After the poll the host value is the counter's.
      if (v - base::value() > device_->max_timeline_value_difference()) {
        return error{errc::invalid_argument,
                     "vulkan::semaphore::signal: value further above the payload than "
                     "maxTimelineSemaphoreValueDifference allows",
                     v};
      }
      const VkSemaphoreSignalInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, nullptr, handle_, v};
      const VkResult r = device_->fn().signal_semaphore(device_->vk_device(), &info);
      if (r != VK_SUCCESS) {
        out = device_->check(r, "vulkan::semaphore::signal: vkSignalSemaphore failed");
        if (r != VK_ERROR_DEVICE_LOST) base::fail(out.error_value());
        return out;
      }
      out = base::signal(v, f);
      note_sent(v);
      break;
    }
    device_->kick_all();
    return out;
  }

  /// Blocks until the value is >= `v` (ok; also after a failure, when `v`
  /// was reached before it), the semaphore fails without having reached
  /// `v` (its failure, e.g. `device_lost`) or `deadline` passes
  /// (`errc::timeout`). Works with or without the device's waiter thread:
  /// it waits on the VkSemaphore in slices and polls the device after each.
  status wait_until(std::uint64_t v, clock::time_point deadline) noexcept {
    constexpr auto slice = std::chrono::milliseconds(2);
    for (;;) {
      // The payload before the failure: a value reached before the
      // semaphore failed stays reached (failure_below reads it again
      // after the failure flag, which makes the frozen payload visible).
      if (base::value() >= v) return status{};
      if (auto e = causal::detail::failure_below(*this, v); e) return *e;
      if (base::value() >= v) return status{};
      if (auto e = device_->lost(); e) return *e;
      const auto now = clock::now();
      if (now >= deadline) return error{errc::timeout, "vulkan::semaphore wait timed out", v};
      const auto left = deadline - now;
      const auto step = left < slice ? left : clock::duration(slice);
      const std::uint64_t ns = static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(step).count());
      const VkSemaphoreWaitInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO, nullptr, 0, 1,
                                     &handle_, &v};
      const VkResult r = device_->fn().wait_semaphores(device_->vk_device(), &info, ns);
      if (r != VK_SUCCESS && r != VK_TIMEOUT) {
        status s = device_->check(r, "vulkan::semaphore wait: vkWaitSemaphores failed");
        if (r != VK_ERROR_DEVICE_LOST) return s;
        continue;
      }
      (void)device_->poll();
    }
  }

  status wait(std::uint64_t v) noexcept { return wait_until(v, clock::time_point::max()); }

  template <class Rep, class Period>
  status wait_for(std::uint64_t v, std::chrono::duration<Rep, Period> timeout) noexcept {
    const auto now = clock::now();
    if (timeout <= timeout.zero()) return wait_until(v, now);
    if (timeout > std::chrono::hours(24 * 365)) return wait_until(v, clock::time_point::max());
    return wait_until(v, now + std::chrono::ceil<clock::duration>(timeout));
  }

  //===-- completion --------------------------------------------------------===//

  /// Reads the device counter and reaches the host half up to it: issued
  /// values in order with their frontiers, anything beyond as external.
  /// Stops at an issued value whose gate (the signal issued before it in
  /// its batch) is not reached on the host yet; vulkan::device::poll
  /// reaches both. Returns true when the host value moved.
  bool poll() noexcept {
    std::lock_guard lock(mutex_);
    return poll_locked();
  }

  //===-- external semaphores -------------------------------------------------===//

  /// Marks the semaphore external: values that no causal queue issued are
  /// expected and tainted, and the waiter thread polls it on a timer.
  void mark_external() noexcept {
    external_.store(true, std::memory_order_release);
    member_.polled_blindly.store(true, std::memory_order_relaxed);
  }

  /// Says that a signal of `v` has been submitted outside this device's
  /// causal queues -- by the external producer (a CUDA stream's
  /// cudaSignalExternalSemaphoresAsync, another process, a raw
  /// vkQueueSubmit) -- so batches waiting for `v` may now go to the driver.
  /// Until then, or until a poll sees `v` reached, a queue holds them on
  /// the host as it holds a wait whose signal one of its own queues has
  /// not sent yet: a wait sent ahead of its signal on a shared vk::Queue
  /// (or a chain through another API that comes back to this one) can
  /// block unrelated work or deadlock. Call it after the producer's
  /// submit, never before. Retries held batches. Error: the semaphore is
  /// not external (`failed_precondition`: its signals come through this
  /// device's queues, which say so themselves).
  status mark_sent(std::uint64_t v) noexcept {
    if (!external()) {
      return error{errc::failed_precondition,
                   "vulkan::semaphore::mark_sent: not an external semaphore (mark_external, export_fd "
                   "or import_fd first)",
                   v};
    }
    note_sent(v);
    device_->kick_all();
    return status{};
  }

  /// Exports the payload as an opaque fd (the caller owns it) and marks the
  /// semaphore external. Errors: fds unsupported or the semaphore not
  /// created `exportable` (`failed_precondition`), a driver error.
  [[nodiscard]] result<int> export_fd() noexcept {
    if (!device_->has_external_semaphore_fd()) {
      return error{errc::failed_precondition,
                   "export_fd: VK_KHR_external_semaphore_fd is not enabled on this device"};
    }
    if (!exportable_) {
      return error{errc::failed_precondition, "export_fd: semaphore not created exportable"};
    }
    const VkSemaphoreGetFdInfoKHR info{VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR, nullptr, handle_,
                                       VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT};
    int fd = -1;
    const VkResult r = device_->fn().get_semaphore_fd(device_->vk_device(), &info, &fd);
    if (r != VK_SUCCESS) return device_->check(r, "export_fd: vkGetSemaphoreFdKHR failed").error_value();
    mark_external();
    return fd;
  }

  /// Replaces the payload with the one behind `fd` (an opaque fd exported
  /// by another semaphore; on success Vulkan owns `fd`) and marks the
  /// semaphore external. The host half then follows the imported counter:
  /// the next poll reaches its current value as external. Errors: fds
  /// unsupported (`failed_precondition`), a negative fd
  /// (`invalid_argument`), a driver error (the fd stays the caller's).
  status import_fd(int fd) noexcept {
    if (!device_->has_external_semaphore_fd()) {
      return error{errc::failed_precondition,
                   "import_fd: VK_KHR_external_semaphore_fd is not enabled on this device"};
    }
    if (fd < 0) return error{errc::invalid_argument, "import_fd: negative fd"};
    const VkImportSemaphoreFdInfoKHR info{VK_STRUCTURE_TYPE_IMPORT_SEMAPHORE_FD_INFO_KHR, nullptr,
                                          handle_, 0,
                                          VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT, fd};
    std::lock_guard lock(mutex_);
    const VkResult r = device_->fn().import_semaphore_fd(device_->vk_device(), &info);
    if (r != VK_SUCCESS) return device_->check(r, "import_fd: vkImportSemaphoreFdKHR failed");
    mark_external();
    return status{};
  }

 private:
  friend class backend;
  friend class queue;

  struct internal_tag {};

  /// A queue's epoch timeline: not registered with the device (the queue
  /// polls it), reached straight to the counter value.
  semaphore(device& dev, internal_tag) noexcept
      : base(0, semaphore_scope::device_local), device_(&dev), internal_(true) {
    create(semaphore_options{}, /*attach=*/false);
  }

  void create(const semaphore_options& options, bool attach) noexcept {
    exportable_ = options.exportable;
    sent_.store(options.initial, std::memory_order_relaxed);
    if (auto e = device_->lost(); e) return set_failed(*e);
    if (!device_->setup_status()) return set_failed(device_->setup_status().error_value());
    if (options.exportable && !device_->has_external_semaphore_fd()) {
      return set_failed(error{errc::failed_precondition,
                              "vulkan::semaphore: exportable needs VK_KHR_external_semaphore_fd"});
    }
    VkExportSemaphoreCreateInfo export_info{VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO, nullptr,
                                            VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT};
    VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                   options.exportable ? &export_info : nullptr,
                                   VK_SEMAPHORE_TYPE_TIMELINE, options.initial};
    VkSemaphoreCreateInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, &type, 0};
    const VkResult r = device_->fn().create_semaphore(device_->vk_device(), &info, nullptr, &handle_);
    if (r != VK_SUCCESS) {
      handle_ = VK_NULL_HANDLE;
      return set_failed(device_->check(r, "vulkan::semaphore: vkCreateSemaphore failed").error_value());
    }
    member_.owner = this;
    member_.poll = [](detail::device_member& m) noexcept { return from_member(m).poll(); };
    member_.fail = [](detail::device_member& m, const error& e) noexcept {
      // The device is lost: what it was sent will never signal, so no
      // producer of a submitted value will write here again from it.
      (void)from_member(m).base::fail(e);
      from_member(m).base::abandon_promises();
    };
    member_.next_wait = [](detail::device_member& m, VkSemaphore& h, std::uint64_t& v) noexcept {
      return from_member(m).next_wait(h, v);
    };
    member_.forget_gate = [](detail::device_member& m, const void* gone) noexcept {
      from_member(m).forget_gate(static_cast<const semaphore*>(gone));
    };
    member_.polled_blindly.store(options.external, std::memory_order_relaxed);
    if (attach) {
      device_->attach(member_);
      attached_ = true;
    }
  }

  /// Gives up the VkSemaphore (the caller destroys it, or hands it to
  /// device::abandon); the destructor then destroys nothing. For an
  /// unattached epoch timeline whose queue is going away.
  VkSemaphore release_handle() noexcept {
    std::lock_guard lock(mutex_);
    return std::exchange(handle_, VK_NULL_HANDLE);
  }

  /// Fails the host half only (no kick): for callers that may hold a
  /// queue's lock.
  bool fail_host(const error& e) noexcept { return base::fail(e); }
  /// fail_host by the producer of the submitted signal `v` (settles the
  /// promise, see causal::basic_semaphore::fail_submitted).
  bool fail_host_submitted(std::uint64_t v, const error& e) noexcept {
    return base::fail_submitted(v, e);
  }

  void set_failed(const error& e) noexcept {
    setup_ = e;
    (void)base::fail(e);
  }

  static semaphore& from_member(detail::device_member& m) noexcept {
    return *static_cast<semaphore*>(m.owner);
  }

  bool next_wait(VkSemaphore& h, std::uint64_t& v) noexcept {
    std::lock_guard lock(mutex_);
    if (issued_.empty() || failed()) return false;
    h = handle_;
    v = issued_[0].value;
    redirect_to_gate_locked(h, v);
    return true;
  }

  /// A value a queue issued, not yet reached on the host.
  struct issued_value {
    std::uint64_t value = 0;
    /// The signal issued just before this one in its batch (null: the
    /// batch's first): the host reaches `value` only once `gate` has
    /// reached `gate_value` or failed (file comment, "Signals of one
    /// batch"). Cleared when that semaphore is destroyed (forget_gate).
    const semaphore* gate = nullptr;
    std::uint64_t gate_value = 0;
  };

  /// True when `e` may be reached on the host as far as its batch goes:
  /// no gate, or the gate reached (a value reached before a failure stays
  /// reached) or failed (then it never is: its waiters have the failure,
  /// and holding the rest of the batch back would strand theirs, as a CPU
  /// queue signals every semaphore of a completed operation).
  static bool gate_open(const issued_value& e) noexcept {
    return e.gate == nullptr || e.gate->base::value() >= e.gate_value || e.gate->failed();
  }

  /// Under mutex_: when the value the waiter thread would wait for next is
  /// the first issued one and its gate is shut, waits for the gate instead
  /// (the device may reach this counter first; the host cannot use it
  /// before the gate).
  void redirect_to_gate_locked(VkSemaphore& h, std::uint64_t& v) const noexcept {
    if (issued_.empty() || issued_[0].value > v || gate_open(issued_[0])) return;
    h = issued_[0].gate->handle_;
    v = issued_[0].gate_value;
  }

  /// A batch held on the host names this semaphore (+1) or no longer
  /// does (-1): sent, dropped. Held batches are rare (a shared vk::Queue,
  /// a wait before its signal), so this costs nothing on the usual path.
  void note_held_use(int delta) noexcept {
    if (delta > 0) {
      held_uses_.fetch_add(1, std::memory_order_relaxed);
    } else {
      // release: the batch's last read of this semaphore happens before a
      // destructor that sees the count fall to zero (acquire above).
      held_uses_.fetch_sub(1, std::memory_order_release);
    }
  }

  /// Values gated on `gone` (being destroyed) stop waiting for it: the
  /// device completed its batch, or the caller broke the destructor's
  /// precondition; either way nothing may read it any more.
  void forget_gate(const semaphore* gone) noexcept {
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < issued_.size(); ++i) {
      if (issued_[i].gate == gone) issued_[i].gate = nullptr;
    }
  }

  /// Makes room for one more issued value (doubling the table when it is
  /// full); a queue calls it before a submission has any effect, so
  /// note_issued then finds room. Error: `resource_exhausted` when memory
  /// runs out (nothing changes).
  status make_issue_room() noexcept {
    std::lock_guard lock(mutex_);
    return grow_issued_locked();
  }

  /// Records that a queue issued a device signal of `v` (already announced
  /// with submit_signal), to be reached on the host only after `gate`
  /// reaches `gate_value` (the signal issued before it in the batch; null:
  /// none). Called before the submit reaches the driver, so a poll never
  /// mistakes v for an external value. Fails only when another queue took
  /// the room made for this one and memory has run out.
  status note_issued(std::uint64_t v, const semaphore* gate = nullptr,
                     std::uint64_t gate_value = 0) noexcept {
    std::lock_guard lock(mutex_);
    if (status room = grow_issued_locked(); !room) return room;
    std::size_t at = issued_.size();
    while (at > 0 && issued_[at - 1].value > v) --at;
    issued_.insert(at, issued_value{v, gate, gate_value});
    issued_size_.store(issued_.size(), std::memory_order_relaxed);
    return status{};
  }

  /// Records that a signal of `v` has been submitted to the driver.
  void note_sent(std::uint64_t v) noexcept {
    std::uint64_t seen = sent_.load(std::memory_order_relaxed);
    // seq_cst: the signaller's side of the Dekker pair (sent_value()).
    while (seen < v && !sent_.compare_exchange_weak(seen, v, std::memory_order_seq_cst,
                                                    std::memory_order_relaxed)) {
    }
  }

  /// Doubles the issued table when full. Under mutex_ (a mutex, so the
  /// allocation does not hold up a spinning thread).
  status grow_issued_locked() noexcept {
    if (!issued_.full()) return status{};
    const std::size_t capacity = issued_.capacity() * 2;
    auto* storage = new (std::nothrow) issued_value[capacity];
    if (storage == nullptr) {
      return error{errc::resource_exhausted,
                   "vulkan::semaphore: out of memory for the table of issued values", capacity};
    }
    delete[] issued_.adopt(storage, capacity);
    return status{};
  }

  /// Epoch timelines of queue `a`: reach the counter value directly (every
  /// value is ours, and only the newest matters), carrying (a, c) -- but
  /// no further than the epoch before the first batch whose last signal
  /// the host has not reached yet: (a, c) claims every signal of epochs up
  /// to c reached. The queue notes each batch with signals as an issued
  /// epoch gated on its last signal. Returns the new value.
  std::uint64_t poll_sequential(causal::axis a) noexcept {
    std::lock_guard lock(mutex_);
    const detail::poll_scope scope;  // timepoint callbacks run under mutex_
    if (failed()) return base::value();
    std::uint64_t c = 0;
    const VkResult r = device_->fn().get_semaphore_counter_value(device_->vk_device(), handle_, &c);
    if (r != VK_SUCCESS) {
      (void)device_->check(r, "poll: vkGetSemaphoreCounterValue failed");
      return base::value();
    }
    std::size_t done = 0;
    while (done < issued_.size() && issued_[done].value <= c) {
      if (!gate_open(issued_[done])) {
        c = issued_[done].value - 1;
        device_->note_held_back();
        break;
      }
      ++done;
    }
    issued_.pop_front(done);
    issued_size_.store(issued_.size(), std::memory_order_relaxed);
    if (c > base::value()) {
      frontier_type f;
      (void)f.insert_or_raise(a, c);
      (void)base::signal(c, f, frontier_entry{a, c});
    }
    return base::value();
  }

  /// The waiter thread's wait for an epoch timeline: `v` on it, or the
  /// gate that holds `v` back (see redirect_to_gate_locked).
  void epoch_wait_target(VkSemaphore& h, std::uint64_t& v) const noexcept {
    std::lock_guard lock(mutex_);
    h = handle_;
    redirect_to_gate_locked(h, v);
  }

  bool poll_locked() noexcept {
    held_back_ = false;
    if (failed() || handle_ == VK_NULL_HANDLE) return false;
    const detail::poll_scope scope;  // timepoint callbacks run under mutex_
    std::uint64_t c = 0;
    const VkResult r = device_->fn().get_semaphore_counter_value(device_->vk_device(), handle_, &c);
    if (r != VK_SUCCESS) {
      status s = device_->check(r, "poll: vkGetSemaphoreCounterValue failed");
      if (r != VK_ERROR_DEVICE_LOST) (void)base::fail(s.error_value());
      return false;
    }
    const std::uint64_t before = base::value();
    if (c <= before) return false;
    std::size_t done = 0;
    while (done < issued_.size() && issued_[done].value <= c) {
      // The signal issued before it in its batch first (file comment):
      // this value and every later one wait for the next poll.
      if (!gate_open(issued_[done])) {
        held_back_ = true;
        device_->note_held_back();
        break;
      }
      const std::uint64_t v = issued_[done++].value;
      // device_signal: a value that does not increase means the device
      // broke the promised order; that fails the semaphore (docs/semaphores.md).
      if (v > base::value()) (void)base::device_signal(v);
    }
    issued_.pop_front(done);
    issued_size_.store(issued_.size(), std::memory_order_relaxed);
    // Anything beyond what we issued came from outside: tainted. Not past
    // a value held back (it would be reached without its frontier).
    if (!held_back_ && c > base::value() && !failed()) (void)base::signal_external(c);
    return base::value() != before;
  }

  device* device_;
  VkSemaphore handle_ = VK_NULL_HANDLE;
  std::atomic<bool> external_{false};
  std::atomic<std::uint64_t> sent_{0};
  bool exportable_ = false;
  /// A queue's epoch timeline: only its queue signals it.
  bool internal_ = false;
  bool attached_ = false;
  status setup_{};
  detail::device_member member_{};
  mutable std::mutex mutex_;
  std::atomic<std::size_t> issued_size_{0};  // issued_.size(), readable without the lock
  /// Uses by batches held on the host (note_held_use); zero at destruction.
  std::atomic<std::uint32_t> held_uses_{0};
  /// Under mutex_: the last poll_locked held a value back for its gate.
  bool held_back_ = false;
  causal::detail::inline_ring<issued_value, inline_issued> issued_;
};

}  // namespace vulkan

CAUSAL_END_NAMESPACE
