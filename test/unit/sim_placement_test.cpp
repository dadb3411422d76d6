// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// sim_placement_test: lane classes ("dev.*") and the two scheduling models
// of <causal/sim/scenario.hpp> (place()), run through the simulator:
//   - the loader accepts a lane class where one lane is expected and
//     refuses it where a fixed lane is needed;
//   - in-order keeps the file's order per lane and gives a class operation
//     the lane its estimate frees first; ready-first lets a ready operation
//     pass one listed earlier that is still waiting;
//   - ready-first makes the buffer orderings the file met through queue
//     order explicit, so a reordered lane never reuses memory early;
//   - a randomized differential check: random DAGs whose ready-first order
//     keeps every lane in file order give identical results, operation by
//     operation, under both scheduling models and all three
//     synchronisation models;
//   - named semaphores: a wait on `s >= v` is met by the first signal that
//     reaches v, each synchronisation model waits on it its own way, the
//     loader enforces increasing signals in execution order, and
//     ready-first keeps them in that order;
//   - scaling: width copies that share lanes, and iterations chained
//     through a named semaphore and explicit cross-iteration edges.

#include <causal/sim/scenario.hpp>
#include <causal/sim/simulator.hpp>

#include "catch.hpp"
#include "sim_checked.hpp"

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace sim = causal::sim;

namespace {

std::string doc(const std::string& devices, const std::string& ops) {
  return "{\"name\": \"t\", \"devices\": [" + devices + "], \"ops\": [" + ops + "]}";
}

using sim_test::load;
using sim_test::run_checked;

}  // namespace

TEST_CASE("sim placement: a lane class is any lane of its device; where a fixed lane is needed "
          "it is refused",
          "[sim][placement]") {
  const sim::scenario s = load(doc(R"({"name": "gpu", "lanes": 3}, {"name": "cpu"})",
                                   R"({"name": "a", "queue": "gpu.*", "duration": 1},
                                      {"name": "b", "queue": "gpu.2", "duration": 1})"));
  CHECK(s.ops[0].queues.empty());
  CHECK(s.ops[0].lane_class == std::vector<std::size_t>{0, 1, 2});
  CHECK(s.ops[1].queues == std::vector<std::size_t>{2});
  CHECK(s.ops[1].lane_class.empty());

  const auto unknown = sim::load_scenario(doc(R"({"name": "gpu"})", R"({"name": "a", "queue": "tpu.*", "duration": 1})"));
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.error().message.find("unknown device \"tpu\"") != std::string::npos);

  const auto spec = sim::load_scenario(R"({"name": "t", "devices": [{"name": "d"}, {"name": "v"}],
    "ops": [{"name": "x", "queue": "d", "duration": 1}, {"name": "y", "queue": "v", "duration": 1}],
    "speculation": {"draft_queue": "d.*", "verify_queue": "v", "rejecting_op": "y", "reject_from": "x",
                    "expect_cancel": []}})");
  REQUIRE_FALSE(spec.ok());
  CHECK(spec.error().message.find("lane class") != std::string::npos);
}

