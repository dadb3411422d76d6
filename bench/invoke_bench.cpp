// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// invoke_bench: what an invocation costs end to end -- submit, fn runs on a
// worker once its fence is reached, the signal fence is observed by the
// host -- on the pipelined DAG of examples/04_pipelined_dag.cpp, next to a
// std::async/future chain and a oneTBB flow graph (when libtbb-dev is
// installed); and the round trip of a stream-ordered alloca/dealloca.
//
// Why it matters. async_invoke is the user-facing way to schedule work
// (docs/invocations.md): its overhead bounds how small an invocation can be
// before scheduling dominates. The path measured: one allocation at
// submit, timepoint registration, the last signal's timepoint wakes the
// process, a worker drains it, the completion signals the fence, the
// host's park word is bumped. The alloca/dealloca round trip is the same
// path twice plus the pool's lock and its block-pool acquire/release.
//
// What runs. Names are `<case>/<impl>`, 2 workers, real time:
//
//   dag/<impl>           the pipelined DAG (fn0..fn4 over fences a, b, c; fn3
//                        waits on nothing; empty bodies) submitted up front,
//                        a signalled, c waited for by the host; us per DAG
//     causal               async_invoke on per-producer timelines (each run
//                          uses the next value, nothing is rebuilt); the
//                          host parks on fence c
//     causal_help          the same with 1 worker while the host helps
//                          (executor::run_until), as oneTBB's waiter does
//     std_async            std::async(launch::async) per fn, shared_futures
//                          as fences (a thread per call: what std offers)
//     tbb_flow             a continue_node graph built once, try_put +
//                          wait_for_all per run (max_allowed_parallelism 2)
//   single/<impl>        one invocation with no wait fence, host waits for
//                        its signal: submit-to-observed latency
//     causal / std_async
//   alloca/<case>        stream_alloca then stream_dealloca ordered after
//                        it, host waits for the dealloca's signal
//     roundtrip            one pair at a time: latency
//     batch64              64 independent pairs submitted, then one wait:
//                          ns per pair (throughput)
//
// Honesty. Every fn writes its slot and the run checks that each ran once
// in fence order (SkipWithError otherwise; -DCAUSAL_BENCH_NO_CHECK turns
// the checks off); the pool's committed bytes must return to 0.
//
// What to look for. causal's DAG should cost a few microseconds (five
// allocations, five wakes, a host park/unpark) against std::async's five
// thread creations; the TBB graph is reused (no allocation per run), so it
// is a lower bound for graph schedulers rather than a like-for-like one.
//
// Run: invoke_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// Build by hand: c++ -std=c++20 -O2 -DNDEBUG -I include bench/invoke_bench.cpp
//        -lbenchmark -pthread [-DCAUSAL_BENCH_HAS_TBB=1 -ltbb]
#include <causal/executor.hpp>
#include <causal/fence.hpp>
#include <causal/invoke.hpp>
#include <causal/stream_pool.hpp>

#include <benchmark/benchmark.h>

#if defined(CAUSAL_BENCH_HAS_TBB) && CAUSAL_BENCH_HAS_TBB
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#endif

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <future>
#include <vector>

