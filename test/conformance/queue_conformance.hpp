// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// The queue conformance suite: what every adapter's queue must do, written
// once and instantiated per adapter (the CPU adapter is the
// reference). It speaks only through a queue's submit/stats/knowledge and
// host-side semaphores, so a device adapter passes it unchanged.
//
// To instantiate: define CAUSAL_CONFORMANCE_FIXTURES as a comma-separated
// list of fixture types, then include this header in a Catch2 test file.
// A fixture is default-constructed per test case (it may SKIP by throwing
// nothing and returning false from `available()`), and provides:
//
//   using queue_type;                 submit(waits, signals, op) -> result<submission>,
//                                     stats(), knowledge(), axis(), epoch(),
//                                     completed_epoch(), track_completion(t)
//   using semaphore_type;             a causal::basic_semaphore instance
//   bool available();                 false: no device, the suite skips
//   queue_type& make_queue();         up to 4 queues, each with a fresh axis
//   semaphore_type& make_semaphore(); a fresh semaphore at 0
//   operation op(int tag);            an operation; when it runs it appends
//                                     `tag` to the fixture's execution log
//   std::vector<int> log();           tags in the order their operations ran
//                                     (call after finish())
//   causal::status finish();          waits until every queue is idle
//   void pump();                      gives a device with host completion a
//                                     chance to advance (may do nothing)
//
// The cases check: epoch order and completion on one queue; each elision
// tier (same queue, value reached, producer dominated, transitively implied
// by another wait of the same submission); that a cross-queue wait on an
// unreached value is issued and orders the operations; wait-before-signal
// (a wait submitted before its signal); frontier propagation to signalled
// semaphores; completion-tracker retirement; a failed semaphore failing
// the waiting queue's signals (no waiter stranded) and, stickily, every
// later operation of that queue (so no frontier claims an operation that
// never ran); only an operation's last signal carrying its own entry (a
// consumer of an earlier one issues its wait on the others); a failure
// failing an operation's signals only after its elided waits are met (a
// healthy signal they stand for is never lost); a value reached before its
// semaphore failed staying reached for a wait armed late; and bad input
// rejected with nothing changed.
#pragma once

#include <causal/completion.hpp>
#include <causal/frontier.hpp>
#include <causal/queue.hpp>
#include <causal/result.hpp>
#include <causal/semaphore.hpp>

#include "catch.hpp"
#include "string_makers.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#ifndef CAUSAL_CONFORMANCE_FIXTURES
#error "define CAUSAL_CONFORMANCE_FIXTURES (a list of fixture types) before including queue_conformance.hpp"
#endif

namespace causal_conformance {

/// Index of `tag` in `log`, or -1.
inline long position(const std::vector<int>& log, int tag) {
  const auto it = std::find(log.begin(), log.end(), tag);
  return it == log.end() ? -1 : static_cast<long>(it - log.begin());
}

/// Host wait with a generous limit (a hang fails the test instead).
template <class Fixture, class Semaphore>
causal::status host_wait(Fixture& f, Semaphore& s, std::uint64_t v) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (;;) {
    f.pump();
    const causal::status st =
        s.wait_until(v, std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(5)));
    if (st.code() != causal::errc::timeout || std::chrono::steady_clock::now() >= deadline) return st;
  }
}

}  // namespace causal_conformance

#define CAUSAL_CONFORMANCE_PROLOGUE \
  TestType f;                       \
  if (!f.available()) return

