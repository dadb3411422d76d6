// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// executor: N worker threads that drain processes cooperatively: a lock-free
// immediate list for single-drainer work, an array of compute slots for
// processes drained by several workers at once, and workers that spin, then
// park on a futex word, woken directly by whoever makes work runnable.
//
// Model (docs/executor.md). There is no coordinator: the
// thread whose wake() drives a process's suspend count to 0 places it.
//
//   wake budget 1   -> the placing thread's activation ring, else the
//                      immediate list. A ring (<causal/detail/
//                      producer_rings.hpp>) belongs to one thread, which
//                      appends with a plain store, so an activation costs
//                      one read-modify-write (the process's state word);
//                      Traits::producer_rings threads at a time get one.
//                      The immediate list is an intrusive MPSC list that
//                      any thread pushes to (one CAS): threads without a
//                      ring, a full ring, and every placement made while a
//                      worker spins use it, because a spinning worker
//                      takes a hand-off from the list's head, a line it
//                      wrote itself, one ownership round trip sooner than
//                      from a ring slot it only reads (signal -> drain
//                      ~70 ns sooner one way on the 2-vCPU Xeon VM).
//                      Workers take from both, alternating which first,
//                      through tokens that are try-acquired, never waited
//                      for: a worker that finds one taken moves on. The
//                      list's holder moves the pushed stack into a FIFO;
//                      either way it takes a small batch
//                      (Traits::immediate_batch, at most its share) for
//                      itself.
//   wake budget > 1 -> compute slot: a fixed array of Traits::compute_slots
//                      words (process pointer | flags) claimed by CAS; when
//                      every slot is taken the process goes to an overflow
//                      list (never dropped) and a worker moves it into the
//                      first slot that frees up, draining it alone until then.
//
// Worker loop, each iteration: its own next process (a dependent its last
// completion made runnable, or the rest of its batch), then the immediate
// list and the activation rings, then the overflow list, then one pick of
// the scan policy over the
// compute slots (after a long streak of list work the slots are scanned
// first, so a busy immediate list cannot starve them).
//
// Hand-off. A worker that completes a single-drainer process keeps one
// dependent it made runnable for itself and runs it next, with no list
// push and no wake (at most Traits::local_handoffs in a row while other
// work is queued); any others
// are pushed to the immediate list in one CAS. Within a batch, the wakes a
// worker sends to one dependent are coalesced into one atomic subtraction
// (a join waited on by the batch's processes), applied when the batch ends;
// the release of a process whose wake is still being coalesced waits for
// it, so "released" keeps implying "dependents woken". A completion with
// one dependent and nothing left to coalesce with (a chain hop) wakes it
// at once, skipping that bookkeeping. A chain therefore costs two
// read-modify-writes per hop (claim completion, wake the next), a
// fork-join about two per leaf. process::set_auto_rearm makes a graph
// reusable without any per-run set-up.
//
// Split fan-out. A single-drainer process that completes without error,
// callback or scope and has at least 2 * Traits::immediate_batch
// dependents does not wake them all itself: its worker publishes the
// dependents array as chunks of immediate_batch entries on its fan-out
// record, and each worker that runs out of local work claims a chunk (one
// CAS), wakes its entries and runs the ones it made runnable as its private
// batch. The completer claims from the front, helpers from the back, so
// the same leaves tend to land on the same worker round after round and
// their cache lines stay there: the leaves of a fork-join are woken, run
// and completed by one core instead of being activated by the root's core
// and run by another. The process is released (release callback) by the
// worker that finishes the last chunk, after every dependent was woken.
// A worker whose record is still in use wakes the dependents itself.
//
// A compute process is drained by every worker that picks
// it; each pins the slot (a per-slot counter on its own cache line) around
// its drain() call. The first drainer to see `completed` claims completion
// (one fetch_or), marks the slot retiring so no one else enters, runs the
// completion callback and wakes the dependents; the last drainer to leave
// releases the slot and runs the release callback. A compute process that
// returns keep_active = false with a pending suspension goes to sleep: its
// slot is flagged and skipped by scans until a wake() clears the flag.
//
//   worker:  draining --drain returns--> looks for work --found--> draining
//                                          | nothing for spin_limit rounds
//                                          v
//                                        parked (futex) --woken--> wake tree
//
// Worker states. Spinning: re-scanning with a pause per round, for
// `spin_budget` rounds (the options override Traits::spin_budget; 0 parks at
// once), multiplied by the aggregate wake budget of the occupied slots
// (capped at 8): lots of compute demand keeps workers around longer, a
// quiet executor parks quickly. Parked: waiting on the worker's own
// park word (a futex; a mutex and condition variable under TSan).
//
// No lost wake-up. The handshake between "found no work" and "work
// scheduled" is a Dekker pair over seq_cst operations:
//
//   worker about to park                 thread that schedules work
//   seen = park_word.load()              publish: list push CAS / slot CAS
//   parked_mask.fetch_or(my bit)           / ring slot store (see below)
//   spinning.fetch_sub(1)                m = parked_mask.load()
//   [membarrier, if rings are in use]    if m == 0: done (nobody parked)
//   re-check every list, ring and slot   if spinning >= wanted: done
//   found work: un-announce, go on       claim a bit: parked_mask.fetch_and
//   else park_word.wait(seen)            park_word.fetch_add(1); notify_one
//
// In the single total order of seq_cst operations either the worker's
// re-check comes after the publish (and sees the work) or the publish's
// mask load comes after the worker's fetch_or (and wakes it, or sees a
// spinner that has not yet re-checked and will see the work). The waker
// bumps the word after claiming the bit, so a wake that lands between the
// worker's re-check and its wait() makes the wait return at once. A ring
// publishes with a plain store, which the CPU may let pass the publisher's
// later load of the mask; where Linux's membarrier is available the
// parking worker issues one before its re-check, which puts every running
// thread of the process through a full barrier, so the argument above
// holds with the barrier paid on the rare side (elsewhere, and under TSan,
// the ring's store is an exchange: producer_rings.hpp).
// test/unit/executor_stress_test.cpp exercises it round after round.
//
// Wake tree. Work that wants n workers adds n - 1 to `desired_wake` and
// wakes one parked worker; every worker that wakes from its park word
// claims up to Traits::wake_fanout of `desired_wake` and wakes that many
// more before it starts scanning, so 0 -> N workers takes about log N
// rounds of futex wakes instead of N serial ones.
//
// Teardown. The destructor cancels what is pending: it stops the workers
// after every process that is runnable, running, queued or asleep in a
// compute slot has completed with errc::cancelled (unless it failed
// earlier) -- each at most after its current drain() call -- with its
// dependents woken and cancelled in turn, then joins the threads and
// finishes leftovers on the calling thread. Processes that are suspended
// (waiting on a wake that has not come) are not known to the executor:
// cancel them first (scope::cancel_all) or make sure nothing wakes them
// once the executor is gone. A CPU queue and a stream pool stay bound to
// their executor for their whole life (bind_long_lived): destroying the
// executor before one of them is refused -- the destructor prints them to
// stderr and aborts, in every build mode (docs/lifetimes.md). With worker_count 0 the executor runs only when
// a thread drives it (run_until_idle, run_until); a bound queue's
// wait_idle and destructor drive it themselves (executor_base::help).
//
// Introspection. snapshot(), worker_state(), slot_state(), ring_state()
// and describe() report the workers (each publishes working / spinning /
// parking / parked when it changes state), the lists, the activation rings
// and the compute slots from relaxed loads of atomics alone: a hang dump
// (test/support/watchdog.hpp) or a debugger can read them at any moment
// without disturbing the protocol above.
//
// Thread safety: submit, wake (process::wake), cancel and the observers may
//                be called from any thread, concurrently. run_until_idle
//                and run_until (a thread that helps) may be called by one
//                thread at a time. The destructor must not race with any
//                other member.
// Memory order:  a wake that makes a process runnable happens-before its
//                drain (list push / slot CAS release, worker acquire); see
//                process.hpp for completion ordering. The parking handshake
//                is seq_cst, as above.
// Blocking/allocation: the constructor allocates the workers and the
//                activation rings and starts the threads; nothing else
//                allocates (a thread's first placement here binds it to a
//                ring: a shared-pointer copy, and on its first binding
//                glibc's thread-exit registration). wake, schedule, scan,
//                drain loop and completion never allocate and never take a
//                lock (a scope's membership spin lock is touched at submit
//                and release of its members only). Workers park; wake()
//                makes at most a few futex wakes. The destructor blocks
//                until the workers have exited. The introspection members
//                never block or allocate (describe() does what its stream
//                does).
// Size:          about (3 * slots + 8 * (workers + 1) + 13) cache lines,
//                most of it behind pointers (a worker record is its park
//                word, its fan-out record and a private batch of
//                Traits::immediate_batch pointers), plus the activation
//                rings (producer_rings * (2 lines + 8 * producer_ring_slots
//                bytes): 8 of 1024, about 65 KiB); the object itself holds
//                the lists and the slot words (64 slots: about 2.4 KiB).
// Configuration: Traits (see default_executor_traits): scan_policy,
//                compute_slots, wake_fanout, spin_budget, immediate_batch,
//                local_handoffs, producer_rings, producer_ring_slots,
//                atomic. executor_options: worker_count,
//                spin_budget, pin_workers, cpus.
// See also:      <causal/process.hpp>, <causal/scope.hpp>,
//                <causal/scan/scan_policy.hpp>, docs/executor.md.
#pragma once

#include <causal/config.hpp>
#include <causal/detail/producer_rings.hpp>
#include <causal/detail/spin_lock.hpp>
#include <causal/ext/park_word.hpp>
#include <causal/process.hpp>
#include <causal/result.hpp>
#include <causal/scan/round_robin.hpp>
#include <causal/scan/scan_policy.hpp>

#include <algorithm>
#include <atomic>
#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

CAUSAL_BEGIN_NAMESPACE

//===-- traits --------------------------------------------------------------===//

/// The executor's compile-time tuning. Derive from it and override members.
struct default_executor_traits {
  /// How workers pick a compute slot (see <causal/scan/>).
  using scan_policy = scan::round_robin;

  /// Number of compute slots: how many multi-worker processes can be
  /// scanned at once (more go to the overflow list until a slot frees up).
  /// Power of two. A miss scans N/8 cache lines of slot words (8 for 64).
  static constexpr std::size_t compute_slots = 64;

  /// How many further workers each woken worker wakes (wake tree). 2 gives
  /// ~log2(N) rounds; larger fans out faster but serialises more futex
  /// calls on each waker.
  static constexpr std::uint32_t wake_fanout = 2;

  /// Rounds a worker re-scans before parking (scaled by the aggregate wake
  /// budget). Each round is one pause plus a look at every list and slot:
  /// about 50 ns on the 2-vCPU Xeon VM this was tuned on, so 1024 rounds
  /// spin for about 50 us, longer than the ~35 us a cross-vCPU futex wake
  /// costs there: bursts of work find a worker still hot. 0 parks at once.
  static constexpr std::uint32_t spin_budget = 1024;

  /// Most immediate processes a worker takes from the shared list at once.
  /// It never takes more than its share (list length / (workers + 1)), so
  /// batches are large only when the list is long and shrink as it drains.
  /// Larger batches cut traffic on the list's cache lines and let a worker
  /// coalesce its wakes of a shared dependent (a join) over the batch; the
  /// price is up to one batch of drains of latency for a dependent made
  /// ready mid-batch (no more than it would wait behind the list anyway).
  /// 1 disables batching and coalescing. Fork-join of 1000 empty leaves, 2
  /// workers, 2-vCPU Xeon VM (A/B interleaved, machine under load): 8 gave
  /// ~40 ns/leaf, 32 ~34 ns/leaf.
  static constexpr std::uint32_t immediate_batch = 32;

