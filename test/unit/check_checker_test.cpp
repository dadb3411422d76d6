// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Tests for <causal/check/checker.hpp> and <causal/check/dot.hpp>: the
// textbook examples (the draw -> barrier(VERTEX|TRANSFER -> TOP) -> draw
// graph, and the memory-barrier example with and without its flush and its
// invalidate), then one hand-built stream per rule: each hazard kind,
// events, render passes and subpass dependencies (EXTERNAL and BY_REGION),
// by-region barriers, semaphores across queues, layout transitions,
// extract_stages and the logically earlier / later stages of execution
// scopes, self-coherence inside one command, bad input, and DOT.
// Streams are written in the text format of <causal/check/stream_text.hpp>.

#include <causal/check/checker.hpp>
#include <causal/check/dot.hpp>
#include <causal/check/reference.hpp>
#include <causal/check/stream_text.hpp>

#include "catch.hpp"

#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

namespace {

using namespace causal::check;

/// Stricter rules on: their warnings are compared with the reference too.
checker_options with_warnings() {
  checker_options o;
  o.warnings = true;
  return o;
}

struct checked {
  stream s;
  checker ck{with_warnings()};
  std::vector<hazard> hazards;
  std::vector<hazard> warnings;

  explicit checked(const std::string& text) {
    auto parsed = parse_stream(text);
    INFO(std::string(parsed ? "" : parsed.error_value().message()) << " at line "
                                                                     << (parsed ? 0 : parsed.error_value().position()));
    REQUIRE(parsed.ok());
    s = *parsed;
    for (const command& c : s.commands) {
      const causal::status st = ck.append(c);
      INFO(std::string(st ? "" : st.error_value().message()));
      REQUIRE(st.ok());
    }
    REQUIRE(ck.finish().ok());
    hazards = ck.hazards();
    std::sort(hazards.begin(), hazards.end());
    warnings = ck.warnings();
    std::sort(warnings.begin(), warnings.end());
    // Every stream here is also checked against the brute-force model.
    const reference_graph ref(s);
    REQUIRE(hazards == ref.hazards());
    REQUIRE(warnings == ref.warnings());
  }

  std::uint32_t id(const std::string& label) const {
    for (std::uint32_t i = 0; i < s.commands.size(); ++i) {
      if (s.commands[i].label == label) return i;
    }
    FAIL("no command " << label);
    return 0;
  }
  bool before(const std::string& a, stage x, const std::string& b, stage y, relation r = relation::strict) const {
    return ck.happens_before(at(id(a), x), at(id(b), y), r);
  }
  std::vector<hazard_kind> kinds() const {
    std::vector<hazard_kind> k;
    for (const hazard& h : hazards) k.push_back(h.kind);
    return k;
  }
  std::string report() const {
    std::string out;
    for (const hazard& h : hazards) out += to_text(s, h) + "\n";
    return out;
  }
};

const char* memory_barrier_example = R"(
queue gfx
draw gfx name=draw1 write=VERTEX_SHADER:SHADER_WRITE:img_1[0:1,0:1]
barrier gfx name=b src=VERTEX_SHADER|TRANSFER dst=FRAGMENT_SHADER|TOP global=0:SHADER_READ image=SHADER_WRITE:0:img_1[0:1,0:1]
draw gfx name=draw2 read=FRAGMENT_SHADER:SHADER_READ:img_1[0:1,0:1]
)";

constexpr stage all_stage_list[] = {
    stage::top_of_pipe, stage::draw_indirect, stage::vertex_input, stage::vertex_shader,
    stage::tessellation_control_shader, stage::tessellation_evaluation_shader, stage::geometry_shader,
    stage::fragment_shader, stage::early_fragment_tests, stage::late_fragment_tests,
    stage::color_attachment_output, stage::compute_shader, stage::transfer, stage::bottom_of_pipe};

}  // namespace

TEST_CASE("check: extract_stages expands ALL_GRAPHICS and ALL_COMMANDS without TOP and BOTTOM", "[check][stages]") {
  STATIC_REQUIRE(extract_stages(bit(stage::vertex_shader)) == (1u << 3));
  const stage_set g = extract_stages(all_graphics_bit);
  CHECK(contains(g, stage::draw_indirect));
  CHECK(contains(g, stage::color_attachment_output));
  CHECK_FALSE(contains(g, stage::compute_shader));
  CHECK_FALSE(contains(g, stage::top_of_pipe));
  CHECK_FALSE(contains(g, stage::bottom_of_pipe));
  const stage_set a = extract_stages(all_commands_bit);
  CHECK(contains(a, stage::compute_shader));
  CHECK(contains(a, stage::transfer));
  CHECK_FALSE(contains(a, stage::top_of_pipe));
  CHECK_FALSE(contains(a, stage::bottom_of_pipe));
}

TEST_CASE("check: execution scopes add logically earlier (source) and later (destination) stages",
          "[check][stages]") {
  constexpr auto set_of = [](std::initializer_list<stage> stages) {
    stage_set out = 0;
    for (stage s : stages) out = static_cast<stage_set>(out | (1u << static_cast<unsigned>(s)));
    return out;
  };
  // compute: TOP < DRAW_INDIRECT < COMPUTE_SHADER
  CHECK(source_scope_stages(bit(stage::compute_shader)) ==
        set_of({stage::top_of_pipe, stage::draw_indirect, stage::compute_shader}));
  // graphics: ... GEOMETRY < EARLY_FRAGMENT_TESTS < FRAGMENT_SHADER < LATE_FRAGMENT_TESTS ...
  CHECK(source_scope_stages(bit(stage::fragment_shader)) ==
        set_of({stage::top_of_pipe, stage::draw_indirect, stage::vertex_input, stage::vertex_shader,
                stage::tessellation_control_shader, stage::tessellation_evaluation_shader, stage::geometry_shader,
                stage::early_fragment_tests, stage::fragment_shader}));
  CHECK(destination_scope_stages(bit(stage::vertex_shader)) ==
        set_of({stage::vertex_shader, stage::tessellation_control_shader, stage::tessellation_evaluation_shader,
                stage::geometry_shader, stage::early_fragment_tests, stage::fragment_shader,
                stage::late_fragment_tests, stage::color_attachment_output, stage::bottom_of_pipe}));
  // DRAW_INDIRECT is in both the graphics and the compute pipeline.
  const stage_set after_indirect = destination_scope_stages(bit(stage::draw_indirect));
  CHECK(contains(after_indirect, stage::compute_shader));
  CHECK(contains(after_indirect, stage::color_attachment_output));
  CHECK_FALSE(contains(after_indirect, stage::transfer));
  CHECK_FALSE(contains(after_indirect, stage::top_of_pipe));
  // transfer: TRANSFER alone between TOP and BOTTOM.
  CHECK(source_scope_stages(bit(stage::transfer)) == set_of({stage::top_of_pipe, stage::transfer}));
  CHECK(destination_scope_stages(bit(stage::transfer)) == set_of({stage::transfer, stage::bottom_of_pipe}));
  // BOTTOM as a source and TOP as a destination cover every stage; TOP as a
  // source and BOTTOM as a destination only themselves.
  CHECK(source_scope_stages(bit(stage::bottom_of_pipe)) == all_stages_set);
  CHECK(destination_scope_stages(bit(stage::top_of_pipe)) == all_stages_set);
  CHECK(source_scope_stages(bit(stage::top_of_pipe)) == set_of({stage::top_of_pipe}));
  CHECK(destination_scope_stages(bit(stage::bottom_of_pipe)) == set_of({stage::bottom_of_pipe}));
  CHECK(source_scope_stages(0) == 0);
  CHECK(destination_scope_stages(0) == 0);
}

