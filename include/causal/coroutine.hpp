// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// coroutine: a C++20 coroutine run as a causal::process, for an invocation
// written as straight-line code that waits part-way through. It co_awaits
// semaphore values, sleeps while it waits, and is resumed by a worker once a
// timepoint has woken it.
//
// Model (docs/executor.md). `causal::coroutine_process f(...)` is a coroutine
// whose promise embeds a process; the returned handle owns the frame. The
// process's drain resumes the coroutine on a worker until its next
// suspension. `co_await causal::until(sem, v)` continues at once when
// sem >= v (try_wait); otherwise the process suspends itself and registers
// a timepoint kept in the awaiter, i.e. in the coroutine frame. The
// timepoint's callback only records the status and wakes the process, so
// the coroutine always resumes on a worker, never on the signalling thread.
// The await returns a causal::status: ok, or the semaphore's failure
// (`errc::cancelled` when it was destroyed first). `co_return s;` (a status
// or an error; `co_return {};` is success) completes the process with s,
// which is what its completion callback, its dependents and its scope see.
// The body must end with co_return: flowing off the end is undefined.
// GCC 12 miscompiles a co_await written directly in an if/while condition
// (`if (!co_await until(s, v))` resumes into the await again): bind the
// result first, `if (status st = co_await until(s, v); !st)`, as below.
//
//   causal::coroutine_process run(causal::semaphore* in, causal::semaphore* out) {
//     for (std::uint64_t v = 1; v <= 3; ++v) {
//       if (causal::status s = co_await causal::until(*in, v); !s) co_return s;
//       (void)out->signal(v);
//     }
//     co_return {};
//   }
//   auto cp = run(&a, &b);  // one allocation: the frame
//   executor.submit(cp.get());
//
// Thread safety: configure the handle (set_*, detach, the process's
//                dependents, scope, priority) before submit; then the
//                process members (wake, cancel, fail, observers) may be
//                called from any thread, as for any process. The body runs
//                on one worker at a time; successive resumptions may run on
//                different workers.
// Memory order:  what a signaller wrote before signal(v) happens-before the
//                code after `co_await until(sem, v)`; what the body wrote
//                before a suspension happens-before its next resumption, on
//                whichever worker; completion ordering is process.hpp's.
// Blocking/allocation: creating a coroutine allocates its frame once
//                (operator new aligned to the cache line, or a caller's
//                std::pmr::memory_resource, see below); returns an empty
//                handle when that fails. Nothing else allocates or blocks:
//                an await is one try_wait, or a suspend, a timepoint
//                registration (the semaphore's short spin lock) and two
//                reference-count updates; a callback is one decrement and
//                one process wake. Errors travel as status values.
// Size:          the frame holds the promise (the 3-cache-line process and
//                80 bytes of bookkeeping: 320 bytes with 64-byte lines),
//                the coroutine's locals, and each live awaiter (80 bytes
//                per awaited point plus 56; 136 for until()).
// Configuration: none; an awaited type only has to satisfy timepoint_source
//                (every basic_semaphore does).
// See also:      <causal/process.hpp>, <causal/semaphore.hpp>,
//                <causal/executor.hpp>, docs/executor.md.
//
//===-- design notes ------------------------------------------------------===//
//
// Waking. A wait on n points starts with a hold: remaining = n + 1, the
// process suspends itself once (count +1) and the frame gains a reference
// for the wait. Each point fires exactly once (reached, failed, or
// cancelled) and counts down by one; a failure also cancels the wait's
// other points and counts them down at once, so a failed point resumes the
// coroutine without waiting for the rest. Registration then drops the hold.
// Whoever drives `remaining` to zero finishes the wait: a callback wakes the
// process (the worker resumes the coroutine) and then drops the wait's frame
// reference; registration itself, when every point fired inline, undoes its
// own suspension and carries on without sleeping. So the process sleeps
// only while a timepoint is pending, and is woken exactly once per sleep.
// Nothing touches the awaiter after the decrement that can let the
// coroutine resume, and the callback's remaining touches (the wake, the
// reference drop) are covered by the wait's reference, so a late callback
// never reads freed memory even when the frame's owner has let go.
//
// Cancellation and failure while suspended. cancel() on a sleeping process
// resolves it inline (process.hpp): the completion callback runs on the
// cancelling thread with errc::cancelled. The coroutine's completion hook
// first cancels the wait's timepoints that have not fired; those that are
// firing concurrently finish as above, and their wake is a no-op on a
// completed process. The body is never resumed: it is abandoned at its
// co_await, and its locals are destroyed with the frame. A process that is
// queued or running when cancelled, or that is failed with process::fail()
// (a sleeping one at its next wake), completes the same way on a worker.
// After the release callback the handle may be destroyed at once; the frame
// goes away when the last reference goes, possibly on a signalling thread
// still leaving its callback. Semaphores must outlive the waits on them
// (destroying one first delivers errc::cancelled, which is fine).
//
// Remote signals. A system_wide semaphore signalled by another process
// fires no timepoint here until someone calls its poll() (semaphore.hpp):
// a coroutine awaiting one sleeps until then.
//
// Executor teardown. A coroutine asleep on a timepoint is a suspended
// process, unknown to the executor: cancel it (scope::cancel_all) before
// the executor is destroyed, as for any suspended process.
//
// Frame allocation. The frame is allocated once, when the coroutine is
// called, aligned to CAUSAL_CACHELINE_SIZE (the promise holds an aligned
// process), with one pointer appended that says where it came from. A
// coroutine whose first two parameters are `std::allocator_arg_t,
// std::pmr::memory_resource*` takes its frame from that resource (a null
// resource means the global operator new); the resource must outlive the
// frame. Allocation failure yields an empty handle (operator bool false),
// not an exception. GCC 12 at -O0 reports such a coroutine with
// -Wmismatched-new-delete (placement new, usual delete: exactly the pairing
// the standard prescribes for frames, so a false positive); silence it
// around the coroutine's definition.
#pragma once

