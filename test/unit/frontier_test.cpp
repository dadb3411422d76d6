// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Tests for <causal/frontier.hpp>: worked examples of merge, dominance,
// insert_or_raise and transitivity, invariants, observers, merge (in place,
// pure, mixed capacities, the same-axes fast path), overflow under
// evict_and_taint, pinned merges, reject_overflow, from_entries, dominance
// and the soundness rule on both sides, compare, find_undominated, constexpr
// use, a user overflow policy, the text form, and the promise that hot paths
// never allocate.
//
// Axes are written A, B, C, ... = m0.queue.1, m0.queue.2, ...; a frontier
// {A:5, B:3} is written `frontier{{A, 5}, {B, 3}}`.

#include <causal/frontier.hpp>
#include <causal/frontier_wire.hpp>

#include "catch.hpp"
#include "string_makers.hpp"
#include "counting_new.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <new>
#include <ranges>
#include <span>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace Catch {
template <>
struct StringMaker<causal::order> {
  static std::string convert(causal::order o) { return std::string(causal::to_string(o)); }
};
template <>
struct StringMaker<causal::frontier_entry> {
  static std::string convert(const causal::frontier_entry& e) {
    return causal::to_string(e.axis) + ":" + std::to_string(e.epoch);
  }
};
}  // namespace Catch

namespace {

using causal::axis;
using causal::basic_frontier;
using causal::default_axis_layout;
using causal::errc;
using causal::frontier;
using causal::frontier_entry;
using causal::order;

constexpr axis A{1};
constexpr axis B{2};
constexpr axis C{3};
constexpr axis D{4};
constexpr axis E{5};

template <std::size_t Capacity>
using evicting = basic_frontier<Capacity>;
template <std::size_t Capacity>
using rejecting = basic_frontier<Capacity, default_axis_layout, causal::reject_overflow>;

/// A user policy: on overflow, drop the entry with the largest axis first
/// (a strict total order on entries of distinct axes, as the concept asks).
struct evict_largest_axis {
  static constexpr bool rejects = false;
  static constexpr bool evict_before(const frontier_entry& a, const frontier_entry& b) noexcept {
    return a.axis > b.axis;
  }
};
/// A user policy that refuses, like reject_overflow.
struct refuse {
  static constexpr bool rejects = true;
};

template <std::size_t C>
using largest_first = basic_frontier<C, default_axis_layout, evict_largest_axis>;

/// Returns `f` with its taint set.
template <class F>
constexpr F tainted(F f) {
  f.set_tainted();
  return f;
}

/// Builds a frontier of any policy from entries (which must fit).
template <class F>
F make(std::initializer_list<frontier_entry> entries) {
  const auto r = F::from_entries(std::span<const frontier_entry>(entries.begin(), entries.size()));
  REQUIRE(r.ok());
  return *r;
}

template <class F>
std::vector<frontier_entry> entries_of(const F& f) {
  return std::vector<frontier_entry>(f.begin(), f.end());
}

}  // namespace

//===-- worked examples of the frontier operations --------------------------===//

TEST_CASE("frontier: merge({A:5,B:3}, {A:2,B:7,C:4}) = {A:5,B:7,C:4}", "[frontier][example][merge]") {
  const frontier a{{A, 5}, {B, 3}};
  const frontier b{{A, 2}, {B, 7}, {C, 4}};
  const frontier expected{{A, 5}, {B, 7}, {C, 4}};
  CHECK(causal::merge(a, b) == expected);
  CHECK(causal::merge(b, a) == expected);
  frontier in_place = a;
  in_place.merge(b);
  CHECK(in_place == expected);
  CHECK_FALSE(in_place.tainted());
}

TEST_CASE("frontier: dominates({A:5,B:7,C:4}, {A:3,B:7}) is true", "[frontier][example][dominates]") {
  CHECK(causal::dominates(frontier{{A, 5}, {B, 7}, {C, 4}}, frontier{{A, 3}, {B, 7}}));
}

TEST_CASE("frontier: dominates({A:5,B:7}, {A:3,C:4}) is false (C unknown)",
          "[frontier][example][dominates]") {
  CHECK_FALSE(causal::dominates(frontier{{A, 5}, {B, 7}}, frontier{{A, 3}, {C, 4}}));
}

TEST_CASE("frontier: insert_or_raise({A:5,B:3}, C, 4) = {A:5,B:3,C:4}",
          "[frontier][example][insert]") {
  frontier f{{A, 5}, {B, 3}};
  f.insert_or_raise(C, 4);
  CHECK(f == frontier{{A, 5}, {B, 3}, {C, 4}});
}

TEST_CASE("frontier: insert_or_raise({A:5,B:3}, A, 8) = {A:8,B:3}", "[frontier][example][insert]") {
  frontier f{{A, 5}, {B, 3}};
  f.insert_or_raise(A, 8);
  CHECK(f == frontier{{A, 8}, {B, 3}});
}

TEST_CASE("frontier: lower_to lowers one entry, removes it at 0, and never raises",
          "[frontier][example][lower]") {
  frontier f{{A, 5}, {B, 3}, {C, 4}};
  f.lower_to(B, 2);
  CHECK(f == frontier{{A, 5}, {B, 2}, {C, 4}});
  f.lower_to(B, 7);  // higher: unchanged
  CHECK(f == frontier{{A, 5}, {B, 2}, {C, 4}});
  f.lower_to(D, 1);  // absent: unchanged
  CHECK(f == frontier{{A, 5}, {B, 2}, {C, 4}});
  f.lower_to(A, 0);  // removed, order kept
  CHECK(f == frontier{{B, 2}, {C, 4}});
  CHECK(f.invariants_hold());
  f.lower_to(C, 0);
  f.lower_to(B, 0);
  CHECK(f.empty());
  // Taint is kept: knowing less never makes a frontier complete.
  frontier t = tainted(frontier{{A, 5}});
  t.lower_to(A, 4);
  CHECK(t.tainted());
  CHECK(t.epoch_of(A) == 4);
}

