// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Tests for <causal/process.hpp> and <causal/scope.hpp>: layout, the
// suspend count (exactly the wake that reaches 0 activates), first error
// wins, cancel (no-op wakes, inline resolution of suspended processes, an
// earlier error preserved), completion once then dependents (even when the
// completion frees the process), error cascade to dependents, release
// ordering, sleep/re-wake, rearm, scopes (sticky failure, wait_idle,
// cancel_all), and the promise that wake/drain/complete allocate nothing.
//
// Most cases drive a worker-less executor (worker_count 0) by hand with
// run_until_idle(), so every step is deterministic; the races use threads.
// Catch2 assertions are only made on the test's own thread.

#include <causal/executor.hpp>
#include <causal/process.hpp>
#include <causal/scope.hpp>

#include "catch.hpp"
#include "counting_new.hpp"
#include "string_makers.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

using causal::drain_result;
using causal::errc;
using causal::error;
using causal::executor;
using causal::executor_options;
using causal::process;
using causal::scope;
using causal::status;
using causal::worker_context;

using namespace std::chrono_literals;

/// A worker-less executor: the test drives it with run_until_idle().
executor_options manual() { return executor_options{.worker_count = 0}; }

/// What happened to a process; plain fields (single-threaded use) except
/// where noted.
struct probe {
  int drains = 0;
  int completions = 0;
  int releases = 0;
  errc completed_with = errc::ok;
  std::thread::id completion_thread{};
  int order = 0;  // global sequence number of the completion
  bool released_after_completion = false;
  drain_result next = drain_result::complete();
};

std::atomic<int> sequence{0};

drain_result probe_drain(process& p, worker_context&) noexcept {
  auto* pr = static_cast<probe*>(p.user_data());
  ++pr->drains;
  return pr->next;
}

void probe_completion(process& p, status s) noexcept {
  auto* pr = static_cast<probe*>(p.user_data());
  ++pr->completions;
  pr->completed_with = s.code();
  pr->completion_thread = std::this_thread::get_id();
  pr->order = ++sequence;
}

void probe_release(process& p) noexcept {
  auto* pr = static_cast<probe*>(p.user_data());
  ++pr->releases;
  pr->released_after_completion = pr->completions == 1;
}

/// A process wired to its probe.
struct node {
  probe seen;
  process p;
  node() : p(&probe_drain, &seen) {
    p.set_completion(&probe_completion);
    p.set_release(&probe_release);
  }
};

}  // namespace

//===-- shape ---------------------------------------------------------------===//

TEST_CASE("process: layout is three cache lines grouped by writer", "[process][basics]") {
  STATIC_REQUIRE(sizeof(process) == 3 * CAUSAL_CACHELINE_SIZE);
  STATIC_REQUIRE(alignof(process) == CAUSAL_CACHELINE_SIZE);
  STATIC_REQUIRE(std::is_standard_layout_v<process>);
  STATIC_REQUIRE(!std::is_copy_constructible_v<process>);
  STATIC_REQUIRE(!std::is_move_constructible_v<process>);
  STATIC_REQUIRE(std::is_same_v<process::drain_fn, drain_result (*)(process&, worker_context&) noexcept>);
  STATIC_REQUIRE(std::is_same_v<process::completion_fn, void (*)(process&, status) noexcept>);
  STATIC_REQUIRE(std::is_same_v<process::release_fn, void (*)(process&) noexcept>);
  STATIC_REQUIRE(noexcept(std::declval<process&>().wake()));
  STATIC_REQUIRE(noexcept(std::declval<process&>().suspend()));
  STATIC_REQUIRE(noexcept(std::declval<process&>().cancel()));
  STATIC_REQUIRE(noexcept(std::declval<process&>().fail(error{})));
  STATIC_REQUIRE(std::is_nothrow_default_constructible_v<process>);
}

