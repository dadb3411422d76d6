// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// mpi_progress_test: the node drivers (progress.hpp) -- node_thread and
// node_process on a causal::executor -- deliver a signal to a proxy on
// another loopback node and wake a host waiter there; an idle driver
// sleeps and is woken by an export's news or a request, not by its timer
// (the sleeping drivers here have an hour-long timer, so only the waker
// can wake them; the tests assert on counters and events, never on time);
// stop() sends BYE and ends; destruction in any reasonable order is safe.

#include <causal/adapters/mpi/loopback_carrier.hpp>
#include <causal/adapters/mpi/node.hpp>
#include <causal/adapters/mpi/progress.hpp>
#include <causal/executor.hpp>
#include <causal/frontier.hpp>
#include <causal/semaphore.hpp>

#include "catch.hpp"
#include "eventually.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace {

namespace mpi = causal::mpi;
using causal::errc;
using causal::frontier;
using causal::semaphore;
using namespace std::chrono_literals;

using node_t = mpi::basic_node<mpi::loopback_carrier, semaphore, mpi::default_node_traits, mpi::manual_clock>;

mpi::node_options quiet() {
  mpi::node_options o;
  o.heartbeat_interval = 0us;
  o.heartbeat_timeout = 0us;
  return o;
}

/// A driver that, once idle, sleeps for an hour unless woken.
mpi::progress_options sleepy() {
  mpi::progress_options o;
  o.idle_polls = 4;
  o.min_idle_sleep = std::chrono::hours(1);
  o.max_idle_sleep = std::chrono::hours(1);
  return o;
}

/// A driver that polls often while idle (it must notice incoming messages).
mpi::progress_options brisk() {
  mpi::progress_options o;
  o.idle_polls = 8;
  o.min_idle_sleep = 20us;
  o.max_idle_sleep = 200us;
  return o;
}

struct pair_job {
  pair_job() : hub(2), c0(hub, 0), c1(hub, 1), owner(c0, quiet(), clock), reader(c1, quiet(), clock) {}
  mpi::loopback_hub hub;
  mpi::manual_clock clock;
  mpi::loopback_carrier c0, c1;
  node_t owner;   // rank 0: exports
  node_t reader;  // rank 1: proxies
};

causal::executor_options two_workers() {
  causal::executor_options o;
  o.worker_count = 2;
  return o;
}

}  // namespace

TEST_CASE("mpi progress: node_thread delivers a signal to a remote host waiter after sleeping", "[mpi][progress]") {
  pair_job j;
  semaphore s;
  REQUIRE(j.owner.export_semaphore(1, s).ok());
  REQUIRE(j.owner.start().ok());
  REQUIRE(j.reader.start().ok());
  semaphore* p = j.reader.open_proxy(0, 1).value();
  mpi::node_thread<node_t> owner_driver(j.owner, sleepy());
  mpi::node_thread<node_t> reader_driver(j.reader, brisk());
  // The HELLOs cross (the reader polls; the owner polls until idle).
  REQUIRE(causal::test::eventually([&] { return j.reader.peer(0).hello; }));
  REQUIRE(causal::test::eventually([&] { return owner_driver.sleeps() >= 1; }));
  const auto sleeps_before = owner_driver.sleeps();

  std::atomic<int> woke{-1};
  std::thread waiter([&] { woke.store(static_cast<int>(p->wait_for(3, 60s).code()), std::memory_order_release); });
  // Only the export's news can wake the owner's driver: its timer is an hour.
  REQUIRE(s.signal(3, frontier{{causal::make_axis(0, 0, causal::domain::queue, 1).value(), 3}}).ok());
  waiter.join();
  CHECK(woke.load(std::memory_order_acquire) == static_cast<int>(errc::ok));
  CHECK(p->value() == 3);
  CHECK(owner_driver.polls() > 0);
  // ... and it goes back to sleep.
  REQUIRE(causal::test::eventually([&] { return owner_driver.sleeps() > sleeps_before; }));

  // Asleep again (for an hour), a request wakes it too: the owner rank
  // subscribes to the reader's export, which the reader sees.
  semaphore r;
  REQUIRE(j.reader.export_semaphore(7, r).ok());
  (void)j.owner.open_proxy(1, 7).value();
  REQUIRE(causal::test::eventually([&] { return j.reader.subscriber_count(7) == 1; }));

  // stop(): BYE reaches the reader, whose proxy fails with cancelled.
  owner_driver.stop();
  CHECK(j.owner.is_shut_down());
  REQUIRE(causal::test::eventually([&] { return p->failed(); }));
  CHECK(p->failure()->code() == errc::cancelled);
  CHECK(j.reader.peer(0).lost);
  owner_driver.stop();  // idempotent
  // reader_driver stops in its destructor, before the nodes go.
}

