// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// queue_bench: the host cost of submitting to a causal queue — with a wait
// the queue elides (tier 0: value reached; tier 1: same queue, or producer
// covered by knowledge), with a wait it must issue to the device (tier 2),
// and with none — next to the two models causal replaces, in one binary:
// a binary-event runtime and a plain timeline without frontiers.
//
// Why it matters. Every operation of every queue goes through submit();
// elision is only worth having if deciding it costs less on the host than
// the device wait it saves costs on the device (microseconds on a GPU).
// Goal from the issue: a submit with one elided wait <= 50 ns. docs/queues.md.
//
// What runs. Benchmarks are named `<op>/<impl>`; all impls drive the same
// null device, which appends each command (wait, execute, signal, event
// record) to a 64-entry ring and counts it, so the figures are the
// runtime's own bookkeeping plus one small store per command, not a
// driver's.
//
//   submit_no_wait/<impl>          one submit, no waits, no signals (the floor)
//   submit_one_wait/causal_reached    tier 0: S already reached v (host-
//                                     signalled once, untainted): imports its
//                                     frontier, no device wait
//   submit_one_wait/causal_same_queue tier 1: this queue submitted the signal
//   submit_one_wait/causal_dominated  tier 1: another queue's submitted,
//                                     unreached signal whose producer entry
//                                     the knowledge covers
//   submit_one_wait/causal_device     tier 2: the value has no submitted
//                                     signal; the device wait is issued
//   submit_one_wait/timeline          plain timeline: checks the handle and
//                                     always issues the wait (no frontiers, so
//                                     it cannot know the wait is implied)
//   submit_one_wait/binary_event      binary events: looks up the event of the
//                                     (producer, consumer) pair and always
//                                     issues the wait
//   transitive/<impl>              the three-queue transitivity DAG, whole: A
//                                  signals S1; B waits S1, signals S2; C waits
//                                  S1 and S2; then the device completes all
//                                  three. causal issues 2 device waits (C's S1
//                                  wait is implied by S2's frontier), the
//                                  baselines 3; the binary-event runtime also
//                                  creates 3 events (one per producer/consumer
//                                  pair), each a std::atomic<bool> in a
//                                  std::vector, as such runtimes track them.
//
// Counters: `device_waits` and `events` per iteration, from the null device,
// checked after each timed loop against what the model must do (a mismatch
// fails the benchmark with SkipWithError; CAUSAL_BENCH_NO_CHECK=1 skips the
// checks). Inputs (tags, values) derive from a volatile seed and the loop
// counter; each submit's result goes through benchmark::DoNotOptimize and
// every iteration ends with benchmark::ClobberMemory, so no impl's stores
// are merged across iterations.
// Time per op is amortised over Google Benchmark's batches (one clock read
// per batch), so the ~18.5 ns clock read of these VMs is not in the figures.
//
// What to look for. The causal tier 0/1 rows against submit_one_wait/
// timeline and binary_event: the host pays a few tens of ns for a decision
// (a semaphore lock and one frontier record copy) that saves a device wait;
// the baselines are cheaper on the host and pay on the device instead.
// transitive/*: causal's whole-DAG cost with one wait fewer per iteration.
//
// Run (release build, from the repository root):
//   meson setup build-bench -Dbenchmarks=enabled --buildtype=release
//   meson compile -C build-bench
//   build-bench/bench/queue_bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
// or without meson, one line:
//   g++ -std=c++20 -O2 -DNDEBUG -Iinclude bench/queue_bench.cpp -lbenchmark -lpthread
// See also: bench/README.md, bench/RESULTS.md, <causal/queue.hpp>.

#include <causal/axis.hpp>
#include <causal/frontier.hpp>
#include <causal/queue.hpp>
#include <causal/semaphore.hpp>

#include <benchmark/benchmark.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace {

volatile std::uint64_t tag_seed = 7;  // inputs the compiler cannot fold