TEST_CASE("process: a new process holds one suspension (the submit hold) and no error",
          "[process][basics]") {
  node n;
  CHECK(n.p.suspend_count() == 1);
  CHECK_FALSE(n.p.is_active());
  CHECK_FALSE(n.p.is_complete());
  CHECK_FALSE(n.p.is_cancelled());
  CHECK_FALSE(n.p.is_submitted());
  CHECK(n.p.current_status().ok());
  CHECK(n.p.wake_budget() == 1);
  CHECK(n.p.priority() == 0);
  CHECK(n.p.user_data() == &n.seen);
  CHECK(n.p.drain() == &probe_drain);
  CHECK(n.p.completion() == &probe_completion);
  CHECK(n.p.release() == &probe_release);
  CHECK(n.p.dependents().empty());
  n.p.set_wake_budget(0);
  CHECK(n.p.wake_budget() == 1);  // 0 means 1
  n.p.set_wake_budget(6);
  CHECK(n.p.wake_budget() == 6);
  n.p.set_priority(7);
  CHECK(n.p.priority() == 7);

  constexpr drain_result c = drain_result::complete();
  STATIC_REQUIRE(c.completed);
  constexpr drain_result m = drain_result::more();
  STATIC_REQUIRE((!m.completed && m.did_work && m.keep_active));
  constexpr drain_result i = drain_result::idle();
  STATIC_REQUIRE((!i.completed && !i.did_work && i.keep_active));
  constexpr drain_result s = drain_result::sleep(false);
  STATIC_REQUIRE((!s.completed && !s.did_work && !s.keep_active));
  constexpr worker_context ctx(3, 5);
  STATIC_REQUIRE(ctx.worker_index() == 3);
  STATIC_REQUIRE(ctx.index_bound() == 5);
}

//===-- wake ----------------------------------------------------------------===//

TEST_CASE("process: only the wake that drives the suspend count to 0 makes it runnable",
          "[process][wake]") {
  executor ex(manual());
  node n;
  n.p.suspend(3);
  CHECK(n.p.suspend_count() == 4);
  ex.submit(n.p);
  CHECK(n.p.is_submitted());
  CHECK(n.p.suspend_count() == 3);
  CHECK_FALSE(n.p.is_active());
  CHECK(n.p.wake());
  CHECK(n.p.wake());
  ex.run_until_idle();
  CHECK(n.seen.drains == 0);
  CHECK_FALSE(n.p.is_active());
  CHECK(n.p.wake());
  CHECK(n.p.is_active());
  CHECK(n.p.suspend_count() == 0);
  ex.run_until_idle();
  CHECK(n.seen.drains == 1);
  CHECK(n.seen.completions == 1);
  CHECK(n.seen.releases == 1);
  CHECK(n.seen.completed_with == errc::ok);
  CHECK(n.p.is_complete());
}

TEST_CASE("process: wake(n) drops n suspensions at once", "[process][wake]") {
  executor ex(manual());
  node n;
  n.p.suspend(5);
  ex.submit(n.p);
  CHECK(n.p.wake(4));
  CHECK(n.p.suspend_count() == 1);
  CHECK_FALSE(n.p.is_active());
  CHECK(n.p.wake(1));
  ex.run_until_idle();
  CHECK(n.seen.completions == 1);
}

TEST_CASE("process: concurrent wakes activate exactly once", "[process][wake][race]") {
  constexpr int threads = 4;
  constexpr int rounds = 300;
  executor ex(manual());
  int failures = 0;
  for (int round = 0; round < rounds; ++round) {
    node n;
    n.p.suspend(threads);
    ex.submit(n.p);  // count: threads
    std::atomic<bool> go{false};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&] {
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        (void)n.p.wake();
      });
    }
    go.store(true, std::memory_order_release);
    for (auto& t : pool) t.join();
    ex.run_until_idle();
    if (n.seen.drains != 1 || n.seen.completions != 1 || n.seen.releases != 1) ++failures;
  }
  CHECK(failures == 0);
}

