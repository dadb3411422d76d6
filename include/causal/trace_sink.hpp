// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// trace_sink: the interface through which queues, semaphores and processes
// report what they decided (docs/observability.md), and the small event structs they
// report it with. Costs one predictable branch when nobody listens.
//
// Model. A producer (basic_queue, basic_semaphore; processes and the
// executor through the report_* functions at the end of this file) holds a
// `trace_sink*` that is null by default. Every hook site is
//
//     if (traced(sink_)) [[unlikely]] emit_...(...);   // emit_* is NOINLINE
//
// so with no sink installed the hot path pays one load of a pointer it
// already has in cache and a never-taken branch: no clock read, no
// allocation, no lock, no virtual call. The clock (steady_clock, in ns) is
// read only inside the out-of-line emitter, i.e. only when a sink is set.
// With CAUSAL_ENABLE_TRACE_HOOKS=0 the branch itself compiles away (the
// pointer member stays, so the layout of every type is the same either way).
//
// Why a virtual interface, when the hot-path rules (STYLE b.6) forbid
// virtual calls: the call only happens when tracing is on, and then the
// sink does far more work (copying, locking, allocating) than the dispatch
// costs. A class with one overridable member per event kind is also the
// shape a user writing their own sink (a ring buffer, a Perfetto SDK
// bridge, a counter) expects; every hook has an empty default, so a sink
// overrides only what it needs.
//
// Events are trivially copyable structs of plain values. Pointers in them
// (frontier views, labels, messages) are valid only during the callback: a
// sink that keeps an event copies what they point to (see recording_sink
// in <causal/trace.hpp>). Objects (semaphores, processes) are identified by
// address; queues by their axis.
//
// Thread safety: hooks are called from whatever thread the producer runs
//                on, concurrently for different producers (a queue's
//                retire() may run on a completion thread), so a sink shared
//                by several producers must be thread-safe. Hooks must not
//                call back into the object that emits them:
//                on_semaphore_signal runs with that semaphore's spin lock
//                held (so one semaphore's values arrive in order).
//                set_trace_sink() on a producer must not race with its
//                other members: install the sink before sharing it.
// Memory order:  a hook happens-after the state change it reports on the
//                reporting thread; nothing more is promised across threads
//                (timestamps of different threads may interleave).
// Blocking/allocation: the hook sites never block or allocate; a sink may
//                (the hooks are noexcept: a sink must not throw).
// Size:          one pointer per producer.
// Configuration: CAUSAL_ENABLE_TRACE_HOOKS (default 1).
// See also:      <causal/trace.hpp> (recording sink, Chrome JSON and DOT
//                writers), <causal/queue.hpp>, <causal/semaphore.hpp>,
//                docs/observability.md.
#pragma once

#include <causal/axis.hpp>
#include <causal/config.hpp>
#include <causal/frontier.hpp>
#include <causal/result.hpp>

#include <chrono>
#include <cstdint>
#include <span>
#include <string_view>

/// 1 (default): producers test their trace_sink pointer at every hook site.
/// 0: hook sites compile to nothing; set_trace_sink() still stores the
/// pointer (no type changes layout), but nothing is ever reported.
#ifndef CAUSAL_ENABLE_TRACE_HOOKS
#define CAUSAL_ENABLE_TRACE_HOOKS 1
#endif

CAUSAL_BEGIN_NAMESPACE

class trace_sink;

//===-- helpers -------------------------------------------------------------===//

/// True when hooks are compiled in and `sink` is set: the one test at every
/// hook site.
[[nodiscard]] CAUSAL_ALWAYS_INLINE constexpr bool traced(const trace_sink* sink) noexcept {
  return CAUSAL_ENABLE_TRACE_HOOKS != 0 && sink != nullptr;
}

/// Returns steady_clock's now in nanoseconds: the time stamp of every event.
[[nodiscard]] inline std::uint64_t trace_now_ns() noexcept {
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count());
}

/// The worker index of an event that did not happen on an executor worker.
inline constexpr std::uint32_t trace_no_worker = 0xffffffffu;
/// The wait index of a deferral that no wait of its own caused (it queued
/// behind an earlier deferred submission).
inline constexpr std::uint32_t trace_no_wait = 0xffffffffu;

/// How a queue met one wait (docs/queues.md tiers 0-2; tier 3 is a deferral of
/// the whole submission, reported by on_queue_deferral).
enum class trace_tier : std::uint8_t {
  reached,     ///< tier 0: value already reached; frontier imported
  same_queue,  ///< tier 1: this queue submitted the signal (FIFO orders it)
  dominated,   ///< tier 1: knowledge covers the producer (or, transitively,
               ///< the other waits of the submission do)
  device,      ///< tier 2: a device wait was issued
};

/// Returns "reached", "same_queue", "dominated" or "device".
[[nodiscard]] constexpr std::string_view to_string(trace_tier t) noexcept {
  switch (t) {
    case trace_tier::reached: return "reached";
    case trace_tier::same_queue: return "same_queue";
    case trace_tier::dominated: return "dominated";
    case trace_tier::device: return "device";
  }
  return "unknown";
}

