// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// mpi_proxy_conformance_test: the queue conformance cases
// (test/conformance/queue_conformance.hpp) that concern waits, re-expressed
// across an MPI proxy: what a CPU queue owes a semaphore it waits on, it
// must owe a proxy of a semaphore another rank exports.
//
// Model. Two loopback ranks in one process (loopback_carrier.hpp), each a
// causal::mpi node driven by its own node_thread (progress.hpp), and one
// executor whose workers run every CPU queue of both ranks. The suite's
// one semaphore S becomes a pair: S itself, exported by the rank whose
// queue signals it, and the other rank's proxy of it, which the waiting
// queue names. So where the suite has
//
//   q1.submit({}, {{&s, 1}}, op1)        q2.submit({{&s, 1}}, ..., op2)
//
// this file has
//
//   rank 0 (owner)                              rank 1 (waiter)
//   q1.submit({}, {{&s.exported, 1}}, op1) ...  q2.submit({{&s.proxy, 1}}, ..., op2)
//
// and the proxy learns of the signal only through the node's SUBMITTED and
// REACHED messages. The cases mirror the suite's assertions: the execution
// log orders the operations, the queue's stats count each wait's tier, and
// frontiers, trackers and failure codes are read back.
//
// Contract checked: a wait on an unreached proxy value is a real wait that
// orders the operations and imports the owner's frontier; each elision
// tier holds across the proxy (value reached; producer dominated by the
// waiting queue's knowledge; implied by another wait of the same
// submission) and an externally signalled value is never elided; a wait
// submitted before the owner's signal still resolves; a signal made after
// a wait on a proxy carries the owner's entries, back to the owner's rank;
// a waiting queue's completions reach its tracker only after the remote
// value; an owner's failure fails the proxy, the waiting operation's
// signals and stickily the waiting queue (its tracker axis too), even where
// a consumer on the owner's rank elided its wait on the failed value; of an
// operation that signals two exported semaphores, only the last one's
// proxy carries the operation's entry, and a consumer that elides its wait
// on the first's proxy through it finds that proxy reached when it runs
// (the node keeps the owner's order across exports); a failure reaches an
// operation's signals only after the proxy values its elided waits stand
// for; a proxy value reached before the owner failed stays reached for a
// wait armed late; bad waits on a proxy are refused and change nothing.
//
// Not applicable here: the suite's one-queue epoch order case and its
// same-queue elision case (tier 1, "this queue signalled it") involve no
// second rank: a queue cannot signal a semaphore another rank exports.
// A queue may not *signal* a proxy (its writes are reserved for its node;
// mpi_node_test checks the refusal), so the suite's signal cases always
// signal the exported semaphore.
//
// Knowledge. A wait imports the frontier its proxy knows at submission
// (queue.hpp, tier 2: "when known"), and across ranks the owner's news
// arrives on its own schedule; so a case that checks what a wait taught
// the waiting queue first waits for the news to reach the proxy (knows()).
// The wait-before-signal case imports nothing and checks only the order.
//
// Timing. Nothing waits on a duration: every wait is for a value, a state
// or a counter, with a deadline (kDeadline) that only turns a hang into a
// failure. Heartbeats are off, so a busy machine cannot lose a peer.

#include <causal/adapters/cpu/queue.hpp>
#include <causal/adapters/mpi/loopback_carrier.hpp>
#include <causal/adapters/mpi/node.hpp>
#include <causal/adapters/mpi/progress.hpp>
#include <causal/axis.hpp>
#include <causal/completion.hpp>
#include <causal/executor.hpp>
#include <causal/frontier.hpp>
#include <causal/queue.hpp>
#include <causal/result.hpp>
#include <causal/semaphore.hpp>

#include "catch.hpp"
#include "eventually.hpp"
#include "string_makers.hpp"
#include "watchdog.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <utility>
#include <vector>

namespace {

namespace mpi = causal::mpi;
using causal::errc;
using causal::frontier_entry;
using causal::value_state;
using namespace std::chrono_literals;

/// How long any wait may take before the test fails instead of hanging.
constexpr auto kDeadline = 30s;

/// The rank whose queues signal exported semaphores, and the rank whose
/// queues wait on proxies of them (some cases also export the other way).
constexpr std::uint32_t kOwner = 0;
constexpr std::uint32_t kWaiter = 1;

/// Index of `tag` in `log`, or -1.
long position(const std::vector<int>& log, int tag) {
  const auto it = std::find(log.begin(), log.end(), tag);
  return it == log.end() ? -1 : static_cast<long>(it - log.begin());
}

/// True when every tag of `tags` ran, each after the one before it.
bool ran_in_order(const std::vector<int>& log, std::initializer_list<int> tags) {
  long previous = -1;
  for (const int tag : tags) {
    const long at = position(log, tag);
    if (at <= previous) return false;
    previous = at;
  }
  return true;
}

/// An exported semaphore and another rank's proxy of it.
struct remote_semaphore {
  std::uint64_t id;
  causal::semaphore& exported;
  causal::semaphore& proxy;
};

/// Two loopback ranks with running node threads, one executor with
/// `Workers` workers for both ranks' CPU queues, and an execution log.
template <std::uint32_t Workers>
class two_ranks {
 public:
  using node_type = mpi::basic_node<mpi::loopback_carrier>;
  using queue_type = causal::cpu::queue;

