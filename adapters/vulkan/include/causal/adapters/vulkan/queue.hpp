// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// queue: a causal queue on a vk::Queue — `causal::basic_queue` (one axis,
// its epoch and knowledge, wait elision) over a Vulkan backend that turns
// each submission into one vkQueueSubmit2 (or vkQueueSubmit with
// VkTimelineSemaphoreSubmitInfo) carrying only the waits the core could not
// elide.
//
// One submission of a causal queue becomes one batch:
//
//   waits    device waits the core kept (tier 2), plus block-pool fence
//            waits issued since the last batch; deduplicated per VkSemaphore
//   buffers  [leading barrier] + the operation's command buffers +
//            [the same barrier, trailing]
//   signals  the submission's semaphores + the queue's epoch timeline := e
//
// The leading barrier is a pre-recorded command buffer holding one
// ALL_COMMANDS -> ALL_COMMANDS | HOST memory barrier (MEMORY_WRITE ->
// MEMORY_READ | MEMORY_WRITE | HOST_READ | HOST_WRITE). Its first
// synchronisation scope is everything earlier in submission order on the
// vk::Queue, earlier batches included. The same command buffer ends the
// batch too: there it makes the batch's writes available and visible to
// the host, so that once a host wait sees the batch's signal (or its
// epoch), host reads of what it wrote -- a buffer_pool's host_access, a
// readback -- and host writes over it are ordered after it (Vulkan's
// semaphore wait on the host gives the execution dependency only). Vulkan orders
// nothing between batches by itself, so this barrier is what gives the core
// its backend contract — a queue's operations complete in epoch order — and
// what makes an elided wait safe: the wait was implied by an earlier batch
// of this queue, and the barrier orders the *whole* batch after it, not just
// its first command buffer (docs/queues.md and docs/adapters.md).
//
// Held batches (shared vk::Queues). Several causal queues may share one
// vk::Queue (lavapipe exposes one). A batch that waits for a value whose
// signal reaches the same vk::Queue *later* deadlocks it. Timeline
// semaphores can wait before signal, so the core issues such waits as
// device waits (tier 2, counted in device_waits); the backend then *holds*
// the batch on the host until every value it waits for has had its signal
// sent to the driver (`semaphore::sent_value`, which a host signal also
// raises), or was reached. External semaphores too: their signals never
// come through our queues, so the batch waits until a poll sees the value
// reached or the program says the producer's signal is submitted
// (`semaphore::mark_sent`); sent earlier, such a wait would block every
// later batch on a shared vk::Queue, and a chain through another API back
// to this one could deadlock. Later batches of the same queue
// are held behind it (FIFO). A held batch is retried whenever a queue of
// the device sends signals, a host signal lands, a semaphore fails or a poll
// sees a value move (`device::kick_all`). A held batch keeps pointers to
// the semaphores it names: destroying one of them before the batch is sent
// or dropped is refused loudly (~semaphore, docs/lifetimes.md).
//
// Failure is sticky, as on the CPU queue and a CUDA stream. If a semaphore a
// held batch waits for fails without reaching the value (a value reached
// before the failure stays reached), the batch is dropped (never sent):
// its signals' semaphores get the failure, so do those of every batch held
// behind it, and from then on every submit is refused with that error. A
// dropped batch fails its signals no earlier than every wait of it is met
// or failed -- its device waits and its *guards*, the waits the core
// elided at tier 1 (guard_elided_wait) -- and never before a batch ahead
// of it: an elided wait may stand for a healthy signal still on its way,
// and failing a semaphore before that signal arrives would fail waiters
// that the program, with the wait issued, would have run (docs/queues.md,
// "Elision never changes an outcome"). A batch the driver refuses
// (vkQueueSubmit fails after it was held) is dropped the same way. The
// epoch timeline is never signalled past the last batch sent: once the
// device has completed that batch (every epoch before the failure retires
// normally), the timeline and the queue's tracker axis fail with the
// error. Running later batches instead would let their frontiers, which
// carry this queue's axis, claim the dropped operation, and a consumer
// could elide its wait on the failed value and run on data that was never
// produced (docs/queues.md).
//
// Completion. Every batch signals the queue's own timeline semaphore with its
// epoch, last. device::poll() (or the waiter thread) reads it, reaches the
// timeline (carrying the producer entry (axis, e), which proves the queue's
// whole past) and retires the epoch into the queue and the device's
// completion tracker -- but only once the host has reached every signal of
// the batch: each batch with signals notes its epoch on the timeline gated
// on its last signal, and that signal on the one before it
// (<causal/adapters/vulkan/semaphore.hpp>, "Signals of one batch"). So no
// host observer learns (axis, e) before every signal of e is reached on
// the host, whichever counter a poll reads first.
//
// Thread safety: submit, pump, with_core and the observers may be called
//                from any thread; an internal mutex serialises them (kicks
//                from other threads only try-lock it, never wait).
// Memory order:  retire(e) releases and completed_epoch() acquires (see
//                <causal/queue.hpp>); values reached by polls release;
//                "signal sent" (note_sent) and "batch held" (held_changed)
//                are seq_cst, so a sender and a holder never miss each other.
// Blocking/allocation: submit allocates only when more batches are held,
//                or more signals of a semaphore outstanding, than ever
//                before (the tables double and are kept); it takes the
//                queue's mutex, the semaphores' locks, and the vk::Queue's
//                submit mutex around the driver call. The destructor drops
//                held batches and waits for its own sent ones (unless the
//                device is lost), at most queue_teardown_timeout (then it
//                fails the queue with `timeout` and leaves them pending;
//                see ~queue); it never waits for other queues' batches.
// Size:          sizeof(basic_queue<frontier, backend>) (~6 KiB) plus the
//                backend: (inline_held + 1) batches of ~1.6 KiB, and more
//                on the heap once more batches were held at once.
// Configuration: device_options::queue_teardown_timeout (10 s),
//                command_list::capacity (8 command buffers per operation),
//                backend::max_waits (32 device waits per batch),
//                backend::max_guards (16 elided waits per batch),
//                backend::inline_held (16 batches held without allocating).
// See also:      docs/queues.md and docs/adapters.md, <causal/queue.hpp>,
//                <causal/adapters/vulkan/device.hpp>,
//                <causal/adapters/vulkan/semaphore.hpp>.
#pragma once

