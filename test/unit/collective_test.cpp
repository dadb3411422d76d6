// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Tests for <causal/collective.hpp>: channel setup errors; the semaphore
// reaching k only once all N participants arrived, with the join of their
// frontiers plus (C, k) and producer (C, k); arrive's errors, each leaving
// the channel unchanged; the compression (after k collectives over N = 2,
// 4, 8, 16 participants each participant's knowledge holds one entry for
// the collective axis, at k, and its size does not grow with N); the
// pipelined helper (one device wait per participant that orders its next
// operation); the conservative handling of a requirement that names another
// participant's pre-collective epoch, and its resolution through the
// channel; join_collective; helper errors; tracker reporting; re-entrant
// and concurrent arrivals; and the promise that nothing allocates.

#include <causal/collective.hpp>
#include <causal/completion.hpp>
#include <causal/queue.hpp>
#include <causal/semaphore.hpp>

#include "catch.hpp"
#include "string_makers.hpp"
#include "counting_new.hpp"

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace {

using causal::axis;
using causal::collective_channel;
using causal::domain;
using causal::errc;
using causal::frontier;
using causal::frontier_entry;
using causal::semaphore;

using queue_t = causal::recording_queue<>;
using event_kind = queue_t::backend_type::event_kind;

axis queue_axis(std::uint64_t n) { return causal::make_axis(0, 0, domain::queue, n).value(); }
axis collective_axis(std::uint64_t n) {
  return causal::make_axis(0, 0, domain::collective, n).value();
}

const axis C = collective_axis(1);

/// N queues on fresh axes, owned together.
struct participants {
  explicit participants(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      owned.push_back(std::make_unique<queue_t>(queue_axis(100 + i)));
      raw.push_back(owned.back().get());
    }
  }
  std::span<queue_t* const> span() const { return {raw.data(), raw.size()}; }
  queue_t& operator[](std::size_t i) { return *raw[i]; }
  std::vector<std::unique_ptr<queue_t>> owned;
  std::vector<queue_t*> raw;
};

/// The `complete` hook of run_collective: drives q's backend until `epoch`
/// has completed.
causal::status complete_through(std::size_t, queue_t& q, std::uint64_t epoch) {
  while (q.completed_epoch() < epoch) {
    const std::uint64_t e = q.backend().complete_next();
    if (e == 0) return causal::error{errc::failed_precondition, "test: operation cannot complete"};
    q.retire(e);
  }
  return {};
}

}  // namespace

//===-- setup ---------------------------------------------------------------===//

TEST_CASE("collective: bad channel arguments make every arrive fail", "[collective][errors]") {
  SECTION("axis 0") {
    collective_channel ch(axis{}, 2);
    CHECK(ch.setup_status().code() == errc::invalid_argument);
    CHECK(ch.arrive(0, 1, frontier{}).code() == errc::invalid_argument);
  }
  SECTION("not a collective axis") {
    collective_channel ch(queue_axis(1), 2);
    CHECK(ch.setup_status().code() == errc::invalid_argument);
    CHECK(ch.arrive(0, 1, frontier{}).code() == errc::invalid_argument);
  }
  SECTION("no participants") {
    collective_channel ch(C, 0);
    CHECK(ch.setup_status().code() == errc::out_of_range);
  }
  SECTION("more than MaxParticipants") {
    causal::basic_collective_channel<frontier, semaphore, 4> ch(C, 5);
    CHECK(ch.setup_status().code() == errc::out_of_range);
    CHECK(ch.arrive(0, 1, frontier{}).code() == errc::out_of_range);
  }
  SECTION("a good one") {
    collective_channel ch(C, 2);
    CHECK(ch.setup_status());
    CHECK(ch.axis() == C);
    CHECK(ch.participant_count() == 2);
    CHECK(ch.completed() == 0);
    CHECK(ch.in_progress() == 1);
  }
}

//===-- arrivals ------------------------------------------------------------===//

