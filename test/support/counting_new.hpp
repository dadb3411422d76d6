// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// counting_new: counters behind a replaced global operator new, so tests can
// prove that a hot path never allocates.
//
// counting_new.cpp replaces every global operator new and delete (plain,
// array, sized, aligned, nothrow) and counts each successful allocation. It
// is linked (whole) into every unit-test binary by test/meson.build; tests
// only include this header. Typical use:
//
//   causal::test::allocation_guard guard;
//   for (int i = 0; i < 1000; ++i) a.merge(b);
//   REQUIRE(guard.allocations() == 0);
//
// Read the guard after the loop: Catch2's assertion macros may allocate.
//
// Thread safety: every function may be called from any thread. The process
//                counter sees all threads; the thread counter only the caller.
// Memory order:  the counters are relaxed: they order nothing, and a reader
//                that must see another thread's allocations joins it first.
// Blocking/allocation: none of these functions blocks or allocates.
// Size:          not applicable.
// See also:      test/support/counting_new.cpp.
#pragma once

#include <cstdint>

namespace causal::test {

/// Returns how many allocations (any operator new) the process has made.
[[nodiscard]] std::uint64_t allocation_count() noexcept;

/// Returns how many deallocations (any operator delete of a non-null
/// pointer) the process has made.
[[nodiscard]] std::uint64_t deallocation_count() noexcept;

/// Returns how many allocations the calling thread has made.
[[nodiscard]] std::uint64_t thread_allocation_count() noexcept;

/// Records the allocation counters at construction; its members return how
/// many allocations happened since.
class allocation_guard {
 public:
  allocation_guard() noexcept
      : process_start_(allocation_count()), thread_start_(thread_allocation_count()) {}

  allocation_guard(const allocation_guard&) = delete;
  allocation_guard& operator=(const allocation_guard&) = delete;

  /// Returns the allocations made by any thread since construction.
  [[nodiscard]] std::uint64_t allocations() const noexcept {
    return allocation_count() - process_start_;
  }

  /// Returns the allocations made by the constructing thread since
  /// construction. Precondition: called on the constructing thread.
  [[nodiscard]] std::uint64_t thread_allocations() const noexcept {
    return thread_allocation_count() - thread_start_;
  }

 private:
  std::uint64_t process_start_;
  std::uint64_t thread_start_;
};

}  // namespace causal::test
