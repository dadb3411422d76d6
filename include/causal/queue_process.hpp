// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// queue_process: the CPU queue -- a process that runs the operations a
// basic_queue submits to it, in epoch order, on the executor's workers,
// each once its device waits are met.
//
// Model (docs/executor.md "queue process", docs/adapters.md "CPU"). `basic_queue` decides,
// per submission, which waits must really be waited for (tier 2) and calls
// its backend: issue_wait for each, execute, issue_signal for each signal,
// flush. `queue_process_backend` forwards those calls here, where they fill
// one *slot* of a growing ring:
//
//   submit thread                         any thread           a worker
//   -------------                         ----------           --------
//   stage waits, op, signals in slot t
//   publish: tail = t + 1 (release)
//   arm a timepoint per wait  ---------->  timepoint fires:
//   drop the publish hold                  pending -= 1
//                                          pending == 0: ready, wake -->  drain:
//                                                                         run head's op
//                                                                         reach its signals
//                                                                         retire its epoch
//                                                                         head = h + 1
//
// Ring. Slots live in segments of SegmentSlots; the first two are part of
// the process (the ring turns over between them), more are linked on as
// the submitter needs them, so any number
// of operations may be submitted ahead of the device (a pipeline submitted
// up front is never refused). A segment the drain has finished goes to a
// recycling list the submitter takes from before it allocates, so a queue
// allocates only when it runs deeper than it ever ran before; slots never
// move (timepoints point into them). A bound is opt-in: with MaxInFlight
// != 0, a submission beyond that many operations in flight is refused
// before any effect (`resource_exhausted`).
//
// Each slot's `pending` count is its number of device waits plus one
// publish hold; every semaphore timepoint that fires drops one, and the
// thread that drops the last marks the operation ready and wakes the
// queue. The ready operations form a lock-free list in the ring itself:
// because a queue's operations must complete in epoch order (docs/queues.md,
// and an elided wait orders the *whole* next operation), the drain runs
// the ring's ready prefix from its head and sleeps at the first operation
// that still waits. A slot holds up to max_waits device waits; more
// staged before one operation (a block pool's fence waits come first) are
// merged per semaphore and otherwise spill into a wait barrier, a slot
// with no work and no epoch that the operation follows in FIFO order, so
// no wait is ever dropped for room. A slot keeps `InlineTimepoints`
// timepoint nodes; an
// operation with more device waits arms them in turn (the node that fires
// re-arms itself on the next unarmed wait before dropping its count), so
// every wait is still met before the operation runs.
//
// An operation is
//   - a host call: a function pointer and user data, or a small trivially
//     copyable callable stored inline; runs on the draining worker. Stream-
//     ordered alloca/dealloca and other host work are host calls;
//   - a dispatch: a recorded command_buffer, issued as a block processor
//     (one per queue, re-pointed at each buffer) that every worker with
//     room may help drain; the queue sleeps until the processor is
//     released, then completes the operation;
//   - a marker (no work): only its signals, e.g. to join waits.
// When it completes, each of its signals' semaphores is reached with
// device_signal(v) (which publishes the frontier basic_queue recorded at
// submit), then the epoch is retired (basic_queue::retire, and through it
// a completion tracker).
//
// Failure is sticky, as on a device stream: a host call that returns an
// error, or a wait whose semaphore fails below its value, fails the
// operation's signals with that error and fails the queue. Every later
// operation then fails its signals with the same error without running,
// and no epoch past the last good one is ever retired -- so no frontier can
// claim, through this axis, an operation that never ran. An operation that
// fails without running fails its signals only once every wait of it is
// met or failed: its device waits (a failed one does not drop the others)
// and its *guards*, the waits basic_queue elided at tier 1
// (guard_elided_wait), which the drain waits for on the slot's first node
// (await_guard). A failure thus never overtakes a healthy signal that an
// elided wait stands for (docs/queues.md, "Elision never changes an
// outcome"). A closing queue waits for neither.
//
// Sleep handshake. Before sleeping the drain adds a suspend count, sets
// `sleeping` and re-checks the head; a thread that makes an operation ready
// exchanges `sleeping` to false and wakes the queue only if it was true.
// Both sides use seq_cst, so either the drain sees the ready operation or
// the readier sees `sleeping` (Dekker): no lost wake-up, never a double
// wake.
//
// Idle handshake. wait_idle() announces itself in `idle_waiters` (a seq_cst
// read-modify-write) and re-reads head before it parks; the drain advances
// head with release stores and, before it stops draining (sleep, a
// dispatch, the quantum), reads `idle_waiters` with a read-modify-write
// too. A plain load would not do: a release store followed by a load may
// be reordered (x86's store buffer does it), so the drain could read no
// waiter while the waiter still reads the old head -- and the last
// operation's waiter would park forever. Two read-modify-writes of one
// word are ordered: one of them sees the other.
//
// Thread safety: the backend side (stage_*, publish) is called by the one
//                thread that submits to the owning basic_queue at a time;
//                timepoints fire on any thread; the drain runs on one
//                worker at a time (wake budget 1). Observers are safe
//                from any thread.
// Memory order:  what the submitter wrote before publishing a slot
//                happens-before the operation runs (tail release / acquire);
//                what a signaller wrote before reaching a waited value
//                happens-before the operation (timepoint, then pending
//                acq_rel); what the operation wrote happens-before its
//                signals are reached and before head advances (release),
//                which frees the slot for the submitter (acquire).
// Blocking/allocation: the drain and the timepoint callbacks never
//                allocate, never block and take no lock besides the
//                semaphores' own spin locks (device_signal, add_timepoint).
//                The submitter allocates a segment only when more
//                operations are in flight than ever before (make_room).
//                wait_idle() blocks the calling host thread.
// Size:          two inline segments of SegmentSlots slots of about 1 KiB
//                (16 waits, 16 signals, InlineTimepoints nodes, the
//                operation), ~64 KiB by default, plus a block processor;
//                each further segment the same on the heap, kept until
//                destruction. Keep the object alive in one place (not
//                movable).
// Configuration: Semaphore (basic_semaphore instance), MaxInFlight (0: no
//                limit, the default; else operations submitted but not
//                completed, at most), SegmentSlots (slots per segment, a
//                power of two), InlineTimepoints (timepoint nodes per slot).
// See also:      <causal/queue.hpp>, <causal/block_processor.hpp>,
//                <causal/executor.hpp>, adapters/cpu (causal::cpu::queue
//                puts a basic_queue and a queue process together).
#pragma once

