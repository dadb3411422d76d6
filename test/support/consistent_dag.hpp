// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// consistent_dag: the dependency half of the random programs the elision
// property tests run (adapters/cpu/test/cpu_elision_property_test.cpp,
// adapters/vulkan/test/vulkan_elision_property_test.cpp).
//
// A program is *consistent* when every execution reaches each semaphore's
// values in increasing order, so that its outcome -- which operations run,
// every semaphore's final value and failure -- is fixed and a model can
// compute it by evaluating the operations in submission order. The rules
// that make it so: a semaphore's values are handed out in increasing order
// as operations are drawn; the operation that signals v > 1 also waits for
// S >= v - 1; and an operation waits only for values earlier operations
// signal (never its own), so the graph is acyclic and nothing deadlocks.
// The tests add what is their own (queues, failures, gates, fixtures).
//
// draw() makes one operation's edges: 0-3 distinct signalled semaphores
// (half the time more than one: the shape that needs "only the last signal
// carries the operation's own entry"), 0-3 waits on values drawn from the
// five most recent of a semaphore, and for each wait the operation whose
// signal reaches that value (the one that signals exactly it). hooks()
// draws the values that slow timepoint callbacks arm on. The order of the
// random draws is part of the contract: a seed replays the same program,
// and bench/RESULTS.md quotes counts of seed 1.
//
// Thread safety: none (a generator, used by one thread).
// See also:      docs/queues.md, "Elision never changes an outcome".
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace causal::test {

/// One (semaphore index, value) of a generated program.
struct program_point {
  int sem = 0;
  std::uint64_t value = 0;
};

/// A timepoint to arm on a program's semaphore, whose callback spins for
/// `spin` pause instructions on the thread that reaches the value.
struct program_hook {
  program_point at;
  unsigned spin = 0;
};

/// The signals and waits of one drawn operation.
struct program_edges {
  std::vector<program_point> signals;
  std::vector<program_point> waits;
  /// Per wait: the operation whose signal reaches that value.
  std::vector<int> producers;
};

class consistent_dag {
 public:
  explicit consistent_dag(int semaphores)
      : next_(static_cast<std::size_t>(semaphores), 1), signaller_(static_cast<std::size_t>(semaphores)) {}

  [[nodiscard]] int semaphores() const noexcept { return static_cast<int>(next_.size()); }

  /// The last value handed out for `sem` (0: none).
  [[nodiscard]] std::uint64_t top(int sem) const noexcept { return next_[static_cast<std::size_t>(sem)] - 1; }

  /// Draws the edges of operation `index` (operations are drawn in order).
  program_edges draw(std::mt19937_64& rng, int index) {
    program_edges e;
    auto waits_on = [&](int s, std::uint64_t v) {
      for (program_point& w : e.waits) {
        if (w.sem == s) {
          w.value = std::max(w.value, v);
          return;
        }
      }
      e.waits.push_back(program_point{s, v});
    };
    const int signal_count = pick(rng, 0, 3) == 0 ? 0 : pick(rng, 0, 1) == 0 ? 1 : pick(rng, 2, 3);
    for (int k = 0; k < signal_count; ++k) {
      const int s = pick(rng, 0, semaphores() - 1);
      if (std::any_of(e.signals.begin(), e.signals.end(), [&](const program_point& x) { return x.sem == s; })) {
        continue;
      }
      const std::uint64_t v = next_[static_cast<std::size_t>(s)]++;
      e.signals.push_back(program_point{s, v});
      signaller_[static_cast<std::size_t>(s)].push_back(index);
      if (v > 1) waits_on(s, v - 1);  // consistent order
    }
    const int wait_count = pick(rng, 0, 3);
    for (int k = 0; k < wait_count; ++k) {
      const int s = pick(rng, 0, semaphores() - 1);
      std::uint64_t limit = top(s);
      // Values this operation signals itself are not waited for.
      for (const program_point& sg : e.signals) {
        if (sg.sem == s) limit = sg.value - 1;
      }
      if (limit == 0) continue;
      const std::uint64_t lo = limit > 4 ? limit - 4 : 1;
      waits_on(s, std::uniform_int_distribution<std::uint64_t>(lo, limit)(rng));
    }
    for (const program_point& w : e.waits) {
      e.producers.push_back(signaller_[static_cast<std::size_t>(w.sem)][w.value - 1]);
    }
    return e;
  }

  /// Draws 0..max_hooks slow callbacks on values handed out so far.
  std::vector<program_hook> hooks(std::mt19937_64& rng, int max_hooks) const {
    std::vector<program_hook> out;
    const int n = pick(rng, 0, max_hooks);
    for (int h = 0; h < n; ++h) {
      const int s = pick(rng, 0, semaphores() - 1);
      if (top(s) == 0) continue;
      out.push_back(program_hook{program_point{s, static_cast<std::uint64_t>(pick(rng, 1, static_cast<int>(top(s))))},
                                 static_cast<unsigned>(pick(rng, 100, 20000))});
    }
    return out;
  }

  static int pick(std::mt19937_64& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

 private:
  std::vector<std::uint64_t> next_;
  std::vector<std::vector<int>> signaller_;  ///< [s][v - 1]: the operation that signals s to v
};

}  // namespace causal::test