  two_ranks() : executor_(causal::executor_options{.worker_count = Workers}) {
    mpi::node_options quiet;
    quiet.heartbeat_interval = 0us;  // no timeouts: a busy machine must not lose a peer
    quiet.heartbeat_timeout = 0us;
    for (std::uint32_t r = 0; r < 2; ++r) {
      carriers_[r] = std::make_unique<mpi::loopback_carrier>(hub_, r);
      nodes_[r] = std::make_unique<node_type>(*carriers_[r], quiet);
      REQUIRE(nodes_[r]->start().ok());
    }
    for (std::uint32_t r = 0; r < 2; ++r) drivers_[r] = std::make_unique<mpi::node_thread<node_type>>(*nodes_[r]);
  }

  two_ranks(const two_ranks&) = delete;
  two_ranks& operator=(const two_ranks&) = delete;

  ~two_ranks() {
    // A case that stopped at a failed REQUIRE may leave operations waiting
    // on values nobody will signal. Stopping the drivers shuts both nodes
    // down, which fails every proxy (cancelled); failing the local
    // semaphores ends the rest; only then can the queues drain and go.
    // In a case that finished, everything is idle and this changes nothing
    // the case looked at.
    for (auto& d : drivers_) d->stop();
    for (auto& s : semaphores_) (void)s.fail(causal::error{errc::cancelled, "proxy conformance: torn down"});
    queues_.clear();
  }

  node_type& node(std::uint32_t rank) { return *nodes_[rank]; }

  /// A CPU queue of `rank`, on an axis that rank's node allocated (so the
  /// other rank knows it from the node's AXES announcement).
  queue_type& make_queue(std::uint32_t rank) {
    const causal::axis a = node(rank).allocate_axis(causal::domain::queue).value();
    queues_.push_back(std::make_unique<queue_type>(a, executor_));
    return *queues_.back();
  }

  /// A semaphore at 0 that no node knows of.
  causal::semaphore& make_semaphore() { return semaphores_.emplace_back(); }

  /// A semaphore `owner` exports under a fresh id, and the other rank's
  /// proxy of it.
  remote_semaphore make_remote(std::uint32_t owner = kOwner) {
    const std::uint64_t id = next_id_++;
    causal::semaphore& s = semaphores_.emplace_back();
    REQUIRE(node(owner).export_semaphore(id, s).ok());
    causal::semaphore* p = node(1 - owner).open_proxy(owner, id).value();
    return remote_semaphore{id, s, *p};
  }

  causal::queue_operation op(int tag) {
    two_ranks* self = this;
    return causal::queue_operation::host([self, tag](const causal::host_call_context&) noexcept {
      std::lock_guard lock(self->log_mutex_);
      self->log_.push_back(tag);
    });
  }

  /// An operation that logs `tag` and what `watched` holds when it runs
  /// (reading(tag)).
  causal::queue_operation op_reading(int tag, causal::semaphore& watched) {
    two_ranks* self = this;
    causal::semaphore* w = &watched;
    return causal::queue_operation::host([self, tag, w](const causal::host_call_context&) noexcept {
      const std::uint64_t v = w->value();
      std::lock_guard lock(self->log_mutex_);
      self->log_.push_back(tag);
      self->readings_.push_back({tag, v});
    });
  }

  std::vector<int> log() {
    std::lock_guard lock(log_mutex_);
    return log_;
  }

  /// The value op_reading(tag, s) read when it ran; nothing if it never ran.
  std::optional<std::uint64_t> reading(int tag) {
    std::lock_guard lock(log_mutex_);
    for (const auto& [t, v] : readings_) {
      if (t == tag) return v;
    }
    return std::nullopt;
  }

  /// A host wait for `s` >= `v` that fails the test rather than hang.
  static causal::status wait_value(causal::semaphore& s, std::uint64_t v) {
    return s.wait_until(v, std::chrono::steady_clock::now() + kDeadline);
  }

  /// Waits until `s` (a proxy) knows of a signal of `v`: submitted or
  /// reached. Across ranks that news travels on its own; a case that needs
  /// the waiting queue to see it at submission waits for it first.
  static bool knows(causal::semaphore& s, std::uint64_t v) {
    return causal::test::eventually([&] { return s.state_of(v) != value_state::unsubmitted; }, kDeadline);
  }

  /// Waits until every queue is idle; returns the first queue failure.
  causal::status finish() {
    causal::status first{};
    for (auto& q : queues_) {
      causal::status s = q->wait_idle(std::chrono::steady_clock::now() + kDeadline);
      if (!s && first) first = s;
    }
    return first;
  }

