// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// invoke: asynchronous invocations scheduled on fences (docs/invocations.md):
// `async_invoke(executor, fn, wait, signal)`
// returns at once; fn runs on a worker once every point of `wait` is
// reached; when fn returns, every point of `signal` is signalled.
//
// Model. An invocation is one heap object (allocated at submit) holding a
// process, the two fences, one timepoint node per wait point and the
// result. Submitting it suspends the process once, submits it, and
// registers the timepoints; each timepoint counts down (the countdown of
// coroutine.hpp: n points plus a registration hold) and whoever reaches
// zero wakes the process, so fn runs on a worker of the executor: no
// polling, no thread per call, nothing run on the signalling thread but one
// decrement and one wake. Whole DAGs are submitted up front; each
// invocation runs as soon as its own fence is reached.
//
//   async_invoke(ex, fn, wait, signal)
//     |  allocate, suspend, submit, register timepoints      (caller)
//     v
//   wait points reached -> last timepoint wakes the process (signaller)
//     v
//   drain: fn()                                              (worker)
//   completion: signal (or fail) the signal fence, callback,
//               publish the result to the handle            (worker)
//
// Frontiers. The signal carries what the invocation knew: the join of the
// frontiers its wait points import -- each copied under its semaphore's
// lock when the point's timepoint fires, since a waited-on semaphore may be
// destroyed as soon as anyone sees it reached -- plus, when
// invoke_options::producer names one, the invocation's own (axis, epoch),
// recorded as the signals' producer entry (docs/frontiers.md).
//
// Errors. Nothing hangs: an error returned by fn (result<T> or status), an
// exception leaving fn (caught: `errc::failed_precondition`, the exception
// kept for exception()), a failed wait point (its semaphore's error; a
// semaphore destroyed first: `errc::cancelled`), cancellation, or executor
// teardown fails every semaphore of the signal fence with that error, so
// downstream invocations and waiters see it in turn. After a failed wait
// point fn does not run, but the signals fail only once every other point
// is reached or failed too: a failure must not overtake a healthy signal
// that a consumer's elided wait stands for (docs/queues.md, "Elision
// never changes an outcome"). Cancellation ends the wait at once. A signal that the semaphore rejects (its value is not above the
// payload: two producers of one value) fails that semaphore too, since
// its waiters were promised the order, and the invocation reports it.
//
// Results. `basic_invocation<T>` is a shared, future-like handle: ready(),
// wait()/wait_until() (the invocation's status, or `errc::timeout`), get()
// (the result<T>, blocking). A callback given to async_invoke runs on the
// worker with `result<T>&` after the signals and before the handle sees
// the result. Dropping the handle never blocks and never cancels.
//
// Stateful programs. `basic_program<State>` owns a State, an internal
// timeline and a scope; `call(fn)` runs fn(state) after every earlier call
// (wait at(v - 1), signal at(v)), so set/matmul/matmul/matmul/get run in
// order with no user fences; call(fn, wait, signal) also waits for and
// signals the user's fences. A failed call fails the internal timeline:
// every later call fails with the same error (the state is suspect).
//
// Thread safety: async_invoke, the handle's members and program calls may
//                be used from any thread; a handle object is not
//                synchronised (copies are independent). fn runs on one
//                worker, once.
// Memory order:  what the signallers of the wait points wrote before
//                signalling is visible to fn; what fn wrote is visible to
//                the waiters of the signal points and, once ready()/wait()
//                returns, to the handle's owner (release/acquire on the
//                semaphores and on the handle's done word).
// Blocking/allocation: async_invoke allocates the invocation once (fn,
//                result, fences, timepoints, imports: about 3.5 KiB with
//                the default fence) -- a submit-time cost paid so that fn and its
//                result can outlive the caller's frame without a fixed
//                table; failure to allocate fails the signal fence with
//                `errc::resource_exhausted` and returns a handle holding
//                that error. The wake and drain path never allocates
//                (test/unit/invoke_test.cpp counts), only fn itself may.
//                The handle's wait()/get() park on a 32-bit futex word.
// Size:          the invocation: 3 cache lines of process, two fences,
//                Fence::capacity timepoint nodes (80 bytes each) and as
//                many imported frontiers (~250 bytes each with the default
//                frontier), fn and result<T>: about 3.5 KiB with the
//                default fence. The handle: a pointer and an error (32
//                bytes).
// Lifetime:      the executor must outlive every invocation submitted to
//                it that has not completed (a suspended invocation is not
//                known to the executor: cancel it, or give it a scope and
//                cancel_all); the semaphores must outlive the invocations
//                that wait on or signal them, except that a waited-on one
//                may be destroyed once it reached the point's value (its
//                import was copied then) or before (the invocation gets
//                errc::cancelled). Seeing a
//                signal fence reached is not enough to destroy its
//                semaphores: the signalling worker may still be inside
//                signal(). The handle publishes after every signal has
//                returned, so wait for it (or destroy the executor first).
// Configuration: Fence (default causal::fence), Executor (anything with
//                submit(process&)); invoke_options: scope, producer,
//                priority.
// See also:      docs/invocations.md, <causal/fence.hpp>, <causal/coroutine.hpp>,
//                <causal/stream_pool.hpp>, examples/04_pipelined_dag.cpp.
#pragma once

