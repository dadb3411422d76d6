// SPDX-License-Identifier: MIT
// Copyright 2026 The causal Authors
//
// mpi_bench: what a remote hop through causal::mpi costs next to raw MPI,
// in one binary under `mpiexec -n 2` (adapters/mpi/bench/meson.build).
//
//   (a) raw MPI ping-pong of exactly the bytes of one REACHED update
//       (MPI_Send / MPI_Recv on a private communicator), and the same
//       through the carrier alone (mpi_carrier send + poll)
//   (b) one remote hop through the node: the owner signals, the other
//       rank's proxy reaches the value; a ping-pong over two exports, one
//       each way, so a round trip is two hops. Both ranks poll their node
//       by hand on the main thread (a spinning waiter, like the raw
//       ping-pong); the ratio to (a) is the adapter's overhead. A second
//       row drives each node with node_thread and waits with a host wait
//       on the main thread: four threads on two vCPUs, so it measures the
//       scheduler and the drivers' sleeps, and is labelled so.
//   (c) bytes per update for frontiers of n = 0, 1, 4, 8 entries on the
//       sender's axes: encoded (small and large epochs) and measured from
//       the node's counters during a run, against the 24 + 4n budget
//   (d) throughput: signals per second from one rank to the other with
//       coalescing (the owner polls every 64 signals, so reached values in
//       between fold into one REACHED) and without (a poll after every
//       signal: one message per signal), and the messages per signal.
//   (e) what an idle poll costs: the carrier's, the node's
//   (f) the node's own cost of a hop without MPI: two nodes in one process
//       over an in-memory carrier (no lock), one thread signalling and
//       polling both, next to the two semaphore signals a hop makes (the
//       owner's, the proxy's) alone
//
// Why not Google Benchmark: its iteration counts adapt per process, and a
// ping-pong needs both ranks to run the same count; so this is a small
// self-timed harness. Every row runs `reps` times (default 7, argument 1;
// argument 2 `hops` runs only rows (a), (a') and (b), e.g. under perf or
// callgrind; `memory` only row (f)), interleaved (a, b, a, b, ...), and rank 0 prints the median
// with the spread (min..max). Timing is amortised over whole loops (one clock read
// per loop of thousands of round trips), so clock cost does not matter.
// Each loop also checks its result (values reached, bytes echoed) and the
// binary exits non-zero when a check fails.
//
// Thread safety: the main thread makes every MPI call except node_thread's
//                polls, which run while the main thread makes none
//                (MPI_THREAD_SERIALIZED).
// See also:      adapters/mpi/README.md (Benchmarks), bench/RESULTS.md.

#include <causal/adapters/mpi/mpi_carrier.hpp>
#include <causal/adapters/mpi/mpi_session.hpp>
#include <causal/adapters/mpi/node.hpp>
#include <causal/adapters/mpi/progress.hpp>
#include <causal/adapters/mpi/wire.hpp>
#include <causal/frontier.hpp>
#include <causal/semaphore.hpp>

#include <mpi.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace cm = causal::mpi;
using causal::frontier;
using causal::semaphore;
using clock_type = std::chrono::steady_clock;

namespace {

using node_type = cm::basic_node<cm::mpi_carrier>;

int failures = 0;
std::uint32_t my_rank = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "[rank %u] CHECK FAILED: %s\n", my_rank, what);
  }
}

double seconds(clock_type::duration d) { return std::chrono::duration<double>(d).count(); }

/// Median and spread of one row's repetitions.
struct row {
  std::string name;
  std::vector<double> samples;

  [[nodiscard]] double median() const {
    std::vector<double> s = samples;
    std::sort(s.begin(), s.end());
    return s.empty() ? 0.0 : s[s.size() / 2];
  }
  [[nodiscard]] double min() const { return *std::min_element(samples.begin(), samples.end()); }
  [[nodiscard]] double max() const { return *std::max_element(samples.begin(), samples.end()); }
};

