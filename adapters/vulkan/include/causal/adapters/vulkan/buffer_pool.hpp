// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// buffer_pool: vk::Buffer ranges backed by one VkDeviceMemory arena and
// handed out by a death-frontier block pool, with stream-ordered
// alloca/dealloca on Vulkan causal queues (DESIGN §6).
//
// Model. The pool allocates one VkDeviceMemory of `quota` bytes and binds
// one VkBuffer over all of it; a `vulkan::buffer` is a range of that buffer
// (offset, size; use it as a descriptor range or a copy region) plus, for
// host-visible memory, its mapped pointer. Which ranges are free, and when
// a freed range may be reused by which queue, is decided by
// `causal::basic_block_pool` over the queue cores. (The stream-ordered
// alloca/dealloca of DESIGN §6 are named allocate/deallocate here: glibc
// defines `alloca` as a macro.)
//   deallocate(q, b) frees b at q's current position: its death frontier is
//                   q's knowledge and its producer entry (q.axis, q.epoch).
//                   Every use of b must be in q's submissions so far, or
//                   ordered before them by their waits.
//   allocate(q, n)  returns a range q's *next* submission may use: reused
//                   for free when q's knowledge (or the completion tracker,
//                   or the freeing queue's epoch timeline) proves the death
//                   frontier; carved fresh; or reused after device waits on
//                   the freeing queues' epoch timelines, which the backend
//                   puts into q's next batch ("try before you fence").
// Queues whose frees other queues may reuse must be registered with
// add_queue (their epoch timelines are what a fence waits on).
//
// Thread safety: every member may be called concurrently (an internal mutex,
//                then the queue's lock, in that order).
// Memory order:  as <causal/pool.hpp>; reuse by completion reads the tracker
//                and the timelines with acquire loads.
// Blocking/allocation: the constructor allocates device memory and creates
//                the buffer; allocate/deallocate never allocate or block beyond
//                the two locks.
// Size:          the block pool (~16 KiB for 64 blocks) plus ~100 bytes.
// Configuration: basic_block_pool<queue::core_type> defaults (64 blocks, 16
//                timelines); quota, usage and memory properties at
//                construction.
// See also:      ../shared/DESIGN.md §6, <causal/pool.hpp>,
//                <causal/adapters/vulkan/queue.hpp>.
#pragma once

#include <causal/adapters/vulkan/device.hpp>
#include <causal/adapters/vulkan/queue.hpp>
#include <causal/config.hpp>
#include <causal/pool.hpp>
#include <causal/result.hpp>

#include <vulkan/vulkan.hpp>

#include <cstddef>
#include <cstdint>
#include <mutex>

CAUSAL_BEGIN_NAMESPACE

namespace vulkan {

/// A range of a buffer_pool's arena buffer.
struct buffer {
  vk::Buffer handle{};        ///< the arena buffer (shared by all ranges)
  vk::DeviceSize offset = 0;  ///< where the range starts in `handle`
  vk::DeviceSize size = 0;    ///< its size (the request rounded up)
  void* mapped = nullptr;     ///< host pointer to the range, if mapped
  pool_block block{};         ///< the pool's handle (identifies the lifetime)
};

/// Buffers from a death-frontier pool over one device-memory arena; see the
/// file comment.
class buffer_pool {
 public:
  using pool_type = basic_block_pool<queue::core_type>;

  /// Allocates `quota` bytes of memory with `properties` (mapped when
  /// host-visible) and one buffer over it with `usage`. Failures leave the
  /// pool unusable: see setup_status().
  buffer_pool(device& dev, vk::DeviceSize quota, vk::BufferUsageFlags usage,
              vk::MemoryPropertyFlags properties = vk::MemoryPropertyFlagBits::eHostVisible |
                                                   vk::MemoryPropertyFlagBits::eHostCoherent) noexcept
      : device_(&dev), pool_(static_cast<std::size_t>(quota), setup(quota, usage, properties),
                             dev.tracker()) {
    if (setup_ && !pool_.setup_status()) setup_ = pool_.setup_status();
  }

  buffer_pool(const buffer_pool&) = delete;
  buffer_pool& operator=(const buffer_pool&) = delete;

  /// Frees the buffer and memory. Precondition: no pending device work uses
  /// them (wait for the queues first).
  ~buffer_pool() {
    const dispatch& fn = device_->fn();
    const VkDevice dev = device_->vk_device();
    if (buffer_ != VK_NULL_HANDLE) fn.destroy_buffer(dev, buffer_, nullptr);
    if (memory_ != VK_NULL_HANDLE) {
      if (mapped_ != nullptr) fn.unmap_memory(dev, memory_);
      fn.free_memory(dev, memory_, nullptr);
    }
  }

  [[nodiscard]] status setup_status() const noexcept { return setup_; }
  [[nodiscard]] vk::Buffer arena() const noexcept { return vk::Buffer(buffer_); }
  [[nodiscard]] vk::DeviceMemory memory() const noexcept { return vk::DeviceMemory(memory_); }
  [[nodiscard]] std::size_t alignment() const noexcept { return pool_.alignment(); }
  [[nodiscard]] pool_stats stats() const noexcept {
    std::lock_guard lock(mutex_);
    return pool_.stats();
  }
  [[nodiscard]] std::size_t live_count() const noexcept {
    std::lock_guard lock(mutex_);
    return pool_.live_count();
  }