TEST_CASE("collective: the semaphore reaches k only after all N arrive", "[collective][arrive]") {
  const std::size_t n = GENERATE(std::size_t{1}, std::size_t{2}, std::size_t{4}, std::size_t{8});
  collective_channel ch(C, n);
  for (std::uint64_t k = 1; k <= 3; ++k) {
    frontier expected;
    for (std::size_t i = 0; i < n; ++i) {
      const frontier contribution{{queue_axis(100 + i), 10 * k + i}, {C, k - 1}};
      expected.merge(contribution);
      REQUIRE(ch.semaphore().value() == k - 1);
      CHECK_FALSE(ch.has_arrived(i));
      auto a = ch.arrive(i, k, contribution);
      REQUIRE(a);
      CHECK(a->sequence == k);
      CHECK(a->remaining == n - 1 - i);
      CHECK(a->completed == (i + 1 == n));
      if (i + 1 < n) {
        CHECK(ch.has_arrived(i));
        CHECK(ch.arrived_count() == i + 1);
        CHECK(ch.semaphore().value() == k - 1);
        CHECK(ch.in_progress() == k);
      }
    }
    CHECK(ch.semaphore().value() == k);
    CHECK(ch.completed() == k);
    CHECK(ch.in_progress() == k + 1);
    CHECK(ch.arrived_count() == 0);
    expected.insert_or_raise(C, k);
    const auto at = ch.frontier_at(k);
    REQUIRE(at);
    CHECK(at->reached);
    CHECK(at->exact);
    CHECK(at->frontier == expected);
    CHECK(at->frontier.size() == n + 1);
    CHECK(at->producer == frontier_entry{C, k});
  }
}

TEST_CASE("collective: only the channel moves its semaphore; announce() gives the join in advance",
          "[collective][errors]") {
  const axis A = queue_axis(1);
  const axis B = queue_axis(2);
  collective_channel ch(C, 2);
  semaphore& sem = ch.semaphore();
  CHECK(sem.writes_reserved());
  // A signal from outside would let waiters past a collective that did
  // not happen: refused, nothing changes.
  CHECK(sem.signal(1).code() == errc::failed_precondition);
  CHECK(sem.signal_external(1).code() == errc::failed_precondition);
  CHECK(sem.submit_signal(1, frontier{}).code() == errc::failed_precondition);
  CHECK(ch.completed() == 0);
  CHECK(sem.pending_count() == 0);

  const frontier joined{{A, 4}, {C, 1}};
  REQUIRE(ch.announce(1, joined).ok());
  CHECK(ch.announce(1, joined).code() == errc::invalid_argument);  // already announced
  const auto announced = sem.frontier_at(1);
  REQUIRE(announced.has_value());
  CHECK_FALSE(announced->reached);
  CHECK(announced->producer == frontier_entry{C, 1});

  auto first = ch.arrive(0, 1, frontier{{A, 4}});
  REQUIRE(first.ok());
  CHECK_FALSE(first->completed);
  auto second = ch.arrive(1, 1, frontier{{B, 2}});
  REQUIRE(second.ok());
  CHECK(second->completed);
  CHECK(ch.completed() == 1);
  const auto reached = sem.frontier_at(1);
  REQUIRE(reached.has_value());
  CHECK(reached->reached);
  CHECK(reached->frontier.epoch_of(A) == 4);
  CHECK(reached->frontier.epoch_of(B) == 2);
}

TEST_CASE("collective: arrive errors leave the channel unchanged", "[collective][arrive][errors]") {
  collective_channel ch(C, 3);
  const frontier f0{{queue_axis(100), 5}};
  REQUIRE(ch.arrive(0, 1, f0));

  struct state {
    std::uint64_t value, in_progress;
    std::size_t arrived;
    bool a0, a1, a2;
    bool operator==(const state&) const = default;
  };
  auto now = [&] {
    return state{ch.semaphore().value(), ch.in_progress(), ch.arrived_count(),
                 ch.has_arrived(0), ch.has_arrived(1), ch.has_arrived(2)};
  };
  const state before = now();

  CHECK(ch.arrive(3, 1, frontier{}).code() == errc::out_of_range);           // wrong index
  CHECK(ch.arrive(1, 2, frontier{}).code() == errc::invalid_argument);       // ahead: out of order
  CHECK(ch.arrive(1, 0, frontier{}).code() == errc::not_increasing);         // long complete
  CHECK(ch.arrive(0, 1, f0).code() == errc::failed_precondition);            // double arrival
  CHECK(ch.arrive(1, 1, frontier{{C, 1}}).code() == errc::invalid_argument);  // claims (C, 1)
  CHECK(now() == before);

  // The channel then completes normally, and the finished collective is
  // refused afterwards.
  REQUIRE(ch.arrive(1, 1, frontier{{queue_axis(101), 6}}));
  REQUIRE(ch.arrive(2, 1, frontier{{queue_axis(102), 7}}));
  CHECK(ch.completed() == 1);
  CHECK(ch.arrive(0, 1, f0).code() == errc::not_increasing);
  CHECK(ch.frontier_at(1)->frontier ==
        frontier{{queue_axis(100), 5}, {queue_axis(101), 6}, {queue_axis(102), 7}, {C, 1}});

  SECTION("a failed channel refuses arrivals") {
    REQUIRE(ch.fail(causal::error{errc::device_lost, "test: a participant's device is gone"}));
    CHECK(ch.arrive(0, 2, f0).code() == errc::device_lost);
    CHECK(ch.arrived_count() == 0);
  }
}

