// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// semaphore: a timeline semaphore (a monotonically increasing 64-bit
// payload) whose signals carry frontiers, so that a waiter learns not only
// that S >= v but everything that happened before the signal that made it so.
//
// Model. `signal(v, f)` advances the payload to v (strictly increasing) and
// records (v, f) in a ring of the last HistoryDepth reached signals. A
// waiter on S >= v imports the frontier of the *first* signal that reached
// >= v (`frontier_at`), never that of a later one: a consumer that waits for
// 2 after S already moved to 5 learns what was known at 2 (the "late
// waiter" scenario, examples/scenarios/09_late_waiter.json). When v has left
// the ring the answer is the merge of every record that left it, flagged
// inexact: a superset, and sound as knowledge because a record only leaves
// the ring once its value is reached.
//
// Submitted vs reached. A queue that submits a future signal records its
// frontier with `submit_signal(v, f, producer)` before the device reaches
// it; `frontier_at(v)` then answers "submitted, not reached" with the
// producer entry (the (axis, epoch) of the signalling operation, docs/frontiers.md),
// which is what wait elision checks. A value with no submitted signal has no
// frontier at all, so a wait-before-signal can never be elided. Submitted
// records wait in a table sorted by value (two queues may submit 5, then 3).
// Its size never limits how far ahead a pipeline is submitted: by default
// (`pending_grows`) PendingCapacity records live inline and more spill to
// heap storage that doubles as needed; `pending_bounded` makes
// PendingCapacity a hard limit instead, returned as `resource_exhausted`.
// A caller that must not fail half-way reserves records first
// (reserve_signal), so that every check happens before any effect. When a
// signal reaches v, submitted records below v can no longer be the first to
// reach their values and are dropped (their own late signal then fails as
// not increasing).
//
// Taint. `signal_external(v)` (an imported CUDA event, a sync_fd, another
// process) advances the payload without a frontier. Values above the taint
// watermark and at most the payload are tainted: `frontier_at` returns a
// tainted frontier for them (what was known at the watermark) and queues
// never elide waits on them. A later witnessed signal whose frontier is
// complete (untainted, or with a producer entry) raises the watermark: the
// taint heals.
//
// Exactness. A waiter's import is exact when it is the frontier of the
// first signal that reached >= v. When that signal was external (and a
// later witnessed signal healed the taint) or has left the ring, the
// answer is a later reached record's frontier or the merge of those that
// left: sound knowledge, flagged inexact, with no producer or signal value.
//
// Failure and timepoints. `fail(e)` is sticky (first error wins) and
// freezes the payload: it is delivered to every pending and later
// timepoint and host wait on a value the payload had not reached when the
// semaphore failed. A value reached before the failure stays reached for
// every waiter, however late its wait is armed, so whether a wait succeeds
// never depends on when it was registered (docs/semaphores.md, "Failure"). Timepoints are caller-owned intrusive nodes; each
// fires exactly once, outside the semaphore's lock, with ok, the failure,
// or `errc::cancelled` when the semaphore is destroyed first. Callbacks may
// signal other semaphores (`semaphore_link` relays S >= x to T := y) and
// may destroy this one. A callback that needs the frontier at its
// threshold asks for a copy at registration (add_timepoint's importing
// overload): once the value is visible, any thread may destroy the
// semaphore, so reading it later is a use after free.
//
// Tracing. With a trace_sink installed (set_trace_sink), every reached
// value reports its frontier and producer (under the lock, so in value
// order) and the failure that wins reports itself; with none, each hook
// site is one never-taken branch (<causal/trace_sink.hpp>).
//
// Observing (exporting). An exporter -- e.g. causal::mpi's node, which
// mirrors a semaphore on other processes -- installs one
// semaphore_observer with set_observer(). Under the semaphore's lock, so
// in the order the semaphore applies them, it then hears every submitted
// signal (value, frontier, producer), every reached value (value,
// frontier, producer, external) and the failure that wins; installing it
// first replays the current state (the reached records still in the
// history ring, the outstanding submitted ones, the failure), under the
// same lock hold, so the observer's picture has no gap. The destructor
// tells it last (outside the lock). With no observer each hook site is
// one never-taken branch, as for tracing. Hooks must not call into the
// semaphore, allocate or block: they run under its spin lock.
//
// Mirrors. The semaphore on the other side of an exporter (an MPI proxy)
// must move only when what it mirrors does: its owner reserves its
// signalling with reserve_writes(key), after which the ordinary signalling
// members refuse (failed_precondition) and only signal_as / submit_signal_as
// / signal_external_as with that key signal it. A queue asked to signal a
// mirror therefore refuses the submission with nothing issued.
//
// Thread safety: every member may be called concurrently from any thread,
//                including from inside a timepoint callback (no lock is
//                held while callbacks run); reserve_writes only before the
//                semaphore is shared.
// Memory order:  signal(v) releases; value(), try_wait(v) and a wait or
//                timepoint that observes >= v acquire; what the signaller
//                wrote before signal(v) is visible after.
// Blocking/allocation: signal, fail, try_wait and the observers never
//                allocate; value(), try_wait(), is_tainted() and failed()
//                are single lock-free loads. submit_signal and
//                reserve_signal allocate only when more than
//                PendingCapacity signals are outstanding (pending_grows:
//                the storage doubles, outside the lock, and is kept; never
//                with pending_bounded). signal, submit_signal, frontier_at,
//                timepoint registration and cancel take the semaphore's
//                spin lock for a bounded, allocation-free critical section
//                (a copy of one record, a binary search, an O(1) insert at
//                the end in the common case); wait/wait_all/wait_any spin
//                briefly, then park on a 32-bit futex word. Callbacks run
//                on the signalling thread, as do the hooks of an installed
//                trace sink (which may lock or allocate; they run under
//                the spin lock), and so do an installed observer's
//                (which must not: see semaphore_observer).
// Size:          about (HistoryDepth + PendingCapacity + 1) * sizeof(Frontier)
//                plus two cache lines; ~3 KiB with the defaults; plus, once
//                grown, a heap table of (a power of two times
//                PendingCapacity) records of ~sizeof(Frontier) + 32 bytes.
// Configuration: Frontier (default causal::frontier), HistoryDepth
//                (default 4), PendingCapacity (default 8), Pending
//                (pending_grows or pending_bounded); scope at creation;
//                CAUSAL_ENABLE_TRACE_HOOKS (also compiles the observer
//                hook sites out when 0).
// See also:      docs/semaphores.md, <causal/queue.hpp>,
//                <causal/ext/park_word.hpp>, <causal/trace_sink.hpp>.
#pragma once

#include <causal/config.hpp>
#include <causal/detail/inline_ring.hpp>
#include <causal/detail/spin_lock.hpp>
#include <causal/ext/park_word.hpp>
#include <causal/frontier.hpp>
#include <causal/result.hpp>
#include <causal/trace_sink.hpp>

#include <boost/atomic/ipc_atomic.hpp>
#include <boost/intrusive/list.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <new>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

#if defined(__linux__)
#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ctime>
#define CAUSAL_HAS_SYSTEM_SEMAPHORE() 1
#else
#define CAUSAL_HAS_SYSTEM_SEMAPHORE() 0
#endif

CAUSAL_BEGIN_NAMESPACE

//===-- scope ---------------------------------------------------------------===//

/// Who may observe a semaphore, fixed at creation; the narrowest that
/// serves is the cheapest. Adapters use it to pick a device primitive;
/// `system_wide` also moves the payload into shared memory.
enum class semaphore_scope : std::uint8_t {
  queue_local,    ///< one queue signals and waits; its FIFO orders everything
  device_local,   ///< queues of one device
  device_group,   ///< queues of several devices in one group
  process_local,  ///< host threads of this process (the default)
  system_wide,    ///< other processes: payload in shared memory, exportable
};

[[nodiscard]] constexpr std::string_view to_string(semaphore_scope scope) noexcept {
  switch (scope) {
    case semaphore_scope::queue_local: return "queue_local";
    case semaphore_scope::device_local: return "device_local";
    case semaphore_scope::device_group: return "device_group";
    case semaphore_scope::process_local: return "process_local";
    case semaphore_scope::system_wide: return "system_wide";
  }
  return "unknown";
}

namespace detail {
/// A long-lived pointer to a semaphore held by another object (a block
/// pool's registered progress timeline), withdrawn when the semaphore is
/// destroyed: the semaphore unlinks every holder and calls its
/// `withdraw`, which must forget the pointer (docs/lifetimes.md). Linked
/// and unlinked under the semaphore's lock; the holder's owner calls
/// remove_holder when it lets go first.
struct semaphore_holder {
  semaphore_holder* prev = nullptr;
  semaphore_holder* next = nullptr;
  void (*withdraw)(semaphore_holder&) noexcept = nullptr;
};
}  // namespace detail

/// How far a value has got on a semaphore.
enum class value_state : std::uint8_t {
  unsubmitted,  ///< neither reached nor announced by submit_signal
  submitted,    ///< a future signal reaching it has been submitted
  reached,      ///< the payload is at least this value
};

/// What a waiter on S >= v imports (the answer of `frontier_at`).
template <frontier_type Frontier>
struct imported_frontier {
  /// The frontier of the first signal reaching >= v, a superset of it when
  /// `exact` is false, or, for a tainted value, what was known at the taint
  /// watermark with the taint bit set.
  Frontier frontier;
  /// The signalling operation's own entry (docs/frontiers.md), or {axis{0}, 0}
  /// when none was recorded (host signals, inexact and tainted answers).
  frontier_entry producer{};
  /// The value of the signal the frontier came from (0 when merged).
  std::uint64_t signal_value = 0;
  /// True when the payload is >= v; false for a submitted, unreached value.
  bool reached = false;
  /// False when v left the history ring and `frontier` is the merged
  /// superset, when v is tainted, or when v is unreached and the nearest
  /// submitted signal is for a higher value. An inexact answer for an
  /// unreached value is a sound *requirement* (its producer covered
  /// implies S >= v) but not knowledge to import: a lower signal submitted
  /// later may reach v first.
  bool exact = true;
  /// True when v was reached by an external signal (above the watermark):
  /// never elide a wait on it.
  bool value_tainted = false;

  /// True when a producer entry was recorded.
  [[nodiscard]] constexpr bool has_producer() const noexcept { return producer.epoch != 0; }
};

//===-- pending-signal storage ----------------------------------------------===//

/// How a semaphore stores submitted, unreached signals beyond its inline
/// records (the fourth template parameter of basic_semaphore).
///
/// `pending_grows` (the default): PendingCapacity records live inside the
/// semaphore; more spill to heap storage that doubles when full and is kept
/// until the semaphore is destroyed, so a pipeline of any depth can be
/// submitted up front, bounded only by memory. Growing allocates on the
/// submitting thread, outside the semaphore's lock; a signal never does.
struct pending_grows {
  static constexpr bool bounded = false;
};