#include <causal/block_processor.hpp>
#include <causal/config.hpp>
#include <causal/ext/park_word.hpp>
#include <causal/process.hpp>
#include <causal/queue.hpp>
#include <causal/result.hpp>
#include <causal/semaphore.hpp>

#include <array>
#include <chrono>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <thread>
#include <type_traits>
#include <utility>

CAUSAL_BEGIN_NAMESPACE

//===-- queue_operation -----------------------------------------------------===//

/// What a host call learns about the operation it runs.
struct host_call_context {
  std::uint64_t epoch = 0;   ///< the operation's epoch on its queue
  std::uint32_t worker = 0;  ///< worker_context::worker_index() of the caller
};

/// A host call: returns ok, or an error that fails the operation (and the
/// queue). Must not throw and must not block on later work of its queue.
using host_call_fn = status (*)(void* user_data, const host_call_context& context) noexcept;

/// One operation of a CPU queue: a host call, a dispatch of a command
/// buffer, or a marker, with an optional label for traces.
/// Default-constructible, trivially copyable (a deferred submission keeps
/// a copy), 96 bytes.
class queue_operation {
 public:
  enum class kind : std::uint8_t { marker, host_call, dispatch };

  /// Bytes a callable may occupy to be stored inline by host().
  static constexpr std::size_t inline_capacity = 48;

  /// A marker: no work, only the submission's waits and signals.
  constexpr queue_operation() noexcept = default;

  /// A host call of `fn(user_data, context)`.
  [[nodiscard]] static queue_operation host(host_call_fn fn, void* user_data = nullptr) noexcept {
    CAUSAL_ASSERT(fn != nullptr, "queue_operation::host: null function");
    queue_operation op;
    op.kind_ = kind::host_call;
    op.call_ = fn;
    op.user_data_ = user_data;
    return op;
  }

  /// A host call of a callable stored inline: `f(context)` or `f()`,
  /// returning `status` or void (void means success). The callable must be
  /// trivially copyable (capture pointers and values, not owning objects)
  /// and fit in inline_capacity bytes, so the operation stays a plain
  /// copyable value. One that may throw is called inside a try block: an
  /// exception fails the operation (errc::failed_precondition, "host call
  /// threw: <what()>", or the exception's type when it is not a
  /// std::exception) like an error it returned, instead of ending the
  /// program on a worker thread.
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, queue_operation>)
  [[nodiscard]] static queue_operation host(F&& f) noexcept {
    using callable = std::remove_cvref_t<F>;
    static_assert(std::is_trivially_copyable_v<callable>,
                  "queue_operation::host: the callable must be trivially copyable "
                  "(capture pointers or values, not owning objects)");
    static_assert(sizeof(callable) <= inline_capacity,
                  "queue_operation::host: the callable is larger than inline_capacity");
    static_assert(alignof(callable) <= alignof(std::max_align_t),
                  "queue_operation::host: the callable is over-aligned");
    static_assert(std::is_invocable_v<callable&, const host_call_context&> || std::is_invocable_v<callable&>,
                  "queue_operation::host: the callable must take const host_call_context& or nothing");
    queue_operation op;
    op.kind_ = kind::host_call;
    ::new (static_cast<void*>(op.inline_)) callable(std::forward<F>(f));
    op.call_ = [](void* self, const host_call_context& context) noexcept -> status {
      auto& fn = *std::launder(reinterpret_cast<callable*>(self));
      return call_host(fn, context);
    };
    op.inline_call_ = true;
    return op;
  }

  /// A dispatch of `commands` (which must stay alive and unchanged until
  /// the operation completes) as a block processor with `options`.
  [[nodiscard]] static queue_operation dispatch(const command_buffer& commands,
                                                block_options options = {}) noexcept {
    queue_operation op;
    op.kind_ = kind::dispatch;
    op.commands_ = &commands;
    op.options_ = options;
    return op;
  }

  /// Returns a copy named `label` in traces (a string that outlives the
  /// operation, e.g. a literal).
  [[nodiscard]] queue_operation named(const char* label) const noexcept {
    queue_operation op = *this;
    op.label_ = label;
    return op;
  }
  /// The name given by named(), else "host call", "dispatch" or "marker".
  [[nodiscard]] const char* label() const noexcept {
    if (label_ != nullptr) return label_;
    switch (kind_) {
      case kind::host_call: return "host call";
      case kind::dispatch: return "dispatch";
      case kind::marker: break;
    }
    return "marker";
  }

  [[nodiscard]] kind what() const noexcept { return kind_; }
  [[nodiscard]] const command_buffer* commands() const noexcept { return commands_; }
  [[nodiscard]] block_options options() const noexcept { return options_; }

  /// Runs a host call (precondition: what() == kind::host_call).
  /// Calls a host-call callable with or without the context, mapping a
  /// void return to success and an exception (when it may throw) to an
  /// error.
  template <class Callable>
  static status call_host(Callable& fn, const host_call_context& context) noexcept {
    constexpr bool with_context = std::is_invocable_v<Callable&, const host_call_context&>;
    const auto call = [&]() -> decltype(auto) {
      if constexpr (with_context) {
        return fn(context);
      } else {
        return fn();
      }
    };
    const auto invoke = [&]() -> status {
      if constexpr (std::is_void_v<decltype(call())>) {
        call();
        return status{};
      } else {
        return status(call());
      }
    };
    constexpr bool nothrow = with_context ? std::is_nothrow_invocable_v<Callable&, const host_call_context&>
                                          : std::is_nothrow_invocable_v<Callable&>;
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
    if constexpr (!nothrow) {
      try {
        return invoke();
      } catch (...) {
        return status{error{errc::failed_precondition, detail::current_exception_message("host call threw")}};
      }
    }
#endif
    return invoke();
  }

  status call(const host_call_context& context) const noexcept {
    void* target = inline_call_ ? const_cast<std::byte*>(inline_) : user_data_;
    return call_(target, context);
  }

 private:
  alignas(std::max_align_t) std::byte inline_[inline_capacity]{};
  host_call_fn call_ = nullptr;
  union {
    void* user_data_ = nullptr;
    const command_buffer* commands_;
  };
  const char* label_ = nullptr;
  block_options options_{};
  kind kind_ = kind::marker;
  bool inline_call_ = false;
};

static_assert(std::is_trivially_copyable_v<queue_operation>,
              "queue_operation must stay trivially copyable (deferred submissions copy it)");

//===-- basic_queue_process -------------------------------------------------===//

/// MaxInFlight value of a queue process that takes any number of
/// operations in flight (the default).
inline constexpr std::size_t unlimited_in_flight = 0;

