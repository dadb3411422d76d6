// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// sim/simulator: runs one scenario (<causal/sim/scenario.hpp>) three ways —
// binary events, plain timeline semaphores, causal frontiers — on the same
// simulated devices, and measures what each synchronisation model costs:
// device waits issued, waits elided, events created, host queries, bytes of
// sync metadata, buffer tracking entries and the simulated makespan.
//
// Model. A discrete-event simulation. One host thread submits the
// operations in file order at host time 0 (submit-before-wait), except
// where `submit_after` makes it wait for an operation to complete; host
// queries cost host time. Each queue is in-order: an operation starts at
// the latest of its submission, the end of the queue's previous operation
// and the ends of the work its device waits name, plus `device_wait` per
// wait issued for it; it ends `duration` later. The three models differ
// only in which waits they issue and what they track:
//
//   binary events  one event per cross-queue dependency edge; a queue
//                  skips a dependency on its own queue (FIFO) or on an
//                  operation it already waited for. Buffers: one event
//                  per use; reuse queries each (a host query) and waits
//                  for those not complete. A collective: every participant
//                  waits for every other part (N(N-1) waits).
//   timelines      one timeline semaphore per queue (value = the queue's
//                  epoch); a queue skips a wait on a timeline it already
//                  waited for at >= the value (single-axis chains).
//                  Buffers: the highest epoch per queue that used it; reuse
//                  queries each (a host query).
//   frontiers      causal::basic_queue over a simulated backend (the
//                  library's own elision tiers), per-queue timeline
//                  semaphores carrying frontiers, basic_block_pool (death
//                  frontiers) with a completion_tracker, and one
//                  basic_collective_channel per participant set.
//
// Remote devices (`"remote": true`): without frontiers, a dependency on
// another device's work must be confirmed with the client before the
// remote scheduler may pipeline the operation: one round trip (a host
// query, `round_trip` of latency) per dependency it has not already
// confirmed. With frontiers the submission's frontier proves it locally.
//
// Every run checks itself: each operation must start after every
// operation it depends on ended, and a reused buffer's first operation
// after the last use of the memory's previous owner; a model that breaks
// that reports a `violation` (the tests require none).
//
// Thread safety: a run is single-threaded and owns everything it creates;
//                distinct runs may proceed concurrently.
// Memory order:  not applicable (one thread).
// Blocking/allocation: tooling: allocates; never blocks.
// Size:          per run, one semaphore (~60 KiB) per queue plus the pool.
// Configuration: run_options (trace, scheduling, frontier_capacity: 4, 8,
//                12, 16 or 32 entries).
// See also:      <causal/queue.hpp>, <causal/semaphore.hpp>,
//                <causal/pool.hpp>, <causal/collective.hpp>,
//                <causal/trace.hpp>, examples/scenarios/README.md,
//                docs/observability.md.
#pragma once

#include <causal/axis.hpp>
#include <causal/collective.hpp>
#include <causal/completion.hpp>
#include <causal/config.hpp>
#include <causal/frontier.hpp>
#include <causal/pool.hpp>
#include <causal/queue.hpp>
#include <causal/result.hpp>
#include <causal/semaphore.hpp>
#include <causal/sim/scenario.hpp>
#include <causal/trace.hpp>
#include <causal/trace_sink.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

CAUSAL_BEGIN_NAMESPACE