/// `pending_bounded`: PendingCapacity is a hard limit and the semaphore never
/// allocates. The limit is checked before any effect: reserve_signal() and
/// submit_signal() return `errc::resource_exhausted`, and a queue refuses
/// the whole submission before it issues anything.
struct pending_bounded {
  static constexpr bool bounded = true;
};

/// A pending-signal storage policy: `pending_grows`, `pending_bounded`, or
/// a user type with the same `bounded` constant.
template <class P>
concept pending_policy = requires {
  { P::bounded } -> std::convertible_to<bool>;
};

//===-- observers -----------------------------------------------------------===//

/// One signal as a semaphore_observer hears it. `frontier` points at the
/// semaphore's own record and is valid during the callback only.
template <frontier_type Frontier>
struct observed_signal {
  std::uint64_t value = 0;
  /// The frontier recorded for `value`: the submitted one (on_submitted),
  /// or what a waiter on exactly `value` imports (on_reached; empty and
  /// tainted for an external signal).
  const Frontier* frontier = nullptr;
  /// The signalling operation's own (axis, epoch), or {axis{0}, 0}.
  frontier_entry producer{};
  /// True for a value reached by signal_external (no frontier, tainted).
  bool external = false;
  /// True while set_observer() replays the state that existed before the
  /// observer was installed.
  bool replay = false;
};

/// Hooks an exporter installs on one semaphore with set_observer(): plain
/// function pointers and a context, so a call costs no virtual dispatch
/// and the struct is the observer's own (it must outlive its
/// installation). Any member may be null (not told).
///
/// Every hook but on_destroyed runs with the semaphore's spin lock held,
/// on whatever thread changed the semaphore, in the order the semaphore
/// applied the changes (values increase between on_reached calls);
/// on_reached runs before the new payload is visible to anyone, so no
/// thread can act on a value before its observer has heard of it. A hook
/// must not call into the semaphore (it would deadlock), must not block or
/// allocate, and should be short: every signaller of the semaphore waits
/// for it. Copy what is needed out of the event.
template <frontier_type Frontier>
struct semaphore_observer {
  void* context = nullptr;
  /// A future signal was submitted (submit_signal / submit_reserved_signal).
  void (*on_submitted)(void* context, const observed_signal<Frontier>&) noexcept = nullptr;
  /// A value was reached; submitted signals at or below it are gone.
  void (*on_reached)(void* context, const observed_signal<Frontier>&) noexcept = nullptr;
  /// The semaphore failed with this error (once: the first error wins).
  void (*on_failed)(void* context, const error&) noexcept = nullptr;
  /// The semaphore is being destroyed: called first thing in its
  /// destructor, without the lock, while every member still works except
  /// set_observer. No hook runs after it.
  void (*on_destroyed)(void* context) noexcept = nullptr;
};

/// True when hooks are compiled in and `o` is installed: the one test at
/// every observer hook site (the twin of traced()).
template <frontier_type Frontier>
[[nodiscard]] CAUSAL_ALWAYS_INLINE constexpr bool observed(const semaphore_observer<Frontier>* o) noexcept {
  return CAUSAL_ENABLE_TRACE_HOOKS != 0 && o != nullptr;
}


//===-- timepoints ----------------------------------------------------------===//

class semaphore_timepoint;
template <frontier_type Frontier = frontier, std::size_t HistoryDepth = 4,
          std::size_t PendingCapacity = 8, pending_policy Pending = pending_grows>
class basic_semaphore;

/// A timepoint callback: receives the node and ok, the failure, or
/// `errc::cancelled`. Runs exactly once per registration, with no lock held;
/// it may destroy or re-register the node, and may signal semaphores.
using timepoint_callback = void (*)(semaphore_timepoint&, status) noexcept;

namespace detail {
using timepoint_hook =
    boost::intrusive::list_base_hook<boost::intrusive::link_mode<boost::intrusive::normal_link>>;

enum class timepoint_state : std::uint8_t { idle, armed, firing };
}  // namespace detail

/// A caller-owned wait node: "call `callback` once S >= `threshold`".
///
/// Register with `semaphore.add_timepoint(tp)`; the callback runs exactly
/// once: inline from add_timepoint when the value is already reached (or
/// the semaphore failed), else from the signal, fail or destructor that
/// satisfies it. `cancel()` returns true when the callback is guaranteed
/// not to run; false means it has run or is running, and the node must
/// outlive it. A node is registered with one semaphore at a time.
class semaphore_timepoint : public detail::timepoint_hook {
 public:
  semaphore_timepoint() noexcept = default;
  semaphore_timepoint(std::uint64_t threshold, timepoint_callback callback,
                      void* user_data = nullptr) noexcept
      : threshold_(threshold), callback_(callback), user_data_(user_data) {}
  semaphore_timepoint(const semaphore_timepoint&) = delete;
  semaphore_timepoint& operator=(const semaphore_timepoint&) = delete;
  ~semaphore_timepoint() {
    CAUSAL_ASSERT(state_.load(std::memory_order_relaxed) != detail::timepoint_state::armed,
                  "semaphore_timepoint destroyed while registered; cancel() first");
  }

  /// Sets threshold and callback for the next registration.
  /// Precondition: not registered.
  void reset(std::uint64_t threshold, timepoint_callback callback,
             void* user_data = nullptr) noexcept {
    CAUSAL_ASSERT(state_.load(std::memory_order_relaxed) != detail::timepoint_state::armed,
                  "semaphore_timepoint::reset while registered");
    threshold_ = threshold;
    callback_ = callback;
    user_data_ = user_data;
  }

  [[nodiscard]] std::uint64_t threshold() const noexcept { return threshold_; }
  [[nodiscard]] void* user_data() const noexcept { return user_data_; }

  /// Unregisters the node. Returns true when the callback is guaranteed not
  /// to run (it was still waiting), false when it has run or is running.
  bool cancel() noexcept {
    void* owner = owner_.load(std::memory_order_acquire);
    if (owner == nullptr) return false;
    return cancel_fn_(owner, *this);
  }

 private:
  template <frontier_type, std::size_t, std::size_t, pending_policy>
  friend class basic_semaphore;

  std::uint64_t threshold_ = 0;
  timepoint_callback callback_ = nullptr;
  void* user_data_ = nullptr;
  // Where the semaphore copies, under its lock, what a waiter on the
  // threshold imports before an ok callback (add_timepoint's importing
  // overload: an imported_frontier of the semaphore's frontier type), or
  // null.
  void* import_into_ = nullptr;
  // Atomic because cancel() may read them while the firing thread resets
  // them after unlinking (outside the semaphore's lock).
  std::atomic<void*> owner_{nullptr};
  bool (*cancel_fn_)(void*, semaphore_timepoint&) noexcept = nullptr;
  std::atomic<detail::timepoint_state> state_{detail::timepoint_state::idle};
};

namespace detail {
using timepoint_list =
    boost::intrusive::list<semaphore_timepoint, boost::intrusive::constant_time_size<false>>;

/// The part of a system_wide semaphore that lives in shared memory. Only
/// address-free atomics (boost::ipc_atomic), no locks: a process that dies
/// at any instruction leaves it valid.
struct shared_timeline_block {
  static constexpr std::uint64_t expected_magic = 0x63617573616c5331ull;  // "causalS1"
  std::uint64_t magic;
  boost::ipc_atomic<std::uint64_t> payload;
  boost::ipc_atomic<std::uint32_t> wake_word;
  boost::ipc_atomic<std::uint32_t> waiters;
  boost::ipc_atomic<std::uint32_t> failure_code;  // errc, 0 = not failed
};
static_assert(boost::ipc_atomic<std::uint64_t>::is_always_lock_free,
              "system_wide semaphores need a lock-free 64-bit ipc_atomic");

#if CAUSAL_HAS_SYSTEM_SEMAPHORE()
/// Parks on a process-shared futex word until it differs from `expected`
/// or `deadline` passes (no PRIVATE flag: the word may be in another
/// process's mapping).
inline void shared_futex_wait_until(const boost::ipc_atomic<std::uint32_t>& word,
                                    std::uint32_t expected,
                                    std::chrono::steady_clock::time_point deadline) noexcept {
  futex_wait_until(&word.value(), expected, deadline, /*process_shared=*/true);
}
#endif
}  // namespace detail

/// A handle that lets another process open a system_wide semaphore: a file
/// descriptor of its shared memory (inherited across fork, or passed over a
/// Unix socket). The opener owns a duplicate; the creator keeps its own.
struct system_semaphore_handle {
  int fd = -1;
};

//===-- basic_semaphore -----------------------------------------------------===//

/// A timeline semaphore carrying frontiers; see the file comment.
///
/// Template parameters:
/// - `Frontier`: the frontier type of its signals (any basic_frontier).
/// - `HistoryDepth`: reached signals kept exactly (>= 1).
/// - `PendingCapacity`: submitted, unreached signals held inside the
///   semaphore (>= 1); with `pending_bounded`, the most it accepts.
/// - `Pending`: `pending_grows` (default: more records spill to growing
///   heap storage) or `pending_bounded` (a hard limit, never allocates).
template <frontier_type Frontier, std::size_t HistoryDepth, std::size_t PendingCapacity,
          pending_policy Pending>
class basic_semaphore {
  static_assert(HistoryDepth >= 1, "basic_semaphore: HistoryDepth must be at least 1");
  static_assert(PendingCapacity >= 1, "basic_semaphore: PendingCapacity must be at least 1");

 public:
  using frontier_type = Frontier;
  using imported_type = imported_frontier<Frontier>;
  using pending_policy_type = Pending;
  using clock = std::chrono::steady_clock;
  static constexpr std::size_t history_depth = HistoryDepth;
  /// Submitted signals held without allocating.
  static constexpr std::size_t pending_capacity = PendingCapacity;
  /// True when pending_capacity is a hard limit (pending_bounded).
  static constexpr bool pending_is_bounded = Pending::bounded;
  /// Polls of the payload before a host wait parks. Measured on the 2-vCPU
  /// Xeon VMs (bench/RESULTS.md): a poll with its pause costs ~13 ns; a
  /// cross-vCPU hand-off round trip took 14.3 us at 128 polls (the waiter
  /// often parked, and a parked wake costs 30-35 us there), 0.79 us at 512
  /// and 0.41 us at 2048. 1024 (~14 us) spins about as long as one wake
  /// costs, the classic two-competitive choice. Pass 0 to park at once.
  static constexpr unsigned default_spin = 1024;

  /// Creates a semaphore at `initial` with `scope`. A system_wide one maps
  /// fresh shared memory; if that fails the semaphore is created failed
  /// with `errc::resource_exhausted` (see failure()).
  explicit basic_semaphore(std::uint64_t initial = 0,
                           semaphore_scope scope = semaphore_scope::process_local) noexcept
      : scope_(scope),
        payload_(initial),
        watermark_(initial),
        retired_max_witnessed_(initial),
        retired_max_value_(initial) {
    // Values up to `initial` were reached before anything was recorded:
    // they import the (empty) retired superset, inexact but untainted.
    if (scope == semaphore_scope::system_wide) create_shared(initial);
  }