TEMPLATE_TEST_CASE("conformance: one queue runs its operations in epoch order and completes them",
                   "[conformance]", CAUSAL_CONFORMANCE_FIXTURES) {
  CAUSAL_CONFORMANCE_PROLOGUE;
  auto& q = f.make_queue();
  auto& s = f.make_semaphore();
  // Every 5th operation signals (8 signals outstanding at most: the
  // default semaphore's inline records, though more would grow its table).
  constexpr int n = 40;
  for (int i = 1; i <= n; ++i) {
    const auto v = static_cast<std::uint64_t>(i);
    auto r = i % 5 == 0 ? q.submit({}, {{&s, v}}, f.op(i)) : q.submit({}, {}, f.op(i));
    REQUIRE(r);
    CHECK(r->epoch == v);
    CHECK_FALSE(r->deferred);
  }
  REQUIRE(causal_conformance::host_wait(f, s, n));
  REQUIRE(f.finish());
  CHECK(q.completed_epoch() == n);
  const std::vector<int> log = f.log();
  REQUIRE(log.size() == n);
  for (int i = 0; i < n; ++i) CHECK(log[static_cast<std::size_t>(i)] == i + 1);
  // The signal carries the queue's own entry at the signalling epoch.
  const auto at = s.frontier_at(n);
  REQUIRE(at);
  CHECK(at->reached);
  CHECK(at->frontier.epoch_of(q.axis()) == n);
  CHECK(at->producer.axis == q.axis());
  CHECK(at->producer.epoch == n);
}

TEMPLATE_TEST_CASE("conformance: a wait on the queue's own earlier signal is elided",
                   "[conformance]", CAUSAL_CONFORMANCE_FIXTURES) {
  CAUSAL_CONFORMANCE_PROLOGUE;
  auto& q = f.make_queue();
  auto& gate = f.make_semaphore();
  auto& s = f.make_semaphore();
  auto& done = f.make_semaphore();
  // The first operation waits for the host, so s = 1 is still only
  // submitted (not reached) when the second one is.
  REQUIRE(q.submit({{&gate, 1}}, {{&s, 1}}, f.op(1)));
  REQUIRE(q.submit({{&s, 1}}, {{&done, 1}}, f.op(2)));
  CHECK(q.stats().elided_same_queue == 1);
  CHECK(q.stats().device_waits == 1);  // the gate
  REQUIRE(gate.signal(1));
  REQUIRE(causal_conformance::host_wait(f, done, 1));
  REQUIRE(f.finish());
  const auto log = f.log();
  CHECK(causal_conformance::position(log, 1) < causal_conformance::position(log, 2));
}

TEMPLATE_TEST_CASE("conformance: a cross-queue wait on an unreached value is issued and orders",
                   "[conformance]", CAUSAL_CONFORMANCE_FIXTURES) {
  CAUSAL_CONFORMANCE_PROLOGUE;
  auto& q1 = f.make_queue();
  auto& q2 = f.make_queue();
  auto& gate = f.make_semaphore();
  auto& s = f.make_semaphore();
  auto& done = f.make_semaphore();
  // q1's operation waits for the host (gate), so it cannot have run when
  // q2 submits: q2's wait must be a real one.
  REQUIRE(q1.submit({{&gate, 1}}, {{&s, 1}}, f.op(1)));
  REQUIRE(q2.submit({{&s, 1}}, {{&done, 1}}, f.op(2)));
  CHECK(q2.stats().device_waits == 1);
  CHECK(q2.stats().waits_elided() == 0);
  REQUIRE(gate.signal(1));
  REQUIRE(causal_conformance::host_wait(f, done, 1));
  REQUIRE(f.finish());
  const auto log = f.log();
  REQUIRE(log.size() == 2);
  CHECK(log[0] == 1);
  CHECK(log[1] == 2);
  // q2 learnt q1's entry through the wait.
  CHECK(q2.knowledge().epoch_of(q1.axis()) >= 1);
}

TEMPLATE_TEST_CASE("conformance: a wait on a reached, untainted value is elided",
                   "[conformance]", CAUSAL_CONFORMANCE_FIXTURES) {
  CAUSAL_CONFORMANCE_PROLOGUE;
  auto& q1 = f.make_queue();
  auto& q2 = f.make_queue();
  auto& s = f.make_semaphore();
  auto& done = f.make_semaphore();
  REQUIRE(q1.submit({}, {{&s, 1}}, f.op(1)));
  REQUIRE(causal_conformance::host_wait(f, s, 1));
  REQUIRE(q2.submit({{&s, 1}}, {{&done, 1}}, f.op(2)));
  CHECK(q2.stats().elided_reached == 1);
  CHECK(q2.stats().device_waits == 0);
  REQUIRE(causal_conformance::host_wait(f, done, 1));
  REQUIRE(f.finish());
}

