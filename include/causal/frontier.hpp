// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// frontier: a sparse vector clock of (axis, epoch) entries with a fixed
// inline capacity, the causal knowledge carried by every signal and wait.
//
// A frontier {A:7, B:3} asserts "everything timeline A did up to epoch 7 and
// timeline B up to epoch 3 is in my causal past". An absent axis means epoch
// 0 (nothing known), so no entry ever holds epoch 0. Entries are kept
// strictly sorted by axis, which makes every operation a single linear
// merge-walk over both inputs: O(n + m), no allocation, constexpr.
//
//   merge({A:5, B:3}, {A:2, B:7, C:4})       == {A:5, B:7, C:4}   (join)
//   dominates({A:5, B:7, C:4}, {A:3, B:7})   == true              (covers)
//   dominates({A:5, B:7}, {A:3, C:4})        == false             (C unknown)
//   insert_or_raise({A:5, B:3}, A, 8)        == {A:8, B:3}
//
// Overflow. When a merge or insert needs more than `Capacity` entries the
// `Overflow` policy decides. `evict_and_taint` (default) drops the entries
// that `evict_before` ranks lowest (smallest epoch, then smallest axis) and
// sets the `tainted` bit; `reject_overflow` fails with
// `errc::capacity_exceeded` and leaves the target unchanged.
//
// Soundness rule (docs/frontiers.md). Dropping an entry from *knowledge* only
// makes it know less: safe. Dropping one from a *requirement* (a wait
// frontier, a buffer's death frontier) would make it demand less: unsafe.
// So `dominates(a, b)` is false whenever `b` is tainted, while a tainted `a`
// still answers from the entries it holds. Decisions that need complete
// knowledge (reasoning from the absence of an axis) must check `tainted()`.
//
// Thread safety: a value type; concurrent reads of one frontier are safe,
//                a write needs exclusive access.
// Memory order:  not applicable (no atomics).
// Blocking/allocation: never blocks, never allocates, never throws.
// Size:          Capacity * 16 + 8 bytes (200 for the default of 12),
//                alignment 8; trivially copyable.
// Configuration: Capacity (default 12), Layout (default_axis_layout, used
//                for text form and to keep layouts from mixing), Overflow
//                (evict_and_taint | reject_overflow | a user policy).
// See also:      <causal/frontier_wire.hpp>, <causal/axis.hpp>, docs/frontiers.md.
#pragma once

#include <causal/axis.hpp>
#include <causal/config.hpp>
#include <causal/result.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <iterator>
#include <span>
#include <string>
#include <type_traits>

CAUSAL_BEGIN_NAMESPACE

/// One (axis, epoch) pair of a frontier.
struct frontier_entry {
  causal::axis axis;
  std::uint64_t epoch = 0;

  friend constexpr bool operator==(const frontier_entry&, const frontier_entry&) noexcept = default;
};

/// How two frontiers relate causally, as `compare(a, b)` reports it.
enum class order : std::uint8_t {
  equal,      ///< Each dominates the other.
  before,     ///< `a` happened before `b`: b dominates a, not the reverse.
  after,      ///< `a` happened after `b`: a dominates b, not the reverse.
  concurrent  ///< Neither dominates the other (or taint forbids the claim).
};

//===-- overflow policies ---------------------------------------------------===//

/// Default overflow policy: drop the lowest-ranked entries and set the
/// tainted bit. The rank is a strict total order (epoch, then axis), which
/// keeps merge associative and commutative even when it evicts.
struct evict_and_taint {
  static constexpr bool rejects = false;
  /// Returns true when `a` is dropped before `b`.
  static constexpr bool evict_before(const frontier_entry& a, const frontier_entry& b) noexcept {
    return a.epoch != b.epoch ? a.epoch < b.epoch : a.axis < b.axis;
  }
};

/// Overflow policy that refuses: the operation returns
/// `errc::capacity_exceeded` and the target is left unchanged.
struct reject_overflow {
  static constexpr bool rejects = true;
};

/// A frontier overflow policy. It either `rejects`, or ranks entries for
/// eviction with `evict_before(a, b)`, which must be a strict total order on
/// entries of distinct axes (ties broken by axis) for merge to stay
/// associative.
template <class P>
concept overflow_policy =
    requires {
      { P::rejects } -> std::convertible_to<bool>;
    } && (bool(P::rejects) || requires(const frontier_entry& a, const frontier_entry& b) {
      { P::evict_before(a, b) } noexcept -> std::same_as<bool>;
    });

