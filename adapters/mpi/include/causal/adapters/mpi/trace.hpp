// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// trace (mpi): tracing a job across ranks -- each rank writes one
// Chrome/Perfetto JSON file of its queues, semaphores and workers (the core
// writer, <causal/trace.hpp>) plus the node's update messages, and
// adapters/mpi/tools/merge_traces.py joins the files into one trace and
// one DOT graph of the whole job, with an arrow from every send of an
// update to the proxy signal it caused.
//
// Model. Three pieces, none of which changes the node or the wire:
//
//   traced_carrier<C>   wraps a carrier (any causal::mpi::carrier) and
//                       records every SUBMITTED, REACHED and FAILED it
//                       sends (time of the send) or receives (time the node
//                       finished applying it to the proxy) into a
//                       message_log. A node over traced_carrier<C> is
//                       otherwise the same node.
//   estimate_clock_offset(comm)
//                       a few MPI ping-pongs against rank 0 (collective):
//                       the offset to add to this rank's steady clock to
//                       get rank 0's, from the exchange with the shortest
//                       round trip (its error is at most half that trip).
//   rank_trace          a recording_sink, a message_log and the names of
//                       this rank's exports and proxies; write() emits the
//                       rank's file.
//
//   rank 0: S.signal(5) --> node --send--> [log: sent reached S=5 to 2]
//   rank 2:                 node --apply--> proxy = 5 [log: received ...]
//   merged: one flow arrow, id "msg:<owner>:<export id>:<value>:<kind>:<to>",
//           derived on both sides from what the message says
//
// The flow id needs no wire change: the sender knows (itself, id, value,
// kind, peer), the receiver (sender, id, value, kind, itself). The
// receiving rank is part of the id because one send per subscriber is made.
//
// File format (one JSON object): a complete Chrome trace -- it opens alone
// in https://ui.perfetto.dev -- whose "traceEvents" are those of
// causal::write_chrome_trace (pids 1 queues, 2 semaphores, 3 workers; times
// in microseconds from t0_ns) plus pid 4 "node": tid 1 "sent", tid 2
// "received", one 1-us slice per update carrying one end ("s" or "f") of
// its flow. Beside "traceEvents", the object "causal" holds: format
// ("causal-rank-trace"), version (1), rank, size, t0_ns (this rank's steady
// clock at ts 0), clock_offset_ns (add to this rank's clock for rank 0's),
// exports [{id, name}], proxies [{owner, id, name}], dropped (events the
// sinks could not keep). The merge tool reads exactly these.
//
// Thread safety: message_log and rank_trace's sink may be fed from any
//                thread (one mutex each); traced_carrier is used as its
//                carrier is (the node's progress context). name_* and
//                write() from one thread, write() once the job is idle.
// Memory order:  not applicable (tooling: mutexes).
// Blocking/allocation: tooling, not a hot path: recording locks and
//                allocates (an event that cannot be kept is counted as
//                dropped, never thrown); traced_carrier decodes every
//                message it passes (one frontier-sized parse). Without a
//                traced_carrier nothing here runs. estimate_clock_offset
//                blocks in MPI (collective over `comm`).
// Size:          about 48 bytes a message, plus recording_sink's.
// Configuration: Frontier (traced_carrier: the node's frontier type, for
//                decoding), Layout (rank_trace: the axis layout of the
//                axis text), max events of both logs.
// See also:      <causal/trace.hpp>, <causal/adapters/mpi/node.hpp>,
//                <causal/adapters/mpi/wire.hpp>,
//                adapters/mpi/tools/merge_traces.py, examples/mpi/README.md.
#pragma once

#include <causal/adapters/mpi/carrier.hpp>
#include <causal/adapters/mpi/wire.hpp>
#include <causal/axis.hpp>
#include <causal/config.hpp>
#include <causal/frontier.hpp>
#include <causal/result.hpp>
#include <causal/trace.hpp>
#include <causal/trace_sink.hpp>

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
#include <ostream>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

CAUSAL_BEGIN_NAMESPACE

namespace mpi {

//===-- message_log ---------------------------------------------------------===//

/// Whether a logged message left or arrived at this rank.
enum class message_direction : std::uint8_t { sent, received };

/// One update message a traced_carrier passed.
struct message_event {
  std::uint64_t time_ns = 0;  ///< trace_now_ns() at the send / after the apply
  message_direction direction = message_direction::sent;
  message_kind kind = message_kind::submitted;  ///< submitted, reached or failed
  std::uint32_t owner = 0;       ///< the rank that exports the semaphore
  std::uint32_t subscriber = 0;  ///< the rank whose proxy it updates
  std::uint64_t id = 0;          ///< the export id
  std::uint64_t value = 0;       ///< 0 for FAILED
  bool external = false;         ///< REACHED of an external value
};

/// A bounded, thread-safe list of message_events (tooling: locks and
/// allocates; what it cannot keep is counted in dropped()).
class message_log {
 public:
  explicit message_log(std::size_t max_events = std::numeric_limits<std::size_t>::max())
      : max_events_(max_events) {}

