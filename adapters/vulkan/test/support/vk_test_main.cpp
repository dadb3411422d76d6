// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// vk_test_main: the entry point of the Vulkan adapter's test binaries.
// Creates the shared instance and device (with validation), skips the whole
// binary with exit code 77 when this machine cannot run Vulkan, runs the
// Catch2 session, and then fails the binary if the validation layer
// reported any error that a test did not claim (take_validation_errors).

#include "catch_session.hpp"
#include "skip.hpp"
#include "vk_fixture.hpp"
#include "vulkan_layer_tsan.hpp"

#include <cstdio>
#include <string>

int main(int argc, char* argv[]) {
  std::string why;
  auto h = causal_vk_test::harness::create(causal_vk_test::harness_options{}, why);
  if (!h) causal::test::skip_binary(why.c_str());
  std::fprintf(stderr, "vulkan tests on %s (validation %s, synchronization2 %s, external fds %s)\n",
               h->device_name.c_str(), h->validation ? "on, with synchronization validation" : "OFF",
               h->synchronization2 ? "yes" : "no", h->external_semaphore_fd ? "yes" : "no");
  causal_vk_test::global_slot() = h.get();
  int rc = causal::test::run_catch_session(argc, argv);
  causal_vk_test::global_slot() = nullptr;
  h.reset();  // destroying the device reports leaks, if any
  const int errors = causal_vk_test::validation_error_count().load();
  if (errors != 0) {
    std::fprintf(stderr, "FAILED: the validation layer reported %d error(s)\n", errors);
    return rc == 0 ? 1 : rc;
  }
  return rc;
}
