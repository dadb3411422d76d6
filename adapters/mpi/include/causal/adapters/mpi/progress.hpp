// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// progress: the two ways to drive a causal::mpi node -- a process on the
// cooperative executor (node_process) and one helper thread (node_thread)
// -- both of which poll while traffic flows and sleep when the job is idle.
//
// Model. A node does all its transport work in poll() (node.hpp), one
// thread at a time. MPI cannot wake a sleeper when a message arrives, so a
// driver must poll; but it must not spin a core on an idle job. Both
// drivers therefore run the same loop:
//
//   poll() did work          poll again at once (traffic is flowing)
//   idle_polls in a row idle go to sleep, announcing it (sleeping = true)
//   asleep                   woken by an export's news (the node's waker,
//                            called from the signalling thread), by a
//                            request (open_proxy, stop), or by a timer
//                            after the current idle sleep, which starts at
//                            min_idle_sleep and doubles to max_idle_sleep
//                            while nothing arrives (incoming messages are
//                            only seen by polling: their latency while
//                            idle is at most the current sleep)
//
// The hand-off between a driver going to sleep and news arriving is a
// Dekker pair of seq_cst operations: the driver stores `sleeping` and then
// reads node.has_work() (the dirty list and the request flag); the hook
// pushes its export (or stores the flag) and then reads `sleeping`. One of
// them sees the other, so no news waits for the timer.
//
// node_process is a process (wake budget 1: one worker drains it at a
// time, and consecutive drains are ordered by the executor's hand-off, so
// its polls are serialised). Its drain is one poll(); while idle it
// returns drain_result::idle() a few times (the worker may spin on other
// work meanwhile), then suspends itself and sleeps -- no worker is blocked
// or spinning on it. A small timer thread owned by the process sleeps on a
// futex word while the process is awake and, while it sleeps, wakes it
// after each idle interval, timed from the start of that sleep (the drain
// counts its sleeps in the word, so a sleep that news ended never cuts the
// next one short). node_thread is one std::thread running the
// loop above, parking on a futex word with a timeout.
//
// Stopping. stop() asks the node to shut down; the next poll performs it
// (BYE to every rank) in the progress context, then the process completes
// or the thread exits. A node never started just stops.
//
// MPI thread level. Every carrier call happens in poll() on the driver:
// node_thread calls MPI from its helper thread only, node_process from
// whichever worker drains it, one at a time -- both need
// MPI_THREAD_SERIALIZED when nothing else calls MPI meanwhile, and
// MPI_THREAD_MULTIPLE when the program calls MPI concurrently from other
// threads. Calling node.poll() yourself from the main thread needs only
// MPI_THREAD_FUNNELED.
//
// Thread safety: stop, wait_stopped and the counters may be called from any
//                thread; construct and destroy from one.
// Memory order:  see the hand-off above; stop() happens-before the final
//                poll that shuts the node down.
// Blocking/allocation: the constructors start a thread (allocating);
//                polling and sleeping allocate nothing; wait_stopped and
//                the destructors block.
// Size:          node_process: a process (three cache lines) plus a
//                thread, two futex words and counters; node_thread: a
//                thread, a futex word and counters.
// Configuration: progress_options (idle_polls, min_idle_sleep,
//                max_idle_sleep).
// See also:      <causal/adapters/mpi/node.hpp>, <causal/process.hpp>,
//                <causal/executor.hpp>, adapters/mpi/README.md.
#pragma once

#include <causal/config.hpp>
#include <causal/detail/spin_lock.hpp>
#include <causal/ext/park_word.hpp>
#include <causal/process.hpp>
#include <causal/result.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

CAUSAL_BEGIN_NAMESPACE

namespace mpi {

/// How a driver polls and sleeps.
struct progress_options {
  /// Polls in a row that find nothing before the driver sleeps. Each idle
  /// poll costs one carrier poll (MPI_Iprobe-like, ~1 us or less).
  std::uint32_t idle_polls = 64;
  /// The first sleep of an idle period: the latency of a message that
  /// arrives just after the driver fell asleep.
  std::chrono::microseconds min_idle_sleep{50};
  /// The longest sleep: the idle period's wake-ups cost one futex wake
  /// per max_idle_sleep (1 ms: about 1000 a second, a fraction of a
  /// percent of a core).
  std::chrono::microseconds max_idle_sleep{1000};
};

//===-- node_thread ---------------------------------------------------------===//

/// Drives `Node` from one helper thread; see the file comment.
template <class Node>
class node_thread {
 public:
  /// Starts the thread; it polls `node` (which must outlive this object)
  /// until stop(). Installs the node's waker.
  explicit node_thread(Node& node, progress_options options = {}) : node_(&node), options_(options) {
    node.set_waker(&wake_thunk, this);
    thread_ = std::thread([this] { run(); });
  }

  node_thread(const node_thread&) = delete;
  node_thread& operator=(const node_thread&) = delete;