TEST_CASE("check: a source stage covers logically earlier stages (an indirect read before COMPUTE_SHADER)",
          "[check][stages]") {
  // Once a write-after-read race: the barrier names only COMPUTE_SHADER,
  // but DRAW_INDIRECT is logically earlier in the compute pipeline.
  checked t(R"(
queue q
dispatch q name=ind read=DRAW_INDIRECT:INDIRECT_COMMAND_READ:args[0:12] read=COMPUTE_SHADER:SHADER_READ:in write=COMPUTE_SHADER:SHADER_WRITE:out
barrier q name=b src=COMPUTE_SHADER dst=TRANSFER
copy q name=w read=TRANSFER:TRANSFER_READ:in write=TRANSFER:TRANSFER_WRITE:args[0:12]
)");
  INFO(t.report());
  CHECK(t.hazards.empty());
  CHECK(t.before("ind", stage::draw_indirect, "w", stage::transfer));
  // TRANSFER is in no pipeline with DRAW_INDIRECT: a TRANSFER source stays a race.
  checked race(R"(
queue q
dispatch q name=ind read=DRAW_INDIRECT:INDIRECT_COMMAND_READ:args[0:12]
barrier q src=TRANSFER dst=COMPUTE_SHADER|TRANSFER
dispatch q name=w write=COMPUTE_SHADER:SHADER_WRITE:args[0:12]
)");
  CHECK(race.kinds() == std::vector<hazard_kind>{hazard_kind::write_after_read_race});
  // A graphics source: FRAGMENT_SHADER covers the vertex shader's read.
  checked graphics(R"(
queue q
draw q name=r read=VERTEX_SHADER:SHADER_READ:buf
barrier q src=FRAGMENT_SHADER dst=TRANSFER
copy q name=w write=TRANSFER:TRANSFER_WRITE:buf
)");
  CHECK(graphics.hazards.empty());
  // ... but not COLOR_ATTACHMENT_OUTPUT, which is logically later.
  checked later(R"(
queue q
draw q name=r read=COLOR_ATTACHMENT_OUTPUT:COLOR_ATTACHMENT_READ:img
barrier q src=FRAGMENT_SHADER dst=TRANSFER
copy q name=w write=TRANSFER:TRANSFER_WRITE:img
)");
  CHECK(later.kinds() == std::vector<hazard_kind>{hazard_kind::write_after_read_race});
}

TEST_CASE("check: a destination stage covers logically later stages (indirect reads ordered by DRAW_INDIRECT)",
          "[check][stages]") {
  // Once a write-after-read race: the barrier's destination names only
  // DRAW_INDIRECT, but COMPUTE_SHADER is logically later.
  checked t(R"(
queue q
dispatch q name=ind read=DRAW_INDIRECT:INDIRECT_COMMAND_READ:args[0:12]
barrier q name=b src=DRAW_INDIRECT dst=DRAW_INDIRECT
dispatch q name=w write=COMPUTE_SHADER:SHADER_WRITE:args[0:12]
)");
  INFO(t.report());
  CHECK(t.hazards.empty());
  CHECK(t.before("ind", stage::draw_indirect, "w", stage::compute_shader));
  // dst VERTEX_SHADER covers the fragment shader ...
  checked fragment(R"(
queue q
draw q name=ind read=DRAW_INDIRECT:INDIRECT_COMMAND_READ:args[0:12]
barrier q src=DRAW_INDIRECT dst=VERTEX_SHADER
draw q name=w write=FRAGMENT_SHADER:SHADER_WRITE:args[0:12]
)");
  CHECK(fragment.hazards.empty());
  // ... but dst FRAGMENT_SHADER does not cover the earlier vertex shader,
  // and dst DRAW_INDIRECT does not cover TRANSFER: both stay races.
  checked earlier(R"(
queue q
draw q name=ind read=DRAW_INDIRECT:INDIRECT_COMMAND_READ:args[0:12]
barrier q src=DRAW_INDIRECT dst=FRAGMENT_SHADER
draw q name=w write=VERTEX_SHADER:SHADER_WRITE:args[0:12]
)");
  CHECK(earlier.kinds() == std::vector<hazard_kind>{hazard_kind::write_after_read_race});
  checked other_pipeline(R"(
queue q
dispatch q name=ind read=DRAW_INDIRECT:INDIRECT_COMMAND_READ:args[0:12]
barrier q src=DRAW_INDIRECT dst=DRAW_INDIRECT
copy q name=w write=TRANSFER:TRANSFER_WRITE:args[0:12]
)");
  CHECK(other_pipeline.kinds() == std::vector<hazard_kind>{hazard_kind::write_after_read_race});
}

TEST_CASE("check: logically ordered stages chain barriers; access scopes stay the named stages", "[check][stages]") {
  // dst VERTEX_SHADER and src FRAGMENT_SHADER intersect (FRAGMENT_SHADER is
  // later than VERTEX_SHADER): the two barriers chain, so the write is
  // flushed, ordered and made visible to the copy.
  checked chained(R"(
queue q
draw q name=w write=VERTEX_SHADER:SHADER_WRITE:buf
barrier q src=VERTEX_SHADER dst=VERTEX_SHADER global=SHADER_WRITE:0
barrier q src=FRAGMENT_SHADER dst=TRANSFER global=0:TRANSFER_READ
copy q name=r read=TRANSFER:TRANSFER_READ:buf
)");
  INFO(chained.report());
  CHECK(chained.hazards.empty());
  // dst VERTEX_SHADER orders a fragment-shader read, but its invalidate
  // covers only VERTEX_SHADER: ordered, not visible.
  checked invisible(R"(
queue q
dispatch q name=w write=COMPUTE_SHADER:SHADER_WRITE:buf
barrier q src=COMPUTE_SHADER dst=VERTEX_SHADER global=SHADER_WRITE:SHADER_READ
draw q name=r read=FRAGMENT_SHADER:SHADER_READ:buf
)");
  CHECK(invisible.before("w", stage::compute_shader, "r", stage::fragment_shader));
  CHECK(invisible.kinds() == std::vector<hazard_kind>{hazard_kind::read_without_visibility});
}

TEST_CASE("check: the textbook draw -> barrier(VERTEX|TRANSFER -> TOP) -> draw graph", "[check][example]") {
  checked t(R"(
queue gfx
draw gfx name=draw1
barrier gfx name=b src=VERTEX_SHADER|TRANSFER dst=TOP_OF_PIPE
draw gfx name=draw2
)");
  // draw 1's VERTEX_SHADER must complete before draw 2's TRANSFER starts.
  CHECK(t.before("draw1", stage::vertex_shader, "draw2", stage::transfer));
  // TOP in dst reaches every stage of draw 2.
  for (stage y : all_stage_list) CHECK(t.before("draw1", stage::transfer, "draw2", y));
  // FRAGMENT_SHADER of draw 1 is unordered with every stage of draw 2.
  for (stage y : all_stage_list) {
    CHECK_FALSE(t.before("draw1", stage::fragment_shader, "draw2", y));
    CHECK_FALSE(t.before("draw2", y, "draw1", stage::fragment_shader));
  }
  // and so is BOTTOM (after FRAGMENT), but TOP of draw 1 is before draw 2.
  CHECK_FALSE(t.before("draw1", stage::bottom_of_pipe, "draw2", stage::top_of_pipe));
  CHECK(t.before("draw1", stage::top_of_pipe, "draw2", stage::top_of_pipe));
  // internal edges: TOP < stage < BOTTOM
  CHECK(t.before("draw1", stage::top_of_pipe, "draw1", stage::fragment_shader));
  CHECK(t.before("draw1", stage::fragment_shader, "draw1", stage::bottom_of_pipe));
  CHECK_FALSE(t.before("draw1", stage::vertex_shader, "draw1", stage::fragment_shader));
  // the barrier's own nodes
  CHECK(t.ck.happens_before(at(t.id("draw1"), stage::vertex_shader), src_of(t.id("b"))));
  CHECK_FALSE(t.ck.happens_before(at(t.id("draw1"), stage::fragment_shader), src_of(t.id("b"))));
  CHECK(t.ck.happens_before(src_of(t.id("b")), dst_of(t.id("b"))));
  CHECK(t.ck.happens_before(dst_of(t.id("b")), at(t.id("draw2"), stage::top_of_pipe)));
  CHECK(t.hazards.empty());
}

