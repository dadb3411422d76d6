// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Tests for <causal/check/stream_text.hpp>: what a line parses to, that
// writing and parsing again gives the same stream, and that each kind of
// bad input is rejected with errc::malformed (or capacity_exceeded) and the
// line it is on, that tabs separate words, and which keys may repeat.

#include <causal/check/stream_text.hpp>

#include "catch.hpp"

#include <string>

namespace {
using namespace causal::check;
}

TEST_CASE("stream_text: the memory-barrier example parses to the model", "[check][text]") {
  auto s = parse_stream(R"(# the memory-barrier example
queue gfx
draw gfx name=draw1 write=VERTEX_SHADER:SHADER_WRITE:img_1[0:1,0:1]
barrier gfx src=VERTEX_SHADER|TRANSFER dst=FRAGMENT_SHADER|TOP global=0:SHADER_READ image=SHADER_WRITE:0:img_1[0:1,2:4]

draw gfx name=draw2 read=FRAGMENT_SHADER:SHADER_READ:img_1   # whole image
)");
  REQUIRE(s.ok());
  REQUIRE(s->commands.size() == 3);
  const command& d1 = s->commands[0];
  CHECK(d1.kind == command_kind::action);
  CHECK(d1.label == "draw1");
  REQUIRE(d1.accesses.size() == 1);
  CHECK(d1.accesses[0].stage == stage::vertex_shader);
  CHECK(d1.accesses[0].access == access_type::shader_write);
  CHECK(d1.accesses[0].mem == memory_range{0, 0, 1, 0, 1});
  const command& b = s->commands[1];
  CHECK(b.kind == command_kind::pipeline_barrier);
  CHECK(b.src_stages == (bit(stage::vertex_shader) | bit(stage::transfer)));
  CHECK(b.dst_stages == (bit(stage::fragment_shader) | bit(stage::top_of_pipe)));
  REQUIRE(b.barriers.size() == 2);
  CHECK(b.barriers[0].mem.is_global());
  CHECK(b.barriers[0].dst_access == bit(access_type::shader_read));
  CHECK(b.barriers[1].mem == memory_range{0, 0, 1, 2, 4});
  CHECK(s->commands[2].accesses[0].mem == memory_range{0, 0, whole, 0, whole});
  CHECK(s->resources == std::vector<std::string>{"img_1"});
}

TEST_CASE("stream_text: writing and parsing again gives the same stream", "[check][text]") {
  const char* text = R"(queue a
queue b
action a name=x read=TRANSFER:TRANSFER_READ:buf[0:16] write=COMPUTE_SHADER:SHADER_WRITE:img[1:2,0:6]
barrier a src=ALL_COMMANDS dst=ALL_GRAPHICS|BOTTOM_OF_PIPE by_region global=MEMORY_WRITE:0 transition=0:SHADER_READ|UNIFORM_READ:img[0:1,0:1]
set_event a event=e1 stages=TRANSFER
wait_events a events=e1,e2 src=TRANSFER dst=FRAGMENT_SHADER image=TRANSFER_WRITE:SHADER_READ:buf
reset_event a event=e1 stages=BOTTOM
begin_render_pass a subpasses=2 dep=EXTERNAL:0:TRANSFER:FRAGMENT_SHADER:TRANSFER_WRITE:SHADER_READ dep=0:1:COLOR_ATTACHMENT_OUTPUT:FRAGMENT_SHADER:COLOR_ATTACHMENT_WRITE:INPUT_ATTACHMENT_READ:by_region
next_subpass a
end_render_pass a
signal a semaphore=s value=3
wait b semaphore=s value=2 stages=VERTEX_SHADER|COMPUTE_SHADER
submit b
host name=upload write=HOST:HOST_WRITE:buf[0:16] read=HOST:HOST_READ:img
barrier a src=COMPUTE_SHADER dst=HOST buffer=SHADER_WRITE:HOST_READ:buf
host_wait semaphore=s value=3 name=fence
free buf name=destroy_buf
free img
)";
  auto first = parse_stream(text);
  REQUIRE(first.ok());
  const std::string written = to_text(*first);
  auto second = parse_stream(written);
  REQUIRE(second.ok());
  CHECK(to_text(*second) == written);
  REQUIRE(second->commands.size() == first->commands.size());
  for (std::size_t i = 0; i < first->commands.size(); ++i) {
    const command& p = first->commands[i];
    const command& q = second->commands[i];
    CHECK(p.kind == q.kind);
    CHECK(p.queue == q.queue);
    CHECK(p.src_stages == q.src_stages);
    CHECK(p.dst_stages == q.dst_stages);
    CHECK(p.by_region == q.by_region);
    CHECK(p.events == q.events);
    CHECK(p.subpass_count == q.subpass_count);
    CHECK(p.dependencies.size() == q.dependencies.size());
    CHECK(p.barriers.size() == q.barriers.size());
    CHECK(p.value == q.value);
  }
  const command& host = first->commands[first->commands.size() - 5];
  CHECK(host.kind == command_kind::host_access);
  REQUIRE(host.accesses.size() == 2);
  CHECK(host.accesses[0].stage == stage::host);
  CHECK(host.accesses[0].access == access_type::host_write);
  CHECK(host.accesses[1].access == access_type::host_read);
  CHECK(first->commands[first->commands.size() - 4].dst_stages == host_stage_bit);
  CHECK(first->commands[first->commands.size() - 4].barriers[0].dst_access == bit(access_type::host_read));
  const command& host_wait = first->commands[first->commands.size() - 3];
  CHECK(host_wait.kind == command_kind::host_wait);
  CHECK(host_wait.value == 3);
  CHECK(host_wait.label == "fence");
  const command& freed = first->commands[first->commands.size() - 2];
  CHECK(freed.kind == command_kind::free_resource);
  CHECK(freed.label == "destroy_buf");
  REQUIRE(freed.resource < first->resources.size());
  CHECK(first->resources[freed.resource] == "buf");
  CHECK(second->commands[second->commands.size() - 2].resource == freed.resource);
  CHECK(first->resources[first->commands.back().resource] == "img");
  CHECK(first->commands[1].barriers[0].src_access == all_write_access);
  REQUIRE(first->commands[5].dependencies.size() == 2);
  CHECK(first->commands[5].dependencies[1].by_region);
}