namespace sim {

/// The three synchronisation models.
enum class model : std::uint8_t { binary_events, timelines, frontiers };

inline constexpr std::array<model, 3> all_models{model::binary_events, model::timelines,
                                                 model::frontiers};

[[nodiscard]] constexpr std::string_view to_string(model m) noexcept {
  switch (m) {
    case model::binary_events: return "binary events";
    case model::timelines: return "timelines";
    case model::frontiers: return "frontiers";
  }
  return "unknown";
}

/// What one model cost on one scenario.
struct metrics {
  std::uint64_t device_waits = 0;     ///< waits issued to devices
  std::uint64_t waits_elided = 0;     ///< declared dependencies met without a device wait
  std::uint64_t events_created = 0;   ///< binary events only
  std::uint64_t host_queries = 0;     ///< event/semaphore queries, host waits, round trips
  std::uint64_t metadata_bytes = 0;   ///< sync metadata written (see README)
  std::uint64_t tracking_entries = 0; ///< buffer tracking entries over all lifetimes
  std::uint64_t cross_workload_waits = 0;  ///< device waits on another workload's work
  std::uint64_t max_frontier_entries = 0;  ///< frontiers: the largest knowledge seen
  /// frontiers: operations whose knowledge was tainted (an overflow
  /// evicted entries: later waits on them are sound but not elided).
  std::uint64_t tainted_operations = 0;
  double makespan = 0;                ///< end of the last operation
};

/// Why a declared dependency needed no device wait. The sum over the
/// kinds is op_record::waits_elided.
struct elided_counts {
  std::uint64_t same_queue = 0;  ///< every model: the queue's FIFO order (or, frontiers, its own signal)
  std::uint64_t already_waited = 0;  ///< baselines: the queue waited for it (or >= it) before
  std::uint64_t reached = 0;     ///< frontiers tier 0: the value had been reached
  std::uint64_t dominated = 0;   ///< frontiers tier 1: the knowledge covered its producer
  std::uint64_t collective_known = 0;  ///< frontiers: the queue already held the collective's entry
};

/// What happened to one operation.
struct op_record {
  double submit = 0;  ///< host time it was submitted
  double start = 0;   ///< earliest part start
  double end = 0;     ///< latest part end
  std::uint64_t device_waits = 0;  ///< waits issued for it (all parts)
  std::uint64_t waits_elided = 0;
  elided_counts elided{};          ///< waits_elided by reason
  std::uint64_t epoch = 0;         ///< epoch of its (first) part on its queue
  std::size_t queue = 0;           ///< the lane of its (first) part, as placed
};

/// Frontier capacities a run may use (run_options::frontier_capacity).
inline constexpr std::array<std::size_t, 5> frontier_capacities{4, 8, 12, 16, 32};

/// A frontier of any run capacity, as a run result holds it.
using known_frontier = basic_frontier<32>;

/// A run of one model.
struct run_result {
  model which = model::frontiers;
  metrics totals;
  std::vector<op_record> ops;
  /// frontiers: the queue's knowledge right after each operation (its
  /// first part) was submitted: what its signal carries (held at the
  /// widest run capacity, whatever the run's).
  std::vector<known_frontier> knowledge;
  /// frontiers: the axis of each queue.
  std::vector<axis> queue_axes;
  /// frontiers: the first operation (in submission order) whose knowledge
  /// was tainted by an overflow, if any.
  std::optional<std::size_t> first_tainted;
  /// Soundness problems found by the self-check (empty when sound).
  std::vector<std::string> violations;
  /// Set when a library call failed and the run stopped.
  std::optional<std::string> error;
  /// frontiers with run_options::trace: the recorded trace, time-stamped in
  /// simulated time (1 unit = 1 us).
  std::vector<trace_record> trace;
  trace_names names;
};

struct run_options {
  bool trace = false;
  /// How operations get lanes and their order on them (scenario.hpp).
  scheduling how = scheduling::in_order;
  /// Entries a frontier of the frontiers model holds: one of
  /// frontier_capacities (default 12, causal::frontier's). Past it a
  /// frontier evicts and is tainted (metrics::tainted_operations).
  std::size_t frontier_capacity = frontier::capacity;
};

/// The semaphore type of the frontier model: history 8, up to 256
/// submitted signals outstanding per queue.
template <class Frontier>
using basic_sim_semaphore = basic_semaphore<Frontier, 8, 256>;
using sim_semaphore = basic_sim_semaphore<frontier>;

/// Bytes a frontier occupies as sync metadata: 16 per entry plus 8 (k
/// entries of 128 bits each -- axis and epoch -- with a header).
template <class Frontier>
[[nodiscard]] std::uint64_t frontier_bytes(const Frontier& f) noexcept {
  return 8 + 16 * static_cast<std::uint64_t>(f.size());
}

/// Returns whether frontier `f` describes work that has *not* seen
/// verification `rejection` on axis `verify` (speculative past the
/// rejection point). A tainted frontier may have lost the verify entry, so
/// deciding from its absence is refused with errc::failed_precondition.
template <class Frontier>
[[nodiscard]] result<bool> lacks_verification(const Frontier& f, axis verify, std::uint64_t rejection) noexcept {
  if (f.tainted()) {
    return error{errc::failed_precondition,
                 "speculation: a tainted frontier may have lost the verify axis; it cannot tell "
                 "speculative from verified work"};
  }
  return f.epoch_of(verify) < rejection;
}

namespace detail {

template <class Frontier>
class engine;

/// The simulated device under the frontier model's basic_queue.
template <class Frontier>
class sim_backend {
 public:
  using semaphore_type = basic_sim_semaphore<Frontier>;
  using operation_type = std::uint64_t;  ///< the operation's index
  static constexpr bool waits_before_signal = true;

  sim_backend(engine<Frontier>* e, std::size_t queue) noexcept : engine_(e), queue_(queue) {}

  status issue_wait(semaphore_type& s, std::uint64_t v) noexcept { return engine_->on_wait(queue_, s, v); }
  status execute(const operation_type& op, std::uint64_t epoch) noexcept {
    return engine_->on_execute(queue_, op, epoch);
  }
  status issue_signal(semaphore_type&, std::uint64_t) noexcept { return status{}; }
  const char* trace_label(const operation_type& op) const noexcept { return engine_->label(op); }

 private:
  engine<Frontier>* engine_;
  std::size_t queue_;
};

using sim_tracker = basic_completion_tracker<max_queues>;

/// Stamps every event with the simulated clock before recording it.
class sim_trace_sink final : public trace_sink {
 public:
  explicit sim_trace_sink(const double* clock) : clock_(clock) {}
  recording_sink& inner() noexcept { return inner_; }

  void on_queue_submit(const trace_queue_submit& e) noexcept override { inner_.on_queue_submit(stamp(e)); }
  void on_queue_wait(const trace_queue_wait& e) noexcept override { inner_.on_queue_wait(stamp(e)); }
  void on_queue_signal(const trace_queue_signal& e) noexcept override { inner_.on_queue_signal(stamp(e)); }
  void on_queue_deferral(const trace_queue_deferral& e) noexcept override {
    inner_.on_queue_deferral(stamp(e));
  }
  void on_queue_retire(const trace_queue_retire& e) noexcept override { inner_.on_queue_retire(stamp(e)); }
  void on_semaphore_signal(const trace_semaphore_signal& e) noexcept override {
    inner_.on_semaphore_signal(stamp(e));
  }
  void on_semaphore_fail(const trace_semaphore_fail& e) noexcept override {
    inner_.on_semaphore_fail(stamp(e));
  }

 private:
  template <class E>
  E stamp(E e) const noexcept {
    e.time_ns = static_cast<std::uint64_t>(*clock_ * 1000.0 + 0.5);
    return e;
  }
  const double* clock_;
  recording_sink inner_;
};

/// One pending device wait of a queue: when it is met, and for whom.
struct pending_wait {
  double time = 0;
  std::size_t producer = 0;
};

/// Runs one model over one scenario, with frontiers of type Frontier.
template <class Frontier>
class engine {
  using sim_semaphore = basic_sim_semaphore<Frontier>;
  using sim_queue = basic_queue<Frontier, sim_backend<Frontier>>;
  using sim_pool = basic_block_pool<sim_queue, sim_tracker, 4096, 1024>;
  using sim_channel = basic_collective_channel<Frontier, sim_semaphore, max_group_count>;

