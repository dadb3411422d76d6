// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// queue_semantics: submit / wait / elision / completion cases that go beyond
// test/conformance/queue_conformance.hpp, written against the same fixture
// interface (queue_type::submit/stats/knowledge, host-side semaphore calls,
// op(tag)/log()/finish()/pump()) plus one optional capability:
//
//   void external_signal(semaphore_type&, std::uint64_t v)
//       advances the semaphore to v outside the scheduler (another API or
//       process); the CPU adapter's fixture would call s.signal_external(v).
//
// Nothing below the "generic" banner names Vulkan. To lift it into the
// shared suite: move everything from the banner to the end into
// test/conformance/queue_semantics.hpp (guarded by
// CAUSAL_CONFORMANCE_FIXTURES like queue_conformance.hpp, with
// CAUSAL_SEMANTICS_FIXTURES renamed to it), give cpu_fixture an
// external_signal, and include the new header after queue_conformance.hpp in
// both adapters' conformance test files. The Vulkan instantiation below runs
// under the validation layer like every Vulkan test.

#include "vk_fixture.hpp"

#include "catch.hpp"
#include "string_makers.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#define CAUSAL_SEMANTICS_FIXTURES                                        \
  causal_vk_test::vk_submit2_polled, causal_vk_test::vk_legacy_polled, \
      causal_vk_test::vk_submit2_waiter

//===-- generic (lift to test/conformance/queue_semantics.hpp) --------------===//

namespace causal_semantics {

/// Host wait with a generous limit, pumping the fixture (a hang fails).
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

}  // namespace causal_semantics

TEMPLATE_TEST_CASE("semantics: work queued behind a wait-before-signal runs after the signal, in order",
                   "[semantics][queue]", CAUSAL_SEMANTICS_FIXTURES) {
  TestType f;
  auto& producer = f.make_queue();
  auto& consumer = f.make_queue();
  auto& s = f.make_semaphore();
  auto& done = f.make_semaphore();
  // The consumer's first operation waits for a value nobody has submitted;
  // three more follow it on the same queue.
  REQUIRE(consumer.submit({{&s, 1}}, {}, f.op(2)));
  REQUIRE(consumer.submit({}, {}, f.op(3)));
  REQUIRE(consumer.submit({}, {}, f.op(4)));
  REQUIRE(consumer.submit({}, {{&done, 1}}, f.op(5)));
  CHECK(consumer.stats().waits_elided() == 0);
  REQUIRE(producer.submit({}, {{&s, 1}}, f.op(1)));
  REQUIRE(causal_semantics::host_wait(f, done, 1));
  REQUIRE(f.finish());
  CHECK(f.log() == std::vector<int>{1, 2, 3, 4, 5});
  CHECK(consumer.completed_epoch() == 4);
  // The wait was submitted before any signal of s, so which signal would
  // meet it was unknown: it imported nothing (knowing less is safe).
  CHECK(consumer.knowledge().epoch_of(producer.axis()) == 0);
}

TEMPLATE_TEST_CASE("semantics: a host signal releases a wait on it", "[semantics][queue]",
                   CAUSAL_SEMANTICS_FIXTURES) {
  TestType f;
  auto& q = f.make_queue();
  auto& gate = f.make_semaphore();
  auto& done = f.make_semaphore();
  REQUIRE(q.submit({{&gate, 1}}, {{&done, 1}}, f.op(1)));
  CHECK(q.stats().device_waits + q.stats().host_deferrals == 1);
  // Nothing can run before the gate opens.
  f.pump();
  CHECK(done.value() == 0);
  REQUIRE(gate.signal(1));
  REQUIRE(causal_semantics::host_wait(f, done, 1));
  REQUIRE(f.finish());
  CHECK(f.log() == std::vector<int>{1});
  // Waiting for the opened gate again is tier 0: reached, no device wait.
  const auto before = q.stats();
  REQUIRE(q.submit({{&gate, 1}}, {}, f.op(2)));
  CHECK(q.stats().elided_reached == before.elided_reached + 1);
  CHECK(q.stats().device_waits == before.device_waits);
  REQUIRE(f.finish());
}