TEST_CASE("process: waking a cancelled or completed process is a no-op returning false",
          "[process][wake][cancel]") {
  executor ex(manual());
  SECTION("cancelled while suspended") {
    node n;
    n.p.suspend(2);
    ex.submit(n.p);
    CHECK(n.p.cancel());
    CHECK(n.p.is_cancelled());
    const std::uint32_t count = n.p.suspend_count();
    CHECK_FALSE(n.p.wake());
    CHECK(n.p.suspend_count() == count);
    ex.run_until_idle();
    CHECK(n.seen.drains == 0);
    CHECK(n.seen.completions == 1);
  }
  SECTION("cancelled while queued: completes without draining") {
    node m;
    ex.submit(m.p);  // runnable, but no worker ran it yet
    CHECK(m.p.is_active());
    CHECK(m.p.cancel());
    CHECK_FALSE(m.p.wake(0));
    ex.run_until_idle();
    CHECK(m.seen.drains == 0);
    CHECK(m.seen.completions == 1);
    CHECK(m.seen.completed_with == errc::cancelled);
  }
  SECTION("completed") {
    node n;
    ex.submit(n.p);
    ex.run_until_idle();
    REQUIRE(n.p.is_complete());
    CHECK_FALSE(n.p.wake(0));
    CHECK_FALSE(n.p.cancel());
    CHECK_FALSE(n.p.fail(error{errc::device_lost, "late"}));
    CHECK(n.p.current_status().ok());
    CHECK(n.seen.completions == 1);
  }
}

//===-- errors --------------------------------------------------------------===//

TEST_CASE("process: the first error wins", "[process][errors]") {
  node n;
  CHECK(n.p.fail(error{errc::device_lost, "first", 1}));
  CHECK_FALSE(n.p.fail(error{errc::timeout, "second", 2}));
  CHECK(n.p.current_status().code() == errc::device_lost);
  CHECK(n.p.current_status().error_value().position() == 1);
  CHECK(n.p.current_status().error_value().message() == "first");
}

TEST_CASE("process: concurrent failures record exactly one error", "[process][errors][race]") {
  constexpr int threads = 4;
  for (int round = 0; round < 200; ++round) {
    process p;
    std::atomic<int> winners{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        if (p.fail(error{errc::device_lost, "racing", static_cast<std::uint64_t>(t)})) winners.fetch_add(1);
      });
    }
    go.store(true);
    for (auto& t : pool) t.join();
    REQUIRE(winners.load() == 1);
    REQUIRE(p.current_status().code() == errc::device_lost);
  }
}

TEST_CASE("process: cancel() preserves an earlier error", "[process][errors][cancel]") {
  executor ex(manual());
  node n;
  n.p.suspend();
  ex.submit(n.p);
  CHECK(n.p.fail(error{errc::device_lost, "earlier"}));
  CHECK(n.p.cancel());
  CHECK(n.p.is_cancelled());
  CHECK(n.p.current_status().code() == errc::device_lost);
  CHECK(n.seen.completions == 1);
  CHECK(n.seen.completed_with == errc::device_lost);
}

TEST_CASE("process: a failed process completes with its error before its next drain",
          "[process][errors]") {
  executor ex(manual());
  node n;
  // It asks to be drained again, but fails itself on the first call.
  n.p.set_drain([](process& self, worker_context&) noexcept {
    auto* pr = static_cast<probe*>(self.user_data());
    ++pr->drains;
    (void)self.fail(error{errc::out_of_range, "tile out of range", 42});
    return drain_result::more();
  });
  ex.submit(n.p);
  ex.run_until_idle();
  CHECK(n.seen.drains == 1);
  CHECK(n.seen.completions == 1);
  CHECK(n.seen.completed_with == errc::out_of_range);
  CHECK(n.p.current_status().error_value().position() == 42);
}

//===-- cancel --------------------------------------------------------------===//

