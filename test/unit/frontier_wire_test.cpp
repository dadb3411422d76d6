// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Tests for <causal/frontier_wire.hpp>: round trips, the exact documented
// bytes (version, flags, varint count, delta-coded axes, epochs; computed by
// hand below), every rejection with its errc and byte position, output
// buffers that are too small, serialized_size, canonical form, and the
// std::uint8_t overload.

#include <causal/frontier.hpp>
#include <causal/frontier_wire.hpp>

#include "catch.hpp"
#include "string_makers.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

namespace {

using causal::axis;
using causal::basic_frontier;
using causal::errc;
using causal::frontier;

using bytes_t = std::vector<std::byte>;

constexpr std::uint64_t max64 = ~std::uint64_t{0};
constexpr axis A{1};
constexpr axis B{2};
constexpr axis C{3};

/// Bytes from a list of small integers; `repeat(n, v)` helps with long runs.
bytes_t bytes(std::initializer_list<int> values) {
  bytes_t out;
  for (int v : values) out.push_back(static_cast<std::byte>(v));
  return out;
}
bytes_t cat(std::initializer_list<bytes_t> parts) {
  bytes_t out;
  for (const bytes_t& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}
bytes_t repeat(std::size_t n, int v) { return bytes_t(n, static_cast<std::byte>(v)); }

template <class F>
F tainted(F f) {
  f.set_tainted();
  return f;
}

template <class F = frontier>
causal::result<F> parse(const bytes_t& b) {
  return causal::deserialize<F>(std::span<const std::byte>(b));
}

std::string hex(const bytes_t& b) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (std::byte x : b) {
    const auto v = static_cast<unsigned>(x);
    s += digits[v >> 4];
    s += digits[v & 15];
    s += ' ';
  }
  return s;
}

struct rejection {
  const char* what;
  bytes_t input;
  errc code;
  std::uint64_t position;
};

template <class F>
void check_rejections(const std::vector<rejection>& cases) {
  for (const rejection& c : cases) {
    INFO(c.what << ": " << hex(c.input));
    const causal::result<F> r = parse<F>(c.input);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == c.code);
    CHECK(r.error_value().position() == c.position);
    CHECK_FALSE(r.error_value().message().empty());
  }
}

}  // namespace

//===-- round trips and exact bytes ----------------------------------------------===//

TEST_CASE("wire: serialize then deserialize gives back the same frontier", "[wire][roundtrip]") {
  const frontier cases[] = {
      frontier{},
      tainted(frontier{}),
      frontier{{A, 5}},
      frontier{{A, 5}, {B, 7}, {C, 4}},
      tainted(frontier{{A, 5}, {C, 1}}),
      frontier{{axis{0}, 1}, {axis{max64}, max64}},
      frontier{{axis{max64 - 1}, 1}, {axis{max64}, 2}},
      frontier{{axis{1}, 1},  {axis{2}, 2},   {axis{1u << 20}, 3}, {axis{1ull << 40}, 4},
               {axis{1ull << 48}, 5}, {axis{1ull << 56}, 6}, {axis{1ull << 62}, 7},
               {axis{1ull << 63}, 8}, {axis{(1ull << 63) + 1}, max64}, {axis{max64 - 2}, 1},
               {axis{max64 - 1}, 127}, {axis{max64}, 128}},
  };
  for (const frontier& f : cases) {
    INFO(causal::to_string(f));
    const bytes_t b = causal::serialize(f);
    CHECK(b.size() == causal::serialized_size(f));
    CHECK(b.size() <= causal::max_serialized_size<frontier>);
    const auto back = parse(b);
    REQUIRE(back.ok());
    CHECK(*back == f);
    CHECK(back->invariants_hold());
  }
}

