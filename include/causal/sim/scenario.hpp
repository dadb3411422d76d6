// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// sim/scenario: the scenario model of the simulator — devices with lanes
// (queues), operations with durations, dependencies, buffer allocations,
// uses and frees — and its loader from JSON, which rejects bad input with
// the line, the column and what was expected.
//
// Model. A scenario is a DAG listed in a topological order: every
// operation names, in `after`, operations listed *before* it. A device
// has `lanes` in-order queues ("gpu0.0", "gpu0.1"; "gpu0" alone means lane
// 0); a device with `count` N is N devices "gpu0".."gpu<N-1>" (a device
// group), which an operation with `"each": true` is replicated over (one
// instance per device, named "branch[i]"), and over which an operation
// with `"collective": true` runs one part per device (an all-reduce).
// A dependency on a replicated operation means all its instances, except
// between two operations replicated over the same group, where instance i
// depends on instance i. Buffers come from one pool of `pool_bytes`:
// `alloc` takes a buffer on the operation's queue before it runs, `use`
// reads or writes it, `free` returns it after the operation; the loader
// checks that every use is ordered (through `after` and queue order)
// before the free and after the alloc. `submit_after` makes the host wait
// for an operation to complete before submitting this one (a late
// submission). The format is documented in examples/scenarios/README.md.
//
// Named semaphores. `"semaphores": [{"name": "s"}]` declares a timeline;
// an operation's `"signal": [{"semaphore": "s", "value": v}]` sets it to v
// when the operation completes (a semaphore's values increase, each
// signaller ordered after the previous one), and `"wait": [{"semaphore":
// "s", "value": v}]` starts it after s >= v: a dependency on the first
// signal of a value >= v, which each synchronisation model meets its own
// way (an event per signal, a wait on the timeline s, a frontier wait).
//
// Lane classes and scheduling. `"queue": "gpu.*"` puts an operation on the
// lane class of device gpu: any of its lanes. `place(s, how)` picks each
// class operation's lane and the submission order from an estimate
// (durations and dependencies): `in_order` keeps the file's order, a lane
// running its operations in that order (an in-order queue); `ready_first`
// lets ready operations take free lanes in definition order, so a lane
// runs what is ready, not the file's order (the buffer orderings the file
// met through queue order then become dependencies). The simulator
// places before it runs.
//
// `scale(s, width, depth, options)` makes `width` copies (each on its own
// devices, or sharing them with options.share_lanes) of `depth` chained
// iterations: through the file's cross-iteration edges (`after_previous`,
// waits with `"previous": true`) when it has any, else copy j+1's roots
// after copy j's sinks; a named semaphore is one timeline across a copy's
// iterations. `load_options::devices` overrides the `count` of every
// device group.
//
// Thread safety: value types; the loader is reentrant.
// Memory order:  not applicable (no atomics).
// Blocking/allocation: tooling, not a hot path: allocates freely; bad
//                input is a diagnostic, never an exception (only
//                std::bad_alloc can escape), never a crash.
// Size:          proportional to the scenario.
// Configuration: the limits below (max_lanes, max_group_count,
//                max_dependencies, max_operations, max_queues).
// See also:      <causal/sim/json.hpp>, <causal/sim/simulator.hpp>,
//                examples/scenarios/README.md.
#pragma once

#include <causal/config.hpp>
#include <causal/sim/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

CAUSAL_BEGIN_NAMESPACE

namespace sim {

/// Most lanes (queues) one device may have.
inline constexpr std::size_t max_lanes = 64;
/// Most devices one device group (`count`) may have, also for --devices.
inline constexpr std::size_t max_group_count = 64;
/// Most operations one operation may depend on, after expansion: a
/// submission carries at most basic_queue::max_waits (16) waits.
inline constexpr std::size_t max_dependencies = 16;
/// Most operations (after expansion and scaling).
inline constexpr std::size_t max_operations = 200000;
/// Most queues (after expansion and scaling).
inline constexpr std::size_t max_queues = 4096;

/// What things cost in simulated time (microseconds by convention).
struct cost_model {
  double device_wait = 1.0;  ///< added to an operation's start per device wait issued for it
  double host_query = 2.0;   ///< host time per query of an event or semaphore
  double round_trip = 20.0;  ///< a remote device confirming a dependency with the client
};

struct device_desc {
  std::string name;
  std::size_t lanes = 1;
  bool remote = false;
  std::string group;  ///< the group it was expanded from ("" when none)
};

struct queue_desc {
  std::string name;  ///< "device.lane"
  std::size_t device = 0;
  std::size_t lane = 0;
};

struct buffer_desc {
  std::string name;
  std::size_t bytes = 0;
};

/// A named timeline semaphore of the scenario: operations signal it to
/// values and wait for it to reach them.
struct semaphore_desc {
  std::string name;
};

/// "Signal semaphore `semaphore` to `value` when the operation completes."
struct semaphore_signal {
  std::size_t semaphore = 0;
  std::uint64_t value = 0;
};

/// "Start after semaphore `semaphore` >= `value`": met by `producer`, the
/// first operation whose signal reaches the value (also in `after`).
struct semaphore_wait {
  std::size_t semaphore = 0;
  std::uint64_t value = 0;
  std::size_t producer = 0;
};

struct op_desc {
  std::string name;
  /// One queue; a collective has one part per queue. Empty for an
  /// operation on a lane class until place() picks its lane.
  std::vector<std::size_t> queues;
  /// A lane class ("dev.*"): the lanes place() may choose from (empty for
  /// a pinned operation).
  std::vector<std::size_t> lane_class;
  double duration = 0;
  /// Operations it depends on (all listed earlier), without repeats.
  std::vector<std::size_t> after;
  /// A collective: the dependencies of each part (part j of a collective
  /// over a group depends on instance j of an operation replicated over
  /// the same group, and on all of any other). Empty otherwise.
  std::vector<std::vector<std::size_t>> part_after;
  std::vector<std::size_t> alloc;
  std::vector<std::size_t> use;
  std::vector<std::size_t> free;
  /// Named semaphores it signals, and waits for (each wait's producer is
  /// also in `after`).
  std::vector<semaphore_signal> signals;
  std::vector<semaphore_wait> waits;
  /// Cross-iteration dependencies, used by scale() with depth > 1: copy
  /// d > 0 of this operation also depends on copy d - 1 of each of these
  /// operations, and waits for each (semaphore, value) as signalled by
  /// copy d - 1 ("previous": true). Ignored in a single iteration.
  std::vector<std::size_t> after_previous;
  std::vector<semaphore_signal> previous_waits;
  /// The host submits it only once this operation has completed.
  std::optional<std::size_t> submit_after;
  std::string workload;
  bool collective = false;
  bool show_frontier = false;
};

/// Speculative decoding: the draft and verify queues, the verification
/// that rejected (`rejecting_op`, on the verify queue) and the first draft
/// operation it rejected (`reject_from`, on the draft queue); what the
/// suite expects to be cancelled is a reference answer written by hand.
struct speculation_desc {
  std::size_t draft_queue = 0;
  std::size_t verify_queue = 0;
  std::size_t rejecting_op = 0;
  std::size_t reject_from = 0;
  std::vector<std::size_t> expect_cancel;
};

struct scenario {
  std::string name;
  std::string title;
  std::string description;
  /// The claim the scenario tests, in one line, printed under the table.
  std::string claim;
  std::vector<device_desc> devices;
  std::vector<queue_desc> queues;
  std::vector<buffer_desc> buffers;
  std::vector<semaphore_desc> semaphores;
  std::vector<op_desc> ops;
  std::size_t pool_bytes = std::size_t{1} << 30;
  cost_model costs;
  std::optional<speculation_desc> speculation;

