// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// queue: the device-independent half of a causal queue — one axis, its
// epoch, its knowledge frontier, and the submission logic that decides, for
// every wait, whether a device wait is needed at all (wait elision).
//
// Model. A queue is one axis plus the epoch of its last submitted operation
// and a *knowledge* frontier: everything known to be ordered before the
// queue's next operation. Knowledge always holds the queue's own axis at its
// current epoch (pinned: overflow never evicts it). Backend contract: the
// operations of one queue complete in epoch order, so (axis, e) in any
// frontier means every operation of that queue up to e has completed —
// which also makes an elided wait order the *whole* next submission, not
// just its first packet.
//
// submit(waits, signals, op) picks, for each wait (S, v), the cheapest
// sound tier (docs/queues.md):
//   0  S has reached v and v is untainted: import S's frontier at v; no
//      device wait (counted `elided_reached`).
//   1  The submitted signal of S at v came from this queue (FIFO orders it;
//      `elided_same_queue`), or knowledge covers its producer entry
//      (`elided_dominated`). An announcement with no producer (a host or
//      outside signaller's submit_signal) never elides before the value is
//      reached: the announcer's frontier need not contain the signal itself,
//      so dominating it proves nothing. Values made by signal_external never
//      elide.
//   2  Otherwise the backend issues a device wait (`device_waits`), and the
//      frontier of the first signal to reach v, when known (v reached, or
//      a signal of exactly v submitted), joins the knowledge.
//   3  The value has no submitted signal yet and the backend cannot wait for
//      such a value (binary events): the whole submission is held on the
//      host (`host_deferrals`) and retried by pump(); later submissions
//      queue behind it, keeping FIFO order. The table of held submissions
//      grows as needed: any number may be held.
// Before anything is issued, a record is reserved on every signalled
// semaphore (reserve_signal), so no capacity check can fail once the
// operation is on the device. Then the epoch advances and each signal
// (S, v) is announced with S.submit_reserved_signal(v, knowledge,
// producer = (axis, epoch)) and issued. The
// backend later reports completion: S.device_signal(v) reaches the value
// with the recorded frontier, and retire(epoch) updates the queue's
// completed epoch (and an attached completion tracker).
//
// Signals of one operation. (axis, e) in a frontier claims that operation
// e has completed: every signal of it reached. A backend reaches an
// operation's signals one at a time, in the order they were issued, so
// only the last signal carries (axis, e); the others carry what was known
// before e (the waits' imports and (axis, e - 1)). All carry the producer
// entry (axis, e): covering it proves every one of them reached. Put the
// signal most consumers wait on last: its waiters learn the most.
//
// Failure. Elision never changes an outcome. An elided tier-1 wait
// (dominated, or signalled earlier by this queue) is implied only while
// everything upstream succeeds, and only once the earlier operations of
// this queue have completed on the device: when a failure
// reaches this operation first (its queue failed, or a device wait's
// semaphore failed), the value it skipped may not be reached yet, and
// failing the operation's signals then could fail a semaphore before a
// healthy signal of a lower value arrives. So the backend hears of those
// waits too (optional `guard_elided_wait(s, v)`) and fails the operation's
// signals only once every wait, issued or elided, is met or failed -- as
// it would have, had the wait been issued.
//
// Tracing. With a trace_sink installed (set_trace_sink), each executed
// operation reports its waits' tiers, then itself, then its signals; a
// deferral and a retire report themselves. With none, each hook site is one
// never-taken branch (<causal/trace_sink.hpp>).
//
// Knowledge ahead of the epoch. learn() (and a block pool's fence waits,
// which order the *next* operation) add entries that the queue's current
// epoch does not cover. Until the next submission, knowledge_producer()
// names (axis, epoch + 1): the operation that those waits precede, which is
// what a death frontier recorded now must be proven by (pool.hpp).
//
// Thread safety: a queue is externally synchronised, like a VkQueue: one
//                thread at a time calls submit/pump/knowledge. stats(),
//                completed_epoch() and retire() may be called from any
//                thread (a completion thread retires; stats() reads
//                counters the submitting thread stores atomically).
// Memory order:  retire(e) releases; completed_epoch() acquires; stats()
//                is relaxed (each counter is exact, the set a snapshot).
// Blocking/allocation: never blocks. submit takes the spin locks of the
//                semaphores it touches (frontier_at, reserve_signal,
//                submit_reserved_signal), nothing else; it allocates only
//                when a semaphore's pending-signal table or the deferral
//                table grows past its largest size so far. An installed
//                trace sink runs on the calling thread and may do either.
// Size:          sizeof(Frontier) * 2 plus the backend, plus max_deferred
//                inline deferral slots (~700 bytes each) and more on the
//                heap once that many submissions were held at once.
// Configuration: Frontier, Backend (concept queue_backend); limits
//                max_waits, max_signals per submission, max_deferred held
//                submissions kept inline (static members);
//                optional `backend.trace_label(op)` names operations in
//                traces; CAUSAL_ENABLE_TRACE_HOOKS.
// See also:      docs/queues.md, <causal/semaphore.hpp>,
//                <causal/completion.hpp>, <causal/pool.hpp>,
//                <causal/trace_sink.hpp>.
#pragma once

#include <causal/axis.hpp>
#include <causal/config.hpp>
#include <causal/detail/inline_ring.hpp>
#include <causal/frontier.hpp>
#include <causal/result.hpp>
#include <causal/semaphore.hpp>
#include <causal/trace_sink.hpp>

#include <array>
#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>

CAUSAL_BEGIN_NAMESPACE

//===-- backend concept -----------------------------------------------------===//