/// The CPU queue's process; see the file comment. Bind it to an executor
/// with `start(executor)` and submit to it through a basic_queue over
/// queue_process_backend (or causal::cpu::queue, which does both).
template <class Semaphore = semaphore, std::size_t MaxInFlight = unlimited_in_flight,
          std::size_t SegmentSlots = 32, std::size_t InlineTimepoints = 2>
class basic_queue_process : public process {
  static_assert(SegmentSlots >= 2 && (SegmentSlots & (SegmentSlots - 1)) == 0,
                "basic_queue_process: SegmentSlots must be a power of two >= 2");
  static_assert(InlineTimepoints >= 1, "basic_queue_process: InlineTimepoints must be >= 1");

 public:
  using semaphore_type = Semaphore;
  /// Most device waits and signals one operation may carry (basic_queue's).
  static constexpr std::size_t max_waits = 16;
  static constexpr std::size_t max_signals = 16;
  /// Operations in flight at most (0: no limit).
  static constexpr std::size_t max_in_flight = MaxInFlight;
  static constexpr std::size_t segment_slots = SegmentSlots;
  /// Operations run per drain call before the worker gets to look at
  /// other processes.
  static constexpr std::uint32_t drain_quantum = 32;

  /// Called with each retired epoch (in increasing order) by the draining
  /// worker; basic_queue::retire is the usual target.
  using retire_fn = void (*)(void* context, std::uint64_t epoch) noexcept;
  using fail_fn = void (*)(void* context, const error& e) noexcept;

  basic_queue_process() noexcept : process(&drain_thunk, nullptr) {
    dispatcher_.set_user_data(this);
    dispatcher_.set_completion(&on_dispatch_complete);
    dispatcher_.set_release(&on_dispatch_release);
    set_release(&on_release);
    // Asleep from the start: the first ready operation wakes it.
    suspend(1);
    sleeping_.store(true, std::memory_order_relaxed);
  }

  basic_queue_process(const basic_queue_process&) = delete;
  basic_queue_process& operator=(const basic_queue_process&) = delete;

  /// Fails what is still waiting (errc::cancelled: "queue closed"), waits
  /// for the operations already running, and takes the process off its
  /// executor. The executor must still be alive (it refuses to die while
  /// the queue is bound); with no worker thread, this thread drives it.
  ~basic_queue_process() {
    close();
    free_segments();
  }

  /// What the destructor does, for owners that must finish the queue
  /// before their other members go (idempotent; no submits afterwards).
  void close() noexcept {
    if (closed_) return;
    closed_ = true;
    shutdown();
  }

  /// Binds the queue to `executor`; call once, before the first submit.
  /// The executor keeps the queue on its list of bound queues until the
  /// queue closes, and refuses to be destroyed before (docs/lifetimes.md).
  template <class Executor>
  void start(Executor& ex) noexcept {
    CAUSAL_ASSERT(!is_submitted(), "queue_process::start: already started");
    ex.submit(*this);
    bound_.owner = this;
    bound_.describe = &describe_bound;
    executor_ = detail::process_access::executor(*this);
    if (executor_ != nullptr) executor_->bind_long_lived(bound_);
  }

  /// Names the queue in lifetime diagnostics (an executor destroyed before
  /// it lists it as "<kind> on axis <axis>").
  void set_identity(const char* kind, std::uint64_t axis) noexcept {
    kind_ = kind;
    axis_ = axis;
  }

  /// Sets the retire callback (before the first submit).
  void on_retire(retire_fn fn, void* context) noexcept {
    retire_ = fn;
    retire_context_ = context;
  }

  /// Sets the callback told, once, that the queue failed and with what
  /// error (before the first submit). It runs on the worker that failed
  /// the queue, after every earlier epoch was retired.
  void on_fail(fail_fn fn, void* context) noexcept {
    fail_ = fn;
    fail_context_ = context;
  }

  /// Makes every completed epoch e also reach `timeline` at e (a plain
  /// signal, no frontier), and a failure of the queue fail it: a timeline
  /// of the queue's own progress that a block pool can register for its
  /// axis and fence on (pool.hpp, path (c)). Set before the first submit,
  /// and before `timeline` is shared: its writes are reserved for this
  /// queue (semaphore.hpp, reserve_writes), since a signal from anyone else
  /// would mark epochs complete that have not run, and a pool would reuse
  /// their blocks while they may still be in use.
  void set_progress_timeline(Semaphore* progress) noexcept {
    progress_ = progress;
    if (progress_ != nullptr) detail::reserve_writes_if_able(*progress_, this);
  }

  //===-- backend side (one submitting thread) --===//

  /// Makes sure the next operation has a slot: links a segment (recycled,
  /// or allocated) when the next slot is the last of its segment, so the
  /// drain always finds the one after. Errors (nothing changes):
  /// `resource_exhausted` when MaxInFlight operations are in flight, or
  /// memory runs out. Only the submitter adds operations, so a success
  /// holds until its next submit. Called before a submission's first
  /// effect (cpu::queue::submit) and again when a stage opens.
  status make_room() noexcept {
    const std::uint64_t t = tail_.load(std::memory_order_relaxed);
    if constexpr (MaxInFlight != unlimited_in_flight) {
      // acquire: pairs with the drain's release of head.
      if (t - head_.load(std::memory_order_acquire) >= MaxInFlight) {
        return error{errc::resource_exhausted,
                     "queue_process: MaxInFlight operations in flight; wait for some to complete",
                     MaxInFlight};
      }
    }
    if (t % SegmentSlots == SegmentSlots - 1 && tail_segment_->next == nullptr) {
      segment* next = take_spare();
      if (next == nullptr) next = new (std::nothrow) segment;
      if (next == nullptr) {
        return error{errc::resource_exhausted, "queue_process: out of memory for a ring segment"};
      }
      next->next = nullptr;
      next->base = tail_segment_->base + SegmentSlots;
      // Published to the drain by the tail release that publishes this
      // segment's predecessor's last slot.
      tail_segment_->next = next;
    }
    return status{};
  }

  /// Whether a new operation fits now without allocating or exceeding
  /// MaxInFlight (make_room() is what a submitter calls).
  [[nodiscard]] bool has_room() const noexcept {
    const std::uint64_t t = tail_.load(std::memory_order_relaxed);
    if constexpr (MaxInFlight != unlimited_in_flight) {
      if (t - head_.load(std::memory_order_acquire) >= MaxInFlight) return false;
    }
    return t % SegmentSlots != SegmentSlots - 1 || tail_segment_->next != nullptr;
  }

  /// Ring segments allocated so far (beyond the inline one).
  [[nodiscard]] std::size_t allocated_segments() const noexcept { return allocated_segments_; }