#include <causal/config.hpp>
#include <causal/process.hpp>
#include <causal/result.hpp>
#include <causal/semaphore.hpp>

#include <array>
#include <atomic>
#include <concepts>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <memory_resource>
#include <new>
#include <utility>

CAUSAL_BEGIN_NAMESPACE

class coroutine_process;

/// A timeline a coroutine can await: a non-blocking reached check and a
/// registration of a caller-owned semaphore_timepoint that fires exactly
/// once (every basic_semaphore).
template <class S>
concept timepoint_source = requires(S& s, const S& cs, std::uint64_t v, semaphore_timepoint& tp) {
  { cs.try_wait(v) } noexcept -> std::same_as<bool>;
  { s.add_timepoint(tp) } noexcept;
};

namespace detail {

class coroutine_promise;

//===-- coroutine_wait ------------------------------------------------------===//

/// The part of an awaiter shared with the promise and with the timepoint
/// callbacks: the countdown protocol described in the file comment. An
/// awaiter of any number of points (a semaphore value now, a fence later)
/// derives from it, keeps its timepoints, and calls begin / arm /
/// end_registration from await_suspend and result() from await_resume.
class coroutine_wait {
 public:
  coroutine_wait(const coroutine_wait&) = delete;
  coroutine_wait& operator=(const coroutine_wait&) = delete;

 protected:
  coroutine_wait() noexcept = default;
  ~coroutine_wait() = default;

  /// Forgets the previous wait (an awaiter may be awaited again).
  void reset_wait() noexcept {
    promise_ = nullptr;
    failed_.store(false, std::memory_order_relaxed);
    failure_ = error{};
  }

  /// Starts a wait on `nodes` (not yet registered): takes the hold, the
  /// frame reference and one suspension of the process.
  inline void begin(coroutine_promise& pr, semaphore_timepoint* nodes, std::uint32_t count) noexcept;

