// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// buffer_pool: vk::Buffer ranges backed by one VkDeviceMemory arena and
// handed out by a death-frontier block pool, with stream-ordered
// alloca/dealloca on Vulkan causal queues (docs/buffers.md).
//
// Model. The pool allocates one VkDeviceMemory of `quota` bytes and binds
// one VkBuffer over all of it; a `vulkan::buffer` is a range of that buffer
// (offset, size; use it as a descriptor range or a copy region) plus, for
// host-visible memory, its mapped pointer when the host may touch the range
// at once (fresh, or reused after the device completed its earlier uses);
// otherwise host_access(q, b) waits on the queue's epoch timeline until the
// earlier uses are done and then hands the pointer out. The queues end
// every batch with a barrier that makes its writes visible to the host, so
// a pointer from host_access reads what earlier device work wrote; on
// memory that is not HOST_COHERENT, host_access also invalidates the range,
// and flush_host_writes(b) flushes host writes before the device reads
// them (both no-ops on coherent memory). Which ranges are free, and when
// a freed range may be reused by which queue, is decided by
// `causal::basic_block_pool` over the queue cores. The stream-ordered pair
// has the names it has on the CPU queue, stream_alloca / stream_dealloca
// (never plain `alloca`, which glibc defines as a macro).
//   stream_dealloca(q, b) frees b at q's current position: its death
//                   frontier is q's knowledge and its producer entry
//                   (q.axis, q.epoch). Every use of b must be in q's
//                   submissions so far, or ordered before them by their waits.
//   stream_alloca(q, n) returns a range q's *next* submission may use: reused
//                   for free when q's knowledge (or the completion tracker,
//                   or the freeing queue's epoch timeline) proves the death
//                   frontier; carved fresh; or reused after device waits on
//                   the freeing queues' epoch timelines, which the backend
//                   puts into q's next batch ("try before you fence").
// Queues whose frees other queues may reuse must be registered with
// add_queue (their epoch timelines are what a fence waits on). The arena
// buffer is VK_SHARING_MODE_CONCURRENT over the queue families it serves
// (all of the device's unless the constructor names some), so ranges pass
// between queues of different families without ownership transfers;
// stream_alloca refuses a queue of another family.
//
// Thread safety: every member may be called concurrently (an internal mutex,
//                then the queue's lock, in that order).
// Memory order:  as <causal/pool.hpp>; reuse by completion reads the tracker
//                and the timelines with acquire loads.
// Blocking/allocation: the constructor allocates device memory and creates
//                the buffer; stream_alloca/stream_dealloca never allocate or block beyond
//                the two locks; host_access blocks (until its deadline)
//                while earlier device work may still use the range;
//                host_access and flush_host_writes call the driver on
//                non-coherent memory.
// Size:          the block pool (~16 KiB for 64 blocks) plus ~100 bytes.
// Configuration: basic_block_pool<queue::core_type> defaults (64 blocks, 16
//                timelines); quota, usage, memory properties and the queue
//                families served at construction.
// See also:      docs/buffers.md, <causal/pool.hpp>,
//                <causal/adapters/vulkan/queue.hpp>.
#pragma once

#include <causal/adapters/vulkan/device.hpp>
#include <causal/adapters/vulkan/queue.hpp>
#include <causal/axis.hpp>
#include <causal/config.hpp>
#include <causal/pool.hpp>
#include <causal/result.hpp>

#include <vulkan/vulkan.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>

CAUSAL_BEGIN_NAMESPACE

namespace vulkan {

/// A range of a buffer_pool's arena buffer.
struct buffer {
  vk::Buffer handle{};        ///< the arena buffer (shared by all ranges)
  vk::DeviceSize offset = 0;  ///< where the range starts in `handle`
  vk::DeviceSize size = 0;    ///< its size (the request rounded up)
  /// Host pointer to the range, set only when the host may touch it now:
  /// host-visible memory that is fresh, or reused after the device was
  /// seen to complete every earlier use. Null otherwise; then
  /// buffer_pool::host_access waits for that and returns it.
  void* mapped = nullptr;
  /// The acquiring queue's epoch whose completion proves every earlier use
  /// of the range done (0: proven already). Reuse by knowledge: the epoch
  /// from which the queue's knowledge holds (its epoch at allocation, or
  /// the next one when an earlier fenced acquire taught it what it knows);
  /// after a fence: the next one (its batch carries the fence waits).
  std::uint64_t host_ready_epoch = 0;
  causal::axis acquired_on{};  ///< the acquiring queue's axis
  pool_block block{};          ///< the pool's handle (identifies the lifetime)
};

/// Buffers from a death-frontier pool over one device-memory arena; see the
/// file comment.
class buffer_pool {
 public:
  using pool_type = basic_block_pool<queue::core_type>;

