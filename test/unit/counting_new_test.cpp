// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Tests for test/support/counting_new.hpp. The "never allocates" checks in
// the other unit tests read 0 from an allocation_guard; these cases make
// sure that 0 means something: every form of operator new is counted.

#include "catch.hpp"
#include "counting_new.hpp"

#include <cstdint>
#include <memory>
#include <new>
#include <thread>

namespace {

struct alignas(64) over_aligned {
  unsigned char bytes[64];
};

// Keeps the compiler from eliding a new/delete pair (allowed since C++14):
// the pointer goes through a volatile object, so it must really exist.
template <class T>
T* escape(T* p) {
  T* volatile sink = p;
  return sink;
}

}  // namespace

TEST_CASE("counting_new: every form of operator new is counted", "[support][alloc]") {
  causal::test::allocation_guard guard;
  const auto freed_before = causal::test::deallocation_count();

  delete escape(new int(1));
  delete[] escape(new int[4]);
  delete escape(new over_aligned);
  delete[] escape(new over_aligned[2]);
  delete escape(new (std::nothrow) int(2));
  delete[] escape(new (std::nothrow) int[3]);
  delete escape(new (std::nothrow) over_aligned);
  ::operator delete(escape(::operator new(16, std::align_val_t{128})), std::align_val_t{128});

  const auto allocations = guard.allocations();
  const auto thread_allocations = guard.thread_allocations();
  const auto deallocations = causal::test::deallocation_count() - freed_before;
  CHECK(allocations == 8u);
  CHECK(thread_allocations == 8u);
  CHECK(deallocations == 8u);
}

TEST_CASE("counting_new: aligned allocations honour the alignment", "[support][alloc]") {
  auto p = std::make_unique<over_aligned>();
  CHECK(reinterpret_cast<std::uintptr_t>(p.get()) % alignof(over_aligned) == 0);
  void* q = ::operator new(1, std::align_val_t{256});
  CHECK(reinterpret_cast<std::uintptr_t>(q) % 256 == 0);
  ::operator delete(q, std::align_val_t{256});
}

TEST_CASE("counting_new: the thread counter sees only the calling thread",
          "[support][alloc]") {
  causal::test::allocation_guard guard;
  std::thread other([] {
    for (int i = 0; i < 3; ++i) {
      delete escape(new int(i));
    }
  });
  other.join();
  // This thread allocated whatever std::thread needed; the other made three.
  const auto process = guard.allocations();
  const auto mine = guard.thread_allocations();
  CHECK(process - mine == 3u);
}
