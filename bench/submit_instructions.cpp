// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// A driver for counting instructions per submit under callgrind, where
// wall-clock benchmarks on a shared VM cannot resolve a few per cent (their
// medians move by 10-40 % between runs: bench/RESULTS.md). It submits N
// operations of one shape to a basic_queue over a backend that does
// nothing, so the count is the queue's and the semaphores' own work:
//
//   valgrind --tool=callgrind --callgrind-out-file=a.out submit_instructions SHAPE 20000
//   valgrind --tool=callgrind --callgrind-out-file=b.out submit_instructions SHAPE 10000
//
// and (total(a) - total(b)) / 10000 is the cost of one submit, set-up
// cancelled out. SHAPE is one of
//   no_wait      no wait, no signal
//   reached      one wait on a value already reached (tier 0)
//   same_queue   one wait on a value this queue signals earlier (tier 1)
//   dominated    one wait the queue's knowledge proves (tier 1)
//   device       one wait on a value nobody submitted (tier 2)
//   two_signals  no wait, two signals, both then reached as a device would
// Exit status 0 when every submit took the expected tier, 1 otherwise.

#include <causal/axis.hpp>
#include <causal/frontier.hpp>
#include <causal/queue.hpp>
#include <causal/semaphore.hpp>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>

namespace {

struct null_backend {
  using semaphore_type = causal::semaphore;
  using operation_type = std::uint64_t;
  static constexpr bool waits_before_signal = true;
  std::uint64_t commands = 0;

  causal::status issue_wait(semaphore_type&, std::uint64_t) noexcept {
    ++commands;
    return {};
  }
  causal::status execute(const operation_type&, std::uint64_t) noexcept {
    ++commands;
    return {};
  }
  causal::status issue_signal(semaphore_type&, std::uint64_t) noexcept {
    ++commands;
    return {};
  }
};

using queue_t = causal::basic_queue<causal::frontier, null_backend>;
using wait_t = queue_t::wait_type;
using signal_t = queue_t::signal_type;

causal::axis queue_axis(std::uint64_t n) { return causal::make_axis(0, 0, causal::domain::queue, n).value(); }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: submit_instructions SHAPE N (see the file comment)\n");
    return 2;
  }
  const char* shape = argv[1];
  const std::uint64_t n = std::strtoull(argv[2], nullptr, 10);
  auto producer = std::make_unique<queue_t>(queue_axis(1));
  auto q = std::make_unique<queue_t>(queue_axis(2));
  auto s = std::make_unique<causal::semaphore>();
  auto t = std::make_unique<causal::semaphore>();
  std::array<wait_t, 1> wait{wait_t{s.get(), 1}};
  const std::span<const wait_t> no_waits;
  const std::span<const signal_t> no_signals;
  bool ok = true;
  if (std::strcmp(shape, "no_wait") == 0) {
    for (std::uint64_t i = 0; i < n; ++i) ok = q->submit(no_waits, no_signals, i).ok() && ok;
  } else if (std::strcmp(shape, "two_signals") == 0) {
    for (std::uint64_t i = 1; i <= n; ++i) {
      const std::array<signal_t, 2> both{signal_t{s.get(), i}, signal_t{t.get(), i}};
      ok = q->submit(no_waits, both, i).ok() && ok;
      ok = s->device_signal(i).ok() && ok;
      ok = t->device_signal(i).ok() && ok;
    }
  } else {
    std::uint64_t causal::queue_stats::*tier = nullptr;
    if (std::strcmp(shape, "reached") == 0) {
      ok = s->signal(1, causal::frontier{{queue_axis(5), 4}, {queue_axis(6), 9}}).ok();
      tier = &causal::queue_stats::elided_reached;
    } else if (std::strcmp(shape, "same_queue") == 0) {
      const std::array<signal_t, 1> sig{signal_t{s.get(), 1}};
      ok = q->submit(no_waits, sig, 0).ok();
      tier = &causal::queue_stats::elided_same_queue;
    } else if (std::strcmp(shape, "dominated") == 0) {
      const std::array<signal_t, 1> sig{signal_t{s.get(), 1}};
      ok = producer->submit(no_waits, sig, 0).ok();
      q->learn(causal::frontier{{queue_axis(1), 1}});
      tier = &causal::queue_stats::elided_dominated;
    } else if (std::strcmp(shape, "device") == 0) {
      tier = &causal::queue_stats::device_waits;
    } else {
      std::fprintf(stderr, "submit_instructions: unknown shape '%s'\n", shape);
      return 2;
    }
    for (std::uint64_t i = 0; i < n; ++i) ok = q->submit(wait, no_signals, i).ok() && ok;
    ok = ok && q->stats().*tier == n;
  }
  std::printf("%s x %llu: %s\n", shape, static_cast<unsigned long long>(n), ok ? "ok" : "WRONG TIER");
  return ok ? 0 : 1;
}
