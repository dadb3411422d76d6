// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Tests for the CPU queue (<causal/adapters/cpu/queue.hpp> over
// <causal/queue_process.hpp>), beyond the conformance suite: host calls run
// in epoch order one at a time (they bump a plain counter, so TSan checks
// the ordering) over 1, 2 and 4 workers; command buffers run as block
// processors, one after another, with results checked; an operation with
// more device waits than its inline timepoint nodes runs only after all of
// them, signalled in random order from another thread; a failing host call
// fails its signals and the queue, later operations fail without running
// and later submits are refused with nothing touched; the opt-in
// MaxInFlight bound refuses a submit cleanly; a three-stage pipeline of
// 10 000 requests is submitted whole before any runs, and ring segments are
// reused; wait_idle times out and then succeeds; closing a queue
// with a wait that can never be met fails that operation's signals instead
// of hanging; two queues ping-pong 5 000 rounds through semaphores with a
// producer thread (each operation exactly once); submitting and running
// allocate nothing; a block pool fences reuse on a progress timeline; a
// block written on one queue and read on another is freed after both
// with stream_dealloca(pool, block, after), and a third queue reuses it
// only after both uses (bytes checked), its fenced acquire naming the
// wait; a failing stream_dealloca(..., after) releases and submits
// nothing; and the progress timeline is turned on once, explicitly
// (idempotent, refused while operations are in flight, failed on a
// failed queue), and left alone while off.
//
// No verdict here depends on how soon a thread gets a CPU: the only waits
// that expect a timeout wait for something nothing else can bring about,
// and every other wait is a 20 s hang guard. Executors, queues and
// semaphores are registered with the test watchdog (test/support/
// watchdog.hpp), which prints their state if a test hangs.

#include <causal/adapters/cpu/queue.hpp>
#include <causal/block_processor.hpp>
#include <causal/pool.hpp>
#include <causal/executor.hpp>
#include <causal/semaphore.hpp>
#include <causal/trace.hpp>

#include "catch.hpp"
#include "counting_new.hpp"
#include "string_makers.hpp"
#include "watchdog.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using causal::errc;
using causal::host_call_context;
using causal::queue_operation;
using causal::semaphore;
using causal::status;
using causal::test::watch;
using namespace std::chrono_literals;

causal::executor_options workers(std::uint32_t n) { return causal::executor_options{.worker_count = n}; }

// The default allocator, which queues built without an axis draw from too:
// one allocator per session, so no two queues here share an axis.
causal::axis next_axis() { return causal::default_axis_allocator().allocate(0, causal::domain::queue).value(); }

}  // namespace

TEST_CASE("cpu queue: host calls run in epoch order, one at a time", "[cpu]") {
  for (std::uint32_t w : {1u, 2u, 4u}) {
    CAPTURE(w);
    causal::executor ex(workers(w));
    const auto watched_ex = watch(ex, "executor");
    semaphore done;
    const auto watched_done = watch(done, "done");
    // Plain (non-atomic) state: the queue must order the calls.
    struct state {
      std::uint64_t calls = 0;
      std::uint64_t out_of_order = 0;
    } st;
    {
      causal::cpu::queue q(next_axis(), ex);
      const auto watched_q = watch(q, "queue");
      constexpr std::uint64_t n = 2000;
      for (std::uint64_t i = 1; i <= n; ++i) {
        state* p = &st;
        auto r = q.host({}, {}, [p, i](const host_call_context& c) noexcept {
          if (p->calls + 1 != i || c.epoch != i) ++p->out_of_order;
          ++p->calls;
        });
        REQUIRE(r);
        if (i % 200 == 0) REQUIRE(q.wait_idle());
      }
      REQUIRE(q.submit({}, {{&done, 1}}, queue_operation{}));
      REQUIRE(done.wait_for(1, 20s));
      REQUIRE(q.wait_idle());
      CHECK(q.completed_epoch() == n + 1);
    }
    CHECK(st.calls == 2000);
    CHECK(st.out_of_order == 0);
  }
}

namespace {

struct vector_job {
  std::vector<std::uint32_t> data;
  std::uint64_t sum = 0;
  std::uint32_t scale = 1;
};

void fill_kernel(void* user, causal::tile t) noexcept {
  auto& job = *static_cast<vector_job*>(user);
  job.data[t.index] = t.index * job.scale;
}

void sum_kernel(void* user, causal::tile) noexcept {
  auto& job = *static_cast<vector_job*>(user);
  job.sum = std::accumulate(job.data.begin(), job.data.end(), std::uint64_t{0});
}

}  // namespace