TEST_CASE("frontier: knowledge is transitive: Q_C learns A:5 through Q_B without meeting Q_A",
          "[frontier][example][transitivity]") {
  causal::axis_allocator axes{0};
  const axis qa = axes.allocate(0, causal::domain::queue).value();
  const axis qb = axes.allocate(1, causal::domain::queue).value();
  const axis qc = axes.allocate(2, causal::domain::queue).value();

  // Q_A signals S_1 with {A:5}.
  frontier know_a;
  know_a.insert_or_raise(qa, 5);
  const frontier s1 = know_a;
  REQUIRE(s1 == frontier{{qa, 5}});

  // Q_B waits on S_1 (imports it), runs, and signals S_2 with its own B:3.
  frontier know_b{{qb, 2}};
  know_b.merge(s1, qb);
  know_b.insert_or_raise(qb, 3);
  const frontier s2 = know_b;
  CHECK(s2 == frontier{{qa, 5}, {qb, 3}});

  // Q_C waits on S_2 only.
  frontier know_c{{qc, 1}};
  know_c.merge(s2, qc);
  CHECK(know_c.epoch_of(qa) == 5);
  CHECK(know_c.epoch_of(qb) == 3);
  CHECK(know_c.epoch_of(qc) == 1);
  CHECK(causal::dominates(know_c, s1));  // Q_C may elide a wait on S_1 >= 1
  CHECK(causal::dominates(know_c, s2));
  CHECK(causal::compare(s1, know_c) == order::before);
}

//===-- construction, invariants, observers -------------------------------------===//

TEST_CASE("frontier: a default frontier is empty, untainted and valid", "[frontier][basics]") {
  constexpr frontier f;
  STATIC_REQUIRE(f.empty());
  STATIC_REQUIRE(f.size() == 0);
  STATIC_REQUIRE(!f.tainted());
  STATIC_REQUIRE(f.invariants_hold());
  STATIC_REQUIRE(f.begin() == f.end());
  STATIC_REQUIRE(frontier::capacity == 12);
  STATIC_REQUIRE(evicting<4>::capacity == 4);
  CHECK(f.axes().empty());
  CHECK(f.epochs().empty());
}

TEST_CASE("frontier: the slots past size() are never read (construction leaves them unwritten)",
          "[frontier][basics]") {
  // Two frontiers built in storage pre-filled with different bytes go
  // through the same operations; any read of a slot past size() would make
  // their results differ.
  alignas(frontier) std::array<std::byte, sizeof(frontier)> zeros;
  alignas(frontier) std::array<std::byte, sizeof(frontier)> ones;
  zeros.fill(std::byte{0x00});
  ones.fill(std::byte{0xff});
  const frontier other{{A, 3}, {C, 9}, {D, 1}};
  const auto run = [&](std::array<std::byte, sizeof(frontier)>& storage) {
    auto* f = ::new (storage.data()) frontier{{B, 2}};
    std::vector<std::uint64_t> seen;
    f->insert_or_raise(A, 1);
    seen.push_back(f->size());
    seen.push_back(f->epoch_of(A));
    seen.push_back(causal::dominates(*f, other) ? 1 : 0);
    seen.push_back(causal::dominates(other, *f) ? 1 : 0);
    seen.push_back(static_cast<std::uint64_t>(causal::compare(*f, other)));
    f->merge(other);
    seen.push_back(f->size());
    for (const auto& e : *f) {
      seen.push_back(e.axis.raw());
      seen.push_back(e.epoch);
    }
    seen.push_back(*f == frontier{{A, 3}, {B, 2}, {C, 9}, {D, 1}} ? 1 : 0);
    auto* empty = ::new (storage.data()) frontier;
    seen.push_back(empty->size());
    seen.push_back(causal::dominates(*empty, frontier{}) ? 1 : 0);
    seen.push_back(*empty == frontier{} ? 1 : 0);
    return seen;
  };
  const std::vector<std::uint64_t> from_zeros = run(zeros);
  CHECK(from_zeros == run(ones));
  CHECK(from_zeros[5] == 4);   // merged size
  CHECK(from_zeros[14] == 1);  // equal to the expected merge
}

TEST_CASE("frontier: size and layout are as documented", "[frontier][basics]") {
  STATIC_REQUIRE(sizeof(frontier) == 200);
  STATIC_REQUIRE(sizeof(evicting<4>) == 4 * 16 + 8);
  STATIC_REQUIRE(sizeof(evicting<1>) == 24);
  STATIC_REQUIRE(std::is_trivially_copyable_v<evicting<4>>);
  STATIC_REQUIRE(std::is_trivially_copyable_v<rejecting<3>>);
  STATIC_REQUIRE(std::is_same_v<frontier, basic_frontier<12, default_axis_layout, causal::evict_and_taint>>);
  STATIC_REQUIRE(std::is_void_v<frontier::op_status>);
  STATIC_REQUIRE(std::is_same_v<rejecting<4>::op_status, causal::status>);
  STATIC_REQUIRE(std::is_same_v<basic_frontier<4, default_axis_layout, refuse>::op_status, causal::status>);
  STATIC_REQUIRE(std::is_same_v<frontier::layout_type, default_axis_layout>);
  STATIC_REQUIRE(std::is_same_v<rejecting<4>::overflow_type, causal::reject_overflow>);
}

TEST_CASE("frontier: construction sorts by axis, skips zero epochs, keeps the larger duplicate",
          "[frontier][basics]") {
  const frontier f{{D, 1}, {B, 0}, {A, 3}, {C, 2}, {A, 7}, {C, 1}, {E, 0}};
  CHECK(f.invariants_hold());
  CHECK(f.size() == 3);
  CHECK_FALSE(f.tainted());
  CHECK(entries_of(f) == std::vector<frontier_entry>{{A, 7}, {C, 2}, {D, 1}});
  CHECK_FALSE(f.contains(B));
  CHECK(frontier{{A, 0}}.empty());
}