bool checks_enabled() {
  const char* v = std::getenv("CAUSAL_BENCH_NO_CHECK");
  return v == nullptr || *v == '\0' || *v == '0';
}

/// The device every impl drives: it writes each command into a small ring
/// (as a driver appends to a command buffer) and counts it.
struct null_device {
  enum kind : std::uint32_t { wait, execute, signal, record };
  struct command {
    const void* object = nullptr;
    std::uint64_t value = 0;
    std::uint32_t kind = 0;
  };
  std::array<command, 64> ring{};
  std::size_t next = 0;
  std::uint64_t waits = 0;
  std::uint64_t executes = 0;
  std::uint64_t signals = 0;
  std::uint64_t events = 0;  // binary events recorded

  void push(std::uint32_t k, const void* object, std::uint64_t value) noexcept {
    ring[next++ % ring.size()] = command{object, value, k};
    switch (k) {
      case wait:
        ++waits;
        break;
      case execute:
        ++executes;
        break;
      case signal:
        ++signals;
        break;
      default:
        ++events;
        break;
    }
  }
};

//===-- causal over the null device -------------------------------------------===//

struct null_backend {
  using semaphore_type = causal::semaphore;
  using operation_type = std::uint64_t;
  static constexpr bool waits_before_signal = true;
  null_device device;

  causal::status issue_wait(semaphore_type& s, std::uint64_t v) noexcept {
    device.push(null_device::wait, &s, v);
    return {};
  }
  causal::status execute(const operation_type& op, std::uint64_t epoch) noexcept {
    device.push(null_device::execute, &op, op ^ epoch);
    return {};
  }
  causal::status issue_signal(semaphore_type& s, std::uint64_t v) noexcept {
    device.push(null_device::signal, &s, v);
    return {};
  }
};
static_assert(causal::queue_backend<null_backend>);

using causal_queue = causal::basic_queue<causal::frontier, null_backend>;
using causal_wait = causal_queue::wait_type;
using causal_signal = causal_queue::signal_type;

causal::axis queue_axis(std::uint64_t n) {
  return causal::make_axis(0, 0, causal::domain::queue, n).value();
}

//===-- baseline: a plain timeline without frontiers ---------------------------===//

/// A timeline semaphore as runtimes without frontiers keep it: a payload.
struct timeline_semaphore {
  std::atomic<std::uint64_t> payload{0};
  std::atomic<bool> failed{false};
};
struct timeline_point {
  timeline_semaphore* semaphore = nullptr;
  std::uint64_t value = 0;
};

/// Submits like a Vulkan/CUDA timeline runtime: validates the handles and
/// signal values, issues every wait (it has no way to know one is implied),
/// executes, issues the signals.
class timeline_queue {
 public:
  bool submit(std::span<const timeline_point> waits, std::span<const timeline_point> signals,
              const std::uint64_t& op) noexcept {
    for (const timeline_point& w : waits) {
      if (w.semaphore == nullptr || w.semaphore->failed.load(std::memory_order_acquire))
        return false;
    }
    for (const timeline_point& s : signals) {
      if (s.semaphore == nullptr ||
          s.value <= s.semaphore->payload.load(std::memory_order_acquire)) {
        return false;
      }
    }
    for (const timeline_point& w : waits) device.push(null_device::wait, w.semaphore, w.value);
    ++epoch_;
    device.push(null_device::execute, &op, op ^ epoch_);
    for (const timeline_point& s : signals) device.push(null_device::signal, s.semaphore, s.value);
    return true;
  }
  /// The device reaching a signal.
  static void complete(timeline_semaphore& s, std::uint64_t v) noexcept {
    s.payload.store(v, std::memory_order_release);
  }
  null_device device;

 private:
  std::uint64_t epoch_ = 0;
};

//===-- baseline: a binary-event runtime ----------------------------------------===//

