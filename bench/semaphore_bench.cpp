// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// semaphore_bench: the cost of causal::semaphore's hot paths (signal,
// timepoint dispatch, try_wait, frontier_at, host wake-up), next to the
// primitives a runtime would otherwise use, in the same binary.
//
// Why it matters. Every queue submission signals a semaphore and every
// dependency waits on one: `signal` (no waiter, or one timepoint to fire)
// and `try_wait` run once per operation, `frontier_at` once per wait that
// imports knowledge, and a host wake-up sits on the critical path of every
// CPU<->CPU hand-off. docs/semaphores.md; bench/README.md.
//
// What runs. Names are `<op>/<case>/<impl>`; impls registered back to back:
//
//   op/case               what one iteration does
//   signal/plain          signal(v + 1), nobody waiting
//     ours                  causal::semaphore::signal(v) (no frontier)
//     ours_frontier4        signal(v, f) with a 4-entry frontier recorded
//     atomic                std::atomic<uint64_t>::store(v, release)
//     atomic_notify         the store + std::atomic::notify_all() (C++20)
//     event                 "binary event": lock a std::mutex, set a bool,
//                           unlock, condition_variable::notify_all()
//   signal/dispatch1      register one timepoint, then signal the value
//                         that fires it (callback bumps a counter)
//     ours                  semaphore_timepoint re-armed each iteration
//     event                 the event above with a mutex-guarded callback
//                           array (register under the lock; signal takes
//                           the list under the lock, runs it after)
//   try_wait/reached      is v reached? (yes)
//     ours / atomic / event (load; load; lock + read + unlock)
//   frontier_at/reached   what does a waiter on v import? (v in the ring)
//     ours                  frontier_at(v): spin lock + ring scan + copy
//     map                   std::mutex + std::map<value, frontier> history,
//                           lower_bound + copy (a naive history)
//   wait/reached          a host wait on a reached value
//     ours / condvar        wait(v); lock + condition_variable::wait(pred)
//   submit_ahead/<depth>  one pipeline of `depth` submitted signals, each
//                         with a 4-entry frontier, announced before any is
//                         reached (submit_signal 1..depth), then reached in
//                         order (signal(v)); reported per signal
//     grows                 the default semaphore (8 records inline, then
//                           heap storage that doubles and is kept): after
//                           the first iteration it never allocates
//     grows_fresh           a new default semaphore every iteration, so
//                           every doubling is paid each time (the cost of
//                           growth itself)
//     bounded               pending_bounded with room for the whole depth
//                           (a fixed table, never allocates)
//     map                   std::mutex + std::map<value, frontier>: insert
//                           each announcement, erase it when reached
//   pingpong/<mode>       round trip between two threads, amortised over the
//                         run (one clock read per batch): A signals i, B
//                         waits for i and signals back, A waits. One-way
//                         latency is about half of it. Threads are pinned:
//                         `cross` = A and B on two different CPUs, `same` =
//                         both on one CPU (what a wake-affine scheduler
//                         often does with a parked partner).
//     hot/ours              cross; waits poll up to 2^16 times before
//                           parking, so with both running they never park
//     hot/atomic            floor: a std::atomic store + pause-spin loop
//                           (same poll budget, then yields)
//     default/ours          cross; the default spin (default_spin polls),
//                           then park
//     spin512/ours,         the same with 512 and 2048 polls: how long a
//     spin2048/ours         spin the hand-off needs before parking stops
//                           costing (input for tuning default_spin)
//     parked_cross/ours     spin = 0: every wait parks on the futex word
//     parked_cross/condvar  std::mutex + std::condition_variable per side
//     parked_cross/atomic_wait  C++20 std::atomic<uint64_t>::wait/notify_one
//                           (libstdc++ spins and yields before its futex,
//                           so it is not a pure parked baseline)
//     parked_same/...       the same three with both threads on one CPU
//   wake/cold_<cross|same> one-way wake of a thread parked >= 5 ms: A sleeps
//                         5 ms, stamps t0, signals; B stamps t1 on waking.
//                         Manual time t1 - t0 per iteration (two clock
//                         reads: ~20 ns resolution, far below the result).
//     ours / condvar
//
// Honesty. Inputs come from volatile seeds; results go through
// benchmark::DoNotOptimize. Before timing, main() checks each impl once
// (frontier_at agrees with the map history, ping-pong channels deliver
// in order, dispatch fires exactly once per registration); after each
// timed loop the benchmark re-checks its end state and reports an error
// (SkipWithError) on a mismatch. Two-thread cases use real time. On these
// 2-vCPU VMs a cross-vCPU wake from a kernel sleep costs tens of
// microseconds, on one vCPU about two (bench/README.md); pinning and the
// `hot` / `default` / `parked_*` / `cold_*` rows separate those regimes
// instead of mixing them into one bimodal figure.
//
// What to look for. signal/plain/ours pays for a spin lock, a record
// (value, ~200-byte frontier, producer) copied into the history ring and a
// seq_cst payload store: tens of ns, more than the mutex event, which
// records nothing a waiter could import; the ratio should stay below ~2.
// try_wait and a wait on a reached value should stay within ~1 ns (two
// loads) against tens of ns for anything taking a mutex. pingpong/hot/ours
// should sit within ~1.5x of the atomic floor (the extra cache-line
// transfers of the lock and the record). Parked rows are dominated by the
// kernel wake and should match condvar; compare `default` with `spin512`
// and `spin2048` to see whether default_spin is long enough for a
// cross-CPU hand-off on this machine.
//
// Run (release build, from the repository root):
//   meson setup build-bench -Dbenchmarks=enabled --buildtype=release
//   meson compile -C build-bench
//   build-bench/bench/semaphore_bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
// or without meson, one line:
//   g++ -std=c++20 -O2 -DNDEBUG -Iinclude bench/semaphore_bench.cpp -lbenchmark -lpthread
// See also: bench/frontier_bench.cpp, bench/RESULTS.md, <causal/semaphore.hpp>.

