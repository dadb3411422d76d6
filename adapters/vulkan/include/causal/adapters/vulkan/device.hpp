// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// device: the Vulkan adapter's per-VkDevice context — the function table it
// calls through, the hardware queues its causal queues share, host
// completion (poll, or a waiter thread), and device loss.
//
// Model. A `vulkan::device` wraps a VkDevice the caller created and owns
// (with the timelineSemaphore feature enabled, and synchronization2 when
// `device_options::synchronization2` says so). Every `vulkan::semaphore` and
// `vulkan::queue` made on it registers a small node (`detail::device_member`:
// function pointers plus an intrusive link, no virtuals) so that the device
// can, without knowing their types:
//   - poll: read each device timeline counter and advance the host half
//     (host semaphores reach their values with the recorded frontiers;
//     queues retire epochs into the completion tracker). The signals of one
//     batch are reached in issue order, its epoch after them (a value waits
//     for its batch's earlier signal: <causal/adapters/vulkan/semaphore.hpp>),
//     so a pass repeats while it held a value back and moved another;
//   - kick: retry submissions a queue holds on the host (a wait whose signal
//     is not submitted yet; see <causal/adapters/vulkan/queue.hpp>);
//   - lose: after VK_ERROR_DEVICE_LOST from any call, fail every semaphore
//     and queue with `errc::device_lost` (sticky), so no host waiter, no
//     timepoint and no tracker waiter is stranded.
// At setup it asks the physical device for the synchronization2 feature
// (without it, queues use vkQueueSubmit), maxTimelineSemaphoreValueDifference
// (signals and waits past it are refused) and its queue family count. It
// also keeps the timeline and command pool of a queue destroyed with
// batches still pending past its teardown deadline (abandon()) and
// releases them in its destructor, and those of every other destroyed
// queue until the driver is provably done with them (retire(): a fence
// behind the queue's last batch on its vk::Queue, checked without
// blocking by poll() and by later retirements), so that destroying a queue
// never waits for other queues' work on a shared vk::Queue.
// Completion is driven either by calling `poll()` (from any thread) or by
// `start_waiter()`, a thread that, while work is in flight, blocks in
// vkWaitSemaphores on the lowest unreached value of one member at a time
// (rotating, 1 ms slices) and polls after each; with nothing in flight it
// sleeps until a queue submits. Semaphores marked external are polled every
// 2 ms by the waiter, since nobody tells it which value to wait for.
//
// Thread safety: every member may be called concurrently, except the
//                constructor and destructor. Timepoint callbacks of vulkan
//                semaphores run on the polling thread with the device's
//                member lock held: they must not create or destroy vulkan
//                semaphores or queues of the same device, submit to its
//                queues, or host-signal the semaphore that fired them.
// Memory order:  poll() reads device counters and then advances host
//                semaphores (release, see <causal/semaphore.hpp>) and the
//                tracker (release); the lost flag is released by lose() and
//                acquired by lost().
// Blocking/allocation: construction, hardware_queue(), start_waiter(),
//                attach/detach and abandon allocate or may; poll() and kick_all() never
//                allocate and take the member lock (a recursive mutex); the
//                waiter thread sleeps in vkWaitSemaphores.
// Size:          a few hundred bytes plus one heap node per hardware queue.
// Configuration: device_options (submit path, synchronization2, external
//                semaphore fds, completion tracker, proc-addr loader, queue
//                teardown deadline).
// See also:      docs/semaphores.md and docs/queues.md and docs/adapters.md,
//                <causal/adapters/vulkan/semaphore.hpp>,
//                <causal/adapters/vulkan/queue.hpp>, adapters/vulkan/README.md.
#pragma once

#include <causal/completion.hpp>
#include <causal/config.hpp>
#include <causal/result.hpp>

#include <vulkan/vulkan.hpp>

#include <boost/intrusive/list.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

CAUSAL_BEGIN_NAMESPACE

