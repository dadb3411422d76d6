// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Concurrency stress for <causal/semaphore.hpp>, meant to pass under
// -fsanitize=thread as well as in a plain build:
//   - timepoints registered while several threads signal: each callback
//     runs exactly once, never before its value is reached;
//   - racing signals of distinct values: the payload ends at the maximum,
//     accepted values are recorded in increasing order (the history ring
//     answers frontier_at as if they were), rejections are not_increasing;
//   - cancel racing with signal: a node is either cancelled (true) or fires
//     exactly once, never both, never neither;
//   - fail racing with registration: every node fires exactly once;
//   - host waits parked while another thread signals (ping-pong, many
//     waiters on one value): no lost wakeup, each wait bounded by a
//     deadline so a bug fails instead of hanging;
//   - wait_all / wait_any against concurrent signallers and a failure.
//
// Iteration counts are scaled down under ThreadSanitizer (CAUSAL_HAS_TSAN()),
// where everything runs ~10x slower and parking goes through the condvar
// word. Catch2 assertions are only made on the test's own thread; helper
// threads report through atomics and are joined first.

#include <causal/config.hpp>
#include <causal/semaphore.hpp>

#include "catch.hpp"
#include "string_makers.hpp"
#include "watchdog.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using causal::axis;
using causal::errc;
using causal::frontier;
using causal::frontier_entry;
using causal::semaphore;
using causal::semaphore_timepoint;
using causal::status;

using namespace std::chrono_literals;

/// Multiplies the iteration counts; small under TSan.
constexpr int scale = CAUSAL_HAS_TSAN() ? 2 : 6;

/// No single wait in these tests should take anywhere near this long; a
/// wait that does is a lost wakeup, reported as a failure, not a hang. A
/// hang guard only: 20 s, like eventually(), so that a thread kept off the
/// CPU by a loaded machine is not taken for a lost wakeup.
constexpr auto wait_limit = 20s;

semaphore::clock::time_point deadline() { return semaphore::clock::now() + wait_limit; }

/// A start line for racing threads that spins instead of parking, so that
/// no thread starts a futex wake-up (tens of microseconds here) behind the
/// others and the race really overlaps.
class spin_start {
 public:
  explicit spin_start(int threads) noexcept : left_(threads) {}
  void arrive_and_wait() noexcept {
    left_.fetch_sub(1);
    for (unsigned spins = 0; left_.load() > 0; ++spins) {
      if (spins < 100000) {
        causal::detail::cpu_relax();
      } else {
        std::this_thread::yield();  // more threads than vCPUs: let them run
      }
    }
  }

 private:
  std::atomic<int> left_;
};

/// A timepoint that counts its runs and remembers how it ended.
struct counted_node {
  semaphore_timepoint tp;
  const semaphore* sem = nullptr;
  std::atomic<int> runs{0};
  std::atomic<int> last{-1};        // errc of the last run
  std::atomic<bool> early{false};   // ran ok before the value was reached

  static void fire(semaphore_timepoint& tp, status s) noexcept {
    auto* self = static_cast<counted_node*>(tp.user_data());
    if (s && self->sem->value() < tp.threshold()) self->early.store(true);
    self->last.store(static_cast<int>(s.code()));
    self->runs.fetch_add(1);
  }

  void arm(semaphore& s, std::uint64_t threshold) {
    sem = &s;
    tp.reset(threshold, &counted_node::fire, this);
    s.add_timepoint(tp);
  }
};

}  // namespace

