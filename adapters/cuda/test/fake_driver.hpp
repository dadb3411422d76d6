// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// fake_driver: a deterministic, single-threaded stand-in for a CUDA device,
// exposed as a causal::cuda::driver_table, so the adapter's host logic runs
// in tests on machines without a GPU.
//
// Each fake stream is a FIFO of commands (wait-value >=, write-value, event
// record, event wait, host function, test work). Nothing runs until run(),
// which executes every stream's head command that is ready, round-robin,
// until none is: a wait-value runs once its word is >= the value, an event
// wait once the record it captured (the event's latest record at the time
// of the wait, as CUDA specifies) has run. Words are plain host memory, as
// with mapped pinned memory. Every entry point counts its calls, and the
// next call of any one can be made to fail. Test-only code: it allocates
// freely.
#pragma once

#include <causal/adapters/cuda/driver.hpp>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace causal_cuda_test {

namespace api = causal::cuda::api;

/// Native codes the fake returns (values of cudaError_t where one exists).
inline constexpr int fake_error = 999;        ///< an injected failure
inline constexpr int fake_blocked = 998;      ///< synchronize on a stream that cannot finish
inline constexpr int fake_no_device = 100;    ///< cudaErrorNoDevice
inline constexpr int fake_out_of_memory = 2;  ///< cudaErrorMemoryAllocation

class fake_device {
 public:
  struct event {
    std::uint64_t recorded = 0;   // generation of the latest record call
    std::uint64_t completed = 0;  // generation of the latest record that ran
  };
  struct external {
    std::uint64_t value = 0;
    bool destroyed = false;
  };
  enum class kind { wait_value, write_value, record, wait_event, host_fn, work, wait_external,
                    signal_external };
  struct command {
    kind k = kind::work;
    std::uint64_t* word = nullptr;
    std::uint64_t value = 0;
    event* ev = nullptr;
    external* ext = nullptr;
    void (*fn)(void*) noexcept = nullptr;
    void* data = nullptr;
    std::function<void()> work;
  };
  struct stream {
    std::deque<command> commands;
    bool destroyed = false;
  };

  fake_device() { current() = this; }
  ~fake_device() {
    current() = nullptr;
    for (void* p : host_blocks_) std::free(p);
  }
  fake_device(const fake_device&) = delete;
  fake_device& operator=(const fake_device&) = delete;

  static fake_device*& current() {
    static fake_device* d = nullptr;
    return d;
  }

  // Configuration.
  int devices = 1;
  bool memory_ops = true;
  /// Makes the next call of `entry` (e.g. "wait_value64") fail.
  void fail_next(const std::string& entry) { fail_next_[entry] = true; }
  /// Calls of `entry` so far.
  int calls(const std::string& entry) const {
    auto it = calls_.find(entry);
    return it == calls_.end() ? 0 : it->second;
  }

  /// Runs ready commands until none is; returns how many ran.
  std::size_t run() {
    std::size_t ran = 0;
    for (bool progress = true; progress;) {
      progress = false;
      for (std::size_t i = 0; i < streams_.size(); ++i) {
        stream& s = *streams_[i];
        while (!s.destroyed && !s.commands.empty() && ready(s.commands.front())) {
          command c = std::move(s.commands.front());
          s.commands.pop_front();
          execute(c);
          ++ran;
          progress = true;
        }
      }
    }
    return ran;
  }

  /// Commands waiting on `s`.
  std::size_t pending(api::stream_t s) const { return as_stream(s)->commands.size(); }
  /// Enqueues test work on `s` (what a kernel would do, in stream order).
  void enqueue_work(api::stream_t s, std::function<void()> work) {
    command c;
    c.k = kind::work;
    c.work = std::move(work);
    as_stream(s)->commands.push_back(std::move(c));
  }
  external& external_at(std::size_t i) { return *externals_[i]; }
  std::size_t live_streams() const {
    std::size_t n = 0;
    for (const auto& s : streams_) n += s->destroyed ? 0 : 1;
    return n;
  }

