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

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include <unistd.h>

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail = {}) {
  std::fprintf(stderr, "scenario_load_fuzz: %s %s\n", what, detail.c_str());
  std::abort();
}

void check_scenario(const causal::sim::scenario& s) {
  if (s.ops.empty() || s.queues.empty()) fail("accepted a scenario without operations or queues");
  for (std::size_t i = 0; i < s.ops.size(); ++i) {
    const causal::sim::op_desc& op = s.ops[i];
    if (op.queues.empty() == op.lane_class.empty()) fail("operation without exactly one of a queue and a lane class", op.name);
    for (std::size_t q : op.lane_class) {
      if (q >= s.queues.size()) fail("lane class index out of range", op.name);
    }
    for (const auto& sv : op.signals) {
      if (sv.semaphore >= s.semaphores.size() || sv.value == 0) fail("bad semaphore signal", op.name);
    }
    for (const auto& w : op.waits) {
      if (w.semaphore >= s.semaphores.size() || w.producer >= i) fail("bad semaphore wait", op.name);
      if (std::find(op.after.begin(), op.after.end(), w.producer) == op.after.end()) {
        fail("a semaphore wait's producer is not a dependency", op.name);
      }
    }
    for (std::size_t d : op.after_previous) {
      if (d >= s.ops.size()) fail("after_previous index out of range", op.name);
    }
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

/// This process's scratch file for the file-reading path.
const std::filesystem::path& scratch_file() {
  // Removed again when the process ends normally.
  struct scratch {
    std::filesystem::path path = std::filesystem::temp_directory_path() /
                                 ("causal_scenario_fuzz_" + std::to_string(::getpid()) + ".json");
    ~scratch() {
      std::error_code ec;
      std::filesystem::remove(path, ec);
    }
  };
  static const scratch file;
  return file.path;
}

/// The paths a reader of untrusted paths meets besides a good file.
void check_odd_paths_once() {
  static bool done = false;
  if (done) return;
  done = true;
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  for (const std::filesystem::path& p : {dir, dir / "causal_scenario_fuzz_no_such_file.json"}) {
    const auto r = causal::sim::load_scenario_file(p.string());
    if (r || r.error().message.empty()) fail("an odd path was not refused with a message:", p.string());
  }
  std::ofstream(scratch_file(), std::ios::binary | std::ios::trunc).close();
  const auto empty = causal::sim::load_scenario_file(scratch_file().string());
  if (empty || empty.error().message.empty()) fail("an empty file was not refused with a message");
}

/// load_scenario_file on the same bytes must agree with load_scenario.
void check_file_path(std::string_view text, const causal::sim::parsed<causal::sim::scenario>& from_text) {
  {
    std::ofstream out(scratch_file(), std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!out) return;  // no room for the scratch file: nothing to compare
  }
  const auto from_file = causal::sim::load_scenario_file(scratch_file().string());
  if (static_cast<bool>(from_file) != static_cast<bool>(from_text)) fail("the file path and the text path disagree");
  if (!from_file) {
    if (from_file.error().message != from_text.error().message) {
      fail("the file path gave another message:", from_file.error().message);
    }
    if (from_file.error().source != scratch_file().string()) fail("the file path's error does not name the file");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  check_odd_paths_once();
  const auto json = causal::sim::parse_json(text);
  if (!json) {
    const auto& d = json.error();
    if (d.message.empty()) fail("JSON rejection without a message");
    if (d.line == 0 || d.column == 0) fail("JSON rejection without a position");
  }
  const auto loaded = causal::sim::load_scenario(text);
  check_file_path(text, loaded);
  if (!loaded) {
    if (loaded.error().message.empty()) fail("scenario rejection without a message");
    return 0;
  }
  if (!json) fail("the loader accepted what the JSON reader rejected");
  check_scenario(*loaded);
  // Run small scenarios: every model must stay sound.
  if (loaded->ops.size() > 64 || loaded->queues.size() > 32) return 0;
  for (const causal::sim::scheduling how : {causal::sim::scheduling::in_order, causal::sim::scheduling::ready_first}) {
    causal::sim::run_options options;
    options.how = how;
    for (const causal::sim::model m : causal::sim::all_models) {
      const causal::sim::run_result r = causal::sim::run(*loaded, m, options);
      if (!r.violations.empty()) fail("unsound run:", r.violations.front());
    }
  }
  // Scaled with the cross-iteration edges and shared lanes: still sound.
  causal::sim::scale_options shared;
  shared.share_lanes = true;
  const auto scaled = causal::sim::scale(*loaded, 2, 2, shared);
  if (scaled) {
    for (const causal::sim::model m : causal::sim::all_models) {
      const causal::sim::run_result r = causal::sim::run(*scaled, m);
      if (!r.violations.empty()) fail("unsound scaled run:", r.violations.front());
    }
  }
  return 0;
}
