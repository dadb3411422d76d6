// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// completion: the per-axis record of how far each timeline participant has
// retired, and the waiters that fire once a whole frontier has retired.
//
// A completion tracker holds, for each registered axis, the highest epoch
// known to have *retired* (completed, with every earlier operation of that
// axis; docs/queues.md). Queues report completions and semaphores report
// reached values through `advance(axis, epoch)`, which only ever raises the
// epoch. Anyone can read it lock-free (`retired_epoch`, `is_retired`,
// `covers`). A `completion_waiter` is a caller-owned node naming a
// requirement frontier; it fires exactly once:
//
//   ok                   every entry (a, e) of the requirement has
//                        retired_epoch(a) >= e;
//   the axis's error     some axis it still needs was failed (`fail_axis`);
//   errc::cancelled      some axis it still needs was retired for good
//                        (`retire_axis`), or the tracker was destroyed;
//   errc::out_of_range   the requirement names an unregistered axis, or an
//                        epoch above `max_epoch` that could never retire;
//   errc::failed_precondition
//                        the requirement is tainted: a requirement that lost
//                        entries can never be proven met (docs/frontiers.md).
//                        Check its producer entry with `is_retired` instead.
//
// Axis states. Each axis is `live`, `failed` or `retired`; the last two are
// terminal and freeze the axis's epoch (`advance` on them fails with
// `errc::failed_precondition`). A failed axis stays failed when retired, so
// its first error keeps being delivered. Slots are never freed and axes are
// never reused: registering an axis a second time, even a retired one, is
// `errc::invalid_argument`.
//
//   live --fail_axis--> failed       (first error wins; a second fail is a no-op)
//   live --retire_axis--> retired    (pending waiters that need it: cancelled)
//
// The epoch and the state share one 64-bit word per axis (state in the top
// two bits, epoch below, hence `max_epoch` = 2^62 - 1), so advancing and
// failing an axis are one CAS each and linearise: no waiter can see an epoch
// raised "after" the failure it was failed for.
//
// Thread safety: every member may be called concurrently, except the
//                destructor. Callbacks run on the thread whose call made
//                the waiter ready (`advance`, `fail_axis`, `retire_axis`,
//                `add_waiter`), after the internal lock is released, so a
//                callback may call back into the tracker, destroy its node,
//                or re-add it. Callbacks must not throw.
// Memory order:  `advance(a, e)` releases; a read that observes a retired
//                epoch >= e (`retired_epoch`, `is_retired`, `covers`, a
//                waiter's callback) acquires, so what the advancing thread
//                did before `advance` happens-before it. `advance` and
//                `add_waiter` pair through seq_cst operations on the epoch
//                word and the parked-waiter count (see `advance`), which is
//                what lets `advance` skip the lock when nobody waits.
// Blocking/allocation: never allocates, after construction or anywhere
//                else. Reads (`retired_epoch`, `try_retired_epoch`,
//                `is_retired`, `covers`, `axis_status`) and `advance` with
//                no parked waiters never lock. `advance` with parked
//                waiters, `add_waiter`, `cancel`, `register_axis`,
//                `fail_axis` and `retire_axis` take a short internal lock
//                (std::mutex) that is never held while a callback runs.
// Size:          one cache line per axis slot (epoch word and failure, so
//                advances of different axes never share a line), a dense
//                array of MaxAxes axis values for lookup, and one line for
//                the lock and waiter list: about 4.7 KiB for MaxAxes = 64.
//                `completion_waiter` is about 290 bytes (it holds a
//                `frontier`).
// Configuration: MaxAxes (default 64): the fixed number of axis slots;
//                CAUSAL_CACHELINE_SIZE. Waiters hold the default
//                `causal::frontier`; `covers` takes any frontier type.
// See also:      docs/frontiers.md and docs/queues.md, <causal/frontier.hpp>,
//                <causal/axis.hpp>, <causal/result.hpp>.
#pragma once

#include <causal/axis.hpp>
#include <causal/config.hpp>
#include <causal/frontier.hpp>
#include <causal/result.hpp>

