// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// vk_compute: a compute pipeline over N storage buffers and a small push
// constant block, and the command-buffer plumbing the tests, the example
// and the benchmark share (Vulkan-Hpp, exceptions allowed: test tooling).
//
// Thread safety: none; one thread sets up and records.
// See also:      vk_harness.hpp, adapters/vulkan/shaders/.
#pragma once

#include <vulkan/vulkan.hpp>

#include <cstdint>
#include <span>
#include <vector>

namespace causal_vk_test {

/// One compute shader with `bindings` storage buffers (set 0, bindings
/// 0..N-1) and `push_bytes` of push constants.
class compute_kernel {
 public:
  compute_kernel(vk::Device device, std::span<const std::uint32_t> spirv, std::uint32_t bindings,
                 std::uint32_t push_bytes, std::uint32_t max_sets = 256)
      : device_(device), push_bytes_(push_bytes) {
    module_ = device.createShaderModule(
        vk::ShaderModuleCreateInfo({}, spirv.size() * sizeof(std::uint32_t), spirv.data()));
    std::vector<vk::DescriptorSetLayoutBinding> b;
    for (std::uint32_t i = 0; i < bindings; ++i) {
      b.emplace_back(i, vk::DescriptorType::eStorageBuffer, 1, vk::ShaderStageFlagBits::eCompute);
    }
    set_layout_ = device.createDescriptorSetLayout(vk::DescriptorSetLayoutCreateInfo({}, b));
    const vk::PushConstantRange range(vk::ShaderStageFlagBits::eCompute, 0, push_bytes);
    layout_ = device.createPipelineLayout(vk::PipelineLayoutCreateInfo({}, set_layout_, range));
    const vk::PipelineShaderStageCreateInfo stage({}, vk::ShaderStageFlagBits::eCompute, module_, "main");
    auto created = device.createComputePipeline({}, vk::ComputePipelineCreateInfo({}, stage, layout_));
    pipeline_ = created.value;
    const vk::DescriptorPoolSize size(vk::DescriptorType::eStorageBuffer, bindings * max_sets);
    pool_ = device.createDescriptorPool(vk::DescriptorPoolCreateInfo({}, max_sets, size));
  }

  compute_kernel(const compute_kernel&) = delete;
  compute_kernel& operator=(const compute_kernel&) = delete;

  ~compute_kernel() {
    device_.destroyDescriptorPool(pool_);
    device_.destroyPipeline(pipeline_);
    device_.destroyPipelineLayout(layout_);
    device_.destroyDescriptorSetLayout(set_layout_);
    device_.destroyShaderModule(module_);
  }

  /// A descriptor set pointing binding i at `buffers[i]`.
  vk::DescriptorSet make_set(std::span<const vk::DescriptorBufferInfo> buffers) {
    const vk::DescriptorSet set =
        device_.allocateDescriptorSets(vk::DescriptorSetAllocateInfo(pool_, set_layout_)).front();
    std::vector<vk::WriteDescriptorSet> writes;
    for (std::uint32_t i = 0; i < buffers.size(); ++i) {
      writes.emplace_back(set, i, 0, 1, vk::DescriptorType::eStorageBuffer, nullptr, &buffers[i]);
    }
    device_.updateDescriptorSets(writes, {});
    return set;
  }

  /// Records a dispatch of `groups` workgroups.
  void dispatch(vk::CommandBuffer cb, vk::DescriptorSet set, const void* push, std::uint32_t groups) const {
    cb.bindPipeline(vk::PipelineBindPoint::eCompute, pipeline_);
    cb.bindDescriptorSets(vk::PipelineBindPoint::eCompute, layout_, 0, set, {});
    cb.pushConstants(layout_, vk::ShaderStageFlagBits::eCompute, 0, push_bytes_, push);
    cb.dispatch(groups, 1, 1);
  }

 private:
  vk::Device device_;
  std::uint32_t push_bytes_;
  vk::ShaderModule module_;
  vk::DescriptorSetLayout set_layout_;
  vk::PipelineLayout layout_;
  vk::Pipeline pipeline_;
  vk::DescriptorPool pool_;
};

/// Records, in `cb`, a barrier that makes shader writes visible to the
/// host (for reading results back after a host wait).
inline void shader_to_host_barrier(vk::CommandBuffer cb) {
  const vk::MemoryBarrier mb(vk::AccessFlagBits::eShaderWrite, vk::AccessFlagBits::eHostRead);
  cb.pipelineBarrier(vk::PipelineStageFlagBits::eComputeShader, vk::PipelineStageFlagBits::eHost, {},
                     mb, {}, {});
}

/// A command pool that hands out primary command buffers and frees them
/// all at destruction.
class command_pool {
 public:
  command_pool(vk::Device device, std::uint32_t family) : device_(device) {
    pool_ = device.createCommandPool(vk::CommandPoolCreateInfo({}, family));
  }
  command_pool(const command_pool&) = delete;
  command_pool& operator=(const command_pool&) = delete;
  ~command_pool() { device_.destroyCommandPool(pool_); }

  /// A new command buffer in the recording state.
  vk::CommandBuffer begin() {
    vk::CommandBuffer cb =
        device_.allocateCommandBuffers(vk::CommandBufferAllocateInfo(pool_, vk::CommandBufferLevel::ePrimary, 1))
            .front();
    cb.begin(vk::CommandBufferBeginInfo(vk::CommandBufferUsageFlagBits::eSimultaneousUse));
    return cb;
  }

 private:
  vk::Device device_;
  vk::CommandPool pool_;
};

}  // namespace causal_vk_test
