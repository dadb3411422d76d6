// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// Property test for <causal/pool.hpp>: in thousands of random programs of
// acquires, releases and operations on two to five queues sharing one block
// pool, every two operations that touch the same bytes are ordered by
// happens-before, computed by brute force from what a simulated device did.
//
// Set-up. The queues are basic_queue over `sim_backend`, a backend written
// here that appends every wait, execute and signal to one device log shared
// by all queues; completions are logged too. Queue q owns a timeline T_q
// that each of its operations signals to the operation's epoch, so T_p >= v
// means "p's operation at epoch v has completed". Each T_q is registered
// with the pool (the fence path waits on it) and each queue reports its
// retirements to a completion_tracker that the pool reads (the completion
// path). The quota is a few blocks, so the pool reuses constantly and often
// has to fence. Programs use the default frontier, or basic_frontier<3> on
// four or five queues so that knowledge and death frontiers overflow and
// only producer entries can prove them.
//
// A program is a random sequence of steps:
//   - acquire(q, size); sometimes released at once, unused, by q (a free made
//     after a fenced acquire and before q's next submission: the pool's
//     waits then order q's *next* operation, not its current epoch), and
//     then often acquired by another queue and used straight away;
//   - an operation on q that uses some live blocks. A block's first use is
//     on the queue that acquired it; a later use waits for the block's
//     previous user (T_p >= e, unless that was q), so each lifetime's uses
//     form a chain. Random extra waits on any timeline are added;
//   - device progress: the oldest operation of a random queue whose device
//     waits are met completes (its signals reach, queue.retire);
//   - release(b, f), only when valid: every use of b in this lifetime is
//     ordered before f's operation at f.epoch() (f is the last user's queue,
//     or the log already orders it, or f first submits a hand-off operation
//     that waits for the last user). A block with no use is released by the
//     queue that acquired it.
// At the end every queue submits one more operation and the device runs
// everything it can.
//
// Ground truth, from the log alone. Operation X happens-before Y when, by
// transitivity: X precedes Y on the same queue; or a device wait on T_p >= v
// was issued before Y on Y's queue (by the queue or by the pool's fence
// path) and X is p's operation at epoch v; or X's completion is logged
// before Y was issued (what "value already reached" and the completion path
// rely on). Waits the queue elided leave no trace, so the closure judges
// elision too. The checks, per program:
//   - the pool never hands out bytes that are live;
//   - every two operations that ran and whose byte ranges overlap are
//     ordered (the property);
//   - every wait an operation asked for is implied by the closure (a queue
//     that learnt a death frontier no wait proved elides waits it needs);
//   - every operation ran: the program's own waits only name issued work,
//     so only a pool wait for work not issued yet can leave one stuck;
//   - the simulated device completed nothing before its past (self-check).
// And, at each acquire:
//   - a fenced acquire lists in its block exactly the device waits the log
//     shows it issued (count, then the first ones: timeline, axis, value);
//   - an acquire that fails leaves no run of adjacent free blocks that are
//     all retired (producer retired by the tracker or its timeline, or the
//     tracker covering the untainted death frontier), and that would hold
//     the request (with the fresh tail when the run reaches the top of the
//     carved range): the pool must have coalesced such a run and used it.
// A failing program is replayed with a narrative of its steps, and the
// shortest one found is printed.
//
// Programs are numbered; program n runs on splitmix64(n) and n % 3 == 2
// picks the small frontier. CAUSAL_POOL_PROGRAM=<n> sets the first program
// (default 1), CAUSAL_POOL_PROGRAMS=<count> how many run (default 10000,
// about 0.6 s at -O2; 2500 under sanitizers); CAUSAL_POOL_PROGRAM=<n>
// CAUSAL_POOL_PROGRAMS=1 replays one.

#include <causal/axis.hpp>
#include <causal/completion.hpp>
#include <causal/config.hpp>
#include <causal/frontier.hpp>
#include <causal/pool.hpp>
#include <causal/queue.hpp>
#include <causal/result.hpp>
#include <causal/semaphore.hpp>

#include "catch.hpp"

#include <algorithm>
#include <array>
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr int max_queues = 5;
constexpr std::size_t max_ops = 256;
/// Operations a queue may have issued and not completed (the timelines'
/// PendingCapacity is 16).
constexpr std::size_t max_outstanding = 10;
constexpr std::size_t alignment = 16;

using op_set = std::bitset<max_ops>;
using wait_point = std::pair<int, std::uint64_t>;  // (timeline = its queue, value)

//===-- random numbers --------------------------------------------------------===//

/// splitmix64: tiny, fast, and the same sequence on every platform.
class splitmix64 {
 public:
  explicit splitmix64(std::uint64_t state) noexcept : state_(state) {}

  std::uint64_t next() noexcept {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [lo, hi].
  int pick(int lo, int hi) noexcept {
    return lo + static_cast<int>(next() % static_cast<std::uint64_t>(hi - lo + 1));
  }
  bool chance(int percent) noexcept { return static_cast<int>(next() % 100) < percent; }

 private:
  std::uint64_t state_;
};

//===-- the simulated device ----------------------------------------------------===//

enum class event_kind : std::uint8_t { wait, execute, signal, complete };

struct device_event {
  event_kind kind = event_kind::execute;
  int queue = 0;            ///< whose stream the event belongs to
  int timeline = -1;        ///< wait/signal: the timeline (its queue's index)
  std::uint64_t value = 0;  ///< wait/signal: the value; execute/complete: the epoch
  std::uint32_t tag = 0;    ///< execute/complete: the operation's id
};

template <class Frontier>
using sim_semaphore = causal::basic_semaphore<Frontier, 4, 16>;

/// One device shared by every queue of a program: the log, plus what it
/// needs to complete operations only once their device waits are met.
template <class Frontier>
class sim_device {
 public:
  using semaphore_type = sim_semaphore<Frontier>;

  struct device_op {
    int queue = 0;
    std::uint64_t epoch = 0;
    std::uint32_t tag = 0;
    std::vector<wait_point> waits;    ///< issued before it on its queue
    std::vector<wait_point> signals;  ///< issued after it
    bool completed = false;
  };

  explicit sim_device(int queues) : pending_(static_cast<std::size_t>(queues)),
                                    by_queue_(static_cast<std::size_t>(queues)),
                                    next_(static_cast<std::size_t>(queues), 0) {}

