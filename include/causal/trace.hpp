// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// trace: tooling over <causal/trace_sink.hpp> — a sink that records every
// event, a writer of Chrome/Perfetto trace-event JSON and a writer of the
// submitted DAG as Graphviz DOT (docs/observability.md).
//
// Model. Install one `recording_sink` on the queues and semaphores (and,
// through the process hooks, the executor) you want to see, run, then hand
// it to a writer:
//
//   causal::recording_sink sink;
//   queue.set_trace_sink(&sink);  sem.set_trace_sink(&sink);
//   sink.name(&sem, "tokens");    sink.name(queue.axis(), "tokenizer");
//   ... submit, pump, retire ...
//   std::ofstream json("trace.json"); causal::write_chrome_trace(json, sink);
//   std::ofstream dot("dag.dot");     causal::write_dot(dot, sink);
//
// Chrome JSON (open in https://ui.perfetto.dev or chrome://tracing):
//   pid 1 "queues"      one track (tid) per queue axis, named by its text
//                       form (plus the name given with `name(axis, ...)`);
//                       each operation is an "X" slice. A queue completes
//                       in epoch order, so operation e is drawn from the
//                       latest of its submit, the end of e-1 and the ends
//                       of the operations it waited for, to the first
//                       retire covering e; an operation never retired is a
//                       zero-length slice at its start, retired=false.
//                       args: epoch, tag, knowledge frontier, and every
//                       wait with its tier (the elision decision), producer
//                       and imported frontier; signals. Host deferrals are
//                       instant events on the same track.
//   pid 2 "semaphores"  one track per semaphore; each reached value is an
//                       instant event with its frontier and producer; a
//                       failure is one too.
//   pid 3 "workers"     one track per executor worker (tid 0: not a
//                       worker); each drain is one "X" slice (args:
//                       finished, completed, did_work, keep_active; a drain
//                       still running when the trace is written is a
//                       zero-length slice with finished=false, so no span is
//                       ever left open), wakes and completions instants.
//   A wait whose producer operation is in the trace is also a flow arrow
//   ("s" on the producer's slice, "f" on the consumer's).
// Times are microseconds from the earliest event. Objects without a name
// are called `semaphore#k` / `process#k`, k counting first appearances, so
// the output does not depend on addresses.
//
// DOT: one node per operation (labelled `axis:epoch` and its label), one
// cluster per queue, a grey arrow between consecutive operations of a
// queue (FIFO order), and one edge per wait from its producer operation
// (or, when none was recorded, from an ellipse node `S >= v`): solid for a
// device wait, dashed for an elided one, labelled with the semaphore,
// value and tier.
//
// Thread safety: recording_sink's hooks and members may be called
//                concurrently (one mutex). The writers read a snapshot.
// Memory order:  events appear in the order the sink's mutex admitted
//                them; a snapshot sees every event recorded before it.
// Blocking/allocation: this is tooling, not a hot path: recording takes a
//                mutex and allocates (an event that cannot be stored is
//                counted in dropped(), never thrown); the writers allocate
//                and may throw std::bad_alloc. Nothing here is used unless
//                a sink is installed.
// Size:          recording_sink grows with the events (about 200 bytes
//                each, plus frontiers); cap it with max_events.
// Configuration: the axis layout of the writers (template argument,
//                default_axis_layout) for axis text.
// See also:      <causal/trace_sink.hpp>, <causal/queue.hpp>,
//                <causal/semaphore.hpp>, docs/observability.md.
#pragma once

#include <causal/axis.hpp>
#include <causal/config.hpp>
#include <causal/frontier.hpp>
#include <causal/result.hpp>
#include <causal/trace_sink.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

CAUSAL_BEGIN_NAMESPACE

//===-- recorded events -----------------------------------------------------===//

/// Which hook a trace_record came from.
enum class trace_kind : std::uint8_t {
  queue_submit,
  queue_wait,
  queue_signal,
  queue_deferral,
  queue_retire,
  semaphore_signal,
  semaphore_fail,
  drain_begin,
  drain_end,
  wake,
  complete,
};

/// Returns the hook's name without its `on_` prefix, e.g. "queue_wait".
[[nodiscard]] constexpr std::string_view to_string(trace_kind k) noexcept {
  switch (k) {
    case trace_kind::queue_submit: return "queue_submit";
    case trace_kind::queue_wait: return "queue_wait";
    case trace_kind::queue_signal: return "queue_signal";
    case trace_kind::queue_deferral: return "queue_deferral";
    case trace_kind::queue_retire: return "queue_retire";
    case trace_kind::semaphore_signal: return "semaphore_signal";
    case trace_kind::semaphore_fail: return "semaphore_fail";
    case trace_kind::drain_begin: return "drain_begin";
    case trace_kind::drain_end: return "drain_end";
    case trace_kind::wake: return "wake";
    case trace_kind::complete: return "complete";
  }
  return "unknown";
}

