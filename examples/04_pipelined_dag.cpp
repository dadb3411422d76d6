// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// 04_pipelined_dag: the pipelined DAG of docs/invocations.md, five
// invocations submitted up front with no host wait in between:
//
//   fence a --> fn0 --> fence b --+--> fn1 --+
//                                 +--> fn2 --+
//                        (none) ---> fn3 ----+--> fence c
//   fence a --> fn4 -------------------------+
//
// A timeline value has exactly one signaller, so the fence c that four
// invocations advance is the join of four points, one per producer (see
// <causal/fence.hpp>); with a single timeline, fn3 (which waits on nothing)
// would move it past fn0's value and release fn1 early.
//
// The host submits all five invocations, shows that only fn3 can run while
// a is unsignalled, signals a, and waits for c once. Then it does the same
// with stream-ordered allocations around fn0: its transient buffer is
// reserved just before fn0 and returned just after. Every claim printed is
// checked; the program exits 1 if the library disagrees.
//
// Build by hand: c++ -std=c++20 -I include examples/04_pipelined_dag.cpp -pthread
#include <causal/causal.hpp>

#include <array>
#include <atomic>
#include <cstdio>

namespace {

int failures = 0;

void check(bool ok, const char* claim) {
  std::printf("  [%s] %s\n", ok ? "ok" : "FAILED", claim);
  if (!ok) ++failures;
}

}  // namespace

int main() {
  // Timelines first: they outlive the executor, so no worker is still
  // inside a signal of theirs when they go.
  causal::timeline s;
  std::puts("1. the pipelined DAG, submitted up front");
  // [snippet:pipelined_dag]
  causal::timeline user, t0, t1, t2, t3, t4;
  causal::executor ex{causal::executor_options{.worker_count = 2}};
  causal::fence a = user.at(1);
  causal::fence b = t0.at(1);
  causal::fence c = *causal::fence::of({{&t1.semaphore(), 1}, {&t2.semaphore(), 1},
                                        {&t3.semaphore(), 1}, {&t4.semaphore(), 1}});

  std::atomic<int> next{0};
  std::array<std::atomic<int>, 5> position{};
  auto fn = [&](int i) { return [&, i] { position[static_cast<std::size_t>(i)] = next++; }; };

  causal::async_invoke(ex, fn(0), a, b);
  causal::async_invoke(ex, fn(1), b, t1.at(1));
  causal::async_invoke(ex, fn(2), b, t2.at(1));
  auto fn3 = causal::async_invoke(ex, fn(3), causal::fence{}, t3.at(1));
  causal::async_invoke(ex, fn(4), a, t4.at(1));
  // [/snippet]

  check(fn3.wait().ok(), "fn3 (waits on nothing) runs while fence a is unsignalled");
  check(next.load() == 1, "nothing else has run yet");
  (void)a.signal();
  check(c.wait().ok(), "fence c is reached once fn1, fn2, fn3 and fn4 are done");

  std::printf("  order:");
  for (int k = 0; k < 5; ++k) {
    for (int i = 0; i < 5; ++i) {
      if (position[static_cast<std::size_t>(i)] == k) std::printf(" fn%d", i);
    }
  }
  std::printf("\n");
  check(position[0] < position[1] && position[0] < position[2], "fn1 and fn2 ran after fn0");
  check(position[3] == 0, "fn3 ran first");

  std::puts("2. the same fn0 with its transient memory stream-ordered");
  causal::stream_pool pool{ex, std::size_t{512} << 20};
  std::atomic<std::size_t> seen{0};
  // alloca0 -> fn0 -> dealloca0, then fn1 after the dealloca.
  auto buf = causal::stream_alloca(pool, std::size_t{400} << 20, s.at(0), s.at(1));
  causal::async_invoke(ex, [&] { seen = pool.committed(); }, s.at(1), s.at(2));
  causal::stream_dealloca(pool, buf, s.at(2), s.at(3));
  causal::async_invoke(ex, [&] { seen = seen + pool.committed(); }, s.at(3), s.at(4));
  check(s.at(4).wait().ok(), "alloca, fn0, dealloca, fn1 ran in order");
  std::printf("  committed during fn0: %zu MiB; peak %zu MiB\n", seen.load() >> 20,
              pool.peak_committed() >> 20);
  check(seen.load() == (std::size_t{400} << 20), "400 MiB committed during fn0, none after");
  check(pool.committed() == 0, "nothing committed at rest");

  if (failures != 0) {
    std::printf("%d claim(s) failed\n", failures);
    return 1;
  }
  std::puts("all claims hold");
  return 0;
}
