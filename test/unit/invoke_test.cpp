// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Tests for <causal/invoke.hpp>: the pipelined DAG of docs/invocations.md
// and examples/04_pipelined_dag.cpp (fn0..fn4 over fences a, b, c; fn3
// waits on nothing) submitted up front runs in an order the fences allow,
// 200 times on 1, 2 and 4 workers; results reach the handle and the
// callback; fn's error, an exception, a failed or destroyed
// wait semaphore, cancellation and a rejected (non-increasing) signal all
// fail the signal fence, so downstream work fails instead of hanging;
// handle waits time out; signals carry the join of the waited frontiers
// and the producer entry; a stateful program runs set, matmul x3, get in
// order with no user fences, and a failed call poisons it; the wake and
// drain path allocates nothing; a randomised layered DAG stress (run under
// ThreadSanitizer) checks every edge.
//
// Catch2 assertions are made on the test's thread only; fn bodies record
// what they see in atomics.

#include <causal/executor.hpp>
#include <causal/fence.hpp>
#include <causal/invoke.hpp>
#include <causal/scope.hpp>
#include <causal/semaphore.hpp>

#include "catch.hpp"
#include "counting_new.hpp"
#include "string_makers.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

using causal::errc;
using causal::error;
using causal::executor_options;
using causal::fence;
using causal::semaphore;
using causal::status;
using causal::timeline;
using namespace std::chrono_literals;

executor_options workers(std::uint32_t n) { return executor_options{.worker_count = n}; }

causal::axis ax(std::uint64_t n) { return causal::axis{n}; }

/// The pipelined DAG of examples/04_pipelined_dag.cpp. One timeline per
/// producer (a timeline value has one signaller); c joins the four points
/// fn1..fn4 signal.
struct pipelined_dag {
  timeline host, t0, t1, t2, t3, t4;
  fence a = host.at(1);
  fence b = t0.at(1);
  fence c = *fence::of({{&t1.semaphore(), 1}, {&t2.semaphore(), 1},
                        {&t3.semaphore(), 1}, {&t4.semaphore(), 1}});
  std::atomic<int> seq{0};
  std::array<std::atomic<int>, 6> pos{};  // fn0..fn4, then a's signal

  pipelined_dag() {
    for (auto& p : pos) p.store(-1);
  }
  auto fn(int i) {
    return [this, i] { pos[static_cast<std::size_t>(i)].store(seq.fetch_add(1)); };
  }
};

}  // namespace

TEST_CASE("invoke: the pipelined DAG runs in fence order", "[invoke][dag]") {
  const std::uint32_t n = GENERATE(1u, 2u, 4u);
  causal::executor ex{workers(n)};
  for (int run = 0; run < 200; ++run) {
    pipelined_dag d;
    // Everything submitted up front; no host wait in between.
    auto h0 = causal::async_invoke(ex, d.fn(0), d.a, d.b);
    auto h1 = causal::async_invoke(ex, d.fn(1), d.b, d.t1.at(1));
    auto h2 = causal::async_invoke(ex, d.fn(2), d.b, d.t2.at(1));
    auto h3 = causal::async_invoke(ex, d.fn(3), fence{}, d.t3.at(1));
    auto h4 = causal::async_invoke(ex, d.fn(4), d.a, d.t4.at(1));
    // fn3 waits on nothing: it finishes while a is still unsignalled, and
    // nothing else may have run.
    REQUIRE(h3.wait().ok());
    const bool early = d.pos[0] != -1 || d.pos[1] != -1 || d.pos[2] != -1 || d.pos[4] != -1;
    d.pos[5].store(d.seq.fetch_add(1));
    REQUIRE(d.a.signal());
    REQUIRE(d.c.wait().ok());
    REQUIRE_FALSE(early);
    for (auto& p : d.pos) REQUIRE(p.load() >= 0);
    REQUIRE(d.pos[0] > d.pos[5]);
    REQUIRE(d.pos[4] > d.pos[5]);
    REQUIRE(d.pos[1] > d.pos[0]);
    REQUIRE(d.pos[2] > d.pos[0]);
    REQUIRE(d.pos[3] < d.pos[5]);
    for (auto* h : {&h0, &h1, &h2, &h4}) REQUIRE(h->wait().ok());
  }
}

