// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// pool: a block pool over a caller-owned arena whose freed blocks carry
// *death frontiers*, so that deciding whether a block may be reused costs one
// frontier check instead of one event per use (docs/buffers.md).
//
// Model. The pool hands out (offset, size) ranges of an arena it never
// touches: [0, quota) bytes, every offset a multiple of `alignment`. It never
// allocates memory, neither the arena (the caller's) nor its own metadata (a
// fixed table of MaxBlocks descriptors). `release(b, q)` stores q's
// knowledge frontier with the block as its death frontier, plus the
// *producer entry* q.knowledge_producer(): the freeing operation, normally
// (q.axis(), q.epoch()). Contract: every use of the block, on any queue, is
// ordered before q's operation at q.epoch() (a use on another queue reached
// q through a wait of one of q's submissions); that is what makes the
// producer entry prove the whole death frontier (docs/frontiers.md), even when
// overflow tainted it.
//
// The producer must cover the whole death frontier, and knowledge can be
// ahead of the epoch: a fenced acquire (c) makes q learn a block's old death
// frontier for its *next* operation, and so may the caller's own learn().
// Freed before that operation is submitted, the block's death frontier
// holds entries that (q, epoch) does not prove; the producer is then
// (q, epoch + 1), the operation those waits precede, and the block is
// marked as having a producer that may not be submitted yet. Such a block
// is reused for free once that operation is covered or retired, by q itself
// (its next operation follows the waits), or when the untainted death
// frontier itself is dominated or retired; a fence never waits for the
// unsubmitted producer (that wait might never be satisfied) but for the
// death frontier's entries.
//
// acquire(q, size) takes the first of these that works:
//
//   (a) free reuse, no device work. A free block is reusable by q when
//       q.knowledge() covers its producer entry, or the producer is q's
//       own next operation or an earlier one (FIFO: always true for the
//       queue that freed it), or q.knowledge() dominates the untainted
//       death frontier (`reused_by_knowledge`); or when the completion
//       tracker shows the producer retired, or the producer's registered
//       timeline has reached the producer epoch, untainted, or the tracker
//       `covers` the untainted death frontier (`reused_by_completion`).
//       Among reusable blocks the smallest that fits wins.
//   (b) a fresh carve from the unused tail of the quota (`fresh_carves`).
//   (c) "try before you fence". For each free block that fits,
//       find_undominated(q.knowledge(), death) names the gap and the pool
//       plans the fewest device waits that close it: one wait on the
//       producer's timeline at the producer epoch when that timeline is
//       registered (it proves everything, tainted or not); otherwise, for an
//       untainted death frontier only, one wait per gap entry not yet
//       retired (tracker or timeline), each on that axis's timeline. The
//       block with the fewest waits wins (ties: the smallest); the waits go
//       to q.backend().issue_wait(sem, v),
//       q.learn(death) records what they prove, and the block is reused
//       (`reused_after_wait`, `waits_issued`). The returned pool_block
//       says on what it fenced: `wait_count` waits, the first
//       pool_block::max_reported_waits of them listed in `waits`
//       (timeline, axis, value), so a caller sees what its next operation
//       will wait for. A block whose gap names an axis with no usable
//       timeline cannot be fenced; others are tried.
//   Before (c), when (a) and (b) found nothing, the pool coalesces retired
//   free blocks (below) and retries (a) on the result and (b).
//   Otherwise `errc::resource_exhausted`, and nothing changed but what
//   coalescing did (which only ever makes blocks bigger or fresh space
//   larger).
//
// A tainted death frontier is never reused by dominance alone: it needs its
// producer covered, retired, or waited for. Isolation (docs/buffers.md,
// "Isolation between workloads"): a block freed by an unrelated workload A is
// reused by B with zero waits only once A's axis has retired past the death
// epoch; that path does not import A's frontier, so B's knowledge stays free
// of A's axes. The device waits of (c) are issued outside any submission, so
// they order q's *next* submission and are counted here, not in q.stats().
//
// Blocks are split on reuse (the tail stays free with the same death
// frontier and producer) when a spare descriptor exists. On release a block
// with a producer is merged with each adjacent free block freed by the same
// queue (one scan finds both sides): the merged
// death frontier is the join of both (the queue's axis pinned) and its
// producer the later of the two epochs, which proves both pasts (FIFO).
// Trade-off: a merged block is free for another queue only once it covers
// the later epoch, even for the part freed earlier.
//
// Blocks freed by different queues cannot be merged that way (it would need
// two producer entries) until they have *retired*: a free block is retired
// when its producer is, by the test of (a)'s completion path (the tracker
// shows the producer epoch retired, or the producer's registered timeline
// reached it, untainted), or when the tracker covers its untainted death
// frontier, or when that frontier is empty. A retired block's past
// constrains nobody: every queue may reuse it with no wait. So, lazily, on
// the slow path of acquire (when (a) and (b) found nothing), every run of
// adjacent retired free blocks is coalesced into one *dead* block (no
// producer, empty death frontier: reused by any queue through the
// completion path), and a retired free block at the top of the carved
// range goes back to the fresh tail (`coalesces`, `tail_returns`). A block
// not proven retired is never joined to anything but its own queue's
// frees, and never returned to the tail: it still owes its death frontier.
// Coalescing frees descriptors and reorders the free list (whose order is
// unspecified); it costs O(F + R log R) for F free blocks, R of them
// retired, and never allocates (an in-place partition and sort).
// Releasing while the freeing queue holds deferred (tier 3) submissions is
// refused: their operations have no epoch for the producer entry to cover.
//
// Thread safety: externally synchronised, like a queue: one thread at a time
//                calls acquire/release/register_timeline. The tracker and
//                the timeline semaphores may be advanced concurrently by
//                other threads; the pool only reads them. A registered
//                timeline unregisters itself when destroyed (any order
//                works, docs/lifetimes.md): destroying one counts as a call
//                on the pool.
// Memory order:  no atomics of its own. Reuse by completion relies on the
//                tracker's acquire reads (pairing with its `advance`) and on
//                the semaphore's acquire `value()` (pairing with `signal`).
// Blocking/allocation: never blocks, never allocates, never throws. acquire
//                and release are O(MaxBlocks * frontier size); the slow
//                path (coalescing, then the fence path (c)) is out of line.
// Size:          MaxBlocks * (sizeof(Frontier) + 52) + MaxTimelines * 48
//                bytes plus ~170: 17 064 bytes for the defaults (64 blocks,
//                12-entry frontiers). Descriptors (offset, size, producer,
//                state) sit apart from the death frontiers, so a scan of
//                the free list touches ~48 bytes per block, not ~250.
//                A pool_block is 136 bytes (its inline list of fence
//                waits).
// Configuration: Queue (concept pool_queue: axis, epoch, knowledge, learn,
//                backend().issue_wait), Tracker (concept completion_source,
//                default completion_tracker; optional at run time),
//                MaxBlocks (default 64), MaxTimelines (default 16); quota
//                and alignment at construction.
// See also:      docs/frontiers.md and docs/buffers.md, <causal/queue.hpp>,
//                <causal/completion.hpp>, <causal/semaphore.hpp>.
#pragma once

