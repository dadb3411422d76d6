// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// spin_lock: a one-word test-and-test-and-set lock for short, bounded,
// allocation-free critical sections (private to the library).
//
// The semaphore and the completion tracker guard their record rings and
// waiter lists with it. Holders never call user code, never allocate and
// never make a system call while holding it, so a waiter spins for at most
// a few hundred nanoseconds; after a short burst of pause instructions it
// yields the CPU so that two threads on one vCPU still make progress.
//
// Thread safety: lock/unlock from any thread; not recursive.
// Memory order:  lock() acquires, unlock() releases.
// Blocking/allocation: lock() spins and may yield; never parks, never
//                allocates.
// Size:          one byte; callers place it next to the data it guards.
// See also:      <causal/semaphore.hpp>.
#pragma once

#include <causal/config.hpp>

#include <atomic>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

CAUSAL_BEGIN_NAMESPACE

namespace detail {

/// Tells the CPU that the caller is in a spin loop (x86 `pause`).
CAUSAL_ALWAYS_INLINE void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

/// One step of a wait for another thread's short critical step: pause for
/// the first 64 steps, then yield the CPU (the other thread may have lost
/// its vCPU, and spinning on would only keep it from running).
CAUSAL_ALWAYS_INLINE void spin_then_yield(unsigned& spins) noexcept {
  if (spins < 64) {
    cpu_relax();
    ++spins;
  } else {
    std::this_thread::yield();
  }
}

class spin_lock {
 public:
  spin_lock() noexcept = default;
  spin_lock(const spin_lock&) = delete;
  spin_lock& operator=(const spin_lock&) = delete;

  CAUSAL_ALWAYS_INLINE void lock() noexcept {
    // acquire: pairs with the release store in unlock().
    if (!locked_.exchange(true, std::memory_order_acquire)) [[likely]] {
      return;
    }
    lock_slow();
  }

  [[nodiscard]] bool try_lock() noexcept {
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }

  CAUSAL_ALWAYS_INLINE void unlock() noexcept {
    // release: publishes the critical section to the next lock().
    locked_.store(false, std::memory_order_release);
  }

 private:
  CAUSAL_NOINLINE void lock_slow() noexcept {
    for (unsigned spins = 0;; ++spins) {
      // Read-only spin keeps the line shared until the holder releases it.
      while (locked_.load(std::memory_order_relaxed)) spin_then_yield(spins);
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
    }
  }

  std::atomic<bool> locked_{false};
};

/// Scoped holder for spin_lock (std::lock_guard would do, but this keeps
/// <mutex> out of the hot headers).
class spin_guard {
 public:
  explicit spin_guard(spin_lock& lock) noexcept : lock_(&lock) { lock_->lock(); }
  spin_guard(const spin_guard&) = delete;
  spin_guard& operator=(const spin_guard&) = delete;
  ~spin_guard() {
    if (lock_ != nullptr) lock_->unlock();
  }
  /// Releases early; the destructor then does nothing.
  void unlock() noexcept {
    lock_->unlock();
    lock_ = nullptr;
  }

 private:
  spin_lock* lock_;
};

}  // namespace detail

CAUSAL_END_NAMESPACE
