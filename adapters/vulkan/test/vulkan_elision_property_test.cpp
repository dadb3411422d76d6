// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Property test of the elision promise on the Vulkan adapter: random
// programs of real command buffers on real vulkan::queues (lavapipe in
// CI, under the validation layer like every Vulkan test), compared with a
// reference model and with themselves run with wait elision switched off
// (docs/queues.md, "Signals of one operation" and "Elision never changes an
// outcome"). The Vulkan counterpart of
// adapters/cpu/test/cpu_elision_property_test.cpp.
//
// A program: 2-5 causal queues on the fixture's vk::Queue, driven by one of
// the three fixtures of vk_fixture.hpp (vkQueueSubmit2 or the legacy path,
// polled or with the device's waiter thread); 30-80 operations, each a
// command buffer that appends its tag to the fixture's device-side log,
// signalling 0-3 shared semaphores (often several) and waiting on 0-3
// values earlier operations signal. A semaphore's values are given out in
// increasing order and the signaller of v > 1 also waits for S >= v - 1,
// so every execution reaches them in order: a consistent program, whose
// outcome is fixed (test/support/consistent_dag.hpp draws these
// dependencies, as for the CPU version). Each queue's first operation waits on a host gate, so
// everything is submitted before anything runs; the gates open in random
// order. Slow timepoint callbacks on random values spin (up to 20000
// pause instructions) on the polling thread, between one value a poll
// reaches and the next.
//
// Failures. A Vulkan operation cannot fail by itself once sent; what fails
// is a semaphore it waits for. So a program has 0-3 host "upstream"
// semaphores, which about one operation in 15 also waits for (value 1);
// each is either signalled or failed, at a random point among the gate
// openings: before any gate, between two, or after the last. Why that keeps
// the outcome fixed and the model exact: every decision comes after every
// submission (so no submit sees a failed semaphore, and no wait on an
// upstream is elided: its value is neither reached nor announced), and no
// operation can get past a wait on an upstream before it is decided (its
// signal is never sent, so the batch is held on the host). Whatever the
// timing, the operation and everything behind it run only if the upstream
// was signalled; and a dropped batch fails its signals only once its waits
// are met or failed (queue.hpp, "Failure"), so a value a healthy operation
// signals is reached before anything can fail its semaphore. That must
// hold for every wait, elided ones included: a wait elided because its own
// queue signals the value may stand for a batch already sent but not yet
// reached on the host, and failing the semaphore first loses that value
// (the run then differs from the model and from elision off). The model
// evaluates the program in submission order: an operation runs when its
// queue has not failed and every wait of it is met; one that does not run
// fails its signals' semaphores (freezing each at the value it had) and
// its queue.
//
// The checks, for each program and each of the two runs:
//   - every submit succeeds and gets the next epoch of its queue;
//   - the run finishes: every semaphore reaches its last value or fails,
//     every queue is idle, nothing is held (a hang guard of 40 s);
//   - the log names each operation at most once; an operation ran exactly
//     when its epoch is at or below its queue's completed epoch; each one
//     that ran ran after every operation whose values it waits for and
//     after the one before it on its queue (device order, elided waits
//     included);
//   - no host observer learns (axis, e) before every signal of operation e
//     is reached: a timepoint on each signal of every multi-signal
//     operation copies what a waiter imports and, when that frontier covers
//     (axis, e), or the signal is the operation's last, checks on the spot
//     that the operation's other signals are reached on the host (or
//     failed: see the next check); a timepoint on the queue's epoch
//     timeline at e checks all of them;
//   - which operations ran, and every semaphore's final value and failed
//     flag, equal the model's, and those of the same program run with
//     every queue's wait elision switched off.
// And elision must really happen (same-queue and dominated waits, counted;
// none with elision off), and the observers must have seen signals that
// carry (axis, e) (the totals are printed).
//
// Seeds: CAUSAL_TEST_SEED=<n> sets the base seed (else random); program i
// uses seed + i and a failure prints the command that replays it alone.
// CAUSAL_TEST_PROGRAMS=<n> sets the count (default 48, 12 under
// sanitizers; 48 take about 1.5 s on lavapipe with validation).