/// One recorded event: an owning copy of any trace_* struct. Fields a kind
/// does not use keep their defaults; the comments say who sets what.
struct trace_record {
  trace_kind kind = trace_kind::queue_submit;
  std::uint64_t time_ns = 0;
  axis queue{};                     ///< queue_*: the queue
  std::uint64_t epoch = 0;          ///< queue_* but deferral: the operation (retire: up to)
  const void* object = nullptr;     ///< the semaphore (queue_wait/signal/deferral,
                                    ///< semaphore_*) or the process
  std::uint64_t value = 0;          ///< wait/signal/deferral value; fail: position;
                                    ///< wake: count
  std::uint64_t tag = 0;            ///< submit, deferral
  std::string text;                 ///< submit/deferral: label; fail/complete: message
  trace_tier tier = trace_tier::device;  ///< queue_wait
  frontier_entry producer{};        ///< queue_wait, semaphore_signal
  std::uint64_t signal_value = 0;   ///< queue_wait
  std::uint32_t index = 0;          ///< wait: its index; deferral: wait_index;
                                    ///< submit: wait count
  std::uint32_t count = 0;          ///< submit: signal count; deferral: held
  std::uint32_t worker = trace_no_worker;  ///< process events
  errc code = errc::ok;             ///< semaphore_fail, complete
  bool has_label = false;           ///< submit, deferral: the backend gave a label
  bool reached = false;             ///< queue_wait
  bool value_tainted = false;       ///< queue_wait
  bool imported = false;            ///< queue_wait
  bool pumped = false;              ///< queue_submit
  bool external = false;            ///< semaphore_signal
  bool completed = false;           ///< drain_end
  bool did_work = false;            ///< drain_end
  bool keep_active = false;         ///< drain_end
  bool runnable = false;            ///< wake
  bool frontier_tainted = false;    ///< with `frontier`
  /// submit: the knowledge; queue_wait: the semaphore's answer;
  /// semaphore_signal: the recorded frontier.
  std::vector<frontier_entry> frontier;
};

/// Names given to objects and axes for the writers.
struct trace_names {
  std::map<const void*, std::string> objects;
  std::map<std::uint64_t, std::string> axes;  ///< by axis::raw()
};

//===-- recording_sink ------------------------------------------------------===//

/// A trace_sink that keeps an owning copy of every event, up to
/// `max_events` (further events are counted in dropped()). Tooling: it
/// locks and allocates on every event.
class recording_sink final : public trace_sink {
 public:
  explicit recording_sink(std::size_t max_events = std::numeric_limits<std::size_t>::max())
      : max_events_(max_events) {}

  recording_sink(const recording_sink&) = delete;
  recording_sink& operator=(const recording_sink&) = delete;

  /// Names `object` (a semaphore or process) in the writers' output.
  void name(const void* object, std::string_view name) {
    std::lock_guard lock(mutex_);
    names_.objects[object] = std::string(name);
  }
  /// Names the queue on axis `a` (shown next to the axis' text form).
  void name(axis a, std::string_view name) {
    std::lock_guard lock(mutex_);
    names_.axes[a.raw()] = std::string(name);
  }

  /// Returns a copy of the events recorded so far, in arrival order.
  [[nodiscard]] std::vector<trace_record> events() const {
    std::lock_guard lock(mutex_);
    return events_;
  }
  /// Returns a copy of the names.
  [[nodiscard]] trace_names names() const {
    std::lock_guard lock(mutex_);
    return names_;
  }
  [[nodiscard]] std::size_t size() const {
    std::lock_guard lock(mutex_);
    return events_.size();
  }
  /// Events not stored: over max_events, or out of memory.
  [[nodiscard]] std::uint64_t dropped() const noexcept {
    return dropped_.load(std::memory_order_relaxed);
  }
  /// Forgets the events (names and the dropped count stay).
  void clear() {
    std::lock_guard lock(mutex_);
    events_.clear();
  }

