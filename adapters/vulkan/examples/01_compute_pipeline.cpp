// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// 01_compute_pipeline: a four-stage compute pipeline across two causal
// queues on Vulkan, with timeline waits between them, buffers from the
// death-frontier pool, and the results read back and checked.
//
//   queue a:  y2 = 2x  ----------------->  z = y2 + y3  --(s_a=2)--.
//                                          ^ waits s_b=1            |
//   queue b:  y3 = 3x  --(s_b=1)----------'                         v
//                                                    w = z - x (waits s_a=2)
//
// y3 is freed on queue a right after stage 3 (stream-ordered dealloca) and
// w is allocated on queue b: the pool decides whether b may reuse y3's
// memory for free, after a device wait, or not at all. At the end the host
// waits for s_b=2 and checks z = 5x and w = 4x. The GLSL shaders
// (adapters/vulkan/shaders/) are compiled by glslc at build time.
//
// The instance and device come from causal::vulkan::context
// (<causal/adapters/vulkan/context.hpp>), on the first physical device with
// timeline semaphores and a compute queue (or the one CAUSAL_VULKAN_DEVICE
// names by index). Runs under the Khronos validation layer with
// synchronization validation and exits non-zero on any validation error;
// exits 77 (skipped) without a Vulkan driver or the layer.

#include <causal/adapters/vulkan/buffer_pool.hpp>
#include <causal/adapters/vulkan/context.hpp>
#include <causal/adapters/vulkan/device.hpp>
#include <causal/adapters/vulkan/queue.hpp>
#include <causal/adapters/vulkan/semaphore.hpp>
#include <causal/axis.hpp>

#include "vk_compute.hpp"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

namespace {

constexpr std::uint32_t scale_spirv[] = {
#include "scale.spv.inc"
};
constexpr std::uint32_t add_spirv[] = {
#include "add.spv.inc"
};

struct push_constants {
  std::uint32_t count;
  float factor;
};

constexpr std::uint32_t n = 4096;
constexpr vk::DeviceSize bytes = n * sizeof(float);

int fail(const char* what, const causal::error& e) {
  std::fprintf(stderr, "%s: %s (%s)\n", what, std::string(e.message()).c_str(),
               std::string(causal::to_string(e.code())).c_str());
  return 1;
}

vk::DescriptorBufferInfo range(const causal::vulkan::buffer& b) {
  return vk::DescriptorBufferInfo(b.handle, b.offset, b.size);
}

std::atomic<int> validation_errors{0};

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                          VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  if ((severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) != 0) {
    validation_errors.fetch_add(1);
    std::fprintf(stderr, "VALIDATION ERROR: %s\n", data->pMessage);
  }
  return VK_FALSE;
}

}  // namespace