#include <causal/axis.hpp>
#include <causal/frontier.hpp>
#include <causal/semaphore.hpp>

#include <benchmark/benchmark.h>

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

using causal::frontier;
using causal::semaphore;
using causal::semaphore_timepoint;
using causal::status;
using clock_type = std::chrono::steady_clock;

//===-- inputs --------------------------------------------------------------===//

// Read at run time, so the compiler cannot know any value or axis.
volatile std::uint64_t ordinal_seed = 1000;
volatile std::uint64_t value_seed = 1;

causal::axis axis_at(std::uint64_t j) {
  return causal::make_axis(0, 0, causal::domain::queue, ordinal_seed + j).value();
}

/// A 4-entry frontier whose epochs depend on `v`.
frontier frontier_of(std::uint64_t v) {
  return frontier{{axis_at(0), v}, {axis_at(1), v + 1}, {axis_at(2), v + 2}, {axis_at(3), v + 3}};
}

double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }
double max_of(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }

//===-- baselines -----------------------------------------------------------===//

/// The "binary event" a runtime without timelines would use: a flag under a
/// mutex, waiters on a condition variable, plus (for dispatch1) a fixed
/// array of registered callbacks.
struct binary_event {
  using callback = void (*)(void*);
  std::mutex mutex;
  std::condition_variable cv;
  bool flag = false;
  std::uint64_t generation = 0;
  std::array<std::pair<callback, void*>, 8> callbacks{};
  std::size_t callback_count = 0;

  void set() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      flag = true;
      ++generation;
    }
    cv.notify_all();
  }
  void on_set(callback cb, void* arg) {
    std::lock_guard<std::mutex> lock(mutex);
    callbacks[callback_count++] = {cb, arg};
  }
  /// Sets the flag and runs (outside the lock) what was registered.
  void set_and_dispatch() {
    std::array<std::pair<callback, void*>, 8> due;
    std::size_t n = 0;
    {
      std::lock_guard<std::mutex> lock(mutex);
      flag = true;
      ++generation;
      n = callback_count;
      std::copy_n(callbacks.begin(), n, due.begin());
      callback_count = 0;
    }
    cv.notify_all();
    for (std::size_t i = 0; i < n; ++i) due[i].first(due[i].second);
  }
  bool is_set() {
    std::lock_guard<std::mutex> lock(mutex);
    return flag;
  }
};

