// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// mpi_wire_test: the byte form of causal::mpi's messages (wire.hpp).
//
// Every kind round-trips (encode, decode, the same fields, re-encode to the
// same bytes); every reject path the header names fails with its errc at
// the byte it names; every proper prefix of a valid message is truncation;
// and an update stays within the 24 + 4n byte budget for n frontier
// entries on one rank's axes.

#include <causal/adapters/mpi/wire.hpp>
#include <causal/axis.hpp>
#include <causal/frontier.hpp>
#include <causal/frontier_wire.hpp>

#include "catch.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace {

namespace mpi = causal::mpi;
using causal::axis;
using causal::errc;
using causal::frontier_entry;
using F = causal::frontier;
using layout = causal::default_axis_layout;
using bytes_t = std::vector<std::byte>;

/// Axis `ordinal` of `rank`'s queue domain (machine = rank).
axis rank_axis(std::uint64_t rank, std::uint64_t ordinal, causal::domain d = causal::domain::queue) {
  return layout::make(causal::axis_fields{0, rank, d, ordinal}).value();
}

bytes_t from_hex(std::initializer_list<unsigned> values) {
  bytes_t out;
  for (unsigned v : values) out.push_back(static_cast<std::byte>(v));
  return out;
}

std::string hex(const bytes_t& b) {
  std::string s;
  static const char digits[] = "0123456789abcdef";
  for (std::byte x : b) {
    s += digits[static_cast<unsigned>(x) >> 4];
    s += digits[static_cast<unsigned>(x) & 15];
    s += ' ';
  }
  return s;
}

/// Runs an encoder into a large buffer and returns exactly its bytes.
template <class Encode>
bytes_t encode_with(Encode encode) {
  std::array<std::byte, 4096> buffer{};
  const causal::result<std::size_t> n = encode(std::span<std::byte>(buffer));
  REQUIRE(n.ok());
  return bytes_t(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(*n));
}

causal::result<mpi::message<F>> decode(const bytes_t& b) {
  return mpi::decode<F>(std::span<const std::byte>(b));
}

/// Encodes a decoded message again from its fields (by kind).
bytes_t reencode(const mpi::message<F>& m) {
  std::vector<frontier_entry> axes;
  std::vector<std::uint64_t> ids;
  for (frontier_entry e : m.hello.axes) axes.push_back(e);
  for (std::uint64_t id : m.hello.exports) ids.push_back(id);
  return encode_with([&](std::span<std::byte> out) -> causal::result<std::size_t> {
    switch (m.kind) {
      case mpi::message_kind::hello: return mpi::encode_hello(out, m.hello, axes, ids);
      case mpi::message_kind::subscribe: return mpi::encode_subscribe(out, m.id);
      case mpi::message_kind::unsubscribe: return mpi::encode_unsubscribe(out, m.id);
      case mpi::message_kind::submitted: return mpi::encode_submitted(out, m.id, m.value, m.frontier, m.producer);
      case mpi::message_kind::reached:
        if (m.external) return mpi::encode_reached_external(out, m.id, m.value);
        return mpi::encode_reached(out, m.id, m.value, m.frontier, m.producer);
      case mpi::message_kind::failed: {
        const std::string text(m.failure.text);
        return mpi::encode_failed(out, m.id, causal::error{m.failure.code, text.c_str(), m.failure.position});
      }
      case mpi::message_kind::bye: return mpi::encode_bye(out);
      case mpi::message_kind::heartbeat: return mpi::encode_heartbeat(out);
      case mpi::message_kind::axes: {
        std::vector<frontier_entry> announced;
        for (frontier_entry e : m.axes) announced.push_back(e);
        return mpi::encode_axes(out, announced);
      }
    }
    return causal::error{errc::invalid_argument, "unknown kind"};
  });
}

/// Requires that `b` decodes, re-encodes to itself, and returns the message.
mpi::message<F> round_trip(const bytes_t& b) {
  INFO("bytes: " << hex(b));
  const auto m = decode(b);
  if (!m) FAIL("decode rejected a valid message: " << m.error_value().message() << " at " << m.error_value().position());
  REQUIRE(reencode(*m) == b);
  return *m;
}

