// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// producer_rings: an executor's per-thread activation rings (private to the
// library). A thread that makes processes runnable appends them to a ring
// it owns with plain stores, so activating a process from outside the
// workers costs one read-modify-write (the process's state word) instead of
// two (the state word, then the head of a list every producer shares).
//
// Model. An executor owns Traits::producer_rings rings of
// Traits::producer_ring_slots slots. The first time a thread places a
// process on an executor it claims a free ring (one CAS on the ring's owner
// word) and remembers it in a thread-local binding; the thread gives the
// ring back when it exits, or when it binds to more executors than its
// binding cache holds. Only the owner writes a ring's slots and tail;
// consumers (the executor's workers and helping thread) take entries under
// a per-ring token, as they do from the immediate list, and advance its
// head. A full ring, or a thread that found every ring taken, falls back to
// the shared list: activations are never refused. (The executor also uses
// the list while a worker spins, for latency: executor.hpp.) Entries of
// one ring are taken in the order they were appended.
//
// Publication and parking. A worker about to park announces itself and
// then re-checks every source of work; a publisher must either see the
// announcement or have its work seen by the re-check (executor.hpp, "No lost
// wake-up"). A plain store of the tail followed by a load of the parked
// mask may be reordered by the CPU (store -> load), so one side needs a
// full barrier:
//   asymmetric  (Linux, membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)
//               registered): the parking worker issues a membarrier between
//               its announcement and its re-check, which makes every running
//               thread of the process pass a full barrier; publishers pay a
//               compiler barrier only. Parking is the rare path (a worker
//               spins first), so the microseconds of the membarrier go
//               where nothing waits on them.
//   symmetric   (other systems, a kernel or sandbox without membarrier, and
//               ThreadSanitizer, which cannot see membarrier): the tail is
//               published with an exchange, a full barrier on the publisher.
//
// Thread safety: a ring's slots and tail are written by its owner only;
//                take() may be called by any thread (token-guarded);
//                claim/release of rings and the thread-local bindings are
//                safe from any thread. A binding keeps the rings' memory
//                alive (shared ownership), so a thread may outlive the
//                executor it was bound to.
// Memory order:  a slot is written before the release store (or seq_cst
//                exchange) of the tail that covers it, and read after an
//                acquire load of that tail; the head is stored with release
//                after the slots below it were read, and the owner reloads
//                it with acquire before reusing them. A claim acquires the
//                previous owner's release of the ring, so the new owner
//                continues from the tail it left.
// Blocking/allocation: push and take never block or allocate. The rings
//                are allocated with the executor. A thread's first placement
//                on an executor binds it (copies a shared pointer; the first
//                binding of a thread registers its thread-exit hook, which
//                glibc does with one small allocation).
// Size:          per ring, three cache lines of indices and tokens plus
//                8 * slots bytes of slots (8 rings of 1024: about 66 KiB).
// See also:      <causal/executor.hpp>, docs/executor.md.
#pragma once

#include <causal/config.hpp>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <memory>

#if defined(__linux__) && !CAUSAL_HAS_TSAN()
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#define CAUSAL_HAS_MEMBARRIER() 1
#else
#define CAUSAL_HAS_MEMBARRIER() 0
#endif

CAUSAL_BEGIN_NAMESPACE

class process;