TEST_CASE("check: the memory-barrier example is clean; without flush or invalidate it is not",
          "[check][example][memory]") {
  checked clean(memory_barrier_example);
  INFO(clean.report());
  CHECK(clean.hazards.empty());

  std::string no_flush = memory_barrier_example;
  no_flush.replace(no_flush.find("image=SHADER_WRITE:0"), 20, "image=0:0");
  checked a(no_flush);
  REQUIRE(a.kinds() == std::vector<hazard_kind>{hazard_kind::read_without_visibility});
  CHECK(a.hazards[0].first == a.id("draw1"));
  CHECK(a.hazards[0].second == a.id("draw2"));
  // The stricter rule's warning: the GLOBAL invalidate meets the unflushed
  // write (Vulkan allows that; the read's hazard is what matters).
  REQUIRE(a.warnings.size() == 1);
  CHECK(a.warnings[0].kind == hazard_kind::dirty_invalidate);
  CHECK(a.warnings[0].second == a.id("b"));
  CHECK(a.hazards[0].first_stages == (1u << 3));
  CHECK(a.hazards[0].second_access == bit(access_type::shader_read));
  CHECK(to_text(a.s, a.hazards[0]) ==
        "read without flush+invalidate: draw1 (gfx) VERTEX_SHADER SHADER_WRITE -> draw2 (gfx) FRAGMENT_SHADER "
        "SHADER_READ on img_1[0:1,0:1]");

  std::string no_invalidate = memory_barrier_example;
  no_invalidate.replace(no_invalidate.find("global=0:SHADER_READ"), 20, "global=0:UNIFORM_READ");
  checked b(no_invalidate);
  CHECK(b.kinds() == std::vector<hazard_kind>{hazard_kind::read_without_visibility});

  // a flush that covers only part of the read range is not enough
  std::string partial = memory_barrier_example;
  partial.replace(partial.find("read=FRAGMENT_SHADER:SHADER_READ:img_1[0:1,0:1]"), 47,
                  "read=FRAGMENT_SHADER:SHADER_READ:img_1");
  checked c(partial);
  CHECK(c.hazards.empty());  // the overlap is only what draw1 wrote
}

TEST_CASE("check: races with no execution dependency", "[check][race]") {
  checked raw(R"(
queue q
dispatch q name=w write=COMPUTE_SHADER:SHADER_WRITE:buf[0:64]
dispatch q name=r read=COMPUTE_SHADER:SHADER_READ:buf[32:128]
)");
  REQUIRE(raw.hazards.size() == 1);
  CHECK(raw.hazards[0].kind == hazard_kind::read_after_write_race);
  CHECK(raw.hazards[0].range.x0 == 32);
  CHECK(raw.hazards[0].range.x1 == 64);

  checked waw(R"(
queue q
copy q name=a write=TRANSFER:TRANSFER_WRITE:buf
copy q name=b write=TRANSFER:TRANSFER_WRITE:buf[8:16]
)");
  CHECK(waw.kinds() == std::vector<hazard_kind>{hazard_kind::write_after_write_race});

  checked war(R"(
queue q
draw q name=r read=FRAGMENT_SHADER:SHADER_READ:tex
barrier q src=VERTEX_SHADER dst=TRANSFER
copy q name=w write=TRANSFER:TRANSFER_WRITE:tex
)");
  CHECK(war.kinds() == std::vector<hazard_kind>{hazard_kind::write_after_read_race});

  checked disjoint(R"(
queue q
dispatch q write=COMPUTE_SHADER:SHADER_WRITE:buf[0:64]
dispatch q read=COMPUTE_SHADER:SHADER_READ:buf[64:128] read=COMPUTE_SHADER:SHADER_READ:other
)");
  CHECK(disjoint.hazards.empty());
}

TEST_CASE("check: write-after-read needs only an execution dependency", "[check][memory]") {
  checked t(R"(
queue q
draw q name=r read=FRAGMENT_SHADER:SHADER_READ:tex
barrier q src=FRAGMENT_SHADER dst=TRANSFER
copy q name=w write=TRANSFER:TRANSFER_WRITE:tex
)");
  CHECK(t.hazards.empty());
}

TEST_CASE("check: write-after-write needs a flush and an invalidate", "[check][memory]") {
  checked bare(R"(
queue q
copy q name=a write=TRANSFER:TRANSFER_WRITE:buf
barrier q src=TRANSFER dst=TRANSFER
copy q name=b write=TRANSFER:TRANSFER_WRITE:buf
)");
  CHECK(bare.kinds() == std::vector<hazard_kind>{hazard_kind::write_without_visibility});
  checked ok(R"(
queue q
copy q name=a write=TRANSFER:TRANSFER_WRITE:buf
barrier q src=TRANSFER dst=TRANSFER buffer=TRANSFER_WRITE:TRANSFER_WRITE:buf
copy q name=b write=TRANSFER:TRANSFER_WRITE:buf
)");
  CHECK(ok.hazards.empty());
}

TEST_CASE("check: flush and invalidate may come from different barriers of one chain", "[check][memory]") {
  checked t(R"(
queue q
dispatch q name=w write=COMPUTE_SHADER:SHADER_WRITE:buf
barrier q name=f src=COMPUTE_SHADER dst=TRANSFER global=SHADER_WRITE:0
barrier q name=i src=TRANSFER dst=VERTEX_SHADER global=0:SHADER_READ
draw q name=r read=VERTEX_SHADER:SHADER_READ:buf
)");
  CHECK(t.hazards.empty());
  CHECK(t.before("w", stage::compute_shader, "r", stage::vertex_shader));
  // break the chain: the second barrier does not wait for TRANSFER
  checked broken(R"(
queue q
dispatch q name=w write=COMPUTE_SHADER:SHADER_WRITE:buf
barrier q name=f src=COMPUTE_SHADER dst=TRANSFER global=SHADER_WRITE:0
barrier q name=i src=FRAGMENT_SHADER dst=VERTEX_SHADER global=0:SHADER_READ
draw q name=r read=VERTEX_SHADER:SHADER_READ:buf
)");
  CHECK_FALSE(broken.before("w", stage::compute_shader, "r", stage::vertex_shader));
  CHECK(broken.kinds() == std::vector<hazard_kind>{hazard_kind::read_after_write_race});
}

TEST_CASE("check: invalidating dirty memory and racing an invalidate", "[check][memory]") {
  checked dirty(R"(
queue q
dispatch q name=w write=COMPUTE_SHADER:SHADER_WRITE:buf
barrier q name=b src=COMPUTE_SHADER dst=COMPUTE_SHADER global=0:SHADER_READ
)");
  CHECK(dirty.hazards.empty());  // no read follows: nothing wrong by Vulkan's rules
  REQUIRE(dirty.warnings.size() == 1);
  CHECK(dirty.warnings[0].kind == hazard_kind::dirty_invalidate);
  CHECK(dirty.warnings[0].second == dirty.id("b"));

  checked race(R"(
queue q
dispatch q name=w write=COMPUTE_SHADER:SHADER_WRITE:buf
barrier q name=b src=TRANSFER dst=COMPUTE_SHADER buffer=0:SHADER_READ:buf
)");
  CHECK(race.kinds() == std::vector<hazard_kind>{hazard_kind::write_invalidate_race});

  checked later(R"(
queue q
barrier q name=b src=TRANSFER dst=COMPUTE_SHADER buffer=0:SHADER_READ:buf
dispatch q name=w write=VERTEX_SHADER:SHADER_WRITE:buf
)");
  CHECK(later.kinds() == std::vector<hazard_kind>{hazard_kind::write_invalidate_race});
}

