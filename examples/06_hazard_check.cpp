// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// 06_hazard_check: a command-line synchronization hazard checker. It reads a
// command stream in the text format of <causal/check/stream_text.hpp>,
// records it in a causal::check::checker, prints the hazards (both
// commands, stages, access types, overlapping range) and, with --dot FILE,
// writes the dependency graph with the hazards in red as Graphviz DOT.
// Alike hazards (one kind, one memory range or event, one pair of command
// kinds) are printed once with how many there are, and at most 1000 of
// them (--max-hazards N; 0 for no cap); --all-hazards prints every one.
//
//   06_hazard_check [--dot out.dot] [--quiet] [--all-hazards]
//                   [--max-hazards N] [--max-bytes N] [--max-commands N]
//                   [--warnings] [stream.txt]
//
// The verdict is Vulkan's. --warnings also checks a rule stricter than
// Vulkan's (no invalidate of memory with unflushed writes) and prints what
// it finds apart, as warnings; they do not change the exit status.
//
// Streams are limited to 1 MiB and 65536 commands by default (the stream
// text format's stream_limits); --max-bytes and --max-commands raise them.
//   06_hazard_check --help
//
// Exit status: 0 when the stream is clean, 2 when it has hazards, 1 on bad
// input or bad arguments (the error names the line, the word, and for a
// misspelled name the closest valid one), 3 when the --dot file cannot be
// written. With no file it checks a built-in sample (the memory-barrier
// example, once as written and once without its flush), checks the
// expected verdicts (clean, then two hazards), and exits 0 or 1, so it runs
// as a test. Sample streams: examples/streams/*.txt.
//
// Build by hand: c++ -std=c++20 -I include examples/06_hazard_check.cpp
#include <causal/check/checker.hpp>
#include <causal/check/dot.hpp>
#include <causal/check/stream_text.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

namespace {

using namespace causal::check;

struct outcome {
  bool ok = false;
  std::uint64_t hazards = 0;
  bool dot_failed = false;
};

outcome check_text(const std::string& text, const char* what, const char* dot_path, bool quiet,
                   const checker_options& options = {}, const stream_limits& limits = {}) {
  std::string diagnostic;
  auto parsed = parse_stream(text, &diagnostic, limits);
  if (!parsed) {
    const bool limit = parsed.error_value().code() == causal::errc::capacity_exceeded &&
                       (diagnostic.find("than the limit") != std::string::npos);
    std::fprintf(stderr, "%s: %s%s\n", what, diagnostic.c_str(),
                 limit ? " (raise it with --max-bytes or --max-commands)" : "");
    return {};
  }
  checker ck(options);
  for (std::size_t i = 0; i < parsed->commands.size(); ++i) {
    if (causal::status s = ck.append(parsed->commands[i]); !s) {
      std::fprintf(stderr, "%s: command %zu (%s): %s\n", what, i, command_label(*parsed, static_cast<std::uint32_t>(i)).c_str(),
                   std::string(s.error_value().message()).c_str());
      return {};
    }
  }
  if (causal::status s = ck.finish(); !s) {
    std::fprintf(stderr, "%s: %s\n", what, std::string(s.error_value().message()).c_str());
    return {};
  }
  const std::uint64_t found = ck.hazards_found();
  if (!quiet) {
    std::printf("%s: %zu commands, %llu hazard%s", what, parsed->commands.size(),
                static_cast<unsigned long long>(found), found == 1 ? "" : "s");
    if (ck.hazards().size() != found) std::printf(" (%zu listed)", ck.hazards().size());
    std::printf("\n");
    for (std::size_t i = 0; i < ck.hazards().size(); ++i) {
      std::printf("  %s", to_text(*parsed, ck.hazards()[i]).c_str());
      if (const std::uint64_t more = ck.hazard_count(i) - 1; more != 0) {
        std::printf("  [and %llu more like it]", static_cast<unsigned long long>(more));
      }
      std::printf("\n");
    }
    if (ck.dropped_hazards() != 0) {
      std::printf("  ... %llu more not listed (--max-hazards)\n",
                  static_cast<unsigned long long>(ck.dropped_hazards()));
    }
    if (options.warnings) {
      std::printf("%s: %zu warning%s (stricter than Vulkan's rules)\n", what, ck.warnings().size(),
                  ck.warnings().size() == 1 ? "" : "s");
      for (const hazard& h : ck.warnings()) std::printf("  warning: %s\n", to_text(*parsed, h).c_str());
    }
  }
  if (dot_path != nullptr) {
    std::ofstream out(dot_path);
    out << to_dot(*parsed, ck);
    if (!out) {
      std::fprintf(stderr, "06_hazard_check: cannot write --dot file %s\n", dot_path);
      return {true, found, true};
    }
  }
  return {true, found, false};
}

const char* sample_clean = R"(queue gfx
draw gfx name=draw1 write=VERTEX_SHADER:SHADER_WRITE:img_1[0:1,0:1]
barrier gfx name=barrier src=VERTEX_SHADER|TRANSFER dst=FRAGMENT_SHADER|TOP_OF_PIPE global=0:SHADER_READ image=SHADER_WRITE:0:img_1[0:1,0:1]
draw gfx name=draw2 read=FRAGMENT_SHADER:SHADER_READ:img_1[0:1,0:1]
)";

