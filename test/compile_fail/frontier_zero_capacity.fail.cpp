// expect-error: Capacity must be at least 1
// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// A frontier that can hold no entry could only ever be empty or tainted,
// so a Capacity of 0 must not compile.

#include <causal/frontier.hpp>

int main() {
  causal::basic_frontier<0> f;
  return static_cast<int>(f.size());
}
