// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// stream_text: a small line-based text format for command streams, its
// parser (clear errors, never a crash, on any input) and writer, and the
// text form of hazards.
//
//   # comment                      blank lines and '#' comments are ignored
//   queue gfx                      declare a queue (before its first use)
//   draw gfx name=draw1 write=VERTEX_SHADER:SHADER_WRITE:img_1[0:1,0:1]
//   barrier gfx src=VERTEX_SHADER|TRANSFER dst=FRAGMENT_SHADER|TOP
//           global=0:SHADER_READ image=SHADER_WRITE:0:img_1[0:1,0:1]
//   draw gfx name=draw2 read=FRAGMENT_SHADER:SHADER_READ:img_1[0:1,0:1]
//
// (one command per line; the barrier above is wrapped for the comment).
// Words are separated by spaces or tabs.
// Command words: draw dispatch copy clear fill update action (all action
// commands), barrier, set_event, reset_event, wait_events,
// begin_render_pass, next_subpass, end_render_pass, signal, wait, submit,
// and `free RES [name=L]` (the end of resource RES's life: no queue).
// Host commands name no queue either: `host read=HOST:HOST_READ:MEM
// write=HOST:HOST_WRITE:MEM [name=L]` (the host reading or writing mapped
// memory) and `host_wait semaphore=S value=N [name=L]` (vkWaitSemaphores,
// or a fence as a semaphore signalled once).
// The second word is the queue. Then key=value words:
//   name=L                       label used in reports
//   read=STAGE:ACCESS:MEM  write=STAGE:ACCESS:MEM          (actions)
//   src=STAGES dst=STAGES by_region                        (barrier, wait_events)
//   global=SRCACC:DSTACC  buffer=SRCACC:DSTACC:MEM
//   image=SRCACC:DSTACC:MEM  transition=SRCACC:DSTACC:MEM  (memory barriers)
//   event=E stages=STAGES        (set_event, reset_event)
//   events=E1,E2                 (wait_events)
//   subpasses=N dep=SRC:DST:SRCSTAGES:DSTSTAGES:SRCACC:DSTACC[:by_region]
//                                (begin_render_pass; SRC/DST a subpass
//                                number or EXTERNAL)
//   semaphore=S value=N [stages=STAGES]   (signal; wait needs stages)
// Keys that add an element (read= write= global= buffer= image=
// transition= dep=) may repeat; every other key, and by_region, may appear
// once per command: a second one is an error ("duplicate key"), not a
// silent overwrite.
// STAGES: stage names joined by '|' (TOP, BOTTOM, ALL_GRAPHICS,
// ALL_COMMANDS allowed). ACCESS masks: names joined by '|', or 0, with
// MEMORY_READ / MEMORY_WRITE as shorthands. MEM: `res`, `res[a:b]` (bytes
// or mips a..b-1) or `res[a:b,c:d]` (mips, layers). Resources, events and
// semaphores are declared by first use.
//
// Errors: errc::malformed with a message naming what was wrong and the
// 1-based line number as position; errc::capacity_exceeded past the limits
// below. For people, parse_stream(text, &diagnostic) also writes one line
// with the line number and the offending word, and for a misspelled stage,
// access type, command word or key the closest valid name: "line 3:
// unknown stage 'FRAGMENT_SHADR' (did you mean FRAGMENT_SHADER?)". The parser checks syntax only: feed the stream to a checker to
// check the command sequence.
//
// Thread safety: free functions on values.
// Memory order:  not applicable.
// Blocking/allocation: allocates the stream; never throws except
//                std::bad_alloc.
// Size:          limits (stream_limits, each a parse_stream argument): by
//                default 1 MiB of text, 65536 commands, 4096 names of
//                each kind.
// Configuration: stream_limits.
// See also:      <causal/check/checker.hpp>, examples/06_hazard_check.cpp.
#pragma once

#include <causal/check/checker.hpp>
#include <causal/check/command_model.hpp>
#include <causal/config.hpp>
#include <causal/result.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