  /// The index of the operation called `name`, if any.
  [[nodiscard]] std::optional<std::size_t> find_op(std::string_view op_name) const {
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].name == op_name) return i;
    }
    return std::nullopt;
  }
};

/// Options of the loader.
struct load_options {
  /// Overrides the `count` of every device group (1..max_group_count).
  std::optional<std::size_t> devices;
};

namespace detail {

class scenario_loader {
 public:
  explicit scenario_loader(const load_options& options) : options_(options) {}

  parsed<scenario> run(const json_value& root) {
    if (!root.is(json_value::kind::object)) return at(root, "expected the scenario to be a JSON object");
    if (auto d = keys(root, "the scenario",
                      {"name", "title", "description", "claim", "devices", "pool_bytes", "buffers",
                       "semaphores", "ops", "costs", "speculation"})) {
      return *d;
    }
    if (auto d = text(root, "name", out_.name, true)) return *d;
    if (out_.name.empty()) return at(root, "\"name\" must not be empty");
    if (auto d = text(root, "title", out_.title, false)) return *d;
    if (out_.title.empty()) out_.title = out_.name;
    if (auto d = text(root, "description", out_.description, false)) return *d;
    if (auto d = text(root, "claim", out_.claim, false)) return *d;
    if (const json_value* c = root.find("costs")) {
      if (auto d = costs(*c)) return *d;
    }
    if (const json_value* p = root.find("pool_bytes")) {
      std::uint64_t v = 0;
      if (!p->as_uint(v) || v == 0 || v > (std::uint64_t{1} << 48)) {
        return at(*p, "expected \"pool_bytes\" to be an integer from 1 to 2^48");
      }
      out_.pool_bytes = static_cast<std::size_t>(v);
    }
    const json_value* devices = root.find("devices");
    if (devices == nullptr) return at(root, "missing \"devices\" (an array of devices)");
    if (auto d = load_devices(*devices)) return *d;
    if (const json_value* b = root.find("buffers")) {
      if (auto d = load_buffers(*b)) return *d;
    }
    if (const json_value* m = root.find("semaphores")) {
      if (auto d = load_semaphores(*m)) return *d;
    }
    const json_value* ops = root.find("ops");
    if (ops == nullptr) return at(root, "missing \"ops\" (an array of operations)");
    if (auto d = load_ops(*ops)) return *d;
    if (const json_value* s = root.find("speculation")) {
      if (auto d = load_speculation(*s)) return *d;
    }
    return std::move(out_);
  }

 private:
  using opt_diag = std::optional<diagnostic>;

  static diagnostic at(const json_value& v, std::string message) {
    return diagnostic{v.line, v.column, std::move(message), {}};
  }

  static opt_diag keys(const json_value& obj, std::string_view what,
                       std::initializer_list<std::string_view> allowed) {
    for (std::size_t i = 0; i < obj.keys.size(); ++i) {
      const std::string& k = obj.keys[i];
      const json_value& v = obj.values[i];
      if (std::find(allowed.begin(), allowed.end(), k) != allowed.end()) continue;
      std::string list;
      for (std::string_view a : allowed) {
        if (!list.empty()) list += ", ";
        list += '"';
        list += a;
        list += '"';
      }
      return at(v, "unknown key \"" + k + "\" in " + std::string(what) + "; expected one of " + list);
    }
    return std::nullopt;
  }

  static opt_diag text(const json_value& obj, std::string_view key, std::string& out,
                       bool required) {
    const json_value* v = obj.find(key);
    if (v == nullptr) {
      if (required) return at(obj, "missing \"" + std::string(key) + "\" (a string)");
      return std::nullopt;
    }
    if (!v->is(json_value::kind::string)) {
      return at(*v, "expected \"" + std::string(key) + "\" to be a string, found " +
                        std::string(to_string(v->type)));
    }
    out = v->text;
    return std::nullopt;
  }

  static opt_diag flag(const json_value& obj, std::string_view key, bool& out) {
    const json_value* v = obj.find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is(json_value::kind::boolean)) {
      return at(*v, "expected \"" + std::string(key) + "\" to be true or false");
    }
    out = v->boolean;
    return std::nullopt;
  }

  static opt_diag count(const json_value& obj, std::string_view key, std::size_t lo,
                        std::size_t hi, std::size_t& out) {
    const json_value* v = obj.find(key);
    if (v == nullptr) return std::nullopt;
    std::uint64_t n = 0;
    if (!v->as_uint(n) || n < lo || n > hi) {
      return at(*v, "expected \"" + std::string(key) + "\" to be an integer from " +
                        std::to_string(lo) + " to " + std::to_string(hi));
    }
    out = static_cast<std::size_t>(n);
    return std::nullopt;
  }

  static opt_diag time_value(const json_value& v, std::string_view key, double& out) {
    double d = 0;
    if (!v.as_double(d) || !std::isfinite(d) || d < 0 || d > 1e12) {
      return at(v, "expected \"" + std::string(key) + "\" to be a number from 0 to 1e12");
    }
    out = d;
    return std::nullopt;
  }

  opt_diag costs(const json_value& c) {
    if (!c.is(json_value::kind::object)) return at(c, "expected \"costs\" to be an object");
    if (auto d = keys(c, "\"costs\"", {"device_wait", "host_query", "round_trip"})) return d;
    const std::pair<std::string_view, double*> fields[] = {
        {"device_wait", &out_.costs.device_wait},
        {"host_query", &out_.costs.host_query},
        {"round_trip", &out_.costs.round_trip}};
    for (const auto& [key, target] : fields) {
      if (const json_value* v = c.find(key)) {
        if (auto d = time_value(*v, key, *target)) return d;
      }
    }
    return std::nullopt;
  }

  opt_diag add_device(const json_value& where, std::string name, std::size_t lanes, bool remote,
                      std::string group) {
    if (device_names_.count(name) != 0) return at(where, "duplicate device name \"" + name + "\"");
    device_names_.insert(name);
    const std::size_t index = out_.devices.size();
    out_.devices.push_back(device_desc{name, lanes, remote, group});
    for (std::size_t l = 0; l < lanes; ++l) {
      if (out_.queues.size() == max_queues) {
        return at(where, "more than " + std::to_string(max_queues) + " queues");
      }
      out_.queues.push_back(queue_desc{name + "." + std::to_string(l), index, l});
    }
    return std::nullopt;
  }

  opt_diag load_devices(const json_value& devices) {
    if (!devices.is(json_value::kind::array) || devices.items.empty()) {
      return at(devices, "expected \"devices\" to be a non-empty array of objects");
    }
    for (const json_value& d : devices.items) {
      if (!d.is(json_value::kind::object)) return at(d, "expected a device object");
      if (auto e = keys(d, "a device", {"name", "lanes", "count", "remote"})) return e;
      std::string name;
      if (auto e = text(d, "name", name, true)) return e;
      if (const std::string why = name_problem(name); !why.empty()) return at(d, "a device name " + why);
      std::size_t lanes = 1;
      if (auto e = count(d, "lanes", 1, max_lanes, lanes)) return e;
      bool remote = false;
      if (auto e = flag(d, "remote", remote)) return e;
      if (d.find("count") != nullptr) {
        std::size_t n = 1;
        if (auto e = count(d, "count", 1, max_group_count, n)) return e;
        if (options_.devices) n = *options_.devices;
        if (groups_.count(name) != 0) return at(d, "duplicate device group \"" + name + "\"");
        std::vector<std::size_t> members;
        for (std::size_t i = 0; i < n; ++i) {
          members.push_back(out_.devices.size());
          if (auto e = add_device(d, name + std::to_string(i), lanes, remote, name)) return e;
        }
        groups_[name] = members;
      } else {
        if (auto e = add_device(d, name, lanes, remote, "")) return e;
      }
    }
    return std::nullopt;
  }

