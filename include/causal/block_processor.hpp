// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// block_processor: a process that runs a recorded command buffer -- regions
// of tiled dispatches separated by barriers -- on every worker that drains
// it, the workers claiming tiles with an epoch-tagged CAS.
//
// Model (docs/executor.md, "Process kinds"). A `command_buffer` is recorded once on one thread: each
// `dispatch(kernel, user_data, tiles, tile_size)` asks for `kernel` to be
// called once per tile index in [0, tiles); `barrier()` ends the current
// region. Dispatches of one region may run in any order and concurrently;
// every tile of region r+1 starts after every tile of region r has
// returned. Recording allocates (two std::vectors; reserve() up front);
// running never does.
//
//   region 0: [dispatch A: 10 000 tiles][dispatch B: 7 tiles]   barrier
//   region 1: [dispatch C: 1 tile]                              barrier
//   region 2: [dispatch D: 4096 tiles]
//
// A `basic_block_processor` *is* a process (public base) that runs one
// command buffer once per activation; submit it like any process. Its
// drain claims tiles from the current region through one 64-bit word,
//
//   claim word = region epoch (high 32 bits) | next unclaimed tile (low 32)
//
// where a region's tiles are numbered across its dispatches (dispatch B's
// tile 0 above is region tile 10 000). A drainer claims [next, next + k)
// with one CAS from (epoch, next) to (epoch, next + k). Because the epoch
// is part of the compared value, a worker that read the word during region
// r and was delayed cannot claim anything once region r+1 is published: its
// CAS fails (the word changed), it re-reads, and it claims in r+1 like any
// other worker. k follows guided self-scheduling (Polychronopoulos and
// Kuck): remaining / worker threads, clamped to [1, Traits::max_claim], so
// the CAS is amortised over many tiles while a region is wide and claims
// shrink to single tiles at its end, where balance matters. (remaining /
// (2 * threads) cost 27 instead of 12 ns per tile on 64-tile regions with
// 2 workers: twice the contended claims.)
//
// A drainer counts the tiles it ran into the region's `finished` count
// (one fetch_add, made when it finds nothing left to claim or returns:
// the region cannot finish while it holds uncounted tiles, so deferring
// costs no latency). The drainer whose add completes the region is its
// completer: it resets the count, sets the process's wake budget to the
// next region's tile parallelism (min(tiles, options.max_workers)), and
// publishes (epoch + 1, 0) with a release store -- then it keeps
// draining, now in the new region. The completer of the last region publishes
// (region_count, 0) and returns `completed`; other drainers that find the
// current region fully claimed but not finished return `idle` and come back
// through the executor. A drain call runs at most Traits::drain_quantum
// tiles (across regions) before returning, so other processes get a turn
// and a cancel() or fail() takes effect within one quantum per worker.
//
// Exclusive path. A drain call uses no read-modify-write at all (plain
// loads and stores of the same words, tiles run in a tight loop) when the
// executor guarantees it is the only drainer. It detects that from
//   (a) the process's placement: on the executor's immediate or overflow
//       list (placement >= detail::placed_overflow), which is where a
//       process whose wake budget is 1 when activated goes. Listed
//       processes are drained by one worker at a time, and the list
//       hand-off orders one drain after the previous; or
//   (b) ctx.index_bound() == 1: an executor with no worker threads, whose
//       only drainer is the thread in run_until_idle().
// An executor with one worker thread has index_bound() == 2 and is *not*
// detected by (b), because a run_until_idle() helper may drain next to the
// worker. Pass block_options{.max_workers = 1} (or ex.worker_count()) for
// it: every budget is then 1, the executor lists the process, and (a)
// applies. A process whose first region has one tile but whose later
// regions are wider starts with budget 2 so that it gets a compute slot:
// the executor chooses list or slot once per activation. Calling drain()
// outside an executor (placement "nowhere") is also taken as exclusive.
//
// Cache-line map (after the three lines of the process base):
//
//   line 3  immutable after construction   regions, dispatches, counts, cap
//   line 4  claimers (CAS)                  claim word
//   line 5  finishers + completer           finished count, budget set
//
// Thread safety: recording a command_buffer is single-threaded; once a
//                processor has been constructed on it the buffer must not
//                change (or move) until every processor using it has been
//                released. One buffer may back many processors at once.
//                A processor is drained by any number of workers at once;
//                the process members keep their own rules (process.hpp).
// Memory order:  what a tile of region r did happens-before every tile of
//                region r+1 (each finisher's fetch_add releases, the
//                completer's acq_rel add acquires them all and its release
//                store of the claim word is acquired by every claim in
//                r+1), and before the completion callback and dependents.
//                What happened before the process was activated
//                happens-before its first tile.
// Blocking/allocation: command_buffer::dispatch/reserve may allocate; the
//                processor's constructor, drain, rearm never allocate,
//                never lock and never block. Kernels must not block on
//                other tiles of the same region (they may run on one
//                worker in sequence).
// Size:          basic_block_processor is 6 cache lines (384 bytes with
//                64-byte lines), aligned to CAUSAL_CACHELINE_SIZE.
//                command_buffer: 32 bytes per dispatch, 12 per region.
// Configuration: Traits (default_block_processor_traits): max_claim,
//                drain_quantum. block_options: max_workers.
// See also:      <causal/process.hpp>, <causal/executor.hpp>,
//                <causal/stream_process.hpp>, docs/executor.md,
//                bench/block_processor_bench.cpp.
#pragma once