  void add_timeline(semaphore_type& s) { timelines_.push_back(&s); }

  void wait(int q, const semaphore_type& s, std::uint64_t v) {
    const int t = timeline_of(s);
    log_.push_back(device_event{event_kind::wait, q, t, v, 0});
    pending_[static_cast<std::size_t>(q)].emplace_back(t, v);
  }
  void execute(int q, std::uint32_t tag, std::uint64_t epoch) {
    log_.push_back(device_event{event_kind::execute, q, -1, epoch, tag});
    device_op op;
    op.queue = q;
    op.epoch = epoch;
    op.tag = tag;
    op.waits = std::move(pending_[static_cast<std::size_t>(q)]);
    pending_[static_cast<std::size_t>(q)].clear();
    by_queue_[static_cast<std::size_t>(q)].push_back(ops_.size());
    ops_.push_back(std::move(op));
  }
  void signal(int q, const semaphore_type& s, std::uint64_t v) {
    const int t = timeline_of(s);
    log_.push_back(device_event{event_kind::signal, q, t, v, 0});
    ops_[by_queue_[static_cast<std::size_t>(q)].back()].signals.emplace_back(t, v);
  }

  /// True when queue q's oldest unfinished operation can run now.
  [[nodiscard]] bool runnable(int q) const {
    const auto& mine = by_queue_[static_cast<std::size_t>(q)];
    const std::size_t n = next_[static_cast<std::size_t>(q)];
    if (n == mine.size()) return false;
    for (const wait_point& w : ops_[mine[n]].waits) {
      const semaphore_type& s = *timelines_[static_cast<std::size_t>(w.first)];
      if (s.value() < w.second || s.failed()) return false;
    }
    return true;
  }

  /// Completes queue q's oldest operation (precondition: runnable(q)):
  /// reaches its signals and logs the completion; returns the operation.
  const device_op& complete(int q) {
    std::size_t& n = next_[static_cast<std::size_t>(q)];
    device_op& op = ops_[by_queue_[static_cast<std::size_t>(q)][n++]];
    for (const wait_point& s : op.signals) {
      (void)timelines_[static_cast<std::size_t>(s.first)]->device_signal(s.second);
    }
    op.completed = true;
    log_.push_back(device_event{event_kind::complete, q, -1, op.epoch, op.tag});
    return op;
  }

  [[nodiscard]] std::size_t outstanding(int q) const {
    return by_queue_[static_cast<std::size_t>(q)].size() - next_[static_cast<std::size_t>(q)];
  }
  [[nodiscard]] const std::vector<device_event>& log() const noexcept { return log_; }
  [[nodiscard]] const std::vector<device_op>& ops() const noexcept { return ops_; }
  /// Device waits issued on q that will precede its next operation.
  [[nodiscard]] const std::vector<wait_point>& pending(int q) const {
    return pending_[static_cast<std::size_t>(q)];
  }

 private:
  int timeline_of(const semaphore_type& s) const {
    for (std::size_t t = 0; t < timelines_.size(); ++t) {
      if (timelines_[t] == &s) return static_cast<int>(t);
    }
    return -1;
  }

  std::vector<semaphore_type*> timelines_;
  std::vector<device_event> log_;
  std::vector<device_op> ops_;
  std::vector<std::vector<wait_point>> pending_;
  std::vector<std::vector<std::size_t>> by_queue_;
  std::vector<std::size_t> next_;
};

/// The queue backend: issues go to the shared device, tagged with the
/// queue's index. Never fails.
template <class Frontier>
class sim_backend {
 public:
  using semaphore_type = sim_semaphore<Frontier>;
  using operation_type = std::uint32_t;  ///< the operation's id in its program
  static constexpr bool waits_before_signal = true;

  sim_backend(sim_device<Frontier>& device, int queue) noexcept : device_(&device), queue_(queue) {}

  causal::status issue_wait(semaphore_type& s, std::uint64_t v) noexcept {
    device_->wait(queue_, s, v);
    return {};
  }
  causal::status execute(const operation_type& op, std::uint64_t epoch) noexcept {
    device_->execute(queue_, op, epoch);
    return {};
  }
  causal::status issue_signal(semaphore_type& s, std::uint64_t v) noexcept {
    device_->signal(queue_, s, v);
    return {};
  }

 private:
  sim_device<Frontier>* device_;
  int queue_;
};

//===-- happens-before -------------------------------------------------------------===//

/// past[x]: the operations that happen-before operation x (by id), from the
/// log alone; blocked[x]: x waited for an operation that was never issued.
struct closure {
  std::vector<op_set> past;
  std::vector<char> blocked;
};

/// The transitive closure of program order, issued device waits and
/// completion-before-issue over `log`, by fixpoint iteration (a pool may
/// wait for a value whose operation is issued later, so one pass in issue
/// order is not always enough). A wait on T_p >= v names p's operation at
/// epoch v: p's operations signal T_p to their epochs, which are 1, 2, ...
/// in issue order. The set of operations completed before x was issued is
/// taken as it is: it is closed under happens-before because the device
/// completes nothing before its past, which check() verifies.
closure close_log(const std::vector<device_event>& log, int queues, std::size_t ops) {
  struct node {
    std::vector<wait_point> waits;
    int prev = -1;
    op_set done;  // completed before it was issued
  };
  std::vector<node> nodes(ops);
  std::vector<std::vector<int>> by_epoch(static_cast<std::size_t>(queues));
  std::vector<std::vector<wait_point>> segment(static_cast<std::size_t>(queues));
  std::vector<int> last(static_cast<std::size_t>(queues), -1);
  op_set done;
  for (const device_event& ev : log) {
    const auto q = static_cast<std::size_t>(ev.queue);
    switch (ev.kind) {
      case event_kind::wait: segment[q].emplace_back(ev.timeline, ev.value); break;
      case event_kind::execute: {
        node& n = nodes[ev.tag];
        n.waits = std::move(segment[q]);
        segment[q].clear();
        n.prev = last[q];
        n.done = done;
        last[q] = static_cast<int>(ev.tag);
        by_epoch[q].push_back(static_cast<int>(ev.tag));
        break;
      }
      case event_kind::signal: break;
      case event_kind::complete: done.set(ev.tag); break;
    }
  }
  closure c;
  c.past.assign(ops, op_set{});
  c.blocked.assign(ops, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t x = 0; x < ops; ++x) {
      const node& n = nodes[x];
      op_set p = n.done;
      if (n.prev >= 0) {
        p |= c.past[static_cast<std::size_t>(n.prev)];
        p.set(static_cast<std::size_t>(n.prev));
      }
      for (const wait_point& w : n.waits) {
        const auto& issued = by_epoch[static_cast<std::size_t>(w.first)];
        if (w.second == 0) continue;
        if (w.second > issued.size()) {
          c.blocked[x] = 1;
          continue;
        }
        const auto y = static_cast<std::size_t>(issued[w.second - 1]);
        p |= c.past[y];
        p.set(y);
      }
      if (p != c.past[x]) {
        c.past[x] = p;
        changed = true;
      }
    }
  }
  return c;
}

