// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Tests for <causal/semaphore.hpp>, single-threaded behaviour plus a few
// two-thread host waits: strictly increasing signals, the history ring and
// frontier_at (the "late waiter" scenario, the merged inexact fallback),
// submitted vs reached values, the taint watermark, failure, timepoints
// (exactly once, inline, cancel, chains), semaphore_link, host waits,
// wait_all / wait_any, device_signal, and the promise that the hot paths
// never allocate. Races are in semaphore_race_test.cpp, the system_wide
// scope across fork() in semaphore_system_test.cpp.
//
// Axes are written A, B, C, ... = axis{1}, axis{2}, ...; F2 is the frontier
// carried by the signal of value 2, and so on. Catch2 assertions are only
// made on the test's own thread; helper threads report through atomics and
// are joined first.

#include <causal/queue.hpp>
#include <causal/semaphore.hpp>

#include "catch.hpp"
#include "string_makers.hpp"
#include "counting_new.hpp"
#include "eventually.hpp"

#include <array>
#include <atomic>
#include <cstring>
#include <new>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace Catch {
template <>
struct StringMaker<causal::value_state> {
  static std::string convert(causal::value_state s) {
    switch (s) {
      case causal::value_state::unsubmitted: return "unsubmitted";
      case causal::value_state::submitted: return "submitted";
      case causal::value_state::reached: return "reached";
    }
    return "?";
  }
};
template <>
struct StringMaker<causal::frontier_entry> {
  static std::string convert(const causal::frontier_entry& e) {
    return causal::to_string(e.axis) + ":" + std::to_string(e.epoch);
  }
};
}  // namespace Catch

namespace {

using causal::axis;
using causal::errc;
using causal::frontier;
using causal::frontier_entry;
using causal::semaphore;
using causal::semaphore_timepoint;
using causal::status;
using causal::value_state;

using namespace std::chrono_literals;

constexpr axis A{1};
constexpr axis B{2};
constexpr axis C{3};
constexpr axis D{4};

/// A semaphore whose ring holds only 2 reached records, to push values out.
using shallow_semaphore = causal::basic_semaphore<frontier, 2>;
/// A semaphore that holds only 2 submitted records (the opt-in bound).
using narrow_semaphore = causal::basic_semaphore<frontier, 4, 2, causal::pending_bounded>;
/// A semaphore with 2 inline submitted records that grows past them.
using growing_semaphore = causal::basic_semaphore<frontier, 4, 2>;

// A pause that usually lets a helper thread park first, so that the
// parked path is exercised; no verdict depends on it (a thread that has
// not parked yet takes the spinning path to the same result).
constexpr auto settle_time = 20ms;

/// Counts callback runs and remembers the last status; the node's
/// user_data points at one.
struct fire_log {
  int runs = 0;
  errc last = errc::ok;
  std::uint64_t value_seen = 0;  // the semaphore's value when it ran (if set)
  const semaphore* sem = nullptr;
};

void log_fire(semaphore_timepoint& tp, status s) noexcept {
  auto* log = static_cast<fire_log*>(tp.user_data());
  ++log->runs;
  log->last = s.code();
  if (log->sem != nullptr) log->value_seen = log->sem->value();
}

/// The value of `r`, REQUIRE-d present.
template <class T>
const T& present(const std::optional<T>& r) {
  REQUIRE(r.has_value());
  return *r;
}

}  // namespace

//===-- basics ----------------------------------------------------------------===//

TEST_CASE("semaphore: a new semaphore holds its initial value, reached, untainted, not failed",
          "[semaphore][basics]") {
  semaphore s;
  CHECK(s.value() == 0);
  CHECK(s.scope() == causal::semaphore_scope::process_local);
  CHECK(s.try_wait(0));
  CHECK_FALSE(s.try_wait(1));
  CHECK_FALSE(s.failed());
  CHECK_FALSE(s.failure().has_value());
  CHECK(s.taint_watermark() == 0);
  CHECK(s.state_of(0) == value_state::reached);
  CHECK(s.state_of(1) == value_state::unsubmitted);

  semaphore ten{10};
  CHECK(ten.value() == 10);
  CHECK(ten.try_wait(10));
  CHECK_FALSE(ten.try_wait(11));
  CHECK(ten.taint_watermark() == 10);
  CHECK_FALSE(ten.is_tainted(5));
  // A value reached at creation imports what nobody recorded: nothing,
  // flagged inexact, but not tainted (a queue may treat it as reached).
  const auto at5 = present(ten.frontier_at(5));
  CHECK(at5.reached);
  CHECK(at5.frontier.empty());
  CHECK_FALSE(at5.frontier.tainted());
  CHECK_FALSE(at5.value_tainted);
  CHECK_FALSE(at5.has_producer());
  const auto at0 = present(ten.frontier_at(0));
  CHECK(at0.reached);
  CHECK(at0.exact);
  CHECK(at0.frontier.empty());
}

TEST_CASE("semaphore: scopes are fixed at creation and have names", "[semaphore][basics]") {
  using causal::semaphore_scope;
  CHECK(causal::to_string(semaphore_scope::queue_local) == "queue_local");
  CHECK(causal::to_string(semaphore_scope::device_local) == "device_local");
  CHECK(causal::to_string(semaphore_scope::device_group) == "device_group");
  CHECK(causal::to_string(semaphore_scope::process_local) == "process_local");
  CHECK(causal::to_string(semaphore_scope::system_wide) == "system_wide");
  semaphore q{0, semaphore_scope::queue_local};
  CHECK(q.scope() == semaphore_scope::queue_local);
  REQUIRE(q.signal(1));
  CHECK(q.value() == 1);
  // Only a system_wide semaphore can be exported.
  const auto handle = q.export_handle();
  REQUIRE_FALSE(handle);
  CHECK(handle.code() == errc::failed_precondition);
  STATIC_REQUIRE(!std::is_copy_constructible_v<semaphore>);
  STATIC_REQUIRE(!std::is_copy_assignable_v<semaphore>);
  STATIC_REQUIRE(semaphore::history_depth == 4);
  STATIC_REQUIRE(semaphore::pending_capacity == 8);
}

//===-- strictly increasing ---------------------------------------------------===//

TEST_CASE("semaphore: signal must strictly increase; equal or lower is not_increasing and "
          "changes nothing",
          "[semaphore][signal]") {
  semaphore s;
  const frontier f3{{A, 3}};
  REQUIRE(s.signal(3, f3));
  CHECK(s.value() == 3);

  fire_log log;
  semaphore_timepoint tp{4, &log_fire, &log};
  s.add_timepoint(tp);
  REQUIRE(log.runs == 0);

  const frontier other{{B, 9}};
  for (std::uint64_t bad : {std::uint64_t{3}, std::uint64_t{2}, std::uint64_t{0}}) {
    CAPTURE(bad);
    const status st = s.signal(bad, other);
    REQUIRE_FALSE(st);
    CHECK(st.code() == errc::not_increasing);
    CHECK(st.error_value().position() == bad);
    CHECK_FALSE(s.signal(bad).ok());
    CHECK(s.signal(bad).code() == errc::not_increasing);
    CHECK(s.signal_external(bad).code() == errc::not_increasing);
  }
  // Nothing changed: payload, watermark, history, pending timepoints, failure.
  CHECK(s.value() == 3);
  CHECK(s.taint_watermark() == 3);
  CHECK_FALSE(s.failed());
  CHECK(log.runs == 0);
  const auto at3 = present(s.frontier_at(3));
  CHECK(at3.frontier == f3);
  CHECK(at3.signal_value == 3);
  CHECK(at3.exact);

  REQUIRE(s.signal(4));
  CHECK(log.runs == 1);
  CHECK(log.last == errc::ok);
}

//===-- history ---------------------------------------------------------------===//

