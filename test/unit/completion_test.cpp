// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Tests for <causal/completion.hpp>: registration and its errors, advance
// (monotonic, unknown axes, max_epoch), the lock-free reads, covers and the
// soundness rule for tainted requirements, waiters (fire once, inline
// outcomes, cancel, re-entrant callbacks, destruction), fail_axis and
// retire_axis, the promise that nothing allocates, races (fire exactly once
// under concurrent advance/add/cancel, fail/retire under load, no lost
// wake-up between add_waiter and a lock-free advance), and a property test
// against a reference model.
//
// Axes are written A, B, C, ... = raw 1, 2, 3, ...; a requirement {A:5, B:3}
// is written `frontier{{A, 5}, {B, 3}}`. Catch2 assertions are only made on
// the test's own thread; helper threads count violations in atomics.
//
// The property test's random stream is splitmix64, seeded from
// `default_seed` or the environment variable CAUSAL_TEST_SEED.

#include <causal/completion.hpp>

#include "catch.hpp"
#include "eventually.hpp"
#include "string_makers.hpp"
#include "counting_new.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

using causal::axis;
using causal::basic_completion_tracker;
using causal::completion_tracker;
using causal::completion_waiter;
using causal::errc;
using causal::error;
using causal::frontier;
using causal::frontier_entry;
using causal::status;

using namespace std::chrono_literals;

constexpr axis A{1};
constexpr axis B{2};
constexpr axis C{3};
constexpr axis D{4};

constexpr std::uint64_t max_epoch = completion_tracker::max_epoch;

/// What a waiter's callback saw. Plain fields: single-threaded tests only.
struct record {
  int calls = 0;
  errc code = errc::ok;
  std::uint64_t position = 0;
  std::string_view message;
};

void record_outcome(completion_waiter& w, status s) {
  auto* r = static_cast<record*>(w.user_data());
  ++r->calls;
  r->code = s.code();
  r->position = s ? 0 : s.error_value().position();
  r->message = s ? std::string_view{} : s.error_value().message();
}

/// A waiter wired to its own record.
struct probe {
  record seen;
  completion_waiter node;
  explicit probe(const frontier& requirement = {}) : node(requirement, &record_outcome, &seen) {}
};

frontier tainted(frontier f) {
  f.set_tainted();
  return f;
}

/// A tracker with A, B, C, D registered.
template <std::size_t N = 64>
void register_abcd(basic_completion_tracker<N>& t) {
  for (axis a : {A, B, C, D}) REQUIRE(t.register_axis(a).ok());
}

using causal::test::eventually;

/// splitmix64: tiny, fast, specified here, so a seed reproduces anywhere.
struct rng {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  std::uint64_t below(std::uint64_t n) { return next() % n; }
  bool one_in(std::uint64_t n) { return below(n) == 0; }
};

constexpr std::uint64_t default_seed = 0xc0391e7102026ull;

// Random operation sequences in the property test (200 steps each); fewer
// under sanitizers, which slow it down tenfold.
constexpr int property_sequences = CAUSAL_HAS_ASAN() || CAUSAL_HAS_TSAN() ? 500 : 2000;

std::uint64_t test_seed() {
  static const std::uint64_t seed = [] {
    const char* env = std::getenv("CAUSAL_TEST_SEED");
    const bool from_env = env != nullptr && *env != '\0';
    const std::uint64_t s = from_env ? std::strtoull(env, nullptr, 0) : default_seed;
    std::printf("completion_test: seed 0x%llx (%s)\n", static_cast<unsigned long long>(s),
                from_env ? "from CAUSAL_TEST_SEED" : "default");
    return s;
  }();
  return seed;
}

}  // namespace

//===-- shape ---------------------------------------------------------------===//

TEST_CASE("completion: types, constants and size are as documented", "[completion][basics]") {
  STATIC_REQUIRE(std::is_same_v<completion_tracker, basic_completion_tracker<64>>);
  STATIC_REQUIRE(completion_tracker::max_axes == 64);
  STATIC_REQUIRE(basic_completion_tracker<3>::max_axes == 3);
  STATIC_REQUIRE(max_epoch == (std::uint64_t{1} << 62) - 1);
  STATIC_REQUIRE(!std::is_copy_constructible_v<completion_tracker>);
  STATIC_REQUIRE(!std::is_copy_assignable_v<completion_tracker>);
  STATIC_REQUIRE(!std::is_copy_constructible_v<completion_waiter>);
  STATIC_REQUIRE(!std::is_move_constructible_v<completion_waiter>);
  STATIC_REQUIRE(std::is_same_v<completion_waiter::callback_type, void (*)(completion_waiter&, status)>);
  STATIC_REQUIRE(std::is_nothrow_default_constructible_v<completion_tracker>);
  STATIC_REQUIRE(noexcept(std::declval<completion_tracker&>().advance(A, 1)));
  STATIC_REQUIRE(noexcept(std::declval<const completion_tracker&>().retired_epoch(A)));
  STATIC_REQUIRE(noexcept(std::declval<const completion_tracker&>().covers(frontier{})));
  STATIC_REQUIRE(noexcept(std::declval<completion_tracker&>().add_waiter(std::declval<completion_waiter&>())));
  // One cache line per slot, plus the dense axis array and the lock's line.
  STATIC_REQUIRE(sizeof(completion_tracker) <= 64 * CAUSAL_CACHELINE_SIZE + 64 * 8 + 3 * CAUSAL_CACHELINE_SIZE);
  STATIC_REQUIRE(sizeof(completion_waiter) <= 320);

  probe p;
  CHECK(p.node.requirement().empty());
  CHECK(p.node.callback() == &record_outcome);
  CHECK(p.node.user_data() == &p.seen);
  completion_waiter idle;
  CHECK(idle.callback() == nullptr);
  CHECK(idle.user_data() == nullptr);
  idle.set_requirement(frontier{{A, 1}});
  idle.set_callback(&record_outcome);
  idle.set_user_data(&p.seen);
  CHECK(idle.requirement() == frontier{{A, 1}});
  CHECK(idle.callback() == &record_outcome);
  CHECK(idle.user_data() == &p.seen);
}

//===-- axes ----------------------------------------------------------------===//

TEST_CASE("completion: a new tracker knows no axis; unknown axes read as 0 or a clear error",
          "[completion][axes][errors]") {
  const completion_tracker t;
  CHECK(t.axis_count() == 0);
  CHECK(t.waiter_count() == 0);
  CHECK(t.retired_epoch(A) == 0);
  const auto r = t.try_retired_epoch(A);
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == errc::out_of_range);
  CHECK(r.error_value().message() == "axis not registered with this completion tracker");
  CHECK(r.error_value().position() == A.raw());
  CHECK(t.axis_status(A).code() == errc::out_of_range);
  CHECK_FALSE(t.is_retired({A, 1}));
  CHECK(t.is_retired({A, 0}));
  CHECK(t.covers(frontier{}));
  CHECK_FALSE(t.covers(frontier{{A, 1}}));
}

TEST_CASE("completion: register_axis adds live axes at epoch 0", "[completion][axes]") {
  completion_tracker t;
  REQUIRE(t.register_axis(A).ok());
  REQUIRE(t.register_axis(axis{~std::uint64_t{0}}).ok());
  CHECK(t.axis_count() == 2);
  CHECK(t.retired_epoch(A) == 0);
  CHECK(t.try_retired_epoch(A).value() == 0);
  CHECK(t.try_retired_epoch(axis{~std::uint64_t{0}}).value() == 0);
  CHECK(t.axis_status(A).ok());
  CHECK(t.retired_epoch(B) == 0);
  CHECK(t.try_retired_epoch(B).code() == errc::out_of_range);
}

