// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// vulkan_queue_bench: what a causal Vulkan queue costs on the host against
// hand-written Vulkan-Hpp/C submits doing the same work, and how many device
// waits it issues against naive per-edge timeline waits, in one binary.
//
// Why it matters. Every operation goes through vulkan::queue::submit: the
// core's elision decision, the batch assembly (leading barrier, epoch
// timeline signal, held-batch check) and the driver call. Goal (issue 7):
// our submit <= 1.1x the raw vkQueueSubmit2, and strictly fewer device
// waits wherever a wait is transitively implied.
//
// What runs (no validation layer; every variant on the same vk::Queue):
//   submit/raw_minimal       vkQueueSubmit2: 1 command buffer, signals one
//                            timeline (what a hand-written app sends)
//   submit/raw_equivalent    vkQueueSubmit2 carrying exactly what ours
//                            sends: leading barrier + command buffer +
//                            the barrier again (trailing, host-visible
//                            writes), signals the timeline and an epoch
//                            timeline
//   submit/causal            vulkan::queue::submit, no wait, one signal
//   submit_wait/raw          vkQueueSubmit2 that also waits on the previous
//                            value of its own timeline
//   submit_wait/causal_elided    the same wait through causal: same queue,
//                                elided (no wait reaches the driver)
//   submit_wait/raw_cross    waits on another timeline signalled by a second
//                            raw submit each iteration
//   submit_wait/causal_device    the same through two causal queues: a real
//                                device wait (tier 2)
//   dag/<shape>/{raw_naive,causal}  one DAG per iteration over 4 queues:
//       chain      4 nodes on 4 queues, node i reads every node j < i
//                  (6 edges; transitively implied: 3)
//       fork_join  root on q0, 3 forks on q1..q3, join on q0 reading the
//                  forks and the root (7 edges; the root edge is implied)
//       diamond    A on q0; B, C on q1, q2 read A; D on q3 reads A, B, C
//                  (5 edges; A->D implied)
//     raw_naive issues one timeline wait per edge (per-edge waits, the
//     baseline); causal goes through vulkan::queue with elision.
// Timing: each benchmark iteration times a burst of `burst` submits (or
// DAGs) with one pair of clock reads (manual time) and then, untimed,
// waits for the device to drain, so the figures are host submit cost, not
// device throughput or completion latency. Counters: device_waits per DAG
// (ours: the queues' device_waits; raw: its waits), edges per DAG.
// Correctness: after each burst the last values must be reached and every
// queue retired (else SkipWithError).
//
// How to run:
//   meson setup build -Dbenchmarks=enabled --buildtype=release
//   ninja -C build adapters/vulkan/bench/vulkan_queue_bench
//   XDG_RUNTIME_DIR=/tmp build/adapters/vulkan/bench/vulkan_queue_bench
//       --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//   (one command line)
// What to look for: submit/causal vs raw_equivalent (our host overhead) and
// vs raw_minimal (overhead plus the extra barrier and signal the contract
// costs); dag device_waits causal < raw_naive on every shape.

#include <causal/adapters/vulkan/device.hpp>
#include <causal/adapters/vulkan/queue.hpp>
#include <causal/adapters/vulkan/semaphore.hpp>
#include <causal/axis.hpp>

#include <benchmark/benchmark.h>

#include "vk_compute.hpp"
#include "vk_harness.hpp"

#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;
constexpr int burst = 8;  // <= the semaphores' pending capacity

causal_vk_test::harness* env = nullptr;

/// Raw Vulkan state shared by the raw variants.
struct raw_context {
  VkDevice device;
  VkQueue queue;
  PFN_vkQueueSubmit2 submit2;
  PFN_vkWaitSemaphores wait;
  VkCommandBuffer cb;
  VkCommandBuffer barrier;

