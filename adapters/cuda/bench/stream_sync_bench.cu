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
// Every CUDA call's status is checked: a failed call, or a row that cannot
// measure what it names (no memory operations for wait_value), reports an
// error row (SkipWithError) and makes the binary exit 1, so a run with a
// skipped row never reads as passed (.ci/gpu also fails on error rows).
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

// Rows that reported an error; main() exits 1 when any did. Written by the
// benchmark thread, read by main() after every benchmark has run (relaxed:
// RunSpecifiedBenchmarks returning orders them).
std::atomic<int> failed_rows{0};

// Reports `what` as this row's error (once per row) and counts the row.
void fail_row(benchmark::State& state, const char* what) {
  if (state.error_occurred()) return;
  failed_rows.fetch_add(1, std::memory_order_relaxed);
  state.SkipWithError(what);
}

// Returns true when a runtime call succeeded; else fails the row with the
// call's name and the error's.
bool ok(benchmark::State& state, cudaError_t status, const char* call) {
  if (status == cudaSuccess) return true;
  char what[192];
  std::snprintf(what, sizeof what, "%s: %s", call, cudaGetErrorName(status));
  fail_row(state, what);
  return false;
}

// The same for a driver-table call (its native status; 0 is success).
bool ok_driver(benchmark::State& state, int status, const char* call) {
  if (status == 0) return true;
  char what[192];
  std::snprintf(what, sizeof what, "%s: driver status %d", call, status);
  fail_row(state, what);
  return false;
}

// The same for an adapter call.
bool ok_status(benchmark::State& state, const causal::status& status, const char* call) {
  if (status) return true;
  char what[192];
  std::snprintf(what, sizeof what, "%s: %.*s", call,
                static_cast<int>(status.error_value().message().size()),
                status.error_value().message().data());
  fail_row(state, what);
  return false;
}

// The same for a submission (a result<T>, its value unused).
template <class Result>
bool ok_submit(benchmark::State& state, const Result& r) {
  return r ? true : ok_status(state, causal::status{r.error_value()}, "submit");
}

struct gpu {
  causal::cuda::device_context dev;
  int* scratch = nullptr;
  cudaError_t scratch_status = cudaMalloc(&scratch, 64 * sizeof(int));
  ~gpu() { (void)cudaFree(scratch); }  // at exit: nothing left to report to
};

gpu& the_gpu() {
  static gpu g;
  return g;
}

// The GPU, or nullptr after failing the row when its setup failed.
gpu* ready_gpu(benchmark::State& state) {
  gpu& g = the_gpu();
  if (!ok_status(state, g.dev.setup_status(), "device_context") ||
      !ok(state, g.scratch_status, "cudaMalloc(scratch)")) {
    return nullptr;
  }
  return &g;
}

// The streams and events one row creates. release() synchronises and
// destroys them, checking every call; the destructor only cleans up after
// a row that already failed.
class cuda_objects {
 public:
  explicit cuda_objects(benchmark::State& state) : state_(state) {}
  cuda_objects(const cuda_objects&) = delete;
  cuda_objects& operator=(const cuda_objects&) = delete;
  ~cuda_objects() { (void)destroy(false); }

  bool stream(cudaStream_t& out) {
    if (!ok(state_, cudaStreamCreateWithFlags(&out, cudaStreamNonBlocking), "cudaStreamCreateWithFlags")) {
      return false;
    }
    streams_.push_back(out);
    return true;
  }
  bool event(cudaEvent_t& out) {
    if (!ok(state_, cudaEventCreateWithFlags(&out, cudaEventDisableTiming), "cudaEventCreateWithFlags")) {
      return false;
    }
    events_.push_back(out);
    return true;
  }
  bool release() { return destroy(true); }

 private:
  bool destroy(bool check) {
    bool good = true;
    for (cudaStream_t s : streams_) {
      const cudaError_t e = cudaStreamSynchronize(s);
      if (check) good = ok(state_, e, "cudaStreamSynchronize") && good;
    }
    for (cudaEvent_t e : events_) {
      const cudaError_t r = cudaEventDestroy(e);
      if (check) good = ok(state_, r, "cudaEventDestroy") && good;
    }
    for (cudaStream_t s : streams_) {
      const cudaError_t r = cudaStreamDestroy(s);
      if (check) good = ok(state_, r, "cudaStreamDestroy") && good;
    }
    streams_.clear();
    events_.clear();
    return good;
  }

