// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// mpi_carrier_test: <causal/adapters/mpi/mpi_carrier.hpp> under mpiexec
// with 2, 3 and 4 ranks (adapters/mpi/test/mpi/meson.build). Every test case
// is collective: all ranks run it together, each creating its carrier at the
// same point (MPI_Comm_dup). Every wait is a poll loop bounded by a limit,
// so a rank whose peer failed an assertion fails too instead of hanging.
// Handlers only record; assertions run after the loops (a handler is
// noexcept, and Catch2 reports a failed REQUIRE by throwing).

#include "catch.hpp"
#include "mpi_test_support.hpp"

#include <causal/adapters/mpi/mpi_carrier.hpp>

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace cm = causal::mpi;
namespace mt = causal::test::mpi;
using causal::errc;
using causal::status;

namespace {

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

void world_barrier() { MPI_Barrier(MPI_COMM_WORLD); }

cm::mpi_carrier make_carrier() {
  auto made = cm::mpi_carrier::create();
  if (!made) {
    FAIL("mpi_carrier::create failed: " << made.error_value().message());
  }
  return std::move(*made);
}

/// Per-sender ordering and content checks for data messages.
struct order_check {
  explicit order_check(std::uint32_t ranks) : next(ranks, 0) {}
  std::vector<std::uint64_t> next;  // the seq expected next from each sender
  std::uint64_t received = 0;
  std::uint64_t out_of_order = 0;
  std::uint64_t corrupt = 0;
  std::uint64_t wrong_sender = 0;

  void operator()(std::uint32_t from, std::span<const std::byte> bytes) noexcept {
    mt::header h;
    if (!mt::read_message(bytes, h)) {
      ++corrupt;
      return;
    }
    if (h.from != from) {
      ++wrong_sender;
      return;
    }
    if (h.seq != next[from]) {
      ++out_of_order;
    }
    next[from] = h.seq + 1;
    ++received;
  }
};

}  // namespace

TEST_CASE("mpi_carrier: satisfies the carrier concept", "[mpi][carrier]") {
  STATIC_REQUIRE(cm::carrier<cm::mpi_carrier>);
  STATIC_REQUIRE(cm::mpi_carrier::max_message_bytes == cm::default_mpi_carrier_traits::max_message_bytes);
  STATIC_REQUIRE(std::is_nothrow_move_constructible_v<cm::mpi_carrier>);
  STATIC_REQUIRE(!std::is_copy_constructible_v<cm::mpi_carrier>);
  STATIC_REQUIRE(sizeof(cm::mpi_carrier) == sizeof(void*));
}

TEST_CASE("mpi_carrier: create reports ranks and thread level; bad arguments are refused",
          "[mpi][carrier]") {
  auto made = cm::mpi_carrier::create();
  REQUIRE(made);
  cm::mpi_carrier c = std::move(*made);  // moves keep the carrier working
  CHECK(c.rank() == world_rank());
  CHECK(c.size() == world_size());
  CHECK(c.thread_level() >= MPI_THREAD_SERIALIZED);
  CHECK(c.communicator() != MPI_COMM_WORLD);
  for (std::uint32_t p = 0; p < c.size(); ++p) {
    CHECK(c.peer_status(p).ok());
  }

  const status beyond = c.peer_status(c.size());
  REQUIRE_FALSE(beyond.ok());
  CHECK(beyond.code() == errc::invalid_argument);
  CHECK(beyond.error_value().position() == c.size());

  const std::byte one[1]{};
  const status no_peer = c.send(c.size() + 5, one);
  REQUIRE_FALSE(no_peer.ok());
  CHECK(no_peer.code() == errc::invalid_argument);
  CHECK(no_peer.error_value().position() == c.size() + 5);
  CHECK(c.stats().sent == 0);
  CHECK(c.last_failure().call == nullptr);  // refused before MPI: no MPI failure

  int provided = 0;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_MULTIPLE) {
    // Fails before MPI_Comm_dup: no collective call is left unmatched.
    auto strict = cm::mpi_carrier::create({.comm = MPI_COMM_WORLD,
                                           .required_thread_level = MPI_THREAD_MULTIPLE});
    REQUIRE_FALSE(strict);
    CHECK(strict.error_value().code() == errc::failed_precondition);
    CHECK(strict.error_value().position() == static_cast<std::uint64_t>(provided));
  }
  world_barrier();
}