#include <causal/adapters/vulkan/queue.hpp>
#include <causal/adapters/vulkan/semaphore.hpp>
#include <causal/detail/spin_lock.hpp>
#include <causal/frontier.hpp>
#include <causal/semaphore.hpp>

#include "catch.hpp"
#include "consistent_dag.hpp"
#include "string_makers.hpp"
#include "vk_fixture.hpp"
#include "watchdog.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using causal::errc;
using causal::status;
using namespace std::chrono_literals;
using vk_semaphore = causal::vulkan::semaphore;
using vk_queue = causal::vulkan::queue;

using point = causal::test::program_point;
using hook_desc = causal::test::program_hook;

struct op_desc {
  int queue = 0;
  std::vector<point> waits;
  /// The upstream semaphore it also waits for (value 1), or -1.
  int upstream = -1;
  std::vector<point> signals;
  /// Per wait: the operation whose signal reaches that value.
  std::vector<int> producers;
};


/// A host action after every submission: open a queue's gate, or decide an
/// upstream semaphore.
struct event {
  bool gate = true;
  int index = 0;
};

const char* const fixture_names[] = {"submit2, polled", "legacy submit, polled", "submit2, waiter thread"};

struct program {
  int fixture = 0;  ///< index into fixture_names
  int queues = 0;
  int sems = 0;
  std::vector<op_desc> ops;
  std::vector<std::uint64_t> top;     ///< per semaphore: its last value
  std::vector<bool> upstream_fails;   ///< per upstream: failed, else signalled
  std::vector<event> events;
  std::vector<hook_desc> hooks;

  std::string describe() const {
    std::ostringstream out;
    out << fixture_names[fixture] << ", " << queues << " queues, " << sems << " semaphores, "
        << upstream_fails.size() << " upstreams, " << ops.size() << " ops\n";
    out << "  host, after every submit:";
    for (const event& e : events) {
      if (e.gate) {
        out << " open q" << e.index;
      } else {
        out << (upstream_fails[static_cast<std::size_t>(e.index)] ? " FAIL u" : " signal u") << e.index;
      }
      out << ";";
    }
    out << "\n";
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const op_desc& o = ops[i];
      out << "  op " << i << " q" << o.queue << " waits";
      if (o.upstream >= 0) out << " u" << o.upstream << ">=1";
      for (const point& w : o.waits) out << " s" << w.sem << ">=" << w.value;
      out << " signals";
      for (const point& s : o.signals) out << " s" << s.sem << "=" << s.value;
      out << "\n";
    }
    return out.str();
  }
};

program generate(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int lo, int hi) { return causal::test::consistent_dag::pick(rng, lo, hi); };
  program p;
  p.fixture = pick(0, 2);
  p.queues = pick(2, 5);
  p.sems = pick(3, 3 * p.queues);
  const int upstreams = pick(0, 3);
  for (int u = 0; u < upstreams; ++u) p.upstream_fails.push_back(pick(0, 1) == 0);
  const int n = pick(30, 80);
  causal::test::consistent_dag dag(p.sems);
  for (int i = 0; i < n; ++i) {
    op_desc o;
    o.queue = pick(0, p.queues - 1);
    if (upstreams > 0 && pick(0, 14) == 0) o.upstream = pick(0, upstreams - 1);
    causal::test::program_edges e = dag.draw(rng, i);
    o.signals = std::move(e.signals);
    o.waits = std::move(e.waits);
    o.producers = std::move(e.producers);
    p.ops.push_back(std::move(o));
  }
  for (int s = 0; s < p.sems; ++s) p.top.push_back(dag.top(s));
  p.hooks = dag.hooks(rng, 8);
  for (int q = 0; q < p.queues; ++q) p.events.push_back(event{true, q});
  for (int u = 0; u < upstreams; ++u) p.events.push_back(event{false, u});
  std::shuffle(p.events.begin(), p.events.end(), rng);
  return p;
}

