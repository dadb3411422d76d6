// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Tests for the executor's activation rings (<causal/detail/producer_rings.hpp>):
// a thread's placements go to a ring it owns, in order; a full ring spills
// to the shared list and laps of a small ring never hand an old entry out
// again; more producing threads than rings lose nothing; a thread gives its
// ring back when it exits or moves on to more executors than it caches;
// a thread outlives the executor it was bound to (an executor created later
// at the same address gets a ring of its own); and with rings disabled the
// executor works as before.
//
// Catch2 assertions are only made on the test's own thread.

#include <causal/executor.hpp>
#include <causal/process.hpp>

#include "catch.hpp"
#include "eventually.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <thread>
#include <vector>

namespace {

using causal::drain_result;
using causal::executor_options;
using causal::process;
using causal::worker_context;

using namespace std::chrono_literals;
using causal::test::eventually;

/// One ring of four slots: a lap every four placements.
struct tiny_ring_traits : causal::default_executor_traits {
  static constexpr std::uint32_t producer_rings = 1;
  static constexpr std::uint32_t producer_ring_slots = 4;
};
/// Two rings of eight slots, for more producing threads than rings.
struct two_ring_traits : causal::default_executor_traits {
  static constexpr std::uint32_t producer_rings = 2;
  static constexpr std::uint32_t producer_ring_slots = 8;
};
struct no_ring_traits : causal::default_executor_traits {
  static constexpr std::uint32_t producer_rings = 0;
};

/// A re-arming process that records when it ran and how often.
struct recorder {
  std::atomic<int>* sequence = nullptr;
  std::atomic<int> runs{0};
  std::atomic<int> last_order{-1};
  process p;

  explicit recorder(std::atomic<int>& seq) : sequence(&seq) {
    p.set_user_data(this);
    p.set_auto_rearm(1);
    p.set_drain([](process& self, worker_context&) noexcept {
      auto* r = static_cast<recorder*>(self.user_data());
      r->runs.fetch_add(1, std::memory_order_relaxed);
      r->last_order.store(r->sequence->fetch_add(1, std::memory_order_relaxed),
                          std::memory_order_relaxed);
      return drain_result::complete();
    });
    p.suspend();
  }
};

std::vector<std::unique_ptr<recorder>> make_recorders(std::atomic<int>& seq, int n) {
  std::vector<std::unique_ptr<recorder>> v;
  for (int i = 0; i < n; ++i) v.push_back(std::make_unique<recorder>(seq));
  return v;
}

/// Submits them (each stays held by its suspension until woken).
template <class Executor>
void submit_all(Executor& ex, std::vector<std::unique_ptr<recorder>>& v) {
  for (auto& r : v) ex.submit(r->p);
}

/// make_recorders + submit_all, for executors without worker threads
/// (nothing else touches the processes once run_until_idle returns).
template <class Executor>
std::vector<std::unique_ptr<recorder>> make_recorders(Executor& ex, std::atomic<int>& seq, int n) {
  auto v = make_recorders(seq, n);
  submit_all(ex, v);
  return v;
}

/// Cancels the re-arming processes (each asleep: resolved inline).
void retire(std::vector<std::unique_ptr<recorder>>& v) {
  for (auto& r : v) (void)r->p.cancel();
}

}  // namespace

TEST_CASE("rings: one thread's activations run in the order it made them", "[executor][rings]") {
  causal::executor ex(executor_options{.worker_count = 0});
  std::atomic<int> seq{0};
  auto rs = make_recorders(ex, seq, 50);
  for (int round = 0; round < 3; ++round) {
    const int base = seq.load();
    for (auto& r : rs) REQUIRE(r->p.wake());
    CHECK(ex.claimed_rings() == 1);  // this thread's
    ex.run_until_idle();
    for (int i = 0; i < 50; ++i) {
      INFO("round " << round << ", process " << i);
      CHECK(rs[static_cast<std::size_t>(i)]->runs.load() == round + 1);
      CHECK(rs[static_cast<std::size_t>(i)]->last_order.load() == base + i);
    }
  }
  retire(rs);
}

