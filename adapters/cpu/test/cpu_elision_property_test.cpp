// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Property test of the elision promise on the real runtime: random
// programs of host calls on real cpu::queues, run by a real executor's
// worker threads, with windows widened on purpose, compared with a
// reference model and with themselves run with wait elision switched off
// (docs/queues.md, "Signals of one operation" and "Elision never changes an
// outcome").
//
// A program: 2-5 queues on an executor of 1-3 workers; 50-300 operations,
// each a host call on a queue or (a sixth of them) an invocation
// (async_invoke) on the same executor; each signals 0-3 shared semaphores
// (often several: the shape that exposed the first defect) and waits on
// 0-3 values earlier operations signal. A semaphore's values are given out
// in increasing order and the signaller of value v > 1 also waits for
// S >= v - 1, so every execution reaches them in order: a consistent
// program, whose outcome is fixed (test/support/consistent_dag.hpp draws
// these dependencies, for the Vulkan version of this test too). Each queue's first operation, and every
// invocation, waits on a host gate, so everything is submitted before
// anything runs; the gates open in random order. About one operation in 40 fails (its host call
// returns an error). Slow timepoint callbacks on random values spin for up
// to ~50 us on the thread that reaches them, between one signal of an
// operation and the next, and host calls spin a little too.
//
// Inside every host call (the operation's start), the checks: every wait
// of it -- elided or not -- is met (S.value() >= v), the operation that
// signalled each awaited value has finished (its end flag, set with
// release before its signals) and its output bytes are intact. After the
// run: which operations ran, ran and failed, or never ran, and every
// semaphore's final value and failed flag, must equal
//   - the reference model: the program evaluated in submission order
//     (exact for consistent programs), and
//   - the same program run with every queue's wait elision switched off.
// The run must finish (a hang guard of 60 s per program); and elision must
// really happen (counted; the totals are printed).
//
// Seeds: CAUSAL_TEST_SEED=<n> sets the base seed (else random); program i
// uses seed + i and a failure prints the command that replays it alone.
// CAUSAL_TEST_PROGRAMS=<n> sets the count (default 150; 25 under
// sanitizers). The 'stress' suite runs it beside busy hog threads.
// CAUSAL_TEST_CENSUS=1 only submits each program (gates closed, so every
// decision is made before anything runs, and is the same every time for a
// seed), prints how its waits were decided and tears it down: the
// measurement of elision in bench/RESULTS.md.

#include <causal/adapters/cpu/queue.hpp>
#include <causal/executor.hpp>
#include <causal/fence.hpp>
#include <causal/invoke.hpp>
#include <causal/semaphore.hpp>

#include "catch.hpp"
#include "consistent_dag.hpp"
#include "string_makers.hpp"
#include "watchdog.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using causal::errc;
using causal::semaphore;
using causal::status;
using namespace std::chrono_literals;

using point = causal::test::program_point;
using hook_desc = causal::test::program_hook;

struct op_desc {
  int queue = 0;  ///< -1: an invocation
  std::vector<point> waits;
  std::vector<point> signals;
  bool fails = false;
  unsigned spin = 0;
  /// Per wait: the operation whose signal reaches that value first.
  std::vector<int> producers;
};

struct program {
  int queues = 0;
  std::uint32_t workers = 0;
  int sems = 0;
  std::vector<op_desc> ops;
  std::vector<hook_desc> hooks;
  std::vector<int> gate_order;

  std::string describe() const {
    std::ostringstream out;
    out << queues << " queues, " << workers << " workers, " << sems << " semaphores, " << ops.size()
        << " ops\n";
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const op_desc& o = ops[i];
      out << "  op " << i << (o.queue < 0 ? " invoke" : " q" + std::to_string(o.queue)) << " waits";
      for (const point& w : o.waits) out << " s" << w.sem << ">=" << w.value;
      out << " signals";
      for (const point& s : o.signals) out << " s" << s.sem << "=" << s.value;
      if (o.fails) out << " FAILS";
      out << "\n";
    }
    return out.str();
  }
};

