// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Tests for <causal/stream_pool.hpp>: stream-ordered alloca/dealloca run on
// their fences; a request over the quota fails clearly (handle and signal
// fence); requests that each fit are serialized, never failed (two 400 MB
// invocations on a 512 MB pool both complete, one after the other); the
// peak of N sequential invocations is one invocation's worth; transferred
// inputs are released by the callee; misuse (double free, dealloca of a
// failed alloca, a foreign handle) is a clear error; fragmentation never
// strands a fitting request; the pool's destructor cancels what waits; the
// run path allocates nothing; a contended stress under ThreadSanitizer.

#include <causal/executor.hpp>
#include <causal/fence.hpp>
#include <causal/invoke.hpp>
#include <causal/stream_pool.hpp>

#include "catch.hpp"
#include "counting_new.hpp"
#include "eventually.hpp"
#include "string_makers.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace {

using causal::errc;
using causal::executor_options;
using causal::fence;
using causal::status;
using causal::stream_buffer;
using causal::timeline;
using causal::test::eventually;
using namespace std::chrono_literals;

constexpr std::size_t MB = std::size_t{1} << 20;

executor_options workers(std::uint32_t n) { return executor_options{.worker_count = n}; }

}  // namespace

TEST_CASE("stream_pool: alloca and dealloca run on their fences", "[stream_pool][basic]") {
  timeline t;  // outlives the executor: no signal is in flight when it goes
  causal::executor ex{workers(2)};
  std::vector<std::byte> arena(4096);
  causal::stream_pool pool{ex, arena.size(), 64, arena.data()};
  auto buf = causal::stream_alloca(pool, 100, t.at(1), t.at(2));
  auto d = causal::stream_dealloca(pool, buf, t.at(3), t.at(4));
  std::this_thread::sleep_for(2ms);
  CHECK_FALSE(buf.ready());  // t has not reached 1
  CHECK(pool.committed() == 0);
  REQUIRE(t.at(1).signal());
  REQUIRE(t.at(2).wait().ok());
  const auto b = buf.get();
  REQUIRE(b);
  CHECK(b->size == 128);  // rounded to the alignment
  CHECK(b->data == arena.data() + b->offset);
  CHECK(pool.committed() == 128);
  CHECK_FALSE(d.ready());
  REQUIRE(t.at(3).signal());
  REQUIRE(t.at(4).wait().ok());
  CHECK(d.wait().ok());
  CHECK(pool.committed() == 0);
  CHECK(pool.peak_committed() == 128);
  // The alloca's signal carries the pool's axis at its epoch.
  const auto f = t.semaphore().frontier_at(2);
  REQUIRE(f);
  CHECK(f->frontier.epoch_of(pool.axis()) >= 1);
  const auto s = pool.stats();
  CHECK(s.allocas == 1);
  CHECK(s.deallocas == 1);
  CHECK(s.failures == 0);
}

TEST_CASE("stream_pool: a request over the quota fails clearly", "[stream_pool][quota]") {
  timeline t, after;
  causal::executor ex{workers(2)};
  causal::stream_pool pool{ex, 512 * MB};
  std::atomic<int> ran{0};
  auto buf = causal::stream_alloca(pool, 513 * MB, fence{}, t.at(1));
  auto user = causal::async_invoke(ex, [&] { ran.fetch_add(1); }, t.at(1), after.at(1));
  const auto r = buf.get();
  CHECK(r.code() == errc::capacity_exceeded);
  CHECK(t.at(1).wait().code() == errc::capacity_exceeded);
  CHECK(user.wait().code() == errc::capacity_exceeded);
  CHECK(ran.load() == 0);
  // A dealloca of it fails too (its alloca's signal failed), nothing hangs.
  timeline t2;
  auto d = causal::stream_dealloca(pool, buf, fence{}, t2.at(1));
  CHECK(d.wait().code() == errc::capacity_exceeded);
  CHECK(pool.stats().failures >= 1);
  CHECK(pool.committed() == 0);
  auto zero = causal::stream_alloca(pool, 0, fence{}, fence{});
  CHECK(zero.get().code() == errc::invalid_argument);
}

