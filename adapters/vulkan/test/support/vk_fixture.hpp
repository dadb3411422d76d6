// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// vk_fixture: the Vulkan adapter's fixture for the queue conformance suite
// (test/conformance/queue_conformance.hpp) and for queue_semantics_test.cpp.
//
// Each fixture wraps the binary's shared VkDevice (vk_test_main.cpp) in a
// fresh causal::vulkan::device, so device-loss injection in one test cannot
// leak into another. Every queue it makes shares the one vk::Queue (as on
// lavapipe). An operation `op(tag)` is a command buffer running the
// log_tag shader: it appends `tag` to a device-side log with an atomic, so
// log() reports the order operations really ran on the device.
//
// Template parameters: the submit path (vkQueueSubmit2 or the legacy
// vkQueueSubmit + VkTimelineSemaphoreSubmitInfo) and whether completion is
// driven by the device's waiter thread or by polls.
#pragma once

#include <causal/adapters/vulkan/device.hpp>
#include <causal/adapters/vulkan/queue.hpp>
#include <causal/adapters/vulkan/semaphore.hpp>
#include <causal/axis.hpp>

#include "vk_compute.hpp"
#include "vk_harness.hpp"

#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <stdexcept>
#include <vector>

namespace causal_vk_test {

/// The harness main() created for this binary.
inline harness*& global_slot() {
  static harness* h = nullptr;
  return h;
}
inline harness& global() { return *global_slot(); }

inline constexpr std::uint32_t log_tag_spirv[] = {
#include "log_tag.spv.inc"
};

/// A host-visible, coherent buffer (test bookkeeping).
class host_buffer {
 public:
  host_buffer(harness& h, vk::DeviceSize size, vk::BufferUsageFlags usage) : device_(h.device), size_(size) {
    buffer_ = device_.createBuffer(vk::BufferCreateInfo({}, size, usage));
    const auto req = device_.getBufferMemoryRequirements(buffer_);
    const auto props = h.physical.getMemoryProperties();
    const auto want = vk::MemoryPropertyFlagBits::eHostVisible | vk::MemoryPropertyFlagBits::eHostCoherent;
    std::uint32_t type = props.memoryTypeCount;
    for (std::uint32_t i = 0; i < props.memoryTypeCount; ++i) {
      if ((req.memoryTypeBits & (1u << i)) && (props.memoryTypes[i].propertyFlags & want) == want) {
        type = i;
        break;
      }
    }
    if (type == props.memoryTypeCount) throw std::runtime_error("no host-visible coherent memory");
    memory_ = device_.allocateMemory(vk::MemoryAllocateInfo(req.size, type));
    device_.bindBufferMemory(buffer_, memory_, 0);
    mapped_ = device_.mapMemory(memory_, 0, VK_WHOLE_SIZE);
    std::memset(mapped_, 0, static_cast<std::size_t>(size));
  }
  host_buffer(const host_buffer&) = delete;
  host_buffer& operator=(const host_buffer&) = delete;
  ~host_buffer() {
    device_.unmapMemory(memory_);
    device_.destroyBuffer(buffer_);
    device_.freeMemory(memory_);
  }
  [[nodiscard]] vk::Buffer buffer() const { return buffer_; }
  [[nodiscard]] vk::DeviceSize size() const { return size_; }
  template <class T>
  [[nodiscard]] T* as() const {
    return static_cast<T*>(mapped_);
  }

 private:
  vk::Device device_;
  vk::DeviceSize size_;
  vk::Buffer buffer_;
  vk::DeviceMemory memory_;
  void* mapped_ = nullptr;
};

template <causal::vulkan::submit_path Path, bool Waiter>
class vulkan_fixture {
 public:
  using queue_type = causal::vulkan::queue;
  using semaphore_type = causal::vulkan::semaphore;
  static constexpr bool waits_before_signal = causal::vulkan::backend::waits_before_signal;
  static constexpr std::uint32_t log_capacity = 1024;