  /// Most dependents in a row a worker runs directly after their
  /// predecessor completed on it, without going through the shared list,
  /// while other immediate work is waiting. Bounds how long a chain can
  /// keep that work waiting on one worker; with nothing queued the chain
  /// stays on its worker (moving it costs ~10 % per hop on a long chain).
  static constexpr std::uint32_t local_handoffs = 256;

  /// Activation rings (<causal/detail/producer_rings.hpp>): how many threads
  /// at once make processes runnable with one read-modify-write each (the
  /// process's state word) by appending them to a ring of their own. Other
  /// threads, and a full ring, use the shared immediate list (two RMWs:
  /// one activation measured 17.1 -> 9.9 ns on the 2-vCPU Xeon VM). At
  /// most 64; 0 disables the rings.
  static constexpr std::uint32_t producer_rings = 8;

  /// Slots of each activation ring (a power of two): how many activations a
  /// thread can have waiting in its ring before more go to the shared list.
  /// 8 bytes each.
  static constexpr std::uint32_t producer_ring_slots = 1024;

  /// The atomic type used for the executor's own shared state; tests
  /// substitute one that yields at random (STYLE b.8 chaos atomics).
  template <class T>
  using atomic = std::atomic<T>;
};

/// Checks that a traits type has the members basic_executor reads, with
/// the right types; their values are checked by static_asserts in the class.
template <class T>
concept executor_traits = requires {
  typename T::scan_policy;
  { T::compute_slots } -> std::convertible_to<std::size_t>;
  { T::wake_fanout } -> std::convertible_to<std::uint32_t>;
  { T::spin_budget } -> std::convertible_to<std::uint32_t>;
  { T::immediate_batch } -> std::convertible_to<std::uint32_t>;
  { T::local_handoffs } -> std::convertible_to<std::uint32_t>;
  { T::producer_rings } -> std::convertible_to<std::uint32_t>;
  { T::producer_ring_slots } -> std::convertible_to<std::uint32_t>;
  typename T::template atomic<std::uint64_t>;
} && scan_policy<typename T::scan_policy>;

/// Run-time settings of an executor.
struct executor_options {
  /// worker_count value meaning "one per hardware thread".
  static constexpr std::uint32_t hardware_workers = 0xffff'ffffu;
  /// spin_budget value meaning "Traits::spin_budget".
  static constexpr std::uint32_t traits_spin_budget = 0xffff'ffffu;

  /// Worker threads; 0 runs no threads (the caller drains with
  /// run_until_idle()).
  std::uint32_t worker_count = hardware_workers;
  /// Spin rounds before parking; 0 parks as soon as nothing is found.
  std::uint32_t spin_budget = traits_spin_budget;
  /// Pins worker i to CPU cpus[i % cpus.size()], or to CPU i modulo the
  /// hardware threads when `cpus` is empty (Linux; ignored elsewhere).
  bool pin_workers = false;
  std::vector<int> cpus{};
};

namespace detail {

//===-- process_list ----------------------------------------------------===//

/// The immediate and overflow lists: an intrusive Treiber stack that any
/// thread pushes to (lock-free CAS), and a consumer side guarded by a token
/// that workers try-acquire and never wait for. Only the token holder pops,
/// which rules out the ABA problem of a multi-consumer Treiber pop; it
/// moves the whole pushed stack into a FIFO (one exchange, then a reversal
/// it pays once per item) and takes a batch from the FIFO's front.
template <template <class> class Atomic>
class process_list {
 public:

  /// Pushes the chain first -> ... -> last (already linked through the
  /// processes' next pointers) in one CAS. Order inside the chain is kept
  /// if `first` is the most recently made ready (see gather()).
  void push_chain(process& first, process& last) noexcept {
    process* head = head_.load(std::memory_order_relaxed);
    do {
      process_access::next(last).store(head, std::memory_order_relaxed);
      // seq_cst: the publish half of the parking handshake (executor.hpp)
      // and a release that the consumer's exchange acquires.
    } while (!head_.compare_exchange_weak(head, &first, std::memory_order_seq_cst,
                                          std::memory_order_relaxed));
  }
  void push(process& p) noexcept { push_chain(p, p); }

  /// Returns true when the list may hold work (cheap, relaxed).
  [[nodiscard]] bool maybe_nonempty() const noexcept {
    return head_.load(std::memory_order_relaxed) != nullptr ||
           fifo_count_.load(std::memory_order_relaxed) != 0;
  }
  /// Returns true when the list holds work, as the re-check half of the
  /// parking handshake (seq_cst).
  [[nodiscard]] bool nonempty_seq_cst() const noexcept {
    return head_.load(std::memory_order_seq_cst) != nullptr ||
           fifo_count_.load(std::memory_order_seq_cst) != 0;
  }

  /// Diagnostics (executor::describe): the newest pushed process not yet
  /// moved to the FIFO (never dereferenced here), the FIFO's length, and
  /// whether a consumer holds the token. Relaxed loads; any thread.
  [[nodiscard]] const process* pushed_head() const noexcept {
    return head_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] std::uint32_t fifo_size() const noexcept {
    return fifo_count_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] bool token_held() const noexcept { return token_.load(std::memory_order_relaxed); }

  /// Takes up to `max` processes (at most a `1/share`-th of the list, at
  /// least one) into `out`; returns how many, and via `status` whether the
  /// list was empty or its token busy; `left` is what stays in the FIFO.
  std::uint32_t take(process** out, std::uint32_t max, std::uint32_t share, take_status& status,
                     std::uint32_t& left) noexcept {
    left = 0;
    process* const seen = head_.load(std::memory_order_relaxed);
    if (seen == nullptr && fifo_count_.load(std::memory_order_relaxed) == 0) {
      status = take_status::empty;
      return 0;
    }
    if (seen != nullptr) {
      // Start fetching the newest pushed process's activation line (link
      // and state, just written by its pusher on another core) now, so
      // that its transfer overlaps the exchange below instead of following
      // it. Address arithmetic only: `seen` may be taken and gone by the
      // time the prefetch lands, which a prefetch tolerates.
      CAUSAL_PREFETCH_WRITE(reinterpret_cast<const char*>(seen) + CAUSAL_CACHELINE_SIZE);
    }
    // acquire: pairs with the release store when the previous holder let
    // go, so fifo_ is what it left.
    if (token_.load(std::memory_order_relaxed) || token_.exchange(true, std::memory_order_acquire)) {
      status = take_status::busy;
      return 0;
    }
    std::uint32_t n = fifo_count_.load(std::memory_order_relaxed);
    if (n == 0) {
      // acquire: pairs with the release (seq_cst) CAS of every push.
      process* stack = head_.exchange(nullptr, std::memory_order_acquire);
      process* fifo = nullptr;
      while (stack != nullptr) {
        process* next = process_access::next(*stack).load(std::memory_order_relaxed);
        process_access::next(*stack).store(fifo, std::memory_order_relaxed);
        fifo = stack;
        stack = next;
        ++n;
      }
      fifo_ = fifo;
    }
    if (n == 0) {
      token_.store(false, std::memory_order_release);
      status = take_status::empty;
      return 0;
    }
    std::uint32_t k = n / (share == 0 ? 1 : share);
    k = std::clamp<std::uint32_t>(k, 1, max);
    for (std::uint32_t i = 0; i < k; ++i) {
      out[i] = fifo_;
      fifo_ = process_access::next(*fifo_).load(std::memory_order_relaxed);
    }
    left = n - k;
    // seq_cst: parking workers read it in their re-check.
    fifo_count_.store(left, std::memory_order_seq_cst);
    // release: hands fifo_ to the next holder.
    token_.store(false, std::memory_order_release);
    status = take_status::taken;
    return k;
  }

 private:
  alignas(CAUSAL_CACHELINE_SIZE) Atomic<process*> head_{nullptr};
  alignas(CAUSAL_CACHELINE_SIZE) Atomic<bool> token_{false};
  Atomic<std::uint32_t> fifo_count_{0};
  process* fifo_ = nullptr;  // guarded by token_
};

inline process* slot_process(std::uint64_t word) noexcept {
  return reinterpret_cast<process*>(static_cast<std::uintptr_t>(word & ~slot_bits::flag_mask));
}
inline std::uint64_t slot_word_of(const process& p) noexcept {
  return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(&p));
}

}  // namespace detail

//===-- introspection -------------------------------------------------------===//

/// What a worker thread last said it was doing (executor::worker_state).
enum class worker_activity : std::uint8_t {
  starting,  ///< its thread has not reached the worker loop yet
  working,   ///< looking for work or draining
  spinning,  ///< found nothing; re-scanning before it parks
  parking,   ///< announced in the parked mask, re-checking for work
  parked,    ///< asleep on its park word (or about to be)
  stopped,   ///< left the worker loop (teardown)
};

/// Returns the name of `a` ("parked", ...).
[[nodiscard]] constexpr const char* to_string(worker_activity a) noexcept {
  switch (a) {
    case worker_activity::starting: return "starting";
    case worker_activity::working: return "working";
    case worker_activity::spinning: return "spinning";
    case worker_activity::parking: return "parking";
    case worker_activity::parked: return "parked";
    case worker_activity::stopped: return "stopped";
  }
  return "?";
}

/// One worker, as executor::worker_state() saw it.
struct worker_snapshot {
  worker_activity activity = worker_activity::starting;
  bool in_parked_mask = false;  ///< announced as parked (a waker may pick it)
  std::uint32_t park_word = 0;  ///< bumped by each wake aimed at it
  bool fanout_open = false;     ///< its fan-out record has chunks to claim
};

/// One compute slot, as executor::slot_state() saw it.
struct slot_snapshot {
  const process* occupant = nullptr;  ///< null: free (never dereferenced here)
  bool claiming = false;              ///< being filled in by a claimer
  bool sleeping = false;              ///< asleep until a wake resumes it
  bool retiring = false;              ///< completed, waiting for drainers to leave
  std::uint32_t budget = 0;
  std::uint8_t priority = 0;
  std::uint32_t drainers = 0;         ///< workers pinned inside it
};

/// One activation ring, as executor::ring_state() saw it.
struct ring_snapshot {
  bool owned = false;              ///< a producer thread owns it
  bool busy = false;               ///< a worker is taking from it
  std::uint64_t head = 0;          ///< entries taken from it so far
  std::uint32_t entries = 0;       ///< entries waiting, from the head on
  const process* first = nullptr;  ///< the oldest waiting entry
};

/// The executor's shared state, as executor::snapshot() saw it.
struct executor_snapshot {
  std::uint32_t worker_count = 0;
  std::uint32_t parked = 0;         ///< workers announced in the parked mask
  std::uint32_t spinning = 0;       ///< workers counted as spinning
  std::uint32_t occupied_slots = 0;
  std::uint32_t slot_count = 0;
  std::int64_t aggregate_budget = 0;
  std::uint32_t spin_budget = 0;
  std::uint32_t desired_wake = 0;   ///< wakes the wake tree still owes
  std::uint32_t open_fanouts = 0;
  bool stopping = false;
  bool cancelling = false;
  bool helper_busy = false;         ///< a thread is in run_until_idle/run_until
  const process* immediate_pushed = nullptr;  ///< newest push not yet taken
  std::uint32_t immediate_fifo = 0;           ///< taken from the stack, not yet run
  bool immediate_token = false;               ///< a worker holds the list
  const process* overflow_pushed = nullptr;
  std::uint32_t overflow_fifo = 0;
  bool overflow_token = false;
  std::uint32_t rings = 0;          ///< Traits::producer_rings
  std::uint32_t rings_claimed = 0;
  std::uint32_t rings_high_water = 0;
  bool rings_symmetric = false;     ///< publishers pay the barrier (no membarrier)
};

//===-- basic_executor ------------------------------------------------------===//