TEST_CASE("sim placement: in-order gives a class operation the lane its estimate frees first",
          "[sim][placement]") {
  const sim::scenario s = load(doc(R"({"name": "gpu", "lanes": 2})",
                                   R"({"name": "long", "queue": "gpu.*", "duration": 50},
                                      {"name": "a", "queue": "gpu.*", "duration": 10},
                                      {"name": "b", "queue": "gpu.*", "duration": 10},
                                      {"name": "c", "queue": "gpu.*", "duration": 10, "after": ["a"]})"));
  const auto placed = sim::place(s, sim::scheduling::in_order);
  REQUIRE(placed.ok());
  CHECK(placed->position == std::vector<std::size_t>{0, 1, 2, 3});  // file order
  for (const sim::model m : sim::all_models) {
    const sim::run_result r = run_checked(s, m, sim::scheduling::in_order);
    CAPTURE(sim::to_string(m));
    CHECK(r.ops[0].queue == 0);
    CHECK(r.ops[1].queue == 1);  // gpu.0 is busy until 50
    CHECK(r.ops[2].queue == 1);  // gpu.1 frees at 10, before gpu.0
    CHECK(r.ops[0].start == 0);
    CHECK(r.ops[1].start == 0);
    CHECK(r.ops[2].start == 10);
    CHECK(r.ops[3].queue == 1);  // free at 20, gpu.0 at 50
    CHECK(r.ops[3].start >= 20);
  }
}

TEST_CASE("sim placement: ready-first lets a ready operation pass one listed before it that is "
          "still waiting; in-order does not",
          "[sim][placement]") {
  // `late` waits for the slow cpu operation; `early` is ready at once. In
  // the file `late` comes first on the gpu lane.
  const sim::scenario s = load(doc(R"({"name": "gpu"}, {"name": "cpu"})",
                                   R"({"name": "slow", "queue": "cpu", "duration": 50},
                                      {"name": "late", "queue": "gpu", "duration": 10, "after": ["slow"]},
                                      {"name": "early", "queue": "gpu", "duration": 20})"));
  const auto ready = sim::place(s, sim::scheduling::ready_first);
  REQUIRE(ready.ok());
  CHECK(ready->position[2] < ready->position[1]);  // early is submitted before late
  for (const sim::model m : sim::all_models) {
    CAPTURE(sim::to_string(m));
    const sim::run_result in_order = run_checked(s, m, sim::scheduling::in_order);
    const sim::run_result ready_first = run_checked(s, m, sim::scheduling::ready_first);
    CHECK(in_order.ops[2].start >= in_order.ops[1].end);  // FIFO behind `late`
    CHECK(ready_first.ops[2].start == 0);                 // runs while `slow` does
    CHECK(ready_first.ops[1].start >= 50);
    CHECK(ready_first.totals.makespan < in_order.totals.makespan);
  }
}

TEST_CASE("sim placement: ready-first turns the buffer orderings the file met through queue "
          "order into dependencies",
          "[sim][placement][buffers]") {
  // The file orders `use` before `drop` (which frees x, on the cpu) only
  // through the gpu lane: `use`, then `mark`, which `drop` follows.
  // Ready-first runs `mark` first (it is ready at once; `use` waits for
  // `slow`), so `drop` must now depend on `use` itself, or `next` would
  // take x's memory while `use` still reads it.
  const std::string text = R"({"name": "t", "devices": [{"name": "gpu"}, {"name": "cpu"}],
    "pool_bytes": 100, "buffers": [{"name": "x", "bytes": 100}, {"name": "y", "bytes": 100}],
    "ops": [
      {"name": "make", "queue": "gpu", "duration": 1, "alloc": ["x"], "use": ["x"]},
      {"name": "slow", "queue": "cpu", "duration": 40},
      {"name": "use", "queue": "gpu", "duration": 5, "use": ["x"], "after": ["slow"]},
      {"name": "mark", "queue": "gpu", "duration": 1},
      {"name": "drop", "queue": "cpu", "duration": 1, "free": ["x"], "after": ["mark"]},
      {"name": "next", "queue": "cpu", "duration": 1, "alloc": ["y"], "use": ["y"], "after": ["drop"]}]})";
  const sim::scenario s = load(text);
  const auto ready = sim::place(s, sim::scheduling::ready_first);
  REQUIRE(ready.ok());
  CHECK(ready->position[3] < ready->position[2]);  // mark passed use
  const sim::op_desc& drop = ready->placed.ops[ready->position[4]];
  CHECK(std::find(drop.after.begin(), drop.after.end(), ready->position[2]) != drop.after.end());
  // In-order adds nothing: the file's lane order holds.
  const auto in_order = sim::place(s, sim::scheduling::in_order);
  REQUIRE(in_order.ok());
  CHECK(in_order->placed.ops[4].after == s.ops[4].after);
  for (const sim::model m : sim::all_models) {
    CAPTURE(sim::to_string(m));
    const sim::run_result r = run_checked(s, m, sim::scheduling::ready_first);
    CHECK(r.ops[3].start < r.ops[2].start);
    CHECK(r.ops[4].start >= r.ops[2].end);
    CHECK(r.ops[5].start >= r.ops[2].end);
  }
}

