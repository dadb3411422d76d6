// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Property tests for <causal/frontier.hpp> and <causal/frontier_wire.hpp>
// against a reference vector clock, std::map<axis, epoch>.
//
// Each property runs CAUSAL_PROPERTY_CASES random cases (100 000 by
// default; 20 000 under AddressSanitizer or ThreadSanitizer). The random
// stream is splitmix64 (portable: the same seed gives the same cases with
// any standard library), seeded from `default_seed` below or from the
// environment variable CAUSAL_TEST_SEED (decimal or 0x-hex), so a failure
// reproduces with
//
//   CAUSAL_TEST_SEED=<seed> ./frontier_property_test "<test name>"
//
// A failing property stops at its first counterexample and prints the seed,
// the case number and the inputs.
//
// Axes are drawn from a pool of 20 with varied session, machine and domain
// bits, including raw values at and near 0, 2^63 and 2^64 - 1, so that
// inputs collide often. Epochs are mostly tiny (ties), sometimes large, and
// sometimes at 2^64 - 1.

#include <causal/frontier.hpp>
#include <causal/frontier_wire.hpp>

#include "catch.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#ifndef CAUSAL_PROPERTY_CASES
#if CAUSAL_HAS_ASAN() || CAUSAL_HAS_TSAN()
#define CAUSAL_PROPERTY_CASES 20000
#else
#define CAUSAL_PROPERTY_CASES 100000
#endif
#endif