#include <causal/config.hpp>
#include <causal/process.hpp>
#include <causal/result.hpp>

#include <algorithm>
#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

CAUSAL_BEGIN_NAMESPACE

//===-- tile and kernel -----------------------------------------------------===//

/// What a kernel learns about the tile it runs: passed by value (16 bytes,
/// two registers), so a call costs no memory traffic.
struct tile {
  std::uint32_t index = 0;   ///< this tile, in [0, count)
  std::uint32_t count = 0;   ///< tiles of the dispatch
  std::uint32_t size = 1;    ///< the dispatch's tile size (work items per tile; ours to carry, the kernel's to interpret)
  std::uint32_t worker = 0;  ///< worker_context::worker_index() of the calling worker
};

/// A tiled kernel: called once per tile with the dispatch's user data.
/// Must not throw (noexcept is part of the type).
using kernel_fn = void (*)(void* user_data, tile t) noexcept;

//===-- command_buffer ------------------------------------------------------===//

/// A recorded sequence of regions of tiled dispatches; see the file comment.
///
/// Example:
///
///   causal::command_buffer cb;
///   (void)cb.dispatch(&scale, &args, 10'000);      // region 0
///   (void)cb.dispatch(&bias, &args, 10'000);       // region 0, too
///   cb.barrier();
///   (void)cb.dispatch(&reduce, &args, 1);          // region 1
class command_buffer {
 public:
  /// One recorded dispatch. `first_tile` is its first tile's number within
  /// its region (the sum of the tile counts of the dispatches before it).
  struct dispatch_record {
    kernel_fn kernel = nullptr;
    void* user_data = nullptr;
    std::uint32_t tiles = 0;
    std::uint32_t tile_size = 1;
    std::uint32_t first_tile = 0;
  };
  /// One region: dispatches [first_dispatch, first_dispatch + dispatch_count)
  /// with `tiles` tiles in all.
  struct region_record {
    std::uint32_t first_dispatch = 0;
    std::uint32_t dispatch_count = 0;
    std::uint32_t tiles = 0;
  };

  /// Most tiles one region may hold (the claim word's low half).
  static constexpr std::uint32_t max_region_tiles = 0xffff'ffffu;
  /// Most regions (the claim word's high half; one epoch means "done").
  static constexpr std::size_t max_regions = 0xffff'fffeu;
  /// Most dispatches in one buffer.
  static constexpr std::size_t max_dispatches = 0xffff'ffffu;

  command_buffer() = default;