/// The Vulkan adapter (docs/adapters.md). Named `vulkan`, not `vk`, so that `vk::`
/// inside it still means Vulkan-Hpp.
namespace vulkan {

//===-- options and the function table --------------------------------------===//

/// Which submit call a queue uses.
enum class submit_path : std::uint8_t {
  automatic,  ///< vkQueueSubmit2 when synchronization2 is enabled, else legacy
  submit2,    ///< vkQueueSubmit2 (VK 1.3 or VK_KHR_synchronization2)
  legacy,     ///< vkQueueSubmit + VkTimelineSemaphoreSubmitInfo
};

/// The device-level entry points the adapter calls, loaded once through
/// vkGetDeviceProcAddr. Public and writable so tests can inject faults
/// (e.g. a queue_submit2 that returns VK_ERROR_DEVICE_LOST). Entries marked
/// optional may be null.
struct dispatch {
  PFN_vkQueueSubmit queue_submit = nullptr;
  PFN_vkQueueSubmit2 queue_submit2 = nullptr;  ///< optional (core 1.3 or KHR)
  PFN_vkQueueWaitIdle queue_wait_idle = nullptr;
  PFN_vkGetDeviceQueue get_device_queue = nullptr;
  PFN_vkGetSemaphoreCounterValue get_semaphore_counter_value = nullptr;
  PFN_vkWaitSemaphores wait_semaphores = nullptr;
  PFN_vkSignalSemaphore signal_semaphore = nullptr;
  PFN_vkCreateSemaphore create_semaphore = nullptr;
  PFN_vkDestroySemaphore destroy_semaphore = nullptr;
  PFN_vkCreateFence create_fence = nullptr;
  PFN_vkDestroyFence destroy_fence = nullptr;
  PFN_vkGetFenceStatus get_fence_status = nullptr;
  PFN_vkWaitForFences wait_for_fences = nullptr;
  PFN_vkGetSemaphoreFdKHR get_semaphore_fd = nullptr;        ///< optional
  PFN_vkImportSemaphoreFdKHR import_semaphore_fd = nullptr;  ///< optional
  PFN_vkCreateCommandPool create_command_pool = nullptr;
  PFN_vkDestroyCommandPool destroy_command_pool = nullptr;
  PFN_vkAllocateCommandBuffers allocate_command_buffers = nullptr;
  PFN_vkBeginCommandBuffer begin_command_buffer = nullptr;
  PFN_vkEndCommandBuffer end_command_buffer = nullptr;
  PFN_vkCmdPipelineBarrier cmd_pipeline_barrier = nullptr;
  PFN_vkCmdPipelineBarrier2 cmd_pipeline_barrier2 = nullptr;  ///< optional
  PFN_vkCreateBuffer create_buffer = nullptr;
  PFN_vkDestroyBuffer destroy_buffer = nullptr;
  PFN_vkGetBufferMemoryRequirements get_buffer_memory_requirements = nullptr;
  PFN_vkAllocateMemory allocate_memory = nullptr;
  PFN_vkFreeMemory free_memory = nullptr;
  PFN_vkBindBufferMemory bind_buffer_memory = nullptr;
  PFN_vkMapMemory map_memory = nullptr;
  PFN_vkUnmapMemory unmap_memory = nullptr;
  PFN_vkFlushMappedMemoryRanges flush_mapped_memory_ranges = nullptr;
  PFN_vkInvalidateMappedMemoryRanges invalidate_mapped_memory_ranges = nullptr;
  // Instance level, for the physical device.
  PFN_vkGetPhysicalDeviceMemoryProperties get_physical_device_memory_properties = nullptr;
  PFN_vkGetPhysicalDeviceProperties get_physical_device_properties = nullptr;
  /// optional (VK 1.1 or VK_KHR_get_physical_device_properties2)
  PFN_vkGetPhysicalDeviceFeatures2 get_physical_device_features2 = nullptr;
  /// optional (as get_physical_device_features2)
  PFN_vkGetPhysicalDeviceProperties2 get_physical_device_properties2 = nullptr;
  PFN_vkGetPhysicalDeviceQueueFamilyProperties get_physical_device_queue_family_properties = nullptr;
};

/// How the caller created the VkDevice, and what the adapter may use.
struct device_options {
  /// The synchronization2 feature is enabled (VK 1.3 core or the KHR
  /// extension). Vulkan cannot be asked which features a device enabled,
  /// only which the physical device has, so the adapter does not assume
  /// it: false by default (vkQueueSubmit and vkCmdPipelineBarrier, valid
  /// on any device with timeline semaphores); vulkan::context's
  /// options_for_device() sets it when the context enabled the feature.
  /// When the physical device lacks synchronization2, a true claim is
  /// ignored (submit_path::automatic falls back to vkQueueSubmit;
  /// submit_path::submit2 fails setup).
  bool synchronization2 = false;
  /// VK_KHR_external_semaphore_fd is enabled (export/import by fd).
  bool external_semaphore_fd = false;
  submit_path path = submit_path::automatic;
  /// Queues register their axes here and retire epochs into it (optional;
  /// must outlive the device).
  completion_tracker* tracker = nullptr;
  /// The loader entry point; null means the linked vkGetInstanceProcAddr.
  PFN_vkGetInstanceProcAddr get_instance_proc_addr = nullptr;
  /// How long a queue's destructor waits for the batches it sent to the
  /// driver. Past it the queue gives up instead of hanging (a batch may
  /// wait for an external value that never arrives): see ~queue in
  /// <causal/adapters/vulkan/queue.hpp>.
  std::chrono::milliseconds queue_teardown_timeout{10'000};
};

/// Converts a VkResult into a causal error (ok for VK_SUCCESS).
[[nodiscard]] inline status to_status(VkResult r, const char* what) noexcept {
  switch (r) {
    case VK_SUCCESS: return status{};
    case VK_ERROR_DEVICE_LOST: return error{errc::device_lost, what};
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return error{errc::resource_exhausted, what};
    case VK_TIMEOUT: return error{errc::timeout, what};
    default:
      return error{errc::failed_precondition, what,
                   static_cast<std::uint64_t>(static_cast<std::int64_t>(r))};
  }
}

class device;

namespace detail {

/// How many polls on this thread are reaching host semaphores with a lock
/// held -- the member lock (device::poll) or a semaphore's own -- so that
/// timepoint callbacks run inside them. A host signal made from such a
/// callback must not poll the device again (it would take those locks a
/// second time); see vulkan::semaphore::signal.
inline thread_local int polls_on_this_thread = 0;

/// Counts one poll on this thread for its scope.
class poll_scope {
 public:
  poll_scope() noexcept { ++polls_on_this_thread; }
  poll_scope(const poll_scope&) = delete;
  poll_scope& operator=(const poll_scope&) = delete;
  ~poll_scope() { --polls_on_this_thread; }
};

/// A device's view of one semaphore or queue made on it: type-erased by
/// function pointers set once at construction (never virtual).
struct device_member
    : boost::intrusive::list_base_hook<boost::intrusive::link_mode<boost::intrusive::normal_link>> {
  /// The semaphore or queue this node belongs to.
  void* owner = nullptr;
  /// Advances host state from device counters; true when something moved.
  bool (*poll)(device_member&) noexcept = nullptr;
  /// Fails the member for good (device loss).
  void (*fail)(device_member&, const error&) noexcept = nullptr;
  /// Queues only: retries held submissions (may be null).
  void (*kick)(device_member&) noexcept = nullptr;
  /// The lowest unreached value the waiter thread should wait for, if any.
  bool (*next_wait)(device_member&, VkSemaphore&, std::uint64_t&) noexcept = nullptr;
  /// Forgets every gate on the semaphore passed (being destroyed): values
  /// issued after its signal in a batch stop waiting for it (may be null).
  void (*forget_gate)(device_member&, const void*) noexcept = nullptr;
  /// True for external semaphores: values appear without a submission we
  /// made, so the waiter polls them on a timer. (Set by any thread: relaxed,
  /// a late read only delays the next poll by one idle sleep.)
  std::atomic<bool> polled_blindly{false};
};

using member_list =
    boost::intrusive::list<device_member, boost::intrusive::constant_time_size<false>>;

}  // namespace detail

//===-- hardware_queue -------------------------------------------------------===//

/// One vk::Queue, shared by any number of causal queues. Vulkan requires
/// host access to a VkQueue to be externally synchronised, so every submit
/// to it takes `submit_mutex()`.
class hardware_queue {
 public:
  hardware_queue(vk::Queue q, std::uint32_t family, std::uint32_t index) noexcept
      : queue_(q), family_(family), index_(index) {}
  hardware_queue(const hardware_queue&) = delete;
  hardware_queue& operator=(const hardware_queue&) = delete;

