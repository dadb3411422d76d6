// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// 11_scenarios: the comparison of binary events, plain timeline semaphores
// and frontiers (docs/observability.md) made executable. Every scenario (a JSON file, see
// examples/scenarios/README.md) runs three ways on the same simulated
// devices -- binary events, plain timeline semaphores, causal frontiers
// (basic_queue, death-frontier pool, collective channels) -- and the
// program prints, measured, not asserted: device waits issued, waits
// elided, events created, host queries, bytes of sync metadata, buffer
// tracking entries and the simulated makespan; one table per scenario,
// then a summary table. --json and --html write the whole invocation as
// one machine-readable document and as one self-contained page
// (<causal/sim/report.hpp>; the schema is in examples/scenarios/README.md).
//
// Usage (also `11_scenarios --help`):
//   11_scenarios [--dir DIR] [--out DIR] [--width W] [--depth D]
//                [--share-lanes] [--devices N] [--scheduling S]
//                [--frontier-capacity K] [--zero-tick] [--csv FILE]
//                [--json FILE] [--html FILE] [--quiet] [FILE.json ...]
//   --dir DIR      where the shipped scenarios are (default examples/scenarios)
//   FILE.json      run these scenario files instead of the shipped ones
//   --out DIR      write <name>.trace.json (Perfetto / chrome://tracing) and
//                  <name>.dot (Graphviz) of each frontiers run into DIR
//   --width W      W independent copies of each scenario (own devices)
//   --depth D      D chained iterations (through the file's cross-iteration
//                  edges, else copy j+1's roots after copy j's sinks)
//   --share-lanes  the width copies share the devices' lanes
//   --devices N    the size of every device group ("count" in the file)
//   --scheduling S in-order (default: each lane in file order), ready-first
//                  (ready operations take free lanes in definition order),
//                  or both (each scenario twice, "name@ready-first" second)
//   --frontier-capacity K  entries per frontier: 4, 8, 12 (default), 16, 32
//   --zero-tick    a device wait costs nothing (costs.device_wait = 0 in
//                  every scenario): the pure ordering effect of elision
//   --csv FILE     append one row per scenario and model (for plot.py)
//   --json FILE    write every scenario (after scaling), model and
//                  operation as one JSON document: totals, per operation
//                  its times, waits (issued, elided by reason), its
//                  dependencies and whether each got a wait, and (frontiers)
//                  the frontier it carries
//   --html FILE    write one self-contained HTML page: per scenario a
//                  lanes-over-time chart per model (bars, wait arrows:
//                  issued solid, elided dashed; click a bar for its
//                  frontier) and the summary table
//   --quiet        print only the summary table
//
// Every run checks itself (each operation starts after its dependencies,
// no buffer is reused before its previous owner's last use), and the
// speculation scenario checks its cancellation set against the file's
// reference answer. Exit status 1 on any failure, 2 on bad arguments or a
// bad scenario file (the loader says where and why).
//
// Build by hand: c++ -std=c++20 -I include examples/11_scenarios.cpp -pthread
#include <causal/sim/report.hpp>
#include <causal/sim/scenario.hpp>
#include <causal/sim/simulator.hpp>
#include <causal/trace.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace {

namespace sim = causal::sim;

struct options {
  std::string dir = "examples/scenarios";
  std::string out;
  std::string csv;
  std::string json;
  std::string html;
  bool zero_tick = false;
  bool share_lanes = false;
  std::vector<sim::scheduling> schedulings{sim::scheduling::in_order};
  std::size_t frontier_capacity = causal::frontier::capacity;
  std::size_t width = 1;
  std::size_t depth = 1;
  std::optional<std::size_t> devices;
  bool quiet = false;
  std::vector<std::string> files;
};

struct row {
  std::string name;
  std::array<sim::metrics, 3> m;
};

unsigned long long u(std::uint64_t v) { return static_cast<unsigned long long>(v); }

bool parse_count(const char* text, std::size_t& out) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0' || v == 0 || v > 1u << 20) return false;
  out = static_cast<std::size_t>(v);
  return true;
}

