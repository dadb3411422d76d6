// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// priority_ordered: a compute-slot scan policy that always visits the
// runnable slot of highest priority (process::set_priority), rotating among
// equals.
//
// Model. A sorted indirection table, rebuilt on every activation, would need
// a writer lock or a double buffer on the activation path. This policy reads
// the priority the executor stores next to each slot word instead, so it
// needs no table and no update hook: a scan always reads all N slots (N/8
// cache lines of slot words plus N/16 of metadata, all read-shared) and keeps
// the best. Among equal priorities it starts after the slot it visited last,
// like round_robin, so equals share workers fairly. Cost: a full revolution
// per pick, even when the first slot would do; round_robin stops at the first
// hit.
//
// Thread safety: stateless; the cursor is the worker's own.
// Memory order:  relaxed loads through the view (see scan_policy.hpp).
// Blocking/allocation: never.
// Size:          empty.
// Configuration: none.
// See also:      <causal/scan/scan_policy.hpp>, <causal/scan/round_robin.hpp>.
#pragma once

#include <causal/scan/scan_policy.hpp>

#include <cstddef>
#include <cstdint>

CAUSAL_BEGIN_NAMESPACE

namespace scan {

/// Visits the runnable slot with the highest priority; ties rotate.
struct priority_ordered {
  template <class View>
  [[nodiscard]] std::size_t pick(const View& slots, ext::scan_cursor& cursor) const noexcept {
    constexpr std::size_t n = View::size();
    const std::size_t start = cursor.position & (n - 1);
    std::size_t best = ext::no_slot;
    int best_priority = -1;
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t i = (start + k) & (n - 1);
      if (!slots.runnable(i)) continue;
      const int p = slots.priority(i);
      if (p > best_priority) {  // strict: the first of equals (from the cursor) wins
        best_priority = p;
        best = i;
      }
    }
    if (best != ext::no_slot) cursor.position = static_cast<std::uint32_t>((best + 1) & (n - 1));
    return best;
  }
};

static_assert(scan_policy<priority_ordered>);

}  // namespace scan

CAUSAL_END_NAMESPACE