#include <causal/adapters/vulkan/device.hpp>
#include <causal/adapters/vulkan/semaphore.hpp>
#include <causal/axis.hpp>
#include <causal/config.hpp>
#include <causal/detail/inline_ring.hpp>
#include <causal/frontier.hpp>
#include <causal/queue.hpp>
#include <causal/result.hpp>

#include <vulkan/vulkan.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <utility>

CAUSAL_BEGIN_NAMESPACE

namespace vulkan {

//===-- command_list --------------------------------------------------------===//

/// What one submission executes: up to `capacity` recorded command buffers,
/// stored inline (the core copies an operation it holds on the host).
class command_list {
 public:
  static constexpr std::size_t capacity = 8;

  command_list() noexcept = default;
  command_list(std::initializer_list<vk::CommandBuffer> buffers) noexcept {
    for (vk::CommandBuffer cb : buffers) (void)push(cb);
  }

  /// Appends `cb`; false (and overflowed()) when already at capacity.
  bool push(vk::CommandBuffer cb) noexcept {
    if (count_ == capacity) {
      overflow_ = true;
      return false;
    }
    buffers_[count_++] = static_cast<VkCommandBuffer>(cb);
    return true;
  }

  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  [[nodiscard]] const VkCommandBuffer* data() const noexcept { return buffers_.data(); }
  /// True when a push was refused; such a list is rejected by submit.
  [[nodiscard]] bool overflowed() const noexcept { return overflow_; }

 private:
  std::array<VkCommandBuffer, capacity> buffers_{};
  std::uint32_t count_ = 0;
  bool overflow_ = false;
};

/// What the backend sent to the driver, cumulatively.
struct backend_stats {
  std::uint64_t batches = 0;      ///< vkQueueSubmit2 / vkQueueSubmit calls
  std::uint64_t vk_waits = 0;     ///< semaphore waits passed to the driver
  std::uint64_t vk_signals = 0;   ///< semaphore signals, epoch timeline included
};

//===-- backend ---------------------------------------------------------------===//

/// The queue_backend of a Vulkan causal queue; see the file comment.
class backend {
 public:
  /// Not a promise in basic_queue's sense (backend_writes_later): a sent
  /// batch's signals are reached by the semaphore's own polls of its
  /// VkSemaphore, and a semaphore destroyed once the device is done with
  /// the batch is forgotten by the queue's gates (device::forget_gate).
  /// Vulkan's rule -- no VkSemaphore destroyed while the device may still
  /// use it -- is the one that applies (docs/lifetimes.md).
  static constexpr bool writes_later = false;

  using semaphore_type = vulkan::semaphore;
  using operation_type = command_list;
  /// Timeline semaphores wait before signal; the backend holds a batch
  /// whose signals have not reached the driver yet (file comment).
  static constexpr bool waits_before_signal = true;
  /// Device waits one batch can carry (core waits + pool fence waits).
  static constexpr std::size_t max_waits = 32;
  /// Signals one batch can carry: the core's limit plus the epoch timeline.
  static constexpr std::size_t max_signals = 17;
  /// Waits one batch can guard (guard_elided_wait): the core's max_waits.
  static constexpr std::size_t max_guards = 16;
  /// Batches a queue holds on the host without allocating; more grow the
  /// table (any number may be held).
  static constexpr std::size_t inline_held = 16;

  backend(device& dev, hardware_queue& hw, causal::axis a) noexcept
      : device_(&dev), hw_(&hw), axis_(a), timeline_(dev, semaphore::internal_tag{}) {
    if (!timeline_.setup_status()) {
      setup_ = timeline_.setup_status();
      return;
    }
    setup_ = record_barrier();
  }

  backend(const backend&) = delete;
  backend& operator=(const backend&) = delete;

  ~backend() {
    if (pool_ != VK_NULL_HANDLE) {
      device_->fn().destroy_command_pool(device_->vk_device(), pool_, nullptr);
    }
  }

  //===-- queue_backend -----------------------------------------------------===//

  /// Adds a device wait to the next batch (also used by block pools between
  /// submissions). Waits on one VkSemaphore merge to the highest value.
  status issue_wait(semaphore_type& s, std::uint64_t v) noexcept {
    if (&s.owner() != device_) {
      return error{errc::invalid_argument, "vulkan backend: wait on a semaphore of another device"};
    }
    batch& b = next_;
    for (std::size_t i = 0; i < b.wait_count; ++i) {
      if (b.wait_sems[i] == &s) {
        if (b.wait_values[i] < v) b.wait_values[i] = v;
        return status{};
      }
    }
    if (b.wait_count == max_waits) {
      b.guard_count = 0;  // the core abandons this submission
      return error{errc::resource_exhausted, "vulkan backend: max_waits device waits in one batch",
                   max_waits};
    }
    b.wait_sems[b.wait_count] = &s;
    b.wait_handles[b.wait_count] = s.vk_handle();
    b.wait_values[b.wait_count] = v;
    ++b.wait_count;
    return status{};
  }