TEST_CASE("process: cancelling a suspended process resolves it inline and wakes its dependents",
          "[process][cancel]") {
  executor ex(manual());
  node a, b, c;
  std::array<process*, 2> deps{&b.p, &c.p};
  a.p.set_dependents(deps);
  a.p.suspend();  // waits for something that will never come
  b.p.suspend();
  c.p.suspend(2);  // c also waits for something else
  ex.submit(a.p);
  ex.submit(b.p);
  ex.submit(c.p);
  CHECK(a.p.cancel());
  // Inline: on this thread, before cancel() returned.
  CHECK(a.seen.completions == 1);
  CHECK(a.seen.releases == 1);
  CHECK(a.seen.completed_with == errc::cancelled);
  CHECK(a.seen.completion_thread == std::this_thread::get_id());
  CHECK(a.seen.drains == 0);
  // Dependents were woken and inherited the error.
  CHECK(b.p.suspend_count() == 0);
  CHECK(b.p.is_active());
  CHECK(b.p.current_status().code() == errc::cancelled);
  CHECK(c.p.suspend_count() == 1);
  CHECK(c.p.current_status().code() == errc::cancelled);
  ex.run_until_idle();
  CHECK(b.seen.drains == 0);  // it bails: sees the error
  CHECK(b.seen.completions == 1);
  CHECK(b.seen.completed_with == errc::cancelled);
  CHECK(c.seen.completions == 0);
  CHECK(c.p.wake());
  ex.run_until_idle();
  CHECK(c.seen.drains == 0);
  CHECK(c.seen.completed_with == errc::cancelled);
  CHECK_FALSE(a.p.cancel());  // second cancel: no-op
}

TEST_CASE("process: a process never submitted can be cancelled", "[process][cancel]") {
  node n;
  CHECK(n.p.cancel());
  CHECK(n.seen.completions == 1);
  CHECK(n.seen.releases == 1);
  CHECK(n.seen.completed_with == errc::cancelled);
  CHECK(n.p.is_complete());
}

TEST_CASE("process: cancelling an active process completes it before its next drain",
          "[process][cancel]") {
  executor ex(manual());
  node n;
  n.p.set_drain([](process& self, worker_context&) noexcept {
    auto* pr = static_cast<probe*>(self.user_data());
    ++pr->drains;
    (void)self.cancel();  // from inside: it is active
    return drain_result::more();
  });
  ex.submit(n.p);
  ex.run_until_idle();
  CHECK(n.seen.drains == 1);
  CHECK(n.seen.completions == 1);
  CHECK(n.seen.completed_with == errc::cancelled);
}

//===-- completion and dependents ---------------------------------------------===//

TEST_CASE("process: completion runs once, then every dependent is woken, then release",
          "[process][completion]") {
  executor ex(manual());
  sequence = 0;
  node a, b, c;
  std::array<process*, 2> deps{&b.p, &c.p};
  a.p.set_dependents(deps);
  b.p.suspend();
  c.p.suspend();
  ex.submit(b.p);
  ex.submit(c.p);
  ex.submit(a.p);
  ex.run_until_idle();
  CHECK(a.seen.completions == 1);
  CHECK(a.seen.releases == 1);
  CHECK(a.seen.released_after_completion);
  CHECK(b.seen.completions == 1);
  CHECK(c.seen.completions == 1);
  CHECK(a.seen.order < b.seen.order);
  CHECK(a.seen.order < c.seen.order);
}

namespace {
struct owned_by_completion {
  process p;
  int* completions;
};
}  // namespace