  /// Reserves room so that recording up to these counts does not allocate.
  /// May throw std::bad_alloc.
  void reserve(std::size_t dispatches, std::size_t regions) {
    dispatches_.reserve(dispatches);
    regions_.reserve(regions);
  }

  /// Records `kernel(user_data, tile)` for each of `tiles` tiles in the
  /// current region (opening one if the last was ended by a barrier).
  /// A dispatch of 0 tiles records nothing and succeeds. Returns
  /// invalid_argument for a null kernel or a tile size of 0, and
  /// capacity_exceeded when the region would hold more than
  /// max_region_tiles tiles or the buffer more than max_regions regions or
  /// max_dispatches dispatches; on error nothing is recorded. May throw
  /// std::bad_alloc (vector growth; see reserve()).
  status dispatch(kernel_fn kernel, void* user_data, std::uint32_t tiles,
                  std::uint32_t tile_size = 1) {
    if (kernel == nullptr) return error{errc::invalid_argument, "command_buffer: null kernel"};
    if (tile_size == 0) return error{errc::invalid_argument, "command_buffer: tile size 0"};
    if (tiles == 0) return {};
    if (dispatches_.size() >= max_dispatches) {
      return error{errc::capacity_exceeded, "command_buffer: too many dispatches", dispatches_.size()};
    }
    const bool new_region = !open_;
    if (new_region && regions_.size() >= max_regions) {
      return error{errc::capacity_exceeded, "command_buffer: too many regions", regions_.size()};
    }
    const std::uint32_t before = new_region ? 0 : regions_.back().tiles;
    if (tiles > max_region_tiles - before) {
      return error{errc::capacity_exceeded, "command_buffer: region has more than 2^32-1 tiles",
                   regions_.size() - (new_region ? 0 : 1)};
    }
    // Both pushes happen before any state changes, so a throwing push
    // leaves the buffer as it was (strong guarantee).
    if (new_region) {
      regions_.push_back(region_record{static_cast<std::uint32_t>(dispatches_.size()), 0, 0});
    }
    try {
      dispatches_.push_back(dispatch_record{kernel, user_data, tiles, tile_size, before});
    } catch (...) {
      if (new_region) regions_.pop_back();
      throw;
    }
    region_record& r = regions_.back();
    ++r.dispatch_count;
    r.tiles = before + tiles;
    total_tiles_ += tiles;
    max_parallelism_ = std::max(max_parallelism_, r.tiles);
    open_ = true;
    return {};
  }

  /// Ends the current region: later dispatches start a new one and run
  /// after every tile recorded so far. A barrier with no dispatch since
  /// the last one (or at the start) does nothing.
  void barrier() noexcept { open_ = false; }

  /// Forgets everything recorded (keeps the storage).
  void clear() noexcept {
    dispatches_.clear();
    regions_.clear();
    total_tiles_ = 0;
    max_parallelism_ = 0;
    open_ = false;
  }

  [[nodiscard]] std::span<const region_record> regions() const noexcept { return regions_; }
  [[nodiscard]] std::span<const dispatch_record> dispatches() const noexcept { return dispatches_; }
  [[nodiscard]] std::size_t region_count() const noexcept { return regions_.size(); }
  [[nodiscard]] std::size_t dispatch_count() const noexcept { return dispatches_.size(); }
  [[nodiscard]] bool empty() const noexcept { return regions_.empty(); }
  /// Returns the number of tiles of every region together.
  [[nodiscard]] std::uint64_t tile_count() const noexcept { return total_tiles_; }
  /// Returns the largest region's tile count (its parallelism), 0 if empty.
  [[nodiscard]] std::uint32_t max_parallelism() const noexcept { return max_parallelism_; }

 private:
  std::vector<dispatch_record> dispatches_;
  std::vector<region_record> regions_;
  std::uint64_t total_tiles_ = 0;
  std::uint32_t max_parallelism_ = 0;
  bool open_ = false;  // the last region takes further dispatches
};

//===-- traits and options --------------------------------------------------===//