TEST_CASE("frontier: epoch_of and contains report held entries and 0 for absent axes",
          "[frontier][observers]") {
  const frontier f{{B, 4}, {D, 9}};
  CHECK(f.epoch_of(B) == 4);
  CHECK(f.epoch_of(D) == 9);
  CHECK(f.epoch_of(A) == 0);  // below the first
  CHECK(f.epoch_of(C) == 0);  // between
  CHECK(f.epoch_of(E) == 0);  // above the last
  CHECK(f.contains(B));
  CHECK(f.contains(D));
  CHECK_FALSE(f.contains(A));
  CHECK_FALSE(f.contains(C));
  CHECK_FALSE(f.contains(E));
  const frontier huge{{axis{~std::uint64_t{0}}, ~std::uint64_t{0}}, {axis{0}, 1}};
  CHECK(huge.epoch_of(axis{~std::uint64_t{0}}) == ~std::uint64_t{0});
  CHECK(huge.epoch_of(axis{0}) == 1);
  CHECK(huge[0].axis == axis{0});
}

TEST_CASE("frontier: iteration visits entries in axis order and is random access",
          "[frontier][observers]") {
  STATIC_REQUIRE(std::random_access_iterator<frontier::const_iterator>);
  STATIC_REQUIRE(std::ranges::random_access_range<frontier>);
  STATIC_REQUIRE(std::ranges::sized_range<frontier>);
  STATIC_REQUIRE(std::is_same_v<std::iter_value_t<frontier::const_iterator>, frontier_entry>);

  const frontier f{{C, 3}, {A, 1}, {E, 5}, {B, 2}};
  std::vector<frontier_entry> seen;
  for (const frontier_entry e : f) seen.push_back(e);
  CHECK(seen == std::vector<frontier_entry>{{A, 1}, {B, 2}, {C, 3}, {E, 5}});

  auto it = f.begin();
  CHECK(f.end() - it == 4);
  CHECK((*it).axis == A);
  CHECK(it[2] == frontier_entry{C, 3});
  CHECK(*(it + 3) == frontier_entry{E, 5});
  CHECK(*(3 + it) == frontier_entry{E, 5});
  ++it;
  CHECK((*it).axis == B);
  it += 2;
  CHECK((*it).axis == E);
  --it;
  CHECK((*it).axis == C);
  it -= 2;
  CHECK(it == f.begin());
  CHECK(it < f.end());
  CHECK(*(f.end() - 1) == frontier_entry{E, 5});
  auto post = it++;
  CHECK(post == f.begin());
  CHECK(it - post == 1);
  CHECK(f[0] == frontier_entry{A, 1});
  CHECK(f[3] == frontier_entry{E, 5});
  CHECK(std::ranges::distance(f) == 4);
}

TEST_CASE("frontier: axes() and epochs() are parallel spans of the entries",
          "[frontier][observers]") {
  const frontier f{{C, 30}, {A, 10}, {B, 20}};
  const std::span<const axis> axes = f.axes();
  const std::span<const std::uint64_t> epochs = f.epochs();
  REQUIRE(axes.size() == 3);
  REQUIRE(epochs.size() == 3);
  CHECK(axes[0] == A);
  CHECK(axes[1] == B);
  CHECK(axes[2] == C);
  CHECK(epochs[0] == 10);
  CHECK(epochs[1] == 20);
  CHECK(epochs[2] == 30);
  for (std::size_t i = 0; i < f.size(); ++i) CHECK(f[i] == frontier_entry{axes[i], epochs[i]});
}

TEST_CASE("frontier: equality compares entries and taint", "[frontier][equality]") {
  const frontier f{{A, 1}, {B, 2}};
  CHECK(f == frontier{{B, 2}, {A, 1}});
  CHECK_FALSE(f == frontier{{A, 1}, {B, 3}});
  CHECK_FALSE(f == frontier{{A, 1}, {C, 2}});
  CHECK_FALSE(f == frontier{{A, 1}});
  CHECK_FALSE(f == frontier{{A, 1}, {B, 2}, {C, 1}});
  CHECK(f != tainted(f));
  CHECK(tainted(f) == tainted(frontier{{B, 2}, {A, 1}}));
  CHECK(frontier{} != tainted(frontier{}));
}

TEST_CASE("frontier: clear empties and untaints; set_tainted only taints", "[frontier][mutators]") {
  frontier f{{A, 1}, {B, 2}};
  f.set_tainted();
  CHECK(f.tainted());
  CHECK(f.size() == 2);
  CHECK(f.epoch_of(B) == 2);
  f.clear();
  CHECK(f.empty());
  CHECK_FALSE(f.tainted());
  CHECK(f == frontier{});
  CHECK(f.epoch_of(A) == 0);
}

TEST_CASE("frontier: insert_or_raise inserts in order, raises, and ignores lower or zero epochs",
          "[frontier][insert]") {
  frontier f;
  f.insert_or_raise(C, 3);
  f.insert_or_raise(A, 1);  // front
  f.insert_or_raise(E, 5);  // back
  f.insert_or_raise(B, 2);  // middle
  CHECK(entries_of(f) == std::vector<frontier_entry>{{A, 1}, {B, 2}, {C, 3}, {E, 5}});
  f.insert_or_raise(C, 2);  // lower: no change
  CHECK(f.epoch_of(C) == 3);
  f.insert_or_raise(C, 3);  // equal: no change
  CHECK(f.epoch_of(C) == 3);
  f.insert_or_raise(C, 9);
  CHECK(f.epoch_of(C) == 9);
  f.insert_or_raise(D, 0);  // zero: never inserted
  CHECK_FALSE(f.contains(D));
  f.insert_or_raise(A, 0);
  CHECK(f.epoch_of(A) == 1);
  CHECK(f.size() == 4);
  CHECK(f.invariants_hold());
  CHECK_FALSE(f.tainted());
}

//===-- merge ---------------------------------------------------------------------===//

TEST_CASE("frontier: merge is the component-wise max, in place and pure alike",
          "[frontier][merge]") {
  const frontier a{{A, 5}, {C, 1}, {E, 9}};
  const frontier b{{B, 2}, {C, 4}, {D, 8}, {E, 3}};
  const frontier expected{{A, 5}, {B, 2}, {C, 4}, {D, 8}, {E, 9}};
  frontier in_place = a;
  in_place.merge(b);
  CHECK(in_place == expected);
  CHECK(causal::merge(a, b) == expected);
  CHECK(in_place.invariants_hold());
  // With the empty frontier on either side.
  CHECK(causal::merge(a, frontier{}) == a);
  CHECK(causal::merge(frontier{}, a) == a);
  frontier self = a;
  self.merge(self);
  CHECK(self == a);
}

