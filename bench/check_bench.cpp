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
// What to look for: barriers and semaphores: commands/s roughly flat in n
// (linear total; clocks stay at 2 and 4 entries). render_passes: these
// passes each keep a live read of a buffer nothing touches again, so their
// scopes stay in every later clock and the cost per command grows with n.
// reference: commands/s falls roughly as 1/n (quadratic edges and closure).
//
// `check_bench --shapes [budget seconds]` instead times the stream shapes
// of bench/RESULTS.md (the variants above plus a global barrier every 10
// commands over 4 000 buffers, 18 buffers reused every frame, and a render
// pass per frame on reused attachments, and the fresh-resource shapes with
// each frame's resources freed two frames later) at 10k, 100k and 1M commands, with
// and without checker_options::history, and prints a Markdown table.
//
// Run: meson setup b --buildtype=release -Dbenchmarks=enabled &&
//      ninja -C b bench/check_bench && b/bench/check_bench
#include <causal/check/checker.hpp>
#include <causal/check/reference.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

using namespace causal::check;

// variant 0: one queue, no render pass; 1: one queue with a render pass per
// frame; 2: two queues handing over through semaphores (their GLOBAL
// flush/invalidate make every semaphore wait check every earlier write).
// With `free_lagged` each frame's four resources are freed two frames
// later (when a frame-in-flight fence would have retired them).
stream frame_loop(std::size_t n, int variant, bool free_lagged = false) {
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
    if (free_lagged && frame >= 2) {
      for (std::uint32_t k = 0; k < 4; ++k) {
        c = command{};
        c.kind = command_kind::free_resource;
        c.resource = base - 8 + k;
        push(c);
      }
      c = command{};
    }
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

//===-- the issue's stream shapes, for `check_bench --shapes` --===//

// A deterministic generator (no <random> distribution: the same streams
// on every standard library).
struct lcg {
  std::uint64_t s;
  std::uint32_t next(std::uint32_t bound) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::uint32_t>((s >> 33) % bound);
  }
};
memory_range buffer(std::uint32_t r) { return memory_range{r, 0, 4096, 0, whole}; }
// 4000 buffers; compute dispatches each read one buffer and write another
// at random; a global memory barrier every 10 commands.
stream global_every_10(std::size_t n) {
  stream s;
  s.queues = {"q"};
  lcg g{12345};
  while (s.commands.size() < n) {
    command c;
    if (s.commands.size() % 10 == 9) {
      c.kind = command_kind::pipeline_barrier;
      c.src_stages = bit(stage::compute_shader);
      c.dst_stages = bit(stage::compute_shader);
      c.barriers = {{bit(access_type::shader_write), bit(access_type::shader_read) | bit(access_type::shader_write), global_memory, false}};
    } else {
      c.kind = command_kind::action;
      const std::uint32_t a = g.next(4000), b = g.next(4000);
      c.accesses = {{stage::compute_shader, access_type::shader_read, buffer(a)}};
      if (b != a) c.accesses.push_back({stage::compute_shader, access_type::shader_write, buffer(b)});
    }
    s.commands.push_back(std::move(c));
  }
  return s;
}
// 18 buffers reused every frame: a dispatch writes each, one barrier hands
// all 18 to a draw that reads them, a barrier orders the reads before the
// next frame's writes.
stream reused_18(std::size_t n) {
  stream s;
  s.queues = {"q"};
  while (s.commands.size() < n) {
    for (std::uint32_t i = 0; i < 18; ++i) {
      command c;
      c.kind = command_kind::action;
      c.accesses = {{stage::compute_shader, access_type::shader_write, buffer(i)}};
      s.commands.push_back(std::move(c));
    }
    command b;
    b.kind = command_kind::pipeline_barrier;
    b.src_stages = bit(stage::compute_shader);
    b.dst_stages = bit(stage::vertex_shader);
    for (std::uint32_t i = 0; i < 18; ++i) b.barriers.push_back({bit(access_type::shader_write), bit(access_type::shader_read), buffer(i), false});
    s.commands.push_back(b);
    for (std::uint32_t i = 0; i < 18; i += 3) {
      command d;
      d.kind = command_kind::action;
      for (std::uint32_t j = i; j < i + 3; ++j) d.accesses.push_back({stage::vertex_shader, access_type::shader_read, buffer(j)});
      s.commands.push_back(std::move(d));
    }
    command w;
    w.kind = command_kind::pipeline_barrier;
    w.src_stages = bit(stage::vertex_shader);
    w.dst_stages = bit(stage::compute_shader);
    w.barriers = {{0, bit(access_type::shader_write), global_memory, false}};
    s.commands.push_back(w);
  }
  return s;
}
// A render pass per frame on one reused color attachment and depth buffer,
// with a uniform buffer rewritten by a copy each frame.
stream render_pass_per_frame(std::size_t n) {
  stream s;
  s.queues = {"q"};
  const memory_range color{1, 0, 1, 0, 1}, depth{2, 0, 1, 0, 1}, ubo{3, 0, 256, 0, whole};
  while (s.commands.size() < n) {
    command w;
    w.kind = command_kind::pipeline_barrier;  // last frame's uniform reads before this copy
    w.src_stages = bit(stage::vertex_shader);
    w.dst_stages = bit(stage::transfer);
    w.barriers = {{0, bit(access_type::transfer_write), ubo, false}};
    s.commands.push_back(w);
    command copy;
    copy.kind = command_kind::action;
    copy.accesses = {{stage::transfer, access_type::transfer_write, ubo}};
    s.commands.push_back(copy);
    command u;
    u.kind = command_kind::pipeline_barrier;
    u.src_stages = bit(stage::transfer);
    u.dst_stages = bit(stage::vertex_shader);
    u.barriers = {{bit(access_type::transfer_write), bit(access_type::uniform_read), ubo, false}};
    s.commands.push_back(u);
    command b;
    b.kind = command_kind::begin_render_pass;
    b.subpass_count = 1;
    b.dependencies = {{subpass_external, 0, bit(stage::color_attachment_output) | bit(stage::early_fragment_tests),
                       bit(stage::color_attachment_output) | bit(stage::early_fragment_tests),
                       bit(access_type::color_attachment_write) | bit(access_type::depth_stencil_attachment_write),
                       bit(access_type::color_attachment_write) | bit(access_type::depth_stencil_attachment_write) |
                           bit(access_type::depth_stencil_attachment_read), false}};
    s.commands.push_back(b);
    command c;
    c.kind = command_kind::action;
    c.accesses = {{stage::vertex_shader, access_type::uniform_read, ubo},
                  {stage::early_fragment_tests, access_type::depth_stencil_attachment_read, depth},
                  {stage::early_fragment_tests, access_type::depth_stencil_attachment_write, depth},
                  {stage::color_attachment_output, access_type::color_attachment_write, color}};
    s.commands.push_back(std::move(c));
    command e;
    e.kind = command_kind::end_render_pass;
    s.commands.push_back(e);
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

// --shapes: each shape at 10k, 100k and 1M commands through the library
// API, without history (the long-stream setting) and with it (not at 1M,
// nor where the next length would run past the budget), against the
// brute-force reference at the largest length it finishes (1 000
// commands), one run each; prints a Markdown table for bench/RESULTS.md.
struct shape {
  const char* name;
  stream (*make)(std::size_t);
};

stream fresh_per_frame(std::size_t n) { return frame_loop(n, 0); }
stream semaphores_per_frame(std::size_t n) { return frame_loop(n, 2); }
stream render_pass_fresh(std::size_t n) { return frame_loop(n, 1); }
stream fresh_freed(std::size_t n) { return frame_loop(n, 0, true); }
stream render_pass_fresh_freed(std::size_t n) { return frame_loop(n, 1, true); }

struct timed {
  double seconds = 0;
  std::size_t hazards = 0, clock = 0, live = 0, commands = 0;
};

timed time_checker(const stream& s, bool history) {
  checker_options o;
  o.history = history;
  const auto t0 = std::chrono::steady_clock::now();
  checker ck(o);
  for (const command& c : s.commands) {
    if (!ck.append(c)) {
      std::fprintf(stderr, "check_bench: the generated stream is invalid\n");
      std::exit(1);
    }
  }
  timed t;
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  t.hazards = ck.hazards_found();
  t.clock = ck.max_clock_entries();
  t.live = ck.live_records();
  t.commands = s.commands.size();
  return t;
}

std::string rate(const timed& t) {
  char buf[64];
  const double r = static_cast<double>(t.commands) / t.seconds;
  if (r >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.2f M/s", r / 1e6);
  } else if (r >= 1e4) {
    std::snprintf(buf, sizeof buf, "%.0f k/s", r / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f k/s", r / 1e3);
  }
  return buf;
}

int run_shapes(double budget_seconds) {
  const shape shapes[] = {{"fresh buffers per frame, per-buffer barriers", fresh_per_frame},
                          {"global barrier every 10 commands, 4 000 buffers", global_every_10},
                          {"18 buffers reused every frame", reused_18},
                          {"two queues, semaphore hand-overs", semaphores_per_frame},
                          {"render pass per frame, reused attachments", render_pass_per_frame},
                          {"render pass per frame, fresh resources", render_pass_fresh},
                          {"fresh buffers per frame, each freed two frames later", fresh_freed},
                          {"render pass per frame, fresh resources freed two frames later",
                           render_pass_fresh_freed}};
  std::printf("| shape | commands | no history | with history | hazards found | max clock (no history / with) | live records |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|\n");
  for (const shape& sh : shapes) {
    {
      // The baseline where it finishes: the brute-force closure.
      const stream s = sh.make(1000);
      const auto t0 = std::chrono::steady_clock::now();
      const reference_graph ref(s);
      const double ref_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const timed ours = time_checker(s, false);
      checker ck;
      for (const command& c : s.commands) (void)ck.append(c);
      std::vector<hazard> h = ck.hazards();
      std::sort(h.begin(), h.end());
      std::printf("| %s | %zu (reference: %.0f k/s, %.0fx slower; same hazards: %s) | %s | | %zu | %zu | %zu |\n",
                  sh.name, s.commands.size(), static_cast<double>(s.commands.size()) / ref_s / 1e3,
                  ref_s / ours.seconds, h == ref.hazards() ? "yes" : "NO", rate(ours).c_str(), ours.hazards,
                  ours.clock, ours.live);
    }
    bool with_history = true, without = true;
    for (std::size_t n : {10000u, 100000u, 1000000u}) {
      const stream s = sh.make(n);
      timed lean, full;
      if (!without && !with_history) {
        std::printf("| | %zu | (not run) | (not run) | | | |\n", s.commands.size());
        continue;
      }
      if (without) lean = time_checker(s, false);
      if (with_history) full = time_checker(s, true);
      const timed& any = without ? lean : full;
      auto clock_of = [](bool ran, const timed& t) { return ran ? std::to_string(t.clock) : std::string("-"); };
      std::printf("| | %zu | %s | %s | %zu | %s / %s | %zu |\n", s.commands.size(),
                  without ? rate(lean).c_str() : "(not run)", with_history ? rate(full).c_str() : "(not run)",
                  any.hazards, clock_of(without, lean).c_str(), clock_of(with_history, full).c_str(), any.live);
      std::fflush(stdout);
      // The next length is 10x: skip a setting that would take too long.
      if (lean.seconds * 12 > budget_seconds) without = false;
      // With history every command keeps its clocks (kilobytes each):
      // not run at 1M commands.
      if (full.seconds * 12 > budget_seconds || n >= 100000) with_history = false;
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  for (std::size_t n : {120u, 240u, 480u}) {
    for (int v = 0; v < 3; ++v) verify(n, v);
  }
  if (argc > 1 && std::string(argv[1]) == "--shapes") {
    return run_shapes(argc > 2 ? std::stod(argv[2]) : 60.0);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