void print_help() {
  std::printf(
      "usage: 11_scenarios [--dir DIR] [--out DIR] [--width W] [--depth D] [--share-lanes]\n"
      "                    [--devices N] [--scheduling S] [--frontier-capacity K]\n"
      "                    [--zero-tick] [--csv FILE] [--json FILE] [--html FILE]\n"
      "                    [--quiet] [FILE.json ...]\n"
      "       11_scenarios --help\n"
      "\n"
      "Runs each scenario (a DAG of operations on simulated devices) three ways --\n"
      "binary events, plain timeline semaphores, causal frontiers -- and prints what\n"
      "each synchronization model cost: device waits issued and elided, events, host\n"
      "queries, bytes of sync metadata, buffer tracking entries, simulated makespan.\n"
      "\n"
      "options:\n"
      "  --dir DIR      where the scenario files are (default examples/scenarios)\n"
      "  FILE.json      run these files instead of every .json in --dir\n"
      "  --out DIR      write <name>.trace.json (Perfetto) and <name>.dot of each\n"
      "                 frontiers run into DIR\n"
      "  --width W      W independent copies of each scenario\n"
      "  --depth D      D chained iterations: through the file's cross-iteration\n"
      "                 edges (after_previous, \"previous\" waits), else copy j+1's\n"
      "                 first operations after copy j's last ones\n"
      "  --share-lanes  the width copies share the devices' lanes (they compete)\n"
      "  --devices N    the size of every device group (\"count\" in the file)\n"
      "  --scheduling S in-order (default: each lane runs the file's order),\n"
      "                 ready-first (ready operations take free lanes in definition\n"
      "                 order), or both (each scenario twice)\n"
      "  --frontier-capacity K  entries a frontier holds: 4, 8, 12 (default), 16, 32\n"
      "  --zero-tick    a device wait costs nothing (costs.device_wait = 0 in every\n"
      "                 scenario; the default is 1 us): the pure ordering effect\n"
      "  --csv FILE     append one row per scenario and model (for plot.py)\n"
      "  --json FILE    write the whole invocation as one JSON document: per scenario\n"
      "                 and model the totals and, per operation, its lanes, times,\n"
      "                 waits issued and elided (by reason), its dependencies and\n"
      "                 whether each needed a wait, and (frontiers) the frontier its\n"
      "                 signal carries (schema: examples/scenarios/README.md)\n"
      "  --html FILE    write one self-contained HTML page: per scenario and model a\n"
      "                 lanes-over-time chart (operations as bars, waits as arrows:\n"
      "                 issued solid, elided dashed; point at a bar for its frontier)\n"
      "                 and the summary table\n"
      "  --quiet        print only the summary table\n"
      "  --help         this text\n"
      "\n"
      "exit status: 0 all runs sound, 1 a run failed a check, 2 bad arguments or\n"
      "             a bad scenario file (the message says where and why)\n"
      "\n"
      "input: JSON, see examples/scenarios/README.md. A small one:\n"
      "  {\"name\": \"cross_queue\", \"title\": \"one wait across queues\",\n"
      "   \"devices\": [{\"name\": \"gpu\", \"lanes\": 2}],\n"
      "   \"ops\": [{\"name\": \"a\", \"queue\": \"gpu.0\", \"duration\": 10},\n"
      "           {\"name\": \"b\", \"queue\": \"gpu.1\", \"duration\": 10, \"after\": [\"a\"]}]}\n"
      "\n"
      "example: 11_scenarios --quiet --width 4 examples/scenarios/03_fork_join.json\n");
}

int usage_error(const char* what, std::string_view arg) {
  std::fprintf(stderr,
               "11_scenarios: %s '%.*s'\n"
               "usage: 11_scenarios [--dir DIR] [--out DIR] [--width W] [--depth D] [--share-lanes] "
               "[--devices N] [--scheduling S] [--frontier-capacity K] [--zero-tick] [--csv FILE] "
               "[--json FILE] [--html FILE] [--quiet] [FILE.json ...] "
               "(--help for more)\n",
               what, static_cast<int>(arg.size()), arg.data());
  return 2;
}