TEST_CASE("frontier: merge carries the taint of either side", "[frontier][merge][taint]") {
  const frontier a{{A, 5}};
  const frontier b{{B, 2}};
  CHECK(causal::merge(tainted(a), b).tainted());
  CHECK(causal::merge(a, tainted(b)).tainted());
  CHECK(causal::merge(a, b) == frontier{{A, 5}, {B, 2}});
  frontier x = a;
  x.merge(tainted(frontier{}));
  CHECK(x == tainted(a));
}

TEST_CASE("frontier: same-axes merge (the fast path) takes maxima and never overflows",
          "[frontier][merge][fast-path]") {
  evicting<2> full{{A, 1}, {B, 5}};
  full.merge(evicting<2>{{A, 3}, {B, 2}});
  CHECK(full == evicting<2>{{A, 3}, {B, 5}});
  CHECK_FALSE(full.tainted());
  full.merge(tainted(evicting<2>{{A, 1}, {B, 1}}));
  CHECK(full == tainted(evicting<2>{{A, 3}, {B, 5}}));

  rejecting<2> r = make<rejecting<2>>({{A, 1}, {B, 5}});
  REQUIRE(r.merge(make<rejecting<2>>({{A, 4}, {B, 4}})).ok());
  CHECK(r == make<rejecting<2>>({{A, 4}, {B, 5}}));
}

TEST_CASE("frontier: merge works across capacities and policies of one layout",
          "[frontier][merge][mixed]") {
  const evicting<4> small{{A, 5}, {D, 1}};
  const frontier big{{A, 1}, {B, 2}, {C, 3}};
  evicting<4> s = small;
  s.merge(big);
  CHECK(s == evicting<4>{{A, 5}, {B, 2}, {C, 3}, {D, 1}});
  frontier g = big;
  g.merge(small);
  CHECK(g == frontier{{A, 5}, {B, 2}, {C, 3}, {D, 1}});
  // The pure merge returns the left operand's type.
  STATIC_REQUIRE(std::is_same_v<decltype(causal::merge(small, big)), evicting<4>>);
  STATIC_REQUIRE(std::is_same_v<decltype(causal::merge(big, small)), frontier>);
  CHECK(causal::merge(big, small) == g);
  // A rejecting frontier accepts an evicting one (and the reverse).
  rejecting<4> r;
  REQUIRE(r.merge(big).ok());
  CHECK(causal::dominates(r, big));
  frontier from_r;
  from_r.merge(r);
  CHECK(from_r == big);
  // Overflow into a smaller capacity evicts.
  evicting<2> tiny;
  tiny.merge(frontier{{A, 1}, {B, 5}, {C, 3}, {D, 2}});
  CHECK(tiny == tainted(evicting<2>{{B, 5}, {C, 3}}));
}

//===-- overflow: evict_and_taint -------------------------------------------------===//

TEST_CASE("frontier: overflow evicts the smallest epochs and taints", "[frontier][overflow]") {
  evicting<3> f{{A, 5}, {B, 1}, {C, 7}};
  f.merge(evicting<3>{{D, 3}});
  CHECK(f == tainted(evicting<3>{{A, 5}, {C, 7}, {D, 3}}));
  CHECK(f.invariants_hold());

  SECTION("several evictions in one merge") {
    evicting<2> g{{A, 4}, {B, 9}};
    g.merge(evicting<2>{{C, 6}, {D, 1}});
    CHECK(g == tainted(evicting<2>{{B, 9}, {C, 6}}));
  }
  SECTION("an evicted entry may come from the incoming side") {
    evicting<2> g{{A, 4}, {B, 9}};
    g.merge(evicting<2>{{C, 1}});
    CHECK(g == tainted(evicting<2>{{A, 4}, {B, 9}}));
  }
  SECTION("the rank uses the merged (maximum) epoch") {
    evicting<2> g{{A, 1}, {B, 5}};
    g.merge(evicting<2>{{A, 9}, {C, 3}});  // union {A:9, B:5, C:3}
    CHECK(g == tainted(evicting<2>{{A, 9}, {B, 5}}));
  }
  SECTION("pure merge evicts the same way") {
    CHECK(causal::merge(evicting<3>{{A, 5}, {B, 1}, {C, 7}}, evicting<3>{{D, 3}}) == f);
  }
}

TEST_CASE("frontier: overflow ties on epoch evict the smallest axis first",
          "[frontier][overflow]") {
  evicting<3> f{{A, 2}, {B, 2}, {C, 9}};
  f.merge(evicting<3>{{D, 2}});
  CHECK(f == tainted(evicting<3>{{B, 2}, {C, 9}, {D, 2}}));
  evicting<2> g{{C, 4}, {E, 4}};
  g.merge(evicting<2>{{A, 4}, {D, 4}});
  CHECK(g == tainted(evicting<2>{{D, 4}, {E, 4}}));
  STATIC_REQUIRE(causal::evict_and_taint::evict_before({B, 1}, {A, 2}));
  STATIC_REQUIRE(causal::evict_and_taint::evict_before({A, 2}, {B, 2}));
  STATIC_REQUIRE(!causal::evict_and_taint::evict_before({B, 2}, {A, 2}));
  STATIC_REQUIRE(!causal::evict_and_taint::evict_before({A, 2}, {A, 2}));
}