TEMPLATE_TEST_CASE("semaphore: a late waiter imports the frontier of the first signal that "
                   "reached its value, not a later one",
                   "[semaphore][history][late_waiter]", (causal::basic_semaphore<frontier, 4>),
                   (causal::basic_semaphore<frontier, 2, 1>),
                   (causal::basic_semaphore<causal::basic_frontier<4>, 3, 4>)) {
  using F = typename TestType::frontier_type;
  TestType s;
  const F f2{{A, 2}, {B, 1}};
  const F f5{{A, 5}, {B, 4}, {C, 1}};
  REQUIRE(s.signal(2, f2, frontier_entry{A, 2}));
  REQUIRE(s.signal(5, f5, frontier_entry{A, 5}));
  REQUIRE(s.value() == 5);

  // The waiter on S >= 2 arrives after S moved to 5: it learns F2 only.
  const auto at2 = present(s.frontier_at(2));
  CHECK(at2.frontier == f2);
  CHECK(at2.frontier != f5);
  CHECK(at2.signal_value == 2);
  CHECK(at2.producer == frontier_entry{A, 2});
  CHECK(at2.reached);
  CHECK(at2.exact);
  CHECK_FALSE(at2.value_tainted);

  // S >= 1 was also first reached by the signal of 2.
  CHECK(present(s.frontier_at(1)).frontier == f2);
  // S >= 3 (and 4, 5) were first reached by the signal of 5.
  for (std::uint64_t v : {3u, 4u, 5u}) {
    CAPTURE(v);
    const auto at = present(s.frontier_at(v));
    CHECK(at.frontier == f5);
    CHECK(at.signal_value == 5);
    CHECK(at.producer == frontier_entry{A, 5});
    CHECK(at.exact);
    CHECK(at.reached);
  }
  // Unreached and never submitted: no frontier at all.
  CHECK_FALSE(s.frontier_at(6).has_value());
}

TEST_CASE("semaphore: values that left the history ring import the merged superset, inexact",
          "[semaphore][history]") {
  shallow_semaphore s;  // keeps the last 2 reached records
  const std::array<frontier, 6> f{frontier{},           frontier{{A, 1}},         frontier{{B, 2}},
                                  frontier{{A, 3}, {C, 3}}, frontier{{D, 4}},     frontier{{B, 5}}};
  for (std::uint64_t v = 1; v <= 5; ++v) REQUIRE(s.signal(v, f[v]));
  // Ring: 4, 5. Left it: 1, 2, 3, merged into {A:3, B:2, C:3}.
  const frontier retired{{A, 3}, {B, 2}, {C, 3}};
  for (std::uint64_t v = 1; v <= 3; ++v) {
    CAPTURE(v);
    const auto at = present(s.frontier_at(v));
    CHECK(at.frontier == retired);
    CHECK_FALSE(at.exact);
    CHECK(at.reached);
    CHECK_FALSE(at.value_tainted);
    CHECK_FALSE(at.has_producer());
    CHECK(at.signal_value == 0);
    // A superset of the exact answer: sound as knowledge, since all of it
    // was reached.
    CHECK(causal::dominates(at.frontier, f[v]));
  }
  for (std::uint64_t v = 4; v <= 5; ++v) {
    CAPTURE(v);
    const auto at = present(s.frontier_at(v));
    CHECK(at.frontier == f[v]);
    CHECK(at.exact);
    CHECK(at.signal_value == v);
  }
}

TEST_CASE("semaphore: HistoryDepth 1 keeps only the latest record exact", "[semaphore][history]") {
  causal::basic_semaphore<frontier, 1> s;
  REQUIRE(s.signal(1, frontier{{A, 1}}));
  REQUIRE(s.signal(4, frontier{{B, 4}}));
  const auto at1 = present(s.frontier_at(1));
  CHECK(at1.frontier == frontier{{A, 1}});
  CHECK_FALSE(at1.exact);
  const auto at2 = present(s.frontier_at(2));
  CHECK(at2.frontier == frontier{{B, 4}});
  CHECK(at2.exact);
  CHECK(at2.signal_value == 4);
}

//===-- submitted vs reached --------------------------------------------------===//

TEST_CASE("semaphore: a submitted signal answers frontier_at before it is reached, with its "
          "producer",
          "[semaphore][submit]") {
  semaphore s;
  const frontier f3{{A, 3}, {B, 7}};
  REQUIRE(s.submit_signal(3, f3, frontier_entry{A, 3}));
  CHECK(s.value() == 0);
  CHECK_FALSE(s.try_wait(3));
  CHECK(s.state_of(3) == value_state::submitted);
  CHECK(s.state_of(2) == value_state::submitted);  // covered by the signal of 3
  CHECK(s.state_of(4) == value_state::unsubmitted);

  for (std::uint64_t v : {1u, 2u, 3u}) {
    CAPTURE(v);
    const auto at = present(s.frontier_at(v));
    CHECK_FALSE(at.reached);
    // Exact only for the submitted value itself: a lower signal submitted
    // later may reach 1 or 2 first, so 3's frontier is a requirement for
    // them (its producer covered implies S >= v), not knowledge.
    CHECK(at.exact == (v == 3));
    CHECK(at.frontier == f3);
    CHECK(at.signal_value == 3);
    CHECK(at.has_producer());
    CHECK(at.producer == frontier_entry{A, 3});
  }
  // Wait-before-signal: nothing submitted reaches 4, so there is no
  // frontier to elide against.
  CHECK_FALSE(s.frontier_at(4).has_value());

  // Reaching it keeps the submitted frontier and producer.
  REQUIRE(s.signal(3));
  const auto at3 = present(s.frontier_at(3));
  CHECK(at3.reached);
  CHECK(at3.frontier == f3);
  CHECK(at3.producer == frontier_entry{A, 3});
  CHECK(s.state_of(3) == value_state::reached);
}

TEST_CASE("semaphore: a wait before any signal has no frontier (never elided)",
          "[semaphore][submit]") {
  semaphore s;
  CHECK_FALSE(s.frontier_at(1).has_value());
  CHECK(s.state_of(1) == value_state::unsubmitted);
  REQUIRE(s.signal(1));
  CHECK_FALSE(s.frontier_at(2).has_value());
  // A host signal with no submission and no frontier imports an empty,
  // untainted, exact frontier.
  const auto at1 = present(s.frontier_at(1));
  CHECK(at1.frontier.empty());
  CHECK(at1.exact);
  CHECK_FALSE(at1.has_producer());
}

TEST_CASE("semaphore: submissions are ordered by value, not submission time (5 then 3)",
          "[semaphore][submit]") {
  semaphore s;
  const frontier f5{{B, 5}};
  const frontier f3{{A, 3}};
  REQUIRE(s.submit_signal(5, f5, frontier_entry{B, 5}));
  // Before 3 is submitted, a waiter on 2 can only be told about 5's signal,
  // and not as exact knowledge.
  const auto early = present(s.frontier_at(2));
  CHECK(early.frontier == f5);
  CHECK_FALSE(early.exact);
  REQUIRE(s.submit_signal(3, f3, frontier_entry{A, 3}));

  CHECK(present(s.frontier_at(1)).frontier == f3);
  CHECK(present(s.frontier_at(2)).frontier == f3);  // the later, lower submission
  CHECK(present(s.frontier_at(3)).exact);
  CHECK_FALSE(present(s.frontier_at(4)).exact);
  CHECK(present(s.frontier_at(5)).exact);
  CHECK(present(s.frontier_at(3)).frontier == f3);
  CHECK(present(s.frontier_at(3)).producer == frontier_entry{A, 3});
  CHECK(present(s.frontier_at(4)).frontier == f5);
  CHECK(present(s.frontier_at(5)).producer == frontier_entry{B, 5});
  CHECK_FALSE(s.frontier_at(6).has_value());

  REQUIRE(s.signal(3));
  const auto at3 = present(s.frontier_at(3));
  CHECK(at3.reached);
  CHECK(at3.frontier == f3);
  const auto at5 = present(s.frontier_at(5));
  CHECK_FALSE(at5.reached);
  CHECK(at5.frontier == f5);

  REQUIRE(s.signal(5));
  const auto reached5 = present(s.frontier_at(4));
  CHECK(reached5.reached);
  CHECK(reached5.frontier == f5);
  CHECK(reached5.producer == frontier_entry{B, 5});
}

