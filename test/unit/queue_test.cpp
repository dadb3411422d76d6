// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Tests for <causal/queue.hpp>: every tier of wait elision (0 reached and
// untainted; 1 same queue; 1 producer covered by knowledge, also through an
// overflow-tainted frontier; 2 device wait importing the frontier; 3 host
// deferral with pump() and FIFO order behind a deferred submission), the
// three-queue transitivity example, the knowledge invariant (own
// axis pinned at the epoch), what a signal announces, the two things that
// are never elided (external values, waits before any signal), validation
// errors that change nothing, backend failures that strand no waiter, the
// stats counters, retire()/track_completion, the recording backend's FIFO
// device model, and the promise that an elided submit never allocates.
//
// Axes: queue axes are A, B, C (m0.queue.1 ..), other axes X, Y, ... are
// only ever learnt. Operation tags are arbitrary numbers that name the
// submission in the backend's log.

#include <causal/completion.hpp>
#include <causal/frontier.hpp>
#include <causal/queue.hpp>
#include <causal/semaphore.hpp>

#include "catch.hpp"
#include "string_makers.hpp"
#include "counting_new.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using causal::axis;
using causal::errc;
using causal::frontier;
using causal::frontier_entry;
using causal::semaphore;

const axis A = causal::make_axis(0, 0, causal::domain::queue, 1).value();
const axis B = causal::make_axis(0, 0, causal::domain::queue, 2).value();
const axis C = causal::make_axis(0, 0, causal::domain::queue, 3).value();
const axis X = causal::make_axis(0, 0, causal::domain::queue, 100).value();
const axis Y = causal::make_axis(0, 0, causal::domain::queue, 101).value();

/// Axis number `i` of a block of learnt axes (none of them a queue above).
axis other(std::uint64_t i) { return causal::make_axis(0, 0, causal::domain::host, 1 + i).value(); }

using queue = causal::recording_queue<true>;             // timeline waits (tiers 0-2)
using deferring_queue = causal::recording_queue<false>;  // binary events (tier 3)
using backend = queue::backend_type;
using kind = backend::event_kind;
using wait = queue::wait_type;
using signal = queue::signal_type;
static_assert(std::is_same_v<deferring_queue::wait_type, wait>);
static_assert(causal::queue_backend<backend>);
static_assert(causal::queue_backend<deferring_queue::backend_type>);

/// The events of a backend's log, oldest first.
template <class Backend>
std::vector<typename Backend::event> events(const Backend& b) {
  std::vector<typename Backend::event> out;
  for (std::size_t i = 0; i < b.event_count(); ++i) out.push_back(b.event_at(i));
  return out;
}

/// True when the log holds a wait event on (s, v).
template <class Backend>
bool issued_wait(const Backend& b, const semaphore& s, std::uint64_t v) {
  for (const auto& e : events(b)) {
    if (e.kind == Backend::event_kind::wait && e.semaphore == &s && e.value == v) return true;
  }
  return false;
}

/// The tags of the execute events, in log order.
template <class Backend>
std::vector<std::uint64_t> executed_tags(const Backend& b) {
  std::vector<std::uint64_t> out;
  for (const auto& e : events(b)) {
    if (e.kind == Backend::event_kind::execute) out.push_back(e.tag);
  }
  return out;
}

/// Submits and requires success; returns the epoch.
template <class Q>
std::uint64_t submit_ok(Q& q, std::initializer_list<wait> waits,
                        std::initializer_list<signal> signals, std::uint64_t tag) {
  const auto r = q.submit(waits, signals, tag);
  REQUIRE(r.ok());
  return r->epoch;
}

/// Completes everything the queue's backend can complete; returns the count.
template <class Q>
std::size_t complete_all(Q& q) {
  std::size_t n = 0;
  while (const std::uint64_t e = q.backend().complete_next()) {
    q.retire(e);
    ++n;
  }
  return n;
}

bool same_stats(const causal::queue_stats& a, const causal::queue_stats& b) {
  return a.submissions == b.submissions && a.elided_reached == b.elided_reached &&
         a.elided_same_queue == b.elided_same_queue && a.elided_dominated == b.elided_dominated &&
         a.device_waits == b.device_waits && a.host_deferrals == b.host_deferrals &&
         a.signals == b.signals;
}

/// A completion tracker stand-in: records every advance.
struct fake_tracker {
  std::vector<std::pair<axis, std::uint64_t>> calls;
  void advance(axis a, std::uint64_t epoch) { calls.emplace_back(a, epoch); }
};

/// Where a timepoint callback writes what it saw.
struct recorded_outcome {
  bool fired = false;
  causal::status seen{};
  static void record(causal::semaphore_timepoint& node, causal::status st) noexcept {
    auto* self = static_cast<recorded_outcome*>(node.user_data());
    self->fired = true;
    self->seen = st;
  }
};

}  // namespace

//===-- basics -----------------------------------------------------------------===//

TEST_CASE("queue: a new queue is at epoch 0 and knows nothing but itself", "[queue][basics]") {
  queue q{A};
  CHECK(q.axis() == A);
  CHECK(q.epoch() == 0);
  CHECK(q.knowledge().epoch_of(A) == 0);
  CHECK(q.knowledge().empty());
  CHECK(q.completed_epoch() == 0);
  CHECK(q.deferred_count() == 0);
  CHECK(same_stats(q.stats(), causal::queue_stats{}));
  CHECK(q.stats().waits_elided() == 0);
}

TEST_CASE("queue: each submit executes once, advances the epoch and pins the own axis at it",
          "[queue][basics][knowledge]") {
  queue q{A};
  for (std::uint64_t i = 1; i <= 5; ++i) {
    const auto r = q.submit({}, {}, 100 + i);
    REQUIRE(r.ok());
    CHECK(r->epoch == i);
    CHECK_FALSE(r->deferred);
    CHECK(q.epoch() == i);
    CHECK(q.knowledge().epoch_of(A) == i);
  }
  CHECK(executed_tags(q.backend()) == std::vector<std::uint64_t>{101, 102, 103, 104, 105});
  const auto ev = events(q.backend());
  REQUIRE(ev.size() == 5);
  for (std::size_t i = 0; i < ev.size(); ++i)
    CHECK(ev[i].value == i + 1);  // execute carries the epoch
  CHECK(q.stats().submissions == 5);
}

TEST_CASE("queue: knowledge keeps the own axis at the epoch even when learning overflows it",
          "[queue][knowledge][overflow]") {
  queue q{A};
  submit_ok(q, {}, {}, 1);
  // Twelve learnt axes at large epochs plus A:1 need 13 entries in a
  // capacity-12 frontier: the smallest epoch would go, but A is pinned.
  frontier big;
  for (std::uint64_t i = 0; i < frontier::capacity; ++i) big.insert_or_raise(other(i), 100 + i);
  q.learn(big);
  CHECK(q.knowledge().tainted());
  CHECK(q.knowledge().epoch_of(A) == 1);
  CHECK(q.knowledge().size() == frontier::capacity);
  submit_ok(q, {}, {}, 2);
  CHECK(q.knowledge().epoch_of(A) == 2);
  // learn() adds what the caller knows; the own axis stays.
  q.learn(frontier{{X, 1000}});
  CHECK(q.knowledge().epoch_of(A) == 2);
  CHECK(q.knowledge().epoch_of(X) == 1000);
  CHECK(q.knowledge().epoch_of(other(0)) == 0);  // the smallest learnt epoch went
  // Even an own-axis entry below the epoch cannot lower it.
  q.learn(frontier{{A, 1}});
  CHECK(q.knowledge().epoch_of(A) == 2);
}

