// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// stream_queue: a causal queue on a CUDA/HIP stream — one axis per stream,
// device-side timeline waits and signals on 64-bit words, host completion
// that advances host semaphores and the completion tracker.
//
// Model. `basic_stream_queue<Mode>` is `causal::basic_queue` (which decides,
// per wait, whether a device wait is needed at all: docs/queues.md) over a
// `stream_backend<Mode>` that turns what is left into stream commands:
//
//   memory_ops (stream_queue)  wait S >= v: cuStreamWaitValue64(word, v,
//              GEQ); signal S := v: a write of v into the word, enqueued
//              with the operation's other writes (progress and completion
//              words) as one cuStreamBatchMemOp. The
//              device can wait before the signal exists (waits_before_signal),
//              but a wait enqueued ahead of its signal can deadlock: see
//              "Held operations" below. A device without 64-bit stream
//              memory operations
//              (CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS = 0) falls
//              back to host signalling: the signal's value reaches the word
//              and the host semaphore from the host completion function,
//              and an event recorded with it serves device waits on
//              submitted values; a wait on a value nobody has submitted is
//              then refused up front (`failed_precondition`).
//   events (event_stream_queue)  binary events, the comparison baseline:
//              signal = cudaEventRecord, wait = cudaStreamWaitEvent on the
//              event of the smallest submitted value >= v. Events cannot
//              wait for a signal not yet submitted, so such a submission is
//              held on the host (tier 3) and issued by pump().
//
// The same-stream deadlock rule. A stream executes in order, so a device
// wait for a value that only a *later* operation of the same stream writes
// never returns. The queue never creates that state: a wait for a value
// this stream signalled earlier is elided (tier 1, FIFO); a wait for a value
// nobody has submitted is remembered as *open*, and a later submission of
// this stream whose signal would be the one to reach it is refused with
// `failed_precondition` (nothing issued, nothing changed) until the value
// is submitted elsewhere or reached — as is an operation that waits for
// its own signal. In events mode such waits are held on the host (tier 3)
// instead, and the same rule refuses the signal that would be queued
// behind them. See detail::same_stream_guard.
//
// Held operations. Streams are multiplexed onto a few
// hardware queues (CUDA_DEVICE_MAX_CONNECTIONS, 8 by default; every
// library's streams count), each running its commands in enqueue order. A
// cuStreamWaitValue64 enqueued before the write it waits for can sit at
// the head of a hardware queue that the signalling stream shares, ahead
// of that write: both streams hang. So the backend enqueues a device wait
// only once its signal is *sent* (semaphore::sent: a stream has enqueued
// the write, or the value is reached on the host); a value merely
// announced is not enough (its queue may hold it, or be about to enqueue
// it on another thread). Until then the operation is *held* on the host,
// with every later operation of the queue behind it (FIFO): it has its
// epoch and its signals are announced, but nothing of it is on the stream.
// submit, pump, poll and synchronize issue held operations whose waits'
// signals have been sent since; a wait reached by then is dropped. Every
// wait is then preceded by its signal in enqueue order, so no hardware
// queue can deadlock. A held operation whose wait semaphore fails without
// reaching the value never reaches the stream: it fails with every
// operation after it (sticky, as below), and the destructor fails what is
// still held (`cancelled`).
// set_waits_before_signal(true) restores enqueue-ahead, for streams known
// to have hardware queues of their own, or waits only the host signals
// (the relay covers those).
// Events mode and the fallback hold the same way, always: there a wait
// needs the event recorded with its signal, and the core announces a
// signal before the backend records it (another thread's queue may be
// between the two). So "sent" there means the event is in the semaphore's
// ledger (send_signal marks it sent only after add_event): a wait on an
// announced value whose event is not recorded yet is held, never refused.
//
// Completion. In memory-ops mode, after each operation the stream writes
// its epoch into the queue's *completion word* (cuStreamWriteValue64 into
// a word of the context's slab, ordered after the operation's work and
// signals): no GPU->CPU->GPU round trip per submission, nothing runs on
// the host. In events mode and the host-signalling fallback (which needs
// the host to signal), and if the slab had no word left, the backend
// enqueues one host function instead (cudaLaunchHostFunc;
// hipStreamAddCallback on HIP) that stores the epoch into an atomic — it
// never calls the runtime and never blocks. The word stays counted as used
// by the stream until the stream is drained (a stream that could not be
// drained leaves it retired, never reused). poll()
// (from submit, pump, synchronize, or the caller) reads it, reaches each
// completed operation's signals on the host (device_signal: the frontier
// recorded at submit) in the order they were issued, then the progress
// timeline -- only the last signal carries the operation's own entry
// (axis, e), which claims every signal of it reached (docs/queues.md,
// "Signals of one operation") -- recycles their events, and retires the
// epoch to the core (and an attached completion_tracker). poll() also
// notices a waited semaphore that failed without reaching the value (a
// value reached before a failure stays reached): the waiting operation's
// result is void, so it and every later one fail, and the queue fails
// (sticky).
//
// When a failed operation fails its signals. Not at once: in order, behind
// every operation of the queue ahead of it (one of them may still reach a
// lower value of the same semaphore), and only once every wait of it is
// met or failed -- its device waits and its *guards*, the waits the core
// elided at tier 1 (guard_elided_wait), which may stand for a healthy
// signal still on its way. Failing a semaphore before that signal arrives
// would fail waiters that the program, with the wait issued, would have
// run (docs/queues.md, "Elision never changes an outcome"). Until then the
// operation is *doomed*: never reported complete, its signals untouched;
// poll() fails them when their turn comes. Teardown, and a stream whose
// synchronisation fails (the context is gone), fail them at once.
//
// Failure and teardown. Work already enqueued behind a device wait cannot
// be un-enqueued on CUDA: a failed operation's commands stay on the stream,
// stuck on the failed semaphore's word. While the queue lives they stay
// stuck (the operation and everything after it never run; poll() fails
// their signals and the queue, and synchronize() does so before it would
// block on such a stream). A failed operation's slot stays in the ring
// until the stream passes it, and every device wait is counted on its word
// (device_context) until then, so a word is never reused while a stream may
// still read it. The destructor, failed or not, lets the waits on failed
// semaphores through (device_context::release_failed_words: the work
// behind them then runs, on inputs never produced, and any queue whose
// operation ran that way fails its signals when it polls it),
// drains the stream (cudaStreamSynchronize) and only then destroys it: no
// host function runs into a destroyed queue, no wait polls a freed slab.
// A wait on a semaphore that is neither signalled nor failed blocks the
// destructor, as it would block cudaStreamSynchronize.
//
// Waits that a submission enqueued before a later wait of it failed stay
// on the stream too. They belong to no operation: they are kept as the
// stream's *strays*, counted on their words, never charged to the next
// operation (whose signals they must not fail), and poll() lets a stray
// through once its semaphore has failed, so it does not block later work.
//
// Devices. An owned stream is created on the context's device from any
// thread (scoped_device makes it current and restores the caller's).
//
// Thread safety: externally synchronised like a queue: one thread at a
//                time calls submit/pump/poll/synchronize/stream_alloca.
//                completed_epoch() and stats() may be read from any thread.
// Memory order:  the host function's store of the completed epoch is a
//                release and poll()'s load acquires it; the completion
//                word is loaded with acquire (the device writes it after
//                the operation). Semaphores keep their own contract.
// Blocking/allocation: submit, pump and poll never block and never
//                allocate; synchronize blocks (cudaStreamSynchronize; held
//                operations stay held), and
//                so does the destructor, even for a failed queue, until
//                every command on the stream has run (a wait on a
//                semaphore that is never signalled nor failed blocks it).
// Size:          the core (~10 KiB, mostly the deferral table) plus the
//                in-flight ring: max_in_flight * ~1.4 KiB (~88 KiB).
// Configuration: Mode (sync_mode), Semaphore (default cuda::semaphore);
//                max_in_flight, max_waits_per_op, max_guards_per_op,
//                max_open_waits (static).
// See also:      docs/queues.md, docs/adapters.md, <causal/queue.hpp>,
//                <causal/adapters/cuda/semaphore.hpp>,
//                <causal/adapters/cuda/device.hpp>, adapters/cuda/README.md.
#pragma once

