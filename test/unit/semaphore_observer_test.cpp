// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// semaphore_observer_test: the exporter hooks of basic_semaphore
// (semaphore_observer, set_observer) -- every submitted, reached and failed
// event in the order the semaphore applied it, the replay of the current
// state on installation, silence after removal, no allocation in the hook
// path, and no gap between replay and live events when the observer is
// installed while other threads signal.

#include <causal/frontier.hpp>
#include <causal/semaphore.hpp>

#include "catch.hpp"
#include "counting_new.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace {

using causal::axis;
using causal::errc;
using causal::frontier;
using causal::frontier_entry;
using causal::semaphore;

const axis A = causal::make_axis(0, 0, causal::domain::queue, 1).value();
const axis B = causal::make_axis(0, 0, causal::domain::queue, 2).value();

enum class kind : std::uint8_t { submitted, reached, failed, destroyed };

struct event {
  kind what{};
  std::uint64_t value = 0;
  frontier f{};
  frontier_entry producer{};
  bool external = false;
  bool replay = false;
  errc code = errc::ok;
};

/// Logs every hook call into a preallocated array (the hooks must not
/// allocate, and neither does the log).
struct recorder {
  static constexpr std::size_t capacity = 1 << 16;

  static void on_submitted(void* self, const causal::observed_signal<frontier>& ev) noexcept {
    static_cast<recorder*>(self)->add(event{kind::submitted, ev.value, *ev.frontier, ev.producer, ev.external, ev.replay});
  }
  static void on_reached(void* self, const causal::observed_signal<frontier>& ev) noexcept {
    static_cast<recorder*>(self)->add(event{kind::reached, ev.value, *ev.frontier, ev.producer, ev.external, ev.replay});
  }
  static void on_failed(void* self, const causal::error& e) noexcept {
    event ev;
    ev.what = kind::failed;
    ev.code = e.code();
    static_cast<recorder*>(self)->add(ev);
  }
  static void on_destroyed(void* self) noexcept {
    event ev;
    ev.what = kind::destroyed;
    static_cast<recorder*>(self)->add(ev);
  }

  recorder() : log(capacity) {}

  void add(const event& e) noexcept {
    const std::size_t at = count.fetch_add(1, std::memory_order_relaxed);
    if (at < capacity) log[at] = e;
  }
  [[nodiscard]] std::size_t size() const noexcept {
    const std::size_t n = count.load(std::memory_order_acquire);
    return n < capacity ? n : capacity;
  }
  const event& operator[](std::size_t i) const noexcept { return log[i]; }

  std::vector<event> log;
  std::atomic<std::size_t> count{0};
  causal::semaphore_observer<frontier> observer{this, &on_submitted, &on_reached, &on_failed, &on_destroyed};
};

}  // namespace

TEST_CASE("semaphore observer: hears submitted, reached, external and failed events in order",
          "[semaphore][observer]") {
  recorder rec;
  {
    semaphore s;
    REQUIRE(s.set_observer(&rec.observer));
    REQUIRE(rec.size() == 0);  // a fresh semaphore at 0 has nothing to replay
    const frontier f1{{A, 1}};
    const frontier f3{{A, 3}, {B, 2}};
    REQUIRE(s.submit_signal(3, f3, frontier_entry{A, 3}).ok());
    REQUIRE(s.submit_signal(5, frontier{{A, 5}}, frontier_entry{A, 5}).ok());
    REQUIRE(s.signal(1, f1, frontier_entry{A, 1}).ok());
    REQUIRE(s.signal(3).ok());  // the submitted record's frontier and producer
    REQUIRE(s.signal_external(4).ok());
    REQUIRE_FALSE(s.signal(2).ok());  // refused: not heard
    REQUIRE(s.fail(causal::error{errc::device_lost, "gone", 1}));
    REQUIRE_FALSE(s.fail(causal::error{errc::timeout, "second", 2}));  // only the winner is heard
    REQUIRE_FALSE(s.signal(9).ok());
    REQUIRE(rec.size() == 6);
    CHECK(rec[0].what == kind::submitted);
    CHECK(rec[0].value == 3);
    CHECK(rec[0].f == f3);
    CHECK(rec[0].producer == frontier_entry{A, 3});
    CHECK(rec[1].what == kind::submitted);
    CHECK(rec[1].value == 5);
    CHECK(rec[2].what == kind::reached);
    CHECK(rec[2].value == 1);
    CHECK(rec[2].f == f1);
    CHECK(rec[2].producer == frontier_entry{A, 1});
    CHECK(rec[3].what == kind::reached);
    CHECK(rec[3].value == 3);
    CHECK(rec[3].f == f3);
    CHECK(rec[3].producer == frontier_entry{A, 3});
    CHECK(rec[4].what == kind::reached);
    CHECK(rec[4].value == 4);
    CHECK(rec[4].external);
    CHECK(rec[4].f.tainted());
    CHECK(rec[4].f.empty());
    CHECK(rec[5].what == kind::failed);
    CHECK(rec[5].code == errc::device_lost);
    for (std::size_t i = 0; i < rec.size(); ++i) CHECK_FALSE(rec[i].replay);
  }
  // The destructor tells it last.
  REQUIRE(rec.size() == 7);
  CHECK(rec[6].what == kind::destroyed);
}