template <std::size_t Capacity = 12, axis_encoding Layout = default_axis_layout,
          overflow_policy Overflow = evict_and_taint>
class basic_frontier;

namespace detail {
template <class T>
struct is_frontier : std::false_type {};
template <std::size_t C, class L, class O>
struct is_frontier<basic_frontier<C, L, O>> : std::true_type {};
}  // namespace detail

/// Any instantiation of `basic_frontier`.
template <class F>
concept frontier_type = detail::is_frontier<std::remove_cvref_t<F>>::value;

/// Two frontier types whose entries mean the same thing (same axis layout).
template <class A, class B>
concept compatible_frontiers =
    frontier_type<A> && frontier_type<B> &&
    std::same_as<typename std::remove_cvref_t<A>::layout_type,
                 typename std::remove_cvref_t<B>::layout_type>;

//===-- basic_frontier ------------------------------------------------------===//

/// A sparse vector clock with at most `Capacity` entries held inline.
///
/// Invariants: entries strictly increasing by axis; no epoch is 0;
/// `size() <= Capacity`. Mutators that can overflow return `status` under a
/// rejecting policy and `void` under an evicting one (`op_status`).
///
/// Policies and traits: `Capacity` (>= 1), `Layout` (an `axis_encoding`),
/// `Overflow` (an `overflow_policy`).
template <std::size_t Capacity, axis_encoding Layout, overflow_policy Overflow>
class basic_frontier {
  static_assert(Capacity >= 1, "basic_frontier: Capacity must be at least 1");
  static_assert(Capacity <= 4096,
                "basic_frontier: Capacity must be at most 4096 (operations are linear scans)");

 public:
  using layout_type = Layout;
  using overflow_type = Overflow;
  using entry = frontier_entry;
  using value_type = frontier_entry;
  using size_type = std::size_t;
  /// What an operation that may overflow returns: `status` when the policy
  /// rejects, nothing when it evicts (eviction cannot fail).
  using op_status = std::conditional_t<Overflow::rejects, status, void>;

  static constexpr std::size_t capacity = Capacity;

  /// Iterates entries in axis order; dereferences to an `entry` by value.
  class const_iterator {
   public:
    using iterator_concept = std::random_access_iterator_tag;
    using iterator_category = std::input_iterator_tag;
    using value_type = frontier_entry;
    using difference_type = std::ptrdiff_t;
    using reference = frontier_entry;

    constexpr const_iterator() noexcept = default;
    constexpr entry operator*() const noexcept { return (*owner_)[index_]; }
    constexpr entry operator[](difference_type n) const noexcept {
      return (*owner_)[static_cast<std::size_t>(static_cast<difference_type>(index_) + n)];
    }
    constexpr const_iterator& operator++() noexcept { ++index_; return *this; }
    constexpr const_iterator operator++(int) noexcept { auto t = *this; ++index_; return t; }
    constexpr const_iterator& operator--() noexcept { --index_; return *this; }
    constexpr const_iterator operator--(int) noexcept { auto t = *this; --index_; return t; }
    constexpr const_iterator& operator+=(difference_type n) noexcept {
      index_ = static_cast<std::size_t>(static_cast<difference_type>(index_) + n);
      return *this;
    }
    constexpr const_iterator& operator-=(difference_type n) noexcept { return *this += -n; }
    friend constexpr const_iterator operator+(const_iterator it, difference_type n) noexcept { return it += n; }
    friend constexpr const_iterator operator+(difference_type n, const_iterator it) noexcept { return it += n; }
    friend constexpr const_iterator operator-(const_iterator it, difference_type n) noexcept { return it -= n; }
    friend constexpr difference_type operator-(const_iterator a, const_iterator b) noexcept {
      return static_cast<difference_type>(a.index_) - static_cast<difference_type>(b.index_);
    }
    friend constexpr bool operator==(const_iterator a, const_iterator b) noexcept {
      return a.index_ == b.index_;
    }
    friend constexpr auto operator<=>(const_iterator a, const_iterator b) noexcept {
      return a.index_ <=> b.index_;
    }