TEST_CASE("queue: a signal announces the queue's knowledge with producer (axis, epoch)",
          "[queue][signal]") {
  queue q{A};
  semaphore s;
  q.learn(frontier{{X, 7}});
  submit_ok(q, {}, {}, 1);
  const std::uint64_t e = submit_ok(q, {}, {signal{&s, 5}}, 2);
  CHECK(e == 2);
  CHECK(q.stats().signals == 1);
  auto announced = s.frontier_at(5);
  REQUIRE(announced);
  CHECK_FALSE(announced->reached);
  CHECK(announced->signal_value == 5);
  CHECK(announced->producer == frontier_entry{A, 2});
  CHECK(announced->frontier == q.knowledge());
  CHECK(announced->frontier == frontier{{A, 2}, {X, 7}});
  CHECK(s.state_of(5) == causal::value_state::submitted);
  CHECK(s.value() == 0);
  // The signal is in the log after the execute.
  const auto ev = events(q.backend());
  REQUIRE(ev.size() == 3);
  CHECK(ev[1].kind == kind::execute);
  CHECK(ev[2].kind == kind::signal);
  CHECK(ev[2].semaphore == &s);
  CHECK(ev[2].value == 5);
  // The device completes both operations: the signal reaches 5 with the
  // recorded frontier and producer.
  CHECK(q.backend().complete_next() == 1);
  CHECK(s.value() == 0);
  CHECK(q.backend().complete_next() == 2);
  CHECK(s.value() == 5);
  announced = s.frontier_at(5);
  REQUIRE(announced);
  CHECK(announced->reached);
  CHECK(announced->producer == frontier_entry{A, 2});
  CHECK(announced->frontier == frontier{{A, 2}, {X, 7}});
  CHECK(q.backend().complete_next() == 0);
}

//===-- tier 0 --------------------------------------------------------------------===//

TEST_CASE("queue: tier 0: a reached, untainted value imports its frontier without a device wait",
          "[queue][tier0]") {
  queue q{A};
  semaphore s;
  REQUIRE(s.signal(1, frontier{{X, 3}, {Y, 9}}));
  submit_ok(q, {wait{&s, 1}}, {}, 1);
  CHECK(q.stats().elided_reached == 1);
  CHECK(q.stats().device_waits == 0);
  CHECK(q.backend().count(kind::wait) == 0);
  CHECK(q.knowledge() == frontier{{A, 1}, {X, 3}, {Y, 9}});

  SECTION("a waiter imports the first signal that reached its value, not a later one") {
    REQUIRE(s.signal(4, frontier{{X, 50}}));
    queue late{B};
    submit_ok(late, {wait{&s, 1}}, {}, 1);
    CHECK(late.stats().elided_reached == 1);
    CHECK(late.knowledge().epoch_of(X) == 3);
    submit_ok(late, {wait{&s, 2}}, {}, 2);  // first reached by the signal of 4
    CHECK(late.knowledge().epoch_of(X) == 50);
    CHECK(late.stats().elided_reached == 2);
  }
  SECTION("a value that left the history ring still elides (inexact superset of reached work)") {
    for (std::uint64_t v = 2; v <= 2 + semaphore::history_depth; ++v) {
      REQUIRE(s.signal(v, frontier{{Y, 9 + v}}));
    }
    const auto imported = s.frontier_at(1);
    REQUIRE(imported);
    CHECK_FALSE(imported->exact);
    queue r{B};
    submit_ok(r, {wait{&s, 1}}, {}, 1);
    CHECK(r.stats().elided_reached == 1);
    CHECK(r.backend().count(kind::wait) == 0);
    CHECK(r.knowledge().epoch_of(X) == 3);
  }
}

TEST_CASE("queue: tier 0 after the device completed another queue's signal", "[queue][tier0]") {
  queue a{A};
  queue b{B};
  semaphore s;
  a.learn(frontier{{X, 2}});
  submit_ok(a, {}, {signal{&s, 1}}, 1);
  REQUIRE(complete_all(a) == 1);
  REQUIRE(s.value() == 1);
  submit_ok(b, {wait{&s, 1}}, {}, 10);
  CHECK(b.stats().elided_reached == 1);
  CHECK(b.backend().count(kind::wait) == 0);
  CHECK(b.knowledge() == frontier{{A, 1}, {B, 1}, {X, 2}});
}

//===-- tier 1 --------------------------------------------------------------------===//

TEST_CASE("queue: tier 1: a value this queue signalled is ordered by its FIFO",
          "[queue][tier1][same_queue]") {
  queue q{A};
  semaphore s;
  submit_ok(q, {}, {signal{&s, 1}}, 1);
  REQUIRE(s.value() == 0);  // submitted, not reached
  submit_ok(q, {wait{&s, 1}}, {}, 2);
  CHECK(q.stats().elided_same_queue == 1);
  CHECK(q.stats().device_waits == 0);
  CHECK(q.backend().count(kind::wait) == 0);
  // A value below the one submitted: the first signal to reach it is ours too.
  submit_ok(q, {}, {signal{&s, 5}}, 3);
  submit_ok(q, {wait{&s, 3}}, {}, 4);
  CHECK(q.stats().elided_same_queue == 2);
  CHECK(q.backend().count(kind::wait) == 0);
  // The device still runs them in order.
  CHECK(complete_all(q) == 4);
  CHECK(s.value() == 5);
}

TEST_CASE("queue: tier 1: knowledge covering the producer entry elides the wait",
          "[queue][tier1][dominated]") {
  queue a{A};
  queue b{B};
  semaphore s;
  semaphore t;
  submit_ok(a, {}, {signal{&s, 1}}, 1);  // producer A:1
  submit_ok(a, {}, {signal{&t, 1}}, 2);  // producer A:2, knows A:2
  // B learns A:2 through a device wait on T; S >= 1 then needs no wait.
  submit_ok(b, {wait{&t, 1}}, {}, 10);
  CHECK(b.stats().device_waits == 1);
  CHECK(b.knowledge().epoch_of(A) == 2);
  submit_ok(b, {wait{&s, 1}}, {}, 11);
  CHECK(b.stats().elided_dominated == 1);
  CHECK(b.stats().device_waits == 1);
  CHECK(b.backend().count(kind::wait) == 1);
  CHECK_FALSE(issued_wait(b.backend(), s, 1));
}