#include <boost/intrusive/list.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

CAUSAL_BEGIN_NAMESPACE

template <std::size_t MaxAxes = 64>
class basic_completion_tracker;

namespace detail {
/// The hook that links a `completion_waiter` into a tracker's waiter list.
/// normal_link: the tracker knows, under its lock, whether a node is parked
/// (`owner_`), so safe-mode bookkeeping would only cost stores.
using completion_waiter_hook =
    boost::intrusive::list_member_hook<boost::intrusive::link_mode<boost::intrusive::normal_link>>;
}  // namespace detail

//===-- completion_waiter -------------------------------------------------===//

/// A caller-owned node that waits until every entry of its requirement
/// frontier has retired, then calls `callback(*this, status)` exactly once.
///
/// The node is linked by address, so it is neither copyable nor movable.
/// Between `add_waiter` and its callback (or a `cancel` that returns true)
/// it belongs to the tracker: do not modify or destroy it. Once the
/// callback starts, the node is the caller's again: the callback may
/// destroy it, change it, or add it again.
///
/// Thread safety: the setters need exclusive access to an idle node.
class completion_waiter {
 public:
  /// Called once with the outcome (see the header comment). Must not throw.
  using callback_type = void (*)(completion_waiter&, status);

  /// Creates an idle waiter with an empty requirement and no callback.
  completion_waiter() noexcept = default;

  /// Creates an idle waiter for `requirement` that calls `callback`.
  completion_waiter(const frontier& requirement, callback_type on_met,
                    void* user_data = nullptr) noexcept
      : requirement_(requirement), callback_(on_met), user_data_(user_data) {}

  completion_waiter(const completion_waiter&) = delete;
  completion_waiter& operator=(const completion_waiter&) = delete;

  ~completion_waiter() {
    CAUSAL_ASSERT(owner_ == nullptr,
                  "completion_waiter destroyed while parked; cancel() it first");
  }

  /// Returns the frontier this waiter waits for.
  [[nodiscard]] const frontier& requirement() const noexcept { return requirement_; }
  /// Returns the callback, or nullptr when none was set.
  [[nodiscard]] callback_type callback() const noexcept { return callback_; }
  /// Returns the opaque pointer the callback may use.
  [[nodiscard]] void* user_data() const noexcept { return user_data_; }

  /// Replaces the requirement. Precondition: the waiter is idle.
  void set_requirement(const frontier& requirement) noexcept { requirement_ = requirement; }
  /// Replaces the callback. Precondition: the waiter is idle.
  void set_callback(callback_type on_met) noexcept { callback_ = on_met; }
  /// Replaces the user data. Precondition: the waiter is idle.
  void set_user_data(void* user_data) noexcept { user_data_ = user_data; }

 private:
  template <std::size_t>
  friend class basic_completion_tracker;

  // Written only by the tracker, under its lock while parked.
  detail::completion_waiter_hook hook_;
  // The tracker this node is parked in, or nullptr when idle or firing.
  const void* owner_ = nullptr;
  // The outcome, set when the tracker takes the node off its list to fire.
  status outcome_{};
  // The slot of each requirement entry, resolved once by add_waiter (axes
  // never move between slots), so re-evaluation needs no lookups.
  std::uint16_t slots_[frontier::capacity]{};

  // Set by the owner while idle.
  frontier requirement_{};
  callback_type callback_ = nullptr;
  void* user_data_ = nullptr;
};

//===-- basic_completion_tracker ------------------------------------------===//