  /// Nothing either node received was malformed or broke the protocol.
  bool wire_clean() const {
    for (const auto& n : nodes_) {
      const mpi::node_stats s = n->stats();
      if (s.malformed != 0 || s.protocol_errors != 0) return false;
    }
    return true;
  }

 private:
  /// What a watchdog dump prints at a stall: each queue's process and each
  /// node's proxy-side counters. It walks queues_, so it is only sound
  /// while the test's thread is blocked in a wait (true at a stall).
  struct state_view {
    const two_ranks* self;
    void operator()(std::ostream& out) const {
      for (std::size_t i = 0; i < self->queues_.size(); ++i) {
        auto& qp = self->queues_[i]->queue_process();
        out << "queue " << i << ": " << qp.completed() << " operations completed; its process: ";
        qp.snapshot().describe(out);
        out << "\n";
      }
      for (std::uint32_t r = 0; r < 2; ++r) {
        const mpi::node_stats s = self->nodes_[r]->stats();
        out << "node " << r << ": submitted_applied " << s.submitted_applied << ", reached_applied "
            << s.reached_applied << ", proxies_failed " << s.proxies_failed << ", malformed " << s.malformed
            << ", protocol_errors " << s.protocol_errors << "\n";
      }
    }
  };

  // Declaration order is teardown order, reversed: the queues (cleared in
  // the destructor) go before the drivers, the drivers before the nodes,
  // the nodes (which withdraw their exports) before the semaphores, and
  // the executor last.
  causal::executor executor_;
  causal::test::watch_guard watched_executor_ = causal::test::watch(executor_, "fixture executor");
  mpi::loopback_hub hub_{2};
  std::array<std::unique_ptr<mpi::loopback_carrier>, 2> carriers_;
  std::deque<causal::semaphore> semaphores_;
  std::array<std::unique_ptr<node_type>, 2> nodes_;
  std::array<std::unique_ptr<mpi::node_thread<node_type>>, 2> drivers_;
  std::vector<std::unique_ptr<queue_type>> queues_;
  state_view state_view_{this};
  causal::test::watch_guard watched_state_ = causal::test::watch_with("fixture queues and nodes", state_view_);
  std::uint64_t next_id_ = 1;
  std::mutex log_mutex_;
  std::vector<int> log_;
  std::vector<std::pair<int, std::uint64_t>> readings_;
};

}  // namespace

#define PROXY_FIXTURES two_ranks<1>, two_ranks<2>, two_ranks<4>

TEMPLATE_TEST_CASE("proxy conformance: a wait on an unreached proxy value is issued and orders",
                   "[mpi][conformance]", PROXY_FIXTURES) {
  TestType f;
  auto& q1 = f.make_queue(kOwner);
  auto& q2 = f.make_queue(kWaiter);
  auto& gate = f.make_semaphore();
  auto s = f.make_remote();
  auto& done = f.make_semaphore();
  // q1's operation waits for the host (gate), so S = 1 cannot be reached
  // when q2 submits: q2's wait must be a real one. The SUBMITTED news is
  // let through first, so that q2 imports the owner's frontier with it.
  REQUIRE(q1.submit({{&gate, 1}}, {{&s.exported, 1}}, f.op(1)));
  REQUIRE(f.knows(s.proxy, 1));
  REQUIRE(q2.submit({{&s.proxy, 1}}, {{&done, 1}}, f.op(2)));
  CHECK(q2.stats().device_waits == 1);
  CHECK(q2.stats().waits_elided() == 0);
  CHECK(s.proxy.value() == 0);
  REQUIRE(gate.signal(1));
  REQUIRE(f.wait_value(done, 1));
  REQUIRE(f.finish());
  const auto log = f.log();
  REQUIRE(log.size() == 2);
  CHECK(log[0] == 1);
  CHECK(log[1] == 2);
  // q2 learnt q1's entry through the wait on the proxy.
  CHECK(q2.knowledge().epoch_of(q1.axis()) >= 1);
  const auto at = s.proxy.frontier_at(1);
  REQUIRE(at);
  CHECK(at->reached);
  CHECK(at->producer == frontier_entry{q1.axis(), 1});
  CHECK(f.wire_clean());
}

TEMPLATE_TEST_CASE("proxy conformance: a wait on a reached, untainted proxy value is elided",
                   "[mpi][conformance]", PROXY_FIXTURES) {
  TestType f;
  auto& q1 = f.make_queue(kOwner);
  auto& q2 = f.make_queue(kWaiter);
  auto s = f.make_remote();
  auto& done = f.make_semaphore();
  REQUIRE(q1.submit({}, {{&s.exported, 1}}, f.op(1)));
  REQUIRE(f.wait_value(s.proxy, 1));
  CHECK_FALSE(s.proxy.is_tainted(1));
  REQUIRE(q2.submit({{&s.proxy, 1}}, {{&done, 1}}, f.op(2)));
  CHECK(q2.stats().elided_reached == 1);
  CHECK(q2.stats().device_waits == 0);
  // The elided wait still imported the frontier the proxy reached with.
  CHECK(q2.knowledge().epoch_of(q1.axis()) == 1);
  REQUIRE(f.wait_value(done, 1));
  REQUIRE(f.finish());
  const auto log = f.log();
  CHECK(position(log, 1) < position(log, 2));
  CHECK(f.wire_clean());
}