/// One recorded event: a flag the device sets when the producer completes.
struct binary_event {
  std::atomic<bool> signalled{false};
  binary_event() = default;
  // std::vector needs to move events when it grows; a recorded event's
  // state moves with it.
  binary_event(const binary_event& other) noexcept
      : signalled(other.signalled.load(std::memory_order_relaxed)) {}
};

/// Tracks one event per (producer, consumer) pair, as runtimes built on
/// binary events (CUDA events, Vulkan binary semaphores) do: a producer's
/// signal records a fresh event for every consumer that will wait on it,
/// stored in a std::vector; a consumer always waits on the latest event of
/// its pair; completion sets the flags. Events are recycled in bulk when
/// every one of them has completed (the vector keeps its capacity).
class binary_event_runtime {
 public:
  static constexpr std::size_t max_queues = 8;
  static constexpr std::size_t recycle_at = 4096;

  binary_event_runtime() { events_.reserve(recycle_at + 2 * max_queues); }

  /// Producer `p` signals for consumer `c`: creates and records an event.
  std::size_t record(std::size_t p, std::size_t c) noexcept {
    events_.emplace_back();
    const std::size_t index = events_.size() - 1;
    latest_[p * max_queues + c] = index;
    device.push(null_device::record, &events_[index], p);
    return index;
  }
  /// Consumer `c` submits with a wait on producer `p`'s latest event.
  bool submit_waiting(std::span<const std::size_t> producers, std::size_t c,
                      const std::uint64_t& op) noexcept {
    for (const std::size_t p : producers) {
      const std::size_t index = latest_[p * max_queues + c];
      if (index == none || index >= events_.size()) return false;
      device.push(null_device::wait, &events_[index], 0);  // always issued
    }
    ++epoch_;
    device.push(null_device::execute, &op, op ^ epoch_);
    return true;
  }
  /// The device completing event `index`.
  void complete(std::size_t index) noexcept {
    events_[index].signalled.store(true, std::memory_order_release);
    ++completed_;
    if (completed_ == events_.size() && completed_ >= recycle_at) {
      events_.clear();
      completed_ = 0;
      latest_.fill(none);
    }
  }
  null_device device;

 private:
  static constexpr std::size_t none = ~std::size_t{0};
  std::vector<binary_event> events_;
  std::array<std::size_t, max_queues* max_queues> latest_ = make_none();
  std::size_t completed_ = 0;
  std::uint64_t epoch_ = 0;

  static std::array<std::size_t, max_queues * max_queues> make_none() {
    std::array<std::size_t, max_queues * max_queues> a{};
    a.fill(none);
    return a;
  }
};

//===-- checks ----------------------------------------------------------------------===//

bool check(benchmark::State& state, bool ok, const char* what) {
  if (!ok && checks_enabled()) {
    state.SkipWithError(what);
    return false;
  }
  return true;
}

std::uint64_t iterations(const benchmark::State& state) {
  return static_cast<std::uint64_t>(state.iterations());
}

void set_counters(benchmark::State& state, const null_device& d) {
  state.counters["device_waits"] =
      benchmark::Counter(static_cast<double>(d.waits), benchmark::Counter::kAvgIterations);
  state.counters["events"] =
      benchmark::Counter(static_cast<double>(d.events), benchmark::Counter::kAvgIterations);
}

//===-- submit_no_wait ----------------------------------------------------------------===//

void submit_no_wait_causal(benchmark::State& state) {
  auto q = std::make_unique<causal_queue>(queue_axis(1));
  const std::span<const causal_wait> no_waits;
  const std::span<const causal_signal> no_signals;
  std::uint64_t tag = tag_seed;
  bool ok = true;
  for (auto _ : state) {
    auto r = q->submit(no_waits, no_signals, ++tag);
    ok = ok && r.ok();
    benchmark::DoNotOptimize(r);
    benchmark::ClobberMemory();
  }
  check(state, ok && q->backend().device.executes == iterations(state),
        "submit_no_wait/causal: wrong count");
  set_counters(state, q->backend().device);
}