TEMPLATE_TEST_CASE("conformance: a wait implied by another wait of the same submission is elided",
                   "[conformance]", CAUSAL_CONFORMANCE_FIXTURES) {
  CAUSAL_CONFORMANCE_PROLOGUE;
  auto& q1 = f.make_queue();
  auto& q2 = f.make_queue();
  auto& q3 = f.make_queue();
  auto& gate = f.make_semaphore();
  auto& a = f.make_semaphore();
  auto& b = f.make_semaphore();
  auto& done = f.make_semaphore();
  REQUIRE(q1.submit({{&gate, 1}}, {{&a, 1}}, f.op(1)));
  REQUIRE(q2.submit({{&a, 1}}, {{&b, 1}}, f.op(2)));
  // b's submitted frontier holds q1's entry, so waiting for b implies a.
  REQUIRE(q3.submit({{&a, 1}, {&b, 1}}, {{&done, 1}}, f.op(3)));
  CHECK(q3.stats().device_waits == 1);
  CHECK(q3.stats().elided_dominated == 1);
  // Once q3 knows b's past, a later wait on a is elided by dominance.
  REQUIRE(q3.submit({{&a, 1}}, {}, f.op(4)));
  CHECK(q3.stats().device_waits == 1);
  CHECK(q3.stats().elided_dominated == 2);
  REQUIRE(gate.signal(1));
  REQUIRE(causal_conformance::host_wait(f, done, 1));
  REQUIRE(f.finish());
  const auto log = f.log();
  REQUIRE(log.size() == 4);
  CHECK(causal_conformance::position(log, 1) < causal_conformance::position(log, 2));
  CHECK(causal_conformance::position(log, 2) < causal_conformance::position(log, 3));
  CHECK(causal_conformance::position(log, 3) < causal_conformance::position(log, 4));
}

TEMPLATE_TEST_CASE("conformance: a wait submitted before its signal still resolves",
                   "[conformance]", CAUSAL_CONFORMANCE_FIXTURES) {
  CAUSAL_CONFORMANCE_PROLOGUE;
  auto& q1 = f.make_queue();
  auto& q2 = f.make_queue();
  auto& s = f.make_semaphore();
  auto& done = f.make_semaphore();
  auto r = q2.submit({{&s, 1}}, {{&done, 1}}, f.op(2));
  REQUIRE(r);
  REQUIRE(q1.submit({}, {{&s, 1}}, f.op(1)));
  if (r->deferred) {
    if constexpr (requires { q2.pump(); }) REQUIRE(q2.pump());
  }
  REQUIRE(causal_conformance::host_wait(f, done, 1));
  REQUIRE(f.finish());
  const auto log = f.log();
  CHECK(causal_conformance::position(log, 1) < causal_conformance::position(log, 2));
}

TEMPLATE_TEST_CASE("conformance: signalled semaphores carry the merged frontier",
                   "[conformance]", CAUSAL_CONFORMANCE_FIXTURES) {
  CAUSAL_CONFORMANCE_PROLOGUE;
  auto& q1 = f.make_queue();
  auto& q2 = f.make_queue();
  auto& a = f.make_semaphore();
  auto& b = f.make_semaphore();
  REQUIRE(q1.submit({}, {{&a, 1}}, f.op(1)));
  REQUIRE(q1.submit({}, {{&a, 2}}, f.op(2)));
  REQUIRE(q2.submit({{&a, 2}}, {{&b, 5}}, f.op(3)));
  REQUIRE(causal_conformance::host_wait(f, b, 5));
  REQUIRE(f.finish());
  const auto at = b.frontier_at(5);
  REQUIRE(at);
  CHECK(at->frontier.epoch_of(q1.axis()) == 2);
  CHECK(at->frontier.epoch_of(q2.axis()) == 1);
}