/// Compile-time tuning of basic_block_processor. Derive and override.
struct default_block_processor_traits {
  /// Most tiles one CAS claims (the guided chunk's upper bound). Larger
  /// amortises the contended claim CAS over more tiles; smaller balances
  /// kernels of uneven cost better early in a region (guided chunks shrink
  /// to 1 tile at its end either way). Measured, 65 536 empty tiles in one
  /// region on 2 workers (bench/block_processor_bench.cpp, 2-vCPU Xeon VM,
  /// 2026-11-23): 8 -> 12-15 ns/tile, 32 -> 3.4-3.8, 128 -> 1.8-2.4.
  static constexpr std::uint32_t max_claim = 32;

  /// Most tiles one drain() call runs (across regions) before returning
  /// to the executor. Bounds how long a worker stays away from other
  /// processes and how late a cancel() is seen (one quantum per worker).
  /// A return costs ~30 ns (same bench: 64 adds ~0.4 ns/tile over 256 on
  /// one worker); 1024 gained nothing measurable over 256. Lower it for
  /// long kernels.
  static constexpr std::uint32_t drain_quantum = 256;
};

/// Checks the members basic_block_processor reads; values are checked by
/// static_asserts in the class.
template <class T>
concept block_processor_traits = requires {
  { T::max_claim } -> std::convertible_to<std::uint32_t>;
  { T::drain_quantum } -> std::convertible_to<std::uint32_t>;
};

/// Run-time settings of a block processor.
struct block_options {
  /// Largest wake budget the processor asks for (budgets above 2^24-1 are
  /// clamped by the executor anyway).
  static constexpr std::uint32_t unlimited = 0xff'ffffu;
  /// Caps the wake budget: a region asks for min(tiles, max_workers)
  /// workers. 1 makes every budget 1, so the executor drains the process
  /// one worker at a time and the drain takes the exclusive path (use it,
  /// or ex.worker_count(), on an executor with one worker). 0 means 1.
  std::uint32_t max_workers = unlimited;
};

namespace detail {

/// The block processor's own fields, grouped by writer, one line each.
struct alignas(CAUSAL_CACHELINE_SIZE) block_state {
  //===-- line 0: immutable after construction (read by every drainer) --===//
  const command_buffer::region_record* regions = nullptr;
  const command_buffer::dispatch_record* dispatches = nullptr;
  const command_buffer* commands = nullptr;
  std::uint32_t region_count = 0;
  std::uint32_t cap = block_options::unlimited;
  std::uint32_t initial_budget = 1;

  //===-- line 1: claimers --===//
  /// region epoch (high 32) | next unclaimed tile of that region (low 32).
  alignas(CAUSAL_CACHELINE_SIZE) std::atomic<std::uint64_t> claim{0};

  //===-- line 2: finishers and the region's completer --===//
  /// Tiles of the current region that have returned.
  alignas(CAUSAL_CACHELINE_SIZE) std::atomic<std::uint32_t> finished{0};
  /// The wake budget last set. Written only by whoever advances the region
  /// (the completer; successive completers are ordered by the claim word).
  std::uint32_t budget = 1;
};

static_assert(std::is_standard_layout_v<block_state>, "block_state must be standard-layout");
static_assert(offsetof(block_state, initial_budget) + sizeof(std::uint32_t) <= CAUSAL_CACHELINE_SIZE,
              "block_state: immutable fields must fit line 0");
static_assert(offsetof(block_state, claim) == CAUSAL_CACHELINE_SIZE,
              "block_state: the claim word must start line 1");
static_assert(offsetof(block_state, finished) == 2 * CAUSAL_CACHELINE_SIZE,
              "block_state: the finished count must start line 2");
static_assert(sizeof(block_state) == 3 * CAUSAL_CACHELINE_SIZE, "block_state is three cache lines");

[[nodiscard]] constexpr std::uint64_t pack_claim(std::uint32_t epoch, std::uint32_t next) noexcept {
  return (std::uint64_t{epoch} << 32) | next;
}
[[nodiscard]] constexpr std::uint32_t claim_epoch(std::uint64_t word) noexcept {
  return static_cast<std::uint32_t>(word >> 32);
}
[[nodiscard]] constexpr std::uint32_t claim_tile(std::uint64_t word) noexcept {
  return static_cast<std::uint32_t>(word);
}

}  // namespace detail

