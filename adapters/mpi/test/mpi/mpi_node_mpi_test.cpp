// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// mpi_node_mpi_test: basic_node<mpi_carrier> on every rank of a real MPI
// job (mpiexec -n 2 and -n 3; adapters/mpi/test/mpi/meson.build): proxies
// used through host waits, timepoints and queues, late joiners, coalescing,
// the owner's failure, orderly shutdown and a rank leaving early -- driven
// by node_thread, node_process and a plain poll loop.
//
// Every test case is collective: each rank creates its carrier at the same
// point (MPI_Comm_dup), so test cases never see each other's messages.
// Rank 0 owns the exports under test; every other rank subscribes.
//
// Agreement. While a driver runs, the main thread makes no MPI call (the
// binary runs at MPI_THREAD_SERIALIZED, which is all a node needs), so the
// ranks agree through the node itself: every rank exports a "phase"
// semaphore and holds proxies of everyone else's, and sync(k) signals its
// own phase to k and waits until every peer's proxy reached k. A proxy
// value is read rather than a wait's status because a peer that passed the
// last sync may already have said BYE, which fails the proxy after its
// value arrived (failure wins for a waiter). After the last sync each rank
// stops its driver (BYE) and then meets the others in MPI_Barrier, so no
// rank tears MPI down while another still needs it. Every wait is bounded
// by a generous limit that only ends a failing run; nothing is timed.

#include "catch.hpp"

#include <causal/adapters/cpu/queue.hpp>
#include <causal/adapters/mpi/mpi_carrier.hpp>
#include <causal/adapters/mpi/node.hpp>
#include <causal/adapters/mpi/progress.hpp>
#include <causal/executor.hpp>
#include <causal/frontier.hpp>
#include <causal/queue.hpp>
#include <causal/semaphore.hpp>

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace cm = causal::mpi;
using causal::errc;
using causal::frontier;
using causal::frontier_entry;
using causal::semaphore;
using causal::status;

namespace {

using node_type = cm::basic_node<cm::mpi_carrier>;
using queue_type = causal::recording_queue<true>;

/// Bounds a wait that only a failing run reaches.
constexpr auto limit = std::chrono::seconds(30);
/// The id every rank exports its phase semaphore under.
constexpr std::uint64_t phase_id = 0xfa5e;

enum class drive { thread, process, poll_loop };

const char* name_of(drive d) {
  switch (d) {
    case drive::thread: return "node_thread";
    case drive::process: return "node_process";
    case drive::poll_loop: return "poll loop";
  }
  return "?";
}

cm::node_options test_options() {
  cm::node_options o;
  o.session = 7;
  o.heartbeat_interval = std::chrono::milliseconds(100);
  // Generous: only a vanished rank reaches it (it bounds a failing run).
  o.heartbeat_timeout = std::chrono::seconds(60);
  return o;
}

cm::mpi_carrier make_carrier() {
  auto made = cm::mpi_carrier::create();
  REQUIRE(made);
  return std::move(*made);
}

/// One rank's node, its driver and its phase semaphore (file comment).
class rank_node {
 public:
  explicit rank_node(drive how) : how_(how), carrier_(make_carrier()), node_(carrier_, test_options()) {
    // Allocated before start(), so HELLO announces it: peers read it
    // with node().peer(rank).axes.
    auto a = node_.allocate_axis(causal::domain::queue);
    REQUIRE(a);
    axis_ = *a;
    REQUIRE(node_.export_semaphore(phase_id, phase_).ok());
    for (std::uint32_t r = 0; r < node_.size(); ++r) {
      if (r == node_.rank()) {
        peer_phase_.push_back(nullptr);
        continue;
      }
      auto p = node_.open_proxy(r, phase_id);
      REQUIRE(p);
      peer_phase_.push_back(*p);
    }
    REQUIRE(node_.start().ok());
    start_driver();
  }

  rank_node(const rank_node&) = delete;
  rank_node& operator=(const rank_node&) = delete;

  ~rank_node() {
    stop();
    MPI_Barrier(MPI_COMM_WORLD);
  }