TEST_CASE("semaphore: submit_signal rejects non-increasing, duplicate and over-capacity values, "
          "changing nothing",
          "[semaphore][submit][errors]") {
  narrow_semaphore s;  // 2 submitted records at most
  REQUIRE(s.signal(2));
  CHECK(s.submit_signal(2, frontier{{A, 2}}).code() == errc::not_increasing);
  CHECK(s.submit_signal(1, frontier{{A, 1}}).code() == errc::not_increasing);

  REQUIRE(s.submit_signal(4, frontier{{A, 4}}));
  const status dup = s.submit_signal(4, frontier{{B, 4}});
  CHECK(dup.code() == errc::invalid_argument);
  CHECK(present(s.frontier_at(4)).frontier == frontier{{A, 4}});  // the first one stays

  REQUIRE(s.submit_signal(6, frontier{{A, 6}}));
  const status full = s.submit_signal(8, frontier{{A, 8}});
  REQUIRE_FALSE(full);
  CHECK(full.code() == errc::resource_exhausted);
  CHECK(full.error_value().position() == narrow_semaphore::pending_capacity);
  // Never a silent drop: the outstanding ones are all still there, and 8
  // is not.
  CHECK(present(s.frontier_at(3)).frontier == frontier{{A, 4}});
  CHECK(present(s.frontier_at(5)).frontier == frontier{{A, 6}});
  CHECK_FALSE(s.frontier_at(7).has_value());
  CHECK(s.value() == 2);

  // Reaching one frees its slot.
  REQUIRE(s.signal(4));
  REQUIRE(s.submit_signal(8, frontier{{A, 8}}));
  CHECK(present(s.frontier_at(7)).frontier == frontier{{A, 8}});
}

TEST_CASE("semaphore: signal(v) without a frontier reaches a submitted record with its "
          "frontier; signal(v, f) merges f into it",
          "[semaphore][submit]") {
  semaphore s;
  const frontier f2{{A, 2}};
  REQUIRE(s.submit_signal(2, f2, frontier_entry{A, 2}));
  REQUIRE(s.submit_signal(4, frontier{{A, 4}}, frontier_entry{A, 4}));
  REQUIRE(s.signal(2));
  const auto at2 = present(s.frontier_at(2));
  CHECK(at2.frontier == f2);
  CHECK(at2.producer == frontier_entry{A, 2});

  // A signal carrying more knowledge merges it in; an explicit producer wins.
  REQUIRE(s.signal(4, frontier{{B, 9}}, frontier_entry{B, 9}));
  const auto at4 = present(s.frontier_at(4));
  CHECK(at4.frontier == frontier{{A, 4}, {B, 9}});
  CHECK(at4.producer == frontier_entry{B, 9});
}

TEST_CASE("semaphore: submitted records below a reached value are dropped", "[semaphore][submit]") {
  narrow_semaphore s;
  REQUIRE(s.submit_signal(3, frontier{{A, 3}}));
  REQUIRE(s.submit_signal(5, frontier{{A, 5}}));
  // 4 reaches first: the submitted 3 can no longer be the first to reach 3.
  REQUIRE(s.signal(4, frontier{{B, 4}}));
  const auto at3 = present(s.frontier_at(3));
  CHECK(at3.reached);
  CHECK(at3.signal_value == 4);
  CHECK(at3.frontier == frontier{{B, 4}});
  // Its own late signal is rejected.
  CHECK(s.signal(3).code() == errc::not_increasing);
  // 5 is still submitted, and the slot of 3 is free again.
  const auto at5 = present(s.frontier_at(5));
  CHECK_FALSE(at5.reached);
  CHECK(at5.frontier == frontier{{A, 5}});
  REQUIRE(s.submit_signal(9, frontier{{A, 9}}));
  // Reaching 9 drops 5 as well: it reached through 9's record.
  REQUIRE(s.signal(9));
  const auto at5b = present(s.frontier_at(5));
  CHECK(at5b.reached);
  CHECK(at5b.signal_value == 9);
  CHECK(at5b.frontier == frontier{{A, 9}});
  CHECK(s.state_of(10) == value_state::unsubmitted);
  // Both slots are free.
  REQUIRE(s.submit_signal(10, frontier{}));
  REQUIRE(s.submit_signal(11, frontier{}));
}

TEST_CASE("semaphore: submit-ahead of any depth: the default table grows past its inline "
          "records and keeps every record in value order",
          "[semaphore][submit][grow]") {
  growing_semaphore s;  // 2 inline records, then heap storage
  // 10 000 records, submitted out of order in blocks (each block of ten
  // backwards), checked against a plain reference of what was submitted.
  constexpr std::uint64_t n = 10'000;
  for (std::uint64_t block = 0; block < n / 10; ++block) {
    for (std::uint64_t k = 10; k >= 1; --k) {
      const std::uint64_t v = block * 10 + k;
      REQUIRE(s.submit_signal(v, frontier{{A, v}}, frontier_entry{A, v}));
    }
  }
  CHECK(s.pending_count() == n);
  CHECK(s.submit_signal(77, frontier{}).code() == errc::invalid_argument);  // duplicate
  for (std::uint64_t v : {std::uint64_t{1}, std::uint64_t{2}, std::uint64_t{5000}, n}) {
    const auto at = present(s.frontier_at(v));
    CHECK_FALSE(at.reached);
    CHECK(at.exact);
    CHECK(at.signal_value == v);
    CHECK(at.producer == frontier_entry{A, v});
  }
  CHECK(s.state_of(n) == value_state::submitted);
  CHECK(s.state_of(n + 1) == value_state::unsubmitted);
  // Reaching a value consumes the records at or below it, in order.
  REQUIRE(s.signal(4000));
  CHECK(s.pending_count() == n - 4000);
  CHECK(present(s.frontier_at(4000)).frontier == frontier{{A, 4000}});
  CHECK(present(s.frontier_at(4001)).signal_value == 4001);
  for (std::uint64_t v = 4001; v <= n; ++v) REQUIRE(s.signal(v));
  CHECK(s.pending_count() == 0);
  CHECK(present(s.frontier_at(n)).frontier == frontier{{A, n}});
  // The grown storage is kept: submitting that deep again allocates nothing.
  bool all_ok = true;
  const frontier f{{A, 1}};
  const causal::test::allocation_guard guard;
  for (std::uint64_t v = n + 1; v <= 2 * n; ++v) all_ok = s.submit_signal(v, f).ok() && all_ok;
  const std::uint64_t allocations = guard.thread_allocations();
  CHECK(all_ok);
  CHECK(allocations == 0);
}

TEST_CASE("semaphore: reservations count against a bounded table; a reserved submit never "
          "fails for room; refused reservations change nothing",
          "[semaphore][submit][reserve]") {
  narrow_semaphore s;  // 2 records at most
  REQUIRE(s.reserve_signal());
  REQUIRE(s.submit_signal(3, frontier{{A, 3}}));
  // One record reserved, one used: the table is full for everyone else.
  const status full = s.submit_signal(5, frontier{{A, 5}});
  CHECK(full.code() == errc::resource_exhausted);
  CHECK(s.reserve_signal().code() == errc::resource_exhausted);
  CHECK(s.pending_count() == 1);
  // The reservation holder still gets its record.
  REQUIRE(s.submit_reserved_signal(4, frontier{{A, 4}}, frontier_entry{A, 4}));
  CHECK(s.pending_count() == 2);
  CHECK(present(s.frontier_at(4)).producer == frontier_entry{A, 4});
  // A reservation given back frees its record.
  REQUIRE(s.signal(4));  // consumes 3 and 4
  CHECK(s.pending_count() == 0);
  REQUIRE(s.reserve_signal());
  REQUIRE(s.reserve_signal());
  CHECK(s.reserve_signal().code() == errc::resource_exhausted);
  s.unreserve_signal();
  REQUIRE(s.submit_signal(9, frontier{}));  // the record given back
  CHECK(s.submit_signal(10, frontier{}).code() == errc::resource_exhausted);
  s.unreserve_signal();
  REQUIRE(s.submit_signal(10, frontier{}));
  // A reserved submit that loses to a concurrent signal consumes its
  // reservation and changes nothing else.
  growing_semaphore g;
  REQUIRE(g.reserve_signal());
  REQUIRE(g.signal(6));
  CHECK(g.submit_reserved_signal(5, frontier{}).code() == errc::not_increasing);
  CHECK(g.pending_count() == 0);
  REQUIRE(g.submit_signal(7, frontier{}));
  // A failed semaphore refuses reservations with its failure.
  REQUIRE(g.fail(causal::error{errc::device_lost, "lost"}));
  CHECK(g.reserve_signal().code() == errc::device_lost);
}

