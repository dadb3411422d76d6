// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// native_env: the real runtime for cuda_fixture. An operation logs its tag
// from a host function in stream order, into a fixed array with an atomic
// cursor (no lock, no runtime call: the host-function rule). Test code.
#pragma once

#include <causal/adapters/cuda/driver.hpp>

#include <array>
#include <atomic>
#include <deque>
#include <vector>

namespace causal_cuda_test {

class native_env {
 public:
  const causal::cuda::driver_table& table() { return causal::cuda::native_driver(); }

  int log_op(causal::cuda::api::stream_t s, int tag) {
    record& r = records_.emplace_back(record{this, tag});
    return causal::cuda::native_driver().launch_host_func(s, &on_run, &r);
  }
  void run() {}

  std::vector<int> logged() const {
    const std::size_t n = cursor_.load(std::memory_order_acquire);
    std::vector<int> out;
    for (std::size_t i = 0; i < n && i < tags_.size(); ++i) {
      out.push_back(tags_[i].load(std::memory_order_acquire));
    }
    return out;
  }

  struct log_view {
    const native_env* env;
    operator std::vector<int>() const { return env->logged(); }
  };

 private:
  struct record {
    native_env* env;
    int tag;
  };
  static void on_run(void* p) noexcept {
    auto* r = static_cast<record*>(p);
    const std::size_t i = r->env->cursor_.fetch_add(1, std::memory_order_acq_rel);
    if (i < r->env->tags_.size()) r->env->tags_[i].store(r->tag, std::memory_order_release);
  }

  std::deque<record> records_;
  std::array<std::atomic<int>, 4096> tags_{};
  std::atomic<std::size_t> cursor_{0};

 public:
  log_view log{this};
};

}  // namespace causal_cuda_test