TEST_CASE("queue: tier 1 trusts the producer entry of a frontier tainted by overflow",
          "[queue][tier1][dominated][taint]") {
  queue a{A};
  queue b{B};
  semaphore s;
  semaphore t;
  frontier big;
  for (std::uint64_t i = 0; i < frontier::capacity; ++i) big.insert_or_raise(other(i), 100 + i);
  a.learn(big);
  submit_ok(a, {}, {}, 1);
  REQUIRE(a.knowledge().tainted());
  submit_ok(a, {}, {signal{&s, 1}}, 2);
  const auto announced = s.frontier_at(1);
  REQUIRE(announced);
  REQUIRE(announced->frontier.tainted());
  REQUIRE(announced->producer == frontier_entry{A, 2});
  CHECK_FALSE(causal::dominates(frontier{{A, 2}}, announced->frontier));  // the rule's other side

  b.learn(frontier{{A, 2}});  // e.g. from a host wait
  submit_ok(b, {wait{&s, 1}}, {}, 10);
  CHECK(b.stats().elided_dominated == 1);
  CHECK(b.backend().count(kind::wait) == 0);

  // B imported the overflowed frontier: its knowledge is tainted and lost
  // its smallest entries, A:2 among them (knowing less is safe); B stays.
  CHECK(b.knowledge().tainted());
  CHECK(b.knowledge().epoch_of(B) == 1);

  SECTION("a tainted frontier without a producer entry never elides by dominance") {
    queue c{C};
    c.learn(frontier{{A, 2}});
    frontier tainted_f{{A, 1}};
    tainted_f.set_tainted();
    REQUIRE(t.submit_signal(3, tainted_f));  // a host announcement: no producer
    submit_ok(c, {wait{&t, 3}}, {}, 11);
    CHECK(c.stats().device_waits == 1);
    CHECK(issued_wait(c.backend(), t, 3));
  }
  SECTION("an untainted frontier without a producer entry never elides by dominance either") {
    // The announcer's frontier says what it knew, not that it will signal:
    // dominating it proves nothing about T >= 3.
    queue c{C};
    c.learn(frontier{{A, 2}});
    REQUIRE(t.submit_signal(3, frontier{{A, 1}}));
    submit_ok(c, {wait{&t, 3}}, {}, 11);
    CHECK(c.stats().elided_dominated == 0);
    CHECK(c.stats().device_waits == 1);
    CHECK(issued_wait(c.backend(), t, 3));
  }
}

TEST_CASE("queue: an announcement without a producer elides no wait while the value is "
          "unreached; once reached, tier 0 applies",
          "[queue][tier1][tier0]") {
  // submit_signal(S, 5, {}) by a host that may never signal: an empty
  // frontier is dominated by every knowledge, yet S is still 0.
  semaphore s;
  REQUIRE(s.submit_signal(5, frontier{}));
  queue a{A}, b{B};
  submit_ok(a, {wait{&s, 5}}, {}, 1);
  b.learn(frontier{{A, 9}, {X, 9}});
  submit_ok(b, {wait{&s, 3}}, {}, 2);  // a higher announced value covers 3 no better
  CHECK(a.stats().waits_elided() == 0);
  CHECK(b.stats().waits_elided() == 0);
  CHECK(issued_wait(a.backend(), s, 5));
  CHECK(issued_wait(b.backend(), s, 3));
  // Neither operation may complete before the host signals.
  CHECK(a.backend().complete_next() == 0);
  CHECK(b.backend().complete_next() == 0);
  REQUIRE(s.signal(5));
  CHECK(a.backend().complete_next() == 1);
  CHECK(b.backend().complete_next() == 1);
  submit_ok(a, {wait{&s, 5}}, {}, 3);
  CHECK(a.stats().elided_reached == 1);
}

TEST_CASE("queue: tier 1 is not taken when the producer is not covered", "[queue][tier1][tier2]") {
  queue a{A};
  queue b{B};
  semaphore s;
  submit_ok(a, {}, {}, 1);
  submit_ok(a, {}, {signal{&s, 1}}, 2);  // producer A:2
  b.learn(frontier{{A, 1}});             // knows A:1 only
  submit_ok(b, {wait{&s, 1}}, {}, 10);
  CHECK(b.stats().waits_elided() == 0);
  CHECK(b.stats().device_waits == 1);
  CHECK(issued_wait(b.backend(), s, 1));
}

//===-- tier 2 --------------------------------------------------------------------===//

TEST_CASE("queue: tier 2: a device wait is issued and the signal's frontier is imported",
          "[queue][tier2]") {
  queue a{A};
  queue b{B};
  semaphore s;
  a.learn(frontier{{X, 5}});
  submit_ok(a, {}, {signal{&s, 1}}, 1);
  const auto r = b.submit({wait{&s, 1}}, {}, 10);
  REQUIRE(r.ok());
  CHECK(b.stats().device_waits == 1);
  CHECK(b.stats().waits_elided() == 0);
  CHECK(b.knowledge() == frontier{{A, 1}, {B, 1}, {X, 5}});
  const auto ev = events(b.backend());
  REQUIRE(ev.size() == 2);
  CHECK(ev[0].kind == kind::wait);
  CHECK(ev[0].semaphore == &s);
  CHECK(ev[0].value == 1);
  CHECK(ev[1].kind == kind::execute);
  CHECK(ev[1].tag == 10);
  // The device honours the wait: B's op completes only after A's signal.
  CHECK(b.backend().complete_next() == 0);
  CHECK(a.backend().complete_next() == 1);
  CHECK(b.backend().complete_next() == 1);
}

TEST_CASE("queue: a device wait on a value below the submitted one imports nothing",
          "[queue][tier2][knowledge]") {
  // A valid program in which the submitted record for S = 10 is not the
  // first to reach S >= 5: A's signal waits for T, and B, submitted later,
  // signals S = 7 and then T. C's wait on S >= 5 is met by B's 7 while A
  // has not run, so C must not learn A:1 from the record of 10.
  queue a{A};
  queue b{B};
  queue c{C};
  semaphore s;
  semaphore t;
  semaphore after_c;
  semaphore mark;
  submit_ok(a, {wait{&t, 1}}, {signal{&s, 10}, signal{&mark, 1}}, 1);
  submit_ok(c, {wait{&s, 5}}, {signal{&after_c, 1}}, 2);
  CHECK(c.stats().device_waits == 1);
  CHECK(c.knowledge().epoch_of(A) == 0);
  submit_ok(b, {}, {signal{&s, 7}, signal{&t, 1}}, 3);
  CHECK(complete_all(b) == 1);
  CHECK(complete_all(c) == 1);      // C ran...
  CHECK(a.completed_epoch() == 0);  // ...before A
  // A consumer of C's signal must still wait for A's work.
  queue d{causal::make_axis(0, 0, causal::domain::queue, 4).value()};
  submit_ok(d, {wait{&after_c, 1}}, {}, 4);
  CHECK(d.stats().elided_reached == 1);
  CHECK(d.knowledge().epoch_of(A) == 0);
  submit_ok(d, {wait{&mark, 1}}, {}, 5);
  CHECK(d.stats().device_waits == 1);
  CHECK(issued_wait(d.backend(), mark, 1));
  CHECK(complete_all(d) == 1);  // blocked on A's signal
  CHECK(complete_all(a) == 1);
  CHECK(complete_all(d) == 1);

  SECTION("a submitted record for exactly the value is imported") {
    semaphore u;
    submit_ok(a, {}, {signal{&u, 3}}, 5);
    submit_ok(c, {wait{&u, 3}}, {}, 6);
    CHECK(c.knowledge().epoch_of(A) == 2);
  }
  SECTION("the same wait, elided because the producer is known, imports the record") {
    semaphore u;
    submit_ok(a, {}, {signal{&u, 10}}, 5);
    c.learn(frontier{{A, 2}, {X, 0}});
    submit_ok(c, {wait{&u, 4}}, {}, 6);
    CHECK(c.stats().elided_dominated == 1);
  }
}

