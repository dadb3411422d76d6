// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// mpi_node_test: causal::mpi::basic_node over the in-process loopback
// carrier -- HELLO, exports and proxies, late joiners, coalescing, remote
// wait elision, failure, withdrawal, BYE, heartbeat loss, dropped ranks,
// damaged bytes, protocol errors and allocation-free steady state.
//
// Every node runs on a manual_clock, so time moves only when a test says
// so; a test "pumps" the job (polls every node until a round does nothing)
// instead of waiting.

#include <causal/adapters/mpi/loopback_carrier.hpp>
#include <causal/adapters/mpi/node.hpp>
#include <causal/adapters/mpi/wire.hpp>
#include <causal/axis.hpp>
#include <causal/completion.hpp>
#include <causal/coroutine.hpp>
#include <causal/executor.hpp>
#include <causal/frontier.hpp>
#include <causal/queue.hpp>
#include <causal/scope.hpp>
#include <causal/semaphore.hpp>

#include "catch.hpp"
#include "counting_new.hpp"
#include "eventually.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace mpi = causal::mpi;
using causal::axis;
using causal::errc;
using causal::frontier;
using causal::frontier_entry;
using causal::semaphore;
using namespace std::chrono_literals;

using node_t = mpi::basic_node<mpi::loopback_carrier, semaphore, mpi::default_node_traits, mpi::manual_clock>;
using layout = causal::default_axis_layout;

axis rank_axis(std::uint64_t rank, std::uint64_t ordinal) {
  return layout::make(causal::axis_fields{0, rank, causal::domain::queue, ordinal}).value();
}

/// A job of `n` loopback ranks sharing one manual clock.
struct job {
  explicit job(std::uint32_t n, mpi::node_options options = quiet_options()) : hub(n) {
    for (std::uint32_t r = 0; r < n; ++r) {
      carriers.push_back(std::make_unique<mpi::loopback_carrier>(hub, r));
      nodes.push_back(std::make_unique<node_t>(*carriers.back(), options, clock));
    }
  }

  /// No heartbeats, no timeouts: time does not move anyway unless a test
  /// advances the clock.
  static mpi::node_options quiet_options() {
    mpi::node_options o;
    o.heartbeat_interval = 0us;
    o.heartbeat_timeout = 0us;
    return o;
  }

  node_t& operator[](std::size_t r) { return *nodes[r]; }

  void start_all() {
    for (auto& n : nodes) REQUIRE(n->start().ok());
  }

  /// Polls every node until a whole round does nothing; returns the rounds.
  std::size_t pump(std::size_t max_rounds = 64) {
    for (std::size_t round = 0; round < max_rounds; ++round) {
      std::size_t work = 0;
      for (auto& n : nodes) work += n->poll();
      if (work == 0) return round;
    }
    FAIL("the job never went quiet");
    return max_rounds;
  }

  mpi::loopback_hub hub;
  mpi::manual_clock clock;
  std::vector<std::unique_ptr<mpi::loopback_carrier>> carriers;
  std::vector<std::unique_ptr<node_t>> nodes;
};

/// Records what a proxy reaches, to check "each value once, increasing".
struct reached_log {
  static void on_reached(void* self, const causal::observed_signal<frontier>& ev) noexcept {
    auto& log = *static_cast<reached_log*>(self);
    if (log.count < log.values.size()) log.values[log.count] = ev.value;
    ++log.count;
  }
  bool increasing_once() const {
    for (std::size_t i = 1; i < count && i < values.size(); ++i) {
      if (values[i] <= values[i - 1]) return false;
    }
    return true;
  }
  std::array<std::uint64_t, 4096> values{};
  std::size_t count = 0;
  causal::semaphore_observer<frontier> observer{this, nullptr, &on_reached, nullptr, nullptr};
};

frontier f_of(axis a, std::uint64_t epoch) { return frontier{{a, epoch}}; }

/// Awaits `proxy` at 1, 2, ... `last` and records each value it resumed at.
causal::coroutine_process await_each(semaphore* proxy, std::uint64_t last, std::atomic<std::uint64_t>* resumed_at) {
  for (std::uint64_t v = 1; v <= last; ++v) {
    const causal::status st = co_await causal::until(*proxy, v);
    if (!st) co_return st;
    resumed_at->store(v, std::memory_order_release);
  }
  co_return {};
}

}  // namespace

