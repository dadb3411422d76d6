// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// pool_bench: one block lifetime (acquire, U uses, release) in
// causal::basic_block_pool on its fast path, next to the binary-event way of
// tracking the same reuse, in the same binary.
//
// Why it matters. A stream-ordered allocator decides on every allocation
// whether a freed block may be reused. With death frontiers
// (<causal/pool.hpp>, docs/buffers.md) the free stores the freeing queue's
// knowledge once (O(1) per lifetime, however many operations used the
// block) and the reuse check is one frontier lookup of the producer entry.
// The binary-event way records one event per use and, on reuse, queries
// every one of them: O(uses) per lifetime. A weight tensor read by hundreds
// of kernels is the case that hurts.
//
// What runs. `acquire_release/uses:U/<impl>`, U = 1, 4, 16, 64, 256:
//
//   ours       q.acquire(size) on the knowledge path (the freeing queue
//              reuses its block: it covers the producer entry), U uses that
//              cost the pool nothing, release (stores q's 5-entry knowledge
//              and the producer entry).
//   ours_peer  the same, but acquired by another queue R whose knowledge
//              covers the freeing queue F's producer entry and released by
//              F (the cross-queue fast path).
//   events     the binary-event pool: acquire queries every event recorded
//              in the block's last lifetime (all complete) and recycles
//              them into an event pool; each of the U uses takes an event
//              from the pool, records it (timeline, value) and appends it
//              to the block's std::vector; release marks the block free.
//
// Both pools hold the same 8 free blocks of 64..512 KiB (kept apart by live
// separator blocks, so the frontier pool never merges them) and pick the
// same one: best fit, stopping at an exact fit. Iteration i asks for size
// (i mod 8 + 1) * 64 KiB. Events are the lower bound of the real thing: an
// event is a (timeline pointer, value) pair and a query is one acquire
// load; a real cudaEventRecord/cudaEventQuery is a driver call costing
// hundreds of nanoseconds, so the real gap is far wider. In steady state
// neither side allocates (the vectors keep their capacity).
//
// Honesty. Sizes come from a volatile seed; each iteration passes the
// block offset to benchmark::DoNotOptimize. Before timing, main() replays
// 64 lifetimes on both pools and checks that they hand out the same offsets
// on the expected paths. After each timed loop the benchmark checks that
// every acquire succeeded on the expected path (ours: the knowledge path
// only, no device waits; events: every event found complete) and fails the
// run otherwise. Times are per lifetime, amortised over Google Benchmark's
// batches.
//
// What to look for. `ours` and `ours_peer` flat in U (tens of ns: a scan of
// up to 8 descriptors plus a 200-byte copy on release); `events` growing
// linearly with U, crossing `ours` at a handful of uses.
//
// Run (release build, from the repository root):
//   meson setup build-bench -Dbenchmarks=enabled --buildtype=release
//   meson compile -C build-bench
//   build-bench/bench/pool_bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
// or without meson, one line:
//   g++ -std=c++20 -O2 -DNDEBUG -Iinclude bench/pool_bench.cpp -lbenchmark -lpthread
// See also: bench/README.md, <causal/pool.hpp>, docs/buffers.md.

#include <causal/axis.hpp>
#include <causal/frontier.hpp>
#include <causal/pool.hpp>
#include <causal/queue.hpp>
#include <causal/semaphore.hpp>

#include <benchmark/benchmark.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace {

constexpr std::size_t kib = 1024;
constexpr std::size_t block_count = 8;
constexpr std::size_t unit = 64 * kib;
constexpr std::size_t separator = 4 * kib;

volatile std::size_t g_seed = 0;  // 0 at run time; keeps sizes unfoldable

std::size_t size_of_iteration(std::size_t i) { return ((i + g_seed) % block_count + 1) * unit; }

causal::axis queue_axis(std::uint64_t n) {
  return causal::make_axis(0, 0, causal::domain::queue, n).value();
}

//===-- ours ----------------------------------------------------------------===//