TEST_CASE("semaphore: with a rejecting frontier, what does not fit is kept tainted, never "
          "silently dropped",
          "[semaphore][submit][overflow]") {
  using tight = causal::basic_frontier<2, causal::default_axis_layout, causal::reject_overflow>;
  const auto make = [](std::initializer_list<frontier_entry> entries) {
    return tight::from_entries(std::span<const frontier_entry>(entries.begin(), entries.size()))
        .value();
  };
  SECTION("a signal whose frontier cannot join the submitted one keeps its own, tainted") {
    causal::basic_semaphore<tight, 2> s;
    REQUIRE(s.submit_signal(2, make({{A, 2}, {B, 2}}), frontier_entry{A, 2}));
    REQUIRE(s.signal(2, make({{C, 2}})));
    const auto at = present(s.frontier_at(2));
    CHECK(at.reached);
    CHECK(at.frontier.tainted());
    CHECK(at.frontier.epoch_of(C) == 2);
    CHECK(at.producer == frontier_entry{A, 2});
    // Tainted as a requirement: never dominated, whatever the knowledge.
    CHECK_FALSE(causal::dominates(make({{A, 9}, {C, 9}}), at.frontier));
  }
  SECTION("records that leave the ring and do not fit the merged superset taint it") {
    causal::basic_semaphore<tight, 1> s;
    REQUIRE(s.signal(1, make({{A, 1}, {B, 1}})));
    REQUIRE(s.signal(2, make({{C, 2}, {D, 2}})));  // 1 leaves: superset {A:1, B:1}
    const auto at1 = present(s.frontier_at(1));
    CHECK_FALSE(at1.exact);
    CHECK_FALSE(at1.frontier.tainted());
    REQUIRE(s.signal(3, make({})));  // 2 leaves: {A, B, C, D} does not fit 2
    for (std::uint64_t v : {1u, 2u}) {
      CAPTURE(v);
      const auto at = present(s.frontier_at(v));
      CHECK_FALSE(at.exact);
      CHECK(at.frontier.tainted());
    }
  }
}

//===-- taint watermark -------------------------------------------------------===//

TEST_CASE("semaphore: an external signal taints the values above the watermark; a witnessed "
          "signal heals them",
          "[semaphore][taint]") {
  semaphore s;
  const frontier f2{{A, 2}};
  REQUIRE(s.signal(2, f2, frontier_entry{A, 2}));
  REQUIRE(s.signal_external(5));
  CHECK(s.value() == 5);
  CHECK(s.try_wait(5));
  CHECK(s.taint_watermark() == 2);
  CHECK_FALSE(s.is_tainted(2));
  CHECK(s.is_tainted(3));
  CHECK(s.is_tainted(5));
  CHECK_FALSE(s.is_tainted(6));  // not reached (yet)

  // Up to the watermark: exact as before.
  const auto at2 = present(s.frontier_at(2));
  CHECK(at2.frontier == f2);
  CHECK_FALSE(at2.value_tainted);
  CHECK(at2.exact);

  // Above it: what the watermark proves, tainted, no producer.
  for (std::uint64_t v : {3u, 5u}) {
    CAPTURE(v);
    const auto at = present(s.frontier_at(v));
    CHECK(at.reached);
    CHECK(at.value_tainted);
    CHECK_FALSE(at.exact);
    CHECK_FALSE(at.has_producer());
    CHECK(at.frontier.tainted());
    CHECK(at.frontier.epoch_of(A) == 2);  // what was known at the watermark
    // A tainted requirement is never dominated: no elision by dominance.
    CHECK_FALSE(causal::dominates(frontier{{A, 100}, {B, 100}}, at.frontier));
  }

  // A witnessed signal with a clean frontier heals every value below it.
  const frontier f7{{A, 7}, {B, 1}};
  REQUIRE(s.signal(7, f7));
  CHECK(s.taint_watermark() == 7);
  for (std::uint64_t v : {3u, 5u, 6u, 7u}) {
    CAPTURE(v);
    CHECK_FALSE(s.is_tainted(v));
    const auto at = present(s.frontier_at(v));
    CHECK_FALSE(at.value_tainted);
    CHECK_FALSE(at.frontier.tainted());
    CHECK(at.frontier == f7);
  }
}

TEST_CASE("semaphore: a witnessed signal heals only when its frontier is complete",
          "[semaphore][taint]") {
  semaphore s;
  REQUIRE(s.signal_external(3));
  CHECK(s.is_tainted(1));
  // The taint bit (overflow) without a producer entry: not complete.
  frontier overflowed{{A, 4}};
  overflowed.set_tainted();
  REQUIRE(s.signal(4, overflowed));
  CHECK(s.taint_watermark() == 0);
  CHECK(s.is_tainted(4));
  CHECK(present(s.frontier_at(4)).value_tainted);
  // With a producer entry the same overflow is complete (docs/frontiers.md).
  REQUIRE(s.signal(5, overflowed, frontier_entry{A, 5}));
  CHECK(s.taint_watermark() == 5);
  CHECK_FALSE(s.is_tainted(1));
  // 2 was first reached by the external 3, whose frontier nobody knows. It
  // imports the first witnessed record above it (4's): sound knowledge,
  // since 4 is reached, but not the frontier of the signal that reached 2,
  // so it is inexact and names no signal; its own overflow taint stays, so
  // it is never dominated as a requirement.
  const auto at2 = present(s.frontier_at(2));
  CHECK_FALSE(at2.value_tainted);
  CHECK_FALSE(at2.exact);
  CHECK(at2.signal_value == 0);
  CHECK(at2.frontier.tainted());
  CHECK_FALSE(at2.has_producer());
  const auto at5 = present(s.frontier_at(5));
  CHECK_FALSE(at5.value_tainted);
  CHECK(at5.producer == frontier_entry{A, 5});
}

TEST_CASE("semaphore: after an external value heals, a value it reached imports a later "
          "record's frontier, flagged inexact with no signal named",
          "[semaphore][taint][exact]") {
  semaphore s;
  const frontier f7{{A, 7}, {B, 2}};
  REQUIRE(s.signal_external(5));
  REQUIRE(s.signal(7, f7, frontier_entry{A, 7}));
  CHECK(s.taint_watermark() == 7);  // healed
  // 3 was first reached by the external 5: the late-waiter rule has no
  // frontier to give, so 7's (reached, hence sound knowledge) stands in.
  const auto at3 = present(s.frontier_at(3));
  CHECK(at3.reached);
  CHECK_FALSE(at3.value_tainted);
  CHECK_FALSE(at3.exact);
  CHECK(at3.signal_value == 0);
  CHECK_FALSE(at3.has_producer());
  CHECK(at3.frontier == f7);
  // 6 and 7 were first reached by 7 itself: exact.
  const auto at6 = present(s.frontier_at(6));
  CHECK(at6.exact);
  CHECK(at6.signal_value == 7);
  CHECK(at6.producer == frontier_entry{A, 7});

  SECTION("also once the external record has left the ring") {
    shallow_semaphore t;  // 2 reached records
    REQUIRE(t.signal_external(5));
    REQUIRE(t.signal(7, f7, frontier_entry{A, 7}));
    REQUIRE(t.signal(8, frontier{{A, 8}}, frontier_entry{A, 8}));  // 5 leaves the ring
    const auto at4 = present(t.frontier_at(4));
    CHECK_FALSE(at4.exact);
    CHECK(at4.signal_value == 0);
    CHECK(at4.frontier == f7);
    CHECK(present(t.frontier_at(7)).exact);
  }
}

