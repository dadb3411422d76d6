// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// eventually: waits, with a deadline, for a condition another thread makes
// true, so a concurrency test that loses a wake-up fails instead of hanging.
//
//   REQUIRE(causal::test::eventually([&] { return done.load() == n; }));
//
// The limit only bounds how long a broken test takes to fail; a passing
// test returns as soon as the condition holds. The caller's thread yields
// between polls (two vCPUs: spinning would starve the thread it waits for).
// A condition that holds counts as progress for the test watchdog; one
// that never does writes the watchdog's dump (the watched executors,
// queues and semaphores, every thread's stack) before returning false, so
// a lost wake-up shows where everything stood (watchdog.hpp).
//
// Thread safety: the predicate is called on the caller's thread only.
// Memory order:  whatever the predicate's loads provide (use acquire).
// Blocking/allocation: blocks up to `limit`; allocates nothing unless it
//                gives up (the dump allocates).
// Size:          not applicable.
#pragma once

#include "watchdog.hpp"

#include <chrono>
#include <thread>

namespace causal::test {

/// Polls `done` until it returns true or `limit` passes; returns its last
/// result.
template <class Predicate>
bool eventually(Predicate done, std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) {
      if (done()) break;
      dump_state_on_give_up("eventually() gave up: its condition never held");
      return false;
    }
    std::this_thread::yield();
  }
  note_progress();
  return true;
}

}  // namespace causal::test