TEST_CASE("mpi node: HELLO tells peers the rank's axes with epochs, exports and settings", "[mpi][node]") {
  mpi::node_options options = job::quiet_options();
  options.heartbeat_interval = 123us;
  job j(3, options);
  const axis a1 = j[1].allocate_axis(causal::domain::queue).value();
  const axis a2 = j[1].allocate_axis(causal::domain::queue).value();
  CHECK(layout::machine(a1) == 1);
  CHECK(a1 < a2);
  REQUIRE(j[1].announce_axis(a2, 40).ok());
  REQUIRE(j[1].announce_axis(a2, 30).ok());  // a lower epoch changes nothing
  CHECK(j[1].announce_axis(rank_axis(0, 5), 1).code() == errc::invalid_argument);
  semaphore s7, s3;
  REQUIRE(j[1].export_semaphore(7, s7).ok());
  REQUIRE(j[1].export_semaphore(3, s3).ok());
  CHECK(j[1].export_semaphore(3, s7).code() == errc::invalid_argument);  // id used
  j.start_all();
  CHECK(j[1].start().code() == errc::failed_precondition);
  j.pump();
  for (std::uint32_t r : {0u, 2u}) {
    const mpi::peer_info p = j[r].peer(1);
    CHECK(p.hello);
    CHECK_FALSE(p.lost);
    CHECK(p.heartbeat_interval_us == 123);
    CHECK(p.frontier_capacity == frontier::capacity);
    CHECK(p.axes == std::vector<frontier_entry>{{a1, 0}, {a2, 40}});
    CHECK(p.exports == std::vector<std::uint64_t>{3, 7});
    CHECK(j[r].stats().protocol_errors == 0);
  }
  CHECK(j[1].peer(0).hello);
  CHECK(j[1].peer(0).axes.empty());
}

TEST_CASE("mpi node: axes announced after HELLO reach every peer ahead of the news that names them",
          "[mpi][node]") {
  job j(3);
  semaphore s;
  REQUIRE(j[0].export_semaphore(1, s).ok());
  j.start_all();
  semaphore* p = j[1].open_proxy(0, 1).value();
  j.pump();
  REQUIRE(j[1].peer(0).axes.empty());

  // Rank 1 checks, while it applies the REACHED, that it already knows the
  // axis the frontier names: AXES went out first on the same pair.
  struct first_check {
    node_t* receiver = nullptr;
    axis expected{};
    int checks = 0;
    bool known_when_reached = false;
    static void on_reached(void* self, const causal::observed_signal<frontier>& ev) noexcept {
      auto& c = *static_cast<first_check*>(self);
      if (ev.replay || ev.external || ev.frontier == nullptr) return;
      ++c.checks;
      const mpi::peer_info owner = c.receiver->peer(0);
      c.known_when_reached = std::find_if(owner.axes.begin(), owner.axes.end(), [&](const frontier_entry& e) {
                               return e.axis == c.expected;
                             }) != owner.axes.end();
    }
  } check;
  causal::semaphore_observer<frontier> observer{&check, nullptr, &first_check::on_reached, nullptr, nullptr};
  REQUIRE(p->set_observer(&observer));

  // Announced and used before rank 0 polls: one poll sends both.
  const axis late = j[0].allocate_axis(causal::domain::queue).value();
  check.receiver = &j[1];
  check.expected = late;
  REQUIRE(s.signal(1, f_of(late, 1), frontier_entry{late, 1}).ok());
  j.pump();
  CHECK(check.checks == 1);
  CHECK(check.known_when_reached);
  CHECK(p->value() == 1);
  for (std::uint32_t r : {1u, 2u}) {
    CHECK(j[r].peer(0).axes == std::vector<frontier_entry>{{late, 0}});
    CHECK(j[r].stats().protocol_errors == 0);
  }

  // allocate() (the collective channel's axis source) announces the same way.
  const axis channel_axis = j[0].allocate(causal::domain::collective).value();
  CHECK(causal::domain_of<layout>(channel_axis) == causal::domain::collective);
  CHECK(late < channel_axis);
  j.pump();
  CHECK(j[1].peer(0).axes == std::vector<frontier_entry>{{late, 0}, {channel_axis, 0}});

  // A higher epoch is announced again; a lower one changes nothing.
  REQUIRE(j[0].announce_axis(late, 9).ok());
  REQUIRE(j[0].announce_axis(late, 3).ok());
  j.pump();
  CHECK(j[2].peer(0).axes == std::vector<frontier_entry>{{late, 9}, {channel_axis, 0}});
  REQUIRE(p->set_observer(nullptr, &observer));
}

