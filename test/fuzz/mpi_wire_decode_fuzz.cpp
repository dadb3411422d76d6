// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// mpi_wire_decode_fuzz: libFuzzer target for causal::mpi's message parser
// (<causal/adapters/mpi/wire.hpp>), which reads every byte another rank
// sends.
//
// Every input is decoded as a message with a `causal::frontier` (Capacity
// 12) and with a `causal::basic_frontier<4>`. Rejection is fine; crashing,
// reading out of bounds (ASan) or undefined behaviour (UBSan) is not. An
// accepted input must then satisfy, for each type:
//   - canonical form: encoding the decoded fields again (encode_hello with
//     the decoded lists, encode_submitted, encode_reached[_external],
//     encode_failed, ...) reproduces the input bytes exactly;
//   - the frontier keeps the class invariants, an explicit producer is
//     never one of its entries, a FAILED carries a known non-ok code and
//     printable text of at most max_failure_text bytes, a HELLO's rank is
//     below its size and its lists are strictly increasing, an AXES list
//     is non-empty and strictly increasing;
//   - peek_id agrees with the decoded kind and id;
//   - capacity is the only difference between the two types: the small one
//     accepts exactly when the big one does with a frontier of at most 4
//     entries, and then both decode the same message.
// A rejection must carry a documented error code, a message, and a
// position within the input.
// A violation prints what broke and aborts, which libFuzzer reports as a
// crash and saves as a reproducer.
//
// Run: .ci/fuzz (clang, libFuzzer + ASan + UBSan; it shares
// CAUSAL_FUZZ_SECONDS among its targets). The starting corpus in
// corpus/mpi_wire_decode/ is also replayed by replay_main.cpp as the unit
// test `fuzz_mpi_wire_replay`, under any compiler.
// See also: <causal/adapters/mpi/wire.hpp>, adapters/mpi/test/mpi_wire_test.cpp.

#include <causal/adapters/mpi/wire.hpp>
#include <causal/frontier.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>