namespace {

using causal::axis;
using causal::basic_frontier;
using causal::default_axis_layout;
using causal::errc;
using causal::frontier;
using causal::frontier_entry;
using causal::order;

constexpr std::uint64_t cases = CAUSAL_PROPERTY_CASES;
constexpr std::uint64_t default_seed = 0x5eedc0de2026ull;
constexpr std::uint64_t max64 = ~std::uint64_t{0};

std::uint64_t test_seed() {
  static const std::uint64_t seed = [] {
    const char* env = std::getenv("CAUSAL_TEST_SEED");
    const std::uint64_t s = (env != nullptr && *env != '\0') ? std::strtoull(env, nullptr, 0)
                                                              : default_seed;
    std::printf("frontier_property_test: seed 0x%llx (%s), %llu cases per property\n",
                static_cast<unsigned long long>(s),
                env != nullptr && *env != '\0' ? "from CAUSAL_TEST_SEED" : "default",
                static_cast<unsigned long long>(cases));
    return s;
  }();
  return seed;
}

/// splitmix64: tiny, fast, and specified here, so it is portable.
struct rng {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  std::uint64_t below(std::uint64_t n) { return next() % n; }
  bool one_in(std::uint64_t n) { return below(n) == 0; }
};

/// Each property gets its own stream, so one test run alone reproduces.
rng stream_for(std::uint64_t property) { return rng{test_seed() ^ (property * 0x2545f4914f6cdd1dull)}; }

constexpr axis make(std::uint64_t s, std::uint64_t m, causal::domain d, std::uint64_t o) {
  return causal::make_axis(s, m, d, o).value();
}

constexpr std::array<axis, 20> pool{{
    make(0, 0, causal::domain::queue, 1),
    make(0, 0, causal::domain::queue, 2),
    make(0, 0, causal::domain::queue, 3),
    make(0, 0, causal::domain::collective, 1),
    make(0, 0, causal::domain::host, 1),
    make(0, 1, causal::domain::queue, 1),
    make(0, 1, causal::domain::queue, 2),
    make(0, 1, causal::domain::epilogue, 7),
    make(0, 2, static_cast<causal::domain>(42), 1),
    make(1, 0, causal::domain::queue, 1),
    make(1, 255, causal::domain::collective, (std::uint64_t{1} << 40) - 1),
    make(2, 3, causal::domain::host, 5),
    make(254, 0, causal::domain::queue, 1),
    axis{0},
    axis{(std::uint64_t{1} << 63) - 1},
    axis{std::uint64_t{1} << 63},
    axis{(std::uint64_t{1} << 63) + 1},
    axis{max64 - 2},
    axis{max64 - 1},
    axis{max64},
}};

axis any_axis(rng& r) { return pool[r.below(pool.size())]; }

std::uint64_t any_epoch(rng& r) {
  switch (r.below(10)) {
    case 0: return max64 - r.below(3);
    case 1: return 1 + r.below(1'000'000);
    default: return 1 + r.below(6);
  }
}

/// The reference vector clock.
using ref_t = std::map<axis, std::uint64_t>;

template <class F>
ref_t ref_of(const F& f) {
  ref_t m;
  for (const frontier_entry e : f) m[e.axis] = e.epoch;
  return m;
}

ref_t ref_merge(ref_t a, const ref_t& b) {
  for (const auto& [x, e] : b) {
    std::uint64_t& slot = a[x];
    slot = std::max(slot, e);
  }
  return a;
}

bool ref_dominates(const ref_t& a, const ref_t& b) {
  for (const auto& [x, e] : b) {
    const auto it = a.find(x);
    if (it == a.end() || it->second < e) return false;
  }
  return true;
}

/// The eviction rank evict_and_taint documents, written out here so the
/// reference does not trust the header's own comparator: smallest epoch
/// first, ties broken by smallest axis.
struct documented_rank {
  static bool evict_before(const frontier_entry& a, const frontier_entry& b) {
    if (a.epoch != b.epoch) return a.epoch < b.epoch;
    return a.axis.raw() < b.axis.raw();
  }
};
template <class Policy>
struct reference_rank {
  using type = Policy;  // a policy written in this file
};
template <>
struct reference_rank<causal::evict_and_taint> {
  using type = documented_rank;
};

/// Drops the entries `Policy` ranks lowest until at most `capacity` remain.
template <class Policy>
ref_t ref_evict(ref_t m, std::size_t capacity) {
  while (m.size() > capacity) {
    auto victim = m.begin();
    for (auto it = m.begin(); it != m.end(); ++it) {
      if (Policy::evict_before(frontier_entry{it->first, it->second},
                               frontier_entry{victim->first, victim->second})) {
        victim = it;
      }
    }
    m.erase(victim);
  }
  return m;
}

template <class F>
bool holds(const F& f, const ref_t& m) {
  if (f.size() != m.size()) return false;
  auto it = m.begin();
  for (const frontier_entry e : f) {
    if (e.axis != it->first || e.epoch != it->second) return false;
    ++it;
  }
  return true;
}

template <class F>
std::string describe(const F& f) {
  std::ostringstream os;
  os << "{";
  bool first = true;
  for (const frontier_entry e : f) {
    os << (first ? "" : ", ") << "0x" << std::hex << e.axis.raw() << std::dec << ":" << e.epoch;
    first = false;
  }
  os << "}" << (f.tainted() ? " tainted" : "");
  return os.str();
}

std::string describe_ref(const ref_t& m) {
  std::ostringstream os;
  os << "{";
  bool first = true;
  for (const auto& [x, e] : m) {
    os << (first ? "" : ", ") << "0x" << std::hex << x.raw() << std::dec << ":" << e;
    first = false;
  }
  os << "}";
  return os.str();
}

/// A random frontier of type F with at most min(max_draws, Capacity)
/// entries (duplicates merge); tainted one time in `taint_one_in` (never
/// when 0).
template <class F>
F random_frontier(rng& r, std::size_t max_draws, std::uint64_t taint_one_in) {
  std::array<frontier_entry, F::capacity> draws{};
  const std::size_t n = static_cast<std::size_t>(r.below(std::min(max_draws, F::capacity) + 1));
  for (std::size_t i = 0; i < n; ++i) draws[i] = frontier_entry{any_axis(r), any_epoch(r)};
  F f = F::from_entries(std::span<const frontier_entry>(draws.data(), n)).value();
  if (taint_one_in != 0 && r.one_in(taint_one_in)) f.set_tainted();
  return f;
}

/// A user policy with a strict total order that ignores epochs.
struct evict_largest_axis {
  static constexpr bool rejects = false;
  static constexpr bool evict_before(const frontier_entry& a, const frontier_entry& b) noexcept {
    return a.axis > b.axis;
  }
};

using cap4 = basic_frontier<4>;
using largest_first3 = basic_frontier<3, default_axis_layout, evict_largest_axis>;

}  // namespace

