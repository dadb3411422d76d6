// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Lifetimes on a real Vulkan driver (docs/lifetimes.md, the device
// adapters' table): a vulkan::device, two causal queues sharing its one
// vk::Queue and three semaphores, with batches held on the host behind a
// value no one has signalled yet, destroyed in every order (device last)
// and in orders that put the device first. Each order runs in a child
// process that makes its own Vulkan instance and device (the parent makes
// none, so nothing of a driver's threads is forked), and ends as the
// documented rules, written below as a model, predict: a clean exit with no
// validation error, or a refusal that names what is still alive.
//
// Forking tests are skipped under ThreadSanitizer (child_process.hpp).

#include <causal/adapters/vulkan/device.hpp>
#include <causal/adapters/vulkan/queue.hpp>
#include <causal/adapters/vulkan/semaphore.hpp>
#include <causal/axis.hpp>

#include "catch.hpp"
#include "catch_session.hpp"
#include "child_process.hpp"
#include "destruction_orders.hpp"
#include "skip.hpp"
#include "vk_harness.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using causal_test::child_outcome;
using causal_test::contains;
using causal_test::run_child;

// Exit codes of a child that could not run its order at all.
constexpr int exit_no_vulkan = 77;
constexpr int exit_setup_failed = 4;
constexpr int exit_validation_error = 5;

// The device is destroyed last in the permutation test (fixed tail).
enum object : int { obj_gate, obj_mid, obj_out, obj_first, obj_second, obj_device, obj_count };
enum class verdict { clean, device_refused, semaphore_refused };
using order_type = causal_test::destruction_order<obj_count>;

constexpr std::array<const char*, obj_count> object_names{"gate",        "mid",          "out",
                                                         "first queue", "second queue", "device"};

/// What docs/lifetimes.md says happens when the objects go in `order`; the
/// gate is signalled from the host just before step `signal_at` if it is
/// alive then (obj_count: never).
///   first queue:  waits gate >= 1, signals mid = 1 -- held on the host
///                 until the gate's signal is sent;
///   second queue: waits mid >= 1, signals out = 1 -- held behind it.
/// A queue destroyed with a held batch drops it and fails its signals; a
/// batch held behind a failed value drops too. A semaphore a held batch
/// names refuses to go; so does a device with members.
verdict predict(const order_type& order, int signal_at) {
  std::array<bool, obj_count> alive{};
  alive.fill(true);
  bool signalled = false;
  for (int step = 0; step < obj_count; ++step) {
    if (step == signal_at && alive[obj_gate]) signalled = true;
    const bool first_held = alive[obj_first] && !signalled;
    const bool second_held = alive[obj_second] && first_held;
    const int o = order[static_cast<std::size_t>(step)];
    switch (o) {
      case obj_device:
        for (int other = 0; other < obj_count; ++other) {
          if (other != obj_device && alive[static_cast<std::size_t>(other)]) {
            return verdict::device_refused;
          }
        }
        break;
      case obj_gate:
        if (first_held) return verdict::semaphore_refused;
        break;
      case obj_mid:
        if (first_held || second_held) return verdict::semaphore_refused;
        break;
      case obj_out:
        if (second_held) return verdict::semaphore_refused;
        break;
      default:
        break;
    }
    alive[static_cast<std::size_t>(o)] = false;
  }
  return verdict::clean;
}

/// The child's side: makes the objects, submits, destroys them in `order`.
void run_order(const order_type& order, int signal_at) {
  std::string why;
  auto h = causal_vk_test::harness::create(causal_vk_test::harness_options{}, why);
  if (!h) _exit(exit_no_vulkan);
  {
    std::optional<causal::vulkan::device> dev;
    dev.emplace(h->instance, h->physical, h->device, h->context().options_for_device());
    if (!dev->setup_status()) _exit(exit_setup_failed);
    causal::vulkan::hardware_queue* hw = dev->get_hardware_queue(h->family, 0).value();
    causal::axis_allocator axes;
    std::optional<causal::vulkan::semaphore> gate, mid, out;
    std::optional<causal::vulkan::queue> first, second;
    gate.emplace(*dev);
    mid.emplace(*dev);
    out.emplace(*dev);
    first.emplace(*dev, *hw, axes.allocate(0, causal::domain::queue).value());
    second.emplace(*dev, *hw, axes.allocate(0, causal::domain::queue).value());
    if (!first->submit({{&*gate, 1}}, {{&*mid, 1}}, causal::vulkan::command_list{}) ||
        !second->submit({{&*mid, 1}}, {{&*out, 1}}, causal::vulkan::command_list{}) ||
        first->held_count() != 1 || second->held_count() != 1) {
      _exit(exit_setup_failed);
    }
    // Once the gate is signalled the batches are sent: wait (on events,
    // with a generous bound) until the device has run them, so that the
    // order's later steps meet the state the model assumes.
    auto settle = [&] {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      if (first) (void)first->wait_idle(deadline);
      if (second && (!first || !first->held_count())) (void)second->wait_idle(deadline);
    };
    for (int step = 0; step < obj_count; ++step) {
      if (step == signal_at && gate) {
        if (!gate->signal(1)) _exit(exit_setup_failed);
        settle();
      }
      switch (order[static_cast<std::size_t>(step)]) {
        case obj_device: dev.reset(); break;
        case obj_gate: gate.reset(); break;
        case obj_mid: mid.reset(); break;
        case obj_out: out.reset(); break;
        case obj_first: first.reset(); break;
        case obj_second: second.reset(); break;
        default: break;
      }
    }
  }
  const int errors = causal_vk_test::validation_error_count().load();
  h.reset();
  if (errors != 0 || causal_vk_test::validation_error_count().load() != 0) _exit(exit_validation_error);
}

