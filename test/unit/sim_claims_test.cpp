// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// sim_claims_test: the qualitative claims of the events-vs-frontiers
// comparison (docs/observability.md), pinned with the numbers the
// simulator measures -- and, where a claim is too strong (isolation of
// independent workloads, docs/buffers.md), the true behaviour. Every run must also pass the
// simulator's own soundness check (no operation before its dependencies,
// no buffer reused before its previous owner's last use).

#include <causal/sim/scenario.hpp>
#include <causal/sim/simulator.hpp>

#include "catch.hpp"
#include "sim_checked.hpp"

#include <filesystem>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace sim = causal::sim;

namespace {

using sim_test::load;
using sim_test::run_checked;

std::size_t op(const sim::scenario& s, const std::string& name) {
  const auto i = s.find_op(name);
  REQUIRE(i);
  return *i;
}

const std::string fork_join = R"({"name": "fj",
  "devices": [{"name": "gpu"}, {"name": "branch", "count": 4}, {"name": "consumer"}],
  "ops": [
    {"name": "root", "queue": "gpu", "duration": 10},
    {"name": "work", "queue": "branch", "each": true, "duration": 40, "after": ["root"]},
    {"name": "join", "queue": "gpu", "duration": 10, "after": ["work"]},
    {"name": "consume", "queue": "consumer", "duration": 20, "after": ["join", "work"]}]})";

std::string buffer_reuse(int layers) {
  std::string ops = R"({"name": "load", "queue": "gpu.0", "duration": 5, "alloc": ["w"], "use": ["w"]})";
  std::string prev = "load";
  for (int i = 1; i <= layers; ++i) {
    const std::string name = "l" + std::to_string(i);
    ops += ",{\"name\": \"" + name + "\", \"queue\": \"gpu.0\", \"duration\": 2, \"after\": [\"" + prev +
           "\"], \"use\": [\"w\"]}";
    prev = name;
  }
  ops += ",{\"name\": \"unload\", \"queue\": \"gpu.0\", \"duration\": 1, \"after\": [\"" + prev +
         "\"], \"free\": [\"w\"]}";
  ops += R"(,{"name": "other", "queue": "gpu.1", "duration": 10, "alloc": ["kv"], "use": ["kv"]})";
  return R"({"name": "reuse", "pool_bytes": 4096, "devices": [{"name": "gpu", "lanes": 2}],
    "buffers": [{"name": "w", "bytes": 4096}, {"name": "kv", "bytes": 4096}], "ops": [)" +
         ops + "]}";
}