  /// Empty when `s` is a valid name (1 to 64 letters, digits, '_' or
  /// '-'); else what is wrong with it, for "a device name <problem>".
  static std::string name_problem(std::string_view s) {
    if (s.empty()) return "must not be empty";
    if (s.size() > 64) return "is " + std::to_string(s.size()) + " characters long; the limit is 64";
    for (std::size_t i = 0; i < s.size(); ++i) {
      const char c = s[i];
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '-';
      if (!ok) {
        const bool printable = c > ' ' && c < 127;
        return "may hold only letters, digits, '_' or '-' (character " + std::to_string(i + 1) + " is " +
               (printable ? "'" + std::string(1, c) + "'" : "byte " + std::to_string(static_cast<unsigned char>(c))) +
               ")";
      }
    }
    return {};
  }

  opt_diag load_buffers(const json_value& buffers) {
    if (!buffers.is(json_value::kind::array)) return at(buffers, "expected \"buffers\" to be an array");
    for (const json_value& b : buffers.items) {
      if (!b.is(json_value::kind::object)) return at(b, "expected a buffer object");
      if (auto e = keys(b, "a buffer", {"name", "bytes"})) return e;
      buffer_desc desc;
      if (auto e = text(b, "name", desc.name, true)) return e;
      if (const std::string why = name_problem(desc.name); !why.empty()) return at(b, "a buffer name " + why);
      for (const buffer_desc& other : out_.buffers) {
        if (other.name == desc.name) return at(b, "duplicate buffer name \"" + desc.name + "\"");
      }
      const json_value* bytes = b.find("bytes");
      std::uint64_t n = 0;
      if (bytes == nullptr) return at(b, "missing \"bytes\" (the buffer's size)");
      if (!bytes->as_uint(n) || n == 0 || n > out_.pool_bytes) {
        return at(*bytes, "expected \"bytes\" to be an integer from 1 to the pool size (" +
                              std::to_string(out_.pool_bytes) + ")");
      }
      desc.bytes = static_cast<std::size_t>(n);
      out_.buffers.push_back(std::move(desc));
    }
    return std::nullopt;
  }

  opt_diag load_semaphores(const json_value& list) {
    if (!list.is(json_value::kind::array)) return at(list, "expected \"semaphores\" to be an array");
    for (const json_value& m : list.items) {
      if (!m.is(json_value::kind::object)) return at(m, "expected a semaphore object");
      if (auto e = keys(m, "a semaphore", {"name"})) return e;
      semaphore_desc desc;
      if (auto e = text(m, "name", desc.name, true)) return e;
      if (const std::string why = name_problem(desc.name); !why.empty()) return at(m, "a semaphore name " + why);
      for (const semaphore_desc& other : out_.semaphores) {
        if (other.name == desc.name) return at(m, "duplicate semaphore name \"" + desc.name + "\"");
      }
      out_.semaphores.push_back(std::move(desc));
    }
    semaphore_signals_.assign(out_.semaphores.size(), {});
    return std::nullopt;
  }