/// A frontier of `n` entries on `axes` (the sender's), all at `epoch`.
frontier frontier_of(const std::vector<causal::axis>& axes, std::size_t n, std::uint64_t epoch) {
  frontier f;
  for (std::size_t i = 0; i < n; ++i) (void)f.insert_or_raise(axes[i], epoch);
  return f;
}

/// The REACHED a node sends for export `id` at `value` with `f`, produced
/// by f's first entry (a queue's own entry), or with no producer.
std::vector<std::byte> reached_bytes(std::uint64_t id, std::uint64_t value, const frontier& f) {
  std::array<std::byte, cm::max_update_size<frontier>> buffer{};
  const causal::frontier_entry producer = f.empty() ? causal::frontier_entry{} : f[0];
  auto n = cm::encode_reached(std::span<std::byte>(buffer), id, value, f, producer);
  check(n.has_value(), "encode_reached");
  return std::vector<std::byte>(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(n.value_or(0)));
}

//===-- (a) raw MPI and the carrier alone --===//

/// Round trips of `bytes` over MPI_Send/MPI_Recv; returns ns per hop.
double raw_pingpong(MPI_Comm comm, const std::vector<std::byte>& bytes, int trips) {
  std::vector<std::byte> in(bytes.size());
  const int count = static_cast<int>(bytes.size());
  const int peer = 1 - static_cast<int>(my_rank);
  MPI_Barrier(comm);
  const auto t0 = clock_type::now();
  for (int i = 0; i < trips; ++i) {
    if (my_rank == 0) {
      MPI_Send(bytes.data(), count, MPI_BYTE, peer, 5, comm);
      MPI_Recv(in.data(), count, MPI_BYTE, peer, 5, comm, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(in.data(), count, MPI_BYTE, peer, 5, comm, MPI_STATUS_IGNORE);
      MPI_Send(in.data(), count, MPI_BYTE, peer, 5, comm);
    }
  }
  const auto t1 = clock_type::now();
  if (my_rank == 0) check(in == bytes, "raw ping-pong echoes the bytes");
  return seconds(t1 - t0) * 1e9 / (2.0 * trips);
}

/// Round trips of `bytes` through the carrier (send, poll until it
/// arrives); returns ns per hop.
double carrier_pingpong(cm::mpi_carrier& c, const std::vector<std::byte>& bytes, int trips) {
  struct seen {
    std::uint64_t count = 0;
    std::size_t size = 0;
  } got;
  auto on_message = [](void* ctx, std::uint32_t, std::span<const std::byte> b) noexcept {
    auto* s = static_cast<seen*>(ctx);
    ++s->count;
    s->size = b.size();
  };
  const std::uint32_t peer = 1 - my_rank;
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = clock_type::now();
  for (int i = 0; i < trips; ++i) {
    const auto want = static_cast<std::uint64_t>(i) + 1;
    if (my_rank == 0) {
      (void)c.send(peer, bytes);
      while (got.count < want) (void)c.poll(on_message, &got);
    } else {
      while (got.count < want) (void)c.poll(on_message, &got);
      (void)c.send(peer, bytes);
    }
  }
  const auto t1 = clock_type::now();
  check(got.count == static_cast<std::uint64_t>(trips) && got.size == bytes.size(),
        "carrier ping-pong delivers every message whole");
  check(c.flush().ok(), "carrier flush");
  return seconds(t1 - t0) * 1e9 / (2.0 * trips);
}

//===-- the node side --===//

/// One rank's node for the node rows; exports get fresh ids per use.
struct bench_node {
  cm::mpi_carrier carrier;
  std::deque<semaphore> semaphores;  // exported; outlive the node
  std::unique_ptr<node_type> node;
  std::vector<causal::axis> axes;
  std::uint64_t next_id = 1;

  explicit bench_node(cm::mpi_carrier c) : carrier(std::move(c)) {
    cm::node_options o;
    o.session = 3;
    o.heartbeat_timeout = std::chrono::microseconds(0);  // no loss detection in a bench
    node = std::make_unique<node_type>(carrier, o);
    for (int i = 0; i < 8; ++i) {
      auto a = node->allocate_axis(causal::domain::queue);
      check(a.has_value(), "allocate_axis");
      axes.push_back(a.value_or(causal::axis{}));
    }
    check(node->start().ok(), "node start");
    const std::uint32_t peer = 1 - my_rank;
    const auto deadline = clock_type::now() + std::chrono::seconds(30);
    while (!node->peer(peer).hello && clock_type::now() < deadline) (void)node->poll();
    check(node->peer(peer).hello, "HELLO from the peer");
  }

  ~bench_node() { node.reset(); }

  /// A pair of exports, one per rank: `mine` here, `theirs` the peer's
  /// proxy. Both ranks call it together (same ids on both).
  void pair(semaphore*& mine, semaphore*& theirs) {
    const std::uint64_t base = next_id;
    next_id += 2;
    const std::uint32_t peer = 1 - my_rank;
    semaphore& s = semaphores.emplace_back();
    check(node->export_semaphore(base + my_rank, s).ok(), "export");
    auto p = node->open_proxy(peer, base + peer);
    check(p.has_value(), "open_proxy");
    mine = &s;
    theirs = p.value_or(nullptr);
    const auto deadline = clock_type::now() + std::chrono::seconds(30);
    while (node->subscriber_count(base + my_rank) != 1 && clock_type::now() < deadline) (void)node->poll();
    check(node->subscriber_count(base + my_rank) == 1, "the peer subscribed");
  }

  /// Polls until `s` reaches `v` (bounded, so a broken run ends).
  bool poll_until(const semaphore& s, std::uint64_t v) {
    for (std::uint64_t spins = 0; s.value() < v; ++spins) {
      (void)node->poll();
      if ((spins & 0xffff) == 0xffff && s.failed()) return false;
    }
    return true;
  }
};

/// (b) node ping-pong, both ranks polling by hand; ns per hop.
double node_pingpong(bench_node& b, int trips) {
  semaphore* mine = nullptr;
  semaphore* theirs = nullptr;
  b.pair(mine, theirs);
  if (mine == nullptr || theirs == nullptr) return 0;
  const causal::axis a = b.axes[0];
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = clock_type::now();
  bool ok = true;
  for (int i = 1; i <= trips && ok; ++i) {
    const auto v = static_cast<std::uint64_t>(i);
    if (my_rank == 0) {
      (void)mine->signal(v, frontier{{a, v}}, causal::frontier_entry{a, v});
      ok = b.poll_until(*theirs, v);
    } else {
      ok = b.poll_until(*theirs, v);
      (void)mine->signal(v, frontier{{a, v}}, causal::frontier_entry{a, v});
    }
  }
  const auto t1 = clock_type::now();
  // The last pong must leave rank 1 before it stops polling.
  (void)b.node->poll();
  check(ok && theirs->value() == static_cast<std::uint64_t>(trips), "node ping-pong reaches every value");
  MPI_Barrier(MPI_COMM_WORLD);
  return seconds(t1 - t0) * 1e9 / (2.0 * trips);
}

/// (b') node ping-pong with node_thread drivers and host waits; ns per hop.
/// Stopping the driver shuts `b`'s node down: use a fresh node each time.
double node_thread_pingpong(bench_node& b, int trips) {
  semaphore* mine = nullptr;
  semaphore* theirs = nullptr;
  b.pair(mine, theirs);
  if (mine == nullptr || theirs == nullptr) return 0;
  const causal::axis a = b.axes[0];
  MPI_Barrier(MPI_COMM_WORLD);
  double ns = 0;
  {
    // A driver that never sleeps (idle_polls huge): the hot case.
    cm::node_thread<node_type> driver(*b.node, cm::progress_options{1u << 30, {}, {}});
    const auto t0 = clock_type::now();
    bool ok = true;
    for (int i = 1; i <= trips && ok; ++i) {
      const auto v = static_cast<std::uint64_t>(i);
      if (my_rank == 0) {
        (void)mine->signal(v, frontier{{a, v}}, causal::frontier_entry{a, v});
        // (The peer may say BYE right after its last signal: a failure
        // then wins over the value, so the value is what counts.)
        ok = theirs->wait_for(v, std::chrono::seconds(30)).ok() || theirs->value() >= v;
      } else {
        ok = theirs->wait_for(v, std::chrono::seconds(30)).ok();
        (void)mine->signal(v, frontier{{a, v}}, causal::frontier_entry{a, v});
      }
    }
    const auto t1 = clock_type::now();
    check(ok, "node_thread ping-pong reaches every value");
    ns = seconds(t1 - t0) * 1e9 / (2.0 * trips);
  }  // the driver stops: BYE
  MPI_Barrier(MPI_COMM_WORLD);
  return ns;
}

/// (d) signals per second from rank 0 to rank 1, polling every
/// `poll_every` signals; also reports REACHED messages per signal.
double node_throughput(bench_node& b, std::uint64_t signals, std::uint64_t poll_every,
                       double& messages_per_signal) {
  semaphore* mine = nullptr;
  semaphore* theirs = nullptr;
  b.pair(mine, theirs);
  if (mine == nullptr || theirs == nullptr) return 0;
  const causal::axis a = b.axes[0];
  const cm::node_stats before = b.node->stats();
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = clock_type::now();
  bool ok = true;
  if (my_rank == 0) {
    for (std::uint64_t v = 1; v <= signals; ++v) {
      (void)mine->signal(v, frontier{{a, v}}, causal::frontier_entry{a, v});
      if (v % poll_every == 0) (void)b.node->poll();
    }
    ok = b.poll_until(*theirs, 1);  // rank 1's acknowledgement
  } else {
    ok = b.poll_until(*theirs, signals);
    (void)mine->signal(1);
    (void)b.node->poll();
  }
  const auto t1 = clock_type::now();
  check(ok, "throughput: every value arrives");
  const cm::node_stats after = b.node->stats();
  messages_per_signal = static_cast<double>(after.reached_sent - before.reached_sent) /
                        static_cast<double>(signals);
  MPI_Barrier(MPI_COMM_WORLD);
  return static_cast<double>(signals) / seconds(t1 - t0);
}

/// (c) the node's average bytes per REACHED for frontiers of n entries.
double node_bytes_per_update(bench_node& b, std::size_t n, std::uint64_t signals) {
  semaphore* mine = nullptr;
  semaphore* theirs = nullptr;
  b.pair(mine, theirs);
  if (mine == nullptr || theirs == nullptr) return 0;
  const cm::node_stats before = b.node->stats();
  MPI_Barrier(MPI_COMM_WORLD);
  if (my_rank == 0) {
    for (std::uint64_t v = 1; v <= signals; ++v) {
      const frontier f = frontier_of(b.axes, n, v);
      const causal::frontier_entry producer = n == 0 ? causal::frontier_entry{} : f[0];
      (void)mine->signal(v, f, producer);
      (void)b.node->poll();
    }
    (void)b.poll_until(*theirs, 1);
  } else {
    check(b.poll_until(*theirs, signals), "bytes: every value arrives");
    (void)mine->signal(1);
    (void)b.node->poll();
  }
  const cm::node_stats after = b.node->stats();
  MPI_Barrier(MPI_COMM_WORLD);
  const auto messages = after.messages_sent - before.messages_sent;
  return messages == 0 ? 0.0
                       : static_cast<double>(after.bytes_sent - before.bytes_sent) /
                             static_cast<double>(messages);
}

/// (e) what one idle poll costs (nothing arrives): the carrier's, the
/// node's; ns per poll, amortised over `polls`.
double idle_carrier_poll(cm::mpi_carrier& c, int polls) {
  std::uint64_t got = 0;
  auto on_message = [](void* ctx, std::uint32_t, std::span<const std::byte>) noexcept {
    ++*static_cast<std::uint64_t*>(ctx);
  };
  const auto t0 = clock_type::now();
  for (int i = 0; i < polls; ++i) (void)c.poll(on_message, &got);
  const auto t1 = clock_type::now();
  check(got == 0, "idle carrier poll delivers nothing");
  return seconds(t1 - t0) * 1e9 / polls;
}

double idle_node_poll(bench_node& b, int polls) {
  const auto t0 = clock_type::now();
  for (int i = 0; i < polls; ++i) (void)b.node->poll();
  const auto t1 = clock_type::now();
  return seconds(t1 - t0) * 1e9 / polls;
}

/// (f) the node's own cost of a hop, without MPI: two nodes in this
/// process over an in-memory carrier (a copy into a fixed ring, no lock),
/// one thread doing owner signal, owner poll, receiver poll per hop.
class memory_carrier {
 public:
  static constexpr std::size_t max_message_bytes = cm::mpi_carrier::max_message_bytes;
  struct hub {
    struct frame {
      std::uint32_t from = 0;
      std::size_t size = 0;
      std::array<std::byte, max_message_bytes> bytes{};
    };
    static constexpr std::size_t depth = 64;
    std::array<std::array<frame, depth>, 2> inbox{};
    std::array<std::size_t, 2> head{};
    std::array<std::size_t, 2> tail{};
  };
  memory_carrier(hub& h, std::uint32_t rank) : hub_(&h), rank_(rank) {}
  [[nodiscard]] std::uint32_t rank() const noexcept { return rank_; }
  [[nodiscard]] std::uint32_t size() const noexcept { return 2; }
  [[nodiscard]] causal::status send(std::uint32_t peer, std::span<const std::byte> bytes) noexcept {
    if (hub_->tail[peer] - hub_->head[peer] == hub::depth) {
      return causal::error{causal::errc::resource_exhausted, "memory_carrier: inbox full"};
    }
    hub::frame& f = hub_->inbox[peer][hub_->tail[peer]++ % hub::depth];
    f.from = rank_;
    f.size = bytes.size();
    std::memcpy(f.bytes.data(), bytes.data(), bytes.size());
    return {};
  }
  std::size_t poll(cm::message_handler on_message, void* context) noexcept {
    std::size_t n = 0;
    while (hub_->head[rank_] != hub_->tail[rank_]) {
      const hub::frame& f = hub_->inbox[rank_][hub_->head[rank_]++ % hub::depth];
      on_message(context, f.from, std::span<const std::byte>(f.bytes.data(), f.size));
      ++n;
    }
    return n;
  }
  [[nodiscard]] causal::status peer_status(std::uint32_t) const noexcept { return {}; }

 private:
  hub* hub_;
  std::uint32_t rank_;
};

/// ns per hop through two in-process nodes; `floor_ns` gets what the two
/// semaphore signals of a hop (the owner's, the proxy's) cost alone.
double memory_hop(int hops, double& floor_ns) {
  using memory_node = cm::basic_node<memory_carrier>;
  auto h = std::make_unique<memory_carrier::hub>();
  memory_carrier c0(*h, 0);
  memory_carrier c1(*h, 1);
  cm::node_options o;
  o.session = 3;
  o.heartbeat_timeout = std::chrono::microseconds(0);
  memory_node owner(c0, o);
  memory_node receiver(c1, o);
  const causal::axis a = owner.allocate_axis(causal::domain::queue).value_or(causal::axis{});
  check(owner.start().ok() && receiver.start().ok(), "memory nodes start");
  semaphore s;
  check(owner.export_semaphore(1, s).ok(), "memory export");
  auto p = receiver.open_proxy(0, 1);
  check(p.has_value(), "memory open_proxy");
  semaphore* proxy = p.value_or(nullptr);
  if (proxy == nullptr) return 0;
  for (int i = 0; i < 8; ++i) {
    (void)owner.poll();
    (void)receiver.poll();
  }
  const auto t0 = clock_type::now();
  for (int i = 1; i <= hops; ++i) {
    const auto v = static_cast<std::uint64_t>(i);
    (void)s.signal(v, frontier{{a, v}}, causal::frontier_entry{a, v});
    (void)owner.poll();
    (void)receiver.poll();
  }
  const auto t1 = clock_type::now();
  check(proxy->value() == static_cast<std::uint64_t>(hops), "memory hop reaches every value");
  semaphore plain_owner;
  semaphore plain_proxy;
  const auto t2 = clock_type::now();
  for (int i = 1; i <= hops; ++i) {
    const auto v = static_cast<std::uint64_t>(i);
    (void)plain_owner.signal(v, frontier{{a, v}}, causal::frontier_entry{a, v});
    (void)plain_proxy.signal(v, frontier{{a, v}}, causal::frontier_entry{a, v});
  }
  const auto t3 = clock_type::now();
  check(plain_proxy.value() == static_cast<std::uint64_t>(hops), "plain signals reach every value");
  floor_ns = seconds(t3 - t2) * 1e9 / hops;
  return seconds(t1 - t0) * 1e9 / hops;
}

void print_row(const row& r, const char* unit) {
  std::printf("  %-58s %10.3f %-8s (%.3f .. %.3f)\n", r.name.c_str(), r.median(), unit, r.min(), r.max());
}

}  // namespace