TEST_CASE("cpu queue: command buffers run as block processors, in order", "[cpu]") {
  for (std::uint32_t w : {1u, 2u, 4u}) {
    CAPTURE(w);
    causal::executor ex(workers(w));
    const auto watched_ex = watch(ex, "executor");
    constexpr std::uint32_t tiles = 10000;
    std::array<vector_job, 3> jobs;
    std::array<causal::command_buffer, 3> buffers;
    for (std::uint32_t k = 0; k < 3; ++k) {
      jobs[k].data.assign(tiles, 0);
      jobs[k].scale = k + 1;
      (void)buffers[k].dispatch(&fill_kernel, &jobs[k], tiles);
      buffers[k].barrier();
      (void)buffers[k].dispatch(&sum_kernel, &jobs[k], 1);
    }
    semaphore done;
    std::uint64_t seen_before_third = 0;
    {
      causal::cpu::queue q(next_axis(), ex);
      const auto watched_q = watch(q, "queue");
      REQUIRE(q.dispatch({}, {}, buffers[0]));
      REQUIRE(q.dispatch({}, {}, buffers[1]));
      // A host call between dispatches sees the earlier ones finished.
      std::uint64_t* seen = &seen_before_third;
      const vector_job* second = &jobs[1];
      REQUIRE(q.host({}, {}, [seen, second](const host_call_context&) noexcept { *seen = second->sum; }));
      REQUIRE(q.dispatch({}, {{&done, 1}}, buffers[2]));
      REQUIRE(done.wait_for(1, 20s));
      REQUIRE(q.wait_idle());
      CHECK(q.dispatches() == 3);
    }
    const std::uint64_t base = std::uint64_t{tiles} * (tiles - 1) / 2;
    for (std::uint32_t k = 0; k < 3; ++k) CHECK(jobs[k].sum == base * (k + 1));
    CHECK(seen_before_third == base * 2);
  }
}

TEST_CASE("cpu queue: an operation waits for all of many device waits", "[cpu]") {
  causal::executor ex(workers(2));
  const auto watched_ex = watch(ex, "executor");
  constexpr std::size_t n = 10;  // more than the slot's inline timepoint nodes
  std::array<semaphore, n> inputs;
  semaphore done;
  const auto watched_done = watch(done, "done");
  std::array<std::uint64_t, n> seen{};
  {
    causal::cpu::queue q(next_axis(), ex);
    const auto watched_q = watch(q, "queue");
    std::vector<causal::cpu::queue::wait_type> waits;
    for (auto& s : inputs) waits.push_back({&s, 1});
    auto* values = &seen;
    auto* sems = &inputs;
    REQUIRE(q.submit(waits, std::array{causal::cpu::queue::signal_type{&done, 1}},
                     queue_operation::host([values, sems](const host_call_context&) noexcept {
                       for (std::size_t i = 0; i < n; ++i) (*values)[i] = (*sems)[i].value();
                     })));
    CHECK(q.stats().device_waits == n);
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937(7));
    // Another thread reaches every input but the last, in random order
    // (the timepoints fire on it and re-arm the slot's nodes on later
    // waits); it is joined, so its signals have done all they will do.
    std::thread signaller([&] {
      for (std::size_t k = 0; k + 1 < n; ++k) {
        (void)inputs[order[k]].signal(1);
        std::this_thread::yield();
      }
    });
    signaller.join();
    // Not before the last input: nothing else can reach `done`. (A queue
    // that ran early would also show in `seen` below.)
    CHECK(done.value() == 0);
    CHECK_FALSE(done.failed());
    REQUIRE(inputs[order[n - 1]].signal(1));
    REQUIRE(done.wait_for(1, 20s));
    REQUIRE(q.wait_idle());
  }
  // The host call saw every input reached when it ran.
  for (std::uint64_t v : seen) CHECK(v == 1);
}

TEST_CASE("cpu queue: a failing host call fails its signals and the queue, stickily", "[cpu]") {
  causal::executor ex(workers(2));
  const auto watched_ex = watch(ex, "executor");
  semaphore gate, first, second, later;
  int ran_after = 0;
  causal::cpu::queue q(next_axis(), ex);
  const auto watched_q = watch(q, "queue");
  // The first operation waits for the gate, so all three are submitted
  // before any runs: otherwise a worker that got there first would fail
  // the queue before the third submit, which would then be refused.
  REQUIRE(q.host({{&gate, 1}}, {{&first, 1}}, [](const host_call_context&) noexcept {}));
  REQUIRE(q.host({}, {{&second, 1}}, [](const host_call_context&) noexcept -> status {
    return causal::error{errc::invalid_argument, "test: the host call failed"};
  }));
  int* ran = &ran_after;
  REQUIRE(q.host({}, {{&later, 1}}, [ran](const host_call_context&) noexcept { ++*ran; }));
  REQUIRE(gate.signal(1));
  CHECK(first.wait_for(1, 20s));
  CHECK(second.wait_for(1, 20s).code() == errc::invalid_argument);
  CHECK(later.wait_for(1, 20s).code() == errc::invalid_argument);
  CHECK(q.wait_idle().code() == errc::invalid_argument);
  CHECK(ran_after == 0);
  CHECK(q.completed_epoch() == 1);  // nothing past the last good operation
  // A submit to the failed queue is refused; its semaphore is untouched.
  semaphore untouched;
  auto r = q.host({}, {{&untouched, 1}}, [](const host_call_context&) noexcept {});
  REQUIRE_FALSE(r);
  CHECK(r.error_value().code() == errc::invalid_argument);
  CHECK_FALSE(untouched.failure());
  CHECK(untouched.value() == 0);
}