TEST_CASE("queue: a wait before any signal is never elided and imports nothing",
          "[queue][tier2][wait_before_signal]") {
  queue a{A};
  queue b{B};
  semaphore s;
  b.learn(frontier{{A, 10}});  // knowledge covers everything A will ever do here
  submit_ok(b, {wait{&s, 1}}, {}, 10);
  CHECK(b.stats().device_waits == 1);
  CHECK(b.stats().waits_elided() == 0);
  CHECK(b.knowledge() == frontier{{A, 10}, {B, 1}});
  // Even this queue's own later signal does not let an earlier wait go.
  submit_ok(b, {wait{&s, 2}}, {}, 11);
  CHECK(b.stats().device_waits == 2);
  // Then A signals and the device runs everything.
  submit_ok(a, {}, {signal{&s, 2}}, 1);
  CHECK(b.backend().complete_next() == 0);
  CHECK(complete_all(a) == 1);
  CHECK(complete_all(b) == 2);
}

//===-- tier 3 --------------------------------------------------------------------===//

TEST_CASE("queue: tier 3: a binary-event backend defers a wait-before-signal until pump()",
          "[queue][tier3][defer]") {
  deferring_queue a{A};
  deferring_queue b{B};
  semaphore s;
  semaphore out;
  const auto r1 = b.submit({wait{&s, 1}}, {signal{&out, 1}}, 10);
  REQUIRE(r1.ok());
  CHECK(r1->deferred);
  CHECK(r1->epoch == 0);
  CHECK(b.epoch() == 0);
  CHECK(b.deferred_count() == 1);
  CHECK(b.stats().host_deferrals == 1);
  CHECK(b.stats().submissions == 0);
  CHECK(b.backend().total_events() == 0);
  CHECK_FALSE(out.frontier_at(1));  // its signal is not announced yet

  // FIFO: a later submission with no waits at all queues behind it.
  const auto r2 = b.submit({}, {}, 11);
  REQUIRE(r2.ok());
  CHECK(r2->deferred);
  CHECK(b.deferred_count() == 2);
  CHECK(b.stats().host_deferrals == 2);

  // Nothing to do while S >= 1 has no submitted signal.
  auto pumped = b.pump();
  REQUIRE(pumped.ok());
  CHECK(*pumped == 0);
  CHECK(b.deferred_count() == 2);

  submit_ok(a, {}, {signal{&s, 1}}, 1);
  pumped = b.pump();
  REQUIRE(pumped.ok());
  CHECK(*pumped == 2);
  CHECK(b.deferred_count() == 0);
  CHECK(b.epoch() == 2);
  CHECK(executed_tags(b.backend()) == std::vector<std::uint64_t>{10, 11});
  CHECK(b.stats().device_waits == 1);
  CHECK(issued_wait(b.backend(), s, 1));
  CHECK(b.knowledge().epoch_of(A) == 1);
  const auto announced = out.frontier_at(1);
  REQUIRE(announced);
  CHECK(announced->producer == frontier_entry{B, 1});
  CHECK(b.stats().submissions == 2);
  CHECK(b.stats().host_deferrals == 2);

  // Nothing left: pump is a no-op, and new submissions run at once.
  pumped = b.pump();
  REQUIRE(pumped.ok());
  CHECK(*pumped == 0);
  const auto r3 = b.submit({}, {}, 12);
  REQUIRE(r3.ok());
  CHECK_FALSE(r3->deferred);
  CHECK(r3->epoch == 3);
}

TEST_CASE("queue: tier 3: a deferred wait that becomes elidable is elided when pumped",
          "[queue][tier3][defer]") {
  deferring_queue q{A};
  semaphore s;
  semaphore gate;
  // The first submission waits for gate (unsubmitted) and holds the queue;
  // the second waits for S, which the queue itself signals only later.
  const auto r1 = q.submit({wait{&gate, 1}}, {}, 1);
  REQUIRE(r1.ok());
  REQUIRE(r1->deferred);
  REQUIRE(gate.signal(1, frontier{{X, 1}}));  // a host signal: reached, untainted
  auto pumped = q.pump();
  REQUIRE(pumped.ok());
  CHECK(*pumped == 1);
  CHECK(q.stats().elided_reached == 1);  // classified again at pump time
  CHECK(q.stats().device_waits == 0);
  CHECK(q.knowledge().epoch_of(X) == 1);
}

TEST_CASE("queue: tier 3: the deferral table grows; any number of submissions may be held",
          "[queue][tier3][defer]") {
  // Held submissions keep their FIFO order across the growth of the table,
  // and pumping them after the signal executes every one, in order.
  using deep_queue = causal::basic_queue<frontier, causal::recording_backend<semaphore, false, 4096>>;
  deep_queue q{A};
  semaphore s;
  constexpr std::size_t held = 40 * deep_queue::max_deferred;
  for (std::size_t i = 0; i < held; ++i) {
    const auto r = q.submit({wait{&s, 1}}, {}, i);
    REQUIRE(r.ok());
    REQUIRE(r->deferred);
  }
  CHECK(q.deferred_count() == held);
  CHECK(q.stats().host_deferrals == held);
  REQUIRE(s.signal(1, frontier{}));
  const auto pumped = q.pump();
  REQUIRE(pumped.ok());
  CHECK(*pumped == held);
  CHECK(q.epoch() == held);
  const auto tags = executed_tags(q.backend());
  REQUIRE(tags.size() == held);
  for (std::size_t i = 0; i < held; ++i) CHECK(tags[i] == i);
}

TEST_CASE(
    "queue: tier 3: a deferred submission whose wait semaphore fails is dropped and fails "
    "its signals",
    "[queue][tier3][defer][errors]") {
  deferring_queue q{A};
  semaphore s;
  semaphore out;
  semaphore later;
  REQUIRE(q.submit({wait{&s, 1}}, {signal{&out, 1}}, 1).ok());
  REQUIRE(q.submit({}, {signal{&later, 1}}, 2).ok());
  REQUIRE(q.deferred_count() == 2);
  s.fail(causal::error{errc::device_lost, "test: producer lost"});
  const auto pumped = q.pump();
  REQUIRE_FALSE(pumped.ok());
  CHECK(pumped.code() == errc::device_lost);
  CHECK(q.deferred_count() == 1);
  REQUIRE(out.failure());
  CHECK(out.failure()->code() == errc::device_lost);
  CHECK(out.wait_for(1, std::chrono::seconds(5)).code() == errc::device_lost);  // not stranded
  CHECK_FALSE(later.failed());
  const auto rest = q.pump();
  REQUIRE(rest.ok());
  CHECK(*rest == 1);
  CHECK(executed_tags(q.backend()) == std::vector<std::uint64_t>{2});
}

TEST_CASE("queue: tier 3: a held submission one wait of which failed fails only once its other waits "
          "are over",
          "[queue][tier3][defer][errors]") {
  // docs/queues.md, "Elision never changes an outcome": the other wait may
  // stand for a healthy signal still to come (here s = 1, which the
  // submission's own signal s = 2 would otherwise overtake by failing s).
  deferring_queue q{A};
  semaphore x, s;
  REQUIRE(q.submit({wait{&x, 1}, wait{&s, 1}}, {signal{&s, 2}}, 1).ok());
  REQUIRE(q.deferred_count() == 1);
  x.fail(causal::error{errc::device_lost, "test: x lost"});
  auto pumped = q.pump();
  REQUIRE(pumped.ok());
  CHECK(*pumped == 0);
  CHECK(q.deferred_count() == 1);  // still held: s >= 1 is neither met nor failed
  CHECK_FALSE(s.failed());
  REQUIRE(s.signal(1));             // the healthy signal arrives
  pumped = q.pump();
  REQUIRE_FALSE(pumped.ok());
  CHECK(pumped.code() == errc::device_lost);
  CHECK(q.deferred_count() == 0);
  CHECK(s.value() == 1);  // kept
  REQUIRE(s.failure());   // then failed by the dropped submission
  CHECK(executed_tags(q.backend()).empty());
}