  /// Records a wait the core elided at tier 1: the batch does not wait
  /// for it, but should it be dropped, its signals fail only once `s`
  /// reaches `v` or fails (file comment, "Failure"). Waits on one
  /// semaphore merge to the highest value.
  status guard_elided_wait(semaphore_type& s, std::uint64_t v) noexcept {
    batch& b = next_;
    for (std::size_t i = 0; i < b.guard_count; ++i) {
      if (b.guard_sems[i] == &s) {
        if (b.guard_values[i] < v) b.guard_values[i] = v;
        return status{};
      }
    }
    if (b.guard_count == max_guards) {
      b.guard_count = 0;  // the core abandons this submission
      return error{errc::resource_exhausted, "vulkan backend: max_guards elided waits in one batch",
                   max_guards};
    }
    b.guard_sems[b.guard_count] = &s;
    b.guard_values[b.guard_count] = v;
    ++b.guard_count;
    return status{};
  }

  status execute(const operation_type& op, std::uint64_t epoch) noexcept {
    status s = broken_;
    if (s) {
      if (auto e = device_->lost(); e) s = *e;
    }
    if (s && held_.full()) {
      // vulkan::queue::submit made room first; only a direct core user
      // that skipped make_held_room() gets here.
      s = make_held_room();
    }
    // Room for this epoch on the timeline's table of gated epochs (flush),
    // before anything is issued.
    if (s) s = timeline_.make_issue_room();
    if (!s) {
      next_.wait_count = 0;
      next_.guard_count = 0;
      return s;
    }
    next_.op = op;
    next_.epoch = epoch;
    return status{};
  }

  /// Adds a signal to the batch. The host reaches it only after the signal
  /// issued before it (its gate; see the file comment, "Completion").
  status issue_signal(semaphore_type& s, std::uint64_t v) noexcept {
    if (&s.owner() != device_) {
      return error{errc::invalid_argument, "vulkan backend: signal of a semaphore of another device"};
    }
    batch& b = next_;
    const semaphore_type* gate = b.signal_count == 0 ? nullptr : b.signal_sems[b.signal_count - 1];
    const std::uint64_t gate_value = b.signal_count == 0 ? 0 : b.signal_values[b.signal_count - 1];
    if (status n = s.note_issued(v, gate, gate_value); !n) return n;
    add_signal(b, s, v);
    return status{};
  }

  /// Completes the batch (adds the epoch timeline) and sends it, or holds
  /// it behind held batches or until its waits' signals are sent.
  status flush() noexcept {
    batch& b = next_;
    // The epoch timeline is not announced on its host half (that would
    // cost a frontier copy per submit): polls reach it with the producer
    // entry alone, which proves the queue's whole past (FIFO, docs/frontiers.md).
    // A batch with signals notes its epoch gated on the last of them, so
    // the host reaches the epoch only after every signal (file comment,
    // "Completion"). execute() made the room, and only this queue notes
    // epochs on its timeline: this cannot fail.
    if (b.signal_count != 0) {
      (void)timeline_.note_issued(b.epoch, b.signal_sems[b.signal_count - 1],
                                  b.signal_values[b.signal_count - 1]);
    }
    add_signal(b, timeline_, b.epoch);
    status out;
    if (held_.empty() && sendable(b)) {
      out = send(b);
    } else {
      held_.push_back() = b;  // room made before execute
      note_held_uses(b, +1);
    }
    b.wait_count = 0;
    b.guard_count = 0;
    b.signal_count = 0;
    return out;
  }

  //===-- held batches --------------------------------------------------------===//

  /// Sends held batches in order while their waits' signals have been sent.
  /// A batch whose wait semaphore failed below the value fails the queue
  /// (see the file comment) and is dropped, and so is everything held
  /// behind it -- each in turn, once every wait of it, issued or guarded,
  /// is met or failed. Returns true when any batch left the table.
  bool resume() noexcept {
    bool progressed = false;
    while (!held_.empty()) {
      batch& b = held_.front();
      std::optional<error> e;
      if (!broken_) {
        e = broken_.error_value();
      } else {
        e = failed_wait(b);
      }
      if (e) {
        // Never before its waits are over: one the core elided may stand
        // for a healthy signal on its way, which failing the batch's
        // signals now could overtake (file comment, "Failure").
        if (!waits_over(b)) break;
        stick(*e);
        drop(b, broken_.error_value());
      } else if (!sendable(b)) {
        break;
      } else if (!send(b)) {
        continue;  // refused: the queue failed (stick); dropped in turn
      }
      note_held_uses(b, -1);
      held_.pop_front();
      progressed = true;
    }
    return progressed;
  }

  /// Queue teardown past its deadline: hands the epoch timeline and the
  /// barrier's command pool, which batches still pending on the device
  /// use, to the device (device::abandon) instead of destroying them.
  void abandon() noexcept {
    const VkSemaphore handle = timeline_.release_handle();
    if (handle == VK_NULL_HANDLE) return;
    device_->abandon(handle, sent_epoch(), std::exchange(pool_, VK_NULL_HANDLE));
  }

  /// Queue teardown once the batches it sent have completed: hands the
  /// epoch timeline and the barrier's command pool to the device
  /// (device::retire), which destroys them once a fence behind them on
  /// the vk::Queue signals -- without waiting for other queues' work on a
  /// shared vk::Queue. Should the device not take them (no fence: out of
  /// memory, or the device was lost meanwhile), idles the vk::Queue (a
  /// lost device needs nothing) and destroys them here.
  void retire() noexcept {
    const VkSemaphore handle = timeline_.release_handle();
    if (handle == VK_NULL_HANDLE) return;
    const VkCommandPool pool = std::exchange(pool_, VK_NULL_HANDLE);
    if (device_->retire(handle, pool, *hw_)) return;
    if (!device_->lost()) {
      std::lock_guard lock(hw_->submit_mutex());
      (void)device_->fn().queue_wait_idle(static_cast<VkQueue>(hw_->handle()));
    }
    device_->fn().destroy_semaphore(device_->vk_device(), handle, nullptr);
    if (pool != VK_NULL_HANDLE) device_->fn().destroy_command_pool(device_->vk_device(), pool, nullptr);
  }

