// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// block_processor_bench: what causal::block_processor costs per tile with
// an (almost) empty kernel -- tile claiming, region hand-off at barriers,
// drain returns and the executor around them -- next to the simplest
// honest std baseline, in the same binary.
//
// Why it matters. The block processor is where a CPU queue spends its
// cycles (docs/executor.md: the block processor is where the cycles go). Its
// per-tile overhead bounds how small a tile can be before scheduling eats
// the kernel; the goal is <= 20 ns per tile, within one region and
// across regions. bench/README.md.
//
// What runs. Names are `<case>/<impl>`; one iteration runs a whole command
// buffer of 65 536 tiles, from submit (or rearm) to release, and the
// `ns_per_tile` counter divides the iteration's real time by 65 536.
//
//   case            buffer
//   same_region     one region: one dispatch of 65 536 tiles
//   regions_64      1 024 regions of 64 tiles, a barrier after each
//   regions_1       65 536 regions of 1 tile (a barrier per tile; budget
//                   1 everywhere, so ours runs it exclusively)
//   work_1us        one region of 4 096 tiles of ~1 us of spinning each
//                   (counter `efficiency` = 1-worker time / (workers x
//                   time), against the 1-worker row of the same impl)
//
//   impl            what drains it
//   direct          block_processor drained in a loop on the bench thread,
//                   no executor (the exclusive path's floor)
//   ours_1w_excl    executor, 1 worker, block_options{.max_workers = 1}:
//                   listed, exclusive path (no atomics)
//   ours_1w         executor, 1 worker, default budget: compute slot, CAS
//                   claims with one drainer
//   ours_2w         executor, 2 workers, default budget
//   std_1w, std_2w  persistent std::threads; per region, every thread takes
//                   tiles from a std::atomic<size_t> with fetch_add(1) until
//                   it runs past the end, then std::barrier::arrive_and_wait
//                   (its completion step resets the counter)
//
// The "empty" kernel bumps a per-worker, cache-line-padded plain counter
// (about 1 ns), the same for every impl: the 2-worker rows report
// `share_w0`, the fraction of tiles the first worker ran (bench/README.md:
// empty-leaf fork-join is bimodal; a 2-worker per-tile figure is only
// meaningful when both workers take >= 40 %), and the sum is checked.
// The bench thread waits for the end of a run with std::atomic::wait (the
// executor's release callback / the last std thread notifies), so both
// sides pay the same wake-up.
//
// Honesty. Before timing, main() runs every case on every impl with a
// checking kernel (each tile exactly once; every tile of region r+1 sees
// all of region r finished through acquire loads) and refuses to time
// anything if one fails. After each timed loop the per-worker counts must
// add up to tiles x runs (SkipWithError otherwise). Real time throughout;
// only 2 vCPUs here, so no row runs more than 2 workers (plus the mostly
// parked bench thread).
//
// What to look for. direct and ours_1w_excl: a few ns per tile in every
// case (a kernel call through a pointer, a region step per region).
// ours_1w vs ours_1w_excl: the price of the two RMWs per claim with one
// drainer, amortised over guided chunks (<= Traits::max_claim). ours_2w vs
// std_2w in same_region: chunked CAS claims vs one contended fetch_add per
// tile; in regions_64 / regions_1: the completer's in-line hand-off vs a
// std::barrier per region. work_1us: both should be near 1.0 efficiency.
//
// Run (release build, from the repository root):
//   meson setup build-bench -Dbenchmarks=enabled --buildtype=release
//   meson compile -C build-bench
//   build-bench/bench/block_processor_bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
// or without meson, one line:
//   g++ -std=c++20 -O2 -DNDEBUG -Iinclude bench/block_processor_bench.cpp
//       -lbenchmark -lpthread
// See also: <causal/block_processor.hpp>, bench/RESULTS.md.

#include <causal/block_processor.hpp>
#include <causal/executor.hpp>
#include <causal/process.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

