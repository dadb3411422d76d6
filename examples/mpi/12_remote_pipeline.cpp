// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// 12_remote_pipeline: a three-stage pipeline over three MPI ranks, every
// rank's whole part submitted up front, and a wait the last rank never
// issues because a frontier that crossed two ranks already proves it.
//
//   rank 0                 rank 1                       rank 2
//   produce i              transform i                  combine i
//   x[i] = f0(i)  --A=i--> waits A=i (proxy)            waits B=i (proxy)
//   signals A=i            y[i] = f1(x[i])  --B=i-->     and A=i (proxy): ELIDED,
//   (exported)             signals B=i (exported)        B's frontier holds rank 0's
//                                                       entry for item i
//                                                       z[i] = f2(x[i], y[i])
//
// Data moves by one-sided MPI (example_support.hpp): rank 1 reads x[i]
// from rank 0's window, rank 2 reads x[i] and y[i] from ranks 0 and 1.
// MPI orders none of it; only the semaphores do. Rank 2 reads rank 0's
// output after a wait on A that it never issued: B=i's frontier, which rank
// 1's queue recorded after it imported A=i's, names rank 0's operation i,
// so the queue elides the wait (tier 1, dominated) -- and the value it
// reads is still right.
//
// Up front. Rank 0 submits its 32 operations behind a local gate; each
// rank submits its 32 once it has heard its upstream's plan (the node's
// SUBMITTED records, which carry frontiers and producers); then the ranks
// meet at a barrier and rank 0 opens the gate. Nothing has completed on any
// rank before the last submission.
//
// Printed: remote waits issued vs elided against the per-edge baseline
// (one remote wait per cross-rank edge, what waiting on every edge
// separately would issue), and rank 2's knowledge, which contains rank 0's
// axis. Exit status 1 if a check fails on any rank.
//
// Run: mpiexec -n 3 ./12_remote_pipeline   (Open MPI as root: --oversubscribe
// and OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
#include "example_support.hpp"

#include <causal/adapters/cpu/queue.hpp>
#include <causal/adapters/mpi/mpi_carrier.hpp>
#include <causal/adapters/mpi/mpi_session.hpp>
#include <causal/adapters/mpi/node.hpp>
#include <causal/adapters/mpi/progress.hpp>
#include <causal/causal.hpp>

#include <mpi.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

constexpr std::uint64_t items = 32;
constexpr std::uint64_t export_a = 1;  // rank 0's output timeline
constexpr std::uint64_t export_b = 2;  // rank 1's output timeline

using node_type = causal::mpi::node<causal::mpi::mpi_carrier>;
using queue = causal::cpu::queue;

// Each stage is non-zero for any input (the windows start zeroed, so a
// read before its write gives a wrong result).
std::uint64_t f0(std::uint64_t i) { return i * 0x9e3779b97f4a7c15ull + 17; }
std::uint64_t f1(std::uint64_t x) { return ((x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ull) | 1; }
std::uint64_t f2(std::uint64_t x, std::uint64_t y) { return x * 31 + (y ^ (y >> 31)); }

std::size_t slot(std::uint64_t i) { return static_cast<std::size_t>(i) * sizeof(std::uint64_t); }

/// Counters one rank contributes to the summary.
struct tally {
  std::uint64_t remote_waits = 0;    // waits on proxies a submission carried
  std::uint64_t remote_issued = 0;   // of which the queue issued
  std::uint64_t remote_elided = 0;   // of which it elided
};

}  // namespace

