// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Lifetimes (docs/lifetimes.md): every order in which a program can destroy
// an executor, semaphores, CPU queues and a block pool with work pending
// either works (pending work fails with errc::cancelled, nothing touches a
// dead object) or is refused loudly (a message on stderr naming what is
// still alive, then abort) -- never undefined behaviour. The refusals are
// checked in child processes (fork), each against the outcome the
// documented rules predict; the permutation test derives that outcome from
// a model of the rules, not from the implementation.
//
// The tests that fork are skipped under ThreadSanitizer, which does not
// support threads started in a forked child of a process it instruments;
// the ASan/UBSan build and the plain build run them.

#include <causal/adapters/cpu/queue.hpp>
#include <causal/executor.hpp>
#include <causal/semaphore.hpp>
#include <causal/stream_pool.hpp>

#include "catch.hpp"
#include "child_process.hpp"
#include "destruction_orders.hpp"
#include "string_makers.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <random>
#include <string>

namespace {

using causal::errc;
using causal::host_call_context;

using causal_test::child_outcome;
using causal_test::contains;
using causal_test::run_child;

}  // namespace

TEST_CASE("an executor destroyed before a bound queue aborts and lists the queue", "[lifetime]") {
  CAUSAL_TEST_NEEDS_FORK();
  const child_outcome out = run_child([] {
    causal::semaphore blocker, out_sem;
    auto* ex = new causal::executor(causal::executor_options{.worker_count = 1});
    auto* q = new causal::cpu::queue(causal::axis{77}, *ex);
    (void)q->host({{&blocker, 1}}, {{&out_sem, 1}}, [](const host_call_context&) noexcept {});
    delete ex;  // refused: q is still bound
  });
  CHECK(out.aborted);
  CHECK(contains(out.stderr_text, "executor destroyed while 1 queue(s) or pool(s) are still bound"));
  CHECK(contains(out.stderr_text, "cpu::queue on axis 77: 1 operation(s) not finished"));
}

TEST_CASE("a semaphore destroyed while a queue will still signal it aborts and names the producer",
          "[lifetime]") {
  CAUSAL_TEST_NEEDS_FORK();
  const child_outcome out = run_child([] {
    causal::executor ex(causal::executor_options{.worker_count = 1});
    causal::semaphore blocker;
    auto* signalled = new causal::semaphore;
    causal::cpu::queue q(causal::axis{91}, ex);
    (void)q.host({{&blocker, 1}}, {{signalled, 3}}, [](const host_call_context&) noexcept {});
    delete signalled;  // refused: q's operation will signal it
  });
  CHECK(out.aborted);
  CHECK(contains(out.stderr_text, "1 submitted signal(s) of it are neither reached nor failed"));
  CHECK(contains(out.stderr_text, "value 3, by the operation at epoch 1 of axis 91"));
}

TEST_CASE("a progress timeline registered with a pool unregisters itself when it goes first",
          "[lifetime]") {
  causal::executor ex(causal::executor_options{.worker_count = 1});
  causal::cpu::block_pool pool(1024, 64);
  std::optional<causal::cpu::queue> first, second;
  first.emplace(causal::axis{5}, ex);
  second.emplace(causal::axis{6}, ex);
  REQUIRE(first->enable_progress_timeline());
  REQUIRE(second->enable_progress_timeline());
  REQUIRE(pool.register_timeline(first->axis(), first->progress_timeline()));
  REQUIRE(pool.register_timeline(second->axis(), second->progress_timeline()));
  // The first registration goes: the second entry moves into its place,
  // and its link with it.
  first.reset();
  CHECK(pool.unregister_timeline(causal::axis{5}).code() == errc::invalid_argument);
  // A block the first queue freed is not fenced on its dead timeline: the
  // queue's knowledge or completion proves reuse, or nothing does.
  second.reset();
  CHECK(pool.unregister_timeline(causal::axis{6}).code() == errc::invalid_argument);
  // Both slots free again.
  causal::cpu::queue third(causal::axis{7}, ex);
  REQUIRE(third.enable_progress_timeline());
  REQUIRE(pool.register_timeline(causal::axis{5}, third.progress_timeline()));
  REQUIRE(pool.unregister_timeline(causal::axis{5}));
  // And the pool may go before a timeline it holds.
  auto* early = new causal::cpu::block_pool(1024, 64);
  REQUIRE(early->register_timeline(third.axis(), third.progress_timeline()));
  delete early;

  // One semaphore registered for two axes, around another's entry: its
  // withdrawal compacts the table twice, moving the other entry's link.
  causal::semaphore other;
  auto* twice = new causal::semaphore;
  REQUIRE(pool.register_timeline(causal::axis{11}, *twice));
  REQUIRE(pool.register_timeline(causal::axis{12}, other));
  REQUIRE(pool.register_timeline(causal::axis{13}, *twice));
  delete twice;
  CHECK(pool.unregister_timeline(causal::axis{11}).code() == errc::invalid_argument);
  CHECK(pool.unregister_timeline(causal::axis{13}).code() == errc::invalid_argument);
  REQUIRE(pool.unregister_timeline(causal::axis{12}));
}

