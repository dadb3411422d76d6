// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// executor_bench: the cost of causal::executor's scheduling paths (process
// activation, dependent hand-off, fork-join, wake, compute-slot scan), next
// to oneTBB (task_group, flow::graph) and a plain std::thread +
// std::condition_variable pool, in the same binary, with 2 workers.
//
// Why it matters. Every process runs because a wake() made it runnable:
// activation is on the path of every dependency, hand-off between dependent
// processes bounds how fine-grained work can be, and the compute-slot scan
// runs on every drain boundary. docs/executor.md;
// bench/README.md. Goals from the issue: activation <= 10 ns; chain and
// fork-join >= 2x faster per task than the best of oneTBB and the std pool.
//
// What runs. Names are `<op>/<case>/<impl>`:
//
//   chain/100k/<impl>        a chain of 100 000 dependent empty tasks, run
//                            again and again; counter ns_per_hop = time / hops
//     causal                   processes with set_auto_rearm(1): each re-arms
//                              as it completes, so a run is one wake of the
//                              head (the graph is reused, like the TBB flow
//                              graph's); 2 worker threads, the benchmark
//                              thread sleeps on a futex until the tail is done
//     causal_help              the same with 1 worker thread while the
//                              benchmark thread helps (executor::run_until),
//                              the way oneTBB's waiting thread joins in
//     tbb_flow                 continue_node chain, try_put + wait_for_all
//     tbb_task_group           each task runs the next with task_group::run
//     std_pool                 2 threads, one mutex + condvar FIFO; each task
//                              pushes the next
//   forkjoin/1000/<impl>     root -> 1000 leaves -> join, one fork-join per
//                            iteration, 1000 iterations; ns_per_leaf, and
//                            share_w0 / share_w1: the fraction of leaves each
//                            worker ran (a per-leaf figure counts only when
//                            both are >= 0.4, bench/README.md)
//     causal / causal_help (as for chain; every process re-arms itself) /
//     tbb_flow / tbb_task_group / std_pool (root pushes the 1000 leaves in
//     one locked batch; an atomic counter is the join)
//   forkjoin_1us/1000/<impl> the same with ~1 us of real work per leaf;
//                            counter efficiency = ideal time (leaves x work /
//                            2 workers) / measured time
//   activation/<impl>        making one suspended task runnable, amortised
//                            over batches of 1000 (draining them is paused)
//     causal                   process::wake() 1 -> 0 on an executor with no
//                              worker threads: one CAS, then a plain store
//                              into the benchmark thread's activation ring
//     causal_wake_all          the same 1000 wakes as one process::wake_all:
//                              one CAS each, the ring stores of up to 64
//                              published together
//     two_rmw_floor            the floor of a single activation through a
//                              shared list: a CAS loop on a state word
//                              inside a 192-byte item, then a CAS push onto
//                              one list head (no executor)
//     one_rmw_floor            the floor through an activation ring: the
//                              same CAS loop, then a plain store into a slot
//     tbb_task_group           task_group::run of an empty lambda (allocates)
//   pingpong/hot/causal      two processes wake each other (each suspends,
//                            wakes the other, sleeps); ns_per_wake = one-way
//   signal_to_drain/<spinning|parked>/causal
//                            semaphore signal -> timepoint wakes a process ->
//                            a worker drains it -> the benchmark thread sees
//                            its store: one round trip per iteration, with
//                            workers spinning or parked (spin budget 0)
//   signal_to_drain/spinning/two_cache_lines
//                            its baseline and floor: a spinning thread echoes
//                            a value from one cache line into another (two
//                            cross-core line transfers per round trip)
//   scan/<case>/<policy>     one pick() over a 64-slot view: `full` (all
//                            runnable), `last` (only slot 63 runnable: a full
//                            revolution), `empty` (a miss)
//
// Threads. "2 workers" means two threads doing the work: causal and the std
// pool run two worker threads while the benchmark thread sleeps on a futex
// (causal) or a condition variable (std pool) until the graph is done; oneTBB
// runs with max_allowed_parallelism 2, i.e. one worker thread plus the
// benchmark thread, which joins in wait_for_all()/wait(); causal_help does
// the same with one worker thread and run_until. The sleeping variants pay
// a futex wake of the benchmark thread (and often of a parked worker) per
// run: tens of microseconds across vCPUs here, which a fork-join of 1000
// empty leaves (~30 us of work) cannot hide. Multi-thread rows use real
// time.
//
// Honesty. Every task body writes to its own slot (not foldable); after each
// timed loop the benchmark checks that every task ran exactly as often as it
// should, in order for the chains, and reports SkipWithError otherwise
// (-DCAUSAL_BENCH_NO_CHECK turns the checks off). Clock reads (~18.5 ns on
// these VMs) are amortised over batches; PauseTiming is used only around
// batches of 1000 activations.
//
// What to look for. chain: causal's hop is two read-modify-writes (claim
// completion and re-arm, wake the dependent) and stays on one worker (the
// dependent is run next without a queue); the baselines pay a queue
// push/pop and often a cross-thread hand-off. forkjoin: the root's
// completion offers its 1000 leaves in chunks of Traits::immediate_batch
// (split fan-out), each worker wakes and runs the chunks it claims and
// coalesces its wakes of the join over a chunk. Look at the shares before
// comparing per-leaf numbers: a run where one worker did nearly everything
// measures a single thread. activation: with an activation ring a wake is
// one read-modify-write (compare with one_rmw_floor); through the shared
// list it is two (two_rmw_floor).
//
// Run: executor_bench --benchmark_repetitions=5
//        --benchmark_report_aggregates_only=true
// Build by hand: c++ -std=c++20 -O2 -DNDEBUG -I include bench/executor_bench.cpp
//        -lbenchmark -ltbb -pthread
#include <causal/executor.hpp>
#include <causal/ext/park_word.hpp>
#include <causal/process.hpp>
#include <causal/scan/budget_weighted.hpp>
#include <causal/scan/priority_ordered.hpp>
#include <causal/scan/round_robin.hpp>
#include <causal/semaphore.hpp>

