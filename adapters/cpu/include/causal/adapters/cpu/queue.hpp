// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// cpu::queue: the CPU adapter's queue -- a causal queue (one axis, wait
// elision, frontiers) whose device is a queue process on an executor.
//
// Model (docs/adapters.md "cpu"). A `cpu::basic_queue` puts together the
// device-independent core, causal::basic_queue, and the CPU "device", a
// causal::basic_queue_process bound to an executor (queue_process.hpp).
// submit(waits, signals, op) runs the core's tiers: waits it can prove are
// elided; the others become semaphore timepoints the operation waits for on
// the executor, never a blocked thread. Operations run in epoch order on
// the executor's workers -- host calls inline, command buffers as block
// processors that several workers drain -- and their completion reaches
// the signalled semaphores with the frontier the core recorded, then
// retires the epoch (to an attached completion tracker too). Semaphores are
// process-local causal::basic_semaphore objects; a host thread waits on
// them as usual.
//
//   causal::executor ex;
//   causal::cpu::queue q(ex);  // a fresh axis of its own
//   causal::semaphore done;
//   if (!q.host({}, {{&done, 1}}, [] { work(); })) return 1;
//   if (!done.wait(1)) return 1;
//
// A host call is a small trivially copyable callable taking nothing or a
// `const causal::host_call_context&` (its epoch and worker), returning void
// or a status; one that throws fails its operation.
//
// Depth. Any number of operations may be in flight: the queue process's
// ring grows by segments (and reuses them), so a pipeline submitted up
// front is never refused for room. MaxInFlight != 0 opts into a bound.
//
// Stream-ordered memory. stream_alloca / stream_dealloca take a block pool
// over core_type (<causal/pool.hpp>, cpu::block_pool). A block used on
// several queues is freed with stream_dealloca(pool, block, after): a
// marker operation on this queue waits for the other queues' signals
// (elided where the queue already knows them), and the block is released
// after it. For other queues to fence reuse of blocks this queue freed,
// turn on its progress timeline once, with enable_progress_timeline(),
// and register it: pool.register_timeline(q.axis(), q.progress_timeline()).
// While it is off (the default) completing an operation signals nothing
// more.
//
// Errors. submit() returns an error and changes nothing (no semaphore is
// touched) when the queue has failed (its sticky error), when MaxInFlight
// operations are in flight or memory runs out while the ring or a
// semaphore's table grows (`resource_exhausted`); otherwise
// basic_queue::submit's rules apply. A failing operation fails its signals and the queue, as a
// device stream would (queue_process.hpp), and the axis of an attached
// completion tracker, so no tracker waiter waits for an epoch that will
// never complete.
//
// Thread safety: one thread at a time submits (like a VkQueue), and that
//                thread also calls stream_alloca/stream_dealloca (with the
//                pool's own rule: one thread at a time) and
//                enable_progress_timeline; observers (completed_epoch,
//                queue_status, stats after wait_idle, the const
//                progress_timeline()) may be read from any thread; the
//                operations run on workers.
// Memory order:  what the submitter wrote before submit happens-before the
//                operation runs; what the operation wrote happens-before a
//                wait on any of its signals returns.
// Blocking/allocation: submit (and stream_dealloca with waits, which
//                submits a marker) never blocks; it allocates only when
//                more operations (or signals of one semaphore) are
//                outstanding than ever before on this queue.
//                stream_alloca, stream_dealloca, enable_progress_timeline
//                and the observers never block or allocate. wait_idle
//                blocks the calling host thread (on an executor with no
//                worker threads it runs the executor meanwhile); a
//                wait_idle that times out names the stalled wait in its
//                error (a bounded, program-long message table), and
//                describe_stall allocates its string (diagnostics).
// Lifetime:      the executor outlives the queue, the queue outlives
//                nothing it signals: the executor refuses, loudly, to be
//                destroyed while a queue is bound, a semaphore while a
//                queue still owes it a signal (docs/lifetimes.md).
// Size:          the queue process's two inline ring segments (32 slots
//                each, about 1 KiB a slot) plus basic_queue's deferral
//                table, and more segments as the depth needs; construct it once, in
//                place (not movable).
// Configuration: Semaphore (a basic_semaphore instance: frontier type,
//                history and pending-signal storage), MaxInFlight (0, the
//                default: no limit; else operations in flight at most).
// See also:      <causal/queue.hpp>, <causal/queue_process.hpp>,
//                adapters/cpu/README.md, docs/lifetimes.md, test/conformance/.
#pragma once

#include <causal/axis.hpp>
#include <causal/config.hpp>
#include <causal/executor.hpp>  // the queues run on it: one include for the common case
#include <causal/frontier.hpp>
#include <causal/pool.hpp>
#include <causal/queue.hpp>
#include <causal/queue_process.hpp>
#include <causal/result.hpp>
#include <causal/semaphore.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