  message_log(const message_log&) = delete;
  message_log& operator=(const message_log&) = delete;

  void record(const message_event& e) noexcept {
    try {
      std::lock_guard lock(mutex_);
      if (events_.size() >= max_events_) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      events_.push_back(e);
    } catch (...) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
    }
  }

  /// A copy of the events so far, in arrival order.
  [[nodiscard]] std::vector<message_event> events() const {
    std::lock_guard lock(mutex_);
    return events_;
  }
  [[nodiscard]] std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

 private:
  const std::size_t max_events_;
  mutable std::mutex mutex_;
  std::vector<message_event> events_;
  std::atomic<std::uint64_t> dropped_{0};
};

//===-- traced_carrier ------------------------------------------------------===//

/// A carrier that forwards to `Carrier` and logs the update messages
/// passing through; see the file comment. `Frontier` must be the node's
/// frontier type (it bounds what decodes).
template <carrier Carrier, frontier_type Frontier = causal::frontier>
class traced_carrier {
 public:
  static constexpr std::size_t max_message_bytes = Carrier::max_message_bytes;

  /// Wraps `inner`, logging into `log`; both must outlive this object.
  traced_carrier(Carrier& inner, message_log& log) noexcept : inner_(&inner), log_(&log) {}

  traced_carrier(const traced_carrier&) = delete;
  traced_carrier& operator=(const traced_carrier&) = delete;
  /// A node still using the carrier is refused loudly (carrier_users).
  ~traced_carrier() { users_.refuse_if_used("mpi::traced_carrier"); }

  /// Counted by each node built on this carrier (carrier_users).
  void note_user(int delta) noexcept { users_.note_user(delta); }

  [[nodiscard]] std::uint32_t rank() const noexcept { return inner_->rank(); }
  [[nodiscard]] std::uint32_t size() const noexcept { return inner_->size(); }
  [[nodiscard]] status peer_status(std::uint32_t peer) const noexcept { return inner_->peer_status(peer); }

  /// Sends through the inner carrier; a successful update send is logged.
  status send(std::uint32_t peer, std::span<const std::byte> bytes) noexcept {
    const status s = inner_->send(peer, bytes);
    if (s) note(message_direction::sent, rank(), peer, bytes);
    return s;
  }

  /// Polls the inner carrier; every update is logged after `handler` ran.
  std::size_t poll(message_handler handler, void* context) noexcept {
    handler_ = handler;
    context_ = context;
    return inner_->poll(&on_message, this);
  }

  [[nodiscard]] Carrier& inner() noexcept { return *inner_; }

 private:
  static void on_message(void* self, std::uint32_t from, std::span<const std::byte> bytes) noexcept {
    auto& me = *static_cast<traced_carrier*>(self);
    me.handler_(me.context_, from, bytes);
    me.note(message_direction::received, from, me.rank(), bytes);
  }

  void note(message_direction d, std::uint32_t owner, std::uint32_t subscriber,
            std::span<const std::byte> bytes) noexcept {
    // Only update kinds matter; the header's kind byte says which before
    // the (frontier-sized) decode.
    if (bytes.size() < wire_header_size) return;
    const auto kind = static_cast<message_kind>(std::to_integer<std::uint8_t>(bytes[1]));
    if (kind != message_kind::submitted && kind != message_kind::reached && kind != message_kind::failed) return;
    const result<message<Frontier>> m = decode<Frontier>(bytes);
    if (!m) return;  // the node counts it as malformed
    log_->record(message_event{trace_now_ns(), d, m->kind, owner, subscriber, m->id, m->value, m->external});
  }

  carrier_users users_;
  Carrier* inner_;
  message_log* log_;
  message_handler handler_ = nullptr;
  void* context_ = nullptr;
};

//===-- clock offset --------------------------------------------------------===//