  /// Reads "signal" or "wait": an array of {"semaphore", "value"}.
  opt_diag semaphore_values(const json_value& obj, std::string_view key,
                            std::vector<std::pair<const json_value*, semaphore_signal>>& out,
                            std::vector<std::pair<const json_value*, semaphore_signal>>* previous = nullptr) {
    const json_value* v = obj.find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is(json_value::kind::array)) {
      return at(*v, "expected \"" + std::string(key) + "\" to be an array of {\"semaphore\", \"value\"}");
    }
    for (const json_value& item : v->items) {
      if (!item.is(json_value::kind::object)) {
        return at(item, "expected {\"semaphore\": name, \"value\": integer} in \"" + std::string(key) + "\"");
      }
      if (previous != nullptr) {
        if (auto e = keys(item, "a semaphore wait", {"semaphore", "value", "previous"})) return e;
      } else if (auto e = keys(item, "a semaphore value", {"semaphore", "value"})) {
        return e;
      }
      bool from_previous = false;
      if (previous != nullptr) {
        if (auto e = flag(item, "previous", from_previous)) return e;
      }
      std::string name;
      if (auto e = text(item, "semaphore", name, true)) return e;
      semaphore_signal sv;
      bool found = false;
      for (std::size_t m = 0; m < out_.semaphores.size(); ++m) {
        if (out_.semaphores[m].name == name) {
          sv.semaphore = m;
          found = true;
        }
      }
      if (!found) return at(item, "unknown semaphore \"" + name + "\" (declare it in \"semaphores\")");
      const json_value* value = item.find("value");
      if (value == nullptr) return at(item, "missing \"value\" (an integer from 1)");
      if (!value->as_uint(sv.value) || sv.value == 0 || sv.value > (std::uint64_t{1} << 53)) {
        return at(*value, "expected \"value\" to be an integer from 1 to 2^53");
      }
      auto& list = from_previous ? *previous : out;
      for (const auto& [where, other] : list) {
        if (other.semaphore == sv.semaphore) {
          return at(item, "semaphore \"" + name + "\" appears twice in \"" + std::string(key) + "\"");
        }
      }
      list.emplace_back(&item, sv);
    }
    return std::nullopt;
  }

  /// Resolves a queue reference: "dev", "dev.lane", a group name, or (with
  /// `class_out`) a lane class "dev.*", whose lanes go to *class_out.
  opt_diag resolve_queue(const json_value& where, const std::string& ref, bool group_allowed,
                         std::vector<std::size_t>& out, std::string& group,
                         std::vector<std::size_t>* class_out = nullptr) {
    group.clear();
    if (const auto g = groups_.find(ref); g != groups_.end()) {
      if (!group_allowed) {
        return at(where, "\"" + ref + "\" is a device group: set \"each\" or \"collective\" to "
                         "true, or name one device (\"" + ref + "0\")");
      }
      group = ref;
      for (std::size_t d : g->second) out.push_back(first_queue(d));
      return std::nullopt;
    }
    std::string device = ref;
    std::size_t lane = 0;
    if (ref.size() > 2 && ref.compare(ref.size() - 2, 2, ".*") == 0) {
      // A lane class: any lane of the device.
      if (class_out == nullptr) {
        return at(where, "\"" + ref + "\": a lane class (\"device.*\") is not allowed here; name one lane");
      }
      device = ref.substr(0, ref.size() - 2);
      for (std::size_t d = 0; d < out_.devices.size(); ++d) {
        if (out_.devices[d].name != device) continue;
        for (std::size_t l = 0; l < out_.devices[d].lanes; ++l) class_out->push_back(first_queue(d) + l);
        return std::nullopt;
      }
      return at(where, "unknown device \"" + device + "\" in lane class \"" + ref + "\"");
    }
    if (const auto dot = ref.rfind('.'); dot != std::string::npos) {
      device = ref.substr(0, dot);
      const std::string lane_text = ref.substr(dot + 1);
      std::uint64_t l = 0;
      json_value tmp;
      tmp.type = json_value::kind::number;
      tmp.text = lane_text;
      if (lane_text.empty() || lane_text.size() > 3 || !tmp.as_uint(l)) {
        return at(where, "expected a queue \"device\" or \"device.lane\", found \"" + ref + "\"");
      }
      lane = static_cast<std::size_t>(l);
    }
    for (std::size_t d = 0; d < out_.devices.size(); ++d) {
      if (out_.devices[d].name != device) continue;
      if (lane >= out_.devices[d].lanes) {
        return at(where, "device \"" + device + "\" has " + std::to_string(out_.devices[d].lanes) +
                             " lane(s); lane " + std::to_string(lane) + " does not exist");
      }
      out.push_back(first_queue(d) + lane);
      return std::nullopt;
    }
    return at(where, "unknown queue \"" + ref + "\" (no such device or device group)");
  }

  [[nodiscard]] std::size_t first_queue(std::size_t device) const {
    for (std::size_t q = 0; q < out_.queues.size(); ++q) {
      if (out_.queues[q].device == device) return q;
    }
    return 0;
  }

  opt_diag names_list(const json_value& obj, std::string_view key,
                      std::vector<const json_value*>& out) {
    const json_value* v = obj.find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is(json_value::kind::array)) {
      return at(*v, "expected \"" + std::string(key) + "\" to be an array of names");
    }
    for (const json_value& item : v->items) {
      if (!item.is(json_value::kind::string)) {
        return at(item, "expected a name (a string) in \"" + std::string(key) + "\"");
      }
      out.push_back(&item);
    }
    return std::nullopt;
  }

  opt_diag buffer_refs(const json_value& obj, std::string_view key, std::vector<std::size_t>& out) {
    std::vector<const json_value*> refs;
    if (auto e = names_list(obj, key, refs)) return e;
    for (const json_value* r : refs) {
      bool found = false;
      for (std::size_t b = 0; b < out_.buffers.size(); ++b) {
        if (out_.buffers[b].name == r->text) {
          if (std::find(out.begin(), out.end(), b) != out.end()) {
            return at(*r, "buffer \"" + r->text + "\" listed twice");
          }
          out.push_back(b);
          found = true;
        }
      }
      if (!found) return at(*r, "unknown buffer \"" + r->text + "\" (declare it in \"buffers\")");
    }
    return std::nullopt;
  }

  /// The instances of the operation named `name` (an instance "x[i]" or all of "x").
  struct op_entry {
    std::vector<std::size_t> instances;
    std::string group;  ///< the group it is replicated over ("" when not)
  };

  opt_diag resolve_dependency(const json_value& where, const std::string& name,
                              const std::string& my_group, std::size_t my_instance,
                              std::vector<std::size_t>& out) {
    const auto it = entries_.find(name);
    if (it == entries_.end()) {
      for (const op_desc& o : out_.ops) {
        if (o.name == name) {
          out.push_back(static_cast<std::size_t>(&o - out_.ops.data()));
          return std::nullopt;
        }
      }
      return at(where, "operation \"" + name + "\" is not defined before this one (list "
                       "operations in a topological order: dependencies first)");
    }
    const op_entry& e = it->second;
    if (!e.group.empty() && e.group == my_group) {
      out.push_back(e.instances[my_instance]);
    } else {
      out.insert(out.end(), e.instances.begin(), e.instances.end());
    }
    return std::nullopt;
  }

  opt_diag load_ops(const json_value& ops) {
    if (!ops.is(json_value::kind::array) || ops.items.empty()) {
      return at(ops, "expected \"ops\" to be a non-empty array of objects");
    }
    // Buffer lifecycle state: 0 never allocated, 1 live, 2 freed.
    buffer_state_.assign(out_.buffers.size(), 0);
    buffer_alloc_.assign(out_.buffers.size(), 0);
    buffer_uses_.assign(out_.buffers.size(), {});
    for (const json_value& o : ops.items) {
      if (auto e = load_op(o)) return e;
    }
    // Cross-iteration references may name any operation of the file.
    for (const auto& [where, index] : pending_after_previous_) {
      const auto d = out_.find_op(where->text);
      if (!d) {
        return at(*where, "unknown operation \"" + where->text + "\" in \"after_previous\" (name one "
                          "operation, not a replicated group)");
      }
      auto& list = out_.ops[index].after_previous;
      if (std::find(list.begin(), list.end(), *d) == list.end()) list.push_back(*d);
    }
    for (const auto& [where, index, w] : pending_previous_waits_) {
      const auto& signalled = semaphore_signals_[w.semaphore];
      if (signalled.empty() || signalled.back().first < w.value) {
        return at(*where, "no operation signals semaphore \"" + out_.semaphores[w.semaphore].name +
                              "\" to " + std::to_string(w.value) +
                              " or more in an iteration (\"previous\" waits for the previous one's signal)");
      }
    }
    return std::nullopt;
  }

  opt_diag load_op(const json_value& o) {
    if (!o.is(json_value::kind::object)) return at(o, "expected an operation object");
    if (auto e = keys(o, "an operation",
                      {"name", "queue", "duration", "after", "after_previous", "alloc", "use", "free",
                       "submit_after", "signal", "wait", "workload", "each", "collective",
                       "show_frontier"})) {
      return e;
    }
    op_desc base;
    if (auto e = text(o, "name", base.name, true)) return e;
    if (const std::string why = name_problem(base.name); !why.empty()) return at(o, "an operation name " + why);
    if (entries_.count(base.name) != 0) return at(o, "duplicate operation name \"" + base.name + "\"");
    std::string queue_ref;
    if (auto e = text(o, "queue", queue_ref, true)) return e;
    const json_value* duration = o.find("duration");
    if (duration == nullptr) return at(o, "missing \"duration\" (a number of microseconds)");
    if (auto e = time_value(*duration, "duration", base.duration)) return e;
    if (auto e = text(o, "workload", base.workload, false)) return e;
    bool each = false;
    if (auto e = flag(o, "each", each)) return e;
    if (auto e = flag(o, "collective", base.collective)) return e;
    if (auto e = flag(o, "show_frontier", base.show_frontier)) return e;
    if (each && base.collective) return at(o, "an operation cannot be both \"each\" and \"collective\"");
    std::vector<std::size_t> queues;
    std::string group;
    std::vector<std::size_t> lane_class;
    if (auto e = resolve_queue(*o.find("queue"), queue_ref, each || base.collective, queues, group,
                               each || base.collective ? nullptr : &lane_class)) {
      return e;
    }
    base.lane_class = lane_class;
    if ((each || base.collective) && group.empty()) {
      return at(*o.find("queue"), "\"each\" and \"collective\" need a device group as the queue");
    }
    if (auto e = buffer_refs(o, "alloc", base.alloc)) return e;
    if (auto e = buffer_refs(o, "use", base.use)) return e;
    if (auto e = buffer_refs(o, "free", base.free)) return e;
    if (each && (!base.alloc.empty() || !base.use.empty() || !base.free.empty())) {
      return at(o, "a replicated (\"each\") operation cannot alloc, use or free buffers");
    }
    std::vector<const json_value*> after;
    if (auto e = names_list(o, "after", after)) return e;
    std::vector<std::pair<const json_value*, semaphore_signal>> signals;
    std::vector<std::pair<const json_value*, semaphore_signal>> waits;
    std::vector<std::pair<const json_value*, semaphore_signal>> previous_waits;
    if (auto e = semaphore_values(o, "signal", signals)) return e;
    if (auto e = semaphore_values(o, "wait", waits, &previous_waits)) return e;
    std::vector<const json_value*> after_previous;
    if (auto e = names_list(o, "after_previous", after_previous)) return e;
    if ((each || base.collective) &&
        (!signals.empty() || !waits.empty() || !previous_waits.empty() || !after_previous.empty())) {
      return at(o, "a replicated or collective operation cannot signal or wait for named semaphores "
                   "or depend on the previous iteration");
    }
    for (const auto& [where, w] : previous_waits) {
      pending_previous_waits_.push_back({where, out_.ops.size(), w});
      base.previous_waits.push_back(w);
    }
    for (const json_value* a : after_previous) pending_after_previous_.push_back({a, out_.ops.size()});
    // A wait is met by the first signal that reaches its value: signals of
    // one semaphore increase in execution order (checked below), so that
    // is the earliest listed signal of a value >= it.
    for (const auto& [where, w] : waits) {
      semaphore_wait sw{w.semaphore, w.value, 0};
      bool met = false;
      for (const auto& [value, op] : semaphore_signals_[w.semaphore]) {
        if (value >= w.value) {
          sw.producer = op;
          met = true;
          break;
        }
      }
      if (!met) {
        return at(*where, "no operation listed before this one signals semaphore \"" +
                              out_.semaphores[w.semaphore].name + "\" to " + std::to_string(w.value) +
                              " or more");
      }
      base.waits.push_back(sw);
      if (std::find(base.after.begin(), base.after.end(), sw.producer) == base.after.end()) {
        base.after.push_back(sw.producer);
      }
    }
    for (const auto& [where, sv] : signals) base.signals.push_back(sv);
    const json_value* submit_after = o.find("submit_after");
    if (submit_after != nullptr && !submit_after->is(json_value::kind::string)) {
      return at(*submit_after, "expected \"submit_after\" to be an operation name");
    }

    const std::size_t instances = each ? queues.size() : 1;
    op_entry entry;
    entry.group = each ? group : "";
    for (std::size_t i = 0; i < instances; ++i) {
      op_desc op = base;
      if (each) op.name = base.name + "[" + std::to_string(i) + "]";
      op.queues = each ? std::vector<std::size_t>{queues[i]} : queues;
      for (const json_value* a : after) {
        std::vector<std::size_t> deps;
        if (auto e = resolve_dependency(*a, a->text, entry.group, i, deps)) return e;
        for (std::size_t d : deps) {
          if (std::find(op.after.begin(), op.after.end(), d) == op.after.end()) op.after.push_back(d);
        }
      }
      if (base.collective) {
        op.part_after.resize(queues.size());
        for (std::size_t j = 0; j < queues.size(); ++j) {
          for (const json_value* a : after) {
            std::vector<std::size_t> deps;
            if (auto e = resolve_dependency(*a, a->text, group, j, deps)) return e;
            for (std::size_t d : deps) {
              auto& pa = op.part_after[j];
              if (std::find(pa.begin(), pa.end(), d) == pa.end()) pa.push_back(d);
            }
          }
          if (op.part_after[j].size() > max_dependencies) {
            return at(o, "a part of collective \"" + op.name + "\" depends on more than " +
                             std::to_string(max_dependencies) + " operations");
          }
        }
      } else if (op.after.size() > max_dependencies) {
        return at(o, "operation \"" + op.name + "\" depends on " + std::to_string(op.after.size()) +
                         " operations; at most " + std::to_string(max_dependencies) +
                         " are allowed (a submission carries at most 16 waits)");
      }
      if (submit_after != nullptr) {
        std::vector<std::size_t> deps;
        if (auto e = resolve_dependency(*submit_after, submit_after->text, "", 0, deps)) return e;
        op.submit_after = *std::max_element(deps.begin(), deps.end());
      }
      if (out_.ops.size() == max_operations) {
        return at(o, "more than " + std::to_string(max_operations) + " operations");
      }
      entry.instances.push_back(out_.ops.size());
      out_.ops.push_back(std::move(op));
      if (auto e = check_buffers(o, out_.ops.size() - 1)) return e;
      if (auto e = check_signals(signals, out_.ops.size() - 1)) return e;
    }
    entries_[base.name] = std::move(entry);
    return std::nullopt;
  }

  /// True when operation `from` is ordered before `to` (through `after`
  /// and queue order); `from` < `to`.
  [[nodiscard]] bool ordered_before(std::size_t from, std::size_t to) const {
    if (from == to) return true;
    std::vector<char> seen(to + 1, 0);
    std::vector<std::size_t> stack{to};
    seen[to] = 1;
    while (!stack.empty()) {
      const std::size_t x = stack.back();
      stack.pop_back();
      if (x == from) return true;
      const op_desc& op = out_.ops[x];
      auto push = [&](std::size_t y) {
        if (y >= from && !seen[y]) {
          seen[y] = 1;
          stack.push_back(y);
        }
      };
      for (std::size_t d : op.after) push(d);
      // Queue order: the previous operation on each of its queues.
      for (std::size_t q : op.queues) {
        for (std::size_t y = x; y-- > from;) {
          const auto& qs = out_.ops[y].queues;
          if (std::find(qs.begin(), qs.end(), q) != qs.end()) {
            push(y);
            break;
          }
        }
      }
    }
    return false;
  }

  /// A semaphore's signals must increase in execution order: each value
  /// above the last, its signaller ordered after the last one's.
  opt_diag check_signals(const std::vector<std::pair<const json_value*, semaphore_signal>>& signals,
                         std::size_t index) {
    for (const auto& [where, sv] : signals) {
      auto& list = semaphore_signals_[sv.semaphore];
      const std::string& name = out_.semaphores[sv.semaphore].name;
      if (!list.empty()) {
        const auto& [last_value, last_op] = list.back();
        if (sv.value <= last_value) {
          return at(*where, "semaphore \"" + name + "\" is signalled to " + std::to_string(sv.value) +
                                " after \"" + out_.ops[last_op].name + "\" signalled it to " +
                                std::to_string(last_value) + " (values must increase)");
        }
        if (!ordered_before(last_op, index)) {
          return at(*where, "\"" + out_.ops[index].name + "\" signals semaphore \"" + name +
                                "\" but is not ordered after its previous signaller \"" +
                                out_.ops[last_op].name + "\" (add it to \"after\")");
        }
      }
      list.emplace_back(sv.value, index);
    }
    return std::nullopt;
  }

  opt_diag check_buffers(const json_value& where, std::size_t index) {
    const op_desc& op = out_.ops[index];
    if (op.collective && (!op.alloc.empty() || !op.free.empty())) {
      return at(where, "a collective operation cannot alloc or free buffers");
    }
    for (std::size_t b : op.alloc) {
      if (buffer_state_[b] != 0) {
        return at(where, "buffer \"" + out_.buffers[b].name + "\" is allocated twice");
      }
      buffer_state_[b] = 1;
      buffer_alloc_[b] = index;
    }
    auto used = op.use;
    for (std::size_t b : op.free) {
      if (std::find(used.begin(), used.end(), b) == used.end()) used.push_back(b);
    }
    for (std::size_t b : used) {
      if (buffer_state_[b] != 1) {
        return at(where, "buffer \"" + out_.buffers[b].name + "\" is " +
                             (buffer_state_[b] == 0 ? "used before it is allocated" : "used after it is freed"));
      }
      if (!ordered_before(buffer_alloc_[b], index)) {
        return at(where, "operation \"" + op.name + "\" uses buffer \"" + out_.buffers[b].name +
                             "\" but is not ordered after its allocation by \"" +
                             out_.ops[buffer_alloc_[b]].name + "\"");
      }
      buffer_uses_[b].push_back(index);
    }
    for (std::size_t b : op.free) {
      for (std::size_t u : buffer_uses_[b]) {
        if (!ordered_before(u, index)) {
          return at(where, "buffer \"" + out_.buffers[b].name + "\" is freed by \"" + op.name +
                               "\" but its use by \"" + out_.ops[u].name +
                               "\" is not ordered before the free (add it to \"after\")");
        }
      }
      buffer_state_[b] = 2;
    }
    return std::nullopt;
  }

  opt_diag speculation_queue(const json_value& s, std::string_view key, std::size_t& out) {
    std::string ref;
    if (auto e = text(s, key, ref, true)) return e;
    std::vector<std::size_t> qs;
    std::string group;
    if (auto e = resolve_queue(*s.find(key), ref, false, qs, group)) return e;
    out = qs.front();
    return std::nullopt;
  }

  opt_diag speculation_op(const json_value& s, std::string_view key, std::size_t queue,
                          std::size_t& out) {
    std::string name;
    if (auto e = text(s, key, name, true)) return e;
    const auto r = out_.find_op(name);
    if (!r) return at(*s.find(key), "unknown operation \"" + name + "\"");
    if (out_.ops[*r].queues.size() != 1 || out_.ops[*r].queues[0] != queue) {
      return at(*s.find(key), "\"" + std::string(key) + "\" must name an operation on the " +
                                  (key == "rejecting_op" ? "verify" : "draft") + " queue");
    }
    out = *r;
    return std::nullopt;
  }

  opt_diag load_speculation(const json_value& s) {
    if (!s.is(json_value::kind::object)) return at(s, "expected \"speculation\" to be an object");
    if (auto e = keys(s, "\"speculation\"",
                      {"draft_queue", "verify_queue", "rejecting_op", "reject_from", "expect_cancel"})) {
      return e;
    }
    speculation_desc spec;
    if (auto e = speculation_queue(s, "draft_queue", spec.draft_queue)) return e;
    if (auto e = speculation_queue(s, "verify_queue", spec.verify_queue)) return e;
    if (spec.draft_queue == spec.verify_queue) {
      return at(s, "\"draft_queue\" and \"verify_queue\" must be different queues");
    }
    if (auto e = speculation_op(s, "rejecting_op", spec.verify_queue, spec.rejecting_op)) return e;
    if (auto e = speculation_op(s, "reject_from", spec.draft_queue, spec.reject_from)) return e;
    std::vector<const json_value*> cancel;
    if (auto e = names_list(s, "expect_cancel", cancel)) return e;
    for (const json_value* c : cancel) {
      const auto op = out_.find_op(c->text);
      if (!op) return at(*c, "unknown operation \"" + c->text + "\"");
      spec.expect_cancel.push_back(*op);
    }
    std::sort(spec.expect_cancel.begin(), spec.expect_cancel.end());
    out_.speculation = spec;
    return std::nullopt;
  }

  load_options options_;
  scenario out_;
  std::set<std::string> device_names_;
  std::map<std::string, std::vector<std::size_t>> groups_;
  std::map<std::string, op_entry> entries_;
  std::vector<int> buffer_state_;
  std::vector<std::size_t> buffer_alloc_;
  std::vector<std::vector<std::size_t>> buffer_uses_;
  struct pending_previous_wait {
    const json_value* where;
    std::size_t op;
    semaphore_signal wait;
  };
  std::vector<std::pair<const json_value*, std::size_t>> pending_after_previous_;
  std::vector<pending_previous_wait> pending_previous_waits_;
  /// Per semaphore: (value, signalling operation), in file order.
  std::vector<std::vector<std::pair<std::uint64_t, std::size_t>>> semaphore_signals_;
};

}  // namespace detail

