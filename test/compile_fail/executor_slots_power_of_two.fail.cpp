// expect-error: Traits::compute_slots must be a power of two
// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// The scan policies walk the compute slots with a mask, so a slot count
// that is not a power of two must be refused, naming the member.

#include <causal/executor.hpp>

struct odd_slots : causal::default_executor_traits {
  static constexpr std::size_t compute_slots = 48;
};

int main() {
  causal::basic_executor<odd_slots> ex(causal::executor_options{.worker_count = 0});
  return static_cast<int>(ex.worker_count());
}