  void on_queue_submit(const trace_queue_submit& e) noexcept override {
    keep([&] {
      trace_record r = base(trace_kind::queue_submit, e.time_ns);
      r.queue = e.queue;
      r.epoch = e.epoch;
      r.tag = e.tag;
      set_label(r, e.label);
      r.index = e.wait_count;
      r.count = e.signal_count;
      r.pumped = e.pumped;
      copy(r, e.knowledge);
      return r;
    });
  }
  void on_queue_wait(const trace_queue_wait& e) noexcept override {
    keep([&] {
      trace_record r = base(trace_kind::queue_wait, e.time_ns);
      r.queue = e.queue;
      r.epoch = e.epoch;
      r.index = e.index;
      r.object = e.semaphore;
      r.value = e.value;
      r.tier = e.tier;
      r.producer = e.producer;
      r.signal_value = e.signal_value;
      r.reached = e.reached;
      r.value_tainted = e.value_tainted;
      r.imported = e.imported;
      copy(r, e.frontier);
      return r;
    });
  }
  void on_queue_signal(const trace_queue_signal& e) noexcept override {
    keep([&] {
      trace_record r = base(trace_kind::queue_signal, e.time_ns);
      r.queue = e.queue;
      r.epoch = e.epoch;
      r.object = e.semaphore;
      r.value = e.value;
      return r;
    });
  }
  void on_queue_deferral(const trace_queue_deferral& e) noexcept override {
    keep([&] {
      trace_record r = base(trace_kind::queue_deferral, e.time_ns);
      r.queue = e.queue;
      r.tag = e.tag;
      set_label(r, e.label);
      r.count = e.held;
      r.index = e.wait_index;
      r.object = e.semaphore;
      r.value = e.value;
      return r;
    });
  }
  void on_queue_retire(const trace_queue_retire& e) noexcept override {
    keep([&] {
      trace_record r = base(trace_kind::queue_retire, e.time_ns);
      r.queue = e.queue;
      r.epoch = e.epoch;
      return r;
    });
  }
  void on_semaphore_signal(const trace_semaphore_signal& e) noexcept override {
    keep([&] {
      trace_record r = base(trace_kind::semaphore_signal, e.time_ns);
      r.object = e.semaphore;
      r.value = e.value;
      r.producer = e.producer;
      r.external = e.external;
      copy(r, e.frontier);
      return r;
    });
  }
  void on_semaphore_fail(const trace_semaphore_fail& e) noexcept override {
    keep([&] {
      trace_record r = base(trace_kind::semaphore_fail, e.time_ns);
      r.object = e.semaphore;
      r.code = e.code;
      r.text = e.message != nullptr ? e.message : "";
      r.value = e.position;
      return r;
    });
  }
  void on_drain_begin(const trace_drain_begin& e) noexcept override {
    keep([&] {
      trace_record r = base(trace_kind::drain_begin, e.time_ns);
      r.object = e.process;
      r.worker = e.worker;
      return r;
    });
  }
  void on_drain_end(const trace_drain_end& e) noexcept override {
    keep([&] {
      trace_record r = base(trace_kind::drain_end, e.time_ns);
      r.object = e.process;
      r.worker = e.worker;
      r.completed = e.completed;
      r.did_work = e.did_work;
      r.keep_active = e.keep_active;
      return r;
    });
  }
  void on_wake(const trace_wake& e) noexcept override {
    keep([&] {
      trace_record r = base(trace_kind::wake, e.time_ns);
      r.object = e.process;
      r.worker = e.worker;
      r.value = e.count;
      r.runnable = e.runnable;
      return r;
    });
  }
  void on_complete(const trace_complete& e) noexcept override {
    keep([&] {
      trace_record r = base(trace_kind::complete, e.time_ns);
      r.object = e.process;
      r.worker = e.worker;
      r.code = e.code;
      r.text = e.message != nullptr ? e.message : "";
      return r;
    });
  }

 private:
  static trace_record base(trace_kind k, std::uint64_t time_ns) {
    trace_record r;
    r.kind = k;
    r.time_ns = time_ns;
    return r;
  }
  static void set_label(trace_record& r, const char* label) {
    r.has_label = label != nullptr;
    if (label != nullptr) r.text = label;
  }
  static void copy(trace_record& r, const trace_frontier& f) {
    const std::size_t n = std::min(f.axes.size(), f.epochs.size());
    r.frontier.reserve(n);
    for (std::size_t i = 0; i < n; ++i) r.frontier.push_back(frontier_entry{f.axes[i], f.epochs[i]});
    r.frontier_tainted = f.tainted;
  }

  /// Builds the record (outside the lock) and stores it; any failure
  /// (allocation, a full sink) counts as a drop, never an exception.
  template <class Make>
  void keep(Make&& make) noexcept {
    try {
      trace_record r = make();
      std::lock_guard lock(mutex_);
      if (events_.size() >= max_events_) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      events_.push_back(std::move(r));
    } catch (...) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
    }
  }

  const std::size_t max_events_;
  mutable std::mutex mutex_;
  std::vector<trace_record> events_;
  trace_names names_;
  std::atomic<std::uint64_t> dropped_{0};
};

//===-- text helpers --------------------------------------------------------===//

namespace detail {

/// Length of the valid UTF-8 sequence at the start of `s`, or 0 when the
/// first byte does not start one (overlong forms, surrogates and values
/// above U+10FFFF are invalid).
inline std::size_t utf8_sequence_length(std::string_view s) noexcept {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char b0 = byte(0);
  if (b0 < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // allowed range of the second byte
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    n = 2;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    n = 3;
    if (b0 == 0xe0) lo = 0xa0;   // no overlong 3-byte forms
    if (b0 == 0xed) hi = 0x9f;   // no UTF-16 surrogates
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    n = 4;
    if (b0 == 0xf0) lo = 0x90;   // no overlong 4-byte forms
    if (b0 == 0xf4) hi = 0x8f;   // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (s.size() < n) return 0;
  if (byte(1) < lo || byte(1) > hi) return 0;
  for (std::size_t i = 2; i < n; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xbf) return 0;
  }
  return n;
}

/// Writes `s` as a JSON string literal (quotes included): escapes quotes,
/// backslashes and control characters; an invalid UTF-8 byte becomes
/// U+FFFD, so the output is always valid JSON.
inline void write_json_string(std::ostream& os, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  os.put('"');
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const std::size_t n = utf8_sequence_length(s.substr(i));
      if (n == 0) {
        os << "\\ufffd";
        ++i;
      } else {
        os.write(s.data() + i, static_cast<std::streamsize>(n));
        i += n;
      }
      continue;
    }
    switch (c) {
      case '"': os << "\\\""; break;
      case '\\': os << "\\\\"; break;
      case '\n': os << "\\n"; break;
      case '\r': os << "\\r"; break;
      case '\t': os << "\\t"; break;
      case '\b': os << "\\b"; break;
      case '\f': os << "\\f"; break;
      default:
        if (c < 0x20) {
          os << "\\u00" << hex[c >> 4] << hex[c & 0xf];
        } else {
          os.put(static_cast<char>(c));
        }
    }
    ++i;
  }
  os.put('"');
}