TEST_CASE("check: accesses of one command are coherent at one stage, unordered across stages", "[check][memory]") {
  checked same(R"(
queue q
dispatch q read=COMPUTE_SHADER:SHADER_READ:buf write=COMPUTE_SHADER:SHADER_WRITE:buf
)");
  CHECK(same.hazards.empty());
  checked cross(R"(
queue q
draw q read=VERTEX_SHADER:SHADER_READ:buf write=FRAGMENT_SHADER:SHADER_WRITE:buf
)");
  CHECK(cross.kinds() == std::vector<hazard_kind>{hazard_kind::read_after_write_race});
}

TEST_CASE("check: events order a split barrier, and racing event commands are reported", "[check][event]") {
  checked ok(R"(
queue q
dispatch q name=w write=COMPUTE_SHADER:SHADER_WRITE:buf
set_event q name=set event=e stages=COMPUTE_SHADER
draw q name=other
wait_events q name=wait events=e src=COMPUTE_SHADER dst=VERTEX_SHADER buffer=SHADER_WRITE:SHADER_READ:buf
draw q name=r read=VERTEX_SHADER:SHADER_READ:buf
reset_event q name=reset event=e stages=BOTTOM
set_event q name=set2 event=e stages=COMPUTE_SHADER
)");
  INFO(ok.report());
  CHECK(ok.hazards.empty());
  CHECK(ok.before("w", stage::compute_shader, "r", stage::vertex_shader));
  CHECK_FALSE(ok.before("other", stage::vertex_shader, "r", stage::vertex_shader));
  CHECK(ok.ck.happens_before(src_of(ok.id("set")), src_of(ok.id("wait"))));
  CHECK(ok.ck.happens_before(src_of(ok.id("wait")), src_of(ok.id("reset"))));

  // set on two queues: nothing orders them
  checked cross(R"(
queue a
queue b
set_event a event=e stages=TRANSFER
set_event b event=e stages=TRANSFER
)");
  CHECK(cross.kinds() == std::vector<hazard_kind>{hazard_kind::event_race});

  // a wait followed by a reset whose first scope misses the wait's stages
  checked wr(R"(
queue q
set_event q event=e stages=TRANSFER
wait_events q name=wait events=e src=TRANSFER dst=VERTEX_SHADER
reset_event q name=reset event=e stages=TRANSFER
)");
  CHECK(wr.kinds() == std::vector<hazard_kind>{hazard_kind::event_race});
}

namespace {

// Appends the commands of `text` and returns the status of the last one
// (every earlier one must be accepted); the checker keeps what it accepted.
causal::status append_all(checker& ck, const std::string& text) {
  auto parsed = parse_stream(text);
  REQUIRE(parsed.ok());
  const std::vector<command>& cs = parsed->commands;
  REQUIRE(!cs.empty());
  for (std::size_t i = 0; i + 1 < cs.size(); ++i) REQUIRE(ck.append(cs[i]).ok());
  return ck.append(cs.back());
}

}  // namespace

TEST_CASE("check: wait_events on an event that is not set, or with other src stages, is a validation error",
          "[check][event][errors]") {
  // Never set: Vulkan would wait forever. Refused, nothing recorded.
  checker never;
  const causal::status unset = append_all(never, R"(
queue q
dispatch q
wait_events q events=e src=COMPUTE_SHADER dst=TRANSFER
)");
  CHECK(unset.code() == causal::errc::failed_precondition);
  CHECK(std::string(unset.error_value().message()).find("no earlier set_event") != std::string::npos);
  CHECK(never.size() == 1);
  CHECK(never.hazards().empty());

  // Reset since the last set: the same.
  checker reset;
  CHECK(append_all(reset, R"(
queue q
set_event q event=e stages=TRANSFER
reset_event q event=e stages=TRANSFER
wait_events q events=e src=TRANSFER dst=TRANSFER
)")
            .code() == causal::errc::failed_precondition);
  CHECK(reset.size() == 2);

  // Set on another queue: events do not synchronise queues.
  checker other_queue;
  CHECK(append_all(other_queue, R"(
queue a
queue b
set_event a event=e stages=TRANSFER
wait_events b events=e src=TRANSFER dst=TRANSFER
)")
            .code() == causal::errc::failed_precondition);

  // src must be the OR of the set_events' stage masks: more, fewer or
  // other stages are refused (VUID-vkCmdWaitEvents-srcStageMask-01158) ...
  for (const char* src : {"TRANSFER", "COMPUTE_SHADER", "TRANSFER|COMPUTE_SHADER|VERTEX_SHADER", "ALL_COMMANDS"}) {
    checker ck;
    const causal::status st = append_all(ck, std::string(R"(
queue q
set_event q event=e1 stages=TRANSFER
set_event q event=e2 stages=COMPUTE_SHADER
wait_events q events=e1,e2 dst=TRANSFER src=)") + src + "\n");
    INFO(src);
    CHECK(st.code() == causal::errc::invalid_argument);
    CHECK(std::string(st.error_value().message()).find("src stages differ") != std::string::npos);
    CHECK(ck.size() == 2);
  }
  // ... the OR itself is accepted, and a later set counts with its own mask.
  checked both(R"(
queue q
set_event q event=e1 stages=TRANSFER
set_event q event=e2 stages=COMPUTE_SHADER
wait_events q events=e1,e2 src=TRANSFER|COMPUTE_SHADER dst=TRANSFER
reset_event q event=e1 stages=TRANSFER
set_event q event=e1 stages=FRAGMENT_SHADER
wait_events q events=e1 src=FRAGMENT_SHADER dst=TRANSFER
)");
  CHECK(both.hazards.empty());
}

TEST_CASE("check: subpass dependencies order subpasses; EXTERNAL reaches outside", "[check][renderpass]") {
  const char* text = R"(
queue g
copy g name=upload write=TRANSFER:TRANSFER_WRITE:tex
begin_render_pass g subpasses=2 dep=EXTERNAL:0:TRANSFER:FRAGMENT_SHADER:TRANSFER_WRITE:SHADER_READ dep=0:1:COLOR_ATTACHMENT_OUTPUT:FRAGMENT_SHADER:COLOR_ATTACHMENT_WRITE:INPUT_ATTACHMENT_READ dep=1:EXTERNAL:FRAGMENT_SHADER:TRANSFER:0:0
draw g name=d0 read=FRAGMENT_SHADER:SHADER_READ:tex write=COLOR_ATTACHMENT_OUTPUT:COLOR_ATTACHMENT_WRITE:att
next_subpass g
draw g name=d1 read=FRAGMENT_SHADER:INPUT_ATTACHMENT_READ:att
end_render_pass g
copy g name=after write=TRANSFER:TRANSFER_WRITE:other
)";
  checked t(text);
  INFO(t.report());
  CHECK(t.hazards.empty());
  CHECK(t.before("upload", stage::transfer, "d0", stage::fragment_shader));
  CHECK(t.before("d0", stage::color_attachment_output, "d1", stage::fragment_shader));
  CHECK_FALSE(t.before("d0", stage::color_attachment_output, "d1", stage::vertex_shader));
  CHECK(t.before("d1", stage::fragment_shader, "after", stage::transfer));
  // d0 -> dep 0:1 -> d1's FRAGMENT -> dep 1:EXTERNAL -> after
  CHECK(t.before("d0", stage::color_attachment_output, "after", stage::transfer));
  // VERTEX_SHADER is logically earlier than dep 0:1's COLOR_ATTACHMENT_OUTPUT;
  // COMPUTE_SHADER is in no graphics pipeline.
  CHECK(t.before("d0", stage::vertex_shader, "after", stage::transfer));
  CHECK_FALSE(t.before("d0", stage::compute_shader, "after", stage::transfer));

  // without the 0 -> 1 dependency the attachment read races the write
  std::string no_dep = text;
  const std::size_t at0 = no_dep.find(" dep=0:1");
  no_dep.erase(at0, no_dep.find(" dep=1:EXTERNAL") - at0);
  checked broken(no_dep);
  CHECK(broken.kinds() == std::vector<hazard_kind>{hazard_kind::read_after_write_race});
}