TEST_CASE("cpu queue: the short path -- an axis of its own, host calls without the context", "[cpu]") {
  causal::executor ex(workers(2));
  causal::cpu::queue a(ex), b(ex);
  // Each queue drew a fresh, distinct axis from the default allocator.
  CHECK(a.axis().raw() != 0);
  CHECK(a.axis() != b.axis());
  CHECK(causal::default_axis_allocator().allocated(0, causal::domain::queue) >= 2);
  semaphore done;
  int calls = 0;
  int* c = &calls;
  REQUIRE(a.host({}, {}, [c] { ++*c; }));  // not noexcept, no context, void
  // Returns a status (b runs on another worker than a: it must not touch `calls`).
  REQUIRE(b.host({}, {{&done, 1}}, []() -> status { return status{}; }));
  CHECK(done.wait_for(1, 20s));
  CHECK(a.wait_idle());
  CHECK(calls == 1);
}

#if defined(__cpp_exceptions)
TEST_CASE("cpu queue: a host call that throws fails its operation instead of the program", "[cpu]") {
  causal::executor ex(workers(2));
  causal::cpu::queue q(next_axis(), ex);
  semaphore threw;
  REQUIRE(q.host({}, {{&threw, 1}}, [] { throw 42; }));
  const status s = threw.wait_for(1, 20s);
  CHECK(s.code() == errc::failed_precondition);
  // The cause is kept: the type of a non-std exception...
  CHECK(s.error_value().message() == "host call threw: an exception of type int");
  CHECK(q.wait_idle().code() == errc::failed_precondition);
  // ... and a std::exception's what().
  causal::cpu::queue r(next_axis(), ex);
  semaphore threw_std;
  REQUIRE(r.host({}, {{&threw_std, 1}}, [] { throw std::runtime_error("disk on fire"); }));
  CHECK(threw_std.wait_for(1, 20s).error_value().message() == "host call threw: disk on fire");
}
#endif

TEST_CASE("cpu queue: with the opt-in MaxInFlight bound, a submit beyond it is refused before "
          "any effect and loses nothing",
          "[cpu][bound]") {
  causal::executor ex(workers(1));
  const auto watched_ex = watch(ex, "executor");
  semaphore gate, done;
  std::atomic<int> ran{0};
  {
    causal::cpu::basic_queue<semaphore, 4> q(next_axis(), ex);
    const auto watched_q = watch(q, "queue");
    auto* counter = &ran;
    for (int i = 0; i < 4; ++i) {
      REQUIRE(q.host({{&gate, 1}}, {}, [counter](const host_call_context&) noexcept { ++*counter; }));
    }
    auto refused = q.host({}, {{&done, 1}}, [counter](const host_call_context&) noexcept { ++*counter; });
    REQUIRE_FALSE(refused);
    CHECK(refused.error_value().code() == errc::resource_exhausted);
    CHECK_FALSE(done.failure());
    CHECK(done.pending_count() == 0);  // nothing announced either
    CHECK(q.epoch() == 4);
    REQUIRE(gate.signal(1));
    REQUIRE(q.wait_idle());
    REQUIRE(q.host({}, {{&done, 1}}, [counter](const host_call_context&) noexcept { ++*counter; }));
    REQUIRE(done.wait_for(1, 20s));
    REQUIRE(q.wait_idle());
  }
  CHECK(ran.load() == 5);
}

TEST_CASE("cpu queue: a three-stage pipeline of 10 000 requests is submitted whole before any "
          "request runs",
          "[cpu][submit_ahead]") {
  // Nothing runs until the gate opens: every stage's ring and every
  // semaphore's table of submitted signals must take all 10 000 (the
  // default configuration has no bound). Then each stage runs its requests
  // in order, each after the previous stage's request.
  causal::executor ex(workers(2));
  const auto watched_ex = watch(ex, "executor");
  constexpr std::uint64_t requests = 10'000;
  semaphore gate, loaded, computed, stored;
  const auto watched_stored = watch(stored, "stored");
  struct stage_log {
    std::vector<std::uint64_t> order;  // touched only by the stage's own calls
    const semaphore* before = nullptr; // the previous stage's semaphore
    std::atomic<std::uint64_t> misordered{0};
  };
  std::array<stage_log, 3> logs;
  logs[1].before = &loaded;
  logs[2].before = &computed;
  for (auto& l : logs) l.order.reserve(requests);
  {
    causal::cpu::queue load(next_axis(), ex), compute(next_axis(), ex), store(next_axis(), ex);
    const auto watched_load = watch(load, "load");
    const auto watched_store = watch(store, "store");
    std::array<causal::cpu::queue*, 3> stages{&load, &compute, &store};
    std::array<semaphore*, 3> outputs{&loaded, &computed, &stored};
    for (std::uint64_t r = 1; r <= requests; ++r) {
      for (std::size_t k = 0; k < 3; ++k) {
        semaphore* input = k == 0 ? &gate : outputs[k - 1];
        const std::uint64_t wait_value = k == 0 ? 1 : r;
        stage_log* log = &logs[k];
        const auto submitted = stages[k]->host(
            {{input, wait_value}}, {{outputs[k], r}},
            [log, r](const host_call_context&) noexcept {
              if (log->before != nullptr && log->before->value() < r) {
                log->misordered.fetch_add(1, std::memory_order_relaxed);
              }
              log->order.push_back(r);
            });
        REQUIRE(submitted);
      }
    }
    // All 30 000 operations are in flight, none has run.
    CHECK(stored.value() == 0);
    CHECK(loaded.pending_count() == requests);
    CHECK(logs[0].order.empty());
    REQUIRE(gate.signal(1));
    REQUIRE(stored.wait_for(requests, 60s));
    for (auto* q : stages) REQUIRE(q->wait_idle());
  }
  for (const auto& l : logs) {
    REQUIRE(l.order.size() == requests);
    CHECK(std::is_sorted(l.order.begin(), l.order.end()));
    CHECK(l.misordered.load() == 0);
  }
  const auto at = stored.frontier_at(requests);
  REQUIRE(at);
  CHECK(at->reached);
}

