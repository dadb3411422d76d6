// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// context: creates the VkInstance and VkDevice the Vulkan adapter expects —
// timeline semaphores enabled, synchronization2 and
// VK_KHR_external_semaphore_fd when the device has them — on a physical
// device the caller chooses, and hands out the matching device_options.
// Applications that create their own instance and device do not need it;
// it is what the adapter's tests, example and benchmark use.
//
// Model. `context(options)` creates, in order: the instance (with the
// Khronos validation layer and a debug messenger when asked), then the
// device on the physical device the caller picked — by index in
// vkEnumeratePhysicalDevices order (`device_index`), or the first one that
// is suitable and accepted by a predicate (`select`); exactly one of the
// two must be given, so a machine with several GPUs never gets one picked
// silently. Suitable means: timeline semaphores, and a queue family whose
// flags include `queue_flags`. The device gets up to `queue_count` queues
// of the first such family. Every failure leaves the context holding
// nothing (see setup_status()), with what went wrong:
//   invalid_argument     no choice, or both; an index past the devices;
//                        api_version below 1.1
//   failed_precondition  the validation layer or the debug-utils
//                        extension is missing; the chosen device is not
//                        suitable; no device was accepted
//   device_lost, resource_exhausted, ...   a driver error (to_status)
// The destructor idles and destroys the device, then the messenger and
// the instance: destroy every vulkan::device, queue, semaphore and
// buffer_pool made on it first.
//
// Thread safety: construction and destruction on one thread; the
//                observers are const and may be called from any thread.
// Memory order:  none (no shared mutable state after construction).
// Blocking/allocation: construction allocates (device lists) and calls the
//                loader; the destructor waits for the device to go idle.
// Size:          ~1 KiB (the chosen device's properties) plus its queue
//                family table.
// Configuration: context_options (application name and API version,
//                validation and debug callback, extra instance chain,
//                physical-device choice, queue flags and count, optional
//                features).
// See also:      <causal/adapters/vulkan/device.hpp>, adapters/vulkan/README.md.
#pragma once

#include <causal/adapters/vulkan/device.hpp>
#include <causal/config.hpp>
#include <causal/result.hpp>

#include <vulkan/vulkan.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <vector>

CAUSAL_BEGIN_NAMESPACE

namespace vulkan {

/// What a context knows about one physical device when choosing it.
struct physical_device_info {
  vk::PhysicalDevice handle{};
  /// Position in vkEnumeratePhysicalDevices order (what device_index means).
  std::uint32_t index = 0;
  VkPhysicalDeviceProperties properties{};
  /// min(instance API version, device API version).
  std::uint32_t api_version = 0;
  bool timeline_semaphore = false;
  bool synchronization2 = false;
  bool external_semaphore_fd = false;  ///< VK_KHR_external_semaphore_fd offered
  std::vector<VkQueueFamilyProperties> queue_families;

  /// The first queue family whose flags include `flags`, if any.
  [[nodiscard]] std::optional<std::uint32_t> family_with(VkQueueFlags flags) const noexcept {
    for (std::uint32_t i = 0; i < queue_families.size(); ++i) {
      if ((queue_families[i].queueFlags & flags) == flags && queue_families[i].queueCount > 0) return i;
    }
    return std::nullopt;
  }
};

/// How a context creates the instance and the device.
struct context_options {
  const char* application_name = "causal";
  /// The instance API version asked for (at least 1.1).
  std::uint32_t api_version = VK_API_VERSION_1_3;
  /// Enable VK_LAYER_KHRONOS_validation (failed_precondition when absent).
  bool validation = false;
  /// When set: enable VK_EXT_debug_utils and report messages of
  /// `debug_severities` (instance creation and destruction included).
  PFN_vkDebugUtilsMessengerCallbackEXT debug_callback = nullptr;
  void* debug_user_data = nullptr;
  VkDebugUtilsMessageSeverityFlagsEXT debug_severities =
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  /// Prepended to VkInstanceCreateInfo::pNext (e.g. VkValidationFeaturesEXT).
  const void* instance_next = nullptr;
  /// The physical device, by index in vkEnumeratePhysicalDevices order...
  std::optional<std::uint32_t> device_index;
  /// ...or the first suitable one this accepts. Exactly one must be set.
  std::function<bool(const physical_device_info&)> select;
  /// The queue family: the first whose flags include these.
  VkQueueFlags queue_flags = VK_QUEUE_COMPUTE_BIT;
  /// Queues asked for in that family (at most the family's count).
  std::uint32_t queue_count = 1;
  /// Enable synchronization2 / VK_KHR_external_semaphore_fd when present.
  bool synchronization2 = true;
  bool external_semaphore_fd = true;
  /// The loader entry point; null means the linked vkGetInstanceProcAddr.
  PFN_vkGetInstanceProcAddr get_instance_proc_addr = nullptr;
};

/// An instance and a device fit for the adapter; see the file comment.
class context {
 public:
  explicit context(const context_options& options) noexcept {
    setup_ = create(options);
    if (!setup_) destroy();
  }