#include <causal/axis.hpp>
#include <causal/config.hpp>
#include <causal/executor.hpp>
#include <causal/ext/park_word.hpp>
#include <causal/fence.hpp>
#include <causal/frontier.hpp>
#include <causal/process.hpp>
#include <causal/result.hpp>
#include <causal/scope.hpp>
#include <causal/semaphore.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <new>
#include <optional>
#include <type_traits>
#include <utility>

CAUSAL_BEGIN_NAMESPACE

/// Optional settings of one invocation.
struct invoke_options {
  /// The scope its process joins (for teardown: scope::cancel_all and
  /// wait_idle), or none.
  scope* group = nullptr;
  /// The invocation's own (axis, epoch), added to the frontier its signals
  /// carry and recorded as their producer entry; {} for none.
  frontier_entry producer{};
  /// Scan priority of its process (process::set_priority).
  std::uint8_t priority = 0;
};

/// An executor an invocation can be submitted to.
template <class E>
concept invocation_executor = requires(E& ex, process& p) { ex.submit(p); };

template <class T, class Fence>
class basic_invocation;

namespace detail {

/// Maps fn's return type to the invocation's value type: result<U> and
/// status (result<void>) unwrap, anything else is the value itself.
template <class R>
struct invoke_value {
  using type = R;
  static constexpr bool is_result = false;
};
template <class U>
struct invoke_value<result<U>> {
  using type = U;
  static constexpr bool is_result = true;
};

/// The type-independent part of an invocation: the process, the fences,
/// the countdown over the wait points, the reference count and the done
/// word. Stream-pool operations reuse it with their own step.
///
/// Layout: the process (3 cache lines, its own map), then what the
/// submitter writes once (fences, hooks), the countdown written by the
/// timepoint callbacks, and what the drainer and completer write.
template <class Fence>
class invocation_core {
 public:
  using fence_type = Fence;
  using semaphore_type = typename Fence::semaphore_type;
  using frontier_type = typename semaphore_type::frontier_type;

  enum class step_outcome : std::uint8_t {
    done,  ///< the work is over: complete the process
    sleep  ///< the step called proc_.suspend(1); a later wake() re-runs it
  };
  /// Runs the work once the wait fence is reached; sets outcome_.
  using step_fn = step_outcome (*)(invocation_core&) noexcept;
  /// Typed tail of the completion: stores the final status into the result
  /// and runs the user's callback.
  using finish_fn = void (*)(invocation_core&, const status&) noexcept;
  /// Deletes the most derived object.
  using destroy_fn = void (*)(invocation_core&) noexcept;

  invocation_core(const Fence& wait, const Fence& signal, step_fn step, finish_fn finish,
                  destroy_fn destroy) noexcept
      : wait_(wait), signal_(signal), step_(step), finish_(finish), destroy_(destroy) {
    proc_.set_drain(&drain);
    proc_.set_user_data(this);
    proc_.set_completion(&on_complete);
    proc_.set_release(&on_release);
  }
  invocation_core(const invocation_core&) = delete;
  invocation_core& operator=(const invocation_core&) = delete;

