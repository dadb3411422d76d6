// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Tests for <causal/stream_process.hpp>: fills, copies and dispatches run
// in push order, one at a time, over 1, 2 and 4 workers (each copy reads
// what the fill just before it wrote; dispatches bump a plain, unsynchronised
// counter, so ThreadSanitizer checks that successive commands are ordered);
// a full ring rejects the push with capacity_exceeded and loses nothing; a
// producer thread streams 100 000 commands with pauses (the stream falls
// asleep and is woken again, round after round) and 20 000 push-then-wait
// rounds hit the drainer's way to sleep once each (no lost wake-up); close
// completes after what was pushed before it; cancel drops what is pending
// and rejects later pushes; bad input is rejected without queuing; and
// pushing and draining allocate nothing.
//
// Catch2 assertions are only made on the test's own thread; drained
// commands record what they see in plain fields that the test reads after
// waiting for executed() (acquire) or for the release callback.

#include <causal/executor.hpp>
#include <causal/process.hpp>
#include <causal/stream_process.hpp>

#include "catch.hpp"
#include "eventually.hpp"
#include "string_makers.hpp"
#include "counting_new.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

using causal::basic_executor;
using causal::basic_stream_process;
using causal::errc;
using causal::executor_options;
using causal::process;
using causal::status;
using causal::stream_process;

using namespace std::chrono_literals;

using causal::test::eventually;

executor_options workers(std::uint32_t n) { return executor_options{.worker_count = n}; }

/// Pushes with `push` until it is accepted (retrying while the ring is
/// full, for up to 20 s); returns the first other error, or success.
template <class Push>
status push_retry(Push push) {
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  for (;;) {
    status st = push();
    if (st.code() != errc::capacity_exceeded) return st;
    if (std::chrono::steady_clock::now() > deadline) return st;  // never drained: give up
    std::this_thread::yield();
  }
}

/// What dispatched commands see. Plain fields: the stream runs one command
/// at a time, in order, each after the previous (that is under test).
struct sequence {
  std::uint64_t next = 0;
  std::uint64_t out_of_order = 0;
  int inside = 0;
  int overlaps = 0;
};

struct numbered {
  sequence* seq = nullptr;
  std::uint64_t n = 0;
  static void run(void* data) noexcept {
    auto* c = static_cast<numbered*>(data);
    sequence& s = *c->seq;
    if (s.inside++ != 0) ++s.overlaps;
    if (s.next != c->n) ++s.out_of_order;
    ++s.next;
    --s.inside;
  }
};

struct completion_record {
  std::atomic<int> completions{0};
  std::atomic<int> code{-1};
  std::atomic<int> released{0};

  void attach(process& p) {
    p.set_user_data(this);
    p.set_completion([](process& self, status s) noexcept {
      auto* r = static_cast<completion_record*>(self.user_data());
      r->code.store(static_cast<int>(s.code()), std::memory_order_relaxed);
      r->completions.fetch_add(1, std::memory_order_acq_rel);
    });
    p.set_release([](process& self) noexcept {
      static_cast<completion_record*>(self.user_data())->released.store(1, std::memory_order_release);
    });
  }
  bool wait_released() {
    return eventually([&] { return released.load(std::memory_order_acquire) == 1; });
  }
};

}  // namespace

//===-- basics --------------------------------------------------------------===//

TEST_CASE("stream_process: layout and defaults", "[stream_process][basics]") {
  STATIC_REQUIRE(std::is_base_of_v<process, stream_process>);
  STATIC_REQUIRE(stream_process::capacity() == 256);
  STATIC_REQUIRE(sizeof(stream_process) == (6 + 256 / 2) * CAUSAL_CACHELINE_SIZE);
  STATIC_REQUIRE(alignof(stream_process) == CAUSAL_CACHELINE_SIZE);
  STATIC_REQUIRE(causal::stream_process_traits<causal::default_stream_process_traits>);
  STATIC_REQUIRE(!causal::stream_process_traits<int>);
  stream_process s;
  CHECK(s.wake_budget() == 1);
  CHECK(s.suspend_count() == 1);  // the submit hold
  CHECK(s.pushed() == 0);
  CHECK(s.executed() == 0);
  CHECK_FALSE(s.closed());
}