TEMPLATE_TEST_CASE("semantics: values reached outside the scheduler are tainted and never elided",
                   "[semantics][taint]", CAUSAL_SEMANTICS_FIXTURES) {
  TestType f;
  auto& q = f.make_queue();
  auto& q2 = f.make_queue();
  auto& s = f.make_semaphore();
  f.external_signal(s, 3);
  REQUIRE(causal_semantics::host_wait(f, s, 3));
  CHECK(s.is_tainted(3));
  const auto at = s.frontier_at(3);
  REQUIRE(at);
  CHECK(at->value_tainted);
  // Reached, but tainted: a real device wait, not tier 0.
  REQUIRE(q.submit({{&s, 3}}, {}, f.op(1)));
  CHECK(q.stats().device_waits == 1);
  CHECK(q.stats().elided_reached == 0);
  // A witnessed signal heals the taint: a wait on it is elided again.
  REQUIRE(q.submit({}, {{&s, 4}}, f.op(2)));
  REQUIRE(causal_semantics::host_wait(f, s, 4));
  CHECK_FALSE(s.is_tainted(4));
  REQUIRE(q2.submit({{&s, 4}}, {}, f.op(3)));
  CHECK(q2.stats().elided_reached == 1);
  CHECK(q2.stats().device_waits == 0);
  REQUIRE(f.finish());
  CHECK(f.log() == std::vector<int>{1, 2, 3});
}

TEMPLATE_TEST_CASE("semantics: a diamond over four queues issues one device wait fewer than its edges",
                   "[semantics][elision]", CAUSAL_SEMANTICS_FIXTURES) {
  TestType f;
  auto& qa = f.make_queue();
  auto& qb = f.make_queue();
  auto& qc = f.make_queue();
  auto& qd = f.make_queue();
  auto& gate = f.make_semaphore();
  auto& a = f.make_semaphore();
  auto& b = f.make_semaphore();
  auto& c = f.make_semaphore();
  auto& d = f.make_semaphore();
  // The gate keeps A from running, so no wait below is reached (tier 0).
  REQUIRE(qa.submit({{&gate, 1}}, {{&a, 1}}, f.op(1)));
  REQUIRE(qb.submit({{&a, 1}}, {{&b, 1}}, f.op(2)));
  REQUIRE(qc.submit({{&a, 1}}, {{&c, 1}}, f.op(3)));
  // D reads A's, B's and C's results: three edges into D, five in all.
  REQUIRE(qd.submit({{&a, 1}, {&b, 1}, {&c, 1}}, {{&d, 1}}, f.op(4)));
  CHECK(qd.stats().device_waits == 2);
  CHECK(qd.stats().elided_dominated == 1);
  const std::uint64_t issued = qb.stats().device_waits + qc.stats().device_waits + qd.stats().device_waits;
  CHECK(issued == 4);  // per-edge waiting would issue 5
  REQUIRE(gate.signal(1));
  REQUIRE(causal_semantics::host_wait(f, d, 1));
  REQUIRE(f.finish());
  const auto log = f.log();
  REQUIRE(log.size() == 4);
  CHECK(log.front() == 1);
  CHECK(log.back() == 4);
  // D knows all three producers through two waits.
  const auto known = qd.knowledge();
  CHECK(known.epoch_of(qa.axis()) == 1);
  CHECK(known.epoch_of(qb.axis()) == 1);
  CHECK(known.epoch_of(qc.axis()) == 1);
}

TEMPLATE_TEST_CASE("semantics: a failed wait fails the queue; work submitted before it still "
                   "completes and retires",
                   "[semantics][failure]", CAUSAL_SEMANTICS_FIXTURES) {
  // The conformance suite pins the sticky failure; here, the other side of
  // it: what was submitted before the failed operation runs and its epochs
  // retire normally, and only then does waiting for the queue report the
  // failure.
  TestType f;
  auto& q = f.make_queue();
  auto& first = f.make_semaphore();
  auto& upstream = f.make_semaphore();
  auto& out = f.make_semaphore();
  auto& later = f.make_semaphore();
  REQUIRE(q.submit({}, {{&first, 1}}, f.op(1)));
  REQUIRE(q.submit({{&upstream, 1}}, {{&out, 1}}, f.op(2)));
  REQUIRE(q.submit({}, {{&later, 1}}, f.op(3)));
  upstream.fail(causal::error{causal::errc::cancelled, "semantics: upstream cancelled"});
  REQUIRE(causal_semantics::host_wait(f, first, 1));
  CHECK(causal_semantics::host_wait(f, out, 1).code() == causal::errc::cancelled);
  CHECK(causal_semantics::host_wait(f, later, 1).code() == causal::errc::cancelled);
  CHECK(f.finish().code() == causal::errc::cancelled);
  CHECK(f.log() == std::vector<int>{1});
  CHECK(q.completed_epoch() == 1);
  auto refused = q.submit({}, {}, f.op(4));
  REQUIRE_FALSE(refused);
  CHECK(refused.error_value().code() == causal::errc::cancelled);
}

