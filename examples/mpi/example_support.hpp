// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// example_support: what the MPI examples share -- a byte window every rank
// can read and write with one-sided MPI (the examples' data path; the
// ordering comes from causal semaphores, never from MPI), a claim checker
// whose verdict every rank agrees on, and a wait for an upstream rank's
// plan to arrive at a proxy.
//
// Data path. Each rank exposes a window of bytes (MPI_Win_allocate) and
// keeps a passive-target epoch open on all ranks for the window's life
// (MPI_Win_lock_all), so an operation running on any executor worker can
// MPI_Put / MPI_Get and complete it with MPI_Win_flush, with no
// synchronisation of its own. Nothing in MPI orders a reader after the
// writer: if a semaphore wait were missing or wrong, the reader would see
// zeros (the window starts zeroed) and the examples' checks would fail.
// MPI calls then come from executor workers, the node's progress thread
// and the main thread at once: MPI_THREAD_MULTIPLE.
//
// Not part of the library: examples only.
#pragma once

#include <causal/result.hpp>

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace example {

/// Ends the whole job at once: a rank that gave up must not leave the
/// others waiting in a barrier until the test's timeout.
[[noreturn]] inline void abort_job(int rank, const char* why) {
  std::printf("  [rank %d] cannot go on: %s\n", rank, why);
  std::fflush(stdout);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

/// One MPI window of `bytes` bytes per rank, zeroed, in a passive-target
/// epoch from create() to destruction (both collective).
class byte_window {
 public:
  explicit byte_window(std::size_t bytes) {
    MPI_Win_allocate(static_cast<MPI_Aint>(bytes), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base_, &win_);
    std::memset(base_, 0, bytes);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win_);
    // Every rank zeroed its part before anyone reads it.
    MPI_Barrier(MPI_COMM_WORLD);
  }
  byte_window(const byte_window&) = delete;
  byte_window& operator=(const byte_window&) = delete;
  ~byte_window() {
    MPI_Win_unlock_all(win_);
    MPI_Win_free(&win_);
  }

  /// Writes `size` bytes at `offset` of `target`'s window and completes
  /// the write (visible to any later get).
  causal::status put(int target, std::size_t offset, const void* data, std::size_t size) noexcept {
    int rc = MPI_Put(data, static_cast<int>(size), MPI_BYTE, target, static_cast<MPI_Aint>(offset),
                     static_cast<int>(size), MPI_BYTE, win_);
    if (rc == MPI_SUCCESS) rc = MPI_Win_flush(target, win_);
    if (rc != MPI_SUCCESS) return causal::error{causal::errc::device_lost, "MPI_Put failed", static_cast<std::uint64_t>(rc)};
    return {};
  }

  /// Reads `size` bytes at `offset` of `target`'s window.
  causal::status get(int target, std::size_t offset, void* data, std::size_t size) noexcept {
    int rc = MPI_Get(data, static_cast<int>(size), MPI_BYTE, target, static_cast<MPI_Aint>(offset),
                     static_cast<int>(size), MPI_BYTE, win_);
    if (rc == MPI_SUCCESS) rc = MPI_Win_flush(target, win_);
    if (rc != MPI_SUCCESS) return causal::error{causal::errc::device_lost, "MPI_Get failed", static_cast<std::uint64_t>(rc)};
    return {};
  }

  template <class T>
  causal::status put_value(int target, std::size_t offset, const T& value) noexcept {
    return put(target, offset, &value, sizeof(T));
  }
  template <class T>
  T get_value(int target, std::size_t offset, causal::status& s) noexcept {
    T value{};
    if (causal::status got = get(target, offset, &value, sizeof(T)); !got) s = got;
    return value;
  }

 private:
  void* base_ = nullptr;
  MPI_Win win_ = MPI_WIN_NULL;
};

/// Prints claims tagged with the rank and counts the failed ones.
class claims {
 public:
  explicit claims(int rank) : rank_(rank) {}

  void expect(bool ok, const char* claim) {
    std::printf("  [rank %d] %s %s\n", rank_, ok ? "ok  " : "FAIL", claim);
    std::fflush(stdout);
    if (!ok) ++failures_;
  }

  /// True when no claim failed on any rank (collective).
  [[nodiscard]] bool all_hold() const {
    int mine = failures_;
    int total = 0;
    MPI_Allreduce(&mine, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    return total == 0;
  }

 private:
  int rank_;
  int failures_ = 0;
};

/// True once `proxy` knows what will signal value `v`: a SUBMITTED record
/// of exactly v (or v already reached) has arrived from the owner.
template <class Semaphore>
bool knows_plan(const Semaphore& proxy, std::uint64_t v) {
  const auto found = proxy.frontier_at(v);
  return found && (found->reached || found->signal_value == v);
}

/// Waits (politely: yielding) until `proxy` knows the plan for every
/// value up to `last`; false if the proxy failed first. SUBMITTED records
/// arrive in order, so knowing `last` means knowing all below it.
template <class Semaphore>
bool wait_for_plan(const Semaphore& proxy, std::uint64_t last) {
  while (!knows_plan(proxy, last)) {
    if (proxy.failure()) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace example