  /// Stages a device wait of the next operation. Any number may be staged
  /// (a block pool's fence waits come before the operation's own): a wait
  /// on a semaphore already waited for keeps the higher value, and when a
  /// slot's max_waits are taken the waits staged so far are published as a
  /// wait barrier of their own -- a slot with no work, no epoch and no
  /// signals -- which the operation follows in FIFO order. Errors: the
  /// queue's failure; `resource_exhausted` when memory runs out for the
  /// barrier's next slot.
  status stage_wait(Semaphore& s, std::uint64_t v) noexcept {
    if (status st = open_stage(); !st) return st;
    for (std::size_t i = 0; i < staging().wait_count; ++i) {
      wait_record& w = staging().waits[i];
      if (w.semaphore == &s) {
        // S >= max(v, v') implies both waits.
        if (w.value < v) w.value = v;
        return status{};
      }
    }
    if (status st = room_for_wait(); !st) return st;
    slot& sl = staging();
    sl.waits[sl.wait_count++] = wait_record{&s, v};
    return status{};
  }

  /// Stages a wait the operation does not wait for (basic_queue elided it
  /// at tier 1) but must not fail its signals before: should the
  /// operation fail without running, its signals fail only once S >= v is
  /// met or S fails (queue.hpp, "Failure"). Errors as stage_wait.
  status guard_elided_wait(Semaphore& s, std::uint64_t v) noexcept {
    if (status st = open_stage(); !st) return st;
    if (status st = room_for_wait(); !st) return st;
    slot& sl = staging();
    ++sl.guard_count;
    sl.waits[max_waits - sl.guard_count] = wait_record{&s, v};
    return status{};
  }

  /// Stages the next operation itself, with its epoch.
  status stage_operation(const queue_operation& op, std::uint64_t epoch) noexcept {
    if (status st = open_stage(); !st) return st;
    if (const error* f = failure_ptr(); f != nullptr) return abandon(*f);
    slot& sl = staging();
    sl.op = op;
    sl.epoch = epoch;
    return status{};
  }

  /// Stages a signal of the next operation.
  status stage_signal(Semaphore& s, std::uint64_t v) noexcept {
    if (status st = open_stage(); !st) return st;
    slot& sl = staging();
    if (sl.signal_count == max_signals) {
      return abandon(error{errc::invalid_argument, "queue_process: more than max_signals signals"});
    }
    sl.signals[sl.signal_count++] = signal_record{&s, v};
    return status{};
  }

  /// Publishes the staged operation and arms its waits.
  status publish() noexcept {
    if (!staging_open_) return status{};
    staging_open_ = false;
    const std::uint64_t t = tail_.load(std::memory_order_relaxed);
    slot& sl = tail_segment_->slots[t % SegmentSlots];
    const auto n = static_cast<std::uint32_t>(sl.wait_count);
    const std::uint32_t armed = n < InlineTimepoints ? n : static_cast<std::uint32_t>(InlineTimepoints);
    sl.pending.store(n + 1, std::memory_order_relaxed);
    sl.next_unarmed.store(armed, std::memory_order_relaxed);
    for (std::uint32_t i = 0; i < armed; ++i) {
      sl.nodes[i].reset(sl.waits[i].value, &on_wait_met, &sl);
    }
    ++published_;
    // release: the slot's contents (and a linked next segment) before the
    // drain (acquire) reads them. seq_cst as well: the drain's sleep check
    // reads tail_ with seq_cst right after announcing it sleeps, and only a
    // store in the single total order is certain to be seen by it when a
    // waker on another thread saw the drain still awake (the hardware's
    // later read-modify-write would publish it, the language does not).
    tail_.store(t + 1, std::memory_order_seq_cst);
    // The submitter's side moves on; make_room linked the next segment.
    if ((t + 1) % SegmentSlots == 0) tail_segment_ = tail_segment_->next;
    for (std::uint32_t i = 0; i < armed; ++i) {
      sl.waits[i].semaphore->add_timepoint(sl.nodes[i]);  // may fire inline
    }
    drop(sl, 1);  // the publish hold
    return status{};
  }

  //===-- observers (any thread) --===//

  /// Slots published so far: operations, and wait barriers (stage_wait).
  [[nodiscard]] std::uint64_t published() const noexcept { return published_; }
  /// Operations completed (run or failed) so far.
  [[nodiscard]] std::uint64_t completed() const noexcept {
    return head_.load(std::memory_order_acquire);
  }
  /// The queue's sticky failure, if any.
  [[nodiscard]] status queue_status() const noexcept {
    if (const error* f = failure_ptr(); f != nullptr) return *f;
    return {};
  }
  /// Dispatches issued as block processors so far.
  [[nodiscard]] std::uint64_t dispatches() const noexcept {
    return dispatches_.load(std::memory_order_relaxed);
  }

  /// Blocks the calling host thread until every operation published so far
  /// has completed, or `deadline` passes (`errc::timeout`). Returns the
  /// queue's failure, if it failed. Must not be called from a worker.
  status wait_idle(std::chrono::steady_clock::time_point deadline =
                       std::chrono::steady_clock::time_point::max()) noexcept {
    const std::uint64_t target = tail_.load(std::memory_order_relaxed);
    if (executor_ != nullptr && executor_->workers == 0) return help_until_idle(target, deadline);
    idle_waiters_.fetch_add(1, std::memory_order_seq_cst);
    bool reached = true;
    for (;;) {
      // seq_cst: the drain advances head, then reads idle_waiters_; we
      // announced ourselves, then read head (Dekker, as in the sleep
      // handshake), and the word's value is read before head so that a
      // notify after our check changes it.
      const std::uint32_t seen = idle_word_.load(std::memory_order_seq_cst);
      if (head_.load(std::memory_order_seq_cst) >= target) break;
      if (!idle_word_.wait_until(seen, deadline)) {
        reached = head_.load(std::memory_order_acquire) >= target;
        break;
      }
    }
    idle_waiters_.fetch_sub(1, std::memory_order_relaxed);
    if (!reached) return error{errc::timeout, "queue_process::wait_idle: deadline passed"};
    return queue_status();
  }