  [[nodiscard]] vk::Queue handle() const noexcept { return queue_; }
  [[nodiscard]] std::uint32_t family() const noexcept { return family_; }
  [[nodiscard]] std::uint32_t index() const noexcept { return index_; }
  /// Serialises host access to the VkQueue (vkQueueSubmit*, vkQueueWaitIdle).
  [[nodiscard]] std::mutex& submit_mutex() noexcept { return mutex_; }
  /// How many causal queues are bound to it now.
  [[nodiscard]] std::uint32_t users() const noexcept {
    return users_.load(std::memory_order_relaxed);
  }
  void add_user() noexcept { users_.fetch_add(1, std::memory_order_relaxed); }
  void remove_user() noexcept { users_.fetch_sub(1, std::memory_order_relaxed); }

 private:
  vk::Queue queue_;
  std::uint32_t family_;
  std::uint32_t index_;
  std::mutex mutex_;
  std::atomic<std::uint32_t> users_{0};
};

//===-- device ----------------------------------------------------------------===//

/// The adapter's context for one VkDevice; see the file comment.
class device {
 public:
  /// Loads the function table.
  /// Failures leave the device unusable: see setup_status().
  device(vk::Instance instance, vk::PhysicalDevice physical, vk::Device handle,
         device_options options = {}) noexcept
      : instance_(instance), physical_(physical), device_(handle), options_(options) {
    setup_ = load();
  }

  device(const device&) = delete;
  device& operator=(const device&) = delete;

  /// Stops the waiter thread and releases the objects of queues that were
  /// destroyed with work still pending (see abandon()): those whose
  /// timeline has reached the last value sent are destroyed, the others
  /// are leaked, since destroying objects pending work uses is undefined
  /// behaviour. Objects of queues retired normally (retire()) are destroyed
  /// once their fence signals, waited for at most
  /// device_options::queue_teardown_timeout in all; past it they are
  /// leaked too. Idle the VkDevice first (vkDeviceWaitIdle) when that work
  /// can still finish. Precondition: every semaphore, queue and buffer pool
  /// made on this device is gone.
  ~device() {
    stop_waiter();
    // Semaphores and queues keep a pointer to their device and detach in
    // their destructors: one still attached would use a dead device.
    // Refused loudly in every build mode (docs/lifetimes.md).
    if (!members_.empty()) [[unlikely]] {
      std::size_t queues = 0, semaphores = 0;
      for (const detail::device_member& m : members_) ++(m.kick != nullptr ? queues : semaphores);
      std::fprintf(stderr,
                   "causal: vulkan::device destroyed while %zu queue(s) and %zu semaphore(s) "
                   "still use it; destroy them before their device (docs/lifetimes.md)\n",
                   queues, semaphores);
      std::fflush(stderr);
      std::abort();
    }
    if (!retired_.empty()) {
      // Every queue is gone: what these fences wait behind is work nobody
      // can add to any more. Bounded, like a queue's own teardown.
      const auto deadline = std::chrono::steady_clock::now() + options_.queue_teardown_timeout;
      for (const retired& r : retired_) {
        const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(
            deadline - std::chrono::steady_clock::now());
        const auto timeout = static_cast<std::uint64_t>(left.count() > 0 ? left.count() : 0);
        (void)fn_.wait_for_fences(vk_device(), 1, &r.fence, VK_TRUE, timeout);
      }
      reap_retired();  // what is still pending stays: leaked, never destroyed under work
    }
    for (const abandoned& a : abandoned_) {
      std::uint64_t reached = 0;
      if (fn_.get_semaphore_counter_value(vk_device(), a.timeline, &reached) != VK_SUCCESS ||
          reached < a.last_value) {
        continue;  // still in use by the device, or the device is gone: leak
      }
      fn_.destroy_semaphore(vk_device(), a.timeline, nullptr);
      if (a.command_pool != VK_NULL_HANDLE) fn_.destroy_command_pool(vk_device(), a.command_pool, nullptr);
    }
  }