/// Requires that `b` is rejected with `code` at byte `position`.
void require_reject(const bytes_t& b, errc code, std::uint64_t position) {
  INFO("bytes: " << hex(b));
  const auto m = decode(b);
  REQUIRE_FALSE(m.ok());
  INFO("message: " << m.error_value().message());
  CHECK(m.error_value().code() == code);
  CHECK(m.error_value().position() == position);
  CHECK_FALSE(m.error_value().message().empty());
}

const F sample_frontier{{rank_axis(1, 1), 5}, {rank_axis(1, 2), 9}, {rank_axis(0, 7), 3}};

mpi::hello_fields sample_hello() {
  mpi::hello_fields h;
  h.rank = 2;
  h.size = 5;
  h.session = 300;
  h.layout = mpi::hello_fields::layout_of<layout>();
  h.features = 0x81;
  h.heartbeat_interval_us = 200'000;
  h.frontier_capacity = 12;
  return h;
}

/// One valid message of every kind and shape the tests reuse.
std::vector<bytes_t> valid_messages() {
  const std::vector<frontier_entry> axes{{rank_axis(2, 1), 4}, {rank_axis(2, 2), 0}, {rank_axis(2, 900), 77}};
  const std::vector<std::uint64_t> ids{1, 2, 300, 1ull << 40};
  F tainted = sample_frontier;
  tainted.set_tainted();
  return {
      encode_with([&](auto out) { return mpi::encode_hello(out, sample_hello(), axes, ids); }),
      encode_with([&](auto out) { return mpi::encode_hello(out, mpi::hello_fields{}, {}, {}); }),
      encode_with([&](auto out) { return mpi::encode_subscribe(out, 0); }),
      encode_with([&](auto out) { return mpi::encode_subscribe(out, 1ull << 63); }),
      encode_with([&](auto out) { return mpi::encode_unsubscribe(out, 17); }),
      encode_with([&](auto out) { return mpi::encode_submitted(out, 3, 7, sample_frontier, sample_frontier[1]); }),
      encode_with([&](auto out) { return mpi::encode_submitted(out, 3, 8, F{}, frontier_entry{}); }),
      encode_with([&](auto out) {
        return mpi::encode_submitted(out, 3, 9, sample_frontier, frontier_entry{rank_axis(1, 3), 2});
      }),
      encode_with([&](auto out) { return mpi::encode_reached(out, 4, 1, tainted, frontier_entry{}); }),
      encode_with([&](auto out) { return mpi::encode_reached(out, 4, ~0ull, sample_frontier, sample_frontier[0]); }),
      encode_with([&](auto out) { return mpi::encode_reached_external(out, 4, 12); }),
      encode_with([&](auto out) {
        return mpi::encode_failed(out, 5, causal::error{errc::device_lost, "gpu fell off the bus", 42});
      }),
      encode_with([&](auto out) { return mpi::encode_failed(out, 5, causal::error{errc::timeout, "", 0}); }),
      encode_with([&](auto out) { return mpi::encode_bye(out); }),
      encode_with([&](auto out) { return mpi::encode_heartbeat(out); }),
      encode_with([&](auto out) {
        const std::vector<frontier_entry> late{{rank_axis(1, 7), 0}, {rank_axis(1, 9), 12}};
        return mpi::encode_axes(out, late);
      }),
  };
}

}  // namespace

//===-- round trips -----------------------------------------------------------===//