  node_type& node() { return node_; }
  cm::mpi_carrier& carrier() { return carrier_; }
  std::uint32_t rank() const { return node_.rank(); }
  std::uint32_t size() const { return node_.size(); }
  /// This rank's queue axis, announced in HELLO.
  causal::axis axis() const { return axis_; }
  /// Rank r's queue axis, once its HELLO arrived (after any sync).
  causal::axis axis_of(std::uint32_t r) const {
    if (r == rank()) return axis_;
    const cm::peer_info p = node_.peer(r);
    REQUIRE(p.axes.size() == 1);
    return p.axes[0].axis;
  }
  bool polled_by_hand() const { return how_ == drive::poll_loop; }
  /// This node's proxy of rank r's phase semaphore (null for this rank).
  semaphore* peer_phase(std::uint32_t r) const { return peer_phase_[r]; }

  /// Polls once when this test drives the node by hand (else a driver does).
  void pump() {
    if (how_ == drive::poll_loop) (void)node_.poll();
    else std::this_thread::yield();
  }

  /// Pumps until `done()` or the limit; returns done().
  template <class Done>
  bool until(Done done) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return done();
      pump();
    }
    return true;
  }

  /// Waits for `s` >= v: a host wait under a driver, a poll loop by hand.
  status wait(semaphore& s, std::uint64_t v) {
    if (how_ != drive::poll_loop) return s.wait_for(v, limit);
    (void)until([&] { return s.failed() || s.value() >= v; });
    return s.wait_for(v, std::chrono::seconds(0));
  }

  /// Signals this rank's phase k and waits for every peer's but
  /// `except`'s (file comment).
  bool sync(std::uint64_t k, std::uint32_t except = UINT32_MAX) {
    if (!phase_.signal(k).ok()) return false;
    return until([&] {
      for (std::uint32_t r = 0; r < peer_phase_.size(); ++r) {
        if (r != except && peer_phase_[r] != nullptr && peer_phase_[r]->value() < k) return false;
      }
      return true;
    });
  }

  /// Stops the driver (the node says BYE) and shuts the node down.
  void stop() {
    if (thread_) thread_->stop();
    if (process_) {
      process_->stop();
      CHECK(process_->wait_stopped(std::chrono::steady_clock::now() + limit));
    }
    node_.shutdown();
    thread_.reset();
    process_.reset();
    executor_.reset();
  }

 private:
  void start_driver() {
    switch (how_) {
      case drive::thread: thread_.emplace(node_); break;
      case drive::process: {
        causal::executor_options eo;
        eo.worker_count = 1;  // the ranks share two vCPUs
        eo.spin_budget = 0;
        executor_ = std::make_unique<causal::executor>(eo);
        process_.emplace(node_);
        executor_->submit(*process_);
        break;
      }
      case drive::poll_loop: break;
    }
  }

  drive how_;
  causal::axis axis_{};
  cm::mpi_carrier carrier_;
  semaphore phase_;
  node_type node_;
  std::vector<semaphore*> peer_phase_;
  std::unique_ptr<causal::executor> executor_;
  std::optional<cm::node_process<node_type>> process_;
  std::optional<cm::node_thread<node_type>> thread_;
};

/// A timepoint whose callback records its status.
struct recorded_timepoint {
  causal::semaphore_timepoint tp;
  std::atomic<int> fired{0};
  std::atomic<int> code{-1};

  explicit recorded_timepoint(std::uint64_t threshold)
      : tp(threshold, &on_fire, this) {}

  static void on_fire(causal::semaphore_timepoint& t, status s) noexcept {
    auto* self = static_cast<recorded_timepoint*>(t.user_data());
    self->code.store(static_cast<int>(s.code()), std::memory_order_relaxed);
    self->fired.fetch_add(1, std::memory_order_release);
  }
};

}  // namespace

