// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Tests for <causal/axis.hpp>: packing and range checks for the default and
// custom layouts (zero-width and full-width fields included), accessors,
// numeric order, the text form, and the allocator (monotonic, never reused,
// thread-safe, exhaustion, bad input consumes nothing, the process-wide one).

#include <causal/axis.hpp>

#include "catch.hpp"
#include "string_makers.hpp"

#include <algorithm>
#include <cstdint>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using causal::axis;
using causal::axis_fields;
using causal::domain;
using causal::errc;

constexpr std::uint64_t max64 = ~std::uint64_t{0};

constexpr domain user_domain(std::uint32_t v) { return static_cast<domain>(v); }

// Layouts with zero-width and full-width fields.
using no_session = causal::axis_layout<0, 16, 8, 40>;
using no_machine = causal::axis_layout<16, 0, 8, 40>;
using no_domain = causal::axis_layout<8, 8, 0, 48>;
using no_ordinal = causal::axis_layout<16, 16, 32, 0>;
using all_session = causal::axis_layout<64, 0, 0, 0>;
using all_ordinal = causal::axis_layout<0, 0, 0, 64>;
// Few ordinals, so exhaustion is quick: 15 per (machine, domain).
// (DomainBits is capped at 32, so the spare bits go to machine.)
using tiny_ordinals = causal::axis_layout<8, 20, 32, 4>;

template <class Layout>
axis make(std::uint64_t s, std::uint64_t m, domain d, std::uint64_t o) {
  const causal::result<axis> r = causal::make_axis<Layout>(s, m, d, o);
  REQUIRE(r.ok());
  return *r;
}

}  // namespace

//===-- the axis value -------------------------------------------------------===//

TEST_CASE("axis: a strong 64-bit value ordered by its raw bits", "[axis][value]") {
  STATIC_REQUIRE(sizeof(axis) == 8);
  STATIC_REQUIRE(std::is_trivially_copyable_v<axis>);
  STATIC_REQUIRE(!std::is_convertible_v<std::uint64_t, axis>);
  STATIC_REQUIRE(axis{}.raw() == 0);
  STATIC_REQUIRE(axis{max64}.raw() == max64);
  STATIC_REQUIRE(axis{3} == axis{3});
  STATIC_REQUIRE(axis{3} != axis{4});
  STATIC_REQUIRE(axis{3} < axis{4});
  STATIC_REQUIRE(axis{max64 - 1} < axis{max64});
  STATIC_REQUIRE(axis{std::uint64_t{1} << 63} > axis{(std::uint64_t{1} << 63) - 1});
}

TEST_CASE("axis: the layouts used here satisfy axis_encoding", "[axis][layout]") {
  STATIC_REQUIRE(causal::axis_encoding<causal::default_axis_layout>);
  STATIC_REQUIRE(causal::axis_encoding<no_session>);
  STATIC_REQUIRE(causal::axis_encoding<no_ordinal>);
  STATIC_REQUIRE(causal::axis_encoding<all_session>);
  STATIC_REQUIRE(!causal::axis_encoding<int>);
  STATIC_REQUIRE(!causal::axis_encoding<axis>);
  STATIC_REQUIRE(std::is_same_v<causal::default_axis_layout, causal::axis_layout<8, 8, 8, 40>>);
}

//===-- make_axis and accessors ----------------------------------------------===//

TEST_CASE("axis: make_axis packs session | machine | domain | ordinal, most significant first",
          "[axis][make]") {
  const axis a = make<causal::default_axis_layout>(1, 2, domain::collective, 3);
  CHECK(a.raw() == ((std::uint64_t{1} << 56) | (std::uint64_t{2} << 48) |
                    (std::uint64_t{1} << 40) | 3));
  STATIC_REQUIRE(causal::make_axis(0, 0, domain::queue, 17).value().raw() == 17);
  STATIC_REQUIRE(causal::make_axis(255, 255, user_domain(255), (std::uint64_t{1} << 40) - 1)
                     .value()
                     .raw() == max64);
  STATIC_REQUIRE(causal::make_axis(0, 0, domain::queue, 0).value() == axis{});
  // The axis_fields overload agrees.
  CHECK(causal::make_axis(axis_fields{1, 2, domain::collective, 3}).value() == a);
}