  /// Submits the process to `ex` and registers the wait fence's timepoints.
  /// References afterwards: the caller's handle, the process (dropped at
  /// release) and the wait (dropped by whoever ends the countdown).
  template <invocation_executor Executor>
  void start(Executor& ex, const invoke_options& options) noexcept {
    if (options.group != nullptr) proc_.set_scope(*options.group);
    proc_.set_priority(options.priority);
    producer_ = options.producer;
    const auto n = static_cast<std::uint32_t>(wait_.size());
    count_ = n;
    remaining_.store(n + 1, std::memory_order_relaxed);
    refs_.store(3, std::memory_order_relaxed);
    // The wait's hold: the countdown's finisher drops it. Before submit, so
    // the process cannot run before its fence is reached.
    proc_.suspend(1);
    // release (inside submit's wake CAS): everything written above is
    // visible to whichever thread later activates and drains it.
    ex.submit(proc_);
    std::uint32_t skipped = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
      // A scope cancelled at submit already completed the process:
      // register nothing more. A failed point does not end the wait: the
      // signals fail only once every point is over (file comment, Errors).
      if (proc_.is_complete()) {
        ++skipped;
        continue;
      }
      nodes_[i].reset(wait_[i].value, &on_fire, this);
      // may fire inline; copies what the point imports when it fires
      register_point(*wait_[i].semaphore, i);
    }
    if (proc_.is_complete()) skipped += cancel_pending();
    // acq_rel: as in on_fire.
    if (remaining_.fetch_sub(skipped + 1, std::memory_order_acq_rel) == skipped + 1) finish_wait();
  }

