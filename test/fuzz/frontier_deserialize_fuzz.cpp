// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// frontier_deserialize_fuzz: libFuzzer target for the frontier wire parser,
// the one place where causal reads bytes it did not write.
//
// Every input is parsed as a `causal::frontier` (Capacity 12) and as a
// `causal::basic_frontier<4>`. Rejection is fine; crashing, reading out of
// bounds (ASan) or undefined behaviour (UBSan) is not. An accepted input
// must then satisfy, for each type:
//   - invariants_hold(): sorted unique axes, no zero epoch, size <= Capacity;
//   - canonical form: serialize(result) reproduces the input bytes exactly,
//     and serialized_size(result) is the input size;
//   - capacity is the only difference between the two types: the small one
//     accepts exactly when the big one does with at most 4 entries, and
//     then both hold the same entries and taint.
// A rejection must carry a documented error code and a message.
// A violation prints what broke and aborts, which libFuzzer reports as a
// crash and saves as a reproducer.
//
// Run: .ci/fuzz (clang, libFuzzer + ASan + UBSan, CAUSAL_FUZZ_SECONDS=60).
// The starting corpus in corpus/frontier_deserialize/ is also replayed by
// replay_main.cpp as the unit test `fuzz_corpus_replay`, under any compiler.
// See also: <causal/frontier_wire.hpp>, docs/frontiers.md "Wire format".

#include <causal/frontier.hpp>
#include <causal/frontier_wire.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>

namespace {

[[noreturn]] void fail(const char* what, std::size_t capacity) {
  std::fprintf(stderr, "frontier_deserialize_fuzz: %s (Capacity %zu)\n", what, capacity);
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

/// Parses `bytes` as an `F` and checks what an accepted result promises.
template <class F>
causal::result<F> parse_and_check(std::span<const std::uint8_t> bytes) {
  causal::result<F> parsed = causal::deserialize<F>(bytes);
  if (!parsed) {
    if (!documented_rejection(parsed.error_value())) fail("undocumented error code", F::capacity);
    return parsed;
  }
  const F& f = *parsed;
  if (!f.invariants_hold()) fail("accepted frontier breaks the invariants", F::capacity);
  if (causal::serialized_size(f) != bytes.size()) {
    fail("serialized_size differs from the accepted input's size", F::capacity);
  }
  std::byte out[causal::max_serialized_size<F>];
  const causal::result<std::size_t> written = causal::serialize(f, std::span<std::byte>(out));
  if (!written) fail("serialize failed on an accepted frontier", F::capacity);
  if (*written != bytes.size() ||
      (bytes.size() != 0 && std::memcmp(out, bytes.data(), bytes.size()) != 0)) {
    fail("serialize(deserialize(b)) != b: the accepted input is not canonical", F::capacity);
  }
  return parsed;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  const causal::result<causal::frontier> big = parse_and_check<causal::frontier>(bytes);
  const causal::result<causal::basic_frontier<4>> small =
      parse_and_check<causal::basic_frontier<4>>(bytes);

  const bool small_should_accept = big && big->size() <= 4;
  if (small.ok() != small_should_accept) {
    fail("Capacity 4 and Capacity 12 disagree beyond capacity", 4);
  }
  if (small) {
    if (small->tainted() != big->tainted() || small->size() != big->size()) {
      fail("Capacity 4 and Capacity 12 parse different frontiers", 4);
    }
    for (std::size_t i = 0; i < small->size(); ++i) {
      if ((*small)[i] != (*big)[i]) fail("Capacity 4 and Capacity 12 parse different entries", 4);
    }
  } else if (big && small.code() != causal::errc::capacity_exceeded) {
    fail("Capacity 4 rejects a valid frontier for a reason other than capacity", 4);
  }
  return 0;
}
