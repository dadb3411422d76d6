// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// consumer_vulkan: what a user of the Vulkan adapter compiles through
// pkg-config `causal-vulkan` and CMake `causal::vulkan`. The packaging
// tests build and link it; run, it asks the loader for the instance
// version (no device needed).

#include <causal/adapters/vulkan/queue.hpp>

#include <cstdio>

int main() {
  const std::uint32_t version = vk::enumerateInstanceVersion();
  std::printf("consumer_vulkan: loader reports Vulkan %u.%u\n", VK_API_VERSION_MAJOR(version),
              VK_API_VERSION_MINOR(version));
  return 0;
}