child_outcome check_order(const order_type& order, int signal_at) {
  const verdict expected = predict(order, signal_at);
  const child_outcome out = run_child([&] { run_order(order, signal_at); });
  INFO("order: " << causal_test::describe_order(order, object_names) << "; gate signalled before step "
                 << signal_at);
  INFO("stderr: " << out.stderr_text);
  switch (expected) {
    case verdict::clean:
      CHECK(out.exit_code == 0);
      CHECK_FALSE(contains(out.stderr_text, "causal:"));
      break;
    case verdict::device_refused:
      CHECK(out.aborted);
      CHECK(contains(out.stderr_text, "causal: vulkan::device destroyed while"));
      break;
    case verdict::semaphore_refused:
      CHECK(out.aborted);
      CHECK(contains(out.stderr_text, "causal: vulkan::semaphore (host value 0) destroyed while"));
      CHECK(contains(out.stderr_text, "held on the host"));
      break;
  }
  return out;
}

}  // namespace

TEST_CASE("vulkan: every destruction order of queues holding batches ends as documented",
          "[vulkan][lifetime]") {
  CAUSAL_TEST_NEEDS_FORK();
  // The device last: 120 orders of the others, each with the gate
  // signalled before a step drawn at random (or never).
  std::mt19937 rng(20261128);
  int clean = 0;
  const int runs = causal_test::for_each_destruction_order<obj_count>(1, [&](const order_type& order) {
    const int signal_at = static_cast<int>(rng() % obj_count);  // obj_count - 1: the device's step
    (void)check_order(order, signal_at);
    clean += predict(order, signal_at) == verdict::clean ? 1 : 0;
  });
  CHECK(runs == 120);
  CHECK(clean > 0);
  CHECK(clean < runs);  // both outcomes are exercised
}

TEST_CASE("vulkan: a device destroyed before its members is refused and counts them",
          "[vulkan][lifetime]") {
  CAUSAL_TEST_NEEDS_FORK();
  const order_type order{obj_first, obj_second, obj_device, obj_gate, obj_mid, obj_out};
  // The gate signalled first: nothing is held, the device still refuses.
  const child_outcome out = check_order(order, 0);
  CHECK(contains(out.stderr_text, "0 queue(s) and 3 semaphore(s) still use it"));
  const order_type device_first{obj_device, obj_first, obj_second, obj_gate, obj_mid, obj_out};
  (void)check_order(device_first, obj_count);
}

TEST_CASE("vulkan: a queue destroyed with held batches drops the ones held behind it at once",
          "[vulkan][lifetime]") {
  CAUSAL_TEST_NEEDS_FORK();
  // Without the kick in ~queue, the second queue's batch would stay held
  // (behind a failed value) and `out` would refuse to go.
  const order_type order{obj_first, obj_out, obj_mid, obj_gate, obj_second, obj_device};
  REQUIRE(predict(order, obj_count) == verdict::clean);
  (void)check_order(order, obj_count);
}

int main(int argc, char* argv[]) {
  // The parent makes no Vulkan objects: probe in a child whether this
  // machine can run the tests at all (before Catch2 runs: no REQUIRE here).
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    std::string why;
    auto h = causal_vk_test::harness::create(causal_vk_test::harness_options{}, why);
    if (!h) {
      std::fprintf(stderr, "vulkan_lifetime_test: %s\n", why.c_str());
      _exit(exit_no_vulkan);
    }
    h.reset();
    _exit(0);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    causal::test::skip_binary("this machine cannot make a Vulkan device (see the probe's message)");
  }
  return causal::test::run_catch_session(argc, argv);
}
