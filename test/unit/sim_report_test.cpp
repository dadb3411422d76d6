// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// sim_report_test: the report writers escape what they write, the JSON
// document carries the documented fields with the values of the runs, the
// edges say which dependencies got a device wait, and the HTML page has one
// bar per operation and model and one arrow per edge.

#include <causal/sim/json.hpp>
#include <causal/sim/report.hpp>
#include <causal/sim/scenario.hpp>
#include <causal/sim/simulator.hpp>

#include "catch.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace sim = causal::sim;

namespace {

std::size_t count(std::string_view text, std::string_view what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string_view::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

/// The scenario and its three runs (the frontiers run traced, as the
/// report needs for exact decisions).
sim::report_item run_all(const sim::scenario& s, bool trace = true) {
  sim::report_item item{s, {}};
  for (const sim::model m : sim::all_models) {
    sim::run_options o;
    o.trace = trace && m == sim::model::frontiers;
    item.runs.push_back(sim::run(s, m, o));
    REQUIRE_FALSE(item.runs.back().error);
    REQUIRE(item.runs.back().violations.empty());
  }
  return item;
}

sim::scenario load(const std::string& text) {
  auto s = sim::load_scenario(text);
  if (!s) FAIL(s.error().to_string());
  return *s;
}

/// a on gpu.0; b on gpu.1 after a; c on gpu.2 after a and b: frontiers
/// elide c's wait for a (b's signal carries it), the baselines do not.
const char* const transitive = R"({"name": "tr", "title": "quote \" backslash \\ tab \t </script> <b>&",
  "devices": [{"name": "gpu", "lanes": 3}],
  "ops": [{"name": "a", "queue": "gpu.0", "duration": 10},
          {"name": "b", "queue": "gpu.1", "duration": 10, "after": ["a"]},
          {"name": "c", "queue": "gpu.2", "duration": 10, "after": ["a", "b"]},
          {"name": "d", "queue": "gpu.2", "duration": 5, "after": ["c"]}]})";

const sim::json_value& at(const sim::json_value& v, std::string_view key) {
  const sim::json_value* p = v.find(key);
  if (p == nullptr) FAIL("missing key " << key);
  return *p;
}

const std::vector<sim::json_value>& models_of(const sim::json_value& scenario) {
  return at(scenario, "models").items;
}

std::uint64_t uint_of(const sim::json_value& v) {
  std::uint64_t n = 0;
  REQUIRE(v.as_uint(n));
  return n;
}

}  // namespace

TEST_CASE("sim report: json_quote escapes quotes, backslashes and control characters", "[sim][report][json]") {
  CHECK(sim::json_quote("plain") == "\"plain\"");
  CHECK(sim::json_quote("a\"b\\c") == R"("a\"b\\c")");
  CHECK(sim::json_quote("\n\t\r\b\f") == R"("\n\t\r\b\f")");
  CHECK(sim::json_quote(std::string_view("\x01\x1f\0", 3)) == R"("\u0001\u001f\u0000")");
  CHECK(sim::json_quote("caf\xc3\xa9") == "\"caf\xc3\xa9\"");  // UTF-8 passes through
  CHECK(sim::json_quote("</script>&") == "\"</script>&\"");
  CHECK(sim::json_quote("</script>&", /*script_safe=*/true) == R"("\u003c/script\u003e\u0026")");
  CHECK(sim::html_escape(R"(<a href="x">'&'</a>)") == "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");

  // Whatever goes in comes back out of a strict reader unchanged.
  std::string all;
  for (int c = 1; c < 128; ++c) all += static_cast<char>(c);
  all += "\xc3\xa9\xf0\x9f\x98\x80";
  for (const bool safe : {false, true}) {
    const auto back = sim::parse_json(sim::json_quote(all, safe));
    REQUIRE(back.ok());
    CHECK(back->text == all);
  }
}