TEST_CASE("axis: accessors return the fields make_axis was given", "[axis][make]") {
  using L = causal::default_axis_layout;
  const auto [s, m, d, o] = GENERATE(table<std::uint64_t, std::uint64_t, std::uint32_t, std::uint64_t>({
      {0, 0, 0, 0},
      {0, 0, 0, 17},
      {2, 1, 1, 3},
      {255, 0, 0, 0},
      {0, 255, 0, 0},
      {0, 0, 255, 0},
      {0, 0, 0, (std::uint64_t{1} << 40) - 1},
      {255, 255, 255, (std::uint64_t{1} << 40) - 1},
      {17, 42, 16, 123456789},
  }));
  const axis a = make<L>(s, m, user_domain(d), o);
  CHECK(causal::session_of(a) == s);
  CHECK(causal::machine_of(a) == m);
  CHECK(causal::domain_of(a) == user_domain(d));
  CHECK(causal::ordinal_of(a) == o);
  CHECK(L::fields(a) == axis_fields{s, m, user_domain(d), o});
  CHECK(causal::make_axis(L::fields(a)).value() == a);
}

TEST_CASE("axis: make_axis rejects each out-of-range field with its value as the position",
          "[axis][make][errors]") {
  using L = causal::default_axis_layout;
  STATIC_REQUIRE(L::max_session == 255);
  STATIC_REQUIRE(L::max_machine == 255);
  STATIC_REQUIRE(L::max_domain == 255);
  STATIC_REQUIRE(L::max_ordinal == (std::uint64_t{1} << 40) - 1);

  SECTION("session") {
    const auto r = causal::make_axis(256, 0, domain::queue, 1);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == errc::out_of_range);
    CHECK(r.error_value().position() == 256);
    CHECK(causal::make_axis(max64, 0, domain::queue, 1).error_value().position() == max64);
  }
  SECTION("machine") {
    const auto r = causal::make_axis(0, 300, domain::queue, 1);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == errc::out_of_range);
    CHECK(r.error_value().position() == 300);
  }
  SECTION("domain") {
    const auto r = causal::make_axis(0, 0, user_domain(256), 1);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == errc::out_of_range);
    CHECK(r.error_value().position() == 256);
    CHECK(causal::make_axis(0, 0, user_domain(0xffffffffu), 1).error_value().position() ==
          0xffffffffu);
  }
  SECTION("ordinal") {
    const auto r = causal::make_axis(0, 0, domain::queue, std::uint64_t{1} << 40);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == errc::out_of_range);
    CHECK(r.error_value().position() == std::uint64_t{1} << 40);
  }
  SECTION("the first bad field, in session, machine, domain, ordinal order, is reported") {
    CHECK(causal::make_axis(1000, 2000, user_domain(3000), max64).error_value().position() ==
          1000);
    CHECK(causal::make_axis(0, 2000, user_domain(3000), max64).error_value().position() == 2000);
    CHECK(causal::make_axis(0, 0, user_domain(3000), max64).error_value().position() == 3000);
  }
}