  /// `adjust` may change the device options before the device is made.
  explicit vulkan_fixture(causal::completion_tracker* tracker = nullptr,
                          const std::function<void(causal::vulkan::device_options&)>& adjust = {})
      : h_(&global()),
        log_(*h_, 4 * (log_capacity + 1), vk::BufferUsageFlagBits::eStorageBuffer),
        kernel_(h_->device, log_tag_spirv, 1, 4),
        pool_(h_->device, h_->family) {
    causal::vulkan::device_options options = h_->context().options_for_device();
    options.path = Path;
    options.tracker = tracker;
    if (adjust) adjust(options);
    device_ = std::make_unique<causal::vulkan::device>(h_->instance, h_->physical, h_->device, options);
    if (!device_->setup_status()) throw std::runtime_error("vulkan::device setup failed");
    hw_ = device_->get_hardware_queue(h_->family, 0).value();
    if constexpr (Waiter) {
      if (!device_->start_waiter()) throw std::runtime_error("cannot start the waiter thread");
    }
    const vk::DescriptorBufferInfo info(log_.buffer(), 0, VK_WHOLE_SIZE);
    set_ = kernel_.make_set(std::span(&info, 1));
  }

  vulkan_fixture(const vulkan_fixture&) = delete;
  vulkan_fixture& operator=(const vulkan_fixture&) = delete;

  ~vulkan_fixture() {
    (void)finish();
    queues_.clear();  // each waits for its own work and idles the vk::Queue
    device_->stop_waiter();
    h_->device.waitIdle();
    semaphores_.clear();  // nothing pending uses them now
    device_.reset();
  }

  bool available() const noexcept { return true; }
  harness& env() const noexcept { return *h_; }
  causal::vulkan::device& device() noexcept { return *device_; }
  causal::vulkan::hardware_queue& hardware() noexcept { return *hw_; }
  command_pool& commands() noexcept { return pool_; }

  queue_type& make_queue() { return make_queue(*hw_); }

  /// A queue on another vk::Queue of the device.
  queue_type& make_queue(causal::vulkan::hardware_queue& hw) {
    const causal::axis a = axes_.allocate(0, causal::domain::queue).value();
    queues_.push_back(std::make_unique<queue_type>(*device_, hw, a));
    if (!queues_.back()->setup_status()) throw std::runtime_error("vulkan::queue setup failed");
    return *queues_.back();
  }

  semaphore_type& make_semaphore(std::uint64_t initial = 0) {
    semaphores_.push_back(std::make_unique<semaphore_type>(*device_, initial));
    if (!semaphores_.back()->setup_status()) throw std::runtime_error("vulkan::semaphore setup failed");
    return *semaphores_.back();
  }

  /// An operation that appends `tag` to the device log when it runs.
  causal::vulkan::command_list op(int tag) {
    vk::CommandBuffer cb = pool_.begin();
    const auto value = static_cast<std::uint32_t>(tag);
    kernel_.dispatch(cb, set_, &value, 1);
    shader_to_host_barrier(cb);
    cb.end();
    return causal::vulkan::command_list{cb};
  }

  /// Tags in the order their operations ran (after finish()).
  std::vector<int> log() const {
    const std::uint32_t* words = log_.as<std::uint32_t>();
    const std::uint32_t n = words[0] < log_capacity ? words[0] : log_capacity;
    std::vector<int> out;
    for (std::uint32_t i = 0; i < n; ++i) out.push_back(static_cast<int>(words[1 + i]));
    return out;
  }

  /// Waits until every queue is idle (20 s limit each).
  causal::status finish() {
    causal::status first{};
    for (auto& q : queues_) {
      const causal::status s = q->wait_idle(std::chrono::steady_clock::now() + std::chrono::seconds(20));
      if (!s && first) first = s;
    }
    (void)device_->poll();
    return first;
  }

  /// Host completion: read the counters, retry held submissions.
  void pump() noexcept {
    (void)device_->poll();
    device_->kick_all();
  }

  /// Advances `s` to `v` behind the adapter's back (a raw vkSignalSemaphore,
  /// as another API or process would), then polls.
  void external_signal(semaphore_type& s, std::uint64_t v) {
    h_->device.signalSemaphore(vk::SemaphoreSignalInfo(s.handle(), v));
    (void)device_->poll();
  }

 private:
  harness* h_;
  host_buffer log_;
  compute_kernel kernel_;
  vk::DescriptorSet set_;
  command_pool pool_;
  std::unique_ptr<causal::vulkan::device> device_;
  causal::vulkan::hardware_queue* hw_ = nullptr;
  causal::axis_allocator axes_;
  std::vector<std::unique_ptr<queue_type>> queues_;
  std::deque<std::unique_ptr<semaphore_type>> semaphores_;
};

using vk_submit2_polled = vulkan_fixture<causal::vulkan::submit_path::automatic, false>;
using vk_legacy_polled = vulkan_fixture<causal::vulkan::submit_path::legacy, false>;
using vk_submit2_waiter = vulkan_fixture<causal::vulkan::submit_path::automatic, true>;

}  // namespace causal_vk_test
