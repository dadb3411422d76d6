// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Property test for <causal/check/checker.hpp>: on thousands of random
// streams (1..40 commands, one or two queues, barriers with and without
// BY_REGION, events (waits mostly valid: the checker refuses the others),
// render passes with subpass dependencies, semaphores, buffer and image
// barriers with layout transitions, stage masks whose logically earlier /
// later stages differ by pipeline, frees of resources that are then used
// again, host reads and writes, host waits, submits after them, barriers
// to HOST), every order verdict
// of the vector-clock checker, for both `<` and `<_region` and every pair of
// queryable points, equals the brute-force transitive closure of the
// explicit edges of Vulkan's dependency rules (<causal/check/reference.hpp>),
// and the hazard lists are equal. The random seed is fixed; a failure prints
// the stream.

#include <causal/check/checker.hpp>
#include <causal/check/reference.hpp>
#include <causal/check/stream_text.hpp>

#include "catch.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace causal::check;

struct generator {
  std::mt19937_64 rng;
  explicit generator(std::uint64_t seed) : rng(seed) {}

  std::uint32_t pick(std::uint32_t n) { return static_cast<std::uint32_t>(rng() % n); }
  bool coin(std::uint32_t percent) { return pick(100) < percent; }

  // DRAW_INDIRECT (in the graphics and the compute pipeline) and
  // EARLY_FRAGMENT_TESTS (before FRAGMENT_SHADER) exercise the logically
  // earlier / later stages of execution scopes.
  static constexpr stage interesting[] = {stage::top_of_pipe,          stage::draw_indirect,
                                          stage::vertex_shader,        stage::early_fragment_tests,
                                          stage::fragment_shader,      stage::color_attachment_output,
                                          stage::compute_shader,       stage::transfer,
                                          stage::bottom_of_pipe};
  static constexpr std::uint32_t interesting_count = 9;