void submit_no_wait_timeline(benchmark::State& state) {
  timeline_queue q;
  std::uint64_t tag = tag_seed;
  bool ok = true;
  for (auto _ : state) {
    bool r = q.submit({}, {}, ++tag);
    ok = ok && r;
    benchmark::DoNotOptimize(r);
    benchmark::ClobberMemory();
  }
  check(state, ok && q.device.executes == iterations(state),
        "submit_no_wait/timeline: wrong count");
  set_counters(state, q.device);
}

void submit_no_wait_binary_event(benchmark::State& state) {
  binary_event_runtime rt;
  std::uint64_t tag = tag_seed;
  bool ok = true;
  for (auto _ : state) {
    bool r = rt.submit_waiting({}, 1, ++tag);
    ok = ok && r;
    benchmark::DoNotOptimize(r);
    benchmark::ClobberMemory();
  }
  check(state, ok && rt.device.executes == iterations(state),
        "submit_no_wait/binary_event: wrong count");
  set_counters(state, rt.device);
}

//===-- submit_one_wait: causal, per tier ----------------------------------------===//

enum class tier_case { reached, same_queue, dominated, device };

template <tier_case Case>
void submit_one_wait_causal(benchmark::State& state) {
  auto producer = std::make_unique<causal_queue>(queue_axis(1));
  auto q = std::make_unique<causal_queue>(queue_axis(2));
  auto s = std::make_unique<causal::semaphore>();
  const std::span<const causal_signal> no_signals;
  std::array<causal_wait, 1> wait{causal_wait{s.get(), 1}};
  switch (Case) {
    case tier_case::reached:
      // A host signal carrying a 3-entry frontier; reached, untainted.
      (void)s->signal(1,
                      causal::frontier{{queue_axis(5), 4}, {queue_axis(6), 9}, {queue_axis(7), 2}});
      break;
    case tier_case::same_queue: {
      const std::array<causal_signal, 1> sig{causal_signal{s.get(), 1}};
      (void)q->submit(std::span<const causal_wait>{}, sig, 0);
      break;
    }
    case tier_case::dominated: {
      const std::array<causal_signal, 1> sig{causal_signal{s.get(), 1}};
      (void)producer->submit(std::span<const causal_wait>{}, sig,
                             0);                       // producer A:1, never reached
      q->learn(causal::frontier{{queue_axis(1), 1}});  // e.g. from a host wait
      break;
    }
    case tier_case::device:
      wait[0].value = 1;  // nothing will ever be submitted: wait-before-signal
      break;
  }
  const std::uint64_t waits_before = q->backend().device.waits;
  std::uint64_t tag = tag_seed;
  bool ok = true;
  for (auto _ : state) {
    auto r = q->submit(wait, no_signals, ++tag);
    ok = ok && r.ok();
    benchmark::DoNotOptimize(r);
    benchmark::ClobberMemory();
  }
  const causal::queue_stats& st = q->stats();
  const std::uint64_t n = iterations(state);
  const std::uint64_t expected_waits = Case == tier_case::device ? n : 0;
  bool tier_ok = false;
  switch (Case) {
    case tier_case::reached:
      tier_ok = st.elided_reached == n;
      break;
    case tier_case::same_queue:
      tier_ok = st.elided_same_queue == n;
      break;
    case tier_case::dominated:
      tier_ok = st.elided_dominated == n;
      break;
    case tier_case::device:
      tier_ok = st.device_waits == n;
      break;
  }
  check(state, ok && tier_ok && q->backend().device.waits - waits_before == expected_waits,
        "submit_one_wait/causal: the wait did not take the expected tier");
  null_device d = q->backend().device;
  d.waits -= waits_before;
  set_counters(state, d);
}

