// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// mpi_collective_test: <causal/adapters/mpi/collective.hpp> under mpiexec
// with 2, 3 and 4 ranks (adapters/mpi/test/mpi_collective/meson.build).
// Every test case is collective: all ranks run it together, each creating
// its channel at the same point. Each rank's queue is a recording_queue on
// its own rank axis (machine = rank), so a rank can name another rank's
// axis and check the exchanged join against it. Mismatch tests make the
// ranks call differently on purpose; the channel must answer every rank
// alike and never leave one blocked in a collective.

#include "catch.hpp"

#include <causal/adapters/mpi/collective.hpp>
#include <causal/adapters/mpi/mpi_carrier.hpp>
#include <causal/adapters/mpi/node.hpp>
#include <causal/adapters/mpi/rank_axes.hpp>
#include <causal/executor.hpp>
#include <causal/process.hpp>
#include <causal/queue.hpp>

#include <mpi.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace cm = causal::mpi;

// A rank's node can be the channel's axis source (one allocator per rank).
static_assert(cm::collective_axis_source<cm::basic_node<cm::mpi_carrier>>);
static_assert(cm::collective_axis_source<cm::rank_axis_allocator>);
using causal::axis;
using causal::domain;
using causal::errc;
using causal::frontier;
using causal::frontier_entry;

namespace {

using queue_t = causal::recording_queue<>;

std::uint32_t world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return static_cast<std::uint32_t>(rank);
}

std::uint32_t world_size() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return static_cast<std::uint32_t>(size);
}

/// The axis rank `r`'s allocator gives its `n`-th queue (session 0).
axis queue_axis_of(std::uint32_t r, std::uint64_t n = 1) {
  return causal::default_axis_layout::make({0, r, domain::queue, n}).value();
}

/// One rank's test fixture: its allocator, its queue, the channel.
struct rank_setup {
  explicit rank_setup(std::uint64_t channel_id = 7)
      : rank(world_rank()), size(world_size()), axes(rank) {
    auto qa = axes.allocate(domain::queue);
    REQUIRE(qa);
    REQUIRE(*qa == queue_axis_of(rank));
    queue.emplace(*qa);
    auto made = cm::mpi_collective_channel::create({MPI_COMM_WORLD, channel_id}, axes);
    if (!made) FAIL("create failed: " << made.error_value().message());
    channel.emplace(std::move(*made));
  }

  /// Submits one operation on the queue and returns its epoch.
  std::uint64_t submit_op() {
    auto s = queue->submit({}, {}, 0);
    REQUIRE(s);
    return s->epoch;
  }

  std::uint32_t rank;
  std::uint32_t size;
  cm::rank_axis_allocator axes;
  std::optional<queue_t> queue;
  std::optional<cm::mpi_collective_channel> channel;
};

}  // namespace

