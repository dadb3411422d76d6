// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// The elision promise on real CPU queues, each shape held open on purpose
// (docs/queues.md, "Signals of one operation" and "Elision never changes an
// outcome"). Every test here runs its queues on *manual* executors
// (worker_count 0) driven by the test thread, so the interleaving that
// exposed each defect is forced, not hoped for: a timepoint callback on one
// semaphore runs another executor's work in the middle of an operation's
// completion, between the reaches of its signals.
//
//   1. An operation's first signal must not carry its own entry: a1 on A
//      signals {T=1, S=1}; b1 on B waits T >= 1, b2 on B waits S >= 1 and
//      signals S=2. Had T carried (A, 1), b2's wait would be elided and b2
//      would run -- and signal S=2 -- between the reach of T and of S,
//      failing S when a1 reached it late. b2 must start with S >= 1.
//   2. A failure must not overtake an elided wait: c1 fails and signals
//      TC=1; c2 waits S >= 1 and signals TC=2; b1 waits TC >= 2; b2 waits
//      S >= 1 (elided: b1 imports (A, 1) through TC), signals S=2; a1
//      signals S=1 last; d1 waits S >= 1. b2 fails, but only after S >= 1,
//      so a1's healthy signal is kept and d1 runs -- as it does with
//      elision switched off, which the test runs too and compares.
//   3. A wait armed late on a value reached before its semaphore failed
//      succeeds: an operation with three device waits arms two at publish
//      and the third when one of those fires, after that semaphore was
//      signalled and then failed; the outcome is the same whichever wait
//      is armed late.
// Each test fails on the code before its fix (the mutations were run by
// hand: carrying (A, e) on every signal, failing a failed operation's
// signals without waiting for its guards, and failure winning over the
// payload in add_timepoint).

#include <causal/adapters/cpu/queue.hpp>
#include <causal/executor.hpp>
#include <causal/semaphore.hpp>

#include "catch.hpp"
#include "string_makers.hpp"

#include <cstdint>
#include <vector>

namespace {

using causal::errc;
using causal::semaphore;
using causal::status;

causal::executor_options manual() { return causal::executor_options{.worker_count = 0}; }

causal::axis next_axis() { return causal::default_axis_allocator().allocate(0, causal::domain::queue).value(); }

/// A timepoint whose callback runs `fn` once, on whatever thread reaches
/// the value (here: the test thread, inside another executor's drain).
template <class F>
struct hook {
  explicit hook(F f) : fn(f) {}
  F fn;
  causal::semaphore_timepoint node;
  void arm(semaphore& s, std::uint64_t v) {
    node.reset(v, &fire, this);
    s.add_timepoint(node);
  }
  static void fire(causal::semaphore_timepoint& tp, status) noexcept { static_cast<hook*>(tp.user_data())->fn(); }
};

/// What one run of the repro-2 program ended with.
struct outcome {
  bool b2_ran = false, d1_ran = false, a1_ran = false;
  std::uint64_t s_value = 0, tc_value = 0;
  bool s_failed = false, tc_failed = false;
  std::uint64_t b_elided_dominated = 0;
  bool operator==(const outcome&) const = default;
};

outcome run_failure_program(bool elision) {
  causal::executor ex(manual());
  semaphore gate, s, tc;
  causal::cpu::queue a(next_axis(), ex), b(next_axis(), ex), c(next_axis(), ex), d(next_axis(), ex);
  for (auto* q : {&a, &b, &c, &d}) q->core().set_wait_elision(elision);
  outcome out;
  bool* a1 = &out.a1_ran;
  bool* b2 = &out.b2_ran;
  bool* d1 = &out.d1_ran;
  // a1 is submitted first (its signal is announced) but runs last: gated.
  REQUIRE(a.host({{&gate, 1}}, {{&s, 1}}, [a1] { *a1 = true; }));
  REQUIRE(c.host({}, {{&tc, 1}}, []() noexcept -> status { return causal::error{errc::device_lost, "c1 fails"}; }));
  REQUIRE(c.host({{&s, 1}}, {{&tc, 2}}, [] {}));
  REQUIRE(b.host({{&tc, 2}}, {}, [] {}));
  REQUIRE(b.host({{&s, 1}}, {{&s, 2}}, [b2] { *b2 = true; }));
  REQUIRE(d.host({{&s, 1}}, {}, [d1] { *d1 = true; }));
  out.b_elided_dominated = b.stats().elided_dominated;
  ex.run_until_idle();  // c1 fails; c2, b1, b2 fail or wait as they must
  REQUIRE(gate.signal(1));
  ex.run_until_idle();  // a1, then whatever waited for S >= 1
  for (auto* q : {&a, &b, &c, &d}) CHECK(q->wait_idle(std::chrono::steady_clock::now()).code() != errc::timeout);
  out.s_value = s.value();
  out.s_failed = s.failed();
  out.tc_value = tc.value();
  out.tc_failed = tc.failed();
  return out;
}

}  // namespace

