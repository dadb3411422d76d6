// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// vk_harness: the Vulkan instance and device that the adapter's tests,
// example and benchmark run on, with the Khronos validation layer and
// synchronization validation (queue-submit checks included) switched on,
// and a debug messenger that counts every validation error.
//
// Setup picks the first physical device with timeline semaphores (Mesa's
// lavapipe in CI) and one queue family with compute. It sets
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
    try {
      if (!h->init(options, why)) return nullptr;
    } catch (const std::exception& e) {
      why = std::string("Vulkan setup failed: ") + e.what();
      return nullptr;
    }
    return h;
  }

  harness(const harness&) = delete;
  harness& operator=(const harness&) = delete;

  ~harness() {
    if (device) {
      device.waitIdle();
      device.destroy();
    }
    if (messenger_) destroy_messenger_(static_cast<VkInstance>(instance), messenger_, nullptr);
    if (instance) instance.destroy();
  }

  vk::Instance instance;
  vk::PhysicalDevice physical;
  vk::Device device;
  std::uint32_t family = 0;
  bool validation = false;
  bool synchronization2 = false;
  bool external_semaphore_fd = false;
  std::string device_name;

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

    std::uint32_t layer_count = 0;
    if (vkEnumerateInstanceLayerProperties(&layer_count, nullptr) != VK_SUCCESS) {
      why = "no Vulkan loader or driver (vkEnumerateInstanceLayerProperties failed)";
      return false;
    }
    std::vector<VkLayerProperties> layers(layer_count);
    (void)vkEnumerateInstanceLayerProperties(&layer_count, layers.data());
    bool have_layer = false;
    for (const VkLayerProperties& l : layers) {
      have_layer = have_layer || std::strcmp(l.layerName, "VK_LAYER_KHRONOS_validation") == 0;
    }
    if (validation && !have_layer) {
      why = "VK_LAYER_KHRONOS_validation is not installed (apt-get install "
            "vulkan-validationlayers), and these tests must run under it; set "
            "CAUSAL_VULKAN_NO_VALIDATION=1 to run without";
      return false;
    }

    const vk::ApplicationInfo app("causal-vulkan-tests", 1, "causal", 1, VK_API_VERSION_1_3);
    std::vector<const char*> instance_layers;
    std::vector<const char*> instance_extensions;
    if (validation) {
      instance_layers.push_back("VK_LAYER_KHRONOS_validation");
      instance_extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    }
    const VkValidationFeatureEnableEXT enables[] = {
        VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT, nullptr, 1, enables,
                                     0, nullptr};
    VkDebugUtilsMessengerCreateInfoEXT messenger_info{
        VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        validation ? static_cast<const void*>(&features) : nullptr,
        0,
        VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
            VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        &on_message,
        nullptr};
    VkInstanceCreateInfo instance_info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                       validation ? &messenger_info : nullptr,
                                       0,
                                       reinterpret_cast<const VkApplicationInfo*>(&app),
                                       static_cast<std::uint32_t>(instance_layers.size()),
                                       instance_layers.data(),
                                       static_cast<std::uint32_t>(instance_extensions.size()),
                                       instance_extensions.data()};
    VkInstance raw_instance = VK_NULL_HANDLE;
    if (VkResult r = vkCreateInstance(&instance_info, nullptr, &raw_instance); r != VK_SUCCESS) {
      why = "vkCreateInstance failed (no Vulkan driver?), VkResult " + std::to_string(r);
      return false;
    }
    instance = vk::Instance(raw_instance);
    if (validation) {
      auto create_messenger = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
          vkGetInstanceProcAddr(raw_instance, "vkCreateDebugUtilsMessengerEXT"));
      destroy_messenger_ = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
          vkGetInstanceProcAddr(raw_instance, "vkDestroyDebugUtilsMessengerEXT"));
      messenger_info.pNext = nullptr;
      if (create_messenger == nullptr || destroy_messenger_ == nullptr ||
          create_messenger(raw_instance, &messenger_info, nullptr, &messenger_) != VK_SUCCESS) {
        why = "cannot create the validation debug messenger";
        return false;
      }
    }

    for (vk::PhysicalDevice pd : instance.enumeratePhysicalDevices()) {
      const auto chain = pd.getFeatures2<vk::PhysicalDeviceFeatures2, vk::PhysicalDeviceVulkan12Features,
                                         vk::PhysicalDeviceVulkan13Features>();
      if (!chain.get<vk::PhysicalDeviceVulkan12Features>().timelineSemaphore) continue;
      const auto families = pd.getQueueFamilyProperties();
      for (std::uint32_t i = 0; i < families.size(); ++i) {
        if (families[i].queueFlags & vk::QueueFlagBits::eCompute) {
          physical = pd;
          family = i;
          synchronization2 = options.synchronization2 &&
                             chain.get<vk::PhysicalDeviceVulkan13Features>().synchronization2 &&
                             pd.getProperties().apiVersion >= VK_API_VERSION_1_3;
          break;
        }
      }
      if (physical) break;
    }
    if (!physical) {
      why = "no Vulkan device with timeline semaphores and a compute queue";
      return false;
    }
    device_name = physical.getProperties().deviceName.data();
    for (const auto& e : physical.enumerateDeviceExtensionProperties()) {
      if (std::strcmp(e.extensionName, VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME) == 0) {
        external_semaphore_fd = true;
      }
    }

    const float priority = 1.0f;
    const vk::DeviceQueueCreateInfo queue_info({}, family, 1, &priority);
    vk::PhysicalDeviceVulkan13Features v13;
    v13.synchronization2 = synchronization2 ? VK_TRUE : VK_FALSE;
    vk::PhysicalDeviceVulkan12Features v12;
    v12.timelineSemaphore = VK_TRUE;
    v12.pNext = &v13;
    std::vector<const char*> device_extensions;
    if (external_semaphore_fd) device_extensions.push_back(VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME);
    vk::DeviceCreateInfo device_info({}, queue_info, {}, device_extensions);
    device_info.pNext = &v12;
    device = physical.createDevice(device_info);
    return true;
  }

  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger_ = nullptr;
};

}  // namespace causal_vk_test