/// What a device must supply to a queue.
///
/// - `semaphore_type`: the semaphore type waits and signals name.
/// - `operation_type`: what `execute` runs (a command buffer, a kernel
///   launch, a host callback, a tag); default-constructible and copyable
///   (deferred submissions keep a copy).
/// - `waits_before_signal`: true when the device can wait for a value
///   whose signal has not been submitted yet (timeline semaphores, stream
///   memory waits); false for binary events (tier 3 defers instead).
/// - `issue_wait(s, v)`, `execute(op, epoch)`, `issue_signal(s, v)`: called
///   in that order for one submission; each returns a status, and a failure
///   stops the submission (see basic_queue::submit).
/// - The backend reaches an operation's signals in issue_signal order (or
///   all at once): only the last carries the operation's own entry (see
///   the file comment, "Signals of one operation").
/// - optionally `guard_elided_wait(s, v)`, called before execute for each
///   wait elided as dominated or as signalled by the same queue (not for
///   reached values, which stay reached): the operation need not wait for
///   it to run,
///   but must not fail its signals before S >= v is met or S fails (see
///   "Failure"). A backend that never fails an operation it has not run
///   may leave it out.
/// - optionally `flush()`, called once after the last issue_signal of a
///   submission (a batching backend submits there).
/// - optionally `trace_label(op)` returning a `const char*` (valid during
///   the call): the operation's name in traces.
template <class B>
concept queue_backend =
    requires(B& backend, typename B::semaphore_type& sem, std::uint64_t value,
             const typename B::operation_type& op) {
      typename B::semaphore_type;
      typename B::operation_type;
      { B::waits_before_signal } -> std::convertible_to<bool>;
      { backend.issue_wait(sem, value) } -> std::same_as<status>;
      { backend.execute(op, value) } -> std::same_as<status>;
      { backend.issue_signal(sem, value) } -> std::same_as<status>;
    };

/// One wait of a submission: "the operation starts after S >= value".
template <class Semaphore>
struct queue_wait {
  Semaphore* semaphore = nullptr;
  std::uint64_t value = 0;
};

/// One signal of a submission: "when the operation completes, S := value".
template <class Semaphore>
struct queue_signal {
  Semaphore* semaphore = nullptr;
  std::uint64_t value = 0;
};

/// What the queue did, cumulatively: a snapshot returned by stats().
struct queue_stats {
  std::uint64_t submissions = 0;        ///< operations executed
  std::uint64_t elided_reached = 0;     ///< tier 0: value already reached
  std::uint64_t elided_same_queue = 0;  ///< tier 1: signalled by this queue
  std::uint64_t elided_dominated = 0;   ///< tier 1: producer covered by knowledge
  std::uint64_t device_waits = 0;       ///< tier 2: waits issued to the device
  std::uint64_t host_deferrals = 0;     ///< tier 3: submissions held on the host
  std::uint64_t signals = 0;            ///< signals announced and issued

  [[nodiscard]] constexpr std::uint64_t waits_elided() const noexcept {
    return elided_reached + elided_same_queue + elided_dominated;
  }
};

/// The outcome of one submit().
struct submission {
  /// The epoch the operation got; 0 while it is deferred (tier 3).
  std::uint64_t epoch = 0;
  /// True when the submission is held on the host until pump() can issue it.
  bool deferred = false;
};

namespace detail {

/// Refuses (`invalid_argument`) a submission with a wait on `signal`'s
/// semaphore at or above the value it signals: only the operation's own
/// completion could reach it, so it would never run. A wait below it (the
/// previous value, say) is fine. For adapters that check a submission
/// before basic_queue::submit does, so that they refuse it the same way.
template <class Wait, class Signal>
status check_no_self_wait(std::span<const Wait> waits, const Signal& signal) noexcept {
  for (const Wait& w : waits) {
    if (w.semaphore == signal.semaphore && w.value >= signal.value) {
      return status{error{errc::invalid_argument,
                          "submit: a wait on a value this submission signals itself (or a later one): "
                          "the operation would wait for its own completion and never run",
                          w.value}};
    }
  }
  return status{};
}

}  // namespace detail

//===-- basic_queue ---------------------------------------------------------===//

/// The core of a causal queue over `Backend`; see the file comment.
template <frontier_type Frontier, queue_backend Backend>
  requires std::same_as<typename Backend::semaphore_type::frontier_type, Frontier>
class basic_queue {
 public:
  using frontier_type = Frontier;
  using backend_type = Backend;
  using semaphore_type = typename Backend::semaphore_type;
  using operation_type = typename Backend::operation_type;
  using wait_type = queue_wait<semaphore_type>;
  using signal_type = queue_signal<semaphore_type>;

  /// Most waits, and most signals, one submission may carry.
  static constexpr std::size_t max_waits = 16;
  static constexpr std::size_t max_signals = 16;
  /// Submissions held on the host (tier 3) without allocating; more grow
  /// the table on the heap.
  static constexpr std::size_t max_deferred = 16;
  /// True when the backend reaches or fails every signal it is given,
  /// later, from work it keeps (Backend::writes_later: the CPU, Vulkan
  /// and CUDA queues): their signals are announced as promises, and a
  /// semaphore refuses to be destroyed while one is outstanding
  /// (docs/lifetimes.md). A test double that may never complete says
  /// nothing.
  static constexpr bool backend_writes_later = [] {
    if constexpr (requires { Backend::writes_later; }) {
      return static_cast<bool>(Backend::writes_later);
    } else {
      return false;
    }
  }();

  /// Creates the queue for axis `a` (from an axis_allocator: never reused),
  /// forwarding `backend_args` to the backend. Precondition: a.raw() != 0.
  template <class... Args>
  explicit basic_queue(causal::axis a, Args&&... backend_args) noexcept(
      std::is_nothrow_constructible_v<Backend, Args&&...>)
      : axis_(a), backend_(std::forward<Args>(backend_args)...) {
    CAUSAL_ASSERT(a.raw() != 0, "basic_queue: axis 0 is reserved");
  }

  basic_queue(const basic_queue&) = delete;
  basic_queue& operator=(const basic_queue&) = delete;