CAUSAL_BEGIN_NAMESPACE

namespace cpu {

/// A CPU queue; see the file comment.
template <class Semaphore = semaphore, std::size_t MaxInFlight = unlimited_in_flight>
class basic_queue {
 public:
  using semaphore_type = Semaphore;
  using frontier_type = typename Semaphore::frontier_type;
  using process_type = basic_queue_process<semaphore_type, MaxInFlight>;
  using backend_type = queue_process_backend<process_type>;
  using core_type = causal::basic_queue<frontier_type, backend_type>;
  using wait_type = typename core_type::wait_type;
  using signal_type = typename core_type::signal_type;
  using operation_type = queue_operation;

  /// Creates the queue for axis `a` (never reused: from an axis_allocator)
  /// and binds its process to `executor`, which must outlive the queue
  /// (it aborts, naming the queue, if destroyed first: docs/lifetimes.md).
  template <class Executor>
  basic_queue(causal::axis a, Executor& executor) noexcept : core_(a, process_) {
    process_.on_retire(&retire_thunk, this);
    process_.on_fail(&fail_thunk, this);
    process_.set_identity("cpu::queue", a.raw());
    process_.start(executor);
  }

  /// Creates the queue on a fresh axis of its own, drawn from
  /// default_axis_allocator() (machine 0, domain queue). A program that
  /// also hands out queue axes itself must draw them from
  /// default_axis_allocator() too (or use another session): two
  /// allocators of one session hand out the same axes.
  template <class Executor>
    requires(!std::is_same_v<std::remove_cvref_t<Executor>, causal::axis>)
  explicit basic_queue(Executor& executor) noexcept : basic_queue(fresh_axis(), executor) {}

  basic_queue(const basic_queue&) = delete;
  basic_queue& operator=(const basic_queue&) = delete;

  /// Waits for what is in flight (waits that can no longer be met are
  /// failed with errc::cancelled) before the process leaves the executor;
  /// never for a wait no one signals. Semaphores the queue signals must
  /// outlive it (docs/lifetimes.md has the order to declare them in).
  ~basic_queue() { process_.close(); }

  //===-- submission --===//

  /// Submits `op` after `waits`, signalling `signals` when it completes.
  result<submission> submit(std::span<const wait_type> waits, std::span<const signal_type> signals,
                            const operation_type& op) noexcept {
    if (status s = process_.queue_status(); !s) return s.error_value();
    // Room for the operation's slot before any effect (basic_queue then
    // reserves the signals' records, also before any effect).
    if (status room = process_.make_room(); !room) return room.error_value();
    return core_.submit(waits, signals, op);
  }
  result<submission> submit(std::initializer_list<wait_type> waits,
                            std::initializer_list<signal_type> signals,
                            const operation_type& op) noexcept {
    return submit(std::span<const wait_type>(waits.begin(), waits.size()),
                  std::span<const signal_type>(signals.begin(), signals.size()), op);
  }

  /// Submits a host call of `f` (a small trivially copyable callable, see
  /// queue_operation::host), named `label` in traces.
  template <class F>
  result<submission> host(std::initializer_list<wait_type> waits,
                          std::initializer_list<signal_type> signals, F&& f,
                          const char* label = nullptr) noexcept {
    return submit(waits, signals, queue_operation::host(std::forward<F>(f)).named(label));
  }

  /// Submits a dispatch of `commands` (alive and unchanged until it
  /// completes), named `label` in traces.
  result<submission> dispatch(std::initializer_list<wait_type> waits,
                              std::initializer_list<signal_type> signals,
                              const command_buffer& commands, block_options options = {},
                              const char* label = nullptr) noexcept {
    return submit(waits, signals, queue_operation::dispatch(commands, options).named(label));
  }

  /// Stream-ordered allocation (named stream_alloca because glibc's
  /// <alloca.h> defines an `alloca` macro): a block of `size` bytes from `pool` (a
  /// basic_block_pool over core_type) for this queue's *next* submitted
  /// operation. Reuse of a block another queue freed is proven by this
  /// queue's knowledge, by completion, or by device waits the pool adds to
  /// that next operation ("try before you fence", pool.hpp; the block
  /// then lists them: wait_count, waits); the host never blocks. Errors
  /// as pool.acquire (nothing fits: resource_exhausted).
  template <class Pool>
  result<pool_block> stream_alloca(Pool& pool, std::size_t size) noexcept {
    return pool.acquire(core_, size);
  }

  /// Stream-ordered free: returns `block` to `pool` with this queue's death
  /// frontier, after every operation submitted so far. Call it after the
  /// submission of the block's last use on this queue (a use on another
  /// queue must be ordered before that submission by its waits, or use the
  /// overload below).
  template <class Pool>
  status stream_dealloca(Pool& pool, const pool_block& block) noexcept {
    return pool.release(block, core_);
  }

