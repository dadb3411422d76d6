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
// Errors. submit() returns an error and changes nothing (no semaphore is
// touched) when the queue has failed (its sticky error), when MaxInFlight
// operations are in flight or memory runs out while the ring or a
// semaphore's table grows (`resource_exhausted`); otherwise
// basic_queue::submit's rules apply. A failing operation fails its signals and the queue, as a
// device stream would (queue_process.hpp), and the axis of an attached
// completion tracker, so no tracker waiter waits for an epoch that will
// never complete.
//
// Thread safety: one thread at a time submits (like a VkQueue); observers
//                (completed_epoch, queue_status, stats after wait_idle) may
//                be read from any thread; the operations run on workers.
// Memory order:  what the submitter wrote before submit happens-before the
//                operation runs; what the operation wrote happens-before a
//                wait on any of its signals returns.
// Blocking/allocation: submit never blocks; it allocates only when more
//                operations (or signals of one semaphore) are outstanding
//                than ever before on this queue. wait_idle blocks the
//                calling host thread.
// Size:          the queue process's two inline ring segments (32 slots
//                each, about 1 KiB a slot) plus basic_queue's deferral
//                table, and more segments as the depth needs; construct it once, in
//                place (not movable).
// Configuration: Semaphore (a basic_semaphore instance: frontier type,
//                history and pending-signal storage), MaxInFlight (0, the
//                default: no limit; else operations in flight at most).
// See also:      <causal/queue.hpp>, <causal/queue_process.hpp>,
//                adapters/cpu/README.md, test/conformance/.
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
#include <initializer_list>
#include <span>
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
  /// and binds its process to `executor`, which must outlive the queue.
  template <class Executor>
  basic_queue(causal::axis a, Executor& executor) noexcept : core_(a, process_) {
    process_.on_retire(&retire_thunk, this);
    process_.on_fail(&fail_thunk, this);
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
  /// failed with errc::cancelled) before the process leaves the executor.
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
  /// that next operation ("try before you fence", pool.hpp); the host
  /// never blocks. Errors as pool.acquire (nothing fits: resource_exhausted).
  template <class Pool>
  result<pool_block> stream_alloca(Pool& pool, std::size_t size) noexcept {
    return pool.acquire(core_, size);
  }

  /// Stream-ordered free: returns `block` to `pool` with this queue's death
  /// frontier, after every operation submitted so far. Call it after the
  /// submission of the block's last use on this queue (a use on another
  /// queue must be ordered before that submission by its waits).
  template <class Pool>
  status stream_dealloca(Pool& pool, const pool_block& block) noexcept {
    return pool.release(block, core_);
  }

  /// Blocks until everything submitted so far has completed (or
  /// `deadline`, then errc::timeout); returns the queue's failure, if any.
  status wait_idle(std::chrono::steady_clock::time_point deadline =
                       std::chrono::steady_clock::time_point::max()) noexcept {
    return process_.wait_idle(deadline);
  }

  /// Adds what the caller learnt elsewhere (e.g. after a host wait) to the
  /// knowledge, so later submissions can elide more.
  void learn(const frontier_type& extra) noexcept { core_.learn(extra); }

  /// A semaphore that reaches e when this queue's epoch e completes (and
  /// fails with the queue): register it with a block pool for this axis
  /// (`pool.register_timeline(q.axis(), q.progress_timeline())`) so that
  /// blocks this queue freed can be fenced by other queues. The first call
  /// turns it on; make it before the first submit.
  [[nodiscard]] semaphore_type& progress_timeline() noexcept {
    process_.set_progress_timeline(&progress_);
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
};

/// A CPU queue over causal::semaphore, any number of operations in flight.
using queue = basic_queue<>;

/// The death-frontier block pool (<causal/pool.hpp>) over CPU queues: what
/// stream_alloca / stream_dealloca take. Register each queue's progress
/// timeline with it so that it can fence reuse of a block another queue
/// freed.
using block_pool = basic_block_pool<queue::core_type>;

}  // namespace cpu

CAUSAL_END_NAMESPACE