TEST_CASE("mpi node: a rank that leaves fails, in the peers' completion trackers, the axes it announced "
          "before and after HELLO",
          "[mpi][node][completion]") {
  job j(2);
  causal::completion_tracker tracker;
  j[1].track_completion(tracker);
  const axis early = j[0].allocate_axis(causal::domain::queue).value();
  j.start_all();
  j.pump();
  const axis late = j[0].allocate_axis(causal::domain::queue).value();
  j.pump();
  REQUIRE(j[1].peer(0).axes == std::vector<frontier_entry>{{early, 0}, {late, 0}});
  REQUIRE(tracker.register_axis(early).ok());
  REQUIRE(tracker.register_axis(late).ok());

  struct outcome {
    int calls = 0;
    causal::status got{};
    static void record(causal::completion_waiter& w, causal::status st) {
      auto& o = *static_cast<outcome*>(w.user_data());
      ++o.calls;
      o.got = st;
    }
  };
  outcome on_early, on_late;
  causal::completion_waiter wait_early(f_of(early, 2), &outcome::record, &on_early);
  causal::completion_waiter wait_late(f_of(late, 5), &outcome::record, &on_late);
  tracker.add_waiter(wait_early);
  tracker.add_waiter(wait_late);
  CHECK(on_early.calls == 0);
  CHECK(on_late.calls == 0);

  j[0].shutdown();
  j.pump();
  CHECK(j[1].peer(0).lost);
  CHECK(on_early.calls == 1);
  CHECK(on_late.calls == 1);
  CHECK(on_early.got.code() == errc::cancelled);
  CHECK(on_late.got.code() == errc::cancelled);
  CHECK(tracker.axis_status(late).code() == errc::cancelled);
}

TEST_CASE("mpi node: a job with more ranks than the layout's machine field is refused at start; the wide "
          "layout takes it",
          "[mpi][node][layout]") {
  constexpr std::uint32_t ranks = 300;  // the default layout names machines 0..255
  mpi::loopback_hub hub(ranks);
  mpi::manual_clock clock;
  mpi::loopback_carrier last(hub, ranks - 1);
  mpi::loopback_carrier first(hub, 0);

  node_t narrow(last, job::quiet_options(), clock);
  const causal::status refused = narrow.start();
  CHECK(refused.code() == errc::out_of_range);
  CHECK(refused.error_value().position() == ranks);
  CHECK_FALSE(narrow.is_started());
  CHECK(narrow.poll() == 0);

  using wide_semaphore = causal::basic_semaphore<causal::basic_frontier<12, mpi::wide_rank_axis_layout>>;
  using wide_node = mpi::basic_node<mpi::loopback_carrier, wide_semaphore, mpi::default_node_traits, mpi::manual_clock>;
  mpi::loopback_carrier last_again(hub, ranks - 1);
  wide_node wide(last_again, job::quiet_options(), clock);
  const axis a = wide.allocate_axis(causal::domain::queue).value();
  CHECK(mpi::wide_rank_axis_layout::machine(a) == ranks - 1);
  REQUIRE(wide.start().ok());

  // Rank 0 with the wide layout hears rank 299's HELLO and its axis.
  wide_node zero(first, job::quiet_options(), clock);
  REQUIRE(zero.start().ok());
  for (int round = 0; round < 8; ++round) {
    (void)wide.poll();
    (void)zero.poll();
  }
  const mpi::peer_info heard = zero.peer(ranks - 1);
  CHECK(heard.hello);
  CHECK(heard.axes == std::vector<frontier_entry>{{a, 0}});
  CHECK(zero.stats().protocol_errors == 0);
}

TEST_CASE("mpi node: a proxy follows the export's values, frontiers and producers", "[mpi][node]") {
  reached_log log;  // outlives the job: installed on one of its proxies
  job j(2);
  semaphore s;
  REQUIRE(j[0].export_semaphore(1, s).ok());
  j.start_all();
  semaphore* p = j[1].open_proxy(0, 1).value();
  CHECK(j[1].open_proxy(0, 1).value() == p);
  CHECK(j[1].open_proxy(1, 1).code() == errc::invalid_argument);
  CHECK(j[1].open_proxy(2, 1).code() == errc::invalid_argument);
  REQUIRE(p->set_observer(&log.observer));
  j.pump();
  CHECK(j[0].subscriber_count(1) == 1);
  const axis a = rank_axis(0, 1);
  for (std::uint64_t v = 1; v <= 5; ++v) {
    REQUIRE(s.signal(v, f_of(a, v), frontier_entry{a, v}).ok());
    j.pump();
    REQUIRE(p->value() == v);
    const auto got = p->frontier_at(v);
    REQUIRE(got);
    CHECK(got->frontier == f_of(a, v));
    CHECK(got->producer == frontier_entry{a, v});
    CHECK(got->exact);
  }
  REQUIRE(s.signal_external(9).ok());
  j.pump();
  CHECK(p->value() == 9);
  CHECK(p->frontier_at(9)->value_tainted);
  CHECK(log.count == 6);  // five witnessed values and the external one
  CHECK(log.increasing_once());
  REQUIRE(p->set_observer(nullptr, &log.observer));
}