  /// Stream-ordered free after uses on other queues: submits a marker
  /// operation that waits for `after` (each (semaphore, value) a signal of
  /// the block's last use on some queue) like any submission (a wait this
  /// queue can prove is elided), then releases `block` to `pool` with the
  /// knowledge that includes them. Every use ordered before one of `after`,
  /// or before this call on this queue, is ordered before the free; the
  /// block is reused by another queue only once it proves the marker
  /// (its knowledge, completion, or a fence on this queue's progress
  /// timeline). With `after` empty it is stream_dealloca(pool, block).
  ///
  /// Example, a block written on `a` and read on `b`:
  ///
  ///   (void)b.host({{&written, 1}}, {{&read, 1}}, read_it);
  ///   if (status s = a.stream_dealloca(pool, block, {{&read, 1}}); !s) ...
  ///
  /// Errors (nothing released, nothing submitted): the release's (a stale,
  /// foreign or forged handle); then the submission's (submit's rules: a
  /// failed queue, a wait on a failed semaphore, too many waits ...).
  template <class Pool>
  status stream_dealloca(Pool& pool, const pool_block& block,
                         std::span<const wait_type> after) noexcept {
    if (after.empty()) return stream_dealloca(pool, block);
    // Refuse a bad handle before the marker: a failed release must not
    // leave an operation behind.
    if (status s = pool.check_release(block, core_); !s) return s;
    const result<submission> marker =
        submit(after, {}, queue_operation{}.named("stream_dealloca"));
    if (!marker) return marker.error_value();
    // The marker is the queue's newest operation: the producer entry the
    // release records proves every use `after` orders before it.
    return pool.release(block, core_);
  }
  template <class Pool>
  status stream_dealloca(Pool& pool, const pool_block& block,
                         std::initializer_list<wait_type> after) noexcept {
    return stream_dealloca(pool, block, std::span<const wait_type>(after.begin(), after.size()));
  }

  /// Blocks until everything submitted so far has completed (or
  /// `deadline`, then errc::timeout); returns the queue's failure, if any.
  status wait_idle(std::chrono::steady_clock::time_point deadline =
                       std::chrono::steady_clock::time_point::max()) noexcept {
    status s = process_.wait_idle(deadline);
    if (s.code() != errc::timeout) return s;
    // Say what the oldest unfinished operation waits for, and who would
    // signal it (describe_stall), in the error itself.
    char text[240];
    const int n = std::snprintf(text, sizeof text, "cpu::queue::wait_idle: deadline passed; ");
    (void)process_.describe_pending(text + n, sizeof text - static_cast<std::size_t>(n), 1);
    return error{errc::timeout,
                 detail::intern_message(text, "cpu::queue::wait_idle: deadline passed"),
                 core_.completed_epoch()};
  }

  /// What the unfinished operations still wait for, oldest first, one line
  /// per unmet wait with the operation (axis, epoch) that will signal its
  /// value, or "no submitted operation signals" -- for a wait_idle that
  /// timed out: a wait no one will signal, or a cycle across queues
  /// (follow the axes). Empty when idle. The submitting thread only;
  /// allocates (a diagnostic, not a hot path).
  [[nodiscard]] std::string describe_stall(std::size_t max_operations = 8) const {
    std::string text(4096, '\0');
    text.resize(process_.describe_pending(text.data(), text.size(), max_operations));
    return text;
  }

  /// Adds what the caller learnt elsewhere (e.g. after a host wait) to the
  /// knowledge, so later submissions can elide more.
  void learn(const frontier_type& extra) noexcept { core_.learn(extra); }

  /// Turns on the progress timeline (progress_timeline()): from now on
  /// every completed epoch e reaches it at e, and a failure of the queue
  /// fails it; only this queue may signal it (a signal from anyone else
  /// would mark epochs complete that have not run, and a pool would reuse
  /// their blocks). Then register it with a block pool for this axis,
  /// `pool.register_timeline(q.axis(), q.progress_timeline())`, so that
  /// other queues can fence reuse of blocks this queue freed.
  ///
  /// Idempotent: once on, later calls change nothing and succeed. Call it
  /// before the first submit, or while nothing is in flight (everything
  /// submitted has completed; the timeline is first brought to
  /// completed_epoch()). On a failed queue it fails the timeline with the
  /// queue's error (a pool never waits on it) and counts as on. While off
  /// (the default), completing an operation costs nothing more.
  ///
  /// Error (nothing changes): `failed_precondition` while operations are
  /// in flight (the queue's workers read the setting as they complete
  /// them): wait_idle() first.
  status enable_progress_timeline() noexcept {
    if (progress_on_) return {};
    if (status s = process_.queue_status(); !s) {
      // No epoch past the last good one will complete: a failed timeline
      // says so, and the process never touches it.
      (void)progress_.fail(s.error_value());
      progress_on_ = true;
      return {};
    }
    // acquire (completed_epoch): pairs with the release in retire(), which
    // the drain reaches after its last read of the setting for that
    // operation; later operations are published after the write below.
    const std::uint64_t done = core_.completed_epoch();
    if (done != core_.epoch()) {
      return error{errc::failed_precondition,
                   "enable_progress_timeline: operations in flight; call it before the first "
                   "submit, or after wait_idle()",
                   core_.epoch() - done};
    }
    if (done != 0) {
      if (status s = progress_.signal(done); !s) return s;
    }
    process_.set_progress_timeline(&progress_);
    progress_on_ = true;
    return {};
  }