TEST_CASE("completion: register_axis rejects axis 0, duplicates and a full table",
          "[completion][axes][errors]") {
  basic_completion_tracker<3> t;
  const status zero = t.register_axis(axis{0});
  CHECK(zero.code() == errc::invalid_argument);

  REQUIRE(t.register_axis(A).ok());
  const status dup = t.register_axis(A);
  REQUIRE(dup.code() == errc::invalid_argument);
  CHECK(dup.error_value().position() == A.raw());
  CHECK(dup.error_value().message().find("already registered") != std::string_view::npos);

  REQUIRE(t.register_axis(B).ok());
  REQUIRE(t.register_axis(C).ok());
  const status full = t.register_axis(D);
  REQUIRE(full.code() == errc::capacity_exceeded);
  CHECK(full.error_value().position() == 3);
  CHECK(t.axis_count() == 3);
  CHECK(t.try_retired_epoch(D).code() == errc::out_of_range);
  // A rejected registration changes nothing.
  CHECK(t.register_axis(A).code() == errc::invalid_argument);
  CHECK(t.axis_count() == 3);
}

TEST_CASE("completion: a retired axis keeps its slot and can never be registered again",
          "[completion][axes][retire]") {
  basic_completion_tracker<2> t;
  REQUIRE(t.register_axis(A).ok());
  REQUIRE(t.advance(A, 4).ok());
  REQUIRE(t.retire_axis(A).ok());
  CHECK(t.register_axis(A).code() == errc::invalid_argument);
  CHECK(t.axis_count() == 1);
  CHECK(t.retired_epoch(A) == 4);
  REQUIRE(t.register_axis(B).ok());
  CHECK(t.register_axis(C).code() == errc::capacity_exceeded);  // A's slot is not reused
}

//===-- advance and reads ---------------------------------------------------===//

TEST_CASE("completion: advance raises the retired epoch monotonically", "[completion][advance]") {
  completion_tracker t;
  register_abcd(t);
  REQUIRE(t.advance(A, 3).ok());
  CHECK(t.retired_epoch(A) == 3);
  REQUIRE(t.advance(A, 2).ok());  // lower: a no-op
  CHECK(t.retired_epoch(A) == 3);
  REQUIRE(t.advance(A, 3).ok());  // equal: a no-op
  REQUIRE(t.advance(A, 0).ok());
  CHECK(t.retired_epoch(A) == 3);
  REQUIRE(t.advance(A, 10).ok());  // jumps are fine
  CHECK(t.retired_epoch(A) == 10);
  CHECK(t.try_retired_epoch(A).value() == 10);
  CHECK(t.retired_epoch(B) == 0);  // other axes untouched
  REQUIRE(t.advance(B, max_epoch).ok());
  CHECK(t.retired_epoch(B) == max_epoch);
}

TEST_CASE("completion: advance on an unknown axis or past max_epoch is out_of_range",
          "[completion][advance][errors]") {
  completion_tracker t;
  REQUIRE(t.register_axis(A).ok());
  const status unknown = t.advance(B, 1);
  REQUIRE(unknown.code() == errc::out_of_range);
  CHECK(unknown.error_value().message() == "axis not registered with this completion tracker");
  CHECK(unknown.error_value().position() == B.raw());
  CHECK(t.advance(axis{0}, 1).code() == errc::out_of_range);
  CHECK(t.retired_epoch(B) == 0);

  const status huge = t.advance(A, max_epoch + 1);
  REQUIRE(huge.code() == errc::out_of_range);
  CHECK(huge.error_value().position() == max_epoch + 1);
  CHECK(t.advance(A, ~std::uint64_t{0}).code() == errc::out_of_range);
  CHECK(t.retired_epoch(A) == 0);
  CHECK(t.axis_status(A).ok());  // a huge epoch must not leak into the state bits
}

TEST_CASE("completion: is_retired and covers answer from the retired epochs",
          "[completion][reads]") {
  completion_tracker t;
  register_abcd(t);
  REQUIRE(t.advance(A, 5).ok());
  REQUIRE(t.advance(B, 3).ok());
  CHECK(t.is_retired({A, 5}));
  CHECK(t.is_retired({A, 1}));
  CHECK_FALSE(t.is_retired({A, 6}));
  CHECK_FALSE(t.is_retired({C, 1}));
  CHECK(t.covers(frontier{{A, 5}, {B, 3}}));
  CHECK(t.covers(frontier{{A, 2}}));
  CHECK_FALSE(t.covers(frontier{{A, 5}, {B, 4}}));
  CHECK_FALSE(t.covers(frontier{{A, 1}, {C, 1}}));
  CHECK_FALSE(t.covers(frontier{{A, 1}, {axis{99}, 1}}));  // unknown axis: never retired
  // Any frontier type will do.
  CHECK(t.covers(causal::basic_frontier<2>{{A, 4}, {B, 3}}));
  using rejecting = causal::basic_frontier<4, causal::default_axis_layout, causal::reject_overflow>;
  const std::array entries{frontier_entry{A, 1}, frontier_entry{B, 9}};
  CHECK_FALSE(t.covers(rejecting::from_entries(entries).value()));
}

TEST_CASE("completion: a tainted requirement is never covered; its producer entry can be checked",
          "[completion][reads][taint]") {
  completion_tracker t;
  register_abcd(t);
  REQUIRE(t.advance(A, 9).ok());
  REQUIRE(t.advance(B, 9).ok());
  const frontier requirement = tainted(frontier{{A, 5}, {B, 3}});
  CHECK_FALSE(t.covers(requirement));
  CHECK_FALSE(t.covers(tainted(frontier{})));
  // The producer entry (say A:5) implies the whole causal past.
  CHECK(t.is_retired({A, 5}));
  // The untainted twin is covered: the taint alone makes the difference.
  CHECK(t.covers(frontier{{A, 5}, {B, 3}}));
}

//===-- waiters -------------------------------------------------------------===//

TEST_CASE("completion: a waiter fires once, with ok, when every axis has retired far enough",
          "[completion][waiter]") {
  completion_tracker t;
  register_abcd(t);
  probe p{frontier{{A, 3}, {B, 2}}};
  t.add_waiter(p.node);
  CHECK(p.seen.calls == 0);
  CHECK(t.waiter_count() == 1);
  REQUIRE(t.advance(A, 3).ok());
  CHECK(p.seen.calls == 0);
  REQUIRE(t.advance(B, 1).ok());
  CHECK(p.seen.calls == 0);
  REQUIRE(t.advance(C, 100).ok());  // an axis it does not need
  CHECK(p.seen.calls == 0);
  REQUIRE(t.advance(B, 2).ok());
  CHECK(p.seen.calls == 1);
  CHECK(p.seen.code == errc::ok);
  CHECK(t.waiter_count() == 0);
  REQUIRE(t.advance(B, 5).ok());
  REQUIRE(t.advance(A, 5).ok());
  CHECK(p.seen.calls == 1);  // exactly once
  CHECK_FALSE(t.cancel(p.node));
}

TEST_CASE("completion: one advance fires every waiter it satisfies and leaves the rest",
          "[completion][waiter]") {
  completion_tracker t;
  register_abcd(t);
  probe a1{frontier{{A, 1}}}, a2{frontier{{A, 2}}}, a3{frontier{{A, 3}}}, ab{frontier{{A, 2}, {B, 1}}};
  for (probe* p : {&a1, &a2, &a3, &ab}) t.add_waiter(p->node);
  CHECK(t.waiter_count() == 4);
  REQUIRE(t.advance(A, 2).ok());
  CHECK(a1.seen.calls == 1);
  CHECK(a2.seen.calls == 1);
  CHECK(a3.seen.calls == 0);
  CHECK(ab.seen.calls == 0);
  CHECK(t.waiter_count() == 2);
  REQUIRE(t.advance(B, 1).ok());
  CHECK(ab.seen.calls == 1);
  REQUIRE(t.advance(A, 3).ok());
  CHECK(a3.seen.calls == 1);
  for (probe* p : {&a1, &a2, &a3, &ab}) {
    CHECK(p->seen.calls == 1);
    CHECK(p->seen.code == errc::ok);
  }
}