/// Per-axis highest retired epoch for up to `MaxAxes` axes, with waiters on
/// frontiers. See the header comment for the model and contract.
///
/// Cache-line map:
///
///   axes_[MaxAxes]      dense; written once per register_axis (under the
///                       lock), read by every lookup
///   registered_         written by register_axis, read by every lookup
///   slots_[i]           one line each: the epoch|state word (written by
///                       advance/fail/retire of axis i) and its failure
///   mutex_, waiters_,   one line: written by waiters and by advances that
///   parked_             find waiters
///
/// Policies and traits: `MaxAxes` (1 to 4096; lookups are linear scans).
template <std::size_t MaxAxes>
class basic_completion_tracker {
  static_assert(MaxAxes >= 1, "basic_completion_tracker: MaxAxes must be at least 1");
  static_assert(MaxAxes <= 4096,
                "basic_completion_tracker: MaxAxes must be at most 4096 (lookups are linear scans)");
  static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
                "basic_completion_tracker: needs lock-free 64-bit atomics for lock-free reads");

 public:
  /// The number of axis slots.
  static constexpr std::size_t max_axes = MaxAxes;
  /// The largest epoch an axis can retire (the top two bits of the epoch
  /// word hold the axis state).
  static constexpr std::uint64_t max_epoch = (std::uint64_t{1} << 62) - 1;

  /// Creates a tracker with no axes and no waiters. Never allocates.
  basic_completion_tracker() noexcept = default;

  basic_completion_tracker(const basic_completion_tracker&) = delete;
  basic_completion_tracker& operator=(const basic_completion_tracker&) = delete;

  /// Delivers `errc::cancelled` to every waiter still parked.
  /// Precondition: no other member is running or will run.
  ~basic_completion_tracker() {
    waiter_list ready;
    {
      std::lock_guard lock(mutex_);
      while (!waiters_.empty()) {
        completion_waiter& w = waiters_.front();
        waiters_.pop_front();
        w.owner_ = nullptr;
        w.outcome_ = error{errc::cancelled, "completion tracker destroyed while the waiter was parked"};
        ready.push_back(w);
      }
      parked_.store(0, std::memory_order_relaxed);
    }
    fire_all(ready);
  }

  //===-- axes ------------------------------------------------------------===//

  /// Adds `a` as a live axis with retired epoch 0.
  ///
  /// Fails with `errc::invalid_argument` when `a.raw() == 0` or `a` was
  /// registered before (even if since retired: axes are never reused), and
  /// with `errc::capacity_exceeded` when all `MaxAxes` slots are taken.
  /// Complexity: O(registered axes), under the lock.
  status register_axis(axis a) noexcept {
    if (a.raw() == 0) {
      return error{errc::invalid_argument, "axis 0 cannot be registered with a completion tracker", 0};
    }
    std::lock_guard lock(mutex_);
    const std::size_t n = registered_.load(std::memory_order_relaxed);  // we are the only writer
    for (std::size_t i = 0; i < n; ++i) {
      if (axes_[i].load(std::memory_order_relaxed) == a.raw()) {
        return error{errc::invalid_argument,
                     "axis already registered with this completion tracker (axes are never reused)",
                     a.raw()};
      }
    }
    if (n == MaxAxes) {
      return error{errc::capacity_exceeded, "completion tracker has no free axis slot (MaxAxes)",
                   MaxAxes};
    }
    // Slot n has never been used; nobody reads it until registered_ says so.
    slots_[n].word.store(pack(axis_state::live, 0), std::memory_order_relaxed);
    axes_[n].store(a.raw(), std::memory_order_relaxed);
    // release: pairs with the acquire load of registered_ in find(); a
    // reader that counts slot n sees its axis and initial word.
    registered_.store(n + 1, std::memory_order_release);
    return {};
  }

  /// Returns the number of registered axes (retired ones included).
  [[nodiscard]] std::size_t axis_count() const noexcept {
    return registered_.load(std::memory_order_acquire);
  }

  /// Raises the retired epoch of `a` to `epoch` and fires, with ok, every
  /// parked waiter that is now satisfied (exactly once each, after the lock
  /// is released, on this thread). A lower or equal `epoch` changes nothing
  /// and returns ok.
  ///
  /// Fails with `errc::out_of_range` when `a` is not registered or `epoch`
  /// exceeds `max_epoch`, and with `errc::failed_precondition` when `a` was
  /// failed or retired (its epoch is frozen).
  ///
  /// Lock-free (one lookup and one CAS loop) when no waiter is parked.
  status advance(axis a, std::uint64_t epoch) noexcept {
    const std::size_t i = find(a);
    if (i == MaxAxes) [[unlikely]] {
      return error{errc::out_of_range, "axis not registered with this completion tracker", a.raw()};
    }
    if (epoch > max_epoch) [[unlikely]] {
      return error{errc::out_of_range, "epoch exceeds completion tracker max_epoch (2^62 - 1)",
                   epoch};
    }
    std::atomic<std::uint64_t>& word = slots_[i].word;
    std::uint64_t w = word.load(std::memory_order_relaxed);  // the CAS re-checks
    for (;;) {
      if (state_of(w) != axis_state::live) [[unlikely]] {
        return frozen_error(state_of(w), a);
      }
      if (epoch_of(w) >= epoch) return {};
      // seq_cst (a release, and more): the release pairs with the acquire
      // loads of the word in readers and waiter evaluation. seq_cst because
      // this store and the load of parked_ below form a Dekker pair with
      // add_waiter's increment of parked_ and its re-check of the word:
      // in the single order of seq_cst operations one of them comes first,
      // so either this load sees the waiter counted or its re-check sees
      // this epoch. Without it a waiter could park just after we looked.
      if (word.compare_exchange_weak(w, pack(axis_state::live, epoch), std::memory_order_seq_cst,
                                     std::memory_order_relaxed)) {
        break;
      }
    }
    if (parked_.load(std::memory_order_seq_cst) == 0) [[likely]] return {};
    fire_ready();
    return {};
  }

  /// Fails `a` with `e`: every parked waiter that still needs `a` beyond its
  /// retired epoch gets `e`, and so does every such waiter added later.
  /// Sticky, first error wins: failing a failed axis is a no-op returning
  /// ok. The axis's epoch is frozen.
  ///
  /// Fails with `errc::out_of_range` for an unregistered axis,
  /// `errc::invalid_argument` when `e` is not an error, and
  /// `errc::failed_precondition` when `a` was retired.
  status fail_axis(axis a, error e) noexcept {
    if (e.code() == errc::ok) {
      return error{errc::invalid_argument, "fail_axis needs an error, not errc::ok", a.raw()};
    }
    return change_state(a, axis_state::failed, &e);
  }

  /// Retires `a` for good (its participant is gone): every parked waiter
  /// that still needs `a` beyond its retired epoch gets `errc::cancelled`,
  /// and so does every such waiter added later. Entries at or below the
  /// retired epoch stay satisfied. The slot stays reserved; the axis can
  /// never be registered again. Retiring a retired axis is a no-op; a
  /// failed axis stays failed (its error keeps being delivered).
  ///
  /// Fails with `errc::out_of_range` for an unregistered axis.
  status retire_axis(axis a) noexcept { return change_state(a, axis_state::retired, nullptr); }

  //===-- reads (lock-free) -----------------------------------------------===//

  /// Returns the highest retired epoch of `a`, or 0 when `a` is not
  /// registered. Lock-free: a linear scan of the registered axes, then one
  /// acquire load. Complexity: O(registered axes).
  [[nodiscard]] std::uint64_t retired_epoch(axis a) const noexcept {
    const std::size_t i = find(a);
    if (i == MaxAxes) return 0;
    // acquire: pairs with the CAS in advance(); see "Memory order" above.
    return epoch_of(slots_[i].word.load(std::memory_order_acquire));
  }

  /// Returns the highest retired epoch of `a`, or `errc::out_of_range` when
  /// `a` is not registered.
  [[nodiscard]] result<std::uint64_t> try_retired_epoch(axis a) const noexcept {
    const std::size_t i = find(a);
    if (i == MaxAxes) {
      return error{errc::out_of_range, "axis not registered with this completion tracker", a.raw()};
    }
    return epoch_of(slots_[i].word.load(std::memory_order_acquire));  // acquire: as above
  }

  /// Returns ok for a live axis, its error for a failed one,
  /// `errc::cancelled` for a retired one, and `errc::out_of_range` for an
  /// unregistered one.
  [[nodiscard]] status axis_status(axis a) const noexcept {
    const std::size_t i = find(a);
    if (i == MaxAxes) {
      return error{errc::out_of_range, "axis not registered with this completion tracker", a.raw()};
    }
    // acquire: pairs with the CAS in change_state(), after which failure is
    // never written again.
    const axis_state s = state_of(slots_[i].word.load(std::memory_order_acquire));
    if (s == axis_state::failed) return slots_[i].failure;
    if (s == axis_state::retired) return retired_error(a);
    return {};
  }

  /// Returns true when `e.axis` has retired at least to `e.epoch` (always
  /// true for epoch 0). This is how a caller checks the producer entry of a
  /// tainted requirement (docs/frontiers.md).
  [[nodiscard]] bool is_retired(frontier_entry e) const noexcept {
    return retired_epoch(e.axis) >= e.epoch;
  }

  /// Returns true when every entry of `requirement` has retired. A tainted
  /// requirement is never covered: it may have lost entries, so it can
  /// never be proven met (check its producer entry with `is_retired`).
  /// Complexity: O(requirement.size() * registered axes).
  template <frontier_type F>
  [[nodiscard]] bool covers(const F& requirement) const noexcept {
    if (requirement.tainted()) return false;
    for (const frontier_entry e : requirement) {
      if (!is_retired(e)) return false;
    }
    return true;
  }

  //===-- waiters -----------------------------------------------------------===//

  /// Returns how many waiters are parked (a snapshot).
  [[nodiscard]] std::size_t waiter_count() const noexcept {
    return parked_.load(std::memory_order_relaxed);
  }

  /// Parks `w` until its requirement is met, or fires it right away, on
  /// this thread, when its outcome is already known (met, an axis failed or
  /// retired, an unknown axis, a tainted requirement; see the header
  /// comment). Either way its callback runs exactly once, unless `cancel`
  /// returns true first.
  ///
  /// Preconditions: `w` is idle and has a callback.
  /// Complexity: O(requirement.size() * registered axes) to resolve slots,
  /// then O(requirement.size()) under the lock.
  void add_waiter(completion_waiter& w) noexcept {
    CAUSAL_ASSERT(w.owner_ == nullptr, "completion_waiter is already parked");
    CAUSAL_ASSERT(w.callback_ != nullptr, "completion_waiter has no callback");
    const frontier& r = w.requirement_;
    if (r.tainted()) {
      fire_one(w, error{errc::failed_precondition,
                        "tainted requirement can never be proven met; check its producer entry "
                        "with is_retired() instead",
                        r.size()});
      return;
    }
    for (std::size_t k = 0; k < r.size(); ++k) {
      const frontier_entry e = r[k];
      const std::size_t i = find(e.axis);
      if (i == MaxAxes) {
        fire_one(w, error{errc::out_of_range,
                          "requirement names an axis not registered with this completion tracker",
                          e.axis.raw()});
        return;
      }
      if (e.epoch > max_epoch) {
        fire_one(w, error{errc::out_of_range,
                          "requirement epoch exceeds completion tracker max_epoch; it could never "
                          "retire",
                          e.epoch});
        return;
      }
      w.slots_[k] = static_cast<std::uint16_t>(i);
    }
    // Lock-free first look: outcomes are permanent (epochs only rise, and
    // failed/retired are terminal), so a final one can fire now.
    if (const verdict v = evaluate(w, std::memory_order_acquire); v.final) {
      fire_one(w, v.outcome);
      return;
    }
    verdict v;
    {
      std::lock_guard lock(mutex_);
      // seq_cst: the other half of the Dekker pair described in advance().
      parked_.fetch_add(1, std::memory_order_seq_cst);
      v = evaluate(w, std::memory_order_seq_cst);
      if (!v.final) {
        w.owner_ = this;
        waiters_.push_back(w);
        return;
      }
      // relaxed: undoing our own increment; see the note in take().
      parked_.fetch_sub(1, std::memory_order_relaxed);
    }
    fire_one(w, v.outcome);
  }

  /// Removes `w` if it is parked here. Returns true when it was, so its
  /// callback will never run; false when it was not parked here: its
  /// callback has run, is running, or is about to run on the thread that
  /// made it ready (or it was never added).
  bool cancel(completion_waiter& w) noexcept {
    std::lock_guard lock(mutex_);
    if (w.owner_ != this) return false;
    waiters_.erase(waiters_.iterator_to(w));
    w.owner_ = nullptr;
    parked_.fetch_sub(1, std::memory_order_relaxed);  // see the note in take()
    return true;
  }

 private:
  using waiter_list = boost::intrusive::list<
      completion_waiter,
      boost::intrusive::member_hook<completion_waiter, detail::completion_waiter_hook,
                                    &completion_waiter::hook_>,
      boost::intrusive::constant_time_size<false>>;

  enum class axis_state : std::uint64_t { live = 0, failed = 1, retired = 2 };

  static constexpr unsigned state_shift = 62;

  static constexpr std::uint64_t pack(axis_state s, std::uint64_t epoch) noexcept {
    return (static_cast<std::uint64_t>(s) << state_shift) | epoch;
  }
  static constexpr axis_state state_of(std::uint64_t word) noexcept {
    return static_cast<axis_state>(word >> state_shift);
  }
  static constexpr std::uint64_t epoch_of(std::uint64_t word) noexcept { return word & max_epoch; }

  static error retired_error(axis a) noexcept {
    return error{errc::cancelled,
                 "axis was retired (its participant is gone) before the required epoch retired",
                 a.raw()};
  }
  static error frozen_error(axis_state s, axis a) noexcept {
    return s == axis_state::failed
               ? error{errc::failed_precondition, "axis has failed; its retired epoch is frozen",
                       a.raw()}
               : error{errc::failed_precondition, "axis was retired; its retired epoch is frozen",
                       a.raw()};
  }

  /// One axis's mutable state, alone on its cache line so advances of
  /// different axes never contend.
  struct alignas(CAUSAL_CACHELINE_SIZE) slot {
    // state (top two bits) | retired epoch. Written by advance, fail_axis
    // and retire_axis; read by everything.
    std::atomic<std::uint64_t> word{0};
    // Written once, under the lock, before the word turns failed; read only
    // after observing the failed state, so it needs no atomics.
    error failure{};
  };

  struct verdict {
    bool final = false;
    status outcome{};
  };

  /// Returns the slot index of `a`, or MaxAxes when it is not registered.
  /// A linear scan of the registered prefix: slots fill in order and are
  /// never freed, so the prefix only grows.
  std::size_t find(axis a) const noexcept {
    // acquire: pairs with the release store in register_axis(), making
    // axes_[0, n) and their initial words visible; the relaxed loads of
    // axes_ below read values that never change again.
    const std::size_t n = registered_.load(std::memory_order_acquire);
    const std::uint64_t raw = a.raw();
    if (raw == 0) return MaxAxes;
    for (std::size_t i = 0; i < n; ++i) {
      if (axes_[i].load(std::memory_order_relaxed) == raw) return i;
    }
    return MaxAxes;
  }

  /// Decides `w`'s outcome from the current words, using the slots that
  /// add_waiter resolved. A failure beats a retirement, and both beat
  /// entries still pending: the waiter could never be met.
  verdict evaluate(const completion_waiter& w, std::memory_order order) const noexcept {
    const frontier& r = w.requirement_;
    const auto epochs = r.epochs();
    const error* failure = nullptr;
    std::size_t retired_at = MaxAxes;  // the slot of the first retired axis still needed
    bool pending = false;
    for (std::size_t k = 0; k < r.size(); ++k) {
      const slot& s = slots_[w.slots_[k]];
      // acquire (or seq_cst from add_waiter): pairs with advance()'s CAS,
      // so a waiter's callback happens-after the advances that met it.
      const std::uint64_t word = s.word.load(order);
      if (epoch_of(word) >= epochs[k]) continue;
      switch (state_of(word)) {
        case axis_state::failed:
          if (failure == nullptr) failure = &s.failure;
          break;
        case axis_state::retired:
          if (retired_at == MaxAxes) retired_at = w.slots_[k];
          break;
        case axis_state::live:
          pending = true;
          break;
      }
    }
    if (failure != nullptr) return {true, *failure};
    if (retired_at != MaxAxes) {
      return {true, retired_error(axis{axes_[retired_at].load(std::memory_order_relaxed)})};
    }
    if (pending) return {false, {}};
    return {true, {}};
  }

  /// Moves `w` from the waiter list to `ready`. Caller holds the lock.
  void take(completion_waiter& w, status outcome, waiter_list& ready) noexcept {
    waiters_.erase(waiters_.iterator_to(w));
    w.owner_ = nullptr;
    w.outcome_ = outcome;
    ready.push_back(w);
    // relaxed: decrements order nothing. advance() reading a count that is
    // too high only sends it to the lock for nothing; it cannot read one
    // too low, since each waiter's decrement follows its own increment.
    parked_.fetch_sub(1, std::memory_order_relaxed);
  }

  /// Collects every parked waiter whose outcome is now final. Caller holds
  /// the lock.
  void collect_ready(waiter_list& ready) noexcept {
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      completion_waiter& w = *it++;
      if (const verdict v = evaluate(w, std::memory_order_acquire); v.final) take(w, v.outcome, ready);
    }
  }

  /// Slow path of advance(): fires the waiters it may have satisfied.
  CAUSAL_NOINLINE void fire_ready() noexcept {
    waiter_list ready;
    {
      std::lock_guard lock(mutex_);
      collect_ready(ready);
    }
    fire_all(ready);
  }

  /// fail_axis / retire_axis: moves `a` to `to`, then fires the waiters
  /// that can no longer be met.
  status change_state(axis a, axis_state to, const error* failure) noexcept {
    const std::size_t i = find(a);
    if (i == MaxAxes) {
      return error{errc::out_of_range, "axis not registered with this completion tracker", a.raw()};
    }
    waiter_list ready;
    {
      std::lock_guard lock(mutex_);
      slot& s = slots_[i];
      std::uint64_t w = s.word.load(std::memory_order_relaxed);  // the CAS re-checks
      const axis_state from = state_of(w);
      if (from == axis_state::retired && to == axis_state::failed) {
        return error{errc::failed_precondition, "cannot fail an axis that was retired", a.raw()};
      }
      if (from != axis_state::live) return {};  // sticky: first terminal state wins
      // Only this thread, under the lock, leaves the live state, so the
      // failure is written exactly once, before the word says failed.
      if (failure != nullptr) s.failure = *failure;
      // release: pairs with the acquire loads in evaluate()/axis_status(),
      // which read `failure` after seeing the failed state. Only advance()
      // races with us, and it only raises the epoch of a live word.
      while (!s.word.compare_exchange_weak(w, pack(to, epoch_of(w)), std::memory_order_release,
                                           std::memory_order_relaxed)) {
      }
      collect_ready(ready);
    }
    fire_all(ready);
    return {};
  }

  /// Fires one waiter that never reached the list.
  static void fire_one(completion_waiter& w, status outcome) noexcept {
    w.callback_(w, outcome);
  }

  /// Fires every waiter in `ready`. Called without the lock. Each node is
  /// unlinked before its callback, which may destroy or re-add it.
  static void fire_all(waiter_list& ready) noexcept {
    while (!ready.empty()) {
      completion_waiter& w = ready.front();
      ready.pop_front();
      const status outcome = w.outcome_;
      w.callback_(w, outcome);
    }
  }

  // Lookup: dense, read by everyone, written once per axis under the lock.
  std::atomic<std::uint64_t> axes_[MaxAxes]{};
  std::atomic<std::size_t> registered_{0};

  slot slots_[MaxAxes]{};

  // Waiters: written under the lock; parked_ is also read by advance().
  alignas(CAUSAL_CACHELINE_SIZE) std::mutex mutex_;
  waiter_list waiters_;
  std::atomic<std::size_t> parked_{0};
};

/// The default tracker: 64 axis slots.
using completion_tracker = basic_completion_tracker<>;

CAUSAL_END_NAMESPACE