  [[nodiscard]] causal::axis axis() const noexcept { return axis_; }
  /// The epoch of the last executed operation (0 before the first).
  [[nodiscard]] std::uint64_t epoch() const noexcept { return epoch_; }
  /// What is ordered before this queue's next operation.
  [[nodiscard]] const Frontier& knowledge() const noexcept { return knowledge_; }
  /// The counters so far; callable from any thread (see the file comment).
  [[nodiscard]] queue_stats stats() const noexcept { return stats_.snapshot(); }
  /// The entry that proves the current knowledge: (axis, epoch), or
  /// (axis, epoch + 1) when something was learnt since the last submission
  /// (it orders only the next operation), or {axis{0}, 0} when the queue
  /// knows nothing. A death frontier recorded now must name this producer.
  [[nodiscard]] frontier_entry knowledge_producer() const noexcept {
    const std::uint64_t e = knowledge_ahead_ ? epoch_ + 1 : epoch_;
    return e != 0 ? frontier_entry{axis_, e} : frontier_entry{};
  }
  [[nodiscard]] Backend& backend() noexcept { return backend_; }
  [[nodiscard]] const Backend& backend() const noexcept { return backend_; }
  /// Submissions currently held on the host (tier 3).
  [[nodiscard]] std::size_t deferred_count() const noexcept { return deferred_.size(); }

  /// The highest epoch the backend reported complete.
  [[nodiscard]] std::uint64_t completed_epoch() const noexcept {
    // acquire: pairs with the release in retire().
    return completed_.load(std::memory_order_acquire);
  }

  /// Records that every operation up to `epoch` has completed; forwards it
  /// to the attached completion tracker. Lower values are ignored.
  void retire(std::uint64_t epoch) noexcept {
    std::uint64_t seen = completed_.load(std::memory_order_relaxed);
    while (seen < epoch &&
           !completed_.compare_exchange_weak(seen, epoch, std::memory_order_release,
                                             std::memory_order_relaxed)) {
    }
    if (seen < epoch && retire_observer_ != nullptr) {
      retire_observer_(retire_context_, axis_, epoch);
    }
    if (traced(trace_) && seen < epoch) [[unlikely]] {
      trace_retire(epoch);
    }
  }

  /// Reports this queue's decisions to `sink` from now on (null: stop).
  /// Not concurrently with any other member (retire() included); the sink
  /// must outlive its installation. See <causal/trace_sink.hpp>.
  void set_trace_sink(trace_sink* sink) noexcept { trace_ = sink; }
  [[nodiscard]] trace_sink* get_trace_sink() const noexcept { return trace_; }

  /// Forwards every retire() to `tracker.advance(axis(), epoch)`, and
  /// fail_completion() to `tracker.fail_axis(axis(), e)` where the tracker
  /// has one. The tracker must outlive the queue and know this axis.
  template <class Tracker>
  void track_completion(Tracker& tracker) noexcept {
    retire_context_ = &tracker;
    retire_observer_ = [](void* context, causal::axis a, std::uint64_t epoch) noexcept {
      (void)static_cast<Tracker*>(context)->advance(a, epoch);
    };
    if constexpr (requires(causal::axis a, const error& e) { tracker.fail_axis(a, e); }) {
      fail_observer_ = [](void* context, causal::axis a, const error& e) noexcept {
        (void)static_cast<Tracker*>(context)->fail_axis(a, e);
      };
    } else {
      fail_observer_ = nullptr;
    }
  }

  /// Reports that the queue failed for good with `e` (its backend's sticky
  /// failure): no epoch past completed_epoch() will ever complete. Forwards
  /// it to the attached completion tracker, whose waiters on this axis then
  /// fail with `e` instead of waiting forever. Any thread; a repeated call
  /// is harmless (the tracker keeps the first error).
  void fail_completion(const error& e) noexcept {
    if (fail_observer_ != nullptr) fail_observer_(retire_context_, axis_, e);
  }

  /// Switches wait elision on (the default) or off. Off, every wait of
  /// later submissions is issued to the device (or held, tier 3, where the
  /// backend cannot wait for an unannounced value), as a runtime without
  /// frontiers would: what the waits import still joins the knowledge and
  /// the signals still carry frontiers. For tests and measurements: a
  /// program's outcome must be the same either way (docs/queues.md,
  /// "Elision never changes an outcome"). Not concurrently with submit.
  void set_wait_elision(bool enabled) noexcept { elide_waits_ = enabled; }
  [[nodiscard]] bool wait_elision() const noexcept { return elide_waits_; }

  /// Adds `extra` to the knowledge (what the caller learnt some other way,
  /// e.g. a host wait that returned, or a pool's fence waits issued for the
  /// next operation). The own axis stays pinned. Until the next submission
  /// the knowledge is then ahead of the epoch (knowledge_producer()).
  void learn(const Frontier& extra) noexcept {
    if (dominates(knowledge_, extra)) return;  // nothing new (and untainted)
    (void)knowledge_.merge(extra, axis_);
    knowledge_ahead_ = true;
  }

  /// Submits `op` after `waits`, announcing `signals`; see the file
  /// comment for the tiers. Errors (nothing changes, nothing is issued):
  /// more than max_waits/max_signals (`invalid_argument`), a null
  /// semaphore (`invalid_argument`), a wait on a value of a semaphore the
  /// submission itself signals at or below it (`invalid_argument`: it
  /// would wait for its own completion), a wait on a semaphore failed
  /// below the value (its failure), a signal value not above the
  /// semaphore's payload or already
  /// submitted (`not_increasing` / `invalid_argument`), no room for a
  /// signal record on a bounded semaphore, or memory exhausted while a
  /// table grows (`resource_exhausted`). A backend failure part-way returns
  /// the backend's error; the operation is then not executed if issue_wait
  /// or execute failed, and its signals' semaphores are failed with the
  /// error so that no waiter is stranded.
  result<submission> submit(std::span<const wait_type> waits,
                            std::span<const signal_type> signals, const operation_type& op) noexcept {
    if (status s = validate(waits, signals); !s) return s.error_value();
    if (!deferred_.empty()) return defer(waits, signals, op);
    plan p;
    if (!waits.empty()) {
      if (status s = classify(waits, p); !s) return s.error_value();
      if (p.must_defer) return defer(waits, signals, op, &p);
    }
    // Every capacity check before any effect: a record on each signalled
    // semaphore, so nothing can fail for room once the operation is issued.
    if (!signals_have_room(signals)) {
      if (status s = reserve_signals(signals); !s) return s.error_value();
    }
    return execute_planned(waits, signals, op, p);
  }