TEST_CASE("cpu elision: an operation's first signal does not let a consumer skip a wait on its second",
          "[cpu][elision]") {
  causal::executor ex_a(manual()), ex_b(manual());
  semaphore gate, t, s;
  causal::cpu::queue a(next_axis(), ex_a);
  causal::cpu::queue b(next_axis(), ex_b);
  std::uint64_t s_seen_by_b2 = 0;
  std::uint64_t* seen = &s_seen_by_b2;
  semaphore* sp = &s;
  REQUIRE(a.host({{&gate, 1}}, {{&t, 1}, {&s, 1}}, [] {}));
  REQUIRE(b.host({{&t, 1}}, {}, [] {}));
  REQUIRE(b.host({{&s, 1}}, {{&s, 2}}, [seen, sp] { *seen = sp->value(); }));
  // T carries what A knew before a1 (nothing of A), S carries (A, 1): only
  // the last signal claims the whole operation.
  const auto at_t = t.frontier_at(1);
  const auto at_s = s.frontier_at(1);
  REQUIRE((at_t && at_s));
  CHECK(at_t->frontier.epoch_of(a.axis()) == 0);
  CHECK(at_t->producer == causal::frontier_entry{a.axis(), 1});
  CHECK(at_s->frontier.epoch_of(a.axis()) == 1);
  // So b2's wait on S is issued, not elided.
  CHECK(b.stats().device_waits == 2);
  CHECK(b.stats().elided_dominated == 0);

  // Hold the window open: between a1's reach of T and of S, run B.
  auto run_b = [&ex_b] { ex_b.run_until_idle(); };
  hook<decltype(run_b)> between(run_b);
  between.arm(t, 1);  // after b1's own timepoint on T: it fires second
  REQUIRE(gate.signal(1));
  ex_a.run_until_idle();  // a1: reaches T (B runs b1 here), then S
  ex_b.run_until_idle();  // b2, now that S >= 1
  CHECK(a.wait_idle());
  CHECK(b.wait_idle());
  CHECK(s_seen_by_b2 >= 1);
  CHECK_FALSE(s.failed());
  CHECK(s.value() == 2);
  CHECK(t.value() == 1);
}

TEST_CASE("cpu elision: consumers of an operation's last signal still elide waits on its others",
          "[cpu][elision]") {
  causal::executor ex(manual());
  semaphore gate, t, s, done;
  causal::cpu::queue a(next_axis(), ex), b(next_axis(), ex);
  REQUIRE(a.host({{&gate, 1}}, {{&t, 1}, {&s, 1}}, [] {}));
  REQUIRE(b.host({{&s, 1}}, {}, [] {}));                // imports (A, 1)
  REQUIRE(b.host({{&t, 1}}, {{&done, 1}}, [] {}));      // covered: elided
  CHECK(b.stats().device_waits == 1);
  CHECK(b.stats().elided_dominated == 1);
  REQUIRE(gate.signal(1));
  ex.run_until_idle();
  CHECK(done.value() == 1);
  CHECK_FALSE(done.failed());
}