TEST_CASE("in the recommended order, pending work fails with cancelled and names nothing dead",
          "[lifetime]") {
  causal::executor ex(causal::executor_options{.worker_count = 1});
  causal::semaphore blocker, out_sem, later;
  std::atomic<int> ran{0};
  {
    causal::cpu::queue q(ex);
    REQUIRE(q.host({{&blocker, 1}}, {{&out_sem, 1}}, [&ran](const host_call_context&) noexcept { ++ran; }));
    REQUIRE(q.host({}, {{&later, 1}}, [&ran](const host_call_context&) noexcept { ++ran; }));
  }  // the queue dies first: its work fails, the semaphores are alive
  CHECK(ran.load() == 0);
  REQUIRE(out_sem.failed());
  CHECK(out_sem.failure()->code() == errc::cancelled);
  REQUIRE(later.failed());
  CHECK(later.failure()->code() == errc::cancelled);
}

TEST_CASE("a failed operation settles its promises: the semaphore may go once the queue is idle",
          "[lifetime]") {
  causal::executor ex(causal::executor_options{.worker_count = 1});
  causal::semaphore gate;  // both submitted before the first runs (and fails the queue)
  causal::cpu::queue q(ex);
  auto* signalled = new causal::semaphore;
  REQUIRE(q.host({{&gate, 1}}, {{signalled, 1}}, [](const host_call_context&) noexcept -> causal::status {
    return causal::error{errc::invalid_argument, "test: the call failed"};
  }));
  REQUIRE(q.host({}, {{signalled, 2}}, [](const host_call_context&) noexcept {}));
  REQUIRE(gate.signal(1));
  CHECK(q.wait_idle().code() == errc::invalid_argument);
  CHECK(signalled->failed());
  delete signalled;  // neither promise is outstanding: no refusal
  causal::semaphore other;
  // The queue stays failed, and touches nothing of the deleted semaphore.
  CHECK(q.host({}, {{&other, 1}}, [](const host_call_context&) noexcept {}).error_value().code() ==
        errc::invalid_argument);
}

TEST_CASE("worker_count 0: wait_idle drives the executor and teardown never hangs", "[lifetime]") {
  causal::executor ex(causal::executor_options{.worker_count = 0});
  causal::semaphore blocker, done, never;
  std::atomic<int> ran{0};
  {
    causal::cpu::queue runnable(ex);
    causal::cpu::queue blocked(ex);
    REQUIRE(runnable.host({}, {{&done, 1}}, [&ran](const host_call_context&) noexcept { ++ran; }));
    REQUIRE(blocked.host({{&blocker, 1}}, {{&never, 1}}, [&ran](const host_call_context&) noexcept { ++ran; }));
    // Nothing else runs the executor: wait_idle does, on this thread.
    REQUIRE(runnable.wait_idle());
    CHECK(ran.load() == 1);
    CHECK(done.value() == 1);
    // A deadline still bounds a wait on work that cannot run yet.
    CHECK(blocked.wait_idle(std::chrono::steady_clock::now()).code() == errc::timeout);
  }  // `blocked` dies with its operation waiting on a semaphore no one signals
  CHECK(ran.load() == 1);
  REQUIRE(never.failed());
  CHECK(never.failure()->code() == errc::cancelled);
}