TEMPLATE_TEST_CASE("conformance: completed epochs reach an attached completion tracker",
                   "[conformance]", CAUSAL_CONFORMANCE_FIXTURES) {
  CAUSAL_CONFORMANCE_PROLOGUE;
  auto& q = f.make_queue();
  auto& s = f.make_semaphore();
  causal::completion_tracker tracker;
  REQUIRE(tracker.register_axis(q.axis()));
  q.track_completion(tracker);
  for (std::uint64_t i = 1; i <= 5; ++i) REQUIRE(q.submit({}, {{&s, i}}, f.op(static_cast<int>(i))));
  REQUIRE(causal_conformance::host_wait(f, s, 5));
  REQUIRE(f.finish());
  CHECK(tracker.retired_epoch(q.axis()) == 5);
  causal::frontier need;
  need.insert_or_raise(q.axis(), 5);
  CHECK(tracker.covers(need));
}

TEMPLATE_TEST_CASE("conformance: a failed wait fails the waiting operation's signals",
                   "[conformance]", CAUSAL_CONFORMANCE_FIXTURES) {
  CAUSAL_CONFORMANCE_PROLOGUE;
  auto& q = f.make_queue();
  auto& upstream = f.make_semaphore();
  auto& out = f.make_semaphore();
  REQUIRE(q.submit({{&upstream, 1}}, {{&out, 1}}, f.op(1)));
  upstream.fail(causal::error{causal::errc::device_lost, "conformance: upstream lost"});
  const causal::status st = causal_conformance::host_wait(f, out, 1);
  CHECK(st.code() == causal::errc::device_lost);
  (void)f.finish();
  CHECK(causal_conformance::position(f.log(), 1) == -1);  // never ran
}

TEMPLATE_TEST_CASE("conformance: a failed wait fails the queue: later operations never run and "
                   "no later epoch completes",
                   "[conformance][failure]", CAUSAL_CONFORMANCE_FIXTURES) {
  // docs/queues.md: (axis, e) in a frontier means every operation of the
  // queue up to e completed. If a queue ran on past an operation whose wait
  // failed, its later signals would carry a frontier that claims the failed
  // operation, and a consumer could elide its wait on the failed value
  // (here: q2's wait on `out` is implied by its wait on `later`) and run
  // on data that was never produced. So the failure is sticky.
  CAUSAL_CONFORMANCE_PROLOGUE;
  auto& q = f.make_queue();
  auto& q2 = f.make_queue();
  auto& upstream = f.make_semaphore();
  auto& out = f.make_semaphore();
  auto& later = f.make_semaphore();
  auto& consumed = f.make_semaphore();
  causal::completion_tracker tracker;
  REQUIRE(tracker.register_axis(q.axis()));
  q.track_completion(tracker);
  REQUIRE(q.submit({{&upstream, 1}}, {{&out, 1}}, f.op(1)));
  REQUIRE(q.submit({}, {{&later, 1}}, f.op(2)));
  REQUIRE(q2.submit({{&later, 1}, {&out, 1}}, {{&consumed, 1}}, f.op(3)));
  upstream.fail(causal::error{causal::errc::device_lost, "conformance: upstream lost"});
  CHECK(causal_conformance::host_wait(f, out, 1).code() == causal::errc::device_lost);
  CHECK(causal_conformance::host_wait(f, later, 1).code() == causal::errc::device_lost);
  CHECK(causal_conformance::host_wait(f, consumed, 1).code() == causal::errc::device_lost);
  // Work submitted after the failure is refused with the same error.
  auto& after = f.make_semaphore();
  auto late = q.submit({}, {{&after, 1}}, f.op(4));
  REQUIRE_FALSE(late);
  CHECK(late.error_value().code() == causal::errc::device_lost);
  (void)f.finish();
  CHECK(f.log().empty());
  CHECK(q.completed_epoch() == 0);
  // A tracker waiting for this axis learns of the failure too (no waiter
  // is left waiting for an epoch that will never complete).
  CHECK(tracker.axis_status(q.axis()).code() == causal::errc::device_lost);
  CHECK(tracker.retired_epoch(q.axis()) == 0);
}