/// A naive history: every (value, frontier) under a mutex.
struct map_history {
  std::mutex mutex;
  std::map<std::uint64_t, frontier> records;

  void record(std::uint64_t v, const frontier& f) {
    std::lock_guard<std::mutex> lock(mutex);
    records.emplace(v, f);
  }
  std::optional<frontier> at(std::uint64_t v) {
    std::lock_guard<std::mutex> lock(mutex);
    const auto it = records.lower_bound(v);
    if (it == records.end()) return std::nullopt;
    return it->second;
  }
};

//===-- submit-ahead --------------------------------------------------------===//

/// The deepest submit_ahead row: a bounded semaphore sized for it.
constexpr std::size_t deepest_pipeline = 16384;
using bounded_semaphore =
    causal::basic_semaphore<frontier, 4, deepest_pipeline, causal::pending_bounded>;

/// Announces 1..depth on `s`, then reaches them in order; false on any
/// refusal or a wrong end state.
template <class Semaphore>
bool run_pipeline(Semaphore& s, std::uint64_t base, std::size_t depth, const frontier& f) {
  bool ok = true;
  for (std::uint64_t i = 1; i <= depth; ++i) ok = s.submit_signal(base + i, f).ok() && ok;
  for (std::uint64_t i = 1; i <= depth; ++i) ok = s.signal(base + i).ok() && ok;
  return ok && s.value() == base + depth && s.pending_count() == 0;
}

template <class Semaphore>
void bm_submit_ahead_kept(benchmark::State& st) {
  const auto depth = static_cast<std::size_t>(st.range(0));
  auto s = std::make_unique<Semaphore>();
  const frontier f = frontier_of(value_seed);
  std::uint64_t base = 0;
  bool ok = true;
  for (auto _ : st) {
    ok = run_pipeline(*s, base, depth, f) && ok;
    base += depth;
  }
  if (!ok) st.SkipWithError("submit_ahead: a signal was refused or the end state is wrong");
  st.SetItemsProcessed(st.iterations() * static_cast<std::int64_t>(depth));
}

void bm_submit_ahead_fresh(benchmark::State& st) {
  const auto depth = static_cast<std::size_t>(st.range(0));
  const frontier f = frontier_of(value_seed);
  bool ok = true;
  for (auto _ : st) {
    semaphore s;
    ok = run_pipeline(s, 0, depth, f) && ok;
  }
  if (!ok) st.SkipWithError("submit_ahead/grows_fresh: a signal was refused");
  st.SetItemsProcessed(st.iterations() * static_cast<std::int64_t>(depth));
}

void bm_submit_ahead_map(benchmark::State& st) {
  const auto depth = static_cast<std::size_t>(st.range(0));
  const frontier f = frontier_of(value_seed);
  auto h = std::make_unique<map_history>();
  std::uint64_t base = 0;
  for (auto _ : st) {
    for (std::uint64_t i = 1; i <= depth; ++i) h->record(base + i, f);
    for (std::uint64_t i = 1; i <= depth; ++i) {
      std::lock_guard<std::mutex> lock(h->mutex);
      h->records.erase(base + i);
    }
    base += depth;
  }
  if (!h->records.empty()) st.SkipWithError("submit_ahead/map: records left");
  st.SetItemsProcessed(st.iterations() * static_cast<std::int64_t>(depth));
}

//===-- thread placement ----------------------------------------------------===//

/// Where the two threads of a two-thread case run. Pinned, so that each
/// row measures one regime instead of a mix (a kernel wake lands on the
/// waker's vCPU or the other one, and the two cost very different amounts
/// on these VMs; bench/README.md).
enum class placement { cross, same };

/// The CPUs this process may run on, in order.
std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

/// Pins the calling thread to `cpu`; returns false if that failed.
bool pin_self(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return ::pthread_setaffinity_np(::pthread_self(), sizeof(set), &set) == 0;
}