namespace {

// The permutation test's objects and the documented rules, as a model.
enum object : int { obj_executor, obj_blocker, obj_signalled, obj_first, obj_second, obj_pool, obj_count };
enum class verdict { clean, executor_refused, promise_refused };

constexpr std::array<const char*, obj_count> object_names{"executor",    "blocker",      "signalled",
                                                         "first queue", "second queue", "pool"};

/// What docs/lifetimes.md says happens when the objects go in `order`
/// (the blocker is signalled just before step `signal_at`, if it is alive
/// then; obj_count: never).
///   first queue:  waits blocker >= 1, signals signalled = 1; its progress
///                 timeline is registered with the pool (and unregisters
///                 itself if the queue goes first).
///   second queue: waits signalled >= 1, signals signalled = 2.
verdict predict(const causal_test::destruction_order<obj_count>& order, int signal_at) {
  std::array<bool, obj_count> alive{};
  alive.fill(true);
  bool blocker_resolved = false;  // signalled, or destroyed (its wait is cancelled)
  bool first_done = false;        // the first queue's operation ran or failed
  for (int step = 0; step < obj_count; ++step) {
    if (step == signal_at && alive[obj_blocker]) blocker_resolved = true;
    first_done = first_done || blocker_resolved || !alive[obj_first];
    const int o = order[static_cast<std::size_t>(step)];
    switch (o) {
      case obj_executor:
        if (alive[obj_first] || alive[obj_second]) return verdict::executor_refused;
        break;
      case obj_blocker:
        blocker_resolved = true;
        break;
      case obj_signalled:
        // Both promises are settled once the first operation is done (it
        // reaches or fails 1; the second then runs or fails on 2).
        if (!first_done && (alive[obj_first] || alive[obj_second])) return verdict::promise_refused;
        break;
      default:
        break;
    }
    alive[static_cast<std::size_t>(o)] = false;
  }
  return verdict::clean;
}

void run_order(const causal_test::destruction_order<obj_count>& order, int signal_at) {
  std::optional<causal::executor> ex;
  std::optional<causal::semaphore> blocker, signalled;
  std::optional<causal::cpu::queue> first, second;
  std::optional<causal::cpu::block_pool> pool;
  ex.emplace(causal::executor_options{.worker_count = 1});
  blocker.emplace();
  signalled.emplace();
  first.emplace(*ex);
  second.emplace(*ex);
  pool.emplace(4096, 64);
  if (!first->enable_progress_timeline()) std::abort();
  if (!pool->register_timeline(first->axis(), first->progress_timeline())) std::abort();
  if (!first->host({{&*blocker, 1}}, {{&*signalled, 1}}, [](const host_call_context&) noexcept {})) {
    std::abort();
  }
  if (!second->host({{&*signalled, 1}}, {{&*signalled, 2}}, [](const host_call_context&) noexcept {})) {
    std::abort();
  }
  bool blocker_resolved = false;
  // Waits, on events only, for what the model says is settled by now.
  auto settle = [&] {
    if (first && (blocker_resolved || !blocker)) (void)first->wait_idle();
    if (second && (blocker_resolved || !blocker || !first || !signalled)) (void)second->wait_idle();
  };
  for (int step = 0; step < obj_count; ++step) {
    if (step == signal_at && blocker) {
      (void)blocker->signal(1);
      blocker_resolved = true;
      settle();
    }
    switch (order[static_cast<std::size_t>(step)]) {
      case obj_executor: ex.reset(); break;
      case obj_blocker: blocker.reset(); blocker_resolved = true; break;
      case obj_signalled: signalled.reset(); break;
      case obj_first: first.reset(); break;
      case obj_second: second.reset(); break;
      case obj_pool: pool.reset(); break;
      default: break;
    }
    settle();
  }
}

}  // namespace