struct outcome {
  std::vector<bool> ran;
  std::vector<std::uint64_t> values;
  std::vector<bool> failed;
  bool operator==(const outcome&) const = default;
};

std::string diff(const outcome& a, const outcome& b, const char* an, const char* bn) {
  std::ostringstream out;
  auto name = [](bool ran) { return ran ? "ran" : "not run"; };
  for (std::size_t i = 0; i < a.ran.size() && i < b.ran.size(); ++i) {
    if (a.ran[i] != b.ran[i]) out << "  op " << i << ": " << an << " " << name(a.ran[i]) << ", " << bn << " " << name(b.ran[i]) << "\n";
  }
  for (std::size_t s = 0; s < a.values.size() && s < b.values.size(); ++s) {
    if (a.values[s] != b.values[s] || a.failed[s] != b.failed[s]) {
      out << "  s" << s << ": " << an << " " << a.values[s] << (a.failed[s] ? " failed" : "") << ", " << bn << " "
          << b.values[s] << (b.failed[s] ? " failed" : "") << "\n";
    }
  }
  return out.str();
}

/// The reference model: the program evaluated in submission order, which
/// for a consistent program is an order every real run agrees with (see
/// the file comment).
outcome model(const program& p) {
  outcome out;
  out.ran.assign(p.ops.size(), false);
  out.values.assign(static_cast<std::size_t>(p.sems), 0);
  out.failed.assign(static_cast<std::size_t>(p.sems), false);
  std::vector<bool> queue_failed(static_cast<std::size_t>(p.queues), false);
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const op_desc& o = p.ops[i];
    bool runs = !queue_failed[static_cast<std::size_t>(o.queue)];
    if (o.upstream >= 0) runs = runs && !p.upstream_fails[static_cast<std::size_t>(o.upstream)];
    for (const point& w : o.waits) runs = runs && out.values[static_cast<std::size_t>(w.sem)] >= w.value;
    out.ran[i] = runs;
    for (const point& s : o.signals) {
      const auto k = static_cast<std::size_t>(s.sem);
      if (out.failed[k]) continue;
      if (runs) {
        out.values[k] = s.value;
      } else {
        out.failed[k] = true;
      }
    }
    if (!runs) queue_failed[static_cast<std::size_t>(o.queue)] = true;
  }
  return out;
}

/// What the runs add up to (printed at the end).
struct totals {
  causal::queue_stats stats{};
  std::uint64_t observed = 0;  ///< observer callbacks that checked sibling signals
  std::uint64_t carried = 0;   ///< signals observed carrying (axis, e)

  void add(const causal::queue_stats& st) {
    stats.elided_reached += st.elided_reached;
    stats.elided_same_queue += st.elided_same_queue;
    stats.elided_dominated += st.elided_dominated;
    stats.device_waits += st.device_waits;
    stats.submissions += st.submissions;
  }
};

/// One execution of a program on a fresh fixture of type `Fixture`.
template <class Fixture>
class execution {
 public:
  execution(const program& p, bool elision) : p_(p), elision_(elision) {}