TEMPLATE_TEST_CASE("proxy conformance: a wait on a proxy value the owner reached from outside is not elided",
                   "[mpi][conformance]", PROXY_FIXTURES) {
  // queue.hpp: values made by signal_external never elide (the signaller's
  // past is unknown). The owner's REACHED says so, and the proxy's value
  // is tainted like the export's.
  TestType f;
  auto& q = f.make_queue(kWaiter);
  auto s = f.make_remote();
  auto& done = f.make_semaphore();
  REQUIRE(s.exported.signal_external(1));
  REQUIRE(f.wait_value(s.proxy, 1));
  CHECK(s.proxy.is_tainted(1));
  REQUIRE(q.submit({{&s.proxy, 1}}, {{&done, 1}}, f.op(1)));
  CHECK(q.stats().waits_elided() == 0);
  CHECK(q.stats().device_waits == 1);
  REQUIRE(f.wait_value(done, 1));
  REQUIRE(f.finish());
  CHECK(f.log() == std::vector<int>{1});
  CHECK(f.wire_clean());
}

TEMPLATE_TEST_CASE("proxy conformance: a wait on a proxy value whose producer the waiting queue knows is elided",
                   "[mpi][conformance]", PROXY_FIXTURES) {
  TestType f;
  auto& q1 = f.make_queue(kOwner);
  auto& q2 = f.make_queue(kWaiter);
  auto& gate = f.make_semaphore();
  auto s = f.make_remote();
  auto u = f.make_remote();
  // The owner's queue signals S = 1 (operation 1, held by the gate) and
  // then U = 1 (operation 2): FIFO on q1 puts operation 1 in U's past.
  REQUIRE(q1.submit({{&gate, 1}}, {{&s.exported, 1}}, f.op(1)));
  REQUIRE(q1.submit({}, {{&u.exported, 1}}, f.op(2)));
  REQUIRE(f.knows(s.proxy, 1));
  REQUIRE(f.knows(u.proxy, 1));
  // Waiting for U = 1 is a real wait; its submitted frontier names (q1, 2).
  REQUIRE(q2.submit({{&u.proxy, 1}}, {}, f.op(3)));
  CHECK(q2.stats().device_waits == 1);
  CHECK(q2.knowledge().epoch_of(q1.axis()) == 2);
  // So S = 1, produced by (q1, 1), is dominated: elided before it arrived.
  REQUIRE(q2.submit({{&s.proxy, 1}}, {}, f.op(4)));
  CHECK(q2.stats().elided_dominated == 1);
  CHECK(q2.stats().device_waits == 1);
  CHECK(s.proxy.value() == 0);
  REQUIRE(gate.signal(1));
  REQUIRE(f.finish());
  const auto log = f.log();
  REQUIRE(log.size() == 4);
  CHECK(ran_in_order(log, {1, 2, 3, 4}));
  CHECK(f.wire_clean());
}

TEMPLATE_TEST_CASE("proxy conformance: a wait implied by another wait of the same submission is elided",
                   "[mpi][conformance]", PROXY_FIXTURES) {
  TestType f;
  auto& q1 = f.make_queue(kOwner);
  auto& q2 = f.make_queue(kOwner);
  auto& q3 = f.make_queue(kWaiter);
  auto& gate = f.make_semaphore();
  auto a = f.make_remote();
  auto b = f.make_remote();
  auto& done = f.make_semaphore();
  REQUIRE(q1.submit({{&gate, 1}}, {{&a.exported, 1}}, f.op(1)));
  REQUIRE(q2.submit({{&a.exported, 1}}, {{&b.exported, 1}}, f.op(2)));
  REQUIRE(f.knows(a.proxy, 1));
  REQUIRE(f.knows(b.proxy, 1));
  // B's submitted frontier, carried to its proxy, holds q1's entry, so
  // waiting for B implies A.
  REQUIRE(q3.submit({{&a.proxy, 1}, {&b.proxy, 1}}, {{&done, 1}}, f.op(3)));
  CHECK(q3.stats().device_waits == 1);
  CHECK(q3.stats().elided_dominated == 1);
  // Once q3 knows B's past, a later wait on A is elided by dominance.
  REQUIRE(q3.submit({{&a.proxy, 1}}, {}, f.op(4)));
  CHECK(q3.stats().device_waits == 1);
  CHECK(q3.stats().elided_dominated == 2);
  CHECK(a.proxy.value() == 0);
  REQUIRE(gate.signal(1));
  REQUIRE(f.wait_value(done, 1));
  REQUIRE(f.finish());
  const auto log = f.log();
  REQUIRE(log.size() == 4);
  CHECK(ran_in_order(log, {1, 2, 3, 4}));
  CHECK(f.wire_clean());
}

