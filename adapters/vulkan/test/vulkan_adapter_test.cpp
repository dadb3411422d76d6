// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// vulkan_adapter: what only the Vulkan adapter does — the leading barrier
// judged by synchronization validation (with a raw-Vulkan negative
// control proving the layer catches the same hazard without it), host
// completion by the waiter thread and in a batch's issue order, a held
// batch the driver refuses, device loss, buffers from the death-frontier
// pool, external semaphores, and bad input.

#include <causal/adapters/vulkan/buffer_pool.hpp>
#include <causal/adapters/vulkan/context.hpp>
#include <causal/adapters/vulkan/device.hpp>
#include <causal/adapters/vulkan/queue.hpp>
#include <causal/adapters/vulkan/semaphore.hpp>
#include <causal/completion.hpp>

#include "vk_fixture.hpp"

#include "catch.hpp"
#include "eventually.hpp"
#include "string_makers.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

using causal_vk_test::vk_submit2_polled;
using causal_vk_test::vk_submit2_waiter;
using clock_type = std::chrono::steady_clock;

/// A command buffer that fills `size` bytes of `buffer` at `offset` with
/// `value` and makes the write visible to the host.
vk::CommandBuffer fill(causal_vk_test::command_pool& pool, vk::Buffer buffer, vk::DeviceSize offset,
                       vk::DeviceSize size, std::uint32_t value, bool host_barrier = true) {
  vk::CommandBuffer cb = pool.begin();
  cb.fillBuffer(buffer, offset, size, value);
  if (host_barrier) {
    const vk::MemoryBarrier mb(vk::AccessFlagBits::eTransferWrite, vk::AccessFlagBits::eHostRead);
    cb.pipelineBarrier(vk::PipelineStageFlagBits::eTransfer, vk::PipelineStageFlagBits::eHost, {}, mb,
                       {}, {});
  }
  cb.end();
  return cb;
}

/// Submits `cb` straight to the vk::Queue, bypassing the adapter.
void raw_submit(causal::vulkan::hardware_queue& hw, vk::CommandBuffer cb) {
  std::lock_guard lock(hw.submit_mutex());
  hw.handle().submit(vk::SubmitInfo({}, {}, cb));
}

/// A loader that reports the physical device with changes a test chooses
/// (no synchronization2 feature, a small timeline value-difference limit),
/// to reach code paths lavapipe's real answers do not.
namespace altered_device {

inline bool hide_synchronization2 = false;
inline std::uint64_t timeline_limit = 0;  // 0: the real one
inline PFN_vkGetPhysicalDeviceFeatures2 real_features2 = nullptr;
inline PFN_vkGetPhysicalDeviceProperties2 real_properties2 = nullptr;
inline std::uint32_t extra_queue_families = 0;
inline PFN_vkGetPhysicalDeviceQueueFamilyProperties real_queue_families = nullptr;

/// Reports `extra_queue_families` more families, copies of the last one
/// (a device with separate families, as NVIDIA's compute and transfer).
VKAPI_ATTR void VKAPI_CALL queue_families(VkPhysicalDevice pd, std::uint32_t* count,
                                          VkQueueFamilyProperties* out) {
  std::uint32_t real = 0;
  real_queue_families(pd, &real, nullptr);
  if (out == nullptr) {
    *count = real + extra_queue_families;
    return;
  }
  std::vector<VkQueueFamilyProperties> all(real);
  real_queue_families(pd, &real, all.data());
  all.resize(real + extra_queue_families, real > 0 ? all[real - 1] : VkQueueFamilyProperties{});
  *count = std::min<std::uint32_t>(*count, static_cast<std::uint32_t>(all.size()));
  std::copy_n(all.begin(), *count, out);
}

VKAPI_ATTR void VKAPI_CALL features2(VkPhysicalDevice pd, VkPhysicalDeviceFeatures2* out) {
  real_features2(pd, out);
  if (!hide_synchronization2) return;
  for (auto* s = static_cast<VkBaseOutStructure*>(out->pNext); s != nullptr; s = s->pNext) {
    if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SYNCHRONIZATION_2_FEATURES) {
      reinterpret_cast<VkPhysicalDeviceSynchronization2Features*>(s)->synchronization2 = VK_FALSE;
    } else if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES) {
      reinterpret_cast<VkPhysicalDeviceVulkan13Features*>(s)->synchronization2 = VK_FALSE;
    }
  }
}

VKAPI_ATTR void VKAPI_CALL properties2(VkPhysicalDevice pd, VkPhysicalDeviceProperties2* out) {
  real_properties2(pd, out);
  if (timeline_limit == 0) return;
  for (auto* s = static_cast<VkBaseOutStructure*>(out->pNext); s != nullptr; s = s->pNext) {
    if (s->sType == VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_PROPERTIES) {
      reinterpret_cast<VkPhysicalDeviceTimelineSemaphoreProperties*>(s)
          ->maxTimelineSemaphoreValueDifference = timeline_limit;
    }
  }
}

VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL get_instance_proc_addr(VkInstance instance, const char* name) {
  const PFN_vkVoidFunction real = vkGetInstanceProcAddr(instance, name);
  if (std::strcmp(name, "vkGetPhysicalDeviceFeatures2") == 0 ||
      std::strcmp(name, "vkGetPhysicalDeviceFeatures2KHR") == 0) {
    real_features2 = reinterpret_cast<PFN_vkGetPhysicalDeviceFeatures2>(real);
    return reinterpret_cast<PFN_vkVoidFunction>(&features2);
  }
  if (std::strcmp(name, "vkGetPhysicalDeviceQueueFamilyProperties") == 0) {
    real_queue_families = reinterpret_cast<PFN_vkGetPhysicalDeviceQueueFamilyProperties>(real);
    return reinterpret_cast<PFN_vkVoidFunction>(&queue_families);
  }
  if (std::strcmp(name, "vkGetPhysicalDeviceProperties2") == 0 ||
      std::strcmp(name, "vkGetPhysicalDeviceProperties2KHR") == 0) {
    real_properties2 = reinterpret_cast<PFN_vkGetPhysicalDeviceProperties2>(real);
    return reinterpret_cast<PFN_vkVoidFunction>(&properties2);
  }
  return real;
}

/// Resets the alterations when a test ends.
struct scope {
  scope(bool hide_sync2, std::uint64_t limit) {
    hide_synchronization2 = hide_sync2;
    timeline_limit = limit;
  }
  scope(const scope&) = delete;
  scope& operator=(const scope&) = delete;
  ~scope() {
    hide_synchronization2 = false;
    timeline_limit = 0;
    extra_queue_families = 0;
  }
};

}  // namespace altered_device

}  // namespace

TEST_CASE("vulkan: without the synchronization2 feature the device submits with vkQueueSubmit, "
          "and refuses an explicit submit2 path at setup",
          "[vulkan][synchronization2]") {
  const altered_device::scope altered(/*hide_sync2=*/true, 0);
  const auto no_sync2 = [](causal::vulkan::device_options& o) {
    o.synchronization2 = true;  // the caller's claim, which the device contradicts
    o.get_instance_proc_addr = &altered_device::get_instance_proc_addr;
  };
  {
    causal_vk_test::vulkan_fixture<causal::vulkan::submit_path::automatic, false> f(nullptr, no_sync2);
    CHECK_FALSE(f.device().synchronization2_supported());
    CHECK_FALSE(f.device().uses_submit2());
    // Any vkQueueSubmit2 would be a call the device does not support.
    f.device().fn().queue_submit2 = [](VkQueue, std::uint32_t, const VkSubmitInfo2*, VkFence) {
      return VK_ERROR_FEATURE_NOT_PRESENT;
    };
    auto& q = f.make_queue();
    auto& s = f.make_semaphore();
    REQUIRE(q.submit({}, {{&s, 1}}, f.op(1)));
    REQUIRE(q.submit({{&s, 1}}, {}, f.op(2)));
    REQUIRE(f.finish());
    CHECK(f.log() == std::vector<int>{1, 2});
  }
  causal::vulkan::device_options explicit_submit2;
  no_sync2(explicit_submit2);
  explicit_submit2.path = causal::vulkan::submit_path::submit2;
  auto& h = causal_vk_test::global();
  causal::vulkan::device refused(h.instance, h.physical, h.device, explicit_submit2);
  CHECK(refused.setup_status().code() == causal::errc::failed_precondition);
  // The real device (lavapipe) has the feature.
  causal::vulkan::device real(h.instance, h.physical, h.device);
  REQUIRE(real.setup_status());
  CHECK(real.synchronization2_supported() == h.synchronization2);
}

