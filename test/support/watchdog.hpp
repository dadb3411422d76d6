// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// watchdog: turns a hung test into a failure that shows why -- the state of
// the executors, queues and semaphores the test registered, and every
// thread's stack -- instead of a silent runner TIMEOUT.
//
// Three parts:
//
//   registry   a test registers what it wants in a dump, one line each,
//              and the registration ends with the guard's scope:
//
//                causal::executor ex(...);
//                const auto watched = causal::test::watch(ex, "ex");
//                causal::semaphore done;
//                const auto watched_done = causal::test::watch(done, "done");
//
//              watch() takes anything with `describe(std::ostream&)` (the
//              executor), a semaphore (value, failure, and the number of
//              parked host waiters where the type offers
//              `parked_waiters()`), a CPU queue (its process's completed
//              operations and state) or a process; watch_with() takes a
//              label and any callable `void(std::ostream&)`. A guard must
//              not outlive what it watches: declare it after the object.
//   progress   every test case and section boundary (a Catch2 listener in
//              catch_session.cpp) and every eventually() that succeeds
//              counts as progress; note_progress() adds one by hand.
//   the dog    run_catch_session() arms a thread that calls the test stalled
//              when no progress happened for CAUSAL_TEST_STALL_SECONDS
//              (default 60, times 5 under ThreadSanitizer and 3 under
//              AddressSanitizer, the CI's timeout multipliers; 0 turns it
//              off): it writes the dump to stderr and aborts, so the runner
//              reports FAIL with the dump. A SIGTERM (Meson's timeout)
//              gets the same dump before the process dies, and eventually()
//              writes one when it gives up (at most three per process).
//
// The dump reads the watched objects with relaxed atomic loads only
// (executor::describe and friends), so it is safe while they run; it never
// dereferences a process that a watched object does not own.
//
// Thread safety: watch, the guards, note_progress and dump_state may be
//                called from any thread; the registry takes a mutex.
// Blocking/allocation: note_progress never blocks or allocates, so it may
//                sit inside allocation-counted loops; registering takes a
//                mutex and never allocates; a dump allocates (it is the end).
// See also:      test/support/catch_session.cpp (arms it),
//                test/support/eventually.hpp, test/tools/check_watchdog.py
//                and test/unit/watchdog_stall.cpp (its own test),
//                <causal/executor.hpp> (describe).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <mutex>
#include <ostream>
#include <string>
#include <utility>

namespace causal::test {

//===-- progress ----------------------------------------------------------===//

namespace detail {

/// Progress events so far (relaxed: the watchdog only compares values).
inline std::atomic<std::uint64_t> progress_events{0};

/// The running test case and section, for the dump's header. Fixed
/// buffers: the listener writes them between sections, where a test may
/// be counting allocations.
struct current_test {
  std::mutex mutex;
  char test_case[256] = {};
  char section[256] = {};
  std::chrono::steady_clock::time_point since{};
};
inline current_test& current() noexcept {
  static current_test c;
  return c;
}

inline void copy_name(char (&to)[256], const char* from) noexcept {
  std::size_t n = from == nullptr ? 0 : std::strlen(from);
  if (n >= sizeof(to)) n = sizeof(to) - 1;
  if (n != 0) std::memcpy(to, from, n);
  to[n] = '\0';
}

}  // namespace detail

/// Records progress: the watchdog's stall clock starts again.
inline void note_progress() noexcept {
  detail::progress_events.fetch_add(1, std::memory_order_relaxed);
}

/// Called by the Catch2 listener: a test case (or a section of it) starts.
inline void note_test_case(const char* name) noexcept {
  detail::current_test& c = detail::current();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    detail::copy_name(c.test_case, name);
    c.section[0] = '\0';
    c.since = std::chrono::steady_clock::now();
  }
  note_progress();
}
inline void note_section(const char* name) noexcept {
  detail::current_test& c = detail::current();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    detail::copy_name(c.section, name);
  }
  note_progress();
}

//===-- registry ----------------------------------------------------------===//

