// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// park_word: a 32-bit word that threads can park on until its value changes.
//
// This is the one place in the core where a thread sleeps. A primitive that
// needs blocking (a timeline semaphore, a parked worker) keeps its real state
// wherever it likes, e.g. a 64-bit payload, and pairs it with a park_word
// that it bumps (an epoch or waiter generation) whenever a sleeper might
// care. A waiter reads the word, re-checks its real condition, and only then
// calls wait(seen); a signaller changes the real state, bumps the word and
// notifies. Because wait() returns as soon as the word differs from `seen`,
// a bump that lands between the waiter's read and its wait() is never lost.
//
// Why 32 bits: boost::atomic<std::uint32_t>::wait/notify map straight onto a
// futex on Linux and are header-only. The 64-bit variants are not native;
// they go through the lock pool in the compiled libboost_atomic, which would
// make every user link it. Parking on a 32-bit word keeps causal header-only
// (test/packaging/header_only_wait.cpp links without -lboost_atomic to prove
// it). A 32-bit epoch may wrap; waiters only compare for inequality, so a
// wrap is harmless unless a waiter sleeps through exactly 2^32 bumps.
//
// Two implementations share one interface: native_park_word (boost::atomic
// wait/notify) and condvar_park_word (std::mutex + std::condition_variable).
// `park_word` names the native one, unless CAUSAL_USE_CONDVAR_WAIT is set
// (forced on under ThreadSanitizer, which does not model futex waits) or the
// platform has no native 32-bit wait, in which case it names the condvar
// one. They are distinct types, so TUs that disagree on the switch fail to
// link instead of silently sharing a mismatched layout.
//
// Thread safety: every member may be called concurrently, from any thread.
// Memory order:  each member takes a std::memory_order with the std::atomic
//                meaning; wait() returns the first changed value it observes,
//                loaded with the order it is given (acquire by default), so a
//                store(v, release) that wait() sees happens-before its return.
// Blocking/allocation: wait() and wait_until() may park the caller; every other member never
//                blocks on the native word and never allocates. On the
//                condvar word, notify_*() and a parking wait() take a mutex.
// Size:          native_park_word: 4 bytes, alignment 4, no padding added;
//                place it on its own cache line if it is contended.
//                condvar_park_word: 4 bytes plus a mutex and a condition
//                variable (about 96 bytes with glibc).
// Configuration: CAUSAL_USE_CONDVAR_WAIT (default: 1 under TSan, else 0).
// See also:      <causal/config.hpp>, <causal/semaphore.hpp>,
//                <causal/executor.hpp>, docs/executor.md.
#pragma once

#include <causal/config.hpp>

#include <boost/atomic/atomic.hpp>
#include <boost/memory_order.hpp>

#if CAUSAL_HAS_FUTEX()
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#else
#include <thread>
#endif

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <type_traits>

CAUSAL_BEGIN_NAMESPACE

namespace detail {

/// Returns the boost::memory_order with the same meaning as `order`.
///
/// The two enums use different numeric values, so this is a switch rather
/// than a cast. Every caller passes a constant, so it folds away once inlined.
constexpr boost::memory_order to_boost_order(std::memory_order order) noexcept {
  switch (order) {
    case std::memory_order_relaxed:
      return boost::memory_order_relaxed;
    case std::memory_order_consume:
      return boost::memory_order_consume;
    case std::memory_order_acquire:
      return boost::memory_order_acquire;
    case std::memory_order_release:
      return boost::memory_order_release;
    case std::memory_order_acq_rel:
      return boost::memory_order_acq_rel;
    case std::memory_order_seq_cst:
      break;
  }
  return boost::memory_order_seq_cst;
}

/// Returns true if `order` is valid for a load (and thus for wait()).
constexpr bool is_load_order(std::memory_order order) noexcept {
  return order != std::memory_order_release && order != std::memory_order_acq_rel;
}

/// Returns true if `order` is valid for a store.
constexpr bool is_store_order(std::memory_order order) noexcept {
  return order == std::memory_order_relaxed || order == std::memory_order_release ||
         order == std::memory_order_seq_cst;
}


#if CAUSAL_HAS_FUTEX()
/// Parks the caller on the 32-bit futex word at `word` while it holds
/// `expected`, until a wake, a signal or the absolute steady_clock
/// `deadline` (CLOCK_MONOTONIC on Linux). `process_shared` drops the
/// PRIVATE flag, for words in memory another process maps. Returns on any
/// of these, or at once when the word already differs: callers re-check.
inline void futex_wait_until(const std::uint32_t* word, std::uint32_t expected,
                             std::chrono::steady_clock::time_point deadline,
                             bool process_shared) noexcept {
  const auto since_epoch = deadline.time_since_epoch();
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(since_epoch);
  timespec absolute{};
  absolute.tv_sec = static_cast<std::time_t>(seconds.count());
  absolute.tv_nsec = static_cast<long>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(since_epoch - seconds).count());
  const int op = process_shared ? FUTEX_WAIT_BITSET : (FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG);
  ::syscall(SYS_futex, const_cast<std::uint32_t*>(word), op, expected, &absolute, nullptr,
            FUTEX_BITSET_MATCH_ANY);
}
#endif

}  // namespace detail

