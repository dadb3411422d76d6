// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// The queue conformance suite (test/conformance/queue_conformance.hpp) on
// the Vulkan adapter: vkQueueSubmit2 and the legacy path with host polls,
// and vkQueueSubmit2 with the waiter thread, all on one shared vk::Queue,
// under the validation layer (vk_test_main.cpp fails the binary on any
// validation error).

#include "vk_fixture.hpp"

#define CAUSAL_CONFORMANCE_FIXTURES                                      \
  causal_vk_test::vk_submit2_polled, causal_vk_test::vk_legacy_polled, \
      causal_vk_test::vk_submit2_waiter
#include "queue_conformance.hpp"