TEST_CASE("invoke: results reach the handle and the callback", "[invoke][result]") {
  causal::executor ex{workers(2)};
  timeline t;
  std::atomic<int> seen{0};
  auto sum = causal::async_invoke(ex, [] { return 1 + 2; }, t.at(0), t.at(1));
  auto cb = causal::async_invoke(
      ex, [] { return 40; }, t.at(1), t.at(2),
      [&](causal::result<int>& r) { seen.store(r.ok() ? *r + 2 : -1); });
  auto as_result = causal::async_invoke(ex, []() -> causal::result<int> { return 7; }, t.at(2), t.at(3));
  auto moved = causal::async_invoke(ex, [] { return std::make_unique<int>(5); }, t.at(3), t.at(4));
  REQUIRE(t.at(4).wait().ok());
  CHECK(*sum.get() == 3);
  CHECK(sum.ready());
  CHECK(cb.get().value() == 40);
  CHECK(seen.load() == 42);  // the callback ran before the handle saw the result
  CHECK(*as_result.get() == 7);
  auto copy = moved;
  auto first = moved.get();
  REQUIRE(first);
  CHECK(**first == 5);
  CHECK(copy.get().code() == errc::failed_precondition);  // move-only: taken once
  CHECK(sum.signal_fence().value_of(t.semaphore()) == 1);

  causal::invocation<int> empty;
  CHECK(empty.wait().code() == errc::failed_precondition);
  CHECK(empty.get().code() == errc::failed_precondition);
}

TEST_CASE("invoke: an error in fn fails the signal fence and what follows", "[invoke][failure]") {
  const std::uint32_t n = GENERATE(1u, 2u);
  causal::executor ex{workers(n)};
  pipelined_dag d;
  std::atomic<int> ran{0};

  SECTION("an exception") {
    auto h0 = causal::async_invoke(ex, [] { throw std::runtime_error("boom"); }, d.a, d.b);
    auto h1 = causal::async_invoke(ex, [&] { ran.fetch_add(1); }, d.b, d.t1.at(1));
    auto h2 = causal::async_invoke(ex, [&] { ran.fetch_add(1); }, d.b, d.t2.at(1));
    auto h3 = causal::async_invoke(ex, d.fn(3), fence{}, d.t3.at(1));
    auto h4 = causal::async_invoke(ex, d.fn(4), d.a, d.t4.at(1));
    REQUIRE(d.a.signal());
    const status c = d.c.wait();
    CHECK(c.code() == errc::failed_precondition);
    CHECK(h0.wait().code() == errc::failed_precondition);
    CHECK(h0.wait().error_value().message() == "async_invoke: fn threw: boom");  // the cause is kept
    REQUIRE(h0.exception());
    CHECK_THROWS_AS(std::rethrow_exception(h0.exception()), std::runtime_error);
    CHECK(h1.wait().code() == errc::failed_precondition);
    CHECK(h2.wait().code() == errc::failed_precondition);
    CHECK(ran.load() == 0);  // fn1 and fn2 never ran
    CHECK(h3.wait().ok());   // independent work is unaffected
    CHECK(h4.wait().ok());
    CHECK(d.t1.semaphore().failure()->code() == errc::failed_precondition);
  }
  SECTION("an error value") {
    auto h0 = causal::async_invoke(
        ex, []() -> status { return error{errc::device_lost, "gpu fell off", 3}; }, d.a, d.b);
    auto h1 = causal::async_invoke(ex, [&] { return ran.fetch_add(1); }, d.b, d.t1.at(1));
    REQUIRE(d.a.signal());
    CHECK(h0.wait().code() == errc::device_lost);
    const auto r1 = h1.get();
    CHECK(r1.code() == errc::device_lost);
    CHECK(r1.error_value().position() == 3);
    CHECK(d.t1.semaphore().failed());
    CHECK(ran.load() == 0);
  }
  SECTION("a failed wait point") {
    auto h0 = causal::async_invoke(ex, [&] { ran.fetch_add(1); }, d.a, d.b);
    (void)d.host.semaphore().fail(error{errc::cancelled, "upstream gone"});
    CHECK(h0.wait().code() == errc::cancelled);
    CHECK(d.b.wait().code() == errc::cancelled);
    CHECK(ran.load() == 0);
  }
  SECTION("a failed point fails the invocation once the other points are over") {
    // Its signals must not fail before every point is reached or failed: a
    // consumer's elided wait may stand for a healthy signal still to come
    // (docs/queues.md, "Elision never changes an outcome").
    timeline later;
    auto w = *fence::of({{&later.semaphore(), 1}, {&d.host.semaphore(), 1}});
    auto h0 = causal::async_invoke(ex, [&] { ran.fetch_add(1); }, w, d.b);
    (void)d.host.semaphore().fail(error{errc::device_lost, "x"});
    // `later` is not reached: nothing can have completed the invocation.
    CHECK_FALSE(h0.ready());
    CHECK_FALSE(d.b.failure());
    REQUIRE(later.semaphore().signal(1));
    CHECK(h0.wait_for(10s).code() == errc::device_lost);
    CHECK(d.b.failure()->code() == errc::device_lost);
    CHECK(ran.load() == 0);
  }
}