TEST_CASE("check: a barrier inside a subpass orders only that subpass", "[check][renderpass]") {
  checked t(R"(
queue g
draw g name=before
begin_render_pass g subpasses=1
draw g name=in
barrier g src=ALL_GRAPHICS dst=ALL_GRAPHICS
draw g name=in2
end_render_pass g
draw g name=after
)");
  CHECK(t.before("in", stage::fragment_shader, "in2", stage::vertex_shader));
  CHECK_FALSE(t.before("before", stage::fragment_shader, "in2", stage::vertex_shader));
  CHECK_FALSE(t.before("in", stage::fragment_shader, "after", stage::vertex_shader));
}

TEST_CASE("check: BY_REGION orders only in <_region; framebuffer-local pairs use it", "[check][region]") {
  checked t(R"(
queue g
begin_render_pass g subpasses=1 dep=0:0:COLOR_ATTACHMENT_OUTPUT:FRAGMENT_SHADER:0:0:by_region
draw g name=w write=COLOR_ATTACHMENT_OUTPUT:COLOR_ATTACHMENT_WRITE:att
barrier g src=COLOR_ATTACHMENT_OUTPUT dst=FRAGMENT_SHADER by_region global=COLOR_ATTACHMENT_WRITE:INPUT_ATTACHMENT_READ
draw g name=r read=FRAGMENT_SHADER:INPUT_ATTACHMENT_READ:att
end_render_pass g
)");
  INFO(t.report());
  CHECK_FALSE(t.before("w", stage::color_attachment_output, "r", stage::fragment_shader, relation::strict));
  CHECK(t.before("w", stage::color_attachment_output, "r", stage::fragment_shader, relation::by_region));
  CHECK(t.hazards.empty());

  // the same by-region barrier does not help a non-framebuffer stage
  checked v(R"(
queue g
begin_render_pass g subpasses=1
draw g name=w write=COLOR_ATTACHMENT_OUTPUT:COLOR_ATTACHMENT_WRITE:att
barrier g src=COLOR_ATTACHMENT_OUTPUT dst=VERTEX_SHADER by_region global=COLOR_ATTACHMENT_WRITE:SHADER_READ
draw g name=r read=VERTEX_SHADER:SHADER_READ:att
end_render_pass g
)");
  CHECK(v.kinds() == std::vector<hazard_kind>{hazard_kind::read_after_write_race});

  // A fragment shader's storage-buffer write is not framebuffer-local:
  // another fragment (region) may read it, so the by-region barrier does
  // not order the later read.
  checked storage(R"(
queue g
begin_render_pass g subpasses=1 dep=0:0:FRAGMENT_SHADER:FRAGMENT_SHADER:0:0:by_region
draw g name=w write=FRAGMENT_SHADER:SHADER_WRITE:ssbo[0:64]
barrier g src=FRAGMENT_SHADER dst=FRAGMENT_SHADER by_region buffer=SHADER_WRITE:SHADER_READ:ssbo[0:64]
draw g name=r read=FRAGMENT_SHADER:SHADER_READ:ssbo[0:64]
end_render_pass g
)");
  INFO(storage.report());
  CHECK(storage.kinds() ==
        std::vector<hazard_kind>{hazard_kind::write_invalidate_race, hazard_kind::read_after_write_race});
  // Without BY_REGION the same barrier orders it.
  checked whole(R"(
queue g
begin_render_pass g subpasses=1 dep=0:0:FRAGMENT_SHADER:FRAGMENT_SHADER:0:0
draw g name=w write=FRAGMENT_SHADER:SHADER_WRITE:ssbo[0:64]
barrier g src=FRAGMENT_SHADER dst=FRAGMENT_SHADER buffer=SHADER_WRITE:SHADER_READ:ssbo[0:64]
draw g name=r read=FRAGMENT_SHADER:SHADER_READ:ssbo[0:64]
end_render_pass g
)");
  CHECK(whole.hazards.empty());
}

TEST_CASE("check: semaphores order queues and carry memory", "[check][semaphore]") {
  checked t(R"(
queue compute
queue gfx
dispatch compute name=w write=COMPUTE_SHADER:SHADER_WRITE:buf
signal compute semaphore=s value=1
wait gfx semaphore=s value=1 stages=FRAGMENT_SHADER
draw gfx name=r read=VERTEX_SHADER:SHADER_READ:buf read=FRAGMENT_SHADER:SHADER_READ:buf
)");
  INFO(t.report());
  CHECK(t.before("w", stage::compute_shader, "r", stage::fragment_shader));
  // the wait blocks FRAGMENT_SHADER and later stages: VERTEX_SHADER of r may run early
  CHECK_FALSE(t.before("w", stage::compute_shader, "r", stage::vertex_shader));
  REQUIRE(t.hazards.size() == 1);
  CHECK(t.hazards[0].kind == hazard_kind::read_after_write_race);
  CHECK(t.hazards[0].second_stages == (1u << 3));

  // A wait at VERTEX_SHADER also blocks the logically later FRAGMENT_SHADER,
  // but its invalidate covers only the stage it names.
  checked vertex(R"(
queue compute
queue gfx
dispatch compute name=w write=COMPUTE_SHADER:SHADER_WRITE:buf
signal compute semaphore=s value=1
wait gfx semaphore=s value=1 stages=VERTEX_SHADER
draw gfx name=r read=VERTEX_SHADER:SHADER_READ:buf read=FRAGMENT_SHADER:SHADER_READ:buf
)");
  CHECK(vertex.before("w", stage::compute_shader, "r", stage::fragment_shader));
  REQUIRE(vertex.hazards.size() == 1);
  CHECK(vertex.hazards[0].kind == hazard_kind::read_without_visibility);
  CHECK(vertex.hazards[0].second_stages == (1u << 7));

  checked none(R"(
queue compute
queue gfx
dispatch compute name=w write=COMPUTE_SHADER:SHADER_WRITE:buf
draw gfx name=r read=VERTEX_SHADER:SHADER_READ:buf
)");
  CHECK(none.kinds() == std::vector<hazard_kind>{hazard_kind::read_after_write_race});
}

TEST_CASE("check: layout transitions write the image between flush and invalidate", "[check][transition]") {
  checked ok(R"(
queue g
draw g name=w write=COLOR_ATTACHMENT_OUTPUT:COLOR_ATTACHMENT_WRITE:img[0:1,0:1]
barrier g name=t src=COLOR_ATTACHMENT_OUTPUT dst=FRAGMENT_SHADER transition=COLOR_ATTACHMENT_WRITE:SHADER_READ:img[0:1,0:1]
draw g name=r read=FRAGMENT_SHADER:SHADER_READ:img[0:1,0:1]
)");
  INFO(ok.report());
  CHECK(ok.hazards.empty());
  checked no_flush(R"(
queue g
draw g name=w write=COLOR_ATTACHMENT_OUTPUT:COLOR_ATTACHMENT_WRITE:img[0:1,0:1]
barrier g name=t src=COLOR_ATTACHMENT_OUTPUT dst=FRAGMENT_SHADER transition=0:SHADER_READ:img[0:1,0:1]
draw g name=r read=FRAGMENT_SHADER:SHADER_READ:img[0:1,0:1]
)");
  CHECK(no_flush.kinds() == std::vector<hazard_kind>{hazard_kind::write_without_visibility,
                                                    hazard_kind::read_without_visibility});
  REQUIRE(no_flush.warnings.size() == 1);
  CHECK(no_flush.warnings[0].kind == hazard_kind::dirty_invalidate);
  checked no_inv(R"(
queue g
barrier g name=t src=TOP dst=FRAGMENT_SHADER transition=0:0:img[0:1,0:1]
draw g name=r read=FRAGMENT_SHADER:SHADER_READ:img[0:1,0:1]
)");
  CHECK(no_inv.kinds() == std::vector<hazard_kind>{hazard_kind::read_without_visibility});
}