 public:
  engine(const scenario& s, model m, const run_options& options)
      : s_(s), model_(m), options_(options), n_(s.ops.size()), nq_(s.queues.size()) {
    result_.which = m;
    result_.ops.resize(n_);
    part_end_.resize(n_);
    part_start_.resize(n_);
    part_epoch_.resize(n_);
    lane_end_.assign(nq_, 0.0);
    lane_epoch_.assign(nq_, 0);
    pending_.resize(nq_);
    waited_.resize(nq_);
    memo_.resize(nq_);
    confirmed_.resize(nq_);
    compute_needs();
  }

  run_result run() {
    if (model_ == model::frontiers) {
      if (!setup_frontiers()) return std::move(result_);
    }
    buffer_offset_.assign(s_.buffers.size(), 0);
    buffer_size_.assign(s_.buffers.size(), 0);
    buffer_alloc_seq_.assign(s_.buffers.size(), npos);
    buffer_free_seq_.assign(s_.buffers.size(), npos);
    for (std::size_t i = 0; i < n_ && !result_.error; ++i) submit(i);
    if (!result_.error) finish();
    return std::move(result_);
  }

  // Backend hooks (frontier model).
  status on_wait(std::size_t q, const sim_semaphore& sem, std::uint64_t v) noexcept {
    const auto it = reach_.find(&sem);
    if (it == reach_.end()) return error{errc::failed_precondition, "sim: wait on an unknown semaphore"};
    const auto at = it->second.lower_bound(v);
    if (at == it->second.end()) {
      return error{errc::failed_precondition, "sim: wait on a value nobody signals", v};
    }
    add_wait(q, at->second.first, at->second.second);
    return status{};
  }

  status on_execute(std::size_t q, std::uint64_t op, std::uint64_t epoch) noexcept {
    run_part(q, static_cast<std::size_t>(op), epoch);
    return status{};
  }

  [[nodiscard]] const char* label(std::uint64_t op) const noexcept {
    return op < n_ ? s_.ops[op].name.c_str() : "?";
  }

 private:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  //===-- common ------------------------------------------------------------===//

  void compute_needs() {
    needs_signal_.assign(n_, 0);
    for (std::size_t i = 0; i < n_; ++i) {
      const op_desc& op = s_.ops[i];
      if (!op.free.empty()) needs_signal_[i] = 1;
      if (op.submit_after) needs_signal_[*op.submit_after] = 1;
      for (std::size_t j = 0; j < op.queues.size(); ++j) {
        for (std::size_t d : deps_of(i, j)) {
          if (semaphore_wait_of(i, d) != nullptr) continue;  // waits on the named semaphore
          if (s_.ops[d].queues.size() != 1 || s_.ops[d].queues[0] != op.queues[j]) needs_signal_[d] = 1;
        }
      }
    }
  }

  void fail(std::string what) {
    if (!result_.error) result_.error = std::move(what);
  }

  /// The named-semaphore wait of operation i that dependency d meets (the
  /// highest value when d meets several of one semaphore), or null.
  [[nodiscard]] const semaphore_wait* semaphore_wait_of(std::size_t i, std::size_t d) const {
    const semaphore_wait* found = nullptr;
    for (const semaphore_wait& w : s_.ops[i].waits) {
      if (w.producer == d && (found == nullptr || w.value > found->value)) found = &w;
    }
    return found;
  }

  void add_wait(std::size_t q, double time, std::size_t producer) {
    pending_[q].push_back(pending_wait{time, producer});
    ++result_.totals.device_waits;
    ++result_.ops[cur_].device_waits;
    const std::string& mine = s_.ops[cur_].workload;
    const std::string& theirs = s_.ops[producer].workload;
    if (!mine.empty() && !theirs.empty() && mine != theirs) ++result_.totals.cross_workload_waits;
  }

  void elide(std::uint64_t elided_counts::*why) {
    ++result_.totals.waits_elided;
    ++result_.ops[cur_].waits_elided;
    ++(result_.ops[cur_].elided.*why);
  }

  void host_query(std::uint64_t n = 1) {
    result_.totals.host_queries += n;
    host_time_ += s_.costs.host_query * static_cast<double>(n);
  }

  [[nodiscard]] std::size_t part_index(std::size_t op, std::size_t q) const {
    const auto& qs = s_.ops[op].queues;
    return static_cast<std::size_t>(std::find(qs.begin(), qs.end(), q) - qs.begin());
  }

  /// Starts and times part `q` of operation `op` (its pending waits apply).
  void run_part(std::size_t q, std::size_t op, std::uint64_t epoch) {
    double t = std::max(ready_, lane_end_[q]);
    for (const pending_wait& w : pending_[q]) t = std::max(t, w.time);
    t += s_.costs.device_wait * static_cast<double>(pending_[q].size());
    pending_[q].clear();
    const double end = t + s_.ops[op].duration;
    lane_end_[q] = end;
    const std::size_t j = part_index(op, q);
    part_start_[op][j] = t;
    part_end_[op][j] = end;
    part_epoch_[op][j] = epoch;
  }

  /// The host submits operation i.
  void submit(std::size_t i) {
    cur_ = i;
    const op_desc& op = s_.ops[i];
    part_start_[i].assign(op.queues.size(), 0);
    part_end_[i].assign(op.queues.size(), 0);
    part_epoch_[i].assign(op.queues.size(), 0);
    if (op.submit_after) {
      // The host waits for the operation (one query: an event or semaphore wait).
      host_time_ = std::max(host_time_, result_.ops[*op.submit_after].end);
      host_query();
    }
    advance_to(host_time_);
    for (std::size_t b : op.alloc) {
      allocate(b, op.queues.front());
      if (result_.error) return;
    }
    ready_ = host_time_;
    result_.ops[i].submit = host_time_;
    switch (model_) {
      case model::binary_events:
      case model::timelines: submit_baseline(i); break;
      case model::frontiers: submit_frontiers(i); break;
    }
    if (result_.error) return;
    op_record& r = result_.ops[i];
    r.start = *std::min_element(part_start_[i].begin(), part_start_[i].end());
    r.end = *std::max_element(part_end_[i].begin(), part_end_[i].end());
    r.epoch = part_epoch_[i].front();
    r.queue = op.queues.front();
    result_.totals.makespan = std::max(result_.totals.makespan, r.end);
    for (std::size_t b : op.free) release(b, op.queues.front());
  }