TEST_CASE("completion: add_waiter fires inline when the requirement is already met",
          "[completion][waiter]") {
  completion_tracker t;
  register_abcd(t);
  REQUIRE(t.advance(A, 4).ok());
  probe met{frontier{{A, 4}}};
  t.add_waiter(met.node);
  CHECK(met.seen.calls == 1);
  CHECK(met.seen.code == errc::ok);
  probe empty{frontier{}};
  t.add_waiter(empty.node);
  CHECK(empty.seen.calls == 1);
  CHECK(empty.seen.code == errc::ok);
  CHECK(t.waiter_count() == 0);
}

TEST_CASE("completion: add_waiter naming an unknown axis fires out_of_range inline",
          "[completion][waiter][errors]") {
  completion_tracker t;
  register_abcd(t);
  REQUIRE(t.advance(A, 9).ok());
  probe p{frontier{{A, 1}, {axis{77}, 1}}};
  t.add_waiter(p.node);
  REQUIRE(p.seen.calls == 1);
  CHECK(p.seen.code == errc::out_of_range);
  CHECK(p.seen.position == 77);
  CHECK(p.seen.message.find("not registered") != std::string_view::npos);
  CHECK(t.waiter_count() == 0);
  // Registering the axis later does not resurrect it.
  REQUIRE(t.register_axis(axis{77}).ok());
  REQUIRE(t.advance(axis{77}, 1).ok());
  CHECK(p.seen.calls == 1);
}

TEST_CASE("completion: a requirement epoch above max_epoch fires out_of_range inline",
          "[completion][waiter][errors]") {
  completion_tracker t;
  register_abcd(t);
  probe p{frontier{{A, max_epoch + 1}}};
  t.add_waiter(p.node);
  REQUIRE(p.seen.calls == 1);
  CHECK(p.seen.code == errc::out_of_range);
  CHECK(p.seen.position == max_epoch + 1);
  probe edge{frontier{{A, max_epoch}}};
  t.add_waiter(edge.node);
  CHECK(edge.seen.calls == 0);
  REQUIRE(t.advance(A, max_epoch).ok());
  CHECK(edge.seen.calls == 1);
  CHECK(edge.seen.code == errc::ok);
}

TEST_CASE("completion: a tainted requirement fires failed_precondition inline, even when met",
          "[completion][waiter][taint]") {
  completion_tracker t;
  register_abcd(t);
  REQUIRE(t.advance(A, 9).ok());
  probe p{tainted(frontier{{A, 1}})};
  t.add_waiter(p.node);
  REQUIRE(p.seen.calls == 1);
  CHECK(p.seen.code == errc::failed_precondition);
  CHECK(p.seen.message.find("tainted") != std::string_view::npos);
  CHECK(p.seen.message.find("is_retired") != std::string_view::npos);
  probe q{tainted(frontier{{A, 100}, {axis{55}, 1}})};  // taint is reported before anything else
  t.add_waiter(q.node);
  REQUIRE(q.seen.calls == 1);
  CHECK(q.seen.code == errc::failed_precondition);
  CHECK(t.waiter_count() == 0);
}

TEST_CASE("completion: cancel removes a parked waiter, whose callback then never runs",
          "[completion][waiter][cancel]") {
  completion_tracker t;
  register_abcd(t);
  probe p{frontier{{A, 2}}};
  t.add_waiter(p.node);
  CHECK(t.waiter_count() == 1);
  CHECK(t.cancel(p.node));
  CHECK(t.waiter_count() == 0);
  CHECK_FALSE(t.cancel(p.node));  // already removed
  REQUIRE(t.advance(A, 5).ok());
  CHECK(p.seen.calls == 0);

  // The node can be added again, and then fires.
  p.node.set_requirement(frontier{{A, 6}});
  t.add_waiter(p.node);
  REQUIRE(t.advance(A, 6).ok());
  CHECK(p.seen.calls == 1);
  CHECK_FALSE(t.cancel(p.node));  // already fired

  probe never_added{frontier{{A, 1}}};
  CHECK_FALSE(t.cancel(never_added.node));
  CHECK(never_added.seen.calls == 0);
}

TEST_CASE("completion: cancel only removes waiters parked in this tracker",
          "[completion][waiter][cancel]") {
  completion_tracker t1, t2;
  REQUIRE(t1.register_axis(A).ok());
  REQUIRE(t2.register_axis(A).ok());
  probe p{frontier{{A, 1}}};
  t1.add_waiter(p.node);
  CHECK_FALSE(t2.cancel(p.node));
  CHECK(t1.waiter_count() == 1);
  REQUIRE(t2.advance(A, 1).ok());
  CHECK(p.seen.calls == 0);
  REQUIRE(t1.advance(A, 1).ok());
  CHECK(p.seen.calls == 1);
}

TEST_CASE("completion: cancel of one waiter leaves the others parked", "[completion][waiter][cancel]") {
  completion_tracker t;
  register_abcd(t);
  probe p1{frontier{{A, 1}}}, p2{frontier{{A, 1}}}, p3{frontier{{A, 1}}};
  for (probe* p : {&p1, &p2, &p3}) t.add_waiter(p->node);
  CHECK(t.cancel(p2.node));
  REQUIRE(t.advance(A, 1).ok());
  CHECK(p1.seen.calls == 1);
  CHECK(p2.seen.calls == 0);
  CHECK(p3.seen.calls == 1);
}

//===-- callbacks run outside the lock --------------------------------------===//

namespace {
struct chain_ctx {
  completion_tracker* tracker;
  int calls = 0;
  status result{};
  bool cancel_result = false;
};
}  // namespace

TEST_CASE("completion: a callback may advance, add and cancel on the same tracker",
          "[completion][waiter][reentrancy]") {
  completion_tracker t;
  register_abcd(t);
  // A:1 -> callback advances B to 1 -> a waiter on B:1 fires -> its callback
  // adds a third waiter (met already, fires inline) and cancels a fourth.
  probe third{frontier{{A, 1}}};
  probe fourth{frontier{{D, 1}}};
  t.add_waiter(fourth.node);

  chain_ctx second_ctx{&t};
  struct plan_t {
    chain_ctx* ctx;
    completion_waiter* add;
    completion_waiter* remove;
  };
  plan_t plan{&second_ctx, &third.node, &fourth.node};
  completion_waiter second;
  second.set_requirement(frontier{{B, 1}});
  second.set_user_data(&plan);
  second.set_callback([](completion_waiter& w, status s) {
    auto* p = static_cast<plan_t*>(w.user_data());
    ++p->ctx->calls;
    p->ctx->result = s;
    p->ctx->tracker->add_waiter(*p->add);
    p->ctx->cancel_result = p->ctx->tracker->cancel(*p->remove);
  });
  t.add_waiter(second);

  chain_ctx first_ctx{&t};
  completion_waiter first{frontier{{A, 1}},
                          [](completion_waiter& w, status) {
                            auto* c = static_cast<chain_ctx*>(w.user_data());
                            ++c->calls;
                            c->result = c->tracker->advance(B, 1);
                          },
                          &first_ctx};
  t.add_waiter(first);

  REQUIRE(t.advance(A, 1).ok());
  CHECK(first_ctx.calls == 1);
  CHECK(first_ctx.result.ok());
  CHECK(second_ctx.calls == 1);
  CHECK(second_ctx.result.ok());
  CHECK(third.seen.calls == 1);
  CHECK(third.seen.code == errc::ok);
  CHECK(second_ctx.cancel_result);
  CHECK(fourth.seen.calls == 0);
  CHECK(t.waiter_count() == 0);
}