/// The options, or the exit status to end with (0 after --help).
std::variant<options, int> parse_args(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--help" || a == "-h") {
      print_help();
      return 0;
    }
    if (a == "--quiet") {
      o.quiet = true;
    } else if (a == "--zero-tick") {
      o.zero_tick = true;
    } else if (a == "--share-lanes") {
      o.share_lanes = true;
    } else if (a == "--scheduling") {
      if (!has_value) return usage_error("a value must follow", a);
      const std::string_view v = argv[++i];
      if (v == "in-order") {
        o.schedulings = {sim::scheduling::in_order};
      } else if (v == "ready-first") {
        o.schedulings = {sim::scheduling::ready_first};
      } else if (v == "both") {
        o.schedulings = {sim::scheduling::in_order, sim::scheduling::ready_first};
      } else {
        std::fprintf(stderr, "11_scenarios: --scheduling expects in-order, ready-first or both, got \"%s\"\n",
                     argv[i]);
        return 2;
      }
    } else if (a == "--frontier-capacity") {
      if (!has_value) return usage_error("a value must follow", a);
      std::size_t v = 0;
      const bool known = parse_count(argv[++i], v) &&
                         std::find(sim::frontier_capacities.begin(), sim::frontier_capacities.end(), v) !=
                             sim::frontier_capacities.end();
      if (!known) {
        std::fprintf(stderr, "11_scenarios: --frontier-capacity expects 4, 8, 12, 16 or 32, got \"%s\"\n",
                     argv[i]);
        return 2;
      }
      o.frontier_capacity = v;
    } else if (a == "--dir" || a == "--out" || a == "--csv" || a == "--json" || a == "--html") {
      if (!has_value) return usage_error("a value must follow", a);
      std::string& target = a == "--dir" ? o.dir : a == "--out" ? o.out : a == "--csv" ? o.csv
                            : a == "--json" ? o.json : o.html;
      target = argv[++i];
    } else if (a == "--width" || a == "--depth" || a == "--devices") {
      if (!has_value) return usage_error("a value must follow", a);
      std::size_t v = 0;
      if (!parse_count(argv[++i], v)) {
        std::fprintf(stderr, "11_scenarios: %s expects a positive integer up to 1048576, got \"%s\"\n",
                     argv[i - 1], argv[i]);
        return 2;
      }
      if (a == "--width") o.width = v;
      if (a == "--depth") o.depth = v;
      if (a == "--devices") o.devices = v;
    } else if (!a.empty() && a[0] != '-') {
      o.files.emplace_back(a);
    } else {
      return usage_error("unknown option", a);
    }
  }
  return o;
}

void print_table(const sim::scenario& s, const std::array<sim::run_result, 3>& runs) {
  std::printf("\n== %s  [%s: %zu operations, %zu queues]\n", s.title.c_str(), s.name.c_str(),
              s.ops.size(), s.queues.size());
  if (!s.description.empty()) std::printf("   %s\n", s.description.c_str());
  std::printf("   %-14s %12s %7s %7s %13s %11s %9s %10s %12s\n", "model", "device waits", "elided",
              "events", "host queries", "metadata B", "tracking", "x-workload", "makespan us");
  for (const sim::run_result& r : runs) {
    const sim::metrics& t = r.totals;
    std::printf("   %-14s %12llu %7llu %7llu %13llu %11llu %9llu %10llu %12.1f\n",
                std::string(sim::to_string(r.which)).c_str(), u(t.device_waits), u(t.waits_elided),
                u(t.events_created), u(t.host_queries), u(t.metadata_bytes), u(t.tracking_entries),
                u(t.cross_workload_waits), t.makespan);
  }
  if (!s.claim.empty()) std::printf("   claim: %s\n", s.claim.c_str());
  const sim::run_result& f = runs[2];
  if (f.first_tainted) {
    std::printf("   taint: %llu operation(s) carried a frontier that overflowed (entries evicted), "
                "first \"%s\"; --frontier-capacity widens it\n",
                u(f.totals.tainted_operations), s.ops[*f.first_tainted].name.c_str());
  }
  for (std::size_t i = 0; i < s.ops.size(); ++i) {
    if (!s.ops[i].show_frontier) continue;
    std::printf("   frontier of %-10s %s\n", s.ops[i].name.c_str(),
                causal::to_string(f.knowledge[i]).c_str());
  }
}

std::string names_of(const sim::scenario& s, const std::vector<std::size_t>& ops) {
  std::string out;
  for (std::size_t i : ops) out += (out.empty() ? "" : ", ") + s.ops[i].name;
  return out.empty() ? "(none)" : out;
}