TEST_CASE("rings: a full ring spills to the shared list; laps never hand an entry out twice",
          "[executor][rings]") {
  causal::basic_executor<tiny_ring_traits> ex(executor_options{.worker_count = 0});
  std::atomic<int> seq{0};
  auto rs = make_recorders(ex, seq, 100);
  SECTION("100 activations into 4 slots: each runs once") {
    for (int round = 1; round <= 5; ++round) {
      for (auto& r : rs) REQUIRE(r->p.wake());
      ex.run_until_idle();
      for (auto& r : rs) REQUIRE(r->runs.load() == round);
    }
  }
  SECTION("3 activations a round, 1000 rounds: the ring laps 750 times, in order") {
    int expected = 0;
    for (int round = 1; round <= 1000; ++round) {
      for (int i = 0; i < 3; ++i) REQUIRE(rs[static_cast<std::size_t>(i)]->p.wake());
      ex.run_until_idle();
      for (int i = 0; i < 3; ++i) {
        INFO("round " << round << ", process " << i);
        REQUIRE(rs[static_cast<std::size_t>(i)]->runs.load() == round);
        REQUIRE(rs[static_cast<std::size_t>(i)]->last_order.load() == expected + i);
      }
      expected += 3;
    }
    CHECK(seq.load() == 3000);
  }
  retire(rs);
}

TEST_CASE("rings: more producing threads than rings; every activation runs exactly once",
          "[executor][rings]") {
  const std::uint32_t w = GENERATE(1u, 2u);
  CAPTURE(w);
  constexpr int threads = 6;
  constexpr int per_thread = 2000;
  std::atomic<int> seq{0};
  // Declared before the executor: its workers are joined before these go.
  std::vector<std::vector<std::unique_ptr<recorder>>> per(threads);
  for (auto& v : per) v = make_recorders(seq, per_thread);
  causal::basic_executor<two_ring_traits> ex(executor_options{.worker_count = w, .spin_budget = 8});
  for (auto& v : per) submit_all(ex, v);
  std::atomic<int> max_claimed{0};
  std::vector<std::thread> producers;
  for (int t = 0; t < threads; ++t) {
    producers.emplace_back([&, t] {
      std::minstd_rand r(static_cast<std::uint32_t>(t + 1));
      for (auto& rec : per[static_cast<std::size_t>(t)]) {
        (void)rec->p.wake();
        if (r() % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds(r() % 20));
      }
      int c = static_cast<int>(ex.claimed_rings());
      int seen = max_claimed.load();
      while (c > seen && !max_claimed.compare_exchange_weak(seen, c)) {
      }
    });
  }
  for (auto& t : producers) t.join();
  REQUIRE(eventually([&] { return seq.load() == threads * per_thread; }, 20000ms));
  int wrong = 0;
  for (auto& v : per) {
    for (auto& rec : v) wrong += rec->runs.load() != 1 ? 1 : 0;
  }
  CHECK(wrong == 0);
  CHECK(max_claimed.load() <= 2);
  CHECK(ex.claimed_rings() == 0);  // every producer exited
  for (auto& v : per) retire(v);
}

// Placements go to a ring only while no worker spins (a spinning worker
// takes a hand-off faster from the shared list, executor.hpp), so the
// cases that count rings run without worker threads and drain on the test
// thread.

TEST_CASE("rings: an exiting thread gives its ring back", "[executor][rings]") {
  causal::executor ex(executor_options{.worker_count = 0});
  std::atomic<int> seq{0};
  auto rs = make_recorders(ex, seq, 2);
  CHECK(ex.claimed_rings() == 0);
  std::uint32_t claimed_inside = 0;
  std::thread a([&] {
    (void)rs[0]->p.wake();
    claimed_inside = ex.claimed_rings();
  });
  a.join();
  CHECK(claimed_inside == 1);
  CHECK(ex.claimed_rings() == 0);
  ex.run_until_idle();  // the ring's entry outlives its owner's claim
  CHECK(rs[0]->runs.load() == 1);
  // Another thread claims the ring the first gave back.
  std::thread b([&] {
    (void)rs[1]->p.wake();
    claimed_inside = ex.claimed_rings();
  });
  b.join();
  CHECK(claimed_inside == 1);
  ex.run_until_idle();
  CHECK(rs[1]->runs.load() == 1);
  retire(rs);
}