  /// Whether enable_progress_timeline() turned the progress timeline on.
  [[nodiscard]] bool progress_timeline_enabled() const noexcept { return progress_on_; }

  /// The progress timeline: it reaches e when this queue's epoch e
  /// completes, once enable_progress_timeline() turned it on; observe it
  /// (value, wait, failed) from any thread. Reading it changes nothing.
  [[nodiscard]] const semaphore_type& progress_timeline() const noexcept { return progress_; }
  /// The same timeline, for registering with a block pool (which issues
  /// device waits on it). Precondition (asserted):
  /// enable_progress_timeline() turned it on -- a pool fencing on a
  /// timeline nobody signals would stall the fenced queue for good.
  [[nodiscard]] semaphore_type& progress_timeline() noexcept {
    CAUSAL_ASSERT(progress_on_,
                  "cpu::queue::progress_timeline: call enable_progress_timeline() first");
    return progress_;
  }

  /// Reports this queue's submissions, wait decisions, signals and
  /// retirements to `sink` (null: stop); set it before submitting. The
  /// queue's operations appear under their queue_operation::named labels.
  void set_trace_sink(trace_sink* sink) noexcept { core_.set_trace_sink(sink); }

  /// Forwards every retired epoch to `tracker.advance(axis(), epoch)`,
  /// and the queue's failure to `tracker.fail_axis(axis(), e)`.
  template <class Tracker>
  void track_completion(Tracker& tracker) noexcept {
    core_.track_completion(tracker);
  }

  //===-- observers --===//

  [[nodiscard]] causal::axis axis() const noexcept { return core_.axis(); }
  [[nodiscard]] std::uint64_t epoch() const noexcept { return core_.epoch(); }
  [[nodiscard]] const frontier_type& knowledge() const noexcept { return core_.knowledge(); }
  /// Cumulative wait-elision counters (a snapshot; any thread).
  [[nodiscard]] queue_stats stats() const noexcept { return core_.stats(); }
  [[nodiscard]] std::uint64_t completed_epoch() const noexcept { return core_.completed_epoch(); }
  [[nodiscard]] status queue_status() const noexcept { return process_.queue_status(); }
  /// Command buffers issued as block processors so far.
  [[nodiscard]] std::uint64_t dispatches() const noexcept { return process_.dispatches(); }
  [[nodiscard]] core_type& core() noexcept { return core_; }
  [[nodiscard]] process_type& queue_process() noexcept { return process_; }

 private:
  static causal::axis fresh_axis() noexcept {
    const result<causal::axis> a = default_axis_allocator().allocate(0, domain::queue);
    CAUSAL_ASSERT(a.has_value(), "cpu::queue: no queue axis left in the default allocator");
    return a.value_or(causal::axis{});
  }

  static void retire_thunk(void* self, std::uint64_t epoch) noexcept {
    static_cast<basic_queue*>(self)->core_.retire(epoch);
  }
  static void fail_thunk(void* self, const error& e) noexcept {
    static_cast<basic_queue*>(self)->core_.fail_completion(e);
  }

  // The process is declared first: the core's backend points at it. The
  // destructor closes it first, since finishing operations retire epochs
  // through the core.
  semaphore_type progress_;
  process_type process_;
  core_type core_;
  // Set once by enable_progress_timeline() (the submitting thread's).
  bool progress_on_ = false;
};

/// A CPU queue over causal::semaphore, any number of operations in flight.
using queue = basic_queue<>;

/// The death-frontier block pool (<causal/pool.hpp>) over CPU queues: what
/// stream_alloca / stream_dealloca take. Turn on each queue's progress
/// timeline and register it with the pool
/// (`q.enable_progress_timeline()`, then
/// `pool.register_timeline(q.axis(), q.progress_timeline())`) so that it
/// can fence reuse of a block another queue freed.
using block_pool = basic_block_pool<queue::core_type>;

}  // namespace cpu

CAUSAL_END_NAMESPACE
