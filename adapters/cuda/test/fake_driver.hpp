// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// fake_driver: a deterministic stand-in for a CUDA device, exposed as a
// causal::cuda::driver_table, so the adapter's host logic runs in tests on
// machines without a GPU.
//
// Each fake stream is a FIFO of commands (wait-value >=, write-value, event
// record, event wait, host function, test work). Nothing runs until run(),
// which executes every stream's head command that is ready, round-robin,
// until none is and no host function is running: a wait-value runs once
// the word passes the value by
// CUDA's GEQ rule, the signed cyclic compare (int64_t)(word - value) >= 0,
// an event wait once the record it captured (the event's latest record at
// the time of the wait, as CUDA specifies) has run. Words are plain host
// memory, as with mapped pinned memory.
//
// Faithful where the adapter's safety depends on it:
//   - stream_destroy returns at once and the stream keeps its queued
//     commands: run() still executes them (cudaStreamDestroy does not
//     drain or cancel);
//   - stream_synchronize blocks while a command cannot run, running the
//     streams and rechecking until it can (another thread may release a
//     word); `sync_hang_guard` only bounds a test that would hang, then it
//     answers fake_blocked and counts blocked_syncs();
//   - a word command whose word lies in memory already freed with
//     host_free is never executed: it is counted (freed_word_accesses())
//     and dropped, so a test sees a use after free instead of causing one;
//   - streams and events belong to the calling thread's current device
//     (set_device / get_device are per thread, as in CUDA);
//   - errors can be sticky (make_sticky): every later call fails with the
//     same status, synchronize, destroy and free included (their handles
//     are released all the same), and nothing runs any more, as after a
//     device fault;
//   - host functions run on the fake's callback thread, one at a time, in
//     the order their streams reach them (cudaLaunchHostFunc runs them on
//     a runtime thread): the stream, and the hardware queue it shares,
//     waits for the function to return, while run() goes on with the other
//     hardware queues. run() returns only once no host function is
//     running, so a test that calls it sees every function it started
//     finished (a host function that waits for the caller of run() would
//     hang it, as it would hang cudaStreamSynchronize). A runtime call
//     from a host function is counted (runtime_calls_from_host_functions());
//   - an imported external semaphore's wait or signal that reaches the
//     stream after the import was destroyed is counted
//     (destroyed_external_uses()) and dropped;
//   - free_async is stream-ordered: the memory goes when its stream
//     reaches the free, so a free not ordered after the work that uses
//     the memory shows (live());
//   - streams beyond `connections` share hardware queues round-robin, and
//     each hardware queue runs its streams' commands in enqueue order, so
//     a wait at the head blocks later work of other streams on it.
// Every entry point counts its calls, and the next call of any one can be
// made to fail; after_next(entry, fn) runs fn inside the adapter's next
// call of entry (a window between two adapter calls, without threads;
// event_record, stream_wait_event and free_async offer it). Test-only
// code: it allocates freely. Entry points are meant for one thread at a
// time (plus the callback thread, which only runs host functions); words
// may be written from any thread.
#pragma once

#include <causal/adapters/cuda/driver.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace causal_cuda_test {

namespace api = causal::cuda::api;

/// Native codes the fake returns (values of cudaError_t where one exists).
inline constexpr int fake_error = 999;        ///< an injected failure
inline constexpr int fake_blocked = 998;      ///< synchronize on a stream that cannot finish
inline constexpr int fake_no_device = 100;    ///< cudaErrorNoDevice
inline constexpr int fake_out_of_memory = 2;  ///< cudaErrorMemoryAllocation
inline constexpr int fake_insufficient_driver = 35;  ///< cudaErrorInsufficientDriver
inline constexpr int fake_invalid_device = 101;      ///< cudaErrorInvalidDevice