TEST_CASE("vulkan: signals and waits further than maxTimelineSemaphoreValueDifference are refused",
          "[vulkan][timeline_limit][errors]") {
  constexpr std::uint64_t limit = 1000;
  const altered_device::scope altered(false, limit);
  vk_submit2_polled f(nullptr, [](causal::vulkan::device_options& o) {
    o.get_instance_proc_addr = &altered_device::get_instance_proc_addr;
  });
  REQUIRE(f.device().max_timeline_value_difference() == limit);
  auto& q = f.make_queue();
  auto& s = f.make_semaphore();
  auto& t = f.make_semaphore();
  // Host signal: a jump past the limit is refused, nothing changes.
  auto far = s.signal(limit + 1);
  REQUIRE_FALSE(far);
  CHECK(far.code() == causal::errc::invalid_argument);
  CHECK(s.value() == 0);
  CHECK(s.device_value().value() == 0);
  REQUIRE(s.signal(limit));
  // Queue signal and wait: refused before any effect.
  auto r = q.submit({}, {{&s, 2 * limit + 1}}, f.op(1));
  REQUIRE_FALSE(r);
  CHECK(r.error_value().code() == causal::errc::invalid_argument);
  auto w = q.submit({{&t, limit + 1}}, {}, f.op(2));
  REQUIRE_FALSE(w);
  CHECK(w.error_value().code() == causal::errc::invalid_argument);
  CHECK(q.epoch() == 0);
  CHECK(s.issued_count() == 0);
  // At the limit: fine.
  REQUIRE(q.submit({}, {{&s, 2 * limit}}, f.op(3)));
  REQUIRE(t.signal(limit));
  REQUIRE(q.submit({{&t, limit}}, {}, f.op(4)));
  REQUIRE(s.wait_for(2 * limit, std::chrono::seconds(20)));
  REQUIRE(f.finish());
  CHECK(f.log() == std::vector<int>{3, 4});
}

TEST_CASE("vulkan: a context makes the instance and device on the physical device the caller "
          "chooses, and refuses an unclear choice",
          "[vulkan][context]") {
  causal::vulkan::context_options o;
  o.application_name = "causal-context-test";
  {
    causal::vulkan::context none(o);  // neither an index nor a predicate
    CHECK(none.setup_status().code() == causal::errc::invalid_argument);
    CHECK_FALSE(none.device());
  }
  o.device_index = 0;
  o.select = [](const causal::vulkan::physical_device_info&) { return true; };
  {
    causal::vulkan::context both(o);
    CHECK(both.setup_status().code() == causal::errc::invalid_argument);
  }
  o.select = nullptr;
  o.device_index = 1000;
  {
    causal::vulkan::context past(o);
    CHECK(past.setup_status().code() == causal::errc::invalid_argument);
    CHECK_FALSE(past.instance());  // nothing is kept on failure
  }
  o.device_index.reset();
  o.select = [](const causal::vulkan::physical_device_info&) { return false; };
  {
    causal::vulkan::context rejected(o);
    CHECK(rejected.setup_status().code() == causal::errc::failed_precondition);
  }
  // The harness's device, named by its index.
  const auto& used = causal_vk_test::global().context().info();
  o.select = nullptr;
  o.device_index = used.index;
  o.queue_count = 64;  // more than lavapipe has: clamped to the family's count
  causal::vulkan::context ctx(o);
  REQUIRE(ctx.setup_status());
  CHECK(ctx.info().index == used.index);
  CHECK(std::string(ctx.info().properties.deviceName) == std::string(used.properties.deviceName));
  CHECK(ctx.info().timeline_semaphore);
  CHECK(ctx.queue_count() >= 1);
  CHECK(ctx.queue_count() <= ctx.info().queue_families[ctx.queue_family()].queueCount);
  // The adapter runs on it: a queue, a semaphore, a submission.
  causal::vulkan::device_options dopts = ctx.options_for_device();
  CHECK(dopts.synchronization2 == ctx.synchronization2());
  causal::vulkan::device dev(ctx.instance(), ctx.physical_device(), ctx.device(), dopts);
  REQUIRE(dev.setup_status());
  CHECK(dev.uses_submit2() == ctx.synchronization2());
  auto hw = dev.get_hardware_queue(ctx.queue_family(), ctx.queue_count() - 1);
  REQUIRE(hw);
  {
    causal::vulkan::semaphore s(dev);
    causal::axis_allocator axes;
    causal::vulkan::queue q(dev, **hw, axes.allocate(0, causal::domain::queue).value());
    REQUIRE(q.submit({}, {{&s, 1}}, {}));
    REQUIRE(s.wait_for(1, std::chrono::seconds(20)));
    REQUIRE(q.wait_idle(clock_type::now() + std::chrono::seconds(20)));
  }
}

TEST_CASE("vulkan: synchronization validation catches a missing barrier between submissions (control)",
          "[vulkan][validation]") {
  vk_submit2_polled f;
  if (!f.env().validation) {
    WARN("validation layer off: the negative control cannot run");
    return;
  }
  REQUIRE(causal_vk_test::take_validation_errors() == 0);
  causal_vk_test::host_buffer buf(f.env(), 4096, vk::BufferUsageFlagBits::eTransferDst);
  // Two raw submissions write the same bytes with nothing ordering them:
  // exactly what the adapter's leading barrier exists to prevent.
  raw_submit(f.hardware(), fill(f.commands(), buf.buffer(), 0, 4096, 1, false));
  raw_submit(f.hardware(), fill(f.commands(), buf.buffer(), 0, 4096, 2, false));
  f.hardware().handle().waitIdle();
  const int seen = causal_vk_test::take_validation_errors();
  INFO("validation errors reported for the unordered pair: " << seen);
  CHECK(seen > 0);
}

TEST_CASE("vulkan: the leading barrier orders every submission after the queue's earlier ones",
          "[vulkan][barrier][validation]") {
  vk_submit2_polled f;
  REQUIRE(causal_vk_test::take_validation_errors() == 0);
  causal_vk_test::host_buffer buf(f.env(), 4096, vk::BufferUsageFlagBits::eTransferDst);
  causal_vk_test::host_buffer other(f.env(), 4096, vk::BufferUsageFlagBits::eTransferDst);
  auto& q1 = f.make_queue();
  auto& q2 = f.make_queue();
  auto& s = f.make_semaphore();
  auto& done = f.make_semaphore();
  // The same write-after-write as the control, through one causal queue.
  REQUIRE(q1.submit({}, {}, {fill(f.commands(), buf.buffer(), 0, 4096, 1, false)}));
  REQUIRE(q1.submit({}, {{&s, 1}}, {fill(f.commands(), buf.buffer(), 0, 4096, 2, false)}));
  // q2: a device wait, then an elided one (same queue's knowledge covers
  // it) in front of a two-buffer operation whose *second* buffer writes.
  REQUIRE(q2.submit({{&s, 1}}, {}, {fill(f.commands(), buf.buffer(), 0, 4096, 3, false)}));
  REQUIRE(q2.submit({{&s, 1}}, {{&done, 1}},
                    {fill(f.commands(), other.buffer(), 0, 4096, 9, false),
                     fill(f.commands(), buf.buffer(), 0, 4096, 4)}));
  CHECK(q2.stats().device_waits == 1);
  CHECK(q2.stats().elided_dominated == 1);
  // Only the core's device waits reach the driver.
  CHECK(q2.driver_stats().vk_waits == 1);
  CHECK(q2.driver_stats().batches == 2);
  REQUIRE(done.wait_for(1, std::chrono::seconds(20)));
  REQUIRE(f.finish());
  CHECK(buf.as<std::uint32_t>()[0] == 4);
  CHECK(buf.as<std::uint32_t>()[1023] == 4);
  CHECK(causal_vk_test::take_validation_errors() == 0);
}

