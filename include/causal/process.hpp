// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// process: the one unit of work of the cooperative executor, drained in
// bounded steps by one or more workers, with a suspend count, first-error-
// wins status, cancellation and a list of dependents to wake on completion.
//
// Model (docs/executor.md). A process is a caller-owned
// node holding a drain function `drain(process&, worker_context&)` that does
// a bounded amount of work and returns a `drain_result`:
//
//   completed    the process is finished: completion runs (once), then
//                every dependent is woken, then release runs once no
//                worker is inside drain() any more;
//   keep_active  (when not completed) drain me again; false asks to go to
//                sleep until the next wake() (call suspend() first: a
//                process that returns keep_active = false with a suspend
//                count of 0 is simply drained again later, at the back of
//                the queue);
//   did_work     false tells the worker this call found nothing to do, so
//                it counts toward the worker's spin-then-park budget.
//
// A process in a compute slot (wake budget > 1) is drained by several
// workers at once. Workers do not enter it while its suspend count is above
// 0, but drainers already inside run on: to sleep, exactly one of them must
// suspend it (a flag in the process's own state does it), and completion
// may be reported by any of them (the first report wins).
//
// A process is runnable when its suspend count is 0. It is created with a
// count of 1, the *submit hold*: `suspend(n)` adds pending wakes (one per
// upstream dependency, or before sleeping), `executor.submit(p)` binds it to
// an executor and drops the hold, and `wake(n)` drops n. Exactly the call
// that drives the count to 0 makes the process runnable and hands it to its
// executor; there is no coordinator. The life of a process:
//
//   created (count 1) --submit--> suspended (count > 0) --last wake-->
//   active: queued / draining --drain: completed--> completing --> released
//              ^      |  keep_active = false with count > 0
//              |      v
//              +-- sleeping (count > 0) <-- wake() drives count to 0
//
// Reuse. A completed, released process can be run again with rearm(n); a
// process with set_auto_rearm(n) re-arms itself as it completes, so a graph
// of them is a reusable task graph that runs again on each wake of its
// entry (like TBB's continue_node).
//
// Errors and cancellation. `fail(e)` records e if no error was recorded
// before (first error wins, one CAS); `cancel()` records `errc::cancelled`
// the same way, so an earlier error is preserved. A worker checks the
// status before every drain() call: a failed or cancelled process is not
// drained again but completes with its error. Cancelling a *suspended*
// process resolves it inline on the cancelling thread: completion runs with
// the error and its dependents are woken. Waking a cancelled (or completed)
// process is a no-op that returns false. When a process completes with an
// error its dependents are still woken (their counts decrement normally),
// but each first inherits the error, so it completes with it too instead of
// being drained: failure and cancellation cascade down the graph.
//
// Cache-line map (fields grouped by who writes them; static-asserted):
//
//   line 0  immutable after submit   drain, completion, release, user data,
//                                    dependents, executor, scope, re-arm count
//   line 1  activation               state word (suspend count | ACTIVE |
//           (wakers, cancellers,     DONE | CANCELLED | FAILED), list link,
//            completers, pushers)    placement, wake budget and priority
//                                    (read by whoever places it), first-
//                                    error claim + error
//   line 2  scope membership         scope links (written under the
//           (submit, release)        scope's lock)
//
// The wake budget is written rarely (configuration, or a drain that asks
// for more workers) but read at every activation, so it sits with the
// state word the activator has just written: a chain hop touches two
// lines of the next process, not three.
//
// Thread safety: wake, wake_all, suspend, cancel, fail and the observers
//                may be called concurrently from any thread while the
//                process is alive.
//                The set_* members configure the process and must be called
//                before submit (set_wake_budget also from its own drain).
//                The caller of any member keeps the process alive.
// Memory order:  the state word is updated by seq_cst read-modify-writes.
//                What a thread wrote before its wake() happens-before the
//                drain() that the wake enabled; what drain() wrote before
//                returning `completed` happens-before the completion
//                callback, the dependents' drains and release. An error
//                recorded by fail()/cancel() is published with the FAILED
//                bit (release) and read after observing it (acquire).
// Blocking/allocation: nothing here blocks or allocates, except that a
//                completer that finds an error claimed but not yet
//                published (a fail() or cancel() between its claim and
//                the store that publishes it) spins, then yields, until it
//                is. wake, suspend, cancel and fail are one CAS loop on
//                the state word (and one fetch_or to publish); an
//                inline resolution (cancel of a suspended process) runs the
//                completion callback and wakes dependents on the caller.
//                wake_all(span) is one CAS loop per entry and hands the
//                processes it activates to their executor in batches (one
//                list push per batch instead of one per process).
// Size:          exactly 3 * CAUSAL_CACHELINE_SIZE bytes, aligned to
//                CAUSAL_CACHELINE_SIZE. Callers embed it (first member or
//                base) in their own object and reach that through user_data.
// Lifetime:      the process must stay alive until its release callback
//                runs. If it has no release callback it may be destroyed by
//                its completion callback, but only if it is single-drainer
//                (wake budget 1 when activated) or resolved by cancel();
//                a process drained by several workers is freed in release.
//                The dependents array is the caller's and must outlive the
//                completion (it is read after the completion callback).
// Configuration: none (the executor's Traits configure scheduling).
// See also:      <causal/executor.hpp>, <causal/scope.hpp>,
//                docs/executor.md.
#pragma once

#include <causal/config.hpp>
#include <causal/detail/spin_lock.hpp>
#include <causal/ext/park_word.hpp>
#include <causal/result.hpp>
#include <causal/trace_sink.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

CAUSAL_BEGIN_NAMESPACE

class process;

//===-- worker_context ------------------------------------------------------===//