TEST_CASE("semaphore race: timepoints registered while several threads signal fire exactly once",
          "[semaphore][race][timepoint]") {
  constexpr int registrars = 3;
  constexpr int per_registrar = 150;
  constexpr std::uint64_t top = 300;     // signalled up to here
  constexpr std::uint64_t beyond = 30;   // thresholds up to top + beyond
  const int rounds = 4 * scale;

  for (int round = 0; round < rounds; ++round) {
    auto nodes = std::make_unique<counted_node[]>(registrars * per_registrar);
    std::atomic<int> odd_rejections{0};
    {
      semaphore s;
      spin_start start(registrars + 2);
      std::vector<std::thread> threads;
      for (int r = 0; r < registrars; ++r) {
        threads.emplace_back([&, r] {
          std::mt19937_64 rng(static_cast<std::uint64_t>(round * 31 + r));
          std::uniform_int_distribution<std::uint64_t> pick(1, top + beyond);
          start.arrive_and_wait();
          for (int i = 0; i < per_registrar; ++i) {
            nodes[r * per_registrar + i].arm(s, pick(rng));
          }
        });
      }
      for (int t = 0; t < 2; ++t) {
        threads.emplace_back([&] {
          start.arrive_and_wait();
          for (std::uint64_t v; (v = s.value()) < top;) {
            const status st = s.signal(v + 1);
            if (!st && st.code() != errc::not_increasing) odd_rejections.fetch_add(1);
          }
        });
      }
      for (std::thread& t : threads) t.join();
      REQUIRE(s.value() == top);
      // Nodes above `top` are still registered; the destructor cancels them.
    }
    CHECK(odd_rejections.load() == 0);
    int wrong = 0;
    for (int i = 0; i < registrars * per_registrar; ++i) {
      const counted_node& n = nodes[i];
      const errc expect = n.tp.threshold() <= top ? errc::ok : errc::cancelled;
      if (n.runs.load() != 1 || static_cast<errc>(n.last.load()) != expect || n.early.load()) {
        ++wrong;
        UNSCOPED_INFO("node " << i << " threshold " << n.tp.threshold() << " runs "
                              << n.runs.load() << " last " << n.last.load() << " early "
                              << n.early.load());
      }
    }
    REQUIRE(wrong == 0);
  }
}

TEST_CASE("semaphore race: racing signals of distinct values end at the maximum and are "
          "recorded in increasing order",
          "[semaphore][race][signal]") {
  constexpr int threads_n = 4;
  constexpr std::uint64_t top = 256;  // values 1..top, spread over the threads
  // A ring deep enough to hold every accepted record of a round, so
  // frontier_at shows the order they were recorded in.
  using deep_semaphore = causal::basic_semaphore<frontier, top>;
  const int rounds = 10 * scale;
  std::uint64_t rejected_total = 0;

  for (int round = 0; round < rounds; ++round) {
    auto s = std::make_unique<deep_semaphore>();
    // outcome[v]: 1 accepted, 2 rejected as not_increasing, 3 anything else
    // or a value() that contradicts the outcome.
    std::array<std::atomic<int>, top + 1> outcome{};
    std::atomic<bool> done{false};
    std::atomic<int> went_back{0};
    spin_start start(threads_n + 1);
    std::vector<std::thread> threads;
    for (int t = 0; t < threads_n; ++t) {
      threads.emplace_back([&, t] {
        const axis mine{static_cast<std::uint64_t>(t + 1)};
        start.arrive_and_wait();
        for (std::uint64_t v = static_cast<std::uint64_t>(t) + 1; v <= top; v += threads_n) {
          const status st = s->signal(v, frontier{{mine, v}}, frontier_entry{mine, v});
          // Either way the payload is at least v afterwards.
          const bool consistent = s->value() >= v;
          if (st) {
            outcome[v].store(consistent ? 1 : 3);
          } else {
            outcome[v].store(consistent && st.code() == errc::not_increasing ? 2 : 3);
          }
          if ((v / threads_n) % 8 == 0) std::this_thread::yield();
        }
      });
    }
    // A watcher: the payload never goes back.
    std::thread watcher([&] {
      start.arrive_and_wait();
      std::uint64_t last = 0;
      while (!done.load()) {
        const std::uint64_t now = s->value();
        if (now < last) went_back.fetch_add(1);
        last = now;
      }
    });
    for (std::thread& t : threads) t.join();
    done.store(true);
    watcher.join();

    REQUIRE(went_back.load() == 0);
    REQUIRE(s->value() == top);
    std::vector<std::uint64_t> accepted;
    for (std::uint64_t v = 1; v <= top; ++v) {
      const int o = outcome[v].load();
      CAPTURE(v, o);
      REQUIRE((o == 1 || o == 2));
      if (o == 1) accepted.push_back(v);
    }
    REQUIRE(outcome[top].load() == 1);  // nothing can beat the maximum
    rejected_total += top - accepted.size();
    // Every value imports the record of the smallest accepted value at or
    // above it: true only if the records went into the ring in increasing
    // order (frontier_at takes the first one in ring order that covers v).
    std::size_t next = 0;
    for (std::uint64_t v = 1; v <= top; ++v) {
      while (accepted[next] < v) ++next;
      const std::uint64_t first = accepted[next];
      const axis owner{(first - 1) % threads_n + 1};
      const auto at = s->frontier_at(v);
      REQUIRE(at.has_value());
      CAPTURE(v, first, at->signal_value);
      REQUIRE(at->signal_value == first);
      REQUIRE(at->exact);
      REQUIRE(at->frontier == frontier{{owner, first}});
      REQUIRE(at->producer == frontier_entry{owner, first});
    }
  }
  if (rejected_total == 0) WARN("racing signals: no signal was ever rejected on this run");
}