program generate(std::uint64_t seed, bool invocations) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int lo, int hi) { return causal::test::consistent_dag::pick(rng, lo, hi); };
  program p;
  p.queues = pick(2, 5);
  p.workers = static_cast<std::uint32_t>(pick(1, 3));
  p.sems = pick(3, 3 * p.queues);
  const int n = pick(50, 300);
  causal::test::consistent_dag dag(p.sems);
  for (int i = 0; i < n; ++i) {
    op_desc o;
    o.queue = invocations && pick(0, 5) == 0 ? -1 : pick(0, p.queues - 1);
    o.fails = pick(0, 39) == 0;
    o.spin = static_cast<unsigned>(pick(0, 3) == 0 ? pick(0, 2000) : 0);
    causal::test::program_edges e = dag.draw(rng, i);
    o.signals = std::move(e.signals);
    o.waits = std::move(e.waits);
    o.producers = std::move(e.producers);
    p.ops.push_back(std::move(o));
  }
  p.hooks = dag.hooks(rng, 12);
  for (int q = 0; q < p.queues; ++q) p.gate_order.push_back(q);
  std::shuffle(p.gate_order.begin(), p.gate_order.end(), rng);
  return p;
}

enum class op_state : std::uint8_t { not_run, ran, ran_failed };

struct outcome {
  std::vector<op_state> ops;
  std::vector<std::uint64_t> values;
  std::vector<bool> failed;
  bool operator==(const outcome&) const = default;
};

std::string diff(const outcome& a, const outcome& b, const char* an, const char* bn) {
  std::ostringstream out;
  auto name = [](op_state s) {
    return s == op_state::not_run ? "not run" : s == op_state::ran ? "ran" : "ran and failed";
  };
  for (std::size_t i = 0; i < a.ops.size() && i < b.ops.size(); ++i) {
    if (a.ops[i] != b.ops[i]) out << "  op " << i << ": " << an << " " << name(a.ops[i]) << ", " << bn << " " << name(b.ops[i]) << "\n";
  }
  for (std::size_t s = 0; s < a.values.size() && s < b.values.size(); ++s) {
    if (a.values[s] != b.values[s] || a.failed[s] != b.failed[s]) {
      out << "  s" << s << ": " << an << " " << a.values[s] << (a.failed[s] ? " failed" : "") << ", " << bn << " "
          << b.values[s] << (b.failed[s] ? " failed" : "") << "\n";
    }
  }
  return out.str();
}

/// The reference model: evaluated in submission order, which for a
/// consistent program is an order the real runs agree with.
outcome model(const program& p) {
  outcome out;
  out.ops.assign(p.ops.size(), op_state::not_run);
  out.values.assign(static_cast<std::size_t>(p.sems), 0);
  out.failed.assign(static_cast<std::size_t>(p.sems), false);
  std::vector<bool> queue_failed(static_cast<std::size_t>(p.queues), false);
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const op_desc& o = p.ops[i];
    bool runs = o.queue < 0 || !queue_failed[static_cast<std::size_t>(o.queue)];
    for (const point& w : o.waits) runs = runs && out.values[static_cast<std::size_t>(w.sem)] >= w.value;
    const bool ok = runs && !o.fails;
    out.ops[i] = !runs ? op_state::not_run : ok ? op_state::ran : op_state::ran_failed;
    for (const point& s : o.signals) {
      const auto k = static_cast<std::size_t>(s.sem);
      if (out.failed[k]) continue;
      if (ok) {
        out.values[k] = s.value;
      } else {
        out.failed[k] = true;
      }
    }
    if (!ok && o.queue >= 0) queue_failed[static_cast<std::size_t>(o.queue)] = true;
  }
  return out;
}

/// One execution of a program on the real runtime.
class execution {
 public:
  execution(const program& p, bool elision) : p_(p), elision_(elision) {}