using queue_t = causal::recording_queue<>;
using pool_t = causal::basic_block_pool<queue_t>;

constexpr std::size_t quota = block_count * (block_count + 1) / 2 * unit + block_count * separator;

/// A frontier pool with the 8 free blocks, freed by `f` at epoch 1 with a
/// 5-entry knowledge; `r` covers f's producer entry.
struct ours_setup {
  queue_t f{queue_axis(1)};
  queue_t r{queue_axis(2)};
  queue_t sep{queue_axis(3)};
  pool_t pool{quota, 256};
  std::array<pool_t::block, block_count> blocks{};
  bool ok = true;

  ours_setup() {
    f.learn(causal::frontier{{queue_axis(10), 41}, {queue_axis(11), 7}, {queue_axis(12), 99},
                             {queue_axis(13), 3}});
    ok = ok && f.submit({}, {}, 0).ok();
    r.learn(f.knowledge());
    for (std::size_t i = 0; i < block_count; ++i) {
      auto b = pool.acquire(f, (i + 1) * unit);
      auto s = pool.acquire(sep, separator);  // stays live: keeps neighbours apart
      ok = ok && b.ok() && s.ok();
      if (b) blocks[i] = *b;
    }
    for (const auto& b : blocks) ok = ok && pool.release(b, f).ok();
    ok = ok && pool.free_count() == block_count;
  }
};

//===-- the binary-event way ------------------------------------------------===//

/// A recorded binary event: complete once its timeline reaches `value`.
struct event {
  const std::atomic<std::uint64_t>* timeline = nullptr;
  std::uint64_t value = 0;
  [[nodiscard]] bool query() const noexcept {
    return timeline->load(std::memory_order_acquire) >= value;
  }
};

/// Recycles events, as a CUDA/HIP runtime's event pool does.
class event_pool {
 public:
  event* get() {
    if (free_.empty()) {
      all_.push_back(std::make_unique<event>());
      return all_.back().get();
    }
    event* e = free_.back();
    free_.pop_back();
    return e;
  }
  void put(event* e) { free_.push_back(e); }

 private:
  std::vector<std::unique_ptr<event>> all_;
  std::vector<event*> free_;
};

/// The same block table, with a per-use event list per block.
class event_block_pool {
 public:
  struct block {
    std::size_t offset = 0;
    std::size_t size = 0;
    bool live = false;
    std::vector<event*> uses;  // one per use since the last reuse
  };

  explicit event_block_pool(event_pool& events) : events_(&events) {}

  void add_free(std::size_t offset, std::size_t size) {
    blocks_.push_back(block{offset, size, false, {}});
  }

  /// Best fit among free blocks whose every event has completed; recycles
  /// those events. Returns the block index, or -1.
  int acquire(std::size_t need) {
    int best = -1;
    for (std::size_t i = 0; i < blocks_.size(); ++i) {
      const block& b = blocks_[i];
      if (b.live || b.size < need || (best >= 0 && b.size >= blocks_[best].size)) continue;
      bool complete = true;
      for (const event* e : b.uses) complete = complete && e->query();
      if (!complete) continue;
      best = static_cast<int>(i);
      if (b.size == need) break;
    }
    if (best < 0) return -1;
    block& b = blocks_[best];
    for (event* e : b.uses) events_->put(e);
    b.uses.clear();
    b.live = true;
    return best;
  }

  void record_use(int index, const std::atomic<std::uint64_t>& timeline, std::uint64_t value) {
    event* e = events_->get();
    e->timeline = &timeline;
    e->value = value;
    blocks_[index].uses.push_back(e);
  }

  void release(int index) { blocks_[index].live = false; }
  [[nodiscard]] const block& at(int index) const { return blocks_[index]; }

 private:
  event_pool* events_;
  std::vector<block> blocks_;
};

/// The device timeline every event is recorded on; all work has completed.
std::atomic<std::uint64_t> g_device_timeline{std::numeric_limits<std::uint64_t>::max() / 2};

struct events_setup {
  event_pool events;
  event_block_pool pool{events};
  std::uint64_t next_value = 1;