  /// Convenience overload for initializer lists and arrays.
  result<submission> submit(std::initializer_list<wait_type> waits,
                            std::initializer_list<signal_type> signals,
                            const operation_type& op) noexcept {
    return submit(std::span<const wait_type>(waits.begin(), waits.size()),
                  std::span<const signal_type>(signals.begin(), signals.size()), op);
  }

  /// Retries deferred submissions in order; stops at the first that still
  /// lacks a submitted signal, or one a wait of which failed while another
  /// is neither met nor failed (it fails once they all are: see
  /// "Failure"). Returns how many it executed, or the first error: a
  /// semaphore with no room for its signal record (a bounded one, or
  /// memory ran out) leaves that submission held, to retry later; any
  /// other error drops it and fails its signals' semaphores, so nothing
  /// waits on it forever.
  result<std::size_t> pump() noexcept {
    std::size_t executed = 0;
    while (!deferred_.empty()) {
      deferred& d = deferred_.front();
      const std::span<const wait_type> waits(d.waits.data(), d.wait_count);
      const std::span<const signal_type> signals(d.signals.data(), d.signal_count);
      plan p;
      status classified = classify(waits, p);
      if (classified && p.must_defer) break;
      // A wait failed: the submission fails, but not before its other
      // waits are met or failed too (the file comment, "Failure").
      if (!classified && !waits_over(waits)) break;
      if (classified && !signals_have_room(signals)) {
        if (status room = reserve_signals(signals); !room) {
          if (room.code() == errc::resource_exhausted) return room.error_value();
          classified = room;
        }
      }
      result<submission> r = classified ? execute_planned(waits, signals, d.op, p, /*pumped=*/true)
                                        : result<submission>{classified.error_value()};
      if (!r) fail_signals(signals, r.error_value());
      deferred_.pop_front();
      if (!r) return r.error_value();
      ++executed;
    }
    return executed;
  }

 private:
  enum class tier : std::uint8_t { reached, same_queue, dominated, device, defer };

  using imported_type = typename semaphore_type::imported_type;

  /// What one wait imports, if anything: an optional that leaves its
  /// storage untouched when empty. (std::optional's default constructor
  /// compiles, with GCC 12, to zeroing its ~240-byte payload, so a plan of
  /// max_waits of them cost a 3.8 KiB memset on every submit, even one
  /// with no waits at all.)
  struct import_slot {
    import_slot() noexcept {}  // leaves `value` uninitialised: only `engaged` is set
    import_slot& operator=(const std::optional<imported_type>& o) noexcept {
      engaged = o.has_value();
      if (engaged) std::construct_at(&value, *o);
      return *this;
    }
    explicit operator bool() const noexcept { return engaged; }
    const imported_type& operator*() const noexcept { return value; }
    const imported_type* operator->() const noexcept { return &value; }

    bool engaged = false;
    union {
      imported_type value;
    };
  };
  static_assert(std::is_trivially_copyable_v<imported_type> &&
                    std::is_trivially_destructible_v<imported_type>,
                "basic_queue: import_slot needs a trivially copyable imported_frontier");

  struct plan {
    std::array<tier, max_waits> tiers;
    // What each wait imports, looked up once (frontier_at takes the
    // semaphore's lock and copies a record).
    std::array<import_slot, max_waits> imports;
    bool must_defer = false;
  };

  struct deferred {
    std::array<wait_type, max_waits> waits{};
    std::array<signal_type, max_signals> signals{};
    std::size_t wait_count = 0;
    std::size_t signal_count = 0;
    operation_type op{};
  };

  status validate(std::span<const wait_type> waits,
                  std::span<const signal_type> signals) const noexcept {
    if (waits.size() > max_waits) {
      return status{error{errc::invalid_argument, "submit: more waits than max_waits", waits.size()}};
    }
    if (signals.size() > max_signals) {
      return status{error{errc::invalid_argument, "submit: more signals than max_signals",
                          signals.size()}};
    }
    for (std::size_t i = 0; i < waits.size(); ++i) {
      if (waits[i].semaphore == nullptr) {
        return status{error{errc::invalid_argument, "submit: wait with a null semaphore", i}};
      }
      if (const auto f = detail::failure_below(*waits[i].semaphore, waits[i].value); f) return status{*f};
    }
    for (std::size_t i = 0; i < signals.size(); ++i) {
      const signal_type& s = signals[i];
      if (s.semaphore == nullptr) {
        return status{error{errc::invalid_argument, "submit: signal with a null semaphore", i}};
      }
      if (const auto f = s.semaphore->failure(); f) return status{*f};
      if constexpr (requires { s.semaphore->writes_reserved(); }) {
        if (s.semaphore->writes_reserved()) {
          return status{error{errc::failed_precondition,
                              "submit: a signal of a semaphore whose writes are reserved (a mirror such as an "
                              "MPI proxy; signal the semaphore it mirrors)",
                              i}};
        }
      }
      if (s.value <= s.semaphore->value()) {
        return status{error{errc::not_increasing, "submit: signal value not above the payload",
                            s.value}};
      }
      for (std::size_t k = 0; k < i; ++k) {
        if (signals[k].semaphore == s.semaphore) {
          return status{error{errc::invalid_argument,
                              "submit: two signals of one semaphore in one submission", i}};
        }
      }
      if (status own = detail::check_no_self_wait(waits, s); !own) return own;
      // The lookup takes the semaphore's lock and sees v either pending or
      // reached: an earlier signal of v that completed after the payload
      // was read above must not let a repeat through (it would execute,
      // and its refused signal would then fail the semaphore).
      const auto announced = s.semaphore->frontier_at(s.value);
      if (announced && announced->reached) {
        return status{error{errc::not_increasing, "submit: signal value not above the payload",
                            s.value}};
      }
      if (announced && announced->signal_value == s.value) {
        return status{error{errc::invalid_argument, "submit: signal value already submitted",
                            s.value}};
      }
    }
    return status{};
  }