   private:
    friend class basic_frontier;
    constexpr const_iterator(const basic_frontier* owner, std::size_t index) noexcept
        : owner_(owner), index_(index) {}
    const basic_frontier* owner_ = nullptr;
    std::size_t index_ = 0;
  };
  using iterator = const_iterator;

  /// Creates the empty, untainted frontier (knows nothing, requires nothing).
  constexpr basic_frontier() noexcept {
    // Only the first count_ slots are ever read. At run time the epochs
    // past them stay unwritten (the axes still default to 0): zeroing them
    // took a `rep stos` (~7 ns) on every construction. A constant
    // expression must initialise every member.
    if (std::is_constant_evaluated()) {
      for (std::uint64_t& e : epochs_) e = 0;
    }
  }

  /// Creates a frontier from `entries` in any order: duplicate axes keep
  /// the larger epoch, zero epochs are skipped, and overflow is handled by
  /// the evicting policy. Only for evicting policies; a rejecting frontier
  /// is built with `from_entries`, which can report the overflow.
  constexpr basic_frontier(std::initializer_list<entry> entries) noexcept
    requires(!Overflow::rejects)
      : basic_frontier() {
    // Each entry joins as a one-entry merge with nothing pinned, so an
    // overflow evicts the lowest-ranked entries whatever the list's order
    // (insert_or_raise would keep the latest axis instead).
    for (const entry& e : entries) {
      if (e.epoch == 0) continue;
      if (count_ == 0) {
        // The first entry needs no merge (the common one-entry list of a
        // signal: the union logic was a third of its cost).
        axes_[0] = e.axis;
        epochs_[0] = e.epoch;
        count_ = 1;
        continue;
      }
      const causal::axis one_axis[1] = {e.axis};
      const std::uint64_t one_epoch[1] = {e.epoch};
      merge_entries<1>(one_axis, one_epoch, 1, false, nullptr);
    }
  }

  /// Builds a frontier from `entries` in any order (duplicates keep the
  /// larger epoch, zero epochs are skipped). Fails with
  /// `errc::capacity_exceeded` when more than `Capacity` distinct axes
  /// remain, whatever the policy: a caller-built frontier is never
  /// silently tainted.
  [[nodiscard]] static constexpr result<basic_frontier> from_entries(
      std::span<const entry> entries) noexcept {
    basic_frontier f;
    for (const entry& e : entries) {
      if (e.epoch == 0) continue;
      const std::size_t i = f.lower_bound(e.axis);
      if (i < f.count_ && f.axes_[i] == e.axis) {
        if (e.epoch > f.epochs_[i]) f.epochs_[i] = e.epoch;
        continue;
      }
      if (f.count_ == Capacity) {
        return error{errc::capacity_exceeded, "more distinct axes than the frontier's Capacity",
                     Capacity};
      }
      f.insert_at(i, e.axis, e.epoch);
    }
    return f;
  }

  //===-- observers -----------------------------------------------------===//

  [[nodiscard]] constexpr std::size_t size() const noexcept { return count_; }
  [[nodiscard]] constexpr bool empty() const noexcept { return count_ == 0; }
  /// True when entries may be missing: an overflow evicted some, or a
  /// tainted frontier was merged in. See the soundness rule above.
  [[nodiscard]] constexpr bool tainted() const noexcept { return tainted_; }

  /// Returns the epoch recorded for `a`, or 0 when `a` is absent.
  [[nodiscard]] constexpr std::uint64_t epoch_of(causal::axis a) const noexcept {
    for (std::size_t i = 0; i < count_; ++i) {
      if (axes_[i] == a) return epochs_[i];
      if (axes_[i] > a) break;
    }
    return 0;
  }
  [[nodiscard]] constexpr bool contains(causal::axis a) const noexcept { return epoch_of(a) != 0; }

  /// Returns entry `i` in axis order. Precondition: `i < size()`.
  [[nodiscard]] constexpr entry operator[](std::size_t i) const noexcept {
    CAUSAL_ASSERT(i < count_, "frontier index out of range");
    return entry{axes_[i], epochs_[i]};
  }
  [[nodiscard]] constexpr const_iterator begin() const noexcept { return {this, 0}; }
  [[nodiscard]] constexpr const_iterator end() const noexcept { return {this, count_}; }

  /// The axes, strictly increasing, and their epochs, as parallel spans.
  [[nodiscard]] constexpr std::span<const causal::axis> axes() const noexcept {
    return {axes_, count_};
  }
  [[nodiscard]] constexpr std::span<const std::uint64_t> epochs() const noexcept {
    return {epochs_, count_};
  }

