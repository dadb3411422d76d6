// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// mpi_session: initializes MPI with a required thread level for the life
// of a scope and finalizes it at the end -- for examples, tests and small
// programs that own MPI; libraries inside a bigger MPI program do not use it.
//
// Model. `mpi_session::start(&argc, &argv, required)` calls MPI_Init_thread
// asking for `required` and checks the level MPI provides: a lower one is an
// error (MPI is finalized again before returning it). The session finalizes
// MPI in its destructor, so carriers and every other MPI object must be
// destroyed before it. A carrier needs MPI_THREAD_FUNNELED when only the
// main thread drives it, MPI_THREAD_SERIALIZED when other threads do, one
// at a time (see <causal/adapters/mpi/mpi_carrier.hpp>). MPI_Finalize waits
// for the other ranks: with Open MPI 4.1 a rank blocks in it until every
// rank has called it.
//
// Thread safety: start and the destructor on the thread that will be MPI's
//                main thread; one session per process (MPI cannot be
//                initialized twice).
// Memory order:  not applicable.
// Blocking/allocation: start and the destructor block in MPI_Init_thread and
//                MPI_Finalize (collective); nothing else is allocated.
// Size:          two ints.
// Configuration: the required thread level (default MPI_THREAD_SERIALIZED).
// See also:      <causal/adapters/mpi/mpi_carrier.hpp>, adapters/mpi/README.md.
#pragma once

#include <causal/config.hpp>
#include <causal/result.hpp>

#include <mpi.h>

#include <cstdint>

CAUSAL_BEGIN_NAMESPACE

namespace mpi {

/// Owns MPI's initialization: MPI_Init_thread in start(), MPI_Finalize in
/// the destructor. Movable, not copyable.
class mpi_session {
 public:
  /// Initializes MPI asking for `required`. Fails with failed_precondition
  /// when MPI is already initialized or finalized, or when it provides a
  /// lower level than `required` (position: the level provided; MPI is
  /// finalized again); with device_lost when MPI_Init_thread fails (if the
  /// default error handler lets it return). `argc`/`argv` may be null.
  [[nodiscard]] static result<mpi_session> start(int* argc, char*** argv,
                                                 int required = MPI_THREAD_SERIALIZED) noexcept {
    int initialized = 0;
    int finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized != 0 || finalized != 0) {
      return error(errc::failed_precondition,
                   "mpi_session::start: MPI was initialized before (MPI allows it once)");
    }
    int provided = MPI_THREAD_SINGLE;
    const int rc = MPI_Init_thread(argc, argv, required, &provided);
    if (rc != MPI_SUCCESS) {
      return error(errc::device_lost,
                   "mpi_session::start: MPI_Init_thread failed (position: MPI error code)",
                   static_cast<std::uint64_t>(static_cast<std::int64_t>(rc)));
    }
    if (provided < required) {
      MPI_Finalize();
      return error(errc::failed_precondition,
                   "mpi_session::start: MPI provides a lower thread level than required "
                   "(position: the level provided, MPI_THREAD_*)",
                   static_cast<std::uint64_t>(provided));
    }
    return mpi_session(provided);
  }

  mpi_session(mpi_session&& other) noexcept : provided_(other.provided_), owns_(other.owns_) {
    other.owns_ = false;
  }
  mpi_session& operator=(mpi_session&& other) noexcept {
    if (this != &other) {
      finish();
      provided_ = other.provided_;
      owns_ = other.owns_;
      other.owns_ = false;
    }
    return *this;
  }
  mpi_session(const mpi_session&) = delete;
  mpi_session& operator=(const mpi_session&) = delete;

  /// Finalizes MPI (collective: waits for the other ranks).
  ~mpi_session() { finish(); }

  /// Returns the thread level MPI provided (MPI_THREAD_*).
  [[nodiscard]] int thread_level() const noexcept { return provided_; }

 private:
  explicit mpi_session(int provided) noexcept : provided_(provided), owns_(true) {}

  void finish() noexcept {
    if (owns_) {
      owns_ = false;
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (finalized == 0) {
        MPI_Finalize();
      }
    }
  }

  int provided_ = MPI_THREAD_SINGLE;
  bool owns_ = false;
};

}  // namespace mpi

CAUSAL_END_NAMESPACE
