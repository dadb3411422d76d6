// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// The CUDA adapter's host logic against a fake device (fake_driver.hpp), so
// it runs on machines without a GPU: the queue conformance suite on
// memory-ops streams, then what only this adapter does — which stream
// commands it issues, waits held until their signal is on a stream (shared
// hardware queues), the same-stream deadlock rule, event-mode bookkeeping
// and tier-3 holds, the host-signalling fallback, the host relay, host
// completion (the completion word, host functions) and failure, interop
// (taint, the device UUID check), device memory pools. Built on HIP too
// (hip_host_logic), where it also checks the real runtime's callback slot.

#include "cuda_fixture.hpp"
#include "child_process.hpp"

#include <causal/adapters/cuda/interop.hpp>
#include <causal/adapters/cuda/pool.hpp>
#include <causal/completion.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#define CAUSAL_CONFORMANCE_FIXTURES causal_cuda_test::cuda_fixture<causal_cuda_test::fake_env>
#include "queue_conformance.hpp"

namespace {

using causal::errc;
using causal::cuda::sync_mode;
using fake_fixture = causal_cuda_test::cuda_fixture<causal_cuda_test::fake_env>;
using event_fixture = causal_cuda_test::cuda_fixture<causal_cuda_test::fake_env, sync_mode::events>;

}  // namespace

TEST_CASE("cuda driver: native statuses map to clear errors", "[cuda][driver]") {
  CHECK(causal::cuda::to_status(0, "x"));
  const causal::status oom = causal::cuda::to_status(2, "cudaMalloc");
  CHECK(oom.code() == errc::resource_exhausted);
  const causal::status lost = causal::cuda::to_status(719, "cudaLaunchKernel");
  CHECK(lost.code() == errc::device_lost);
  CHECK(lost.error_value().position() == 719);
}

TEST_CASE("cuda device: without a device everything reports it, nothing crashes",
          "[cuda][device]") {
  causal_cuda_test::fake_device dev;
  dev.devices = 0;
  const causal::result<int> count = causal::cuda::device_count(causal_cuda_test::fake_device::table());
  REQUIRE(count);
  CHECK(*count == 0);
  causal::cuda::device_context ctx(causal_cuda_test::fake_device::table());
  CHECK(ctx.setup_status().code() == errc::failed_precondition);
  causal::cuda::semaphore s(ctx);
  CHECK(s.failed());
  causal::axis_allocator axes;
  causal::cuda::stream_queue q(axes.allocate(0, causal::domain::queue).value(), ctx);
  CHECK_FALSE(q.setup_status());
  auto r = q.submit({}, {}, causal::cuda::stream_operation::marker());
  REQUIRE_FALSE(r);
  CHECK(r.error_value().code() == errc::failed_precondition);
  CHECK(dev.calls("stream_create") == 0);
}

TEST_CASE("cuda device: words and events are handed out, recycled and bounded",
          "[cuda][device]") {
  causal_cuda_test::fake_device dev;
  causal::cuda::device_context ctx(causal_cuda_test::fake_device::table());
  REQUIRE(ctx.setup_status());
  CHECK(ctx.has_memory_ops());
  std::vector<causal::cuda::timeline_word> words;
  for (std::size_t i = 0; i < causal::cuda::device_context::word_capacity; ++i) {
    auto w = ctx.allocate_word(7);
    REQUIRE(w);
    CHECK(*w->host == 7);
    words.push_back(*w);
  }
  auto full = ctx.allocate_word(0);
  REQUIRE_FALSE(full);
  CHECK(full.error_value().code() == errc::resource_exhausted);
  ctx.free_word(words[3]);
  auto again = ctx.allocate_word(1);
  REQUIRE(again);
  CHECK(again->index == 3);
  auto e1 = ctx.acquire_event();
  REQUIRE(e1);
  ctx.release_event(*e1);
  auto e2 = ctx.acquire_event();
  REQUIRE(e2);
  CHECK(*e2 == *e1);  // recycled, not created
  CHECK(ctx.events_created() == 1);
  ctx.release_event(*e2);
  // Every word back before the context goes (it refuses to die holding
  // one: docs/lifetimes.md).
  words[3] = *again;
  for (const causal::cuda::timeline_word& w : words) ctx.free_word(w);
  CHECK(ctx.words_in_use() == 0);
}

TEST_CASE("cuda stream queue: memory-ops mode issues wait-value and write-value, never events",
          "[cuda][memory_ops]") {
  fake_fixture f;
  auto& dev = f.env().device;
  auto& q1 = f.make_queue();
  auto& q2 = f.make_queue();
  auto& s = f.make_semaphore();
  auto& done = f.make_semaphore();
  REQUIRE(q1.submit({}, {{&s, 1}}, f.op(1)));
  REQUIRE(q2.submit({{&s, 1}}, {{&done, 1}}, f.op(2)));
  CHECK(dev.calls("wait_value64") == 1);
  // A signal and a completion-word write per submission, in one batch; no
  // host function.
  CHECK(dev.calls("write_values64") == 2);
  CHECK(dev.calls("write_value64") == 0);
  CHECK(q2.backend().issued().write_batches == 1);
  CHECK(dev.calls("launch_host_func") == 0);
  CHECK(dev.calls("event_record") == 0);
  CHECK(dev.calls("stream_wait_event") == 0);
  CHECK_FALSE(q1.backend().host_signalling());
  // Nothing has run: the host semaphores are unreached until completion.
  CHECK(s.value() == 0);
  f.pump();
  CHECK(s.value() == 1);
  CHECK(done.value() == 1);
  CHECK(s.word_value() == 1);
  CHECK(f.log() == std::vector<int>{1, 2});
  CHECK(q2.completed_epoch() == 1);
  REQUIRE(f.finish());
}

TEST_CASE("cuda stream queue: a host signal reaches a device waiter through the relay",
          "[cuda][relay]") {
  fake_fixture f;
  auto& q = f.make_queue();
  // Enqueued ahead of their signals: a stream left waiting on a word.
  REQUIRE(q.backend().set_waits_before_signal(true));
  auto& gate = f.make_semaphore();
  auto& out = f.make_semaphore();
  REQUIRE(q.submit({{&gate, 2}}, {{&out, 1}}, f.op(1)));
  CHECK(gate.relay_armed());
  f.pump();
  CHECK(f.log().empty());  // blocked on the word
  REQUIRE(gate.signal(1));
  f.pump();
  CHECK(gate.word_value() == 1);
  CHECK(f.log().empty());  // 1 < 2: still blocked
  CHECK(gate.relay_armed());
  REQUIRE(gate.signal(5));
  CHECK(gate.word_value() == 5);
  CHECK_FALSE(gate.relay_armed());  // passed every requested value
  f.pump();
  CHECK(f.log() == std::vector<int>{1});
  CHECK(out.value() == 1);
  REQUIRE(f.finish());
}

TEST_CASE("cuda stream queue: the same-stream deadlock rule refuses, and changes nothing",
          "[cuda][deadlock]") {
  fake_fixture f;
  auto& dev = f.env().device;
  auto& q1 = f.make_queue();
  auto& q2 = f.make_queue();
  auto& s = f.make_semaphore();

  SECTION("an operation that waits for its own signal") {
    // Refused by the rule every queue applies (queue.hpp), before this
    // queue's own deadlock rule would.
    auto r = q1.submit({{&s, 1}}, {{&s, 1}}, f.op(1));
    REQUIRE_FALSE(r);
    CHECK(r.error_value().code() == errc::invalid_argument);
    CHECK(q1.epoch() == 0);
    CHECK(dev.calls("wait_value64") == 0);
    CHECK(s.state_of(1) == causal::value_state::unsubmitted);
  }

  SECTION("a later signal of the same stream for a value it already waits on") {
    REQUIRE(q1.submit({{&s, 2}}, {}, f.op(1)));
    CHECK(q1.backend().guard().open_count() == 1);
    const int writes = dev.calls("write_values64");
    auto r = q1.submit({}, {{&s, 3}}, f.op(2));
    REQUIRE_FALSE(r);
    CHECK(r.error_value().code() == errc::failed_precondition);
    CHECK(dev.calls("write_values64") == writes);
    CHECK(q1.epoch() == 1);
    // Signals of other semaphores are not affected.
    auto& t = f.make_semaphore();
    REQUIRE(q1.submit({}, {{&t, 1}}, f.op(3)));
    // Signalled from another stream, the wait resolves and the guard closes.
    REQUIRE(q2.submit({}, {{&s, 2}}, f.op(4)));
    CHECK(q1.backend().guard().open_count() == 1);  // closes lazily, on the next check
    REQUIRE(q1.submit({}, {{&s, 3}}, f.op(5)));
    CHECK(q1.backend().guard().open_count() == 0);
    REQUIRE(f.finish());
    CHECK(s.value() == 3);
    const auto log = f.log();
    CHECK(causal_conformance::position(log, 4) < causal_conformance::position(log, 1));
  }
}

