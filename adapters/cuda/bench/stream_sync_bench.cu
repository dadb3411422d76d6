// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// stream_sync_bench: what a cross-stream dependency costs on a GPU, and what
// causal's stream queues save on whole DAGs.
//
// What it measures.
//   edge/<kind>       one producer -> consumer edge between two streams, with
//                     a tiny kernel on each side, per iteration (issue +
//                     execute throughput; both streams are synchronised
//                     every 256 edges): kind = wait_value (cuStreamWrite/
//                     WaitValue64 on a pinned word), event (cudaEventRecord +
//                     cudaStreamWaitEvent), host_function (cudaLaunchHostFunc
//                     writes the word, the consumer waits on it).
//   pipeline/<kind>   end-to-end latency of a 3-stream pipeline of small
//                     kernels, 32 rounds, submitted at once then synchronised:
//                     causal stream_queue, raw per-edge events, and the same
//                     event pipeline captured once into a CUDA graph.
//   dag/<kind>        a 4-stream DAG with skip edges (node (s, L) depends on
//                     (s+1, L-1) and (s+2, L-2)): device waits issued by
//                     causal's queues (counter `device_waits`) vs one event
//                     wait per edge (`edges`), and the time to run it.
// Why it matters: the wait/signal pair is the hot path of every cross-queue
// dependency (docs/queues.md, docs/adapters.md); elision removes waits,
// the primitive sets the price of the ones left.
// How to run: meson setup -Dbenchmarks=enabled -Dcuda=enabled; then
//   meson test -C <build> --benchmark --suite cuda --verbose
// or run cuda_stream_sync_bench directly (--benchmark_format=json).
// What to look for: wait_value <= event < host_function per edge;
// pipeline/causal close to pipeline/events and above pipeline/graph (a
// graph amortises launch cost); dag device_waits well below edges.
// Without a GPU it exits 77 (skipped).

#include <causal/adapters/cuda/device.hpp>
#include <causal/adapters/cuda/semaphore.hpp>
#include <causal/adapters/cuda/stream_queue.hpp>
#include <causal/axis.hpp>

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <vector>

namespace {

__global__ void tick(int* p) {
  if (threadIdx.x == 0) *p += 1;
}

const causal::cuda::driver_table& drv() { return causal::cuda::native_driver(); }

struct gpu {
  causal::cuda::device_context dev;
  int* scratch = nullptr;
  gpu() { (void)cudaMalloc(&scratch, 64 * sizeof(int)); }
  ~gpu() { (void)cudaFree(scratch); }
};

gpu& the_gpu() {
  static gpu g;
  return g;
}

enum class edge_kind { wait_value, event, host_function };

struct host_write {
  std::uint64_t* word;
  std::uint64_t value;
};
void write_word(void* p) noexcept {
  auto* w = static_cast<host_write*>(p);
  // release: the consumer stream reads the word through the bus.
  std::atomic_ref<std::uint64_t>(*w->word).store(w->value, std::memory_order_release);
}

void bm_edge(benchmark::State& state, edge_kind kind) {
  gpu& g = the_gpu();
  if ((kind != edge_kind::event) && !g.dev.has_memory_ops()) {
    state.SkipWithError("no 64-bit stream memory operations on this device");
    return;
  }
  cudaStream_t a{}, b{};
  (void)cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking);
  (void)cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
  cudaEvent_t ev{};
  (void)cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
  auto word = g.dev.allocate_word(0);
  if (!word) {
    state.SkipWithError("no timeline word");
    return;
  }
  std::vector<host_write> writes(256);
  std::uint64_t v = 0;
  std::size_t k = 0;
  for (auto _ : state) {
    ++v;
    tick<<<1, 32, 0, a>>>(g.scratch);
    switch (kind) {
      case edge_kind::wait_value:
        (void)drv().write_value64(a, word->device, v);
        (void)drv().wait_value64(b, word->device, v);
        break;
      case edge_kind::event:
        (void)cudaEventRecord(ev, a);
        (void)cudaStreamWaitEvent(b, ev, 0);
        break;
      case edge_kind::host_function:
        writes[k] = host_write{word->host, v};
        (void)cudaLaunchHostFunc(a, &write_word, &writes[k]);
        (void)drv().wait_value64(b, word->device, v);
        break;
    }
    tick<<<1, 32, 0, b>>>(g.scratch + 1);
    if (++k == writes.size()) {
      k = 0;
      (void)cudaStreamSynchronize(a);
      (void)cudaStreamSynchronize(b);
    }
  }
  (void)cudaStreamSynchronize(a);
  (void)cudaStreamSynchronize(b);
  g.dev.free_word(*word);
  (void)cudaEventDestroy(ev);
  (void)cudaStreamDestroy(a);
  (void)cudaStreamDestroy(b);
  state.SetItemsProcessed(state.iterations());
}

