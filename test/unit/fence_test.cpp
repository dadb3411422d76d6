// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Tests for <causal/fence.hpp>: a fence joins points (one per semaphore,
// the larger value wins), refuses to grow past Capacity and stays
// unchanged; reached/failure/imported agree with the semaphores; a host
// wait returns ok, the failure, or errc::timeout at the deadline; a
// coroutine co_awaits a fence on a worker (ok, failure, already reached)
// without allocating; a timeline hands out each value once.

#include <causal/coroutine.hpp>
#include <causal/executor.hpp>
#include <causal/fence.hpp>
#include <causal/semaphore.hpp>

#include "catch.hpp"
#include "eventually.hpp"
#include "counting_new.hpp"
#include "string_makers.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

namespace {

using causal::errc;
using causal::error;
using causal::fence;
using causal::semaphore;
using causal::status;
using namespace std::chrono_literals;

causal::axis ax(std::uint64_t n) { return causal::axis{n}; }

using causal::test::eventually;

}  // namespace

TEST_CASE("fence: a point per semaphore, the larger value wins", "[fence][join]") {
  semaphore a, b;
  fence f{a, 3};
  REQUIRE(f.add(a, 5));
  REQUIRE(f.add(a, 2));
  REQUIRE(f.size() == 1);
  CHECK(f.value_of(a) == 5);
  REQUIRE(f.add(b, 1));
  CHECK(f.size() == 2);
  CHECK(f.value_of(b) == 1);

  auto j = causal::join(fence{a, 7}, fence{b, 0});
  REQUIRE(j);
  CHECK(j->value_of(a) == 7);
  CHECK(j->size() == 2);
  CHECK(fence{}.empty());
}

TEST_CASE("fence: over capacity is an error and changes nothing", "[fence][capacity]") {
  std::vector<semaphore> sems(5);
  causal::basic_fence<semaphore, 4> f;
  for (int i = 0; i < 4; ++i) REQUIRE(f.add(sems[static_cast<std::size_t>(i)], 1));
  const auto before = f;
  status s = f.add(sems[4], 1);
  REQUIRE_FALSE(s);
  CHECK(s.code() == errc::capacity_exceeded);
  CHECK(f == before);
  // Raising a named point still works when full.
  REQUIRE(f.add(sems[0], 9));
  CHECK(f.value_of(sems[0]) == 9);

  causal::basic_fence<semaphore, 4> other{sems[4], 1};
  const auto full = f;
  CHECK(f.join(other).code() == errc::capacity_exceeded);
  CHECK(f == full);

  auto bad = causal::basic_fence<semaphore, 4>::of(
      {{&sems[0], 1}, {&sems[1], 1}, {&sems[2], 1}, {&sems[3], 1}, {&sems[4], 1}});
  CHECK(bad.code() == errc::capacity_exceeded);
  auto null = fence::of({{nullptr, 1}});
  CHECK(null.code() == errc::invalid_argument);
}

TEST_CASE("fence: reached, failure and imported follow the semaphores", "[fence][observe]") {
  semaphore a, b;
  auto f = fence::of({{&a, 2}, {&b, 1}});
  REQUIRE(f);
  CHECK_FALSE(f->reached());
  REQUIRE(a.signal(2, causal::frontier{{ax(10), 4}}));
  CHECK_FALSE(f->reached());
  CHECK(f->imported().tainted());  // b is not reached: incomplete
  REQUIRE(b.signal(1, causal::frontier{{ax(11), 6}, {ax(10), 1}}));
  CHECK(f->reached());
  const causal::frontier k = f->imported();
  CHECK_FALSE(k.tainted());
  CHECK(k.epoch_of(ax(10)) == 4);
  CHECK(k.epoch_of(ax(11)) == 6);
  CHECK(k.size() == 2);
  CHECK_FALSE(f->failure());
  // A value reached before its semaphore failed stays reached.
  (void)b.fail(error{errc::device_lost, "lost"});
  CHECK(f->reached());
  CHECK_FALSE(f->failure());
  // One above it never will be.
  auto g = fence::of({{&a, 2}, {&b, 2}});
  REQUIRE(g);
  CHECK_FALSE(g->reached());
  REQUIRE(g->failure());
  CHECK(g->failure()->code() == errc::device_lost);
}

TEST_CASE("fence: host waits return ok, the failure or a timeout", "[fence][wait]") {
  semaphore a, b;
  auto f = *fence::of({{&a, 1}, {&b, 3}});

  SECTION("timeout at the deadline") {
    const auto t0 = std::chrono::steady_clock::now();
    status s = f.wait_for(20ms);
    CHECK(s.code() == errc::timeout);
    CHECK(std::chrono::steady_clock::now() - t0 >= 20ms);
    CHECK(f.wait_for(0ms).code() == errc::timeout);
    CHECK(f.wait(std::chrono::steady_clock::now() + 1ms).code() == errc::timeout);
  }
  SECTION("reached by another thread") {
    std::thread t([&] {
      std::this_thread::sleep_for(5ms);
      (void)a.signal(1);
      std::this_thread::sleep_for(5ms);
      (void)b.signal(5);
    });
    CHECK(f.wait().ok());
    t.join();
    CHECK(f.wait_for(0ms).ok());
  }
  SECTION("failed by another thread") {
    std::thread t([&] {
      std::this_thread::sleep_for(5ms);
      (void)b.fail(error{errc::cancelled, "stop"});
    });
    CHECK(f.wait().code() == errc::cancelled);
    t.join();
  }
  SECTION("the empty fence is reached") { CHECK(fence{}.wait_for(0ms).ok()); }
}