  /// Picks a tier for every wait; imports nothing yet.
  status classify(std::span<const wait_type> waits, plan& p) const noexcept {
    for (std::size_t i = 0; i < waits.size(); ++i) {
      semaphore_type& sem = *waits[i].semaphore;
      const std::uint64_t v = waits[i].value;
      if (const auto f = detail::failure_below(sem, v); f) return status{*f};
      const auto& imported = p.imports[i] = sem.frontier_at(v);
      tier t;
      if (!elide_waits_) [[unlikely]] {
        // Elision switched off: issue it, or hold it where the device
        // cannot wait for a value nobody has announced.
        t = imported || Backend::waits_before_signal ? tier::device : tier::defer;
      } else if (!imported) {
        t = Backend::waits_before_signal ? tier::device : tier::defer;
      } else if (imported->value_tainted) {
        t = tier::device;  // external values are never elided
      } else if (imported->reached) {
        t = tier::reached;
      } else if (imported->producer.axis == axis_ && imported->has_producer()) {
        t = tier::same_queue;
      } else {
        t = covered_by(knowledge_, *imported) ? tier::dominated : tier::device;
      }
      p.tiers[i] = t;
      p.must_defer = p.must_defer || t == tier::defer;
    }
    if (!p.must_defer && elide_waits_) elide_transitively(waits, p);
    return status{};
  }

  /// True when every wait is met or its semaphore failed below the value.
  static bool waits_over(std::span<const wait_type> waits) noexcept {
    for (const wait_type& w : waits) {
      if (w.semaphore->value() < w.value && !w.semaphore->failed()) return false;
    }
    return true;
  }

  /// Whether what wait `i` (on value `v`) imports may join the knowledge
  /// once the wait is met. A reached value's frontier is history, and an
  /// elided wait's import is proven (its producer is ordered before this
  /// queue). A device wait on an unreached value only proves the frontier
  /// of the *first* signal to reach v, which the submitted record names
  /// only when it is for exactly v: a record for w > v can be overtaken by
  /// a signal of a value in [v, w) submitted later (e.g. by an operation
  /// that the recorded producer itself waits for), and then this queue
  /// runs before the recorded producer did. A record for exactly v can
  /// only be overtaken by a signal that makes its own fail the semaphore
  /// (not increasing). Knowing less is safe: such a wait imports nothing.
  static bool import_is_knowledge(const plan& p, std::size_t i, std::uint64_t v) noexcept {
    const auto& imported = p.imports[i];
    if (!imported) return false;
    if (p.tiers[i] != tier::device || imported->reached) return true;
    return imported->signal_value == v;
  }

  /// Whether `imported` (a submitted, unreached signal) is covered by
  /// `known` (tier 1's test): only through its producer entry. Without one
  /// (a host or outside announcer) nothing proves the signal will have
  /// happened: the announcer's frontier describes what it knew, not the
  /// signal, so dominating it is no evidence (docs/queues.md, tier 1).
  static bool covered_by(const Frontier& known,
                         const imported_type& imported) noexcept {
    return imported.has_producer() &&
           known.epoch_of(imported.producer.axis) >= imported.producer.epoch;
  }

  /// True when every signalled semaphore has room without a reservation
  /// (the common case: growing tables with a free record).
  static bool signals_have_room(std::span<const signal_type> signals) noexcept {
    for (const signal_type& sig : signals) {
      if (!sig.semaphore->reservation_unneeded()) return false;
    }
    return true;
  }

  /// Reserves a record on every signalled semaphore; on failure gives the
  /// ones taken back and returns why (nothing else has changed).
  CAUSAL_NOINLINE static status reserve_signals(std::span<const signal_type> signals) noexcept {
    for (std::size_t i = 0; i < signals.size(); ++i) {
      if (status s = signals[i].semaphore->reserve_signal(); !s) {
        unreserve_signals(signals.first(i));
        return s;
      }
    }
    return status{};
  }

  static void unreserve_signals(std::span<const signal_type> signals) noexcept {
    for (const signal_type& sig : signals) sig.semaphore->unreserve_signal();
  }

  /// Second pass over the device waits of one submission: a wait whose
  /// producer is covered by what the *other* remaining device waits import
  /// is implied by them (their signals' pasts include it) and is elided.
  /// Greedy removal keeps it sound: each elided wait is covered by waits
  /// still issued, or by waits elided through those, transitively.
  void elide_transitively(std::span<const wait_type> waits, plan& p) const noexcept {
    const std::size_t n = waits.size();
    std::size_t device = 0;
    for (std::size_t i = 0; i < n; ++i) device += p.tiers[i] == tier::device;
    if (device < 2) return;
    for (std::size_t i = 0; i < n; ++i) {
      if (p.tiers[i] != tier::device || !p.imports[i] || p.imports[i]->value_tainted) continue;
      Frontier known = knowledge_;
      for (std::size_t j = 0; j < n; ++j) {
        if (j != i && p.tiers[j] == tier::device && import_is_knowledge(p, j, waits[j].value)) {
          (void)known.merge(p.imports[j]->frontier);
        }
      }
      if (covered_by(known, *p.imports[i])) p.tiers[i] = tier::dominated;
    }
  }