TEST_CASE("process: dependents are woken even when the completion callback frees the process",
          "[process][completion]") {
  executor ex(manual());
  int completions = 0;
  node b, c, d;
  std::array<process*, 3> deps{&b.p, &c.p, &d.p};  // outlives the freed process
  auto* owner = new owned_by_completion{{}, &completions};
  owner->p.set_drain([](process&, worker_context&) noexcept { return drain_result::complete(); });
  owner->p.set_user_data(owner);
  owner->p.set_completion([](process& self, status) noexcept {
    auto* o = static_cast<owned_by_completion*>(self.user_data());
    ++*o->completions;
    delete o;  // no release callback: completion may free it
  });
  owner->p.set_dependents(deps);
  for (node* n : {&b, &c, &d}) {
    n->p.suspend();
    ex.submit(n->p);
  }
  ex.submit(owner->p);
  ex.run_until_idle();
  CHECK(completions == 1);
  CHECK(b.seen.completions == 1);
  CHECK(c.seen.completions == 1);
  CHECK(d.seen.completions == 1);

  // The same when the process is resolved inline by cancel().
  completions = 0;
  node e;
  std::array<process*, 1> one{&e.p};
  owner = new owned_by_completion{{}, &completions};
  owner->p.set_drain([](process&, worker_context&) noexcept { return drain_result::complete(); });
  owner->p.set_user_data(owner);
  owner->p.set_completion([](process& self, status s) noexcept {
    auto* o = static_cast<owned_by_completion*>(self.user_data());
    if (s.code() == errc::cancelled) ++*o->completions;
    delete o;
  });
  owner->p.set_dependents(one);
  e.p.suspend();
  ex.submit(e.p);
  owner->p.suspend();
  ex.submit(owner->p);
  owner->p.cancel();
  CHECK(completions == 1);
  ex.run_until_idle();
  CHECK(e.seen.completions == 1);
  CHECK(e.seen.completed_with == errc::cancelled);
}

TEST_CASE("process: dependents of a failed process still activate and see the error",
          "[process][completion][errors]") {
  executor ex(manual());
  node a, b, c;
  std::array<process*, 1> ab{&b.p};
  std::array<process*, 1> bc{&c.p};
  a.p.set_dependents(ab);
  b.p.set_dependents(bc);
  a.p.set_drain([](process& self, worker_context&) noexcept {
    auto* pr = static_cast<probe*>(self.user_data());
    ++pr->drains;
    (void)self.fail(error{errc::device_lost, "boom", 7});
    return drain_result::complete();
  });
  b.p.suspend();
  c.p.suspend();
  ex.submit(c.p);
  ex.submit(b.p);
  ex.submit(a.p);
  ex.run_until_idle();
  CHECK(a.seen.completed_with == errc::device_lost);
  CHECK(b.seen.completions == 1);
  CHECK(b.seen.drains == 0);
  CHECK(b.seen.completed_with == errc::device_lost);
  CHECK(b.p.current_status().error_value().position() == 7);
  CHECK(c.seen.completions == 1);
  CHECK(c.seen.completed_with == errc::device_lost);
  CHECK(c.seen.drains == 0);
}

TEST_CASE("process: a dependent that failed first keeps its own error", "[process][errors]") {
  executor ex(manual());
  node a, b;
  std::array<process*, 1> ab{&b.p};
  a.p.set_dependents(ab);
  a.p.set_drain([](process& self, worker_context&) noexcept {
    (void)self.fail(error{errc::device_lost, "upstream"});
    return drain_result::complete();
  });
  b.p.suspend();
  ex.submit(b.p);
  CHECK(b.p.fail(error{errc::timeout, "own"}));
  ex.submit(a.p);
  ex.run_until_idle();
  CHECK(b.seen.completed_with == errc::timeout);
}

//===-- sleep, re-wake, rearm ---------------------------------------------------===//

namespace {
struct sleeper {
  process p;
  int drains = 0;
  int wakes_wanted = 0;
  int completions = 0;
};

drain_result sleeper_drain(process& self, worker_context&) noexcept {
  auto* s = static_cast<sleeper*>(self.user_data());
  ++s->drains;
  if (s->drains > s->wakes_wanted) return drain_result::complete();
  self.suspend();  // then sleep until woken
  return drain_result::sleep();
}
}  // namespace