  /// Runs the program; returns the first violation (empty if none). With
  /// `census`, only submits it and counts the decisions.
  std::string run(outcome& out, causal::queue_stats& totals, bool census = false) {
    const std::size_t n = p_.ops.size();
    started_ = std::make_unique<std::atomic<int>[]>(n);
    ended_ = std::make_unique<std::atomic<int>[]>(n);
    bytes_.assign(n, {});
    causal::executor ex(causal::executor_options{.worker_count = p_.workers});
    const auto watched_ex = causal::test::watch(ex, "executor");
    std::deque<semaphore> sems(static_cast<std::size_t>(p_.sems));
    // One gate per queue, and the last for every invocation.
    std::deque<semaphore> gates(static_cast<std::size_t>(p_.queues) + 1);
    semaphore& invocation_gate = gates.back();
    std::vector<std::unique_ptr<causal::cpu::queue>> queues;
    for (int q = 0; q < p_.queues; ++q) {
      queues.push_back(std::make_unique<causal::cpu::queue>(ex));
      queues.back()->core().set_wait_elision(elision_);
    }
    std::deque<ctx> contexts;
    std::vector<causal::basic_invocation<void, causal::fence>> invocations;
    std::vector<bool> first_on_queue(static_cast<std::size_t>(p_.queues), true);
    for (std::size_t i = 0; i < n; ++i) {
      const op_desc& o = p_.ops[i];
      ctx& c = contexts.emplace_back(ctx{this, &sems, i});
      ctx* cp = &c;
      if (o.queue < 0) {
        causal::fence wait{invocation_gate, 1}, signal;
        for (const point& w : o.waits) REQUIRE(wait.add(sems[static_cast<std::size_t>(w.sem)], w.value));
        for (const point& s : o.signals) REQUIRE(signal.add(sems[static_cast<std::size_t>(s.sem)], s.value));
        invocations.push_back(causal::async_invoke(ex, [cp]() noexcept -> status { return cp->self->body(*cp); }, wait,
                                                   signal));
        continue;
      }
      auto& q = *queues[static_cast<std::size_t>(o.queue)];
      std::vector<causal::cpu::queue::wait_type> waits;
      std::vector<causal::cpu::queue::signal_type> signals;
      if (first_on_queue[static_cast<std::size_t>(o.queue)]) {
        waits.push_back({&gates[static_cast<std::size_t>(o.queue)], 1});
        first_on_queue[static_cast<std::size_t>(o.queue)] = false;
      }
      for (const point& w : o.waits) waits.push_back({&sems[static_cast<std::size_t>(w.sem)], w.value});
      for (const point& s : o.signals) signals.push_back({&sems[static_cast<std::size_t>(s.sem)], s.value});
      const auto op = causal::queue_operation::host([cp]() noexcept -> status { return cp->self->body(*cp); });
      const auto r = q.submit(waits, signals, op);
      if (!r) return "op " + std::to_string(i) + ": submit refused: " + std::string(r.error_value().message());
    }
    if (census) {
      for (auto& q : queues) {
        const causal::queue_stats st = q->stats();
        totals.elided_reached += st.elided_reached;
        totals.elided_same_queue += st.elided_same_queue;
        totals.elided_dominated += st.elided_dominated;
        totals.device_waits += st.device_waits;
        totals.submissions += st.submissions;
      }
      return {};  // the queues close with their operations pending: cancelled
    }
    // Slow callbacks, armed after every operation's own timepoints.
    std::deque<slow_hook> hooks;
    for (const hook_desc& h : p_.hooks) {
      slow_hook& sh = hooks.emplace_back();
      sh.spin = h.spin;
      sh.node.reset(h.at.value, &slow_hook::fire, &sh);
      sems[static_cast<std::size_t>(h.at.sem)].add_timepoint(sh.node);
    }
    for (int q : p_.gate_order) REQUIRE(gates[static_cast<std::size_t>(q)].signal(1));
    REQUIRE(invocation_gate.signal(1));
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    std::string hang;
    for (auto& q : queues) {
      if (q->wait_idle(deadline).code() == errc::timeout) hang = "a queue did not finish within 60 s (hang)";
    }
    for (auto& inv : invocations) {
      if (inv.wait(deadline).code() == errc::timeout) hang = "an invocation did not finish within 60 s (hang)";
    }
    // A hook that could not be cancelled has run or is running: wait for
    // its last touch before the deque goes.
    for (slow_hook& sh : hooks) {
      if (sh.node.cancel()) continue;
      while (!sh.done.load(std::memory_order_acquire)) std::this_thread::yield();
    }
    out.ops.assign(n, op_state::not_run);
    for (std::size_t i = 0; i < n; ++i) {
      const int e = ended_[i].load(std::memory_order_acquire);
      out.ops[i] = e == 0 ? op_state::not_run : e == 1 ? op_state::ran : op_state::ran_failed;
      if (started_[i].load() != 0 && e == 0 && hang.empty()) hang = "op " + std::to_string(i) + " started but never ended";
    }
    out.values.clear();
    out.failed.clear();
    for (const semaphore& s : sems) {
      out.values.push_back(s.value());
      out.failed.push_back(s.failed());
    }
    for (auto& q : queues) {
      const causal::queue_stats st = q->stats();
      totals.elided_reached += st.elided_reached;
      totals.elided_same_queue += st.elided_same_queue;
      totals.elided_dominated += st.elided_dominated;
      totals.device_waits += st.device_waits;
      totals.submissions += st.submissions;
    }
    std::lock_guard lock(mutex_);
    if (!violation_.empty()) return violation_;
    return hang;
  }

