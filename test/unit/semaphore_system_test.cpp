// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Tests for the system_wide scope of <causal/semaphore.hpp> across fork():
// the payload, the wake word and the failure code live in shared memory
// (memfd + boost::ipc_atomic), so a child that inherits the semaphore, or
// opens it from export_handle()'s descriptor, signals and waits with its
// parent; a child killed while parked leaves it usable; fail() in one
// process is failed() in the other; bad handles open as failed semaphores.
//
// Children never touch Catch2: they run a small function and leave with
// _exit(code), the code saying which check failed (0 = all passed). The
// parent reaps them with a bounded waitpid loop, so a lost wakeup fails the
// test (the child is killed) instead of hanging it.
//
// The fork cases also run under ThreadSanitizer: each fork happens while
// the test process has a single thread, which TSan supports (checked with
// g++ 12 and clang 14, 15 runs each, no report). The children start no
// threads.

#include <causal/semaphore.hpp>

#include "catch.hpp"
#include "string_makers.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>

#if CAUSAL_HAS_SYSTEM_SEMAPHORE()
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

namespace {

using causal::errc;
using causal::semaphore;
using causal::semaphore_scope;
using causal::semaphore_timepoint;
using causal::status;
using causal::system_semaphore_handle;

using namespace std::chrono_literals;

// Long enough that a child has, in practice, parked; correctness never
// depends on it, only what the test exercises.
constexpr auto settle_time = 50ms;

/// How long any child may take before it counts as hung (a hang guard:
/// no verdict waits for it on a passing run).
constexpr auto child_limit = 20s;

#if CAUSAL_HAS_SYSTEM_SEMAPHORE()

/// How a child ended: its exit code, or the signal that killed it.
struct child_end {
  bool exited = false;
  int code = -1;    // exit code when exited
  int signal = 0;   // terminating signal otherwise
};

/// Forks; the child runs `body` and _exits with its result (an int).
template <class Body>
pid_t spawn(Body body) {
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  return pid;
}

/// Reaps `pid`, waiting at most `limit`; a child still running then is
/// killed and reported as hung (nullopt).
std::optional<child_end> reap(pid_t pid, std::chrono::milliseconds limit = child_limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    int st = 0;
    const pid_t r = ::waitpid(pid, &st, WNOHANG);
    if (r == pid) {
      child_end end;
      end.exited = WIFEXITED(st);
      if (end.exited) end.code = WEXITSTATUS(st);
      if (WIFSIGNALED(st)) end.signal = WTERMSIG(st);
      return end;
    }
    if (r < 0) return std::nullopt;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &st, 0);
      return std::nullopt;
    }
    std::this_thread::sleep_for(1ms);
  }
}

/// REQUIREs that the child exited with code 0.
void require_clean_exit(pid_t pid) {
  REQUIRE(pid > 0);
  const auto end = reap(pid);
  INFO("child " << pid << (end ? "" : " hung and was killed"));
  REQUIRE(end.has_value());
  CAPTURE(end->exited, end->code, end->signal);
  REQUIRE(end->exited);
  REQUIRE(end->code == 0);
}

#endif

}  // namespace

#if CAUSAL_HAS_SYSTEM_SEMAPHORE()

TEST_CASE("semaphore system_wide: creation maps shared memory and exports a handle",
          "[semaphore][system]") {
  semaphore s{3, semaphore_scope::system_wide};
  REQUIRE_FALSE(s.failed());
  CHECK(s.scope() == semaphore_scope::system_wide);
  CHECK(s.value() == 3);
  REQUIRE(s.signal(4, causal::frontier{{causal::axis{1}, 4}}));
  CHECK(s.value() == 4);
  // Our own signals are witnessed here: exact, untainted.
  const auto at4 = s.frontier_at(4);
  REQUIRE(at4.has_value());
  CHECK_FALSE(at4->value_tainted);
  CHECK(at4->frontier.epoch_of(causal::axis{1}) == 4);
  const auto handle = s.export_handle();
  REQUIRE(handle);
  CHECK(handle->fd >= 0);
  ::close(handle->fd);
}