TEST_CASE("mpi_carrier: all-to-all messages arrive intact and in order per pair",
          "[mpi][carrier][order]") {
  cm::mpi_carrier c = make_carrier();
  const std::uint32_t n = c.size();
  constexpr std::uint64_t per_pair = 1500;
  order_check check(n);
  std::uint64_t refused = 0;
  for (std::uint64_t seq = 0; seq < per_pair; ++seq) {
    for (std::uint32_t p = 0; p < n; ++p) {
      const std::size_t size = mt::header_bytes + (seq * 13 + p * 5) % 200;
      if (!c.send(p, mt::make_message(mt::kind::data, c.rank(), seq, size))) {
        ++refused;
      }
    }
    if (seq % 4 == 0) {
      mt::poll_with(c, check);
    }
  }
  const bool all = mt::poll_until(c, check, [&] { return check.received == per_pair * n; });
  const status flushed = c.flush();
  const cm::mpi_carrier_stats st = c.stats();
  INFO("rank " << c.rank() << " of " << n << ": received " << check.received << ", queued "
               << st.queued << " (high water " << st.queue_high_water << ")");
  CHECK(refused == 0);
  CHECK(all);
  CHECK(check.out_of_order == 0);
  CHECK(check.corrupt == 0);
  CHECK(check.wrong_sender == 0);
  CHECK(flushed.ok());
  CHECK(st.sent == per_pair * n);
  CHECK(st.received == per_pair * n);
  world_barrier();
}

TEST_CASE("mpi_carrier: messages of 0 to max_message_bytes arrive intact; larger ones are refused",
          "[mpi][carrier][size]") {
  cm::mpi_carrier c = make_carrier();
  const std::uint32_t n = c.size();
  const std::uint32_t to = (c.rank() + 1) % n;
  const std::uint32_t from = (c.rank() + n - 1) % n;
  constexpr std::size_t max = cm::mpi_carrier::max_message_bytes;
  const std::vector<std::size_t> sizes{0, 1, 7, 8, 15, 16, 63, 64, 1000, max - 1, max, 5};

  auto message = [](std::uint32_t sender, std::size_t index, std::size_t size) {
    std::vector<std::byte> bytes(size);
    for (std::size_t i = 0; i < size; ++i) {
      bytes[i] = mt::pattern(sender, index, i);
    }
    return bytes;
  };

  for (std::size_t i = 0; i + 1 < sizes.size(); ++i) {
    CHECK(c.send(to, message(c.rank(), i, sizes[i])).ok());
  }
  // Refused whole, before anything reaches MPI: the receiver's count and
  // order below show that nothing of them was sent.
  const std::vector<std::byte> too_big(max + 1);
  const status refused = c.send(to, too_big);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.code() == errc::invalid_argument);
  CHECK(refused.error_value().position() == max + 1);
  const std::vector<std::byte> huge(1 << 20);
  CHECK(c.send(to, huge).code() == errc::invalid_argument);
  // The terminator: a 5-byte message, last in the list.
  CHECK(c.send(to, message(c.rank(), sizes.size() - 1, sizes.back())).ok());

  std::vector<std::size_t> got_sizes;
  std::size_t bad = 0;
  std::size_t strangers = 0;
  auto on_message = [&](std::uint32_t sender, std::span<const std::byte> bytes) noexcept {
    if (sender != from) {
      ++strangers;
      return;
    }
    const std::size_t index = got_sizes.size();
    got_sizes.push_back(bytes.size());
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      if (bytes[i] != mt::pattern(sender, index, i)) {
        ++bad;
        break;
      }
    }
  };
  CHECK(mt::poll_until(c, on_message, [&] { return got_sizes.size() >= sizes.size(); }));
  CHECK(c.flush().ok());
  CHECK(got_sizes == sizes);
  CHECK(bad == 0);
  CHECK(strangers == 0);
  world_barrier();
}