namespace {

using causal::block_options;
using causal::block_processor;
using causal::command_buffer;
using causal::executor_options;
using causal::process;
using causal::status;
using causal::tile;

constexpr std::uint32_t total_tiles = 65'536;
constexpr std::uint32_t max_workers = 8;

// Read at run time, so the compiler cannot know the shape or the work.
volatile std::uint32_t tiles_seed = total_tiles;
volatile std::uint32_t spin_seed = 0;

//===-- kernels -------------------------------------------------------------===//

/// Per-worker tile counts, one cache line each: the "empty" kernel's only
/// work, identical for every impl.
struct alignas(64) worker_count {
  std::uint64_t tiles = 0;
};
struct counts {
  worker_count w[max_workers];
  void reset() noexcept {
    for (auto& c : w) c.tiles = 0;
  }
  [[nodiscard]] std::uint64_t sum() const noexcept {
    std::uint64_t n = 0;
    for (const auto& c : w) n += c.tiles;
    return n;
  }
};

void empty_kernel(void* data, tile t) noexcept { ++static_cast<counts*>(data)->w[t.worker].tiles; }

/// ~1 us of spinning (calibrated in main()), then the count.
std::uint32_t spins_per_us = 300;
void work_kernel(void* data, tile t) noexcept {
  std::uint32_t x = spin_seed;
  for (std::uint32_t i = 0; i < spins_per_us; ++i) {
    x = x * 1664525u + 1013904223u;
    benchmark::DoNotOptimize(x);
  }
  ++static_cast<counts*>(data)->w[t.worker].tiles;
}

/// The checking kernel: exactly once, and regions in order.
struct checker {
  std::uint32_t regions = 0;
  std::uint32_t per_region = 0;
  std::unique_ptr<std::atomic<std::uint32_t>[]> runs;
  std::unique_ptr<std::atomic<std::uint32_t>[]> region_done;
  std::atomic<std::uint32_t> violations{0};
  void reset(std::uint32_t r, std::uint32_t per) {
    regions = r;
    per_region = per;
    runs = std::make_unique<std::atomic<std::uint32_t>[]>(static_cast<std::size_t>(r) * per);
    region_done = std::make_unique<std::atomic<std::uint32_t>[]>(r);
    for (std::size_t i = 0; i < static_cast<std::size_t>(r) * per; ++i) runs[i].store(0);
    for (std::uint32_t i = 0; i < r; ++i) region_done[i].store(0);
    violations.store(0);
  }
  [[nodiscard]] bool ok() const {
    for (std::size_t i = 0; i < static_cast<std::size_t>(regions) * per_region; ++i) {
      if (runs[i].load() != 1) return false;
    }
    return violations.load() == 0;
  }
};
/// Kernel data for one region of the checked buffer.
struct checked_region {
  checker* c = nullptr;
  std::uint32_t region = 0;
};
void check_kernel(void* data, tile t) noexcept {
  auto* r = static_cast<checked_region*>(data);
  checker& c = *r->c;
  // acquire: pairs with the release add below, on the previous region.
  if (r->region > 0 && c.region_done[r->region - 1].load(std::memory_order_acquire) != c.per_region) {
    c.violations.fetch_add(1, std::memory_order_relaxed);
  }
  c.runs[static_cast<std::size_t>(r->region) * c.per_region + t.index].fetch_add(1, std::memory_order_relaxed);
  c.region_done[r->region].fetch_add(1, std::memory_order_release);
}

//===-- the shape of a case -------------------------------------------------===//

struct shape {
  std::uint32_t regions;
  std::uint32_t per_region;
  causal::kernel_fn kernel;
};

/// Records `s` with `data` as every dispatch's user data.
void record(command_buffer& cb, const shape& s, void* data) {
  cb.clear();
  cb.reserve(s.regions, s.regions);
  for (std::uint32_t r = 0; r < s.regions; ++r) {
    (void)cb.dispatch(s.kernel, data, s.per_region);
    cb.barrier();
  }
}

//===-- ours ----------------------------------------------------------------===//

/// An executor and a block processor it runs again and again.
class ours_runner {
 public:
  ours_runner(std::uint32_t workers, bool exclusive_budget, const command_buffer& cb)
      : ex_(executor_options{.worker_count = workers}),
        bp_(cb, block_options{.max_workers = exclusive_budget ? 1u : block_options::unlimited}) {
    bp_.set_user_data(this);
    bp_.set_completion([](process& p, status s) noexcept {
      if (!s) static_cast<ours_runner*>(p.user_data())->failed_ = true;
    });
    bp_.set_release([](process& p) noexcept {
      auto* self = static_cast<ours_runner*>(p.user_data());
      self->released_.fetch_add(1, std::memory_order_release);
      self->released_.notify_one();
    });
  }