  /// Checks the class invariants; tests and CAUSAL_ASSERT_LEVEL 2 use it.
  [[nodiscard]] constexpr bool invariants_hold() const noexcept {
    if (count_ > Capacity) return false;
    for (std::size_t i = 0; i < count_; ++i) {
      if (epochs_[i] == 0) return false;
      if (i > 0 && !(axes_[i - 1] < axes_[i])) return false;
    }
    return true;
  }

  /// Frontiers are equal when they hold the same entries and taint.
  friend constexpr bool operator==(const basic_frontier& a, const basic_frontier& b) noexcept {
    if (a.count_ != b.count_ || a.tainted_ != b.tainted_) return false;
    for (std::size_t i = 0; i < a.count_; ++i) {
      if (a.axes_[i] != b.axes_[i] || a.epochs_[i] != b.epochs_[i]) return false;
    }
    return true;
  }

  //===-- mutators ------------------------------------------------------===//

  /// Empties the frontier and clears the taint.
  constexpr void clear() noexcept {
    count_ = 0;
    tainted_ = false;
  }

  /// Marks the frontier as possibly incomplete (e.g. an external signal).
  constexpr void set_tainted() noexcept { tainted_ = true; }

  /// Raises the entry of `a` to `epoch`, inserting it when absent; a lower
  /// or zero `epoch` changes nothing. On overflow the inserted axis is kept
  /// and another entry is evicted (evicting policy), or nothing changes and
  /// `errc::capacity_exceeded` is returned (rejecting policy).
  ///
  /// Complexity: O(size()).
  constexpr op_status insert_or_raise(causal::axis a, std::uint64_t epoch) noexcept {
    if (epoch != 0) {
      const std::size_t i = lower_bound(a);
      if (i < count_ && axes_[i] == a) {
        if (epoch > epochs_[i]) epochs_[i] = epoch;
      } else if (count_ < Capacity) [[likely]] {
        insert_at(i, a, epoch);
      } else if constexpr (Overflow::rejects) {
        return status{error{errc::capacity_exceeded, "insert_or_raise would exceed Capacity",
                            Capacity}};
      } else {
        const causal::axis one_axis[1] = {a};
        const std::uint64_t one_epoch[1] = {epoch};
        merge_overflow<1>(one_axis, one_epoch, 1, &a);
      }
    }
    return ok_status();
  }

  /// Lowers the entry of `a` to at most `epoch`, removing it at 0: knowing
  /// less is always sound as knowledge (never as a requirement). Used to
  /// carry what was known *before* an operation on every signal of it but
  /// the last (docs/queues.md, "Signals of one operation").
  ///
  /// Complexity: O(size()).
  constexpr void lower_to(causal::axis a, std::uint64_t epoch) noexcept {
    const std::size_t i = lower_bound(a);
    if (i == count_ || axes_[i] != a || epochs_[i] <= epoch) return;
    if (epoch != 0) {
      epochs_[i] = epoch;
      return;
    }
    for (std::size_t k = i + 1; k < count_; ++k) {
      axes_[k - 1] = axes_[k];
      epochs_[k - 1] = epochs_[k];
    }
    --count_;
  }

  /// Joins `other` into this frontier: every axis takes the larger epoch,
  /// and the taint of either carries over. On overflow the policy applies
  /// (evict and taint, or fail leaving this frontier unchanged).
  ///
  /// Complexity: O(size() + other.size()); one pass when both hold the
  /// same axes.
  template <std::size_t C2, class O2>
  constexpr op_status merge(const basic_frontier<C2, Layout, O2>& other) noexcept {
    return merge_entries<C2>(other.axes().data(), other.epochs().data(), other.size(),
                             other.tainted(), nullptr);
  }

  /// Like `merge(other)`, but an overflow never evicts `pinned` (a queue's
  /// own axis, whose entry is the producer entry of its signals, docs/frontiers.md).
  template <std::size_t C2, class O2>
  constexpr op_status merge(const basic_frontier<C2, Layout, O2>& other,
                            causal::axis pinned) noexcept {
    return merge_entries<C2>(other.axes().data(), other.epochs().data(), other.size(),
                             other.tainted(), &pinned);
  }