TEST_CASE("node over MPI: host waits, timepoints, coalescing and late joiners, on every driver",
          "[mpi][node]") {
  const drive how = GENERATE(drive::thread, drive::process, drive::poll_loop);
  INFO("driver: " << name_of(how));
  rank_node rn(how);
  node_type& node = rn.node();
  const std::uint32_t subscribers = rn.size() - 1;
  constexpr std::uint64_t burst = 200;
  constexpr std::uint64_t late_value = 50;

  semaphore followed;  // rank 0: exported as 1
  semaphore late;      // rank 0: exported as 2, signalled before anyone subscribes
  if (rn.rank() == 0) {
    const causal::axis owner_axis = rn.axis();
    REQUIRE(node.export_semaphore(1, followed).ok());
    REQUIRE(node.export_semaphore(2, late).ok());
    for (std::uint64_t v = 1; v <= late_value; ++v) {
      REQUIRE(late.signal(v, frontier{{owner_axis, v}}).ok());
    }
    // One outstanding submitted signal, which a late joiner must learn too.
    REQUIRE(late.submit_signal(late_value + 1, frontier{{owner_axis, 99}}, frontier_entry{owner_axis, 99}).ok());
  }

  semaphore* proxy = nullptr;
  std::optional<recorded_timepoint> at_burst;
  if (rn.rank() != 0) {
    auto p = node.open_proxy(0, 1);
    REQUIRE(p);
    proxy = *p;
    at_burst.emplace(burst);
    proxy->add_timepoint(at_burst->tp);
    CHECK(at_burst->fired.load() == 0);
  }
  REQUIRE(rn.sync(1));
  const causal::axis owner_axis = rn.axis_of(0);

  // The owner signals once: every subscriber's host wait returns, with the
  // owner's frontier.
  const cm::node_stats before = node.stats();
  if (rn.rank() == 0) {
    REQUIRE(followed.signal(1, frontier{{owner_axis, 1}}).ok());
  } else {
    REQUIRE(rn.wait(*proxy, 1).ok());
    const auto f = proxy->frontier_at(1);
    REQUIRE(f);
    CHECK(f->reached);
    CHECK(f->frontier.epoch_of(owner_axis) == 1);
  }
  REQUIRE(rn.sync(2));

  // A burst of signals without a poll in between: the proxies end at the
  // last value; by hand, the owner sends it as one REACHED per subscriber.
  if (rn.rank() == 0) {
    const cm::node_stats mid = node.stats();
    for (std::uint64_t v = 2; v <= burst; ++v) {
      REQUIRE(followed.signal(v, frontier{{owner_axis, v}}).ok());
    }
    REQUIRE(rn.sync(3));
    const cm::node_stats after = node.stats();
    const std::uint64_t sent = after.reached_sent - mid.reached_sent;
    const std::uint64_t folded = after.reached_coalesced - mid.reached_coalesced;
    // (The phase export's REACHED of sync(3) is counted too.)
    CHECK(sent >= 2 * subscribers);
    CHECK(sent <= burst * subscribers);
    if (rn.polled_by_hand()) {
      CHECK(sent == 2 * subscribers);
      CHECK(folded == burst - 2);
    }
    // Only now may the subscribers go on (and subscribe to export 2).
    REQUIRE(rn.sync(4));
  } else {
    REQUIRE(rn.wait(*proxy, burst).ok());
    CHECK(proxy->value() == burst);
    CHECK(proxy->frontier_at(burst)->frontier.epoch_of(owner_axis) == burst);
    CHECK(rn.until([&] { return at_burst->fired.load(std::memory_order_acquire) == 1; }));
    CHECK(at_burst->code.load() == static_cast<int>(errc::ok));
    REQUIRE(rn.sync(3));
    REQUIRE(rn.sync(4));
    const cm::node_stats after = node.stats();
    // Every value at most once, in increasing order: never more than sent.
    // (Phases 2 to 5 of every peer may be counted too.)
    const std::uint64_t applied = after.reached_applied - before.reached_applied;
    const std::uint64_t phases = 4 * (rn.size() - 1);
    CHECK(applied >= 2);
    CHECK(applied <= burst + phases);
    if (rn.polled_by_hand()) CHECK(applied <= 2 + phases);
  }

  // A late joiner opens its proxy after the owner signalled 50 times: it
  // starts from the current value, frontier and outstanding submission.
  if (rn.rank() != 0) {
    auto p = node.open_proxy(0, 2);
    REQUIRE(p);
    semaphore& joined = **p;
    REQUIRE(rn.wait(joined, late_value).ok());
    CHECK(joined.value() == late_value);
    CHECK(joined.frontier_at(late_value)->frontier.epoch_of(owner_axis) == late_value);
    CHECK(rn.until([&] { return joined.state_of(late_value + 1) == causal::value_state::submitted; }));
    CHECK(node.stats().malformed == 0);
    CHECK(node.stats().protocol_errors == 0);
  } else {
    CHECK(rn.until([&] { return node.subscriber_count(2) == subscribers; }));
  }
  CHECK(node.stats().peers_lost == 0);
  REQUIRE(rn.sync(5));
}