int main(int argc, char* argv[]) {
  auto session = cm::mpi_session::start(&argc, &argv, MPI_THREAD_SERIALIZED);
  if (!session) {
    std::fprintf(stderr, "mpi_bench: %s\n", session.error_value().message().data());
    return 1;
  }
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  my_rank = static_cast<std::uint32_t>(rank);
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 7;
  // `mpi_bench <reps> memory`: only row (f) (no MPI traffic), on each rank.
  if (argc > 2 && std::string(argv[2]) == "memory") {
    row mem{"(f) node hop in one process, no MPI (in-memory carrier)", {}};
    row floor{"(f) its two semaphore signals alone (owner, proxy)", {}};
    for (int r = 0; r < reps; ++r) {
      double floor_ns = 0;
      mem.samples.push_back(memory_hop(200000, floor_ns));
      floor.samples.push_back(floor_ns);
    }
    if (rank == 0) {
      print_row(mem, "ns");
      print_row(floor, "ns");
    }
    return failures == 0 ? 0 : 1;
  }
  if (size != 2) {
    if (rank == 0) std::printf("mpi_bench: SKIP: run it with exactly 2 ranks (mpiexec -n 2)\n");
    return 77;
  }
  // `mpi_bench <reps> hops`: only the hop rows (a), (a'), (b), e.g. under
  // a profiler.
  const bool hops_only = argc > 2 && std::string(argv[2]) == "hops";
  constexpr int trips = 20000;
  constexpr int thread_trips = 2000;
  constexpr std::uint64_t burst = 200000;

  MPI_Comm raw_comm = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &raw_comm);
  auto made = cm::mpi_carrier::create();
  auto made_for_node = cm::mpi_carrier::create();
  if (!made || !made_for_node) {
    std::fprintf(stderr, "mpi_bench: carrier create failed\n");
    return 1;
  }
  cm::mpi_carrier& carrier = *made;
  bench_node b(std::move(*made_for_node));

  // The bytes of the update a hop sends: REACHED of a small id with a
  // one-entry frontier (the sender's queue axis) at a mid-run value.
  const std::vector<std::byte> update = reached_bytes(1, trips / 2, frontier{{b.axes[0], trips / 2}});

  row raw{"(a) raw MPI_Send/MPI_Recv ping-pong, one hop", {}};
  row car{"(a') mpi_carrier send + poll ping-pong, one hop", {}};
  row hop{"(b) node: signal -> proxy reached, one hop (poll loops)", {}};
  row ratio{"(b)/(a) ratio, same repetition", {}};
  row thr{"(b') node_thread + host wait, one hop (4 thr / 2 vCPU)", {}};
  row on{"(d) signals/s, coalescing on (poll every 64)", {}};
  row off{"(d) signals/s, coalescing off (poll every signal)", {}};
  row idle_c{"(e) idle poll: mpi_carrier::poll", {}};
  row idle_n{"(e) idle poll: node::poll", {}};
  row mem_hop{"(f) node hop in one process, no MPI (in-memory carrier)", {}};
  row mem_floor{"(f) its two semaphore signals alone (owner, proxy)", {}};
  row on_msgs{"(d) REACHED messages per signal, coalescing on", {}};
  row off_msgs{"(d) REACHED messages per signal, coalescing off", {}};

  // Warm-up: one untimed round of the hot rows.
  (void)raw_pingpong(raw_comm, update, trips / 4);
  (void)node_pingpong(b, trips / 4);

  for (int r = 0; r < reps; ++r) {
    const double raw_ns = raw_pingpong(raw_comm, update, trips);
    raw.samples.push_back(raw_ns);
    car.samples.push_back(carrier_pingpong(carrier, update, trips));
    const double hop_ns = node_pingpong(b, trips);
    hop.samples.push_back(hop_ns);
    ratio.samples.push_back(hop_ns / raw_ns);
    if (hops_only) continue;
    double per = 0;
    on.samples.push_back(node_throughput(b, burst, 64, per));
    on_msgs.samples.push_back(per);
    off.samples.push_back(node_throughput(b, burst / 4, 1, per));
    off_msgs.samples.push_back(per);
    MPI_Barrier(MPI_COMM_WORLD);
    idle_c.samples.push_back(idle_carrier_poll(carrier, 200000));
    idle_n.samples.push_back(idle_node_poll(b, 200000));
    double floor_ns = 0;
    mem_hop.samples.push_back(memory_hop(200000, floor_ns));
    mem_floor.samples.push_back(floor_ns);
    MPI_Barrier(MPI_COMM_WORLD);
  }

  // (c) bytes per update.
  struct bytes_row {
    std::size_t n;
    std::size_t small;
    std::size_t large;
    double measured;
  };
  std::vector<bytes_row> sizes;
  for (std::size_t n : {0, 1, 4, 8}) {
    if (hops_only) break;
    const std::size_t small = reached_bytes(1, 100, frontier_of(b.axes, n, 100)).size();
    const std::size_t large = reached_bytes(1, 1'000'000, frontier_of(b.axes, n, 1'000'000)).size();
    sizes.push_back({n, small, large, node_bytes_per_update(b, n, 100)});
  }

  // (b') last: each repetition needs a fresh node (stopping its driver
  // shuts the node down).
  for (int r = 0; r < (hops_only ? 0 : std::min(reps, 3)); ++r) {
    auto c = cm::mpi_carrier::create();
    if (!c) return 1;
    bench_node fresh(std::move(*c));
    thr.samples.push_back(node_thread_pingpong(fresh, thread_trips));
  }

  if (rank == 0) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int length = 0;
    MPI_Get_library_version(version, &length);
    std::string v(version, static_cast<std::size_t>(length));
    v = v.substr(0, v.find_first_of(",\n"));
    std::printf("mpi_bench: 2 ranks, %s, %d repetitions: median (min .. max)\n", v.c_str(), reps);
    std::printf("update bytes in (a)/(b): %zu\n", update.size());
    print_row(raw, "ns");
    print_row(car, "ns");
    print_row(hop, "ns");
    print_row(ratio, "x");
    if (hops_only) {
      std::printf("(hops only: the other rows were not run)\n");
    } else {
      print_row(thr, "ns");
      print_row(on, "/s");
      print_row(on_msgs, "msg");
      print_row(off, "/s");
      print_row(off_msgs, "msg");
      print_row(idle_c, "ns");
      print_row(idle_n, "ns");
      print_row(mem_hop, "ns");
      print_row(mem_floor, "ns");
      std::printf("(c) bytes per REACHED (id < 128, producer = first entry); budget 24 + 4n\n");
      std::printf("  %3s %14s %16s %20s %8s\n", "n", "epochs 100", "epochs 1000000", "node avg (epochs<=100)", "budget");
      for (const bytes_row& s : sizes) {
        std::printf("  %3zu %14zu %16zu %20.1f %8zu\n", s.n, s.small, s.large, s.measured, 24 + 4 * s.n);
      }
    }
  }

  MPI_Barrier(MPI_COMM_WORLD);
  b.node->shutdown();
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Comm_free(&raw_comm);
  int failed_anywhere = 0;
  MPI_Allreduce(&failures, &failed_anywhere, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0 && failed_anywhere != 0) std::fprintf(stderr, "mpi_bench: %d checks failed\n", failed_anywhere);
  return failed_anywhere == 0 ? 0 : 1;
}