  /// Describes, for up to `max_ops` operations not finished yet (oldest
  /// first), what each still waits for: the semaphore, the value, its
  /// payload now, and who will signal it -- the operation (axis, epoch)
  /// that submitted that value, or nobody. One line per unmet wait. For a
  /// stall: a wait no one will signal, or a cycle across queues (follow
  /// the producers' axes). Writes at most `size` bytes (NUL-terminated,
  /// cut with "..." when longer) and returns the length. The submitting
  /// thread only (it alone reuses slots); never allocates. Empty when
  /// every operation has finished.
  std::size_t describe_pending(char* out, std::size_t size, std::size_t max_ops = 8) const noexcept {
    text_writer w{out, size};
    const std::uint64_t t = tail_.load(std::memory_order_relaxed);
    const segment* seg = head_segment_shared_.load(std::memory_order_acquire);
    const std::uint64_t head = head_.load(std::memory_order_acquire);
    std::size_t shown = 0;
    for (std::uint64_t h = seg->base; h < t && shown < max_ops; ++h) {
      if (h - seg->base == SegmentSlots) seg = seg->next;
      if (h < head) continue;
      const slot& sl = seg->slots[h - seg->base];
      w.add("%s on axis %llu: %s at epoch %llu", kind_, static_cast<unsigned long long>(axis_),
            sl.epoch == 0 ? "wait barrier" : sl.op.label(), static_cast<unsigned long long>(sl.epoch));
      ++shown;
      if (sl.failed.load(std::memory_order_acquire)) {
        // A failed wait may name a semaphore destroyed since: read none.
        w.add(": failed, finishing\n");
        continue;
      }
      bool any = false;
      for (std::size_t i = 0; i < sl.wait_count; ++i) {
        const wait_record& wr = sl.waits[i];
        const std::uint64_t now = wr.semaphore->value();
        if (now >= wr.value) continue;
        any = true;
        describe_wait(w, *wr.semaphore, wr.value, now);
      }
      w.add(any ? "\n" : ": its waits are met; runs next\n");
    }
    if (shown == max_ops && t > head + max_ops) w.add("...\n");
    return w.length();
  }

 private:
  /// snprintf appends into a fixed buffer, ending in "..." when cut.
  struct text_writer {
    char* out;
    std::size_t size;
    std::size_t used = 0;
    template <class... Args>
    void add(const char* format, Args... args) noexcept {
      if (size == 0 || used + 1 >= size) return;
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#pragma GCC diagnostic ignored "-Wformat-security"
#endif
      const int n = std::snprintf(out + used, size - used, format, args...);
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
      if (n < 0) return;
      if (used + static_cast<std::size_t>(n) >= size) {
        used = size - 1;
        if (size > 4) std::memcpy(out + size - 4, "...", 4);
        return;
      }
      used += static_cast<std::size_t>(n);
    }
    [[nodiscard]] std::size_t length() const noexcept { return used; }
  };

  static void describe_wait(text_writer& w, const Semaphore& s, std::uint64_t v,
                            std::uint64_t now) noexcept {
    if (const auto f = detail::failure_below(s, v)) {
      w.add("\n  waits on semaphore %p >= %llu: it failed at %llu (%.*s)",
            static_cast<const void*>(&s), static_cast<unsigned long long>(v),
            static_cast<unsigned long long>(now), static_cast<int>(f->message().size()),
            f->message().data());
      return;
    }
    const auto at = s.frontier_at(v);
    if (at && at->has_producer()) {
      w.add("\n  waits on semaphore %p >= %llu (now %llu), which the operation at epoch %llu of "
            "axis %llu will signal",
            static_cast<const void*>(&s), static_cast<unsigned long long>(v),
            static_cast<unsigned long long>(now), static_cast<unsigned long long>(at->producer.epoch),
            static_cast<unsigned long long>(at->producer.axis.raw()));
    } else {
      w.add("\n  waits on semaphore %p >= %llu (now %llu), which no submitted operation signals: "
            "only a host signal can meet it",
            static_cast<const void*>(&s), static_cast<unsigned long long>(v),
            static_cast<unsigned long long>(now));
    }
  }

  struct wait_record {
    Semaphore* semaphore = nullptr;
    std::uint64_t value = 0;
  };
  struct signal_record {
    Semaphore* semaphore = nullptr;
    std::uint64_t value = 0;
  };
  struct slot {
    std::atomic<std::uint32_t> pending{0};       // unmet waits + publish hold
    std::atomic<std::uint32_t> next_unarmed{0};  // next wait a fired node arms
    std::atomic<bool> failed{false};             // a wait's semaphore failed
    bool dispatched = false;                     // drain side: dispatch issued
    bool guarding = false;                       // drain side: nodes[0] waits for a guard
    std::size_t wait_count = 0;                  // device waits: waits[0, wait_count)
    std::size_t guard_count = 0;                 // guards: waits[max_waits - guard_count, max_waits)
    std::size_t signal_count = 0;
    std::uint64_t epoch = 0;
    basic_queue_process* owner = nullptr;
    error failure{};
    queue_operation op{};
    std::array<wait_record, max_waits> waits{};
    std::array<signal_record, max_signals> signals{};
    std::array<semaphore_timepoint, InlineTimepoints> nodes{};
  };

  /// SegmentSlots slots in index order: slots[i] is operation base + i.
  struct segment {
    std::array<slot, SegmentSlots> slots{};
    std::uint64_t base = 0;
    /// The segment after this one in the ring; set by the submitter before
    /// it publishes this segment's last slot.
    segment* next = nullptr;
    /// Link of the recycling lists (not the ring).
    segment* free_next = nullptr;
  };

  //===-- segments --===//

  /// A recycled segment, or null. Submitter only.
  segment* take_spare() noexcept {
    if (spare_ == nullptr) {
      // acquire: the drain's writes to the segments it recycled.
      spare_ = recycled_.exchange(nullptr, std::memory_order_acquire);
    }
    segment* got = spare_;
    if (got != nullptr) spare_ = got->free_next;
    if (got == nullptr) ++allocated_segments_;
    return got;
  }

  /// Hands a finished segment to the submitter for reuse. Drain only.
  void recycle(segment* done) noexcept {
    done->free_next = recycled_.load(std::memory_order_relaxed);
    // release: the drain's last reads of the segment before the submitter
    // (acquire) rewrites it. The submitter only ever takes the whole list,
    // so a push never races a pop of the same node.
    while (!recycled_.compare_exchange_weak(done->free_next, done, std::memory_order_release,
                                            std::memory_order_relaxed)) {
    }
  }

  /// Frees every heap segment. Only once the process is closed.
  void free_segments() noexcept {
    auto release = [this](segment* seg) noexcept {
      if (seg != &first_segment_ && seg != &second_segment_) delete seg;
    };
    for (segment* seg = head_segment_; seg != nullptr;) {
      segment* next = seg->next;
      release(seg);
      seg = next;
    }
    for (segment* list : {spare_, recycled_.exchange(nullptr, std::memory_order_acquire)}) {
      for (segment* seg = list; seg != nullptr;) {
        segment* next = seg->free_next;
        release(seg);
        seg = next;
      }
    }
    head_segment_ = nullptr;
    spare_ = nullptr;
  }