/// The objects a dump describes; see the file comment.
class watch_registry {
 public:
  using describe_fn = void (*)(const void* object, std::ostream& out);
  static constexpr std::size_t capacity = 128;
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  static watch_registry& instance() noexcept {
    static watch_registry r;
    return r;
  }

  /// Adds an entry; returns its index, or npos when the registry is full
  /// (the object is then left out of dumps, and the dump says so).
  std::size_t add(const void* object, const char* label, describe_fn fn) noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    for (std::size_t i = 0; i < capacity; ++i) {
      if (entries_[i].fn == nullptr) {
        entries_[i] = entry{object, label, fn};
        return i;
      }
    }
    ++left_out_;
    return npos;
  }

  void remove(std::size_t index) noexcept {
    if (index == npos) return;
    std::lock_guard<std::mutex> lock(mutex_);
    entries_[index] = entry{};
  }

  /// Describes every entry to `out`; the mutex is held meanwhile, so a
  /// guard being destroyed waits and its object stays alive.
  void describe_all(std::ostream& out) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::size_t shown = 0;
    for (const entry& e : entries_) {
      if (e.fn == nullptr) continue;
      ++shown;
      out << "-- " << (e.label != nullptr ? e.label : "(unnamed)") << ":\n";
      e.fn(e.object, out);
      out << std::flush;
    }
    if (shown == 0) {
      out << "-- nothing registered (causal::test::watch(object, \"label\") adds an executor,\n"
             "   a queue or a semaphore to this dump)\n";
    }
    if (left_out_ != 0) out << "-- " << left_out_ << " more left out: the registry was full\n";
  }

 private:
  struct entry {
    const void* object = nullptr;
    const char* label = nullptr;
    describe_fn fn = nullptr;
  };
  std::mutex mutex_;
  std::array<entry, capacity> entries_{};
  std::size_t left_out_ = 0;
};

/// Keeps one object in the registry for its lifetime. Move-only.
class watch_guard {
 public:
  watch_guard() noexcept = default;
  watch_guard(const void* object, const char* label, watch_registry::describe_fn fn) noexcept
      : index_(watch_registry::instance().add(object, label, fn)) {}
  watch_guard(watch_guard&& other) noexcept
      : index_(std::exchange(other.index_, watch_registry::npos)) {}
  watch_guard& operator=(watch_guard&& other) noexcept {
    if (this != &other) {
      watch_registry::instance().remove(index_);
      index_ = std::exchange(other.index_, watch_registry::npos);
    }
    return *this;
  }
  watch_guard(const watch_guard&) = delete;
  watch_guard& operator=(const watch_guard&) = delete;
  ~watch_guard() { watch_registry::instance().remove(index_); }

 private:
  std::size_t index_ = watch_registry::npos;
};

namespace detail {

template <class T>
concept describable = requires(const T& t, std::ostream& out) { t.describe(out); };

template <class T>
concept semaphore_like = requires(const T& t) {
  t.value();
  t.failed();
};

template <class T>
concept cpu_queue_like = requires(T& t) {
  t.queue_process().completed();
  t.queue_process().snapshot();
};

template <class T>
concept snapshot_like = requires(const T& t, std::ostream& out) { t.snapshot().describe(out); };

template <class T>
void describe_object(const void* object, std::ostream& out) {
  // The registry stores objects as const void*; a queue's observers are
  // non-const members, and the dump only calls read-only ones.
  T& t = *const_cast<T*>(static_cast<const T*>(object));
  if constexpr (describable<T>) {
    t.describe(out);
  } else if constexpr (cpu_queue_like<T>) {
    auto& qp = t.queue_process();
    out << "queue: " << qp.completed() << " operations completed";
    if (!t.queue_status()) out << ", failed";
    out << "; its process: ";
    qp.snapshot().describe(out);
    out << "\n";
  } else if constexpr (semaphore_like<T>) {
    out << "semaphore " << object << ": value " << t.value();
    if (t.failed()) out << ", failed";
    if constexpr (requires { t.parked_waiters(); }) {
      out << ", parked waiters " << t.parked_waiters();
    } else {
      out << ", parked waiters unknown (the semaphore type has no parked_waiters())";
    }
    out << "\n";
  } else if constexpr (snapshot_like<T>) {
    out << "process " << object << ": ";
    t.snapshot().describe(out);
    out << "\n";
  } else {
    static_assert(describable<T>, "causal::test::watch: no way to describe this type; "
                                  "use watch_with(label, callable) instead");
  }
}

template <class F>
void describe_with(const void* object, std::ostream& out) {
  (*static_cast<const F*>(object))(out);
}

}  // namespace detail