//===-- one program -----------------------------------------------------------------===//

enum class failure_kind : std::uint8_t {
  none,
  pair,
  elision,
  live_overlap,
  stuck,
  harness,
  misreported_waits,
  missed_coalesce
};

/// Counters summed over programs: what the generator reached, and failures.
struct totals {
  std::uint64_t programs = 0, steps = 0, ops = 0, uses = 0;
  causal::pool_stats pool{};
  std::uint64_t elided_reached = 0, elided_same_queue = 0, elided_dominated = 0;
  std::uint64_t device_waits = 0;
  /// Fenced acquires freed unused by their queue, at an epoch above 0.
  std::uint64_t fenced_then_freed = 0;
  /// Failed acquires that met free bytes enough for them, in fragments.
  std::uint64_t fragmented_failures = 0;
  std::uint64_t tainted_deaths = 0;  ///< releases that stored a tainted death frontier
  std::uint64_t handoffs = 0;
  std::uint64_t stuck_ops = 0;  ///< operations that never ran
  std::uint64_t failed_programs = 0;
  std::array<std::uint64_t, 8> failures_by_kind{};
  /// Unordered uses in different lifetimes, by how the later one's block
  /// was acquired (indexed by pool_path), then [4]: in the same lifetime.
  std::array<std::uint64_t, 5> pair_failures{};
};

struct verdict {
  failure_kind kind = failure_kind::none;
  causal::pool_path path = causal::pool_path::fresh;  ///< pair: the later use's acquire
  bool same_lifetime = false;                          ///< pair: both uses in one lifetime
  int steps = 0;
  std::string report;  ///< only when narrating
};

/// Thrown by the generator when the library refuses something it should
/// accept (a test bug or a library bug, never a valid refusal).
struct harness_error {
  std::string what;
};

causal::axis queue_axis(int q) {
  return causal::make_axis(0, 0, causal::domain::queue, 1 + static_cast<std::uint64_t>(q)).value();
}

template <class Frontier>
class program {
 public:
  using semaphore_t = sim_semaphore<Frontier>;
  using device_t = sim_device<Frontier>;
  using backend_t = sim_backend<Frontier>;
  using queue_t = causal::basic_queue<Frontier, backend_t>;
  using pool_t = causal::basic_block_pool<queue_t, causal::completion_tracker, 12>;
  using wait_t = typename queue_t::wait_type;
  using signal_t = typename queue_t::signal_type;

  program(std::uint64_t number, int queues, bool narrate)
      : number_(number), rng_(number), k_(queues), narrate_(narrate), device_(queues) {}

  verdict run(totals& t) {
    verdict v;
    try {
      build();
      const int steps = rng_.pick(30, 80);
      for (step_ = 1; step_ <= steps; ++step_) one_step(t);
      steps_taken_ = steps;
      drain();
      v = check(t);
    } catch (const harness_error& e) {
      v.kind = failure_kind::harness;
      if (narrate_) v.report = header_ + "harness: " + e.what + "\n";
      if (steps_taken_ == 0) steps_taken_ = step_;
    }
    v.steps = steps_taken_;
    if (narrate_ && v.kind != failure_kind::none) v.report += narrative();
    account(t);
    return v;
  }

 private:
  struct lifetime {
    int id = 0;
    causal::pool_block handle{};
    int acquirer = 0;
    int acquire_step = 0;
    std::size_t fence_waits = 0;
    std::vector<int> uses;  ///< operation ids, in order
    bool live = true;
    int releaser = -1;
    int release_step = 0;
    causal::frontier_entry producer{};
    bool released_unused = false;

    [[nodiscard]] bool overlaps(const lifetime& o) const noexcept {
      return handle.offset < o.handle.offset + o.handle.size &&
             o.handle.offset < handle.offset + handle.size;
    }
  };

  struct op_record {
    int queue = 0;
    std::uint64_t epoch = 0;
    int step = 0;
    std::vector<int> uses;          ///< lifetime ids
    std::vector<wait_point> waits;  ///< what it asked for
    const char* role = "use";
  };

  //===-- set-up ---------------------------------------------------------------===//

  void build() {
    for (int q = 0; q < k_; ++q) {
      timelines_.push_back(std::make_unique<semaphore_t>());
      device_.add_timeline(*timelines_.back());
      if (!tracker_.register_axis(queue_axis(q))) fail_harness("tracker: register_axis refused");
    }
    for (int q = 0; q < k_; ++q) {
      queues_.push_back(std::make_unique<queue_t>(queue_axis(q), device_, q));
      queues_.back()->track_completion(tracker_);
    }
    quota_ = alignment * static_cast<std::size_t>(rng_.pick(4, 8));
    pool_ = std::make_unique<pool_t>(quota_, alignment, &tracker_);
    for (int q = 0; q < k_; ++q) {
      if (!pool_->register_timeline(queue_axis(q), *timelines_[static_cast<std::size_t>(q)])) {
        fail_harness("pool: register_timeline refused");
      }
    }
    if (narrate_) {
      std::ostringstream out;
      out << "program " << number_ << ": " << k_ << " queues, frontier capacity "
          << Frontier::capacity << ", quota " << quota_ << " bytes, alignment " << alignment
          << ", 12 block descriptors\n";
      header_ = out.str();
    }
  }

  queue_t& queue(int q) { return *queues_[static_cast<std::size_t>(q)]; }
  semaphore_t& timeline(int q) { return *timelines_[static_cast<std::size_t>(q)]; }
  [[nodiscard]] bool room(int q) const {
    return device_.outstanding(q) < max_outstanding && ops_.size() + 2 * max_queues < max_ops;
  }

  [[noreturn]] void fail_harness(const std::string& what) { throw harness_error{what}; }