TEST_CASE("sim placement: ready-first takes memory in the file's order: an allocation is "
          "submitted after the frees listed before it",
          "[sim][placement][buffers]") {
  // `next` (on gpu.1) is ready at once but can only fit in the memory
  // `drop` frees; submitting it first would find the pool full.
  const sim::scenario s = load(R"({"name": "t", "devices": [{"name": "gpu", "lanes": 2}],
    "pool_bytes": 100, "buffers": [{"name": "w", "bytes": 100}, {"name": "kv", "bytes": 100}],
    "ops": [
      {"name": "load", "queue": "gpu.0", "duration": 5, "alloc": ["w"], "use": ["w"]},
      {"name": "drop", "queue": "gpu.0", "duration": 1, "free": ["w"]},
      {"name": "next", "queue": "gpu.1", "duration": 5, "alloc": ["kv"], "use": ["kv"]}]})");
  const auto ready = sim::place(s, sim::scheduling::ready_first);
  REQUIRE(ready.ok());
  CHECK(ready->position[2] > ready->position[1]);
  for (const sim::model m : sim::all_models) {
    CAPTURE(sim::to_string(m));
    const sim::run_result r = run_checked(s, m, sim::scheduling::ready_first);
    CHECK(r.ops[2].start >= r.ops[0].end);  // the reused memory's last use ended
  }
}

namespace {

/// A random DAG of `n` operations pinned to lanes of three devices (two
/// lanes each), as scenario text in file order `order`.
struct random_dag {
  struct node {
    std::string lane;
    int duration;
    std::vector<std::size_t> after;
  };
  std::vector<node> nodes;

  static random_dag make(std::mt19937_64& rng, std::size_t n) {
    random_dag g;
    const char* lanes[] = {"a.0", "a.1", "b.0", "b.1", "c.0", "c.1"};
    for (std::size_t i = 0; i < n; ++i) {
      node x;
      x.lane = lanes[rng() % 6];
      x.duration = 1 + static_cast<int>(rng() % 20);
      const std::size_t deps = i == 0 ? 0 : rng() % 4;
      for (std::size_t k = 0; k < deps; ++k) {
        const std::size_t d = rng() % i;
        if (std::find(x.after.begin(), x.after.end(), d) == x.after.end()) x.after.push_back(d);
      }
      g.nodes.push_back(x);
    }
    return g;
  }

  /// The scenario with its operations listed in `order` (a topological
  /// order of the nodes).
  [[nodiscard]] std::string text(const std::vector<std::size_t>& order) const {
    std::string ops;
    for (const std::size_t i : order) {
      if (!ops.empty()) ops += ",";
      ops += R"({"name": "n)" + std::to_string(i) + R"(", "queue": ")" + nodes[i].lane +
             R"(", "duration": )" + std::to_string(nodes[i].duration) + R"(, "after": [)";
      for (std::size_t k = 0; k < nodes[i].after.size(); ++k) {
        ops += (k ? ",\"n" : "\"n") + std::to_string(nodes[i].after[k]) + "\"";
      }
      ops += "]}";
    }
    return doc(R"({"name": "a", "lanes": 2}, {"name": "b", "lanes": 2}, {"name": "c", "lanes": 2})", ops);
  }
};

/// Each lane's operations, by name, in the order the scenario lists them.
std::map<std::size_t, std::vector<std::string>> lane_orders(const sim::scenario& s) {
  std::map<std::size_t, std::vector<std::string>> out;
  for (const sim::op_desc& op : s.ops) out[op.queues.front()].push_back(op.name);
  return out;
}

}  // namespace