  /// Opens the system_wide semaphore behind `handle` (another process's,
  /// or this one's). Signals made through other openers are external here.
  /// A bad handle yields a semaphore failed with `errc::invalid_argument`.
  explicit basic_semaphore(system_semaphore_handle handle) noexcept
      : scope_(semaphore_scope::system_wide) {
    open_shared(handle);
  }

  basic_semaphore(const basic_semaphore&) = delete;
  basic_semaphore& operator=(const basic_semaphore&) = delete;

  /// Delivers `errc::cancelled` to every pending timepoint. Host waiters
  /// must have returned before destruction.
  ///
  /// A semaphore that a queue has submitted a signal of, with that signal
  /// neither reached nor failed yet, is still named by live work that
  /// will write to it: destroying it is a lifetime error the semaphore
  /// cannot mend. The destructor then prints what is still promised and
  /// by whom (the producers' axes and epochs) to stderr and aborts, in
  /// every build mode (docs/lifetimes.md). Signals submitted directly
  /// (submit_signal) are the caller's to keep track of; a mirror (writes
  /// reserved by an owner) is exempt. Holders (a block pool that
  /// registered it as a progress timeline, add_holder) are told to forget
  /// it.
  ~basic_semaphore() {
    refuse_if_promised();
    withdraw_holders();
    if (observed(observer_)) [[unlikely]] {
      if (observer_->on_destroyed != nullptr) observer_->on_destroyed(observer_->context);
    }
    detail::timepoint_list doomed;
    {
      detail::spin_guard guard(lock_);
      take_all(doomed);
    }
    fire_all(doomed, status{error{errc::cancelled, "semaphore destroyed before its value was reached"}});
    // A signaller that counted itself under the lock may still be waking
    // host waiters (end_wake); it is done with us once the count is 0. It
    // wakes them before it runs any callback (reach, fail), so a callback
    // that destroys us on the signalling thread never waits for itself.
    while (notifying_.load(std::memory_order_acquire) != 0) detail::cpu_relax();
    release_shared();
  }

  //===-- lock-free observers ---------------------------------------------===//

  [[nodiscard]] semaphore_scope scope() const noexcept { return scope_; }

  /// Returns the payload. acquire: pairs with the release in signal().
  [[nodiscard]] CAUSAL_ALWAYS_INLINE std::uint64_t value() const noexcept {
    if (shared_ != nullptr) [[unlikely]] {
      return shared_->payload.load(boost::memory_order_acquire);
    }
    return payload_.load(std::memory_order_acquire);
  }

  /// True when the payload is >= `v`. A value reached before a failure
  /// stays reached: the payload never moves once the semaphore failed.
  [[nodiscard]] CAUSAL_ALWAYS_INLINE bool try_wait(std::uint64_t v) const noexcept {
    return value() >= v;
  }

  /// True once fail() has been called (here or, for system_wide, anywhere).
  [[nodiscard]] bool failed() const noexcept {
    if (failed_.load(std::memory_order_acquire)) return true;
    return shared_ != nullptr && shared_->failure_code.load(boost::memory_order_acquire) != 0;
  }

  /// Returns the failure, if any.
  [[nodiscard]] std::optional<error> failure() const noexcept {
    // acquire: pairs with the release store of failed_ in fail(), which
    // publishes failure_.
    if (failed_.load(std::memory_order_acquire)) return failure_;
    if (shared_ != nullptr) {
      const std::uint32_t code = shared_->failure_code.load(boost::memory_order_acquire);
      if (code != 0) {
        return error{static_cast<errc>(code), "system_wide semaphore failed in another process"};
      }
    }
    return std::nullopt;
  }

  /// The highest value up to which every value is untainted.
  [[nodiscard]] std::uint64_t taint_watermark() const noexcept {
    return watermark_.load(std::memory_order_acquire);
  }

  /// True when `v` was reached by an external signal and no witnessed
  /// signal has healed it since: waits on it import a tainted frontier and
  /// are never elided. Unreached values are not tainted (yet).
  [[nodiscard]] bool is_tainted(std::uint64_t v) const noexcept {
    return v > taint_watermark() && v <= value();
  }

  //===-- signalling --------------------------------------------------------===//

  /// Reaches `v`, carrying `f` and optionally the signalling operation's
  /// producer entry. If `v` was submitted, `f` is merged into the submitted
  /// frontier. Fails with `errc::not_increasing` (nothing changes) when `v`
  /// is not above the payload, or with the failure when the semaphore failed.
  /// Every signalling member below fails with `errc::failed_precondition`
  /// (nothing changes) on a semaphore whose writes are reserved
  /// (reserve_writes).
  status signal(std::uint64_t v, const Frontier& f, frontier_entry producer = {}) noexcept {
    if (write_key_ != nullptr) [[unlikely]] return refused_write();
    return reach(v, &f, producer, /*external=*/false);
  }

  /// Reaches `v` with the frontier recorded by submit_signal(v), or, when
  /// nothing was submitted, with an empty frontier (a host signal that
  /// knows nothing more).
  status signal(std::uint64_t v) noexcept {
    if (write_key_ != nullptr) [[unlikely]] return refused_write();
    return reach(v, nullptr, {}, false);
  }

  /// Like signal(v) for a device completion: a non-increasing value also
  /// fails the semaphore, since waiters may already have trusted the order.
  status device_signal(std::uint64_t v) noexcept {
    if (write_key_ != nullptr) [[unlikely]] return refused_write();
    status s = reach(v, nullptr, {}, false);
    if (s.code() == errc::not_increasing) fail(s.error_value());
    return s;
  }

  /// Reaches `v` from outside the scheduler: no frontier, value tainted.
  status signal_external(std::uint64_t v) noexcept {
    if (write_key_ != nullptr) [[unlikely]] return refused_write();
    return reach(v, nullptr, {}, true);
  }

  //===-- mirrors: writes reserved for one writer ---------------------------===//

  /// Reserves this semaphore's signalling for the holder of `key` (not
  /// null): from then on signal, device_signal, signal_external,
  /// submit_signal, reserve_signal and submit_reserved_signal fail with
  /// `errc::failed_precondition` and change nothing, and only the `*_as`
  /// members below, given the same key, signal it. For a semaphore that
  /// mirrors another one, such as an MPI proxy of another rank's
  /// semaphore: a local signal would let it run ahead of what it mirrors.
  /// fail() stays open (a failure lets no waiter through). Waits, reads
  /// and timepoints are unchanged. Returns false, changing nothing, when
  /// `key` is null or the writes are already reserved. Not synchronized:
  /// call it before the semaphore is shared with other threads.
  bool reserve_writes(const void* key) noexcept {
    if (key == nullptr || write_key_ != nullptr) return false;
    write_key_ = key;
    return true;
  }

  /// True when reserve_writes() reserved the signalling.
  [[nodiscard]] bool writes_reserved() const noexcept { return write_key_ != nullptr; }

  /// signal(v, f, producer) by the holder of `key` (reserve_writes);
  /// `errc::failed_precondition` for another key.
  status signal_as(const void* key, std::uint64_t v, const Frontier& f, frontier_entry producer = {}) noexcept {
    if (key != write_key_) [[unlikely]] return refused_write();
    return reach(v, &f, producer, /*external=*/false);
  }

  /// signal_external(v) by the holder of `key` (reserve_writes).
  status signal_external_as(const void* key, std::uint64_t v) noexcept {
    if (key != write_key_) [[unlikely]] return refused_write();
    return reach(v, nullptr, {}, true);
  }

  /// submit_signal(v, f, producer) by the holder of `key` (reserve_writes).
  status submit_signal_as(const void* key, std::uint64_t v, const Frontier& f,
                          frontier_entry producer = {}) noexcept {
    if (key != write_key_) [[unlikely]] return refused_write();
    return submit_pending(v, f, producer);
  }

  //===-- announcing --------------------------------------------------------===//

  /// Announces a future signal of `v` carrying `f` (known at submit time).
  /// Errors (nothing changes): `not_increasing` when v <= payload,
  /// `invalid_argument` when v is already submitted, the failure, or
  /// `resource_exhausted` when no record is free: with pending_bounded,
  /// PendingCapacity signals are outstanding or reserved; with
  /// pending_grows, only when memory runs out. A caller with effects to
  /// undo (a queue whose operation is already issued) reserves first.
  status submit_signal(std::uint64_t v, const Frontier& f, frontier_entry producer = {}) noexcept {
    if (write_key_ != nullptr) [[unlikely]] return refused_write();
    return submit_pending(v, f, producer);
  }

  /// Reserves one record for a later submit_reserved_signal, which then
  /// cannot fail for lack of room: a queue reserves for each signal of an
  /// operation before it issues anything (every capacity check happens
  /// before any effect). With pending_bounded the reservation is counted
  /// against PendingCapacity. With pending_grows room can always be made,
  /// so nothing is counted: the call makes sure the table has a free record
  /// now (lock-free when it has; else it grows the table, allocating
  /// outside the lock), which only running out of memory can refuse.
  /// Errors (nothing reserved): the failure; `resource_exhausted` when the
  /// bounded table is full, counting other reservations, or memory runs
  /// out. Give an unused reservation back with unreserve_signal().
  status reserve_signal() noexcept {
    if (write_key_ != nullptr) [[unlikely]] return refused_write();
    if constexpr (Pending::bounded) {
      return with_free_record([&] { return failed() ? status{*failure()} : status{}; },
                              [&] { ++reserved_; },
                              "reserve_signal: PendingCapacity submitted signals outstanding "
                              "or reserved (pending_bounded)");
    } else {
      if (failed()) return status{*failure()};
      // relaxed: a hint kept under the lock; a stale "free" only means
      // submit_reserved_signal grows the table itself.
      if (pending_free_.load(std::memory_order_relaxed) != 0) return status{};
      return with_free_record([&] { return failed() ? status{*failure()} : status{}; }, [] {},
                              "reserve_signal: unreachable (pending_grows)");
    }
  }

  /// True when a submit_reserved_signal needs no reservation now: the
  /// table grows (pending_grows) and, as last seen, has a free record. A
  /// queue checks it first and reserves only when it is false. Lock-free.
  [[nodiscard]] bool reservation_unneeded() const noexcept {
    if constexpr (Pending::bounded) {
      return false;
    } else if (write_key_ != nullptr) {
      return false;  // reserve_signal() then says why not
    } else {
      return pending_free_.load(std::memory_order_relaxed) != 0;
    }
  }

  /// Gives back a reservation that will not be used.
  void unreserve_signal() noexcept {
    if constexpr (Pending::bounded) {
      detail::spin_guard guard(lock_);
      CAUSAL_ASSERT(reserved_ != 0, "unreserve_signal without a reservation");
      if (reserved_ != 0) --reserved_;
    }
  }