TEST_CASE("semaphore: an external signal of a submitted value drops the submitted frontier",
          "[semaphore][taint][submit]") {
  semaphore s;
  REQUIRE(s.submit_signal(2, frontier{{A, 2}}, frontier_entry{A, 2}));
  REQUIRE(s.signal_external(2));
  CHECK(s.is_tainted(2));
  const auto at = present(s.frontier_at(2));
  CHECK(at.value_tainted);
  CHECK_FALSE(at.has_producer());
  CHECK(at.frontier.tainted());
  CHECK(at.frontier.epoch_of(A) == 0);  // the submitted knowledge was not witnessed
  CHECK(s.state_of(3) == value_state::unsubmitted);
}

//===-- failure ---------------------------------------------------------------===//

TEST_CASE("semaphore: fail is sticky, the first error wins, and everything after sees it",
          "[semaphore][fail]") {
  semaphore s;
  REQUIRE(s.signal(1));
  fire_log pending;
  semaphore_timepoint tp{5, &log_fire, &pending};
  s.add_timepoint(tp);

  CHECK(s.fail(causal::error{errc::device_lost, "gpu fell off the bus", 42}));
  CHECK_FALSE(s.fail(causal::error{errc::timeout, "second"}));
  REQUIRE(s.failed());
  const auto f = s.failure();
  REQUIRE(f.has_value());
  CHECK(f->code() == errc::device_lost);
  CHECK(f->position() == 42);

  // The pending timepoint got the error, once.
  CHECK(pending.runs == 1);
  CHECK(pending.last == errc::device_lost);

  // Later timepoints fire inline with the error above the frozen payload;
  // a value reached before the failure stays reached for every waiter,
  // however late it arms.
  fire_log later;
  semaphore_timepoint tp2{2, &log_fire, &later};
  s.add_timepoint(tp2);
  CHECK(later.runs == 1);
  CHECK(later.last == errc::device_lost);
  fire_log reached;
  semaphore_timepoint tp3{1, &log_fire, &reached};
  s.add_timepoint(tp3);
  CHECK(reached.runs == 1);
  CHECK(reached.last == errc::ok);

  // Signals and submissions return the failure; nothing changes.
  CHECK(s.signal(2).code() == errc::device_lost);
  CHECK(s.signal_external(3).code() == errc::device_lost);
  CHECK(s.submit_signal(4, frontier{}).code() == errc::device_lost);
  CHECK(s.value() == 1);
  // Reached before the failure: still reached. Above it: the failure.
  CHECK(s.try_wait(1));
  CHECK(s.wait(1));
  CHECK_FALSE(s.try_wait(2));
  CHECK(s.wait(2).code() == errc::device_lost);
  CHECK(s.wait_for(100, 1s).code() == errc::device_lost);
  CHECK(pending.runs == 1);
}

TEST_CASE("semaphore: fail(errc::ok) records failed_precondition instead", "[semaphore][fail]") {
  semaphore s;
  CHECK(s.fail(causal::error{}));
  REQUIRE(s.failure().has_value());
  CHECK(s.failure()->code() == errc::failed_precondition);
}

TEST_CASE("semaphore: a host wait parked on a value gets the failure", "[semaphore][fail][wait]") {
  semaphore s;
  std::atomic<int> code{-1};
  std::thread waiter([&] {
    code.store(static_cast<int>(s.wait_until(10, semaphore::clock::time_point::max(), 0).code()));
  });
  // Parked (or about to park): the failure must wake it.
  REQUIRE(causal::test::eventually([&] { return s.parked_waiters() == 1; }));
  REQUIRE(s.fail(causal::error{errc::cancelled, "shutting down"}));
  waiter.join();
  CHECK(static_cast<errc>(code.load()) == errc::cancelled);
}

TEST_CASE("semaphore: device_signal fails the semaphore on a non-increasing value",
          "[semaphore][fail][signal]") {
  semaphore s;
  REQUIRE(s.device_signal(3));
  CHECK_FALSE(s.failed());
  fire_log log;
  semaphore_timepoint tp{9, &log_fire, &log};
  s.add_timepoint(tp);

  const status st = s.device_signal(3);
  CHECK(st.code() == errc::not_increasing);
  REQUIRE(s.failed());
  CHECK(s.failure()->code() == errc::not_increasing);
  CHECK(log.runs == 1);
  CHECK(log.last == errc::not_increasing);
  CHECK(s.wait(3));  // reached before the failure
  CHECK(s.wait(4).code() == errc::not_increasing);
  // The host form only reports it.
  semaphore h;
  REQUIRE(h.signal(3));
  CHECK(h.signal(3).code() == errc::not_increasing);
  CHECK_FALSE(h.failed());
}

//===-- timepoints ------------------------------------------------------------===//

TEST_CASE("semaphore: timepoints fire exactly once, in threshold order, when reached",
          "[semaphore][timepoint]") {
  semaphore s;
  std::vector<std::uint64_t> order;
  struct ctx {
    std::vector<std::uint64_t>* order;
    int runs = 0;
  };
  auto record = [](semaphore_timepoint& tp, status st) noexcept {
    auto* c = static_cast<ctx*>(tp.user_data());
    ++c->runs;
    if (st) c->order->push_back(tp.threshold());
  };
  std::array<ctx, 5> ctxs{};
  std::array<semaphore_timepoint, 5> nodes;
  const std::array<std::uint64_t, 5> thresholds{4, 2, 6, 2, 3};
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    ctxs[i].order = &order;
    nodes[i].reset(thresholds[i], record, &ctxs[i]);
    s.add_timepoint(nodes[i]);
  }
  order.reserve(8);
  REQUIRE(s.signal(1));
  CHECK(order.empty());
  REQUIRE(s.signal(3));  // 2, 2, 3
  CHECK(order == std::vector<std::uint64_t>{2, 2, 3});
  REQUIRE(s.signal(10));  // 4, 6
  CHECK(order == std::vector<std::uint64_t>{2, 2, 3, 4, 6});
  REQUIRE(s.signal(11));
  for (const ctx& c : ctxs) CHECK(c.runs == 1);
  // Fired nodes are unregistered: cancel has nothing to stop.
  for (semaphore_timepoint& n : nodes) CHECK_FALSE(n.cancel());
}

TEST_CASE("semaphore: a timepoint whose value is already reached fires inline",
          "[semaphore][timepoint]") {
  semaphore s;
  REQUIRE(s.signal(5));
  fire_log log;
  semaphore_timepoint tp{5, &log_fire, &log};
  s.add_timepoint(tp);
  CHECK(log.runs == 1);
  CHECK(log.last == errc::ok);
  CHECK_FALSE(tp.cancel());
  tp.reset(0, &log_fire, &log);
  s.add_timepoint(tp);
  CHECK(log.runs == 2);
}

TEST_CASE("semaphore: cancel returns true before firing (and the callback never runs), false "
          "after",
          "[semaphore][timepoint][cancel]") {
  semaphore s;
  fire_log log;
  semaphore_timepoint never_registered{1, &log_fire, &log};
  CHECK_FALSE(never_registered.cancel());

  semaphore_timepoint tp{3, &log_fire, &log};
  s.add_timepoint(tp);
  CHECK(tp.cancel());
  CHECK_FALSE(tp.cancel());  // already unregistered
  REQUIRE(s.signal(5));
  CHECK(log.runs == 0);

  // Re-registration after cancel works; then it fires and cancel is false.
  tp.reset(6, &log_fire, &log);
  s.add_timepoint(tp);
  REQUIRE(s.signal(6));
  CHECK(log.runs == 1);
  CHECK_FALSE(tp.cancel());

  // Cancelling one of several leaves the others registered.
  fire_log a, b;
  semaphore_timepoint ta{7, &log_fire, &a};
  semaphore_timepoint tb{7, &log_fire, &b};
  s.add_timepoint(ta);
  s.add_timepoint(tb);
  CHECK(ta.cancel());
  REQUIRE(s.signal(7));
  CHECK(a.runs == 0);
  CHECK(b.runs == 1);
}

