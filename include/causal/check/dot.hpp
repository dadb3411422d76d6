// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// dot: the checked stream as a Graphviz DOT graph, hazards highlighted, so
// a reader sees at a glance which dependency is missing and where.
//
// One box per command, one cluster per queue, commands top to bottom in
// command order (thin grey edges). A solid edge a -> c is drawn from the
// latest command `a` of each queue that has some node before some node of
// `c` in `<` (the dependency chain a reader follows backwards); a dashed
// blue edge where that holds only in `<_region`. Each hazard is a bold red
// edge from its first to its second command, labelled with its kind,
// stages, accesses and range. Commands involved in a hazard are filled red.
//
// Thread safety: a free function on const values.
// Memory order:  not applicable.
// Blocking/allocation: allocates the returned string; O(commands x queues x
//                commands) order queries: meant for streams a human reads.
// Size:          not applicable.
// Configuration: none.
// See also:      <causal/check/checker.hpp>, <causal/check/stream_text.hpp>.
#pragma once

#include <causal/check/checker.hpp>
#include <causal/check/command_model.hpp>
#include <causal/check/stream_text.hpp>
#include <causal/config.hpp>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>

CAUSAL_BEGIN_NAMESPACE
namespace check {

namespace detail {

inline std::string dot_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

inline point first_point(const checker& ck, std::uint32_t c) {
  return ck.kind(c) == command_kind::action ? at(c, stage::top_of_pipe) : src_of(c);
}
inline point last_point(const checker& ck, std::uint32_t c) {
  if (ck.kind(c) == command_kind::action) return at(c, stage::bottom_of_pipe);
  return ck.valid(dst_of(c)) ? dst_of(c) : src_of(c);
}

}  // namespace detail

/// The DOT text for stream `s` as recorded by `ck` (the same commands, in
/// the same order).
[[nodiscard]] inline std::string to_dot(const stream& s, const checker& ck) {
  using detail::dot_escape;
  std::string out = "digraph causal_check {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n";
  std::set<std::uint32_t> hot;
  for (const hazard& h : ck.hazards()) {
    hot.insert(h.first);
    hot.insert(h.second);
  }
  const auto n = static_cast<std::uint32_t>(std::min<std::size_t>(ck.size(), s.commands.size()));
  for (std::uint32_t q = 0; q < s.queues.size(); ++q) {
    out += "  subgraph cluster_q" + std::to_string(q) + " {\n    label=\"queue " + dot_escape(s.queues[q]) + "\";\n";
    std::uint32_t prev = 0xffffffffu;
    for (std::uint32_t c = 0; c < n; ++c) {
      const command_kind k = s.commands[c].kind;
      if (s.commands[c].queue != q || k == command_kind::free_resource || k == command_kind::host_access ||
          k == command_kind::host_wait) {
        continue;  // no queue's commands
      }
      std::string label = command_label(s, c);
      const command& cmd = s.commands[c];
      if (cmd.kind == command_kind::pipeline_barrier || cmd.kind == command_kind::wait_events) {
        label += "\nsrc " + stages_text(cmd.src_stages) + "\ndst " + stages_text(cmd.dst_stages);
      }
      out += "    c" + std::to_string(c) + " [label=\"" + dot_escape(label) + "\"";
      if (hot.count(c) != 0) out += ", style=filled, fillcolor=\"#f4b6b6\"";
      if (cmd.kind != command_kind::action) out += ", shape=ellipse";
      out += "];\n";
      if (prev != 0xffffffffu) out += "    c" + std::to_string(prev) + " -> c" + std::to_string(c) + " [color=grey80, arrowhead=none];\n";
      prev = c;
    }
    out += "  }\n";
  }
  // The host's commands, in their own cluster (they are on no queue).
  std::string host_nodes;
  for (std::uint32_t c = 0; c < n; ++c) {
    const command_kind k = s.commands[c].kind;
    if (k != command_kind::host_access && k != command_kind::host_wait) continue;
    host_nodes += "    c" + std::to_string(c) + " [label=\"" + dot_escape(command_label(s, c)) + "\"";
    if (hot.count(c) != 0) host_nodes += ", style=filled, fillcolor=\"#f4b6b6\"";
    host_nodes += ", shape=hexagon];\n";
  }
  if (!host_nodes.empty()) out += "  subgraph cluster_host {\n    label=\"host\";\n" + host_nodes + "  }\n";
  for (std::uint32_t c = 0; c < n; ++c) {
    if (!ck.valid(detail::first_point(ck, c))) continue;
    for (std::uint32_t q = 0; q < s.queues.size(); ++q) {
      for (std::uint32_t a = c; a-- > 0;) {
        if (s.commands[a].queue != q || !ck.valid(detail::first_point(ck, a))) continue;
        const bool strict = ck.happens_before(detail::first_point(ck, a), detail::last_point(ck, c), relation::strict);
        const bool region = strict || ck.happens_before(detail::first_point(ck, a), detail::last_point(ck, c), relation::by_region);
        if (!region) continue;
        out += "  c" + std::to_string(a) + " -> c" + std::to_string(c);
        out += strict ? " [color=black];\n" : " [color=blue, style=dashed];\n";
        break;
      }
    }
  }
  for (const hazard& h : ck.hazards()) {
    std::string label(to_string(h.kind));
    if (h.kind != hazard_kind::event_race) label += "\n" + memory_text(s, h.range);
    out += "  c" + std::to_string(h.first) + " -> c" + std::to_string(h.second) +
           " [color=red, penwidth=2.5, fontcolor=red, constraint=false, label=\"" + dot_escape(label) + "\"];\n";
  }
  out += "}\n";
  return out;
}

}  // namespace check
CAUSAL_END_NAMESPACE