TEST_CASE("cpu queue: ring segments are recycled: rounds of the same depth stop allocating",
          "[cpu][alloc][submit_ahead]") {
  causal::executor ex(workers(1));
  const auto watched_ex = watch(ex, "executor");
  std::array<semaphore, 3> gates;
  semaphore done;
  causal::cpu::queue q(next_axis(), ex);
  const auto watched_q = watch(q, "queue");
  constexpr std::uint64_t depth = 500;  // many segments deep
  constexpr std::size_t slots = decltype(q)::process_type::segment_slots;
  auto round = [&](std::size_t k) {
    bool ok = true;
    for (std::uint64_t i = 1; i <= depth; ++i) {
      ok = q.submit({{&gates[k], 1}}, {{&done, k * depth + i}}, queue_operation{}).ok() && ok;
    }
    return ok;
  };
  REQUIRE(round(0));
  // Two segments are inline; the rest of the depth was allocated.
  CHECK(q.queue_process().allocated_segments() <= depth / slots);
  CHECK(q.queue_process().allocated_segments() + 2 >= depth / slots);
  REQUIRE(gates[0].signal(1));
  REQUIRE(q.wait_idle());
  // The same depth from another place in the ring may need one segment
  // more (it spans one more boundary); after that, none.
  REQUIRE(round(1));
  const std::size_t segments = q.queue_process().allocated_segments();
  REQUIRE(gates[1].signal(1));
  REQUIRE(q.wait_idle());
  causal::test::allocation_guard guard;
  const bool ok = round(2);
  const auto allocations = guard.allocations();
  CHECK(ok);
  CHECK(allocations == 0);
  CHECK(q.queue_process().allocated_segments() == segments);
  REQUIRE(gates[2].signal(1));
  REQUIRE(done.wait_for(3 * depth, 20s));
  REQUIRE(q.wait_idle());
}

TEST_CASE("cpu queue: wait_idle times out while work waits, then succeeds", "[cpu]") {
  causal::executor ex(workers(2));
  const auto watched_ex = watch(ex, "executor");
  semaphore gate;
  causal::cpu::queue q(next_axis(), ex);
  const auto watched_q = watch(q, "queue");
  REQUIRE(q.submit({{&gate, 1}}, {}, queue_operation{}));
  // Only this thread signals the gate: nothing can complete the operation
  // before it does, however the threads are scheduled.
  CHECK(q.wait_idle(std::chrono::steady_clock::now() + 20ms).code() == errc::timeout);
  REQUIRE(gate.signal(1));
  CHECK(q.wait_idle());
}

TEST_CASE("cpu queue: closing with an unmet wait fails the operation, no hang", "[cpu]") {
  causal::executor ex(workers(2));
  const auto watched_ex = watch(ex, "executor");
  semaphore never, out;
  int ran = 0;
  {
    causal::cpu::queue q(next_axis(), ex);
    const auto watched_q = watch(q, "queue");
    int* r = &ran;
    REQUIRE(q.host({{&never, 1}}, {{&out, 1}}, [r](const host_call_context&) noexcept { ++*r; }));
  }
  CHECK(ran == 0);
  // Failed before the queue's destructor returned: no wait involved.
  CHECK(out.failed());
  CHECK(out.wait_for(1, 20s).code() == errc::cancelled);
}