TEST_CASE("semaphore: destroying a semaphore delivers cancelled to its pending timepoints",
          "[semaphore][timepoint][cancel]") {
  fire_log fired, pending1, pending2;
  semaphore_timepoint t_fired{1, &log_fire, &fired};
  semaphore_timepoint t_pending1{5, &log_fire, &pending1};
  semaphore_timepoint t_pending2{9, &log_fire, &pending2};
  {
    semaphore s;
    s.add_timepoint(t_fired);
    s.add_timepoint(t_pending1);
    s.add_timepoint(t_pending2);
    REQUIRE(s.signal(1));
  }
  CHECK(fired.runs == 1);
  CHECK(fired.last == errc::ok);
  CHECK(pending1.runs == 1);
  CHECK(pending1.last == errc::cancelled);
  CHECK(pending2.runs == 1);
  CHECK(pending2.last == errc::cancelled);
  CHECK_FALSE(t_pending1.cancel());
}

TEST_CASE("semaphore: a timepoint callback may destroy the semaphore when the signal that "
          "fired it also had a parked host waiter to wake",
          "[semaphore][timepoint][lifetime]") {
  // The signal counts itself as notifying (a waiter is parked), runs the
  // callback, and the callback -- after the waiter has returned, as the
  // destructor requires -- destroys the semaphore, whose destructor waits
  // for the notifying count to drop. The signal must drop it before it
  // runs callbacks, or it waits for itself forever.
  auto* s = new semaphore;
  std::atomic<bool> waiter_returned{false};
  std::atomic<int> waiter_code{-1};
  std::thread waiter([&] {
    const status st = s->wait_until(10, semaphore::clock::time_point::max(), /*spin=*/0);
    waiter_code.store(static_cast<int>(st.code()), std::memory_order_relaxed);
    waiter_returned.store(true, std::memory_order_release);
  });
  REQUIRE(causal::test::eventually([&] { return s->parked_waiters() == 1; }));
  struct context {
    semaphore* sem;
    std::atomic<bool>* waiter_returned;
  } ctx{s, &waiter_returned};
  semaphore_timepoint tp(
      1,
      [](semaphore_timepoint& node, status st) noexcept {
        auto& c = *static_cast<context*>(node.user_data());
        if (!st) return;
        (void)c.sem->signal(10);  // the waiter sees 10 and returns
        while (!c.waiter_returned->load(std::memory_order_acquire)) std::this_thread::yield();
        delete c.sem;
      },
      &ctx);
  s->add_timepoint(tp);
  std::atomic<bool> signalled{false};
  std::thread signaller([&] {
    (void)s->signal(1);
    signalled.store(true, std::memory_order_release);
  });
  const bool returned = causal::test::eventually([&] { return signalled.load(std::memory_order_acquire); });
  waiter.join();
  if (returned) {
    signaller.join();
  } else {
    signaller.detach();  // stuck in the destructor for good: fail, don't hang
  }
  REQUIRE(returned);
  CHECK(waiter_code.load(std::memory_order_relaxed) == static_cast<int>(errc::ok));
}

TEST_CASE("semaphore: callbacks run with no lock held: they may query, signal and re-register "
          "on the same semaphore",
          "[semaphore][timepoint]") {
  semaphore s;
  struct ctx {
    semaphore* s;
    int runs = 0;
    std::uint64_t seen_value = 0;
    bool frontier_ok = false;
  } c{&s};
  struct again {
    static void fire(semaphore_timepoint& tp, status st) noexcept {
      auto* c = static_cast<ctx*>(tp.user_data());
      if (!st) return;
      ++c->runs;
      c->seen_value = c->s->value();
      const auto f = c->s->frontier_at(tp.threshold());
      c->frontier_ok = f.has_value() && f->reached;
      // Re-register for the next value, and push the semaphore there.
      if (c->runs < 3) {
        const std::uint64_t next = tp.threshold() + 1;
        tp.reset(next, &again::fire, c);
        c->s->add_timepoint(tp);
        (void)c->s->signal(next);
      }
    }
  };
  semaphore_timepoint tp{1, &again::fire, &c};
  s.add_timepoint(tp);
  REQUIRE(s.signal(1));
  // 1 fired: re-registered at 2 and signalled 2, which fired it (nested,
  // inline from signal), which re-registered at 3 and signalled 3.
  CHECK(c.runs == 3);
  CHECK(s.value() == 3);
  CHECK(c.frontier_ok);
  CHECK_FALSE(tp.cancel());
}

TEST_CASE("semaphore: callbacks that signal other semaphores form chains",
          "[semaphore][timepoint][chain]") {
  std::array<semaphore, 4> sems;
  struct link_ctx {
    semaphore* next;
    std::uint64_t value;
  };
  auto relay = [](semaphore_timepoint& tp, status st) noexcept {
    auto* c = static_cast<link_ctx*>(tp.user_data());
    if (st) {
      (void)c->next->signal(c->value, frontier{{A, c->value}});
    } else {
      (void)c->next->fail(st.error_value());
    }
  };
  std::array<link_ctx, 3> ctxs{};
  std::array<semaphore_timepoint, 3> nodes;
  for (std::size_t i = 0; i < 3; ++i) {
    ctxs[i] = {&sems[i + 1], 10 * (i + 1)};
    nodes[i].reset(i == 0 ? 1 : 10 * i, relay, &ctxs[i]);
    sems[i].add_timepoint(nodes[i]);
  }
  REQUIRE(sems[0].signal(1));
  CHECK(sems[1].value() == 10);
  CHECK(sems[2].value() == 20);
  CHECK(sems[3].value() == 30);
  CHECK(present(sems[3].frontier_at(30)).frontier == frontier{{A, 30}});

  // A failure travels down a chain too.
  std::array<semaphore, 3> f;
  std::array<link_ctx, 2> fctx{{{&f[1], 1}, {&f[2], 1}}};
  std::array<semaphore_timepoint, 2> fnodes;
  for (std::size_t i = 0; i < 2; ++i) {
    fnodes[i].reset(1, relay, &fctx[i]);
    f[i].add_timepoint(fnodes[i]);
  }
  REQUIRE(f[0].fail(causal::error{errc::device_lost, "lost"}));
  CHECK(f[2].failed());
  CHECK(f[2].failure()->code() == errc::device_lost);
}

//===-- semaphore_link --------------------------------------------------------===//

TEST_CASE("semaphore_link: S >= x signals T to y with the frontier S's waiters import at x",
          "[semaphore][link]") {
  semaphore src, dst;
  causal::semaphore_link<semaphore> link{dst, 10};
  link.arm(src, 3);
  CHECK(dst.value() == 0);
  REQUIRE(src.signal(2, frontier{{A, 2}}));
  CHECK(dst.value() == 0);
  REQUIRE(src.signal(4, frontier{{A, 4}, {B, 1}}));
  CHECK(dst.value() == 10);
  // The first signal reaching 3 was 4's.
  CHECK(present(dst.frontier_at(10)).frontier == frontier{{A, 4}, {B, 1}});
  CHECK_FALSE(link.cancel());
}

TEST_CASE("semaphore_link: arming on a reached value relays inline; cancel stops a pending relay",
          "[semaphore][link]") {
  semaphore src{5}, dst;
  {
    causal::semaphore_link<semaphore> link{dst, 1};
    link.arm(src, 5);
    CHECK(dst.value() == 1);
  }
  semaphore later;
  {
    causal::semaphore_link<semaphore> link{later, 7};
    link.arm(src, 6);
    CHECK(link.cancel());
    REQUIRE(src.signal(6));
    CHECK(later.value() == 0);
  }
  // The destructor cancels a pending relay too.
  {
    causal::semaphore_link<semaphore> link{later, 7};
    link.arm(src, 9);
  }
  REQUIRE(src.signal(9));
  CHECK(later.value() == 0);
}