TEST_CASE("stream_process: bad input is rejected and queues nothing", "[stream_process][errors]") {
  stream_process s;
  CHECK(s.fill(nullptr, 1, 8).code() == errc::invalid_argument);
  CHECK(s.copy(nullptr, &s, 8).code() == errc::invalid_argument);
  int x = 0;
  CHECK(s.copy(&x, nullptr, 8).code() == errc::invalid_argument);
  CHECK(s.dispatch(nullptr, nullptr).code() == errc::invalid_argument);
  CHECK(s.pushed() == 0);
  // Zero bytes with null pointers is a valid no-op command.
  CHECK(s.fill(nullptr, 1, 0));
  CHECK(s.copy(nullptr, nullptr, 0));
  CHECK(s.pushed() == 2);
}

//===-- order ---------------------------------------------------------------===//

TEST_CASE("stream_process: fills, copies and dispatches run in push order, one at a time",
          "[stream_process][order]") {
  const std::uint32_t w = GENERATE(1u, 2u, 4u);
  CAPTURE(w);
  stream_process s;
  completion_record rec;
  rec.attach(s);
  basic_executor<> ex(workers(w));  // declared last: destroyed first
  ex.submit(s);

  constexpr int n = 3000;
  constexpr std::size_t block = 64;
  std::vector<unsigned char> scratch(16 * block, 0);
  std::vector<unsigned char> out(n * block, 0);
  std::vector<numbered> marks(n);
  sequence seq;
  int push_errors = 0;
  for (int i = 0; i < n; ++i) {
    unsigned char* slot = scratch.data() + (i % 16) * block;
    const auto value = static_cast<std::uint8_t>(i * 7 + 1);
    // The copy reads the slot the fill just wrote; a later fill of the
    // same slot (16 triples on) must not have run yet.
    push_errors += !push_retry([&] { return s.fill(slot, value, block); });
    push_errors += !push_retry([&] { return s.copy(out.data() + i * block, slot, block); });
    marks[i] = numbered{&seq, static_cast<std::uint64_t>(i)};
    push_errors += !push_retry([&] { return s.dispatch(&numbered::run, &marks[i]); });
  }
  CHECK(push_errors == 0);
  CHECK(s.pushed() == 3 * n);
  REQUIRE(eventually([&] { return s.executed() == 3 * n; }));
  int wrong_bytes = 0;
  for (int i = 0; i < n; ++i) {
    const auto value = static_cast<unsigned char>(i * 7 + 1);
    for (std::size_t b = 0; b < block; ++b) wrong_bytes += out[i * block + b] != value;
  }
  CHECK(wrong_bytes == 0);
  CHECK(seq.next == static_cast<std::uint64_t>(n));
  CHECK(seq.out_of_order == 0);
  CHECK(seq.overlaps == 0);
  // With the ring drained it goes to sleep: inactive, one suspension.
  CHECK(eventually([&] { return !s.is_active(); }));
  CHECK(s.suspend_count() == 1);
  REQUIRE(s.close());
  REQUIRE(rec.wait_released());
  CHECK(rec.code.load() == static_cast<int>(errc::ok));
  CHECK(rec.completions.load() == 1);
}

//===-- full ring -----------------------------------------------------------===//

