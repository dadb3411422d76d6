// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// sim_scenario_test: the scenario loader expands device groups, replicated
// operations and collectives as documented, scales scenarios, and rejects
// every rule it states with a line, a column and a reason.

#include <causal/sim/scenario.hpp>

#include "catch.hpp"

#include <string>

namespace sim = causal::sim;

namespace {

std::string doc(const std::string& devices, const std::string& ops,
                const std::string& extra = "") {
  return "{\"name\": \"t\", \"devices\": [" + devices + "], " + extra + "\"ops\": [" + ops + "]}";
}

}  // namespace

TEST_CASE("sim scenario: groups, lanes, replicated ops and collectives expand", "[sim][scenario]") {
  const auto s = sim::load_scenario(doc(
      R"({"name": "gpu", "lanes": 2}, {"name": "tp", "count": 3})",
      R"({"name": "a", "queue": "gpu.1", "duration": 1},
         {"name": "mm", "queue": "tp", "each": true, "duration": 2, "after": ["a"]},
         {"name": "ar", "queue": "tp", "collective": true, "duration": 3, "after": ["mm"]},
         {"name": "next", "queue": "tp", "each": true, "duration": 1, "after": ["ar", "mm"]})"));
  REQUIRE(s.ok());
  REQUIRE(s->queues.size() == 5);
  CHECK(s->queues[1].name == "gpu.1");
  CHECK(s->queues[4].name == "tp2.0");
  REQUIRE(s->ops.size() == 1 + 3 + 1 + 3);
  CHECK(s->ops[2].name == "mm[1]");
  CHECK(s->ops[2].queues == std::vector<std::size_t>{3});
  CHECK(s->ops[2].after == std::vector<std::size_t>{0});
  const sim::op_desc& ar = s->ops[4];
  CHECK(ar.collective);
  CHECK(ar.queues == std::vector<std::size_t>{2, 3, 4});
  CHECK(ar.after == std::vector<std::size_t>{1, 2, 3});
  REQUIRE(ar.part_after.size() == 3);
  CHECK(ar.part_after[1] == std::vector<std::size_t>{2});  // part i after mm[i] only
  // next[i] after the whole collective and its own mm[i].
  CHECK(s->ops[6].after == std::vector<std::size_t>{4, 2});

  sim::load_options wide;
  wide.devices = 5;
  const auto five = sim::load_scenario(doc(R"({"name": "tp", "count": 3})",
                                           R"({"name": "x", "queue": "tp", "each": true, "duration": 1})"),
                                       wide);
  REQUIRE(five.ok());
  CHECK(five->ops.size() == 5);
}

TEST_CASE("sim scenario: scale makes independent and chained copies", "[sim][scenario][scale]") {
  const auto s = sim::load_scenario(doc(R"({"name": "g", "lanes": 2})",
                                        R"({"name": "a", "queue": "g.0", "duration": 1},
                                           {"name": "b", "queue": "g.1", "duration": 1, "after": ["a"]})"));
  REQUIRE(s.ok());
  const auto scaled = sim::scale(*s, 3, 2);
  REQUIRE(scaled.ok());
  CHECK(scaled->queues.size() == 6);   // width copies get their own queues
  CHECK(scaled->ops.size() == 12);
  // Copy (w0, d1): its root "a" depends on copy (w0, d0)'s sink "b", same queues.
  const sim::op_desc& a1 = scaled->ops[2];
  CHECK(a1.name == "a/w0/d1");
  CHECK(a1.after == std::vector<std::size_t>{1});
  CHECK(a1.queues == scaled->ops[0].queues);
  // Width copy 1 runs on queues 2 and 3.
  CHECK(scaled->ops[4].queues == std::vector<std::size_t>{2});
  CHECK_FALSE(sim::scale(*s, 0, 1).ok());
}

TEST_CASE("sim scenario: bad scenarios are rejected with where and why", "[sim][scenario][errors]") {
  struct bad {
    std::string text;
    std::size_t line;
    std::string says;
  };
  const std::string gpu = R"({"name": "gpu", "lanes": 2})";
  const bad cases[] = {
      {"[1]", 1, "JSON object"},
      {"{\"name\": \"t\", \"ops\": []}", 1, "missing \"devices\""},
      {"{\"name\": \"t\",\n \"devices\": [], \"ops\": []}", 2, "non-empty array"},
      {doc(gpu, "{\"name\": \"a\", \"queue\": \"gpu\", \"duration\": 1, \"colour\": 3}"), 1,
       "unknown key \"colour\""},
      {doc(gpu, "{\"name\": \"a\", \"queue\": \"gpu.2\", \"duration\": 1}"), 1, "lane 2 does not exist"},
      {doc(gpu, "{\"name\": \"a\", \"queue\": \"cpu\", \"duration\": 1}"), 1, "unknown queue \"cpu\""},
      {doc(gpu, "{\"name\": \"a\", \"queue\": \"gpu\", \"duration\": -1}"), 1, "number from 0"},
      {doc(gpu, "{\"name\": \"a\", \"queue\": \"gpu\"}"), 1, "missing \"duration\""},
      {doc(gpu, "{\"name\": \"a\", \"queue\": \"gpu\", \"duration\": 1, \"after\": [\"b\"]},\n"
                "{\"name\": \"b\", \"queue\": \"gpu\", \"duration\": 1}"),
       1, "not defined before this one"},
      {doc(gpu, "{\"name\": \"a\", \"queue\": \"gpu\", \"duration\": 1},\n"
                "{\"name\": \"a\", \"queue\": \"gpu\", \"duration\": 1}"),
       2, "duplicate operation name"},
      {doc(gpu, "{\"name\": \"a\", \"queue\": \"gpu.0\", \"duration\": 1, \"alloc\": [\"w\"]},\n"
                "{\"name\": \"r\", \"queue\": \"gpu.1\", \"duration\": 1, \"after\": [\"a\"], \"use\": [\"w\"]},\n"
                "{\"name\": \"f\", \"queue\": \"gpu.0\", \"duration\": 1, \"after\": [\"a\"], \"free\": [\"w\"]}",
           "\"buffers\": [{\"name\": \"w\", \"bytes\": 8}], "),
       3, "is not ordered before the free"},
      {doc(gpu, "{\"name\": \"a\", \"queue\": \"gpu.0\", \"duration\": 1, \"use\": [\"w\"]}",
           "\"buffers\": [{\"name\": \"w\", \"bytes\": 8}], "),
       1, "used before it is allocated"},
      {doc(gpu, "{\"name\": \"a\", \"queue\": \"gpu.0\", \"duration\": 1, \"alloc\": [\"w\"], \"free\": [\"w\"]},\n"
                "{\"name\": \"b\", \"queue\": \"gpu.0\", \"duration\": 1, \"after\": [\"a\"], \"use\": [\"w\"]}",
           "\"buffers\": [{\"name\": \"w\", \"bytes\": 8}], "),
       2, "used after it is freed"},
      {doc(gpu, "{\"name\": \"a\", \"queue\": \"gpu\", \"duration\": 1}",
           "\"pool_bytes\": 4, \"buffers\": [{\"name\": \"w\", \"bytes\": 8}], "),
       1, "pool size"},
      {doc(R"({"name": "tp", "count": 20})",
           "{\"name\": \"a\", \"queue\": \"tp\", \"each\": true, \"duration\": 1},\n"
           "{\"name\": \"j\", \"queue\": \"tp0\", \"duration\": 1, \"after\": [\"a\"]}"),
       2, "at most 16"},
      {doc(R"({"name": "tp", "count": 2})", "{\"name\": \"a\", \"queue\": \"tp\", \"duration\": 1}"), 1,
       "is a device group"},
      {doc(gpu, "{\"name\": \"a\", \"queue\": \"gpu\", \"duration\": 1}",
           "\"speculation\": {\"draft_queue\": \"gpu.0\", \"verify_queue\": \"gpu.0\", "
           "\"rejecting_op\": \"a\", \"reject_from\": \"a\"}, "),
       1, "must be different queues"},
      {"{\"name\": \"t\", \"devices\": [{\"name\": \"g\", \"lanes\": 65}], \"ops\": []}", 1,
       "integer from 1 to 64"},
  };
  for (const bad& c : cases) {
    INFO("scenario: " << c.text);
    const auto r = sim::load_scenario(c.text);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().line == c.line);
    CHECK(r.error().column >= 1);
    CHECK(r.error().message.find(c.says) != std::string::npos);
  }
  sim::load_options zero;
  zero.devices = 0;
  CHECK_FALSE(sim::load_scenario(doc(gpu, "{\"name\": \"a\", \"queue\": \"gpu\", \"duration\": 1}"), zero).ok());
  CHECK_FALSE(sim::load_scenario_file("/nonexistent/scenario.json").ok());
}
