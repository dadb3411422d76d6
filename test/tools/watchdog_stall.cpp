// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// watchdog_stall: test cases that hang or give up on purpose, so that
// check_watchdog.py can prove the test watchdog (test/support/watchdog.hpp)
// turns a hang into a failure that shows the state: run on their own, each
// of them fails. Never part of a normal run: test/meson.build runs this
// binary only through check_watchdog.py, one test case at a time.
//
// The stall: an executor with two workers and spin budget 0, a compute
// process asleep in its slot and a listed process suspended, both waiting
// for wakes that never come; a host thread parked on a semaphore; and the
// test's own thread parked on the same semaphore. Every thread sleeps, so
// nothing moves until the watchdog (or a SIGTERM) ends the process.

#include <causal/executor.hpp>
#include <causal/process.hpp>
#include <causal/semaphore.hpp>

#include "catch.hpp"
#include "eventually.hpp"
#include "watchdog.hpp"

#include <chrono>
#include <cstdio>
#include <thread>

namespace {

using causal::drain_result;
using causal::process;
using causal::worker_context;

/// Sleeps after its first drain and is never woken again.
drain_result sleep_forever(process& self, worker_context&) noexcept {
  self.suspend();
  return drain_result::sleep();
}

}  // namespace

TEST_CASE("watchdog self-test: every thread waits for a wake that never comes", "[watchdog][stall]") {
  causal::executor ex(causal::executor_options{.worker_count = 2, .spin_budget = 0});
  const auto watched_ex = causal::test::watch(ex, "stall executor");
  causal::semaphore gate;
  const auto watched_gate = causal::test::watch(gate, "gate semaphore");
  process compute(&sleep_forever);
  compute.set_wake_budget(2);
  ex.submit(compute);
  process listed(&sleep_forever);
  ex.submit(listed);
  // A compute slot with budget 2 may be drained by both workers at once,
  // and each drain suspends it: its count ends at 1 or 2.
  REQUIRE(causal::test::eventually([&] {
    return compute.suspend_count() >= 1 && listed.suspend_count() == 1 &&
           ex.parked_workers() == 2;
  }));
  const auto watched_listed = causal::test::watch(listed, "listed process");
  std::thread waiter([&] { (void)gate.wait(1); });
  std::printf("watchdog self-test: stalling now\n");
  std::fflush(stdout);
  (void)gate.wait(1);  // never returns: nothing signals the gate
  waiter.join();
}

TEST_CASE("watchdog self-test: eventually() that gives up writes the dump", "[watchdog][eventually]") {
  causal::semaphore never;
  const auto watched = causal::test::watch(never, "never semaphore");
  CHECK(causal::test::eventually([&] { return never.value() == 1; }, std::chrono::milliseconds(50)));
}