/// A pool of workers that drain processes; see the file comment.
///
/// Traits (executor_traits): scan_policy, compute_slots, wake_fanout,
/// spin_budget, immediate_batch, local_handoffs, atomic; see
/// default_executor_traits for their meaning and defaults.
template <executor_traits Traits = default_executor_traits>
class basic_executor : private detail::executor_base {
  static_assert(Traits::compute_slots >= 1 &&
                    (Traits::compute_slots & (Traits::compute_slots - 1)) == 0,
                "Traits::compute_slots must be a power of two");
  static_assert(Traits::compute_slots <= 4096, "Traits::compute_slots must be at most 4096");
  static_assert(Traits::wake_fanout >= 1, "Traits::wake_fanout must be at least 1");
  static_assert(Traits::immediate_batch >= 1 && Traits::immediate_batch <= 256,
                "Traits::immediate_batch must be between 1 and 256");
  static_assert(Traits::local_handoffs <= 1'000'000,
                "Traits::local_handoffs must be at most 1000000");
  static_assert(Traits::producer_rings <= 64, "Traits::producer_rings must be at most 64");
  static_assert(Traits::producer_rings == 0 ||
                    (Traits::producer_ring_slots >= 2 && Traits::producer_ring_slots <= (1u << 20) &&
                     (Traits::producer_ring_slots & (Traits::producer_ring_slots - 1)) == 0),
                "Traits::producer_ring_slots must be a power of two between 2 and 2^20");

  template <class T>
  using atomic = typename Traits::template atomic<T>;
  using scan_type = typename Traits::scan_policy;
  using list_type = detail::process_list<Traits::template atomic>;
  using ring_set_type = detail::ring_set<Traits::template atomic>;
  static constexpr bool has_rings = Traits::producer_rings != 0;
  static constexpr std::size_t slot_count = Traits::compute_slots;
  static constexpr std::size_t slot_mask = slot_count - 1;
  /// Listed drains in a row after which a worker scans the slots first.
  static constexpr std::uint32_t listed_streak_limit = 4 * Traits::immediate_batch;
  /// Split fan-out (file comment): dependents per chunk, the fewest
  /// dependents worth splitting (0: never, when batches are too small to
  /// pay for the claims), and the packing of fanout_record::claims.
  static constexpr std::uint32_t fanout_chunk = Traits::immediate_batch;
  static constexpr std::uint32_t fanout_min_dependents =
      Traits::immediate_batch >= 8 ? 2 * Traits::immediate_batch : 0;
  static constexpr unsigned fanout_index_bits = 20;
  static constexpr std::uint64_t fanout_index_mask = (std::uint64_t{1} << fanout_index_bits) - 1;
  static constexpr std::uint64_t fanout_max_chunks = fanout_index_mask;

 public:
  using traits_type = Traits;
  using slot_view = ext::basic_slot_view<slot_count, Traits::template atomic>;

  /// Starts the workers. Throws std::system_error if a thread cannot start.
  explicit basic_executor(executor_options options = {}) {
    executor_base::activate = &activate_thunk;
    executor_base::activate_batch = &activate_batch_thunk;
    executor_base::resume = &resume_thunk;
    executor_base::budget_changed = &budget_thunk;
    executor_base::help = &help_thunk;
    if constexpr (has_rings) {
      auto set = std::make_shared<ring_set_type>(Traits::producer_rings, Traits::producer_ring_slots);
      rings_ = set.get();
      ring_claims_ = std::move(set);
    }
    std::uint32_t n = options.worker_count;
    if (n == executor_options::hardware_workers) {
      n = std::thread::hardware_concurrency();
      if (n == 0) n = 1;
    }
    worker_count_ = n;
    executor_base::workers = n;
    spin_budget_.store(options.spin_budget == executor_options::traits_spin_budget
                           ? Traits::spin_budget
                           : options.spin_budget,
                       std::memory_order_relaxed);
    parked_words_ = (n + 63) / 64;
    parked_ = std::make_unique<parked_word[]>(parked_words_ == 0 ? 1 : parked_words_);
    pins_ = std::make_unique<slot_pin[]>(slot_count);
    // One extra worker record for the helping thread (run_until_idle and
    // the destructor's cleanup).
    workers_ = std::make_unique<worker[]>(n + 1);
    for (std::uint32_t i = 0; i <= n; ++i) {
      worker& w = workers_[i];
      w.index = i;
      w.ctx = worker_context(i, n + 1);
      w.cursor.worker = i;
      w.cursor.workers = n + 1;
      w.cursor.position = static_cast<std::uint32_t>((slot_count * i) / (n + 1));
    }
    for (std::uint32_t i = 0; i < n; ++i) {
      int cpu = -1;
      if (options.pin_workers) {
        if (!options.cpus.empty()) {
          cpu = options.cpus[i % options.cpus.size()];
        } else {
          const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
          cpu = static_cast<int>(i % hw);
        }
      }
      workers_[i].thread = std::thread([this, i, cpu] {
        pin_to(cpu);
        run_worker(workers_[i]);
      });
    }
  }

  basic_executor(const basic_executor&) = delete;
  basic_executor& operator=(const basic_executor&) = delete;

  /// Cancels what is pending, stops and joins the workers (file comment).
  /// A queue still bound to the executor is a lifetime error the executor
  /// cannot mend (the queue would wake a process on a dead executor at its
  /// next submit): it prints every bound queue and what it has in flight
  /// to stderr, then aborts, in every build mode (docs/lifetimes.md).
  ~basic_executor() {
    refuse_if_bound();
    cancelling_.store(true, std::memory_order_seq_cst);
    stopping_.store(true, std::memory_order_seq_cst);
    wake_sleeping_slots();
    for (std::uint32_t i = 0; i < worker_count_; ++i) {
      workers_[i].park.fetch_add(1, std::memory_order_release);
      workers_[i].park.notify_all();
    }
    for (std::uint32_t i = 0; i < worker_count_; ++i) {
      if (workers_[i].thread.joinable()) workers_[i].thread.join();
    }
    // Whatever a late completion or wake left behind, finished here.
    worker& h = workers_[worker_count_];
    for (;;) {
      const step_result r = step(h);
      if (r == step_result::progress) continue;
      if (!has_local(h) && !has_work_seq_cst()) break;
      std::this_thread::yield();
    }
  }

  /// Binds `p` to this executor, enters it in its scope (if any), and drops
  /// its submit hold: it runs as soon as its suspend count reaches 0. A
  /// process that has completed already (cancelled before it was
  /// submitted) is left alone; rearm() runs a completed process again.
  ///
  /// Preconditions: `p` has a drain function and was not submitted to
  /// another executor.
  void submit(process& p) noexcept {
    CAUSAL_ASSERT(p.drain() != nullptr, "executor::submit: process has no drain function");
    CAUSAL_ASSERT(detail::process_access::executor(p) == nullptr ||
                      detail::process_access::executor(p) == base(),
                  "executor::submit: process belongs to another executor");
    if (p.is_complete()) return;
    detail::process_access::bind(p, base());
    if (detail::scope_core* sc = detail::process_access::scope(p); sc != nullptr) {
      if (sc->join(p)) {
        p.cancel();  // the scope was cancelled: resolves inline (still held)
        return;
      }
      // A cancel() that resolved `p` while we joined did not find it on
      // the member list; whichever of us takes it off leaves the count.
      if (p.is_complete()) {
        if (sc->unlink(p)) sc->leave();
        return;
      }
    }
    p.wake();
  }

  /// Enters `link` on the list of objects bound to this executor for
  /// their whole life (a stream pool; CPU queues enter themselves): the
  /// destructor refuses, loudly, while one is still listed. Not a hot
  /// path (a spin lock); leave with unbind_long_lived.
  void bind_long_lived(detail::bound_link& link) noexcept { executor_base::bind_long_lived(link); }
  void unbind_long_lived(detail::bound_link& link) noexcept { executor_base::unbind_long_lived(link); }

  /// Drains ready work on the calling thread (as worker index
  /// worker_count()) until a step finds nothing runnable or only processes
  /// that report no progress. With worker_count() == 0 this is how the
  /// executor runs at all. One thread at a time.
  void run_until_idle() noexcept {
    [[maybe_unused]] const bool busy = helper_busy_.exchange(true, std::memory_order_acquire);
    CAUSAL_ASSERT(!busy, "executor::run_until_idle: called by two threads at once");
    drain_helper();
    helper_busy_.store(false, std::memory_order_release);
  }

  /// Drains ready work on the calling thread (as worker index
  /// worker_count()) until `done()` returns true; between steps that find
  /// nothing it spins with a pause and asks again, never parking. The
  /// thread that waits for a result this way helps produce it, as a TBB
  /// wait does: an executor with one worker thread plus a helping caller
  /// keeps two threads on the work. Before returning it finishes the
  /// processes it had taken for itself, so none is stranded. One thread at
  /// a time (shares the helper index with run_until_idle).
  template <class Predicate>
  void run_until(Predicate&& done) noexcept(noexcept(done())) {
    [[maybe_unused]] const bool busy = helper_busy_.exchange(true, std::memory_order_acquire);
    CAUSAL_ASSERT(!busy, "executor::run_until: called by two threads at once");
    worker& h = workers_[worker_count_];
    while (!done()) {
      if (step(h) == step_result::progress || has_local(h)) continue;
      detail::cpu_relax();
    }
    while (has_local(h)) (void)step(h);
    helper_busy_.store(false, std::memory_order_release);
  }

  //===-- observers --===//

  [[nodiscard]] std::uint32_t worker_count() const noexcept { return worker_count_; }
  /// Returns how many workers are parked (announced in the parked mask).
  [[nodiscard]] std::uint32_t parked_workers() const noexcept {
    std::uint32_t n = 0;
    for (std::uint32_t i = 0; i < parked_words_; ++i) {
      n += static_cast<std::uint32_t>(std::popcount(parked_[i].bits.load(std::memory_order_relaxed)));
    }
    return n;
  }
  [[nodiscard]] std::uint32_t spinning_workers() const noexcept {
    return spinning_.load(std::memory_order_relaxed);
  }
  /// Returns how many activation rings a thread owns now (Traits::
  /// producer_rings at most): threads that placed processes here and have
  /// neither exited nor moved on to other executors since.
  [[nodiscard]] std::uint32_t claimed_rings() const noexcept {
    if constexpr (has_rings) {
      return ring_claims_->owned();
    } else {
      return 0;
    }
  }
  /// Returns how many compute slots hold a process (in any state).
  [[nodiscard]] std::uint32_t occupied_slots() const noexcept {
    return occupied_.load(std::memory_order_relaxed);
  }
  /// Returns the sum of the wake budgets of the occupied compute slots.
  [[nodiscard]] std::int64_t aggregate_budget() const noexcept {
    return aggregate_budget_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] std::uint32_t spin_budget() const noexcept {
    return spin_budget_.load(std::memory_order_relaxed);
  }
  /// Reports drains, completions and wakes of this executor's processes to
  /// `sink` from now on (null: stop); see <causal/trace_sink.hpp>. May be
  /// called while workers run; a worker that read the old sink may still
  /// report to it, so keep a sink alive until the executor is idle after
  /// uninstalling it (or until the executor is destroyed).
  void set_trace_sink(trace_sink* sink) noexcept { trace.store(sink, std::memory_order_relaxed); }

  /// Changes the spin rounds before parking, for workers' next idle spell.
  void set_spin_budget(std::uint32_t rounds) noexcept {
    spin_budget_.store(rounds, std::memory_order_relaxed);
  }
  /// Returns a read-only view of the compute slots (what scans see).
  [[nodiscard]] slot_view slots() const noexcept { return slot_view(words_, meta_); }

  //===-- introspection (diagnostics) --===//
  //
  // What a hang dump or a debugger helper needs: best-effort views built
  // from relaxed loads of atomics only, so they may be called from any
  // thread at any time while the executor is alive, never block, never
  // allocate and change nothing. A running executor gives a blend of
  // moments; a stalled one holds still. Never schedule on them.