std::string independent(bool b_after_a_retired) {
  return std::string(R"({"name": "iso", "pool_bytes": 1024,
    "devices": [{"name": "gpu", "lanes": 2}],
    "buffers": [{"name": "a", "bytes": 1024}, {"name": "b", "bytes": 1024}],
    "ops": [
      {"name": "a1", "queue": "gpu.0", "workload": "A", "duration": 30, "alloc": ["a"], "use": ["a"]},
      {"name": "a2", "queue": "gpu.0", "workload": "A", "duration": 30, "after": ["a1"], "free": ["a"]},
      {"name": "a3", "queue": "gpu.0", "workload": "A", "duration": 30, "after": ["a2"]},
      {"name": "b1", "queue": "gpu.1", "workload": "B", "duration": 20, "alloc": ["b"], "use": ["b"])") +
         (b_after_a_retired ? R"(, "submit_after": "a2")" : "") + "}]}";
}

}  // namespace

TEST_CASE("sim claims: fork-join of N branches -- the consumer waits once with frontiers, "
          "N + 1 times with events", "[sim][claims][fork_join]") {
  // N + 2 queues must fit the frontier's 12 entries (see the next test).
  const std::size_t n = GENERATE(2, 4, 8, 10);
  sim::load_options o;
  o.devices = n;
  const sim::scenario s = load(fork_join, o);
  const std::size_t join = op(s, "join"), consume = op(s, "consume");
  const auto events = run_checked(s, sim::model::binary_events);
  const auto timelines = run_checked(s, sim::model::timelines);
  const auto frontiers = run_checked(s, sim::model::frontiers);
  // The join must enumerate all N branches in every model.
  CHECK(events.ops[join].device_waits == n);
  CHECK(timelines.ops[join].device_waits == n);
  CHECK(frontiers.ops[join].device_waits == n);
  // The consumer reads the join's result and every branch's output.
  CHECK(events.ops[consume].device_waits == n + 1);
  CHECK(timelines.ops[consume].device_waits == n + 1);
  CHECK(frontiers.ops[consume].device_waits == 1);
  CHECK(frontiers.ops[consume].waits_elided == n);
  CHECK(events.totals.events_created == 3 * n + 1);  // N fan-out, N fan-in, N + 1 into the consumer
  CHECK(frontiers.totals.events_created == 0);
}

TEST_CASE("sim claims: fork-join wider than the frontier's capacity overflows -- sound, but the "
          "consumer waits more", "[sim][claims][fork_join][overflow]") {
  sim::load_options o;
  o.devices = 15;  // 17 queues, 12 frontier entries
  const sim::scenario s = load(fork_join, o);
  const auto frontiers = run_checked(s, sim::model::frontiers);  // no violation: evict-and-taint is safe
  const std::size_t consume = op(s, "consume");
  CHECK(frontiers.knowledge[op(s, "join")].tainted());
  CHECK(frontiers.ops[consume].device_waits > 1);    // evicted branches must be waited for
  CHECK(frontiers.ops[consume].device_waits < 16);   // still fewer than binary events' N + 1
  CHECK(frontiers.totals.max_frontier_entries == causal::frontier::capacity);
  // Where the taint appears: the join is the first operation that knows
  // more queues than fit.
  REQUIRE(frontiers.first_tainted);
  CHECK(*frontiers.first_tainted == op(s, "join"));
  CHECK(frontiers.totals.tainted_operations >= 2);  // the join and the consumer
  // Within capacity nothing is tainted.
  const auto narrow = run_checked(load(fork_join), sim::model::frontiers);
  CHECK_FALSE(narrow.first_tainted);
  CHECK(narrow.totals.tainted_operations == 0);
  // A run with room for every queue: no taint, and the consumer waits once.
  sim::run_options wide;
  wide.frontier_capacity = 32;
  const auto roomy = sim::run(s, sim::model::frontiers, wide);
  REQUIRE_FALSE(roomy.error);
  CHECK(roomy.violations.empty());
  CHECK(roomy.totals.tainted_operations == 0);
  CHECK(roomy.ops[consume].device_waits == 1);
  CHECK(roomy.totals.max_frontier_entries == 17);  // every queue of the 15-way fork-join
  // A smaller one taints sooner; an unsupported one is a clear error.
  sim::run_options small;
  small.frontier_capacity = 4;
  const auto cramped = run_checked(load(fork_join), sim::model::frontiers);
  const auto four = sim::run(load(fork_join), sim::model::frontiers, small);
  REQUIRE_FALSE(four.error);
  CHECK(four.violations.empty());
  CHECK(four.totals.tainted_operations > cramped.totals.tainted_operations);
  sim::run_options odd;
  odd.frontier_capacity = 13;
  const auto refused = sim::run(s, sim::model::frontiers, odd);
  REQUIRE(refused.error);
  CHECK(refused.error->find("frontier_capacity") != std::string::npos);
}

TEST_CASE("sim claims: transitive dependencies propagate through the frontier", "[sim][claims]") {
  const sim::scenario s = load(R"({"name": "tr", "devices": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
    "ops": [{"name": "p", "queue": "a", "duration": 5},
            {"name": "t", "queue": "b", "duration": 5, "after": ["p"]},
            {"name": "c", "queue": "c", "duration": 5, "after": ["t", "p"]}]})");
  const auto events = run_checked(s, sim::model::binary_events);
  const auto frontiers = run_checked(s, sim::model::frontiers);
  CHECK(events.ops[2].device_waits == 2);
  CHECK(frontiers.ops[2].device_waits == 1);
  CHECK(frontiers.knowledge[2].epoch_of(frontiers.queue_axes[0]) == 1);  // knows A without waiting on it
}

TEST_CASE("sim claims: buffer reuse -- one death frontier per buffer lifetime, one event per use",
          "[sim][claims][buffers]") {
  const int layers = GENERATE(1, 10, 100);
  const sim::scenario s = load(buffer_reuse(layers));
  const auto events = run_checked(s, sim::model::binary_events);
  const auto timelines = run_checked(s, sim::model::timelines);
  const auto frontiers = run_checked(s, sim::model::frontiers);
  const std::uint64_t uses = static_cast<std::uint64_t>(layers) + 2;  // load, layers, unload
  CHECK(events.totals.tracking_entries == uses);
  CHECK(events.totals.host_queries == uses);  // reuse queries every tracked event
  CHECK(events.totals.device_waits == uses);  // none complete when "other" is submitted
  // Timelines are not O(operations) like events: a timeline allocator keeps
  // the highest value per timeline, so it is O(queues): here 1.
  CHECK(timelines.totals.tracking_entries == 1);
  CHECK(frontiers.totals.tracking_entries == 1);
  CHECK(frontiers.totals.device_waits == 1);  // one fence wait on the freeing queue's timeline
  CHECK(frontiers.totals.host_queries == 0);
}