TEST_CASE("mpi_carrier: a burst beyond the pool and the per-peer cap queues and keeps its order",
          "[mpi][carrier][queue]") {
  cm::mpi_carrier c = make_carrier();
  const std::uint32_t n = c.size();
  constexpr std::uint64_t burst = 3 * cm::mpi_carrier::send_slots + 7;
  constexpr std::size_t cap = cm::mpi_carrier::max_in_flight_per_peer;
  constexpr std::size_t pool = cm::mpi_carrier::send_slots;

  // No poll between the sends: the first min(pool, n * cap) start at once
  // (the cap per peer, the pool in total), everything else queues.
  for (std::uint64_t seq = 0; seq < burst; ++seq) {
    for (std::uint32_t p = 0; p < n; ++p) {
      REQUIRE(c.send(p, mt::make_message(mt::kind::data, c.rank(), seq, 64)).ok());
    }
  }
  const std::size_t started = std::min<std::size_t>(pool, n * cap);
  const std::size_t expect_queued = burst * n - started;
  const cm::mpi_carrier_stats before = c.stats();
  CHECK(before.sent == started);
  CHECK(before.queued == expect_queued);
  CHECK(before.queued_now == expect_queued);
  CHECK(before.queue_high_water == expect_queued);
  CHECK(c.in_flight() == started);

  order_check check(n);
  CHECK(mt::poll_until(c, check, [&] { return check.received == burst * n; }));
  CHECK(c.flush().ok());
  const cm::mpi_carrier_stats after = c.stats();
  INFO("rank " << c.rank() << ": " << check.received << " received");
  CHECK(check.out_of_order == 0);
  CHECK(check.corrupt == 0);
  CHECK(after.queued_now == 0);
  CHECK(after.sent == burst * n);
  CHECK(c.in_flight() == 0);
  world_barrier();
}

TEST_CASE("mpi_carrier: a burst that is already there comes out whole and in order, one message a poll",
          "[mpi][carrier][poll]") {
  cm::mpi_carrier c = make_carrier();
  const std::uint32_t n = c.size();
  const std::uint32_t to = (c.rank() + 1) % n;
  constexpr std::uint64_t count = 100;
  for (std::uint64_t seq = 0; seq < count; ++seq) {
    REQUIRE(c.send(to, mt::make_message(mt::kind::data, c.rank(), seq, mt::header_bytes)).ok());
  }
  REQUIRE(c.flush().ok());
  world_barrier();  // every rank's messages have left; most have arrived

  order_check check(n);
  std::size_t most_in_one_poll = 0;
  std::size_t productive_polls = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (check.received < count && std::chrono::steady_clock::now() < deadline) {
    const std::size_t got = mt::poll_with(c, check);
    most_in_one_poll = std::max(most_in_one_poll, got);
    productive_polls += got != 0 ? 1 : 0;
  }
  INFO("rank " << c.rank() << ": " << check.received << " messages in " << productive_polls
               << " productive polls, at most " << most_in_one_poll << " in one");
  CHECK(check.received == count);
  CHECK(check.out_of_order == 0);
  // More than K = 16 were waiting: the ring was restarted along the way.
  CHECK(most_in_one_poll == 1);
  CHECK(productive_polls == count);
  CHECK(c.stats().received == count);
  world_barrier();
}

TEST_CASE("mpi_carrier: a peer that says goodbye is unreachable and the others go on",
          "[mpi][carrier][departure]") {
  const std::uint32_t n = world_size();
  const std::uint32_t leaver = n - 1;
  if (world_rank() == leaver) {
    cm::mpi_carrier c = make_carrier();
    for (std::uint32_t p = 0; p < n; ++p) {
      if (p == leaver) {
        continue;
      }
      REQUIRE(c.send(p, mt::make_message(mt::kind::bye, c.rank(), 0, mt::header_bytes)).ok());
      for (std::uint64_t seq = 1; seq <= 3; ++seq) {
        // Sent after the goodbye: the others must never deliver these.
        REQUIRE(c.send(p, mt::make_message(mt::kind::late, c.rank(), seq, 32)).ok());
      }
    }
    CHECK(c.flush().ok());
    // The carrier ends here; the others carry on without this rank, which
    // waits for them at the barrier (it cannot leave the job earlier).
  } else {
    cm::mpi_carrier c = make_carrier();
    // Sends to the leaver without polling: the cap starts some, the rest
    // queue; whatever is queued when it leaves is dropped.
    for (std::uint64_t seq = 0; seq < 40; ++seq) {
      REQUIRE(c.send(leaver, mt::make_message(mt::kind::data, c.rank(), seq, 48)).ok());
    }
    bool bye_seen = false;
    std::uint64_t after_bye = 0;
    order_check among_survivors(n);
    auto on_message = [&](std::uint32_t from, std::span<const std::byte> bytes) noexcept {
      mt::header h;
      if (from == leaver) {
        if (bye_seen || !mt::read_message(bytes, h) || h.what != mt::kind::bye) {
          ++after_bye;
          return;
        }
        bye_seen = true;
        c.mark_departed(leaver, causal::error(errc::cancelled, "the peer said goodbye", leaver));
        return;
      }
      among_survivors(from, bytes);
    };
    CHECK(mt::poll_until(c, on_message, [&] { return bye_seen; }));

    const status gone = c.peer_status(leaver);
    REQUIRE_FALSE(gone.ok());
    CHECK(gone.code() == errc::cancelled);
    CHECK(gone.error_value().position() == leaver);
    const status refused = c.send(leaver, mt::make_message(mt::kind::data, c.rank(), 99, 16));
    CHECK(refused.code() == errc::cancelled);

    // The survivors (with n = 2: this rank alone, to itself) go on.
    constexpr std::uint64_t per_pair = 200;
    for (std::uint64_t seq = 0; seq < per_pair; ++seq) {
      for (std::uint32_t p = 0; p < n; ++p) {
        if (p != leaver) {
          CHECK(c.send(p, mt::make_message(mt::kind::data, c.rank(), seq, 40)).ok());
        }
      }
      mt::poll_with(c, on_message);
    }
    CHECK(mt::poll_until(c, on_message,
                         [&] { return among_survivors.received == per_pair * (n - 1); }));
    CHECK(c.flush().ok());
    const cm::mpi_carrier_stats st = c.stats();
    INFO("rank " << c.rank() << ": to the leaver " << st.dropped_to_departed
                 << " dropped from the queue; " << st.dropped_from_departed
                 << " of its late messages dropped; " << st.abandoned << " sends abandoned");
    CHECK(after_bye == 0);
    CHECK(st.queued_now == 0);
    CHECK(c.in_flight() == 0);
    CHECK(among_survivors.out_of_order == 0);
    CHECK(among_survivors.corrupt == 0);
    CHECK(st.dropped_from_departed <= 3);
  }
  world_barrier();
}

