// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// counting_new: the replaced global operator new/delete behind
// counting_new.hpp. Exactly one copy must be linked into a binary; the unit
// tests get it through `link_whole` in test/meson.build, so the replacement
// is in effect even in a binary that never calls the counter functions.
//
// Every replaceable form is defined, so no allocation escapes the count
// through a form we forgot: plain, array, nothrow, aligned (C++17) and the
// sized deletes. Memory comes from std::malloc / std::aligned_alloc and goes
// back through std::free, which also keeps sanitizers' malloc interceptors
// in the loop.

#include "counting_new.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace {

// Relaxed: counters only, nothing is published through them (see header).
std::atomic<std::uint64_t> g_allocations{0};
std::atomic<std::uint64_t> g_deallocations{0};
// Constant-initialised, so touching it never allocates or runs a constructor.
thread_local std::uint64_t t_allocations = 0;

void count_allocation() noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  ++t_allocations;
}

void* allocate(std::size_t size) {
  if (size == 0) {
    size = 1;  // operator new must return a distinct non-null pointer
  }
  for (;;) {
    if (void* p = std::malloc(size)) {
      count_allocation();
      return p;
    }
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) {
      throw std::bad_alloc();
    }
    handler();
  }
}

void* allocate_aligned(std::size_t size, std::align_val_t align) {
  const auto alignment = static_cast<std::size_t>(align);
  // aligned_alloc wants a size that is a non-zero multiple of the alignment.
  std::size_t rounded = size == 0 ? alignment : (size + alignment - 1) / alignment * alignment;
  if (rounded < size) {
    throw std::bad_alloc();  // the round-up overflowed
  }
  for (;;) {
    if (void* p = std::aligned_alloc(alignment, rounded)) {
      count_allocation();
      return p;
    }
    std::new_handler handler = std::get_new_handler();
    if (handler == nullptr) {
      throw std::bad_alloc();
    }
    handler();
  }
}

void deallocate(void* p) noexcept {
  if (p != nullptr) {
    g_deallocations.fetch_add(1, std::memory_order_relaxed);
    std::free(p);
  }
}

}  // namespace

namespace causal::test {

std::uint64_t allocation_count() noexcept {
  return g_allocations.load(std::memory_order_relaxed);
}

std::uint64_t deallocation_count() noexcept {
  return g_deallocations.load(std::memory_order_relaxed);
}

std::uint64_t thread_allocation_count() noexcept {
  return t_allocations;
}

}  // namespace causal::test

//===-- replaceable allocation functions ------------------------------------===//

void* operator new(std::size_t size) { return allocate(size); }
void* operator new[](std::size_t size) { return allocate(size); }
void* operator new(std::size_t size, std::align_val_t align) { return allocate_aligned(size, align); }
void* operator new[](std::size_t size, std::align_val_t align) { return allocate_aligned(size, align); }

void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return allocate(size);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return allocate(size);
  } catch (...) {
    return nullptr;
  }
}
void* operator new(std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  try {
    return allocate_aligned(size, align);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, std::align_val_t align, const std::nothrow_t&) noexcept {
  try {
    return allocate_aligned(size, align);
  } catch (...) {
    return nullptr;
  }
}

//===-- replaceable deallocation functions ----------------------------------===//

void operator delete(void* p) noexcept { deallocate(p); }
void operator delete[](void* p) noexcept { deallocate(p); }
void operator delete(void* p, std::size_t) noexcept { deallocate(p); }
void operator delete[](void* p, std::size_t) noexcept { deallocate(p); }
void operator delete(void* p, std::align_val_t) noexcept { deallocate(p); }
void operator delete[](void* p, std::align_val_t) noexcept { deallocate(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { deallocate(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { deallocate(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { deallocate(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { deallocate(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { deallocate(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { deallocate(p); }