//===-- basic_block_processor -----------------------------------------------===//

/// A process that runs a command buffer's regions of tiled dispatches on
/// every worker that drains it; see the file comment.
///
/// Traits (block_processor_traits): max_claim, drain_quantum; see
/// default_block_processor_traits.
///
/// The process base is public: submit it, give it dependents, a scope, a
/// completion and a release callback, or cancel it like any process. Its
/// user_data is left to the caller. Do not replace its drain function.
///
/// Example:
///
///   causal::block_processor bp(cb);
///   bp.set_completion(&on_done);
///   executor.submit(bp);
template <block_processor_traits Traits = default_block_processor_traits>
class basic_block_processor : public process {
  static_assert(Traits::max_claim >= 1, "Traits::max_claim must be at least 1");
  static_assert(Traits::drain_quantum >= 1, "Traits::drain_quantum must be at least 1");

 public:
  using traits_type = Traits;

  /// Constructs a processor for `commands` (which must stay alive and
  /// unchanged until the processor is released): suspend count 1 (the
  /// submit hold), wake budget from the first region (file comment).
  explicit basic_block_processor(const command_buffer& commands, block_options options = {}) noexcept
      : process(&drain_thunk, nullptr) {
    point_at(commands, options);
  }

  basic_block_processor(const basic_block_processor&) = delete;
  basic_block_processor& operator=(const basic_block_processor&) = delete;

  /// Points the processor at another command buffer (same rules as the
  /// constructor's) and runs it from its first region once activated:
  /// submit() it if it never was, else rearm() it. This is how a queue
  /// process issues one command buffer after another through a single
  /// processor. Preconditions: never submitted, or completed and released.
  void reset(const command_buffer& commands, block_options options = {}) noexcept {
    CAUSAL_ASSERT(!is_submitted() || is_complete(),
                  "block_processor::reset: processor still running");
    point_at(commands, options);
    s_.claim.store(0, std::memory_order_relaxed);
    s_.finished.store(0, std::memory_order_relaxed);
  }

  /// Runs the command buffer again from its first region: resets the
  /// claim state and the wake budget, then process::rearm(suspend_count).
  /// Preconditions: completed and released (no worker inside drain()).
  void rearm(std::uint32_t suspend_count) noexcept {
    s_.claim.store(0, std::memory_order_relaxed);
    s_.finished.store(0, std::memory_order_relaxed);
    s_.budget = s_.initial_budget;
    // The process is complete, so this only stores the budget; rearm()
    // below publishes everything with the wake that activates the process.
    set_wake_budget(s_.initial_budget);
    process::rearm(suspend_count);
  }

 private:
  /// The constructor's and reset()'s common part: takes the buffer's
  /// regions and picks the first wake budget.
  void point_at(const command_buffer& commands, block_options options) noexcept {
    const std::span<const command_buffer::region_record> regions = commands.regions();
    s_.regions = regions.data();
    s_.dispatches = commands.dispatches().data();
    s_.commands = &commands;
    s_.region_count = static_cast<std::uint32_t>(regions.size());
    s_.cap = std::clamp<std::uint32_t>(options.max_workers, 1, block_options::unlimited);
    std::uint32_t b = s_.region_count == 0 ? 1 : budget_for(0);
    // A listed process stays listed for the whole run: ask for a compute
    // slot when any later region can use more than one worker.
    if (b == 1 && s_.cap > 1 && commands.max_parallelism() > 1) b = 2;
    s_.initial_budget = b;
    s_.budget = b;
    set_wake_budget(b);
  }

 public:
  //===-- observers --===//