TEST_CASE("cuda same_stream_guard: open waits close when reached or submitted elsewhere",
          "[cuda][deadlock]") {
  causal::semaphore s;
  causal::semaphore t;
  causal::cuda::detail::same_stream_guard<causal::semaphore, 2> guard;
  using wait = causal::queue_wait<causal::semaphore>;
  using signal = causal::queue_signal<causal::semaphore>;
  REQUIRE(guard.note(s, 4));
  REQUIRE(guard.note(s, 6));  // kept apart: it outlives the wait on 4 if 4 is submitted
  CHECK(guard.open_count() == 2);
  REQUIRE(guard.note(s, 4));  // already open: not duplicated
  CHECK(guard.open_count() == 2);
  const std::array<signal, 1> sig3{{{&s, 3}}};
  const std::array<signal, 1> sig4{{{&s, 4}}};
  const std::array<signal, 1> other{{{&t, 9}}};
  CHECK(guard.check(std::span<const wait>{}, std::span<const signal>(sig3)));
  CHECK(guard.check(std::span<const wait>{}, std::span<const signal>(sig4)).code() ==
        errc::failed_precondition);
  CHECK(guard.check(std::span<const wait>{}, std::span<const signal>(other)));
  // Full: a third open wait is refused clearly.
  CHECK(guard.note(t, 1).code() == errc::resource_exhausted);
  // Submitted elsewhere (any producer): no longer open.
  causal::frontier f;
  REQUIRE(s.submit_signal(4, f));
  guard.prune();
  CHECK(guard.open_count() == 1);
  REQUIRE(s.signal(7, f));
  guard.prune();
  CHECK(guard.open_count() == 0);
  // Not open at all: reached values are never remembered.
  REQUIRE(guard.note(s, 2));
  CHECK(guard.open_count() == 0);
}

TEST_CASE("cuda event stream queue: events per signal, a wait on the covering event, recycled",
          "[cuda][events]") {
  event_fixture f;
  auto& dev = f.env().device;
  auto& q1 = f.make_queue();
  auto& q2 = f.make_queue();
  auto& s = f.make_semaphore();
  auto& done = f.make_semaphore();
  REQUIRE(q1.submit({}, {{&s, 3}}, f.op(1)));
  CHECK(dev.calls("event_record") == 1);
  CHECK(s.ledger_size() == 1);
  // S >= 2 is covered by the submitted signal of 3: wait on its event.
  REQUIRE(q2.submit({{&s, 2}}, {{&done, 1}}, f.op(2)));
  CHECK(dev.calls("stream_wait_event") == 1);
  CHECK(dev.calls("wait_value64") == 0);
  CHECK(dev.calls("write_value64") == 0);
  CHECK(dev.calls("write_values64") == 0);
  CHECK(q2.stats().device_waits == 1);
  REQUIRE(f.finish());
  CHECK(f.log() == std::vector<int>{1, 2});
  CHECK(s.value() == 3);
  // Reached: the ledger entries are gone and the events are free again.
  CHECK(s.ledger_size() == 0);
  CHECK(done.ledger_size() == 0);
  CHECK(f.context().events_free() == f.context().events_created());
}

TEST_CASE("cuda event stream queue: a wait before its signal is held on the host, then issued",
          "[cuda][events][tier3]") {
  event_fixture f;
  auto& q1 = f.make_queue();
  auto& q2 = f.make_queue();
  auto& s = f.make_semaphore();
  auto& done = f.make_semaphore();
  auto r = q2.submit({{&s, 1}}, {{&done, 1}}, f.op(2));
  REQUIRE(r);
  CHECK(r->deferred);
  CHECK(q2.stats().host_deferrals == 1);
  // The same stream may not queue the signal behind its own held wait.
  auto own = q2.submit({}, {{&s, 1}}, f.op(3));
  REQUIRE_FALSE(own);
  CHECK(own.error_value().code() == errc::failed_precondition);
  REQUIRE(q1.submit({}, {{&s, 1}}, f.op(1)));
  auto pumped = q2.pump();
  REQUIRE(pumped);
  CHECK(*pumped == 1);
  CHECK(q2.deferred_count() == 0);
  REQUIRE(f.finish());
  CHECK(f.log() == std::vector<int>{1, 2});
  CHECK(done.value() == 1);
}

TEST_CASE("cuda stream queue: without 64-bit memory operations, host signalling and events",
          "[cuda][fallback]") {
  struct no_memops_env : causal_cuda_test::fake_env {
    no_memops_env() { device.memory_ops = false; }
  };
  causal_cuda_test::cuda_fixture<no_memops_env> f;
  auto& dev = f.env().device;
  auto& q1 = f.make_queue();
  auto& q2 = f.make_queue();
  auto& s = f.make_semaphore();
  auto& gate = f.make_semaphore();
  REQUIRE(q1.backend().host_signalling());
  // Nobody has submitted gate >= 1: this device cannot wait for it.
  auto refused = q2.submit({{&gate, 1}}, {}, f.op(9));
  REQUIRE_FALSE(refused);
  CHECK(refused.error_value().code() == errc::failed_precondition);
  CHECK(q2.epoch() == 0);
  REQUIRE(q1.submit({}, {{&s, 1}}, f.op(1)));
  REQUIRE(q2.submit({{&s, 1}}, {}, f.op(2)));
  CHECK(dev.calls("wait_value64") == 0);
  CHECK(dev.calls("write_value64") == 0);
  CHECK(dev.calls("write_values64") == 0);
  CHECK(dev.calls("stream_wait_event") == 1);
  REQUIRE(f.finish());
  CHECK(f.log() == std::vector<int>{1, 2});
  // The host completion wrote the word and reached the semaphore.
  CHECK(s.word_value() == 1);
  CHECK(s.value() == 1);
}

TEST_CASE("cuda stream queue: host completion retires epochs into a tracker",
          "[cuda][completion]") {
  fake_fixture f;
  auto& q = f.make_queue();
  auto& s = f.make_semaphore();
  causal::completion_tracker tracker;
  REQUIRE(tracker.register_axis(q.axis()));
  q.track_completion(tracker);
  for (int i = 1; i <= 3; ++i) REQUIRE(q.submit({}, {}, f.op(i)));
  REQUIRE(q.submit({}, {{&s, 1}}, f.op(4)));
  CHECK(tracker.retired_epoch(q.axis()) == 0);
  CHECK(q.backend().in_flight() == 4);
  f.env().run();  // host functions ran; nothing reached until poll
  CHECK(s.value() == 0);
  CHECK(q.poll() == 4);
  CHECK(s.value() == 1);
  CHECK(tracker.retired_epoch(q.axis()) == 4);
  CHECK(q.backend().in_flight() == 0);
}

TEST_CASE("cuda stream queue: max_in_flight is a clear error, not a drop", "[cuda][completion]") {
  fake_fixture f;
  auto& q = f.make_queue();
  using backend = causal::cuda::stream_queue::backend_type;
  for (std::size_t i = 0; i < backend::max_in_flight; ++i) REQUIRE(q.submit({}, {}, f.op(1)));
  auto r = q.submit({}, {}, f.op(2));
  REQUIRE_FALSE(r);
  CHECK(r.error_value().code() == errc::resource_exhausted);
  CHECK(q.epoch() == backend::max_in_flight);
  f.env().run();
  REQUIRE(q.submit({}, {}, f.op(3)));  // polled first: room again
  REQUIRE(f.finish());
}

TEST_CASE("cuda stream queue: device failures fail the submission's signals", "[cuda][failure]") {
  fake_fixture f;
  auto& dev = f.env().device;
  auto& q1 = f.make_queue();
  auto& q2 = f.make_queue();
  auto& s = f.make_semaphore();
  auto& out = f.make_semaphore();
  REQUIRE(q1.submit({}, {{&s, 1}}, f.op(1)));
  dev.fail_next("wait_value64");
  auto r = q2.submit({{&s, 1}}, {{&out, 1}}, f.op(2));
  REQUIRE_FALSE(r);
  CHECK(r.error_value().code() == errc::device_lost);
  CHECK(out.failed());
  dev.fail_next("write_values64");  // the signal's and the completion's batch
  auto& out2 = f.make_semaphore();
  auto r2 = q1.submit({}, {{&out2, 1}}, f.op(3));
  REQUIRE_FALSE(r2);
  CHECK(out2.failed());
}

TEST_CASE("cuda stream queue: a stream stuck behind a failed semaphore fails the queue",
          "[cuda][failure]") {
  fake_fixture f;
  auto& q = f.make_queue();
  // Enqueued ahead of their signals: a stream left waiting on a word.
  REQUIRE(q.backend().set_waits_before_signal(true));
  auto& upstream = f.make_semaphore();
  auto& a = f.make_semaphore();
  auto& b = f.make_semaphore();
  REQUIRE(q.submit({{&upstream, 1}}, {{&a, 1}}, f.op(1)));
  REQUIRE(q.submit({}, {{&b, 1}}, f.op(2)));
  upstream.fail(causal::error{errc::device_lost, "test: upstream lost"});
  f.pump();
  CHECK(a.failure()->code() == errc::device_lost);
  CHECK(b.failure()->code() == errc::device_lost);  // behind it on the stream
  auto later = q.submit({}, {}, f.op(3));
  REQUIRE_FALSE(later);
  CHECK(later.error_value().code() == errc::device_lost);
  CHECK(f.log().empty());
  // The stuck wait is still a command on the stream, counted on its word
  // until the queue's destructor lets it through and drains the stream.
  CHECK(f.context().device_waits_on(upstream.word_index()) == 1);
}