/// Loads a scenario from JSON text; a diagnostic (line, column, what was
/// expected) for malformed JSON or a scenario that breaks the rules of the
/// format. Only std::bad_alloc can escape.
[[nodiscard]] inline parsed<scenario> load_scenario(std::string_view json_text,
                                                    const load_options& options = {}) {
  if (options.devices && (*options.devices == 0 || *options.devices > max_group_count)) {
    return diagnostic{0, 0, "--devices must be from 1 to " + std::to_string(max_group_count), {}};
  }
  parsed<json_value> root = parse_json(json_text);
  if (!root) return root.error();
  return detail::scenario_loader(options).run(*root);
}

/// Reads and loads the scenario file at `path`.
[[nodiscard]] inline parsed<scenario> load_scenario_file(const std::string& path,
                                                         const load_options& options = {}) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return diagnostic{0, 0, "is a directory, not a scenario file (give its .json files, or --dir)", path};
  }
  std::string text;
  try {
    std::ifstream in(path, std::ios::binary);
    if (!in) return diagnostic{0, 0, "cannot open the file", path};
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (in.bad()) return diagnostic{0, 0, "cannot read the file", path};
  } catch (const std::ios_base::failure& e) {
    // libstdc++ throws from a stream buffer whose read fails (e.g. a
    // special file); a reader of untrusted paths must not end the program.
    return diagnostic{0, 0, std::string("cannot read the file: ") + e.what(), path};
  }
  parsed<scenario> s = load_scenario(text, options);
  if (!s) {
    diagnostic d = s.error();
    d.source = path;
    return d;
  }
  return s;
}