  /// The dependencies of part `j` of operation `i`.
  [[nodiscard]] const std::vector<std::size_t>& deps_of(std::size_t i, std::size_t j) const {
    const op_desc& op = s_.ops[i];
    return op.part_after.empty() ? op.after : op.part_after[j];
  }

  /// The ends of the parts of dependency d, with their queues and epochs.
  struct part_ref {
    std::size_t queue;
    std::uint64_t epoch;
    double end;
  };
  [[nodiscard]] std::vector<part_ref> parts_of(std::size_t d) const {
    std::vector<part_ref> out;
    const auto& qs = s_.ops[d].queues;
    for (std::size_t j = 0; j < qs.size(); ++j) out.push_back(part_ref{qs[j], part_epoch_[d][j], part_end_[d][j]});
    return out;
  }

  /// Remote devices without frontiers: confirm each cross-device
  /// dependency with the client (a round trip) before pipelining.
  void remote_round_trips(std::size_t i, std::size_t j) {
    const std::size_t q = s_.ops[i].queues[j];
    const device_desc& dev = s_.devices[s_.queues[q].device];
    if (!dev.remote) return;
    for (std::size_t d : deps_of(i, j)) {
      for (const part_ref& p : parts_of(d)) {
        if (s_.queues[p.queue].device == s_.queues[q].device) continue;
        if (!confirmed_[q].insert(d).second) continue;
        ++result_.totals.host_queries;
        ready_ = std::max(ready_, p.end + s_.costs.round_trip);
      }
    }
  }

  //===-- binary events and timelines ---------------------------------------===//

  void submit_baseline(std::size_t i) {
    const op_desc& op = s_.ops[i];
    const double ready = ready_;
    for (std::size_t j = 0; j < op.queues.size(); ++j) {
      const std::size_t q = op.queues[j];
      ready_ = ready;
      remote_round_trips(i, j);
      for (std::size_t d : deps_of(i, j)) {
        for (const part_ref& p : parts_of(d)) baseline_dependency(q, d, p, semaphore_wait_of(i, d));
      }
      run_part(q, i, ++lane_epoch_[q]);
      if (model_ == model::timelines && (needs_signal_[i] || !op.use.empty() || op.collective)) {
        result_.totals.metadata_bytes += 8;  // the signalled value
      }
      if (model_ == model::timelines) {
        result_.totals.metadata_bytes += 8 * op.signals.size();  // named semaphores' values
      }
    }
    if (op.collective) {
      // All-reduce: every participant's next operation waits for every other part.
      for (std::size_t q : op.queues) {
        for (const part_ref& p : parts_of(i)) {
          if (p.queue != q) baseline_dependency(q, i, p);
        }
      }
    }
  }

  void baseline_dependency(std::size_t q, std::size_t d, const part_ref& p,
                           const semaphore_wait* via = nullptr) {
    if (p.queue == q) {
      elide(&elided_counts::same_queue);  // FIFO
      return;
    }
    if (model_ == model::binary_events) {
      if (!waited_[q].insert({d, p.queue}).second) {
        elide(&elided_counts::already_waited);  // this queue already waited for that operation
        return;
      }
      ++result_.totals.events_created;
      result_.totals.metadata_bytes += 8;  // the event handle
      add_wait(q, p.end, d);
      return;
    }
    // A named semaphore is a timeline of its own (keys past the queues').
    const std::size_t timeline = via != nullptr ? nq_ + via->semaphore : p.queue;
    const std::uint64_t value = via != nullptr ? via->value : p.epoch;
    std::uint64_t& seen = memo_[q][timeline];
    if (seen >= value) {
      elide(&elided_counts::already_waited);  // already waited on that timeline at >= the value
      return;
    }
    seen = value;
    add_wait(q, p.end, d);
  }

  //===-- frontiers ---------------------------------------------------------===//

  bool setup_frontiers() {
    tracker_ = std::make_unique<sim_tracker>();
    if (options_.trace) sink_ = std::make_unique<sim_trace_sink>(&clock_);
    for (std::size_t q = 0; q < nq_; ++q) {
      const auto a = make_axis(0, 0, domain::queue, q + 1);
      if (!a) {
        fail("sim: cannot make a queue axis");
        return false;
      }
      result_.queue_axes.push_back(*a);
      queues_.push_back(std::make_unique<sim_queue>(*a, this, q));
      lane_sems_.push_back(std::make_unique<sim_semaphore>(0, semaphore_scope::device_group));
      reach_[lane_sems_.back().get()];
      if (!tracker_->register_axis(*a)) {
        fail("sim: cannot register a queue axis with the completion tracker");
        return false;
      }
      queues_.back()->track_completion(*tracker_);
      if (sink_) {
        queues_.back()->set_trace_sink(sink_.get());
        lane_sems_.back()->set_trace_sink(sink_.get());
        sink_->inner().name(*a, s_.queues[q].name);
        sink_->inner().name(lane_sems_.back().get(), s_.queues[q].name + " timeline");
      }
    }
    for (const semaphore_desc& m : s_.semaphores) {
      named_sems_.push_back(std::make_unique<sim_semaphore>(0, semaphore_scope::device_group));
      reach_[named_sems_.back().get()];
      if (sink_) {
        named_sems_.back()->set_trace_sink(sink_.get());
        sink_->inner().name(named_sems_.back().get(), m.name);
      }
    }
    named_outstanding_.assign(s_.semaphores.size(), 0);
    outstanding_.assign(nq_, 0);
    pool_ = std::make_unique<sim_pool>(s_.pool_bytes, 1, tracker_.get());
    registered_.assign(nq_, 0);
    result_.knowledge.resize(n_);
    return true;
  }