/// Speculation: the frontier model decides what to cancel; a tainted copy
/// of the same frontiers must refuse.
bool speculation(const sim::scenario& s, const sim::run_result& f, bool quiet) {
  const sim::speculation_report report = sim::analyze_speculation(s, f);
  bool ok = !report.refused_at && report.cancel == s.speculation->expect_cancel;
  sim::run_result tainted = f;
  tainted.knowledge[s.speculation->reject_from].set_tainted();
  const sim::speculation_report refused = sim::analyze_speculation(s, tainted);
  ok = ok && refused.refused_at.has_value() && refused.cancel.empty();
  if (!quiet) {
    std::printf("   speculation (frontiers): cancel %s -- %s the reference answer\n",
                names_of(s, report.cancel).c_str(), ok ? "matches" : "DIFFERS FROM");
    std::printf("   speculation with a tainted frontier: %s\n",
                refused.refused_at ? ("refused (" + refused.refusal + ")").c_str() : "DECIDED (wrong)");
    std::printf("   binary events, timelines: no structural information; the application must "
                "keep its own metadata\n");
  }
  return ok;
}

bool write_outputs(const std::string& dir, const sim::scenario& s, const sim::run_result& f) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::span<const causal::trace_record> records(f.trace);
  std::ofstream json(std::filesystem::path(dir) / (s.name + ".trace.json"));
  std::ofstream dot(std::filesystem::path(dir) / (s.name + ".dot"));
  const bool ok = causal::write_chrome_trace(json, records, f.names).ok() &&
                  causal::write_dot(dot, records, f.names).ok();
  if (!ok) std::fprintf(stderr, "cannot write the trace of %s into %s\n", s.name.c_str(), dir.c_str());
  return ok;
}

void append_csv(const std::string& path, const options& o, const sim::scenario& s,
                const std::array<sim::run_result, 3>& runs) {
  const bool fresh = !std::filesystem::exists(path) || std::filesystem::file_size(path) == 0;
  std::ofstream csv(path, std::ios::app);
  if (fresh) {
    csv << "scenario,width,depth,devices,operations,queues,model,device_waits,waits_elided,"
           "events_created,host_queries,metadata_bytes,tracking_entries,cross_workload_waits,"
           "max_frontier_entries,makespan\n";
  }
  for (const sim::run_result& r : runs) {
    const sim::metrics& t = r.totals;
    csv << s.name << ',' << o.width << ',' << o.depth << ',' << (o.devices ? *o.devices : 0) << ','
        << s.ops.size() << ',' << s.queues.size() << ',' << sim::to_string(r.which) << ','
        << t.device_waits << ',' << t.waits_elided << ',' << t.events_created << ','
        << t.host_queries << ',' << t.metadata_bytes << ',' << t.tracking_entries << ','
        << t.cross_workload_waits << ',' << t.max_frontier_entries << ',' << t.makespan << '\n';
  }
}

/// Writes --json and --html; false (after saying why) when a file fails.
bool write_report(const options& o, const std::vector<sim::report_item>& items) {
  sim::report_info info;
  info.generator = "11_scenarios";
  info.settings = {{"width", std::to_string(o.width)},
                   {"depth", std::to_string(o.depth)},
                   {"devices", o.devices ? std::to_string(*o.devices) : std::string("file")},
                   {"zero_tick", o.zero_tick ? "true" : "false"},
                   {"share_lanes", o.share_lanes ? "true" : "false"},
                   {"frontier_capacity", std::to_string(o.frontier_capacity)}};
  bool ok = true;
  const auto write = [&](const std::string& path, auto writer) {
    if (path.empty()) return;
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (f) writer(f, std::span<const sim::report_item>(items), info);
    f.flush();
    if (!f) {
      std::fprintf(stderr, "11_scenarios: cannot write %s\n", path.c_str());
      ok = false;
    }
  };
  write(o.json, [](std::ostream& f, std::span<const sim::report_item> i, const sim::report_info& n) {
    sim::write_json(f, i, n);
  });
  write(o.html, [](std::ostream& f, std::span<const sim::report_item> i, const sim::report_info& n) {
    sim::write_html(f, i, n);
  });
  return ok;
}