  /// Runs the buffer once, from activation to release.
  void run() noexcept {
    const std::uint32_t before = released_.load(std::memory_order_relaxed);
    if (!submitted_) {
      submitted_ = true;
      ex_.submit(bp_);
    } else {
      bp_.rearm(0);
    }
    std::uint32_t now = before;
    // acquire: pairs with the release add in the release callback.
    while ((now = released_.load(std::memory_order_acquire)) == before) {
      released_.wait(now, std::memory_order_acquire);
    }
  }
  [[nodiscard]] bool failed() const noexcept { return failed_; }

 private:
  causal::executor ex_;
  block_processor bp_;
  std::atomic<std::uint32_t> released_{0};
  bool submitted_ = false;
  bool failed_ = false;
};

/// No executor: the bench thread drains a fresh processor until complete.
void run_direct(const command_buffer& cb) noexcept {
  block_processor bp(cb);
  causal::worker_context ctx(0, 1);
  while (!bp.drain()(bp, ctx).completed) {
  }
}

//===-- the std baseline ----------------------------------------------------===//

/// Persistent std::threads; per region a fetch_add tile counter and a
/// std::barrier whose completion step resets the counter.
class std_pool {
 public:
  explicit std_pool(std::uint32_t n) : n_(n), barrier_(static_cast<std::ptrdiff_t>(n), reset{this}) {
    for (std::uint32_t i = 0; i < n; ++i) threads_.emplace_back([this, i] { work(i); });
  }
  ~std_pool() {
    stop_ = true;
    generation_.fetch_add(1, std::memory_order_release);
    generation_.notify_all();
    for (auto& t : threads_) t.join();
  }
  std_pool(const std_pool&) = delete;
  std_pool& operator=(const std_pool&) = delete;

  /// Runs `s` once on every thread; its kernel gets `data`, or
  /// `region_data[r]` in region r when given (for the checks).
  void run(const shape& s, void* data, void* const* region_data = nullptr) noexcept {
    shape_ = s;
    data_ = data;
    region_data_ = region_data;
    remaining_.store(n_, std::memory_order_relaxed);
    // release: publishes the job to the workers' acquire.
    generation_.fetch_add(1, std::memory_order_release);
    generation_.notify_all();
    std::uint32_t r = 0;
    while ((r = remaining_.load(std::memory_order_acquire)) != 0) {
      remaining_.wait(r, std::memory_order_acquire);
    }
  }

 private:
  struct reset {
    std_pool* pool;
    void operator()() noexcept { pool->next_.store(0, std::memory_order_relaxed); }
  };

  void work(std::uint32_t index) noexcept {
    std::uint32_t seen = 0;
    for (;;) {
      generation_.wait(seen, std::memory_order_acquire);
      seen = generation_.load(std::memory_order_acquire);
      if (stop_) return;
      const shape s = shape_;
      void* const* const region_data = region_data_;
      for (std::uint32_t r = 0; r < s.regions; ++r) {
        void* const data = region_data == nullptr ? data_ : region_data[r];
        for (;;) {
          // relaxed: claims only; the barrier orders regions.
          const std::size_t i = next_.fetch_add(1, std::memory_order_relaxed);
          if (i >= s.per_region) break;
          s.kernel(data, tile{static_cast<std::uint32_t>(i), s.per_region, 1, index});
        }
        barrier_.arrive_and_wait();
      }
      if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) remaining_.notify_one();
    }
  }

  std::uint32_t n_;
  std::vector<std::thread> threads_;
  shape shape_{};
  void* data_ = nullptr;
  void* const* region_data_ = nullptr;
  bool stop_ = false;
  alignas(64) std::atomic<std::uint32_t> generation_{0};
  alignas(64) std::atomic<std::uint32_t> remaining_{0};
  alignas(64) std::atomic<std::size_t> next_{0};
  alignas(64) std::barrier<reset> barrier_;
};