  //===-- observers -------------------------------------------------------===//

  /// Ok, or why the device is unusable (a missing entry point, ...).
  [[nodiscard]] status setup_status() const noexcept { return setup_; }
  [[nodiscard]] vk::Device handle() const noexcept { return device_; }
  [[nodiscard]] VkDevice vk_device() const noexcept { return static_cast<VkDevice>(device_); }
  [[nodiscard]] vk::PhysicalDevice physical_device() const noexcept { return physical_; }
  [[nodiscard]] const device_options& options() const noexcept { return options_; }
  /// The function table; writable for fault injection in tests.
  [[nodiscard]] dispatch& fn() noexcept { return fn_; }
  [[nodiscard]] const dispatch& fn() const noexcept { return fn_; }
  [[nodiscard]] completion_tracker* tracker() const noexcept { return options_.tracker; }

  /// True when queues submit with vkQueueSubmit2.
  [[nodiscard]] bool uses_submit2() const noexcept { return submit2_; }
  /// True when the physical device has the synchronization2 feature
  /// (VkPhysicalDeviceSynchronization2Features, VK 1.3 or the KHR extension).
  [[nodiscard]] bool synchronization2_supported() const noexcept { return synchronization2_supported_; }
  /// VkPhysicalDeviceTimelineSemaphoreProperties::maxTimelineSemaphoreValueDifference:
  /// how far a signal or wait may be from a timeline's current value.
  /// The spec's minimum (2^31 - 1) when the device cannot be asked.
  [[nodiscard]] std::uint64_t max_timeline_value_difference() const noexcept {
    return max_timeline_difference_;
  }
  /// Queue families of the physical device
  /// (vkGetPhysicalDeviceQueueFamilyProperties).
  [[nodiscard]] std::uint32_t queue_family_count() const noexcept { return queue_family_count_; }
  /// True when semaphores can be exported and imported as fds.
  [[nodiscard]] bool has_external_semaphore_fd() const noexcept {
    return options_.external_semaphore_fd && fn_.get_semaphore_fd != nullptr &&
           fn_.import_semaphore_fd != nullptr;
  }

  /// The device-loss error once lost(), else nothing. acquire: pairs with
  /// the release in lose(), which publishes lost_error_.
  [[nodiscard]] std::optional<error> lost() const noexcept {
    if (lost_.load(std::memory_order_acquire)) return lost_error_;
    return std::nullopt;
  }

  //===-- hardware queues -------------------------------------------------===//

  /// Returns the shared wrapper of the VkQueue (family, index), fetching it
  /// with vkGetDeviceQueue the first time. The caller must have asked for
  /// that queue when creating the device. Allocates once per queue.
  result<hardware_queue*> get_hardware_queue(std::uint32_t family, std::uint32_t index) noexcept {
    if (!setup_) return setup_.error_value();
    std::lock_guard lock(members_mutex_);
    for (const auto& q : hardware_queues_) {
      if (q->family() == family && q->index() == index) return q.get();
    }
    VkQueue raw = VK_NULL_HANDLE;
    fn_.get_device_queue(vk_device(), family, index, &raw);
    if (raw == VK_NULL_HANDLE) {
      return error{errc::invalid_argument, "get_hardware_queue: no such VkQueue", family};
    }
    try {
      hardware_queues_.push_back(std::make_unique<hardware_queue>(vk::Queue(raw), family, index));
    } catch (...) {
      return error{errc::resource_exhausted, "get_hardware_queue: out of memory"};
    }
    return hardware_queues_.back().get();
  }

  //===-- completion ------------------------------------------------------===//

  /// Reads every member's device counter and advances the host side
  /// (semaphore values with their frontiers, queue epochs, the tracker);
  /// then retries held submissions if anything moved. A pass that held a
  /// value back for its batch's earlier signal (see
  /// <causal/adapters/vulkan/semaphore.hpp>) and moved something else is
  /// repeated, so one call reaches everything the device has completed.
  /// Returns the device loss error, if any. Never allocates.
  status poll() noexcept {
    bool moved = false;
    {
      std::lock_guard lock(members_mutex_);
      const detail::poll_scope scope;
      for (;;) {
        // relaxed: a counter compared with itself; the hold-backs of this
        // pass are this thread's own (one by another thread, a semaphore's
        // own poll, costs at most one more pass).
        const std::uint64_t held_before = held_back_.load(std::memory_order_relaxed);
        bool pass = false;
        for (detail::device_member& m : members_) pass = m.poll(m) || pass;
        moved = moved || pass;
        if (!pass || held_back_.load(std::memory_order_relaxed) == held_before) break;
      }
    }
    if (moved) kick_all();
    // relaxed: a stale zero only leaves retired objects for the next poll.
    if (retired_count_.load(std::memory_order_relaxed) != 0) {
      std::lock_guard lock(members_mutex_);
      reap_retired();
    }
    if (auto e = lost(); e) return *e;
    return status{};
  }