TEST_CASE("semaphore observer: a reached value merges the submitted frontier with the signal's",
          "[semaphore][observer]") {
  recorder rec;
  semaphore s;
  REQUIRE(s.set_observer(&rec.observer));
  REQUIRE(s.submit_signal(2, frontier{{A, 2}}, frontier_entry{A, 2}).ok());
  REQUIRE(s.signal(2, frontier{{B, 7}}).ok());
  REQUIRE(rec.size() == 2);
  CHECK(rec[1].f == (frontier{{A, 2}, {B, 7}}));
  CHECK(rec[1].producer == frontier_entry{A, 2});
  CHECK(rec[1].f == s.frontier_at(2)->frontier);
  REQUIRE(s.set_observer(nullptr, &rec.observer));
}

TEST_CASE("semaphore observer: installing replays the history ring, the submitted signals and the failure",
          "[semaphore][observer]") {
  semaphore s;
  for (std::uint64_t v = 1; v <= 6; ++v) REQUIRE(s.signal(v, frontier{{A, v}}, frontier_entry{A, v}).ok());
  REQUIRE(s.submit_signal(9, frontier{{A, 9}}, frontier_entry{A, 9}).ok());
  REQUIRE(s.submit_signal(8, frontier{{A, 8}}).ok());
  recorder rec;
  REQUIRE(s.set_observer(&rec.observer));
  // The history ring holds the last 4 reached values, oldest first; then
  // the submitted signals by value.
  REQUIRE(rec.size() == 6);
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(rec[i].what == kind::reached);
    CHECK(rec[i].value == 3 + i);
    CHECK(rec[i].f == frontier{{A, 3 + i}});
    CHECK(rec[i].replay);
  }
  CHECK(rec[4].what == kind::submitted);
  CHECK(rec[4].value == 8);
  CHECK(rec[5].what == kind::submitted);
  CHECK(rec[5].value == 9);
  CHECK(rec[5].producer == frontier_entry{A, 9});
  CHECK(rec[5].replay);

  // A second observer is refused while one is installed.
  recorder other;
  CHECK_FALSE(s.set_observer(&other.observer));
  CHECK_FALSE(s.set_observer(nullptr, &other.observer));
  CHECK(other.size() == 0);

  // Removed: no more calls, not even from the destructor.
  REQUIRE(s.set_observer(nullptr, &rec.observer));
  REQUIRE(s.signal(7).ok());
  REQUIRE(s.fail(causal::error{errc::timeout, "t", 0}));
  CHECK(rec.size() == 6);

  // Installed on a failed semaphore: the failure is replayed last.
  recorder late;
  REQUIRE(s.set_observer(&late.observer));
  REQUIRE(late.size() >= 1);
  CHECK(late[late.size() - 1].what == kind::failed);
  CHECK(late[late.size() - 1].code == errc::timeout);
  REQUIRE(s.set_observer(nullptr, &late.observer));
}