class fake_device {
 public:
  struct event {
    std::uint64_t recorded = 0;   // generation of the latest record call
    std::uint64_t completed = 0;  // generation of the latest record that ran
    int device = 0;               // the current device when it was created
  };
  struct external {
    std::uint64_t value = 0;
    bool destroyed = false;
  };
  enum class kind { wait_value, write_value, record, wait_event, host_fn, work, wait_external,
                    signal_external, free_block };
  struct command {
    kind k = kind::work;
    std::uint64_t* word = nullptr;
    std::uint64_t value = 0;
    event* ev = nullptr;
    external* ext = nullptr;
    void (*fn)(void*) noexcept = nullptr;
    void* data = nullptr;
    std::function<void()> work;
    std::shared_ptr<std::atomic<bool>> done;  // host_fn: set by the callback thread once run
    std::uint64_t order = 0;  // enqueue order, across streams (hardware queues are FIFO)
  };
  struct stream {
    std::deque<command> commands;
    bool destroyed = false;
    int device = 0;               // the current device when it was created
    std::size_t connection = 0;   // the hardware queue it is multiplexed onto
  };

  fake_device() { current() = this; }
  ~fake_device() {
    // run() never returns with a host function running, so the callback
    // thread is idle here.
    if (callback_thread_.joinable()) {
      {
        std::lock_guard<std::mutex> lock(callback_mutex_);
        callback_stop_ = true;
      }
      callback_cv_.notify_all();
      callback_thread_.join();
    }
    current() = nullptr;
    for (const block& b : host_blocks_) std::free(b.base);
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
  /// Hardware queues streams are multiplexed onto, round-robin by creation
  /// (CUDA_DEVICE_MAX_CONNECTIONS, default 8). Set before creating streams.
  int connections = 8;
  /// The UUID device_uuid reports for `ordinal`: uuid_prefix, then the
  /// ordinal in the last byte (so every fake device has its own).
  std::array<std::uint8_t, 16> uuid_prefix{0xfa, 0xce, 0xc0, 0xda, 1, 2, 3, 4,
                                           5, 6, 7, 8, 9, 10, 11, 0};
  std::array<std::uint8_t, 16> uuid_of(int ordinal) const {
    std::array<std::uint8_t, 16> u = uuid_prefix;
    u[15] = static_cast<std::uint8_t>(ordinal);
    return u;
  }
  /// When nonzero, device_count answers this status (e.g. 35,
  /// cudaErrorInsufficientDriver) instead of counting.
  int device_count_status = 0;
  /// How long stream_synchronize waits for a command that cannot run
  /// before it gives up (a hang guard for tests, never a timing).
  std::chrono::milliseconds sync_hang_guard{10000};
  /// Makes the next call of `entry` (e.g. "wait_value64") fail.
  void fail_next(const std::string& entry) { fail_in_[entry] = 1; }
  /// Makes every later call fail with `code` (a sticky error such as
  /// cudaErrorIllegalAddress, 700): the context is unusable for good.
  void make_sticky(int code) { sticky_ = code; }
  /// The status a failing call answers: the sticky error if set, else `code`.
  int code_or(int code) const { return sticky_ != 0 ? sticky_ : code; }
  /// Makes the `n`-th next call of `entry` fail (1: the next one).
  void fail_nth(const std::string& entry, int n) { fail_in_[entry] = n; }
  /// Runs `fn` once, right after the next successful call of `entry`
  /// returns to the fake (inside the adapter's call, before the adapter
  /// sees the result): a test steps into a window between two of the
  /// adapter's calls, deterministically, on its own thread.
  void after_next(const std::string& entry, std::function<void()> fn) { after_[entry] = std::move(fn); }
  /// Whether `p` lies in memory from host_alloc_mapped or
  /// malloc_from_pool_async that is not freed yet (a stream-ordered
  /// free_async frees it when the stream reaches it).
  bool live(const void* p) const { return word_live(static_cast<const std::uint64_t*>(p)); }
  /// Calls of `entry` so far.
  int calls(const std::string& entry) const {
    auto it = calls_.find(entry);
    return it == calls_.end() ? 0 : it->second;
  }

  /// Runs ready commands (of destroyed streams too) until none is and no
  /// host function is running; returns how many ran. Each hardware queue
  /// (connection) runs the commands of its streams in enqueue order: a
  /// command that is not ready holds back every later command of every
  /// stream on that connection (head-of-line blocking), and so does a
  /// host function until it returns on the callback thread; the other
  /// connections go on meanwhile. A faulted device (make_sticky) runs
  /// nothing.
  std::size_t run() {
    std::size_t ran = 0;
    if (sticky_ != 0) return 0;
    for (bool progress = true; progress;) {
      progress = false;
      const std::size_t lanes = connections < 1 ? 1 : static_cast<std::size_t>(connections);
      for (std::size_t lane = 0; lane < lanes; ++lane) {
        for (;;) {
          stream* head = nullptr;  // the stream whose front command is oldest on this lane
          for (const auto& s : streams_) {
            if (s->connection != lane || s->commands.empty()) continue;
            if (head == nullptr || s->commands.front().order < head->commands.front().order) {
              head = s.get();
            }
          }
          if (head == nullptr) break;
          command& front = head->commands.front();
          if (front.k == kind::host_fn) {
            // Handed to the callback thread once; the lane waits for it.
            if (!front.done) front.done = dispatch_host_function(front.fn, front.data);
            // acquire: pairs with the callback thread's release store, so
            // what the function wrote is visible to what runs after it.
            if (!front.done->load(std::memory_order_acquire)) break;
            head->commands.pop_front();
            ++ran;
            progress = true;
            continue;
          }
          if (!ready(front)) break;
          command c = std::move(front);
          head->commands.pop_front();
          execute(c);
          ++ran;
          progress = true;
        }
      }
      // Nothing else can run: wait for the host functions still running,
      // whose streams then go on.
      if (!progress && wait_for_host_functions()) progress = true;
    }
    return ran;
  }

  /// Commands waiting on `s`.
  std::size_t pending(api::stream_t s) const { return as_stream(s)->commands.size(); }
  /// Commands still queued, on every stream (destroyed ones included).
  std::size_t pending_everywhere() const {
    std::size_t n = 0;
    for (const auto& s : streams_) n += s->commands.size();
    return n;
  }
  /// Queued wait-value / write-value commands on `word`, on every stream.
  std::size_t commands_on(const std::uint64_t* word) const {
    std::size_t n = 0;
    for (const auto& s : streams_) {
      for (const command& c : s->commands) n += c.word == word ? 1 : 0;
    }
    return n;
  }
  /// Word commands that found their word freed (see the file comment).
  std::size_t freed_word_accesses() const { return freed_word_accesses_; }
  /// External-semaphore waits and signals that reached the stream after
  /// their imported semaphore was destroyed (counted and dropped).
  std::size_t destroyed_external_uses() const { return destroyed_external_uses_; }
  /// How many different host functions launch_host_func was given.
  std::size_t distinct_host_functions() const { return host_fns_seen_.size(); }
  /// Runtime calls made from inside a host function (CUDA forbids them).
  std::size_t runtime_calls_from_host_functions() const {
    return runtime_calls_from_host_functions_;
  }
  /// The thread host functions run on (a default id until one has run).
  std::thread::id callback_thread_id() {
    std::lock_guard<std::mutex> lock(callback_mutex_);
    return callback_thread_id_;
  }
  /// stream_synchronize calls that gave up at the hang guard.
  std::size_t blocked_syncs() const { return blocked_syncs_; }
  /// The device `s` / `e` was created on.
  int stream_device(api::stream_t s) const { return as_stream(s)->device; }
  int event_device(api::event_t e) const { return reinterpret_cast<const event*>(e)->device; }
  /// The current device at the latest stream creation / semaphore import.
  int last_stream_device() const { return streams_.empty() ? -1 : streams_.back()->device; }
  int last_import_device() const { return last_import_device_; }
  /// Enqueues test work on `s` (what a kernel would do, in stream order).
  void enqueue_work(api::stream_t s, std::function<void()> work) {
    command c;
    c.k = kind::work;
    c.work = std::move(work);
    self().push(s, std::move(c));
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
        if (self().enter("device_count")) return self().code_or(fake_error);
        *n = 0;
        if (self().device_count_status != 0) return self().device_count_status;
        *n = self().devices;
        return self().devices == 0 ? fake_no_device : 0;
      };
      d.set_device = [](int o) noexcept {
        if (self().enter("set_device")) return self().code_or(fake_error);
        if (o < 0 || o >= self().devices) return fake_invalid_device;
        thread_device() = o;
        return 0;
      };
      d.get_device = [](int* o) noexcept {
        (void)self().enter("get_device");
        *o = thread_device();
        return 0;
      };
      d.mem_ops_64 = [](int, int* s) noexcept {
        *s = self().memory_ops ? 1 : 0;
        return self().enter("mem_ops_64") ? self().code_or(fake_error) : 0;
      };
      d.device_name = [](int, char* name, std::size_t size) noexcept {
        std::strncpy(name, "fake device", size);
        return 0;
      };
      d.device_uuid = [](int o, std::uint8_t* uuid) noexcept {
        if (self().enter("device_uuid")) return self().code_or(fake_error);
        if (o < 0 || o >= self().devices) return fake_invalid_device;
        const std::array<std::uint8_t, 16> u = self().uuid_of(o);
        std::memcpy(uuid, u.data(), u.size());
        return 0;
      };
      d.stream_create = [](api::stream_t* s) noexcept {
        if (self().enter("stream_create")) return self().code_or(fake_error);
        self().streams_.push_back(std::make_unique<stream>());
        self().streams_.back()->device = thread_device();
        const std::size_t lanes =
            self().connections < 1 ? 1 : static_cast<std::size_t>(self().connections);
        self().streams_.back()->connection = (self().streams_.size() - 1) % lanes;
        *s = reinterpret_cast<api::stream_t>(self().streams_.back().get());
        return 0;
      };
      d.stream_destroy = [](api::stream_t s) noexcept {
        // Returns at once; queued commands still run (CUDA's rule). A
        // faulted context answers its sticky error (the handle is gone
        // either way).
        const bool failing = self().enter("stream_destroy");
        as_stream(s)->destroyed = true;
        return failing ? self().code_or(fake_error) : 0;
      };
      d.stream_synchronize = [](api::stream_t s) noexcept {
        if (self().enter("stream_synchronize")) return self().code_or(fake_error);
        const auto give_up = std::chrono::steady_clock::now() + self().sync_hang_guard;
        for (;;) {
          self().run();
          if (as_stream(s)->commands.empty()) return 0;
          if (std::chrono::steady_clock::now() >= give_up) {
            ++self().blocked_syncs_;
            return fake_blocked;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      };
      d.event_create = [](api::event_t* e) noexcept {
        if (self().enter("event_create")) return self().code_or(fake_error);
        self().events_.push_back(std::make_unique<event>());
        self().events_.back()->device = thread_device();
        *e = reinterpret_cast<api::event_t>(self().events_.back().get());
        return 0;
      };
      d.event_destroy = [](api::event_t) noexcept { return self().enter("event_destroy") ? self().code_or(fake_error) : 0; };
      d.event_record = [](api::event_t e, api::stream_t s) noexcept {
        if (self().enter("event_record")) return self().code_or(fake_error);
        event* ev = reinterpret_cast<event*>(e);
        command c;
        c.k = kind::record;
        c.ev = ev;
        c.value = ++ev->recorded;
        self().push(s, std::move(c));
        self().fire_after("event_record");
        return 0;
      };
      d.stream_wait_event = [](api::stream_t s, api::event_t e) noexcept {
        if (self().enter("stream_wait_event")) return self().code_or(fake_error);
        event* ev = reinterpret_cast<event*>(e);
        command c;
        c.k = kind::wait_event;
        c.ev = ev;
        c.value = ev->recorded;  // the latest record at the time of the call
        self().push(s, std::move(c));
        self().fire_after("stream_wait_event");
        return 0;
      };
      d.wait_value64 = [](api::stream_t s, std::uint64_t* w, std::uint64_t v) noexcept {
        if (self().enter("wait_value64")) return self().code_or(fake_error);
        if (!self().memory_ops) return 801;  // cudaErrorNotSupported
        command c;
        c.k = kind::wait_value;
        c.word = w;
        c.value = v;
        self().push(s, std::move(c));
        return 0;
      };
      d.write_value64 = [](api::stream_t s, std::uint64_t* w, std::uint64_t v) noexcept {
        if (self().enter("write_value64")) return self().code_or(fake_error);
        if (!self().memory_ops) return 801;
        command c;
        c.k = kind::write_value;
        c.word = w;
        c.value = v;
        self().push(s, std::move(c));
        return 0;
      };
      d.write_values64 = [](api::stream_t s, std::uint64_t* const* w, const std::uint64_t* v,
                            std::size_t n) noexcept {
        if (self().enter("write_values64")) return self().code_or(fake_error);
        if (!self().memory_ops) return 801;
        for (std::size_t i = 0; i < n; ++i) {
          command c;
          c.k = kind::write_value;
          c.word = w[i];
          c.value = v[i];
          self().push(s, std::move(c));
        }
        return 0;
      };
      d.launch_host_func = [](api::stream_t s, void (*fn)(void*) noexcept, void* data) noexcept {
        if (self().enter("launch_host_func")) return self().code_or(fake_error);
        command c;
        c.k = kind::host_fn;
        self().host_fns_seen_.insert(fn);
        c.fn = fn;
        c.data = data;
        self().push(s, std::move(c));
        return 0;
      };
      d.host_alloc_mapped = [](void** h, std::size_t bytes) noexcept {
        if (self().enter("host_alloc_mapped")) return self().code_or(fake_out_of_memory);
        const std::size_t rounded = (bytes + 4095) / 4096 * 4096;
        *h = std::aligned_alloc(4096, rounded);
        self().host_blocks_.push_back(block{*h, rounded});
        return 0;
      };
      d.host_free = [](void* h) noexcept {
        const bool failing = self().enter("host_free");
        self().release_block(h);  // freed either way: nothing may touch it after
        return failing ? self().code_or(fake_error) : 0;
      };
      d.host_device_pointer = [](void** dev, void* h) noexcept {
        *dev = h;  // one address space, as with UVA
        return self().enter("host_device_pointer") ? self().code_or(fake_error) : 0;
      };
      d.pool_create = [](api::mem_pool_t* p, int) noexcept {
        if (self().enter("pool_create")) return self().code_or(fake_error);
        *p = reinterpret_cast<api::mem_pool_t>(&self().pool_token_);
        return 0;
      };
      d.pool_destroy = [](api::mem_pool_t) noexcept { return self().enter("pool_destroy") ? self().code_or(fake_error) : 0; };
      d.malloc_from_pool_async = [](void** p, std::size_t bytes, api::mem_pool_t, api::stream_t) noexcept {
        if (self().enter("malloc_from_pool_async")) return self().code_or(fake_out_of_memory);
        const std::size_t rounded = (bytes + 255) / 256 * 256;
        *p = std::aligned_alloc(256, rounded);
        self().host_blocks_.push_back(block{*p, rounded});
        return 0;
      };
      d.free_async = [](void* p, api::stream_t s) noexcept {
        // Stream-ordered, as cudaFreeAsync: the memory goes when the stream
        // reaches the free, after the work enqueued before it.
        if (self().enter("free_async")) return self().code_or(fake_error);
        command c;
        c.k = kind::free_block;
        c.data = p;
        self().push(s, std::move(c));
        self().fire_after("free_async");
        return 0;
      };
      d.import_timeline_fd = [](api::external_semaphore_t* out, int) noexcept {
        if (self().enter("import_timeline_fd")) return self().code_or(fake_error);
        self().externals_.push_back(std::make_unique<external>());
        self().last_import_device_ = thread_device();
        *out = reinterpret_cast<api::external_semaphore_t>(self().externals_.back().get());
        return 0;
      };
      d.destroy_external_semaphore = [](api::external_semaphore_t e) noexcept {
        (void)self().enter("destroy_external_semaphore");
        reinterpret_cast<external*>(e)->destroyed = true;
        return 0;
      };
      d.signal_external = [](api::external_semaphore_t e, std::uint64_t v, api::stream_t s) noexcept {
        if (self().enter("signal_external")) return self().code_or(fake_error);
        command c;
        c.k = kind::signal_external;
        c.ext = reinterpret_cast<external*>(e);
        c.value = v;
        self().push(s, std::move(c));
        return 0;
      };
      d.wait_external = [](api::external_semaphore_t e, std::uint64_t v, api::stream_t s) noexcept {
        if (self().enter("wait_external")) return self().code_or(fake_error);
        command c;
        c.k = kind::wait_external;
        c.ext = reinterpret_cast<external*>(e);
        c.value = v;
        self().push(s, std::move(c));
        return 0;
      };
      d.error_string = [](int code) noexcept {
        return code == fake_insufficient_driver
                   ? "CUDA driver version is insufficient for CUDA runtime version"
                   : "fake device error";
      };
      d.error_name = [](int code) noexcept {
        switch (code) {
          case fake_no_device: return "cudaErrorNoDevice";
          case fake_insufficient_driver: return "cudaErrorInsufficientDriver";
          case fake_out_of_memory: return "cudaErrorMemoryAllocation";
          default: return "fakeError";
        }
      };
      return d;
    }();
    return t;
  }

 private:
  struct block {
    void* base = nullptr;
    std::size_t bytes = 0;
  };

  static fake_device& self() { return *current(); }
  static int& thread_device() {
    thread_local int ordinal = 0;  // CUDA's default current device
    return ordinal;
  }

  void release_block(void* p) {
    for (auto it = host_blocks_.begin(); it != host_blocks_.end(); ++it) {
      if (it->base == p) {
        std::free(p);
        host_blocks_.erase(it);
        return;
      }
    }
  }

  // Whether `word` lies in memory from host_alloc_mapped / malloc that is
  // still allocated.
  bool word_live(const std::uint64_t* word) const {
    const auto a = reinterpret_cast<std::uintptr_t>(word);
    for (const block& b : host_blocks_) {
      const auto base = reinterpret_cast<std::uintptr_t>(b.base);
      if (a >= base && a + sizeof(std::uint64_t) <= base + b.bytes) return true;
    }
    return false;
  }
  static stream* as_stream(api::stream_t s) { return reinterpret_cast<stream*>(s); }

  void push(api::stream_t s, command c) {
    c.order = ++order_;
    as_stream(s)->commands.push_back(std::move(c));
  }

  // CUDA runs host functions on a runtime thread, never the caller's; the
  // stream does not go on until the function returns, other streams do.
  // So does the fake: run() hands the function to its callback thread
  // (one thread: functions run one at a time, in the order handed over)
  // and keeps the function's stream at it until `done` is set.
  struct host_call {
    void (*fn)(void*) noexcept = nullptr;
    void* data = nullptr;
    std::shared_ptr<std::atomic<bool>> done;
  };
  static bool& on_callback_thread() {
    thread_local bool yes = false;
    return yes;
  }
  std::shared_ptr<std::atomic<bool>> dispatch_host_function(void (*fn)(void*) noexcept, void* data) {
    auto done = std::make_shared<std::atomic<bool>>(false);
    std::lock_guard<std::mutex> lock(callback_mutex_);
    if (!callback_thread_.joinable()) {
      callback_thread_ = std::thread([this] { callback_loop(); });
    }
    callback_calls_.push_back(host_call{fn, data, done});
    ++callbacks_unfinished_;
    callback_cv_.notify_all();
    return done;
  }
  // Blocks until every host function handed over has returned; false when
  // none was running.
  bool wait_for_host_functions() {
    std::unique_lock<std::mutex> lock(callback_mutex_);
    if (callbacks_unfinished_ == 0) return false;
    callback_cv_.wait(lock, [this] { return callbacks_unfinished_ == 0; });
    return true;
  }
  void callback_loop() {
    on_callback_thread() = true;
    std::unique_lock<std::mutex> lock(callback_mutex_);
    callback_thread_id_ = std::this_thread::get_id();
    for (;;) {
      callback_cv_.wait(lock, [this] { return callback_stop_ || !callback_calls_.empty(); });
      if (callback_calls_.empty()) return;  // stopping, nothing pending
      host_call call = std::move(callback_calls_.front());
      callback_calls_.pop_front();
      lock.unlock();
      call.fn(call.data);
      // release: pairs with run()'s acquire load of `done`.
      call.done->store(true, std::memory_order_release);
      lock.lock();
      --callbacks_unfinished_;
      callback_cv_.notify_all();
    }
  }

  // Counts the call; true when it must fail (an injected failure, or the
  // sticky error once set: every later call but device_count, get_device
  // and the error strings fails with it, as a CUDA context does).
  bool enter(const char* entry) {
    ++calls_[entry];
    // cudaLaunchHostFunc's rule: a host function must not call the runtime.
    if (on_callback_thread()) ++runtime_calls_from_host_functions_;
    if (sticky_ != 0 && std::strcmp(entry, "device_count") != 0 &&
        std::strcmp(entry, "get_device") != 0) {
      return true;
    }
    auto it = fail_in_.find(entry);
    if (it == fail_in_.end() || it->second == 0) return false;
    return --it->second == 0;
  }

  void fire_after(const std::string& entry) {
    auto it = after_.find(entry);
    if (it == after_.end() || !it->second) return;
    std::function<void()> fn = std::move(it->second);
    after_.erase(it);
    fn();
  }

  static std::uint64_t load(const std::uint64_t* w) {
    return std::atomic_ref<std::uint64_t>(*const_cast<std::uint64_t*>(w)).load(std::memory_order_relaxed);
  }

  bool ready(const command& c) const {
    switch (c.k) {
      // A freed word is never read: execute() counts and drops the command.
      case kind::wait_value:
        return !word_live(c.word) ||
               static_cast<std::int64_t>(load(c.word) - c.value) >= 0;  // CUDA's GEQ
      case kind::wait_event: return c.ev->completed >= c.value;
      // A destroyed import is never read: execute() counts and drops it.
      case kind::wait_external: return c.ext->destroyed || c.ext->value >= c.value;
      default: return true;
    }
  }

  void execute(command& c) {
    if ((c.k == kind::wait_value || c.k == kind::write_value) && !word_live(c.word)) {
      ++freed_word_accesses_;
      return;
    }
    if ((c.k == kind::wait_external || c.k == kind::signal_external) && c.ext->destroyed) {
      ++destroyed_external_uses_;
      return;
    }
    switch (c.k) {
      case kind::write_value:
        // A device store: no max, exactly like cuStreamWriteValue64.
        std::atomic_ref<std::uint64_t>(*c.word).store(c.value, std::memory_order_relaxed);
        break;
      case kind::record: c.ev->completed = c.value; break;
      case kind::host_fn: break;  // run() hands it to the callback thread
      case kind::work: c.work(); break;
      case kind::signal_external: c.ext->value = c.value; break;
      case kind::free_block: release_block(c.data); break;
      case kind::wait_value:
      case kind::wait_event:
      case kind::wait_external: break;
    }
  }

  std::vector<std::unique_ptr<stream>> streams_;
  std::vector<std::unique_ptr<event>> events_;
  std::vector<std::unique_ptr<external>> externals_;
  std::vector<block> host_blocks_;
  std::size_t freed_word_accesses_ = 0;
  std::size_t destroyed_external_uses_ = 0;
  std::size_t blocked_syncs_ = 0;
  std::uint64_t order_ = 0;
  std::size_t runtime_calls_from_host_functions_ = 0;
  std::mutex callback_mutex_;
  std::condition_variable callback_cv_;
  std::deque<host_call> callback_calls_;  // handed over, not yet started
  std::size_t callbacks_unfinished_ = 0;  // handed over, not yet returned
  bool callback_stop_ = false;
  std::thread callback_thread_;
  std::thread::id callback_thread_id_{};
  int sticky_ = 0;
  int last_import_device_ = -1;
  std::map<std::string, int> calls_;
  std::map<std::string, int> fail_in_;  // calls until the injected failure
  std::map<std::string, std::function<void()>> after_;  // after_next hooks
  std::set<void (*)(void*) noexcept> host_fns_seen_;
  int pool_token_ = 0;
};

}  // namespace causal_cuda_test