//===-- cases ---------------------------------------------------------------===//

enum class impl { direct, ours_1w_excl, ours_1w, ours_2w, std_1w, std_2w };
enum class kase { same_region, regions_64, regions_1, work_1us };

shape shape_of(kase k) {
  const std::uint32_t n = tiles_seed;
  switch (k) {
    case kase::same_region: return {1, n, &empty_kernel};
    case kase::regions_64: return {n / 64, 64, &empty_kernel};
    case kase::regions_1: return {n, 1, &empty_kernel};
    case kase::work_1us: return {1, 4096, &work_kernel};
  }
  return {1, n, &empty_kernel};
}

std::uint32_t workers_of(impl i) {
  switch (i) {
    case impl::direct: return 1;
    case impl::ours_1w_excl:
    case impl::ours_1w:
    case impl::std_1w: return 1;
    case impl::ours_2w:
    case impl::std_2w: return 2;
  }
  return 1;
}

/// Real time per run of the 1-worker row of each impl family, for the
/// work_1us efficiency counter (same process, measured just before).
double one_worker_seconds[2] = {0, 0};  // [ours, std]

template <impl I, kase K>
void bm_tiles(benchmark::State& state) {
  const shape s = shape_of(K);
  const std::uint64_t tiles = std::uint64_t{s.regions} * s.per_region;
  counts c;
  command_buffer cb;
  record(cb, s, &c);
  std::unique_ptr<ours_runner> ours;
  std::unique_ptr<std_pool> pool;
  if constexpr (I == impl::ours_1w_excl || I == impl::ours_1w || I == impl::ours_2w) {
    ours = std::make_unique<ours_runner>(workers_of(I), I == impl::ours_1w_excl, cb);
    ours->run();  // warm: threads started, slot claimed once
  } else if constexpr (I == impl::std_1w || I == impl::std_2w) {
    pool = std::make_unique<std_pool>(workers_of(I));
    pool->run(s, &c);
  }
  c.reset();
  std::uint64_t runs = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    if constexpr (I == impl::direct) {
      run_direct(cb);
    } else if constexpr (I == impl::std_1w || I == impl::std_2w) {
      pool->run(s, &c);
    } else {
      ours->run();
    }
    ++runs;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (c.sum() != tiles * runs || (ours && ours->failed())) {
    state.SkipWithError("tile count mismatch or failed run");
    return;
  }
  // Real time of the timed loop (one clock read per run of 65 536 tiles
  // would do too; this is two per loop) over every tile it ran.
  state.counters["ns_per_tile"] = seconds * 1e9 / static_cast<double>(tiles * runs);
  if (workers_of(I) == 2) {
    state.counters["share_w0"] = static_cast<double>(c.w[0].tiles) / static_cast<double>(c.sum());
  }
  if constexpr (K == kase::work_1us && I != impl::direct) {
    constexpr int family = (I == impl::std_1w || I == impl::std_2w) ? 1 : 0;
    const double per_run = seconds / static_cast<double>(runs);
    if (workers_of(I) == 1 && I != impl::ours_1w_excl) {
      one_worker_seconds[family] = per_run;
    } else if (workers_of(I) == 2 && one_worker_seconds[family] > 0) {
      state.counters["efficiency"] = one_worker_seconds[family] / (2 * per_run);
    }
  }
}

//===-- checks before timing ------------------------------------------------===//