TEST_CASE("semaphore_link: a failure of the source fails the target; destroying the source "
          "does not",
          "[semaphore][link][fail]") {
  semaphore dst;
  {
    semaphore src;
    causal::semaphore_link<semaphore> link{dst, 2};
    link.arm(src, 1);
    REQUIRE(src.fail(causal::error{errc::device_lost, "lost", 7}));
    REQUIRE(dst.failed());
    CHECK(dst.failure()->code() == errc::device_lost);
    CHECK(dst.failure()->position() == 7);
  }
  semaphore dst2;
  {
    causal::semaphore_link<semaphore> link{dst2, 2};
    {
      semaphore src;
      link.arm(src, 1);
    }  // src destroyed first: the relay gets cancelled
    CHECK_FALSE(dst2.failed());
    CHECK(dst2.value() == 0);
  }
}

TEST_CASE("semaphore_link: the source may be destroyed by an earlier callback of the signal "
          "that fires the relay; the relay uses the frontier copied at firing",
          "[semaphore][link][lifetime]") {
  // The source lives in raw storage so that, once destroyed, its bytes can
  // be wiped: a relay that read it afterwards would see an empty semaphore
  // (and ASan would report the read).
  alignas(semaphore) std::array<std::byte, sizeof(semaphore)> storage{};
  auto* src = new (storage.data()) semaphore;
  semaphore dst;
  struct destroyer {
    semaphore* sem;
    std::array<std::byte, sizeof(semaphore)>* bytes;
  } d{src, &storage};
  // Registered first, so it fires first among the threshold-1 timepoints.
  semaphore_timepoint consumer(
      1,
      [](semaphore_timepoint& tp, status st) noexcept {
        if (!st) return;
        auto* self = static_cast<destroyer*>(tp.user_data());
        self->sem->~semaphore();
        std::memset(self->bytes->data(), 0, self->bytes->size());
      },
      &d);
  src->add_timepoint(consumer);
  causal::semaphore_link<semaphore> link{dst, 10};
  link.arm(*src, 1);
  REQUIRE(src->signal(1, frontier{{A, 1}, {B, 3}}, frontier_entry{A, 1}));
  // `src` is gone; the relay carried what a waiter on 1 imported.
  REQUIRE(dst.value() == 10);
  CHECK(present(dst.frontier_at(10)).frontier == frontier{{A, 1}, {B, 3}});
}

TEST_CASE("semaphore_link: a relayed signal the target rejects fails the target",
          "[semaphore][link][fail]") {
  semaphore src, dst;
  REQUIRE(dst.signal(20));
  causal::semaphore_link<semaphore> link{dst, 10};
  link.arm(src, 1);
  REQUIRE(src.signal(1));
  REQUIRE(dst.failed());
  CHECK(dst.failure()->code() == errc::not_increasing);
}

//===-- host waits ------------------------------------------------------------===//

TEST_CASE("semaphore: a host wait on a reached value returns ok at once", "[semaphore][wait]") {
  semaphore s{4};
  CHECK(s.wait(4).ok());
  CHECK(s.wait(1).ok());
  CHECK(s.wait_for(3, 0ms).ok());
  CHECK(s.wait_until(4, semaphore::clock::now() - 1s).ok());
}

TEST_CASE("semaphore: a host wait times out when the value is not reached", "[semaphore][wait]") {
  semaphore s;
  const auto start = semaphore::clock::now();
  const status st = s.wait_for(1, 20ms);
  const auto took = semaphore::clock::now() - start;
  REQUIRE_FALSE(st);
  CHECK(st.code() == errc::timeout);
  CHECK(took >= 20ms);  // a lower bound holds under any load

  CHECK(s.wait_until(1, semaphore::clock::now()).code() == errc::timeout);
  CHECK(s.wait_for(1, -5ms).code() == errc::timeout);
  CHECK(s.wait_until(1, semaphore::clock::now() + std::chrono::microseconds(50), /*spin=*/0).code() ==
        errc::timeout);
  // Huge timeouts do not overflow into the past.
  REQUIRE(s.signal(1));
  CHECK(s.wait_for(1, std::chrono::hours::max()).ok());
  CHECK(s.wait_for(1, std::chrono::nanoseconds::max()).ok());
  CHECK(s.wait_for(1, std::chrono::duration<double>(1e30)).ok());
}

TEST_CASE("semaphore: a parked host wait is woken by a signal from another thread",
          "[semaphore][wait]") {
  const unsigned spin = GENERATE(0u, semaphore::default_spin);
  CAPTURE(spin);
  semaphore s;
  std::atomic<int> code{-1};
  std::atomic<std::uint64_t> seen{0};
  std::thread waiter([&] {
    const status st = s.wait_until(3, semaphore::clock::time_point::max(), spin);
    seen.store(s.value());
    code.store(static_cast<int>(st.code()));
  });
  // Past its spin and announced as parked, whatever the schedule.
  REQUIRE(causal::test::eventually([&] { return s.parked_waiters() == 1; }));
  REQUIRE(s.signal(2));  // not enough: the waiter cannot return on it
  CHECK(code.load() == -1);
  REQUIRE(s.signal(3, frontier{{A, 3}}));
  waiter.join();
  CHECK(static_cast<errc>(code.load()) == errc::ok);
  CHECK(seen.load() >= 3);
}

TEST_CASE("semaphore: a short wait_for with another thread signalling in time returns ok",
          "[semaphore][wait]") {
  semaphore s;
  std::thread signaller([&] {
    std::this_thread::sleep_for(5ms);
    (void)s.signal(1);
  });
  const status st = s.wait_for(1, 20s);  // a hang guard
  signaller.join();
  CHECK(st.ok());
}

//===-- multi-waits -----------------------------------------------------------===//

TEST_CASE("semaphore: wait_all returns ok once every point is reached", "[semaphore][wait][multi]") {
  semaphore a, b{5};
  std::array<causal::wait_point<semaphore>, 2> points{{{&a, 2}, {&b, 5}}};
  CHECK(causal::wait_all<semaphore>(points, semaphore::clock::now() + 10ms).code() ==
        errc::timeout);
  REQUIRE(a.signal(2));
  CHECK(causal::wait_all<semaphore>(points).ok());

  // Woken through the timepoints when the last point is reached later.
  semaphore c, d;
  std::array<causal::wait_point<semaphore>, 2> later{{{&c, 1}, {&d, 1}}};
  std::thread signaller([&] {
    std::this_thread::sleep_for(settle_time);
    (void)c.signal(1);
    std::this_thread::sleep_for(settle_time);
    (void)d.signal(1);
  });
  const status st = causal::wait_all<semaphore>(later, semaphore::clock::now() + 20s, 0);
  signaller.join();
  CHECK(st.ok());
  // Empty: vacuously all reached.
  CHECK(causal::wait_all<semaphore>(std::span<const causal::wait_point<semaphore>>{}).ok());
}

TEST_CASE("semaphore: wait_any returns the index of a reached point", "[semaphore][wait][multi]") {
  semaphore a, b;
  std::array<causal::wait_point<semaphore>, 2> points{{{&a, 1}, {&b, 1}}};
  const auto timed_out = causal::wait_any<semaphore>(points, semaphore::clock::now() + 10ms);
  REQUIRE_FALSE(timed_out);
  CHECK(timed_out.code() == errc::timeout);

  REQUIRE(b.signal(1));
  const auto idx = causal::wait_any<semaphore>(points);
  REQUIRE(idx);
  CHECK(*idx == 1);

  semaphore c, d;
  std::array<causal::wait_point<semaphore>, 2> later{{{&c, 3}, {&d, 3}}};
  std::thread signaller([&] {
    std::this_thread::sleep_for(settle_time);
    (void)c.signal(3);
  });
  const auto woke = causal::wait_any<semaphore>(later, semaphore::clock::now() + 20s, 0);
  signaller.join();
  REQUIRE(woke);
  CHECK(*woke == 0);

  const auto none = causal::wait_any<semaphore>(std::span<const causal::wait_point<semaphore>>{});
  CHECK(none.code() == errc::invalid_argument);
}