TEST_CASE("semaphore system_wide: a second opener in the same process shares the payload, and "
          "sees its signals as external",
          "[semaphore][system]") {
  semaphore s{0, semaphore_scope::system_wide};
  REQUIRE(s.signal(2));
  const auto handle = s.export_handle();
  REQUIRE(handle);
  semaphore opened{*handle};
  ::close(handle->fd);  // the opener keeps its own descriptor
  REQUIRE_FALSE(opened.failed());
  CHECK(opened.scope() == semaphore_scope::system_wide);
  CHECK(opened.value() == 2);
  // Reached before we opened: external to us.
  CHECK(opened.is_tainted(2));
  const auto at2 = opened.frontier_at(2);
  REQUIRE(at2.has_value());
  CHECK(at2->value_tainted);
  CHECK(at2->frontier.tainted());

  // Signals through either object advance the one payload; a value is
  // accepted once, whoever signals it.
  REQUIRE(opened.signal(5));
  CHECK(s.value() == 5);
  CHECK(s.signal(5).code() == errc::not_increasing);
  CHECK(s.signal(4).code() == errc::not_increasing);
  CHECK(s.wait_for(5, 1s).ok());
  CHECK(s.is_tainted(5));  // the creator did not witness it

  // poll() absorbs the remote advance: timepoints fire.
  int runs = 0;
  semaphore_timepoint tp{6, [](semaphore_timepoint& t, status st) noexcept {
                           if (st) ++*static_cast<int*>(t.user_data());
                         },
                         &runs};
  s.add_timepoint(tp);
  REQUIRE(opened.signal(6));
  CHECK(runs == 0);  // not seen here until polled
  CHECK(s.poll() == 6);
  CHECK(runs == 1);
  CHECK(s.poll() == 6);
  CHECK(runs == 1);
  // A witnessed signal here heals the taint below it.
  REQUIRE(s.signal(7, causal::frontier{}));
  CHECK_FALSE(s.is_tainted(6));
}

TEST_CASE("semaphore system_wide: a child that inherits the semaphore signals; the parent's "
          "wait sees it",
          "[semaphore][system][fork]") {
  semaphore s{0, semaphore_scope::system_wide};
  REQUIRE_FALSE(s.failed());
  int runs = 0;
  semaphore_timepoint tp{3, [](semaphore_timepoint& t, status st) noexcept {
                           if (st) ++*static_cast<int*>(t.user_data());
                         },
                         &runs};
  s.add_timepoint(tp);

  const pid_t child = spawn([&] {
    std::this_thread::sleep_for(settle_time);  // let the parent park
    return s.signal(5) ? 0 : 1;
  });
  const status st = s.wait_for(5, child_limit);
  require_clean_exit(child);
  REQUIRE(st.ok());
  CHECK(s.value() == 5);
  CHECK(s.is_tainted(5));
  CHECK(runs == 0);
  s.poll();
  CHECK(runs == 1);
  // The child's signal is the one recorded: ours is not increasing.
  CHECK(s.signal(5).code() == errc::not_increasing);
}

TEST_CASE("semaphore system_wide: a child opens the exported handle, and the two signal and "
          "wait on each other",
          "[semaphore][system][fork]") {
  semaphore s{0, semaphore_scope::system_wide};
  const auto handle = s.export_handle();
  REQUIRE(handle);
  const pid_t child = spawn([h = *handle] {
    semaphore opened{h};
    if (opened.failed()) return 2;
    if (!opened.signal(7)) return 3;  // ping
    if (!opened.wait_for(9, child_limit)) return 4;  // pong from the parent
    if (opened.value() != 9) return 5;
    if (!opened.is_tainted(9)) return 6;  // the parent's signal is external here
    return 0;
  });
  ::close(handle->fd);
  REQUIRE(s.wait_for(7, child_limit).ok());
  REQUIRE(s.signal(9));
  require_clean_exit(child);
  CHECK(s.value() == 9);
}