  /// Destroys `s` once the queue is idle: lavapipe's submit thread may
  /// still touch a semaphore after a host wait on it has returned.
  void destroy(VkSemaphore s) const {
    (void)vkQueueWaitIdle(queue);
    vkDestroySemaphore(device, s, nullptr);
  }
  VkSemaphore make_timeline() const {
    VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO, nullptr,
                                   VK_SEMAPHORE_TYPE_TIMELINE, 0};
    VkSemaphoreCreateInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, &type, 0};
    VkSemaphore s = VK_NULL_HANDLE;
    (void)vkCreateSemaphore(device, &info, nullptr, &s);
    return s;
  }
  bool wait_for(VkSemaphore s, std::uint64_t v) const {
    const VkSemaphoreWaitInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO, nullptr, 0, 1, &s, &v};
    const VkResult r = wait(device, &info, 10'000'000'000ull);
    if (r != VK_SUCCESS) {
      std::uint64_t now = 0;
      (void)vkGetSemaphoreCounterValue(device, s, &now);
      std::fprintf(stderr, "raw wait for %llu failed (VkResult %d, counter at %llu)\n",
                   static_cast<unsigned long long>(v), static_cast<int>(r),
                   static_cast<unsigned long long>(now));
    }
    return r == VK_SUCCESS;
  }
  /// One batch: `cbs` command buffers, `waits` and `signals` (all timelines).
  VkResult submit(std::initializer_list<VkCommandBuffer> cbs,
                  std::initializer_list<std::pair<VkSemaphore, std::uint64_t>> waits,
                  std::initializer_list<std::pair<VkSemaphore, std::uint64_t>> signals) const {
    std::array<VkSemaphoreSubmitInfo, 8> w{}, s{};
    std::array<VkCommandBufferSubmitInfo, 4> c{};
    std::uint32_t nw = 0, ns = 0, nc = 0;
    for (auto [sem, v] : waits) {
      w[nw++] = {VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO, nullptr, sem, v,
                 VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, 0};
    }
    for (auto [sem, v] : signals) {
      s[ns++] = {VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO, nullptr, sem, v,
                 VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, 0};
    }
    for (VkCommandBuffer b : cbs) c[nc++] = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO, nullptr, b, 0};
    const VkSubmitInfo2 info{VK_STRUCTURE_TYPE_SUBMIT_INFO_2, nullptr, 0, nw, w.data(), nc, c.data(),
                             ns, s.data()};
    return submit2(queue, 1, &info, VK_NULL_HANDLE);
  }
};

/// The adapter objects, made once per benchmark.
struct causal_context {
  std::unique_ptr<causal::vulkan::device> dev;
  causal::vulkan::hardware_queue* hw = nullptr;
  causal::axis_allocator axes;
  std::vector<std::unique_ptr<causal::vulkan::semaphore>> sems;
  std::vector<std::unique_ptr<causal::vulkan::queue>> queues;

  causal_context() {
    causal::vulkan::device_options o;
    o.synchronization2 = env->synchronization2;
    dev = std::make_unique<causal::vulkan::device>(env->instance, env->physical, env->device, o);
    hw = dev->get_hardware_queue(env->family, 0).value();
  }
  ~causal_context() {
    queues.clear();
    env->device.waitIdle();
    sems.clear();
  }
  causal::vulkan::queue& queue() {
    queues.push_back(std::make_unique<causal::vulkan::queue>(
        *dev, *hw, axes.allocate(0, causal::domain::queue).value()));
    return *queues.back();
  }
  causal::vulkan::semaphore& semaphore() {
    sems.push_back(std::make_unique<causal::vulkan::semaphore>(*dev));
    return *sems.back();
  }
};

struct shared_objects {
  std::unique_ptr<causal_vk_test::command_pool> pool;
  raw_context raw{};
};
shared_objects* objects = nullptr;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

//===-- submit ----------------------------------------------------------------===//

void submit_raw_minimal(benchmark::State& state) {
  const raw_context& raw = objects->raw;
  VkSemaphore s = raw.make_timeline();
  std::uint64_t v = 0;
  for (auto _ : state) {
    if (state.error_occurred()) break;
    const auto t0 = clock_type::now();
    for (int i = 0; i < burst; ++i) benchmark::DoNotOptimize(raw.submit({raw.cb}, {}, {{s, ++v}}));
    state.SetIterationTime(seconds_since(t0));
    if (!raw.wait_for(s, v)) state.SkipWithError("raw timeline not reached");
  }
  raw.destroy(s);
  state.SetItemsProcessed(state.iterations() * burst);
}

void submit_raw_equivalent(benchmark::State& state) {
  const raw_context& raw = objects->raw;
  VkSemaphore s = raw.make_timeline(), epochs = raw.make_timeline();
  std::uint64_t v = 0;
  for (auto _ : state) {
    if (state.error_occurred()) break;
    const auto t0 = clock_type::now();
    for (int i = 0; i < burst; ++i) {
      ++v;
      benchmark::DoNotOptimize(raw.submit({raw.barrier, raw.cb, raw.barrier}, {}, {{s, v}, {epochs, v}}));
    }
    state.SetIterationTime(seconds_since(t0));
    if (!raw.wait_for(s, v)) state.SkipWithError("raw timeline not reached");
  }
  raw.destroy(s);
  raw.destroy(epochs);
  state.SetItemsProcessed(state.iterations() * burst);
}