TEST_CASE("completion: a callback may re-add or destroy its own node", "[completion][waiter][reentrancy]") {
  completion_tracker t;
  register_abcd(t);

  // Re-arm: each firing asks for the next epoch, three times.
  struct rearm {
    completion_tracker* tracker;
    int calls = 0;
  };
  rearm r{&t};
  completion_waiter w{frontier{{A, 1}},
                      [](completion_waiter& self, status) {
                        auto* c = static_cast<rearm*>(self.user_data());
                        if (++c->calls < 3) {
                          self.set_requirement(frontier{{A, static_cast<std::uint64_t>(c->calls) + 1}});
                          c->tracker->add_waiter(self);
                        }
                      },
                      &r};
  t.add_waiter(w);
  REQUIRE(t.advance(A, 1).ok());
  CHECK(r.calls == 1);
  CHECK(t.waiter_count() == 1);
  REQUIRE(t.advance(A, 10).ok());  // fires, re-adds (already met: inline), re-adds no more
  CHECK(r.calls == 3);
  CHECK(t.waiter_count() == 0);

  // Destroy: the node lives in an optional that the callback resets.
  std::optional<completion_waiter> owned;
  owned.emplace(frontier{{B, 1}},
                [](completion_waiter& self, status) {
                  static_cast<std::optional<completion_waiter>*>(self.user_data())->reset();
                },
                &owned);
  t.add_waiter(*owned);
  probe after{frontier{{B, 1}}};  // queued behind it; must still fire
  t.add_waiter(after.node);
  REQUIRE(t.advance(B, 1).ok());
  CHECK_FALSE(owned.has_value());
  CHECK(after.seen.calls == 1);
}

TEST_CASE("completion: destroying the tracker cancels parked waiters", "[completion][waiter][cancel]") {
  probe parked{frontier{{A, 5}}};
  probe fired{frontier{{A, 1}}};
  {
    completion_tracker t;
    register_abcd(t);
    t.add_waiter(parked.node);
    t.add_waiter(fired.node);
    REQUIRE(t.advance(A, 1).ok());
  }
  CHECK(fired.seen.calls == 1);
  REQUIRE(parked.seen.calls == 1);
  CHECK(parked.seen.code == errc::cancelled);
  CHECK(parked.seen.message.find("destroyed") != std::string_view::npos);
}

//===-- fail_axis -----------------------------------------------------------===//

TEST_CASE("completion: fail_axis delivers its error to the waiters that still need the axis",
          "[completion][fail]") {
  completion_tracker t;
  register_abcd(t);
  REQUIRE(t.advance(A, 3).ok());
  probe needs_a{frontier{{A, 4}}};
  probe needs_a_and_b{frontier{{A, 5}, {B, 1}}};
  probe a_done_needs_b{frontier{{A, 3}, {B, 2}}};  // A is already far enough
  probe only_b{frontier{{B, 1}}};
  for (probe* p : {&needs_a, &needs_a_and_b, &a_done_needs_b, &only_b}) t.add_waiter(p->node);

  const error boom{errc::device_lost, "queue lost its device", 42};
  REQUIRE(t.fail_axis(A, boom).ok());
  for (probe* p : {&needs_a, &needs_a_and_b}) {
    REQUIRE(p->seen.calls == 1);
    CHECK(p->seen.code == errc::device_lost);
    CHECK(p->seen.position == 42);
    CHECK(p->seen.message == "queue lost its device");
  }
  CHECK(a_done_needs_b.seen.calls == 0);
  CHECK(only_b.seen.calls == 0);
  CHECK(t.waiter_count() == 2);

  // Waiters that do not need A beyond its frozen epoch still complete.
  REQUIRE(t.advance(B, 2).ok());
  CHECK(a_done_needs_b.seen.calls == 1);
  CHECK(a_done_needs_b.seen.code == errc::ok);
  CHECK(only_b.seen.calls == 1);
  CHECK(only_b.seen.code == errc::ok);
}

TEST_CASE("completion: after fail_axis, later waiters that need the axis fail at once",
          "[completion][fail]") {
  completion_tracker t;
  register_abcd(t);
  REQUIRE(t.advance(A, 3).ok());
  REQUIRE(t.fail_axis(A, error{errc::device_lost, "lost", 7}).ok());
  probe late{frontier{{A, 4}, {B, 1}}};
  t.add_waiter(late.node);
  REQUIRE(late.seen.calls == 1);
  CHECK(late.seen.code == errc::device_lost);
  CHECK(late.seen.position == 7);
  probe fine{frontier{{A, 3}}};  // at the frozen epoch: met
  t.add_waiter(fine.node);
  REQUIRE(fine.seen.calls == 1);
  CHECK(fine.seen.code == errc::ok);
  CHECK(t.waiter_count() == 0);
}

TEST_CASE("completion: fail_axis is sticky and the first error wins", "[completion][fail]") {
  completion_tracker t;
  register_abcd(t);
  REQUIRE(t.advance(A, 2).ok());
  REQUIRE(t.fail_axis(A, error{errc::device_lost, "first", 1}).ok());
  REQUIRE(t.fail_axis(A, error{errc::timeout, "second", 2}).ok());  // a no-op
  const status s = t.axis_status(A);
  REQUIRE(s.code() == errc::device_lost);
  CHECK(s.error_value().position() == 1);
  CHECK(s.error_value().message() == "first");
  probe p{frontier{{A, 3}}};
  t.add_waiter(p.node);
  CHECK(p.seen.code == errc::device_lost);
  CHECK(p.seen.position == 1);
}

TEST_CASE("completion: a failed axis's epoch is frozen", "[completion][fail][advance]") {
  completion_tracker t;
  register_abcd(t);
  REQUIRE(t.advance(A, 2).ok());
  REQUIRE(t.fail_axis(A, error{errc::device_lost, "lost", 0}).ok());
  const status late = t.advance(A, 3);
  REQUIRE(late.code() == errc::failed_precondition);
  CHECK(late.error_value().position() == A.raw());
  CHECK(late.error_value().message().find("failed") != std::string_view::npos);
  CHECK(t.advance(A, 1).code() == errc::failed_precondition);
  CHECK(t.retired_epoch(A) == 2);
  CHECK(t.is_retired({A, 2}));
  CHECK_FALSE(t.is_retired({A, 3}));
  CHECK(t.covers(frontier{{A, 2}}));
}

TEST_CASE("completion: fail_axis rejects ok, unknown axes and retired axes",
          "[completion][fail][errors]") {
  completion_tracker t;
  register_abcd(t);
  CHECK(t.fail_axis(A, error{}).code() == errc::invalid_argument);
  CHECK(t.axis_status(A).ok());
  const status unknown = t.fail_axis(axis{99}, error{errc::device_lost, "lost", 0});
  REQUIRE(unknown.code() == errc::out_of_range);
  CHECK(unknown.error_value().position() == 99);
  REQUIRE(t.retire_axis(B).ok());
  CHECK(t.fail_axis(B, error{errc::device_lost, "lost", 0}).code() == errc::failed_precondition);
  CHECK(t.axis_status(B).code() == errc::cancelled);
}

//===-- retire_axis ---------------------------------------------------------===//