TEST_CASE("rings: a thread outlives the executor it was bound to", "[executor][rings]") {
  // The thread places on one executor, the executor goes away, and a new
  // one (likely at the same address) is created: the thread's old binding
  // must not be taken for the new executor's (ASan would see a use after
  // free), and the thread's exit must not touch the freed executor.
  std::atomic<int> step{0};
  std::atomic<process*> target{nullptr};
  std::thread t([&] {
    for (int expected = 1; expected <= 2; ++expected) {
      while (step.load() != expected) std::this_thread::yield();
      (void)target.load()->wake();
      step.store(expected + 10);
    }
    while (step.load() != 3) std::this_thread::yield();
  });
  std::atomic<int> seq{0};
  const void* first_address = nullptr;
  {
    auto ex = std::make_unique<causal::executor>(executor_options{.worker_count = 0});
    first_address = ex.get();
    auto rs = make_recorders(*ex, seq, 1);
    target.store(&rs[0]->p);
    step.store(1);
    while (step.load() != 11) std::this_thread::yield();
    CHECK(ex->claimed_rings() == 1);
    ex->run_until_idle();
    CHECK(rs[0]->runs.load() == 1);
    retire(rs);
  }
  auto ex2 = std::make_unique<causal::executor>(executor_options{.worker_count = 0});
  INFO("second executor at the first one's address: " << (ex2.get() == first_address));
  auto rs2 = make_recorders(*ex2, seq, 1);
  target.store(&rs2[0]->p);
  step.store(2);
  while (step.load() != 12) std::this_thread::yield();
  CHECK(ex2->claimed_rings() == 1);  // a ring of its own, not the old binding
  ex2->run_until_idle();
  CHECK(rs2[0]->runs.load() == 1);
  step.store(3);
  t.join();
  CHECK(ex2->claimed_rings() == 0);
  retire(rs2);
}

TEST_CASE("rings: a thread placing on more executors than it caches gives the oldest ring back",
          "[executor][rings]") {
  constexpr int executors = 6;  // more than the four bindings a thread keeps
  std::atomic<int> seq{0};
  std::vector<std::unique_ptr<causal::executor>> exs;
  std::vector<std::vector<std::unique_ptr<recorder>>> rs;
  for (int i = 0; i < executors; ++i) {
    exs.push_back(std::make_unique<causal::executor>(executor_options{.worker_count = 0}));
    rs.push_back(make_recorders(*exs.back(), seq, 3));
  }
  for (int round = 1; round <= 3; ++round) {
    for (int i = 0; i < executors; ++i) {
      for (auto& r : rs[static_cast<std::size_t>(i)]) REQUIRE(r->p.wake());
      CHECK(exs[static_cast<std::size_t>(i)]->claimed_rings() == 1);
      exs[static_cast<std::size_t>(i)]->run_until_idle();
      for (auto& r : rs[static_cast<std::size_t>(i)]) REQUIRE(r->runs.load() == round);
    }
    std::uint32_t owned = 0;
    for (auto& e : exs) owned += e->claimed_rings();
    CHECK(owned == 4);  // the four executors placed on last
  }
  for (auto& v : rs) retire(v);
}

TEST_CASE("rings: with producer_rings = 0 foreign activations use the shared list",
          "[executor][rings]") {
  std::atomic<int> seq{0};
  auto rs = make_recorders(seq, 1000);  // outlives the executor's workers
  causal::basic_executor<no_ring_traits> ex(executor_options{.worker_count = 2});
  submit_all(ex, rs);
  std::thread producer([&] {
    for (auto& r : rs) (void)r->p.wake();
  });
  producer.join();
  REQUIRE(eventually([&] { return seq.load() == 1000; }));
  for (auto& r : rs) CHECK(r->runs.load() == 1);
  CHECK(ex.claimed_rings() == 0);
  retire(rs);
}