int launch_tick(cudaStream_t s, void* user, std::uint64_t) noexcept {
  tick<<<1, 32, 0, s>>>(static_cast<int*>(user));
  return static_cast<int>(cudaGetLastError());
}

constexpr std::uint64_t pipeline_rounds = 32;

void bm_pipeline_causal(benchmark::State& state) {
  gpu& g = the_gpu();
  causal::axis_allocator axes;
  std::uint64_t base = 0;
  causal::cuda::semaphore s1(g.dev), s2(g.dev), s3(g.dev);
  causal::cuda::stream_queue q1(axes.allocate(0, causal::domain::queue).value(), g.dev);
  causal::cuda::stream_queue q2(axes.allocate(0, causal::domain::queue).value(), g.dev);
  causal::cuda::stream_queue q3(axes.allocate(0, causal::domain::queue).value(), g.dev);
  const causal::cuda::stream_operation op{&launch_tick, g.scratch, 0, "tick"};
  for (auto _ : state) {
    for (std::uint64_t r = base + 1; r <= base + pipeline_rounds; ++r) {
      if (!q1.submit({}, {{&s1, r}}, op) || !q2.submit({{&s1, r}}, {{&s2, r}}, op) ||
          !q3.submit({{&s2, r}}, {{&s3, r}}, op)) {
        state.SkipWithError("submit failed");
        return;
      }
    }
    base += pipeline_rounds;
    (void)q1.synchronize();
    (void)q2.synchronize();
    (void)q3.synchronize();
  }
  state.counters["device_waits"] =
      static_cast<double>(q2.stats().device_waits + q3.stats().device_waits);
}

void enqueue_event_pipeline(std::array<cudaStream_t, 3>& s, std::vector<cudaEvent_t>& ev, int* scratch) {
  for (std::size_t r = 0; r < pipeline_rounds; ++r) {
    tick<<<1, 32, 0, s[0]>>>(scratch);
    (void)cudaEventRecord(ev[2 * r], s[0]);
    (void)cudaStreamWaitEvent(s[1], ev[2 * r], 0);
    tick<<<1, 32, 0, s[1]>>>(scratch + 1);
    (void)cudaEventRecord(ev[2 * r + 1], s[1]);
    (void)cudaStreamWaitEvent(s[2], ev[2 * r + 1], 0);
    tick<<<1, 32, 0, s[2]>>>(scratch + 2);
  }
}

void bm_pipeline_events(benchmark::State& state, bool graph) {
  gpu& g = the_gpu();
  std::array<cudaStream_t, 3> s{};
  for (auto& x : s) (void)cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking);
  std::vector<cudaEvent_t> ev(2 * pipeline_rounds);
  for (auto& e : ev) (void)cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
  cudaGraphExec_t exec{};
  if (graph) {
    // Fork the other streams from the capturing one, join them back.
    cudaEvent_t fork{}, join1{}, join2{};
    (void)cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
    (void)cudaEventCreateWithFlags(&join1, cudaEventDisableTiming);
    (void)cudaEventCreateWithFlags(&join2, cudaEventDisableTiming);
    (void)cudaStreamBeginCapture(s[0], cudaStreamCaptureModeThreadLocal);
    (void)cudaEventRecord(fork, s[0]);
    (void)cudaStreamWaitEvent(s[1], fork, 0);
    (void)cudaStreamWaitEvent(s[2], fork, 0);
    enqueue_event_pipeline(s, ev, g.scratch);
    (void)cudaEventRecord(join1, s[1]);
    (void)cudaEventRecord(join2, s[2]);
    (void)cudaStreamWaitEvent(s[0], join1, 0);
    (void)cudaStreamWaitEvent(s[0], join2, 0);
    cudaGraph_t graph_handle{};
    (void)cudaStreamEndCapture(s[0], &graph_handle);
    if (cudaGraphInstantiate(&exec, graph_handle, 0) != cudaSuccess) {
      state.SkipWithError("cudaGraphInstantiate failed");
      return;
    }
    (void)cudaGraphDestroy(graph_handle);
  }
  for (auto _ : state) {
    if (graph) {
      (void)cudaGraphLaunch(exec, s[0]);
      (void)cudaStreamSynchronize(s[0]);
    } else {
      enqueue_event_pipeline(s, ev, g.scratch);
      for (auto& x : s) (void)cudaStreamSynchronize(x);
    }
  }
  if (graph) (void)cudaGraphExecDestroy(exec);
  for (auto& e : ev) (void)cudaEventDestroy(e);
  for (auto& x : s) (void)cudaStreamDestroy(x);
}

constexpr int dag_streams = 4;
constexpr int dag_layers = 16;