/// Pins the calling (benchmark) thread for its lifetime, then restores it.
class scoped_pin {
 public:
  explicit scoped_pin(int cpu) {
    CPU_ZERO(&saved_);
    saved_ok_ = ::pthread_getaffinity_np(::pthread_self(), sizeof(saved_), &saved_) == 0;
    ok_ = pin_self(cpu);
  }
  scoped_pin(const scoped_pin&) = delete;
  scoped_pin& operator=(const scoped_pin&) = delete;
  ~scoped_pin() {
    if (saved_ok_) ::pthread_setaffinity_np(::pthread_self(), sizeof(saved_), &saved_);
  }
  [[nodiscard]] bool ok() const { return ok_; }

 private:
  cpu_set_t saved_;
  bool saved_ok_ = false;
  bool ok_ = false;
};

/// The CPUs of thread A (the benchmark thread) and B for `where`, or
/// nothing when the machine cannot provide them.
std::optional<std::pair<int, int>> cpus_for(placement where) {
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.empty()) return std::nullopt;
  if (where == placement::same) return std::pair{cpus[0], cpus[0]};
  if (cpus.size() < 2) return std::nullopt;
  return std::pair{cpus[0], cpus[1]};
}

//===-- ping-pong channels --------------------------------------------------===//
// A channel carries "value i is ready" one way: signal(i), wait(i).

template <unsigned Spin>
struct ours_channel {
  semaphore s;
  void signal(std::uint64_t i) { (void)s.signal(i); }
  bool wait(std::uint64_t i) { return s.wait_until(i, semaphore::clock::time_point::max(), Spin).ok(); }
  std::uint64_t value() const { return s.value(); }
};
/// Polls before a "hot" wait parks: ~1-3 ms of polling, far longer than a
/// running partner takes to answer, so a hot round trip never parks while
/// both threads have a vCPU; if the partner is descheduled (more runnable
/// threads than vCPUs) the waiter parks instead of burning its slice.
constexpr unsigned hot_spin = 1u << 16;
using ours_hot = ours_channel<hot_spin>;
using ours_default = ours_channel<semaphore::default_spin>;
using ours_parked = ours_channel<0>;

struct atomic_spin_channel {
  alignas(64) std::atomic<std::uint64_t> a{0};
  void signal(std::uint64_t i) { a.store(i, std::memory_order_release); }
  bool wait(std::uint64_t i) {
    // Same budget as ours_hot, then yield rather than park (no park here).
    for (unsigned spins = 0; a.load(std::memory_order_acquire) < i; ++spins) {
      if (spins < hot_spin) {
        causal::detail::cpu_relax();
      } else {
        std::this_thread::yield();
      }
    }
    return true;
  }
  std::uint64_t value() const { return a.load(); }
};

struct atomic_wait_channel {
  alignas(64) std::atomic<std::uint64_t> a{0};
  void signal(std::uint64_t i) {
    a.store(i, std::memory_order_release);
    a.notify_one();
  }
  bool wait(std::uint64_t i) {
    for (std::uint64_t seen; (seen = a.load(std::memory_order_acquire)) < i;) a.wait(seen);
    return true;
  }
  std::uint64_t value() const { return a.load(); }
};

struct condvar_channel {
  mutable std::mutex m;
  std::condition_variable cv;
  std::uint64_t v = 0;
  void signal(std::uint64_t i) {
    {
      std::lock_guard<std::mutex> lock(m);
      v = i;
    }
    cv.notify_one();
  }
  bool wait(std::uint64_t i) {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return v >= i; });
    return true;
  }
  std::uint64_t value() const {
    std::lock_guard<std::mutex> lock(m);
    return v;
  }
};

/// Two channels and the partner thread B that answers A's pings.
template <class Channel>
struct pingpong_pair {
  Channel ping, pong;
  std::atomic<std::int64_t> stamp_ns{0};  // B's wake time (wake/cold)
  std::atomic<bool> ok{true};
  std::thread partner;