  /// Issues a classified submission. Precondition: a record is reserved
  /// on every signalled semaphore (reserve_signals); each is consumed or
  /// given back whatever happens.
  result<submission> execute_planned(std::span<const wait_type> waits,
                                     std::span<const signal_type> signals,
                                     const operation_type& op, const plan& p,
                                     bool pumped = false) noexcept {
    queue_stats delta{};
    for (std::size_t i = 0; i < waits.size(); ++i) {
      if (p.tiers[i] != tier::device) continue;
      if (status s = backend_.issue_wait(*waits[i].semaphore, waits[i].value); !s) {
        unreserve_signals(signals);
        fail_signals(signals, s.error_value());
        return s.error_value();
      }
      ++delta.device_waits;
    }
    if constexpr (requires(semaphore_type& sem) { backend_.guard_elided_wait(sem, std::uint64_t{}); }) {
      // Implied while everything upstream succeeds; a backend that can
      // fail this operation without running it must not fail its signals
      // before the value is reached (the file comment, "Failure").
      for (std::size_t i = 0; i < waits.size(); ++i) {
        // Same-queue waits too: FIFO orders the *runs*, but a backend may
        // drop a failing operation while an earlier one of its queue is
        // still on the device, its signal still on its way.
        if (p.tiers[i] != tier::dominated && p.tiers[i] != tier::same_queue) continue;
        if (status s = backend_.guard_elided_wait(*waits[i].semaphore, waits[i].value); !s) {
          unreserve_signals(signals);
          fail_signals(signals, s.error_value());
          return s.error_value();
        }
      }
    }
    // Imports: everything the waits prove. A device wait on an unsubmitted
    // value, or on an unreached one whose submitted record is for a higher
    // value, imports nothing (see import_is_knowledge): knowing less is safe.
    for (std::size_t i = 0; i < waits.size(); ++i) {
      if (import_is_knowledge(p, i, waits[i].value)) {
        (void)knowledge_.merge(p.imports[i]->frontier, axis_);
      }
      switch (p.tiers[i]) {
        case tier::reached: ++delta.elided_reached; break;
        case tier::same_queue: ++delta.elided_same_queue; break;
        case tier::dominated: ++delta.elided_dominated; break;
        case tier::device:
        case tier::defer: break;
      }
    }
    const std::uint64_t e = epoch_ + 1;
    if (status s = backend_.execute(op, e); !s) {
      unreserve_signals(signals);
      fail_signals(signals, s.error_value());
      return s.error_value();
    }
    epoch_ = e;
    // Every signal but the last carries what is known before e (the
    // waits' imports and (axis, e - 1)), not (axis, e): the backend reaches
    // the signals one at a time, in this order, and (axis, e) claims the
    // whole operation -- every signal of it -- has completed. A consumer
    // that learnt it from the first signal would elide a wait on another
    // not reached yet (the file comment, "Signals of one operation").
    if (signals.size() > 1) before_ = knowledge_;
    (void)knowledge_.insert_or_raise(axis_, e);
    // The operation at e follows every wait issued so far, the pool's fence
    // waits included, and imported what its own waits proved: e covers
    // the whole knowledge again.
    knowledge_ahead_ = false;
    if (traced(trace_)) [[unlikely]] {
      trace_operation(waits, signals.size(), op, p, e, pumped);
    }
    const frontier_entry producer{axis_, e};
    status first_failure{};
    for (std::size_t k = 0; k < signals.size(); ++k) {
      const signal_type& sig = signals[k];
      const Frontier& carried = k + 1 == signals.size() ? knowledge_ : before_;
      // Reserved before anything was issued: only a concurrent signal or
      // failure of the semaphore (a race the caller lost) can refuse it.
      status s = sig.semaphore->submit_reserved_signal(sig.value, carried, producer,
                                                        backend_writes_later);
      if (s) s = backend_.issue_signal(*sig.semaphore, sig.value);
      if (!s) {
        // The operation is already on the device; a signal we cannot
        // announce or issue would strand its waiters, so fail it.
        (void)detail::fail_signal(*sig.semaphore, sig.value, s.error_value());
        if (first_failure) first_failure = s;
        continue;
      }
      ++delta.signals;
      if (traced(trace_)) [[unlikely]] {
        trace_signal(sig, e);
      }
    }
    if constexpr (requires { backend_.flush(); }) {
      if (status s = backend_.flush(); !s) {
        fail_signals(signals, s.error_value());
        if (first_failure) first_failure = s;
      }
    }
    ++delta.submissions;
    stats_.add(delta);
    if (!first_failure) return first_failure.error_value();
    return submission{e, false};
  }

  result<submission> defer(std::span<const wait_type> waits, std::span<const signal_type> signals,
                           const operation_type& op, const plan* p = nullptr) noexcept {
    if (deferred_.full()) {
      // Double the table (the queue is externally synchronised: no lock).
      const std::size_t capacity = deferred_.capacity() * 2;
      auto* storage = new (std::nothrow) deferred[capacity];
      if (storage == nullptr) {
        return error{errc::resource_exhausted,
                     "submit: out of memory for the table of held submissions", capacity};
      }
      delete[] deferred_.adopt(storage, capacity);
    }
    deferred& d = deferred_.push_back();
    for (std::size_t i = 0; i < waits.size(); ++i) d.waits[i] = waits[i];
    for (std::size_t i = 0; i < signals.size(); ++i) d.signals[i] = signals[i];
    d.wait_count = waits.size();
    d.signal_count = signals.size();
    d.op = op;
    stats_.host_deferrals.store(stats_.host_deferrals.load(std::memory_order_relaxed) + 1,
                                std::memory_order_relaxed);
    if (traced(trace_)) [[unlikely]] {
      trace_deferral(waits, op, p);
    }
    return submission{0, true};
  }

  //===-- trace emitters (out of line; run only with a sink) ----------------===//

  static std::uint64_t trace_tag(const operation_type& op) noexcept {
    if constexpr (std::is_convertible_v<const operation_type&, std::uint64_t>) {
      return static_cast<std::uint64_t>(op);
    } else {
      return 0;
    }
  }

  const char* trace_label(const operation_type& op) const noexcept {
    if constexpr (requires {
                    { backend_.trace_label(op) } -> std::convertible_to<const char*>;
                  }) {
      return backend_.trace_label(op);
    } else {
      return nullptr;
    }
  }