TEST_CASE("mpi wire: HELLO round-trips its fixed fields, axes with epochs and export ids", "[mpi][wire]") {
  const std::vector<frontier_entry> axes{{rank_axis(2, 1), 4}, {rank_axis(2, 2), 0}, {rank_axis(2, 900), 77}};
  const std::vector<std::uint64_t> ids{1, 2, 300, 1ull << 40};
  mpi::hello_fields fields = sample_hello();
  fields.more = GENERATE(false, true);
  const bytes_t b = encode_with([&](auto out) { return mpi::encode_hello(out, fields, axes, ids); });
  const auto m = round_trip(b);
  REQUIRE(m.kind == mpi::message_kind::hello);
  CHECK(m.hello.rank == 2);
  CHECK(m.hello.size == 5);
  CHECK(m.hello.session == 300);
  CHECK(m.hello.layout == mpi::hello_fields::layout_of<layout>());
  CHECK(m.hello.features == 0x81);
  CHECK(m.hello.heartbeat_interval_us == 200'000);
  CHECK(m.hello.frontier_capacity == 12);
  CHECK(m.hello.more == fields.more);
  CHECK(m.flags == (fields.more ? mpi::hello_flag_more : 0));
  std::vector<frontier_entry> got_axes(m.hello.axes.begin(), m.hello.axes.end());
  std::vector<std::uint64_t> got_ids(m.hello.exports.begin(), m.hello.exports.end());
  CHECK(got_axes == axes);
  CHECK(got_ids == ids);
  CHECK(m.hello.axes.size() == 3);
  CHECK(m.hello.exports.size() == 4);
}

TEST_CASE("mpi wire: SUBSCRIBE, UNSUBSCRIBE, BYE and HEARTBEAT round-trip with their sizes", "[mpi][wire]") {
  const bytes_t sub = encode_with([](auto out) { return mpi::encode_subscribe(out, 5); });
  CHECK(sub.size() == 4);
  auto m = round_trip(sub);
  CHECK(m.kind == mpi::message_kind::subscribe);
  CHECK(m.id == 5);
  m = round_trip(encode_with([](auto out) { return mpi::encode_unsubscribe(out, 1ull << 50); }));
  CHECK(m.kind == mpi::message_kind::unsubscribe);
  CHECK(m.id == 1ull << 50);
  const bytes_t bye = encode_with([](auto out) { return mpi::encode_bye(out); });
  CHECK(bye == from_hex({1, 7, 0}));
  CHECK(round_trip(bye).kind == mpi::message_kind::bye);
  const bytes_t hb = encode_with([](auto out) { return mpi::encode_heartbeat(out); });
  CHECK(hb == from_hex({1, 8, 0}));
  CHECK(round_trip(hb).kind == mpi::message_kind::heartbeat);
}

TEST_CASE("mpi wire: AXES round-trips the axes announced after HELLO; empty or unsorted lists are refused",
          "[mpi][wire]") {
  const std::vector<frontier_entry> late{{rank_axis(3, 2), 0}, {rank_axis(3, 40), 5}, {rank_axis(3, 1u << 20), 1u << 30}};
  const bytes_t b = encode_with([&](auto out) { return mpi::encode_axes(out, late); });
  CHECK(b[1] == std::byte{9});
  const auto m = round_trip(b);
  REQUIRE(m.kind == mpi::message_kind::axes);
  CHECK(mpi::to_string(m.kind) == "axes");
  CHECK(std::vector<frontier_entry>(m.axes.begin(), m.axes.end()) == late);
  CHECK(m.axes.size() == 3);
  CHECK_FALSE(mpi::peek_id(std::span<const std::byte>(b)).has_value());

  std::array<std::byte, 64> out{};
  CHECK(mpi::encode_axes(out, std::span<const frontier_entry>{}).code() == errc::invalid_argument);
  const std::vector<frontier_entry> unsorted{{rank_axis(3, 40), 1}, {rank_axis(3, 2), 1}};
  CHECK(mpi::encode_axes(out, unsorted).code() == errc::invalid_argument);
  const std::vector<frontier_entry> repeated{{rank_axis(3, 2), 1}, {rank_axis(3, 2), 4}};
  CHECK(mpi::encode_axes(out, repeated).code() == errc::invalid_argument);

  // Decoding: a count of 0, a repeated axis (delta 0), a count beyond the
  // bytes, and a flag bit are each refused at the byte that is wrong.
  const auto empty = decode(from_hex({1, 9, 0, 0}));
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error_value().code() == errc::malformed);
  CHECK(empty.error_value().position() == 3);
  const auto again = decode(from_hex({1, 9, 0, 2, 5, 0, 0, 1}));
  REQUIRE_FALSE(again.ok());
  CHECK(again.error_value().code() == errc::malformed);
  CHECK(again.error_value().position() == 6);
  const auto short_list = decode(from_hex({1, 9, 0, 3, 5, 0}));
  REQUIRE_FALSE(short_list.ok());
  CHECK(short_list.error_value().code() == errc::truncated);
  const auto flagged = decode(from_hex({1, 9, 1, 1, 5, 0}));
  REQUIRE_FALSE(flagged.ok());
  CHECK(flagged.error_value().position() == 2);
}