  /// The index of the channel of this participant set (made on first use).
  std::size_t channel_for(const std::vector<std::size_t>& queues) {
    std::vector<std::size_t> key = queues;
    std::sort(key.begin(), key.end());
    const auto it = channel_index_.find(key);
    if (it != channel_index_.end()) return it->second;
    const auto a = make_axis(0, 0, domain::collective, channels_.size() + 1);
    channels_.push_back(std::make_unique<sim_channel>(a.value(), queues.size()));
    channel_k_.push_back(0);
    channel_index_[key] = channels_.size() - 1;
    sim_channel& c = *channels_.back();
    reach_[&c.semaphore()];
    if (sink_) {
      c.semaphore().set_trace_sink(sink_.get());
      std::string name = "collective";
      for (std::size_t q : queues) name += " " + s_.queues[q].name;
      sink_->inner().name(&c.semaphore(), name);
    }
    return channels_.size() - 1;
  }

  void submit_frontiers(std::size_t i) {
    const op_desc& op = s_.ops[i];
    using wait_t = typename sim_queue::wait_type;
    using signal_t = typename sim_queue::signal_type;
    std::vector<Frontier> contributions;
    for (std::size_t pj = 0; pj < op.queues.size(); ++pj) {
      const std::size_t q = op.queues[pj];
      sim_queue& queue = *queues_[q];
      std::vector<wait_t> waits;
      for (std::size_t d : deps_of(i, pj)) {
        if (s_.ops[d].collective) {
          // join_collective: one entry (C, k), one device wait unless the
          // queue already holds it (it joined, or learnt it transitively).
          const auto c = collective_of_.find(d);
          sim_channel& ch = *channels_[c->second.first];
          const std::uint64_t k = c->second.second;
          if (queue.knowledge().epoch_of(ch.axis()) >= k) {
            elide(&elided_counts::collective_known);
          } else {
            if (ch.semaphore().value() < k) {
              if (status st = queue.backend().issue_wait(ch.semaphore(), k); !st) {
                fail("frontiers: joining a collective: " + std::string(st.error_value().message()));
                return;
              }
            } else {
              elide(&elided_counts::reached);  // reached: nothing to wait for
            }
            queue.learn(ch.entry_of(k));
          }
          continue;
        }
        const std::size_t dq = s_.ops[d].queues.front();
        if (dq == q) {
          elide(&elided_counts::same_queue);  // FIFO: no wait at all
          continue;
        }
        if (const semaphore_wait* w = semaphore_wait_of(i, d)) {
          waits.push_back(wait_t{named_sems_[w->semaphore].get(), w->value});
          continue;
        }
        waits.push_back(wait_t{lane_sems_[dq].get(), part_epoch_[d].front()});
      }
      // The named semaphores first, the lane timeline last: a device
      // reaches them in this order (process_one), and only the last
      // carries the operation's own entry (queue.hpp, "Signals of one
      // operation"); most dependants wait on the lane.
      std::vector<signal_t> signals;
      const std::uint64_t next_epoch = queue.epoch() + 1;
      const bool signal = needs_signal_[i] && !op.collective;
      for (const semaphore_signal& sv : op.signals) {
        throttle(named_outstanding_[sv.semaphore]);
        signals.push_back(signal_t{named_sems_[sv.semaphore].get(), sv.value});
      }
      if (signal) {
        throttle(outstanding_[q]);
        signals.push_back(signal_t{lane_sems_[q].get(), next_epoch});
      }
      const queue_stats before = queue.stats();
      clock_ = ready_;
      const auto r = queue.submit(std::span<const wait_t>(waits), std::span<const signal_t>(signals),
                                  static_cast<std::uint64_t>(i));
      if (!r) {
        fail("frontiers: submit of \"" + op.name + "\" failed: " + std::string(r.error_value().message()));
        return;
      }
      const queue_stats after = queue.stats();
      const std::uint64_t elided = after.waits_elided() - before.waits_elided();
      result_.totals.waits_elided += elided;
      op_record& rec = result_.ops[i];
      rec.waits_elided += elided;
      rec.elided.reached += after.elided_reached - before.elided_reached;
      rec.elided.same_queue += after.elided_same_queue - before.elided_same_queue;
      rec.elided.dominated += after.elided_dominated - before.elided_dominated;
      const std::size_t j = part_index(i, q);
      result_.totals.max_frontier_entries =
          std::max<std::uint64_t>(result_.totals.max_frontier_entries, queue.knowledge().size());
      if (j == 0) {
        known_frontier& known = result_.knowledge[i];
        known.clear();
        (void)known.merge(queue.knowledge());
        if (queue.knowledge().tainted()) {
          ++result_.totals.tainted_operations;
          if (!result_.first_tainted) result_.first_tainted = i;
        }
      }
      contributions.push_back(queue.knowledge());
      if (signal) {
        result_.totals.metadata_bytes += frontier_bytes(queue.knowledge());
        reach_[lane_sems_[q].get()][r->epoch] = {part_end_[i][j], i};
        ++outstanding_[q];
      }
      for (const semaphore_signal& sv : op.signals) {
        result_.totals.metadata_bytes += frontier_bytes(queue.knowledge());
        reach_[named_sems_[sv.semaphore].get()][sv.value] = {part_end_[i][j], i};
        ++named_outstanding_[sv.semaphore];
      }
      schedule(event{part_end_[i][j], seq_++, event_kind::done, q, r->epoch, i, signal});
    }
    if (op.collective) collective(i, contributions);
  }