TEST_CASE("cuda interop: external timeline ops are stream-ordered; observed values are tainted",
          "[cuda][interop]") {
  fake_fixture f;
  auto& dev = f.env().device;
  auto& q = f.make_queue();
  auto& q2 = f.make_queue();
  auto& vk = f.make_semaphore();  // stands for the Vulkan timeline here
  causal::cuda::external_timeline<causal::cuda::semaphore> ext(f.context(), 42, dev.uuid_of(0), vk);
  REQUIRE(ext.setup_status());
  CHECK(dev.calls("import_timeline_fd") == 1);
  REQUIRE(q.submit({}, {}, ext.wait_op(3)));
  REQUIRE(q.submit({}, {}, f.op(1)));
  REQUIRE(q.submit({}, {}, ext.signal_op(4)));
  f.pump();
  CHECK(f.log().empty());  // waiting for the external value 3
  dev.external_at(0).value = 3;
  REQUIRE(ext.observe(3));  // held on the host until the value is known sent or reached
  f.pump();
  CHECK(f.log() == std::vector<int>{1});
  CHECK(dev.external_at(0).value == 4);
  // The host learns of 4 from the other API: external, so tainted.
  REQUIRE(ext.observe(4));
  CHECK(vk.value() == 4);
  CHECK(vk.is_tainted(4));
  // A wait on a tainted value is never elided, even though it is reached.
  auto r = q2.submit({{&vk, 4}}, {}, f.op(2));
  REQUIRE(r);
  CHECK(q2.stats().waits_elided() == 0);
  CHECK(q2.stats().device_waits == 1);
  causal::cuda::external_timeline<causal::cuda::semaphore> bad(f.context(), -1, dev.uuid_of(0), vk);
  CHECK(bad.setup_status().code() == errc::invalid_argument);
  REQUIRE(f.finish());
}

TEST_CASE("cuda interop: a semaphore is imported only from the Vulkan device that is this CUDA "
          "device",
          "[cuda][interop]") {
  causal_cuda_test::fake_device dev;
  dev.devices = 2;
  const causal::cuda::driver_table& table = causal_cuda_test::fake_device::table();
  causal::cuda::device_context ctx(table, 1);
  REQUIRE(ctx.setup_status());
  causal::cuda::semaphore host(ctx);
  SECTION("the same UUID imports") {
    causal::cuda::external_timeline<causal::cuda::semaphore> ext(ctx, 7, dev.uuid_of(1), host);
    REQUIRE(ext.setup_status());
    CHECK(dev.calls("device_uuid") == 1);
    CHECK(dev.calls("import_timeline_fd") == 1);
  }
  SECTION("another device's UUID is refused before the import") {
    // Device 0's UUID: a Vulkan instance that picked the other GPU.
    causal::cuda::external_timeline<causal::cuda::semaphore> ext(ctx, 7, dev.uuid_of(0), host);
    const causal::status st = ext.setup_status();
    REQUIRE_FALSE(st);
    CHECK(st.code() == errc::invalid_argument);
    CHECK(std::string(st.error_value().message()).find("deviceUUID") != std::string::npos);
    CHECK(dev.calls("import_timeline_fd") == 0);  // the fd is still the caller's
    // Its operations fail clearly instead of waiting on nothing.
    const causal::cuda::stream_operation op = ext.wait_op(1);
    CHECK(op.launch(nullptr, op.user, op.arg) != 0);
  }
  SECTION("a UUID that cannot be read is the runtime's error") {
    dev.fail_next("device_uuid");
    causal::cuda::external_timeline<causal::cuda::semaphore> ext(ctx, 7, dev.uuid_of(1), host);
    CHECK(ext.setup_status().code() == errc::device_lost);
    CHECK(dev.calls("import_timeline_fd") == 0);
  }
}

TEST_CASE("cuda device pool: stream-ordered blocks in one arena, reused by death frontier",
          "[cuda][pool]") {
  fake_fixture f;
  auto& dev = f.env().device;
  auto& q1 = f.make_queue();
  auto& q2 = f.make_queue();
  auto& progress1 = f.make_semaphore();
  q1.set_progress_timeline(progress1);
  // A quota of exactly one first block: no fresh tail to fall back on.
  causal::cuda::device_block_pool<causal::cuda::stream_queue> pool(f.context(), 1024);
  REQUIRE(pool.setup_status());
  CHECK(dev.calls("malloc_from_pool_async") == 1);
  REQUIRE(pool.register_timeline(q1.axis(), progress1));
  auto a = q1.stream_alloca(pool, 1000);
  REQUIRE(a);
  CHECK(a->pointer == pool.arena());
  REQUIRE(q1.submit({}, {}, f.op(1)));
  REQUIRE(q1.stream_dealloca(pool, *a));
  // Same queue: FIFO proves the free; same bytes, no device wait.
  auto b = q1.stream_alloca(pool, 512);
  REQUIRE(b);
  CHECK(b->pointer == a->pointer);
  CHECK(b->block.path == causal::pool_path::knowledge);
  REQUIRE(q1.submit({}, {}, f.op(2)));
  REQUIRE(q1.stream_dealloca(pool, *b));
  // Another queue, before completion: fenced by one wait on q1's progress.
  const int waits = dev.calls("wait_value64");
  auto c = q2.stream_alloca(pool, 512);
  REQUIRE(c);
  CHECK(c->block.path == causal::pool_path::fenced);
  // Staged: enqueued with the next operation (its signal, q1's progress
  // write, is already on q1's stream).
  REQUIRE(q2.submit({}, {}, f.op(3)));
  CHECK(dev.calls("wait_value64") == waits + 1);
  REQUIRE(f.finish());
  CHECK(f.log() == std::vector<int>{1, 2, 3});
  CHECK(progress1.value() == 2);
  auto too_big = q2.stream_alloca(pool, 4096);
  REQUIRE_FALSE(too_big);
  CHECK(too_big.error_value().code() == errc::capacity_exceeded);
}

TEST_CASE("cuda device pool: an arena that cannot be allocated fails every acquire clearly",
          "[cuda][pool]") {
  fake_fixture f;
  f.env().device.fail_next("malloc_from_pool_async");
  auto& q = f.make_queue();
  causal::cuda::device_block_pool<causal::cuda::stream_queue> pool(f.context(), 4096);
  CHECK(pool.setup_status().code() == errc::resource_exhausted);
  auto a = q.stream_alloca(pool, 16);
  REQUIRE_FALSE(a);
  CHECK(a.error_value().code() == errc::resource_exhausted);
}

//===-- "no device" is one status, not every failure ---------------------------===//

TEST_CASE("cuda driver: only 'no device' reads as no device; a too-old driver is an error",
          "[cuda][driver]") {
  causal_cuda_test::fake_device dev;
  const causal::cuda::driver_table& table = causal_cuda_test::fake_device::table();

  SECTION("insufficient driver fails loudly, with its name") {
    dev.device_count_status = causal_cuda_test::fake_insufficient_driver;
    const causal::result<int> count = causal::cuda::device_count(table);
    REQUIRE_FALSE(count);
    CHECK(count.error_value().code() == errc::device_lost);
    CHECK(count.error_value().position() == causal_cuda_test::fake_insufficient_driver);
    CHECK(std::string(causal::cuda::native_error_name(table, causal_cuda_test::fake_insufficient_driver)) ==
          "cudaErrorInsufficientDriver");
    causal::cuda::device_context ctx(table);
    // Not "no such device" (failed_precondition), which a test would skip.
    CHECK(ctx.setup_status().code() == errc::device_lost);
    CHECK(ctx.setup_status().error_value().position() ==
          causal_cuda_test::fake_insufficient_driver);
  }

  SECTION("cudaErrorNoDevice is no device") {
    dev.device_count_status = causal_cuda_test::fake_no_device;
    const causal::result<int> count = causal::cuda::device_count(table);
    REQUIRE(count);
    CHECK(*count == 0);
    causal::cuda::device_context ctx(table);
    CHECK(ctx.setup_status().code() == errc::failed_precondition);
  }
}

//===-- teardown of a failed queue ----------------------------------------------===//

TEST_CASE("cuda stream queue: a failed queue drains its stream before destroying it",
          "[cuda][failure][teardown]") {
  causal_cuda_test::fake_device dev;
  const causal::cuda::driver_table& table = causal_cuda_test::fake_device::table();
  {
    causal::cuda::device_context ctx(table);
    REQUIRE(ctx.setup_status());
    causal::axis_allocator axes;
    auto upstream = std::make_unique<causal::cuda::semaphore>(ctx);
    causal::cuda::semaphore out(ctx);
    const std::uint64_t* upstream_word = upstream->device_word();
    {
      causal::cuda::stream_queue q(axes.allocate(0, causal::domain::queue).value(), ctx);
      // Enqueued ahead of their signals: a stream left waiting on a word.
      REQUIRE(q.backend().set_waits_before_signal(true));
      REQUIRE(q.submit({{upstream.get(), 1}}, {{&out, 1}}, causal::cuda::stream_operation::marker()));
      CHECK(dev.commands_on(upstream_word) == 1);  // the wait-value, not yet run
      REQUIRE(upstream->fail(causal::error{errc::device_lost, "test: upstream lost"}));
      (void)q.poll();
      CHECK(out.failure()->code() == errc::device_lost);
      CHECK_FALSE(q.submit({}, {}, causal::cuda::stream_operation::marker()));
    }  // the failed queue is destroyed here
    // cudaStreamDestroy keeps queued commands: unless the queue drained
    // its stream first, a wait would still poll the upstream word and a
    // host function would later run into the destroyed queue.
    REQUIRE(dev.pending_everywhere() == 0);
    CHECK(dev.commands_on(upstream_word) == 0);
    CHECK(ctx.pending_device_waits() == 0);
    CHECK(dev.blocked_syncs() == 0);  // drained because the failure released the wait
    CHECK(out.failed());  // the operation ran, but its result is void
    upstream.reset();
    causal::cuda::semaphore next(ctx);  // may take the upstream word: nothing reads it now
    CHECK(ctx.words_retiring() == 0);
  }
  dev.run();
  CHECK(dev.freed_word_accesses() == 0);
}