TEST_CASE("sim claims: independent workloads share a pool without cross-workload waits only "
          "once the freeing workload retired (docs/buffers.md)", "[sim][claims][isolation]") {
  SECTION("B submitted after A's free completed: zero cross-workload waits, no A axis in B") {
    const sim::scenario s = load(independent(true));
    const auto frontiers = run_checked(s, sim::model::frontiers);
    CHECK(frontiers.totals.cross_workload_waits == 0);
    CHECK(frontiers.totals.device_waits == 0);
    const auto& b = frontiers.knowledge[op(s, "b1")];
    CHECK(b.epoch_of(frontiers.queue_axes[0]) == 0);  // structurally isolated
    const auto events = run_checked(s, sim::model::binary_events);
    CHECK(events.totals.cross_workload_waits == 0);
    CHECK(events.totals.host_queries == 1 + 2);  // the host wait + one query per tracked use of "a"
  }
  SECTION("B submitted up front: 'immediately reusable' does not hold -- one wait") {
    const sim::scenario s = load(independent(false));
    const auto frontiers = run_checked(s, sim::model::frontiers);
    const auto events = run_checked(s, sim::model::binary_events);
    CHECK(frontiers.totals.cross_workload_waits == 1);  // one fence wait, not an unsound reuse
    CHECK(events.totals.cross_workload_waits == 2);     // one per tracked use
  }
}

TEST_CASE("sim claims: a collective costs one frontier entry and N waits, not N(N-1)",
          "[sim][claims][collective]") {
  const std::size_t n = GENERATE(2, 8, 16);
  sim::load_options o;
  o.devices = n;
  const sim::scenario s = load(R"({"name": "tp", "devices": [{"name": "tp", "count": 8}, {"name": "s"}],
    "ops": [{"name": "mm", "queue": "tp", "each": true, "duration": 4},
            {"name": "ar", "queue": "tp", "collective": true, "duration": 1, "after": ["mm"]},
            {"name": "mm2", "queue": "tp", "each": true, "duration": 4, "after": ["ar"]},
            {"name": "use", "queue": "s", "duration": 1, "after": ["ar"]}]})",
                               o);
  const auto events = run_checked(s, sim::model::binary_events);
  const auto frontiers = run_checked(s, sim::model::frontiers);
  CHECK(events.ops[op(s, "ar")].device_waits == n * (n - 1));
  CHECK(frontiers.ops[op(s, "ar")].device_waits == n);
  CHECK(events.ops[op(s, "use")].device_waits == n);
  CHECK(frontiers.ops[op(s, "use")].device_waits == 1);
  // Each participant knows its own axis and the collective's: 2 entries for any N.
  CHECK(frontiers.knowledge[op(s, "mm2[0]")].size() == 2);
  CHECK(frontiers.totals.max_frontier_entries == 2);
}

TEST_CASE("sim claims: a late >= waiter imports only the frontier of the value it waited for",
          "[sim][claims][late_waiter]") {
  const sim::scenario s = load(R"({"name": "late", "devices": [{"name": "g", "lanes": 3}],
    "ops": [{"name": "p1", "queue": "g.0", "duration": 10},
            {"name": "slow", "queue": "g.1", "duration": 50},
            {"name": "p2", "queue": "g.0", "duration": 10, "after": ["p1", "slow"]},
            {"name": "late", "queue": "g.2", "duration": 10, "after": ["p1"], "submit_after": "p2"}]})");
  const auto frontiers = run_checked(s, sim::model::frontiers);
  const auto& late = frontiers.knowledge[op(s, "late")];
  CHECK(late.epoch_of(frontiers.queue_axes[0]) == 1);  // X at 1, although X reached 2
  CHECK(late.epoch_of(frontiers.queue_axes[1]) == 0);  // nothing of Y
  CHECK(frontiers.ops[op(s, "late")].submit >= frontiers.ops[op(s, "p2")].end);
}