  /// A collective: announce the channel's signal, schedule the arrivals,
  /// and join every participant to it (one device wait each, one entry).
  void collective(std::size_t i, const std::vector<Frontier>& contributions) {
    const op_desc& op = s_.ops[i];
    const std::size_t ci = channel_for(op.queues);
    sim_channel& c = *channels_[ci];
    const std::uint64_t k = ++channel_k_[ci];
    collective_of_[i] = {ci, k};
    Frontier joined;
    for (const Frontier& f : contributions) joined.merge(f, c.axis());
    joined.insert_or_raise(c.axis(), k);
    if (status st = c.announce(k, joined); !st) {
      fail("frontiers: collective \"" + op.name + "\": " + std::string(st.error_value().message()));
      return;
    }
    result_.totals.metadata_bytes += frontier_bytes(joined);
    const double done = *std::max_element(part_end_[i].begin(), part_end_[i].end());
    reach_[&c.semaphore()][k] = {done, i};
    for (std::size_t j = 0; j < op.queues.size(); ++j) {
      arrivals_.push_back(arrival{ci, j, k, contributions[j]});
      schedule(event{part_end_[i][j], seq_++, event_kind::arrive, 0, 0, arrivals_.size() - 1, false});
    }
    for (std::size_t q : op.queues) {
      // join_collective's two steps; done by hand because collective k may
      // be submitted before k - 1 has completed (in_progress() < k).
      if (c.semaphore().value() < k) {
        if (status st = queues_[q]->backend().issue_wait(c.semaphore(), k); !st) {
          fail("frontiers: joining \"" + op.name + "\": " + std::string(st.error_value().message()));
          return;
        }
      }
      queues_[q]->learn(c.entry_of(k));
    }
  }

  /// Keeps a semaphore's submitted-but-unreached signals (`outstanding`:
  /// a queue's or a named semaphore's count) within PendingCapacity: the
  /// host waits for the oldest.
  void throttle(const std::size_t& outstanding) {
    if (outstanding < sim_semaphore::pending_capacity) return;
    ++result_.totals.host_queries;
    while (outstanding >= sim_semaphore::pending_capacity && !events_.empty()) {
      host_time_ = std::max(host_time_, events_.top().time);
      process_one();
    }
    ready_ = std::max(ready_, host_time_);
  }

  //===-- buffers -----------------------------------------------------------===//

  struct baseline_block {
    std::size_t offset = 0;
    std::size_t size = 0;
    std::vector<std::pair<std::size_t, std::uint64_t>> tracked;  // (queue, epoch) or (use op, 0)
    std::vector<std::size_t> owners;  // buffers that lived here
  };

  void allocate(std::size_t b, std::size_t q) {
    const std::size_t bytes = s_.buffers[b].bytes;
    buffer_alloc_seq_[b] = cur_;
    if (model_ == model::frontiers) {
      for (;;) {
        auto r = pool_->acquire(*queues_[q], bytes);
        if (r) {
          buffer_offset_[b] = r->offset;
          buffer_size_[b] = r->size;
          frontier_blocks_[b] = *r;
          return;
        }
        if (r.error_value().code() != errc::resource_exhausted || events_.empty()) {
          fail("frontiers: buffer \"" + s_.buffers[b].name + "\" does not fit the pool: " +
               std::string(r.error_value().message()));
          return;
        }
        // Nothing reusable yet: the host waits for the next completion.
        ++result_.totals.host_queries;
        host_time_ = std::max(host_time_, events_.top().time);
        process_one();
      }
    }
    // Baselines: the smallest free block that fits, else fresh space.
    std::size_t best = npos;
    for (std::size_t k = 0; k < free_blocks_.size(); ++k) {
      if (free_blocks_[k].size >= bytes && (best == npos || free_blocks_[k].size < free_blocks_[best].size)) {
        best = k;
      }
    }
    if (best == npos) {
      if (s_.pool_bytes - carved_ < bytes) {
        fail(std::string(to_string(model_)) + ": buffer \"" + s_.buffers[b].name +
             "\" does not fit the pool");
        return;
      }
      buffer_offset_[b] = carved_;
      buffer_size_[b] = bytes;
      carved_ += bytes;
      return;
    }
    baseline_block blk = std::move(free_blocks_[best]);
    free_blocks_.erase(free_blocks_.begin() + static_cast<std::ptrdiff_t>(best));
    buffer_offset_[b] = blk.offset;
    buffer_size_[b] = blk.size;
    for (const auto& [first, second] : blk.tracked) {
      if (model_ == model::binary_events) {
        const std::size_t use = first;
        if (s_.ops[use].queues.front() == q) continue;  // same stream: FIFO
        host_query();
        if (result_.ops[use].end > host_time_) add_wait(q, result_.ops[use].end, use);
      } else {
        const std::size_t tq = first;
        if (tq == q) continue;
        host_query();
        const auto [end, producer] = lane_time(tq, second);
        if (end > host_time_ && (memo_[q][tq] < second)) {
          memo_[q][tq] = second;
          add_wait(q, end, producer);
        }
      }
    }
  }

  /// The end of the operation at `epoch` on queue q (baseline models).
  [[nodiscard]] std::pair<double, std::size_t> lane_time(std::size_t q, std::uint64_t epoch) const {
    for (std::size_t i = 0; i <= cur_ && i < n_; ++i) {
      const auto& qs = s_.ops[i].queues;
      for (std::size_t j = 0; j < qs.size(); ++j) {
        if (qs[j] == q && part_epoch_[i][j] == epoch) return {part_end_[i][j], i};
      }
    }
    return {0.0, 0};
  }

  void release(std::size_t b, std::size_t q) {
    buffer_free_seq_[b] = cur_;
    std::vector<std::size_t> uses;
    for (std::size_t i = buffer_alloc_seq_[b]; i <= cur_; ++i) {
      const op_desc& op = s_.ops[i];
      const bool touches = std::find(op.use.begin(), op.use.end(), b) != op.use.end() ||
                           std::find(op.free.begin(), op.free.end(), b) != op.free.end();
      if (touches) uses.push_back(i);
    }
    if (model_ == model::frontiers) {
      if (!registered_[q]) {
        if (pool_->register_timeline(result_.queue_axes[q], *lane_sems_[q])) registered_[q] = 1;
      }
      if (status st = pool_->release(frontier_blocks_[b], *queues_[q]); !st) {
        fail("frontiers: release of \"" + s_.buffers[b].name + "\": " + std::string(st.error_value().message()));
        return;
      }
      ++result_.totals.tracking_entries;  // one death frontier
      result_.totals.metadata_bytes += frontier_bytes(queues_[q]->knowledge());
      return;
    }
    baseline_block blk;
    blk.offset = buffer_offset_[b];
    blk.size = buffer_size_[b];
    if (model_ == model::binary_events) {
      for (std::size_t u : uses) {
        blk.tracked.push_back({u, 0});  // one event recorded after each use
        ++result_.totals.events_created;
      }
      result_.totals.metadata_bytes += 16 * uses.size();  // event + the tracking entry
    } else {
      std::map<std::size_t, std::uint64_t> highest;
      for (std::size_t u : uses) {
        for (std::size_t j = 0; j < s_.ops[u].queues.size(); ++j) {
          std::uint64_t& e = highest[s_.ops[u].queues[j]];
          e = std::max(e, part_epoch_[u][j]);
        }
      }
      for (const auto& [tq, e] : highest) blk.tracked.push_back({tq, e});
      result_.totals.metadata_bytes += 16 * highest.size();  // (semaphore, value)
    }
    result_.totals.tracking_entries += blk.tracked.size();
    free_blocks_.push_back(std::move(blk));
  }