// Stops the test at the first counterexample, printing it.
#define CAUSAL_PROPERTY(cond, inputs)                                                        \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      INFO("seed 0x" << std::hex << test_seed() << std::dec << ", case " << case_no << ": " \
                     << inputs);                                                             \
      REQUIRE((cond));                                                                       \
    }                                                                                        \
  } while (false)

//===-- merge -----------------------------------------------------------------------===//

TEMPLATE_TEST_CASE("frontier property: merge is the reference max, or its top-Capacity entries on overflow",
                   "[frontier][property][merge]", frontier, cap4, largest_first3) {
  using F = TestType;
  using P = typename F::overflow_type;
  rng r = stream_for(1 + F::capacity);
  std::uint64_t fitted = 0, overflowed = 0;
  for (std::uint64_t case_no = 0; case_no < cases; ++case_no) {
    const F a = random_frontier<F>(r, F::capacity, 8);
    const F b = random_frontier<F>(r, F::capacity, 8);
    F in_place = a;
    in_place.merge(b);
    const F pure = causal::merge(a, b);
    const ref_t full = ref_merge(ref_of(a), ref_of(b));
    const bool fits = full.size() <= F::capacity;
    const ref_t expected = fits ? full : ref_evict<typename reference_rank<P>::type>(full, F::capacity);
    const bool expected_taint = a.tainted() || b.tainted() || !fits;
    (fits ? fitted : overflowed) += 1;
    const auto inputs = [&] {
      return "a = " + describe(a) + ", b = " + describe(b) + ", got " + describe(in_place) +
             ", reference " + describe_ref(full);
    };
    CAUSAL_PROPERTY(in_place == pure, inputs());
    CAUSAL_PROPERTY(in_place.invariants_hold(), inputs());
    CAUSAL_PROPERTY(holds(in_place, expected), inputs());
    CAUSAL_PROPERTY(in_place.tainted() == expected_taint, inputs());
  }
  // Both regimes were exercised.
  CHECK(fitted > cases / 20);
  CHECK(overflowed > cases / 20);
}

TEMPLATE_TEST_CASE("frontier property: merge is associative, commutative and idempotent, even when it evicts",
                   "[frontier][property][merge][algebra]", frontier, cap4, largest_first3) {
  using F = TestType;
  rng r = stream_for(100 + F::capacity);
  std::uint64_t evicting_cases = 0;
  for (std::uint64_t case_no = 0; case_no < cases; ++case_no) {
    const F a = random_frontier<F>(r, F::capacity, 8);
    const F b = random_frontier<F>(r, F::capacity, 8);
    const F c = random_frontier<F>(r, F::capacity, 8);
    const F ab = causal::merge(a, b);
    const F left = causal::merge(ab, c);
    const F right = causal::merge(a, causal::merge(b, c));
    if (left.tainted() && !a.tainted() && !b.tainted() && !c.tainted()) ++evicting_cases;
    const auto inputs = [&] {
      return "a = " + describe(a) + ", b = " + describe(b) + ", c = " + describe(c) +
             ", (ab)c = " + describe(left) + ", a(bc) = " + describe(right);
    };
    CAUSAL_PROPERTY(left == right, inputs());
    CAUSAL_PROPERTY(ab == causal::merge(b, a), inputs());
    CAUSAL_PROPERTY(causal::merge(a, a) == a, inputs());
    CAUSAL_PROPERTY(causal::merge(ab, b) == ab, inputs());
    CAUSAL_PROPERTY(causal::merge(ab, ab) == ab, inputs());
  }
  CHECK(evicting_cases > cases / 20);
}