TEST_CASE("sim report: json_writer places commas and keys, numbers read back", "[sim][report][json]") {
  std::ostringstream out;
  sim::json_writer w(out);
  w.begin_object().field("n", std::uint64_t{3}).field("x", 0.1).field("t", true).key("none").null();
  w.key("list").begin_array().value("a").begin_object().field("k", "v").end_object().begin_array().end_array();
  w.end_array().end_object();
  const auto v = sim::parse_json(out.str());
  REQUIRE(v.ok());
  CHECK(uint_of(at(*v, "n")) == 3);
  double x = 0;
  REQUIRE(at(*v, "x").as_double(x));
  CHECK(x == 0.1);
  CHECK(at(*v, "t").boolean);
  CHECK(at(*v, "none").is(sim::json_value::kind::null));
  REQUIRE(at(*v, "list").items.size() == 3);
  CHECK(at(at(*v, "list").items[1], "k").text == "v");
  CHECK(sim::json_number(1e300 * 1e300) == "null");
  CHECK(sim::json_number(42) == "42");
}

TEST_CASE("sim report: the JSON document holds the runs' totals, operations, edges and frontiers",
          "[sim][report][json]") {
  const sim::scenario s = load(transitive);
  const sim::report_item item = run_all(s);
  std::ostringstream out;
  sim::report_info info;
  info.generator = "test";
  info.settings = {{"width", "1"}};
  sim::write_json(out, std::span<const sim::report_item>(&item, 1), info);
  const auto doc = sim::parse_json(out.str());
  REQUIRE(doc.ok());
  CHECK(at(*doc, "format").text == "causal-sim-report");
  CHECK(at(*doc, "generator").text == "test");
  CHECK(at(at(*doc, "settings"), "width").text == "1");
  REQUIRE(at(*doc, "scenarios").items.size() == 1);
  const sim::json_value& js = at(*doc, "scenarios").items[0];
  CHECK(at(js, "name").text == "tr");
  CHECK(at(js, "title").text == s.title);  // escaped and read back intact
  CHECK(uint_of(at(js, "operations")) == 4);
  REQUIRE(at(js, "lanes").items.size() == 3);
  CHECK(at(js, "lanes").items[2].text == "gpu.2");
  const auto& models = at(js, "models").items;
  REQUIRE(models.size() == 3);

  for (std::size_t m = 0; m < 3; ++m) {
    const sim::run_result& r = item.runs[m];
    const sim::json_value& jm = models[m];
    CHECK(at(jm, "model").text == sim::key_of(r.which));
    CHECK(at(jm, "error").is(sim::json_value::kind::null));
    const sim::json_value& totals = at(jm, "totals");
    CHECK(uint_of(at(totals, "device_waits")) == r.totals.device_waits);
    CHECK(uint_of(at(totals, "waits_elided")) == r.totals.waits_elided);
    CHECK(uint_of(at(totals, "metadata_bytes")) == r.totals.metadata_bytes);
    double makespan = 0;
    REQUIRE(at(totals, "makespan").as_double(makespan));
    CHECK(makespan == r.totals.makespan);
    for (const char* k : {"events_created", "host_queries", "tracking_entries", "cross_workload_waits",
                          "max_frontier_entries"}) {
      CHECK(totals.find(k) != nullptr);
    }
    const auto& ops = at(jm, "ops").items;
    REQUIRE(ops.size() == 4);
    for (std::size_t i = 0; i < 4; ++i) {
      const sim::op_record& rec = r.ops[i];
      CHECK(at(ops[i], "name").text == s.ops[i].name);
      REQUIRE(at(ops[i], "lanes").items.size() == 1);
      CHECK(at(ops[i], "lanes").items[0].text == s.queues[s.ops[i].queues[0]].name);
      double start = 0, end = 0;
      REQUIRE(at(ops[i], "start").as_double(start));
      REQUIRE(at(ops[i], "end").as_double(end));
      CHECK(start == rec.start);
      CHECK(end == rec.end);
      CHECK(uint_of(at(ops[i], "device_waits")) == rec.device_waits);
      const sim::json_value& el = at(ops[i], "elided");
      CHECK(uint_of(at(el, "same_queue")) == rec.elided.same_queue);
      CHECK(uint_of(at(el, "already_waited")) == rec.elided.already_waited);
      CHECK(uint_of(at(el, "reached")) == rec.elided.reached);
      CHECK(uint_of(at(el, "dominated")) == rec.elided.dominated);
      CHECK(uint_of(at(el, "collective_known")) == rec.elided.collective_known);
      CHECK(at(ops[i], "after").items.size() == s.ops[i].after.size());
      CHECK(at(ops[i], "edges").items.size() == s.ops[i].after.size());
      CHECK((ops[i].find("carries") != nullptr) == (r.which == sim::model::frontiers));
    }
    // c after a and b: the baselines wait for both; frontiers for b only,
    // whose signal carries a. d after c: the same queue.
    const auto& c_edges = at(ops[2], "edges").items;
    REQUIRE(c_edges.size() == 2);
    CHECK(at(c_edges[0], "after").text == "a");
    CHECK(at(c_edges[1], "after").text == "b");
    CHECK(at(c_edges[1], "wait").text == "issued");
    CHECK(at(c_edges[0], "wait").text == (r.which == sim::model::frontiers ? "elided" : "issued"));
    CHECK(at(c_edges[0], "exact").boolean);
    const auto& d_edge = at(ops[3], "edges").items.at(0);
    CHECK(at(d_edge, "wait").text == "elided");
    CHECK(at(d_edge, "reason").text == "same_queue");
    CHECK(uint_of(at(at(jm, "edges"), "issued")) ==
          (r.which == sim::model::frontiers ? 2u : 3u));  // b after a, c after b (and a)
    CHECK(uint_of(at(at(jm, "edges"), "elided")) == (r.which == sim::model::frontiers ? 2u : 1u));
  }

  // What c's signal carries: every lane at epoch 1; what it knows: the
  // same without itself (its own lane's epoch 0 is dropped).
  const sim::json_value& c = at(models[2], "ops").items[2];
  CHECK(at(at(c, "edges").items[0], "reason").text == "dominated");
  const auto& carries = at(c, "carries").items;
  REQUIRE(carries.size() == 3);
  for (std::size_t k = 0; k < 3; ++k) {
    CHECK(at(carries[k], "lane").text == "gpu." + std::to_string(k));
    CHECK(uint_of(at(carries[k], "epoch")) == 1);
  }
  const auto& knows = at(c, "knows").items;
  REQUIRE(knows.size() == 2);
  CHECK(at(knows[0], "lane").text == "gpu.0");
  CHECK(at(knows[1], "lane").text == "gpu.1");
  CHECK_FALSE(at(c, "tainted").boolean);
  // d (epoch 2 on gpu.2) knows its own lane at 1.
  const auto& d_knows = at(at(models[2], "ops").items[3], "knows").items;
  REQUIRE(d_knows.size() == 3);
  CHECK(at(d_knows[2], "lane").text == "gpu.2");
  CHECK(uint_of(at(d_knows[2], "epoch")) == 1);
}