/// Estimates, collectively over `comm`, the nanoseconds to add to this
/// rank's trace_now_ns() to get rank 0's (0 on rank 0): `rounds` ping-pongs
/// per rank with rank 0, keeping the one with the shortest round trip.
/// Call it from one thread on every rank, before the node runs. Errors:
/// device_lost when an MPI call fails (position: MPI's code).
[[nodiscard]] inline result<std::int64_t> estimate_clock_offset(MPI_Comm comm = MPI_COMM_WORLD,
                                                                int rounds = 16) noexcept {
  // A tag no carrier uses (carriers talk on their own communicators anyway).
  constexpr int tag = 0x7ace;
  int rank = 0;
  int size = 0;
  if (const int rc = MPI_Comm_rank(comm, &rank); rc != MPI_SUCCESS) {
    return error{errc::device_lost, "estimate_clock_offset: MPI_Comm_rank failed", static_cast<std::uint64_t>(rc)};
  }
  MPI_Comm_size(comm, &size);
  if (rank == 0) {
    for (int peer = 1; peer < size; ++peer) {
      for (int k = 0; k < rounds; ++k) {
        std::uint64_t ping = 0;
        int rc = MPI_Recv(&ping, 1, MPI_UINT64_T, peer, tag, comm, MPI_STATUS_IGNORE);
        const std::uint64_t now = trace_now_ns();
        if (rc == MPI_SUCCESS) rc = MPI_Send(&now, 1, MPI_UINT64_T, peer, tag, comm);
        if (rc != MPI_SUCCESS) {
          return error{errc::device_lost, "estimate_clock_offset: ping-pong with a rank failed",
                       static_cast<std::uint64_t>(rc)};
        }
      }
    }
    return std::int64_t{0};
  }
  std::uint64_t best_trip = std::numeric_limits<std::uint64_t>::max();
  std::int64_t best = 0;
  for (int k = 0; k < rounds; ++k) {
    const std::uint64_t before = trace_now_ns();
    std::uint64_t theirs = 0;
    int rc = MPI_Send(&before, 1, MPI_UINT64_T, 0, tag, comm);
    if (rc == MPI_SUCCESS) rc = MPI_Recv(&theirs, 1, MPI_UINT64_T, 0, tag, comm, MPI_STATUS_IGNORE);
    const std::uint64_t after = trace_now_ns();
    if (rc != MPI_SUCCESS) {
      return error{errc::device_lost, "estimate_clock_offset: ping-pong with rank 0 failed",
                   static_cast<std::uint64_t>(rc)};
    }
    // Rank 0 read its clock somewhere in [before, after] of ours: assume
    // the middle.
    if (after - before < best_trip) {
      best_trip = after - before;
      const std::uint64_t middle = before + (after - before) / 2;
      best = static_cast<std::int64_t>(theirs - middle);
    }
  }
  return best;
}

//===-- rank_trace ----------------------------------------------------------===//

/// One rank's trace: a recording_sink to install on its queues, semaphores
/// and executor, the message_log for its traced_carrier, and the names of
/// its exports and proxies; see the file comment for what write() emits.
template <axis_encoding Layout = default_axis_layout>
class rank_trace {
 public:
  /// A trace for `rank` of `size`, whose clock plus `clock_offset_ns` is
  /// rank 0's (estimate_clock_offset).
  rank_trace(std::uint32_t rank, std::uint32_t size, std::int64_t clock_offset_ns)
      : rank_(rank), size_(size), offset_(clock_offset_ns) {}

  rank_trace(const rank_trace&) = delete;
  rank_trace& operator=(const rank_trace&) = delete;

  [[nodiscard]] recording_sink& sink() noexcept { return sink_; }
  [[nodiscard]] message_log& messages() noexcept { return log_; }
  [[nodiscard]] std::uint32_t rank() const noexcept { return rank_; }

  /// Names the queue on axis `a`.
  void name_queue(axis a, std::string_view name) { sink_.name(a, name); }

  /// Names exported semaphore `sem` (export `id` of this rank) and installs
  /// the sink on it.
  template <class Semaphore>
  void name_export(Semaphore& sem, std::uint64_t id, std::string_view name) {
    sem.set_trace_sink(&sink_);
    sink_.name(&sem, name);
    exports_.push_back(named_export{id, std::string(name)});
  }

  /// Names `proxy`, this rank's proxy of export `id` of rank `owner`, as
  /// "<name> (rank <owner>)", and installs the sink on it.
  template <class Semaphore>
  void name_proxy(Semaphore& proxy, std::uint32_t owner, std::uint64_t id, std::string_view name) {
    proxy.set_trace_sink(&sink_);
    std::string text = std::string(name) + " (rank " + std::to_string(owner) + ")";
    sink_.name(&proxy, text);
    proxies_.push_back(named_proxy{owner, id, std::move(text)});
  }