TEST_CASE("frontier: a pinned merge never evicts the pinned axis", "[frontier][overflow][pinned]") {
  SECTION("the pinned entry would have been the first victim") {
    evicting<2> f{{A, 1}, {B, 9}};
    evicting<2> unpinned = f;
    unpinned.merge(evicting<2>{{C, 5}});
    CHECK(unpinned == tainted(evicting<2>{{B, 9}, {C, 5}}));
    f.merge(evicting<2>{{C, 5}}, A);
    CHECK(f == tainted(evicting<2>{{A, 1}, {B, 9}}));
  }
  SECTION("the pinned entry arrives with the incoming frontier") {
    evicting<2> f{{B, 9}, {C, 5}};
    f.merge(evicting<2>{{A, 1}}, A);
    CHECK(f == tainted(evicting<2>{{A, 1}, {B, 9}}));
  }
  SECTION("several evictions around the pinned entry") {
    evicting<2> f{{A, 1}};
    f.merge(frontier{{B, 2}, {C, 3}, {D, 4}}, A);
    CHECK(f == tainted(evicting<2>{{A, 1}, {D, 4}}));
  }
  SECTION("capacity 1 keeps only the pinned entry") {
    evicting<1> f{{A, 1}};
    f.merge(frontier{{B, 7}, {C, 8}}, A);
    CHECK(f == tainted(evicting<1>{{A, 1}}));
  }
  SECTION("pinning an absent axis changes nothing") {
    evicting<2> f{{A, 1}, {B, 9}};
    f.merge(evicting<2>{{C, 5}}, E);
    CHECK(f == tainted(evicting<2>{{B, 9}, {C, 5}}));
  }
  SECTION("without overflow a pinned merge is a plain merge") {
    frontier f{{A, 1}};
    f.merge(frontier{{A, 3}, {B, 2}}, A);
    CHECK(f == frontier{{A, 3}, {B, 2}});
  }
}

TEST_CASE("frontier: insert_or_raise on overflow keeps the inserted axis", "[frontier][overflow][insert]") {
  evicting<2> f{{A, 5}, {B, 3}};
  f.insert_or_raise(C, 1);  // lowest epoch, yet kept
  CHECK(f == tainted(evicting<2>{{A, 5}, {C, 1}}));
  CHECK(f.invariants_hold());

  evicting<2> g{{A, 5}, {B, 3}};
  g.insert_or_raise(A, 8);  // a raise never overflows
  CHECK(g == evicting<2>{{A, 8}, {B, 3}});
  g.insert_or_raise(C, 0);  // a zero epoch never inserts
  CHECK(g == evicting<2>{{A, 8}, {B, 3}});
}

TEST_CASE("frontier: initializer-list construction on overflow evicts the lowest ranks whatever the order",
          "[frontier][overflow][construct]") {
  // The constructor documents "entries in any order" and "overflow is
  // handled by the evicting policy", which drops the smallest epochs.
  const evicting<2> ascending{{A, 1}, {B, 2}, {C, 3}};
  const evicting<2> descending{{C, 3}, {B, 2}, {A, 1}};
  const evicting<2> expected = tainted(evicting<2>{{B, 2}, {C, 3}});
  CHECK(ascending == expected);
  CHECK(descending == expected);
}

//===-- overflow: reject ------------------------------------------------------------===//

TEST_CASE("frontier: reject_overflow fails with capacity_exceeded and leaves the target unchanged",
          "[frontier][overflow][reject]") {
  using R = rejecting<2>;
  SECTION("merge") {
    R f = make<R>({{A, 5}, {B, 3}});
    const R before = f;
    const causal::status s = f.merge(make<R>({{A, 9}, {C, 4}}));
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == errc::capacity_exceeded);
    CHECK(f == before);
    CHECK(f.epoch_of(A) == 5);  // not even the shared axis was raised
  }
  SECTION("merge of a tainted frontier does not taint the target when rejected") {
    R f = make<R>({{A, 5}});
    const R before = f;
    CHECK(f.merge(tainted(frontier{{B, 1}, {C, 1}})).code() == errc::capacity_exceeded);
    CHECK(f == before);
    CHECK_FALSE(f.tainted());
  }
  SECTION("a tainted target stays exactly as it was") {
    R f = tainted(make<R>({{A, 5}, {B, 3}}));
    const R before = f;
    CHECK(f.merge(frontier{{C, 1}}, A).code() == errc::capacity_exceeded);
    CHECK(f == before);
  }
  SECTION("insert_or_raise") {
    R f = make<R>({{A, 5}, {B, 3}});
    const R before = f;
    const causal::status s = f.insert_or_raise(C, 4);
    REQUIRE_FALSE(s.ok());
    CHECK(s.code() == errc::capacity_exceeded);
    CHECK(s.error_value().position() == 2);  // the Capacity
    CHECK(f == before);
    CHECK(f.insert_or_raise(A, 8).ok());  // raising an existing axis fits
    CHECK(f == make<R>({{A, 8}, {B, 3}}));
    CHECK(f.insert_or_raise(C, 0).ok());  // a zero epoch is a no-op
  }
  SECTION("pure merge returns a result") {
    const R a = make<R>({{A, 5}});
    const auto fits = causal::merge(a, make<R>({{B, 1}}));
    STATIC_REQUIRE(std::is_same_v<std::remove_const_t<decltype(fits)>, causal::result<R>>);
    REQUIRE(fits.ok());
    CHECK(*fits == make<R>({{A, 5}, {B, 1}}));
    const auto overflows = causal::merge(a, frontier{{B, 1}, {C, 1}});
    REQUIRE_FALSE(overflows.ok());
    CHECK(overflows.code() == errc::capacity_exceeded);
  }
  SECTION("a merge that exactly fills the capacity succeeds") {
    R f = make<R>({{A, 5}});
    REQUIRE(f.merge(make<R>({{A, 1}, {B, 1}})).ok());
    CHECK(f == make<R>({{A, 5}, {B, 1}}));
  }
}

//===-- from_entries ------------------------------------------------------------------===//

TEST_CASE("frontier: from_entries sorts, keeps the larger duplicate, skips zeros, never taints",
          "[frontier][from_entries]") {
  const std::array<frontier_entry, 7> in{{{E, 5}, {A, 1}, {C, 0}, {A, 4}, {B, 2}, {E, 3}, {D, 0}}};
  const auto r = frontier::from_entries(in);
  REQUIRE(r.ok());
  CHECK(*r == frontier{{A, 4}, {B, 2}, {E, 5}});
  CHECK(r->invariants_hold());
  const auto empty = frontier::from_entries({});
  REQUIRE(empty.ok());
  CHECK(*empty == frontier{});
}