  /// Starts the waiter thread (idempotent). Errors: the device is lost or
  /// unusable, or the thread cannot be started (`resource_exhausted`).
  status start_waiter() noexcept {
    if (!setup_) return setup_;
    if (auto e = lost(); e) return *e;
    std::lock_guard lock(waiter_control_);
    if (waiter_.joinable()) return status{};
    stop_.store(false, std::memory_order_relaxed);
    try {
      waiter_ = std::thread([this] { waiter_loop(); });
    } catch (...) {
      return error{errc::resource_exhausted, "start_waiter: cannot start a thread"};
    }
    waiter_running_.store(true, std::memory_order_release);
    return status{};
  }

  /// Stops and joins the waiter thread (idempotent).
  void stop_waiter() noexcept {
    std::lock_guard lock(waiter_control_);
    if (!waiter_.joinable()) return;
    stop_.store(true, std::memory_order_release);
    wake_waiter();
    waiter_.join();
    waiter_running_.store(false, std::memory_order_release);
  }

  [[nodiscard]] bool waiter_running() const noexcept {
    return waiter_running_.load(std::memory_order_acquire);
  }

  //===-- device loss -----------------------------------------------------===//

  /// Marks the device lost with `e` (first error wins) and fails every
  /// semaphore and queue made on it; held submissions are then dropped and
  /// their signals failed. Safe to call from any thread, repeatedly.
  void lose(error e) noexcept {
    {
      std::lock_guard lock(members_mutex_);
      if (!lost_.load(std::memory_order_relaxed)) {
        lost_error_ = e;
        lost_.store(true, std::memory_order_release);  // pairs with lost()
      }
      const error recorded = lost_error_;
      for (detail::device_member& m : members_) m.fail(m, recorded);
    }
    kick_all();
    wake_waiter();
  }

  /// Returns `r` as a status; VK_ERROR_DEVICE_LOST also loses the device.
  status check(VkResult r, const char* what) noexcept {
    status s = to_status(r, what);
    if (r == VK_ERROR_DEVICE_LOST) lose(s.error_value());
    return s;
  }

  //===-- for semaphores and queues (adapter internals) -------------------===//

  /// Registers a member; if the device is already lost it is failed at once.
  void attach(detail::device_member& m) noexcept {
    std::lock_guard lock(members_mutex_);
    members_.push_back(m);
    if (lost_.load(std::memory_order_relaxed)) m.fail(m, lost_error_);
  }

  /// Unregisters a member and makes sure the waiter thread is no longer
  /// waiting on its semaphore, so the caller may destroy it.
  void detach(detail::device_member& m) noexcept {
    {
      std::lock_guard lock(members_mutex_);
      members_.erase(members_.iterator_to(m));
    }
    if (waiter_running()) {
      // The waiter holds wait_mutex_ from choosing what to wait for until
      // its vkWaitSemaphores returns (at most busy_slice); once we get it,
      // no wait names m.
      std::lock_guard wait_lock(wait_mutex_);
    }
  }

  /// Called by a semaphore being destroyed: every member forgets the gates
  /// on it (values issued after its signal in a batch; see
  /// <causal/adapters/vulkan/semaphore.hpp>), under the member lock, so no
  /// poll and no choice of the waiter thread reads it from then on.
  void forget_gate(const void* gone) noexcept {
    std::lock_guard lock(members_mutex_);
    for (detail::device_member& m : members_) {
      if (m.forget_gate != nullptr) m.forget_gate(m, gone);
    }
  }

  /// Counts a value a poll held back for its batch's earlier signal
  /// (device::poll repeats a pass that did).
  void note_held_back() noexcept { held_back_.fetch_add(1, std::memory_order_relaxed); }

  /// Retries every queue's held submissions (try-lock based: never blocks
  /// on a queue another thread is using; that thread retries instead).
  void kick_all() noexcept {
    if (!any_held()) return;
    std::lock_guard lock(members_mutex_);
    for (detail::device_member& m : members_) {
      if (m.kick != nullptr) m.kick(m);
    }
  }

  /// Queues report when they start (+1) or stop (-1) holding submissions.
  void held_changed(int delta) noexcept {
    // seq_cst: with the semaphores' locks, this orders "I hold a
    // submission" before the holder's retry, and a signaller's announce
    // before its any_held() check (see queue::submit).
    held_.fetch_add(delta, std::memory_order_seq_cst);
  }
  /// True when some queue holds submissions on the host.
  [[nodiscard]] bool any_held() const noexcept { return held_.load(std::memory_order_seq_cst) > 0; }

  /// Takes over the epoch timeline and command pool of a queue destroyed
  /// while the device may still run batches that use them (its teardown
  /// deadline passed): the device destroys them in its destructor once the
  /// timeline shows `last_value`. Allocates; if memory runs out they are
  /// leaked (never destroyed under pending work).
  void abandon(VkSemaphore timeline, std::uint64_t last_value, VkCommandPool command_pool) noexcept {
    std::lock_guard lock(members_mutex_);
    try {
      abandoned_.push_back(abandoned{timeline, last_value, command_pool});
    } catch (...) {
    }
  }

  /// Objects taken over by abandon() and not released yet.
  [[nodiscard]] std::size_t abandoned_count() const noexcept {
    std::lock_guard lock(members_mutex_);
    return abandoned_.size();
  }