/// How scale() makes its copies.
struct scale_options {
  /// The width copies share the scenario's devices and lanes (they compete
  /// for them) instead of each getting its own.
  bool share_lanes = false;
};

/// Returns `width` copies of `depth` chained iterations of `s`.
///
/// Width: each copy gets its own devices, queues, buffers and named
/// semaphores ("name/w1"), or, with options.share_lanes, shares the
/// devices and lanes (its operations then compete for them).
/// Depth: iteration d + 1 follows iteration d. A file with cross-iteration
/// edges (`after_previous`, or waits with `"previous": true`) gets exactly
/// those; otherwise every root of iteration d + 1 depends on every sink of
/// iteration d. A named semaphore is one timeline across the iterations of
/// a copy: iteration d's values are the file's plus d times the highest
/// value the file signals, and each iteration's first signaller of it
/// follows the previous iteration's last (its values keep increasing).
/// Buffers are per iteration. The pool grows by width * depth, so a
/// scenario that never frees still fits. Fails when the result exceeds
/// the limits or an operation more than max_dependencies dependencies.
[[nodiscard]] inline parsed<scenario> scale(const scenario& s, std::size_t width, std::size_t depth,
                                            const scale_options& options = {}) {
  if (width == 0 || depth == 0) return diagnostic{0, 0, "--width and --depth must be at least 1", {}};
  if (width == 1 && depth == 1) return s;
  const std::size_t n = s.ops.size();
  const std::size_t queue_copies = options.share_lanes ? 1 : width;
  if (width * depth > max_operations / std::max<std::size_t>(n, 1) ||
      queue_copies > max_queues / s.queues.size()) {
    return diagnostic{0, 0, "scaled scenario exceeds the limits (" + std::to_string(max_operations) +
                                " operations, " + std::to_string(max_queues) + " queues)",
                      {}};
  }
  // Roots and sinks of one iteration, and whether the file says itself
  // how iterations connect.
  std::vector<char> has_consumer(n, 0);
  bool explicit_iterations = false;
  for (const op_desc& op : s.ops) {
    for (std::size_t d : op.after) has_consumer[d] = 1;
    explicit_iterations = explicit_iterations || !op.after_previous.empty() || !op.previous_waits.empty();
  }
  std::vector<std::size_t> sinks;
  for (std::size_t i = 0; i < n; ++i) {
    if (!has_consumer[i]) sinks.push_back(i);
  }
  // Per semaphore: the highest value signalled, and its first and last
  // signallers in file order.
  constexpr std::size_t none = static_cast<std::size_t>(-1);
  const std::size_t nm = s.semaphores.size();
  std::vector<std::uint64_t> span(nm, 0);
  std::vector<std::size_t> first_signaller(nm, none);
  std::vector<std::size_t> last_signaller(nm, none);
  for (std::size_t i = 0; i < n; ++i) {
    for (const semaphore_signal& sv : s.ops[i].signals) {
      span[sv.semaphore] = std::max(span[sv.semaphore], sv.value);
      if (first_signaller[sv.semaphore] == none) first_signaller[sv.semaphore] = i;
      last_signaller[sv.semaphore] = i;
    }
  }
  // The file's operation whose signal first reaches `value` of semaphore m.
  const auto producer_of = [&](std::size_t m, std::uint64_t value) {
    for (std::size_t i = 0; i < n; ++i) {
      for (const semaphore_signal& sv : s.ops[i].signals) {
        if (sv.semaphore == m && sv.value >= value) return i;
      }
    }
    return none;
  };
  scenario out;
  out.name = s.name;
  out.title = s.title;
  out.description = s.description;
  out.claim = s.claim;
  out.costs = s.costs;
  out.pool_bytes = s.pool_bytes * width * depth;
  const auto suffix = [&](std::size_t w, std::size_t d) {
    std::string t;
    if (width > 1) t += "/w" + std::to_string(w);
    if (depth > 1) t += "/d" + std::to_string(d);
    return t;
  };
  const auto too_many = [&](const op_desc& c) -> std::optional<diagnostic> {
    if (c.after.size() <= max_dependencies) return std::nullopt;
    return diagnostic{0, 0, "scaling gives \"" + c.name + "\" more than " + std::to_string(max_dependencies) +
                                " dependencies",
                      {}};
  };
  const auto add_dependency = [](op_desc& c, std::size_t d) {
    if (std::find(c.after.begin(), c.after.end(), d) == c.after.end()) c.after.push_back(d);
    for (auto& pa : c.part_after) {
      if (std::find(pa.begin(), pa.end(), d) == pa.end()) pa.push_back(d);
    }
  };
  for (std::size_t w = 0; w < width; ++w) {
    std::size_t queue_base = 0;
    if (w < queue_copies) {
      const std::size_t device_base = out.devices.size();
      queue_base = out.queues.size();
      const std::string ws = queue_copies > 1 ? "/w" + std::to_string(w) : "";
      for (const device_desc& d : s.devices) {
        device_desc c = d;
        c.name += ws;
        out.devices.push_back(c);
      }
      for (const queue_desc& q : s.queues) {
        queue_desc c = q;
        c.device += device_base;
        c.name = out.devices[c.device].name + "." + std::to_string(q.lane);
        out.queues.push_back(c);
      }
    }
    const std::size_t semaphore_base = out.semaphores.size();
    for (const semaphore_desc& m : s.semaphores) {
      out.semaphores.push_back(semaphore_desc{m.name + (width > 1 ? "/w" + std::to_string(w) : "")});
    }
    for (std::size_t d = 0; d < depth; ++d) {
      const std::size_t op_base = out.ops.size();
      const std::size_t buffer_base = out.buffers.size();
      for (const buffer_desc& b : s.buffers) {
        out.buffers.push_back(buffer_desc{b.name + suffix(w, d), b.bytes});
      }
      for (std::size_t i = 0; i < n; ++i) {
        op_desc c = s.ops[i];
        c.name += suffix(w, d);
        for (std::size_t& q : c.queues) q += queue_base;
        for (std::size_t& q : c.lane_class) q += queue_base;
        for (std::size_t& a : c.after) a += op_base;
        for (auto& pa : c.part_after) {
          for (std::size_t& a : pa) a += op_base;
        }
        for (auto* list : {&c.alloc, &c.use, &c.free}) {
          for (std::size_t& b : *list) b += buffer_base;
        }
        if (c.submit_after) *c.submit_after += op_base;
        for (semaphore_signal& sv : c.signals) {
          sv.value += d * span[sv.semaphore];
          sv.semaphore += semaphore_base;
        }
        for (semaphore_wait& sw : c.waits) {
          sw.value += d * span[sw.semaphore];
          sw.semaphore += semaphore_base;
          sw.producer += op_base;
        }
        c.after_previous.clear();
        c.previous_waits.clear();
        if (d > 0) {
          const std::size_t previous_base = op_base - n;
          if (explicit_iterations) {
            for (std::size_t x : s.ops[i].after_previous) add_dependency(c, previous_base + x);
            for (const semaphore_signal& pw : s.ops[i].previous_waits) {
              const std::size_t producer = previous_base + producer_of(pw.semaphore, pw.value);
              c.waits.push_back(semaphore_wait{pw.semaphore + semaphore_base,
                                               pw.value + (d - 1) * span[pw.semaphore], producer});
              add_dependency(c, producer);
            }
          } else if (s.ops[i].after.empty()) {
            for (std::size_t k : sinks) add_dependency(c, previous_base + k);
          }
          // A semaphore's values keep increasing across iterations.
          for (const semaphore_signal& sv : s.ops[i].signals) {
            if (first_signaller[sv.semaphore] == i) add_dependency(c, previous_base + last_signaller[sv.semaphore]);
          }
        }
        if (auto e = too_many(c)) return *e;
        out.ops.push_back(std::move(c));
      }
      if (w == 0 && d == 0 && s.speculation) {
        out.speculation = s.speculation;
      }
    }
  }
  return out;
}

