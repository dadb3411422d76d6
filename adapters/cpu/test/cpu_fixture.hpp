// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// The CPU adapter's conformance fixture (see test/conformance/
// queue_conformance.hpp for the interface): queues on an executor with
// `Workers` worker threads; operations append their tag to a log under a
// mutex, which is test bookkeeping, not part of the adapter. The executor
// and the queues are registered with the test watchdog (test/support/
// watchdog.hpp): a hung conformance case prints their state.
#pragma once

#include <causal/adapters/cpu/queue.hpp>
#include <causal/axis.hpp>
#include <causal/executor.hpp>
#include <causal/semaphore.hpp>

#include "watchdog.hpp"

#include <array>
#include <deque>
#include <memory>
#include <mutex>
#include <ostream>
#include <vector>

namespace causal_cpu_test {

template <std::uint32_t Workers>
class cpu_fixture {
 public:
  using queue_type = causal::cpu::queue;
  using semaphore_type = causal::semaphore;

  cpu_fixture() : executor_(causal::executor_options{.worker_count = Workers}) {}
  cpu_fixture(const cpu_fixture&) = delete;
  cpu_fixture& operator=(const cpu_fixture&) = delete;
  ~cpu_fixture() {
    // Queues first (they wait for their operations), then the semaphores
    // they signal, then the executor.
    queues_.clear();
  }

  bool available() const noexcept { return true; }

  queue_type& make_queue() {
    const causal::axis a = axes_.allocate(0, causal::domain::queue).value();
    queues_.push_back(std::make_unique<queue_type>(a, executor_));
    return *queues_.back();
  }

  semaphore_type& make_semaphore() { return semaphores_.emplace_back(); }

  causal::queue_operation op(int tag) {
    cpu_fixture* self = this;
    return causal::queue_operation::host([self, tag](const causal::host_call_context&) noexcept {
      std::lock_guard lock(self->log_mutex_);
      self->log_.push_back(tag);
    });
  }

  std::vector<int> log() {
    std::lock_guard lock(log_mutex_);
    return log_;
  }

  causal::status finish() {
    causal::status first{};
    for (auto& q : queues_) {
      causal::status s = q->wait_idle();
      if (!s && first) first = s;
    }
    return first;
  }

  void pump() noexcept {}

 private:
  /// What a watchdog dump prints for the queues (the executor describes
  /// itself): their processes' atomics. It walks queues_, so it is only
  /// sound while the test's thread is not adding one -- true of a dump at
  /// a stall, where that thread is blocked in a wait.
  struct queues_view {
    const cpu_fixture* self;
    void operator()(std::ostream& out) const {
      for (std::size_t i = 0; i < self->queues_.size(); ++i) {
        auto& qp = self->queues_[i]->queue_process();
        out << "queue " << i << ": " << qp.completed() << " operations completed; its process: ";
        qp.snapshot().describe(out);
        out << "\n";
      }
    }
  };

  causal::executor executor_;
  causal::test::watch_guard watched_executor_ = causal::test::watch(executor_, "fixture executor");
  causal::axis_allocator axes_;
  std::deque<semaphore_type> semaphores_;
  std::vector<std::unique_ptr<queue_type>> queues_;
  // After queues_: unregistered before the queues go.
  queues_view queues_view_{this};
  causal::test::watch_guard watched_queues_ = causal::test::watch_with("fixture queues", queues_view_);
  std::mutex log_mutex_;
  std::vector<int> log_;
};

}  // namespace causal_cpu_test