TEST_CASE("mpi node: a proxy opened late starts from the current value, frontier and submitted signals",
          "[mpi][node]") {
  job j(2);
  semaphore s;
  REQUIRE(j[0].export_semaphore(4, s).ok());
  j.start_all();
  j.pump();
  const axis a = rank_axis(0, 1);
  for (std::uint64_t v = 1; v <= 200; ++v) {
    REQUIRE(s.signal(v, f_of(a, v), frontier_entry{a, v}).ok());
    if (v % 17 == 0) j.pump();
  }
  REQUIRE(s.submit_signal(201, f_of(a, 201), frontier_entry{a, 201}).ok());
  REQUIRE(s.submit_signal(205, f_of(a, 205), frontier_entry{a, 205}).ok());
  j.pump();
  const auto sent_before = j[0].stats().messages_sent;
  semaphore* p = j[1].open_proxy(0, 4).value();
  j.pump();
  CHECK(p->value() == 200);
  CHECK(p->frontier_at(200)->frontier == f_of(a, 200));
  CHECK(p->pending_count() == 2);
  const auto pending = p->frontier_at(203);
  REQUIRE(pending);
  CHECK_FALSE(pending->reached);
  CHECK(pending->signal_value == 205);
  CHECK(pending->producer == frontier_entry{a, 205});
  // The snapshot is the latest state, not the history: one REACHED and two
  // SUBMITTED.
  CHECK(j[0].stats().messages_sent - sent_before == 3);
  REQUIRE(s.signal(205).ok());
  j.pump();
  CHECK(p->value() == 205);
  CHECK(p->frontier_at(205)->frontier == f_of(a, 205));
  CHECK(p->pending_count() == 0);
}

TEST_CASE("mpi node: a subscription to an id not yet exported waits for the export", "[mpi][node]") {
  job j(2);
  j.start_all();
  semaphore* p = j[1].open_proxy(0, 42).value();
  j.pump();
  CHECK(p->value() == 0);
  CHECK_FALSE(p->failed());
  semaphore s;
  REQUIRE(s.signal(3, f_of(rank_axis(0, 1), 3)).ok());
  REQUIRE(j[0].export_semaphore(42, s).ok());
  j.pump();
  CHECK(p->value() == 3);
  CHECK(j[0].subscriber_count(42) == 1);
}

TEST_CASE("mpi node: many signals between polls coalesce into one REACHED of the last value", "[mpi][node]") {
  job j(3);
  semaphore s;
  REQUIRE(j[0].export_semaphore(1, s).ok());
  j.start_all();
  semaphore* p1 = j[1].open_proxy(0, 1).value();
  semaphore* p2 = j[2].open_proxy(0, 1).value();
  j.pump();
  const auto before = j[0].stats();
  const axis a = rank_axis(0, 3);
  for (std::uint64_t v = 1; v <= 100; ++v) REQUIRE(s.signal(v, f_of(a, v * 2), frontier_entry{a, v * 2}).ok());
  j.pump();
  const auto after = j[0].stats();
  CHECK(after.reached_sent - before.reached_sent == 2);  // one per subscriber
  CHECK(after.reached_coalesced - before.reached_coalesced == 99);
  for (semaphore* p : {p1, p2}) {
    CHECK(p->value() == 100);
    CHECK(p->frontier_at(100)->frontier == f_of(a, 200));
    CHECK(p->frontier_at(100)->producer == frontier_entry{a, 200});
  }
  CHECK(j[1].stats().reached_applied == 1);
}

TEST_CASE("mpi node: submitted signals overflowing the outbox are resent by re-reading the semaphore",
          "[mpi][node]") {
  job j(2);
  semaphore s;
  REQUIRE(j[0].export_semaphore(1, s).ok());
  j.start_all();
  semaphore* p = j[1].open_proxy(0, 1).value();
  j.pump();
  const axis a = rank_axis(0, 1);
  const std::uint64_t n = mpi::default_node_traits::outbox_capacity * 3;
  for (std::uint64_t v = 1; v <= n; ++v) REQUIRE(s.submit_signal(v, f_of(a, v), frontier_entry{a, v}).ok());
  j.pump();
  CHECK(j[0].stats().resyncs >= 1);
  CHECK(p->pending_count() == n);
  for (std::uint64_t v = 1; v <= n; ++v) {
    const auto got = p->frontier_at(v);
    REQUIRE(got);
    CHECK(got->producer == frontier_entry{a, v});
  }
  // Reaching the middle supersedes the records below it at the proxy.
  REQUIRE(s.signal(n / 2).ok());
  j.pump();
  CHECK(p->value() == n / 2);
  CHECK(p->pending_count() == n - n / 2);
  CHECK(p->frontier_at(n / 2)->frontier == f_of(a, n / 2));
}