TEST_CASE("mpi wire: updates round-trip value, frontier, taint and every producer form", "[mpi][wire]") {
  struct update_case {
    const char* name;
    F frontier;
    frontier_entry producer;
    std::uint8_t ref;  // the producer ref byte the encoder must choose
  };
  F tainted = sample_frontier;
  tainted.set_tainted();
  const std::vector<update_case> cases{
      {"no producer", sample_frontier, frontier_entry{}, 0},
      {"producer is entry 0", sample_frontier, sample_frontier[0], 2},
      {"producer is entry 2", sample_frontier, sample_frontier[2], 4},
      {"producer spelled out", sample_frontier, frontier_entry{rank_axis(3, 1), 8}, 1},
      {"same axis, other epoch: spelled out", sample_frontier, frontier_entry{sample_frontier[1].axis, 4}, 1},
      {"empty frontier, spelled-out producer", F{}, frontier_entry{rank_axis(1, 1), 1}, 1},
      {"tainted frontier", tainted, tainted[1], 3},
  };
  for (const update_case& c : cases) {
    for (const auto kind : {mpi::message_kind::submitted, mpi::message_kind::reached}) {
      INFO(c.name << " / " << mpi::to_string(kind));
      const std::uint64_t id = 1000;
      const std::uint64_t value = 123456;
      const bytes_t b = encode_with([&](auto out) {
        return kind == mpi::message_kind::submitted ? mpi::encode_submitted(out, id, value, c.frontier, c.producer)
                                                    : mpi::encode_reached(out, id, value, c.frontier, c.producer);
      });
      const auto m = round_trip(b);
      CHECK(m.kind == kind);
      CHECK(m.id == id);
      CHECK(m.value == value);
      CHECK_FALSE(m.external);
      CHECK(m.frontier == c.frontier);
      CHECK(m.frontier.tainted() == c.frontier.tainted());
      CHECK(m.producer == c.producer);
      // header 3, id 2, value 3: the ref byte is at offset 8.
      CHECK(static_cast<unsigned>(b[8]) == c.ref);
      CHECK(b.size() <= mpi::max_update_size<F>);
    }
  }
}

TEST_CASE("mpi wire: an external REACHED carries no frontier and decodes tainted", "[mpi][wire]") {
  const bytes_t b = encode_with([](auto out) { return mpi::encode_reached_external(out, 9, 300); });
  CHECK(b.size() == 6);
  const auto m = round_trip(b);
  CHECK(m.kind == mpi::message_kind::reached);
  CHECK(m.external);
  CHECK(m.flags == mpi::reached_flag_external);
  CHECK(m.id == 9);
  CHECK(m.value == 300);
  CHECK(m.frontier.empty());
  CHECK(m.frontier.tainted());
  CHECK(m.producer == frontier_entry{});
}

TEST_CASE("mpi wire: FAILED carries code, position and text; the encoder cuts and cleans the text",
          "[mpi][wire]") {
  // The decoded text points into the bytes: keep them alive.
  const bytes_t lost = encode_with(
      [](auto out) { return mpi::encode_failed(out, 77, causal::error{errc::device_lost, "queue 3 lost", 999}); });
  auto m = round_trip(lost);
  CHECK(m.kind == mpi::message_kind::failed);
  CHECK(m.id == 77);
  CHECK(m.failure.code == errc::device_lost);
  CHECK(m.failure.position == 999);
  CHECK(m.failure.text == "queue 3 lost");

  // Every known code passes.
  for (unsigned c = 1; c <= static_cast<unsigned>(errc::unsupported_version); ++c) {
    m = round_trip(encode_with(
        [&](auto out) { return mpi::encode_failed(out, 1, causal::error{static_cast<errc>(c), "x", 0}); }));
    CHECK(m.failure.code == static_cast<errc>(c));
  }

  const std::string longer(100, 'a');
  const bytes_t cut = encode_with(
      [&](auto out) { return mpi::encode_failed(out, 1, causal::error{errc::timeout, longer.c_str(), 0}); });
  m = round_trip(cut);
  CHECK(m.failure.text == std::string(mpi::max_failure_text, 'a'));
  CHECK(cut.size() <= mpi::max_failed_size);

  const bytes_t cleaned = encode_with(
      [](auto out) { return mpi::encode_failed(out, 1, causal::error{errc::timeout, "tab\there\x01\xff", 0}); });
  m = round_trip(cleaned);
  CHECK(m.failure.text == "tab?here??");
}