  /// B: for i = 1..n: wait ping >= i, (stamp), signal pong i. Pinned to
  /// `cpu` when it is not negative.
  void start(std::uint64_t n, bool stamp, int cpu = -1) {
    partner = std::thread([this, n, stamp, cpu] {
      if (cpu >= 0 && !pin_self(cpu)) ok.store(false);
      for (std::uint64_t i = 1; i <= n; ++i) {
        if (!ping.wait(i)) ok.store(false);
        if (stamp) {
          stamp_ns.store(std::chrono::duration_cast<std::chrono::nanoseconds>(
                             clock_type::now().time_since_epoch())
                             .count(),
                         std::memory_order_release);
        }
        pong.signal(i);
      }
    });
  }
  void join() { partner.join(); }
};

//===-- benchmark bodies ----------------------------------------------------===//

void bm_signal_ours(benchmark::State& st) {
  auto s = std::make_unique<semaphore>();
  std::uint64_t v = value_seed;
  for (auto _ : st) {
    status r = s->signal(++v);
    benchmark::DoNotOptimize(r);
  }
  if (s->value() != v) st.SkipWithError("signal/ours: payload is not the last value");
}

void bm_signal_ours_frontier4(benchmark::State& st) {
  auto s = std::make_unique<semaphore>();
  const frontier f = frontier_of(value_seed);
  std::uint64_t v = value_seed;
  for (auto _ : st) {
    status r = s->signal(++v, f);
    benchmark::DoNotOptimize(r);
  }
  const auto at = s->frontier_at(v);
  if (!at || at->frontier != f) st.SkipWithError("signal/ours_frontier4: frontier not recorded");
}

void bm_signal_atomic(benchmark::State& st) {
  std::atomic<std::uint64_t> a{0};
  std::uint64_t v = value_seed;
  for (auto _ : st) {
    a.store(++v, std::memory_order_release);
    benchmark::ClobberMemory();
  }
  if (a.load() != v) st.SkipWithError("signal/atomic: wrong value");
}

void bm_signal_atomic_notify(benchmark::State& st) {
  std::atomic<std::uint64_t> a{0};
  std::uint64_t v = value_seed;
  for (auto _ : st) {
    a.store(++v, std::memory_order_release);
    a.notify_all();
    benchmark::ClobberMemory();
  }
  if (a.load() != v) st.SkipWithError("signal/atomic_notify: wrong value");
}

void bm_signal_event(benchmark::State& st) {
  auto e = std::make_unique<binary_event>();
  for (auto _ : st) {
    e->set();
    benchmark::ClobberMemory();
  }
  if (e->generation != static_cast<std::uint64_t>(st.iterations())) {
    st.SkipWithError("signal/event: wrong generation");
  }
}

void count_fire(semaphore_timepoint& tp, status s) noexcept {
  if (s) ++*static_cast<std::uint64_t*>(tp.user_data());
}

void bm_dispatch1_ours(benchmark::State& st) {
  auto s = std::make_unique<semaphore>();
  semaphore_timepoint tp;
  std::uint64_t fired = 0;
  std::uint64_t v = value_seed;
  for (auto _ : st) {
    tp.reset(v + 1, &count_fire, &fired);
    s->add_timepoint(tp);
    status r = s->signal(++v);
    benchmark::DoNotOptimize(r);
  }
  if (fired != static_cast<std::uint64_t>(st.iterations())) {
    st.SkipWithError("signal/dispatch1/ours: not exactly one fire per iteration");
  }
}

void count_event(void* arg) { ++*static_cast<std::uint64_t*>(arg); }

void bm_dispatch1_event(benchmark::State& st) {
  auto e = std::make_unique<binary_event>();
  std::uint64_t fired = 0;
  for (auto _ : st) {
    e->on_set(&count_event, &fired);
    e->set_and_dispatch();
    benchmark::ClobberMemory();
  }
  if (fired != static_cast<std::uint64_t>(st.iterations())) {
    st.SkipWithError("signal/dispatch1/event: not exactly one fire per iteration");
  }
}