#include <causal/adapters/cuda/api.hpp>
#include <causal/adapters/cuda/device.hpp>
#include <causal/adapters/cuda/driver.hpp>
#include <causal/adapters/cuda/semaphore.hpp>
#include <causal/axis.hpp>
#include <causal/config.hpp>
#include <causal/frontier.hpp>
#include <causal/pool.hpp>
#include <causal/queue.hpp>
#include <causal/result.hpp>
#include <causal/semaphore.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>

CAUSAL_BEGIN_NAMESPACE

namespace cuda {

/// How a stream waits and signals; see the file comment.
enum class sync_mode : std::uint8_t {
  memory_ops,  ///< 64-bit stream memory operations (host-signalling fallback)
  events,      ///< binary events: the comparison baseline
};

/// What a stream queue executes: `launch(stream, user, arg)` enqueues work
/// (kernels, copies) on `stream` and returns the native status (0 = ok);
/// it must not synchronise. A null `launch` is a marker (waits and signals
/// only). Trivially copyable: deferred submissions keep a copy, so `user`
/// must stay valid until the operation is issued.
struct stream_operation {
  int (*launch)(api::stream_t stream, void* user, std::uint64_t arg) noexcept = nullptr;
  void* user = nullptr;
  std::uint64_t arg = 0;
  const char* label = nullptr;  ///< the operation's name in traces (optional)
  /// Optional: whether the operation may be enqueued yet. A holding queue
  /// (every mode unless set_waits_before_signal(true)) keeps it on the
  /// host, with its later operations behind it, until this answers true,
  /// as it does a device wait whose signal is not sent. For operations
  /// that wait inside `launch` (external_timeline::wait_op), so they never
  /// sit at the head of a hardware queue ahead of the signal they wait for.
  bool (*ready)(void* user, std::uint64_t arg) noexcept = nullptr;

  /// An operation that only carries waits and signals.
  [[nodiscard]] static constexpr stream_operation marker(const char* label = nullptr) noexcept {
    return stream_operation{nullptr, nullptr, 0, label};
  }
};

namespace detail {

/// The same-stream deadlock rule as plain host logic (unit-tested without
/// a GPU): it remembers the *open* waits of one stream — device waits
/// issued (or, in events mode, held on the host) for values that nobody
/// had submitted — and refuses a submission of the same stream whose
/// signal would be the one to reach an open wait, or whose own waits name
/// a value only its own signal would reach. An open wait closes once its
/// value is reached or a signal covering it is submitted elsewhere.
template <class Semaphore, std::size_t Capacity = 16>
class same_stream_guard {
 public:
  struct open_wait {
    Semaphore* semaphore = nullptr;
    std::uint64_t value = 0;
  };

  /// Remembers a wait on `s` >= `v` when `v` is unsubmitted and unreached
  /// (anything else is not open). Errors: `resource_exhausted` when
  /// Capacity open waits are already remembered.
  status note(Semaphore& s, std::uint64_t v) noexcept {
    if (!is_open(s, v)) return status{};
    for (std::size_t i = 0; i < count_; ++i) {
      if (open_[i].semaphore == &s && open_[i].value == v) return status{};  // already open
    }
    if (count_ == Capacity) prune();
    if (count_ == Capacity) {
      return status{error{errc::resource_exhausted,
                          "stream queue: too many open waits on unsubmitted values", Capacity}};
    }
    open_[count_++] = open_wait{&s, v};
    return status{};
  }

  /// Ok when issuing a submission with `waits` and `signals` on this
  /// stream cannot wait for its own later signal; else
  /// `failed_precondition` (position: the offending signal value).
  template <class Wait, class Signal>
  status check(std::span<const Wait> waits, std::span<const Signal> signals) noexcept {
    prune();
    for (const Signal& sig : signals) {
      if (sig.semaphore == nullptr) continue;  // the core reports it
      for (std::size_t i = 0; i < count_; ++i) {
        if (open_[i].semaphore == sig.semaphore && open_[i].value <= sig.value) {
          return status{error{errc::failed_precondition,
                              "stream queue: would deadlock: this stream already waits for the "
                              "value this signal would reach (signal it from another stream or "
                              "the host first)",
                              sig.value}};
        }
      }
      for (const Wait& w : waits) {
        if (w.semaphore == sig.semaphore && w.value <= sig.value && is_open(*w.semaphore, w.value)) {
          return status{error{errc::failed_precondition,
                              "stream queue: would deadlock: the operation waits for a value "
                              "only its own signal would reach",
                              sig.value}};
        }
      }
    }
    return status{};
  }

  /// Drops waits that are no longer open.
  void prune() noexcept {
    for (std::size_t i = 0; i < count_;) {
      if (!is_open(*open_[i].semaphore, open_[i].value)) {
        open_[i] = open_[--count_];
      } else {
        ++i;
      }
    }
  }

  [[nodiscard]] std::size_t open_count() const noexcept { return count_; }
  void clear() noexcept { count_ = 0; }

 private:
  static bool is_open(const Semaphore& s, std::uint64_t v) noexcept {
    return !s.failed() && s.state_of(v) == value_state::unsubmitted;
  }

  std::array<open_wait, Capacity> open_{};
  std::size_t count_ = 0;
};

}  // namespace detail

namespace detail {

/// What the completion host function stores: `epoch` into `*target`.
struct epoch_note {
  std::atomic<std::uint64_t>* target = nullptr;
  std::uint64_t epoch = 0;
};

/// The completion host function of every stream backend, whatever its
/// mode or semaphore type: one release store, no runtime call, no
/// blocking. One function for all of them, because HIP relays a single
/// host function per process (driver.hpp). Host functions of one stream
/// run in stream order, so epochs arrive increasing.
inline void complete_epoch(void* data) noexcept {
  const epoch_note* n = static_cast<const epoch_note*>(data);
  // release: pairs with the acquire load in stream_backend::finished_epoch.
  n->target->store(n->epoch, std::memory_order_release);
}

}  // namespace detail

//===-- stream_backend ------------------------------------------------------===//

/// The queue_backend of a stream (see the file comment). Owned by the
/// core queue; reach it with `queue.backend()`.
template <sync_mode Mode, class Semaphore = semaphore>
class stream_backend {
 public:
  /// Every signal issued here is reached or failed later
  /// (basic_queue::backend_writes_later).
  static constexpr bool writes_later = true;

  using semaphore_type = Semaphore;
  using operation_type = stream_operation;
  /// Memory operations wait on the device for values not yet submitted;
  /// binary events cannot (tier 3 holds those on the host).
  static constexpr bool waits_before_signal = Mode == sync_mode::memory_ops;
  /// Operations issued and not yet seen complete by poll().
  static constexpr std::size_t max_in_flight = 64;
  /// Device waits one operation may carry (a submission's, plus the
  /// block pool's fence waits issued before it).
  static constexpr std::size_t max_waits_per_op = 24;
  static constexpr std::size_t max_signals_per_op = 16;
  /// Waits one operation may guard (guard_elided_wait): the core's max_waits.
  static constexpr std::size_t max_guards_per_op = 16;