TEST_CASE("completion: retire_axis cancels the waiters that still need the axis",
          "[completion][retire]") {
  completion_tracker t;
  register_abcd(t);
  REQUIRE(t.advance(A, 3).ok());
  probe needs_a{frontier{{A, 4}, {B, 1}}};
  probe a_done{frontier{{A, 3}, {B, 1}}};
  probe only_c{frontier{{C, 1}}};
  for (probe* p : {&needs_a, &a_done, &only_c}) t.add_waiter(p->node);
  REQUIRE(t.retire_axis(A).ok());
  REQUIRE(needs_a.seen.calls == 1);
  CHECK(needs_a.seen.code == errc::cancelled);
  CHECK(needs_a.seen.position == A.raw());
  CHECK(a_done.seen.calls == 0);
  CHECK(only_c.seen.calls == 0);
  CHECK(t.axis_status(A).code() == errc::cancelled);
  CHECK(t.retired_epoch(A) == 3);  // still readable

  REQUIRE(t.advance(B, 1).ok());
  CHECK(a_done.seen.calls == 1);
  CHECK(a_done.seen.code == errc::ok);
  REQUIRE(t.advance(C, 1).ok());
  CHECK(only_c.seen.calls == 1);
}

TEST_CASE("completion: after retire_axis, later waits beyond its epoch are cancelled at once",
          "[completion][retire]") {
  completion_tracker t;
  register_abcd(t);
  REQUIRE(t.advance(A, 3).ok());
  REQUIRE(t.retire_axis(A).ok());
  probe beyond{frontier{{A, 4}}};
  t.add_waiter(beyond.node);
  REQUIRE(beyond.seen.calls == 1);
  CHECK(beyond.seen.code == errc::cancelled);
  probe within{frontier{{A, 3}}};
  t.add_waiter(within.node);
  REQUIRE(within.seen.calls == 1);
  CHECK(within.seen.code == errc::ok);
}

TEST_CASE("completion: retire_axis is idempotent, freezes the epoch, and keeps a failure",
          "[completion][retire]") {
  completion_tracker t;
  register_abcd(t);
  REQUIRE(t.advance(A, 2).ok());
  REQUIRE(t.retire_axis(A).ok());
  REQUIRE(t.retire_axis(A).ok());
  const status late = t.advance(A, 3);
  REQUIRE(late.code() == errc::failed_precondition);
  CHECK(late.error_value().message().find("retired") != std::string_view::npos);
  CHECK(t.retired_epoch(A) == 2);
  CHECK(t.retire_axis(axis{99}).code() == errc::out_of_range);

  // Failed, then retired: the failure keeps being delivered.
  REQUIRE(t.fail_axis(B, error{errc::device_lost, "lost", 5}).ok());
  REQUIRE(t.retire_axis(B).ok());
  CHECK(t.axis_status(B).code() == errc::device_lost);
  probe p{frontier{{B, 1}}};
  t.add_waiter(p.node);
  CHECK(p.seen.code == errc::device_lost);
}

TEST_CASE("completion: a failure beats a retirement, which beats pending entries",
          "[completion][fail][retire]") {
  completion_tracker t;
  register_abcd(t);
  REQUIRE(t.fail_axis(C, error{errc::device_lost, "lost", 3}).ok());
  REQUIRE(t.retire_axis(B).ok());
  probe both{frontier{{A, 1}, {B, 1}, {C, 1}}};  // A pending, B retired, C failed
  t.add_waiter(both.node);
  REQUIRE(both.seen.calls == 1);
  CHECK(both.seen.code == errc::device_lost);
  probe retired_and_pending{frontier{{A, 1}, {B, 1}}};
  t.add_waiter(retired_and_pending.node);
  REQUIRE(retired_and_pending.seen.calls == 1);
  CHECK(retired_and_pending.seen.code == errc::cancelled);
  CHECK(retired_and_pending.seen.position == B.raw());
}

//===-- allocation ----------------------------------------------------------===//

TEST_CASE("completion: nothing allocates: construction, advance, waiters, reads, fail, retire",
          "[completion][alloc]") {
  std::array<probe, 8> probes;
  causal::test::allocation_guard guard;
  {
    completion_tracker t;
    for (axis a : {A, B, C, D}) (void)t.register_axis(a);
    std::uint64_t sink = 0;
    for (std::uint64_t i = 1; i <= 500; ++i) {
      // advance with no waiters (the lock-free path), then reads
      (void)t.advance(A, i);
      sink += t.retired_epoch(A) + t.try_retired_epoch(B).value_or(0);
      sink += t.is_retired({A, i}) ? 1 : 0;
      sink += t.covers(frontier{{A, i}, {B, i}}) ? 1 : 0;
      sink += t.axis_status(C).ok() ? 1 : 0;
      // park some waiters, cancel one, satisfy the rest
      for (std::size_t k = 0; k < probes.size(); ++k) {
        probes[k].node.set_requirement(frontier{{A, i + 1}, {B, i}});
        t.add_waiter(probes[k].node);
      }
      (void)t.cancel(probes[0].node);
      (void)t.advance(B, i);
      (void)t.advance(A, i + 1);
      // inline firing, including errors
      probes[0].node.set_requirement(frontier{{axis{99}, 1}});
      t.add_waiter(probes[0].node);
    }
    probes[1].node.set_requirement(frontier{{C, 1}});
    t.add_waiter(probes[1].node);
    probes[2].node.set_requirement(frontier{{D, 1}});
    t.add_waiter(probes[2].node);
    (void)t.fail_axis(C, error{errc::device_lost, "lost", 0});
    (void)t.retire_axis(D);
    probes[3].node.set_requirement(frontier{{A, 1000}});
    t.add_waiter(probes[3].node);  // cancelled when t is destroyed
    CHECK(sink > 0);
  }
  REQUIRE(guard.allocations() == 0);
  CHECK(probes[1].seen.code == errc::device_lost);
  CHECK(probes[2].seen.code == errc::cancelled);
  CHECK(probes[3].seen.code == errc::cancelled);
  CHECK(probes[4].seen.calls == 500);
}

//===-- races ---------------------------------------------------------------===//