  /// Lets fences wait on `q`'s epoch timeline (call before `q` frees
  /// blocks that other queues reuse; remove_queue before `q` is destroyed).
  status add_queue(queue& q) noexcept {
    std::lock_guard lock(mutex_);
    return pool_.register_timeline(q.axis(), q.timeline());
  }
  status remove_queue(queue& q) noexcept {
    std::lock_guard lock(mutex_);
    return pool_.unregister_timeline(q.axis());
  }

  /// Returns a range of at least `size` bytes that `q`'s next submission
  /// may use (see the file comment). Errors: as basic_block_pool::acquire,
  /// an unusable pool, or a queue of another device (`invalid_argument`).
  result<buffer> allocate(queue& q, vk::DeviceSize size) noexcept {
    if (!setup_) return setup_.error_value();
    if (&q.owner() != device_) return error{errc::invalid_argument, "allocate: queue of another device"};
    std::lock_guard lock(mutex_);
    result<pool_block> b =
        q.with_core([&](queue::core_type& core) { return pool_.acquire(core, static_cast<std::size_t>(size)); });
    if (!b) return b.error_value();
    buffer out;
    out.handle = vk::Buffer(buffer_);
    out.offset = b->offset;
    out.size = b->size;
    out.mapped = mapped_ != nullptr ? static_cast<char*>(mapped_) + b->offset : nullptr;
    out.block = *b;
    return out;
  }

  /// Frees `b` at `q`'s current position (stream-ordered): reusable once
  /// everything q has submitted is proven done for the reusing queue.
  /// Errors: as basic_block_pool::release (a stale, foreign or double free;
  /// `q` holding submissions on the host), or a queue of another device.
  status deallocate(queue& q, const buffer& b) noexcept {
    if (&q.owner() != device_) return error{errc::invalid_argument, "deallocate: queue of another device"};
    std::lock_guard lock(mutex_);
    return q.with_core([&](queue::core_type& core) { return pool_.release(b.block, core); });
  }

 private:
  /// Creates memory and buffer; returns the pool alignment to use (a
  /// power of two; 0 makes the block pool report itself unusable).
  std::size_t setup(vk::DeviceSize quota, vk::BufferUsageFlags usage,
                    vk::MemoryPropertyFlags properties) noexcept {
    if (!device_->setup_status()) {
      setup_ = device_->setup_status();
      return 0;
    }
    if (quota == 0) {
      setup_ = error{errc::invalid_argument, "buffer_pool: quota 0"};
      return 0;
    }
    const dispatch& fn = device_->fn();
    const VkDevice dev = device_->vk_device();
    const VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                                  nullptr,
                                  0,
                                  quota,
                                  static_cast<VkBufferUsageFlags>(usage),
                                  VK_SHARING_MODE_EXCLUSIVE,
                                  0,
                                  nullptr};
    if (VkResult r = fn.create_buffer(dev, &info, nullptr, &buffer_); r != VK_SUCCESS) {
      buffer_ = VK_NULL_HANDLE;
      setup_ = device_->check(r, "buffer_pool: vkCreateBuffer failed");
      return 0;
    }
    VkMemoryRequirements req{};
    fn.get_buffer_memory_requirements(dev, buffer_, &req);
    VkPhysicalDeviceMemoryProperties mem{};
    fn.get_physical_device_memory_properties(
        static_cast<VkPhysicalDevice>(device_->physical_device()), &mem);
    const auto wanted = static_cast<VkMemoryPropertyFlags>(properties);
    std::uint32_t type = mem.memoryTypeCount;
    for (std::uint32_t i = 0; i < mem.memoryTypeCount; ++i) {
      if ((req.memoryTypeBits & (1u << i)) != 0 &&
          (mem.memoryTypes[i].propertyFlags & wanted) == wanted) {
        type = i;
        break;
      }
    }
    if (type == mem.memoryTypeCount) {
      setup_ = error{errc::failed_precondition, "buffer_pool: no memory type with these properties"};
      return 0;
    }
    const VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, nullptr, req.size, type};
    if (VkResult r = fn.allocate_memory(dev, &alloc, nullptr, &memory_); r != VK_SUCCESS) {
      memory_ = VK_NULL_HANDLE;
      setup_ = device_->check(r, "buffer_pool: vkAllocateMemory failed");
      return 0;
    }
    if (VkResult r = fn.bind_buffer_memory(dev, buffer_, memory_, 0); r != VK_SUCCESS) {
      setup_ = device_->check(r, "buffer_pool: vkBindBufferMemory failed");
      return 0;
    }
    if ((mem.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) != 0) {
      if (VkResult r = fn.map_memory(dev, memory_, 0, VK_WHOLE_SIZE, 0, &mapped_); r != VK_SUCCESS) {
        mapped_ = nullptr;
        setup_ = device_->check(r, "buffer_pool: vkMapMemory failed");
        return 0;
      }
    }
    VkPhysicalDeviceProperties props{};
    fn.get_physical_device_properties(static_cast<VkPhysicalDevice>(device_->physical_device()),
                                      &props);
    // Every range must be usable as a storage/uniform range and flushable:
    // all these limits are powers of two, so their maximum is one too.
    VkDeviceSize align = req.alignment;
    for (VkDeviceSize a : {props.limits.minStorageBufferOffsetAlignment,
                           props.limits.minUniformBufferOffsetAlignment,
                           props.limits.nonCoherentAtomSize, VkDeviceSize{16}}) {
      if (a > align) align = a;
    }
    return static_cast<std::size_t>(align);
  }

  device* device_;
  status setup_{};
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  void* mapped_ = nullptr;
  mutable std::mutex mutex_;
  pool_type pool_;
};

}  // namespace vulkan

CAUSAL_END_NAMESPACE