TEST_CASE("frontier property: an untainted merge that fits dominates both inputs",
          "[frontier][property][merge][dominates]") {
  rng r = stream_for(200);
  std::uint64_t checked = 0;
  for (std::uint64_t case_no = 0; case_no < cases; ++case_no) {
    const frontier a = random_frontier<frontier>(r, 12, 6);
    const frontier b = random_frontier<frontier>(r, 12, 6);
    const frontier m = causal::merge(a, b);
    const auto inputs = [&] { return "a = " + describe(a) + ", b = " + describe(b) + ", m = " + describe(m); };
    if (!a.tainted() && !b.tainted() && !m.tainted()) {
      ++checked;
      CAUSAL_PROPERTY(causal::dominates(m, a), inputs());
      CAUSAL_PROPERTY(causal::dominates(m, b), inputs());
      const order ma = causal::compare(m, a);
      CAUSAL_PROPERTY(ma == order::after || ma == order::equal, inputs());
    }
    // Tainted knowledge still covers what it holds.
    if (!a.tainted() && ref_dominates(ref_of(m), ref_of(a))) {
      CAUSAL_PROPERTY(causal::dominates(m, a), inputs());
    }
  }
  CHECK(checked > cases / 4);
}

TEST_CASE("frontier property: reject_overflow changes a frontier exactly when the result fits",
          "[frontier][property][merge][reject]") {
  using R = basic_frontier<4, default_axis_layout, causal::reject_overflow>;
  rng r = stream_for(150);
  std::uint64_t accepted = 0, refused = 0;
  for (std::uint64_t case_no = 0; case_no < cases; ++case_no) {
    const R a = random_frontier<R>(r, 4, 8);
    const R b = random_frontier<R>(r, 4, 8);
    R x = a;
    const causal::status s = x.merge(b);
    const auto pure = causal::merge(a, b);
    const ref_t full = ref_merge(ref_of(a), ref_of(b));
    const bool fits = full.size() <= R::capacity;
    (fits ? accepted : refused) += 1;
    const auto inputs = [&] { return "a = " + describe(a) + ", b = " + describe(b) + ", got " + describe(x); };
    CAUSAL_PROPERTY(s.ok() == fits, inputs());
    CAUSAL_PROPERTY(pure.ok() == fits, inputs());
    if (fits) {
      CAUSAL_PROPERTY(holds(x, full) && x.tainted() == (a.tainted() || b.tainted()), inputs());
      CAUSAL_PROPERTY(*pure == x, inputs());
    } else {
      CAUSAL_PROPERTY(x == a, inputs());
      CAUSAL_PROPERTY(s.code() == errc::capacity_exceeded && pure.code() == errc::capacity_exceeded,
                      inputs());
    }
    const axis y = any_axis(r);
    const std::uint64_t e = any_epoch(r);
    R z = a;
    const bool room = a.contains(y) || a.size() < R::capacity;
    const causal::status si = z.insert_or_raise(y, e);
    CAUSAL_PROPERTY(si.ok() == room, inputs());
    CAUSAL_PROPERTY(room ? holds(z, ref_merge(ref_of(a), ref_t{{y, e}})) : z == a, inputs());
  }
  CHECK(accepted > cases / 20);
  CHECK(refused > cases / 20);
}

//===-- dominates, compare, find_undominated ----------------------------------------------===//

namespace {
/// A frontier related to `a`: a copy, a raise, a lowering, a subset, an
/// extension, or unrelated, with random taint.
frontier related_to(rng& r, const frontier& a) {
  frontier b;
  switch (r.below(6)) {
    case 0: b = a; break;
    case 1: b = causal::merge(a, random_frontier<frontier>(r, 3, 0)); break;
    case 2:  // a subset with epochs possibly lowered
      for (const frontier_entry e : a) {
        if (r.one_in(3)) continue;
        b.insert_or_raise(e.axis, r.one_in(2) ? e.epoch : 1 + r.below(e.epoch));
      }
      break;
    case 3:  // a with one entry raised
      b = a;
      if (!a.empty()) {
        const frontier_entry e = a[static_cast<std::size_t>(r.below(a.size()))];
        if (e.epoch != max64) b.insert_or_raise(e.axis, e.epoch + 1);
      }
      break;
    default: b = random_frontier<frontier>(r, 12, 0); break;
  }
  if (r.one_in(8)) b.set_tainted();
  return b;
}

order expected_order(bool a_covers_b, bool b_covers_a) {
  if (a_covers_b && b_covers_a) return order::equal;
  if (a_covers_b) return order::after;
  if (b_covers_a) return order::before;
  return order::concurrent;
}

order mirror(order o) {
  return o == order::before ? order::after : o == order::after ? order::before : o;
}
}  // namespace