/// Registers `object` under `label` (a string that outlives the guard,
/// e.g. a literal) until the returned guard is destroyed.
template <class T>
[[nodiscard]] watch_guard watch(const T& object, const char* label) noexcept {
  return watch_guard(&object, label, &detail::describe_object<T>);
}
/// A temporary would be gone before any dump (as with std::cref).
template <class T>
void watch(const T&& object, const char* label) = delete;

/// Registers `describe`, a callable `void(std::ostream&)` that writes what
/// a dump should show; the callable must outlive the guard, so name it:
///
///   const auto show = [&](std::ostream& out) { out << done.load() << "\n"; };
///   const auto watched = causal::test::watch_with("done", show);
template <class F>
[[nodiscard]] watch_guard watch_with(const char* label, const F& describe) noexcept {
  return watch_guard(&describe, label, &detail::describe_with<F>);
}
template <class F>
void watch_with(const char* label, const F&& describe) = delete;

//===-- dumps -------------------------------------------------------------===//

namespace detail {
/// Set by the armed watchdog (watchdog.cpp): writes every thread's stack.
inline std::atomic<void (*)(std::ostream&)> stack_writer{nullptr};
/// Dumps written so far (eventually() stops at three).
inline std::atomic<int> dumps_written{0};
}  // namespace detail

/// Writes the dump to stderr: `reason`, the running test, every watched
/// object and (when the watchdog is armed) every thread's stack.
inline void dump_state(const char* reason) {
  static std::mutex one_at_a_time;
  std::lock_guard<std::mutex> lock(one_at_a_time);
  detail::dumps_written.fetch_add(1, std::memory_order_relaxed);
  std::ostream& out = std::cerr;
  detail::current_test& c = detail::current();
  std::string test_case, section;
  double seconds = 0;
  {
    std::lock_guard<std::mutex> name_lock(c.mutex);
    test_case = c.test_case;
    section = c.section;
    if (c.since != std::chrono::steady_clock::time_point{}) {
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - c.since).count();
    }
  }
  out << "\n==== causal test watchdog: " << reason << " ====\n"
      << "test case: " << (test_case.empty() ? "(none yet)" : test_case) << "\n";
  if (!section.empty() && section != test_case) out << "section:   " << section << "\n";
  char took[64];
  std::snprintf(took, sizeof(took), "%.1f", seconds);
  out << "test case running for " << took << " s\n" << std::flush;
  watch_registry::instance().describe_all(out);
  if (auto* writer = detail::stack_writer.load(std::memory_order_acquire); writer != nullptr) {
    writer(out);
  }
  out << "==== end of causal test watchdog dump ====\n" << std::flush;
}

/// The dump eventually() writes when it gives up: at most three per
/// process, so a loop of failing waits does not bury the first one.
inline void dump_state_on_give_up(const char* reason) {
  if (detail::dumps_written.load(std::memory_order_relaxed) >= 3) return;
  dump_state(reason);
}

//===-- the watchdog thread (watchdog.cpp) --------------------------------===//

/// Starts the watchdog thread (see the file comment) unless
/// CAUSAL_TEST_STALL_SECONDS is 0; installs the SIGTERM hook.
void arm_watchdog() noexcept;
/// Stops it (at the end of the session).
void disarm_watchdog() noexcept;

}  // namespace causal::test