TEST_CASE("invoke: a wait semaphore destroyed first cancels the invocation", "[invoke][failure]") {
  causal::executor ex{workers(1)};
  timeline out;
  std::atomic<int> ran{0};
  causal::invocation<void> h;
  {
    semaphore doomed;
    h = causal::async_invoke(ex, [&] { ran.fetch_add(1); }, fence{doomed, 1}, out.at(1));
  }
  CHECK(h.wait().code() == errc::cancelled);
  CHECK(out.at(1).wait().code() == errc::cancelled);
  CHECK(ran.load() == 0);
}

TEST_CASE("invoke: a wait semaphore destroyed as soon as it is reached still hands its frontier "
          "to the signals",
          "[invoke][frontier][lifetime]") {
  // A consumer that sees the value may destroy the semaphore at once (here
  // a timepoint that fires before the invocation's); the invocation, which
  // completes later on a worker, must not read it then. Its bytes are wiped
  // so that a late read would see an empty semaphore.
  causal::executor ex{workers(1)};
  alignas(semaphore) std::array<std::byte, sizeof(semaphore)> storage{};
  auto* doomed = new (storage.data()) semaphore;
  struct wiper {
    semaphore* sem;
    std::array<std::byte, sizeof(semaphore)>* bytes;
  } w{doomed, &storage};
  causal::semaphore_timepoint consumer(
      1,
      [](causal::semaphore_timepoint& tp, status st) noexcept {
        if (!st) return;
        auto* self = static_cast<wiper*>(tp.user_data());
        self->sem->~semaphore();
        std::memset(self->bytes->data(), 0, self->bytes->size());
      },
      &w);
  doomed->add_timepoint(consumer);
  timeline out;
  std::atomic<int> ran{0};
  auto h = causal::async_invoke(ex, [&] { ran.fetch_add(1); }, fence{*doomed, 1}, out.at(1));
  REQUIRE(doomed->signal(1, causal::frontier{{ax(1), 5}, {ax(2), 6}}));
  REQUIRE(h.wait().ok());
  CHECK(ran.load() == 1);
  const auto got = out.semaphore().frontier_at(1);
  REQUIRE(got);
  CHECK_FALSE(got->frontier.tainted());
  CHECK(got->frontier.epoch_of(ax(1)) == 5);
  CHECK(got->frontier.epoch_of(ax(2)) == 6);
}

TEST_CASE("invoke: waits time out; cancel fails the signal fence", "[invoke][timeout]") {
  causal::executor ex{workers(2)};
  timeline gate, out;
  std::atomic<int> ran{0};
  auto h = causal::async_invoke(ex, [&] { ran.fetch_add(1); }, gate.at(1), out.at(1));
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(h.wait_for(20ms).code() == errc::timeout);
  CHECK(std::chrono::steady_clock::now() - t0 >= 20ms);
  CHECK_FALSE(h.ready());
  CHECK(out.at(1).wait_for(1ms).code() == errc::timeout);
  CHECK(h.cancel());
  CHECK(h.wait().code() == errc::cancelled);
  CHECK(out.at(1).wait().code() == errc::cancelled);
  REQUIRE(gate.at(1).signal());  // too late: its timepoint was cancelled
  std::this_thread::sleep_for(5ms);
  CHECK(ran.load() == 0);
  CHECK_FALSE(h.cancel());
}

TEST_CASE("invoke: a scope cancels pending invocations", "[invoke][scope]") {
  causal::executor ex{workers(2)};
  timeline gate, out1, out2;
  causal::scope group;
  causal::invoke_options options;
  options.group = &group;
  auto h1 = causal::async_invoke(ex, [] {}, gate.at(1), out1.at(1), options);
  auto h2 = causal::async_invoke(ex, [] {}, out1.at(1), out2.at(1), options);
  CHECK(group.live() == 2);
  group.cancel_all();
  CHECK(group.wait_idle().code() == errc::cancelled);
  CHECK(h1.wait().code() == errc::cancelled);
  CHECK(h2.wait().code() == errc::cancelled);
  CHECK(out2.at(1).wait().code() == errc::cancelled);
}

