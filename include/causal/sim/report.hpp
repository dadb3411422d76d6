// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// sim/report: writes the runs of the scenario simulator as one
// machine-readable JSON document and as one self-contained HTML page
// (lanes-over-time charts of every model, waits drawn as arrows, the
// frontier each operation carries, and the suite's summary table).
//
// Model. A report is a list of `report_item`s, one per scenario (after
// scaling): the scenario and its runs, normally one per model
// (<causal/sim/simulator.hpp>). Both writers draw on the same derived
// data, chiefly the *edges*: one per (dependency, consumer) pair of the
// scenario's `after` lists, classified `issued` when the model issued at
// least one device wait for it and `elided` otherwise, with the reason.
// `classify_edges` derives them, because a run records counts per
// operation, not a decision per edge. It works on the scenario as the runs
// submitted it (placed by place() for lane classes or ready-first
// scheduling, as run() does) and reports in the file's indexing:
//   binary events, timelines  replayed: the models' rules (skip the own
//       queue; skip an operation, or a timeline value, the queue already
//       waited for) are re-applied in submission order, collectives'
//       all-to-all waits and named semaphores included. Then the replay
//       must match the run's `already_waited` count per operation: a
//       timeline wait issued for a buffer's reuse also raises what the
//       queue has seen, unknown to the replay. Where the counts differ,
//       the fewest pairs flip (surplus issued ones with the earliest
//       producers become elided, or the reverse) and the operation's edges
//       are marked inexact.
//   frontiers  read from the run's trace (run_options::trace): every wait
//       the queue classified is recorded with its index and tier. Waits on
//       the own queue never reach the queue (FIFO: same_queue). Joins of a
//       collective are decided outside the queue; they are assigned from
//       the operation's collective_known / reached counts, exact whenever
//       the counts leave one choice. Without a trace the cross-queue
//       waits are assigned from the counts in dependency order (inexact).
// Every edge says whether it is exact.
//
// The JSON document's schema is in examples/scenarios/README.md. The HTML
// page needs no network: CSS, script and SVG are inline, the data is the
// JSON document embedded in a script element. Every operation is one
// `<rect class="op" data-scenario data-model data-op>` (a collective's
// other parts are `rect.part`), every edge one `<path class="wait issued">`
// or `<path class="wait elided">`, and the summary table
// `<table id="summary">` has one body row per scenario.
//
// Thread safety: the writers only read their inputs; distinct calls may
//                proceed concurrently.
// Memory order:  not applicable (no atomics).
// Blocking/allocation: tooling: allocates freely and writes to the given
//                stream; never blocks otherwise.
// Size:          the HTML page is about 1 KiB per operation and model, half
//                of it the embedded JSON document (7.5 MB for the shipped
//                suite at --width 4 --depth 4: 2,832 operations).
// Configuration: report_info (generator name, settings shown and written).
// See also:      <causal/sim/simulator.hpp>, <causal/sim/scenario.hpp>,
//                examples/11_scenarios.cpp, examples/scenarios/README.md.
#pragma once

#include <causal/config.hpp>
#include <causal/frontier.hpp>
#include <causal/sim/scenario.hpp>
#include <causal/sim/simulator.hpp>
#include <causal/trace.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

CAUSAL_BEGIN_NAMESPACE

namespace sim {

/// What a model did for one (dependency, consumer) edge.
enum class wait_decision : std::uint8_t {
  issued,          ///< at least one device wait was issued for it
  same_queue,      ///< the queue's FIFO order (or, frontiers, its own signal)
  already_waited,  ///< baselines: the queue waited for it (or >= it) before
  reached,         ///< frontiers: the value had been reached
  dominated,       ///< frontiers: the queue's knowledge covered the producer
  collective_known,  ///< frontiers: the queue already held the collective's entry
};

/// Returns the decision's name as the JSON document spells it.
[[nodiscard]] constexpr std::string_view to_string(wait_decision d) noexcept {
  switch (d) {
    case wait_decision::issued: return "issued";
    case wait_decision::same_queue: return "same_queue";
    case wait_decision::already_waited: return "already_waited";
    case wait_decision::reached: return "reached";
    case wait_decision::dominated: return "dominated";
    case wait_decision::collective_known: return "collective_known";
  }
  return "unknown";
}

/// Returns the model's identifier ("binary_events", "timelines",
/// "frontiers"), used as a JSON value and an HTML attribute.
[[nodiscard]] constexpr std::string_view key_of(model m) noexcept {
  switch (m) {
    case model::binary_events: return "binary_events";
    case model::timelines: return "timelines";
    case model::frontiers: return "frontiers";
  }
  return "unknown";
}

/// One (dependency, consumer) edge and what the model did for it.
struct edge_record {
  std::size_t producer = 0;  ///< the dependency (an operation index)
  std::size_t consumer = 0;  ///< the operation whose `after` names it
  wait_decision decision = wait_decision::issued;
  /// False when the decision was assigned from per-operation counts
  /// rather than replayed or read from the trace (see the file comment).
  bool exact = true;