/// Writes `s` as a DOT double-quoted string: escapes quotes and
/// backslashes (so `\N`, `\l` ... stay literal), turns a newline into a
/// centred line break and other control characters into spaces, and an
/// invalid UTF-8 byte into U+FFFD.
inline void write_dot_string(std::ostream& os, std::string_view s) {
  os.put('"');
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const std::size_t n = utf8_sequence_length(s.substr(i));
      if (n == 0) {
        os << "\xef\xbf\xbd";
        ++i;
      } else {
        os.write(s.data() + i, static_cast<std::streamsize>(n));
        i += n;
      }
      continue;
    }
    if (c == '"' || c == '\\') {
      os.put('\\');
      os.put(static_cast<char>(c));
    } else if (c == '\n') {
      os << "\\n";
    } else if (c < 0x20 || c == 0x7f) {
      os.put(' ');
    } else {
      os.put(static_cast<char>(c));
    }
    ++i;
  }
  os.put('"');
}

/// Writes `ns` nanoseconds as microseconds with three decimals.
inline void write_micros(std::ostream& os, std::uint64_t ns) {
  const std::uint64_t frac = ns % 1000;
  os << ns / 1000 << '.' << static_cast<char>('0' + frac / 100)
     << static_cast<char>('0' + frac / 10 % 10) << static_cast<char>('0' + frac % 10);
}

template <axis_encoding Layout>
std::string axis_text(axis a) {
  return std::string(format_axis<Layout>(a).view());
}

template <axis_encoding Layout>
std::string entry_text(frontier_entry e) {
  return axis_text<Layout>(e.axis) + ':' + std::to_string(e.epoch);
}

template <axis_encoding Layout>
std::string frontier_text(const std::vector<frontier_entry>& f, bool tainted) {
  std::string out = "{";
  for (std::size_t i = 0; i < f.size(); ++i) {
    if (i != 0) out += ", ";
    out += entry_text<Layout>(f[i]);
  }
  out += '}';
  if (tainted) out += " tainted";
  return out;
}

/// What the writers derive from a list of records: tracks, operations,
/// object names.
template <axis_encoding Layout>
class trace_model {
 public:
  struct operation {
    std::size_t submit = 0;             // index of the queue_submit record
    std::vector<std::size_t> waits;     // queue_wait records
    std::vector<std::size_t> signals;   // queue_signal records
    std::uint64_t start_ns = 0;
    std::uint64_t end_ns = 0;
    bool has_submit = false;            // false: only waits/signals were recorded
    bool retired = false;
  };
  struct queue_track {
    axis a{};
    std::map<std::uint64_t, operation> ops;  // by epoch
    std::vector<std::size_t> retires;        // queue_retire records, arrival order
    std::vector<std::size_t> deferrals;
  };

  trace_model(std::span<const trace_record> records, const trace_names& names)
      : records_(records), names_(names) {
    for (std::size_t i = 0; i < records.size(); ++i) {
      const trace_record& r = records[i];
      if (i == 0 || r.time_ns < t0_) t0_ = r.time_ns;
      if (r.object != nullptr) (void)object_index(r);
      switch (r.kind) {
        case trace_kind::queue_submit: {
          operation& op = track(r.queue).ops[r.epoch];
          op.submit = i;
          op.has_submit = true;
          break;
        }
        case trace_kind::queue_wait: track(r.queue).ops[r.epoch].waits.push_back(i); break;
        case trace_kind::queue_signal: track(r.queue).ops[r.epoch].signals.push_back(i); break;
        case trace_kind::queue_deferral: track(r.queue).deferrals.push_back(i); break;
        case trace_kind::queue_retire: track(r.queue).retires.push_back(i); break;
        default: break;
      }
    }
    time_operations();
  }

  [[nodiscard]] std::span<const trace_record> records() const noexcept { return records_; }
  [[nodiscard]] std::vector<queue_track>& queues() noexcept { return queues_; }
  [[nodiscard]] std::uint64_t t0() const noexcept { return t0_; }

  /// The track index of axis `raw`, or npos.
  [[nodiscard]] std::size_t queue_index(std::uint64_t raw) const {
    const auto it = queue_index_.find(raw);
    return it == queue_index_.end() ? npos : it->second;
  }

  [[nodiscard]] const operation* find_operation(frontier_entry e) const {
    const std::size_t q = queue_index(e.axis.raw());
    if (q == npos) return nullptr;
    const auto it = queues_[q].ops.find(e.epoch);
    if (it == queues_[q].ops.end() || !it->second.has_submit) return nullptr;
    return &it->second;
  }

  /// The queue's track name: its axis text, and its given name in parentheses.
  [[nodiscard]] std::string queue_name(axis a) const {
    std::string out = axis_text<Layout>(a);
    if (const auto it = names_.axes.find(a.raw()); it != names_.axes.end()) {
      out += " (" + it->second + ")";
    }
    return out;
  }