TEST_CASE("sim report: edges of collectives and buffers agree with the per-operation counts",
          "[sim][report][edges]") {
  // mm[i] on each device, an all-reduce, then next[i] after it: the
  // baselines' all-to-all waits make the later dependants' waits redundant.
  const sim::scenario s = load(R"({"name": "tp", "devices": [{"name": "tp", "count": 3}, {"name": "host"}],
    "buffers": [{"name": "x", "bytes": 64}, {"name": "y", "bytes": 64}],
    "ops": [{"name": "load", "queue": "host", "duration": 2, "alloc": ["x"]},
            {"name": "mm", "queue": "tp", "each": true, "duration": 4, "after": ["load"]},
            {"name": "side", "queue": "tp1", "duration": 2, "after": ["load"], "use": ["x"]},
            {"name": "ar", "queue": "tp", "collective": true, "duration": 3, "after": ["mm"]},
            {"name": "next", "queue": "tp", "each": true, "duration": 1, "after": ["ar", "mm"]},
            {"name": "done", "queue": "host", "duration": 1, "after": ["next", "side"], "free": ["x"]},
            {"name": "again", "queue": "tp0", "duration": 1, "after": ["done"], "alloc": ["y"], "free": ["y"]}]})");
  for (const bool trace : {true, false}) {
    const sim::report_item item = run_all(s, trace);
    for (const sim::run_result& r : item.runs) {
      CAPTURE(sim::to_string(r.which), trace);
      const std::vector<sim::edge_record> edges = sim::classify_edges(s, r);
      std::size_t expected = 0;
      for (const sim::op_desc& op : s.ops) expected += op.after.size();
      REQUIRE(edges.size() == expected);
      std::size_t k = 0;
      for (std::size_t i = 0; i < s.ops.size(); ++i) {
        std::size_t issued = 0;
        std::uint64_t elided_reasons[6] = {};
        for (std::size_t d : s.ops[i].after) {
          const sim::edge_record& e = edges[k++];
          CHECK(e.consumer == i);
          CHECK(e.producer == d);
          issued += e.issued() ? 1 : 0;
          ++elided_reasons[static_cast<int>(e.decision)];
          // Every decision is one the model can make.
          if (r.which == sim::model::frontiers) {
            CHECK(e.decision != sim::wait_decision::already_waited);
          } else {
            CHECK((e.decision == sim::wait_decision::issued || e.decision == sim::wait_decision::same_queue ||
                   e.decision == sim::wait_decision::already_waited));
          }
        }
        // An edge with a wait is at least one device wait; single-part
        // edges elided for a reason are at most that reason's count.
        CHECK(issued <= r.ops[i].device_waits);
        if (!s.ops[i].collective) {
          CHECK(elided_reasons[1] <= r.ops[i].elided.same_queue);
          CHECK(elided_reasons[3] <= r.ops[i].elided.reached);
          CHECK(elided_reasons[4] <= r.ops[i].elided.dominated);
          CHECK(elided_reasons[5] <= r.ops[i].elided.collective_known);
        }
      }
      const bool all_exact = std::all_of(edges.begin(), edges.end(), [](const auto& e) { return e.exact; });
      if (r.which == sim::model::binary_events || (r.which == sim::model::frontiers && trace)) {
        CHECK(all_exact);
      }
    }
  }
}