  void ref() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  void unref() noexcept {
    // acq_rel: whoever destroys the object has seen every other holder's
    // last writes.
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) destroy_(*this);
  }

  /// True once the result is published (acquire: pairs with publish()).
  [[nodiscard]] bool ready() const noexcept { return done_.load(std::memory_order_acquire) != 0; }

  /// Blocks until published or `deadline`; returns true when published.
  bool wait_until(std::chrono::steady_clock::time_point deadline) const noexcept {
    if (ready()) return true;
    // seq_cst: one side of the Dekker pair with publish() (a store of the
    // done word, then a load of host_waiters_).
    host_waiters_.fetch_add(1, std::memory_order_seq_cst);
    bool out = true;
    for (;;) {
      if (done_.load(std::memory_order_seq_cst) != 0) break;
      if (!done_.wait_until(0, deadline)) {
        out = done_.load(std::memory_order_seq_cst) != 0;
        break;
      }
    }
    host_waiters_.fetch_sub(1, std::memory_order_relaxed);
    return out;
  }

  /// The final status. Precondition: ready().
  [[nodiscard]] const status& final_status() const noexcept { return final_; }
  [[nodiscard]] std::exception_ptr exception() const noexcept { return exception_; }
  [[nodiscard]] const Fence& wait_fence() const noexcept { return wait_; }
  [[nodiscard]] const Fence& signal_fence() const noexcept { return signal_; }
  [[nodiscard]] process& proc() noexcept { return proc_; }
  /// The destroy hook: identifies the most derived type (extensions use it
  /// to check a state's kind before a downcast).
  [[nodiscard]] destroy_fn destroy_hook() const noexcept { return destroy_; }

  /// What the wait fence's points imported: the join of each point's
  /// frontier at its value, copied under the semaphore's lock when its
  /// timepoint fired (a semaphore may be destroyed as soon as it is seen
  /// reached, so nothing reads it later). A point that did not fire ok
  /// contributes nothing and taints the result. Precondition: the countdown
  /// has ended (called by the step or the completion).
  [[nodiscard]] frontier_type wait_imports() const noexcept {
    frontier_type out{};
    for (std::uint32_t i = 0; i < count_; ++i) {
      if constexpr (imports_captured) {
        const auto& got = imports_[i];
        if (!got.reached) {
          out.set_tainted();
          continue;
        }
        if constexpr (requires { out.merge(got.frontier).ok(); }) {
          if (!out.merge(got.frontier)) out.set_tainted();  // rejected: keep less, tainted
        } else {
          out.merge(got.frontier);
        }
      }
    }
    if constexpr (!imports_captured) out = wait_.imported();
    return out;
  }

 protected:
  ~invocation_core() = default;

  process proc_;

  //===-- written once, before start --===//
  Fence wait_;
  Fence signal_;
  step_fn step_;
  finish_fn finish_;
  destroy_fn destroy_;
  frontier_entry producer_{};
  std::uint32_t count_ = 0;

  //===-- the step's verdict and extra knowledge (drainer) --===//
  /// What the step reports (ok or fn's error); read by the completion.
  status outcome_{};
  /// Joined into the signals' frontier (a stream pool adds its own).
  frontier_type extra_{};
  std::exception_ptr exception_{};

 private:
  static invocation_core& of(process& p) noexcept {
    return *static_cast<invocation_core*>(p.user_data());
  }

  /// Whether the semaphore type copies imports when a timepoint fires
  /// (basic_semaphore's importing add_timepoint); without it the imports
  /// are read at completion, and the semaphores must outlive the
  /// invocation.
  static constexpr bool imports_captured =
      requires(semaphore_type& s, semaphore_timepoint& tp,
               typename semaphore_type::imported_type& into) { s.add_timepoint(tp, into); };

  void register_point(semaphore_type& sem, std::uint32_t i) noexcept {
    if constexpr (imports_captured) {
      sem.add_timepoint(nodes_[i], imports_[i]);
    } else {
      sem.add_timepoint(nodes_[i]);
    }
  }

  static void on_fire(semaphore_timepoint& tp, status s) noexcept {
    auto* self = static_cast<invocation_core*>(tp.user_data());
    const std::uint32_t k = 1;
    // A failed point fails the invocation, but the other points are still
    // waited for: its signals must not fail before every point is reached
    // or failed (file comment, Errors).
    if (!s) self->record(s.error_value());
    // acq_rel: releases this callback's writes (the failure) to whoever
    // reaches zero and acquires theirs. After this decrement the object
    // may be gone unless we reached zero (the wait reference is ours then).
    if (self->remaining_.fetch_sub(k, std::memory_order_acq_rel) != k) return;
    self->finish_wait();
  }

  /// Ends the countdown: wakes the process (a no-op when it completed
  /// already) and drops the wait's reference.
  void finish_wait() noexcept {
    (void)proc_.wake(1);
    unref();
  }

  std::uint32_t cancel_pending() noexcept {
    std::uint32_t k = 0;
    for (std::uint32_t i = 0; i < count_; ++i) k += nodes_[i].cancel() ? 1u : 0u;
    return k;
  }

  void record(const error& e) noexcept {
    bool expected = false;
    // The flag is claimed before failure_ is written; failure_ is read
    // only after the countdown reached zero, which this writer's decrement
    // released.
    if (claimed_.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
      failure_ = e;
      failed_.store(true, std::memory_order_release);
    }
  }

  static drain_result drain(process& p, worker_context&) noexcept {
    invocation_core& c = of(p);
    // The wake that let us run came after the countdown, which acquired
    // every callback's writes.
    if (c.failed_.load(std::memory_order_acquire)) {
      c.outcome_ = c.failure_;
      return drain_result::complete();
    }
    if (c.step_(c) == step_outcome::sleep) return drain_result::sleep();
    return drain_result::complete();
  }

  static void on_complete(process& p, status st) noexcept {
    invocation_core& c = of(p);
    c.abandon();
    // An error at completion (cancelled, failed, executor teardown) wins
    // over what the step reported, which it may never have run to set.
    status final = st ? c.outcome_ : st;
    if (final) {
      // Every point but the last carries what the invocation learnt; the
      // last also its own entry, which claims every signal reached (the
      // points are signalled in order: docs/queues.md, "Signals of one
      // operation").
      frontier_type learnt = c.wait_imports();
      if constexpr (requires { learnt.merge(c.extra_).ok(); }) {
        if (!learnt.merge(c.extra_)) learnt.set_tainted();
      } else {
        learnt.merge(c.extra_);
      }
      frontier_type f = learnt;
      if (c.producer_.epoch != 0) {
        if constexpr (requires { f.insert_or_raise(c.producer_.axis, 1).ok(); }) {
          if (!f.insert_or_raise(c.producer_.axis, c.producer_.epoch)) f.set_tainted();
        } else {
          f.insert_or_raise(c.producer_.axis, c.producer_.epoch);
        }
      }
      const std::size_t last = c.signal_.size() - 1;
      for (std::size_t k = 0; k < c.signal_.size(); ++k) {
        const auto& pt = c.signal_[k];
        status s = pt.semaphore->signal(pt.value, k == last ? f : learnt, c.producer_);
        if (!s) {
          // Waiters were promised this value: a rejected signal (not
          // increasing) fails the semaphore; an already failed one keeps
          // its first error.
          (void)detail::fail_signal(*pt.semaphore, pt.value, s.error_value());
          if (final) final = s;
        }
      }
    } else {
      c.signal_.fail(final.error_value());
    }
    c.final_ = final;
    c.finish_(c, final);
    c.publish();
  }

  static void on_release(process& p) noexcept { of(p).unref(); }

  /// Completion while timepoints may still be registered (cancelled while
  /// waiting): cancels them; drops the wait reference if that ends the
  /// countdown. Never the last reference (the process holds one).
  void abandon() noexcept {
    const std::uint32_t k = cancel_pending();
    if (k == 0) return;
    if (remaining_.fetch_sub(k, std::memory_order_acq_rel) == k) {
      [[maybe_unused]] const std::uint32_t before = refs_.fetch_sub(1, std::memory_order_acq_rel);
      CAUSAL_ASSERT(before > 1, "invocation: the wait held the last reference");
    }
  }

  void publish() noexcept {
    // seq_cst: the signaller's side of the Dekker pair in wait_until(); it
    // also releases the result to ready()'s acquire.
    done_.store(1, std::memory_order_seq_cst);
    if (host_waiters_.load(std::memory_order_seq_cst) != 0) done_.notify_all();
  }

  //===-- the countdown (timepoint callbacks) --===//
  std::array<semaphore_timepoint, Fence::capacity> nodes_{};
  /// What each point imported, written under its semaphore's lock before
  /// its callback (so the countdown's acq_rel publishes it to the drainer).
  struct no_imports {};
  [[no_unique_address]] std::conditional_t<
      imports_captured, std::array<typename semaphore_type::imported_type, Fence::capacity>,
      no_imports> imports_{};
  alignas(CAUSAL_CACHELINE_SIZE) std::atomic<std::uint32_t> remaining_{0};
  std::atomic<bool> claimed_{false};
  std::atomic<bool> failed_{false};
  error failure_{};

  //===-- shared by handles and the completer --===//
  alignas(CAUSAL_CACHELINE_SIZE) std::atomic<std::uint32_t> refs_{1};
  mutable std::atomic<std::uint32_t> host_waiters_{0};
  mutable ext::park_word done_{0};
  status final_{};
};