  /// Prepares node `tp` for registration with threshold `value`.
  void arm(semaphore_timepoint& tp, std::uint64_t value) noexcept {
    tp.reset(value, &on_fire, static_cast<coroutine_wait*>(this));
  }

  /// True once a point has delivered a failure (registration then skips
  /// the points it has not registered yet).
  [[nodiscard]] bool failure_seen() const noexcept {
    return failed_.load(std::memory_order_acquire);
  }

  /// Drops the hold after registering every point but `skipped`. Returns
  /// true when the coroutine must suspend (a callback will finish the
  /// wait), false when the wait is already over (carry on).
  [[nodiscard]] inline bool end_registration(std::uint32_t skipped) noexcept;

  /// The wait's outcome; for await_resume.
  [[nodiscard]] inline status result() noexcept;

 private:
  friend class coroutine_promise;

  /// Every point's callback.
  static void on_fire(semaphore_timepoint& tp, status s) noexcept {
    auto* self = static_cast<coroutine_wait*>(tp.user_data());
    std::uint32_t k = 1;
    if (!s) {
      self->record(s.error_value());
      // A failed point ends the wait: the others are not waited for.
      k += self->cancel_pending();
    }
    coroutine_promise* const pr = self->promise_;
    // acq_rel: releases this callback's writes (the failure) to whoever
    // reaches zero, and acquires theirs. After this decrement the awaiter
    // may be gone unless we reached zero.
    if (self->remaining_.fetch_sub(k, std::memory_order_acq_rel) != k) return;
    finish(*pr);
  }

  /// Wakes the process and drops the wait's frame reference.
  static inline void finish(coroutine_promise& pr) noexcept;

  /// Called by the promise when the process completes while the coroutine
  /// is suspended here: cancels what has not fired. Never drops the last
  /// frame reference (the owner holds one until release).
  inline void abandon() noexcept;

  /// Cancels every registered point that has not fired; returns how many
  /// this call cancelled (each one is then guaranteed not to fire).
  std::uint32_t cancel_pending() noexcept {
    std::uint32_t k = 0;
    for (std::uint32_t i = 0; i < count_; ++i) k += nodes_[i].cancel() ? 1u : 0u;
    return k;
  }

  /// First failure wins.
  void record(const error& e) noexcept {
    bool expected = false;
    // The flag is claimed before failure_ is written; failure_ is read only
    // after the countdown reached zero, which the writer's decrement
    // released.
    if (failed_.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) failure_ = e;
  }

  std::atomic<std::uint32_t> remaining_{0};
  std::atomic<bool> failed_{false};
  std::uint32_t count_ = 0;
  semaphore_timepoint* nodes_ = nullptr;
  coroutine_promise* promise_ = nullptr;
  error failure_{};
};

//===-- coroutine_promise ---------------------------------------------------===//

/// The promise of coroutine_process: the process plus the frame's
/// bookkeeping. Not for users; reach it through coroutine_process.
///
/// Layout: the process (3 cache lines: its own map, process.hpp), then the
/// fields written by the drainer (waiting_, worker_, yield_), the reference
/// count (owner, waits in flight), and the settings read at completion.
class coroutine_promise {
 public:
  using handle = std::coroutine_handle<coroutine_promise>;

  coroutine_promise() noexcept {
    CAUSAL_ASSERT(reinterpret_cast<std::uintptr_t>(&proc_) % CAUSAL_CACHELINE_SIZE == 0,
                  "coroutine_process: frame not aligned to the cache line");
    proc_.set_drain(&drain);
    proc_.set_user_data(this);
    proc_.set_completion(&on_complete);
    proc_.set_release(&on_release);
  }
  coroutine_promise(const coroutine_promise&) = delete;
  coroutine_promise& operator=(const coroutine_promise&) = delete;

  //===-- frame allocation --===//