namespace {

/// A waiter used from several threads: `armed` is true from just before
/// add_waiter until its callback runs or a cancel that returns true; each
/// firing or successful cancel must find it armed, else a waiter fired twice
/// or fired after a successful cancel.
struct racing_waiter {
  completion_waiter node;
  std::atomic<bool> armed{false};
  std::atomic<std::uint64_t> fired{0};
  std::atomic<std::uint64_t> cancelled{0};
  std::uint64_t adds = 0;  // touched only by the owning thread
  std::thread::id owner{};
};

struct race_ctx {
  completion_tracker* tracker = nullptr;
  std::atomic<std::uint64_t> violations{0};
  std::atomic<std::uint64_t> ok{0};
  std::atomic<std::uint64_t> failed{0};
  std::atomic<std::uint64_t> cancelled{0};
  std::atomic<std::uint64_t> parked_then_fired{0};  // fired by another thread than the adder's
  axis fail_axis{};     // for the fail/retire race
  axis retire_axis{};
};

struct racing_pair {
  racing_waiter* waiter;
  race_ctx* ctx;
};

/// The callback for racing waiters: checks that the outcome is justified
/// by the tracker's state at this moment, then disarms (last touch).
void racing_callback(completion_waiter& w, status s) {
  auto* p = static_cast<racing_pair*>(w.user_data());
  race_ctx& ctx = *p->ctx;
  const completion_tracker& t = *ctx.tracker;
  const frontier& r = w.requirement();
  if (s.ok()) {
    ctx.ok.fetch_add(1, std::memory_order_relaxed);
    if (!t.covers(r)) ctx.violations.fetch_add(1, std::memory_order_relaxed);  // fired early
  } else if (s.code() == errc::device_lost) {
    ctx.failed.fetch_add(1, std::memory_order_relaxed);
    // Only when it needs the failed axis beyond its (frozen) epoch.
    if (!(r.epoch_of(ctx.fail_axis) > t.retired_epoch(ctx.fail_axis)) ||
        t.axis_status(ctx.fail_axis).code() != errc::device_lost) {
      ctx.violations.fetch_add(1, std::memory_order_relaxed);
    }
  } else if (s.code() == errc::cancelled) {
    ctx.cancelled.fetch_add(1, std::memory_order_relaxed);
    if (!(r.epoch_of(ctx.retire_axis) > t.retired_epoch(ctx.retire_axis)) ||
        t.axis_status(ctx.retire_axis).code() != errc::cancelled) {
      ctx.violations.fetch_add(1, std::memory_order_relaxed);
    }
  } else {
    ctx.violations.fetch_add(1, std::memory_order_relaxed);
  }
  if (std::this_thread::get_id() != p->waiter->owner) {
    ctx.parked_then_fired.fetch_add(1, std::memory_order_relaxed);
  }
  p->waiter->fired.fetch_add(1, std::memory_order_relaxed);
  // release: pairs with the owner's acquire load of armed, after which it
  // may rewrite the node; nothing touches the node after this.
  if (!p->waiter->armed.exchange(false, std::memory_order_acq_rel)) {
    ctx.violations.fetch_add(1, std::memory_order_relaxed);
  }
}

/// The shape of one race.
struct race_plan {
  int waiter_threads = 3;
  int pool = 16;                 // waiters per waiter thread
  int min_rounds = 8000;            // each waiter thread runs at least this many rounds
  std::uint64_t min_epochs = 2500;  // and until every advancer has reached this epoch
};

/// Races `axes.size()` advancer threads, each calling `step(a, e)` for its
/// axis index `a` and epochs e = 1, 2, ..., against waiter threads that
/// keep their waiters busy: add with a requirement a little ahead of the
/// current retired epochs (so most waiters park and are fired by an
/// advancer), sometimes cancel. When the waiter threads are done, each
/// advancer takes 8 more steps, so every requirement is met, failed or
/// cancelled. Returns after every waiter is idle or 10 s passed; `reached`
/// gets each advancer's last epoch.
template <class Step>
void run_race(race_ctx& ctx, const std::vector<axis>& axes, const race_plan& plan, Step step,
              std::vector<std::unique_ptr<racing_waiter[]>>& nodes,
              std::vector<std::unique_ptr<racing_pair[]>>& pairs,
              std::vector<std::uint64_t>& reached) {
  const auto pool = static_cast<std::size_t>(plan.pool);
  nodes.clear();
  pairs.clear();
  for (int t = 0; t < plan.waiter_threads; ++t) {
    nodes.push_back(std::make_unique<racing_waiter[]>(pool));
    pairs.push_back(std::make_unique<racing_pair[]>(pool));
    for (std::size_t k = 0; k < pool; ++k) {
      pairs.back()[k] = racing_pair{&nodes.back()[k], &ctx};
      nodes.back()[k].node.set_callback(&racing_callback);
      nodes.back()[k].node.set_user_data(&pairs.back()[k]);
    }
  }
  const std::size_t n_axes = axes.size();
  std::unique_ptr<std::atomic<std::uint64_t>[]> progress(new std::atomic<std::uint64_t>[n_axes]);
  for (std::size_t a = 0; a < n_axes; ++a) progress[a].store(0);
  std::atomic<bool> go{false};
  std::atomic<bool> waiters_done{false};

  std::vector<std::thread> advancers;
  for (std::size_t a = 0; a < n_axes; ++a) {
    advancers.emplace_back([&, a] {
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      std::uint64_t e = 1;
      for (;; ++e) {
        step(a, e);
        progress[a].store(e, std::memory_order_release);
        if (e >= plan.min_epochs && waiters_done.load(std::memory_order_acquire)) break;
        std::this_thread::yield();
      }
      for (std::uint64_t k = 1; k <= 8; ++k) step(a, e + k);
      progress[a].store(e + 8, std::memory_order_release);
    });
  }
  std::vector<std::thread> waiters;
  for (int t = 0; t < plan.waiter_threads; ++t) {
    waiters.emplace_back([&, t] {
      rng r{test_seed() ^ (0x9e37u * static_cast<std::uint64_t>(t + 1))};
      racing_waiter* mine = nodes[static_cast<std::size_t>(t)].get();
      for (std::size_t k = 0; k < pool; ++k) mine[k].owner = std::this_thread::get_id();
      const auto advancers_behind = [&] {
        for (std::size_t a = 0; a < n_axes; ++a) {
          if (progress[a].load(std::memory_order_acquire) < plan.min_epochs) return true;
        }
        return false;
      };
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      for (int round = 0; round < plan.min_rounds || advancers_behind(); ++round) {
        racing_waiter& w = mine[r.below(pool)];
        // acquire: pairs with the callback's release; the node is ours again.
        if (!w.armed.load(std::memory_order_acquire)) {
          frontier req;
          const std::uint64_t n = 1 + r.below(3);
          for (std::uint64_t e = 0; e < n; ++e) {
            const axis a = axes[r.below(n_axes)];
            req.insert_or_raise(a, std::max<std::uint64_t>(1, ctx.tracker->retired_epoch(a) + r.below(4)));
          }
          w.node.set_requirement(req);
          w.armed.store(true, std::memory_order_relaxed);
          ++w.adds;
          ctx.tracker->add_waiter(w.node);
        } else if (r.one_in(4)) {
          if (ctx.tracker->cancel(w.node)) {
            w.cancelled.fetch_add(1, std::memory_order_relaxed);
            if (!w.armed.exchange(false, std::memory_order_acq_rel)) {
              ctx.violations.fetch_add(1, std::memory_order_relaxed);
            }
          }
        } else {
          std::this_thread::yield();
        }
      }
    });
  }
  go.store(true, std::memory_order_release);
  for (std::thread& th : waiters) th.join();
  waiters_done.store(true, std::memory_order_release);
  for (std::thread& th : advancers) th.join();
  reached.clear();
  for (std::size_t a = 0; a < n_axes; ++a) reached.push_back(progress[a].load());
  // Every requirement is now met, failed or cancelled, so every waiter has
  // fired (the advancers fire synchronously) or was cancelled.
  (void)eventually([&] {
    for (const auto& row : nodes) {
      for (std::size_t k = 0; k < pool; ++k) {
        if (row[k].armed.load(std::memory_order_acquire)) return false;
      }
    }
    return true;
  }, 10000ms);
}

std::uint64_t count_armed(const std::vector<std::unique_ptr<racing_waiter[]>>& nodes, int pool) {
  std::uint64_t n = 0;
  for (const auto& row : nodes) {
    for (int k = 0; k < pool; ++k) n += row[k].armed.load(std::memory_order_acquire) ? 1 : 0;
  }
  return n;
}

void check_each_once(const std::vector<std::unique_ptr<racing_waiter[]>>& nodes, int pool,
                     std::uint64_t& total_adds, std::uint64_t& mismatches) {
  total_adds = 0;
  mismatches = 0;
  for (const auto& row : nodes) {
    for (int k = 0; k < pool; ++k) {
      const racing_waiter& w = row[k];
      total_adds += w.adds;
      if (w.fired.load() + w.cancelled.load() != w.adds) ++mismatches;
    }
  }
}

}  // namespace