TEST_CASE("axis: a zero-width field admits only 0", "[axis][layout][errors]") {
  SECTION("session") {
    STATIC_REQUIRE(no_session::max_session == 0);
    CHECK(causal::make_axis<no_session>(1, 0, domain::queue, 1).code() == errc::out_of_range);
    const axis a = make<no_session>(0, 65535, domain::host, 9);
    CHECK(causal::session_of<no_session>(a) == 0);
    CHECK(causal::machine_of<no_session>(a) == 65535);
    CHECK(causal::domain_of<no_session>(a) == domain::host);
    CHECK(causal::ordinal_of<no_session>(a) == 9);
    CHECK(causal::session_of<no_session>(axis{max64}) == 0);
  }
  SECTION("machine") {
    STATIC_REQUIRE(no_machine::max_machine == 0);
    CHECK(causal::make_axis<no_machine>(0, 1, domain::queue, 1).code() == errc::out_of_range);
    CHECK(causal::make_axis<no_machine>(0, 1, domain::queue, 1).error_value().position() == 1);
    const axis a = make<no_machine>(65535, 0, domain::collective, 2);
    CHECK(no_machine::fields(a) == axis_fields{65535, 0, domain::collective, 2});
  }
  SECTION("domain") {
    STATIC_REQUIRE(no_domain::max_domain == 0);
    CHECK(causal::make_axis<no_domain>(0, 0, domain::collective, 1).code() == errc::out_of_range);
    const axis a = make<no_domain>(3, 4, domain::queue, (std::uint64_t{1} << 48) - 1);
    CHECK(no_domain::fields(a) == axis_fields{3, 4, domain::queue, (std::uint64_t{1} << 48) - 1});
  }
  SECTION("ordinal") {
    STATIC_REQUIRE(no_ordinal::max_ordinal == 0);
    CHECK(causal::make_axis<no_ordinal>(0, 0, domain::queue, 1).code() == errc::out_of_range);
    const axis a = make<no_ordinal>(65535, 7, user_domain(0xffffffffu), 0);
    CHECK(no_ordinal::fields(a) == axis_fields{65535, 7, user_domain(0xffffffffu), 0});
    CHECK(a.raw() == ((std::uint64_t{65535} << 48) | (std::uint64_t{7} << 32) | 0xffffffffu));
  }
}

TEST_CASE("axis: a 64-bit field holds every value", "[axis][layout]") {
  const axis s = make<all_session>(max64, 0, domain::queue, 0);
  CHECK(s.raw() == max64);
  CHECK(all_session::session(s) == max64);
  CHECK(all_session::ordinal(s) == 0);
  CHECK(causal::make_axis<all_session>(0, 1, domain::queue, 0).code() == errc::out_of_range);
  const axis o = make<all_ordinal>(0, 0, domain::queue, max64 - 5);
  CHECK(o.raw() == max64 - 5);
  CHECK(all_ordinal::fields(o) == axis_fields{0, 0, domain::queue, max64 - 5});
}

TEST_CASE("axis: numeric order is (session, machine, domain, ordinal) order", "[axis][order]") {
  std::vector<axis_fields> fields;
  for (std::uint64_t s : {0u, 1u, 255u}) {
    for (std::uint64_t m : {0u, 2u, 255u}) {
      for (std::uint32_t d : {0u, 1u, 3u, 42u, 255u}) {
        for (std::uint64_t o : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{1} << 39,
                                (std::uint64_t{1} << 40) - 1}) {
          fields.push_back(axis_fields{s, m, user_domain(d), o});
        }
      }
    }
  }
  const auto key = [](const axis_fields& f) {
    return std::make_tuple(f.session, f.machine, static_cast<std::uint32_t>(f.domain), f.ordinal);
  };
  for (const axis_fields& x : fields) {
    for (const axis_fields& y : fields) {
      const axis ax = causal::make_axis(x).value();
      const axis ay = causal::make_axis(y).value();
      if ((ax < ay) != (key(x) < key(y)) || (ax == ay) != (key(x) == key(y))) {
        INFO("x = " << ax << ", y = " << ay);
        REQUIRE((ax < ay) == (key(x) < key(y)));
        REQUIRE((ax == ay) == (key(x) == key(y)));
      }
    }
  }
  // A larger session outranks any machine, domain or ordinal.
  CHECK(make<causal::default_axis_layout>(0, 255, user_domain(255), (std::uint64_t{1} << 40) - 1) <
        make<causal::default_axis_layout>(1, 0, domain::queue, 0));
  // The same holds under a custom layout.
  CHECK(make<no_session>(0, 1, domain::queue, 0) > make<no_session>(0, 0, user_domain(255), 5));
}