 private:
  struct ctx {
    execution* self;
    std::deque<semaphore>* sems;
    std::size_t index;
  };

  struct slow_hook {
    causal::semaphore_timepoint node;
    unsigned spin = 0;
    std::atomic<bool> done{false};
    static void fire(causal::semaphore_timepoint& tp, status) noexcept {
      auto* self = static_cast<slow_hook*>(tp.user_data());
      for (unsigned i = 0; i < self->spin; ++i) {
        if (i % 512 == 0) std::this_thread::yield();
        causal::detail::cpu_relax();
      }
      self->done.store(true, std::memory_order_release);
    }
  };

  static std::uint64_t pattern(std::size_t op, std::size_t k) { return op * 0x9e3779b97f4a7c15ull + k + 1; }

  status body(const ctx& c) noexcept {
    const std::size_t i = c.index;
    const op_desc& o = p_.ops[i];
    started_[i].store(1, std::memory_order_relaxed);
    for (std::size_t w = 0; w < o.waits.size(); ++w) {
      const point& pt = o.waits[w];
      const semaphore& s = (*c.sems)[static_cast<std::size_t>(pt.sem)];
      if (s.value() < pt.value) {
        note("op " + std::to_string(i) + " started before its wait s" + std::to_string(pt.sem) +
             ">=" + std::to_string(pt.value) + " was met (value " + std::to_string(s.value()) + ")");
      }
      const auto producer = static_cast<std::size_t>(o.producers[w]);
      if (ended_[producer].load(std::memory_order_acquire) != 1) {
        note("op " + std::to_string(i) + " started before op " + std::to_string(producer) +
             " (which signals s" + std::to_string(pt.sem) + "=" + std::to_string(pt.value) + ") finished");
        continue;
      }
      for (std::size_t k = 0; k < bytes_[producer].size(); ++k) {
        if (bytes_[producer][k] != pattern(producer, k)) {
          note("op " + std::to_string(i) + " read op " + std::to_string(producer) + "'s bytes damaged");
          break;
        }
      }
    }
    for (std::size_t k = 0; k < bytes_[i].size(); ++k) bytes_[i][k] = pattern(i, k);
    for (unsigned s = 0; s < o.spin; ++s) causal::detail::cpu_relax();
    if (o.fails) {
      ended_[i].store(2, std::memory_order_release);
      return causal::error{errc::device_lost, "property test: injected failure"};
    }
    ended_[i].store(1, std::memory_order_release);
    return status{};
  }

  void note(std::string what) {
    std::lock_guard lock(mutex_);
    if (violation_.empty()) violation_ = std::move(what);
  }

