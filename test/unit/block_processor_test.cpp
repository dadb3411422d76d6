// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Tests for <causal/block_processor.hpp>: recording (regions, barriers,
// bad input, capacity), then running on an executor. The main case runs
// a buffer of 10 000-tile dispatches (and narrow regions between them) over
// 1, 2 and 4 workers, shared (compute slot, CAS claims) and exclusive
// (budget 1: listed, no atomics), for three traits variants (default; one
// tile per claim and per drain; wide claims and quanta): every tile runs
// exactly once, with the tile fields its dispatch recorded, and regions
// never overlap -- every tile of region r+1 starts after every tile of
// region r has finished, checked twice: through a global sequence clock
// (last end of r < first start of r+1) and through happens-before (a tile
// of r+1 reads region r's finished count with acquire and must see all of
// it). Then: exclusivity when the budget is 1 or the executor has no
// threads, several workers sharing a wide region, the wake budget
// following the current region, drain quanta when drained by hand,
// cancel/fail mid-run (stops within a quantum, dependents inherit the
// error), rearm, scopes, and the promise that a running processor
// allocates nothing.
//
// Catch2 assertions are only made on the test's own thread; kernels
// record what they see in atomics that the test reads after waiting.

#include <causal/block_processor.hpp>
#include <causal/executor.hpp>
#include <causal/process.hpp>
#include <causal/scope.hpp>

#include "catch.hpp"
#include "eventually.hpp"
#include "string_makers.hpp"
#include "counting_new.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

using causal::basic_block_processor;
using causal::basic_executor;
using causal::block_options;
using causal::block_processor;
using causal::command_buffer;
using causal::drain_result;
using causal::errc;
using causal::error;
using causal::executor_options;
using causal::process;
using causal::status;
using causal::tile;
using causal::worker_context;

using namespace std::chrono_literals;

using causal::test::eventually;

executor_options workers(std::uint32_t n) { return executor_options{.worker_count = n}; }

void nop_kernel(void*, tile) noexcept {}

/// One tile per claim and per drain: a CAS and a region hand-off per tile.
struct tiny_traits : causal::default_block_processor_traits {
  static constexpr std::uint32_t max_claim = 1;
  static constexpr std::uint32_t drain_quantum = 1;
};
/// Claims as wide as guided scheduling allows; long drains.
struct wide_traits : causal::default_block_processor_traits {
  static constexpr std::uint32_t max_claim = 1024;
  static constexpr std::uint32_t drain_quantum = 4096;
};

/// Completion and release bookkeeping for a processor under test.
struct outcome {
  std::atomic<int> completions{0};
  std::atomic<int> releases{0};
  std::atomic<int> code{-1};

  template <class P>
  void attach(P& bp) {
    bp.set_user_data(this);
    bp.set_completion([](process& self, status s) noexcept {
      auto* o = static_cast<outcome*>(self.user_data());
      o->code.store(static_cast<int>(s.code()), std::memory_order_relaxed);
      o->completions.fetch_add(1, std::memory_order_acq_rel);
    });
    bp.set_release([](process& self) noexcept {
      static_cast<outcome*>(self.user_data())->releases.fetch_add(1, std::memory_order_acq_rel);
    });
  }
  bool wait_released(int n) {
    return eventually([&] { return releases.load(std::memory_order_acquire) >= n; });
  }
};

//===-- the region/exactly-once recorder ---------------------------------===//

struct recorder;

/// A dispatch under test: its own per-tile run counts.
struct probe {
  recorder* rec = nullptr;
  std::uint32_t region = 0;
  std::uint32_t tiles = 0;
  std::uint32_t size = 1;
  std::unique_ptr<std::atomic<int>[]> runs;
};

struct recorder {
  static constexpr std::uint64_t none = std::numeric_limits<std::uint64_t>::max();
  std::vector<std::uint32_t> region_tiles;
  std::unique_ptr<std::atomic<std::uint32_t>[]> region_done;
  std::unique_ptr<std::atomic<std::uint64_t>[]> first_start;
  std::unique_ptr<std::atomic<std::uint64_t>[]> last_end;
  std::atomic<std::uint64_t> clock{0};
  std::atomic<int> violations{0};
  std::atomic<std::uint32_t> worker_mask{0};
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  std::uint32_t index_bound = 1;
  std::vector<std::unique_ptr<probe>> probes;

