// expect-error: SessionBits \+ MachineBits \+ DomainBits \+ OrdinalBits must be 64
// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// An axis layout whose field widths do not add up to 64 bits would leave
// bits unused or overlap fields, so instantiating one must not compile.

#include <causal/axis.hpp>

int main() {
  using short_layout = causal::axis_layout<8, 8, 8, 32>;  // 56 bits
  return static_cast<int>(short_layout::ordinal_bits);
}