TEST_CASE("process: a process sleeps after suspend() + sleep() and resumes on wake",
          "[process][sleep]") {
  executor ex(manual());
  sleeper s;
  s.wakes_wanted = 5;
  s.p.set_drain(&sleeper_drain);
  s.p.set_user_data(&s);
  s.p.set_completion([](process& self, status) noexcept {
    ++static_cast<sleeper*>(self.user_data())->completions;
  });
  ex.submit(s.p);
  for (int cycle = 1; cycle <= 5; ++cycle) {
    ex.run_until_idle();
    CHECK(s.drains == cycle);
    CHECK_FALSE(s.p.is_active());  // asleep
    CHECK(s.p.suspend_count() == 1);
    ex.run_until_idle();
    CHECK(s.drains == cycle);  // nothing runs while asleep
    CHECK(s.p.wake());
  }
  ex.run_until_idle();
  CHECK(s.drains == 6);
  CHECK(s.completions == 1);
}

TEST_CASE("process: a wake that arrives while the process is draining is not lost",
          "[process][sleep]") {
  executor ex(manual());
  sleeper s;
  s.wakes_wanted = 3;
  s.p.set_user_data(&s);
  // Suspends, and wakes itself before returning sleep: the executor must
  // notice the count is back at 0 and drain it again.
  s.p.set_drain([](process& self, worker_context&) noexcept {
    auto* st = static_cast<sleeper*>(self.user_data());
    ++st->drains;
    if (st->drains > st->wakes_wanted) return drain_result::complete();
    self.suspend();
    (void)self.wake();
    return drain_result::sleep();
  });
  s.p.set_completion([](process& self, status) noexcept {
    ++static_cast<sleeper*>(self.user_data())->completions;
  });
  ex.submit(s.p);
  ex.run_until_idle();
  CHECK(s.drains == 4);
  CHECK(s.completions == 1);
}

TEST_CASE("process: keep_active = false without a suspension drains again later",
          "[process][sleep]") {
  executor ex(manual());
  node n;
  n.p.set_drain([](process& self, worker_context&) noexcept {
    auto* pr = static_cast<probe*>(self.user_data());
    ++pr->drains;
    return pr->drains < 3 ? drain_result::sleep() : drain_result::complete();
  });
  ex.submit(n.p);
  ex.run_until_idle();
  CHECK(n.seen.drains == 3);
  CHECK(n.seen.completions == 1);
}

TEST_CASE("process: rearm() runs a completed process again", "[process][rearm]") {
  executor ex(manual());
  node a, b;
  std::array<process*, 1> ab{&b.p};
  a.p.set_dependents(ab);
  b.p.suspend();
  ex.submit(b.p);
  ex.submit(a.p);
  ex.run_until_idle();
  REQUIRE(b.seen.completions == 1);
  for (int round = 2; round <= 4; ++round) {
    b.p.rearm(1);
    a.p.rearm(1);
    CHECK(b.p.suspend_count() == 1);
    CHECK_FALSE(b.p.is_complete());
    CHECK(b.p.current_status().ok());
    ex.run_until_idle();
    CHECK(a.seen.completions == round - 1);
    CHECK(a.p.wake());
    ex.run_until_idle();
    CHECK(a.seen.completions == round);
    CHECK(b.seen.completions == round);
    CHECK(b.seen.releases == round);
  }
  a.p.rearm(0);  // 0: activated at once
  ex.run_until_idle();
  CHECK(a.seen.completions == 5);
  b.p.rearm(1);
  ex.run_until_idle();
}