namespace detail {

//===-- the asymmetric barrier ------------------------------------------------===//

/// Returns true when the heavy side of the asymmetric barrier works in this
/// process (membarrier PRIVATE_EXPEDITED registered). Decided once, on the
/// first call, which registers the process; false under TSan and off Linux.
inline bool asymmetric_barrier_available() noexcept {
#if CAUSAL_HAS_MEMBARRIER()
  static const bool available = [] {
    const long commands = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (commands < 0 || (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
    return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
  }();
  return available;
#else
  return false;
#endif
}

/// The heavy side: every running thread of the process passes a full
/// barrier before this returns (only call when asymmetric_barrier_available()).
inline void asymmetric_barrier_heavy() noexcept {
#if CAUSAL_HAS_MEMBARRIER()
  // Registered, so this cannot fail with EPERM; any other failure would
  // leave the barrier unissued, so fall back to a local full fence, which
  // orders this thread at least (and is what a kernel without IPIs does).
  if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
#endif
}

//===-- ring ownership --------------------------------------------------------===//

inline constexpr std::uint32_t no_ring = 0xffff'ffffu;

/// What a consumer's take() found: entries, nothing, or only sources whose
/// token another consumer holds (the executor's lists answer the same).
enum class take_status : std::uint8_t { taken, empty, busy };

/// The ownership words of an executor's rings, shared between the executor
/// and every thread bound to one of them (see the file comment).
struct ring_claims {
  explicit ring_claims(std::uint32_t count)
      : owners(std::make_unique<std::atomic<std::uint32_t>[]>(count)), ring_count(count) {}
  ring_claims(const ring_claims&) = delete;
  ring_claims& operator=(const ring_claims&) = delete;

  /// Claims a free ring for the calling thread; returns its index, or
  /// no_ring when every ring is owned.
  std::uint32_t claim() noexcept {
    for (std::uint32_t i = 0; i < ring_count; ++i) {
      std::uint32_t expected = 0;
      // acq_rel: acquires the previous owner's release (its last tail).
      if (owners[i].load(std::memory_order_relaxed) != 0 ||
          !owners[i].compare_exchange_strong(expected, 1, std::memory_order_acq_rel,
                                             std::memory_order_relaxed)) {
        continue;
      }
      // seq_cst: a parking worker reads the high-water mark after announcing
      // itself, to decide whether rings need its heavy barrier (executor.hpp).
      std::uint32_t seen = high_water.load(std::memory_order_relaxed);
      while (seen < i + 1 &&
             !high_water.compare_exchange_weak(seen, i + 1, std::memory_order_seq_cst,
                                               std::memory_order_relaxed)) {
      }
      return i;
    }
    return no_ring;
  }
  /// Returns how many rings are owned now (relaxed: a snapshot).
  [[nodiscard]] std::uint32_t owned() const noexcept {
    std::uint32_t n = 0;
    for (std::uint32_t i = 0; i < ring_count; ++i) {
      n += owners[i].load(std::memory_order_relaxed) != 0 ? 1u : 0u;
    }
    return n;
  }
  /// Gives ring `i` back; the entries in it stay for consumers to take.
  void release(std::uint32_t i) noexcept {
    // release: publishes the owner's last tail to the next claimant.
    owners[i].store(0, std::memory_order_release);
  }

  std::unique_ptr<std::atomic<std::uint32_t>[]> owners;
  std::uint32_t ring_count;
  /// Rings [0, high_water) have been claimed at least once: consumers look
  /// at those only.
  std::atomic<std::uint32_t> high_water{0};
};

//===-- thread bindings -------------------------------------------------------===//

/// The calling thread's binding to the rings it placed on last: read on
/// every placement, so it is trivially destructible (plain thread-local
/// access, no guard). `retry` counts placements until a thread that found
/// no free ring tries to claim one again.
struct producer_cache {
  const ring_claims* claims = nullptr;
  std::uint32_t ring = no_ring;
  std::uint32_t retry = 0;
  /// Set when the thread's bindings were destroyed (thread exit): a
  /// placement made later, from another thread-local's destructor, goes to
  /// the shared list instead of binding again.
  bool exited = false;
};
inline thread_local producer_cache thread_producer{};

/// Placements between two attempts to claim a ring, for a thread that found
/// every ring owned (its placements go to the shared list meanwhile).
inline constexpr std::uint32_t ring_claim_retry = 1024;

/// Every binding of the calling thread: it owns the shared pointers and
/// gives the rings back when the thread exits.
struct producer_bindings {
  struct entry {
    std::shared_ptr<ring_claims> claims;
    std::uint32_t ring = no_ring;
  };
  static constexpr std::uint32_t capacity = 4;

  producer_bindings() noexcept = default;
  producer_bindings(const producer_bindings&) = delete;
  producer_bindings& operator=(const producer_bindings&) = delete;
  ~producer_bindings() {
    for (entry& e : entries) unbind(e);
    thread_producer.exited = true;
  }

  static void unbind(entry& e) noexcept {
    if (e.claims == nullptr) return;
    if (thread_producer.claims == e.claims.get()) {
      thread_producer.claims = nullptr;
      thread_producer.ring = no_ring;
    }
    if (e.ring != no_ring) e.claims->release(e.ring);
    e.claims.reset();
    e.ring = no_ring;
  }

  entry entries[capacity];
  std::uint32_t next_victim = 0;
};
inline thread_local producer_bindings thread_bindings;

/// The slow path of a placement: binds the calling thread to `set` (claims
/// a ring, or retries a claim that failed before), caches the binding and
/// returns the ring, or no_ring when none is free.
CAUSAL_NOINLINE inline std::uint32_t bind_producer(const std::shared_ptr<ring_claims>& set) noexcept {
  if (thread_producer.exited) return no_ring;
  producer_bindings& all = thread_bindings;
  producer_bindings::entry* found = nullptr;
  for (producer_bindings::entry& e : all.entries) {
    if (e.claims == set) {
      found = &e;
      break;
    }
  }
  if (found == nullptr) {
    found = &all.entries[all.next_victim];
    all.next_victim = (all.next_victim + 1) % producer_bindings::capacity;
    producer_bindings::unbind(*found);
    found->claims = set;
  }
  if (found->ring == no_ring) found->ring = set->claim();
  thread_producer.claims = set.get();
  thread_producer.ring = found->ring;
  thread_producer.retry = ring_claim_retry;
  return found->ring;
}

/// Returns the calling thread's ring of `set` (binding it on first use), or
/// no_ring: the placement then goes to the shared list.
CAUSAL_ALWAYS_INLINE std::uint32_t producer_ring_of(const std::shared_ptr<ring_claims>& set) noexcept {
  producer_cache& cache = thread_producer;
  if (cache.claims == set.get()) [[likely]] {
    if (cache.ring != no_ring) [[likely]] return cache.ring;
    if (--cache.retry != 0) return no_ring;
  }
  return bind_producer(set);
}

//===-- the rings -------------------------------------------------------------===//

/// One ring: the owner's line (its next index, and its last read of the
/// head) and the consumers' line (the head index, shifted left by one, with
/// a busy bit that a consumer sets while it takes entries), and a window of
/// the set's slots.
///
/// Slots. Entry i is slot i % slots, holding the process pointer with bit 0
/// tagged by the parity of its lap (i / slots): 1 on even laps, 0 on odd
/// ones (processes are cache-line aligned, so bit 0 is free). A consumer at
/// head h finds entry h by its tag; the slot can hold nothing older than
/// entry h - slots (the owner writes entry i only after the head passed
/// i - slots), whose tag differs. So consumers never write slots, and the
/// pointer and the mark that it is there are one store in one cache line:
/// a publication costs the publisher one line transfer and a consumer
/// finds it with one more, the cost of a shared list; a separate tail
/// index, or emptying slots, would add a serial transfer on each side.
template <template <class> class Atomic>
struct producer_ring {
  alignas(CAUSAL_CACHELINE_SIZE) std::uint64_t tail = 0;  // owner only
  std::uint64_t head_seen = 0;                             // owner only
  alignas(CAUSAL_CACHELINE_SIZE) Atomic<std::uint64_t> head{0};  // index << 1 | busy
  Atomic<std::uintptr_t>* slots = nullptr;
};

/// What ring_set::inspect() saw in one ring (diagnostics only).
struct ring_view {
  bool owned = false;                ///< a thread owns it now
  bool busy = false;                 ///< a consumer holds its head
  std::uint64_t head = 0;            ///< entries taken so far
  std::uint32_t entries = 0;         ///< published entries from the head on
  const process* first = nullptr;    ///< the entry at the head (not dereferenced)
};

/// An executor's rings, shared with the threads bound to them.
template <template <class> class Atomic>
class ring_set : public ring_claims {
 public:
  ring_set(std::uint32_t count, std::uint32_t slots_per_ring)
      : ring_claims(count),
        rings_(std::make_unique<producer_ring<Atomic>[]>(count)),
        slots_(std::make_unique<Atomic<std::uintptr_t>[]>(std::size_t{count} * slots_per_ring)),
        mask_(slots_per_ring - 1),
        lap_shift_(static_cast<std::uint32_t>(std::countr_zero(slots_per_ring))),
        symmetric_(!asymmetric_barrier_available()) {
    for (std::uint32_t i = 0; i < count; ++i) {
      rings_[i].slots = &slots_[std::size_t{i} * slots_per_ring];
    }
  }

  /// True when publishers pay a full barrier themselves (see the file
  /// comment), false when parkers issue the heavy barrier instead.
  [[nodiscard]] bool symmetric() const noexcept { return symmetric_; }

  /// Owner only: appends `p` to ring `r`; returns false when it is full.
  CAUSAL_ALWAYS_INLINE bool push_one(std::uint32_t r, process& p) noexcept {
    producer_ring<Atomic>& ring = rings_[r];
    const std::uint64_t t = ring.tail;
    if (t - ring.head_seen > mask_) [[unlikely]] {
      // acquire: as in push().
      ring.head_seen = ring.head.load(std::memory_order_acquire) >> 1;
      if (t - ring.head_seen > mask_) return false;
    }
    publish(ring.slots[t & mask_], reinterpret_cast<std::uintptr_t>(&p) | lap_tag(t));
    ring.tail = t + 1;
    std::atomic_signal_fence(std::memory_order_seq_cst);  // as in push()
    return true;
  }

  /// Owner only: appends the `count` processes to ring `r`, oldest first;
  /// returns how many fitted (the caller places the rest elsewhere).
  std::uint32_t push(std::uint32_t r, process* const* items, std::uint32_t count) noexcept {
    producer_ring<Atomic>& ring = rings_[r];
    const std::uint64_t t = ring.tail;
    const std::uint64_t capacity = std::uint64_t{mask_} + 1;
    std::uint64_t free = capacity - (t - ring.head_seen);
    if (free < count) {
      // acquire: consumers read the entries below this head before they
      // stored it, so those slots may be written again.
      ring.head_seen = ring.head.load(std::memory_order_acquire) >> 1;
      free = capacity - (t - ring.head_seen);
    }
    const std::uint32_t n = static_cast<std::uint32_t>(std::min<std::uint64_t>(free, count));
    for (std::uint32_t i = 0; i < n; ++i) {
      publish(ring.slots[(t + i) & mask_],
              reinterpret_cast<std::uintptr_t>(items[i]) | lap_tag(t + i));
    }
    ring.tail = t + n;
    // The caller reads the parked mask next: keep the compiler from moving
    // that load above the stores; the CPU's store -> load reordering is
    // what the parker's membarrier covers (asymmetric mode).
    std::atomic_signal_fence(std::memory_order_seq_cst);
    return n;
  }

  /// Returns true when some ring may hold entries (cheap, relaxed).
  [[nodiscard]] bool maybe_nonempty() const noexcept {
    return any_entry(std::memory_order_relaxed);
  }
  /// The same as the re-check half of the parking handshake (seq_cst). An
  /// entry that a concurrent consumer is taking may be missed: that
  /// consumer is awake and looks again before it parks.
  [[nodiscard]] bool nonempty_seq_cst() const noexcept {
    return any_entry(std::memory_order_seq_cst);
  }

  /// Returns what ring `r` holds, for diagnostics: its owner word, its
  /// head and the run of published entries from the head, each read with
  /// a relaxed load (a moving ring gives a blend of moments). Reads only;
  /// any thread, any time while the set is alive. O(slots).
  [[nodiscard]] ring_view inspect(std::uint32_t r) const noexcept {
    const producer_ring<Atomic>& ring = rings_[r];
    ring_view v;
    v.owned = owners[r].load(std::memory_order_relaxed) != 0;
    const std::uint64_t word = ring.head.load(std::memory_order_relaxed);
    v.busy = (word & 1) != 0;
    v.head = word >> 1;
    for (std::uint64_t k = 0; k <= mask_; ++k) {
      const std::uintptr_t e = ring.slots[(v.head + k) & mask_].load(std::memory_order_relaxed);
      if (!holds(e, v.head + k)) break;
      if (k == 0) v.first = reinterpret_cast<const process*>(e & ~std::uintptr_t{1});
      ++v.entries;
    }
    return v;
  }

  /// Takes up to `max` entries (about a `1/share`-th of the run of entries
  /// found, at least one) from the first ring at or after `start` that has
  /// any, into `out`; returns how many. `status` tells empty from busy
  /// (every non-empty ring being taken from by another consumer); `left`
  /// is nonzero when more entries followed the ones taken.
  std::uint32_t take(std::uint32_t start, process** out, std::uint32_t max, std::uint32_t share,
                     take_status& status, std::uint32_t& left) noexcept {
    left = 0;
    status = take_status::empty;
    const std::uint32_t n = high_water.load(std::memory_order_relaxed);
    std::uint32_t index = start < n ? start : 0;
    for (std::uint32_t k = 0; k < n; ++k, index = index + 1 == n ? 0 : index + 1) {
      producer_ring<Atomic>& ring = rings_[index];
      std::uint64_t word = ring.head.load(std::memory_order_relaxed);
      const std::uint64_t h = word >> 1;
      const std::uintptr_t first = ring.slots[h & mask_].load(std::memory_order_relaxed);
      if (!holds(first, h)) continue;
      if (word & 1) {
        status = take_status::busy;
        continue;
      }
      // Start fetching the process's activation line (just written by its
      // activator on another core) while the head is claimed; a hint only.
      CAUSAL_PREFETCH_WRITE(reinterpret_cast<const char*>(first & ~std::uintptr_t{1}) +
                            CAUSAL_CACHELINE_SIZE);
      // acquire: pairs with the previous taker's release, so entries below
      // the head it stored are not taken twice.
      if (!ring.head.compare_exchange_strong(word, word | 1, std::memory_order_acquire,
                                             std::memory_order_relaxed)) {
        status = take_status::busy;
        continue;
      }
      // The run of published entries from the head, up to `max`; acquire:
      // pairs with the owner's publication of each.
      std::uint32_t run = 0;
      while (run < max) {
        const std::uintptr_t v = ring.slots[(h + run) & mask_].load(std::memory_order_acquire);
        if (!holds(v, h + run)) break;
        out[run++] = reinterpret_cast<process*>(v & ~std::uintptr_t{1});
      }
      const std::uint32_t got =
          run == 0 ? 0 : std::max<std::uint32_t>(1, run / (share == 0 ? 1 : share));
      // release: the owner writes the slots below the new head again after
      // its acquire load; the next taker starts from it.
      ring.head.store((h + got) << 1, std::memory_order_release);
      if (got == 0) continue;
      left = run - got;
      status = take_status::taken;
      return got;
    }
    return 0;
  }

 private:
  /// Stores an entry's word into its slot.
  CAUSAL_ALWAYS_INLINE void publish(Atomic<std::uintptr_t>& slot, std::uintptr_t word) noexcept {
    if (symmetric_) {
      // seq_cst: the publish half of the parking handshake, paid here.
      slot.exchange(word, std::memory_order_seq_cst);
    } else {
      // release: publishes the activation (the state word's CAS) with the
      // pointer.
      slot.store(word, std::memory_order_release);
    }
  }

  /// The tag of entry i: 1 on even laps, 0 on odd ones.
  [[nodiscard]] std::uintptr_t lap_tag(std::uint64_t i) const noexcept {
    return static_cast<std::uintptr_t>(((i >> lap_shift_) & 1) ^ 1);
  }
  /// Returns true when the slot word `v` is entry i (see producer_ring).
  [[nodiscard]] bool holds(std::uintptr_t v, std::uint64_t i) const noexcept {
    return v > 1 && (v & 1) == lap_tag(i);
  }

  [[nodiscard]] bool any_entry(std::memory_order order) const noexcept {
    const std::uint32_t n = high_water.load(order);
    for (std::uint32_t i = 0; i < n; ++i) {
      const producer_ring<Atomic>& ring = rings_[i];
      const std::uint64_t h = ring.head.load(order) >> 1;
      if (holds(ring.slots[h & mask_].load(order), h)) return true;
    }
    return false;
  }

  std::unique_ptr<producer_ring<Atomic>[]> rings_;
  std::unique_ptr<Atomic<std::uintptr_t>[]> slots_;
  std::uint32_t mask_;
  std::uint32_t lap_shift_;
  bool symmetric_;
};

}  // namespace detail

CAUSAL_END_NAMESPACE