  /// Uses `stream` when given (not owned), else creates a non-blocking
  /// stream on `dev` (owned). See setup_status().
  explicit stream_backend(device_context& dev, api::stream_t stream = nullptr) noexcept
      : dev_(&dev), stream_(stream) {
    for (slot& s : ring_) s.owner = this;
    if (!dev.setup_status()) {
      failure_ = dev.setup_status();
      return;
    }
    if (stream_ == nullptr) {
      // A stream belongs to the current device: make ours current (any
      // thread, any ordinal), then restore the caller's.
      const scoped_device current(drv(), dev.ordinal());
      failure_ = current.status_value();
      if (failure_) failure_ = to_status(drv().stream_create(&stream_), "cudaStreamCreateWithFlags");
      owns_stream_ = static_cast<bool>(failure_);
    }
    host_signalling_ = Mode == sync_mode::memory_ops && !dev.has_memory_ops();
    holds_ = true;  // every mode holds a wait until its signal is sent (file comment)
    if (failure_ && Mode == sync_mode::memory_ops && !host_signalling_) {
      // The completion word: the stream writes each finished epoch into
      // it. Counted as read by a stream until the stream is drained, so a
      // stream that could not be drained never writes a reused word. No
      // word left: host functions instead.
      if (result<timeline_word> w = dev.allocate_word(0); w) {
        completion_word_ = *w;
        dev.note_device_wait(completion_word_.index);
      }
    }
  }

  stream_backend(const stream_backend&) = delete;
  stream_backend& operator=(const stream_backend&) = delete;

  /// Drains the stream (see drain()), then destroys it if owned: its
  /// host functions point into this backend, and its waits read words.
  ~stream_backend() {
    (void)drain();
    if (owns_stream_) (void)drv().stream_destroy(stream_);
    if (completion_word_.host != nullptr) {
      if (stream_idle_) dev_->device_wait_passed(completion_word_.index);
      dev_->free_word(completion_word_);  // retired for good if never drained
    }
  }

  //===-- queue_backend ---------------------------------------------------===//

  /// Issues a device wait for the next operation. On failure, the waits
  /// this submission already enqueued stay on the stream (CUDA cannot take
  /// them back): they are kept as *strays*, counted on their words until
  /// the stream passes them, and never charged to a later operation.
  status issue_wait(Semaphore& s, std::uint64_t v) noexcept {
    status st = issue_wait_impl(s, v);
    if (!st) orphan_staged();
    return st;
  }

  /// Records a wait the core elided at tier 1 (the operation does not
  /// wait for it): should the operation fail without running, its signals
  /// fail only once `s` reaches `v` or fails (see settle; queue.hpp,
  /// "Failure"). Waits on one semaphore merge to the highest value. Errors
  /// as issue_wait (the submission is abandoned: its waits become strays).
  status guard_elided_wait(Semaphore& s, std::uint64_t v) noexcept {
    status st = failure_;
    if (st && !s.try_wait(v)) {
      std::size_t i = 0;
      while (i < staged_guard_count_ && staged_guards_[i].semaphore != &s) ++i;
      if (i < staged_guard_count_) {
        if (staged_guards_[i].value < v) staged_guards_[i].value = v;
      } else if (staged_guard_count_ == max_guards_per_op) {
        st = status{error{errc::resource_exhausted, "stream queue: max_guards_per_op elided waits",
                          max_guards_per_op}};
      } else {
        staged_guards_[staged_guard_count_++] = guard_record{&s, v};
      }
    }
    if (!st) orphan_staged();
    return st;
  }

  status issue_wait_impl(Semaphore& s, std::uint64_t v) noexcept {
    if (!failure_) return failure_;
    if (staged_count_ == max_waits_per_op) {
      return status{error{errc::resource_exhausted, "stream queue: max_waits_per_op device waits",
                          max_waits_per_op}};
    }
    if (s.try_wait(v)) {
      // Reached: nothing to wait for. The word may lag a host signal that
      // no relay mirrored; raise it so device readers agree.
      s.mirror(v);
      return status{};
    }
    if (Mode == sync_mode::memory_ops && !host_signalling_) {
      if (status g = guard_.note(s, v); !g) return g;
      if (holds_) [[likely]] {
        // Staged, not enqueued: execute() or a later resume() enqueues it
        // once its signal is sent ("Held operations", file comment).
        staged_[staged_count_++] = wait_record{&s, v, no_word, true};
        return status{};
      }
      s.request_mirror(v);
      if (status st = to_status(drv().wait_value64(stream_, s.device_word(), v), "cuStreamWaitValue64");
          !st) {
        return st;
      }
      // The stream now reads the word until it passes this command.
      dev_->note_device_wait(s.word_index());
      staged_[staged_count_++] = wait_record{&s, v, s.word_index()};
      ++counters_.device_waits;
      return status{};
    }
    // Events (and the host-signalling fallback): staged like a held
    // memory-ops wait. The value may be announced while the stream that
    // will signal it has not recorded its event yet (the core announces a
    // signal before the backend records it, and that stream may be
    // another thread's): execute() holds the operation until the event
    // exists (semaphore::sent), then issue_held() waits on it.
    staged_[staged_count_++] = wait_record{&s, v, no_word, true};
    return status{};
  }

  status execute(const stream_operation& op, std::uint64_t epoch) noexcept {
    if (!failure_) {
      orphan_staged();  // the core abandons the submission
      return failure_;
    }
    if (in_flight_ == max_in_flight) (void)poll();
    if (in_flight_ == max_in_flight) {
      orphan_staged();
      return status{error{errc::resource_exhausted,
                          "stream queue: max_in_flight operations outstanding (poll or "
                          "synchronize)",
                          max_in_flight}};
    }
    if (holds_) return execute_or_hold(op, epoch);
    if (op.launch != nullptr) {
      if (status s = to_status(op.launch(stream_, op.user, op.arg), "stream_operation::launch"); !s) {
        orphan_staged();
        return s;
      }
    }
    (void)claim_slot(epoch, /*held=*/false);
    if (progress_ != nullptr && !host_signalling_ && Mode == sync_mode::memory_ops) {
      stage_write(progress_->device_word(), epoch, progress_);
    }
    return status{};
  }

  status issue_signal(Semaphore& s, std::uint64_t v) noexcept {
    slot& sl = ring_[(head_ + in_flight_ - 1) % max_in_flight];
    if (in_flight_ == 0 || sl.signal_count == max_signals_per_op) {
      return status{error{errc::failed_precondition, "stream queue: signal without an operation", v}};
    }
    // A held operation's signals are written (or recorded) when it is
    // issued, after its work.
    if (!sl.held) {
      if (status st = send_signal(s, v); !st) return st;
    }
    sl.signals[sl.signal_count++] = wait_record{&s, v};
    return status{};
  }

  /// Enqueues the completion host function of the last operation.
  status flush() noexcept {
    if (in_flight_ == 0) return status{};
    slot& sl = ring_[(head_ + in_flight_ - 1) % max_in_flight];
    if (sl.held) return status{};  // its completion comes with its issue
    return enqueue_completion(sl);
  }

  [[nodiscard]] const char* trace_label(const stream_operation& op) const noexcept {
    return op.label;
  }

  //===-- completion ------------------------------------------------------===//