/// What a drain function learns about the worker calling it.
///
/// Indices are dense: [0, index_bound()). An executor with W worker threads
/// has index_bound() == W + 1; index W is used by a thread that helps
/// (`run_until_idle()`) or tears the executor down. Per-worker state of a
/// process can therefore live in an array of index_bound() entries, owned
/// by the worker of that index alone: no sharing, no atomics.
class worker_context {
 public:
  constexpr worker_context() noexcept = default;
  constexpr worker_context(std::uint32_t index, std::uint32_t bound) noexcept
      : index_(index), bound_(bound) {}

  /// Returns the index of the calling worker, below index_bound().
  [[nodiscard]] constexpr std::uint32_t worker_index() const noexcept { return index_; }
  /// Returns one more than the largest worker index this executor uses.
  [[nodiscard]] constexpr std::uint32_t index_bound() const noexcept { return bound_; }

 private:
  std::uint32_t index_ = 0;
  std::uint32_t bound_ = 1;
};

//===-- drain_result --------------------------------------------------------===//

/// What one drain() call reports; see the file comment.
struct drain_result {
  bool completed = false;   ///< The process is finished.
  bool did_work = true;     ///< This call made progress.
  bool keep_active = true;  ///< Drain again (ignored when completed).

  /// Returns {completed}.
  [[nodiscard]] static constexpr drain_result complete() noexcept { return {true, true, false}; }
  /// Returns "made progress, drain me again".
  [[nodiscard]] static constexpr drain_result more() noexcept { return {false, true, true}; }
  /// Returns "nothing to do right now, but keep polling me".
  [[nodiscard]] static constexpr drain_result idle() noexcept { return {false, false, true}; }
  /// Returns "go to sleep until woken" (call suspend() before returning it).
  [[nodiscard]] static constexpr drain_result sleep(bool did_work = true) noexcept {
    return {false, did_work, false};
  }
};

namespace detail {

class scope_core;
struct process_access;

/// A long-lived process bound to an executor for the whole life of its
/// owner (a CPU queue): the executor keeps them on a list so that its
/// destructor can refuse, loudly, to leave them behind (docs/lifetimes.md).
/// Circular with the executor's sentinel; linked and unlinked under
/// executor_base::bound_lock (never on a hot path).
struct bound_link {
  bound_link* prev = nullptr;
  bound_link* next = nullptr;
  /// Writes one line naming the owner and what it still has in flight
  /// (null: "a bound process").
  void (*describe)(const bound_link&, char* out, std::size_t size) noexcept = nullptr;
};

/// The executor as a process sees it: two function pointers, no virtuals.
/// basic_executor fills them in; a process reaches its executor through the
/// pointer it got at submit.
struct executor_base {
  /// Places a process that a wake() just made ACTIVE with count 0 (on a
  /// thread that is not completing a process on this executor's worker).
  void (*activate)(executor_base&, process&) noexcept = nullptr;
  /// Places `count` processes that one wake_all() call made ACTIVE, in
  /// the order they were activated: the list-placed ones with one push.
  void (*activate_batch)(executor_base&, process* const* activated,
                         std::uint32_t count) noexcept = nullptr;
  /// Makes the sleeping compute process `p` in slot `slot` scannable again.
  void (*resume)(executor_base&, process&, std::uint32_t slot) noexcept = nullptr;
  /// The drain function changed the wake budget of `p` in slot `slot`.
  void (*budget_changed)(executor_base&, process&, std::uint32_t slot,
                         std::uint32_t budget) noexcept = nullptr;
  /// Where drains, completions and wakes are reported (null: nowhere).
  /// Atomic because workers read it while the owner may (un)install a
  /// sink; relaxed: the sink object itself must outlive any use.
  std::atomic<trace_sink*> trace{nullptr};

  // Cold members last, so that the hot ones above keep their offsets.
  /// Runs ready work on the calling thread until none is runnable, if no
  /// other thread is doing so already (then it returns at once). Used by
  /// what blocks on an executor that has no worker threads (worker_count
  /// 0): a queue's wait_idle and teardown drive the executor themselves.
  void (*help)(executor_base&) noexcept = nullptr;
  /// The number of worker threads (0: the caller drives the executor).
  std::uint32_t workers = 0;
  /// Bound long-lived processes (bound_link), for the destructor's check.
  detail::spin_lock bound_lock;
  bound_link bound_sentinel{&bound_sentinel, &bound_sentinel, nullptr};

  void bind_long_lived(bound_link& link) noexcept {
    detail::spin_guard guard(bound_lock);
    link.prev = bound_sentinel.prev;
    link.next = &bound_sentinel;
    bound_sentinel.prev->next = &link;
    bound_sentinel.prev = &link;
  }
  void unbind_long_lived(bound_link& link) noexcept {
    detail::spin_guard guard(bound_lock);
    if (link.next == nullptr) return;
    link.prev->next = link.next;
    link.next->prev = link.prev;
    link.prev = link.next = nullptr;
  }
};

/// A node of a scope's member list (circular, with a sentinel).
struct scope_link {
  scope_link* prev = nullptr;
  scope_link* next = nullptr;
  process* owner = nullptr;
};

/// Bits of the process state word (see process::state_).
namespace state_bits {
inline constexpr std::uint64_t count_mask = 0xffff'ffffull;
inline constexpr std::uint64_t active = 1ull << 32;     ///< owned by the executor's run machinery
inline constexpr std::uint64_t done = 1ull << 33;       ///< completion claimed
inline constexpr std::uint64_t cancelled = 1ull << 34;  ///< cancel() was called
inline constexpr std::uint64_t failed = 1ull << 35;     ///< an error is recorded (error_ is valid)
inline constexpr std::uint64_t error_claim = 1ull << 36; ///< an error is being recorded
}  // namespace state_bits

/// Placement values (process::placement_): a compute slot index, or a list.
inline constexpr std::uint32_t placed_immediate = 0xffff'fffeu;
inline constexpr std::uint32_t placed_overflow = 0xffff'fffdu;
inline constexpr std::uint32_t placed_nowhere = 0xffff'ffffu;

/// What a wake did, for the caller to act on.
enum class wake_outcome : std::uint8_t {
  ignored,   ///< done or cancelled: nothing happened
  counted,   ///< count decremented, still > 0
  activate,  ///< this call drove the count to 0 and set ACTIVE: place it
  resume,    ///< count reached 0 while ACTIVE: a sleeping slot may need resuming
};

//===-- scope_core ----------------------------------------------------------===//

/// The part of causal::scope that processes and executors call; the public
/// interface is in <causal/scope.hpp>. Members join at submit and leave
/// after release. Joining and leaving take a short spin lock (they happen
/// once per process lifetime and only for processes in a scope); wake,
/// schedule, scan and drain never touch it.
class scope_core {
 public:
  scope_core() noexcept {
    members_.prev = &members_;
    members_.next = &members_;
  }
  scope_core(const scope_core&) = delete;
  scope_core& operator=(const scope_core&) = delete;