TEMPLATE_TEST_CASE("conformance: only an operation's last signal carries its own entry",
                   "[conformance][elision]", CAUSAL_CONFORMANCE_FIXTURES) {
  // docs/queues.md, "Signals of one operation": a backend reaches an
  // operation's signals one at a time, so (axis, e) -- "operation e and all
  // its signals are done" -- rides only on the last. A consumer of the
  // first must still issue its wait on the second (else it could run, and
  // signal the second semaphore, before the second is reached); a consumer
  // of the last may elide a wait on the first.
  CAUSAL_CONFORMANCE_PROLOGUE;
  auto& qa = f.make_queue();
  auto& qb = f.make_queue();
  auto& qc = f.make_queue();
  auto& gate = f.make_semaphore();
  auto& t = f.make_semaphore();
  auto& s = f.make_semaphore();
  auto& done = f.make_semaphore();
  REQUIRE(qa.submit({{&gate, 1}}, {{&t, 1}, {&s, 1}}, f.op(1)));
  const auto at_t = t.frontier_at(1);
  const auto at_s = s.frontier_at(1);
  REQUIRE((at_t && at_s));
  CHECK(at_t->frontier.epoch_of(qa.axis()) == 0);
  CHECK(at_t->producer == causal::frontier_entry{qa.axis(), 1});
  CHECK(at_s->frontier.epoch_of(qa.axis()) == 1);
  CHECK(at_s->producer == causal::frontier_entry{qa.axis(), 1});
  REQUIRE(qb.submit({{&t, 1}}, {}, f.op(2)));
  REQUIRE(qb.submit({{&s, 1}}, {{&s, 2}}, f.op(3)));
  CHECK(qb.stats().device_waits == 2);
  CHECK(qb.stats().elided_dominated == 0);
  REQUIRE(qc.submit({{&s, 1}}, {}, f.op(4)));
  REQUIRE(qc.submit({{&t, 1}}, {{&done, 1}}, f.op(5)));
  CHECK(qc.stats().device_waits == 1);
  CHECK(qc.stats().elided_dominated == 1);
  REQUIRE(gate.signal(1));
  REQUIRE(causal_conformance::host_wait(f, s, 2));
  REQUIRE(causal_conformance::host_wait(f, done, 1));
  REQUIRE(f.finish());
  CHECK_FALSE(s.failed());
  CHECK_FALSE(t.failed());
  const auto log = f.log();
  REQUIRE(log.size() == 5);
  CHECK(causal_conformance::position(log, 1) < causal_conformance::position(log, 3));
  CHECK(causal_conformance::position(log, 1) < causal_conformance::position(log, 5));
}

TEMPLATE_TEST_CASE("conformance: a failure reaches an operation's signals only after its elided waits",
                   "[conformance][elision][failure]", CAUSAL_CONFORMANCE_FIXTURES) {
  // docs/queues.md, "Elision never changes an outcome". qb's second
  // operation elides its wait on s >= 1 (qb learnt qa's operation through
  // tc = 2). qb fails first (its wait on tc fails), but its failure must
  // not fail s before qa's healthy s = 1 arrives: qd, which depends on qa
  // alone, runs -- as it would had the wait been issued.
  CAUSAL_CONFORMANCE_PROLOGUE;
  auto& qa = f.make_queue();
  auto& qb = f.make_queue();
  auto& qc = f.make_queue();
  auto& qd = f.make_queue();
  auto& gate = f.make_semaphore();
  auto& upstream = f.make_semaphore();
  auto& s = f.make_semaphore();
  auto& tc = f.make_semaphore();
  auto& done = f.make_semaphore();
  REQUIRE(qa.submit({{&gate, 1}}, {{&s, 1}}, f.op(1)));
  REQUIRE(qc.submit({{&upstream, 1}}, {{&tc, 1}}, f.op(2)));  // fails with upstream
  REQUIRE(qc.submit({{&s, 1}}, {{&tc, 2}}, f.op(3)));
  REQUIRE(qb.submit({{&tc, 2}}, {}, f.op(4)));
  REQUIRE(qb.submit({{&s, 1}}, {{&s, 2}}, f.op(5)));
  CHECK(qb.stats().elided_dominated == 1);
  REQUIRE(qd.submit({{&s, 1}}, {{&done, 1}}, f.op(6)));
  upstream.fail(causal::error{causal::errc::device_lost, "conformance: upstream lost"});
  CHECK(causal_conformance::host_wait(f, tc, 2).code() == causal::errc::device_lost);
  REQUIRE(gate.signal(1));
  CHECK(causal_conformance::host_wait(f, done, 1));
  (void)f.finish();
  CHECK(s.value() == 1);  // qa's signal kept; qb failed s after it
  const auto log = f.log();
  CHECK(causal_conformance::position(log, 1) != -1);
  CHECK(causal_conformance::position(log, 6) != -1);
  CHECK(causal_conformance::position(log, 5) == -1);
}