void submit_one_wait_timeline(benchmark::State& state) {
  timeline_queue q;
  timeline_semaphore s;
  timeline_queue::complete(s, 1);
  const std::array<timeline_point, 1> wait{timeline_point{&s, 1}};
  std::uint64_t tag = tag_seed;
  bool ok = true;
  for (auto _ : state) {
    bool r = q.submit(wait, {}, ++tag);
    ok = ok && r;
    benchmark::DoNotOptimize(r);
    benchmark::ClobberMemory();
  }
  check(state, ok && q.device.waits == iterations(state),
        "submit_one_wait/timeline: wrong wait count");
  set_counters(state, q.device);
}

void submit_one_wait_binary_event(benchmark::State& state) {
  binary_event_runtime rt;
  const std::size_t ev = rt.record(0, 1);
  rt.complete(ev);
  rt.device = null_device{};
  const std::array<std::size_t, 1> producers{0};
  std::uint64_t tag = tag_seed;
  bool ok = true;
  for (auto _ : state) {
    bool r = rt.submit_waiting(producers, 1, ++tag);
    ok = ok && r;
    benchmark::DoNotOptimize(r);
    benchmark::ClobberMemory();
  }
  check(state, ok && rt.device.waits == iterations(state),
        "submit_one_wait/binary_event: wrong wait count");
  set_counters(state, rt.device);
}

//===-- transitive: the three-queue transitivity DAG ----------------------------===//

void transitive_causal(benchmark::State& state) {
  auto a = std::make_unique<causal_queue>(queue_axis(1));
  auto b = std::make_unique<causal_queue>(queue_axis(2));
  auto c = std::make_unique<causal_queue>(queue_axis(3));
  auto s1 = std::make_unique<causal::semaphore>();
  auto s2 = std::make_unique<causal::semaphore>();
  std::array<causal_signal, 1> a_signal{causal_signal{s1.get(), 0}};
  std::array<causal_wait, 1> b_wait{causal_wait{s1.get(), 0}};
  std::array<causal_signal, 1> b_signal{causal_signal{s2.get(), 0}};
  std::array<causal_wait, 2> c_wait{causal_wait{s1.get(), 0}, causal_wait{s2.get(), 0}};
  const std::span<const causal_wait> no_waits;
  const std::span<const causal_signal> no_signals;
  std::uint64_t v = 0;
  std::uint64_t tag = tag_seed;
  bool ok = true;
  for (auto _ : state) {
    ++v;
    a_signal[0].value = b_wait[0].value = b_signal[0].value = v;
    c_wait[0].value = c_wait[1].value = v;
    auto ra = a->submit(no_waits, a_signal, ++tag);
    auto rb = b->submit(b_wait, b_signal, ++tag);
    auto rc = c->submit(c_wait, no_signals, ++tag);
    ok = ok && ra.ok() && rb.ok() && rc.ok();
    benchmark::DoNotOptimize(rc);
    benchmark::ClobberMemory();
    // The device completes A, B and C in order.
    ok = s1->device_signal(v).ok() && ok;
    a->retire(v);
    ok = s2->device_signal(v).ok() && ok;
    b->retire(v);
    c->retire(v);
  }
  const std::uint64_t n = iterations(state);
  null_device d;
  for (causal_queue* q : {a.get(), b.get(), c.get()}) {
    d.waits += q->backend().device.waits;
    d.executes += q->backend().device.executes;
  }
  check(state,
        ok && d.waits == 2 * n && c->stats().elided_dominated == n && d.executes == 3 * n &&
            s2->value() == n,
        "transitive/causal: expected 2 device waits and 1 elided per iteration");
  set_counters(state, d);
}