namespace {
/// The parts of a semaphore a channel uses, for frontier types that
/// basic_semaphore does not compile with (a rejecting overflow policy: it
/// ignores the status its internal merges return).
template <class Frontier>
class stub_semaphore {
 public:
  using frontier_type = Frontier;
  stub_semaphore(std::uint64_t initial, causal::semaphore_scope) noexcept : value_(initial) {}
  std::uint64_t value() const noexcept { return value_; }
  bool failed() const noexcept { return failure_.has_value(); }
  std::optional<causal::error> failure() const noexcept { return failure_; }
  bool fail(causal::error e) noexcept {
    if (failure_) return false;
    failure_ = e;
    return true;
  }
  causal::status signal(std::uint64_t v, const Frontier& f, frontier_entry producer) noexcept {
    if (v <= value_) return causal::error{errc::not_increasing, "stub: not increasing", v};
    value_ = v;
    last_ = f;
    producer_ = producer;
    return {};
  }
  const Frontier& last() const noexcept { return last_; }
  frontier_entry producer() const noexcept { return producer_; }

 private:
  std::uint64_t value_;
  std::optional<causal::error> failure_;
  Frontier last_{};
  frontier_entry producer_{};
};
}  // namespace

TEST_CASE("collective: with a rejecting frontier, an arrival that cannot be joined is refused",
          "[collective][arrive][errors]") {
  using small = causal::basic_frontier<2, causal::default_axis_layout, causal::reject_overflow>;
  causal::basic_collective_channel<small, stub_semaphore<small>, 4> ch(C, 2);
  small a = small::from_entries(std::array{frontier_entry{queue_axis(100), 1}}).value();
  small b = small::from_entries(std::array{frontier_entry{queue_axis(101), 1}}).value();
  REQUIRE(ch.arrive(0, 1, a));
  // {100, 101} fits, but {100, 101, C:1} would not: refused, nothing changes.
  auto r = ch.arrive(1, 1, b);
  REQUIRE_FALSE(r);
  CHECK(r.code() == errc::capacity_exceeded);
  CHECK(ch.arrived_count() == 1);
  CHECK_FALSE(ch.has_arrived(1));
  CHECK(ch.completed() == 0);
  REQUIRE(ch.arrive(1, 1, a));  // a contribution the join can hold
  CHECK(ch.completed() == 1);
  CHECK(ch.semaphore().last().size() == 2);
  CHECK(ch.semaphore().last().epoch_of(C) == 1);
  CHECK(ch.semaphore().producer() == frontier_entry{C, 1});
}

//===-- compression ---------------------------------------------------------===//