TEST_CASE("vulkan: the waiter thread advances host semaphores and the tracker without polls",
          "[vulkan][completion]") {
  causal::completion_tracker tracker;
  causal_vk_test::vulkan_fixture<causal::vulkan::submit_path::automatic, true> f(&tracker);
  REQUIRE(f.device().waiter_running());
  auto& q = f.make_queue();
  auto& s = f.make_semaphore();
  auto& t = f.make_semaphore();
  std::atomic<int> fired{0};
  causal::frontier need;
  (void)need.insert_or_raise(q.axis(), 3);
  causal::completion_waiter w(need, [](causal::completion_waiter& self, causal::status st) {
    if (st) static_cast<std::atomic<int>*>(self.user_data())->fetch_add(1);
  }, &fired);
  tracker.add_waiter(w);
  REQUIRE(q.submit({}, {{&s, 1}}, f.op(1)));
  REQUIRE(q.submit({}, {{&t, 1}}, f.op(2)));
  REQUIRE(q.submit({}, {{&s, 2}}, f.op(3)));
  // causal::wait_all parks on the host halves' timepoints: only the
  // waiter thread's polls can fire them.
  const causal::wait_point<causal::vulkan::semaphore> points[] = {{&s, 2}, {&t, 1}};
  REQUIRE(causal::wait_all(std::span<const causal::wait_point<causal::vulkan::semaphore>>(points),
                           clock_type::now() + std::chrono::seconds(20)));
  const auto deadline = clock_type::now() + std::chrono::seconds(20);
  while (fired.load() == 0 && clock_type::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(fired.load() == 1);
  CHECK(tracker.retired_epoch(q.axis()) == 3);
  CHECK(q.completed_epoch() == 3);
  const auto at = s.frontier_at(2);
  REQUIRE(at);
  CHECK(at->frontier.epoch_of(q.axis()) == 3);
  REQUIRE(f.finish());
  CHECK(f.log() == std::vector<int>{1, 2, 3});
}

namespace batch_order {

/// What a host observer saw of a batch's two semaphores at the moment it
/// learnt that the batch's operation had completed.
struct seen {
  const causal::vulkan::semaphore* first = nullptr;
  const causal::vulkan::semaphore* last = nullptr;
  std::atomic<std::uint64_t> first_value{~std::uint64_t{0}};
  std::atomic<std::uint64_t> last_value{~std::uint64_t{0}};

  void record() noexcept {
    first_value.store(first->value());
    last_value.store(last->value());
  }
};

void on_timepoint(causal::semaphore_timepoint& tp, causal::status) noexcept {
  static_cast<seen*>(tp.user_data())->record();
}

void on_retired(causal::completion_waiter& w, causal::status) noexcept {
  static_cast<seen*>(w.user_data())->record();
}

/// Blocks until the device has completed `q`'s epoch `e` and every signal
/// in `values`, without telling the host (no poll).
void wait_on_device(causal_vk_test::vk_submit2_polled& f, causal::vulkan::queue& q, std::uint64_t e,
                    std::initializer_list<std::pair<causal::vulkan::semaphore*, std::uint64_t>> values) {
  std::vector<VkSemaphore> handles{q.timeline().vk_handle()};
  std::vector<std::uint64_t> wanted{e};
  for (const auto& [sem, v] : values) {
    handles.push_back(sem->vk_handle());
    wanted.push_back(v);
  }
  const VkSemaphoreWaitInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO, nullptr, 0,
                                 static_cast<std::uint32_t>(handles.size()), handles.data(),
                                 wanted.data()};
  REQUIRE(f.device().fn().wait_semaphores(f.device().vk_device(), &info, 20'000'000'000ull) ==
          VK_SUCCESS);
}

/// Waits for `s` >= `v` (20 s limit), polling the device and retrying held
/// batches between slices, as a polled program does.
causal::status pumped_wait(causal_vk_test::vk_submit2_polled& f, causal::vulkan::semaphore& s,
                           std::uint64_t v) {
  const auto deadline = clock_type::now() + std::chrono::seconds(20);
  for (;;) {
    f.pump();
    const causal::status st =
        s.wait_until(v, std::min(deadline, clock_type::now() + std::chrono::milliseconds(5)));
    if (st.code() != causal::errc::timeout || clock_type::now() >= deadline) return st;
  }
}

}  // namespace batch_order

TEST_CASE("vulkan: the host reaches a batch's signals in issue order and its epoch after them, "
          "whichever counter a poll reads first",
          "[vulkan][completion]") {
  // (axis, e) claims operation e completed with every signal of it reached
  // (docs/queues.md, "Signals of one operation"): it rides on the batch's
  // last signal and on the queue's epoch timeline. The device poll walks
  // its members in the order they were made -- the queue (its timeline),
  // then `last`, then `first` -- so, reading each counter on its own, it
  // would reach both carriers of (q, 1) before `first`.
  causal::completion_tracker tracker;
  vk_submit2_polled f(&tracker);
  auto& q = f.make_queue();
  auto& last = f.make_semaphore();
  auto& first = f.make_semaphore();
  batch_order::seen at_last{&first, &last};
  batch_order::seen at_epoch{&first, &last};
  batch_order::seen at_retire{&first, &last};
  causal::semaphore_timepoint last_tp(1, &batch_order::on_timepoint, &at_last);
  causal::semaphore_timepoint epoch_tp(1, &batch_order::on_timepoint, &at_epoch);
  causal::frontier need;
  (void)need.insert_or_raise(q.axis(), 1);
  causal::completion_waiter retired(need, &batch_order::on_retired, &at_retire);
  last.add_timepoint(last_tp);
  q.timeline().add_timepoint(epoch_tp);
  tracker.add_waiter(retired);

  REQUIRE(q.submit({}, {{&first, 1}, {&last, 1}}, f.op(1)));
  const auto carried = last.frontier_at(1);
  REQUIRE(carried);
  CHECK(carried->frontier.epoch_of(q.axis()) == 1);  // only the last signal carries it
  batch_order::wait_on_device(f, q, 1, {{&first, 1}, {&last, 1}});
  CHECK(first.value() == 0);  // nothing polled yet
  CHECK(last.value() == 0);

  // One poll reaches all of it, in order.
  REQUIRE(f.device().poll());
  CHECK(first.value() == 1);
  CHECK(last.value() == 1);
  CHECK(q.completed_epoch() == 1);
  CHECK(tracker.retired_epoch(q.axis()) == 1);
  for (const batch_order::seen* s : {&at_last, &at_epoch, &at_retire}) {
    CHECK(s->first_value.load() == 1);
    CHECK(s->last_value.load() == 1);
  }
  REQUIRE(f.finish());
  CHECK(f.log() == std::vector<int>{1});
}

TEST_CASE("vulkan: a value the host holds back for its batch's earlier signal is reached once that "
          "semaphore is destroyed",
          "[vulkan][completion]") {
  // The host reaches `second` only after `first` (issued before it in the
  // batch). The device completed the batch, so destroying `first` unpolled
  // keeps to its precondition; `second` must then stop waiting for it (and
  // never read it again).
  vk_submit2_polled f;
  auto& q = f.make_queue();
  auto& second = f.make_semaphore();
  auto first = std::make_unique<causal::vulkan::semaphore>(f.device(), 0);
  REQUIRE(first->setup_status());
  REQUIRE(q.submit({}, {{first.get(), 1}, {&second, 1}}, f.op(1)));
  batch_order::wait_on_device(f, q, 1, {{first.get(), 1}, {&second, 1}});
  CHECK(second.value() == 0);
  first.reset();
  REQUIRE(f.device().poll());
  CHECK(second.value() == 1);
  CHECK(q.completed_epoch() == 1);
  REQUIRE(f.finish());
}

TEST_CASE("vulkan: a host signal above a value held back for its batch's earlier signal reaches "
          "both first",
          "[vulkan][completion]") {
  // The device completed the batch; the host has polled nothing. `last`'s
  // value waits on the host for `first`'s, so the host signal polls the
  // device before it decides (Vulkan needs the issued value passed).
  vk_submit2_polled f;
  auto& q = f.make_queue();
  auto& last = f.make_semaphore();
  auto& first = f.make_semaphore();
  REQUIRE(q.submit({}, {{&first, 1}, {&last, 1}}, f.op(1)));
  batch_order::wait_on_device(f, q, 1, {{&first, 1}, {&last, 1}});
  REQUIRE(last.signal(2));
  CHECK(first.value() == 1);
  CHECK(last.value() == 2);
  const auto at1 = last.frontier_at(1);
  REQUIRE(at1);
  CHECK(at1->producer == causal::frontier_entry{q.axis(), 1});
  REQUIRE(f.finish());
}

namespace refusing_driver {

inline PFN_vkQueueSubmit2 real = nullptr;
/// A batch that signals this semaphore to this value is refused.
inline VkSemaphore refused = VK_NULL_HANDLE;
inline std::uint64_t refused_value = 0;

VKAPI_ATTR VkResult VKAPI_CALL submit2(VkQueue queue, std::uint32_t count, const VkSubmitInfo2* infos,
                                       VkFence fence) {
  for (std::uint32_t i = 0; i < count; ++i) {
    for (std::uint32_t k = 0; k < infos[i].signalSemaphoreInfoCount; ++k) {
      const VkSemaphoreSubmitInfo& signal = infos[i].pSignalSemaphoreInfos[k];
      if (signal.semaphore == refused && signal.value == refused_value) return VK_ERROR_OUT_OF_DEVICE_MEMORY;
    }
  }
  return real(queue, count, infos, fence);
}

}  // namespace refusing_driver

TEST_CASE("vulkan: a held batch the driver refuses fails its signals only once its waits are met",
          "[vulkan][failure]") {
  // q's batch waits for y = 1, which qa signals after s = 1 (y is qa's last
  // signal), and is refused when it is finally sent. Failing its s = 2 at
  // once would fail s before qa's healthy s = 1 reaches the host
  // (docs/queues.md, "Elision never changes an outcome").
  vk_submit2_polled f;
  REQUIRE(f.device().uses_submit2());
  auto& qa = f.make_queue();
  auto& q = f.make_queue();
  auto& gate = f.make_semaphore();
  auto& s = f.make_semaphore();
  auto& y = f.make_semaphore();
  REQUIRE(qa.submit({{&gate, 1}}, {{&s, 1}, {&y, 1}}, f.op(1)));
  REQUIRE(q.submit({{&y, 1}}, {{&s, 2}}, f.op(2)));
  CHECK(q.held_count() == 1);
  auto& fn = f.device().fn();
  refusing_driver::real = fn.queue_submit2;
  refusing_driver::refused = s.vk_handle();
  refusing_driver::refused_value = 2;
  fn.queue_submit2 = &refusing_driver::submit2;
  // qa's batch goes to the driver, then q's is tried and refused.
  REQUIRE(gate.signal(1));
  CHECK(q.held_count() == 1);  // dropped only once y = 1 is reached
  CHECK_FALSE(s.failed());
  REQUIRE(batch_order::pumped_wait(f, s, 1));
  CHECK(batch_order::pumped_wait(f, s, 2).code() == causal::errc::resource_exhausted);
  CHECK(s.value() == 1);
  CHECK(q.held_count() == 0);
  CHECK(q.wait_idle(clock_type::now() + std::chrono::seconds(20)).code() ==
        causal::errc::resource_exhausted);
  auto refused = q.submit({}, {}, f.op(3));
  REQUIRE_FALSE(refused);
  CHECK(refused.error_value().code() == causal::errc::resource_exhausted);
  fn.queue_submit2 = refusing_driver::real;
  (void)f.finish();
  CHECK(f.log() == std::vector<int>{1});
}

TEST_CASE("vulkan: device loss fails every semaphore, queue, held batch and waiter clearly",
          "[vulkan][failure]") {
  causal::completion_tracker tracker;
  causal_vk_test::vulkan_fixture<causal::vulkan::submit_path::automatic, false> f(&tracker);
  auto& q1 = f.make_queue();
  auto& q2 = f.make_queue();
  auto& s = f.make_semaphore();
  auto& t = f.make_semaphore();
  auto& u = f.make_semaphore();
  // q2 holds a batch waiting for s = 1, which nobody has sent.
  REQUIRE(q2.submit({{&s, 1}}, {{&t, 1}}, f.op(1)));
  CHECK(q2.held_count() == 1);
  // A host thread waits on u; a tracker waiter needs q1's first epoch.
  std::atomic<int> host_outcome{-1};
  std::thread waiter([&] { host_outcome = static_cast<int>(u.wait(1).code()); });
  std::atomic<int> tracker_outcome{-1};
  causal::frontier need;
  (void)need.insert_or_raise(q1.axis(), 1);
  causal::completion_waiter w(need, [](causal::completion_waiter& self, causal::status st) {
    static_cast<std::atomic<int>*>(self.user_data())->store(static_cast<int>(st.code()));
  }, &tracker_outcome);
  tracker.add_waiter(w);

  // The driver reports the device lost on the next submit.
  auto& fn = f.device().fn();
  fn.queue_submit2 = [](VkQueue, std::uint32_t, const VkSubmitInfo2*, VkFence) { return VK_ERROR_DEVICE_LOST; };
  fn.queue_submit = [](VkQueue, std::uint32_t, const VkSubmitInfo*, VkFence) { return VK_ERROR_DEVICE_LOST; };
  auto r = q1.submit({}, {{&s, 1}}, f.op(2));
  REQUIRE_FALSE(r);
  CHECK(r.error_value().code() == causal::errc::device_lost);

  REQUIRE(f.device().lost());
  for (auto* sem : {&s, &t, &u}) {
    REQUIRE(sem->failure());
    CHECK(sem->failure()->code() == causal::errc::device_lost);
  }
  waiter.join();
  CHECK(host_outcome.load() == static_cast<int>(causal::errc::device_lost));
  CHECK(tracker_outcome.load() == static_cast<int>(causal::errc::device_lost));
  CHECK(tracker.axis_status(q1.axis()).code() == causal::errc::device_lost);
  CHECK(q2.held_count() == 0);  // dropped, its signal failed
  // Everything later fails at once, with the same clear error.
  auto again = q2.submit({}, {}, f.op(3));
  REQUIRE_FALSE(again);
  CHECK(again.error_value().code() == causal::errc::device_lost);
  causal::vulkan::semaphore late(f.device());
  CHECK(late.setup_status().code() == causal::errc::device_lost);
  CHECK(f.device().poll().code() == causal::errc::device_lost);
  CHECK(f.log().empty());
}

TEST_CASE("vulkan: a queue destroyed while holding a batch fails its signals; what it sent "
          "completes and retires first",
          "[vulkan][failure]") {
  causal::completion_tracker tracker;
  causal_vk_test::vulkan_fixture<causal::vulkan::submit_path::automatic, false> f(&tracker);
  auto& first = f.make_semaphore();
  auto& gate = f.make_semaphore();
  auto& held_out = f.make_semaphore();
  causal::axis_allocator axes;  // the fixture makes no queue here: no clash
  const causal::axis a = axes.allocate(0, causal::domain::queue).value();
  std::atomic<int> sent_outcome{-1};
  std::atomic<int> held_outcome{-1};
  const auto record = [](causal::completion_waiter& self, causal::status st) {
    static_cast<std::atomic<int>*>(self.user_data())->store(static_cast<int>(st.code()));
  };
  causal::frontier need_sent;
  (void)need_sent.insert_or_raise(a, 1);
  causal::frontier need_held;
  (void)need_held.insert_or_raise(a, 2);
  causal::completion_waiter sent_waiter(need_sent, record, &sent_outcome);
  causal::completion_waiter held_waiter(need_held, record, &held_outcome);
  {
    causal::vulkan::queue q(f.device(), f.hardware(), a);
    REQUIRE(q.setup_status());
    tracker.add_waiter(sent_waiter);
    tracker.add_waiter(held_waiter);
    REQUIRE(q.submit({}, {{&first, 1}}, f.op(1)));
    // Held: nobody will send gate = 1.
    REQUIRE(q.submit({{&gate, 1}}, {{&held_out, 1}}, f.op(2)));
    CHECK(q.held_count() == 1);
  }
  REQUIRE(first.wait_until(1, clock_type::now() + std::chrono::seconds(20)));
  REQUIRE(held_out.failure());
  CHECK(held_out.failure()->code() == causal::errc::cancelled);
  CHECK(sent_outcome.load() == static_cast<int>(causal::errc::ok));
  CHECK(held_outcome.load() == static_cast<int>(causal::errc::cancelled));
  CHECK(f.log() == std::vector<int>{1});
}

TEST_CASE("vulkan: a queue whose sent batch waits for an external value that never arrives is "
          "destroyed by its deadline, failing its axis; the batch stays pending and runs later",
          "[vulkan][failure][teardown]") {
  causal::completion_tracker tracker;
  causal_vk_test::vulkan_fixture<causal::vulkan::submit_path::automatic, false> f(
      &tracker, [](causal::vulkan::device_options& o) {
        o.queue_teardown_timeout = std::chrono::milliseconds(200);
      });
  auto& gate = f.make_semaphore();
  gate.mark_external();  // its values come from outside
  REQUIRE(gate.mark_sent(1));  // the producer submitted it: the batch is sent, not held
  auto& out = f.make_semaphore();
  causal::axis_allocator axes;  // the fixture makes no queue here: no clash
  const causal::axis a = axes.allocate(0, causal::domain::queue).value();
  {
    causal::vulkan::queue q(f.device(), f.hardware(), a);
    REQUIRE(q.setup_status());
    REQUIRE(q.submit({{&gate, 1}}, {{&out, 1}}, f.op(1)));
    CHECK(q.held_count() == 0);
    CHECK(q.driver_stats().batches == 1);
  }  // without a deadline this waits for gate = 1 forever
  CHECK(tracker.axis_status(a).code() == causal::errc::timeout);
  CHECK(f.device().abandoned_count() == 1);
  CHECK_FALSE(out.failure());  // the batch may still run
  // The value arrives late: the abandoned batch runs and signals as usual.
  f.external_signal(gate, 1);
  REQUIRE(out.wait_for(1, std::chrono::seconds(20)));
  REQUIRE(f.finish());
  CHECK(f.log() == std::vector<int>{1});
}

TEST_CASE("vulkan: destroying a queue never waits for another queue's batch on the shared vk::Queue",
          "[vulkan][teardown]") {
  vk_submit2_polled f;
  auto& gate = f.make_semaphore();
  gate.mark_external();
  REQUIRE(gate.mark_sent(1));  // the batch below is sent and waits on the device
  auto& out = f.make_semaphore();
  causal::axis_allocator axes;  // the fixture makes no queue here: no clash
  causal::vulkan::queue waiting(f.device(), f.hardware(), axes.allocate(0, causal::domain::queue).value());
  std::optional<causal::vulkan::queue> idle;
  idle.emplace(f.device(), f.hardware(), axes.allocate(0, causal::domain::queue).value());
  REQUIRE(idle->submit({}, {}, f.op(1)));
  REQUIRE(idle->wait_idle(clock_type::now() + std::chrono::seconds(20)));
  REQUIRE(waiting.submit({{&gate, 1}}, {{&out, 1}}, f.op(2)));
  CHECK(waiting.held_count() == 0);
  // The idle queue goes while the other's batch waits for a value that
  // comes only after the destructor returned (an idle of the shared
  // vk::Queue would wait for it: the bound below only ends a failing run).
  std::promise<void> destroyed;
  std::future<void> destroyed_future = destroyed.get_future();
  std::thread destroyer([&] {
    idle.reset();
    destroyed.set_value();
  });
  const bool returned =
      destroyed_future.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  CHECK(returned);
  // Its timeline and command pool wait in the device behind a fence that
  // follows the other queue's batch.
  CHECK(f.device().retired_count() == 1);
  f.external_signal(gate, 1);
  destroyer.join();
  REQUIRE(out.wait_for(1, std::chrono::seconds(20)));
  REQUIRE(f.finish());
  CHECK(causal::test::eventually([&] {
    (void)f.device().poll();
    return f.device().retired_count() == 0;
  }));
  CHECK(f.log() == std::vector<int>{1, 2});
}

TEST_CASE("vulkan: causal queues on two vk::Queues of one family order through timeline waits",
          "[vulkan][multi_queue]") {
  vk_submit2_polled f;
  if (f.env().queue_count() < 2) {
    WARN("the device has one queue in its compute family: the multi-queue path cannot run here");
    return;
  }
  auto second = f.device().get_hardware_queue(f.env().family, 1);
  REQUIRE(second);
  REQUIRE(*second != &f.hardware());
  auto& s = f.make_semaphore();
  auto& done = f.make_semaphore();
  auto& q1 = f.make_queue();
  auto& q2 = f.make_queue(**second);
  // The consumer first: its wait's signal is not sent yet, so it is held.
  REQUIRE(q2.submit({{&s, 1}}, {{&done, 1}}, f.op(2)));
  CHECK(q2.held_count() == 1);
  REQUIRE(q1.submit({}, {{&s, 1}}, f.op(1)));
  f.pump();
  REQUIRE(done.wait_for(1, std::chrono::seconds(20)));
  REQUIRE(q2.wait_idle(clock_type::now() + std::chrono::seconds(20)));
  REQUIRE(f.finish());
  CHECK(f.log() == std::vector<int>{1, 2});
}

TEST_CASE("vulkan: a pipeline deeper than the inline tables is submitted whole before anything "
          "is sent",
          "[vulkan][submit_ahead]") {
  // Every batch waits behind the first, which waits for a gate nobody has
  // signalled: all of them are held on the host, and each signals `out` and
  // `mid` -- far more outstanding values than the semaphores' and the
  // backend's inline tables hold. Opening the gate sends them in order.
  vk_submit2_polled f;
  auto& q = f.make_queue();
  auto& gate = f.make_semaphore();
  auto& out = f.make_semaphore();
  auto& mid = f.make_semaphore();
  constexpr int n = 200;
  static_assert(n > causal::vulkan::backend::inline_held);
  static_assert(n > causal::vulkan::semaphore::inline_issued);
  for (int i = 1; i <= n; ++i) {
    const auto v = static_cast<std::uint64_t>(i);
    const auto r = i == 1 ? q.submit({{&gate, 1}}, {{&out, v}, {&mid, v}}, f.op(i))
                          : q.submit({}, {{&out, v}, {&mid, v}}, f.op(i));
    REQUIRE(r);
    CHECK(r->epoch == v);
  }
  CHECK(q.held_count() == static_cast<std::size_t>(n));
  CHECK(out.issued_count() == static_cast<std::size_t>(n));
  CHECK(out.value() == 0);
  REQUIRE(gate.signal(1));
  f.pump();
  REQUIRE(out.wait_for(n, std::chrono::seconds(20)));
  REQUIRE(mid.wait_for(n, std::chrono::seconds(20)));
  REQUIRE(f.finish());
  CHECK(q.held_count() == 0);
  std::vector<int> expected(n);
  for (int i = 0; i < n; ++i) expected[static_cast<std::size_t>(i)] = i + 1;
  CHECK(f.log() == expected);
}

TEST_CASE("vulkan: buffers from the pool are reused by knowledge, after a fence, and by completion",
          "[vulkan][pool]") {
  vk_submit2_polled f;  // no waiter thread: nothing retires behind our back
  auto& q1 = f.make_queue();
  auto& q2 = f.make_queue();
  constexpr vk::DeviceSize size = 1024;
  // One block's worth of memory: every allocation after the first reuses it.
  causal::vulkan::buffer_pool pool(f.device(), size,
                                   vk::BufferUsageFlagBits::eTransferDst | vk::BufferUsageFlagBits::eStorageBuffer);
  REQUIRE(pool.setup_status());
  REQUIRE(pool.add_queue(q1));
  REQUIRE(pool.add_queue(q2));

  auto b1 = pool.stream_alloca(q1, size);
  REQUIRE(b1);
  CHECK(b1->block.path == causal::pool_path::fresh);
  CHECK(b1->mapped != nullptr);  // fresh: nothing else ever used it
  REQUIRE(q1.submit({}, {}, {fill(f.commands(), b1->handle, b1->offset, b1->size, 0x11)}));
  REQUIRE(pool.stream_dealloca(q1, *b1));

  // Same queue: its own FIFO proves the death frontier.
  auto b2 = pool.stream_alloca(q1, size);
  REQUIRE(b2);
  CHECK(b2->block.path == causal::pool_path::knowledge);
  CHECK(b2->offset == b1->offset);
  REQUIRE(q1.submit({}, {}, {fill(f.commands(), b2->handle, b2->offset, b2->size, 0x22)}));
  REQUIRE(pool.stream_dealloca(q1, *b2));
  REQUIRE_FALSE(pool.stream_dealloca(q1, *b2));  // double free: rejected

  // Another queue, nothing polled: one device wait on q1's timeline goes
  // into q2's next batch.
  auto b3 = pool.stream_alloca(q2, size);
  REQUIRE(b3);
  CHECK(b3->block.path == causal::pool_path::fenced);
  CHECK(pool.stats().waits_issued == 1);
  REQUIRE(q2.submit({}, {}, {fill(f.commands(), b3->handle, b3->offset, b3->size, 0x33)}));
  CHECK(q2.driver_stats().vk_waits == 1);
  CHECK(q2.knowledge().epoch_of(q1.axis()) == 2);
  REQUIRE(f.finish());
  CHECK(b3->mapped == nullptr);  // reused behind a fence: no pointer up front
  auto p3 = pool.host_access(q2, *b3, clock_type::now() + std::chrono::seconds(20));
  REQUIRE(p3);
  CHECK(static_cast<const std::uint32_t*>(*p3)[0] == 0x33);
  CHECK(static_cast<const std::uint32_t*>(*p3)[size / 4 - 1] == 0x33);
  CHECK(pool.host_access(q1, *b3).error_value().code() == causal::errc::invalid_argument);
  REQUIRE(pool.stream_dealloca(q2, *b3));

  // Back on q1 once q2's work has retired (finish() polled): free reuse by
  // completion, without importing q2's frontier.
  auto b4 = pool.stream_alloca(q1, size);
  REQUIRE(b4);
  CHECK(b4->block.path == causal::pool_path::completion);
  CHECK(b4->mapped != nullptr);  // the device was seen to finish with it
  CHECK(q1.knowledge().epoch_of(q2.axis()) == 0);
  // Nothing fits now: a clear error, nothing changes.
  auto none = pool.stream_alloca(q2, size);
  REQUIRE_FALSE(none);
  CHECK(none.error_value().code() == causal::errc::resource_exhausted);
  auto huge = pool.stream_alloca(q2, 2 * size);
  REQUIRE_FALSE(huge);
  CHECK(huge.error_value().code() == causal::errc::capacity_exceeded);
  REQUIRE(pool.stream_dealloca(q1, *b4));
  REQUIRE(f.finish());
  REQUIRE(pool.remove_queue(q1));
  REQUIRE(pool.remove_queue(q2));
}

TEST_CASE("vulkan: a pool range reused while earlier device work may still use it has no host "
          "pointer until that work is done",
          "[vulkan][pool]") {
  vk_submit2_polled f;
  auto& q = f.make_queue();
  auto& gate = f.make_semaphore();
  gate.mark_external();
  REQUIRE(gate.mark_sent(1));  // the batch below is sent and waits on the device
  constexpr vk::DeviceSize size = 1024;
  causal::vulkan::buffer_pool pool(f.device(), size, vk::BufferUsageFlagBits::eTransferDst);
  REQUIRE(pool.setup_status());
  auto first = pool.stream_alloca(q, size);
  REQUIRE(first);
  REQUIRE(first->mapped != nullptr);
  REQUIRE(q.submit({{&gate, 1}}, {}, {fill(f.commands(), first->handle, first->offset, first->size, 0x5a)}));
  REQUIRE(pool.stream_dealloca(q, *first));
  // Reused by the queue's knowledge: its next submission is ordered after
  // the fill, but the fill has not run (it waits for the gate). A host
  // pointer now would let the host write under the device's write.
  auto again = pool.stream_alloca(q, size);
  REQUIRE(again);
  CHECK(again->block.path == causal::pool_path::knowledge);
  CHECK(again->mapped == nullptr);
  CHECK(again->host_ready_epoch == 1);
  auto early = pool.host_access(q, *again, clock_type::now() + std::chrono::milliseconds(50));
  REQUIRE_FALSE(early);
  CHECK(early.error_value().code() == causal::errc::timeout);
  f.external_signal(gate, 1);
  auto ready = pool.host_access(q, *again, clock_type::now() + std::chrono::seconds(20));
  REQUIRE(ready);
  CHECK(static_cast<const std::uint32_t*>(*ready)[0] == 0x5a);  // the fill is done
  REQUIRE(pool.stream_dealloca(q, *again));
  REQUIRE(f.finish());
}

TEST_CASE("vulkan: a range proven by knowledge a fence taught is not host-ready before the fenced "
          "batch runs",
          "[vulkan][pool]") {
  vk_submit2_polled f;
  auto& q1 = f.make_queue();
  auto& q2 = f.make_queue();
  auto& gate = f.make_semaphore();
  gate.mark_external();
  REQUIRE(gate.mark_sent(1));  // q1's batch is sent and waits on the device
  constexpr vk::DeviceSize size = 1024;
  causal::vulkan::buffer_pool pool(f.device(), size, vk::BufferUsageFlagBits::eTransferDst);
  REQUIRE(pool.setup_status());
  REQUIRE(pool.add_queue(q1));
  REQUIRE(pool.add_queue(q2));
  auto whole = pool.stream_alloca(q1, size);
  REQUIRE(whole);
  REQUIRE(q1.submit({{&gate, 1}}, {}, {fill(f.commands(), whole->handle, whole->offset, whole->size, 0x5a)}));
  REQUIRE(pool.stream_dealloca(q1, *whole));
  // q2 knows nothing of q1: the head of the range comes after a fence
  // (waits in q2's next batch), and q2 learns q1's death frontier for
  // that next batch only.
  auto head = pool.stream_alloca(q2, size / 2);
  REQUIRE(head);
  CHECK(head->block.path == causal::pool_path::fenced);
  CHECK(head->mapped == nullptr);
  CHECK(head->host_ready_epoch == 1);
  // The tail is proven by that knowledge, which holds from q2's epoch 1 on:
  // no host pointer while q1's fill still waits for the gate.
  auto tail = pool.stream_alloca(q2, size / 2);
  REQUIRE(tail);
  CHECK(tail->block.path == causal::pool_path::knowledge);
  CHECK(tail->mapped == nullptr);
  CHECK(tail->host_ready_epoch == 1);
  REQUIRE(q2.submit({}, {}, causal::vulkan::command_list{}));  // carries the fence waits
  f.external_signal(gate, 1);
  auto ready = pool.host_access(q2, *tail, clock_type::now() + std::chrono::seconds(20));
  REQUIRE(ready);
  CHECK(static_cast<const std::uint32_t*>(*ready)[0] == 0x5a);  // the fill is done
  REQUIRE(pool.stream_dealloca(q2, *head));
  REQUIRE(pool.stream_dealloca(q2, *tail));
  REQUIRE(f.finish());
}

namespace sharing {

/// What the pool asked vkCreateBuffer for; the real call gets EXCLUSIVE
/// (lavapipe has one family, the extra one is simulated).
inline PFN_vkCreateBuffer real_create_buffer = nullptr;
inline VkSharingMode asked_mode = VK_SHARING_MODE_MAX_ENUM;
inline std::vector<std::uint32_t> asked_families;

VKAPI_ATTR VkResult VKAPI_CALL create_buffer(VkDevice d, const VkBufferCreateInfo* info,
                                             const VkAllocationCallbacks* a, VkBuffer* out) {
  asked_mode = info->sharingMode;
  asked_families.assign(info->pQueueFamilyIndices,
                        info->pQueueFamilyIndices + (info->pQueueFamilyIndices ? info->queueFamilyIndexCount : 0));
  VkBufferCreateInfo real = *info;
  real.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  real.queueFamilyIndexCount = 0;
  real.pQueueFamilyIndices = nullptr;
  return real_create_buffer(d, &real, a, out);
}

}  // namespace sharing

namespace noncoherent {

/// The real entry points, and what the pool asked of the wrapped ones
/// (the memory is reported without HOST_COHERENT; lavapipe's is coherent,
/// so the real flush/invalidate calls are valid and change nothing).
inline PFN_vkGetPhysicalDeviceMemoryProperties real_properties = nullptr;
inline PFN_vkFlushMappedMemoryRanges real_flush = nullptr;
inline PFN_vkInvalidateMappedMemoryRanges real_invalidate = nullptr;
inline std::vector<VkMappedMemoryRange> flushed;
inline std::vector<VkMappedMemoryRange> invalidated;

VKAPI_ATTR void VKAPI_CALL properties(VkPhysicalDevice p, VkPhysicalDeviceMemoryProperties* out) {
  real_properties(p, out);
  for (std::uint32_t i = 0; i < out->memoryTypeCount; ++i) {
    out->memoryTypes[i].propertyFlags &= ~static_cast<VkMemoryPropertyFlags>(VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
  }
}
VKAPI_ATTR VkResult VKAPI_CALL flush(VkDevice d, std::uint32_t n, const VkMappedMemoryRange* r) {
  flushed.insert(flushed.end(), r, r + n);
  return real_flush(d, n, r);
}
VKAPI_ATTR VkResult VKAPI_CALL invalidate(VkDevice d, std::uint32_t n, const VkMappedMemoryRange* r) {
  invalidated.insert(invalidated.end(), r, r + n);
  return real_invalidate(d, n, r);
}

}  // namespace noncoherent

TEST_CASE("vulkan: on memory that is not host-coherent the pool flushes host writes and "
          "invalidates before host reads",
          "[vulkan][pool]") {
  vk_submit2_polled f;
  auto& q = f.make_queue();
  auto& fn = f.device().fn();
  noncoherent::real_properties = fn.get_physical_device_memory_properties;
  noncoherent::real_flush = fn.flush_mapped_memory_ranges;
  noncoherent::real_invalidate = fn.invalidate_mapped_memory_ranges;
  noncoherent::flushed.clear();
  noncoherent::invalidated.clear();
  fn.get_physical_device_memory_properties = &noncoherent::properties;
  fn.flush_mapped_memory_ranges = &noncoherent::flush;
  fn.invalidate_mapped_memory_ranges = &noncoherent::invalidate;
  {
    constexpr vk::DeviceSize size = 1000;  // not a multiple of any atom: the last range runs to the end
    causal::vulkan::buffer_pool pool(f.device(), size, vk::BufferUsageFlagBits::eTransferDst,
                                     vk::MemoryPropertyFlagBits::eHostVisible);
    REQUIRE(pool.setup_status());
    CHECK_FALSE(pool.host_coherent());
    auto b = pool.stream_alloca(q, 256);
    REQUIRE(b);
    REQUIRE(b->mapped != nullptr);
    std::memset(b->mapped, 0x11, 256);
    REQUIRE(pool.flush_host_writes(*b));
    REQUIRE(noncoherent::flushed.size() == 1);
    CHECK(noncoherent::flushed[0].offset == b->offset);
    CHECK(noncoherent::flushed[0].size == b->size);
    REQUIRE(q.submit({}, {}, {fill(f.commands(), b->handle, b->offset, b->size, 0x5a)}));
    // host_access waits only for uses before the allocation: this one is ours to wait for.
    REQUIRE(q.wait_idle(clock_type::now() + std::chrono::seconds(20)));
    auto back = pool.host_access(q, *b, clock_type::now() + std::chrono::seconds(20));
    REQUIRE(back);
    REQUIRE(noncoherent::invalidated.size() == 1);
    CHECK(noncoherent::invalidated[0].offset == b->offset);
    CHECK(static_cast<const std::uint32_t*>(*back)[0] == 0x5a);
    REQUIRE(f.finish());
    REQUIRE(pool.stream_dealloca(q, *b));
    // The rest of the arena in small ranges, the last of which ends with
    // the allocation: every flushed range must be one Vulkan accepts (a
    // multiple of nonCoherentAtomSize, or running to the end; the
    // validation layer checks), starting at its range.
    std::vector<causal::vulkan::buffer> rest;
    while (rest.size() < 64) {
      auto r = pool.stream_alloca(q, 1);
      if (!r) break;
      const std::size_t before = noncoherent::flushed.size();
      REQUIRE(pool.flush_host_writes(*r));
      REQUIRE(noncoherent::flushed.size() == before + 1);
      CHECK(noncoherent::flushed.back().offset == r->offset);
      rest.push_back(*r);
    }
    CHECK(rest.size() > 1);
    for (const auto& r : rest) REQUIRE(pool.stream_dealloca(q, r));
  }
  fn.get_physical_device_memory_properties = noncoherent::real_properties;
  fn.flush_mapped_memory_ranges = noncoherent::real_flush;
  fn.invalidate_mapped_memory_ranges = noncoherent::real_invalidate;
  // Coherent memory needs neither.
  noncoherent::flushed.clear();
  noncoherent::invalidated.clear();
  causal::vulkan::buffer_pool coherent(f.device(), 1024, vk::BufferUsageFlagBits::eTransferDst);
  REQUIRE(coherent.setup_status());
  CHECK(coherent.host_coherent());
  auto c = coherent.stream_alloca(q, 64);
  REQUIRE(c);
  REQUIRE(coherent.flush_host_writes(*c));
  CHECK(noncoherent::flushed.empty());
  REQUIRE(coherent.stream_dealloca(q, *c));
}

namespace trailing {

inline PFN_vkQueueSubmit2 real_submit2 = nullptr;
inline std::vector<std::vector<VkCommandBuffer>> batches;

VKAPI_ATTR VkResult VKAPI_CALL submit2(VkQueue queue, std::uint32_t n, const VkSubmitInfo2* infos, VkFence fence) {
  for (std::uint32_t i = 0; i < n; ++i) {
    std::vector<VkCommandBuffer> buffers;
    for (std::uint32_t k = 0; k < infos[i].commandBufferInfoCount; ++k) {
      buffers.push_back(infos[i].pCommandBufferInfos[k].commandBuffer);
    }
    batches.push_back(buffers);
  }
  return real_submit2(queue, n, infos, fence);
}

}  // namespace trailing

TEST_CASE("vulkan: every batch ends with the barrier that makes its writes visible to the host",
          "[vulkan][pool]") {
  vk_submit2_polled f;
  if (!f.device().uses_submit2()) {
    WARN("the device submits with vkQueueSubmit here: the submit2 batches cannot be inspected");
    return;
  }
  auto& q = f.make_queue();
  auto& fn = f.device().fn();
  trailing::real_submit2 = fn.queue_submit2;
  trailing::batches.clear();
  fn.queue_submit2 = &trailing::submit2;
  const vk::CommandBuffer op = f.op(1).data()[0];
  REQUIRE(q.submit({}, {}, causal::vulkan::command_list{op}));
  REQUIRE(q.submit({}, {}, causal::vulkan::command_list{}));
  REQUIRE(f.finish());
  fn.queue_submit2 = trailing::real_submit2;
  REQUIRE(trailing::batches.size() == 2);
  const std::vector<VkCommandBuffer>& first = trailing::batches[0];
  REQUIRE(first.size() == 3);
  CHECK(first[1] == static_cast<VkCommandBuffer>(op));
  CHECK(first.front() == first.back());  // the queue's barrier, leading and trailing
  CHECK(trailing::batches[1].size() == 2);
  CHECK(trailing::batches[1].front() == first.front());
}

TEST_CASE("vulkan: the pool's arena is shared CONCURRENT by the queue families it serves",
          "[vulkan][pool][sharing]") {
  const altered_device::scope altered(false, 0);
  altered_device::extra_queue_families = 1;
  vk_submit2_polled f(nullptr, [](causal::vulkan::device_options& o) {
    o.get_instance_proc_addr = &altered_device::get_instance_proc_addr;
  });
  REQUIRE(f.device().queue_family_count() == 2);
  sharing::real_create_buffer = f.device().fn().create_buffer;
  f.device().fn().create_buffer = &sharing::create_buffer;
  auto& q = f.make_queue();  // family 0
  const auto usage = vk::BufferUsageFlagBits::eTransferDst;
  const auto host = vk::MemoryPropertyFlagBits::eHostVisible | vk::MemoryPropertyFlagBits::eHostCoherent;
  {
    // Default: every family of the device, so data may pass from a queue
    // of one family to a queue of the other without ownership transfers.
    causal::vulkan::buffer_pool pool(f.device(), 1024, usage);
    REQUIRE(pool.setup_status());
    CHECK(sharing::asked_mode == VK_SHARING_MODE_CONCURRENT);
    CHECK(sharing::asked_families == std::vector<std::uint32_t>{0, 1});
    CHECK(pool.sharing_mode() == VK_SHARING_MODE_CONCURRENT);
    auto b = pool.stream_alloca(q, 64);
    REQUIRE(b);
    REQUIRE(pool.stream_dealloca(q, *b));
  }
  {
    const std::uint32_t only[] = {0, 0};  // duplicates are one family
    causal::vulkan::buffer_pool pool(f.device(), 1024, usage, host, only);
    REQUIRE(pool.setup_status());
    CHECK(sharing::asked_mode == VK_SHARING_MODE_EXCLUSIVE);
    CHECK(pool.serves_family(0));
    CHECK_FALSE(pool.serves_family(1));
  }
  {
    const std::uint32_t other[] = {1};
    causal::vulkan::buffer_pool pool(f.device(), 1024, usage, host, other);
    REQUIRE(pool.setup_status());
    auto refused = pool.stream_alloca(q, 64);  // q is of family 0
    REQUIRE_FALSE(refused);
    CHECK(refused.error_value().code() == causal::errc::invalid_argument);
    CHECK(pool.live_count() == 0);
  }
  {
    const std::uint32_t missing[] = {0, 7};
    causal::vulkan::buffer_pool pool(f.device(), 1024, usage, host, missing);
    CHECK(pool.setup_status().code() == causal::errc::invalid_argument);
  }
  f.device().fn().create_buffer = sharing::real_create_buffer;
}

TEST_CASE("vulkan: a wait on an external value is held until the value is reached or its signal "
          "is marked sent, so it never blocks the shared vk::Queue",
          "[vulkan][external]") {
  vk_submit2_polled f;
  auto& first = f.make_queue();
  auto& second = f.make_queue();  // the same vk::Queue
  auto& imported = f.make_semaphore();
  imported.mark_external();
  auto& done = f.make_semaphore();
  REQUIRE(first.submit({{&imported, 1}}, {}, f.op(1)));
  CHECK(first.held_count() == 1);  // nobody said the producer's signal is in
  // Unrelated work on the same vk::Queue runs meanwhile; sent ahead, the
  // wait would block it until the external value arrived.
  REQUIRE(second.submit({}, {{&done, 1}}, f.op(2)));
  REQUIRE(done.wait_for(1, std::chrono::seconds(20)));
  CHECK(first.held_count() == 1);
  // The producer says its signal of 2 is submitted: the wait for 1 goes.
  CHECK(done.mark_sent(1).code() == causal::errc::failed_precondition);  // not external
  REQUIRE(imported.mark_sent(2));
  CHECK(first.held_count() == 0);
  f.external_signal(imported, 2);
  REQUIRE(f.finish());
  // A value already reached needs no word from the producer.
  REQUIRE(first.submit({{&imported, 2}}, {}, f.op(3)));
  CHECK(first.held_count() == 0);
  REQUIRE(f.finish());
  CHECK(f.log() == std::vector<int>{2, 1, 3});
}

TEST_CASE("vulkan: external semaphores are tainted; fd export and import need the extension",
          "[vulkan][external]") {
  vk_submit2_polled f;
  auto& q = f.make_queue();
  auto& s = f.make_semaphore();
  s.mark_external();
  CHECK(s.external());
  f.external_signal(s, 7);
  CHECK(s.value() == 7);
  CHECK(s.is_tainted(7));
  REQUIRE(q.submit({{&s, 7}}, {}, f.op(1)));
  CHECK(q.stats().device_waits == 1);  // never elided
  REQUIRE(f.finish());

  if (!f.device().has_external_semaphore_fd()) {
    causal::vulkan::semaphore_options opts;
    opts.exportable = true;
    causal::vulkan::semaphore exportable(f.device(), opts);
    CHECK(exportable.setup_status().code() == causal::errc::failed_precondition);
    auto fd = s.export_fd();
    REQUIRE_FALSE(fd);
    CHECK(fd.error_value().code() == causal::errc::failed_precondition);
    CHECK(s.import_fd(0).code() == causal::errc::failed_precondition);
    return;
  }
  causal::vulkan::semaphore_options opts;
  opts.exportable = true;
  causal::vulkan::semaphore a(f.device(), opts);
  REQUIRE(a.setup_status());
  auto fd = a.export_fd();
  REQUIRE(fd);
  CHECK(a.external());
  causal::vulkan::semaphore b(f.device());
  CHECK(b.import_fd(-1).code() == causal::errc::invalid_argument);
  REQUIRE(b.import_fd(*fd));
  CHECK(b.external());
  REQUIRE(a.signal(4));
  REQUIRE(b.wait_for(4, std::chrono::seconds(10)));
  CHECK(b.is_tainted(4));
}

TEST_CASE("vulkan: bad input is rejected with a clear error and changes nothing", "[vulkan][errors]") {
  vk_submit2_polled f;
  auto& q = f.make_queue();
  auto& gate = f.make_semaphore();
  auto& s = f.make_semaphore();
  CHECK(f.hardware().users() == 1);

  causal::vulkan::command_list too_many;
  for (std::size_t i = 0; i <= causal::vulkan::command_list::capacity; ++i) {
    (void)too_many.push(f.commands().begin());
  }
  CHECK(too_many.overflowed());
  auto r = q.submit({}, {}, too_many);
  REQUIRE_FALSE(r);
  CHECK(r.error_value().code() == causal::errc::invalid_argument);
  CHECK(q.epoch() == 0);

  // A semaphore of another device wrapper cannot be waited on here.
  vk_submit2_polled other;
  auto& foreign = other.make_semaphore();
  auto w = q.submit({{&foreign, 1}}, {}, f.op(1));
  REQUIRE_FALSE(w);
  CHECK(w.error_value().code() == causal::errc::invalid_argument);
  CHECK(q.epoch() == 0);

  // A held batch will signal s = 5: the host may signal below, not at or above.
  REQUIRE(q.submit({{&gate, 1}}, {{&s, 5}}, f.op(2)));
  CHECK(s.signal(5).code() == causal::errc::invalid_argument);
  CHECK(s.signal(6).code() == causal::errc::invalid_argument);
  REQUIRE(s.signal(3));
  CHECK(s.signal(3).code() == causal::errc::not_increasing);
  REQUIRE(gate.signal(1));
  REQUIRE(s.wait_for(5, std::chrono::seconds(20)));
  REQUIRE(f.finish());
  CHECK(f.log() == std::vector<int>{2});
  auto& q2 = f.make_queue();
  CHECK(f.hardware().users() == 2);

  // A queue's epoch timeline moves only with its queue: a host signal, or
  // another queue's signal of it, would mark epochs complete that never ran.
  causal::vulkan::semaphore& epochs = q.timeline();
  CHECK(epochs.writes_reserved());
  CHECK_FALSE(s.writes_reserved());
  const std::uint64_t before = epochs.value();
  CHECK(epochs.signal(before + 5).code() == causal::errc::failed_precondition);
  auto stolen = q2.submit({}, {{&epochs, before + 5}}, f.op(3));
  REQUIRE_FALSE(stolen);
  CHECK(stolen.error_value().code() == causal::errc::failed_precondition);
  CHECK(q2.epoch() == 0);
  CHECK(epochs.value() == before);
  CHECK_FALSE(epochs.failed());
}