TEST_CASE("frontier: from_entries fails on more distinct axes than Capacity, whatever the policy",
          "[frontier][from_entries][errors]") {
  const std::array<frontier_entry, 4> three_axes{{{A, 1}, {B, 1}, {C, 1}, {A, 2}}};
  const std::array<frontier_entry, 3> zeros_do_not_count{{{A, 1}, {B, 1}, {C, 0}}};
  SECTION("evicting") {
    const auto r = evicting<2>::from_entries(three_axes);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == errc::capacity_exceeded);
    CHECK(r.error_value().position() == 2);
    CHECK(evicting<2>::from_entries(zeros_do_not_count).ok());
    CHECK(evicting<3>::from_entries(three_axes).value() == evicting<3>{{A, 2}, {B, 1}, {C, 1}});
  }
  SECTION("rejecting") {
    const auto r = rejecting<2>::from_entries(three_axes);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == errc::capacity_exceeded);
    CHECK(r.error_value().position() == 2);
    CHECK(rejecting<2>::from_entries(zeros_do_not_count).ok());
  }
}

//===-- dominance, soundness, compare ----------------------------------------------------===//

TEST_CASE("frontier: dominates means every entry of b is at most a's epoch", "[frontier][dominates]") {
  const frontier a{{A, 5}, {B, 7}, {C, 4}};
  CHECK(causal::dominates(a, a));
  CHECK(causal::dominates(a, frontier{}));
  CHECK(causal::dominates(frontier{}, frontier{}));
  CHECK_FALSE(causal::dominates(frontier{}, frontier{{A, 1}}));
  CHECK(causal::dominates(a, frontier{{C, 4}}));
  CHECK_FALSE(causal::dominates(a, frontier{{C, 5}}));
  CHECK_FALSE(causal::dominates(a, frontier{{D, 1}}));
  CHECK_FALSE(causal::dominates(a, frontier{{A, 1}, {B, 1}, {C, 1}, {D, 1}}));
  CHECK(causal::dominates(a, frontier{{A, 5}, {B, 7}, {C, 4}}));
  CHECK_FALSE(causal::dominates(frontier{{A, 5}, {B, 7}}, a));
  // Across capacities and policies of one layout.
  CHECK(causal::dominates(evicting<4>{{A, 5}, {B, 7}}, make<rejecting<2>>({{A, 5}})));
  CHECK_FALSE(causal::dominates(make<rejecting<2>>({{A, 5}}), evicting<4>{{A, 5}, {B, 7}}));
}

TEST_CASE("frontier: a tainted requirement is never dominated (soundness, requirement side)",
          "[frontier][dominates][taint]") {
  const frontier knowledge{{A, 100}, {B, 100}, {C, 100}};
  CHECK_FALSE(causal::dominates(knowledge, tainted(frontier{{A, 1}})));
  CHECK_FALSE(causal::dominates(knowledge, tainted(frontier{})));
  CHECK_FALSE(causal::dominates(knowledge, tainted(knowledge)));
  CHECK_FALSE(causal::dominates(tainted(knowledge), tainted(knowledge)));
  // A requirement tainted by overflow: its evicted entries are unknown.
  evicting<2> requirement{{A, 1}, {B, 1}};
  requirement.merge(evicting<2>{{C, 1}});
  REQUIRE(requirement.tainted());
  CHECK_FALSE(causal::dominates(knowledge, requirement));
}

TEST_CASE("frontier: tainted knowledge still answers from its entries (soundness, knowledge side)",
          "[frontier][dominates][taint]") {
  const frontier knowledge = tainted(frontier{{A, 5}, {B, 7}});
  CHECK(causal::dominates(knowledge, frontier{{A, 5}}));
  CHECK(causal::dominates(knowledge, frontier{{A, 3}, {B, 7}}));
  CHECK(causal::dominates(knowledge, frontier{}));
  CHECK_FALSE(causal::dominates(knowledge, frontier{{C, 1}}));
  CHECK_FALSE(causal::dominates(knowledge, frontier{{A, 6}}));
  // Knowledge that lost entries to overflow knows less, never more.
  evicting<2> lossy{{A, 5}, {B, 7}};
  lossy.merge(evicting<2>{{C, 9}});
  REQUIRE(lossy == tainted(evicting<2>{{B, 7}, {C, 9}}));
  CHECK(causal::dominates(lossy, frontier{{B, 7}, {C, 9}}));
  CHECK_FALSE(causal::dominates(lossy, frontier{{A, 5}}));
}

TEST_CASE("frontier: compare classifies equal, before, after and concurrent", "[frontier][compare]") {
  const frontier a{{A, 1}, {B, 2}};
  CHECK(causal::compare(a, a) == order::equal);
  CHECK(causal::compare(a, frontier{{B, 2}, {A, 1}}) == order::equal);
  CHECK(causal::compare(frontier{}, frontier{}) == order::equal);
  CHECK(causal::compare(a, frontier{{A, 2}, {B, 2}}) == order::before);
  CHECK(causal::compare(a, frontier{{A, 1}, {B, 2}, {C, 1}}) == order::before);
  CHECK(causal::compare(frontier{}, a) == order::before);
  CHECK(causal::compare(frontier{{A, 2}, {B, 2}}, a) == order::after);
  CHECK(causal::compare(a, frontier{}) == order::after);
  CHECK(causal::compare(a, frontier{{A, 2}, {B, 1}}) == order::concurrent);
  CHECK(causal::compare(frontier{{A, 1}}, frontier{{B, 1}}) == order::concurrent);
  CHECK(causal::compare(frontier{{A, 1}, {C, 1}}, frontier{{B, 1}, {C, 1}}) == order::concurrent);
  CHECK(causal::compare(evicting<4>{{A, 1}}, frontier{{A, 1}}) == order::equal);
  CHECK(causal::to_string(order::equal) == "equal");
  CHECK(causal::to_string(order::before) == "before");
  CHECK(causal::to_string(order::after) == "after");
  CHECK(causal::to_string(order::concurrent) == "concurrent");
}