void submit_causal(benchmark::State& state) {
  causal_context c;
  auto& q = c.queue();
  auto& s = c.semaphore();
  const causal::vulkan::command_list op{vk::CommandBuffer(objects->raw.cb)};
  std::uint64_t v = 0;
  for (auto _ : state) {
    if (state.error_occurred()) break;
    const auto t0 = clock_type::now();
    for (int i = 0; i < burst; ++i) {
      auto r = q.submit({}, {{&s, ++v}}, op);
      if (!r) state.SkipWithError("causal submit failed");
      benchmark::DoNotOptimize(r);
    }
    state.SetIterationTime(seconds_since(t0));
    if (!s.wait_for(v, std::chrono::seconds(10))) state.SkipWithError("causal semaphore not reached");
  }
  if (!q.wait_idle() || q.completed_epoch() != v) state.SkipWithError("queue did not retire every epoch");
  state.SetItemsProcessed(state.iterations() * burst);
}

void submit_wait_raw(benchmark::State& state) {
  const raw_context& raw = objects->raw;
  VkSemaphore s = raw.make_timeline();
  std::uint64_t v = 0;
  for (auto _ : state) {
    if (state.error_occurred()) break;
    const auto t0 = clock_type::now();
    for (int i = 0; i < burst; ++i, ++v) {
      benchmark::DoNotOptimize(raw.submit({raw.cb}, {{s, v}}, {{s, v + 1}}));
    }
    state.SetIterationTime(seconds_since(t0));
    if (!raw.wait_for(s, v)) state.SkipWithError("raw timeline not reached");
  }
  raw.destroy(s);
  state.counters["vk_waits"] = 1;
}

void submit_wait_causal_elided(benchmark::State& state) {
  causal_context c;
  auto& q = c.queue();
  auto& s = c.semaphore();
  const causal::vulkan::command_list op{vk::CommandBuffer(objects->raw.cb)};
  if (!q.submit({}, {{&s, 1}}, op) || !s.wait_for(1, std::chrono::seconds(10))) {
    state.SkipWithError("first submit failed");
  }
  std::uint64_t v = 1;
  for (auto _ : state) {
    if (state.error_occurred()) break;
    const auto t0 = clock_type::now();
    for (int i = 0; i < burst; ++i, ++v) {
      auto r = q.submit({{&s, v}}, {{&s, v + 1}}, op);
      if (!r) state.SkipWithError("causal submit failed");
      benchmark::DoNotOptimize(r);
    }
    state.SetIterationTime(seconds_since(t0));
    if (!s.wait_for(v, std::chrono::seconds(10))) state.SkipWithError("causal semaphore not reached");
  }
  const auto st = q.driver_stats();
  state.counters["vk_waits"] = static_cast<double>(st.vk_waits) / static_cast<double>(st.batches);
  if (q.stats().device_waits != 0) state.SkipWithError("a same-queue wait was not elided");
}

void submit_wait_raw_cross(benchmark::State& state) {
  const raw_context& raw = objects->raw;
  VkSemaphore a = raw.make_timeline(), b = raw.make_timeline();
  std::uint64_t v = 0;
  for (auto _ : state) {
    if (state.error_occurred()) break;
    double t = 0;
    for (int i = 0; i < burst; ++i) {
      ++v;
      benchmark::DoNotOptimize(raw.submit({raw.cb}, {}, {{a, v}}));  // the producer (untimed)
      const auto t0 = clock_type::now();
      benchmark::DoNotOptimize(raw.submit({raw.cb}, {{a, v}}, {{b, v}}));
      t += seconds_since(t0);
    }
    state.SetIterationTime(t);
    if (!raw.wait_for(b, v)) state.SkipWithError("raw timeline not reached");
  }
  raw.destroy(a);
  raw.destroy(b);
}

void submit_wait_causal_device(benchmark::State& state) {
  causal_context c;
  auto& producer = c.queue();
  auto& q = c.queue();
  auto& a = c.semaphore();
  auto& b = c.semaphore();
  const causal::vulkan::command_list op{vk::CommandBuffer(objects->raw.cb)};
  std::uint64_t v = 0;
  for (auto _ : state) {
    if (state.error_occurred()) break;
    double t = 0;
    for (int i = 0; i < burst; ++i) {
      ++v;
      if (!producer.submit({}, {{&a, v}}, op)) state.SkipWithError("producer submit failed");
      const auto t0 = clock_type::now();
      auto r = q.submit({{&a, v}}, {{&b, v}}, op);
      t += seconds_since(t0);
      if (!r) state.SkipWithError("causal submit failed");
      benchmark::DoNotOptimize(r);
    }
    state.SetIterationTime(t);
    if (!b.wait_for(v, std::chrono::seconds(10))) state.SkipWithError("causal semaphore not reached");
  }
  if (q.stats().device_waits != q.stats().submissions) state.SkipWithError("expected a device wait per submit");
}