//===-- the three-queue transitivity example ------------------------------------===//

TEST_CASE(
    "queue: transitivity: A signals S1; B waits S1, signals S2; C waits S1 and S2 → one "
    "device wait",
    "[queue][example][transitive]") {
  queue a{A};
  queue b{B};
  queue c{C};
  semaphore s1;
  semaphore s2;
  submit_ok(a, {}, {signal{&s1, 1}}, 1);
  submit_ok(b, {wait{&s1, 1}}, {signal{&s2, 1}}, 2);
  REQUIRE(b.stats().device_waits == 1);
  const auto s2_frontier = s2.frontier_at(1);
  REQUIRE(s2_frontier);
  REQUIRE(s2_frontier->frontier.epoch_of(A) == 1);  // B's signal carries A's entry

  SECTION("both waits in one submission") {
    submit_ok(c, {wait{&s1, 1}, wait{&s2, 1}}, {}, 3);
    CHECK(c.stats().device_waits == 1);
    CHECK(c.stats().elided_dominated == 1);
    CHECK_FALSE(issued_wait(c.backend(), s1, 1));
    CHECK(issued_wait(c.backend(), s2, 1));
    CHECK(c.knowledge() == frontier{{A, 1}, {B, 1}, {C, 1}});
  }
  SECTION("in the other order in the submission") {
    submit_ok(c, {wait{&s2, 1}, wait{&s1, 1}}, {}, 3);
    CHECK(c.stats().device_waits == 1);
    CHECK(c.stats().elided_dominated == 1);
    CHECK_FALSE(issued_wait(c.backend(), s1, 1));
  }
  SECTION("S2 first, then later S1: the S1 wait is elided by knowledge") {
    submit_ok(c, {wait{&s2, 1}}, {}, 3);
    CHECK(c.stats().device_waits == 1);
    submit_ok(c, {wait{&s1, 1}}, {}, 4);
    CHECK(c.stats().device_waits == 1);
    CHECK(c.stats().elided_dominated == 1);
    CHECK_FALSE(issued_wait(c.backend(), s1, 1));
  }
  SECTION("S1 first, then later S2: both need a device wait") {
    submit_ok(c, {wait{&s1, 1}}, {}, 3);
    submit_ok(c, {wait{&s2, 1}}, {}, 4);
    CHECK(c.stats().device_waits == 2);
    CHECK(c.stats().waits_elided() == 0);
  }
  // Whatever was elided, the device order still holds.
  CHECK(c.backend().complete_next() == 0);
  CHECK(complete_all(a) == 1);
  CHECK(complete_all(b) == 1);
  CHECK(complete_all(c) >= 1);
  CHECK(c.backend().complete_next() == 0);
}

TEST_CASE("queue: two waits that cover each other are not both elided", "[queue][transitive]") {
  queue a{A};
  queue c{C};
  semaphore s1;
  semaphore s2;
  // One operation signals both: the same producer entry A:1.
  submit_ok(a, {}, {signal{&s1, 1}, signal{&s2, 1}}, 1);
  submit_ok(c, {wait{&s1, 1}, wait{&s2, 1}}, {}, 2);
  CHECK(c.stats().device_waits == 1);
  CHECK(c.stats().elided_dominated == 1);
  CHECK(c.knowledge().epoch_of(A) == 1);
}

//===-- never elided ---------------------------------------------------------------===//

TEST_CASE("queue: values made by signal_external are never elided", "[queue][external]") {
  queue a{A};
  queue b{B};
  semaphore s;
  REQUIRE(s.signal_external(3));
  REQUIRE(s.is_tainted(3));
  b.learn(frontier{{A, 100}, {X, 100}});
  submit_ok(b, {wait{&s, 3}}, {}, 1);
  CHECK(b.stats().device_waits == 1);
  CHECK(b.stats().waits_elided() == 0);
  CHECK(issued_wait(b.backend(), s, 3));
  submit_ok(b, {wait{&s, 1}}, {}, 2);  // every value above the watermark
  CHECK(b.stats().device_waits == 2);

  SECTION("also when this queue waited for it before") {
    submit_ok(b, {wait{&s, 3}}, {}, 3);
    CHECK(b.stats().device_waits == 3);
  }
  SECTION("a later witnessed signal heals the taint: its values elide again") {
    submit_ok(a, {}, {signal{&s, 5}}, 1);
    CHECK(complete_all(a) == 1);
    REQUIRE_FALSE(s.is_tainted(3));
    submit_ok(b, {wait{&s, 3}}, {}, 3);
    CHECK(b.stats().device_waits == 2);
    CHECK(b.stats().elided_reached == 1);
  }
  SECTION("a submitted witnessed signal above the external value elides; the external one not") {
    submit_ok(a, {}, {signal{&s, 5}}, 1);
    submit_ok(b, {wait{&s, 5}}, {}, 3);  // knowledge covers A:1
    CHECK(b.stats().elided_dominated == 1);
    submit_ok(b, {wait{&s, 3}}, {}, 4);
    CHECK(b.stats().device_waits == 3);
  }
}

TEST_CASE("queue: an external value is not elided by the transitive pass either",
          "[queue][external][transitive]") {
  queue a{A};
  queue c{C};
  semaphore ext;
  semaphore s;
  REQUIRE(ext.signal_external(1));
  submit_ok(a, {}, {signal{&s, 1}}, 1);
  submit_ok(c, {wait{&ext, 1}, wait{&s, 1}}, {}, 2);
  CHECK(c.stats().device_waits == 2);
  CHECK(issued_wait(c.backend(), ext, 1));
}

//===-- validation -----------------------------------------------------------------===//