#include <causal/axis.hpp>
#include <causal/completion.hpp>
#include <causal/config.hpp>
#include <causal/frontier.hpp>
#include <causal/result.hpp>
#include <causal/semaphore.hpp>

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>

CAUSAL_BEGIN_NAMESPACE

//===-- concepts ------------------------------------------------------------===//

/// What a block pool needs from a queue: its axis, epoch and knowledge, the
/// entry that proves that knowledge (`knowledge_producer()`: (axis, epoch),
/// or (axis, epoch + 1) while it holds what was learnt for the next
/// operation, or {axis{0}, 0} when it knows nothing), a way to add
/// knowledge, and a backend that can issue a device wait outside a
/// submission. `basic_queue` satisfies it.
template <class Q>
concept pool_queue =
    frontier_type<typename Q::frontier_type> &&
    requires(Q& q, const Q& cq, const typename Q::frontier_type& f,
             typename Q::semaphore_type& s, std::uint64_t v) {
      { cq.axis() } -> std::same_as<causal::axis>;
      { cq.epoch() } -> std::same_as<std::uint64_t>;
      { cq.knowledge() } -> std::same_as<const typename Q::frontier_type&>;
      { cq.knowledge_producer() } -> std::same_as<frontier_entry>;
      q.learn(f);
      { q.backend().issue_wait(s, v) } -> std::same_as<status>;
    };

/// A read-only view of what has retired: `basic_completion_tracker`
/// satisfies it.
template <class T, class Frontier>
concept completion_source = requires(const T& t, frontier_entry e, const Frontier& f) {
  { t.is_retired(e) } -> std::same_as<bool>;
  { t.covers(f) } -> std::same_as<bool>;
};

//===-- value types ---------------------------------------------------------===//

/// How an acquire obtained its block.
enum class pool_path : std::uint8_t {
  fresh,       ///< carved from the unused tail of the quota
  knowledge,   ///< free reuse: the queue's knowledge proves the death frontier
  completion,  ///< free reuse: the tracker or timeline shows the producer retired
  fenced,      ///< reuse after device waits issued on the acquiring queue
};

[[nodiscard]] constexpr std::string_view to_string(pool_path p) noexcept {
  switch (p) {
    case pool_path::fresh: return "fresh";
    case pool_path::knowledge: return "knowledge";
    case pool_path::completion: return "completion";
    case pool_path::fenced: return "fenced";
  }
  return "unknown";
}

/// One device wait a fenced acquire (path (c)) issued on the acquiring
/// queue: that queue's next operation starts only once the timeline
/// registered for `axis` has reached `value`.
struct pool_wait {
  /// The timeline waited on: the pool's `semaphore_type`, type-erased so
  /// that one block type serves every pool (compare it with `&timeline`).
  const void* semaphore = nullptr;
  /// The axis the timeline is registered for.
  causal::axis axis{};
  std::uint64_t value = 0;

  friend constexpr bool operator==(const pool_wait&, const pool_wait&) noexcept = default;
};

/// A block handed out by a pool: bytes [offset, offset + size) of the
/// caller's arena. `index`, `generation` and `owner` identify the lifetime,
/// so a stale or foreign handle is rejected by release. A fenced acquire
/// also says on what it fenced (`wait_count`, `waits`); release ignores
/// that part. 136 bytes, never allocates.
struct pool_block {
  /// Fence waits listed inline; more are counted in `wait_count` only.
  static constexpr std::size_t max_reported_waits = 4;

  std::size_t offset = 0;
  std::size_t size = 0;
  std::uint32_t index = 0;
  std::uint32_t generation = 0;
  const void* owner = nullptr;
  /// How the acquire got it (informational; release ignores it).
  pool_path path = pool_path::fresh;
  /// The device waits this acquire issued on the acquiring queue (path
  /// (c) only, else 0): all of them are counted here; `waits` lists the
  /// first min(wait_count, max_reported_waits), in the order issued.
  std::uint32_t wait_count = 0;
  std::array<pool_wait, max_reported_waits> waits{};