//===-- DAGs --------------------------------------------------------------------===//

enum class shape { chain, fork_join, diamond };

struct node {
  int queue;
  std::vector<int> reads;  // earlier nodes whose outputs this node reads
};

std::vector<node> dag(shape s) {
  switch (s) {
    case shape::chain: return {{0, {}}, {1, {0}}, {2, {0, 1}}, {3, {0, 1, 2}}};
    case shape::fork_join: return {{0, {}}, {1, {0}}, {2, {0}}, {3, {0}}, {0, {0, 1, 2, 3}}};
    case shape::diamond: return {{0, {}}, {1, {0}}, {2, {0}}, {3, {0, 1, 2}}};
  }
  return {};
}

std::size_t edges(const std::vector<node>& d) {
  std::size_t n = 0;
  for (const node& x : d) n += x.reads.size();
  return n;
}

template <shape S>
void dag_raw_naive(benchmark::State& state) {
  const raw_context& raw = objects->raw;
  const auto d = dag(S);
  std::vector<VkSemaphore> sems;
  for (std::size_t i = 0; i < d.size(); ++i) sems.push_back(raw.make_timeline());
  std::uint64_t v = 0;
  for (auto _ : state) {
    if (state.error_occurred()) break;
    const auto t0 = clock_type::now();
    for (int k = 0; k < burst; ++k) {
      ++v;
      for (std::size_t i = 0; i < d.size(); ++i) {
        std::array<VkSemaphoreSubmitInfo, 8> w{};
        std::uint32_t nw = 0;
        for (int j : d[i].reads) {
          w[nw++] = {VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO, nullptr, sems[static_cast<std::size_t>(j)], v,
                     VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, 0};
        }
        const VkSemaphoreSubmitInfo sig{VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO, nullptr, sems[i], v,
                                        VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT, 0};
        const VkCommandBufferSubmitInfo cb{VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO, nullptr, raw.cb, 0};
        const VkSubmitInfo2 info{VK_STRUCTURE_TYPE_SUBMIT_INFO_2, nullptr, 0, nw, w.data(), 1, &cb, 1, &sig};
        benchmark::DoNotOptimize(raw.submit2(raw.queue, 1, &info, VK_NULL_HANDLE));
      }
    }
    state.SetIterationTime(seconds_since(t0));
    if (!raw.wait_for(sems.back(), v)) state.SkipWithError("raw DAG did not complete");
  }
  for (VkSemaphore s : sems) raw.destroy(s);
  state.counters["device_waits"] = static_cast<double>(edges(d));
  state.counters["edges"] = static_cast<double>(edges(d));
}