TEMPLATE_TEST_CASE("proxy conformance: a wait on a proxy submitted before the owner's signal still resolves",
                   "[mpi][conformance]", PROXY_FIXTURES) {
  TestType f;
  auto& q1 = f.make_queue(kOwner);
  auto& q2 = f.make_queue(kWaiter);
  auto s = f.make_remote();
  auto& done = f.make_semaphore();
  // Nothing has signalled (or even submitted a signal of) S anywhere yet.
  auto r = q2.submit({{&s.proxy, 1}}, {{&done, 1}}, f.op(2));
  REQUIRE(r);
  // The CPU backend waits before signal (queue_process.hpp), so nothing is
  // held on the host: a real wait was issued.
  CHECK_FALSE(r->deferred);
  CHECK(q2.stats().device_waits == 1);
  CHECK(q2.stats().waits_elided() == 0);
  REQUIRE(q1.submit({}, {{&s.exported, 1}}, f.op(1)));
  REQUIRE(f.wait_value(done, 1));
  REQUIRE(f.finish());
  const auto log = f.log();
  REQUIRE(log.size() == 2);
  CHECK(position(log, 1) < position(log, 2));
  const auto at = s.proxy.frontier_at(1);
  REQUIRE(at);
  CHECK(at->reached);
  CHECK(at->producer == frontier_entry{q1.axis(), 1});
  CHECK(f.wire_clean());
}

TEMPLATE_TEST_CASE("proxy conformance: signalled semaphores carry the owner's entries, back across the ranks",
                   "[mpi][conformance]", PROXY_FIXTURES) {
  TestType f;
  auto& q1 = f.make_queue(kOwner);
  auto& q2 = f.make_queue(kWaiter);
  auto& q3 = f.make_queue(kOwner);
  auto a = f.make_remote(kOwner);
  auto b = f.make_remote(kWaiter);  // exported by the waiter, a proxy on the owner's rank
  REQUIRE(q1.submit({}, {{&a.exported, 1}}, f.op(1)));
  REQUIRE(q1.submit({}, {{&a.exported, 2}}, f.op(2)));
  // The frontier a wait imports is the one the proxy knows at submission
  // (queue.hpp, tier 2: "when known"), so the news of A = 2 goes first.
  REQUIRE(f.knows(a.proxy, 2));
  REQUIRE(q2.submit({{&a.proxy, 2}}, {{&b.exported, 5}}, f.op(3)));
  REQUIRE(f.wait_value(b.exported, 5));
  const auto at = b.exported.frontier_at(5);
  REQUIRE(at);
  CHECK(at->frontier.epoch_of(q1.axis()) == 2);
  CHECK(at->frontier.epoch_of(q2.axis()) == 1);
  // Back on the owner's rank, the proxy of B holds the same frontier, so
  // a queue there that waits for B learns both ranks' entries.
  REQUIRE(f.wait_value(b.proxy, 5));
  const auto back = b.proxy.frontier_at(5);
  REQUIRE(back);
  CHECK(back->frontier.epoch_of(q1.axis()) == 2);
  CHECK(back->frontier.epoch_of(q2.axis()) == 1);
  CHECK(back->producer == frontier_entry{q2.axis(), 1});
  REQUIRE(q3.submit({{&b.proxy, 5}}, {}, f.op(4)));
  CHECK(q3.stats().elided_reached == 1);
  CHECK(q3.knowledge().epoch_of(q1.axis()) == 2);
  CHECK(q3.knowledge().epoch_of(q2.axis()) == 1);
  REQUIRE(f.finish());
  const auto log = f.log();
  REQUIRE(log.size() == 4);
  CHECK(ran_in_order(log, {2, 3, 4}));
  CHECK(f.wire_clean());
}

TEMPLATE_TEST_CASE("proxy conformance: a waiting queue's completions reach its tracker after the remote value",
                   "[mpi][conformance]", PROXY_FIXTURES) {
  TestType f;
  auto& q1 = f.make_queue(kOwner);
  auto& q2 = f.make_queue(kWaiter);
  auto& gate = f.make_semaphore();
  auto s = f.make_remote();
  auto& done = f.make_semaphore();
  causal::completion_tracker tracker;
  REQUIRE(tracker.register_axis(q2.axis()));
  q2.track_completion(tracker);
  REQUIRE(q1.submit({{&gate, 1}}, {{&s.exported, 1}}, f.op(1)));
  for (std::uint64_t i = 2; i <= 5; ++i) REQUIRE(q1.submit({}, {{&s.exported, i}}, f.op(static_cast<int>(i))));
  for (std::uint64_t i = 1; i <= 5; ++i) {
    REQUIRE(q2.submit({{&s.proxy, i}}, {{&done, i}}, f.op(10 + static_cast<int>(i))));
  }
  // The gate holds all of q1, so no value reached the proxy and none of
  // q2's operations can have completed.
  CHECK(tracker.retired_epoch(q2.axis()) == 0);
  CHECK(q2.completed_epoch() == 0);
  REQUIRE(gate.signal(1));
  REQUIRE(f.wait_value(done, 5));
  REQUIRE(f.finish());
  CHECK(tracker.retired_epoch(q2.axis()) == 5);
  causal::frontier need;
  need.insert_or_raise(q2.axis(), 5);
  CHECK(tracker.covers(need));
  const auto log = f.log();
  REQUIRE(log.size() == 10);
  for (int i = 1; i <= 5; ++i) CHECK(position(log, i) < position(log, 10 + i));
  CHECK(f.wire_clean());
}