TEST_CASE("node over MPI: a queue waits on a proxy before the owner signals, and elides a wait "
          "its knowledge covers",
          "[mpi][node][queue]") {
  rank_node rn(drive::thread);
  node_type& node = rn.node();
  queue_type q(rn.axis());

  semaphore s;  // rank 0: id 10, signalled by q's operations 1 and 2
  semaphore u;  // rank 0: id 11, signalled by q's operation 3
  semaphore* ps = nullptr;
  semaphore* pu = nullptr;
  if (rn.rank() == 0) {
    REQUIRE(node.export_semaphore(10, s).ok());
    REQUIRE(node.export_semaphore(11, u).ok());
  } else {
    auto a = node.open_proxy(0, 10);
    auto b = node.open_proxy(0, 11);
    REQUIRE(a);
    REQUIRE(b);
    ps = *a;
    pu = *b;
  }
  REQUIRE(rn.sync(1));

  // Submit-before-wait: the subscribers' queues wait for S = 1 before the
  // owner has even submitted it: a device wait the backend holds.
  const causal::axis owner_axis = rn.axis_of(0);
  if (rn.rank() != 0) {
    REQUIRE(q.submit({{ps, 1}}, {}, 1));
    CHECK(q.stats().device_waits == 1);
    CHECK(q.backend().complete_next() == 0);
  }
  REQUIRE(rn.sync(2));
  if (rn.rank() == 0) {
    REQUIRE(q.submit({}, {{&s, 1}}, 1));
    CHECK(q.backend().complete_next() == 1);
    q.retire(1);
    CHECK(s.value() == 1);
  } else {
    std::uint64_t done = 0;
    CHECK(rn.until([&] { return (done = q.backend().complete_next()) != 0; }));
    CHECK(done == 1);
    const auto f = ps->frontier_at(1);
    REQUIRE(f);
    CHECK(f->frontier.epoch_of(owner_axis) == 1);
    CHECK(f->producer == frontier_entry{owner_axis, 1});
  }
  REQUIRE(rn.sync(3));

  // The owner submits S = 2 (operation 2) and U = 1 (operation 3) and holds
  // both: the subscribers see SUBMITTED records with their producers.
  if (rn.rank() == 0) {
    REQUIRE(q.submit({}, {{&s, 2}}, 2));
    REQUIRE(q.submit({}, {{&u, 1}}, 3));
  } else {
    REQUIRE(rn.until([&] {
      return ps->state_of(2) == causal::value_state::submitted &&
             pu->state_of(1) == causal::value_state::submitted;
    }));
    // A fresh queue knows nothing of operation 2: it must wait on the device.
    auto other_axis = node.allocate_axis(causal::domain::queue);
    REQUIRE(other_axis);
    queue_type fresh(*other_axis);
    REQUIRE(fresh.submit({{ps, 2}}, {}, 7));
    CHECK(fresh.stats().device_waits == 1);
    CHECK(fresh.stats().elided_dominated == 0);

    // q waits for U = 1 (operation 3, a device wait): its knowledge takes
    // the submitted frontier, which covers operation 2 (FIFO on the owner's
    // queue), so the wait for S = 2 -- still unreached -- is elided.
    const causal::queue_stats s0 = q.stats();
    REQUIRE(q.submit({{pu, 1}}, {}, 2));
    CHECK(q.stats().device_waits == s0.device_waits + 1);
    CHECK(q.knowledge().epoch_of(owner_axis) >= 3);
    REQUIRE(q.submit({{ps, 2}}, {}, 3));
    CHECK(q.stats().elided_dominated == s0.elided_dominated + 1);
    CHECK(q.stats().device_waits == s0.device_waits + 1);
    CHECK(ps->value() < 2);  // elided before the value arrived
  }
  REQUIRE(rn.sync(4));

  // The owner's device completes both; the subscribers' queues drain.
  if (rn.rank() == 0) {
    CHECK(q.backend().complete_next() == 2);
    CHECK(q.backend().complete_next() == 3);
  } else {
    std::uint64_t last = 0;
    CHECK(rn.until([&] {
      if (const std::uint64_t e = q.backend().complete_next(); e != 0) last = e;
      return last == 3;
    }));
    CHECK(ps->value() == 2);
    CHECK(pu->value() == 1);
  }
  REQUIRE(rn.sync(5));
}