void transitive_timeline(benchmark::State& state) {
  timeline_queue a, b, c;
  timeline_semaphore s1, s2;
  std::array<timeline_point, 1> a_signal{timeline_point{&s1, 0}};
  std::array<timeline_point, 1> b_wait{timeline_point{&s1, 0}};
  std::array<timeline_point, 1> b_signal{timeline_point{&s2, 0}};
  std::array<timeline_point, 2> c_wait{timeline_point{&s1, 0}, timeline_point{&s2, 0}};
  std::uint64_t v = 0;
  std::uint64_t tag = tag_seed;
  bool ok = true;
  for (auto _ : state) {
    ++v;
    a_signal[0].value = b_wait[0].value = b_signal[0].value = v;
    c_wait[0].value = c_wait[1].value = v;
    bool r = a.submit({}, a_signal, ++tag);
    r = b.submit(b_wait, b_signal, ++tag) && r;
    r = c.submit(c_wait, {}, ++tag) && r;
    ok = ok && r;
    benchmark::DoNotOptimize(r);
    timeline_queue::complete(s1, v);
    timeline_queue::complete(s2, v);
  }
  const std::uint64_t n = iterations(state);
  null_device d;
  for (timeline_queue* q : {&a, &b, &c}) {
    d.waits += q->device.waits;
    d.executes += q->device.executes;
  }
  check(state, ok && d.waits == 3 * n && d.executes == 3 * n,
        "transitive/timeline: expected 3 device waits per iteration");
  set_counters(state, d);
}

void transitive_binary_event(benchmark::State& state) {
  binary_event_runtime rt;
  constexpr std::size_t A = 0, B = 1, C = 2;
  const std::array<std::size_t, 1> b_waits{A};
  const std::array<std::size_t, 2> c_waits{A, B};
  std::uint64_t tag = tag_seed;
  bool ok = true;
  for (auto _ : state) {
    // A signals: one event for each consumer (B and C).
    bool r = rt.submit_waiting({}, A, ++tag);
    const std::size_t ab = rt.record(A, B);
    const std::size_t ac = rt.record(A, C);
    // B waits on A, signals C.
    r = rt.submit_waiting(b_waits, B, ++tag) && r;
    const std::size_t bc = rt.record(B, C);
    // C waits on both: two waits, always issued.
    r = rt.submit_waiting(c_waits, C, ++tag) && r;
    ok = ok && r;
    benchmark::DoNotOptimize(r);
    rt.complete(ab);
    rt.complete(ac);
    rt.complete(bc);
  }
  const std::uint64_t n = iterations(state);
  check(state,
        ok && rt.device.waits == 3 * n && rt.device.events == 3 * n && rt.device.executes == 3 * n,
        "transitive/binary_event: expected 3 waits and 3 events per iteration");
  set_counters(state, rt.device);
}

}  // namespace

// Registered back to back per op so each impl runs next to its rivals.
BENCHMARK(submit_no_wait_causal)->Name("submit_no_wait/causal");
BENCHMARK(submit_no_wait_timeline)->Name("submit_no_wait/timeline");
BENCHMARK(submit_no_wait_binary_event)->Name("submit_no_wait/binary_event");
BENCHMARK_TEMPLATE(submit_one_wait_causal, tier_case::reached)
    ->Name("submit_one_wait/causal_reached");
BENCHMARK_TEMPLATE(submit_one_wait_causal, tier_case::same_queue)
    ->Name("submit_one_wait/causal_same_queue");
BENCHMARK_TEMPLATE(submit_one_wait_causal, tier_case::dominated)
    ->Name("submit_one_wait/causal_dominated");
BENCHMARK_TEMPLATE(submit_one_wait_causal, tier_case::device)
    ->Name("submit_one_wait/causal_device");
BENCHMARK(submit_one_wait_timeline)->Name("submit_one_wait/timeline");
BENCHMARK(submit_one_wait_binary_event)->Name("submit_one_wait/binary_event");
BENCHMARK(transitive_causal)->Name("transitive/causal");
BENCHMARK(transitive_timeline)->Name("transitive/timeline");
BENCHMARK(transitive_binary_event)->Name("transitive/binary_event");

BENCHMARK_MAIN();