TEMPLATE_TEST_CASE("proxy conformance: a failed exported semaphore fails the waiting operation's signals",
                   "[mpi][conformance][failure]", PROXY_FIXTURES) {
  TestType f;
  auto& q = f.make_queue(kWaiter);
  auto upstream = f.make_remote();
  auto& out = f.make_semaphore();
  // Submitted before the owner fails anything: the wait is accepted.
  REQUIRE(q.submit({{&upstream.proxy, 1}}, {{&out, 1}}, f.op(1)));
  CHECK(q.stats().device_waits == 1);
  REQUIRE(upstream.exported.fail(causal::error{errc::device_lost, "conformance: upstream lost", 42}));
  // The proxy fails with the owner's code, text and position...
  CHECK(f.wait_value(upstream.proxy, 1).code() == errc::device_lost);
  REQUIRE(upstream.proxy.failed());
  CHECK(upstream.proxy.failure()->message() == "conformance: upstream lost");
  CHECK(upstream.proxy.failure()->position() == 42);
  // ...and so does the waiting operation's signal: no waiter is stranded.
  CHECK(f.wait_value(out, 1).code() == errc::device_lost);
  (void)f.finish();
  CHECK(position(f.log(), 1) == -1);  // never ran
  CHECK(f.wire_clean());
}

TEMPLATE_TEST_CASE("proxy conformance: a failed exported semaphore fails the waiting queue: later operations "
                   "never run and no later epoch completes",
                   "[mpi][conformance][failure]", PROXY_FIXTURES) {
  // The suite's hazard, across both ranks: the waiting queue's later
  // signal goes back to the owner's rank, where a consumer elides its wait
  // on the failed value because the later one implies it. Only a sticky
  // failure keeps that consumer from running on data never produced.
  TestType f;
  auto& q = f.make_queue(kWaiter);
  auto& q2 = f.make_queue(kOwner);
  auto upstream = f.make_remote(kOwner);
  auto out = f.make_remote(kWaiter);
  auto later = f.make_remote(kWaiter);
  auto& consumed = f.make_semaphore();
  causal::completion_tracker tracker;
  REQUIRE(tracker.register_axis(q.axis()));
  q.track_completion(tracker);
  REQUIRE(q.submit({{&upstream.proxy, 1}}, {{&out.exported, 1}}, f.op(1)));
  REQUIRE(q.submit({}, {{&later.exported, 1}}, f.op(2)));
  REQUIRE(f.knows(out.proxy, 1));
  REQUIRE(f.knows(later.proxy, 1));
  REQUIRE(q2.submit({{&later.proxy, 1}, {&out.proxy, 1}}, {{&consumed, 1}}, f.op(3)));
  CHECK(q2.stats().elided_dominated == 1);  // OUT = 1 is implied by LATER = 1
  CHECK(q2.stats().device_waits == 1);
  REQUIRE(upstream.exported.fail(causal::error{errc::device_lost, "conformance: upstream lost"}));
  CHECK(f.wait_value(out.exported, 1).code() == errc::device_lost);
  CHECK(f.wait_value(later.exported, 1).code() == errc::device_lost);
  CHECK(f.wait_value(out.proxy, 1).code() == errc::device_lost);
  CHECK(f.wait_value(later.proxy, 1).code() == errc::device_lost);
  CHECK(f.wait_value(consumed, 1).code() == errc::device_lost);
  // Work submitted after the failure is refused with the same error.
  auto& after = f.make_semaphore();
  auto late = q.submit({}, {{&after, 1}}, f.op(4));
  REQUIRE_FALSE(late);
  CHECK(late.error_value().code() == errc::device_lost);
  (void)f.finish();
  CHECK(f.log().empty());
  CHECK(q.completed_epoch() == 0);
  CHECK(after.value() == 0);
  // A tracker waiting for the failed queue's axis learns of the failure.
  CHECK(tracker.axis_status(q.axis()).code() == errc::device_lost);
  CHECK(tracker.retired_epoch(q.axis()) == 0);
  CHECK(f.wire_clean());
}