TEST_CASE("frontier: compare never claims a tainted frontier is dominated",
          "[frontier][compare][taint]") {
  const frontier a{{A, 1}, {B, 2}};
  const frontier ta = tainted(a);
  CHECK(causal::compare(ta, ta) == order::concurrent);
  CHECK(causal::compare(ta, tainted(frontier{{A, 1}, {B, 2}})) == order::concurrent);
  CHECK(causal::compare(tainted(frontier{}), tainted(frontier{})) == order::concurrent);
  // Equal entries, one tainted: only the untainted one can be covered.
  CHECK(causal::compare(ta, a) == order::after);
  CHECK(causal::compare(a, ta) == order::before);
  // A tainted frontier that is behind is not "before": it is concurrent.
  CHECK(causal::compare(ta, frontier{{A, 2}, {B, 2}}) == order::concurrent);
  CHECK(causal::compare(frontier{{A, 2}, {B, 2}}, ta) == order::concurrent);
  CHECK(causal::compare(tainted(frontier{{A, 2}, {B, 2}}), a) == order::after);
}

//===-- find_undominated ----------------------------------------------------------------===//

TEST_CASE("frontier: find_undominated returns exactly the uncovered entries of the requirement",
          "[frontier][find_undominated]") {
  const frontier knowledge{{A, 5}, {B, 2}, {D, 1}};
  const frontier requirement{{A, 3}, {B, 4}, {C, 1}, {E, 2}};
  const frontier gaps = causal::find_undominated(knowledge, requirement);
  CHECK(gaps == frontier{{B, 4}, {C, 1}, {E, 2}});
  CHECK_FALSE(causal::dominates(knowledge, requirement));
  // Closing the gaps makes the requirement met.
  CHECK(causal::dominates(causal::merge(knowledge, gaps), requirement));
  // Nothing to wait for: empty, untainted, and dominates agrees.
  const frontier none = causal::find_undominated(knowledge, frontier{{A, 5}, {D, 1}});
  CHECK(none == frontier{});
  CHECK(causal::dominates(knowledge, frontier{{A, 5}, {D, 1}}));
  CHECK(causal::find_undominated(frontier{}, requirement) == requirement);
  CHECK(causal::find_undominated(requirement, requirement) == frontier{});
}

TEST_CASE("frontier: find_undominated taints the result of a tainted requirement only",
          "[frontier][find_undominated][taint]") {
  const frontier knowledge{{A, 5}, {B, 5}};
  const frontier covered_but_tainted = causal::find_undominated(knowledge, tainted(frontier{{A, 1}}));
  CHECK(covered_but_tainted == tainted(frontier{}));
  CHECK_FALSE(causal::dominates(knowledge, tainted(frontier{{A, 1}})));
  CHECK(causal::find_undominated(knowledge, tainted(frontier{{A, 9}, {B, 1}})) ==
        tainted(frontier{{A, 9}}));
  // Tainted knowledge answers from its entries.
  CHECK(causal::find_undominated(tainted(knowledge), frontier{{A, 1}, {C, 2}}) == frontier{{C, 2}});
}

TEST_CASE("frontier: find_undominated returns the requirement's type", "[frontier][find_undominated]") {
  const evicting<4> knowledge{{A, 5}};
  const rejecting<2> requirement = make<rejecting<2>>({{A, 6}, {B, 1}});
  const auto gaps = causal::find_undominated(knowledge, requirement);
  STATIC_REQUIRE(std::is_same_v<std::remove_const_t<decltype(gaps)>, rejecting<2>>);
  CHECK(gaps == requirement);
  const auto from_big = causal::find_undominated(frontier{{B, 1}}, evicting<2>{{A, 1}, {B, 1}});
  CHECK(from_big == evicting<2>{{A, 1}});
}

//===-- constexpr ------------------------------------------------------------------------===//

namespace {
// The operands of the worked merge example above.
constexpr frontier example_a{{A, 5}, {B, 3}};
constexpr frontier example_b{{A, 2}, {B, 7}, {C, 4}};

constexpr evicting<2> evicted_at_compile_time() {
  evicting<2> f{{A, 4}, {B, 9}};
  f.merge(evicting<2>{{C, 6}, {D, 1}});
  return f;
}
constexpr frontier inserted_at_compile_time() {
  frontier f = example_a;
  f.insert_or_raise(C, 4);
  f.insert_or_raise(A, 8);
  return f;
}
constexpr bool rejected_at_compile_time() {
  rejecting<1> r = rejecting<1>::from_entries(std::array<frontier_entry, 1>{{{A, 1}}}).value();
  const causal::status s = r.insert_or_raise(B, 1);
  return s.code() == errc::capacity_exceeded && r.size() == 1 && r.epoch_of(A) == 1;
}
constexpr bool pinned_at_compile_time() {
  evicting<1> f{{A, 1}};
  f.merge(evicting<1>{{B, 7}}, A);
  return f.epoch_of(A) == 1 && f.tainted() && f.size() == 1;
}
}  // namespace

TEST_CASE("frontier: operations are usable in constant expressions", "[frontier][constexpr]") {
  STATIC_REQUIRE(causal::merge(example_a, example_b) == frontier{{A, 5}, {B, 7}, {C, 4}});
  STATIC_REQUIRE(causal::dominates(frontier{{A, 5}, {B, 7}, {C, 4}}, frontier{{A, 3}, {B, 7}}));
  STATIC_REQUIRE(!causal::dominates(frontier{{A, 5}, {B, 7}}, frontier{{A, 3}, {C, 4}}));
  STATIC_REQUIRE(causal::compare(example_a, causal::merge(example_a, example_b)) == order::before);
  STATIC_REQUIRE(inserted_at_compile_time() == frontier{{A, 8}, {B, 3}, {C, 4}});
  STATIC_REQUIRE(evicted_at_compile_time() == tainted(evicting<2>{{B, 9}, {C, 6}}));
  STATIC_REQUIRE(causal::find_undominated(example_a, example_b) == frontier{{B, 7}, {C, 4}});
  STATIC_REQUIRE(example_b.epoch_of(C) == 4);
  STATIC_REQUIRE(!example_b.contains(D));
  STATIC_REQUIRE(example_b.invariants_hold());
  STATIC_REQUIRE(rejected_at_compile_time());
  STATIC_REQUIRE(pinned_at_compile_time());
  STATIC_REQUIRE(!causal::dominates(example_b, tainted(example_a)));
}

//===-- user overflow policy ---------------------------------------------------------------===//