  /// Reaches the signals of every operation the host function reported
  /// complete, in order (each operation's in the order they were issued,
  /// then the progress timeline), recycles their events, detects
  /// operations stuck behind a failed semaphore and fails the signals of
  /// doomed ones whose turn has come (settle); returns the highest epoch
  /// completed without failure.
  std::uint64_t poll() noexcept {
    resume();
    const std::uint64_t done = finished_epoch();
    for (;;) {
      while (in_flight_ != 0) {
        slot& sl = ring_[head_];
        if (!sl.doomed) {
          if (sl.held || sl.epoch > done) break;
          // Its wait was released by its semaphore's failure: it ran on
          // inputs never produced. It fails, and every later one.
          if (std::optional<error> f = released_wait(sl); f) {
            doom_from(0, *f);
            break;
          }
          // Every signal, in issue order: only the last carries (axis, e),
          // which claims them all reached (docs/queues.md, "Signals of one
          // operation"); then the progress timeline, which claims e too.
          for (std::size_t i = 0; i < sl.signal_count; ++i) {
            Semaphore& s = *sl.signals[i].semaphore;
            const std::uint64_t v = sl.signals[i].value;
            s.mirror(v);  // host signalling: this *is* the signal on the word
            (void)s.device_signal(v);
            if (Mode == sync_mode::events || host_signalling_) (void)s.release_events_through(v, this);
          }
          if (progress_ != nullptr) {
            progress_->mirror(sl.epoch);
            (void)progress_->device_signal(sl.epoch);
          }
          good_epoch_ = sl.epoch;
        } else if (!sl.failed) {
          break;  // its signals fail in turn (settle)
        } else if (!sl.held && sl.epoch > done) {
          break;  // failed, but its commands are still on the stream
        }
        // Gone: it never reached the stream, or the stream has passed it
        // and its device waits.
        if (sl.held) {
          sl.held = false;
          --held_count_;
        }
        for (std::size_t i = 0; i < sl.wait_count; ++i) dev_->device_wait_passed(sl.waits[i].word);
        for (std::size_t i = 0; i < sl.stray_count; ++i) dev_->device_wait_passed(sl.strays[i]);
        strays_outstanding_ -= sl.stray_count;
        sl.wait_count = 0;
        sl.stray_count = 0;
        sl.guard_count = 0;
        head_ = (head_ + 1) % max_in_flight;
        --in_flight_;
      }
      if (in_flight_ != 0 && !ring_[head_].doomed) {
        // The oldest unfinished operation waits on the device for a
        // semaphore that failed without reaching the value: its result is
        // void. It fails, and all after it (they stay in the ring until
        // the stream passes them).
        if (std::optional<error> f = failed_wait(ring_[head_]); f) doom_from(0, *f);
      }
      if (!settle(/*closing=*/false)) break;  // failed some: they may leave now
    }
    if (failure_) good_epoch_ = done > good_epoch_ ? done : good_epoch_;
    release_failed_strays();
    // Epochs completed without failure: a failed operation (and every one
    // after it) is never reported complete, even once its stream ran it.
    return good_epoch_;
  }

  /// Lets every device wait on a failed semaphore through
  /// (device_context::release_failed_words; if that raised a word, the
  /// operations not yet complete fail with `cancelled`), then blocks until the stream has run everything enqueued on it —
  /// failed operations and strays included — so that no command still
  /// reads a word or calls into this backend; counts every device wait
  /// passed and polls. Called by the destructor, failed or not: work
  /// enqueued behind a wait cannot be un-enqueued on CUDA, only let
  /// through and waited for. A wait on a semaphore nobody signals or fails
  /// blocks it, as cudaStreamSynchronize does. If the synchronisation
  /// itself fails, the waits stay counted (their words retired, never
  /// reused).
  status drain() noexcept {
    if (stream_ == nullptr) return failure_;
    (void)poll();
    // Held operations are dropped, never issued: their signals fail (after
    // the operations ahead of them complete, below).
    if (held_count_ != 0) {
      doom_from(in_flight_ - held_count_,
                error{errc::cancelled,
                      "stream queue: destroyed while holding an operation whose waits' signals "
                      "were not sent"});
    }
    // Every failed word, not only this stream's: this stream may wait (an
    // event, a word) on another stream that is stuck on a failed word.
    // Then what had not completed may run on inputs that were never
    // produced, through a semaphore not yet known failed: fail it.
    if (dev_->release_failed_words() != 0 && in_flight_ != 0) {
      doom_from(0, error{errc::cancelled,
                         "stream queue: destroyed while device waits on a failed semaphore were "
                         "let through; its unfinished operations may have run on missing inputs"});
    }
    stream_idle_ = false;
    if (status s = to_status(drv().stream_synchronize(stream_), "cudaStreamSynchronize"); !s) {
      doom_from(0, s.error_value());
      (void)settle(/*closing=*/true);
      return s;
    }
    stream_idle_ = true;
    // Everything ran, host functions included (a host function that could
    // not be enqueued is covered by the synchronisation too).
    if (in_flight_ != 0) {
      const std::uint64_t last = ring_[(head_ + in_flight_ - 1) % max_in_flight].epoch;
      std::uint64_t seen = completed_.load(std::memory_order_acquire);
      while (seen < last &&
             !completed_.compare_exchange_weak(seen, last, std::memory_order_acq_rel)) {
      }
    }
    (void)poll();
    // Closing: what is left fails now, without waiting for its waits.
    if (settle(/*closing=*/true)) (void)poll();
    for (std::size_t i = 0; i < stray_count_; ++i) dev_->device_wait_passed(strays_[i]);
    strays_outstanding_ -= stray_count_;
    stray_count_ = 0;
    return failure_;
  }

  /// Blocks until the stream is idle, then polls. A failed queue does not
  /// block (its stream may be stuck on a failed semaphore for good, see
  /// the file comment); the destructor drains it. Neither does a queue with
  /// an unfinished operation waiting on a failed semaphore: that operation
  /// and every later one fail (the earlier ones stay in flight), each
  /// failing its signals in turn, as settle() says.
  status synchronize() noexcept {
    (void)poll();
    for (std::size_t k = 0; failure_ && k < in_flight_; ++k) {
      if (std::optional<error> f = failed_wait(ring_[(head_ + k) % max_in_flight]); f) {
        doom_from(k, *f);
        (void)poll();  // settles what may fail now
        break;
      }
    }
    if (!failure_) return failure_;
    release_failed_strays();
    if (status s = to_status(drv().stream_synchronize(stream_), "cudaStreamSynchronize"); !s) {
      // A sticky error: the context is gone, so nothing on this stream (or
      // any other of the device) will run or signal again -- no healthy
      // signal is on its way for a failure to overtake. Fail it all now,
      // as Vulkan's device loss fails every semaphore at once.
      doom_from(0, s.error_value());
      (void)settle(/*closing=*/true);
      (void)poll();
      return s;
    }
    (void)poll();
    for (std::size_t i = 0; i < stray_count_; ++i) dev_->device_wait_passed(strays_[i]);
    strays_outstanding_ -= stray_count_;
    stray_count_ = 0;
    if (failure_ && held_count_ != 0) {
      // Not an error of the queue (nothing sticks): what was issued has
      // completed, but the held operations have not even started.
      return status{error{errc::failed_precondition,
                          "stream queue: synchronize: operations are still held on the host "
                          "until their waits' signals are sent; only what was issued has "
                          "completed (signal those values, then synchronize again)",
                          held_count_}};
    }
    return failure_;
  }

  //===-- observers and hooks ---------------------------------------------===//

  [[nodiscard]] api::stream_t stream() const noexcept { return stream_; }
  [[nodiscard]] device_context& device() const noexcept { return *dev_; }
  /// Ok, or the sticky failure (setup, or an operation that cannot run).
  [[nodiscard]] status failure() const noexcept { return failure_; }
  /// True when this memory-ops backend falls back to host signalling.
  [[nodiscard]] bool host_signalling() const noexcept { return host_signalling_; }
  [[nodiscard]] std::size_t in_flight() const noexcept { return in_flight_; }
  /// Device waits of failed submissions not yet attached to an operation.
  [[nodiscard]] std::size_t stray_waits() const noexcept { return stray_count_; }
  [[nodiscard]] bool in_flight_full() const noexcept { return in_flight_ == max_in_flight; }
  /// Operations held on the host until their waits' signals are sent
  /// (memory-ops mode; see the file comment).
  [[nodiscard]] std::size_t held() const noexcept { return held_count_; }
  [[nodiscard]] detail::same_stream_guard<Semaphore>& guard() noexcept { return guard_; }