TEST_CASE("frontier property: dominates matches the reference, and is false for a tainted requirement",
          "[frontier][property][dominates]") {
  rng r = stream_for(300);
  std::uint64_t yes = 0, no = 0;
  for (std::uint64_t case_no = 0; case_no < cases; ++case_no) {
    const frontier a = random_frontier<frontier>(r, 12, 8);
    const frontier b = related_to(r, a);
    const bool got = causal::dominates(a, b);
    const bool expected = !b.tainted() && ref_dominates(ref_of(a), ref_of(b));
    (got ? yes : no) += 1;
    const auto inputs = [&] { return "a = " + describe(a) + ", b = " + describe(b); };
    CAUSAL_PROPERTY(got == expected, inputs());
    // Knowledge-side taint never changes the answer.
    frontier ta = a;
    ta.set_tainted();
    CAUSAL_PROPERTY(causal::dominates(ta, b) == got, inputs());
    // Across capacities: a wide copy of the same knowledge answers alike.
    basic_frontier<32> wide;
    wide.merge(a);
    CAUSAL_PROPERTY(causal::dominates(wide, b) == got, inputs());
  }
  CHECK(yes > cases / 10);
  CHECK(no > cases / 10);
}

TEST_CASE("frontier property: compare is consistent with dominates", "[frontier][property][compare]") {
  rng r = stream_for(400);
  std::array<std::uint64_t, 4> seen{};
  for (std::uint64_t case_no = 0; case_no < cases; ++case_no) {
    const frontier a = random_frontier<frontier>(r, 12, 8);
    const frontier b = related_to(r, a);
    const order ab = causal::compare(a, b);
    const order ba = causal::compare(b, a);
    ++seen[static_cast<std::size_t>(ab)];
    const auto inputs = [&] {
      return "a = " + describe(a) + ", b = " + describe(b) + ", compare = " +
             std::string(causal::to_string(ab));
    };
    CAUSAL_PROPERTY(ab == expected_order(causal::dominates(a, b), causal::dominates(b, a)), inputs());
    CAUSAL_PROPERTY(ba == mirror(ab), inputs());
    if (a.tainted() && b.tainted()) CAUSAL_PROPERTY(ab == order::concurrent, inputs());
  }
  for (std::size_t o = 0; o < seen.size(); ++o) {
    INFO("order " << causal::to_string(static_cast<order>(o)));
    CHECK(seen[o] > cases / 50);
  }
}

TEST_CASE("frontier property: find_undominated is exactly the reference's uncovered entries",
          "[frontier][property][find_undominated]") {
  rng r = stream_for(500);
  for (std::uint64_t case_no = 0; case_no < cases; ++case_no) {
    const frontier knowledge = random_frontier<frontier>(r, 12, 8);
    const frontier requirement = related_to(r, knowledge);
    const frontier gaps = causal::find_undominated(knowledge, requirement);
    const ref_t k = ref_of(knowledge);
    ref_t expected;
    for (const frontier_entry e : requirement) {
      const auto it = k.find(e.axis);
      if (it == k.end() || it->second < e.epoch) expected[e.axis] = e.epoch;
    }
    const auto inputs = [&] {
      return "knowledge = " + describe(knowledge) + ", requirement = " + describe(requirement) +
             ", gaps = " + describe(gaps);
    };
    CAUSAL_PROPERTY(holds(gaps, expected), inputs());
    CAUSAL_PROPERTY(gaps.tainted() == requirement.tainted(), inputs());
    CAUSAL_PROPERTY((gaps.empty() && !gaps.tainted()) == causal::dominates(knowledge, requirement),
                    inputs());
    CAUSAL_PROPERTY(gaps.invariants_hold(), inputs());
  }
}

//===-- overflow soundness ----------------------------------------------------------------===//