TEST_CASE("cuda stream queue: a word is never reused while a stream may still wait on it",
          "[cuda][failure][teardown]") {
  causal_cuda_test::fake_device dev;
  const causal::cuda::driver_table& table = causal_cuda_test::fake_device::table();
  causal::cuda::device_context ctx(table);
  REQUIRE(ctx.setup_status());
  causal::axis_allocator axes;
  causal::cuda::stream_queue q(axes.allocate(0, causal::domain::queue).value(), ctx);
  // Enqueued ahead of their signals: a stream left waiting on a word.
  REQUIRE(q.backend().set_waits_before_signal(true));
  auto gate = std::make_unique<causal::cuda::semaphore>(ctx);
  causal::cuda::semaphore other(ctx);
  causal::cuda::semaphore out(ctx);
  // The second wait fails to enqueue: the first is already on the stream
  // and stays there (it cannot be taken back).
  dev.fail_nth("wait_value64", 2);
  auto r = q.submit({{gate.get(), 1}, {&other, 1}}, {{&out, 1}},
                    causal::cuda::stream_operation::marker());
  REQUIRE_FALSE(r);
  CHECK(out.failed());
  const std::uint32_t gate_index = gate->word_index();
  const std::uint64_t* gate_word = gate->device_word();
  CHECK(dev.commands_on(gate_word) == 1);
  CHECK(ctx.device_waits_on(gate_index) == 1);
  // Nobody will signal gate now; destroying it releases the wait and
  // retires its word instead of handing it to the next semaphore.
  gate.reset();
  CHECK(ctx.words_retiring() == 1);
  causal::cuda::semaphore fresh(ctx);
  CHECK(fresh.word_index() != gate_index);
  // Once the stream has passed the wait, the word is free again.
  REQUIRE(q.synchronize());
  CHECK(dev.commands_on(gate_word) == 0);
  CHECK(ctx.device_waits_on(gate_index) == 0);
  CHECK(ctx.words_retiring() == 0);
  causal::cuda::semaphore reused(ctx);
  CHECK(reused.word_index() == gate_index);
  CHECK(dev.freed_word_accesses() == 0);
}

TEST_CASE("cuda stream queue: waits of a failed submission are not charged to the next operation",
          "[cuda][failure]") {
  causal_cuda_test::fake_device dev;
  const causal::cuda::driver_table& table = causal_cuda_test::fake_device::table();
  causal::cuda::device_context ctx(table);
  REQUIRE(ctx.setup_status());
  causal::axis_allocator axes;
  causal::cuda::stream_queue q(axes.allocate(0, causal::domain::queue).value(), ctx);
  // Enqueued ahead of their signals: a stream left waiting on a word.
  REQUIRE(q.backend().set_waits_before_signal(true));
  causal::cuda::semaphore gate(ctx);
  causal::cuda::semaphore other(ctx);
  causal::cuda::semaphore out(ctx);
  causal::cuda::semaphore done(ctx);
  dev.fail_nth("wait_value64", 2);
  REQUIRE_FALSE(q.submit({{&gate, 1}, {&other, 1}}, {{&out, 1}},
                         causal::cuda::stream_operation::marker()));
  CHECK(q.backend().stray_waits() == 1);
  // The next operation waits for nothing of its own.
  REQUIRE(q.submit({}, {{&done, 1}}, causal::cuda::stream_operation::marker()));
  CHECK(q.backend().stray_waits() == 0);  // attached for accounting only
  // gate fails: it releases the stray device wait, and the next operation,
  // which never waited on gate, completes normally.
  REQUIRE(gate.fail(causal::error{errc::device_lost, "test: gate lost"}));
  dev.run();
  (void)q.poll();  // lets the stray through
  dev.run();
  (void)q.poll();
  CHECK_FALSE(done.failed());
  CHECK(done.value() == 1);
  CHECK(q.setup_status());
  CHECK(ctx.pending_device_waits() == 1);  // only the queue's completion word
  REQUIRE(q.synchronize());
}

//===-- the calling thread's current device ------------------------------------===//

TEST_CASE("cuda device: streams and events are created on the context's device from any thread",
          "[cuda][device]") {
  causal_cuda_test::fake_device dev;
  dev.devices = 2;
  const causal::cuda::driver_table& table = causal_cuda_test::fake_device::table();
  causal::cuda::device_context ctx(table, 1);
  REQUIRE(ctx.setup_status());
  causal::axis_allocator axes;
  const causal::axis a = axes.allocate(0, causal::domain::queue).value();
  int stream_device = -1;
  int event_device = -1;
  int pool_stream_device = -1;
  int import_device = -1;
  int current_after = -1;
  bool created = false;
  // A fresh thread's current device is 0 (CUDA's default).
  std::thread worker([&] {
    causal::cuda::stream_queue q(a, ctx);
    created = static_cast<bool>(q.setup_status());
    if (created) stream_device = dev.stream_device(q.stream());
    auto e = ctx.acquire_event();
    if (e) {
      event_device = dev.event_device(*e);
      ctx.release_event(*e);
    }
    {
      causal::cuda::device_block_pool<causal::cuda::stream_queue> pool(ctx, 1024);
      if (pool.setup_status()) pool_stream_device = dev.last_stream_device();
    }
    causal::cuda::semaphore host(ctx);
    causal::cuda::external_timeline<causal::cuda::semaphore> ext(ctx, 3, dev.uuid_of(1), host);
    if (ext.setup_status()) import_device = dev.last_import_device();
    (void)table.get_device(&current_after);
  });
  worker.join();
  REQUIRE(created);
  CHECK(stream_device == 1);
  CHECK(event_device == 1);
  CHECK(pool_stream_device == 1);
  CHECK(import_device == 1);
  CHECK(current_after == 0);  // the thread's own current device is restored
}

TEST_CASE("cuda stream queue: teardown drains a stream that waits on another stream stuck on a "
          "failed semaphore",
          "[cuda][failure][teardown]") {
  causal_cuda_test::fake_device dev;
  const causal::cuda::driver_table& table = causal_cuda_test::fake_device::table();
  causal::cuda::device_context ctx(table);
  REQUIRE(ctx.setup_status());
  causal::axis_allocator axes;
  causal::cuda::semaphore upstream(ctx);
  causal::cuda::semaphore middle(ctx);
  causal::cuda::semaphore out(ctx);
  auto producer = std::make_unique<causal::cuda::stream_queue>(
      axes.allocate(0, causal::domain::queue).value(), ctx);
  auto consumer = std::make_unique<causal::cuda::stream_queue>(
      axes.allocate(0, causal::domain::queue).value(), ctx);
  // Enqueued ahead of their signals: streams left waiting on words.
  REQUIRE(producer->backend().set_waits_before_signal(true));
  REQUIRE(consumer->backend().set_waits_before_signal(true));
  REQUIRE(producer->submit({{&upstream, 1}}, {{&middle, 1}}, causal::cuda::stream_operation::marker()));
  REQUIRE(consumer->submit({{&middle, 1}}, {{&out, 1}}, causal::cuda::stream_operation::marker()));
  REQUIRE(upstream.fail(causal::error{errc::device_lost, "test: upstream lost"}));
  // Nobody has polled the producer: middle is not known failed yet. The
  // consumer's stream waits on middle's word, which only the producer's
  // stream (stuck on upstream's word) would write.
  dev.run();
  CHECK(dev.pending(consumer->stream()) != 0);
  const causal::cuda::api::stream_t consumer_stream = consumer->stream();
  consumer.reset();
  CHECK(dev.blocked_syncs() == 0);  // drained, did not hang
  CHECK(dev.pending(consumer_stream) == 0);
  // Its operation ran after a failed semaphore was let through: not trusted.
  CHECK(out.failed());
  // The producer learns that its operation ran on a released wait.
  (void)producer->poll();
  CHECK(middle.failed());
  CHECK_FALSE(producer->setup_status());
  producer.reset();
  CHECK(dev.pending_everywhere() == 0);
  CHECK(ctx.pending_device_waits() == 0);
}

//===-- the fake driver keeps CUDA's rules ------------------------------------===//

TEST_CASE("cuda fake driver: GEQ is the signed cyclic compare", "[cuda][fake]") {
  causal_cuda_test::fake_device dev;
  const causal::cuda::driver_table& table = causal_cuda_test::fake_device::table();
  causal::cuda::api::stream_t s{};
  REQUIRE(table.stream_create(&s) == 0);
  void* host = nullptr;
  REQUIRE(table.host_alloc_mapped(&host, sizeof(std::uint64_t)) == 0);
  auto* word = static_cast<std::uint64_t*>(host);
  *word = ~std::uint64_t{0} - 1;  // just below the wrap
  REQUIRE(table.wait_value64(s, word, 3) == 0);  // 3 is "after" the wrap: not yet
  dev.run();
  CHECK(dev.pending(s) == 1);
  *word = 4;  // wrapped past 3: (int64_t)(4 - 3) >= 0
  dev.run();
  CHECK(dev.pending(s) == 0);
  REQUIRE(table.wait_value64(s, word, ~std::uint64_t{0}) == 0);  // before 4, cyclically: passes
  dev.run();
  CHECK(dev.pending(s) == 0);
  (void)table.stream_destroy(s);
}