void print_summary(const std::vector<row>& rows) {
  std::printf("\nSummary (binary events / timelines / frontiers):\n\n");
  std::printf("| scenario | device waits | host queries | metadata bytes | tracking entries | makespan us |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (const row& r : rows) {
    const auto& m = r.m;
    std::printf("| %s | %llu / %llu / %llu | %llu / %llu / %llu | %llu / %llu / %llu | "
                "%llu / %llu / %llu | %.0f / %.0f / %.0f |\n",
                r.name.c_str(), u(m[0].device_waits), u(m[1].device_waits), u(m[2].device_waits),
                u(m[0].host_queries), u(m[1].host_queries), u(m[2].host_queries),
                u(m[0].metadata_bytes), u(m[1].metadata_bytes), u(m[2].metadata_bytes),
                u(m[0].tracking_entries), u(m[1].tracking_entries), u(m[2].tracking_entries),
                m[0].makespan, m[1].makespan, m[2].makespan);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::variant<options, int> parsed = parse_args(argc, argv);
  if (const int* status = std::get_if<int>(&parsed)) return *status;
  options o = std::get<options>(std::move(parsed));
  if (o.files.empty()) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(o.dir, ec)) {
      if (entry.is_regular_file() && entry.path().extension() == ".json") {
        o.files.push_back(entry.path().string());
      }
    }
    if (ec || o.files.empty()) {
      std::fprintf(stderr, "no scenario files in %s (use --dir or name files)\n", o.dir.c_str());
      return 2;
    }
    std::sort(o.files.begin(), o.files.end());
  }

  int failures = 0;
  std::vector<row> rows;
  const bool report = !o.json.empty() || !o.html.empty();
  std::vector<sim::report_item> items;
  for (const std::string& file : o.files) {
    sim::load_options lo;
    lo.devices = o.devices;
    sim::parsed<sim::scenario> loaded = sim::load_scenario_file(file, lo);
    if (!loaded) {
      std::fprintf(stderr, "%s\n", loaded.error().to_string().c_str());
      return 2;
    }
    sim::scale_options so;
    so.share_lanes = o.share_lanes;
    sim::parsed<sim::scenario> scaled = sim::scale(*loaded, o.width, o.depth, so);
    if (!scaled) {
      std::fprintf(stderr, "%s: %s\n", file.c_str(), scaled.error().to_string().c_str());
      return 2;
    }
    if (o.zero_tick) scaled->costs.device_wait = 0;
    for (const sim::scheduling how : o.schedulings) {
    sim::scenario named = *scaled;
    // With both models, the ready-first run is told apart by its name.
    if (o.schedulings.size() > 1 && how == sim::scheduling::ready_first) named.name += "@ready-first";
    const sim::scenario& s = named;
    std::array<sim::run_result, 3> runs;
    for (std::size_t m = 0; m < 3; ++m) {
      sim::run_options ro;
      ro.how = how;
      ro.frontier_capacity = o.frontier_capacity;
      // The report reads the frontier model's per-wait decisions from its trace.
      ro.trace = (!o.out.empty() || report) && sim::all_models[m] == sim::model::frontiers;
      runs[m] = sim::run(s, sim::all_models[m], ro);
      if (runs[m].error) {
        std::fprintf(stderr, "%s (%s): %s\n", s.name.c_str(),
                     std::string(sim::to_string(sim::all_models[m])).c_str(), runs[m].error->c_str());
        ++failures;
      }
      for (const std::string& v : runs[m].violations) {
        std::fprintf(stderr, "%s (%s): UNSOUND: %s\n", s.name.c_str(),
                     std::string(sim::to_string(sim::all_models[m])).c_str(), v.c_str());
        ++failures;
      }
    }
    if (!o.quiet) print_table(s, runs);
    if (s.speculation && !runs[2].error && !speculation(s, runs[2], o.quiet)) ++failures;
    if (!o.out.empty() && !write_outputs(o.out, s, runs[2])) ++failures;
    if (!o.csv.empty()) append_csv(o.csv, o, s, runs);
    rows.push_back(row{s.name, {runs[0].totals, runs[1].totals, runs[2].totals}});
    if (report) {
      items.push_back(sim::report_item{s, {}, how});
      for (sim::run_result& r : runs) items.back().runs.push_back(std::move(r));
    }
    }
  }
  print_summary(rows);
  if (report && !write_report(o, items)) ++failures;
  if (failures != 0) std::printf("\n%d check(s) FAILED\n", failures);
  return failures == 0 ? 0 : 1;
}