TEST_CASE("sim claims: speculation cancels exactly the work that lacks the verify axis past the "
          "rejection point; a tainted frontier refuses", "[sim][claims][speculation]") {
  const sim::scenario s = load(R"({"name": "spec", "devices": [{"name": "gpu", "lanes": 2}, {"name": "cpu"}],
    "ops": [
      {"name": "d1", "queue": "gpu.0", "duration": 5},
      {"name": "d2", "queue": "gpu.0", "duration": 5, "after": ["d1"]},
      {"name": "v1", "queue": "gpu.1", "duration": 12, "after": ["d1", "d2"]},
      {"name": "d3", "queue": "gpu.0", "duration": 5, "after": ["d2"]},
      {"name": "d4", "queue": "gpu.0", "duration": 5, "after": ["d3"]},
      {"name": "d5", "queue": "gpu.0", "duration": 5, "after": ["d4"]},
      {"name": "t1", "queue": "cpu", "duration": 3, "after": ["v1"]},
      {"name": "v2", "queue": "gpu.1", "duration": 12, "after": ["v1", "d3", "d4"]},
      {"name": "d6", "queue": "gpu.0", "duration": 5, "after": ["d5"]},
      {"name": "t2", "queue": "cpu", "duration": 3, "after": ["d5"]},
      {"name": "d7", "queue": "gpu.0", "duration": 5, "after": ["d6", "v2"]},
      {"name": "t3", "queue": "cpu", "duration": 3, "after": ["d7"]}],
    "speculation": {"draft_queue": "gpu.0", "verify_queue": "gpu.1", "rejecting_op": "v2",
                    "reject_from": "d4"}})");
  const auto frontiers = run_checked(s, sim::model::frontiers);
  const sim::speculation_report report = sim::analyze_speculation(s, frontiers);
  REQUIRE_FALSE(report.refused_at);

  // Reference from the DAG alone: operations that are d4, or after d4,
  // and not after v2 (the closure over `after` and queue order).
  const std::size_t n = s.ops.size();
  std::vector<std::set<std::size_t>> before(n);  // transitive predecessors, inclusive
  for (std::size_t i = 0; i < n; ++i) {
    before[i].insert(i);
    for (std::size_t d : s.ops[i].after) before[i].insert(before[d].begin(), before[d].end());
    for (std::size_t j = i; j-- > 0;) {
      if (s.ops[j].queues == s.ops[i].queues) {
        before[i].insert(before[j].begin(), before[j].end());
        break;
      }
    }
  }
  std::vector<std::size_t> expected;
  for (std::size_t i = 0; i < n; ++i) {
    if (before[i].count(op(s, "d4")) != 0 && before[i].count(op(s, "v2")) == 0) expected.push_back(i);
  }
  CHECK(report.cancel == expected);
  CHECK(expected == std::vector<std::size_t>{op(s, "d4"), op(s, "d5"), op(s, "d6"), op(s, "t2")});

  // A tainted frontier among the candidates refuses the whole call.
  sim::run_result tainted = frontiers;
  tainted.knowledge[op(s, "t2")].set_tainted();
  const sim::speculation_report refused = sim::analyze_speculation(s, tainted);
  CHECK(refused.refused_at == op(s, "t2"));
  CHECK(refused.cancel.empty());
  const auto no = sim::lacks_verification(tainted.knowledge[op(s, "t2")], frontiers.queue_axes[1], 2);
  REQUIRE_FALSE(no.ok());
  CHECK(no.code() == causal::errc::failed_precondition);
}

TEST_CASE("sim claims: remote devices pipeline from the frontier, without round trips",
          "[sim][claims][remote]") {
  const sim::scenario s = load(R"({"name": "remote", "costs": {"round_trip": 20},
    "devices": [{"name": "g0"}, {"name": "g1", "remote": true}, {"name": "g2"}],
    "ops": [{"name": "x", "queue": "g0", "duration": 10},
            {"name": "y", "queue": "g2", "duration": 10},
            {"name": "t1", "queue": "g1", "duration": 10, "after": ["x", "y"]},
            {"name": "t2", "queue": "g1", "duration": 10, "after": ["t1", "x", "y"]}]})");
  const auto events = run_checked(s, sim::model::binary_events);
  const auto frontiers = run_checked(s, sim::model::frontiers);
  CHECK(events.totals.host_queries == 2);
  CHECK(frontiers.totals.host_queries == 0);
  CHECK(frontiers.ops[3].waits_elided == 3);
  CHECK(frontiers.totals.makespan + 20 == events.totals.makespan);
}

