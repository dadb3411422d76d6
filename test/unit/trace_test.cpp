// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Tests for <causal/trace_sink.hpp> and <causal/trace.hpp>: the exact
// events (kinds, order, tiers, producers, frontiers) a known two-queue
// sequence reports, host deferrals and pump(), semaphore failures, the
// process hooks, that no sink means no events and no allocation, the
// recording sink's cap, and the two writers: Chrome JSON is parsed back
// with the library's strict JSON reader (<causal/sim/json.hpp>) and its structure and
// values checked, DOT is checked textually; both escape hostile strings.
// A concurrent case (one sink, several signalling threads) is meant for
// the ThreadSanitizer build.
//
// Axes: queues A (m0.queue.1), B (m0.queue.2), C (m0.queue.3).

#include <causal/frontier.hpp>
#include <causal/queue.hpp>
#include <causal/semaphore.hpp>
#include <causal/sim/json.hpp>
#include <causal/trace.hpp>

#include "catch.hpp"
#include "counting_new.hpp"
#include "string_makers.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace {

using causal::axis;
using causal::errc;
using causal::frontier_entry;
using causal::semaphore;
using causal::trace_kind;
using causal::trace_record;
using causal::trace_tier;

const axis A = causal::make_axis(0, 0, causal::domain::queue, 1).value();
const axis B = causal::make_axis(0, 0, causal::domain::queue, 2).value();
const axis C = causal::make_axis(0, 0, causal::domain::queue, 3).value();

using queue = causal::recording_queue<true>;
using deferring_queue = causal::recording_queue<false>;
using wait = queue::wait_type;
using signal = queue::signal_type;

/// A recording backend that names its operations (trace_label).
struct labelled_backend : causal::recording_backend<> {
  const char* trace_label(std::uint64_t tag) const noexcept {
    switch (tag) {
      case 1: return "tokenize \"batch\"";
      case 2: return "encode\\decode\nstep";
      default: return nullptr;
    }
  }
};
using labelled_queue = causal::basic_queue<causal::frontier, labelled_backend>;

std::vector<frontier_entry> entries(std::initializer_list<frontier_entry> list) { return list; }

template <class Q>
void complete_all(Q& q) {
  while (const std::uint64_t e = q.backend().complete_next()) q.retire(e);
}

/// The two-queue sequence every writer test uses; see the test below for
/// the decisions it must produce.
struct scenario {
  causal::recording_sink sink;
  semaphore h, s1, s2;
  queue qa{A}, qb{B};

  scenario() {
    for (semaphore* s : {&h, &s1, &s2}) s->set_trace_sink(&sink);
    qa.set_trace_sink(&sink);
    qb.set_trace_sink(&sink);
    sink.name(&h, "h");
    sink.name(&s1, "s1");
    sink.name(&s2, "s2");
    sink.name(A, "alpha");
    sink.name(B, "beta");
  }

  void run() {
    REQUIRE(h.signal(1).ok());                                    // host value, no producer
    REQUIRE(qa.submit({wait{&h, 1}}, {signal{&s1, 1}}, 10).ok());  // tier 0
    REQUIRE(qa.submit({wait{&s1, 1}}, {signal{&s1, 2}}, 11).ok()); // tier 1, same queue
    REQUIRE(qb.submit({wait{&s1, 2}}, {signal{&s2, 1}}, 20).ok()); // tier 2, device
    REQUIRE(qb.submit({wait{&s1, 1}}, {}, 21).ok());               // tier 1, dominated
    complete_all(qa);
    complete_all(qb);
  }
};

std::string json_of(const causal::recording_sink& sink) {
  std::ostringstream os;
  REQUIRE(causal::write_chrome_trace(os, sink).ok());
  return os.str();
}

std::string dot_of(const causal::recording_sink& sink) {
  std::ostringstream os;
  REQUIRE(causal::write_dot(os, sink).ok());
  return os.str();
}

/// Read-only access to a parsed document for assertions: lookups that
/// throw std::out_of_range (Catch2 reports it as a failure) instead of
/// returning null, so a chain like doc["a"][0]["b"] stays one expression.
/// Shares ownership of the whole document.
class json_view {
 public:
  using kind = causal::sim::json_value::kind;

  json_view(std::shared_ptr<const causal::sim::json_value> root, const causal::sim::json_value& v)
      : root_(std::move(root)), v_(&v) {}