TEST_CASE("cpu queue: two queues ping-pong with a producer thread, each op exactly once", "[cpu]") {
  for (std::uint32_t w : {1u, 2u, 4u}) {
    CAPTURE(w);
    causal::executor ex(workers(w));
    const auto watched_ex = watch(ex, "executor");
    constexpr std::uint64_t rounds = 5000;
    semaphore ping, pong;
    const auto watched_ping = watch(ping, "ping");
    const auto watched_pong = watch(pong, "pong");
    std::vector<std::uint8_t> ran_a(rounds + 1, 0), ran_b(rounds + 1, 0);
    {
      causal::cpu::queue a(next_axis(), ex);
      causal::cpu::queue b(next_axis(), ex);
      const auto watched_a = watch(a, "queue a");
      const auto watched_b = watch(b, "queue b");
      // One producer thread submits to both queues (a queue takes one
      // submitting thread at a time; here it is the same one).
      std::thread producer([&] {
        for (std::uint64_t i = 1; i <= rounds; ++i) {
          auto* ra = ran_a.data();
          auto* rb = ran_b.data();
          // a's op i waits for b's op i-1 (pong) and signals ping = i.
          for (;;) {
            auto r = a.host(i > 1 ? std::initializer_list<causal::cpu::queue::wait_type>{{&pong, i - 1}}
                                  : std::initializer_list<causal::cpu::queue::wait_type>{},
                            {{&ping, i}},
                            [ra, i](const host_call_context&) noexcept { ++ra[i]; });
            if (r) break;
            REQUIRE(r.error_value().code() == errc::resource_exhausted);
            std::this_thread::yield();
          }
          for (;;) {
            auto r = b.host({{&ping, i}}, {{&pong, i}},
                            [rb, i](const host_call_context&) noexcept { ++rb[i]; });
            if (r) break;
            REQUIRE(r.error_value().code() == errc::resource_exhausted);
            std::this_thread::yield();
          }
          // Keep the semaphores' outstanding submitted signals bounded.
          if (i % 4 == 0) REQUIRE(pong.wait_for(i, 20s));
        }
      });
      producer.join();
      REQUIRE(pong.wait_for(rounds, 20s));
      REQUIRE(a.wait_idle());
      REQUIRE(b.wait_idle());
    }
    CHECK(std::count(ran_a.begin() + 1, ran_a.end(), 1) == static_cast<long>(rounds));
    CHECK(std::count(ran_b.begin() + 1, ran_b.end(), 1) == static_cast<long>(rounds));
  }
}

TEST_CASE("cpu queue: submitting and running allocate nothing", "[cpu][alloc]") {
  causal::executor ex(workers(2));
  const auto watched_ex = watch(ex, "executor");
  semaphore s, t;
  std::atomic<std::uint64_t> calls{0};
  causal::cpu::queue a(next_axis(), ex);
  causal::cpu::queue b(next_axis(), ex);
  const auto watched_a = watch(a, "queue a");
  const auto watched_b = watch(b, "queue b");
  auto* counter = &calls;
  // Warm up: first use of the executor's lists and the semaphores.
  REQUIRE(a.host({}, {{&s, 1}}, [counter](const host_call_context&) noexcept { ++*counter; }));
  REQUIRE(b.host({{&s, 1}}, {{&t, 1}}, [counter](const host_call_context&) noexcept { ++*counter; }));
  REQUIRE(t.wait_for(1, 20s));
  causal::test::allocation_guard guard;
  for (std::uint64_t i = 2; i <= 300; ++i) {
    (void)a.host({}, {{&s, i}}, [counter](const host_call_context&) noexcept { ++*counter; });
    (void)b.host({{&s, i}}, {{&t, i}}, [counter](const host_call_context&) noexcept { ++*counter; });
    (void)t.wait_for(i, 20s);
  }
  const auto allocations = guard.allocations();
  REQUIRE(a.wait_idle());
  REQUIRE(b.wait_idle());
  CHECK(allocations == 0);
  CHECK(calls.load() == 600);
}

TEST_CASE("cpu queue: a pool fences reuse of a block on the freeing queue's progress timeline",
          "[cpu][pool]") {
  causal::executor ex(workers(2));
  const auto watched_ex = watch(ex, "executor");
  semaphore gate, produced, done;
  std::vector<int> order;
  std::mutex order_mutex;
  auto note = [&order, &order_mutex](int tag) {
    std::lock_guard lock(order_mutex);
    order.push_back(tag);
  };
  using note_type = decltype(note);
  note_type* notes = &note;
  {
    causal::cpu::queue a(next_axis(), ex);
    causal::cpu::queue b(next_axis(), ex);
    const auto watched_a = watch(a, "queue a");
    const auto watched_b = watch(b, "queue b");
    causal::basic_block_pool<causal::cpu::queue::core_type> pool(1024, 64);
    REQUIRE(b.enable_progress_timeline());
    REQUIRE(pool.register_timeline(b.axis(), b.progress_timeline()));
    // a produces into the only block; b (held by the gate) consumes and frees it.
    auto first = pool.acquire(a.core(), 1024);
    REQUIRE(first);
    REQUIRE(a.host({}, {{&produced, 1}}, [notes](const host_call_context&) noexcept { (*notes)(1); }));
    REQUIRE(b.host({{&gate, 1}, {&produced, 1}}, {},
                   [notes](const host_call_context&) noexcept { (*notes)(2); }));
    REQUIRE(pool.release(*first, b.core()));
    // a wants the block again: nothing proves b is done with it, so the
    // pool fences a's next operation on b's progress timeline.
    auto again = pool.acquire(a.core(), 1024);
    REQUIRE(again);
    CHECK(again->offset == first->offset);
    CHECK(pool.stats().reused_after_wait == 1);
    CHECK(pool.stats().waits_issued == 1);
    REQUIRE(a.host({}, {{&done, 1}}, [notes](const host_call_context&) noexcept { (*notes)(3); }));
    // Fenced behind b, behind the gate, which only this thread signals: no
    // schedule can reach `done` first.
    CHECK(done.wait_for(1, 20ms).code() == errc::timeout);
    // Only b moves its progress timeline: a signal from here would release
    // the fence while b may still use the block.
    CHECK(b.progress_timeline().writes_reserved());
    CHECK(b.progress_timeline().signal(1).code() == errc::failed_precondition);
    CHECK(b.progress_timeline().value() == 0);
    REQUIRE(gate.signal(1));
    REQUIRE(done.wait_for(1, 20s));
    REQUIRE(a.wait_idle());
    REQUIRE(b.wait_idle());
    CHECK(b.progress_timeline().value() == 1);
  }
  CHECK(order == std::vector<int>{1, 2, 3});
}