  stage_mask stages() {
    stage_mask m = 0;
    const std::uint32_t n = 1 + pick(2);
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint32_t k = pick(interesting_count + 3);
      if (k < interesting_count) {
        m |= bit(interesting[k]);
      } else if (k == interesting_count + 2) {
        m |= host_stage_bit;  // a barrier to (or from) the host
      } else if (k == interesting_count) {
        m |= all_graphics_bit;
      } else {
        m |= all_commands_bit;
      }
    }
    return m;
  }

  stage access_stage() {
    static constexpr stage s[] = {stage::draw_indirect,  stage::vertex_shader,
                                  stage::fragment_shader, stage::color_attachment_output,
                                  stage::compute_shader, stage::transfer};
    return s[pick(6)];
  }

  access_type access_for(stage s, bool write) {
    switch (s) {
      case stage::transfer: return write ? access_type::transfer_write : access_type::transfer_read;
      case stage::color_attachment_output:
        return write ? access_type::color_attachment_write : access_type::color_attachment_read;
      case stage::draw_indirect: return access_type::indirect_command_read;  // only reads happen there
      default: return write ? access_type::shader_write : access_type::shader_read;
    }
  }

  memory_range range() {
    memory_range m;
    m.resource = pick(3);
    const std::uint64_t a = pick(4);
    m.x0 = a;
    m.x1 = a + 1 + pick(3);
    if (coin(30)) {
      m.x0 = 0;
      m.x1 = whole;
    }
    return m;
  }

  access_mask accesses() {
    if (coin(15)) return 0;
    if (coin(30)) return all_access;
    access_mask m = 0;
    const std::uint32_t n = 1 + pick(2);
    for (std::uint32_t i = 0; i < n; ++i) m |= bit(access_for(access_stage(), coin(50)));
    if (coin(20)) m |= coin(50) ? bit(access_type::host_read) : bit(access_type::host_write);
    return m;
  }

  memory_barrier mem_barrier(bool allow_transition) {
    memory_barrier b;
    b.src_access = accesses();
    b.dst_access = accesses();
    if (!coin(35)) b.mem = range();
    b.transition = allow_transition && !b.mem.is_global() && coin(25);
    return b;
  }

  command next(const std::vector<bool>& in_rp, std::uint32_t queues) {
    command c;
    c.queue = pick(queues);
    if (coin(4)) {  // a resource's life ends (a later use is a new life)
      c.kind = command_kind::free_resource;
      c.resource = pick(3);
      return c;
    }
    if (coin(7)) {  // the host reads or writes mapped memory
      c.kind = command_kind::host_access;
      for (std::uint32_t i = 1 + pick(2); i > 0; --i) {
        c.accesses.push_back({stage::host, coin(50) ? access_type::host_write : access_type::host_read, range()});
      }
      return c;
    }
    if (coin(4)) {  // the host waits for a semaphore value (filled by the caller)
      c.kind = command_kind::host_wait;
      c.semaphore = 0;
      return c;
    }
    const std::uint32_t k = pick(100);
    if (in_rp[c.queue]) {
      if (k < 55) {
        c.kind = command_kind::action;
      } else if (k < 75) {
        c.kind = command_kind::pipeline_barrier;
      } else if (k < 88) {
        c.kind = command_kind::next_subpass;
        return c;
      } else {
        c.kind = command_kind::end_render_pass;
        return c;
      }
    } else if (k < 45) {
      c.kind = command_kind::action;
    } else if (k < 65) {
      c.kind = command_kind::pipeline_barrier;
    } else if (k < 72) {
      c.kind = command_kind::set_event;
    } else if (k < 74) {
      c.kind = command_kind::reset_event;
    } else if (k < 80) {
      c.kind = command_kind::wait_events;
    } else if (k < 87) {
      c.kind = command_kind::begin_render_pass;
    } else if (k < 92) {
      c.kind = command_kind::signal_semaphore;
    } else if (k < 97) {
      c.kind = command_kind::wait_semaphore;
    } else {
      c.kind = command_kind::submit;
    }
    switch (c.kind) {
      case command_kind::action: {
        const std::uint32_t n = pick(3);
        for (std::uint32_t i = 0; i < n; ++i) {
          memory_access a;
          a.stage = access_stage();
          a.access = access_for(a.stage, coin(50));
          a.mem = range();
          c.accesses.push_back(a);
        }
        break;
      }
      case command_kind::pipeline_barrier:
        c.src_stages = stages();
        c.dst_stages = stages();
        c.by_region = coin(25);
        for (std::uint32_t i = pick(3); i > 0; --i) c.barriers.push_back(mem_barrier(!in_rp[c.queue]));
        break;
      case command_kind::set_event:
      case command_kind::reset_event:
        c.events.push_back(pick(2));
        c.src_stages = stages();
        break;
      case command_kind::wait_events:
        c.events.push_back(pick(2));
        if (coin(30)) c.events.push_back(1 - c.events[0]);
        c.src_stages = stages();
        c.dst_stages = stages();
        for (std::uint32_t i = pick(2); i > 0; --i) c.barriers.push_back(mem_barrier(true));
        break;
      case command_kind::begin_render_pass: {
        c.subpass_count = 1 + pick(3);
        const std::uint32_t n = pick(4);
        for (std::uint32_t i = 0; i < n; ++i) {
          subpass_dependency d;
          d.src = coin(30) ? subpass_external : pick(c.subpass_count);
          d.dst = coin(30) ? subpass_external : pick(c.subpass_count);
          if (d.src == subpass_external && d.dst == subpass_external) d.dst = 0;
          if (d.src != subpass_external && d.dst != subpass_external && d.src > d.dst) std::swap(d.src, d.dst);
          d.src_stages = stages();
          d.dst_stages = stages();
          d.src_access = accesses();
          d.dst_access = accesses();
          d.by_region = coin(30);
          c.dependencies.push_back(d);
        }
        break;
      }
      case command_kind::signal_semaphore:
        c.semaphore = 0;
        break;  // value filled by the caller
      case command_kind::wait_semaphore:
        c.semaphore = 0;
        c.dst_stages = stages();
        break;
      default: break;
    }
    return c;
  }
};

std::vector<point> points_of(const checker& ck) {
  std::vector<point> ps;
  for (std::uint32_t c = 0; c < ck.size(); ++c) {
    for (std::size_t s = 0; s < stage_count; ++s) {
      if (ck.valid(at(c, static_cast<stage>(s)))) ps.push_back(at(c, static_cast<stage>(s)));
    }
    if (ck.valid(src_of(c))) ps.push_back(src_of(c));
    if (ck.valid(dst_of(c))) ps.push_back(dst_of(c));
  }
  return ps;
}