TEST_CASE("queue: invalid submissions return an error and change nothing",
          "[queue][errors][validation]") {
  queue q{A};
  semaphore s;
  semaphore t;
  semaphore failed;
  q.learn(frontier{{X, 2}});
  submit_ok(q, {}, {signal{&s, 3}}, 1);
  failed.fail(causal::error{errc::device_lost, "test: failed", 42});
  REQUIRE(t.signal(2, frontier{}));

  const frontier knowledge = q.knowledge();
  const causal::queue_stats stats = q.stats();
  const std::size_t events_before = q.backend().total_events();

  auto unchanged = [&] {
    CHECK(q.epoch() == 1);
    CHECK(q.knowledge() == knowledge);
    CHECK(same_stats(q.stats(), stats));
    CHECK(q.backend().total_events() == events_before);
    CHECK(q.deferred_count() == 0);
    CHECK(t.value() == 2);
    CHECK_FALSE(t.failed());
    CHECK_FALSE(t.frontier_at(3));
    CHECK_FALSE(s.failed());
  };

  SECTION("more than max_waits waits") {
    std::vector<wait> waits(queue::max_waits + 1, wait{&t, 1});
    const auto r = q.submit(std::span<const wait>(waits), {}, 9);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == errc::invalid_argument);
    CHECK(r.error_value().position() == queue::max_waits + 1);
    unchanged();
  }
  SECTION("max_waits waits are fine") {
    std::vector<wait> waits(queue::max_waits, wait{&t, 1});
    CHECK(q.submit(std::span<const wait>(waits), {}, 9).ok());
  }
  SECTION("more than max_signals signals") {
    std::vector<semaphore> many(queue::max_signals + 1);
    std::vector<signal> signals;
    for (auto& m : many) signals.push_back(signal{&m, 1});
    const auto r = q.submit({}, std::span<const signal>(signals), 9);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == errc::invalid_argument);
    for (auto& m : many) CHECK_FALSE(m.frontier_at(1));
    unchanged();
  }
  SECTION("a wait with a null semaphore") {
    const auto r = q.submit({wait{&t, 1}, wait{nullptr, 1}}, {signal{&t, 3}}, 9);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == errc::invalid_argument);
    CHECK(r.error_value().position() == 1);
    unchanged();
  }
  SECTION("a signal with a null semaphore") {
    const auto r = q.submit({}, {signal{&t, 3}, signal{nullptr, 1}}, 9);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == errc::invalid_argument);
    unchanged();
  }
  SECTION("a signal value not above the payload") {
    auto r = q.submit({}, {signal{&t, 2}}, 9);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == errc::not_increasing);
    r = q.submit({}, {signal{&t, 1}}, 9);
    CHECK(r.code() == errc::not_increasing);
    unchanged();
  }
  SECTION("a signal value already submitted") {
    const auto r = q.submit({}, {signal{&t, 3}, signal{&s, 3}}, 9);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == errc::invalid_argument);
    CHECK(s.frontier_at(3)->producer == frontier_entry{A, 1});  // the first announcement stays
    unchanged();
  }
  SECTION("the same semaphore signalled twice") {
    const auto r = q.submit({}, {signal{&t, 3}, signal{&t, 4}}, 9);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == errc::invalid_argument);
    unchanged();
  }
  SECTION("a wait on the value the submission signals, or a later one") {
    for (const std::uint64_t v : {3u, 4u}) {
      const auto r = q.submit({wait{&t, v}}, {signal{&t, 3}}, 9);
      REQUIRE_FALSE(r.ok());
      CHECK(r.code() == errc::invalid_argument);
      CHECK(r.error_value().position() == v);
      unchanged();
    }
    // The value before it is an ordinary wait.
    CHECK(q.submit({wait{&t, 2}}, {signal{&t, 3}}, 9).ok());
  }
  SECTION("a wait on a failed semaphore returns its failure") {
    const auto r = q.submit({wait{&t, 1}, wait{&failed, 1}}, {signal{&t, 3}}, 9);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == errc::device_lost);
    CHECK(r.error_value().position() == 42);
    unchanged();
  }
  SECTION("a signal of a failed semaphore returns its failure") {
    const auto r = q.submit({}, {signal{&t, 3}, signal{&failed, 1}}, 9);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == errc::device_lost);
    unchanged();
  }
  SECTION("the queue works normally afterwards") {
    REQUIRE_FALSE(q.submit({wait{nullptr, 1}}, {}, 9).ok());
    CHECK(submit_ok(q, {wait{&t, 2}}, {signal{&t, 3}}, 10) == 2);
  }
}

TEST_CASE("queue: validation also guards deferring queues, before anything is deferred",
          "[queue][errors][validation][tier3]") {
  deferring_queue q{A};
  semaphore s;
  semaphore t;
  REQUIRE(q.submit({wait{&s, 1}}, {}, 1).ok());  // deferred: the queue now holds
  REQUIRE(q.deferred_count() == 1);
  const auto r = q.submit({wait{nullptr, 1}}, {}, 2);
  CHECK(r.code() == errc::invalid_argument);
  const auto r2 = q.submit({}, {signal{&t, 0}}, 3);
  CHECK(r2.code() == errc::not_increasing);
  CHECK(q.deferred_count() == 1);
  CHECK(q.stats().host_deferrals == 1);
}

namespace {

/// A semaphore that runs `after_value_read` (once) right after its payload
/// is read: it puts a completion exactly between the payload check and the
/// announced-signal check of submit's validation.
class completing_semaphore : public semaphore {
 public:
  std::uint64_t value() const noexcept {
    const std::uint64_t v = semaphore::value();
    if (after_value_read) std::exchange(after_value_read, nullptr)();
    return v;
  }
  mutable std::function<void()> after_value_read;
};

}  // namespace

TEST_CASE("queue: a repeated signal value is rejected even when the first one completes while "
          "the repeat is validated",
          "[queue][errors][validation][race]") {
  // Regression: validation read the payload (below v), then the earlier
  // signal of v completed, then the announced-signal lookup saw v reached
  // and found no pending record of v -- so the repeat passed, executed,
  // and its signal failed the semaphore (the CPU conformance suite's "bad
  // submissions change nothing" saw epoch 2 and a failed wait once).
  using racing_queue =
      causal::basic_queue<frontier, causal::recording_backend<completing_semaphore, true>>;
  racing_queue q{A};
  completing_semaphore s;
  const auto first = q.submit({}, {racing_queue::signal_type{&s, 3}}, 1);
  REQUIRE(first.ok());
  bool completed = false;
  s.after_value_read = [&] {
    completed = q.backend().complete_next() == 1;
    q.retire(1);
  };
  const auto repeated = q.submit({}, {racing_queue::signal_type{&s, 3}}, 2);
  REQUIRE(completed);  // the completion did land inside the validation
  REQUIRE_FALSE(repeated.ok());
  CHECK(repeated.code() == errc::not_increasing);
  CHECK(q.epoch() == 1);
  CHECK(q.stats().submissions == 1);
  CHECK_FALSE(s.failed());
  CHECK(s.value() == 3);
  CHECK(s.wait(3).ok());
}

//===-- backend failures --------------------------------------------------------------===//

TEST_CASE("queue: a failed issue_wait executes nothing and fails the signals, stranding no waiter",
          "[queue][errors][backend]") {
  queue a{A};
  queue b{B};
  semaphore s;
  semaphore out1;
  semaphore out2;
  submit_ok(a, {}, {signal{&s, 1}}, 1);
  b.backend().fail_next_wait();
  const auto r = b.submit({wait{&s, 1}}, {signal{&out1, 1}, signal{&out2, 7}}, 10);
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == errc::device_lost);
  CHECK(b.epoch() == 0);
  CHECK(b.backend().count(kind::execute) == 0);
  CHECK(b.backend().count(kind::signal) == 0);
  CHECK(b.stats().submissions == 0);
  for (semaphore* o : {&out1, &out2}) {
    REQUIRE(o->failure());
    CHECK(o->failure()->code() == errc::device_lost);
    CHECK(o->wait_for(100, std::chrono::seconds(5)).code() == errc::device_lost);
  }
  CHECK_FALSE(s.failed());
  // The queue goes on.
  CHECK(submit_ok(b, {}, {}, 11) == 1);
}