TEST_CASE("node over MPI: the owner's failure reaches every proxy with its code and text",
          "[mpi][node][errors]") {
  const drive how = GENERATE(drive::thread, drive::poll_loop);
  INFO("driver: " << name_of(how));
  rank_node rn(how);
  node_type& node = rn.node();
  semaphore s;
  semaphore* proxy = nullptr;
  std::optional<recorded_timepoint> tp;
  if (rn.rank() == 0) {
    REQUIRE(node.export_semaphore(20, s).ok());
    REQUIRE(s.signal(3).ok());
  } else {
    auto p = node.open_proxy(0, 20);
    REQUIRE(p);
    proxy = *p;
    REQUIRE(rn.wait(*proxy, 3).ok());
    tp.emplace(10);
    proxy->add_timepoint(tp->tp);
  }
  REQUIRE(rn.sync(1));

  if (rn.rank() == 0) {
    CHECK(s.fail(causal::error{errc::device_lost, "the owner's device fell over", 42}));
  } else {
    const status w = rn.wait(*proxy, 10);
    REQUIRE_FALSE(w.ok());
    CHECK(w.code() == errc::device_lost);
    CHECK(std::string(w.error_value().message()) == "the owner's device fell over");
    CHECK(w.error_value().position() == 42);
    CHECK(rn.until([&] { return tp->fired.load(std::memory_order_acquire) == 1; }));
    CHECK(tp->code.load() == static_cast<int>(errc::device_lost));
    CHECK(proxy->value() == 3);  // what was reached stays reached
    CHECK(node.stats().proxies_failed == 1);
    CHECK(node.stats().peers_lost == 0);
  }
  REQUIRE(rn.sync(2));
}