  static void* operator new(std::size_t n) noexcept { return allocate(n, nullptr); }
  template <class... Args>
  static void* operator new(std::size_t n, std::allocator_arg_t, std::pmr::memory_resource* r,
                            Args&...) noexcept {
    return allocate(n, r);
  }
  /// The same for a member coroutine (the object comes first).
  template <class This, class... Args>
  static void* operator new(std::size_t n, This&, std::allocator_arg_t,
                            std::pmr::memory_resource* r, Args&...) noexcept {
    return allocate(n, r);
  }
  static void operator delete(void* frame, std::size_t n) noexcept {
    std::pmr::memory_resource* r = nullptr;
    std::memcpy(&r, static_cast<unsigned char*>(frame) + tag_offset(n), sizeof r);
    if (r != nullptr) {
      r->deallocate(frame, total_size(n), frame_alignment);
    } else {
      ::operator delete(frame, std::align_val_t{frame_alignment});
    }
  }

  //===-- coroutine protocol --===//

  static inline coroutine_process get_return_object_on_allocation_failure() noexcept;
  inline coroutine_process get_return_object() noexcept;
  /// Lazy: the body starts on a worker, at the first drain.
  std::suspend_always initial_suspend() const noexcept { return {}; }
  /// The drain sees done() and reports completion.
  std::suspend_always final_suspend() const noexcept { return {}; }
  void return_value(status s) noexcept {
    if (!s) (void)proc_.fail(s.error_value());
  }
  void unhandled_exception() noexcept {
    (void)proc_.fail(error{errc::failed_precondition,
                           detail::current_exception_message("coroutine_process: an exception left the body")});
  }

 private:
  friend class causal::coroutine_process;
  friend class coroutine_wait;
  friend struct reschedule_awaiter;
  friend struct worker_awaiter;

  static constexpr std::size_t frame_alignment = CAUSAL_CACHELINE_SIZE;

  static constexpr std::size_t tag_offset(std::size_t n) noexcept {
    return (n + alignof(void*) - 1) & ~(alignof(void*) - 1);
  }
  static constexpr std::size_t total_size(std::size_t n) noexcept {
    return tag_offset(n) + sizeof(void*);
  }

  static void* allocate(std::size_t n, std::pmr::memory_resource* r) noexcept {
    void* frame = nullptr;
    if (r == nullptr) {
      frame = ::operator new(total_size(n), std::align_val_t{frame_alignment}, std::nothrow);
    } else {
#if defined(__cpp_exceptions)
      try {
        frame = r->allocate(total_size(n), frame_alignment);
      } catch (...) {
        frame = nullptr;
      }
#else
      frame = r->allocate(total_size(n), frame_alignment);
#endif
    }
    if (frame != nullptr) std::memcpy(static_cast<unsigned char*>(frame) + tag_offset(n), &r, sizeof r);
    return frame;
  }

  static coroutine_promise& of(const process& p) noexcept {
    return *static_cast<coroutine_promise*>(p.user_data());
  }

  static drain_result drain(process& p, worker_context& ctx) noexcept {
    coroutine_promise& pr = of(p);
    // Several drainers would resume one coroutine twice at once.
    CAUSAL_ASSERT(p.wake_budget() == 1, "coroutine_process: the wake budget must stay 1");
    pr.worker_ = &ctx;
    pr.yield_ = false;
    const handle h = handle::from_promise(pr);
    h.resume();
    // Suspended at an await, the process is still ACTIVE under this drain
    // even if the wait has already woken it, so nobody else resumes the
    // frame while we read it.
    if (h.done()) return drain_result::complete();
    if (pr.yield_) return drain_result::more();
    return drain_result::sleep();
  }

  static void on_complete(process& p, status st) noexcept {
    coroutine_promise& pr = of(p);
    // Completing while suspended at an await: cancelled, failed, or the
    // executor going away. The body stays abandoned there.
    if (coroutine_wait* w = std::exchange(pr.waiting_, nullptr); w != nullptr) w->abandon();
    pr.final_ = st;
    if (pr.completion_ != nullptr) pr.completion_(p, st);
  }