TEST_CASE("cuda fake driver: host functions run on a callback thread; the adapter's never call "
          "the runtime",
          "[cuda][fake][completion]") {
  event_fixture f;  // events mode completes with host functions
  auto& dev = f.env().device;
  auto& q1 = f.make_queue();
  auto& q2 = f.make_queue();
  auto& s = f.make_semaphore();
  auto& done = f.make_semaphore();
  REQUIRE(q1.submit({}, {{&s, 1}}, f.op(1)));
  REQUIRE(q2.submit({{&s, 1}}, {{&done, 1}}, f.op(2)));
  REQUIRE(f.finish());
  CHECK(done.value() == 1);
  CHECK(dev.callback_thread_id() != std::thread::id{});
  CHECK(dev.callback_thread_id() != std::this_thread::get_id());
  CHECK(dev.runtime_calls_from_host_functions() == 0);
}

TEST_CASE("cuda fake driver: streams beyond the connection count share a hardware queue",
          "[cuda][fake]") {
  causal_cuda_test::fake_device dev;
  dev.connections = 1;
  const causal::cuda::driver_table& table = causal_cuda_test::fake_device::table();
  causal::cuda::api::stream_t a{};
  causal::cuda::api::stream_t b{};
  REQUIRE(table.stream_create(&a) == 0);
  REQUIRE(table.stream_create(&b) == 0);
  void* host = nullptr;
  REQUIRE(table.host_alloc_mapped(&host, sizeof(std::uint64_t)) == 0);
  auto* word = static_cast<std::uint64_t*>(host);
  *word = 0;
  std::vector<int> log;
  REQUIRE(table.wait_value64(a, word, 1) == 0);
  dev.enqueue_work(b, [&] { log.push_back(2); });  // independent, but queued behind a's wait
  dev.run();
  CHECK(log.empty());  // head-of-line blocking
  *word = 1;
  dev.run();
  CHECK(log == std::vector<int>{2});
  (void)table.stream_destroy(a);
  (void)table.stream_destroy(b);
}

TEST_CASE("cuda stream queue: a sticky device error fails the queue; teardown does not hang and "
          "never reuses a word the stream may still read",
          "[cuda][failure][teardown]") {
  causal_cuda_test::fake_device dev;
  const causal::cuda::driver_table& table = causal_cuda_test::fake_device::table();
  {
    causal::cuda::device_context ctx(table);
    REQUIRE(ctx.setup_status());
    causal::axis_allocator axes;
    auto gate = std::make_unique<causal::cuda::semaphore>(ctx);
    causal::cuda::semaphore out(ctx);
    const std::uint32_t gate_index = gate->word_index();
    {
      causal::cuda::stream_queue q(axes.allocate(0, causal::domain::queue).value(), ctx);
      // Enqueued ahead of their signals: a stream left waiting on a word.
      REQUIRE(q.backend().set_waits_before_signal(true));
      REQUIRE(q.submit({{gate.get(), 1}}, {{&out, 1}}, causal::cuda::stream_operation::marker()));
      dev.make_sticky(700);  // cudaErrorIllegalAddress: the context is gone
      const causal::status st = q.synchronize();
      CHECK(st.code() == errc::device_lost);
      CHECK(st.error_value().position() == 700);
      CHECK(out.failed());
      auto later = q.submit({}, {}, causal::cuda::stream_operation::marker());
      REQUIRE_FALSE(later);
      CHECK(later.error_value().position() == 700);
    }  // teardown: the synchronisation fails at once, it does not block
    CHECK(dev.blocked_syncs() == 0);
    // Whether the stream passed the wait is unknown: it stays counted and
    // the word is retired, never handed out again.
    CHECK(ctx.device_waits_on(gate_index) == 1);
    gate.reset();
    // gate's word, and the queue's completion word (a stream never drained
    // may still write it).
    CHECK(ctx.words_retiring() == 2);
    causal::cuda::semaphore fresh(ctx);
    CHECK(fresh.word_index() != gate_index);
  }  // the context leaves the slab mapped (a wait is still counted)
  CHECK(dev.freed_word_accesses() == 0);
}

TEST_CASE("cuda stream queue: synchronize does not block on an operation behind a failed "
          "semaphore",
          "[cuda][failure]") {
  fake_fixture f;
  auto& dev = f.env().device;
  auto& q = f.make_queue();
  // Enqueued ahead of their signals: a stream left waiting on a word.
  REQUIRE(q.backend().set_waits_before_signal(true));
  auto& first = f.make_semaphore();
  auto& doomed = f.make_semaphore();
  auto& a = f.make_semaphore();
  auto& b = f.make_semaphore();
  REQUIRE(q.submit({{&first, 1}}, {{&a, 1}}, f.op(1)));   // waits on a live semaphore
  REQUIRE(q.submit({{&doomed, 1}}, {{&b, 1}}, f.op(2)));  // waits on one that will fail
  REQUIRE(doomed.fail(causal::error{errc::device_lost, "test: doomed"}));
  const causal::status st = q.synchronize();
  CHECK(st.code() == errc::device_lost);
  CHECK(dev.blocked_syncs() == 0);  // answered without blocking on the stream
  CHECK_FALSE(a.failed());  // the earlier operation is still in flight, not failed
  // The failed operation fails its signals in turn, behind the one ahead of
  // it (which could still reach a lower value of a semaphore it signals).
  CHECK_FALSE(b.failed());
  REQUIRE(first.signal(1));
  f.pump();
  CHECK(a.value() == 1);
  REQUIRE(b.failure());
  CHECK(b.failure()->code() == errc::device_lost);
  CHECK(f.log() == std::vector<int>{1});
}

TEST_CASE("cuda stream queue: a wait issued before its signal is held on the host, so streams "
          "that share a hardware queue cannot deadlock",
          "[cuda][memory_ops][deadlock]") {
  fake_fixture f;
  auto& dev = f.env().device;
  dev.connections = 1;  // every stream on one hardware queue
  dev.sync_hang_guard = std::chrono::milliseconds(3000);  // only stops a hang
  auto& waiter = f.make_queue();
  auto& signaller = f.make_queue();
  auto& s = f.make_semaphore();
  auto& out = f.make_semaphore();
  // Enqueued now, the wait would sit at the head of the shared hardware
  // queue, ahead of the signal it waits for.
  REQUIRE(waiter.submit({{&s, 1}}, {{&out, 1}}, f.op(1)));
  CHECK(dev.calls("wait_value64") == 0);
  CHECK(waiter.backend().held() == 1);
  CHECK(waiter.backend().issued().held_operations == 1);
  // An operation submitted after a held one is held behind it (FIFO).
  auto& later = f.make_semaphore();
  REQUIRE(waiter.submit({}, {{&later, 1}}, f.op(3)));
  CHECK(waiter.backend().held() == 2);
  // Announced is not sent: the signal is written by the stream's next command.
  REQUIRE(signaller.submit({}, {{&s, 1}}, f.op(2)));
  CHECK(s.sent(1));
  REQUIRE(waiter.pump());  // the signal is sent: both are issued, behind it
  CHECK(waiter.backend().held() == 0);
  CHECK(dev.calls("wait_value64") == 1);
  REQUIRE(waiter.synchronize());
  REQUIRE(signaller.synchronize());
  CHECK(dev.blocked_syncs() == 0);
  CHECK(out.value() == 1);
  CHECK(later.value() == 1);
  CHECK(f.log() == std::vector<int>{2, 1, 3});
  REQUIRE(f.finish());
}

TEST_CASE("cuda stream queue: a held operation whose wait fails is dropped, and teardown drops "
          "what is still held",
          "[cuda][memory_ops][failure]") {
  fake_fixture f;
  auto& dev = f.env().device;
  SECTION("the wait's semaphore fails") {
    auto& q = f.make_queue();
    auto& gate = f.make_semaphore();
    auto& out = f.make_semaphore();
    REQUIRE(q.submit({{&gate, 1}}, {{&out, 1}}, f.op(1)));
    REQUIRE(gate.fail(causal::error{errc::device_lost, "test: gate"}));
    (void)q.poll();
    CHECK(out.failed());
    CHECK(q.backend().held() == 0);
    CHECK(q.backend().in_flight() == 0);  // never reached the stream: gone
    CHECK(dev.calls("wait_value64") == 0);
    CHECK(dev.calls("launch_host_func") == 0);
    CHECK(f.log().empty());
  }
  SECTION("the queue is destroyed while holding") {
    causal::cuda::semaphore gate(f.context());
    causal::cuda::semaphore out(f.context());
    {
      causal::axis_allocator axes;
      causal::cuda::stream_queue q(axes.allocate(0, causal::domain::queue).value(), f.context());
      REQUIRE(q.submit({{&gate, 1}}, {{&out, 1}}, f.op(1)));
    }  // no wait on the stream: teardown does not block
    CHECK(dev.blocked_syncs() == 0);
    REQUIRE(out.failed());
    CHECK(out.failure()->code() == errc::cancelled);
    CHECK(f.log().empty());
  }
}