TEST_CASE("sim placement: random DAGs whose ready-first order keeps every lane in file order run "
          "identically under both scheduling models",
          "[sim][placement][differential]") {
  std::mt19937_64 rng(20261126);
  int compared = 0;
  int differing_global_order = 0;
  for (int round = 0; round < 200; ++round) {
    const random_dag g = random_dag::make(rng, 8 + rng() % 25);
    std::vector<std::size_t> file_order(g.nodes.size());
    for (std::size_t i = 0; i < file_order.size(); ++i) file_order[i] = i;
    // Half the rounds list the file in the ready-first order itself, so
    // that the condition holds often; the others keep definition order.
    sim::scenario s = load(g.text(file_order));
    if (round % 2 == 1) {
      const auto ready = sim::place(s, sim::scheduling::ready_first);
      REQUIRE(ready.ok());
      std::vector<std::size_t> by_ready(g.nodes.size());
      for (std::size_t i = 0; i < g.nodes.size(); ++i) by_ready[ready->position[i]] = i;
      s = load(g.text(by_ready));
    }
    const auto ready = sim::place(s, sim::scheduling::ready_first);
    REQUIRE(ready.ok());
    if (lane_orders(ready->placed) != lane_orders(s)) continue;
    ++compared;
    bool same_global = true;
    for (std::size_t i = 0; i < s.ops.size(); ++i) same_global = same_global && ready->position[i] == i;
    if (!same_global) ++differing_global_order;
    for (const sim::model m : sim::all_models) {
      const sim::run_result a = run_checked(s, m, sim::scheduling::in_order);
      const sim::run_result b = run_checked(s, m, sim::scheduling::ready_first);
      INFO("round " << round << ", " << sim::to_string(m));
      REQUIRE(a.ops.size() == b.ops.size());
      for (std::size_t i = 0; i < a.ops.size(); ++i) {
        INFO(s.ops[i].name);
        CHECK(a.ops[i].queue == b.ops[i].queue);
        CHECK(a.ops[i].start == b.ops[i].start);
        CHECK(a.ops[i].end == b.ops[i].end);
        CHECK(a.ops[i].device_waits == b.ops[i].device_waits);
        CHECK(a.ops[i].waits_elided == b.ops[i].waits_elided);
        CHECK(a.ops[i].epoch == b.ops[i].epoch);
      }
      CHECK(a.totals.makespan == b.totals.makespan);
      CHECK(a.totals.device_waits == b.totals.device_waits);
      CHECK(a.totals.metadata_bytes == b.totals.metadata_bytes);
    }
  }
  // The check must have had something to compare, including orders where
  // only the lanes (not the whole file) agree.
  CHECK(compared >= 100);
  CHECK(differing_global_order >= 5);
}

//===-- named semaphores ---------------------------------------------------------===//

TEST_CASE("sim semaphores: a wait on a named semaphore is met by the first signal that reaches "
          "its value",
          "[sim][semaphores]") {
  const sim::scenario s = load(R"({"name": "t", "devices": [{"name": "gpu"}, {"name": "cpu"}, {"name": "npu"}],
    "semaphores": [{"name": "tokens"}],
    "ops": [
      {"name": "p1", "queue": "gpu", "duration": 5, "signal": [{"semaphore": "tokens", "value": 1}]},
      {"name": "p2", "queue": "gpu", "duration": 5, "signal": [{"semaphore": "tokens", "value": 3}]},
      {"name": "c1", "queue": "cpu", "duration": 1, "wait": [{"semaphore": "tokens", "value": 3}]},
      {"name": "c2", "queue": "cpu", "duration": 1, "wait": [{"semaphore": "tokens", "value": 1}]},
      {"name": "c3", "queue": "npu", "duration": 1, "wait": [{"semaphore": "tokens", "value": 2}]}]})");
  REQUIRE(s.semaphores.size() == 1);
  REQUIRE(s.ops[2].waits.size() == 1);
  CHECK(s.ops[2].waits[0].producer == 1);
  CHECK(s.ops[2].after == std::vector<std::size_t>{1});
  CHECK(s.ops[3].waits[0].producer == 0);
  CHECK(s.ops[4].waits[0].producer == 1);  // value 2 is first reached by p2's 3
  CHECK(s.ops[1].signals.size() == 1);
  CHECK(s.ops[1].signals[0].value == 3);

  const sim::run_result events = run_checked(s, sim::model::binary_events, sim::scheduling::in_order);
  const sim::run_result timelines = run_checked(s, sim::model::timelines, sim::scheduling::in_order);
  const sim::run_result frontiers = run_checked(s, sim::model::frontiers, sim::scheduling::in_order);
  // c2 (tokens >= 1) after c1 (tokens >= 3) on the same lane: a binary
  // event names p1's completion, not a value, so it is waited for again;
  // the tokens timeline was already waited for at 3; frontiers know p1 from
  // the frontier that tokens = 3 carried.
  CHECK(events.ops[3].device_waits == 1);
  CHECK(timelines.ops[3].device_waits == 0);
  CHECK(timelines.ops[3].elided.already_waited == 1);
  CHECK(frontiers.ops[3].device_waits == 0);
  CHECK(frontiers.ops[3].elided.dominated == 1);
  for (const sim::run_result* r : {&events, &timelines, &frontiers}) {
    CHECK(r->ops[2].start >= r->ops[1].end);
    CHECK(r->ops[4].start >= r->ops[1].end);
    CHECK(r->ops[2].device_waits == 1);
  }
  // c1 imports the frontier of tokens = 3: p2's lane at epoch 2. c3 waits
  // for 2 while only 3 is submitted: a lower signal submitted later could
  // reach 2 first, so the wait imports nothing (knowing less is sound).
  CHECK(frontiers.knowledge[2].epoch_of(frontiers.queue_axes[0]) == 2);
  CHECK(frontiers.knowledge[4].epoch_of(frontiers.queue_axes[0]) == 0);
}