  [[nodiscard]] bool issued() const noexcept { return decision == wait_decision::issued; }
};

/// One scenario (after scaling) and its runs, one per model.
struct report_item {
  scenario input;
  std::vector<run_result> runs;
  /// How the runs placed the operations (run_options::how).
  scheduling how = scheduling::in_order;
};

/// What the report says about the invocation that made it.
struct report_info {
  /// The program that wrote it ("generator" in the JSON document).
  std::string generator = "causal::sim";
  /// Settings worth recording (name, value), written as strings.
  std::vector<std::pair<std::string, std::string>> settings;
};

//===-- JSON text ------------------------------------------------------------===//

/// Returns `text` as a quoted JSON string: `"` and `\` escaped, control
/// characters as \n, \t, \r, \b, \f or \u00XX, other bytes unchanged (the
/// input is expected to be UTF-8). With `script_safe`, `<`, `>` and `&`
/// become \u003c, \u003e and \u0026 too, so the text can sit inside an
/// HTML script element.
[[nodiscard]] inline std::string json_quote(std::string_view text, bool script_safe = false) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\t': out += "\\t"; continue;
      case '\r': out += "\\r"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (b < 0x20 || (script_safe && (c == '<' || c == '>' || c == '&'))) {
      out += "\\u00";
      out += hex[b >> 4];
      out += hex[b & 0xf];
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

/// Returns `v` as a JSON number: the shortest text that reads back as `v`;
/// `null` for NaN and infinities, which JSON cannot spell.
[[nodiscard]] inline std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

/// A small streaming JSON writer: it places the commas and the colons and
/// quotes every string; the caller keeps objects and arrays balanced.
class json_writer {
 public:
  /// Writes to `out`; with `script_safe`, strings are safe inside an HTML
  /// script element (see json_quote).
  explicit json_writer(std::ostream& out, bool script_safe = false)
      : out_(out), script_safe_(script_safe) {}

  json_writer& begin_object() { return open('{'); }
  json_writer& end_object() { return close('}'); }
  json_writer& begin_array() { return open('['); }
  json_writer& end_array() { return close(']'); }

  /// Writes an object key; the next value belongs to it.
  json_writer& key(std::string_view k) {
    separate();
    out_ << json_quote(k, script_safe_) << ':';
    after_key_ = true;
    return *this;
  }

  json_writer& value(std::string_view s) {
    separate();
    out_ << json_quote(s, script_safe_);
    return *this;
  }
  json_writer& value(const char* s) { return value(std::string_view(s)); }
  json_writer& value(const std::string& s) { return value(std::string_view(s)); }
  json_writer& value(bool b) {
    separate();
    out_ << (b ? "true" : "false");
    return *this;
  }
  json_writer& value(double d) {
    separate();
    out_ << json_number(d);
    return *this;
  }
  json_writer& value(std::uint64_t n) {
    separate();
    out_ << n;
    return *this;
  }
  json_writer& null() {
    separate();
    out_ << "null";
    return *this;
  }

  /// Shorthand for key(k).value(v).
  template <class T>
  json_writer& field(std::string_view k, const T& v) {
    key(k);
    if constexpr (std::is_same_v<T, std::size_t> || std::is_same_v<T, unsigned> ||
                  std::is_same_v<T, unsigned long long>) {
      return value(static_cast<std::uint64_t>(v));
    } else {
      return value(v);
    }
  }

 private:
  json_writer& open(char c) {
    separate();
    out_ << c;
    first_.push_back(true);
    return *this;
  }
  json_writer& close(char c) {
    out_ << c;
    first_.pop_back();
    // Line breaks between the elements of the outer levels keep the file
    // readable and diffable without indenting every value.
    if (first_.size() <= 4 && !first_.empty()) newline_ = true;
    return *this;
  }
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back()) out_ << ',';
      first_.back() = false;
    }
    if (newline_) {
      out_ << '\n';
      newline_ = false;
    }
  }

  std::ostream& out_;
  bool script_safe_;
  bool after_key_ = false;
  bool newline_ = false;
  std::vector<bool> first_;
};

//===-- edges ----------------------------------------------------------------===//

namespace detail {

/// A scenario as the simulator submitted it: placed (place()) when an
/// operation sits on a lane class or the scheduling is not in-order, as
/// run() does; the file's scenario otherwise.
class submitted_view {
 public:
  submitted_view(const scenario& s, scheduling how) : input_(&s) {
    const bool placed_already =
        how == scheduling::in_order &&
        std::none_of(s.ops.begin(), s.ops.end(), [](const op_desc& op) { return op.queues.empty(); });
    if (!placed_already) {
      parsed<placement> p = place(s, how);
      if (p) {
        position_ = std::move(p->position);
        placed_.emplace(std::move(p->placed));
      }
    }
    const std::size_t n = submitted().ops.size();
    if (position_.size() != s.ops.size()) {
      position_.resize(s.ops.size());
      for (std::size_t i = 0; i < s.ops.size(); ++i) position_[i] = i;
    }
    file_of_.assign(n, npos);
    for (std::size_t i = 0; i < position_.size(); ++i) {
      if (position_[i] < n) file_of_[position_[i]] = i;
    }
  }
  submitted_view(const submitted_view&) = delete;
  submitted_view& operator=(const submitted_view&) = delete;

  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  /// The operations in submission order, each on its lanes.
  [[nodiscard]] const scenario& submitted() const noexcept { return placed_ ? *placed_ : *input_; }
  /// submitted().ops[position(i)] is the file's operation i.
  [[nodiscard]] std::size_t position(std::size_t i) const noexcept { return position_[i]; }
  /// The file's index of submitted operation p (npos when none).
  [[nodiscard]] std::size_t file_of(std::size_t p) const noexcept { return file_of_[p]; }
  /// The lanes of the file's operation i (empty when it was never placed).
  [[nodiscard]] const std::vector<std::size_t>& lanes(std::size_t i) const noexcept {
    static const std::vector<std::size_t> none;
    const std::size_t p = position_[i];
    return p < submitted().ops.size() ? submitted().ops[p].queues : none;
  }

 private:
  const scenario* input_;
  std::optional<scenario> placed_;
  std::vector<std::size_t> position_;
  std::vector<std::size_t> file_of_;
};

/// The dependencies of part `j` of operation `i`.
[[nodiscard]] inline const std::vector<std::size_t>& report_deps(const scenario& s, std::size_t i,
                                                                 std::size_t j) {
  const op_desc& op = s.ops[i];
  return op.part_after.empty() ? op.after : op.part_after[j];
}

/// The epoch of every part of every operation: each part is one submission
/// on its queue, in submission order, in every model.
[[nodiscard]] inline std::vector<std::vector<std::uint64_t>> part_epochs(const scenario& s) {
  std::vector<std::uint64_t> lane(s.queues.size(), 0);
  std::vector<std::vector<std::uint64_t>> out(s.ops.size());
  for (std::size_t i = 0; i < s.ops.size(); ++i) {
    for (std::size_t q : s.ops[i].queues) out[i].push_back(q < lane.size() ? ++lane[q] : 0);
  }
  return out;
}

/// One (consumer part, producer part) decision of an operation.
struct pair_decision {
  std::size_t producer = 0;  ///< submitted index
  wait_decision decision = wait_decision::issued;
  bool exact = true;
};

/// Edges of one run, built in submitted indices and handed out in the
/// file's.
struct edge_builder {
  const submitted_view& view;
  const run_result& r;

  /// The record of submitted operation p, or null.
  [[nodiscard]] const op_record* record(std::size_t p) const noexcept {
    const std::size_t i = view.file_of(p);
    return i < r.ops.size() ? &r.ops[i] : nullptr;
  }
  [[nodiscard]] double end_of(std::size_t p) const noexcept {
    const op_record* rec = record(p);
    return rec != nullptr ? rec->end : 0;
  }