#include <benchmark/benchmark.h>
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

namespace {

constexpr std::uint32_t workers = 2;
constexpr int chain_length = 100000;
constexpr int leaves = 1000;
constexpr int forkjoin_iterations = 1000;

#ifdef CAUSAL_BENCH_NO_CHECK
constexpr bool check = false;
#else
constexpr bool check = true;
#endif

/// Per-worker leaf counters, padded.
struct alignas(64) padded_count {
  std::atomic<std::uint64_t> n{0};
};
std::array<padded_count, 8> leaf_share{};

void reset_shares() {
  for (auto& s : leaf_share) s.n.store(0, std::memory_order_relaxed);
}

void report_shares(benchmark::State& state) {
  std::uint64_t total = 0;
  for (auto& s : leaf_share) total += s.n.load();
  if (total == 0) return;
  state.counters["share_w0"] = static_cast<double>(leaf_share[0].n.load()) / static_cast<double>(total);
  state.counters["share_w1"] = static_cast<double>(leaf_share[1].n.load()) / static_cast<double>(total);
}

/// ~1 us of work that cannot be folded; calibrated once.
volatile std::uint64_t work_sink = 0;
std::uint64_t work_rounds = 1000;
double work_ns = 1000.0;

CAUSAL_NOINLINE void leaf_work(std::uint64_t rounds) {
  std::uint64_t x = work_sink;
  for (std::uint64_t i = 0; i < rounds; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  work_sink = x;
}

void calibrate_work() {
  const auto t0 = std::chrono::steady_clock::now();
  constexpr std::uint64_t probe = 2'000'000;
  leaf_work(probe);
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  work_rounds = static_cast<std::uint64_t>(1000.0 * static_cast<double>(probe) / ns);
  if (work_rounds == 0) work_rounds = 1;
  const auto t1 = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i) leaf_work(work_rounds);
  work_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t1).count() / 1000.0;
}

/// A one-shot "done" the benchmark thread sleeps on (futex), so it does not
/// compete with the two workers for the two CPUs.
struct done_signal {
  causal::ext::park_word word{0};
  bool notify = true;  // false when the benchmark thread helps (run_until)
  std::uint32_t arm() const noexcept { return word.load(std::memory_order_acquire); }
  bool fired(std::uint32_t seen) const noexcept {
    return word.load(std::memory_order_acquire) != seen;
  }
  void fire() noexcept {
    word.fetch_add(1, std::memory_order_release);
    if (notify) word.notify_one();
  }
  void wait(std::uint32_t seen) const noexcept {
    while (word.load(std::memory_order_acquire) == seen) word.wait(seen, std::memory_order_acquire);
  }
};

//===-- the std::thread + condition_variable pool --------------------------------===//

class std_pool {
 public:
  struct task {
    void (*fn)(void*, int worker);
    void* arg;
  };

  explicit std_pool(int n) {
    for (int i = 0; i < n; ++i) threads_.emplace_back([this, i] { run(i); });
  }
  ~std_pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void push(task t) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(t);
    }
    cv_.notify_one();
  }
  void push_batch(const task* ts, std::size_t n) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (std::size_t i = 0; i < n; ++i) queue_.push_back(ts[i]);
    }
    cv_.notify_all();
  }

 private:
  void run(int index) {
    for (;;) {
      task t{};
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        t = queue_.front();
        queue_.pop_front();
      }
      t.fn(t.arg, index);
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<task> queue_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

/// The std pool's "done": the benchmark thread waits on a condvar.
struct cv_done {
  std::mutex m;
  std::condition_variable cv;
  std::uint64_t generation = 0;
  void fire() {
    {
      std::lock_guard<std::mutex> lock(m);
      ++generation;
    }
    cv.notify_one();
  }
  void wait(std::uint64_t seen) {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return generation != seen; });
  }
  std::uint64_t arm() {
    std::lock_guard<std::mutex> lock(m);
    return generation;
  }
};

//===-- chain ---------------------------------------------------------------===//

/// What every chain task does: bump its own counter, and check that its
/// predecessor already ran in this round.
struct chain_state {
  std::vector<std::uint64_t> hits = std::vector<std::uint64_t>(chain_length, 0);
  std::uint64_t order_errors = 0;
  void hop(int i) {
    const std::uint64_t h = ++hits[static_cast<std::size_t>(i)];
    if (check && i > 0 && hits[static_cast<std::size_t>(i - 1)] != h) ++order_errors;
  }
  bool verify(benchmark::State& state, std::uint64_t rounds) {
    if (!check) return true;
    for (std::uint64_t h : hits) {
      if (h != rounds) {
        state.SkipWithError("chain: a task ran the wrong number of times");
        return false;
      }
    }
    if (order_errors != 0) {
      state.SkipWithError("chain: a task ran before its predecessor");
      return false;
    }
    return true;
  }
};