TEST_CASE("mpi node: SUBMITTED lets a remote queue that knows the producer elide its wait", "[mpi][node][queue]") {
  using queue = causal::recording_queue<true>;
  job j(2);
  const axis qa_axis = j[0].allocate_axis(causal::domain::queue).value();
  const axis qb_axis = j[1].allocate_axis(causal::domain::queue).value();
  const axis qc_axis = j[1].allocate_axis(causal::domain::queue).value();
  queue qa(qa_axis);
  semaphore s;
  REQUIRE(j[0].export_semaphore(1, s).ok());
  j.start_all();
  semaphore* p = j[1].open_proxy(0, 1).value();
  j.pump();

  // Rank 0's queue submits an operation that signals S = 1 (not completed).
  REQUIRE(qa.submit({}, {queue::signal_type{&s, 1}}, 10).ok());
  j.pump();
  REQUIRE(p->pending_count() == 1);
  CHECK(p->frontier_at(1)->producer == frontier_entry{qa_axis, 1});
  CHECK(j[1].stats().submitted_applied == 1);

  // A queue on rank 1 that learnt (qa, 1) elides its wait on the proxy.
  queue qb(qb_axis);
  qb.learn(f_of(qa_axis, 1));
  REQUIRE(qb.submit({queue::wait_type{p, 1}}, {}, 20).ok());
  CHECK(qb.stats().elided_dominated == 1);
  CHECK(qb.stats().device_waits == 0);
  // One that knows nothing issues the wait.
  queue qc(qc_axis);
  REQUIRE(qc.submit({queue::wait_type{p, 1}}, {}, 30).ok());
  CHECK(qc.stats().waits_elided() == 0);
  CHECK(qc.stats().device_waits == 1);

  // The owner completes: the proxy reaches 1 with the submitted frontier,
  // and the waiting queue can complete.
  REQUIRE(qa.backend().complete_next() == 1);
  qa.retire(1);
  REQUIRE(s.value() == 1);
  j.pump();
  CHECK(p->value() == 1);
  CHECK(p->frontier_at(1)->producer == frontier_entry{qa_axis, 1});
  CHECK(qc.backend().complete_next() == 1);
}

TEST_CASE("mpi node: an owner failure fails the proxy with the owner's code, text and position", "[mpi][node]") {
  job j(2);
  semaphore s;
  REQUIRE(j[0].export_semaphore(1, s).ok());
  j.start_all();
  semaphore* p = j[1].open_proxy(0, 1).value();
  j.pump();
  REQUIRE(s.signal(2).ok());
  REQUIRE(s.fail(causal::error{errc::device_lost, "gpu 3 fell off the bus", 77}));
  j.pump();
  CHECK(p->value() == 2);
  REQUIRE(p->failed());
  const causal::error e = *p->failure();
  CHECK(e.code() == errc::device_lost);
  CHECK(e.message() == "gpu 3 fell off the bus");
  CHECK(e.position() == 77);
  CHECK(j[1].stats().proxies_failed == 1);
  // A proxy opened after the failure learns it from the snapshot.
  job k(2);
  semaphore t;
  REQUIRE(t.fail(causal::error{errc::timeout, "late", 1}));
  REQUIRE(k[0].export_semaphore(1, t).ok());
  k.start_all();
  semaphore* q = k[1].open_proxy(0, 1).value();
  k.pump();
  REQUIRE(q->failed());
  CHECK(q->failure()->code() == errc::timeout);
  CHECK(q->failure()->message() == "late");
}

