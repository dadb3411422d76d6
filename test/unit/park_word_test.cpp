// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Tests for <causal/ext/park_word.hpp>. Both implementations run through the
// same cases, whatever CAUSAL_USE_CONDVAR_WAIT selects for `park_word`.
// Catch2 assertions are only made on the test's own thread; helper threads
// report through atomics and are joined first.

#include <causal/ext/park_word.hpp>

#include "catch.hpp"
#include "eventually.hpp"
#include "counting_new.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

using causal::ext::condvar_park_word;
using causal::ext::native_park_word;
using causal::ext::park_word;

using namespace std::chrono_literals;

// Long enough that a helper thread has, in practice, reached wait() and
// parked; correctness never depends on it, only what the test exercises.
constexpr auto settle_time = 20ms;

using causal::test::eventually;

}  // namespace

TEST_CASE("park_word: the alias names the native word unless condvar waits are forced",
          "[park_word][config]") {
  STATIC_REQUIRE(sizeof(native_park_word) == sizeof(std::uint32_t));
  STATIC_REQUIRE(!std::is_copy_constructible_v<park_word>);
  STATIC_REQUIRE(!std::is_copy_assignable_v<park_word>);
#if CAUSAL_USE_CONDVAR_WAIT
  STATIC_REQUIRE(std::is_same_v<park_word, condvar_park_word>);
#elif CAUSAL_HAS_FUTEX()
  STATIC_REQUIRE(std::is_same_v<park_word, native_park_word>);
#endif
}

TEMPLATE_TEST_CASE("park_word: load, store and fetch_add behave like an atomic uint32",
                   "[park_word][value]", native_park_word, condvar_park_word) {
  TestType word{7};
  CHECK(word.load() == 7u);
  word.store(9, std::memory_order_release);
  CHECK(word.load(std::memory_order_acquire) == 9u);
  CHECK(word.fetch_add(3) == 9u);
  CHECK(word.load(std::memory_order_relaxed) == 12u);

  SECTION("fetch_add wraps modulo 2^32") {
    word.store(UINT32_MAX);
    CHECK(word.fetch_add(1) == UINT32_MAX);
    CHECK(word.load() == 0u);
  }
}

TEMPLATE_TEST_CASE("park_word: wait returns at once when the value already differs",
                   "[park_word][wait]", native_park_word, condvar_park_word) {
  TestType word{5};
  CHECK(word.wait(4) == 5u);
  CHECK(word.wait(0, std::memory_order_relaxed) == 5u);
  CHECK(word.wait(6, std::memory_order_seq_cst) == 5u);
}

TEMPLATE_TEST_CASE("park_word: a parked thread is woken by store and notify_one",
                   "[park_word][wait]", native_park_word, condvar_park_word) {
  TestType word{0};
  std::atomic<bool> returned{false};
  std::uint32_t seen = 0;

  std::thread waiter([&] {
    seen = word.wait(0);
    returned.store(true, std::memory_order_release);
  });

  std::this_thread::sleep_for(settle_time);
  CHECK_FALSE(returned.load(std::memory_order_acquire));  // still parked on 0
  word.store(1, std::memory_order_release);
  word.notify_one();
  waiter.join();

  CHECK(returned.load());
  CHECK(seen == 1u);
}

TEMPLATE_TEST_CASE("park_word: wait_until times out on an unchanged word and not before",
                   "[park_word][wait]", native_park_word, condvar_park_word) {
  TestType word{7};
  CHECK(word.wait_until(6, std::chrono::steady_clock::now()));  // differs: true at once
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + 20ms;
  CHECK_FALSE(word.wait_until(7, deadline));
  CHECK(std::chrono::steady_clock::now() >= deadline);
  CHECK_FALSE(word.wait_until(7, start));  // a deadline in the past
}

TEMPLATE_TEST_CASE("park_word: wait_until is woken by a bump before its deadline",
                   "[park_word][wait]", native_park_word, condvar_park_word) {
  TestType word{0};
  std::atomic<int> outcome{-1};
  std::thread waiter([&] {
    outcome.store(word.wait_until(0, std::chrono::steady_clock::now() + 60s) ? 1 : 0);
  });
  std::this_thread::sleep_for(settle_time);
  CHECK(outcome.load() == -1);  // still parked
  word.fetch_add(1, std::memory_order_release);
  word.notify_all();
  waiter.join();
  CHECK(outcome.load() == 1);
}