 private:
  static constexpr op_status ok_status() noexcept {
    if constexpr (Overflow::rejects) {
      return status{};
    } else {
      return;
    }
  }

  /// Returns the first index whose axis is not less than `a`.
  constexpr std::size_t lower_bound(causal::axis a) const noexcept {
    std::size_t i = 0;
    while (i < count_ && axes_[i] < a) ++i;
    return i;
  }

  /// Precondition: count_ < Capacity and i <= count_ (every caller checks).
  constexpr void insert_at(std::size_t i, causal::axis a, std::uint64_t epoch) noexcept {
    // Restating the precondition lets g++ -O2 see the shifts stay in
    // bounds (it otherwise warns, -Warray-bounds, for Capacity 1).
    if (count_ >= Capacity || i > count_) {
      CAUSAL_ASSERT(false, "basic_frontier::insert_at: no room");
      return;
    }
    for (std::size_t k = count_; k > i; --k) {
      axes_[k] = axes_[k - 1];
      epochs_[k] = epochs_[k - 1];
    }
    axes_[i] = a;
    epochs_[i] = epoch;
    ++count_;
  }

  template <std::size_t OtherCapacity>
  constexpr op_status merge_entries(const causal::axis* oax, const std::uint64_t* oep,
                                    std::size_t on, bool otaint,
                                    const causal::axis* pinned) noexcept {
    const std::size_t n = count_;
    // Fast path: identical axis sets (a queue re-importing a frontier of
    // the same participants) is a branch-free element-wise max.
    if (n == on) {
      bool same = true;
      for (std::size_t i = 0; i < n; ++i) same &= (axes_[i] == oax[i]);
      if (same) {
        for (std::size_t i = 0; i < n; ++i) epochs_[i] = epochs_[i] < oep[i] ? oep[i] : epochs_[i];
        tainted_ |= otaint;
        return ok_status();
      }
    }
    // Count the union first; nothing is written until the policy has had
    // its say, so a rejected merge leaves the target unchanged.
    std::size_t i = 0, j = 0, fresh = 0;
    while (j < on) {
      if (i == n) {
        fresh += on - j;
        break;
      }
      if (axes_[i] < oax[j]) {
        ++i;
      } else if (oax[j] < axes_[i]) {
        ++fresh;
        ++j;
      } else {
        ++i;
        ++j;
      }
    }
    const std::size_t u = n + fresh;
    if (u <= Capacity) [[likely]] {
      merge_backward(oax, oep, on, u);
      tainted_ |= otaint;
      return ok_status();
    }
    if constexpr (Overflow::rejects) {
      return status{error{errc::capacity_exceeded, "merge would exceed Capacity", u}};
    } else {
      merge_overflow<OtherCapacity>(oax, oep, on, pinned);
      tainted_ |= otaint;
      return;
    }
  }

  /// Merges in place from the back; the union (size `u`) fits. Writing
  /// position k never overtakes reading position i (k >= i), so no entry is
  /// overwritten before it is read.
  constexpr void merge_backward(const causal::axis* oax, const std::uint64_t* oep,
                                std::size_t on, std::size_t u) noexcept {
    std::size_t i = count_, j = on, k = u;
    while (j > 0) {
      --k;
      if (i > 0 && oax[j - 1] < axes_[i - 1]) {
        --i;
        axes_[k] = axes_[i];
        epochs_[k] = epochs_[i];
      } else if (i > 0 && axes_[i - 1] == oax[j - 1]) {
        --i;
        --j;
        axes_[k] = axes_[i];
        epochs_[k] = epochs_[i] < oep[j] ? oep[j] : epochs_[i];
      } else {
        --j;
        axes_[k] = oax[j];
        epochs_[k] = oep[j];
      }
    }
    count_ = static_cast<std::uint32_t>(u);
  }