const char* sample_no_flush = R"(queue gfx
draw gfx name=draw1 write=VERTEX_SHADER:SHADER_WRITE:img_1[0:1,0:1]
barrier gfx name=barrier src=VERTEX_SHADER|TRANSFER dst=FRAGMENT_SHADER|TOP_OF_PIPE global=0:SHADER_READ
draw gfx name=draw2 read=FRAGMENT_SHADER:SHADER_READ:img_1[0:1,0:1]
)";

constexpr int exit_bad_input = 1;
constexpr int exit_dot_failed = 3;

void print_help() {
  std::printf(
      "usage: 06_hazard_check [--dot FILE] [--quiet] [--all-hazards] [--max-hazards N]\n"
      "                       [--max-bytes N] [--max-commands N] [--warnings] [STREAM]\n"
      "       06_hazard_check --help\n"
      "\n"
      "Checks a GPU command stream for synchronization hazards (read-after-write,\n"
      "write-after-write, write-after-read races, missing flushes or invalidates)\n"
      "by Vulkan's execution and memory dependency rules, and prints each one with\n"
      "both commands and the memory range. Without STREAM it checks a built-in\n"
      "sample and exits 0 when the verdicts are the expected ones.\n"
      "\n"
      "options:\n"
      "  --dot FILE   also write the dependency graph, hazards in red, as Graphviz DOT\n"
      "  --quiet      print nothing but errors (the exit status tells the verdict)\n"
      "  --all-hazards  print every hazard (default: alike ones -- same kind, memory\n"
      "               range and pair of command kinds -- once, with their count)\n"
      "  --max-hazards N  list at most N hazards (default 1000; 0: no limit); the\n"
      "               rest are counted\n"
      "  --warnings   also check a rule stricter than Vulkan's (no invalidate of\n"
      "               memory with unflushed writes) and print its findings apart;\n"
      "               they do not change the exit status\n"
      "  --max-bytes N    accept streams of up to N bytes (default 1048576)\n"
      "  --max-commands N accept streams of up to N commands (default 65536)\n"
      "  --help       this text\n"
      "\n"
      "exit status: 0 clean, 2 hazards found, 1 bad input or arguments,\n"
      "             3 the --dot file could not be written\n"
      "\n"
      "input: one command per line; '#' starts a comment.\n"
      "  queue NAME                       declare a queue before its first use\n"
      "  COMMAND QUEUE key=value ...      COMMAND is one of draw dispatch copy clear\n"
      "      fill update action (action commands), barrier, set_event, reset_event,\n"
      "      wait_events, begin_render_pass, next_subpass, end_render_pass,\n"
      "      signal, wait, submit\n"
      "  host key=value ...               the host reads / writes mapped memory\n"
      "      (read=HOST:HOST_READ:MEM write=HOST:HOST_WRITE:MEM); a later submit\n"
      "      makes its writes visible to that queue\n"
      "  host_wait semaphore=S value=N    the host waits (a fence: a semaphore)\n"
      "  free RES                         RES's life ends (a later use is a new one)\n"
      "  keys: name=LABEL  read=STAGE:ACCESS:MEM  write=STAGE:ACCESS:MEM\n"
      "        src=STAGES dst=STAGES [by_region]  global=SRCACC:DSTACC\n"
      "        buffer=SRCACC:DSTACC:MEM  image=SRCACC:DSTACC:MEM  transition=...\n"
      "        event=E stages=STAGES  events=E1,E2  subpasses=N\n"
      "        dep=SRC:DST:SRCSTAGES:DSTSTAGES:SRCACC:DSTACC[:by_region]\n"
      "        semaphore=S value=N [stages=STAGES]\n"
      "  STAGES: stage names joined by |, also TOP BOTTOM ALL_GRAPHICS ALL_COMMANDS:\n"
      "   ");
  for (std::string_view name : stage_names) std::printf(" %.*s", static_cast<int>(name.size()), name.data());
  std::printf(
      "\n"
      "  ACCESS: access names joined by |, or 0; MEMORY_READ / MEMORY_WRITE:\n"
      "   ");
  for (std::string_view name : access_names) std::printf(" %.*s", static_cast<int>(name.size()), name.data());
  std::printf(
      "\n"
      "  MEM: res, res[a:b] (bytes a..b-1) or res[a:b,c:d] (mips, layers)\n"
      "\n"
      "example (a write, a barrier that flushes and invalidates it, a read):\n"
      "  queue gfx\n"
      "  draw gfx name=draw1 write=VERTEX_SHADER:SHADER_WRITE:img[0:1,0:1]\n"
      "  barrier gfx src=VERTEX_SHADER dst=FRAGMENT_SHADER image=SHADER_WRITE:SHADER_READ:img[0:1,0:1]\n"
      "  draw gfx name=draw2 read=FRAGMENT_SHADER:SHADER_READ:img[0:1,0:1]\n"
      "\n"
      "more samples: examples/streams/*.txt\n");
}