  /// Drops every held batch with `e` at once, without waiting for its
  /// waits, and fails the queue with it (queue teardown).
  void drop_all(const error& e) noexcept {
    if (!held_.empty()) stick(e);
    while (!held_.empty()) {
      drop(held_.front(), e);
      note_held_uses(held_.front(), -1);
      held_.pop_front();
    }
  }

  //===-- for vulkan::queue ---------------------------------------------------===//

  [[nodiscard]] status setup_status() const noexcept { return setup_; }
  [[nodiscard]] const backend_stats& stats() const noexcept { return stats_; }
  [[nodiscard]] semaphore_type& timeline() noexcept { return timeline_; }
  [[nodiscard]] hardware_queue& hardware() const noexcept { return *hw_; }
  [[nodiscard]] device& owner() const noexcept { return *device_; }
  /// Batches held on the host.
  [[nodiscard]] std::size_t held_count() const noexcept { return held_.size(); }

  /// Makes sure the next batch can be held: doubles the held table when it
  /// is full (`resource_exhausted` only when memory runs out; nothing
  /// changes then). vulkan::queue::submit calls it before anything else.
  status make_held_room() noexcept {
    if (!held_.full()) return status{};
    const std::size_t capacity = held_.capacity() * 2;
    auto* storage = new (std::nothrow) batch[capacity];
    if (storage == nullptr) {
      return error{errc::resource_exhausted, "vulkan backend: out of memory for held batches",
                   capacity};
    }
    delete[] held_.adopt(storage, capacity);
    return status{};
  }
  /// The highest epoch sent to the driver.
  [[nodiscard]] std::uint64_t sent_epoch() const noexcept {
    return sent_.load(std::memory_order_acquire);  // pairs with the release in send()
  }
  /// Device waits queued for the next batch (block-pool fences).
  [[nodiscard]] std::size_t pending_waits() const noexcept { return next_.wait_count; }

  void set_watched(bool w) noexcept { watched_.store(w, std::memory_order_release); }

  /// The queue's sticky failure once it is due: when the device has
  /// completed `completed` >= every epoch sent before the failure. Null
  /// when the queue has not failed or earlier batches are still running.
  /// Any thread (the failure is published once, with a release store).
  [[nodiscard]] const error* failure_due(std::uint64_t completed) const noexcept {
    const std::uint64_t after = stuck_after_.load(std::memory_order_acquire);
    if (after == not_stuck || completed < after) return nullptr;
    return &stuck_error_;
  }

 private:
  struct batch {
    command_list op{};
    std::uint64_t epoch = 0;
    std::size_t wait_count = 0;
    std::size_t guard_count = 0;
    std::size_t signal_count = 0;
    /// Waits elided at tier 1: not sent, only waited for on a drop.
    std::array<semaphore_type*, max_guards> guard_sems{};
    std::array<std::uint64_t, max_guards> guard_values{};
    std::array<semaphore_type*, max_waits> wait_sems{};
    std::array<VkSemaphore, max_waits> wait_handles{};
    std::array<std::uint64_t, max_waits> wait_values{};
    std::array<semaphore_type*, max_signals> signal_sems{};
    std::array<VkSemaphore, max_signals> signal_handles{};
    std::array<std::uint64_t, max_signals> signal_values{};
  };

  static void add_signal(batch& b, semaphore_type& s, std::uint64_t v) noexcept {
    b.signal_sems[b.signal_count] = &s;
    b.signal_handles[b.signal_count] = s.vk_handle();
    b.signal_values[b.signal_count] = v;
    ++b.signal_count;
  }

  /// True when every wait's signal has reached the driver (or the value
  /// was reached, or comes from outside): sending cannot deadlock.
  static bool sendable(const batch& b) noexcept {
    for (std::size_t i = 0; i < b.wait_count; ++i) {
      const semaphore_type& s = *b.wait_sems[i];
      const std::uint64_t v = b.wait_values[i];
      if (s.sent_value() < v && s.value() < v) return false;
    }
    return true;
  }

  /// The failure of a semaphore the batch waits for that failed below the
  /// value (a value reached before the failure stays reached), if any.
  static std::optional<error> failed_wait(const batch& b) noexcept {
    for (std::size_t i = 0; i < b.wait_count; ++i) {
      if (auto e = causal::detail::failure_below(*b.wait_sems[i], b.wait_values[i]); e) return e;
    }
    return std::nullopt;
  }

  /// True when every wait of the batch, device waits and guards, is met on
  /// the host (a poll reached the value) or its semaphore failed below it.
  static bool waits_over(const batch& b) noexcept {
    const auto over = [](const semaphore_type& s, std::uint64_t v) noexcept {
      return s.value() >= v || s.failed();
    };
    for (std::size_t i = 0; i < b.wait_count; ++i) {
      if (!over(*b.wait_sems[i], b.wait_values[i])) return false;
    }
    for (std::size_t i = 0; i < b.guard_count; ++i) {
      if (!over(*b.guard_sems[i], b.guard_values[i])) return false;
    }
    return true;
  }

  /// Counts (+1) or uncounts (-1) a held batch's uses of its semaphores,
  /// the epoch timeline aside (it dies with this backend): a semaphore
  /// refuses to be destroyed while a held batch names it (~semaphore).
  void note_held_uses(const batch& b, int delta) noexcept {
    for (std::size_t i = 0; i < b.wait_count; ++i) b.wait_sems[i]->note_held_use(delta);
    for (std::size_t i = 0; i < b.guard_count; ++i) b.guard_sems[i]->note_held_use(delta);
    for (std::size_t i = 0; i < b.signal_count; ++i) {
      if (b.signal_sems[i] != &timeline_) b.signal_sems[i]->note_held_use(delta);
    }
  }

