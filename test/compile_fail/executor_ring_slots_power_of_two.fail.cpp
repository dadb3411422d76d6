// expect-error: Traits::producer_ring_slots must be a power of two
// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// An activation ring finds a slot with a mask and tags each entry with the
// parity of its lap, so a slot count that is not a power of two must be
// refused, naming the member.

#include <causal/executor.hpp>

struct odd_ring : causal::default_executor_traits {
  static constexpr std::uint32_t producer_ring_slots = 48;
};

int main() {
  causal::basic_executor<odd_ring> ex(causal::executor_options{.worker_count = 0});
  return static_cast<int>(ex.worker_count());
}