CAUSAL_BEGIN_NAMESPACE
namespace check {

inline constexpr std::size_t max_text_bytes = 1u << 20;
inline constexpr std::size_t max_stream_commands = 65536;
inline constexpr std::size_t max_names = 4096;

/// How much parse_stream accepts (the defaults above). A stream past a
/// limit is refused with errc::capacity_exceeded; raise the limits to
/// check larger streams (memory grows with the stream).
struct stream_limits {
  std::size_t max_text_bytes = check::max_text_bytes;
  std::size_t max_commands = max_stream_commands;
  /// Distinct resources, and distinct events, and distinct semaphores.
  std::size_t max_names = check::max_names;
};

namespace detail {

inline std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

// Splits at the first n-1 separators: the last part keeps the rest (a
// memory range contains ':' itself).
inline std::vector<std::string_view> split_n(std::string_view s, char sep, std::size_t n) {
  std::vector<std::string_view> out;
  while (out.size() + 1 < n) {
    const std::size_t i = s.find(sep);
    if (i == std::string_view::npos) break;
    out.push_back(s.substr(0, i));
    s.remove_prefix(i + 1);
  }
  out.push_back(s);
  return out;
}

/// Words separate at any run of spaces and tabs (a '\r' of a CRLF line
/// ending counts as a separator too).
inline std::vector<std::string_view> split_words(std::string_view line) {
  const auto separator = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && separator(line[i])) ++i;
    const std::size_t start = i;
    while (i < line.size() && !separator(line[i])) ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

inline bool parse_u64(std::string_view s, std::uint64_t& v) {
  if (s.empty() || s.size() > 20) return false;
  const char* end = s.data() + s.size();
  auto r = std::from_chars(s.data(), end, v);
  return r.ec == std::errc() && r.ptr == end;
}

inline bool valid_name(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

inline bool parse_stage(std::string_view s, stage_mask& m) {
  if (s == "TOP") s = "TOP_OF_PIPE";
  if (s == "BOTTOM") s = "BOTTOM_OF_PIPE";
  if (s == "ALL_GRAPHICS") {
    m |= all_graphics_bit;
    return true;
  }
  if (s == "ALL_COMMANDS") {
    m |= all_commands_bit;
    return true;
  }
  for (std::size_t i = 0; i < named_stage_count; ++i) {
    if (stage_names[i] == s) {
      m |= stage_mask{1} << i;
      return true;
    }
  }
  return false;
}

/// Parses STAGES; on failure `bad` (when given) is the part that is not a
/// stage name (empty when the mask itself was empty).
inline bool parse_stages(std::string_view s, stage_mask& m, std::string_view* bad = nullptr) {
  m = 0;
  for (std::string_view part : split(s, '|')) {
    if (!parse_stage(part, m)) {
      if (bad != nullptr) *bad = part;
      return false;
    }
  }
  if (m == 0 && bad != nullptr) *bad = {};
  return m != 0;
}

/// Edit distance between two short names (for "did you mean").
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0u : 1u)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

/// "unknown <what> 'WORD' (did you mean 'NAME'?)", naming the closest of
/// `names` when one is near enough (a quarter of the word's length, at
/// least 2 edits), else listing where the names are documented.
template <class Names>
std::string unknown_name_text(std::string_view what, std::string_view word, const Names& names,
                              std::string_view extra_names = {}) {
  std::string_view best;
  std::size_t best_distance = ~std::size_t{0};
  const auto consider = [&](std::string_view candidate) {
    const std::size_t d = edit_distance(word, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  };
  for (std::string_view n : names) consider(n);
  for (std::string_view n : split(extra_names, ' ')) {
    if (!n.empty()) consider(n);
  }
  std::string out = "unknown " + std::string(what) + " '" + std::string(word.substr(0, 80)) + "'";
  if (!best.empty() && best_distance <= std::max<std::size_t>(2, word.size() / 4)) {
    out += " (did you mean " + std::string(best) + "?)";
  } else {
    out += " (the names are listed in <causal/check/stream_text.hpp> and `06_hazard_check --help`)";
  }
  return out;
}



inline bool parse_access_mask(std::string_view s, access_mask& m) {
  m = 0;
  if (s == "0" || s == "NONE") return true;
  for (std::string_view part : split(s, '|')) {
    if (part == "MEMORY_READ") {
      m |= all_read_access;
      continue;
    }
    if (part == "MEMORY_WRITE") {
      m |= all_write_access;
      continue;
    }
    bool found = false;
    for (std::size_t i = 0; i < access_type_count; ++i) {
      if (access_names[i] == part) {
        m |= access_mask{1} << i;
        found = true;
      }
    }
    if (!found) return false;
  }
  return true;
}

/// The first part of an ACCESS mask that is not an access name.
inline std::string_view bad_access_part(std::string_view s) {
  if (s == "0" || s == "NONE") return {};
  for (std::string_view part : split(s, '|')) {
    access_mask m = 0;
    if (!parse_access_mask(part, m)) return part;
  }
  return {};
}

/// The names of one kind (resources, events, semaphores) and a hash index
/// over them: a lookup per mention, not a scan of up to max_names.
class name_table {
 public:
  explicit name_table(std::vector<std::string>& names) : names_(names) {}
  /// The id of `n`, added when new; false (nothing added) when adding it
  /// would pass `limit`.
  bool intern(std::string_view n, std::size_t limit, std::uint32_t& id) {
    key_.assign(n);
    if (const auto it = ids_.find(key_); it != ids_.end()) {
      id = it->second;
      return true;
    }
    if (names_.size() >= limit) return false;
    id = static_cast<std::uint32_t>(names_.size());
    names_.emplace_back(n);
    ids_.emplace(key_, id);
    return true;
  }

 private:
  std::vector<std::string>& names_;
  std::unordered_map<std::string, std::uint32_t> ids_;
  std::string key_;  // reused for lookups
};

}  // namespace detail

/// Parses `text` (see the header comment). On an error, `diagnostic` (when
/// given) receives the full text for a person: the line number, the
/// offending word and, for a misspelled name, the closest valid one
/// ("line 3: unknown stage 'FRAGMENT_SHADR' (did you mean FRAGMENT_SHADER?)").
[[nodiscard]] inline result<stream> parse_stream(std::string_view text, std::string* diagnostic = nullptr,
                                                 const stream_limits& limits = {}) {
  using detail::split;
  if (diagnostic != nullptr) diagnostic->clear();
  if (text.size() > limits.max_text_bytes) {
    if (diagnostic != nullptr) {
      *diagnostic = "stream text of " + std::to_string(text.size()) + " bytes is larger than the limit of " +
                    std::to_string(limits.max_text_bytes) + " bytes";
    }
    return error(errc::capacity_exceeded, "stream text larger than the limit (stream_limits::max_text_bytes)",
                 text.size());
  }
  stream s;
  detail::name_table resource_names(s.resources), event_names(s.events), semaphore_names(s.semaphores);
  std::uint64_t line_no = 0;
  // A limit of `limits` reached: the static message for the error value,
  // the limit's value in the diagnostic.
  auto over = [&](const char* msg, const char* what, std::size_t limit) {
    if (diagnostic != nullptr && diagnostic->empty()) {
      *diagnostic = "line " + std::to_string(line_no) + ": more " + what + " than the limit of " + std::to_string(limit);
    }
    return error(errc::capacity_exceeded, msg, line_no);
  };
  auto fail = [&](const char* msg) {
    if (diagnostic != nullptr && diagnostic->empty()) *diagnostic = "line " + std::to_string(line_no) + ": " + msg;
    return error(errc::malformed, msg, line_no);
  };
  // A misspelled name: the static message for the error value, the word and
  // a suggestion for the diagnostic.
  auto fail_name = [&](const char* msg, const std::string& specific) {
    if (diagnostic != nullptr) *diagnostic = "line " + std::to_string(line_no) + ": " + specific;
    return fail(msg);
  };
  static constexpr std::string_view stage_aliases = "TOP BOTTOM ALL_GRAPHICS ALL_COMMANDS";
  static constexpr std::string_view access_aliases = "MEMORY_READ MEMORY_WRITE NONE";
  static constexpr std::array<std::string_view, 13> command_words = {
      "queue", "draw", "dispatch", "copy", "clear", "fill", "update", "action", "barrier", "set_event",
      "reset_event", "wait_events", "begin_render_pass"};
  static constexpr std::string_view more_command_words =
      "next_subpass end_render_pass signal wait submit free host host_wait";
  auto bad_stages = [&](std::string_view val, const char* msg) {
    stage_mask ignored = 0;
    std::string_view bad;
    (void)detail::parse_stages(val, ignored, &bad);
    if (bad.empty()) return fail(msg);
    return fail_name(msg, detail::unknown_name_text("stage", bad, stage_names, stage_aliases));
  };
  auto bad_access = [&](std::string_view val, const char* msg) {
    const std::string_view bad = detail::bad_access_part(val);
    if (bad.empty()) return fail(msg);
    return fail_name(msg, detail::unknown_name_text("access type", bad, access_names, access_aliases));
  };

  auto parse_mem = [&](std::string_view m, memory_range& out) -> bool {
    const std::size_t br = m.find('[');
    std::string_view name = m.substr(0, br);
    if (!detail::valid_name(name)) return false;
    std::uint32_t id = 0;
    if (!resource_names.intern(name, limits.max_names, id)) return false;
    out = memory_range{};
    out.resource = id;
    if (br == std::string_view::npos) return true;
    if (m.back() != ']') return false;
    std::string_view inner = m.substr(br + 1, m.size() - br - 2);
    auto dims = split(inner, ',');
    if (dims.empty() || dims.size() > 2) return false;
    std::uint64_t v[4] = {0, whole, 0, whole};
    for (std::size_t d = 0; d < dims.size(); ++d) {
      auto ab = split(dims[d], ':');
      if (ab.size() != 2 || !detail::parse_u64(ab[0], v[2 * d]) || !detail::parse_u64(ab[1], v[2 * d + 1])) {
        return false;
      }
      if (v[2 * d] >= v[2 * d + 1]) return false;
    }
    out.x0 = v[0];
    out.x1 = v[1];
    out.y0 = v[2];
    out.y1 = v[3];
    return true;
  };

  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (const std::size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    const std::vector<std::string_view> words = detail::split_words(line);
    if (words.empty()) {
      if (eol == text.size()) break;
      continue;
    }
    const std::string_view verb = words[0];
    if (verb == "queue") {
      if (words.size() != 2 || !detail::valid_name(words[1])) return fail("`queue` takes one name");
      for (const std::string& q : s.queues) {
        if (q == words[1]) return fail("queue declared twice");
      }
      if (s.queues.size() >= 64) return error(errc::capacity_exceeded, "more than 64 queues", line_no);
      s.queues.emplace_back(words[1]);
      continue;
    }
    command c;
    if (verb == "draw" || verb == "dispatch" || verb == "copy" || verb == "clear" || verb == "fill" ||
        verb == "update" || verb == "action") {
      c.kind = command_kind::action;
    } else if (verb == "barrier") {
      c.kind = command_kind::pipeline_barrier;
    } else if (verb == "set_event") {
      c.kind = command_kind::set_event;
    } else if (verb == "reset_event") {
      c.kind = command_kind::reset_event;
    } else if (verb == "wait_events") {
      c.kind = command_kind::wait_events;
    } else if (verb == "begin_render_pass") {
      c.kind = command_kind::begin_render_pass;
    } else if (verb == "next_subpass") {
      c.kind = command_kind::next_subpass;
    } else if (verb == "end_render_pass") {
      c.kind = command_kind::end_render_pass;
    } else if (verb == "signal") {
      c.kind = command_kind::signal_semaphore;
    } else if (verb == "wait") {
      c.kind = command_kind::wait_semaphore;
    } else if (verb == "submit") {
      c.kind = command_kind::submit;
    } else if (verb == "free") {
      // `free RES [name=L]`: no queue (the host destroys the resource).
      c.kind = command_kind::free_resource;
      if (words.size() < 2 || words.size() > 3 || !detail::valid_name(words[1])) {
        return fail("`free` takes one resource name (and optionally name=L)");
      }
      if (s.commands.size() >= limits.max_commands) {
        return over("more commands than the limit (stream_limits::max_commands)", "commands", limits.max_commands);
      }
      if (!resource_names.intern(words[1], limits.max_names, c.resource)) {
        return over("more resources than the limit (stream_limits::max_names)", "resources", limits.max_names);
      }
      if (words.size() == 3) {
        if (words[2].substr(0, 5) != "name=") return fail("`free` takes only name= after the resource");
        if (!detail::valid_name(words[2].substr(5))) {
          return fail("bad name (letters, digits, _ - . only; 1..64 characters)");
        }
        c.label = std::string(words[2].substr(5));
      }
      s.commands.push_back(std::move(c));
      if (eol == text.size()) break;
      continue;
    } else if (verb == "host") {
      c.kind = command_kind::host_access;
    } else if (verb == "host_wait") {
      c.kind = command_kind::host_wait;
    } else {
      return fail_name("unknown command word",
                       detail::unknown_name_text("command word", verb, command_words, more_command_words));
    }
    // Host commands name no queue: their keys start right after the word.
    const bool on_host = c.kind == command_kind::host_access || c.kind == command_kind::host_wait;
    if (!on_host) {
      if (words.size() < 2) return fail("a command needs a queue name after the command word");
      bool found_queue = false;
      for (std::size_t i = 0; i < s.queues.size(); ++i) {
        if (s.queues[i] == words[1]) {
          c.queue = static_cast<std::uint32_t>(i);
          found_queue = true;
        }
      }
      if (!found_queue) return fail("undeclared queue (declare it with `queue <name>` first)");
    }
    if (s.commands.size() >= limits.max_commands) {
      return over("more commands than the limit (stream_limits::max_commands)", "commands", limits.max_commands);
    }
    bool have_semaphore = false, have_value = false, have_subpasses = false;
    // Keys that say one thing about a command may appear once; read= write=
    // global= buffer= image= transition= dep= each add one more element.
    static constexpr std::array<std::string_view, 10> single_keys = {
        "name", "src", "dst", "stages", "event", "events", "subpasses", "semaphore", "value", "by_region"};
    std::uint32_t seen_single_keys = 0;
    auto duplicate_key = [&](std::string_view key) {
      for (std::size_t k = 0; k < single_keys.size(); ++k) {
        if (single_keys[k] != key) continue;
        const std::uint32_t flag = 1u << k;
        if ((seen_single_keys & flag) != 0) return true;
        seen_single_keys |= flag;
      }
      return false;
    };
    for (std::size_t w = on_host ? 1 : 2; w < words.size(); ++w) {
      const std::string_view word = words[w];
      const std::string_view word_key = word.substr(0, word.find('='));
      if (duplicate_key(word_key)) {
        return fail_name("duplicate key on one command",
                         "key '" + std::string(word_key.substr(0, 80)) +
                             "' given twice on one command (name, src, dst, stages, event, events, subpasses, "
                             "semaphore, value and by_region take one value each)");
      }
      if (word == "by_region") {
        if (c.kind != command_kind::pipeline_barrier) return fail("by_region only applies to barriers");
        c.by_region = true;
        continue;
      }
      const std::size_t eq = word.find('=');
      if (eq == std::string_view::npos) return fail("expected key=value");
      const std::string_view key = word.substr(0, eq);
      const std::string_view val = word.substr(eq + 1);
      const bool is_action = c.kind == command_kind::action || c.kind == command_kind::host_access;
      const bool has_barriers = c.kind == command_kind::pipeline_barrier || c.kind == command_kind::wait_events;
      if (key == "name") {
        if (!detail::valid_name(val)) return fail("bad name (letters, digits, _ - . only; 1..64 characters)");
        c.label = std::string(val);
      } else if ((key == "read" || key == "write") && is_action) {
        auto parts = detail::split_n(val, ':', 3);
        if (parts.size() != 3) return fail("an access is STAGE:ACCESS:MEMORY");
        stage_mask m = 0;
        if (!detail::parse_stage(parts[0], m)) {
          return fail_name("unknown pipeline stage",
                           detail::unknown_name_text("stage", parts[0], stage_names, stage_aliases));
        }
        if (std::popcount(m) != 1 || (m & (0x3fffu | host_stage_bit)) == 0) {
          return fail("an access names exactly one pipeline stage");
        }
        access_mask am = 0;
        if (!detail::parse_access_mask(parts[1], am)) return bad_access(parts[1], "unknown access type");
        if (std::popcount(am) != 1) return fail("an access names exactly one access type");
        memory_access a;
        a.stage = static_cast<stage>(std::countr_zero(m));
        a.access = static_cast<access_type>(std::countr_zero(am));
        if (a.write() != (key == "write")) return fail("read= needs a read access type, write= a write access type");
        if (!parse_mem(parts[2], a.mem)) return fail("bad memory range (res, res[a:b] or res[a:b,c:d], a < b)");
        if (c.accesses.size() >= 64) return error(errc::capacity_exceeded, "more than 64 accesses in one command", line_no);
        c.accesses.push_back(a);
      } else if ((key == "src" && (has_barriers)) || (key == "dst" && (has_barriers))) {
        stage_mask m = 0;
        if (!detail::parse_stages(val, m)) return bad_stages(val, "bad stage mask (stage names joined by |)");
        (key == "src" ? c.src_stages : c.dst_stages) = m;
      } else if (key == "stages" && (c.kind == command_kind::set_event || c.kind == command_kind::reset_event)) {
        if (!detail::parse_stages(val, c.src_stages)) return bad_stages(val, "bad stage mask (stage names joined by |)");
      } else if (key == "stages" && c.kind == command_kind::wait_semaphore) {
        if (!detail::parse_stages(val, c.dst_stages)) return bad_stages(val, "bad stage mask (stage names joined by |)");
      } else if ((key == "global" || key == "buffer" || key == "image" || key == "transition") && has_barriers) {
        const bool global = key == "global";
        auto parts = global ? split(val, ':') : detail::split_n(val, ':', 3);
        if (parts.size() != (global ? 2u : 3u)) {
          return fail(global ? "global=SRCACCESS:DSTACCESS" : "buffer/image/transition=SRCACCESS:DSTACCESS:MEMORY");
        }
        memory_barrier b;
        if (!detail::parse_access_mask(parts[0], b.src_access)) {
          return bad_access(parts[0], "bad access mask (access names joined by |, or 0)");
        }
        if (!detail::parse_access_mask(parts[1], b.dst_access)) {
          return bad_access(parts[1], "bad access mask (access names joined by |, or 0)");
        }
        if (!global && !parse_mem(parts[2], b.mem)) return fail("bad memory range (res, res[a:b] or res[a:b,c:d], a < b)");
        b.transition = key == "transition";
        if (c.barriers.size() >= 64) return error(errc::capacity_exceeded, "more than 64 memory barriers", line_no);
        c.barriers.push_back(b);
      } else if (key == "event" && (c.kind == command_kind::set_event || c.kind == command_kind::reset_event)) {
        if (!c.events.empty() || !detail::valid_name(val)) return fail("set/reset take one event=NAME");
        std::uint32_t id = 0;
        if (!event_names.intern(val, limits.max_names, id)) {
          return over("too many names (stream_limits::max_names)", "event names", limits.max_names);
        }
        c.events.push_back(id);
      } else if (key == "events" && c.kind == command_kind::wait_events) {
        for (std::string_view e : split(val, ',')) {
          if (!detail::valid_name(e)) return fail("bad event name");
          if (c.events.size() >= 64) return error(errc::capacity_exceeded, "more than 64 events", line_no);
          std::uint32_t id = 0;
          if (!event_names.intern(e, limits.max_names, id)) {
            return over("too many names (stream_limits::max_names)", "event names", limits.max_names);
          }
          c.events.push_back(id);
        }
      } else if (key == "subpasses" && c.kind == command_kind::begin_render_pass) {
        std::uint64_t n = 0;
        if (!detail::parse_u64(val, n) || n == 0 || n > 64) return fail("subpasses=N with N in 1..64");
        c.subpass_count = static_cast<std::uint32_t>(n);
        have_subpasses = true;
      } else if (key == "dep" && c.kind == command_kind::begin_render_pass) {
        auto parts = split(val, ':');
        if (parts.size() != 6 && parts.size() != 7) {
          return fail("dep=SRC:DST:SRCSTAGES:DSTSTAGES:SRCACCESS:DSTACCESS[:by_region]");
        }
        subpass_dependency d;
        for (int k = 0; k < 2; ++k) {
          std::uint64_t n = 0;
          std::uint32_t& slot = k == 0 ? d.src : d.dst;
          if (parts[static_cast<std::size_t>(k)] == "EXTERNAL") {
            slot = subpass_external;
          } else if (detail::parse_u64(parts[static_cast<std::size_t>(k)], n) && n < 64) {
            slot = static_cast<std::uint32_t>(n);
          } else {
            return fail("dep subpass must be a number below 64 or EXTERNAL");
          }
        }
        if (!detail::parse_stages(parts[2], d.src_stages)) return bad_stages(parts[2], "bad stage mask in dep");
        if (!detail::parse_stages(parts[3], d.dst_stages)) return bad_stages(parts[3], "bad stage mask in dep");
        if (!detail::parse_access_mask(parts[4], d.src_access)) return bad_access(parts[4], "bad access mask in dep");
        if (!detail::parse_access_mask(parts[5], d.dst_access)) return bad_access(parts[5], "bad access mask in dep");
        if (parts.size() == 7) {
          if (parts[6] != "by_region") return fail("the 7th field of dep can only be by_region");
          d.by_region = true;
        }
        if (c.dependencies.size() >= 256) return error(errc::capacity_exceeded, "more than 256 deps", line_no);
        c.dependencies.push_back(d);
      } else if (key == "semaphore" && (c.kind == command_kind::signal_semaphore ||
                                        c.kind == command_kind::wait_semaphore || c.kind == command_kind::host_wait)) {
        if (!detail::valid_name(val)) return fail("bad semaphore name");
        std::uint32_t id = 0;
        if (!semaphore_names.intern(val, limits.max_names, id)) {
          return over("too many names (stream_limits::max_names)", "semaphore names", limits.max_names);
        }
        c.semaphore = id;
        have_semaphore = true;
      } else if (key == "value" && (c.kind == command_kind::signal_semaphore ||
                                     c.kind == command_kind::wait_semaphore || c.kind == command_kind::host_wait)) {
        if (!detail::parse_u64(val, c.value)) return fail("value=N needs a decimal number");
        have_value = true;
      } else {
        static constexpr std::array<std::string_view, 17> keys = {
            "name", "read", "write", "src", "dst", "stages", "global", "buffer", "image",
            "transition", "event", "events", "subpasses", "dep", "semaphore", "value", "by_region"};
        bool known = false;
        for (std::string_view k : keys) known = known || k == key;
        if (!known) return fail_name("unknown key", detail::unknown_name_text("key", key, keys));
        return fail_name("key not valid for this command",
                         "key '" + std::string(key) + "' is not valid for `" + std::string(verb) + "`");
      }
    }
    if ((c.kind == command_kind::signal_semaphore || c.kind == command_kind::wait_semaphore ||
         c.kind == command_kind::host_wait) &&
        (!have_semaphore || !have_value)) {
      return fail("signal/wait/host_wait need semaphore= and value=");
    }
    if (c.kind == command_kind::host_access && c.accesses.empty()) {
      return fail("host needs read= or write= (HOST:HOST_READ:MEM, HOST:HOST_WRITE:MEM)");
    }
    if (c.kind == command_kind::begin_render_pass && !have_subpasses) return fail("begin_render_pass needs subpasses=N");
    if (c.kind == command_kind::pipeline_barrier && (c.src_stages == 0 || c.dst_stages == 0)) {
      return fail("a barrier needs src= and dst=");
    }
    if (c.kind == command_kind::wait_events && (c.events.empty() || c.dst_stages == 0)) {
      return fail("wait_events needs events= and dst=");
    }
    if ((c.kind == command_kind::set_event || c.kind == command_kind::reset_event) &&
        (c.events.empty() || c.src_stages == 0)) {
      return fail("set_event/reset_event need event= and stages=");
    }
    if (c.kind == command_kind::wait_semaphore && c.dst_stages == 0) return fail("wait needs stages=");
    s.commands.push_back(std::move(c));
    if (eol == text.size()) break;
  }
  return s;
}

//===-- writing ---------------------------------------------------------------===//

/// The text of a stage mask ("VERTEX_SHADER|TRANSFER").
[[nodiscard]] inline std::string stages_text(stage_mask m) {
  std::string out;
  auto add = [&](std::string_view n) {
    if (!out.empty()) out += '|';
    out += n;
  };
  for (std::size_t i = 0; i < named_stage_count; ++i) {
    if ((m >> i & 1u) != 0) add(stage_names[i]);
  }
  if ((m & all_graphics_bit) != 0) add("ALL_GRAPHICS");
  if ((m & all_commands_bit) != 0) add("ALL_COMMANDS");
  return out.empty() ? std::string("0") : out;
}

[[nodiscard]] inline std::string access_text(access_mask m) {
  std::string out;
  for (std::size_t i = 0; i < access_type_count; ++i) {
    if ((m >> i & 1u) == 0) continue;
    if (!out.empty()) out += '|';
    out += access_names[i];
  }
  return out.empty() ? std::string("0") : out;
}

[[nodiscard]] inline std::string memory_text(const stream& s, const memory_range& m) {
  if (m.is_global()) return "GLOBAL";
  std::string out = m.resource < s.resources.size() ? s.resources[m.resource] : "res" + std::to_string(m.resource);
  const bool x_whole = m.x0 == 0 && m.x1 == whole;
  const bool y_whole = m.y0 == 0 && m.y1 == whole;
  if (x_whole && y_whole) return out;
  auto num = [](std::uint64_t v) { return v == whole ? std::string("18446744073709551615") : std::to_string(v); };
  out += '[' + num(m.x0) + ':' + num(m.x1);
  if (!y_whole) out += ',' + num(m.y0) + ':' + num(m.y1);
  out += ']';
  return out;
}

/// The label a report uses for command `i` ("draw1", or "barrier#3").
[[nodiscard]] inline std::string command_label(const stream& s, std::uint32_t i) {
  if (i >= s.commands.size()) return "#" + std::to_string(i);
  const command& c = s.commands[i];
  if (!c.label.empty()) return c.label;
  return std::string(to_string(c.kind)) + "#" + std::to_string(i);
}

/// Writes `s` in the text format; parse_stream(to_text(s)) gives `s` back.
[[nodiscard]] inline std::string to_text(const stream& s) {
  std::string out;
  for (const std::string& q : s.queues) out += "queue " + q + "\n";
  auto name = [](const std::vector<std::string>& v, std::uint32_t i) {
    return i < v.size() ? v[i] : "n" + std::to_string(i);
  };
  for (const command& c : s.commands) {
    if (c.kind == command_kind::free_resource) {
      out += "free " + name(s.resources, c.resource);
      if (!c.label.empty()) out += " name=" + c.label;
      out += '\n';
      continue;
    }
    out += c.kind == command_kind::action ? "action" : std::string(to_string(c.kind));
    if (c.kind != command_kind::host_access && c.kind != command_kind::host_wait) {
      out += ' ';
      out += name(s.queues, c.queue);
    }
    if (!c.label.empty()) out += " name=" + c.label;
    switch (c.kind) {
      case command_kind::action:
      case command_kind::host_access:
        for (const memory_access& a : c.accesses) {
          out += a.write() ? " write=" : " read=";
          out += std::string(to_string(a.stage)) + ":" + std::string(to_string(a.access)) + ":" + memory_text(s, a.mem);
        }
        break;
      case command_kind::pipeline_barrier:
      case command_kind::wait_events:
        if (c.kind == command_kind::wait_events) {
          out += " events=";
          for (std::size_t i = 0; i < c.events.size(); ++i) out += (i ? "," : "") + name(s.events, c.events[i]);
        }
        if (c.src_stages != 0) out += " src=" + stages_text(c.src_stages);
        out += " dst=" + stages_text(c.dst_stages);
        if (c.by_region) out += " by_region";
        for (const memory_barrier& b : c.barriers) {
          if (b.mem.is_global()) {
            out += " global=" + access_text(b.src_access) + ":" + access_text(b.dst_access);
          } else {
            out += b.transition ? " transition=" : " image=";
            out += access_text(b.src_access) + ":" + access_text(b.dst_access) + ":" + memory_text(s, b.mem);
          }
        }
        break;
      case command_kind::set_event:
      case command_kind::reset_event:
        out += " event=" + name(s.events, c.events.empty() ? 0 : c.events[0]);
        out += " stages=" + stages_text(c.src_stages);
        break;
      case command_kind::begin_render_pass:
        out += " subpasses=" + std::to_string(c.subpass_count);
        for (const subpass_dependency& d : c.dependencies) {
          auto sp = [](std::uint32_t v) { return v == subpass_external ? std::string("EXTERNAL") : std::to_string(v); };
          out += " dep=" + sp(d.src) + ":" + sp(d.dst) + ":" + stages_text(d.src_stages) + ":" +
                 stages_text(d.dst_stages) + ":" + access_text(d.src_access) + ":" + access_text(d.dst_access);
          if (d.by_region) out += ":by_region";
        }
        break;
      case command_kind::signal_semaphore:
      case command_kind::wait_semaphore:
      case command_kind::host_wait:
        out += " semaphore=" + name(s.semaphores, c.semaphore) + " value=" + std::to_string(c.value);
        if (c.kind == command_kind::wait_semaphore) out += " stages=" + stages_text(c.dst_stages);
        break;
      default: break;
    }
    out += '\n';
  }
  return out;
}

namespace detail {
inline std::string stage_set_text(stage_set s) {
  std::string out;
  for (std::size_t i = 0; i < named_stage_count; ++i) {
    if ((s >> i & 1u) == 0) continue;
    if (!out.empty()) out += '|';
    out += stage_names[i];
  }
  return out;
}
}  // namespace detail

/// One line describing hazard `h` of stream `s`.
[[nodiscard]] inline std::string to_text(const stream& s, const hazard& h) {
  std::string out(to_string(h.kind));
  out += ": ";
  auto side = [&](std::uint32_t c, stage_set st, access_mask a) {
    std::string t = command_label(s, c);
    if (c < s.commands.size()) {
      const command& cmd = s.commands[c];
      const std::uint32_t q = cmd.queue;
      if (cmd.kind == command_kind::host_access || cmd.kind == command_kind::host_wait) {
        t += " (host)";
      } else if (q < s.queues.size()) {
        t += " (" + s.queues[q] + ")";
      }
    }
    if (st != 0) t += " " + detail::stage_set_text(st);
    if (a != 0) t += " " + access_text(a);
    return t;
  };
  out += side(h.first, h.first_stages, h.first_access);
  out += " -> ";
  out += side(h.second, h.second_stages, h.second_access);
  if (h.kind == hazard_kind::event_race) {
    out += " on event " + (h.event < s.events.size() ? s.events[h.event] : std::to_string(h.event));
  } else {
    out += " on " + memory_text(s, h.range);
  }
  return out;
}

}  // namespace check
CAUSAL_END_NAMESPACE