  /// Fails the batch's signals (host side); the batch is never sent and
  /// its epoch never signalled (the queue has failed, see stick()).
  void drop(batch& b, const error& e) noexcept {
    for (std::size_t i = 0; i < b.signal_count; ++i) {
      if (b.signal_sems[i] != &timeline_) (void)b.signal_sems[i]->fail_host_submitted(b.signal_values[i], e);
    }
  }

  /// Fails the queue with `e` unless it failed before: every later execute
  /// and held batch gets `e`; the timeline fails once the batches already
  /// sent have completed (failure_due).
  void stick(const error& e) noexcept {
    if (!broken_) return;
    broken_ = e;
    stuck_error_ = e;
    stuck_after_.store(sent_epoch(), std::memory_order_release);  // publishes stuck_error_
  }

  status send(const batch& b) noexcept {
    if (!broken_) return broken_;
    VkResult r;
    {
      std::lock_guard lock(hw_->submit_mutex());
      r = device_->uses_submit2() ? submit2(b) : submit_legacy(b);
    }
    stats_.batches += 1;
    stats_.vk_waits += b.wait_count;
    stats_.vk_signals += b.signal_count;
    if (r != VK_SUCCESS) {
      status s = device_->check(r, "vulkan queue: vkQueueSubmit failed");
      // A batch the driver refused never signals its epoch: the queue's
      // order is broken for good, so every later submit gets this error,
      // and the timeline fails once the batches sent before it complete.
      // Its signals fail as a dropped batch's do: by the core, for a batch
      // sent from submit; by resume, in turn, for a held one.
      stick(s.error_value());
      return s;
    }
    // Now, not before: a batch held on another queue may go once these
    // signals are in the driver (on this vk::Queue, ahead of it).
    for (std::size_t i = 0; i < b.signal_count; ++i) b.signal_sems[i]->note_sent(b.signal_values[i]);
    sent_.store(b.epoch, std::memory_order_release);
    if (!watched_.load(std::memory_order_acquire)) device_->notify_submitted();
    return status{};
  }

  status record_barrier() noexcept {
    const dispatch& fn = device_->fn();
    const VkDevice dev = device_->vk_device();
    const VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, nullptr, 0,
                                            hw_->family()};
    if (VkResult r = fn.create_command_pool(dev, &pool_info, nullptr, &pool_); r != VK_SUCCESS) {
      pool_ = VK_NULL_HANDLE;
      return device_->check(r, "vulkan queue: vkCreateCommandPool failed");
    }
    const VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, nullptr,
                                            pool_, VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
    if (VkResult r = fn.allocate_command_buffers(dev, &alloc, &barrier_); r != VK_SUCCESS) {
      return device_->check(r, "vulkan queue: vkAllocateCommandBuffers failed");
    }
    // Simultaneous use: the barrier is pending in many batches at once.
    const VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, nullptr,
                                         VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT, nullptr};
    if (VkResult r = fn.begin_command_buffer(barrier_, &begin); r != VK_SUCCESS) {
      return device_->check(r, "vulkan queue: vkBeginCommandBuffer failed");
    }
    if (device_->uses_submit2()) {
      const VkMemoryBarrier2 mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER_2,
                                nullptr,
                                VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
                                VK_ACCESS_2_MEMORY_WRITE_BIT,
                                VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT | VK_PIPELINE_STAGE_2_HOST_BIT,
                                VK_ACCESS_2_MEMORY_READ_BIT | VK_ACCESS_2_MEMORY_WRITE_BIT |
                                    VK_ACCESS_2_HOST_READ_BIT | VK_ACCESS_2_HOST_WRITE_BIT};
      const VkDependencyInfo dep{VK_STRUCTURE_TYPE_DEPENDENCY_INFO, nullptr, 0, 1, &mb, 0, nullptr,
                                 0, nullptr};
      fn.cmd_pipeline_barrier2(barrier_, &dep);
    } else {
      const VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_MEMORY_WRITE_BIT,
                               VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT |
                                   VK_ACCESS_HOST_READ_BIT | VK_ACCESS_HOST_WRITE_BIT};
      fn.cmd_pipeline_barrier(barrier_, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                              VK_PIPELINE_STAGE_ALL_COMMANDS_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb,
                              0, nullptr, 0, nullptr);
    }
    if (VkResult r = fn.end_command_buffer(barrier_); r != VK_SUCCESS) {
      return device_->check(r, "vulkan queue: vkEndCommandBuffer failed");
    }
    return status{};
  }

  VkResult submit2(const batch& b) noexcept {
    std::array<VkSemaphoreSubmitInfo, max_waits> waits;
    std::array<VkSemaphoreSubmitInfo, max_signals> signals;
    std::array<VkCommandBufferSubmitInfo, command_list::capacity + 2> buffers;
    for (std::size_t i = 0; i < b.wait_count; ++i) {
      waits[i] = VkSemaphoreSubmitInfo{VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO, nullptr,
                                       b.wait_handles[i], b.wait_values[i],
                                       VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, 0};
    }
    for (std::size_t i = 0; i < b.signal_count; ++i) {
      signals[i] = VkSemaphoreSubmitInfo{VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO, nullptr,
                                         b.signal_handles[i], b.signal_values[i],
                                         VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, 0};
    }
    std::uint32_t n = 0;
    buffers[n++] = VkCommandBufferSubmitInfo{VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO, nullptr,
                                             barrier_, 0};
    for (std::size_t i = 0; i < b.op.size(); ++i) {
      buffers[n++] = VkCommandBufferSubmitInfo{VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO, nullptr,
                                               b.op.data()[i], 0};
    }
    // Trailing: the batch's writes made visible to the host.
    buffers[n++] = VkCommandBufferSubmitInfo{VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO, nullptr,
                                             barrier_, 0};
    const VkSubmitInfo2 submit{VK_STRUCTURE_TYPE_SUBMIT_INFO_2,
                               nullptr,
                               0,
                               static_cast<std::uint32_t>(b.wait_count),
                               waits.data(),
                               n,
                               buffers.data(),
                               static_cast<std::uint32_t>(b.signal_count),
                               signals.data()};
    return device_->fn().queue_submit2(static_cast<VkQueue>(hw_->handle()), 1, &submit,
                                       VK_NULL_HANDLE);
  }

  VkResult submit_legacy(const batch& b) noexcept {
    std::array<VkPipelineStageFlags, max_waits> stages;
    std::array<VkCommandBuffer, command_list::capacity + 2> buffers;
    for (std::size_t i = 0; i < b.wait_count; ++i) stages[i] = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    std::uint32_t n = 0;
    buffers[n++] = barrier_;
    for (std::size_t i = 0; i < b.op.size(); ++i) buffers[n++] = b.op.data()[i];
    buffers[n++] = barrier_;  // trailing: the batch's writes made visible to the host
    const VkTimelineSemaphoreSubmitInfo values{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                               nullptr,
                                               static_cast<std::uint32_t>(b.wait_count),
                                               b.wait_values.data(),
                                               static_cast<std::uint32_t>(b.signal_count),
                                               b.signal_values.data()};
    const VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO,
                              &values,
                              static_cast<std::uint32_t>(b.wait_count),
                              b.wait_handles.data(),
                              stages.data(),
                              n,
                              buffers.data(),
                              static_cast<std::uint32_t>(b.signal_count),
                              b.signal_handles.data()};
    return device_->fn().queue_submit(static_cast<VkQueue>(hw_->handle()), 1, &submit,
                                      VK_NULL_HANDLE);
  }

  device* device_;
  hardware_queue* hw_;
  causal::axis axis_;
  semaphore timeline_;
  status setup_{};
  status broken_{};
  static constexpr std::uint64_t not_stuck = ~std::uint64_t{0};
  /// The sent epoch after which the sticky failure applies (not_stuck: none).
  std::atomic<std::uint64_t> stuck_after_{not_stuck};
  error stuck_error_{};
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer barrier_ = VK_NULL_HANDLE;
  std::atomic<std::uint64_t> sent_{0};
  std::atomic<bool> watched_{false};
  backend_stats stats_{};
  batch next_{};
  causal::detail::inline_ring<batch, inline_held> held_;
};