TEST_CASE("every destruction order of a pipeline with pending work ends as documented", "[lifetime]") {
  CAUSAL_TEST_NEEDS_FORK();
  std::mt19937 rng(20261128);
  int runs = 0;
  const int orders = causal_test::for_each_destruction_order<obj_count>(0, [&](const auto& order) {
    // Each order twice: with the blocker never signalled, and signalled
    // before a step drawn at random.
    for (int signal_at : {static_cast<int>(obj_count), static_cast<int>(rng() % obj_count)}) {
      const verdict expected = predict(order, signal_at);
      const child_outcome out = run_child([&] { run_order(order, signal_at); });
      INFO("order: " << causal_test::describe_order(order, object_names)
                     << "; blocker signalled before step " << signal_at);
      INFO("stderr: " << out.stderr_text);
      switch (expected) {
        case verdict::clean:
          CHECK(out.exit_code == 0);
          CHECK(out.stderr_text.empty());
          break;
        case verdict::executor_refused:
          CHECK(out.aborted);
          CHECK(contains(out.stderr_text, "executor destroyed while"));
          break;
        case verdict::promise_refused:
          CHECK(out.aborted);
          CHECK(contains(out.stderr_text, "submitted signal(s) of it are neither reached nor failed"));
          break;
      }
      ++runs;
    }
  });
  CHECK(orders == 720);
  CHECK(runs == 2 * 720);
}

TEST_CASE("a stall is described: who waits on what, and who would signal it", "[lifetime][stall]") {
  causal::executor ex(causal::executor_options{.worker_count = 1});
  causal::semaphore first_done, second_done, never;
  causal::cpu::queue first(causal::axis{301}, ex), second(causal::axis{302}, ex), lonely(causal::axis{303}, ex);
  // A cycle across two queues: each operation waits on the other's signal.
  REQUIRE(first.host({{&second_done, 1}}, {{&first_done, 1}}, [](const host_call_context&) noexcept {},
                     "first step"));
  REQUIRE(second.host({{&first_done, 1}}, {{&second_done, 1}}, [](const host_call_context&) noexcept {},
                      "second step"));
  // And a wait that nothing submitted will ever meet.
  REQUIRE(lonely.host({{&never, 7}}, {}, [](const host_call_context&) noexcept {}, "orphan"));

  const causal::status timed_out = first.wait_idle(std::chrono::steady_clock::now());
  REQUIRE(timed_out.code() == errc::timeout);
  const std::string message(timed_out.error_value().message());
  INFO(message);
  CHECK(contains(message, "cpu::queue on axis 301: first step at epoch 1"));
  CHECK(contains(message, ">= 1 (now 0), which the operation at epoch 1 of axis 302 will signal"));

  const std::string other = second.describe_stall();
  INFO(other);
  CHECK(contains(other, "cpu::queue on axis 302: second step at epoch 1"));
  CHECK(contains(other, "which the operation at epoch 1 of axis 301 will signal"));

  const std::string orphan = lonely.describe_stall();
  INFO(orphan);
  CHECK(contains(orphan, ">= 7 (now 0), which no submitted operation signals"));

  // Once idle there is nothing to describe.
  REQUIRE(never.signal(7));
  REQUIRE(lonely.wait_idle());
  CHECK(lonely.describe_stall().empty());
}  // the queues go first and fail the cycle with cancelled

TEST_CASE("a stream pool is bound to its executor: the pool goes first, with its work cancelled",
          "[lifetime][stream_pool]") {
  SECTION("pool first: a pending alloca fails with cancelled") {
    causal::timeline gate, done;
    causal::executor ex(causal::executor_options{.worker_count = 1});
    {
      causal::stream_pool pool{ex, 1024};
      auto buffer = causal::stream_alloca(pool, 512, gate.at(1), done.at(1));
      (void)buffer;
    }  // destroyed with the alloca waiting on a gate nobody opens
    REQUIRE(done.semaphore().failed());
    CHECK(done.semaphore().failure()->code() == errc::cancelled);
  }
  SECTION("executor first: refused, naming the pool") {
    CAUSAL_TEST_NEEDS_FORK();
    const child_outcome out = run_child([] {
      causal::timeline gate, done;
      auto* ex = new causal::executor(causal::executor_options{.worker_count = 1});
      causal::stream_pool pool{*ex, 1024};
      auto buffer = causal::stream_alloca(pool, 512, gate.at(1), done.at(1));
      (void)buffer;
      delete ex;
    });
    CHECK(out.aborted);
    CHECK(contains(out.stderr_text, "stream_pool of 1024 bytes"));
  }
}
