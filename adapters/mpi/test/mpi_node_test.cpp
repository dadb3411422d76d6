// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// mpi_node_test: causal::mpi::basic_node over the in-process loopback
// carrier -- HELLO, exports and proxies, late joiners, coalescing, the
// owner's order across exports (an operation's signals reach a peer's
// proxies in the order the owner reached them: between two polls, past a
// full batch, and around a new subscriber's snapshot), causal delivery
// across owners (a third rank's news that claim an owner's operation wait
// for that owner's proxies: node.hpp, "Causal delivery"; a slow link is a
// delaying_carrier), remote wait elision, failure (values reached before it stay reached, also for a
// proxy opened late), withdrawal, BYE, heartbeat loss, dropped ranks,
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
#include "child_process.hpp"
#include "counting_new.hpp"
#include "eventually.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
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

/// A job of `n` ranks on loopback endpoints of type `Carrier` (one hub),
/// sharing one manual clock.
template <class Carrier>
struct basic_job {
  using node_type = mpi::basic_node<Carrier, semaphore, mpi::default_node_traits, mpi::manual_clock>;

  explicit basic_job(std::uint32_t n, mpi::node_options options = quiet_options()) : hub(n) {
    for (std::uint32_t r = 0; r < n; ++r) {
      carriers.push_back(std::make_unique<Carrier>(hub, r));
      nodes.push_back(std::make_unique<node_type>(*carriers.back(), options, clock));
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

  node_type& operator[](std::size_t r) { return *nodes[r]; }

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
  std::vector<std::unique_ptr<Carrier>> carriers;
  std::vector<std::unique_ptr<node_type>> nodes;
};

using job = basic_job<mpi::loopback_carrier>;

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

/// What operation (a, e) knew before it ran: (a, e - 1). A queue's signals
/// but the last carry it (queue.hpp, "Signals of one operation").
frontier before_of(axis a, std::uint64_t e) { return e > 1 ? f_of(a, e - 1) : frontier{}; }

/// Watches the proxies of one owner's exports on one rank, each of which
/// every operation of axis `a` signals to its epoch. Each time a watched
/// proxy reaches a witnessed value whose frontier holds (a, k) -- "operations
/// 1..k completed, every signal of them reached" -- checks that no other
/// watched proxy is below k while holding a submitted record whose producer
/// (a, e <= k) a consumer that learnt (a, k) would elide its wait on. A
/// proxy with no such record cannot be elided on, so it may lag (a proxy
/// whose snapshot is still on its way). The hook reads the other proxies
/// only (its own proxy's lock is held) and counts.
struct claim_watch {
  struct watched {
    claim_watch* watch = nullptr;
    semaphore* proxy = nullptr;
    causal::semaphore_observer<frontier> observer{};
  };

  static void on_reached(void* context, const causal::observed_signal<frontier>& ev) noexcept {
    const watched& me = *static_cast<const watched*>(context);
    claim_watch& w = *me.watch;
    if (ev.external || ev.replay || ev.frontier == nullptr) return;
    const std::uint64_t k = ev.frontier->epoch_of(w.a);
    ++w.checked;
    for (std::size_t i = 0; i < w.count; ++i) {
      semaphore& other = *w.proxies[i].proxy;
      if (&other == me.proxy) continue;
      const std::uint64_t at = other.value();
      if (at >= k) continue;
      const auto next = other.frontier_at(at + 1);
      if (next && !next->reached && next->producer.axis == w.a && next->producer.epoch != 0 &&
          next->producer.epoch <= k) {
        ++w.broken;
      }
    }
  }
  void watch(axis on, std::initializer_list<semaphore*> ps) {
    a = on;
    REQUIRE(ps.size() <= proxies.size());
    for (semaphore* q : ps) {
      watched& x = proxies[count++];
      x.watch = this;
      x.proxy = q;
      x.observer = causal::semaphore_observer<frontier>{&x, nullptr, &on_reached, nullptr, nullptr};
      REQUIRE(q->set_observer(&x.observer));
    }
  }
  void unwatch() {
    for (std::size_t i = 0; i < count; ++i) REQUIRE(proxies[i].proxy->set_observer(nullptr, &proxies[i].observer));
    count = 0;
  }

  axis a{};
  std::array<watched, 4> proxies{};
  std::size_t count = 0;
  int checked = 0;
  int broken = 0;
};

/// A loopback endpoint that runs `on_poll` once, at the start of the next
/// poll: a stand-in for a thread that signals while the node is between
/// sending its news and answering the messages that poll delivers.
struct poll_hooked_carrier : mpi::loopback_carrier {
  using mpi::loopback_carrier::loopback_carrier;
  std::size_t poll(mpi::message_handler on_message, void* context) noexcept {
    if (on_poll) {
      const std::function<void()> run = std::move(on_poll);
      on_poll = nullptr;
      run();
    }
    return mpi::loopback_carrier::poll(on_message, context);
  }
  std::function<void()> on_poll;
};

/// A loopback endpoint whose messages to one peer wait on the way until
/// the test releases them (in order): a slow link, so that another rank's
/// news overtake this rank's at that peer.
struct delaying_carrier : mpi::loopback_carrier {
  using mpi::loopback_carrier::loopback_carrier;
  causal::status send(std::uint32_t peer, std::span<const std::byte> bytes) noexcept {
    if (delayed_peer && *delayed_peer == peer) {
      delayed.emplace_back(bytes.begin(), bytes.end());  // the test's own allocation
      return {};
    }
    return mpi::loopback_carrier::send(peer, bytes);
  }
  /// Delays everything sent to `peer` from now on.
  void delay(std::uint32_t peer) { delayed_peer = peer; }
  /// Sends the first `n` delayed messages (all by default) in their order;
  /// with none left, later sends go straight through.
  void release(std::size_t n = ~std::size_t{0}) {
    const std::uint32_t peer = *delayed_peer;
    for (; n != 0 && !delayed.empty(); --n) {
      REQUIRE(mpi::loopback_carrier::send(peer, delayed.front()).ok());
      delayed.pop_front();
    }
    if (delayed.empty()) delayed_peer.reset();
  }
  std::optional<std::uint32_t> delayed_peer;
  std::deque<std::vector<std::byte>> delayed;
};

/// Installed on proxy `watched`: counts the values it reaches while proxy
/// `before` (of another owner) is still below `need` -- a value applied
/// ahead of what its frontier claims.
struct reached_before {
  static void on_reached(void* self, const causal::observed_signal<frontier>& ev) noexcept {
    auto& w = *static_cast<reached_before*>(self);
    if (ev.replay) return;
    ++w.reached;
    if (w.before->value() < w.need && !w.before->failed()) ++w.early;
  }
  reached_before(semaphore* watched_proxy, semaphore* before_proxy, std::uint64_t value)
      : watched(watched_proxy), before(before_proxy), need(value) {
    REQUIRE(watched->set_observer(&observer));
  }
  ~reached_before() { (void)watched->set_observer(nullptr, &observer); }
  reached_before(const reached_before&) = delete;
  reached_before& operator=(const reached_before&) = delete;

  semaphore* watched;
  semaphore* before;
  std::uint64_t need;
  int reached = 0;
  int early = 0;
  causal::semaphore_observer<frontier> observer{this, nullptr, &on_reached, nullptr, nullptr};
};

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

TEST_CASE("mpi node: a peer's proxies reach an operation's signals in the order the owner reached them, "
          "never coalescing one export's values across another's",
          "[mpi][node][order]") {
  // docs/queues.md, "Signals of one operation": an operation signals T,
  // then S; only S carries the operation's own entry. A rank that learnt
  // (a, e) from S's proxy elides its waits on T's proxy, so that proxy must
  // be at e by then -- across exports, and also when the owner reached
  // them all between two polls.
  claim_watch watch;  // outlives the job: installed on its proxies
  job j(2);
  semaphore t, s;
  REQUIRE(j[0].export_semaphore(1, t).ok());
  REQUIRE(j[0].export_semaphore(2, s).ok());
  j.start_all();
  semaphore* pt = j[1].open_proxy(0, 1).value();
  semaphore* ps = j[1].open_proxy(0, 2).value();
  j.pump();
  const axis a = rank_axis(0, 1);
  // Operations 1..3 of `a`, submitted first (as a queue does), so the
  // proxies hold records a consumer could elide on; then all reached
  // between two polls of the owner.
  for (std::uint64_t e = 1; e <= 3; ++e) {
    REQUIRE(t.submit_signal(e, before_of(a, e), frontier_entry{a, e}).ok());
    REQUIRE(s.submit_signal(e, f_of(a, e), frontier_entry{a, e}).ok());
  }
  j.pump();
  REQUIRE(pt->pending_count() == 3);
  REQUIRE(ps->pending_count() == 3);
  watch.watch(a, {pt, ps});
  for (std::uint64_t e = 1; e <= 3; ++e) {
    REQUIRE(t.signal(e).ok());
    REQUIRE(s.signal(e).ok());
  }
  j.pump();
  CHECK(pt->value() == 3);
  CHECK(ps->value() == 3);
  // Each value arrived on its own (T1 S1 T2 S2 T3 S3: no run to coalesce),
  // and none claimed a signal its peer proxy had not reached.
  CHECK(watch.checked == 6);
  CHECK(watch.broken == 0);
  CHECK(pt->frontier_at(3)->frontier == before_of(a, 3));
  CHECK(ps->frontier_at(3)->frontier == f_of(a, 3));
  // An uninterrupted run on one export still coalesces.
  const auto before = j[0].stats();
  for (std::uint64_t v = 4; v <= 9; ++v) REQUIRE(s.signal(v, f_of(a, 3), frontier_entry{}).ok());
  j.pump();
  CHECK(j[0].stats().reached_sent - before.reached_sent == 1);
  CHECK(j[0].stats().reached_coalesced - before.reached_coalesced == 5);
  CHECK(ps->value() == 9);
  CHECK(watch.broken == 0);
  watch.unwatch();
}

TEST_CASE("mpi node: more ordered news than a batch holds keep their order; the excess goes without frontiers "
          "but the latest",
          "[mpi][node][order]") {
  // node.hpp, "Order": a full batch takes no more entries until the next
  // poll. A later value is sent right after its export's last entry as an
  // external value (early, claiming nothing), except the latest of all,
  // which goes last with its frontier.
  claim_watch watch;
  job j(2);
  semaphore t, s;
  REQUIRE(j[0].export_semaphore(1, t).ok());
  REQUIRE(j[0].export_semaphore(2, s).ok());
  j.start_all();
  semaphore* pt = j[1].open_proxy(0, 1).value();
  semaphore* ps = j[1].open_proxy(0, 2).value();
  j.pump();
  const axis a = rank_axis(0, 1);
  // Twice what a batch holds: operations 1..n each signal T, then S.
  const std::uint64_t n = mpi::default_node_traits::news_capacity;
  for (std::uint64_t e = 1; e <= n; ++e) {
    REQUIRE(t.submit_signal(e, before_of(a, e), frontier_entry{a, e}).ok());
    REQUIRE(s.submit_signal(e, f_of(a, e), frontier_entry{a, e}).ok());
  }
  j.pump();
  REQUIRE(pt->pending_count() == n);
  REQUIRE(ps->pending_count() == n);
  watch.watch(a, {pt, ps});
  for (std::uint64_t e = 1; e <= n; ++e) {
    REQUIRE(t.signal(e).ok());
    REQUIRE(s.signal(e).ok());
  }
  j.pump();
  CHECK(pt->value() == n);
  CHECK(ps->value() == n);
  CHECK(watch.broken == 0);
  // T's last value came without its frontier; S's, the latest, with it.
  CHECK(j[0].stats().reached_without_frontier == 1);
  CHECK(pt->is_tainted(n));
  CHECK_FALSE(ps->is_tainted(n));
  CHECK(ps->frontier_at(n)->frontier == f_of(a, n));
  CHECK(ps->frontier_at(n)->producer == frontier_entry{a, n});
  // The next operation's values carry their frontiers again: T heals.
  REQUIRE(t.signal(n + 1, before_of(a, n + 1), frontier_entry{a, n + 1}).ok());
  REQUIRE(s.signal(n + 1, f_of(a, n + 1), frontier_entry{a, n + 1}).ok());
  j.pump();
  CHECK_FALSE(pt->is_tainted(n + 1));
  CHECK(pt->frontier_at(n + 1)->frontier == before_of(a, n + 1));
  CHECK(watch.broken == 0);
  watch.unwatch();
}

TEST_CASE("mpi node: a proxy opened late starts from a state no older than the news sent before it",
          "[mpi][node][order]") {
  // The snapshot a new subscriber gets (the export's latest value) must
  // not overtake news of other exports the owner reached before that
  // value: here S = 2, then T = 2 carrying (a, 2), both reached while the
  // owner's node polls for the SUBSCRIBE. The proxy of S, subscribed long
  // before, holds S = 2 submitted: had T's proxy reached 2 first, a
  // consumer would learn (a, 2) there and elide its wait on S.
  using hooked_node = mpi::basic_node<poll_hooked_carrier, semaphore, mpi::default_node_traits, mpi::manual_clock>;
  claim_watch watch;
  mpi::loopback_hub hub(2);
  mpi::manual_clock clock;
  poll_hooked_carrier c0(hub, 0);
  poll_hooked_carrier c1(hub, 1);
  hooked_node n0(c0, job::quiet_options(), clock);
  hooked_node n1(c1, job::quiet_options(), clock);
  auto pump = [&] {
    for (int round = 0; round < 64; ++round) {
      if (n0.poll() + n1.poll() == 0) return;
    }
    FAIL("the job never went quiet");
  };
  semaphore t, s;
  REQUIRE(n0.export_semaphore(1, t).ok());
  REQUIRE(n0.export_semaphore(2, s).ok());
  REQUIRE(n0.start().ok());
  REQUIRE(n1.start().ok());
  semaphore* ps = n1.open_proxy(0, 2).value();
  pump();
  const axis a = rank_axis(0, 1);
  // Operation 1 signals S, then T (its last); operation 2 likewise, only
  // submitted for now.
  REQUIRE(s.signal(1, before_of(a, 1), frontier_entry{a, 1}).ok());
  REQUIRE(t.signal(1, f_of(a, 1), frontier_entry{a, 1}).ok());
  REQUIRE(s.submit_signal(2, before_of(a, 2), frontier_entry{a, 2}).ok());
  REQUIRE(t.submit_signal(2, f_of(a, 2), frontier_entry{a, 2}).ok());
  pump();
  REQUIRE(ps->value() == 1);
  REQUIRE(ps->pending_count() == 1);
  semaphore* pt = n1.open_proxy(0, 1).value();
  watch.watch(a, {pt, ps});
  REQUIRE(n1.poll() != 0);  // sends the SUBSCRIBE
  // Operation 2 completes while rank 0 polls, after it sent its news and
  // before it answers the SUBSCRIBE that poll delivers.
  c0.on_poll = [&] {
    CHECK(s.signal(2).ok());  // from inside poll(): no REQUIRE (it would throw)
    CHECK(t.signal(2).ok());
  };
  REQUIRE(n0.poll() != 0);
  CHECK_FALSE(c0.on_poll);  // it ran
  pump();
  CHECK(pt->value() == 2);
  CHECK(ps->value() == 2);
  CHECK(pt->frontier_at(2)->frontier == f_of(a, 2));
  CHECK(watch.checked >= 2);
  CHECK(watch.broken == 0);
  watch.unwatch();
}

/// The three-rank shape of the causal-delivery tests below: rank A (0)
/// exports T (id 1) and S (id 2), rank C (2) exports U (id 3); B (1) has
/// proxies of T and U, C one of S; one recording queue per rank. Members
/// in declaration order: the semaphores go before the queues and the job.
struct three_rank_shape {
  using queue = causal::recording_queue<true>;
  basic_job<delaying_carrier> j{3};
  queue qa{j[0].allocate_axis(causal::domain::queue).value()};
  queue qb{j[1].allocate_axis(causal::domain::queue).value()};
  queue qc{j[2].allocate_axis(causal::domain::queue).value()};
  semaphore t, s, u;
  semaphore* pt = nullptr;
  semaphore* pu = nullptr;
  semaphore* ps = nullptr;

  three_rank_shape() {
    REQUIRE(j[0].export_semaphore(1, t).ok());
    REQUIRE(j[0].export_semaphore(2, s).ok());
    REQUIRE(j[2].export_semaphore(3, u).ok());
    j.start_all();
    pt = j[1].open_proxy(0, 1).value();
    pu = j[1].open_proxy(2, 3).value();
    ps = j[2].open_proxy(0, 2).value();
    j.pump();
  }
};

TEST_CASE("mpi node: a third rank's news that claim an owner's operation complete apply only once the owner's "
          "proxies reached what they claim",
          "[mpi][node][order][queue]") {
  // Rank A's operation signals T, then S; only S carries (qa, 1) (docs/
  // queues.md, "Signals of one operation"). Rank C's queue waits on its
  // proxy of S, then signals U, whose frontier so carries (qa, 1). Rank B
  // has proxies of T (from A) and U (from C); its queue waits on U, then on
  // T -- elided as dominated, which is sound only if T's proxy has reached
  // 1 by the time that operation runs. A's news to B are slow: C's
  // REACHED(U) arrives at B first.
  three_rank_shape shape;
  auto& [j, qa, qb, qc, t, s, u, pt, pu, ps] = shape;
  reached_before order(pu, pt, 1);

  REQUIRE(qa.submit({}, {{&t, 1}, {&s, 1}}, 10).ok());
  j.pump();
  REQUIRE(pt->pending_count() == 1);
  REQUIRE(ps->pending_count() == 1);
  REQUIRE(qc.submit({{ps, 1}}, {{&u, 1}}, 20).ok());
  j.pump();
  REQUIRE(pu->pending_count() == 1);
  REQUIRE(qb.submit({{pu, 1}}, {}, 30).ok());
  REQUIRE(qb.submit({{pt, 1}}, {}, 31).ok());
  CHECK(qb.stats().device_waits == 1);
  CHECK(qb.stats().elided_dominated == 1);

  // A completes; its news to B wait on the way. C hears S = 1, completes,
  // and its REACHED(U = 1) -- carrying (qa, 1) -- reaches B first.
  j.carriers[0]->delay(1);
  REQUIRE(qa.backend().complete_next() == 1);
  j.pump();
  REQUIRE(ps->value() == 1);
  REQUIRE(qc.backend().complete_next() == 1);
  j.pump();
  CHECK(pt->value() == 0);
  CHECK(pu->value() == 0);  // held: its frontier claims T = 1, not here yet
  CHECK(j[1].stats().reached_held == 1);
  // Whatever B's queue can run now runs with T's proxy at 1.
  int ran = 0;
  for (std::uint64_t e = qb.backend().complete_next(); e != 0; e = qb.backend().complete_next()) {
    ++ran;
    CHECK(pt->value() >= 1);
  }

  j.carriers[0]->release();
  j.pump();
  CHECK(pt->value() == 1);
  CHECK(pu->value() == 1);
  CHECK(pu->frontier_at(1)->frontier.epoch_of(qa.axis()) == 1);
  CHECK(order.reached == 1);
  CHECK(order.early == 0);
  for (std::uint64_t e = qb.backend().complete_next(); e != 0; e = qb.backend().complete_next()) {
    ++ran;
    CHECK(pt->value() >= 1);
  }
  CHECK(ran == 2);
}

TEST_CASE("mpi node: a submitted signal whose producer another owner's news already claimed complete is not "
          "announced on the proxy",
          "[mpi][node][order][queue]") {
  // The shape above, with all of A's news to B slow: B applies C's U = 1
  // (claiming (qa, 1)) before it has heard of T's submitted signal, and
  // its queue learns (qa, 1) from U. Then T's SUBMITTED arrives, ahead of
  // T's REACHED: announced on the proxy, it would let that queue elide its
  // wait on T as dominated while T's proxy is still at 0.
  three_rank_shape shape;
  auto& [j, qa, qb, qc, t, s, u, pt, pu, ps] = shape;

  j.carriers[0]->delay(1);
  REQUIRE(qa.submit({}, {{&t, 1}, {&s, 1}}, 10).ok());
  j.pump();  // SUBMITTED(T = 1) waits on the way to B
  REQUIRE(qc.submit({{ps, 1}}, {{&u, 1}}, 20).ok());
  REQUIRE(qa.backend().complete_next() == 1);
  j.pump();  // REACHED(T = 1) waits too
  REQUIRE(qc.backend().complete_next() == 1);
  j.pump();
  REQUIRE(pu->value() == 1);  // nothing B knows of is claimed: applied at once
  CHECK(pt->pending_count() == 0);
  REQUIRE(qb.submit({{pu, 1}}, {}, 30).ok());  // reached: imports (qa, 1)
  CHECK(qb.stats().elided_reached == 1);
  REQUIRE(qb.knowledge().epoch_of(qa.axis()) == 1);

  j.carriers[0]->release(1);  // only T's SUBMITTED
  j.pump();
  CHECK(pt->value() == 0);
  CHECK(pt->pending_count() == 0);
  CHECK(j[1].stats().submitted_covered == 1);
  REQUIRE(qb.submit({{pt, 1}}, {}, 31).ok());
  CHECK(qb.stats().elided_dominated == 0);
  int ran = 0;
  for (std::uint64_t e = qb.backend().complete_next(); e != 0; e = qb.backend().complete_next()) {
    ++ran;
    if (e == 2) CHECK(pt->value() >= 1);
  }

  j.carriers[0]->release();
  j.pump();
  CHECK(pt->value() == 1);
  for (std::uint64_t e = qb.backend().complete_next(); e != 0; e = qb.backend().complete_next()) {
    ++ran;
    if (e == 2) CHECK(pt->value() >= 1);
  }
  CHECK(ran == 2);
}

TEST_CASE("mpi node: a value that passes submitted signals of its proxy waits for what their frontiers claim",
          "[mpi][node][order]") {
  // A queue on B that issued a device wait on U = 1 (submitted, not
  // reached) imported that signal's frontier, which claims (a, 1) complete.
  // Rank 2 reaches U = 1, then U = 2 -- from an operation that knew less
  // -- between two polls: one REACHED(U = 2) whose own frontier claims
  // nothing of rank 0. It must still wait for T = 1, as U = 1 would have:
  // the queue's operation runs once U's proxy passes 1.
  const axis a = rank_axis(0, 1);
  const axis c = rank_axis(2, 1);
  frontier claim = f_of(c, 1);
  claim.insert_or_raise(a, 1);
  basic_job<delaying_carrier> j(3);
  semaphore t, u;
  REQUIRE(j[0].export_semaphore(1, t).ok());
  REQUIRE(j[2].export_semaphore(3, u).ok());
  j.start_all();
  semaphore* pt = j[1].open_proxy(0, 1).value();
  semaphore* pu = j[1].open_proxy(2, 3).value();
  j.pump();
  reached_before order(pu, pt, 1);
  REQUIRE(t.submit_signal(1, frontier{}, frontier_entry{a, 1}).ok());
  REQUIRE(u.submit_signal(1, claim, frontier_entry{c, 1}).ok());
  REQUIRE(u.submit_signal(2, f_of(c, 2), frontier_entry{c, 2}).ok());
  j.pump();
  REQUIRE(pt->pending_count() == 1);
  REQUIRE(pu->pending_count() == 2);

  j.carriers[0]->delay(1);
  REQUIRE(t.signal(1).ok());
  REQUIRE(u.signal(1).ok());
  REQUIRE(u.signal(2).ok());
  j.pump();
  CHECK(j[2].stats().reached_coalesced == 1);
  CHECK(pu->value() == 0);
  CHECK(j[1].stats().reached_held == 1);
  j.carriers[0]->release();
  j.pump();
  CHECK(pt->value() == 1);
  CHECK(pu->value() == 2);
  CHECK(order.reached == 1);
  CHECK(order.early == 0);
}

TEST_CASE("mpi node: news held behind another owner's signal are released when that proxy reaches it, fails, "
          "is closed or its owner leaves or vanishes",
          "[mpi][node][order]") {
  // Rank 0 owns T (operation (a, 1) submitted T = 1); rank 2 signals U = 1
  // claiming (a, 1) complete, and V; rank 1 has proxies of all three. C's
  // news to B wait behind U until T's proxy reaches 1 or can never.
  const axis a = rank_axis(0, 1);
  const axis c = rank_axis(2, 1);
  frontier claim = f_of(c, 1);
  claim.insert_or_raise(a, 1);
  enum class release_by { reaching, failing, closing, leaving, vanishing, shutting_down };
  const release_by how = GENERATE(release_by::reaching, release_by::failing, release_by::closing,
                                  release_by::leaving, release_by::vanishing, release_by::shutting_down);
  CAPTURE(static_cast<int>(how));
  basic_job<delaying_carrier> j(3);
  semaphore t, u, v;
  REQUIRE(j[0].export_semaphore(1, t).ok());
  REQUIRE(j[2].export_semaphore(3, u).ok());
  REQUIRE(j[2].export_semaphore(4, v).ok());
  j.start_all();
  semaphore* pt = j[1].open_proxy(0, 1).value();
  semaphore* pu = j[1].open_proxy(2, 3).value();
  semaphore* pv = j[1].open_proxy(2, 4).value();
  j.pump();
  REQUIRE(t.submit_signal(1, frontier{}, frontier_entry{a, 1}).ok());
  j.pump();
  REQUIRE(pt->pending_count() == 1);

  // A reaches T = 1, but its news to B are slow; C's claim arrives first,
  // and C's later news (U = 2, V = 5, V's failure) queue behind it.
  j.carriers[0]->delay(1);
  if (how == release_by::reaching) REQUIRE(t.signal(1).ok());
  if (how == release_by::failing) REQUIRE(t.fail(causal::error{errc::device_lost, "T failed", 5}));
  REQUIRE(u.signal(1, claim, frontier_entry{c, 1}).ok());
  j.pump();
  REQUIRE(v.signal(5).ok());
  REQUIRE(u.signal(2, claim, frontier_entry{c, 2}).ok());
  REQUIRE(v.fail(causal::error{errc::timeout, "V failed", 6}));
  j.pump();
  CHECK(pt->value() == 0);
  CHECK(pu->value() == 0);
  CHECK(pv->value() == 0);
  CHECK_FALSE(pv->failed());
  // U = 1 held; V = 5, U = 2 and V's failure queued behind it.
  CHECK(j[1].stats().reached_held == 1);
  CHECK(j[1].stats().messages_held == 4);
  // A host thread waits on the held value.
  std::atomic<int> waited{-1};
  std::thread waiter([&] { waited.store(static_cast<int>(pu->wait(2).code()), std::memory_order_release); });
  // (CHECK, not REQUIRE: the thread must be joined either way.)
  CHECK(causal::test::eventually([&] { return pu->parked_waiters() == 1 || pu->value() >= 2; }));
  CHECK(pu->value() == 0);

  switch (how) {
    case release_by::reaching:
    case release_by::failing: j.carriers[0]->release(); break;
    case release_by::closing: REQUIRE(j[1].close_proxy(0, 1).ok()); break;
    case release_by::leaving: j[0].shutdown(); j.carriers[0]->release(); break;
    case release_by::vanishing:
      j.hub.drop(0, causal::error{errc::device_lost, "rank 0 crashed", 0});
      j.clock.advance(1ms);
      break;
    case release_by::shutting_down: j[1].shutdown(); break;
  }
  j.pump();
  waiter.join();
  if (how == release_by::shutting_down) {
    // B's own proxies fail; nothing is left waiting.
    CHECK(waited.load(std::memory_order_acquire) == static_cast<int>(errc::cancelled));
    CHECK(pu->failed());
    CHECK(pv->failed());
    return;
  }
  CHECK(waited.load(std::memory_order_acquire) == static_cast<int>(errc::ok));
  CHECK(pu->value() == 2);
  CHECK(pv->value() == 5);
  REQUIRE(pv->failed());
  CHECK(pv->failure()->code() == errc::timeout);
  if (how == release_by::reaching) {
    CHECK(pt->value() == 1);
    CHECK_FALSE(pt->failed());
  } else {
    CHECK(pt->value() == 0);
    CHECK(pt->failed());
  }
}

TEST_CASE("mpi node: a proxy keeps the values its export reached before it failed, was withdrawn, was destroyed "
          "or its rank left, however late the proxy is opened",
          "[mpi][node][failure]") {
  // docs/semaphores.md, "Failure": a value reached before a semaphore
  // failed stays reached for every waiter, however late its wait is armed.
  // A proxy opened late is such a wait: it starts from the value the
  // export had reached, then fails.
  job j(3);
  semaphore failing, withdrawn, leaving;
  auto destroyed = std::make_unique<semaphore>();
  const axis a = rank_axis(0, 1);
  REQUIRE(j[0].export_semaphore(1, failing).ok());
  REQUIRE(j[0].export_semaphore(2, withdrawn).ok());
  REQUIRE(j[0].export_semaphore(3, *destroyed).ok());
  REQUIRE(j[2].export_semaphore(4, leaving).ok());
  j.start_all();
  semaphore* early = j[1].open_proxy(2, 4).value();
  j.pump();
  REQUIRE(failing.signal(3, f_of(a, 3), frontier_entry{a, 3}).ok());
  REQUIRE(failing.fail(causal::error{errc::device_lost, "failed after 3", 9}));
  REQUIRE(withdrawn.signal(5, f_of(a, 5), frontier_entry{a, 5}).ok());
  REQUIRE(j[0].withdraw(2).ok());
  REQUIRE(destroyed->signal(7, f_of(a, 7), frontier_entry{a, 7}).ok());
  destroyed.reset();
  REQUIRE(leaving.signal(4).ok());
  j.pump();
  j[2].shutdown();  // sends what is pending, then BYE
  j.pump();
  semaphore* late_failing = j[1].open_proxy(0, 1).value();
  semaphore* late_withdrawn = j[1].open_proxy(0, 2).value();
  semaphore* late_destroyed = j[1].open_proxy(0, 3).value();
  j.pump();
  const auto now = std::chrono::steady_clock::now();
  struct expectation {
    semaphore* proxy;
    std::uint64_t value;
    errc code;
  };
  for (const expectation& x : {expectation{late_failing, 3, errc::device_lost},
                               expectation{late_withdrawn, 5, errc::cancelled},
                               expectation{late_destroyed, 7, errc::cancelled},
                               expectation{early, 4, errc::cancelled}}) {
    REQUIRE(x.proxy->failed());
    CHECK(x.proxy->failure()->code() == x.code);
    CHECK(x.proxy->value() == x.value);
    CHECK(x.proxy->wait_until(x.value, now).ok());               // a late wait on it succeeds
    CHECK(x.proxy->wait_until(x.value + 1, now).code() == x.code);  // one above fails
  }
  CHECK(late_failing->frontier_at(3)->frontier == f_of(a, 3));
  CHECK(late_withdrawn->frontier_at(5)->frontier == f_of(a, 5));
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

TEST_CASE("mpi node: news held behind another owner's and released, round after round, allocate nothing",
          "[mpi][node][alloc][order]") {
  // Each round: rank 0's operation (a, k) submits T = k, then reaches it;
  // rank 2 reaches U = k claiming (a, k) and its news reach rank 1 first
  // (the polls' order), so rank 1 holds U = k until T = k arrives.
  job j(3);
  semaphore t, u;
  REQUIRE(j[0].export_semaphore(1, t).ok());
  REQUIRE(j[2].export_semaphore(3, u).ok());
  j.start_all();
  semaphore* pt = j[1].open_proxy(0, 1).value();
  semaphore* pu = j[1].open_proxy(2, 3).value();
  j.pump();
  const axis a = rank_axis(0, 1);
  const axis c = rank_axis(2, 1);
  std::uint64_t k = 0;
  bool in_order = true;
  auto round = [&] {
    ++k;
    (void)t.submit_signal(k, frontier{}, frontier_entry{a, k});
    j[0].poll();
    j[1].poll();
    (void)t.signal(k);
    (void)u.signal(k, frontier{{a, k}, {c, k}}, frontier_entry{c, k});
    j[2].poll();
    j[1].poll();
    in_order = in_order && pu->value() == k - 1;  // held
    j[0].poll();
    j[1].poll();
    in_order = in_order && pt->value() == k && pu->value() == k;
  };
  for (int warm = 0; warm < 64; ++warm) round();
  const auto held_before = j[1].stats().reached_held;
  causal::test::allocation_guard guard;
  for (int n = 0; n < 256; ++n) round();
  const auto allocations = guard.allocations();
  CHECK(allocations == 0);
  CHECK(in_order);
  CHECK(j[1].stats().reached_held - held_before == 256);
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

TEST_CASE("mpi node: a carrier destroyed under a live node is refused loudly; the other order works",
          "[mpi][node][lifetime]") {
  CAUSAL_TEST_NEEDS_FORK();
  const causal_test::child_outcome out = causal_test::run_child([] {
    mpi::loopback_hub hub(2);
    mpi::manual_clock clock;
    auto* carrier = new mpi::loopback_carrier(hub, 0);
    node_t node(*carrier, mpi::node_options{}, clock);
    delete carrier;  // refused: the node still uses it
  });
  CHECK(out.aborted);
  CHECK(causal_test::contains(out.stderr_text,
                              "mpi::loopback_carrier destroyed while 1 mpi node(s) still use it"));

  mpi::loopback_hub hub(2);
  mpi::manual_clock clock;
  mpi::loopback_carrier carrier(hub, 0);
  { node_t first(carrier, mpi::node_options{}, clock); }
  { node_t second(carrier, mpi::node_options{}, clock); }
}  // the carrier goes after both nodes: no refusal