  [[nodiscard]] bool is(kind k) const noexcept { return v_->is(k); }
  [[nodiscard]] json_view operator[](std::string_view key) const {
    const causal::sim::json_value* m = v_->is(kind::object) ? v_->find(key) : nullptr;
    if (m == nullptr) throw std::out_of_range("json_view: no member " + std::string(key));
    return {root_, *m};
  }
  [[nodiscard]] json_view operator[](std::size_t i) const {
    if (!v_->is(kind::array) || i >= v_->items.size()) throw std::out_of_range("json_view: no element");
    return {root_, v_->items[i]};
  }
  [[nodiscard]] bool has(std::string_view key) const { return v_->find(key) != nullptr; }
  [[nodiscard]] std::size_t size() const {
    if (v_->is(kind::array)) return v_->items.size();
    if (v_->is(kind::object)) return v_->keys.size();
    throw std::out_of_range("json_view: size of a scalar");
  }
  /// The number as an unsigned integer; throws unless it is one exactly.
  [[nodiscard]] std::uint64_t as_u64() const {
    std::uint64_t out = 0;
    if (!v_->as_uint(out)) throw std::out_of_range("json_view: not an unsigned integer: " + v_->text);
    return out;
  }
  [[nodiscard]] double number() const {
    double out = 0;
    if (!v_->as_double(out)) throw std::out_of_range("json_view: not a number: " + v_->text);
    return out;
  }
  /// A string's decoded text, or a number's literal.
  [[nodiscard]] const std::string& text() const noexcept { return v_->text; }
  [[nodiscard]] bool boolean() const noexcept { return v_->boolean; }

 private:
  std::shared_ptr<const causal::sim::json_value> root_;
  const causal::sim::json_value* v_;
};

/// Parses `text` with the strict reader; throws std::runtime_error with the
/// reader's diagnostic when it is not JSON.
json_view parse_json_doc(std::string_view text) {
  causal::sim::parsed<causal::sim::json_value> r = causal::sim::parse_json(text);
  if (!r) throw std::runtime_error("not JSON: " + r.error().to_string());
  auto root = std::make_shared<const causal::sim::json_value>(std::move(r.value()));
  return {root, *root};
}

/// The trace events of `doc` with phase `ph` (and pid, when not 0).
std::vector<json_view> events_with(const json_view& doc, const std::string& ph,
                                          std::uint64_t pid = 0) {
  std::vector<json_view> out;
  const json_view& list = doc["traceEvents"];
  for (std::size_t i = 0; i < list.size(); ++i) {
    const json_view& e = list[i];
    if (e["ph"].text() == ph && (pid == 0 || e["pid"].as_u64() == pid)) out.push_back(e);
  }
  return out;
}

/// The name a thread_name metadata event gives to (pid, tid).
std::string track_name(const json_view& doc, std::uint64_t pid, std::uint64_t tid) {
  for (const json_view& m : events_with(doc, "M", pid)) {
    if (m["name"].text() == "thread_name" && m["tid"].as_u64() == tid) return m["args"]["name"].text();
  }
  return "<none>";
}

/// A sink that counts every hook call.
struct counting_sink : causal::trace_sink {
  int calls = 0;
  void on_queue_submit(const causal::trace_queue_submit&) noexcept override { ++calls; }
  void on_queue_wait(const causal::trace_queue_wait&) noexcept override { ++calls; }
  void on_queue_signal(const causal::trace_queue_signal&) noexcept override { ++calls; }
  void on_queue_retire(const causal::trace_queue_retire&) noexcept override { ++calls; }
  void on_semaphore_signal(const causal::trace_semaphore_signal&) noexcept override { ++calls; }
};

}  // namespace

//===-- events -----------------------------------------------------------------===//