  static void on_release(process& p) noexcept {
    coroutine_promise& pr = of(p);
    const bool detached = pr.detached_;
    if (pr.release_ != nullptr) pr.release_(p);
    if (detached) {
      pr.unref();  // may destroy the frame, and `p` with it
      return;
    }
    // release: pairs with the acquire in coroutine_process::released(); the
    // owner may destroy the frame as soon as it sees this. Last touch.
    pr.released_.store(true, std::memory_order_release);
  }

  void ref() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  void unref() noexcept {
    // acq_rel: whoever destroys the frame has seen every other holder's
    // last writes to it.
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) handle::from_promise(*this).destroy();
  }

  process proc_;

  //===-- bookkeeping line --===//
  /// The wait the body is suspended in, while it may have timepoints
  /// registered; written and cleared by the drainer, read at completion.
  coroutine_wait* waiting_ = nullptr;
  /// The worker running the current drain (valid during it only).
  const worker_context* worker_ = nullptr;
  /// References to the frame: the owner (handle or, detached, the release
  /// phase) and each wait in flight.
  std::atomic<std::uint32_t> refs_{1};
  bool yield_ = false;
  bool detached_ = false;
  std::atomic<bool> released_{false};
  process::completion_fn completion_ = nullptr;
  process::release_fn release_ = nullptr;
  void* user_data_ = nullptr;
  status final_{};
};

inline void coroutine_wait::begin(coroutine_promise& pr, semaphore_timepoint* nodes,
                                  std::uint32_t count) noexcept {
  promise_ = &pr;
  nodes_ = nodes;
  count_ = count;
  remaining_.store(count + 1, std::memory_order_relaxed);
  pr.waiting_ = this;
  pr.ref();  // the wait's reference, dropped by whoever finishes it
  // Before any timepoint can fire: the finishing callback wakes it.
  pr.proc_.suspend(1);
}

inline bool coroutine_wait::end_registration(std::uint32_t skipped) noexcept {
  // A failure seen during registration: stop waiting for the rest.
  if (failure_seen()) skipped += cancel_pending();
  coroutine_promise& pr = *promise_;
  if (remaining_.fetch_sub(skipped + 1, std::memory_order_acq_rel) != skipped + 1) return true;
  // Everything fired during registration: undo the suspension (the process
  // is ACTIVE under this drain, so this only drops the count) and go on.
  pr.waiting_ = nullptr;
  (void)pr.proc_.wake(1);
  pr.refs_.fetch_sub(1, std::memory_order_relaxed);  // the owner still holds one
  return false;
}

inline status coroutine_wait::result() noexcept {
  if (promise_ != nullptr) promise_->waiting_ = nullptr;
  // acquire/visibility: the failure was written before a decrement that
  // the finisher acquired, and the wake/drain chain carries it here.
  if (failed_.load(std::memory_order_acquire)) return failure_;
  return {};
}

inline void coroutine_wait::finish(coroutine_promise& pr) noexcept {
  // The wake may let a worker resume, complete and release the process at
  // once; the wait's reference keeps the frame alive until we let go.
  (void)pr.proc_.wake(1);
  pr.unref();
}

inline void coroutine_wait::abandon() noexcept {
  const std::uint32_t k = cancel_pending();
  if (k == 0) return;  // every point fired: the last callback finishes it
  if (remaining_.fetch_sub(k, std::memory_order_acq_rel) == k) {
    coroutine_promise& pr = *promise_;
    [[maybe_unused]] const std::uint32_t before = pr.refs_.fetch_sub(1, std::memory_order_acq_rel);
    CAUSAL_ASSERT(before > 1, "coroutine_process: wait held the last frame reference");
  }
}

}  // namespace detail

//===-- coroutine_process ---------------------------------------------------===//