TEST_CASE("cpu queue: a pool's fence waits plus an operation's full set of device waits all "
          "hold; none is dropped for lack of room in the slot",
          "[cpu][pool][waits]") {
  // The pool stages its fence wait into the next operation's slot; that
  // operation then brings max_waits device waits of its own. Every one of
  // them must still order it -- the fence wait above all, or the block is
  // reused while b still uses it.
  causal::executor ex(workers(2));
  const auto watched_ex = watch(ex, "executor");
  using core_type = causal::cpu::queue::core_type;
  constexpr std::size_t n = core_type::max_waits;
  std::array<semaphore, n> inputs;
  semaphore gate, produced, done;
  std::atomic<int> b_ran{0};
  std::atomic<int> a_saw_b{-1};
  {
    causal::cpu::queue a(next_axis(), ex);
    causal::cpu::queue b(next_axis(), ex);
    const auto watched_a = watch(a, "queue a");
    const auto watched_b = watch(b, "queue b");
    causal::basic_block_pool<core_type> pool(1024, 64);
    REQUIRE(b.enable_progress_timeline());
    REQUIRE(pool.register_timeline(b.axis(), b.progress_timeline()));
    auto first = pool.acquire(a.core(), 1024);
    REQUIRE(first);
    REQUIRE(a.submit({}, {{&produced, 1}}, queue_operation{}));
    auto* ran = &b_ran;
    REQUIRE(b.host({{&gate, 1}, {&produced, 1}}, {},
                   [ran](const host_call_context&) noexcept { ran->store(1); }));
    REQUIRE(pool.release(*first, b.core()));
    auto again = pool.acquire(a.core(), 1024);  // fenced on b's progress
    REQUIRE(again);
    REQUIRE(again->path == causal::pool_path::fenced);
    std::vector<causal::cpu::queue::wait_type> waits;
    for (auto& in : inputs) waits.push_back({&in, 1});
    const std::array<causal::cpu::queue::signal_type, 1> signals{{{&done, 1}}};
    auto* saw = &a_saw_b;
    const auto submitted = a.submit(waits, signals,
                                    queue_operation::host([saw, ran](const host_call_context&) noexcept {
                                      saw->store(ran->load());
                                    }));
    REQUIRE(submitted);
    for (auto& in : inputs) REQUIRE(in.signal(1));
    // Only the gate is missing now, and only this thread signals it.
    CHECK(done.value() == 0);
    REQUIRE(gate.signal(1));
    REQUIRE(done.wait_for(1, 20s));
    REQUIRE(a.wait_idle());
    REQUIRE(b.wait_idle());
  }
  CHECK(a_saw_b.load() == 1);  // a's operation ran after b's
}

TEST_CASE("cpu queue: a trace sink sees labelled operations, tiers, retires and drains", "[cpu][trace]") {
  causal::executor ex(workers(2));
  const auto watched_ex = watch(ex, "executor");
  causal::recording_sink sink;
  semaphore s, t;
  {
    causal::cpu::queue a(next_axis(), ex);
    causal::cpu::queue b(next_axis(), ex);
    const auto watched_a = watch(a, "queue a");
    const auto watched_b = watch(b, "queue b");
    a.set_trace_sink(&sink);
    b.set_trace_sink(&sink);
    ex.set_trace_sink(&sink);
    semaphore gate;
    REQUIRE(a.host({{&gate, 1}}, {{&s, 1}}, [](const host_call_context&) noexcept {}, "produce"));
    REQUIRE(b.host({{&s, 1}}, {{&t, 1}}, [](const host_call_context&) noexcept {}, "consume"));
    REQUIRE(b.submit({{&s, 1}}, {}, queue_operation{}));  // elided: b knows a:1 now
    REQUIRE(gate.signal(1));
    REQUIRE(t.wait_for(1, 20s));
    REQUIRE(a.wait_idle());
    REQUIRE(b.wait_idle());
    ex.set_trace_sink(nullptr);
  }
  const std::vector<causal::trace_record> events = sink.events();
  std::vector<std::string> labels;
  std::vector<causal::trace_tier> tiers;
  std::size_t retires = 0, drains = 0;
  for (const auto& e : events) {
    if (e.kind == causal::trace_kind::queue_submit) labels.push_back(e.text);
    if (e.kind == causal::trace_kind::queue_wait) tiers.push_back(e.tier);
    if (e.kind == causal::trace_kind::queue_retire) ++retires;
    if (e.kind == causal::trace_kind::drain_begin) ++drains;
  }
  CHECK(labels == std::vector<std::string>{"produce", "consume", "marker"});
  REQUIRE(tiers.size() == 3);
  CHECK(tiers[0] == causal::trace_tier::device);     // a waits for the host's gate
  CHECK(tiers[1] == causal::trace_tier::device);     // b waits for a
  CHECK(tiers[2] == causal::trace_tier::dominated);  // b imported a:1 with its first wait
  CHECK(retires >= 2);
  CHECK(drains >= 2);
}