TEST_CASE("frontier property: overflow never makes a requirement easier to satisfy",
          "[frontier][property][overflow][soundness]") {
  rng r = stream_for(600);
  std::uint64_t tainted_but_covered = 0, untainted_and_dominated = 0;
  for (std::uint64_t case_no = 0; case_no < cases; ++case_no) {
    // A requirement built by merges into a small frontier, and the full one.
    cap4 requirement;
    ref_t full;
    const std::uint64_t parts = 1 + r.below(4);
    for (std::uint64_t p = 0; p < parts; ++p) {
      const cap4 part = random_frontier<cap4>(r, 4, 0);
      requirement.merge(part);
      full = ref_merge(full, ref_of(part));
    }
    // Knowledge near the full requirement: every entry kept, raised or
    // lowered at random, sometimes dropped, sometimes extra ones.
    basic_frontier<32> knowledge;
    for (const auto& [x, e] : full) {
      switch (r.below(8)) {
        case 0: break;                                                       // dropped
        case 1: knowledge.insert_or_raise(x, 1 + r.below(e)); break;         // maybe lower
        case 2: knowledge.insert_or_raise(x, e == max64 ? e : e + 1); break;  // higher
        default: knowledge.insert_or_raise(x, e); break;                      // same
      }
    }
    if (r.one_in(4)) knowledge.insert_or_raise(any_axis(r), any_epoch(r));
    if (r.one_in(8)) knowledge.set_tainted();

    const bool claimed = causal::dominates(knowledge, requirement);
    const bool truly = ref_dominates(ref_of(knowledge), full);
    const auto inputs = [&] {
      return "knowledge = " + describe(knowledge) + ", requirement = " + describe(requirement) +
             ", full requirement = " + describe_ref(full);
    };
    CAUSAL_PROPERTY(requirement.tainted() == (full.size() > cap4::capacity), inputs());
    CAUSAL_PROPERTY(!claimed || truly, inputs());
    if (requirement.tainted()) {
      CAUSAL_PROPERTY(!claimed, inputs());
      CAUSAL_PROPERTY(causal::find_undominated(knowledge, requirement).tainted(), inputs());
      if (truly) ++tainted_but_covered;
    } else {
      CAUSAL_PROPERTY(claimed == truly, inputs());
      if (claimed) ++untainted_and_dominated;
    }
  }
  CHECK(tainted_but_covered > cases / 20);
  CHECK(untainted_and_dominated > cases / 20);
}

TEST_CASE("frontier property: merge chains that overflow keep exactly the top-ranked reference entries",
          "[frontier][property][overflow]") {
  rng r = stream_for(700);
  for (std::uint64_t case_no = 0; case_no < cases; ++case_no) {
    cap4 k;
    ref_t full;
    const std::uint64_t steps = 1 + r.below(8);
    for (std::uint64_t s = 0; s < steps; ++s) {
      const cap4 part = random_frontier<cap4>(r, 4, 0);
      k.merge(part);
      full = ref_merge(full, ref_of(part));
      const auto inputs = [&] {
        return "step " + std::to_string(s) + ", part = " + describe(part) + ", k = " + describe(k) +
               ", reference = " + describe_ref(full);
      };
      CAUSAL_PROPERTY(k.invariants_hold(), inputs());
      // Every held epoch is the reference's: evicted knowledge is a subset.
      for (const frontier_entry e : k) {
        CAUSAL_PROPERTY(full.count(e.axis) == 1 && full.at(e.axis) == e.epoch, inputs());
      }
      CAUSAL_PROPERTY(holds(k, ref_evict<documented_rank>(full, cap4::capacity)), inputs());
      CAUSAL_PROPERTY(k.tainted() == (full.size() > cap4::capacity), inputs());
    }
  }
}