  /// submit_signal using a reservation from reserve_signal(), consumed
  /// whatever the outcome. Never fails for room (with pending_grows, a
  /// record another submitter took meanwhile is replaced by growing the
  /// table: only running out of memory could refuse it); the other errors
  /// are submit_signal's (a concurrent signal or failure may still win).
  status submit_reserved_signal(std::uint64_t v, const Frontier& f,
                                frontier_entry producer = {}, bool promised = false) noexcept {
    if (write_key_ != nullptr) [[unlikely]] return refused_write();
    if constexpr (!Pending::bounded) return submit_pending(v, f, producer, promised);
    detail::spin_guard guard(lock_);
    CAUSAL_ASSERT(reserved_ != 0, "submit_reserved_signal without a reservation");
    if (reserved_ != 0) --reserved_;
    if (status s = check_submittable_locked(v); !s) return s;
    if (pending_.size() + reserved_ >= pending_.capacity()) {
      // Only without a reservation (a broken precondition): refuse rather
      // than overrun.
      return status{error{errc::resource_exhausted,
                          "submit_reserved_signal: no reserved record", PendingCapacity}};
    }
    insert_pending_locked(v, f, producer, promised);
    return status{};
  }

  /// Host threads parked (or about to park) in a wait on this semaphore
  /// in this process now: a relaxed snapshot for diagnostics and tests.
  [[nodiscard]] std::uint32_t parked_waiters() const noexcept {
    if (shared_ != nullptr) return shared_->waiters.load(boost::memory_order_relaxed);
    return waiters_.load(std::memory_order_relaxed);
  }

  /// Submitted, unreached signals held now (for diagnostics and tests).
  [[nodiscard]] std::size_t pending_count() const noexcept {
    detail::spin_guard guard(lock_);
    return pending_.size();
  }

  /// Fails the semaphore with `e` (sticky; the first error wins) and
  /// freezes the payload. Every pending timepoint and host wait, and every
  /// later one on a value above the payload, gets the error; a wait on a
  /// value reached before the failure still succeeds. Returns true when
  /// this call's error is the one recorded.
  bool fail(error e) noexcept {
    if (e.code() == errc::ok) e = error{errc::failed_precondition, "fail() called with errc::ok"};
    detail::timepoint_list doomed;
    bool must_wake = false;
    {
      detail::spin_guard guard(lock_);
      if (failed_.load(std::memory_order_relaxed)) return false;
      failure_ = e;
      // seq_cst (a release would do for failure()'s acquire load, which it
      // pairs with to publish failure_): this store is one side of the
      // Dekker pair with a parked waiter, see begin_wake().
      failed_.store(true, std::memory_order_seq_cst);
      if (shared_ != nullptr) {
        std::uint32_t none = 0;
        shared_->failure_code.compare_exchange_strong(none, static_cast<std::uint32_t>(e.code()),
                                                      boost::memory_order_seq_cst);
      }
      take_all(doomed);
      if (traced(trace_)) [[unlikely]] {
        trace_fail(e);
      }
      if (observed(observer_)) [[unlikely]] {
        observe_fail(e);
      }
      // Under the lock, as in reach(): after it, `this` may be gone unless
      // a waiter must be woken.
      must_wake = begin_wake();
    }
    // Waiters first, then callbacks: see reach().
    if (must_wake) end_wake();
    fire_all(doomed, status{e});
    return true;
  }

  /// Links `h`, a holder that keeps a pointer to this semaphore beyond
  /// any one operation (a block pool's registered progress timeline): the
  /// destructor calls h.withdraw, so the holder forgets the pointer
  /// instead of keeping a dangling one. Not a hot path.
  void add_holder(detail::semaphore_holder& h) noexcept {
    detail::spin_guard guard(lock_);
    h.prev = nullptr;
    h.next = holders_;
    if (holders_ != nullptr) holders_->prev = &h;
    holders_ = &h;
  }
  /// Unlinks `h` (its owner lets go first); a no-op when not linked.
  void remove_holder(detail::semaphore_holder& h) noexcept {
    detail::spin_guard guard(lock_);
    if (h.prev == nullptr && holders_ != &h) return;
    if (h.prev != nullptr) h.prev->next = h.next;
    if (holders_ == &h) holders_ = h.next;
    if (h.next != nullptr) h.next->prev = h.prev;
    h.prev = h.next = nullptr;
  }

  /// fail(e) by the producer of the submitted signal `v`: also settles
  /// that promise, so that the semaphore may then be destroyed (see the
  /// destructor). Queues call it for each signal of a failed operation.
  CAUSAL_NOINLINE bool fail_submitted(std::uint64_t v, error e) noexcept {
    {
      detail::spin_guard guard(lock_);
      settle_pending_locked(v);
    }
    return fail(std::move(e));
  }

  /// Forgets every outstanding submitted signal: for an owner that knows
  /// none of their producers will write here again (a lost device). The
  /// destructor then no longer refuses on their account.
  void abandon_promises() noexcept {
    detail::spin_guard guard(lock_);
    if (!pending_.empty()) {
      pending_.pop_front(pending_.size());
      note_pending_free_locked();
    }
  }

  //===-- tracing -----------------------------------------------------------===//

  /// Reports reached values and the failure to `sink` from now on (null:
  /// stop). Not concurrently with any other member; the sink must outlive
  /// its installation. on_semaphore_signal runs with this semaphore's lock
  /// held, so no hook may call into it. See <causal/trace_sink.hpp>.
  void set_trace_sink(trace_sink* sink) noexcept { trace_ = sink; }
  [[nodiscard]] trace_sink* get_trace_sink() const noexcept { return trace_; }

  //===-- observing ---------------------------------------------------------===//

  using observer_type = semaphore_observer<Frontier>;

  /// Installs `observer` (null: removes the current one) if the installed
  /// observer is `expected`, and returns true; else changes nothing and
  /// returns false. A new observer first hears the current state, replayed
  /// under the same lock hold (so nothing falls between the replay and the
  /// first live hook): on_reached for each reached record still in the
  /// history ring (oldest first; the initial value when nothing was
  /// signalled since construction), on_submitted for each outstanding
  /// submitted signal (by value), then on_failed if failed; each flagged
  /// `replay`. Once this returns, a removed observer is never called
  /// again. Takes the lock: may be called concurrently with every member
  /// but the destructor. `observer` must stay alive while installed.
  /// Example: `sem.set_observer(&mine)` installs where none is;
  /// `sem.set_observer(nullptr, &mine)` removes it.
  bool set_observer(const observer_type* observer, const observer_type* expected = nullptr) noexcept {
    detail::spin_guard guard(lock_);
    if (observer_ != expected) return false;
    observer_ = observer;
    if (observer != nullptr) replay_locked(*observer);
    return true;
  }

  //===-- history -----------------------------------------------------------===//

  /// Returns how far `v` has got.
  [[nodiscard]] value_state state_of(std::uint64_t v) const noexcept {
    if (v <= value()) return value_state::reached;
    detail::spin_guard guard(lock_);
    if (pending_lower_bound(v) < pending_.size()) return value_state::submitted;
    return value_state::unsubmitted;
  }

  /// Returns what a waiter on S >= `v` imports; nothing while `v` is
  /// neither reached nor covered by a submitted signal. See the file
  /// comment for exactness and taint.
  [[nodiscard]] std::optional<imported_type> frontier_at(std::uint64_t v) const noexcept {
    detail::spin_guard guard(lock_);
    return frontier_at_locked(v);
  }

  //===-- timepoints --------------------------------------------------------===//

  /// Registers `tp`; its callback runs exactly once (see semaphore_timepoint),
  /// inline when the threshold is already reached or the semaphore failed.
  /// Precondition: `tp` is not registered anywhere.
  void add_timepoint(semaphore_timepoint& tp) noexcept { add_timepoint_impl(tp, nullptr); }

  /// Like add_timepoint(tp), and before an ok callback copies what a waiter
  /// on the threshold imports (frontier_at(threshold)) into `import_into`,
  /// under the semaphore's lock. The callback may use that copy even when
  /// the semaphore is destroyed by then (a consumer that saw the value may
  /// destroy it at once); it must not call frontier_at itself. `import_into`
  /// must outlive the callback; it is untouched for a failure or cancel.
  void add_timepoint(semaphore_timepoint& tp, imported_type& import_into) noexcept {
    add_timepoint_impl(tp, &import_into);
  }

 private:
  [[nodiscard]] std::optional<imported_type> frontier_at_locked(std::uint64_t v) const noexcept {
    const std::uint64_t local = payload_.load(std::memory_order_relaxed);
    const std::uint64_t reached = current_value_locked();
    if (v == 0) return imported_type{Frontier{}, {}, 0, true, true, false};
    if (v <= reached) {
      const std::uint64_t watermark = watermark_.load(std::memory_order_relaxed);
      if (v > watermark || v > local) {
        // Reached outside our sight: import what the watermark proves.
        imported_type out = known_at_locked(watermark);
        out.frontier.set_tainted();
        out.producer = {};
        out.exact = false;
        out.value_tainted = true;
        out.reached = true;
        return out;
      }
      return known_at_locked(v);
    }
    // exact only for a signal of exactly v: a lower one submitted later
    // may still reach v first, so a higher record's frontier is a valid
    // requirement (its producer covered implies S >= v) but not knowledge.
    if (const std::size_t at = pending_lower_bound(v); at < pending_.size()) {
      const record& r = pending_[at];
      return imported_type{r.frontier, r.producer, r.value, false, r.value == v, false};
    }
    return std::nullopt;
  }