TEST_CASE("mpi node: a coroutine on the executor awaits proxy values and gets the owner's failure",
          "[mpi][node][coroutine]") {
  job j(2);
  semaphore s;
  REQUIRE(j[0].export_semaphore(1, s).ok());
  j.start_all();
  semaphore* p = j[1].open_proxy(0, 1).value();
  j.pump();

  causal::executor ex(causal::executor_options{.worker_count = 1});
  std::atomic<std::uint64_t> resumed_at{0};
  causal::coroutine_process follower = await_each(p, 3, &resumed_at);
  std::atomic<std::uint64_t> never{0};
  causal::coroutine_process stranded = await_each(p, 10, &never);
  REQUIRE(follower);
  REQUIRE(stranded);
  causal::scope sc;
  follower.get().set_scope(sc);
  stranded.get().set_scope(sc);
  ex.submit(follower.get());
  ex.submit(stranded.get());
  for (std::uint64_t v = 1; v <= 3; ++v) {
    REQUIRE(s.signal(v).ok());
    // The node moves the value; the coroutine resumes on the worker.
    REQUIRE(causal::test::eventually([&] {
      j.pump();
      return resumed_at.load(std::memory_order_acquire) == v;
    }));
  }
  REQUIRE(causal::test::eventually([&] { return follower.get().is_complete(); }));
  CHECK(follower.final_status().ok());

  // The other one waits for 10, which never comes: the owner fails.
  CHECK_FALSE(stranded.get().is_complete());
  REQUIRE(s.fail(causal::error{errc::device_lost, "the owner's device fell off the bus", 77}));
  j.pump();
  // The scope's sticky failure is the member's.
  CHECK(sc.wait_idle().code() == errc::device_lost);
  REQUIRE(stranded.get().is_complete());
  CHECK(stranded.final_status().code() == errc::device_lost);
  CHECK(stranded.final_status().error_value().position() == 77);
  CHECK(never.load(std::memory_order_acquire) == 3);
}

TEST_CASE("mpi node: a proxy moves only with its owner: local signals and a queue signalling it are refused",
          "[mpi][node][queue]") {
  job j(2);
  semaphore s;
  REQUIRE(j[0].export_semaphore(1, s).ok());
  j.start_all();
  semaphore* p = j[1].open_proxy(0, 1).value();
  j.pump();
  CHECK(p->writes_reserved());
  CHECK_FALSE(s.writes_reserved());  // the owner's semaphore stays ordinary

  CHECK(p->signal(2).code() == errc::failed_precondition);
  CHECK(p->signal_external(2).code() == errc::failed_precondition);
  CHECK(p->submit_signal(2, frontier{}).code() == errc::failed_precondition);
  causal::recording_queue<> q(rank_axis(1, 1));
  const auto refused = q.submit({}, {{p, 2}}, 1);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error_value().code() == errc::failed_precondition);
  CHECK(q.epoch() == 0);
  CHECK(p->value() == 0);
  CHECK_FALSE(p->failed());

  // The owner's values still arrive, none dropped as stale.
  REQUIRE(s.signal(1).ok());
  REQUIRE(s.signal(2).ok());
  j.pump();
  CHECK(p->value() == 2);
  CHECK(j[1].stats().updates_ignored == 0);
}

TEST_CASE("mpi node: withdraw and destroying the exported semaphore cancel the proxies", "[mpi][node]") {
  job j(2);
  semaphore s1;
  auto s2 = std::make_unique<semaphore>();
  REQUIRE(j[0].export_semaphore(1, s1).ok());
  REQUIRE(j[0].export_semaphore(2, *s2).ok());
  j.start_all();
  semaphore* p1 = j[1].open_proxy(0, 1).value();
  semaphore* p2 = j[1].open_proxy(0, 2).value();
  j.pump();
  REQUIRE(j[0].withdraw(1).ok());
  REQUIRE(s1.signal(5).ok());             // no longer observed
  j.pump();
  REQUIRE(p1->failed());
  CHECK(p1->failure()->code() == errc::cancelled);
  CHECK(p1->value() == 0);
  s2.reset();
  j.pump();
  REQUIRE(p2->failed());
  CHECK(p2->failure()->code() == errc::cancelled);
  CHECK(j[0].subscriber_count(2) == 0);
  CHECK(j[0].withdraw(99).code() == errc::invalid_argument);
  CHECK(j[0].withdraw(1).code() == errc::invalid_argument);  // already withdrawn
  CHECK(j[0].withdraw(2).code() == errc::invalid_argument);  // its semaphore is gone
}

TEST_CASE("mpi node: close_proxy unsubscribes and cancels the proxy", "[mpi][node]") {
  job j(2);
  semaphore s;
  REQUIRE(j[0].export_semaphore(1, s).ok());
  j.start_all();
  semaphore* p = j[1].open_proxy(0, 1).value();
  j.pump();
  REQUIRE(j[0].subscriber_count(1) == 1);
  REQUIRE(j[1].close_proxy(0, 1).ok());
  CHECK(j[1].close_proxy(0, 2).code() == errc::invalid_argument);
  j.pump();
  CHECK(j[0].subscriber_count(1) == 0);
  REQUIRE(p->failed());
  CHECK(p->failure()->code() == errc::cancelled);
  const auto sent = j[0].stats().reached_sent;
  REQUIRE(s.signal(1).ok());
  j.pump();
  CHECK(j[0].stats().reached_sent == sent);
}