  /// Runs the program; returns the first violation (empty if none).
  std::string run(outcome& out, totals& sum) {
    const std::size_t n = p_.ops.size();
    // Declared before the fixture: destroyed after its semaphores, which
    // they were registered with (each is unregistered or has fired by then).
    std::deque<observer> observers;
    std::deque<slow_hook> hooks;
    auto fixture = std::make_unique<Fixture>();
    Fixture& f = *fixture;
    std::vector<vk_queue*> queues;
    for (int q = 0; q < p_.queues; ++q) {
      vk_queue& vq = f.make_queue();
      vq.with_core([&](auto& core) { core.set_wait_elision(elision_); });
      queues.push_back(&vq);
    }
    for (int s = 0; s < p_.sems; ++s) sems_.push_back(&f.make_semaphore());
    std::vector<vk_semaphore*> gates, upstreams;
    for (int q = 0; q < p_.queues; ++q) gates.push_back(&f.make_semaphore());
    for (std::size_t u = 0; u < p_.upstream_fails.size(); ++u) upstreams.push_back(&f.make_semaphore());

    // Everything is submitted before any gate opens.
    epochs_.assign(n, 0);
    axes_.assign(n, causal::axis{});
    std::vector<std::uint64_t> next_epoch(static_cast<std::size_t>(p_.queues), 1);
    for (std::size_t i = 0; i < n; ++i) {
      const op_desc& o = p_.ops[i];
      const auto qi = static_cast<std::size_t>(o.queue);
      std::vector<vk_queue::wait_type> waits;
      std::vector<vk_queue::signal_type> signals;
      if (next_epoch[qi] == 1) waits.push_back({gates[qi], 1});
      if (o.upstream >= 0) waits.push_back({upstreams[static_cast<std::size_t>(o.upstream)], 1});
      for (const point& w : o.waits) waits.push_back({sems_[static_cast<std::size_t>(w.sem)], w.value});
      for (const point& s : o.signals) signals.push_back({sems_[static_cast<std::size_t>(s.sem)], s.value});
      const auto r = queues[qi]->submit(std::span<const vk_queue::wait_type>(waits),
                                        std::span<const vk_queue::signal_type>(signals),
                                        f.op(static_cast<int>(i) + 1));
      std::string refused;
      if (!r) {
        refused = "op " + std::to_string(i) + ": submit refused: " + std::string(r.error_value().message());
      } else if (r->epoch != next_epoch[qi]) {
        refused = "op " + std::to_string(i) + ": got epoch " + std::to_string(r->epoch) + ", expected " +
                  std::to_string(next_epoch[qi]);
      }
      if (!refused.empty()) {
        // Fail the gates: every held batch is dropped, so the fixture's
        // teardown does not wait for them.
        for (vk_semaphore* g : gates) (void)g->fail(causal::error{errc::cancelled, "vulkan elision property: abandoned"});
        return refused;
      }
      epochs_[i] = next_epoch[qi]++;
      axes_[i] = queues[qi]->axis();
    }

    // Observers: every signal of a multi-signal op, and each op's epoch on
    // its queue's timeline; then the slow callbacks.
    for (std::size_t i = 0; i < n; ++i) {
      const op_desc& o = p_.ops[i];
      if (o.signals.size() > 1) {
        for (std::size_t k = 0; k < o.signals.size(); ++k) {
          observer& ob = observers.emplace_back();
          ob.self = this;
          ob.op = i;
          ob.signal = static_cast<int>(k);
          ob.node.reset(o.signals[k].value, &observer::fire, &ob);
          sems_[static_cast<std::size_t>(o.signals[k].sem)]->add_timepoint(ob.node, ob.imported);
        }
      }
      if (!o.signals.empty()) {
        observer& ob = observers.emplace_back();
        ob.self = this;
        ob.op = i;
        ob.signal = -1;
        ob.node.reset(epochs_[i], &observer::fire, &ob);
        queues[static_cast<std::size_t>(o.queue)]->timeline().add_timepoint(ob.node);
      }
    }
    for (const hook_desc& h : p_.hooks) {
      slow_hook& sh = hooks.emplace_back();
      sh.spin = h.spin;
      sh.node.reset(h.at.value, &slow_hook::fire, &sh);
      sems_[static_cast<std::size_t>(h.at.sem)]->add_timepoint(sh.node);
    }

    for (const event& e : p_.events) {
      if (e.gate) {
        if (status s = gates[static_cast<std::size_t>(e.index)]->signal(1); !s) {
          note("opening gate q" + std::to_string(e.index) + " failed: " + std::string(s.error_value().message()));
        }
      } else if (p_.upstream_fails[static_cast<std::size_t>(e.index)]) {
        (void)upstreams[static_cast<std::size_t>(e.index)]->fail(
            causal::error{errc::cancelled, "vulkan elision property: upstream failed on purpose"});
      } else if (status s = upstreams[static_cast<std::size_t>(e.index)]->signal(1); !s) {
        note("signalling u" + std::to_string(e.index) + " failed: " + std::string(s.error_value().message()));
      }
    }

    // The end: every semaphore at its last value or failed, every queue
    // idle or failed, nothing held on the host.
    const auto deadline = std::chrono::steady_clock::now() + 40s;
    std::string hang;
    for (int s = 0; s < p_.sems; ++s) {
      const std::uint64_t top = p_.top[static_cast<std::size_t>(s)];
      if (top != 0 && sems_[static_cast<std::size_t>(s)]->wait_until(top, deadline).code() == errc::timeout) {
        hang = "s" + std::to_string(s) + " neither reached " + std::to_string(top) + " nor failed within 40 s (hang)";
      }
    }
    for (std::size_t q = 0; q < queues.size(); ++q) {
      if (queues[q]->wait_idle(deadline).code() == errc::timeout) {
        hang = "q" + std::to_string(q) + " did not finish within 40 s (hang)";
      }
    }
    for (;;) {
      f.pump();
      const bool held = std::any_of(queues.begin(), queues.end(), [](vk_queue* q) { return q->held_count() != 0; });
      if (!held) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        hang = "batches still held on the host after 40 s (hang)";
        break;
      }
      std::this_thread::yield();
    }