//===-- text form -------------------------------------------------------------===//

TEST_CASE("axis: text form is [s<session>.]m<machine>.<domain>.<ordinal>", "[axis][text]") {
  using L = causal::default_axis_layout;
  CHECK(causal::to_string(make<L>(0, 0, domain::queue, 17)) == "m0.queue.17");
  CHECK(causal::to_string(make<L>(2, 1, domain::collective, 3)) == "s2.m1.collective.3");
  CHECK(causal::to_string(make<L>(0, 3, domain::epilogue, 0)) == "m3.epilogue.0");
  CHECK(causal::to_string(make<L>(0, 0, domain::host, 1)) == "m0.host.1");
  CHECK(causal::to_string(make<L>(0, 0, user_domain(42), 7)) == "m0.d42.7");
  CHECK(causal::to_string(make<L>(0, 0, domain::first_user, 1)) == "m0.d16.1");
  CHECK(causal::to_string(make<L>(0, 0, user_domain(4), 1)) == "m0.d4.1");
  CHECK(causal::to_string(axis{max64}) == "s255.m255.d255.1099511627775");
}

TEST_CASE("axis: text form follows the layout and fits axis_name", "[axis][text]") {
  CHECK(causal::to_string<no_session>(make<no_session>(0, 65535, domain::queue, 1)) ==
        "m65535.queue.1");
  CHECK(causal::to_string<all_session>(axis{max64}) == "s18446744073709551615.m0.queue.0");
  CHECK(causal::to_string<all_ordinal>(axis{max64}) == "m0.queue.18446744073709551615");
  using wide = causal::axis_layout<0, 32, 32, 0>;
  CHECK(causal::to_string<wide>(axis{max64}) == "m4294967295.d4294967295.0");
  // The longest possible names still fit the fixed buffer.
  using long_names = causal::axis_layout<32, 0, 32, 0>;
  CHECK(causal::format_axis<long_names>(axis{max64}).view() == "s4294967295.m0.d4294967295.0");
}

TEST_CASE("axis: format_axis is constexpr and operator<< writes the text form", "[axis][text]") {
  constexpr causal::axis_name name = causal::format_axis(axis{(std::uint64_t{2} << 56) | 5});
  STATIC_REQUIRE(name.view() == "s2.m0.queue.5");
  STATIC_REQUIRE(causal::domain_name(domain::queue) == "queue");
  STATIC_REQUIRE(causal::domain_name(domain::collective) == "collective");
  STATIC_REQUIRE(causal::domain_name(domain::epilogue) == "epilogue");
  STATIC_REQUIRE(causal::domain_name(domain::host) == "host");
  STATIC_REQUIRE(causal::domain_name(domain::first_user).empty());
  STATIC_REQUIRE(causal::domain_name(user_domain(42)).empty());
  std::ostringstream os;
  os << make<causal::default_axis_layout>(0, 1, domain::queue, 2) << " "
     << make<causal::default_axis_layout>(2, 1, user_domain(99), 3);
  CHECK(os.str() == "m1.queue.2 s2.m1.d99.3");
}

//===-- allocator -------------------------------------------------------------===//