TEST_CASE("semaphore race: cancel racing with signal either cancels or fires, exactly once",
          "[semaphore][race][cancel]") {
  // Long enough (tens of microseconds each side) that the two loops overlap
  // even when one thread starts a little late.
  constexpr std::uint64_t nodes_n = 2048;
  const int rounds = 3 * scale;
  std::uint64_t cancelled_total = 0;
  std::uint64_t fired_total = 0;

  for (int round = 0; round < rounds; ++round) {
    auto nodes = std::make_unique<counted_node[]>(nodes_n);
    auto cancelled = std::make_unique<std::atomic<bool>[]>(nodes_n);
    semaphore s;
    for (std::uint64_t i = 0; i < nodes_n; ++i) nodes[i].arm(s, i + 1);
    spin_start start(2);
    std::thread signaller([&] {
      start.arrive_and_wait();
      for (std::uint64_t v = 1; v <= nodes_n; ++v) (void)s.signal(v);
    });
    std::thread canceller([&] {
      std::mt19937_64 rng(static_cast<std::uint64_t>(round));
      std::vector<std::uint64_t> order(nodes_n);
      for (std::uint64_t i = 0; i < nodes_n; ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), rng);
      start.arrive_and_wait();
      // Start once the signaller is under way, so the two loops overlap
      // whatever the start skew (a few nodes fire first, the rest race).
      while (s.value() < nodes_n / 16) causal::detail::cpu_relax();
      for (std::uint64_t i : order) cancelled[i].store(nodes[i].tp.cancel());
    });
    signaller.join();
    canceller.join();
    REQUIRE(s.value() == nodes_n);
    int wrong = 0;
    for (std::uint64_t i = 0; i < nodes_n; ++i) {
      const bool c = cancelled[i].load();
      const int runs = nodes[i].runs.load();
      if (c ? runs != 0 : runs != 1) {
        ++wrong;
        UNSCOPED_INFO("node " << i << " cancelled " << c << " runs " << runs);
      }
      (c ? cancelled_total : fired_total) += 1;
    }
    REQUIRE(wrong == 0);
  }
  CHECK(cancelled_total + fired_total == nodes_n * static_cast<std::uint64_t>(rounds));
  // Timing decides the mix; say so when one side never won (the race was
  // then not really exercised on this run).
  if (cancelled_total == 0 || fired_total == 0) {
    WARN("cancel vs signal did not overlap: " << cancelled_total << " cancelled, "
                                              << fired_total << " fired");
  }
}