TEST_CASE("mpi wire: encoders refuse bad arguments and report the size a short buffer needed", "[mpi][wire]") {
  std::array<std::byte, 256> buffer{};
  const std::span<std::byte> out(buffer);
  CHECK(mpi::encode_submitted(out, 1, 0, F{}, frontier_entry{}).code() == errc::invalid_argument);
  CHECK(mpi::encode_reached(out, 1, 0, F{}, frontier_entry{}).code() == errc::invalid_argument);
  CHECK(mpi::encode_reached_external(out, 1, 0).code() == errc::invalid_argument);
  CHECK(mpi::encode_failed(out, 1, causal::error{}).code() == errc::invalid_argument);
  mpi::hello_fields bad = sample_hello();
  bad.rank = 5;
  CHECK(mpi::encode_hello(out, bad, {}, {}).code() == errc::invalid_argument);
  bad = sample_hello();
  bad.frontier_capacity = 0;
  CHECK(mpi::encode_hello(out, bad, {}, {}).code() == errc::invalid_argument);
  const std::vector<frontier_entry> unsorted{{rank_axis(2, 2), 1}, {rank_axis(2, 1), 1}};
  CHECK(mpi::encode_hello(out, sample_hello(), unsorted, {}).code() == errc::invalid_argument);
  const std::vector<std::uint64_t> repeated{4, 4};
  CHECK(mpi::encode_hello(out, sample_hello(), {}, repeated).code() == errc::invalid_argument);

  const bytes_t full = encode_with(
      [](auto o) { return mpi::encode_submitted(o, 1, 2, sample_frontier, sample_frontier[0]); });
  for (std::size_t n = 0; n < full.size(); ++n) {
    const auto r = mpi::encode_submitted(out.first(n), 1, 2, sample_frontier, sample_frontier[0]);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == errc::capacity_exceeded);
    CHECK(r.error_value().position() == full.size());
  }
}

//===-- rejects ----------------------------------------------------------------===//

TEST_CASE("mpi wire: every proper prefix of a valid message is truncation, never a crash", "[mpi][wire][reject]") {
  for (const bytes_t& b : valid_messages()) {
    round_trip(b);
    for (std::size_t n = 0; n < b.size(); ++n) {
      const bytes_t prefix(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n));
      INFO("message " << hex(b) << " cut to " << n);
      const auto m = decode(prefix);
      REQUIRE_FALSE(m.ok());
      CHECK(m.error_value().code() == errc::truncated);
      CHECK(m.error_value().position() <= n);
    }
  }
}

TEST_CASE("mpi wire: a byte after a valid message is a trailing-bytes error at its offset", "[mpi][wire][reject]") {
  for (const bytes_t& b : valid_messages()) {
    bytes_t longer = b;
    longer.push_back(std::byte{0});
    const auto m = decode(longer);
    INFO("message " << hex(b));
    REQUIRE_FALSE(m.ok());
    // For an update the frontier runs to the end and reports it; either
    // way the extra byte is named.
    CHECK(m.error_value().code() == errc::malformed);
    CHECK(m.error_value().position() == b.size());
  }
}

TEST_CASE("mpi wire: header rejects: version, kind and flag bits", "[mpi][wire][reject]") {
  require_reject(from_hex({2, 7, 0}), errc::unsupported_version, 0);
  require_reject(from_hex({0, 7, 0}), errc::unsupported_version, 0);
  require_reject(from_hex({1, 0, 0}), errc::malformed, 1);
  require_reject(from_hex({1, 10, 0}), errc::malformed, 1);
  require_reject(from_hex({1, 0xff, 0}), errc::malformed, 1);
  // Flags: bit 0 is defined for HELLO and REACHED only.
  require_reject(from_hex({1, 7, 1}), errc::malformed, 2);
  require_reject(from_hex({1, 8, 0x80}), errc::malformed, 2);
  require_reject(from_hex({1, 2, 1, 5}), errc::malformed, 2);
  require_reject(from_hex({1, 4, 1, 5, 1, 0, 1, 0, 0}), errc::malformed, 2);
  require_reject(from_hex({1, 5, 2, 5, 1}), errc::malformed, 2);
  require_reject(from_hex({1, 1, 2}), errc::malformed, 2);
  require_reject(from_hex({1}), errc::truncated, 1);
}