  context(const context&) = delete;
  context& operator=(const context&) = delete;

  ~context() { destroy(); }

  //===-- observers -------------------------------------------------------===//

  /// Ok, or why nothing was created (see the file comment).
  [[nodiscard]] status setup_status() const noexcept { return setup_; }
  [[nodiscard]] vk::Instance instance() const noexcept { return vk::Instance(instance_); }
  [[nodiscard]] vk::PhysicalDevice physical_device() const noexcept { return chosen_.handle; }
  [[nodiscard]] vk::Device device() const noexcept { return vk::Device(device_); }
  /// The chosen physical device, as the choice saw it.
  [[nodiscard]] const physical_device_info& info() const noexcept { return chosen_; }
  /// The queue family the device's queues belong to, and how many there are.
  [[nodiscard]] std::uint32_t queue_family() const noexcept { return family_; }
  [[nodiscard]] std::uint32_t queue_count() const noexcept { return queue_count_; }
  /// What was enabled on the device.
  [[nodiscard]] bool synchronization2() const noexcept { return synchronization2_; }
  [[nodiscard]] bool external_semaphore_fd() const noexcept { return external_fd_; }
  [[nodiscard]] bool validation() const noexcept { return options_.validation && instance_ != VK_NULL_HANDLE; }

  /// device_options matching what was enabled; add a tracker, path, ...
  [[nodiscard]] device_options options_for_device() const noexcept {
    device_options o;
    o.synchronization2 = synchronization2_;
    o.external_semaphore_fd = external_fd_;
    o.get_instance_proc_addr = gipa_;
    return o;
  }