TEST_CASE("completion race: under concurrent advance, add and cancel, each waiter fires exactly once",
          "[completion][race]") {
  const int advancers = GENERATE(1, 2, 4);
  completion_tracker tracker;
  std::vector<axis> axes;
  for (int a = 0; a < advancers; ++a) {
    axes.push_back(axis{static_cast<std::uint64_t>(10 + a)});
    REQUIRE(tracker.register_axis(axes.back()).ok());
  }
  race_ctx ctx;
  ctx.tracker = &tracker;
  const race_plan plan;
  std::vector<std::unique_ptr<racing_waiter[]>> nodes;
  std::vector<std::unique_ptr<racing_pair[]>> pairs;
  std::vector<std::uint64_t> reached;
  run_race(ctx, axes, plan,
           [&](std::size_t a, std::uint64_t e) {
             if (!tracker.advance(axes[a], e).ok()) ctx.violations.fetch_add(1);
           },
           nodes, pairs, reached);
  CHECK(count_armed(nodes, plan.pool) == 0);
  std::uint64_t adds = 0, mismatches = 0;
  check_each_once(nodes, plan.pool, adds, mismatches);
  INFO("adds " << adds << ", fired by an advancer " << ctx.parked_then_fired.load());
  CHECK(mismatches == 0);
  CHECK(ctx.violations.load() == 0);
  CHECK(ctx.failed.load() == 0);
  CHECK(ctx.cancelled.load() == 0);
  CHECK(adds > 0);
  CHECK(ctx.parked_then_fired.load() > 0);  // the race really raced
  CHECK(tracker.waiter_count() == 0);
  for (std::size_t a = 0; a < axes.size(); ++a) CHECK(tracker.retired_epoch(axes[a]) == reached[a]);
}

TEST_CASE("completion race: fail_axis and retire_axis under load fail or cancel exactly the right waiters",
          "[completion][race][fail][retire]") {
  completion_tracker tracker;
  const std::vector<axis> axes{axis{20}, axis{21}, axis{22}, axis{23}};
  for (axis a : axes) REQUIRE(tracker.register_axis(a).ok());
  race_ctx ctx;
  ctx.tracker = &tracker;
  ctx.fail_axis = axes[1];
  ctx.retire_axis = axes[2];
  const race_plan plan;
  constexpr std::uint64_t fail_at = 200, retire_at = 300;
  std::vector<std::unique_ptr<racing_waiter[]>> nodes;
  std::vector<std::unique_ptr<racing_pair[]>> pairs;
  std::vector<std::uint64_t> reached;
  std::atomic<std::uint64_t> frozen_rejections{0};
  run_race(ctx, axes, plan,
           [&](std::size_t a, std::uint64_t e) {
             // Axis 1 fails and axis 2 retires part-way, from their own
             // advancing thread, while the others keep going.
             if (a == 1 && e == fail_at) {
               if (!tracker.fail_axis(axes[a], error{errc::device_lost, "lost", 1}).ok()) ctx.violations++;
             }
             if (a == 2 && e == retire_at) {
               if (!tracker.retire_axis(axes[a]).ok()) ctx.violations++;
             }
             const status s = tracker.advance(axes[a], e);
             if (!s.ok()) {
               if (s.code() != errc::failed_precondition || (a != 1 && a != 2)) ctx.violations++;
               frozen_rejections++;
             }
           },
           nodes, pairs, reached);
  CHECK(count_armed(nodes, plan.pool) == 0);
  std::uint64_t adds = 0, mismatches = 0;
  check_each_once(nodes, plan.pool, adds, mismatches);
  INFO("adds " << adds << ", ok " << ctx.ok.load() << ", failed " << ctx.failed.load()
               << ", cancelled " << ctx.cancelled.load() << ", fired by an advancer "
               << ctx.parked_then_fired.load());
  CHECK(mismatches == 0);
  CHECK(ctx.violations.load() == 0);
  CHECK(ctx.ok.load() > 0);
  CHECK(ctx.failed.load() > 0);
  CHECK(ctx.cancelled.load() > 0);
  CHECK(frozen_rejections.load() > 0);
  CHECK(tracker.retired_epoch(axes[0]) == reached[0]);
  CHECK(tracker.retired_epoch(axes[1]) == fail_at - 1);
  CHECK(tracker.retired_epoch(axes[2]) == retire_at - 1);
  CHECK(tracker.axis_status(axes[1]).code() == errc::device_lost);
  CHECK(tracker.axis_status(axes[2]).code() == errc::cancelled);
  CHECK(tracker.waiter_count() == 0);
}

TEST_CASE("completion race: a waiter added while a lock-free advance runs is never lost",
          "[completion][race][wakeup]") {
  // The advancing thread takes the lock only when it sees parked waiters.
  // If add_waiter's re-check and advance's look at the count could both
  // miss each other, a waiter would park for an epoch already reached and
  // never fire. Each round: the waiter thread adds a waiter for the next
  // epoch while the advancer reaches it, then waits for the callback.
  completion_tracker tracker;
  REQUIRE(tracker.register_axis(A).ok());
  constexpr std::uint64_t rounds = 5000;
  std::atomic<std::uint64_t> fired{0};
  std::atomic<std::uint64_t> target{0};
  std::atomic<bool> lost{false};
  completion_waiter w{frontier{}, [](completion_waiter& self, status) {
                        static_cast<std::atomic<std::uint64_t>*>(self.user_data())
                            ->fetch_add(1, std::memory_order_release);
                      },
                      &fired};
  std::thread advancer([&] {
    for (std::uint64_t e = 1; e <= rounds && !lost.load(); ++e) {
      while (target.load(std::memory_order_acquire) < e && !lost.load()) {
        std::this_thread::yield();  // two cores may be all we have
      }
      (void)tracker.advance(A, e);
    }
  });
  for (std::uint64_t e = 1; e <= rounds; ++e) {
    w.set_requirement(frontier{{A, e}});
    target.store(e, std::memory_order_release);  // the advancer races us to e
    tracker.add_waiter(w);
    if (!eventually([&] { return fired.load(std::memory_order_acquire) == e; })) {
      lost.store(true);
      break;
    }
  }
  advancer.join();
  CHECK_FALSE(lost.load());
  CHECK(fired.load() == rounds);
  CHECK(tracker.waiter_count() == 0);
}

//===-- property: against a reference model ---------------------------------===//

namespace {

/// The reference: a plain vector of axes, each with an epoch and a state,
/// and the outcome rules written out directly from the contract.
struct model {
  enum class state { live, failed, retired };
  struct entry {
    axis a;
    std::uint64_t epoch = 0;
    state st = state::live;
    error failure{};
  };
  std::size_t capacity;
  std::vector<entry> axes;

  entry* find(axis a) {
    for (entry& e : axes) {
      if (e.a == a) return &e;
    }
    return nullptr;
  }

  errc register_axis(axis a) {
    if (a.raw() == 0 || find(a) != nullptr) return errc::invalid_argument;
    if (axes.size() == capacity) return errc::capacity_exceeded;
    axes.push_back({a});
    return errc::ok;
  }
  errc advance(axis a, std::uint64_t epoch) {
    entry* e = find(a);
    if (e == nullptr || epoch > max_epoch) return errc::out_of_range;
    if (e->st != state::live) return errc::failed_precondition;
    e->epoch = std::max(e->epoch, epoch);
    return errc::ok;
  }
  errc fail(axis a, error err) {
    if (err.code() == errc::ok) return errc::invalid_argument;
    entry* e = find(a);
    if (e == nullptr) return errc::out_of_range;
    if (e->st == state::retired) return errc::failed_precondition;
    if (e->st == state::live) {
      e->st = state::failed;
      e->failure = err;
    }
    return errc::ok;
  }
  errc retire(axis a) {
    entry* e = find(a);
    if (e == nullptr) return errc::out_of_range;
    if (e->st == state::live) e->st = state::retired;
    return errc::ok;
  }