  CAUSAL_NOINLINE void trace_operation(std::span<const wait_type> waits, std::size_t signal_count,
                                       const operation_type& op, const plan& p, std::uint64_t e,
                                       bool pumped) const noexcept {
    for (std::size_t i = 0; i < waits.size(); ++i) {
      trace_queue_wait w;
      w.time_ns = trace_now_ns();
      w.queue = axis_;
      w.epoch = e;
      w.index = static_cast<std::uint32_t>(i);
      w.semaphore = waits[i].semaphore;
      w.value = waits[i].value;
      switch (p.tiers[i]) {
        case tier::reached: w.tier = trace_tier::reached; break;
        case tier::same_queue: w.tier = trace_tier::same_queue; break;
        case tier::dominated: w.tier = trace_tier::dominated; break;
        case tier::device:
        case tier::defer: w.tier = trace_tier::device; break;
      }
      if (p.imports[i]) {
        const imported_type& imported = *p.imports[i];
        w.producer = imported.producer;
        w.signal_value = imported.signal_value;
        w.reached = imported.reached;
        w.value_tainted = imported.value_tainted;
        w.imported = import_is_knowledge(p, i, waits[i].value);
        w.frontier = trace_frontier::of(imported.frontier);
      }
      trace_->on_queue_wait(w);
    }
    trace_queue_submit s;
    s.time_ns = trace_now_ns();
    s.queue = axis_;
    s.epoch = e;
    s.tag = trace_tag(op);
    s.label = trace_label(op);
    s.wait_count = static_cast<std::uint32_t>(waits.size());
    s.signal_count = static_cast<std::uint32_t>(signal_count);
    s.pumped = pumped;
    s.knowledge = trace_frontier::of(knowledge_);
    trace_->on_queue_submit(s);
  }

  CAUSAL_NOINLINE void trace_signal(const signal_type& sig, std::uint64_t e) const noexcept {
    trace_->on_queue_signal(trace_queue_signal{trace_now_ns(), axis_, e, sig.semaphore, sig.value});
  }

  CAUSAL_NOINLINE void trace_deferral(std::span<const wait_type> waits, const operation_type& op,
                                      const plan* p) const noexcept {
    trace_queue_deferral d;
    d.time_ns = trace_now_ns();
    d.queue = axis_;
    d.tag = trace_tag(op);
    d.label = trace_label(op);
    d.held = static_cast<std::uint32_t>(deferred_.size());
    if (p != nullptr) {
      for (std::size_t i = 0; i < waits.size(); ++i) {
        if (p->tiers[i] != tier::defer) continue;
        d.wait_index = static_cast<std::uint32_t>(i);
        d.semaphore = waits[i].semaphore;
        d.value = waits[i].value;
        break;
      }
    }
    trace_->on_queue_deferral(d);
  }

  CAUSAL_NOINLINE void trace_retire(std::uint64_t epoch) const noexcept {
    trace_->on_queue_retire(trace_queue_retire{trace_now_ns(), axis_, epoch});
  }

  static void fail_signals(std::span<const signal_type> signals, const error& e) noexcept {
    for (const signal_type& s : signals) s.semaphore->fail(e);
  }

  /// The counters behind stats(): written by the submitting thread only
  /// (a relaxed load and store, no read-modify-write), read from any.
  struct atomic_stats {
    std::atomic<std::uint64_t> submissions{0};
    std::atomic<std::uint64_t> elided_reached{0};
    std::atomic<std::uint64_t> elided_same_queue{0};
    std::atomic<std::uint64_t> elided_dominated{0};
    std::atomic<std::uint64_t> device_waits{0};
    std::atomic<std::uint64_t> host_deferrals{0};
    std::atomic<std::uint64_t> signals{0};

    static void bump(std::atomic<std::uint64_t>& counter, std::uint64_t n) noexcept {
      if (n != 0) {
        counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
      }
    }
    void add(const queue_stats& d) noexcept {
      bump(submissions, d.submissions);
      bump(elided_reached, d.elided_reached);
      bump(elided_same_queue, d.elided_same_queue);
      bump(elided_dominated, d.elided_dominated);
      bump(device_waits, d.device_waits);
      bump(signals, d.signals);
    }
    [[nodiscard]] queue_stats snapshot() const noexcept {
      constexpr auto relaxed = std::memory_order_relaxed;
      return queue_stats{submissions.load(relaxed),      elided_reached.load(relaxed),
                         elided_same_queue.load(relaxed), elided_dominated.load(relaxed),
                         device_waits.load(relaxed),      host_deferrals.load(relaxed),
                         signals.load(relaxed)};
    }
  };

  const causal::axis axis_;
  std::uint64_t epoch_ = 0;
  Frontier knowledge_{};
  /// False: every wait is issued to the device (set_wait_elision).
  bool elide_waits_ = true;
  /// Set by learn() when it added something; cleared by a submission.
  bool knowledge_ahead_ = false;
  atomic_stats stats_{};
  Backend backend_;
  void (*retire_observer_)(void*, causal::axis, std::uint64_t) noexcept = nullptr;
  void* retire_context_ = nullptr;
  void (*fail_observer_)(void*, causal::axis, const error&) noexcept = nullptr;
  trace_sink* trace_ = nullptr;
  detail::inline_ring<deferred, max_deferred> deferred_;
  /// What the signals before an operation's last carry: the knowledge
  /// before its own entry (execute_planned; a member, not a local, so a
  /// one-signal submission pays no ~200-byte stack frame for it; kept
  /// away from the fields every submit touches).
  Frontier before_{};
  alignas(CAUSAL_CACHELINE_SIZE) std::atomic<std::uint64_t> completed_{0};
};

//===-- recording_backend ---------------------------------------------------===//

/// An in-memory backend that records what a queue issued and simulates a
/// device that honours it: the reference backend for tests and benches.
///
/// `complete_next()` completes the oldest issued operation whose device
/// waits are satisfied (device order is FIFO): it reaches the semaphores
/// the operation signals (device_signal) and returns its epoch. Like a
/// device stream, it fails for good when an operation waits on a
/// semaphore that failed below the value: that operation and every later
/// one fail their signals' semaphores with the error instead of running
/// (each once its waits, guarded ones included, are over), and later
/// issues return it (see failure()). The log keeps the last `LogCapacity`
/// events; nothing allocates.
template <class Semaphore = semaphore, bool WaitsBeforeSignal = true,
          std::size_t LogCapacity = 256>