TEST_CASE("mpi node: BYE fails the leaving rank's proxies with cancelled and releases host waiters",
          "[mpi][node]") {
  job j(3);
  semaphore s;
  REQUIRE(j[0].export_semaphore(1, s).ok());
  j.start_all();
  semaphore* p = j[1].open_proxy(0, 1).value();
  semaphore* other = j[1].open_proxy(2, 1).value();
  semaphore* mine = j[0].open_proxy(1, 5).value();
  j.pump();
  std::atomic<int> waited{-1};
  std::thread waiter([&] { waited.store(static_cast<int>(p->wait(10).code()), std::memory_order_release); });
  REQUIRE(causal::test::eventually([&] { return p->parked_waiters() == 1; }));
  j[0].shutdown();
  CHECK(j[0].is_shut_down());
  // This node's own proxies fail at once.
  REQUIRE(mine->failed());
  CHECK(mine->failure()->code() == errc::cancelled);
  j.pump();
  waiter.join();
  CHECK(waited.load(std::memory_order_acquire) == static_cast<int>(errc::cancelled));
  REQUIRE(p->failed());
  CHECK(p->failure()->code() == errc::cancelled);
  CHECK(p->failure()->position() == 0);
  CHECK_FALSE(other->failed());
  CHECK(j[1].peer(0).lost);
  CHECK(j[1].peer(0).lost_error.code() == errc::cancelled);
  CHECK(j[0].open_proxy(1, 6).code() == errc::failed_precondition);
  semaphore late;
  CHECK(j[0].export_semaphore(9, late).code() == errc::failed_precondition);
  CHECK(j[0].poll() == 0);
}

TEST_CASE("mpi node: a rank that shuts down before its first poll still says HELLO and BYE", "[mpi][node]") {
  job j(2);
  j.start_all();
  semaphore* p = j[1].open_proxy(0, 1).value();
  j[1].poll();
  j[0].shutdown();  // never polled
  j.pump();
  CHECK(j[1].stats().protocol_errors == 0);
  CHECK(j[1].peer(0).hello);
  CHECK(j[1].peer(0).lost);
  REQUIRE(p->failed());
  CHECK(p->failure()->code() == errc::cancelled);
  // A node never started sends nothing.
  job k(2);
  REQUIRE(k[1].start().ok());
  k[0].shutdown();
  k.pump();
  CHECK(k.hub.sent() == 1);  // rank 1's HELLO only
  CHECK_FALSE(k[1].peer(0).hello);
}

TEST_CASE("mpi node: a silent rank times out with errc::timeout naming it; live ranks heartbeat", "[mpi][node]") {
  mpi::node_options o;
  o.heartbeat_interval = 100ms;
  o.heartbeat_timeout = 1s;
  job j(3, o);
  semaphore s2;
  REQUIRE(j[2].export_semaphore(1, s2).ok());
  std::atomic<int> lost_rank{-1};
  j[0].set_peer_lost_handler(
      [](void* ctx, std::uint32_t r, const causal::error&) noexcept {
        static_cast<std::atomic<int>*>(ctx)->store(static_cast<int>(r));
      },
      &lost_rank);
  j.start_all();
  semaphore* p = j[0].open_proxy(2, 1).value();
  j.pump();
  // Three seconds in 50 ms steps, everyone polling: heartbeats keep all alive.
  for (int step = 0; step < 60; ++step) {
    j.clock.advance(50ms);
    j.pump();
  }
  CHECK(j[0].stats().peers_lost == 0);
  CHECK(j[0].stats().heartbeats_sent > 0);
  CHECK_FALSE(p->failed());
  // Rank 2 goes silent (its connection stays up).
  j.hub.silence(2);
  for (int step = 0; step < 30 && !p->failed(); ++step) {
    j.clock.advance(50ms);
    j.pump();
  }
  REQUIRE(p->failed());
  CHECK(p->failure()->code() == errc::timeout);
  CHECK(p->failure()->position() == 2);
  CHECK(j[0].peer(2).lost);
  CHECK_FALSE(j[0].peer(1).lost);
  CHECK(lost_rank.load() == 2);
}

TEST_CASE("mpi node: a dropped rank fails its proxies with the carrier's error", "[mpi][node]") {
  job j(2);
  semaphore s;
  REQUIRE(j[0].export_semaphore(1, s).ok());
  j.start_all();
  semaphore* p = j[1].open_proxy(0, 1).value();
  j.pump();
  j.hub.drop(0, causal::error{errc::device_lost, "rank 0 crashed", 0});
  // Peers are checked on the clock (with no heartbeats, every tick).
  j.clock.advance(1ms);
  j.pump();
  REQUIRE(p->failed());
  CHECK(p->failure()->code() == errc::device_lost);
  CHECK(p->failure()->message() == "rank 0 crashed");
  CHECK(j[1].peer(0).lost);
}