  /// Adds `p` to the member list and the live count. Returns true when the
  /// scope was already cancelled (the caller then cancels `p`).
  bool join(process& p) noexcept;
  /// Removes `p` from the member list (its completion has been claimed).
  /// Returns true when it was a member, false when it was not (never
  /// joined, or removed before): exactly one caller sees true per join.
  bool unlink(process& p) noexcept;
  /// Records `e` as the scope's failure unless one was recorded before.
  void record(const error& e) noexcept {
    bool expected = false;
    if (error_claimed_.compare_exchange_strong(expected, true, std::memory_order_relaxed)) {
      error_ = e;
      // release: pairs with the acquire load in failure().
      failed_.store(true, std::memory_order_release);
    }
  }
  /// Drops one live member; wakes wait_idle() at zero.
  void leave() noexcept {
    // The notifier count keeps the scope alive until notify_all() returns:
    // wait_idle() and the destructor wait for it to drain to zero.
    notifying_.fetch_add(1, std::memory_order_seq_cst);
    const std::uint32_t before = live_.fetch_add(~std::uint32_t{0}, std::memory_order_seq_cst);
    CAUSAL_ASSERT(before != 0, "scope: more members left than joined");
    if (before == 1) live_.notify_all();
    // release: pairs with the acquire loads in wait_for_notifiers().
    notifying_.fetch_sub(1, std::memory_order_release);
  }

  /// Returns the scope's sticky failure, or success.
  [[nodiscard]] status failure() const noexcept {
    // acquire: pairs with the release store in record().
    if (failed_.load(std::memory_order_acquire)) return error_;
    return {};
  }

 protected:
  void wait_for_notifiers() const noexcept {
    while (notifying_.load(std::memory_order_acquire) != 0) cpu_relax();
  }

  detail::spin_lock lock_;
  scope_link members_;
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> error_claimed_{false};
  std::atomic<bool> failed_{false};
  std::atomic<std::uint32_t> notifying_{0};
  error error_{};
  /// The live member count is the park word itself: wait_idle() parks on
  /// it until it reads 0.
  ext::park_word live_{0};
};

}  // namespace detail

//===-- process_snapshot ----------------------------------------------------===//

/// Where a process was last placed, as process_snapshot reports it.
enum class process_placement : std::uint8_t {
  nowhere,    ///< never activated (or re-armed since)
  immediate,  ///< an activation ring or the immediate list (one drainer)
  overflow,   ///< the overflow list, waiting for a free compute slot
  slot,       ///< a compute slot (process_snapshot::slot)
};

/// A best-effort view of a process for diagnostics (a hang dump, a debugger
/// helper): what process::snapshot() read, each field with its own relaxed
/// load, so the fields may come from different moments. Never use it to
/// make scheduling decisions.
struct process_snapshot {
  std::uint32_t suspend_count = 0;  ///< pending wakes (the submit hold counts)
  bool active = false;              ///< owned by the executor (queued, draining, asleep in a slot)
  bool complete = false;            ///< completion claimed
  bool cancelled = false;           ///< cancel() was called
  bool failed = false;              ///< an error is recorded
  bool error_claim = false;         ///< an error is being recorded
  bool submitted = false;           ///< bound to an executor
  process_placement placement = process_placement::nowhere;
  std::uint32_t slot = 0;           ///< the compute slot when placement == slot
  std::uint32_t wake_budget = 1;
  std::uint8_t priority = 0;
  const void* user_data = nullptr;

  /// Writes the snapshot as one line of text, e.g. "count 1, asleep in
  /// slot 3, budget 2" (no newline). `Stream`: anything with operator<<
  /// for strings and integers, such as std::ostream; taking it as a
  /// template keeps <ostream> out of this header.
  template <class Stream>
  void describe(Stream& out) const {
    out << "count " << suspend_count;
    if (complete) out << ", complete";
    if (cancelled) out << ", cancelled";
    if (failed) out << ", failed";
    if (error_claim) out << ", recording an error";
    if (!submitted) {
      out << ", not submitted";
    } else if (complete) {
      // Nothing more to say about its activation.
    } else if (!active) {
      out << ", suspended (waits for wakes)";
    } else if (suspend_count != 0) {
      out << ", active with pending wakes (going to sleep, or asleep in a slot)";
    } else {
      out << ", active (queued or draining)";
    }
    switch (placement) {
      case process_placement::nowhere: out << ", placed nowhere"; break;
      case process_placement::immediate: out << ", placed on the immediate list/rings"; break;
      case process_placement::overflow: out << ", placed on the overflow list"; break;
      case process_placement::slot: out << ", placed in slot " << slot; break;
    }
    out << ", budget " << wake_budget << ", priority " << static_cast<unsigned>(priority);
  }
};

//===-- process -------------------------------------------------------------===//