  [[nodiscard]] const command_buffer& commands() const noexcept { return *s_.commands; }
  [[nodiscard]] std::uint32_t region_count() const noexcept { return s_.region_count; }
  /// Returns the region being run (region_count() once all have finished).
  /// A snapshot: it may be stale by the time it is read.
  [[nodiscard]] std::uint32_t current_region() const noexcept {
    return detail::claim_epoch(s_.claim.load(std::memory_order_acquire));
  }
  /// Returns the wake budget a region asks for: min(tiles, max_workers).
  [[nodiscard]] std::uint32_t region_budget(std::uint32_t region) const noexcept {
    CAUSAL_ASSERT(region < s_.region_count, "block_processor: region out of range");
    return budget_for(region);
  }

 private:
  [[nodiscard]] std::uint32_t budget_for(std::uint32_t region) const noexcept {
    return std::min(s_.regions[region].tiles, s_.cap);
  }

  /// Sets the wake budget for `region` (about to be published) if it
  /// differs from the last one set. Only the region's advancer calls it.
  void enter_budget(std::uint32_t region) noexcept {
    const std::uint32_t b = budget_for(region);
    if (b == s_.budget) return;
    s_.budget = b;
    set_wake_budget(b);
  }

  /// Runs region `r`'s tiles [first, last) on worker `worker`.
  CAUSAL_ALWAYS_INLINE void run_tiles(const command_buffer::region_record& r, std::uint32_t first,
                                      std::uint32_t last, std::uint32_t worker) const noexcept {
    const command_buffer::dispatch_record* d = s_.dispatches + r.first_dispatch;
    if (r.dispatch_count > 1) {
      // The last dispatch whose first tile is <= first.
      d = std::upper_bound(d, d + r.dispatch_count, first,
                           [](std::uint32_t v, const command_buffer::dispatch_record& x) {
                             return v < x.first_tile;
                           }) -
          1;
    }
    std::uint32_t t = first - d->first_tile;
    for (;;) {
      const std::uint32_t n = std::min(d->tiles - t, last - first);
      const kernel_fn kernel = d->kernel;
      void* const data = d->user_data;
      const std::uint32_t count = d->tiles;
      const std::uint32_t size = d->tile_size;
      for (std::uint32_t i = t, end = t + n; i < end; ++i) kernel(data, tile{i, count, size, worker});
      first += n;
      if (first == last) return;
      ++d;
      t = 0;
    }
  }

  static drain_result drain_thunk(process& p, worker_context& ctx) noexcept {
    auto& self = static_cast<basic_block_processor&>(p);
    // file comment, "Exclusive path"
    return self.is_exclusive_drain(ctx) ? self.drain_exclusive(ctx) : self.drain_shared(ctx);
  }

  /// The multi-drainer path: claim chunks by CAS, count them finished,
  /// advance the region when this worker finished its last tile.
  drain_result drain_shared(const worker_context& ctx) noexcept {
    const std::uint32_t worker = ctx.worker_index();
    // Guided chunks over the worker threads (index_bound() - 1; the
    // helper index rarely drains alongside them). See the file comment.
    const std::uint32_t divisor = std::max<std::uint32_t>(ctx.index_bound() - 1, 1);
    std::uint32_t left = Traits::drain_quantum;
    // Tiles this call ran in the current region and has not yet counted.
    // Counting is deferred until nothing is left to claim (or the call
    // returns): the region cannot finish while we hold uncounted tiles,
    // so deferring delays no completion, and it makes the count one RMW
    // per region per drain instead of one per chunk. It also means the
    // epoch cannot move while `pending` is non-zero.
    std::uint32_t pending = 0;
    bool did_work = false;
    // acquire: pairs with the completer's release store of the claim word
    // (advance_shared), so the previous region's effects and the reset of
    // `finished` are visible before we claim in this region.
    std::uint64_t word = s_.claim.load(std::memory_order_acquire);
    for (;;) {
      const std::uint32_t epoch = detail::claim_epoch(word);
      if (epoch >= s_.region_count) return drain_result::complete();
      const command_buffer::region_record& r = s_.regions[epoch];
      const std::uint32_t next = detail::claim_tile(word);
      if (next >= r.tiles || left == 0) {
        if (pending != 0) {
          // acq_rel: the release publishes our tiles' effects; for the
          // completer, the acquire takes in every earlier finisher's
          // release (all adds are RMWs of one release sequence).
          const std::uint32_t before = s_.finished.fetch_add(pending, std::memory_order_acq_rel);
          const bool last = before + pending == r.tiles;
          pending = 0;
          if (last) {
            if (!advance_shared(epoch)) return drain_result::complete();
            word = detail::pack_claim(epoch + 1, 0);
            continue;
          }
        }
        if (left == 0) return drain_result::more();
        // Fully claimed, not yet finished: its last finisher is on it.
        return did_work ? drain_result::more() : drain_result::idle();
      }
      const std::uint32_t k = std::clamp<std::uint32_t>((r.tiles - next) / divisor, 1,
                                                         std::min(Traits::max_claim, left));
      // acquire on both outcomes: success claims tiles of the region the
      // word names (same pairing as the load above); failure re-reads a
      // word that may name a newer region. The epoch in the compared value
      // is what stops a stale claim from landing in a newer region.
      if (!s_.claim.compare_exchange_weak(word, word + k, std::memory_order_acquire,
                                          std::memory_order_acquire)) {
        CAUSAL_DEBUG_ASSERT(pending == 0 || detail::claim_epoch(word) == epoch,
                            "block_processor: region advanced past uncounted tiles");
        continue;
      }
      run_tiles(r, next, next + k, worker);
      left -= k;
      pending += k;
      did_work = true;
      word = s_.claim.load(std::memory_order_acquire);  // as above
    }
  }