TEST_CASE("cuda stream queue: a held operation whose wait failed fails its signals only after "
          "the operations ahead of it",
          "[cuda][memory_ops][failure]") {
  // q's second operation waits for x (which fails) and for s >= 1, elided:
  // q's own first operation signals it (same queue, FIFO), so no guard
  // stands for it. Failing s = 2 at once would fail s before the first
  // operation's s = 1, still on the stream, reaches the host, and qd,
  // which needs only that, would fail with it (docs/queues.md, "Elision
  // never changes an outcome").
  fake_fixture f;
  auto& q = f.make_queue();
  auto& qd = f.make_queue();
  auto& x = f.make_semaphore();
  auto& s = f.make_semaphore();
  auto& done = f.make_semaphore();
  REQUIRE(q.submit({}, {{&s, 1}}, f.op(1)));
  REQUIRE(q.submit({{&x, 1}, {&s, 1}}, {{&s, 2}}, f.op(2)));
  CHECK(q.stats().elided_same_queue == 1);
  CHECK(q.backend().held() == 1);
  REQUIRE(qd.submit({{&s, 1}}, {{&done, 1}}, f.op(3)));
  REQUIRE(x.fail(causal::error{errc::device_lost, "test: x lost"}));
  (void)q.poll();
  CHECK_FALSE(s.failed());  // the first operation has not completed yet
  f.pump();                 // the streams run: s = 1 is reached, then s fails
  CHECK(s.value() == 1);
  REQUIRE(s.failure());
  CHECK(s.failure()->code() == errc::device_lost);
  CHECK(done.value() == 1);
  CHECK_FALSE(done.failed());
  CHECK(q.completed_epoch() == 1);
  CHECK(f.log() == std::vector<int>{1, 3});
  CHECK(f.finish().code() == errc::device_lost);
}

TEST_CASE("cuda stream queue: with waits enqueued ahead, a failure reaches an operation's signals "
          "only after its elided waits",
          "[cuda][memory_ops][failure]") {
  // The conformance case (its queues hold waits on the host) on streams
  // that enqueue every wait at once, where poll() finds the failure: qb's
  // second operation elides s >= 1 (qb learnt qa's operation through
  // tc = 2) and is stuck behind qb's first, whose wait fails. Its s = 2 may
  // fail only once qa's s = 1 is reached.
  fake_fixture f;
  auto& qa = f.make_queue();
  auto& qb = f.make_queue();
  auto& qc = f.make_queue();
  auto& qd = f.make_queue();
  for (auto* q : {&qa, &qb, &qc, &qd}) REQUIRE(q->backend().set_waits_before_signal(true));
  auto& gate = f.make_semaphore();
  auto& upstream = f.make_semaphore();
  auto& s = f.make_semaphore();
  auto& tc = f.make_semaphore();
  auto& done = f.make_semaphore();
  REQUIRE(qa.submit({{&gate, 1}}, {{&s, 1}}, f.op(1)));
  REQUIRE(qc.submit({{&upstream, 1}}, {{&tc, 1}}, f.op(2)));
  REQUIRE(qc.submit({{&s, 1}}, {{&tc, 2}}, f.op(3)));
  REQUIRE(qb.submit({{&tc, 2}}, {}, f.op(4)));
  REQUIRE(qb.submit({{&s, 1}}, {{&s, 2}}, f.op(5)));
  CHECK(qb.stats().elided_dominated == 1);
  REQUIRE(qd.submit({{&s, 1}}, {{&done, 1}}, f.op(6)));
  REQUIRE(upstream.fail(causal::error{errc::device_lost, "test: upstream lost"}));
  f.pump();
  REQUIRE(tc.failure());
  CHECK(tc.failure()->code() == errc::device_lost);
  CHECK_FALSE(s.failed());  // qb's second operation waits for its guard
  REQUIRE(gate.signal(1));
  f.pump();
  CHECK(done.value() == 1);
  CHECK(s.value() == 1);  // qa's signal kept; qb failed s after it
  REQUIRE(s.failure());
  const auto log = f.log();
  CHECK(std::count(log.begin(), log.end(), 1) == 1);
  CHECK(std::count(log.begin(), log.end(), 6) == 1);
  CHECK(std::count(log.begin(), log.end(), 5) == 0);
}

TEST_CASE("cuda stream queue: a wait on a value reached before its semaphore failed goes through",
          "[cuda][memory_ops][failure]") {
  // docs/semaphores.md, "Failure": the failure freezes the payload; the
  // queue finds u failed with the wait still on the stream (enqueued
  // ahead), and must not fail an operation whose value was reached.
  fake_fixture f;
  auto& q = f.make_queue();
  REQUIRE(q.backend().set_waits_before_signal(true));
  auto& u = f.make_semaphore();
  auto& out = f.make_semaphore();
  REQUIRE(q.submit({{&u, 1}}, {{&out, 1}}, f.op(1)));
  REQUIRE(u.signal(1));  // the relay writes the word
  REQUIRE(u.fail(causal::error{errc::device_lost, "test: u failed after reaching 1"}));
  SECTION("found by poll") { CHECK(q.poll() == 0); }
  SECTION("found by synchronize") { CHECK(q.synchronize()); }
  CHECK_FALSE(out.failed());
  f.pump();
  CHECK(out.value() == 1);
  CHECK(q.completed_epoch() == 1);
  CHECK(f.log() == std::vector<int>{1});
  REQUIRE(f.finish());
}

#if CAUSAL_CUDA_IS_HIP()
namespace {
std::atomic<int> hip_relay_first_runs{0};
void hip_relay_first(void*) noexcept { hip_relay_first_runs.fetch_add(1); }
void hip_relay_other(void*) noexcept {}
}  // namespace

TEST_CASE("hip driver: the host-function relay keeps one function; another is refused, not run "
          "in its place",
          "[hip][driver]") {
  // The real HIP runtime (no AMD GPU needed): hipStreamAddCallback's data
  // pointer carries the operation, the one host function sits in a slot.
  using native = causal::cuda::detail::native;
  // Without a device the runtime answers an error; either way the first
  // function now holds the slot.
  (void)native::launch_host_func(nullptr, &hip_relay_first, nullptr);
  (void)native::launch_host_func(nullptr, &hip_relay_first, nullptr);
  CHECK(native::launch_host_func(nullptr, &hip_relay_other, nullptr) ==
        causal::cuda::detail::not_supported);
}
#endif

TEST_CASE("cuda stream queue: memory-ops completion is a word the stream writes, polled by the "
          "host; no host function per submission",
          "[cuda][memory_ops][completion]") {
  fake_fixture f;
  auto& dev = f.env().device;
  auto& q = f.make_queue();
  auto& s = f.make_semaphore();
  for (std::uint64_t v = 1; v <= 3; ++v) REQUIRE(q.submit({}, {{&s, v}}, f.op(static_cast<int>(v))));
  CHECK(dev.calls("launch_host_func") == 0);
  CHECK(q.backend().issued().host_functions == 0);
  CHECK(q.backend().issued().completion_writes == 3);
  CHECK(q.poll() == 0);  // nothing ran yet
  dev.run();             // the stream runs: work, signal, completion word
  CHECK(dev.callback_thread_id() == std::thread::id{});  // no host function ever ran
  CHECK(q.poll() == 3);
  CHECK(s.value() == 3);
  CHECK(q.completed_epoch() == 3);
  REQUIRE(f.finish());
}

TEST_CASE("cuda stream queue: without 64-bit memory operations completion stays a host function",
          "[cuda][completion]") {
  causal_cuda_test::fake_device dev;
  dev.memory_ops = false;
  const causal::cuda::driver_table& table = causal_cuda_test::fake_device::table();
  causal::cuda::device_context ctx(table);
  REQUIRE(ctx.setup_status());
  causal::axis_allocator axes;
  causal::cuda::semaphore s(ctx);
  causal::cuda::stream_queue q(axes.allocate(0, causal::domain::queue).value(), ctx);
  REQUIRE(q.backend().host_signalling());
  REQUIRE(q.submit({}, {{&s, 1}}, causal::cuda::stream_operation::marker()));
  CHECK(dev.calls("launch_host_func") == 1);
  CHECK(q.backend().issued().completion_writes == 0);
  REQUIRE(q.synchronize());
  CHECK(s.value() == 1);
}

TEST_CASE("cuda device: a context destroyed under a live semaphore is refused loudly",
          "[cuda][device][lifetime]") {
  CAUSAL_TEST_NEEDS_FORK();
  const causal_test::child_outcome out = causal_test::run_child([] {
    causal_cuda_test::fake_device dev;
    auto* ctx = new causal::cuda::device_context(causal_cuda_test::fake_device::table());
    causal::cuda::semaphore s(*ctx);
    delete ctx;  // refused: s holds one of its words
  });
  CHECK(out.aborted);
  CHECK(causal_test::contains(out.stderr_text, "cuda::device_context destroyed while 1 semaphore(s)"));

  causal_cuda_test::fake_device dev;
  causal::cuda::device_context ctx(causal_cuda_test::fake_device::table());
  { causal::cuda::semaphore s(ctx); }
  CHECK(ctx.words_in_use() == 0);
}

//===-- issue 33: an independent review's defects -----------------------------===//

namespace {

struct no_memops_env : causal_cuda_test::fake_env {
  no_memops_env() { device.memory_ops = false; }
};
using fallback_fixture = causal_cuda_test::cuda_fixture<no_memops_env>;

// A consumer submits inside the producer's cudaEventRecord: after the core
// announced the signal, before the backend entered its event in the
// ledger (another thread's submit can land there in a program).
template <class Fixture>
void wait_between_announce_and_record() {
  Fixture f;
  auto& dev = f.env().device;
  auto& producer = f.make_queue();
  auto& consumer = f.make_queue();
  auto& s = f.make_semaphore();
  auto& done = f.make_semaphore();
  std::optional<causal::result<causal::submission>> inside;
  dev.after_next("event_record",
                 [&] { inside = consumer.submit({{&s, 1}}, {{&done, 1}}, f.op(2)); });
  REQUIRE(producer.submit({}, {{&s, 1}}, f.op(1)));
  REQUIRE(inside.has_value());
  REQUIRE(*inside);  // not failed_precondition: held until the event exists
  CHECK_FALSE((*inside)->deferred);
  CHECK(consumer.backend().held() == 1);
  CHECK_FALSE(done.failed());
  REQUIRE(f.finish());
  CHECK(f.log() == std::vector<int>{1, 2});
  CHECK(done.value() == 1);
  CHECK(consumer.backend().held() == 0);
}

}  // namespace