TEST_CASE("semaphore: wait_all and wait_any return the failure of any semaphore",
          "[semaphore][wait][multi][fail]") {
  semaphore a, b;
  std::array<causal::wait_point<semaphore>, 2> points{{{&a, 1}, {&b, 1}}};
  std::thread failer([&] {
    std::this_thread::sleep_for(settle_time);
    (void)b.fail(causal::error{errc::device_lost, "lost"});
  });
  const status st = causal::wait_all<semaphore>(points, semaphore::clock::now() + 20s, 0);
  failer.join();
  CHECK(st.code() == errc::device_lost);
  const auto any = causal::wait_any<semaphore>(points, semaphore::clock::now() + 20s, 0);
  CHECK(any.code() == errc::device_lost);
}

TEST_CASE("semaphore: more than max_wait_points points is invalid_argument",
          "[semaphore][wait][multi][errors]") {
  semaphore s{1};
  std::vector<causal::wait_point<semaphore>> points(causal::max_wait_points + 1,
                                                   causal::wait_point<semaphore>{&s, 1});
  CHECK(causal::wait_all<semaphore>(points).code() == errc::invalid_argument);
  CHECK(causal::wait_any<semaphore>(points).code() == errc::invalid_argument);
  points.pop_back();
  CHECK(causal::wait_all<semaphore>(points).ok());
  CHECK(causal::wait_any<semaphore>(points).ok());
}

//===-- allocation ------------------------------------------------------------===//

TEST_CASE("semaphore: signal, try_wait, frontier_at, timepoints, cancel and satisfied waits "
          "never allocate",
          "[semaphore][alloc]") {
  semaphore s;
  const frontier f{{A, 1}, {B, 2}, {C, 3}};
  fire_log log;
  semaphore_timepoint tp;
  std::array<causal::wait_point<semaphore>, 1> points{};
  std::uint64_t sink = 0;

  causal::test::allocation_guard guard;
  for (std::uint64_t round = 1; round <= 1000; ++round) {
    const std::uint64_t b = 10 * round;  // above everything the last round did
    (void)s.submit_signal(b + 2, f, frontier_entry{A, b + 2});
    tp.reset(b + 2, &log_fire, &log);
    s.add_timepoint(tp);                         // registers
    sink += s.try_wait(b + 2) ? 1 : 0;           // false
    sink += s.frontier_at(b + 2)->signal_value;  // submitted
    (void)s.signal(b + 1, f);                    // does not reach it
    (void)s.signal(b + 2);                       // fires tp
    sink += s.try_wait(b + 2) ? 1 : 0;           // true
    sink += s.frontier_at(b + 1)->signal_value;  // reached
    sink += s.wait(b + 2).ok() ? 1 : 0;          // reached: no park
    tp.reset(b + 5, &log_fire, &log);
    s.add_timepoint(tp);
    sink += tp.cancel() ? 1 : 0;                 // true: never fires
    (void)s.signal_external(b + 3);
    sink += s.frontier_at(b + 3)->value_tainted ? 1 : 0;
    (void)s.signal(b + 4, f);                    // heals
    points[0] = {&s, b + 2};
    sink += causal::wait_all<semaphore>(points).ok() ? 1 : 0;
    sink += *causal::wait_any<semaphore>(points);
    tp.reset(1, &log_fire, &log);
    s.add_timepoint(tp);                         // inline
  }
  const auto allocations = guard.allocations();
  CHECK(allocations == 0);
  CHECK(log.runs == 2000);
  CHECK(sink > 0);
}

//===-- mirrors: reserved writes ---------------------------------------------===//

TEST_CASE("semaphore: reserved writes refuse every ordinary signal, take the key's, and leave fail open",
          "[semaphore][mirror]") {
  semaphore s;
  const int owner_token = 0;
  const int other_token = 0;
  const void* key = &owner_token;
  CHECK_FALSE(s.writes_reserved());
  CHECK_FALSE(s.reserve_writes(nullptr));
  REQUIRE(s.reserve_writes(key));
  CHECK(s.writes_reserved());
  CHECK_FALSE(s.reserve_writes(&other_token));  // one writer, for good

  // Every ordinary way to move it is refused and changes nothing.
  CHECK(s.signal(1).code() == errc::failed_precondition);
  CHECK(s.signal(1, frontier{{A, 1}}, frontier_entry{A, 1}).code() == errc::failed_precondition);
  CHECK(s.device_signal(1).code() == errc::failed_precondition);
  CHECK(s.signal_external(1).code() == errc::failed_precondition);
  CHECK(s.submit_signal(2, frontier{{A, 2}}).code() == errc::failed_precondition);
  CHECK(s.reserve_signal().code() == errc::failed_precondition);
  CHECK(s.submit_reserved_signal(2, frontier{{A, 2}}).code() == errc::failed_precondition);
  CHECK_FALSE(s.reservation_unneeded());
  CHECK(s.value() == 0);
  CHECK(s.pending_count() == 0);
  CHECK_FALSE(s.failed());  // a refused write does not fail the semaphore
  CHECK(s.frontier_at(1) == std::nullopt);

  // Another key is refused too; the owner's key moves it.
  CHECK(s.signal_as(&other_token, 1, frontier{{A, 1}}).code() == errc::failed_precondition);
  CHECK(s.submit_signal_as(&other_token, 3, frontier{{A, 3}}).code() == errc::failed_precondition);
  CHECK(s.signal_external_as(&other_token, 1).code() == errc::failed_precondition);
  REQUIRE(s.submit_signal_as(key, 3, frontier{{A, 3}}, frontier_entry{A, 3}).ok());
  CHECK(s.pending_count() == 1);
  REQUIRE(s.signal_as(key, 1, frontier{{B, 1}}, frontier_entry{B, 1}).ok());
  CHECK(s.value() == 1);
  CHECK(s.try_wait(1));
  REQUIRE(s.signal_external_as(key, 2).ok());
  CHECK(s.is_tainted(2));
  REQUIRE(s.signal_as(key, 3, frontier{}).ok());
  const auto at3 = s.frontier_at(3);
  REQUIRE(at3.has_value());
  CHECK(at3->frontier.epoch_of(A) == 3);  // the submitted record was used
  // The key's own rules still hold.
  CHECK(s.signal_as(key, 3, frontier{}).code() == errc::not_increasing);

  // A failure lets no waiter through, so anyone may still fail it.
  REQUIRE(s.fail(causal::error{errc::device_lost, "gone", 9}));
  CHECK(s.failed());
  CHECK(s.wait(4).code() == errc::device_lost);
  CHECK(s.signal_as(key, 4, frontier{}).code() == errc::device_lost);
}

TEST_CASE("semaphore: a queue refuses to signal a semaphore whose writes are reserved, with nothing issued",
          "[semaphore][mirror][queue]") {
  causal::recording_queue<> q(causal::make_axis(0, 0, causal::domain::queue, 1).value());
  semaphore mirror;
  semaphore plain;
  const int token = 0;
  REQUIRE(mirror.reserve_writes(&token));

  const auto refused = q.submit({}, {{&plain, 1}, {&mirror, 1}}, 7);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error_value().code() == errc::failed_precondition);
  CHECK(refused.error_value().position() == 1);  // the signal that names the mirror
  CHECK(q.epoch() == 0);                          // nothing executed
  CHECK(plain.pending_count() == 0);              // nothing announced on the other one
  CHECK(mirror.pending_count() == 0);
  CHECK_FALSE(mirror.failed());

  // Waiting on a mirror is what it is for.
  REQUIRE(mirror.signal_as(&token, 1, frontier{{B, 1}}, frontier_entry{B, 1}).ok());
  const auto waited = q.submit({{&mirror, 1}}, {{&plain, 1}}, 8);
  REQUIRE(waited.ok());
  CHECK(q.knowledge().epoch_of(B) == 1);
}