void bm_try_wait_ours(benchmark::State& st) {
  auto s = std::make_unique<semaphore>();
  (void)s->signal(value_seed + 10);
  const std::uint64_t v = value_seed + 5;
  std::uint64_t yes = 0;
  for (auto _ : st) {
    bool r = s->try_wait(v);
    benchmark::DoNotOptimize(r);
    yes += r;
  }
  if (yes != static_cast<std::uint64_t>(st.iterations())) st.SkipWithError("try_wait/ours: false");
}

void bm_try_wait_atomic(benchmark::State& st) {
  std::atomic<std::uint64_t> a{value_seed + 10};
  const std::uint64_t v = value_seed + 5;
  std::uint64_t yes = 0;
  for (auto _ : st) {
    bool r = a.load(std::memory_order_acquire) >= v;
    benchmark::DoNotOptimize(r);
    yes += r;
  }
  if (yes != static_cast<std::uint64_t>(st.iterations())) st.SkipWithError("try_wait/atomic: false");
}

void bm_try_wait_event(benchmark::State& st) {
  auto e = std::make_unique<binary_event>();
  e->set();
  std::uint64_t yes = 0;
  for (auto _ : st) {
    bool r = e->is_set();
    benchmark::DoNotOptimize(r);
    yes += r;
  }
  if (yes != static_cast<std::uint64_t>(st.iterations())) st.SkipWithError("try_wait/event: false");
}

/// Four signals 10, 20, 30, 40 with frontier_of(value); waiters on 25
/// import the frontier of 30.
constexpr std::uint64_t history_values[] = {10, 20, 30, 40};

void bm_frontier_at_ours(benchmark::State& st) {
  auto s = std::make_unique<semaphore>();
  for (std::uint64_t v : history_values) (void)s->signal(value_seed * v, frontier_of(v));
  const std::uint64_t query = value_seed * 25;
  for (auto _ : st) {
    auto r = s->frontier_at(query);
    benchmark::DoNotOptimize(r);
  }
  const auto r = s->frontier_at(query);
  if (!r || r->frontier != frontier_of(30) || !r->exact) {
    st.SkipWithError("frontier_at/ours: wrong record");
  }
}

void bm_frontier_at_map(benchmark::State& st) {
  auto h = std::make_unique<map_history>();
  for (std::uint64_t v : history_values) h->record(value_seed * v, frontier_of(v));
  const std::uint64_t query = value_seed * 25;
  for (auto _ : st) {
    auto r = h->at(query);
    benchmark::DoNotOptimize(r);
  }
  const auto r = h->at(query);
  if (!r || *r != frontier_of(30)) st.SkipWithError("frontier_at/map: wrong record");
}

void bm_wait_reached_ours(benchmark::State& st) {
  auto s = std::make_unique<semaphore>();
  (void)s->signal(value_seed + 10);
  const std::uint64_t v = value_seed + 5;
  for (auto _ : st) {
    status r = s->wait(v);
    benchmark::DoNotOptimize(r);
  }
}

void bm_wait_reached_condvar(benchmark::State& st) {
  auto c = std::make_unique<condvar_channel>();
  c->signal(value_seed + 10);
  const std::uint64_t v = value_seed + 5;
  for (auto _ : st) {
    bool r = c->wait(v);
    benchmark::DoNotOptimize(r);
  }
}

/// A round trip per iteration; B answers exactly max_iterations pings.
template <class Channel, placement Where>
void bm_pingpong(benchmark::State& st) {
  const auto cpus = cpus_for(Where);
  if (!cpus) {
    st.SkipWithError("pingpong: this placement needs more CPUs than this process may use");
    return;
  }
  scoped_pin pin(cpus->first);
  auto pair = std::make_unique<pingpong_pair<Channel>>();
  const auto n = static_cast<std::uint64_t>(st.max_iterations);
  pair->start(n, /*stamp=*/false, cpus->second);
  std::uint64_t i = 0;
  bool ok = pin.ok();
  for (auto _ : st) {
    ++i;
    pair->ping.signal(i);
    ok = pair->pong.wait(i) && ok;
  }
  pair->join();
  if (!ok || !pair->ok.load() || pair->pong.value() != n || i != n) {
    st.SkipWithError("pingpong: pinning failed, a wait failed, or values were lost");
  }
}

