// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// scenario_load_fuzz: libFuzzer target for the scenario loader
// (<causal/sim/json.hpp>, <causal/sim/scenario.hpp>), the simulator's one
// reader of files people write.
//
// Every input is parsed as a scenario. Rejection is fine; crashing, reading
// out of bounds (ASan) or undefined behaviour (UBSan) is not. A rejection
// must carry a message, and a JSON syntax error a line and a column inside
// the input. An accepted scenario must be well formed (every dependency
// and queue index in range, dependencies listed earlier, at most 16 per
// operation) and, when small, must run under all three models without a
// soundness violation (no operation before its dependencies, no buffer
// reused early). A violation prints what broke and aborts, which libFuzzer
// reports as a crash and saves as a reproducer.
//
// Run: build with clang and -Dfuzzing=enabled, then
//   ./scenario_load_fuzz test/fuzz/corpus/scenario_load -max_total_time=60
// The starting corpus (the shipped scenarios plus malformed variants) is also
// replayed by replay_main.cpp as the unit test `fuzz_scenario_replay`.
// See also: examples/scenarios/README.md.

#include <causal/sim/json.hpp>
#include <causal/sim/scenario.hpp>
#include <causal/sim/simulator.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail = {}) {
  std::fprintf(stderr, "scenario_load_fuzz: %s %s\n", what, detail.c_str());
  std::abort();
}

void check_scenario(const causal::sim::scenario& s) {
  if (s.ops.empty() || s.queues.empty()) fail("accepted a scenario without operations or queues");
  for (std::size_t i = 0; i < s.ops.size(); ++i) {
    const causal::sim::op_desc& op = s.ops[i];
    if (op.queues.empty()) fail("operation without a queue", op.name);
    if (op.after.size() > causal::sim::max_dependencies && op.part_after.empty()) {
      fail("operation with too many dependencies", op.name);
    }
    for (std::size_t q : op.queues) {
      if (q >= s.queues.size()) fail("queue index out of range", op.name);
    }
    for (std::size_t d : op.after) {
      if (d >= i) fail("dependency not listed earlier", op.name);
    }
    for (const auto* list : {&op.alloc, &op.use, &op.free}) {
      for (std::size_t b : *list) {
        if (b >= s.buffers.size()) fail("buffer index out of range", op.name);
      }
    }
    if (op.submit_after && *op.submit_after >= i) fail("submit_after not earlier", op.name);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto json = causal::sim::parse_json(text);
  if (!json) {
    const auto& d = json.error();
    if (d.message.empty()) fail("JSON rejection without a message");
    if (d.line == 0 || d.column == 0) fail("JSON rejection without a position");
  }
  const auto loaded = causal::sim::load_scenario(text);
  if (!loaded) {
    if (loaded.error().message.empty()) fail("scenario rejection without a message");
    return 0;
  }
  if (!json) fail("the loader accepted what the JSON reader rejected");
  check_scenario(*loaded);
  // Run small scenarios: every model must stay sound.
  if (loaded->ops.size() > 64 || loaded->queues.size() > 32) return 0;
  for (const causal::sim::model m : causal::sim::all_models) {
    const causal::sim::run_result r = causal::sim::run(*loaded, m);
    if (!r.violations.empty()) fail("unsound run:", r.violations.front());
  }
  return 0;
}