TEST_CASE("trace: a known two-queue sequence reports exact decisions in order", "[trace][events]") {
  scenario s;
  s.run();
  const std::vector<trace_record> ev = s.sink.events();
  REQUIRE(s.sink.dropped() == 0);

  const std::vector<trace_kind> expected_kinds = {
      trace_kind::semaphore_signal,  // h = 1
      trace_kind::queue_wait,       trace_kind::queue_submit, trace_kind::queue_signal,  // A:1
      trace_kind::queue_wait,       trace_kind::queue_submit, trace_kind::queue_signal,  // A:2
      trace_kind::queue_wait,       trace_kind::queue_submit, trace_kind::queue_signal,  // B:1
      trace_kind::queue_wait,       trace_kind::queue_submit,                            // B:2
      trace_kind::semaphore_signal, trace_kind::queue_retire,  // s1 = 1, A retires 1
      trace_kind::semaphore_signal, trace_kind::queue_retire,  // s1 = 2, A retires 2
      trace_kind::semaphore_signal, trace_kind::queue_retire,  // s2 = 1, B retires 1
      trace_kind::queue_retire,                                // B retires 2
  };
  std::vector<trace_kind> kinds;
  for (const trace_record& r : ev) kinds.push_back(r.kind);
  REQUIRE(kinds == expected_kinds);

  // Time stamps never go backwards on one thread.
  for (std::size_t i = 1; i < ev.size(); ++i) CHECK(ev[i - 1].time_ns <= ev[i].time_ns);

  // The host signal: no producer, empty frontier.
  CHECK(ev[0].object == &s.h);
  CHECK(ev[0].value == 1);
  CHECK(ev[0].producer.epoch == 0);
  CHECK(ev[0].frontier.empty());
  CHECK_FALSE(ev[0].external);

  struct expected_wait {
    std::size_t at;
    axis queue;
    std::uint64_t epoch;
    const semaphore* sem;
    std::uint64_t value;
    trace_tier tier;
    frontier_entry producer;
    bool reached;
    bool imported;
  };
  const std::vector<expected_wait> waits = {
      {1, A, 1, &s.h, 1, trace_tier::reached, {}, true, true},
      {4, A, 2, &s.s1, 1, trace_tier::same_queue, {A, 1}, false, true},
      {7, B, 1, &s.s1, 2, trace_tier::device, {A, 2}, false, true},
      {10, B, 2, &s.s1, 1, trace_tier::dominated, {A, 1}, false, true},
  };
  for (const expected_wait& w : waits) {
    INFO("event " << w.at);
    const trace_record& r = ev[w.at];
    CHECK(r.queue == w.queue);
    CHECK(r.epoch == w.epoch);
    CHECK(r.index == 0);
    CHECK(r.object == w.sem);
    CHECK(r.value == w.value);
    CHECK(r.tier == w.tier);
    CHECK(r.producer == w.producer);
    CHECK(r.reached == w.reached);
    CHECK(r.imported == w.imported);
    CHECK_FALSE(r.value_tainted);
  }
  // The device wait imported exactly its producer's frontier.
  CHECK(ev[7].frontier == entries({{A, 2}}));
  CHECK(ev[7].signal_value == 2);

  // Submits: epoch, tag, counts and the knowledge the signals carry.
  CHECK(ev[2].queue == A);
  CHECK(ev[2].epoch == 1);
  CHECK(ev[2].tag == 10);
  CHECK(ev[2].index == 1);  // one wait
  CHECK(ev[2].count == 1);  // one signal
  CHECK_FALSE(ev[2].has_label);
  CHECK_FALSE(ev[2].pumped);
  CHECK(ev[2].frontier == entries({{A, 1}}));
  CHECK(ev[8].frontier == entries({{A, 2}, {B, 1}}));
  CHECK(ev[11].frontier == entries({{A, 2}, {B, 2}}));
  CHECK(ev[11].count == 0);

  // Queue signals name the semaphore, value and the signalling epoch.
  CHECK((ev[3].object == &s.s1 && ev[3].value == 1 && ev[3].epoch == 1 && ev[3].queue == A));
  CHECK((ev[9].object == &s.s2 && ev[9].value == 1 && ev[9].epoch == 1 && ev[9].queue == B));

  // Reached values carry the frontier their waiters import, and the producer.
  CHECK((ev[12].object == &s.s1 && ev[12].value == 1));
  CHECK(ev[12].producer == frontier_entry{A, 1});
  CHECK(ev[12].frontier == entries({{A, 1}}));
  CHECK(ev[16].object == &s.s2);
  CHECK(ev[16].producer == frontier_entry{B, 1});
  CHECK(ev[16].frontier == entries({{A, 2}, {B, 1}}));

  // Retires in order.
  CHECK((ev[13].queue == A && ev[13].epoch == 1));
  CHECK((ev[15].queue == A && ev[15].epoch == 2));
  CHECK((ev[17].queue == B && ev[17].epoch == 1));
  CHECK((ev[18].queue == B && ev[18].epoch == 2));

  // The events agree with the queues' own counters.
  CHECK(s.qa.stats().elided_reached == 1);
  CHECK(s.qa.stats().elided_same_queue == 1);
  CHECK(s.qb.stats().device_waits == 1);
  CHECK(s.qb.stats().elided_dominated == 1);
}

TEST_CASE("trace: a deferred submission reports its deferral, then its waits when pumped",
          "[trace][events][deferral]") {
  causal::recording_sink sink;
  semaphore s3;
  deferring_queue qc{C};
  qc.set_trace_sink(&sink);
  s3.set_trace_sink(&sink);

  const auto first = qc.submit({wait{&s3, 1}}, {}, 30);
  REQUIRE(first.ok());
  REQUIRE(first->deferred);
  const auto second = qc.submit({}, {}, 31);  // queued behind the first (FIFO)
  REQUIRE(second->deferred);
  REQUIRE(qc.pump().value() == 0);  // still no signal of s3 >= 1

  std::vector<trace_record> ev = sink.events();
  REQUIRE(ev.size() == 2);
  CHECK(ev[0].kind == trace_kind::queue_deferral);
  CHECK(ev[0].queue == C);
  CHECK(ev[0].tag == 30);
  CHECK(ev[0].index == 0);  // wait 0 forced it
  CHECK(ev[0].object == &s3);
  CHECK(ev[0].value == 1);
  CHECK(ev[0].count == 1);  // held
  CHECK(ev[1].kind == trace_kind::queue_deferral);
  CHECK(ev[1].tag == 31);
  CHECK(ev[1].index == causal::trace_no_wait);
  CHECK(ev[1].object == nullptr);
  CHECK(ev[1].count == 2);

  REQUIRE(s3.signal(1).ok());
  REQUIRE(qc.pump().value() == 2);
  ev = sink.events();
  const std::vector<trace_kind> expected = {
      trace_kind::queue_deferral, trace_kind::queue_deferral, trace_kind::semaphore_signal,
      trace_kind::queue_wait,     trace_kind::queue_submit,   trace_kind::queue_submit,
  };
  std::vector<trace_kind> kinds;
  for (const trace_record& r : ev) kinds.push_back(r.kind);
  REQUIRE(kinds == expected);
  CHECK(ev[3].tier == trace_tier::reached);
  CHECK(ev[3].epoch == 1);
  CHECK((ev[4].epoch == 1 && ev[4].tag == 30 && ev[4].pumped));
  CHECK((ev[5].epoch == 2 && ev[5].tag == 31 && ev[5].pumped));
}