  /// The given name of the object of record `r`, or `semaphore#k` /
  /// `process#k` by order of first appearance.
  [[nodiscard]] std::string object_name(const trace_record& r) const {
    if (const auto it = names_.objects.find(r.object); it != names_.objects.end()) return it->second;
    const auto found = objects_.find(r.object);
    const std::size_t k = found == objects_.end() ? 0 : found->second;
    return (is_process(r.kind) ? "process#" : "semaphore#") + std::to_string(k);
  }

  /// Dense index of the object of record `r` among objects of its family.
  std::size_t object_index(const trace_record& r) {
    const auto [it, inserted] = objects_.try_emplace(r.object, 0);
    if (inserted) it->second = is_process(r.kind) ? process_count_++ : semaphore_count_++;
    return it->second;
  }
  [[nodiscard]] std::size_t object_index_of(const void* object) const {
    const auto it = objects_.find(object);
    return it == objects_.end() ? 0 : it->second;
  }

  /// The operation's display name: its label, else `op <tag>`.
  [[nodiscard]] static std::string operation_name(const trace_record& submit) {
    if (submit.has_label && !submit.text.empty()) return submit.text;
    return "op " + std::to_string(submit.tag);
  }

  [[nodiscard]] static bool is_process(trace_kind k) noexcept {
    return k == trace_kind::drain_begin || k == trace_kind::drain_end || k == trace_kind::wake ||
           k == trace_kind::complete;
  }

  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

 private:
  queue_track& track(axis a) {
    const auto [it, inserted] = queue_index_.try_emplace(a.raw(), queues_.size());
    if (inserted) queues_.push_back(queue_track{a, {}, {}, {}});
    return queues_[it->second];
  }

  /// Slice times. A queue completes in epoch order, so operation e ends
  /// at the first retire that covers e; it starts at the latest of its
  /// submit, the end of e-1 and the ends of the traced producers of its
  /// waits (what it waited for, elided or not). Visited in submit order,
  /// every producer is timed before its consumers.
  void time_operations() {
    struct visit {
      std::size_t submit;
      std::size_t queue;
      std::uint64_t epoch;
    };
    std::vector<visit> order;
    for (std::size_t qi = 0; qi < queues_.size(); ++qi) {
      queue_track& q = queues_[qi];
      // Retires from several threads may arrive out of epoch order: sort
      // them by epoch; e retired at the earliest time of any retire >= e.
      std::vector<std::pair<std::uint64_t, std::uint64_t>> retired;  // (epoch, time)
      for (const std::size_t i : q.retires) retired.emplace_back(records_[i].epoch, records_[i].time_ns);
      std::sort(retired.begin(), retired.end());
      for (std::size_t k = retired.size(); k-- > 1;) {
        retired[k - 1].second = std::min(retired[k - 1].second, retired[k].second);
      }
      for (auto& [epoch, op] : q.ops) {
        const auto at = std::lower_bound(
            retired.begin(), retired.end(), epoch,
            [](const std::pair<std::uint64_t, std::uint64_t>& r, std::uint64_t e) { return r.first < e; });
        op.retired = at != retired.end();
        if (op.retired) op.end_ns = at->second;
        if (op.has_submit) order.push_back(visit{op.submit, qi, epoch});
      }
    }
    std::sort(order.begin(), order.end(),
              [](const visit& a, const visit& b) { return a.submit < b.submit; });
    std::vector<std::uint64_t> previous_end(queues_.size(), 0);
    for (const visit& v : order) {
      operation& op = queues_[v.queue].ops[v.epoch];
      std::uint64_t start = std::max(records_[op.submit].time_ns, previous_end[v.queue]);
      for (const std::size_t wi : op.waits) {
        const trace_record& w = records_[wi];
        if (w.producer.epoch == 0) continue;
        const operation* producer = find_operation(w.producer);
        if (producer != nullptr && producer->submit < op.submit) start = std::max(start, producer->end_ns);
      }
      op.start_ns = start;
      op.end_ns = op.retired ? std::max(start, op.end_ns) : start;
      previous_end[v.queue] = op.end_ns;
    }
  }

  std::span<const trace_record> records_;
  const trace_names& names_;
  std::uint64_t t0_ = 0;
  std::vector<queue_track> queues_;
  std::map<std::uint64_t, std::size_t> queue_index_;
  std::map<const void*, std::size_t> objects_;
  std::size_t semaphore_count_ = 0;
  std::size_t process_count_ = 0;
};

inline status stream_status(const std::ostream& os) {
  if (os.fail()) return status{error{errc::resource_exhausted, "trace writer: the stream failed"}};
  return status{};
}

}  // namespace detail

//===-- Chrome / Perfetto JSON ----------------------------------------------===//

