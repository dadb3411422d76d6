// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// consumer_mpi: what a user of the MPI adapter compiles through pkg-config
// `causal-mpi` and CMake `causal::mpi`. The packaging tests only build and
// link it (running it needs mpiexec); its main() starts MPI, builds a node
// over the MPI carrier and checks the job has this rank in it.

#include <causal/adapters/mpi/mpi_carrier.hpp>
#include <causal/adapters/mpi/mpi_session.hpp>
#include <causal/adapters/mpi/node.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  auto session = causal::mpi::mpi_session::start(&argc, &argv, MPI_THREAD_SERIALIZED);
  if (!session) {
    std::fprintf(stderr, "consumer_mpi: %s\n", session.error_value().message().data());
    return 1;
  }
  auto carrier = causal::mpi::mpi_carrier::create();
  if (!carrier) {
    std::fprintf(stderr, "consumer_mpi: %s\n", carrier.error_value().message().data());
    return 1;
  }
  causal::mpi::node<causal::mpi::mpi_carrier> node(*carrier);
  std::printf("consumer_mpi: rank %u of %u\n", node.rank(), carrier->size());
  return node.rank() < carrier->size() ? 0 : 1;
}