TEST_CASE("trace: only the failure that wins is reported", "[trace][events][fail]") {
  causal::recording_sink sink;
  semaphore s;
  s.set_trace_sink(&sink);
  CHECK(s.fail(causal::error{errc::device_lost, "gone", 7}));
  CHECK_FALSE(s.fail(causal::error{errc::timeout, "later"}));
  CHECK_FALSE(s.signal(1).ok());  // a failed semaphore reaches nothing
  const auto ev = sink.events();
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].kind == trace_kind::semaphore_fail);
  CHECK(ev[0].object == &s);
  CHECK(ev[0].code == errc::device_lost);
  CHECK(ev[0].text == "gone");
  CHECK(ev[0].value == 7);
}

TEST_CASE("trace: external signals are reported as external, with a tainted frontier",
          "[trace][events]") {
  causal::recording_sink sink;
  semaphore s;
  s.set_trace_sink(&sink);
  REQUIRE(s.signal_external(4).ok());
  const auto ev = sink.events();
  REQUIRE(ev.size() == 1);
  CHECK(ev[0].external);
  CHECK(ev[0].frontier_tainted);
  CHECK(ev[0].value == 4);
}

TEST_CASE("trace: labels come from the backend's trace_label", "[trace][events]") {
  causal::recording_sink sink;
  labelled_queue q{A};
  q.set_trace_sink(&sink);
  REQUIRE(q.submit({}, {}, 1).ok());
  REQUIRE(q.submit({}, {}, 5).ok());
  const auto ev = sink.events();
  REQUIRE(ev.size() == 2);
  CHECK(ev[0].has_label);
  CHECK(ev[0].text == "tokenize \"batch\"");
  CHECK_FALSE(ev[1].has_label);
  CHECK(ev[1].tag == 5);
}

TEST_CASE("trace: no sink means no events and no allocation", "[trace][off]") {
  counting_sink counter;
  semaphore s1, s2;
  queue qa{A};
  qa.set_trace_sink(&counter);
  s1.set_trace_sink(&counter);
  REQUIRE(qa.submit({}, {signal{&s1, 1}}, 1).ok());
  const int with_sink = counter.calls;
  CHECK(with_sink == 2);  // submit + signal
  CHECK(qa.get_trace_sink() == &counter);

  qa.set_trace_sink(nullptr);
  s1.set_trace_sink(nullptr);
  CHECK(qa.get_trace_sink() == nullptr);
  std::uint64_t allocations = 0;
  {
    causal::test::allocation_guard guard;
    for (std::uint64_t v = 2; v < 200; ++v) {
      (void)qa.submit({wait{&s1, v - 1}}, {signal{&s1, v}}, v);
      (void)qa.backend().complete_next();
      qa.retire(qa.epoch());
      (void)s2.signal(v);
    }
    allocations = guard.allocations();
  }
  CHECK(allocations == 0);
  CHECK(counter.calls == with_sink);
}