TEST_CASE("queue: a failed execute fails the signals and leaves the epoch",
          "[queue][errors][backend]") {
  queue q{A};
  semaphore out;
  submit_ok(q, {}, {}, 1);
  q.backend().fail_next_execute();
  recorded_outcome outcome;
  causal::semaphore_timepoint tp{1, &recorded_outcome::record, &outcome};
  out.add_timepoint(tp);
  REQUIRE_FALSE(outcome.fired);
  const auto r = q.submit({}, {signal{&out, 1}}, 2);
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == errc::device_lost);
  CHECK(q.epoch() == 1);
  CHECK(q.knowledge().epoch_of(A) == 1);
  CHECK(executed_tags(q.backend()) == std::vector<std::uint64_t>{1});
  CHECK(outcome.fired);
  CHECK(outcome.seen.code() == errc::device_lost);
  CHECK(out.failed());
  CHECK(submit_ok(q, {}, {}, 3) == 2);
  CHECK(complete_all(q) == 2);
}

TEST_CASE("queue: a backend failure while pumping a deferred submission fails its signals",
          "[queue][errors][backend][tier3]") {
  deferring_queue q{A};
  semaphore s;
  semaphore out;
  REQUIRE(q.submit({wait{&s, 1}}, {signal{&out, 1}}, 1).ok());
  REQUIRE(s.signal(1, frontier{}));
  q.backend().fail_next_execute();
  const auto pumped = q.pump();
  REQUIRE_FALSE(pumped.ok());
  CHECK(pumped.code() == errc::device_lost);
  CHECK(q.deferred_count() == 0);
  CHECK(out.failure()->code() == errc::device_lost);
  CHECK(q.epoch() == 0);
}

TEST_CASE("queue: no room for a signal record refuses the whole submission before anything "
          "is issued; the semaphores stay usable",
          "[queue][errors][reserve]") {
  // The second signal's semaphore has a bounded table with one record, and
  // a host announcement already uses it. Checking its room only after the
  // operation ran would leave the operation on the device with a signal
  // nobody can announce, and fail `bounded` for good.
  using bounded_semaphore = causal::basic_semaphore<frontier, 4, 1, causal::pending_bounded>;
  using bounded_queue = causal::basic_queue<frontier, causal::recording_backend<bounded_semaphore>>;
  bounded_queue q{A};
  bounded_semaphore first, bounded, in;
  REQUIRE(bounded.submit_signal(9, frontier{}));
  REQUIRE(in.signal(1, frontier{}));
  const auto r = q.submit({{&in, 2}}, {{&first, 1}, {&bounded, 4}}, 7);
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == errc::resource_exhausted);
  CHECK(q.backend().total_events() == 0);  // no wait, no execute, no signal
  CHECK(q.epoch() == 0);
  CHECK(q.stats().submissions == 0);
  CHECK_FALSE(first.failed());
  CHECK_FALSE(bounded.failed());
  CHECK(first.pending_count() == 0);  // its reservation was given back
  CHECK(first.state_of(1) == causal::value_state::unsubmitted);
  // Once the host's signal frees the record, the same submission goes through.
  REQUIRE(bounded.signal(9));
  const auto again = q.submit({}, {{&first, 1}, {&bounded, 10}}, 8);
  REQUIRE(again.ok());
  CHECK(again->epoch == 1);
  CHECK(q.backend().complete_next() == 1);
  CHECK(first.value() == 1);
  CHECK(bounded.value() == 10);
}

TEST_CASE("queue: a whole pipeline of any depth is submitted before anything completes",
          "[queue][submit_ahead]") {
  // Three stages on three queues, 10 000 requests each, every request
  // waiting on the previous stage's signal for it: 30 000 submissions and
  // 10 000 outstanding signals per semaphore before the device runs any.
  using deep_backend = causal::recording_backend<semaphore, true, 65536>;
  using deep_queue = causal::basic_queue<frontier, deep_backend>;
  constexpr std::uint64_t requests = 10'000;
  // Each backend's log holds 64 Ki events (2 MiB): on the heap.
  const auto load_q = std::make_unique<deep_queue>(A);
  const auto compute_q = std::make_unique<deep_queue>(B);
  const auto store_q = std::make_unique<deep_queue>(C);
  deep_queue& load = *load_q;
  deep_queue& compute = *compute_q;
  deep_queue& store = *store_q;
  semaphore loaded, computed, stored;
  for (std::uint64_t r = 1; r <= requests; ++r) {
    REQUIRE(load.submit({}, {{&loaded, r}}, r).ok());
    REQUIRE(compute.submit({{&loaded, r}}, {{&computed, r}}, r).ok());
    REQUIRE(store.submit({{&computed, r}}, {{&stored, r}}, r).ok());
  }
  CHECK(loaded.pending_count() == requests);
  CHECK(stored.value() == 0);
  // Request r's signal comes from the previous stage's epoch r, never
  // covered yet: every cross-stage wait is a device wait.
  CHECK(compute.stats().device_waits == requests);
  // Drain the device round-robin; everything completes, in order.
  std::uint64_t done = 0;
  for (bool progress = true; progress;) {
    progress = false;
    for (deep_queue* q : {&load, &compute, &store}) {
      while (const std::uint64_t e = q->backend().complete_next()) {
        q->retire(e);
        progress = true;
        ++done;
      }
    }
  }
  CHECK(done == 3 * requests);
  CHECK(stored.value() == requests);
  CHECK(loaded.pending_count() == 0);
  const auto at = stored.frontier_at(requests);
  REQUIRE(at.has_value());
  CHECK(at->frontier.epoch_of(A) == requests);  // the whole chain is known
  CHECK(at->frontier.epoch_of(B) == requests);
}