TEST_CASE("sim semaphores: the loader enforces increasing signals in execution order and waits "
          "that some earlier signal meets",
          "[sim][semaphores][errors]") {
  const auto with = [](const std::string& ops) {
    return sim::load_scenario(R"({"name": "t", "devices": [{"name": "a"}, {"name": "b"}],
      "semaphores": [{"name": "s"}], "ops": [)" + ops + "]}");
  };
  const auto expect_error = [](const sim::parsed<sim::scenario>& r, const std::string& part) {
    INFO(part);
    REQUIRE_FALSE(r.ok());
    INFO(r.error().to_string());
    CHECK(r.error().message.find(part) != std::string::npos);
  };
  expect_error(with(R"({"name": "x", "queue": "a", "duration": 1, "signal": [{"semaphore": "t", "value": 1}]})"),
               "unknown semaphore \"t\"");
  expect_error(with(R"({"name": "x", "queue": "a", "duration": 1, "signal": [{"semaphore": "s", "value": 0}]})"),
               "integer from 1");
  expect_error(with(R"({"name": "x", "queue": "a", "duration": 1, "signal": [{"semaphore": "s", "value": 2}]},
                      {"name": "y", "queue": "a", "duration": 1, "signal": [{"semaphore": "s", "value": 2}]})"),
               "values must increase");
  expect_error(with(R"({"name": "x", "queue": "a", "duration": 1, "signal": [{"semaphore": "s", "value": 1}]},
                      {"name": "y", "queue": "b", "duration": 1, "signal": [{"semaphore": "s", "value": 2}]})"),
               "not ordered after its previous signaller \"x\"");
  expect_error(with(R"({"name": "x", "queue": "a", "duration": 1, "signal": [{"semaphore": "s", "value": 1}]},
                      {"name": "y", "queue": "b", "duration": 1, "wait": [{"semaphore": "s", "value": 2}]})"),
               "signals semaphore \"s\" to 2 or more");
  expect_error(with(R"({"name": "x", "queue": "a", "duration": 1,
                        "signal": [{"semaphore": "s", "value": 1}, {"semaphore": "s", "value": 2}]})"),
               "appears twice");
  // Ordered through the lane (queue order) or through "after": accepted.
  CHECK(with(R"({"name": "x", "queue": "a", "duration": 1, "signal": [{"semaphore": "s", "value": 1}]},
               {"name": "y", "queue": "a", "duration": 1, "signal": [{"semaphore": "s", "value": 2}]},
               {"name": "z", "queue": "b", "duration": 1, "after": ["y"], "signal": [{"semaphore": "s", "value": 5}]})")
            .ok());
}