//===-- queue -----------------------------------------------------------------===//

/// A causal queue on a vk::Queue; see the file comment. Its submit has the
/// signature and error contract of `basic_queue::submit`, plus: an
/// operation with more than command_list::capacity buffers, or a semaphore
/// of another device (`invalid_argument`); a wait or signal value further
/// from its semaphore's current value than the device's
/// maxTimelineSemaphoreValueDifference (`invalid_argument`, naming the
/// value); memory exhausted while a table
/// of held batches or issued values grows (`resource_exhausted`); a lost
/// device (`device_lost`). Nothing changes on these errors. Any number of
/// batches may be held and of signals outstanding.
class queue {
 public:
  using core_type = basic_queue<frontier, backend>;
  using frontier_type = frontier;
  using semaphore_type = semaphore;
  using operation_type = command_list;
  using wait_type = queue_wait<semaphore>;
  using signal_type = queue_signal<semaphore>;
  static_assert(backend::max_guards >= core_type::max_waits,
                "vulkan::backend::max_guards must cover every wait of a submission");

  /// Binds a causal queue with axis `a` (never reused: from an
  /// axis_allocator) to `hw`. Registers `a` with the device's completion
  /// tracker, if any. Failures: see setup_status().
  queue(device& dev, hardware_queue& hw, causal::axis a) noexcept
      : device_(&dev), core_(a, dev, hw, a) {
    setup_ = core_.backend().setup_status();
    if (setup_ && dev.tracker() != nullptr) {
      setup_ = dev.tracker()->register_axis(a);
      if (setup_) {
        core_.track_completion(*dev.tracker());
        tracked_ = true;
      }
    }
    member_.owner = this;
    member_.poll = [](detail::device_member& m) noexcept { return self(m).poll(); };
    member_.fail = [](detail::device_member& m, const error& e) noexcept { self(m).fail(e); };
    member_.kick = [](detail::device_member& m) noexcept { self(m).kick(); };
    member_.next_wait = [](detail::device_member& m, VkSemaphore& h, std::uint64_t& v) noexcept {
      return self(m).next_wait(h, v);
    };
    member_.forget_gate = [](detail::device_member& m, const void* gone) noexcept {
      self(m).core_.backend().timeline().forget_gate(static_cast<const semaphore*>(gone));
    };
    hw.add_user();
    dev.attach(member_);
  }

  queue(const queue&) = delete;
  queue& operator=(const queue&) = delete;