    // Observers that fired with the waiter thread may still be running.
    for (observer& ob : observers) {
      if (ob.node.cancel()) continue;
      while (!ob.done.load(std::memory_order_acquire)) std::this_thread::yield();
    }
    for (slow_hook& sh : hooks) {
      if (sh.node.cancel()) continue;
      while (!sh.done.load(std::memory_order_acquire)) std::this_thread::yield();
    }

    // Which operations ran: the device log, and the queues' epochs.
    const std::vector<int> log = f.log();
    std::vector<int> position(n, -1);
    for (std::size_t at = 0; at < log.size(); ++at) {
      const int tag = log[at];
      if (tag < 1 || static_cast<std::size_t>(tag) > n) {
        note("the device log holds tag " + std::to_string(tag) + ", which no op has");
        continue;
      }
      int& pos = position[static_cast<std::size_t>(tag - 1)];
      if (pos >= 0) note("op " + std::to_string(tag - 1) + " ran twice");
      pos = static_cast<int>(at);
    }
    out.ran.assign(n, false);
    std::vector<int> previous_on_queue(static_cast<std::size_t>(p_.queues), -1);
    for (std::size_t i = 0; i < n; ++i) {
      const op_desc& o = p_.ops[i];
      const auto qi = static_cast<std::size_t>(o.queue);
      const bool ran = position[i] >= 0;
      out.ran[i] = ran;
      const std::uint64_t completed = queues[qi]->completed_epoch();
      if (hang.empty() && ran != (epochs_[i] <= completed)) {
        note("op " + std::to_string(i) + (ran ? " ran" : " did not run") + " but q" + std::to_string(o.queue) +
             " completed epoch " + std::to_string(completed) + " (its epoch is " + std::to_string(epochs_[i]) + ")");
      }
      if (ran) {
        for (std::size_t w = 0; w < o.waits.size(); ++w) {
          const auto producer = static_cast<std::size_t>(o.producers[w]);
          if (position[producer] < 0 || position[producer] > position[i]) {
            note("op " + std::to_string(i) + " ran before op " + std::to_string(producer) + " (which signals s" +
                 std::to_string(o.waits[w].sem) + "=" + std::to_string(o.waits[w].value) + ")");
          }
        }
        const int prev = previous_on_queue[qi];
        if (prev >= 0 && (position[static_cast<std::size_t>(prev)] < 0 ||
                          position[static_cast<std::size_t>(prev)] > position[i])) {
          note("op " + std::to_string(i) + " ran before op " + std::to_string(prev) + ", ahead of it on q" +
               std::to_string(o.queue));
        }
      }
      previous_on_queue[qi] = static_cast<int>(i);
    }
    out.values.clear();
    out.failed.clear();
    for (const vk_semaphore* s : sems_) {
      out.values.push_back(s->value());
      out.failed.push_back(s->failed());
    }
    for (vk_queue* q : queues) sum.add(q->stats());
    sum.observed += observed_.load(std::memory_order_relaxed);
    sum.carried += carried_.load(std::memory_order_relaxed);
    fixture.reset();
    std::lock_guard lock(mutex_);
    if (!violation_.empty()) return violation_;
    return hang;
  }

 private:
  /// A timepoint on one signal of an op (`signal` = its index), or on the
  /// op's epoch on its queue's timeline (`signal` = -1).
  struct observer {
    causal::semaphore_timepoint node;
    vk_semaphore::imported_type imported{};
    execution* self = nullptr;
    std::size_t op = 0;
    int signal = 0;
    std::atomic<bool> done{false};

    static void fire(causal::semaphore_timepoint& tp, status st) noexcept {
      auto* ob = static_cast<observer*>(tp.user_data());
      if (st) ob->self->observe(*ob);
      ob->done.store(true, std::memory_order_release);
    }
  };

  struct slow_hook {
    causal::semaphore_timepoint node;
    unsigned spin = 0;
    std::atomic<bool> done{false};
    static void fire(causal::semaphore_timepoint& tp, status) noexcept {
      auto* self = static_cast<slow_hook*>(tp.user_data());
      for (unsigned i = 0; i < self->spin; ++i) causal::detail::cpu_relax();
      self->done.store(true, std::memory_order_release);
    }
  };

  /// On the polling thread, as the value is reached (under that
  /// semaphore's lock: reads other semaphores' values only).
  void observe(const observer& ob) noexcept {
    const op_desc& o = p_.ops[ob.op];
    const bool last = ob.signal < 0 || static_cast<std::size_t>(ob.signal) + 1 == o.signals.size();
    // (axis, e) in what a waiter on this value imports: the claim that
    // every signal of e is reached.
    const bool carries = ob.signal >= 0 && ob.imported.exact &&
                         ob.imported.frontier.epoch_of(axes_[ob.op]) >= epochs_[ob.op];
    if (carries) carried_.fetch_add(1, std::memory_order_relaxed);
    if (!carries && !last) return;
    observed_.fetch_add(1, std::memory_order_relaxed);
    for (std::size_t j = 0; j < o.signals.size(); ++j) {
      if (static_cast<int>(j) == ob.signal) continue;
      const point& other = o.signals[j];
      const vk_semaphore& sibling = *sems_[static_cast<std::size_t>(other.sem)];
      const std::uint64_t now = sibling.value();
      // A failed sibling is never reached, and the adapter rightly stops
      // waiting for it; in a consistent program it cannot fail below a
      // value of an op that ran, which the outcome comparison checks.
      if (now >= other.value || sibling.failed()) continue;
      std::string what = ob.signal < 0 ? "q" + std::to_string(o.queue) + "'s timeline reached epoch " +
                                             std::to_string(epochs_[ob.op])
                                       : "s" + std::to_string(o.signals[static_cast<std::size_t>(ob.signal)].sem) +
                                             "=" + std::to_string(o.signals[static_cast<std::size_t>(ob.signal)].value) +
                                             (carries ? " (carrying the op's (axis, epoch))" : " (its last signal)") +
                                             " was reached";
      note("op " + std::to_string(ob.op) + ": " + what + " on the host before s" + std::to_string(other.sem) + "=" +
           std::to_string(other.value) + " (value " + std::to_string(now) + ")");
    }
  }

  void note(std::string what) {
    std::lock_guard lock(mutex_);
    if (violation_.empty()) violation_ = std::move(what);
  }

  const program& p_;
  bool elision_;
  std::vector<vk_semaphore*> sems_;
  std::vector<std::uint64_t> epochs_;
  std::vector<causal::axis> axes_;
  std::atomic<std::uint64_t> observed_{0};
  std::atomic<std::uint64_t> carried_{0};
  std::mutex mutex_;
  std::string violation_;
};