  benchmark::State& state_;
  std::vector<cudaStream_t> streams_;
  std::vector<cudaEvent_t> events_;
};

// After a batch of launches: the launches' own errors, then the streams'.
bool synchronized(benchmark::State& state, std::span<const cudaStream_t> streams) {
  if (!ok(state, cudaGetLastError(), "kernel launch")) return false;
  for (cudaStream_t s : streams) {
    if (!ok(state, cudaStreamSynchronize(s), "cudaStreamSynchronize")) return false;
  }
  return true;
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
  gpu* g = ready_gpu(state);
  if (g == nullptr) return;
  if ((kind != edge_kind::event) && !g->dev.has_memory_ops()) {
    fail_row(state, "no 64-bit stream memory operations on this device");
    return;
  }
  cuda_objects objects(state);
  std::array<cudaStream_t, 2> ab{};
  cudaEvent_t ev{};
  if (!objects.stream(ab[0]) || !objects.stream(ab[1]) || !objects.event(ev)) return;
  const cudaStream_t a = ab[0];
  const cudaStream_t b = ab[1];
  auto word = g->dev.allocate_word(0);
  if (!word) {
    (void)ok_status(state, causal::status{word.error_value()}, "allocate_word");
    return;
  }
  std::vector<host_write> writes(256);
  std::uint64_t v = 0;
  std::size_t k = 0;
  for (auto _ : state) {
    ++v;
    tick<<<1, 32, 0, a>>>(g->scratch);
    bool issued = true;
    switch (kind) {
      case edge_kind::wait_value:
        issued = ok_driver(state, drv().write_value64(a, word->device, v), "write_value64") &&
                 ok_driver(state, drv().wait_value64(b, word->device, v), "wait_value64");
        break;
      case edge_kind::event:
        issued = ok(state, cudaEventRecord(ev, a), "cudaEventRecord") &&
                 ok(state, cudaStreamWaitEvent(b, ev, 0), "cudaStreamWaitEvent");
        break;
      case edge_kind::host_function:
        writes[k] = host_write{word->host, v};
        issued = ok(state, cudaLaunchHostFunc(a, &write_word, &writes[k]), "cudaLaunchHostFunc") &&
                 ok_driver(state, drv().wait_value64(b, word->device, v), "wait_value64");
        break;
    }
    if (!issued) break;
    tick<<<1, 32, 0, b>>>(g->scratch + 1);
    if (++k == writes.size()) {
      k = 0;
      if (!synchronized(state, ab)) break;
    }
  }
  // A failed row's stream may wait on a value nobody will write (its write
  // failed): every wait asked for v at most, so writing v lets them through.
  if (state.error_occurred()) {
    // release: the waiting stream reads the word through the bus.
    std::atomic_ref<std::uint64_t>(*word->host).store(v, std::memory_order_release);
  }
  (void)synchronized(state, ab);
  (void)objects.release();
  g->dev.free_word(*word);
  state.SetItemsProcessed(state.iterations());
}

int launch_tick(cudaStream_t s, void* user, std::uint64_t) noexcept {
  tick<<<1, 32, 0, s>>>(static_cast<int*>(user));
  return static_cast<int>(cudaGetLastError());
}

constexpr std::uint64_t pipeline_rounds = 32;

void bm_pipeline_causal(benchmark::State& state) {
  gpu* g = ready_gpu(state);
  if (g == nullptr) return;
  causal::axis_allocator axes;
  std::uint64_t base = 0;
  causal::cuda::semaphore s1(g->dev), s2(g->dev), s3(g->dev);
  causal::cuda::stream_queue q1(axes.allocate(0, causal::domain::queue).value(), g->dev);
  causal::cuda::stream_queue q2(axes.allocate(0, causal::domain::queue).value(), g->dev);
  causal::cuda::stream_queue q3(axes.allocate(0, causal::domain::queue).value(), g->dev);
  if (!ok_status(state, q1.setup_status(), "stream_queue") || !ok_status(state, q2.setup_status(), "stream_queue") ||
      !ok_status(state, q3.setup_status(), "stream_queue")) {
    return;
  }
  const causal::cuda::stream_operation op{&launch_tick, g->scratch, 0, "tick"};
  for (auto _ : state) {
    bool submitted = true;
    for (std::uint64_t r = base + 1; submitted && r <= base + pipeline_rounds; ++r) {
      submitted = ok_submit(state, q1.submit({}, {{&s1, r}}, op)) &&
                  ok_submit(state, q2.submit({{&s1, r}}, {{&s2, r}}, op)) &&
                  ok_submit(state, q3.submit({{&s2, r}}, {{&s3, r}}, op));
    }
    if (!submitted) break;
    base += pipeline_rounds;
    if (!ok_status(state, q1.synchronize(), "synchronize") || !ok_status(state, q2.synchronize(), "synchronize") ||
        !ok_status(state, q3.synchronize(), "synchronize")) {
      break;
    }
  }
  state.counters["device_waits"] =
      static_cast<double>(q2.stats().device_waits + q3.stats().device_waits);
}

