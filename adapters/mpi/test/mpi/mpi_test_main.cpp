// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// mpi_test_main: the main() of the MPI adapter's Catch2 binaries, run as
// `mpiexec -n N <binary>`: every rank runs the same test cases in the same
// order (each test case is collective: it creates carriers, which duplicate
// MPI_COMM_WORLD), and the binary fails on every rank when any rank failed.
//
// Output: rank 0 reports to stdout as usual; every other rank writes its
// report to a temporary file and prints it (under a "rank r" banner) only
// when it failed, so a passing run reads like a one-process run. The
// verdict is MPI_Allreduce(sum) of the ranks' failure counts, so a failure
// seen only on rank 3 fails all ranks and mpiexec's exit status. Fewer than
// two ranks: exit 77 (skipped), every test needs a peer.
//
// Thread safety: main thread only; MPI at MPI_THREAD_SERIALIZED (the
//                watchdog's thread never calls MPI).
// See also:      test/support/catch_session.hpp, adapters/mpi/README.md.

#include "catch_session.hpp"
#include "skip.hpp"

#include <causal/adapters/mpi/mpi_session.hpp>

#include <mpi.h>

#include <cstdio>
#include <string>
#include <utility>
#include <unistd.h>
#include <vector>

int main(int argc, char* argv[]) {
  auto session = causal::mpi::mpi_session::start(&argc, &argv, MPI_THREAD_SERIALIZED);
  if (!session) {
    std::fprintf(stderr, "mpi_test_main: %s (position %llu)\n",
                 session.error_value().message().data(),
                 static_cast<unsigned long long>(session.error_value().position()));
    return 1;
  }
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) {
    {
      // exit() skips local destructors: finalize here, by ending the session.
      const causal::mpi::mpi_session done = std::move(*session);
    }
    causal::test::skip_binary("the MPI tests need at least two ranks (mpiexec -n 2 or more)");
  }

  std::vector<char*> args(argv, argv + argc);
  std::string report_path;
  std::string out_flag = "-o";
  if (rank != 0) {
    char path[] = "/tmp/causal-mpi-test-XXXXXX";
    const int fd = mkstemp(path);
    if (fd >= 0) {
      close(fd);
      report_path = path;
      args.push_back(out_flag.data());
      args.push_back(report_path.data());
    }
  }

  const int failed = causal::test::run_catch_session(static_cast<int>(args.size()), args.data());
  int failed_everywhere = 0;
  MPI_Allreduce(&failed, &failed_everywhere, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

  if (!report_path.empty()) {
    if (failed != 0) {
      if (std::FILE* report = std::fopen(report_path.c_str(), "r")) {
        std::fprintf(stderr, "======== rank %d of %d: its Catch2 report ========\n", rank, size);
        char line[1024];
        while (std::fgets(line, sizeof line, report) != nullptr) {
          std::fputs(line, stderr);
        }
        std::fclose(report);
      }
    }
    std::remove(report_path.c_str());
  }
  if (rank == 0 && failed_everywhere != 0) {
    std::fprintf(stderr, "mpi_test_main: %d failed test case(s) summed over the %d ranks\n",
                 failed_everywhere, size);
  }
  return failed_everywhere == 0 ? 0 : 1;
}