  /// What the backend issued, cumulatively.
  struct counters {
    std::uint64_t device_waits = 0;     ///< wait-value or wait-event commands
    std::uint64_t events_recorded = 0;  ///< event records (events mode, fallback)
    std::uint64_t host_functions = 0;   ///< completion host functions
    std::uint64_t held_operations = 0;  ///< operations held on the host before issue
    std::uint64_t completion_writes = 0;  ///< completion-word writes (memory-ops mode)
    std::uint64_t write_batches = 0;  ///< batches of stream writes (memory-ops mode)
  };
  [[nodiscard]] const counters& issued() const noexcept { return counters_; }

  /// Memory-ops mode: true enqueues every device wait at once, even ahead
  /// of its signal (the host relay covers host signals); false (the
  /// default) holds an operation on the host until its waits' signals are
  /// sent (see the file comment). Enqueue ahead only where no stream can
  /// share a hardware queue with the one that will signal: fewer streams
  /// on the device than CUDA_DEVICE_MAX_CONNECTIONS (8 by default),
  /// counting every library's, or values only the host signals.
  /// Errors: `failed_precondition` while operations are held.
  status set_waits_before_signal(bool enqueue_ahead) noexcept {
    if (held_count_ != 0) {
      return status{error{errc::failed_precondition,
                          "stream queue: operations are held; change the wait policy before "
                          "submitting",
                          held_count_}};
    }
    // Events and the fallback always hold: no event exists to wait on
    // before its signal is recorded.
    holds_ = !(Mode == sync_mode::memory_ops && !host_signalling_ && enqueue_ahead);
    return status{};
  }
  /// True when this queue holds operations until their waits' signals are
  /// sent (memory-ops mode, unless set_waits_before_signal(true)).
  [[nodiscard]] bool holds_unsent_waits() const noexcept { return holds_; }

  /// Makes `timeline` reach e when epoch e completes (written on the
  /// device in memory-ops mode, from the host otherwise); null turns it
  /// off. Call before the first submission.
  void set_progress_timeline(Semaphore* timeline) noexcept { progress_ = timeline; }

 private:
  /// No word: an event wait (counted nowhere).
  static constexpr std::uint32_t no_word = static_cast<std::uint32_t>(device_context::word_capacity);

  struct wait_record {
    Semaphore* semaphore = nullptr;
    std::uint64_t value = 0;
    std::uint32_t word = no_word;  ///< the word a wait-value reads, or no_word
    bool pending = false;          ///< held: not enqueued yet (memory-ops mode)
  };
  /// A wait the core elided at tier 1 (guard_elided_wait).
  struct guard_record {
    Semaphore* semaphore = nullptr;
    std::uint64_t value = 0;
  };
  struct slot {
    stream_backend* owner = nullptr;
    detail::epoch_note note{};  ///< what the completion host function stores
    std::uint64_t epoch = 0;
    bool doomed = false;  ///< will never complete: its signals fail in turn (settle)
    bool failed = false;  ///< signals already failed; waiting for the stream to pass it
    bool held = false;    ///< on the host: nothing of it enqueued yet
    stream_operation op{};  ///< kept while held
    std::size_t wait_count = 0;
    std::size_t stray_count = 0;
    std::size_t signal_count = 0;
    std::size_t guard_count = 0;
    std::array<wait_record, max_waits_per_op> waits{};
    std::array<std::uint32_t, max_waits_per_op> strays{};  ///< words of failed submissions' waits
    std::array<wait_record, max_signals_per_op> signals{};
    std::array<guard_record, max_guards_per_op> guards{};  ///< waited for only by a failure
  };

  // The host function is detail::complete_epoch, one function for every
  // instantiation (HIP relays one host function per process).

  //===-- held operations ---------------------------------------------------===//

  // Puts signal S := v of the operation just enqueued on the stream:
  // memory-ops mode stages the word write (flush() enqueues the batch,
  // then the value is sent); events and the fallback record an event,
  // enter it in the ledger and only then mark the value sent, so a waiter
  // that sees it sent finds the event.
  status send_signal(Semaphore& s, std::uint64_t v) noexcept {
    if (Mode == sync_mode::memory_ops && !host_signalling_) {
      stage_write(s.device_word(), v, &s);
      return status{};
    }
    result<api::event_t> e = dev_->acquire_event();
    if (!e) return e.error_value();
    if (status st = to_status(drv().event_record(*e, stream_), "cudaEventRecord"); !st) {
      dev_->release_event(*e);
      return st;
    }
    if (status st = s.add_event(v, *e, this); !st) {
      dev_->release_event(*e);
      return st;
    }
    s.note_sent(v);  // after add_event: a waiter that sees it sent finds the event
    ++counters_.events_recorded;
    return status{};
  }

  // Enqueues one held device wait whose signal has been sent.
  status enqueue_wait(wait_record& w) noexcept {
    Semaphore& s = *w.semaphore;
    if (Mode == sync_mode::memory_ops && !host_signalling_) {
      s.request_mirror(w.value);
      if (status st = to_status(drv().wait_value64(stream_, s.device_word(), w.value),
                                "cuStreamWaitValue64");
          !st) {
        return st;
      }
      // The stream now reads the word until it passes this command.
      w.word = s.word_index();
      dev_->note_device_wait(w.word);
      return status{};
    }
    const std::optional<status> st = s.wait_event_for(w.value, [&](api::event_t e) noexcept {
      return to_status(drv().stream_wait_event(stream_, e), "cudaStreamWaitEvent");
    });
    if (st) return *st;
    if (s.try_wait(w.value)) return status{};  // reached meanwhile: its event went back
    if (auto f = s.failure(); f) return status{*f};
    return status{error{errc::failed_precondition,
                        "stream queue: no device event covers this value (it was not signalled "
                        "by an event-recording stream): the device cannot wait for it",
                        w.value}};
  }

  // execute() in memory-ops mode: the operation gets its slot; it is
  // issued at once when nothing is held before it and every wait's signal
  // has been sent, else it stays held (FIFO) for resume().
  status execute_or_hold(const stream_operation& op, std::uint64_t epoch) noexcept {
    slot& sl = claim_slot(epoch, /*held=*/true);
    sl.op = op;
    ++held_count_;
    if (held_count_ == 1 && sendable(sl)) {
      if (status s = issue_held(sl, /*with_completion=*/false); !s) {
        take_back(sl);
        return s;
      }
    } else {
      ++counters_.held_operations;
    }
    return status{};
  }

  // Takes the next ring slot for the operation of `epoch` and moves the
  // staged waits into it, with the waits of failed submissions before it
  // (strays: the stream passes them before this operation completes).
  slot& claim_slot(std::uint64_t epoch, bool held) noexcept {
    slot& sl = ring_[(head_ + in_flight_) % max_in_flight];
    sl.epoch = epoch;
    sl.doomed = false;
    sl.failed = false;
    sl.held = held;
    sl.wait_count = staged_count_;
    for (std::size_t i = 0; i < staged_count_; ++i) sl.waits[i] = staged_[i];
    sl.guard_count = staged_guard_count_;
    for (std::size_t i = 0; i < staged_guard_count_; ++i) sl.guards[i] = staged_guards_[i];
    staged_guard_count_ = 0;
    sl.stray_count = stray_count_;
    for (std::size_t i = 0; i < stray_count_; ++i) sl.strays[i] = strays_[i];
    stray_count_ = 0;
    sl.signal_count = 0;
    staged_count_ = 0;
    ++in_flight_;
    return sl;
  }