  /// The outcome for a requirement at add time: nullopt means "parks".
  std::optional<error> on_add(const frontier& r) {
    if (r.tainted()) return error{errc::failed_precondition, "", r.size()};
    for (const frontier_entry fe : r) {
      if (find(fe.axis) == nullptr) return error{errc::out_of_range, "", fe.axis.raw()};
      if (fe.epoch > max_epoch) return error{errc::out_of_range, "", fe.epoch};
    }
    return now(r);
  }
  /// The outcome for a parked requirement: nullopt means "still parked".
  std::optional<error> now(const frontier& r) {
    std::optional<error> failure, retired;
    bool pending = false;
    for (const frontier_entry fe : r) {
      const entry* e = find(fe.axis);
      if (e->epoch >= fe.epoch) continue;
      if (e->st == state::failed && !failure) failure = e->failure;
      if (e->st == state::retired && !retired) retired = error{errc::cancelled, "", fe.axis.raw()};
      if (e->st == state::live) pending = true;
    }
    if (failure) return failure;
    if (retired) return retired;
    if (pending) return std::nullopt;
    return error{};
  }
  bool covers(const frontier& r) {
    if (r.tainted()) return false;
    for (const frontier_entry fe : r) {
      const entry* e = find(fe.axis);
      if (e == nullptr || e->epoch < fe.epoch) return false;
    }
    return true;
  }
};

struct model_waiter {
  probe p;
  bool parked = false;
  int expected_calls = 0;
  error expected{};
};

}  // namespace

TEST_CASE("completion property: waiters fire when, and how, the reference model says",
          "[completion][property]") {
  constexpr std::size_t capacity = 6;
  constexpr std::uint64_t raw_pool = 9;  // raw 0..8: includes 0 and overflows the table
  constexpr int steps = 200;
  rng r{test_seed()};
  std::uint64_t fired_total = 0, parked_max = 0;
  int seq = 0, step = 0;
  // Assertions go through `expect`, which costs nothing until a mismatch:
  // then it fails the test with the seed, sequence, step and what differed.
  const auto expect = [&](bool ok, const char* what, const std::string& detail = {}) {
    if (!ok) {
      FAIL("seed 0x" << std::hex << test_seed() << std::dec << ", sequence " << seq << ", step "
                     << step << ": " << what << " " << detail);
    }
  };

  for (seq = 0; seq < property_sequences; ++seq) {
    basic_completion_tracker<capacity> t;
    model m{capacity, {}};
    std::array<model_waiter, 12> ws;
    const auto any_axis = [&] { return axis{r.below(raw_pool)}; };
    const auto any_epoch = [&] {
      if (r.one_in(40)) return max_epoch + 1 + r.below(2);
      return r.below(12);
    };
    const auto any_frontier = [&] {
      frontier f;
      const std::uint64_t n = r.below(4);
      for (std::uint64_t k = 0; k < n; ++k) {
        const axis a = r.one_in(10) ? axis{r.below(raw_pool)} : axis{1 + r.below(raw_pool - 1)};
        if (a.raw() != 0) f.insert_or_raise(a, std::max<std::uint64_t>(1, any_epoch()));
      }
      if (r.one_in(12)) f.set_tainted();
      return f;
    };
    // After an operation: parked waiters whose model outcome is now final
    // must have fired, once, with it; everyone else must not have fired.
    const auto settle = [&] {
      for (model_waiter& w : ws) {
        if (w.parked) {
          if (const std::optional<error> o = m.now(w.p.node.requirement())) {
            w.parked = false;
            ++w.expected_calls;
            w.expected = *o;
          }
        }
        const bool same = w.p.seen.calls == w.expected_calls &&
                          (w.expected_calls == 0 || (w.p.seen.code == w.expected.code() &&
                                                     w.p.seen.position == w.expected.position()));
        if (!same) {
          expect(false, "waiter outcome differs from the model:",
                 "requirement " + causal::to_string(w.p.node.requirement()) + ", calls " +
                     std::to_string(w.p.seen.calls) + " (expected " +
                     std::to_string(w.expected_calls) + "), code " +
                     std::string(causal::to_string(w.p.seen.code)) + " (expected " +
                     std::string(causal::to_string(w.expected.code())) + "), position " +
                     std::to_string(w.p.seen.position) + " (expected " +
                     std::to_string(w.expected.position()) + ")");
        }
      }
    };

    for (step = 0; step < steps; ++step) {
      const std::uint64_t op = r.below(100);
      if (op < 12) {
        const axis a = any_axis();
        expect(t.register_axis(a).code() == m.register_axis(a), "register_axis", std::to_string(a.raw()));
      } else if (op < 50) {
        const axis a = any_axis();
        const std::uint64_t e = any_epoch();
        expect(t.advance(a, e).code() == m.advance(a, e), "advance",
               std::to_string(a.raw()) + " to " + std::to_string(e));
      } else if (op < 78) {
        model_waiter& w = ws[r.below(ws.size())];
        if (!w.parked) {
          w.p.node.set_requirement(any_frontier());
          if (const std::optional<error> o = m.on_add(w.p.node.requirement())) {
            ++w.expected_calls;
            w.expected = *o;
          } else {
            w.parked = true;
          }
          t.add_waiter(w.p.node);
        }
      } else if (op < 86) {
        model_waiter& w = ws[r.below(ws.size())];
        expect(t.cancel(w.p.node) == w.parked, "cancel");
        w.parked = false;
      } else if (op < 91) {
        const axis a = any_axis();
        const error err{r.one_in(5) ? errc::ok : errc::device_lost, "lost",
                        static_cast<std::uint64_t>(step)};
        expect(t.fail_axis(a, err).code() == m.fail(a, err), "fail_axis", std::to_string(a.raw()));
      } else if (op < 95) {
        const axis a = any_axis();
        expect(t.retire_axis(a).code() == m.retire(a), "retire_axis", std::to_string(a.raw()));
      } else {
        // Reads.
        for (std::uint64_t raw = 0; raw < raw_pool; ++raw) {
          const axis a{raw};
          const model::entry* e = m.find(a);
          expect(t.retired_epoch(a) == (e ? e->epoch : 0), "retired_epoch", std::to_string(raw));
          expect(t.try_retired_epoch(a).code() == (e ? errc::ok : errc::out_of_range),
                 "try_retired_epoch", std::to_string(raw));
          const errc expected_status =
              !e ? errc::out_of_range
                 : e->st == model::state::failed ? e->failure.code()
                 : e->st == model::state::retired ? errc::cancelled
                                                  : errc::ok;
          expect(t.axis_status(a).code() == expected_status, "axis_status", std::to_string(raw));
        }
        const frontier f = any_frontier();
        expect(t.covers(f) == m.covers(f), "covers", causal::to_string(f));
      }
      settle();
      std::uint64_t parked = 0;
      for (const model_waiter& w : ws) parked += w.parked ? 1 : 0;
      expect(t.waiter_count() == parked, "waiter_count");
      parked_max = std::max(parked_max, parked);
    }
    expect(t.axis_count() == m.axes.size(), "axis_count");
    // Cancel what is left so destruction delivers nothing unexpected.
    for (model_waiter& w : ws) {
      if (w.parked) expect(t.cancel(w.p.node), "final cancel");
      fired_total += static_cast<std::uint64_t>(w.expected_calls);
    }
  }
  // The generator must reach the interesting states.
  CHECK(fired_total > static_cast<std::uint64_t>(property_sequences) * 5);
  CHECK(parked_max >= 4);
}