TEST_CASE("sim semaphores: ready-first keeps a semaphore's signals in execution order",
          "[sim][semaphores][placement]") {
  // s1 and s2 signal `s` on one lane, ordered only by the lane; s2 is
  // ready first. Ready-first must still run s1's signal before s2's.
  const sim::scenario s = load(R"({"name": "t", "devices": [{"name": "a"}, {"name": "b"}],
    "semaphores": [{"name": "s"}],
    "ops": [
      {"name": "slow", "queue": "b", "duration": 30},
      {"name": "s1", "queue": "a", "duration": 1, "after": ["slow"], "signal": [{"semaphore": "s", "value": 1}]},
      {"name": "s2", "queue": "a", "duration": 1, "signal": [{"semaphore": "s", "value": 2}]},
      {"name": "w", "queue": "b", "duration": 1, "wait": [{"semaphore": "s", "value": 2}]}]})");
  for (const sim::model m : sim::all_models) {
    CAPTURE(sim::to_string(m));
    const sim::run_result r = run_checked(s, m, sim::scheduling::ready_first);
    CHECK(r.ops[2].start >= r.ops[1].end);
    CHECK(r.ops[3].start >= r.ops[2].end);
  }
}

//===-- scaling ------------------------------------------------------------------===//

TEST_CASE("sim scaling: width copies that share lanes compete for them; ready-first interleaves "
          "them",
          "[sim][scaling]") {
  const sim::scenario s = load(doc(R"({"name": "gpu"}, {"name": "cpu"})",
                                   R"({"name": "load", "queue": "cpu", "duration": 30},
                                      {"name": "run", "queue": "gpu", "duration": 10, "after": ["load"]},
                                      {"name": "post", "queue": "gpu", "duration": 10})"));
  sim::scale_options shared;
  shared.share_lanes = true;
  const auto wide = sim::scale(s, 3, 1, shared);
  REQUIRE(wide.ok());
  CHECK(wide->queues.size() == s.queues.size());
  REQUIRE(wide->ops.size() == 9);
  CHECK(wide->ops[4].name == "run/w1");
  CHECK(wide->ops[4].queues == s.ops[1].queues);
  const auto own = sim::scale(s, 3, 1);
  REQUIRE(own.ok());
  CHECK(own->queues.size() == 3 * s.queues.size());
  for (const sim::model m : sim::all_models) {
    CAPTURE(sim::to_string(m));
    const sim::run_result in_order = run_checked(*wide, m, sim::scheduling::in_order);
    const sim::run_result ready_first = run_checked(*wide, m, sim::scheduling::ready_first);
    const sim::run_result separate = run_checked(*own, m, sim::scheduling::in_order);
    // Sharing the lanes costs time; ready-first recovers some of it by
    // running the `post`s while the `load`s run.
    CHECK(in_order.totals.makespan > separate.totals.makespan);
    CHECK(ready_first.totals.makespan < in_order.totals.makespan);
  }
}

TEST_CASE("sim scaling: iterations chain through a named semaphore and explicit cross-iteration "
          "edges",
          "[sim][scaling][semaphores]") {
  // A decode loop: `step` emits a token (tokens := 1 per iteration) after
  // the previous iteration's token; `sample` reads the previous step.
  const sim::scenario s = load(R"({"name": "decode", "devices": [{"name": "gpu"}, {"name": "cpu"}],
    "semaphores": [{"name": "tokens"}],
    "ops": [
      {"name": "step", "queue": "gpu", "duration": 10,
       "wait": [{"semaphore": "tokens", "value": 1, "previous": true}],
       "signal": [{"semaphore": "tokens", "value": 1}]},
      {"name": "sample", "queue": "cpu", "duration": 2, "after_previous": ["step"]}]})");
  CHECK(s.ops[0].waits.empty());  // a single iteration waits for nothing
  REQUIRE(s.ops[0].previous_waits.size() == 1);
  CHECK(s.ops[1].after_previous == std::vector<std::size_t>{0});
  const auto deep = sim::scale(s, 1, 4);
  REQUIRE(deep.ok());
  REQUIRE(deep->ops.size() == 8);
  REQUIRE(deep->semaphores.size() == 1);
  for (std::size_t d = 0; d < 4; ++d) {
    const sim::op_desc& step = deep->ops[2 * d];
    CAPTURE(d);
    REQUIRE(step.signals.size() == 1);
    CHECK(step.signals[0].value == d + 1);
    if (d == 0) {
      CHECK(step.waits.empty());
      CHECK(deep->ops[1].after.empty());
    } else {
      REQUIRE(step.waits.size() == 1);
      CHECK(step.waits[0].value == d);
      CHECK(step.waits[0].producer == 2 * (d - 1));
      CHECK(deep->ops[2 * d + 1].after == std::vector<std::size_t>{2 * (d - 1)});
    }
  }
  for (const sim::model m : sim::all_models) {
    CAPTURE(sim::to_string(m));
    const sim::run_result r = run_checked(*deep, m, sim::scheduling::in_order);
    CHECK(r.ops[6].start >= r.ops[4].end);
    CHECK(r.ops[7].start >= r.ops[4].end);
  }
  // A `previous` wait on a value no iteration reaches is refused.
  const auto bad = sim::load_scenario(R"({"name": "t", "devices": [{"name": "gpu"}],
    "semaphores": [{"name": "s"}],
    "ops": [{"name": "x", "queue": "gpu", "duration": 1, "signal": [{"semaphore": "s", "value": 1}],
             "wait": [{"semaphore": "s", "value": 2, "previous": true}]}]})");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("\"previous\"") != std::string::npos);
}