  //===-- staging --===//

  slot& staging() noexcept {
    return tail_segment_->slots[tail_.load(std::memory_order_relaxed) % SegmentSlots];
  }

  status open_stage() noexcept {
    if (staging_open_) return status{};
    if (status room = make_room(); !room) return room;
    slot& sl = staging();
    sl.owner = this;
    sl.wait_count = 0;
    sl.guard_count = 0;
    sl.guarding = false;
    sl.signal_count = 0;
    sl.op = queue_operation{};
    sl.epoch = 0;
    sl.dispatched = false;
    sl.failed.store(false, std::memory_order_relaxed);
    staging_open_ = true;
    return status{};
  }

  /// Makes room in the staging slot for one more wait or guard. Device
  /// waits fill slot.waits from the front, guards from the back; when they
  /// meet, the device waits staged so far are published as a wait barrier
  /// of their own -- a slot with no work, no epoch and no signals, which
  /// the operation follows in FIFO order -- and the guards move on to the
  /// operation's new slot. Only waits are staged by then (basic_queue
  /// issues waits, then the operation, then its signals).
  status room_for_wait() noexcept {
    slot& sl = staging();
    if (sl.wait_count + sl.guard_count < max_waits) return status{};
    std::array<wait_record, max_waits> guards;
    const std::size_t guard_count = sl.guard_count;
    for (std::size_t i = 0; i < guard_count; ++i) guards[i] = sl.waits[max_waits - 1 - i];
    sl.guard_count = 0;
    sl.op = queue_operation{};
    sl.epoch = 0;
    (void)publish();
    if (status st = open_stage(); !st) return st;
    slot& next = staging();
    for (std::size_t i = 0; i < guard_count; ++i) next.waits[max_waits - 1 - i] = guards[i];
    next.guard_count = guard_count;
    return status{};
  }

  status abandon(const error& e) noexcept {
    staging_open_ = false;
    return e;
  }

  //===-- readiness --===//

  /// A timepoint of slot `tp.user_data()` fired: arm the node on the next
  /// unarmed wait (before dropping, so the slot cannot complete and be
  /// reused under us), then drop this wait's count. A failed wait fails the
  /// operation, but its other waits are still waited for: its signals must
  /// not fail before every wait is met or failed (queue.hpp, "Failure").
  /// Only a closing queue drops the unarmed waits at once. A node the
  /// drain armed on a guard (sl.guarding) only drops the count.
  static void on_wait_met(semaphore_timepoint& tp, status s) noexcept {
    slot& sl = *static_cast<slot*>(tp.user_data());
    if (sl.guarding) {
      sl.owner->drop(sl, 1);
      return;
    }
    const auto n = static_cast<std::uint32_t>(sl.wait_count);
    std::uint32_t drop_count = 1;
    if (!s) sl.owner->record_slot_failure(sl, s.error_value());
    if (!s && sl.owner->closing_.load(std::memory_order_relaxed)) {
      const std::uint32_t k = sl.next_unarmed.exchange(n, std::memory_order_relaxed);
      if (k < n) drop_count += n - k;
    } else {
      const std::uint32_t k = sl.next_unarmed.fetch_add(1, std::memory_order_relaxed);
      if (k < n) {
        tp.reset(sl.waits[k].value, &on_wait_met, &sl);
        sl.waits[k].semaphore->add_timepoint(tp);  // may fire inline
      }
    }
    sl.owner->drop(sl, drop_count);
  }

  void record_slot_failure(slot& sl, const error& e) noexcept {
    bool expected = false;
    if (sl.failed.compare_exchange_strong(expected, true, std::memory_order_relaxed)) {
      sl.failure = e;  // read by the drain after pending reaches 0 (acq_rel)
    }
  }

  /// Drops `n` of slot `sl`'s pending count; the thread that drops the last
  /// makes the operation ready and wakes the queue if it sleeps.
  void drop(slot& sl, std::uint32_t n) noexcept {
    // acq_rel + seq_cst: every waker's writes before the drain, and the
    // Dekker pair with sleeping_ (file comment).
    if (sl.pending.fetch_sub(n, std::memory_order_seq_cst) != n) return;
    if (sleeping_.exchange(false, std::memory_order_seq_cst)) wake();
  }

  //===-- drain (one worker at a time) --===//

  static drain_result drain_thunk(process& p, worker_context& ctx) noexcept {
    return static_cast<basic_queue_process&>(p).drain_ops(ctx);
  }

  [[nodiscard]] bool head_ready(std::uint64_t h) const noexcept {
    if (h == tail_.load(std::memory_order_seq_cst)) return false;
    return head_segment_->slots[h % SegmentSlots].pending.load(std::memory_order_seq_cst) == 0;
  }

  /// The idle handshake's drain side (file comment): after head advanced,
  /// a seq_cst read-modify-write of idle_waiters_ (a load could be
  /// reordered before the release stores of head), then the wake.
  void wake_idle_waiters() noexcept {
    // fetch_add(0): the waiter's seq_cst fetch_add and this one are ordered
    // in idle_waiters_'s modification order: either this one reads the
    // waiter's count, or the waiter's reads this one's release and so sees
    // every head store before it. (Not a fence: TSan does not model them.)
    if (idle_waiters_.fetch_add(0, std::memory_order_seq_cst) != 0) {
      idle_word_.fetch_add(1, std::memory_order_seq_cst);
      idle_word_.notify_all();
    }
  }