TEST_CASE("cpu elision: a failure reaches an operation with an elided wait only after the wait is met",
          "[cpu][elision][fail]") {
  const outcome with = run_failure_program(true);
  const outcome without = run_failure_program(false);
  CHECK(with.b_elided_dominated == 1);  // the shape really elides b2's wait
  CHECK(without.b_elided_dominated == 0);
  // a1's healthy signal is kept: d1, which depends on a1 alone, runs.
  CHECK(with.a1_ran);
  CHECK(with.d1_ran);
  CHECK_FALSE(with.b2_ran);
  CHECK(with.s_value == 1);
  CHECK(with.s_failed);   // b2 failed it, after S reached 1
  CHECK(with.tc_failed);
  outcome with_counts_cleared = with;
  with_counts_cleared.b_elided_dominated = without.b_elided_dominated;
  CHECK(with_counts_cleared == without);
}

TEST_CASE("cpu elision: a wait armed after its semaphore failed still sees a value reached before",
          "[cpu][elision][fail]") {
  // Waits on x, y, z: two nodes armed at publish, the third when one of
  // them fires. z reaches 1 and then fails before the late node is armed.
  for (const bool z_late : {true, false}) {
    causal::executor ex(manual());
    semaphore x, y, z, done;
    causal::cpu::queue q(next_axis(), ex);
    bool ran = false;
    bool* r = &ran;
    if (z_late) {
      REQUIRE(q.host({{&x, 1}, {&y, 1}, {&z, 1}}, {{&done, 1}}, [r] { *r = true; }));
    } else {
      REQUIRE(q.host({{&z, 1}, {&x, 1}, {&y, 1}}, {{&done, 1}}, [r] { *r = true; }));
    }
    CHECK(q.stats().device_waits == 3);
    REQUIRE(z.signal(1));
    REQUIRE(z.fail(causal::error{errc::device_lost, "z failed after reaching 1"}));
    REQUIRE(x.signal(1));
    REQUIRE(y.signal(1));
    ex.run_until_idle();
    CHECK(q.wait_idle());
    CAPTURE(z_late);
    CHECK(ran);
    CHECK(done.value() == 1);
    CHECK_FALSE(done.failed());
  }
}

TEST_CASE("cpu elision: a failed device wait does not fail the signals before the other waits are over",
          "[cpu][elision][fail]") {
  // o waits x (fails), y and s (reached later by a); it signals s=2. The
  // signal of s=1 must not be lost to o's failure. Two of o's three waits
  // are armed at publish; s is armed when one of them fires.
  causal::executor ex(manual());
  semaphore x, y, s, gate;
  causal::cpu::queue a(next_axis(), ex), o(next_axis(), ex), d(next_axis(), ex);
  bool d_ran = false;
  bool* dr = &d_ran;
  REQUIRE(a.host({{&gate, 1}}, {{&s, 1}}, [] {}));
  REQUIRE(o.host({{&x, 1}, {&y, 1}, {&s, 1}}, {{&s, 2}}, [] {}));
  REQUIRE(d.host({{&s, 1}}, {}, [dr] { *dr = true; }));
  CHECK(o.stats().device_waits == 3);
  REQUIRE(x.fail(causal::error{errc::device_lost, "x failed"}));
  REQUIRE(y.signal(1));
  ex.run_until_idle();
  CHECK_FALSE(s.failed());  // o waits for s >= 1 before failing it
  REQUIRE(gate.signal(1));
  ex.run_until_idle();
  CHECK(d_ran);
  CHECK(s.value() == 1);
  CHECK(s.failed());
  CHECK(s.failure()->code() == errc::device_lost);
  CHECK(o.wait_idle().code() == errc::device_lost);
}
