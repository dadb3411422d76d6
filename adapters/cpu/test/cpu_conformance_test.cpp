// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// The queue conformance suite (test/conformance/queue_conformance.hpp) on
// the CPU adapter, the reference backend, over 1, 2 and 4 workers.

#include "cpu_fixture.hpp"

#define CAUSAL_CONFORMANCE_FIXTURES                                               \
  causal_cpu_test::cpu_fixture<1>, causal_cpu_test::cpu_fixture<2>,               \
      causal_cpu_test::cpu_fixture<4>
#include "queue_conformance.hpp"