TEST_CASE("mpi wire: non-canonical and over-long varints are malformed at their first byte", "[mpi][wire][reject]") {
  // SUBSCRIBE id 1 written as two bytes.
  require_reject(from_hex({1, 2, 0, 0x81, 0x00}), errc::malformed, 3);
  // SUBSCRIBE id 0 written as two bytes.
  require_reject(from_hex({1, 2, 0, 0x80, 0x00}), errc::malformed, 3);
  // 11-byte varint.
  require_reject(from_hex({1, 2, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}),
                 errc::malformed, 3);
  // 10th byte with more than bit 63.
  require_reject(from_hex({1, 2, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}), errc::malformed, 3);
  // The value of an update, non-canonical.
  require_reject(from_hex({1, 5, 1, 4, 0x85, 0x00}), errc::malformed, 4);
  // A HELLO's rank, non-canonical.
  require_reject(from_hex({1, 1, 0, 0x80, 0x00, 2}), errc::malformed, 3);
}

TEST_CASE("mpi wire: a zero value in an update is malformed at the value", "[mpi][wire][reject]") {
  require_reject(from_hex({1, 4, 0, 7, 0, 0, 1, 0, 0}), errc::malformed, 4);
  require_reject(from_hex({1, 5, 0, 7, 0, 0, 1, 0, 0}), errc::malformed, 4);
  require_reject(from_hex({1, 5, 1, 0x81, 0x01, 0}), errc::malformed, 5);
}

TEST_CASE("mpi wire: bad producer refs are malformed at the ref", "[mpi][wire][reject]") {
  bytes_t b = encode_with([](auto out) { return mpi::encode_reached(out, 3, 7, sample_frontier, sample_frontier[2]); });
  REQUIRE(b[5] == std::byte{4});
  // An index one past the entries.
  b[5] = std::byte{5};
  require_reject(b, errc::malformed, 5);
  // Index 0 of an empty frontier.
  require_reject(from_hex({1, 5, 0, 3, 7, 2, 1, 0, 0}), errc::malformed, 5);
  // A spelled-out producer equal to entry 1 (must be written as index 3).
  const F one{{rank_axis(1, 1), 5}};
  bytes_t spelled = from_hex({1, 4, 0, 3, 7, 1});
  {
    std::array<std::byte, 16> axis_bytes{};
    std::size_t n = 0;
    std::uint64_t raw = rank_axis(1, 1).raw();
    while (raw >= 0x80) {
      axis_bytes[n++] = static_cast<std::byte>((raw & 0x7f) | 0x80);
      raw >>= 7;
    }
    axis_bytes[n++] = static_cast<std::byte>(raw);
    spelled.insert(spelled.end(), axis_bytes.begin(), axis_bytes.begin() + static_cast<std::ptrdiff_t>(n));
    spelled.push_back(std::byte{5});  // epoch 5
    const bytes_t f = causal::serialize(one);
    spelled.insert(spelled.end(), f.begin(), f.end());
    require_reject(spelled, errc::malformed, 5);
    // The same with epoch 6 is a valid spelled-out producer.
    bytes_t other = spelled;
    other[6 + n] = std::byte{6};
    const auto m = round_trip(other);
    CHECK(m.producer == frontier_entry{rank_axis(1, 1), 6});
    // Epoch 0 is rejected at the epoch.
    other[6 + n] = std::byte{0};
    require_reject(other, errc::malformed, 6 + n);
  }
}

TEST_CASE("mpi wire: frontier errors keep their code with the offset moved to the whole message",
          "[mpi][wire][reject]") {
  bytes_t b = encode_with([](auto out) { return mpi::encode_submitted(out, 3, 7, sample_frontier, frontier_entry{}); });
  const std::size_t at = 6;  // header 3, id 1, value 1, ref 1
  REQUIRE(b[at] == std::byte{causal::frontier_wire_version});
  SECTION("unknown frontier version") {
    b[at] = std::byte{9};
    require_reject(b, errc::unsupported_version, at);
  }
  SECTION("unknown frontier flags") {
    b[at + 1] = std::byte{4};
    require_reject(b, errc::malformed, at + 1);
  }
  SECTION("more entries than the Capacity") {
    using small = causal::basic_frontier<2>;
    const auto m = mpi::decode<small>(std::span<const std::byte>(b));
    REQUIRE_FALSE(m.ok());
    CHECK(m.error_value().code() == errc::capacity_exceeded);
    CHECK(m.error_value().position() == at + 2);
  }
  SECTION("a zero epoch") {
    const bytes_t zero = from_hex({1, 4, 0, 3, 7, 0, 1, 0, 1, 5, 0});
    require_reject(zero, errc::malformed, 9);
  }
  SECTION("a repeated axis") {
    const bytes_t rep = from_hex({1, 4, 0, 3, 7, 0, 1, 0, 2, 5, 1, 0, 1});
    require_reject(rep, errc::malformed, 11);
  }
}