  /// Returns the listed fence waits (at most max_reported_waits; see
  /// wait_count for how many were issued).
  [[nodiscard]] std::span<const pool_wait> reported_waits() const noexcept {
    return {waits.data(), wait_count < max_reported_waits ? wait_count : max_reported_waits};
  }
};

/// What a pool did, cumulatively. Plain counters, read with stats().
struct pool_stats {
  std::uint64_t reused_by_knowledge = 0;   ///< (a): knowledge proved it
  std::uint64_t reused_by_completion = 0;  ///< (a): tracker/timeline showed it retired
  std::uint64_t reused_after_wait = 0;     ///< (c): reused after device waits
  std::uint64_t waits_issued = 0;          ///< (c): device waits issued in total
  std::uint64_t fresh_carves = 0;          ///< (b): carved from the quota
  std::uint64_t failures = 0;              ///< acquires that returned an error
  std::uint64_t releases = 0;              ///< successful releases
  std::uint64_t splits = 0;                ///< reuses that left a free tail
  std::uint64_t merges = 0;                ///< adjacent same-producer frees merged
  std::uint64_t coalesces = 0;             ///< adjacent retired free blocks joined
  std::uint64_t tail_returns = 0;          ///< retired top blocks given back to the tail

  [[nodiscard]] constexpr std::uint64_t acquires() const noexcept {
    return reused_by_knowledge + reused_by_completion + reused_after_wait + fresh_carves;
  }
  friend constexpr bool operator==(const pool_stats&, const pool_stats&) noexcept = default;
};

/// A read-only view of one free block (for diagnostics and tests); valid
/// until the pool's next acquire or release.
template <class Frontier>
struct pool_free_block {
  std::size_t offset = 0;
  std::size_t size = 0;
  /// The freeing operation, or {axis{0}, 0} when the freeing queue knew
  /// nothing.
  frontier_entry producer{};
  const Frontier* death = nullptr;
  /// True when the producer was the freeing queue's next operation, which
  /// may not have been submitted yet (see the pool's file comment).
  bool producer_ahead = false;
  /// True for a block coalesced from retired blocks: it owes nothing
  /// (no producer, empty death frontier); any queue reuses it for free.
  bool dead = false;
};

//===-- basic_block_pool ----------------------------------------------------===//

/// A quota of arena bytes handed out as blocks whose frees carry death
/// frontiers; see the file comment.
///
/// Template parameters:
/// - `Queue`: the queue type acquiring and freeing (a `pool_queue`).
/// - `Tracker`: a `completion_source` (default `completion_tracker`); the
///   pool holds an optional pointer to one.
/// - `MaxBlocks`: descriptors (live + free blocks), 1 to 65535.
/// - `MaxTimelines`: axis -> timeline registrations, at least 1.
template <pool_queue Queue, class Tracker = completion_tracker, std::size_t MaxBlocks = 64,
          std::size_t MaxTimelines = 16>
  requires completion_source<Tracker, typename Queue::frontier_type>
class basic_block_pool {
  static_assert(MaxBlocks >= 1, "basic_block_pool: MaxBlocks must be at least 1");
  static_assert(MaxBlocks <= 65535, "basic_block_pool: MaxBlocks must be at most 65535");
  static_assert(MaxTimelines >= 1, "basic_block_pool: MaxTimelines must be at least 1");

 public:
  using queue_type = Queue;
  using tracker_type = Tracker;
  using frontier_type = typename Queue::frontier_type;
  using semaphore_type = typename Queue::semaphore_type;
  using block = pool_block;
  using free_block_view = pool_free_block<frontier_type>;

  static constexpr std::size_t max_blocks = MaxBlocks;
  static constexpr std::size_t max_timelines = MaxTimelines;