// Enqueues one pass of the event pipeline; false (row failed) when a call did.
bool enqueue_event_pipeline(benchmark::State& state, std::array<cudaStream_t, 3>& s,
                            std::vector<cudaEvent_t>& ev, int* scratch) {
  for (std::size_t r = 0; r < pipeline_rounds; ++r) {
    tick<<<1, 32, 0, s[0]>>>(scratch);
    if (!ok(state, cudaEventRecord(ev[2 * r], s[0]), "cudaEventRecord") ||
        !ok(state, cudaStreamWaitEvent(s[1], ev[2 * r], 0), "cudaStreamWaitEvent")) {
      return false;
    }
    tick<<<1, 32, 0, s[1]>>>(scratch + 1);
    if (!ok(state, cudaEventRecord(ev[2 * r + 1], s[1]), "cudaEventRecord") ||
        !ok(state, cudaStreamWaitEvent(s[2], ev[2 * r + 1], 0), "cudaStreamWaitEvent")) {
      return false;
    }
    tick<<<1, 32, 0, s[2]>>>(scratch + 2);
  }
  return true;
}

void bm_pipeline_events(benchmark::State& state, bool graph) {
  gpu* g = ready_gpu(state);
  if (g == nullptr) return;
  cuda_objects objects(state);
  std::array<cudaStream_t, 3> s{};
  for (auto& x : s) {
    if (!objects.stream(x)) return;
  }
  std::vector<cudaEvent_t> ev(2 * pipeline_rounds);
  for (auto& e : ev) {
    if (!objects.event(e)) return;
  }
  cudaGraphExec_t exec{};
  if (graph) {
    // Fork the other streams from the capturing one, join them back.
    cudaEvent_t fork{}, join1{}, join2{};
    if (!objects.event(fork) || !objects.event(join1) || !objects.event(join2)) return;
    cudaGraph_t graph_handle{};
    const bool captured =
        ok(state, cudaStreamBeginCapture(s[0], cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture") &&
        ok(state, cudaEventRecord(fork, s[0]), "cudaEventRecord") &&
        ok(state, cudaStreamWaitEvent(s[1], fork, 0), "cudaStreamWaitEvent") &&
        ok(state, cudaStreamWaitEvent(s[2], fork, 0), "cudaStreamWaitEvent") &&
        enqueue_event_pipeline(state, s, ev, g->scratch) &&
        ok(state, cudaEventRecord(join1, s[1]), "cudaEventRecord") &&
        ok(state, cudaEventRecord(join2, s[2]), "cudaEventRecord") &&
        ok(state, cudaStreamWaitEvent(s[0], join1, 0), "cudaStreamWaitEvent") &&
        ok(state, cudaStreamWaitEvent(s[0], join2, 0), "cudaStreamWaitEvent");
    // End the capture whatever happened, so the stream is usable again.
    const cudaError_t ended = cudaStreamEndCapture(s[0], &graph_handle);
    if (!captured || !ok(state, ended, "cudaStreamEndCapture")) {
      if (graph_handle != nullptr) (void)cudaGraphDestroy(graph_handle);
      return;
    }
    const bool instantiated = ok(state, cudaGraphInstantiate(&exec, graph_handle, 0), "cudaGraphInstantiate");
    const cudaError_t destroyed = cudaGraphDestroy(graph_handle);
    if (!instantiated || !ok(state, destroyed, "cudaGraphDestroy")) return;
  }
  for (auto _ : state) {
    if (graph) {
      if (!ok(state, cudaGraphLaunch(exec, s[0]), "cudaGraphLaunch") || !synchronized(state, std::span(s.data(), 1))) {
        break;
      }
    } else if (!enqueue_event_pipeline(state, s, ev, g->scratch) || !synchronized(state, s)) {
      break;
    }
  }
  (void)objects.release();
  if (graph) (void)ok(state, cudaGraphExecDestroy(exec), "cudaGraphExecDestroy");
}

constexpr int dag_streams = 4;
constexpr int dag_layers = 16;

void bm_dag_causal(benchmark::State& state) {
  gpu* g = ready_gpu(state);
  if (g == nullptr) return;
  causal::axis_allocator axes;
  std::vector<std::unique_ptr<causal::cuda::semaphore>> done;
  std::vector<std::unique_ptr<causal::cuda::stream_queue>> q;
  for (int s = 0; s < dag_streams; ++s) {
    done.push_back(std::make_unique<causal::cuda::semaphore>(g->dev));
    q.push_back(std::make_unique<causal::cuda::stream_queue>(
        axes.allocate(0, causal::domain::queue).value(), g->dev));
    if (!ok_status(state, q.back()->setup_status(), "stream_queue")) return;
  }
  const causal::cuda::stream_operation op{&launch_tick, g->scratch, 0, "node"};
  std::uint64_t base = 0;
  std::uint64_t edges = 0;
  for (auto _ : state) {
    bool submitted = true;
    for (int l = 1; submitted && l <= dag_layers; ++l) {
      for (int s = 0; submitted && s < dag_streams; ++s) {
        std::array<causal::cuda::stream_queue::wait_type, 2> w{};
        std::size_t n = 0;
        const std::uint64_t v = base + static_cast<std::uint64_t>(l);
        if (l > 1) w[n++] = {done[(s + 1) % dag_streams].get(), v - 1};
        if (l > 2) w[n++] = {done[(s + 2) % dag_streams].get(), v - 2};
        edges += n;
        const std::array<causal::cuda::stream_queue::signal_type, 1> sig{{{done[s].get(), v}}};
        submitted = ok_submit(state, q[s]->submit(std::span(w.data(), n), std::span(sig), op));
      }
    }
    if (!submitted) break;
    base += dag_layers;
    bool drained = true;
    for (auto& x : q) drained = drained && ok_status(state, x->synchronize(), "synchronize");
    if (!drained) break;
  }
  std::uint64_t waits = 0;
  for (auto& x : q) waits += x->stats().device_waits;
  state.counters["device_waits"] = benchmark::Counter(static_cast<double>(waits), benchmark::Counter::kAvgIterations);
  state.counters["edges"] = benchmark::Counter(static_cast<double>(edges), benchmark::Counter::kAvgIterations);
}

void bm_dag_events(benchmark::State& state) {
  gpu* g = ready_gpu(state);
  if (g == nullptr) return;
  cuda_objects objects(state);
  std::array<cudaStream_t, dag_streams> s{};
  for (auto& x : s) {
    if (!objects.stream(x)) return;
  }
  // One event per node, recorded after it; re-recorded every iteration.
  std::vector<cudaEvent_t> ev(dag_streams * (dag_layers + 1));
  for (auto& e : ev) {
    if (!objects.event(e)) return;
  }
  auto node = [](int st, int l) { return static_cast<std::size_t>(l * dag_streams + st); };
  std::uint64_t edges = 0;
  for (auto _ : state) {
    bool issued = true;
    for (int l = 1; issued && l <= dag_layers; ++l) {
      for (int st = 0; issued && st < dag_streams; ++st) {
        if (l > 1) {
          issued = ok(state, cudaStreamWaitEvent(s[st], ev[node((st + 1) % dag_streams, l - 1)], 0),
                      "cudaStreamWaitEvent");
          ++edges;
        }
        if (issued && l > 2) {
          issued = ok(state, cudaStreamWaitEvent(s[st], ev[node((st + 2) % dag_streams, l - 2)], 0),
                      "cudaStreamWaitEvent");
          ++edges;
        }
        if (!issued) break;
        tick<<<1, 32, 0, s[st]>>>(g->scratch);
        issued = ok(state, cudaEventRecord(ev[node(st, l)], s[st]), "cudaEventRecord");
      }
    }
    if (!issued || !synchronized(state, s)) break;
  }
  state.counters["device_waits"] = benchmark::Counter(static_cast<double>(edges), benchmark::Counter::kAvgIterations);
  state.counters["edges"] = benchmark::Counter(static_cast<double>(edges), benchmark::Counter::kAvgIterations);
  (void)objects.release();
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
  if (const int failed = failed_rows.load(std::memory_order_relaxed); failed != 0) {
    std::fprintf(stderr, "FAIL: %d benchmark row(s) reported an error\n", failed);
    return 1;
  }
  return 0;
}