  //===-- steps ----------------------------------------------------------------===//

  void one_step(totals& t) {
    const int r = rng_.pick(0, 99);
    if (r < 28) {
      step_acquire();
    } else if (r < 60) {
      step_operation();
    } else if (r < 82) {
      step_complete();
    } else {
      step_release(t);
    }
  }

  void step_acquire() {
    const int q = rng_.pick(0, k_ - 1);
    const auto size = static_cast<std::size_t>(rng_.pick(1, 40));
    const int id = acquire_on(q, size);
    if (id < 0) return;
    // Free it at once, before q submits anything: after a fenced acquire
    // the pool's waits order q's *next* operation, not the one at q's
    // current epoch, which is all a free can name. Then, often, another
    // queue takes the same size and uses it before anything else happens.
    const bool fenced = lifetimes_[static_cast<std::size_t>(id)].handle.path ==
                        causal::pool_path::fenced;
    if (!rng_.chance(fenced ? 60 : 25)) return;
    release(lifetimes_[static_cast<std::size_t>(id)], q, "at once, unused");
    if (!rng_.chance(60)) return;
    const int r = (q + rng_.pick(1, k_ - 1)) % k_;
    if (!room(r)) return;
    const int next = acquire_on(r, size);
    if (next >= 0) submit(r, {next}, {}, "use");
  }

  /// Acquires `size` bytes on q and records the lifetime; -1 when nothing
  /// fits now.
  int acquire_on(int q, std::size_t size) {
    const std::size_t before = device_.log().size();
    auto got = pool_->acquire(queue(q), size);
    if (!got) {
      if (got.code() != causal::errc::resource_exhausted) {
        fail_harness("acquire failed with " + std::string(got.error_value().message()));
      }
      say("q", q, " acquire ", size, ": nothing fits (", got.error_value().message(), ")");
      check_coalesced(size);
      return -1;
    }
    check_reported_waits(*got, before);
    lifetime l;
    l.id = static_cast<int>(lifetimes_.size());
    l.handle = *got;
    l.acquirer = q;
    l.acquire_step = step_;
    l.fence_waits = device_.log().size() - before;
    for (const lifetime& o : lifetimes_) {
      if (o.live && o.overlaps(l) && live_overlap_.empty()) {
        live_overlap_ = "L" + std::to_string(l.id) + " overlaps L" + std::to_string(o.id) +
                        ", which is still live";
      }
    }
    if (narrate_) {
      std::ostringstream out;
      out << "q" << q << " acquire " << size << " -> L" << l.id << " " << range(l) << " via "
          << causal::to_string(l.handle.path);
      if (l.fence_waits != 0) {
        out << " (device waits on q" << q << ":";
        for (std::size_t i = before; i < device_.log().size(); ++i) {
          const device_event& ev = device_.log()[i];
          out << " T" << ev.timeline << ">=" << ev.value;
        }
        out << "; q" << q << " now knows " << text(queue(q).knowledge()) << ")";
      }
      note(out.str());
    }
    lifetimes_.push_back(l);
    return l.id;
  }

  /// The fence waits `b` lists must be the device waits logged since
  /// event `before`.
  void check_reported_waits(const causal::pool_block& b, std::size_t before) {
    const std::size_t issued = device_.log().size() - before;
    std::ostringstream out;
    if (b.wait_count != issued) {
      out << "an acquire issued " << issued << " device waits, its block lists " << b.wait_count;
    } else {
      for (std::size_t i = 0; i < b.reported_waits().size(); ++i) {
        const device_event& ev = device_.log()[before + i];
        const causal::pool_wait& w = b.reported_waits()[i];
        if (ev.kind != event_kind::wait || w.semaphore != &timeline(ev.timeline) ||
            w.value != ev.value || w.axis != queue_axis(ev.timeline)) {
          out << "an acquire's block lists wait " << i << " as " << entry_text({w.axis, w.value})
              << ", the log has T" << ev.timeline << ">=" << ev.value;
          break;
        }
      }
    }
    if (!out.str().empty() && misreported_.empty()) misreported_ = out.str();
  }

  /// Whether free block `b` is retired by the pool's own tests (what lets
  /// it be coalesced).
  [[nodiscard]] bool retired(const typename pool_t::free_block_view& b) const {
    if (b.dead) return true;
    if (b.producer.epoch != 0) {
      if (tracker_.is_retired(b.producer)) return true;
      for (int p = 0; p < k_; ++p) {
        if (queue_axis(p) != b.producer.axis) continue;
        const semaphore_t& tl = *timelines_[static_cast<std::size_t>(p)];
        if (tl.value() >= b.producer.epoch && !tl.failed() && !tl.is_tainted(b.producer.epoch)) {
          return true;
        }
      }
    }
    if (b.death->tainted()) return false;
    return b.death->empty() || tracker_.covers(*b.death);
  }