TEST_CASE("stream_process: a full ring rejects the push with capacity_exceeded; nothing is lost",
          "[stream_process][full]") {
  const std::uint32_t w = GENERATE(1u, 2u);
  CAPTURE(w);
  basic_stream_process<8> s;
  completion_record rec;
  rec.attach(s);
  std::vector<numbered> marks(20);
  sequence seq;
  for (std::uint64_t i = 0; i < 20; ++i) marks[i] = numbered{&seq, i};
  // Not submitted yet: nothing drains, so the ninth push finds it full.
  for (int i = 0; i < 8; ++i) REQUIRE(s.dispatch(&numbered::run, &marks[i]));
  const status full = s.dispatch(&numbered::run, &marks[8]);
  CHECK(full.code() == errc::capacity_exceeded);
  CHECK(full.error_value().position() == 8);
  CHECK(s.close().code() == errc::capacity_exceeded);  // the end marker needs a slot too
  CHECK_FALSE(s.closed());
  CHECK(s.pushed() == 8);
  basic_executor<> ex(workers(w));  // declared last: destroyed first
  ex.submit(s);
  REQUIRE(eventually([&] { return s.executed() == 8; }));
  // The rejected command was not queued; pushed again, it runs in order.
  for (int i = 8; i < 20; ++i) {
    REQUIRE(push_retry([&] { return s.dispatch(&numbered::run, &marks[i]); }));
  }
  REQUIRE(push_retry([&] { return s.close(); }));
  REQUIRE(rec.wait_released());
  CHECK(s.executed() == 20);
  CHECK(seq.next == 20);
  CHECK(seq.out_of_order == 0);
}

//===-- streaming with sleep and wake -----------------------------------------===//

TEST_CASE("stream_process: a producer thread streams 100 000 commands; each runs once, in order",
          "[stream_process][stream]") {
  const std::uint32_t w = GENERATE(1u, 2u, 4u);
  CAPTURE(w);
  basic_stream_process<64> s;
  completion_record rec;
  rec.attach(s);
  basic_executor<> ex(workers(w));  // declared last: destroyed first
  ex.submit(s);
  constexpr std::uint64_t n = 100'000;
  std::vector<numbered> marks(n);
  sequence seq;
  std::atomic<int> producer_errors{0};
  std::thread producer([&] {
    for (std::uint64_t i = 0; i < n; ++i) {
      marks[i] = numbered{&seq, i};
      if (!push_retry([&] { return s.dispatch(&numbered::run, &marks[i]); })) {
        producer_errors.fetch_add(1);
      }
      // Now and then let the stream run dry, so it falls asleep and the
      // next push has to wake it.
      if (i % 2000 == 1999) {
        if (!eventually([&] { return s.executed() == i + 1; })) {
          producer_errors.fetch_add(1);  // a lost wake-up: give up
          break;
        }
        std::this_thread::sleep_for(100us);
      }
    }
    if (!push_retry([&] { return s.close(); })) producer_errors.fetch_add(1);
  });
  producer.join();
  REQUIRE(rec.wait_released());
  CHECK(producer_errors.load() == 0);
  CHECK(rec.code.load() == static_cast<int>(errc::ok));
  CHECK(s.executed() == n);
  CHECK(seq.next == n);
  CHECK(seq.out_of_order == 0);
  CHECK(seq.overlaps == 0);
}

TEST_CASE("stream_process: push, wait, push: the sleep hand-off never loses a wake-up",
          "[stream_process][stream]") {
  // Each push lands just as the drainer finds the ring empty and heads for
  // sleep: the window the Dekker hand-off closes, hit once per round.
  const std::uint32_t w = GENERATE(1u, 2u);
  CAPTURE(w);
  basic_stream_process<4> s;
  completion_record rec;
  rec.attach(s);
  basic_executor<> ex(workers(w));  // declared last: destroyed first
  ex.submit(s);
  constexpr std::uint64_t rounds = 20'000;
  std::vector<numbered> marks(rounds);
  sequence seq;
  std::uint64_t lost = 0;
  std::uint64_t push_errors = 0;
  std::uint64_t round = 0;
  for (; round < rounds && lost == 0 && push_errors == 0; ++round) {
    marks[round] = numbered{&seq, round};
    push_errors += !s.dispatch(&numbered::run, &marks[round]);
    lost += !eventually([&] { return s.executed() == round + 1; });
  }
  CHECK(push_errors == 0);
  CHECK(lost == 0);
  CHECK(round == rounds);
  REQUIRE(s.close());
  REQUIRE(rec.wait_released());
  CHECK(seq.out_of_order == 0);
}

//===-- close and cancel ----------------------------------------------------===//