  //===-- the device side ---------------------------------------------------===//

  enum class event_kind : std::uint8_t { done, arrive };
  struct event {
    double time;
    std::uint64_t seq;
    event_kind kind;
    std::size_t queue;
    std::uint64_t epoch;
    std::size_t index;  ///< done: the operation; arrive: the arrival
    bool signal;
    bool operator>(const event& o) const noexcept {
      return time != o.time ? time > o.time : seq > o.seq;
    }
  };
  struct arrival {
    std::size_t channel;
    std::size_t participant;
    std::uint64_t k;
    Frontier contribution;
  };

  void schedule(const event& e) { events_.push(e); }

  void process_one() {
    const event e = events_.top();
    events_.pop();
    clock_ = e.time;
    if (e.kind == event_kind::done) {
      // In submission order: the named semaphores, then the lane.
      for (const semaphore_signal& sv : s_.ops[e.index].signals) {
        if (status st = named_sems_[sv.semaphore]->device_signal(sv.value); !st) {
          fail("frontiers: signal of semaphore \"" + s_.semaphores[sv.semaphore].name +
               "\" failed: " + std::string(st.error_value().message()));
        }
        --named_outstanding_[sv.semaphore];
      }
      if (e.signal) {
        if (status st = lane_sems_[e.queue]->device_signal(e.epoch); !st) {
          fail("frontiers: device signal failed: " + std::string(st.error_value().message()));
        }
        --outstanding_[e.queue];
      }
      queues_[e.queue]->retire(e.epoch);
      return;
    }
    const arrival& a = arrivals_[e.index];
    if (auto r = channels_[a.channel]->arrive(a.participant, a.k, a.contribution); !r) {
      fail("frontiers: collective arrival failed: " + std::string(r.error_value().message()));
    }
  }

  void advance_to(double t) {
    if (model_ != model::frontiers) return;
    while (!events_.empty() && events_.top().time <= t && !result_.error) process_one();
  }

  //===-- the self-check ----------------------------------------------------===//

  void finish() {
    if (model_ == model::frontiers) {
      advance_to(std::numeric_limits<double>::infinity());
      if (sink_) {
        result_.trace = sink_->inner().events();
        result_.names = sink_->inner().names();
      }
    }
    constexpr double slack = 1e-9;
    for (std::size_t i = 0; i < n_; ++i) {
      const op_desc& op = s_.ops[i];
      for (std::size_t j = 0; j < op.queues.size(); ++j) {
        for (std::size_t d : deps_of(i, j)) {
          const double end = *std::max_element(part_end_[d].begin(), part_end_[d].end());
          // A collective's dependants wait for the whole collective; its own
          // parts wait only for their dependencies.
          if (part_start_[i][j] + slack < end) {
            result_.violations.push_back("\"" + op.name + "\" started at " + std::to_string(part_start_[i][j]) +
                                         " before its dependency \"" + s_.ops[d].name + "\" ended at " +
                                         std::to_string(end));
          }
        }
      }
    }
    // Buffers: the first operation of a buffer must start after every use
    // of each earlier buffer that held overlapping memory.
    for (std::size_t b = 0; b < s_.buffers.size(); ++b) {
      if (buffer_alloc_seq_[b] == npos) continue;
      const std::size_t a = buffer_alloc_seq_[b];
      for (std::size_t p = 0; p < s_.buffers.size(); ++p) {
        if (p == b || buffer_free_seq_[p] == npos || buffer_free_seq_[p] >= a) continue;
        const bool overlap = buffer_offset_[p] < buffer_offset_[b] + buffer_size_[b] &&
                             buffer_offset_[b] < buffer_offset_[p] + buffer_size_[p];
        if (!overlap) continue;
        double last = 0;
        for (std::size_t u = buffer_alloc_seq_[p]; u <= buffer_free_seq_[p]; ++u) {
          const op_desc& o = s_.ops[u];
          const bool touches = std::find(o.use.begin(), o.use.end(), p) != o.use.end() ||
                               std::find(o.free.begin(), o.free.end(), p) != o.free.end();
          if (touches) last = std::max(last, result_.ops[u].end);
        }
        if (part_start_[a].front() + slack < last) {
          result_.violations.push_back("buffer \"" + s_.buffers[b].name + "\" reused the memory of \"" +
                                       s_.buffers[p].name + "\" before its last use ended");
        }
      }
    }
  }

  const scenario& s_;
  const model model_;
  const run_options options_;
  const std::size_t n_;
  const std::size_t nq_;
  run_result result_;

  std::size_t cur_ = 0;
  double host_time_ = 0;
  double ready_ = 0;
  double clock_ = 0;
  std::vector<double> lane_end_;
  std::vector<std::uint64_t> lane_epoch_;
  std::vector<std::vector<pending_wait>> pending_;
  std::vector<std::vector<double>> part_start_;
  std::vector<std::vector<double>> part_end_;
  std::vector<std::vector<std::uint64_t>> part_epoch_;
  std::vector<char> needs_signal_;