  /// After a failed acquire of `size`: no run of adjacent retired free
  /// blocks (plus the fresh tail, at the top) may hold it.
  void check_coalesced(std::size_t size) {
    const std::size_t need = (size + alignment - 1) & ~(alignment - 1);
    std::vector<typename pool_t::free_block_view> blocks;
    std::size_t free_total = 0;
    for (std::size_t i = 0; i < pool_->free_count(); ++i) {
      blocks.push_back(pool_->free_block(i));
      free_total += blocks.back().size;
    }
    if (free_total + pool_->fresh_bytes() >= need) ++fragmented_failures_;
    std::sort(blocks.begin(), blocks.end(),
              [](const auto& a, const auto& b) { return a.offset < b.offset; });
    std::size_t run = 0, run_start = 0;
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      const auto& b = blocks[i];
      if (!retired(b)) {
        run = 0;
        continue;
      }
      if (run == 0 || blocks[i - 1].offset + blocks[i - 1].size != b.offset) {
        run = 0;
        run_start = b.offset;
      }
      run += b.size;
      const bool at_top = b.offset + b.size == pool_->carved();
      const std::size_t room = run + (at_top ? pool_->fresh_bytes() : 0);
      if (room >= need && missed_.empty()) {
        std::ostringstream out;
        out << "an acquire of " << size << " bytes failed, but the retired free blocks at ["
            << run_start << ", " << b.offset + b.size << ")"
            << (at_top ? " and the fresh tail" : "") << " hold " << room << " bytes";
        missed_ = out.str();
      }
    }
  }

  void step_operation() {
    std::vector<int> ready;
    for (int q = 0; q < k_; ++q) {
      if (room(q)) ready.push_back(q);
    }
    if (ready.empty()) return;
    const int q = ready[static_cast<std::size_t>(rng_.pick(0, static_cast<int>(ready.size()) - 1))];
    std::vector<int> uses;
    std::vector<wait_point> waits;
    for (const lifetime& l : lifetimes_) {
      if (!l.live || uses.size() == 3) continue;
      // A block's first use is on the queue that acquired it (the pool
      // proved its past for that queue's next operation only).
      if (l.uses.empty() && l.acquirer != q) continue;
      if (!rng_.chance(60)) continue;
      uses.push_back(l.id);
      if (!l.uses.empty()) {
        const op_record& prev = ops_[static_cast<std::size_t>(l.uses.back())];
        if (prev.queue != q) add_wait(waits, prev.queue, prev.epoch);
      }
    }
    for (int n = rng_.pick(0, 2); n > 0; --n) {
      const int p = rng_.pick(0, k_ - 1);
      const std::uint64_t e = queue(p).epoch();
      if (e == 0) continue;
      const auto back = static_cast<std::uint64_t>(rng_.pick(0, 3));
      add_wait(waits, p, back >= e ? 1 : e - back);
    }
    submit(q, uses, waits, "use");
  }

  void step_complete() {
    for (int n = rng_.pick(1, 3); n > 0; --n) {
      std::vector<int> ready;
      for (int q = 0; q < k_; ++q) {
        if (device_.runnable(q)) ready.push_back(q);
      }
      if (ready.empty()) return;
      complete(ready[static_cast<std::size_t>(rng_.pick(0, static_cast<int>(ready.size()) - 1))]);
    }
  }

  void step_release(totals& t) {
    std::vector<int> live;
    for (const lifetime& l : lifetimes_) {
      if (l.live) live.push_back(l.id);
    }
    if (live.empty()) return;
    lifetime& l = lifetimes_[static_cast<std::size_t>(
        live[static_cast<std::size_t>(rng_.pick(0, static_cast<int>(live.size()) - 1))])];
    if (l.uses.empty()) {
      release(l, l.acquirer, "unused");
      return;
    }
    const int last = l.uses.back();
    const int user = ops_[static_cast<std::size_t>(last)].queue;
    const std::uint64_t user_epoch = ops_[static_cast<std::size_t>(last)].epoch;
    const int f = rng_.pick(0, k_ - 1);
    if (f == user || rng_.chance(40)) {
      release(l, user, "by its last user's queue");
      return;
    }
    if (queue(f).epoch() != 0) {
      const int current = op_at(f, queue(f).epoch());
      const closure c = close_log(device_.log(), k_, ops_.size());
      if (c.past[static_cast<std::size_t>(current)].test(static_cast<std::size_t>(last))) {
        release(l, f, "the log orders its last use first");
        return;
      }
    }
    if (!room(f)) {
      release(l, user, "by its last user's queue");
      return;
    }
    std::vector<wait_point> waits;
    add_wait(waits, user, user_epoch);
    submit(f, {}, waits, "hand-off");
    ++t.handoffs;
    release(l, f, "after a hand-off");
  }

  /// End of program: one more operation per queue (it carries any waits a
  /// fence left pending), then the device runs all it can.
  void drain() {
    step_ = 0;
    for (int q = 0; q < k_; ++q) {
      if (room(q)) submit(q, {}, {}, "drain");
    }
    for (bool progress = true; progress;) {
      progress = false;
      for (int q = 0; q < k_; ++q) {
        while (device_.runnable(q)) {
          complete(q);
          progress = true;
        }
      }
    }
  }

  //===-- actions --------------------------------------------------------------===//

  static void add_wait(std::vector<wait_point>& waits, int timeline, std::uint64_t value) {
    for (wait_point& w : waits) {
      if (w.first == timeline) {
        w.second = std::max(w.second, value);
        return;
      }
    }
    waits.emplace_back(timeline, value);
  }

  void submit(int q, const std::vector<int>& uses, const std::vector<wait_point>& waits,
              const char* role) {
    const auto id = static_cast<std::uint32_t>(ops_.size());
    std::vector<wait_t> ws;
    for (const wait_point& w : waits) ws.push_back(wait_t{&timeline(w.first), w.second});
    const signal_t sig{&timeline(q), queue(q).epoch() + 1};
    const std::vector<wait_point> fenced = device_.pending(q);
    const std::size_t before = device_.log().size();
    auto r = queue(q).submit(std::span<const wait_t>(ws), std::span<const signal_t>(&sig, 1), id);
    if (!r || r->deferred || device_.ops().size() != ops_.size() + 1) {
      fail_harness("q" + std::to_string(q) + " refused a submission: " +
                   (r ? std::string("deferred") : std::string(r.error_value().message())));
    }
    op_record op;
    op.queue = q;
    op.epoch = r->epoch;
    op.step = step_;
    op.uses = uses;
    op.waits = waits;
    op.role = role;
    for (const int l : uses) {
      lifetimes_[static_cast<std::size_t>(l)].uses.push_back(static_cast<int>(id));
    }
    ops_.push_back(std::move(op));
    if (narrate_) {
      std::ostringstream out;
      out << "q" << q << " op #" << id << " = q" << q << ":" << r->epoch << " (" << role << ")";
      if (!uses.empty()) {
        out << " uses";
        for (const int l : uses) out << " L" << l << range(lifetimes_[static_cast<std::size_t>(l)]);
      }
      if (!fenced.empty()) {
        out << "; after the pool's waits";
        for (const wait_point& w : fenced) out << " T" << w.first << ">=" << w.second;
      }
      if (!waits.empty()) {
        out << "; waits";
        for (const wait_point& w : waits) {
          bool issued = false;
          for (std::size_t i = before; i < device_.log().size(); ++i) {
            const device_event& ev = device_.log()[i];
            issued = issued || (ev.kind == event_kind::wait && ev.timeline == w.first &&
                                ev.value == w.second);
          }
          out << " T" << w.first << ">=" << w.second << (issued ? "[device]" : "[elided]");
        }
      }
      note(out.str());
    }
  }

  void complete(int q) {
    const auto& op = device_.complete(q);
    queue(q).retire(op.epoch);
    if (narrate_) {
      note("device completes #" + std::to_string(op.tag) + " = q" + std::to_string(q) + ":" +
           std::to_string(op.epoch));
    }
  }

  void release(lifetime& l, int f, const char* why) {
    const causal::status s = pool_->release(l.handle, queue(f));
    if (!s) fail_harness("release refused: " + std::string(s.error_value().message()));
    l.live = false;
    l.releaser = f;
    l.release_step = step_;
    l.released_unused = l.uses.empty();
    const Frontier* death = nullptr;
    for (std::size_t i = 0; i < pool_->free_count(); ++i) {
      const auto b = pool_->free_block(i);
      if (b.offset <= l.handle.offset && l.handle.offset < b.offset + b.size) {
        l.producer = b.producer;
        death = b.death;
      }
    }
    if (death != nullptr && death->tainted()) ++tainted_deaths_;
    if (l.handle.path == causal::pool_path::fenced && l.uses.empty() && f == l.acquirer &&
        queue(f).epoch() != 0) {
      ++fenced_then_freed_;
    }
    if (narrate_) {
      std::ostringstream out;
      out << "q" << f << " release L" << l.id << " " << range(l) << " (" << why
          << "): q" << f << " is at epoch " << queue(f).epoch() << "; pool records producer ";
      if (l.producer.epoch == 0) {
        out << "none";
      } else {
        out << entry_text(l.producer);
      }
      if (death != nullptr) out << ", death frontier " << text(*death);
      note(out.str());
    }
  }

  //===-- checks ---------------------------------------------------------------===//

  [[nodiscard]] int op_at(int q, std::uint64_t epoch) const {
    for (std::size_t i = 0; i < ops_.size(); ++i) {
      if (ops_[i].queue == q && ops_[i].epoch == epoch) return static_cast<int>(i);
    }
    return -1;
  }

  verdict check(totals& t) {
    verdict v;
    const std::size_t n = ops_.size();
    const closure c = close_log(device_.log(), k_, n);
    std::vector<char> ran(n, 0);
    std::vector<std::size_t> completed_at(n, 0);
    {
      std::size_t seq = 0;
      for (const device_event& ev : device_.log()) {
        if (ev.kind != event_kind::complete) continue;
        ran[ev.tag] = 1;
        completed_at[ev.tag] = ++seq;
      }
    }
    for (std::size_t x = 0; x < n; ++x) t.stuck_ops += !ran[x];

    // The device must honour the log: nothing completes before its past.
    for (std::size_t x = 0; x < n; ++x) {
      if (!ran[x]) continue;
      for (std::size_t y = 0; y < n; ++y) {
        if (c.past[x].test(y) && (!ran[y] || completed_at[y] >= completed_at[x])) {
          fail_harness("the simulated device completed #" + std::to_string(x) + " before #" +
                       std::to_string(y) + ", which happens-before it");
        }
      }
    }
    if (!live_overlap_.empty()) {
      v.kind = failure_kind::live_overlap;
      if (narrate_) v.report = header_ + "the pool handed out live bytes: " + live_overlap_ + "\n";
      return v;
    }
    if (!misreported_.empty()) {
      v.kind = failure_kind::misreported_waits;
      if (narrate_) v.report = header_ + misreported_ + "\n";
      return v;
    }
    if (!missed_.empty()) {
      v.kind = failure_kind::missed_coalesce;
      if (narrate_) v.report = header_ + missed_ + "\n";
      return v;
    }

    // The property: two operations that touch the same bytes are ordered.
    for (std::size_t y = 0; y < n; ++y) {
      if (!ran[y]) continue;
      for (std::size_t x = 0; x < y; ++x) {
        if (!ran[x] || c.past[y].test(x)) continue;
        const auto clash = overlap(static_cast<int>(x), static_cast<int>(y));
        if (clash.first < 0) continue;
        v.kind = failure_kind::pair;
        v.path = lifetimes_[static_cast<std::size_t>(clash.second)].handle.path;
        v.same_lifetime = clash.first == clash.second;
        if (narrate_) v.report = explain_pair(static_cast<int>(x), static_cast<int>(y), clash, c);
        return v;
      }
    }

    // Every wait an operation asked for is implied (elision was sound).
    for (std::size_t x = 0; x < n; ++x) {
      if (!ran[x]) continue;
      for (const wait_point& w : ops_[x].waits) {
        const int y = op_at(w.first, w.second);
        if (y < 0 || c.past[x].test(static_cast<std::size_t>(y))) continue;
        v.kind = failure_kind::elision;
        if (narrate_) {
          v.report = header_ + "op #" + std::to_string(x) + " (" + op_name(static_cast<int>(x)) +
                     ") asked for T" + std::to_string(w.first) + ">=" + std::to_string(w.second) +
                     ", but op #" + std::to_string(y) + " (" + op_name(y) +
                     ") does not happen-before it: the wait was elided on knowledge the log "
                     "does not prove (learnt from a fence that did not order it, or an "
                     "unsound elision)\n";
        }
        return v;
      }
    }

    // Liveness: user waits only name issued operations, so the device can
    // always run everything; a pool wait for work not yet issued (or a
    // cycle through one) leaves operations that never run.
    for (std::size_t x = 0; x < n; ++x) {
      if (ran[x]) continue;
      v.kind = failure_kind::stuck;
      if (narrate_) {
        std::ostringstream out;
        out << header_ << "op #" << x << " (" << op_name(static_cast<int>(x))
            << ") never ran: the device waits before it";
        for (const auto& op : device_.ops()) {
          if (op.tag != x) continue;
          for (const wait_point& w : op.waits) out << " T" << w.first << ">=" << w.second;
        }
        out << (c.blocked[x] ? " name an operation never issued" : " are never met (a cycle)")
            << ", or an earlier operation of its queue never ran\n";
        v.report = out.str();
      }
      return v;
    }
    return v;
  }

  /// The first (lifetime of x, lifetime of y) whose bytes overlap, or -1s.
  [[nodiscard]] std::pair<int, int> overlap(int x, int y) const {
    for (const int a : ops_[static_cast<std::size_t>(x)].uses) {
      for (const int b : ops_[static_cast<std::size_t>(y)].uses) {
        const lifetime& la = lifetimes_[static_cast<std::size_t>(a)];
        if (la.overlaps(lifetimes_[static_cast<std::size_t>(b)])) return {a, b};
      }
    }
    return {-1, -1};
  }

  //===-- narration ------------------------------------------------------------===//

  template <class... Args>
  void say(const Args&... args) {
    if (!narrate_) return;
    std::ostringstream out;
    (out << ... << args);
    note(out.str());
  }
  void note(const std::string& s) {
    std::ostringstream out;
    if (step_ == 0) {
      out << "  end:     " << s;
    } else {
      out << "  step " << step_ << (step_ < 10 ? ":  " : ": ") << s;
    }
    steps_.push_back(out.str());
  }

  std::string narrative() const {
    std::string out = "steps:\n";
    for (const std::string& s : steps_) out += s + "\n";
    return out;
  }

  static std::string range(const lifetime& l) {
    return "[" + std::to_string(l.handle.offset) + ", " +
           std::to_string(l.handle.offset + l.handle.size) + ")";
  }

  [[nodiscard]] std::string entry_text(causal::frontier_entry e) const {
    for (int q = 0; q < k_; ++q) {
      if (queue_axis(q) == e.axis) return "q" + std::to_string(q) + ":" + std::to_string(e.epoch);
    }
    return "?:" + std::to_string(e.epoch);
  }
  [[nodiscard]] std::string text(const Frontier& f) const {
    std::string out = "{";
    for (const causal::frontier_entry e : f) {
      if (out.size() > 1) out += ", ";
      out += entry_text(e);
    }
    out += "}";
    if (f.tainted()) out += " tainted";
    return out;
  }
  [[nodiscard]] std::string op_name(int x) const {
    const op_record& op = ops_[static_cast<std::size_t>(x)];
    return "q" + std::to_string(op.queue) + ":" + std::to_string(op.epoch) + ", " + op.role +
           (op.step == 0 ? std::string(", end") : ", step " + std::to_string(op.step));
  }

  [[nodiscard]] std::string describe(const lifetime& l) const {
    std::ostringstream out;
    out << "L" << l.id << " " << range(l) << ": acquired by q" << l.acquirer << " at step "
        << l.acquire_step << " via " << causal::to_string(l.handle.path);
    if (l.fence_waits != 0) out << " (" << l.fence_waits << " device waits)";
    if (!l.live) {
      out << ", released by q" << l.releaser << " at step " << l.release_step
          << (l.released_unused ? " unused" : "") << " with producer "
          << (l.producer.epoch == 0 ? std::string("none") : entry_text(l.producer));
    }
    return out.str();
  }

  std::string explain_pair(int x, int y, std::pair<int, int> clash, const closure& c) const {
    const lifetime& lx = lifetimes_[static_cast<std::size_t>(clash.first)];
    const lifetime& ly = lifetimes_[static_cast<std::size_t>(clash.second)];
    const std::size_t lo = std::max(lx.handle.offset, ly.handle.offset);
    const std::size_t hi =
        std::min(lx.handle.offset + lx.handle.size, ly.handle.offset + ly.handle.size);
    std::ostringstream out;
    out << header_ << "ops #" << x << " and #" << y << " both use bytes [" << lo << ", " << hi
        << ") and neither happens-before the other\n"
        << "  #" << x << " (" << op_name(x) << ") uses " << describe(lx) << "\n"
        << "  #" << y << " (" << op_name(y) << ") uses " << describe(ly) << "\n";
    if (lx.id == ly.id) {
      out << "  one lifetime: #" << y << " asked to wait for its previous user, and the queue "
          << "issued only these device waits before it:";
    } else {
      out << "  the pool handed #" << y << "'s block out via the "
          << causal::to_string(ly.handle.path) << " path; device waits before #" << y << ":";
    }
    for (const auto& op : device_.ops()) {
      if (op.tag != static_cast<std::uint32_t>(y)) continue;
      for (const wait_point& w : op.waits) out << " T" << w.first << ">=" << w.second;
      if (op.waits.empty()) out << " none";
    }
    bool done_before = false;
    for (const device_event& ev : device_.log()) {
      if (ev.kind == event_kind::execute && ev.tag == static_cast<std::uint32_t>(y)) break;
      done_before = done_before || (ev.kind == event_kind::complete &&
                                    ev.tag == static_cast<std::uint32_t>(x));
    }
    out << "\n  #" << x << (done_before ? " had" : " had not") << " completed when #" << y
        << " was issued; #" << y << "'s past: {";
    bool first = true;
    for (std::size_t i = 0; i < ops_.size(); ++i) {
      if (!c.past[static_cast<std::size_t>(y)].test(i)) continue;
      out << (first ? "" : ", ") << "#" << i;
      first = false;
    }
    out << "}\n";
    if (lx.id != ly.id) {
      out << "  the bytes' owners after L" << lx.id << ":\n";
      for (const lifetime& l : lifetimes_) {
        if (l.id <= lx.id || l.id > ly.id || !l.overlaps(ly)) continue;
        out << "    " << describe(l) << "\n";
      }
    }
    return out.str();
  }

  void account(totals& t) const {
    ++t.programs;
    t.steps += static_cast<std::uint64_t>(steps_taken_);
    t.ops += ops_.size();
    for (const op_record& op : ops_) t.uses += op.uses.size();
    if (pool_) {
      const causal::pool_stats& s = pool_->stats();
      t.pool.reused_by_knowledge += s.reused_by_knowledge;
      t.pool.reused_by_completion += s.reused_by_completion;
      t.pool.reused_after_wait += s.reused_after_wait;
      t.pool.waits_issued += s.waits_issued;
      t.pool.fresh_carves += s.fresh_carves;
      t.pool.failures += s.failures;
      t.pool.releases += s.releases;
      t.pool.splits += s.splits;
      t.pool.merges += s.merges;
      t.pool.coalesces += s.coalesces;
      t.pool.tail_returns += s.tail_returns;
    }
    for (const auto& q : queues_) {
      const causal::queue_stats& s = q->stats();
      t.elided_reached += s.elided_reached;
      t.elided_same_queue += s.elided_same_queue;
      t.elided_dominated += s.elided_dominated;
      t.device_waits += s.device_waits;
    }
    t.fenced_then_freed += fenced_then_freed_;
    t.fragmented_failures += fragmented_failures_;
    t.tainted_deaths += tainted_deaths_;
  }

  const std::uint64_t number_;
  splitmix64 rng_;
  const int k_;
  const bool narrate_;
  int step_ = 0;
  int steps_taken_ = 0;
  std::size_t quota_ = 0;
  // Declaration order is destruction order in reverse: the pool goes
  // first, then the queues, the timelines, the device and the tracker.
  causal::completion_tracker tracker_;
  device_t device_;
  std::vector<std::unique_ptr<semaphore_t>> timelines_;
  std::vector<std::unique_ptr<queue_t>> queues_;
  std::unique_ptr<pool_t> pool_;
  std::vector<lifetime> lifetimes_;
  std::vector<op_record> ops_;
  std::string live_overlap_;
  std::string misreported_;
  std::string missed_;
  std::uint64_t fenced_then_freed_ = 0;
  std::uint64_t fragmented_failures_ = 0;
  std::uint64_t tainted_deaths_ = 0;
  std::string header_;
  std::vector<std::string> steps_;
};