TEST_CASE("wire: the bytes are exactly as documented", "[wire][format]") {
  SECTION("empty: version, flags, count 0") {
    CHECK(causal::serialize(frontier{}) == bytes({0x01, 0x00, 0x00}));
    CHECK(causal::serialize(tainted(frontier{})) == bytes({0x01, 0x01, 0x00}));
  }
  SECTION("two small axes: delta-coded, multi-byte varints, tainted flag") {
    // {raw 1: 5, raw 300: 128}, tainted.
    //   01            version 1
    //   01            flags: tainted
    //   02            count 2
    //   01 05         axis delta 1, epoch 5
    //   ab 02         axis delta 299 = 0b10_0101011: 0x2b | 0x80, then 0x02
    //   80 01         epoch 128: 0x00 | 0x80, then 0x01
    const frontier f = tainted(frontier{{axis{300}, 128}, {axis{1}, 5}});
    CHECK(causal::serialize(f) == bytes({0x01, 0x01, 0x02, 0x01, 0x05, 0xab, 0x02, 0x80, 0x01}));
  }
  SECTION("an axis of machine 1: the first delta is the raw axis") {
    // m1.queue.17 = 2^48 + 17. 7-bit groups, least significant first:
    // 17 (0x11 | 0x80 = 0x91), five zero groups (0x80), then 2^48 >> 42 = 64 (0x40).
    const axis m1q17 = causal::make_axis(0, 1, causal::domain::queue, 17).value();
    REQUIRE(m1q17.raw() == (std::uint64_t{1} << 48) + 17);
    CHECK(causal::serialize(frontier{{m1q17, 3}}) ==
          bytes({0x01, 0x00, 0x01, 0x91, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40, 0x03}));
    // A second queue on the same machine costs 2 bytes: delta 1, epoch.
    const axis m1q18 = causal::make_axis(0, 1, causal::domain::queue, 18).value();
    CHECK(causal::serialize(frontier{{m1q17, 3}, {m1q18, 9}}) ==
          bytes({0x01, 0x00, 0x02, 0x91, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40, 0x03, 0x01, 0x09}));
  }
  SECTION("the largest values take 10-byte varints ending in 0x01") {
    const bytes_t ten = cat({repeat(9, 0xff), bytes({0x01})});
    CHECK(causal::serialize(frontier{{axis{max64}, max64}}) ==
          cat({bytes({0x01, 0x00, 0x01}), ten, ten}));
  }
  SECTION("axis 0 is written as a first delta of 0") {
    CHECK(causal::serialize(frontier{{axis{0}, 1}, {axis{1}, 1}}) ==
          bytes({0x01, 0x00, 0x02, 0x00, 0x01, 0x01, 0x01}));
  }
  SECTION("the documented constants") {
    STATIC_REQUIRE(causal::frontier_wire_version == 1);
    STATIC_REQUIRE(causal::max_serialized_size<frontier> == 2 + 10 + 20 * 12);
    STATIC_REQUIRE(causal::max_serialized_size<basic_frontier<1>> == 32);
  }
}

TEST_CASE("wire: deserialize reads the documented bytes", "[wire][format]") {
  const auto f = parse(bytes({0x01, 0x01, 0x02, 0x01, 0x05, 0xab, 0x02, 0x80, 0x01}));
  REQUIRE(f.ok());
  CHECK(*f == tainted(frontier{{axis{1}, 5}, {axis{300}, 128}}));
  const auto g = parse(cat({bytes({0x01, 0x00, 0x01}), repeat(9, 0x80), bytes({0x01, 0x05})}));
  REQUIRE(g.ok());
  CHECK(*g == frontier{{axis{std::uint64_t{1} << 63}, 5}});
  // The axes may sum to exactly 2^64 - 1.
  const auto h = parse(cat({bytes({0x01, 0x00, 0x02, 0x01, 0x01, 0xfe}), repeat(8, 0xff),
                            bytes({0x01, 0x02})}));
  REQUIRE(h.ok());
  CHECK(*h == frontier{{axis{1}, 1}, {axis{max64}, 2}});
}

TEST_CASE("wire: serialized_size matches what serialize writes", "[wire][size]") {
  const frontier f{{A, 5}, {axis{1ull << 50}, 300}, {axis{max64}, max64}};
  std::array<std::byte, causal::max_serialized_size<frontier>> buffer{};
  const auto n = causal::serialize(f, std::span<std::byte>(buffer));
  REQUIRE(n.ok());
  CHECK(*n == causal::serialized_size(f));
  CHECK(causal::serialized_size(frontier{}) == 3);
  CHECK(causal::serialized_size(frontier{{A, 5}, {B, 3}}) == 7);
  CHECK(bytes_t(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(*n)) ==
        causal::serialize(f));
}