TEST_CASE("mpi_carrier: a silent peer is found by missing heartbeats", "[mpi][carrier][departure]") {
  const std::uint32_t n = world_size();
  const std::uint32_t silent = n - 1;
  cm::mpi_carrier c = make_carrier();
  mt::silence_detector peers(n, std::chrono::milliseconds(1000), std::chrono::milliseconds(100));
  mt::heartbeat beat(std::chrono::microseconds(1000));
  std::vector<bool> heard(n, false);
  order_check data(n);
  auto on_message = [&](std::uint32_t from, std::span<const std::byte> bytes) noexcept {
    peers.heard(from);
    heard[from] = true;
    mt::header h;
    if (mt::read_message(bytes, h) && h.what == mt::kind::data) {
      data(from, bytes);
    }
  };
  // Everyone hears everyone once, so the silent rank was demonstrably alive.
  CHECK(mt::poll_until(c, on_message, [&] {
    beat.tick(c, peers);
    return std::all_of(heard.begin(), heard.end(), [](bool b) { return b; });
  }));

  if (c.rank() == silent) {
    // Stops polling and sending without a word, carrier alive: a hung
    // rank, as far as its peers can tell.
  } else {
    std::int64_t found = -1;
    std::vector<std::int64_t> suspects;
    CHECK(mt::poll_until(c, on_message, [&] {
      beat.tick(c, peers);
      const std::int64_t p = peers.silent_peer();
      if (p >= 0) {
        suspects.push_back(p);
        peers.forget(static_cast<std::uint32_t>(p));
        c.mark_departed(static_cast<std::uint32_t>(p),
                        causal::error(errc::timeout, "no heartbeat for a second",
                                      static_cast<std::uint64_t>(p)));
        found = p == silent ? p : found;
      }
      return found >= 0;
    }));
    CHECK(suspects == std::vector<std::int64_t>{silent});  // nobody alive was blamed
    CHECK(c.peer_status(silent).code() == errc::timeout);
    CHECK(c.send(silent, mt::make_message(mt::kind::data, c.rank(), 0, 16)).code() ==
          errc::timeout);

    constexpr std::uint64_t per_pair = 50;
    for (std::uint64_t seq = 0; seq < per_pair; ++seq) {
      for (std::uint32_t p = 0; p < n; ++p) {
        if (p != silent) {
          CHECK(c.send(p, mt::make_message(mt::kind::data, c.rank(), seq, 24)).ok());
        }
      }
    }
    CHECK(mt::poll_until(c, on_message, [&] { return data.received == per_pair * (n - 1); }));
    CHECK(data.out_of_order == 0);
    CHECK(c.flush().ok());
  }
  world_barrier();
}

namespace {

/// Receive slots smaller than what the other ranks send.
struct small_traits : cm::default_mpi_carrier_traits {
  static constexpr std::size_t max_message_bytes = 64;
};

}  // namespace

