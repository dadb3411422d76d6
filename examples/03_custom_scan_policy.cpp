// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// 03_custom_scan_policy: writing your own compute-slot scan policy and
// running an executor with it.
//
// A scan policy decides which compute slot an idle worker tries next. It
// sees a read-only view of the slots (runnable or not, wake budget,
// priority) and keeps what it likes in the worker's cursor. This one,
// `widest_first`, always picks the runnable process with the largest wake
// budget: the process that asked for the most workers gets them first.
//   1. on a worker-less executor driven by hand (run_until_idle), three
//      tiled processes with budgets 2, 8 and 4 finish in the order 8, 4, 2;
//   2. on two worker threads, 16 tiled processes of mixed budgets plus a
//      chain of single-worker processes: every tile runs exactly once,
//      every process completes once, the chain runs in order.
// Every printed claim is checked; the program exits 1 if one fails.
//
// Build by hand: c++ -std=c++20 -I include examples/03_custom_scan_policy.cpp -pthread
#include <causal/executor.hpp>
#include <causal/process.hpp>
#include <causal/scan/scan_policy.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

namespace {

int failures = 0;

void expect(bool ok, const char* claim) {
  std::printf("    %s %s\n", ok ? "ok  " : "FAIL", claim);
  if (!ok) ++failures;
}

// [snippet:widest_first]
/// Picks the runnable slot with the largest wake budget; ties go to the
/// lowest index. Stateless, so it costs nothing in the executor.
struct widest_first {
  template <class View>
  std::size_t pick(const View& slots, causal::ext::scan_cursor&) const noexcept {
    std::size_t best = causal::ext::no_slot;
    std::uint32_t best_budget = 0;
    for (std::size_t i = 0; i < View::size(); ++i) {
      if (slots.runnable(i) && slots.budget(i) > best_budget) {
        best = i;
        best_budget = slots.budget(i);
      }
    }
    return best;
  }
};
static_assert(causal::scan_policy<widest_first>);

struct widest_traits : causal::default_executor_traits {
  using scan_policy = widest_first;
  static constexpr std::size_t compute_slots = 16;
};
using widest_executor = causal::basic_executor<widest_traits>;
// [/snippet]

/// A compute process with `tiles` units of work; each drain claims one.
struct tiled {
  int id = 0;
  int tiles = 0;
  std::atomic<int> next{0};
  std::atomic<int> finished{0};
  std::vector<std::atomic<int>> runs;
  std::array<std::atomic<int>, 8> per_worker{};
  std::atomic<int> completions{0};
  std::atomic<int>* finish_order = nullptr;
  int finished_as = -1;
  causal::process p;

  tiled(int id_, int tiles_, std::uint32_t budget, std::atomic<int>* order)
      : id(id_), tiles(tiles_), runs(static_cast<std::size_t>(tiles_)), finish_order(order) {
    p.set_user_data(this);
    p.set_wake_budget(budget);
    p.set_drain([](causal::process& self, causal::worker_context& ctx) noexcept {
      auto* t = static_cast<tiled*>(self.user_data());
      const int tile = t->next.fetch_add(1, std::memory_order_relaxed);
      if (tile >= t->tiles) return causal::drain_result::idle();  // others finish the rest
      t->runs[static_cast<std::size_t>(tile)].fetch_add(1, std::memory_order_relaxed);
      t->per_worker[ctx.worker_index() % 8].fetch_add(1, std::memory_order_relaxed);
      const bool last = t->finished.fetch_add(1, std::memory_order_acq_rel) + 1 == t->tiles;
      return last ? causal::drain_result::complete() : causal::drain_result::more();
    });
    p.set_completion([](causal::process& self, causal::status) noexcept {
      auto* t = static_cast<tiled*>(self.user_data());
      t->completions.fetch_add(1, std::memory_order_relaxed);
      if (t->finish_order != nullptr) t->finished_as = t->finish_order->fetch_add(1);
    });
  }