TEMPLATE_TEST_CASE("conformance: a value reached before its semaphore failed stays reached for a late wait",
                   "[conformance][failure]", CAUSAL_CONFORMANCE_FIXTURES) {
  // docs/semaphores.md, "Failure": however late a wait is armed (here the
  // third of three, which a backend may arm after the others are met).
  CAUSAL_CONFORMANCE_PROLOGUE;
  auto& q = f.make_queue();
  auto& x = f.make_semaphore();
  auto& y = f.make_semaphore();
  auto& z = f.make_semaphore();
  auto& done = f.make_semaphore();
  REQUIRE(q.submit({{&x, 1}, {&y, 1}, {&z, 1}}, {{&done, 1}}, f.op(1)));
  REQUIRE(z.signal(1));
  z.fail(causal::error{causal::errc::device_lost, "conformance: z failed after reaching 1"});
  REQUIRE(x.signal(1));
  REQUIRE(y.signal(1));
  CHECK(causal_conformance::host_wait(f, done, 1));
  REQUIRE(f.finish());
  CHECK(causal_conformance::position(f.log(), 1) == 0);
}

TEMPLATE_TEST_CASE("conformance: bad submissions are rejected and change nothing",
                   "[conformance]", CAUSAL_CONFORMANCE_FIXTURES) {
  CAUSAL_CONFORMANCE_PROLOGUE;
  auto& q = f.make_queue();
  auto& s = f.make_semaphore();
  REQUIRE(q.submit({}, {{&s, 3}}, f.op(1)));
  // Not above what was submitted... (the core rejects a repeated value)
  auto repeated = q.submit({}, {{&s, 3}}, f.op(2));
  CHECK_FALSE(repeated);
  // ...a null semaphore...
  auto null_wait = q.submit({{nullptr, 1}}, {}, f.op(3));
  REQUIRE_FALSE(null_wait);
  CHECK(null_wait.error_value().code() == causal::errc::invalid_argument);
  // ...and a wait on a failed semaphore.
  auto& broken = f.make_semaphore();
  broken.fail(causal::error{causal::errc::device_lost, "conformance: broken"});
  auto on_broken = q.submit({{&broken, 1}}, {}, f.op(4));
  REQUIRE_FALSE(on_broken);
  CHECK(on_broken.error_value().code() == causal::errc::device_lost);
  // ...and a wait on what the submission signals itself (it would never run).
  auto& own = f.make_semaphore();
  auto self_wait = q.submit({{&own, 1}}, {{&own, 1}}, f.op(5));
  REQUIRE_FALSE(self_wait);
  CHECK(self_wait.error_value().code() == causal::errc::invalid_argument);
  auto later_wait = q.submit({{&own, 2}}, {{&own, 1}}, f.op(6));
  REQUIRE_FALSE(later_wait);
  CHECK(later_wait.error_value().code() == causal::errc::invalid_argument);
  CHECK(own.pending_count() == 0);  // nothing announced
  CHECK(q.epoch() == 1);
  REQUIRE(causal_conformance::host_wait(f, s, 3));
  REQUIRE(f.finish());
  CHECK(f.log() == std::vector<int>{1});
}

#undef CAUSAL_CONFORMANCE_PROLOGUE