TEST_CASE("collective: after k collectives each participant holds one collective entry, "
          "constant in N",
          "[collective][compression]") {
  const std::size_t n =
      GENERATE(std::size_t{2}, std::size_t{4}, std::size_t{8}, std::size_t{16});
  collective_channel ch(C, n);
  participants ps(n);
  constexpr std::uint64_t rounds = 3;
  for (std::uint64_t k = 1; k <= rounds; ++k) {
    auto r = causal::run_collective(ch, ps.span(), std::uint64_t{7}, complete_through);
    REQUIRE(r);
    CHECK(*r == k);
    CHECK(ch.completed() == k);
  }
  for (std::size_t i = 0; i < n; ++i) {
    const frontier& known = ps[i].knowledge();
    CHECK(known.epoch_of(C) == rounds);  // exactly one entry for the axis, at k
    CHECK(known.size() == 2);            // its own axis and C: not N entries
    CHECK_FALSE(known.tainted());
    for (std::size_t j = 0; j < n; ++j) {
      if (j != i) CHECK_FALSE(known.contains(ps[j].axis()));
    }
    CHECK(ps[i].backend().count(event_kind::wait) == 0);  // joined after completion
  }
  // The channel's own frontier at k carries the participants, not theirs.
  const auto at = ch.frontier_at(rounds);
  REQUIRE(at);
  CHECK(at->producer == frontier_entry{C, rounds});
  CHECK(at->frontier.epoch_of(C) == rounds);  // pinned even when it overflows
  if (n + 1 <= frontier::capacity) {
    CHECK(at->frontier.size() == n + 1);
    CHECK_FALSE(at->frontier.tainted());
  } else {
    CHECK(at->frontier.tainted());  // 17 entries do not fit 12: the producer still proves it
  }
}

TEST_CASE("collective: submit_collective joins each participant with one device wait",
          "[collective][pipelined]") {
  constexpr std::size_t n = 4;
  collective_channel ch(C, n);
  participants ps(n);
  std::array<causal::collective_contribution<frontier>, n> contributions;
  auto k = causal::submit_collective(ch, ps.span(), std::uint64_t{1}, std::span(contributions));
  REQUIRE(k);
  REQUIRE(*k == 1);
  for (std::size_t i = 0; i < n; ++i) {
    CHECK(contributions[i].sequence == 1);
    CHECK(contributions[i].epoch == 1);
    CHECK(contributions[i].frontier == frontier{{ps[i].axis(), 1}});
    // The join: one wait on the channel semaphore at 1, then (C, 1) known.
    REQUIRE(ps[i].backend().count(event_kind::wait) == 1);
    const auto& w = ps[i].backend().event_at(ps[i].backend().event_count() - 1);
    CHECK(w.kind == event_kind::wait);
    CHECK(w.semaphore == &ch.semaphore());
    CHECK(w.value == 1);
    CHECK(ps[i].knowledge().epoch_of(C) == 1);
    CHECK(ps[i].knowledge().size() == 2);
  }
  // Each participant's next operation waits for the whole collective.
  std::array<std::uint64_t, n> next{};
  for (std::size_t i = 0; i < n; ++i) {
    auto r = ps[i].submit({}, {}, 2);
    REQUIRE(r);
    next[i] = r->epoch;
  }
  for (std::size_t i = 0; i < n; ++i) {
    REQUIRE(ps[i].backend().complete_next() == contributions[i].epoch);  // its contribution
    CHECK(ps[i].backend().complete_next() == 0);  // blocked on the channel
    auto a = ch.arrive(i, 1, contributions[i].frontier);
    REQUIRE(a);
    CHECK(a->completed == (i + 1 == n));
    if (i + 1 < n) CHECK(ps[0].backend().complete_next() == 0);
  }
  for (std::size_t i = 0; i < n; ++i) CHECK(ps[i].backend().complete_next() == next[i]);
}

//===-- soundness -----------------------------------------------------------===//