  const program& p_;
  bool elision_;
  std::unique_ptr<std::atomic<int>[]> started_;
  std::unique_ptr<std::atomic<int>[]> ended_;  // 0 not ended, 1 ran, 2 ran and failed
  std::vector<std::array<std::uint64_t, 4>> bytes_;
  std::mutex mutex_;
  std::string violation_;
};

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return std::strtoull(v, nullptr, 0);
  return fallback;
}

}  // namespace

TEST_CASE("cpu elision property: random programs on real queues and threads keep every wait and "
          "their outcome, elision on or off",
          "[cpu][elision][property]") {
#if CAUSAL_HAS_TSAN() || CAUSAL_HAS_ASAN()
  constexpr std::uint64_t default_programs = 25;
#else
  constexpr std::uint64_t default_programs = 150;
#endif
  const std::uint64_t seed = env_or("CAUSAL_TEST_SEED", std::random_device{}());
  const std::uint64_t programs = env_or("CAUSAL_TEST_PROGRAMS", default_programs);
  INFO("CAUSAL_TEST_SEED=" << seed << " (program i uses seed + i)");
  causal::queue_stats on{}, off{};
  std::uint64_t ops = 0, failures = 0, multi_signal = 0;
  if (env_or("CAUSAL_TEST_CENSUS", 0) != 0) {
    std::uint64_t waits = 0;
    for (std::uint64_t i = 0; i < programs; ++i) {
      const program p = generate(seed + i, /*invocations=*/false);
      for (const op_desc& o : p.ops) waits += o.waits.size();
      outcome unused;
      REQUIRE(execution(p, true).run(unused, on, /*census=*/true).empty());
    }
    std::printf("census: %llu programs (seed %llu), %llu waits (plus one gate per queue): %llu device, "
                "elided %llu same queue + %llu dominated + %llu reached\n",
                static_cast<unsigned long long>(programs), static_cast<unsigned long long>(seed),
                static_cast<unsigned long long>(waits), static_cast<unsigned long long>(on.device_waits),
                static_cast<unsigned long long>(on.elided_same_queue),
                static_cast<unsigned long long>(on.elided_dominated),
                static_cast<unsigned long long>(on.elided_reached));
    return;
  }
  for (std::uint64_t i = 0; i < programs; ++i) {
    const program p = generate(seed + i, /*invocations=*/true);
    ops += p.ops.size();
    for (const op_desc& o : p.ops) {
      failures += o.fails ? 1 : 0;
      multi_signal += o.signals.size() > 1 ? 1 : 0;
    }
    const outcome expected = model(p);
    outcome with, without;
    const std::string bad_with = execution(p, true).run(with, on);
    const std::string bad_without = execution(p, false).run(without, off);
    causal::test::note_progress();
    const std::string replay = "replay alone with CAUSAL_TEST_SEED=" + std::to_string(seed + i) +
                               " CAUSAL_TEST_PROGRAMS=1\n" + p.describe();
    if (!bad_with.empty()) FAIL("elision on: " << bad_with << "\n" << replay);
    if (!bad_without.empty()) FAIL("elision off: " << bad_without << "\n" << replay);
    if (!(with == expected)) FAIL("elision on differs from the model:\n" << diff(with, expected, "run", "model") << replay);
    if (!(without == expected)) {
      FAIL("elision off differs from the model:\n" << diff(without, expected, "run", "model") << replay);
    }
  }
  // Elision must really happen, and be off when switched off.
  CHECK(on.elided_dominated > 0);
  CHECK(on.elided_same_queue > 0);
  CHECK(off.waits_elided() == 0);
  CHECK(multi_signal > programs * 10);
  WARN("cpu_elision_property: " << programs << " programs, " << ops << " ops (" << multi_signal
                                << " with several signals, " << failures << " failing); elision on: "
                                << on.device_waits << " device waits, elided " << on.elided_reached
                                << " reached + " << on.elided_same_queue << " same queue + "
                                << on.elided_dominated << " dominated; off: " << off.device_waits
                                << " device waits");
}