  /// Returns the executor-wide counters and the lists' heads.
  [[nodiscard]] executor_snapshot snapshot() const noexcept {
    executor_snapshot v;
    v.worker_count = worker_count_;
    v.parked = parked_workers();
    v.spinning = spinning_workers();
    v.occupied_slots = occupied_slots();
    v.slot_count = static_cast<std::uint32_t>(slot_count);
    v.aggregate_budget = aggregate_budget();
    v.spin_budget = spin_budget();
    v.desired_wake = desired_wake_.load(std::memory_order_relaxed);
    v.open_fanouts = open_fanouts_.load(std::memory_order_relaxed);
    v.stopping = stopping_.load(std::memory_order_relaxed);
    v.cancelling = cancelling_.load(std::memory_order_relaxed);
    v.helper_busy = helper_busy_.load(std::memory_order_relaxed);
    v.immediate_pushed = immediate_.pushed_head();
    v.immediate_fifo = immediate_.fifo_size();
    v.immediate_token = immediate_.token_held();
    v.overflow_pushed = overflow_.pushed_head();
    v.overflow_fifo = overflow_.fifo_size();
    v.overflow_token = overflow_.token_held();
    if constexpr (has_rings) {
      v.rings = Traits::producer_rings;
      v.rings_claimed = ring_claims_->owned();
      v.rings_high_water = ring_claims_->high_water.load(std::memory_order_relaxed);
      v.rings_symmetric = rings_->symmetric();
    }
    return v;
  }

  /// Returns what worker `i` (below worker_count()) last published about
  /// itself, with its park word and parked-mask bit.
  [[nodiscard]] worker_snapshot worker_state(std::uint32_t i) const noexcept {
    CAUSAL_ASSERT(i < worker_count_, "executor::worker_state: no such worker");
    const worker& w = workers_[i];
    worker_snapshot v;
    v.activity = static_cast<worker_activity>(w.activity.load(std::memory_order_relaxed));
    v.in_parked_mask =
        (parked_[i / 64].bits.load(std::memory_order_relaxed) >> (i % 64) & 1u) != 0;
    v.park_word = w.park.load(std::memory_order_relaxed);
    v.fanout_open = fanout_claimable(w.fanout.claims.load(std::memory_order_relaxed));
    return v;
  }

  /// Returns compute slot `i` (below Traits::compute_slots).
  [[nodiscard]] slot_snapshot slot_state(std::size_t i) const noexcept {
    CAUSAL_ASSERT(i < slot_count, "executor::slot_state: no such slot");
    namespace sb = detail::slot_bits;
    const std::uint64_t word = words_[i].load(std::memory_order_relaxed);
    const std::uint32_t meta = meta_[i].load(std::memory_order_relaxed);
    slot_snapshot v;
    v.occupant = detail::slot_process(word);
    v.claiming = (word & sb::flag_mask) == sb::claiming;
    v.sleeping = (word & sb::flag_mask) == sb::sleeping;
    v.retiring = (word & sb::flag_mask) == sb::retiring;
    v.budget = meta & 0xff'ffffu;
    v.priority = static_cast<std::uint8_t>(meta >> 24);
    v.drainers = pins_[i].drainers.load(std::memory_order_relaxed);
    return v;
  }

  /// Returns activation ring `i` (below Traits::producer_rings).
  [[nodiscard]] ring_snapshot ring_state(std::uint32_t i) const noexcept {
    ring_snapshot v;
    if constexpr (has_rings) {
      CAUSAL_ASSERT(i < Traits::producer_rings, "executor::ring_state: no such ring");
      const detail::ring_view r = rings_->inspect(i);
      v.owned = r.owned;
      v.busy = r.busy;
      v.head = r.head;
      v.entries = r.entries;
      v.first = r.first;
    } else {
      (void)i;
    }
    return v;
  }

  /// Writes the state above as text, one fact per line: the counters, each
  /// worker, the lists, the rings in use and the occupied slots, e.g.
  ///
  ///   executor: 2 workers (2 parked, 0 spinning), ...
  ///     worker 0: parked (in the parked mask), park word 41
  ///     slot 3: process 0x7f..., sleeping, budget 3, priority 0, 0 drainers
  ///
  /// With `follow_processes` it also reads the processes it finds (slot
  /// occupants, ring entries, pushed list entries, up to 16 per list) and
  /// writes their process::snapshot(); only do that when they are known to
  /// be alive (a stalled test owns them), since the executor may release
  /// and the owner free a process while this runs. `Stream`: anything with
  /// operator<< for strings, integers and pointers (std::ostream); a
  /// template, so that <ostream> stays out of this header.
  /// Blocking/allocation: whatever `out` does; the executor side never.
  template <class Stream>
  void describe(Stream& out, bool follow_processes = false) const {
    const executor_snapshot e = snapshot();
    out << "executor " << static_cast<const void*>(this) << ": " << e.worker_count
        << " workers (" << e.parked << " parked, " << e.spinning << " spinning), spin budget "
        << e.spin_budget << ", " << e.occupied_slots << " of " << e.slot_count
        << " slots occupied (aggregate budget " << e.aggregate_budget << "), desired wakes "
        << e.desired_wake << ", open fan-outs " << e.open_fanouts
        << (e.stopping ? ", stopping" : "") << (e.cancelling ? ", cancelling" : "")
        << (e.helper_busy ? ", a helping thread is draining" : "") << "\n";
    for (std::uint32_t i = 0; i < worker_count_; ++i) {
      const worker_snapshot w = worker_state(i);
      out << "  worker " << i << ": " << to_string(w.activity)
          << (w.in_parked_mask ? " (in the parked mask)" : "") << ", park word " << w.park_word
          << (w.fanout_open ? ", fan-out chunks open" : "") << "\n";
    }
    describe_list(out, "immediate list", immediate_, follow_processes);
    describe_list(out, "overflow list", overflow_, follow_processes);
    if constexpr (has_rings) {
      out << "  activation rings: " << e.rings << " (" << e.rings_claimed << " owned, "
          << e.rings_high_water << " ever claimed, "
          << (e.rings_symmetric ? "publishers fence" : "parkers issue membarrier") << ")\n";
      for (std::uint32_t i = 0; i < e.rings_high_water; ++i) {
        const ring_snapshot r = ring_state(i);
        out << "    ring " << i << ": " << (r.owned ? "owned" : "free") << (r.busy ? ", busy" : "")
            << ", head " << r.head << ", " << r.entries << " waiting";
        if (r.first != nullptr) {
          out << ", oldest " << static_cast<const void*>(r.first);
          if (follow_processes) describe_process(out, *r.first);
        }
        out << "\n";
      }
    }
    for (std::size_t i = 0; i < slot_count; ++i) {
      const slot_snapshot sl = slot_state(i);
      if (sl.occupant == nullptr && sl.drainers == 0) continue;
      out << "  slot " << i << ": process " << static_cast<const void*>(sl.occupant)
          << (sl.claiming ? ", being claimed" : "") << (sl.sleeping ? ", sleeping" : "")
          << (sl.retiring ? ", retiring" : "") << ", budget " << sl.budget << ", priority "
          << static_cast<unsigned>(sl.priority) << ", " << sl.drainers << " drainers";
      if (follow_processes && sl.occupant != nullptr && !sl.claiming) {
        describe_process(out, *sl.occupant);
      }
      out << "\n";
    }
  }

 private:
  enum class step_result : std::uint8_t { progress, no_progress, nothing, busy };

  /// describe(): one list, and with `follow` its pushed stack (at most 16
  /// entries, through the processes' atomic links).
  template <class Stream>
  static void describe_list(Stream& out, const char* name, const list_type& list, bool follow) {
    const process* head = list.pushed_head();
    out << "  " << name << ": ";
    if (head == nullptr && list.fifo_size() == 0) {
      out << "empty" << (list.token_held() ? ", token held" : "") << "\n";
      return;
    }
    out << list.fifo_size() << " taken into its FIFO, newest pushed "
        << static_cast<const void*>(head) << (list.token_held() ? ", token held" : "") << "\n";
    if (!follow) return;
    int shown = 0;
    for (const process* p = head; p != nullptr && shown < 16; ++shown) {
      out << "    pushed " << static_cast<const void*>(p);
      describe_process(out, *p);
      out << "\n";
      p = detail::process_access::next(*p).load(std::memory_order_relaxed);
    }
  }

  template <class Stream>
  static void describe_process(Stream& out, const process& p) {
    out << " [";
    p.snapshot().describe(out);
    out << ", user data " << p.user_data() << "]";
  }

  struct alignas(CAUSAL_CACHELINE_SIZE) slot_pin {
    atomic<std::uint32_t> drainers{0};
  };
  struct alignas(CAUSAL_CACHELINE_SIZE) parked_word {
    atomic<std::uint64_t> bits{0};
  };
  struct slot_info {
    atomic<process::release_fn> release{nullptr};
    atomic<detail::scope_core*> scope{nullptr};
  };

  /// A completed process's dependents, offered in chunks of fanout_chunk
  /// entries (see "Split fan-out" in the file comment). `claims` packs
  /// generation (24 bits) | front (20) | back (20), in chunks: the owner
  /// takes chunk `front` and increments it, helpers take `back - 1`; a
  /// claim is one CAS, and a reader that saw an older generation loses
  /// its CAS, so fields read between its load and its CAS are only used
  /// when they belong to the generation it claimed from. `unfinished`
  /// counts chunks not yet woken; whoever takes it to 0 releases the
  /// process. The owner reuses the record only when it is 0.
  struct alignas(CAUSAL_CACHELINE_SIZE) fanout_record {
    atomic<std::uint64_t> claims{0};
    atomic<std::uint32_t> unfinished{0};
    atomic<std::uint32_t> count{0};
    atomic<process* const*> dependents{nullptr};
    atomic<process*> source{nullptr};
    atomic<process::release_fn> release{nullptr};
  };

  /// One worker thread's state. The park word and the fan-out record are
  /// what others write; the rest is private to the worker (its own cache
  /// lines).
  struct alignas(CAUSAL_CACHELINE_SIZE) worker {
    ext::park_word park{0};
    fanout_record fanout{};
    alignas(CAUSAL_CACHELINE_SIZE) process* local_next = nullptr;
    std::uint32_t handoffs = 0;
    std::uint32_t listed_streak = 0;
    std::uint32_t batch_head = 0;
    std::uint32_t batch_size = 0;
    std::uint32_t pending_count = 0;
    process* pending = nullptr;  // a dependent whose wakes are being coalesced
    process* deferred_release = nullptr;  // completed, released after the flush
    process* gather_head = nullptr;
    process* gather_tail = nullptr;
    std::uint32_t gather_count = 0;
    std::uint32_t index = 0;
    bool spinning = false;
    bool rings_first = false;  // which of list and rings take_listed tries first
    /// worker_activity, for worker_state(): stored (relaxed) by the worker
    /// when it changes state -- never per step -- and read only by
    /// diagnostics. A std::atomic, not Traits::atomic: it takes no part in
    /// the protocol, so a chaos atomic has nothing to shake here.
    std::atomic<std::uint8_t> activity{static_cast<std::uint8_t>(worker_activity::starting)};
    ext::scan_cursor cursor{};
    worker_context ctx{};
    process* batch[Traits::immediate_batch] = {};
    std::thread thread;
  };

  /// The waker used while a worker completes a process: coalesces wakes of
  /// the same dependent and keeps one newly runnable dependent for itself.
  struct worker_waker {
    basic_executor& ex;
    worker& w;
    CAUSAL_ALWAYS_INLINE void wake(process& d) noexcept { ex.defer_wake(w, d); }
  };