  /// stop(), then waits for the thread.
  ~node_thread() { stop(); }

  /// Asks the node to shut down (the thread performs it: BYE), waits for
  /// the thread to exit and removes the waker. Idempotent.
  void stop() noexcept {
    if (!thread_.joinable()) return;
    stop_.store(true, std::memory_order_seq_cst);
    node_->request_shutdown();
    wake();
    thread_.join();
    node_->set_waker(nullptr, nullptr);
  }

  /// Polls made, and sleeps taken, so far.
  [[nodiscard]] std::uint64_t polls() const noexcept { return polls_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t sleeps() const noexcept { return sleeps_.load(std::memory_order_relaxed); }

 private:
  static void wake_thunk(void* self) noexcept { static_cast<node_thread*>(self)->wake(); }

  void wake() noexcept {
    // seq_cst: the waker's read in the sleep hand-off (file comment).
    if (sleeping_.load(std::memory_order_seq_cst)) {
      word_.fetch_add(1, std::memory_order_release);
      word_.notify_one();
    }
  }

  void run() noexcept {
    using clock = std::chrono::steady_clock;
    std::chrono::microseconds sleep = options_.min_idle_sleep;
    std::uint32_t idle = 0;
    for (;;) {
      if (stop_.load(std::memory_order_acquire) && (!node_->is_started() || node_->is_shut_down())) break;
      const std::size_t work = node_->poll();
      polls_.fetch_add(1, std::memory_order_relaxed);
      if (node_->is_shut_down()) break;
      if (work != 0) {
        idle = 0;
        sleep = options_.min_idle_sleep;
        continue;
      }
      if (++idle < options_.idle_polls) {
        causal::detail::cpu_relax();
        continue;
      }
      const auto seen = word_.load(std::memory_order_acquire);
      // seq_cst: the driver's store in the sleep hand-off; then re-check.
      sleeping_.store(true, std::memory_order_seq_cst);
      if (node_->has_work() || stop_.load(std::memory_order_seq_cst)) {
        sleeping_.store(false, std::memory_order_relaxed);
        idle = 0;
        continue;
      }
      sleeps_.fetch_add(1, std::memory_order_relaxed);
      (void)word_.wait_until(seen, clock::now() + sleep);
      sleeping_.store(false, std::memory_order_relaxed);
      sleep = std::min(sleep * 2, options_.max_idle_sleep);
      // One empty poll after a sleep sends the thread back to sleep.
      idle = options_.idle_polls == 0 ? 0 : options_.idle_polls - 1;
    }
  }

  Node* node_;
  progress_options options_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> sleeping_{false};
  ext::park_word word_{0};
  std::atomic<std::uint64_t> polls_{0};
  std::atomic<std::uint64_t> sleeps_{0};
  std::thread thread_;
};

//===-- node_process --------------------------------------------------------===//

/// Drives `Node` as a process on a causal executor; see the file comment.
///
///   causal::mpi::node_process<node_type> progress(node);
///   executor.submit(progress);
///   ...
///   progress.stop();           // BYE, then the process completes
///   progress.wait_stopped();
template <class Node>
class node_process : public process {
 public:
  /// A process polling `node` (which must outlive it); submit it to an
  /// executor. Starts the timer thread and installs the node's waker.
  explicit node_process(Node& node, progress_options options = {})
      : process(&drain_thunk, nullptr), node_(&node), options_(options) {
    set_wake_budget(1);
    set_completion(&on_complete);
    node.set_waker(&wake_thunk, this);
    timer_ = std::thread([this] { run_timer(); });
  }

  node_process(const node_process&) = delete;
  node_process& operator=(const node_process&) = delete;

  /// Stops the timer thread and removes the waker. Precondition: the
  /// process has completed (stop() and wait_stopped()) or was never
  /// submitted.
  ~node_process() {
    CAUSAL_ASSERT(!is_active(), "node_process destroyed while on an executor: stop() and wait_stopped() first");
    if (done_.load(std::memory_order_acquire) != 0) wait_notified();
    node_->set_waker(nullptr, nullptr);
    timer_stop_.store(true, std::memory_order_seq_cst);
    timer_word_.fetch_add(1, std::memory_order_release);
    timer_word_.notify_all();
    timer_.join();
  }

  /// Asks the node to shut down; the process completes once it has (or at
  /// once when the node was never started). Any thread.
  void stop() noexcept {
    stop_.store(true, std::memory_order_seq_cst);
    node_->request_shutdown();
    wake_from_sleep();
  }

  /// Blocks until the process has completed or `deadline` passes; true
  /// when it completed.
  bool wait_stopped(std::chrono::steady_clock::time_point deadline =
                        std::chrono::steady_clock::time_point::max()) const noexcept {
    while (done_.load(std::memory_order_acquire) == 0) {
      if (!done_.wait_until(0, deadline) && done_.load(std::memory_order_acquire) == 0) return false;
    }
    wait_notified();
    return true;
  }