TEST_CASE("stream_pool: two 400 MB invocations on 512 MB run one after the other",
          "[stream_pool][serialize]") {
  const std::uint32_t n = GENERATE(1u, 2u, 4u);
  causal::executor ex{workers(n)};
  for (int run = 0; run < 50; ++run) {
    causal::stream_pool pool{ex, 512 * MB};
    timeline ta, tb;
    std::atomic<int> seq{0}, inside{0}, overlap{0};
    std::array<int, 2> order{-1, -1};
    auto work = [&](int who) {
      return [&, who] {
        if (inside.fetch_add(1) != 0) overlap.fetch_add(1);
        order[static_cast<std::size_t>(who)] = seq.fetch_add(1);
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        inside.fetch_sub(1);
      };
    };
    // Two independent pipelines, submitted up front: alloca -> fn -> dealloca.
    auto a0 = causal::stream_alloca(pool, 400 * MB, fence{}, ta.at(1));
    auto a1 = causal::stream_alloca(pool, 400 * MB, fence{}, tb.at(1));
    auto f0 = causal::async_invoke(ex, work(0), ta.at(1), ta.at(2));
    auto f1 = causal::async_invoke(ex, work(1), tb.at(1), tb.at(2));
    auto d0 = causal::stream_dealloca(pool, a0, ta.at(2), ta.at(3));
    auto d1 = causal::stream_dealloca(pool, a1, tb.at(2), tb.at(3));
    REQUIRE(ta.at(3).wait().ok());
    REQUIRE(tb.at(3).wait().ok());
    REQUIRE(a0.get().ok());
    REQUIRE(a1.get().ok());
    // The handles publish after their signals: once they are ready no
    // signal of ta or tb is in flight, so the timelines may go.
    for (auto* h : {&f0, &f1, &d0, &d1}) REQUIRE(h->wait().ok());
    REQUIRE(overlap.load() == 0);  // never both committed, never both running
    REQUIRE(order[0] >= 0);
    REQUIRE(order[1] >= 0);
    REQUIRE(pool.peak_committed() == 400 * MB);
    REQUIRE(pool.committed() == 0);
    const auto s = pool.stats();
    // Usually the second alloca waits for the first's dealloca; a worker
    // preempted before running it may find the quota free again.
    REQUIRE(s.serialized <= 1);
    REQUIRE(s.failures == 0);
    REQUIRE(s.allocas == 2);
  }
}

TEST_CASE("stream_pool: the second 400 MB alloca waits for the first dealloca",
          "[stream_pool][serialize]") {
  timeline ta, tb, go;
  causal::executor ex{workers(2)};
  causal::stream_pool pool{ex, 512 * MB};
  auto a0 = causal::stream_alloca(pool, 400 * MB, fence{}, ta.at(1));
  REQUIRE(a0.wait().ok());
  // fn0 holds its 400 MB until the host says go.
  auto f0 = causal::async_invoke(ex, [] {}, *causal::join(ta.at(1), go.at(1)), ta.at(2));
  auto d0 = causal::stream_dealloca(pool, a0, ta.at(2), ta.at(3));
  auto a1 = causal::stream_alloca(pool, 400 * MB, fence{}, tb.at(1));
  (void)eventually([&] { return pool.waiting() == 1; });
  REQUIRE(pool.waiting() == 1);
  CHECK_FALSE(a1.ready());
  CHECK(pool.committed() == 400 * MB);
  REQUIRE(go.at(1).signal());
  REQUIRE(a1.wait().ok());  // served by d0, never failed
  CHECK(d0.wait().ok());
  CHECK(pool.committed() == 400 * MB);
  CHECK(pool.peak_committed() == 400 * MB);
  CHECK(pool.stats().serialized == 1);
  CHECK(a1.get()->offset == 0);  // the same bytes, reused
}

TEST_CASE("stream_pool: N sequential invocations peak at one's worth", "[stream_pool][peak]") {
  timeline t;
  causal::executor ex{workers(2)};
  causal::stream_pool pool{ex, 4096 * MB};
  constexpr int N = 20;
  std::vector<causal::invocation<void>> work;
  std::uint64_t v = 0;
  for (int i = 0; i < N; ++i) {
    // alloca -> fn -> dealloca, each step waiting on the previous value.
    auto buf = causal::stream_alloca(pool, 300 * MB, t.at(v), t.at(v + 1));
    work.push_back(causal::async_invoke(ex, [] {}, t.at(v + 1), t.at(v + 2)));
    (void)causal::stream_dealloca(pool, buf, t.at(v + 2), t.at(v + 3));
    v += 3;
  }
  REQUIRE(t.at(v).wait().ok());
  CHECK(pool.peak_committed() == 300 * MB);
  CHECK(pool.committed() == 0);
  CHECK(pool.stats().allocas == N);
  CHECK(pool.stats().serialized == 0);
}