  /// Writes this rank's file. Returns the stream's failure, if any; may
  /// throw std::bad_alloc.
  status write(std::ostream& os) const {
    const std::vector<trace_record> records = sink_.events();
    const std::vector<message_event> messages = log_.events();
    // write_chrome_trace measures times from the earliest record.
    std::uint64_t t0 = 0;
    bool have_t0 = false;
    for (const trace_record& r : records) {
      if (!have_t0 || r.time_ns < t0) t0 = r.time_ns;
      have_t0 = true;
    }
    for (const message_event& m : messages) {
      if (!have_t0) t0 = m.time_ns;
      have_t0 = true;
    }
    std::ostringstream core;
    if (status s = write_chrome_trace<Layout>(core, std::span<const trace_record>(records), sink_.names()); !s) {
      return s;
    }
    std::string text = core.str();
    // The core writer ends with "\n]}\n": splice the node's events in
    // before the closing bracket, and the metadata after it.
    const std::size_t close = text.rfind("\n]}");
    if (close == std::string::npos) {
      return error{errc::failed_precondition, "rank_trace: unexpected output of write_chrome_trace"};
    }
    const bool empty = text.find('{', text.find("\"traceEvents\":[")) == std::string::npos;
    os << std::string_view(text).substr(0, close);
    bool first = empty;
    const auto open = [&](std::string_view ph, std::string_view name, int tid) {
      os << (first ? "\n" : ",\n") << "{\"ph\":\"" << ph << "\",\"name\":";
      first = false;
      causal::detail::write_json_string(os, name);
      os << ",\"pid\":4,\"tid\":" << tid;
    };
    const auto ts = [&](std::uint64_t ns) {
      os << ",\"ts\":";
      if (ns < t0) {
        os << '-';
        causal::detail::write_micros(os, t0 - ns);
      } else {
        causal::detail::write_micros(os, ns - t0);
      }
    };
    if (!messages.empty()) {
      open("M", "process_name", 0);
      os << ",\"args\":{\"name\":\"node\"}}";
      open("M", "thread_name", 1);
      os << ",\"args\":{\"name\":\"sent\"}}";
      open("M", "thread_name", 2);
      os << ",\"args\":{\"name\":\"received\"}}";
    }
    for (const message_event& m : messages) {
      const bool sent = m.direction == message_direction::sent;
      const std::string kind(to_string(m.kind));
      const std::string name = export_name(m) + " " + kind +
                               (m.kind == message_kind::failed ? std::string() : " " + std::to_string(m.value));
      const int tid = sent ? 1 : 2;
      open("X", name, tid);
      os << ",\"cat\":\"message\"";
      ts(m.time_ns);
      os << ",\"dur\":1.000,\"args\":{\"kind\":\"" << kind << "\",\"owner\":" << m.owner
         << ",\"subscriber\":" << m.subscriber << ",\"id\":" << m.id << ",\"value\":" << m.value
         << ",\"external\":" << (m.external ? "true" : "false") << "}}";
      // One end of the flow; the other is in the peer's file.
      open(sent ? "s" : "f", kind, tid);
      os << ",\"cat\":\"message\",\"id\":\"msg:" << m.owner << ':' << m.id << ':' << m.value << ':' << kind << ':'
         << m.subscriber << '"';
      if (!sent) os << ",\"bp\":\"e\"";
      ts(m.time_ns);
      os << '}';
    }
    os << "\n],\"causal\":{\"format\":\"causal-rank-trace\",\"version\":1,\"rank\":" << rank_
       << ",\"size\":" << size_ << ",\"t0_ns\":" << t0 << ",\"clock_offset_ns\":" << offset_ << ",\"exports\":[";
    for (std::size_t i = 0; i < exports_.size(); ++i) {
      os << (i == 0 ? "" : ",") << "{\"id\":" << exports_[i].id << ",\"name\":";
      causal::detail::write_json_string(os, exports_[i].name);
      os << '}';
    }
    os << "],\"proxies\":[";
    for (std::size_t i = 0; i < proxies_.size(); ++i) {
      os << (i == 0 ? "" : ",") << "{\"owner\":" << proxies_[i].owner << ",\"id\":" << proxies_[i].id
         << ",\"name\":";
      causal::detail::write_json_string(os, proxies_[i].name);
      os << '}';
    }
    os << "],\"dropped\":" << sink_.dropped() + log_.dropped() << "}}\n";
    if (os.fail()) return error{errc::resource_exhausted, "rank_trace: the stream failed"};
    return {};
  }

 private:
  struct named_export {
    std::uint64_t id;
    std::string name;
  };
  struct named_proxy {
    std::uint32_t owner;
    std::uint64_t id;
    std::string name;
  };

  /// The export's name as this rank knows it (its own export, or its proxy
  /// of it), else "export <owner>/<id>".
  std::string export_name(const message_event& m) const {
    if (m.owner == rank_) {
      for (const named_export& e : exports_) {
        if (e.id == m.id) return e.name;
      }
    } else {
      for (const named_proxy& p : proxies_) {
        if (p.owner == m.owner && p.id == m.id) return p.name;
      }
    }
    return "export " + std::to_string(m.owner) + "/" + std::to_string(m.id);
  }

  std::uint32_t rank_;
  std::uint32_t size_;
  std::int64_t offset_;
  recording_sink sink_;
  message_log log_;
  std::vector<named_export> exports_;
  std::vector<named_proxy> proxies_;
};

}  // namespace mpi

CAUSAL_END_NAMESPACE