TEST_CASE("trace: the process hooks report through the sink, and do nothing without one",
          "[trace][process]") {
  causal::recording_sink sink;
  int p = 0, q = 0;
  causal::report_drain_begin(nullptr, &p, 0);
  causal::report_wake(nullptr, &p, 1, true);
  CHECK(sink.size() == 0);

  causal::report_wake(&sink, &p, 1, true);
  causal::report_drain_begin(&sink, &p, 0);
  causal::report_drain_end(&sink, &p, 0, false, true, true);
  causal::report_drain_begin(&sink, &q, 1);
  causal::report_drain_end(&sink, &q, 1, true, true, false);
  causal::report_complete(&sink, &q, causal::error{errc::cancelled, "stop"}, 1);
  const auto ev = sink.events();
  REQUIRE(ev.size() == 6);
  CHECK((ev[0].kind == trace_kind::wake && ev[0].runnable && ev[0].value == 1 &&
         ev[0].worker == causal::trace_no_worker));
  CHECK((ev[2].kind == trace_kind::drain_end && !ev[2].completed && ev[2].keep_active));
  CHECK((ev[4].kind == trace_kind::drain_end && ev[4].completed && ev[4].worker == 1));
  CHECK((ev[5].kind == trace_kind::complete && ev[5].code == errc::cancelled && ev[5].text == "stop"));

  sink.name(&q, "decoder");
  const json_view doc = parse_json_doc(json_of(sink));
  // Drains are complete slices, never B/E pairs.
  CHECK(events_with(doc, "B", 3).empty());
  CHECK(events_with(doc, "E", 3).empty());
  const auto drains = events_with(doc, "X", 3);
  REQUIRE(drains.size() == 2);
  CHECK(drains[0]["name"].text() == "process#0");
  CHECK(drains[0]["tid"].as_u64() == 1);  // worker 0
  CHECK(drains[0]["args"]["finished"].boolean());
  CHECK(!drains[0]["args"]["completed"].boolean());
  CHECK(drains[1]["name"].text() == "decoder");
  CHECK(drains[1]["tid"].as_u64() == 2);  // worker 1
  CHECK(drains[1]["args"]["completed"].boolean());
  CHECK(track_name(doc, 3, 0) == "not a worker");
  CHECK(track_name(doc, 3, 2) == "worker 1");
  const auto instants = events_with(doc, "i", 3);
  REQUIRE(instants.size() == 2);
  CHECK(instants[0]["name"].text() == "wake process#0");
  CHECK(instants[1]["args"]["code"].text() == "cancelled");
}

TEST_CASE("trace: a drain still running when the trace is written is a closed, unfinished slice",
          "[trace][process]") {
  // The demo's race: a worker starts its last drain while the main thread
  // dumps the sink. The JSON must still close every span.
  causal::recording_sink sink;
  int p = 0, q = 0;
  causal::report_drain_begin(&sink, &p, 0);
  causal::report_drain_end(&sink, &p, 0, false, true, true);
  causal::report_drain_begin(&sink, &q, 1);  // never ends
  causal::report_drain_begin(&sink, &p, 0);  // nor does this one
  const std::string text = json_of(sink);
  CHECK(text.find("\"ph\":\"B\"") == std::string::npos);
  CHECK(text.find("\"ph\":\"E\"") == std::string::npos);
  const json_view doc = parse_json_doc(text);
  const auto drains = events_with(doc, "X", 3);
  REQUIRE(drains.size() == 3);
  int unfinished = 0;
  for (const auto& d : drains) {
    if (!d["args"]["finished"].boolean()) {
      ++unfinished;
      CHECK(d["dur"].number() == 0.0);
    }
  }
  CHECK(unfinished == 2);
}

TEST_CASE("trace: the recording sink keeps at most max_events", "[trace][sink]") {
  causal::recording_sink sink(3);
  semaphore s;
  s.set_trace_sink(&sink);
  for (std::uint64_t v = 1; v <= 5; ++v) REQUIRE(s.signal(v).ok());
  CHECK(sink.size() == 3);
  CHECK(sink.dropped() == 2);
  CHECK(sink.events().back().value == 3);
  sink.clear();
  CHECK(sink.size() == 0);
  REQUIRE(s.signal(6).ok());
  CHECK(sink.size() == 1);
}

TEST_CASE("trace: one sink shared by signalling threads records every value in order",
          "[trace][sink][concurrent]") {
  constexpr int threads = 4;
  constexpr std::uint64_t per_thread = 300;
  causal::recording_sink sink;
  std::vector<semaphore> sems(threads);
  for (semaphore& s : sems) s.set_trace_sink(&sink);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (std::uint64_t v = 1; v <= per_thread; ++v) (void)sems[static_cast<std::size_t>(t)].signal(v);
    });
  }
  for (std::thread& th : pool) th.join();
  const auto ev = sink.events();
  REQUIRE(ev.size() == threads * per_thread);
  std::map<const void*, std::uint64_t> last;
  for (const trace_record& r : ev) {
    REQUIRE(r.value == last[r.object] + 1);  // each semaphore's values arrive in order
    last[r.object] = r.value;
  }
  CHECK(last.size() == threads);
}

//===-- Chrome JSON ------------------------------------------------------------===//