bool check_one(impl i, const char* name, std::uint32_t regions, std::uint32_t per_region) {
  checker chk;
  chk.reset(regions, per_region);
  std::vector<checked_region> data(regions);
  command_buffer cb;
  for (std::uint32_t r = 0; r < regions; ++r) {
    data[r] = checked_region{&chk, r};
    (void)cb.dispatch(&check_kernel, &data[r], per_region);
    cb.barrier();
  }
  bool ok = true;
  for (int round = 0; round < 3 && ok; ++round) {
    chk.reset(regions, per_region);
    switch (i) {
      case impl::direct: run_direct(cb); break;
      case impl::ours_1w_excl:
      case impl::ours_1w:
      case impl::ours_2w: {
        ours_runner r(workers_of(i), i == impl::ours_1w_excl, cb);
        r.run();
        ok = !r.failed();
        break;
      }
      case impl::std_1w:
      case impl::std_2w: {
        std_pool pool(workers_of(i));
        std::vector<void*> per(regions);
        for (std::uint32_t r = 0; r < regions; ++r) per[r] = &data[r];
        pool.run(shape{regions, per_region, &check_kernel}, nullptr, per.data());
        break;
      }
    }
    ok = ok && chk.ok();
  }
  if (!ok) std::fprintf(stderr, "block_processor_bench: check failed: %s %ux%u\n", name, regions, per_region);
  return ok;
}

bool check_all() {
  bool ok = true;
  const struct {
    impl i;
    const char* name;
  } impls[] = {{impl::direct, "direct"},   {impl::ours_1w_excl, "ours_1w_excl"},
               {impl::ours_1w, "ours_1w"}, {impl::ours_2w, "ours_2w"},
               {impl::std_1w, "std_1w"},   {impl::std_2w, "std_2w"}};
  for (const auto& x : impls) {
    ok &= check_one(x.i, x.name, 1, 65'536);
    ok &= check_one(x.i, x.name, 256, 64);
    ok &= check_one(x.i, x.name, 2048, 1);
  }
  return ok;
}

void calibrate_spin() {
  // ~1 us of work_kernel's loop on this machine.
  counts c;
  std::uint32_t n = 1000;
  for (;;) {
    spins_per_us = n;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 1000; ++i) work_kernel(&c, tile{0, 1, 1, 0});
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 1000;
    if (us > 0.05) {
      spins_per_us = std::max<std::uint32_t>(1, static_cast<std::uint32_t>(n / us));
      return;
    }
    n *= 10;
  }
}

double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }
double max_of(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }

template <impl I, kase K>
void reg(const char* name) {
  benchmark::RegisterBenchmark(name, bm_tiles<I, K>)
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime()
      ->ComputeStatistics("min", min_of)
      ->ComputeStatistics("max", max_of);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (!check_all()) {
    std::fprintf(stderr, "block_processor_bench: checks failed; not timing anything\n");
    return 1;
  }
  calibrate_spin();

  reg<impl::direct, kase::same_region>("same_region/direct");
  reg<impl::ours_1w_excl, kase::same_region>("same_region/ours_1w_excl");
  reg<impl::ours_1w, kase::same_region>("same_region/ours_1w");
  reg<impl::std_1w, kase::same_region>("same_region/std_1w");
  reg<impl::ours_2w, kase::same_region>("same_region/ours_2w");
  reg<impl::std_2w, kase::same_region>("same_region/std_2w");

  reg<impl::direct, kase::regions_64>("regions_64/direct");
  reg<impl::ours_1w_excl, kase::regions_64>("regions_64/ours_1w_excl");
  reg<impl::ours_1w, kase::regions_64>("regions_64/ours_1w");
  reg<impl::std_1w, kase::regions_64>("regions_64/std_1w");
  reg<impl::ours_2w, kase::regions_64>("regions_64/ours_2w");
  reg<impl::std_2w, kase::regions_64>("regions_64/std_2w");

  reg<impl::direct, kase::regions_1>("regions_1/direct");
  reg<impl::ours_1w_excl, kase::regions_1>("regions_1/ours_1w_excl");
  reg<impl::ours_1w, kase::regions_1>("regions_1/ours_1w");
  reg<impl::std_1w, kase::regions_1>("regions_1/std_1w");
  reg<impl::ours_2w, kase::regions_1>("regions_1/ours_2w");
  reg<impl::std_2w, kase::regions_1>("regions_1/std_2w");

  // Efficiency: each 2-worker row follows its 1-worker row.
  reg<impl::ours_1w, kase::work_1us>("work_1us/ours_1w");
  reg<impl::ours_2w, kase::work_1us>("work_1us/ours_2w");
  reg<impl::std_1w, kase::work_1us>("work_1us/std_1w");
  reg<impl::std_2w, kase::work_1us>("work_1us/std_2w");

  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