/// True for the tiers that issue no device wait.
[[nodiscard]] constexpr bool is_elided(trace_tier t) noexcept { return t != trace_tier::device; }

/// A frontier seen through an event: parallel spans of axes and epochs
/// (axis order) and the taint bit. Valid during the callback only.
struct trace_frontier {
  std::span<const axis> axes{};
  std::span<const std::uint64_t> epochs{};
  bool tainted = false;

  /// Views `f` (any basic_frontier).
  template <class Frontier>
  [[nodiscard]] static constexpr trace_frontier of(const Frontier& f) noexcept {
    return trace_frontier{f.axes(), f.epochs(), f.tainted()};
  }
};

//===-- queue events --------------------------------------------------------===//

/// One operation got its epoch and was handed to the backend: reported
/// after its waits (on_queue_wait, same epoch) and before its signals.
struct trace_queue_submit {
  std::uint64_t time_ns = 0;
  axis queue{};
  std::uint64_t epoch = 0;
  /// The operation converted to an integer when its type allows, else 0.
  std::uint64_t tag = 0;
  /// `backend.trace_label(op)` when the backend has it, else null.
  const char* label = nullptr;
  std::uint32_t wait_count = 0;
  std::uint32_t signal_count = 0;
  /// True when the operation had been deferred (tier 3) and pump() ran it.
  bool pumped = false;
  /// The queue's knowledge after this operation: what its signals carry.
  trace_frontier knowledge{};
};

/// The decision for wait `index` of the operation at `epoch`.
struct trace_queue_wait {
  std::uint64_t time_ns = 0;
  axis queue{};
  std::uint64_t epoch = 0;
  std::uint32_t index = 0;
  const void* semaphore = nullptr;
  std::uint64_t value = 0;
  trace_tier tier = trace_tier::device;
  /// The signalling operation the semaphore recorded for v, if any
  /// ({axis{0}, 0} when none: a host signal, an inexact or tainted answer,
  /// or a value with no submitted signal).
  frontier_entry producer{};
  /// The value of the signal the semaphore's answer came from (0: none).
  std::uint64_t signal_value = 0;
  /// The semaphore had reached v when the queue looked.
  bool reached = false;
  /// v was reached by an external signal (never elided).
  bool value_tainted = false;
  /// The answer's frontier joined the queue's knowledge.
  bool imported = false;
  /// What the semaphore answered for v (empty when it knew nothing).
  trace_frontier frontier{};
};

/// A signal the operation at `epoch` announced (submit_signal) and issued.
struct trace_queue_signal {
  std::uint64_t time_ns = 0;
  axis queue{};
  std::uint64_t epoch = 0;
  const void* semaphore = nullptr;
  std::uint64_t value = 0;
};

/// A submission held on the host (tier 3): some wait has no submitted
/// signal and the backend cannot wait before signal, or an earlier
/// submission is held and FIFO order keeps this one behind it.
struct trace_queue_deferral {
  std::uint64_t time_ns = 0;
  axis queue{};
  std::uint64_t tag = 0;
  const char* label = nullptr;
  /// Submissions held after this one was added.
  std::uint32_t held = 0;
  /// The first wait that forced it, or trace_no_wait (queued behind).
  std::uint32_t wait_index = trace_no_wait;
  /// That wait's semaphore and value (null/0 with trace_no_wait).
  const void* semaphore = nullptr;
  std::uint64_t value = 0;
};

/// The backend reported every operation up to `epoch` complete.
struct trace_queue_retire {
  std::uint64_t time_ns = 0;
  axis queue{};
  std::uint64_t epoch = 0;
};

//===-- semaphore events ----------------------------------------------------===//

/// The semaphore reached `value` (signal, device_signal, a link's relay,
/// signal_external, or a remote signal absorbed by poll()).
struct trace_semaphore_signal {
  std::uint64_t time_ns = 0;
  const void* semaphore = nullptr;
  std::uint64_t value = 0;
  /// The signalling operation, when known ({axis{0}, 0} otherwise).
  frontier_entry producer{};
  /// Reached from outside the scheduler: no frontier, value tainted.
  bool external = false;
  /// The frontier recorded for the value: what its waiters import.
  trace_frontier frontier{};
};

/// The semaphore failed (only the call whose error is recorded reports).
struct trace_semaphore_fail {
  std::uint64_t time_ns = 0;
  const void* semaphore = nullptr;
  errc code = errc::ok;
  const char* message = "";
  std::uint64_t position = 0;
};

//===-- process events ------------------------------------------------------===//

/// A worker enters drain() of `process`.
struct trace_drain_begin {
  std::uint64_t time_ns = 0;
  const void* process = nullptr;
  std::uint32_t worker = trace_no_worker;
};

/// A worker returned from drain() of `process` with this drain_result.
struct trace_drain_end {
  std::uint64_t time_ns = 0;
  const void* process = nullptr;
  std::uint32_t worker = trace_no_worker;
  bool completed = false;
  bool did_work = false;
  bool keep_active = false;
};