TEST_CASE("check: bad command sequences are rejected with a clear error and change nothing", "[check][errors]") {
  checker ck;
  command c;
  c.kind = command_kind::next_subpass;
  CHECK(ck.append(c).code() == causal::errc::failed_precondition);
  c.kind = command_kind::pipeline_barrier;
  CHECK(ck.append(c).code() == causal::errc::invalid_argument);  // empty masks
  c.src_stages = 1u << 20;
  c.dst_stages = 1;
  CHECK(ck.append(c).code() == causal::errc::invalid_argument);  // unknown bit
  c = command{};
  c.kind = command_kind::wait_semaphore;
  c.dst_stages = 1;
  c.value = 1;
  CHECK(ck.append(c).code() == causal::errc::failed_precondition);  // no signal yet
  c = command{};
  c.kind = command_kind::action;
  c.accesses.push_back({stage::top_of_pipe, access_type::shader_read, memory_range{0, 0, 1, 0, 1}});
  CHECK(ck.append(c).code() == causal::errc::invalid_argument);
  c.accesses[0].stage = stage::vertex_shader;
  c.accesses[0].mem = global_memory;
  CHECK(ck.append(c).code() == causal::errc::invalid_argument);
  c = command{};
  c.kind = command_kind::begin_render_pass;
  c.subpass_count = 2;
  c.dependencies.push_back({1, 0, 1, 1, 0, 0, false});
  CHECK(ck.append(c).code() == causal::errc::invalid_argument);  // backwards
  c.dependencies[0] = {subpass_external, subpass_external, 1, 1, 0, 0, false};
  CHECK(ck.append(c).code() == causal::errc::invalid_argument);
  c.dependencies[0] = {0, 5, 1, 1, 0, 0, false};
  CHECK(ck.append(c).code() == causal::errc::out_of_range);
  CHECK(ck.size() == 0);
  c.dependencies.clear();
  REQUIRE(ck.append(c).ok());
  command e;
  e.kind = command_kind::set_event;
  e.events = {0};
  e.src_stages = 1;
  CHECK(ck.append(e).code() == causal::errc::failed_precondition);  // inside a render pass
  CHECK(ck.finish().code() == causal::errc::failed_precondition);
  command s;
  s.kind = command_kind::signal_semaphore;
  s.value = 1;
  CHECK(ck.append(s).code() == causal::errc::failed_precondition);
  CHECK_FALSE(ck.valid(at(7, stage::transfer)));
  CHECK_FALSE(ck.happens_before(at(0, stage::transfer), at(7, stage::transfer)));
}

TEST_CASE("check: DOT output draws commands, dependencies and hazards", "[check][dot]") {
  std::string text = memory_barrier_example;
  text.replace(text.find("image=SHADER_WRITE:0"), 20, "image=0:0");
  checked t(text);
  const std::string dot = to_dot(t.s, t.ck);
  CHECK(dot.rfind("digraph causal_check {", 0) == 0);
  CHECK(dot.find("cluster_q0") != std::string::npos);
  CHECK(dot.find("c0 -> c2 [color=red") != std::string::npos);
  CHECK(dot.find("read without flush+invalidate\\nimg_1[0:1,0:1]") != std::string::npos);
  CHECK(dot.find("c1 -> c2 [color=black]") != std::string::npos);
  CHECK(dot.find("c0 -> c1 [color=black]") != std::string::npos);
  CHECK(dot.back() == '\n');
}

//===-- deduplication and the cap ------------------------------------------------===//

namespace {

/// `n` draws writing one buffer with nothing ordering them, then `m`
/// draws writing buffer i (one each), also unordered.
std::string unsynchronised_writes(int n, int m) {
  std::string text = "queue gfx\n";
  for (int i = 0; i < n; ++i) {
    text += "dispatch gfx name=w" + std::to_string(i) + " write=COMPUTE_SHADER:SHADER_WRITE:buf_0[0:64]\n";
  }
  for (int i = 0; i < m; ++i) {
    text += "dispatch gfx name=x" + std::to_string(i) + " write=COMPUTE_SHADER:SHADER_WRITE:buf_" +
            std::to_string(i + 1) + "[0:64]\n";
    text += "dispatch gfx name=y" + std::to_string(i) + " write=COMPUTE_SHADER:SHADER_WRITE:buf_" +
            std::to_string(i + 1) + "[0:64]\n";
  }
  return text;
}

checker run_with(const std::string& text, const checker_options& options) {
  auto parsed = parse_stream(text);
  REQUIRE(parsed.ok());
  checker ck(options);
  for (const command& c : parsed->commands) REQUIRE(ck.append(c).ok());
  return ck;
}

}  // namespace

TEST_CASE("checker: alike hazards are reported once with a count, and a cap keeps the rest as a "
          "count",
          "[check][dedup]") {
  const int n = 40;
  const std::string text = unsynchronised_writes(n, 3);
  const std::uint64_t pairs = static_cast<std::uint64_t>(n) * (n - 1) / 2;

  // By default every hazard is kept: n(n-1)/2 on buf_0, one per other buffer.
  const checker all = run_with(text, {});
  CHECK(all.hazards().size() == pairs + 3);
  CHECK(all.hazards_found() == pairs + 3);
  CHECK(all.dropped_hazards() == 0);
  CHECK(all.hazard_count(0) == 1);

  checker_options dedup;
  dedup.deduplicate = true;
  const checker one_each = run_with(text, dedup);
  REQUIRE(one_each.hazards().size() == 4);  // buf_0, buf_1, buf_2, buf_3
  CHECK(one_each.hazards()[0].kind == hazard_kind::write_after_write_race);
  CHECK(one_each.hazards()[0].first == 0);
  CHECK(one_each.hazards()[0].second == 1);
  CHECK(one_each.hazard_count(0) == pairs);
  CHECK(one_each.hazard_count(1) == 1);
  CHECK(one_each.hazards_found() == pairs + 3);
  CHECK(one_each.dropped_hazards() == 0);

  dedup.max_hazards = 2;
  const checker capped = run_with(text, dedup);
  CHECK(capped.hazards().size() == 2);
  CHECK(capped.hazard_count(0) == pairs);
  CHECK(capped.dropped_hazards() == 2);
  CHECK(capped.hazards_found() == pairs + 3);

  checker_options cap_only;
  cap_only.max_hazards = 5;
  const checker first_five = run_with(text, cap_only);
  CHECK(first_five.hazards().size() == 5);
  CHECK(first_five.dropped_hazards() == pairs + 3 - 5);
}

TEST_CASE("checker: BY_REGION outside a render pass changes nothing: the barrier orders as an "
          "ordinary one",
          "[check][by_region]") {
  const checked t(R"(
queue q
dispatch q name=w write=COMPUTE_SHADER:SHADER_WRITE:buf[0:64]
barrier q name=b src=COMPUTE_SHADER dst=COMPUTE_SHADER by_region buffer=SHADER_WRITE:SHADER_READ:buf[0:64]
dispatch q name=r read=COMPUTE_SHADER:SHADER_READ:buf[0:64]
)");
  CHECK(t.hazards.empty());
  CHECK(t.before("w", stage::compute_shader, "r", stage::compute_shader));
  CHECK(t.before("w", stage::compute_shader, "r", stage::compute_shader, relation::by_region));
}

