// expect-error: (satisfaction of .compatible_frontiers<|.compatible_frontiers<.*>. evaluated to false)
// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// The same raw axis means different (session, machine, domain, ordinal)
// under different layouts, so comparing frontiers of two layouts must not
// compile.

#include <causal/frontier.hpp>

int main() {
  using wide_machines = causal::axis_layout<0, 16, 8, 40>;
  const causal::frontier knowledge;
  const causal::basic_frontier<12, wide_machines> requirement;
  return causal::dominates(knowledge, requirement) ? 0 : 1;
}
