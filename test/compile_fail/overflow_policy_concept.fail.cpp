// expect-error: (satisfaction of .overflow_policy<|does not satisfy .overflow_policy.)
// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// An overflow policy that neither rejects nor ranks entries (it lacks
// `evict_before`) cannot decide what an overflow evicts, so a frontier
// over it must not compile, with a diagnostic that names the concept.

#include <causal/frontier.hpp>

struct forgets_evict_before {
  static constexpr bool rejects = false;
};

int main() {
  causal::basic_frontier<4, causal::default_axis_layout, forgets_evict_before> f;
  return static_cast<int>(f.size());
}