TEST_CASE("process: set_auto_rearm re-arms on success, before the completion callback",
          "[process][rearm]") {
  executor ex(manual());
  node a, b;
  std::array<process*, 1> ab{&b.p};
  a.p.set_dependents(ab);
  a.p.set_auto_rearm(1);
  b.p.set_auto_rearm(1);
  CHECK(a.p.auto_rearm() == 1);
  // The completion callback sees the process already re-armed.
  static int count_seen_in_completion = -1;
  b.p.set_completion([](process& self, status s) noexcept {
    auto* pr = static_cast<probe*>(self.user_data());
    ++pr->completions;
    pr->completed_with = s.code();
    count_seen_in_completion = static_cast<int>(self.suspend_count());
  });
  b.p.suspend();
  ex.submit(b.p);
  ex.submit(a.p);
  ex.run_until_idle();
  CHECK(a.seen.completions == 1);
  CHECK(b.seen.completions == 1);
  CHECK(count_seen_in_completion == 1);
  for (int round = 2; round <= 5; ++round) {
    CHECK_FALSE(a.p.is_complete());
    CHECK(a.p.suspend_count() == 1);
    CHECK(a.p.wake());
    ex.run_until_idle();
    CHECK(a.seen.drains == round);
    CHECK(b.seen.drains == round);
    CHECK(b.seen.completions == round);
    CHECK(b.seen.releases == round);
  }
  // A failure does not re-arm: the process is complete, and so is its
  // dependent (which inherits the error).
  a.p.set_drain([](process& self, worker_context&) noexcept {
    (void)self.fail(error{errc::device_lost, "round failed"});
    return drain_result::complete();
  });
  CHECK(a.p.wake());
  ex.run_until_idle();
  CHECK(a.p.is_complete());
  CHECK(a.seen.completed_with == errc::device_lost);
  CHECK(b.p.is_complete());
  CHECK(b.seen.completed_with == errc::device_lost);
  CHECK_FALSE(a.p.wake(0));
}

TEST_CASE("process: a re-armed process is cancelled like any suspended one", "[process][rearm]") {
  executor ex(manual());
  node n;
  n.p.set_auto_rearm(2);
  ex.submit(n.p);
  ex.run_until_idle();
  CHECK(n.seen.completions == 1);
  CHECK(n.p.suspend_count() == 2);
  CHECK(n.p.cancel());
  CHECK(n.seen.completions == 2);
  CHECK(n.seen.completed_with == errc::cancelled);
  CHECK(n.p.is_complete());
}

//===-- placement -----------------------------------------------------------===//

TEST_CASE("process: a wake budget above 1 puts the process in a compute slot", "[process][budget]") {
  executor ex(manual());
  node n;
  n.p.set_wake_budget(4);
  n.seen.next = drain_result::sleep();
  n.p.set_drain([](process& self, worker_context&) noexcept {
    auto* pr = static_cast<probe*>(self.user_data());
    ++pr->drains;
    if (pr->drains == 1) {
      self.suspend();
      return drain_result::sleep();
    }
    return drain_result::complete();
  });
  ex.submit(n.p);
  CHECK(ex.occupied_slots() == 1);
  CHECK(ex.aggregate_budget() == 4);
  ex.run_until_idle();
  CHECK(n.seen.drains == 1);
  CHECK(n.p.is_active());  // asleep in its slot
  CHECK_FALSE(ex.slots().runnable(0));
  CHECK(ex.slots().occupied(0));
  CHECK(n.p.wake());
  CHECK(ex.slots().runnable(0));
  ex.run_until_idle();
  CHECK(n.seen.drains == 2);
  CHECK(n.seen.completions == 1);
  CHECK(n.seen.releases == 1);
  CHECK(ex.occupied_slots() == 0);
  CHECK(ex.aggregate_budget() == 0);
}

//===-- scope ---------------------------------------------------------------===//

TEST_CASE("scope: wait_idle returns once every member is released; failure is sticky",
          "[scope]") {
  executor ex(executor_options{.worker_count = 2});
  scope s;
  std::vector<std::unique_ptr<node>> nodes;
  for (int i = 0; i < 20; ++i) {
    nodes.push_back(std::make_unique<node>());
    nodes.back()->p.set_scope(s);
  }
  nodes[3]->p.set_drain([](process& self, worker_context&) noexcept {
    (void)self.fail(error{errc::device_lost, "member 3"});
    return drain_result::complete();
  });
  nodes[9]->p.set_drain([](process& self, worker_context&) noexcept {
    (void)self.fail(error{errc::timeout, "member 9"});
    return drain_result::complete();
  });
  for (auto& n : nodes) ex.submit(n->p);
  const status st = s.wait_idle();
  CHECK(s.live() == 0);
  CHECK_FALSE(st.ok());
  CHECK((st.code() == errc::device_lost || st.code() == errc::timeout));
  CHECK(s.failed());
  for (auto& n : nodes) CHECK(n->seen.releases == 1);
  // Sticky: a later success or failure does not change it.
  node later;
  later.p.set_scope(s);
  ex.submit(later.p);
  CHECK(s.wait_idle().code() == st.code());
}