TEST_CASE("frontier property: insert and pinned-merge chains never hold more than the reference",
          "[frontier][property][overflow]") {
  rng r = stream_for(750);
  for (std::uint64_t case_no = 0; case_no < cases; ++case_no) {
    cap4 k;
    ref_t full;
    const axis own = any_axis(r);
    const std::uint64_t steps = 1 + r.below(10);
    for (std::uint64_t s = 0; s < steps; ++s) {
      const std::uint64_t own_before = k.epoch_of(own);
      const bool insert = r.one_in(2);
      axis x{};
      std::uint64_t e = 0;
      cap4 part;
      if (insert) {
        x = any_axis(r);
        e = any_epoch(r);
        k.insert_or_raise(x, e);
        full = ref_merge(full, ref_t{{x, e}});
      } else {
        part = random_frontier<cap4>(r, 4, 0);
        k.merge(part, own);
        full = ref_merge(full, ref_of(part));
      }
      const auto inputs = [&] {
        return "step " + std::to_string(s) + (insert ? ", insert " : ", pinned merge ") +
               describe(part) + " k = " + describe(k) + ", reference = " + describe_ref(full);
      };
      CAUSAL_PROPERTY(k.invariants_hold(), inputs());
      for (const frontier_entry entry : k) {
        CAUSAL_PROPERTY(full.count(entry.axis) == 1 && entry.epoch <= full.at(entry.axis), inputs());
      }
      if (insert) CAUSAL_PROPERTY(k.epoch_of(x) >= e, inputs());              // the inserted axis stays
      if (!insert) CAUSAL_PROPERTY(k.epoch_of(own) >= own_before, inputs());  // the pinned axis stays
      if (full.size() > cap4::capacity) CAUSAL_PROPERTY(k.tainted(), inputs());
    }
  }
}

TEST_CASE("frontier property: from_entries matches the reference and fails only when over Capacity",
          "[frontier][property][from_entries]") {
  rng r = stream_for(800);
  for (std::uint64_t case_no = 0; case_no < cases; ++case_no) {
    std::array<frontier_entry, 18> in{};
    const std::size_t n = static_cast<std::size_t>(r.below(in.size() + 1));
    ref_t expected;
    for (std::size_t i = 0; i < n; ++i) {
      in[i] = frontier_entry{any_axis(r), r.one_in(6) ? 0 : any_epoch(r)};
      if (in[i].epoch != 0) expected[in[i].axis] = std::max(expected[in[i].axis], in[i].epoch);
    }
    const auto got = frontier::from_entries(std::span<const frontier_entry>(in.data(), n));
    const auto inputs = [&] { return "expected " + describe_ref(expected); };
    CAUSAL_PROPERTY(got.ok() == (expected.size() <= frontier::capacity), inputs());
    if (got.ok()) {
      CAUSAL_PROPERTY(holds(*got, expected), inputs());
      CAUSAL_PROPERTY(!got->tainted(), inputs());
    } else {
      CAUSAL_PROPERTY(got.code() == errc::capacity_exceeded, inputs());
    }
  }
}

//===-- wire ------------------------------------------------------------------------------===//

TEST_CASE("frontier property: serialize then deserialize is the identity", "[wire][property][roundtrip]") {
  rng r = stream_for(900);
  std::array<std::byte, causal::max_serialized_size<frontier>> buffer{};
  for (std::uint64_t case_no = 0; case_no < cases; ++case_no) {
    const frontier f = random_frontier<frontier>(r, 12, 4);
    const auto n = causal::serialize(f, std::span<std::byte>(buffer));
    const auto inputs = [&] { return "f = " + describe(f); };
    CAUSAL_PROPERTY(n.ok(), inputs());
    CAUSAL_PROPERTY(*n == causal::serialized_size(f), inputs());
    CAUSAL_PROPERTY(*n <= causal::max_serialized_size<frontier>, inputs());
    const std::span<const std::byte> bytes(buffer.data(), *n);
    const auto back = causal::deserialize<frontier>(bytes);
    CAUSAL_PROPERTY(back.ok() && *back == f, inputs());
    const auto small = causal::deserialize<cap4>(bytes);
    CAUSAL_PROPERTY(small.ok() == (f.size() <= cap4::capacity), inputs());
    if (small.ok()) {
      CAUSAL_PROPERTY(holds(*small, ref_of(f)) && small->tainted() == f.tainted(), inputs());
    } else {
      CAUSAL_PROPERTY(small.code() == errc::capacity_exceeded && small.error_value().position() == 2,
                      inputs());
    }
    if (case_no % 16 == 0) {
      const std::vector<std::byte> v = causal::serialize(f);
      CAUSAL_PROPERTY(std::equal(v.begin(), v.end(), bytes.begin(), bytes.end()), inputs());
    }
  }
}