  /// Slow path: the union does not fit. Builds it, drops the entries the
  /// policy ranks lowest (never `pinned`), keeps axis order, sets taint.
  template <std::size_t OtherCapacity>
  CAUSAL_NOINLINE constexpr void merge_overflow(const causal::axis* oax,
                                                const std::uint64_t* oep, std::size_t on,
                                                const causal::axis* pinned) noexcept
    requires(!Overflow::rejects)
  {
    constexpr std::size_t max_union = Capacity + OtherCapacity;
    causal::axis ux[max_union]{};
    std::uint64_t ue[max_union]{};
    bool dropped[max_union]{};
    std::size_t i = 0, j = 0, u = 0;
    while (i < count_ || j < on) {
      if (j == on || (i < count_ && axes_[i] < oax[j])) {
        ux[u] = axes_[i];
        ue[u++] = epochs_[i++];
      } else if (i == count_ || oax[j] < axes_[i]) {
        ux[u] = oax[j];
        ue[u++] = oep[j++];
      } else {
        ux[u] = axes_[i];
        ue[u++] = epochs_[i] < oep[j] ? oep[j] : epochs_[i];
        ++i;
        ++j;
      }
    }
    for (std::size_t evict = u - Capacity; evict > 0; --evict) {
      std::size_t victim = u;
      for (std::size_t k = 0; k < u; ++k) {
        if (dropped[k] || (pinned != nullptr && ux[k] == *pinned)) continue;
        if (victim == u ||
            Overflow::evict_before(entry{ux[k], ue[k]}, entry{ux[victim], ue[victim]})) {
          victim = k;
        }
      }
      dropped[victim] = true;
    }
    std::size_t out = 0;
    for (std::size_t k = 0; k < u; ++k) {
      if (dropped[k]) continue;
      axes_[out] = ux[k];
      epochs_[out++] = ue[k];
    }
    count_ = static_cast<std::uint32_t>(out);
    tainted_ = true;
  }

  // Parallel arrays: the same-axes fast paths compare and max whole arrays,
  // which the compiler vectorises; only the first count_ slots are live.
  causal::axis axes_[Capacity];
  std::uint64_t epochs_[Capacity];
  std::uint32_t count_ = 0;
  bool tainted_ = false;
};

/// The default frontier: 12 entries, default axis layout, evict and taint.
using frontier = basic_frontier<>;

static_assert(sizeof(frontier) == 200, "frontier: expected 12 * 16 + 8 bytes");
static_assert(std::is_trivially_copyable_v<frontier>);

//===-- free functions ------------------------------------------------------===//

/// Returns true when `a` covers `b`: every entry of `b` is at most the same
/// axis's epoch in `a`. Always false when `b` is tainted (a requirement
/// with missing entries can never be proven met); a tainted `a` answers
/// from the entries it holds.
///
/// Complexity: O(a.size() + b.size()).
template <class A, class B>
  requires compatible_frontiers<A, B>
[[nodiscard]] constexpr bool dominates(const A& a, const B& b) noexcept {
  if (b.tainted()) return false;
  const std::size_t na = a.size(), nb = b.size();
  if (nb > na) return false;  // some axis of b is missing from a
  const causal::axis* aax = a.axes().data();
  const std::uint64_t* aep = a.epochs().data();
  const causal::axis* bax = b.axes().data();
  const std::uint64_t* bep = b.epochs().data();
  if (na == nb) {
    // Same-axes fast path (the common case: a queue's knowledge against a
    // signal from a peer that saw the same queues). No early exit, so the
    // loop compiles to straight-line compares the CPU can overlap.
    bool same_axes = true, covers = true;
    for (std::size_t k = 0; k < nb; ++k) {
      same_axes &= aax[k] == bax[k];
      covers &= aep[k] >= bep[k];
    }
    if (same_axes) return covers;
  }
  std::size_t i = 0;
  for (std::size_t j = 0; j < nb; ++j) {
    while (i < na && aax[i] < bax[j]) ++i;
    if (i == na || aax[i] != bax[j] || aep[i] < bep[j]) return false;
    ++i;
  }
  return true;
}

/// Classifies `a` against `b` consistently with `dominates`:
/// `equal` when each dominates the other, `after` when only `a` dominates,
/// `before` when only `b` dominates, `concurrent` otherwise. A tainted
/// frontier is therefore never dominated, and two tainted frontiers compare
/// `concurrent` even when their entries agree.
///
/// Complexity: O(a.size() + b.size()), one pass.
template <class A, class B>
  requires compatible_frontiers<A, B>