/// The return type of a coroutine run as a process, and the owner of its
/// frame; see the file comment.
///
/// The process (get()) is configured by the promise: do not change its
/// drain, completion, release or user data directly; use set_completion,
/// set_release and set_user_data here. Dependents, scope and priority are
/// set on get() as for any process; the wake budget must stay 1. A
/// coroutine process runs once (no rearm).
class [[nodiscard]] coroutine_process {
 public:
  using promise_type = detail::coroutine_promise;

  /// An empty handle (also what a failed frame allocation returns).
  coroutine_process() noexcept = default;
  coroutine_process(coroutine_process&& other) noexcept
      : promise_(std::exchange(other.promise_, nullptr)) {}
  coroutine_process& operator=(coroutine_process&& other) noexcept {
    if (this != &other) {
      reset();
      promise_ = std::exchange(other.promise_, nullptr);
    }
    return *this;
  }
  /// Lets go of the frame; see reset().
  ~coroutine_process() { reset(); }

  /// True when the handle owns a frame.
  explicit operator bool() const noexcept { return promise_ != nullptr; }

  /// The process to submit. Precondition: not empty.
  [[nodiscard]] process& get() const noexcept {
    CAUSAL_ASSERT(promise_ != nullptr, "coroutine_process::get on an empty handle");
    return promise_->proc_;
  }

  /// Sets the callback run once at completion with the final status (after
  /// pending timepoints were cancelled), before the dependents are woken.
  void set_completion(process::completion_fn completion) noexcept {
    CAUSAL_ASSERT(promise_ != nullptr, "coroutine_process::set_completion on an empty handle");
    promise_->completion_ = completion;
  }
  /// Sets the callback run once after completion, when no worker drains the
  /// process any more. The frame stays valid during it; to free the frame
  /// from here, detach() instead of destroying the handle.
  void set_release(process::release_fn release) noexcept {
    CAUSAL_ASSERT(promise_ != nullptr, "coroutine_process::set_release on an empty handle");
    promise_->release_ = release;
  }
  /// Sets a pointer the callbacks can read back with user_data(process&).
  void set_user_data(void* user_data) noexcept {
    CAUSAL_ASSERT(promise_ != nullptr, "coroutine_process::set_user_data on an empty handle");
    promise_->user_data_ = user_data;
  }
  /// Returns what set_user_data stored, given a coroutine's process.
  [[nodiscard]] static void* user_data(const process& p) noexcept {
    CAUSAL_ASSERT(p.drain() == &promise_type::drain, "coroutine_process::user_data: not a coroutine process");
    return promise_type::of(p).user_data_;
  }

  /// Hands the frame to the process: it is destroyed after the release
  /// callback. The handle becomes empty. Precondition: before submit; the
  /// process must then be submitted or cancelled, or the frame leaks.
  void detach() noexcept {
    CAUSAL_ASSERT(promise_ != nullptr, "coroutine_process::detach on an empty handle");
    CAUSAL_ASSERT(!promise_->proc_.is_submitted(), "coroutine_process::detach after submit");
    promise_->detached_ = true;
    promise_ = nullptr;
  }

  /// True once the release callback has run (acquire: what the process
  /// did, completion included, is visible).
  [[nodiscard]] bool released() const noexcept {
    return promise_ != nullptr && promise_->released_.load(std::memory_order_acquire);
  }
  /// The status the process completed with. Precondition: released().
  [[nodiscard]] status final_status() const noexcept {
    CAUSAL_ASSERT(released(), "coroutine_process::final_status before release");
    return promise_->final_;
  }

  /// Lets go of the frame (destroyed now, or when the last late timepoint
  /// callback leaves). Precondition: never submitted, or released().
  void reset() noexcept {
    if (promise_ == nullptr) return;
    CAUSAL_ASSERT(!promise_->proc_.is_submitted() ||
                      promise_->released_.load(std::memory_order_acquire),
                  "coroutine_process destroyed while its process runs; wait for release");
    std::exchange(promise_, nullptr)->unref();
  }

