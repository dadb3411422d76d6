// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// mpi_carrier_death_test: a rank really dies (`_exit` or SIGKILL, no
// MPI_Finalize) while the others send to it; the survivors must find it
// by heartbeats, mark it departed, keep talking among themselves, flush,
// and shut down without hanging.
//
// Usage: mpiexec -n 3 mpi_carrier_death_test exit|kill, under
// check_death.py, which sets OMPI_MCA_orte_enable_recovery=1 and reads the
// verdict. Without recovery Open MPI 4.1 kills the whole job about 1 s
// after a rank dies (README.md), so there would be nobody left to test;
// with recovery mpiexec exits 0 whatever the ranks return, so rank 0
// gathers the survivors' verdicts through the carrier and prints one line,
// "mpi_carrier_death_test: VERDICT pass" (or fail), which the script reads.
// It prints "SKIP" and exits 77 with fewer than 3 ranks, with an MPI other
// than Open MPI, or without recovery enabled (the rank's death would end
// the job).
//
// The victim is the last rank. It dies once it has received 200 data
// messages from every survivor, while they are still sending to it, so
// some of their sends are in flight when it dies and never complete.

#include "mpi_test_support.hpp"

#include <causal/adapters/mpi/mpi_carrier.hpp>
#include <causal/adapters/mpi/mpi_session.hpp>

#include <mpi.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace cm = causal::mpi;
namespace mt = causal::test::mpi;
using causal::errc;
using clock_type = std::chrono::steady_clock;

namespace {

int failures = 0;

void expect(bool ok, const char* what, std::uint32_t rank) {
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "[rank %u] FAILED: %s\n", rank, what);
  }
}

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

/// Why this run cannot test a death here, or null.
const char* skip_reason(int size) {
  if (size < 3) {
    return "needs 3 ranks (two survivors and a victim)";
  }
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(version, &length);
  if (std::string_view(version, static_cast<std::size_t>(length)).find("Open MPI v4.") ==
      std::string_view::npos) {
    return "needs Open MPI 4.x: how a job survives a rank's death is implementation-specific";
  }
  const char* recovery = std::getenv("OMPI_MCA_orte_enable_recovery");
  if (recovery == nullptr ||
      (std::string_view(recovery) != "1" && std::string_view(recovery) != "true")) {
    return "needs OMPI_MCA_orte_enable_recovery=1 (else the death ends the job)";
  }
  return nullptr;
}

}  // namespace

