// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// check_bench: throughput of the synchronization hazard checker
// (<causal/check/checker.hpp>, vector clocks) against the brute-force
// transitive closure of the explicit edges of Vulkan's dependency rules
// (<causal/check/reference.hpp>), on growing stream lengths.
//
// Why it matters. Vulkan's execution dependency rules, implemented
// literally, give O(n^2) edges; the checker promises near-linear cost so it
// can run over a whole frame's (or a whole capture's) command stream
// (docs/hazard_checker.md).
//
// What runs. A synthetic frame loop, 8 to 12 commands per frame on fresh
// (transient) resources each frame: a compute dispatch writes a buffer, a
// barrier (or a semaphore hand-over to a second queue) makes it visible to
// the vertex shader, a draw writes a color attachment (inside a render pass
// with EXTERNAL dependencies, in one variant), a barrier with a layout
// transition hands it to a copy, and an end-of-frame barrier makes the
// copies visible. Every 7th frame a second copy races the first (a planted
// write-after-write hazard), so the checker has something to report.
//   checker/barriers/<n>        one queue, pipeline barriers only
//   checker/render_passes/<n>   one render pass per frame
//   checker/semaphores/<n>      two queues, two semaphore hand-overs a frame
//   reference/<variant>/<n>     brute force: build every explicit edge,
//                               close the graph with bitsets, find hazards
// n is the requested length; streams hold whole frames (n rounded up).
// Counters: items_per_second = commands/s; hazards; max_clock (largest
// clock, in scope entries) for ours; edges for the reference. Before timing,
// main() checks that ours and the reference report the same, non-empty,
// hazards on each variant.
//
// What to look for: barriers: commands/s roughly flat in n (near-linear
// total; clocks stay at 2 entries). render_passes: clocks grow with the
// number of render passes whose framebuffer stages are reachable only
// through subpass dependencies, so the cost per command grows with n.
// semaphores: every semaphore wait is a GLOBAL invalidate, checked against
// every earlier write, so this variant is quadratic. reference: commands/s
// falls roughly as 1/n (quadratic edges and closure).
//
// Run: meson setup b --buildtype=release -Dbenchmarks=enabled &&
//      ninja -C b bench/check_bench && b/bench/check_bench
#include <causal/check/checker.hpp>
#include <causal/check/reference.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

using namespace causal::check;

// variant 0: one queue, no render pass; 1: one queue with a render pass per
// frame; 2: two queues handing over through semaphores (their GLOBAL
// flush/invalidate make every semaphore wait check every earlier write).
stream frame_loop(std::size_t n, int variant) {
  stream s;
  s.queues = {"gfx", "compute"};
  s.semaphores = {"handoff", "back"};
  const std::uint32_t cq = variant == 2 ? 1 : 0;
  std::uint64_t value = 0;
  for (std::size_t frame = 0; s.commands.size() < n; ++frame) {
    // fresh resources every frame (transient frame-graph resources)
    const auto base = static_cast<std::uint32_t>(4 * frame);
    const memory_range buf_m{base, 0, 4096, 0, whole};
    const memory_range att_m{base + 1, 0, 1, 0, 1};
    const memory_range dst_m{base + 2, 0, 1, 0, 1};
    const memory_range extra_m{base + 3, 0, 1, 0, 1};
    auto push = [&](command c) { s.commands.push_back(std::move(c)); };  // whole frames only
    command c;
    c.kind = command_kind::action;
    c.queue = cq;
    c.accesses = {{stage::compute_shader, access_type::shader_write, buf_m}};
    push(c);
    if (variant == 2) {
      c = command{};
      c.kind = command_kind::signal_semaphore;
      c.queue = 1;
      c.value = ++value;
      push(c);
      c = command{};
      c.kind = command_kind::wait_semaphore;
      c.value = value;
      c.dst_stages = bit(stage::vertex_shader);
      push(c);
    } else {
      c = command{};
      c.kind = command_kind::pipeline_barrier;
      c.src_stages = bit(stage::compute_shader);
      c.dst_stages = bit(stage::vertex_shader);
      c.barriers = {{bit(access_type::shader_write), bit(access_type::shader_read), buf_m, false}};
      push(c);
    }
    if (variant == 1) {
      c = command{};
      c.kind = command_kind::begin_render_pass;
      c.subpass_count = 1;
      c.dependencies = {{subpass_external, 0, bit(stage::transfer), bit(stage::color_attachment_output), 0, 0, false},
                        {0, subpass_external, bit(stage::color_attachment_output), bit(stage::transfer), 0, 0, false}};
      push(c);
    }
    c = command{};
    c.kind = command_kind::action;
    c.accesses = {{stage::vertex_shader, access_type::shader_read, buf_m},
                  {stage::color_attachment_output, access_type::color_attachment_write, att_m}};
    push(c);
    if (variant == 1) {
      c = command{};
      c.kind = command_kind::end_render_pass;
      push(c);
    }
    c = command{};
    c.kind = command_kind::pipeline_barrier;
    c.src_stages = bit(stage::color_attachment_output);
    c.dst_stages = bit(stage::transfer);
    c.barriers = {{bit(access_type::color_attachment_write), bit(access_type::transfer_read), att_m, true}};
    push(c);
    c = command{};
    c.kind = command_kind::action;
    c.accesses = {{stage::transfer, access_type::transfer_read, att_m},
                  {stage::transfer, access_type::transfer_write, dst_m}};
    push(c);
    c = command{};
    c.kind = command_kind::action;  // every 7th frame a planted race: a second copy into dst, no barrier
    c.accesses = {{stage::transfer, access_type::transfer_write, frame % 7 == 3 ? dst_m : extra_m}};
    push(c);
    c = command{};
    c.kind = command_kind::pipeline_barrier;  // end of frame: everything visible to the next frame's work
    c.src_stages = bit(stage::transfer);
    c.dst_stages = all_commands_bit;
    c.barriers = {{bit(access_type::transfer_write), all_access, dst_m, false},
                  {bit(access_type::transfer_write), all_access, extra_m, false}};
    push(c);
    if (variant == 2) {
      c = command{};
      c.kind = command_kind::signal_semaphore;
      c.semaphore = 1;
      c.value = frame + 1;
      push(c);
      c = command{};
      c.kind = command_kind::wait_semaphore;
      c.queue = 1;
      c.semaphore = 1;
      c.value = frame + 1;
      c.dst_stages = bit(stage::compute_shader);
      push(c);
    }
  }
  return s;
}