TEST_CASE("invoke: two producers of one value fail the semaphore", "[invoke][order]") {
  causal::executor ex{workers(2)};
  timeline t;
  auto h1 = causal::async_invoke(ex, [] {}, fence{}, t.at(1));
  REQUIRE(h1.wait().ok());
  auto h2 = causal::async_invoke(ex, [] {}, fence{}, t.at(1));
  CHECK(h2.wait().code() == errc::not_increasing);
  CHECK(t.semaphore().failure()->code() == errc::not_increasing);
}

TEST_CASE("invoke: signals carry the waited frontiers and the producer", "[invoke][frontier]") {
  causal::executor ex{workers(2)};
  semaphore a, b;
  timeline out;
  causal::invoke_options options;
  options.producer = causal::frontier_entry{ax(99), 7};
  auto h = causal::async_invoke(ex, [] {}, *fence::of({{&a, 1}, {&b, 2}}), out.at(1), options);
  REQUIRE(a.signal(1, causal::frontier{{ax(1), 5}}));
  REQUIRE(b.signal(2, causal::frontier{{ax(1), 3}, {ax(2), 8}}));
  REQUIRE(out.at(1).wait().ok());
  const auto got = out.semaphore().frontier_at(1);
  REQUIRE(got);
  CHECK(got->frontier.epoch_of(ax(1)) == 5);
  CHECK(got->frontier.epoch_of(ax(2)) == 8);
  CHECK(got->frontier.epoch_of(ax(99)) == 7);
  CHECK(got->producer == causal::frontier_entry{ax(99), 7});
  CHECK(h.wait().ok());
}

TEST_CASE("invoke: with several signal points only the last carries the producer's own entry",
          "[invoke][frontier]") {
  // The points are signalled in order, one at a time (docs/queues.md,
  // "Signals of one operation").
  causal::executor ex{workers(2)};
  semaphore a;
  timeline first, last;
  causal::invoke_options options;
  options.producer = causal::frontier_entry{ax(99), 7};
  auto h = causal::async_invoke(ex, [] {}, fence{a, 1}, *fence::of({{&first.semaphore(), 1}, {&last.semaphore(), 1}}),
                                options);
  REQUIRE(a.signal(1, causal::frontier{{ax(1), 5}}));
  REQUIRE(h.wait().ok());
  const auto early = first.semaphore().frontier_at(1);
  const auto late = last.semaphore().frontier_at(1);
  REQUIRE((early && late));
  CHECK(early->frontier.epoch_of(ax(1)) == 5);
  CHECK(early->frontier.epoch_of(ax(99)) == 0);
  CHECK(early->producer == causal::frontier_entry{ax(99), 7});
  CHECK(late->frontier.epoch_of(ax(1)) == 5);
  CHECK(late->frontier.epoch_of(ax(99)) == 7);
}

namespace {

using matrix = std::array<std::int64_t, 4>;  // 2x2, row-major

matrix mul(const matrix& x, const matrix& y) {
  return {x[0] * y[0] + x[1] * y[2], x[0] * y[1] + x[1] * y[3],
          x[2] * y[0] + x[3] * y[2], x[2] * y[1] + x[3] * y[3]};
}

struct trivial_kernel {
  matrix x0{};
  std::vector<int> log;  // touched only by calls, which are ordered
};

}  // namespace

TEST_CASE("program: set, matmul x3, get run in order with no user fences", "[invoke][program]") {
  const std::uint32_t n = GENERATE(1u, 2u, 4u);
  causal::executor ex{workers(n)};
  const matrix input{1, 2, 3, 4}, a{0, 1, 1, 0}, b{2, 0, 0, 2}, c{1, 1, 0, 1};
  const matrix expected = mul(c, mul(b, mul(a, input)));
  for (int run = 0; run < 50; ++run) {
    causal::basic_program<trivial_kernel> m{ex};
    (void)m.call([&](trivial_kernel& k) { k.log.push_back(0); k.x0 = input; });
    (void)m.call([&](trivial_kernel& k) { k.log.push_back(1); k.x0 = mul(a, k.x0); });
    (void)m.call([&](trivial_kernel& k) { k.log.push_back(2); k.x0 = mul(b, k.x0); });
    (void)m.call([&](trivial_kernel& k) { k.log.push_back(3); k.x0 = mul(c, k.x0); });
    auto out = m.call([](trivial_kernel& k) { k.log.push_back(4); return k; });
    auto got = out.get();  // the implicit wait
    REQUIRE(got);
    REQUIRE(got->x0 == expected);
    REQUIRE(got->log == std::vector<int>{0, 1, 2, 3, 4});
    REQUIRE(m.wait_idle().ok());
    // The calls' signals carry the program's axis at their step.
    const auto f = m.timeline().semaphore().frontier_at(5);
    REQUIRE(f);
    REQUIRE(f->frontier.epoch_of(m.axis()) == 5);
  }
}

