// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// check_stream_text_fuzz: libFuzzer target for the hazard checker's text
// parser (<causal/check/stream_text.hpp>) and, behind it, the checker.
//
// Every input is parsed. Rejection is fine if it carries a documented code
// (malformed, capacity_exceeded), a message and, for malformed, a line
// number within the text. An accepted stream must then:
//   - be canonical after one round: to_text(parse(to_text(s))) == to_text(s);
//   - go through a checker command by command without crashing (a command
//     the checker rejects must carry a documented code and is dropped);
//   - give the same hazards through a checker without history
//     (checker_options::history, which retires records and forgets render
//     passes: what 06_hazard_check runs);
//   - when at most 48 commands were accepted, give exactly the hazards of
//     the brute-force model (<causal/check/reference.hpp>) of the accepted
//     commands, and render as DOT.
// A violation prints what broke and aborts.
//
// Run: build with clang and -Dfuzzing=enabled, then
//   ./check_stream_text_fuzz test/fuzz/corpus/check_stream_text
// The starting corpus is replayed by the unit test `check_fuzz_corpus_replay`.

#include <causal/check/checker.hpp>
#include <causal/check/dot.hpp>
#include <causal/check/reference.hpp>
#include <causal/check/stream_text.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "check_stream_text_fuzz: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace causal::check;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = parse_stream(text);
  if (!parsed) {
    const causal::error& e = parsed.error_value();
    if (e.code() != causal::errc::malformed && e.code() != causal::errc::capacity_exceeded) fail("undocumented error code");
    if (e.message().empty()) fail("error without a message");
    if (e.code() == causal::errc::malformed &&
        (e.position() == 0 || e.position() > static_cast<std::uint64_t>(std::count(text.begin(), text.end(), '\n')) + 1)) {
      fail("malformed input reported on a line that does not exist");
    }
    return 0;
  }
  const std::string once = to_text(*parsed);
  auto again = parse_stream(once);
  if (!again) fail("to_text wrote something parse_stream rejects");
  if (to_text(*again) != once) fail("to_text(parse(to_text(s))) != to_text(s)");

  checker ck;
  stream accepted = *parsed;
  accepted.commands.clear();
  for (const command& c : parsed->commands) {
    const causal::status st = ck.append(c);
    if (st) {
      accepted.commands.push_back(c);
      continue;
    }
    switch (st.code()) {
      case causal::errc::invalid_argument:
      case causal::errc::out_of_range:
      case causal::errc::failed_precondition:
      case causal::errc::not_increasing:
        break;
      default: fail("checker rejected a command with an undocumented code");
    }
  }
  if (!ck.finish()) return 0;  // an open render pass: the reference needs a complete stream
  // Without history (what 06_hazard_check runs) the hazards must not change.
  checker_options lean_options;
  lean_options.history = false;
  checker lean(lean_options);
  for (const command& c : accepted.commands) {
    if (!lean.append(c)) fail("the checker without history rejected a command the default one took");
  }
  {
    std::vector<hazard> a = ck.hazards(), b = lean.hazards();
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    if (a != b) fail("the checker without history found other hazards");
  }
  if (accepted.commands.size() <= 48) {
    std::vector<hazard> got = ck.hazards();
    std::sort(got.begin(), got.end());
    const reference_graph ref(accepted);
    if (got != ref.hazards()) fail("checker and brute-force model disagree on the hazards");
    if (to_dot(accepted, ck).empty()) fail("empty DOT");
  }
  return 0;
}