/// Someone dropped `count` pending wakes of `process`; `runnable` when this
/// call drove the suspend count to 0 and made it runnable.
struct trace_wake {
  std::uint64_t time_ns = 0;
  const void* process = nullptr;
  std::uint32_t worker = trace_no_worker;
  std::uint32_t count = 0;
  bool runnable = false;
};

/// `process` completed (its completion callback is about to run) with
/// `code` (errc::ok, its error, or errc::cancelled).
struct trace_complete {
  std::uint64_t time_ns = 0;
  const void* process = nullptr;
  std::uint32_t worker = trace_no_worker;
  errc code = errc::ok;
  const char* message = "";
};

//===-- trace_sink ----------------------------------------------------------===//

/// Receives trace events; override the hooks you need (each defaults to
/// doing nothing). See the file comment for the calling contract: hooks are
/// noexcept, may run concurrently, must not call back into the emitter.
class trace_sink {
 public:
  virtual ~trace_sink() = default;

  virtual void on_queue_submit(const trace_queue_submit&) noexcept {}
  virtual void on_queue_wait(const trace_queue_wait&) noexcept {}
  virtual void on_queue_signal(const trace_queue_signal&) noexcept {}
  virtual void on_queue_deferral(const trace_queue_deferral&) noexcept {}
  virtual void on_queue_retire(const trace_queue_retire&) noexcept {}
  virtual void on_semaphore_signal(const trace_semaphore_signal&) noexcept {}
  virtual void on_semaphore_fail(const trace_semaphore_fail&) noexcept {}
  virtual void on_drain_begin(const trace_drain_begin&) noexcept {}
  virtual void on_drain_end(const trace_drain_end&) noexcept {}
  virtual void on_wake(const trace_wake&) noexcept {}
  virtual void on_complete(const trace_complete&) noexcept {}

 protected:
  trace_sink() = default;
  trace_sink(const trace_sink&) = default;
  trace_sink& operator=(const trace_sink&) = default;
};

//===-- process hooks -------------------------------------------------------===//
//
// The process and executor headers call these at their hook sites (each is
// the one-branch test followed by an out-of-line emitter):
//   report_drain_begin / report_drain_end  around every drain() call, with
//                                          the worker's index;
//   report_wake                            in process::wake(n), with whether
//                                          the call made it runnable;
//   report_complete                        before the completion callback.

namespace detail {
CAUSAL_NOINLINE inline void emit_drain_begin(trace_sink& sink, const void* process,
                                             std::uint32_t worker) noexcept {
  sink.on_drain_begin(trace_drain_begin{trace_now_ns(), process, worker});
}
CAUSAL_NOINLINE inline void emit_drain_end(trace_sink& sink, const void* process,
                                           std::uint32_t worker, bool completed, bool did_work,
                                           bool keep_active) noexcept {
  sink.on_drain_end(
      trace_drain_end{trace_now_ns(), process, worker, completed, did_work, keep_active});
}
CAUSAL_NOINLINE inline void emit_wake(trace_sink& sink, const void* process, std::uint32_t worker,
                                      std::uint32_t count, bool runnable) noexcept {
  sink.on_wake(trace_wake{trace_now_ns(), process, worker, count, runnable});
}
CAUSAL_NOINLINE inline void emit_complete(trace_sink& sink, const void* process,
                                          std::uint32_t worker, const error& e) noexcept {
  sink.on_complete(trace_complete{trace_now_ns(), process, worker, e.code(), e.message().data()});
}
}  // namespace detail

/// Reports that `worker` enters drain() of `process` (no-op without a sink).
CAUSAL_ALWAYS_INLINE void report_drain_begin(trace_sink* sink, const void* process,
                                            std::uint32_t worker) noexcept {
  if (traced(sink)) [[unlikely]] {
    detail::emit_drain_begin(*sink, process, worker);
  }
}

/// Reports what drain() of `process` returned on `worker`.
CAUSAL_ALWAYS_INLINE void report_drain_end(trace_sink* sink, const void* process,
                                          std::uint32_t worker, bool completed, bool did_work,
                                          bool keep_active) noexcept {
  if (traced(sink)) [[unlikely]] {
    detail::emit_drain_end(*sink, process, worker, completed, did_work, keep_active);
  }
}

/// Reports a wake(count) of `process`; `runnable` when it drove the count to 0.
CAUSAL_ALWAYS_INLINE void report_wake(trace_sink* sink, const void* process, std::uint32_t count,
                                     bool runnable,
                                     std::uint32_t worker = trace_no_worker) noexcept {
  if (traced(sink)) [[unlikely]] {
    detail::emit_wake(*sink, process, worker, count, runnable);
  }
}

/// Reports that `process` completed with `e` (errc::ok on success).
CAUSAL_ALWAYS_INLINE void report_complete(trace_sink* sink, const void* process, const error& e,
                                         std::uint32_t worker = trace_no_worker) noexcept {
  if (traced(sink)) [[unlikely]] {
    detail::emit_complete(*sink, process, worker, e);
  }
}

CAUSAL_END_NAMESPACE