TEMPLATE_TEST_CASE("proxy conformance: only an operation's last signal carries its own entry",
                   "[mpi][conformance][elision]", PROXY_FIXTURES) {
  // The suite's case with both signals exported and the consumers on the
  // other rank. The proxy of T, the first signal, holds what qa knew before
  // the operation, so qb, which learnt T, still issues its wait on S's
  // proxy. The proxy of S, the last, holds (qa, 1), so qc, which learnt S,
  // elides its wait on T's proxy -- and when its operation runs, that
  // proxy has reached 1: the owner reached T first, and the node keeps
  // that order across exports (node.hpp, "Order"). (The suite's qb signals
  // S = 2; a queue may not signal a proxy, so qb signals its own.)
  TestType f;
  auto& qa = f.make_queue(kOwner);
  auto& qb = f.make_queue(kWaiter);
  auto& qc = f.make_queue(kWaiter);
  auto& gate = f.make_semaphore();
  auto t = f.make_remote();
  auto s = f.make_remote();
  auto& after_b = f.make_semaphore();
  auto& done = f.make_semaphore();
  REQUIRE(qa.submit({{&gate, 1}}, {{&t.exported, 1}, {&s.exported, 1}}, f.op(1)));
  REQUIRE(f.knows(t.proxy, 1));
  REQUIRE(f.knows(s.proxy, 1));
  const auto at_t = t.proxy.frontier_at(1);
  const auto at_s = s.proxy.frontier_at(1);
  REQUIRE((at_t && at_s));
  CHECK(at_t->frontier.epoch_of(qa.axis()) == 0);
  CHECK(at_t->producer == frontier_entry{qa.axis(), 1});
  CHECK(at_s->frontier.epoch_of(qa.axis()) == 1);
  CHECK(at_s->producer == frontier_entry{qa.axis(), 1});
  REQUIRE(qb.submit({{&t.proxy, 1}}, {}, f.op(2)));
  REQUIRE(qb.submit({{&s.proxy, 1}}, {{&after_b, 1}}, f.op(3)));
  CHECK(qb.stats().device_waits == 2);
  CHECK(qb.stats().elided_dominated == 0);
  REQUIRE(qc.submit({{&s.proxy, 1}}, {}, f.op(4)));
  REQUIRE(qc.submit({{&t.proxy, 1}}, {{&done, 1}}, f.op_reading(5, t.proxy)));
  CHECK(qc.stats().device_waits == 1);
  CHECK(qc.stats().elided_dominated == 1);
  REQUIRE(gate.signal(1));
  REQUIRE(f.wait_value(after_b, 1));
  REQUIRE(f.wait_value(done, 1));
  REQUIRE(f.finish());
  CHECK_FALSE(t.proxy.failed());
  CHECK_FALSE(s.proxy.failed());
  const auto log = f.log();
  REQUIRE(log.size() == 5);
  CHECK(ran_in_order(log, {1, 3}));
  CHECK(ran_in_order(log, {1, 4, 5}));
  // The operation that elided its wait on T's proxy found it reached.
  CHECK(f.reading(5).value_or(0) == 1);
  CHECK(f.wire_clean());
}

TEMPLATE_TEST_CASE("proxy conformance: a failure reaches an operation's signals only after its elided waits",
                   "[mpi][conformance][elision][failure]", PROXY_FIXTURES) {
  // The suite's case across both ranks. S is exported by the owner, whose
  // qa signals S = 1 (held by the gate) and whose qb signals S = 2; TC is
  // exported by the waiter, whose qc fails with `upstream` and would
  // signal TC = 2 after a wait on S's proxy. qb learns (qa, 1) from TC's
  // proxy (qc's submitted frontier) and elides its wait on S >= 1. qb fails
  // first (its wait on TC's proxy fails), but its failure must not fail S
  // before qa's healthy S = 1: qd, on the waiter's rank, which depends on
  // qa alone through S's proxy, runs -- as it would had the wait been
  // issued. The proxy of S reaches 1, then fails, in that order.
  TestType f;
  auto& qa = f.make_queue(kOwner);
  auto& qb = f.make_queue(kOwner);
  auto& qc = f.make_queue(kWaiter);
  auto& qd = f.make_queue(kWaiter);
  auto& gate = f.make_semaphore();
  auto& upstream = f.make_semaphore();
  auto s = f.make_remote(kOwner);
  auto tc = f.make_remote(kWaiter);
  auto& done = f.make_semaphore();
  REQUIRE(qa.submit({{&gate, 1}}, {{&s.exported, 1}}, f.op(1)));
  REQUIRE(f.knows(s.proxy, 1));
  REQUIRE(qc.submit({{&upstream, 1}}, {{&tc.exported, 1}}, f.op(2)));  // fails with upstream
  REQUIRE(qc.submit({{&s.proxy, 1}}, {{&tc.exported, 2}}, f.op(3)));
  REQUIRE(f.knows(tc.proxy, 2));
  REQUIRE(qb.submit({{&tc.proxy, 2}}, {}, f.op(4)));
  CHECK(qb.knowledge().epoch_of(qa.axis()) >= 1);
  REQUIRE(qb.submit({{&s.exported, 1}}, {{&s.exported, 2}}, f.op(5)));
  CHECK(qb.stats().elided_dominated == 1);
  REQUIRE(qd.submit({{&s.proxy, 1}}, {{&done, 1}}, f.op(6)));
  REQUIRE(upstream.fail(causal::error{errc::device_lost, "conformance: upstream lost"}));
  CHECK(f.wait_value(tc.exported, 2).code() == errc::device_lost);
  CHECK(f.wait_value(tc.proxy, 2).code() == errc::device_lost);
  REQUIRE(gate.signal(1));
  CHECK(f.wait_value(done, 1));
  (void)f.finish();
  CHECK(s.exported.value() == 1);  // qa's signal kept; qb failed S after it
  CHECK(f.wait_value(s.proxy, 2).code() == errc::device_lost);
  CHECK(s.proxy.value() == 1);
  const auto log = f.log();
  CHECK(position(log, 1) != -1);
  CHECK(position(log, 6) != -1);
  CHECK(position(log, 5) == -1);
  CHECK(f.wire_clean());
}