TEST_CASE("sim report: the HTML page has one bar per operation and model and one arrow per edge",
          "[sim][report][html]") {
  const sim::scenario s = load(transitive);
  const sim::report_item item = run_all(s);
  std::ostringstream out;
  sim::write_html(out, std::span<const sim::report_item>(&item, 1));
  const std::string page = out.str();
  CHECK(page.rfind("<!DOCTYPE html>", 0) == 0);
  for (const sim::run_result& r : item.runs) {
    const std::string marker = "data-scenario=\"tr\" data-model=\"" + std::string(sim::key_of(r.which)) + "\"";
    CAPTURE(marker);
    CHECK(count(page, "<rect class=\"op\" " + marker) + count(page, "<rect class=\"op waited\" " + marker) == 4);
    const auto edges = sim::classify_edges(s, r);
    const auto issued = static_cast<std::size_t>(std::count_if(edges.begin(), edges.end(),
                                                               [](const auto& e) { return e.issued(); }));
    CHECK(count(page, "<path class=\"wait issued\" " + marker) == issued);
    CHECK(count(page, "<path class=\"wait elided\" " + marker) == edges.size() - issued);
  }
  // One summary row per scenario; self-contained; the title's markup and
  // the embedded data cannot close the script early.
  CHECK(count(page, "<tr data-scenario=\"tr\">") == 1);
  CHECK(count(page, "</script>") == 2);
  CHECK(count(page, "&lt;/script&gt; &lt;b&gt;&amp;") >= 1);
  CHECK(count(page, "<script src") == 0);
  CHECK(count(page, "<link") == 0);
  CHECK(count(page, "url(http") == 0);
  // The embedded document is the JSON document.
  const std::size_t from = page.find("id=\"report-data\">") + 17;
  const std::size_t to = page.find("</script>", from);
  const auto embedded = sim::parse_json(std::string_view(page).substr(from, to - from));
  REQUIRE(embedded.ok());
  CHECK(at(at(*embedded, "scenarios").items.at(0), "title").text == s.title);
}