std::vector<hazard> run_checker(const stream& s) {
  checker ck;
  for (const command& c : s.commands) {
    if (!ck.append(c)) {
      std::fprintf(stderr, "check_bench: the generated stream is invalid\n");
      std::exit(1);
    }
  }
  std::vector<hazard> h = ck.hazards();
  std::sort(h.begin(), h.end());
  return h;
}

void verify(std::size_t n, int variant) {
  const stream s = frame_loop(n, variant);
  const reference_graph ref(s);
  if (run_checker(s) != ref.hazards() || ref.hazards().empty()) {
    std::fprintf(stderr, "check_bench: checker and reference disagree at n=%zu\n", n);
    std::exit(1);
  }
}

void bm_checker(benchmark::State& state, int variant) {
  const stream s = frame_loop(static_cast<std::size_t>(state.range(0)), variant);
  std::size_t hazards = 0;
  for (auto _ : state) {
    checker ck;
    for (const command& c : s.commands) {
      if (!ck.append(c)) state.SkipWithError("invalid stream");
    }
    hazards = ck.hazards().size();
    benchmark::DoNotOptimize(hazards);
    state.counters["max_clock"] = static_cast<double>(ck.max_clock_entries());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * s.commands.size()));
  state.counters["hazards"] = static_cast<double>(hazards);
}

void bm_reference(benchmark::State& state, int variant) {
  const stream s = frame_loop(static_cast<std::size_t>(state.range(0)), variant);
  std::size_t edges = 0;
  for (auto _ : state) {
    const reference_graph ref(s);
    edges = ref.edge_count();
    benchmark::DoNotOptimize(edges);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * s.commands.size()));
  state.counters["edges"] = static_cast<double>(edges);
}

}  // namespace

BENCHMARK_CAPTURE(bm_checker, barriers, 0)->RangeMultiplier(4)->Range(256, 65536)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_checker, render_passes, 1)->RangeMultiplier(4)->Range(256, 4096)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_checker, semaphores, 2)->RangeMultiplier(4)->Range(256, 4096)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_reference, barriers, 0)->RangeMultiplier(2)->Range(64, 512)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_reference, render_passes, 1)->RangeMultiplier(2)->Range(64, 512)->Unit(benchmark::kMillisecond);

int main(int argc, char** argv) {
  for (std::size_t n : {120u, 240u, 480u}) {
    for (int v = 0; v < 3; ++v) verify(n, v);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