namespace ext {

//===-- native_park_word --------------------------------------------------===//

/// A 32-bit word parked on through boost::atomic's native wait/notify (a
/// futex on Linux). Header-only; see the file comment for why it is 32 bits.
class native_park_word {
 public:
  using value_type = std::uint32_t;

  /// Constructs the word holding `initial`.
  constexpr explicit native_park_word(value_type initial = 0) noexcept : word_(initial) {}

  native_park_word(const native_park_word&) = delete;
  native_park_word& operator=(const native_park_word&) = delete;

  /// Returns the current value.
  ///
  /// Preconditions: `order` is not release or acq_rel.
  [[nodiscard]] value_type load(std::memory_order order = std::memory_order_seq_cst) const noexcept {
    CAUSAL_DEBUG_ASSERT(detail::is_load_order(order), "park_word::load: not a load order");
    return word_.load(detail::to_boost_order(order));
  }

  /// Replaces the value with `value`. Wakes nobody: call notify_one() or
  /// notify_all() afterwards.
  ///
  /// Preconditions: `order` is relaxed, release or seq_cst.
  void store(value_type value, std::memory_order order = std::memory_order_seq_cst) noexcept {
    CAUSAL_DEBUG_ASSERT(detail::is_store_order(order), "park_word::store: not a store order");
    word_.store(value, detail::to_boost_order(order));
  }

  /// Adds `delta` (wrapping modulo 2^32) and returns the previous value.
  /// Wakes nobody: call notify_one() or notify_all() afterwards.
  value_type fetch_add(value_type delta, std::memory_order order = std::memory_order_seq_cst) noexcept {
    return word_.fetch_add(delta, detail::to_boost_order(order));
  }

  /// Blocks until the value differs from `expected`, then returns the value
  /// it observed. Returns at once if it already differs.
  ///
  /// Spurious futex wakeups are absorbed: Boost re-loads the word after every
  /// wakeup and parks again while it still equals `expected`. Every load,
  /// including the one whose result is returned, uses `order`. The default,
  /// acquire, pairs with the release (or seq_cst) store or fetch_add that
  /// changed the word, so what the signaller wrote before bumping the word
  /// is visible once wait() returns. The futex itself orders nothing: the
  /// kernel re-checks the word, which only decides whether to sleep.
  ///
  /// Preconditions: `order` is not release or acq_rel.
  value_type wait(value_type expected, std::memory_order order = std::memory_order_acquire) const noexcept {
    CAUSAL_DEBUG_ASSERT(detail::is_load_order(order), "park_word::wait: not a load order");
    return word_.wait(expected, detail::to_boost_order(order));
  }

  /// Blocks until the value differs from `expected` or `deadline` passes.
  /// Returns true when it saw a different value (loaded with `order`),
  /// false on timeout. Spurious wakeups are absorbed.
  ///
  /// Boost's wait has no timeout, so on Linux this parks with
  /// FUTEX_WAIT_BITSET on the word itself and an absolute CLOCK_MONOTONIC
  /// deadline (the clock std::chrono::steady_clock reads there); the word
  /// is the same 32-bit object boost::atomic's notify wakes. Elsewhere it
  /// polls with short sleeps, which is correct but slow to react.
  ///
  /// Preconditions: `order` is not release or acq_rel.
  bool wait_until(value_type expected, std::chrono::steady_clock::time_point deadline,
                  std::memory_order order = std::memory_order_acquire) const noexcept {
    CAUSAL_DEBUG_ASSERT(detail::is_load_order(order), "park_word::wait_until: not a load order");
    const boost::memory_order boost_order = detail::to_boost_order(order);
    for (;;) {
      if (word_.load(boost_order) != expected) return true;
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) return false;
#if CAUSAL_HAS_FUTEX()
      // The kernel re-checks *word == expected before sleeping, so a notify
      // between our load and this call is not lost. EINTR, EAGAIN and
      // ETIMEDOUT all loop back to the re-check above.
      detail::futex_wait_until(&word_.value(), expected, deadline, /*process_shared=*/false);
#else
      const auto remaining = deadline - now;
      std::this_thread::sleep_for(remaining < std::chrono::microseconds(200)
                                      ? remaining
                                      : std::chrono::steady_clock::duration(
                                            std::chrono::microseconds(200)));
#endif
    }
  }

  /// Wakes at least one thread parked in wait(), if any.
  ///
  /// The word must outlive this call: a waiter may return (having seen the
  /// new value) before notify_one() has finished touching the word.
  void notify_one() noexcept { word_.notify_one(); }

  /// Wakes every thread parked in wait(). Same lifetime rule as notify_one().
  void notify_all() noexcept { word_.notify_all(); }