void bm_dag_causal(benchmark::State& state) {
  gpu& g = the_gpu();
  causal::axis_allocator axes;
  std::vector<std::unique_ptr<causal::cuda::semaphore>> done;
  std::vector<std::unique_ptr<causal::cuda::stream_queue>> q;
  for (int s = 0; s < dag_streams; ++s) {
    done.push_back(std::make_unique<causal::cuda::semaphore>(g.dev));
    q.push_back(std::make_unique<causal::cuda::stream_queue>(
        axes.allocate(0, causal::domain::queue).value(), g.dev));
  }
  const causal::cuda::stream_operation op{&launch_tick, g.scratch, 0, "node"};
  std::uint64_t base = 0;
  std::uint64_t edges = 0;
  for (auto _ : state) {
    for (int l = 1; l <= dag_layers; ++l) {
      for (int s = 0; s < dag_streams; ++s) {
        std::array<causal::cuda::stream_queue::wait_type, 2> w{};
        std::size_t n = 0;
        const std::uint64_t v = base + static_cast<std::uint64_t>(l);
        if (l > 1) w[n++] = {done[(s + 1) % dag_streams].get(), v - 1};
        if (l > 2) w[n++] = {done[(s + 2) % dag_streams].get(), v - 2};
        edges += n;
        const std::array<causal::cuda::stream_queue::signal_type, 1> sig{{{done[s].get(), v}}};
        if (!q[s]->submit(std::span(w.data(), n), std::span(sig), op)) {
          state.SkipWithError("submit failed");
          return;
        }
      }
    }
    base += dag_layers;
    for (auto& x : q) (void)x->synchronize();
  }
  std::uint64_t waits = 0;
  for (auto& x : q) waits += x->stats().device_waits;
  state.counters["device_waits"] = benchmark::Counter(static_cast<double>(waits), benchmark::Counter::kAvgIterations);
  state.counters["edges"] = benchmark::Counter(static_cast<double>(edges), benchmark::Counter::kAvgIterations);
}

void bm_dag_events(benchmark::State& state) {
  gpu& g = the_gpu();
  std::array<cudaStream_t, dag_streams> s{};
  for (auto& x : s) (void)cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking);
  // One event per node, recorded after it; re-recorded every iteration.
  std::vector<cudaEvent_t> ev(dag_streams * (dag_layers + 1));
  for (auto& e : ev) (void)cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
  auto node = [](int st, int l) { return static_cast<std::size_t>(l * dag_streams + st); };
  std::uint64_t edges = 0;
  for (auto _ : state) {
    for (int l = 1; l <= dag_layers; ++l) {
      for (int st = 0; st < dag_streams; ++st) {
        if (l > 1) {
          (void)cudaStreamWaitEvent(s[st], ev[node((st + 1) % dag_streams, l - 1)], 0);
          ++edges;
        }
        if (l > 2) {
          (void)cudaStreamWaitEvent(s[st], ev[node((st + 2) % dag_streams, l - 2)], 0);
          ++edges;
        }
        tick<<<1, 32, 0, s[st]>>>(g.scratch);
        (void)cudaEventRecord(ev[node(st, l)], s[st]);
      }
    }
    for (auto& x : s) (void)cudaStreamSynchronize(x);
  }
  state.counters["device_waits"] = benchmark::Counter(static_cast<double>(edges), benchmark::Counter::kAvgIterations);
  state.counters["edges"] = benchmark::Counter(static_cast<double>(edges), benchmark::Counter::kAvgIterations);
  for (auto& e : ev) (void)cudaEventDestroy(e);
  for (auto& x : s) (void)cudaStreamDestroy(x);
}

}  // namespace

BENCHMARK_CAPTURE(bm_edge, wait_value, edge_kind::wait_value);
BENCHMARK_CAPTURE(bm_edge, event, edge_kind::event);
BENCHMARK_CAPTURE(bm_edge, host_function, edge_kind::host_function);
BENCHMARK(bm_pipeline_causal)->Name("pipeline/causal")->UseRealTime();
BENCHMARK_CAPTURE(bm_pipeline_events, events, false)->Name("pipeline/events")->UseRealTime();
BENCHMARK_CAPTURE(bm_pipeline_events, graph, true)->Name("pipeline/graph")->UseRealTime();
BENCHMARK(bm_dag_causal)->Name("dag/causal")->UseRealTime();
BENCHMARK(bm_dag_events)->Name("dag/events")->UseRealTime();

int main(int argc, char** argv) {
  {
    // Skip only for "no device" (cudaErrorNoDevice, or no driver at all);
    // a driver older than the runtime, or any other failure, fails loudly.
    char why[256];
    if (const int gate = causal::cuda::device_gate(causal::cuda::native_driver(), why, sizeof why); gate != 0) {
      std::fprintf(stderr, "%s: %s\n", gate == 77 ? "SKIP" : "FAIL", why);
      return gate;
    }
  }
  std::printf("device: %s\n", the_gpu().dev.name());
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