namespace {

constexpr std::uint32_t workers = 2;

#ifdef CAUSAL_BENCH_NO_CHECK
constexpr bool check = false;
#else
constexpr bool check = true;
#endif

/// What the fns of one DAG run record: their order.
struct dag_record {
  std::atomic<int> next{0};
  std::array<std::atomic<int>, 5> pos{};
  void reset() {
    next.store(0, std::memory_order_relaxed);
    for (auto& p : pos) p.store(-1, std::memory_order_relaxed);
  }
  void hit(int i) { pos[static_cast<std::size_t>(i)].store(next.fetch_add(1)); }
  /// fn0 before fn1 and fn2; every fn ran once.
  [[nodiscard]] bool ok() const {
    for (const auto& p : pos) {
      if (p.load() < 0) return false;
    }
    return pos[0].load() < pos[1].load() && pos[0].load() < pos[2].load() && next.load() == 5;
  }
};

void bm_dag_causal(benchmark::State& state) {
  // Arg 1: one worker thread while the host helps (executor::run_until),
  // the way oneTBB's waiting thread joins in; Arg 0: two workers, the host
  // parks on the fence.
  const bool help = state.range(0) != 0;
  causal::executor ex{causal::executor_options{.worker_count = help ? workers - 1 : workers}};
  causal::timeline host, t0, t1, t2, t3, t4;
  dag_record rec;
  std::uint64_t v = 0;
  for (auto _ : state) {
    ++v;
    rec.reset();
    causal::fence a = host.at(v), b = t0.at(v);
    auto c = *causal::fence::of({{&t1.semaphore(), v}, {&t2.semaphore(), v},
                                 {&t3.semaphore(), v}, {&t4.semaphore(), v}});
    causal::async_invoke(ex, [&] { rec.hit(0); }, a, b);
    causal::async_invoke(ex, [&] { rec.hit(1); }, b, t1.at(v));
    causal::async_invoke(ex, [&] { rec.hit(2); }, b, t2.at(v));
    causal::async_invoke(ex, [&] { rec.hit(3); }, causal::fence{}, t3.at(v));
    causal::async_invoke(ex, [&] { rec.hit(4); }, a, t4.at(v));
    (void)a.signal();
    if (help) ex.run_until([&] { return c.reached() || c.failure().has_value(); });
    if (!c.wait().ok() || (check && !rec.ok())) {
      state.SkipWithError("causal DAG ran out of order or failed");
      break;
    }
  }
  state.counters["per_dag"] = benchmark::Counter(
      static_cast<double>(state.iterations()), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void bm_dag_std_async(benchmark::State& state) {
  dag_record rec;
  for (auto _ : state) {
    rec.reset();
    std::promise<void> a_promise;
    std::shared_future<void> a = a_promise.get_future().share();
    std::shared_future<void> b =
        std::async(std::launch::async, [&, a] { a.wait(); rec.hit(0); }).share();
    auto f1 = std::async(std::launch::async, [&, b] { b.wait(); rec.hit(1); });
    auto f2 = std::async(std::launch::async, [&, b] { b.wait(); rec.hit(2); });
    auto f3 = std::async(std::launch::async, [&] { rec.hit(3); });
    auto f4 = std::async(std::launch::async, [&, a] { a.wait(); rec.hit(4); });
    a_promise.set_value();
    f1.wait();
    f2.wait();
    f3.wait();
    f4.wait();
    if (check && !rec.ok()) {
      state.SkipWithError("std::async DAG ran out of order");
      break;
    }
  }
}

#if defined(CAUSAL_BENCH_HAS_TBB) && CAUSAL_BENCH_HAS_TBB
void bm_dag_tbb_flow(benchmark::State& state) {
  tbb::global_control gc(tbb::global_control::max_allowed_parallelism, workers);
  using msg = tbb::flow::continue_msg;
  using node = tbb::flow::continue_node<msg>;
  dag_record rec;
  tbb::flow::graph g;
  tbb::flow::broadcast_node<msg> a(g);
  node fn0(g, [&](const msg&) { rec.hit(0); });
  node fn1(g, [&](const msg&) { rec.hit(1); });
  node fn2(g, [&](const msg&) { rec.hit(2); });
  node fn3(g, [&](const msg&) { rec.hit(3); });
  node fn4(g, [&](const msg&) { rec.hit(4); });
  tbb::flow::make_edge(a, fn0);
  tbb::flow::make_edge(fn0, fn1);
  tbb::flow::make_edge(fn0, fn2);
  tbb::flow::make_edge(a, fn4);
  for (auto _ : state) {
    rec.reset();
    fn3.try_put(msg());  // waits on nothing
    a.try_put(msg());
    g.wait_for_all();
    if (check && !rec.ok()) {
      state.SkipWithError("oneTBB DAG ran out of order");
      break;
    }
  }
}
#endif

void bm_single_causal(benchmark::State& state) {
  causal::executor ex{causal::executor_options{.worker_count = workers}};
  causal::timeline t;
  std::uint64_t v = 0;
  std::atomic<std::uint64_t> runs{0};
  for (auto _ : state) {
    ++v;
    causal::async_invoke(ex, [&] { runs.fetch_add(1, std::memory_order_relaxed); }, causal::fence{},
                         t.at(v));
    if (!t.at(v).wait().ok()) {
      state.SkipWithError("invocation failed");
      break;
    }
  }
  if (check && runs.load() != v) state.SkipWithError("an invocation did not run exactly once");
}

void bm_single_std_async(benchmark::State& state) {
  std::uint64_t runs = 0;
  for (auto _ : state) {
    std::async(std::launch::async, [&] { ++runs; }).wait();
  }
  if (check && runs != static_cast<std::uint64_t>(state.iterations())) {
    state.SkipWithError("a std::async call did not run exactly once");
  }
}

void bm_alloca_roundtrip(benchmark::State& state) {
  const auto batch = static_cast<std::uint64_t>(state.range(0));
  causal::executor ex{causal::executor_options{.worker_count = workers}};
  causal::stream_pool pool{ex, std::size_t{1} << 30};
  std::vector<std::unique_ptr<causal::timeline>> lanes;
  for (std::uint64_t i = 0; i < batch; ++i) lanes.push_back(std::make_unique<causal::timeline>());
  std::uint64_t v = 0;
  for (auto _ : state) {
    v += 2;
    for (std::uint64_t i = 0; i < batch; ++i) {
      causal::timeline& t = *lanes[i];
      auto buf = causal::stream_alloca(pool, 1 << 20, causal::fence{}, t.at(v - 1));
      causal::stream_dealloca(pool, buf, t.at(v - 1), t.at(v));
    }
    bool ok = true;
    for (std::uint64_t i = 0; i < batch; ++i) ok = lanes[i]->at(v).wait().ok() && ok;
    if (!ok) {
      state.SkipWithError("an alloca or dealloca failed");
      break;
    }
  }
  if (check && pool.committed() != 0) state.SkipWithError("bytes still committed");
  state.counters["per_pair"] = benchmark::Counter(
      static_cast<double>(state.iterations() * static_cast<std::int64_t>(batch)),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["peak_MiB"] = static_cast<double>(pool.peak_committed() >> 20);
}

}  // namespace

BENCHMARK(bm_dag_causal)->Name("dag/causal")->Arg(0)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_dag_causal)->Name("dag/causal_help")->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_dag_std_async)->Name("dag/std_async")->UseRealTime()->Unit(benchmark::kMicrosecond);
#if defined(CAUSAL_BENCH_HAS_TBB) && CAUSAL_BENCH_HAS_TBB
BENCHMARK(bm_dag_tbb_flow)->Name("dag/tbb_flow")->UseRealTime()->Unit(benchmark::kMicrosecond);
#endif
BENCHMARK(bm_single_causal)->Name("single/causal")->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_single_std_async)->Name("single/std_async")->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_alloca_roundtrip)->Name("alloca/roundtrip")->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_alloca_roundtrip)->Name("alloca/batch64")->Arg(64)->UseRealTime()->Unit(benchmark::kMicrosecond);

int main(int argc, char** argv) {
  std::printf("invoke_bench: %u workers\n", workers);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
