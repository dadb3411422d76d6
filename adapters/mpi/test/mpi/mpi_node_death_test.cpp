// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// mpi_node_death_test: a rank of a job of basic_node<mpi_carrier> dies
// without a word (`_exit` or SIGKILL, no BYE, no MPI_Finalize); the
// survivors' nodes must find it by heartbeats, fail its proxies -- a host
// waiter parked on one wakes with the node's error -- and go on among
// themselves.
//
// Usage: mpiexec -n 3 mpi_node_death_test exit|kill, under check_death.py,
// which sets OMPI_MCA_orte_enable_recovery=1 and reads the verdict line
// rank 0 prints ("mpi_node_death_test: VERDICT pass"): without recovery
// Open MPI 4.1 ends the whole job about 1 s after a rank dies, and with it
// mpiexec exits 0 whatever the ranks return (adapters/mpi/README.md,
// "Failures"). It prints "SKIP" and exits 77 with fewer than 3 ranks, with
// an MPI other than Open MPI 4, or without recovery.
//
// Time. Every node runs on a manual_clock (heartbeat interval 10 ms,
// timeout 500 ms of that clock), so nothing depends on the machine's
// speed. After the death a survivor moves its clock one interval forward
// only when a message from another survivor arrived since its last step:
// each step makes it send a heartbeat, which lets the others step. A live
// survivor is therefore heard at most one step before each check, never
// half a second, while the dead rank, silent from the start of the
// stepping, is lost after 50 steps. No clock reading or sleep decides.

#include <causal/adapters/mpi/mpi_carrier.hpp>
#include <causal/adapters/mpi/mpi_session.hpp>
#include <causal/adapters/mpi/node.hpp>
#include <causal/semaphore.hpp>

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <unistd.h>

namespace cm = causal::mpi;
using causal::errc;
using causal::semaphore;
using node_type = cm::basic_node<cm::mpi_carrier, causal::semaphore, cm::default_node_traits, cm::manual_clock>;

namespace {

int failures = 0;

void expect(bool ok, const char* what, std::uint32_t rank) {
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "[rank %u] FAILED: %s\n", rank, what);
  }
}

/// Why this run cannot test a death here, or null.
const char* skip_reason(int size) {
  if (size < 3) return "needs 3 ranks (two survivors and a victim)";
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(version, &length);
  if (std::string_view(version, static_cast<std::size_t>(length)).find("Open MPI v4.") == std::string_view::npos) {
    return "needs Open MPI 4.x: how a job survives a rank's death is implementation-specific";
  }
  const char* recovery = std::getenv("OMPI_MCA_orte_enable_recovery");
  if (recovery == nullptr || (std::string_view(recovery) != "1" && std::string_view(recovery) != "true")) {
    return "needs OMPI_MCA_orte_enable_recovery=1 (else the death ends the job)";
  }
  return nullptr;
}

/// What the peer-lost handler saw; it also tells the carrier.
struct lost_log {
  cm::mpi_carrier* carrier = nullptr;
  int calls = 0;
  std::uint32_t rank = ~0u;
  errc code = errc::ok;
};

void on_peer_lost(void* context, std::uint32_t rank, const causal::error& why) noexcept {
  auto& log = *static_cast<lost_log*>(context);
  ++log.calls;
  log.rank = rank;
  log.code = why.code();
  // The node sends nothing more to a lost rank; the carrier also frees
  // the pool slots of sends to it that will never complete.
  log.carrier->mark_departed(rank, why);
}