void set_chain_counters(benchmark::State& state) {
  state.counters["ns_per_hop"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * chain_length,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

struct chain_node {
  chain_state* st;
  int index;
};

/// state.range(0): 0 = two worker threads, the benchmark thread sleeps;
/// 1 = one worker thread, the benchmark thread helps (run_until).
void bm_chain_causal(benchmark::State& state) {
  const bool help = state.range(0) != 0;
  chain_state st;
  done_signal done;
  done.notify = !help;
  static done_signal* tail_done = nullptr;
  tail_done = &done;
  std::vector<chain_node> nodes(chain_length);
  std::vector<causal::process> ps(chain_length);
  std::vector<causal::process*> next(chain_length);
  for (int i = 0; i < chain_length; ++i) {
    nodes[static_cast<std::size_t>(i)] = {&st, i};
    causal::process& p = ps[static_cast<std::size_t>(i)];
    p.set_user_data(&nodes[static_cast<std::size_t>(i)]);
    p.set_auto_rearm(1);  // reusable: re-armed as it completes
    p.set_drain([](causal::process& self, causal::worker_context&) noexcept {
      auto* n = static_cast<chain_node*>(self.user_data());
      n->st->hop(n->index);
      return causal::drain_result::complete();
    });
    if (i + 1 < chain_length) {
      next[static_cast<std::size_t>(i)] = &ps[static_cast<std::size_t>(i + 1)];
      p.set_dependents({&next[static_cast<std::size_t>(i)], 1});
    }
  }
  // The tail's completion fires `done`; by then every process of the chain
  // has re-armed itself (re-arming happens as completion is claimed).
  ps.back().set_completion([](causal::process&, causal::status) noexcept { tail_done->fire(); });
  // Declared last: destroyed (workers joined) before the processes.
  causal::executor ex(causal::executor_options{.worker_count = help ? workers - 1 : workers});
  const auto wait = [&](std::uint32_t seen) {
    if (help) {
      ex.run_until([&] { return done.fired(seen); });
    } else {
      done.wait(seen);
    }
  };
  // First run: submit everything (binds the processes to the executor).
  std::uint32_t seen = done.arm();
  for (int i = chain_length - 1; i >= 0; --i) {
    if (i > 0) ps[static_cast<std::size_t>(i)].suspend();
    ex.submit(ps[static_cast<std::size_t>(i)]);
  }
  wait(seen);
  std::uint64_t rounds = 1;
  for (auto _ : state) {
    seen = done.arm();
    (void)ps.front().wake();
    wait(seen);
    ++rounds;
  }
  st.verify(state, rounds);
  set_chain_counters(state);
  // Retire the reusable chain: cancel its head while the chain is idle;
  // the error cascades down the chain and nothing re-arms.
  (void)ps.front().cancel();
}

void bm_chain_tbb_flow(benchmark::State& state) {
  tbb::global_control gc(tbb::global_control::max_allowed_parallelism, workers);
  chain_state st;
  tbb::flow::graph g;
  std::vector<std::unique_ptr<tbb::flow::continue_node<tbb::flow::continue_msg>>> nodes;
  nodes.reserve(chain_length);
  for (int i = 0; i < chain_length; ++i) {
    nodes.push_back(std::make_unique<tbb::flow::continue_node<tbb::flow::continue_msg>>(
        g, [&st, i](const tbb::flow::continue_msg&) { st.hop(i); }));
    if (i > 0) tbb::flow::make_edge(*nodes[static_cast<std::size_t>(i - 1)], *nodes.back());
  }
  std::uint64_t rounds = 0;
  for (auto _ : state) {
    nodes.front()->try_put(tbb::flow::continue_msg());
    g.wait_for_all();
    ++rounds;
  }
  st.verify(state, rounds);
  set_chain_counters(state);
}

struct tbb_hop {
  chain_state* st;
  tbb::task_group* tg;
  int i;
  void operator()() const {
    st->hop(i);
    if (i + 1 < chain_length) tg->run(tbb_hop{st, tg, i + 1});
  }
};

void bm_chain_tbb_task_group(benchmark::State& state) {
  tbb::global_control gc(tbb::global_control::max_allowed_parallelism, workers);
  chain_state st;
  tbb::task_group tg;
  std::uint64_t rounds = 0;
  for (auto _ : state) {
    tg.run(tbb_hop{&st, &tg, 0});
    tg.wait();
    ++rounds;
  }
  st.verify(state, rounds);
  set_chain_counters(state);
}

struct std_chain {
  std_pool* pool;
  chain_state* st;
  cv_done* done;
  std::vector<int> indices;
  static void step(void* arg, int) {
    auto* index = static_cast<int*>(arg);
    std_chain* self = owner;
    self->st->hop(*index);
    if (*index + 1 < chain_length) {
      self->pool->push({&step, &self->indices[static_cast<std::size_t>(*index + 1)]});
    } else {
      self->done->fire();
    }
  }
  static std_chain* owner;
};
std_chain* std_chain::owner = nullptr;

void bm_chain_std_pool(benchmark::State& state) {
  std_pool pool(workers);
  chain_state st;
  cv_done done;
  std_chain c{&pool, &st, &done, std::vector<int>(chain_length)};
  for (int i = 0; i < chain_length; ++i) c.indices[static_cast<std::size_t>(i)] = i;
  std_chain::owner = &c;
  std::uint64_t rounds = 0;
  for (auto _ : state) {
    const std::uint64_t seen = done.arm();
    pool.push({&std_chain::step, &c.indices[0]});
    done.wait(seen);
    ++rounds;
  }
  st.verify(state, rounds);
  set_chain_counters(state);
}

//===-- fork-join -------------------------------------------------------------===//

/// Leaf bookkeeping: each leaf counts its own runs; shares are per worker.
struct forkjoin_state {
  std::vector<std::uint64_t> hits = std::vector<std::uint64_t>(leaves, 0);
  std::uint64_t rounds = 0;
  std::uint64_t rounds_work = 0;  // leaf work rounds (0: empty leaves)
  void leaf(int i, int worker) {
    ++hits[static_cast<std::size_t>(i)];
    if (rounds_work != 0) leaf_work(rounds_work);
    leaf_share[static_cast<std::size_t>(worker) & 7].n.fetch_add(1, std::memory_order_relaxed);
  }
  bool verify(benchmark::State& state) {
    if (!check) return true;
    for (std::uint64_t h : hits) {
      if (h != rounds) {
        state.SkipWithError("forkjoin: a leaf ran the wrong number of times");
        return false;
      }
    }
    return true;
  }
};

void set_forkjoin_counters(benchmark::State& state, const forkjoin_state& st) {
  state.counters["ns_per_leaf"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * leaves,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  if (st.rounds_work != 0) {
    // Ideal: leaves * work_ns / workers per fork-join.
    const double ideal_ns = static_cast<double>(leaves) * work_ns / workers;
    state.counters["efficiency"] = benchmark::Counter(
        ideal_ns * 1e-9 * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  }
  report_shares(state);
}

struct causal_leaf {
  forkjoin_state* st;
  int index;
};

/// state.range(0): leaf work (0 or ~1 us); state.range(1): 0 = two worker
/// threads and the benchmark thread sleeps, 1 = one worker thread and the
/// benchmark thread helps (run_until).
void bm_forkjoin_causal(benchmark::State& state) {
  forkjoin_state st;
  st.rounds_work = static_cast<std::uint64_t>(state.range(0)) != 0 ? work_rounds : 0;
  const bool help = state.range(1) != 0;
  done_signal done;
  done.notify = !help;
  static done_signal* join_done = nullptr;
  join_done = &done;
  std::vector<causal_leaf> data(leaves);
  std::vector<causal::process> leaf(leaves);
  std::vector<causal::process*> leaf_ptrs(leaves);
  causal::process root, join;
  causal::process* join_ptr = &join;
  root.set_drain([](causal::process&, causal::worker_context&) noexcept {
    return causal::drain_result::complete();
  });
  root.set_dependents(leaf_ptrs);
  join.set_drain([](causal::process&, causal::worker_context&) noexcept {
    return causal::drain_result::complete();
  });
  join.set_completion([](causal::process&, causal::status) noexcept { join_done->fire(); });
  // Reusable graph: each process re-arms itself as it completes.
  root.set_auto_rearm(1);
  join.set_auto_rearm(leaves);
  for (int i = 0; i < leaves; ++i) {
    data[static_cast<std::size_t>(i)] = {&st, i};
    causal::process& p = leaf[static_cast<std::size_t>(i)];
    leaf_ptrs[static_cast<std::size_t>(i)] = &p;
    p.set_auto_rearm(1);
    p.set_user_data(&data[static_cast<std::size_t>(i)]);
    p.set_drain([](causal::process& self, causal::worker_context& ctx) noexcept {
      auto* d = static_cast<causal_leaf*>(self.user_data());
      d->st->leaf(d->index, static_cast<int>(ctx.worker_index()));
      return causal::drain_result::complete();
    });
    p.set_dependents({&join_ptr, 1});
  }
  // Declared last: destroyed (workers joined) before the processes.
  causal::executor ex(causal::executor_options{.worker_count = help ? workers - 1 : workers});
  const auto wait = [&](std::uint32_t seen) {
    if (help) {
      ex.run_until([&] { return done.fired(seen); });
    } else {
      done.wait(seen);
    }
  };
  // First run binds everything.
  std::uint32_t seen = done.arm();
  join.suspend(leaves);
  ex.submit(join);
  for (auto& p : leaf) {
    p.suspend();
    ex.submit(p);
  }
  ex.submit(root);
  wait(seen);
  st.rounds = 1;
  reset_shares();
  for (auto _ : state) {
    seen = done.arm();
    (void)root.wake();
    wait(seen);
    ++st.rounds;
  }
  st.verify(state);
  set_forkjoin_counters(state, st);
  // Retire the reusable graph: cancel the root while the graph is idle;
  // the error cascades to the leaves and the join, and nothing re-arms.
  (void)root.cancel();
}

void bm_forkjoin_tbb_flow(benchmark::State& state) {
  tbb::global_control gc(tbb::global_control::max_allowed_parallelism, workers);
  forkjoin_state st;
  st.rounds_work = static_cast<std::uint64_t>(state.range(0)) != 0 ? work_rounds : 0;
  using node = tbb::flow::continue_node<tbb::flow::continue_msg>;
  tbb::flow::graph g;
  node root(g, [](const tbb::flow::continue_msg&) {});
  node join(g, [](const tbb::flow::continue_msg&) {});
  std::vector<std::unique_ptr<node>> nodes;
  nodes.reserve(leaves);
  for (int i = 0; i < leaves; ++i) {
    nodes.push_back(std::make_unique<node>(g, [&st, i](const tbb::flow::continue_msg&) {
      st.leaf(i, tbb::this_task_arena::current_thread_index());
    }));
    tbb::flow::make_edge(root, *nodes.back());
    tbb::flow::make_edge(*nodes.back(), join);
  }
  reset_shares();
  for (auto _ : state) {
    root.try_put(tbb::flow::continue_msg());
    g.wait_for_all();
    ++st.rounds;
  }
  st.verify(state);
  set_forkjoin_counters(state, st);
}

void bm_forkjoin_tbb_task_group(benchmark::State& state) {
  tbb::global_control gc(tbb::global_control::max_allowed_parallelism, workers);
  forkjoin_state st;
  st.rounds_work = static_cast<std::uint64_t>(state.range(0)) != 0 ? work_rounds : 0;
  tbb::task_group tg;
  reset_shares();
  for (auto _ : state) {
    tg.run([&] {
      for (int i = 0; i < leaves; ++i) {
        tg.run([&st, i] { st.leaf(i, tbb::this_task_arena::current_thread_index()); });
      }
    });
    tg.wait();  // the join
    ++st.rounds;
  }
  st.verify(state);
  set_forkjoin_counters(state, st);
}

struct std_forkjoin {
  std_pool* pool;
  forkjoin_state* st;
  cv_done* done;
  std::atomic<int> remaining{0};
  std::vector<int> indices = std::vector<int>(leaves);
  std::vector<std_pool::task> batch = std::vector<std_pool::task>(leaves);
  static std_forkjoin* owner;
  static void root(void*, int) {
    std_forkjoin* self = owner;
    self->remaining.store(leaves, std::memory_order_relaxed);
    self->pool->push_batch(self->batch.data(), self->batch.size());
  }
  static void leaf(void* arg, int worker) {
    std_forkjoin* self = owner;
    self->st->leaf(*static_cast<int*>(arg), worker);
    if (self->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) self->done->fire();  // join
  }
};
std_forkjoin* std_forkjoin::owner = nullptr;

void bm_forkjoin_std_pool(benchmark::State& state) {
  std_pool pool(workers);
  forkjoin_state st;
  st.rounds_work = static_cast<std::uint64_t>(state.range(0)) != 0 ? work_rounds : 0;
  cv_done done;
  std_forkjoin fj;
  fj.pool = &pool;
  fj.st = &st;
  fj.done = &done;
  for (int i = 0; i < leaves; ++i) {
    fj.indices[static_cast<std::size_t>(i)] = i;
    fj.batch[static_cast<std::size_t>(i)] = {&std_forkjoin::leaf, &fj.indices[static_cast<std::size_t>(i)]};
  }
  std_forkjoin::owner = &fj;
  reset_shares();
  for (auto _ : state) {
    const std::uint64_t seen = done.arm();
    pool.push({&std_forkjoin::root, nullptr});
    done.wait(seen);
    ++st.rounds;
  }
  st.verify(state);
  set_forkjoin_counters(state, st);
}

//===-- activation --------------------------------------------------------------===//

/// ns_per_activation: the timed time over the activations made.
void set_activation_counters(benchmark::State& state, int batch) {
  state.counters["ns_per_activation"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * batch,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

/// Runs batches of 1000 activations: suspended processes on an executor
/// without workers, each one wake away from runnable; `activate(entries)`
/// makes them all runnable and is the only timed part (draining and
/// re-arming them between batches is not).
template <class Activate>
void run_activation_batches(benchmark::State& state, Activate activate) {
  constexpr int batch = 1000;
  std::vector<causal::process> ps(batch);
  std::vector<causal::process*> entries;
  std::vector<std::uint64_t> hits(batch, 0);
  causal::executor ex(causal::executor_options{.worker_count = 0});
  for (int i = 0; i < batch; ++i) {
    causal::process& p = ps[static_cast<std::size_t>(i)];
    p.set_user_data(&hits[static_cast<std::size_t>(i)]);
    p.set_drain([](causal::process& self, causal::worker_context&) noexcept {
      ++*static_cast<std::uint64_t*>(self.user_data());
      return causal::drain_result::complete();
    });
    p.suspend();
    ex.submit(p);  // count 1: one wake away from runnable
    entries.push_back(&p);
  }
  std::uint64_t rounds = 0;
  for (auto _ : state) {
    activate(std::span<causal::process* const>(entries));
    state.PauseTiming();
    ex.run_until_idle();
    for (auto& p : ps) p.rearm(1);
    ++rounds;
    state.ResumeTiming();
  }
  if (check) {
    for (std::uint64_t h : hits) {
      if (h != rounds) {
        state.SkipWithError("activation: a process did not run once per activation");
        break;
      }
    }
  }
  set_activation_counters(state, batch);
}

void bm_activation_causal(benchmark::State& state) {
  run_activation_batches(state, [](std::span<causal::process* const> entries) {
    for (causal::process* p : entries) (void)p->wake();  // the activation: 1 -> 0, ring store
  });
}

void bm_activation_causal_wake_all(benchmark::State& state) {
  run_activation_batches(state, [&state](std::span<causal::process* const> entries) {
    // One CAS each, one ring publication per wake_all_batch.
    if (causal::process::wake_all(entries) != entries.size()) {
      state.SkipWithError("activation: wake_all ignored a wake");
    }
  });
}

/// What the activation floors below activate: a 192-byte item (the size of
/// a process) with its state word on its second cache line.
struct alignas(64) floor_item {
  void* immutable[8] = {};
  std::atomic<std::uint64_t> state{1};
  std::atomic<floor_item*> next{nullptr};
  char rest_of_line[48] = {};
  char third_line[64] = {};
};
static_assert(sizeof(floor_item) == 192);

/// The read-modify-write every activation pays: a CAS loop taking the
/// item's state word from 1 to 0.
void drop_suspension(floor_item& it) {
  std::uint64_t s = it.state.load(std::memory_order_relaxed);
  while (!it.state.compare_exchange_weak(s, s - 1, std::memory_order_seq_cst,
                                         std::memory_order_relaxed)) {
  }
}

/// The floor of a single activation from a thread that is not a worker:
/// what any design with a per-task state word and a shared MPSC list pays,
/// and nothing else: the state word's CAS loop, then a CAS push onto one
/// list head.
void bm_activation_two_rmw_floor(benchmark::State& state) {
  constexpr int batch = 1000;
  std::vector<floor_item> items(batch);
  std::atomic<floor_item*> head{nullptr};
  std::uint64_t popped = 0;
  for (auto _ : state) {
    for (floor_item& it : items) {
      drop_suspension(it);
      floor_item* h = head.load(std::memory_order_relaxed);
      do {
        it.next.store(h, std::memory_order_relaxed);
      } while (!head.compare_exchange_weak(h, &it, std::memory_order_seq_cst,
                                           std::memory_order_relaxed));
    }
    state.PauseTiming();
    for (floor_item* it = head.exchange(nullptr, std::memory_order_acquire); it != nullptr;) {
      floor_item* const next = it->next.load(std::memory_order_relaxed);
      it->state.store(1, std::memory_order_relaxed);
      ++popped;
      it = next;
    }
    state.ResumeTiming();
  }
  if (check && popped != static_cast<std::uint64_t>(state.iterations()) * batch) {
    state.SkipWithError("activation: the floor lost an item");
  }
  set_activation_counters(state, batch);
}

/// The floor of a single activation through an activation ring: the same
/// CAS loop on the state word, then a plain store of the item's address
/// into the next slot of a 1024-slot array (what a thread that owns a ring
/// pays; no executor, no publication barrier, no worker request).
void bm_activation_one_rmw_floor(benchmark::State& state) {
  constexpr int batch = 1000;
  std::vector<floor_item> items(batch);
  std::vector<std::atomic<std::uintptr_t>> ring(1024);
  std::uint64_t tail = 0;
  std::uint64_t popped = 0;
  for (auto _ : state) {
    const std::uint64_t first = tail;
    for (floor_item& it : items) {
      drop_suspension(it);
      ring[tail & 1023].store(reinterpret_cast<std::uintptr_t>(&it), std::memory_order_release);
      ++tail;
    }
    state.PauseTiming();
    for (std::uint64_t i = first; i != tail; ++i) {
      auto* it = reinterpret_cast<floor_item*>(ring[i & 1023].load(std::memory_order_acquire));
      it->state.store(1, std::memory_order_relaxed);
      ++popped;
    }
    state.ResumeTiming();
  }
  if (check && popped != static_cast<std::uint64_t>(state.iterations()) * batch) {
    state.SkipWithError("activation: the ring floor lost an item");
  }
  set_activation_counters(state, batch);
}

void bm_activation_tbb_task_group(benchmark::State& state) {
  constexpr int batch = 1000;
  tbb::global_control gc(tbb::global_control::max_allowed_parallelism, 1);
  tbb::task_group tg;
  std::vector<std::uint64_t> hits(batch, 0);
  std::uint64_t rounds = 0;
  for (auto _ : state) {
    for (int i = 0; i < batch; ++i) {
      tg.run([&hits, i] { ++hits[static_cast<std::size_t>(i)]; });
    }
    state.PauseTiming();
    tg.wait();
    ++rounds;
    state.ResumeTiming();
  }
  if (check) {
    for (std::uint64_t h : hits) {
      if (h != rounds) {
        state.SkipWithError("activation: a task did not run once");
        break;
      }
    }
  }
  set_activation_counters(state, batch);
}

//===-- ping-pong -----------------------------------------------------------------===//

struct pong {
  causal::process p;
  pong* other = nullptr;
  std::uint64_t count = 0;
  std::uint64_t limit = 0;
  done_signal* done = nullptr;
  std::atomic<bool>* stop = nullptr;
};

void bm_pingpong_causal(benchmark::State& state) {
  constexpr std::uint64_t wakes = 100000;  // one-way wakes per batch
  done_signal done;
  pong a, b;
  a.other = &b;
  b.other = &a;
  a.limit = ~std::uint64_t{0};  // a always wakes b; b ends each batch
  for (pong* x : {&a, &b}) {
    x->done = &done;
    x->p.set_user_data(x);
    x->p.set_drain([](causal::process& self, causal::worker_context&) noexcept {
      auto* me = static_cast<pong*>(self.user_data());
      ++me->count;
      self.suspend();  // before waking the other: it may wake us at once
      if (me->count == me->limit) {
        me->done->fire();  // asleep until the next batch
      } else {
        (void)me->other->p.wake();
      }
      return causal::drain_result::sleep();
    });
  }
  a.p.suspend();
  b.p.suspend();
  // Declared last: destroyed (workers joined) before the processes.
  causal::executor ex(causal::executor_options{.worker_count = workers});
  ex.submit(a.p);
  ex.submit(b.p);
  std::uint64_t batches = 0;
  for (auto _ : state) {
    // Both asleep. main -> a -> b -> a ... -> b: `wakes` one-way wakes.
    b.limit = b.count + wakes / 2;
    const std::uint32_t seen = done.arm();
    (void)a.p.wake();
    done.wait(seen);
    ++batches;
    while (b.p.is_active()) {  // until b has gone back to sleep
    }
  }
  if (check && (a.count != batches * (wakes / 2) || b.count != batches * (wakes / 2))) {
    state.SkipWithError("pingpong: wrong number of drains");
  }
  state.counters["ns_per_wake"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * static_cast<double>(wakes),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  (void)a.p.cancel();  // both asleep: resolved inline
  (void)b.p.cancel();
}

//===-- signal -> dependent drain -------------------------------------------------===//

// A process asleep on a semaphore timepoint; the benchmark thread signals
// the semaphore, the timepoint (run inline by signal()) wakes the process,
// a worker drains it, and the drain publishes the value it was woken for,
// which the benchmark thread spins on. One iteration is that round trip:
// an upper bound on signal -> dependent drain (it adds the drain's store
// reaching the benchmark thread's core). Arg 0: workers spin before
// parking (the default spin budget); arg 1: spin budget 0, so the worker is
// parked and the wake includes a futex wake.
struct signal_drain_state {
  causal::semaphore sem;
  causal::semaphore_timepoint tp;
  causal::process p;
  std::atomic<std::uint64_t> seen{0};
  std::uint64_t next = 1;

  static void on_reached(causal::semaphore_timepoint& node, causal::status) noexcept {
    static_cast<signal_drain_state*>(node.user_data())->p.wake();
  }
  void arm() noexcept {
    tp.reset(next, &on_reached, this);
    sem.add_timepoint(tp);
  }
};

void bm_signal_to_drain(benchmark::State& state) {
  const bool parked = state.range(0) != 0;
  signal_drain_state st;
  st.p.set_user_data(&st);
  st.p.set_drain([](causal::process& self, causal::worker_context&) noexcept {
    auto* me = static_cast<signal_drain_state*>(self.user_data());
    me->seen.store(me->next, std::memory_order_release);
    ++me->next;
    self.suspend();  // before arming: the timepoint may fire at once
    me->arm();
    return causal::drain_result::sleep();
  });
  st.p.suspend();
  causal::executor ex(causal::executor_options{
      .worker_count = workers,
      .spin_budget = parked ? 0u : causal::executor_options::traits_spin_budget});
  ex.submit(st.p);
  st.arm();
  std::uint64_t v = 0;
  for (auto _ : state) {
    ++v;
    if (parked) {
      // Let the worker park, as it would between bursts of work.
      while (ex.parked_workers() != workers) std::this_thread::yield();
    }
    (void)st.sem.signal(v);
    while (st.seen.load(std::memory_order_acquire) != v) {
    }
  }
  (void)st.tp.cancel();
  (void)st.p.cancel();  // asleep: resolved inline
}

/// The floor under signal_to_drain on this machine: the same round trip
/// with nothing but two cache lines, a spinning thread that echoes the
/// value it sees in one line into the other (two cross-core line
/// transfers per iteration). The benchmark thread plays the signaller.
void bm_signal_to_drain_floor(benchmark::State& state) {
  struct alignas(64) line {
    std::atomic<std::uint64_t> value{0};
  };
  line request, reply;
  std::atomic<bool> stop{false};
  std::thread echo([&] {
    std::uint64_t last = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      const std::uint64_t v = request.value.load(std::memory_order_acquire);
      if (v != last) {
        reply.value.store(v, std::memory_order_release);
        last = v;
      }
    }
  });
  std::uint64_t v = 0;
  for (auto _ : state) {
    ++v;
    request.value.store(v, std::memory_order_release);
    while (reply.value.load(std::memory_order_acquire) != v) {
    }
  }
  stop.store(true, std::memory_order_relaxed);
  echo.join();
}

//===-- scan ----------------------------------------------------------------------===//

struct fake_slots {
  std::array<std::atomic<std::uint64_t>, 64> words{};
  std::array<std::atomic<std::uint32_t>, 64> meta{};
  alignas(64) std::array<char, 64 * 64> fake_processes{};
  void fill(bool all) {
    for (std::size_t i = 0; i < 64; ++i) {
      const bool on = all || i == 63;
      words[i].store(on ? causal::ext::make_slot_word(&fake_processes[i * 64]) : 0);
      meta[i].store(causal::ext::make_slot_meta(static_cast<std::uint32_t>(1 + i % 8),
                                                static_cast<std::uint8_t>(i % 5)));
    }
  }
  void clear() {
    for (auto& w : words) w.store(0);
  }
};

template <class Policy>
void bm_scan(benchmark::State& state) {
  fake_slots s;
  const int mode = static_cast<int>(state.range(0));  // 0 full, 1 last, 2 empty
  if (mode == 2) {
    s.clear();
  } else {
    s.fill(mode == 0);
  }
  const causal::ext::slot_view<64> view(s.words.data(), s.meta.data());
  causal::ext::scan_cursor cursor;
  const Policy policy;
  std::size_t sum = 0;
  for (auto _ : state) {
    const std::size_t i = policy.pick(view, cursor);
    sum += i;
    benchmark::DoNotOptimize(sum);
  }
  if (check) {
    causal::ext::scan_cursor c2;
    const std::size_t i = policy.pick(view, c2);
    const bool ok = mode == 2 ? i == causal::ext::no_slot : (i < 64 && view.runnable(i));
    if (!ok) state.SkipWithError("scan: picked a slot that is not runnable");
  }
}

}  // namespace

BENCHMARK(bm_chain_causal)->Name("chain/100k/causal")->Arg(0)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(bm_chain_causal)->Name("chain/100k/causal_help")->Arg(1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(bm_chain_tbb_flow)->Name("chain/100k/tbb_flow")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(bm_chain_tbb_task_group)->Name("chain/100k/tbb_task_group")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(bm_chain_std_pool)->Name("chain/100k/std_pool")->UseRealTime()->Unit(benchmark::kMillisecond);

BENCHMARK(bm_forkjoin_causal)->Name("forkjoin/1000/causal")->Args({0, 0})->Iterations(forkjoin_iterations)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_forkjoin_causal)->Name("forkjoin/1000/causal_help")->Args({0, 1})->Iterations(forkjoin_iterations)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_forkjoin_tbb_flow)->Name("forkjoin/1000/tbb_flow")->Arg(0)->Iterations(forkjoin_iterations)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_forkjoin_tbb_task_group)->Name("forkjoin/1000/tbb_task_group")->Arg(0)->Iterations(forkjoin_iterations)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_forkjoin_std_pool)->Name("forkjoin/1000/std_pool")->Arg(0)->Iterations(forkjoin_iterations)->UseRealTime()->Unit(benchmark::kMicrosecond);

BENCHMARK(bm_forkjoin_causal)->Name("forkjoin_1us/1000/causal")->Args({1, 0})->Iterations(200)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_forkjoin_causal)->Name("forkjoin_1us/1000/causal_help")->Args({1, 1})->Iterations(200)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_forkjoin_tbb_flow)->Name("forkjoin_1us/1000/tbb_flow")->Arg(1)->Iterations(200)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_forkjoin_tbb_task_group)->Name("forkjoin_1us/1000/tbb_task_group")->Arg(1)->Iterations(200)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_forkjoin_std_pool)->Name("forkjoin_1us/1000/std_pool")->Arg(1)->Iterations(200)->UseRealTime()->Unit(benchmark::kMicrosecond);