TEST_CASE("mpi node: damaged bytes are counted, never fatal, and a damaged REACHED fails its proxy",
          "[mpi][node][malformed]") {
  job j(2);
  semaphore s;
  REQUIRE(j[0].export_semaphore(1, s).ok());
  REQUIRE(j[0].export_semaphore(2, s).code() == errc::invalid_argument);  // already observed
  semaphore s3;
  REQUIRE(j[0].export_semaphore(3, s3).ok());
  j.start_all();
  semaphore* p = j[1].open_proxy(0, 1).value();
  semaphore* p3 = j[1].open_proxy(0, 3).value();
  j.pump();
  const std::array<std::byte, 5> garbage{std::byte{1}, std::byte{0x42}, std::byte{0}, std::byte{7}, std::byte{9}};
  j.hub.inject(0, 1, garbage);
  j.hub.inject(0, 1, std::span<const std::byte>());
  j.pump();
  CHECK(j[1].stats().malformed == 2);
  REQUIRE(j[1].stats().last_error.has_value());
  CHECK(j[1].stats().last_error->code() == errc::malformed);
  CHECK(j[1].stats().last_error_rank == 0);
  CHECK_FALSE(p->failed());
  // The next message from 0 to 1 (a REACHED of export 1): its last byte, a
  // frontier epoch, gets its continuation bit.
  std::array<std::byte, 64> reached{};
  const std::size_t reached_size =
      mpi::encode_reached(reached, 1, 1, f_of(rank_axis(0, 1), 1), frontier_entry{}).value();
  j.hub.corrupt_next(0, 1, reached_size - 1, std::byte{0x80});
  REQUIRE(s.signal(1, f_of(rank_axis(0, 1), 1)).ok());
  j.pump();
  CHECK(j[1].stats().malformed == 3);
  REQUIRE(p->failed());
  CHECK(p->value() == 0);
  // Export 3's stream is intact.
  REQUIRE(s3.signal(4).ok());
  j.pump();
  CHECK(p3->value() == 4);
  CHECK_FALSE(p3->failed());
}

TEST_CASE("mpi node: a message before the sender's HELLO is a protocol error", "[mpi][node][malformed]") {
  job j(2);
  REQUIRE(j[1].start().ok());
  j[1].poll();
  std::array<std::byte, 8> buf{};
  const auto n = mpi::encode_heartbeat(buf).value();
  j.hub.inject(0, 1, std::span<const std::byte>(buf.data(), n));
  j[1].poll();
  const auto st = j[1].stats();
  CHECK(st.protocol_errors == 1);
  REQUIRE(st.last_error.has_value());
  CHECK(st.last_error->code() == errc::failed_precondition);
  CHECK(st.last_error_rank == 0);
  // A HELLO from another job (wrong session) is refused and loses the rank.
  mpi::hello_fields h;
  h.rank = 0;
  h.size = 2;
  h.session = 5;
  h.layout = mpi::hello_fields::layout_of<layout>();
  std::array<std::byte, 128> hb{};
  const auto hn = mpi::encode_hello(hb, h, {}, {}).value();
  j.hub.inject(0, 1, std::span<const std::byte>(hb.data(), hn));
  j[1].poll();
  CHECK(j[1].stats().protocol_errors == 2);
  CHECK(j[1].peer(0).lost);
  CHECK(j[1].peer(0).lost_error.code() == errc::invalid_argument);
}

TEST_CASE("mpi node: a steady exchange polls without allocating", "[mpi][node][alloc]") {
  job j(2);
  semaphore s;
  REQUIRE(j[0].export_semaphore(1, s).ok());
  j.start_all();
  semaphore* p = j[1].open_proxy(0, 1).value();
  j.pump();
  const axis a = rank_axis(0, 1);
  std::uint64_t v = 0;
  auto round = [&] {
    ++v;
    (void)s.submit_signal(v + 1, f_of(a, v + 1), frontier_entry{a, v + 1});
    (void)s.signal(v, f_of(a, v), frontier_entry{a, v});
    for (int k = 0; k < 4; ++k) {
      j[0].poll();
      j[1].poll();
    }
  };
  for (int warm = 0; warm < 64; ++warm) round();
  causal::test::allocation_guard guard;
  for (int k = 0; k < 256; ++k) round();
  const auto allocations = guard.allocations();
  CHECK(allocations == 0);
  CHECK(p->value() == v);
  CHECK(p->pending_count() == 1);
}
