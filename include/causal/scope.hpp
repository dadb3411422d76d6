// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// scope: a group of processes with a shared sticky failure, a wait for all
// of them to finish, and a cancel-all for teardown.
//
// Model. A process joins its scope (process::set_scope) when it is
// submitted and leaves it after its release callback has run, so a scope is
// idle when every member has completed, woken its dependents and been
// released: after wait_idle() returns nothing of the scope's runs any more
// and its processes may be freed. The first member to complete with an
// error records it as the scope's failure (sticky: later errors and
// successes do not change it). cancel_all() cancels every member and every
// process that joins afterwards: suspended members resolve inline, on the
// calling thread, with errc::cancelled; queued, running or sleeping members
// are flagged and complete at their executor's next look, after at most
// their current drain() call. Dependents of cancelled members are woken and
// inherit the error, so a whole graph winds down.
//
// The scope keeps an intrusive list of its live members (links in each
// process's scheduling cache line). Joining and leaving take the scope's
// spin lock, once each per process lifetime and only for processes in a
// scope; wake, schedule, scan and drain never touch it.
//
// Thread safety: every member may be called concurrently, except the
//                destructor.
// Memory order:  wait_idle() acquires: everything members did, including
//                their release callbacks, happens-before it returns.
// Blocking/allocation: never allocates. wait_idle() parks; cancel_all()
//                runs completion callbacks of suspended members inline.
//                The destructor calls cancel_all() then wait_idle().
// Size:          about 128 bytes with the native park word.
// Configuration: none.
// See also:      <causal/process.hpp>, <causal/executor.hpp>, docs/executor.md.
#pragma once

#include <causal/config.hpp>
#include <causal/process.hpp>
#include <causal/result.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>

CAUSAL_BEGIN_NAMESPACE

/// A group of processes for failure reporting and teardown; see the file
/// comment.
class scope : public detail::scope_core {
 public:
  scope() noexcept = default;

  /// Cancels the remaining members and waits for them (teardown).
  ~scope() {
    cancel_all();
    (void)wait_idle();
  }

  /// Returns the number of members submitted and not yet released.
  [[nodiscard]] std::uint32_t live() const noexcept {
    return live_.load(std::memory_order_acquire);
  }

  /// Returns true when a member failed (or was cancelled).
  [[nodiscard]] bool failed() const noexcept { return !failure().ok(); }

  /// Returns true once cancel_all() has been called.
  [[nodiscard]] bool cancelled() const noexcept {
    return cancelled_.load(std::memory_order_acquire);
  }

  /// Blocks until every member has been released; returns the scope's
  /// sticky failure (or success).
  status wait_idle() noexcept {
    for (;;) {
      const std::uint32_t n = live_.load(std::memory_order_seq_cst);
      if (n == 0) break;
      live_.wait(n, std::memory_order_acquire);
    }
    wait_for_notifiers();
    return failure();
  }

  /// Like wait_idle(), but gives up at `deadline`; returns true when idle.
  bool wait_idle_until(std::chrono::steady_clock::time_point deadline) noexcept {
    for (;;) {
      const std::uint32_t n = live_.load(std::memory_order_seq_cst);
      if (n == 0) break;
      if (!live_.wait_until(n, deadline, std::memory_order_acquire) &&
          live_.load(std::memory_order_seq_cst) != 0) {
        return false;
      }
    }
    wait_for_notifiers();
    return true;
  }

  /// Cancels every member now and every process that joins later. Members
  /// that are suspended resolve on this thread (completion callbacks run
  /// here, outside the scope's lock); the others complete on their
  /// executor. Returns how many members this call cancelled.
  std::uint32_t cancel_all() noexcept {
    namespace sb = detail::state_bits;
    using access = detail::process_access;
    cancelled_.store(true, std::memory_order_seq_cst);
    process* to_resolve = nullptr;
    std::uint32_t cancelled = 0;
    {
      detail::spin_guard guard(lock_);
      for (detail::scope_link* l = members_.next; l != &members_; l = l->next) {
        process& p = *l->owner;
        // A linked member has not started completing (completion unlinks
        // under this lock first), so it is alive while we hold the lock.
        std::uint64_t s = access::state(p).load(std::memory_order_acquire);
        if (s & (sb::done | sb::cancelled)) continue;
        access::record_error(p, error{errc::cancelled, "scope cancelled"});
        std::uint64_t next = 0;
        s = access::state(p).load(std::memory_order_relaxed);
        bool skip = false;
        do {
          if (s & (sb::done | sb::cancelled)) {
            skip = true;
            break;
          }
          next = (s & sb::active) ? (s | sb::cancelled) : (s | sb::cancelled | sb::done);
        } while (!access::state(p).compare_exchange_weak(s, next, std::memory_order_seq_cst,
                                                         std::memory_order_acquire));
        if (skip) continue;
        ++cancelled;
        if (s & sb::active) {
          // Asleep in a compute slot? Make it scannable so it completes.
          detail::executor_base* ex = access::executor(p);
          const std::uint32_t placement = access::placement(p).load(std::memory_order_acquire);
          if (ex != nullptr && placement < detail::placed_overflow) ex->resume(*ex, p, placement);
        } else {
          // Suspended: ours to resolve, after the lock is dropped. It is in
          // no executor list, so its list link is free.
          access::next(p).store(to_resolve, std::memory_order_relaxed);
          to_resolve = &p;
        }
      }
    }
    while (to_resolve != nullptr) {
      process& p = *to_resolve;
      to_resolve = access::next(p).load(std::memory_order_relaxed);
      const process::release_fn release_cb = p.release();
      const std::uint64_t seen = access::state(p).load(std::memory_order_acquire);
      detail::plain_waker waker;
      const bool member = detail::complete(p, detail::completion_error(p, seen), waker);
      detail::release(p, release_cb, member ? this : nullptr);
    }
    return cancelled;
  }
};

CAUSAL_END_NAMESPACE