TEST_CASE("mpi wire: HELLO rejects: rank, size, layout, capacity and unsorted lists", "[mpi][wire][reject]") {
  // version, kind, flags, rank, size, session, layout (4), features, interval, capacity, axes, exports
  const bytes_t good = from_hex({1, 1, 0, 1, 2, 0, 8, 8, 8, 40, 0, 0, 12, 0, 0});
  round_trip(good);
  auto with = [&](std::size_t at, unsigned v) {
    bytes_t b = good;
    b[at] = static_cast<std::byte>(v);
    return b;
  };
  require_reject(with(3, 2), errc::malformed, 3);   // rank == size
  require_reject(with(3, 5), errc::malformed, 3);   // rank > size
  require_reject(with(4, 0), errc::malformed, 3);   // size 0
  require_reject(with(6, 9), errc::malformed, 6);   // sum 65
  require_reject(with(6, 7), errc::malformed, 6);   // sum 63
  require_reject(with(6, 65), errc::malformed, 6);  // a field wider than 64
  {
    // domain 33 bits, sum still 64
    bytes_t b = good;
    b[6] = std::byte{0};
    b[7] = std::byte{0};
    b[8] = std::byte{33};
    b[9] = std::byte{31};
    require_reject(b, errc::malformed, 6);
  }
  require_reject(with(12, 0), errc::malformed, 12);  // capacity 0
  {
    // capacity 4097 = 0x81 0x20
    bytes_t b = good;
    b[12] = std::byte{0x81};
    b.insert(b.begin() + 13, std::byte{0x20});
    require_reject(b, errc::malformed, 12);
    b[13] = std::byte{0x1f};  // 1 + 31 * 128 = 3969: within 1..4096
    round_trip(b);
  }
  // A rank beyond 32 bits.
  require_reject(from_hex({1, 1, 0, 0x80, 0x80, 0x80, 0x80, 0x10, 2, 0, 8, 8, 8, 40, 0, 0, 12, 0, 0}), errc::malformed,
                 3);
  // Axes: count 2, deltas 5 then 0 (repeat).
  require_reject(from_hex({1, 1, 0, 1, 2, 0, 8, 8, 8, 40, 0, 0, 12, 2, 5, 1, 0, 1, 0}), errc::malformed, 16);
  // Axes: a delta that overflows 64 bits.
  require_reject(from_hex({1, 1, 0, 1, 2, 0, 8, 8, 8, 40, 0, 0, 12, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                           0xff, 0xff, 0x01, 1, 1, 1, 0}),
                 errc::malformed, 25);
  // Exports: count 3, deltas 1, 2, 0.
  require_reject(from_hex({1, 1, 0, 1, 2, 0, 8, 8, 8, 40, 0, 0, 12, 0, 3, 1, 2, 0}), errc::malformed, 17);
  // A list count beyond the bytes left.
  require_reject(from_hex({1, 1, 0, 1, 2, 0, 8, 8, 8, 40, 0, 0, 12, 0, 0x7f, 1}), errc::truncated, 15);
  // Epoch 0 in HELLO is allowed; unknown feature bits too.
  const bytes_t lenient = from_hex({1, 1, 0, 1, 2, 0, 8, 8, 8, 40, 0x7f, 0, 12, 1, 5, 0, 0});
  const auto m = round_trip(lenient);  // its lists point into `lenient`
  CHECK(m.hello.features == 0x7f);
  CHECK(*m.hello.axes.begin() == frontier_entry{axis{5}, 0});
}