namespace {

namespace mpi = causal::mpi;

[[noreturn]] void fail(const char* what, std::size_t capacity) {
  std::fprintf(stderr, "mpi_wire_decode_fuzz: %s (Capacity %zu)\n", what, capacity);
  std::abort();
}

bool documented_rejection(const causal::error& e) {
  switch (e.code()) {
    case causal::errc::truncated:
    case causal::errc::malformed:
    case causal::errc::capacity_exceeded:
    case causal::errc::unsupported_version:
      return !e.message().empty();
    default:
      return false;
  }
}

constexpr std::size_t max_list = 4096;

/// Encodes `m` again from its decoded fields into `out`.
template <class F>
causal::result<std::size_t> reencode(const mpi::message<F>& m, std::span<std::byte> out) {
  switch (m.kind) {
    case mpi::message_kind::hello: {
      static std::array<causal::frontier_entry, max_list> axes;
      static std::array<std::uint64_t, max_list> ids;
      std::size_t n_axes = 0;
      std::size_t n_ids = 0;
      for (const causal::frontier_entry e : m.hello.axes) {
        if (n_axes == max_list) return causal::error{causal::errc::capacity_exceeded, "fuzz: list too long"};
        if (n_axes > 0 && !(axes[n_axes - 1].axis < e.axis)) fail("HELLO axes not strictly increasing", F::capacity);
        axes[n_axes++] = e;
      }
      for (const std::uint64_t id : m.hello.exports) {
        if (n_ids == max_list) return causal::error{causal::errc::capacity_exceeded, "fuzz: list too long"};
        if (n_ids > 0 && ids[n_ids - 1] >= id) fail("HELLO export ids not strictly increasing", F::capacity);
        ids[n_ids++] = id;
      }
      if (n_axes != m.hello.axes.size() || n_ids != m.hello.exports.size()) fail("HELLO list sizes lie", F::capacity);
      if (m.hello.rank >= m.hello.size) fail("HELLO rank not below size", F::capacity);
      return mpi::encode_hello(out, m.hello, std::span<const causal::frontier_entry>(axes.data(), n_axes),
                               std::span<const std::uint64_t>(ids.data(), n_ids));
    }
    case mpi::message_kind::subscribe: return mpi::encode_subscribe(out, m.id);
    case mpi::message_kind::unsubscribe: return mpi::encode_unsubscribe(out, m.id);
    case mpi::message_kind::submitted: return mpi::encode_submitted(out, m.id, m.value, m.frontier, m.producer);
    case mpi::message_kind::reached:
      if (m.external) return mpi::encode_reached_external(out, m.id, m.value);
      return mpi::encode_reached(out, m.id, m.value, m.frontier, m.producer);
    case mpi::message_kind::failed: {
      if (m.failure.text.size() > mpi::max_failure_text) fail("FAILED text over max_failure_text", F::capacity);
      char text[mpi::max_failure_text + 1] = {};
      for (std::size_t i = 0; i < m.failure.text.size(); ++i) {
        const char c = m.failure.text[i];
        if (c < 0x20 || c > 0x7e) fail("FAILED text not printable", F::capacity);
        text[i] = c;
      }
      if (m.failure.code == causal::errc::ok) fail("FAILED with errc::ok", F::capacity);
      return mpi::encode_failed(out, m.id, causal::error{m.failure.code, text, m.failure.position});
    }
    case mpi::message_kind::bye: return mpi::encode_bye(out);
    case mpi::message_kind::heartbeat: return mpi::encode_heartbeat(out);
    case mpi::message_kind::axes: {
      static std::array<causal::frontier_entry, max_list> axes;
      std::size_t n_axes = 0;
      for (const causal::frontier_entry e : m.axes) {
        if (n_axes == max_list) return causal::error{causal::errc::capacity_exceeded, "fuzz: list too long"};
        if (n_axes > 0 && !(axes[n_axes - 1].axis < e.axis)) fail("AXES not strictly increasing", F::capacity);
        axes[n_axes++] = e;
      }
      if (n_axes != m.axes.size() || n_axes == 0) fail("AXES list size lies or is empty", F::capacity);
      return mpi::encode_axes(out, std::span<const causal::frontier_entry>(axes.data(), n_axes));
    }
  }
  fail("decoded an unknown kind", F::capacity);
}

template <class F>
causal::result<mpi::message<F>> decode_and_check(std::span<const std::byte> bytes) {
  causal::result<mpi::message<F>> decoded = mpi::decode<F>(bytes);
  if (!decoded) {
    if (!documented_rejection(decoded.error_value())) fail("undocumented error code", F::capacity);
    if (decoded.error_value().position() > bytes.size()) fail("error position beyond the input", F::capacity);
    return decoded;
  }
  const mpi::message<F>& m = *decoded;
  if (!m.frontier.invariants_hold()) fail("accepted frontier breaks the invariants", F::capacity);
  const bool update = m.kind == mpi::message_kind::submitted || (m.kind == mpi::message_kind::reached && !m.external);
  if (update) {
    if (m.value == 0) fail("accepted an update of value 0", F::capacity);
    if (m.producer.epoch == 0 && m.producer.axis.raw() != 0) fail("a producer with epoch 0 and an axis", F::capacity);
  }
  if (m.external && !m.frontier.tainted()) fail("an external value decoded untainted", F::capacity);
  static std::array<std::byte, 1 << 16> out;
  const causal::result<std::size_t> written = reencode(m, std::span<std::byte>(out));
  if (!written) {
    if (written.code() == causal::errc::capacity_exceeded &&
        (m.kind == mpi::message_kind::hello || m.kind == mpi::message_kind::axes)) {
      return decoded;
    }
    fail("re-encoding an accepted message failed", F::capacity);
  }
  if (*written != bytes.size() || (bytes.size() != 0 && std::memcmp(out.data(), bytes.data(), bytes.size()) != 0)) {
    fail("encode(decode(b)) != b: the accepted input is not canonical", F::capacity);
  }
  const auto named = mpi::peek_id(bytes);
  const bool has_id = m.kind != mpi::message_kind::hello && m.kind != mpi::message_kind::bye &&
                      m.kind != mpi::message_kind::heartbeat && m.kind != mpi::message_kind::axes;
  if (named.has_value() != has_id) fail("peek_id disagrees with decode about the id", F::capacity);
  if (named && (named->first != m.kind || named->second != m.id)) fail("peek_id names another kind or id", F::capacity);
  return decoded;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes = std::as_bytes(std::span<const std::uint8_t>(data, size));
  (void)mpi::peek_id(bytes);
  const auto big = decode_and_check<causal::frontier>(bytes);
  const auto small = decode_and_check<causal::basic_frontier<4>>(bytes);

  const bool small_should_accept = big && big->frontier.size() <= 4;
  if (small.ok() != small_should_accept) fail("Capacity 4 and Capacity 12 disagree beyond capacity", 4);
  if (small) {
    if (small->kind != big->kind || small->id != big->id || small->value != big->value ||
        small->producer != big->producer || small->external != big->external ||
        small->frontier.tainted() != big->frontier.tainted() || small->frontier.size() != big->frontier.size()) {
      fail("Capacity 4 and Capacity 12 decode different messages", 4);
    }
    for (std::size_t i = 0; i < small->frontier.size(); ++i) {
      if (small->frontier[i] != big->frontier[i]) fail("Capacity 4 and Capacity 12 decode different entries", 4);
    }
  } else if (big && small.code() != causal::errc::capacity_exceeded) {
    fail("Capacity 4 rejects a valid message for a reason other than capacity", 4);
  }
  return 0;
}