  /// Takes over the epoch timeline and command pool of a queue whose own
  /// batches have all completed (its teardown): the driver may still be
  /// finishing with them (a timeline's value is visible before the driver
  /// lets go of the object), so they are destroyed only once a fence
  /// submitted behind them on `hw` signals. Nothing here waits: the fence
  /// is checked by poll(), by later retirements and by the destructor, so
  /// a queue's teardown never waits for other queues' work on a shared
  /// vk::Queue (which may wait for a value that comes late or never).
  /// Returns false, taking nothing, when the fence cannot be made or
  /// submitted (the device is lost, or out of memory): the caller then
  /// destroys them itself (after a loss nothing runs any more) or idles.
  bool retire(VkSemaphore timeline, VkCommandPool command_pool, hardware_queue& hw) noexcept {
    const VkFenceCreateInfo info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO, nullptr, 0};
    VkFence fence = VK_NULL_HANDLE;
    if (fn_.create_fence(vk_device(), &info, nullptr, &fence) != VK_SUCCESS) return false;
    VkResult r;
    {
      // No batches, only the fence: it signals once everything submitted to
      // this vk::Queue before it has completed. (The submit lock is never
      // held with the member lock: a submitter takes them one at a time.)
      std::lock_guard submit(hw.submit_mutex());
      r = fn_.queue_submit(static_cast<VkQueue>(hw.handle()), 0, nullptr, fence);
    }
    if (r != VK_SUCCESS) {
      if (r == VK_ERROR_DEVICE_LOST) lose(error{errc::device_lost, "vkQueueSubmit (queue retirement)"});
      fn_.destroy_fence(vk_device(), fence, nullptr);
      return false;
    }
    std::lock_guard lock(members_mutex_);
    try {
      retired_.push_back(retired{timeline, command_pool, fence});
    } catch (...) {
      // Out of memory with the fence already submitted: wait for it here,
      // bounded; past the bound the objects are leaked, never destroyed
      // under work.
      const auto bound = std::chrono::duration_cast<std::chrono::nanoseconds>(
          options_.queue_teardown_timeout);
      if (fn_.wait_for_fences(vk_device(), 1, &fence, VK_TRUE, static_cast<std::uint64_t>(bound.count())) ==
          VK_SUCCESS) {
        fn_.destroy_semaphore(vk_device(), timeline, nullptr);
        if (command_pool != VK_NULL_HANDLE) fn_.destroy_command_pool(vk_device(), command_pool, nullptr);
        fn_.destroy_fence(vk_device(), fence, nullptr);
      }
      return true;
    }
    retired_count_.store(retired_.size(), std::memory_order_relaxed);
    reap_retired();
    return true;
  }

  /// Objects taken over by retire() whose fence has not been seen signalled.
  [[nodiscard]] std::size_t retired_count() const noexcept {
    std::lock_guard lock(members_mutex_);
    return retired_.size();
  }

  /// Tells the waiter thread (if running) that new work was submitted that
  /// its current wait set may not cover.
  void notify_submitted() noexcept {
    if (waiter_running()) wake_waiter();
  }