TEST_CASE("sim claims: the shipped late waiter, written with a named semaphore, imports only the "
          "value it waited for",
          "[sim][claims][late_waiter][semaphores]") {
  const auto loaded = sim::load_scenario_file(std::string(CAUSAL_SCENARIO_DIR) + "/09_late_waiter.json");
  REQUIRE(loaded.ok());
  const sim::scenario& s = *loaded;
  REQUIRE(s.semaphores.size() == 1);
  for (const sim::scheduling how : {sim::scheduling::in_order, sim::scheduling::ready_first}) {
    CAPTURE(sim::to_string(how));
    sim::run_options options;
    options.how = how;
    const auto frontiers = sim::run(s, sim::model::frontiers, options);
    REQUIRE_FALSE(frontiers.error);
    CHECK(frontiers.violations.empty());
    const auto& late = frontiers.knowledge[op(s, "late")];
    CHECK(late.epoch_of(frontiers.queue_axes[0]) == 1);  // x at 1, although x reached 2
    CHECK(late.epoch_of(frontiers.queue_axes[1]) == 0);  // nothing of the slow queue
    // So late's frontier does not prove the slow queue to the reader: its
    // wait for it is elided only because the value had been reached by
    // the time the host submitted it (after p2), not by knowledge.
    CHECK(frontiers.ops[op(s, "reader")].elided.dominated == 0);
    CHECK(frontiers.ops[op(s, "reader")].elided.reached == 1);
  }
}

TEST_CASE("sim claims: the shipped multi-model scenario puts each model on its own lane of each "
          "GPU through lane classes",
          "[sim][claims][lanes]") {
  const auto loaded = sim::load_scenario_file(std::string(CAUSAL_SCENARIO_DIR) + "/11_multi_model.json");
  REQUIRE(loaded.ok());
  const sim::scenario& s = *loaded;
  CHECK(s.ops[op(s, "embed_a")].queues.empty());  // a lane class until placed
  for (const sim::model m : sim::all_models) {
    const sim::run_result r = run_checked(s, m);
    std::set<std::size_t> embed_lanes;
    std::set<std::size_t> head_lanes;
    for (const char* x : {"a", "b", "c"}) {
      embed_lanes.insert(r.ops[op(s, std::string("embed_") + x)].queue);
      head_lanes.insert(r.ops[op(s, std::string("head_") + x)].queue);
    }
    CHECK(embed_lanes.size() == 3);
    CHECK(head_lanes.size() == 3);
    CHECK(r.ops[op(s, "mix")].start >= r.ops[op(s, "head_a")].end);
  }
}

TEST_CASE("sim claims: every shipped scenario runs soundly under all three models, also scaled",
          "[sim][claims][shipped]") {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(CAUSAL_SCENARIO_DIR)) {
    if (e.path().extension() == ".json") files.push_back(e.path().string());
  }
  REQUIRE(files.size() >= 11);
  for (const std::string& f : files) {
    INFO(f);
    const auto loaded = sim::load_scenario_file(f);
    REQUIRE(loaded.ok());
    for (const auto& [w, d, shared] : {std::tuple<std::size_t, std::size_t, bool>{1, 1, false},
                                       {2, 3, false}, {2, 2, true}}) {
      sim::scale_options so;
      so.share_lanes = shared;
      const auto s = sim::scale(*loaded, w, d, so);
      REQUIRE(s.ok());
      for (const sim::model m : sim::all_models) {
        for (const sim::scheduling how : {sim::scheduling::in_order, sim::scheduling::ready_first}) {
        const sim::run_result r = run_checked(*s, m, how);
        // Every elided wait has exactly one reason, and each model only
        // the reasons it has.
        std::uint64_t unaccounted = 0;
        std::uint64_t foreign = 0;
        for (const sim::op_record& o : r.ops) {
          const sim::elided_counts& e = o.elided;
          unaccounted += o.waits_elided -
                         (e.same_queue + e.already_waited + e.reached + e.dominated + e.collective_known);
          foreign += m == sim::model::frontiers ? e.already_waited
                                                : e.reached + e.dominated + e.collective_known;
        }
        CHECK(unaccounted == 0);
        CHECK(foreign == 0);
        }
      }
      if (s->speculation && w == 1 && d == 1) {
        const auto report = sim::analyze_speculation(*s, run_checked(*s, sim::model::frontiers));
        CHECK(report.cancel == s->speculation->expect_cancel);
      }
    }
  }
}