/// Writes `records` as Chrome trace-event JSON (see the file comment for
/// the track layout). Returns an error when the stream fails; may throw
/// std::bad_alloc.
template <axis_encoding Layout = default_axis_layout>
status write_chrome_trace(std::ostream& os, std::span<const trace_record> records,
                          const trace_names& names = {}) {
  if (os.fail()) return detail::stream_status(os);
  detail::trace_model<Layout> model(records, names);
  const std::uint64_t t0 = model.t0();
  constexpr int queue_pid = 1, semaphore_pid = 2, worker_pid = 3;
  bool first = true;
  const auto open = [&](std::string_view ph, std::string_view name, int pid, std::size_t tid) {
    os << (first ? "\n" : ",\n") << "{\"ph\":";
    first = false;
    detail::write_json_string(os, ph);
    os << ",\"name\":";
    detail::write_json_string(os, name);
    os << ",\"pid\":" << pid << ",\"tid\":" << tid;
  };
  const auto ts = [&](std::uint64_t ns) {
    os << ",\"ts\":";
    detail::write_micros(os, ns - std::min(ns, t0));
  };
  const auto key = [&](std::string_view k) {
    detail::write_json_string(os, k);
    os.put(':');
  };
  const auto metadata = [&](std::string_view what, int pid, std::size_t tid, std::string_view name) {
    open("M", what, pid, tid);
    os << ",\"args\":{\"name\":";
    detail::write_json_string(os, name);
    os << "}}";
  };
  const auto bool_text = [](bool b) { return b ? "true" : "false"; };

  // Which families appear, and the tracks of semaphores and workers.
  std::map<std::size_t, const trace_record*> semaphores;  // by object index
  std::map<std::uint32_t, bool> workers;
  for (const trace_record& r : records) {
    if (r.object != nullptr && !model.is_process(r.kind)) {
      semaphores.try_emplace(model.object_index_of(r.object), &r);
    }
    if (model.is_process(r.kind)) workers[r.worker] = true;
  }
  const auto worker_tid = [](std::uint32_t w) -> std::size_t {
    return w == trace_no_worker ? 0 : std::size_t{w} + 1;
  };

  os << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
  if (!model.queues().empty()) metadata("process_name", queue_pid, 0, "queues");
  for (std::size_t q = 0; q < model.queues().size(); ++q) {
    metadata("thread_name", queue_pid, q + 1, model.queue_name(model.queues()[q].a));
  }
  if (!semaphores.empty()) metadata("process_name", semaphore_pid, 0, "semaphores");
  for (const auto& [index, r] : semaphores) {
    metadata("thread_name", semaphore_pid, index + 1, model.object_name(*r));
  }
  if (!workers.empty()) metadata("process_name", worker_pid, 0, "workers");
  for (const auto& [w, unused] : workers) {
    (void)unused;
    metadata("thread_name", worker_pid, worker_tid(w),
             w == trace_no_worker ? std::string("not a worker") : "worker " + std::to_string(w));
  }

  // Operations as complete slices, deferrals as instants.
  for (std::size_t q = 0; q < model.queues().size(); ++q) {
    auto& track = model.queues()[q];
    for (const auto& [epoch, op] : track.ops) {
      if (!op.has_submit) continue;  // waits recorded without their submit
      const trace_record& s = records[op.submit];
      open("X", model.operation_name(s), queue_pid, q + 1);
      os << ",\"cat\":\"operation\"";
      ts(op.start_ns);
      os << ",\"dur\":";
      detail::write_micros(os, op.end_ns - op.start_ns);
      os << ",\"args\":{";
      key("axis");
      detail::write_json_string(os, detail::axis_text<Layout>(track.a));
      os << ",\"epoch\":" << epoch << ",\"tag\":" << s.tag;
      if (s.has_label) {
        os << ',';
        key("label");
        detail::write_json_string(os, s.text);
      }
      os << ",\"pumped\":" << bool_text(s.pumped) << ",\"retired\":" << bool_text(op.retired);
      os << ',';
      key("knowledge");
      detail::write_json_string(os, detail::frontier_text<Layout>(s.frontier, s.frontier_tainted));
      os << ",\"waits\":[";
      for (std::size_t k = 0; k < op.waits.size(); ++k) {
        const trace_record& w = records[op.waits[k]];
        os << (k == 0 ? "" : ",") << '{';
        key("semaphore");
        detail::write_json_string(os, model.object_name(w));
        os << ",\"value\":" << w.value << ',';
        key("tier");
        detail::write_json_string(os, to_string(w.tier));
        os << ",\"elided\":" << bool_text(is_elided(w.tier)) << ',';
        key("producer");
        if (w.producer.epoch != 0) {
          detail::write_json_string(os, detail::entry_text<Layout>(w.producer));
        } else {
          os << "null";
        }
        os << ",\"reached\":" << bool_text(w.reached)
           << ",\"value_tainted\":" << bool_text(w.value_tainted)
           << ",\"imported\":" << bool_text(w.imported) << ',';
        key("frontier");
        detail::write_json_string(os, detail::frontier_text<Layout>(w.frontier, w.frontier_tainted));
        os << '}';
      }
      os << "],\"signals\":[";
      for (std::size_t k = 0; k < op.signals.size(); ++k) {
        const trace_record& g = records[op.signals[k]];
        os << (k == 0 ? "" : ",") << '{';
        key("semaphore");
        detail::write_json_string(os, model.object_name(g));
        os << ",\"value\":" << g.value << '}';
      }
      os << "]}}";
    }
    for (const std::size_t i : track.deferrals) {
      const trace_record& d = records[i];
      open("i", "host deferral", queue_pid, q + 1);
      os << ",\"cat\":\"deferral\",\"s\":\"t\"";
      ts(d.time_ns);
      os << ",\"args\":{\"tag\":" << d.tag << ",\"held\":" << d.count;
      if (d.has_label) {
        os << ',';
        key("label");
        detail::write_json_string(os, d.text);
      }
      os << ',';
      key("wait");
      if (d.index == trace_no_wait) {
        os << "null";
      } else {
        os << "{\"index\":" << d.index << ',';
        key("semaphore");
        detail::write_json_string(os, model.object_name(d));
        os << ",\"value\":" << d.value << '}';
      }
      os << "}}";
    }
  }

  // Waits whose producer operation is in the trace, as flow arrows.
  std::uint64_t flow_id = 0;
  for (std::size_t q = 0; q < model.queues().size(); ++q) {
    for (const auto& [epoch, op] : model.queues()[q].ops) {
      (void)epoch;
      for (const std::size_t wi : op.waits) {
        const trace_record& w = records[wi];
        if (w.producer.epoch == 0) continue;
        const auto* producer = model.find_operation(w.producer);
        if (producer == nullptr || !op.has_submit) continue;
        const std::string name = model.object_name(w) + " >= " + std::to_string(w.value);
        ++flow_id;
        open("s", name, queue_pid, model.queue_index(w.producer.axis.raw()) + 1);
        os << ",\"cat\":\"wait\",\"id\":" << flow_id;
        ts(producer->start_ns);
        os << '}';
        open("f", name, queue_pid, q + 1);
        os << ",\"cat\":\"wait\",\"id\":" << flow_id << ",\"bp\":\"e\"";
        ts(op.start_ns);
        os << '}';
      }
    }
  }

  // A drain is one complete ("X") slice from its begin to its end, never a
  // B/E pair, so the output has no unclosed span whatever the sink caught.
  std::map<std::uint32_t, std::vector<const trace_record*>> open_drains;
  const auto drain_slice = [&](const trace_record& begin, const trace_record* end) {
    open("X", model.object_name(begin), worker_pid, worker_tid(begin.worker));
    os << ",\"cat\":\"drain\"";
    ts(begin.time_ns);
    os << ",\"dur\":";
    const std::uint64_t end_ns = end != nullptr ? std::max(end->time_ns, begin.time_ns) : begin.time_ns;
    detail::write_micros(os, end_ns - begin.time_ns);
    os << ",\"args\":{\"finished\":" << bool_text(end != nullptr);
    if (end != nullptr) {
      os << ",\"completed\":" << bool_text(end->completed) << ",\"did_work\":" << bool_text(end->did_work)
         << ",\"keep_active\":" << bool_text(end->keep_active);
    }
    os << "}}";
  };

  // Semaphore values and failures; process events.
  for (const trace_record& r : records) {
    switch (r.kind) {
      case trace_kind::semaphore_signal: {
        open("i", model.object_name(r) + " = " + std::to_string(r.value), semaphore_pid,
             model.object_index_of(r.object) + 1);
        os << ",\"cat\":\"signal\",\"s\":\"t\"";
        ts(r.time_ns);
        os << ",\"args\":{\"value\":" << r.value << ',';
        key("frontier");
        detail::write_json_string(os, detail::frontier_text<Layout>(r.frontier, r.frontier_tainted));
        os << ',';
        key("producer");
        if (r.producer.epoch != 0) {
          detail::write_json_string(os, detail::entry_text<Layout>(r.producer));
        } else {
          os << "null";
        }
        os << ",\"external\":" << bool_text(r.external) << "}}";
        break;
      }
      case trace_kind::semaphore_fail: {
        open("i", model.object_name(r) + " failed", semaphore_pid,
             model.object_index_of(r.object) + 1);
        os << ",\"cat\":\"failure\",\"s\":\"t\"";
        ts(r.time_ns);
        os << ",\"args\":{";
        key("code");
        detail::write_json_string(os, to_string(r.code));
        os << ',';
        key("message");
        detail::write_json_string(os, r.text);
        os << ",\"position\":" << r.value << "}}";
        break;
      }
      case trace_kind::drain_begin:
        open_drains[r.worker].push_back(&r);
        break;
      case trace_kind::drain_end: {
        // The begin this end closes: the worker's latest open drain of the
        // same process (none when the sink dropped or cleared it).
        std::vector<const trace_record*>& open_here = open_drains[r.worker];
        const trace_record* begin = nullptr;
        for (std::size_t k = open_here.size(); k-- > 0;) {
          if (open_here[k]->object == r.object) {
            begin = open_here[k];
            open_here.erase(open_here.begin() + static_cast<std::ptrdiff_t>(k));
            break;
          }
        }
        drain_slice(begin != nullptr ? *begin : r, &r);
        break;
      }
      case trace_kind::wake:
        open("i", "wake " + model.object_name(r), worker_pid, worker_tid(r.worker));
        os << ",\"cat\":\"wake\",\"s\":\"t\"";
        ts(r.time_ns);
        os << ",\"args\":{\"count\":" << r.value << ",\"runnable\":" << bool_text(r.runnable)
           << "}}";
        break;
      case trace_kind::complete:
        open("i", "complete " + model.object_name(r), worker_pid, worker_tid(r.worker));
        os << ",\"cat\":\"complete\",\"s\":\"t\"";
        ts(r.time_ns);
        os << ",\"args\":{";
        key("code");
        detail::write_json_string(os, to_string(r.code));
        os << ',';
        key("message");
        detail::write_json_string(os, r.text);
        os << "}}";
        break;
      default: break;
    }
  }
  // Drains still running when the trace was taken (a worker inside its last
  // drain while the program dumps the sink): zero-length, finished=false.
  for (const auto& [worker, begins] : open_drains) {
    (void)worker;
    for (const trace_record* begin : begins) drain_slice(*begin, nullptr);
  }
  os << "\n]}\n";
  return detail::stream_status(os);
}