namespace {

constexpr std::size_t shared_block_bytes = 256;

/// What three queues' host calls write and read in the test below: plain
/// memory, ordered only by the queues' semaphores.
struct shared_block_state {
  std::array<unsigned char, shared_block_bytes> arena{};
  std::array<unsigned char, shared_block_bytes> seen_by_reader{};
  std::atomic<int> next_step{0};
  int writer_step = -1, reader_step = -1, reuser_step = -1;
};

}  // namespace

TEST_CASE("cpu queue: stream_dealloca after other queues' signals frees a block used on two "
          "queues; a third reuses it only after both uses",
          "[cpu][pool]") {
  causal::executor ex(workers(2));
  const auto watched_ex = watch(ex, "executor");
  shared_block_state st;
  semaphore gate, written, read, overwritten;
  const auto watched_gate = watch(gate, "gate");
  const auto watched_read = watch(read, "read");
  {
    causal::cpu::queue a(next_axis(), ex);
    causal::cpu::queue b(next_axis(), ex);
    causal::cpu::queue c(next_axis(), ex);
    const auto watched_a = watch(a, "queue a");
    const auto watched_b = watch(b, "queue b");
    const auto watched_c = watch(c, "queue c");
    causal::cpu::block_pool pool(shared_block_bytes, 64);  // one block: c must reuse it
    for (causal::cpu::queue* q : {&a, &b, &c}) {
      REQUIRE(q->enable_progress_timeline());
      REQUIRE(pool.register_timeline(q->axis(), q->progress_timeline()));
    }
    auto block = a.stream_alloca(pool, shared_block_bytes);
    REQUIRE(block);
    REQUIRE(block->path == causal::pool_path::fresh);
    shared_block_state* s = &st;
    const std::size_t off = block->offset;
    // Two uses on two queues: a writes, b reads (held by the gate).
    REQUIRE(a.host({}, {{&written, 1}}, [s, off](const host_call_context&) noexcept {
      std::fill_n(s->arena.begin() + static_cast<std::ptrdiff_t>(off), shared_block_bytes, 0xAA);
      s->writer_step = s->next_step++;
    }));
    REQUIRE(b.host({{&gate, 1}, {&written, 1}}, {{&read, 1}}, [s, off](const host_call_context&) noexcept {
      std::copy_n(s->arena.begin() + static_cast<std::ptrdiff_t>(off), shared_block_bytes,
                  s->seen_by_reader.begin());
      s->reader_step = s->next_step++;
    }));
    // a frees it after both: its own use by FIFO, b's through the marker's
    // wait, a device wait since nothing proves b's read yet.
    const std::uint64_t epoch_before = a.epoch();
    const std::uint64_t device_waits_before = a.stats().device_waits;
    REQUIRE(a.stream_dealloca(pool, *block, {{&read, 1}}));
    CHECK(a.epoch() == epoch_before + 1);  // the marker
    CHECK(a.stats().device_waits == device_waits_before + 1);
    REQUIRE(pool.free_count() == 1);
    CHECK(pool.free_block(0).producer == causal::frontier_entry{a.axis(), a.epoch()});
    // c reuses it: the pool fences c's next operation on a's progress
    // timeline at the marker, and says so in the block.
    auto again = c.stream_alloca(pool, shared_block_bytes);
    REQUIRE(again);
    CHECK(again->offset == block->offset);
    CHECK(again->path == causal::pool_path::fenced);
    REQUIRE(again->wait_count == 1);
    CHECK(again->waits[0].semaphore == &std::as_const(a).progress_timeline());
    CHECK(again->waits[0].axis == a.axis());
    CHECK(again->waits[0].value == a.epoch());
    REQUIRE(c.host({}, {{&overwritten, 1}}, [s, off](const host_call_context&) noexcept {
      std::fill_n(s->arena.begin() + static_cast<std::ptrdiff_t>(off), shared_block_bytes, 0xCC);
      s->reuser_step = s->next_step++;
    }));
    REQUIRE(written.wait_for(1, 20s));
    // c is behind the marker, behind b's read, behind the gate, which only
    // this thread signals: no schedule can reach `overwritten` first.
    CHECK(overwritten.wait_for(1, 20ms).code() == errc::timeout);
    REQUIRE(gate.signal(1));
    REQUIRE(overwritten.wait_for(1, 20s));
    REQUIRE(a.wait_idle());
    REQUIRE(b.wait_idle());
    REQUIRE(c.wait_idle());
  }
  CHECK(st.writer_step == 0);
  CHECK(st.reader_step == 1);
  CHECK(st.reuser_step == 2);
  CHECK(std::all_of(st.seen_by_reader.begin(), st.seen_by_reader.end(),
                    [](unsigned char v) { return v == 0xAA; }));
  CHECK(std::all_of(st.arena.begin(), st.arena.end(), [](unsigned char v) { return v == 0xCC; }));
}