  /// The completer of region `epoch` opens the next one; returns false
  /// when `epoch` was the last.
  bool advance_shared(std::uint32_t epoch) noexcept {
    // relaxed: published by the release store below; nobody adds to the
    // count before claiming a tile of the next region, which acquires it.
    s_.finished.store(0, std::memory_order_relaxed);
    const std::uint32_t next_epoch = epoch + 1;
    // The budget is set before the region opens, so successive completers
    // (ordered through the claim word) never race on it.
    if (next_epoch < s_.region_count) enter_budget(next_epoch);
    // release: pairs with the acquire load/CAS of the claim word in
    // drain_shared() of every worker that claims in the next region.
    s_.claim.store(detail::pack_claim(next_epoch, 0), std::memory_order_release);
    return next_epoch < s_.region_count;
  }

  /// The single-drainer path: run tiles in a loop, no read-modify-write.
  drain_result drain_exclusive(const worker_context& ctx) noexcept {
    // relaxed everywhere: we are the only drainer, and the executor's
    // hand-off (list push/take, or the same thread) orders this drain
    // after the previous one.
    const std::uint64_t word = s_.claim.load(std::memory_order_relaxed);
    std::uint32_t epoch = detail::claim_epoch(word);
    std::uint32_t next = detail::claim_tile(word);
    if (epoch < s_.region_count && s_.finished.load(std::memory_order_relaxed) != next) {
      // Tiles claimed by a shared drain have not all returned. Cannot
      // happen with the executor (a run's placement only ever moves from a
      // list to a slot), but the shared path is right in every case.
      return drain_shared(ctx);
    }
    const std::uint32_t worker = ctx.worker_index();
    std::uint32_t left = Traits::drain_quantum;
    while (epoch < s_.region_count) {
      const command_buffer::region_record& r = s_.regions[epoch];
      const std::uint32_t n = std::min(r.tiles - next, left);
      run_tiles(r, next, next + n, worker);
      next += n;
      left -= n;
      if (next != r.tiles) break;  // quantum spent mid-region
      ++epoch;
      next = 0;
      if (epoch < s_.region_count) enter_budget(epoch);
      if (left == 0) break;
    }
    s_.finished.store(next, std::memory_order_relaxed);
    s_.claim.store(detail::pack_claim(epoch, next), std::memory_order_relaxed);
    return epoch >= s_.region_count ? drain_result::complete() : drain_result::more();
  }

  detail::block_state s_;
};

/// The block processor with default traits.
using block_processor = basic_block_processor<>;

CAUSAL_END_NAMESPACE