TEST_CASE("checker: a write retires the accesses it is ordered after; a later racing access is reported once, "
          "against the latest write",
          "[check][retire]") {
  // w2 follows w1 with a full memory dependency and covers it, so w1 is
  // retired: r races w2 and is reported against w2 only (its race with w1
  // follows from it: w1 < w2, and r is not after w2).
  checked t(R"(
queue q
dispatch q name=w1 write=COMPUTE_SHADER:SHADER_WRITE:buf[0:64]
barrier q src=COMPUTE_SHADER dst=COMPUTE_SHADER buffer=SHADER_WRITE:SHADER_WRITE:buf[0:64]
dispatch q name=w2 write=COMPUTE_SHADER:SHADER_WRITE:buf
dispatch q name=r read=COMPUTE_SHADER:SHADER_READ:buf[0:64]
)");
  REQUIRE(t.hazards.size() == 1);
  CHECK(t.hazards[0].kind == hazard_kind::read_after_write_race);
  CHECK(t.hazards[0].first == t.id("w2"));
  CHECK(t.hazards[0].second == t.id("r"));

  // A write that covers only part of w1 does not retire it: r races both.
  checked partial(R"(
queue q
dispatch q name=w1 write=COMPUTE_SHADER:SHADER_WRITE:buf[0:64]
barrier q src=COMPUTE_SHADER dst=COMPUTE_SHADER buffer=SHADER_WRITE:SHADER_WRITE:buf[0:64]
dispatch q name=w2 write=COMPUTE_SHADER:SHADER_WRITE:buf[0:32]
dispatch q name=r read=COMPUTE_SHADER:SHADER_READ:buf[0:64]
)");
  CHECK(partial.hazards.size() == 2);

  // A write with something to report against w1 (no invalidate for it)
  // does not retire it either: r is reported against both writes.
  checked unclean(R"(
queue q
dispatch q name=w1 write=COMPUTE_SHADER:SHADER_WRITE:buf[0:64]
barrier q src=COMPUTE_SHADER dst=COMPUTE_SHADER
dispatch q name=w2 write=COMPUTE_SHADER:SHADER_WRITE:buf
dispatch q name=r read=COMPUTE_SHADER:SHADER_READ:buf[0:64]
)");
  CHECK(unclean.hazards.size() == 3);
}

TEST_CASE("checker: records stay bounded by the live state on a long stream of reused buffers", "[check][retire]") {
  // 8 buffers written, handed to reads and written again every frame:
  // 200 frames (3600 commands, over 7000 records without retirement) keep
  // about a frame's worth (GLOBAL records are pruned once their list has
  // doubled, so up to 64 more), and nothing races.
  auto frames = [](int n) {
    std::string text = "queue q\n";
    for (int f = 0; f < n; ++f) {
      for (int b = 0; b < 8; ++b) text += "dispatch q write=COMPUTE_SHADER:SHADER_WRITE:b" + std::to_string(b) + "\n";
      text += "barrier q src=COMPUTE_SHADER dst=VERTEX_SHADER global=SHADER_WRITE:SHADER_READ\n";
      for (int b = 0; b < 8; ++b) text += "draw q read=VERTEX_SHADER:SHADER_READ:b" + std::to_string(b) + "\n";
      text += "barrier q src=VERTEX_SHADER dst=COMPUTE_SHADER global=0:SHADER_WRITE\n";
    }
    return text;
  };
  checked few(frames(5));  // the reference agrees on a short one
  CHECK(few.hazards.empty());
  auto parsed = parse_stream(frames(200));
  REQUIRE(parsed.ok());
  checker ck;
  for (const command& c : parsed->commands) REQUIRE(ck.append(c).ok());
  CHECK(ck.hazards().empty());
  CHECK(ck.live_records() <= 100);
}

TEST_CASE("checker: a freed resource's earlier life is never compared with what follows the free",
          "[check][free]") {
  // w1 and w2 write `buf` with nothing ordering them: a race, unless buf was
  // freed between them (w2 writes a new buffer that reuses the handle).
  const std::string head =
      "queue q\n"
      "dispatch q name=w1 write=COMPUTE_SHADER:SHADER_WRITE:buf\n";
  const std::string tail = "dispatch q name=w2 write=COMPUTE_SHADER:SHADER_WRITE:buf\n";
  checked racing(head + tail);
  REQUIRE(racing.hazards.size() == 1);
  CHECK(racing.hazards[0].kind == hazard_kind::write_after_write_race);
  checked freed(head + "free buf name=destroy\n" + tail);
  CHECK(freed.hazards.empty());
  CHECK(freed.ck.kind(freed.id("destroy")) == command_kind::free_resource);
  // A free drops only its own resource's records.
  checked other(head + "free other\n" + tail);
  CHECK(other.hazards.size() == 1);
  // A free names a resource, never GLOBAL.
  checker ck;
  command bad;
  bad.kind = command_kind::free_resource;
  const causal::status st = ck.append(bad);
  CHECK(st.code() == causal::errc::invalid_argument);
  CHECK(ck.size() == 0);
}

TEST_CASE("checker: freeing each frame's resources keeps records and clocks bounded, render passes included",
          "[check][free]") {
  // Every frame a render pass draws into a fresh attachment reading a fresh
  // buffer that nothing writes again: without the frees every frame's
  // records stay, and (without history) every frame's render pass with
  // them. With the frees both stay bounded.
  auto frames = [](int n, bool free_them) {
    std::string text = "queue q\n";
    for (int f = 0; f < n; ++f) {
      const std::string img = "img" + std::to_string(f), buf = "buf" + std::to_string(f);
      text += "copy q write=TRANSFER:TRANSFER_WRITE:" + buf + "\n";
      text += "barrier q src=TRANSFER dst=FRAGMENT_SHADER buffer=TRANSFER_WRITE:SHADER_READ:" + buf + "\n";
      text += "begin_render_pass q subpasses=1 "
              "dep=EXTERNAL:0:COLOR_ATTACHMENT_OUTPUT:COLOR_ATTACHMENT_OUTPUT:0:COLOR_ATTACHMENT_WRITE\n";
      text += "draw q read=FRAGMENT_SHADER:SHADER_READ:" + buf + " write=COLOR_ATTACHMENT_OUTPUT:COLOR_ATTACHMENT_WRITE:" +
              img + "\n";
      text += "end_render_pass q\n";
      if (free_them) text += "free " + buf + "\nfree " + img + "\n";
    }
    return text;
  };
  checked few(frames(4, true));  // the reference agrees on a short one
  CHECK(few.hazards.empty());
  for (const bool free_them : {false, true}) {
    auto parsed = parse_stream(frames(300, free_them), nullptr, stream_limits{1u << 22, 1u << 16, 1u << 12});
    REQUIRE(parsed.ok());
    checker_options o;
    o.history = false;
    checker ck(o);
    for (const command& c : parsed->commands) REQUIRE(ck.append(c).ok());
    CHECK(ck.hazards().empty());
    if (free_them) {
      // GLOBAL records (the dependency's invalidate) are pruned in batches,
      // so a few recent passes stay pinned at a time, never more.
      CHECK(ck.live_records() <= 20);
      CHECK(ck.forgotten_render_passes() >= 280);
      CHECK(ck.max_clock_entries() <= 16);
    } else {
      CHECK(ck.live_records() >= 600);
      CHECK(ck.max_clock_entries() >= 100);  // what the frees save
    }
  }
}