  /// Every physical device of `instance` (created with API version
  /// `instance_api`) with what the choice looks at; empty when the driver
  /// calls fail. Allocates (throws std::bad_alloc only).
  static std::vector<physical_device_info> describe(VkInstance instance, PFN_vkGetInstanceProcAddr gipa,
                                                    std::uint32_t instance_api) {
    std::vector<physical_device_info> out;
    auto enumerate = load<PFN_vkEnumeratePhysicalDevices>(gipa, instance, "vkEnumeratePhysicalDevices");
    auto properties = load<PFN_vkGetPhysicalDeviceProperties>(gipa, instance, "vkGetPhysicalDeviceProperties");
    auto features2 = load<PFN_vkGetPhysicalDeviceFeatures2>(gipa, instance, "vkGetPhysicalDeviceFeatures2");
    auto families = load<PFN_vkGetPhysicalDeviceQueueFamilyProperties>(
        gipa, instance, "vkGetPhysicalDeviceQueueFamilyProperties");
    auto extensions = load<PFN_vkEnumerateDeviceExtensionProperties>(
        gipa, instance, "vkEnumerateDeviceExtensionProperties");
    if (!enumerate || !properties || !features2 || !families || !extensions) return out;
    std::uint32_t count = 0;
    if (enumerate(instance, &count, nullptr) != VK_SUCCESS) return out;
    std::vector<VkPhysicalDevice> handles(count);
    if (enumerate(instance, &count, handles.data()) < VK_SUCCESS) return out;
    handles.resize(count);
    for (std::uint32_t i = 0; i < count; ++i) {
      physical_device_info d;
      d.handle = vk::PhysicalDevice(handles[i]);
      d.index = i;
      properties(handles[i], &d.properties);
      d.api_version = std::min(instance_api, d.properties.apiVersion);
      std::uint32_t ext_count = 0;
      std::vector<VkExtensionProperties> exts;
      if (extensions(handles[i], nullptr, &ext_count, nullptr) == VK_SUCCESS) {
        exts.resize(ext_count);
        if (extensions(handles[i], nullptr, &ext_count, exts.data()) < VK_SUCCESS) ext_count = 0;
        exts.resize(ext_count);
      }
      const auto offers = [&](const char* name) {
        return std::any_of(exts.begin(), exts.end(),
                           [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
      };
      VkPhysicalDeviceSynchronization2Features sync2{
          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SYNCHRONIZATION_2_FEATURES, nullptr, VK_FALSE};
      VkPhysicalDeviceTimelineSemaphoreFeatures timeline{
          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES, &sync2, VK_FALSE};
      VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &timeline, {}};
      features2(handles[i], &features);
      d.timeline_semaphore = timeline.timelineSemaphore == VK_TRUE &&
                             (d.api_version >= VK_API_VERSION_1_2 ||
                              offers(VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME));
      d.synchronization2 = sync2.synchronization2 == VK_TRUE &&
                           (d.api_version >= VK_API_VERSION_1_3 ||
                            offers(VK_KHR_SYNCHRONIZATION_2_EXTENSION_NAME));
      d.external_semaphore_fd = offers(VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME);
      std::uint32_t family_count = 0;
      families(handles[i], &family_count, nullptr);
      d.queue_families.resize(family_count);
      families(handles[i], &family_count, d.queue_families.data());
      out.push_back(std::move(d));
    }
    return out;
  }

 private:
  template <class F>
  static F load(PFN_vkGetInstanceProcAddr gipa, VkInstance instance, const char* name) noexcept {
    return reinterpret_cast<F>(gipa(instance, name));
  }

  status create(const context_options& options) noexcept {
    try {
      options_ = options;
      return create_throwing();
    } catch (...) {
      return error{errc::resource_exhausted, "vulkan::context: out of memory"};
    }
  }

  status create_throwing() {
    gipa_ = options_.get_instance_proc_addr;
#if !defined(VK_NO_PROTOTYPES)
    if (gipa_ == nullptr) gipa_ = &vkGetInstanceProcAddr;
#endif
    if (gipa_ == nullptr) {
      return error{errc::invalid_argument, "vulkan::context: VK_NO_PROTOTYPES is set; pass get_instance_proc_addr"};
    }
    if (options_.device_index.has_value() == static_cast<bool>(options_.select)) {
      return error{errc::invalid_argument,
                   "vulkan::context: choose the physical device with exactly one of device_index and select"};
    }
    if (options_.api_version < VK_API_VERSION_1_1) {
      return error{errc::invalid_argument, "vulkan::context: api_version must be at least 1.1"};
    }
    if (status s = create_instance(); !s) return s;
    return create_device();
  }

  status create_instance() {
    auto enumerate_layers =
        load<PFN_vkEnumerateInstanceLayerProperties>(gipa_, VK_NULL_HANDLE, "vkEnumerateInstanceLayerProperties");
    auto enumerate_extensions = load<PFN_vkEnumerateInstanceExtensionProperties>(
        gipa_, VK_NULL_HANDLE, "vkEnumerateInstanceExtensionProperties");
    auto create_instance = load<PFN_vkCreateInstance>(gipa_, VK_NULL_HANDLE, "vkCreateInstance");
    if (!enumerate_layers || !enumerate_extensions || !create_instance) {
      return error{errc::failed_precondition, "vulkan::context: no Vulkan loader"};
    }
    std::vector<const char*> layers;
    std::vector<const char*> extensions;
    if (options_.validation) {
      std::uint32_t count = 0;
      if (VkResult r = enumerate_layers(&count, nullptr); r != VK_SUCCESS) {
        return to_status(r, "vulkan::context: vkEnumerateInstanceLayerProperties failed");
      }
      std::vector<VkLayerProperties> found(count);
      (void)enumerate_layers(&count, found.data());
      found.resize(count);
      if (std::none_of(found.begin(), found.end(), [](const VkLayerProperties& l) {
            return std::strcmp(l.layerName, "VK_LAYER_KHRONOS_validation") == 0;
          })) {
        return error{errc::failed_precondition,
                     "vulkan::context: VK_LAYER_KHRONOS_validation is not installed"};
      }
      layers.push_back("VK_LAYER_KHRONOS_validation");
    }
    if (options_.debug_callback != nullptr) {
      // The instance's extensions, and the validation layer's (debug
      // utils may come with it).
      std::vector<VkExtensionProperties> found;
      const auto add_from = [&](const char* layer) {
        std::uint32_t count = 0;
        if (enumerate_extensions(layer, &count, nullptr) != VK_SUCCESS) return;
        const std::size_t at = found.size();
        found.resize(at + count);
        if (enumerate_extensions(layer, &count, found.data() + at) < VK_SUCCESS) count = 0;
        found.resize(at + count);
      };
      add_from(nullptr);
      if (options_.validation) add_from("VK_LAYER_KHRONOS_validation");
      if (std::none_of(found.begin(), found.end(), [](const VkExtensionProperties& e) {
            return std::strcmp(e.extensionName, VK_EXT_DEBUG_UTILS_EXTENSION_NAME) == 0;
          })) {
        return error{errc::failed_precondition, "vulkan::context: VK_EXT_debug_utils is not available"};
      }
      extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    }
    messenger_info_ = VkDebugUtilsMessengerCreateInfoEXT{
        VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        options_.instance_next,
        0,
        options_.debug_severities,
        VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
            VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        options_.debug_callback,
        options_.debug_user_data};
    const VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO, nullptr, options_.application_name, 1,
                                "causal", 1, options_.api_version};
    const bool debug = options_.debug_callback != nullptr;
    const VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                    debug ? &messenger_info_ : options_.instance_next,
                                    0,
                                    &app,
                                    static_cast<std::uint32_t>(layers.size()),
                                    layers.data(),
                                    static_cast<std::uint32_t>(extensions.size()),
                                    extensions.data()};
    if (VkResult r = create_instance(&info, nullptr, &instance_); r != VK_SUCCESS) {
      instance_ = VK_NULL_HANDLE;
      return to_status(r, "vulkan::context: vkCreateInstance failed (no Vulkan driver?)");
    }
    if (debug) {
      auto create_messenger =
          load<PFN_vkCreateDebugUtilsMessengerEXT>(gipa_, instance_, "vkCreateDebugUtilsMessengerEXT");
      destroy_messenger_ =
          load<PFN_vkDestroyDebugUtilsMessengerEXT>(gipa_, instance_, "vkDestroyDebugUtilsMessengerEXT");
      VkDebugUtilsMessengerCreateInfoEXT standalone = messenger_info_;
      standalone.pNext = nullptr;
      if (create_messenger == nullptr || destroy_messenger_ == nullptr) {
        return error{errc::failed_precondition, "vulkan::context: no vkCreateDebugUtilsMessengerEXT"};
      }
      if (VkResult r = create_messenger(instance_, &standalone, nullptr, &messenger_); r != VK_SUCCESS) {
        messenger_ = VK_NULL_HANDLE;
        return to_status(r, "vulkan::context: vkCreateDebugUtilsMessengerEXT failed");
      }
    }
    return status{};
  }