template <shape S>
void dag_causal(benchmark::State& state) {
  causal_context c;
  const auto d = dag(S);
  std::array<causal::vulkan::queue*, 4> qs{};
  for (auto& q : qs) q = &c.queue();
  std::vector<causal::vulkan::semaphore*> sems;
  for (std::size_t i = 0; i < d.size(); ++i) sems.push_back(&c.semaphore());
  const causal::vulkan::command_list op{vk::CommandBuffer(objects->raw.cb)};
  std::uint64_t v = 0;
  using wait = causal::vulkan::queue::wait_type;
  using signal = causal::vulkan::queue::signal_type;
  for (auto _ : state) {
    if (state.error_occurred()) break;
    const auto t0 = clock_type::now();
    for (int k = 0; k < burst; ++k) {
      ++v;
      for (std::size_t i = 0; i < d.size(); ++i) {
        std::array<wait, 8> w{};
        std::size_t nw = 0;
        for (int j : d[i].reads) w[nw++] = wait{sems[static_cast<std::size_t>(j)], v};
        const signal sig{sems[i], v};
        auto r = qs[static_cast<std::size_t>(d[i].queue)]->submit(std::span<const wait>(w.data(), nw),
                                                                   std::span<const signal>(&sig, 1), op);
        if (!r) state.SkipWithError("causal submit failed");
      }
    }
    state.SetIterationTime(seconds_since(t0));
    if (!sems.back()->wait_for(v, std::chrono::seconds(10))) state.SkipWithError("causal DAG did not complete");
  }
  std::uint64_t waits = 0, vk_waits = 0;
  for (auto* q : qs) {
    waits += q->stats().device_waits;
    vk_waits += q->driver_stats().vk_waits;
  }
  const double dags = static_cast<double>(v);
  state.counters["device_waits"] = static_cast<double>(waits) / dags;
  state.counters["vk_waits"] = static_cast<double>(vk_waits) / dags;
  state.counters["edges"] = static_cast<double>(edges(d));
  if (static_cast<double>(waits) / dags >= static_cast<double>(edges(d))) {
    state.SkipWithError("causal issued no fewer device waits than edges");
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string why;
  causal_vk_test::harness_options options;
  options.validation = false;  // the layer would dominate every figure
  auto h = causal_vk_test::harness::create(options, why);
  if (!h) {
    std::fprintf(stderr, "SKIP: %s\n", why.c_str());
    return 77;
  }
  env = h.get();
  {
    shared_objects shared;
    objects = &shared;
    shared.pool = std::make_unique<causal_vk_test::command_pool>(h->device, h->family);
    vk::CommandBuffer cb = shared.pool->begin();
    cb.end();
    vk::CommandBuffer barrier = shared.pool->begin();
    // The adapter's barrier (queue.hpp): leading and trailing.
    const vk::MemoryBarrier2 mb(vk::PipelineStageFlagBits2::eAllCommands, vk::AccessFlagBits2::eMemoryWrite,
                                vk::PipelineStageFlagBits2::eAllCommands | vk::PipelineStageFlagBits2::eHost,
                                vk::AccessFlagBits2::eMemoryRead | vk::AccessFlagBits2::eMemoryWrite |
                                    vk::AccessFlagBits2::eHostRead | vk::AccessFlagBits2::eHostWrite);
    barrier.pipelineBarrier2(vk::DependencyInfo({}, mb, {}, {}));
    barrier.end();
    shared.raw.device = static_cast<VkDevice>(h->device);
    shared.raw.queue = static_cast<VkQueue>(h->device.getQueue(h->family, 0));
    shared.raw.submit2 = reinterpret_cast<PFN_vkQueueSubmit2>(vkGetDeviceProcAddr(shared.raw.device, "vkQueueSubmit2"));
    shared.raw.wait = reinterpret_cast<PFN_vkWaitSemaphores>(vkGetDeviceProcAddr(shared.raw.device, "vkWaitSemaphores"));
    shared.raw.cb = static_cast<VkCommandBuffer>(cb);
    shared.raw.barrier = static_cast<VkCommandBuffer>(barrier);
    if (shared.raw.submit2 == nullptr || !h->synchronization2) {
      std::fprintf(stderr, "SKIP: vkQueueSubmit2 / synchronization2 unavailable\n");
      return 77;
    }

    benchmark::RegisterBenchmark("submit/raw_minimal", submit_raw_minimal)->UseManualTime();
    benchmark::RegisterBenchmark("submit/raw_equivalent", submit_raw_equivalent)->UseManualTime();
    benchmark::RegisterBenchmark("submit/causal", submit_causal)->UseManualTime();
    benchmark::RegisterBenchmark("submit_wait/raw", submit_wait_raw)->UseManualTime();
    benchmark::RegisterBenchmark("submit_wait/causal_elided", submit_wait_causal_elided)->UseManualTime();
    benchmark::RegisterBenchmark("submit_wait/raw_cross", submit_wait_raw_cross)->UseManualTime();
    benchmark::RegisterBenchmark("submit_wait/causal_device", submit_wait_causal_device)->UseManualTime();
    benchmark::RegisterBenchmark("dag/chain/raw_naive", dag_raw_naive<shape::chain>)->UseManualTime();
    benchmark::RegisterBenchmark("dag/chain/causal", dag_causal<shape::chain>)->UseManualTime();
    benchmark::RegisterBenchmark("dag/fork_join/raw_naive", dag_raw_naive<shape::fork_join>)->UseManualTime();
    benchmark::RegisterBenchmark("dag/fork_join/causal", dag_causal<shape::fork_join>)->UseManualTime();
    benchmark::RegisterBenchmark("dag/diamond/raw_naive", dag_raw_naive<shape::diamond>)->UseManualTime();
    benchmark::RegisterBenchmark("dag/diamond/causal", dag_causal<shape::diamond>)->UseManualTime();
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    h->device.waitIdle();
    shared.pool.reset();
    objects = nullptr;
  }
  return 0;
}