 private:
  status load() noexcept {
    PFN_vkGetInstanceProcAddr gipa = options_.get_instance_proc_addr;
#if !defined(VK_NO_PROTOTYPES)
    if (gipa == nullptr) gipa = &vkGetInstanceProcAddr;
#endif
    if (gipa == nullptr) {
      return error{errc::invalid_argument,
                   "vulkan::device: VK_NO_PROTOTYPES is set; pass get_instance_proc_addr"};
    }
    if (!instance_ || !physical_ || !device_) {
      return error{errc::invalid_argument, "vulkan::device: null instance, physical device or device"};
    }
    const VkInstance inst = static_cast<VkInstance>(instance_);
    auto gdpa = reinterpret_cast<PFN_vkGetDeviceProcAddr>(gipa(inst, "vkGetDeviceProcAddr"));
    if (gdpa == nullptr) return error{errc::failed_precondition, "vulkan::device: no vkGetDeviceProcAddr"};
    const VkDevice dev = vk_device();
    bool missing = false;
    auto dload = [&](auto& slot, const char* name, const char* alt = nullptr, bool required = true) {
      auto p = gdpa(dev, name);
      if (p == nullptr && alt != nullptr) p = gdpa(dev, alt);
      slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(p);
      if (p == nullptr && required) missing = true;
    };
    auto iload = [&](auto& slot, const char* name) {
      auto p = gipa(inst, name);
      slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(p);
      if (p == nullptr) missing = true;
    };
    dload(fn_.queue_submit, "vkQueueSubmit");
    dload(fn_.queue_submit2, "vkQueueSubmit2", "vkQueueSubmit2KHR", false);
    dload(fn_.queue_wait_idle, "vkQueueWaitIdle");
    dload(fn_.get_device_queue, "vkGetDeviceQueue");
    dload(fn_.get_semaphore_counter_value, "vkGetSemaphoreCounterValue",
          "vkGetSemaphoreCounterValueKHR");
    dload(fn_.wait_semaphores, "vkWaitSemaphores", "vkWaitSemaphoresKHR");
    dload(fn_.signal_semaphore, "vkSignalSemaphore", "vkSignalSemaphoreKHR");
    dload(fn_.create_semaphore, "vkCreateSemaphore");
    dload(fn_.destroy_semaphore, "vkDestroySemaphore");
    dload(fn_.create_fence, "vkCreateFence");
    dload(fn_.destroy_fence, "vkDestroyFence");
    dload(fn_.get_fence_status, "vkGetFenceStatus");
    dload(fn_.wait_for_fences, "vkWaitForFences");
    if (options_.external_semaphore_fd) {
      dload(fn_.get_semaphore_fd, "vkGetSemaphoreFdKHR", nullptr, false);
      dload(fn_.import_semaphore_fd, "vkImportSemaphoreFdKHR", nullptr, false);
    }
    dload(fn_.create_command_pool, "vkCreateCommandPool");
    dload(fn_.destroy_command_pool, "vkDestroyCommandPool");
    dload(fn_.allocate_command_buffers, "vkAllocateCommandBuffers");
    dload(fn_.begin_command_buffer, "vkBeginCommandBuffer");
    dload(fn_.end_command_buffer, "vkEndCommandBuffer");
    dload(fn_.cmd_pipeline_barrier, "vkCmdPipelineBarrier");
    dload(fn_.cmd_pipeline_barrier2, "vkCmdPipelineBarrier2", "vkCmdPipelineBarrier2KHR", false);
    dload(fn_.create_buffer, "vkCreateBuffer");
    dload(fn_.destroy_buffer, "vkDestroyBuffer");
    dload(fn_.get_buffer_memory_requirements, "vkGetBufferMemoryRequirements");
    dload(fn_.allocate_memory, "vkAllocateMemory");
    dload(fn_.free_memory, "vkFreeMemory");
    dload(fn_.bind_buffer_memory, "vkBindBufferMemory");
    dload(fn_.map_memory, "vkMapMemory");
    dload(fn_.unmap_memory, "vkUnmapMemory");
    dload(fn_.flush_mapped_memory_ranges, "vkFlushMappedMemoryRanges");
    dload(fn_.invalidate_mapped_memory_ranges, "vkInvalidateMappedMemoryRanges");
    iload(fn_.get_physical_device_memory_properties, "vkGetPhysicalDeviceMemoryProperties");
    iload(fn_.get_physical_device_properties, "vkGetPhysicalDeviceProperties");
    iload(fn_.get_physical_device_queue_family_properties, "vkGetPhysicalDeviceQueueFamilyProperties");
    auto iload_optional = [&](auto& slot, const char* name, const char* alt) {
      auto p = gipa(inst, name);
      if (p == nullptr) p = gipa(inst, alt);
      slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(p);
    };
    iload_optional(fn_.get_physical_device_features2, "vkGetPhysicalDeviceFeatures2",
                   "vkGetPhysicalDeviceFeatures2KHR");
    iload_optional(fn_.get_physical_device_properties2, "vkGetPhysicalDeviceProperties2",
                   "vkGetPhysicalDeviceProperties2KHR");
    if (missing) {
      return error{errc::failed_precondition,
                   "vulkan::device: a required entry point is missing (timeline semaphores need "
                   "VK 1.2 or VK_KHR_timeline_semaphore)"};
    }
    query_physical_device();
    const bool can_submit2 = options_.synchronization2 && synchronization2_supported_ &&
                             fn_.queue_submit2 != nullptr && fn_.cmd_pipeline_barrier2 != nullptr;
    switch (options_.path) {
      case submit_path::automatic: submit2_ = can_submit2; break;
      case submit_path::legacy: submit2_ = false; break;
      case submit_path::submit2:
        if (!can_submit2) {
          return error{errc::failed_precondition,
                       synchronization2_supported_
                           ? "vulkan::device: submit_path::submit2 needs synchronization2 enabled "
                             "(device_options) and vkQueueSubmit2"
                           : "vulkan::device: submit_path::submit2, but the physical device has "
                             "no synchronization2 feature"};
        }
        submit2_ = true;
        break;
    }
    return status{};
  }

  /// Asks the physical device what the adapter relies on: the
  /// synchronization2 feature, the timeline value-difference limit and the
  /// number of queue families. Without vkGetPhysicalDevice*2, assumes no
  /// synchronization2 and the spec's minimum limit.
  void query_physical_device() noexcept {
    const auto physical = static_cast<VkPhysicalDevice>(physical_);
    fn_.get_physical_device_queue_family_properties(physical, &queue_family_count_, nullptr);
    if (fn_.get_physical_device_features2 != nullptr) {
      VkPhysicalDeviceSynchronization2Features sync2{
          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SYNCHRONIZATION_2_FEATURES, nullptr, VK_FALSE};
      VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &sync2, {}};
      fn_.get_physical_device_features2(physical, &features);
      synchronization2_supported_ = sync2.synchronization2 == VK_TRUE;
    }
    if (fn_.get_physical_device_properties2 != nullptr) {
      VkPhysicalDeviceTimelineSemaphoreProperties timeline{
          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_PROPERTIES, nullptr, 0};
      VkPhysicalDeviceProperties2 properties{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                             &timeline, {}};
      fn_.get_physical_device_properties2(physical, &properties);
      if (timeline.maxTimelineSemaphoreValueDifference != 0) {
        max_timeline_difference_ = timeline.maxTimelineSemaphoreValueDifference;
      }
    }
  }

  void wake_waiter() noexcept {
    {
      std::lock_guard lock(idle_mutex_);
      wake_pending_ = true;
    }
    idle_cv_.notify_one();
  }