  void add_timepoint_impl(semaphore_timepoint& tp, imported_type* import_into) noexcept {
    CAUSAL_ASSERT(tp.state_.load(std::memory_order_relaxed) != detail::timepoint_state::armed,
                  "add_timepoint: node already registered");
    CAUSAL_ASSERT(tp.callback_ != nullptr, "add_timepoint: node has no callback");
    tp.import_into_ = import_into;
    bool reached = false;
    {
      detail::spin_guard guard(lock_);
      reached = current_value_locked() >= tp.threshold_;
      if (!reached && !failed()) {
        // The check and the insertion are under the lock every signal
        // takes, so no signal can fall between them.
        auto it = timepoints_.end();
        while (it != timepoints_.begin()) {
          auto prev = std::prev(it);
          if (prev->threshold_ <= tp.threshold_) break;
          it = prev;
        }
        timepoints_.insert(it, tp);
        tp.cancel_fn_ = &cancel_thunk;
        tp.state_.store(detail::timepoint_state::armed, std::memory_order_relaxed);
        // release: cancel()'s acquire load of owner_ then sees cancel_fn_.
        tp.owner_.store(this, std::memory_order_release);
        timepoint_count_.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      // Reached before any failure (the payload never moves after one):
      // the wait succeeds however late it is armed.
      if (import_into != nullptr && reached) capture_import_locked(tp);
    }
    tp.owner_.store(nullptr, std::memory_order_relaxed);
    tp.state_.store(detail::timepoint_state::idle, std::memory_order_relaxed);
    if (reached) {
      tp.callback_(tp, status{});
      return;
    }
    tp.callback_(tp, status{*failure()});
  }

  /// Copies what a waiter on tp's threshold imports into its import slot.
  void capture_import_locked(semaphore_timepoint& tp) const noexcept {
    auto* into = static_cast<imported_type*>(tp.import_into_);
    if (auto got = frontier_at_locked(tp.threshold_); got) {
      *into = *got;
    } else {
      // Unreachable for a reached threshold; knowing nothing is safe.
      Frontier none;
      none.set_tainted();
      *into = imported_type{none, {}, 0, true, false, false};
    }
  }

 public:
  //===-- host waits --------------------------------------------------------===//

  /// Blocks until the payload is >= `v` (ok; also after a failure, when
  /// `v` was reached before it), the semaphore fails without having
  /// reached `v` (the failure) or `deadline` passes (`errc::timeout`).
  /// Spins `spin` polls first, then parks.
  status wait_until(std::uint64_t v, clock::time_point deadline,
                    unsigned spin = default_spin) const noexcept {
    for (unsigned i = 0; i < spin; ++i) {
      if (auto s = poll_wait(v); s) return *s;
      detail::cpu_relax();
    }
    return park_until(v, deadline);
  }

  /// Blocks until the payload is >= `v` or the semaphore fails.
  status wait(std::uint64_t v) const noexcept { return wait_until(v, clock::time_point::max()); }

  template <class Rep, class Period>
  status wait_for(std::uint64_t v, std::chrono::duration<Rep, Period> timeout) const noexcept {
    return wait_until(v, deadline_after(timeout));
  }

  /// Absorbs signals made by other processes (system_wide only): each
  /// advance of the shared payload beyond this opener's view is recorded as
  /// an external signal and fires the timepoints it satisfies. Other
  /// scopes: does nothing. Returns the payload.
  std::uint64_t poll() noexcept {
    if (shared_ != nullptr) {
      const std::uint64_t remote = shared_->payload.load(boost::memory_order_acquire);
      if (remote > payload_.load(std::memory_order_acquire)) {
        (void)reach(remote, nullptr, {}, true, /*already_shared=*/true);
      }
      if (shared_->failure_code.load(boost::memory_order_acquire) != 0 && !failed_.load()) {
        fail(*failure());
      }
    }
    return value();
  }

  /// Returns a handle another process can open (system_wide only; else
  /// `errc::failed_precondition`). The caller owns the returned descriptor.
  [[nodiscard]] result<system_semaphore_handle> export_handle() const noexcept {
#if CAUSAL_HAS_SYSTEM_SEMAPHORE()
    if (shared_ == nullptr || shared_fd_ < 0) {
      return error{errc::failed_precondition, "export_handle: semaphore is not system_wide"};
    }
    const int fd = ::fcntl(shared_fd_, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return error{errc::resource_exhausted, "export_handle: dup failed"};
    return system_semaphore_handle{fd};
#else
    return error{errc::unsupported_version, "export_handle: no system_wide semaphores here"};
#endif
  }

 private:
  /// Drops the submitted record for exactly `v`, if there is one (its
  /// producer settled it by failing it, or by signalling a failed
  /// semaphore). Under lock_.
  void settle_pending_locked(std::uint64_t v) noexcept {
    const std::size_t at = pending_lower_bound(v);
    if (at < pending_.size() && pending_[at].value == v) {
      pending_.erase(at);
      note_pending_free_locked();
    }
  }

  /// Tells every holder that the semaphore is going (see add_holder), one
  /// at a time, re-reading the list: a withdraw may move another holder
  /// of this semaphore (a pool compacting its table relinks the entry it
  /// moves), and that one is then told in a later round.
  void withdraw_holders() noexcept {
    for (;;) {
      detail::semaphore_holder* h = nullptr;
      {
        detail::spin_guard guard(lock_);
        h = holders_;
        if (h == nullptr) return;
        holders_ = h->next;
        if (holders_ != nullptr) holders_->prev = nullptr;
        h->prev = h->next = nullptr;
      }
      if (h->withdraw != nullptr) h->withdraw(*h);
    }
  }

  /// The destructor's lifetime check (see ~basic_semaphore).
  void refuse_if_promised() noexcept {
    if (write_key_ != nullptr) return;
    detail::spin_guard guard(lock_);
    std::size_t n = 0;
    for (std::size_t i = 0; i < pending_.size(); ++i) n += pending_[i].promised ? 1 : 0;
    if (n == 0) [[likely]] return;
    std::fprintf(stderr,
                 "causal: semaphore %p destroyed while %zu submitted signal(s) of it are neither "
                 "reached nor failed; the queue work that will write them is still alive. Destroy "
                 "(or wait_idle) the queues that signal a semaphore before the semaphore "
                 "(docs/lifetimes.md). Still promised:\n",
                 static_cast<const void*>(this), n);
    std::size_t shown = 0;
    for (std::size_t i = 0; i < pending_.size() && shown < 16; ++i) {
      const record& r = pending_[i];
      if (!r.promised) continue;
      ++shown;
      std::fprintf(stderr, "  - value %llu, by the operation at epoch %llu of axis %llu\n",
                   static_cast<unsigned long long>(r.value),
                   static_cast<unsigned long long>(r.producer.epoch),
                   static_cast<unsigned long long>(r.producer.axis.raw()));
    }
    if (n > shown) std::fprintf(stderr, "  - and %zu more\n", n - shown);
    std::fflush(stderr);
    std::abort();
  }

  struct record {
    std::uint64_t value = 0;
    Frontier frontier{};
    frontier_entry producer{};
    bool external = false;
    /// Submitted by a queue whose backend writes it later (reaches or
    /// fails it): the destructor refuses while such a record is
    /// outstanding.
    bool promised = false;
  };

  template <class Rep, class Period>
  static clock::time_point deadline_after(std::chrono::duration<Rep, Period> timeout) noexcept {
    const auto now = clock::now();
    if (timeout <= timeout.zero()) return now;
    // Compare in floating point: converting `timeout` (e.g. hours::max())
    // or the remaining range to the other's unit could overflow. The one-
    // second margin absorbs the rounding of the double comparison, so the
    // integral conversion below cannot overflow either.
    const std::chrono::duration<double> room = clock::time_point::max() - now;
    if (std::chrono::duration<double>(timeout) >= room - std::chrono::seconds(1)) {
      return clock::time_point::max();
    }
    return now + std::chrono::ceil<clock::duration>(timeout);
  }

  static bool cancel_thunk(void* owner, semaphore_timepoint& tp) noexcept {
    return static_cast<basic_semaphore*>(owner)->cancel_timepoint(tp);
  }

  bool cancel_timepoint(semaphore_timepoint& tp) noexcept {
    detail::spin_guard guard(lock_);
    if (tp.state_.load(std::memory_order_relaxed) != detail::timepoint_state::armed ||
        tp.owner_.load(std::memory_order_relaxed) != this) {
      return false;
    }
    timepoints_.erase(timepoints_.iterator_to(tp));
    timepoint_count_.fetch_sub(1, std::memory_order_relaxed);
    tp.state_.store(detail::timepoint_state::idle, std::memory_order_relaxed);
    tp.owner_.store(nullptr, std::memory_order_relaxed);
    return true;
  }

  /// The payload as this opener may trust it under the lock.
  [[nodiscard]] std::uint64_t current_value_locked() const noexcept { return value(); }

  /// The index of the first pending record whose value is >= `v`
  /// (pending_.size() when none): a binary search, the table being sorted,
  /// after the two ends (values mostly arrive, and are reached, in order).
  [[nodiscard]] std::size_t pending_lower_bound(std::uint64_t v) const noexcept {
    const std::size_t n = pending_.size();
    if (n == 0 || pending_[n - 1].value < v) return n;
    if (pending_[0].value >= v) return 0;
    std::size_t low = 1, high = n - 1;
    while (low < high) {
      const std::size_t mid = low + (high - low) / 2;
      if (pending_[mid].value < v) {
        low = mid + 1;
      } else {
        high = mid;
      }
    }
    return low;
  }

  /// submit_signal's checks other than room.
  [[nodiscard]] status check_submittable_locked(std::uint64_t v) const noexcept {
    if (failed()) return status{*failure()};
    if (v <= current_value_locked()) {
      return status{error{errc::not_increasing, "submit_signal: value not above the payload", v}};
    }
    const std::size_t at = pending_lower_bound(v);
    if (at < pending_.size() && pending_[at].value == v) {
      return status{error{errc::invalid_argument, "submit_signal: value already submitted", v}};
    }
    return status{};
  }

  /// Inserts a checked record. Precondition: a record is free.
  void insert_pending_locked(std::uint64_t v, const Frontier& f, frontier_entry producer,
                             bool promised = false) noexcept {
    // Values mostly arrive in increasing order: the common insert appends.
    const std::size_t at = pending_lower_bound(v);
    // Filled in place: a temporary record would be one more ~220-byte copy.
    record& r = pending_.insert_slot(at);
    r.value = v;
    r.frontier = f;
    r.producer = producer;
    r.external = false;
    r.promised = promised;
    note_pending_free_locked();
    if (observed(observer_)) [[unlikely]] {
      observe_submitted(pending_[at]);
    }
  }

  /// Refreshes the lock-free hint reserve_signal reads (pending_grows).
  void note_pending_free_locked() noexcept {
    pending_free_.store(pending_.capacity() - pending_.size(), std::memory_order_relaxed);
  }

  /// Under the lock: runs `check`, returning its error, then `take` once a
  /// record is free (counting reservations). With pending_grows a full
  /// table is doubled outside the lock and the whole thing retried; with
  /// pending_bounded a full table is `resource_exhausted`, `full_message`.
  template <class Check, class Take>
  status with_free_record(Check check, Take take, const char* full_message) noexcept {
    for (;;) {
      std::size_t grow_to = 0;
      {
        detail::spin_guard guard(lock_);
        if (status s = check(); !s) return s;
        if (pending_.size() + reserved_ < pending_.capacity()) {
          take();
          return status{};
        }
        if constexpr (Pending::bounded) {
          return status{error{errc::resource_exhausted, full_message, PendingCapacity}};
        }
        grow_to = pending_.capacity() * 2;
      }
      if (status s = grow_pending(grow_to); !s) return s;
    }
  }

  /// Moves the pending records to heap storage of `capacity` records
  /// (pending_grows only). Allocates and frees outside the lock; a
  /// concurrent grower that got there first makes this a no-op.
  [[nodiscard]] status grow_pending(std::size_t capacity) noexcept {
    auto* storage = new (std::nothrow) record[capacity];
    if (storage == nullptr) {
      return status{error{errc::resource_exhausted,
                          "submit_signal: out of memory for submitted-signal records", capacity}};
    }
    record* unused = storage;
    {
      detail::spin_guard guard(lock_);
      if (pending_.capacity() < capacity) {
        unused = pending_.adopt(storage, capacity);
        note_pending_free_locked();
      }
    }
    delete[] unused;
    return status{};
  }

  /// The frontier known at reached, witnessed value `v` <= watermark.
  ///
  /// Exact only when the first signal to reach >= v is still in the ring
  /// and was witnessed. When that signal was external (its frontier is
  /// unknown, and a later witnessed signal healed the taint) or has left the
  /// ring, the answer is a later witnessed record's frontier, or the merge
  /// of those that left: a superset, sound as knowledge because every such
  /// record is reached, but not the frontier at v. It then names no
  /// producer and no signal value, and says it is inexact.
  [[nodiscard]] imported_type known_at_locked(std::uint64_t v) const noexcept {
    if (v == 0) return imported_type{Frontier{}, {}, 0, true, true, false};
    if (v <= retired_max_witnessed_) {
      return imported_type{retired_, {}, 0, true, false, false};
    }
    // The first reacher left the ring (an external record, since witnessed
    // ones that left are covered above) unless the ring holds a record >= v
    // and nothing >= v left before it.
    bool first_is_witnessed = v > retired_max_value_;
    for (std::size_t i = 0; i < ring_count_; ++i) {
      const record& r = ring_at(i);
      if (r.value < v) continue;
      if (r.external) {
        first_is_witnessed = false;
        continue;
      }
      if (first_is_witnessed) return imported_type{r.frontier, r.producer, r.value, true, true, false};
      return imported_type{r.frontier, {}, 0, true, false, false};
    }
    // Unreachable while the invariants hold (v <= watermark means a
    // witnessed record >= v exists); answer conservatively.
    Frontier f = retired_;
    f.set_tainted();
    return imported_type{f, {}, 0, true, false, true};
  }

  [[nodiscard]] const record& ring_at(std::size_t i) const noexcept {
    return ring_[(ring_head_ + i) % HistoryDepth];
  }

  /// submit_signal's work, after its write check.
  status submit_pending(std::uint64_t v, const Frontier& f, frontier_entry producer,
                        bool promised = false) noexcept {
    return with_free_record([&] { return check_submittable_locked(v); },
                            [&] { insert_pending_locked(v, f, producer, promised); },
                            "submit_signal: PendingCapacity submitted signals outstanding "
                            "(pending_bounded)");
  }

  static status refused_write() noexcept {
    return status{error{errc::failed_precondition,
                        "semaphore: its writes are reserved (reserve_writes), e.g. an MPI proxy, which only "
                        "its node signals: signal the semaphore it mirrors instead"}};
  }

  /// Every way of reaching a value goes through here.
  status reach(std::uint64_t v, const Frontier* f, frontier_entry producer, bool external,
               bool already_shared = false) noexcept {
    detail::timepoint_list due;
    bool must_wake = false;
    {
      detail::spin_guard guard(lock_);
      if (failed()) [[unlikely]] {
        // The producer of a submitted v is done with it (see ~basic_semaphore).
        settle_pending_locked(v);
        return status{*failure()};
      }
      const std::uint64_t local = payload_.load(std::memory_order_relaxed);
      if (!already_shared && v <= current_value_locked()) {
        return status{error{errc::not_increasing, "signal: value not above the payload", v}};
      }
      if (shared_ != nullptr && !already_shared) {
        // Publish to other processes first; a concurrent remote signal that
        // got there first makes ours non-increasing, with nothing changed.
        std::uint64_t seen = shared_->payload.load(boost::memory_order_relaxed);
        do {
          if (seen >= v) {
            return status{error{errc::not_increasing, "signal: value not above the payload", v}};
          }
          // seq_cst on success: releases like the local payload store, and
          // is the signaller's side of the Dekker pair with a waiter parked
          // in another process (begin_wake()).
        } while (!shared_->payload.compare_exchange_weak(seen, v, boost::memory_order_seq_cst,
                                                          boost::memory_order_relaxed));
      }
      if (already_shared && v <= local) return status{};

      // The record that reaches v: the submitted one for exactly v, if any.
      // Submitted signals below v can no longer be the first to reach
      // their values; they are dropped (their own signal will be
      // non-increasing).
      // Built in place in the ring's next slot (no zeroed temporary, no
      // copy: ~20 ns of a ~40 ns signal went to those). Nothing reads the
      // slot until commit_reached() counts it, and nothing below returns
      // early.
      record& reached = next_reached_slot();
      reached.value = v;
      reached.frontier.clear();
      reached.producer = producer;
      reached.external = external;
      const std::size_t consumed =
          v == std::numeric_limits<std::uint64_t>::max() ? pending_.size() : pending_lower_bound(v + 1);
      if (consumed != 0 && !external) {
        const record& last = pending_[consumed - 1];
        if (last.value == v) {
          reached.frontier = last.frontier;
          if (producer.epoch == 0) reached.producer = last.producer;
        }
      }
      if (consumed != 0) {
        pending_.pop_front(consumed);
        note_pending_free_locked();
      }

      if (external) {
        reached.frontier.set_tainted();
      } else if (f != nullptr) {
        if constexpr (requires { reached.frontier.merge(*f).ok(); }) {
          // A rejecting frontier cannot hold the union: keep the signal's
          // own frontier, tainted (it may miss the submitted entries).
          if (!reached.frontier.merge(*f)) {
            reached.frontier = *f;
            reached.frontier.set_tainted();
          }
        } else {
          reached.frontier.merge(*f);
        }
      }
      commit_reached();
      const bool complete = !reached.external && (!reached.frontier.tainted() || reached.producer.epoch != 0);
      if (complete) {
        // For every u <= v the first witnessed record >= u is reached (this
        // one at the latest), so its frontier is sound to import: the taint
        // of earlier external values heals.
        watermark_.store(v, std::memory_order_release);
      }
      // The observer hears of v before anyone can see it (a lock-free
      // reader of the payload could otherwise act on v -- signal another
      // exported semaphore, say -- before the exporter had queued v's
      // news, and the exporter would send the two out of order).
      if (observed(observer_)) [[unlikely]] {
        observe_reached(reached, false);
      }
      // release: pairs with value()'s acquire; the record above is
      // published by the lock to frontier_at, and by this store to
      // anyone who only reads the payload.
      payload_.store(v, std::memory_order_seq_cst);
      if (traced(trace_)) [[unlikely]] {
        trace_reached(reached);
      }
      if (timepoint_count_.load(std::memory_order_relaxed) != 0) {
        while (!timepoints_.empty() && timepoints_.front().threshold_ <= v) {
          semaphore_timepoint& tp = timepoints_.front();
          timepoints_.pop_front();
          tp.state_.store(detail::timepoint_state::firing, std::memory_order_relaxed);
          if (tp.import_into_ != nullptr) capture_import_locked(tp);
          due.push_back(tp);
          timepoint_count_.fetch_sub(1, std::memory_order_relaxed);
        }
      }
      // Still under the lock (see begin_wake): whether a host waiter must
      // be woken, and if so a count that keeps the semaphore alive for it.
      must_wake = begin_wake();
    }
    // From here `this` may only be touched when must_wake is set: a waiter
    // that saw the value (spinning, not parked) may return and destroy the
    // semaphore at once, and so may a timepoint callback. Host waiters are
    // woken first, so that the count keeping us alive is dropped before any
    // callback runs: a callback may destroy the semaphore on this thread,
    // and its destructor waits for that count. The callbacks then touch
    // only their own nodes (fire_all is static).
    if (must_wake) end_wake();
    fire_all(due, status{});
    return status{};
  }

  CAUSAL_NOINLINE void trace_reached(const record& r) const noexcept {
    trace_->on_semaphore_signal(trace_semaphore_signal{trace_now_ns(), this, r.value, r.producer,
                                                       r.external, trace_frontier::of(r.frontier)});
  }

  CAUSAL_NOINLINE void trace_fail(const error& e) const noexcept {
    trace_->on_semaphore_fail(
        trace_semaphore_fail{trace_now_ns(), this, e.code(), e.message().data(), e.position()});
  }

  CAUSAL_NOINLINE void observe_submitted(const record& r) const noexcept {
    if (observer_->on_submitted == nullptr) return;
    observer_->on_submitted(observer_->context,
                            observed_signal<Frontier>{r.value, &r.frontier, r.producer, false, false});
  }

  CAUSAL_NOINLINE void observe_reached(const record& r, bool replay) const noexcept {
    if (observer_->on_reached == nullptr) return;
    observer_->on_reached(observer_->context,
                          observed_signal<Frontier>{r.value, &r.frontier, r.producer, r.external, replay});
  }

  CAUSAL_NOINLINE void observe_fail(const error& e) const noexcept {
    if (observer_->on_failed != nullptr) observer_->on_failed(observer_->context, e);
  }

  /// set_observer's replay of the current state to `o`, under the lock.
  void replay_locked(const observer_type& o) const noexcept {
    if (o.on_reached != nullptr) {
      if (ring_count_ == 0) {
        // Nothing signalled since construction (or a system_wide opener
        // that absorbed nothing): the initial value, known with nothing.
        const std::uint64_t now = current_value_locked();
        if (now != 0) {
          const Frontier none{};
          o.on_reached(o.context, observed_signal<Frontier>{now, &none, {}, false, true});
        }
      }
      for (std::size_t i = 0; i < ring_count_; ++i) {
        const record& r = ring_at(i);
        o.on_reached(o.context, observed_signal<Frontier>{r.value, &r.frontier, r.producer, r.external, true});
      }
    }
    if (o.on_submitted != nullptr) {
      for (std::size_t i = 0; i < pending_.size(); ++i) {
        const record& r = pending_[i];
        o.on_submitted(o.context, observed_signal<Frontier>{r.value, &r.frontier, r.producer, false, true});
      }
    }
    if (o.on_failed != nullptr && failed()) o.on_failed(o.context, *failure());
  }

  void push_reached(const record& r) noexcept {
    next_reached_slot() = r;
    commit_reached();
  }

  /// The ring slot the next reached record goes to, retiring the oldest
  /// record first when the ring is full. The slot holds stale contents
  /// until the caller fills it; commit_reached() then counts it.
  [[nodiscard]] record& next_reached_slot() noexcept {
    if (ring_count_ == HistoryDepth) {
      // The oldest reached record leaves the ring: fold it into the merged
      // superset (witnessed records only; external ones carry nothing).
      record& oldest = ring_[ring_head_];
      if (!oldest.external) {
        if constexpr (requires { retired_.merge(oldest.frontier).ok(); }) {
          // Rejected: the superset cannot be kept exactly; a tainted one is
          // never dominated, so it stays safe as a requirement.
          if (!retired_.merge(oldest.frontier)) retired_.set_tainted();
        } else {
          retired_.merge(oldest.frontier);
        }
        retired_max_witnessed_ = oldest.value;
      }
      retired_max_value_ = oldest.value;
      ring_head_ = (ring_head_ + 1) % HistoryDepth;
      --ring_count_;
    }
    return ring_[(ring_head_ + ring_count_) % HistoryDepth];
  }

  void commit_reached() noexcept { ++ring_count_; }

  void take_all(detail::timepoint_list& into) noexcept {
    while (!timepoints_.empty()) {
      semaphore_timepoint& tp = timepoints_.front();
      timepoints_.pop_front();
      tp.state_.store(detail::timepoint_state::firing, std::memory_order_relaxed);
      into.push_back(tp);
    }
    timepoint_count_.store(0, std::memory_order_relaxed);
  }

  static void fire_all(detail::timepoint_list& due, status s) noexcept {
    while (!due.empty()) {
      semaphore_timepoint& tp = due.front();
      due.pop_front();
      // The node is no longer reachable from the semaphore: after this the
      // callback owns it (it may free or re-register it).
      tp.state_.store(detail::timepoint_state::idle, std::memory_order_relaxed);
      tp.owner_.store(nullptr, std::memory_order_relaxed);
      tp.callback_(tp, s);
    }
  }

  /// The signaller's side of a host wake, in two halves. begin_wake()
  /// runs right after the payload (or failure) store: seq_cst on both
  /// sides (Dekker): a waiter increments waiters_ and then re-reads the
  /// payload and failure flag with seq_cst loads (poll_parked); we stored
  /// the payload (or the failure) with seq_cst and then read waiters_. At
  /// least one of us sees the other. (An acquire re-load on the waiter's
  /// side would not do: it is outside the single total order, and on RCpc
  /// hardware it may pass the increment.) When a waiter must be woken it
  /// also counts this call in notifying_, so that the destructor, which
  /// may run as soon as a waiter has seen the value, waits until
  /// end_wake() has stopped touching the semaphore. When none must be
  /// woken, the signaller never touches the semaphore again.
  [[nodiscard]] bool begin_wake() noexcept {
    const bool must = shared_ != nullptr ? shared_->waiters.load(boost::memory_order_seq_cst) != 0
                                         : waiters_.load(std::memory_order_seq_cst) != 0;
    if (must) notifying_.fetch_add(1, std::memory_order_relaxed);
    return must;
  }

  /// Wakes the parked host waiters, then lets the destructor go on.
  void end_wake() noexcept {
    if (shared_ != nullptr) {
      shared_->wake_word.fetch_add(1, boost::memory_order_release);
      shared_->wake_word.notify_all();
    } else {
      wake_.fetch_add(1, std::memory_order_release);
      wake_.notify_all();
    }
    // release: our last access to the semaphore happens-before the
    // destructor's acquire load that sees the count drop.
    notifying_.fetch_sub(1, std::memory_order_release);
  }

  /// One poll of a host wait: a status when it is over.
  [[nodiscard]] std::optional<status> poll_wait(std::uint64_t v) const noexcept {
    // The payload first: a value reached before a failure stays reached,
    // and the payload never moves after one, so a failure read after a
    // payload below v means v will never be reached.
    if (value() >= v) return status{};
    if (const auto f = failure(); f) {
      // The flag's acquire makes the frozen payload visible: read it again
      // (the first read may predate a signal that came before the failure).
      if (value() >= v) return status{};
      return status{*f};
    }
    return std::nullopt;
  }

  /// poll_wait for a waiter that has announced itself in `waiters`: every
  /// load is seq_cst, the waiter's side of the Dekker pair described in
  /// begin_wake(). On x86 these are plain loads.
  [[nodiscard]] std::optional<status> poll_parked(std::uint64_t v) const noexcept {
    // The payload before the failure flag, as in poll_wait: the payload is
    // frozen once the flag is set, so a payload below v read before a set
    // flag means v is never reached.
    const std::uint64_t now = shared_ != nullptr
                                  ? shared_->payload.load(boost::memory_order_seq_cst)
                                  : payload_.load(std::memory_order_seq_cst);
    if (now >= v) return status{};
    const bool local_failure = failed_.load(std::memory_order_seq_cst);
    const bool remote_failure =
        shared_ != nullptr && shared_->failure_code.load(boost::memory_order_seq_cst) != 0;
    if (local_failure || remote_failure) return poll_wait(v);  // re-reads the frozen payload
    return std::nullopt;
  }

  CAUSAL_NOINLINE status park_until(std::uint64_t v, clock::time_point deadline) const noexcept {
    if (shared_ != nullptr) return park_shared_until(v, deadline);
    waiters_.fetch_add(1, std::memory_order_seq_cst);
    status out{error{errc::timeout, "semaphore wait timed out", v}};
    for (;;) {
      const auto seen = wake_.load(std::memory_order_acquire);
      if (auto s = poll_parked(v); s) {
        out = *s;
        break;
      }
      if (!wake_.wait_until(seen, deadline)) {
        if (auto s = poll_parked(v); s) out = *s;
        break;
      }
    }
    waiters_.fetch_sub(1, std::memory_order_relaxed);
    return out;
  }

  status park_shared_until(std::uint64_t v, clock::time_point deadline) const noexcept {
#if CAUSAL_HAS_SYSTEM_SEMAPHORE()
    shared_->waiters.fetch_add(1, boost::memory_order_seq_cst);
    status out{error{errc::timeout, "semaphore wait timed out", v}};
    for (;;) {
      const std::uint32_t seen = shared_->wake_word.load(boost::memory_order_acquire);
      if (auto s = poll_parked(v); s) {
        out = *s;
        break;
      }
      if (clock::now() >= deadline) break;
      detail::shared_futex_wait_until(shared_->wake_word, seen, deadline);
    }
    shared_->waiters.fetch_sub(1, boost::memory_order_relaxed);
    return out;
#else
    (void)v;
    (void)deadline;
    return status{error{errc::unsupported_version, "no system_wide semaphores here"}};
#endif
  }

  void create_shared(std::uint64_t initial) noexcept {
#if CAUSAL_HAS_SYSTEM_SEMAPHORE()
    const int fd = static_cast<int>(::syscall(SYS_memfd_create, "causal-semaphore", 1u /*MFD_CLOEXEC*/));
    if (fd < 0 || ::ftruncate(fd, sizeof(detail::shared_timeline_block)) != 0) {
      if (fd >= 0) ::close(fd);
      set_failed_at_creation(error{errc::resource_exhausted, "system_wide: memfd_create failed"});
      return;
    }
    void* memory = ::mmap(nullptr, sizeof(detail::shared_timeline_block), PROT_READ | PROT_WRITE,
                          MAP_SHARED, fd, 0);
    if (memory == MAP_FAILED) {
      ::close(fd);
      set_failed_at_creation(error{errc::resource_exhausted, "system_wide: mmap failed"});
      return;
    }
    auto* block = static_cast<detail::shared_timeline_block*>(memory);
    block->payload.store(initial, boost::memory_order_relaxed);
    block->wake_word.store(0, boost::memory_order_relaxed);
    block->waiters.store(0, boost::memory_order_relaxed);
    block->failure_code.store(0, boost::memory_order_relaxed);
    block->magic = detail::shared_timeline_block::expected_magic;
    shared_ = block;
    shared_fd_ = fd;
#else
    (void)initial;
    set_failed_at_creation(error{errc::unsupported_version, "system_wide: not supported here"});
#endif
  }

  void open_shared(system_semaphore_handle handle) noexcept {
#if CAUSAL_HAS_SYSTEM_SEMAPHORE()
    struct stat info {};
    if (handle.fd < 0 || ::fstat(handle.fd, &info) != 0 ||
        static_cast<std::size_t>(info.st_size) < sizeof(detail::shared_timeline_block)) {
      set_failed_at_creation(error{errc::invalid_argument, "system_wide: bad handle"});
      return;
    }
    const int fd = ::fcntl(handle.fd, F_DUPFD_CLOEXEC, 0);
    void* memory = fd < 0 ? MAP_FAILED
                          : ::mmap(nullptr, sizeof(detail::shared_timeline_block),
                                   PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (memory == MAP_FAILED) {
      if (fd >= 0) ::close(fd);
      set_failed_at_creation(error{errc::invalid_argument, "system_wide: cannot map handle"});
      return;
    }
    auto* block = static_cast<detail::shared_timeline_block*>(memory);
    if (block->magic != detail::shared_timeline_block::expected_magic) {
      ::munmap(memory, sizeof(detail::shared_timeline_block));
      ::close(fd);
      set_failed_at_creation(error{errc::invalid_argument, "system_wide: not a causal semaphore"});
      return;
    }
    shared_ = block;
    shared_fd_ = fd;
    // Everything reached before we opened is external to us.
    const std::uint64_t now = block->payload.load(boost::memory_order_acquire);
    payload_.store(now, std::memory_order_relaxed);
    watermark_.store(0, std::memory_order_relaxed);
    if (now != 0) push_reached(record{now, Frontier{}, {}, true});
#else
    (void)handle;
    set_failed_at_creation(error{errc::unsupported_version, "system_wide: not supported here"});
#endif
  }

  void release_shared() noexcept {
#if CAUSAL_HAS_SYSTEM_SEMAPHORE()
    if (shared_ != nullptr) ::munmap(shared_, sizeof(detail::shared_timeline_block));
    if (shared_fd_ >= 0) ::close(shared_fd_);
#endif
    shared_ = nullptr;
    shared_fd_ = -1;
  }

  void set_failed_at_creation(error e) noexcept {
    failure_ = e;
    failed_.store(true, std::memory_order_release);
  }

  // Cache-line map. Line 0: what every reader touches (payload, watermark,
  // failure flag, shared block pointer, trace sink, observer). Line 1: the
  // lock and counters writers touch. Then the records, read and written
  // under the lock.
  alignas(CAUSAL_CACHELINE_SIZE) const semaphore_scope scope_;
  std::atomic<std::uint64_t> payload_{0};
  std::atomic<std::uint64_t> watermark_{0};
  std::atomic<bool> failed_{false};
  detail::shared_timeline_block* shared_ = nullptr;
  int shared_fd_ = -1;
  // Set before the semaphore is shared, then only read: no false sharing.
  trace_sink* trace_ = nullptr;
  // Written under the lock by set_observer (rarely), read under the lock
  // by the hook sites and by the destructor.
  const observer_type* observer_ = nullptr;
  /// The only writer's key (reserve_writes), or null: anyone may signal.
  const void* write_key_ = nullptr;

  alignas(CAUSAL_CACHELINE_SIZE) mutable detail::spin_lock lock_;
  std::atomic<std::uint32_t> timepoint_count_{0};
  mutable std::atomic<std::uint32_t> waiters_{0};
  mutable ext::park_word wake_{0};
  /// Signallers between begin_wake() and the end of end_wake().
  std::atomic<std::uint32_t> notifying_{0};
  error failure_{};
  detail::timepoint_list timepoints_;

  std::size_t ring_head_ = 0;
  std::size_t ring_count_ = 0;
  /// Records reserved by reserve_signal and not yet submitted
  /// (pending_bounded only).
  std::size_t reserved_ = 0;
  /// Free records, as last seen under the lock: reserve_signal's lock-free
  /// hint (pending_grows).
  std::atomic<std::size_t> pending_free_{PendingCapacity};
  /// The highest value among the witnessed records that left the ring.
  std::uint64_t retired_max_witnessed_ = 0;
  /// The highest value among all records that left the ring.
  std::uint64_t retired_max_value_ = 0;
  std::array<record, HistoryDepth> ring_{};
  detail::semaphore_holder* holders_ = nullptr;  // add_holder / remove_holder
  detail::inline_ring<record, PendingCapacity> pending_;
  Frontier retired_{};
};

/// The default semaphore: causal::frontier, 4 reached records, 8 submitted
/// records inline and more on the heap as needed (pending_grows).
using semaphore = basic_semaphore<>;

namespace detail {

/// The failure that keeps `s` from ever reaching `v`: its error when it
/// failed with the payload below `v`, else nothing. A value reached before
/// the failure stays reached (the payload is frozen once failed, and is
/// read again after the failure flag's acquire, which makes it visible).
template <class S>
[[nodiscard]] std::optional<error> failure_below(const S& s, std::uint64_t v) noexcept {
  // The flag first (one load on the common path, nothing built); its
  // acquire makes the payload it froze visible to the read after it.
  if (!s.failed()) [[likely]] return std::nullopt;
  if (s.value() >= v) return std::nullopt;
  return s.failure();
}

/// add_holder / remove_holder where the semaphore type has holders.
template <class S>
void add_holder_if_able(S& s, semaphore_holder& h) noexcept {
  if constexpr (requires { s.add_holder(h); }) s.add_holder(h);
}
template <class S>
void remove_holder_if_able(S& s, semaphore_holder& h) noexcept {
  if constexpr (requires { s.remove_holder(h); }) s.remove_holder(h);
}

/// Fails `s` as the producer of its submitted signal `v`
/// (basic_semaphore::fail_submitted, which also settles that promise), or
/// plainly for a semaphore type without promises.
template <class S>
bool fail_signal(S& s, std::uint64_t v, const error& e) noexcept {
  if constexpr (requires { s.fail_submitted(v, e); }) {
    return s.fail_submitted(v, e);
  } else {
    return s.fail(e);
  }
}

/// For an owner that alone may move the semaphore it exposes (a channel's
/// completion semaphore, a proxy): reserves `s`'s writes for `key` where
/// the semaphore type can (reserve_writes); other types stay as they are.
template <class S>
void reserve_writes_if_able(S& s, const void* key) noexcept {
  if constexpr (requires { s.reserve_writes(key); }) (void)s.reserve_writes(key);
}

/// signal(v, f, producer) by the owner that reserved `s` with `key`
/// (signal_as), or a plain signal for a type without reservations.
template <class S, class F>
status signal_as_owner(S& s, const void* key, std::uint64_t v, const F& f, frontier_entry producer) noexcept {
  if constexpr (requires { s.signal_as(key, v, f, producer); }) {
    return s.signal_as(key, v, f, producer);
  } else {
    return s.signal(v, f, producer);
  }
}

/// submit_signal(v, f, producer) by the owner that reserved `s` with `key`.
template <class S, class F>
status submit_signal_as_owner(S& s, const void* key, std::uint64_t v, const F& f,
                              frontier_entry producer) noexcept {
  if constexpr (requires { s.submit_signal_as(key, v, f, producer); }) {
    return s.submit_signal_as(key, v, f, producer);
  } else {
    return s.submit_signal(v, f, producer);
  }
}

}  // namespace detail

//===-- links ---------------------------------------------------------------===//

/// Relays "S >= x  =>  signal T to y" without allocation: when the source
/// reaches x, the target is signalled to y carrying the frontier S's
/// waiters import at x; a failure of S fails T; destroying S first does
/// nothing to T. If the relayed signal is rejected (T already past y) T is
/// failed with that error, since its waiters were promised the order.
///
/// The source may be destroyed as soon as anyone sees it at x, even while
/// the relay is running: the frontier is copied under the source's lock
/// when the timepoint fires (add_timepoint's importing overload), so the
/// relay never reads the source. The link holds that copy (one imported
/// frontier, ~250 bytes with the default frontier).
template <class Source, class Target = Source>
class semaphore_link {
 public:
  semaphore_link(Target& target, std::uint64_t target_value) noexcept
      : target_(&target), target_value_(target_value) {}
  semaphore_link(const semaphore_link&) = delete;
  semaphore_link& operator=(const semaphore_link&) = delete;
  ~semaphore_link() { (void)timepoint_.cancel(); }

  /// Starts relaying from `source` at `source_value`; may fire inline.
  void arm(Source& source, std::uint64_t source_value) noexcept {
    timepoint_.reset(source_value, &relay, this);
    source.add_timepoint(timepoint_, imported_);
  }

  /// Stops the relay; true when it is guaranteed not to fire.
  bool cancel() noexcept { return timepoint_.cancel(); }

 private:
  static void relay(semaphore_timepoint& tp, status s) noexcept {
    auto* self = static_cast<semaphore_link*>(tp.user_data());
    if (!s) {
      if (s.code() != errc::cancelled) self->target_->fail(s.error_value());
      return;
    }
    // Filled under the source's lock before this callback: the source
    // itself may be gone by now.
    status relayed = self->target_->signal(self->target_value_, self->imported_.frontier);
    if (!relayed) self->target_->fail(relayed.error_value());
  }

  Target* target_;
  std::uint64_t target_value_;
  semaphore_timepoint timepoint_;
  typename Source::imported_type imported_{};
};

//===-- multi-waits ---------------------------------------------------------===//

/// One (semaphore, value) pair of a multi-wait.
template <class Semaphore>
struct wait_point {
  Semaphore* semaphore;
  std::uint64_t value;
};

/// The most points one wait_all/wait_any takes (their timepoints live on
/// the caller's stack).
inline constexpr std::size_t max_wait_points = 64;

namespace detail {

/// Stack state shared by a multi-wait and the timepoints it registers.
struct multi_wait_state {
  ext::park_word word{0};
  std::atomic<std::uint32_t> finished{0};

  static void on_fire(semaphore_timepoint& tp, status) noexcept {
    auto* self = static_cast<multi_wait_state*>(tp.user_data());
    self->word.fetch_add(1, std::memory_order_release);
    self->word.notify_all();
    // Last touch of *self: the waiter may return once it sees this.
    self->finished.fetch_add(1, std::memory_order_release);
  }
};

enum class wait_mode : std::uint8_t { all, any };

/// Waits for all/any of `points`; returns the index satisfied (any) or 0.
template <class Semaphore>
result<std::size_t> multi_wait(std::span<const wait_point<Semaphore>> points, wait_mode mode,
                               std::chrono::steady_clock::time_point deadline,
                               unsigned spin) noexcept {
  if (points.size() > max_wait_points) {
    return error{errc::invalid_argument, "wait_all/wait_any: more than max_wait_points points",
                 points.size()};
  }
  if (points.empty()) {
    if (mode == wait_mode::all) return std::size_t{0};
    return error{errc::invalid_argument, "wait_any: no points"};
  }
  // Evaluate: a point is reached when its payload is (a value reached
  // before a failure stays reached); a failure of a point not reached ends
  // either mode.
  auto evaluate = [&]() -> std::optional<result<std::size_t>> {
    bool all_reached = true;
    for (std::size_t i = 0; i < points.size(); ++i) {
      bool reached = points[i].semaphore->value() >= points[i].value;
      if (!reached) {
        if (const auto f = points[i].semaphore->failure(); f) {
          // Re-read after the flag: the payload it froze is visible now.
          reached = points[i].semaphore->value() >= points[i].value;
          if (!reached) return result<std::size_t>{*f};
        }
      }
      if (mode == wait_mode::any && reached) return result<std::size_t>{i};
      all_reached = all_reached && reached;
    }
    if (mode == wait_mode::all && all_reached) return result<std::size_t>{std::size_t{0}};
    return std::nullopt;
  };
  for (unsigned i = 0; i <= spin; ++i) {
    if (auto r = evaluate(); r) return *r;
    cpu_relax();
  }
  // Timepoints only fire for signals made in this process (or absorbed by
  // poll()): a system_wide semaphore that another process signals wakes
  // nobody here. With such a point, park at most remote_poll_interval at a
  // time and re-evaluate, which reads the shared payload and failure.
  constexpr auto remote_poll_interval = std::chrono::milliseconds(1);
  bool has_remote = false;
  for (const wait_point<Semaphore>& p : points) {
    has_remote = has_remote || p.semaphore->scope() == semaphore_scope::system_wide;
  }
  multi_wait_state state;
  std::array<semaphore_timepoint, max_wait_points> nodes;
  for (std::size_t i = 0; i < points.size(); ++i) {
    nodes[i].reset(points[i].value, &multi_wait_state::on_fire, &state);
    points[i].semaphore->add_timepoint(nodes[i]);
  }
  std::optional<result<std::size_t>> out;
  for (;;) {
    const auto seen = state.word.load(std::memory_order_acquire);
    if (out = evaluate(); out) break;
    auto park_deadline = deadline;
    if (has_remote) {
      const auto now = std::chrono::steady_clock::now();
      if (deadline - now > remote_poll_interval) park_deadline = now + remote_poll_interval;
    }
    if (!state.word.wait_until(seen, park_deadline)) {
      if (park_deadline != deadline) continue;  // a remote poll, not the deadline
      out = evaluate();
      if (!out) out = result<std::size_t>{error{errc::timeout, "multi-wait timed out"}};
      break;
    }
  }
  std::uint32_t will_fire = 0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (!nodes[i].cancel()) ++will_fire;
  }
  // Callbacks that could not be cancelled touch `state` until their last
  // fetch_add; wait for them before the stack frame goes away.
  while (state.finished.load(std::memory_order_acquire) < will_fire) cpu_relax();
  return *out;
}

}  // namespace detail

/// Blocks until every point is reached (ok), any semaphore fails (its
/// failure), or `deadline` passes (`errc::timeout`). At most
/// max_wait_points points (else `errc::invalid_argument`). A system_wide
/// point signalled by another process is noticed within about 1 ms (the
/// wait re-polls; a remote signal wakes no timepoint here).
template <class Semaphore>
status wait_all(std::span<const wait_point<Semaphore>> points,
                std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max(),
                unsigned spin = Semaphore::default_spin) noexcept {
  auto r = detail::multi_wait(points, detail::wait_mode::all, deadline, spin);
  return r ? status{} : status{r.error_value()};
}

/// Blocks until some point is reached and returns its index; or the first
/// failure seen; or `errc::timeout`. Limits as wait_all.
template <class Semaphore>
result<std::size_t> wait_any(std::span<const wait_point<Semaphore>> points,
                             std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max(),
                             unsigned spin = Semaphore::default_spin) noexcept {
  return detail::multi_wait(points, detail::wait_mode::any, deadline, spin);
}

CAUSAL_END_NAMESPACE