TEST_CASE("stream_text: bad input is rejected with the line it is on", "[check][text][errors]") {
  struct bad {
    const char* text;
    std::uint64_t line;
  };
  const bad cases[] = {
      {"draw gfx\n", 1},                                     // undeclared queue
      {"queue g\nqueue g\n", 2},                             // declared twice
      {"queue g\nfrobnicate g\n", 2},                        // unknown word
      {"queue g\ndraw\n", 2},                                // no queue
      {"queue g\ndraw g read=VERTEX_SHADER:SHADER_WRITE:b\n", 2},   // read with a write type
      {"queue g\ndraw g read=NOT_A_STAGE:SHADER_READ:b\n", 2},
      {"queue g\ndraw g read=VERTEX_SHADER|FRAGMENT_SHADER:SHADER_READ:b\n", 2},
      {"queue g\ndraw g read=VERTEX_SHADER:SHADER_READ:b[4:2]\n", 2},   // empty range
      {"queue g\ndraw g read=VERTEX_SHADER:SHADER_READ:b[1:2,3]\n", 2},
      {"queue g\ndraw g read=VERTEX_SHADER:SHADER_READ:b[99999999999999999999999:1]\n", 2},
      {"queue g\n\n# c\nbarrier g src=TRANSFER\n", 4},       // no dst
      {"queue g\nbarrier g src=TRANSFER dst=TRANSFER global=BOGUS:0\n", 2},
      {"queue g\nbarrier g src=TRANSFER dst=TRANSFER buffer=0:0\n", 2},
      {"queue g\ndraw g by_region\n", 2},
      {"queue g\ndraw g nonsense\n", 2},
      {"queue g\ndraw g name=\n", 2},
      {"queue g\nset_event g stages=TRANSFER\n", 2},         // no event
      {"queue g\nbegin_render_pass g\n", 2},                 // no subpasses
      {"queue g\nbegin_render_pass g subpasses=0\n", 2},
      {"queue g\nbegin_render_pass g subpasses=1 dep=0:X:TOP:TOP:0:0\n", 2},
      {"queue g\nbegin_render_pass g subpasses=1 dep=0:0:TOP:TOP:0:0:wrong\n", 2},
      {"queue g\nsignal g semaphore=s\n", 2},                // no value
      {"queue g\nwait g semaphore=s value=1\n", 2},          // no stages
      {"queue g\nsignal g semaphore=s value=-1\n", 2},
      {"queue g\nfree\n", 2},                               // no resource
      {"queue g\nfree b c\n", 2},                           // two
      {"queue g\nfree b[0:4]\n", 2},                        // a whole resource, not a range
      {"queue g\nfree b name=x stages=TOP\n", 2},
      {"queue g\nfree b stages=TOP\n", 2},
      {"queue g\nhost\n", 2},                                // no access
      {"queue g\nhost g write=HOST:HOST_WRITE:b\n", 2},      // no queue on the host
      {"queue g\nhost_wait semaphore=s\n", 2},               // no value
      {"queue g\nhost read=HOST|TRANSFER:HOST_READ:b\n", 2},
  };
  for (const bad& b : cases) {
    auto r = parse_stream(b.text);
    INFO(b.text);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == causal::errc::malformed);
    CHECK(r.error_value().position() == b.line);
    CHECK_FALSE(r.error_value().message().empty());
  }
  CHECK(parse_stream(std::string(max_text_bytes + 1, ' ')).code() == causal::errc::capacity_exceeded);
  CHECK(parse_stream("").ok());
  CHECK(parse_stream("\n\n# only comments\n").ok());
}