TEST_CASE("semaphore system_wide: the parent signals, the child's wait returns by the result",
          "[semaphore][system][fork]") {
  semaphore s{0, semaphore_scope::system_wide};
  SECTION("signalled in time: the child's wait is ok") {
    const pid_t child = spawn([&] { return s.wait_for(3, child_limit).ok() ? 0 : 1; });
    std::this_thread::sleep_for(settle_time);
    REQUIRE(s.signal(3));
    require_clean_exit(child);
  }
  SECTION("never signalled: the child's wait times out") {
    const pid_t child = spawn([&] {
      const status st = s.wait_for(3, 30ms);
      return st.code() == errc::timeout ? 0 : 1;
    });
    require_clean_exit(child);
    CHECK(s.value() == 0);
  }
}

TEST_CASE("semaphore system_wide: a child killed while parked leaves the semaphore usable",
          "[semaphore][system][fork]") {
  semaphore s{0, semaphore_scope::system_wide};
  const pid_t victim = spawn([&] {
    (void)s.wait_until(100, semaphore::clock::time_point::max(), /*spin=*/0);
    return 1;  // never reached
  });
  REQUIRE(victim > 0);
  std::this_thread::sleep_for(settle_time);
  REQUIRE(::kill(victim, SIGKILL) == 0);
  const auto end = reap(victim);
  REQUIRE(end.has_value());
  CHECK_FALSE(end->exited);
  CHECK(end->signal == SIGKILL);

  // The parent signals and waits as before.
  REQUIRE(s.signal(1));
  REQUIRE(s.wait_for(1, 1s).ok());
  // A second child can still park and be woken.
  const pid_t second = spawn([&] {
    return s.wait_until(2, semaphore::clock::now() + child_limit, /*spin=*/0).ok() ? 0 : 1;
  });
  std::this_thread::sleep_for(settle_time);
  REQUIRE(s.signal(2));
  require_clean_exit(second);
  // And a child can still signal the parent.
  const pid_t third = spawn([&] { return s.signal(3) ? 0 : 1; });
  REQUIRE(s.wait_for(3, child_limit).ok());
  require_clean_exit(third);
}

TEST_CASE("semaphore system_wide: fail() in one process is failed() in the other",
          "[semaphore][system][fork][fail]") {
  SECTION("the child fails it; the parent's pending wait and poll see it") {
    semaphore s{0, semaphore_scope::system_wide};
    errc seen = errc::ok;
    semaphore_timepoint tp{5, [](semaphore_timepoint& t, status st) noexcept {
                             *static_cast<errc*>(t.user_data()) = st.code();
                           },
                           &seen};
    s.add_timepoint(tp);
    const pid_t child = spawn([&] {
      std::this_thread::sleep_for(settle_time);
      return s.fail(causal::error{errc::device_lost, "child lost its device"}) ? 0 : 1;
    });
    const status st = s.wait_for(5, child_limit);
    require_clean_exit(child);
    CHECK(st.code() == errc::device_lost);
    REQUIRE(s.failed());
    CHECK(s.failure()->code() == errc::device_lost);
    CHECK(s.try_wait(0));  // reached before the failure: stays reached
    CHECK_FALSE(s.try_wait(1));
    CHECK(s.signal(1).code() == errc::device_lost);
    // Timepoints learn it when this process polls.
    s.poll();
    CHECK(seen == errc::device_lost);
  }
  SECTION("the parent fails it while the child is parked") {
    semaphore s{0, semaphore_scope::system_wide};
    const pid_t child = spawn([&] {
      const status st = s.wait_until(5, semaphore::clock::now() + child_limit, 0);
      if (st.code() != errc::device_lost) return 1;
      if (!s.failed()) return 2;
      return s.failure()->code() == errc::device_lost ? 0 : 3;
    });
    std::this_thread::sleep_for(settle_time);
    REQUIRE(s.fail(causal::error{errc::device_lost, "parent lost its device"}));
    require_clean_exit(child);
  }
}