TEST_CASE("semaphore observer: an initial value with no signals is replayed as reached", "[semaphore][observer]") {
  semaphore s(5);
  recorder rec;
  REQUIRE(s.set_observer(&rec.observer));
  REQUIRE(rec.size() == 1);
  CHECK(rec[0].what == kind::reached);
  CHECK(rec[0].value == 5);
  CHECK(rec[0].replay);
  CHECK(rec[0].f.empty());
  REQUIRE(s.set_observer(nullptr, &rec.observer));
}

TEST_CASE("semaphore observer: the hook path allocates nothing", "[semaphore][observer][alloc]") {
  recorder rec;
  semaphore s;
  REQUIRE(s.set_observer(&rec.observer));
  // Warm the pending table to its working size.
  for (std::uint64_t v = 1; v <= 8; ++v) REQUIRE(s.submit_signal(v, frontier{{A, v}}, frontier_entry{A, v}).ok());
  REQUIRE(s.signal(8).ok());
  std::uint64_t allocations = 0;
  {
    causal::test::allocation_guard guard;
    for (std::uint64_t v = 9; v < 2009; v += 2) {
      (void)s.submit_signal(v + 1, frontier{{A, v + 1}}, frontier_entry{A, v + 1});
      (void)s.signal(v, frontier{{B, v}});
      (void)s.signal(v + 1);
    }
    allocations = guard.allocations();
  }
  CHECK(allocations == 0);
  CHECK(rec.size() == 9 + 3 * 1000);  // 8 submitted + 1 reached, then 3 a round
  REQUIRE(s.set_observer(nullptr, &rec.observer));
}

TEST_CASE("semaphore observer: installed while threads signal, replay and live events leave no gap",
          "[semaphore][observer][race]") {
  constexpr std::uint64_t per_thread = 4000;
  constexpr int threads = 2;
  for (int round = 0; round < 20; ++round) {
    semaphore s;
    recorder rec;
    std::atomic<std::uint64_t> next{1};
    std::atomic<bool> go{false};
    std::vector<std::thread> signallers;
    // The values each thread's signal() accepted (reserved: no allocation
    // while racing).
    std::vector<std::vector<std::uint64_t>> accepted(threads);
    for (auto& a : accepted) a.reserve(per_thread);
    for (int t = 0; t < threads; ++t) {
      signallers.emplace_back([&, t] {
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        for (std::uint64_t k = 0; k < per_thread; ++k) {
          const std::uint64_t v = next.fetch_add(1, std::memory_order_relaxed);
          // Values race: a lower one may lose (not increasing); that is fine.
          if (s.signal(v, frontier{{A, v}})) accepted[static_cast<std::size_t>(t)].push_back(v);
        }
      });
    }
    go.store(true, std::memory_order_release);
    // Install part-way through.
    while (s.value() < static_cast<std::uint64_t>(round) * 200) std::this_thread::yield();
    REQUIRE(s.set_observer(&rec.observer));
    for (auto& t : signallers) t.join();
    const std::uint64_t final_value = s.value();
    REQUIRE(s.set_observer(nullptr, &rec.observer));
    std::vector<std::uint64_t> all;
    for (const auto& a : accepted) all.insert(all.end(), a.begin(), a.end());
    std::sort(all.begin(), all.end());
    REQUIRE(!all.empty());
    CHECK(all.back() == final_value);
    // Replayed records first, then live ones, values strictly increasing,
    // each carrying its own frontier; and together they are exactly the
    // accepted values from the first one heard on: no gap between the
    // replay and the first live hook, no value heard twice.
    REQUIRE(rec.size() >= 1);
    std::vector<std::uint64_t> heard;
    bool live = false;
    std::size_t bad = 0;
    for (std::size_t i = 0; i < rec.size(); ++i) {
      const event& e = rec[i];
      if (!e.replay) live = true;
      if (e.what != kind::reached || e.replay == live || e.f != frontier{{A, e.value}}) ++bad;
      heard.push_back(e.value);
    }
    CHECK(bad == 0);
    const auto from = std::lower_bound(all.begin(), all.end(), heard.front());
    REQUIRE(from != all.end());
    CHECK(*from == heard.front());
    CHECK(std::vector<std::uint64_t>(from, all.end()) == heard);
  }
}