TEST_CASE("mpi progress: node_process on an executor sleeps when idle and is woken by news, not its timer",
          "[mpi][progress][executor]") {
  pair_job j;
  semaphore s;
  REQUIRE(j.owner.export_semaphore(1, s).ok());
  REQUIRE(j.owner.start().ok());
  REQUIRE(j.reader.start().ok());
  semaphore* p = j.reader.open_proxy(0, 1).value();
  causal::executor ex(two_workers());
  mpi::node_process<node_t> owner_process(j.owner, sleepy());
  mpi::node_process<node_t> reader_process(j.reader, brisk());
  ex.submit(owner_process);
  ex.submit(reader_process);
  REQUIRE(causal::test::eventually([&] { return j.reader.peer(0).hello; }));
  REQUIRE(causal::test::eventually([&] { return owner_process.sleeps() >= 1; }));

  for (std::uint64_t v = 1; v <= 20; ++v) {
    std::atomic<int> woke{-1};
    std::thread waiter([&] { woke.store(static_cast<int>(p->wait_for(v, 60s).code()), std::memory_order_release); });
    REQUIRE(s.signal(v).ok());
    waiter.join();
    REQUIRE(woke.load(std::memory_order_acquire) == static_cast<int>(errc::ok));
  }
  CHECK(p->value() == 20);
  CHECK(owner_process.timer_wakes() == 0);  // an hour never passed
  CHECK(owner_process.polls() > 0);
  CHECK(reader_process.sleeps() >= 1);

  owner_process.stop();
  REQUIRE(owner_process.wait_stopped(std::chrono::steady_clock::now() + 60s));
  CHECK(j.owner.is_shut_down());
  REQUIRE(causal::test::eventually([&] { return p->failed(); }));
  CHECK(p->failure()->code() == errc::cancelled);
  reader_process.stop();
  REQUIRE(reader_process.wait_stopped(std::chrono::steady_clock::now() + 60s));
  CHECK(j.reader.is_shut_down());
}

TEST_CASE("mpi progress: a driver of a node never started just stops; drivers go before their nodes",
          "[mpi][progress]") {
  SECTION("node_thread, never started") {
    pair_job j;
    mpi::node_thread<node_t> t(j.owner, brisk());
    t.stop();
    CHECK_FALSE(j.owner.is_shut_down());
  }
  SECTION("node_process, never submitted") {
    pair_job j;
    mpi::node_process<node_t> p(j.owner, sleepy());
  }
  SECTION("node_process of a node never started completes on stop") {
    pair_job j;
    causal::executor ex(two_workers());
    mpi::node_process<node_t> p(j.owner, sleepy());
    ex.submit(p);
    p.stop();
    REQUIRE(p.wait_stopped(std::chrono::steady_clock::now() + 60s));
  }
  SECTION("node_thread destroyed without stop(), then the node, with a proxy waiter released") {
    auto j = std::make_unique<pair_job>();
    semaphore s;
    REQUIRE(j->owner.export_semaphore(1, s).ok());
    REQUIRE(j->owner.start().ok());
    REQUIRE(j->reader.start().ok());
    semaphore* p = j->reader.open_proxy(0, 1).value();
    std::atomic<int> woke{-1};
    std::thread waiter;
    {
      mpi::node_thread<node_t> a(j->owner, brisk());
      mpi::node_thread<node_t> b(j->reader, brisk());
      REQUIRE(causal::test::eventually([&] { return j->owner.subscriber_count(1) == 1; }));
      waiter = std::thread([&] { woke.store(static_cast<int>(p->wait_for(5, 60s).code()), std::memory_order_release); });
      REQUIRE(causal::test::eventually([&] { return p->parked_waiters() == 1; }));
    }
    // Both drivers stopped in their destructors: both nodes shut down, so
    // the reader's own proxy failed (cancelled) and the waiter returned.
    waiter.join();
    CHECK(woke.load(std::memory_order_acquire) == static_cast<int>(errc::cancelled));
    CHECK(j->owner.is_shut_down());
    CHECK(j->reader.is_shut_down());
    j.reset();
  }
}