[[nodiscard]] constexpr order compare(const A& a, const B& b) noexcept {
  bool a_ahead = false;  // some axis where a's epoch > b's
  bool b_ahead = false;  // some axis where b's epoch > a's
  std::size_t i = 0, j = 0;
  const std::size_t na = a.size(), nb = b.size();
  const causal::axis* aax = a.axes().data();
  const std::uint64_t* aep = a.epochs().data();
  const causal::axis* bax = b.axes().data();
  const std::uint64_t* bep = b.epochs().data();
  while (i < na && j < nb) {
    if (aax[i] < bax[j]) {
      a_ahead = true;
      ++i;
    } else if (bax[j] < aax[i]) {
      b_ahead = true;
      ++j;
    } else {
      a_ahead |= aep[i] > bep[j];
      b_ahead |= bep[j] > aep[i];
      ++i;
      ++j;
    }
  }
  a_ahead |= i < na;
  b_ahead |= j < nb;
  const bool a_covers_b = !b_ahead && !b.tainted();
  const bool b_covers_a = !a_ahead && !a.tainted();
  if (a_covers_b && b_covers_a) return order::equal;
  if (a_covers_b) return order::after;
  if (b_covers_a) return order::before;
  return order::concurrent;
}

/// Returns the join of `a` and `b` as a new frontier of `a`'s type: a
/// plain frontier under an evicting policy, a `result` under a rejecting
/// one (`errc::capacity_exceeded` on overflow).
template <std::size_t C, class L, class O, std::size_t C2, class O2>
[[nodiscard]] constexpr auto merge(const basic_frontier<C, L, O>& a,
                                   const basic_frontier<C2, L, O2>& b) noexcept {
  basic_frontier<C, L, O> out = a;
  if constexpr (O::rejects) {
    using out_t = result<basic_frontier<C, L, O>>;
    const status s = out.merge(b);
    return s ? out_t{out} : out_t{s.error_value()};
  } else {
    out.merge(b);
    return out;
  }
}

/// Returns the entries of `requirement` that `knowledge` does not cover:
/// the (axis, epoch) points that device waits would have to reach before
/// `requirement` is met. Empty and untainted exactly when
/// `dominates(knowledge, requirement)`. A tainted requirement yields a
/// tainted result, since the entries it lost may be missing too.
template <class K, std::size_t C, class L, class O>
  requires compatible_frontiers<K, basic_frontier<C, L, O>>
[[nodiscard]] constexpr basic_frontier<C, L, O> find_undominated(
    const K& knowledge, const basic_frontier<C, L, O>& requirement) noexcept {
  frontier_entry gaps[C]{};
  std::size_t n = 0;
  const auto kax = knowledge.axes();
  const auto kep = knowledge.epochs();
  std::size_t i = 0;
  for (const frontier_entry e : requirement) {
    while (i < kax.size() && kax[i] < e.axis) ++i;
    if (i == kax.size() || kax[i] != e.axis || kep[i] < e.epoch) gaps[n++] = e;
  }
  // The gaps are a sorted subset of a valid frontier: this cannot fail.
  basic_frontier<C, L, O> missing =
      basic_frontier<C, L, O>::from_entries(std::span<const frontier_entry>(gaps, n)).value();
  if (requirement.tainted()) missing.set_tainted();
  return missing;
}

//===-- text form -----------------------------------------------------------===//

/// Returns the text form of `f`, e.g. `{m0.queue.1:5, m0.queue.2:3}`, with
/// ` tainted` appended when it is tainted. Allocates (a `std::string`).
template <std::size_t C, class L, class O>
[[nodiscard]] std::string to_string(const basic_frontier<C, L, O>& f) {
  std::string out = "{";
  bool first = true;
  for (const frontier_entry e : f) {
    if (!first) out += ", ";
    first = false;
    out += format_axis<L>(e.axis).view();
    out += ':';
    out += std::to_string(e.epoch);
  }
  out += '}';
  if (f.tainted()) out += " tainted";
  return out;
}

/// Writes the text form of `f` (see `to_string`).
template <class CharT, class Traits, std::size_t C, class L, class O>
std::basic_ostream<CharT, Traits>& operator<<(std::basic_ostream<CharT, Traits>& os,
                                              const basic_frontier<C, L, O>& f) {
  for (char c : to_string(f)) os.put(os.widen(c));
  return os;
}

/// Returns the name of `o` ("equal", "before", "after", "concurrent").
[[nodiscard]] constexpr std::string_view to_string(order o) noexcept {
  switch (o) {
    case order::equal: return "equal";
    case order::before: return "before";
    case order::after: return "after";
    case order::concurrent: return "concurrent";
  }
  return "unknown";
}

CAUSAL_END_NAMESPACE