int main() {
  if (std::getenv("XDG_RUNTIME_DIR") == nullptr) ::setenv("XDG_RUNTIME_DIR", "/tmp", 0);  // lavapipe
  const VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  const VkValidationFeaturesEXT validation_features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT, nullptr, 1,
                                                    enables, 0, nullptr};
  causal::vulkan::context_options context_options;
  context_options.application_name = "causal-vulkan-01-compute-pipeline";
  context_options.validation = true;
  context_options.debug_callback = &on_message;
  context_options.instance_next = &validation_features;
  if (const char* index = std::getenv("CAUSAL_VULKAN_DEVICE"); index != nullptr) {
    context_options.device_index = static_cast<std::uint32_t>(std::strtoul(index, nullptr, 10));
  } else {
    context_options.select = [](const causal::vulkan::physical_device_info&) { return true; };
  }
  auto env = std::make_unique<causal::vulkan::context>(context_options);
  if (!env->setup_status()) {
    std::fprintf(stderr, "SKIP: %s\n", std::string(env->setup_status().error_value().message()).c_str());
    return 77;
  }
  std::printf("running on %s\n", env->info().properties.deviceName);
  int rc = 0;
  {
    causal::completion_tracker tracker;
    causal::vulkan::device_options options = env->options_for_device();
    options.tracker = &tracker;
    causal::vulkan::device dev(env->instance(), env->physical_device(), env->device(), options);
    if (!dev.setup_status()) return fail("device", dev.setup_status().error_value());
    auto hw = dev.get_hardware_queue(env->queue_family(), 0);
    if (!hw) return fail("hardware queue", hw.error_value());

    // Semaphores first, so they outlive the queues that signal them.
    causal::vulkan::semaphore s_a(dev), s_b(dev);
    causal::axis_allocator axes;
    causal::vulkan::queue qa(dev, **hw, axes.allocate(0, causal::domain::queue).value());
    causal::vulkan::queue qb(dev, **hw, axes.allocate(0, causal::domain::queue).value());
    // Host completion: a thread waits on the device and advances the host
    // halves of the semaphores and the tracker.
    if (auto s = dev.start_waiter(); !s) return fail("waiter", s.error_value());

    // Room for four buffers: w must reuse y3's memory.
    causal::vulkan::buffer_pool pool(dev, 4 * bytes, vk::BufferUsageFlagBits::eStorageBuffer);
    if (!pool.setup_status()) return fail("pool", pool.setup_status().error_value());
    (void)pool.add_queue(qa);
    (void)pool.add_queue(qb);

    causal_vk_test::compute_kernel scale(env->device(), scale_spirv, 2, sizeof(push_constants));
    causal_vk_test::compute_kernel add(env->device(), add_spirv, 3, sizeof(push_constants));
    causal_vk_test::command_pool commands(env->device(), env->queue_family());
    const std::uint32_t groups = (n + 63) / 64;

    auto x = pool.stream_alloca(qa, bytes), y2 = pool.stream_alloca(qa, bytes), z = pool.stream_alloca(qa, bytes);
    auto y3 = pool.stream_alloca(qb, bytes);
    if (!x || !y2 || !z || !y3) return fail("alloca", (!x ? x : !y2 ? y2 : !z ? z : y3).error_value());
    // Fresh memory: the host may write it at once (x->mapped is set).
    auto* xs = static_cast<float*>(x->mapped);
    for (std::uint32_t i = 0; i < n; ++i) xs[i] = static_cast<float>(i % 97) - 40.0f;

    // Stage 1 (a): y2 = 2x.    Stage 2 (b): y3 = 3x.
    const vk::DescriptorBufferInfo s1[] = {range(*x), range(*y2)};
    const vk::DescriptorBufferInfo s2[] = {range(*x), range(*y3)};
    vk::CommandBuffer c1 = commands.begin();
    const push_constants p2{n, 2.0f};
    scale.dispatch(c1, scale.make_set(s1), &p2, groups);
    c1.end();
    vk::CommandBuffer c2 = commands.begin();
    const push_constants p3{n, 3.0f};
    scale.dispatch(c2, scale.make_set(s2), &p3, groups);
    c2.end();
    if (auto r = qa.submit({}, {}, {c1}); !r) return fail("stage 1", r.error_value());
    if (auto r = qb.submit({}, {{&s_b, 1}}, {c2}); !r) return fail("stage 2", r.error_value());

    // Stage 3 (a, after s_b = 1): z = y2 + y3. Then y3 is dead on queue a.
    const vk::DescriptorBufferInfo s3[] = {range(*y2), range(*y3), range(*z)};
    vk::CommandBuffer c3 = commands.begin();
    const push_constants p1{n, 1.0f};
    add.dispatch(c3, add.make_set(s3), &p1, groups);
    c3.end();
    if (auto r = qa.submit({{&s_b, 1}}, {{&s_a, 2}}, {c3}); !r) return fail("stage 3", r.error_value());
    if (auto s = pool.stream_dealloca(qa, *y3); !s) return fail("dealloca y3", s.error_value());

    // Stage 4 (b, after s_a = 2): w = z - x, in memory that may be y3's.
    auto w = pool.stream_alloca(qb, bytes);
    if (!w) return fail("alloca w", w.error_value());
    const vk::DescriptorBufferInfo s4[] = {range(*z), range(*x), range(*w)};
    vk::CommandBuffer c4 = commands.begin();
    const push_constants pm{n, -1.0f};
    add.dispatch(c4, add.make_set(s4), &pm, groups);
    causal_vk_test::shader_to_host_barrier(c4);
    c4.end();
    if (auto r = qb.submit({{&s_a, 2}}, {{&s_b, 2}}, {c4}); !r) return fail("stage 4", r.error_value());

    if (auto s = s_b.wait_for(2, std::chrono::seconds(30)); !s) return fail("host wait", s.error_value());
    // w may reuse y3's memory, so it came without a host pointer; host_access
    // hands one out once the device is done with the range's earlier uses
    // (here, at once: s_b = 2 proves stages 1 to 4 done).
    auto z_host = pool.host_access(qa, *z), w_host = pool.host_access(qb, *w);
    if (!z_host || !w_host) return fail("host access", (!z_host ? z_host : w_host).error_value());
    const auto* zs = static_cast<const float*>(*z_host);
    const auto* ws = static_cast<const float*>(*w_host);
    std::uint32_t bad = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
      bad += std::fabs(zs[i] - 5.0f * xs[i]) > 1e-3f || std::fabs(ws[i] - 4.0f * xs[i]) > 1e-3f;
    }
    const causal::queue_stats a = qa.stats(), b = qb.stats();
    std::printf("checked %u values: %u wrong\n", n, bad);
    std::printf("queue a: %llu submissions, %llu device waits, %llu elided\n",
                static_cast<unsigned long long>(a.submissions),
                static_cast<unsigned long long>(a.device_waits),
                static_cast<unsigned long long>(a.waits_elided()));
    std::printf("queue b: %llu submissions, %llu device waits, %llu elided\n",
                static_cast<unsigned long long>(b.submissions),
                static_cast<unsigned long long>(b.device_waits),
                static_cast<unsigned long long>(b.waits_elided()));
    std::printf("w came from the pool by path '%s' (y3 was at offset %llu, w is at %llu)\n",
                std::string(causal::to_string(w->block.path)).c_str(),
                static_cast<unsigned long long>(y3->offset), static_cast<unsigned long long>(w->offset));
    rc = bad == 0 ? 0 : 1;

    (void)qa.wait_idle();
    (void)qb.wait_idle();
    std::printf("tracker: queue a retired to epoch %llu, queue b to %llu\n",
                static_cast<unsigned long long>(tracker.retired_epoch(qa.axis())),
                static_cast<unsigned long long>(tracker.retired_epoch(qb.axis())));
    for (auto* b2 : {&*x, &*y2, &*z}) (void)pool.stream_dealloca(qa, *b2);
    (void)pool.stream_dealloca(qb, *w);
    (void)pool.remove_queue(qa);
    (void)pool.remove_queue(qb);
    dev.stop_waiter();
  }
  env.reset();
  const int errors = validation_errors.load();
  if (errors != 0) {
    std::fprintf(stderr, "FAILED: %d validation error(s)\n", errors);
    return 1;
  }
  return rc;
}