/// The typed part: where the result lives.
template <class Fence, class T>
class invocation_state : public invocation_core<Fence> {
 public:
  using invocation_core<Fence>::invocation_core;
  using result_type = result<T>;

  /// The result. Written by the step and the completion, read by handles
  /// once ready().
  std::optional<result_type> out_{};
  /// Set by the handle that moved a move-only value out (copies of a
  /// handle may race for it: exactly one wins).
  std::atomic<bool> taken_{false};

 protected:
  ~invocation_state() = default;

  /// Replaces a value by the final error, when the invocation failed.
  void settle(const status& final) noexcept {
    if (!final) {
      if (!out_ || out_->ok()) out_.emplace(final.error_value());
    } else if (!out_) {
      out_.emplace(error{errc::failed_precondition, "invocation: finished without a result"});
    }
  }
};

/// "No callback".
struct no_callback {};

/// An invocation of `F` (returning R) with callback `Callback`.
template <class Fence, class T, class F, class Callback>
class invocation_impl final : public invocation_state<Fence, T> {
  using core = invocation_core<Fence>;
  using state = invocation_state<Fence, T>;

 public:
  template <class G, class C>
  invocation_impl(const Fence& wait, const Fence& signal, G&& fn, C&& cb)
      : state(wait, signal, &step, &finish, &destroy), fn_(std::forward<G>(fn)),
        cb_(std::forward<C>(cb)) {}

 private:
  using return_type = std::invoke_result_t<F&>;

  static typename core::step_outcome step(core& c) noexcept {
    auto& self = static_cast<invocation_impl&>(c);
#if defined(__cpp_exceptions)
    try {
      self.run();
    } catch (...) {
      self.exception_ = std::current_exception();
      self.out_.emplace(error{errc::failed_precondition, detail::current_exception_message("async_invoke: fn threw")});
    }
#else
    self.run();
#endif
    self.outcome_ = self.out_->ok() ? status{} : status{self.out_->error_value()};
    return core::step_outcome::done;
  }