/// Runs program `number`: n % 3 == 2 uses three-entry frontiers on four or
/// five queues (overflow), the others the default frontier on two to five.
verdict run_program(std::uint64_t number, bool narrate, totals& t) {
  splitmix64 shape(~number);
  if (number % 3 == 2) {
    program<causal::basic_frontier<3>> p(number, shape.pick(4, max_queues), narrate);
    return p.run(t);
  }
  program<causal::frontier> p(number, shape.pick(2, max_queues), narrate);
  return p.run(t);
}

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  if (const char* v = std::getenv(name); v != nullptr && *v != '\0') {
    return std::strtoull(v, nullptr, 0);
  }
  return fallback;
}

const char* kind_name(failure_kind k) {
  switch (k) {
    case failure_kind::none: return "none";
    case failure_kind::pair: return "unordered uses of the same bytes";
    case failure_kind::elision: return "a wait elided without being implied";
    case failure_kind::live_overlap: return "live bytes handed out twice";
    case failure_kind::stuck: return "an operation never ran";
    case failure_kind::harness: return "the library refused a valid step";
    case failure_kind::misreported_waits: return "a fenced acquire misreported its waits";
    case failure_kind::missed_coalesce: return "a failed acquire left a fitting retired run";
  }
  return "unknown";
}

}  // namespace