TEST_CASE("program: user fences and a failed call", "[invoke][program]") {
  causal::executor ex{workers(2)};
  timeline user;
  causal::basic_program<int> m{ex, 10};
  std::atomic<int> ran{0};
  auto h1 = m.call([](int& s) { return s += 1; }, user.at(1), fence{});
  auto h2 = m.call([](int& s) { return s *= 3; }, fence{}, user.at(2));
  CHECK(h1.wait_for(5ms).code() == errc::timeout);  // waits for the user's fence
  REQUIRE(user.at(1).signal());
  CHECK(*h2.get() == 33);
  CHECK(user.at(2).wait().ok());

  auto bad = m.call([](int&) -> status { return error{errc::device_lost, "x"}; });
  auto after = m.call([&](int&) { ran.fetch_add(1); });
  CHECK(bad.wait().code() == errc::device_lost);
  CHECK(after.wait().code() == errc::device_lost);
  CHECK(ran.load() == 0);
  REQUIRE(m.failure());
  CHECK(m.wait_idle().code() == errc::device_lost);
}

TEST_CASE("program: destruction cancels calls that cannot run", "[invoke][program]") {
  causal::executor ex{workers(1)};
  timeline never;
  causal::invocation<void> h;
  {
    causal::basic_program<int> m{ex};
    h = m.call([](int&) {}, never.at(1), fence{});
  }
  CHECK(h.wait().code() == errc::cancelled);
}

TEST_CASE("invoke: the wake and drain path allocates nothing", "[invoke][alloc]") {
  const std::uint32_t n = GENERATE(1u, 2u);
  causal::executor ex{workers(n)};
  timeline gate;
  std::vector<std::unique_ptr<timeline>> outs;
  std::vector<causal::invocation<int>> handles;
  for (int i = 0; i < 64; ++i) outs.push_back(std::make_unique<timeline>());
  std::atomic<int> sum{0};
  for (int i = 0; i < 64; ++i) {
    handles.push_back(causal::async_invoke(
        ex, [&sum, i] { return sum.fetch_add(i) + i; }, gate.at(1), outs[static_cast<std::size_t>(i)]->at(1),
        [](causal::result<int>&) {}));
  }
  causal::test::allocation_guard guard;
  REQUIRE(gate.at(1).signal());
  bool all_ok = true;
  for (auto& h : handles) all_ok = h.wait().ok() && all_ok;
  const auto allocations = guard.allocations();
  CHECK(all_ok);
  CHECK(allocations == 0);
  CHECK(sum.load() == 63 * 64 / 2);
}

TEST_CASE("invoke: a random layered DAG respects every edge", "[invoke][stress]") {
  const std::uint32_t n = GENERATE(1u, 2u, 4u);
  causal::executor ex{workers(n)};
  std::mt19937 rng(1234 + n);
  constexpr int layers = 6, width = 6;
  for (int round = 0; round < 30; ++round) {
    std::vector<std::unique_ptr<timeline>> tl;
    for (int i = 0; i < layers * width; ++i) tl.push_back(std::make_unique<timeline>());
    std::vector<std::atomic<int>> done(layers * width);
    std::vector<std::vector<int>> preds(layers * width);
    std::atomic<int> violations{0};
    std::vector<causal::invocation<void>> handles;
    for (int l = 0; l < layers; ++l) {
      for (int w = 0; w < width; ++w) {
        const int id = l * width + w;
        fence wait;
        if (l > 0) {
          for (int k = 0; k < 3; ++k) {
            const int p = (l - 1) * width + static_cast<int>(rng() % width);
            (void)wait.add(tl[static_cast<std::size_t>(p)]->semaphore(), 1);
            preds[static_cast<std::size_t>(id)].push_back(p);
          }
        }
        handles.push_back(causal::async_invoke(
            ex,
            [&, id] {
              for (int p : preds[static_cast<std::size_t>(id)]) {
                if (done[static_cast<std::size_t>(p)].load(std::memory_order_relaxed) == 0) {
                  violations.fetch_add(1);
                }
              }
              done[static_cast<std::size_t>(id)].store(1, std::memory_order_relaxed);
            },
            wait, tl[static_cast<std::size_t>(id)]->at(1)));
      }
    }
    bool all_ok = true;
    for (auto& h : handles) all_ok = h.wait().ok() && all_ok;
    REQUIRE(all_ok);
    REQUIRE(violations.load() == 0);
  }
}