TEST_CASE("wire: serialize into a too-small buffer fails and writes nothing", "[wire][size][errors]") {
  const frontier f{{A, 5}, {B, 300}};
  const std::size_t need = causal::serialized_size(f);
  REQUIRE(need == 8);
  for (std::size_t size = 0; size < need; ++size) {
    INFO("buffer size " << size);
    bytes_t buffer(need + 4, std::byte{0xee});
    const auto r = causal::serialize(f, std::span<std::byte>(buffer.data(), size));
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == errc::capacity_exceeded);
    CHECK(r.error_value().position() == need);
    CHECK(std::all_of(buffer.begin(), buffer.end(), [](std::byte b) { return b == std::byte{0xee}; }));
  }
  bytes_t exact(need, std::byte{0xee});
  const auto r = causal::serialize(f, std::span<std::byte>(exact));
  REQUIRE(r.ok());
  CHECK(*r == need);
  CHECK(exact == causal::serialize(f));
}

TEST_CASE("wire: round trips into other capacities and policies", "[wire][roundtrip]") {
  using R2 = basic_frontier<2, causal::default_axis_layout, causal::reject_overflow>;
  const frontier f{{A, 5}, {C, 4}};
  const bytes_t b = causal::serialize(f);
  const auto small = parse<basic_frontier<2>>(b);
  REQUIRE(small.ok());
  CHECK(*small == basic_frontier<2>{{A, 5}, {C, 4}});
  const auto strict = parse<R2>(b);
  REQUIRE(strict.ok());
  CHECK(causal::serialize(*strict) == b);
  CHECK(strict->tainted() == false);
  const auto t = parse<R2>(causal::serialize(tainted(f)));
  REQUIRE(t.ok());
  CHECK(t->tainted());
}

TEST_CASE("wire: deserialize works in constant expressions", "[wire][constexpr]") {
  constexpr bool ok = [] {
    std::array<std::byte, 32> buffer{};
    const frontier f{{A, 5}, {axis{300}, 128}};
    const auto n = causal::serialize(f, std::span<std::byte>(buffer));
    if (!n || *n != 9) return false;
    const auto g = causal::deserialize<frontier>(std::span<const std::byte>(buffer.data(), *n));
    return g && *g == f;
  }();
  STATIC_REQUIRE(ok);
}

//===-- rejection ----------------------------------------------------------------===//

TEST_CASE("wire: truncated input is rejected where it ends", "[wire][errors]") {
  check_rejections<frontier>({
      {"empty input", bytes({}), errc::truncated, 0},
      {"one byte", bytes({0x01}), errc::truncated, 1},
      {"no count", bytes({0x01, 0x00}), errc::truncated, 2},
      {"count varint cut", bytes({0x01, 0x00, 0x80}), errc::truncated, 2},
      {"count varint cut (2)", bytes({0x01, 0x01, 0xff, 0xff}), errc::truncated, 2},
      {"no axis", bytes({0x01, 0x00, 0x01}), errc::truncated, 3},
      {"axis varint cut", bytes({0x01, 0x00, 0x01, 0x81}), errc::truncated, 3},
      {"second axis missing", bytes({0x01, 0x00, 0x02, 0x01, 0x05}), errc::truncated, 5},
      {"no epoch", bytes({0x01, 0x00, 0x01, 0x05}), errc::truncated, 4},
      {"epoch varint cut", bytes({0x01, 0x00, 0x01, 0x05, 0x80}), errc::truncated, 4},
      {"second epoch missing", bytes({0x01, 0x00, 0x02, 0x01, 0x05, 0x01}), errc::truncated, 6},
      {"first axis of 10 bytes cut", cat({bytes({0x01, 0x00, 0x01}), repeat(9, 0xff)}), errc::truncated, 3},
  });
}