  bool every_tile_once() const {
    for (const auto& r : runs) {
      if (r.load() != 1) return false;
    }
    return true;
  }
};

void by_hand() {
  std::printf("1. one thread, driven by hand: the widest process is drained first\n");
  widest_executor ex(causal::executor_options{.worker_count = 0});
  std::atomic<int> order{0};
  tiled narrow(0, 5, 2, &order), wide(1, 5, 8, &order), middle(2, 5, 4, &order);
  ex.submit(narrow.p);
  ex.submit(wide.p);
  ex.submit(middle.p);
  std::printf("  slots occupied %u, aggregate budget %lld\n", ex.occupied_slots(),
              static_cast<long long>(ex.aggregate_budget()));
  ex.run_until_idle();
  std::printf("  finished: budget 8 as #%d, budget 4 as #%d, budget 2 as #%d\n", wide.finished_as,
              middle.finished_as, narrow.finished_as);
  expect(wide.finished_as == 0 && middle.finished_as == 1 && narrow.finished_as == 2,
         "processes finish in order of their wake budget: 8, 4, 2");
  expect(wide.every_tile_once() && middle.every_tile_once() && narrow.every_tile_once(),
         "every tile ran exactly once");
  expect(ex.occupied_slots() == 0 && ex.aggregate_budget() == 0, "all slots are free again");
}

void two_workers() {
  std::printf("2. two worker threads: 16 tiled processes and a 1000-long chain\n");
  widest_executor ex(causal::executor_options{.worker_count = 2});
  std::vector<std::unique_ptr<tiled>> computes;
  for (int i = 0; i < 16; ++i) {
    computes.push_back(std::make_unique<tiled>(i, 500, static_cast<std::uint32_t>(2 + i % 7), nullptr));
  }
  // A chain of single-worker processes; each checks it runs after the last.
  constexpr int chain_length = 1000;
  std::atomic<int> next_in_chain{0};
  std::atomic<int> out_of_order{0};
  std::atomic<int> chain_done{0};
  struct link {
    int index = 0;
    std::atomic<int>* next = nullptr;
    std::atomic<int>* out_of_order = nullptr;
    std::atomic<int>* done = nullptr;
    causal::process p;
  };
  std::vector<std::unique_ptr<link>> chain;
  std::vector<causal::process*> successor(chain_length);
  for (int i = 0; i < chain_length; ++i) {
    chain.push_back(std::make_unique<link>());
    link& l = *chain.back();
    l.index = i;
    l.next = &next_in_chain;
    l.out_of_order = &out_of_order;
    l.done = &chain_done;
    l.p.set_user_data(&l);
    l.p.set_drain([](causal::process& self, causal::worker_context&) noexcept {
      auto* me = static_cast<link*>(self.user_data());
      if (me->next->fetch_add(1) != me->index) me->out_of_order->fetch_add(1);
      return causal::drain_result::complete();
    });
    l.p.set_release([](causal::process& self) noexcept {
      static_cast<link*>(self.user_data())->done->fetch_add(1, std::memory_order_release);
    });
  }
  for (int i = 0; i + 1 < chain_length; ++i) {
    successor[static_cast<std::size_t>(i)] = &chain[static_cast<std::size_t>(i + 1)]->p;
    chain[static_cast<std::size_t>(i)]->p.set_dependents({&successor[static_cast<std::size_t>(i)], 1});
    chain[static_cast<std::size_t>(i + 1)]->p.suspend();
  }
  for (auto& t : computes) ex.submit(t->p);
  for (int i = chain_length - 1; i >= 0; --i) ex.submit(chain[static_cast<std::size_t>(i)]->p);

  // Wait for everything (the 20 s limit only keeps a broken build from
  // hanging; how busy the machine is does not matter).
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (;;) {
    bool all = chain_done.load(std::memory_order_acquire) == chain_length;
    for (auto& t : computes) all = all && t->completions.load() == 1;
    if (all || std::chrono::steady_clock::now() > give_up) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  bool tiles_once = true;
  bool completed_once = true;
  int worker_tiles[2] = {0, 0};
  for (auto& t : computes) {
    tiles_once = tiles_once && t->every_tile_once();
    completed_once = completed_once && t->completions.load() == 1;
    worker_tiles[0] += t->per_worker[0].load();
    worker_tiles[1] += t->per_worker[1].load();
  }
  std::printf("  tiles run by worker 0: %d, worker 1: %d (of %d)\n", worker_tiles[0], worker_tiles[1],
              16 * 500);
  expect(tiles_once, "every tile of every process ran exactly once");
  expect(completed_once, "every compute process completed exactly once");
  expect(chain_done.load() == chain_length && out_of_order.load() == 0,
         "the chain ran every link once, in order");
  // Let the last drainers leave their slots before the processes go away.
  const auto slots_give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (ex.occupied_slots() != 0 && std::chrono::steady_clock::now() < slots_give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  expect(ex.occupied_slots() == 0, "all slots are free again");
}

}  // namespace

int main() {
  by_hand();
  two_workers();
  std::printf("%s\n", failures == 0 ? "all claims hold" : "SOME CLAIMS FAILED");
  return failures == 0 ? 0 : 1;
}