std::string run_program(const program& p, bool elision, outcome& out, totals& sum) {
  switch (p.fixture) {
    case 0: return execution<causal_vk_test::vk_submit2_polled>(p, elision).run(out, sum);
    case 1: return execution<causal_vk_test::vk_legacy_polled>(p, elision).run(out, sum);
    default: return execution<causal_vk_test::vk_submit2_waiter>(p, elision).run(out, sum);
  }
}

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return std::strtoull(v, nullptr, 0);
  return fallback;
}

}  // namespace

TEST_CASE("vulkan elision property: random programs on real queues keep every wait, reach an "
          "operation's signals before its (axis, epoch), and their outcome, elision on or off",
          "[vulkan][elision][property]") {
#if CAUSAL_HAS_TSAN() || CAUSAL_HAS_ASAN()
  constexpr std::uint64_t default_programs = 12;
#else
  constexpr std::uint64_t default_programs = 48;
#endif
  const std::uint64_t seed = env_or("CAUSAL_TEST_SEED", std::random_device{}());
  const std::uint64_t programs = env_or("CAUSAL_TEST_PROGRAMS", default_programs);
  INFO("CAUSAL_TEST_SEED=" << seed << " (program i uses seed + i)");
  totals on{}, off{};
  std::uint64_t ops = 0, multi_signal = 0, failed_upstreams = 0, not_run = 0;
  for (std::uint64_t i = 0; i < programs; ++i) {
    const program p = generate(seed + i);
    ops += p.ops.size();
    for (const op_desc& o : p.ops) multi_signal += o.signals.size() > 1 ? 1 : 0;
    failed_upstreams += static_cast<std::uint64_t>(std::count(p.upstream_fails.begin(), p.upstream_fails.end(), true));
    const outcome expected = model(p);
    not_run += static_cast<std::uint64_t>(std::count(expected.ran.begin(), expected.ran.end(), false));
    outcome with, without;
    const std::string bad_with = run_program(p, true, with, on);
    causal::test::note_progress();
    const std::string bad_without = run_program(p, false, without, off);
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
  // Elision must really happen, be off when switched off, and the
  // observers must have had something to check (too few programs, as in a
  // replay, may not show every kind).
  CHECK(off.stats.waits_elided() == 0);
  if (programs >= 10) {
    CHECK(on.stats.elided_dominated > 0);
    CHECK(on.stats.elided_same_queue > 0);
    CHECK(on.carried > 0);
    CHECK(failed_upstreams > 0);
    CHECK(not_run > 0);
    CHECK(multi_signal > programs * 5);
  }
  WARN("vulkan_elision_property: " << programs << " programs, " << ops << " ops (" << multi_signal
                                   << " with several signals; " << failed_upstreams << " upstreams failed, "
                                   << not_run << " ops not run); elision on: " << on.stats.device_waits
                                   << " device waits, elided " << on.stats.elided_reached << " reached + "
                                   << on.stats.elided_same_queue << " same queue + " << on.stats.elided_dominated
                                   << " dominated; off: " << off.stats.device_waits << " device waits; "
                                   << on.observed + off.observed << " observer checks ("
                                   << on.carried + off.carried << " on a signal carrying (axis, epoch))");
}