TEST_CASE("trace: the Chrome JSON parses back with tracks, slices, decisions and flows",
          "[trace][json]") {
  scenario s;
  s.run();
  const std::string text = json_of(s.sink);
  const json_view doc = parse_json_doc(text);
  REQUIRE(doc.is(json_view::kind::object));
  CHECK(doc["displayTimeUnit"].text() == "ns");
  REQUIRE(doc["traceEvents"].is(json_view::kind::array));

  // Every event names a phase, a pid and a tid.
  const json_view& all = doc["traceEvents"];
  for (std::size_t i = 0; i < all.size(); ++i) {
    CHECK(all[i].has("ph"));
    CHECK(all[i].has("pid"));
    CHECK(all[i].has("tid"));
  }

  // One track per queue axis, named by the axis (and the given name).
  CHECK(track_name(doc, 1, 1) == "m0.queue.1 (alpha)");
  CHECK(track_name(doc, 1, 2) == "m0.queue.2 (beta)");
  CHECK(track_name(doc, 2, 1) == "h");
  CHECK(track_name(doc, 2, 2) == "s1");
  CHECK(track_name(doc, 2, 3) == "s2");

  // Operations as complete slices, FIFO on each track.
  const auto slices = events_with(doc, "X", 1);
  REQUIRE(slices.size() == 4);
  std::map<std::pair<std::uint64_t, std::uint64_t>, json_view> op;  // (tid, epoch)
  for (const auto& x : slices) {
    CHECK(x["cat"].text() == "operation");
    CHECK(x["args"]["retired"].boolean());
    CHECK(x["dur"].number() >= 0);
    op.insert_or_assign({x["tid"].as_u64(), x["args"]["epoch"].as_u64()}, x);
  }
  const auto end_of = [](const json_view& x) { return x["ts"].number() + x["dur"].number(); };
  for (std::uint64_t tid : {1u, 2u}) {
    CHECK(end_of(op.at({tid, 1})) <= op.at({tid, 2})["ts"].number() + 1e-9);
  }
  // An operation starts after what it waited for: B:1 after A:2, B:2 after A:1.
  CHECK(end_of(op.at({1, 2})) <= op.at({2, 1})["ts"].number() + 1e-9);
  CHECK(end_of(op.at({1, 1})) <= op.at({2, 2})["ts"].number() + 1e-9);
  const auto& a1 = op.at({1, 1});
  CHECK(a1["name"].text() == "op 10");
  CHECK(a1["args"]["axis"].text() == "m0.queue.1");
  CHECK(a1["args"]["tag"].as_u64() == 10);
  CHECK(a1["args"]["knowledge"].text() == "{m0.queue.1:1}");
  CHECK(a1["args"]["signals"][0]["semaphore"].text() == "s1");
  CHECK(a1["args"]["signals"][0]["value"].as_u64() == 1);
  const auto& w0 = a1["args"]["waits"][0];
  CHECK(w0["semaphore"].text() == "h");
  CHECK(w0["tier"].text() == "reached");
  CHECK(w0["elided"].boolean());
  CHECK(w0["producer"].is(json_view::kind::null));

  const auto& a2w = op.at({1, 2})["args"]["waits"][0];
  CHECK(a2w["tier"].text() == "same_queue");
  CHECK(a2w["producer"].text() == "m0.queue.1:1");

  const auto& b1 = op.at({2, 1});
  CHECK(b1["args"]["knowledge"].text() == "{m0.queue.1:2, m0.queue.2:1}");
  const auto& b1w = b1["args"]["waits"][0];
  CHECK(b1w["tier"].text() == "device");
  CHECK_FALSE(b1w["elided"].boolean());
  CHECK(b1w["producer"].text() == "m0.queue.1:2");
  CHECK(b1w["frontier"].text() == "{m0.queue.1:2}");
  CHECK(b1w["imported"].boolean());
  CHECK(op.at({2, 2})["args"]["waits"][0]["tier"].text() == "dominated");
  CHECK(op.at({2, 2})["args"]["signals"].size() == 0);

  // Waits with a traced producer become flows: A:2 <- A:1, B:1 <- A:2,
  // B:2 <- A:1 (A:1's wait has no producer operation).
  const auto starts = events_with(doc, "s", 1);
  const auto finishes = events_with(doc, "f", 1);
  REQUIRE(starts.size() == 3);
  REQUIRE(finishes.size() == 3);
  std::set<std::uint64_t> ids;
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(starts[i]["id"].as_u64() == finishes[i]["id"].as_u64());
    CHECK(finishes[i]["bp"].text() == "e");
    ids.insert(starts[i]["id"].as_u64());
  }
  CHECK(ids.size() == 3);
  CHECK(starts[1]["tid"].as_u64() == 1);    // B:1's producer is on A's track
  CHECK(finishes[1]["tid"].as_u64() == 2);  // ... and B:1 on B's
  CHECK(starts[1]["name"].text() == "s1 >= 2");

  // Semaphore values as instants with frontier and producer.
  const auto values = events_with(doc, "i", 2);
  REQUIRE(values.size() == 4);
  CHECK(values[0]["name"].text() == "h = 1");
  CHECK(values[0]["args"]["producer"].is(json_view::kind::null));
  CHECK(values[3]["name"].text() == "s2 = 1");
  CHECK(values[3]["args"]["frontier"].text() == "{m0.queue.1:2, m0.queue.2:1}");
  CHECK(values[3]["args"]["producer"].text() == "m0.queue.2:1");
  CHECK_FALSE(values[3]["args"]["external"].boolean());

  // Times are relative to the first event, and integral microseconds
  // carry three decimals.
  CHECK(values[0]["ts"].text() == "0.000");
}

