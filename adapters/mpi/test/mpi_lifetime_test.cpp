// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Lifetimes across nodes (docs/lifetimes.md, the MPI rows): two nodes on
// loopback carriers, a semaphore rank 0 exports, and a CPU queue on rank 1
// whose operation waits on rank 1's proxy of it, destroyed in every order
// (the semaphore signalled before a step drawn at random, or never). Each
// order runs in a child process and must end as the documented rules,
// written below as a model, predict: a carrier destroyed under its node is
// refused loudly; every other order exits cleanly, and the queue's
// operation either ran (its signal reached) or failed with
// errc::cancelled -- never left pending, never touching a dead object.
//
// Forking tests are skipped under ThreadSanitizer (child_process.hpp).

#include <causal/adapters/cpu/queue.hpp>
#include <causal/adapters/mpi/loopback_carrier.hpp>
#include <causal/adapters/mpi/node.hpp>
#include <causal/axis.hpp>
#include <causal/executor.hpp>
#include <causal/semaphore.hpp>

#include "catch.hpp"
#include "child_process.hpp"
#include "destruction_orders.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <optional>
#include <random>
#include <string>
#include <unistd.h>

namespace {

namespace mpi = causal::mpi;
using node_t = mpi::basic_node<mpi::loopback_carrier, causal::semaphore, mpi::default_node_traits,
                               mpi::manual_clock>;
using causal_test::child_outcome;
using causal_test::contains;
using causal_test::run_child;

// How the queue's operation ended, as the child's exit code.
constexpr int exit_ran = 0;
constexpr int exit_cancelled = 10;
constexpr int exit_other_failure = 11;
constexpr int exit_still_pending = 12;
constexpr int exit_setup_failed = 13;

enum object : int { obj_carrier0, obj_carrier1, obj_node0, obj_node1, obj_exported, obj_queue, obj_count };
enum class verdict { ran, cancelled, carrier_refused };

using order_type = causal_test::destruction_order<obj_count>;

constexpr std::array<const char*, obj_count> object_names{"carrier 0", "carrier 1", "node 0",
                                                         "node 1",    "exported",  "queue"};

/// What docs/lifetimes.md says happens when the objects go in `order`
/// (`exported` is signalled to 1 just before step `signal_at`, if it is
/// alive then; obj_count: never). The queue's operation waits on node 1's
/// proxy of `exported` >= 1 and signals `done` = 1. A carrier under its
/// live node is refused. A node that goes says BYE (its peer's proxies of
/// its exports fail with errc::cancelled) and destroys its own proxies
/// (waiters get errc::cancelled); a destroyed export fails its proxies the
/// same way; a destroyed queue cancels what it has not run.
verdict predict(const order_type& order, int signal_at) {
  std::array<bool, obj_count> alive{};
  alive.fill(true);
  bool ran = false;
  for (int step = 0; step < obj_count; ++step) {
    if (step == signal_at && alive[obj_exported]) {
      ran = alive[obj_node0] && alive[obj_node1] && alive[obj_queue];
    }
    const int o = order[static_cast<std::size_t>(step)];
    if ((o == obj_carrier0 && alive[obj_node0]) || (o == obj_carrier1 && alive[obj_node1])) {
      return verdict::carrier_refused;
    }
    alive[static_cast<std::size_t>(o)] = false;
  }
  return ran ? verdict::ran : verdict::cancelled;
}

mpi::node_options quiet_options() {
  mpi::node_options o;
  o.heartbeat_interval = std::chrono::microseconds(0);
  o.heartbeat_timeout = std::chrono::microseconds(0);
  return o;
}

/// The child's side: builds the two ranks, submits, destroys in `order`,
/// and exits with how the queue's operation ended.
[[noreturn]] void run_order(const order_type& order, int signal_at) {
  int outcome = exit_still_pending;
  {
    causal::executor ex(causal::executor_options{.worker_count = 1});
    causal::semaphore done;
    mpi::loopback_hub hub(2);
    mpi::manual_clock clock;
    std::optional<mpi::loopback_carrier> carrier0, carrier1;
    std::optional<node_t> node0, node1;
    std::optional<causal::semaphore> exported;
    std::optional<causal::cpu::queue> q;
    carrier0.emplace(hub, 0);
    carrier1.emplace(hub, 1);
    node0.emplace(*carrier0, quiet_options(), clock);
    node1.emplace(*carrier1, quiet_options(), clock);
    exported.emplace();
    q.emplace(ex);
    auto pump = [&] {
      for (int round = 0; round < 64; ++round) {
        std::size_t work = 0;
        if (node0) work += node0->poll();
        if (node1) work += node1->poll();
        if (work == 0) return;
      }
    };
    if (!node0->export_semaphore(1, *exported) || !node0->start() || !node1->start()) {
      _exit(exit_setup_failed);
    }
    pump();
    auto proxy = node1->open_proxy(0, 1);
    if (!proxy) _exit(exit_setup_failed);
    pump();
    if (!q->host({{*proxy, 1}}, {{&done, 1}}, [](const causal::host_call_context&) noexcept {})) {
      _exit(exit_setup_failed);
    }
    // After each step: let the news travel, then wait (on events) for the
    // queue when its wait is settled -- reached, or failed by a BYE, a
    // withdrawal or its proxy's destruction.
    auto settle = [&] {
      pump();
      if (q && (done.try_wait(1) || !node1 || !node0 || !exported ||
                (*proxy)->value() >= 1 || (*proxy)->failed())) {
        (void)q->wait_idle(std::chrono::steady_clock::now() + std::chrono::seconds(60));
      }
    };
    for (int step = 0; step < obj_count; ++step) {
      if (step == signal_at && exported) {
        if (!exported->signal(1)) _exit(exit_setup_failed);
        settle();
      }
      switch (order[static_cast<std::size_t>(step)]) {
        case obj_carrier0: carrier0.reset(); break;
        case obj_carrier1: carrier1.reset(); break;
        case obj_node0: node0.reset(); break;
        case obj_node1: node1.reset(); break;
        case obj_exported: exported.reset(); break;
        case obj_queue: q.reset(); break;
        default: break;
      }
      settle();
    }
    if (done.try_wait(1)) {
      outcome = exit_ran;
    } else if (done.failure()) {
      outcome = done.failure()->code() == causal::errc::cancelled ? exit_cancelled : exit_other_failure;
    }
  }
  std::fflush(nullptr);
  _exit(outcome);
}

}  // namespace