  // Baselines.
  std::vector<std::set<std::pair<std::size_t, std::size_t>>> waited_;
  std::vector<std::map<std::size_t, std::uint64_t>> memo_;
  std::vector<std::set<std::size_t>> confirmed_;
  std::vector<baseline_block> free_blocks_;
  std::size_t carved_ = 0;

  // Buffers (all models).
  std::vector<std::size_t> buffer_offset_;
  std::vector<std::size_t> buffer_size_;
  std::vector<std::size_t> buffer_alloc_seq_;
  std::vector<std::size_t> buffer_free_seq_;

  // Frontiers.
  std::unique_ptr<sim_tracker> tracker_;
  std::unique_ptr<sim_trace_sink> sink_;
  std::vector<std::unique_ptr<sim_queue>> queues_;
  std::vector<std::unique_ptr<sim_semaphore>> lane_sems_;
  std::vector<std::unique_ptr<sim_semaphore>> named_sems_;
  std::vector<std::size_t> named_outstanding_;
  std::vector<std::unique_ptr<sim_channel>> channels_;
  std::vector<std::uint64_t> channel_k_;
  std::map<std::vector<std::size_t>, std::size_t> channel_index_;
  std::map<std::size_t, std::pair<std::size_t, std::uint64_t>> collective_of_;
  std::vector<arrival> arrivals_;
  std::map<const sim_semaphore*, std::map<std::uint64_t, std::pair<double, std::size_t>>> reach_;
  std::unique_ptr<sim_pool> pool_;
  std::map<std::size_t, pool_block> frontier_blocks_;
  std::vector<char> registered_;
  std::vector<std::size_t> outstanding_;
  std::priority_queue<event, std::vector<event>, std::greater<event>> events_;
  std::uint64_t seq_ = 0;
};


}  // namespace detail

/// Runs `s` under model `m`, placed by options.how (place()): the
/// records are indexed like s.ops whatever the submission order, and each
/// names the lane its operation got. A placement failure is the result's
/// error. Tooling: allocates; may throw std::bad_alloc.
namespace detail {

/// Runs the engine whose frontier capacity is options.frontier_capacity.
inline run_result run_placed(const scenario& s, model m, const run_options& options) {
  switch (options.frontier_capacity) {
    case 4: return engine<basic_frontier<4>>(s, m, options).run();
    case 8: return engine<basic_frontier<8>>(s, m, options).run();
    case 12: return engine<basic_frontier<12>>(s, m, options).run();
    case 16: return engine<basic_frontier<16>>(s, m, options).run();
    case 32: return engine<basic_frontier<32>>(s, m, options).run();
    default: break;
  }
  run_result failed;
  failed.which = m;
  failed.error = "run_options::frontier_capacity must be one of 4, 8, 12, 16, 32 (got " +
                 std::to_string(options.frontier_capacity) + ")";
  return failed;
}

}  // namespace detail

[[nodiscard]] inline run_result run(const scenario& s, model m, const run_options& options = {}) {
  const bool placed_already =
      options.how == scheduling::in_order &&
      std::none_of(s.ops.begin(), s.ops.end(), [](const op_desc& op) { return op.queues.empty(); });
  if (placed_already) return detail::run_placed(s, m, options);
  parsed<placement> p = place(s, options.how);
  if (!p) {
    run_result failed;
    failed.which = m;
    failed.error = p.error().message;
    return failed;
  }
  run_result r = detail::run_placed(p->placed, m, options);
  // Back to the file's indexing (the trace keeps the placed order).
  const std::vector<std::size_t>& pos = p->position;
  std::vector<op_record> ops(s.ops.size());
  std::vector<known_frontier> knowledge(r.knowledge.empty() ? 0 : s.ops.size());
  for (std::size_t i = 0; i < s.ops.size() && pos[i] < r.ops.size(); ++i) {
    ops[i] = r.ops[pos[i]];
    if (!knowledge.empty()) knowledge[i] = r.knowledge[pos[i]];
  }
  r.ops = std::move(ops);
  r.knowledge = std::move(knowledge);
  if (r.first_tainted) {
    const std::size_t placed = *r.first_tainted;
    for (std::size_t i = 0; i < s.ops.size(); ++i) {
      if (pos[i] == placed) r.first_tainted = i;
    }
  }
  return r;
}

/// What the speculation analysis decided on a frontier-model run.
struct speculation_report {
  /// The operations to cancel: speculative past the rejection point.
  std::vector<std::size_t> cancel;
  /// Set when a tainted frontier refused to make the call (the first one).
  std::optional<std::size_t> refused_at;
  std::string refusal;
};

/// Cancels exactly the work whose frontier holds draft work at or past the
/// first rejected draft operation but lacks the verify axis at the
/// rejecting verification: it ran ahead on rejected tokens without seeing
/// the rejection. A tainted frontier refuses (see lacks_verification).
/// Precondition: `r` is a frontiers run of `s`, and s.speculation is set.
[[nodiscard]] inline speculation_report analyze_speculation(const scenario& s, const run_result& r) {
  speculation_report out;
  const speculation_desc& spec = *s.speculation;
  const axis draft = r.queue_axes[spec.draft_queue];
  const axis verify = r.queue_axes[spec.verify_queue];
  const std::uint64_t reject_from = r.ops[spec.reject_from].epoch;
  const std::uint64_t rejection = r.ops[spec.rejecting_op].epoch;
  for (std::size_t i = 0; i < s.ops.size(); ++i) {
    const known_frontier& f = r.knowledge[i];
    if (f.epoch_of(draft) < reject_from && !f.tainted()) continue;  // no rejected draft work in its past
    const result<bool> lacks = lacks_verification(f, verify, rejection);
    if (!lacks) {
      out.refused_at = i;
      out.refusal = std::string(lacks.error_value().message());
      out.cancel.clear();
      return out;
    }
    if (*lacks) out.cancel.push_back(i);
  }
  return out;
}

}  // namespace sim

CAUSAL_END_NAMESPACE