TEST_CASE("frontier: a user-written overflow policy decides what is evicted",
          "[frontier][overflow][policy]") {
  STATIC_REQUIRE(causal::overflow_policy<evict_largest_axis>);
  STATIC_REQUIRE(causal::overflow_policy<refuse>);
  STATIC_REQUIRE(causal::overflow_policy<causal::evict_and_taint>);
  STATIC_REQUIRE(causal::overflow_policy<causal::reject_overflow>);
  STATIC_REQUIRE(!causal::overflow_policy<int>);

  largest_first<2> f{{A, 9}, {B, 1}};
  f.merge(largest_first<2>{{C, 100}});  // evict_and_taint would drop B:1
  CHECK(f == tainted(largest_first<2>{{A, 9}, {B, 1}}));

  largest_first<2> g{{A, 9}, {B, 1}};
  g.insert_or_raise(C, 100);  // the inserted axis is kept; B is the largest other
  CHECK(g == tainted(largest_first<2>{{A, 9}, {C, 100}}));

  largest_first<3> h{{A, 1}, {B, 1}};
  h.merge(frontier{{C, 1}, {D, 1}, {E, 1}});
  CHECK(h == tainted(largest_first<3>{{A, 1}, {B, 1}, {C, 1}}));

  // A user frontier mixes with the default ones (same layout).
  CHECK(causal::dominates(frontier{{A, 9}, {B, 1}}, largest_first<2>{{A, 9}}));

  basic_frontier<1, default_axis_layout, refuse> r =
      basic_frontier<1, default_axis_layout, refuse>::from_entries(std::array<frontier_entry, 1>{{{A, 1}}})
          .value();
  CHECK(r.insert_or_raise(B, 1).code() == errc::capacity_exceeded);
  CHECK(r.merge(frontier{{B, 1}}).code() == errc::capacity_exceeded);
  CHECK(r.size() == 1);
}

//===-- text form ------------------------------------------------------------------------===//

TEST_CASE("frontier: text form lists axis:epoch pairs and marks taint", "[frontier][text]") {
  CHECK(causal::to_string(frontier{}) == "{}");
  CHECK(causal::to_string(frontier{{B, 3}, {A, 5}}) == "{m0.queue.1:5, m0.queue.2:3}");
  CHECK(causal::to_string(tainted(frontier{{A, 5}})) == "{m0.queue.1:5} tainted");
  const axis remote = causal::make_axis(2, 1, causal::domain::collective, 3).value();
  std::ostringstream os;
  os << frontier{{remote, 18446744073709551615ull}};
  CHECK(os.str() == "{s2.m1.collective.3:18446744073709551615}");
  using wide = causal::axis_layout<0, 16, 8, 40>;
  const basic_frontier<2, wide> w{{axis{(std::uint64_t{300} << 48) | 7}, 1}};
  CHECK(causal::to_string(w) == "{m300.queue.7:1}");
}

//===-- allocation ---------------------------------------------------------------------------===//

TEST_CASE("frontier: the allocation counter sees an allocation (control)", "[frontier][alloc]") {
  causal::test::allocation_guard guard;
  void* volatile p = ::operator new(32);
  ::operator delete(p);
  CHECK(guard.allocations() == 1);
}

TEST_CASE("frontier: hot-path operations never allocate", "[frontier][alloc]") {
  const frontier base{{A, 5}, {B, 3}};
  const frontier other{{A, 2}, {B, 7}, {C, 4}};
  const evicting<4> wide_other{{A, 1}, {B, 2}, {C, 3}, {D, 4}};
  const rejecting<2> tight = make<rejecting<2>>({{A, 1}, {B, 1}});
  std::array<std::byte, causal::max_serialized_size<frontier>> buffer{};
  std::uint64_t checksum = 0;
  frontier last_merge;
  evicting<2> last_evicted;
  frontier last_decoded;

  causal::test::allocation_guard guard;
  for (std::uint64_t i = 1; i <= 1000; ++i) {
    frontier f = base;
    f.insert_or_raise(E, i);      // insert
    f.insert_or_raise(A, i + 5);  // raise
    f.merge(other);               // in place
    f.merge(other, E);            // pinned
    const frontier g = causal::merge(f, other);  // pure
    evicting<2> small{{A, i}, {E, 1}};
    small.merge(wide_other);        // overflow: evicts and taints
    small.insert_or_raise(C, i);    // overflow on insert
    rejecting<2> r = tight;
    checksum += r.merge(other).ok() ? 1 : 0;        // rejected
    checksum += r.insert_or_raise(C, 1).ok() ? 1 : 0;  // rejected
    checksum += causal::dominates(g, base) ? 1 : 0;
    checksum += causal::compare(g, base) == order::after ? 1 : 0;
    checksum += g.epoch_of(E) + g.epoch_of(D);
    const frontier gaps = causal::find_undominated(base, g);
    checksum += gaps.size();
    const auto written = causal::serialize(g, std::span<std::byte>(buffer));
    checksum += causal::serialized_size(g);
    const auto decoded =
        causal::deserialize<frontier>(std::span<const std::byte>(buffer.data(), written.value_or(0)));
    checksum += decoded.ok() && *decoded == g ? 1 : 0;
    const auto from = frontier::from_entries(std::array<frontier_entry, 2>{{{B, i}, {A, 1}}});
    checksum += from.ok() ? from->size() : 0;
    last_merge = g;
    last_evicted = small;
    last_decoded = decoded.value_or(frontier{});
  }
  const std::uint64_t allocations = guard.allocations();
  CHECK(allocations == 0);
  // The loop did real work: check its last iteration and the checksum.
  CHECK(last_merge == frontier{{A, 1005}, {B, 7}, {C, 4}, {E, 1000}});
  CHECK(last_evicted == tainted(evicting<2>{{A, 1000}, {C, 1000}}));
  CHECK(last_decoded == last_merge);
  std::uint64_t expected = 0;
  for (std::uint64_t i = 1; i <= 1000; ++i) {
    // 0 + 0 (both rejected) + dominates + compare == after + epoch_of(E)
    // + epoch_of(D) == 0 + gaps {A, B, C, E} + serialized size + decoded ok
    // + from_entries size.
    const frontier g{{A, i + 5}, {B, 7}, {C, 4}, {E, i}};
    expected += 1 + 1 + i + 0 + 4 + causal::serialized_size(g) + 1 + 2;
  }
  CHECK(checksum == expected);
}