  /// The driver table whose entries call into the current fake device.
  static const causal::cuda::driver_table& table() {
    static const causal::cuda::driver_table t = [] {
      causal::cuda::driver_table d;
      d.device_count = [](int* n) noexcept {
        if (self().enter("device_count")) return fake_error;
        *n = self().devices;
        return self().devices == 0 ? fake_no_device : 0;
      };
      d.set_device = [](int) noexcept { return self().enter("set_device") ? fake_error : 0; };
      d.mem_ops_64 = [](int, int* s) noexcept {
        *s = self().memory_ops ? 1 : 0;
        return self().enter("mem_ops_64") ? fake_error : 0;
      };
      d.device_name = [](int, char* name, std::size_t size) noexcept {
        std::strncpy(name, "fake device", size);
        return 0;
      };
      d.stream_create = [](api::stream_t* s) noexcept {
        if (self().enter("stream_create")) return fake_error;
        self().streams_.push_back(std::make_unique<stream>());
        *s = reinterpret_cast<api::stream_t>(self().streams_.back().get());
        return 0;
      };
      d.stream_destroy = [](api::stream_t s) noexcept {
        (void)self().enter("stream_destroy");
        as_stream(s)->destroyed = true;
        as_stream(s)->commands.clear();
        return 0;
      };
      d.stream_synchronize = [](api::stream_t s) noexcept {
        if (self().enter("stream_synchronize")) return fake_error;
        self().run();
        return as_stream(s)->commands.empty() ? 0 : fake_blocked;
      };
      d.event_create = [](api::event_t* e) noexcept {
        if (self().enter("event_create")) return fake_error;
        self().events_.push_back(std::make_unique<event>());
        *e = reinterpret_cast<api::event_t>(self().events_.back().get());
        return 0;
      };
      d.event_destroy = [](api::event_t) noexcept { return self().enter("event_destroy") ? fake_error : 0; };
      d.event_record = [](api::event_t e, api::stream_t s) noexcept {
        if (self().enter("event_record")) return fake_error;
        event* ev = reinterpret_cast<event*>(e);
        command c;
        c.k = kind::record;
        c.ev = ev;
        c.value = ++ev->recorded;
        as_stream(s)->commands.push_back(std::move(c));
        return 0;
      };
      d.stream_wait_event = [](api::stream_t s, api::event_t e) noexcept {
        if (self().enter("stream_wait_event")) return fake_error;
        event* ev = reinterpret_cast<event*>(e);
        command c;
        c.k = kind::wait_event;
        c.ev = ev;
        c.value = ev->recorded;  // the latest record at the time of the call
        as_stream(s)->commands.push_back(std::move(c));
        return 0;
      };
      d.wait_value64 = [](api::stream_t s, std::uint64_t* w, std::uint64_t v) noexcept {
        if (self().enter("wait_value64")) return fake_error;
        if (!self().memory_ops) return 801;  // cudaErrorNotSupported
        command c;
        c.k = kind::wait_value;
        c.word = w;
        c.value = v;
        as_stream(s)->commands.push_back(std::move(c));
        return 0;
      };
      d.write_value64 = [](api::stream_t s, std::uint64_t* w, std::uint64_t v) noexcept {
        if (self().enter("write_value64")) return fake_error;
        if (!self().memory_ops) return 801;
        command c;
        c.k = kind::write_value;
        c.word = w;
        c.value = v;
        as_stream(s)->commands.push_back(std::move(c));
        return 0;
      };
      d.launch_host_func = [](api::stream_t s, void (*fn)(void*) noexcept, void* data) noexcept {
        if (self().enter("launch_host_func")) return fake_error;
        command c;
        c.k = kind::host_fn;
        c.fn = fn;
        c.data = data;
        as_stream(s)->commands.push_back(std::move(c));
        return 0;
      };
      d.host_alloc_mapped = [](void** h, std::size_t bytes) noexcept {
        if (self().enter("host_alloc_mapped")) return fake_out_of_memory;
        *h = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
        self().host_blocks_.push_back(*h);
        return 0;
      };
      d.host_free = [](void* h) noexcept {
        (void)self().enter("host_free");
        auto& b = self().host_blocks_;
        for (auto it = b.begin(); it != b.end(); ++it) {
          if (*it == h) {
            std::free(h);
            b.erase(it);
            break;
          }
        }
        return 0;
      };
      d.host_device_pointer = [](void** dev, void* h) noexcept {
        *dev = h;  // one address space, as with UVA
        return self().enter("host_device_pointer") ? fake_error : 0;
      };
      d.pool_create = [](api::mem_pool_t* p, int) noexcept {
        if (self().enter("pool_create")) return fake_error;
        *p = reinterpret_cast<api::mem_pool_t>(&self().pool_token_);
        return 0;
      };
      d.pool_destroy = [](api::mem_pool_t) noexcept { return self().enter("pool_destroy") ? fake_error : 0; };
      d.malloc_from_pool_async = [](void** p, std::size_t bytes, api::mem_pool_t, api::stream_t) noexcept {
        if (self().enter("malloc_from_pool_async")) return fake_out_of_memory;
        *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
        self().host_blocks_.push_back(*p);
        return 0;
      };
      d.free_async = [](void* p, api::stream_t) noexcept {
        (void)self().enter("free_async");
        auto& b = self().host_blocks_;
        for (auto it = b.begin(); it != b.end(); ++it) {
          if (*it == p) {
            std::free(p);
            b.erase(it);
            break;
          }
        }
        return 0;
      };
      d.import_timeline_fd = [](api::external_semaphore_t* out, int) noexcept {
        if (self().enter("import_timeline_fd")) return fake_error;
        self().externals_.push_back(std::make_unique<external>());
        *out = reinterpret_cast<api::external_semaphore_t>(self().externals_.back().get());
        return 0;
      };
      d.destroy_external_semaphore = [](api::external_semaphore_t e) noexcept {
        (void)self().enter("destroy_external_semaphore");
        reinterpret_cast<external*>(e)->destroyed = true;
        return 0;
      };
      d.signal_external = [](api::external_semaphore_t e, std::uint64_t v, api::stream_t s) noexcept {
        if (self().enter("signal_external")) return fake_error;
        command c;
        c.k = kind::signal_external;
        c.ext = reinterpret_cast<external*>(e);
        c.value = v;
        as_stream(s)->commands.push_back(std::move(c));
        return 0;
      };
      d.wait_external = [](api::external_semaphore_t e, std::uint64_t v, api::stream_t s) noexcept {
        if (self().enter("wait_external")) return fake_error;
        command c;
        c.k = kind::wait_external;
        c.ext = reinterpret_cast<external*>(e);
        c.value = v;
        as_stream(s)->commands.push_back(std::move(c));
        return 0;
      };
      d.error_string = [](int) noexcept { return "fake device error"; };
      return d;
    }();
    return t;
  }