TEST_CASE("queue: stats() may be read from another thread while the queue submits",
          "[queue][stats][threads]") {
  queue q{A};
  semaphore s;
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> last_seen{0};
  std::thread reader([&] {
    std::uint64_t seen = 0;
    while (!stop.load(std::memory_order_acquire)) {
      const causal::queue_stats st = q.stats();
      // Each counter only grows.
      if (st.submissions < seen) break;
      seen = st.submissions;
    }
    last_seen.store(seen, std::memory_order_relaxed);
  });
  for (std::uint64_t i = 1; i <= 20'000; ++i) {
    REQUIRE(q.submit({}, {{&s, i}}, i).ok());
    while (q.backend().complete_next() != 0) {
    }
  }
  stop.store(true, std::memory_order_release);
  reader.join();
  CHECK(last_seen.load(std::memory_order_relaxed) <= 20'000);
  CHECK(q.stats().submissions == 20'000);
}

TEST_CASE("recording_backend: an operation waiting on a failed semaphore fails its signals, "
          "and every later one too",
          "[queue][recording_backend][fail]") {
  queue q{A};
  semaphore in, out1, out2, later;
  submit_ok(q, {}, {}, 1);
  submit_ok(q, {wait{&in, 1}}, {signal{&out1, 1}, signal{&out2, 5}}, 2);  // device wait
  submit_ok(q, {}, {signal{&later, 1}}, 3);
  CHECK(q.backend().complete_next() == 1);
  CHECK(q.backend().complete_next() == 0);  // blocked on in >= 1
  REQUIRE(in.fail(causal::error{errc::device_lost, "producer lost"}));
  CHECK(q.backend().complete_next() == 0);  // fails instead of running
  REQUIRE(q.backend().failure());
  CHECK(q.backend().failure()->code() == errc::device_lost);
  for (semaphore* o : {&out1, &out2, &later}) {
    REQUIRE(o->failure());
    CHECK(o->failure()->code() == errc::device_lost);
    CHECK(o->wait_for(1, std::chrono::seconds(5)).code() == errc::device_lost);  // not stranded
  }
  // Sticky, like a device stream: a later submission fails its signals too.
  semaphore after;
  const auto r = q.submit({}, {signal{&after, 1}}, 4);
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == errc::device_lost);
  CHECK(after.failure()->code() == errc::device_lost);
}

//===-- stats ---------------------------------------------------------------------------===//

TEST_CASE("queue: stats count every tier, deferral, signal and submission", "[queue][stats]") {
  queue a{A};
  queue b{B};
  semaphore reached;
  semaphore own;
  semaphore from_a;
  semaphore from_a2;
  semaphore ext;
  REQUIRE(reached.signal(1, frontier{}));
  REQUIRE(ext.signal_external(1));
  submit_ok(a, {}, {signal{&from_a, 1}}, 1);
  submit_ok(a, {}, {signal{&from_a2, 1}}, 2);
  submit_ok(b, {}, {signal{&own, 1}}, 10);                   // 1 signal
  submit_ok(b, {wait{&reached, 1}, wait{&own, 1}}, {}, 11);  // reached, same_queue
  submit_ok(b, {wait{&from_a2, 1}, wait{&ext, 1}}, {}, 12);  // device, device
  submit_ok(b, {wait{&from_a, 1}}, {signal{&own, 2}}, 13);   // dominated (A:2 known)
  const auto& st = b.stats();
  CHECK(st.submissions == 4);
  CHECK(st.elided_reached == 1);
  CHECK(st.elided_same_queue == 1);
  CHECK(st.elided_dominated == 1);
  CHECK(st.device_waits == 2);
  CHECK(st.host_deferrals == 0);
  CHECK(st.signals == 2);
  CHECK(st.waits_elided() == 3);
  CHECK(b.backend().count(kind::wait) == st.device_waits);
  CHECK(b.backend().count(kind::execute) == st.submissions);
  CHECK(b.backend().count(kind::signal) == st.signals);
  CHECK(a.stats().signals == 2);
  CHECK(a.stats().submissions == 2);
}

//===-- completion ------------------------------------------------------------------------===//

TEST_CASE("queue: retire raises completed_epoch and forwards increases to the tracker",
          "[queue][completion]") {
  queue q{A};
  fake_tracker tracker;
  q.track_completion(tracker);
  for (int i = 0; i < 3; ++i) submit_ok(q, {}, {}, 1);
  CHECK(q.completed_epoch() == 0);
  CHECK(q.backend().complete_next() == 1);
  q.retire(1);
  CHECK(q.completed_epoch() == 1);
  q.retire(3);
  CHECK(q.completed_epoch() == 3);
  q.retire(2);  // lower: ignored
  q.retire(3);  // equal: ignored
  CHECK(q.completed_epoch() == 3);
  REQUIRE(tracker.calls.size() == 2);
  CHECK(tracker.calls[0] == std::pair<axis, std::uint64_t>{A, 1});
  CHECK(tracker.calls[1] == std::pair<axis, std::uint64_t>{A, 3});
}

TEST_CASE("queue: retire without a tracker only records", "[queue][completion]") {
  queue q{A};
  q.retire(4);
  CHECK(q.completed_epoch() == 4);
  q.retire(0);
  CHECK(q.completed_epoch() == 4);
}

TEST_CASE("queue: track_completion drives a real completion_tracker", "[queue][completion]") {
  causal::completion_tracker tracker;
  REQUIRE(tracker.register_axis(A));
  queue q{A};
  q.track_completion(tracker);
  submit_ok(q, {}, {}, 1);
  submit_ok(q, {}, {}, 2);
  CHECK(complete_all(q) == 2);
  CHECK(q.completed_epoch() == 2);
  CHECK(tracker.retired_epoch(A) == 2);
}

//===-- the recording backend -------------------------------------------------------------===//

TEST_CASE("recording_backend: completes in FIFO order, blocked by an unmet device wait",
          "[queue][recording_backend]") {
  queue q{A};
  semaphore s;
  semaphore out;
  submit_ok(q, {}, {}, 1);
  submit_ok(q, {wait{&s, 2}}, {signal{&out, 1}}, 2);  // wait-before-signal: device wait
  submit_ok(q, {}, {}, 3);
  CHECK(q.backend().complete_next() == 1);
  CHECK(q.backend().complete_next() == 0);  // blocked on S >= 2
  REQUIRE(s.signal(1, frontier{}));
  CHECK(q.backend().complete_next() == 0);
  REQUIRE(s.signal(2, frontier{}));
  CHECK(q.backend().complete_next() == 2);
  CHECK(out.value() == 1);
  CHECK(q.backend().complete_next() == 3);
  CHECK(q.backend().complete_next() == 0);
  CHECK(q.backend().count(kind::execute) == 3);
  CHECK(q.backend().total_events() == 5);
}

//===-- allocation ------------------------------------------------------------------------===//

TEST_CASE("queue: submits with elided or device waits never allocate", "[queue][alloc]") {
  queue a{A};
  queue b{B};
  semaphore reached;
  semaphore own;
  semaphore t;
  semaphore u;
  REQUIRE(reached.signal(1, frontier{{X, 1}}));
  const std::array<wait, 1> reached_wait{wait{&reached, 1}};
  const std::array<signal, 0> none{};
  const std::array<wait, 0> no_waits{};
  std::array<signal, 1> own_signal{signal{&own, 0}};
  std::array<wait, 1> own_wait{wait{&own, 0}};
  std::array<signal, 1> t_signal{signal{&t, 0}};
  std::array<signal, 1> u_signal{signal{&u, 0}};
  std::array<wait, 1> t_wait{wait{&t, 0}};
  std::array<wait, 1> u_wait{wait{&u, 0}};

  bool all_ok = true;
  std::size_t completed = 0;
  causal::test::allocation_guard guard;
  for (std::uint64_t i = 1; i <= 200; ++i) {
    t_signal[0].value = t_wait[0].value = i;
    u_signal[0].value = u_wait[0].value = i;
    own_signal[0].value = own_wait[0].value = i;
    all_ok = a.submit(no_waits, t_signal, i).ok() && all_ok;  // A:2i-1 signals T
    all_ok = a.submit(no_waits, u_signal, i).ok() && all_ok;  // A:2i signals U
    all_ok = b.submit(u_wait, none, i).ok() && all_ok;        // tier 2: device wait
    all_ok = b.submit(t_wait, none, i).ok() && all_ok;        // tier 1: A:2i-1 covered
    all_ok = b.submit(reached_wait, none, i).ok() && all_ok;  // tier 0
    all_ok = b.submit(no_waits, own_signal, i).ok() && all_ok;
    all_ok = b.submit(own_wait, none, i).ok() && all_ok;  // tier 1: same queue
    while (a.backend().complete_next() != 0) ++completed;
    while (b.backend().complete_next() != 0) ++completed;
  }
  const auto allocations = guard.allocations();
  CHECK(all_ok);
  CHECK(allocations == 0);
  CHECK(completed == 200 * 7);
  CHECK(b.stats().elided_reached == 200);
  CHECK(b.stats().elided_same_queue == 200);
  CHECK(b.stats().elided_dominated == 200);
  CHECK(b.stats().device_waits == 200);
}
