// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// vulkan_layer_tsan: the ThreadSanitizer suppression for test binaries that
// load VK_LAYER_KHRONOS_validation (and the lavapipe driver).
//
// Why. The validation layer (Debian 12's build, not instrumented) runs
// threads of its own and synchronises them in ways TSan cannot see. Now and
// then (about one run in ten under load; CI's TSan step failed on it) TSan
// reported, with every frame of both stacks inside
// libVkLayer_khronos_validation.so: a lock-order cycle through three of the
// layer's locks, and a "race" between the layer's std::thread unlocking a
// rwlock and the main thread, inside vkDestroyDevice, deleting it.
// `called_from_lib` makes TSan ignore the interceptors (mutexes, malloc and
// free) called from that library alone: its internal locking is not ours
// to check, while every access our code makes (the debug messenger
// callbacks the layer calls included, which take our own locks) is still
// tracked, and a race or lock inversion in our code still fails the test.
// The same holds for Mesa's lavapipe driver (libvulkan_lvp.so, also
// uninstrumented): once a test draws, its llvmpipe rasterizer threads run,
// and TSan reported one of them locking a driver mutex against a driver
// thread destroying it, every frame inside the driver.
//
// Use: include in exactly one translation unit of a test binary (its main):
// this defines the function the TSan runtime looks up, so it must not be
// inline (an unused inline definition is never emitted). Unused without
// -fsanitize=thread.
//
// Both libraries are also opened here, before main, with RTLD_NODELETE, so
// they stay loaded after the Vulkan loader closes them (vkDestroyInstance):
// TSan aborts a run whose called_from_lib library is unloaded, and
// LeakSanitizer, scanning at exit, would no longer see the driver's
// globals, which alone keep its one-time state reachable, and report that
// state as leaked from an unknown module. Opening a library that is not
// installed does nothing (the test then skips for want of a device).
// Thread safety: the runtime calls the suppression function once, at
// start-up; the libraries are opened during static initialisation.
#pragma once

#include <dlfcn.h>

extern "C" const char* __tsan_default_suppressions();
extern "C" const char* __tsan_default_suppressions() {
  return "called_from_lib:libVkLayer_khronos_validation.so\n"
         "called_from_lib:libvulkan_lvp.so\n";
}

namespace causal::test {
[[maybe_unused]] static const bool vulkan_libraries_pinned = [] {
  dlopen("libvulkan_lvp.so", RTLD_NOW | RTLD_NODELETE);
  dlopen("libVkLayer_khronos_validation.so", RTLD_NOW | RTLD_NODELETE);
  return true;
}();
}  // namespace causal::test