  /// Drops held batches (their signals fail with `cancelled`), waits for
  /// its own batches sent (skipped once the device is lost), unregisters,
  /// hands its epoch timeline and command pool to the device (retired once
  /// a fence behind them signals: device::retire; it never waits for other
  /// queues' work on a shared vk::Queue), and retires the axis in the
  /// tracker. Destroy semaphores a queue signals after the queue.
  ///
  /// The wait for sent batches is bounded by
  /// device_options::queue_teardown_timeout (a batch may wait for an
  /// external value that never arrives). Past it the destructor returns
  /// without idling the vk::Queue: the epoch timeline and the queue's tracker
  /// axis fail with `errc::timeout`, and the batches stay pending on the
  /// device, since Vulkan cannot take back submitted work. They still run
  /// if their waits are ever satisfied: the timeline and the barrier's
  /// command pool they use go to the device (device::abandon), which
  /// releases them when it is destroyed; the caller must likewise keep the
  /// command buffers and the semaphores they use alive until then (the
  /// semaphores they signal are reached by polls as usual if they run).
  ~queue() {
    bool dropped;
    {
      holder h(*this);
      dropped = core_.backend().held_count() != 0;
      core_.backend().drop_all(
          error{errc::cancelled, "vulkan::queue destroyed while holding the submission"});
      update_held();
    }
    // The dropped batches failed their signals: batches other queues hold
    // behind those values drop now, not at some later kick (so that the
    // semaphores they name may be destroyed next, docs/lifetimes.md).
    if (dropped && device_->any_held()) device_->kick_all();
    const status idle =
        wait_idle(semaphore::clock::now() + device_->options().queue_teardown_timeout);
    const bool pending_on_device =
        !idle && idle.code() == errc::timeout && !device_->lost() && !timeline().failed();
    if (pending_on_device) {
      fail(error{errc::timeout,
                 "vulkan::queue destroyed with batches still pending on the device past "
                 "queue_teardown_timeout (they stay pending)",
                 core_.completed_epoch()});
    }
    if (!pending_on_device) (void)poll();
    device_->detach(member_);
    // After detach: the waiter thread no longer reads the timeline's handle.
    // The epoch timeline reaching its last value does not mean the driver
    // is done touching the batch's objects (lavapipe's queue thread may
    // still be finishing the signal), so they go to the device, which
    // destroys them once a fence behind them signals (retire) -- not a
    // vkQueueWaitIdle, which on a shared vk::Queue would wait for other
    // queues' work, perhaps forever, and block their submitters meanwhile.
    if (pending_on_device) {
      core_.backend().abandon();
    } else if (!device_->lost()) {
      core_.backend().retire();
    }
    core_.backend().hardware().remove_user();
    if (tracked_) (void)device_->tracker()->retire_axis(core_.axis());
    std::lock_guard lock(mutex_);
    if (has_held_) device_->held_changed(-1);
  }

  //===-- submission ----------------------------------------------------------===//

  /// Submits `op` after `waits`, announcing `signals` (see basic_queue).
  result<submission> submit(std::span<const wait_type> waits, std::span<const signal_type> signals,
                            const command_list& op) noexcept {
    if (!setup_) return setup_.error_value();
    if (op.overflowed()) {
      return error{errc::invalid_argument, "submit: more command buffers than command_list::capacity",
                   command_list::capacity};
    }
    if (auto e = device_->lost(); e) return *e;
    for (std::size_t i = 0; i < waits.size(); ++i) {
      if (waits[i].semaphore == nullptr) continue;
      if (&waits[i].semaphore->owner() != device_) {
        return error{errc::invalid_argument, "submit: wait on a semaphore of another device", i};
      }
      // Checked even for waits the core will elide (conservative).
      if (status d = waits[i].semaphore->check_value_difference(waits[i].value); !d) {
        return d.error_value();
      }
    }
    for (std::size_t i = 0; i < signals.size(); ++i) {
      semaphore* s = signals[i].semaphore;
      if (s == nullptr) continue;
      if (&s->owner() != device_) {
        return error{errc::invalid_argument, "submit: signal of a semaphore of another device", i};
      }
      if (status d = s->check_value_difference(signals[i].value); !d) return d.error_value();
      // Room for the value this submission will issue, before any effect.
      if (status room = s->make_issue_room(); !room) return room.error_value();
    }
    result<submission> r = submission{};
    {
      holder h(*this);
      if (status room = core_.backend().make_held_room(); !room) return room.error_value();
      r = core_.submit(waits, signals, op);
      update_held();
      // A batch just held: retry once after publishing that we hold one,
      // so a signal sent concurrently is not missed (its sender either
      // sees our held count and kicks us, or sent before this look).
      if (has_held_) (void)core_.backend().resume();
      update_held();
    }
    after_unlock(r.ok() && !signals.empty());
    return r;
  }

  result<submission> submit(std::initializer_list<wait_type> waits,
                            std::initializer_list<signal_type> signals,
                            const command_list& op) noexcept {
    return submit(std::span<const wait_type>(waits.begin(), waits.size()),
                  std::span<const signal_type>(signals.begin(), signals.size()), op);
  }

  /// Retries held batches now; returns how many left the host (sent, or
  /// dropped because a semaphore they wait for failed).
  result<std::size_t> pump() noexcept {
    std::size_t n = 0;
    {
      holder h(*this);
      const std::size_t before = core_.backend().held_count();
      (void)core_.backend().resume();
      n = before - core_.backend().held_count();
      update_held();
    }
    after_unlock(n != 0);
    return n;
  }

  /// Blocks until every submitted epoch has completed (ok), the queue has
  /// failed (its error, see the file comment), the device is lost, or
  /// `deadline` passes (held batches must be released meanwhile).
  status wait_idle(semaphore::clock::time_point deadline = semaphore::clock::time_point::max()) noexcept {
    const std::uint64_t e = epoch();
    if (e == 0) return status{};
    return core_.backend().timeline().wait_until(e, deadline);
  }

  /// Forwards every retired epoch to `tracker.advance(axis(), epoch)`
  /// instead of the device's tracker (a queue reports to one tracker). The
  /// tracker must know the axis and outlive the queue.
  void track_completion(completion_tracker& tracker) noexcept {
    holder h(*this);
    core_.track_completion(tracker);
  }

  /// Runs `f(core)` under the queue's lock (block pools, diagnostics).
  template <class F>
  decltype(auto) with_core(F&& f) {
    holder h(*this);
    return static_cast<F&&>(f)(core_);
  }

  //===-- observers -------------------------------------------------------------===//