BENCHMARK(bm_activation_causal)->Name("activation/causal")->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_activation_causal_wake_all)->Name("activation/causal_wake_all")->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_activation_two_rmw_floor)->Name("activation/two_rmw_floor")->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_activation_one_rmw_floor)->Name("activation/one_rmw_floor")->Unit(benchmark::kMicrosecond);
BENCHMARK(bm_activation_tbb_task_group)->Name("activation/tbb_task_group")->Unit(benchmark::kMicrosecond);

BENCHMARK(bm_pingpong_causal)->Name("pingpong/hot/causal")->UseRealTime()->Unit(benchmark::kMillisecond);

BENCHMARK(bm_signal_to_drain)->Name("signal_to_drain/spinning/causal")->Arg(0)->UseRealTime()->Unit(benchmark::kNanosecond);
BENCHMARK(bm_signal_to_drain)->Name("signal_to_drain/parked/causal")->Arg(1)->UseRealTime()->Unit(benchmark::kNanosecond);
BENCHMARK(bm_signal_to_drain_floor)->Name("signal_to_drain/spinning/two_cache_lines")->UseRealTime()->Unit(benchmark::kNanosecond);

BENCHMARK_TEMPLATE(bm_scan, causal::scan::round_robin)->Name("scan/full/round_robin")->Arg(0);
BENCHMARK_TEMPLATE(bm_scan, causal::scan::priority_ordered)->Name("scan/full/priority_ordered")->Arg(0);
BENCHMARK_TEMPLATE(bm_scan, causal::scan::budget_weighted)->Name("scan/full/budget_weighted")->Arg(0);
BENCHMARK_TEMPLATE(bm_scan, causal::scan::round_robin)->Name("scan/last/round_robin")->Arg(1);
BENCHMARK_TEMPLATE(bm_scan, causal::scan::priority_ordered)->Name("scan/last/priority_ordered")->Arg(1);
BENCHMARK_TEMPLATE(bm_scan, causal::scan::budget_weighted)->Name("scan/last/budget_weighted")->Arg(1);
BENCHMARK_TEMPLATE(bm_scan, causal::scan::round_robin)->Name("scan/empty/round_robin")->Arg(2);
BENCHMARK_TEMPLATE(bm_scan, causal::scan::priority_ordered)->Name("scan/empty/priority_ordered")->Arg(2);
BENCHMARK_TEMPLATE(bm_scan, causal::scan::budget_weighted)->Name("scan/empty/budget_weighted")->Arg(2);

int main(int argc, char** argv) {
  calibrate_work();
  std::printf("executor_bench: %u workers; leaf work %llu rounds = %.0f ns\n", workers,
              static_cast<unsigned long long>(work_rounds), work_ns);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