TEST_CASE("checker: a closed render pass whose draws' accesses stay live is collapsed once a queue-wide "
          "barrier orders it",
          "[check][render_pass]") {
  // Fresh resources every frame, never freed: every pass keeps live
  // records (its draw's read of buf and write of img), so none is
  // forgotten. The passes' dependencies carry no memory access (nothing of
  // a pass's own barriers or dependencies stays live) and the end-of-frame
  // barrier orders everything before the next frame, so each pass's clock
  // entry is covered by the queue's and leaves the clocks. The answers are
  // those of the checker with history, which keeps every entry.
  auto frames = [](int n) {
    std::string text = "queue q\n";
    for (int f = 0; f < n; ++f) {
      const std::string n_ = std::to_string(f), buf = "buf" + n_, img = "img" + n_, dst = "dst" + n_;
      text += "dispatch q write=COMPUTE_SHADER:SHADER_WRITE:" + buf + "\n";
      text += "barrier q src=COMPUTE_SHADER dst=VERTEX_SHADER buffer=SHADER_WRITE:SHADER_READ:" + buf + "\n";
      text += "begin_render_pass q subpasses=1 dep=EXTERNAL:0:TRANSFER:COLOR_ATTACHMENT_OUTPUT:0:0 "
              "dep=0:EXTERNAL:COLOR_ATTACHMENT_OUTPUT:TRANSFER:0:0\n";
      text += "draw q read=VERTEX_SHADER:SHADER_READ:" + buf + " write=COLOR_ATTACHMENT_OUTPUT:COLOR_ATTACHMENT_WRITE:" +
              img + "\n";
      text += "end_render_pass q\n";
      text += "barrier q src=COLOR_ATTACHMENT_OUTPUT dst=TRANSFER transition=COLOR_ATTACHMENT_WRITE:TRANSFER_READ:" +
              img + "\n";
      text += "copy q read=TRANSFER:TRANSFER_READ:" + img + " write=TRANSFER:TRANSFER_WRITE:" + dst + "\n";
      // every fifth frame a second copy races the first
      if (f % 5 == 2) text += "copy q write=TRANSFER:TRANSFER_WRITE:" + dst + "\n";
      text += "barrier q src=TRANSFER dst=ALL_COMMANDS buffer=TRANSFER_WRITE:MEMORY_READ:" + dst + "\n";
    }
    return text;
  };
  checked few(frames(6));  // the reference agrees on a short one
  CHECK(few.hazards.size() == 1);
  auto parsed = parse_stream(frames(400), nullptr, stream_limits{1u << 22, 1u << 16, 1u << 12});
  REQUIRE(parsed.ok());
  checker full;  // history: every pass stays in the clocks
  checker_options o;
  o.history = false;
  checker lean(o);
  for (const command& c : parsed->commands) {
    REQUIRE(full.append(c).ok());
    REQUIRE(lean.append(c).ok());
  }
  CHECK(full.hazards().size() == 80);
  CHECK(lean.hazards() == full.hazards());
  CHECK(lean.forgotten_render_passes() == 0);
  CHECK(lean.live_records() >= 800);
  CHECK(full.max_clock_entries() >= 400);
  CHECK(lean.collapsed_clock_entries() >= 400);
  CHECK(lean.max_clock_entries() <= 6);
}

TEST_CASE("checker: host writes reach the device through a submit, device writes reach the host through "
          "a barrier to HOST and a wait",
          "[check][host]") {
  const std::string q = "queue q\nqueue b\n";
  SECTION("an upload: host writes, then a submit, then the device reads") {
    checked c(q + "host name=upload write=HOST:HOST_WRITE:buf\nsubmit q\n"
                  "dispatch q name=use read=COMPUTE_SHADER:SHADER_READ:buf\n");
    CHECK(c.hazards.empty());
  }
  SECTION("a host write after the submit that carries the read races it") {
    checked c(q + "submit q\nhost name=upload write=HOST:HOST_WRITE:buf\n"
                  "dispatch q name=use read=COMPUTE_SHADER:SHADER_READ:buf\n");
    REQUIRE(c.hazards.size() == 1);
    CHECK(c.hazards[0].kind == hazard_kind::read_after_write_race);
    CHECK(c.hazards[0].first == c.id("upload"));
    CHECK(c.hazards[0].first_stages == static_cast<stage_set>(1u << static_cast<unsigned>(stage::host)));
    CHECK(to_text(c.s, c.hazards[0]).find("upload (host) HOST HOST_WRITE") != std::string::npos);
  }
  const std::string produce = "dispatch q name=produce write=COMPUTE_SHADER:SHADER_WRITE:buf\n";
  SECTION("a readback: a barrier to HOST/HOST_READ, a signal, a host wait, then the host reads") {
    checked c(q + produce + "barrier q src=COMPUTE_SHADER dst=HOST buffer=SHADER_WRITE:HOST_READ:buf\n"
                            "signal q semaphore=fence value=1\nhost_wait semaphore=fence value=1\n"
                            "host name=readback read=HOST:HOST_READ:buf\n");
    CHECK(c.hazards.empty());
  }
  SECTION("a host wait orders but makes nothing visible: without the barrier to HOST the read is not") {
    checked c(q + produce + "signal q semaphore=fence value=1\nhost_wait semaphore=fence value=1\n"
                            "host name=readback read=HOST:HOST_READ:buf\n");
    REQUIRE(c.hazards.size() == 1);
    CHECK(c.hazards[0].kind == hazard_kind::read_without_visibility);
    CHECK(c.hazards[0].second == c.id("readback"));
  }
  SECTION("without the host wait the read races the write") {
    checked c(q + produce + "barrier q src=COMPUTE_SHADER dst=HOST buffer=SHADER_WRITE:HOST_READ:buf\n"
                            "signal q semaphore=fence value=1\nhost name=readback read=HOST:HOST_READ:buf\n");
    REQUIRE(c.hazards.size() == 1);
    CHECK(c.hazards[0].kind == hazard_kind::read_after_write_race);
  }
  SECTION("the host overwrites what the device still reads unless it waited first") {
    const std::string read = "dispatch q name=reader read=COMPUTE_SHADER:SHADER_READ:buf\n";
    checked racing(q + read + "host name=overwrite write=HOST:HOST_WRITE:buf\n");
    REQUIRE(racing.hazards.size() == 1);
    CHECK(racing.hazards[0].kind == hazard_kind::write_after_read_race);
    checked waited(q + read + "signal q semaphore=fence value=1\nhost_wait semaphore=fence value=1\n"
                              "host name=overwrite write=HOST:HOST_WRITE:buf\n");
    CHECK(waited.hazards.empty());
  }
  SECTION("the host's own accesses are ordered and coherent") {
    checked c(q + "host write=HOST:HOST_WRITE:buf\nhost read=HOST:HOST_READ:buf write=HOST:HOST_WRITE:buf\n");
    CHECK(c.hazards.empty());
  }
  SECTION("queue to host to queue: a wait and a submit carry order and memory across") {
    const std::string tail = "host write=HOST:HOST_WRITE:flag\nsubmit b\n"
                             "dispatch b name=consume read=COMPUTE_SHADER:SHADER_READ:buf\n";
    checked chained(q + produce + "signal q semaphore=fence value=1\nhost_wait semaphore=fence value=1\n" + tail);
    CHECK(chained.hazards.empty());
    checked unchained(q + produce + "signal q semaphore=fence value=1\n" + tail);
    REQUIRE(unchained.hazards.size() == 1);
    CHECK(unchained.hazards[0].kind == hazard_kind::read_after_write_race);
  }
  SECTION("bad host commands are refused and change nothing") {
    checker ck;
    command device_host;  // a queue's action cannot access at HOST
    device_host.kind = command_kind::action;
    device_host.accesses = {{stage::host, access_type::host_write, memory_range{0, 0, 4, 0, whole}}};
    CHECK(ck.append(device_host).code() == causal::errc::invalid_argument);
    command shader_on_host;  // a host command cannot access at a pipeline stage
    shader_on_host.kind = command_kind::host_access;
    shader_on_host.accesses = {{stage::compute_shader, access_type::shader_write, memory_range{0, 0, 4, 0, whole}}};
    CHECK(ck.append(shader_on_host).code() == causal::errc::invalid_argument);
    command early_wait;  // before any signal reaching its value
    early_wait.kind = command_kind::host_wait;
    early_wait.value = 1;
    CHECK(ck.append(early_wait).code() == causal::errc::failed_precondition);
    CHECK(ck.size() == 0);
  }
}