TEST_CASE("semaphore system_wide: wait_all and wait_any see another process's signal and "
          "failure",
          "[semaphore][system][fork][multi]") {
  semaphore remote{0, semaphore_scope::system_wide};
  semaphore local;
  std::array<causal::wait_point<semaphore>, 2> points{{{&remote, 1}, {&local, 1}}};
  SECTION("wait_any wakes on the remote signal") {
    const pid_t child = spawn([&] {
      std::this_thread::sleep_for(settle_time);
      return remote.signal(1) ? 0 : 1;
    });
    const auto r = causal::wait_any<semaphore>(points, semaphore::clock::now() + child_limit,
                                               /*spin=*/0);
    require_clean_exit(child);
    REQUIRE(r);  // woken by the signal: at the deadline it would be a timeout
    CHECK(*r == 0);
  }
  SECTION("wait_all completes when the remote half arrives last") {
    REQUIRE(local.signal(1));
    const pid_t child = spawn([&] {
      std::this_thread::sleep_for(settle_time);
      return remote.signal(1) ? 0 : 1;
    });
    const status st =
        causal::wait_all<semaphore>(points, semaphore::clock::now() + child_limit, /*spin=*/0);
    require_clean_exit(child);
    CHECK(st.ok());  // not errc::timeout: the remote half woke it
  }
  SECTION("a remote failure ends wait_all") {
    const pid_t child = spawn([&] {
      std::this_thread::sleep_for(settle_time);
      return remote.fail(causal::error{errc::device_lost, "lost"}) ? 0 : 1;
    });
    const status st =
        causal::wait_all<semaphore>(points, semaphore::clock::now() + child_limit, /*spin=*/0);
    require_clean_exit(child);
    CHECK(st.code() == errc::device_lost);  // not errc::timeout
  }
}

TEST_CASE("semaphore system_wide: bad handles open as semaphores failed with invalid_argument",
          "[semaphore][system][errors]") {
  const auto check_bad = [](const semaphore& s) {
    REQUIRE(s.failed());
    REQUIRE(s.failure().has_value());
    CHECK(s.failure()->code() == errc::invalid_argument);
    CHECK(s.wait_for(1, 1ms).code() == errc::invalid_argument);
  };
  SECTION("fd -1") {
    semaphore s{system_semaphore_handle{-1}};
    check_bad(s);
    CHECK(s.scope() == semaphore_scope::system_wide);
  }
  SECTION("a descriptor that is not open") {
    semaphore s{system_semaphore_handle{1 << 20}};
    check_bad(s);
  }
  SECTION("a small regular file") {
    std::FILE* f = std::tmpfile();
    REQUIRE(f != nullptr);
    REQUIRE(std::fwrite("abcd", 1, 4, f) == 4);
    REQUIRE(std::fflush(f) == 0);
    semaphore s{system_semaphore_handle{::fileno(f)}};
    check_bad(s);
    std::fclose(f);
  }
  SECTION("a large enough regular file without the magic") {
    std::FILE* f = std::tmpfile();
    REQUIRE(f != nullptr);
    const std::string zeros(4096, '\0');
    REQUIRE(std::fwrite(zeros.data(), 1, zeros.size(), f) == zeros.size());
    REQUIRE(std::fflush(f) == 0);
    semaphore s{system_semaphore_handle{::fileno(f)}};
    check_bad(s);
    std::fclose(f);
  }
  SECTION("a bad handle's semaphore rejects signals and fires timepoints with the error") {
    semaphore s{system_semaphore_handle{-1}};
    CHECK(s.signal(1).code() == errc::invalid_argument);
    errc seen = errc::ok;
    semaphore_timepoint tp{1, [](semaphore_timepoint& t, status st) noexcept {
                             *static_cast<errc*>(t.user_data()) = st.code();
                           },
                           &seen};
    s.add_timepoint(tp);
    CHECK(seen == errc::invalid_argument);
  }
}

#else

TEST_CASE("semaphore system_wide: unsupported here, creation reports it", "[semaphore][system]") {
  semaphore s{0, semaphore_scope::system_wide};
  CHECK(s.failed());
}

#endif