TEST_CASE("semaphore race: fail racing with registration delivers every node exactly once",
          "[semaphore][race][fail]") {
  constexpr int registrars = 2;
  constexpr int per_registrar = 200;
  const int rounds = 10 * scale;
  for (int round = 0; round < rounds; ++round) {
    auto nodes = std::make_unique<counted_node[]>(registrars * per_registrar);
    semaphore s;
    spin_start start(registrars + 1);
    std::vector<std::thread> threads;
    for (int r = 0; r < registrars; ++r) {
      threads.emplace_back([&, r] {
        start.arrive_and_wait();
        for (int i = 0; i < per_registrar; ++i) {
          // Half already reached (fires inline, ok unless failed first),
          // half unreachable (fires with the failure).
          nodes[r * per_registrar + i].arm(s, i % 2 == 0 ? 1 : 1000);
        }
      });
    }
    threads.emplace_back([&] {
      (void)s.signal(1);
      start.arrive_and_wait();
      std::this_thread::yield();
      (void)s.fail(causal::error{errc::device_lost, "lost"});
    });
    for (std::thread& t : threads) t.join();
    int wrong = 0;
    for (int i = 0; i < registrars * per_registrar; ++i) {
      const counted_node& n = nodes[i];
      const auto last = static_cast<errc>(n.last.load());
      const bool ok_status =
          n.tp.threshold() == 1 ? (last == errc::ok || last == errc::device_lost)
                                : last == errc::device_lost;
      if (n.runs.load() != 1 || !ok_status) ++wrong;
    }
    REQUIRE(wrong == 0);
  }
}

TEST_CASE("semaphore race: a ping-pong of parked host waits loses no wakeup",
          "[semaphore][race][wait]") {
  const unsigned spin = GENERATE(0u, semaphore::default_spin);
  CAPTURE(spin);
  const std::uint64_t rounds = CAUSAL_HAS_TSAN() ? 1000 : 3000;
  semaphore s;
  std::atomic<int> failures{0};
  // A signals odd values and waits for the next even one; B the reverse.
  std::thread a([&] {
    for (std::uint64_t i = 1; i <= rounds; ++i) {
      if (!s.signal(2 * i - 1) || !s.wait_until(2 * i, deadline(), spin)) {
        failures.fetch_add(1);
        (void)s.fail(causal::error{errc::timeout, "ping side stuck"});
        return;
      }
    }
  });
  std::thread b([&] {
    for (std::uint64_t i = 1; i <= rounds; ++i) {
      if (!s.wait_until(2 * i - 1, deadline(), spin) || !s.signal(2 * i)) {
        failures.fetch_add(1);
        (void)s.fail(causal::error{errc::timeout, "pong side stuck"});
        return;
      }
    }
  });
  a.join();
  b.join();
  CHECK(failures.load() == 0);
  CHECK(s.value() == 2 * rounds);
}