TEST_CASE("trace: deferrals and unretired operations in the JSON", "[trace][json][deferral]") {
  causal::recording_sink sink;
  semaphore s3;
  deferring_queue qc{C};
  qc.set_trace_sink(&sink);
  s3.set_trace_sink(&sink);
  REQUIRE(qc.submit({wait{&s3, 1}}, {}, 30).ok());
  REQUIRE(s3.signal(1).ok());
  REQUIRE(qc.pump().value() == 1);  // executed, never retired
  const json_view doc = parse_json_doc(json_of(sink));
  const auto instants = events_with(doc, "i", 1);
  REQUIRE(instants.size() == 1);
  CHECK(instants[0]["name"].text() == "host deferral");
  CHECK(instants[0]["args"]["wait"]["semaphore"].text() == "semaphore#0");
  CHECK(instants[0]["args"]["wait"]["value"].as_u64() == 1);
  const auto slices = events_with(doc, "X", 1);
  REQUIRE(slices.size() == 1);
  CHECK_FALSE(slices[0]["args"]["retired"].boolean());
  CHECK(slices[0]["args"]["pumped"].boolean());
  CHECK(slices[0]["dur"].text() == "0.000");
}

TEST_CASE("trace: hostile names are escaped into valid JSON and DOT", "[trace][json][dot][escape]") {
  causal::recording_sink sink;
  semaphore s;
  labelled_queue q{A};
  q.set_trace_sink(&sink);
  s.set_trace_sink(&sink);
  const std::string hostile = std::string("q\"u\\o\nte\t\x01 caf\xc3\xa9 bad\xff end");
  sink.name(&s, hostile);
  sink.name(A, "a}\"]");
  REQUIRE(q.submit({}, {signal{&s, 1}}, 1).ok());  // label: tokenize "batch"
  REQUIRE(q.submit({wait{&s, 1}}, {}, 2).ok());    // label: encode\decode<newline>step

  const json_view doc = parse_json_doc(json_of(sink));
  const std::string expected_name = "q\"u\\o\nte\t\x01 caf\xc3\xa9 bad\xef\xbf\xbd end";
  CHECK(track_name(doc, 1, 1) == "m0.queue.1 (a}\"])");
  const auto slices = events_with(doc, "X", 1);
  REQUIRE(slices.size() == 2);
  CHECK(slices[0]["name"].text() == "tokenize \"batch\"");
  CHECK(slices[1]["name"].text() == "encode\\decode\nstep");
  CHECK(slices[0]["args"]["signals"][0]["semaphore"].text() == expected_name);
  CHECK(slices[1]["args"]["waits"][0]["semaphore"].text() == expected_name);

  const std::string dot = dot_of(sink);
  CHECK(dot.find("label=\"m0.queue.1:1\\ntokenize \\\"batch\\\"\"") != std::string::npos);
  CHECK(dot.find("label=\"m0.queue.1:2\\nencode\\\\decode\\nstep\"") != std::string::npos);
  CHECK(dot.find("q\\\"u\\\\o\\nte   caf\xc3\xa9 bad\xef\xbf\xbd end >= 1\\nsame_queue") !=
        std::string::npos);
  CHECK(dot.find('\xff') == std::string::npos);
  CHECK(dot.find('\x01') == std::string::npos);
}

TEST_CASE("trace: the strict JSON parser rejects what is not JSON", "[trace][json][parser]") {
  for (const char* bad : {"", "{", "[1,]", "{\"a\":1,}", "{'a':1}", "01", "1.", "-", "+1",
                          "\"\x01\"", "\"\\x\"", "\"\\ud800\"", "\"\xff\"", "[1] 2", "nul",
                          "{\"a\":1,\"a\":2}", "[1 2]", "{\"a\" 1}", "\"abc"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_json_doc(bad), std::runtime_error);
  }
  const json_view v =
      parse_json_doc(" {\"a\":[1,-2.5e3,true,false,null],\"b\":\"\\u00e9\\ud83d\\ude00\\n\"} ");
  CHECK(v["a"][0].as_u64() == 1);
  CHECK(v["a"][1].number() == -2500.0);
  CHECK(v["a"][2].boolean());
  CHECK(v["a"][4].is(json_view::kind::null));
  CHECK(v["b"].text() == "\xc3\xa9\xf0\x9f\x98\x80\n");
}

TEST_CASE("trace: writers of an empty trace produce valid output", "[trace][json][dot]") {
  causal::recording_sink sink;
  const json_view doc = parse_json_doc(json_of(sink));
  CHECK(doc["traceEvents"].size() == 0);
  CHECK(dot_of(sink) ==
        "digraph causal {\n"
        "  graph [rankdir=LR, fontname=\"Helvetica\"];\n"
        "  node [shape=box, fontname=\"Helvetica\"];\n"
        "  edge [fontname=\"Helvetica\", fontsize=10];\n"
        "}\n");
}