TEST_CASE("cpu queue: a stream_dealloca after waits that fails releases nothing and submits nothing",
          "[cpu][pool][errors]") {
  causal::executor ex(workers(2));
  const auto watched_ex = watch(ex, "executor");
  semaphore used;
  causal::cpu::queue a(next_axis(), ex);
  causal::cpu::queue b(next_axis(), ex);
  const auto watched_a = watch(a, "queue a");
  const auto watched_b = watch(b, "queue b");
  causal::cpu::block_pool pool(512, 64);
  auto block = a.stream_alloca(pool, 256);
  REQUIRE(block);
  REQUIRE(b.submit({}, {{&used, 1}}, queue_operation{}));
  const std::uint64_t epoch_before = a.epoch();
  const causal::pool_stats pool_before = pool.stats();

  SECTION("a wait that names no semaphore") {
    CHECK(a.stream_dealloca(pool, *block, {{nullptr, 1}}).code() == errc::invalid_argument);
  }
  SECTION("a wait on a failed semaphore") {
    semaphore broken;
    (void)broken.fail(causal::error{errc::device_lost, "test: its device is gone"});
    CHECK(a.stream_dealloca(pool, *block, {{&used, 1}, {&broken, 1}}).code() == errc::device_lost);
  }
  SECTION("a stale handle is refused before any marker is submitted") {
    causal::pool_block stale = *block;
    ++stale.generation;
    CHECK(a.stream_dealloca(pool, stale, {{&used, 1}}).code() == errc::failed_precondition);
  }
  SECTION("a failed queue") {
    REQUIRE(a.host({}, {}, [](const host_call_context&) noexcept -> status {
      return causal::error{errc::invalid_argument, "test: the host call failed"};
    }));
    CHECK(a.wait_idle().code() == errc::invalid_argument);
    const std::uint64_t failed_epoch = a.epoch();
    CHECK(a.stream_dealloca(pool, *block, {{&used, 1}}).code() == errc::invalid_argument);
    CHECK(a.epoch() == failed_epoch);
    CHECK(pool.live_count() == 1);
    CHECK(pool.free_count() == 0);
    return;  // a stays failed; the common checks below assume a healthy queue
  }
  CHECK(a.epoch() == epoch_before);  // no marker
  CHECK(pool.stats() == pool_before);
  CHECK(pool.live_count() == 1);
  CHECK(pool.free_count() == 0);
  // Everything is still valid: the block is released once, properly.
  REQUIRE(a.stream_dealloca(pool, *block, {{&used, 1}}));
  CHECK(a.epoch() == epoch_before + 1);
  CHECK(pool.free_count() == 1);
  REQUIRE(a.wait_idle());
  REQUIRE(b.wait_idle());
}

TEST_CASE("cpu queue: the progress timeline is turned on once, explicitly; off, operations leave "
          "it alone",
          "[cpu][pool]") {
  causal::executor ex(workers(2));
  const auto watched_ex = watch(ex, "executor");
  semaphore done, gate;
  causal::cpu::queue q(next_axis(), ex);
  causal::cpu::queue r(next_axis(), ex);
  causal::cpu::queue f(next_axis(), ex);
  const auto watched_q = watch(q, "queue q");
  const auto watched_r = watch(r, "queue r");
  const auto watched_f = watch(f, "queue f");
  const semaphore& timeline = std::as_const(q).progress_timeline();

  // Off by default: a completed operation does not touch it.
  CHECK_FALSE(q.progress_timeline_enabled());
  REQUIRE(q.host({}, {{&done, 1}}, [](const host_call_context&) noexcept {}));
  REQUIRE(q.wait_idle());
  CHECK(timeline.value() == 0);
  CHECK_FALSE(timeline.writes_reserved());

  // Turned on while idle: brought to the completed epoch at once, and
  // reserved for the queue.
  REQUIRE(q.enable_progress_timeline());
  CHECK(q.progress_timeline_enabled());
  CHECK(timeline.value() == 1);
  CHECK(timeline.writes_reserved());
  // Idempotent: a second call changes nothing.
  REQUIRE(q.enable_progress_timeline());
  CHECK(timeline.value() == 1);
  CHECK(&q.progress_timeline() == &timeline);
  // From now on every completed epoch reaches it.
  REQUIRE(q.host({}, {{&done, 2}}, [](const host_call_context&) noexcept {}));
  REQUIRE(q.wait_idle());
  CHECK(timeline.value() == 2);

  // Not while operations are in flight: the workers read the setting.
  REQUIRE(r.submit({{&gate, 1}}, {}, queue_operation{}));
  CHECK(r.enable_progress_timeline().code() == errc::failed_precondition);
  CHECK_FALSE(r.progress_timeline_enabled());
  CHECK_FALSE(std::as_const(r).progress_timeline().writes_reserved());
  REQUIRE(gate.signal(1));
  REQUIRE(r.wait_idle());
  REQUIRE(r.enable_progress_timeline());
  CHECK(std::as_const(r).progress_timeline().value() == 1);

  // A failed queue: on, and failed with the queue's error, so no pool
  // ever waits on it.
  REQUIRE(f.host({}, {}, [](const host_call_context&) noexcept -> status {
    return causal::error{errc::invalid_argument, "test: the host call failed"};
  }));
  CHECK(f.wait_idle().code() == errc::invalid_argument);
  REQUIRE(f.enable_progress_timeline());
  CHECK(f.progress_timeline_enabled());
  CHECK(std::as_const(f).progress_timeline().failed());
}