TEST_CASE("collective: a requirement naming another participant's pre-collective epoch is "
          "never elided unsoundly",
          "[collective][soundness]") {
  collective_channel ch(C, 2);
  participants ps(2);
  semaphore s;
  // Participant 1 announces S = 1 from its epoch 1 (before the collective).
  REQUIRE(ps[1].submit({}, {{&s, 1}}, 0));
  const frontier_entry pre{ps[1].axis(), 1};
  // Both contribute; the collective completes (arrivals by hand: the
  // device reported both contributions done).
  std::array<causal::collective_contribution<frontier>, 2> contributions;
  REQUIRE(causal::submit_collective(ch, ps.span(), std::uint64_t{9}, std::span(contributions)));
  CHECK(contributions[1].frontier.epoch_of(pre.axis) == 2);  // includes its epoch 1
  CHECK_FALSE(ch.covers(ps[0].knowledge(), pre));            // not reached yet: no proof
  REQUIRE(ch.arrive(0, 1, contributions[0].frontier));
  REQUIRE(ch.arrive(1, 1, contributions[1].frontier));

  // Participant 0 knows (C, 1) but not participant 1's axis.
  REQUIRE(ps[0].knowledge().epoch_of(C) == 1);
  REQUIRE_FALSE(ps[0].knowledge().contains(pre.axis));
  // A wait on S >= 1 (submitted by participant 1, not reached) is not
  // elided by dominance: participant 0 issues a real device wait.
  REQUIRE(s.state_of(1) == causal::value_state::submitted);
  const auto stats_before = ps[0].stats();
  REQUIRE(ps[0].submit({{&s, 1}}, {}, 0));
  CHECK(ps[0].stats().device_waits == stats_before.device_waits + 1);
  CHECK(ps[0].stats().waits_elided() == stats_before.waits_elided());
  // Resolved through the channel: (C, 1) reached, its frontier names P1:2.
  CHECK(ch.covers(frontier{{C, 1}}, pre));
  CHECK(ch.covers(frontier{{C, 1}}, frontier{{pre.axis, 2}, {ps[0].axis(), 1}}));
  CHECK_FALSE(ch.covers(frontier{{C, 1}}, frontier_entry{pre.axis, 3}));  // later work: no
  CHECK_FALSE(ch.covers(frontier{}, pre));
  frontier tainted_requirement{{pre.axis, 1}};
  tainted_requirement.set_tainted();
  CHECK_FALSE(ch.covers(frontier{{C, 1}}, tainted_requirement));
}

TEST_CASE("collective: a non-participant gets one entry from join_collective, all of them "
          "from an ordinary wait",
          "[collective][compression]") {
  constexpr std::size_t n = 8;
  collective_channel ch(C, n);
  for (std::size_t i = 0; i < n; ++i) {
    REQUIRE(ch.arrive(i, 1, frontier{{queue_axis(100 + i), 1}}));
  }
  queue_t joined{queue_axis(50)}, waited{queue_axis(51)};
  REQUIRE(causal::join_collective(joined, ch, 1));
  CHECK(joined.knowledge() == frontier{{C, 1}});
  REQUIRE(waited.submit({{&ch.semaphore(), 1}}, {}, 0));  // tier 0: imports the frontier at 1
  CHECK(waited.stats().elided_reached == 1);
  CHECK(waited.knowledge().size() == n + 2);  // the 8 participants, C and its own axis
  // Both are then covered for a participant's pre-collective epoch, one
  // directly, the other through the channel.
  const frontier_entry pre{queue_axis(103), 1};
  CHECK(ch.covers(joined.knowledge(), pre));
  CHECK(ch.covers(waited.knowledge(), pre));
  CHECK_FALSE(joined.knowledge().contains(pre.axis));
}

//===-- join_collective -----------------------------------------------------===//

TEST_CASE("collective: join_collective", "[collective][join]") {
  collective_channel ch(C, 1);
  queue_t q{queue_axis(60)};
  CHECK(causal::join_collective(q, ch, 0).code() == errc::invalid_argument);
  CHECK(causal::join_collective(q, ch, 2).code() == errc::invalid_argument);  // not started

  SECTION("not reached: a device wait, then the entry") {
    auto w = causal::join_collective(q, ch, 1);
    REQUIRE(w);
    CHECK(*w);
    CHECK(q.backend().count(event_kind::wait) == 1);
    CHECK(q.knowledge().epoch_of(C) == 1);
  }
  SECTION("reached: the entry only") {
    REQUIRE(ch.arrive(0, 1, frontier{{queue_axis(100), 3}}));
    auto w = causal::join_collective(q, ch, 1);
    REQUIRE(w);
    CHECK_FALSE(*w);
    CHECK(q.backend().total_events() == 0);
    CHECK(q.knowledge() == frontier{{C, 1}});
  }
  SECTION("binary events cannot wait before completion") {
    causal::recording_queue<false> b{queue_axis(61)};
    CHECK(causal::join_collective(b, ch, 1).code() == errc::failed_precondition);
    CHECK(b.knowledge().empty());
    REQUIRE(ch.arrive(0, 1, frontier{}));
    CHECK(causal::join_collective(b, ch, 1));
  }
  SECTION("a failed backend wait changes nothing") {
    q.backend().fail_next_wait();
    CHECK(causal::join_collective(q, ch, 1).code() == errc::device_lost);
    CHECK(q.knowledge().empty());
  }
  SECTION("a failed channel") {
    ch.fail(causal::error{errc::cancelled, "test"});
    CHECK(causal::join_collective(q, ch, 1).code() == errc::cancelled);
  }
}