TEMPLATE_TEST_CASE("park_word: a value published before a release bump is seen after wait",
                   "[park_word][order]", native_park_word, condvar_park_word) {
  TestType word{0};
  int payload = 0;  // plain data: only the word's release/acquire orders it

  std::thread producer([&] {
    std::this_thread::sleep_for(settle_time);
    payload = 42;
    word.fetch_add(1, std::memory_order_release);
    word.notify_one();
  });

  CHECK(word.wait(0, std::memory_order_acquire) == 1u);
  CHECK(payload == 42);
  producer.join();
}

TEMPLATE_TEST_CASE("park_word: notify_all wakes every waiter", "[park_word][wait]",
                   native_park_word, condvar_park_word) {
  constexpr int waiter_count = 8;
  TestType word{0};
  std::atomic<int> started{0};
  std::atomic<int> woken{0};
  std::atomic<int> saw_new_value{0};

  std::vector<std::thread> waiters;
  for (int i = 0; i < waiter_count; ++i) {
    waiters.emplace_back([&] {
      started.fetch_add(1);
      if (word.wait(0) == 1u) {
        saw_new_value.fetch_add(1);
      }
      woken.fetch_add(1);
    });
  }

  REQUIRE(eventually([&] { return started.load() == waiter_count; }));
  std::this_thread::sleep_for(settle_time);
  CHECK(woken.load() == 0);

  word.store(1, std::memory_order_release);
  word.notify_all();
  // One notify_all must be enough. If it is not, fail, then keep notifying
  // so the joins below cannot hang.
  CHECK(eventually([&] { return woken.load() == waiter_count; }));
  while (woken.load() != waiter_count) {
    word.notify_all();
    std::this_thread::sleep_for(1ms);
  }
  for (auto& t : waiters) {
    t.join();
  }
  CHECK(saw_new_value.load() == waiter_count);
}

TEMPLATE_TEST_CASE("park_word: 10 000 ping-pong round trips between two threads",
                   "[park_word][wait]", native_park_word, condvar_park_word) {
  // The word counts moves: even values are the pinger's turn, odd ones the
  // ponger's. Each side bumps it, wakes the other, and parks until the other
  // has bumped it back.
  constexpr std::uint32_t round_trips = 10'000;
  TestType word{0};
  std::uint32_t pong_moves = 0;
  std::uint32_t pong_mismatches = 0;

  std::thread ponger([&] {
    for (std::uint32_t i = 0; i < round_trips; ++i) {
      const std::uint32_t seen = word.wait(2 * i);
      if (seen != 2 * i + 1) {
        ++pong_mismatches;
      }
      word.fetch_add(1, std::memory_order_release);
      word.notify_one();
      ++pong_moves;
    }
  });

  std::uint32_t ping_moves = 0;
  std::uint32_t ping_mismatches = 0;
  for (std::uint32_t i = 0; i < round_trips; ++i) {
    if (word.fetch_add(1, std::memory_order_release) != 2 * i) {
      ++ping_mismatches;
    }
    word.notify_one();
    ++ping_moves;
    if (word.wait(2 * i + 1) != 2 * i + 2) {
      ++ping_mismatches;
    }
  }
  ponger.join();

  CHECK(ping_moves == round_trips);
  CHECK(pong_moves == round_trips);
  CHECK(ping_mismatches == 0u);
  CHECK(pong_mismatches == 0u);
  CHECK(word.load() == 2 * round_trips);
}

TEMPLATE_TEST_CASE("park_word: store, notify and a satisfied wait never allocate",
                   "[park_word][alloc]", native_park_word, condvar_park_word) {
  TestType word{0};
  std::uint32_t sum = 0;
  causal::test::allocation_guard guard;
  for (std::uint32_t i = 1; i <= 1000; ++i) {
    word.store(i, std::memory_order_release);
    word.notify_one();
    word.notify_all();
    sum += word.wait(i - 1);
  }
  const auto allocations = guard.thread_allocations();
  CHECK(allocations == 0u);
  CHECK(sum == 1000u * 1001u / 2u);
}