  // Every wait of `sl` still to enqueue has had its signal sent (or
  // reached), and its operation is ready (stream_operation::ready).
  static bool sendable(const slot& sl) noexcept {
    if (sl.op.ready != nullptr && !sl.op.ready(sl.op.user, sl.op.arg)) return false;
    for (std::size_t i = 0; i < sl.wait_count; ++i) {
      const wait_record& w = sl.waits[i];
      if (w.pending && !w.semaphore->sent(w.value)) return false;
    }
    return true;
  }

  // Enqueues a held operation: its waits (those not reached by now), the
  // work, the progress word, and (with_completion: issued later than its
  // submit) its signals and the completion host function. The slot stops
  // being held at the first command enqueued.
  status issue_held(slot& sl, bool with_completion) noexcept {
    const auto mark_issued = [&]() noexcept {
      if (sl.held) {
        sl.held = false;
        --held_count_;
      }
    };
    for (std::size_t i = 0; i < sl.wait_count; ++i) {
      wait_record& w = sl.waits[i];
      if (!w.pending) continue;
      w.pending = false;
      Semaphore& s = *w.semaphore;
      if (s.try_wait(w.value)) {
        s.mirror(w.value);  // the word may lag a host signal
        continue;
      }
      if (status st = enqueue_wait(w); !st) return st;
      mark_issued();
      ++counters_.device_waits;
    }
    if (sl.op.launch != nullptr) {
      if (status st = to_status(sl.op.launch(stream_, sl.op.user, sl.op.arg),
                                "stream_operation::launch");
          !st) {
        return st;
      }
    }
    mark_issued();
    if (progress_ != nullptr && Mode == sync_mode::memory_ops && !host_signalling_) {
      stage_write(progress_->device_word(), sl.epoch, progress_);
    }
    if (!with_completion) return status{};  // signals and completion follow (flush)
    for (std::size_t i = 0; i < sl.signal_count; ++i) {
      if (status st = send_signal(*sl.signals[i].semaphore, sl.signals[i].value); !st) {
        write_count_ = 0;
        return st;
      }
    }
    return enqueue_completion(sl);
  }

  // After `sl`'s commands: the stream writes its epoch into the completion
  // word (memory-ops mode), or runs the completion host function.
  status enqueue_completion(slot& sl) noexcept {
    if (completion_word_.host != nullptr) {
      ++counters_.completion_writes;
      stage_write(completion_word_.device, sl.epoch, nullptr);
    }
    if (status st = flush_writes(); !st) return st;
    if (completion_word_.host != nullptr) return status{};
    ++counters_.host_functions;
    sl.note = detail::epoch_note{&completed_, sl.epoch};
    return to_status(drv().launch_host_func(stream_, &detail::complete_epoch, &sl.note),
                     "cudaLaunchHostFunc");
  }

  // Memory-ops mode: one operation's stream writes (progress word,
  // signals, completion word) are gathered and enqueued together.
  void stage_write(std::uint64_t* word, std::uint64_t v, Semaphore* sent) noexcept {
    writes_[write_count_++] = pending_write{word, v, sent};
  }

  // Enqueues the gathered writes in order, as one cuStreamBatchMemOp (or
  // one write each); only then are their values sent (semaphore::sent).
  // On failure none counts as sent: the core fails the operation's
  // signals.
  status flush_writes() noexcept {
    const std::size_t n = write_count_;
    write_count_ = 0;
    if (n == 0) return status{};
    std::array<std::uint64_t*, max_writes> words{};
    std::array<std::uint64_t, max_writes> values{};
    for (std::size_t i = 0; i < n; ++i) {
      words[i] = writes_[i].word;
      values[i] = writes_[i].value;
    }
    if (drv().write_values64 != nullptr) {
      if (status st = to_status(drv().write_values64(stream_, words.data(), values.data(), n),
                                "cuStreamBatchMemOp");
          !st) {
        return st;
      }
    } else {
      for (std::size_t i = 0; i < n; ++i) {
        if (status st = to_status(drv().write_value64(stream_, words[i], values[i]),
                                  "cuStreamWriteValue64");
            !st) {
          return st;
        }
      }
    }
    ++counters_.write_batches;
    for (std::size_t i = 0; i < n; ++i) {
      if (writes_[i].sent != nullptr) writes_[i].sent->note_sent(writes_[i].value);
    }
    return status{};
  }

  // The highest epoch the stream has finished: the completion word or the
  // host function's store, whichever the queue uses (drain() raises the
  // latter too).
  [[nodiscard]] std::uint64_t finished_epoch() const noexcept {
    // acquire: pairs with the release store in complete_epoch (or the CAS in
    // drain); the word is written by the device, after the operation.
    std::uint64_t done = completed_.load(std::memory_order_acquire);
    if (completion_word_.host != nullptr) {
      const std::uint64_t word =
          std::atomic_ref<std::uint64_t>(*completion_word_.host).load(std::memory_order_acquire);
      if (word > done) done = word;
    }
    return done;
  }

  // execute() could not issue the operation it was given: it is no
  // operation, so its slot goes; the waits it enqueued (and the strays it
  // took) become strays again.
  void take_back(slot& sl) noexcept {
    if (sl.held) --held_count_;
    sl.held = false;
    --in_flight_;
    stray_count_ = sl.stray_count;
    for (std::size_t i = 0; i < sl.stray_count; ++i) strays_[i] = sl.strays[i];
    staged_count_ = sl.wait_count;
    for (std::size_t i = 0; i < sl.wait_count; ++i) staged_[i] = sl.waits[i];
    sl.wait_count = 0;
    sl.stray_count = 0;
    orphan_staged();
  }

  // Issues held operations in order while their waits' signals have been
  // sent. One whose wait semaphore failed below the value, or whose issue
  // fails, fails with every one after it (and the queue); held, they never
  // reach the stream and leave the ring through poll() once settled.
  void resume() noexcept {
    while (held_count_ != 0 && failure_) {
      const std::size_t k = in_flight_ - held_count_;
      slot& sl = ring_[(head_ + k) % max_in_flight];
      for (std::size_t i = 0; i < sl.wait_count; ++i) {
        if (!sl.waits[i].pending) continue;
        if (auto f = causal::detail::failure_below(*sl.waits[i].semaphore, sl.waits[i].value); f) {
          doom_from(k, *f);
          return;
        }
      }
      if (!sendable(sl)) return;
      if (status s = issue_held(sl, /*with_completion=*/true); !s) {
        doom_from(k, s.error_value());
        return;
      }
    }
  }

  // Fails the queue with `e` (the first error sticks) and dooms the k-th
  // unfinished operation and every later one: none of them will complete.
  // Their signals fail in turn (settle), not here. The slots stay until
  // the stream passes them (poll or drain): their device waits are still
  // commands on the stream.
  void doom_from(std::size_t first, const error& e) noexcept {
    for (std::size_t k = first; k < in_flight_; ++k) ring_[(head_ + k) % max_in_flight].doomed = true;
    if (failure_) failure_ = status{e};
  }

  // Fails the signals of doomed operations whose turn has come: in order,
  // behind every operation ahead of it (an earlier operation of this queue
  // may still reach a lower value of the same semaphore), and once every
  // wait of it, device waits and guards (waits the core elided), is met or
  // failed -- never before: an elided wait may stand for a healthy signal
  // on its way, and failing a semaphore before that signal arrives would
  // change what the program observes (queue.hpp, "Failure"). `closing`
  // (teardown) fails every doomed operation at once. Returns true when it
  // failed any.
  bool settle(bool closing) noexcept {
    bool any = false;
    for (std::size_t k = 0; k < in_flight_; ++k) {
      slot& sl = ring_[(head_ + k) % max_in_flight];
      if (sl.failed) continue;
      if (!sl.doomed || (!closing && !waits_over(sl))) {
        if (closing) continue;
        break;
      }
      sl.failed = true;
      any = true;
      const error e = failure_ ? error{errc::cancelled, "stream queue: closed"} : failure_.error_value();
      for (std::size_t i = 0; i < sl.signal_count; ++i) {
        (void)causal::detail::fail_signal(*sl.signals[i].semaphore, sl.signals[i].value, e);
        if (Mode == sync_mode::events || host_signalling_) {
          (void)sl.signals[i].semaphore->release_events_through(~std::uint64_t{0}, this);
        }
      }
      if (progress_ != nullptr) (void)progress_->fail(e);
    }
    return any;
  }