std::string describe(point p) {
  switch (p.where) {
    case point::part::stage: return "(cmd " + std::to_string(p.command) + ", " + std::string(to_string(p.stage)) + ")";
    case point::part::src: return "(cmd " + std::to_string(p.command) + ", SRC)";
    case point::part::dst: return "(cmd " + std::to_string(p.command) + ", DST)";
  }
  return "?";
}

}  // namespace

TEST_CASE("check: vector-clock order equals the brute-force closure on random streams", "[check][property]") {
  generator g(0x5eed'c0de'2026'1123ULL);
  std::size_t compared = 0, positive = 0, hazards_seen = 0, warnings_seen = 0, waits_accepted = 0, forgotten_passes = 0, collapsed_entries = 0,
              frees_dropping = 0, host_hazards = 0, host_waits = 0;
  // Single-threaded: under ThreadSanitizer (several times slower, and with
  // nothing to find here) 300 cases keep the run well inside its limit.
#if defined(__SANITIZE_THREAD__)
  const int cases = 300;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
  const int cases = 300;
#else
  const int cases = 2500;
#endif
#else
  const int cases = 2500;
#endif
  for (int n = 0; n < cases; ++n) {
    const std::uint32_t queues = 1 + g.pick(2);
    const std::uint32_t length = 1 + g.pick(40);
    stream s;
    for (std::uint32_t q = 0; q < queues; ++q) s.queues.push_back("q" + std::to_string(q));
    s.resources = {"r0", "r1", "r2"};
    s.events = {"e0", "e1"};
    s.semaphores = {"s0"};
    checker_options options;
    options.warnings = true;  // the stricter rules' warnings are compared too
    checker ck(options);
    std::vector<bool> in_rp(queues, false);
    std::uint64_t sem_value = 0;
    // (queue, event) -> (set since its last reset, that set's stage mask)
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::pair<bool, stage_mask>> event_state;
    while (s.commands.size() < length) {
      command c = g.next(in_rp, queues);
      if (c.kind == command_kind::signal_semaphore) c.value = ++sem_value;
      if (c.kind == command_kind::wait_semaphore || c.kind == command_kind::host_wait) {
        c.value = sem_value == 0 ? 1 : 1 + g.pick(static_cast<std::uint32_t>(sem_value));
      }
      if (c.kind == command_kind::wait_events && g.coin(85)) {
        // Mostly a valid wait: src is the OR of its events' set masks (the
        // checker refuses a wait on an unset event or with other stages).
        // Events not set in this queue are dropped from the list.
        stage_mask src = 0;
        std::vector<std::uint32_t> set_events;
        for (std::uint32_t e : c.events) {
          if (auto it = event_state.find({c.queue, e}); it != event_state.end() && it->second.first) {
            src |= it->second.second;
            set_events.push_back(e);
          }
        }
        if (!set_events.empty()) {
          c.events = set_events;
          c.src_stages = src;
        }
      }
      const std::size_t live_before = ck.live_records();
      if (!ck.append(c).ok()) continue;
      if (c.kind == command_kind::free_resource && ck.live_records() < live_before) ++frees_dropping;
      if (c.kind == command_kind::set_event || c.kind == command_kind::reset_event) {
        event_state[{c.queue, c.events[0]}] = {c.kind == command_kind::set_event, c.src_stages};
      }
      if (c.kind == command_kind::wait_events) ++waits_accepted;
      if (c.kind == command_kind::begin_render_pass) in_rp[c.queue] = true;
      if (c.kind == command_kind::end_render_pass) in_rp[c.queue] = false;
      s.commands.push_back(c);
    }
    // close open render passes so the stream is complete
    for (std::uint32_t q = 0; q < queues; ++q) {
      while (in_rp[q]) {
        command c;
        c.queue = q;
        c.kind = command_kind::next_subpass;
        if (!ck.append(c).ok()) {
          c.kind = command_kind::end_render_pass;
          REQUIRE(ck.append(c).ok());
          in_rp[q] = false;
        }
        s.commands.push_back(c);
      }
    }
    REQUIRE(ck.finish().ok());
    const reference_graph ref(s);
    const std::vector<point> ps = points_of(ck);
    for (int r = 0; r < 2; ++r) {
      const auto rel = static_cast<relation>(r);
      for (const point& a : ps) {
        for (const point& b : ps) {
          const bool want = ref.happens_before(a, b, rel);
          const bool got = ck.happens_before(a, b, rel);
          ++compared;
          positive += want ? 1 : 0;
          if (want != got) {
            INFO("case " << n << ", relation " << (r == 0 ? "<" : "<_region") << ": " << describe(a) << " < "
                         << describe(b) << " is " << want << " in the closure\n"
                         << to_text(s));
            REQUIRE(want == got);
          }
        }
      }
    }
    std::vector<hazard> got = ck.hazards();
    std::sort(got.begin(), got.end());
    hazards_seen += got.size();
    for (const hazard& h : got) {
      if (s.commands[h.first].kind == command_kind::host_access || s.commands[h.second].kind == command_kind::host_access) {
        ++host_hazards;
      }
    }
    for (const command& c : s.commands) {
      if (c.kind == command_kind::host_wait) ++host_waits;
    }
    if (got != ref.hazards()) {
      std::string diff;
      for (const hazard& h : ref.hazards()) {
        if (std::find(got.begin(), got.end(), h) == got.end()) diff += "  missing: " + to_text(s, h) + "\n";
      }
      for (const hazard& h : got) {
        if (std::find(ref.hazards().begin(), ref.hazards().end(), h) == ref.hazards().end()) {
          diff += "  extra:   " + to_text(s, h) + "\n";
        }
      }
      INFO("case " << n << ": hazards differ\n" << diff << to_text(s));
      REQUIRE(got == ref.hazards());
    }
    std::vector<hazard> warned = ck.warnings();
    std::sort(warned.begin(), warned.end());
    warnings_seen += warned.size();
    INFO("case " << n << ": warnings differ\n" << to_text(s));
    REQUIRE(warned == ref.warnings());
    // The default checker skips the stricter rule's scans (no GLOBAL
    // invalidate is scanned at all): its hazards must be the same.
    checker plain;
    for (const command& c : s.commands) REQUIRE(plain.append(c).ok());
    std::vector<hazard> plain_got = plain.hazards();
    std::sort(plain_got.begin(), plain_got.end());
    INFO("case " << n << ": the default checker's hazards differ\n" << to_text(s));
    REQUIRE(plain_got == ref.hazards());
    CHECK(plain.warnings().empty());
    // Without history (no per-command clocks; closed render passes whose
    // records are retired are forgotten by later clocks) the hazards and
    // warnings are the same, and queries are refused.
    checker_options lean_options;
    lean_options.history = false;
    lean_options.warnings = true;
    checker lean(lean_options);
    for (const command& c : s.commands) REQUIRE(lean.append(c).ok());
    std::vector<hazard> lean_got = lean.hazards();
    std::sort(lean_got.begin(), lean_got.end());
    std::vector<hazard> lean_warned = lean.warnings();
    std::sort(lean_warned.begin(), lean_warned.end());
    INFO("case " << n << ": the checker without history differs\n" << to_text(s));
    REQUIRE(lean_got == ref.hazards());
    REQUIRE(lean_warned == ref.warnings());
    forgotten_passes += lean.forgotten_render_passes();
    collapsed_entries += lean.collapsed_clock_entries();
    if (!ps.empty()) CHECK_FALSE(lean.happens_before(ps.front(), ps.back()));
  }
  // Host commands took part: hazards with a host side, and host waits.
  INFO("hazards with a host access: " << host_hazards << ", host waits: " << host_waits);
  CHECK(host_hazards > static_cast<std::size_t>(cases) / 10);
  CHECK(host_waits > static_cast<std::size_t>(cases) / 10);
  // Frees dropped live records, so comparisons across a free were made.
  INFO("frees that dropped records: " << frees_dropping);
  CHECK(frees_dropping > static_cast<std::size_t>(cases) / 10);
  // Passes were forgotten, so the comparison above covered that path.
  CHECK(forgotten_passes > static_cast<std::size_t>(cases) / 20);
  // Entries of closed passes with live accesses were collapsed into their
  // queue's, so that path was compared too.
  INFO("collapsed clock entries: " << collapsed_entries);
  CHECK(collapsed_entries > static_cast<std::size_t>(cases) / 20);
  // The generator must exercise both verdicts and find hazards.
  CHECK(positive > compared / 20);
  CHECK(positive < compared - compared / 20);
  CHECK(hazards_seen > static_cast<std::size_t>(cases));
  CHECK(warnings_seen > 0);
  // ... and event waits (valid ones: the checker refuses the others).
  INFO("event waits accepted: " << waits_accepted);
  CHECK(waits_accepted > static_cast<std::size_t>(cases) / 8);
}