int usage_error(const char* what, std::string_view arg) {
  std::fprintf(stderr,
               "06_hazard_check: %s '%.*s'\nusage: 06_hazard_check [--dot FILE] [--quiet] [--all-hazards] "
               "[--max-hazards N] [--max-bytes N] [--max-commands N] [--warnings] [STREAM] (--help for more)\n",
               what, static_cast<int>(arg.size()), arg.data());
  return exit_bad_input;
}

}  // namespace

int main(int argc, char** argv) {
  const char* dot_path = nullptr;
  const char* file = nullptr;
  bool quiet = false;
  checker_options options;
  options.deduplicate = true;
  options.max_hazards = 1000;
  stream_limits limits;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--help" || a == "-h") {
      print_help();
      return 0;
    }
    if (a == "--dot") {
      if (i + 1 >= argc) return usage_error("--dot needs a file name after", a);
      dot_path = argv[++i];
    } else if (a == "--quiet") {
      quiet = true;
    } else if (a == "--warnings") {
      options.warnings = true;
    } else if (a == "--all-hazards") {
      options.deduplicate = false;
    } else if (a == "--max-hazards" || a == "--max-bytes" || a == "--max-commands") {
      if (i + 1 >= argc) return usage_error("a number must follow", a);
      const char* text = argv[++i];
      char* end = nullptr;
      const unsigned long long n = std::strtoull(text, &end, 10);
      const bool zero_ok = a == "--max-hazards";
      if (end == text || *end != '\0' || text[0] == '-' || n > (1ull << 32) || (n == 0 && !zero_ok)) {
        std::fprintf(stderr, "06_hazard_check: %.*s needs a count from %d to 2^32, not '%s'\n",
                     static_cast<int>(a.size()), a.data(), zero_ok ? 0 : 1, text);
        return exit_bad_input;
      }
      if (a == "--max-hazards") options.max_hazards = static_cast<std::size_t>(n);
      if (a == "--max-bytes") limits.max_text_bytes = static_cast<std::size_t>(n);
      if (a == "--max-commands") limits.max_commands = static_cast<std::size_t>(n);
    } else if (!a.empty() && a[0] == '-') {
      return usage_error("unknown option", a);
    } else if (file != nullptr) {
      return usage_error("one stream at a time; extra argument", a);
    } else {
      file = argv[i];
    }
  }
  // The graph needs the clocks of every command; a plain check keeps only
  // the live state (checker_options::history).
  options.history = dot_path != nullptr;
  if (file != nullptr) {
    std::error_code ec;
    if (std::filesystem::is_directory(file, ec)) {
      std::fprintf(stderr, "06_hazard_check: %s is a directory; give one stream file\n", file);
      return exit_bad_input;
    }
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "06_hazard_check: cannot open %s\n", file);
      return exit_bad_input;
    }
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) {
      std::fprintf(stderr, "06_hazard_check: cannot read %s\n", file);
      return exit_bad_input;
    }
    const outcome o = check_text(text.str(), file, dot_path, quiet, options, limits);
    if (!o.ok) return exit_bad_input;
    if (o.dot_failed) return exit_dot_failed;
    return o.hazards == 0 ? 0 : 2;
  }
  // Built-in sample: the memory-barrier example is clean; without its flush
  // draw2's read is unflushed (and, a warning with --warnings, the GLOBAL
  // invalidate meets dirty memory).
  const outcome clean = check_text(sample_clean, "memory-barrier example", nullptr, quiet, options);
  const outcome broken =
      check_text(sample_no_flush, "memory-barrier example without the flush", dot_path, quiet, options);
  if (clean.dot_failed || broken.dot_failed) return exit_dot_failed;
  const bool as_expected = clean.ok && clean.hazards == 0 && broken.ok && broken.hazards == 1;
  std::printf("%s\n", as_expected ? "verdicts as expected: clean, then 1 hazard"
                                  : "FAIL: verdicts differ from the expected (clean, then 1 hazard)");
  return as_expected ? 0 : 1;
}
