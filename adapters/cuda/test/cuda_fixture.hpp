// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// The CUDA adapter's conformance fixture (interface: test/conformance/
// queue_conformance.hpp), over an environment `Env` that supplies the
// driver table and a way to log an operation when it runs on the stream:
// fake_env (the fake device, runs everywhere) or native_env (a real GPU).
#pragma once

#include <causal/adapters/cuda/device.hpp>
#include <causal/adapters/cuda/semaphore.hpp>
#include <causal/adapters/cuda/stream_queue.hpp>
#include <causal/axis.hpp>

#include "fake_driver.hpp"

#include <deque>
#include <memory>
#include <vector>

namespace causal_cuda_test {

/// The fake device; operations log their tag as stream work.
class fake_env {
 public:
  const causal::cuda::driver_table& table() { return fake_device::table(); }
  int log_op(api::stream_t s, int tag) {
    device.enqueue_work(s, [this, tag] { log.push_back(tag); });
    return 0;
  }
  void run() { device.run(); }

  fake_device device;
  std::vector<int> log;
};

template <class Env, causal::cuda::sync_mode Mode = causal::cuda::sync_mode::memory_ops>
class cuda_fixture {
 public:
  using queue_type = causal::cuda::basic_stream_queue<Mode>;
  using semaphore_type = causal::cuda::semaphore;

  cuda_fixture() : ctx_(env_.table()) {}
  ~cuda_fixture() {
    // Queues first (they synchronise and release their events), then the
    // semaphores, then the device context (declared before them).
    queues_.clear();
    semaphores_.clear();
  }

  bool available() const noexcept { return static_cast<bool>(ctx_.setup_status()); }

  queue_type& make_queue() {
    const causal::axis a = axes_.allocate(0, causal::domain::queue).value();
    queues_.push_back(std::make_unique<queue_type>(a, ctx_));
    return *queues_.back();
  }

  semaphore_type& make_semaphore() { return semaphores_.emplace_back(ctx_); }

  causal::cuda::stream_operation op(int tag) {
    return causal::cuda::stream_operation{&launch, this, static_cast<std::uint64_t>(tag), "op"};
  }

  std::vector<int> log() { return env_.log; }

  causal::status finish() {
    pump();
    causal::status first{};
    for (auto& q : queues_) {
      causal::status s = q->synchronize();
      if (!s && first) first = s;
    }
    return first;
  }

  void pump() {
    for (int round = 0; round < 3; ++round) {
      env_.run();
      for (auto& q : queues_) (void)q->pump();
    }
  }

  Env& env() noexcept { return env_; }
  causal::cuda::device_context& context() noexcept { return ctx_; }

 private:
  static int launch(api::stream_t s, void* self, std::uint64_t tag) noexcept {
    return static_cast<cuda_fixture*>(self)->env_.log_op(s, static_cast<int>(tag));
  }

  Env env_;
  causal::cuda::device_context ctx_;
  causal::axis_allocator axes_;
  std::deque<semaphore_type> semaphores_;
  std::vector<std::unique_ptr<queue_type>> queues_;
};

}  // namespace causal_cuda_test
