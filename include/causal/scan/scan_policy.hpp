// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// scan_policy: the concept a compute-slot scan policy satisfies, and the
// read-only slot view and per-worker cursor it works with (for policy
// authors: namespace causal::ext).
//
// Model. The executor keeps multi-worker ("compute") processes in a fixed
// array of slots. A worker that finds no immediate work asks the policy
// which slot to try: `pick(view, cursor)` returns a slot index, or
// ext::no_slot when it sees nothing runnable. The executor then pins that
// slot and re-validates it, so a policy may work from a stale view; if the
// slot turned out not to be runnable the executor calls pick() again (at
// most `view.size()` times per scan). The order of visits *is* the
// scheduling policy (docs/executor.md):
//
//   scan::round_robin       next runnable slot after the last one visited
//   scan::priority_ordered  the runnable slot of highest priority
//   scan::budget_weighted   stays on a slot for `budget` visits in a row
//
// Scanning only reads: the view exposes relaxed loads of the executor's
// slot words (pointer | flags) and slot metadata (wake budget, priority),
// never process memory, so a scan can never touch a freed process and
// scanners never contend with one another. The cursor belongs to one
// worker; a policy may keep whatever it needs in it.
//
// Writing a policy: a default-constructible type with
//
//   template <class View>
//   std::size_t pick(const View& slots, causal::ext::scan_cursor& c) const noexcept;
//
// See examples/03_custom_scan_policy.cpp.
//
// Thread safety: pick() runs concurrently on every worker, each with its
//                own cursor; policies are immutable while the executor runs.
// Memory order:  the view's loads are relaxed; the executor re-reads the
//                chosen slot with seq_cst after pinning it.
// Blocking/allocation: pick() must never block or allocate (noexcept).
// Size:          scan_cursor is 16 bytes; stateless policies are empty.
// Configuration: Traits::scan_policy, Traits::compute_slots.
// See also:      <causal/executor.hpp>, <causal/scan/round_robin.hpp>,
//                docs/executor.md.
#pragma once

#include <causal/config.hpp>

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <type_traits>

CAUSAL_BEGIN_NAMESPACE

namespace detail::slot_bits {
/// Low bits of a slot word; the rest is the process pointer (processes are
/// cache-line aligned, so the low six bits of their address are zero).
inline constexpr std::uint64_t sleeping = 1;  ///< asleep: skip until woken
inline constexpr std::uint64_t retiring = 2;  ///< completed: waiting for drainers to leave
inline constexpr std::uint64_t claiming = 3;  ///< being filled in by a claimer
inline constexpr std::uint64_t flag_mask = 3;
}  // namespace detail::slot_bits

namespace ext {

/// Returned by a policy's pick() when it sees nothing runnable.
inline constexpr std::size_t no_slot = ~std::size_t{0};

/// A worker's private scan state. `worker` and `workers` are set by the
/// executor (worker index and the number of indices); `position` and
/// `credit` are the policy's to use. The executor starts `position` at
/// worker * (slots / workers), so that workers spread over the array, and
/// `credit` at 0.
struct scan_cursor {
  std::uint32_t worker = 0;
  std::uint32_t workers = 1;
  std::uint32_t position = 0;
  std::uint32_t credit = 0;
};

/// Returns the metadata word of a slot: wake budget (low 24 bits, at least
/// 1) and priority (high 8 bits).
[[nodiscard]] constexpr std::uint32_t make_slot_meta(std::uint32_t budget,
                                                     std::uint8_t priority) noexcept {
  const std::uint32_t b = budget == 0 ? 1 : (budget > 0xff'ffffu ? 0xff'ffffu : budget);
  return b | (std::uint32_t{priority} << 24);
}

/// Returns the slot word for a process at `address` (non-null, 64-byte
/// aligned), asleep or not. For tests and benchmarks that build views.
[[nodiscard]] inline std::uint64_t make_slot_word(const void* address, bool asleep = false) noexcept {
  return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(address)) |
         (asleep ? detail::slot_bits::sleeping : 0);
}

/// A read-only view of N compute slots: the scanners' whole world.
template <std::size_t N, template <class> class Atomic = std::atomic>
class basic_slot_view {
 public:
  constexpr basic_slot_view(const Atomic<std::uint64_t>* words,
                            const Atomic<std::uint32_t>* meta) noexcept
      : words_(words), meta_(meta) {}

  /// Returns the number of slots (a power of two).
  [[nodiscard]] static constexpr std::size_t size() noexcept { return N; }

  /// Returns true when slot `i` holds a process that is neither asleep nor
  /// completing: a worker may drain it.
  [[nodiscard]] bool runnable(std::size_t i) const noexcept {
    const std::uint64_t w = words_[i].load(std::memory_order_relaxed);
    return w != 0 && (w & detail::slot_bits::flag_mask) == 0;
  }
  /// Returns true when slot `i` holds a process in any state.
  [[nodiscard]] bool occupied(std::size_t i) const noexcept {
    return words_[i].load(std::memory_order_relaxed) != 0;
  }
  /// Returns the wake budget of slot `i` (meaningful while occupied).
  [[nodiscard]] std::uint32_t budget(std::size_t i) const noexcept {
    return meta_[i].load(std::memory_order_relaxed) & 0xff'ffffu;
  }
  /// Returns the priority of slot `i` (meaningful while occupied).
  [[nodiscard]] std::uint8_t priority(std::size_t i) const noexcept {
    return static_cast<std::uint8_t>(meta_[i].load(std::memory_order_relaxed) >> 24);
  }

 private:
  const Atomic<std::uint64_t>* words_;
  const Atomic<std::uint32_t>* meta_;
};

/// The view type policies are checked against.
template <std::size_t N>
using slot_view = basic_slot_view<N, std::atomic>;

}  // namespace ext

/// A compute-slot scan policy: default-constructible, with a noexcept
/// `pick(view, cursor)` returning a slot index or ext::no_slot.
template <class S>
concept scan_policy =
    std::is_nothrow_default_constructible_v<S> &&
    requires(const S& s, const ext::slot_view<64>& view, ext::scan_cursor& cursor) {
      { s.pick(view, cursor) } noexcept -> std::same_as<std::size_t>;
    };

CAUSAL_END_NAMESPACE