TEST_CASE("cuda stream queue: a wait on a value announced before its event is recorded is held, "
          "not refused",
          "[cuda][events][fallback][issue33]") {
  SECTION("events mode") { wait_between_announce_and_record<event_fixture>(); }
  SECTION("host-signalling fallback") { wait_between_announce_and_record<fallback_fixture>(); }
}

TEST_CASE("cuda stream queue: a wait on another device context's semaphore is refused, nothing "
          "issued",
          "[cuda][issue33]") {
  fake_fixture f;
  auto& dev = f.env().device;
  auto& q = f.make_queue();
  auto& done = f.make_semaphore();
  causal::cuda::device_context other(f.env().table());
  REQUIRE(other.setup_status());
  {
    causal::cuda::semaphore foreign(other);
    const std::size_t counted = f.context().pending_device_waits();
    REQUIRE(q.backend().set_waits_before_signal(true));  // would enqueue (and count) at once
    auto r = q.submit({{&foreign, 1}}, {{&done, 1}}, f.op(1));
    REQUIRE_FALSE(r);
    CHECK(r.error_value().code() == errc::invalid_argument);
    CHECK(std::string(r.error_value().message()).find("device_context") != std::string::npos);
    CHECK(q.epoch() == 0);
    CHECK_FALSE(done.failed());
    CHECK(dev.calls("wait_value64") == 0);
    CHECK(f.context().pending_device_waits() == counted);
    CHECK(other.pending_device_waits() == 0);
  }
  REQUIRE(f.finish());
}

TEST_CASE("cuda device: a failed word is raised only while it is in use, never after its free",
          "[cuda][issue33]") {
  causal_cuda_test::fake_device dev;
  causal::cuda::device_context ctx(causal_cuda_test::fake_device::table());
  REQUIRE(ctx.setup_status());
  auto w = ctx.allocate_word(0);
  REQUIRE(w);
  ctx.mark_failed_word(w->index, 5);
  ctx.free_word(*w);
  // Freed: a teardown's release must not write it (allocate_word may be
  // handing it to a new semaphore on another thread right now).
  CHECK_FALSE(ctx.release_if_failed(w->index));
  CHECK(ctx.release_failed_words() == 0);
  CHECK(*w->host == 0);
  auto again = ctx.allocate_word(0);
  REQUIRE(again);
  CHECK(again->index == w->index);
  CHECK_FALSE(ctx.release_if_failed(again->index));
  CHECK(*again->host == 0);
  ctx.free_word(*again);
}

TEST_CASE("cuda stream queue: a value 2^63 or more ahead is refused (CUDA's cyclic >= would pass "
          "it at once)",
          "[cuda][issue33]") {
  fake_fixture f;
  auto& q = f.make_queue();
  auto& s = f.make_semaphore();
  auto& t = f.make_semaphore();
  const std::uint64_t far = std::uint64_t{1} << 63;
  auto wait = q.submit({{&s, far}}, {}, f.op(1));
  REQUIRE_FALSE(wait);
  CHECK(wait.error_value().code() == errc::invalid_argument);
  auto signal = q.submit({}, {{&t, far}}, f.op(2));
  REQUIRE_FALSE(signal);
  CHECK(signal.error_value().code() == errc::invalid_argument);
  CHECK(q.epoch() == 0);
  CHECK_FALSE(t.failed());
  // Just inside the bound is fine.
  REQUIRE(q.submit({}, {{&t, far - 1}}, f.op(3)));
  REQUIRE(f.finish());
  CHECK(t.value() == far - 1);
}

TEST_CASE("cuda stream queue: synchronize reports operations still held instead of ok",
          "[cuda][issue33]") {
  fake_fixture f;
  auto& q = f.make_queue();
  auto& gate = f.make_semaphore();
  REQUIRE(q.submit({{&gate, 1}}, {}, f.op(1)));
  REQUIRE(q.backend().held() == 1);
  const causal::status st = q.synchronize();
  CHECK_FALSE(st);
  CHECK(st.code() == errc::failed_precondition);
  CHECK(q.backend().failure());  // not sticky
  REQUIRE(gate.signal(1));
  REQUIRE(q.synchronize());
  CHECK(f.log() == std::vector<int>{1});
}

TEST_CASE("cuda device: opening a context leaves the calling thread's device as it was",
          "[cuda][issue33]") {
  causal_cuda_test::fake_device dev;
  dev.devices = 2;
  const causal::cuda::driver_table& table = causal_cuda_test::fake_device::table();
  REQUIRE(table.set_device(1) == 0);
  causal::cuda::device_context ctx(table, 0);
  REQUIRE(ctx.setup_status());
  int current = -1;
  REQUIRE(table.get_device(&current) == 0);
  CHECK(current == 1);
  REQUIRE(table.set_device(0) == 0);
}

TEST_CASE("cuda stream queue: every mode completes through one host function (HIP relays one per "
          "process)",
          "[cuda][hip][issue33]") {
  causal_cuda_test::fake_device dev;
  dev.memory_ops = false;  // the fallback uses host functions too
  causal::cuda::device_context ctx(causal_cuda_test::fake_device::table());
  REQUIRE(ctx.setup_status());
  causal::axis_allocator axes;
  {
    causal::cuda::stream_queue fallback(axes.allocate(0, causal::domain::queue).value(), ctx);
    causal::cuda::event_stream_queue events(axes.allocate(0, causal::domain::queue).value(), ctx);
    REQUIRE(fallback.submit({}, {}, causal::cuda::stream_operation::marker()));
    REQUIRE(events.submit({}, {}, causal::cuda::stream_operation::marker()));
    CHECK(dev.distinct_host_functions() == 1);
    REQUIRE(fallback.synchronize());
    REQUIRE(events.synchronize());
    CHECK(fallback.completed_epoch() == 1);
    CHECK(events.completed_epoch() == 1);
  }
}

#if CAUSAL_CUDA_IS_HIP()
TEST_CASE("hip driver: a callback that reports an error does not run the host function",
          "[hip][driver][issue33]") {
  using native = causal::cuda::detail::native;
  (void)native::launch_host_func(nullptr, &hip_relay_first, nullptr);
  REQUIRE(native::relay_fn().load() == &hip_relay_first);
  const int before = hip_relay_first_runs.load();
  native::callback_thunk(nullptr, hipErrorLaunchFailure, nullptr);
  CHECK(hip_relay_first_runs.load() == before);  // faulted work never reads as complete
  native::callback_thunk(nullptr, hipSuccess, nullptr);
  CHECK(hip_relay_first_runs.load() == before + 1);
}
#endif

TEST_CASE("cuda interop: an external wait is held until its value is sent, so a shared hardware "
          "queue does not deadlock",
          "[cuda][interop][issue33]") {
  fake_fixture f;
  auto& dev = f.env().device;
  dev.connections = 1;  // every stream on one hardware queue
  auto& waiter = f.make_queue();
  auto& other = f.make_queue();
  auto& vk = f.make_semaphore();  // stands for the Vulkan timeline here
  causal::cuda::external_timeline<causal::cuda::semaphore> ext(f.context(), 42, dev.uuid_of(0), vk);
  REQUIRE(ext.setup_status());
  REQUIRE(waiter.submit({}, {}, ext.wait_op(3)));
  CHECK(waiter.backend().held() == 1);
  CHECK(dev.calls("wait_external") == 0);
  // Unrelated work on another stream is not stuck behind the wait (the
  // Vulkan side may be waiting for it: CUDA -> Vulkan -> CUDA).
  REQUIRE(other.submit({}, {}, f.op(2)));
  f.pump();
  CHECK(f.log() == std::vector<int>{2});
  dev.external_at(0).value = 3;
  REQUIRE(ext.observe(3));
  REQUIRE(waiter.submit({}, {}, f.op(1)));
  f.pump();
  CHECK(dev.calls("wait_external") == 1);
  REQUIRE(f.finish());
  CHECK(f.log() == std::vector<int>{2, 1});
}

TEST_CASE("cuda fake driver: a destroyed stream keeps its queued commands and runs them",
          "[cuda][fake][issue33]") {
  // The adapter's teardown depends on CUDA's rule (cudaStreamDestroy
  // neither drains nor cancels): pin it, so a fake that drops them fails.
  causal_cuda_test::fake_device dev;
  const causal::cuda::driver_table& t = causal_cuda_test::fake_device::table();
  causal::cuda::api::stream_t s{};
  REQUIRE(t.stream_create(&s) == 0);
  bool ran = false;
  dev.enqueue_work(s, [&] { ran = true; });
  REQUIRE(t.stream_destroy(s) == 0);
  CHECK(dev.pending_everywhere() == 1);
  CHECK_FALSE(ran);
  dev.run();
  CHECK(ran);
  CHECK(dev.pending_everywhere() == 0);
}