//===-- placement: lanes and submission order -------------------------------===//

/// How operations get their lanes and their order on them.
enum class scheduling : std::uint8_t {
  /// The file's order: each lane runs its operations in file order (an
  /// in-order queue); an operation on a lane class takes, in file order,
  /// the lane of its class that its estimate frees first.
  in_order,
  /// Ready first: whenever a lane is free, the ready operations (every
  /// dependency ended) take free lanes in definition order; a lane runs
  /// whatever is ready, not the file's order.
  ready_first,
};

[[nodiscard]] constexpr std::string_view to_string(scheduling how) noexcept {
  return how == scheduling::in_order ? "in-order" : "ready-first";
}

/// A placed scenario and where each operation went.
struct placement {
  scenario placed;  ///< operations on lanes, listed in submission order
  /// placed.ops[position[i]] is s.ops[i].
  std::vector<std::size_t> position;
};

namespace detail {

/// The estimated lane schedule both scheduling models decide from:
/// durations and dependencies only (no synchronisation cost), so the
/// choice is the same for every synchronisation model.
class placer {
 public:
  placer(const scenario& s, scheduling how) : s_(s), how_(how), n_(s.ops.size()) {}

  parsed<placement> run() {
    collect_requirements();
    lanes_.assign(n_, {});
    end_.assign(n_, 0.0);
    lane_free_.assign(s_.queues.size(), 0.0);
    order_.clear();
    if (how_ == scheduling::in_order) {
      for (std::size_t i = 0; i < n_; ++i) place_at(i, ready_time(i), /*must_be_free=*/false);
    } else {
      ready_first();
    }
    return build();
  }