  /// Allocates `quota` bytes of memory with `properties` (mapped when
  /// host-visible) and one buffer over it with `usage`, usable by queues of
  /// `queue_families` (empty: every family of the physical device). With
  /// more than one family the buffer is VK_SHARING_MODE_CONCURRENT over
  /// them, so ranges pass between queues of different families without
  /// ownership transfers; with one it is EXCLUSIVE. Failures leave the pool
  /// unusable (see setup_status()): a family index past the device's, or
  /// past 63 (`invalid_argument`), and the driver's errors.
  buffer_pool(device& dev, vk::DeviceSize quota, vk::BufferUsageFlags usage,
              vk::MemoryPropertyFlags properties = vk::MemoryPropertyFlagBits::eHostVisible |
                                                   vk::MemoryPropertyFlagBits::eHostCoherent,
              std::span<const std::uint32_t> queue_families = {}) noexcept
      : device_(&dev),
        pool_(static_cast<std::size_t>(quota), setup(quota, usage, properties, queue_families),
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
  /// VK_SHARING_MODE_CONCURRENT (several families) or EXCLUSIVE (one).
  [[nodiscard]] VkSharingMode sharing_mode() const noexcept { return sharing_; }
  /// True when queues of family `family` may use the arena.
  [[nodiscard]] bool serves_family(std::uint32_t family) const noexcept {
    return family < 64 && (families_ & (std::uint64_t{1} << family)) != 0;
  }
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
  /// may use (see the file comment). Its `mapped` pointer is set only when
  /// the host may touch the range at once (see buffer); a range reused by
  /// knowledge or after a fence may still be in use by earlier device work,
  /// so host writes through it would race. Errors: as
  /// basic_block_pool::acquire, an unusable pool, or a queue of another
  /// device (`invalid_argument`).
  result<buffer> stream_alloca(queue& q, vk::DeviceSize size) noexcept {
    if (!setup_) return setup_.error_value();
    if (&q.owner() != device_) return error{errc::invalid_argument, "stream_alloca: queue of another device"};
    if (!serves_family(q.hardware().family())) {
      return error{errc::invalid_argument, "stream_alloca: the queue's family is not one the pool was made for",
                   q.hardware().family()};
    }
    std::lock_guard lock(mutex_);
    std::uint64_t epoch = 0;
    std::uint64_t knowledge_epoch = 0;
    result<pool_block> b = q.with_core([&](queue::core_type& core) {
      epoch = core.epoch();
      // The epoch from which q's knowledge holds: the next one when q
      // learnt something for its next batch (an earlier fenced acquire's
      // waits), so a range that knowledge proves is host-ready only once
      // that batch has run.
      knowledge_epoch = core.knowledge_producer().epoch;
      return pool_.acquire(core, static_cast<std::size_t>(size));
    });
    if (!b) return b.error_value();
    buffer out;
    out.handle = vk::Buffer(buffer_);
    out.offset = b->offset;
    out.size = b->size;
    out.acquired_on = q.axis();
    switch (b->path) {
      case pool_path::fresh:
      case pool_path::completion: out.host_ready_epoch = 0; break;
      case pool_path::knowledge: out.host_ready_epoch = knowledge_epoch; break;
      case pool_path::fenced: out.host_ready_epoch = epoch + 1; break;
    }
    if (out.host_ready_epoch == 0) out.mapped = host_address(out);
    out.block = *b;
    return out;
  }

  /// The host pointer to `b` once the host may touch it: blocks until `q`
  /// (the queue `b` was allocated on) has completed b.host_ready_epoch,
  /// which proves every use of the range before this allocation done. Uses
  /// of `b` submitted since are the caller's to wait for. A range reused
  /// after a fence needs `q`'s next submission (it carries the fence
  /// waits): submit it first, or the wait runs to `deadline`.
  /// Errors: memory not host-visible (`failed_precondition`), `q` not the
  /// allocating queue or of another device (`invalid_argument`), the wait's
  /// error (`timeout`, the queue's failure, `device_lost`).
  result<void*> host_access(queue& q, const buffer& b,
                            semaphore::clock::time_point deadline = semaphore::clock::time_point::max()) noexcept {
    if (!setup_) return setup_.error_value();
    if (mapped_ == nullptr) {
      return error{errc::failed_precondition, "host_access: the pool's memory is not host-visible"};
    }
    if (&q.owner() != device_ || q.axis() != b.acquired_on) {
      return error{errc::invalid_argument, "host_access: not the queue the buffer was allocated on"};
    }
    if (b.host_ready_epoch != 0) {
      if (status s = q.timeline().wait_until(b.host_ready_epoch, deadline); !s) return s.error_value();
    }
    // The queue's trailing barrier made the device's writes available to
    // the host; non-coherent memory also needs the host's view refreshed.
    if (status s = sync_host_view(b, /*flush=*/false); !s) return s.error_value();
    return host_address(b);
  }

  /// Makes host writes through `b`'s pointer visible to the device: on
  /// memory that is not HOST_COHERENT, vkFlushMappedMemoryRanges over the
  /// range (a no-op on coherent memory). Call it after writing and before
  /// submitting the work that reads the range (the submit then makes the
  /// writes available to the device). Errors: memory not host-visible
  /// (`failed_precondition`), a driver error.
  status flush_host_writes(const buffer& b) noexcept {
    if (!setup_) return setup_;
    if (mapped_ == nullptr) {
      return error{errc::failed_precondition, "flush_host_writes: the pool's memory is not host-visible"};
    }
    return sync_host_view(b, /*flush=*/true);
  }

  /// True when the arena's memory is HOST_COHERENT (host writes and device
  /// writes need no flush or invalidate to be seen).
  [[nodiscard]] bool host_coherent() const noexcept { return coherent_; }

  /// Frees `b` at `q`'s current position (stream-ordered): reusable once
  /// everything q has submitted is proven done for the reusing queue.
  /// Errors: as basic_block_pool::release (a stale, foreign or double free;
  /// `q` holding submissions on the host), or a queue of another device.
  status stream_dealloca(queue& q, const buffer& b) noexcept {
    if (&q.owner() != device_) return error{errc::invalid_argument, "stream_dealloca: queue of another device"};
    std::lock_guard lock(mutex_);
    return q.with_core([&](queue::core_type& core) { return pool_.release(b.block, core); });
  }

 private:
  /// Creates memory and buffer; returns the pool alignment to use (a
  /// power of two; 0 makes the block pool report itself unusable).
  std::size_t setup(vk::DeviceSize quota, vk::BufferUsageFlags usage, vk::MemoryPropertyFlags properties,
                    std::span<const std::uint32_t> queue_families) noexcept {
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
    // Which families share the arena: the caller's (deduplicated), or all.
    const std::uint32_t family_count = device_->queue_family_count();
    if (queue_families.empty()) {
      for (std::uint32_t f = 0; f < family_count && f < 64; ++f) families_ |= std::uint64_t{1} << f;
    }
    for (const std::uint32_t f : queue_families) {
      if (f >= family_count || f >= 64) {
        setup_ = error{errc::invalid_argument, "buffer_pool: no such queue family", f};
        return 0;
      }
      families_ |= std::uint64_t{1} << f;
    }
    std::array<std::uint32_t, 64> indices{};
    std::uint32_t index_count = 0;
    for (std::uint32_t f = 0; f < 64; ++f) {
      if ((families_ & (std::uint64_t{1} << f)) != 0) indices[index_count++] = f;
    }
    sharing_ = index_count > 1 ? VK_SHARING_MODE_CONCURRENT : VK_SHARING_MODE_EXCLUSIVE;
    const VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                                  nullptr,
                                  0,
                                  quota,
                                  static_cast<VkBufferUsageFlags>(usage),
                                  sharing_,
                                  sharing_ == VK_SHARING_MODE_CONCURRENT ? index_count : 0,
                                  sharing_ == VK_SHARING_MODE_CONCURRENT ? indices.data() : nullptr};
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
    memory_size_ = req.size;
    coherent_ = (mem.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
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
    atom_ = props.limits.nonCoherentAtomSize != 0 ? props.limits.nonCoherentAtomSize : 1;
    return static_cast<std::size_t>(align);
  }

  /// Flushes (host writes -> device) or invalidates (device writes -> host)
  /// `b`'s range when the memory is not coherent. Ranges start on a
  /// multiple of nonCoherentAtomSize (the pool's alignment includes it);
  /// the size is rounded up to it, or runs to the end of the allocation.
  status sync_host_view(const buffer& b, bool flush) const noexcept {
    if (coherent_ || mapped_ == nullptr) return status{};
    const VkDeviceSize end = (b.offset + b.size + atom_ - 1) / atom_ * atom_;
    const VkMappedMemoryRange range{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, nullptr, memory_, b.offset,
                                    end >= memory_size_ ? VK_WHOLE_SIZE : end - b.offset};
    const dispatch& fn = device_->fn();
    const VkResult r = flush ? fn.flush_mapped_memory_ranges(device_->vk_device(), 1, &range)
                             : fn.invalidate_mapped_memory_ranges(device_->vk_device(), 1, &range);
    if (r != VK_SUCCESS) {
      return device_->check(r, flush ? "buffer_pool: vkFlushMappedMemoryRanges failed"
                                     : "buffer_pool: vkInvalidateMappedMemoryRanges failed");
    }
    return status{};
  }

  [[nodiscard]] void* host_address(const buffer& b) const noexcept {
    return mapped_ != nullptr ? static_cast<char*>(mapped_) + b.offset : nullptr;
  }

  device* device_;
  status setup_{};
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkSharingMode sharing_ = VK_SHARING_MODE_EXCLUSIVE;
  std::uint64_t families_ = 0;  // bit f: queue family f may use the arena
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  void* mapped_ = nullptr;
  VkDeviceSize memory_size_ = 0;
  VkDeviceSize atom_ = 1;  // nonCoherentAtomSize
  bool coherent_ = true;
  mutable std::mutex mutex_;
  pool_type pool_;
};

}  // namespace vulkan

CAUSAL_END_NAMESPACE