TEST_CASE("cuda fake driver: a sticky error is answered by destroy and free too",
          "[cuda][fake][issue33]") {
  causal_cuda_test::fake_device dev;
  const causal::cuda::driver_table& t = causal_cuda_test::fake_device::table();
  causal::cuda::api::stream_t s{};
  REQUIRE(t.stream_create(&s) == 0);
  void* h = nullptr;
  REQUIRE(t.host_alloc_mapped(&h, 64) == 0);
  dev.make_sticky(700);
  CHECK(t.stream_destroy(s) == 700);
  CHECK(t.host_free(h) == 700);
  CHECK_FALSE(dev.live(h));
}

//===-- issue 33, item 8: frees and destroys ordered after the streams --------===//

namespace {

// A stream operation that uses device memory at `pointer`: when the fake
// runs it, it records whether the memory was still allocated.
struct memory_use {
  causal_cuda_test::fake_device* device = nullptr;
  const void* pointer = nullptr;
  bool ran = false;
  bool live_when_run = false;

  causal::cuda::stream_operation op() noexcept {
    return causal::cuda::stream_operation{&launch, this, 0, "memory use"};
  }
  static int launch(causal::cuda::api::stream_t s, void* self, std::uint64_t) noexcept {
    auto* u = static_cast<memory_use*>(self);
    u->device->enqueue_work(s, [u] {
      u->ran = true;
      u->live_when_run = u->device->live(u->pointer);
    });
    return 0;
  }
};

}  // namespace

TEST_CASE("cuda device pool: the arena is freed on the device only after the queues that used it",
          "[cuda][pool][teardown][issue33]") {
  fake_fixture f;
  auto& dev = f.env().device;
  // The pool first: its stream is the oldest, on hardware queue 0, so the
  // fake reaches its free before any queue's work unless the free waits.
  std::optional<causal::cuda::device_block_pool<causal::cuda::stream_queue>> pool;
  pool.emplace(f.context(), 1024);
  REQUIRE(pool->setup_status());
  auto& q = f.make_queue();
  auto& progress = f.make_semaphore();
  auto& gate = f.make_semaphore();
  q.set_progress_timeline(progress);
  REQUIRE(pool->register_timeline(q.axis(), progress));
  // The gate's wait goes on the stream at once (the relay writes it), so
  // the work behind it is queued on the device, not held on the host.
  REQUIRE(q.backend().set_waits_before_signal(true));
  auto block = q.stream_alloca(*pool, 512);
  REQUIRE(block);
  memory_use use{&dev, block->pointer};
  REQUIRE(q.submit({{&gate, 1}}, {}, use.op()));
  REQUIRE(q.stream_dealloca(*pool, *block));
  // The gate opens while the pool is being destroyed, right after it
  // enqueued its free.
  bool opened = false;
  dev.after_next("free_async", [&] {
    opened = true;
    CHECK(gate.signal(1));
  });
  pool.reset();
  CHECK(opened);
  // The destructor has waited for its free: no wait on the progress word
  // is left counted.
  CHECK(f.context().device_waits_on(progress.word_index()) == 0);
  REQUIRE(f.finish());
  CHECK(use.ran);
  CHECK(use.live_when_run);  // the free waited for the queue's progress
  CHECK_FALSE(dev.live(block->pointer));
}

TEST_CASE("cuda interop: an imported semaphore is destroyed only after the streams that use it "
          "have passed their operations on it",
          "[cuda][interop][teardown][issue33]") {
  fake_fixture f;
  auto& dev = f.env().device;
  auto& q = f.make_queue();
  auto& gate = f.make_semaphore();
  auto& vk = f.make_semaphore();  // stands for the Vulkan timeline here
  REQUIRE(q.backend().set_waits_before_signal(true));  // the gate's wait goes on the stream
  bool opened = false;
  {
    causal::cuda::external_timeline<causal::cuda::semaphore> ext(f.context(), 42, dev.uuid_of(0),
                                                                 vk);
    REQUIRE(ext.setup_status());
    // The external signal is queued behind the gate.
    REQUIRE(q.submit({{&gate, 1}}, {}, ext.signal_op(4)));
    CHECK(dev.calls("signal_external") == 1);
    // The gate opens while the timeline is being destroyed, once it has
    // made a stream wait for what the queues enqueued on it.
    dev.after_next("stream_wait_event", [&] {
      opened = true;
      CHECK(gate.signal(1));
    });
  }
  if (!opened) CHECK(gate.signal(1));
  CHECK(dev.external_at(0).destroyed);
  REQUIRE(f.finish());
  CHECK(dev.destroyed_external_uses() == 0);
  CHECK(dev.external_at(0).value == 4);  // signalled before the handle went
  CHECK(opened);
}

TEST_CASE("cuda interop: an imported semaphore no stream used is destroyed at once",
          "[cuda][interop][teardown][issue33]") {
  fake_fixture f;
  auto& dev = f.env().device;
  auto& vk = f.make_semaphore();
  const int streams = dev.calls("stream_create");
  {
    causal::cuda::external_timeline<causal::cuda::semaphore> ext(f.context(), 42, dev.uuid_of(0),
                                                                 vk);
    REQUIRE(ext.setup_status());
  }
  CHECK(dev.external_at(0).destroyed);
  CHECK(dev.calls("stream_create") == streams);  // no stream, no synchronisation
}

namespace {

// A host function that blocks until work on another stream has run.
struct blocking_host_function {
  std::mutex mutex;
  std::condition_variable cv;
  bool other_ran = false;
  bool saw_other = false;
  std::vector<int> order;  // appended by stream work and the host function, in turn

  static void fn(void* self) noexcept {
    auto* h = static_cast<blocking_host_function*>(self);
    std::unique_lock<std::mutex> lock(h->mutex);
    // A hang guard only: the test waits for the other stream's work.
    h->saw_other = h->cv.wait_for(lock, std::chrono::seconds(20), [h] { return h->other_ran; });
    h->order.push_back(1);
  }
  void other_work() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      other_ran = true;
      order.push_back(2);
    }
    cv.notify_all();
  }
};

}  // namespace

TEST_CASE("cuda fake driver: a host function runs on the callback thread without stopping the "
          "device; it holds only its own stream",
          "[cuda][fake][completion][issue33]") {
  // CUDA runs a host function on a runtime thread; its stream waits for
  // it, other streams go on. A fake that ran it inside run() would stall
  // every stream until it returned.
  causal_cuda_test::fake_device dev;
  const causal::cuda::driver_table& t = causal_cuda_test::fake_device::table();
  causal::cuda::api::stream_t a{};
  causal::cuda::api::stream_t b{};
  REQUIRE(t.stream_create(&a) == 0);
  REQUIRE(t.stream_create(&b) == 0);
  blocking_host_function h;
  REQUIRE(t.launch_host_func(a, &blocking_host_function::fn, &h) == 0);
  dev.enqueue_work(a, [&] {
    std::lock_guard<std::mutex> lock(h.mutex);
    h.order.push_back(3);  // behind the host function, on its stream
  });
  dev.enqueue_work(b, [&] { h.other_work(); });
  dev.run();  // returns once nothing can run and no host function is running
  CHECK(h.saw_other);
  CHECK(h.order == std::vector<int>{2, 1, 3});
  CHECK(dev.pending_everywhere() == 0);
  CHECK(dev.callback_thread_id() != std::this_thread::get_id());
  (void)t.stream_destroy(a);
  (void)t.stream_destroy(b);
}

TEST_CASE("cuda device pool: a release by a queue without a registered progress timeline is "
          "refused, nothing changed",
          "[cuda][pool][issue33]") {
  fake_fixture f;
  auto& q = f.make_queue();
  auto& progress = f.make_semaphore();
  causal::cuda::device_block_pool<causal::cuda::stream_queue> pool(f.context(), 1024);
  REQUIRE(pool.setup_status());
  auto block = q.stream_alloca(pool, 256);
  REQUIRE(block);
  REQUIRE(q.submit({}, {}, f.op(1)));
  // The pool could not order its arena's free after this queue's work.
  const causal::status refused = q.stream_dealloca(pool, *block);
  CHECK(refused.code() == errc::failed_precondition);
  CHECK(pool.placement().live_count() == 1);
  CHECK(pool.stats().releases == 0);
  // With the queue's progress timeline registered it goes through.
  q.set_progress_timeline(progress);
  REQUIRE(pool.register_timeline(q.axis(), progress));
  REQUIRE(q.submit({}, {}, f.op(2)));
  REQUIRE(q.stream_dealloca(pool, *block));
  REQUIRE(f.finish());
  CHECK(f.log() == std::vector<int>{1, 2});
}

TEST_CASE("cuda device pool: destroyed while the freeing operation is held on the host, it is "
          "refused loudly",
          "[cuda][pool][teardown][lifetime][issue33]") {
  CAUSAL_TEST_NEEDS_FORK();
  const causal_test::child_outcome out = causal_test::run_child([] {
    fake_fixture f;
    auto& dev = f.env().device;
    auto* pool = new causal::cuda::device_block_pool<causal::cuda::stream_queue>(f.context(), 1024);
    auto& q = f.make_queue();
    auto& progress = f.make_semaphore();
    auto& gate = f.make_semaphore();
    q.set_progress_timeline(progress);
    (void)pool->register_timeline(q.axis(), progress);
    auto block = q.stream_alloca(*pool, 256);
    memory_use use{&dev, block->pointer};
    (void)q.submit({{&gate, 1}}, {}, use.op());  // held: the gate's signal is not sent
    (void)q.stream_dealloca(*pool, *block);
    delete pool;  // refused: its free could not be ordered after the held work
  });
  CHECK(out.aborted);
  CHECK(causal_test::contains(out.stderr_text, "cuda::device_block_pool destroyed while"));
}