class recording_backend {
 public:
  using semaphore_type = Semaphore;
  using operation_type = std::uint64_t;  ///< a caller-chosen tag
  static constexpr bool waits_before_signal = WaitsBeforeSignal;

  /// `guard`: a wait elided at tier 1 (guard_elided_wait), recorded
  /// before the execute it belongs to like a wait, but not waited for
  /// unless the operation fails (see complete_next).
  enum class event_kind : std::uint8_t { wait, execute, signal, guard };
  struct event {
    event_kind kind = event_kind::execute;
    Semaphore* semaphore = nullptr;
    std::uint64_t value = 0;  ///< wait/signal value, or the operation's epoch
    operation_type tag = 0;   ///< execute only
  };

  status issue_wait(Semaphore& s, std::uint64_t v) noexcept {
    if (failed_) return status{failure_};
    if (fail_next_wait_) return status{fail_next_wait_error()};
    record(event{event_kind::wait, &s, v, 0});
    return status{};
  }
  status execute(const operation_type& op, std::uint64_t epoch) noexcept {
    if (failed_) return status{failure_};
    if (fail_next_execute_) {
      fail_next_execute_ = false;
      return status{error{errc::device_lost, "recording_backend: injected execute failure"}};
    }
    record(event{event_kind::execute, nullptr, epoch, op});
    return status{};
  }
  status issue_signal(Semaphore& s, std::uint64_t v) noexcept {
    if (failed_) return status{failure_};
    record(event{event_kind::signal, &s, v, 0});
    return status{};
  }
  status guard_elided_wait(Semaphore& s, std::uint64_t v) noexcept {
    if (failed_) return status{failure_};
    record(event{event_kind::guard, &s, v, 0});
    return status{};
  }

  /// The simulated device's sticky failure: the error of the first failed
  /// semaphore an operation waited on, once complete_next() met it.
  [[nodiscard]] std::optional<error> failure() const noexcept {
    if (failed_) return failure_;
    return std::nullopt;
  }

  /// Events issued so far (oldest first, the last LogCapacity of them).
  [[nodiscard]] std::size_t event_count() const noexcept { return total_ < LogCapacity ? total_ : LogCapacity; }
  [[nodiscard]] const event& event_at(std::size_t i) const noexcept {
    const std::size_t first = total_ < LogCapacity ? 0 : total_ - LogCapacity;
    return log_[(first + i) % LogCapacity];
  }
  [[nodiscard]] std::size_t total_events() const noexcept { return total_; }
  /// Events recorded of `kind`, over the whole run.
  [[nodiscard]] std::size_t count(event_kind kind) const noexcept {
    return counts_[static_cast<std::size_t>(kind)];
  }

  /// Makes the next issue_wait / execute fail (fault injection for tests).
  void fail_next_wait() noexcept { fail_next_wait_ = true; }
  void fail_next_execute() noexcept { fail_next_execute_ = true; }

  /// Completes the oldest pending operation if its device waits are met:
  /// reaches its signals and returns its epoch. Returns 0 when nothing can
  /// run, or when the operation fails: a wait's semaphore failed without
  /// reaching the value (a value reached before a failure stays reached),
  /// or the device failed earlier. The device then fails for good (see the
  /// class comment), and this and each later operation fail their signals
  /// in turn, each once every wait of it, issued or guarded (elided), is
  /// met or failed -- never before: an elided wait may stand for a healthy
  /// signal still on its way (queue.hpp, "Failure").
  std::uint64_t complete_next() noexcept {
    for (;;) {
      // Walk from the completion cursor: the waits before the next execute,
      // then its signals.
      std::size_t i = cursor_;
      const std::size_t first = total_ < LogCapacity ? 0 : total_ - LogCapacity;
      if (i < first) return 0;  // the log overflowed past unfinished work
      bool fails = failed_;
      bool guards_open = false;
      for (; i < total_; ++i) {
        const event& e = log_[i % LogCapacity];
        if (e.kind == event_kind::execute) break;
        if (e.kind == event_kind::signal) continue;  // only before the first execute: none
        if (e.semaphore->value() >= e.value) continue;
        if (const auto f = detail::failure_below(*e.semaphore, e.value); f) {
          if (e.kind == event_kind::wait && !fails) {
            fails = true;
            if (!failed_) failure_ = *f;
          }
          continue;
        }
        if (e.kind == event_kind::wait) return 0;  // not met yet
        guards_open = true;                        // implied, unless the operation fails
      }
      if (i == total_) return 0;
      if (fails && guards_open) return 0;  // fails once its elided waits are over too
      const std::uint64_t epoch = log_[i % LogCapacity].value;
      ++i;
      failed_ = fails;
      while (i < total_ && log_[i % LogCapacity].kind == event_kind::signal) {
        const event& e = log_[i % LogCapacity];
        if (fails) {
          (void)detail::fail_signal(*e.semaphore, e.value, failure_);
        } else {
          (void)e.semaphore->device_signal(e.value);
        }
        ++i;
      }
      cursor_ = i;
      if (!fails) return epoch;
      // Failed: go on failing the later operations whose waits are over.
    }
  }

 private:

  error fail_next_wait_error() noexcept {
    fail_next_wait_ = false;
    return error{errc::device_lost, "recording_backend: injected wait failure"};
  }
  void record(const event& e) noexcept {
    log_[total_ % LogCapacity] = e;
    ++total_;
    ++counts_[static_cast<std::size_t>(e.kind)];
  }

  std::array<event, LogCapacity> log_{};
  std::size_t total_ = 0;
  std::size_t cursor_ = 0;
  std::array<std::size_t, 4> counts_{};
  bool fail_next_wait_ = false;
  bool fail_next_execute_ = false;
  bool failed_ = false;
  error failure_{};
};

/// A queue over the recording backend with the default frontier.
template <bool WaitsBeforeSignal = true>
using recording_queue = basic_queue<frontier, recording_backend<semaphore, WaitsBeforeSignal>>;

CAUSAL_END_NAMESPACE
