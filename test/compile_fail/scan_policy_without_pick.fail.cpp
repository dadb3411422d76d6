// expect-error: scan_policy
// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// A scan policy must provide a noexcept pick(slot_view, scan_cursor&);
// executor traits naming a type without one must not compile, and the
// diagnostic must name the concept it fails.

#include <causal/executor.hpp>

struct no_pick_policy {
  int visits = 0;
};

struct traits_with_bad_policy : causal::default_executor_traits {
  using scan_policy = no_pick_policy;
};

int main() {
  causal::basic_executor<traits_with_bad_policy> ex(causal::executor_options{.worker_count = 0});
  return static_cast<int>(ex.worker_count());
}