TEST_CASE("axis_allocator: ordinals per (machine, domain) start at 1 and increase",
          "[axis][allocator]") {
  causal::axis_allocator alloc{3};
  CHECK(alloc.session() == 3);
  CHECK(alloc.allocated(0, domain::queue) == 0);
  for (std::uint64_t i = 1; i <= 5; ++i) {
    const auto r = alloc.allocate(0, domain::queue);
    REQUIRE(r.ok());
    CHECK(*r == make<causal::default_axis_layout>(3, 0, domain::queue, i));
  }
  // Other pairs keep their own counters.
  CHECK(alloc.allocate(1, domain::queue).value() ==
        make<causal::default_axis_layout>(3, 1, domain::queue, 1));
  CHECK(alloc.allocate(0, domain::collective).value() ==
        make<causal::default_axis_layout>(3, 0, domain::collective, 1));
  CHECK(alloc.allocate(0, domain::queue).value() ==
        make<causal::default_axis_layout>(3, 0, domain::queue, 6));
  CHECK(alloc.allocated(0, domain::queue) == 6);
  CHECK(alloc.allocated(1, domain::queue) == 1);
  CHECK(alloc.allocated(0, domain::collective) == 1);
  CHECK(alloc.allocated(0, domain::host) == 0);
}

TEST_CASE("axis_allocator: never hands out an axis twice", "[axis][allocator]") {
  causal::axis_allocator alloc{0};
  std::set<std::uint64_t> seen;
  axis previous{};
  for (int i = 0; i < 3000; ++i) {
    const std::uint64_t machine = static_cast<std::uint64_t>(i % 3);
    const domain d = (i % 2) == 0 ? domain::queue : user_domain(40);
    const axis a = alloc.allocate(machine, d).value();
    CHECK(causal::ordinal_of(a) != 0);
    CHECK(causal::machine_of(a) == machine);
    CHECK(causal::domain_of(a) == d);
    CHECK(seen.insert(a.raw()).second);
    if (i == 0) previous = a;
  }
  CHECK(seen.size() == 3000);
  // Two devices drawing from one allocator never alias (the restart bug).
  CHECK(alloc.allocate(0, domain::queue).value() != previous);
}

TEST_CASE("axis_allocator: allocators of one session hand out the same axes",
          "[axis][allocator]") {
  causal::axis_allocator one{5};
  causal::axis_allocator two{5};
  causal::axis_allocator other{6};
  const axis a = one.allocate(0, domain::queue).value();
  CHECK(two.allocate(0, domain::queue).value() == a);
  CHECK(other.allocate(0, domain::queue).value() != a);
}

TEST_CASE("axis_allocator: concurrent allocation yields distinct, per-thread increasing axes",
          "[axis][allocator][threads]") {
  causal::axis_allocator alloc{1};
  constexpr int threads = 8;
  constexpr int per_thread = 4000;
  constexpr std::uint64_t machines = 2;
  std::vector<std::vector<axis>> got(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&alloc, &got, t] {
      got[static_cast<std::size_t>(t)].reserve(per_thread);
      for (int i = 0; i < per_thread; ++i) {
        const std::uint64_t machine = static_cast<std::uint64_t>(i) % machines;
        const auto r = alloc.allocate(machine, domain::queue);
        got[static_cast<std::size_t>(t)].push_back(r ? *r : axis{});
      }
    });
  }
  for (std::thread& w : workers) w.join();

  std::set<std::uint64_t> all;
  for (const std::vector<axis>& mine : got) {
    REQUIRE(mine.size() == per_thread);
    std::uint64_t last_ordinal[machines] = {0, 0};
    for (std::size_t i = 0; i < mine.size(); ++i) {
      const axis a = mine[i];
      REQUIRE(a != axis{});  // every allocation succeeded
      REQUIRE(causal::session_of(a) == 1);
      const std::uint64_t m = causal::machine_of(a);
      REQUIRE(m == i % machines);
      // Monotonic: each thread sees its own ordinals rise.
      REQUIRE(causal::ordinal_of(a) > last_ordinal[m]);
      last_ordinal[m] = causal::ordinal_of(a);
      all.insert(a.raw());
    }
  }
  constexpr std::uint64_t total = std::uint64_t{threads} * per_thread;
  CHECK(all.size() == total);  // no duplicates
  // No gaps: the ordinals of each machine are exactly 1..N.
  for (std::uint64_t m = 0; m < machines; ++m) {
    CHECK(alloc.allocated(m, domain::queue) == total / machines);
    CHECK(all.count(make<causal::default_axis_layout>(1, m, domain::queue, total / machines).raw()) ==
          1);
    CHECK(all.count(make<causal::default_axis_layout>(1, m, domain::queue, total / machines + 1)
                        .raw()) == 0);
  }
}