TEST_CASE("stream_text: a misspelled name is named, with the closest valid one", "[check][text]") {
  struct diag {
    const char* text;
    const char* expected;
  };
  const diag cases[] = {
      {"queue g\ndraw g read=FRAGMENT_SHADR:SHADER_READ:a\n",
       "line 2: unknown stage 'FRAGMENT_SHADR' (did you mean FRAGMENT_SHADER?)"},
      {"queue g\nbarrier g src=VERTEX_SHADER|TRANSFR dst=TOP\n",
       "line 2: unknown stage 'TRANSFR' (did you mean TRANSFER?)"},
      {"queue g\nbarrier g src=TOP dst=BOTOM\n", "line 2: unknown stage 'BOTOM' (did you mean BOTTOM?)"},
      {"queue g\nbarrier g src=TOP dst=TOP global=SHADER_WRIT:0\n",
       "line 2: unknown access type 'SHADER_WRIT' (did you mean SHADER_WRITE?)"},
      {"queue g\ndraw g write=VERTEX_SHADER:SHADR_WRITE:a\n",
       "line 2: unknown access type 'SHADR_WRITE' (did you mean SHADER_WRITE?)"},
      {"queue g\n\ndrwa g\n", "line 3: unknown command word 'drwa' (did you mean draw?)"},
      {"queue g\ndraw g nmae=x\n", "line 2: unknown key 'nmae' (did you mean name?)"},
      {"queue g\ndraw g src=TOP\n", "line 2: key 'src' is not valid for `draw`"},
      {"queue g\ndraw g read=XYZZYXYZZYXYZZY:SHADER_READ:a\n", "line 2: unknown stage 'XYZZYXYZZYXYZZY' (the names are listed"},
      {"queue g\ndraw q\n", "line 2: undeclared queue"},
  };
  for (const diag& d : cases) {
    INFO(d.text);
    std::string diagnostic = "stale";
    auto r = parse_stream(d.text, &diagnostic);
    REQUIRE_FALSE(r.ok());
    CHECK(diagnostic.rfind(d.expected, 0) == 0);
  }
  std::string diagnostic = "stale";
  CHECK(parse_stream("queue g\ndraw g\n", &diagnostic).ok());
  CHECK(diagnostic.empty());
}

TEST_CASE("stream_text: tabs separate words like spaces", "[check][text]") {
  auto tabbed = parse_stream("queue\tg\ndraw\tg\tname=d\t \tread=VERTEX_SHADER:SHADER_READ:a\r\n"
                             "\tbarrier g\tsrc=TRANSFER dst=TOP\t# a comment\n");
  INFO(std::string(tabbed ? "" : tabbed.error_value().message()));
  REQUIRE(tabbed.ok());
  auto spaced = parse_stream("queue g\ndraw g name=d read=VERTEX_SHADER:SHADER_READ:a\n"
                             "barrier g src=TRANSFER dst=TOP\n");
  REQUIRE(spaced.ok());
  CHECK(to_text(*tabbed) == to_text(*spaced));
  REQUIRE(tabbed->commands.size() == 2);
  CHECK(tabbed->commands[0].label == "d");
  CHECK(tabbed->commands[0].accesses.size() == 1);
}