  void reset() {
    const std::size_t n = region_tiles.size();
    region_done = std::make_unique<std::atomic<std::uint32_t>[]>(n);
    first_start = std::make_unique<std::atomic<std::uint64_t>[]>(n);
    last_end = std::make_unique<std::atomic<std::uint64_t>[]>(n);
    for (std::size_t i = 0; i < n; ++i) {
      region_done[i].store(0);
      first_start[i].store(none);
      last_end[i].store(0);
    }
    for (auto& p : probes) {
      for (std::uint32_t t = 0; t < p->tiles; ++t) p->runs[t].store(0);
    }
    violations.store(0);
    overlaps.store(0);
    worker_mask.store(0);
  }

  /// Records a dispatch of `tiles` tiles in the current region.
  void dispatch(command_buffer& cb, std::uint32_t tiles, std::uint32_t size = 1) {
    if (region_tiles.empty() || closed) {
      region_tiles.push_back(0);
      closed = false;
    }
    auto p = std::make_unique<probe>();
    p->rec = this;
    p->region = static_cast<std::uint32_t>(region_tiles.size() - 1);
    p->tiles = tiles;
    p->size = size;
    p->runs = std::make_unique<std::atomic<int>[]>(tiles);
    region_tiles.back() += tiles;
    REQUIRE(cb.dispatch(&kernel, p.get(), tiles, size));
    probes.push_back(std::move(p));
  }
  void barrier(command_buffer& cb) {
    cb.barrier();
    closed = true;
  }

  static void atomic_min(std::atomic<std::uint64_t>& a, std::uint64_t v) noexcept {
    std::uint64_t cur = a.load(std::memory_order_relaxed);
    while (v < cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
    }
  }
  static void atomic_max(std::atomic<std::uint64_t>& a, std::uint64_t v) noexcept {
    std::uint64_t cur = a.load(std::memory_order_relaxed);
    while (v > cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
    }
  }

  static void kernel(void* data, tile t) noexcept {
    auto* p = static_cast<probe*>(data);
    recorder& r = *p->rec;
    if (r.inside.fetch_add(1, std::memory_order_relaxed) != 0) {
      r.overlaps.fetch_add(1, std::memory_order_relaxed);
    }
    // Happens-before: every tile of every earlier region has finished.
    for (std::uint32_t q = 0; q < p->region; ++q) {
      if (r.region_done[q].load(std::memory_order_acquire) != r.region_tiles[q]) {
        r.violations.fetch_add(1, std::memory_order_relaxed);
      }
    }
    if (t.count != p->tiles || t.size != p->size || t.index >= p->tiles ||
        t.worker >= r.index_bound) {
      r.violations.fetch_add(1, std::memory_order_relaxed);
    }
    r.worker_mask.fetch_or(1u << (t.worker % 32), std::memory_order_relaxed);
    atomic_min(r.first_start[p->region], r.clock.fetch_add(1, std::memory_order_seq_cst));
    if (t.index < p->tiles) p->runs[t.index].fetch_add(1, std::memory_order_relaxed);
    atomic_max(r.last_end[p->region], r.clock.fetch_add(1, std::memory_order_seq_cst));
    r.inside.fetch_sub(1, std::memory_order_relaxed);
    // release: pairs with the acquire load of later regions' tiles above.
    r.region_done[p->region].fetch_add(1, std::memory_order_release);
  }

  /// Returns the number of tiles that did not run exactly once.
  int bad_tiles() const {
    int bad = 0;
    for (auto& p : probes) {
      for (std::uint32_t t = 0; t < p->tiles; ++t) bad += p->runs[t].load() != 1;
    }
    return bad;
  }
  /// Returns the number of adjacent region pairs whose tiles overlapped.
  int region_overlaps() const {
    int bad = 0;
    for (std::size_t q = 0; q + 1 < region_tiles.size(); ++q) {
      bad += !(last_end[q].load() < first_start[q + 1].load());
    }
    return bad;
  }
  int unfinished_regions() const {
    int bad = 0;
    for (std::size_t q = 0; q < region_tiles.size(); ++q) bad += region_done[q].load() != region_tiles[q];
    return bad;
  }