  // True when every wait of `sl`, device waits and guards, is met on the
  // host or its semaphore failed (then below the value: a value reached
  // before a failure stays reached).
  static bool waits_over(const slot& sl) noexcept {
    const auto over = [](const Semaphore& s, std::uint64_t v) noexcept {
      return s.value() >= v || s.failed();
    };
    for (std::size_t i = 0; i < sl.wait_count; ++i) {
      if (!over(*sl.waits[i].semaphore, sl.waits[i].value)) return false;
    }
    for (std::size_t i = 0; i < sl.guard_count; ++i) {
      if (!over(*sl.guards[i].semaphore, sl.guards[i].value)) return false;
    }
    return true;
  }

  // The failure of a semaphore one of `sl`'s waits is on that failed
  // without reaching the value (a value reached before a failure stays
  // reached: its wait goes through), if any.
  static std::optional<error> failed_wait(const slot& sl) noexcept {
    for (std::size_t i = 0; i < sl.wait_count; ++i) {
      if (auto f = causal::detail::failure_below(*sl.waits[i].semaphore, sl.waits[i].value); f) return f;
    }
    return std::nullopt;
  }

  // The failure of a semaphore one of `sl`'s own waits was released by
  // (failed before reaching the value waited for), if any.
  std::optional<error> released_wait(const slot& sl) const noexcept { return failed_wait(sl); }

  // A stray wait (of a failed submission) whose semaphore failed blocks
  // later operations for nothing: let it through. Strays are only ever in
  // front of the oldest unfinished slot or not yet attached.
  void release_failed_strays() noexcept {
    if (strays_outstanding_ == 0) return;  // the common case: nothing to scan
    for (std::size_t i = 0; i < stray_count_; ++i) (void)dev_->release_if_failed(strays_[i]);
    for (std::size_t k = 0; k < in_flight_; ++k) {
      const slot& sl = ring_[(head_ + k) % max_in_flight];
      for (std::size_t i = 0; i < sl.stray_count; ++i) (void)dev_->release_if_failed(sl.strays[i]);
    }
  }

  // The submission being built failed after some of its waits were
  // enqueued: keep them as strays (see issue_wait); its guards go.
  void orphan_staged() noexcept {
    staged_guard_count_ = 0;
    for (std::size_t i = 0; i < staged_count_; ++i) {
      if (staged_[i].word == no_word) continue;
      if (stray_count_ == strays_.size()) {
        // Never attached to an operation, never counted passed: the word
        // stays retired (leaked), never reused under a live wait.
        if (failure_) {
          failure_ = status{error{errc::resource_exhausted,
                                  "stream queue: too many device waits of failed submissions "
                                  "outstanding",
                                  strays_.size()}};
        }
        continue;
      }
      strays_[stray_count_++] = staged_[i].word;
      ++strays_outstanding_;
    }
    staged_count_ = 0;
  }

  [[nodiscard]] const driver_table& drv() const noexcept { return dev_->driver(); }

  device_context* dev_;
  api::stream_t stream_;
  bool owns_stream_ = false;
  bool host_signalling_ = false;
  bool holds_ = false;  // memory-ops mode: waits are held until their signal is sent
  bool stream_idle_ = false;  // drain() saw the stream finish everything
  timeline_word completion_word_{};  // memory-ops mode: the finished epoch, or no word
  struct pending_write {
    std::uint64_t* word = nullptr;
    std::uint64_t value = 0;
    Semaphore* sent = nullptr;  // whose value becomes sent once enqueued
  };
  // An operation's writes: its signals, the progress and completion words.
  static constexpr std::size_t max_writes = max_signals_per_op + 2;
  std::array<pending_write, max_writes> writes_{};
  std::size_t write_count_ = 0;
  std::size_t held_count_ = 0;  // the last held_count_ ring slots are held
  status failure_{};
  Semaphore* progress_ = nullptr;
  detail::same_stream_guard<Semaphore> guard_;
  counters counters_{};
  std::size_t staged_count_ = 0;
  std::array<wait_record, max_waits_per_op> staged_{};
  std::size_t staged_guard_count_ = 0;
  std::array<guard_record, max_guards_per_op> staged_guards_{};
  std::size_t stray_count_ = 0;
  std::array<std::uint32_t, max_waits_per_op> strays_{};
  std::size_t strays_outstanding_ = 0;  // in strays_ and in the ring
  std::size_t head_ = 0;
  std::size_t in_flight_ = 0;
  std::uint64_t good_epoch_ = 0;  // highest epoch completed without failure
  std::array<slot, max_in_flight> ring_{};
  alignas(CAUSAL_CACHELINE_SIZE) std::atomic<std::uint64_t> completed_{0};
};

//===-- basic_stream_queue --------------------------------------------------===//

/// A causal queue on one stream; see the file comment.
template <sync_mode Mode, class Semaphore = semaphore>
class basic_stream_queue {
 public:
  using semaphore_type = Semaphore;
  using frontier_type = typename Semaphore::frontier_type;
  using backend_type = stream_backend<Mode, Semaphore>;
  using core_type = basic_queue<frontier_type, backend_type>;
  using wait_type = typename core_type::wait_type;
  using signal_type = typename core_type::signal_type;
  using operation_type = stream_operation;
  static constexpr sync_mode mode = Mode;
  /// The furthest a wait or signal value may lie above a semaphore's
  /// current value: 2^63 - 1 (CUDA's GEQ is a signed cyclic compare).
  static constexpr std::uint64_t max_value_difference = (std::uint64_t{1} << 63) - 1;
  static_assert(backend_type::max_guards_per_op >= core_type::max_waits,
                "stream_backend::max_guards_per_op must cover every wait of a submission");

  /// A queue with axis `a` (from an axis_allocator) on a new stream of
  /// `dev`, or on `stream` when given (not owned). See setup_status().
  basic_stream_queue(causal::axis a, device_context& dev, api::stream_t stream = nullptr) noexcept
      : core_(a, dev, stream) {}

  basic_stream_queue(const basic_stream_queue&) = delete;
  basic_stream_queue& operator=(const basic_stream_queue&) = delete;

  /// Drains the stream, failed or not (stream_backend::drain), so no
  /// command on it outlives the queue: no host function calls into it,
  /// no wait reads a word that is freed or reused.
  ~basic_stream_queue() {
    (void)core_.backend().drain();
    core_.retire(core_.backend().poll());
    report_failure();
  }

  /// Ok, or why the stream could not be set up.
  [[nodiscard]] status setup_status() const noexcept { return core_.backend().failure(); }