TEST_CASE("sim report: a ready-first run's edges and lanes follow its placement", "[sim][report][placement]") {
  // `early` passes `late` on gpu.0 (ready-first), so the epochs on gpu.0 are
  // not the file's; `any` takes whichever gpu lane the placement picks.
  const sim::scenario s = load(R"({"name": "rf", "devices": [{"name": "gpu", "lanes": 2}, {"name": "cpu"}],
    "ops": [{"name": "slow", "queue": "cpu", "duration": 50},
            {"name": "late", "queue": "gpu.0", "duration": 10, "after": ["slow"]},
            {"name": "early", "queue": "gpu.0", "duration": 20},
            {"name": "any", "queue": "gpu.*", "duration": 5, "after": ["early"]},
            {"name": "tail", "queue": "cpu", "duration": 1, "after": ["late", "any", "early"]}]})");
  sim::report_item item{s, {}, sim::scheduling::ready_first};
  for (const sim::model m : sim::all_models) {
    sim::run_options o;
    o.how = sim::scheduling::ready_first;
    o.trace = m == sim::model::frontiers;
    item.runs.push_back(sim::run(s, m, o));
    REQUIRE_FALSE(item.runs.back().error);
    REQUIRE(item.runs.back().violations.empty());
  }
  REQUIRE(item.runs[0].ops[2].start < item.runs[0].ops[1].start);  // early ran first
  std::ostringstream out;
  sim::write_json(out, std::span<const sim::report_item>(&item, 1));
  const auto doc = sim::parse_json(out.str());
  REQUIRE(doc.ok());
  const sim::json_value& js = at(*doc, "scenarios").items.at(0);
  CHECK(at(js, "scheduling").text == "ready-first");
  for (std::size_t m = 0; m < 3; ++m) {
    const sim::run_result& r = item.runs[m];
    CAPTURE(sim::to_string(r.which));
    const auto& ops = at(models_of(js)[m], "ops").items;
    REQUIRE(ops.size() == 5);
    for (std::size_t i = 0; i < 5; ++i) {
      REQUIRE(at(ops[i], "lanes").items.size() == 1);
      CHECK(at(ops[i], "lanes").items[0].text == s.queues[r.ops[i].queue].name);
    }
    const std::vector<sim::edge_record> edges = sim::classify_edges(s, r, sim::scheduling::ready_first);
    REQUIRE(edges.size() == 5);
    if (r.which != sim::model::timelines) {
      for (const sim::edge_record& e : edges) CHECK(e.exact);
    }
    // late waits for slow (another lane, not yet done) in every model.
    CHECK(edges[0].consumer == 1);
    CHECK(edges[0].issued());
  }
  // Frontiers: tail's wait for late carries early (same lane, before it).
  const auto& tail_edges = at(at(models_of(js)[2], "ops").items[4], "edges").items;
  REQUIRE(tail_edges.size() == 3);
  CHECK(at(tail_edges[0], "wait").text == "issued");
  CHECK(at(tail_edges[2], "after").text == "early");
  CHECK(at(tail_edges[2], "wait").text == "elided");
}