  [[nodiscard]] status setup_status() const noexcept { return setup_; }
  [[nodiscard]] causal::axis axis() const noexcept { return core_.axis(); }
  [[nodiscard]] device& owner() const noexcept { return *device_; }
  /// The vk::Queue (and so the queue family) this queue submits to.
  [[nodiscard]] hardware_queue& hardware() const noexcept { return core_.backend().hardware(); }
  /// The queue's epoch timeline: value e means epoch e completed. Wait on
  /// it like any semaphore; never signal it.
  [[nodiscard]] semaphore& timeline() noexcept { return core_.backend().timeline(); }
  [[nodiscard]] std::uint64_t completed_epoch() const noexcept { return core_.completed_epoch(); }
  [[nodiscard]] std::uint64_t epoch() const noexcept {
    return observe([](const core_type& c) { return c.epoch(); });
  }
  [[nodiscard]] frontier knowledge() const noexcept {
    return observe([](const core_type& c) { return c.knowledge(); });
  }
  [[nodiscard]] queue_stats stats() const noexcept {
    return observe([](const core_type& c) { return c.stats(); });
  }
  [[nodiscard]] backend_stats driver_stats() const noexcept {
    return observe([](const core_type& c) { return c.backend().stats(); });
  }
  /// Batches held on the host (waiting for their waits' signals to be sent).
  [[nodiscard]] std::size_t held_count() const noexcept {
    return observe([](const core_type& c) { return c.backend().held_count(); });
  }

  /// Reads the epoch timeline and retires what completed; true if it moved.
  bool poll() noexcept {
    const std::uint64_t before = core_.completed_epoch();
    const std::uint64_t now = core_.backend().timeline().poll_sequential(core_.axis());
    if (now > before) core_.retire(now);
    apply_due_failure();
    return now > before;
  }

 private:
  static queue& self(detail::device_member& m) noexcept { return *static_cast<queue*>(m.owner); }

  /// Reads the core under the lock, then serves a kick that arrived
  /// meanwhile (the kicker only try-locks, so the holder must).
  template <class F>
  auto observe(F f) const noexcept -> decltype(f(std::declval<const core_type&>())) {
    auto* self = const_cast<queue*>(this);
    auto out = [&] {
      holder h(*self);
      return f(core_);
    }();
    self->after_unlock(false);
    return out;
  }

  /// Fails the epoch timeline and the axis of the attached tracker (the
  /// device's, or the one given to track_completion).
  void fail(const error& e) noexcept {
    (void)core_.backend().timeline().fail_host(e);
    core_.fail_completion(e);
  }

  /// Fails the timeline and the tracker axis with the queue's sticky
  /// failure once every batch sent before it has completed. Any thread,
  /// without mutex_ (fail() runs waiters' callbacks).
  void apply_due_failure() noexcept {
    if (failure_applied_.load(std::memory_order_acquire)) return;
    const error* e = core_.backend().failure_due(core_.completed_epoch());
    if (e == nullptr || failure_applied_.exchange(true, std::memory_order_acq_rel)) return;
    fail(*e);
  }

  bool next_wait(VkSemaphore& h, std::uint64_t& v) noexcept {
    semaphore& tl = core_.backend().timeline();
    const std::uint64_t done = tl.value();
    const bool busy = core_.backend().sent_epoch() > done && !tl.failed();
    core_.backend().set_watched(busy);
    if (!busy) return false;
    v = done + 1;
    tl.epoch_wait_target(h, v);
    return true;
  }

  /// Called with mutex_ held: keeps the device's count of queues that hold
  /// submissions in step.
  void update_held() noexcept {
    const bool held = core_.backend().held_count() != 0;
    if (held == has_held_) return;
    has_held_ = held;
    device_->held_changed(held ? 1 : -1);
  }

  /// mutex_ plus the id of the thread holding it, so that a kick reached
  /// re-entrantly from inside this queue's own submit (device loss found
  /// by the driver call) only leaves a request instead of re-locking.
  class holder {
   public:
    explicit holder(queue& q) noexcept : q_(q) {
      q_.mutex_.lock();
      q_.owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
    }
    holder(queue& q, std::adopt_lock_t) noexcept : q_(q) {
      q_.owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
    }
    holder(const holder&) = delete;
    holder& operator=(const holder&) = delete;
    ~holder() {
      q_.owner_.store(std::thread::id{}, std::memory_order_relaxed);
      q_.mutex_.unlock();
    }

   private:
    queue& q_;
  };

  /// Retries held submissions from another thread; never blocks.
  void kick() noexcept {
    pump_requested_.store(true, std::memory_order_seq_cst);
    // relaxed: only this thread's own store can make it equal (a stale
    // value is some other thread's id or none).
    if (owner_.load(std::memory_order_relaxed) == std::this_thread::get_id()) return;
    if (!mutex_.try_lock()) return;  // the holder re-checks after unlocking
    bool progressed;
    {
      holder h(*this, std::adopt_lock);
      progressed = drain_locked();
    }
    after_unlock(progressed);
  }

  /// With mutex_ held: serves pump requests. True when something was
  /// executed or dropped.
  bool drain_locked() noexcept {
    bool progressed = false;
    while (pump_requested_.exchange(false, std::memory_order_seq_cst)) {
      if (core_.backend().held_count() == 0) continue;
      // A dropped batch has failed its signals.
      progressed = core_.backend().resume() || progressed;
    }
    update_held();
    return progressed;
  }

  /// After releasing mutex_: serve pump requests that arrived while we held
  /// it, then wake other queues if this one submitted signals.
  void after_unlock(bool submitted_signals) noexcept {
    while (pump_requested_.load(std::memory_order_seq_cst)) {
      if (!mutex_.try_lock()) break;  // its holder will see the request
      holder h(*this, std::adopt_lock);
      submitted_signals = drain_locked() || submitted_signals;
    }
    if (submitted_signals && device_->any_held()) device_->kick_all();
    apply_due_failure();
  }

  device* device_;
  status setup_{};
  bool tracked_ = false;
  bool has_held_ = false;
  mutable std::mutex mutex_;
  std::atomic<std::thread::id> owner_{};
  std::atomic<bool> pump_requested_{false};
  std::atomic<bool> failure_applied_{false};
  detail::device_member member_{};
  core_type core_;
};

}  // namespace vulkan

CAUSAL_END_NAMESPACE