TEST_CASE("stream_pool: transferred inputs are released by the callee", "[stream_pool][transfer]") {
  timeline t;
  causal::executor ex{workers(2)};
  causal::stream_pool pool{ex, 1024 * MB};
  auto in0 = causal::stream_alloca(pool, 100 * MB, t.at(0), t.at(1));
  auto in1 = causal::stream_alloca(pool, 200 * MB, t.at(1), t.at(2));
  std::atomic<std::size_t> committed_inside{0};
  auto call = causal::async_invoke_transfer(
      pool, [&] { committed_inside.store(pool.committed()); return 5; }, t.at(2), t.at(3),
      {in0, in1});
  REQUIRE(t.at(3).wait().ok());
  CHECK(*call.get() == 5);
  CHECK(committed_inside.load() == 300 * MB);
  CHECK(pool.committed() == 0);  // released before the signal
  // The caller gave them away: a dealloca now is a double free.
  timeline t2;
  auto d = causal::stream_dealloca(pool, in0, fence{}, t2.at(1));
  CHECK(d.wait().code() == errc::failed_precondition);
  CHECK(pool.release_now(in1).code() == errc::failed_precondition);

  SECTION("released even when fn never runs") {
    timeline t3;
    auto in2 = causal::stream_alloca(pool, 50 * MB, fence{}, t3.at(1));
    REQUIRE(in2.wait().ok());
    causal::semaphore doomed;
    (void)doomed.fail(causal::error{errc::device_lost, "x"});
    auto c2 = causal::async_invoke_transfer(pool, [] {}, fence{doomed, 1}, fence{}, {in2});
    CHECK(c2.wait().code() == errc::device_lost);
    c2.reset();
    in2.reset();
    // The invocation is gone once its worker released it.
    (void)eventually([&] { return pool.committed() == 0; });
    CHECK(pool.committed() == 0);
  }
}

TEST_CASE("stream_pool: misuse is a clear error", "[stream_pool][errors]") {
  timeline t;
  causal::executor ex{workers(1)};
  causal::stream_pool pool{ex, 1024};
  causal::stream_pool other{ex, 1024};
  auto buf = causal::stream_alloca(pool, 10, fence{}, t.at(1));
  REQUIRE(buf.wait().ok());
  CHECK(other.release_now(buf).code() == errc::invalid_argument);
  // A handle of an invocation that merely returns a stream_buffer.
  auto fake = causal::async_invoke(ex, [] { return stream_buffer{0, 16, nullptr}; }, fence{}, fence{});
  REQUIRE(fake.wait().ok());
  CHECK(pool.release_now(fake).code() == errc::invalid_argument);
  timeline t2;
  CHECK(causal::stream_dealloca(pool, fake, fence{}, t2.at(1)).wait().code() == errc::invalid_argument);
  CHECK(t2.at(1).wait().code() == errc::invalid_argument);
  CHECK(pool.release_now(buf).ok());
  CHECK(pool.release_now(buf).code() == errc::failed_precondition);
  causal::stream_pool bad{ex, 1024, 3};
  CHECK(causal::stream_alloca(bad, 8, fence{}, fence{}).get().code() == errc::invalid_argument);
}

TEST_CASE("stream_pool: fragmentation never strands a fitting request", "[stream_pool][fragment]") {
  timeline t;
  causal::executor ex{workers(2)};
  causal::stream_pool pool{ex, 512, 1};
  auto a = causal::stream_alloca(pool, 100, fence{}, fence{});
  auto b = causal::stream_alloca(pool, 300, a.signal_fence(), fence{});
  REQUIRE(a.wait().ok());
  REQUIRE(b.wait().ok());
  REQUIRE(pool.release_now(a).ok());
  REQUIRE(pool.release_now(b).ok());
  // 400 bytes carved and free, 112 never carved: 512 fits only after a
  // rebuild of the block table.
  auto whole = causal::stream_alloca(pool, 512, fence{}, t.at(1));
  const auto r = whole.get();
  REQUIRE(r);
  CHECK(r->size == 512);
  CHECK(pool.stats().rebuilds == 1);
}