  /// Creates a pool of `quota` bytes whose offsets and sizes are multiples
  /// of `alignment`, reading retirements from `tracker` when not null.
  /// A zero or non-power-of-two `alignment` leaves the pool unusable: every
  /// acquire then fails with `errc::invalid_argument` (see setup_status()).
  explicit basic_block_pool(std::size_t quota, std::size_t alignment = alignof(std::max_align_t),
                            const Tracker* tracker = nullptr) noexcept
      : quota_(quota), alignment_(alignment), tracker_(tracker) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
      setup_ = error{errc::invalid_argument, "block pool: alignment must be a power of two",
                     alignment};
    }
    for (std::size_t i = 0; i < MaxBlocks; ++i) {
      spare_[i] = static_cast<std::uint16_t>(MaxBlocks - 1 - i);  // pop gives 0, 1, 2, ...
    }
    spare_count_ = MaxBlocks;
  }

  basic_block_pool(const basic_block_pool&) = delete;
  /// Unregisters every timeline (see register_timeline).
  ~basic_block_pool() {
    for (std::size_t i = 0; i < timeline_count_; ++i) {
      detail::remove_holder_if_able(*timelines_[i].semaphore, holders_[i]);
    }
  }
  basic_block_pool& operator=(const basic_block_pool&) = delete;

  //===-- configuration ---------------------------------------------------===//

  /// Ok, or why the constructor's arguments make the pool unusable.
  [[nodiscard]] status setup_status() const noexcept { return setup_; }

  /// Reads retirements from `tracker` from now on (nullptr: none).
  void attach_tracker(const Tracker* tracker) noexcept { tracker_ = tracker; }

  /// Declares `timeline` as the timeline of axis `a`: its value v means
  /// that `a`'s epoch v has retired. Fence waits on `a` go to it.
  /// Errors: axis 0 or an axis already registered (`invalid_argument`), a
  /// full table (`capacity_exceeded`). Nothing changes on error.
  status register_timeline(causal::axis a, semaphore_type& progress) noexcept {
    if (a.raw() == 0) {
      return error{errc::invalid_argument, "register_timeline: axis 0 is reserved"};
    }
    if (find_timeline(a) != nullptr) {
      return error{errc::invalid_argument, "register_timeline: axis already has a timeline",
                   a.raw()};
    }
    if (timeline_count_ == MaxTimelines) {
      return error{errc::capacity_exceeded, "register_timeline: MaxTimelines timelines registered",
                   MaxTimelines};
    }
    timelines_[timeline_count_] = timeline_entry{a, &progress};
    // A timeline destroyed before the pool unregisters itself (holder
    // withdraw): later fences never name a dead semaphore.
    holders_[timeline_count_].pool = this;
    holders_[timeline_count_].withdraw = &withdraw_timeline;
    detail::add_holder_if_able(progress, holders_[timeline_count_]);
    ++timeline_count_;
    return {};
  }

  /// Forgets the timeline of `a` (before the semaphore is destroyed).
  /// Error: none registered (`invalid_argument`).
  status unregister_timeline(causal::axis a) noexcept {
    for (std::size_t i = 0; i < timeline_count_; ++i) {
      if (timelines_[i].axis == a) {
        detail::remove_holder_if_able(*timelines_[i].semaphore, holders_[i]);
        forget_timeline_at(i);
        return {};
      }
    }
    return error{errc::invalid_argument, "unregister_timeline: axis has no timeline", a.raw()};
  }

  //===-- observers ---------------------------------------------------------===//

  [[nodiscard]] std::size_t quota() const noexcept { return quota_; }
  [[nodiscard]] std::size_t alignment() const noexcept { return alignment_; }
  /// Bytes carved from the quota so far (live and free blocks).
  [[nodiscard]] std::size_t carved() const noexcept { return carved_; }
  /// Bytes still never carved.
  [[nodiscard]] std::size_t fresh_bytes() const noexcept { return quota_ - carved_; }
  [[nodiscard]] std::size_t live_count() const noexcept {
    return MaxBlocks - spare_count_ - free_count_;
  }
  [[nodiscard]] std::size_t free_count() const noexcept { return free_count_; }
  /// Bytes held by free blocks.
  [[nodiscard]] std::size_t free_bytes() const noexcept {
    std::size_t n = 0;
    for (std::size_t i = 0; i < free_count_; ++i) n += desc_[free_[i]].size;
    return n;
  }
  [[nodiscard]] const pool_stats& stats() const noexcept { return stats_; }

  /// Returns free block `i` (0 <= i < free_count(), in no particular order).
  [[nodiscard]] free_block_view free_block(std::size_t i) const noexcept {
    CAUSAL_ASSERT(i < free_count_, "free_block: index out of range");
    const descriptor& d = desc_[free_[i]];
    return free_block_view{d.offset, d.size, d.producer, &deaths_[free_[i]], d.producer_ahead,
                           d.dead};
  }

  //===-- acquire / release -----------------------------------------------===//

  /// Returns a block of at least `size` bytes (rounded up to the alignment)
  /// that `q` may use: reused for free, carved fresh, reused after
  /// coalescing retired free blocks, or reused after the fewest device
  /// waits issued on `q` (see the file comment); a fenced block lists
  /// those waits (`wait_count`, `waits`).
  ///
  /// Errors (nothing changes but `stats().failures`, and what coalescing
  /// did): `invalid_argument` for size 0 or an unusable pool;
  /// `capacity_exceeded` when the request can never fit the quota;
  /// `resource_exhausted` when nothing fits now (retry after more work
  /// retires or more blocks are released); a backend's issue_wait error
  /// (the block stays free; waits already issued only delay q).
  ///
  /// Complexity: O(free blocks * frontier size); the slow path adds
  /// O(free blocks * (frontier size + timelines)) and a sort of the
  /// retired free blocks.
  result<block> acquire(Queue& q, std::size_t size) noexcept {
    if (!setup_) [[unlikely]] {
      return failed(setup_.error_value());
    }
    if (size == 0) [[unlikely]] {
      return failed(error{errc::invalid_argument, "acquire: size 0"});
    }
    if (size > quota_ || size > std::numeric_limits<std::size_t>::max() - (alignment_ - 1))
        [[unlikely]] {
      return failed(error{errc::capacity_exceeded, "acquire: request larger than the pool's quota",
                          size});
    }
    const std::size_t need = (size + alignment_ - 1) & ~(alignment_ - 1);
    if (need > quota_) [[unlikely]] {
      return failed(error{errc::capacity_exceeded,
                          "acquire: request, rounded up to the alignment, larger than the quota",
                          need});
    }
    // (a) free reuse: the smallest reusable block that fits.
    std::size_t best = npos;
    pool_path best_path = pool_path::knowledge;
    for (std::size_t i = 0; i < free_count_; ++i) {
      const descriptor& d = desc_[free_[i]];
      if (d.size < need || (best != npos && d.size >= desc_[free_[best]].size)) continue;
      const pool_path p = free_path(q, free_[i]);
      if (p == pool_path::fresh) continue;  // not reusable for free
      best = i;
      best_path = p;
      if (d.size == need) break;
    }
    if (best != npos) [[likely]] {
      return take(best, need, best_path);
    }
    // (b) fresh space.
    if (quota_ - carved_ >= need && spare_count_ != 0) {
      return carve(need);
    }
    return acquire_slow(q, need);
  }

  /// Returns the error `release(b, freeing_queue)` would return now, or
  /// success (then release would succeed if called at once); changes
  /// nothing. For callers that must know a release will succeed before
  /// they commit to something else (a queue submitting the freeing
  /// operation first).
  [[nodiscard]] status check_release(const block& b, const Queue& freeing_queue) const noexcept {
    if (b.owner != this) {
      return error{errc::invalid_argument, "release: block belongs to another pool"};
    }
    if (b.index >= MaxBlocks) {
      return error{errc::invalid_argument, "release: block index out of range", b.index};
    }
    const descriptor& d = desc_[b.index];
    if (d.state != block_state::live || d.generation != b.generation) {
      return error{errc::failed_precondition,
                   "release: block is not live (released twice, or a stale handle)", b.offset};
    }
    if (d.offset != b.offset || d.size != b.size) {
      return error{errc::invalid_argument, "release: handle does not match the pool's block",
                   b.offset};
    }
    if constexpr (requires { freeing_queue.deferred_count(); }) {
      // A submission held on the host (tier 3) has no epoch yet: a use in it
      // would not be ordered before the producer entry we would record.
      if (freeing_queue.deferred_count() != 0) {
        return error{errc::failed_precondition,
                     "release: the freeing queue holds deferred submissions; pump() it first",
                     freeing_queue.deferred_count()};
      }
    }
    return {};
  }

  /// Frees `b`: its death frontier becomes `freeing_queue.knowledge()` and
  /// its producer entry `freeing_queue.knowledge_producer()` (normally
  /// (axis, epoch); the next epoch when the queue learnt something since its
  /// last submission). Precondition (the contract in the file comment):
  /// every use of `b` is ordered before freeing_queue's operation at its
  /// current epoch.
  ///
  /// Errors (nothing changes): `invalid_argument` for a block of another
  /// pool or a forged handle; `failed_precondition` for a block that is not
  /// live (released twice, or a stale handle from an earlier lifetime), or
  /// when `freeing_queue` holds deferred submissions (their operations have
  /// no epoch yet, so the producer entry could not cover them).
  status release(const block& b, const Queue& freeing_queue) noexcept {
    if (status s = check_release(b, freeing_queue); !s) return s;
    descriptor& d = desc_[b.index];
    deaths_[b.index] = freeing_queue.knowledge();
    // The producer must prove the whole death frontier: with knowledge
    // learnt for the next operation (a fenced acquire's waits), that is the
    // next operation, not the current epoch's.
    d.producer = freeing_queue.knowledge_producer();
    d.producer_ahead = d.producer.epoch > freeing_queue.epoch();
    d.dead = false;
    d.state = block_state::free;
    free_[free_count_++] = static_cast<std::uint16_t>(b.index);
    ++stats_.releases;
    if (d.producer.epoch != 0) merge_neighbours(static_cast<std::uint16_t>(b.index));
    return {};
  }

 private:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  enum class block_state : std::uint8_t { unused, live, free };

  struct descriptor {
    std::size_t offset = 0;
    std::size_t size = 0;
    std::uint32_t generation = 0;
    block_state state = block_state::unused;
    frontier_entry producer{};
    /// The producer is the freeing queue's next operation, perhaps not
    /// submitted yet: never the target of a fence wait.
    bool producer_ahead = false;
    /// Coalesced from retired blocks: owes nothing (no producer, empty
    /// death frontier), reusable by any queue for free.
    bool dead = false;
    /// Scratch for coalesce_retired(): proven retired in this pass.
    bool retired_mark = false;
  };

  struct timeline_entry {
    causal::axis axis{};
    semaphore_type* semaphore = nullptr;
  };

  /// The pool's link on a registered timeline (semaphore_holder): the
  /// semaphore's destructor calls withdraw_timeline.
  struct timeline_holder : detail::semaphore_holder {
    basic_block_pool* pool = nullptr;
  };

  static void withdraw_timeline(detail::semaphore_holder& h) noexcept {
    timeline_holder& th = static_cast<timeline_holder&>(h);
    basic_block_pool& self = *th.pool;
    self.forget_timeline_at(static_cast<std::size_t>(&th - self.holders_.data()));
  }

  /// Drops entry `i` (its holder already unlinked), moving the last entry
  /// into its place and its holder link with it.
  void forget_timeline_at(std::size_t i) noexcept {
    const std::size_t last = --timeline_count_;
    if (i != last) {
      detail::remove_holder_if_able(*timelines_[last].semaphore, holders_[last]);
      timelines_[i] = timelines_[last];
      holders_[i].pool = this;
      holders_[i].withdraw = &withdraw_timeline;
      detail::add_holder_if_able(*timelines_[i].semaphore, holders_[i]);
    }
    timelines_[last] = timeline_entry{};
  }

  /// One planned device wait.
  struct fence_wait {
    semaphore_type* semaphore = nullptr;
    causal::axis axis{};
    std::uint64_t value = 0;
  };
  using fence_plan = std::array<fence_wait, frontier_type::capacity>;

  result<block> failed(const error& e) noexcept {
    ++stats_.failures;
    return e;
  }

  [[nodiscard]] semaphore_type* find_timeline(causal::axis a) const noexcept {
    for (std::size_t i = 0; i < timeline_count_; ++i) {
      if (timelines_[i].axis == a) return timelines_[i].semaphore;
    }
    return nullptr;
  }

  /// True when `e` has retired as far as the tracker or e's timeline knows
  /// (a timeline value counts only when untainted and not failed).
  [[nodiscard]] bool retired(frontier_entry e) const noexcept {
    if (tracker_ != nullptr && tracker_->is_retired(e)) return true;
    const semaphore_type* tl = find_timeline(e.axis);
    return tl != nullptr && tl->value() >= e.epoch && !tl->failed() && !tl->is_tainted(e.epoch);
  }

  /// The free path of block `idx` for `q`, or pool_path::fresh when it has
  /// none.
  [[nodiscard]] pool_path free_path(const Queue& q, std::uint16_t idx) const noexcept {
    const descriptor& d = desc_[idx];
    if (d.dead) return pool_path::completion;  // retired before it was coalesced
    const frontier_type& known = q.knowledge();
    if (d.producer.epoch != 0) {
      // Covering the producer proves the whole past, tainted or not (docs/frontiers.md).
      if (known.epoch_of(d.producer.axis) >= d.producer.epoch) return pool_path::knowledge;
      // FIFO: q's next operation follows every operation and wait issued on
      // q so far, so a producer up to that operation is proven for q.
      if (d.producer.axis == q.axis() && d.producer.epoch <= q.epoch() + 1) {
        return pool_path::knowledge;
      }
      if (retired(d.producer)) return pool_path::completion;
    }
    // The death frontier itself (the freeing queue's knowledge, holding its
    // own entry) proves every use when it is untainted: dominates and
    // covers are false for a tainted one.
    if (dominates(known, deaths_[idx])) return pool_path::knowledge;
    if (tracker_ != nullptr && tracker_->covers(deaths_[idx])) return pool_path::completion;
    return pool_path::fresh;
  }

  /// Whether a device wait on `tl` at `v` may be issued by `q`'s backend.
  [[nodiscard]] static bool waitable(Queue& q, const semaphore_type& tl, std::uint64_t v) noexcept {
    if (tl.failed()) return false;  // the wait could never be satisfied
    using backend_t = std::remove_cvref_t<decltype(q.backend())>;
    if constexpr (requires { backend_t::waits_before_signal; }) {
      if constexpr (!backend_t::waits_before_signal) {
        // Binary events cannot wait for a value nobody has submitted yet.
        if constexpr (requires { tl.state_of(v); }) {
          if (tl.state_of(v) == value_state::unsubmitted) return false;
        }
      }
    }
    return true;
  }

  /// Plans the waits that prove `d` for `q`; returns their number, or npos
  /// when some gap has no usable timeline (or the frontier is tainted and
  /// the producer cannot be waited for). Fills `plan` when not null.
  std::size_t plan_fence(Queue& q, std::uint16_t idx, fence_plan* plan) const noexcept {
    const descriptor& d = desc_[idx];
    const frontier_type& death = deaths_[idx];
    // An ahead producer may never be submitted (its queue may stop): a wait
    // on it could hang q for good, so only the death frontier's entries are
    // waited for then.
    if (d.producer.epoch != 0 && !d.producer_ahead) {
      semaphore_type* tl = find_timeline(d.producer.axis);
      if (tl != nullptr && waitable(q, *tl, d.producer.epoch)) {
        if (plan != nullptr) (*plan)[0] = fence_wait{tl, d.producer.axis, d.producer.epoch};
        return 1;
      }
    }
    // Entry by entry: sound only when no entry is missing.
    if (death.tainted()) return npos;
    const frontier_type gaps = find_undominated(q.knowledge(), death);
    std::size_t n = 0;
    for (const frontier_entry g : gaps) {
      if (retired(g)) continue;
      semaphore_type* tl = find_timeline(g.axis);
      if (tl == nullptr || !waitable(q, *tl, g.epoch)) return npos;
      if (plan != nullptr) (*plan)[n] = fence_wait{tl, g.axis, g.epoch};
      ++n;
    }
    return n;
  }

  /// True when every use of free block `idx` is known to have finished,
  /// for every queue (the tests of (a)'s completion path, plus an empty
  /// death frontier): it may be coalesced or returned to the fresh tail.
  [[nodiscard]] bool proven_retired(std::uint16_t idx) const noexcept {
    const descriptor& d = desc_[idx];
    if (d.dead) return true;
    // Covering the producer proves the whole past, tainted or not.
    if (d.producer.epoch != 0 && retired(d.producer)) return true;
    const frontier_type& death = deaths_[idx];
    if (death.tainted()) return false;  // only the producer can prove it
    // An empty death frontier: freed by a queue that knew nothing, before
    // its first operation, so no use can have been ordered before it.
    if (death.empty()) return true;
    return tracker_ != nullptr && tracker_->covers(death);
  }

  /// Joins each run of adjacent retired free blocks into one dead block,
  /// and gives a retired free block at the top of the carved range back to
  /// the fresh tail. Returns true when it changed anything. In place: the
  /// retired blocks are partitioned to the front of free_ and sorted by
  /// offset there (std::partition and std::sort never allocate).
  bool coalesce_retired() noexcept {
    std::size_t retired_count = 0;
    bool at_top = false;
    for (std::size_t i = 0; i < free_count_; ++i) {
      descriptor& d = desc_[free_[i]];
      d.retired_mark = proven_retired(free_[i]);
      if (!d.retired_mark) continue;
      ++retired_count;
      at_top = at_top || d.offset + d.size == carved_;
    }
    if (retired_count < 2 && !at_top) return false;  // nothing to join or return
    std::uint16_t* const first = free_.data();
    std::uint16_t* const last = first + free_count_;
    std::uint16_t* const middle = std::partition(
        first, last, [this](std::uint16_t i) noexcept { return desc_[i].retired_mark; });
    std::sort(first, middle, [this](std::uint16_t a, std::uint16_t b) noexcept {
      return desc_[a].offset < desc_[b].offset;
    });
    bool changed = false;
    std::size_t kept = 0;
    for (std::size_t i = 0; i < retired_count; ++i) {
      const std::uint16_t idx = free_[i];
      if (kept != 0) {
        const std::uint16_t run = free_[kept - 1];
        if (desc_[run].offset + desc_[run].size == desc_[idx].offset) {
          make_dead(run);
          desc_[run].size += desc_[idx].size;
          recycle_descriptor(idx);
          ++stats_.coalesces;
          changed = true;
          continue;
        }
      }
      free_[kept++] = idx;
    }
    // Close the gap before the blocks not proven retired (kept <= i).
    for (std::size_t i = retired_count; i < free_count_; ++i) {
      free_[kept + (i - retired_count)] = free_[i];
    }
    free_count_ = kept + (free_count_ - retired_count);
    // The highest retired block, at the top of the carved range, owes
    // nothing: its bytes are fresh again.
    if (kept != 0) {
      const std::uint16_t top = free_[kept - 1];
      if (desc_[top].offset + desc_[top].size == carved_) {
        carved_ = desc_[top].offset;
        remove_free(kept - 1);
        recycle_descriptor(top);
        ++stats_.tail_returns;
        changed = true;
      }
    }
    return changed;
  }

  /// Makes free block `idx` owe nothing (precondition: proven retired).
  void make_dead(std::uint16_t idx) noexcept {
    descriptor& d = desc_[idx];
    if (d.dead) return;
    d.dead = true;
    d.producer = {};
    d.producer_ahead = false;
    deaths_[idx] = frontier_type{};
  }

  /// Returns descriptor `idx` (no longer a block) to the spare stack.
  void recycle_descriptor(std::uint16_t idx) noexcept {
    descriptor& d = desc_[idx];
    d.state = block_state::unused;
    d.dead = false;
    spare_[spare_count_++] = idx;
  }

  /// The slow path, when neither (a) nor (b) found anything: coalesce
  /// retired free blocks, retry (a) on the dead blocks that made and (b),
  /// then (c).
  CAUSAL_NOINLINE result<block> acquire_slow(Queue& q, std::size_t need) noexcept {
    if (coalesce_retired()) {
      // Only dead blocks can have become reusable: the smallest that fits.
      std::size_t best = npos;
      for (std::size_t i = 0; i < free_count_; ++i) {
        const descriptor& d = desc_[free_[i]];
        if (!d.dead || d.size < need) continue;
        if (best == npos || d.size < desc_[free_[best]].size) best = i;
      }
      if (best != npos) return take(best, need, pool_path::completion);
      if (quota_ - carved_ >= need && spare_count_ != 0) return carve(need);
    }
    return acquire_fenced(q, need);
  }

  /// (c): picks the fitting block with the fewest waits, issues them on
  /// `q`, and reuses it, listing the waits in the block it returns.
  result<block> acquire_fenced(Queue& q, std::size_t need) noexcept {
    std::size_t best = npos, best_waits = npos;
    for (std::size_t i = 0; i < free_count_; ++i) {
      const descriptor& d = desc_[free_[i]];
      if (d.size < need) continue;
      const std::size_t n = plan_fence(q, free_[i], nullptr);
      if (n == npos) continue;
      if (best == npos || n < best_waits ||
          (n == best_waits && d.size < desc_[free_[best]].size)) {
        best = i;
        best_waits = n;
      }
    }
    if (best == npos) {
      if (spare_count_ == 0 && quota_ - carved_ >= need) {
        return failed(error{errc::resource_exhausted,
                            "acquire: block table full (MaxBlocks) and no free block can be "
                            "proven or fenced",
                            MaxBlocks});
      }
      return failed(error{errc::resource_exhausted,
                          "acquire: quota in use and no free block that fits can be proven or "
                          "fenced",
                          need});
    }
    const std::uint16_t idx = free_[best];
    fence_plan plan{};
    const std::size_t n = plan_fence(q, idx, &plan);
    for (std::size_t w = 0; w < n; ++w) {
      if (status s = q.backend().issue_wait(*plan[w].semaphore, plan[w].value); !s) {
        stats_.waits_issued += w;
        return failed(s.error_value());
      }
    }
    stats_.waits_issued += n;
    // The waits order q's next submission after the freeing operation, so
    // its whole death frontier is now known to q (taint included: the
    // knowledge may lack what overflow dropped, and says so).
    q.learn(deaths_[idx]);
    result<block> got = take(best, need, n == 0 ? pool_path::completion : pool_path::fenced);
    got->wait_count = static_cast<std::uint32_t>(n);
    for (std::size_t w = 0; w < n && w < pool_block::max_reported_waits; ++w) {
      got->waits[w] = pool_wait{plan[w].semaphore, plan[w].axis, plan[w].value};
    }
    return got;
  }

  /// Hands out free block free_[slot], splitting off a free tail when a
  /// spare descriptor allows.
  result<block> take(std::size_t slot, std::size_t need, pool_path path) noexcept {
    const std::uint16_t idx = free_[slot];
    free_[slot] = free_[--free_count_];
    descriptor& d = desc_[idx];
    if (d.size - need >= alignment_ && spare_count_ != 0) {
      const std::uint16_t t = spare_[--spare_count_];
      descriptor& tail = desc_[t];
      tail.offset = d.offset + need;
      tail.size = d.size - need;
      tail.state = block_state::free;
      tail.producer = d.producer;
      tail.producer_ahead = d.producer_ahead;
      tail.dead = d.dead;
      deaths_[t] = deaths_[idx];  // the tail owes the same past
      free_[free_count_++] = t;
      d.size = need;
      ++stats_.splits;
    }
    d.state = block_state::live;
    ++d.generation;
    switch (path) {
      case pool_path::knowledge: ++stats_.reused_by_knowledge; break;
      case pool_path::completion: ++stats_.reused_by_completion; break;
      case pool_path::fenced: ++stats_.reused_after_wait; break;
      case pool_path::fresh: break;
    }
    return block{d.offset, d.size, idx, d.generation, this, path};
  }

  result<block> carve(std::size_t need) noexcept {
    const std::uint16_t idx = spare_[--spare_count_];
    descriptor& d = desc_[idx];
    d.offset = carved_;
    d.size = need;
    d.state = block_state::live;
    d.producer = {};
    d.producer_ahead = false;
    d.dead = false;
    ++d.generation;
    carved_ += need;
    ++stats_.fresh_carves;
    return block{d.offset, d.size, idx, d.generation, this, pool_path::fresh};
  }

  /// Merges free block `idx` with the adjacent free blocks (one scan finds
  /// both sides) freed by the same producer axis; afterwards no two
  /// adjacent free blocks share a producer axis.
  void merge_neighbours(std::uint16_t idx) noexcept {
    descriptor& d = desc_[idx];
    std::size_t left = npos, right = npos;
    for (std::size_t i = 0; i < free_count_; ++i) {
      const descriptor& n = desc_[free_[i]];
      if (n.producer.epoch == 0 || n.producer.axis != d.producer.axis) continue;
      if (n.offset + n.size == d.offset) left = i;
      if (d.offset + d.size == n.offset) right = i;
    }
    // Right first: removing it from free_ (swap with the last) can move the
    // left entry only if the left one is last, which we re-check.
    if (right != npos) {
      const std::uint16_t j = free_[right];
      if (absorb(idx, j)) {
        if (left == free_count_ - 1) left = right;  // swap-remove moved it
        remove_free(right);
      }
    }
    if (left != npos) {
      const std::uint16_t j = free_[left];
      if (absorb(idx, j)) remove_free(left);
    }
  }

  /// Joins free block `j` into free block `idx` (adjacent, same producer
  /// axis). False, changing nothing, when a rejecting frontier cannot hold
  /// the joined death frontier.
  bool absorb(std::uint16_t idx, std::uint16_t j) noexcept {
    descriptor& d = desc_[idx];
    descriptor& n = desc_[j];
    if constexpr (frontier_type::overflow_type::rejects) {
      frontier_type joined = deaths_[idx];
      if (!joined.merge(deaths_[j], d.producer.axis)) return false;  // keep them apart
      deaths_[idx] = joined;
    } else {
      // The producer axis is pinned: overflow never evicts the entry that
      // proves the rest.
      deaths_[idx].merge(deaths_[j], d.producer.axis);
    }
    // The later producer proves both pasts (FIFO); it is known submitted
    // when either record of that epoch says so.
    if (n.producer.epoch > d.producer.epoch) {
      d.producer.epoch = n.producer.epoch;
      d.producer_ahead = n.producer_ahead;
    } else if (n.producer.epoch == d.producer.epoch) {
      d.producer_ahead = d.producer_ahead && n.producer_ahead;
    }
    if (n.offset < d.offset) d.offset = n.offset;
    d.size += n.size;
    recycle_descriptor(j);
    ++stats_.merges;
    return true;
  }

  void remove_free(std::size_t slot) noexcept { free_[slot] = free_[--free_count_]; }

  const std::size_t quota_;
  const std::size_t alignment_;
  status setup_{};
  const Tracker* tracker_ = nullptr;
  std::size_t carved_ = 0;
  pool_stats stats_{};
  std::size_t free_count_ = 0;
  std::size_t spare_count_ = 0;
  std::size_t timeline_count_ = 0;
  // Indices into desc_: the free blocks (scanned by acquire), and the
  // descriptors holding no block (a stack).
  std::array<std::uint16_t, MaxBlocks> free_{};
  std::array<std::uint16_t, MaxBlocks> spare_{};
  std::array<timeline_entry, MaxTimelines> timelines_{};
  std::array<timeline_holder, MaxTimelines> holders_{};
  // Hot descriptor fields apart from the death frontiers, so that a scan
  // of the free list touches ~48 bytes per block, not ~250.
  std::array<descriptor, MaxBlocks> desc_{};
  std::array<frontier_type, MaxBlocks> deaths_{};
};

/// A pool with the default tracker and table sizes for `Queue` (a pool
/// cannot default its queue type, so the alias keeps that one parameter).
template <pool_queue Queue>
using block_pool = basic_block_pool<Queue>;

CAUSAL_END_NAMESPACE