TEST_CASE("semaphore race: many waiters parked on each value all wake", "[semaphore][race][wait]") {
  constexpr int waiters_n = 4;
  const std::uint64_t top = CAUSAL_HAS_TSAN() ? 200 : 1500;
  semaphore s;
  std::atomic<int> failures{0};
  std::atomic<std::uint64_t> woken{0};
  std::vector<std::thread> waiters;
  for (int w = 0; w < waiters_n; ++w) {
    waiters.emplace_back([&, w] {
      // Odd waiters never spin, so they park nearly every time.
      const unsigned spin = w % 2 == 0 ? semaphore::default_spin : 0;
      for (std::uint64_t v = 1; v <= top; ++v) {
        if (!s.wait_until(v, deadline(), spin) || s.value() < v) {
          failures.fetch_add(1);
          return;
        }
        woken.fetch_add(1);
      }
    });
  }
  std::thread signaller([&] {
    for (std::uint64_t v = 1; v <= top; ++v) {
      (void)s.signal(v);
      if (v % 16 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  signaller.join();
  for (std::thread& t : waiters) t.join();
  CHECK(failures.load() == 0);
  CHECK(woken.load() == top * waiters_n);
}

TEST_CASE("semaphore race: wait_all and wait_any keep up with concurrent signallers",
          "[semaphore][race][wait][multi]") {
  const std::uint64_t top = CAUSAL_HAS_TSAN() ? 200 : 2000;
  const unsigned spin = GENERATE(0u, semaphore::default_spin);
  CAPTURE(spin);
  std::array<semaphore, 2> sems;
  std::atomic<int> failures{0};
  std::vector<std::thread> signallers;
  for (int k = 0; k < 2; ++k) {
    signallers.emplace_back([&, k] {
      for (std::uint64_t v = 1; v <= top; ++v) {
        (void)sems[k].signal(v);
        if (v % 32 == static_cast<std::uint64_t>(k) * 16) std::this_thread::yield();
      }
    });
  }
  std::thread all_waiter([&] {
    for (std::uint64_t i = 1; i <= top; ++i) {
      const std::array<causal::wait_point<semaphore>, 2> points{{{&sems[0], i}, {&sems[1], i}}};
      if (!causal::wait_all<semaphore>(points, deadline(), spin) || sems[0].value() < i ||
          sems[1].value() < i) {
        failures.fetch_add(1);
        return;
      }
    }
  });
  std::thread any_waiter([&] {
    for (std::uint64_t i = 1; i <= top; ++i) {
      const std::array<causal::wait_point<semaphore>, 2> points{{{&sems[0], i}, {&sems[1], i}}};
      const auto r = causal::wait_any<semaphore>(points, deadline(), spin);
      if (!r || *r > 1 || sems[*r].value() < i) {
        failures.fetch_add(1);
        return;
      }
    }
  });
  for (std::thread& t : signallers) t.join();
  all_waiter.join();
  any_waiter.join();
  CHECK(failures.load() == 0);
}

TEST_CASE("semaphore race: a failure during wait_all ends it with the failure",
          "[semaphore][race][wait][multi][fail]") {
  const int rounds = 10 * scale;
  for (int round = 0; round < rounds; ++round) {
    std::array<semaphore, 2> sems;
    std::atomic<int> code{-1};
    std::thread waiter([&] {
      const std::array<causal::wait_point<semaphore>, 2> points{{{&sems[0], 50}, {&sems[1], 50}}};
      code.store(static_cast<int>(causal::wait_all<semaphore>(points, deadline(), 0).code()));
    });
    std::thread signaller([&] {
      for (std::uint64_t v = 1; v <= 49; ++v) (void)sems[0].signal(v);
      (void)sems[1].fail(causal::error{errc::device_lost, "lost"});
      (void)sems[0].signal(50);
    });
    signaller.join();
    waiter.join();
    REQUIRE(static_cast<errc>(code.load()) == errc::device_lost);
  }
}

TEST_CASE("semaphore: a waiter may destroy the semaphore as soon as its wait returns",
          "[semaphore][race]") {
  // The signaller wakes parked waiters after it released the lock; a waiter
  // that saw the value first (spinning, or re-checking before it parks)
  // returns and frees the semaphore at once. The destructor must wait for
  // that wake to finish touching the semaphore (ASan and TSan check it).
  constexpr int rounds = 2000;
  int ok = 0;
  for (int i = 0; i < rounds; ++i) {
    auto* s = new causal::semaphore;
    const bool fail_it = i % 4 == 3;
    std::atomic<bool> parked_soon{false};
    std::thread waiter([&, s] {
      parked_soon.store(true, std::memory_order_release);
      // spin 0: straight to the parked path, so the signaller must wake us.
      const causal::status st = s->wait_until(1, causal::semaphore::clock::time_point::max(), 0);
      if (fail_it ? st.code() == errc::device_lost : st.ok()) ++ok;
      delete s;
    });
    while (!parked_soon.load(std::memory_order_acquire)) {
      std::this_thread::yield();  // on a loaded machine the waiter may need this CPU
    }
    if (i % 2 == 0) std::this_thread::yield();  // sometimes parked, sometimes not yet
    if (fail_it) {
      (void)s->fail(causal::error{errc::device_lost, "test: failed while waited on"});
    } else {
      (void)s->signal(1);
    }
    waiter.join();
    // Two thousand threads take longer than the watchdog's stall limit on
    // a loaded machine; each round does not.
    if (i % 100 == 99) causal::test::note_progress();
  }
  CHECK(ok == rounds);
}
