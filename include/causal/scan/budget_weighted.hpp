// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// budget_weighted: a compute-slot scan policy that visits each runnable
// process in proportion to its wake budget.
//
// Model. A scheduler could repeat high-budget entries in an indirection
// table; this policy gets the same proportions without a table: a worker
// stays on the slot it visited last for up to `budget` visits in a row
// (counted in the cursor's `credit`), then moves on round-robin. A process
// with budget 8 is therefore visited about four times as often as one with
// budget 2 when both stay runnable. A hit costs one load while credit lasts;
// a move costs what round_robin does.
//
// Thread safety: stateless; the cursor is the worker's own.
// Memory order:  relaxed loads through the view (see scan_policy.hpp).
// Blocking/allocation: never.
// Size:          empty.
// Configuration: none (the budget is process::set_wake_budget).
// See also:      <causal/scan/scan_policy.hpp>, <causal/scan/round_robin.hpp>.
#pragma once

#include <causal/scan/scan_policy.hpp>

#include <cstddef>
#include <cstdint>

CAUSAL_BEGIN_NAMESPACE

namespace scan {

/// Stays on a runnable slot for `budget` consecutive visits, then moves on.
struct budget_weighted {
  template <class View>
  [[nodiscard]] std::size_t pick(const View& slots, ext::scan_cursor& cursor) const noexcept {
    constexpr std::size_t n = View::size();
    // `position` is the slot being visited now; `credit` how many visits
    // it has had in this run.
    const std::size_t current = cursor.position & (n - 1);
    if (cursor.credit != 0 && cursor.credit < slots.budget(current) && slots.runnable(current)) {
      ++cursor.credit;
      return current;
    }
    const std::size_t start = cursor.credit == 0 ? current : current + 1;
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t i = (start + k) & (n - 1);
      if (slots.runnable(i)) {
        cursor.position = static_cast<std::uint32_t>(i);
        cursor.credit = 1;
        return i;
      }
    }
    cursor.credit = 0;
    return ext::no_slot;
  }
};

static_assert(scan_policy<budget_weighted>);

}  // namespace scan

CAUSAL_END_NAMESPACE