/// A unit of work drained in bounded steps by the executor's workers; see
/// the file comment for the model, the lifecycle and the cache-line map.
///
/// Example:
///
///   causal::process p{[](causal::process& self, causal::worker_context&) noexcept {
///     do_bounded_work(self.user_data());
///     return causal::drain_result::complete();
///   }, &my_state};
///   executor.submit(p);
class alignas(CAUSAL_CACHELINE_SIZE) process {
 public:
  using drain_fn = drain_result (*)(process&, worker_context&) noexcept;
  using completion_fn = void (*)(process&, status) noexcept;
  using release_fn = void (*)(process&) noexcept;

  /// Largest suspend count a process can hold.
  static constexpr std::uint32_t max_suspend_count = 0xffff'fff0u;

  /// Constructs a process with no drain function (set one before submit),
  /// suspend count 1 (the submit hold) and wake budget 1.
  process() noexcept { check_layout(); }
  /// Constructs a process that drains with `drain` and carries `user_data`.
  explicit process(drain_fn drain_function, void* user_data = nullptr) noexcept
      : drain_(drain_function), user_data_(user_data) {
    check_layout();
  }
  process(const process&) = delete;
  process& operator=(const process&) = delete;
  ~process() = default;

  //===-- configuration (before submit) --===//

  void set_drain(drain_fn drain_function) noexcept { drain_ = drain_function; }
  /// Sets the callback run once when the process completes, with its
  /// final status, before its dependents are woken.
  void set_completion(completion_fn on_complete) noexcept { completion_ = on_complete; }
  /// Sets the callback run once after completion, when no worker is inside
  /// drain() any more; the place to free the process.
  void set_release(release_fn on_release) noexcept { release_ = on_release; }
  void set_user_data(void* user_data) noexcept { user_data_ = user_data; }
  /// Sets the processes woken (one wake each) when this one completes. The
  /// array is the caller's; it must outlive this process's completion.
  void set_dependents(std::span<process* const> dependents) noexcept {
    CAUSAL_ASSERT(dependents.size() <= 0xffff'ffffu, "process: too many dependents");
    dependents_ = dependents.data();
    dependent_count_ = static_cast<std::uint32_t>(dependents.size());
  }
  /// Makes the process a member of `s` from submit until release.
  void set_scope(detail::scope_core& s) noexcept {
    CAUSAL_ASSERT(rearm_count_ == 0, "process::set_scope: a re-arming process cannot be in a scope");
    scope_ = &s;
  }
  /// Sets the scan priority (higher first under scan::priority_ordered).
  void set_priority(std::uint8_t priority) noexcept { priority_ = priority; }

  /// Makes the process re-arm itself on every successful completion: in
  /// the same atomic step that claims completion, the worker resets it to
  /// suspended with `suspend_count` pending wakes, still bound to its
  /// executor; then the completion callback, the dependents and release
  /// run as usual. A graph of such processes runs again when woken again,
  /// like a reusable task graph (TBB's continue_node resets its counter the
  /// same way), with no rearm() call and the state word left in the
  /// completing worker's cache. Because the re-arm comes first, whatever
  /// the completion callback triggers can find the process ready for its
  /// next round. A failed or cancelled completion does not re-arm (the
  /// process is complete). 0 (the default) turns it off.
  /// Preconditions: wake budget 1 (single drainer); not in a scope. A
  /// re-arming process is never complete for good. To retire a reusable
  /// graph, cancel its entry process(es) while the graph is idle: the
  /// error cascades through the graph and nothing re-arms. Cancelling a
  /// re-arming process while a run of its graph is in flight may instead
  /// cancel its next round's instance (it re-arms as it completes).
  void set_auto_rearm(std::uint32_t suspend_count) noexcept {
    CAUSAL_ASSERT(suspend_count == 0 || scope_ == nullptr,
                  "process::set_auto_rearm: a re-arming process cannot be in a scope");
    CAUSAL_ASSERT(suspend_count <= max_suspend_count, "process::set_auto_rearm: count too large");
    rearm_count_ = suspend_count;
  }
  [[nodiscard]] std::uint32_t auto_rearm() const noexcept { return rearm_count_; }

  /// Sets how many workers the executor should try to keep on this process.
  /// 1 (the default) puts it on the immediate list, drained by one worker
  /// at a time; more claims a compute slot, drained by several at once.
  /// The placement is chosen each time the process is activated; a change
  /// while it sits in a compute slot updates the slot's budget (and wakes
  /// workers when it grows). Call before submit or from its own drain().
  void set_wake_budget(std::uint32_t budget) noexcept;

  //===-- lifecycle --===//

  /// Adds `n` pending wakes to the suspend count. Called before submit for
  /// dependencies, or from drain() before returning drain_result::sleep().
  void suspend(std::uint32_t n = 1) noexcept {
    // relaxed would do for the count alone; seq_cst keeps every update of
    // the state word in the single total order the sleep handshake needs.
    const std::uint64_t before = state_.fetch_add(n, std::memory_order_seq_cst);
    CAUSAL_ASSERT((before & detail::state_bits::count_mask) + n <= max_suspend_count,
                  "process::suspend: suspend count overflow");
    (void)before;
  }

  /// Drops `n` pending wakes. The call that drives the suspend count to 0
  /// makes the process runnable and hands it to its executor (or resumes it
  /// when it is asleep). Returns false, doing nothing, when the process was
  /// cancelled or has completed; true otherwise.
  ///
  /// Preconditions: the count is at least `n`; a process whose count
  /// reaches 0 has been submitted (the submit hold guarantees this).
  /// Complexity: one CAS loop, plus one list push or slot CAS at zero.
  bool wake(std::uint32_t n = 1) noexcept;

  /// Drops one pending wake of each process in `processes`, in order: the
  /// same as calling wake() on each, except that the processes this call
  /// makes runnable are handed to their executor together, up to
  /// wake_all_batch at a time, so that the ones bound for its immediate
  /// list cost one list push per batch instead of one each. A process it
  /// activates becomes runnable no later than the return of this call.
  /// Returns how many of the wakes were not ignored (wake() returned true).
  ///
  /// Use it where one thread releases many processes at once (the roots
  /// of a graph, the waiters of one event). An entry may repeat (each
  /// occurrence is one wake); entries must not be null.
  /// Complexity: one CAS loop per entry, plus one list push per batch of
  /// activations on one executor. Blocking/allocation: none (the batch is
  /// wake_all_batch pointers on the caller's stack).
  static std::size_t wake_all(std::span<process* const> processes) noexcept;

  /// Activations wake_all() hands over in one call to an executor.
  static constexpr std::uint32_t wake_all_batch = 64;

  /// Cancels the process: records errc::cancelled unless an error was
  /// recorded before, then either resolves it inline (when suspended:
  /// completion runs on this thread with the error, dependents are woken)
  /// or flags it so the executor completes it before its next drain() (when
  /// queued, draining or asleep). Returns true when this call cancelled it:
  /// it will complete with errc::cancelled (or with an error recorded
  /// earlier); false when it had completed already, was cancelled before,
  /// or completed concurrently without seeing this call.
  bool cancel() noexcept;

  /// Records `e` as the process's error unless one was recorded before
  /// (first error wins). The executor completes the process with it before
  /// its next drain(). Returns true when `e` was recorded.
  /// Precondition: e.code() != errc::ok.
  bool fail(error e) noexcept;

  /// Re-arms a completed and released process for another run on the same
  /// executor and scope: suspend count `suspend_count`, no error, no
  /// flags. Cheaper than a fresh submit for graphs that are run many times.
  /// With `suspend_count` 0 it is activated at once.
  /// Preconditions: submitted before; completed and released.
  void rearm(std::uint32_t suspend_count) noexcept;

  //===-- observers --===//

  /// Returns the recorded error, or success.
  [[nodiscard]] status current_status() const noexcept {
    // acquire: pairs with the release fetch_or that published FAILED in
    // record_error(), so error_ is fully written.
    if (state_.load(std::memory_order_acquire) & detail::state_bits::failed) return error_;
    return {};
  }
  [[nodiscard]] std::uint32_t suspend_count() const noexcept {
    return static_cast<std::uint32_t>(state_.load(std::memory_order_acquire) &
                                      detail::state_bits::count_mask);
  }
  /// Returns true once completion has been claimed.
  [[nodiscard]] bool is_complete() const noexcept {
    return (state_.load(std::memory_order_acquire) & detail::state_bits::done) != 0;
  }
  [[nodiscard]] bool is_cancelled() const noexcept {
    return (state_.load(std::memory_order_acquire) & detail::state_bits::cancelled) != 0;
  }
  /// Returns true while the executor owns it (queued, draining, asleep in a
  /// compute slot), false while suspended or before submit.
  [[nodiscard]] bool is_active() const noexcept {
    const std::uint64_t s = state_.load(std::memory_order_acquire);
    return (s & detail::state_bits::active) != 0 && (s & detail::state_bits::done) == 0;
  }
  [[nodiscard]] std::uint32_t wake_budget() const noexcept {
    return wake_budget_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] std::uint8_t priority() const noexcept { return priority_; }
  [[nodiscard]] void* user_data() const noexcept { return user_data_; }
  [[nodiscard]] drain_fn drain() const noexcept { return drain_; }
  [[nodiscard]] completion_fn completion() const noexcept { return completion_; }
  [[nodiscard]] release_fn release() const noexcept { return release_; }
  [[nodiscard]] std::span<process* const> dependents() const noexcept {
    return {dependents_, dependent_count_};
  }
  [[nodiscard]] bool is_submitted() const noexcept {
    return executor_.load(std::memory_order_relaxed) != nullptr;
  }
  /// Called from drain(): true when the calling worker is guaranteed to be
  /// the process's only drainer for this call, so the drain may use plain
  /// loads and stores instead of atomics. That holds when the process was
  /// activated onto one of the executor's lists (wake budget 1 then; list
  /// hand-offs order one drain after the previous), when the executor runs
  /// no worker threads (`ctx.index_bound() == 1`), or when drain() is
  /// called outside any executor. A process in a compute slot is not
  /// exclusive even if only one worker happens to be inside.
  [[nodiscard]] bool is_exclusive_drain(const worker_context& ctx) const noexcept {
    if (ctx.index_bound() == 1) return true;
    // relaxed: written before the process was published to the list or
    // slot this worker took it from (release there, acquire here).
    return placement_.load(std::memory_order_relaxed) >= detail::placed_overflow;
  }

  /// Returns a best-effort view of the state word, placement and wake
  /// budget for diagnostics (see process_snapshot): relaxed loads only,
  /// so it may be called from any thread at any time while the process is
  /// alive, and changes nothing. Blocking/allocation: never.
  [[nodiscard]] process_snapshot snapshot() const noexcept {
    namespace sb = detail::state_bits;
    // relaxed: a diagnostic read; it orders nothing and needs no ordering.
    const std::uint64_t s = state_.load(std::memory_order_relaxed);
    const std::uint32_t where = placement_.load(std::memory_order_relaxed);
    process_snapshot v;
    v.suspend_count = static_cast<std::uint32_t>(s & sb::count_mask);
    v.active = (s & sb::active) != 0;
    v.complete = (s & sb::done) != 0;
    v.cancelled = (s & sb::cancelled) != 0;
    v.failed = (s & sb::failed) != 0;
    v.error_claim = (s & sb::error_claim) != 0;
    v.submitted = executor_.load(std::memory_order_relaxed) != nullptr;
    if (where == detail::placed_nowhere) {
      v.placement = process_placement::nowhere;
    } else if (where == detail::placed_immediate) {
      v.placement = process_placement::immediate;
    } else if (where == detail::placed_overflow) {
      v.placement = process_placement::overflow;
    } else {
      v.placement = process_placement::slot;
      v.slot = where;
    }
    v.wake_budget = wake_budget_.load(std::memory_order_relaxed);
    v.priority = priority_;
    v.user_data = user_data_;
    return v;
  }

 private:
  friend struct detail::process_access;
  friend class detail::scope_core;

  static void check_layout() noexcept {
    // Inside a member function the class is complete, so offsetof works.
    static_assert(std::is_standard_layout_v<process>, "process must be standard-layout");
    static_assert(offsetof(process, drain_) == 0, "line 0 holds the immutable fields");
    static_assert(offsetof(process, scope_) + sizeof(void*) <= CAUSAL_CACHELINE_SIZE,
                  "immutable fields must fit cache line 0");
    static_assert(offsetof(process, state_) == CAUSAL_CACHELINE_SIZE,
                  "activation fields must start cache line 1");
    static_assert(offsetof(process, error_) + sizeof(error) <= 2 * CAUSAL_CACHELINE_SIZE,
                  "activation fields must fit cache line 1");
    static_assert(offsetof(process, wake_budget_) / CAUSAL_CACHELINE_SIZE == 1,
                  "the wake budget is read with the state word: cache line 1");
    static_assert(offsetof(process, scope_link_) == 2 * CAUSAL_CACHELINE_SIZE,
                  "scope membership must start cache line 2");
    static_assert(sizeof(process) == 3 * CAUSAL_CACHELINE_SIZE, "process is three cache lines");
    static_assert(alignof(process) == CAUSAL_CACHELINE_SIZE, "process is cache-line aligned");
  }

  /// Claims the error slot (ERROR_CLAIM, in the state word so that a
  /// completer's claim of DONE sees a claim in flight), writes `e`, then
  /// publishes it with the FAILED bit. Returns false when an error was
  /// claimed before or the process completed first (it keeps the status it
  /// completed with).
  ///
  /// A claim, once made, is always published, even if DONE is claimed in
  /// between, and a completer that saw it waits for it (completion_error):
  /// a recorder that found the claim (a fail() from the drain, the error a
  /// failed predecessor passes on) has backed off for it, so a claim
  /// dropped at DONE would let the process complete successfully with both
  /// errors lost.
  bool record_error(const error& e) noexcept {
    namespace sb = detail::state_bits;
    std::uint64_t s = state_.load(std::memory_order_relaxed);
    do {
      if (s & (sb::done | sb::error_claim)) return false;
    } while (!state_.compare_exchange_weak(s, s | sb::error_claim, std::memory_order_relaxed,
                                           std::memory_order_relaxed));
    error_ = e;
    // release: publishes error_ to the acquire loads of the state word in
    // current_status() and published_error(); seq_cst like every other
    // update of the state word.
    state_.fetch_or(sb::failed, std::memory_order_seq_cst);
    return true;
  }

  /// Returns the recorded error once it is published, for a caller that saw
  /// its claim (ERROR_CLAIM) in the state word. The claimer runs no user
  /// code between its claim and the publication (one copy of an `error`),
  /// so this spins briefly, then yields in case the claimer lost its CPU.
  [[nodiscard]] const error& published_error() const noexcept {
    // acquire: pairs with the release fetch_or in record_error().
    unsigned spins = 0;
    while ((state_.load(std::memory_order_acquire) & detail::state_bits::failed) == 0) {
      detail::spin_then_yield(spins);
    }
    return error_;
  }

  /// The CAS loop behind wake(): see wake_outcome.
  detail::wake_outcome try_wake(std::uint32_t n) noexcept {
    namespace sb = detail::state_bits;
    std::uint64_t s = state_.load(std::memory_order_relaxed);
    std::uint64_t next = 0;
    detail::wake_outcome outcome{};
    do {
      if (s & (sb::done | sb::cancelled)) return detail::wake_outcome::ignored;
      const std::uint64_t count = s & sb::count_mask;
      CAUSAL_ASSERT(count >= n, "process::wake: more wakes than pending suspensions");
      next = s - n;
      if (count != n) {
        outcome = detail::wake_outcome::counted;
      } else if (s & sb::active) {
        outcome = detail::wake_outcome::resume;
      } else {
        next |= sb::active;
        outcome = detail::wake_outcome::activate;
      }
      // seq_cst: the wake is one side of the sleep handshake (the sleeper
      // sets SLEEPING on its slot, then re-reads this word), and it
      // releases the waker's writes to the drain() it enables.
    } while (!state_.compare_exchange_weak(s, next, std::memory_order_seq_cst,
                                           std::memory_order_relaxed));
    return outcome;
  }

  //===-- line 0: immutable after submit --===//
  drain_fn drain_ = nullptr;
  completion_fn completion_ = nullptr;
  release_fn release_ = nullptr;
  void* user_data_ = nullptr;
  process* const* dependents_ = nullptr;
  /// Set by submit. Atomic only because cancel() may read it while
  /// another thread submits; it never changes afterwards.
  std::atomic<detail::executor_base*> executor_{nullptr};
  std::uint32_t dependent_count_ = 0;
  std::uint32_t rearm_count_ = 0;  // 0: no automatic re-arm
  detail::scope_core* scope_ = nullptr;

  //===-- line 1: activation --===//
  /// suspend count (low 32 bits) | ACTIVE | DONE | CANCELLED | FAILED |
  /// ERROR_CLAIM.
  alignas(CAUSAL_CACHELINE_SIZE) std::atomic<std::uint64_t> state_{1};
  /// Link for the executor's lists (immediate, overflow, private chains).
  std::atomic<process*> next_{nullptr};
  /// Compute slot index or detail::placed_*; written when activated.
  std::atomic<std::uint32_t> placement_{detail::placed_nowhere};
  std::atomic<std::uint32_t> wake_budget_{1};
  error error_{};
  std::uint8_t priority_ = 0;

  //===-- line 2: scope membership --===//
  alignas(CAUSAL_CACHELINE_SIZE) detail::scope_link scope_link_{};
};

namespace detail {

/// The executor's window into a process. Not for users.
struct process_access {
  static std::atomic<std::uint64_t>& state(process& p) noexcept { return p.state_; }
  static std::atomic<process*>& next(process& p) noexcept { return p.next_; }
  static const std::atomic<process*>& next(const process& p) noexcept { return p.next_; }
  static std::atomic<std::uint32_t>& placement(process& p) noexcept { return p.placement_; }
  static executor_base* executor(const process& p) noexcept {
    return p.executor_.load(std::memory_order_relaxed);
  }
  static void bind(process& p, executor_base* ex) noexcept {
    p.executor_.store(ex, std::memory_order_relaxed);
  }
  static scope_core* scope(const process& p) noexcept { return p.scope_; }
  static const error& stored_error(const process& p) noexcept { return p.error_; }
  static const error& published_error(const process& p) noexcept { return p.published_error(); }
  static wake_outcome try_wake(process& p, std::uint32_t n) noexcept { return p.try_wake(n); }
  static bool record_error(process& p, const error& e) noexcept { return p.record_error(e); }
  static scope_link& link(process& p) noexcept { return p.scope_link_; }
};

/// The error of a process cancelled before its error was published, and of
/// processes an executor cancels when it is destroyed.
inline constexpr error cancelled_error{errc::cancelled, "process cancelled"};

/// Returns the error a completer reports, given the state word it saw when
/// it claimed DONE (acquire): the recorded error (when its claim was still
/// in flight, once record_error() has published it: the claim came before
/// DONE, so it wins), errc::cancelled for a cancellation with no error
/// recorded, or nullptr for success.
inline const error* completion_error(const process& p, std::uint64_t seen) noexcept {
  if (seen & state_bits::failed) [[unlikely]] return &process_access::stored_error(p);
  if (seen & state_bits::error_claim) [[unlikely]] return &process_access::published_error(p);
  if (seen & state_bits::cancelled) [[unlikely]] return &cancelled_error;
  return nullptr;
}

/// The general case of complete(): a scope, a completion callback or a
/// failure.
template <class Waker>
CAUSAL_NOINLINE bool complete_slow(process& p, const error* failure, Waker& waker) noexcept {
  process* const* const deps = p.dependents().data();
  const std::size_t dep_count = p.dependents().size();
  scope_core* const sc = process_access::scope(p);
  const process::completion_fn completion = p.completion();
  // A copy: `failure` may point into `p`, which its completion may free.
  const error e = failure != nullptr ? *failure : error{};
  const bool member = sc != nullptr && sc->unlink(p);
  if (completion != nullptr) completion(p, failure != nullptr ? status(e) : status());
  // `p` may be gone from here on.
  for (std::size_t i = 0; i < dep_count; ++i) {
    process& d = *deps[i];
    if (failure != nullptr) process_access::record_error(d, e);
    waker.wake(d);
  }
  if (failure != nullptr && sc != nullptr) sc->record(e);
  return member;
}

/// Completes `p` after its caller claimed DONE, with `failure` (nullptr for
/// success): leaves the scope's member list, runs the completion callback,
/// then wakes every dependent (each first inherits the failure) through
/// `waker.wake(process&)`, then records the failure in the scope. The
/// process may be destroyed by its completion callback, so everything
/// needed afterwards is read first. Release (and leaving the scope's live
/// count) is the caller's next step. Returns true when `p` was a member of
/// its scope (and must leave it).
template <class Waker>
CAUSAL_ALWAYS_INLINE bool complete(process& p, const error* failure, Waker& waker) noexcept {
  if (failure == nullptr && p.completion() == nullptr && process_access::scope(p) == nullptr)
      [[likely]] {
    // The common case, kept small: no callback, so `p` stays alive.
    process* const* const deps = p.dependents().data();
    const std::size_t dep_count = p.dependents().size();
    for (std::size_t i = 0; i < dep_count; ++i) waker.wake(*deps[i]);
    return false;
  }
  return complete_slow(p, failure, waker);
}

/// Runs the release phase: release callback, then the scope's live count.
inline void release(process& p, process::release_fn release_cb, scope_core* sc) noexcept {
  if (release_cb != nullptr) release_cb(p);
  if (sc != nullptr) sc->leave();
}

/// The waker used off the executor's workers: the public wake().
struct plain_waker {
  void wake(process& d) noexcept { d.wake(); }
};

//===-- scope_core members that need process --===//

inline bool scope_core::join(process& p) noexcept {
  scope_link& l = process_access::link(p);
  l.owner = &p;
  // seq_cst: pairs with leave(); the count is the park word wait_idle reads.
  live_.fetch_add(1, std::memory_order_seq_cst);
  spin_guard guard(lock_);
  l.prev = members_.prev;
  l.next = &members_;
  members_.prev->next = &l;
  members_.prev = &l;
  return cancelled_.load(std::memory_order_relaxed);
}

inline bool scope_core::unlink(process& p) noexcept {
  scope_link& l = process_access::link(p);
  spin_guard guard(lock_);
  if (l.next == nullptr) return false;  // never joined, or unlinked before
  l.prev->next = l.next;
  l.next->prev = l.prev;
  l.prev = l.next = nullptr;
  return true;
}

}  // namespace detail

//===-- process members -----------------------------------------------------===//

inline bool process::wake(std::uint32_t n) noexcept {
  // For a resume, read before the CAS: once the count reaches 0 the process
  // may run, complete and be freed by a worker before this call returns.
  // acquire: pairs with the release store of a slot placement, which the
  // activator made after it had seen the binding (so `ex` is not stale).
  const std::uint32_t placement = placement_.load(std::memory_order_acquire);
  detail::executor_base* const ex_before = executor_.load(std::memory_order_relaxed);
  switch (try_wake(n)) {
    case detail::wake_outcome::ignored:
      return false;
    case detail::wake_outcome::counted:
      return true;
    case detail::wake_outcome::activate: {
      // Nobody else can reach the process until it is placed, so it can
      // be read now; the CAS acquired the submitter's release, so the
      // binding it made before dropping the submit hold is visible.
      detail::executor_base* const ex = executor_.load(std::memory_order_relaxed);
      CAUSAL_ASSERT(ex != nullptr, "process::wake: count reached 0 before submit");
      report_wake(ex->trace.load(std::memory_order_relaxed), this, n, /*runnable=*/true);
      ex->activate(*ex, *this);
      return true;
    }
    case detail::wake_outcome::resume:
      if (placement < detail::placed_overflow && ex_before != nullptr) {
        report_wake(ex_before->trace.load(std::memory_order_relaxed), this, n, /*runnable=*/true);
        ex_before->resume(*ex_before, *this, placement);
      }
      return true;
  }
  return true;
}

inline std::size_t process::wake_all(std::span<process* const> processes) noexcept {
  process* held[wake_all_batch];
  std::uint32_t held_count = 0;
  detail::executor_base* held_executor = nullptr;
  const auto hand_over = [&]() noexcept {
    if (held_count == 0) return;
    held_executor->activate_batch(*held_executor, held, held_count);
    held_count = 0;
  };
  std::size_t accepted = 0;
  for (process* const entry : processes) {
    CAUSAL_ASSERT(entry != nullptr, "process::wake_all: null entry");
    process& p = *entry;
    // The same reads as wake(), for the same reasons.
    const std::uint32_t placement = p.placement_.load(std::memory_order_acquire);
    detail::executor_base* const ex_before = p.executor_.load(std::memory_order_relaxed);
    switch (p.try_wake(1)) {
      case detail::wake_outcome::ignored:
        continue;
      case detail::wake_outcome::counted:
        break;
      case detail::wake_outcome::activate: {
        detail::executor_base* const ex = p.executor_.load(std::memory_order_relaxed);
        CAUSAL_ASSERT(ex != nullptr, "process::wake_all: count reached 0 before submit");
        report_wake(ex->trace.load(std::memory_order_relaxed), &p, 1, /*runnable=*/true);
        if (ex != held_executor || held_count == wake_all_batch) {
          hand_over();
          held_executor = ex;
        }
        held[held_count++] = &p;
        break;
      }
      case detail::wake_outcome::resume:
        if (placement < detail::placed_overflow && ex_before != nullptr) {
          report_wake(ex_before->trace.load(std::memory_order_relaxed), &p, 1, /*runnable=*/true);
          ex_before->resume(*ex_before, p, placement);
        }
        break;
    }
    ++accepted;
  }
  hand_over();
  return accepted;
}

inline bool process::cancel() noexcept {
  namespace sb = detail::state_bits;
  std::uint64_t s = state_.load(std::memory_order_acquire);
  if (s & (sb::done | sb::cancelled)) return false;
  // If this records the error before completion is claimed, the process
  // completes with errc::cancelled even if it completes on its own first.
  const bool recorded = record_error(error{errc::cancelled, "process cancelled"});
  // acquire: see wake().
  const std::uint32_t placement = placement_.load(std::memory_order_acquire);
  detail::executor_base* const ex = executor_.load(std::memory_order_relaxed);
  s = state_.load(std::memory_order_relaxed);
  std::uint64_t next = 0;
  do {
    if (s & (sb::done | sb::cancelled)) return recorded;
    // Suspended (not ACTIVE): claim completion here. ACTIVE: flag it; the
    // executor completes it before its next drain.
    next = (s & sb::active) ? (s | sb::cancelled) : (s | sb::cancelled | sb::done);
  } while (!state_.compare_exchange_weak(s, next, std::memory_order_seq_cst,
                                         std::memory_order_acquire));
  if (s & sb::active) {
    // Asleep in a compute slot: make it scannable so a worker completes it.
    if (ex != nullptr && placement < detail::placed_overflow) ex->resume(*ex, *this, placement);
    return true;
  }
  // Resolve inline: nobody else can reach a suspended, DONE process.
  detail::scope_core* const sc = scope_;
  const release_fn release_cb = release_;
  detail::plain_waker waker;
  // Scope membership starts at submit: leave the live count only if this
  // call took the process off the member list.
  const bool member = detail::complete(*this, detail::completion_error(*this, next), waker);
  detail::release(*this, release_cb, member ? sc : nullptr);
  return true;
}

inline bool process::fail(error e) noexcept {
  CAUSAL_ASSERT(e.code() != errc::ok, "process::fail: the error must not be errc::ok");
  return record_error(e);
}

inline void process::set_wake_budget(std::uint32_t budget) noexcept {
  const std::uint32_t b = budget == 0 ? 1 : budget;
  wake_budget_.store(b, std::memory_order_relaxed);
  const std::uint32_t placement = placement_.load(std::memory_order_relaxed);
  detail::executor_base* const ex = executor_.load(std::memory_order_relaxed);
  if (ex != nullptr && placement < detail::placed_overflow && is_active()) {
    ex->budget_changed(*ex, *this, placement, b);
  }
}

inline void process::rearm(std::uint32_t suspend_count) noexcept {
  CAUSAL_ASSERT(is_submitted(), "process::rearm: never submitted; use submit()");
  CAUSAL_ASSERT(is_complete() || !is_active(), "process::rearm: process still in use");
  CAUSAL_ASSERT(suspend_count <= max_suspend_count, "process::rearm: suspend count too large");
  error_ = error{};
  placement_.store(detail::placed_nowhere, std::memory_order_relaxed);
  if (scope_ == nullptr && suspend_count != 0) {
    // The common reuse case: plain stores, no read-modify-write. The
    // caller's later wake() (or a dependency's) publishes them.
    state_.store(suspend_count, std::memory_order_relaxed);
    return;
  }
  // One hold while rejoining the scope, dropped by the wake below.
  state_.store(std::uint64_t{suspend_count} + 1, std::memory_order_relaxed);
  if (scope_ != nullptr && scope_->join(*this)) {
    cancel();
    return;
  }
  wake();
}

CAUSAL_END_NAMESPACE