  drain_result drain_ops(worker_context& ctx) noexcept {
    std::uint64_t h = head_.load(std::memory_order_relaxed);
    for (std::uint32_t ran = 0; ran < drain_quantum; ++ran) {
      // acquire: the slot's contents (tail) and its waits (pending).
      if (h == tail_.load(std::memory_order_acquire) ||
          head_segment_->slots[h % SegmentSlots].pending.load(std::memory_order_acquire) != 0) {
        if (ran != 0) wake_idle_waiters();
        return go_to_sleep(h, ran != 0);
      }
      slot& sl = head_segment_->slots[h % SegmentSlots];
      status outcome;
      if (const error* f = failure_ptr(); f != nullptr) {
        outcome = *f;
      } else if (sl.failed.load(std::memory_order_relaxed)) {
        outcome = sl.failure;
      }
      if (!outcome && await_guard(sl)) continue;  // re-checks this slot's readiness
      if (outcome) {
        switch (sl.op.what()) {
          case queue_operation::kind::marker: break;
          case queue_operation::kind::host_call:
            outcome = sl.op.call(host_call_context{sl.epoch, ctx.worker_index()});
            break;
          case queue_operation::kind::dispatch:
            if (!sl.dispatched) {
              if (ran != 0) wake_idle_waiters();
              issue_dispatch(sl);
              return drain_result::sleep();
            }
            outcome = dispatch_status_;
            break;
        }
      }
      finish(sl, outcome);
      ++h;
      if (h % SegmentSlots == 0) {
        // Past the segment's last slot: the submitter linked the next one
        // before publishing that slot. The finished one is recycled.
        segment* done = head_segment_;
        head_segment_ = done->next;
        // release: shutdown() walks the ring from here (acquire).
        head_segment_shared_.store(head_segment_, std::memory_order_release);
        recycle(done);
      }
      // release: the slot is free for the submitter once head passes it.
      head_.store(h, std::memory_order_release);
    }
    wake_idle_waiters();
    return drain_result::more();
  }

  /// Before the head operation fails without running: true when one of
  /// its guards (waits elided at tier 1) is neither met nor failed, and
  /// then nodes[0] is armed on it and the slot counts one wait again. Its
  /// signals must not fail before that wait is over: the value it skipped
  /// may be a healthy signal still on its way (queue.hpp, "Failure"). A
  /// closing queue waits for none.
  bool await_guard(slot& sl) noexcept {
    if (sl.guard_count == 0 || closing_.load(std::memory_order_relaxed)) return false;
    for (std::size_t i = max_waits - sl.guard_count; i < max_waits; ++i) {
      const wait_record& g = sl.waits[i];
      if (g.semaphore->value() >= g.value || g.semaphore->failed()) continue;
      sl.guarding = true;
      sl.pending.store(1, std::memory_order_relaxed);
      sl.nodes[0].reset(g.value, &on_wait_met, &sl);
      g.semaphore->add_timepoint(sl.nodes[0]);  // may fire inline
      return true;
    }
    return false;
  }

  drain_result go_to_sleep(std::uint64_t h, bool did_work) noexcept {
    suspend(1);
    sleeping_.store(true, std::memory_order_seq_cst);
    if (head_ready(h) && sleeping_.exchange(false, std::memory_order_seq_cst)) {
      wake();  // count back to 0 while draining: drained again right away
    }
    return drain_result::sleep(did_work);
  }

  /// Issues a dispatch through the queue's block processor; the queue
  /// sleeps until the processor's release wakes it.
  void issue_dispatch(slot& sl) noexcept {
    sl.dispatched = true;
    dispatch_status_ = status{};
    dispatches_.fetch_add(1, std::memory_order_relaxed);
    suspend(1);
    dispatcher_.reset(*sl.op.commands(), sl.op.options());
    if (!dispatcher_.is_submitted()) {
      detail::process_access::bind(dispatcher_, detail::process_access::executor(*this));
      dispatcher_.wake();  // drops its submit hold: it runs
    } else {
      dispatcher_.rearm(0);
    }
  }

  static void on_dispatch_complete(process& p, status s) noexcept {
    auto& self = *static_cast<basic_queue_process*>(p.user_data());
    self.dispatch_status_ = s;  // read by the drain after the wake below
  }

  static void on_dispatch_release(process& p) noexcept {
    auto& self = *static_cast<basic_queue_process*>(p.user_data());
    self.wake();  // the suspend issue_dispatch added
  }

  /// Completes the head operation with `outcome`: reaches or fails its
  /// signals, retires its epoch (success only), fails the queue on error.
  void finish(slot& sl, const status& outcome) noexcept {
    if (outcome) {
      if (sl.epoch == 0) return;  // a wait barrier (stage_wait): nothing to reach
      for (std::size_t i = 0; i < sl.signal_count; ++i) {
        (void)sl.signals[i].semaphore->device_signal(sl.signals[i].value);
      }
      if (progress_ != nullptr) {
        const status reached = detail::signal_as_owner(*progress_, this, sl.epoch,
                                                       typename Semaphore::frontier_type{}, frontier_entry{});
        // Refused (its writes are another owner's): fail it rather than
        // leave a pool fencing on it waiting for good.
        if (reached.code() == errc::failed_precondition) (void)progress_->fail(reached.error_value());
      }
      if (retire_ != nullptr) retire_(retire_context_, sl.epoch);
      return;
    }
    fail_queue(outcome.error_value());
    const error e = *failure_ptr();
    for (std::size_t i = 0; i < sl.signal_count; ++i) {
      (void)detail::fail_signal(*sl.signals[i].semaphore, sl.signals[i].value, e);
    }
    if (progress_ != nullptr) progress_->fail(e);
  }

  void fail_queue(const error& e) noexcept {
    bool expected = false;
    if (failure_claim_.compare_exchange_strong(expected, true, std::memory_order_relaxed)) {
      failure_ = e;
      failed_.store(true, std::memory_order_release);
      if (fail_ != nullptr) fail_(fail_context_, e);
    }
  }

  [[nodiscard]] const error* failure_ptr() const noexcept {
    return failed_.load(std::memory_order_acquire) ? &failure_ : nullptr;
  }

  //===-- teardown --===//

  static void on_release(process& p) noexcept {
    auto& self = static_cast<basic_queue_process&>(p);
    self.released_.store(true, std::memory_order_release);
    self.released_.notify_all();
  }