TEST_CASE("mpi_carrier: a message larger than the receiver's slots fails that peer, with MPI's text",
          "[mpi][carrier][errors]") {
  // Rank 1 takes small slots; the others the default. Both kinds create
  // their carrier here, so the duplicated communicators match up.
  if (world_rank() == 1) {
    auto made = cm::basic_mpi_carrier<small_traits>::create();
    REQUIRE(made);
    auto& c = *made;
    std::uint64_t delivered = 0;
    auto on_message = [&](std::uint32_t, std::span<const std::byte>) noexcept { ++delivered; };
    CHECK(mt::poll_until(c, on_message, [&] { return !c.peer_status(0).ok(); }));
    const status why = c.peer_status(0);
    REQUIRE_FALSE(why.ok());
    CHECK(why.code() == errc::capacity_exceeded);
    CHECK(why.error_value().position() == 0);
    const cm::mpi_failure& f = c.last_failure();
    INFO("MPI said: " << std::string(f.what()));
    REQUIRE(f.call != nullptr);
    CHECK(std::string(f.call) == "MPI_Test (receive)");
    CHECK(f.error_class == MPI_ERR_TRUNCATE);
    CHECK(f.peer == 0);
    CHECK_FALSE(f.what().empty());
    // The small message behind it (FIFO) comes from an unreachable peer now.
    CHECK(mt::poll_until(c, on_message, [&] { return c.stats().dropped_from_departed == 1; }));
    CHECK(delivered == 0);
    CHECK(c.peer_status(1).ok());  // the others are unaffected
  } else {
    cm::mpi_carrier c = make_carrier();
    if (c.rank() == 0) {
      CHECK(c.send(1, std::vector<std::byte>(100)).ok());
      CHECK(c.send(1, std::vector<std::byte>(10)).ok());
      CHECK(c.flush().ok());
    }
  }
  world_barrier();
}

TEST_CASE("mpi_carrier: carriers are private: a new one never sees an old one's messages",
          "[mpi][carrier][shutdown]") {
  const std::uint32_t n = world_size();
  const std::uint32_t to = (world_rank() + 1) % n;
  {
    cm::mpi_carrier old = make_carrier();
    for (std::uint64_t seq = 0; seq < 5; ++seq) {
      REQUIRE(old.send(to, mt::make_message(mt::kind::late, old.rank(), seq, 32)).ok());
    }
    REQUIRE(old.flush().ok());
    world_barrier();
    // Destroyed without a poll: its messages are still waiting.
  }
  cm::mpi_carrier c = make_carrier();
  std::uint64_t fresh = 0;
  std::uint64_t stale = 0;
  auto on_message = [&](std::uint32_t, std::span<const std::byte> bytes) noexcept {
    mt::header h;
    if (mt::read_message(bytes, h) && h.what == mt::kind::data) {
      ++fresh;
    } else {
      ++stale;
    }
  };
  for (std::uint64_t seq = 0; seq < 5; ++seq) {
    REQUIRE(c.send(to, mt::make_message(mt::kind::data, c.rank(), seq, 32)).ok());
  }
  CHECK(mt::poll_until(c, on_message, [&] { return fresh == 5; }));
  CHECK(c.flush().ok());
  world_barrier();
  mt::poll_with(c, on_message);
  CHECK(stale == 0);
  CHECK(fresh == 5);
  world_barrier();
}

TEST_CASE("mpi_carrier: clean shutdown leaves nothing in flight and does not wait",
          "[mpi][carrier][shutdown]") {
  const std::uint32_t n = world_size();
  for (int round = 0; round < 10; ++round) {
    auto made = cm::mpi_carrier::create();
    REQUIRE(made);
    order_check check(n);
    for (std::uint32_t p = 0; p < n; ++p) {
      REQUIRE(made->send(p, mt::make_message(mt::kind::data, made->rank(), 0, 64)).ok());
    }
    CHECK(mt::poll_until(*made, check, [&] { return check.received == n; }));
    REQUIRE(made->flush().ok());
    CHECK(made->in_flight() == 0);
    CHECK(made->stats().queued_now == 0);
    CHECK(made->stats().abandoned == 0);
    world_barrier();  // nobody sends to a carrier that is going away
    const auto start = std::chrono::steady_clock::now();
    { const cm::mpi_carrier ending = std::move(*made); }
    const auto took = std::chrono::steady_clock::now() - start;
    INFO("round " << round << ": destruction took "
                  << std::chrono::duration_cast<std::chrono::microseconds>(took).count() << " us");
    // Nothing to wait for: well under the grace period it would spend on
    // sends that do not finish.
    CHECK(took < cm::default_mpi_carrier_traits::shutdown_grace / 2);
  }
  world_barrier();
}