/// Writes everything `sink` recorded as Chrome trace-event JSON.
template <axis_encoding Layout = default_axis_layout>
status write_chrome_trace(std::ostream& os, const recording_sink& sink) {
  const std::vector<trace_record> records = sink.events();
  return write_chrome_trace<Layout>(os, std::span<const trace_record>(records), sink.names());
}

//===-- Graphviz DOT --------------------------------------------------------===//

/// Writes the DAG of the operations in `records` as Graphviz DOT (see the
/// file comment). Returns an error when the stream fails; may throw
/// std::bad_alloc.
template <axis_encoding Layout = default_axis_layout>
status write_dot(std::ostream& os, std::span<const trace_record> records,
                 const trace_names& names = {}) {
  if (os.fail()) return detail::stream_status(os);
  detail::trace_model<Layout> model(records, names);
  const auto node_id = [&](frontier_entry e) {
    const std::size_t q = model.queue_index(e.axis.raw());
    if (q == model.npos) return "x" + std::to_string(e.axis.raw()) + "_e" + std::to_string(e.epoch);
    return "q" + std::to_string(q + 1) + "_e" + std::to_string(e.epoch);
  };

  os << "digraph causal {\n"
     << "  graph [rankdir=LR, fontname=\"Helvetica\"];\n"
     << "  node [shape=box, fontname=\"Helvetica\"];\n"
     << "  edge [fontname=\"Helvetica\", fontsize=10];\n";
  // Operations, one cluster per queue.
  for (std::size_t q = 0; q < model.queues().size(); ++q) {
    const auto& track = model.queues()[q];
    os << "  subgraph cluster_q" << q + 1 << " {\n    label=";
    detail::write_dot_string(os, model.queue_name(track.a));
    os << ";\n    style=rounded;\n    color=gray60;\n";
    for (const auto& [epoch, op] : track.ops) {
      if (!op.has_submit) continue;
      const trace_record& s = records[op.submit];
      os << "    " << node_id(frontier_entry{track.a, epoch}) << " [label=";
      detail::write_dot_string(os, detail::entry_text<Layout>(frontier_entry{track.a, epoch}) +
                                       "\n" + model.operation_name(s));
      os << "];\n";
    }
    os << "  }\n";
  }
  // FIFO order within each queue.
  for (std::size_t q = 0; q < model.queues().size(); ++q) {
    const auto& track = model.queues()[q];
    const frontier_entry* previous = nullptr;
    frontier_entry last{};
    for (const auto& [epoch, op] : track.ops) {
      if (!op.has_submit) continue;
      const frontier_entry here{track.a, epoch};
      if (previous != nullptr) {
        os << "  " << node_id(*previous) << " -> " << node_id(here)
           << " [color=gray70, arrowhead=none, weight=4];\n";
      }
      last = here;
      previous = &last;
    }
  }
  // Waits. Producers outside the trace get placeholder nodes; waits with
  // no recorded producer start at a node for the semaphore value.
  std::map<std::string, bool> declared;
  for (std::size_t q = 0; q < model.queues().size(); ++q) {
    const auto& track = model.queues()[q];
    for (const auto& [epoch, op] : track.ops) {
      if (!op.has_submit) continue;
      const std::string consumer = node_id(frontier_entry{track.a, epoch});
      for (const std::size_t wi : op.waits) {
        const trace_record& w = records[wi];
        const std::string what = model.object_name(w) + " >= " + std::to_string(w.value);
        std::string source;
        if (w.producer.epoch != 0) {
          source = node_id(w.producer);
          if (model.find_operation(w.producer) == nullptr && declared.try_emplace(source, true).second) {
            os << "  " << source << " [style=dotted, label=";
            detail::write_dot_string(os, detail::entry_text<Layout>(w.producer) + "\n(not traced)");
            os << "];\n";
          }
        } else {
          source = "s" + std::to_string(model.object_index_of(w.object)) + "_v" +
                   std::to_string(w.value);
          if (declared.try_emplace(source, true).second) {
            os << "  " << source << " [shape=ellipse, label=";
            detail::write_dot_string(os, what);
            os << "];\n";
          }
        }
        os << "  " << source << " -> " << consumer << " [";
        if (is_elided(w.tier)) os << "style=dashed, ";
        os << "label=";
        detail::write_dot_string(os, what + "\n" + std::string(to_string(w.tier)));
        os << "];\n";
      }
    }
  }
  os << "}\n";
  return detail::stream_status(os);
}

/// Writes the DAG of everything `sink` recorded as Graphviz DOT.
template <axis_encoding Layout = default_axis_layout>
status write_dot(std::ostream& os, const recording_sink& sink) {
  const std::vector<trace_record> records = sink.events();
  return write_dot<Layout>(os, std::span<const trace_record>(records), sink.names());
}

CAUSAL_END_NAMESPACE