/// One-way wake of a partner parked for >= 5 ms; manual time.
template <class Channel, placement Where>
void bm_wake_cold(benchmark::State& st) {
  const auto cpus = cpus_for(Where);
  if (!cpus) {
    st.SkipWithError("wake: this placement needs more CPUs than this process may use");
    return;
  }
  scoped_pin pin(cpus->first);
  auto pair = std::make_unique<pingpong_pair<Channel>>();
  const auto n = static_cast<std::uint64_t>(st.max_iterations);
  pair->start(n, /*stamp=*/true, cpus->second);
  std::uint64_t i = 0;
  bool ok = pin.ok();
  for (auto _ : st) {
    ++i;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const auto t0 = clock_type::now();
    pair->ping.signal(i);
    ok = pair->pong.wait(i) && ok;
    const std::int64_t t0_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(t0.time_since_epoch()).count();
    const std::int64_t one_way = pair->stamp_ns.load(std::memory_order_acquire) - t0_ns;
    st.SetIterationTime(static_cast<double>(one_way) * 1e-9);
  }
  pair->join();
  if (!ok || !pair->ok.load() || pair->pong.value() != n) {
    st.SkipWithError("wake: pinning failed, a wait failed, or values were lost");
  }
}

//===-- checks before timing ------------------------------------------------===//

bool expect(bool cond, const char* what) {
  if (!cond) std::fprintf(stderr, "semaphore_bench: check failed: %s\n", what);
  return cond;
}

template <class Channel>
bool check_channel(const char* name) {
  auto pair = std::make_unique<pingpong_pair<Channel>>();
  constexpr std::uint64_t n = 200;
  pair->start(n, true);
  bool ok = true;
  for (std::uint64_t i = 1; i <= n; ++i) {
    pair->ping.signal(i);
    ok = pair->pong.wait(i) && pair->pong.value() >= i && ok;
  }
  pair->join();
  ok = ok && pair->ok.load() && pair->pong.value() == n && pair->ping.value() == n;
  if (!ok) std::fprintf(stderr, "semaphore_bench: channel %s lost or reordered values\n", name);
  return ok;
}

bool check_all() {
  bool ok = true;
  {
    semaphore s;
    map_history h;
    for (std::uint64_t v : history_values) {
      ok &= expect(s.signal(v, frontier_of(v)).ok(), "signal accepted");
      h.record(v, frontier_of(v));
    }
    for (std::uint64_t q = 1; q <= 40; ++q) {
      const auto ours = s.frontier_at(q);
      const auto map = h.at(q);
      ok &= expect(ours && map && ours->frontier == *map && ours->exact,
                   "frontier_at agrees with the map history");
    }
  }
  {
    semaphore s;
    semaphore_timepoint tp;
    std::uint64_t fired = 0;
    for (std::uint64_t v = 1; v <= 100; ++v) {
      tp.reset(v, &count_fire, &fired);
      s.add_timepoint(tp);
      ok &= expect(fired == v - 1, "timepoint not fired before its value");
      (void)s.signal(v);
    }
    ok &= expect(fired == 100, "one fire per registration");
    binary_event e;
    std::uint64_t efired = 0;
    for (int k = 0; k < 100; ++k) {
      e.on_set(&count_event, &efired);
      e.set_and_dispatch();
    }
    ok &= expect(efired == 100, "event dispatch fires once per registration");
  }
  ok &= check_channel<ours_hot>("ours_hot");
  ok &= check_channel<ours_default>("ours_default");
  ok &= check_channel<ours_parked>("ours_parked");
  ok &= check_channel<atomic_spin_channel>("atomic_spin");
  ok &= check_channel<atomic_wait_channel>("atomic_wait");
  ok &= check_channel<condvar_channel>("condvar");
  return ok;
}

//===-- registration --------------------------------------------------------===//