int main(int argc, char* argv[]) {
  const bool by_signal = argc > 1 && std::string_view(argv[1]) == "kill";
  auto session = cm::mpi_session::start(&argc, &argv, MPI_THREAD_SERIALIZED);
  if (!session) {
    std::fprintf(stderr, "mpi_session: %s\n", session.error_value().message().data());
    return 1;
  }
  int rank_int = 0;
  int size_int = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_int);
  MPI_Comm_size(MPI_COMM_WORLD, &size_int);
  if (const char* why = skip_reason(size_int)) {
    if (rank_int == 0) {
      std::printf("mpi_carrier_death_test: SKIP: %s\n", why);
    }
    return 77;
  }
  const auto rank = static_cast<std::uint32_t>(rank_int);
  const auto size = static_cast<std::uint32_t>(size_int);
  const std::uint32_t victim = size - 1;

  auto made = cm::mpi_carrier::create();
  if (!made) {
    std::fprintf(stderr, "[rank %u] create: %s\n", rank, made.error_value().message().data());
    return 1;
  }
  cm::mpi_carrier& c = *made;
  mt::silence_detector peers(size, std::chrono::milliseconds(1000), std::chrono::milliseconds(200));
  mt::heartbeat beat(std::chrono::microseconds(1000));

  // Phase 1: everyone hears everyone.
  std::vector<bool> heard(size, false);
  std::vector<std::uint64_t> next_seq(size, 0);
  std::vector<std::uint64_t> data_from(size, 0);
  std::vector<std::uint64_t> late_from(size, 0);
  std::uint64_t out_of_order = 0;
  std::uint64_t corrupt = 0;
  std::vector<int> verdicts(size, -1);
  auto on_message = [&](std::uint32_t from, std::span<const std::byte> bytes) noexcept {
    peers.heard(from);
    heard[from] = true;
    mt::header h;
    if (!mt::read_message(bytes, h)) {
      ++corrupt;
      return;
    }
    if (h.what == mt::kind::data) {
      if (h.seq != next_seq[from]) {
        ++out_of_order;
      }
      next_seq[from] = h.seq + 1;
      ++data_from[from];
    } else if (h.what == mt::kind::late) {
      if (h.seq != late_from[from]) {
        ++out_of_order;
      }
      late_from[from] = h.seq + 1;
    } else if (h.what == mt::kind::done) {
      verdicts[from] = static_cast<int>(h.seq);
    }
  };
  const bool all_heard = mt::poll_until(c, on_message, [&] {
    beat.tick(c, peers);
    for (bool b : heard) {
      if (!b) {
        return false;
      }
    }
    return true;
  });
  expect(all_heard, "every rank heard every other within 20 s", rank);

  // Phase 2: survivors send data to everyone, one round every 100 us; the
  // victim dies after 200 from each survivor.
  std::vector<std::uint64_t> data_sent(size, 0);
  auto last_round = clock_type::now();
  auto send_round = [&] {
    const auto now = clock_type::now();
    if (now - last_round < std::chrono::microseconds(100)) {
      return;
    }
    last_round = now;
    for (std::uint32_t p = 0; p < size; ++p) {
      if (!peers.gone(p) && p != rank) {
        if (c.send(p, mt::make_message(mt::kind::data, rank, data_sent[p], 64))) {
          ++data_sent[p];
        }
      }
    }
  };
  if (rank == victim) {
    const bool fed = mt::poll_until(c, on_message, [&] {
      beat.tick(c, peers);
      for (std::uint32_t p = 0; p < size; ++p) {
        if (p != victim && data_from[p] < 200) {
          return false;
        }
      }
      return true;
    });
    std::printf("[rank %u] victim: %s; dying by %s now\n", rank,
                fed ? "fed 200 messages by each survivor" : "NOT fed within 20 s",
                by_signal ? "SIGKILL" : "_exit(3)");
    std::fflush(stdout);
    if (by_signal) {
      std::raise(SIGKILL);
    }
    _exit(3);
  }

  const auto start = clock_type::now();
  std::int64_t found = -1;
  std::vector<std::int64_t> suspects;
  std::size_t in_flight_at_detection = 0;
  const bool detected = mt::poll_until(c, on_message, [&] {
    beat.tick(c, peers);
    send_round();
    const std::int64_t p = peers.silent_peer();
    if (p >= 0) {
      suspects.push_back(p);
      in_flight_at_detection = c.in_flight();
      peers.forget(static_cast<std::uint32_t>(p));
      c.mark_departed(static_cast<std::uint32_t>(p),
                      causal::error(errc::timeout, "no heartbeat for a second",
                                    static_cast<std::uint64_t>(p)));
      found = p == victim ? p : found;
    }
    return found >= 0;
  });
  const double detect_s = seconds_since(start);
  const cm::mpi_carrier_stats at_mark = c.stats();
  expect(detected, "the victim was found silent within 20 s", rank);
  expect(suspects.size() == 1 && suspects[0] == static_cast<std::int64_t>(victim),
         "only the victim was suspected", rank);
  expect(c.peer_status(victim).code() == errc::timeout, "peer_status(victim) is the timeout",
         rank);
  expect(c.send(victim, mt::make_message(mt::kind::data, rank, 0, 16)).code() == errc::timeout,
         "a send to the victim is refused with its error", rank);

  // Phase 3: the survivors go on: 300 more messages to each other survivor
  // (kind `late`, numbered from 0), all sent at once, so most queue.
  constexpr std::uint64_t more = 300;
  for (std::uint32_t p = 0; p < size; ++p) {
    if (p != victim && p != rank) {
      for (std::uint64_t seq = 0; seq < more; ++seq) {
        expect(c.send(p, mt::make_message(mt::kind::late, rank, seq, 64)).ok(),
               "a send to a survivor is accepted", rank);
      }
    }
  }
  const bool went_on = mt::poll_until(c, on_message, [&] {
    beat.tick(c, peers);
    for (std::uint32_t p = 0; p < size; ++p) {
      if (p != victim && p != rank && late_from[p] < more) {
        return false;
      }
    }
    return true;
  });
  expect(went_on, "the survivors kept exchanging messages after the death", rank);
  expect(out_of_order == 0, "messages arrived in order per sender", rank);
  expect(corrupt == 0, "messages arrived intact", rank);
  const causal::status flushed = c.flush(std::chrono::seconds(5));
  expect(flushed.ok(), "flush() finished: no send is stuck behind the dead rank", rank);

  // Phase 4: survivors report to rank 0 through the carrier.
  const int mine = failures == 0 ? 1 : 0;
  verdicts[rank] = mine;
  if (rank != 0) {
    static_cast<void>(c.send(0, mt::make_message(mt::kind::done, rank, static_cast<std::uint64_t>(mine), 16)));
  }
  bool all_reported = true;
  if (rank == 0) {
    all_reported = mt::poll_until(c, on_message, [&] {
      for (std::uint32_t p = 0; p < size; ++p) {
        if (p != victim && verdicts[p] < 0) {
          return false;
        }
      }
      return true;
    });
  }
  static_cast<void>(c.flush(std::chrono::seconds(5)));
  const cm::mpi_carrier_stats final_stats = c.stats();

  const auto destroy_start = clock_type::now();
  { const cm::mpi_carrier ending = std::move(c); }
  const double destroy_s = seconds_since(destroy_start);
  expect(destroy_s < 2.0, "the carrier's destruction finished within 2 s", rank);

  std::printf("[rank %u] survivor: victim found silent after %.3f s (%zu sends in flight then); "
              "at mark: %llu sent, %llu queued in all; after: %llu dropped from queues, "
              "%llu sends abandoned, %llu late messages dropped; destroyed in %.3f ms\n",
              rank, detect_s, in_flight_at_detection,
              static_cast<unsigned long long>(at_mark.sent),
              static_cast<unsigned long long>(at_mark.queued),
              static_cast<unsigned long long>(final_stats.dropped_to_departed),
              static_cast<unsigned long long>(final_stats.abandoned),
              static_cast<unsigned long long>(final_stats.dropped_from_departed), destroy_s * 1e3);
  if (rank == 0) {
    bool pass = all_reported;
    for (std::uint32_t p = 0; p < size; ++p) {
      if (p != victim && verdicts[p] != 1) {
        pass = false;
      }
    }
    std::printf("mpi_carrier_death_test: VERDICT %s\n", pass ? "pass" : "fail");
  }
  std::fflush(stdout);
  // No MPI_Finalize: with a rank dead, Open MPI 4.1's MPI_Finalize under
  // recovery waits in a runtime fence that includes the dead rank, and
  // some runs hung there for good (about 1 in 5 here). The verdict is out;
  // leave without it, as the victim did. (mpiexec ignores the status
  // under recovery; the verdict line counts.)
  std::fflush(stderr);
  _exit(failures == 0 ? 0 : 1);
}