  /// Drains (polls), sleeps, and wake-ups by the timer, so far.
  [[nodiscard]] std::uint64_t polls() const noexcept { return polls_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t sleeps() const noexcept { return sleeps_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t timer_wakes() const noexcept { return timer_wakes_.load(std::memory_order_relaxed); }

 private:
  static drain_result drain_thunk(process& p, worker_context&) noexcept {
    return static_cast<node_process&>(p).drain_node();
  }

  static void on_complete(process& p, status) noexcept {
    auto& self = static_cast<node_process&>(p);
    self.done_.store(1, std::memory_order_release);
    self.done_.notify_all();
    // The last touch: a waiter that saw done_ may destroy us, so
    // wait_stopped() (and the destructor) also wait for this store, which
    // keeps the object alive until notify_all() has returned.
    self.notified_.store(true, std::memory_order_release);
  }

  static void wake_thunk(void* self) noexcept { static_cast<node_process*>(self)->wake_from_sleep(); }

  /// Once done_ is set, waits out the completion callback's last
  /// instructions (a few at most: no blocking call is left in it).
  void wait_notified() const noexcept {
    while (!notified_.load(std::memory_order_acquire)) std::this_thread::yield();
  }

  /// Wakes the process if it sleeps (the hook's side of the hand-off).
  void wake_from_sleep() noexcept {
    // seq_cst: pairs with the drain's store of sleeping_ and re-check.
    if (sleeping_.load(std::memory_order_seq_cst) && sleeping_.exchange(false, std::memory_order_seq_cst)) {
      wake(1);  // ours to match the drain's suspend(1)
    }
  }

  drain_result drain_node() noexcept {
    // The executor's list hand-off orders one drain after the previous, so
    // the drain's own fields need no atomics (idle_).
    if (stop_.load(std::memory_order_acquire) && (!node_->is_started() || node_->is_shut_down())) {
      return drain_result::complete();
    }
    const std::size_t work = node_->poll();
    polls_.fetch_add(1, std::memory_order_relaxed);
    if (node_->is_shut_down()) return drain_result::complete();
    if (work != 0) {
      idle_ = 0;
      traffic_.store(true, std::memory_order_relaxed);
      return drain_result::more();
    }
    if (++idle_ < options_.idle_polls) return drain_result::idle();
    idle_ = 0;
    // Sleep until news, a request or the timer (file comment).
    suspend(1);
    sleeping_.store(true, std::memory_order_seq_cst);
    if ((node_->has_work() || stop_.load(std::memory_order_seq_cst)) &&
        sleeping_.exchange(false, std::memory_order_seq_cst)) {
      // News landed before a waker could see the flag, and we took the
      // flag back: undo our own suspension and poll on.
      wake(1);
      return drain_result::more();
    }
    sleeps_.fetch_add(1, std::memory_order_relaxed);
    // Tell the timer (which parks while we are awake) to start counting.
    timer_word_.fetch_add(1, std::memory_order_release);
    timer_word_.notify_one();
    return drain_result::sleep(false);
  }

  void run_timer() noexcept {
    using clock = std::chrono::steady_clock;
    std::chrono::microseconds sleep = options_.min_idle_sleep;
    for (;;) {
      const auto seen = timer_word_.load(std::memory_order_acquire);
      if (timer_stop_.load(std::memory_order_acquire)) break;
      if (!sleeping_.load(std::memory_order_seq_cst)) {
        // Awake: nothing to time. The drain bumps the word as it sleeps.
        (void)timer_word_.wait(seen);
        continue;
      }
      // The word counts the drain's sleeps: a change means this sleep was
      // ended by news and another has begun (or stop): time the new one
      // from its start. Waking on any change would cut every sleep that
      // follows a wake-up by news short at once, and an idle process
      // would then poll without rest.
      if (timer_word_.wait_until(seen, clock::now() + sleep)) continue;
      if (timer_stop_.load(std::memory_order_acquire)) break;
      if (sleeping_.load(std::memory_order_seq_cst) && sleeping_.exchange(false, std::memory_order_seq_cst)) {
        timer_wakes_.fetch_add(1, std::memory_order_relaxed);
        wake(1);
      }
      sleep = traffic_.exchange(false, std::memory_order_relaxed) ? options_.min_idle_sleep
                                                                    : std::min(sleep * 2, options_.max_idle_sleep);
    }
  }

  Node* node_;
  progress_options options_;
  std::uint32_t idle_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> sleeping_{false};
  std::atomic<bool> traffic_{false};
  std::atomic<bool> timer_stop_{false};
  ext::park_word timer_word_{0};
  ext::park_word done_{0};
  std::atomic<bool> notified_{false};
  std::atomic<std::uint64_t> polls_{0};
  std::atomic<std::uint64_t> sleeps_{0};
  std::atomic<std::uint64_t> timer_wakes_{0};
  std::thread timer_;
};

}  // namespace mpi

CAUSAL_END_NAMESPACE