  bool closed = false;
};

/// Records the buffer of the main case: 10 000-tile dispatches and narrow
/// regions between them.
void record_main(recorder& rec, command_buffer& cb) {
  rec.dispatch(cb, 10'000);  // region 0
  rec.barrier(cb);
  rec.dispatch(cb, 10'000, 4);  // region 1: three dispatches
  rec.dispatch(cb, 777);
  rec.dispatch(cb, 1);
  rec.barrier(cb);
  rec.dispatch(cb, 1);  // region 2: one tile
  rec.barrier(cb);
  rec.barrier(cb);  // a second barrier is a no-op
  rec.dispatch(cb, 10'000, 16);  // region 3
  rec.barrier(cb);
  rec.dispatch(cb, 3);  // region 4: two small dispatches
  rec.dispatch(cb, 5);
  rec.barrier(cb);
  rec.dispatch(cb, 10'000);  // region 5
  rec.reset();
}

}  // namespace

//===-- recording -----------------------------------------------------------===//

TEST_CASE("command_buffer: dispatches between barriers form regions", "[block_processor][record]") {
  command_buffer cb;
  CHECK(cb.empty());
  cb.barrier();  // at the start: nothing
  CHECK(cb.region_count() == 0);
  int a = 0;
  int b = 0;
  REQUIRE(cb.dispatch(&nop_kernel, &a, 100));
  REQUIRE(cb.dispatch(&nop_kernel, &b, 7, 3));
  cb.barrier();
  cb.barrier();
  REQUIRE(cb.dispatch(&nop_kernel, nullptr, 1));
  REQUIRE(cb.dispatch(&nop_kernel, nullptr, 0));  // records nothing
  cb.barrier();
  REQUIRE(cb.dispatch(&nop_kernel, nullptr, 4096));

  REQUIRE(cb.region_count() == 3);
  REQUIRE(cb.dispatch_count() == 4);
  CHECK(cb.tile_count() == 100 + 7 + 1 + 4096);
  CHECK(cb.max_parallelism() == 4096);
  const auto regions = cb.regions();
  CHECK(regions[0].first_dispatch == 0);
  CHECK(regions[0].dispatch_count == 2);
  CHECK(regions[0].tiles == 107);
  CHECK(regions[1].first_dispatch == 2);
  CHECK(regions[1].dispatch_count == 1);
  CHECK(regions[1].tiles == 1);
  CHECK(regions[2].tiles == 4096);
  const auto d = cb.dispatches();
  CHECK(d[0].user_data == &a);
  CHECK(d[1].user_data == &b);
  CHECK(d[1].first_tile == 100);
  CHECK(d[1].tile_size == 3);
  CHECK(d[2].first_tile == 0);

  cb.clear();
  CHECK(cb.empty());
  CHECK(cb.dispatch_count() == 0);
}

TEST_CASE("command_buffer: bad input is rejected and records nothing", "[block_processor][record]") {
  command_buffer cb;
  status st = cb.dispatch(nullptr, nullptr, 5);
  CHECK(st.code() == errc::invalid_argument);
  st = cb.dispatch(&nop_kernel, nullptr, 5, 0);
  CHECK(st.code() == errc::invalid_argument);
  CHECK(cb.empty());

  // A region holds at most 2^32 - 1 tiles; the next region starts afresh.
  REQUIRE(cb.dispatch(&nop_kernel, nullptr, command_buffer::max_region_tiles));
  st = cb.dispatch(&nop_kernel, nullptr, 1);
  CHECK(st.code() == errc::capacity_exceeded);
  CHECK(st.error_value().position() == 0);  // the region that is full
  CHECK(cb.dispatch_count() == 1);
  CHECK(cb.regions()[0].tiles == command_buffer::max_region_tiles);
  cb.barrier();
  REQUIRE(cb.dispatch(&nop_kernel, nullptr, 1));
  CHECK(cb.region_count() == 2);
}

//===-- construction and layout ---------------------------------------------===//

TEST_CASE("block_processor: layout, defaults and the initial wake budget", "[block_processor][basics]") {
  STATIC_REQUIRE(std::is_base_of_v<process, block_processor>);
  STATIC_REQUIRE(sizeof(block_processor) == 6 * CAUSAL_CACHELINE_SIZE);
  STATIC_REQUIRE(alignof(block_processor) == CAUSAL_CACHELINE_SIZE);
  STATIC_REQUIRE(causal::block_processor_traits<causal::default_block_processor_traits>);
  STATIC_REQUIRE(!causal::block_processor_traits<int>);
  STATIC_REQUIRE(!std::is_copy_constructible_v<block_processor>);

  command_buffer empty;
  block_processor e(empty);
  CHECK(e.wake_budget() == 1);
  CHECK(e.region_count() == 0);
  CHECK(e.suspend_count() == 1);  // the submit hold

  command_buffer cb;
  REQUIRE(cb.dispatch(&nop_kernel, nullptr, 100));
  cb.barrier();
  REQUIRE(cb.dispatch(&nop_kernel, nullptr, 1));
  block_processor wide(cb);
  CHECK(wide.wake_budget() == 100);
  CHECK(wide.region_budget(1) == 1);
  block_processor capped(cb, block_options{.max_workers = 8});
  CHECK(capped.wake_budget() == 8);
  block_processor one(cb, block_options{.max_workers = 1});
  CHECK(one.wake_budget() == 1);
  block_processor zero(cb, block_options{.max_workers = 0});
  CHECK(zero.wake_budget() == 1);

  // Narrow first region, wide later: budget 2, for a compute slot.
  command_buffer narrow_first;
  REQUIRE(narrow_first.dispatch(&nop_kernel, nullptr, 1));
  narrow_first.barrier();
  REQUIRE(narrow_first.dispatch(&nop_kernel, nullptr, 50));
  block_processor nf(narrow_first);
  CHECK(nf.wake_budget() == 2);
  CHECK(nf.current_region() == 0);
}

//===-- running: exactly once, regions in order -------------------------------===//

TEMPLATE_TEST_CASE("block_processor: 10 000-tile dispatches run every tile exactly once and "
                   "regions never overlap",
                   "[block_processor][regions]", causal::default_block_processor_traits,
                   tiny_traits, wide_traits) {
  const std::uint32_t w = GENERATE(1u, 2u, 4u);
  const bool exclusive = GENERATE(false, true);
  CAPTURE(w, exclusive);
  recorder rec;
  command_buffer cb;
  record_main(rec, cb);
  REQUIRE(cb.region_count() == 6);
  rec.index_bound = w + 1;

  basic_block_processor<TestType> bp(
      cb, block_options{.max_workers = exclusive ? 1u : block_options::unlimited});
  outcome out;
  out.attach(bp);
  basic_executor<> ex(workers(w));  // declared last: destroyed first
  constexpr int rounds = 3;
  int bad_tiles = 0;
  int overlapping = 0;
  int unfinished = 0;
  int violations = 0;
  int concurrent = 0;
  for (int round = 1; round <= rounds; ++round) {
    if (round == 1) {
      ex.submit(bp);
    } else {
      rec.reset();
      bp.rearm(0);
    }
    REQUIRE(out.wait_released(round));
    bad_tiles += rec.bad_tiles();
    overlapping += rec.region_overlaps();
    unfinished += rec.unfinished_regions();
    violations += rec.violations.load();
    concurrent += rec.overlaps.load();
    CHECK(bp.current_region() == bp.region_count());
  }
  CHECK(bad_tiles == 0);
  CHECK(overlapping == 0);
  CHECK(unfinished == 0);
  CHECK(violations == 0);
  CHECK(out.completions.load() == rounds);
  CHECK(out.code.load() == static_cast<int>(errc::ok));
  // Budget 1: listed, so one drainer at a time and no kernel overlaps.
  if (exclusive || w == 1) CHECK(concurrent == 0);
  CHECK(eventually([&] { return ex.occupied_slots() == 0; }));
  CHECK(ex.aggregate_budget() == 0);
}

TEST_CASE("block_processor: with no worker threads run_until_idle runs it exclusively",
          "[block_processor][exclusive]") {
  recorder rec;
  command_buffer cb;
  record_main(rec, cb);
  rec.index_bound = 1;
  block_processor bp(cb);  // wide budget: a compute slot, but index_bound() == 1
  outcome out;
  out.attach(bp);
  basic_executor<> ex(workers(0));  // declared last: destroyed first
  ex.submit(bp);
  CHECK(ex.occupied_slots() == 1);
  ex.run_until_idle();
  CHECK(out.releases.load() == 1);
  CHECK(rec.bad_tiles() == 0);
  CHECK(rec.region_overlaps() == 0);
  CHECK(rec.violations.load() == 0);
  CHECK(rec.overlaps.load() == 0);
  CHECK(rec.worker_mask.load() == 1u);  // worker index 0: the helper
}

TEST_CASE("block_processor: several workers share a wide region", "[block_processor][shared]") {
  constexpr std::uint32_t w = 4;
  struct busy {
    std::atomic<std::uint32_t> mask{0};
    std::atomic<int> runs{0};
    std::atomic<bool> give_up{false};
  } b;
  command_buffer cb;
  REQUIRE(cb.dispatch(
      [](void* data, tile t) noexcept {
        auto* s = static_cast<busy*>(data);
        const std::uint32_t seen =
            s->mask.fetch_or(1u << t.worker, std::memory_order_relaxed) | (1u << t.worker);
        s->runs.fetch_add(1, std::memory_order_relaxed);
        // Until a second worker has run a tile of this round, the tiles
        // wait for one: the question is whether another worker joins at
        // all, not whether it gets a CPU before the first one finishes
        // (on a loaded machine it may not). The test thread gives up after
        // its hang guard.
        if (std::popcount(seen) < 2) {
          while (std::popcount(s->mask.load(std::memory_order_relaxed)) < 2 &&
                 !s->give_up.load(std::memory_order_relaxed)) {
            std::this_thread::yield();
          }
        }
      },
      &b, 10'000));
  block_processor bp(cb);
  outcome out;
  out.attach(bp);
  basic_executor<> ex(workers(w));  // declared last: destroyed first
  const auto watched = causal::test::watch(ex, "executor");
  int shared_rounds = 0;
  for (int round = 1; round <= 5; ++round) {
    b.mask.store(0);
    if (round == 1) {
      ex.submit(bp);
    } else {
      bp.rearm(0);
    }
    const bool shared = eventually([&] { return std::popcount(b.mask.load()) >= 2; });
    if (!shared) b.give_up.store(true);  // let the round finish alone
    REQUIRE(out.wait_released(round));
    shared_rounds += shared ? 1 : 0;
  }
  CHECK(b.runs.load() == 5 * 10'000);
  CHECK(shared_rounds == 5);
}

//===-- wake budget ---------------------------------------------------------===//

namespace {
struct budget_probe {
  process* bp = nullptr;
  basic_executor<>* ex = nullptr;
  std::uint32_t region = 0;
  std::atomic<std::uint32_t>* seen_budget = nullptr;
  std::atomic<std::int64_t>* seen_aggregate = nullptr;
  std::atomic<int>* mismatches = nullptr;
  static void kernel(void* data, tile t) noexcept {
    auto* p = static_cast<budget_probe*>(data);
    const std::uint32_t b = p->bp->wake_budget();
    if (t.index == 0) {
      p->seen_budget[p->region].store(b, std::memory_order_relaxed);
      if (p->ex != nullptr) p->seen_aggregate[p->region].store(p->ex->aggregate_budget());
    } else if (b != p->seen_budget[p->region].load(std::memory_order_relaxed) &&
               p->seen_budget[p->region].load(std::memory_order_relaxed) != 0) {
      p->mismatches->fetch_add(1, std::memory_order_relaxed);
    }
  }
};
}  // namespace

TEST_CASE("block_processor: the wake budget follows the current region's tile parallelism",
          "[block_processor][budget]") {
  const std::uint32_t w = GENERATE(0u, 2u);
  CAPTURE(w);
  constexpr std::uint32_t tiles[] = {100, 1, 3, 10'000, 2};
  constexpr std::uint32_t expected[] = {8, 1, 3, 8, 2};
  std::atomic<std::uint32_t> seen[5] = {};
  std::atomic<std::int64_t> aggregate[5] = {};
  std::atomic<int> mismatches{0};
  budget_probe probes[5];
  command_buffer cb;
  for (std::uint32_t r = 0; r < 5; ++r) {
    REQUIRE(cb.dispatch(&budget_probe::kernel, &probes[r], tiles[r]));
    cb.barrier();
  }
  block_processor bp(cb, block_options{.max_workers = 8});
  outcome out;
  out.attach(bp);
  basic_executor<> ex(workers(w));  // declared last: destroyed first
  for (std::uint32_t r = 0; r < 5; ++r) {
    probes[r] = budget_probe{&bp, w == 0 ? &ex : nullptr, r, seen, aggregate, &mismatches};
  }
  CHECK(bp.wake_budget() == 8);
  ex.submit(bp);
  if (w == 0) {
    CHECK(ex.aggregate_budget() == 8);
    ex.run_until_idle();
  }
  REQUIRE(out.wait_released(1));
  for (std::uint32_t r = 0; r < 5; ++r) {
    CAPTURE(r);
    CHECK(seen[r].load() == expected[r]);
    // The slot's budget (what the executor sums) moves with it.
    if (w == 0) CHECK(aggregate[r].load() == expected[r]);
  }
  CHECK(mismatches.load() == 0);
  CHECK(eventually([&] { return ex.aggregate_budget() == 0; }));
}

//===-- drained by hand -----------------------------------------------------===//

TEST_CASE("block_processor: a drain runs at most drain_quantum tiles, across regions",
          "[block_processor][quantum]") {
  std::atomic<int> runs{0};
  command_buffer cb;
  auto count = [](void* data, tile) noexcept {
    static_cast<std::atomic<int>*>(data)->fetch_add(1, std::memory_order_relaxed);
  };
  REQUIRE(cb.dispatch(count, &runs, 300));
  cb.barrier();
  for (int r = 0; r < 100; ++r) {
    REQUIRE(cb.dispatch(count, &runs, 3));
    cb.barrier();
  }
  REQUIRE(cb.dispatch(count, &runs, 400));  // 1000 tiles in 102 regions
  block_processor bp(cb);
  // Not submitted: placement "nowhere", so drained exclusively.
  worker_context ctx(0, 3);
  constexpr std::uint32_t q = causal::default_block_processor_traits::drain_quantum;
  int calls = 0;
  drain_result r{};
  do {
    r = bp.drain()(bp, ctx);
    ++calls;
    CHECK(runs.load() == std::min<int>(calls * static_cast<int>(q), 1000));
  } while (!r.completed && calls < 100);
  CHECK(r.completed);
  CHECK(calls == (1000 + q - 1) / q);
  CHECK(runs.load() == 1000);
  CHECK(bp.current_region() == 102);
  // Drained again after the end: still complete, runs nothing.
  CHECK(bp.drain()(bp, ctx).completed);
  CHECK(runs.load() == 1000);
}

TEST_CASE("block_processor: an empty command buffer completes at once", "[block_processor][basics]") {
  const std::uint32_t w = GENERATE(0u, 1u, 2u);
  CAPTURE(w);
  command_buffer cb;
  block_processor bp(cb);
  outcome out;
  out.attach(bp);
  basic_executor<> ex(workers(w));  // declared last: destroyed first
  ex.submit(bp);
  if (w == 0) ex.run_until_idle();
  REQUIRE(out.wait_released(1));
  CHECK(out.completions.load() == 1);
  CHECK(out.code.load() == static_cast<int>(errc::ok));
}

//===-- errors, dependents, scopes ------------------------------------------===//

namespace {
struct stopper {
  process* bp = nullptr;
  bool cancel = true;
  std::atomic<int>* runs = nullptr;
  static void kernel(void* data, tile t) noexcept {
    auto* s = static_cast<stopper*>(data);
    if (t.index == 0) {
      if (s->cancel) {
        (void)s->bp->cancel();
      } else {
        (void)s->bp->fail(error{errc::device_lost, "test: kernel failed"});
      }
    }
    s->runs->fetch_add(1, std::memory_order_relaxed);
  }
};
}  // namespace

TEST_CASE("block_processor: cancel or fail stops it within a quantum; dependents see the error",
          "[block_processor][cancel]") {
  const std::uint32_t w = GENERATE(1u, 2u, 4u);
  const bool cancel = GENERATE(true, false);
  const bool exclusive = GENERATE(false, true);
  CAPTURE(w, cancel, exclusive);
  std::atomic<int> before{0};
  std::atomic<int> during{0};
  std::atomic<int> after{0};
  auto count = [](void* data, tile) noexcept {
    static_cast<std::atomic<int>*>(data)->fetch_add(1, std::memory_order_relaxed);
  };
  stopper stop;
  stop.runs = &during;
  stop.cancel = cancel;
  command_buffer cb;
  REQUIRE(cb.dispatch(count, &before, 1000));
  cb.barrier();
  REQUIRE(cb.dispatch(&stopper::kernel, &stop, 50'000));
  cb.barrier();
  REQUIRE(cb.dispatch(count, &after, 1000));
  block_processor bp(cb, block_options{.max_workers = exclusive ? 1u : block_options::unlimited});
  stop.bp = &bp;

  struct dependent {
    std::atomic<int> drains{0};
    std::atomic<int> code{-1};
    std::atomic<int> released{0};
    process p;
  } dep;
  dep.p.set_user_data(&dep);
  dep.p.set_drain([](process& self, worker_context&) noexcept {
    static_cast<dependent*>(self.user_data())->drains.fetch_add(1);
    return drain_result::complete();
  });
  dep.p.set_completion([](process& self, status s) noexcept {
    static_cast<dependent*>(self.user_data())->code.store(static_cast<int>(s.code()));
  });
  dep.p.set_release([](process& self) noexcept {
    static_cast<dependent*>(self.user_data())->released.store(1, std::memory_order_release);
  });
  dep.p.suspend();
  process* deps[] = {&dep.p};
  bp.set_dependents(deps);

  causal::scope sc;
  bp.set_scope(sc);
  outcome out;
  out.attach(bp);
  basic_executor<> ex(workers(w));  // declared last: destroyed first
  ex.submit(dep.p);
  ex.submit(bp);
  REQUIRE(out.wait_released(1));
  REQUIRE(eventually([&] { return dep.released.load(std::memory_order_acquire) == 1; }));
  const errc expected = cancel ? errc::cancelled : errc::device_lost;
  CHECK(out.code.load() == static_cast<int>(expected));
  CHECK(out.completions.load() == 1);
  CHECK(before.load() == 1000);
  // Each worker finishes at most its current drain: far fewer than 50 000.
  CHECK(during.load() <= static_cast<int>((w + 1) * 2 * causal::default_block_processor_traits::drain_quantum));
  CHECK(after.load() == 0);
  CHECK(dep.drains.load() == 0);
  CHECK(dep.code.load() == static_cast<int>(expected));
  CHECK(sc.wait_idle().code() == expected);
}

//===-- allocation ----------------------------------------------------------===//

TEST_CASE("block_processor: once recorded, running and rearming allocate nothing",
          "[block_processor][allocation]") {
  const std::uint32_t w = GENERATE(1u, 2u);
  const bool exclusive = GENERATE(false, true);
  CAPTURE(w, exclusive);
  std::atomic<int> runs{0};
  auto count = [](void* data, tile) noexcept {
    static_cast<std::atomic<int>*>(data)->fetch_add(1, std::memory_order_relaxed);
  };
  command_buffer cb;
  cb.reserve(8, 8);
  REQUIRE(cb.dispatch(count, &runs, 10'000));
  REQUIRE(cb.dispatch(count, &runs, 17));
  cb.barrier();
  REQUIRE(cb.dispatch(count, &runs, 1));
  cb.barrier();
  REQUIRE(cb.dispatch(count, &runs, 5000));
  block_processor bp(cb, block_options{.max_workers = exclusive ? 1u : block_options::unlimited});
  outcome out;
  out.attach(bp);
  basic_executor<> ex(workers(w));  // declared last: destroyed first
  ex.submit(bp);
  REQUIRE(out.wait_released(1));
  std::uint64_t allocations = 0;
  int round = 1;
  {
    causal::test::allocation_guard guard;
    for (round = 2; round <= 50; ++round) {
      bp.rearm(0);
      if (!out.wait_released(round)) break;
    }
    allocations = guard.allocations();
  }
  CHECK(round == 51);
  CHECK(allocations == 0);
  CHECK(runs.load() == 50 * (10'000 + 17 + 1 + 5000));
}