TEST_CASE("mpi: every destruction order of two nodes, an export, a proxy's waiter and the carriers "
          "ends as documented",
          "[mpi][lifetime]") {
  CAUSAL_TEST_NEEDS_FORK();
  std::mt19937 rng(20261128);
  int runs = 0;
  std::array<int, 3> seen{};
  const int orders = causal_test::for_each_destruction_order<obj_count>(0, [&](const order_type& order) {
    // Each order twice: never signalled, and signalled before a random step.
    for (int signal_at : {static_cast<int>(obj_count), static_cast<int>(rng() % obj_count)}) {
      const verdict expected = predict(order, signal_at);
      ++seen[static_cast<std::size_t>(expected)];
      const child_outcome out = run_child([&] { run_order(order, signal_at); });
      INFO("order: " << causal_test::describe_order(order, object_names) << "; signalled before step "
                     << signal_at);
      INFO("exit code " << out.exit_code << ", stderr: " << out.stderr_text);
      switch (expected) {
        case verdict::ran:
          CHECK(out.exit_code == exit_ran);
          CHECK(out.stderr_text.empty());
          break;
        case verdict::cancelled:
          CHECK(out.exit_code == exit_cancelled);
          CHECK(out.stderr_text.empty());
          break;
        case verdict::carrier_refused:
          CHECK(out.aborted);
          CHECK(contains(out.stderr_text, "mpi::loopback_carrier destroyed while 1 mpi node(s) still use it"));
          break;
      }
      ++runs;
    }
  });
  CHECK(orders == 720);
  CHECK(runs == 2 * 720);
  for (int n : seen) CHECK(n > 0);  // every outcome is exercised
}
