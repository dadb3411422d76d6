// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// inline_ring: a FIFO ring buffer that starts in N inline slots and moves to
// heap storage of any size when its owner grows it (private to the library).
//
// The semaphore keeps its submitted, unreached signal records in one (kept
// sorted by value, with insert()), and a queue its host-held submissions:
// both must accept a pipeline of any depth, yet allocate nothing in the
// steady state. Growth is the owner's decision: it allocates new storage
// (outside any lock it holds) and hands it to adopt(), which moves the
// elements over; heap storage is kept until the ring is destroyed, so a
// ring that once held n elements never allocates again below n.
//
// Thread safety: none; the owner guards it (a lock, or one thread).
// Memory order:  not applicable.
// Blocking/allocation: never allocates by itself; adopt() takes storage the
//                owner allocated with new[] and the destructor delete[]s it.
// Size:          N * sizeof(T) plus four words.
// See also:      <causal/semaphore.hpp>, <causal/queue.hpp>.
#pragma once

#include <causal/config.hpp>

#include <array>
#include <cstddef>
#include <type_traits>

CAUSAL_BEGIN_NAMESPACE

namespace detail {

/// A ring of T, N slots inline, more once grown; see the file comment.
/// T must be default-constructible and copy-assignable.
template <class T, std::size_t N>
class inline_ring {
  static_assert(N >= 1, "inline_ring: at least one inline slot");

 public:
  inline_ring() noexcept(std::is_nothrow_default_constructible_v<T>) = default;
  inline_ring(const inline_ring&) = delete;
  inline_ring& operator=(const inline_ring&) = delete;
  ~inline_ring() { delete[] heap_; }

  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] bool empty() const noexcept { return count_ == 0; }
  [[nodiscard]] bool full() const noexcept { return count_ == capacity_; }

  /// The i-th element from the front (i < size()).
  [[nodiscard]] T& operator[](std::size_t i) noexcept { return slots()[wrap(head_ + i)]; }
  [[nodiscard]] const T& operator[](std::size_t i) const noexcept {
    return slots()[wrap(head_ + i)];
  }
  [[nodiscard]] T& front() noexcept { return (*this)[0]; }

  /// Appends a default slot and returns it. Precondition: !full().
  T& push_back() noexcept {
    ++count_;
    return (*this)[count_ - 1];
  }

  /// Inserts `value` before index `at` (<= size()), moving the later
  /// elements back by one. Precondition: !full().
  void insert(std::size_t at, const T& value) noexcept { insert_slot(at) = value; }

  /// Makes room before index `at` (<= size()) as insert() does and returns
  /// the new slot, with stale contents for the caller to fill in place.
  /// Precondition: !full().
  [[nodiscard]] T& insert_slot(std::size_t at) noexcept {
    for (std::size_t k = count_; k > at; --k) (*this)[k] = (*this)[k - 1];
    ++count_;
    return (*this)[at];
  }

  /// Removes the element at index `at` (< size()), moving the later
  /// elements forward by one.
  void erase(std::size_t at) noexcept {
    for (std::size_t k = at + 1; k < count_; ++k) (*this)[k - 1] = (*this)[k];
    --count_;
    if (count_ == 0) head_ = 0;
  }

  /// Drops the first `n` elements (n <= size()).
  void pop_front(std::size_t n = 1) noexcept {
    head_ = wrap(head_ + n);
    count_ -= n;
    if (count_ == 0) head_ = 0;
  }

  /// Moves the elements into `storage` (`new_capacity` > size() slots,
  /// allocated with new[]) and returns the heap storage it replaces, or
  /// nullptr; the owner delete[]s that (outside its lock).
  [[nodiscard]] T* adopt(T* storage, std::size_t new_capacity) noexcept {
    for (std::size_t i = 0; i < count_; ++i) storage[i] = (*this)[i];
    T* old = heap_;
    heap_ = storage;
    capacity_ = new_capacity;
    head_ = 0;
    return old;
  }

 private:
  [[nodiscard]] T* slots() noexcept { return heap_ != nullptr ? heap_ : inline_.data(); }
  [[nodiscard]] const T* slots() const noexcept {
    return heap_ != nullptr ? heap_ : inline_.data();
  }
  // head_ and i are both below capacity_, so one subtraction wraps.
  [[nodiscard]] std::size_t wrap(std::size_t i) const noexcept {
    return i >= capacity_ ? i - capacity_ : i;
  }

  T* heap_ = nullptr;
  std::size_t capacity_ = N;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
  std::array<T, N> inline_{};
};

}  // namespace detail

CAUSAL_END_NAMESPACE
