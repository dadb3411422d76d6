// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// hogs: see hogs.hpp.

#include "hogs.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace causal::test {
namespace {

std::atomic<bool> hogs_stop{false};
std::vector<std::thread> hog_threads;

void spin() noexcept {
  // relaxed: the flag only ends the loop; nothing is published through it.
  while (!hogs_stop.load(std::memory_order_relaxed)) {
    for (int i = 0; i < 256; ++i) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#else
      std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
    }
  }
}

}  // namespace

int start_hogs() noexcept {
  const char* env = std::getenv("CAUSAL_TEST_HOGS");
  if (env == nullptr || *env == '\0') return 0;
  const long wanted = std::strtol(env, nullptr, 10);
  const int n = wanted < 0 ? 0 : (wanted > 64 ? 64 : static_cast<int>(wanted));
  try {
    hog_threads.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) hog_threads.emplace_back(&spin);
  } catch (...) {
    std::fprintf(stderr, "causal test: could not start every hog thread\n");
  }
  std::fprintf(stderr,
               "causal test: %zu hog threads spin beside the tests (CAUSAL_TEST_HOGS=%s, %u hardware "
               "threads)\n",
               hog_threads.size(), env, std::thread::hardware_concurrency());
  return static_cast<int>(hog_threads.size());
}

void stop_hogs() noexcept {
  hogs_stop.store(true, std::memory_order_relaxed);
  for (std::thread& t : hog_threads) t.join();
  hog_threads.clear();
}

}  // namespace causal::test