//===-- helper errors -------------------------------------------------------===//

TEST_CASE("collective: helper errors", "[collective][errors]") {
  collective_channel ch(C, 2);
  participants ps(2);
  std::array<causal::collective_contribution<frontier>, 2> contributions;
  auto none = [](std::size_t, queue_t&, std::uint64_t) { return causal::status{}; };

  SECTION("wrong participant count") {
    participants three(3);
    CHECK(causal::run_collective(ch, three.span(), std::uint64_t{0}, none).code() ==
          errc::invalid_argument);
    CHECK(three[0].epoch() == 0);  // nothing submitted
  }
  SECTION("null and repeated participants") {
    std::array<queue_t*, 2> with_null{&ps[0], nullptr};
    CHECK(causal::run_collective(ch, std::span<queue_t* const>(with_null), std::uint64_t{0}, none)
              .code() == errc::invalid_argument);
    std::array<queue_t*, 2> twice{&ps[0], &ps[0]};
    CHECK(causal::submit_collective(ch, std::span<queue_t* const>(twice), std::uint64_t{0},
                                    std::span(contributions))
              .code() == errc::invalid_argument);
    CHECK(ps[0].epoch() == 0);
  }
  SECTION("contributions span too small") {
    std::array<causal::collective_contribution<frontier>, 1> one;
    CHECK(causal::submit_collective(ch, ps.span(), std::uint64_t{0}, std::span(one)).code() ==
          errc::invalid_argument);
    CHECK(ps[0].epoch() == 0);
  }
  SECTION("the collective in progress already has arrivals") {
    REQUIRE(ch.arrive(0, 1, frontier{}));
    CHECK(causal::run_collective(ch, ps.span(), std::uint64_t{0}, none).code() ==
          errc::failed_precondition);
    CHECK(ps[0].epoch() == 0);
  }
  SECTION("a participant holding deferred submissions") {
    collective_channel ch_b(C, 1);
    causal::recording_queue<false> b{queue_axis(70)};
    semaphore never;
    REQUIRE(b.submit({{&never, 1}}, {}, 0));  // tier 3: held on the host
    REQUIRE(b.deferred_count() == 1);
    std::array<causal::recording_queue<false>*, 1> one{&b};
    std::array<causal::collective_contribution<frontier>, 1> c1;
    CHECK(causal::submit_collective(ch_b, std::span<causal::recording_queue<false>* const>(one),
                                    std::uint64_t{0}, std::span(c1))
              .code() == errc::failed_precondition);
  }
  SECTION("a completion failure fails the channel, so nobody waits forever") {
    auto broken = [](std::size_t i, queue_t&, std::uint64_t) {
      return i == 1 ? causal::status{causal::error{errc::device_lost, "test: lost"}}
                    : causal::status{};
    };
    auto r = causal::run_collective(ch, ps.span(), std::uint64_t{0}, broken);
    CHECK(r.code() == errc::device_lost);
    CHECK(ch.semaphore().failed());
    CHECK(ch.arrive(1, 1, frontier{}).code() == errc::device_lost);
  }
  SECTION("a backend failure part-way fails the channel") {
    ps[1].backend().fail_next_execute();
    auto r = causal::submit_collective(ch, ps.span(), std::uint64_t{0}, std::span(contributions));
    CHECK(r.code() == errc::device_lost);
    CHECK(ch.semaphore().failed());
  }
}

//===-- tracker, re-entrancy, threads, allocation ---------------------------===//

TEST_CASE("collective: completed collectives reach a completion tracker", "[collective][tracker]") {
  causal::completion_tracker tracker;
  REQUIRE(tracker.register_axis(C));
  collective_channel ch(C, 2);
  ch.track_completion(tracker);
  participants ps(2);
  REQUIRE(causal::run_collective(ch, ps.span(), std::uint64_t{0}, complete_through));
  REQUIRE(causal::run_collective(ch, ps.span(), std::uint64_t{0}, complete_through));
  CHECK(tracker.retired_epoch(C) == 2);
  CHECK(tracker.is_retired({C, 2}));
}

