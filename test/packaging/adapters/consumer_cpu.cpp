// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// consumer_cpu: what a user of the CPU adapter compiles, through every way
// in the README (the drop-in command line, pkg-config `causal-cpu`, CMake
// `causal::cpu`, a Meson wrap). Two host operations on one CPU queue, the
// second signalling a semaphore the main thread waits for; exits non-zero
// on a wrong answer.

#include <causal/adapters/cpu/queue.hpp>
#include <causal/causal.hpp>

#include <cstdio>

int main() {
  causal::executor ex{causal::executor_options{.worker_count = 1}};
  causal::axis_allocator axes;
  const auto axis = axes.allocate(0, causal::domain::queue);
  if (!axis) {
    std::fprintf(stderr, "consumer_cpu: %s\n", axis.error_value().message().data());
    return 1;
  }
  causal::cpu::queue q(*axis, ex);
  causal::semaphore first;
  causal::semaphore done;
  int steps = 0;
  const auto a = q.host({}, {{&first, 1}}, [&](const causal::host_call_context&) noexcept { steps += 1; });
  const auto b =
      q.host({{&first, 1}}, {{&done, 1}}, [&](const causal::host_call_context&) noexcept { steps *= 10; });
  if (!a || !b) {
    std::fprintf(stderr, "consumer_cpu: submit failed\n");
    return 1;
  }
  if (!done.wait(1)) {
    std::fprintf(stderr, "consumer_cpu: wait failed\n");
    return 1;
  }
  if (steps != 10) {
    std::fprintf(stderr, "consumer_cpu: operations ran out of order (%d)\n", steps);
    return 1;
  }
  std::puts("consumer_cpu: ok");
  return 0;
}