TEMPLATE_TEST_CASE("semantics: an operation whose wait failed fails its signals only once its other "
                   "waits are met",
                   "[semantics][failure]", CAUSAL_SEMANTICS_FIXTURES) {
  // docs/queues.md, "Elision never changes an outcome", without a shortcut:
  // q's operation waits for x (which fails) and for y, which qa signals
  // after its s = 1. Failing q's s = 2 as soon as x fails would fail s
  // before qa's healthy s = 1 arrives, and qd, which needs only qa, with
  // it; waiting for y first keeps qa's value.
  TestType f;
  auto& qa = f.make_queue();
  auto& q = f.make_queue();
  auto& qd = f.make_queue();
  auto& gate = f.make_semaphore();
  auto& x = f.make_semaphore();
  auto& y = f.make_semaphore();
  auto& s = f.make_semaphore();
  auto& done = f.make_semaphore();
  REQUIRE(qa.submit({{&gate, 1}}, {{&s, 1}, {&y, 1}}, f.op(1)));
  REQUIRE(q.submit({{&x, 1}, {&y, 1}}, {{&s, 2}}, f.op(2)));
  REQUIRE(qd.submit({{&s, 1}}, {{&done, 1}}, f.op(3)));
  x.fail(causal::error{causal::errc::device_lost, "semantics: x lost"});
  f.pump();
  CHECK_FALSE(s.failed());  // y is not met yet
  REQUIRE(gate.signal(1));
  CHECK(causal_semantics::host_wait(f, done, 1));
  CHECK(causal_semantics::host_wait(f, s, 2).code() == causal::errc::device_lost);
  CHECK(s.value() == 1);
  CHECK(f.finish().code() == causal::errc::device_lost);
  const auto log = f.log();
  CHECK(std::count(log.begin(), log.end(), 1) == 1);
  CHECK(std::count(log.begin(), log.end(), 3) == 1);
  CHECK(std::count(log.begin(), log.end(), 2) == 0);
}

TEMPLATE_TEST_CASE("semantics: a value reached before its semaphore failed stays reached for host waits",
                   "[semantics][failure][wait]", CAUSAL_SEMANTICS_FIXTURES) {
  // docs/semaphores.md, "Failure": the failure freezes the payload; a wait
  // on a value below it succeeds however late it is made.
  TestType f;
  auto& q = f.make_queue();
  auto& s = f.make_semaphore();
  auto& h = f.make_semaphore();
  REQUIRE(q.submit({}, {{&s, 1}}, f.op(1)));
  REQUIRE(causal_semantics::host_wait(f, s, 1));
  REQUIRE(h.signal(1));
  const causal::error lost{causal::errc::device_lost, "semantics: failed after reaching 1"};
  s.fail(lost);
  h.fail(lost);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (auto* sem : {&s, &h}) {
    CHECK(sem->wait_until(1, deadline));
    CHECK(sem->try_wait(1));
    CHECK(sem->wait_until(2, deadline).code() == causal::errc::device_lost);
    CHECK(sem->value() == 1);
  }
  REQUIRE(f.finish());
}

TEMPLATE_TEST_CASE("semantics: a host wait past its deadline times out and changes nothing",
                   "[semantics][wait]", CAUSAL_SEMANTICS_FIXTURES) {
  TestType f;
  auto& s = f.make_semaphore();
  const auto t0 = std::chrono::steady_clock::now();
  const causal::status st = s.wait_until(1, t0 + std::chrono::milliseconds(20));
  CHECK(st.code() == causal::errc::timeout);
  CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(20));
  CHECK(s.value() == 0);
  CHECK_FALSE(s.failed());
  REQUIRE(s.signal(1));
  CHECK(s.wait_until(1, std::chrono::steady_clock::now()).ok());
}

TEMPLATE_TEST_CASE("semantics: a late waiter imports the frontier of the first signal to reach its value",
                   "[semantics][frontier]", CAUSAL_SEMANTICS_FIXTURES) {
  TestType f;
  auto& q1 = f.make_queue();
  auto& q2 = f.make_queue();
  auto& s = f.make_semaphore();
  REQUIRE(q1.submit({}, {{&s, 2}}, f.op(1)));
  REQUIRE(q2.submit({}, {}, f.op(2)));
  REQUIRE(q2.submit({{&s, 2}}, {{&s, 5}}, f.op(3)));
  REQUIRE(causal_semantics::host_wait(f, s, 5));
  REQUIRE(f.finish());
  // A waiter for 2 learns what was known at 2 (q1's signal), not at 5.
  const auto at2 = s.frontier_at(2);
  REQUIRE(at2);
  CHECK(at2->frontier.epoch_of(q1.axis()) == 1);
  CHECK(at2->frontier.epoch_of(q2.axis()) == 0);
  const auto at5 = s.frontier_at(5);
  REQUIRE(at5);
  CHECK(at5->frontier.epoch_of(q2.axis()) == 2);
  CHECK(at5->frontier.epoch_of(q1.axis()) == 1);
}

#undef CAUSAL_SEMANTICS_FIXTURES