  // The waiter waits on one semaphore at a time (VK_SEMAPHORE_WAIT_ANY_BIT
  // would be the natural call, but the Khronos validation layer 1.3.239
  // mistracks timeline values after a wait-any and reports a bogus
  // "Timeout waiting for timeline semaphore state" error), rotating over
  // the members with work in flight in slices of `busy_slice`; with nothing
  // in flight it sleeps on a condition variable until a submission.
  static constexpr std::uint64_t busy_slice_ns = 1'000'000;  // 1 ms
  static constexpr auto idle_sleep = std::chrono::milliseconds(100);
  static constexpr auto blind_poll = std::chrono::milliseconds(2);

  void waiter_loop() noexcept {
    std::size_t turn = 0;
    while (!stop_.load(std::memory_order_acquire)) {
      VkResult r = VK_TIMEOUT;
      bool idle = true;
      bool blind = false;
      {
        std::lock_guard wait_lock(wait_mutex_);
        VkSemaphore handle = VK_NULL_HANDLE;
        std::uint64_t value = 0;
        {
          std::lock_guard lock(members_mutex_);
          // Two passes: count the members with work in flight, then wait
          // on the turn-th of them (so none is starved of attention).
          std::size_t busy = 0;
          for (detail::device_member& m : members_) {
            blind = blind || m.polled_blindly.load(std::memory_order_relaxed);
            VkSemaphore h = VK_NULL_HANDLE;
            std::uint64_t v = 0;
            busy += m.next_wait != nullptr && m.next_wait(m, h, v);
          }
          idle = busy == 0;
          std::size_t k = idle ? 0 : turn++ % busy;
          for (detail::device_member& m : members_) {
            if (idle || m.next_wait == nullptr || !m.next_wait(m, handle, value)) continue;
            if (k-- == 0) break;
          }
        }
        if (!idle && !lost()) {
          const VkSemaphoreWaitInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO, nullptr, 0, 1,
                                         &handle, &value};
          r = fn_.wait_semaphores(vk_device(), &info, busy_slice_ns);
        }
      }
      if (r == VK_ERROR_DEVICE_LOST) {
        (void)check(r, "waiter: vkWaitSemaphores reported the device lost");
        continue;
      }
      if (idle || lost()) {
        std::unique_lock lock(idle_mutex_);
        idle_cv_.wait_for(lock, blind ? clock_duration(blind_poll) : clock_duration(idle_sleep),
                          [this] { return wake_pending_ || stop_.load(std::memory_order_acquire); });
        wake_pending_ = false;
      }
      (void)poll();
    }
  }

  template <class D>
  static std::chrono::steady_clock::duration clock_duration(D d) noexcept {
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
  }

  vk::Instance instance_;
  vk::PhysicalDevice physical_;
  vk::Device device_;
  device_options options_;
  dispatch fn_{};
  status setup_{};
  bool submit2_ = false;
  bool synchronization2_supported_ = false;
  /// The spec's minimum for maxTimelineSemaphoreValueDifference.
  std::uint64_t max_timeline_difference_ = (std::uint64_t{1} << 31) - 1;
  std::uint32_t queue_family_count_ = 0;

  std::atomic<bool> lost_{false};
  error lost_error_{};
  std::atomic<int> held_{0};
  /// Values polls held back for their batch's earlier signal (ever).
  std::atomic<std::uint64_t> held_back_{0};

  // Lock order: wait_mutex_ -> members_mutex_. Queue locks
  // are only try-locked under members_mutex_ (kick).
  /// With members_mutex_ held (or in the destructor): destroys the retired
  /// objects whose fence has signalled; never blocks or allocates.
  void reap_retired() noexcept {
    std::size_t kept = 0;
    for (const retired& r : retired_) {
      if (fn_.get_fence_status(vk_device(), r.fence) != VK_SUCCESS) {
        retired_[kept++] = r;  // not signalled (or the device is lost): keep
        continue;
      }
      fn_.destroy_semaphore(vk_device(), r.timeline, nullptr);
      if (r.command_pool != VK_NULL_HANDLE) fn_.destroy_command_pool(vk_device(), r.command_pool, nullptr);
      fn_.destroy_fence(vk_device(), r.fence, nullptr);
    }
    retired_.resize(kept);
    retired_count_.store(kept, std::memory_order_relaxed);
  }

  /// A destroyed queue's objects, kept until the fence behind them signals.
  struct retired {
    VkSemaphore timeline;
    VkCommandPool command_pool;
    VkFence fence;
  };

  /// A destroyed queue's objects that pending device work may still use.
  struct abandoned {
    VkSemaphore timeline;
    std::uint64_t last_value;
    VkCommandPool command_pool;
  };

  mutable std::recursive_mutex members_mutex_;
  detail::member_list members_;
  std::vector<abandoned> abandoned_;
  std::vector<retired> retired_;
  std::atomic<std::size_t> retired_count_{0};
  std::vector<std::unique_ptr<hardware_queue>> hardware_queues_;

  std::mutex waiter_control_;
  std::thread waiter_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> waiter_running_{false};
  std::mutex wait_mutex_;
  std::mutex idle_mutex_;
  std::condition_variable idle_cv_;
  bool wake_pending_ = false;
};

}  // namespace vulkan

CAUSAL_END_NAMESPACE