TEST_CASE("stream_pool: requests wait in FIFO order and the destructor cancels them",
          "[stream_pool][fifo]") {
  timeline t, never;
  causal::executor ex{workers(2)};
  causal::invocation<void> late;
  causal::basic_invocation<stream_buffer, fence> big, small, blocked;
  {
    causal::stream_pool pool{ex, 1000, 1};
    auto first = causal::stream_alloca(pool, 600, fence{}, fence{});
    REQUIRE(first.wait().ok());
    big = causal::stream_alloca(pool, 900, fence{}, fence{});
    (void)eventually([&] { return pool.waiting() == 1; });
    REQUIRE(pool.waiting() == 1);
    // 300 would fit now, but waits behind the 900 (no starvation).
    small = causal::stream_alloca(pool, 300, fence{}, fence{});
    (void)eventually([&] { return pool.waiting() == 2; });
    REQUIRE(pool.waiting() == 2);
    CHECK_FALSE(small.ready());
    REQUIRE(pool.release_now(first).ok());
    REQUIRE(big.wait().ok());
    CHECK(big.get()->size == 900);
    CHECK_FALSE(small.ready());
    REQUIRE(pool.release_now(big).ok());
    REQUIRE(small.wait().ok());
    // Now one that waits for quota and one that waits on a fence, then
    // destroy the pool.
    blocked = causal::stream_alloca(pool, 800, fence{}, fence{});
    late = causal::stream_dealloca(pool, small, never.at(1), t.at(1));
    (void)eventually([&] { return pool.waiting() == 1; });
  }
  CHECK(blocked.wait().code() == errc::cancelled);
  CHECK(late.wait().code() == errc::cancelled);
  CHECK(t.at(1).wait().code() == errc::cancelled);
}

TEST_CASE("stream_pool: running operations allocates nothing", "[stream_pool][alloc]") {
  timeline t;
  std::vector<std::unique_ptr<timeline>> own;
  causal::executor ex{workers(2)};
  causal::stream_pool pool{ex, 1024 * MB};
  std::vector<causal::stream_pool::buffer_handle> bufs;
  std::vector<causal::invocation<void>> frees;
  for (int i = 0; i < 32; ++i) {
    own.push_back(std::make_unique<timeline>());
    bufs.push_back(causal::stream_alloca(pool, 64 * MB, t.at(1), own.back()->at(1)));
  }
  for (int i = 0; i < 32; ++i) {
    // Each dealloca also waits for its alloca's signal (own[i] at 1).
    frees.push_back(causal::stream_dealloca(pool, bufs[static_cast<std::size_t>(i)], t.at(2), fence{}));
  }
  causal::test::allocation_guard guard;
  REQUIRE(t.at(1).signal());
  REQUIRE(t.at(2).signal());
  bool ok = true;
  for (auto& b : bufs) ok = b.wait().ok() && ok;
  for (auto& f : frees) ok = f.wait().ok() && ok;
  const auto allocations = guard.allocations();
  CHECK(ok);
  CHECK(allocations == 0);
  CHECK(pool.peak_committed() <= 1024 * MB);
  // 16 fit at once; later ones wait unless a dealloca got in first.
  CHECK(pool.stats().serialized <= 16);
  CHECK(pool.stats().allocas == 32);
  CHECK(pool.committed() == 0);
}

TEST_CASE("stream_pool: contended pipelines never exceed the quota", "[stream_pool][stress]") {
  const std::uint32_t n = GENERATE(2u, 4u);
  constexpr int lanes = 8, steps = 25;
  std::vector<std::unique_ptr<timeline>> tl;
  causal::executor ex{workers(n)};
  causal::stream_pool pool{ex, 1000, 1};
  for (int i = 0; i < lanes; ++i) tl.push_back(std::make_unique<timeline>());
  std::atomic<std::size_t> over{0};
  for (int s = 0; s < steps; ++s) {
    for (int l = 0; l < lanes; ++l) {
      timeline& t = *tl[static_cast<std::size_t>(l)];
      const std::uint64_t v = static_cast<std::uint64_t>(s) * 3;
      const std::size_t size = 100 + static_cast<std::size_t>((l * 37 + s * 11) % 400);
      auto buf = causal::stream_alloca(pool, size, t.at(v), t.at(v + 1));
      (void)causal::async_invoke(
          ex, [&] { if (pool.committed() > pool.quota()) over.fetch_add(1); }, t.at(v + 1), t.at(v + 2));
      (void)causal::stream_dealloca(pool, buf, t.at(v + 2), t.at(v + 3));
    }
  }
  for (auto& t : tl) REQUIRE(t->at(steps * 3).wait_for(60s).ok());
  CHECK(over.load() == 0);
  CHECK(pool.peak_committed() <= 1000);
  CHECK(pool.committed() == 0);
  CHECK(pool.stats().allocas == lanes * steps);
  CHECK(pool.stats().failures == 0);
}