 private:
  friend class detail::coroutine_promise;
  explicit coroutine_process(detail::coroutine_promise* p) noexcept : promise_(p) {}

  detail::coroutine_promise* promise_ = nullptr;
};

namespace detail {
inline coroutine_process coroutine_promise::get_return_object_on_allocation_failure() noexcept {
  return coroutine_process{};
}
inline coroutine_process coroutine_promise::get_return_object() noexcept {
  return coroutine_process{this};
}
}  // namespace detail

//===-- awaitables ----------------------------------------------------------===//

/// Awaiter of "every point reached": what until() and until_all() return.
/// Resumes with ok once every semaphore reached its value, or with the
/// first failure (without waiting for the other points). Never suspends
/// when every value is already reached. Only awaitable inside a
/// coroutine_process; holds its timepoints, so an await allocates nothing.
template <timepoint_source Semaphore, std::size_t N>
class semaphore_wait : private detail::coroutine_wait {
  static_assert(N >= 1, "semaphore_wait: N must be at least 1");
  static_assert(N < 0xffff'fff0u, "semaphore_wait: N too large");

 public:
  explicit semaphore_wait(const std::array<wait_point<Semaphore>, N>& points) noexcept
      : points_(points) {}

  bool await_ready() noexcept {
    reset_wait();
    for (const wait_point<Semaphore>& p : points_) {
      if (!p.semaphore->try_wait(p.value)) return false;
    }
    return true;
  }

  bool await_suspend(std::coroutine_handle<detail::coroutine_promise> h) noexcept {
    begin(h.promise(), nodes_.data(), static_cast<std::uint32_t>(N));
    std::uint32_t skipped = 0;
    for (std::size_t i = 0; i < N; ++i) {
      if (failure_seen()) {
        ++skipped;  // a point failed already: the wait is over
        continue;
      }
      arm(nodes_[i], points_[i].value);
      points_[i].semaphore->add_timepoint(nodes_[i]);  // may fire inline
    }
    return end_registration(skipped);
  }

  [[nodiscard]] status await_resume() noexcept { return result(); }

 private:
  std::array<wait_point<Semaphore>, N> points_;
  std::array<semaphore_timepoint, N> nodes_{};
};

/// Awaits `sem` >= `v`: `status s = co_await causal::until(sem, v);`.
template <timepoint_source Semaphore>
[[nodiscard]] semaphore_wait<Semaphore, 1> until(Semaphore& sem, std::uint64_t v) noexcept {
  return semaphore_wait<Semaphore, 1>{std::array<wait_point<Semaphore>, 1>{{{&sem, v}}}};
}

/// Awaits every point; resumes early with the first failure.
template <timepoint_source Semaphore, std::size_t N>
[[nodiscard]] semaphore_wait<Semaphore, N> until_all(
    const std::array<wait_point<Semaphore>, N>& points) noexcept {
  return semaphore_wait<Semaphore, N>{points};
}

namespace detail {
/// Awaiter of reschedule().
struct reschedule_awaiter {
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<coroutine_promise> h) const noexcept {
    h.promise().yield_ = true;
  }
  void await_resume() const noexcept {}
};
/// Awaiter of current_worker().
struct worker_awaiter {
  const worker_context* ctx = nullptr;
  bool await_ready() const noexcept { return false; }
  bool await_suspend(std::coroutine_handle<coroutine_promise> h) noexcept {
    ctx = h.promise().worker_;
    return false;  // never actually suspends
  }
  worker_context await_resume() const noexcept { return *ctx; }
};
}  // namespace detail

/// Ends the current drain and goes to the back of the executor's queue:
/// `co_await causal::reschedule();` keeps a long body's drains bounded.
[[nodiscard]] inline detail::reschedule_awaiter reschedule() noexcept { return {}; }

/// The worker running the body now: `auto w = co_await causal::current_worker();`.
/// Never suspends.
[[nodiscard]] inline detail::worker_awaiter current_worker() noexcept { return {}; }

CAUSAL_END_NAMESPACE