TEMPLATE_TEST_CASE("proxy conformance: a value reached before its semaphore failed stays reached for a late wait",
                   "[mpi][conformance][failure]", PROXY_FIXTURES) {
  // The suite's case on proxies: Z's proxy reaches 1 and then fails (the
  // owner's order) before X and Y move, so the waiting queue arms its wait
  // on Z's proxy, the third of three, after Z's proxy failed. It succeeds.
  TestType f;
  auto& q = f.make_queue(kWaiter);
  auto x = f.make_remote();
  auto y = f.make_remote();
  auto z = f.make_remote();
  auto& done = f.make_semaphore();
  REQUIRE(q.submit({{&x.proxy, 1}, {&y.proxy, 1}, {&z.proxy, 1}}, {{&done, 1}}, f.op(1)));
  REQUIRE(z.exported.signal(1));
  REQUIRE(z.exported.fail(causal::error{errc::device_lost, "conformance: z failed after reaching 1"}));
  REQUIRE(causal::test::eventually([&] { return z.proxy.failed(); }, kDeadline));
  CHECK(z.proxy.value() == 1);
  REQUIRE(x.exported.signal(1));
  REQUIRE(y.exported.signal(1));
  CHECK(f.wait_value(done, 1));
  REQUIRE(f.finish());
  CHECK(position(f.log(), 1) == 0);
  // A host wait armed now succeeds too; one above the frozen value fails.
  CHECK(f.wait_value(z.proxy, 1));
  CHECK(f.wait_value(z.proxy, 2).code() == errc::device_lost);
  CHECK(f.wire_clean());
}

TEMPLATE_TEST_CASE("proxy conformance: bad waits on proxies are rejected and change nothing",
                   "[mpi][conformance]", PROXY_FIXTURES) {
  TestType f;
  auto& owner_queue = f.make_queue(kOwner);
  auto& q = f.make_queue(kWaiter);
  auto s = f.make_remote();
  auto broken = f.make_remote();
  auto withdrawn = f.make_remote();
  auto& done = f.make_semaphore();
  REQUIRE(owner_queue.submit({}, {{&s.exported, 3}}, f.op(1)));
  // The owner's repeated value is refused by the core, and no news of it
  // reaches the proxy (checked below: its value 3 has producer epoch 1).
  auto repeated = owner_queue.submit({}, {{&s.exported, 3}}, f.op(2));
  CHECK_FALSE(repeated);
  REQUIRE(q.submit({{&s.proxy, 3}}, {{&done, 1}}, f.op(3)));
  // A null semaphore...
  auto null_wait = q.submit({{nullptr, 1}}, {}, f.op(4));
  REQUIRE_FALSE(null_wait);
  CHECK(null_wait.error_value().code() == errc::invalid_argument);
  // ...a proxy the owner failed (refused with the owner's code)...
  REQUIRE(broken.exported.fail(causal::error{errc::device_lost, "conformance: broken"}));
  REQUIRE(causal::test::eventually([&] { return broken.proxy.failed(); }, kDeadline));
  auto on_broken = q.submit({{&broken.proxy, 1}}, {}, f.op(5));
  REQUIRE_FALSE(on_broken);
  CHECK(on_broken.error_value().code() == errc::device_lost);
  // ...and a proxy whose export was withdrawn (cancelled, node.hpp).
  REQUIRE(f.node(kOwner).withdraw(withdrawn.id).ok());
  REQUIRE(causal::test::eventually([&] { return withdrawn.proxy.failed(); }, kDeadline));
  CHECK(withdrawn.proxy.failure()->code() == errc::cancelled);
  auto on_withdrawn = q.submit({{&withdrawn.proxy, 1}}, {}, f.op(6));
  REQUIRE_FALSE(on_withdrawn);
  CHECK(on_withdrawn.error_value().code() == errc::cancelled);
  CHECK(q.epoch() == 1);
  CHECK(owner_queue.epoch() == 1);
  REQUIRE(f.wait_value(done, 1));
  REQUIRE(f.finish());
  CHECK(f.log() == std::vector<int>{1, 3});
  const auto at = s.proxy.frontier_at(3);
  REQUIRE(at);
  CHECK(at->producer == frontier_entry{owner_queue.axis(), 1});
  CHECK(f.wire_clean());
}
