// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// destruction_orders: the loop the lifetime tests share (docs/lifetimes.md):
// every order in which a test can destroy its N objects, and a readable
// name for one order in a failure message. Each test keeps its own objects,
// its model of the documented rules and its child-process runner.
//
// Thread safety: none needed (test-thread only).
#pragma once

#include "watchdog.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>

namespace causal_test {

/// An order of destruction: order[step] is the object destroyed at `step`.
template <std::size_t N>
using destruction_order = std::array<int, N>;

/// "first, second, ..." for `order`, by the objects' names.
template <std::size_t N>
std::string describe_order(const destruction_order<N>& order, const std::array<const char*, N>& names) {
  std::string shown;
  for (int o : order) {
    if (!shown.empty()) shown += ", ";
    shown += names[static_cast<std::size_t>(o)];
  }
  return shown;
}

/// Calls `body(order)` for every order of objects 0..N-1 in which the
/// last `fixed_tail` objects stay last (in their own order); returns how
/// many orders it visited ((N - fixed_tail)!). Each order counts as
/// progress for the test watchdog: hundreds of child processes on a loaded
/// machine take longer than its stall limit, each one does not.
template <std::size_t N, class Body>
int for_each_destruction_order(std::size_t fixed_tail, Body&& body) {
  destruction_order<N> order{};
  for (std::size_t i = 0; i < N; ++i) order[i] = static_cast<int>(i);
  int visited = 0;
  do {
    body(static_cast<const destruction_order<N>&>(order));
    causal::test::note_progress();
    ++visited;
  } while (std::next_permutation(order.begin(), order.end() - static_cast<std::ptrdiff_t>(fixed_tail)));
  return visited;
}

}  // namespace causal_test