benchmark::internal::Benchmark* reg(const char* name, void (*fn)(benchmark::State&)) {
  return benchmark::RegisterBenchmark(name, fn)
      ->Unit(benchmark::kNanosecond)
      ->ComputeStatistics("min", min_of)
      ->ComputeStatistics("max", max_of);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (!check_all()) {
    std::fprintf(stderr, "semaphore_bench: checks failed; not timing anything\n");
    return 1;
  }

  reg("signal/plain/ours", bm_signal_ours);
  reg("signal/plain/ours_frontier4", bm_signal_ours_frontier4);
  reg("signal/plain/atomic", bm_signal_atomic);
  reg("signal/plain/atomic_notify", bm_signal_atomic_notify);
  reg("signal/plain/event", bm_signal_event);
  reg("signal/dispatch1/ours", bm_dispatch1_ours);
  reg("signal/dispatch1/event", bm_dispatch1_event);
  reg("try_wait/reached/ours", bm_try_wait_ours);
  reg("try_wait/reached/atomic", bm_try_wait_atomic);
  reg("try_wait/reached/event", bm_try_wait_event);
  reg("frontier_at/reached/ours", bm_frontier_at_ours);
  reg("frontier_at/reached/map", bm_frontier_at_map);
  reg("wait/reached/ours", bm_wait_reached_ours);
  reg("wait/reached/condvar", bm_wait_reached_condvar);
  for (const std::int64_t depth : {std::int64_t{8}, std::int64_t{1024}, std::int64_t{10000}}) {
    const std::string d = std::to_string(depth);
    reg(("submit_ahead/" + d + "/grows").c_str(), bm_submit_ahead_kept<semaphore>)->Arg(depth);
    reg(("submit_ahead/" + d + "/grows_fresh").c_str(), bm_submit_ahead_fresh)->Arg(depth);
    reg(("submit_ahead/" + d + "/bounded").c_str(), bm_submit_ahead_kept<bounded_semaphore>)
        ->Arg(depth);
    reg(("submit_ahead/" + d + "/map").c_str(), bm_submit_ahead_map)->Arg(depth);
  }

  // Two threads: real time, pinned (see `placement`). Iteration counts are
  // fixed where a row parks in the kernel, so each stays around a second.
  constexpr placement cross = placement::cross;
  constexpr placement same = placement::same;
  reg("pingpong/hot/ours", bm_pingpong<ours_hot, cross>)->UseRealTime();
  reg("pingpong/hot/atomic", bm_pingpong<atomic_spin_channel, cross>)->UseRealTime();
  reg("pingpong/default/ours", bm_pingpong<ours_default, cross>)->UseRealTime();
  reg("pingpong/spin512/ours", bm_pingpong<ours_channel<512>, cross>)->UseRealTime();
  reg("pingpong/spin2048/ours", bm_pingpong<ours_channel<2048>, cross>)->UseRealTime();
  reg("pingpong/parked_cross/ours", bm_pingpong<ours_parked, cross>)
      ->UseRealTime()
      ->Iterations(5000);
  reg("pingpong/parked_cross/condvar", bm_pingpong<condvar_channel, cross>)
      ->UseRealTime()
      ->Iterations(5000);
  reg("pingpong/parked_cross/atomic_wait", bm_pingpong<atomic_wait_channel, cross>)
      ->UseRealTime()
      ->Iterations(5000);
  reg("pingpong/parked_same/ours", bm_pingpong<ours_parked, same>)
      ->UseRealTime()
      ->Iterations(20000);
  reg("pingpong/parked_same/condvar", bm_pingpong<condvar_channel, same>)
      ->UseRealTime()
      ->Iterations(20000);
  reg("pingpong/parked_same/atomic_wait", bm_pingpong<atomic_wait_channel, same>)
      ->UseRealTime()
      ->Iterations(20000);
  reg("wake/cold_cross/ours", bm_wake_cold<ours_parked, cross>)->UseManualTime()->Iterations(100);
  reg("wake/cold_cross/condvar", bm_wake_cold<condvar_channel, cross>)
      ->UseManualTime()
      ->Iterations(100);
  reg("wake/cold_same/ours", bm_wake_cold<ours_parked, same>)->UseManualTime()->Iterations(100);
  reg("wake/cold_same/condvar", bm_wake_cold<condvar_channel, same>)
      ->UseManualTime()
      ->Iterations(100);

  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