  /// Folds the pair decisions of submitted operation `p` into one edge per
  /// entry of its `after`: issued when any pair was.
  void fold(std::size_t p, const std::vector<pair_decision>& pairs, std::vector<edge_record>& out) const {
    const scenario& s = view.submitted();
    for (std::size_t d : s.ops[p].after) {
      edge_record e{view.file_of(d), view.file_of(p), wait_decision::issued, true};
      bool any = false;
      for (const pair_decision& pd : pairs) {
        if (pd.producer != d) continue;
        e.exact = e.exact && pd.exact;
        if (!any || pd.decision == wait_decision::issued) e.decision = pd.decision;
        any = true;
        if (pd.decision == wait_decision::issued) break;
      }
      // A dependency no part waited for in any way (none is expected).
      if (!any) e.exact = false;
      if (e.producer != submitted_view::npos && e.consumer != submitted_view::npos) out.push_back(e);
    }
  }

  /// Makes the pairs agree with the record's `already_waited` count,
  /// flipping the fewest (earliest producers become elided first, the
  /// latest become issued first); flipped pairs are inexact.
  void reconcile(std::size_t p, std::uint64_t replayed, std::vector<pair_decision>& pairs) const {
    const op_record* rec = record(p);
    if (rec == nullptr || rec->elided.already_waited == replayed) return;
    const bool to_elided = rec->elided.already_waited > replayed;
    std::uint64_t flips = to_elided ? rec->elided.already_waited - replayed : replayed - rec->elided.already_waited;
    const wait_decision from = to_elided ? wait_decision::issued : wait_decision::already_waited;
    std::vector<std::size_t> candidates;
    for (std::size_t k = 0; k < pairs.size(); ++k) {
      if (pairs[k].decision == from) candidates.push_back(k);
    }
    std::stable_sort(candidates.begin(), candidates.end(), [&](std::size_t a, std::size_t b) {
      return to_elided ? end_of(pairs[a].producer) < end_of(pairs[b].producer)
                       : end_of(pairs[a].producer) > end_of(pairs[b].producer);
    });
    for (std::size_t k : candidates) {
      if (flips == 0) break;
      pairs[k].decision = to_elided ? wait_decision::already_waited : wait_decision::issued;
      --flips;
    }
    for (pair_decision& pd : pairs) pd.exact = false;
  }

  /// Binary events and timelines: the models' rules replayed in
  /// submission order.
  [[nodiscard]] std::vector<edge_record> baselines() const {
    const scenario& s = view.submitted();
    const bool events = r.which == model::binary_events;
    const auto epochs = part_epochs(s);
    const std::size_t nq = s.queues.size();
    std::vector<std::set<std::pair<std::size_t, std::size_t>>> waited(nq);
    std::vector<std::map<std::size_t, std::uint64_t>> memo(nq);
    std::vector<edge_record> out;
    std::uint64_t already = 0;  // the current operation's replayed already_waited count
    const auto decide = [&](std::size_t q, std::size_t d, std::size_t pq, std::uint64_t pe,
                            const semaphore_wait* via) {
      if (pq == q) return wait_decision::same_queue;
      if (events) {
        if (!waited[q].insert({d, pq}).second) return ++already, wait_decision::already_waited;
        return wait_decision::issued;
      }
      // A named semaphore is a timeline of its own, keyed past the queues.
      std::uint64_t& seen = memo[q][via != nullptr ? nq + via->semaphore : pq];
      const std::uint64_t value = via != nullptr ? via->value : pe;
      if (seen >= value) return ++already, wait_decision::already_waited;
      seen = value;
      return wait_decision::issued;
    };
    for (std::size_t i = 0; i < s.ops.size(); ++i) {
      const op_desc& op = s.ops[i];
      std::vector<pair_decision> pairs;
      already = 0;
      for (std::size_t j = 0; j < op.queues.size() && op.queues[j] < nq; ++j) {
        for (std::size_t d : report_deps(s, i, j)) {
          const semaphore_wait* via = nullptr;
          for (const semaphore_wait& w : op.waits) {
            if (w.producer == d && (via == nullptr || w.value > via->value)) via = &w;
          }
          for (std::size_t pj = 0; pj < s.ops[d].queues.size(); ++pj) {
            pairs.push_back({d, decide(op.queues[j], d, s.ops[d].queues[pj], epochs[d][pj], via), true});
          }
        }
      }
      if (op.collective) {
        // The all-reduce's own waits: no edge, but they change what each
        // participant has waited for.
        for (std::size_t q : op.queues) {
          for (std::size_t pj = 0; pj < op.queues.size(); ++pj) {
            if (op.queues[pj] != q && q < nq) (void)decide(q, i, op.queues[pj], epochs[i][pj], nullptr);
          }
        }
      }
      reconcile(i, already, pairs);
      fold(i, pairs, out);
    }
    return out;
  }