  [[nodiscard]] bool suitable(const physical_device_info& d) const noexcept {
    return d.timeline_semaphore && d.family_with(options_.queue_flags).has_value();
  }

  status create_device() {
    const std::vector<physical_device_info> devices = describe(instance_, gipa_, options_.api_version);
    const physical_device_info* chosen = nullptr;
    if (options_.device_index.has_value()) {
      if (*options_.device_index >= devices.size()) {
        return error{errc::invalid_argument, "vulkan::context: device_index past the physical devices",
                     *options_.device_index};
      }
      chosen = &devices[*options_.device_index];
      if (!suitable(*chosen)) {
        return error{errc::failed_precondition,
                     "vulkan::context: the chosen physical device lacks timeline semaphores or a "
                     "queue family with queue_flags",
                     chosen->index};
      }
    } else {
      for (const physical_device_info& d : devices) {
        if (suitable(d) && options_.select(d)) {
          chosen = &d;
          break;
        }
      }
      if (chosen == nullptr) {
        return error{errc::failed_precondition,
                     "vulkan::context: no physical device with timeline semaphores and a queue "
                     "family with queue_flags was accepted by select"};
      }
    }
    chosen_ = *chosen;
    family_ = *chosen_.family_with(options_.queue_flags);
    queue_count_ = std::max<std::uint32_t>(
        1, std::min(options_.queue_count, chosen_.queue_families[family_].queueCount));
    synchronization2_ = options_.synchronization2 && chosen_.synchronization2;
    external_fd_ = options_.external_semaphore_fd && chosen_.external_semaphore_fd;

    std::vector<const char*> extensions;
    if (chosen_.api_version < VK_API_VERSION_1_2) extensions.push_back(VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME);
    if (synchronization2_ && chosen_.api_version < VK_API_VERSION_1_3) {
      extensions.push_back(VK_KHR_SYNCHRONIZATION_2_EXTENSION_NAME);
    }
    if (external_fd_) extensions.push_back(VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME);
    VkPhysicalDeviceSynchronization2Features sync2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SYNCHRONIZATION_2_FEATURES,
                                                   nullptr, VK_TRUE};
    VkPhysicalDeviceTimelineSemaphoreFeatures timeline{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES, synchronization2_ ? &sync2 : nullptr,
        VK_TRUE};
    const std::vector<float> priorities(queue_count_, 1.0f);
    const VkDeviceQueueCreateInfo queue_info{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, nullptr, 0, family_,
                                             queue_count_, priorities.data()};
    const VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                                  &timeline,
                                  0,
                                  1,
                                  &queue_info,
                                  0,
                                  nullptr,
                                  static_cast<std::uint32_t>(extensions.size()),
                                  extensions.data(),
                                  nullptr};
    auto create = load<PFN_vkCreateDevice>(gipa_, instance_, "vkCreateDevice");
    if (create == nullptr) return error{errc::failed_precondition, "vulkan::context: no vkCreateDevice"};
    if (VkResult r = create(static_cast<VkPhysicalDevice>(chosen_.handle), &info, nullptr, &device_);
        r != VK_SUCCESS) {
      device_ = VK_NULL_HANDLE;
      return to_status(r, "vulkan::context: vkCreateDevice failed");
    }
    return status{};
  }

  void destroy() noexcept {
    if (device_ != VK_NULL_HANDLE) {
      auto gdpa = load<PFN_vkGetDeviceProcAddr>(gipa_, instance_, "vkGetDeviceProcAddr");
      auto wait_idle = reinterpret_cast<PFN_vkDeviceWaitIdle>(gdpa(device_, "vkDeviceWaitIdle"));
      auto destroy_device = reinterpret_cast<PFN_vkDestroyDevice>(gdpa(device_, "vkDestroyDevice"));
      (void)wait_idle(device_);
      destroy_device(device_, nullptr);
      device_ = VK_NULL_HANDLE;
    }
    if (messenger_ != VK_NULL_HANDLE) {
      destroy_messenger_(instance_, messenger_, nullptr);
      messenger_ = VK_NULL_HANDLE;
    }
    if (instance_ != VK_NULL_HANDLE) {
      load<PFN_vkDestroyInstance>(gipa_, instance_, "vkDestroyInstance")(instance_, nullptr);
      instance_ = VK_NULL_HANDLE;
    }
  }

  context_options options_;
  status setup_{};
  PFN_vkGetInstanceProcAddr gipa_ = nullptr;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger_ = nullptr;
  VkDebugUtilsMessengerCreateInfoEXT messenger_info_{};
  physical_device_info chosen_{};
  std::uint32_t family_ = 0;
  std::uint32_t queue_count_ = 0;
  bool synchronization2_ = false;
  bool external_fd_ = false;
};

}  // namespace vulkan

CAUSAL_END_NAMESPACE