TEST_CASE("mpi wire: FAILED rejects: unknown code, long or unprintable text", "[mpi][wire][reject]") {
  // id 5, code, position 0, length 2, "ok"
  const bytes_t good = from_hex({1, 6, 0, 5, 9, 0, 2, 'o', 'k'});
  round_trip(good);
  auto with = [&](std::size_t at, unsigned v) {
    bytes_t b = good;
    b[at] = static_cast<std::byte>(v);
    return b;
  };
  require_reject(with(4, 0), errc::malformed, 4);   // ok is not a failure
  require_reject(with(4, 13), errc::malformed, 4);  // past the last code
  require_reject(with(4, 0xff), errc::malformed, 4);
  require_reject(with(7, 0x1f), errc::malformed, 7);
  require_reject(with(8, 0x7f), errc::malformed, 8);
  require_reject(with(8, 0x80), errc::malformed, 8);
  bytes_t too_long = from_hex({1, 6, 0, 5, 9, 0, static_cast<unsigned>(mpi::max_failure_text + 1)});
  too_long.resize(too_long.size() + mpi::max_failure_text + 1, std::byte{'a'});
  require_reject(too_long, errc::malformed, 6);
  require_reject(from_hex({1, 6, 0, 5, 9, 0, 3, 'o', 'k'}), errc::truncated, 6);
}

TEST_CASE("mpi wire: peek_id names the stream of a damaged update, and only of id-carrying kinds",
          "[mpi][wire]") {
  bytes_t b = encode_with([](auto out) { return mpi::encode_reached(out, 300, 7, sample_frontier, frontier_entry{}); });
  b.back() = std::byte{0xff};  // damage the frontier
  REQUIRE_FALSE(decode(b).ok());
  const auto named = mpi::peek_id(std::span<const std::byte>(b));
  REQUIRE(named.has_value());
  CHECK(named->first == mpi::message_kind::reached);
  CHECK(named->second == 300);
  CHECK_FALSE(mpi::peek_id(std::span<const std::byte>(from_hex({1, 1, 0, 5}))).has_value());
  CHECK_FALSE(mpi::peek_id(std::span<const std::byte>(from_hex({1, 7, 0, 5}))).has_value());
  CHECK_FALSE(mpi::peek_id(std::span<const std::byte>(from_hex({2, 5, 0, 5}))).has_value());
  CHECK_FALSE(mpi::peek_id(std::span<const std::byte>(from_hex({1, 5, 0, 0x85}))).has_value());
}

//===-- size budget ------------------------------------------------------------===//

TEST_CASE("mpi wire: an update with n entries on one rank's axes fits 24 + 4n bytes", "[mpi][wire][size]") {
  const std::uint64_t rank = GENERATE(1u, 7u, 127u);
  for (std::size_t n = 0; n <= 12; ++n) {
    F f;
    for (std::size_t k = 0; k < n; ++k) {
      // Queue ordinals close together, epochs up to 127.
      f.insert_or_raise(rank_axis(rank, 1 + 2 * k), 100 + k);
    }
    REQUIRE(f.size() == n);
    const frontier_entry producer = n == 0 ? frontier_entry{} : f[n - 1];
    const std::uint64_t id = 99;
    const std::uint64_t value = 16'000;
    const bytes_t sub = encode_with([&](auto out) { return mpi::encode_submitted(out, id, value, f, producer); });
    const bytes_t reach = encode_with([&](auto out) { return mpi::encode_reached(out, id, value, f, producer); });
    INFO("rank " << rank << ", n = " << n << ": " << hex(sub));
    CHECK(sub.size() <= 24 + 4 * n);
    CHECK(reach.size() == sub.size());
    CHECK(sub.size() == 3 + 1 + 2 + 1 + causal::serialized_size(f));
    round_trip(sub);
  }
  // The header's figures: 10 bytes for n = 0 (a two-byte value), 17 + 2n
  // at most for rank 127 (its first axis delta is an 8-byte varint).
  CHECK(encode_with([](auto out) { return mpi::encode_submitted(out, 1, 200, F{}, frontier_entry{}); }).size() == 10);
  for (std::size_t n = 1; n <= 12; ++n) {
    F f;
    for (std::size_t k = 0; k < n; ++k) f.insert_or_raise(rank_axis(127, 1 + k), 127);
    const bytes_t b = encode_with([&](auto out) { return mpi::encode_reached(out, 127, 16'383, f, f[0]); });
    CHECK(b.size() <= 17 + 2 * n);
  }
}