 private:
  /// What each operation must follow: its dependencies and host wait and,
  /// for ready-first (where a lane's order is not the file's), the buffer
  /// orderings the loader accepted through queue order.
  void collect_requirements() {
    needs_.assign(n_, {});
    implicit_.assign(n_, {});
    placed_after_.assign(n_, {});
    std::vector<std::size_t> alloc_of(s_.buffers.size(), 0);
    std::vector<std::vector<std::size_t>> uses_of(s_.buffers.size());
    constexpr std::size_t none = static_cast<std::size_t>(-1);
    std::vector<std::size_t> last_signaller(s_.semaphores.size(), none);
    std::size_t last_free = none;
    for (std::size_t i = 0; i < n_; ++i) {
      const op_desc& op = s_.ops[i];
      auto need = [&](std::size_t d, bool implicit) {
        if (std::find(needs_[i].begin(), needs_[i].end(), d) != needs_[i].end()) return;
        needs_[i].push_back(d);
        if (implicit) implicit_[i].push_back(d);
      };
      for (std::size_t d : op.after) need(d, false);
      for (const auto& pa : op.part_after) {
        for (std::size_t d : pa) need(d, false);
      }
      if (op.submit_after) need(*op.submit_after, false);
      for (std::size_t b : op.alloc) alloc_of[b] = i;
      const bool reorders = how_ == scheduling::ready_first;
      for (const auto* list : {&op.use, &op.free}) {
        for (std::size_t b : *list) {
          if (reorders && alloc_of[b] != i) need(alloc_of[b], true);
        }
      }
      for (std::size_t b : op.free) {
        for (std::size_t u : uses_of[b]) {
          if (reorders && u != i) need(u, true);
        }
      }
      for (std::size_t b : op.use) uses_of[b].push_back(i);
      // Memory is handed back and taken in the file's order: a free is
      // submitted after the frees listed before it, an allocation after
      // them too (it may need the memory they return). Submission order
      // only, not completion: the pool decides what to wait for.
      if (reorders && (!op.alloc.empty() || !op.free.empty()) && last_free != none && last_free != i) {
        placed_after_[i].push_back(last_free);
      }
      if (!op.free.empty()) last_free = i;
      // A semaphore's signals stay in execution order.
      for (const semaphore_signal& sv : op.signals) {
        if (reorders && last_signaller[sv.semaphore] != none) need(last_signaller[sv.semaphore], true);
        last_signaller[sv.semaphore] = i;
      }
    }
  }

  [[nodiscard]] double ready_time(std::size_t i) const {
    double t = 0;
    for (std::size_t d : needs_[i]) t = std::max(t, end_[d]);
    return t;
  }

  /// Places operation i starting no earlier than `ready`; with
  /// `must_be_free`, only on lanes free at `ready` (returns false if none).
  bool place_at(std::size_t i, double ready, bool must_be_free) {
    const op_desc& op = s_.ops[i];
    std::vector<std::size_t> lanes = op.queues;
    if (lanes.empty()) {
      std::size_t best = op.lane_class.front();
      for (std::size_t q : op.lane_class) {
        if (std::max(lane_free_[q], ready) < std::max(lane_free_[best], ready)) best = q;
      }
      lanes = {best};
    }
    double start = ready;
    for (std::size_t q : lanes) start = std::max(start, lane_free_[q]);
    if (must_be_free && start > ready) return false;
    end_[i] = start + op.duration;
    for (std::size_t q : lanes) lane_free_[q] = end_[i];
    lanes_[i] = std::move(lanes);
    order_.push_back(i);
    return true;
  }

  void ready_first() {
    std::vector<std::size_t> missing(n_, 0);
    std::vector<std::vector<std::size_t>> dependants(n_);
    for (std::size_t i = 0; i < n_; ++i) {
      missing[i] = needs_[i].size() + placed_after_[i].size();
      for (std::size_t d : needs_[i]) dependants[d].push_back(i);
      for (std::size_t d : placed_after_[i]) dependants[d].push_back(i);
    }
    // Operations whose dependencies are all placed, by index; their ready
    // times are known.
    std::set<std::size_t> waiting;
    for (std::size_t i = 0; i < n_; ++i) {
      if (missing[i] == 0) waiting.insert(i);
    }
    double now = 0;
    while (order_.size() < n_) {
      bool placed_any = false;
      for (auto it = waiting.begin(); it != waiting.end();) {
        const std::size_t i = *it;
        if (ready_time(i) <= now && place_at(i, now, /*must_be_free=*/true)) {
          it = waiting.erase(it);
          placed_any = true;
          for (std::size_t k : dependants[i]) {
            if (--missing[k] == 0) waiting.insert(k);
          }
          // A dependant with a smaller index may now be ready at `now`
          // (a zero-duration operation): rescan from the start.
          it = waiting.begin();
          continue;
        }
        ++it;
      }
      if (placed_any) continue;
      // Nothing fits now: move to the next lane release or ready time.
      double next = std::numeric_limits<double>::infinity();
      for (double f : lane_free_) {
        if (f > now) next = std::min(next, f);
      }
      for (std::size_t i : waiting) {
        const double r = ready_time(i);
        if (r > now) next = std::min(next, r);
      }
      if (next == std::numeric_limits<double>::infinity()) break;  // cannot happen: a DAG
      now = next;
    }
  }

  parsed<placement> build() {
    if (order_.size() != n_) {
      return diagnostic{0, 0, "placement: the dependencies of \"" + s_.name + "\" do not form a DAG", {}};
    }
    placement out;
    out.position.assign(n_, 0);
    for (std::size_t k = 0; k < order_.size(); ++k) out.position[order_[k]] = k;
    scenario& p = out.placed;
    p.name = s_.name;
    p.title = s_.title;
    p.description = s_.description;
    p.claim = s_.claim;
    p.devices = s_.devices;
    p.queues = s_.queues;
    p.buffers = s_.buffers;
    p.semaphores = s_.semaphores;
    p.pool_bytes = s_.pool_bytes;
    p.costs = s_.costs;
    const auto& pos = out.position;
    for (const std::size_t i : order_) {
      op_desc op = s_.ops[i];
      op.queues = lanes_[i];
      op.lane_class.clear();
      for (std::size_t& d : op.after) d = pos[d];
      for (auto& pa : op.part_after) {
        for (std::size_t& d : pa) d = pos[d];
      }
      if (op.submit_after) op.submit_after = pos[*op.submit_after];
      for (semaphore_wait& w : op.waits) w.producer = pos[w.producer];
      // A buffer ordering the file met by queue order is a dependency now,
      // unless the placement kept it on one lane in that order.
      for (std::size_t d : implicit_[i]) {
        const bool same_lane = lanes_[d].size() == 1 && lanes_[i].size() == 1 && lanes_[d][0] == lanes_[i][0];
        if (same_lane || std::find(op.after.begin(), op.after.end(), pos[d]) != op.after.end()) continue;
        if (op.after.size() == max_dependencies) {
          return diagnostic{0, 0, "ready-first: \"" + op.name + "\" needs more than " +
                                      std::to_string(max_dependencies) +
                                      " dependencies once its buffer orderings are explicit",
                            {}};
        }
        op.after.push_back(pos[d]);
      }
      p.ops.push_back(std::move(op));
    }
    if (s_.speculation) {
      speculation_desc spec = *s_.speculation;
      spec.rejecting_op = pos[spec.rejecting_op];
      spec.reject_from = pos[spec.reject_from];
      for (std::size_t& c : spec.expect_cancel) c = pos[c];
      std::sort(spec.expect_cancel.begin(), spec.expect_cancel.end());
      p.speculation = spec;
    }
    return out;
  }

  const scenario& s_;
  const scheduling how_;
  const std::size_t n_;
  std::vector<std::vector<std::size_t>> needs_;
  /// Ready-first: operations that must be placed (submitted) before, with
  /// no wait for their completion.
  std::vector<std::vector<std::size_t>> placed_after_;
  std::vector<std::vector<std::size_t>> implicit_;
  std::vector<std::vector<std::size_t>> lanes_;
  std::vector<double> end_;
  std::vector<double> lane_free_;
  std::vector<std::size_t> order_;
};

}  // namespace detail

/// Puts every operation of `s` on a lane and lists them in submission
/// order under scheduling model `how` (see `scheduling`). The estimate
/// uses durations and dependencies only. In-order keeps the file's order
/// (pinned operations keep their lanes); ready-first lists operations by
/// estimated start, so a lane's order may differ from the file's, and
/// the buffer orderings the file met through queue order become
/// dependencies unless the placement kept them on one lane in order.
/// Fails when that takes an operation past max_dependencies.
[[nodiscard]] inline parsed<placement> place(const scenario& s, scheduling how) {
  return detail::placer(s, how).run();
}

}  // namespace sim

CAUSAL_END_NAMESPACE
