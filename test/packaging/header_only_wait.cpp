// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// header_only_wait: proves the park word needs no compiled library. The
// header_only_link test builds this file with nothing but
//   c++ -std=c++20 -I<src>/include header_only_wait.cpp -pthread
// (explicitly without -lboost_atomic) and runs it. If park_word ever relied
// on a non-native boost::atomic wait (e.g. a 64-bit one, which goes through
// libboost_atomic's lock pool), this program would fail to link.

#include <causal/ext/park_word.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>

int main() {
  causal::ext::park_word word{0};
  std::uint32_t seen = 0;

  std::thread sleeper([&] { seen = word.wait(0); });
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  word.store(1, std::memory_order_release);
  word.notify_all();
  sleeper.join();

  if (seen != 1 || word.load() != 1) {
    std::fprintf(stderr, "header_only_wait: woke with %u, expected 1\n", static_cast<unsigned>(seen));
    return 1;
  }
  std::printf("header_only_wait: woken with %u (native park word: %s)\n", static_cast<unsigned>(seen),
              causal::ext::park_word_is_native ? "yes" : "no");
  return 0;
}