TEST_CASE("trace: writers report a failed stream", "[trace][json][dot]") {
  scenario s;
  s.run();
  std::ostringstream os;
  os.setstate(std::ios::badbit);
  const causal::status json = causal::write_chrome_trace(os, s.sink);
  REQUIRE_FALSE(json.ok());
  CHECK(json.code() == errc::resource_exhausted);
  CHECK_FALSE(causal::write_dot(os, s.sink).ok());
}

//===-- DOT --------------------------------------------------------------------===//

TEST_CASE("trace: the DOT names operations and draws waits by tier", "[trace][dot]") {
  scenario s;
  s.run();
  const std::string dot = dot_of(s.sink);
  const auto has = [&](const std::string& line) {
    INFO(line);
    CHECK(dot.find(line) != std::string::npos);
  };
  CHECK(dot.rfind("digraph causal {\n", 0) == 0);
  CHECK(dot.substr(dot.size() - 2) == "}\n");
  has("  subgraph cluster_q1 {\n    label=\"m0.queue.1 (alpha)\";\n");
  has("  subgraph cluster_q2 {\n    label=\"m0.queue.2 (beta)\";\n");
  has("    q1_e1 [label=\"m0.queue.1:1\\nop 10\"];\n");
  has("    q2_e2 [label=\"m0.queue.2:2\\nop 21\"];\n");
  // FIFO order on each queue.
  has("  q1_e1 -> q1_e2 [color=gray70, arrowhead=none, weight=4];\n");
  has("  q2_e1 -> q2_e2 [color=gray70, arrowhead=none, weight=4];\n");
  // A host value (no producer) is an ellipse; the elided waits are dashed.
  has("  s0_v1 [shape=ellipse, label=\"h >= 1\"];\n");
  has("  s0_v1 -> q1_e1 [style=dashed, label=\"h >= 1\\nreached\"];\n");
  has("  q1_e1 -> q1_e2 [style=dashed, label=\"s1 >= 1\\nsame_queue\"];\n");
  has("  q1_e2 -> q2_e1 [label=\"s1 >= 2\\ndevice\"];\n");
  has("  q1_e1 -> q2_e2 [style=dashed, label=\"s1 >= 1\\ndominated\"];\n");
  // Exactly four wait edges (labelled) and two FIFO edges.
  std::size_t labelled_edges = 0, fifo_edges = 0;
  std::istringstream lines(dot);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(" -> ") == std::string::npos) continue;
    if (line.find("label=") != std::string::npos) ++labelled_edges;
    if (line.find("gray70") != std::string::npos) ++fifo_edges;
  }
  CHECK(labelled_edges == 4);
  CHECK(fifo_edges == 2);
  // Braces balance (quoted text contains none here).
  CHECK(std::count(dot.begin(), dot.end(), '{') == std::count(dot.begin(), dot.end(), '}'));
}

TEST_CASE("trace: a producer outside the trace gets a placeholder node", "[trace][dot]") {
  causal::recording_sink sink;
  semaphore s;
  queue qa{A}, qb{B};
  qb.set_trace_sink(&sink);  // only B is traced
  sink.name(&s, "s");
  REQUIRE(qa.submit({}, {signal{&s, 1}}, 1).ok());
  REQUIRE(qb.submit({wait{&s, 1}}, {}, 2).ok());
  const std::string dot = dot_of(sink);
  CHECK(dot.find(" [style=dotted, label=\"m0.queue.1:1\\n(not traced)\"];\n") != std::string::npos);
  const std::string id = "x" + std::to_string(A.raw()) + "_e1";
  CHECK(dot.find("  " + id + " -> q1_e1 [label=\"s >= 1\\ndevice\"];\n") != std::string::npos);
}

TEST_CASE("trace: slices follow retires even when they arrive out of epoch order",
          "[trace][json]") {
  // Hand-made records (the span overload): A:1 and A:2 submitted at 100 and
  // 110 ns; the retire of 2 (at 150) is recorded before that of 1 (at 140).
  std::vector<trace_record> records(4);
  records[0].kind = trace_kind::queue_submit;
  records[0].time_ns = 100;
  records[0].queue = A;
  records[0].epoch = 1;
  records[1] = records[0];
  records[1].time_ns = 110;
  records[1].epoch = 2;
  records[2].kind = trace_kind::queue_retire;
  records[2].time_ns = 150;
  records[2].queue = A;
  records[2].epoch = 2;
  records[3] = records[2];
  records[3].time_ns = 140;
  records[3].epoch = 1;
  std::ostringstream os;
  REQUIRE(causal::write_chrome_trace(os, std::span<const trace_record>(records)).ok());
  const json_view doc = parse_json_doc(os.str());
  const auto slices = events_with(doc, "X", 1);
  REQUIRE(slices.size() == 2);
  CHECK(slices[0]["ts"].text() == "0.000");   // 100 ns
  CHECK(slices[0]["dur"].text() == "0.040");  // to 140 ns
  CHECK(slices[1]["ts"].text() == "0.040");   // after A:1, not at its submit (110)
  CHECK(slices[1]["dur"].text() == "0.010");  // to 150 ns
}