  void run() {
    if constexpr (std::is_void_v<return_type>) {
      std::invoke(fn_);
      this->out_.emplace();
    } else {
      this->out_.emplace(std::invoke(fn_));
    }
  }

  static void finish(core& c, const status& final) noexcept {
    auto& self = static_cast<invocation_impl&>(c);
    self.settle(final);
    if constexpr (!std::is_same_v<Callback, no_callback>) std::invoke(self.cb_, *self.out_);
  }

  static void destroy(core& c) noexcept { delete static_cast<invocation_impl*>(&c); }

  F fn_;
  [[no_unique_address]] Callback cb_;
};

}  // namespace detail

//===-- basic_invocation ----------------------------------------------------===//

/// A shared, future-like handle to an invocation's result; see the file
/// comment. Copies share the invocation (a reference count).
template <class T, class Fence = fence>
class basic_invocation {
 public:
  using value_type = T;
  using fence_type = Fence;
  using state_type = detail::invocation_state<Fence, T>;
  using clock = std::chrono::steady_clock;

  /// An empty handle: get() and wait() report `errc::failed_precondition`.
  basic_invocation() noexcept = default;
  /// A handle that only carries `e` (what a failed submit returns).
  explicit basic_invocation(error e) noexcept : error_(e) {}
  /// Adopts one reference to `s`.
  explicit basic_invocation(state_type* s) noexcept : state_(s) {}

  basic_invocation(const basic_invocation& o) noexcept : state_(o.state_), error_(o.error_) {
    if (state_ != nullptr) state_->ref();
  }
  basic_invocation(basic_invocation&& o) noexcept
      : state_(std::exchange(o.state_, nullptr)), error_(o.error_) {}
  basic_invocation& operator=(basic_invocation o) noexcept {
    std::swap(state_, o.state_);
    std::swap(error_, o.error_);
    return *this;
  }
  ~basic_invocation() { reset(); }

  /// Lets go of the invocation (it runs on regardless).
  void reset() noexcept {
    if (state_ != nullptr) std::exchange(state_, nullptr)->unref();
  }

  /// True when the handle refers to an invocation.
  explicit operator bool() const noexcept { return state_ != nullptr; }

  /// True once the result is available (never blocks). A handle holding a
  /// submit error is ready at once.
  [[nodiscard]] bool ready() const noexcept {
    return state_ == nullptr ? error_.code() != errc::ok : state_->ready();
  }

  /// Blocks until the result is available or `deadline` passes; returns
  /// the invocation's status (ok, its error) or `errc::timeout`.
  status wait_until(clock::time_point deadline) const noexcept {
    if (state_ == nullptr) return empty_error();
    if (!state_->wait_until(deadline)) return error{errc::timeout, "invocation wait timed out"};
    return state_->final_status();
  }
  /// Blocks until the result is available; returns the status.
  status wait() const noexcept { return wait_until(clock::time_point::max()); }
  /// wait_until(`deadline`).
  status wait(clock::time_point deadline) const noexcept { return wait_until(deadline); }
  template <class Rep, class Period>
  status wait_for(std::chrono::duration<Rep, Period> timeout) const noexcept {
    if (timeout <= timeout.zero()) return wait_until(clock::now());
    const std::chrono::duration<double> room = clock::time_point::max() - clock::now();
    if (std::chrono::duration<double>(timeout) >= room - std::chrono::seconds(1)) return wait();
    return wait_until(clock::now() + std::chrono::ceil<clock::duration>(timeout));
  }

  /// Blocks, then returns the result: a copy of the value when T is
  /// copyable; a move-only value is moved out by the first get() of any
  /// copy of the handle (later ones: `errc::failed_precondition`).
  [[nodiscard]] result<T> get() {
    if (status s = wait(); !s) {
      if (state_ == nullptr) return s.error_value();
    }
    result<T>& out = *state_->out_;
    if constexpr (std::is_void_v<T> || std::is_copy_constructible_v<T>) {
      return out;
    } else {
      if (!out.ok()) return out.error_value();
      // relaxed: the value itself was published by wait()'s acquire; the
      // flag only decides which copy of the handle moves it.
      if (state_->taken_.exchange(true, std::memory_order_relaxed)) {
        return error{errc::failed_precondition, "invocation::get: move-only value already taken"};
      }
      return std::move(out);
    }
  }