TEST_CASE("scope: cancel_all resolves suspended members inline and cancels later joiners",
          "[scope][cancel]") {
  executor ex(manual());
  scope s;
  node a, b, c;
  for (node* n : {&a, &b, &c}) n->p.set_scope(s);
  a.p.suspend();  // suspended: waits for a wake that never comes
  ex.submit(a.p);
  ex.submit(b.p);  // queued, not drained yet
  CHECK(s.live() == 2);
  CHECK(s.cancel_all() == 2);
  CHECK(s.cancelled());
  CHECK(a.seen.completions == 1);  // inline
  CHECK(a.seen.completed_with == errc::cancelled);
  CHECK(b.seen.completions == 0);  // flagged; completes on the executor
  ex.run_until_idle();
  CHECK(b.seen.completions == 1);
  CHECK(b.seen.drains == 0);
  CHECK(b.seen.completed_with == errc::cancelled);
  ex.submit(c.p);  // joins a cancelled scope: cancelled at once
  CHECK(c.seen.completions == 1);
  CHECK(c.seen.completed_with == errc::cancelled);
  CHECK(s.wait_idle().code() == errc::cancelled);
  CHECK(s.live() == 0);
}

TEST_CASE("scope: wait_idle_until times out while a member is suspended", "[scope]") {
  executor ex(manual());
  scope s;
  node n;
  n.p.set_scope(s);
  n.p.suspend();
  ex.submit(n.p);
  CHECK_FALSE(s.wait_idle_until(std::chrono::steady_clock::now() + 20ms));
  CHECK(n.p.wake());
  ex.run_until_idle();
  CHECK(s.wait_idle_until(std::chrono::steady_clock::now() + 1s));
}

TEST_CASE("scope: the destructor cancels what is left", "[scope][cancel]") {
  executor ex(manual());
  node n;
  {
    scope s;
    n.p.set_scope(s);
    n.p.suspend();
    ex.submit(n.p);
  }
  CHECK(n.seen.completions == 1);
  CHECK(n.seen.completed_with == errc::cancelled);
}

//===-- allocation ----------------------------------------------------------===//

TEST_CASE("process: wake, drain, completion and dependents allocate nothing",
          "[process][allocation]") {
  executor ex(manual());
  constexpr int n = 64;
  std::vector<std::unique_ptr<node>> nodes;
  std::vector<process*> chain(n);
  for (int i = 0; i < n; ++i) nodes.push_back(std::make_unique<node>());
  for (int i = 0; i + 1 < n; ++i) {
    chain[i] = &nodes[i + 1]->p;
    nodes[i]->p.set_dependents({&chain[i], 1});
  }
  for (int i = n - 1; i >= 0; --i) {
    if (i > 0) nodes[i]->p.suspend();
    ex.submit(nodes[i]->p);
  }
  ex.run_until_idle();
  REQUIRE(nodes[n - 1]->seen.completions == 1);
  std::uint64_t allocations = 0;
  {
    causal::test::allocation_guard guard;
    for (int round = 0; round < 100; ++round) {
      for (int i = 0; i < n; ++i) nodes[i]->p.rearm(1);
      (void)nodes[0]->p.wake();
      ex.run_until_idle();
    }
    allocations = guard.allocations();
  }
  CHECK(allocations == 0);
  CHECK(nodes[n - 1]->seen.completions == 101);
}