TEST_CASE("axis_allocator: a spent (machine, domain) stays resource_exhausted",
          "[axis][allocator][errors]") {
  causal::basic_axis_allocator<tiny_ordinals> alloc{0};
  STATIC_REQUIRE(tiny_ordinals::max_ordinal == 15);
  for (std::uint64_t i = 1; i <= 15; ++i) {
    const auto r = alloc.allocate(7, domain::queue);
    REQUIRE(r.ok());
    CHECK(tiny_ordinals::ordinal(*r) == i);
  }
  for (int again = 0; again < 3; ++again) {
    const auto r = alloc.allocate(7, domain::queue);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == errc::resource_exhausted);
    CHECK(r.error_value().position() == 7);  // the machine
  }
  CHECK(alloc.allocated(7, domain::queue) == 15);
  // Other pairs are unaffected.
  CHECK(tiny_ordinals::ordinal(alloc.allocate(7, domain::host).value()) == 1);
  CHECK(tiny_ordinals::ordinal(alloc.allocate(8, domain::queue).value()) == 1);
}

TEST_CASE("axis_allocator: a rejected request consumes no ordinal", "[axis][allocator][errors]") {
  causal::axis_allocator alloc{0};
  CHECK(alloc.allocate(0, domain::queue).value() == make<causal::default_axis_layout>(0, 0, domain::queue, 1));

  const auto bad_machine = alloc.allocate(256, domain::queue);
  REQUIRE_FALSE(bad_machine.ok());
  CHECK(bad_machine.code() == errc::out_of_range);
  CHECK(bad_machine.error_value().position() == 256);

  const auto bad_domain = alloc.allocate(0, user_domain(1000));
  REQUIRE_FALSE(bad_domain.ok());
  CHECK(bad_domain.code() == errc::out_of_range);
  CHECK(bad_domain.error_value().position() == 1000);

  CHECK(alloc.allocated(0, domain::queue) == 1);
  CHECK(alloc.allocated(256, domain::queue) == 0);
  CHECK(alloc.allocated(0, user_domain(1000)) == 0);
  CHECK(alloc.allocate(0, domain::queue).value() == make<causal::default_axis_layout>(0, 0, domain::queue, 2));
}

TEST_CASE("axis_allocator: an out-of-range session fails every allocation",
          "[axis][allocator][errors]") {
  causal::axis_allocator alloc{256};
  for (int i = 0; i < 2; ++i) {
    const auto r = alloc.allocate(0, domain::queue);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == errc::out_of_range);
    CHECK(r.error_value().position() == 256);
  }
  CHECK(alloc.allocated(0, domain::queue) == 0);
}

TEST_CASE("axis_allocator: default_axis_allocator is one process-wide session-0 allocator",
          "[axis][allocator]") {
  causal::axis_allocator& a = causal::default_axis_allocator();
  causal::axis_allocator* from_thread = nullptr;
  std::thread t([&from_thread] { from_thread = &causal::default_axis_allocator(); });
  t.join();
  CHECK(&a == &causal::default_axis_allocator());
  CHECK(&a == from_thread);
  CHECK(a.session() == 0);
  const std::uint64_t before = a.allocated(9, domain::host);
  const axis x = causal::default_axis_allocator().allocate(9, domain::host).value();
  const axis y = causal::default_axis_allocator().allocate(9, domain::host).value();
  CHECK(causal::ordinal_of(x) == before + 1);
  CHECK(causal::ordinal_of(y) == before + 2);
  CHECK(a.allocated(9, domain::host) == before + 2);
}