 private:
  static fake_device& self() { return *current(); }
  static stream* as_stream(api::stream_t s) { return reinterpret_cast<stream*>(s); }

  // Counts the call; true when it must fail.
  bool enter(const char* entry) {
    ++calls_[entry];
    auto it = fail_next_.find(entry);
    if (it == fail_next_.end() || !it->second) return false;
    it->second = false;
    return true;
  }

  static std::uint64_t load(const std::uint64_t* w) {
    return std::atomic_ref<std::uint64_t>(*const_cast<std::uint64_t*>(w)).load(std::memory_order_relaxed);
  }

  bool ready(const command& c) const {
    switch (c.k) {
      case kind::wait_value: return load(c.word) >= c.value;
      case kind::wait_event: return c.ev->completed >= c.value;
      case kind::wait_external: return c.ext->value >= c.value;
      default: return true;
    }
  }

  void execute(command& c) {
    switch (c.k) {
      case kind::write_value:
        // A device store: no max, exactly like cuStreamWriteValue64.
        std::atomic_ref<std::uint64_t>(*c.word).store(c.value, std::memory_order_relaxed);
        break;
      case kind::record: c.ev->completed = c.value; break;
      case kind::host_fn: c.fn(c.data); break;
      case kind::work: c.work(); break;
      case kind::signal_external: c.ext->value = c.value; break;
      case kind::wait_value:
      case kind::wait_event:
      case kind::wait_external: break;
    }
  }

  std::vector<std::unique_ptr<stream>> streams_;
  std::vector<std::unique_ptr<event>> events_;
  std::vector<std::unique_ptr<external>> externals_;
  std::vector<void*> host_blocks_;
  std::map<std::string, int> calls_;
  std::map<std::string, bool> fail_next_;
  int pool_token_ = 0;
};

}  // namespace causal_cuda_test