TEST_CASE("pool: every two uses of the same bytes are ordered by happens-before in random "
          "multi-queue programs",
          "[pool][property]") {
#if CAUSAL_HAS_TSAN() || CAUSAL_HAS_ASAN()
  constexpr std::uint64_t default_programs = 2500;
#else
  constexpr std::uint64_t default_programs = 10000;
#endif
  const std::uint64_t first = env_or("CAUSAL_POOL_PROGRAM", 1);
  const std::uint64_t count = env_or("CAUSAL_POOL_PROGRAMS", default_programs);

  totals t;
  std::uint64_t shortest = 0;
  int shortest_steps = 0;
  for (std::uint64_t n = first; n < first + count; ++n) {
    const verdict v = run_program(n, false, t);
    if (v.kind == failure_kind::none) continue;
    ++t.failed_programs;
    ++t.failures_by_kind[static_cast<std::size_t>(v.kind)];
    if (v.kind == failure_kind::pair) {
      ++t.pair_failures[v.same_lifetime ? 4 : static_cast<std::size_t>(v.path)];
    }
    if (shortest_steps == 0 || v.steps < shortest_steps) {
      shortest = n;
      shortest_steps = v.steps;
    }
  }

  WARN("pool_reuse_property: " << t.programs << " programs, " << t.steps << " steps, " << t.ops
       << " operations, " << t.uses << " block uses; pool: fresh " << t.pool.fresh_carves
       << ", knowledge " << t.pool.reused_by_knowledge << ", completion "
       << t.pool.reused_by_completion << ", fenced " << t.pool.reused_after_wait << " ("
       << t.pool.waits_issued << " waits), exhausted " << t.pool.failures << ", splits "
       << t.pool.splits << ", merges " << t.pool.merges << ", coalesces " << t.pool.coalesces
       << ", tail returns " << t.pool.tail_returns << " (failures with enough free bytes "
       << t.fragmented_failures << "); fenced blocks freed unused "
       << t.fenced_then_freed << ", tainted death frontiers " << t.tainted_deaths
       << ", hand-offs " << t.handoffs << "; queue waits: reached " << t.elided_reached
       << ", same queue " << t.elided_same_queue << ", dominated " << t.elided_dominated
       << ", device " << t.device_waits << "; operations that never ran " << t.stuck_ops);

  // The generator must reach every path, or the property says little.
  CHECK(t.pool.fresh_carves > 0);
  CHECK(t.pool.reused_by_knowledge > 0);
  CHECK(t.pool.reused_by_completion > 0);
  CHECK(t.pool.reused_after_wait > 0);
  CHECK(t.pool.merges > 0);
  CHECK(t.pool.coalesces > 0);
  CHECK(t.pool.tail_returns > 0);
  CHECK(t.fenced_then_freed > 0);
  CHECK(t.tainted_deaths > 0);
  CHECK(t.elided_dominated > 0);
  CHECK(t.device_waits > 0);

  if (t.failed_programs != 0) {
    totals scratch;
    const verdict v = run_program(shortest, true, scratch);
    FAIL(t.failed_programs
         << " of " << t.programs << " programs failed (unordered uses "
         << t.failures_by_kind[static_cast<std::size_t>(failure_kind::pair)]
         << ": in one lifetime " << t.pair_failures[4]
         << "; in two, the later block acquired via fresh " << t.pair_failures[0]
         << ", knowledge " << t.pair_failures[1] << ", completion " << t.pair_failures[2]
         << ", fenced " << t.pair_failures[3] << "; unsound elisions "
         << t.failures_by_kind[static_cast<std::size_t>(failure_kind::elision)]
         << "; live overlaps "
         << t.failures_by_kind[static_cast<std::size_t>(failure_kind::live_overlap)]
         << "; never ran " << t.failures_by_kind[static_cast<std::size_t>(failure_kind::stuck)]
         << "; refused steps "
         << t.failures_by_kind[static_cast<std::size_t>(failure_kind::harness)]
         << "; misreported fence waits "
         << t.failures_by_kind[static_cast<std::size_t>(failure_kind::misreported_waits)]
         << "; missed coalescing "
         << t.failures_by_kind[static_cast<std::size_t>(failure_kind::missed_coalesce)]
         << ").\nThe shortest, program " << shortest << " (" << kind_name(v.kind)
         << "; replay it with CAUSAL_POOL_PROGRAM=" << shortest
         << " CAUSAL_POOL_PROGRAMS=1):\n"
         << v.report);
  }
}