int main(int argc, char** argv) {
  auto session = causal::mpi::mpi_session::start(&argc, &argv, MPI_THREAD_MULTIPLE);
  if (!session) {
    std::printf("MPI_THREAD_MULTIPLE is needed: %s\n", session.error_value().message().data());
    return 1;
  }
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 3) {
    if (rank == 0) std::printf("run with mpiexec -n 3 (got %d ranks)\n", size);
    return 1;
  }
  example::claims check(rank);
  bool ok = false;
  {
    example::byte_window window((items + 1) * sizeof(std::uint64_t));
    auto carrier = causal::mpi::mpi_carrier::create();
    if (!carrier) example::abort_job(rank, "the MPI carrier could not be created");

    // [snippet:remote_pipeline_setup]
    node_type node(*carrier);
    const causal::axis my_axis = node.allocate_axis(causal::domain::queue).value();
    causal::semaphore out;  // A on rank 0, B on rank 1
    if (rank == 0) (void)node.export_semaphore(export_a, out);
    if (rank == 1) (void)node.export_semaphore(export_b, out);
    causal::semaphore* proxy_a = rank != 0 ? node.open_proxy(0, export_a).value() : nullptr;
    causal::semaphore* proxy_b = rank == 2 ? node.open_proxy(1, export_b).value() : nullptr;
    (void)node.start();
    causal::mpi::node_thread<node_type> progress(node);
    // [/snippet]

    // Every rank's queue axis, to show whose progress rank 2 knows.
    std::array<std::uint64_t, 3> axes{};
    const std::uint64_t mine = my_axis.raw();
    MPI_Allgather(&mine, 1, MPI_UINT64_T, axes.data(), 1, MPI_UINT64_T, MPI_COMM_WORLD);

    causal::executor ex{causal::executor_options{.worker_count = 1}};
    queue q(my_axis, ex);
    causal::semaphore gate;  // rank 0 only: opened after the last submission
    std::vector<std::uint64_t> combined(items + 1, 0);
    example::byte_window* w = &window;
    std::uint64_t* results = combined.data();
    std::uint64_t submit_errors = 0;
    tally t;

    // Ranks 1 and 2 submit once their upstream's plan for every item has
    // arrived: then each wait can use the frontier and producer of the
    // signal it waits for.
    const bool planned = rank == 0 || (rank == 1 && example::wait_for_plan(*proxy_a, items)) ||
                         (rank == 2 && example::wait_for_plan(*proxy_b, items) &&
                          example::wait_for_plan(*proxy_a, items));
    if (!planned) example::abort_job(rank, "a proxy failed before its plan arrived");

    for (std::uint64_t i = 1; i <= items; ++i) {
      const causal::queue_stats before = q.stats();
      causal::result<causal::submission> r = causal::submission{};
      if (rank == 0) {
        // Produce x[i] into this rank's window; signal A = i. The first
        // operation waits for the gate; the rest follow it (FIFO).
        auto produce = [w, i](const causal::host_call_context&) noexcept {
          return w->put_value(0, slot(i), f0(i));
        };
        r = i == 1 ? q.host({{&gate, 1}}, {{&out, i}}, produce) : q.host({}, {{&out, i}}, produce);
      } else if (rank == 1) {
        // Wait for A = i (remote), read x[i] from rank 0, write y[i].
        r = q.host({{proxy_a, i}}, {{&out, i}}, [w, i](const causal::host_call_context&) noexcept {
          causal::status s;
          const auto x = w->get_value<std::uint64_t>(0, slot(i), s);
          if (s) s = w->put_value(1, slot(i), f1(x));
          return s;
        });
      } else {
        // [snippet:remote_pipeline_elided]
        // Wait for B = i and A = i, both remote. B = i's frontier names
        // rank 0's operation i, so the wait on A is elided -- and x[i],
        // rank 0's output, is still read after it was written.
        r = q.host({{proxy_b, i}, {proxy_a, i}}, {},
                   [w, i, results](const causal::host_call_context&) noexcept {
                     causal::status s;
                     const auto y = w->get_value<std::uint64_t>(1, slot(i), s);
                     const auto x = w->get_value<std::uint64_t>(0, slot(i), s);
                     results[i] = f2(x, y);
                     return s;
                   });
        // [/snippet]
      }
      if (!r) ++submit_errors;
      const causal::queue_stats after = q.stats();
      if (rank != 0) {
        t.remote_waits += rank == 1 ? 1 : 2;
        t.remote_issued += after.device_waits - before.device_waits;
        t.remote_elided += after.waits_elided() - before.waits_elided();
      }
    }

    check.expect(submit_errors == 0, "every operation was submitted");
    const std::uint64_t completed_before_gate = q.completed_epoch();
    MPI_Barrier(MPI_COMM_WORLD);  // every rank has submitted everything
    if (rank == 0) (void)gate.signal(1);
    const causal::status idle = q.wait_idle();
    check.expect(idle.ok(), "the queue ran every operation");
    check.expect(completed_before_gate == 0, "nothing completed before the last rank submitted");

    // The summary: rank 0 gathers the tallies.
    std::array<std::uint64_t, 3> mine_t{t.remote_waits, t.remote_issued, t.remote_elided};
    std::array<std::uint64_t, 9> all_t{};
    MPI_Gather(mine_t.data(), 3, MPI_UINT64_T, all_t.data(), 3, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (rank == 2) {
      bool values_ok = true;
      for (std::uint64_t i = 1; i <= items; ++i) values_ok = values_ok && combined[i] == f2(f0(i), f1(f0(i)));
      check.expect(values_ok, "every combined value matches the host reference");
      const causal::axis rank0_axis = causal::axis(axes[0]);
      std::printf("  [rank 2] knowledge %s\n", causal::to_string(q.knowledge()).c_str());
      check.expect(q.knowledge().epoch_of(rank0_axis) == items,
                   "rank 2 knows rank 0's last operation, though it waited on rank 1 only");
      check.expect(q.stats().waits_elided() >= items, "rank 2 elided its wait on A for every item");
    }
    if (rank == 0) {
      std::uint64_t per_edge = 0, issued = 0, elided = 0;
      for (int r = 0; r < 3; ++r) {
        per_edge += all_t[static_cast<std::size_t>(r) * 3];
        issued += all_t[static_cast<std::size_t>(r) * 3 + 1];
        elided += all_t[static_cast<std::size_t>(r) * 3 + 2];
      }
      std::printf("remote waits: %llu issued, %llu elided; per-edge baseline %llu\n",
                  static_cast<unsigned long long>(issued), static_cast<unsigned long long>(elided),
                  static_cast<unsigned long long>(per_edge));
      check.expect(issued < per_edge, "strictly fewer remote waits than waiting on every edge");
      check.expect(issued + elided == per_edge, "every remote wait was issued or elided");
    }

    // Stop: everyone is idle, so no proxy is needed any more.
    MPI_Barrier(MPI_COMM_WORLD);
    progress.stop();
    (void)carrier->flush();
    MPI_Barrier(MPI_COMM_WORLD);
    ok = check.all_hold();
  }
  if (rank == 0) std::printf("%s\n", ok ? "all checks passed" : "SOME CHECKS FAILED");
  return ok ? 0 : 1;
}