TEST_CASE("wire: an unknown version is rejected with unsupported_version at byte 0",
          "[wire][errors][version]") {
  // The header's contract: the error's position is the byte offset of the
  // problem. The version is byte 0.
  check_rejections<frontier>({
      {"version 0", bytes({0x00, 0x00, 0x00}), errc::unsupported_version, 0},
      {"version 2", bytes({0x02, 0x00, 0x00}), errc::unsupported_version, 0},
      {"version 255", bytes({0xff, 0x00, 0x00}), errc::unsupported_version, 0},
  });
}

TEST_CASE("wire: unknown flag bits are rejected at byte 1", "[wire][errors]") {
  for (int flag = 2; flag < 256; ++flag) {
    INFO("flags " << flag);
    const auto r = parse(bytes({0x01, flag, 0x00}));
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == errc::malformed);
    CHECK(r.error_value().position() == 1);
  }
  CHECK(parse(bytes({0x01, 0x00, 0x00})).ok());
  CHECK(parse(bytes({0x01, 0x01, 0x00})).ok());
}

TEST_CASE("wire: over-long and non-canonical varints are malformed at their first byte",
          "[wire][errors][varint]") {
  check_rejections<frontier>({
      {"count 0 as 80 00", bytes({0x01, 0x00, 0x80, 0x00}), errc::malformed, 2},
      {"count 1 as 81 80 00", bytes({0x01, 0x00, 0x81, 0x80, 0x00, 0x01, 0x01}), errc::malformed, 2},
      {"axis 1 as 81 00", bytes({0x01, 0x00, 0x01, 0x81, 0x00, 0x05}), errc::malformed, 3},
      {"epoch 5 as 85 00", bytes({0x01, 0x00, 0x01, 0x01, 0x85, 0x00}), errc::malformed, 4},
      {"10-byte varint with a zero last group", cat({bytes({0x01, 0x00, 0x01}), repeat(9, 0x80), bytes({0x00, 0x05})}),
       errc::malformed, 3},
      {"11-byte axis varint", cat({bytes({0x01, 0x00, 0x01}), repeat(10, 0x80), bytes({0x01, 0x05})}),
       errc::malformed, 3},
      {"11-byte count varint", cat({bytes({0x01, 0x00}), repeat(10, 0x80), bytes({0x01})}),
       errc::malformed, 2},
      {"10th byte above 1", cat({bytes({0x01, 0x00, 0x01}), repeat(9, 0xff), bytes({0x02, 0x05})}),
       errc::malformed, 3},
      {"10th byte 0x7f", cat({bytes({0x01, 0x00, 0x01}), repeat(9, 0xff), bytes({0x7f, 0x05})}),
       errc::malformed, 3},
      {"10th byte continues", cat({bytes({0x01, 0x00, 0x01}), repeat(9, 0xff), bytes({0x81, 0x00, 0x05})}),
       errc::malformed, 3},
      {"epoch over 64 bits", cat({bytes({0x01, 0x00, 0x01, 0x01}), repeat(9, 0xff), bytes({0x03})}),
       errc::malformed, 4},
  });
}

TEST_CASE("wire: more entries than the target Capacity are rejected at the count",
          "[wire][errors][capacity]") {
  check_rejections<frontier>({
      {"count 13 > 12", bytes({0x01, 0x00, 0x0d}), errc::capacity_exceeded, 2},
      {"count 2^64 - 1", cat({bytes({0x01, 0x00}), repeat(9, 0xff), bytes({0x01})}),
       errc::capacity_exceeded, 2},
  });
  const bytes_t three = causal::serialize(frontier{{A, 1}, {B, 1}, {C, 1}});
  check_rejections<basic_frontier<2>>({{"3 entries into Capacity 2", three, errc::capacity_exceeded, 2}});
  check_rejections<basic_frontier<2, causal::default_axis_layout, causal::reject_overflow>>(
      {{"3 entries into a rejecting Capacity 2", three, errc::capacity_exceeded, 2}});
  CHECK(parse<basic_frontier<3>>(three).ok());
}