TEST_CASE("stream_process: close completes after the commands before it; later pushes fail",
          "[stream_process][close]") {
  stream_process s;
  completion_record rec;
  rec.attach(s);
  std::array<unsigned char, 32> buf{};
  REQUIRE(s.fill(buf.data(), 0x5a, buf.size()));
  REQUIRE(s.close());
  CHECK(s.closed());
  CHECK(s.pushed() == 1);
  CHECK(s.fill(buf.data(), 0, buf.size()).code() == errc::failed_precondition);
  basic_executor<> ex(workers(2));  // declared last: destroyed first
  ex.submit(s);
  REQUIRE(rec.wait_released());
  CHECK(rec.code.load() == static_cast<int>(errc::ok));
  CHECK(s.executed() == 1);
  CHECK(buf[0] == 0x5a);
  CHECK(buf[31] == 0x5a);
  CHECK(s.dispatch(&numbered::run, nullptr).code() == errc::failed_precondition);
}

TEST_CASE("stream_process: cancel drops pending commands and rejects later pushes",
          "[stream_process][cancel]") {
  basic_executor<> ex(workers(2));
  SECTION("before submit: resolves inline, nothing runs") {
    stream_process s;
    completion_record rec;
    rec.attach(s);
    sequence seq;
    numbered m{&seq, 0};
    REQUIRE(s.dispatch(&numbered::run, &m));
    CHECK(s.cancel());
    CHECK(rec.released.load() == 1);
    CHECK(rec.code.load() == static_cast<int>(errc::cancelled));
    CHECK(s.dispatch(&numbered::run, &m).code() == errc::cancelled);
    ex.submit(s);  // a completed process is left alone
    CHECK(s.executed() == 0);
    CHECK(seq.next == 0);
  }
  SECTION("asleep: resolves on cancel, later pushes fail") {
    stream_process s;
    completion_record rec;
    rec.attach(s);
    sequence seq;
    numbered m{&seq, 0};
    ex.submit(s);
    REQUIRE(s.dispatch(&numbered::run, &m));
    REQUIRE(eventually([&] { return s.executed() == 1 && !s.is_active(); }));
    CHECK(s.cancel());
    REQUIRE(rec.wait_released());
    CHECK(rec.code.load() == static_cast<int>(errc::cancelled));
    CHECK(s.dispatch(&numbered::run, &m).code() == errc::cancelled);
    CHECK(seq.next == 1);
  }
}

//===-- allocation ----------------------------------------------------------===//

TEST_CASE("stream_process: pushing and draining allocate nothing", "[stream_process][allocation]") {
  const std::uint32_t w = GENERATE(1u, 2u);
  CAPTURE(w);
  basic_stream_process<32> s;
  completion_record rec;
  rec.attach(s);
  basic_executor<> ex(workers(w));  // declared last: destroyed first
  ex.submit(s);
  constexpr std::uint64_t n = 20'000;
  std::vector<numbered> marks(n);
  std::array<unsigned char, 256> a{};
  std::array<unsigned char, 256> b{};
  sequence seq;
  for (std::uint64_t i = 0; i < n; ++i) marks[i] = numbered{&seq, i};
  std::uint64_t allocations = 0;
  int errors = 0;
  {
    causal::test::allocation_guard guard;
    for (std::uint64_t i = 0; i < n; ++i) {
      errors += !push_retry([&] { return s.dispatch(&numbered::run, &marks[i]); });
      if (i % 64 == 0) {
        errors += !push_retry([&] { return s.fill(a.data(), static_cast<std::uint8_t>(i), a.size()); });
        errors += !push_retry([&] { return s.copy(b.data(), a.data(), b.size()); });
      }
      if (i % 5000 == 4999) {
        // Let it fall asleep, then wake it with the next push.
        errors += !eventually([&] { return s.executed() == s.pushed() && !s.is_active(); });
      }
    }
    errors += !push_retry([&] { return s.close(); });
    errors += !rec.wait_released();
    allocations = guard.allocations();
  }
  CHECK(errors == 0);
  CHECK(allocations == 0);
  CHECK(seq.next == n);
  CHECK(seq.out_of_order == 0);
}