  /// Cancels the invocation: if it has not run, it completes with
  /// `errc::cancelled` (its signal fence fails); true when this call did it.
  bool cancel() noexcept { return state_ != nullptr && state_->proc().cancel(); }

  /// The exception that left fn, if any. Precondition: ready().
  [[nodiscard]] std::exception_ptr exception() const noexcept {
    return state_ != nullptr && state_->ready() ? state_->exception() : std::exception_ptr{};
  }

  /// The fences it was submitted with (empty for an empty handle).
  [[nodiscard]] Fence wait_fence() const noexcept {
    return state_ != nullptr ? state_->wait_fence() : Fence{};
  }
  [[nodiscard]] Fence signal_fence() const noexcept {
    return state_ != nullptr ? state_->signal_fence() : Fence{};
  }

  /// For extensions (stream pools): the shared state, or null.
  [[nodiscard]] state_type* state() const noexcept { return state_; }

 private:
  [[nodiscard]] status empty_error() const noexcept {
    if (error_.code() != errc::ok) return error_;
    return error{errc::failed_precondition, "invocation: empty handle"};
  }

  state_type* state_ = nullptr;
  error error_{};
};

/// The handle for the default fence.
template <class T>
using invocation = basic_invocation<T, fence>;

//===-- async_invoke --------------------------------------------------------===//

namespace detail {

template <class Fence, class T, class F, class Callback, class Executor>
basic_invocation<T, Fence> submit_invocation(Executor& ex, F&& fn, const Fence& wait,
                                             const Fence& signal, Callback&& cb,
                                             const invoke_options& options) noexcept {
  using impl = invocation_impl<Fence, T, std::decay_t<F>, std::decay_t<Callback>>;
  impl* s = nullptr;
#if defined(__cpp_exceptions)
  try {
    s = new (std::nothrow) impl(wait, signal, std::forward<F>(fn), std::forward<Callback>(cb));
  } catch (...) {
    s = nullptr;  // fn's or the callback's copy threw
  }
#else
  s = new (std::nothrow) impl(wait, signal, std::forward<F>(fn), std::forward<Callback>(cb));
#endif
  if (s == nullptr) {
    const error e{errc::resource_exhausted, "async_invoke: cannot allocate the invocation"};
    signal.fail(e);
    return basic_invocation<T, Fence>{e};
  }
  s->start(ex, options);
  return basic_invocation<T, Fence>{static_cast<invocation_state<Fence, T>*>(s)};
}

}  // namespace detail

/// The value type of an invocation of `F`: fn's return type, with
/// result<U> unwrapped to U and status to void.
template <class F>
using invoke_value_t = typename detail::invoke_value<std::invoke_result_t<std::decay_t<F>&>>::type;

/// Schedules `fn` to run on a worker of `ex` once `wait` is reached, then
/// signals `signal` (or fails it with fn's error); returns at once with a
/// handle to the result. `wait` may be empty (run as soon as a worker is
/// free); `signal` may be empty (nothing signalled). `fn` takes no
/// arguments and returns a value, void, result<U> or status.
///
/// Example:
///
///   causal::timeline t;
///   auto sum = causal::async_invoke(ex, [] { return 1 + 2; }, t.at(0), t.at(1));
///   t.at(1).wait();  // or sum.get() == 3
template <class Fence = fence, invocation_executor Executor, class F>
  requires std::invocable<std::decay_t<F>&>
basic_invocation<invoke_value_t<F>, Fence> async_invoke(Executor& ex, F&& fn,
                                                        const std::type_identity_t<Fence>& wait,
                                                        const std::type_identity_t<Fence>& signal,
                                                        const invoke_options& options = {}) noexcept {
  return detail::submit_invocation<Fence, invoke_value_t<F>>(ex, std::forward<F>(fn), wait, signal,
                                                             detail::no_callback{}, options);
}