namespace {
void mutate(rng& r, std::vector<std::byte>& b) {
  static constexpr std::uint8_t interesting[] = {0x00, 0x01, 0x02, 0x7f, 0x80, 0x81, 0xfe, 0xff};
  const std::uint64_t count = 1 + r.below(3);
  for (std::uint64_t m = 0; m < count; ++m) {
    const std::size_t at = b.empty() ? 0 : static_cast<std::size_t>(r.below(b.size()));
    switch (r.below(8)) {
      case 0:
        if (!b.empty()) b[at] ^= static_cast<std::byte>(1u << r.below(8));
        break;
      case 1:
        if (!b.empty()) b[at] = static_cast<std::byte>(r.below(256));
        break;
      case 2:
        if (!b.empty()) b[at] = static_cast<std::byte>(interesting[r.below(std::size(interesting))]);
        break;
      case 3:
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(b.empty() ? 0 : r.below(b.size() + 1)),
                 static_cast<std::byte>(interesting[r.below(std::size(interesting))]));
        break;
      case 4:
        if (!b.empty()) b.erase(b.begin() + static_cast<std::ptrdiff_t>(at));
        break;
      case 5:
        b.resize(static_cast<std::size_t>(r.below(b.size() + 1)));
        break;
      case 6:
        b.push_back(static_cast<std::byte>(r.below(256)));
        break;
      default:  // bump a byte by +-1 (keeps varints plausible)
        if (!b.empty()) b[at] = static_cast<std::byte>(static_cast<std::uint8_t>(b[at]) + (r.one_in(2) ? 1 : 255));
        break;
    }
  }
}

template <class F>
bool decodes_soundly(std::span<const std::byte> bytes, bool& accepted) {
  const causal::result<F> got = causal::deserialize<F>(bytes);
  accepted = got.ok();
  if (got.ok()) {
    if (!got->invariants_hold() || got->size() > F::capacity) return false;
    const std::vector<std::byte> again = causal::serialize(*got);
    return std::equal(again.begin(), again.end(), bytes.begin(), bytes.end());
  }
  const errc c = got.code();
  if (c != errc::truncated && c != errc::malformed && c != errc::unsupported_version &&
      c != errc::capacity_exceeded) {
    return false;
  }
  // Positions are byte offsets within (or just past) the input; the
  // version error is checked on its own in frontier_wire_test.
  return c == errc::unsupported_version || got.error_value().position() <= bytes.size();
}
}  // namespace

TEST_CASE("frontier property: mutated encodings never crash; accepted ones are valid and canonical",
          "[wire][property][fuzz]") {
  rng r = stream_for(1000);
  std::uint64_t accepted_count = 0, rejected_count = 0;
  std::vector<std::byte> bytes;
  for (std::uint64_t case_no = 0; case_no < cases; ++case_no) {
    const frontier f = random_frontier<frontier>(r, 12, 4);
    bytes = causal::serialize(f);
    mutate(r, bytes);
    const auto inputs = [&] {
      std::ostringstream os;
      os << "from " << describe(f) << ", mutated bytes:" << std::hex;
      for (std::byte x : bytes) os << ' ' << static_cast<unsigned>(x);
      return os.str();
    };
    bool accepted = false;
    CAUSAL_PROPERTY(decodes_soundly<frontier>(bytes, accepted), inputs());
    (accepted ? accepted_count : rejected_count) += 1;
    bool accepted_small = false;
    CAUSAL_PROPERTY(decodes_soundly<cap4>(bytes, accepted_small), inputs());
    CAUSAL_PROPERTY(!accepted_small || accepted, inputs());
    const std::vector<std::uint8_t> as_u8(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                          reinterpret_cast<const std::uint8_t*>(bytes.data()) + bytes.size());
    CAUSAL_PROPERTY(causal::deserialize<frontier>(std::span<const std::uint8_t>(as_u8)).ok() == accepted,
                    inputs());
  }
  CHECK(accepted_count > cases / 20);
  CHECK(rejected_count > cases / 2);
}