TEST_CASE("mpi collective: every rank agrees on the axis, and it is rank 0's collective axis",
          "[mpi][collective]") {
  rank_setup r;
  const axis c = r.channel->axis();
  CHECK(causal::domain_of<causal::default_axis_layout>(c) == domain::collective);
  CHECK(causal::default_axis_layout::machine(c) == 0);
  std::uint64_t mine = c.raw();
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  MPI_Allreduce(&mine, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&mine, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  CHECK(lo == hi);
  CHECK(r.channel->size() == r.size);
  CHECK(r.channel->rank() == r.rank);
  CHECK(r.channel->completed() == 0);
  // Only completed rounds move the channel's semaphore.
  CHECK(r.channel->semaphore().signal(1).code() == errc::failed_precondition);
  CHECK(r.channel->completed() == 0);
}

TEST_CASE("mpi collective: after k rounds each rank knows (C, k) as one entry, and the "
          "semaphore holds the join of every rank's contribution",
          "[mpi][collective][compression]") {
  rank_setup r;
  auto& ch = *r.channel;
  const axis c = ch.axis();
  constexpr std::uint64_t rounds = 5;
  for (std::uint64_t k = 1; k <= rounds; ++k) {
    // Every rank submits k ops before round k (so rank r's epoch is
    // k(k+1)/2 at its contribution), then contributes its knowledge.
    for (std::uint64_t i = 0; i < k; ++i) r.submit_op();
    const std::uint64_t epoch = k * (k + 1) / 2;
    REQUIRE(r.queue->epoch() == epoch);
    auto done = ch.complete_round(r.queue->knowledge());
    REQUIRE(done);
    CHECK(*done == k);
    r.queue->learn(ch.entry_of(k));

    // The queue's knowledge: its own entry and (C, k), whatever the size.
    CHECK(r.queue->knowledge() == frontier{{queue_axis_of(r.rank), epoch}, {c, k}});
    CHECK(r.queue->knowledge().size() == 2);

    // The semaphore at k: every rank's contribution, (C, k), producer (C, k).
    CHECK(ch.completed() == k);
    auto at = ch.frontier_at(k);
    REQUIRE(at);
    CHECK(at->reached);
    CHECK_FALSE(at->frontier.tainted());
    CHECK(at->producer == frontier_entry{c, k});
    frontier expected{{c, k}};
    for (std::uint32_t p = 0; p < r.size; ++p) expected.insert_or_raise(queue_axis_of(p), epoch);
    CHECK(at->frontier == expected);
    CHECK(at->frontier.size() == r.size + 1);
  }
  CHECK(ch.stats().rounds == rounds);
  CHECK(ch.stats().tainted_rounds == 0);
}

TEST_CASE("mpi collective: covers() resolves another rank's pre-collective epoch through the "
          "channel, never a post-collective one",
          "[mpi][collective][covers]") {
  rank_setup r;
  auto& ch = *r.channel;
  const std::uint32_t peer = (r.rank + 1) % r.size;
  // Ranks contribute different epochs: rank p has submitted p + 2 ops.
  for (std::uint32_t i = 0; i < r.rank + 2; ++i) r.submit_op();
  const frontier_entry peer_pre{queue_axis_of(peer), peer + 2};
  const frontier_entry peer_post{queue_axis_of(peer), peer + 3};

  CHECK_FALSE(ch.covers(r.queue->knowledge(), peer_pre));  // nothing learnt yet
  auto done = ch.complete_round(r.queue->knowledge());
  REQUIRE(done);
  r.queue->learn(ch.entry_of(*done));

  const frontier& knows = r.queue->knowledge();
  CHECK_FALSE(knows.contains(peer_pre.axis));  // the compression: not imported
  CHECK(ch.covers(knows, peer_pre));
  CHECK(ch.covers(knows, frontier_entry{queue_axis_of(peer), 1}));
  CHECK_FALSE(ch.covers(knows, peer_post));
  CHECK(ch.covers(knows, frontier{{queue_axis_of(peer), peer + 2}, {queue_axis_of(r.rank), 1}}));
  CHECK_FALSE(ch.covers(knows, frontier{{queue_axis_of(peer), peer + 3}}));
  // Knowledge without (C, 1) is not covered through the channel.
  CHECK_FALSE(ch.covers(frontier{{queue_axis_of(r.rank), r.rank + 2}}, peer_pre));
}

TEST_CASE("mpi collective: all_reduce reduces the data and completes the round",
          "[mpi][collective][all_reduce]") {
  rank_setup r;
  auto& ch = *r.channel;
  const auto n = static_cast<int>(r.size);

  std::array<int, 3> in{static_cast<int>(r.rank) + 1, 10 * static_cast<int>(r.rank), 7};
  std::array<int, 3> out{};
  r.submit_op();
  auto k = ch.all_reduce(in.data(), out.data(), 3, MPI_INT, MPI_SUM, r.queue->knowledge());
  REQUIRE(k);
  CHECK(*k == 1);
  CHECK(out[0] == n * (n + 1) / 2);
  CHECK(out[1] == 10 * n * (n - 1) / 2);
  CHECK(out[2] == 7 * n);

  std::array<double, 2> values{static_cast<double>(r.rank), -static_cast<double>(r.rank)};
  r.submit_op();
  k = ch.all_reduce(MPI_IN_PLACE, values.data(), 2, MPI_DOUBLE, MPI_MAX, r.queue->knowledge());
  REQUIRE(k);
  CHECK(*k == 2);
  CHECK(values[0] == static_cast<double>(n - 1));
  CHECK(values[1] == 0.0);

  auto at = ch.frontier_at(2);
  REQUIRE(at);
  for (std::uint32_t p = 0; p < r.size; ++p) CHECK(at->frontier.epoch_of(queue_axis_of(p)) == 2);
  CHECK(ch.stats().data_rounds == 2);
}

TEST_CASE("mpi collective: the non-blocking round is driven by test()",
          "[mpi][collective][nonblocking]") {
  rank_setup r;
  auto& ch = *r.channel;
  long long in = static_cast<long long>(r.rank) + 1;
  long long out = 0;
  r.submit_op();
  REQUIRE(ch.start_all_reduce(&in, &out, 1, MPI_LONG_LONG, MPI_PROD, r.queue->knowledge()));
  CHECK(ch.in_flight());
  // Rounds run one at a time: a second start is refused, nothing changes.
  CHECK(ch.start_round(r.queue->knowledge()).code() == errc::failed_precondition);
  std::optional<std::uint64_t> k;
  while (!k) {
    auto t = ch.test();
    REQUIRE(t);
    k = *t;
  }
  CHECK(*k == 1);
  CHECK_FALSE(ch.in_flight());
  long long factorial = 1;
  for (std::uint32_t p = 1; p <= r.size; ++p) factorial *= p;
  CHECK(out == factorial);
  CHECK(ch.completed() == 1);
  CHECK(ch.test().error_value().code() == errc::failed_precondition);  // none in flight
  CHECK(ch.wait().error_value().code() == errc::failed_precondition);
}

/// A process that drives a channel's round in flight with test(): the
/// non-blocking use from a progress process on a causal::executor.
struct round_driver {
  cm::mpi_collective_channel* channel = nullptr;
  std::optional<std::uint64_t> finished;
  std::optional<causal::error> failed;
  std::uint64_t drains = 0;
  causal::process p{[](causal::process& self, causal::worker_context&) noexcept {
                      auto& d = *static_cast<round_driver*>(self.user_data());
                      ++d.drains;
                      auto t = d.channel->test();
                      if (!t) {
                        d.failed = t.error_value();
                        return causal::drain_result::complete();
                      }
                      if (*t) {
                        d.finished = **t;
                        return causal::drain_result::complete();
                      }
                      return causal::drain_result::idle();
                    },
                    this};
};

TEST_CASE("mpi collective: a process on the executor drives the non-blocking round",
          "[mpi][collective][nonblocking]") {
  rank_setup r;
  auto& ch = *r.channel;
  causal::executor ex(causal::executor_options{.worker_count = 0});
  round_driver d;
  d.channel = &ch;
  r.submit_op();
  int in = 2;
  int out = 0;
  REQUIRE(ch.start_all_reduce(&in, &out, 1, MPI_INT, MPI_SUM, r.queue->knowledge()));
  ex.submit(d.p);
  while (!d.p.is_complete()) ex.run_until_idle();
  REQUIRE_FALSE(d.failed);
  REQUIRE(d.finished);
  CHECK(*d.finished == 1);
  CHECK(out == 2 * static_cast<int>(r.size));
  CHECK(ch.semaphore().try_wait(1));
  CHECK(d.drains >= 1);
}

TEST_CASE("mpi collective: mismatched calls get the same clear error on every rank and leave "
          "the channel usable",
          "[mpi][collective][errors]") {
  rank_setup r;
  auto& ch = *r.channel;
  std::array<int, 3> in{1, 2, 3};
  std::array<int, 3> out{};

  SECTION("different counts") {
    const int count = r.rank == 0 ? 2 : 3;
    auto k = ch.all_reduce(in.data(), out.data(), count, MPI_INT, MPI_SUM, frontier{});
    REQUIRE_FALSE(k);
    CHECK(k.error_value().code() == errc::invalid_argument);
    CHECK(out == std::array<int, 3>{});  // the data collective did not run
  }
  SECTION("complete_round on one rank, all_reduce on the others") {
    auto k = r.rank == 1 ? ch.complete_round(frontier{})
                         : ch.all_reduce(in.data(), out.data(), 3, MPI_INT, MPI_SUM, frontier{});
    REQUIRE_FALSE(k);
    CHECK(k.error_value().code() == errc::invalid_argument);
  }
  SECTION("a negative count on one rank") {
    const int count = r.rank == r.size - 1 ? -1 : 3;
    auto k = ch.all_reduce(in.data(), out.data(), count, MPI_INT, MPI_SUM, frontier{});
    REQUIRE_FALSE(k);
    CHECK(k.error_value().code() == errc::invalid_argument);
  }
  SECTION("a contribution that already holds the round's entry, on rank 1") {
    frontier mine{{queue_axis_of(r.rank), 1}};
    if (r.rank == 1) mine.insert_or_raise(ch.axis(), 1);
    auto k = ch.complete_round(mine);
    REQUIRE_FALSE(k);
    CHECK(k.error_value().code() == errc::invalid_argument);
    CHECK(k.error_value().position() == 1);  // the lowest rank that flagged it
  }
  // Every rank refused round 1 alike: it is still round 1, and it runs.
  CHECK(ch.completed() == 0);
  CHECK(ch.next_round() == 1);
  CHECK_FALSE(ch.semaphore().failed());
  CHECK(ch.stats().refused_rounds == 1);
  auto k = ch.all_reduce(in.data(), out.data(), 3, MPI_INT, MPI_SUM, frontier{});
  REQUIRE(k);
  CHECK(*k == 1);
  CHECK(out[2] == 3 * static_cast<int>(r.size));
}

TEST_CASE("mpi collective: ranks that name different channels get a clear error at create",
          "[mpi][collective][errors]") {
  cm::rank_axis_allocator axes(world_rank());
  const std::uint64_t id = world_rank() == 1 ? 8 : 7;
  auto made = cm::mpi_collective_channel::create({MPI_COMM_WORLD, id}, axes);
  REQUIRE_FALSE(made);
  CHECK(made.error_value().code() == errc::invalid_argument);
  CHECK(made.error_value().position() == 1);
}

TEST_CASE("mpi collective: a channel failed on one rank fails the next round on every rank",
          "[mpi][collective][errors]") {
  rank_setup r;
  auto& ch = *r.channel;
  REQUIRE(ch.complete_round(frontier{}));
  const causal::error local{errc::cancelled, "test: rank 1 gives up", 99};
  if (r.rank == 1) ch.fail(local);
  auto k = ch.complete_round(frontier{});
  REQUIRE_FALSE(k);
  if (r.rank == 1) {
    CHECK(k.error_value() == local);
  } else {
    CHECK(k.error_value().code() == errc::failed_precondition);
    CHECK(k.error_value().position() == 1);
  }
  CHECK(ch.semaphore().failed());
  CHECK(ch.completed() == 1);
  // The round completed before the failure stays completed, also for a
  // wait armed now (docs/semaphores.md, "Failure"); the failed one never
  // comes.
  const auto now = std::chrono::steady_clock::now();
  CHECK(ch.semaphore().wait_until(1, now).ok());
  CHECK(ch.semaphore().wait_until(2, now).code() == ch.semaphore().failure()->code());
  REQUIRE(ch.frontier_at(1));
  CHECK(ch.frontier_at(1)->reached);
  // Every rank knows: later rounds return the failure without MPI.
  CHECK_FALSE(ch.complete_round(frontier{}));
}

TEST_CASE("mpi collective: an MPI error fails the semaphore clearly and leaves the channel valid",
          "[mpi][collective][errors]") {
  rank_setup r;
  auto& ch = *r.channel;
  r.submit_op();
  REQUIRE(ch.complete_round(r.queue->knowledge()));
  r.queue->learn(ch.entry_of(1));
  int in = 1;
  int out = 0;
  // MPI_OP_NULL passes the agreement (every rank calls alike), then
  // MPI_Iallreduce rejects it on every rank.
  auto k = ch.all_reduce(&in, &out, 1, MPI_INT, MPI_OP_NULL, r.queue->knowledge());
  REQUIRE_FALSE(k);
  CHECK(ch.semaphore().failed());
  REQUIRE(ch.semaphore().failure());
  CHECK(*ch.semaphore().failure() == k.error_value());
  REQUIRE(ch.last_failure().call != nullptr);
  CHECK(std::string(ch.last_failure().call) == "MPI_Iallreduce (data)");
  CHECK_FALSE(ch.last_failure().what().empty());
  // Still valid: the completed round still answers, later rounds fail fast.
  CHECK(ch.completed() == 1);
  CHECK(ch.covers(r.queue->knowledge(), frontier_entry{queue_axis_of((r.rank + 1) % r.size), 1}));
  CHECK(ch.complete_round(frontier{}).error_value() == k.error_value());
  CHECK_FALSE(ch.in_flight());
}

using small_evicting = causal::basic_frontier<4>;
using small_rejecting =
    causal::basic_frontier<4, causal::default_axis_layout, causal::reject_overflow>;

TEMPLATE_TEST_CASE("mpi collective: a join larger than the frontier's capacity is tainted, "
                   "never silently cut",
                   "[mpi][collective][overflow]", small_evicting, small_rejecting) {
  using small = TestType;
  using small_channel = cm::basic_mpi_collective_channel<small, causal::basic_semaphore<small>>;
  const std::uint32_t rank = world_rank();
  cm::rank_axis_allocator axes(rank);
  auto made = small_channel::create({MPI_COMM_WORLD, 3}, axes);
  REQUIRE(made);
  small_channel& ch = *made;
  // Each rank contributes 2 axes of its own: 2N + 1 > 4 for N >= 2.
  const std::array<frontier_entry, 2> own{
      {{queue_axis_of(rank, 1), 5}, {queue_axis_of(rank, 2), 6}}};
  const small mine = small::from_entries(own).value();
  auto k = ch.complete_round(mine);
  REQUIRE(k);
  auto at = ch.frontier_at(*k);
  REQUIRE(at);
  CHECK(at->frontier.tainted());
  CHECK(at->frontier.epoch_of(ch.axis()) == 1);  // C is pinned, never evicted
  CHECK(at->frontier.size() == 4);
  CHECK(ch.stats().tainted_rounds == 1);
  // The entries kept are the highest-ranked ones, the same on every rank.
  CHECK(at->frontier.epoch_of(queue_axis_of(world_size() - 1, 2)) == 6);
  // A round that fits is exact again.
  const std::array<frontier_entry, 1> one{{{queue_axis_of(0, 1), 9}}};
  k = ch.complete_round(small::from_entries(one).value());
  REQUIRE(k);
  at = ch.frontier_at(*k);
  REQUIRE(at);
  CHECK_FALSE(at->frontier.tainted());
  CHECK(at->frontier.size() == 2);
  CHECK(ch.stats().tainted_rounds == 1);
}