  void shutdown() noexcept {
    if (!is_submitted()) return;
    // Fail what still waits: a node whose cancel() succeeds will never
    // fire, so its wait (and the unarmed ones) is dropped here. A node
    // that was firing as we looked may re-arm itself on a later wait, so
    // the pass repeats until the queue is idle.
    const error closed{errc::cancelled, "queue_process: queue closed with the operation pending"};
    // From now on a failing operation waits for none of its guards, and a
    // cancelled wait drops the unarmed ones with it.
    closing_.store(true, std::memory_order_relaxed);
    for (;;) {
      const std::uint64_t t = tail_.load(std::memory_order_relaxed);
      // From the drain's segment (every slot before it is finished; slots
      // of it already finished have idle nodes, whose cancel is false) to
      // the tail. This thread is the submitter: no segment is reused
      // meanwhile.
      segment* seg = head_segment_shared_.load(std::memory_order_acquire);
      for (std::uint64_t h = seg->base; h < t; ++h) {
        if (h - seg->base == SegmentSlots) seg = seg->next;
        slot& sl = seg->slots[h - seg->base];
        for (semaphore_timepoint& node : sl.nodes) {
          if (node.cancel()) on_wait_met(node, closed);
        }
      }
      if (executor_ != nullptr && executor_->workers == 0) {
        // Nobody else runs the executor: drive it here. What can still
        // run does; the cancels above failed what waits, so one more pass
        // finds the queue idle unless a wait re-armed meanwhile.
        executor_->help(*executor_);
        if (head_.load(std::memory_order_acquire) >= tail_.load(std::memory_order_relaxed)) break;
        std::this_thread::yield();
        continue;
      }
      const auto soon = std::chrono::steady_clock::now() + std::chrono::milliseconds(10);
      if (wait_idle(soon).code() != errc::timeout) break;
    }
    // Asleep now (suspend count 1, or being put to sleep): cancel resolves
    // it inline, or flags it so that the executor completes it; either way
    // release runs, and the executor no longer holds it after that.
    (void)cancel();
    if (executor_ != nullptr && executor_->workers == 0) {
      while (!released_.load(std::memory_order_acquire)) {
        executor_->help(*executor_);
        if (!released_.load(std::memory_order_acquire)) std::this_thread::yield();
      }
    }
    while (!released_.load(std::memory_order_acquire)) released_.wait(false);
    if (executor_ != nullptr) executor_->unbind_long_lived(bound_);
  }

  /// wait_idle on an executor with no worker threads: the caller drains
  /// it until the queue reaches `target` or `deadline` passes. Another
  /// thread may signal what the queue waits for meanwhile, so an
  /// operation that is not ready yet is not an error by itself.
  status help_until_idle(std::uint64_t target,
                         std::chrono::steady_clock::time_point deadline) noexcept {
    for (;;) {
      executor_->help(*executor_);
      if (head_.load(std::memory_order_acquire) >= target) return queue_status();
      if (std::chrono::steady_clock::now() >= deadline) {
        return error{errc::timeout, "queue_process::wait_idle: deadline passed"};
      }
      std::this_thread::yield();
    }
  }

  static void describe_bound(const detail::bound_link& link, char* out, std::size_t size) noexcept {
    const basic_queue_process& q = *static_cast<const bound_entry&>(link).owner;
    const std::uint64_t tail = q.tail_.load(std::memory_order_relaxed);
    const std::uint64_t head = q.head_.load(std::memory_order_relaxed);
    std::snprintf(out, size, "%s on axis %llu: %llu operation(s) not finished", q.kind_,
                  static_cast<unsigned long long>(q.axis_),
                  static_cast<unsigned long long>(tail - head));
  }

  //===-- fields --===//

  // Submitter side.
  alignas(CAUSAL_CACHELINE_SIZE) std::atomic<std::uint64_t> tail_{0};
  /// The segment holding slot tail_ (submitter only).
  segment* tail_segment_ = &first_segment_;
  /// Recycled segments the submitter took and has not reused yet (at
  /// first, the second inline segment).
  segment* spare_ = &second_segment_;
  std::size_t allocated_segments_ = 0;
  std::uint64_t published_ = 0;
  bool staging_open_ = false;
  bool closed_ = false;
  retire_fn retire_ = nullptr;
  void* retire_context_ = nullptr;
  fail_fn fail_ = nullptr;
  void* fail_context_ = nullptr;
  Semaphore* progress_ = nullptr;
  // Drain side.
  alignas(CAUSAL_CACHELINE_SIZE) std::atomic<std::uint64_t> head_{0};
  /// The segment holding slot head_ (drain only), and a copy for shutdown.
  segment* head_segment_ = &first_segment_;
  std::atomic<segment*> head_segment_shared_{&first_segment_};
  /// Segments the drain finished, for the submitter (a Treiber stack the
  /// submitter empties whole).
  std::atomic<segment*> recycled_{nullptr};
  status dispatch_status_{};
  // Wakers.
  alignas(CAUSAL_CACHELINE_SIZE) std::atomic<bool> sleeping_{false};
  alignas(CAUSAL_CACHELINE_SIZE) std::atomic<bool> failed_{false};
  std::atomic<bool> failure_claim_{false};
  error failure_{};
  std::atomic<std::uint64_t> dispatches_{0};
  std::atomic<std::uint32_t> idle_waiters_{0};
  ext::park_word idle_word_{0};
  std::atomic<bool> released_{false};
  // Lifetime: the executor's list of bound queues, and how we are named.
  struct bound_entry : detail::bound_link {
    const basic_queue_process* owner = nullptr;
  };
  bound_entry bound_{};
  detail::executor_base* executor_ = nullptr;
  const char* kind_ = "queue";
  std::uint64_t axis_ = 0;
  /// Set by shutdown(): failing operations stop waiting for their waits.
  std::atomic<bool> closing_{false};
  basic_block_processor<> dispatcher_{empty_commands()};
  segment first_segment_{};
  segment second_segment_{};

  static const command_buffer& empty_commands() noexcept {
    static const command_buffer empty;
    return empty;
  }
};

/// A CPU queue process over the default semaphore.
using queue_process = basic_queue_process<>;

//===-- queue_process_backend -----------------------------------------------===//

/// The queue_backend that forwards a basic_queue's submissions to a queue
/// process: basic_queue<Frontier, queue_process_backend<QP>> is a CPU queue.
template <class QueueProcess>
class queue_process_backend {
 public:
  /// Every signal issued here is reached or failed later by the process
  /// (basic_queue::backend_writes_later).
  static constexpr bool writes_later = true;

  using semaphore_type = typename QueueProcess::semaphore_type;
  using operation_type = queue_operation;
  /// A timepoint can be armed on a value nobody has submitted yet.
  static constexpr bool waits_before_signal = true;

  explicit queue_process_backend(QueueProcess& target) noexcept : target_(&target) {}

  status issue_wait(semaphore_type& s, std::uint64_t v) noexcept { return target_->stage_wait(s, v); }
  status execute(const operation_type& op, std::uint64_t epoch) noexcept {
    return target_->stage_operation(op, epoch);
  }
  status issue_signal(semaphore_type& s, std::uint64_t v) noexcept {
    return target_->stage_signal(s, v);
  }
  status guard_elided_wait(semaphore_type& s, std::uint64_t v) noexcept {
    return target_->guard_elided_wait(s, v);
  }
  status flush() noexcept { return target_->publish(); }
  /// The operation's name in traces (<causal/trace_sink.hpp>).
  static const char* trace_label(const operation_type& op) noexcept { return op.label(); }

  [[nodiscard]] QueueProcess& process() const noexcept { return *target_; }

 private:
  QueueProcess* target_;
};

CAUSAL_END_NAMESPACE
