// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// vk_harness: the Vulkan instance and device that the adapter's tests,
// example and benchmark run on, with the Khronos validation layer and
// synchronization validation (queue-submit checks included) switched on,
// and a debug messenger that counts every validation error.
//
// A thin wrapper over <causal/adapters/vulkan/context.hpp>: the physical
// device is the one CAUSAL_VULKAN_DEVICE names (an index), else the first
// with timeline semaphores and a compute queue family (Mesa's lavapipe in
// CI). It sets
// XDG_RUNTIME_DIR when unset (lavapipe wants it) and VK_LAYER_ENABLES
// when unset, so the layer also validates synchronisation *between*
// submissions (VALIDATION_CHECK_ENABLE_SYNCHRONIZATION_VALIDATION_QUEUE_SUBMIT
// is only reachable through the layer's settings). Without a driver, or
// without the validation layer, `create` explains why and the caller skips
// (exit 77). CAUSAL_VULKAN_NO_VALIDATION=1 runs without the layer.
//
// Thread safety: the error counter is atomic; everything else is set up
//                once on the main thread.
// See also:      adapters/vulkan/test/meson.build, test/support/skip.hpp.
#pragma once

#include <causal/adapters/vulkan/context.hpp>

#include <vulkan/vulkan.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

namespace causal_vk_test {

struct harness_options {
  bool validation = true;
  /// Ask for the synchronization2 feature (VK 1.3 core).
  bool synchronization2 = true;
};

/// Every validation message of severity error, counted (all harnesses).
inline std::atomic<int>& validation_error_count() {
  static std::atomic<int> count{0};
  return count;
}

/// Messages expected by a negative test are counted here too, so that it
/// can assert the layer saw a hazard and then subtract them.
inline int take_validation_errors() { return validation_error_count().exchange(0); }

/// Makes the process environment fit for lavapipe and the layer.
inline void prepare_environment() {
  if (std::getenv("XDG_RUNTIME_DIR") == nullptr) {
    static char dir[] = "/tmp/causal-vk-XXXXXX";
    if (::mkdtemp(dir) != nullptr) ::setenv("XDG_RUNTIME_DIR", dir, 0);
  }
  ::setenv("VK_LAYER_ENABLES",
           "VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT:"
           "VALIDATION_CHECK_ENABLE_SYNCHRONIZATION_VALIDATION_QUEUE_SUBMIT",
           0);
}

class harness {
 public:
  /// Creates instance, messenger and device; nullptr with `why` set when
  /// this machine cannot run the tests.
  static std::unique_ptr<harness> create(const harness_options& options, std::string& why) {
    prepare_environment();
    auto h = std::unique_ptr<harness>(new harness());
    if (!h->init(options, why)) return nullptr;
    return h;
  }

  harness(const harness&) = delete;
  harness& operator=(const harness&) = delete;
  ~harness() = default;  // the context idles and destroys device and instance

  vk::Instance instance;
  vk::PhysicalDevice physical;
  vk::Device device;
  std::uint32_t family = 0;
  bool validation = false;
  bool synchronization2 = false;
  bool external_semaphore_fd = false;
  std::string device_name;

  /// vk::Queues of `family` on the device (1 or 2).
  [[nodiscard]] std::uint32_t queue_count() const { return context_->queue_count(); }

  /// The adapter's context behind the handles above.
  [[nodiscard]] const causal::vulkan::context& context() const { return *context_; }

 private:
  harness() = default;

  static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                   VkDebugUtilsMessageTypeFlagsEXT,
                                                   const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                   void*) {
    if ((severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) != 0) {
      validation_error_count().fetch_add(1);
      std::fprintf(stderr, "VALIDATION ERROR: %s\n", data->pMessage);
    } else if ((severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) != 0) {
      std::fprintf(stderr, "validation warning: %s\n", data->pMessage);
    }
    return VK_FALSE;
  }

  bool init(const harness_options& options, std::string& why) {
    const bool no_validation = [] {
      const char* v = std::getenv("CAUSAL_VULKAN_NO_VALIDATION");
      return v != nullptr && std::strcmp(v, "1") == 0;
    }();
    validation = options.validation && !no_validation;

    const VkValidationFeatureEnableEXT enables[] = {
        VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    const VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT, nullptr, 1, enables,
                                           0, nullptr};
    causal::vulkan::context_options co;
    co.application_name = "causal-vulkan-tests";
    co.validation = validation;
    if (validation) {
      co.debug_callback = &on_message;
      co.instance_next = &features;
    }
    co.synchronization2 = options.synchronization2;
    co.queue_count = 2;  // where the family has two, tests use both
    // CAUSAL_VULKAN_DEVICE=<index> picks a physical device; otherwise the
    // first suitable one (main() prints its name).
    if (const char* index = std::getenv("CAUSAL_VULKAN_DEVICE"); index != nullptr) {
      co.device_index = static_cast<std::uint32_t>(std::strtoul(index, nullptr, 10));
    } else {
      co.select = [](const causal::vulkan::physical_device_info&) { return true; };
    }
    context_ = std::make_unique<causal::vulkan::context>(co);
    if (const causal::status s = context_->setup_status(); !s) {
      why = std::string(s.error_value().message());
      if (validation && s.code() == causal::errc::failed_precondition) {
        why += " (apt-get install vulkan-validationlayers; these tests must run under the layer; set "
               "CAUSAL_VULKAN_NO_VALIDATION=1 to run without)";
      }
      return false;
    }
    instance = context_->instance();
    physical = context_->physical_device();
    device = context_->device();
    family = context_->queue_family();
    synchronization2 = context_->synchronization2();
    external_semaphore_fd = context_->external_semaphore_fd();
    device_name = context_->info().properties.deviceName;
    return true;
  }

  std::unique_ptr<causal::vulkan::context> context_;
};

}  // namespace causal_vk_test