  detail::executor_base* base() noexcept { return this; }
  static basic_executor& self(detail::executor_base& b) noexcept {
    return static_cast<basic_executor&>(b);
  }

  static void pin_to([[maybe_unused]] int cpu) noexcept {
#if defined(__linux__)
    if (cpu < 0) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(static_cast<unsigned>(cpu), &set);
    (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
#endif
  }

  //===-- placing runnable processes --===//

  static void activate_thunk(detail::executor_base& b, process& p) noexcept { self(b).place(p); }

  static void activate_batch_thunk(detail::executor_base& b, process* const* activated,
                                   std::uint32_t count) noexcept {
    self(b).place_batch(activated, count);
  }

  static void resume_thunk(detail::executor_base& b, process& p, std::uint32_t slot) noexcept {
    self(b).resume_slot(p, slot);
  }

  /// executor_base::help: run_until_idle, unless another thread holds the
  /// helper index (then that thread is draining, and we return).
  static void help_thunk(detail::executor_base& b) noexcept {
    basic_executor& ex = self(b);
    if (ex.helper_busy_.exchange(true, std::memory_order_acquire)) return;
    ex.drain_helper();
    ex.helper_busy_.store(false, std::memory_order_release);
  }

  void drain_helper() noexcept {
    worker& h = workers_[worker_count_];
    for (;;) {
      const step_result r = step(h);
      if (r == step_result::progress) continue;
      if (has_local(h)) continue;
      if (r == step_result::busy) {
        detail::cpu_relax();
        continue;
      }
      break;
    }
  }

  /// The destructor's lifetime check (see ~basic_executor).
  void refuse_if_bound() noexcept {
    std::size_t bound = 0;
    {
      detail::spin_guard guard(bound_lock);
      for (const detail::bound_link* l = bound_sentinel.next; l != &bound_sentinel; l = l->next) {
        ++bound;
      }
      if (bound == 0) return;
      std::fprintf(stderr,
                   "causal: executor destroyed while %zu queue(s) or pool(s) are still bound to "
                   "it; destroy (or close()) every queue and stream pool before its executor "
                   "(docs/lifetimes.md). Still bound:\n",
                   bound);
      for (const detail::bound_link* l = bound_sentinel.next; l != &bound_sentinel; l = l->next) {
        char line[160] = "a bound process";
        if (l->describe != nullptr) l->describe(*l, line, sizeof line);
        std::fprintf(stderr, "  - %s\n", line);
      }
    }
    std::fflush(stderr);
    std::abort();
  }

  static void budget_thunk(detail::executor_base& b, process& p, std::uint32_t slot,
                           std::uint32_t budget) noexcept {
    self(b).change_budget(p, slot, budget);
  }

  /// Places a process a wake just made ACTIVE, from any thread: in the
  /// calling thread's activation ring when it has one with room and no
  /// worker spins (a spinning worker takes it sooner from the list: file
  /// comment), else on the immediate list.
  void place(process& p) noexcept {
    if (p.wake_budget() <= 1) {
      detail::process_access::placement(p).store(detail::placed_immediate,
                                                 std::memory_order_relaxed);
      if (spinning_.load(std::memory_order_relaxed) != 0 || !push_one_to_ring(p)) {
        immediate_.push(p);
      }
      request_workers(1);
      return;
    }
    place_compute(p);
  }

  /// Appends `p` to the calling thread's activation ring; false: no ring,
  /// or it is full.
  CAUSAL_ALWAYS_INLINE bool push_one_to_ring(process& p) noexcept {
    if constexpr (has_rings) {
      const std::uint32_t r = detail::producer_ring_of(ring_claims_);
      return r != detail::no_ring && rings_->push_one(r, p);
    } else {
      return false;
    }
  }

  /// Appends `count` list-bound processes to the calling thread's
  /// activation ring, oldest first; returns how many fitted (0: no ring).
  CAUSAL_ALWAYS_INLINE std::uint32_t push_to_ring(process* const* items,
                                                  std::uint32_t count) noexcept {
    if constexpr (has_rings) {
      const std::uint32_t r = detail::producer_ring_of(ring_claims_);
      if (r == detail::no_ring) return 0;
      return rings_->push(r, items, count);
    } else {
      return 0;
    }
  }

  /// Places processes one wake_all() made ACTIVE, from any thread: the
  /// list-placed ones go, in activation order, to the calling thread's
  /// activation ring with one publication, and what does not fit to the
  /// immediate list as one chain (one push); then one worker request.
  void place_batch(process* const* activated, std::uint32_t count) noexcept {
    CAUSAL_ASSERT(count <= process::wake_all_batch, "executor: activation batch too large");
    process* listed[process::wake_all_batch];
    std::uint32_t listed_count = 0;
    for (std::uint32_t i = 0; i < count; ++i) {
      process& p = *activated[i];
      if (p.wake_budget() > 1) {
        place_compute(p);
        continue;
      }
      detail::process_access::placement(p).store(detail::placed_immediate,
                                                 std::memory_order_relaxed);
      listed[listed_count++] = &p;
    }
    if (listed_count == 0) return;
    const std::uint32_t in_ring = push_to_ring(listed, listed_count);
    if (in_ring < listed_count) {
      // Newest first, so that the consumer's reversal restores the order.
      process* newest = nullptr;
      for (std::uint32_t i = in_ring; i < listed_count; ++i) {
        detail::process_access::next(*listed[i]).store(newest, std::memory_order_relaxed);
        newest = listed[i];
      }
      immediate_.push_chain(*newest, *listed[in_ring]);
    }
    request_workers(listed_count);
  }

  /// Places a dependent made runnable by a completion on worker `w`.
  CAUSAL_ALWAYS_INLINE void place_from_worker(worker& w, process& p) noexcept {
    if (p.wake_budget() <= 1) {
      detail::process_access::placement(p).store(detail::placed_immediate,
                                                 std::memory_order_relaxed);
      // Past local_handoffs in a row the chain yields to queued work, but
      // only if there is any: moving it through the shared list with
      // nothing else waiting would just hand it to another core.
      if (w.local_next == nullptr) {
        if (w.handoffs >= Traits::local_handoffs) [[unlikely]] {
          if (immediate_.maybe_nonempty() || rings_maybe_nonempty()) {
            gather(w, p);
            return;
          }
          w.handoffs = 0;  // nothing waiting: look again after another run
        }
        w.local_next = &p;  // runs next on this worker: no push, no wake
        return;
      }
      gather(w, p);
      return;
    }
    place_compute(p);
  }

  /// Queues `p` on the worker's private chain, published by publish_gathered.
  static void gather(worker& w, process& p) noexcept {
    // Newest first, so that the consumer's reversal restores ready order.
    detail::process_access::next(p).store(w.gather_head, std::memory_order_relaxed);
    w.gather_head = &p;
    if (w.gather_tail == nullptr) w.gather_tail = &p;
    ++w.gather_count;
  }

  CAUSAL_ALWAYS_INLINE void publish_gathered(worker& w) noexcept {
    if (w.gather_count != 0) [[unlikely]] publish_gathered_slow(w);
  }

  CAUSAL_NOINLINE void publish_gathered_slow(worker& w) noexcept {
    const std::uint32_t n = w.gather_count;
    immediate_.push_chain(*w.gather_head, *w.gather_tail);
    w.gather_head = w.gather_tail = nullptr;
    w.gather_count = 0;
    request_workers(n);
  }

  void place_compute(process& p) noexcept {
    const std::uint32_t budget = p.wake_budget();
    if (claim_slot(p) != ext::no_slot) {
      request_workers(budget);
      return;
    }
    detail::process_access::placement(p).store(detail::placed_overflow, std::memory_order_relaxed);
    overflow_.push(p);
    request_workers(1);
  }

  /// Claims a free compute slot for `p`; returns its index or no_slot.
  std::size_t claim_slot(process& p) noexcept {
    namespace sb = detail::slot_bits;
    CAUSAL_ASSERT(p.auto_rearm() == 0,
                  "executor: a re-arming process must have wake budget 1 (single drainer)");
    const std::uint64_t word = detail::slot_word_of(p);
    const std::uint32_t budget = p.wake_budget();
    const std::size_t start = claim_hint_.load(std::memory_order_relaxed);
    for (std::size_t k = 0; k < slot_count; ++k) {
      const std::size_t i = (start + k) & slot_mask;
      std::uint64_t expected = 0;
      if (words_[i].load(std::memory_order_relaxed) != 0) continue;
      // Reserve first (claiming = not runnable, not retiring), fill in the
      // metadata, then publish: a losing claimer never writes the slot.
      if (!words_[i].compare_exchange_strong(expected, word | sb::claiming,
                                             std::memory_order_acquire,
                                             std::memory_order_relaxed)) {
        continue;
      }
      meta_[i].store(ext::make_slot_meta(budget, p.priority()), std::memory_order_relaxed);
      info_[i].release.store(p.release(), std::memory_order_relaxed);
      info_[i].scope.store(detail::process_access::scope(p), std::memory_order_relaxed);
      // release: pairs with the acquire load in process::wake()/cancel().
      detail::process_access::placement(p).store(static_cast<std::uint32_t>(i),
                                                  std::memory_order_release);
      occupied_.fetch_add(1, std::memory_order_relaxed);
      aggregate_budget_.fetch_add(budget, std::memory_order_relaxed);
      claim_hint_.store(static_cast<std::uint32_t>((i + 1) & slot_mask), std::memory_order_relaxed);
      // seq_cst: publish half of the parking handshake; release for the
      // metadata and the process's state, acquired by the drainer's load.
      words_[i].store(word, std::memory_order_seq_cst);
      return i;
    }
    return ext::no_slot;
  }

  void resume_slot(process& p, std::uint32_t slot) noexcept {
    // `p` may be completing on another worker by now: compare its address
    // only, never dereference it.
    std::uint64_t expected = detail::slot_word_of(p) | detail::slot_bits::sleeping;
    // seq_cst: the wake half of the sleep handshake (see try_sleep).
    if (words_[slot].compare_exchange_strong(expected, detail::slot_word_of(p),
                                             std::memory_order_seq_cst,
                                             std::memory_order_relaxed)) {
      request_workers(meta_[slot].load(std::memory_order_relaxed) & 0xff'ffffu);
    }
  }

  void change_budget(process& p, std::uint32_t slot, std::uint32_t budget) noexcept {
    if (detail::slot_process(words_[slot].load(std::memory_order_relaxed)) != &p) return;
    std::uint32_t meta = meta_[slot].load(std::memory_order_relaxed);
    std::uint32_t next = 0;
    do {
      next = ext::make_slot_meta(budget, static_cast<std::uint8_t>(meta >> 24));
    } while (!meta_[slot].compare_exchange_weak(meta, next, std::memory_order_relaxed));
    const std::int64_t delta =
        static_cast<std::int64_t>(next & 0xff'ffffu) - static_cast<std::int64_t>(meta & 0xff'ffffu);
    aggregate_budget_.fetch_add(delta, std::memory_order_relaxed);
    if (delta > 0) request_workers(static_cast<std::uint32_t>(delta));
  }

  //===-- waking workers --===//

  [[nodiscard]] bool any_parked() const noexcept {
    for (std::uint32_t i = 0; i < parked_words_; ++i) {
      // seq_cst: the publisher's half of the parking handshake.
      if (parked_[i].bits.load(std::memory_order_seq_cst) != 0) return true;
    }
    return false;
  }

  /// Makes sure about `n` workers will look at newly published work.
  CAUSAL_ALWAYS_INLINE void request_workers(std::uint32_t n) noexcept {
    if (!any_parked()) return;
    request_parked_workers(n);
  }
  CAUSAL_NOINLINE void request_parked_workers(std::uint32_t n) noexcept {
    const std::uint32_t spinning = spinning_.load(std::memory_order_seq_cst);
    if (spinning >= n) return;  // spinners re-check after announcing a park
    const std::uint32_t want = std::min(n - spinning, worker_count_);
    if (want > 1) desired_wake_.fetch_add(want - 1, std::memory_order_relaxed);
    wake_one();
  }

  /// Wakes one parked worker; returns false if none was parked.
  bool wake_one() noexcept {
    for (std::uint32_t k = 0; k < parked_words_; ++k) {
      std::uint64_t m = parked_[k].bits.load(std::memory_order_relaxed);
      while (m != 0) {
        const std::uint64_t bit = m & (~m + 1);
        const std::uint64_t before = parked_[k].bits.fetch_and(~bit, std::memory_order_seq_cst);
        if (before & bit) {
          worker& w = workers_[k * 64 + static_cast<std::uint32_t>(std::countr_zero(bit))];
          // release: the worker's wait() acquires the bump.
          w.park.fetch_add(1, std::memory_order_release);
          w.park.notify_one();
          return true;
        }
        m = before & ~bit;
      }
    }
    return false;
  }

  /// A worker just woken from its park word wakes its share of the tree.
  void wake_tree() noexcept {
    std::uint32_t d = desired_wake_.load(std::memory_order_relaxed);
    std::uint32_t take = 0;
    do {
      if (d == 0) return;
      take = std::min(d, Traits::wake_fanout);
    } while (!desired_wake_.compare_exchange_weak(d, d - take, std::memory_order_relaxed));
    for (std::uint32_t i = 0; i < take; ++i) {
      if (!wake_one()) {
        desired_wake_.store(0, std::memory_order_relaxed);
        return;
      }
    }
  }

  /// The re-check half of the parking handshake: is there anything at all?
  [[nodiscard]] bool has_work_seq_cst() const noexcept {
    if (immediate_.nonempty_seq_cst() || overflow_.nonempty_seq_cst()) return true;
    if constexpr (has_rings) {
      if (rings_->nonempty_seq_cst()) return true;
    }
    for (std::size_t i = 0; i < slot_count; ++i) {
      const std::uint64_t w = words_[i].load(std::memory_order_seq_cst);
      if (w != 0 && (w & detail::slot_bits::flag_mask) == 0) return true;
    }
    return false;
  }

  static bool has_local(const worker& w) noexcept {
    return w.local_next != nullptr || w.batch_head < w.batch_size || w.pending != nullptr ||
           w.gather_count != 0 || w.deferred_release != nullptr ||
           fanout_claimable(w.fanout.claims.load(std::memory_order_relaxed));
  }

  std::uint32_t spin_limit() const noexcept {
    const std::uint32_t base_rounds = spin_budget_.load(std::memory_order_relaxed);
    if (base_rounds == 0) return 0;
    const std::int64_t aggregate = aggregate_budget_.load(std::memory_order_relaxed);
    const std::uint32_t scale = aggregate <= 1 ? 1u : static_cast<std::uint32_t>(std::min<std::int64_t>(aggregate, 8));
    return base_rounds * scale;
  }

  /// Publishes what `w` is doing for worker_state(); relaxed: diagnostics
  /// only, it orders nothing.
  static void note_activity(worker& w, worker_activity a) noexcept {
    w.activity.store(static_cast<std::uint8_t>(a), std::memory_order_relaxed);
  }

  void park(worker& w) noexcept {
    note_activity(w, worker_activity::parking);
    const std::uint32_t k = w.index / 64;
    const std::uint64_t bit = std::uint64_t{1} << (w.index % 64);
    const std::uint32_t seen = w.park.load(std::memory_order_acquire);
    parked_[k].bits.fetch_or(bit, std::memory_order_seq_cst);
    if (w.spinning) {
      w.spinning = false;
      spinning_.fetch_sub(1, std::memory_order_seq_cst);
    }
    if constexpr (has_rings) {
      // Rings published with a plain store (asymmetric mode) are seen by the
      // re-check below only after every publisher passed a full barrier
      // (producer_rings.hpp); no ring ever claimed, no barrier needed: a
      // claim is a seq_cst RMW before the first publication.
      if (!rings_->symmetric() && rings_->high_water.load(std::memory_order_seq_cst) != 0) {
        detail::asymmetric_barrier_heavy();
      }
    }
    if (has_work_seq_cst() || stopping_.load(std::memory_order_seq_cst)) {
      parked_[k].bits.fetch_and(~bit, std::memory_order_seq_cst);
      note_activity(w, worker_activity::working);
      return;
    }
    note_activity(w, worker_activity::parked);
    w.park.wait(seen, std::memory_order_acquire);
    note_activity(w, worker_activity::working);
    // A waker cleared the bit before bumping the word; the destructor's
    // stop bump does not, so clear it in every case.
    parked_[k].bits.fetch_and(~bit, std::memory_order_seq_cst);
    wake_tree();
  }

  //===-- the worker loop --===//

  void run_worker(worker& w) noexcept {
    note_activity(w, worker_activity::working);
    std::uint32_t idle = 0;
    for (;;) {
      const step_result r = step(w);
      if (r == step_result::progress) {
        idle = 0;
        if (w.spinning) {
          w.spinning = false;
          spinning_.fetch_sub(1, std::memory_order_seq_cst);
          note_activity(w, worker_activity::working);
        }
        continue;
      }
      if (r == step_result::nothing && stopping_.load(std::memory_order_acquire) &&
          !has_local(w) && !has_work_seq_cst()) {
        break;
      }
      if (!w.spinning) {
        w.spinning = true;
        spinning_.fetch_add(1, std::memory_order_seq_cst);
        note_activity(w, worker_activity::spinning);
      }
      if (idle < spin_limit()) {
        ++idle;
        detail::cpu_relax();
        continue;
      }
      idle = 0;
      if (r == step_result::no_progress) {
        // A polling process is runnable, so parking would fail: let other
        // threads of the machine run instead of burning the round.
        std::this_thread::yield();
        continue;
      }
      park(w);
    }
    if (w.spinning) {
      w.spinning = false;
      spinning_.fetch_sub(1, std::memory_order_seq_cst);
    }
    note_activity(w, worker_activity::stopped);
  }

  CAUSAL_ALWAYS_INLINE process* next_local(worker& w) noexcept {
    if (w.local_next != nullptr) {
      process* p = w.local_next;
      w.local_next = nullptr;
      ++w.handoffs;
      return p;
    }
    if (w.batch_head < w.batch_size) return w.batch[w.batch_head++];
    return nullptr;
  }

  /// One round of the worker loop: the next piece of work, drained.
  step_result step(worker& w) noexcept {
    // Fairness: listed work is looked at first, so a steady stream of it
    // (or one process polling on the immediate list) would starve the
    // compute slots; every `listed_streak_limit` listed drains in a row the
    // worker scans the slots first.
    if (w.listed_streak >= listed_streak_limit) {
      w.listed_streak = 0;
      const step_result r = scan_and_drain(w);
      if (r == step_result::progress || r == step_result::no_progress) return r;
    }
    process* p = next_local(w);
    if (p == nullptr) {
      // The private batch is done: apply coalesced wakes, publish chains.
      flush_pending(w);
      publish_gathered(w);
      p = next_local(w);
    }
    if (p == nullptr && open_fanouts_.load(std::memory_order_relaxed) != 0) [[unlikely]] {
      p = take_fanout_chunk(w);
    }
    bool busy = false;
    if (p == nullptr) p = take_listed(w, busy);
    if (p == nullptr && overflow_.maybe_nonempty()) {
      bool overflow_busy = false;
      p = take_from(overflow_, w, 1, overflow_busy);
      busy = busy || overflow_busy;
      if (p != nullptr) {
        w.batch_head = w.batch_size = 0;
        // Read first: once in a slot it may run and be freed at once.
        const std::uint32_t budget = p->wake_budget();
        if (claim_slot(*p) != ext::no_slot) {
          request_workers(budget);
          return step_result::progress;
        }
      }
    }
    if (p != nullptr) {
      // Run `p`, then whatever it left this worker to run next (a chain's
      // next process, the rest of a batch) without leaving this call: one
      // round of the worker loop per piece of local work cost about 10 %
      // of a chain hop. The streak limit still ends the round.
      for (;;) {
        ++w.listed_streak;
        if (!run_listed(w, *p)) return step_result::no_progress;
        if (w.listed_streak >= listed_streak_limit) return step_result::progress;
        p = next_local(w);
        if (p == nullptr) {
          flush_pending(w);
          publish_gathered(w);
          p = next_local(w);
          if (p == nullptr) return step_result::progress;
        }
      }
    }
    w.listed_streak = 0;
    const step_result r = scan_and_drain(w);
    if (r == step_result::nothing && busy) return step_result::busy;
    return r;
  }

  process* take_from(list_type& list, worker& w, std::uint32_t max, bool& busy) noexcept {
    detail::take_status taken{};
    std::uint32_t left = 0;
    const std::uint32_t k = list.take(w.batch, max, worker_count_ + 1, taken, left);
    if (taken == detail::take_status::busy) busy = true;
    return start_batch(w, k, left);
  }

  /// Takes a batch from the immediate list or the activation rings, the
  /// two alternating which is looked at first, so neither starves the other.
  process* take_listed(worker& w, bool& busy) noexcept {
    if constexpr (has_rings) {
      w.rings_first = !w.rings_first;
      if (w.rings_first) {
        if (process* p = take_from_rings(w, busy)) return p;
        return take_from(immediate_, w, Traits::immediate_batch, busy);
      }
      if (process* p = take_from(immediate_, w, Traits::immediate_batch, busy)) return p;
      return take_from_rings(w, busy);
    } else {
      return take_from(immediate_, w, Traits::immediate_batch, busy);
    }
  }

  process* take_from_rings(worker& w, bool& busy) noexcept {
    detail::take_status taken{};
    std::uint32_t left = 0;
    const std::uint32_t k = rings_->take(w.index, w.batch, Traits::immediate_batch,
                                         worker_count_ + 1, taken, left);
    if (taken == detail::take_status::busy) busy = true;
    return start_batch(w, k, left);
  }

  /// Makes the `k` processes just taken into w.batch its private batch and
  /// returns the first (nullptr when k is 0).
  process* start_batch(worker& w, std::uint32_t k, std::uint32_t left) noexcept {
    if (k == 0) return nullptr;
    w.handoffs = 0;
    w.batch_head = 1;
    w.batch_size = k;
    if (left != 0) request_workers(1);  // more where that came from
    return w.batch[0];
  }

  [[nodiscard]] bool rings_maybe_nonempty() const noexcept {
    if constexpr (has_rings) {
      return rings_->maybe_nonempty();
    } else {
      return false;
    }
  }

  /// Drains a list-placed (single-drainer) process once and acts on it.
  /// Returns the drain's did_work (true when it completed).
  CAUSAL_ALWAYS_INLINE bool run_listed(worker& w, process& p) noexcept {
    namespace sb = detail::state_bits;
    auto& state = detail::process_access::state(p);
    // acquire: pairs with the release of the wake that activated it.
    std::uint64_t s = state.load(std::memory_order_acquire);
    if ((s & (sb::cancelled | sb::failed)) != 0 || cancelling_.load(std::memory_order_relaxed)) {
      finish_listed(w, p);
      return true;
    }
    // One read of the sink per drain: begin and end go to the same sink.
    trace_sink* const sink = trace.load(std::memory_order_relaxed);
    report_drain_begin(sink, &p, w.ctx.worker_index());
    const drain_result r = p.drain()(p, w.ctx);
    report_drain_end(sink, &p, w.ctx.worker_index(), r.completed, r.did_work, r.keep_active);
    if (r.completed) {
      finish_listed(w, p, sink);
      return true;
    }
    s = state.load(std::memory_order_relaxed);
    // A suspended process sleeps even if it asked to be drained again:
    // runnable means a suspend count of 0.
    if (!r.keep_active || (s & sb::count_mask) != 0) {
      for (;;) {
        if ((s & (sb::cancelled | sb::failed)) != 0) {
          finish_listed(w, p);
          return true;
        }
        if ((s & sb::count_mask) == 0) break;  // woken meanwhile, or never suspended
        // seq_cst: one total order with the wake's CAS. After this succeeds
        // the next wake() to reach 0 activates the process again, so it
        // must not be touched any more here.
        if (state.compare_exchange_weak(s, s & ~sb::active, std::memory_order_seq_cst,
                                        std::memory_order_relaxed)) {
          return r.did_work;
        }
      }
    }
    // Drain again later. A drain that raised the wake budget above 1 asked
    // for more workers: it moves to a compute slot now (or back to the
    // overflow list when none is free), not at its next activation.
    if (p.wake_budget() > 1) [[unlikely]] {
      place_compute(p);
      return r.did_work;
    }
    // Otherwise the back of its list.
    if (detail::process_access::placement(p).load(std::memory_order_relaxed) ==
        detail::placed_overflow) {
      overflow_.push(p);
    } else {
      immediate_.push(p);
    }
    request_workers(1);
    return r.did_work;
  }

  /// Returns the error a completer reports (nullptr: success); during
  /// teardown every process completes as cancelled.
  CAUSAL_ALWAYS_INLINE const error* final_error(process& p, std::uint64_t seen) noexcept {
    return final_error(p, seen, cancelling_.load(std::memory_order_relaxed));
  }
  /// The same, with the teardown flag the caller has read.
  static const error* final_error(process& p, std::uint64_t seen, bool teardown) noexcept {
    const error* failure = detail::completion_error(p, seen);
    if (failure == nullptr && teardown) [[unlikely]] failure = &teardown_error;
    return failure;
  }
  static constexpr error teardown_error{errc::cancelled, "executor destroyed"};

  /// The completion event of `p` for the trace sink (sink installed only).
  CAUSAL_NOINLINE void report_finish(const worker& w, const process& p,
                                     const error* failure) const noexcept {
    report_complete(trace.load(std::memory_order_relaxed), &p, failure != nullptr ? *failure : error{}, w.ctx.worker_index());
  }

  CAUSAL_ALWAYS_INLINE void finish_listed(worker& w, process& p) noexcept {
    finish_listed(w, p, trace.load(std::memory_order_relaxed));
  }
  /// The same, reporting to `sink` (the caller's read of the trace sink).
  CAUSAL_ALWAYS_INLINE void finish_listed(worker& w, process& p, trace_sink* sink) noexcept {
    // Read once: the claim and the completion error agree on teardown.
    const bool teardown = cancelling_.load(std::memory_order_relaxed);
    const std::uint32_t rearm = p.auto_rearm();
    std::uint64_t seen = 0;
    if (rearm == 0) [[likely]] {
      // A listed process has one drainer and is ACTIVE, so nobody else can
      // set DONE (cancel() only claims suspended processes): fetch_add of
      // the bit is a fetch_or that compiles to one `lock xadd` instead of
      // a CAS loop. acq_rel: the acquire half pairs with the release that
      // published a concurrently recorded error (FAILED), so error_ can be
      // read.
      seen = detail::process_access::state(p).fetch_add(detail::state_bits::done,
                                                          std::memory_order_acq_rel);
      CAUSAL_ASSERT((seen & detail::state_bits::done) == 0, "executor: listed process completed twice");
    } else {
      // The common case of claim_and_rearm inline: one CAS from the state
      // just read, which holds no error, cancel or claim in flight.
      auto& state = detail::process_access::state(p);
      std::uint64_t s = state.load(std::memory_order_relaxed);
      namespace sb = detail::state_bits;
      if ((s & (sb::failed | sb::cancelled | sb::error_claim)) == 0 && !teardown &&
          state.compare_exchange_strong(s, std::uint64_t{rearm}, std::memory_order_acq_rel,
                                        std::memory_order_relaxed)) [[likely]] {
        seen = s | sb::done;
      } else {
        seen = claim_and_rearm(p, rearm);
      }
    }
    const process::release_fn release_cb = p.release();
    detail::scope_core* const sc = detail::process_access::scope(p);
    const error* const failure = final_error(p, seen, teardown);
    if (traced(sink)) [[unlikely]] report_finish(w, p, failure);
    if (failure == nullptr && sc == nullptr && p.completion() == nullptr) [[likely]] {
      const std::size_t dep_count = p.dependents().size();
      if (dep_count == 1 && w.pending == nullptr && w.batch_head >= w.batch_size) {
        // A chain hop: no wake is being coalesced and nothing left in this
        // batch could join one, so the dependent is woken now instead of
        // through defer_wake and the flush that would follow at once.
        apply_wake(w, *p.dependents()[0], 1);
        publish_gathered(w);
        if (release_cb != nullptr) [[unlikely]] detail::release(p, release_cb, nullptr);
        return;
      }
      if (dep_count >= fanout_min_dependents && fanout_min_dependents != 0) [[unlikely]] {
        if (start_fanout(w, p, release_cb)) return;
      }
    }
    worker_waker waker{*this, w};
    detail::complete(p, failure, waker);
    publish_gathered(w);
    if (release_cb == nullptr && sc == nullptr) [[likely]] return;
    if (w.pending != nullptr) {
      // A wake of one of its dependents is still being coalesced: release
      // must come after it (a scope's wait_idle, or the caller freeing the
      // dependent after this release, relies on that), so it waits for
      // the flush. `p` stays alive until its release by contract.
      detail::process_access::next(p).store(w.deferred_release, std::memory_order_relaxed);
      w.deferred_release = &p;
      return;
    }
    detail::release(p, release_cb, sc);
  }

  /// Completion of a re-arming process (set_auto_rearm): in one CAS, reads
  /// how it completed and, if successfully, resets it to suspended with
  /// `rearm` pending wakes (else marks it DONE). Re-arming before the
  /// completion callback means nothing the callback triggers can find the
  /// process still complete. Returns the state word it replaced, with DONE.
  CAUSAL_NOINLINE std::uint64_t claim_and_rearm(process& p, std::uint32_t rearm) noexcept {
    namespace sb = detail::state_bits;
    auto& state = detail::process_access::state(p);
    std::uint64_t s = state.load(std::memory_order_relaxed);
    std::uint64_t next = 0;
    do {
      // An error claim in flight (a fail() or cancel() between claiming
      // and publishing) also stops the re-arm: re-armed, the process would
      // look suspended to that cancel(), which would then resolve the next
      // round's instance and wake the dependents a second time.
      const bool ok = (s & (sb::failed | sb::cancelled | sb::error_claim)) == 0 &&
                      !cancelling_.load(std::memory_order_relaxed);
      next = ok ? std::uint64_t{rearm} : (s | sb::done);
      // acq_rel: acquire as in finish_listed; release publishes the reset
      // to the next round's wakes.
    } while (!state.compare_exchange_weak(s, next, std::memory_order_acq_rel,
                                          std::memory_order_relaxed));
    return s | sb::done;
  }

  /// Runs the releases that waited for coalesced wakes (after flushing them).
  CAUSAL_NOINLINE void release_deferred(worker& w) noexcept {
    process* p = w.deferred_release;
    w.deferred_release = nullptr;
    while (p != nullptr) {
      process* next = detail::process_access::next(*p).load(std::memory_order_relaxed);
      detail::release(*p, p->release(), detail::process_access::scope(*p));
      p = next;
    }
  }

  //===-- coalesced dependent wakes --===//

  CAUSAL_ALWAYS_INLINE void defer_wake(worker& w, process& d) noexcept {
    if (w.pending == &d) {
      ++w.pending_count;
      return;
    }
    flush_pending(w);
    w.pending = &d;
    w.pending_count = 1;
  }

  CAUSAL_ALWAYS_INLINE void flush_pending(worker& w) noexcept {
    process* d = w.pending;
    if (d == nullptr) return;
    const std::uint32_t n = w.pending_count;
    w.pending = nullptr;
    w.pending_count = 0;
    apply_wake(w, *d, n);
    if (w.deferred_release != nullptr) [[unlikely]] release_deferred(w);
  }

  /// Drops `n` suspensions of `d` on behalf of worker `w`; like
  /// process::wake(), but a process it activates may stay on `w`: as its
  /// next process or gathered (place_from_worker), or with IntoBatch at the
  /// end of its private batch (a fan-out chunk; the caller makes room).
  template <bool IntoBatch = false>
  CAUSAL_ALWAYS_INLINE void apply_wake(worker& w, process& d, std::uint32_t n) noexcept {
    // The same reads as process::wake(), for the same reasons.
    const std::uint32_t placement =
        detail::process_access::placement(d).load(std::memory_order_acquire);
    detail::executor_base* const ex_before = detail::process_access::executor(d);
    switch (detail::process_access::try_wake(d, n)) {
      case detail::wake_outcome::ignored:
      case detail::wake_outcome::counted:
        return;
      case detail::wake_outcome::activate:
        place_activated<IntoBatch>(w, d);
        return;
      case detail::wake_outcome::resume:
        if (placement < detail::placed_overflow && ex_before != nullptr) {
          ex_before->resume(*ex_before, d, placement);
        }
        return;
    }
  }

  /// Places `d`, which a wake by worker `w` just made ACTIVE (apply_wake).
  template <bool IntoBatch>
  CAUSAL_ALWAYS_INLINE void place_activated(worker& w, process& d) noexcept {
    detail::executor_base* const ex = detail::process_access::executor(d);
    CAUSAL_ASSERT(ex != nullptr, "process::wake: count reached 0 before submit");
    if (ex != base()) [[unlikely]] {
      ex->activate(*ex, d);
    } else if constexpr (IntoBatch) {
      if (d.wake_budget() <= 1) {
        detail::process_access::placement(d).store(detail::placed_immediate,
                                                   std::memory_order_relaxed);
        w.batch[w.batch_size++] = &d;
      } else {
        place_compute(d);
      }
    } else {
      place_from_worker(w, d);
    }
  }

  //===-- split fan-out --===//

  static bool fanout_claimable(std::uint64_t claims) noexcept {
    return (claims & fanout_index_mask) > ((claims >> fanout_index_bits) & fanout_index_mask);
  }

  /// Offers the dependents of `p` (completed successfully on `w`, no
  /// callback, no scope) in chunks; returns false, having done nothing,
  /// when w's record is still in use or there are too many chunks.
  CAUSAL_NOINLINE bool start_fanout(worker& w, process& p, process::release_fn release_cb) noexcept {
    fanout_record& f = w.fanout;
    // acquire: the last chunk's finisher is done with the record.
    if (f.unfinished.load(std::memory_order_acquire) != 0) return false;
    const std::size_t count = p.dependents().size();
    const std::uint64_t chunks = (count + fanout_chunk - 1) / fanout_chunk;
    if (chunks > fanout_max_chunks) return false;
    f.dependents.store(p.dependents().data(), std::memory_order_relaxed);
    f.count.store(static_cast<std::uint32_t>(count), std::memory_order_relaxed);
    f.source.store(&p, std::memory_order_relaxed);
    f.release.store(release_cb, std::memory_order_relaxed);
    f.unfinished.store(static_cast<std::uint32_t>(chunks), std::memory_order_relaxed);
    const std::uint64_t generation =
        (f.claims.load(std::memory_order_relaxed) >> (2 * fanout_index_bits)) + 1;
    open_fanouts_.fetch_add(1, std::memory_order_relaxed);
    // seq_cst: publishes the fields (release) and is the publish half of
    // the parking handshake, like a list push.
    f.claims.store((generation << (2 * fanout_index_bits)) | chunks, std::memory_order_seq_cst);
    request_workers(static_cast<std::uint32_t>(std::min<std::uint64_t>(chunks - 1, worker_count_)));
    return true;
  }

  /// Claims one chunk (w's own record from the front first, then any
  /// other's from the back), wakes its dependents into w's private batch
  /// and returns the first one made runnable (nullptr: none, or no chunk).
  CAUSAL_NOINLINE process* take_fanout_chunk(worker& w) noexcept {
    if (process* p = claim_chunk(w, w.fanout, true)) return p;
    const std::uint32_t n = worker_count_ + 1;
    for (std::uint32_t k = 1; k < n; ++k) {
      worker& other = workers_[(w.index + k) % n];
      if (process* p = claim_chunk(w, other.fanout, false)) return p;
    }
    return nullptr;
  }

  /// Claims chunks of `f` until one makes a dependent runnable (or none is
  /// left); see take_fanout_chunk.
  process* claim_chunk(worker& w, fanout_record& f, bool front) noexcept {
    for (;;) {
      // acquire: pairs with start_fanout's store, so the fields are those
      // of the generation this word names.
      std::uint64_t c = f.claims.load(std::memory_order_acquire);
      if (!fanout_claimable(c)) return nullptr;
      process* const* const deps = f.dependents.load(std::memory_order_relaxed);
      const std::uint32_t count = f.count.load(std::memory_order_relaxed);
      process* const source = f.source.load(std::memory_order_relaxed);
      const process::release_fn release_cb = f.release.load(std::memory_order_relaxed);
      const std::uint64_t back = c & fanout_index_mask;
      const std::uint64_t lo = (c >> fanout_index_bits) & fanout_index_mask;
      const std::uint64_t chunk = front ? lo : back - 1;
      const std::uint64_t next = front ? c + (std::uint64_t{1} << fanout_index_bits) : c - 1;
      // acq_rel: wins the chunk against every other claimer of this
      // generation; a reused record has a new generation and fails this.
      if (!f.claims.compare_exchange_strong(c, next, std::memory_order_acq_rel,
                                            std::memory_order_relaxed)) {
        continue;
      }
      const std::uint32_t begin = static_cast<std::uint32_t>(chunk * fanout_chunk);
      const std::uint32_t end = std::min<std::uint32_t>(begin + fanout_chunk, count);
      if (w.batch_head >= w.batch_size) w.batch_head = w.batch_size = 0;
      CAUSAL_ASSERT(w.batch_size + (end - begin) <= Traits::immediate_batch,
                    "executor: a fan-out chunk does not fit the private batch");
      for (std::uint32_t i = begin; i < end; ++i) apply_wake<true>(w, *deps[i], 1);
      // acq_rel: the last finisher sees every chunk's wakes done before it
      // releases the process.
      if (f.unfinished.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        open_fanouts_.fetch_sub(1, std::memory_order_relaxed);
        if (release_cb != nullptr) release_cb(*source);
      }
      w.handoffs = 0;
      if (w.batch_head < w.batch_size) return w.batch[w.batch_head++];
      if (!front) return nullptr;  // a helper looks elsewhere next round
    }
  }

  //===-- compute slots --===//

  void unpin(std::size_t i) noexcept {
    namespace sb = detail::slot_bits;
    // seq_cst: orders against the completer's retiring CAS, see below.
    if (pins_[i].drainers.fetch_sub(1, std::memory_order_seq_cst) != 1) return;
    // We left a slot with no drainer. If its process is retiring, whoever
    // drops the pin count to 0 after the retiring flag is visible releases
    // it; the re-check of the count hands the job to a pinner that came in
    // meanwhile (it will see the flag on its own way out).
    std::uint64_t word = words_[i].load(std::memory_order_seq_cst);
    if ((word & sb::flag_mask) != sb::retiring) return;
    if (pins_[i].drainers.load(std::memory_order_seq_cst) != 0) return;
    const process::release_fn release_cb = info_[i].release.load(std::memory_order_relaxed);
    detail::scope_core* const sc = info_[i].scope.load(std::memory_order_relaxed);
    if (!words_[i].compare_exchange_strong(word, 0, std::memory_order_seq_cst,
                                           std::memory_order_relaxed)) {
      return;
    }
    occupied_.fetch_sub(1, std::memory_order_relaxed);
    detail::release(*detail::slot_process(word), release_cb, sc);
  }

  step_result scan_and_drain(worker& w) noexcept {
    if (occupied_.load(std::memory_order_relaxed) == 0) return step_result::nothing;
    const slot_view view(words_, meta_);
    for (std::size_t attempt = 0; attempt < slot_count; ++attempt) {
      const std::size_t i = scan_.pick(view, w.cursor);
      if (i == ext::no_slot) return step_result::nothing;
      CAUSAL_ASSERT(i < slot_count, "scan policy returned an index past the slots");
      // seq_cst pin then seq_cst load: a completer that sets retiring
      // either sees our pin (and leaves the release to us) or we see the
      // flag and back out.
      pins_[i].drainers.fetch_add(1, std::memory_order_seq_cst);
      const std::uint64_t word = words_[i].load(std::memory_order_seq_cst);
      if (word == 0 || (word & detail::slot_bits::flag_mask) != 0) {
        unpin(i);
        continue;
      }
      const bool progress = drain_compute(w, i, *detail::slot_process(word));
      unpin(i);
      return progress ? step_result::progress : step_result::no_progress;
    }
    return step_result::nothing;
  }

  bool drain_compute(worker& w, std::size_t i, process& p) noexcept {
    namespace sb = detail::state_bits;
    const std::uint64_t s = detail::process_access::state(p).load(std::memory_order_acquire);
    if (s & sb::done) return false;
    if ((s & (sb::cancelled | sb::failed)) != 0 || cancelling_.load(std::memory_order_relaxed)) {
      finish_compute(w, i, p);
      return true;
    }
    // Suspended (by a drainer on its way to flag the slot asleep, or by one
    // that suspended it and asked to be drained again): runnable means a
    // suspend count of 0. Flag it asleep on its behalf.
    if ((s & sb::count_mask) != 0) {
      try_sleep(i, p);
      return false;
    }
    report_drain_begin(trace.load(std::memory_order_relaxed), &p, w.ctx.worker_index());
    const drain_result r = p.drain()(p, w.ctx);
    report_drain_end(trace.load(std::memory_order_relaxed), &p, w.ctx.worker_index(), r.completed, r.did_work, r.keep_active);
    if (r.completed) {
      finish_compute(w, i, p);
      return true;
    }
    if (!r.keep_active) try_sleep(i, p);
    return r.did_work;
  }

  void finish_compute(worker& w, std::size_t i, process& p) noexcept {
    namespace sb = detail::slot_bits;
    // acq_rel: exactly one drainer claims completion (the RMW order decides
    // which); the acquire half makes a recorded error (FAILED) readable.
    // Other drainers may still be inside drain(): completion does not wait
    // for them, release does.
    const std::uint64_t seen =
        detail::process_access::state(p).fetch_or(detail::state_bits::done, std::memory_order_acq_rel);
    if (seen & detail::state_bits::done) return;
    // Retire the slot: scans skip it and no new drainer enters. We hold a
    // pin, so the pointer in the word cannot change under us.
    std::uint64_t word = words_[i].load(std::memory_order_relaxed);
    while (!words_[i].compare_exchange_weak(word, (word & ~sb::flag_mask) | sb::retiring,
                                            std::memory_order_seq_cst, std::memory_order_relaxed)) {
    }
    aggregate_budget_.fetch_sub(meta_[i].load(std::memory_order_relaxed) & 0xff'ffffu,
                                std::memory_order_relaxed);
    const error* const failure = final_error(p, seen);
    if (traced(trace.load(std::memory_order_relaxed))) [[unlikely]] report_finish(w, p, failure);
    worker_waker waker{*this, w};
    detail::complete(p, failure, waker);
    // No coalescing across a compute completion: its release (by the last
    // drainer to unpin) must follow the wakes of its dependents.
    flush_pending(w);
    publish_gathered(w);
    // Release: by the last drainer to unpin (maybe us, in scan_and_drain).
  }

  /// The sleeper's half of the sleep handshake: flag the slot asleep, then
  /// re-read the suspend count; a wake that got in between clears the flag
  /// itself (resume_slot) or is seen here.
  void try_sleep(std::size_t i, process& p) noexcept {
    namespace sb = detail::slot_bits;
    namespace st = detail::state_bits;
    auto& state = detail::process_access::state(p);
    std::uint64_t s = state.load(std::memory_order_seq_cst);
    if ((s & st::count_mask) == 0 || (s & (st::done | st::cancelled | st::failed)) != 0) return;
    const std::uint64_t mine = detail::slot_word_of(p);
    std::uint64_t expected = mine;
    if (!words_[i].compare_exchange_strong(expected, mine | sb::sleeping, std::memory_order_seq_cst,
                                           std::memory_order_relaxed)) {
      return;  // already asleep, or retiring
    }
    s = state.load(std::memory_order_seq_cst);
    if ((s & st::count_mask) == 0 || (s & (st::done | st::cancelled | st::failed)) != 0 ||
        cancelling_.load(std::memory_order_seq_cst)) {
      expected = mine | sb::sleeping;
      words_[i].compare_exchange_strong(expected, mine, std::memory_order_seq_cst,
                                        std::memory_order_relaxed);
    }
  }

  /// Teardown: clears every sleeping flag so the workers complete the
  /// sleepers (cancelling_ is already set, so they will not drain them).
  void wake_sleeping_slots() noexcept {
    for (std::size_t i = 0; i < slot_count; ++i) {
      std::uint64_t word = words_[i].load(std::memory_order_seq_cst);
      while ((word & detail::slot_bits::flag_mask) == detail::slot_bits::sleeping) {
        if (words_[i].compare_exchange_weak(word, word & ~detail::slot_bits::flag_mask,
                                            std::memory_order_seq_cst,
                                            std::memory_order_relaxed)) {
          break;
        }
      }
    }
  }

  //===-- data --===//

  list_type immediate_;
  list_type overflow_;
  /// The activation rings (null without them) and the same object as the
  /// threads bound to it hold it (producer_rings.hpp).
  ring_set_type* rings_ = nullptr;
  std::shared_ptr<detail::ring_claims> ring_claims_;
  alignas(CAUSAL_CACHELINE_SIZE) atomic<std::uint64_t> words_[slot_count] = {};
  alignas(CAUSAL_CACHELINE_SIZE) atomic<std::uint32_t> meta_[slot_count] = {};
  slot_info info_[slot_count] = {};
  alignas(CAUSAL_CACHELINE_SIZE) atomic<std::uint32_t> occupied_{0};
  atomic<std::uint32_t> claim_hint_{0};
  atomic<std::int64_t> aggregate_budget_{0};
  atomic<std::uint32_t> spin_budget_{0};
  alignas(CAUSAL_CACHELINE_SIZE) atomic<std::uint32_t> spinning_{0};
  /// Fan-out records with chunks (or a release) outstanding: a hint that
  /// makes idle workers look at the records. Its own line: every worker
  /// reads it whenever its local work runs out.
  alignas(CAUSAL_CACHELINE_SIZE) atomic<std::uint32_t> open_fanouts_{0};
  alignas(CAUSAL_CACHELINE_SIZE) atomic<std::uint32_t> desired_wake_{0};
  alignas(CAUSAL_CACHELINE_SIZE) atomic<bool> stopping_{false};
  atomic<bool> cancelling_{false};
  atomic<bool> helper_busy_{false};
  [[no_unique_address]] scan_type scan_{};
  std::uint32_t worker_count_ = 0;
  std::uint32_t parked_words_ = 0;
  std::unique_ptr<parked_word[]> parked_;
  std::unique_ptr<slot_pin[]> pins_;
  std::unique_ptr<worker[]> workers_;
};

/// The executor with default traits.
using executor = basic_executor<>;

CAUSAL_END_NAMESPACE
