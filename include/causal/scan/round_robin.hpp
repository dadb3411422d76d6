// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// round_robin: the default compute-slot scan policy: visit the next
// runnable slot after the one this worker visited last.
//
// Model. Each worker walks the slot array in index order from its own
// cursor, which the executor starts at worker * (slots / workers) so that
// workers spread over the array. After a visit the cursor moves past the
// visited slot, so every runnable process is visited in turn: simple, fair,
// predictable. A miss costs one revolution: N
// relaxed loads, N/8 cache lines, all read-shared.
//
// Thread safety: stateless; the cursor is the worker's own.
// Memory order:  relaxed loads through the view (see scan_policy.hpp).
// Blocking/allocation: never.
// Size:          empty.
// Configuration: none.
// See also:      <causal/scan/scan_policy.hpp>, <causal/executor.hpp>.
#pragma once

#include <causal/scan/scan_policy.hpp>

#include <cstddef>
#include <cstdint>

CAUSAL_BEGIN_NAMESPACE

namespace scan {

/// Visits runnable slots in index order, continuing after the last visit.
struct round_robin {
  template <class View>
  [[nodiscard]] std::size_t pick(const View& slots, ext::scan_cursor& cursor) const noexcept {
    constexpr std::size_t n = View::size();
    const std::size_t start = cursor.position & (n - 1);
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t i = (start + k) & (n - 1);
      if (slots.runnable(i)) {
        cursor.position = static_cast<std::uint32_t>((i + 1) & (n - 1));
        return i;
      }
    }
    return ext::no_slot;
  }
};

static_assert(scan_policy<round_robin>);

}  // namespace scan

CAUSAL_END_NAMESPACE