  /// Frontiers: the queue's tiers from the trace; collective joins (and,
  /// without a trace, the cross-queue waits) from the counts.
  [[nodiscard]] std::vector<edge_record> frontiers() const {
    const scenario& s = view.submitted();
    const auto epochs = part_epochs(s);
    // (queue axis, consumer epoch) -> the tiers of its waits, by index.
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::vector<trace_tier>> traced_waits;
    for (const trace_record& t : r.trace) {
      if (t.kind != trace_kind::queue_wait) continue;
      std::vector<trace_tier>& v = traced_waits[{t.queue.raw(), t.epoch}];
      if (v.size() <= t.index) v.resize(t.index + 1, trace_tier::device);
      v[t.index] = t.tier;
    }
    const bool traced = !r.trace.empty();
    std::vector<edge_record> out;
    for (std::size_t i = 0; i < s.ops.size(); ++i) {
      const op_desc& op = s.ops[i];
      const op_record* rec = record(i);
      std::vector<pair_decision> pairs;
      std::vector<std::size_t> open;  // pairs still to assign from the counts
      std::uint64_t traced_reached = 0;
      std::uint64_t open_joins = 0;
      for (std::size_t j = 0; j < op.queues.size(); ++j) {
        const std::size_t q = op.queues[j];
        // The queue saw one wait per dependency on another queue (in
        // order); the own queue and collectives are decided before it.
        std::vector<std::size_t> cross;
        for (std::size_t d : report_deps(s, i, j)) {
          if (s.ops[d].collective) {
            open.push_back(pairs.size());
            ++open_joins;
            pairs.push_back({d, wait_decision::issued, false});
          } else if (!s.ops[d].queues.empty() && s.ops[d].queues.front() == q) {
            pairs.push_back({d, wait_decision::same_queue, true});
          } else {
            cross.push_back(pairs.size());
            pairs.push_back({d, wait_decision::issued, false});
          }
        }
        const std::vector<trace_tier>* tiers = nullptr;
        if (traced && q < r.queue_axes.size()) {
          const auto it = traced_waits.find({r.queue_axes[q].raw(), epochs[i][j]});
          if (it != traced_waits.end() && it->second.size() == cross.size()) tiers = &it->second;
        }
        for (std::size_t k = 0; k < cross.size(); ++k) {
          pair_decision& pd = pairs[cross[k]];
          if (tiers == nullptr) {  // no trace, or not one wait per dependency
            open.push_back(cross[k]);
            continue;
          }
          pd.exact = true;
          switch ((*tiers)[k]) {
            case trace_tier::reached: pd.decision = wait_decision::reached, ++traced_reached; break;
            case trace_tier::same_queue: pd.decision = wait_decision::same_queue; break;
            case trace_tier::dominated: pd.decision = wait_decision::dominated; break;
            case trace_tier::device: pd.decision = wait_decision::issued; break;
          }
        }
      }
      if (!open.empty() && rec != nullptr) {
        // Hand out the counted elisions the trace did not explain: a join's
        // own reason first, then reached and dominated; the rest were issued.
        const elided_counts& c = rec->elided;
        std::uint64_t known = c.collective_known;
        std::uint64_t reached = c.reached > traced_reached ? c.reached - traced_reached : 0;
        std::uint64_t dominated = c.dominated;
        for (const pair_decision& pd : pairs) {
          if (pd.exact && pd.decision == wait_decision::dominated && dominated > 0) --dominated;
        }
        for (std::size_t k : open) {
          pair_decision& pd = pairs[k];
          const bool join = s.ops[pd.producer].collective;
          if (join && known > 0) {
            pd.decision = wait_decision::collective_known, --known;
          } else if (reached > 0) {
            pd.decision = wait_decision::reached, --reached;
          } else if (!join && dominated > 0) {
            pd.decision = wait_decision::dominated, --dominated;
          } else {
            pd.decision = wait_decision::issued;
          }
        }
        // Only joins open, and one of them or all decided alike: no choice.
        if (open_joins == open.size()) {
          bool alike = true;
          for (std::size_t k : open) alike = alike && pairs[k].decision == pairs[open.front()].decision;
          if (alike) {
            for (std::size_t k : open) pairs[k].exact = true;
          }
        }
      }
      fold(i, pairs, out);
    }
    return out;
  }
};

}  // namespace detail

/// Returns one edge per (dependency, consumer) pair of `s`, ordered by
/// consumer and then by the consumer's `after`, with what run `r` did for
/// it. `r` must be a run of `s` under scheduling `how` (run_options::how);
/// see the file comment for how each model's decisions are derived.
/// Tooling: allocates.
[[nodiscard]] inline std::vector<edge_record> classify_edges(const scenario& s, const run_result& r,
                                                             scheduling how = scheduling::in_order) {
  const detail::submitted_view view(s, how);
  const detail::edge_builder b{view, r};
  std::vector<edge_record> edges = r.which == model::frontiers ? b.frontiers() : b.baselines();
  // File order by consumer; each consumer's edges stay in `after` order.
  std::stable_sort(edges.begin(), edges.end(),
                   [](const edge_record& x, const edge_record& y) { return x.consumer < y.consumer; });
  return edges;
}

//===-- JSON -----------------------------------------------------------------===//