 private:
  boost::atomic<value_type> word_;
};

//===-- condvar_park_word -------------------------------------------------===//

/// A 32-bit word parked on through a mutex and a condition variable. Used
/// under ThreadSanitizer (which cannot see the happens-before edge a futex
/// wake creates) and where no native 32-bit wait exists.
///
/// The value itself is an atomic, so load/store/fetch_add never take the
/// mutex; only parking and notifying do. Why notify must take the mutex,
/// even though the store it follows did not:
///
///   waiter                           notifier
///   lock(m)
///   load() == expected  -> will park
///                                    store(new); notify_all()   // no lock
///   cv.wait(m)           -> parks forever: the wake came too early
///
/// With notify taking `m`, the notify cannot fall between the waiter's check
/// and its cv.wait (which releases `m` atomically with parking). Either the
/// notifier takes `m` first, and then the waiter's check, made after it
/// acquires `m` in turn, sees the new value (the store is sequenced before
/// the notifier's unlock, which synchronizes with that acquire); or the
/// waiter is already parked and receives the notify.
///
/// Notify signals while still holding `m`, so the condition variable and
/// mutex are not touched after the woken waiter may have returned.
class condvar_park_word {
 public:
  using value_type = std::uint32_t;

  /// Constructs the word holding `initial`.
  explicit condvar_park_word(value_type initial = 0) noexcept : word_(initial) {}

  condvar_park_word(const condvar_park_word&) = delete;
  condvar_park_word& operator=(const condvar_park_word&) = delete;

  /// Returns the current value. Preconditions: as native_park_word::load.
  [[nodiscard]] value_type load(std::memory_order order = std::memory_order_seq_cst) const noexcept {
    CAUSAL_DEBUG_ASSERT(detail::is_load_order(order), "park_word::load: not a load order");
    return word_.load(order);
  }

  /// Replaces the value. Preconditions: as native_park_word::store.
  void store(value_type value, std::memory_order order = std::memory_order_seq_cst) noexcept {
    CAUSAL_DEBUG_ASSERT(detail::is_store_order(order), "park_word::store: not a store order");
    word_.store(value, order);
  }

  /// Adds `delta` (wrapping) and returns the previous value.
  value_type fetch_add(value_type delta, std::memory_order order = std::memory_order_seq_cst) noexcept {
    return word_.fetch_add(delta, order);
  }

  /// Blocks until the value differs from `expected`, then returns it.
  /// Memory order and preconditions: as native_park_word::wait.
  ///
  /// The fast path is one load without the mutex. Otherwise the value is
  /// re-checked under the mutex before every park, which is what makes a
  /// concurrent notify impossible to miss (see the class comment), and the
  /// loop absorbs spurious condition-variable wakeups.
  value_type wait(value_type expected, std::memory_order order = std::memory_order_acquire) const noexcept {
    CAUSAL_DEBUG_ASSERT(detail::is_load_order(order), "park_word::wait: not a load order");
    value_type seen = word_.load(order);
    if (seen != expected) [[likely]] {
      return seen;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    // Under the mutex even a relaxed load cannot miss a change whose notify
    // has already run: that store is sequenced before the notifier's unlock,
    // which synchronizes with our lock. `order` is for the caller's data.
    while ((seen = word_.load(order)) == expected) {
      parked_.wait(lock);
    }
    return seen;
  }

  /// Blocks until the value differs from `expected` or `deadline` passes;
  /// returns true when it saw a different value, false on timeout.
  bool wait_until(value_type expected, std::chrono::steady_clock::time_point deadline,
                  std::memory_order order = std::memory_order_acquire) const noexcept {
    CAUSAL_DEBUG_ASSERT(detail::is_load_order(order), "park_word::wait_until: not a load order");
    if (word_.load(order) != expected) [[likely]] {
      return true;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    while (word_.load(order) == expected) {
      if (parked_.wait_until(lock, deadline) == std::cv_status::timeout) {
        return word_.load(order) != expected;
      }
    }
    return true;
  }

  /// Wakes at least one thread parked in wait(), if any.
  void notify_one() noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    parked_.notify_one();
  }

  /// Wakes every thread parked in wait().
  void notify_all() noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    parked_.notify_all();
  }

 private:
  std::atomic<value_type> word_;
  mutable std::mutex mutex_;
  mutable std::condition_variable parked_;
};

//===-- park_word ---------------------------------------------------------===//

/// True when park_word is native_park_word: CAUSAL_USE_CONDVAR_WAIT is off
/// and boost::atomic<std::uint32_t> waits without the compiled lock pool.
inline constexpr bool park_word_is_native =
    !CAUSAL_USE_CONDVAR_WAIT && boost::atomic<std::uint32_t>::always_has_native_wait_notify;

/// The park word the rest of the library uses; see the file comment.
using park_word = std::conditional_t<park_word_is_native, native_park_word, condvar_park_word>;

}  // namespace ext

CAUSAL_END_NAMESPACE