TEST_CASE("fence: signal and fail reach every point", "[fence][signal]") {
  semaphore a, b;
  auto f = *fence::of({{&a, 2}, {&b, 4}});
  REQUIRE(f.signal(causal::frontier{{ax(3), 3}}));
  CHECK(a.value() == 2);
  CHECK(b.value() == 4);
  CHECK(b.frontier_at(4)->frontier.epoch_of(ax(3)) == 3);
  // A second signal of the same values is not increasing.
  CHECK(f.signal().code() == errc::not_increasing);
  semaphore c;
  fence g{c, 1};
  g.fail(error{errc::device_lost, "x"});
  CHECK(c.failed());
}

TEST_CASE("fence: only the last point signalled carries the producer's own entry", "[fence][signal]") {
  // The points are reached one at a time: (P, e) on the first would claim
  // the whole operation done before the last is reached (docs/queues.md,
  // "Signals of one operation").
  semaphore a, b, c;
  auto f = *fence::of({{&a, 1}, {&b, 1}, {&c, 1}});
  const causal::frontier_entry producer{ax(7), 4};
  REQUIRE(f.signal(causal::frontier{{ax(3), 3}, {ax(7), 4}}, producer));
  for (semaphore* s : {&a, &b}) {
    const auto at = s->frontier_at(1);
    REQUIRE(at);
    CHECK(at->frontier.epoch_of(ax(7)) == 3);  // what was known before the operation
    CHECK(at->frontier.epoch_of(ax(3)) == 3);
    CHECK(at->producer == producer);
  }
  const auto last = c.frontier_at(1);
  REQUIRE(last);
  CHECK(last->frontier.epoch_of(ax(7)) == 4);
  CHECK(last->producer == producer);
}

TEST_CASE("timeline: values are handed out once", "[fence][timeline]") {
  causal::timeline t{5};
  CHECK(t.value() == 5);
  auto step = t.next_step();
  CHECK(step.value == 6);
  CHECK(step.wait.value_of(t.semaphore()) == 5);
  CHECK(step.signal.value_of(t.semaphore()) == 6);
  CHECK(step.wait.reached());
  CHECK(t.reserve(3) == 7);
  CHECK(t.last_reserved() == 9);
  CHECK(t.scheduled().value_of(t.semaphore()) == 9);

  std::vector<std::uint64_t> got(4000);
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      for (int i = 0; i < 1000; ++i) got[static_cast<std::size_t>(k * 1000 + i)] = t.reserve();
    });
  }
  for (auto& th : threads) th.join();
  std::set<std::uint64_t> unique(got.begin(), got.end());
  CHECK(unique.size() == 4000);
  CHECK(*unique.begin() == 10);
  CHECK(*unique.rbegin() == 4009);
}

namespace {

causal::coroutine_process await_fence(fence f, std::atomic<int>* outcome, std::atomic<int>* steps) {
  steps->fetch_add(1);
  status s = co_await f;
  outcome->store(s ? 1 : static_cast<int>(s.code()) + 100);
  steps->fetch_add(1);
  co_return s;
}

}  // namespace

TEST_CASE("fence: a coroutine co_awaits a fence", "[fence][coroutine]") {
  const std::uint32_t workers = GENERATE(1u, 2u);
  causal::executor ex{causal::executor_options{.worker_count = workers}};
  semaphore a, b;
  auto f = *fence::of({{&a, 1}, {&b, 2}});

  SECTION("resumes once every point is reached") {
    std::atomic<int> outcome{0}, steps{0};
    auto cp = await_fence(f, &outcome, &steps);
    ex.submit(cp.get());
    REQUIRE(eventually([&] { return steps.load() == 1; }));
    std::this_thread::sleep_for(2ms);
    (void)a.signal(1);
    std::this_thread::sleep_for(2ms);
    CHECK(outcome.load() == 0);  // still asleep: b is missing
    (void)b.signal(2);
    REQUIRE(eventually([&] { return cp.released(); }));
    CHECK(outcome.load() == 1);
    CHECK(cp.final_status().ok());
  }
  SECTION("resumes with the first failure") {
    std::atomic<int> outcome{0}, steps{0};
    auto cp = await_fence(f, &outcome, &steps);
    ex.submit(cp.get());
    REQUIRE(eventually([&] { return steps.load() == 1; }));
    (void)b.fail(error{errc::device_lost, "gone"});
    REQUIRE(eventually([&] { return cp.released(); }));
    CHECK(outcome.load() == static_cast<int>(errc::device_lost) + 100);
    CHECK(cp.final_status().code() == errc::device_lost);
  }
  SECTION("does not suspend when reached, and allocates only the frame") {
    (void)a.signal(1);
    (void)b.signal(2);
    std::atomic<int> outcome{0}, steps{0};
    auto cp = await_fence(f, &outcome, &steps);
    causal::test::allocation_guard guard;
    ex.submit(cp.get());
    REQUIRE(eventually([&] { return cp.released(); }));
    const auto allocations = guard.allocations();
    CHECK(allocations == 0);
    CHECK(outcome.load() == 1);
  }
}