namespace detail {

/// The name of axis `a` in a report: its queue's name, else its raw value.
[[nodiscard]] inline std::string lane_of(const scenario& s, const run_result& r, axis a) {
  for (std::size_t q = 0; q < r.queue_axes.size() && q < s.queues.size(); ++q) {
    if (r.queue_axes[q] == a) return s.queues[q].name;
  }
  return std::to_string(a.raw());
}

/// Writes the entries of `f` (any basic_frontier: run_result::knowledge's
/// element type), with the own axis at `own_epoch` when `own` is set.
template <class Frontier>
void write_frontier(json_writer& w, const scenario& s, const run_result& r, const Frontier& f,
                    std::optional<axis> own, std::uint64_t own_epoch) {
  w.begin_array();
  for (std::size_t k = 0; k < f.size(); ++k) {
    const auto entry = f[k];
    std::uint64_t epoch = entry.epoch;
    if (own && entry.axis == *own) {
      // `knows`: what the operation learnt, without itself.
      epoch = own_epoch;
      if (epoch == 0) continue;
    }
    w.begin_object().field("lane", lane_of(s, r, entry.axis)).field("epoch", epoch).end_object();
  }
  w.end_array();
}

inline void write_totals(json_writer& w, const metrics& t) {
  w.begin_object()
      .field("device_waits", t.device_waits)
      .field("waits_elided", t.waits_elided)
      .field("events_created", t.events_created)
      .field("host_queries", t.host_queries)
      .field("metadata_bytes", t.metadata_bytes)
      .field("tracking_entries", t.tracking_entries)
      .field("cross_workload_waits", t.cross_workload_waits)
      .field("max_frontier_entries", t.max_frontier_entries)
      .field("tainted_operations", t.tainted_operations)
      .field("makespan", t.makespan)
      .end_object();
}

inline void write_run(json_writer& w, const scenario& s, const submitted_view& view, const run_result& r,
                      scheduling how) {
  const std::vector<edge_record> edges = classify_edges(s, r, how);
  std::uint64_t issued = 0;
  for (const edge_record& e : edges) issued += e.issued() ? 1 : 0;
  w.begin_object();
  w.field("model", key_of(r.which)).field("title", to_string(r.which));
  w.key("error");
  if (r.error) {
    w.value(*r.error);
  } else {
    w.null();
  }
  w.key("violations").begin_array();
  for (const std::string& v : r.violations) w.value(v);
  w.end_array();
  w.key("totals");
  write_totals(w, r.totals);
  w.key("edges").begin_object().field("issued", issued).field("elided", edges.size() - issued).end_object();
  w.key("ops").begin_array();
  std::size_t next_edge = 0;
  for (std::size_t i = 0; i < s.ops.size(); ++i) {
    const op_desc& op = s.ops[i];
    const op_record rec = i < r.ops.size() ? r.ops[i] : op_record{};
    w.begin_object();
    w.field("name", op.name);
    w.key("lanes").begin_array();
    for (std::size_t q : view.lanes(i)) w.value(s.queues[q].name);
    w.end_array();
    // As submitted: a placement may add the orderings the file met by
    // queue order (scheduling::ready_first).
    w.key("after").begin_array();
    if (view.position(i) < view.submitted().ops.size()) {
      for (std::size_t d : view.submitted().ops[view.position(i)].after) {
        if (view.file_of(d) < s.ops.size()) w.value(s.ops[view.file_of(d)].name);
      }
    }
    w.end_array();
    w.field("submit", rec.submit).field("start", rec.start).field("end", rec.end).field("epoch", rec.epoch);
    w.field("device_waits", rec.device_waits).field("waits_elided", rec.waits_elided);
    w.key("elided")
        .begin_object()
        .field("same_queue", rec.elided.same_queue)
        .field("already_waited", rec.elided.already_waited)
        .field("reached", rec.elided.reached)
        .field("dominated", rec.elided.dominated)
        .field("collective_known", rec.elided.collective_known)
        .end_object();
    w.key("edges").begin_array();
    for (; next_edge < edges.size() && edges[next_edge].consumer == i; ++next_edge) {
      const edge_record& e = edges[next_edge];
      w.begin_object()
          .field("after", s.ops[e.producer].name)
          .field("wait", e.issued() ? "issued" : "elided")
          .field("reason", to_string(e.decision))
          .field("exact", e.exact)
          .end_object();
    }
    w.end_array();
    if (r.which == model::frontiers && i < r.knowledge.size() && !view.lanes(i).empty() &&
        view.lanes(i).front() < r.queue_axes.size()) {
      const auto& f = r.knowledge[i];
      const axis own = r.queue_axes[view.lanes(i).front()];
      w.key("carries");
      write_frontier(w, s, r, f, std::nullopt, 0);
      w.key("knows");
      write_frontier(w, s, r, f, own, f.epoch_of(own) > 0 ? f.epoch_of(own) - 1 : 0);
      w.field("tainted", f.tainted());
    }
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

inline void write_document(json_writer& w, std::span<const report_item> items, const report_info& info) {
  w.begin_object();
  w.field("format", "causal-sim-report").field("version", std::uint64_t{1});
  w.field("generator", info.generator);
  w.key("settings").begin_object();
  for (const auto& [k, v] : info.settings) w.field(k, v);
  w.end_object();
  w.key("scenarios").begin_array();
  for (const report_item& item : items) {
    const scenario& s = item.input;
    w.begin_object();
    w.field("name", s.name).field("title", s.title).field("description", s.description);
    w.field("claim", s.claim).field("operations", s.ops.size()).field("scheduling", to_string(item.how));
    w.key("lanes").begin_array();
    for (const queue_desc& q : s.queues) w.value(q.name);
    w.end_array();
    w.key("costs")
        .begin_object()
        .field("device_wait", s.costs.device_wait)
        .field("host_query", s.costs.host_query)
        .field("round_trip", s.costs.round_trip)
        .end_object();
    w.key("models").begin_array();
    const submitted_view view(s, item.how);
    for (const run_result& r : item.runs) write_run(w, s, view, r, item.how);
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.end_object();
}

}  // namespace detail

/// Writes `items` as one JSON document (schema: examples/scenarios/README.md)
/// followed by a newline. Tooling: allocates; check `out`'s state afterwards.
inline void write_json(std::ostream& out, std::span<const report_item> items, const report_info& info = {}) {
  json_writer w(out);
  detail::write_document(w, items, info);
  out << '\n';
}

//===-- HTML -----------------------------------------------------------------===//

/// Returns `text` with `&`, `<`, `>`, `"` and `'` replaced by character
/// references, safe in HTML text and quoted attribute values.
[[nodiscard]] inline std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace detail {

/// A number for SVG coordinates: at most two decimals.
[[nodiscard]] inline std::string px(double v) {
  const double r = std::round(v * 100.0) / 100.0;
  return json_number(r == 0 ? 0.0 : r);
}

/// A round step for about `ticks` axis ticks over [0, span].
[[nodiscard]] inline double tick_step(double span, double ticks) {
  if (!(span > 0)) return 1;
  const double raw = span / ticks;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * mag) return m * mag;
  }
  return 10 * mag;
}

// The page's geometry, in CSS pixels.
inline constexpr double gutter = 120;  // lane names
inline constexpr double row_h = 24;
inline constexpr double bar_h = 16;
inline constexpr double axis_h = 22;
inline constexpr double char_w = 6.6;  // label width per character (11px sans-serif)

struct chart_scale {
  double x0 = gutter;
  double per_unit = 1;  // pixels per simulated microsecond
  double width = 0;     // plot width
  double span = 1;      // simulated time covered
};

inline void write_chart(std::ostream& out, const scenario& s, const submitted_view& view, const run_result& r,
                        const std::vector<edge_record>& edges, const chart_scale& k) {
  const std::string sname = html_escape(s.name);
  const std::string mkey(key_of(r.which));
  const double height = axis_h + row_h * static_cast<double>(s.queues.size()) + 8;
  const double width = k.x0 + k.width + 24;
  const auto x_of = [&](double t) { return k.x0 + t * k.per_unit; };
  const auto y_of = [&](std::size_t q) { return axis_h + row_h * static_cast<double>(q); };
  out << "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << px(width)
      << "\" height=\"" << px(height) << "\" viewBox=\"0 0 " << px(width) << ' ' << px(height) << "\">";
  // Lanes and their names.
  out << "<g class=\"lanes\">";
  for (std::size_t q = 0; q < s.queues.size(); ++q) {
    out << "<rect class=\"lane" << (q % 2 ? " odd" : "") << "\" x=\"0\" y=\"" << px(y_of(q))
        << "\" width=\"" << px(width) << "\" height=\"" << px(row_h) << "\"/>";
    out << "<text class=\"lane-name\" x=\"" << px(k.x0 - 8) << "\" y=\"" << px(y_of(q) + row_h / 2 + 4)
        << "\">" << html_escape(s.queues[q].name) << "</text>";
  }
  out << "</g>";
  // The time axis.
  out << "<g class=\"axis\">";
  const double step = tick_step(k.span, std::max(2.0, k.width / 110));
  for (std::size_t n = 0; static_cast<double>(n) * step <= k.span + step * 1e-9; ++n) {
    const double t = static_cast<double>(n) * step;
    out << "<line x1=\"" << px(x_of(t)) << "\" x2=\"" << px(x_of(t)) << "\" y1=\"" << px(axis_h - 4)
        << "\" y2=\"" << px(height - 8) << "\"/><text x=\"" << px(x_of(t)) << "\" y=\"" << px(axis_h - 8)
        << "\">" << json_number(t) << "</text>";
  }
  out << "</g>";
  // The bars.
  out << "<g class=\"bars\">";
  for (std::size_t i = 0; i < s.ops.size() && i < r.ops.size(); ++i) {
    const op_desc& op = s.ops[i];
    const op_record& rec = r.ops[i];
    const std::vector<std::size_t>& lanes = view.lanes(i);
    const double x = x_of(rec.start);
    const double w = std::max(1.0, (rec.end - rec.start) * k.per_unit);
    for (std::size_t j = 0; j < lanes.size(); ++j) {
      const double y = y_of(lanes[j]) + (row_h - bar_h) / 2;
      out << "<rect class=\"" << (j == 0 ? "op" : "part") << (op.collective ? " collective" : "")
          << (rec.device_waits > 0 ? " waited" : "") << "\" data-scenario=\"" << sname
          << "\" data-model=\"" << mkey << "\" data-op=\"" << i << "\" x=\"" << px(x) << "\" y=\""
          << px(y) << "\" width=\"" << px(w) << "\" height=\"" << px(bar_h) << "\" rx=\"2\"><title>"
          << html_escape(op.name) << ": " << json_number(rec.start) << " to " << json_number(rec.end)
          << ", " << rec.device_waits << " wait(s) issued, " << rec.waits_elided << " elided</title></rect>";
      if (static_cast<double>(op.name.size()) * char_w + 6 <= w) {
        out << "<text class=\"label\" x=\"" << px(x + 3) << "\" y=\"" << px(y + bar_h - 4) << "\">"
            << html_escape(op.name) << "</text>";
      }
    }
  }
  out << "</g>";
  // The waits: elided below issued, both above the bars.
  for (const bool issued : {false, true}) {
    out << "<g class=\"waits " << (issued ? "issued" : "elided") << "\">";
    for (const edge_record& e : edges) {
      if (e.issued() != issued || e.producer >= r.ops.size() || e.consumer >= r.ops.size() ||
          view.lanes(e.producer).empty() || view.lanes(e.consumer).empty()) {
        continue;
      }
      // A collective's arrow leaves from (or arrives at) its part on the
      // other end's lane when it has one, so an all-reduce does not fan
      // out of its first lane.
      const std::vector<std::size_t>& from = view.lanes(e.producer);
      const std::vector<std::size_t>& to = view.lanes(e.consumer);
      const auto on = [](const std::vector<std::size_t>& lanes, std::size_t q) {
        return std::find(lanes.begin(), lanes.end(), q) != lanes.end();
      };
      const std::size_t pq = on(from, to.front()) ? to.front() : from.front();
      const std::size_t cq = on(to, pq) ? pq : to.front();
      const double x1 = x_of(r.ops[e.producer].end);
      const double x2 = x_of(r.ops[e.consumer].start);
      const double y1 = y_of(pq) + row_h / 2;
      const double y2 = y_of(cq) + row_h / 2;
      out << "<path class=\"wait " << (issued ? "issued" : "elided") << "\" data-scenario=\"" << sname
          << "\" data-model=\"" << mkey << "\" data-from=\"" << e.producer << "\" data-to=\"" << e.consumer
          << "\" data-reason=\"" << to_string(e.decision) << "\" d=\"";
      if (pq == cq) {
        // Same lane: a hop over the bars' boundary, from the producer's
        // top edge to the consumer's, wide enough to see when they touch.
        const double top = y_of(pq) + (row_h - bar_h) / 2;
        const double a = std::max(k.x0, x1 - 10);
        const double b = x2 + 10;
        out << "M" << px(a) << ' ' << px(top) << "Q" << px((a + b) / 2) << ' ' << px(top - 12) << ' '
            << px(b) << ' ' << px(top);
      } else {
        const double c = std::max(12.0, std::abs(x2 - x1) / 2);
        out << "M" << px(x1) << ' ' << px(y1) << "C" << px(x1 + c) << ' ' << px(y1) << ' ' << px(x2 - c)
            << ' ' << px(y2) << ' ' << px(x2) << ' ' << px(y2);
      }
      out << "\"/>";
    }
    out << "</g>";
  }
  out << "</svg>";
}

inline constexpr std::string_view page_style = R"css(
:root { --ink:#1d2330; --muted:#6a7385; --line:#d8dce4; --issued:#c0392b; --elided:#7f8c9d; }
* { box-sizing: border-box; }
body { margin:0; font:13px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color:var(--ink); background:#f6f7f9; }
header { margin-right:300px; position:sticky; top:0; z-index:5; background:#fff; border-bottom:1px solid var(--line); padding:8px 16px; display:flex; gap:24px; align-items:baseline; flex-wrap:wrap; }
header h1 { font-size:16px; margin:0; }
header .settings { color:var(--muted); }
header label { margin-right:12px; cursor:pointer; }
main { padding:8px 16px 16px; margin-right:300px; }
section { background:#fff; border:1px solid var(--line); border-radius:6px; padding:8px 12px; margin:12px 0; }
h2 { font-size:15px; margin:4px 0; }
h2 small { font-weight:normal; color:var(--muted); }
h3 { font-size:13px; margin:10px 0 4px; }
h3 .stats { font-weight:normal; color:var(--muted); margin-left:8px; }
p { margin:2px 0; }
.claim { color:#36517a; }
.bad { color:var(--issued); font-weight:600; }
.chart-box { overflow-x:auto; border:1px solid #eef0f3; }
svg.chart { display:block; }
svg.chart .lane { fill:#fff; }
svg.chart .lane.odd { fill:#f4f6f9; }
svg.chart .lane-name { font-size:11px; text-anchor:end; fill:var(--muted); }
svg.chart .axis line { stroke:#e6e9ee; }
svg.chart .axis text { font-size:10px; fill:var(--muted); text-anchor:middle; }
svg.chart rect.op, svg.chart rect.part { fill:#8fb3de; stroke:#4f79ad; stroke-width:1; cursor:pointer; }
svg.chart rect.waited { fill:#e9b9a4; stroke:#b8664a; }
svg.chart rect.collective { fill:#b7d8a8; stroke:#5d8f4a; }
svg.chart rect.part { opacity:.75; }
svg.chart rect.sel { stroke:#111; stroke-width:2.5; }
svg.chart .label { font-size:11px; fill:#10233d; pointer-events:none; }
svg.chart path.wait { fill:none; pointer-events:none; }
svg.chart path.issued { stroke:var(--issued); stroke-width:1.4; marker-end:url(#arrow-issued); }
svg.chart path.elided { stroke:var(--elided); stroke-width:1; stroke-dasharray:4 3; opacity:.55; marker-end:url(#arrow-elided); }
svg.chart path.hl { stroke-width:2.6; opacity:1; }
body:not(.show-issued) path.issued, body:not(.show-elided) path.elided, body:not(.show-labels) .label { display:none; }
table { border-collapse:collapse; font-variant-numeric:tabular-nums; }
th, td { border:1px solid var(--line); padding:3px 7px; text-align:right; }
th { background:#eef1f5; }
td:first-child, th:first-child { text-align:left; }
td.best { font-weight:700; color:#1e6b34; }
#details { position:fixed; right:0; top:0; bottom:0; width:300px; overflow-y:auto; background:#fff; border-left:1px solid var(--line); padding:10px 12px; z-index:6; }
#details h4 { margin:0 0 4px; font-size:14px; word-break:break-all; }
#details table { width:100%; margin:4px 0 8px; }
#details td { text-align:left; }
#details .hint { color:var(--muted); }
.legend span { margin-right:14px; }
.legend .li { color:var(--issued); } .legend .le { color:var(--elided); }
.legend i { display:inline-block; width:18px; height:10px; border:1px solid; border-radius:2px; vertical-align:middle; margin-right:3px; }
.legend .plain { background:#8fb3de; border-color:#4f79ad; } .legend .waited { background:#e9b9a4; border-color:#b8664a; }
.legend .coll { background:#b7d8a8; border-color:#5d8f4a; }
)css";

inline constexpr std::string_view page_script = R"js(
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('report-data').textContent);
  var byName = {};
  data.scenarios.forEach(function (s) {
    var models = {};
    s.models.forEach(function (m) { models[m.model] = m; });
    byName[s.name] = models;
  });
  ['issued', 'elided', 'labels'].forEach(function (k) {
    var box = document.getElementById('show-' + k);
    box.addEventListener('change', function () { document.body.classList.toggle('show-' + k, box.checked); });
  });
  var panel = document.getElementById('details');
  var pinned = null, marked = [];
  function esc(t) {
    return String(t).replace(/[&<>"']/g, function (c) {
      return {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'}[c];
    });
  }
  function frontierTable(title, f) {
    if (!f) return '';
    var rows = f.map(function (e) {
      var lane = /^[0-9]+$/.test(e.lane) ? 'axis ' + e.lane + ' (no lane: a collective)' : e.lane;
      return '<tr><td>' + esc(lane) + '</td><td>' + e.epoch + '</td></tr>';
    });
    return '<b>' + title + '</b><table><tr><th>lane</th><th>epoch</th></tr>' +
        (rows.length ? rows.join('') : '<tr><td colspan="2">(nothing)</td></tr>') + '</table>';
  }
  function unmark() {
    marked.forEach(function (el) { el.classList.remove('sel', 'hl'); });
    marked = [];
  }
  function show(rect) {
    var sc = rect.getAttribute('data-scenario'), mk = rect.getAttribute('data-model');
    var i = +rect.getAttribute('data-op');
    var m = byName[sc] && byName[sc][mk];
    if (!m) return;
    var op = m.ops[i];
    unmark();
    var svg = rect.ownerSVGElement;
    svg.querySelectorAll('rect[data-op="' + i + '"], path[data-from="' + i + '"], path[data-to="' + i + '"]')
        .forEach(function (el) { el.classList.add(el.tagName === 'path' ? 'hl' : 'sel'); marked.push(el); });
    var e = op.elided;
    var html = '<h4>' + esc(op.name) + '</h4><div class="hint">' + esc(sc) + ' / ' + esc(m.title) +
        (pinned ? ' (pinned; click again to release)' : '') + '</div>' +
        '<table><tr><td>lanes</td><td>' + esc(op.lanes.join(', ')) + '</td></tr>' +
        '<tr><td>submit / start / end</td><td>' + op.submit + ' / ' + op.start + ' / ' + op.end + '</td></tr>' +
        '<tr><td>epoch</td><td>' + op.epoch + '</td></tr>' +
        '<tr><td>device waits</td><td>' + op.device_waits + '</td></tr>' +
        '<tr><td>waits elided</td><td>' + op.waits_elided + ' (same queue ' + e.same_queue +
        ', already waited ' + e.already_waited + ', reached ' + e.reached + ', dominated ' + e.dominated +
        ', collective known ' + e.collective_known + ')</td></tr></table>';
    if (op.edges.length) {
      html += '<b>after</b><table>' + op.edges.map(function (d) {
        return '<tr><td>' + esc(d.after) + '</td><td>' + d.wait + ' (' + d.reason + (d.exact ? '' : ', inferred') +
            ')</td></tr>';
      }).join('') + '</table>';
    }
    if (op.carries) {
      html += frontierTable('carries (its signal\'s frontier)', op.carries) +
          frontierTable('knows (without itself)', op.knows) + '<div>tainted: ' + op.tainted + '</div>';
    }
    panel.innerHTML = html;
  }
  document.addEventListener('mouseover', function (ev) {
    var r = ev.target.closest && ev.target.closest('rect.op, rect.part');
    if (r && !pinned) show(r);
  });
  document.addEventListener('click', function (ev) {
    var r = ev.target.closest && ev.target.closest('rect.op, rect.part');
    if (!r) return;
    pinned = pinned === r ? null : r;
    show(r);
  });
})();
)js";

/// One cell per model; with `mark_best`, the lowest value is bold (a cost).
inline void summary_cells(std::ostream& out, const std::vector<double>& values, bool mark_best,
                          bool integral) {
  double best = values.empty() ? 0 : values.front();
  for (const double v : values) best = std::min(best, v);
  for (const double v : values) {
    const bool is_best = mark_best && values.size() > 1 && v == best;
    out << "<td" << (is_best ? " class=\"best\"" : "") << '>'
        << (integral ? std::to_string(static_cast<std::uint64_t>(v)) : json_number(std::round(v * 10) / 10))
        << "</td>";
  }
}

}  // namespace detail

/// Writes `items` as one self-contained HTML page (see the file comment).
/// Tooling: allocates; check `out`'s state afterwards.
inline void write_html(std::ostream& out, std::span<const report_item> items, const report_info& info = {}) {
  std::size_t models = 0;
  for (const report_item& item : items) models = std::max(models, item.runs.size());
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<meta name=\"viewport\" content=\"width=device-width\">"
         "<title>Scenario report: binary events, timelines, frontiers</title><style>"
      << detail::page_style << "</style></head>\n";
  out << "<body class=\"show-issued show-elided show-labels\">"
         "<svg width=\"0\" height=\"0\" style=\"position:absolute\" aria-hidden=\"true\"><defs>"
         "<marker id=\"arrow-issued\" viewBox=\"0 0 8 8\" refX=\"7\" refY=\"4\" markerWidth=\"8\" "
         "markerHeight=\"8\" markerUnits=\"userSpaceOnUse\" orient=\"auto\"><path d=\"M0 0L8 4L0 8z\" fill=\"#c0392b\"/></marker>"
         "<marker id=\"arrow-elided\" viewBox=\"0 0 8 8\" refX=\"7\" refY=\"4\" markerWidth=\"7\" "
         "markerHeight=\"7\" markerUnits=\"userSpaceOnUse\" orient=\"auto\"><path d=\"M0 0L8 4L0 8z\" fill=\"#7f8c9d\"/></marker>"
         "</defs></svg>\n";
  out << "<header><h1>Scenario report</h1><span class=\"settings\">" << html_escape(info.generator);
  for (const auto& [k, v] : info.settings) out << " &middot; " << html_escape(k) << ' ' << html_escape(v);
  out << "</span><span><label><input type=\"checkbox\" id=\"show-issued\" checked> issued waits</label>"
         "<label><input type=\"checkbox\" id=\"show-elided\" checked> elided waits</label>"
         "<label><input type=\"checkbox\" id=\"show-labels\" checked> labels</label></span>"
         "<span class=\"legend\"><span class=\"li\">&#9472;&#9654; device wait issued</span>"
         "<span class=\"le\">&#8212; &#8212;&#9654; dependency met without a wait</span>"
         "<span><i class=\"plain\"></i>no wait issued</span><span><i class=\"waited\"></i>waits issued</span>"
         "<span><i class=\"coll\"></i>collective</span></span></header>\n<main>\n";

  // The summary table.
  out << "<section id=\"summary-section\"><h2>Summary <small>binary events / timelines / frontiers; "
         "the lowest cost in bold</small></h2><table id=\"summary\"><thead><tr><th rowspan=\"2\">scenario</th>"
         "<th rowspan=\"2\">ops</th>";
  static constexpr std::string_view groups[] = {"device waits", "elided",        "events",
                                                "host queries", "metadata bytes", "makespan us"};
  for (const std::string_view g : groups) out << "<th colspan=\"" << models << "\">" << g << "</th>";
  out << "</tr><tr>";
  for (std::size_t g = 0; g < std::size(groups); ++g) {
    for (std::size_t m = 0; m < models; ++m) {
      const model which = items.empty() || m >= items.front().runs.size() ? all_models[m % 3]
                                                                            : items.front().runs[m].which;
      out << "<th>" << (which == model::binary_events ? "B" : which == model::timelines ? "T" : "F") << "</th>";
    }
  }
  out << "</tr></thead><tbody>";
  for (const report_item& item : items) {
    const scenario& s = item.input;
    out << "<tr data-scenario=\"" << html_escape(s.name) << "\"><td><a href=\"#s-" << html_escape(s.name)
        << "\">" << html_escape(s.name) << "</a></td><td>" << s.ops.size() << "</td>";
    const auto column = [&](auto get) {
      std::vector<double> v;
      for (const run_result& r : item.runs) v.push_back(static_cast<double>(get(r.totals)));
      return v;
    };
    detail::summary_cells(out, column([](const metrics& t) { return t.device_waits; }), true, true);
    // More elided waits is no merit by itself (it depends on the waits declared).
    detail::summary_cells(out, column([](const metrics& t) { return t.waits_elided; }), false, true);
    detail::summary_cells(out, column([](const metrics& t) { return t.events_created; }), true, true);
    detail::summary_cells(out, column([](const metrics& t) { return t.host_queries; }), true, true);
    detail::summary_cells(out, column([](const metrics& t) { return t.metadata_bytes; }), true, true);
    detail::summary_cells(out, column([](const metrics& t) { return t.makespan; }), true, false);
    out << "</tr>";
  }
  out << "</tbody></table></section>\n";

  // One section per scenario: the models stacked on one time scale.
  for (const report_item& item : items) {
    const scenario& s = item.input;
    double span = 0;
    std::size_t busiest = 0;
    std::vector<std::size_t> per_lane(s.queues.size(), 0);
    const detail::submitted_view view(s, item.how);
    for (const op_desc& op : view.submitted().ops) {
      for (std::size_t q : op.queues) {
        if (q < per_lane.size()) busiest = std::max(busiest, ++per_lane[q]);
      }
    }
    for (const run_result& r : item.runs) span = std::max(span, r.totals.makespan);
    detail::chart_scale k;
    // Wide enough for a label on a typical bar, scrolled when long.
    k.width = std::clamp(36.0 * static_cast<double>(busiest), 760.0, 20000.0);
    k.span = span > 0 ? span : 1;
    k.per_unit = k.width / k.span;
    out << "<section class=\"scenario\" id=\"s-" << html_escape(s.name) << "\" data-scenario=\""
        << html_escape(s.name) << "\"><h2>" << html_escape(s.title.empty() ? s.name : s.title) << " <small>"
        << html_escape(s.name) << ": " << s.ops.size() << " operations, " << s.queues.size()
        << " lanes, device wait " << json_number(s.costs.device_wait) << " us</small></h2>";
    if (!s.description.empty()) out << "<p>" << html_escape(s.description) << "</p>";
    if (!s.claim.empty()) out << "<p class=\"claim\">claim: " << html_escape(s.claim) << "</p>";
    for (const run_result& r : item.runs) {
      const std::vector<edge_record> edges = classify_edges(s, r, item.how);
      std::size_t issued = 0;
      for (const edge_record& e : edges) issued += e.issued() ? 1 : 0;
      out << "<div class=\"model\" data-model=\"" << key_of(r.which) << "\"><h3>" << to_string(r.which)
          << "<span class=\"stats\">" << r.totals.device_waits << " device waits, " << r.totals.waits_elided
          << " elided; edges: " << issued << " with a wait, " << edges.size() - issued
          << " without; makespan " << json_number(r.totals.makespan) << " us</span></h3>";
      if (r.error) out << "<p class=\"bad\">error: " << html_escape(*r.error) << "</p>";
      for (const std::string& v : r.violations) out << "<p class=\"bad\">UNSOUND: " << html_escape(v) << "</p>";
      out << "<div class=\"chart-box\">";
      detail::write_chart(out, s, view, r, edges, k);
      out << "</div></div>";
    }
    out << "</section>\n";
  }
  out << "</main>\n<aside id=\"details\"><h4>Details</h4><p class=\"hint\">Point at an operation to see "
         "its times, its waits and (frontiers) the frontier its signal carries; click to pin it.</p>"
         "</aside>\n<script type=\"application/json\" id=\"report-data\">";
  json_writer w(out, /*script_safe=*/true);
  detail::write_document(w, items, info);
  out << "</script>\n<script>" << detail::page_script << "</script>\n</body></html>\n";
}

}  // namespace sim

CAUSAL_END_NAMESPACE