  explicit events_setup(std::size_t uses) {
    std::size_t offset = 0;
    for (std::size_t i = 0; i < block_count; ++i) {
      pool.add_free(offset, (i + 1) * unit);
      offset += (i + 1) * unit + separator;
    }
    // One warm lifetime per block, so each holds `uses` events and the
    // vectors and the event pool have their steady-state capacity.
    for (std::size_t i = 0; i < block_count; ++i) {
      const int b = pool.acquire((i + 1) * unit);
      for (std::size_t u = 0; u < uses; ++u) pool.record_use(b, g_device_timeline, next_value++);
      pool.release(b);
    }
  }
};

//===-- benchmarks ----------------------------------------------------------===//

void bm_ours(benchmark::State& state, bool peer, std::size_t uses) {
  ours_setup s;
  if (!s.ok) {
    state.SkipWithError("pool_bench: setup failed");
    return;
  }
  queue_t& acquirer = peer ? s.r : s.f;
  const std::size_t device_events = acquirer.backend().total_events();
  std::size_t i = 0;
  for (auto _ : state) {
    auto b = s.pool.acquire(acquirer, size_of_iteration(i++));
    benchmark::DoNotOptimize(b);
    // The U uses are operations on queues; the pool records nothing for them.
    if (b) (void)s.pool.release(*b, s.f);
  }
  const causal::pool_stats st = s.pool.stats();
  if (st.failures != 0 || st.reused_by_knowledge != i || st.waits_issued != 0 ||
      acquirer.backend().total_events() != device_events) {
    state.SkipWithError("pool_bench: an acquire left the knowledge fast path");
  }
  state.counters["uses"] = static_cast<double>(uses);
}

void bm_events(benchmark::State& state, std::size_t uses) {
  events_setup s(uses);
  std::size_t i = 0, failed = 0;
  for (auto _ : state) {
    const int b = s.pool.acquire(size_of_iteration(i++));
    if (b < 0) {
      ++failed;
      continue;
    }
    benchmark::DoNotOptimize(s.pool.at(b).offset);
    for (std::size_t u = 0; u < uses; ++u) s.pool.record_use(b, g_device_timeline, s.next_value++);
    s.pool.release(b);
  }
  if (failed != 0) state.SkipWithError("pool_bench: an event-pool acquire failed");
  state.counters["uses"] = static_cast<double>(uses);
}

/// Replays 64 lifetimes on both pools: same offsets, expected paths.
bool check_same_choices() {
  ours_setup ours;
  events_setup events(3);
  bool ok = ours.ok;
  for (std::size_t i = 0; i < 64 && ok; ++i) {
    const std::size_t size = size_of_iteration(i);
    auto a = ours.pool.acquire(ours.r, size);
    const int b = events.pool.acquire(size);
    ok = a.ok() && b >= 0 && a->path == causal::pool_path::knowledge &&
         a->offset == events.pool.at(b).offset && a->size == events.pool.at(b).size &&
         a->size == size;
    if (a) ok = ok && ours.pool.release(*a, ours.f).ok();
    if (b >= 0) {
      for (int u = 0; u < 3; ++u) events.pool.record_use(b, g_device_timeline, events.next_value++);
      events.pool.release(b);
    }
  }
  return ok && ours.pool.stats().waits_issued == 0 && ours.r.backend().total_events() == 0;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (!check_same_choices()) {
    std::fprintf(stderr, "pool_bench: the two pools disagree; not timing anything\n");
    return 1;
  }
  for (const std::size_t uses : {1, 4, 16, 64, 256}) {
    const std::string prefix = "acquire_release/uses:" + std::to_string(uses) + "/";
    benchmark::RegisterBenchmark((prefix + "ours").c_str(), bm_ours, false, uses);
    benchmark::RegisterBenchmark((prefix + "ours_peer").c_str(), bm_ours, true, uses);
    benchmark::RegisterBenchmark((prefix + "events").c_str(), bm_events, uses);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