namespace {
struct reentry {
  collective_channel* channel;
  std::uint64_t last;
  causal::status status;
};
void arrive_next(causal::semaphore_timepoint& tp, causal::status s) noexcept {
  auto* r = static_cast<reentry*>(tp.user_data());
  if (!s) return;
  const std::uint64_t next = tp.threshold() + 1;
  if (next > r->last) return;
  auto a = r->channel->arrive(0, next, frontier{});
  if (!a) r->status = a.error_value();
  tp.reset(next, &arrive_next, r);
  r->channel->semaphore().add_timepoint(tp);
}
}  // namespace

TEST_CASE("collective: a timepoint callback may arrive for the next collective",
          "[collective][reentrancy]") {
  collective_channel ch(C, 1);
  reentry r{&ch, 5, {}};
  causal::semaphore_timepoint tp(1, &arrive_next, &r);
  ch.semaphore().add_timepoint(tp);
  REQUIRE(ch.arrive(0, 1, frontier{}));  // fires 1 -> arrives 2 -> fires 2 -> ... -> 5
  CHECK(r.status);
  CHECK(ch.completed() == 5);
  for (std::uint64_t k = 1; k <= 5; ++k) CHECK(ch.frontier_at(k)->frontier == frontier{{C, k}});
}

TEST_CASE("collective: concurrent arrivals complete every collective in order",
          "[collective][threads]") {
  constexpr std::size_t n = 4;
  constexpr std::uint64_t rounds = 2000;
  collective_channel ch(C, n);
  std::atomic<std::uint64_t> errors{0}, completions{0};
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      for (std::uint64_t k = 1; k <= rounds; ++k) {
        // A participant starts collective k only after k - 1 completed
        // everywhere (it waited on the channel).
        while (ch.semaphore().value() < k - 1) std::this_thread::yield();
        const frontier f{{queue_axis(100 + i), k}, {C, k - 1}};
        auto a = ch.arrive(i, k, f);
        if (!a) errors.fetch_add(1, std::memory_order_relaxed);
        else if (a->completed) completions.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(errors.load() == 0);
  CHECK(completions.load() == rounds);
  CHECK(ch.completed() == rounds);
  CHECK_FALSE(ch.semaphore().failed());
  for (std::uint64_t k = rounds - 3; k <= rounds; ++k) {  // still in the semaphore's ring
    const auto at = ch.frontier_at(k);
    REQUIRE(at);
    CHECK(at->frontier.epoch_of(C) == k);
    for (std::size_t i = 0; i < n; ++i) CHECK(at->frontier.epoch_of(queue_axis(100 + i)) == k);
  }
}

TEST_CASE("collective: arrive, join and the helpers never allocate", "[collective][allocation]") {
  constexpr std::size_t n = 4;
  collective_channel ch(C, n);
  participants ps(n);
  std::array<causal::collective_contribution<frontier>, n> contributions;
  bool ok = true;
  {
    causal::test::allocation_guard guard;
    for (int round = 0; round < 50; ++round) {
      auto r = causal::run_collective(ch, ps.span(), std::uint64_t{0}, complete_through);
      ok = ok && r.ok();
      auto k = causal::submit_collective(ch, ps.span(), std::uint64_t{0}, std::span(contributions));
      ok = ok && k.ok();
      for (std::size_t i = 0; i < n && k; ++i) {
        ok = ok && complete_through(i, ps[i], contributions[i].epoch).ok();
        ok = ok && ch.arrive(i, *k, contributions[i].frontier).ok();
      }
      ok = ok && !ch.arrive(n, 1, frontier{}).ok();
      ok = ok && ch.covers(ps[0].knowledge(), frontier_entry{ps[1].axis(), 1});
    }
    REQUIRE(guard.allocations() == 0);
  }
  CHECK(ok);
  CHECK(ch.completed() == 100);
  for (std::size_t i = 0; i < n; ++i) CHECK(ps[i].knowledge().size() == 2);
}