TEST_CASE("stream_text: a key that takes one value is refused when given twice", "[check][text][errors]") {
  struct dup {
    const char* text;
    const char* key;
  };
  const dup cases[] = {
      {"queue g\ndraw g name=a name=b\n", "name"},
      {"queue g\nbarrier g src=TRANSFER dst=TOP src=COMPUTE_SHADER\n", "src"},
      {"queue g\nbarrier g src=TRANSFER dst=TOP dst=TRANSFER\n", "dst"},
      {"queue g\nbarrier g src=TRANSFER dst=TOP by_region by_region\n", "by_region"},
      {"queue g\nset_event g event=e stages=TRANSFER stages=TOP\n", "stages"},
      {"queue g\nset_event g event=e event=f stages=TRANSFER\n", "event"},
      {"queue g\nwait_events g events=e events=f src=TOP dst=TOP\n", "events"},
      {"queue g\nbegin_render_pass g subpasses=1 subpasses=2\n", "subpasses"},
      {"queue g\nsignal g semaphore=s semaphore=t value=1\n", "semaphore"},
      {"queue g\nsignal g semaphore=s value=1 value=2\n", "value"},
  };
  for (const dup& d : cases) {
    INFO(d.text);
    std::string diagnostic;
    auto r = parse_stream(d.text, &diagnostic);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == causal::errc::malformed);
    CHECK(r.error_value().position() == 2);
    CHECK(diagnostic.rfind("line 2: key '" + std::string(d.key) + "' given twice on one command", 0) == 0);
  }
  // Keys that add an element may repeat: accesses, memory barriers, deps.
  auto many = parse_stream(
      "queue g\n"
      "draw g read=VERTEX_SHADER:SHADER_READ:a read=FRAGMENT_SHADER:SHADER_READ:b write=FRAGMENT_SHADER:SHADER_WRITE:c "
      "write=COLOR_ATTACHMENT_OUTPUT:COLOR_ATTACHMENT_WRITE:d\n"
      "barrier g src=TRANSFER dst=TOP global=TRANSFER_WRITE:0 global=0:SHADER_READ buffer=0:0:a buffer=0:0:b "
      "image=0:0:c image=0:0:d transition=0:0:e[0:1,0:1] transition=0:0:f[0:1,0:1]\n"
      "begin_render_pass g subpasses=2 dep=EXTERNAL:0:TOP:TOP:0:0 dep=0:1:TOP:TOP:0:0\n");
  INFO(std::string(many ? "" : many.error_value().message()));
  REQUIRE(many.ok());
  CHECK(many->commands[0].accesses.size() == 4);
  CHECK(many->commands[1].barriers.size() == 8);
  CHECK(many->commands[2].dependencies.size() == 2);
}

TEST_CASE("stream_text: the limits are arguments; past one the error names it, below it the "
          "stream is accepted",
          "[check][text][limits]") {
  std::string text = "queue q\n";
  for (int i = 0; i < 20; ++i) text += "signal q semaphore=s" + std::to_string(i % 5) + " value=" + std::to_string(i + 1) + "\n";
  CHECK(parse_stream(text).ok());  // within the defaults

  stream_limits few_commands;
  few_commands.max_commands = 10;
  std::string diagnostic;
  auto r = parse_stream(text, &diagnostic, few_commands);
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == causal::errc::capacity_exceeded);
  CHECK(r.error_value().position() == 12);  // the 11th command's line
  CHECK(diagnostic == "line 12: more commands than the limit of 10");

  stream_limits few_names;
  few_names.max_names = 3;
  r = parse_stream(text, &diagnostic, few_names);
  REQUIRE_FALSE(r.ok());
  CHECK(diagnostic == "line 5: more semaphore names than the limit of 3");
  few_names.max_names = 5;  // exactly the names used: fine
  CHECK(parse_stream(text, nullptr, few_names).ok());

  stream_limits small;
  small.max_text_bytes = 16;
  r = parse_stream(text, &diagnostic, small);
  REQUIRE_FALSE(r.ok());
  CHECK(diagnostic.find("is larger than the limit of 16 bytes") != std::string::npos);

  // Past the default limits, raised ones accept the stream.
  std::string big = "queue q\n";
  for (std::size_t i = 0; i <= max_stream_commands; ++i) big += "submit q\n";
  CHECK(parse_stream(big).code() == causal::errc::capacity_exceeded);
  stream_limits raised;
  raised.max_commands = max_stream_commands + 1;
  const auto accepted = parse_stream(big, nullptr, raised);
  REQUIRE(accepted.ok());
  CHECK(accepted->commands.size() == max_stream_commands + 1);
}