/// As above, and runs `callback(result<T>&)` on the worker once the signal
/// fence is signalled (or failed), before the handle sees the result. The
/// callback must not throw.
template <class Fence = fence, invocation_executor Executor, class F, class Callback>
  requires std::invocable<std::decay_t<F>&> &&
           std::invocable<std::decay_t<Callback>&, result<invoke_value_t<F>>&>
basic_invocation<invoke_value_t<F>, Fence> async_invoke(Executor& ex, F&& fn,
                                                        const std::type_identity_t<Fence>& wait,
                                                        const std::type_identity_t<Fence>& signal,
                                                        Callback&& callback,
                                                        const invoke_options& options = {}) noexcept {
  return detail::submit_invocation<Fence, invoke_value_t<F>>(
      ex, std::forward<F>(fn), wait, signal, std::forward<Callback>(callback), options);
}

//===-- basic_program -------------------------------------------------------===//

/// A stateful program: a State whose calls are ordered on an internal
/// timeline; see the file comment.
///
/// Template parameters: `State` (held by value), `Executor`, `Fence`.
/// Destruction cancels the calls that have not started and waits for the
/// running ones (its scope's teardown); call wait_idle() first to let
/// every call finish.
template <class State, invocation_executor Executor = executor, class Fence = fence>
class basic_program {
 public:
  using state_type = State;
  using fence_type = Fence;
  using timeline_type = basic_timeline<typename Fence::semaphore_type, Fence::capacity>;

  /// Builds the state from `args`; calls run on `ex`. The program's axis
  /// (its calls' producer entries) comes from default_axis_allocator().
  template <class... Args>
  explicit basic_program(Executor& ex, Args&&... args)
      : ex_(ex), state_(std::forward<Args>(args)...) {
    if (auto a = default_axis_allocator().allocate(0, domain::host); a) axis_ = *a;
  }
  basic_program(const basic_program&) = delete;
  basic_program& operator=(const basic_program&) = delete;

  /// Cancels calls not yet started, then waits for running ones.
  ~basic_program() {
    group_.cancel_all();
    (void)group_.wait_idle();
  }

  /// Schedules `fn(state)` after every earlier call; returns its handle.
  template <class F>
    requires std::invocable<std::decay_t<F>&, State&>
  auto call(F&& fn) {
    return call(std::forward<F>(fn), Fence{}, Fence{});
  }

  /// Schedules `fn(state)` after every earlier call and `wait`; signals
  /// the internal timeline and `signal` when done. A fence join past
  /// Fence::capacity fails the call (`errc::capacity_exceeded`).
  template <class F>
    requires std::invocable<std::decay_t<F>&, State&>
  auto call(F&& fn, const Fence& wait, const Fence& signal) {
    auto step = timeline_.next_step();
    auto body = [this, f = std::forward<F>(fn)]() mutable { return std::invoke(f, state_); };
    using value = invoke_value_t<decltype(body)>;
    status joined = step.wait.join(wait);
    if (joined) joined = step.signal.join(signal);
    if (!joined) {
      // Keep the timeline's order: this call's value fails, and so does
      // every later call (a failed program stays failed).
      (void)timeline_.semaphore().fail(joined.error_value());
      signal.fail(joined.error_value());
      return basic_invocation<value, Fence>{joined.error_value()};
    }
    invoke_options options;
    options.group = &group_;
    if (axis_.raw() != 0) options.producer = frontier_entry{axis_, step.value};
    return async_invoke<Fence>(ex_, std::move(body), step.wait, step.signal, options);
  }

  /// The fence of every call scheduled so far.
  [[nodiscard]] Fence last() noexcept { return timeline_.scheduled(); }

  /// Blocks until every call scheduled so far has run; returns the first
  /// failure (a failed program) or ok.
  status wait_idle() noexcept {
    const status s = last().wait();
    (void)group_.wait_idle();
    return s;
  }

  /// The program's failure, if a call failed.
  [[nodiscard]] std::optional<error> failure() const noexcept {
    return timeline_.semaphore().failure();
  }

  [[nodiscard]] timeline_type& timeline() noexcept { return timeline_; }
  [[nodiscard]] causal::axis axis() const noexcept { return axis_; }

 private:
  Executor& ex_;
  State state_;
  causal::axis axis_{};
  timeline_type timeline_{};
  // Last: destroyed first, so running calls finish before the state goes.
  scope group_;
};

CAUSAL_END_NAMESPACE