TEST_CASE("wire: repeated, overflowing and zero-epoch entries are malformed at the entry",
          "[wire][errors][entries]") {
  check_rejections<frontier>({
      {"repeated axis (delta 0)", bytes({0x01, 0x00, 0x02, 0x01, 0x05, 0x00, 0x06}), errc::malformed, 5},
      {"axis past 2^64 by 1",
       cat({bytes({0x01, 0x00, 0x02}), repeat(9, 0xff), bytes({0x01, 0x05, 0x01, 0x05})}),
       errc::malformed, 14},
      {"axis past 2^64 by a large delta",
       cat({bytes({0x01, 0x00, 0x02, 0x02, 0x05, 0xfe}), repeat(8, 0xff), bytes({0x01, 0x05})}),
       errc::malformed, 5},
      {"zero epoch", bytes({0x01, 0x00, 0x01, 0x05, 0x00}), errc::malformed, 3},
      {"zero epoch in the second entry", bytes({0x01, 0x00, 0x02, 0x01, 0x05, 0x01, 0x00}),
       errc::malformed, 5},
  });
}

TEST_CASE("wire: bytes after the last entry are malformed at the first extra byte",
          "[wire][errors][trailing]") {
  check_rejections<frontier>({
      {"after an empty frontier", bytes({0x01, 0x00, 0x00, 0x00}), errc::malformed, 3},
      {"after a tainted empty frontier", bytes({0x01, 0x01, 0x00, 0x01, 0x02}), errc::malformed, 3},
      {"after one entry", bytes({0x01, 0x00, 0x01, 0x01, 0x05, 0xff}), errc::malformed, 5},
      {"a second valid frontier appended",
       bytes({0x01, 0x00, 0x01, 0x01, 0x05, 0x01, 0x00, 0x00}), errc::malformed, 5},
  });
}

//===-- canonical form, other byte types ------------------------------------------===//

TEST_CASE("wire: every accepted encoding is canonical (serialize(deserialize(b)) == b)",
          "[wire][canonical]") {
  const bytes_t accepted[] = {
      bytes({0x01, 0x00, 0x00}),
      bytes({0x01, 0x01, 0x00}),
      bytes({0x01, 0x00, 0x01, 0x00, 0x01}),
      bytes({0x01, 0x01, 0x02, 0x01, 0x05, 0xab, 0x02, 0x80, 0x01}),
      bytes({0x01, 0x00, 0x02, 0x91, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40, 0x03, 0x01, 0x09}),
      cat({bytes({0x01, 0x00, 0x01}), repeat(9, 0xff), bytes({0x01}), repeat(9, 0xff), bytes({0x01})}),
      cat({bytes({0x01, 0x00, 0x02, 0x01, 0x01, 0xfe}), repeat(8, 0xff), bytes({0x01, 0x02})}),
      cat({bytes({0x01, 0x00, 0x0c}), repeat(24, 0x01)}),  // 12 entries, deltas and epochs 1
  };
  for (const bytes_t& b : accepted) {
    INFO(hex(b));
    const auto f = parse(b);
    REQUIRE(f.ok());
    CHECK(f->invariants_hold());
    CHECK(causal::serialize(*f) == b);
  }
}

TEST_CASE("wire: the std::uint8_t overload reads the same bytes", "[wire][uint8]") {
  const std::vector<std::uint8_t> good{0x01, 0x01, 0x02, 0x01, 0x05, 0xab, 0x02, 0x80, 0x01};
  const auto f = causal::deserialize<frontier>(std::span<const std::uint8_t>(good));
  REQUIRE(f.ok());
  CHECK(*f == tainted(frontier{{axis{1}, 5}, {axis{300}, 128}}));
  const std::array<unsigned char, 4> trailing{0x01, 0x00, 0x00, 0x07};
  const auto bad = causal::deserialize<frontier>(std::span<const std::uint8_t>(trailing));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.code() == errc::malformed);
  CHECK(bad.error_value().position() == 3);
  const auto empty = causal::deserialize<frontier>(std::span<const std::uint8_t>());
  CHECK(empty.code() == errc::truncated);
}