TEST_CASE("node over MPI: a rank leaving early (BYE) fails its proxies everywhere; the others go on",
          "[mpi][node][shutdown]") {
  const drive how = GENERATE(drive::thread, drive::poll_loop);
  INFO("driver: " << name_of(how));
  rank_node rn(how);
  node_type& node = rn.node();
  const std::uint32_t n = rn.size();

  // Rank 0 exports S and leaves; with 3 ranks, rank 1 exports T, which
  // rank 2 follows past rank 0's departure.
  semaphore s;
  semaphore t;
  semaphore* ps = nullptr;
  semaphore* pt = nullptr;
  if (rn.rank() == 0) REQUIRE(node.export_semaphore(30, s).ok());
  if (rn.rank() == 1) REQUIRE(node.export_semaphore(31, t).ok());
  if (rn.rank() != 0) {
    auto p = node.open_proxy(0, 30);
    REQUIRE(p);
    ps = *p;
  }
  if (rn.rank() == 2) {
    auto p = node.open_proxy(1, 31);
    REQUIRE(p);
    pt = *p;
  }
  REQUIRE(rn.sync(1));

  if (rn.rank() == 0) {
    // Leave: BYE to every rank, then wait for the others in the barrier
    // (rank_node's destructor); MPI_Finalize would wait for them anyway.
    REQUIRE(s.signal(1).ok());
    rn.stop();
    CHECK(node.is_shut_down());
    // Its own proxies failed too, with a text that says whose doing it was.
    const auto own = rn.peer_phase(1)->failure();
    REQUIRE(own);
    CHECK(own->code() == errc::cancelled);
    CHECK(std::string(own->message()) == "this node shut down");
    CHECK_FALSE(node.open_proxy(1, 99));  // refused after shutdown
    return;
  }

  // A waiter parked on a value the owner will never signal: it gets a
  // clear error instead of hanging.
  std::atomic<int> parked_code{-1};
  std::thread parked;
  if (!rn.polled_by_hand()) {
    parked = std::thread([&] {
      parked_code.store(static_cast<int>(ps->wait_for(5, limit).code()), std::memory_order_release);
    });
  }
  const status w = rn.wait(*ps, 5);
  REQUIRE_FALSE(w.ok());
  CHECK(w.code() == errc::cancelled);
  CHECK(std::string(w.error_value().message()) == "the owner rank left the job (BYE)");
  CHECK(w.error_value().position() == 0);
  CHECK(ps->value() == 1);  // the value sent before BYE arrived first
  if (parked.joinable()) {
    parked.join();
    CHECK(parked_code.load(std::memory_order_acquire) == static_cast<int>(errc::cancelled));
  }
  CHECK(rn.until([&] { return node.peer(0).lost; }));
  CHECK(node.peer(0).lost_error.code() == errc::cancelled);
  CHECK(node.stats().peers_lost == 1);

  // The ranks still in the job keep working together.
  if (n >= 3) {
    if (rn.rank() == 1) {
      REQUIRE(t.signal(4).ok());
    } else if (rn.rank() == 2) {
      CHECK(rn.wait(*pt, 4).ok());
      CHECK_FALSE(pt->failed());
    }
  }
  // Rank 0's phase proxy has failed: the others agree among themselves,
  // then the destructor's MPI_Barrier (drivers stopped) meets rank 0.
  REQUIRE(rn.sync(2, 0));
}

TEST_CASE("node over MPI: an export destroyed under a remote CPU queue's wait fails that operation "
          "with cancelled; the queue and the node then go cleanly",
          "[mpi][node][lifetime]") {
  const drive how = GENERATE(drive::thread, drive::poll_loop);
  INFO("driver: " << name_of(how));
  rank_node rn(how);
  node_type& node = rn.node();
  // The recommended order (docs/lifetimes.md): executor, semaphores, then
  // the queue, so the queue goes first; the export goes on purpose early.
  causal::executor ex(causal::executor_options{.worker_count = 1});
  semaphore done;
  std::optional<semaphore> exported;
  std::optional<causal::cpu::queue> q;
  if (rn.rank() == 0) {
    exported.emplace();
    REQUIRE(node.export_semaphore(40, *exported).ok());
  }
  REQUIRE(rn.sync(1));
  if (rn.rank() == 1) {
    auto p = node.open_proxy(0, 40);
    REQUIRE(p);
    q.emplace(ex);
    // Waits on a value rank 0 will never signal.
    REQUIRE(q->host({{*p, 1}}, {{&done, 1}}, [](const causal::host_call_context&) noexcept {}));
  }
  REQUIRE(rn.sync(2));
  if (rn.rank() == 0) exported.reset();  // withdrawn: the proxies everywhere fail
  if (rn.rank() == 1) {
    REQUIRE(rn.until([&] { return done.failed(); }));
    REQUIRE(done.failure());
    CHECK(done.failure()->code() == errc::cancelled);
    CHECK(q->wait_idle(std::chrono::steady_clock::now() + limit).code() == errc::cancelled);
    q.reset();  // nothing left pending
  }
  REQUIRE(rn.sync(3));
}