TEST_CASE("sim scaling: a semaphore's first signaller in each iteration follows the previous "
          "iteration's last",
          "[sim][scaling][semaphores]") {
  // `a` and `b` signal s on two lanes; iterations are linked only by an
  // edge from b to the next a's consumer, so scale() must order the next
  // iteration's first signaller (a) after this one's last (b).
  const sim::scenario s = load(R"({"name": "t", "devices": [{"name": "x"}, {"name": "y"}],
    "semaphores": [{"name": "s"}],
    "ops": [
      {"name": "a", "queue": "x", "duration": 1, "signal": [{"semaphore": "s", "value": 1}]},
      {"name": "b", "queue": "y", "duration": 5, "after": ["a"], "signal": [{"semaphore": "s", "value": 2}]},
      {"name": "c", "queue": "x", "duration": 1, "after_previous": ["b"]}]})");
  const auto deep = sim::scale(s, 1, 3);
  REQUIRE(deep.ok());
  CHECK(deep->ops[3].signals[0].value == 3);
  CHECK(std::find(deep->ops[3].after.begin(), deep->ops[3].after.end(), 1) != deep->ops[3].after.end());
  for (const sim::model m : sim::all_models) {
    for (const sim::scheduling how : {sim::scheduling::in_order, sim::scheduling::ready_first}) {
      CAPTURE(sim::to_string(m), sim::to_string(how));
      const sim::run_result r = run_checked(*deep, m, how);
      CHECK(r.ops[3].start >= r.ops[1].end);
    }
  }
}

TEST_CASE("sim semaphores: more unreached signals of one named semaphore than it holds make the "
          "host wait, not fail",
          "[sim][semaphores]") {
  std::string ops;
  for (int i = 1; i <= 300; ++i) {
    if (i > 1) ops += ",";
    ops += R"({"name": "s)" + std::to_string(i) + R"(", "queue": "gpu", "duration": 1, "signal": [{"semaphore": "s", "value": )" +
           std::to_string(i) + "}]}";
  }
  ops += R"(,{"name": "last", "queue": "cpu", "duration": 1, "wait": [{"semaphore": "s", "value": 300}]})";
  const sim::scenario s =
      load(R"({"name": "t", "devices": [{"name": "gpu"}, {"name": "cpu"}], "semaphores": [{"name": "s"}], "ops": [)" +
           ops + "]}");
  const sim::run_result r = run_checked(s, sim::model::frontiers, sim::scheduling::in_order);
  CHECK(r.totals.host_queries >= 1);  // the host waited for room
  CHECK(r.ops.back().start >= r.ops[299].end);
}