  /// Submits `op` after `waits`, announcing `signals` (basic_queue::submit),
  /// after polling completions. Extra errors, all with nothing issued: the
  /// queue's sticky failure; `failed_precondition` for the same-stream
  /// deadlock rule, and (host-signalling fallback) for a wait on a value
  /// nobody has submitted; `resource_exhausted` with max_in_flight
  /// operations outstanding.
  result<submission> submit(std::span<const wait_type> waits, std::span<const signal_type> signals,
                            const stream_operation& op) noexcept {
    backend_type& b = core_.backend();
    if (status f = b.failure(); !f) {
      report_failure();
      return f.error_value();
    }
    (void)poll();
    if (b.in_flight_full()) {
      return error{errc::resource_exhausted,
                   "stream queue: max_in_flight operations outstanding (poll or synchronize)",
                   backend_type::max_in_flight};
    }
    // The core's own refusal of a self-wait first, so this queue refuses it
    // as every queue does (not as a wait on an unsubmitted value, below).
    for (const signal_type& s : signals) {
      if (status own = causal::detail::check_no_self_wait(waits, s); !own) return own.error_value();
    }
    if (status g = b.guard().check(waits, signals); !g) return g.error_value();
    if (status d = check_devices_and_values(waits, signals); !d) return d.error_value();
    if (Mode == sync_mode::memory_ops && b.host_signalling()) {
      for (const wait_type& w : waits) {
        if (w.semaphore != nullptr && !w.semaphore->failed() &&
            w.semaphore->state_of(w.value) == value_state::unsubmitted) {
          return error{errc::failed_precondition,
                       "stream queue: this device has no 64-bit stream memory operations, so "
                       "it cannot wait for a value nobody has submitted yet",
                       w.value};
        }
      }
    }
    result<submission> r = core_.submit(waits, signals, op);
    if (r && r->deferred) {
      for (const wait_type& w : waits) (void)b.guard().note(*w.semaphore, w.value);
    }
    report_failure();
    return r;
  }

  result<submission> submit(std::initializer_list<wait_type> waits,
                            std::initializer_list<signal_type> signals,
                            const stream_operation& op) noexcept {
    return submit(std::span<const wait_type>(waits.begin(), waits.size()),
                  std::span<const signal_type>(signals.begin(), signals.size()), op);
  }

  /// Polls, then issues held (tier 3) submissions whose signals are now
  /// submitted; returns how many it issued (basic_queue::pump).
  result<std::size_t> pump() noexcept {
    (void)poll();
    result<std::size_t> r = core_.pump();
    (void)poll();
    return r;
  }

  /// Host completion: reaches the signals of completed operations and
  /// retires their epochs; returns the completed epoch.
  std::uint64_t poll() noexcept {
    const std::uint64_t done = core_.backend().poll();
    core_.retire(done);
    report_failure();
    return done;
  }

  /// Blocks until everything issued has completed (a failed queue returns
  /// its failure at once: its stream may be stuck for good until the
  /// destructor drains it). Held operations whose signals are sent by then
  /// are issued first; any still held stay held and make it return
  /// `failed_precondition` (not sticky) instead of ok.
  status synchronize() noexcept {
    status s = core_.backend().synchronize();
    core_.retire(core_.backend().poll());
    report_failure();
    return s;
  }

  /// Stream-ordered allocation from a block pool over core_type (see
  /// <causal/adapters/cuda/pool.hpp> for device memory): reuse of a block
  /// another queue freed is proven by knowledge, by completion, or by
  /// device waits the pool issues before this queue's next operation.
  template <class Pool>
  auto stream_alloca(Pool& pool, std::size_t size) noexcept {
    return pool.acquire(*this, size);
  }

  /// Stream-ordered free, after every operation submitted so far.
  template <class Pool, class Block>
  status stream_dealloca(Pool& pool, const Block& block) noexcept {
    return pool.release(block, *this);
  }

  /// A semaphore that reaches e when epoch e completes: register it with a
  /// block pool so other queues can fence blocks this queue freed. Call
  /// before the first submit. Only this queue may signal it from then on:
  /// a signal from elsewhere marks epochs complete that have not run, and
  /// the pool would hand out blocks they may still use.
  void set_progress_timeline(Semaphore& timeline) noexcept {
    core_.backend().set_progress_timeline(&timeline);
  }

  /// Forwards every retired epoch to `tracker.advance(axis(), epoch)`, and
  /// the queue's sticky failure (noticed by the next poll, submit or
  /// synchronize) to `tracker.fail_axis(axis(), e)`.
  template <class Tracker>
  void track_completion(Tracker& tracker) noexcept {
    core_.track_completion(tracker);
  }
  void learn(const frontier_type& extra) noexcept { core_.learn(extra); }

  [[nodiscard]] causal::axis axis() const noexcept { return core_.axis(); }
  [[nodiscard]] std::uint64_t epoch() const noexcept { return core_.epoch(); }
  [[nodiscard]] const frontier_type& knowledge() const noexcept { return core_.knowledge(); }
  /// The entry that proves knowledge() (basic_queue::knowledge_producer).
  [[nodiscard]] frontier_entry knowledge_producer() const noexcept {
    return core_.knowledge_producer();
  }
  [[nodiscard]] queue_stats stats() const noexcept { return core_.stats(); }
  [[nodiscard]] std::uint64_t completed_epoch() const noexcept { return core_.completed_epoch(); }
  [[nodiscard]] std::size_t deferred_count() const noexcept { return core_.deferred_count(); }
  [[nodiscard]] api::stream_t stream() const noexcept { return core_.backend().stream(); }
  [[nodiscard]] core_type& core() noexcept { return core_; }
  [[nodiscard]] backend_type& backend() noexcept { return core_.backend(); }
  [[nodiscard]] const backend_type& backend() const noexcept { return core_.backend(); }

 private:
  /// Refuses (`invalid_argument`, nothing issued) a wait on a semaphore of
  /// another device_context (its word and its device waits are counted on
  /// its own context: counted here they would mix two slabs' indices), and
  /// a wait or signal value 2^63 or more above the semaphore's current one
  /// (host payload or word, whichever is lower): CUDA compares words
  /// cyclically ((int64_t)(word - v) >= 0), so such a wait would pass at
  /// once and such a signal would make waits on lower values hang.
  /// Checked for every wait, even those the core will elide.
  status check_devices_and_values(std::span<const wait_type> waits,
                                  std::span<const signal_type> signals) const noexcept {
    const device_context& dev = core_.backend().device();
    const auto too_far = [](const Semaphore& s, std::uint64_t v) noexcept {
      const std::uint64_t host = s.value();
      const std::uint64_t word = s.word_value();
      const std::uint64_t now = word < host ? word : host;
      return v > now && v - now > max_value_difference;
    };
    for (const wait_type& w : waits) {
      if (w.semaphore == nullptr) continue;  // the core reports it
      if (&w.semaphore->device() != &dev) {
        return status{error{errc::invalid_argument,
                            "stream queue: a wait on a semaphore of another device_context (its "
                            "word is counted there): wait on it from a queue of that context, or "
                            "on the host",
                            w.value}};
      }
      if (too_far(*w.semaphore, w.value)) {
        return status{error{errc::invalid_argument,
                            "stream queue: a wait 2^63 or more above the semaphore's value (CUDA's "
                            "cyclic >= compare would pass it at once)",
                            w.value}};
      }
    }
    for (const signal_type& sig : signals) {
      if (sig.semaphore == nullptr) continue;
      if (too_far(*sig.semaphore, sig.value)) {
        return status{error{errc::invalid_argument,
                            "stream queue: a signal 2^63 or more above the semaphore's value "
                            "(CUDA's cyclic >= compare would read lower values as not reached)",
                            sig.value}};
      }
    }
    return status{};
  }

  /// Tells the core (and through it an attached tracker), once, that the
  /// queue has failed for good.
  void report_failure() noexcept {
    if (failure_reported_) return;
    if (status f = core_.backend().failure(); !f) {
      failure_reported_ = true;
      core_.fail_completion(f.error_value());
    }
  }

  core_type core_;
  bool failure_reported_ = false;
};

/// The stream queue: memory operations (host-signalling fallback).
using stream_queue = basic_stream_queue<sync_mode::memory_ops>;
/// The binary-event baseline.
using event_stream_queue = basic_stream_queue<sync_mode::events>;

}  // namespace cuda

CAUSAL_END_NAMESPACE