/// Polls until `done()`, or a bounded number of polls (a failing run).
template <class Done>
bool poll_until(node_type& node, Done done) {
  for (std::uint64_t i = 0; i < 400'000'000; ++i) {
    if (done()) return true;
    (void)node.poll();
  }
  return done();
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
    if (rank_int == 0) std::printf("mpi_node_death_test: SKIP: %s\n", why);
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
  cm::mpi_carrier& carrier = *made;
  cm::manual_clock clock;
  cm::node_options options;
  options.session = 11;
  options.heartbeat_interval = std::chrono::milliseconds(10);
  options.heartbeat_timeout = std::chrono::milliseconds(500);
  semaphore victims_own;  // the victim's export 1
  semaphore s;            // rank 0's export 2, followed by rank 1 after the death
  semaphore verdict;      // rank 1's export 3: 1 = failed, 2 = passed
  auto node = std::make_unique<node_type>(carrier, options, clock);
  lost_log lost{&carrier};
  node->set_peer_lost_handler(&on_peer_lost, &lost);

  semaphore* pv = nullptr;
  semaphore* ps = nullptr;
  semaphore* pr = nullptr;
  if (rank == victim) {
    expect(node->export_semaphore(1, victims_own).ok(), "export 1", rank);
  } else {
    pv = node->open_proxy(victim, 1).value_or(nullptr);
    expect(pv != nullptr, "open_proxy(victim, 1)", rank);
  }
  if (rank == 0) {
    expect(node->export_semaphore(2, s).ok(), "export 2", rank);
    pr = node->open_proxy(1, 3).value_or(nullptr);
    expect(pr != nullptr, "open_proxy(1, 3)", rank);
  }
  if (rank == 1) {
    expect(node->export_semaphore(3, verdict).ok(), "export 3", rank);
    ps = node->open_proxy(0, 2).value_or(nullptr);
    expect(ps != nullptr, "open_proxy(0, 2)", rank);
  }
  expect(node->start().ok(), "start", rank);

  // Everyone set up; the survivors hold V = 1 before the victim dies.
  if (rank == victim) {
    expect(victims_own.signal(1).ok(), "signal V = 1", rank);
    expect(poll_until(*node, [&] { return node->subscriber_count(1) == size - 1; }), "both survivors subscribed",
           rank);
    for (int i = 0; i < 10; ++i) (void)node->poll();
  } else {
    expect(poll_until(*node, [&] { return pv != nullptr && pv->value() >= 1; }), "V = 1 arrived", rank);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == victim) {
    std::printf("[rank %u] victim: dying by %s now\n", rank, by_signal ? "SIGKILL" : "_exit(3)");
    std::fflush(stdout);
    if (by_signal) std::raise(SIGKILL);
    _exit(3);
  }

  // A host waiter parked on the dead rank's proxy.
  std::atomic<int> parked_code{-1};
  std::string parked_text;
  std::thread parked([&] {
    const causal::status w = pv->wait_for(5, std::chrono::seconds(120));
    parked_text = w.ok() ? "" : std::string(w.error_value().message());
    parked_code.store(static_cast<int>(w.code()), std::memory_order_release);
  });

  // Step the clock as the file comment says until the victim is lost --
  // and on after that, in every later loop: a survivor that stopped
  // stepping would stop the others' steps too.
  std::uint64_t heard = node->stats().messages_received;
  std::uint64_t steps = 0;
  auto step = [&] {
    const std::uint64_t now_heard = node->stats().messages_received;
    if (now_heard != heard) {
      heard = now_heard;
      clock.advance(options.heartbeat_interval);
      ++steps;
    }
  };
  clock.advance(options.heartbeat_interval);  // the first step starts the exchange
  const bool found = poll_until(*node, [&] {
    if (node->peer(victim).lost || steps > 1000) return node->peer(victim).lost;
    step();
    return false;
  });
  const std::uint64_t steps_to_loss = steps;
  expect(found, "the victim was lost within 1000 steps", rank);
  expect(steps_to_loss >= 45, "not before the timeout (50 steps) was nearly spent", rank);
  const cm::peer_info info = node->peer(victim);
  expect(info.lost_error.code() == errc::timeout, "lost by heartbeat timeout", rank);
  for (std::uint32_t r = 0; r < victim; ++r) {
    expect(!node->peer(r).lost, "no survivor was lost", rank);
  }
  expect(lost.calls == 1 && lost.rank == victim && lost.code == errc::timeout, "the handler ran once, for the victim",
         rank);
  expect(carrier.peer_status(victim).code() == errc::timeout, "the carrier marked the victim departed", rank);

  // Its proxy failed with the node's error; the parked waiter woke with it.
  const auto failure = pv->failure();
  expect(failure.has_value(), "the victim's proxy failed", rank);
  if (failure) {
    expect(failure->code() == errc::timeout, "with errc::timeout", rank);
    expect(std::string_view(failure->message()) == "the rank stopped responding (heartbeat timeout)",
           "with the node's text", rank);
    expect(failure->position() == victim, "naming the victim's rank", rank);
  }
  expect(pv->value() == 1, "what arrived stays", rank);
  parked.join();
  expect(parked_code.load(std::memory_order_acquire) == static_cast<int>(errc::timeout) &&
             parked_text == "the rank stopped responding (heartbeat timeout)",
         "the parked waiter woke with the node's error", rank);

  // The survivors go on: S crosses from rank 0 to rank 1, the verdict back.
  bool all_passed = false;
  if (rank == 0) {
    expect(s.signal(1).ok(), "signal S = 1", rank);
    const bool answered = poll_until(*node, [&] {
      step();
      return pr->value() >= 1;
    });
    expect(answered, "rank 1's verdict arrived", rank);
    all_passed = answered && pr->value() == 2;
  } else {
    expect(poll_until(*node, [&] {
             step();
             return ps->value() >= 1;
           }),
           "S = 1 crossed after the death", rank);
    expect(verdict.signal(failures == 0 ? 2 : 1).ok(), "signal the verdict", rank);
    (void)node->poll();
  }
  node->shutdown();
  expect(carrier.flush(std::chrono::seconds(5)).ok(), "flush: nothing stuck behind the dead rank", rank);
  std::printf("[rank %u] survivor: victim lost after %llu clock steps; %llu messages received\n", rank,
              static_cast<unsigned long long>(steps_to_loss),
              static_cast<unsigned long long>(node->stats().messages_received));
  node.reset();
  if (rank == 0) {
    std::printf("mpi_node_death_test: VERDICT %s\n", all_passed && failures == 0 ? "pass" : "fail");
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
